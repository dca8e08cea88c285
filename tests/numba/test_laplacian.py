"""``zymase.laplacian`` (issue 25 item 4, the Laplacian): the collapsed forward Laplacian
(Laplacian mode in the engine: gradient lanes plus one summed second-order lane), and
Taylor mode where Laplacian mode refuses the function, against closed forms, central
differences and the dense Hessian's trace (also in test_sparse_derivatives.py), float64
and float32; through loops, branches, arrays allocated in njit code, element-wise math
and libm, matrix-vector products written as NumPy users write them (Numba's gemv: every
lane in one gemm, the nonzeros only for unit seeds), with d not a multiple of the chunk
width; refusals in the user's terms."""

import math
import re

import numpy as np
import pytest
from numba import njit

import zymase
from zymase import api_laplacian
from zymase.errors import ZymaseError


def _path(f, *args):
    """Which path ``laplacian`` took for ``f`` at these arguments' types."""
    from zymase.api import _typeof

    prim = tuple(_typeof(v, "argument") for v in api_laplacian._read_only(args))
    return api_laplacian.chosen[(f, prim)][0]


@njit
def mlp(x, W1, b1, W2, b2, w3):
    """Two tanh hidden layers, as loops; the first layer's output is a new array."""
    h = np.empty(W1.shape[0], x.dtype)
    for j in range(W1.shape[0]):
        z = b1[j]
        for k in range(x.shape[0]):
            z += W1[j, k] * x[k]
        h[j] = np.tanh(z)
    s = 0.0
    for j in range(W2.shape[0]):
        z = b2[j]
        for k in range(h.shape[0]):
            z += W2[j, k] * h[k]
        s += w3[j] * np.tanh(z)
    return s


def _weights(rng, d, w, dtype):
    return tuple(a.astype(dtype) for a in (rng.standard_normal((w, d)), rng.standard_normal(w),
                                            rng.standard_normal((w, w)) / 2, rng.standard_normal(w),
                                            rng.standard_normal(w)))


def test_laplacian_of_a_two_layer_mlp_against_second_differences():
    # (the dense Hessian's trace is checked in test_sparse_derivatives.py, where that
    # Hessian is built anyway)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(7)
    weights = _weights(rng, 7, 5, np.float64)
    h = 1e-4
    fd = sum((mlp(x + h * e, *weights) - 2 * mlp(x, *weights) + mlp(x - h * e, *weights)) / h ** 2
             for e in np.eye(7))
    np.testing.assert_allclose(zymase.laplacian(mlp)(x, *weights), fd, rtol=1e-6, atol=1e-6)
    assert _path(mlp, x, *weights) == "collapsed"  # loops and an array allocated in njit code


def test_laplacian_of_a_composed_layer_against_its_closed_form():
    # W2 = I, b2 = 0: f = sum_j w3_j g(z_j) with g = tanh o tanh and z = W1 x + b1, so
    # the Laplacian is sum_j w3_j g''(z_j) |W1_j|^2, g'' = tanh''(h) h'^2 + tanh'(h) h''
    rng = np.random.default_rng(2)
    d, w = 7, 5  # the shapes of the test above: its kernel
    x = rng.standard_normal(d)
    W1, b1 = rng.standard_normal((w, d)) / 3, rng.standard_normal(w)
    W2, b2, w3 = np.eye(w), np.zeros(w), rng.standard_normal(w)
    h = np.tanh(W1 @ x + b1)
    dh, ddh = 1 - h * h, -2 * h * (1 - h * h)  # tanh' and tanh'' at z
    t = np.tanh(h)
    dt, ddt = 1 - t * t, -2 * t * (1 - t * t)  # at h
    sq = np.sum(W1 * W1, axis=1)
    exact = np.sum(w3 * (ddt * dh * dh * sq + dt * ddh * sq))
    np.testing.assert_allclose(zymase.laplacian(mlp)(x, W1, b1, W2, b2, w3), exact, rtol=1e-12)


@njit
def layer(x, W, b, w2):
    """As a NumPy user writes it: W @ x calls Numba's gemv wrapper ('t' on a C-order W)."""
    return np.dot(w2, np.tanh(W @ x + b))


