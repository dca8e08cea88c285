// RUN: zymase-opt %s | filecheck %s
// RUN: zymase-opt %s -p enzyme | filecheck %s --check-prefix=AD

// Issue 28 (jaxrules item 3): Enzyme-MLIR's newer spellings of a request's options,
// as its tests write them (a property dictionary <{...}> after the operands, also
// after a region request's body) and as its printer writes them now
// (<activity = [...], ret_activity = [...]>), beside the older attribute dictionary.
// zymase reads all three and prints the attribute dictionary (Enzyme-MLIR reads
// it too); the enzyme pass turns each request into a call of its derivative.
func.func @square(%x: f64) -> f64 {
  %y = arith.mulf %x, %x : f64
  return %y : f64
}
func.func @props(%x: f64, %dr: f64) -> f64 {
  %r = enzyme.autodiff @square(%x, %dr) <{ activity=[#enzyme.activity<enzyme_active>], ret_activity=[#enzyme.activity<enzyme_activenoneed>] }> : (f64, f64) -> f64
  return %r : f64
}
func.func @angle(%x: f64, %dx: f64) -> f64 {
  %r = enzyme.fwddiff @square(%x, %dx) <activity = [#enzyme.activity<enzyme_dup>], ret_activity = [#enzyme.activity<enzyme_dupnoneed>]> : (f64, f64) -> f64
  return %r : f64
}
func.func @width(%x: f64, %d0: f64, %d1: f64) -> (f64, f64) {
  %r:2 = enzyme.fwddiff @square(%x, %d0, %d1) <{ activity=[#enzyme.activity<enzyme_dup>], ret_activity=[#enzyme.activity<enzyme_dupnoneed>], width=2 }> : (f64, f64, f64) -> (f64, f64)
  return %r#0, %r#1 : f64, f64
}
func.func @region(%x: f64, %seed: f64) -> f64 {
  %d = enzyme.autodiff_region(%x, %seed) {
  ^bb0(%y: f64):
    %p = arith.mulf %y, %x : f64
    enzyme.yield %p : f64
  } <{activity = [#enzyme.activity<enzyme_active>], ret_activity = [#enzyme.activity<enzyme_activenoneed>]}> : (f64, f64) -> f64
  return %d : f64
}

// CHECK-LABEL: func.func @props
// CHECK:       enzyme.autodiff @square(%x, %dr) {activity = [#enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64) -> f64
// CHECK-LABEL: func.func @angle
// CHECK:       enzyme.fwddiff @square(%x, %dx) {activity = [#enzyme<activity enzyme_dup>], ret_activity = [#enzyme<activity enzyme_dupnoneed>]} : (f64, f64) -> f64
// CHECK-LABEL: func.func @width
// CHECK:       enzyme.fwddiff @square(%x, %d0, %d1) {activity = [#enzyme<activity enzyme_dup>], ret_activity = [#enzyme<activity enzyme_dupnoneed>], width = 2 : i64} : (f64, f64, f64) -> (f64, f64)
// CHECK-LABEL: func.func @region
// CHECK:       enzyme.autodiff_region(%x, %seed) {
// CHECK:       } attributes {activity = [#enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64) -> f64

// AD-LABEL: func.func @props
// AD:       func.call @diffesquare(%x, %dr) : (f64, f64) -> f64
// AD-LABEL: func.func @angle
// AD:       func.call @fwddiffesquare(%x, %dx) : (f64, f64) -> f64
// AD-LABEL: func.func @width
// AD:       func.call @fwddiffe2square(%x, %d0, %d1) : (f64, f64, f64) -> (f64, f64)
// AD-LABEL: func.func @region
// AD:       func.call @differegion_region0(%x, %x, %seed) : (f64, f64, f64) -> f64
// AD-NOT:   enzyme.autodiff
// AD-NOT:   enzyme.fwddiff
