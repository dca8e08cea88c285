// RUN: zymase-opt %s -p remove-unnecessary-enzyme-ops | filecheck %s

// remove-unnecessary-enzyme-ops turns !enzyme.Gradient cells into SSA values
// carried by the structured ops (transforms/promote_gradients.py). The inputs
// are written by hand to reach the shapes the generator does not emit today
// (scf.while, scf.if without else); test_promote_gradients.py runs the same
// functions with and without the pass and compares the results.

// scf.while: a cell set in both regions becomes an extra argument of both,
// passed on by scf.condition and scf.yield, and an extra result.
func.func @while_cell(%x: f64, %n: f64) -> f64 {
  %g = enzyme.init : !enzyme.Gradient<f64>
  enzyme.set %g, %x : !enzyme.Gradient<f64>, f64
  %one = arith.constant 1.0 : f64
  %r = scf.while (%a = %one) : (f64) -> f64 {
    %v = enzyme.get %g : !enzyme.Gradient<f64> -> f64
    %v2 = arith.mulf %v, %x : f64
    enzyme.set %g, %v2 : !enzyme.Gradient<f64>, f64
    %more = arith.cmpf olt, %a, %n : f64
    scf.condition(%more) %a : f64
  } do {
  ^bb0(%b: f64):
    %w = enzyme.get %g : !enzyme.Gradient<f64> -> f64
    %w2 = arith.addf %w, %b : f64
    enzyme.set %g, %w2 : !enzyme.Gradient<f64>, f64
    %b2 = arith.addf %b, %one : f64
    scf.yield %b2 : f64
  }
  %out = enzyme.get %g : !enzyme.Gradient<f64> -> f64
  %o = arith.addf %out, %r : f64
  func.return %o : f64
}
// CHECK-LABEL: func.func @while_cell(
// CHECK-SAME:      %[[X:.*]]: f64, %[[N:.*]]: f64)
// CHECK-NOT:     enzyme.
// CHECK:         %[[R:.*]], %[[G:.*]] = scf.while (%[[A:.*]] = %{{.*}}, %[[GB:.*]] = %[[X]]) : (f64, f64) -> (f64, f64) {
// CHECK-NEXT:      %[[V2:.*]] = arith.mulf %[[GB]], %[[X]] : f64
// CHECK:           scf.condition(%{{.*}}) %[[A]], %[[V2]] : f64, f64
// CHECK-NEXT:    } do {
// CHECK-NEXT:    ^{{.*}}(%[[B:.*]]: f64, %[[GA:.*]]: f64):
// CHECK-NEXT:      %[[W2:.*]] = arith.addf %[[GA]], %[[B]] : f64
// CHECK-NEXT:      %[[B2:.*]] = arith.addf %[[B]], %{{.*}} : f64
// CHECK-NEXT:      scf.yield %[[B2]], %[[W2]] : f64, f64
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[O:.*]] = arith.addf %[[G]], %[[R]] : f64
// CHECK-NEXT:    func.return %[[O]] : f64

// scf.if without else: the cell becomes a result; the added else yields the
// value from before the scf.if (zero: a constant next to where the init was).
// Inside the branch the cell still holds zero, so `0 + x` folds to `x`.
func.func @if_no_else(%x: f64, %c: i1) -> f64 {
  %g = enzyme.init : !enzyme.Gradient<f64>
  scf.if %c {
    %v = enzyme.get %g : !enzyme.Gradient<f64> -> f64
    %s = arith.addf %v, %x : f64
    enzyme.set %g, %s : !enzyme.Gradient<f64>, f64
  }
  %r = enzyme.get %g : !enzyme.Gradient<f64> -> f64
  func.return %r : f64
}
// CHECK-LABEL: func.func @if_no_else(
// CHECK-SAME:      %[[X:.*]]: f64, %[[C:.*]]: i1)
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK-NEXT:    %[[R:.*]] = scf.if %[[C]] -> (f64) {
// CHECK-NEXT:      scf.yield %[[X]] : f64
// CHECK-NEXT:    } else {
// CHECK-NEXT:      scf.yield %[[ZERO]] : f64
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[R]] : f64

// A loop that only reads a cell reads the value from outside: no iter_arg.
func.func @read_only(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %g = enzyme.init : !enzyme.Gradient<f64>
  enzyme.set %g, %x : !enzyme.Gradient<f64>, f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (f64) {
    %v = enzyme.get %g : !enzyme.Gradient<f64> -> f64
    %s = arith.mulf %a, %v : f64
    scf.yield %s : f64
  }
  func.return %r : f64
}
// CHECK-LABEL: func.func @read_only(
// CHECK-SAME:      %[[X:.*]]: f64, %[[N:.*]]: index)
// CHECK-NOT:     enzyme.
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[N]] step %{{.*}} iter_args(%[[A:.*]] = %[[X]]) -> (f64) {
// CHECK-NEXT:      %[[S:.*]] = arith.mulf %[[A]], %[[X]] : f64
// CHECK-NEXT:      scf.yield %[[S]] : f64

// A cell written in a loop, reset to zero at the end of each iteration: it is
// zero whenever an iteration starts, so it is not carried; the value taken in
// the iteration flows to the loop's own iter_arg.
func.func @reset(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %g = enzyme.init : !enzyme.Gradient<f64>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (f64) {
    %v = enzyme.get %g : !enzyme.Gradient<f64> -> f64
    %s = arith.addf %v, %a : f64
    enzyme.set %g, %s : !enzyme.Gradient<f64>, f64
    %w = enzyme.get %g : !enzyme.Gradient<f64> -> f64
    %w2 = arith.mulf %w, %x : f64
    enzyme.set %g, %z : !enzyme.Gradient<f64>, f64
    scf.yield %w2 : f64
  }
  func.return %r : f64
}
// CHECK-LABEL: func.func @reset(
// CHECK-SAME:      %[[X:.*]]: f64, %[[N:.*]]: index)
// CHECK-NOT:     enzyme.
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[N]] step %{{.*}} iter_args(%[[A:.*]] = %[[X]]) -> (f64) {
// CHECK-NEXT:      %[[W2:.*]] = arith.mulf %[[A]], %[[X]] : f64
// CHECK-NEXT:      scf.yield %[[W2]] : f64

// Cells used across cf branches are not promoted (the CFG generator's cells;
// the LLVM lowering keeps them in memory).
func.func @cfg(%x: f64, %c: i1) -> f64 {
  %g = enzyme.init : !enzyme.Gradient<f64>
  cf.cond_br %c, ^a, ^b
^a:
  enzyme.set %g, %x : !enzyme.Gradient<f64>, f64
  cf.br ^b
^b:
  %v = enzyme.get %g : !enzyme.Gradient<f64> -> f64
  func.return %v : f64
}
// CHECK-LABEL: func.func @cfg(
// CHECK:         %[[G:.*]] = enzyme.init : !enzyme.Gradient<f64>
// CHECK:         enzyme.set %[[G]], %{{.*}} : !enzyme.Gradient<f64>, f64
// CHECK:         %[[V:.*]] = enzyme.get %[[G]] : !enzyme.Gradient<f64> -> f64
// CHECK-NEXT:    func.return %[[V]] : f64
