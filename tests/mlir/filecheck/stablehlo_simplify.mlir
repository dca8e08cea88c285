// RUN: zymase-opt %s -p stablehlo-simplify | filecheck %s
// The first AD-aware StableHLO rewrites (issue 28 item 3), one function per pattern;
// tests/jax/test_hlo_rewrites.py checks that the rewritten programs compute the same.

// CHECK-LABEL: func.func @add_zero
// CHECK-NEXT:    func.return %x : tensor<3xf64>
func.func @add_zero(%x: tensor<3xf64>) -> tensor<3xf64> {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<3xf64>}> : () -> tensor<3xf64>
  %a = "stablehlo.add"(%z, %x) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  %b = "stablehlo.add"(%a, %z) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  %c = "stablehlo.subtract"(%b, %z) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  func.return %c : tensor<3xf64>
}

// x * 1 -> x; x * 0 stays for an x that may be infinite or NaN (its product is NaN, as
// in JAX's derivatives: session 24), and folds for a finite one (an iota)
// CHECK-LABEL: func.func @multiply_one_and_zero
// CHECK-NEXT:    %[[Z:.*]] = "stablehlo.constant"() <{value = dense<0.000000e+00>
// CHECK-NEXT:    %[[B:.*]] = "stablehlo.multiply"(%x, %[[Z]])
// CHECK-NEXT:    func.return %[[B]], %[[Z]]
func.func @multiply_one_and_zero(%x: tensor<3xf64>) -> (tensor<3xf64>, tensor<3xf64>) {
  %one = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<3xf64>}> : () -> tensor<3xf64>
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<3xf64>}> : () -> tensor<3xf64>
  %a = "stablehlo.multiply"(%one, %x) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  %b = "stablehlo.multiply"(%a, %z) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  %i = "stablehlo.iota"() <{iota_dimension = 0 : i64}> : () -> tensor<3xf64>
  %c = "stablehlo.multiply"(%i, %z) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  func.return %b, %c : tensor<3xf64>, tensor<3xf64>
}

// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-NEXT:    %[[T:.*]] = "stablehlo.transpose"(%x) <{permutation = array<i64: 2, 0, 1>}> : (tensor<2x3x4xf64>) -> tensor<4x2x3xf64>
// CHECK-NEXT:    func.return %x, %[[T]]
func.func @transpose_of_transpose(%x: tensor<2x3x4xf64>) -> (tensor<2x3x4xf64>, tensor<4x2x3xf64>) {
  %a = "stablehlo.transpose"(%x) <{permutation = array<i64: 1, 0, 2>}> : (tensor<2x3x4xf64>) -> tensor<3x2x4xf64>
  %b = "stablehlo.transpose"(%a) <{permutation = array<i64: 1, 0, 2>}> : (tensor<3x2x4xf64>) -> tensor<2x3x4xf64>
  %c = "stablehlo.transpose"(%a) <{permutation = array<i64: 2, 1, 0>}> : (tensor<3x2x4xf64>) -> tensor<4x2x3xf64>
  func.return %b, %c : tensor<2x3x4xf64>, tensor<4x2x3xf64>
}

// CHECK-LABEL: func.func @broadcast_folding
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.constant"() <{value = dense<2.500000e+00> : tensor<4x3xf64>}>
// CHECK-NEXT:    %[[B:.*]] = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 2>}> : (tensor<3xf64>) -> tensor<2x4x3xf64>
// CHECK-NEXT:    func.return %[[S]], %[[B]], %v
func.func @broadcast_folding(%v: tensor<3xf64>) -> (tensor<4x3xf64>, tensor<2x4x3xf64>, tensor<3xf64>) {
  %c = "stablehlo.constant"() <{value = dense<2.500000e+00> : tensor<f64>}> : () -> tensor<f64>
  %s = "stablehlo.broadcast_in_dim"(%c) <{broadcast_dimensions = array<i64>}> : (tensor<f64>) -> tensor<4x3xf64>
  %a = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 1>}> : (tensor<3xf64>) -> tensor<4x3xf64>
  %b = "stablehlo.broadcast_in_dim"(%a) <{broadcast_dimensions = array<i64: 1, 2>}> : (tensor<4x3xf64>) -> tensor<2x4x3xf64>
  %i = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 0>}> : (tensor<3xf64>) -> tensor<3xf64>
  func.return %s, %b, %i : tensor<4x3xf64>, tensor<2x4x3xf64>, tensor<3xf64>
}

