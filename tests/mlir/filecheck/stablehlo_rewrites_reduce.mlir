// RUN: zymase-opt %s -p stablehlo-simplify | filecheck %s
// StableHLO rewrites of reductions and contractions (issue 28 item 3,
// hlo_patterns_reduce.py): one function per registered pattern, named after it.
// tests/jax/test_hlo_rewrites.py runs every function before and after the rewrite in
// XLA and compares the results (sums to rounding: XLA orders a sum as it likes).

// CHECK-LABEL: func.func @reduce_transpose
// CHECK:         %[[R:.*]] = "stablehlo.reduce"(%x, %{{.*}}) <{dimensions = array<i64: 1>}>
// CHECK:         %[[T:.*]] = "stablehlo.transpose"(%[[R]]) <{permutation = array<i64: 1, 0>}> : (tensor<2x4xf64>) -> tensor<4x2xf64>
// CHECK-NEXT:    func.return %[[T]]
func.func @reduce_transpose(%x: tensor<2x3x4xf64>) -> tensor<4x2xf64> {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f64>}> : () -> tensor<f64>
  %t = "stablehlo.transpose"(%x) <{permutation = array<i64: 2, 1, 0>}> : (tensor<2x3x4xf64>) -> tensor<4x3x2xf64>
  %r = "stablehlo.reduce"(%t, %z) <{dimensions = array<i64: 1>}> ({
  ^bb0(%a: tensor<f64>, %b: tensor<f64>):
    %s = "stablehlo.add"(%a, %b) : (tensor<f64>, tensor<f64>) -> tensor<f64>
    "stablehlo.return"(%s) : (tensor<f64>) -> ()
  }) : (tensor<4x3x2xf64>, tensor<f64>) -> tensor<4x2xf64>
  func.return %r : tensor<4x2xf64>
}

// CHECK-LABEL: func.func @reduce_reshape
// CHECK:         %[[R:.*]] = "stablehlo.reduce"(%x, %{{.*}}) <{dimensions = array<i64: 0, 1>}>
// CHECK:         stablehlo.maximum
// CHECK:         }) : (tensor<2x3xf64>, tensor<f64>) -> tensor<f64>
// CHECK-NEXT:    func.return %[[R]]
func.func @reduce_reshape(%x: tensor<2x3xf64>) -> tensor<f64> {
  %z = "stablehlo.constant"() <{value = dense<0xFFF0000000000000> : tensor<f64>}> : () -> tensor<f64>
  %t = "stablehlo.reshape"(%x) : (tensor<2x3xf64>) -> tensor<6xf64>
  %r = "stablehlo.reduce"(%t, %z) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f64>, %b: tensor<f64>):
    %s = "stablehlo.maximum"(%a, %b) : (tensor<f64>, tensor<f64>) -> tensor<f64>
    "stablehlo.return"(%s) : (tensor<f64>) -> ()
  }) : (tensor<6xf64>, tensor<f64>) -> tensor<f64>
  func.return %r : tensor<f64>
}

// sum over the 5 copies a broadcast made: 5 x
// CHECK-LABEL: func.func @reduce_broadcast
// CHECK-NEXT:    %[[N:.*]] = "stablehlo.constant"() <{value = dense<5.000000e+00> : tensor<3xf64>}>
// CHECK-NEXT:    %[[M:.*]] = "stablehlo.multiply"(%v, %[[N]])
// CHECK-NEXT:    %[[B:.*]] = "stablehlo.broadcast_in_dim"(%[[M]]) <{broadcast_dimensions = array<i64: 1>}> : (tensor<3xf64>) -> tensor<2x3xf64>
// CHECK-NEXT:    func.return %[[B]]
func.func @reduce_broadcast(%v: tensor<3xf64>) -> tensor<2x3xf64> {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f64>}> : () -> tensor<f64>
  %b = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 2>}> : (tensor<3xf64>) -> tensor<2x5x3xf64>
  %r = "stablehlo.reduce"(%b, %z) <{dimensions = array<i64: 1>}> ({
  ^bb0(%a: tensor<f64>, %c: tensor<f64>):
    %s = "stablehlo.add"(%a, %c) : (tensor<f64>, tensor<f64>) -> tensor<f64>
    "stablehlo.return"(%s) : (tensor<f64>) -> ()
  }) : (tensor<2x5x3xf64>, tensor<f64>) -> tensor<2x3xf64>
  func.return %r : tensor<2x3xf64>
}

