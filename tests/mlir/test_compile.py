"""Numeric execution through ``zymase.mlir.compile``: every lowered op family runs.

Modules are compiled once per group (module-scoped fixtures) to keep this fast.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

import zymase.mlir
from zymase.errors import ZymaseError


def f32(x: float) -> float:
    """Round to the nearest float32 (what the compiled f32 code computes)."""
    return float(np.float32(x))


# ---------------------------------------------------------------------------- arith


@pytest.fixture(scope="module")
def arith_mod():
    return zymase.mlir.compile(
        """
        func.func @fops(%a: f64, %b: f64) -> (f64, f64, f64, f64, f64, f64) {
          %s = arith.addf %a, %b : f64
          %d = arith.subf %a, %b fastmath<contract> : f64
          %p = arith.mulf %a, %b : f64
          %q = arith.divf %a, %b : f64
          %r = arith.remf %a, %b : f64
          %n = arith.negf %a : f64
          func.return %s, %d, %p, %q, %r, %n : f64, f64, f64, f64, f64, f64
        }
        func.func @fops32(%a: f32, %b: f32) -> (f32, f32, f32, f32) {
          %s = arith.addf %a, %b : f32
          %p = arith.mulf %a, %b : f32
          %q = arith.divf %a, %b : f32
          %r = arith.remf %a, %b : f32
          func.return %s, %p, %q, %r : f32, f32, f32, f32
        }
        func.func @iops(%a: i64, %b: i64) -> (i64, i64, i64, i64, i64, i64, i64, i64, i64) {
          %0 = arith.addi %a, %b : i64
          %1 = arith.subi %a, %b : i64
          %2 = arith.muli %a, %b : i64
          %3 = arith.divsi %a, %b : i64
          %4 = arith.remsi %a, %b : i64
          %5 = arith.andi %a, %b : i64
          %6 = arith.ori %a, %b : i64
          %7 = arith.xori %a, %b : i64
          %8 = arith.floordivsi %a, %b : i64
          func.return %0, %1, %2, %3, %4, %5, %6, %7, %8 : i64, i64, i64, i64, i64, i64, i64, i64, i64
        }
        func.func @uops(%a: i32, %b: i32) -> (i32, i32, i32) {
          %0 = arith.divui %a, %b : i32
          %1 = arith.remui %a, %b : i32
          %2 = arith.ceildivui %a, %b : i32
          func.return %0, %1, %2 : i32, i32, i32
        }
        func.func @ceildiv(%a: index, %b: index) -> index {
          %0 = arith.ceildivsi %a, %b : index
          func.return %0 : index
        }
        func.func @shifts(%a: i64, %s: i64) -> (i64, i64, i64) {
          %0 = arith.shli %a, %s : i64
          %1 = arith.shrsi %a, %s : i64
          %2 = arith.shrui %a, %s : i64
          func.return %0, %1, %2 : i64, i64, i64
        }
        func.func @minmax(%a: f64, %b: f64) -> (f64, f64, f64, f64) {
          %0 = arith.minimumf %a, %b : f64
          %1 = arith.maximumf %a, %b : f64
          %2 = arith.minnumf %a, %b : f64
          %3 = arith.maxnumf %a, %b : f64
          func.return %0, %1, %2, %3 : f64, f64, f64, f64
        }
        func.func @iminmax(%a: i64, %b: i64) -> (i64, i64, i64, i64) {
          %0 = arith.minsi %a, %b : i64
          %1 = arith.maxsi %a, %b : i64
          %2 = arith.minui %a, %b : i64
          %3 = arith.maxui %a, %b : i64
          func.return %0, %1, %2, %3 : i64, i64, i64, i64
        }
        func.func @consts() -> (f64, f32, i64, i1, index) {
          %0 = arith.constant 2.5 : f64
          %1 = arith.constant -0.125 : f32
          %2 = arith.constant -9007199254740993 : i64
          %3 = arith.constant true
          %4 = arith.constant 42 : index
          func.return %0, %1, %2, %3, %4 : f64, f32, i64, i1, index
        }
        """
    )


@pytest.mark.parametrize("a,b", [(7.5, 2.0), (-7.5, 2.0), (1e300, -3.25), (0.1, 0.7)])
def test_float_arith_f64(arith_mod, a, b):
    assert arith_mod.fops(a, b) == (a + b, a - b, a * b, a / b, math.fmod(a, b), -a)


def test_float_arith_f32(arith_mod):
    a, b = f32(7.3), f32(-2.1)
    s, p, q, r = arith_mod.fops32(a, b)
    assert s == f32(a + b) and p == f32(a * b) and q == f32(a / b)
    assert r == f32(math.fmod(a, b))


def _wrap64(x: int) -> int:
    return (x + 2**63) % 2**64 - 2**63


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@pytest.mark.parametrize("a,b", [(17, 5), (-17, 5), (17, -5), (-17, -5), (2**62, 7), (0, 3)])
def test_integer_arith(arith_mod, a, b):
    q = _trunc_div(a, b)
    expected = (a + b, a - b, _wrap64(a * b), q, a - q * b, a & b, a | b, a ^ b, a // b)
    assert arith_mod.iops(a, b) == expected
    assert arith_mod.ceildiv(a, b) == -((-a) // b)


def test_unsigned_division(arith_mod):
    # -8 as u32 is 4294967288
    assert arith_mod.uops(-8, 5) == (
        _wrap32(4294967288 // 5), _wrap32(4294967288 % 5), _wrap32(-(-4294967288 // 5))
    )
    assert arith_mod.uops(10, 5) == (2, 0, 2)
    assert arith_mod.uops(11, 5) == (2, 1, 3)


def _wrap32(x: int) -> int:
    return (x + 2**31) % 2**32 - 2**31


def test_shifts(arith_mod):
    assert arith_mod.shifts(-20, 2) == (-80, -5, (2**64 - 20) >> 2)
    assert arith_mod.shifts(3, 62) == (_wrap64(3 << 62), 0, 0)


def test_min_max(arith_mod):
    assert arith_mod.minmax(1.0, -2.0) == (-2.0, 1.0, -2.0, 1.0)
    nan = float("nan")
    lo, hi, lo_num, hi_num = arith_mod.minmax(nan, 3.0)
    assert math.isnan(lo) and math.isnan(hi)  # minimum/maximum propagate NaN
    assert lo_num == 3.0 and hi_num == 3.0  # minnum/maxnum ignore it
    assert arith_mod.iminmax(-1, 2) == (-1, 2, 2, -1)


def test_constants(arith_mod):
    assert arith_mod.consts() == (2.5, -0.125, -9007199254740993, True, 42)


# ---------------------------------------------------------------------------- math

UNARY_F64 = {
    "sqrt": math.sqrt, "exp": math.exp, "exp2": lambda x: 2.0**x, "log": math.log,
    "log2": math.log2, "log10": math.log10, "sin": math.sin, "cos": math.cos,
    "tan": math.tan, "absf": abs, "floor": math.floor, "ceil": math.ceil,
    "round": lambda x: math.copysign(math.floor(abs(x) + 0.5), x),
    "roundeven": round, "trunc": math.trunc, "atan": math.atan, "tanh": math.tanh,
    "sinh": math.sinh, "cosh": math.cosh, "asin": math.asin, "acos": math.acos,
    "erf": math.erf, "cbrt": lambda x: math.copysign(abs(x) ** (1 / 3), x),
    "expm1": math.expm1, "log1p": math.log1p, "rsqrt": lambda x: 1 / math.sqrt(x),
    "asinh": math.asinh, "atanh": math.atanh,
}
BINARY_F64 = {"powf": math.pow, "atan2": math.atan2, "copysign": math.copysign}


@pytest.fixture(scope="module")
def math_mod():
    funcs = []
    for name in UNARY_F64:
        for t in ("f64", "f32"):
            funcs.append(
                f"func.func @{name}_{t}(%x: {t}) -> {t} {{\n"
                f"  %r = math.{name} %x : {t}\n  func.return %r : {t}\n}}"
            )
    for name in BINARY_F64:
        funcs.append(
            f"func.func @{name}_f64(%x: f64, %y: f64) -> f64 {{\n"
            f"  %r = math.{name} %x, %y : f64\n  func.return %r : f64\n}}"
        )
    funcs.append(
        """
        func.func @acosh_f64(%x: f64) -> f64 {
          %r = math.acosh %x : f64
          func.return %r : f64
        }
        func.func @fma_f64(%x: f64, %y: f64, %z: f64) -> f64 {
          %r = math.fma %x, %y, %z : f64
          func.return %r : f64
        }
        func.func @fpowi_f64(%x: f64, %n: i32) -> f64 {
          %r = math.fpowi %x, %n : f64, i32
          func.return %r : f64
        }
        func.func @ibits(%x: i32) -> (i32, i32, i32, i32) {
          %0 = math.absi %x : i32
          %1 = math.ctlz %x : i32
          %2 = math.cttz %x : i32
          %3 = math.ctpop %x : i32
          func.return %0, %1, %2, %3 : i32, i32, i32, i32
        }
        """
    )
    return zymase.mlir.compile("\n".join(funcs))


@pytest.mark.parametrize("name", sorted(UNARY_F64))
@pytest.mark.parametrize("x", [0.37, -0.62, 2.5])
def test_unary_math_f64(math_mod, name, x):
    expected_fn = UNARY_F64[name]
    try:
        expected = expected_fn(x)
    except ValueError:  # outside the domain: libm returns NaN
        assert math.isnan(getattr(math_mod, f"{name}_f64")(x))
        return
    assert getattr(math_mod, f"{name}_f64")(x) == pytest.approx(expected, rel=1e-15, abs=1e-300)


@pytest.mark.parametrize("name", sorted(UNARY_F64))
def test_unary_math_f32(math_mod, name):
    x = f32(0.37)
    assert getattr(math_mod, f"{name}_f32")(x) == pytest.approx(UNARY_F64[name](x), rel=1e-6)


@pytest.mark.parametrize("name", sorted(BINARY_F64))
def test_binary_math(math_mod, name):
    for x, y in [(0.7, 1.3), (-2.0, 3.0), (2.0, -0.5)]:
        got = getattr(math_mod, f"{name}_f64")(x, y)
        assert got == pytest.approx(BINARY_F64[name](x, y), rel=1e-15)


def test_other_math(math_mod):
    assert math_mod.acosh_f64(1.7) == pytest.approx(math.acosh(1.7), rel=1e-15)
    assert math_mod.fma_f64(0.1, 10.0, -1.0) == pytest.approx(5.551115123125783e-17, rel=1e-12)
    assert math_mod.fpowi_f64(1.5, 5) == 1.5**5
    assert math_mod.fpowi_f64(2.0, -3) == 0.125
    assert math_mod.ibits(-12) == (12, 0, 2, 32 - 3)  # -12 = 0xFFFFFFF4
    assert math_mod.ibits(1) == (1, 31, 0, 1)


def test_round_half_cases(math_mod):
    assert math_mod.round_f64(2.5) == 3.0 and math_mod.round_f64(-2.5) == -3.0
    assert math_mod.roundeven_f64(2.5) == 2.0 and math_mod.roundeven_f64(3.5) == 4.0


# ---------------------------------------------------------------------------- casts


@pytest.fixture(scope="module")
def cast_mod():
    return zymase.mlir.compile(
        """
        func.func @f2i(%x: f64) -> (i64, i32, i16) {
          %0 = arith.fptosi %x : f64 to i64
          %1 = arith.fptoui %x : f64 to i32
          %2 = arith.fptosi %x : f64 to i16
          func.return %0, %1, %2 : i64, i32, i16
        }
        func.func @i2f(%i: i16) -> (f64, f64, f32) {
          %0 = arith.sitofp %i : i16 to f64
          %1 = arith.uitofp %i : i16 to f64
          %2 = arith.sitofp %i : i16 to f32
          func.return %0, %1, %2 : f64, f64, f32
        }
        func.func @ints(%i: i8) -> (i64, i64, i8, index, index, i32) {
          %0 = arith.extsi %i : i8 to i64
          %1 = arith.extui %i : i8 to i64
          %big = arith.constant 1000 : i64
          %2 = arith.addi %0, %big : i64
          %3 = arith.trunci %2 : i64 to i8
          %4 = arith.index_cast %i : i8 to index
          %5 = arith.index_castui %i : i8 to index
          %6 = arith.index_cast %4 : index to i32
          func.return %0, %1, %3, %4, %5, %6 : i64, i64, i8, index, index, i32
        }
        func.func @floats(%x: f64) -> (f32, f64, i64, f64) {
          %0 = arith.truncf %x : f64 to f32
          %1 = arith.extf %0 : f32 to f64
          %2 = arith.bitcast %x : f64 to i64
          %3 = arith.bitcast %2 : i64 to f64
          func.return %0, %1, %2, %3 : f32, f64, i64, f64
        }
        """
    )


def test_float_to_int(cast_mod):
    assert cast_mod.f2i(-2.7)[::2] == (-2, -2)  # fptoui of a negative value is poison
    assert cast_mod.f2i(3.9) == (3, 3, 3)
    assert cast_mod.f2i(3_000_000_000.5)[:2] == (3_000_000_000, _wrap32(3_000_000_000))


def test_int_to_float(cast_mod):
    assert cast_mod.i2f(-1) == (-1.0, 65535.0, -1.0)
    assert cast_mod.i2f(300) == (300.0, 300.0, 300.0)


def test_int_resizes(cast_mod):
    # trunc(997) to i8 = 997 mod 256 = 229 = -27 signed
    assert cast_mod.ints(-3) == (-3, 253, -27, -3, 253, -3)


def test_float_casts(cast_mod):
    x = 0.1
    lo, back, bits, same = cast_mod.floats(x)
    assert lo == f32(x) and back == f32(x)
    assert bits == struct.unpack("<q", struct.pack("<d", x))[0]
    assert same == x


# ---------------------------------------------------------------------------- compare/select


FCMP = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
        "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"]
ICMP = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


def _fcmp(pred: str, a: float, b: float) -> bool:
    unordered = math.isnan(a) or math.isnan(b)
    rel = {
        "eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b, "ne": a != b,
    }
    if pred in ("false", "true"):
        return pred == "true"
    if pred == "ord":
        return not unordered
    if pred == "uno":
        return unordered
    if pred[0] == "o":
        return not unordered and rel[pred[1:]]
    return unordered or rel[pred[1:]]


def _icmp(pred: str, a: int, b: int) -> bool:
    if pred[0] == "u":
        a, b = a % 2**64, b % 2**64
        pred = pred[1:]
    elif pred[0] == "s":
        pred = pred[1:]
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b,
            "ge": a >= b}[pred]


@pytest.fixture(scope="module")
def cmp_mod():
    funcs = [
        f"""func.func @f_{p}(%a: f64, %b: f64) -> (i1, f64) {{
              %c = arith.cmpf {p}, %a, %b : f64
              %s = arith.select %c, %a, %b : f64
              func.return %c, %s : i1, f64
            }}"""
        for p in FCMP
    ]
    funcs += [
        f"""func.func @i_{p}(%a: i64, %b: i64) -> i1 {{
              %c = arith.cmpi {p}, %a, %b : i64
              func.return %c : i1
            }}"""
        for p in ICMP
    ]
    funcs.append(
        """func.func @sel_i32(%c: i1, %a: i32, %b: i32) -> i32 {
             %s = arith.select %c, %a, %b : i32
             func.return %s : i32
           }"""
    )
    return zymase.mlir.compile("\n".join(funcs))


@pytest.mark.parametrize("pred", FCMP)
def test_fcmp_and_select(cmp_mod, pred):
    nan = float("nan")
    for a, b in [(1.0, 2.0), (2.0, 1.0), (1.5, 1.5), (nan, 1.0), (1.0, nan)]:
        c, s = getattr(cmp_mod, f"f_{pred}")(a, b)
        assert c is _fcmp(pred, a, b), (pred, a, b)
        expected = a if c else b
        assert s == expected or (math.isnan(s) and math.isnan(expected))


@pytest.mark.parametrize("pred", ICMP)
def test_icmp(cmp_mod, pred):
    for a, b in [(1, 2), (2, 1), (5, 5), (-1, 1), (1, -1)]:
        assert getattr(cmp_mod, f"i_{pred}")(a, b) is _icmp(pred, a, b), (pred, a, b)


def test_select_int(cmp_mod):
    assert cmp_mod.sel_i32(True, 3, 4) == 3 and cmp_mod.sel_i32(False, 3, 4) == 4


# ---------------------------------------------------------------------------- control flow and calls


@pytest.fixture(scope="module")
def cf_mod():
    return zymase.mlir.compile(
        """
        // exp(x) as a power series, summed in a while loop until the term is tiny.
        func.func @exp_series(%x: f64) -> (f64, index) {
          %zero = arith.constant 0 : index
          %one = arith.constant 1 : index
          %f1 = arith.constant 1.0 : f64
          %eps = arith.constant 1.0e-17 : f64
          cf.br ^loop(%one, %f1, %f1 : index, f64, f64)
        ^loop(%k: index, %term: f64, %sum: f64):
          %ki = arith.index_cast %k : index to i64
          %kf = arith.sitofp %ki : i64 to f64
          %t1 = arith.mulf %term, %x : f64
          %t2 = arith.divf %t1, %kf : f64
          %s2 = arith.addf %sum, %t2 : f64
          %k2 = arith.addi %k, %one : index
          %mag = math.absf %t2 : f64
          %small = arith.cmpf olt, %mag, %eps : f64
          cf.cond_br %small, ^done(%s2, %k2 : f64, index), ^loop(%k2, %t2, %s2 : index, f64, f64)
        ^done(%r: f64, %n: index):
          func.return %r, %n : f64, index
        }
        func.func @classify(%k: i32) -> f64 {
          cf.switch %k : i32, [
            default: ^other,
            0: ^zero,
            3: ^three(%k : i32),
            -7: ^neg
          ]
        ^zero:
          %a = arith.constant 10.0 : f64
          func.return %a : f64
        ^three(%v: i32):
          %b = arith.sitofp %v : i32 to f64
          func.return %b : f64
        ^neg:
          %c = arith.constant -70.0 : f64
          func.return %c : f64
        ^other:
          %d = arith.constant 0.5 : f64
          func.return %d : f64
        }
        func.func @switch_index(%k: index) -> index {
          %c100 = arith.constant 100 : index
          cf.switch %k : index, [default: ^d(%k : index), 1: ^d(%c100 : index)]
        ^d(%v: index):
          func.return %v : index
        }
        func.func private @fib(%n: i64) -> i64 {
          %two = arith.constant 2 : i64
          %small = arith.cmpi slt, %n, %two : i64
          cf.cond_br %small, ^base, ^rec
        ^base:
          func.return %n : i64
        ^rec:
          %one = arith.constant 1 : i64
          %n1 = arith.subi %n, %one : i64
          %n2 = arith.subi %n, %two : i64
          %a = func.call @fib(%n1) : (i64) -> i64
          %b = func.call @fib(%n2) : (i64) -> i64
          %s = arith.addi %a, %b : i64
          func.return %s : i64
        }
        func.func @fib_pub(%n: i64) -> i64 {
          %r = func.call @fib(%n) : (i64) -> i64
          func.return %r : i64
        }
        func.func @divmod(%a: i64, %b: i64) -> (i64, i64) {
          %q = arith.divsi %a, %b : i64
          %r = arith.remsi %a, %b : i64
          func.return %q, %r : i64, i64
        }
        func.func @stats(%x: f64, %y: f64) -> (f64, f64, f64, i32, i1) {
          %q:2 = func.call @divmod_f(%x, %y) : (f64, f64) -> (f64, f64)
          %p = arith.mulf %x, %y : f64
          %i = arith.fptosi %q#0 : f64 to i32
          %pos = arith.cmpf ogt, %p, %q#1 : f64
          func.return %q#0, %q#1, %p, %i, %pos : f64, f64, f64, i32, i1
        }
        func.func private @divmod_f(%x: f64, %y: f64) -> (f64, f64) {
          %q = arith.divf %x, %y : f64
          %t = math.trunc %q : f64
          %r = arith.remf %x, %y : f64
          func.return %t, %r : f64, f64
        }
        func.func @nothing(%x: f64) {
          func.return
        }
        func.func @checked_sqrt(%x: f64) -> f64 {
          %z = arith.constant 0.0 : f64
          %ok = arith.cmpf oge, %x, %z : f64
          cf.assert %ok, "negative"
          %r = math.sqrt %x : f64
          func.return %r : f64
        }
        func.func @scf_sum(%n: index, %x: f32) -> f32 {
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          %z = arith.constant 0.0 : f32
          %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {
            %a = arith.addf %acc, %x : f32
            scf.yield %a : f32
          }
          func.return %r : f32
        }
        """
    )


@pytest.mark.parametrize("x", [0.0, 1.0, -2.5, 3.7])
def test_while_loop_power_series(cf_mod, x):
    value, terms = cf_mod.exp_series(x)
    assert value == pytest.approx(math.exp(x), rel=1e-14)
    assert terms == 2 if x == 0.0 else terms > 10  # the loop really iterated


def test_switch(cf_mod):
    assert [cf_mod.classify(k) for k in (0, 3, -7, 5, 1)] == [10.0, 3.0, -70.0, 0.5, 0.5]
    assert cf_mod.switch_index(1) == 100 and cf_mod.switch_index(8) == 8


def test_recursion_and_calls(cf_mod):
    assert [cf_mod.fib_pub(n) for n in range(10)] == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]
    assert cf_mod.fib_pub(25) == 75025


def test_multi_result(cf_mod):
    assert cf_mod.divmod(17, -5) == (-3, 2)
    q, r, p, i, pos = cf_mod.stats(7.5, 2.0)
    assert (q, r, p, i, pos) == (3.0, 1.5, 15.0, 3, True)
    assert cf_mod.stats(-7.5, 2.0)[4] is False


def test_no_result_and_assert_ok(cf_mod):
    assert cf_mod.nothing(1.0) is None
    assert cf_mod.checked_sqrt(2.25) == 1.5


def test_scf_is_converted(cf_mod):
    assert cf_mod.scf_sum(10, 0.5) == 5.0


def test_private_functions_are_not_exposed(cf_mod):
    assert "fib" not in cf_mod.functions and "fib_pub" in cf_mod.functions
    with pytest.raises(AttributeError, match="fib_pub"):
        cf_mod.fib  # noqa: B018


def test_wrong_argument_count(cf_mod):
    with pytest.raises(TypeError, match=r"takes 2 arguments but 1 was given"):
        cf_mod.divmod(1)
    with pytest.raises(ZymaseError):
        cf_mod.exp_series(1.0, 2.0)
    with pytest.raises(TypeError):
        cf_mod.divmod(1.5, 2)  # a float for an integer parameter


# ---------------------------------------------------------------------------- enzyme ops


@pytest.fixture(scope="module")
def enzyme_mod():
    return zymase.mlir.compile(
        """
        // Push v_k = 1.5 * k for k < n, pop them back; count pops out of LIFO order.
        func.func @lifo(%n: index) -> (f64, f64, index) {
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          %h = arith.constant 1.5 : f64
          %z = arith.constant 0.0 : f64
          %cache = enzyme.init : !enzyme.Cache<f64>
          cf.br ^push(%c0, %z : index, f64)
        ^push(%i: index, %s: f64):
          %more = arith.cmpi slt, %i, %n : index
          cf.cond_br %more, ^pbody, ^pops(%n, %z, %c0 : index, f64, index)
        ^pbody:
          %ii = arith.index_cast %i : index to i64
          %fi = arith.sitofp %ii : i64 to f64
          %v = arith.mulf %fi, %h : f64
          enzyme.push %cache, %v : !enzyme.Cache<f64>, f64
          %s2 = arith.addf %s, %v : f64
          %i2 = arith.addi %i, %c1 : index
          cf.br ^push(%i2, %s2 : index, f64)
        ^pops(%j: index, %t: f64, %bad: index):
          %left = arith.cmpi sgt, %j, %c0 : index
          cf.cond_br %left, ^pop, ^done(%t, %bad : f64, index)
        ^pop:
          %j2 = arith.subi %j, %c1 : index
          %x = enzyme.pop %cache : !enzyme.Cache<f64> -> f64
          %jj = arith.index_cast %j2 : index to i64
          %fj = arith.sitofp %jj : i64 to f64
          %want = arith.mulf %fj, %h : f64
          %ok = arith.cmpf oeq, %x, %want : f64
          %inc = arith.select %ok, %c0, %c1 : index
          %bad2 = arith.addi %bad, %inc : index
          %t2 = arith.addf %t, %x : f64
          cf.br ^pops(%j2, %t2, %bad2 : index, f64, index)
        ^done(%total: f64, %errors: index):
          func.return %s, %total, %errors : f64, f64, index
        }
        // Mixed element types in separate caches, interleaved, and an i1 cache.
        func.func @mixed(%a: i32, %b: f64, %c: i1) -> (f64, i32, i1, f64) {
          %ci = enzyme.init : !enzyme.Cache<i32>
          %cf = enzyme.init : !enzyme.Cache<f64>
          %cb = enzyme.init : !enzyme.Cache<i1>
          %one = arith.constant 1.0 : f64
          %b2 = arith.addf %b, %one : f64
          enzyme.push %cf, %b : !enzyme.Cache<f64>, f64
          enzyme.push %ci, %a : !enzyme.Cache<i32>, i32
          enzyme.push %cf, %b2 : !enzyme.Cache<f64>, f64
          enzyme.push %cb, %c : !enzyme.Cache<i1>, i1
          %x = enzyme.pop %cf : !enzyme.Cache<f64> -> f64
          %y = enzyme.pop %ci : !enzyme.Cache<i32> -> i32
          %w = enzyme.pop %cb : !enzyme.Cache<i1> -> i1
          %z = enzyme.pop %cf : !enzyme.Cache<f64> -> f64
          func.return %x, %y, %w, %z : f64, i32, i1, f64
        }
        // A gradient accumulator summing x^2 over a loop, reset by each init.
        func.func @accumulate(%x: f64, %n: index) -> f64 {
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          %g = enzyme.init : !enzyme.Gradient<f64>
          cf.br ^loop(%c0 : index)
        ^loop(%i: index):
          %more = arith.cmpi slt, %i, %n : index
          cf.cond_br %more, ^body, ^exit
        ^body:
          %old = enzyme.get %g : !enzyme.Gradient<f64> -> f64
          %sq = arith.mulf %x, %x : f64
          %new = arith.addf %old, %sq : f64
          enzyme.set %g, %new : !enzyme.Gradient<f64>, f64
          %i2 = arith.addi %i, %c1 : index
          cf.br ^loop(%i2 : index)
        ^exit:
          %r = enzyme.get %g : !enzyme.Gradient<f64> -> f64
          func.return %r : f64
        }
        """
    )


def test_cache_push_1000_pop_in_reverse(enzyme_mod):
    n = 1000
    pushed, popped, errors = enzyme_mod.lifo(n)
    expected = 1.5 * n * (n - 1) / 2
    assert errors == 0
    assert pushed == expected and popped == expected


def test_cache_many_calls_and_empty(enzyme_mod):
    # Repeated calls must not leak or reuse stale state; n = 0 never allocates.
    for n in (0, 1, 33, 5000):
        assert enzyme_mod.lifo(n)[2] == 0
    assert enzyme_mod.lifo(0) == (0.0, 0.0, 0)


def test_cache_mixed_types(enzyme_mod):
    assert enzyme_mod.mixed(-7, 2.5, True) == (3.5, -7, True, 2.5)
    assert enzyme_mod.mixed(9, -1.0, False) == (0.0, 9, False, -1.0)


def test_gradient_accumulator(enzyme_mod):
    assert enzyme_mod.accumulate(3.0, 4) == 36.0
    assert enzyme_mod.accumulate(3.0, 0) == 0.0
    assert enzyme_mod.accumulate(-2.0, 10) == 40.0


# ---------------------------------------------------------------------------- errors


def test_parse_error_is_a_zymase_error():
    with pytest.raises(ZymaseError, match="cannot parse"):
        zymase.mlir.compile("func.func @f( {")


def test_verify_error_is_a_zymase_error():
    with pytest.raises(ZymaseError, match="does not verify"):
        zymase.mlir.compile(
            """
            func.func @f(%x: f64) -> f64 {
              %y = arith.addf %x, %x : f64
            }
            """
        )


def test_unsupported_op_is_reported():
    with pytest.raises(ZymaseError) as info:
        zymase.mlir.compile(
            """
            func.func @f(%x: i32) -> i32 {
              %r = math.ipowi %x, %x : i32
              func.return %r : i32
            }
            """
        )
    assert info.value.construct == "math.ipowi" and info.value.function == "f"


@pytest.mark.parametrize("level", [0, 3])
def test_opt_levels(level):
    mod = zymase.mlir.compile(
        """
        func.func @f(%x: f64) -> f64 {
          %y = math.sin %x : f64
          func.return %y : f64
        }
        """,
        opt_level=level,
    )
    assert mod.f(0.5) == math.sin(0.5)


# ---------------------------------------------------------------------------- whole pipeline


def test_failed_assert_traps_in_compiled_code():
    """A false cf.assert stops the process (run in a child so pytest survives)."""
    import subprocess
    import sys
    from pathlib import Path

    src = Path(__file__).resolve().parents[2] / "src"
    program = f"""
