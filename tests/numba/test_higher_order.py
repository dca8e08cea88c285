"""Compositions of transforms at any depth (issue 25 items 1 and 2): reverse over
reverse (``vjp(grad(f))``, ``grad(grad(f))``), third derivatives
(``jacfwd(hessian(f))``, ``grad(grad(grad(f)))``, ``jvp`` of njit code calling ``hvp``
in a loop; the first and last through ``f``'s array temporary), and ``hessian``/``hvp`` called from
njit code (a Newton step written in njit; the errors of transforms typed there name the
calling function and line), against closed forms and central differences
of the lower-order derivative, for a float64 function with loops, a branch and an array
temporary. Every check on one function reuses its kernels (each nested compile costs
seconds)."""

import math

import numpy as np
import pytest
from numba import njit
from numba.core.runtime import _nrt_python, rtsys

import zymase
from zymase.errors import ZymaseError


@njit
def energy(x, c):
    t = x * x  # an array temporary
    s = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:  # a branch: c x^3 or sin(x) x^2
            s += c * t[i] * x[i]
        else:
            s += math.sin(x[i]) * t[i]
    for i in range(x.shape[0] - 1):
        s += c * t[i] * x[i + 1]  # couples neighbours
    return s


# one nested kernel of energy serves the Hessian, the hvp and their njit glue; its
# temporary x * x runs under every third derivative below (issue 25 item 3 of session
# 24: their release under a third level was refused)
hess_energy = zymase.hessian(energy)
hvp_energy = zymase.hvp(energy)
grad_energy = zymase.grad(energy)

X = np.array([0.4, -0.9, 1.3, -0.2, 0.7])
N = X.size
C = 1.7
V = np.array([1.0, -0.5, 0.25, 2.0, -1.5])


def _phi(x, c, order):
    """The branch's term and its derivatives, closed form."""
    if x > 0:
        return [c * x ** 3, 3 * c * x * x, 6 * c * x, 6 * c][order]
    s, co = math.sin(x), math.cos(x)
    return [s * x * x, co * x * x + 2 * x * s, -s * x * x + 4 * x * co + 2 * s,
            -co * x * x - 6 * x * s + 6 * co][order]


def hessian_closed(x, c):
    h = np.diag([_phi(v, c, 2) for v in x])
    for i in range(x.size - 1):
        h[i, i] += 2 * c * x[i + 1]
        h[i, i + 1] = h[i + 1, i] = 2 * c * x[i]
    return h


def d_grad_dc(x):
    """d/dc of the gradient."""
    g = np.array([3 * v * v if v > 0 else 0.0 for v in x])
    g[:-1] += 2 * x[:-1] * x[1:]
    g[1:] += x[:-1] ** 2
    return g


def third_closed(x, c):
    t = np.zeros((x.size,) * 3)
    for i, v in enumerate(x):
        t[i, i, i] = _phi(v, c, 3)
    for i in range(x.size - 1):  # c x_i^2 x_{i+1}: d3/dx_i dx_i dx_{i+1} = 2c
        for p in ((i, i, i + 1), (i, i + 1, i), (i + 1, i, i)):
            t[p] = 2 * c
    return t


def test_reverse_over_reverse_vjp_of_grad():
    # item 1: vjp(grad(f)) is reverse over reverse (it was refused), through the temporary
    g, pullback = zymase.vjp(zymase.grad(energy), X, C)
    hv, dc = pullback(V)
    np.testing.assert_allclose(hv, hessian_closed(X, C) @ V, rtol=1e-13)
    assert dc == pytest.approx(d_grad_dc(X) @ V, rel=1e-13)
    grad = zymase.grad(energy)
    np.testing.assert_allclose(g, grad(X, C), rtol=1e-15)
    h = 1e-6  # central differences of the gradient along V
    np.testing.assert_allclose(hv, (grad(X + h * V, C) - grad(X - h * V, C)) / (2 * h), rtol=1e-7, atol=1e-7)


