// RUN: zymase-opt %s -p enzyme | filecheck %s

// Issue 28 item 5, complex: complex values become (re, im) pairs of floats before
// AD (transforms/lower_complex.py), so a complex argument is two float arguments
// and its gradient the pair (dL/dre, dL/dim) -- Enzyme-MLIR's convention at the
// boundary of a derivative (its csquare test: d(x*x) with seed dr is 2 dr conj(x)).
func.func @square(%x: complex<f64>) -> complex<f64> {
  %next = complex.mul %x, %x : complex<f64>
  return %next : complex<f64>
}
func.func @dsquare(%x: complex<f64>, %dr: complex<f64>) -> complex<f64> {
  %r = enzyme.autodiff @square(%x, %dr) {activity = [#enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (complex<f64>, complex<f64>) -> complex<f64>
  return %r : complex<f64>
}

// CHECK-LABEL: func.func @square(
// CHECK-SAME:      %[[A:.*]]: f64, %[[B:.*]]: f64) -> (f64, f64)
// CHECK:         %[[AA:.*]] = arith.mulf %[[A]], %[[A]] : f64
// CHECK-NEXT:    %[[BB:.*]] = arith.mulf %[[B]], %[[B]] : f64
// CHECK-NEXT:    %[[RE:.*]] = arith.subf %[[AA]], %[[BB]] : f64
// CHECK-NEXT:    %[[AB:.*]] = arith.mulf %[[A]], %[[B]] : f64
// CHECK-NEXT:    %[[BA:.*]] = arith.mulf %[[B]], %[[A]] : f64
// CHECK-NEXT:    %[[IM:.*]] = arith.addf %[[AB]], %[[BA]] : f64
// CHECK-NEXT:    func.return %[[RE]], %[[IM]] : f64, f64
// CHECK-LABEL: func.func @dsquare(
// CHECK-SAME:      %[[XR:.*]]: f64, %[[XI:.*]]: f64, %[[SR:.*]]: f64, %[[SI:.*]]: f64) -> (f64, f64)
// CHECK-NEXT:    %[[D0:.*]], %[[D1:.*]] = func.call @diffesquare(%[[XR]], %[[XI]], %[[SR]], %[[SI]]) : (f64, f64, f64, f64) -> (f64, f64)
// CHECK-NEXT:    func.return %[[D0]], %[[D1]] : f64, f64
// CHECK-LABEL: func.func private @diffesquare(
// CHECK-SAME:      %{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64, %{{.*}}: f64) -> (f64, f64)
