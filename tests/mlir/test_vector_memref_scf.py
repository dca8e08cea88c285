"""Vector mode (the ``width`` of ``enzyme.fwddiff`` / ``enzyme.autodiff``, issue 25 item
2) through memref memory and scf control flow: each shadow memref is ``width`` memrefs,
lane by lane, and scf.for/if/while carry ``width`` tangents (forward) or adjoints
(reverse) per active value. Every lane is checked against a width-1 request with that
lane's tangents or seed (to rounding), and the width-1 requests against central finite
differences or closed forms; at widths 1, 2 and 3 (3 does not divide the trip counts
of 4 and 5) on the structured path at -O2, at widths 1 and 3 at -O0 and on the branch
path (``structured_ad=False``). ``test_generated_code_uses_the_width`` checks the code is
one primal computation and one tape with N-wide derivative code, not N derivatives."""

from __future__ import annotations

import numpy as np
import pytest

import zymase.mlir
from adhelpers import central_fd, drivers, function_text, vector_drivers, vector_requests
from test_memref_ad import MEMCACHE, SUMSQ
from test_scf_ad import FUNCS as SCALAR_SCF, NAMES as SCALAR_NAMES

WIDTHS = (1, 2, 3)

# window (memref.subview, alloc, copy, cast, load, dealloc; nested scf.for with
# iter_args), scale (f32, a linalg.generic storing into a duplicated output memref, no
# result), scratch (a buffer allocated in each iteration: its shadows, one per lane, are
# taped) and rows (a row view per iteration, an scf.if on its parity) are
# test_memref_ad's; until is an scf.while over memory
MEMREF = "\n".join([*(function_text(SUMSQ, name) for name in ("window", "scale")),
                     *(function_text(MEMCACHE, name) for name in ("scratch", "rows")), """
// scf.while over memory: sum x[i] * exp(c x[i]) until the sum reaches 3 or x ends;
// each term is also written back into x (a store into the duplicated memref)
func.func @until(%x: memref<?xf64>, %c: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %limit = arith.constant 3.0 : f64
  %n = memref.dim %x, %c0 : memref<?xf64>
  %r:2 = scf.while (%i = %c0, %s = %z) : (index, f64) -> (index, f64) {
    %in = arith.cmpi slt, %i, %n : index
    %low = arith.cmpf olt, %s, %limit : f64
    %go = arith.andi %in, %low : i1
    scf.condition(%go) %i, %s : index, f64
  } do {
  ^bb0(%j: index, %t: f64):
    %v = memref.load %x[%j] : memref<?xf64>
    %cv = arith.mulf %c, %v : f64
    %e = math.exp %cv : f64
    %ve = arith.mulf %v, %e : f64
    %t2 = arith.addf %t, %ve : f64
    memref.store %ve, %x[%j] : memref<?xf64>
    %j2 = arith.addi %j, %c1 : index
    scf.yield %j2, %t2 : index, f64
  }
  func.return %r#1 : f64
}
"""])

MAT, VEC, VEC32 = "memref<?x?xf64>", "memref<?xf64>", "memref<?xf32>"
SIGNATURES = {  # name -> (parameters as (type, activity), result)
    "window": ([(MAT, "dup")], "f64"),
    "scale": ([(VEC32, "dup"), (VEC32, "dup"), ("f32", "active")], None),
    "scratch": ([(VEC, "dup")], "f64"),
    "rows": ([(MAT, "dup")], "f64"),
    "until": ([(VEC, "dup"), ("f64", "active")], "f64"),
}
#: (opt level, structured AD, widths requested): every width at -O2 on the structured
#: path; the other paths (cheaper to compile with fewer requests) at 1 and 3
PATHS = {"O0": (0, True, (1, 3)), "O2": (2, True, WIDTHS), "O2-branches": (2, False, (1, 3))}

_MODULES: dict = {}


def _module(path: str):
    """The compiled module of ``path`` (see PATHS) and the widths it requests."""
    if path not in _MODULES:
        opt_level, structured, widths = PATHS[path]
        text = MEMREF + "\n".join(vector_requests(name, params, result, w)
                                  for name, (params, result) in SIGNATURES.items() for w in widths)
        _MODULES[path] = zymase.mlir.compile(text, opt_level=opt_level, structured_ad=structured), widths
    return _MODULES[path]