// CHECK-LABEL: func.func @reshape_convert_select_negate
// CHECK-NEXT:    %[[R:.*]] = "stablehlo.reshape"(%x) : (tensor<2x3xf64>) -> tensor<3x2xf64>
// CHECK-NEXT:    func.return %[[R]], %x
func.func @reshape_convert_select_negate(%x: tensor<2x3xf64>, %p: tensor<2x3xi1>) -> (tensor<3x2xf64>, tensor<2x3xf64>) {
  %a = "stablehlo.reshape"(%x) : (tensor<2x3xf64>) -> tensor<6xf64>
  %b = "stablehlo.reshape"(%a) : (tensor<6xf64>) -> tensor<3x2xf64>
  %c = "stablehlo.convert"(%x) : (tensor<2x3xf64>) -> tensor<2x3xf64>
  %d = "stablehlo.select"(%p, %c, %c) : (tensor<2x3xi1>, tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %e = "stablehlo.negate"(%d) : (tensor<2x3xf64>) -> tensor<2x3xf64>
  %f = "stablehlo.negate"(%e) : (tensor<2x3xf64>) -> tensor<2x3xf64>
  func.return %b, %f : tensor<3x2xf64>, tensor<2x3xf64>
}

// The adjoint of a slice (a zero pad) times a large operand known to be finite
// (converted from integers): multiply the window only.
// CHECK-LABEL: func.func @padded_product
// CHECK:         %[[S:.*]] = "stablehlo.slice"(%yi) <{start_indices = array<i64: 1, 0>, limit_indices = array<i64: 6, 4>, strides = array<i64: 2, 1>}> : (tensor<8x4xi32>) -> tensor<3x4xi32>
// CHECK-NEXT:    %[[W:.*]] = "stablehlo.convert"(%[[S]]) : (tensor<3x4xi32>) -> tensor<3x4xf64>
// CHECK-NEXT:    %[[M:.*]] = "stablehlo.multiply"(%x, %[[W]]) : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
// CHECK-NEXT:    %[[P:.*]] = "stablehlo.pad"(%[[M]], %{{.*}}) <{edge_padding_low = array<i64: 1, 0>, edge_padding_high = array<i64: 2, 0>, interior_padding = array<i64: 1, 0>}>
// CHECK-NEXT:    func.return %[[P]]
func.func @padded_product(%x: tensor<3x4xf64>, %yi: tensor<8x4xi32>) -> tensor<8x4xf64> {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f64>}> : () -> tensor<f64>
  %p = "stablehlo.pad"(%x, %z) <{edge_padding_low = array<i64: 1, 0>, edge_padding_high = array<i64: 2, 0>, interior_padding = array<i64: 1, 0>}> : (tensor<3x4xf64>, tensor<f64>) -> tensor<8x4xf64>
  %y = "stablehlo.convert"(%yi) : (tensor<8x4xi32>) -> tensor<8x4xf64>
  %m = "stablehlo.multiply"(%y, %p) : (tensor<8x4xf64>, tensor<8x4xf64>) -> tensor<8x4xf64>
  func.return %m : tensor<8x4xf64>
}

