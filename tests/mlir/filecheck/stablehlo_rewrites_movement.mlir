// RUN: zymase-opt %s -p stablehlo-simplify | filecheck %s
// StableHLO rewrites of data movement (issue 28 item 3, hlo_patterns_movement.py): one
// function per registered pattern, named after it. tests/jax/test_hlo_rewrites.py runs
// every function before and after the rewrite in XLA and compares the results.

// CHECK-LABEL: func.func @reshape_of_splat
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<2x3xf64>}>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @reshape_of_splat(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<2x3xf64>) {
  %c = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<6xf64>}> : () -> tensor<6xf64>
  %r = "stablehlo.reshape"(%c) : (tensor<6xf64>) -> tensor<2x3xf64>
  func.return %x, %r : tensor<4xf64>, tensor<2x3xf64>
}

// CHECK-LABEL: func.func @transpose_of_splat
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<3x2xf64>}>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @transpose_of_splat(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<3x2xf64>) {
  %c = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<2x3xf64>}> : () -> tensor<2x3xf64>
  %r = "stablehlo.transpose"(%c) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xf64>) -> tensor<3x2xf64>
  func.return %x, %r : tensor<4xf64>, tensor<3x2xf64>
}

// CHECK-LABEL: func.func @slice_of_splat
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<2xf64>}>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @slice_of_splat(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<2xf64>) {
  %c = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<6xf64>}> : () -> tensor<6xf64>
  %r = "stablehlo.slice"(%c) <{start_indices = array<i64: 1>, limit_indices = array<i64: 3>, strides = array<i64: 1>}> : (tensor<6xf64>) -> tensor<2xf64>
  func.return %x, %r : tensor<4xf64>, tensor<2xf64>
}

// CHECK-LABEL: func.func @reverse_of_splat
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<6xf64>}>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @reverse_of_splat(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<6xf64>) {
  %c = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<6xf64>}> : () -> tensor<6xf64>
  %r = "stablehlo.reverse"(%c) <{dimensions = array<i64: 0>}> : (tensor<6xf64>) -> tensor<6xf64>
  func.return %x, %r : tensor<4xf64>, tensor<6xf64>
}

// CHECK-LABEL: func.func @broadcast_in_dim_of_splat
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<2.500000e+00> : tensor<4x3xf64>}>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @broadcast_in_dim_of_splat(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4x3xf64>) {
  %c = "stablehlo.constant"() <{value = dense<2.500000e+00> : tensor<f64>}> : () -> tensor<f64>
  %s = "stablehlo.broadcast_in_dim"(%c) <{broadcast_dimensions = array<i64>}> : (tensor<f64>) -> tensor<4x3xf64>
  func.return %x, %s : tensor<4xf64>, tensor<4x3xf64>
}

// CHECK-LABEL: func.func @transpose_identity
// CHECK-NEXT:    func.return %x
func.func @transpose_identity(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %a = "stablehlo.transpose"(%x) <{permutation = array<i64: 0, 1>}> : (tensor<2x3xf64>) -> tensor<2x3xf64>
  func.return %a : tensor<2x3xf64>
}

// CHECK-LABEL: func.func @transpose_transpose
// CHECK-NEXT:    %[[T:.*]] = "stablehlo.transpose"(%x) <{permutation = array<i64: 2, 0, 1>}> : (tensor<2x3x4xf64>) -> tensor<4x2x3xf64>
// CHECK-NEXT:    func.return %x, %[[T]]
func.func @transpose_transpose(%x: tensor<2x3x4xf64>) -> (tensor<2x3x4xf64>, tensor<4x2x3xf64>) {
  %a = "stablehlo.transpose"(%x) <{permutation = array<i64: 1, 0, 2>}> : (tensor<2x3x4xf64>) -> tensor<3x2x4xf64>
  %b = "stablehlo.transpose"(%a) <{permutation = array<i64: 1, 0, 2>}> : (tensor<3x2x4xf64>) -> tensor<2x3x4xf64>
  %c = "stablehlo.transpose"(%a) <{permutation = array<i64: 2, 1, 0>}> : (tensor<3x2x4xf64>) -> tensor<4x2x3xf64>
  func.return %b, %c : tensor<2x3x4xf64>, tensor<4x2x3xf64>
}

