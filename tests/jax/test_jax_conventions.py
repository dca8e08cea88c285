"""zymase agrees with jax.grad / jax.jvp where a derivative is a convention (issue 28
item 4 of session 24): ties of ``maximum``/``minimum`` (and so of ``jnp.clip``) share
the derivative equally, as JAX's rule does; ``jnp.max`` ties, ``sort``, ``argmax``
indexing and ``abs`` at zero; ``x ** y`` at a zero base; and IEEE arithmetic kept in derivative code, so that a NaN
JAX computes (``logaddexp(log(0 x), x)``, ``norm(0 x)``) is not rewritten into a
finite number by ``x * 0 -> 0`` nor by ``pad(u, 0) * w -> pad(u * slice(w), 0)``.

Every case has inputs of its own and all run as one program (one XLA compilation per
mode), so a mismatch names its case."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import zymase.jax as zj  # noqa: E402

# ties at 2.0 and at signed zeros
X = np.array([1.0, 2.0, 2.0, -0.0, 0.0, 3.0])

CASES = {
    "maximum_tie": lambda x: jnp.maximum(x, 2.0) + 3.0 * jnp.maximum(x, x[::-1]),
    "minimum_tie": lambda x: jnp.minimum(x, 0.0) + jnp.minimum(x[::-1], x) * x,
    "clip_ties": lambda x: jnp.clip(x, 1.0, 2.0) + jnp.clip(x, 0.0),
    "lax_max_min": lambda x: lax.max(x, jnp.full_like(x, 2.0)) * lax.min(x, jnp.ones_like(x) * 3.0),
    "clamp": lambda x: lax.clamp(x[::-1], x, 0.5 * x + 0.5),  # lo > hi in places, ties
    "reduce_max_ties": lambda x: jnp.max(x) + jnp.min(jnp.abs(x)),
    "sort": lambda x: jnp.sort(x) * jnp.arange(6.0),
    "argmax": lambda x: x[jnp.argmax(x[:3])] * x,
    "abs_zero": lambda x: jnp.abs(x) * 2.0,
    "relu": lambda x: jax.nn.relu(x - 2.0),
    "logaddexp_of_log_zero": lambda x: jnp.logaddexp(jnp.log(0.0 * x), x),
    "norm_of_zero": lambda x: jnp.linalg.norm(0.0 * x),
    # the adjoint of the slice is a zero pad times the weights: NaN where they are not
    # finite (0 * inf), not a zero (the rewrite pad(u, 0) * w -> pad(u * slice(w), 0))
    # x ** y at x = 0: JAX's exponent partial takes log(0) as 0 (x ** y is 0 for every y >
    # 0), not 0 * log(0) = NaN (session 33)
    "power_zero_base": lambda x: jnp.power(x * (x < 1.5), x + 2.0),
    "padded_product_of_inf": lambda x: _window_twice(x * jnp.array([1.0, 2.0, 3.0, np.inf, np.nan, 4.0])),
}


def _window_twice(c):
    """Two uses of one window of ``c`` (so the slice is not pushed into ``c`` before
    differentiation, and its adjoint is one zero pad)."""
    return jnp.sum(jnp.sin(c[0:2])) + jnp.sum(c[0:2] ** 2)

NAMES = sorted(CASES)


def _all(xs):
    return tuple(CASES[n](x) for n, x in zip(NAMES, xs))


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return tuple(jnp.asarray(X if seed == 0 else rng.uniform(-1, 1, X.shape)) for _ in NAMES)


def _check(got, want):
    bad = [f"{n}: zymase {np.asarray(g)} != jax {np.asarray(w)}" for n, g, w in zip(NAMES, got, want)
           if not np.allclose(np.asarray(g), np.asarray(w), rtol=1e-13, atol=0, equal_nan=True)]
    assert not bad, "\n".join(bad)


# session 24, issue 28 item 4: reverse mode
def test_reverse_follows_jax_at_ties_and_keeps_jax_nans():
    xs = _inputs(0)
    weights = tuple(jnp.asarray(np.random.default_rng(k).uniform(0.5, 1.5, np.shape(o)))
                    for k, o in enumerate(_all(xs)))
    _, pullback = zj.vjp(_all, xs)
    (got,) = pullback(weights)
    (want,) = jax.jit(lambda a, w: jax.vjp(_all, a)[1](w))(xs, weights)
    _check(got, want)


# session 24, issue 28 item 4: forward mode
def test_forward_follows_jax_at_ties_and_keeps_jax_nans():
    xs, tangents = _inputs(0), _inputs(1)
    _, got = zj.jvp(_all, (xs,), (tangents,))
    _, want = jax.jit(lambda a, t: jax.jvp(_all, (a,), (t,)))(xs, tangents)
    _check(got, want)
