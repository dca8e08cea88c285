"""Wrong input on every Python entry point gives one ZymaseError naming the argument.

Guards issue 23 item 4: a string tangent was a ValueError, a scalar function's vjp
with an array cotangent an llvmlite TypeError, ``jvp`` without tuples a TypeError (or,
with an array, silently one primal per element), ``zymase.mlir.compile(bytes)`` a
UnicodeDecodeError, a compiled MLIR function called with a string a ValueError, an
integer array where a float one is differentiated an error about the return type.
Every case below must raise :class:`ZymaseError` (and nothing else) whose message
names the argument by its Python parameter name.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numba import njit

import zymase
import zymase.mlir
from zymase import Active, Const, Duplicated
from zymase.errors import ZymaseError


@njit
def weighted(xs, alpha):
    return alpha * np.sum(xs * xs)


@njit
def square(alpha):
    return alpha * alpha


@njit
def int_sum(counts):
    return np.sum(counts * counts)


XS = np.linspace(0.1, 0.5, 3)

#: values that are neither a float array nor a float, with their shapes of wrongness
NOT_A_FLOAT_ARRAY = {
    "string": "abc",
    "none": None,
    "object": object(),
    "list": [1.0, 2.0, 3.0],
    "dict": {"a": 1.0},
    "complex array": np.ones(3, complex),
    "string array": np.array(["a", "b"]),
    "object array": np.array([1.0, None], dtype=object),
    "strided array": np.linspace(0, 1, 6)[::2],
    "read-only view": np.broadcast_to(np.ones(1), (3,)),
}
NOT_A_FLOAT = {
    "string": "abc",
    "none": None,
    "object": object(),
    "complex": 1j,
    "list": [1.0],
    "bytes": b"1.0",
}
#: wrong tangents/shadows for XS (float64, shape (3,))
BAD_ARRAY_TANGENTS = {
    "shape": np.ones(4),
    "rank": np.ones((3, 1)),
    "dtype": np.ones(3, np.float32),
    "int dtype": np.ones(3, np.int64),
    "string": "abc",
    "scalar": 1.0,
    "list": [1.0, 1.0, 1.0],
    "strided": np.ones(6)[::2],
    "none-like object": object(),
}
#: wrong tangents/cotangents for a float
BAD_SCALAR_TANGENTS = {
    "string": "abc",
    "array": np.ones(2),
    "list": [1.0],
    "complex": 1j,
    "object": object(),
    "bytes": b"1",
}


def _raises_naming(name: str):
    """pytest.raises(ZymaseError) whose message names ``name`` (quoted)."""
    return pytest.raises(ZymaseError, match=f"'{name}'")


def _only_zymase_error(call, name: str, *, quoted: bool = True) -> None:
    """``call()`` raises ZymaseError, and its message names ``name`` (in quotes: a
    Python parameter name)."""
    try:
        call()
    except ZymaseError as err:
        assert (f"'{name}'" if quoted else name) in err.format(), err.format()
    except Exception as err:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{type(err).__name__} instead of ZymaseError: {err}")
    else:
        pytest.fail("no error")


# --- primals ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(NOT_A_FLOAT_ARRAY))
@pytest.mark.parametrize("entry", ["grad", "value_and_grad", "jvp", "vjp", "autodiff", "fwddiff"])
def test_bad_array_primal(entry, kind):
    bad = NOT_A_FLOAT_ARRAY[kind]
    calls = {
        "grad": lambda: zymase.grad(weighted)(bad, 2.0),
        "value_and_grad": lambda: zymase.value_and_grad(weighted)(bad, 2.0),
        "jvp": lambda: zymase.jvp(weighted, (bad, 2.0), (np.ones(3), 1.0)),
        "vjp": lambda: zymase.vjp(weighted, bad, 2.0),
        "autodiff": lambda: zymase.autodiff(weighted, Duplicated(bad, np.zeros(3)), Active(2.0)),
        "fwddiff": lambda: zymase.fwddiff(weighted, Duplicated(bad, np.zeros(3)), Const(2.0)),
    }
    _only_zymase_error(calls[entry], "xs")


@pytest.mark.parametrize("kind", sorted(NOT_A_FLOAT))
@pytest.mark.parametrize("entry", ["grad", "jvp", "vjp", "autodiff", "fwddiff"])
def test_bad_scalar_primal(entry, kind):
    bad = NOT_A_FLOAT[kind]
    calls = {
        "grad": lambda: zymase.grad(weighted, argnums=1)(XS.copy(), bad),
        "jvp": lambda: zymase.jvp(weighted, (XS, bad), (np.ones(3), 1.0)),
        "vjp": lambda: zymase.vjp(weighted, XS, bad),
        "autodiff": lambda: zymase.autodiff(weighted, Const(XS.copy()), Active(bad)),
        "fwddiff": lambda: zymase.fwddiff(weighted, Const(XS.copy()), Duplicated(bad, 1.0)),
    }
    _only_zymase_error(calls[entry], "alpha")


@pytest.mark.parametrize("entry", ["grad", "value_and_grad", "vjp", "jvp"])
def test_integer_array_where_a_float_array_is_differentiated(entry):
    counts = np.array([1, 2, 3])
    calls = {
        "grad": lambda: zymase.grad(int_sum)(counts),
        "value_and_grad": lambda: zymase.value_and_grad(int_sum)(counts),
        "vjp": lambda: zymase.vjp(int_sum, counts),
        "jvp": lambda: zymase.jvp(int_sum, (counts,), (np.ones(3),)),
    }
    _only_zymase_error(calls[entry], "counts")


def test_jvp_tangent_for_an_integer_argument_is_refused():
    @njit
    def scaled(xs, n):
        return n * np.sum(xs)

    assert zymase.jvp(scaled, (XS, 2), (np.ones(3), None))[1] == pytest.approx(6.0)
    with _raises_naming("n"):
        zymase.jvp(scaled, (XS, 2), (np.ones(3), 1.0))


# --- tangents, shadows, cotangents -------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(BAD_ARRAY_TANGENTS))
@pytest.mark.parametrize("entry", ["jvp", "autodiff", "fwddiff"])
def test_bad_array_tangent(entry, kind):
    bad = BAD_ARRAY_TANGENTS[kind]
    calls = {
        "jvp": lambda: zymase.jvp(weighted, (XS, 2.0), (bad, 1.0)),
        "autodiff": lambda: zymase.autodiff(weighted, Duplicated(XS.copy(), bad), Active(2.0)),
        "fwddiff": lambda: zymase.fwddiff(weighted, Duplicated(XS.copy(), bad), Const(2.0)),
    }
    _only_zymase_error(calls[entry], "xs")


@pytest.mark.parametrize("kind", sorted(BAD_SCALAR_TANGENTS))
@pytest.mark.parametrize("entry", ["jvp", "fwddiff"])
def test_bad_scalar_tangent(entry, kind):
    bad = BAD_SCALAR_TANGENTS[kind]
    calls = {
        "jvp": lambda: zymase.jvp(weighted, (XS, 2.0), (np.ones(3), bad)),
        "fwddiff": lambda: zymase.fwddiff(weighted, Const(XS.copy()), Duplicated(2.0, bad)),
    }
    _only_zymase_error(calls[entry], "alpha")


@pytest.mark.parametrize("kind", sorted(BAD_SCALAR_TANGENTS) + ["none"])
def test_bad_cotangent(kind):
    bad = None if kind == "none" else BAD_SCALAR_TANGENTS[kind]
    _, vjp_fn = zymase.vjp(square, 3.0)
    _only_zymase_error(lambda: vjp_fn(bad), "cotangent")


def test_good_cotangents_still_work():
    _, vjp_fn = zymase.vjp(square, 3.0)
    assert vjp_fn(2.0) == (pytest.approx(12.0),)
    assert vjp_fn(np.float32(2.0)) == (pytest.approx(12.0),)
    assert vjp_fn(np.array(2.0)) == (pytest.approx(12.0),)
    assert vjp_fn(2) == (pytest.approx(12.0),)


# --- the shape of the call ---------------------------------------------------------------


@pytest.mark.parametrize("primals,tangents,name", [
    (XS, np.ones(3), "primals"),        # an array is not a tuple of primals
    (2.0, 1.0, "primals"),
    ((XS, 2.0), np.ones(3), "tangents"),
    ((XS, 2.0), "ab", "tangents"),
    ((XS, 2.0), (np.ones(3),), "tangents"),
    ((XS,), (np.ones(3),), "alpha"),    # too few primals: the missing parameter
])
def test_jvp_structure(primals, tangents, name):
    _only_zymase_error(lambda: zymase.jvp(weighted, primals, tangents), name)


@pytest.mark.parametrize("entry", ["grad", "vjp", "autodiff", "fwddiff"])
def test_too_few_arguments_names_the_missing_one(entry):
    calls = {
        "grad": lambda: zymase.grad(weighted)(XS.copy()),
        "vjp": lambda: zymase.vjp(weighted, XS),
        "autodiff": lambda: zymase.autodiff(weighted, Duplicated(XS.copy(), np.zeros(3))),
        "fwddiff": lambda: zymase.fwddiff(weighted, Duplicated(XS.copy(), np.zeros(3))),
    }
    _only_zymase_error(calls[entry], "alpha")


def test_keyword_arguments_to_a_gradient():
    _only_zymase_error(lambda: zymase.grad(weighted)(XS.copy(), alpha=2.0), "alpha")


@pytest.mark.parametrize("argnums", [True, 2, -3, "0", 0.0, (0, "1"), None])
def test_bad_argnums(argnums):
    _only_zymase_error(lambda: zymase.grad(weighted, argnums=argnums)(XS.copy(), 2.0), "argnums")


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.text(max_size=3), st.none(), st.complex_numbers(), st.lists(st.floats(), max_size=2),
                 st.binary(max_size=2), st.dictionaries(st.text(max_size=1), st.floats(), max_size=1)))
def test_any_non_number_tangent_or_cotangent(bad):
    _only_zymase_error(lambda: zymase.fwddiff(weighted, Const(XS.copy()), Duplicated(2.0, bad)), "alpha")
    _only_zymase_error(lambda: zymase.fwddiff(weighted, Duplicated(XS.copy(), bad), Const(2.0)), "xs")
    _only_zymase_error(lambda: zymase.vjp(square, 3.0)[1](bad), "cotangent")
    if bad is not None:  # a None tangent holds the argument constant in jvp
        _only_zymase_error(lambda: zymase.jvp(weighted, (XS, 2.0), (np.ones(3), bad)), "alpha")
        _only_zymase_error(lambda: zymase.jvp(weighted, (XS, 2.0), (bad, 1.0)), "xs")


# --- zymase.mlir ------------------------------------------------------------------------


@pytest.mark.parametrize("text", [b"\xff\xfe func.func", None, 12, ["func.func @f() { return }"]])
def test_mlir_compile_of_non_text(text):
    _only_zymase_error(lambda: zymase.mlir.compile(text), "text")


@pytest.fixture(scope="module")
def mlir_module():
    return zymase.mlir.compile("""
    func.func @scale(%x: f64, %n: i64) -> f64 {
      %f = arith.sitofp %n : i64 to f64
      %y = arith.mulf %x, %f : f64
      return %y : f64
    }
    func.func @first(%a: memref<?xf64>) -> f64 {
      %c0 = arith.constant 0 : index
      %v = memref.load %a[%c0] : memref<?xf64>
      return %v : f64
    }
    """)


@pytest.mark.parametrize("args,position", [
    (("abc", 2), 1),
    ((None, 2), 1),
    (([1.0], 2), 1),
    ((1j, 2), 1),
    ((1.0, "2"), 2),
    ((1.0, 2.5), 2),
    ((1.0, 2 ** 70), 2),
    ((1.0, np.ones(2)), 2),
])
def test_mlir_call_with_bad_scalars(mlir_module, args, position):
    _only_zymase_error(lambda: mlir_module.scale(*args), f"argument {position}", quoted=False)
    assert mlir_module.scale(1.5, 2) == 3.0


@pytest.mark.parametrize("arg", ["abc", [1.0], np.ones(2, np.float32), np.ones((2, 2)), None])
def test_mlir_call_with_bad_arrays(mlir_module, arg):
    _only_zymase_error(lambda: mlir_module.first(arg), "argument 1", quoted=False)
