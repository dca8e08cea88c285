"""Element types and lowerings at the edge of the StableHLO path (session 33's probes): bfloat16
tensors carry derivatives like float16 ones (their gradient was zeros without a word);
float8 tensors carry none, so an active value turned into one, or a float8 argument
differentiated, is refused rather than given zeros; a typed PRNG key
(``jax.random.key``) passed as a constant argument is lowered with Shardy annotations
that zymase now drops (it was refused as 'sdy.mesh'); ``lax.reduce_precision`` (a
rounding to a narrower float inside a wider one) is linear for JAX, its adjoint rounded
the same way (it was refused: no rule); a callback into Python (``jax.debug.print``) is
refused with its Python line (the parser stopped at its Shardy attribute, naming a line of
the lowered text); a bf16 constant printed as a bit pattern (JAX's -inf) keeps its
value; a widening product's tangent has the product's type, and a widening
convolution's adjoint is computed in the adjoint's type, as JAX transposes it."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import zymase.jax as zj  # noqa: E402
from zymase.errors import ZymaseError  # noqa: E402


def bf16_mixed(x, y):
    return jnp.sum(jnp.sin(x) * x).astype(jnp.float32) + jnp.sum(x.astype(jnp.float32) * y)


def test_bfloat16_gradient_and_tangent_match_jax():
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=4), dtype=jnp.bfloat16)
    y = jnp.asarray(rng.normal(size=4), dtype=jnp.float32)
    got = zj.grad(bf16_mixed, (0, 1))(x, y)
    want = jax.grad(bf16_mixed, (0, 1))(x, y)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        assert np.any(np.asarray(w, np.float32) != 0)
        np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(w, np.float32), rtol=2e-2, atol=2e-2)
    tx = jnp.asarray(rng.normal(size=4), dtype=jnp.bfloat16)
    ty = jnp.asarray(rng.normal(size=4), dtype=jnp.float32)
    _, got_t = zj.jvp(bf16_mixed, (x, y), (tx, ty))
    _, want_t = jax.jvp(bf16_mixed, (x, y), (tx, ty))
    np.testing.assert_allclose(float(got_t), float(want_t), rtol=2e-2, atol=2e-2)


def test_float8_intermediate_is_refused_with_its_line():
    def through_float8(x):
        return jnp.sum(x.astype(jnp.float8_e4m3fn).astype(jnp.float32) ** 2)

    with pytest.raises(ZymaseError, match=r"f8E4M3FN floats are not differentiated: this stablehlo.convert") as info:
        zj.grad(through_float8)(jnp.asarray([1.0, 2.0, 3.0]))
    assert "test_lowering_edges.py" in str(info.value) and "through_float8" in str(info.value)


def test_float8_argument_is_refused():
    def widen(x):
        return jnp.sum(x.astype(jnp.float32) ** 2)

    x = jnp.asarray([1.0, 2.0, 3.0], dtype=jnp.float8_e5m2)
    with pytest.raises(ZymaseError, match="float8_e5m2 array, whose derivative zymase does not compute"):
        zj.grad(widen)(x)


def noisy(x, key):
    return jnp.sum(x * jax.random.normal(key, (4,)) + jax.random.uniform(key, (4,)) * x ** 2)


def test_typed_prng_key_as_a_constant_argument():
    x = jnp.asarray(np.random.default_rng(1).normal(size=4))
    key = jax.random.key(0)
    np.testing.assert_allclose(zj.grad(noisy)(x, key), jax.grad(noisy)(x, key), rtol=1e-12, atol=1e-12)


def rounded(x):
    return jnp.sum(jax.lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10) * x)


def test_reduce_precision_rounds_the_adjoint_as_jax_does():
    x = jnp.asarray(np.random.default_rng(2).normal(size=5))
    got, want = zj.grad(rounded)(x), jax.grad(rounded)(x)
    assert not np.allclose(want, 2 * x, rtol=1e-9, atol=0)  # the rounding shows
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0)
    tangent = jnp.asarray(np.random.default_rng(3).normal(size=5))
    np.testing.assert_allclose(zj.jvp(rounded, (x,), (tangent,))[1], jax.jvp(rounded, (x,), (tangent,))[1],
                               rtol=1e-14, atol=0)


def test_debug_print_is_refused_with_its_python_line():
    def printing(x):
        jax.debug.print("x0 = {}", x[0])
        return jnp.sum(x ** 2)

    with pytest.raises(ZymaseError, match="calls back into Python") as info:
        zj.grad(printing)(jnp.ones(3))
    line = printing.__code__.co_firstlineno + 1
    assert f"test_lowering_edges.py:{line}:" in str(info.value)


def bf16_max(x):
    return (jnp.max(x) * 2).astype(jnp.float32)


# session 33: JAX prints a bf16 -inf (the max's initial value) as the bit pattern 0xFF80,
# which xDSL read as the integer 65408 (rounded to 65536): the value and gradient of a
# bf16 max below that were wrong
def test_bfloat16_non_finite_constants_keep_their_value():
    x = jnp.asarray([1.0, 3.0, 0.5], dtype=jnp.bfloat16)
    value, gradient = zj.value_and_grad(bf16_max)(x)
    assert float(value) == 6.0
    np.testing.assert_array_equal(np.asarray(gradient, np.float32), [0.0, 2.0, 0.0])


def widening_product(a, b):
    return jnp.sum(jnp.dot(a, b, preferred_element_type=jnp.float64) ** 2)


# session 33: the tangent of a widening product (float32 or bf16 operands, a float64 or
# float32 result) kept the operands' type and was added to the result's: an invalid module
def test_tangent_of_a_widening_product_has_the_products_type():
    rng = np.random.default_rng(4)
    a, b, ta, tb = (jnp.asarray(rng.normal(size=s), jnp.float32) for s in [(3, 4), (4, 2), (3, 4), (4, 2)])
    got = zj.jvp(widening_product, (a, b), (ta, tb))[1]
    want = jax.jvp(widening_product, (a, b), (ta, tb))[1]
    assert got.dtype == want.dtype == jnp.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def widening_convolution(x, k):
    return jnp.sum(jax.lax.conv_general_dilated(x, k, (2,), [(1, 2)], preferred_element_type=jnp.float64) ** 2)


# session 33: the adjoint of a widening convolution convolved the float64 adjoint with the
# float32 operand (an invalid module); JAX converts the operand to the adjoint's type
def test_adjoint_of_a_widening_convolution_matches_jax():
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.normal(size=(1, 2, 6)), jnp.float32)
    k = jnp.asarray(rng.normal(size=(3, 2, 3)), jnp.float32)
    for got, want in zip(zj.grad(widening_convolution, (0, 1))(x, k), jax.grad(widening_convolution, (0, 1))(x, k)):
        assert got.dtype == want.dtype == jnp.float32
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
