"""zymase.jax end to end: a model's gradient, use inside jax.jit, refusals, and the
StableHLO parse/print round trip (issue 28 items 1, 2 and 4)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import zymase.jax as zj  # noqa: E402
from zymase.errors import ZymaseError  # noqa: E402
from zymase.ir import parse_mlir, print_mlir  # noqa: E402


def _mlp_params(rng, sizes, dtype):
    return [
        {"W": jnp.asarray(rng.normal(0, 1 / np.sqrt(m), (m, n)).astype(dtype)),
         "b": jnp.asarray(rng.normal(0, 0.1, (n,)).astype(dtype))}
        for m, n in zip(sizes[:-1], sizes[1:])
    ]


def mlp_loss(params, x, y):
    h = x
    for layer in params[:-1]:
        h = jax.nn.relu(h @ layer["W"] + layer["b"])
    logits = h @ params[-1]["W"] + params[-1]["b"]
    return jnp.mean(jnp.sum((jax.nn.log_softmax(logits) - y) ** 2, axis=-1))


# item 2: an MLP's loss, differentiated with respect to all weights (a pytree)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_mlp_loss_gradient_matches_jax(dtype):
    rng = np.random.default_rng(0)
    params = _mlp_params(rng, [5, 8, 6, 3], dtype)
    x = jnp.asarray(rng.normal(size=(7, 5)).astype(dtype))
    y = jnp.asarray(np.eye(3, dtype=dtype)[rng.integers(0, 3, 7)])
    value, got = zj.value_and_grad(mlp_loss)(params, x, y)
    want_value, want = jax.jit(jax.value_and_grad(mlp_loss))(params, x, y)
    tol = dict(rtol=1e-4, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(value, want_value, **tol)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, **tol)


# item 4: the derivative runs inside jax.jit, composed with other JAX code
def test_gradient_inside_jit_composed_with_jax_code():
    def f(x):
        return jnp.sum(jnp.sin(x) * x[::-1]) + jnp.max(x) ** 2

    @jax.jit
    def step(x):
        return x - 0.1 * zj.grad(f)(jnp.tanh(x)) * jnp.cos(x)

    @jax.jit
    def reference(x):
        return x - 0.1 * jax.grad(f)(jnp.tanh(x)) * jnp.cos(x)

    x = jnp.linspace(-1.0, 2.0, 6)
    np.testing.assert_allclose(step(x), reference(x), rtol=1e-12)
    np.testing.assert_allclose(step(x + 1.0), reference(x + 1.0), rtol=1e-12)


def test_jvp_and_vjp_of_vector_function():
    def f(x, y):
        return jnp.tanh(x @ y), jnp.exp(x).sum(axis=0)

    rng = np.random.default_rng(1)
    x, y = jnp.asarray(rng.normal(size=(3, 4))), jnp.asarray(rng.normal(size=(4, 2)))
    tx, ty = jnp.asarray(rng.normal(size=(3, 4))), jnp.asarray(np.zeros((4, 2)))
    value, tangent = zj.jvp(f, (x, y), (tx, ty))
    want_value, want_tangent = jax.jit(lambda x, y, tx, ty: jax.jvp(f, (x, y), (tx, ty)))(x, y, tx, ty)
    for a, b in zip(value + tangent, want_value + want_tangent):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    out, pullback = zj.vjp(f, x, y)
    cot = (jnp.asarray(np.ones((3, 2))), jnp.asarray(np.arange(4.0)))
    for a, b in zip(pullback(cot), jax.jit(lambda x, y, c: jax.vjp(f, x, y)[1](c))(x, y, cot)):
        np.testing.assert_allclose(a, b, rtol=1e-12)



# a function with an integer output (an index, LU's pivots): jax.jvp gives it a float0
# tangent and jax.vjp's callers pass it a float0 cotangent. zymase's modules carry
# tangents and seeds for float outputs only; both calls used to fail inside XLA.
def test_jvp_and_vjp_of_a_function_with_an_integer_output():
    def f(x):
        return jnp.sin(x) * x[0], jnp.argmax(x)

    x, t = jnp.asarray([0.3, 1.2, -0.4]), jnp.asarray([1.0, -2.0, 0.5])
    (value, index), (tangent, index_tangent) = zj.jvp(f, (x,), (t,))
    (want_value, want_index), (want_tangent, _) = jax.jvp(f, (x,), (t,))
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(tangent, want_tangent, rtol=1e-12)
    assert int(index) == int(want_index) and index_tangent.dtype == jax.dtypes.float0
    _, pullback = zj.vjp(f, x)
    cot = (jnp.asarray([1.0, 2.0, 3.0]), np.zeros((), dtype=jax.dtypes.float0))
    np.testing.assert_allclose(pullback(cot)[0], jax.vjp(f, x)[1](cot)[0], rtol=1e-12)

# item 5 of the brief: unsupported ops are refused naming the op, the Python function and line
def test_unsupported_op_is_refused_with_op_function_and_line():
    def hessenberg_sum(x):  # LAPACK's gehrd has no derivative rule
        return jnp.sum(jax.lax.linalg.hessenberg(x)[0])

    with pytest.raises(ZymaseError) as info:
        zj.grad(hessenberg_sum)(jnp.eye(3) * 2.0)
    text = info.value.format()
    assert text.startswith("zymase: error: ")
    assert "'stablehlo.custom_call' @lapack_dgehrd_ffi (emitted by jax.lax.linalg.hessenberg)" in text
    assert "function 'test_unsupported_op_is_refused_with_op_function_and_line.<locals>.hessenberg_sum'" in text
    assert f"{__file__}:" in text and "hint:" in text and "\n" not in text


def test_op_the_ir_does_not_know_is_refused_at_the_users_line():
    # lax.top_k lowers to chlo.top_k, which the parser does not register: the refusal
    # named "line 4 of <lambda>" of text the user never saw and told them to check the
    # MLIR syntax (probe, session 30); now it names the op and the user's line
    def top3(x):
        return jnp.sum(lax.top_k(x, 3)[0] * jnp.arange(1.0, 4.0))  # the refused line

    line = top3.__code__.co_firstlineno + 1
    for transform in (lambda: zj.grad(top3)(jnp.linspace(0.0, 1.0, 6)),
                      lambda: zj.jvp(top3, (jnp.linspace(0.0, 1.0, 6),), (jnp.ones(6),))):
        with pytest.raises(ZymaseError) as info:
            transform()
        text = info.value.format()
        assert text.startswith("zymase: error: ") and "\n" not in text
        assert f"{__file__}:{line}:" in text
        assert "JAX lowered this to 'chlo.top_k'" in text and "MLIR syntax" not in text and "hint:" in text



def _rotated(x):
    return jnp.sum(jnp.abs((x[:2] + 1j * x[1:]) * jnp.exp(1j * x[:2])) ** 2)  # the refused line


def _complex_in_loop(x):
    return jnp.sum(lax.fori_loop(0, 2, lambda i, v: v + jnp.real(jnp.exp(1j * v)), x))


def test_complex_values_made_from_active_floats_are_refused():
    # session 32: complex tensors carry no derivative, so an active float made complex
    # lost its derivative there: zymase's gradient and tangent were 0 (jax.grad's not)
    x = jnp.asarray([0.3, -0.7, 1.1])
    line = _rotated.__code__.co_firstlineno + 1
    loop_line = _complex_in_loop.__code__.co_firstlineno + 1
    for transform, where, name in ((lambda: zj.grad(_rotated)(x), line, "_rotated"),
                                   (lambda: zj.jvp(_rotated, (x,), (jnp.ones(3),)), line, "_rotated"),
                                   (lambda: zj.grad(_complex_in_loop)(x), loop_line, "_complex_in_loop")):
        with pytest.raises(ZymaseError) as info:
            transform()
        text = info.value.format()
        assert text.startswith("zymase: error: ") and "complex numbers are not differentiated" in text
        assert f"{__file__}:{where}:" in text and f"in function '{name}'" in text and "hint:" in text
        assert "\n" not in text
    # complex constants beside active floats are fine
    np.testing.assert_allclose(zj.grad(lambda v: jnp.sum(v * jnp.real(jnp.exp(1j * jnp.arange(3.0)))))(x),
                               np.cos(np.arange(3.0)), rtol=1e-15)


def test_non_scalar_output_is_refused_by_grad():
    with pytest.raises(ZymaseError, match="one float scalar"):
        zj.grad(lambda x: x * 2.0)(jnp.ones(3))


def test_integer_argument_is_refused():
    with pytest.raises(ZymaseError, match="floating-point"):
        zj.grad(lambda n: jnp.sum(n * 2.0))(jnp.arange(3))


# item 1: what JAX emits parses into zymase.ir, and zymase's printing parses back in jaxlib
def test_parse_print_round_trip_through_jaxlib():
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir as jax_ir

    def program(x, i):
        y = x.at[i].add(x[0] * 2.0)
        z = jnp.where(y > 0, y, -y) @ jnp.ones((4, 2))
        return jax.nn.logsumexp(z) + jnp.sum(jnp.pad(x, ((1, 0), (0, 2)))) + lax.dynamic_slice(x, (i, 1), (1, 2)).sum()

    text = jax.jit(program).lower(jnp.ones((3, 4)), 1).compiler_ir("stablehlo").operation.get_asm(
        print_generic_op_form=True)
    module = parse_mlir(text)
    module.verify()
    printed = print_mlir(module)
    again = parse_mlir(printed)
    assert [op.name for op in again.walk()] == [op.name for op in module.walk()]
    hlo_properties = [dict(op.properties) for op in module.walk() if op.name.startswith("stablehlo.")]
    assert [dict(op.properties) for op in again.walk() if op.name.startswith("stablehlo.")] == hlo_properties
    assert print_mlir(parse_mlir(print_mlir(again))) == print_mlir(again)
    with jax_mlir.make_ir_context() as ctx:
        back = jax_ir.Module.parse(printed, context=ctx)
        assert back.operation.verify()
        for name in ("stablehlo.scatter", "stablehlo.dot_general", "stablehlo.reduce", "stablehlo.pad",
                     "stablehlo.dynamic_slice", "stablehlo.compare"):
            assert name in str(back)


def test_non_finite_dense_constants_parse_exactly():
    # MLIR prints -inf and NaN as bit patterns; xDSL read them as integers (1.8e19)
    module = parse_mlir('"stablehlo.constant"() <{value = dense<[0xFFF0000000000000, 1.5]> : tensor<2xf64>}> '
                        ': () -> tensor<2xf64>\n"stablehlo.constant"() <{value = dense<0x7FC00000> : tensor<f32>}>'
                        ' : () -> tensor<f32>')
    first, second = [op.value for op in module.walk() if op.name == "stablehlo.constant"]
    assert list(first.get_values()) == [-np.inf, 1.5]
    assert np.isnan(second.get_values()[0])


def test_importing_zymase_does_not_import_jax():
    code = ("import sys, zymase, zymase.ir, zymase.autodiff.hlo, zymase.autodiff.rules.stablehlo; "
            "assert 'jax' not in sys.modules, 'jax imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def _newton_sqrt(a):
    def body(state):
        return 0.5 * (state[0] + a / state[0]), state[1] + 1

    return lax.while_loop(lambda s: jnp.abs(s[0] * s[0] - a) > 1e-12 * a, body, (a, 0))[0]


# item 4: zymase.jax.jit(f) is a function JAX transforms with zymase's reverse mode
def test_jax_grad_of_zymase_jit_uses_zymase_derivative_inside_jit():
    root = zj.jit(_newton_sqrt)
    with pytest.raises(ValueError):  # JAX's own reverse mode cannot do the loop
        jax.grad(_newton_sqrt)(2.0)
    np.testing.assert_allclose(jax.grad(root)(2.0), 0.5 / np.sqrt(2.0), rtol=1e-10)
    composed = jax.jit(jax.grad(lambda a: root(a) * jnp.sin(a)))
    a = 2.0
    np.testing.assert_allclose(composed(a), np.sin(a) / (2 * np.sqrt(a)) + np.sqrt(a) * np.cos(a), rtol=1e-10)


def test_zymase_jit_with_integer_argument_gives_float0_cotangent():
    def f(x, n):
        return jnp.sum(jnp.tanh(x) ** n)

    x = jnp.linspace(0.0, 1.0, 3)
    value, grad = jax.value_and_grad(lambda x: zj.jit(f)(x, 3) + jnp.sum(x))(x)
    want_value, want_grad = jax.value_and_grad(lambda x: f(x, 3) + jnp.sum(x))(x)
    np.testing.assert_allclose(value, want_value, rtol=1e-14)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-13)


def test_vmap_of_zymase_grad():
    xs = jnp.linspace(0.5, 3.0, 4)
    np.testing.assert_allclose(jax.vmap(zj.grad(_newton_sqrt))(xs), 0.5 / np.sqrt(xs), rtol=1e-10)
    X = jnp.asarray(np.random.default_rng(2).normal(size=(2, 3)))
    f = lambda x, w: jnp.sum(jnp.sin(x) * w)  # noqa: E731
    w = jnp.asarray([1.0, 2.0, 3.0])
    np.testing.assert_allclose(jax.vmap(zj.grad(f), in_axes=(0, None))(X, w), np.cos(X) * w, rtol=1e-13)



@pytest.mark.parametrize("program, construct", [
    (lambda x: jnp.prod(x), "stablehlo.reduce"),
    (lambda x: jnp.sum(x.at[1].max(x[0] ** 2)), "stablehlo.scatter"),
], ids=["product_reduction", "scatter_maximum"])
def test_ops_without_a_rule_for_their_body_are_refused_with_function_and_line(program, construct):
    with pytest.raises(ZymaseError) as info:
        zj.grad(program)(jnp.arange(1.0, 4.0))
    err = info.value
    assert err.construct == construct and err.function and "<lambda>" in err.function
    assert err.location and err.location.startswith(__file__)


# issue 28 item 2: stop_gradient is invisible in JAX's StableHLO; zymase's lowering marks it,
# and only zymase's: the marker never reaches a program JAX lowers for itself
def test_stop_gradient_marker_stays_inside_zymase_lowering():
    f = lambda x: jnp.sum(lax.stop_gradient(x) * x)  # noqa: E731
    x = jnp.arange(1.0, 4.0)
    np.testing.assert_array_equal(zj.grad(f)(x), x)
    assert "zymase.stop_gradient" not in jax.jit(f).lower(x).as_text()
    assert "zymase.stop_gradient" not in jax.jit(jax.grad(f)).lower(x).as_text()


# issue 28 item 2: JAX 0.10.2 lowers jnp.linalg.cholesky and solve_triangular on CPU to LAPACK
# custom_calls (with Shardy sharding rules): on constants they parse, print and run; on a
# differentiated value one without a rule (the tridiagonal reduction's) is refused naming the JAX function
# (cholesky and solve_triangular have rules: tests/jax/test_linalg_rules.py)
def test_linalg_custom_calls_run_when_constant_and_are_refused_when_active():
    a = jnp.asarray([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])

    def f(x, a):
        chol = jnp.linalg.cholesky(a)
        return jnp.sum(x * chol) + jnp.sum(x * jax.scipy.linalg.solve_triangular(chol, a[0], lower=True))

    x = jnp.ones((3, 3))
    np.testing.assert_allclose(zj.grad(f)(x, a), jax.grad(f)(x, a), rtol=1e-14)
    with pytest.raises(ZymaseError) as info:
        zj.grad(lambda a: jnp.sum(jax.lax.linalg.tridiagonal(a)[0]))(a)
    text = info.value.format()
    assert "@lapack_dsytrd_ffi (emitted by jax.lax.linalg.tridiagonal)" in text and "<lambda>" in text


# session 33: argnums in another order than the arguments' gave argument 0's gradients to
# argument 1 (unflattened with the other's tree: a silent mix-up when the shapes agree)
def test_argnums_out_of_order_match_jax():
    rng = np.random.default_rng(3)
    params = {"W": jnp.asarray(rng.normal(size=(3, 2))), "b": jnp.asarray(rng.normal(size=2))}
    x = jnp.asarray(rng.normal(size=(4, 3)))

    def loss(p, x):
        return jnp.sum(jnp.tanh(x @ p["W"] + p["b"]) ** 2)

    got = zj.value_and_grad(loss, argnums=(1, 0))(params, x)
    want = jax.value_and_grad(loss, argnums=(1, 0))(params, x)
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


# session 33: both were XLA verifier errors or JAX's bare NotImplementedError (tracebacks)
def test_closed_over_tracer_and_jax_ad_of_a_zymase_derivative_are_refused():
    x = jnp.asarray([0.3, 0.5, 0.9])
    with pytest.raises(ZymaseError, match="closes over a value traced outside it"):
        jax.jit(lambda w: zj.grad(lambda y: jnp.sum(jnp.sin(y * w)))(x))(2.0)
    with pytest.raises(ZymaseError, match="JAX cannot differentiate the result of zymase.jax.grad"):
        jax.jacfwd(zj.grad(lambda y: jnp.sum(jnp.sin(y) ** 3)))(x)


# session 33: integer and boolean primals were refused by vjp and jvp; jax.vjp/jax.jvp give
# them float0 cotangents and take float0 tangents for them
def test_vjp_and_jvp_with_integer_and_boolean_primals():
    def mixed(x, n, mask):
        return jnp.where(mask, x ** n, jnp.sin(x)), n * 2

    x, n, mask = jnp.asarray([0.5, 1.5, -0.3]), jnp.asarray([2, 3, 1]), jnp.asarray([True, False, True])
    cotangent = (jnp.asarray([1.0, 2.0, 3.0]), np.zeros(3, jax.dtypes.float0))
    got = zj.vjp(mixed, x, n, mask)[1](cotangent)
    want = jax.vjp(mixed, x, n, mask)[1](cotangent)
    assert [g.dtype for g in got] == [w.dtype for w in want]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-13, atol=0)
    tangents = (jnp.asarray([0.1, -1.0, 2.0]), np.zeros(3, jax.dtypes.float0), np.zeros(3, jax.dtypes.float0))
    got_t, want_t = zj.jvp(mixed, (x, n, mask), tangents)[1], jax.jvp(mixed, (x, n, mask), tangents)[1]
    np.testing.assert_allclose(got_t[0], want_t[0], rtol=1e-13, atol=0)
    assert got_t[1].dtype == jax.dtypes.float0


def _loss_with_aux(w, x):
    r = jnp.tanh(x @ w)
    # aux holds log|w|, whose partial is infinite at w = 0: no derivative may flow from it
    return jnp.sum(r * r) + jnp.log(jnp.sum(w * w)), {"resid": r, "count": jnp.int32(3), "logw": jnp.log(jnp.abs(w))}


def test_has_aux_gives_the_aux_and_the_outputs_gradient_as_jax():
    # session 33: zymase.jax.grad and value_and_grad had no has_aux (a plain TypeError)
    w = jnp.array([0.3, -0.5, 0.0], dtype=jnp.float32)
    x = jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3) / 5
    (value, aux), g = zj.value_and_grad(_loss_with_aux, has_aux=True)(w, x)
    (want_value, want_aux), want_g = jax.value_and_grad(_loss_with_aux, has_aux=True)(w, x)
    np.testing.assert_allclose(value, want_value, rtol=1e-6)
    np.testing.assert_allclose(g, want_g, rtol=1e-5, atol=1e-6)
    assert np.all(np.isfinite(g)), g
    assert aux["count"] == 3 and aux["count"].dtype == jnp.int32
    np.testing.assert_allclose(aux["resid"], want_aux["resid"], rtol=1e-6)
    np.testing.assert_array_equal(aux["logw"], want_aux["logw"])
    grads, aux2 = zj.grad(_loss_with_aux, argnums=(1, 0), has_aux=True)(w, x)
    want_grads, _ = jax.grad(_loss_with_aux, argnums=(1, 0), has_aux=True)(w, x)
    for got, want in zip(grads, want_grads):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(aux2["resid"], want_aux["resid"], rtol=1e-6)
    with pytest.raises(ZymaseError, match="has_aux=True needs the function to return a pair"):
        zj.grad(lambda w: jnp.sum(w), has_aux=True)(w)