def test_third_derivatives_jacfwd_of_hessian():
    # item 1: the Jacobian of the njit Hessian (forward over reverse), by vector forward
    # mode over it (forward over forward over reverse), shaped as JAX's
    hess = hess_energy

    @njit
    def newton_matrix(x, c):  # njit code compiles the Hessian's glue first, at -O3
        return hess(x, c)

    np.testing.assert_allclose(newton_matrix(X, C), hessian_closed(X, C), rtol=1e-13)
    x = X[:2]  # both branches and the coupling; 2 inputs: a forward kernel of width 2, cheaper to build
    t = zymase.jacfwd(hess)(x, C)
    assert t.shape == (2, 2, 2)
    np.testing.assert_allclose(t, third_closed(x, C), rtol=1e-12, atol=1e-12)
    # the temporary's derivative arrays at every level are released (session 24 item 3)
    was_enabled = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        zymase.jacfwd(hess)(x, C)
        after = rtsys.get_allocation_stats()
    finally:
        if not was_enabled:
            _nrt_python.memsys_disable_stats()
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free > 0
    h = 1e-5
    fd = np.stack([(hess(x + h * e, C) - hess(x - h * e, C)) / (2 * h) for e in np.eye(2)], axis=-1)
    np.testing.assert_allclose(t, fd, rtol=1e-7, atol=1e-7)


@njit
def wave(x, y):
    s = 0.0
    for k in range(1, 4):  # a loop and a branch in a scalar function
        if k % 2 == 1:
            s += math.sin(k * x * y) / k
        else:
            s += x ** k * y
    return s


def test_third_derivative_grad_of_grad_of_grad():
    # item 1: reverse over reverse over reverse, and its composition from njit code
    x, y = 0.6, -1.1
    d3 = zymase.grad(zymase.grad(zymase.grad(wave)))

    def closed(x, y):  # d3/dx3 of sin(x y) + sin(3 x y)/3 + x^2 y
        return -y ** 3 * math.cos(x * y) - 9 * y ** 3 * math.cos(3 * x * y)

    assert d3(x, y) == pytest.approx(closed(x, y), rel=1e-13)
    d2 = zymase.grad(zymase.grad(wave))
    h = 1e-5
    assert d3(x, y) == pytest.approx((d2(x + h, y) - d2(x - h, y)) / (2 * h), rel=1e-8)

    @njit
    def twice(x, y):  # the third derivative is callable from njit code like any grad
        return 2.0 * d3(x, y)

    assert twice(x, y) == pytest.approx(2 * closed(x, y), rel=1e-13)


@njit
def newton_step(x, c):
    return x - np.linalg.solve(hess_energy(x, c), grad_energy(x, c))


@njit
def curvature(x, c, v):
    return np.dot(v, hvp_energy(x, c, v))


def test_hessian_and_hvp_called_from_njit_code():
    # item 2: a Newton step written in njit calls the Hessian; hvp inside njit code
    step = newton_step(X, C)
    want = X - np.linalg.solve(hessian_closed(X, C), grad_energy(X, C))
    np.testing.assert_allclose(step, want, rtol=1e-12)
    assert curvature(X, C, V) == pytest.approx(V @ hessian_closed(X, C) @ V, rel=1e-13)


def _only_zymase_error(call, *words):
    with pytest.raises(ZymaseError) as info:
        call()
    text = str(info.value)
    assert "Traceback" not in text
    for w in words:
        assert w in text, (w, text)


def test_compositions_that_cannot_be_built_are_refused():
    # item 1/2: what stays unbuilt says which composition, why and what to call instead
    _only_zymase_error(lambda: zymase.grad(zymase.jacfwd(energy)), "jacfwd(energy)", "computed in Python",
                       "hessian")
    _only_zymase_error(lambda: zymase.laplacian(zymase.grad(energy)), "laplacian of grad(energy)", "np.trace")
    _only_zymase_error(lambda: zymase.grad(zymase.grad(energy))(X, C), "grad(energy)", "return a float",
                       "jacfwd")
    both = zymase.hessian(energy, argnums=(0, 1))

    @njit
    def blocks(x, c):
        return both(x, c)

    _only_zymase_error(lambda: blocks(X, C), "argnums=(0, 1)", "inside njit code", "int argnums")


def _names_call_site(caller, args, line_offset, *words):
    """``caller(*args)`` is refused with one zymase error naming ``caller`` and the line
    ``line_offset`` lines below its ``def``, where it calls the transform."""
    with pytest.raises(ZymaseError) as info:
        caller(*args)
    text = info.value.format()
    line = caller.py_func.__code__.co_firstlineno + line_offset
    assert text.startswith(f"zymase: error: {__file__}:{line}: "), text
    assert f"in function '{caller.py_func.__name__}'" in text and "\n" not in text, text
    for w in words:
        assert w in text, (w, text)


