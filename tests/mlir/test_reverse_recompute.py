"""Reverse mode of func/arith/memref code computes cheap values again instead of
caching them (tape.recompute_cut, at the structured level and after lowering scf to
branches): arith ops, loads of memrefs that no op of the function writes, and (on
branches) induction variables are re-run in the reverse loop, so a reduction over an
input array needs no tape at all; at the structured level, a load is also read
again when nothing writes its memory after the loop holding it (a buffer's dealloc
then waits for the reverse sweep). Loads of memory written later (by the function,
through another argument that may alias it, or by a callee) must still be cached:
these cases check the values, where re-reading would give a wrong derivative."""

from __future__ import annotations

import numpy as np
import pytest

import zymase.mlir
from zymase.transforms.pipeline import run_passes

CONST, ACTIVE, DUP, ACTIVENONEED = (
    f"#enzyme<activity enzyme_{a}>" for a in ("const", "active", "dup", "activenoneed")
)

SUMSQ = """
// sum_i (w x_i)^2: nothing writes x, so the reverse loop reads x_i again
func.func @sumsq(%x: memref<?xf64>, %w: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf64>
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
    %v = memref.load %x[%i] : memref<?xf64>
    %p = arith.mulf %w, %v : f64
    %q = arith.mulf %p, %p : f64
    %s = arith.addf %acc, %q : f64
    scf.yield %s : f64
  }
  func.return %r : f64
}
"""
CONSUME = """
// sum_i sin(w x_i), zeroing x_i after reading it: x_i must be cached
func.func @consume(%x: memref<?xf64>, %w: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf64>
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
    %v = memref.load %x[%i] : memref<?xf64>
    %p = arith.mulf %w, %v : f64
    %t = math.sin %p : f64
    %s = arith.addf %acc, %t : f64
    memref.store %z, %x[%i] : memref<?xf64>
    scf.yield %s : f64
  }
  func.return %r : f64
}
"""
TWICE = """
// sum_i (w x_i)^2 writing y_i = 2 x_i: y may be x, so x_i must be cached
func.func @twice(%x: memref<?xf64>, %y: memref<?xf64>, %w: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f64
  %n = memref.dim %x, %c0 : memref<?xf64>
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
    %v = memref.load %x[%i] : memref<?xf64>
    %p = arith.mulf %w, %v : f64
    %q = arith.mulf %p, %p : f64
    %s = arith.addf %acc, %q : f64
    %v2 = arith.mulf %two, %v : f64
    memref.store %v2, %y[%i] : memref<?xf64>
    scf.yield %s : f64
  }
  func.return %r : f64
}
"""
# the same, with the arguments declared not to alias: x_i is read again
TWICE_NOALIAS = TWICE.replace("@twice(%x: memref<?xf64>, %y: memref<?xf64>,",
                              "@twice_noalias(%x: memref<?xf64> {llvm.noalias}, %y: memref<?xf64> {llvm.noalias},")
SCRATCH = """
// a scratch buffer of exp(w x_i), then sum_i t_i x_i: nothing writes the scratch
// after the second loop reads it, so the reverse reads it again (its dealloc waits
// for the reverse sweep); x is only read, and w x_i is computed again from it
func.func @scratch(%x: memref<?xf64>, %w: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf64>
  %z = arith.constant 0.0 : f64
  %t = memref.alloc(%n) : memref<?xf64>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf64>
    %p = arith.mulf %w, %v : f64
    %e = math.exp %p : f64
    memref.store %e, %t[%i] : memref<?xf64>
  }
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
    %e = memref.load %t[%i] : memref<?xf64>
    %v = memref.load %x[%i] : memref<?xf64>
    %q = arith.mulf %e, %v : f64
    %s = arith.addf %acc, %q : f64
    scf.yield %s : f64
  }
  memref.dealloc %t : memref<?xf64>
  func.return %r : f64
}
"""
# the same scratch, overwritten by a third loop after the second read it: the second
# loop's loads must be cached
REUSE = SCRATCH.replace("@scratch(", "@reuse(").replace(
    "  memref.dealloc %t",
    "  scf.for %i = %c0 to %n step %c1 {\n    memref.store %z, %t[%i] : memref<?xf64>\n  }\n  memref.dealloc %t",
)


