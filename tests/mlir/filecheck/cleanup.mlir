// RUN: zymase-opt %s -p enzyme,canonicalize,remove-unnecessary-enzyme-ops,canonicalize,cse | filecheck %s

func.func @square(%x: f64) -> f64 {
  %y = arith.mulf %x, %x : f64
  func.return %y : f64
}
func.func @dsquare(%x: f64, %seed: f64) -> f64 {
  %d = enzyme.autodiff @square(%x, %seed) {activity = [#enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64) -> f64
  func.return %d : f64
}

// Straight-line reverse code needs no accumulator at all: 2 * x * seed, in SSA.
// CHECK:       func.func private @diffesquare(%[[X:.*]]: f64, %[[S:.*]]: f64) -> f64 {
// CHECK-NEXT:    %[[A:.*]] = arith.mulf %[[S]], %[[X]] : f64
// CHECK-NEXT:    %[[B:.*]] = arith.mulf %[[X]], %[[S]] : f64
// CHECK-NEXT:    %[[C:.*]] = arith.addf %[[A]], %[[B]] fastmath<reassoc,nsz> : f64
// CHECK-NEXT:    func.return %[[C]] : f64
// CHECK-NEXT:  }
