// RUN: zymase-opt %s -p stablehlo-simplify | filecheck %s
// StableHLO rewrites of elementwise algebra (issue 28 item 3, hlo_patterns_algebra.py):
// one function per registered pattern, named after it. tests/jax/test_hlo_rewrites.py
// runs every function before and after the rewrite in XLA and compares the results.

// CHECK-LABEL: func.func @add_zero
// CHECK-NEXT:    func.return %x
func.func @add_zero(%x: tensor<4xf64>) -> tensor<4xf64> {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %a = "stablehlo.add"(%z, %x) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// CHECK-LABEL: func.func @add_negate
// CHECK-NEXT:    %[[A:.*]] = "stablehlo.subtract"(%x, %y)
// CHECK-NEXT:    func.return %[[A]], %[[A]]
func.func @add_negate(%x: tensor<4xf64>, %y: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %n = "stablehlo.negate"(%y) : (tensor<4xf64>) -> tensor<4xf64>
  %a = "stablehlo.add"(%x, %n) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %b = "stablehlo.add"(%n, %x) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a, %b : tensor<4xf64>, tensor<4xf64>
}

// CHECK-LABEL: func.func @subtract_zero
// CHECK-NEXT:    func.return %x
func.func @subtract_zero(%x: tensor<4xf64>) -> tensor<4xf64> {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %a = "stablehlo.subtract"(%x, %z) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// CHECK-LABEL: func.func @zero_subtract
// CHECK-NEXT:    %[[N:.*]] = "stablehlo.negate"(%x)
// CHECK-NEXT:    func.return %[[N]]
func.func @zero_subtract(%x: tensor<4xf64>) -> tensor<4xf64> {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %a = "stablehlo.subtract"(%z, %x) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// CHECK-LABEL: func.func @subtract_self
// CHECK-NEXT:    %[[Z:.*]] = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<4xf64>}>
// CHECK-NEXT:    func.return %[[Z]]
func.func @subtract_self(%x: tensor<4xf64>) -> tensor<4xf64> {
  %a = "stablehlo.subtract"(%x, %x) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// CHECK-LABEL: func.func @subtract_negate
// CHECK-NEXT:    %[[A:.*]] = "stablehlo.add"(%x, %y)
// CHECK-NEXT:    func.return %[[A]]
func.func @subtract_negate(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %n = "stablehlo.negate"(%y) : (tensor<4xf64>) -> tensor<4xf64>
  %a = "stablehlo.subtract"(%x, %n) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// CHECK-LABEL: func.func @multiply_one
// CHECK-NEXT:    func.return %x, %x
func.func @multiply_one(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %one = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %a = "stablehlo.multiply"(%x, %one) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %b = "stablehlo.multiply"(%one, %x) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a, %b : tensor<4xf64>, tensor<4xf64>
}

// CHECK-LABEL: func.func @multiply_zero
// x * 0 folds only for an x known to be finite (here converted from integers): an
// argument may be infinite or NaN, and its product with 0 is then NaN (session 24)
// CHECK-NEXT:    %[[Z:.*]] = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<4xf64>}>
// CHECK-NEXT:    %[[K:.*]] = "stablehlo.multiply"(%[[Z]], %x)
// CHECK-NEXT:    func.return %[[Z]], %[[K]]
func.func @multiply_zero(%x: tensor<4xf64>, %i: tensor<4xi64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %f = "stablehlo.convert"(%i) : (tensor<4xi64>) -> tensor<4xf64>
  %a = "stablehlo.multiply"(%z, %f) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %b = "stablehlo.multiply"(%z, %x) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a, %b : tensor<4xf64>, tensor<4xf64>
}

// CHECK-LABEL: func.func @multiply_minus_one
// CHECK-NEXT:    %[[N:.*]] = "stablehlo.negate"(%x)
// CHECK-NEXT:    func.return %[[N]]
func.func @multiply_minus_one(%x: tensor<4xf64>) -> tensor<4xf64> {
  %m = "stablehlo.constant"() <{value = dense<-1.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %a = "stablehlo.multiply"(%m, %x) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// CHECK-LABEL: func.func @multiply_negates
// CHECK-NEXT:    %[[M:.*]] = "stablehlo.multiply"(%x, %y)
// CHECK-NEXT:    func.return %[[M]]
func.func @multiply_negates(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = "stablehlo.negate"(%x) : (tensor<4xf64>) -> tensor<4xf64>
  %b = "stablehlo.negate"(%y) : (tensor<4xf64>) -> tensor<4xf64>
  %c = "stablehlo.multiply"(%a, %b) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// CHECK-LABEL: func.func @divide_one
// CHECK-NEXT:    func.return %x
func.func @divide_one(%x: tensor<4xf64>) -> tensor<4xf64> {
  %one = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %a = "stablehlo.divide"(%x, %one) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// CHECK-LABEL: func.func @divide_minus_one
// CHECK-NEXT:    %[[N:.*]] = "stablehlo.negate"(%x)
// CHECK-NEXT:    func.return %[[N]]
func.func @divide_minus_one(%x: tensor<4xf64>) -> tensor<4xf64> {
  %m = "stablehlo.constant"() <{value = dense<-1.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %a = "stablehlo.divide"(%x, %m) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// CHECK-LABEL: func.func @power_one
// CHECK-NEXT:    func.return %x
func.func @power_one(%x: tensor<4xf64>) -> tensor<4xf64> {
  %one = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %a = "stablehlo.power"(%x, %one) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// CHECK-LABEL: func.func @negate_negate
// CHECK-NEXT:    func.return %x
func.func @negate_negate(%x: tensor<4xf64>) -> tensor<4xf64> {
  %a = "stablehlo.negate"(%x) : (tensor<4xf64>) -> tensor<4xf64>
  %b = "stablehlo.negate"(%a) : (tensor<4xf64>) -> tensor<4xf64>
  func.return %b : tensor<4xf64>
}

// CHECK-LABEL: func.func @negate_subtract
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.subtract"(%y, %x)
// CHECK-NEXT:    func.return %[[S]]
func.func @negate_subtract(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = "stablehlo.subtract"(%x, %y) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %b = "stablehlo.negate"(%a) : (tensor<4xf64>) -> tensor<4xf64>
  func.return %b : tensor<4xf64>
}

// CHECK-LABEL: func.func @abs_abs
// CHECK-NEXT:    %[[A:.*]] = "stablehlo.abs"(%x)
// CHECK-NEXT:    func.return %[[A]]
func.func @abs_abs(%x: tensor<4xf64>) -> tensor<4xf64> {
  %a = "stablehlo.abs"(%x) : (tensor<4xf64>) -> tensor<4xf64>
  %b = "stablehlo.abs"(%a) : (tensor<4xf64>) -> tensor<4xf64>
  func.return %b : tensor<4xf64>
}

// CHECK-LABEL: func.func @abs_negate
// CHECK-NEXT:    %[[A:.*]] = "stablehlo.abs"(%x)
// CHECK-NEXT:    func.return %[[A]]
func.func @abs_negate(%x: tensor<4xf64>) -> tensor<4xf64> {
  %a = "stablehlo.negate"(%x) : (tensor<4xf64>) -> tensor<4xf64>
  %b = "stablehlo.abs"(%a) : (tensor<4xf64>) -> tensor<4xf64>
  func.return %b : tensor<4xf64>
}

// CHECK-LABEL: func.func @maximum_self
// CHECK-NEXT:    func.return %x
func.func @maximum_self(%x: tensor<4xf64>) -> tensor<4xf64> {
  %a = "stablehlo.maximum"(%x, %x) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// CHECK-LABEL: func.func @minimum_self
// CHECK-NEXT:    func.return %x
func.func @minimum_self(%x: tensor<4xf64>) -> tensor<4xf64> {
  %a = "stablehlo.minimum"(%x, %x) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// Splat folding; the value returned with x keeps the function's inputs in use.
// CHECK-LABEL: func.func @fold_add_splats
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<3.500000e+00> : tensor<4xf64>}>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @fold_add_splats(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %a = "stablehlo.constant"() <{value = dense<1.250000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %b = "stablehlo.constant"() <{value = dense<2.250000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %c = "stablehlo.add"(%a, %b) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %x, %c : tensor<4xf64>, tensor<4xf64>
}

// CHECK-LABEL: func.func @fold_subtract_splats
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<-1.000000e+00> : tensor<4xf32>}>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @fold_subtract_splats(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = "stablehlo.constant"() <{value = dense<1.250000e+00> : tensor<4xf32>}> : () -> tensor<4xf32>
  %b = "stablehlo.constant"() <{value = dense<2.250000e+00> : tensor<4xf32>}> : () -> tensor<4xf32>
  %c = "stablehlo.subtract"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %x, %c : tensor<4xf32>, tensor<4xf32>
}

// 0.1f * 3.0f: the product of the f32 values, rounded once to f32 (printed to 7 digits)
// CHECK-LABEL: func.func @fold_multiply_splats
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<3.000000e-01> : tensor<4xf32>}>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @fold_multiply_splats(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = "stablehlo.constant"() <{value = dense<1.000000e-01> : tensor<4xf32>}> : () -> tensor<4xf32>
  %b = "stablehlo.constant"() <{value = dense<3.000000e+00> : tensor<4xf32>}> : () -> tensor<4xf32>
  %c = "stablehlo.multiply"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %x, %c : tensor<4xf32>, tensor<4xf32>
}

// division by a zero splat is left to XLA
// CHECK-LABEL: func.func @fold_divide_splats
// CHECK-NEXT:    %[[Z:.*]] = "stablehlo.constant"() <{value = dense<0.000000e+00>
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<2.500000e-01> : tensor<4xf64>}>
// CHECK-NEXT:    %[[D:.*]] = "stablehlo.divide"(%[[C]], %[[Z]])
// CHECK-NEXT:    func.return %x, %[[C]], %[[D]]
func.func @fold_divide_splats(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>) {
  %a = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %b = "stablehlo.constant"() <{value = dense<4.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %c = "stablehlo.divide"(%a, %b) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %d = "stablehlo.divide"(%c, %z) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %x, %c, %d : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>
}

// CHECK-LABEL: func.func @fold_maximum_splats
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<4xf64>}>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @fold_maximum_splats(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %a = "stablehlo.constant"() <{value = dense<-1.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %b = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %c = "stablehlo.maximum"(%a, %b) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %x, %c : tensor<4xf64>, tensor<4xf64>
}

// CHECK-LABEL: func.func @fold_minimum_splats
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<-1.000000e+00> : tensor<4xf64>}>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @fold_minimum_splats(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %a = "stablehlo.constant"() <{value = dense<-1.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %b = "stablehlo.constant"() <{value = dense<2.000000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %c = "stablehlo.minimum"(%a, %b) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %x, %c : tensor<4xf64>, tensor<4xf64>
}

// CHECK-LABEL: func.func @fold_negate_splat
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<-1.500000e+00> : tensor<4xf64>}>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @fold_negate_splat(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %a = "stablehlo.constant"() <{value = dense<1.500000e+00> : tensor<4xf64>}> : () -> tensor<4xf64>
  %c = "stablehlo.negate"(%a) : (tensor<4xf64>) -> tensor<4xf64>
  func.return %x, %c : tensor<4xf64>, tensor<4xf64>
}

// CHECK-LABEL: func.func @fold_convert_splat
// CHECK-NEXT:    %[[C:.*]] = "stablehlo.constant"() <{value = dense<1.000000e-01> : tensor<4xf32>}>
// CHECK-NEXT:    func.return %x, %[[C]]
func.func @fold_convert_splat(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf32>) {
  %a = "stablehlo.constant"() <{value = dense<1.000000e-01> : tensor<4xf64>}> : () -> tensor<4xf64>
  %c = "stablehlo.convert"(%a) : (tensor<4xf64>) -> tensor<4xf32>
  func.return %x, %c : tensor<4xf64>, tensor<4xf32>
}

// CHECK-LABEL: func.func @select_same
// CHECK-NEXT:    func.return %x
func.func @select_same(%x: tensor<4xf64>, %p: tensor<4xi1>) -> tensor<4xf64> {
  %a = "stablehlo.select"(%p, %x, %x) : (tensor<4xi1>, tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// CHECK-LABEL: func.func @select_constant_predicate
// CHECK-NEXT:    func.return %x, %y
func.func @select_constant_predicate(%x: tensor<4xf64>, %y: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %t = "stablehlo.constant"() <{value = dense<true> : tensor<i1>}> : () -> tensor<i1>
  %f = "stablehlo.constant"() <{value = dense<false> : tensor<4xi1>}> : () -> tensor<4xi1>
  %a = "stablehlo.select"(%t, %x, %y) : (tensor<i1>, tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %b = "stablehlo.select"(%f, %x, %y) : (tensor<4xi1>, tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a, %b : tensor<4xf64>, tensor<4xf64>
}

// CHECK-LABEL: func.func @select_not
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.select"(%p, %y, %x)
// CHECK-NEXT:    func.return %[[S]]
func.func @select_not(%x: tensor<4xf64>, %y: tensor<4xf64>, %p: tensor<4xi1>) -> tensor<4xf64> {
  %n = "stablehlo.not"(%p) : (tensor<4xi1>) -> tensor<4xi1>
  %a = "stablehlo.select"(%n, %x, %y) : (tensor<4xi1>, tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// CHECK-LABEL: func.func @select_nested
// CHECK-NEXT:    %[[S:.*]] = "stablehlo.select"(%p, %x, %z)
// CHECK-NEXT:    func.return %[[S]], %[[S]]
func.func @select_nested(%x: tensor<4xf64>, %y: tensor<4xf64>, %z: tensor<4xf64>, %p: tensor<4xi1>) -> (tensor<4xf64>, tensor<4xf64>) {
  %i = "stablehlo.select"(%p, %x, %y) : (tensor<4xi1>, tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %a = "stablehlo.select"(%p, %i, %z) : (tensor<4xi1>, tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %j = "stablehlo.select"(%p, %y, %z) : (tensor<4xi1>, tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  %b = "stablehlo.select"(%p, %x, %j) : (tensor<4xi1>, tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  func.return %a, %b : tensor<4xf64>, tensor<4xf64>
}

// CHECK-LABEL: func.func @not_not
// CHECK-NEXT:    func.return %p
func.func @not_not(%p: tensor<4xi1>) -> tensor<4xi1> {
  %a = "stablehlo.not"(%p) : (tensor<4xi1>) -> tensor<4xi1>
  %b = "stablehlo.not"(%a) : (tensor<4xi1>) -> tensor<4xi1>
  func.return %b : tensor<4xi1>
}

// CHECK-LABEL: func.func @and_self
// CHECK-NEXT:    func.return %p
func.func @and_self(%p: tensor<4xi1>) -> tensor<4xi1> {
  %a = "stablehlo.and"(%p, %p) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return %a : tensor<4xi1>
}

// CHECK-LABEL: func.func @or_self
// CHECK-NEXT:    func.return %p
func.func @or_self(%p: tensor<4xi1>) -> tensor<4xi1> {
  %a = "stablehlo.or"(%p, %p) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return %a : tensor<4xi1>
}

// CHECK-LABEL: func.func @convert_same
// CHECK-NEXT:    func.return %x
func.func @convert_same(%x: tensor<4xf64>) -> tensor<4xf64> {
  %a = "stablehlo.convert"(%x) : (tensor<4xf64>) -> tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// narrowing then widening rounds: that one stays
// CHECK-LABEL: func.func @convert_round_trip
// CHECK-NEXT:    %[[N:.*]] = "stablehlo.convert"(%y) : (tensor<4xf64>) -> tensor<4xf32>
// CHECK-NEXT:    %[[W:.*]] = "stablehlo.convert"(%[[N]]) : (tensor<4xf32>) -> tensor<4xf64>
// CHECK-NEXT:    func.return %x, %[[W]]
func.func @convert_round_trip(%x: tensor<4xf32>, %y: tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf64>) {
  %up = "stablehlo.convert"(%x) : (tensor<4xf32>) -> tensor<4xf64>
  %down = "stablehlo.convert"(%up) : (tensor<4xf64>) -> tensor<4xf32>
  %n = "stablehlo.convert"(%y) : (tensor<4xf64>) -> tensor<4xf32>
  %w = "stablehlo.convert"(%n) : (tensor<4xf32>) -> tensor<4xf64>
  func.return %down, %w : tensor<4xf32>, tensor<4xf64>
}

// CHECK-LABEL: func.func @convert_after_widening
// CHECK-NEXT:    %[[H:.*]] = "stablehlo.convert"(%x) : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NEXT:    func.return %[[H]]
func.func @convert_after_widening(%x: tensor<4xf32>) -> tensor<4xf16> {
  %up = "stablehlo.convert"(%x) : (tensor<4xf32>) -> tensor<4xf64>
  %h = "stablehlo.convert"(%up) : (tensor<4xf64>) -> tensor<4xf16>
  func.return %h : tensor<4xf16>
}