@njit
def layer_transposed(x, Wt, b, w2):
    return np.dot(w2, np.tanh(x @ Wt + b))  # gemv with 'n'


def _layer_data(dtype):
    rng = np.random.default_rng(3)
    return tuple(a.astype(dtype) for a in (rng.standard_normal(6), rng.standard_normal((4, 6)),
                                            rng.standard_normal(4), rng.standard_normal(4)))


def test_float32_laplacian_through_a_matrix_vector_product():
    # Laplacian of sum_j w2_j tanh(W_j . x + b_j) = sum_j w2_j tanh''(z_j) |W_j|^2
    x, W, b, w2 = _layer_data(np.float32)
    lap = zymase.laplacian(layer)(x, W, b, w2)
    assert isinstance(lap, np.float32)
    assert _path(layer, x, W, b, w2) == "collapsed"
    x, W, b, w2 = _layer_data(np.float64)
    t = np.tanh(W @ x + b)
    np.testing.assert_allclose(lap, np.sum(w2 * -2 * t * (1 - t * t) * np.sum(W * W, axis=1)), rtol=1e-5)


def test_gradient_through_a_vector_matrix_product():
    # the gemv loop in reverse mode, with respect to the vector and the matrix
    x, W, b, w2 = _layer_data(np.float64)
    gx, gW = zymase.grad(layer_transposed, argnums=(0, 1))(x, W.T.copy(), b, w2)
    dz = w2 * (1 - np.tanh(W @ x + b) ** 2)
    np.testing.assert_allclose(gx, W.T @ dz, rtol=1e-12)
    np.testing.assert_allclose(gW, np.outer(x, dz), rtol=1e-12)


@njit
def elementwise(x, c):
    """Temporary arrays, division and libm, and a branch per element."""
    y = np.sin(x) * np.exp(0.5 * x) / (2.0 + x * x) - np.log(1.5 + np.cos(x))
    s = 0.0
    for i in range(y.shape[0]):
        if x[i] > c:
            s += y[i] * y[i]
        else:
            s += math.sqrt(1.0 + y[i] ** 4)
    return s


def _piece(t, c):
    y = math.sin(t) * math.exp(0.5 * t) / (2.0 + t * t) - math.log(1.5 + math.cos(t))
    return y * y if t > c else math.sqrt(1.0 + y ** 4)


def test_laplacian_through_temporaries_libm_and_branches_against_differences():
    x = np.array([0.3, -1.2, 2.1, 0.05, -0.4, 1.7])
    c = 0.1
    h = 1e-4  # the function is separable: its Laplacian is a sum of 1-D second differences
    fd = sum((_piece(t + h, c) - 2 * _piece(t, c) + _piece(t - h, c)) / h ** 2 for t in x)
    lap = zymase.laplacian(elementwise)(x, c)
    np.testing.assert_allclose(lap, fd, rtol=1e-6)
    # every op's second-order term (division, sin, exp, log, cos, sqrt, powers) is derived
    # from its forward rule; the branch and the loop are the lanes' control flow
    assert _path(elementwise, x, c) == "collapsed"


@njit
def two_layers(x, W1, b1, W2t, b2, w):
    """As NumPy users write it: W1 @ x is gemv 't' (its lanes are unit seeds: the
    nonzeros-only product), h @ W2t gemv 'n' (dense lanes: one gemm)."""
    return np.dot(w, np.tanh(np.tanh(W1 @ x + b1) @ W2t + b2))


def _two_layer_data(dtype, d=17, n1=37, n2=4):
    # n1 = 37 rows of W1: the unit lanes' strided product (numba_linalg_runtime.c,
    # mv_unit_lanes_strided) in a tile of 32 rows and a remainder
    rng = np.random.default_rng(4)
    return tuple(a.astype(dtype) for a in (rng.standard_normal(d), rng.standard_normal((n1, d)) / 3,
                                            rng.standard_normal(n1), rng.standard_normal((n1, n2)),
                                            rng.standard_normal(n2), rng.standard_normal(n2)))