// CHECK-LABEL: func.func @reduce_zero_pad
// CHECK:         %[[R:.*]] = "stablehlo.reduce"(%x, %{{.*}}) <{dimensions = array<i64: 0>}>
// CHECK:         }) : (tensor<3x2xf64>, tensor<f64>) -> tensor<2xf64>
// CHECK-NEXT:    func.return %[[R]]
func.func @reduce_zero_pad(%x: tensor<3x2xf64>) -> tensor<2xf64> {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f64>}> : () -> tensor<f64>
  %p = "stablehlo.pad"(%x, %z) <{edge_padding_low = array<i64: 2, 0>, edge_padding_high = array<i64: 1, 0>, interior_padding = array<i64: 1, 0>}> : (tensor<3x2xf64>, tensor<f64>) -> tensor<8x2xf64>
  %r = "stablehlo.reduce"(%p, %z) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f64>, %c: tensor<f64>):
    %s = "stablehlo.add"(%a, %c) : (tensor<f64>, tensor<f64>) -> tensor<f64>
    "stablehlo.return"(%s) : (tensor<f64>) -> ()
  }) : (tensor<8x2xf64>, tensor<f64>) -> tensor<2xf64>
  func.return %r : tensor<2xf64>
}

// a negation of the summed tensor is taken after the sum
// CHECK-LABEL: func.func @reduce_negate
// CHECK:         %[[R:.*]] = "stablehlo.reduce"(%x, %{{.*}}) <{dimensions = array<i64: 0>}>
// CHECK:         }) : (tensor<4x3xf64>, tensor<f64>) -> tensor<3xf64>
// CHECK-NEXT:    %[[N:.*]] = "stablehlo.negate"(%[[R]]) : (tensor<3xf64>) -> tensor<3xf64>
// CHECK-NEXT:    func.return %[[N]]
func.func @reduce_negate(%x: tensor<4x3xf64>) -> tensor<3xf64> {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f64>}> : () -> tensor<f64>
  %n = "stablehlo.negate"(%x) : (tensor<4x3xf64>) -> tensor<4x3xf64>
  %r = "stablehlo.reduce"(%n, %z) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f64>, %c: tensor<f64>):
    %s = "stablehlo.add"(%a, %c) : (tensor<f64>, tensor<f64>) -> tensor<f64>
    "stablehlo.return"(%s) : (tensor<f64>) -> ()
  }) : (tensor<4x3xf64>, tensor<f64>) -> tensor<3xf64>
  func.return %r : tensor<3xf64>
}

// sum over dim 1 of x * b[k, i] (b broadcast along dim 1) is b times the sum of x,
// on the reduced shape; with a splat factor too
// CHECK-LABEL: func.func @reduce_scaled
// CHECK-NOT:     "stablehlo.broadcast_in_dim"(%v){{.*}} -> tensor<2x5x3xf64>
// CHECK:         %[[R:.*]] = "stablehlo.reduce"(%x, %{{.*}}) <{dimensions = array<i64: 1>}>
// CHECK:         }) : (tensor<2x5x3xf64>, tensor<f64>) -> tensor<2x3xf64>
// CHECK-NEXT:    %[[B:.*]] = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 1, 0>}> : (tensor<3x2xf64>) -> tensor<2x3xf64>
// CHECK-NEXT:    %[[M:.*]] = "stablehlo.multiply"(%[[R]], %[[B]]) : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
// CHECK:         %[[Y:.*]] = "stablehlo.exponential"(%x)
// CHECK-NEXT:    %[[R2:.*]] = "stablehlo.reduce"(%[[Y]], %{{.*}}) <{dimensions = array<i64: 1>}>
// CHECK:         }) : (tensor<2x5x3xf64>, tensor<f64>) -> tensor<2x3xf64>
// CHECK-NEXT:    %[[H:.*]] = "stablehlo.constant"() <{value = dense<5.000000e-01> : tensor<2x3xf64>}>
// CHECK-NEXT:    %[[M2:.*]] = "stablehlo.multiply"(%[[R2]], %[[H]])
// CHECK-NEXT:    func.return %[[M]], %[[M2]]
func.func @reduce_scaled(%x: tensor<2x5x3xf64>, %v: tensor<3x2xf64>) -> (tensor<2x3xf64>, tensor<2x3xf64>) {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f64>}> : () -> tensor<f64>
  %b = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 2, 0>}> : (tensor<3x2xf64>) -> tensor<2x5x3xf64>
  %m = "stablehlo.multiply"(%x, %b) : (tensor<2x5x3xf64>, tensor<2x5x3xf64>) -> tensor<2x5x3xf64>
  %r = "stablehlo.reduce"(%m, %z) <{dimensions = array<i64: 1>}> ({
  ^bb0(%a: tensor<f64>, %c: tensor<f64>):
    %s = "stablehlo.add"(%a, %c) : (tensor<f64>, tensor<f64>) -> tensor<f64>
    "stablehlo.return"(%s) : (tensor<f64>) -> ()
  }) : (tensor<2x5x3xf64>, tensor<f64>) -> tensor<2x3xf64>
  %h = "stablehlo.constant"() <{value = dense<5.000000e-01> : tensor<2x5x3xf64>}> : () -> tensor<2x5x3xf64>
  %y = "stablehlo.exponential"(%x) : (tensor<2x5x3xf64>) -> tensor<2x5x3xf64>
  %m2 = "stablehlo.multiply"(%h, %y) : (tensor<2x5x3xf64>, tensor<2x5x3xf64>) -> tensor<2x5x3xf64>
  %r2 = "stablehlo.reduce"(%m2, %z) <{dimensions = array<i64: 1>}> ({
  ^bb0(%a: tensor<f64>, %c: tensor<f64>):
    %s = "stablehlo.add"(%a, %c) : (tensor<f64>, tensor<f64>) -> tensor<f64>
    "stablehlo.return"(%s) : (tensor<f64>) -> ()
  }) : (tensor<2x5x3xf64>, tensor<f64>) -> tensor<2x3xf64>
  func.return %r, %r2 : tensor<2x3xf64>, tensor<2x3xf64>
}

