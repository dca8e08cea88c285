// RUN: zymase-opt %s -p enzyme-activity-opt | filecheck %s

#active = #enzyme<activity enzyme_active>
#dup = #enzyme<activity enzyme_dup>

func.func @square(%x: f32, %y: f32) -> (f32, f32) {
  %a = arith.mulf %x, %x : f32
  %b = arith.mulf %y, %y : f32
  func.return %a, %b : f32, f32
}

// Primal o1 unused -> activenoneed; dy unused -> y const; seed do2 only reaches
// dy -> result 2 const (its primal o2 is still returned).
// CHECK-LABEL: func.func @unused(
// CHECK-NEXT:    %o2, %dx = enzyme.autodiff @square(%x, %y, %do1) {activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_const>], ret_activity = [#enzyme<activity enzyme_activenoneed>, #enzyme<activity enzyme_const>]} : (f32, f32, f32) -> (f32, f32)
// CHECK-NEXT:    func.return %o2, %dx : f32, f32
func.func @unused(%x: f32, %y: f32, %do1: f32, %do2: f32) -> (f32, f32) {
  %o1, %o2, %dx, %dy = enzyme.autodiff @square(%x, %y, %do1, %do2) {activity = [#active, #active], ret_activity = [#active, #active]} : (f32, f32, f32, f32) -> (f32, f32, f32, f32)
  func.return %o2, %dx : f32, f32
}

// Nothing of the primal is used and one derivative is dropped: both results lose
// their primal; no result becomes const while its seed still reaches dx.
// CHECK-LABEL: func.func @noneed(
// CHECK-NEXT:    %dx = enzyme.autodiff @square(%x, %y, %do1) {activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_const>], ret_activity = [#enzyme<activity enzyme_activenoneed>, #enzyme<activity enzyme_constnoneed>]} : (f32, f32, f32) -> f32
// CHECK-NEXT:    func.return %dx : f32
func.func @noneed(%x: f32, %y: f32, %do1: f32, %do2: f32) -> f32 {
  %o1, %o2, %dx, %dy = enzyme.autodiff @square(%x, %y, %do1, %do2) {activity = [#active, #active], ret_activity = [#active, #active]} : (f32, f32, f32, f32) -> (f32, f32, f32, f32)
  func.return %dx : f32
}

func.func @pair(%x: f64, %y: f64) -> (f64, f64) {
  %a = arith.mulf %x, %y : f64
  %b = arith.mulf %y, %y : f64
  func.return %a, %b : f64, f64
}

// A zero seed makes result 1 const; then no active result depends on x, so dx is
// the constant 0 and x becomes const.
// CHECK-LABEL: func.func @zero_seed(
// CHECK:         %dx = arith.constant 0.000000e+00 : f64
// CHECK-NEXT:    %o1, %o2, %dy = enzyme.autodiff @pair(%x, %y, %s) {activity = [#enzyme<activity enzyme_const>, #enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_const>, #enzyme<activity enzyme_active>]} : (f64, f64, f64) -> (f64, f64, f64)
// CHECK-NEXT:    func.return %o1, %o2, %dx, %dy : f64, f64, f64, f64
func.func @zero_seed(%x: f64, %y: f64, %s: f64) -> (f64, f64, f64, f64) {
  %zero = arith.constant 0.0 : f64
  %o1, %o2, %dx, %dy = enzyme.autodiff @pair(%x, %y, %zero, %s) {activity = [#active, #active], ret_activity = [#active, #active]} : (f64, f64, f64, f64) -> (f64, f64, f64, f64)
  func.return %o1, %o2, %dx, %dy : f64, f64, f64, f64
}

// Already minimal: left alone.
// CHECK-LABEL: func.func @minimal(
// CHECK-NEXT:    %dx, %dy = enzyme.autodiff @pair(%x, %y, %s) {activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>, #enzyme<activity enzyme_constnoneed>]} : (f64, f64, f64) -> (f64, f64)
func.func @minimal(%x: f64, %y: f64, %s: f64) -> (f64, f64) {
  %dx, %dy = enzyme.autodiff @pair(%x, %y, %s) {activity = [#active, #active], ret_activity = [#enzyme<activity enzyme_activenoneed>, #enzyme<activity enzyme_constnoneed>]} : (f64, f64, f64) -> (f64, f64)
  func.return %dx, %dy : f64, f64
}

// Forward mode: r1's primal unused -> dupnoneed; r2's tangent unused -> const;
// y's tangent then reaches no tangent result -> y const (its tangent dropped).
// CHECK-LABEL: func.func @fwd_unused(
// CHECK-NEXT:    %t1, %p2 = enzyme.fwddiff @square(%x, %dx, %y) {activity = [#enzyme<activity enzyme_dup>, #enzyme<activity enzyme_const>], ret_activity = [#enzyme<activity enzyme_dupnoneed>, #enzyme<activity enzyme_const>]} : (f32, f32, f32) -> (f32, f32)
// CHECK-NEXT:    func.return %t1, %p2 : f32, f32
func.func @fwd_unused(%x: f32, %dx: f32, %y: f32, %dy: f32) -> (f32, f32) {
  %p1, %t1, %p2, %t2 = enzyme.fwddiff @square(%x, %dx, %y, %dy) {activity = [#dup, #dup], ret_activity = [#dup, #dup]} : (f32, f32, f32, f32) -> (f32, f32, f32, f32)
  func.return %t1, %p2 : f32, f32
}

// Forward mode: a zero tangent makes x const; r1's tangent then depends on no
// differentiated argument: it is the constant 0 and r1 becomes const.
// CHECK-LABEL: func.func @fwd_zero(
// CHECK:         %t1 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %p1, %p2, %t2 = enzyme.fwddiff @square(%x, %y, %dy) {activity = [#enzyme<activity enzyme_const>, #enzyme<activity enzyme_dup>], ret_activity = [#enzyme<activity enzyme_const>, #enzyme<activity enzyme_dup>]} : (f32, f32, f32) -> (f32, f32, f32)
// CHECK-NEXT:    func.return %p1, %t1, %p2, %t2 : f32, f32, f32, f32
func.func @fwd_zero(%x: f32, %y: f32, %dy: f32) -> (f32, f32, f32, f32) {
  %zero = arith.constant 0.0 : f32
  %p1, %t1, %p2, %t2 = enzyme.fwddiff @square(%x, %zero, %y, %dy) {activity = [#dup, #dup], ret_activity = [#dup, #dup]} : (f32, f32, f32, f32) -> (f32, f32, f32, f32)
  func.return %p1, %t1, %p2, %t2 : f32, f32, f32, f32
}

// Nothing used: every result loses its primal and tangent (constnoneed), every
// argument its tangent; the request itself stays (it has no results).
// CHECK-LABEL: func.func @fwd_nothing(
// CHECK-NEXT:    enzyme.fwddiff @square(%x, %y) {activity = [#enzyme<activity enzyme_const>, #enzyme<activity enzyme_const>], ret_activity = [#enzyme<activity enzyme_constnoneed>, #enzyme<activity enzyme_constnoneed>]} : (f32, f32) -> ()
func.func @fwd_nothing(%x: f32, %dx: f32, %y: f32, %dy: f32) {
  %p1, %t1, %p2, %t2 = enzyme.fwddiff @square(%x, %dx, %y, %dy) {activity = [#dup, #dup], ret_activity = [#dup, #dup]} : (f32, f32, f32, f32) -> (f32, f32, f32, f32)
  func.return
}
