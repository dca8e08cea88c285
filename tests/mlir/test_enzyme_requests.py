"""Issue 28 item 5, the enzyme dialect's other requests, through ``zymase.mlir.compile``
against closed forms: ``enzyme.ignore_derivatives`` (forward and reverse), several
results with their own return activities (active / activenoneed / const in reverse,
dup / dupnoneed / constnoneed in forward; activities also in the newer spelling
``#enzyme.activity<...>``), ``enzyme.autodiff_region`` / ``enzyme.fwddiff_region``
(with a captured value, which is a constant of the region), and the ``enzyme-wrap``
pass in both modes (run by zymase-opt's pipeline, then compiled)."""

from __future__ import annotations

import math

import pytest

import zymase.mlir
from zymase.errors import ZymaseError
from zymase.transforms.pipeline import run_passes


def A(name: str) -> str:
    return f"#enzyme<activity enzyme_{name}>"


TEXT = f"""
func.func @ign(%x: f64, %y: f64) -> f64 {{
  %p = arith.mulf %x, %y : f64
  %q = arith.mulf %p, %x : f64
  %i = enzyme.ignore_derivatives %q : f64 -> f64
  %s = arith.addf %p, %i : f64
  return %s : f64
}}
func.func @rev_ign(%x: f64, %y: f64) -> (f64, f64) {{
  %one = arith.constant 1.0 : f64
  %r:2 = enzyme.autodiff @ign(%x, %y, %one) {{activity = [{A('active')}, {A('active')}], ret_activity = [{A('activenoneed')}]}} : (f64, f64, f64) -> (f64, f64)
  return %r#0, %r#1 : f64, f64
}}
func.func @fwd_ign(%x: f64, %dx: f64, %y: f64) -> (f64, f64) {{
  %r:2 = enzyme.fwddiff @ign(%x, %dx, %y) {{activity = [{A('dup')}, {A('const')}], ret_activity = [{A('dup')}]}} : (f64, f64, f64) -> (f64, f64)
  return %r#0, %r#1 : f64, f64
}}
func.func @two(%x: f64, %y: f64) -> (f64, f64) {{
  %a = arith.mulf %x, %y : f64
  %b = math.sin %x : f64
  %c = arith.addf %b, %y : f64
  return %a, %c : f64, f64
}}
func.func @rev_two(%x: f64, %y: f64, %s0: f64, %s1: f64) -> (f64, f64, f64) {{
  %r:3 = enzyme.autodiff @two(%x, %y, %s0, %s1) {{activity = [{A('active')}, {A('active')}], ret_activity = [{A('active')}, {A('activenoneed')}]}} : (f64, f64, f64, f64) -> (f64, f64, f64)
  return %r#0, %r#1, %r#2 : f64, f64, f64
}}
func.func @rev_two_const(%x: f64, %y: f64, %s1: f64) -> (f64, f64, f64) {{
  %r:3 = enzyme.autodiff @two(%x, %y, %s1) {{activity = [{A('active')}, {A('active')}], ret_activity = [{A('const')}, {A('activenoneed')}]}} : (f64, f64, f64) -> (f64, f64, f64)
  return %r#0, %r#1, %r#2 : f64, f64, f64
}}
func.func @fwd_two(%x: f64, %dx: f64, %y: f64, %dy: f64) -> (f64, f64, f64) {{
  %r:3 = enzyme.fwddiff @two(%x, %dx, %y, %dy) {{activity = [{A('dup')}, {A('dup')}], ret_activity = [{A('dup')}, {A('dupnoneed')}]}} : (f64, f64, f64, f64) -> (f64, f64, f64)
  return %r#0, %r#1, %r#2 : f64, f64, f64
}}
func.func @fwd_two_newer_spelling(%x: f64, %dx: f64, %y: f64) -> f64 {{
  %r = enzyme.fwddiff @two(%x, %dx, %y) {{activity = [#enzyme.activity<enzyme_dup>, #enzyme.activity<enzyme_const>], ret_activity = [#enzyme.activity<enzyme_constnoneed>, #enzyme.activity<enzyme_dupnoneed>]}} : (f64, f64, f64) -> f64
  return %r : f64
}}
func.func @rev_two_properties(%x: f64, %y: f64, %s0: f64) -> (f64, f64) {{
  %r:2 = enzyme.autodiff @two(%x, %y, %s0) <{{ activity=[#enzyme.activity<enzyme_active>, #enzyme.activity<enzyme_active>], ret_activity=[#enzyme.activity<enzyme_activenoneed>, #enzyme.activity<enzyme_constnoneed>] }}> : (f64, f64, f64) -> (f64, f64)
  return %r#0, %r#1 : f64, f64
}}
func.func @fwd_two_printed(%x: f64, %dx: f64, %y: f64) -> (f64, f64) {{
  %r:3 = enzyme.fwddiff @two(%x, %dx, %y) <activity = [#enzyme.activity<enzyme_dup>, #enzyme.activity<enzyme_const>], ret_activity = [#enzyme.activity<enzyme_dupnoneed>, #enzyme.activity<enzyme_dup>]> : (f64, f64, f64) -> (f64, f64, f64)
  return %r#0, %r#2 : f64, f64
}}
func.func @region_fwd_properties(%x: f64, %dx: f64, %y: f64) -> f64 {{
  %r = enzyme.fwddiff_region(%x, %dx) {{
  ^bb0(%a: f64):
    %m = arith.mulf %a, %y : f64
    %s = math.sin %m : f64
    enzyme.yield %s : f64
  }} <{{activity = [#enzyme.activity<enzyme_dup>], ret_activity = [#enzyme.activity<enzyme_dupnoneed>]}}> : (f64, f64) -> f64
  return %r : f64
}}
func.func @region_rev(%x: f64, %y: f64, %dr: f64) -> (f64, f64) {{
  %r:2 = enzyme.autodiff_region(%x, %dr) {{
  ^bb0(%a: f64):
    %m = arith.mulf %a, %y : f64
    %e = math.exp %m : f64
    enzyme.yield %e : f64
  }} attributes {{activity = [{A('active')}], ret_activity = [{A('active')}]}} : (f64, f64) -> (f64, f64)
  return %r#0, %r#1 : f64, f64
}}
func.func @region_fwd(%x: f64, %dx: f64, %y: f64) -> f64 {{
  %r = enzyme.fwddiff_region(%x, %dx) {{
  ^bb0(%a: f64):
    %m = arith.mulf %a, %y : f64
    %s = math.sin %m : f64
    enzyme.yield %s : f64
  }} attributes {{activity = [{A('dup')}], ret_activity = [{A('dupnoneed')}]}} : (f64, f64) -> f64
  return %r : f64
}}
"""

