// RUN: zymase-opt %s -p enzyme | filecheck %s

// A derivative carries the fast-math flags of the op it differentiates that are about order
// and contraction: reassoc comes with nsz (LLVM reassociates only ops that have both), and
// fast gives reassoc,nsz,contract (not nnan or ninf: a derivative may be infinite where the
// primal is not); an op without flags gives plain arithmetic.
func.func @f(%x: f64, %y: f64) -> f64 {
  %p = arith.mulf %x, %y fastmath<reassoc> : f64
  %q = arith.mulf %p, %x : f64
  %r = arith.subf %q, %y fastmath<fast> : f64
  func.return %r : f64
}
func.func @df(%x: f64, %y: f64, %seed: f64) -> (f64, f64) {
  %d:2 = enzyme.autodiff @f(%x, %y, %seed) {activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64, f64) -> (f64, f64)
  func.return %d#0, %d#1 : f64, f64
}
func.func @tf(%x: f64, %tx: f64, %y: f64, %ty: f64) -> f64 {
  %t = enzyme.fwddiff @f(%x, %tx, %y, %ty) {activity = [#enzyme<activity enzyme_dup>, #enzyme<activity enzyme_dup>], ret_activity = [#enzyme<activity enzyme_dupnoneed>]} : (f64, f64, f64, f64) -> f64
  func.return %t : f64
}

// Reverse: the fast subtraction's adjoint is a reassoc,nsz,contract negation; the plain product's adjoints
// are plain; the reassoc product's are reassoc,nsz.
// CHECK-LABEL: func.func private @diffef(
// CHECK:         arith.negf %{{.*}} fastmath<reassoc,nsz,contract> : f64
// CHECK:         %[[DP:.*]] = arith.mulf %{{[0-9]+}}, %{{[0-9]+}} : f64
// CHECK:         arith.mulf %p, %{{[0-9]+}} : f64
// CHECK:         arith.mulf %[[DP]], %{{[0-9]+}} fastmath<reassoc,nsz> : f64
// CHECK:         arith.mulf %{{[0-9]+}}, %[[DP]] fastmath<reassoc,nsz> : f64
// CHECK:         func.return

// Forward: the tangent terms and their sum carry the op's flags.
// CHECK-LABEL: func.func private @fwddiffef(
// CHECK:         arith.mulf %{{[0-9]+}}, %{{[0-9]+}} fastmath<reassoc,nsz> : f64
// CHECK:         arith.mulf %{{[0-9]+}}, %{{[0-9]+}} fastmath<reassoc,nsz> : f64
// CHECK:         arith.addf %{{[0-9]+}}, %{{[0-9]+}} fastmath<reassoc,nsz> : f64
// CHECK:         arith.mulf %{{[0-9]+}}, %{{[0-9]+}} : f64
// CHECK:         arith.mulf %p, %{{[0-9]+}} : f64
// CHECK:         arith.addf %{{[0-9]+}}, %{{[0-9]+}} : f64
// CHECK:         arith.negf %{{[0-9]+}} fastmath<reassoc,nsz,contract> : f64
// CHECK:         arith.addf %{{[0-9]+}}, %{{[0-9]+}} fastmath<reassoc,nsz,contract> : f64