def _primals(name: str, rng) -> list:
    """Arguments of ``name``; callers copy the arrays (some functions write them)."""
    if name == "window":
        return [rng.normal(size=(4, 4))]
    if name == "scale":
        x = rng.normal(size=5).astype(np.float32)
        return [x, np.zeros_like(x), np.float32(1.25)]
    if name == "scratch":
        return [rng.normal(size=5)]
    if name == "rows":
        return [0.5 * rng.normal(size=(4, 3))]
    return [0.3 * np.abs(rng.normal(size=6)) + 0.1, 0.8]  # until: stops before x ends


def _random_like(x, rng):
    if isinstance(x, np.ndarray):
        return rng.normal(size=x.shape).astype(x.dtype)
    return type(x)(rng.normal())


def _copy(x):
    return x.copy() if isinstance(x, np.ndarray) else x


def _call_forward(m, name, width, primals, tangents):
    """``fv<width>_<name>`` on copies: (result tangents, per parameter its lanes'
    tangent or shadow arrays after the call, the primal arrays after the call)."""
    params, _ = SIGNATURES[name]
    args, lanes, xs = [], [], []
    for (_, a), x, ts in zip(params, primals, tangents):
        xs.append(_copy(x))
        args.append(xs[-1])
        lanes.append([_copy(t) for t in ts] if a != "const" else [])
        args += lanes[-1]
    out = getattr(m, f"fv{width}_{name}")(*args)
    return _as_list(out), lanes, xs


def _call_reverse(m, name, width, primals, shadows, seeds):
    """``dv<width>_<name>`` on copies: (derivatives returned, per parameter its
    lanes' shadow arrays after the call)."""
    params, _ = SIGNATURES[name]
    args, lanes = [], []
    for (_, a), x, ss in zip(params, primals, shadows):
        args.append(_copy(x))
        lanes.append([s.copy() for s in ss] if a == "dup" else [])
        args += lanes[-1]
    out = getattr(m, f"dv{width}_{name}")(*args, *seeds)
    return _as_list(out), lanes


def _as_list(out) -> list:
    if out is None:
        return []
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _close(got, want, name):
    tol = dict(rtol=1e-5, atol=1e-6) if name == "scale" else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64), **tol)


@pytest.fixture(scope="module", params=list(PATHS))
def mod(request):
    return _module(request.param)


@pytest.mark.parametrize("name", list(SIGNATURES))
def test_forward_lanes_are_width_1_requests(mod, name):
    mod, widths = mod
    params, result = SIGNATURES[name]
    rng = np.random.default_rng(len(name))
    primals = _primals(name, rng)
    for width in widths[1:]:
        tangents = [[_random_like(x, rng) for _ in range(width)] for x in primals]
        out, lanes, xs = _call_forward(mod, name, width, primals, tangents)
        assert len(out) == (width if result else 0)
        for k in range(width):
            one, one_lanes, one_xs = _call_forward(mod, name, 1, primals, [[ts[k]] for ts in tangents])
            if result:
                _close(out[k], one[0], name)
            for lane, lane_one in zip(lanes, one_lanes):
                if lane:
                    _close(lane[k], lane_one[0], name)
            for x, x_one in zip(xs, one_xs):
                _close(x, x_one, name)  # one primal computation, the same one


@pytest.mark.parametrize("name", list(SIGNATURES))
def test_reverse_lanes_are_width_1_requests(mod, name):
    mod, widths = mod
    params, result = SIGNATURES[name]
    rng = np.random.default_rng(10 + len(name))
    primals = _primals(name, rng)
    for width in widths[1:]:
        # the shadows start nonzero: derivatives accumulate into them (and an output's
        # shadow is its seed)
        shadows = [[_random_like(x, rng) for _ in range(width)] if a == "dup" else []
                   for (_, a), x in zip(params, primals)]
        seeds = list(rng.normal(size=width)) if result else []
        out, lanes = _call_reverse(mod, name, width, primals, shadows, seeds)
        active = [i for i, (_, a) in enumerate(params) if a == "active"]
        assert len(out) == width * len(active)
        for k in range(width):
            one, one_lanes = _call_reverse(mod, name, 1, primals, [ss[k:k + 1] for ss in shadows], seeds[k:k + 1])
            _close([out[j * width + k] for j in range(len(active))], one, name)
            for lane, lane_one in zip(lanes, one_lanes):
                if lane:
                    _close(lane[k], lane_one[0], name)