// CHECK-LABEL: func.func @transpose_broadcast
// CHECK-NEXT:    %[[B:.*]] = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 0>}> : (tensor<3xf64>) -> tensor<3x2xf64>
// CHECK-NEXT:    func.return %[[B]]
func.func @transpose_broadcast(%v: tensor<3xf64>) -> tensor<3x2xf64> {
  %b = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 1>}> : (tensor<3xf64>) -> tensor<2x3xf64>
  %t = "stablehlo.transpose"(%b) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xf64>) -> tensor<3x2xf64>
  func.return %t : tensor<3x2xf64>
}

// CHECK-LABEL: func.func @broadcast_identity
// CHECK-NEXT:    func.return %v
func.func @broadcast_identity(%v: tensor<3xf64>) -> tensor<3xf64> {
  %i = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 0>}> : (tensor<3xf64>) -> tensor<3xf64>
  func.return %i : tensor<3xf64>
}

// CHECK-LABEL: func.func @broadcast_broadcast
// CHECK-NEXT:    %[[B:.*]] = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 2>}> : (tensor<3xf64>) -> tensor<2x4x3xf64>
// CHECK-NEXT:    func.return %[[B]]
func.func @broadcast_broadcast(%v: tensor<3xf64>) -> tensor<2x4x3xf64> {
  %a = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 1>}> : (tensor<3xf64>) -> tensor<4x3xf64>
  %b = "stablehlo.broadcast_in_dim"(%a) <{broadcast_dimensions = array<i64: 1, 2>}> : (tensor<4x3xf64>) -> tensor<2x4x3xf64>
  func.return %b : tensor<2x4x3xf64>
}

// CHECK-LABEL: func.func @reshape_identity
// CHECK-NEXT:    func.return %x
func.func @reshape_identity(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
  %a = "stablehlo.reshape"(%x) : (tensor<2x3xf64>) -> tensor<2x3xf64>
  func.return %a : tensor<2x3xf64>
}

// CHECK-LABEL: func.func @reshape_reshape
// CHECK-NEXT:    %[[R:.*]] = "stablehlo.reshape"(%x) : (tensor<2x3xf64>) -> tensor<3x2xf64>
// CHECK-NEXT:    func.return %[[R]]
func.func @reshape_reshape(%x: tensor<2x3xf64>) -> tensor<3x2xf64> {
  %a = "stablehlo.reshape"(%x) : (tensor<2x3xf64>) -> tensor<6xf64>
  %b = "stablehlo.reshape"(%a) : (tensor<6xf64>) -> tensor<3x2xf64>
  func.return %b : tensor<3x2xf64>
}

// CHECK-LABEL: func.func @reverse_reverse
// CHECK-NEXT:    %[[R:.*]] = "stablehlo.reverse"(%x) <{dimensions = array<i64: 1>}>
// CHECK-NEXT:    func.return %x, %[[R]]
func.func @reverse_reverse(%x: tensor<2x3xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>) {
  %a = "stablehlo.reverse"(%x) <{dimensions = array<i64: 0>}> : (tensor<2x3xf64>) -> tensor<2x3xf64>
  %b = "stablehlo.reverse"(%a) <{dimensions = array<i64: 0>}> : (tensor<2x3xf64>) -> tensor<2x3xf64>
  %c = "stablehlo.reverse"(%a) <{dimensions = array<i64: 0, 1>}> : (tensor<2x3xf64>) -> tensor<2x3xf64>
  func.return %b, %c : tensor<2x3xf64>, tensor<2x3xf64>
}

// CHECK-LABEL: func.func @reverse_unit_dims
// CHECK-NEXT:    %[[R:.*]] = "stablehlo.reverse"(%x) <{dimensions = array<i64: 1>}>
// CHECK-NEXT:    func.return %[[R]]
func.func @reverse_unit_dims(%x: tensor<1x3xf64>) -> tensor<1x3xf64> {
  %a = "stablehlo.reverse"(%x) <{dimensions = array<i64: 0, 1>}> : (tensor<1x3xf64>) -> tensor<1x3xf64>
  func.return %a : tensor<1x3xf64>
}

