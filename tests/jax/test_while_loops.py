"""Reverse and forward mode of stablehlo.while (issue 28 item 2: JAX itself refuses
reverse mode of lax.while_loop; zymase reverses it by recomputing loop states)."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import zymase.jax as zj  # noqa: E402
from zymase.autodiff import hlo as hlo_ad  # noqa: E402
from zymase.errors import ZymaseError  # noqa: E402
from zymase.ir import parse_mlir  # noqa: E402


def newton_sqrt(a):
    """sqrt(a) by Newton's iteration, run until converged (a data-dependent trip count)."""
    def cond(state):
        return jnp.abs(state[0] * state[0] - a) > 1e-12 * a

    def body(state):
        return 0.5 * (state[0] + a / state[0]), state[1] + 1

    return lax.while_loop(cond, body, (a, 0))[0]


def test_reverse_of_newton_while_loop_matches_closed_form():
    with pytest.raises(ValueError):  # what zymase adds: JAX cannot do this
        jax.grad(newton_sqrt)(2.0)
    for a in (2.0, 0.25, 30.0):
        np.testing.assert_allclose(zj.grad(newton_sqrt)(a), 0.5 / np.sqrt(a), rtol=1e-9)


def test_forward_of_newton_while_loop_matches_jax_jvp():
    value, tangent = zj.jvp(newton_sqrt, (3.0,), (1.0,))
    want_value, want_tangent = jax.jvp(newton_sqrt, (3.0,), (1.0,))
    np.testing.assert_allclose(value, want_value, rtol=1e-14)
    np.testing.assert_allclose(tangent, want_tangent, rtol=1e-12)


def _loop(x, w):
    """A vector recurrence as a while loop with a counter (5 trips), reading w."""
    def body(state):
        i, v, w = state
        return i + 1, jnp.sin(v) * w + v ** 2 * 0.1, w

    return jnp.sum(lax.while_loop(lambda s: s[0] < 5, body, (0, x, w))[1])


def _unrolled(x, w):
    v = x
    for _ in range(5):
        v = jnp.sin(v) * w + v ** 2 * 0.1
    return jnp.sum(v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_reverse_of_vector_while_loop_matches_unrolled_jax_grad(dtype):
    x = jnp.asarray(np.linspace(0.1, 0.9, 4).astype(dtype))
    w = jnp.asarray(np.linspace(1.2, 0.3, 4).astype(dtype))
    got = zj.grad(_loop, argnums=(0, 1))(x, w)
    want = jax.jit(jax.grad(_unrolled, argnums=(0, 1)))(x, w)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for g, r in zip(got, want):
        np.testing.assert_allclose(g, r, rtol=tol)
    # and inside jax.jit, where the loop state is a tracer
    np.testing.assert_allclose(jax.jit(zj.grad(_loop))(x, w), want[0], rtol=tol)


def test_loop_reading_an_active_value_from_outside_is_refused():
    # JAX passes everything through the loop state; hand-written StableHLO may not. The
    # loop state starts constant, so only the read of %x inside makes the loop active.
    text = """
    "builtin.module"() ({
      "func.func"() <{function_type = (tensor<f64>) -> tensor<f64>, sym_name = "main"}> ({
      ^bb0(%x: tensor<f64>):
        %one = "stablehlo.constant"() <{value = dense<1.0> : tensor<f64>}> : () -> tensor<f64>
        %r = "stablehlo.while"(%one) ({
        ^bb0(%v: tensor<f64>):
          %c = "stablehlo.compare"(%v, %v) <{comparison_direction = #stablehlo<comparison_direction LT>}>
             : (tensor<f64>, tensor<f64>) -> tensor<i1>
          "stablehlo.return"(%c) : (tensor<i1>) -> ()
        }, {
        ^bb0(%v: tensor<f64>):
          %m = "stablehlo.multiply"(%v, %x) : (tensor<f64>, tensor<f64>) -> tensor<f64>
          "stablehlo.return"(%m) : (tensor<f64>) -> ()
        }) : (tensor<f64>) -> tensor<f64>
        "func.return"(%r) : (tensor<f64>) -> ()
      }) : () -> ()
    }) : () -> ()
    """
    for mode in (hlo_ad.reverse, hlo_ad.forward):
        with pytest.raises(ZymaseError, match="stablehlo.while' reads an active value from outside its regions"):
            mode(parse_mlir(text), [True], "hand_written")


def test_counted_loop_is_reversed_with_a_tape_not_by_recomputation():
    from zymase.frontends import jax as front

    x = jnp.asarray(np.linspace(0.1, 0.9, 4))
    w = jnp.asarray(np.linspace(1.2, 0.3, 4))
    leaves, tree = jax.tree_util.tree_flatten((x, w))
    text = front.derivative_module(_loop, leaves, tree, "reverse", [True, True])
    # the primal loop (which also stores what the reverse needs, test_scan_residuals.py)
    # and the reverse loop; no loop of recomputations
    assert text.count('"stablehlo.while"') == 2
    assert '"stablehlo.dynamic_update_slice"' in text and '"stablehlo.dynamic_slice"' in text
    # a while loop with a data-dependent exit has no trip count: recomputation (a counting
    # copy, the reverse loop and the recomputing loop inside it, besides the primal loop)
    a = jnp.asarray(2.0)
    leaves, tree = jax.tree_util.tree_flatten((a,))
    assert front.derivative_module(newton_sqrt, leaves, tree, "reverse", [True]).count('"stablehlo.while"') == 4