def test_transforms_called_from_njit_code_name_the_call_site_of_their_errors():
    # issue 25 (session 25 item 2): grad, value_and_grad, hessian and hvp typed inside
    # njit code name the njit function that calls them and the line, as jvp does; typing
    # errors only, no kernel is compiled
    ints = np.arange(3)
    value_and_grad = zymase.value_and_grad(energy)

    @njit
    def descent(x):
        return x - 0.1 * grad_energy(x, C)

    @njit
    def loss_and_slope(x):
        return value_and_grad(x, C)

    @njit
    def newton(x):
        return hess_energy(x, C)

    @njit
    def curvature_along(x, v):
        return hvp_energy(x, C, v)

    _names_call_site(descent, (ints,), 2, "argument 0 ('x')", "int64", "integers are constant")
    _names_call_site(loss_and_slope, (ints,), 2, "argument 0 ('x')", "int64")
    _names_call_site(newton, (ints,), 2, "argument 0 ('x')", "int64")
    _names_call_site(curvature_along, (X, 1.0), 2, "hvp's vector for argument 0 ('x')", "float64")


def test_transforms_called_from_njit_code_with_the_wrong_number_of_arguments():
    # session 26: Numba's TypingError ("Cannot bind ... to signature", naming only the
    # generated trampoline, with its traceback) before; now one zymase error naming the
    # transform, the function, both counts and the call site; typing errors only
    @njit
    def too_many(x):
        return grad_energy(x, C, 1.0)

    @njit
    def too_few(x):
        return hvp_energy(x, C)

    @njit
    def none(x):
        return hess_energy()

    _names_call_site(too_many, (X,), 2, "grad of 'energy' takes 2 arguments (x, c)", "got 3 arguments",
                     "too many positional arguments")
    _names_call_site(too_few, (X,), 2, "hvp of 'energy' takes 3 arguments", "got 2 arguments",
                     "missing a required argument")
    _names_call_site(none, (X,), 2, "hessian of 'energy' takes 2 arguments", "got 0 arguments")


def test_hvp_called_from_njit_code_refuses_a_vector_of_another_shape():
    # a run-time check in glue every caller at these types shares: one zymase error
    # naming the transform and the argument (it was a bare ValueError)
    with pytest.raises(ZymaseError) as info:
        curvature(X, C, V[:3])
    text = info.value.format()
    assert text.startswith("zymase: error: hvp(energy) inside njit code: its vector differs in shape from "
                           "argument 0 ('x'); hint: "), text


@njit
def weighted_hvps(x, c, v):
    s = np.zeros_like(x)
    for r in range(3):  # the hvp kernel, inlined into a loop: its tapes are reset at each call
        s += (r + 1) * hvp_energy(x, c, v)
    return s


def test_forward_mode_over_hvp_calls_in_a_loop():
    # item 1: forward over forward over reverse; the tangent of the inner gradient's tape
    # was not reset with the tape between calls (read from the previous call's block),
    # which gave wrong third derivatives and was refused until the engine reset it
    out, dout = zymase.jvp(weighted_hvps, (X, C, V), (V, 0.0, None))
    np.testing.assert_allclose(out, 6 * hessian_closed(X, C) @ V, rtol=1e-13)
    want = 6 * np.einsum("ijk,j,k->i", third_closed(X, C), V, V)
    np.testing.assert_allclose(dout, want, rtol=1e-12, atol=1e-12)


@njit
def slope_and_curvature(x, c, v):
    return np.sum(grad_energy(x, c) * v) + np.sum(hvp_energy(x, c, v) ** 2)


def test_forward_mode_over_njit_code_calling_grad_and_hvp_of_one_function():
    # session 26: both kernels' sources bring energy's Numba function, and linking the
    # second into the first was refused ("Linking globals named '_ZN...energy...': symbol
    # multiply defined", with a hint to report it); one definition is kept now
    hv = hessian_closed(X, C) @ V
    g = np.array([_phi(v, C, 1) for v in X])
    g[:-1] += 2 * C * X[:-1] * X[1:]
    g[1:] += C * X[:-1] ** 2
    out, dout = zymase.jvp(slope_and_curvature, (X, C, V), (V, 0.0, None))
    assert out == pytest.approx(np.sum(g * V) + np.sum(hv ** 2), rel=1e-13)
    want = V @ hv + 2 * np.einsum("abi,a,b,i->", third_closed(X, C), hv, V, V)
    assert dout == pytest.approx(want, rel=1e-12)