// p = (x - m) * broadcast(s) is the program's; sum(g * (x - m)) * s reads p instead
// CHECK-LABEL: func.func @reduce_scaled_reuse
// CHECK:         %[[P:.*]] = "stablehlo.multiply"(%d, %sb)
// CHECK-NEXT:    %[[Q:.*]] = "stablehlo.multiply"(%[[P]], %g)
// CHECK-NEXT:    %[[R:.*]] = "stablehlo.reduce"(%[[Q]], %z) <{dimensions = array<i64: 0>}>
// CHECK:         }) : (tensor<4x3xf64>, tensor<f64>) -> tensor<3xf64>
// CHECK-NEXT:    func.return %[[P]], %[[R]]
func.func @reduce_scaled_reuse(%x: tensor<4x3xf64>, %mu: tensor<3xf64>, %s: tensor<3xf64>, %g: tensor<4x3xf64>) -> (tensor<4x3xf64>, tensor<3xf64>) {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f64>}> : () -> tensor<f64>
  %mb = "stablehlo.broadcast_in_dim"(%mu) <{broadcast_dimensions = array<i64: 1>}> : (tensor<3xf64>) -> tensor<4x3xf64>
  %d = "stablehlo.subtract"(%x, %mb) : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %sb = "stablehlo.broadcast_in_dim"(%s) <{broadcast_dimensions = array<i64: 1>}> : (tensor<3xf64>) -> tensor<4x3xf64>
  %p = "stablehlo.multiply"(%d, %sb) : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %q = "stablehlo.multiply"(%g, %d) : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  %r = "stablehlo.reduce"(%q, %z) <{dimensions = array<i64: 0>}> ({
  ^bb0(%a: tensor<f64>, %c: tensor<f64>):
    %t = "stablehlo.add"(%a, %c) : (tensor<f64>, tensor<f64>) -> tensor<f64>
    "stablehlo.return"(%t) : (tensor<f64>) -> ()
  }) : (tensor<4x3xf64>, tensor<f64>) -> tensor<3xf64>
  %w = "stablehlo.multiply"(%s, %r) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  func.return %p, %w : tensor<4x3xf64>, tensor<3xf64>
}

// x.T @ y: the transpose goes into the dimension numbers
// CHECK-LABEL: func.func @dot_general_transposed_lhs
// CHECK-NEXT:    %[[D:.*]] = "stablehlo.dot_general"(%x, %y) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>}> : (tensor<3x2xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>
// CHECK-NEXT:    func.return %[[D]]
func.func @dot_general_transposed_lhs(%x: tensor<3x2xf64>, %y: tensor<3x4xf64>) -> tensor<2x4xf64> {
  %t = "stablehlo.transpose"(%x) <{permutation = array<i64: 1, 0>}> : (tensor<3x2xf64>) -> tensor<2x3xf64>
  %d = "stablehlo.dot_general"(%t, %y) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}> : (tensor<2x3xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>
  func.return %d : tensor<2x4xf64>
}