import sys; sys.path.insert(0, {str(src)!r})
import zymase.mlir
m = zymase.mlir.compile('''
func.func @f(%x: f64) -> f64 {{
  %z = arith.constant 0.0 : f64
  %ok = arith.cmpf oge, %x, %z : f64
  cf.assert %ok, "negative"
  func.return %x : f64
}}''')
print(m.f(1.0), flush=True)
m.f(-1.0)
print("not reached", flush=True)
"""
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert proc.stdout.strip() == "1.0"
    assert proc.returncode != 0


def test_autodiff_and_fwddiff_through_compile():
    """enzyme.autodiff/fwddiff ops are differentiated, then lowered like the rest."""
    mod = zymase.mlir.compile(
        """
        func.func @f(%x: f64, %n: index) -> f64 {
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          cf.br ^loop(%c0, %x : index, f64)
        ^loop(%i: index, %acc: f64):
          %more = arith.cmpi slt, %i, %n : index
          cf.cond_br %more, ^body, ^exit
        ^body:
          %s = math.sin %acc : f64
          %a2 = arith.mulf %s, %x : f64
          %i2 = arith.addi %i, %c1 : index
          cf.br ^loop(%i2, %a2 : index, f64)
        ^exit:
          func.return %acc : f64
        }
        func.func @df(%x: f64, %n: index) -> f64 {
          %one = arith.constant 1.0 : f64
          %r = enzyme.autodiff @f(%x, %n, %one) {
                 activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_const>],
                 ret_activity = [#enzyme<activity enzyme_activenoneed>]
               } : (f64, index, f64) -> f64
          func.return %r : f64
        }
        func.func @tf(%x: f64, %n: index) -> (f64, f64) {
          %one = arith.constant 1.0 : f64
          %r:2 = enzyme.fwddiff @f(%x, %one, %n) {
                   activity = [#enzyme<activity enzyme_dup>, #enzyme<activity enzyme_const>],
                   ret_activity = [#enzyme<activity enzyme_dup>]
                 } : (f64, f64, index) -> (f64, f64)
          func.return %r#0, %r#1 : f64, f64
        }
        """
    )
    x, n, h = 0.7, 5, 1e-6
    numeric = (mod.f(x + h, n) - mod.f(x - h, n)) / (2 * h)
    assert mod.df(x, n) == pytest.approx(numeric, rel=1e-7)
    value, tangent = mod.tf(x, n)
    assert value == mod.f(x, n)
    assert tangent == pytest.approx(mod.df(x, n), rel=1e-12)
