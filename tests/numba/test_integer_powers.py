"""``x ** n`` with a float ``x`` and an integer ``n`` in njit code.

Numba lowers it to ``int_power``, a loop of squarings over the bits of ``n``. The pre-AD
pipeline does not unroll loops, so with ``n = 2`` inlined as a constant the loop stayed
and reverse mode taped every squaring on a growing stack: Rosenbrock's gradient cost
about 400x its primal. The loop is now unrolled before AD when ``n`` is a constant
(``frontends.numba.unroll_integer_powers``); these tests check that the loop is gone
from the code AD sees and that the derivatives stay right, for constant, negative and
run-time exponents, in both precisions and both modes.
"""

import llvmlite.binding as llvm
import numpy as np
import pytest
from njit_fd import assert_close, fd_grad
from numba import njit

import zymase
import zymase.frontends.c as zc


@njit
def rosenbrock(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


@njit
def mixed_powers(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] ** 3 - 0.5 * x[i] ** -2 + x[i] ** 0 + x[i] ** 1
    return s


@njit
def runtime_power(x, n):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] ** n
    return s


@pytest.fixture
def pre_ad_text(monkeypatch):
    seen = []
    orig = zc.differentiate_llvm_ir

    def spy(text, *a, **k):
        seen.append(text)
        return orig(text, *a, **k)

    monkeypatch.setattr(zc, "differentiate_llvm_ir", spy)
    return seen


def _differentiated_body(text: str) -> str:
    """The kernel's status wrapper, which AD differentiates: f is inlined into it (f's
    own definition is discarded once inlined)."""
    mod = llvm.parse_assembly(text)
    return "\n".join(str(f) for f in mod.functions if f.name.endswith(".status") and not f.is_declaration)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_constant_exponent_loop_is_unrolled_before_reverse_mode(pre_ad_text, dtype):
    x = np.linspace(-1.2, 1.3, 9).astype(dtype)
    g = zymase.grad(rosenbrock)(x)
    (text,) = pre_ad_text
    body = _differentiated_body(text)
    assert "fadd" in body, "the objective is in the module handed to AD"
    # int_power halves its exponent each round: a shift left in the code means the loop is too
    assert "lshr" not in body and "ashr" not in body, "the int_power loop reached AD"
    want = fd_grad(rosenbrock.py_func, (x.astype(np.float64),), 0)
    assert_close(g, want, 1e-6 if dtype == np.float64 else 2e-3, what=f"rosenbrock {dtype.__name__}")


def test_negative_zero_and_unit_exponents():
    x = np.linspace(0.4, 1.7, 6)
    g = zymase.grad(mixed_powers)(x)
    want = 3 * x**2 + x**-3 + 1.0
    assert_close(g, want, 1e-12, what="d/dx (x^3 - x^-2 / 2 + x^0 + x^1)")


def test_forward_mode_through_the_unrolled_power():
    x = np.linspace(-0.9, 1.1, 7)
    v = np.cos(np.arange(7.0))
    _, tangent = zymase.jvp(rosenbrock, (x,), (v,))
    want = float(fd_grad(rosenbrock.py_func, (x,), 0) @ v)
    assert abs(tangent - want) <= 1e-6 * max(1.0, abs(want))


@pytest.mark.parametrize("n", [2, 5, -3])
def test_exponent_known_only_at_run_time_keeps_the_loop_and_is_right(n):
    x = np.linspace(0.5, 1.5, 5)
    g = zymase.grad(runtime_power, argnums=0)(x, n)
    assert_close(g, n * x ** (n - 1), 1e-12, what=f"d/dx x^{n}")


@njit
def index_power(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] ** i
    return s


def test_run_time_exponent_prints_no_llvm_warning(capfd):
    # the unroll.full hint zymase puts on int_power's loop cannot be honoured with an
    # exponent known only at run time; LLVM's "loop not unrolled" warning (written to fd 2
    # by LLVM itself, twice: pre-AD and post-AD pipeline) is about zymase's hint, not the
    # user's code, and is not printed (llvm/quiet_hints.py)
    x = np.array([1.5, 2.0, 0.5, 1.2])
    capfd.readouterr()
    g = zymase.grad(index_power, cache=False)(x)
    err = capfd.readouterr().err
    assert "loop not unrolled" not in err, err
    assert_close(g, np.arange(4) * x ** (np.arange(4) - 1.0), 1e-12, what="d/dx x^i")
