"""``jax.lax.custom_linear_solve`` (under ``jnp.linalg.solve``, ``inv``, the jvp of
``slogdet``) differentiated as JAX's rule does (``frontends/jax_linear_solve``, the
``@zymase.linear_solve`` marker): the right-hand side's cotangent is the transposed
solve with the same LU factors, its permutation inverted by a sort and applied by a
gather (zymase's own adjoint of the solve's ``b[perm]`` was a scatter-add, unfused by
XLA), and the primal solves once. The derivative programs' structure, then the numbers
against ``jax.grad`` / ``jax.jvp``: b a vector or a matrix, a batch of matrices, float32
and float64, the solve inside a scan, users' ``custom_linear_solve`` with and without
``transpose_solve``. One XLA program per mode for the numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import zymase.jax as zj  # noqa: E402
from zymase.frontends import jax as front  # noqa: E402
from zymase.ir import parse_mlir  # noqa: E402
from zymase.ir import stablehlo as hlo  # noqa: E402

TOL = {np.float32: dict(rtol=2e-4, atol=2e-5), np.float64: dict(rtol=1e-11, atol=1e-12)}


def _solve_loss(a, b):
    return jnp.sum(jnp.sin(jnp.linalg.solve(a, b)))


def _text(f, args, mode, active):
    leaves, tree = jax.tree_util.tree_flatten(tuple(args))
    return front.derivative_module(f, leaves, tree, mode, active)


def _float_scatters(text) -> int:
    """Scatters of float values (the permutation's adjoint; the pivots' row swaps that
    build the permutation are integer scatters)."""
    return sum(isinstance(op, hlo.ScatterOp) and hlo.is_float_tensor(op.results[0].type)
               for op in parse_mlir(text).walk())


def _transposed_trsm(text):
    return sum('trans_x = 84' in line for line in text.splitlines() if 'lapack_dtrsm_ffi' in line)


@pytest.fixture(scope="module")
def system():
    rng = np.random.default_rng(3)
    a = jnp.asarray(rng.normal(size=(5, 5)) + 2 * np.eye(5)[::-1])  # row swaps
    return a, jnp.asarray(rng.normal(size=5))


def test_reverse_solves_the_transposed_system_with_the_same_factors(system):
    text = _text(_solve_loss, system, "reverse", [True, True])
    assert _float_scatters(text) == 0  # the permutation's adjoint is a gather
    assert text.count('"stablehlo.sort"') == 1  # the permutation inverted, as transpose_solve does
    assert text.count('lapack_dgetrf_ffi') == 1
    # the primal solve (two trsm) and the transposed one (two, transposed); the residual
    # of the implicit form is not solved in the primal
    assert text.count('lapack_dtrsm_ffi') == 4 and _transposed_trsm(text) == 2
    assert "zymase." not in text  # no marker left for XLA


def test_forward_solves_the_tangent_system_once(system):
    text = _text(_solve_loss, system, "forward", [True, True])
    assert text.count('lapack_dtrsm_ffi') == 4 and _transposed_trsm(text) == 0
    assert "zymase." not in text


def _logdet(a):
    return jnp.linalg.slogdet(a)[1]


def test_slogdet_solves_the_transposed_system(system):
    """slogdet's custom_jvp rule solves with the tangent: the marker inside the rule's
    function is carried into the transposed rule (reverse) and into the inlined rule
    (forward, where it is the solve's value)."""
    a = system[0]
    text = _text(_logdet, (a,), "reverse", [True])
    assert _float_scatters(text) == 0 and "zymase." not in text
    assert _transposed_trsm(text) == 2
    np.testing.assert_allclose(zj.grad(_logdet)(a), jax.grad(_logdet)(a), rtol=1e-12, atol=1e-13)
    t = jnp.asarray(np.random.default_rng(6).normal(size=a.shape))
    np.testing.assert_allclose(zj.jvp(_logdet, (a,), (t,))[1], jax.jvp(_logdet, (a,), (t,))[1], rtol=1e-12)


def _diagonal_solve(d, b, transpose: bool):
    """A user's custom_linear_solve with a diagonal matrix (with or without transpose_solve)."""
    kwargs = dict(transpose_solve=lambda mv, r: r / d) if transpose else {}
    return lax.custom_linear_solve(lambda x: d * x, b, lambda mv, r: r / d, **kwargs)


def _scanned(a, bs):
    def step(carry, b):
        x = jnp.linalg.solve(a, b + carry)
        return jnp.tanh(x), x

    return lax.scan(step, jnp.zeros(bs.shape[1:], bs.dtype), bs)


def _program(inputs, reverse=False):
    """float64: b a vector and a matrix, a scan, a user's solve (JAX refuses reverse mode
    of one without transpose_solve); float32: a batch of matrices. (slogdet's and inv's
    numbers: test_factorization_rules.)"""
    (a, b_vec, b_mat, d), (batch_a, batch_b) = inputs
    out = dict(vector=jnp.linalg.solve(a, b_vec), matrix=jnp.linalg.solve(a, b_mat),
               scanned=_scanned(a, b_mat.T), user=_diagonal_solve(d, b_vec, True),
               batched=jnp.linalg.solve(batch_a, batch_b))
    if not reverse:
        out["user_untransposed"] = _diagonal_solve(d, b_vec, False)
    return out


def _inputs(seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(4, 4)) + 2 * np.eye(4)[::-1]  # row swaps
    batch_a = rng.normal(size=(2, 3, 3)) + 3 * np.eye(3)[[2, 0, 1]]
    doubles = (a, rng.normal(size=4), rng.normal(size=(4, 2)), rng.uniform(1, 2, size=4))
    singles = (batch_a, rng.normal(size=(2, 3, 2)))
    return (tuple(jnp.asarray(v, np.float64) for v in doubles), tuple(jnp.asarray(v, np.float32) for v in singles))


def _assert_close(got, want):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), **TOL[np.dtype(w.dtype).type])


def _loss(inputs):
    leaves = jax.tree_util.tree_leaves(_program(inputs, reverse=True))
    return sum(jnp.sum(jnp.cos(x.astype(jnp.float64) + i)) for i, x in enumerate(leaves))


def test_reverse_matches_jax_grad():
    inputs = _inputs(1)
    _assert_close(zj.grad(_loss)(inputs), jax.jit(jax.grad(_loss))(inputs))


def test_forward_matches_jax_jvp():
    inputs, tangents = _inputs(1), _inputs(2)
    value, tangent = zj.jvp(_program, (inputs,), (tangents,))
    want_value, want_tangent = jax.jit(lambda x, t: jax.jvp(_program, (x,), (t,)))(inputs, tangents)
    _assert_close(value, want_value)
    _assert_close(tangent, want_tangent)


def test_reverse_without_transpose_solve_differentiates_the_solve():
    """JAX refuses it; zymase differentiates the solve's own ops: against the closed form."""
    d, b = jnp.asarray([1.5, 2.0, 3.0]), jnp.asarray([0.3, -1.0, 2.0])
    gd, gb = zj.grad(lambda d, b: jnp.sum(jnp.sin(_diagonal_solve(d, b, False))), argnums=(0, 1))(d, b)
    np.testing.assert_allclose(gb, jnp.cos(b / d) / d, rtol=1e-12)
    np.testing.assert_allclose(gd, -jnp.cos(b / d) * b / d ** 2, rtol=1e-12)
