"""The ``width`` attribute of ``enzyme.fwddiff`` / ``enzyme.autodiff`` (issue 25 item 2,
MLIR): at width N each tangent, shadow, seed and derivative is N values side by side
(the LLVM path's unrolled form), checked lane by lane against separate width-1 requests
and closed forms through ``zymase.mlir.compile``, over a CFG loop; Enzyme-MLIR's batched
spelling, one ``tensor<Nxf64>`` per shadow, seed and derivative, gives the same lanes;
a tensor of the wrong width is refused with both signatures zymase accepts."""

from __future__ import annotations

import math

import pytest

import zymase.mlir
from zymase.errors import ZymaseError

ACT = "#enzyme<activity enzyme_active>"
DUP = "#enzyme<activity enzyme_dup>"
DUPNONEED = "#enzyme<activity enzyme_dupnoneed>"
NONEED = "#enzyme<activity enzyme_activenoneed>"

# f(x, a) = sum_{i<n} sin(x * a^i) over a cf loop
F = """
func.func @f(%x: f64, %a: f64, %n: i64) -> f64 {
  %z = arith.constant 0.0 : f64
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  cf.br ^loop(%c0, %z, %x : i64, f64, f64)
^loop(%i: i64, %s: f64, %p: f64):
  %more = arith.cmpi slt, %i, %n : i64
  cf.cond_br %more, ^body, ^done
^body:
  %t = math.sin %p : f64
  %s2 = arith.addf %s, %t : f64
  %p2 = arith.mulf %p, %a : f64
  %i2 = arith.addi %i, %c1 : i64
  cf.br ^loop(%i2, %s2, %p2 : i64, f64, f64)
^done:
  func.return %s : f64
}
"""

MODULE = F + f"""
func.func @fwd1(%x: f64, %dx: f64, %a: f64, %da: f64, %n: i64) -> f64 {{
  %r = enzyme.fwddiff @f(%x, %dx, %a, %da, %n) {{activity = [{DUP}, {DUP}, #enzyme<activity enzyme_const>],
    ret_activity = [{DUPNONEED}]}} : (f64, f64, f64, f64, i64) -> f64
  func.return %r : f64
}}
func.func @fwd3(%x: f64, %dx0: f64, %dx1: f64, %dx2: f64, %a: f64, %da0: f64, %da1: f64, %da2: f64,
                %n: i64) -> (f64, f64, f64) {{
  %r:3 = enzyme.fwddiff @f(%x, %dx0, %dx1, %dx2, %a, %da0, %da1, %da2, %n) {{activity = [{DUP}, {DUP},
    #enzyme<activity enzyme_const>], ret_activity = [{DUPNONEED}], width = 3 : i64}}
    : (f64, f64, f64, f64, f64, f64, f64, f64, i64) -> (f64, f64, f64)
  func.return %r#0, %r#1, %r#2 : f64, f64, f64
}}
func.func @fwd3_lanes12(%x: f64, %dx0: f64, %dx1: f64, %dx2: f64, %a: f64, %n: i64) -> (f64, f64) {{
  %r:3 = enzyme.fwddiff @f(%x, %dx0, %dx1, %dx2, %a, %n) {{activity = [{DUP}, #enzyme<activity enzyme_const>,
    #enzyme<activity enzyme_const>], ret_activity = [{DUPNONEED}], width = 3 : i64}}
    : (f64, f64, f64, f64, f64, i64) -> (f64, f64, f64)
  func.return %r#1, %r#2 : f64, f64
}}
func.func @rev1(%x: f64, %a: f64, %n: i64, %seed: f64) -> (f64, f64) {{
  %r:2 = enzyme.autodiff @f(%x, %a, %n, %seed) {{activity = [{ACT}, {ACT}, #enzyme<activity enzyme_const>],
    ret_activity = [{NONEED}]}} : (f64, f64, i64, f64) -> (f64, f64)
  func.return %r#0, %r#1 : f64, f64
}}
func.func @rev2(%x: f64, %a: f64, %n: i64, %s0: f64, %s1: f64) -> (f64, f64, f64, f64) {{
  %r:4 = enzyme.autodiff @f(%x, %a, %n, %s0, %s1) {{activity = [{ACT}, {ACT}, #enzyme<activity enzyme_const>],
    ret_activity = [{NONEED}], width = 2 : i64}} : (f64, f64, i64, f64, f64) -> (f64, f64, f64, f64)
  func.return %r#0, %r#1, %r#2, %r#3 : f64, f64, f64, f64
}}
"""


def closed_form(x, a, n):
    dx = sum(math.cos(x * a**i) * a**i for i in range(n))
    da = sum(math.cos(x * a**i) * x * i * a ** (i - 1) for i in range(1, n))
    return dx, da