_MODULES: dict = {}


def _module(opt_level=2):
    if opt_level not in _MODULES:
        _MODULES[opt_level] = zymase.mlir.compile(TEXT, opt_level=opt_level)
    return _MODULES[opt_level]


@pytest.mark.parametrize("opt_level", [0, 2])
def test_ignore_derivatives_drops_its_path(opt_level):
    m = _module(opt_level)
    x, y = 0.7, -1.3
    assert m.ign(x, y) == pytest.approx(x * y + x * y * x, rel=1e-15)
    assert m.rev_ign(x, y) == pytest.approx((y, x), rel=1e-15)  # d(xy), the ignored x^2 y adds nothing
    assert m.fwd_ign(x, 0.5, y) == pytest.approx((x * y + x * y * x, 0.5 * y), rel=1e-15)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_several_results_with_their_return_activities(opt_level):
    m = _module(opt_level)
    x, y = 0.4, 1.2
    assert m.rev_two(x, y, 0.5, 2.0) == pytest.approx((x * y, 0.5 * y + 2 * math.cos(x), 0.5 * x + 2), rel=1e-15)
    assert m.rev_two_const(x, y, 2.0) == pytest.approx((x * y, 2 * math.cos(x), 2.0), rel=1e-15)
    assert m.fwd_two(x, 0.3, y, -1.0) == pytest.approx((x * y, 0.3 * y - x, math.cos(x) * 0.3 - 1.0), rel=1e-15)
    # Enzyme-MLIR's newer attribute spelling #enzyme.activity<...> reads the same
    assert m.fwd_two_newer_spelling(x, 0.3, y) == pytest.approx(math.cos(x) * 0.3, rel=1e-15)


# issue 28 (jaxrules item 3): Enzyme-MLIR's newer spellings of the options, a property
# dictionary <{...}> (its tests, also after a region's body) and <activity = ..., ...>
# (its printer), differentiate as the attribute dictionary does
@pytest.mark.parametrize("opt_level", [0, 2])
def test_newer_option_spellings_differentiate(opt_level):
    m = _module(opt_level)
    x, y = 0.4, 1.2
    assert m.rev_two_properties(x, y, 0.5) == pytest.approx((0.5 * y, 0.5 * x), rel=1e-15)
    # results: (d two#0 = dx*y, primal two#1, d two#1 = cos(x) dx, both from dx): #0 and #2 returned
    assert m.fwd_two_printed(x, 0.3, y) == pytest.approx((0.3 * y, math.cos(x) * 0.3), rel=1e-15)
    assert m.region_fwd_properties(x, 0.3, y) == pytest.approx(math.cos(x * y) * y * 0.3, rel=1e-15)


