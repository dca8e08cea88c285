"""Reverse of counted stablehlo.while loops (lax.scan, lax.fori_loop) with stored
residuals: the loop that computes the primal also stores, per iteration, the body values
the adjoint needs that cost more to recompute than to store (issue 28, performance:
the LSTM's reverse re-ran each body from the taped loop state). Exact against jax.grad."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import zymase.jax as zj  # noqa: E402
from zymase.autodiff.rules import stablehlo_scan  # noqa: E402
from zymase.frontends import jax as front  # noqa: E402
from zymase.ir import parse_mlir  # noqa: E402
from zymase.ir import stablehlo as hlo  # noqa: E402


def _derivative(f, *args, active=None):
    leaves, tree = jax.tree_util.tree_flatten(args)
    text = front.derivative_module(f, leaves, tree, "reverse", active or [True] * len(leaves))
    main = next(op for op in parse_mlir(text).ops if op.sym_name.data == "main")
    return [op for op in main.body.blocks[0].ops if isinstance(op, hlo.WhileOp)]


def _op_names(op) -> set[str]:
    return {inner.name for inner in op.walk() if inner is not op}


def _sin_recurrence(x, w):
    # u starts active and its result is dropped; z starts constant and becomes active
    def step(carry, _):
        v, u, z = carry
        return (jnp.sin(v) * w + v ** 2 * 0.1 + 0.1 * u + 0.01 * z, u * 0.9 + 0.05 * v, z + v * v), None

    v, _, _ = lax.scan(step, (x, 2 * x, jnp.zeros_like(x)), None, length=6)[0]
    return jnp.sum(v)


# issue 28 performance, item 1: a transcendental the adjoint needs is stored by the loop
# that computes the primal, not recomputed in the reverse loop; the primal loop is that
# loop (two loops in all, not a primal, a recording copy and a reverse loop)
def test_scan_stores_transcendental_residuals_instead_of_rerunning_the_body():
    x = jnp.asarray(np.linspace(0.1, 0.9, 4))
    w = jnp.asarray(np.linspace(1.2, 0.3, 4))
    loops = _derivative(_sin_recurrence, x, w)
    assert len(loops) == 2
    recording, reverse = loops
    assert "stablehlo.sine" in _op_names(recording) and "stablehlo.dynamic_update_slice" in _op_names(recording)
    assert "stablehlo.sine" not in _op_names(reverse)  # read back, not recomputed
    got = zj.grad(_sin_recurrence, argnums=(0, 1))(x, w)
    want = jax.jit(jax.grad(_sin_recurrence, argnums=(0, 1)))(x, w)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=1e-13)


def _lstm(w, seq):
    """An LSTM cell over a sequence (lax.scan), with a counted inner refinement loop
    (lax.fori_loop) and a branch (lax.cond) in the body."""
    h = seq.shape[1]

    def cell(carry, x):
        hid, c = carry
        z = jnp.concatenate([x, hid]) @ w
        i, f, o, g = jnp.split(z, 4)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        c = lax.fori_loop(0, 2, lambda _, u: u - 0.1 * jnp.sin(u), c)
        hid = jax.nn.sigmoid(o) * jnp.tanh(c)
        hid = lax.cond(jnp.sum(hid) > 0, lambda v: v * jnp.exp(-v * v), lambda v: v * 0.5, hid)
        return (hid, c), jnp.sum(hid ** 2)

    _, out = lax.scan(cell, (jnp.zeros(h), jnp.zeros(h)), seq)
    return jnp.sum(out)


# item 1: the residuals of a body with a matrix product, gates, a nested counted loop and
# a branch, against jax.grad
def test_lstm_scan_with_nested_loop_and_branch_matches_jax_grad():
    rng = np.random.default_rng(5)
    w = jnp.asarray(rng.normal(0, 0.4, (8, 16)))
    seq = jnp.asarray(rng.normal(size=(5, 4)))
    got = zj.grad(_lstm, argnums=(0, 1))(w, seq)
    want = jax.jit(jax.grad(_lstm, argnums=(0, 1)))(w, seq)
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=1e-11, atol=1e-14)


def _tanh_recurrence(x):
    return jnp.sum(lax.fori_loop(0, 5, lambda _, v: jnp.tanh(v) * 1.5 + 0.1 * v, x))


# item 1, the cost rule's other side: residuals over the memory budget are not stored; the
# reverse loop recomputes each body run from the stored loop state instead
def test_residuals_over_the_budget_fall_back_to_recomputing_the_body(monkeypatch):
    monkeypatch.setattr(stablehlo_scan, "RESIDUAL_BUDGET_BYTES", 0)
    x = jnp.asarray(np.linspace(-1.0, 1.0, 3))
    loops = _derivative(_tanh_recurrence, x)
    assert "stablehlo.tanh" in _op_names(loops[-1])
    np.testing.assert_allclose(zj.grad(_tanh_recurrence)(x), jax.grad(_tanh_recurrence)(x), rtol=1e-13)


def _over_constant_sequence(x, xs):
    return jnp.sum(lax.scan(lambda v, row: (jnp.tanh(v * row), None), x, xs)[0])


# item 1: the scanned sequence is constant, so its adjoint (the whole sequence, updated in
# every reverse iteration) is not computed at all
def test_constant_scanned_sequence_gets_no_adjoint_in_the_reverse_loop():
    x = jnp.asarray(np.linspace(0.5, 1.5, 3))
    xs = jnp.asarray(np.linspace(-1.0, 1.0, 12).reshape(4, 3))
    reverse = _derivative(_over_constant_sequence, x, xs, active=[True, False])[-1]
    assert "stablehlo.dynamic_update_slice" not in _op_names(reverse)
    np.testing.assert_allclose(zj.grad(_over_constant_sequence)(x, xs), jax.grad(_over_constant_sequence)(x, xs),
                               rtol=1e-13)



def _stacked_outputs(x, reverse):
    def step(v, _):
        v = jnp.tanh(v * 1.3 + 0.2)
        return v, jnp.sin(v) * v
    ys = lax.scan(step, x, None, length=5, reverse=reverse)[1]
    return jnp.sum(ys * jnp.arange(1.0, 6.0)[:, None])


def _rows_of_an_active_buffer(x, buf):
    # the initial buffer's adjoint is wanted: the rows the loop overwrites get none
    return jnp.sum(lax.fori_loop(0, 2, lambda i, b: b.at[i].set(jnp.sin(b[i + 1]) * x), buf) ** 2)


# issue 28 performance: scan's stacked outputs are written once per row and never read by
# the body, so their adjoint passes through the reverse loop unchanged (zeroing the row
# read each iteration cost XLA two copies of the whole adjoint per iteration: ADBench LSTM);
# forward and reversed scans; an active buffer whose rows are overwritten keeps the zeroing
@pytest.mark.parametrize("reverse", [False, True])
def test_stacked_outputs_adjoint_passes_through_the_reverse_loop(reverse):
    x = jnp.asarray(np.linspace(-0.5, 0.7, 3))
    f = lambda x: _stacked_outputs(x, reverse)  # noqa: E731
    assert "stablehlo.dynamic_update_slice" not in _op_names(_derivative(f, x)[-1])
    np.testing.assert_allclose(zj.grad(f)(x), jax.jit(jax.grad(f))(x), rtol=1e-13)


def test_overwritten_rows_of_an_active_buffer_get_no_adjoint():
    x, buf = jnp.asarray(0.7), jnp.asarray(np.linspace(-1.0, 1.0, 12).reshape(4, 3))
    assert "stablehlo.dynamic_update_slice" in _op_names(_derivative(_rows_of_an_active_buffer, x, buf)[-1])
    got = zj.grad(_rows_of_an_active_buffer, argnums=(0, 1))(x, buf)
    want = jax.jit(jax.grad(_rows_of_an_active_buffer, argnums=(0, 1)))(x, buf)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13)


def _gated(w, seq):
    """An LSTM-like gate: jax.nn.sigmoid has a custom_jvp rule whose jvp function computes
    1 / (1 + exp(-x)) again."""
    def step(h, x):
        gate = jax.nn.sigmoid(h * w[0] + x)
        return gate * jnp.tanh(h * w[1]) + (1 - gate) * h, None

    return jnp.sum(lax.scan(step, jnp.zeros_like(w[0]), seq)[0] ** 2)


# issue 28 performance, item 3 (session 27): the sigmoid rule's recomputation of the
# primal's 1 / (1 + exp(-x)) is merged with the body copy's before the plan, so the
# forward loop stores the quotient and the reverse loop reads it; it stored exp(-x) and
# divided again in every reverse iteration (ADBench LSTM's reverse body: 16 XLA kernels,
# 10 after, JAX's 8)
def test_reverse_loop_reads_the_stored_sigmoid_instead_of_dividing_again():
    w = jnp.asarray(np.linspace(0.3, 0.9, 6).reshape(2, 3))
    seq = jnp.asarray(np.random.default_rng(4).normal(size=(5, 3)))
    recording, reverse = _derivative(_gated, w, seq, active=[True, False])
    assert "stablehlo.divide" in _op_names(recording)
    assert "stablehlo.divide" not in _op_names(reverse) and "stablehlo.exponential" not in _op_names(reverse)
    got = zj.grad(_gated)(w, seq)
    want = jax.jit(jax.grad(_gated))(w, seq)
    np.testing.assert_allclose(got, want, rtol=1e-13)
