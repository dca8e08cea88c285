// RUN: zymase-opt %s -p print-activity-analysis 2>&1 >/dev/null | filecheck %s

// print-activity-analysis on structured control flow, analysed as the enzyme
// pass sees it (no lowering to branches first): the values of each region come
// after the op's results, under a header naming the region, with the block
// arguments (induction variable, iter_args, scf.while arguments) and the results
// of region ops.
func.func @f(%x: f64, %y: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %ten = arith.constant 10.0 : f64
  %r:3 = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x, %k = %y, %u = %z) -> (f64, f64, f64) {
    %m = arith.mulf %a, %x : f64
    %kk = arith.mulf %k, %y : f64
    %uu = arith.addf %u, %m : f64
    scf.yield %m, %kk, %uu : f64, f64, f64
  }
  %pos = arith.cmpf ogt, %r#0, %z : f64
  %b:2 = scf.if %pos -> (f64, f64) {
    %s = math.sin %r#0 : f64
    scf.yield %s, %y : f64, f64
  } else {
    scf.yield %r#0, %r#1 : f64, f64
  }
  %w = scf.while (%p = %b#0) : (f64) -> f64 {
    %more = arith.cmpf olt, %p, %ten : f64
    scf.condition(%more) %p : f64
  } do {
  ^bb0(%q: f64):
    %e = math.exp %q : f64
    scf.yield %e : f64
  }
  %o = arith.mulf %w, %b#1 : f64
  func.return %o : f64
}
func.func @d(%x: f64, %y: f64, %n: index) -> f64 {
  %one = arith.constant 1.0 : f64
  %r = enzyme.autodiff @f(%x, %y, %n, %one) {activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_const>, #enzyme<activity enzyme_const>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64, index, f64) -> f64
  func.return %r : f64
}

// %x is active and %y const: the first iter_arg is active, the second (fed by %y
// only) const, the third (varied, but never reaching the result) const; the
// scf.if's first result is active, its second only carries %y and y*y (const).
// CHECK:      @f (reverse mode; arguments: active, const, const; result: activenoneed)
// CHECK-NOT:  cf.
// CHECK:        %x           active  block argument
// CHECK-NEXT:   %y           const   block argument
// CHECK-NEXT:   %n           const   block argument
// CHECK:        %r#0         active  scf.for result
// CHECK-NEXT:   %r#1         const   scf.for result
// CHECK-NEXT:   %r#2         const   scf.for result
// CHECK-NEXT:     scf.for body:
// CHECK-NEXT:       %i           const   induction variable
// CHECK-NEXT:       %a           active  iter_arg
// CHECK-NEXT:       %k           const   iter_arg
// CHECK-NEXT:       %u           const   iter_arg
// CHECK-NEXT:       %m           active  arith.mulf
// CHECK-NEXT:       %kk          const   arith.mulf
// CHECK-NEXT:       %uu          const   arith.addf
// CHECK-NEXT:   %pos         const   arith.cmpf
// CHECK-NEXT:   %b#0         active  scf.if result
// CHECK-NEXT:   %b#1         const   scf.if result
// CHECK-NEXT:     scf.if then:
// CHECK-NEXT:       %s           active  math.sin
// CHECK-NEXT:     scf.if else:
// CHECK-NEXT:   %w           active  scf.while result
// CHECK-NEXT:     scf.while before:
// CHECK-NEXT:       %p           active  before argument
// CHECK-NEXT:       %more        const   arith.cmpf
// CHECK-NEXT:     scf.while after:
// CHECK-NEXT:       %q           active  after argument
// CHECK-NEXT:       %e           active  math.exp
// CHECK-NEXT:   %o           active  arith.mulf