// CSE keeps compares (and other ops) whose StableHLO attributes differ: their attributes
// once compared equal whatever their text, which merged the two compares of an argmax.
// CHECK-LABEL: func.func @different_compares_stay
// CHECK:         comparison_direction = #stablehlo<comparison_direction GT>
// CHECK:         comparison_direction = #stablehlo<comparison_direction EQ>
// CHECK:         func.return %{{.*}}, %{{.*}} : tensor<3xi1>, tensor<3xi1>
func.func @different_compares_stay(%a: tensor<3xf64>, %b: tensor<3xf64>) -> (tensor<3xi1>, tensor<3xi1>) {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<3xf64>}> : () -> tensor<3xf64>
  %s = "stablehlo.add"(%b, %z) : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  %1 = "stablehlo.compare"(%a, %s) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xi1>
  %2 = "stablehlo.compare"(%a, %s) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction EQ>}> : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xi1>
  func.return %1, %2 : tensor<3xi1>, tensor<3xi1>
}

// CHECK-LABEL: func.func @slices
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.slice"(%x) <{start_indices = array<i64: 3>, limit_indices = array<i64: 8>, strides = array<i64: 4>}> : (tensor<10xf64>) -> tensor<2xf64>
// CHECK-NEXT:    func.return %x, %[[S]], %y
func.func @slices(%x: tensor<10xf64>, %y: tensor<4xf64>) -> (tensor<10xf64>, tensor<2xf64>, tensor<4xf64>) {
  %whole = "stablehlo.slice"(%x) <{start_indices = array<i64: 0>, limit_indices = array<i64: 10>, strides = array<i64: 1>}> : (tensor<10xf64>) -> tensor<10xf64>
  %a = "stablehlo.slice"(%x) <{start_indices = array<i64: 1>, limit_indices = array<i64: 10>, strides = array<i64: 2>}> : (tensor<10xf64>) -> tensor<5xf64>
  %b = "stablehlo.slice"(%a) <{start_indices = array<i64: 1>, limit_indices = array<i64: 5>, strides = array<i64: 2>}> : (tensor<5xf64>) -> tensor<2xf64>
  %c = "stablehlo.concatenate"(%x, %y) <{dimension = 0 : i64}> : (tensor<10xf64>, tensor<4xf64>) -> tensor<14xf64>
  %d = "stablehlo.slice"(%c) <{start_indices = array<i64: 10>, limit_indices = array<i64: 14>, strides = array<i64: 1>}> : (tensor<14xf64>) -> tensor<4xf64>
  func.return %whole, %b, %d : tensor<10xf64>, tensor<2xf64>, tensor<4xf64>
}

// CHECK-LABEL: func.func @transpose_of_broadcast_and_conversions
// CHECK-NEXT:    %[[B:.*]] = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 0>}> : (tensor<3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %[[D:.*]] = "stablehlo.convert"(%w) : (tensor<3xf64>) -> tensor<3xf32>
// CHECK-NEXT:    %[[E:.*]] = "stablehlo.convert"(%[[D]]) : (tensor<3xf32>) -> tensor<3xf64>
// CHECK-NEXT:    func.return %[[B]], %v, %[[E]]
func.func @transpose_of_broadcast_and_conversions(%v: tensor<3xf32>, %w: tensor<3xf64>) -> (tensor<3x2xf32>, tensor<3xf32>, tensor<3xf64>) {
  %b = "stablehlo.broadcast_in_dim"(%v) <{broadcast_dimensions = array<i64: 1>}> : (tensor<3xf32>) -> tensor<2x3xf32>
  %t = "stablehlo.transpose"(%b) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %up = "stablehlo.convert"(%v) : (tensor<3xf32>) -> tensor<3xf64>
  %down = "stablehlo.convert"(%up) : (tensor<3xf64>) -> tensor<3xf32>
  // narrowing then widening rounds: it stays
  %n = "stablehlo.convert"(%w) : (tensor<3xf64>) -> tensor<3xf32>
  %m = "stablehlo.convert"(%n) : (tensor<3xf32>) -> tensor<3xf64>
  func.return %t, %down, %m : tensor<3x2xf32>, tensor<3xf32>, tensor<3xf64>
}
