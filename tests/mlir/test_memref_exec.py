"""Execution of memref code through zymase's own lowering: NumPy arrays in, scalars
out; func/arith/scf/memref and linalg.generic (as loops) checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import zymase.mlir
from zymase.errors import ZymaseError

SOURCE = r"""
func.func @sumsq(%a: memref<?x?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?x?xf64>
  %m = memref.dim %a, %c1 : memref<?x?xf64>
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
    %r2 = scf.for %j = %c0 to %m step %c1 iter_args(%acc2 = %acc) -> (f64) {
      %x = memref.load %a[%i, %j] : memref<?x?xf64>
      %xx = arith.mulf %x, %x : f64
      %s = arith.addf %acc2, %xx : f64
      scf.yield %s : f64
    }
    scf.yield %r2 : f64
  }
  func.return %r : f64
}

// f32, static shape, writes its output in place: y = 2 * x + 1
func.func @affine(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %x[%i] : memref<4xf32>
    %w = arith.mulf %v, %two : f32
    %u = arith.addf %w, %one : f32
    memref.store %u, %y[%i] : memref<4xf32>
  }
  func.return
}

// a heap buffer and a stack buffer: prefix sums, then their total
func.func @prefix_total(%x: memref<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf64>
  %buf = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf64>
  %acc = memref.alloca() : memref<f64>
  %z = arith.constant 0.0 : f64
  memref.store %z, %acc[] : memref<f64>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf64>
    %s = memref.load %acc[] : memref<f64>
    %t = arith.addf %s, %v : f64
    memref.store %t, %acc[] : memref<f64>
    memref.store %t, %buf[%i] : memref<?xf64>
  }
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> (f64) {
    %v = memref.load %buf[%i] : memref<?xf64>
    %b = arith.addf %a, %v : f64
    scf.yield %b : f64
  }
  memref.dealloc %buf : memref<?xf64>
  func.return %r : f64
}

// the sum of a 2x2 window at (1, 1), through a subview and a cast
func.func @window(%a: memref<?x?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %w = memref.subview %a[1, 1] [2, 2] [1, 1] : memref<?x?xf64> to memref<2x2xf64, strided<[?, 1], offset: ?>>
  %d = memref.cast %w : memref<2x2xf64, strided<[?, 1], offset: ?>> to memref<?x?xf64, strided<[?, 1], offset: ?>>
  %a00 = memref.load %d[%c0, %c0] : memref<?x?xf64, strided<[?, 1], offset: ?>>
  %a01 = memref.load %d[%c0, %c1] : memref<?x?xf64, strided<[?, 1], offset: ?>>
  %a10 = memref.load %d[%c1, %c0] : memref<?x?xf64, strided<[?, 1], offset: ?>>
  %a11 = memref.load %d[%c1, %c1] : memref<?x?xf64, strided<[?, 1], offset: ?>>
  %s0 = arith.addf %a00, %a01 : f64
  %s1 = arith.addf %a10, %a11 : f64
  %s = arith.addf %s0, %s1 : f64
  func.return %s : f64
}

// a row of a matrix (rank-reducing subview with a step) copied into a buffer
func.func @row_copy(%a: memref<?x?xf64>, %i: index, %out: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = memref.dim %a, %c1 : memref<?x?xf64>
  %h = arith.divui %m, %c1 : index
  %row = memref.subview %a[%i, 0] [1, %h] [1, 1] : memref<?x?xf64> to memref<?xf64, strided<[1], offset: ?>>
  %tmp = memref.alloc(%h) : memref<?xf64>
  memref.copy %row, %tmp : memref<?xf64, strided<[1], offset: ?>> to memref<?xf64>
  memref.copy %tmp, %out : memref<?xf64> to memref<?xf64>
  memref.dealloc %tmp : memref<?xf64>
  func.return
}

// any strides: the sum of a strided 2-D view
func.func @strided_sum(%a: memref<?x?xf32, strided<[?, ?], offset: ?>>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?x?xf32, strided<[?, ?], offset: ?>>
  %m = memref.dim %a, %c1 : memref<?x?xf32, strided<[?, ?], offset: ?>>
  %z = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f32) {
    %r2 = scf.for %j = %c0 to %m step %c1 iter_args(%acc2 = %acc) -> (f32) {
      %x = memref.load %a[%i, %j] : memref<?x?xf32, strided<[?, ?], offset: ?>>
      %s = arith.addf %acc2, %x : f32
      scf.yield %s : f32
    }
    scf.yield %r2 : f32
  }
  func.return %r : f32
}

// linalg.generic: an elementwise map (out = a * b + 1) ...
func.func @fma_map(%a: memref<?x?xf64>, %b: memref<?x?xf64>, %out: memref<?x?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a, %b : memref<?x?xf64>, memref<?x?xf64>) outs(%out : memref<?x?xf64>) {
  ^bb0(%x: f64, %y: f64, %o: f64):
    %one = arith.constant 1.0 : f64
    %p = arith.mulf %x, %y : f64
    %q = arith.addf %p, %one : f64
    linalg.yield %q : f64
  }
  func.return
}

