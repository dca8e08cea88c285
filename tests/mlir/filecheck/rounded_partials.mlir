// RUN: zymase-opt %s -p enzyme | filecheck %s

// A partial that is a rounded sum (an arith sum without reassoc) is read behind the LLVM
// dialect's llvm.arithmetic.fence where its adjoint may fold: the accumulations carry
// fastmath<reassoc,nsz>, which the lowering to LLVM keeps, and LLVM would reassociate
// through the weight x - y into (x - y) + y = x (autodiff/rounded_partials). A product is
// never fenced, nor a sum the program let reassociate.
func.func @weight(%w: f64, %x: f64, %y: f64) -> f64 {
  %d = arith.subf %x, %y : f64
  %e = arith.addf %x, %y fastmath<reassoc,nsz> : f64
  %p = arith.mulf %x, %y : f64
  %a = arith.mulf %w, %d : f64
  %b = arith.mulf %w, %e : f64
  %c = arith.mulf %w, %p : f64
  %ab = arith.addf %a, %b : f64
  %s = arith.addf %ab, %c : f64
  func.return %s : f64
}
func.func @rev(%w: f64, %x: f64, %y: f64) -> f64 {
  %one = arith.constant 1.0 : f64
  %r = enzyme.autodiff @weight(%w, %x, %y, %one) {activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_const>, #enzyme<activity enzyme_const>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64, f64, f64) -> f64
  func.return %r : f64
}

// CHECK-LABEL: func.func private @diffeweight(
// CHECK-NOT:     llvm.call_intrinsic "llvm.arithmetic.fence.f64"(%p)
// CHECK-NOT:     llvm.call_intrinsic "llvm.arithmetic.fence.f64"(%e)
// CHECK:         %[[F:.*]] = llvm.call_intrinsic "llvm.arithmetic.fence.f64"(%d) : (f64) -> f64
// CHECK:         arith.mulf %{{.*}}, %[[F]] : f64
// CHECK-NOT:     llvm.arithmetic.fence
// CHECK:         func.return
