// RUN: zymase-opt %s -p enzyme | filecheck %s

func.func @square(%x: f64) -> f64 {
  %y = arith.mulf %x, %x : f64
  func.return %y : f64
}
func.func @dsquare(%x: f64, %seed: f64) -> f64 {
  %d = enzyme.autodiff @square(%x, %seed) {activity = [#enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64) -> f64
  func.return %d : f64
}

// The request becomes a call to the generated derivative.
// CHECK-LABEL: func.func @dsquare(
// CHECK-NOT:     enzyme.autodiff
// CHECK:         %[[D:.*]] = func.call @diffesquare(%{{.*}}, %{{.*}}) : (f64, f64) -> f64
// CHECK:         func.return %[[D]] : f64

// Reverse sweep: the seed times each factor, accumulated into the argument's adjoint.
// CHECK-LABEL: func.func private @diffesquare(%{{.*}}: f64, %[[SEED:.*]]: f64) -> f64
// CHECK:         enzyme.init : !enzyme.Gradient<f64>
// CHECK:         arith.mulf
// CHECK:         arith.mulf %[[DY:.*]], %[[X:.*]] : f64
// CHECK:         arith.mulf %[[X]], %[[DY]] : f64
// CHECK:         func.return