// CHECK-LABEL: func.func @slice_whole
// CHECK-NEXT:    func.return %x
func.func @slice_whole(%x: tensor<10xf64>) -> tensor<10xf64> {
  %a = "stablehlo.slice"(%x) <{start_indices = array<i64: 0>, limit_indices = array<i64: 10>, strides = array<i64: 1>}> : (tensor<10xf64>) -> tensor<10xf64>
  func.return %a : tensor<10xf64>
}

// CHECK-LABEL: func.func @slice_slice
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.slice"(%x) <{start_indices = array<i64: 3>, limit_indices = array<i64: 8>, strides = array<i64: 4>}> : (tensor<10xf64>) -> tensor<2xf64>
// CHECK-NEXT:    func.return %[[S]]
func.func @slice_slice(%x: tensor<10xf64>) -> tensor<2xf64> {
  %a = "stablehlo.slice"(%x) <{start_indices = array<i64: 1>, limit_indices = array<i64: 10>, strides = array<i64: 2>}> : (tensor<10xf64>) -> tensor<5xf64>
  %b = "stablehlo.slice"(%a) <{start_indices = array<i64: 1>, limit_indices = array<i64: 5>, strides = array<i64: 2>}> : (tensor<5xf64>) -> tensor<2xf64>
  func.return %b : tensor<2xf64>
}

// CHECK-LABEL: func.func @slice_concatenate
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.slice"(%y) <{start_indices = array<i64: 1>, limit_indices = array<i64: 3>, strides = array<i64: 1>}>
// CHECK-NEXT:    func.return %y, %[[S]]
func.func @slice_concatenate(%x: tensor<10xf64>, %y: tensor<4xf64>) -> (tensor<4xf64>, tensor<2xf64>) {
  %c = "stablehlo.concatenate"(%x, %y) <{dimension = 0 : i64}> : (tensor<10xf64>, tensor<4xf64>) -> tensor<14xf64>
  %d = "stablehlo.slice"(%c) <{start_indices = array<i64: 10>, limit_indices = array<i64: 14>, strides = array<i64: 1>}> : (tensor<14xf64>) -> tensor<4xf64>
  %e = "stablehlo.slice"(%c) <{start_indices = array<i64: 11>, limit_indices = array<i64: 13>, strides = array<i64: 1>}> : (tensor<14xf64>) -> tensor<2xf64>
  func.return %d, %e : tensor<4xf64>, tensor<2xf64>
}

// The seed example: a slice of a product of large vectors multiplies the window only.
// CHECK-LABEL: func.func @slice_elementwise
// CHECK-NEXT:    %[[A:.*]] = "stablehlo.slice"(%a) <{start_indices = array<i64: 2>, limit_indices = array<i64: 5>, strides = array<i64: 1>}>
// CHECK-NEXT:    %[[B:.*]] = "stablehlo.slice"(%b) <{start_indices = array<i64: 2>, limit_indices = array<i64: 5>, strides = array<i64: 1>}>
// CHECK-NEXT:    %[[M:.*]] = "stablehlo.multiply"(%[[A]], %[[B]]) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.sine"(%[[M]]) : (tensor<3xf64>) -> tensor<3xf64>
// CHECK-NEXT:    func.return %[[S]]
func.func @slice_elementwise(%a: tensor<100xf64>, %b: tensor<100xf64>) -> tensor<3xf64> {
  %m = "stablehlo.multiply"(%a, %b) : (tensor<100xf64>, tensor<100xf64>) -> tensor<100xf64>
  %s = "stablehlo.sine"(%m) : (tensor<100xf64>) -> tensor<100xf64>
  %w = "stablehlo.slice"(%s) <{start_indices = array<i64: 2>, limit_indices = array<i64: 5>, strides = array<i64: 1>}> : (tensor<100xf64>) -> tensor<3xf64>
  func.return %w : tensor<3xf64>
}