def _driver(name: str, args: list[tuple[str, str]]) -> str:
    """``@d_<name>``: reverse mode of ``@<name>`` for the activities given per argument
    (``active``: an f64; ``dup``: a memref followed by its shadow ``%d<arg>``;
    ``const``: a memref), returning the derivative of the active one."""
    params, operands, types, activities = [], [], [], []
    for arg, kind in args:
        typ = "f64" if kind == "active" else "memref<?xf64>"
        names = [arg, "d" + arg] if kind == "dup" else [arg]
        params += [f"%{a}: {typ}" for a in names]
        operands += [f"%{a}" for a in names]
        types += [typ] * len(names)
        activities.append({"active": ACTIVE, "dup": DUP, "const": CONST}[kind])
    return (
        f"func.func @d_{name}({', '.join(params)}) -> f64 {{\n"
        "  %one = arith.constant 1.0 : f64\n"
        f"  %dw = enzyme.autodiff @{name}({', '.join(operands)}, %one) {{activity = [{', '.join(activities)}], "
        f"ret_activity = [{ACTIVENONEED}]}} : ({', '.join(types)}, f64) -> f64\n"
        "  func.return %dw : f64\n}\n"
    )


DUP_X, CONST_X, W_ACTIVE = ("x", "dup"), ("x", "const"), ("w", "active")
SOURCE = "".join([SUMSQ, CONSUME, TWICE, TWICE_NOALIAS, SCRATCH, REUSE,
                  _driver("sumsq", [DUP_X, W_ACTIVE]),
                  _driver("consume", [CONST_X, W_ACTIVE]),
                  _driver("twice", [CONST_X, ("y", "const"), W_ACTIVE]),
                  _driver("twice_noalias", [CONST_X, ("y", "const"), W_ACTIVE]),
                  _driver("scratch", [DUP_X, W_ACTIVE]),
                  _driver("reuse", [DUP_X, W_ACTIVE])])


def _reverse_function(name: str, generator: str = "enzyme") -> str:
    """The derivative of ``name`` after the cleanup, as text."""
    out = run_passes(SOURCE, "recompute", [generator, "remove-unnecessary-enzyme-ops", "canonicalize", "cse"])
    start = out.index(f"func.func private @diffe{name}(")
    return out[start:out.index("\n  }\n", start)]


def test_on_branches_only_the_trip_count_is_cached():
    """After lowering scf to branches (enzyme-cfg): x_i is read again at the induction
    variable rebuilt from the iteration counter; the only cache holds the trip count,
    pushed once. Where x is written, x_i goes on a cache."""
    text = _reverse_function("sumsq", "enzyme-cfg")
    assert "!enzyme.Cache<f64>" not in text and text.count("enzyme.push") == 1, text
    assert "!enzyme.Cache<f64>" in _reverse_function("twice", "enzyme-cfg")


def test_reduction_over_an_input_needs_no_tape():
    text = _reverse_function("sumsq")
    assert "memref.alloc" not in text and "enzyme." not in text, text
    assert text.count("memref.load %0[") == 1, text  # x_i read again in the reverse loop


@pytest.mark.parametrize("name", ["consume", "twice"])
def test_loads_of_written_memory_are_cached(name):
    text = _reverse_function(name)
    assert "memref.alloc" in text, text  # the buffer holding x_i for the reverse loop


def test_noalias_arguments_are_read_again():
    for generator in ("enzyme", "enzyme-cfg"):
        text = _reverse_function("twice_noalias", generator)
        assert "memref.alloc" not in text and "!enzyme.Cache<f64>" not in text, text