@pytest.fixture(scope="module")
def mod():
    return zymase.mlir.compile(MODULE)


def test_forward_width_3_equals_three_width_1_requests(mod):
    x, a, n = 0.7, 1.1, 5
    dxs, das = (1.0, 0.0, 0.5), (0.0, 1.0, -2.0)
    got = mod.fwd3(x, *dxs, a, *das, n)
    gx, ga = closed_form(x, a, n)
    for k in range(3):
        one = mod.fwd1(x, dxs[k], a, das[k], n)
        assert got[k] == pytest.approx(one, rel=1e-14, abs=1e-14)
        assert got[k] == pytest.approx(gx * dxs[k] + ga * das[k], rel=1e-12)


def test_reverse_width_2_equals_two_width_1_requests(mod):
    x, a, n = 0.7, 1.1, 5
    got = mod.rev2(x, a, n, 1.0, -0.5)  # dx lane 0, dx lane 1, da lane 0, da lane 1
    for k, seed in enumerate((1.0, -0.5)):
        dx, da = mod.rev1(x, a, n, seed)
        assert (got[k], got[2 + k]) == pytest.approx((dx, da), rel=1e-14, abs=1e-14)
        gx, ga = closed_form(x, a, n)
        assert (dx, da) == pytest.approx((seed * gx, seed * ga), rel=1e-12)


TENSOR_LANES = F + f"""
func.func @fwd4(%x: f64, %dx0: f64, %dx1: f64, %dx2: f64, %dx3: f64, %a: f64, %n: i64) -> (f64, f64, f64, f64) {{
  %dx = tensor.from_elements %dx0, %dx1, %dx2, %dx3 : tensor<4xf64>
  %r = enzyme.fwddiff @f(%x, %dx, %a, %n) {{activity = [{DUP}, #enzyme<activity enzyme_const>,
    #enzyme<activity enzyme_const>], ret_activity = [{DUPNONEED}], width = 4 : i64}}
    : (f64, tensor<4xf64>, f64, i64) -> tensor<4xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %r0 = tensor.extract %r[%c0] : tensor<4xf64>
  %r1 = tensor.extract %r[%c1] : tensor<4xf64>
  %r2 = tensor.extract %r[%c2] : tensor<4xf64>
  %r3 = tensor.extract %r[%c3] : tensor<4xf64>
  func.return %r0, %r1, %r2, %r3 : f64, f64, f64, f64
}}
func.func @rev2(%x: f64, %a: f64, %n: i64, %s0: f64, %s1: f64) -> (f64, f64, f64, f64) {{
  %seed = tensor.from_elements %s0, %s1 : tensor<2xf64>
  %dx, %da = enzyme.autodiff @f(%x, %a, %n, %seed) {{activity = [{ACT}, {ACT}, #enzyme<activity enzyme_const>],
    ret_activity = [{NONEED}], width = 2 : i64}} : (f64, f64, i64, tensor<2xf64>) -> (tensor<2xf64>, tensor<2xf64>)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %dx0 = tensor.extract %dx[%c0] : tensor<2xf64>
  %dx1 = tensor.extract %dx[%c1] : tensor<2xf64>
  %da0 = tensor.extract %da[%c0] : tensor<2xf64>
  %da1 = tensor.extract %da[%c1] : tensor<2xf64>
  func.return %dx0, %dx1, %da0, %da1 : f64, f64, f64, f64
}}
"""


def test_tensor_lanes_equal_the_flattened_lanes(mod):
    # Enzyme-MLIR's batched spelling: at width N a shadow, seed or derivative of an f64
    # is one tensor<Nxf64>
    batched = zymase.mlir.compile(TENSOR_LANES)
    x, a, n = 0.7, 1.1, 5
    dxs = (1.0, 0.0, 0.5, -2.0)
    gx, ga = closed_form(x, a, n)
    got = batched.fwd4(x, *dxs, a, n)
    for k in range(4):
        assert got[k] == pytest.approx(mod.fwd1(x, dxs[k], a, 0.0, n), rel=1e-14, abs=1e-14)
        assert got[k] == pytest.approx(gx * dxs[k], rel=1e-12, abs=1e-14)
    assert batched.rev2(x, a, n, 1.0, -0.5) == pytest.approx(mod.rev2(x, a, n, 1.0, -0.5), rel=1e-14, abs=1e-14)
    assert batched.rev2(x, a, n, 1.0, -0.5) == pytest.approx((gx, -0.5 * gx, ga, -0.5 * ga), rel=1e-12)