// CHECK-LABEL: func.func @slice_broadcast
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.slice"(%v) <{start_indices = array<i64: 1>, limit_indices = array<i64: 3>, strides = array<i64: 1>}>
// CHECK-NEXT:    %[[B:.*]] = "stablehlo.broadcast_in_dim"(%[[S]]) <{broadcast_dimensions = array<i64: 1>}> : (tensor<2xf64>) -> tensor<2x2xf64>
// CHECK-NEXT:    func.return %[[B]]
func.func @slice_broadcast(%v: tensor<4xf64>) -> tensor<2x2xf64> {
  %b = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 1>}> : (tensor<4xf64>) -> tensor<5x4xf64>
  %s = "stablehlo.slice"(%b) <{start_indices = array<i64: 0, 1>, limit_indices = array<i64: 2, 3>, strides = array<i64: 1, 1>}> : (tensor<5x4xf64>) -> tensor<2x2xf64>
  func.return %s : tensor<2x2xf64>
}

// CHECK-LABEL: func.func @slice_transpose
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.slice"(%x) <{start_indices = array<i64: 0, 1>, limit_indices = array<i64: 3, 2>, strides = array<i64: 2, 1>}> : (tensor<3x4xf64>) -> tensor<2x1xf64>
// CHECK-NEXT:    %[[T:.*]] = "stablehlo.transpose"(%[[S]]) <{permutation = array<i64: 1, 0>}> : (tensor<2x1xf64>) -> tensor<1x2xf64>
// CHECK-NEXT:    func.return %[[T]]
func.func @slice_transpose(%x: tensor<3x4xf64>) -> tensor<1x2xf64> {
  %t = "stablehlo.transpose"(%x) <{permutation = array<i64: 1, 0>}> : (tensor<3x4xf64>) -> tensor<4x3xf64>
  %s = "stablehlo.slice"(%t) <{start_indices = array<i64: 1, 0>, limit_indices = array<i64: 2, 3>, strides = array<i64: 1, 2>}> : (tensor<4x3xf64>) -> tensor<1x2xf64>
  func.return %s : tensor<1x2xf64>
}

// CHECK-LABEL: func.func @slice_pad
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.slice"(%x) <{start_indices = array<i64: 1>, limit_indices = array<i64: 4>, strides = array<i64: 1>}>
// CHECK-NEXT:    func.return %[[S]]
func.func @slice_pad(%x: tensor<5xf64>, %c: tensor<f64>) -> tensor<3xf64> {
  %p = "stablehlo.pad"(%x, %c) <{edge_padding_low = array<i64: 2>, edge_padding_high = array<i64: 1>, interior_padding = array<i64: 0>}> : (tensor<5xf64>, tensor<f64>) -> tensor<8xf64>
  %s = "stablehlo.slice"(%p) <{start_indices = array<i64: 3>, limit_indices = array<i64: 6>, strides = array<i64: 1>}> : (tensor<8xf64>) -> tensor<3xf64>
  func.return %s : tensor<3xf64>
}

// an index past the end is clamped, as dynamic_slice does
// CHECK-LABEL: func.func @dynamic_slice_constant
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.slice"(%x) <{start_indices = array<i64: 1, 2>, limit_indices = array<i64: 3, 4>, strides = array<i64: 1, 1>}>
// CHECK-NEXT:    func.return %[[S]]
func.func @dynamic_slice_constant(%x: tensor<3x4xf64>) -> tensor<2x2xf64> {
  %i = "stablehlo.constant"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
  %j = "stablehlo.constant"() <{value = dense<7> : tensor<i64>}> : () -> tensor<i64>
  %s = "stablehlo.dynamic_slice"(%x, %i, %j) <{slice_sizes = array<i64: 2, 2>}> : (tensor<3x4xf64>, tensor<i64>, tensor<i64>) -> tensor<2x2xf64>
  func.return %s : tensor<2x2xf64>
}

// CHECK-LABEL: func.func @dynamic_update_slice_whole
// CHECK-NEXT:    func.return %u
func.func @dynamic_update_slice_whole(%x: tensor<3xf64>, %u: tensor<3xf64>, %i: tensor<i64>) -> tensor<3xf64> {
  %s = "stablehlo.dynamic_update_slice"(%x, %u, %i) : (tensor<3xf64>, tensor<3xf64>, tensor<i64>) -> tensor<3xf64>
  func.return %s : tensor<3xf64>
}