def test_scratch_buffer_is_read_again_and_freed_after_the_reverse_sweep():
    text = _reverse_function("scratch")
    assert "memref.store %e_1, " not in text, text  # the second loop's loads are not cached
    assert "memref.store %v" not in text, text  # nor are x_i: both reverse loops read them again
    assert text.rstrip().splitlines()[-2].strip() == "memref.dealloc %t : memref<?xf64>", text


def test_scratch_overwritten_later_is_cached():
    text = _reverse_function("reuse")
    assert "memref.store %e_1, " in text, text


@pytest.fixture(scope="module", params=[(0, True), (2, True), (2, False)], ids=["O0", "O2", "O2-branches"])
def mod(request):
    level, structured = request.param
    return zymase.mlir.compile(SOURCE, opt_level=level, structured_ad=structured)


def _fd(f, w, h=1e-6):
    return (f(w + h) - f(w - h)) / (2 * h)


X = np.random.default_rng(3).normal(size=37)
W = 0.7


def test_sumsq_gradient(mod):
    dx = np.zeros_like(X)
    dw = mod.d_sumsq(X, dx, W)
    np.testing.assert_allclose(dw, 2 * W * np.sum(X * X), rtol=1e-13)
    np.testing.assert_allclose(dx, 2 * W * W * X, rtol=1e-13)
    assert dw == pytest.approx(_fd(lambda w: mod.sumsq(X, w), W), rel=1e-7)


def test_consume_gradient(mod):
    x = X.copy()
    dw = mod.d_consume(x, W)
    assert np.all(x == 0.0)  # the forward sweep ran the stores
    np.testing.assert_allclose(dw, np.sum(np.cos(W * X) * X), rtol=1e-13)
    assert dw == pytest.approx(_fd(lambda w: mod.consume(X.copy(), w), W), rel=1e-7)


def test_twice_gradient_with_aliasing_arguments(mod):
    x = X.copy()
    dw = mod.d_twice(x, x, W)  # y is x: x_i is doubled right after it is read
    np.testing.assert_allclose(x, 2 * X)
    np.testing.assert_allclose(dw, 2 * W * np.sum(X * X), rtol=1e-13)

    def f(w):
        a = X.copy()
        return mod.twice(a, a, w)

    assert dw == pytest.approx(_fd(f, W), rel=1e-7)


def test_scratch_gradient(mod):
    dx = np.zeros_like(X)
    dw = mod.d_scratch(X, dx, W)
    e = np.exp(W * X)
    np.testing.assert_allclose(dw, np.sum(e * X * X), rtol=1e-13)
    np.testing.assert_allclose(dx, e + e * W * X, rtol=1e-13)
    assert dw == pytest.approx(_fd(lambda w: mod.scratch(X, w), W), rel=1e-7)



def test_a_call_may_write_the_arguments():
    """A callee given no memref may still write one through a global, which the caller
    may have passed as an argument: with a call in the loop, x_i is cached."""
    text = SOURCE.replace("    memref.store %z, %x[%i] : memref<?xf64>\n", "    func.call @touch() : () -> ()\n")
    text += "func.func private @touch()\n"
    out = run_passes(text, "call", ["enzyme", "remove-unnecessary-enzyme-ops", "canonicalize", "cse"])
    start = out.index("func.func private @diffeconsume(")
    body = out[start:out.index("\n  }\n", start)]
    assert "func.call @touch()" in body and "memref.alloc" in body, body


def test_reuse_gradient(mod):
    dx = np.zeros_like(X)
    dw = mod.d_reuse(X, dx, W)
    e = np.exp(W * X)
    np.testing.assert_allclose(dw, np.sum(e * X * X), rtol=1e-13)
    np.testing.assert_allclose(dx, e + e * W * X, rtol=1e-13)
    assert dw == pytest.approx(_fd(lambda w: mod.reuse(X, w), W), rel=1e-7)


def test_twice_noalias_gradient(mod):
    y = np.zeros_like(X)
    dw = mod.d_twice_noalias(X, y, W)
    np.testing.assert_allclose(y, 2 * X)
    np.testing.assert_allclose(dw, 2 * W * np.sum(X * X), rtol=1e-13)
