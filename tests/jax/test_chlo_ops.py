"""The CHLO math ops JAX emits for jnp.arctan, arcsin, arccos, arcsinh, arccosh, arctanh,
sinh, cosh, square (jnp.square, jnp.var, jnp.hypot), erf and gammaln, differentiated like
StableHLO's own (found by the JAX fuzzer, tests/fuzz/gen_jax.py: they were refused with
"cannot parse MLIR: Operation chlo.square is not registered").

One function applies each op to its own element of x, so entry i of the gradient is op
i's derivative; reverse against jax.grad, forward against jax.jvp. An op zymase has no rule for (digamma's derivative, polygamma) is refused
naming the Python line.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import jax.scipy.special as jsp  # noqa: E402

import zymase.jax as zj  # noqa: E402
from zymase.errors import ZymaseError  # noqa: E402

# (op, argument in its domain): x[i] in [0.2, 0.8] is mapped into each op's domain
OPS = [
    ("arctan", lambda v: jnp.arctan(2.0 * v)),
    ("arcsin", lambda v: jnp.arcsin(v)),
    ("arccos", lambda v: jnp.arccos(v)),
    ("arcsinh", lambda v: jnp.arcsinh(3.0 * v - 1.0)),
    ("arccosh", lambda v: jnp.arccosh(1.0 + v)),
    ("arctanh", lambda v: jnp.arctanh(v)),
    ("sinh", lambda v: jnp.sinh(2.0 * v)),
    ("cosh", lambda v: jnp.cosh(2.0 * v - 0.5)),
    ("square", lambda v: jnp.square(v - 0.3) * 3.0),
    ("erf", lambda v: jsp.erf(2.0 * v - 1.0)),
    ("gammaln", lambda v: jsp.gammaln(1.0 + 3.0 * v)),
    ("hypot", lambda v: jnp.hypot(v, 0.5)),
]


def _each_op(x):
    return sum(fn(x[i]) for i, (_, fn) in enumerate(OPS)) + jnp.var(x) * 2.0


# float64 only (the rules do not depend on the dtype; float32 CHLO ops run in the JAX
# fuzz sample, tests/fuzz/test_fuzz_sample.py, and in campaigns): the suite's time budget
@pytest.mark.parametrize("dtype", [np.float64], ids=["f64"])
def test_chlo_math_ops_match_jax_grad_and_jvp(dtype):
    rng = np.random.default_rng(7)
    x = jnp.asarray(rng.uniform(0.2, 0.8, len(OPS)).astype(dtype))
    v = jnp.asarray(rng.uniform(-1.0, 1.0, len(OPS)).astype(dtype))
    tol = dict(rtol=1e-12, atol=1e-13) if dtype == np.float64 else dict(rtol=2e-5, atol=2e-6)
    got = np.asarray(zj.grad(_each_op)(x))
    want = np.asarray(jax.jit(jax.grad(_each_op))(x))
    for i, (name, _) in enumerate(OPS):  # one op per entry (plus var's share, in both)
        np.testing.assert_allclose(got[i], want[i], **tol, err_msg=f"reverse of {name}")
    value, tangent = zj.jvp(_each_op, (x,), (v,))
    want_value, want_tangent = jax.jit(lambda a: jax.jvp(_each_op, (a,), (v,)))(x)
    np.testing.assert_allclose(value, want_value, **tol)
    np.testing.assert_allclose(tangent, want_tangent, **tol)


def test_chlo_op_without_rule_is_refused_naming_the_line():
    def f(x):
        return jnp.sum(jsp.digamma(x))  # digamma's derivative (polygamma) has no rule

    with pytest.raises(ZymaseError) as info:
        zj.grad(f)(jnp.asarray([1.5, 2.5]))
    text = info.value.format()
    assert text.startswith("zymase: error:") and "digamma" in text and "test_chlo_ops.py" in text, text