// batched x @ y.T; a transpose that reorders free dims stays (the result's order would change)
// CHECK-LABEL: func.func @dot_general_transposed_rhs
// CHECK-NEXT:    %[[D:.*]] = "stablehlo.dot_general"(%x, %y) <{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [2]>}> : (tensor<5x2x3xf64>, tensor<5x4x3xf64>) -> tensor<5x2x4xf64>
// CHECK-NEXT:    %[[T:.*]] = "stablehlo.transpose"(%w)
// CHECK-NEXT:    %[[E:.*]] = "stablehlo.dot_general"(%v, %[[T]])
// CHECK-NEXT:    func.return %[[D]], %[[E]]
func.func @dot_general_transposed_rhs(%x: tensor<5x2x3xf64>, %y: tensor<5x4x3xf64>, %v: tensor<3xf64>, %w: tensor<2x3x4xf64>) -> (tensor<5x2x4xf64>, tensor<4x2xf64>) {
  %t = "stablehlo.transpose"(%y) <{permutation = array<i64: 0, 2, 1>}> : (tensor<5x4x3xf64>) -> tensor<5x3x4xf64>
  %d = "stablehlo.dot_general"(%x, %t) <{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>}> : (tensor<5x2x3xf64>, tensor<5x3x4xf64>) -> tensor<5x2x4xf64>
  %u = "stablehlo.transpose"(%w) <{permutation = array<i64: 1, 2, 0>}> : (tensor<2x3x4xf64>) -> tensor<3x4x2xf64>
  %e = "stablehlo.dot_general"(%v, %u) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [0], rhs_contracting_dimensions = [0]>}> : (tensor<3xf64>, tensor<3x4x2xf64>) -> tensor<4x2xf64>
  func.return %d, %e : tensor<5x2x4xf64>, tensor<4x2xf64>
}

// the LU of x twice, spelled as JAX does and as zymase's rules do (no operand aliasing):
// one call (session 24); the LU of y stays
// CHECK-LABEL: func.func @lapack_call_repeated
// CHECK-NEXT:    %[[A:.*]], %[[P:.*]], %[[I:.*]] = "stablehlo.custom_call"(%x)
// CHECK-NEXT:    %[[B:.*]], %{{.*}}, %{{.*}} = "stablehlo.custom_call"(%y)
// CHECK-NEXT:    func.return %[[A]], %[[P]], %[[A]], %[[B]]
func.func @lapack_call_repeated(%x: tensor<4x4xf64>, %y: tensor<4x4xf64>) -> (tensor<4x4xf64>, tensor<4xi32>, tensor<4x4xf64>, tensor<4x4xf64>) {
  %a, %p, %i = "stablehlo.custom_call"(%x) <{api_version = 1 : i32, backend_config = "", call_target_name = "lapack_dgetrf_ffi", called_computations = [], has_side_effect = false, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]}> {mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"}} : (tensor<4x4xf64>) -> (tensor<4x4xf64>, tensor<4xi32>, tensor<i32>)
  %b, %q, %j = "stablehlo.custom_call"(%x) <{api_version = 1 : i32, backend_config = "", call_target_name = "lapack_dgetrf_ffi", operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]}> {mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"}} : (tensor<4x4xf64>) -> (tensor<4x4xf64>, tensor<4xi32>, tensor<i32>)
  %c, %r, %k = "stablehlo.custom_call"(%y) <{api_version = 1 : i32, backend_config = "", call_target_name = "lapack_dgetrf_ffi", operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]}> {mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"}} : (tensor<4x4xf64>) -> (tensor<4x4xf64>, tensor<4xi32>, tensor<i32>)
  func.return %a, %p, %b, %c : tensor<4x4xf64>, tensor<4xi32>, tensor<4x4xf64>, tensor<4x4xf64>
}

// an SVD none of whose results is read (as the mode-N gesdd of svd(compute_uv=False)
// once the rule's mode-S call merged with another): gone; the one whose values are read stays
// CHECK-LABEL: func.func @lapack_call_unused
// CHECK-NEXT:    %[[A:.*]], %[[P:.*]], %{{.*}} = "stablehlo.custom_call"(%x)
// CHECK-NEXT:    func.return %[[A]], %[[P]]
func.func @lapack_call_unused(%x: tensor<4x4xf64>, %y: tensor<4x4xf64>) -> (tensor<4x4xf64>, tensor<4xi32>) {
  %a, %p, %i = "stablehlo.custom_call"(%x) <{api_version = 1 : i32, backend_config = "", call_target_name = "lapack_dgetrf_ffi", operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]}> {mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"}} : (tensor<4x4xf64>) -> (tensor<4x4xf64>, tensor<4xi32>, tensor<i32>)
  %c, %r, %k = "stablehlo.custom_call"(%y) <{api_version = 1 : i32, backend_config = "", call_target_name = "lapack_dgetrf_ffi", operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]}> {mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"}} : (tensor<4x4xf64>) -> (tensor<4x4xf64>, tensor<4xi32>, tensor<i32>)
  func.return %a, %p : tensor<4x4xf64>, tensor<4xi32>
}