def _fd_along(f, primals, direction, h=1e-6):
    plus = [x + h * d if d is not None else x for x, d in zip(primals, direction)]
    minus = [x - h * d if d is not None else x for x, d in zip(primals, direction)]
    return (f(*[_copy(x) for x in plus]) - f(*[_copy(x) for x in minus])) / (2 * h)


@pytest.mark.parametrize("name", ["window", "scratch", "rows", "until"])
def test_lanes_match_finite_differences(name):
    """The lanes of the widest request against central differences: forward, along
    each lane's tangent; reverse, each lane's gradient times its seed."""
    m, _ = _module("O2")
    params, _ = SIGNATURES[name]
    rng = np.random.default_rng(20 + len(name))
    primals = _primals(name, rng)
    f = getattr(m, name)
    width = WIDTHS[-1]
    tangents = [[_random_like(x, rng) for _ in range(width)] for x in primals]
    out, _, _ = _call_forward(m, name, width, primals, tangents)
    for k in range(width):
        want = _fd_along(f, primals, [ts[k] for ts in tangents])
        assert out[k] == pytest.approx(want, rel=1e-6, abs=1e-8)
    shadows = [[np.zeros_like(x) for _ in range(width)] if a == "dup" else [] for (_, a), x in zip(params, primals)]
    seeds = [1.0, -0.5, 2.0][:width]
    out, lanes = _call_reverse(m, name, width, primals, shadows, seeds)
    grad = np.zeros_like(primals[0])
    for idx in np.ndindex(grad.shape):
        e = np.zeros_like(grad)
        e[idx] = 1.0
        grad[idx] = _fd_along(f, primals, [e] + [None] * (len(primals) - 1))
    for k in range(width):
        np.testing.assert_allclose(lanes[0][k], seeds[k] * grad, rtol=1e-6, atol=1e-8)
    if name == "until":
        dc = _fd_along(f, primals, [None, 1.0])
        assert [out[k] for k in range(width)] == pytest.approx([s * dc for s in seeds], rel=1e-6)