def _two_layer_laplacian(x, W1, b1, W2t, b2, w):
    """Closed form: z = W2 h + b2, h = tanh(W1 x + b1); the Laplacian of w . tanh(z) is
    sum_j w_j (tanh''(z_j) |grad z_j|^2 + tanh'(z_j) lap z_j), grad z = W2 diag(h') W1,
    lap z = W2 (h'' * |W1 rows|^2)."""
    h = np.tanh(W1 @ x + b1)
    g = np.tanh(h @ W2t + b2)
    grad_z = W2t.T @ ((1 - h * h)[:, None] * W1)
    lap_z = W2t.T @ (-2 * h * (1 - h * h) * np.sum(W1 * W1, axis=1))
    return np.sum(w * (-2 * g * (1 - g * g) * np.sum(grad_z * grad_z, axis=1) + (1 - g * g) * lap_z))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_collapsed_laplacian_of_two_numpy_layers_in_chunks(monkeypatch, dtype):
    # issue 25 item 4 (the forward Laplacian): d = 17 directions, 4 per call (the last
    # call has one), both gemv forms, against the closed form (float64 data) and, in
    # float64, central second differences (against the dense Hessian's trace:
    # test_sparse_derivatives.py, through the same Laplacian mode)
    monkeypatch.setattr(api_laplacian, "CHUNK", 4)
    args = _two_layer_data(dtype)
    laplacian = zymase.laplacian(two_layers)
    lap = laplacian(*args)
    assert _path(two_layers, *args) == "collapsed"
    assert isinstance(lap, dtype)
    # a second call takes the quick path (its argument types seen); a strided x does
    # not (it is copied, then typed as before): the same kernel, the same number
    assert laplacian(*args) == lap
    assert laplacian(np.repeat(args[0], 2)[::2], *args[1:]) == lap
    # the quick path passes the caller's arrays to the compiled loop as they are: another
    # x of the same type gets its own Laplacian (the chunk loop reads x, not a cached view)
    x2 = (args[0] * 0.5).astype(dtype)
    want2 = _two_layer_laplacian(x2.astype(np.float64), *_two_layer_data(np.float64)[1:])
    np.testing.assert_allclose(laplacian(x2, *args[1:]), want2, rtol=1e-4 if dtype == np.float32 else 1e-12)
    exact = _two_layer_laplacian(*_two_layer_data(np.float64))
    if dtype == np.float32:
        np.testing.assert_allclose(lap, exact, rtol=1e-4)
        return
    np.testing.assert_allclose(lap, exact, rtol=1e-12)
    x, rest, h = args[0], args[1:], 1e-4
    fd = sum((two_layers(x + h * e, *rest) - 2 * two_layers(x, *rest) + two_layers(x - h * e, *rest)) / h ** 2
             for e in np.eye(x.size))
    # second differences: O(eps |f| / h^2) rounding per direction, 17 directions
    np.testing.assert_allclose(lap, fd, rtol=1e-5, atol=1e-5)


@njit
def cubic_through_outer(x):
    """(sum x)(x . x) as sum(outer(x, x) @ x): a matrix that depends on x times x."""
    return np.sum(np.outer(x, x) @ x)


def test_laplacian_falls_back_to_taylor_mode_where_laplacian_mode_refuses():
    # issue 25 item 4: Laplacian mode refuses a gemv whose matrix and vector both depend
    # on x (their product's second-order term); laplacian then takes Taylor mode, exact
    # too: the Laplacian of (sum x)(x . x) is (4 + 2 d) sum x
    x = np.array([0.5, -1.25, 2.0])
    laplacian = zymase.laplacian(cubic_through_outer)
    np.testing.assert_allclose(laplacian(x), (4 + 2 * x.size) * np.sum(x), rtol=1e-12)
    # a repeat call goes to the Taylor loop's compiled entry point with x as given
    # (writable, another array of the same type)
    y = np.array([1.5, 0.25, -3.0])
    np.testing.assert_allclose(laplacian(y), (4 + 2 * y.size) * np.sum(y), rtol=1e-12)
    how, why = api_laplacian.chosen[next(k for k in api_laplacian.chosen if k[0] is cubic_through_outer)]
    assert how == "taylor"
    assert "Laplacian mode does not differentiate" in str(why) and "both the matrix and the vector" in str(why)


def _only_zymase_error(call, *words):
    with pytest.raises(ZymaseError) as info:
        call()
    text = str(info.value)
    assert text.startswith("zymase: error: ") and "Traceback" not in text
    for w in words:
        assert w in text, (w, text)
    return text


