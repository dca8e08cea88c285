// RUN: zymase-opt %s -p print-activity-analysis 2>&1 >/dev/null | filecheck %s

// y is constant: y*y and everything only it feeds stays inactive; the integer
// ops are never active; a value that never reaches the result is inactive too.
func.func @f(%x: f64, %y: f64, %n: i64) -> f64 {
  %yy = arith.mulf %y, %y : f64
  %xy = arith.mulf %x, %yy : f64
  %dead = math.exp %x : f64
  %m = arith.muli %n, %n : i64
  %mf = arith.sitofp %m : i64 to f64
  %r = arith.addf %xy, %mf : f64
  func.return %r : f64
}
func.func @d(%x: f64, %y: f64, %n: i64) -> f64 {
  %one = arith.constant 1.0 : f64
  %r = enzyme.autodiff @f(%x, %y, %n, %one) {activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_const>, #enzyme<activity enzyme_const>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64, i64, f64) -> f64
  func.return %r : f64
}

// CHECK:      @f (reverse mode; arguments: active, const, const; result: activenoneed)
// CHECK-NEXT:   %x  active  block argument
// CHECK-NEXT:   %y  const   block argument
// CHECK-NEXT:   %n  const   block argument
// CHECK-NEXT:   %yy const   arith.mulf
// CHECK-NEXT:   %xy active  arith.mulf
// CHECK-NEXT:   %dead const math.exp
// CHECK-NEXT:   %m  const   arith.muli
// CHECK-NEXT:   %mf const   arith.sitofp
// CHECK-NEXT:   %r  active  arith.addf