def test_option_given_twice_is_refused():
    text = TEXT.split("func.func @rev_ign")[0] + """
func.func @twice(%x: f64, %dx: f64) -> f64 {
  %r = enzyme.fwddiff @ign(%x, %dx, %x) <activity = [#enzyme.activity<enzyme_dup>, #enzyme.activity<enzyme_const>], activity = [#enzyme.activity<enzyme_dup>, #enzyme.activity<enzyme_const>], ret_activity = [#enzyme.activity<enzyme_dupnoneed>]> : (f64, f64, f64) -> f64
  return %r : f64
}"""
    with pytest.raises(ZymaseError, match="option 'activity' given twice"):
        zymase.mlir.compile(text)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_region_requests(opt_level):
    m = _module(opt_level)
    x, y = 0.6, -0.8
    assert m.region_rev(x, y, 1.5) == pytest.approx((math.exp(x * y), 1.5 * y * math.exp(x * y)), rel=1e-14)
    assert m.region_fwd(x, 2.0, y) == pytest.approx(2.0 * y * math.cos(x * y), rel=1e-14)


WRAPPED = """
func.func @g(%x: f64, %y: f64) -> f64 {
  %p = arith.mulf %x, %y : f64
  %s = math.sin %p : f64
  %q = arith.mulf %s, %x : f64
  return %q : f64
}
"""


def test_enzyme_wrap_both_modes():
    x, y = 0.9, 0.7

    def g(x, y):
        return math.sin(x * y) * x

    rev = run_passes(WRAPPED, "<wrap>", [
        "enzyme-wrap{infn=g outfn=dg argTys=enzyme_active,enzyme_active retTys=enzyme_active "
        "mode=ReverseModeCombined}", "remove-unnecessary-enzyme-ops"])
    m = zymase.mlir.compile(rev)
    dgdx = math.cos(x * y) * y * x + math.sin(x * y)
    dgdy = math.cos(x * y) * x * x
    assert m.dg(x, y, 2.0) == pytest.approx((2 * dgdx, 2 * dgdy), rel=1e-14)
    assert m.g(x, y) == pytest.approx(g(x, y), rel=1e-15)

    fwd = run_passes(WRAPPED, "<wrap>", [
        "enzyme-wrap{infn=g outfn= argTys=enzyme_dup,enzyme_const retTys=enzyme_dup mode=ForwardMode}"])
    m = zymase.mlir.compile(fwd)
    assert m.g(x, 0.5, y) == pytest.approx((g(x, y), 0.5 * dgdx), rel=1e-14)


@pytest.mark.parametrize("options, message", [
    ("infn=g outfn=dg argTys=enzyme_active,enzyme_active retTys=enzyme_active mode=ReverseModeSplit",
     "mode 'ReverseModeSplit' is not supported"),
    ("infn=g outfn=dg argTys=enzyme_active retTys=enzyme_active mode=ForwardMode", "argTys gives 1"),
    ("infn=nope outfn=dg argTys= retTys= mode=ForwardMode", "no func.func definition named 'nope'"),
    ("infn=g outfn=dg argTys=enzyme_active,enzyme_bogus retTys=enzyme_active", "unknown activity 'enzyme_bogus'"),
])
def test_enzyme_wrap_refuses_bad_options(options, message):
    with pytest.raises(ZymaseError) as err:
        run_passes(WRAPPED, "<wrap>", ["enzyme-wrap{" + options + "}"])
    assert str(err.value).startswith("zymase: error:") and message in str(err.value)
    assert "hint" in str(err.value)


# session 32: a module whose only request is an enzyme.autodiff_region/fwddiff_region
# was not differentiated by zymase.mlir.compile ("no lowering to the llvm dialect for
# 'enzyme.autodiff_region' ... run the enzyme pass"): only named requests counted
REGION_ONLY = f"""
func.func @region_rev(%x: f64, %y: f64) -> (f64, f64) {{
  %one = arith.constant 1.0 : f64
  %r:2 = enzyme.autodiff_region(%x, %y, %one) {{
  ^bb0(%a: f64, %b: f64):
    %p = arith.mulf %a, %b : f64
    %s = math.sin %p : f64
    %q = arith.mulf %s, %a : f64
    enzyme.yield %q : f64
  }} attributes {{activity = [{A('active')}, {A('active')}], ret_activity = [{A('activenoneed')}]}} : (f64, f64, f64) -> (f64, f64)
  return %r#0, %r#1 : f64, f64
}}
"""


def test_module_with_only_a_region_request_is_differentiated():
    m = zymase.mlir.compile(REGION_ONLY, opt_level=0)
    x, y = 0.7, 1.3
    want = (math.sin(x * y) + x * y * math.cos(x * y), x * x * math.cos(x * y))
    assert m.region_rev(x, y) == pytest.approx(want, rel=1e-14)