@njit
def writes_its_argument(x, scratch):
    for i in range(x.shape[0]):
        scratch[i] = x[i] * x[i]
    return np.sum(scratch)


def test_laplacian_refuses_what_it_does_not_build():
    x = np.array([0.5, -1.0, 2.0])
    _only_zymase_error(lambda: zymase.laplacian(writes_its_argument)(x, np.zeros(3)),
                       "'writes_its_argument'", "must not write into its arguments", "hint: write into a copy")
    _only_zymase_error(lambda: zymase.laplacian(elementwise)(0.5, 0.1), "argument 0 ('x')", "1-D float array")
    _only_zymase_error(lambda: zymase.laplacian(elementwise)(np.ones((2, 2)), 0.1), "shape (2, 2)")
    _only_zymase_error(lambda: zymase.laplacian(zymase.grad(elementwise)), "laplacian of grad", "third")

    @njit
    def vector_valued(x):
        return x * x

    _only_zymase_error(lambda: zymase.laplacian(vector_valued)(x), "laplacian needs", "to return a float")


@njit
def weighted_tanh_sum(x, w):
    s = 0.0
    for i in range(x.shape[0]):
        s += w[i] * np.tanh(x[i])
    return s


def test_laplacian_mode_factors_the_second_order_term_of_one_operand(monkeypatch):
    # an op of one active operand (tanh here) has lane k's second-order term
    # f''(a) g_k^2: the coefficient is derived once and each lane adds one square
    # (autodiff/laplacian.py), not its own derived code (3 multiplications a lane for
    # tanh's, lane by lane). Counted as the optimized kernel's growth from 2 to 4 lanes.
    from zymase.frontends import numba as zn

    texts = []
    jit = zn._jit_in_numba
    monkeypatch.setattr(zn, "_jit_in_numba", lambda text, *rest: (texts.append(text), jit(text, *rest))[1])
    fmuls = {}
    for d in (2, 4):
        x, w = np.linspace(-0.9, 1.3, d), np.linspace(1.0, 2.0, d)
        y = np.tanh(x)
        np.testing.assert_allclose(zymase.laplacian(weighted_tanh_sum)(x, w), np.sum(w * -2 * y * (1 - y * y)),
                                   rtol=1e-13)
        # per copy of the loop's body (one tanh call each): LLVM may unroll it
        fmuls[d] = texts[-1].count("= fmul ") / texts[-1].count("call double @tanh(")
    assert (fmuls[4] - fmuls[2]) / 2 <= 1, fmuls


def test_quick_path_keys_arrays_by_dtype_layout_and_alignment():
    # the quick path's key (api_laplacian._quick_key) must tell apart what Numba types
    # apart: byte order, layout, alignment; a view and the array it views are one type
    key = api_laplacian._quick_key
    x, W = np.arange(3.0), np.ones((2, 3))
    unaligned = np.zeros(3 * 8 + 1, np.uint8)[1:].view(np.float64)
    assert key((x, W), 2) == key((x[:], W.copy()), 2)
    assert key((x, W), 2) != key((x.astype(">f8"), W), 2)
    assert key((x, W), 2) != key((x, np.asfortranarray(W)), 2)
    assert key((x, W), 2) != key((unaligned, W), 2)
    assert key((x, W), 2) != key((x.astype(np.float32), W), 2)
    assert key((x[::2], W), 2) is None  # x not C-contiguous: copied on the slow path


@njit
def _lanes_needed_after_linear_code(x, W, b, w):
    """Gradient lanes that pass through linear code (a dot, a scaled copy stored into an
    array, a loop-carried sum) before a nonlinear op reads them: lane liveness
    (autodiff/lane_liveness.py) must keep each, or its term of the Laplacian is lost."""
    h = np.tanh(W @ x + b)
    outer = np.tanh(np.dot(w, h))  # a nonlinear op after the linear dot
    products = np.sum(w * h * h)  # a product of two active values
    g = 2.0 * h + 1.0  # lanes stored into an array, read later by exp
    stored = np.sum(np.exp(0.25 * g) * w)
    acc = 0.0
    for i in range(h.shape[0]):  # a loop carrying the lanes to a nonlinear op
        acc = 0.5 * acc + h[i]
    return outer + products + stored + np.sin(acc)


