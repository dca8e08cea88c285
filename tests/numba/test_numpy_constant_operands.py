"""NumPy library calls with one operand differentiated and the other constant.

Guards issue 23 item 3: ``grad(f, argnums=0)`` of ``np.sum(np.outer(y, x))`` crashed
the process. Numba keeps each array's descriptor in a stack slot; the constant
operand's slot only ever holds constant pointers, but the pointer read back from it
was taken as differentiated, with the null shadow its slot held, and the reverse
sweep added adjoints through null. Every argnums combination of a few NumPy-heavy
functions is checked against central differences; a construct zymase cannot
differentiate must be a ZymaseError, never a crash.
"""

import subprocess
import sys

import numpy as np
import pytest
from njit_fd import assert_close, copy_args, fd_grad
from numba import njit

import zymase
from zymase.errors import ZymaseError


@njit
def outer_sum(x, y):
    return np.sum(np.outer(y, x))


@njit
def outer_squares(x, y):
    m = np.outer(x, y)
    return np.sum(m * m)


@njit
def dot_1d(x, y):
    return np.dot(x, y) * np.dot(x, x)


@njit
def column_sums(a, w):
    return np.sum(np.sum(a, axis=0) * w)


@njit
def scaled_copy(x, y):
    z = y * 2.0 + x
    return np.sum(z * z)


@njit
def matvec(a, x):
    return np.sum(a @ x)


RNG = np.random.default_rng(3)
X3 = RNG.standard_normal(3)
Y2 = RNG.standard_normal(2)
A23 = RNG.standard_normal((2, 3))

CASES = {
    "outer_sum": (outer_sum, (X3, Y2)),
    "outer_squares": (outer_squares, (X3, Y2)),
    "dot_1d": (dot_1d, (X3, X3[::-1].copy())),
    "column_sums": (column_sums, (A23, X3)),
    "scaled_copy": (scaled_copy, (X3, X3 + 1.0)),
}


# argnums in reverse order, (1, 0), is checked on one case: it reorders the results of
# the (0, 1) kernel (the suite's time)
@pytest.mark.parametrize("name,argnums", [(n, a) for n in sorted(CASES) for a in (0, 1, (0, 1))]
                         + [("outer_sum", (1, 0))])
def test_grad_with_a_constant_operand(name, argnums):
    f, args = CASES[name]
    got = zymase.grad(f, argnums=argnums)(*copy_args(args))
    if isinstance(argnums, int):
        want = fd_grad(f.py_func, args, argnums)
    else:
        want = tuple(fd_grad(f.py_func, args, i) for i in argnums)
    assert_close(got, want, 1e-6, what=f"{name} argnums={argnums}")


# vjp and jvp on two of the cases (the crash's own and a cheap one): grad above covers
# every case with each operand constant (the suite's time)
@pytest.mark.parametrize("name", ["outer_sum", "scaled_copy"])
def test_vjp_and_jvp_with_a_constant_operand(name):
    f, args = CASES[name]
    _, vjp_fn = zymase.vjp(f, *copy_args(args))
    assert_close(vjp_fn(1.0), tuple(fd_grad(f.py_func, args, i) for i in range(2)), 1e-6, what=name)
    for i in range(2):
        t = [None, None]
        t[i] = np.ones_like(args[i])
        _, tangent = zymase.jvp(f, copy_args(args), tuple(t))
        assert tangent == pytest.approx(np.sum(fd_grad(f.py_func, args, i)), rel=1e-6)


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_blas_matrix_product_with_either_operand_constant(argnums):
    # '@' on a 2-D array calls Numba's BLAS helper numba_xxgemv, differentiated at the
    # level of the call (issue 26 item 3): whichever operand is differentiated, the other
    # is constant (its shadow is NULL in the rule's runtime)
    got = zymase.grad(matvec, argnums=argnums)(A23.copy(), X3.copy())
    got = got if isinstance(got, tuple) else (got,)
    which = argnums if isinstance(argnums, tuple) else (argnums,)
    assert_close(got, tuple(fd_grad(matvec.py_func, (A23, X3), i) for i in which), 1e-6, what="matvec")


# reverse mode on every case, forward mode on two (the suite's time)
@pytest.mark.parametrize("name,mode", [(n, "autodiff") for n in sorted(CASES)]
                         + [("outer_sum", "fwddiff"), ("column_sums", "fwddiff")])
def test_enzyme_style_const_operand_is_right_or_refused(name, mode):
    # with an explicit Const the operand cannot be promoted: a right derivative or an
    # error naming that argument, never a crash or a wrong number
    f, args = CASES[name]
    names = f.py_func.__code__.co_varnames
    for i in range(2):
        a = list(copy_args(args))
        d = np.ones_like(a[i]) if mode == "fwddiff" else np.zeros_like(a[i])
        wrapped = [zymase.Const(v) for v in a]
        wrapped[i] = zymase.Duplicated(a[i], d)
        try:
            out = getattr(zymase, mode)(f, *wrapped)
        except ZymaseError as err:
            assert f"('{names[1 - i]}')" in err.format(), err.format()
            continue
        want = fd_grad(f.py_func, args, i)
        if mode == "fwddiff":
            assert out == pytest.approx(np.sum(want), rel=1e-6)
        else:
            assert_close(d, want, 1e-6, what=f"{name} d{names[i]}")


_PRIMAL_FIRST = r"""
import numpy as np, numba, zymase

@numba.njit
def user_matvec(a, x):          # the user's own function, compiled by Numba at -O3 first
    return a @ x

@numba.njit
def loss(a, x):
    return np.sum(a @ x)

a, x = np.arange(6.0).reshape(2, 3), np.array([0.5, -1.0, 2.0])
user_matvec(a, x)
g = zymase.grad(loss, argnums=0)(a, x)
assert np.array_equal(g, np.vstack([x, x])), g
print("ok")
"""


def test_grad_after_the_user_compiled_the_same_numpy_helpers():
    # Numba caches the subroutines of '@' (and array allocation) on its target context;
    # when the user's code had compiled them first (-O3, NRT helpers only declared), the
    # private copy linked that library and the kernel called address 0 (a segfault that
    # showed only when another test had used '@' first in the same process). A fresh
    # process makes the order certain.
    run = subprocess.run([sys.executable, "-c", _PRIMAL_FIRST], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and run.stdout.strip() == "ok", (run.returncode, run.stdout, run.stderr[-2000:])