// ... and a reduction (row sums of squares, transposed access via the map)
func.func @col_sumsq(%a: memref<?x?xf64>, %out: memref<?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(j, i) -> (i, j)>, affine_map<(j, i) -> (j)>], iterator_types = ["parallel", "reduction"]} ins(%a : memref<?x?xf64>) outs(%out : memref<?xf64>) {
  ^bb0(%x: f64, %acc: f64):
    %xx = arith.mulf %x, %x : f64
    %s = arith.addf %acc, %xx : f64
    linalg.yield %s : f64
  }
  func.return
}
"""


@pytest.fixture(scope="module")
def mod():
    return zymase.mlir.compile(SOURCE)


def test_sumsq_dynamic_2d(mod):
    a = np.random.default_rng(0).normal(size=(5, 7))
    assert mod.sumsq(a) == pytest.approx(float((a * a).sum()), rel=1e-12)
    assert mod.sumsq(np.zeros((0, 3))) == 0.0


def test_static_f32_in_place(mod):
    x = np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32)
    y = np.zeros(4, dtype=np.float32)
    assert mod.affine(x, y) is None
    np.testing.assert_array_equal(y, 2 * x + 1)


def test_alloc_alloca_dealloc(mod):
    x = np.arange(1.0, 7.0)
    assert mod.prefix_total(x) == pytest.approx(float(np.cumsum(x).sum()))


def test_subview_and_cast(mod):
    a = np.arange(20.0).reshape(4, 5)
    assert mod.window(a) == pytest.approx(float(a[1:3, 1:3].sum()))


def test_rank_reducing_subview_and_copy(mod):
    a = np.arange(12.0).reshape(3, 4)
    out = np.zeros(4)
    mod.row_copy(a, 2, out)
    np.testing.assert_array_equal(out, a[2])


def test_strided_layout_accepts_views(mod):
    a = np.arange(48, dtype=np.float32).reshape(6, 8)
    view = a[1::2, ::3]
    assert not view.flags.c_contiguous
    assert mod.strided_sum(view) == pytest.approx(float(view.sum()))
    assert mod.strided_sum(a.T) == pytest.approx(float(a.sum()))


def test_linalg_generic_map(mod):
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    out = np.zeros((3, 4))
    mod.fma_map(a, b, out)
    np.testing.assert_allclose(out, a * b + 1)


def test_linalg_generic_reduction(mod):
    a = np.random.default_rng(2).normal(size=(3, 5))
    out = np.full(5, 0.5)
    mod.col_sumsq(a, out)
    np.testing.assert_allclose(out, 0.5 + (a * a).sum(axis=0))


@pytest.mark.parametrize(
    "args, message",
    [
        ((np.zeros((2, 2), dtype=np.float32),), "bad argument 1 for sumsq(): array of dtype float32 passed for memref<?x?xf64> (needs float64)"),
        ((np.zeros(3),), "array of rank 1 passed for memref<?x?xf64> (needs rank 2)"),
        ((np.zeros((3, 4)).T,), "is not C-contiguous (pass np.ascontiguousarray(x)"),
        (([[1.0]],), "a NumPy array is expected for memref<?x?xf64>, got list"),
    ],
)
def test_bad_arrays(mod, args, message):
    with pytest.raises(ZymaseError) as info:
        mod.sumsq(*args)
    text = info.value.format()
    assert text.startswith("zymase: error: ") and "\n" not in text
    assert message in text and "in function 'sumsq'" in text and "hint: the signature is" in text


def test_static_shape_mismatch(mod):
    with pytest.raises(ZymaseError, match=r"dimension 0 must be 4"):
        mod.affine(np.zeros(3, dtype=np.float32), np.zeros(4, dtype=np.float32))


def test_memref_result_is_refused():
    with pytest.raises(ZymaseError) as info:
        zymase.mlir.compile(
            "func.func @f(%a: memref<2xf64>) -> memref<2xf64> {\n  func.return %a : memref<2xf64>\n}"
        )
    assert "return scalars, or write results into a memref argument" in info.value.format()


def test_tensor_generic_is_refused():
    text = """
func.func @f(%a: memref<?xf64>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>], iterator_types = ["parallel"]} outs(%a : memref<?xf64>) {
  ^bb0(%x: f64):
    linalg.yield %x : f64
  }
  func.return
}"""
    assert zymase.mlir.compile(text) is not None  # memrefs: fine
    bad = text.replace("linalg.generic", "linalg.fill ins(%z : f64) outs(%a : memref<?xf64>)\n  linalg.generic")
    bad = bad.replace("func.func @f(%a: memref<?xf64>) {", "func.func @f(%a: memref<?xf64>) {\n  %z = arith.constant 0.0 : f64")
    with pytest.raises(ZymaseError) as info:
        zymase.mlir.compile(bad)
    assert "'linalg.fill' cannot be lowered yet" in info.value.format()
