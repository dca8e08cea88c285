// RUN: zymase-opt %s -p "enzyme-wrap{infn=main outfn= argTys=enzyme_active retTys=enzyme_active mode=ReverseModeCombined},canonicalize" | filecheck %s --check-prefix=REV
// RUN: zymase-opt %s -p "enzyme-wrap{infn=g outfn=dg argTys=enzyme_dup,enzyme_const retTys=enzyme_dup mode=ForwardMode}" | filecheck %s --check-prefix=FWD
// RUN: zymase-opt %s -p enzyme | filecheck %s --check-prefix=REGION

// Issue 28 item 5: the enzyme-wrap pass, a region request and
// enzyme.ignore_derivatives. With an empty outfn, @main becomes its own
// derivative (the primal is kept as @main_primal); im(create(0, t)) = t, so the
// gradient is the seed itself. A forward wrapper with enzyme_dup returns the
// primal and the tangent. The autodiff_region body is outlined into
// @h_region0 (the value %y it captures becomes a constant argument), and the
// product under enzyme.ignore_derivatives contributes nothing to the gradient.
func.func @main(%t: f32) -> f32 {
  %zero = arith.constant 0.0 : f32
  %z = complex.create %zero, %t : complex<f32>
  %o = complex.im %z : complex<f32>
  return %o : f32
}
func.func @g(%x: f64, %y: f64) -> f64 {
  %p = arith.mulf %x, %y : f64
  %s = math.sin %p : f64
  return %s : f64
}
func.func @h(%x: f64, %y: f64, %dr: f64) -> (f64, f64) {
  %r:2 = enzyme.autodiff_region(%x, %dr) {
  ^bb0(%a: f64):
    %m = arith.mulf %a, %a : f64
    %k = arith.mulf %m, %y : f64
    %i = enzyme.ignore_derivatives %k : f64 -> f64
    %s = arith.addf %i, %m : f64
    enzyme.yield %s : f64
  } attributes {activity = [#enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_active>]} : (f64, f64) -> (f64, f64)
  return %r#0, %r#1 : f64, f64
}

// REV-LABEL: func.func private @main_primal(%t: f32) -> f32
// REV-LABEL: func.func @main(
// REV-SAME:      %[[T:.*]]: f32, %[[SEED:.*]]: f32) -> f32
// REV-NEXT:    %[[D:.*]] = func.call @diffemain_primal(%[[T]], %[[SEED]]) : (f32, f32) -> f32
// REV-NEXT:    func.return %[[D]] : f32
// REV-LABEL: func.func private @diffemain_primal(
// REV-SAME:      %{{.*}}: f32, %[[S:.*]]: f32) -> f32
// REV-NOT:       arith.negf
// REV:           func.return %{{.*}} : f32

// FWD-LABEL: func.func @dg(
// FWD-SAME:      %[[X:.*]]: f64, %[[DX:.*]]: f64, %[[Y:.*]]: f64) -> (f64, f64)
// FWD-NEXT:    %[[R:.*]], %[[DR:.*]] = func.call @fwddiffeg(%[[X]], %[[DX]], %[[Y]]) : (f64, f64, f64) -> (f64, f64)
// FWD-NEXT:    func.return %[[R]], %[[DR]] : f64, f64

// REGION-LABEL: func.func @h(
// REGION-SAME:      %[[X:.*]]: f64, %[[Y:.*]]: f64, %[[DR:.*]]: f64)
// REGION-NEXT:    %{{.*}}, %{{.*}} = func.call @diffeh_region0(%[[X]], %[[Y]], %[[DR]]) : (f64, f64, f64) -> (f64, f64)
// REGION-LABEL: func.func private @h_region0(
// REGION-SAME:      %[[A:.*]]: f64, %[[C:.*]]: f64) -> f64
// REGION:         %[[K:.*]] = arith.mulf %{{.*}}, %[[C]] : f64
// REGION-NEXT:    %{{.*}} = enzyme.ignore_derivatives %[[K]] : f64 -> f64
// REGION-LABEL: func.func private @diffeh_region0(
// REGION:         func.return
