"""Users' jax.custom_vjp / jax.custom_jvp rules, applied by zymase as jax.grad / jax.jvp
apply them (issue 28 item 4: honour users' custom rules; before, they were refused).

Every rule here differs from the derivative of its primal (or the primal's derivative is
not finite where the rule's is), so a derivative taken through the primal fails the
comparison with JAX."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.custom_derivatives import SymbolicZero  # noqa: E402

import zymase.jax as zj  # noqa: E402
from zymase.errors import ZymaseError  # noqa: E402


# a straight-through estimator: round forward, identity backward; residuals are a pytree
@jax.custom_vjp
def straight_through_round(x):
    return jnp.round(x)


def _st_fwd(x):
    return jnp.round(x), {"scale": jnp.ones_like(x), "unused": (x, 2.0 * x)}


straight_through_round.defvjp(_st_fwd, lambda res, g: (g * res["scale"],))


# clip_gradient (nondiff_argnums: the bounds are static), a bwd whose fwd keeps no residual
@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x


clip_gradient.defvjp(lambda lo, hi, x: (x, None), lambda lo, hi, _, g: (jnp.clip(g, lo, hi),))


# log(1 + e^x) written naively, with a stable derivative: at x = 800 the primal's own
# derivative is inf/inf = NaN, the rule's is 1
@jax.custom_jvp
def log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))


log1pexp.defjvp(lambda p, t: (log1pexp(p[0]), t[0] * jax.nn.sigmoid(p[0])))


# a primal that stops gradients (zymase marks lax.stop_gradient while it lowers: the marks
# in the primal's copy must go too)
@jax.custom_jvp
def shifted_logsumexp(x):
    m = lax.stop_gradient(jnp.max(x))
    return m + jnp.log(jnp.sum(jnp.exp(x - m)))


shifted_logsumexp.defjvp(lambda p, t: (shifted_logsumexp(p[0]), jnp.sum(jax.nn.softmax(p[0]) * t[0])))


# nondiff_argnums holding a function (JAX's documented use)
@partial(jax.custom_jvp, nondiff_argnums=(0,))
def apply_scaled(f, x):
    return f(x)


apply_scaled.defjvp(lambda f, p, t: (apply_scaled(f, p[0]), 3.0 * t[0]))


# nondiff_argnums holding an array traced in the function: the rule closes over it
@partial(jax.custom_jvp, nondiff_argnums=(0,))
def weighted_sin(k, x):
    return jnp.sin(x) * k


weighted_sin.defjvp(lambda k, p, t: (weighted_sin(k, p[0]), 3.0 * t[0] * k))


X = jnp.asarray([0.3, -1.2, 2.6])
W = jnp.asarray([1.5, 0.7, -0.4])


def _close(a, b):
    for u, v in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-14)


# item 4: custom_vjp rules (straight-through, clip_gradient with nondiff_argnums) in
# reverse mode, through zymase.jax.grad and through jax.grad of zymase.jax.jit inside
# jax.jit; forward mode is refused by name, as JAX refuses it
def test_custom_vjp_rules_replace_the_derivative_in_reverse_mode():
    def f(x, w):
        return jnp.sum(straight_through_round(x * w) * w) + jnp.sum(clip_gradient(-0.5, 0.5, x) ** 2 * w)

    expected = jax.grad(f, argnums=(0, 1))(X, W)
    assert not np.allclose(expected[0], 2 * X * W)  # the rules matter here
    _close(zj.grad(f, argnums=(0, 1))(X, W), expected)
    _close(jax.jit(jax.grad(zj.jit(f), argnums=(0, 1)))(X, W), expected)
    with pytest.raises(ZymaseError) as info:
        zj.jvp(f, (X, W), (W, X))
    text = info.value.format()
    assert "'straight_through_round' has a jax.custom_vjp rule (defined at " in text
    assert "no forward mode" in text and "function 'test_custom_vjp_rules_replace" in text
    assert text.startswith(f"zymase: error: {__file__}:") and "\n" not in text


# item 4: a custom_jvp rule (a stabilized log1pexp; nondiff_argnums holding a function and
# a traced array, whose derivative JAX takes as zero; a primal with stop_gradient): forward
# mode runs the rule, reverse mode transposes its tangent part
def test_custom_jvp_rule_in_forward_and_reverse_mode():
    x = jnp.asarray([0.3, -1.2, 800.0])

    def f(x, w):
        return (jnp.sum(log1pexp(x) * w) + jnp.sum(apply_scaled(jnp.sin, x) * x) + jnp.sum(weighted_sin(w, x))
                + shifted_logsumexp(w * x[:2].sum()))

    expected = jax.grad(f, argnums=(0, 1))(x, W)
    assert np.isfinite(expected[0]).all()
    _close(zj.grad(f, argnums=(0, 1))(x, W), expected)
    _close(zj.jvp(f, (x, W), (W, x)), jax.jvp(f, (x, W), (W, x)))


# item 4: rules inside a lax.scan body (reverse through the scan's stored residuals,
# forward through the body) and inside a jitted helper
def test_custom_rules_inside_a_scan_body():
    def f(xs, w):
        def body(c, r):
            return c * 0.9 + log1pexp(straight_through_round(r * c) * w[0]), c

        return jnp.sum(lax.scan(body, 0.5, xs)[1])

    _close(zj.grad(f, argnums=(0, 1))(X, W), jax.grad(f, argnums=(0, 1))(X, W))

    def g(xs):
        return jnp.sum(lax.scan(lambda c, r: (c * 0.9 + jax.jit(log1pexp)(r * c), c), 0.5, xs)[1])

    _close(zj.jvp(g, (X,), (W,)), jax.jvp(g, (X,), (W,)))


# item 4: a rule inside a lax.while_loop, which JAX cannot reverse: zymase's reverse mode
# (the loop recomputed) against jax.jvp, one direction
def test_custom_rule_inside_a_while_loop_reverse_against_jax_forward():
    def f(x):
        return jnp.sum(lax.while_loop(lambda s: s[1] < 3, lambda s: (log1pexp(s[0] * 1.1), s[1] + 1), (x, 0))[0])

    np.testing.assert_allclose(jnp.vdot(zj.grad(f)(X), W), jax.jvp(f, (X,), (W,))[1], rtol=1e-12)


# item 4: symbolic_zeros=True rules get every input as perturbed and zero cotangents /
# tangents as arrays of zeros, which JAX also passes when it instantiates them
@jax.custom_vjp
def _pair(x, y):
    return x * y, jnp.sin(x)


def _pair_bwd(res, cts):
    x, y = res
    a, b = (jnp.zeros_like(x) if isinstance(c, SymbolicZero) else c for c in cts)
    return a * y + 3.0 * b * jnp.cos(x), a * x


_pair.defvjp(lambda x, y: ((x.value * y.value, jnp.sin(x.value)), (x.value, y.value)), _pair_bwd,
             symbolic_zeros=True)


@jax.custom_jvp
def _product(x, y):
    return x * y


def _product_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = jnp.zeros_like(x)
    if not isinstance(tx, SymbolicZero):
        out = out + 2.0 * tx * y
    if not isinstance(ty, SymbolicZero):
        out = out + ty * x
    return x * y, out


_product.defjvp(_product_jvp, symbolic_zeros=True)


def test_symbolic_zero_rules_get_materialized_zeros():
    def f(x, w):
        return jnp.sum(_pair(x, w)[0]) + jnp.sum(_product(x, W) * w)

    _close(zj.grad(f, argnums=(0, 1))(X, W), jax.grad(f, argnums=(0, 1))(X, W))


# item 4: JAX's own functions with custom rules now use them too, so zymase agrees with
# jax.grad at their kinks and ties: logaddexp(x, y) at x == y is smooth with derivative
# 1/2, but its primal goes through max, whose derivative at the tie gave -1/2 here
def test_jax_library_rules_are_applied_as_jax_applies_them():
    x = jnp.asarray([0.0, -1.0, 2.0, 5.0])
    c = jnp.arange(1.0, 5.0)

    def f(x):
        return (jnp.sum(jnp.logaddexp(x, jnp.asarray([0.0, -1.0, 3.0, 1.0])) * c)
                + jnp.sum(jax.nn.relu(x) * c) + jnp.sum(jax.nn.log_softmax(x) * c))

    _close(zj.grad(f)(x), jax.grad(f)(x))
    _close(zj.jvp(f, (x,), (c,)), jax.jvp(f, (x,), (c,)))


# item 4: a rule that closes over a value computed in the function: the value is an operand
# of the call (JAX closure-converts it), passed to the rule as such; differentiating with
# respect to it is refused (the rule says nothing about it), and so is a rule closing over
# a value the custom function does not take at all
def test_rules_closing_over_traced_values():
    def f(x, w):
        @jax.custom_jvp
        def scaled_sin(x):
            return jnp.sin(x) * w

        scaled_sin.defjvp(lambda p, t: (scaled_sin(p[0]), 2.0 * jnp.cos(p[0]) * w * t[0]))
        return jnp.sum(scaled_sin(x))

    _close(zj.grad(f)(X, W), 2.0 * jnp.cos(X) * W)  # the rule's derivative, w held constant
    with pytest.raises(ZymaseError) as info:
        zj.grad(f, argnums=(0, 1))(X, W)
    text = info.value.format()
    assert "'scaled_sin' has a jax.custom_jvp rule (defined at " in text and "closes over" in text
    assert "function 'test_rules_closing_over_traced_values.<locals>.f'" in text
    assert "hint:" in text and "\n" not in text

    def g(x, w):
        v = 2.0 * w

        @jax.custom_vjp
        def sin_(x):
            return jnp.sin(x)

        sin_.defvjp(lambda x: (sin_(x), x), lambda r, c: (c * jnp.cos(r) * v,))
        return jnp.sum(sin_(x))

    with pytest.raises(ZymaseError, match="the jax.custom_vjp rule of 'sin_' .* closes over a value computed in "
                                          "the function that the custom function does not take as an argument"):
        zj.grad(g)(X, W)