// CHECK-LABEL: func.func @concatenate_one
// CHECK-NEXT:    func.return %x
func.func @concatenate_one(%x: tensor<3xf64>) -> tensor<3xf64> {
  %c = "stablehlo.concatenate"(%x) <{dimension = 0 : i64}> : (tensor<3xf64>) -> tensor<3xf64>
  func.return %c : tensor<3xf64>
}

// CHECK-LABEL: func.func @concatenate_nested
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.concatenate"(%x, %y, %x) <{dimension = 0 : i64}> : (tensor<3xf64>, tensor<2xf64>, tensor<3xf64>) -> tensor<8xf64>
// CHECK-NEXT:    func.return %[[C]]
func.func @concatenate_nested(%x: tensor<3xf64>, %y: tensor<2xf64>) -> tensor<8xf64> {
  %a = "stablehlo.concatenate"(%x, %y) <{dimension = 0 : i64}> : (tensor<3xf64>, tensor<2xf64>) -> tensor<5xf64>
  %c = "stablehlo.concatenate"(%a, %x) <{dimension = 0 : i64}> : (tensor<5xf64>, tensor<3xf64>) -> tensor<8xf64>
  func.return %c : tensor<8xf64>
}

// CHECK-LABEL: func.func @concatenate_slices
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.slice"(%x) <{start_indices = array<i64: 0, 1>, limit_indices = array<i64: 2, 6>, strides = array<i64: 1, 1>}> : (tensor<3x6xf64>) -> tensor<2x5xf64>
// CHECK-NEXT:    func.return %[[S]]
func.func @concatenate_slices(%x: tensor<3x6xf64>) -> tensor<2x5xf64> {
  %a = "stablehlo.slice"(%x) <{start_indices = array<i64: 0, 1>, limit_indices = array<i64: 2, 3>, strides = array<i64: 1, 1>}> : (tensor<3x6xf64>) -> tensor<2x2xf64>
  %b = "stablehlo.slice"(%x) <{start_indices = array<i64: 0, 3>, limit_indices = array<i64: 2, 6>, strides = array<i64: 1, 1>}> : (tensor<3x6xf64>) -> tensor<2x3xf64>
  %c = "stablehlo.concatenate"(%a, %b) <{dimension = 1 : i64}> : (tensor<2x2xf64>, tensor<2x3xf64>) -> tensor<2x5xf64>
  func.return %c : tensor<2x5xf64>
}

// CHECK-LABEL: func.func @concatenate_splats
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<1.500000e+00> : tensor<5xf64>}>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @concatenate_splats(%x: tensor<3xf64>) -> (tensor<3xf64>, tensor<5xf64>) {
  %a = "stablehlo.constant"() <{value = dense<1.500000e+00> : tensor<2xf64>}> : () -> tensor<2xf64>
  %b = "stablehlo.constant"() <{value = dense<1.500000e+00> : tensor<3xf64>}> : () -> tensor<3xf64>
  %c = "stablehlo.concatenate"(%a, %b) <{dimension = 0 : i64}> : (tensor<2xf64>, tensor<3xf64>) -> tensor<5xf64>
  func.return %x, %c : tensor<3xf64>, tensor<5xf64>
}

// CHECK-LABEL: func.func @pad_nothing
// CHECK-NEXT:    func.return %x
func.func @pad_nothing(%x: tensor<3xf64>, %c: tensor<f64>) -> tensor<3xf64> {
  %p = "stablehlo.pad"(%x, %c) <{edge_padding_low = array<i64: 0>, edge_padding_high = array<i64: 0>, interior_padding = array<i64: 0>}> : (tensor<3xf64>, tensor<f64>) -> tensor<3xf64>
  func.return %p : tensor<3xf64>
}

// CHECK-LABEL: func.func @pad_pad
// CHECK-NEXT:    %[[P:.*]] = "stablehlo.pad"(%x, %c) <{edge_padding_low = array<i64: 3>, edge_padding_high = array<i64: 1>, interior_padding = array<i64: 0>}> : (tensor<3xf64>, tensor<f64>) -> tensor<7xf64>
// CHECK-NEXT:    func.return %[[P]]
func.func @pad_pad(%x: tensor<3xf64>, %c: tensor<f64>) -> tensor<7xf64> {
  %p = "stablehlo.pad"(%x, %c) <{edge_padding_low = array<i64: 1>, edge_padding_high = array<i64: 1>, interior_padding = array<i64: 0>}> : (tensor<3xf64>, tensor<f64>) -> tensor<5xf64>
  %q = "stablehlo.pad"(%p, %c) <{edge_padding_low = array<i64: 2>, edge_padding_high = array<i64: 0>, interior_padding = array<i64: 0>}> : (tensor<5xf64>, tensor<f64>) -> tensor<7xf64>
  func.return %q : tensor<7xf64>
}