def test_laplacian_keeps_the_lanes_nonlinear_ops_read_through_linear_code():
    rng = np.random.default_rng(7)
    d, n = 3, 5
    x, W, b, w = rng.standard_normal(d), rng.standard_normal((n, d)) / 2, rng.standard_normal(n), rng.standard_normal(n)
    got = zymase.laplacian(_lanes_needed_after_linear_code)(x, W, b, w)
    h, f = 1e-4, _lanes_needed_after_linear_code.py_func
    eye = np.eye(d)
    want = sum(f(x + h * e, W, b, w) - 2 * f(x, W, b, w) + f(x - h * e, W, b, w) for e in eye) / h**2
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert _path(_lanes_needed_after_linear_code, x, W, b, w) == "collapsed"


@njit
def _mlp1(x, W, b, w):
    return np.dot(w, np.tanh(W @ x + b))


def test_laplacian_allocates_no_gradient_lanes_that_only_linear_code_reads(monkeypatch):
    # w . tanh(W x + b) (bench/second_order_structure.py's one-layer MLP): the gradient
    # lanes of tanh(...) are read only by the linear np.dot, so lane liveness gives that
    # array no shadow in the gradient lanes (the Laplacian lane's alone): two NRT
    # allocations a lane (the shadows of W x and of W x + b), not three. Counted as the
    # optimized kernel's growth from 2 to 4 lanes; checked against the closed form.
    from zymase.frontends import numba as zn

    texts = []
    jit = zn._jit_in_numba
    monkeypatch.setattr(zn, "_jit_in_numba", lambda text, *rest: (texts.append(text), jit(text, *rest))[1])
    allocations = {}
    rng = np.random.default_rng(3)
    for d in (2, 4):
        x, W, b, w = rng.standard_normal(d), rng.standard_normal((6, d)), rng.standard_normal(6), rng.standard_normal(6)
        y = np.tanh(W @ x + b)
        want = np.sum(w * -2 * y * (1 - y * y) * np.sum(W * W, axis=1))
        np.testing.assert_allclose(zymase.laplacian(_mlp1)(x, W, b, w), want, rtol=1e-13)
        allocations[d] = texts[-1].count("call ptr @NRT_MemInfo_alloc")
    assert (allocations[4] - allocations[2]) / 2 <= 2, allocations


@njit
def _mlp2(x, W1, b1, W2, b2, w):
    return np.dot(w, np.tanh(W2 @ np.tanh(W1 @ x + b1) + b2))


def test_laplacian_gives_each_arrays_lanes_one_allocation(monkeypatch):
    # The two-layer MLP of bench/second_order_structure.py: each array whose gradient
    # lanes are needed (W1 x, tanh(W1 x + b1), W2 h) has its lanes' shadows in one NRT
    # allocation (autodiff/lane_blocks.py), so the kernel's allocations do not grow with
    # the lanes (they grew by one per lane and array), every call frees what it
    # allocates (the block's reference count is the lanes'), and the second layer's
    # gemm reads and writes the lanes in place: checked against the dense Hessian.
    from numba.core.runtime import _nrt_python, rtsys

    from zymase.frontends import numba as zn

    texts = []
    jit = zn._jit_in_numba
    monkeypatch.setattr(zn, "_jit_in_numba", lambda text, *rest: (texts.append(text), jit(text, *rest))[1])
    rng = np.random.default_rng(11)
    allocations, lap = {}, zymase.laplacian(_mlp2)
    was_enabled = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        for d in (2, 3):
            args = (rng.standard_normal(d), rng.standard_normal((5, d)), rng.standard_normal(5),
                    rng.standard_normal((4, 5)) / 2, rng.standard_normal(4), rng.standard_normal(4))
            got = lap(*args)
            allocations[d] = texts[-1].count("call ptr @NRT_MemInfo_alloc")
            np.testing.assert_allclose(got, np.trace(zymase.hessian(_mlp2)(*args)), rtol=1e-12)
            before = rtsys.get_allocation_stats()
            for _ in range(3):
                assert lap(*args) == got
            after = rtsys.get_allocation_stats()
            assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free > 0
            assert after.alloc - before.alloc == after.free - before.free
    finally:
        if not was_enabled:
            _nrt_python.memsys_disable_stats()
    assert allocations[3] == allocations[2], allocations