def test_tensor_lanes_of_the_wrong_width_are_refused():
    text = F + f"""
    func.func @batched(%x: f64, %dx: tensor<3xf64>, %a: f64, %n: i64) -> tensor<3xf64> {{
      %r = enzyme.fwddiff @f(%x, %dx, %a, %n) {{activity = [{DUP}, #enzyme<activity enzyme_const>,
        #enzyme<activity enzyme_const>], ret_activity = [{DUPNONEED}], width = 4 : i64}}
        : (f64, tensor<3xf64>, f64, i64) -> tensor<3xf64>
      func.return %r : tensor<3xf64>
    }}
    """
    with pytest.raises(ZymaseError, match=r"do not match the derivative signature \(f64, f64, f64, f64, f64, f64, "
                                          r"i64\) -> \(f64, f64, f64, f64\) \(or, with the lanes as tensors, "
                                          r"\(f64, tensor<4xf64>, f64, i64\) -> \(tensor<4xf64>\)\)"):
        zymase.mlir.compile(text)


def test_activity_opt_leaves_vector_requests_correct():
    # enzyme-activity-opt decodes one shadow per argument: a width-3 request must come
    # out computing the same lanes (it is left as written)
    from zymase.transforms.pipeline import run_passes

    optimized = zymase.mlir.compile(run_passes(MODULE, "width.mlir", ["enzyme-activity-opt"]))
    x, a, n = 0.4, 0.9, 4
    dxs, das = (1.0, 2.0, 0.0), (0.5, 0.0, 1.0)
    gx, ga = closed_form(x, a, n)
    got = optimized.fwd3(x, *dxs, a, *das, n)
    assert got == pytest.approx([gx * dxs[k] + ga * das[k] for k in range(3)], rel=1e-12)
    assert optimized.rev2(x, a, n, 1.0, 2.0) == pytest.approx((gx, 2 * gx, ga, 2 * ga), rel=1e-12)
    # lane 0's tangent unused, lanes 1 and 2 returned
    assert optimized.fwd3_lanes12(x, 1.0, 2.0, 3.0, a, n) == pytest.approx((2 * gx, 3 * gx), rel=1e-12)


# calls with several results, reverse mode (forward mode passes each result's tangents
# already): in a loop and at the top, one result seeded and the others not
CALLS = """
func.func @g(%x: f64, %y: f64) -> (f64, f64, f64, index) {
  %a = arith.mulf %x, %y : f64
  %b = math.sin %x : f64
  %c = math.exp %y : f64
  %i = arith.constant 3 : index
  func.return %a, %b, %c, %i : f64, f64, f64, index
}
func.func @calls(%x: f64, %y: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %h = arith.constant 0.5 : f64
  %n = arith.constant 3 : index
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %x) -> (f64) {
    %a, %b, %c, %i = func.call @g(%acc, %y) : (f64, f64) -> (f64, f64, f64, index)
    %ab = arith.mulf %a, %b : f64
    %half = arith.mulf %h, %acc : f64
    %s = arith.addf %half, %ab : f64
    scf.yield %s : f64
  }
  %a2, %b2, %c2, %i2 = func.call @g(%x, %r) : (f64, f64) -> (f64, f64, f64, index)
  %o = arith.addf %r, %b2 : f64
  func.return %o : f64
}
"""


def _calls_reference(x, y):
    acc = x
    for _ in range(3):
        acc = 0.5 * acc + acc * y * math.sin(acc)
    return acc + math.sin(x)


@pytest.mark.parametrize("structured", [True, False], ids=["scf", "branches"])
def test_reverse_calls_with_several_results(structured):
    from adhelpers import central_fd, drivers, vector_drivers

    text = CALLS + drivers("calls", 2) + "\n" + vector_drivers("calls", 2, 2) + "\n" + vector_drivers("calls", 2, 3)
    m = zymase.mlir.compile(text, structured_ad=structured)
    xs = (0.4, 0.7)
    assert m.calls(*xs) == pytest.approx(_calls_reference(*xs), rel=1e-14)
    grad = m.d_calls(*xs)
    assert grad == pytest.approx([central_fd(_calls_reference, xs, i) for i in range(2)], rel=1e-7)
    for width, seeds in ((2, (1.0, -0.5)), (3, (2.0, 0.0, -1.5))):
        got = getattr(m, f"dv{width}_calls")(*xs, *seeds)
        want = [s * g for g in grad for s in seeds]  # per argument, its lanes
        assert got == pytest.approx(want, rel=1e-14, abs=1e-15)
        tangents = [(1.0, 0.0, 0.5)[:width], (0.0, 1.0, -2.0)[:width]]
        got = getattr(m, f"fv{width}_calls")(xs[0], *tangents[0], xs[1], *tangents[1])
        assert got == pytest.approx([grad[0] * tangents[0][k] + grad[1] * tangents[1][k] for k in range(width)],
                                    rel=1e-13)