// CHECK-LABEL: func.func @add_pads
// CHECK:         %[[A:.*]] = "stablehlo.add"(%x, %y) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
// CHECK-NEXT:    %[[P:.*]] = "stablehlo.pad"(%[[A]], %{{.*}}) <{edge_padding_low = array<i64: 1>, edge_padding_high = array<i64: 2>, interior_padding = array<i64: 1>}>
// CHECK-NEXT:    func.return %[[P]]
func.func @add_pads(%x: tensor<3xf64>, %y: tensor<3xf64>) -> tensor<8xf64> {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f64>}> : () -> tensor<f64>
  %p = "stablehlo.pad"(%x, %z) <{edge_padding_low = array<i64: 1>, edge_padding_high = array<i64: 2>, interior_padding = array<i64: 1>}> : (tensor<3xf64>, tensor<f64>) -> tensor<8xf64>
  %q = "stablehlo.pad"(%y, %z) <{edge_padding_low = array<i64: 1>, edge_padding_high = array<i64: 2>, interior_padding = array<i64: 1>}> : (tensor<3xf64>, tensor<f64>) -> tensor<8xf64>
  %s = "stablehlo.add"(%p, %q) : (tensor<8xf64>, tensor<8xf64>) -> tensor<8xf64>
  func.return %s : tensor<8xf64>
}

// The adjoint of a slice (a zero pad) times a large operand known to be finite (here
// converted from integers): multiply the window only. An operand that may be infinite
// or NaN keeps the product (0 * inf is NaN in jax.grad's derivative too).
// CHECK-LABEL: func.func @multiply_zero_padded
// CHECK:         %[[K:.*]] = "stablehlo.pad"(%x, %{{.*}})
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.slice"(%yi) <{start_indices = array<i64: 1, 0>, limit_indices = array<i64: 6, 4>, strides = array<i64: 2, 1>}> : (tensor<8x4xi64>) -> tensor<3x4xi64>
// CHECK-NEXT:    %[[W:.*]] = "stablehlo.convert"(%[[S]]) : (tensor<3x4xi64>) -> tensor<3x4xf64>
// CHECK-NEXT:    %[[M:.*]] = "stablehlo.multiply"(%x, %[[W]]) : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
// CHECK-NEXT:    %[[P:.*]] = "stablehlo.pad"(%[[M]], %{{.*}}) <{edge_padding_low = array<i64: 1, 0>, edge_padding_high = array<i64: 2, 0>, interior_padding = array<i64: 1, 0>}>
// CHECK-NEXT:    %[[N:.*]] = "stablehlo.multiply"(%y, %[[K]])
// CHECK-NEXT:    func.return %[[P]], %[[N]]
func.func @multiply_zero_padded(%x: tensor<3x4xf64>, %yi: tensor<8x4xi64>, %y: tensor<8x4xf64>) -> (tensor<8x4xf64>, tensor<8x4xf64>) {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f64>}> : () -> tensor<f64>
  %p = "stablehlo.pad"(%x, %z) <{edge_padding_low = array<i64: 1, 0>, edge_padding_high = array<i64: 2, 0>, interior_padding = array<i64: 1, 0>}> : (tensor<3x4xf64>, tensor<f64>) -> tensor<8x4xf64>
  %yf = "stablehlo.convert"(%yi) : (tensor<8x4xi64>) -> tensor<8x4xf64>
  %m = "stablehlo.multiply"(%yf, %p) : (tensor<8x4xf64>, tensor<8x4xf64>) -> tensor<8x4xf64>
  %n = "stablehlo.multiply"(%y, %p) : (tensor<8x4xf64>, tensor<8x4xf64>) -> tensor<8x4xf64>
  func.return %m, %n : tensor<8x4xf64>, tensor<8x4xf64>
}