def test_laplacian_folds_the_primal_gemv_into_the_lanes_gemm(monkeypatch):
    # W2 @ h in the two-layer MLP: h's and W2 h's lanes are each a whole lane block, so
    # the primal product rides on the lanes' gemm as one more column in the blocks'
    # spare slots (numba_linalg.forward_lanes -> xxgemv_fwd_lanes_value) and Numba's
    # own gemv call is gone from the kernel; the first layer's x (the seeds) is no
    # block, its gemv stays. Checked against the dense Hessian where the runtime folds
    # (dense lanes) and where it cannot (lanes of h mostly zero: the sparse product,
    # then the primal as its own gemv).
    from zymase.frontends import numba as zn

    texts = []
    jit = zn._jit_in_numba
    monkeypatch.setattr(zn, "_jit_in_numba", lambda text, *rest: (texts.append(text), jit(text, *rest))[1])
    rng = np.random.default_rng(5)
    d, n = 4, 40  # d = 4: a kernel of its own (its text is read)
    W1 = rng.standard_normal((n, d))
    sparse_W1 = np.zeros((n, d))
    sparse_W1[:2] = W1[:2]  # h's lanes: 2 nonzero rows of 40 in each, under one in 16
    lap = zymase.laplacian(_mlp2)
    for first in (W1, sparse_W1):
        args = (rng.standard_normal(d), first, rng.standard_normal(n), rng.standard_normal((n, n)) / 4,
                rng.standard_normal(n), rng.standard_normal(n))
        np.testing.assert_allclose(lap(*args), np.trace(zymase.hessian(_mlp2)(*args)), rtol=1e-11)
    kernel = next(t for t in texts if "fwd_lanes" in t)
    assert kernel.count("call i32 @numba_xxgemv(") == 1, kernel.count("call i32 @numba_xxgemv(")
    assert "xxgemv_fwd_lanes_value(" in kernel


@njit
def _scaled_layer(x, W, b, w, m):
    return np.dot(w, np.tanh((W @ x) * x[:m] + b))


def test_laplacian_vectorizes_element_loops_whose_operands_may_broadcast(monkeypatch):
    # Numba indexes each operand of an element-wise loop with select(dim > 1, i, p), p
    # a phi (a size-1 operand broadcasts), which kept the Laplacian's element loops
    # (every lane's code per element, a tanh call among them) scalar; as i * stride
    # (transforms/broadcast_strides.py) LLVM vectorizes them, with a run-time check
    # that each stride is 1. Counted as tanh's vector intrinsic in the kernel; one
    # kernel checked against the closed form where the vector loop runs (m = d, b of
    # length d) and where a size-1 operand sends the loop to its scalar copy (x[:1],
    # or b of length 1).
    from zymase.frontends import numba as zn

    texts = []
    jit = zn._jit_in_numba
    monkeypatch.setattr(zn, "_jit_in_numba", lambda text, *rest: (texts.append(text), jit(text, *rest))[1])
    rng = np.random.default_rng(7)
    d = 7  # odd: the vector loop leaves a remainder
    x, W, w = rng.standard_normal(d), rng.standard_normal((d, d)) / 2, rng.standard_normal(d)
    lap = zymase.laplacian(_scaled_layer)
    for m, b in ((d, rng.standard_normal(d)), (1, rng.standard_normal(d)), (d, rng.standard_normal(1))):
        # z_j = (W x)_j x_a + b_j, a = j (m = d) or 0 (x[:1] broadcast)
        a = np.arange(d) if m == d else np.zeros(d, dtype=int)
        u = W @ x
        y = np.tanh(u * x[a] + b)
        grad = W * x[a][:, None]
        grad[np.arange(d), a] += u
        want = np.sum(w * (-2 * y * (1 - y * y) * np.sum(grad * grad, axis=1) + (1 - y * y) * 2 * W[np.arange(d), a]))
        np.testing.assert_allclose(lap(x, W, b, w, m), want, rtol=1e-12)
    kernel = next(t for t in texts if "fwdlaplace" in t)
    assert re.search(r"@llvm\.tanh\.v\d+f64\(", kernel), "the element loop was not vectorized"