def test_scale_closed_form():
    """y = a x^2 (f32, a duplicated output memref): forward ty = 2 a x tx + ta x^2 per
    lane; reverse dx += 2 a x dy, da = sum(x^2 dy), and the output shadows zeroed."""
    m, _ = _module("O2")
    rng = np.random.default_rng(3)
    x, y, a = _primals("scale", rng)
    width = 3
    txs = [_random_like(x, rng) for _ in range(width)]
    tas = [np.float32(t) for t in (0.5, -1.0, 2.0)]
    _, lanes, xs = _call_forward(m, "scale", width, [x, y, a], [txs, [np.zeros_like(y)] * width, tas])
    np.testing.assert_allclose(xs[1], a * x * x, rtol=1e-6)
    for k in range(width):
        np.testing.assert_allclose(lanes[1][k], 2 * a * x * txs[k] + tas[k] * x * x, rtol=1e-5, atol=1e-6)
    dys = [_random_like(y, rng) for _ in range(width)]
    das, lanes = _call_reverse(m, "scale", width, [x, y, a], [[np.zeros_like(x)] * width, dys, []], [])
    for k in range(width):
        np.testing.assert_allclose(lanes[0][k], 2 * a * x * dys[k], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(lanes[1][k], 0)
        assert das[k] == pytest.approx(float((x * x * dys[k]).sum()), rel=1e-5)


# ------------------------------------------------------------ scalar scf at width N

SCALAR_TEXT = SCALAR_SCF + "\n".join(drivers(n, 2) + "".join("\n" + vector_drivers(n, 2, w) for w in WIDTHS[1:])
                                      for n in SCALAR_NAMES)


@pytest.fixture(scope="module")
def scalar_mod():
    return zymase.mlir.compile(SCALAR_TEXT, opt_level=2)


@pytest.mark.parametrize("name", SCALAR_NAMES)
def test_scalar_scf_lanes(scalar_mod, name):
    """scf.for (iter_args of f64, f32 and index), scf.if in a loop and at the top,
    scf.while, a triangular nest, an inactive loop: lane k of the width-N forward
    request is the width-1 gradient dotted with lane k's tangent; lane k of the
    reverse request is the gradient times seed k; the gradient matches central
    differences."""
    m = scalar_mod
    xs = (0.3, 0.8)
    grad = getattr(m, "d_" + name)(*xs)
    rtol, h = (2e-3, 1e-3) if name == "loop_types" else (1e-6, 1e-5)
    assert list(grad) == pytest.approx([central_fd(getattr(m, name), xs, i, h) for i in range(2)], rel=rtol, abs=1e-7)
    rng = np.random.default_rng(4)
    for width in WIDTHS[1:]:
        tangents = rng.normal(size=(2, width))
        args = [v for i in range(2) for v in (xs[i], *tangents[i])]
        got = getattr(m, f"fv{width}_{name}")(*args)
        # f32 intermediates (loop_types) round each lane's combination differently
        rel = 1e-5 if name == "loop_types" else 1e-12
        for k in range(width):
            one = getattr(m, f"t0_{name}")(*xs) * tangents[0][k] + getattr(m, f"t1_{name}")(*xs) * tangents[1][k]
            assert got[k] == pytest.approx(one, rel=rel, abs=1e-12)
        seeds = rng.normal(size=width)
        got = getattr(m, f"dv{width}_{name}")(*xs, *seeds)
        for k in range(width):
            assert [got[k], got[width + k]] == pytest.approx([seeds[k] * g for g in grad], rel=rel, abs=1e-12)


# Enzyme-MLIR's batched spelling beside memrefs: the floats' lanes as one tensor<2xf64>,
# a memref's shadows as two memrefs (no tensor holds memrefs)
DUP, NONEED = "#enzyme<activity enzyme_dup>", "#enzyme<activity enzyme_activenoneed>"
TENSOR_LANES = MEMREF + vector_requests("until", *SIGNATURES["until"], 2) + f"""
func.func @fwd_tensor(%x: memref<?xf64>, %dx0: memref<?xf64>, %dx1: memref<?xf64>, %c: f64, %dc0: f64,
                      %dc1: f64) -> (f64, f64) {{
  %dc = tensor.from_elements %dc0, %dc1 : tensor<2xf64>
  %r = enzyme.fwddiff @until(%x, %dx0, %dx1, %c, %dc) {{activity = [{DUP}, {DUP}],
    ret_activity = [#enzyme<activity enzyme_dupnoneed>], width = 2 : i64}}
    : (memref<?xf64>, memref<?xf64>, memref<?xf64>, f64, tensor<2xf64>) -> tensor<2xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r0 = tensor.extract %r[%c0] : tensor<2xf64>
  %r1 = tensor.extract %r[%c1] : tensor<2xf64>
  func.return %r0, %r1 : f64, f64
}}
func.func @rev_tensor(%x: memref<?xf64>, %dx0: memref<?xf64>, %dx1: memref<?xf64>, %c: f64, %s0: f64,
                      %s1: f64) -> (f64, f64) {{
  %s = tensor.from_elements %s0, %s1 : tensor<2xf64>
  %dc = enzyme.autodiff @until(%x, %dx0, %dx1, %c, %s) {{activity = [{DUP}, #enzyme<activity enzyme_active>],
    ret_activity = [{NONEED}], width = 2 : i64}}
    : (memref<?xf64>, memref<?xf64>, memref<?xf64>, f64, tensor<2xf64>) -> tensor<2xf64>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.extract %dc[%c0] : tensor<2xf64>
  %d1 = tensor.extract %dc[%c1] : tensor<2xf64>
  func.return %d0, %d1 : f64, f64
}}
"""


def test_tensor_lanes_beside_memref_shadows():
    m = zymase.mlir.compile(TENSOR_LANES, opt_level=0)
    rng = np.random.default_rng(5)
    x, c = _primals("until", rng)
    dxs = [rng.normal(size=x.shape) for _ in range(2)]
    want = m.fv2_until(x.copy(), dxs[0].copy(), dxs[1].copy(), c, 0.5, -1.0)
    assert m.fwd_tensor(x.copy(), dxs[0].copy(), dxs[1].copy(), c, 0.5, -1.0) == pytest.approx(want, rel=1e-15)
    shadows = [[d.copy() for d in dxs] for _ in range(2)]
    want = m.dv2_until(x.copy(), *shadows[0], c, 1.0, -2.0)
    assert m.rev_tensor(x.copy(), *shadows[1], c, 1.0, -2.0) == pytest.approx(want, rel=1e-15)
    for k in range(2):
        np.testing.assert_array_equal(shadows[0][k], shadows[1][k])
