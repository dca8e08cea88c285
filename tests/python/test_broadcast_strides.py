"""Numba's broadcast index ``select(dim > 1, i, p)`` (``p`` a phi of 0 and itself) as a
strided induction ``i * stride`` (zymase.transforms.broadcast_strides, Laplacian-mode
derivatives): rewritten only where the condition is fixed before the loop and the phi
receives nothing but 0 and the select; the rewritten function computes what the
original does, for a broadcast operand (dim = 1) and a full one. The vectorized
Laplacian through it is checked in tests/numba/test_laplacian.py."""

from __future__ import annotations

import ctypes

import numpy as np

from zymase.llvm import jit as jit_module
from zymase.llvm.reader import read_llvm_ir
from zymase.llvm.writer import write_llvm_ir
from zymase.transforms.broadcast_strides import stride_broadcast_indices

# three loops summing a[s]: the broadcast pattern (rewritten); a condition that changes
# inside the loop (p then keeps the last i it took: not 0); a phi starting at 1
IR = """
define double @fwdlaplace_sums(ptr %a, i64 %dim, i64 %n) {
entry:
  %c = icmp ugt i64 %dim, 1
  br label %one
one:
  %i = phi i64 [ 0, %entry ], [ %i1, %one ]
  %p = phi i64 [ 0, %entry ], [ %s, %one ]
  %acc = phi double [ 0.0, %entry ], [ %acc1, %one ]
  %s = select i1 %c, i64 %i, i64 %p
  %q = getelementptr double, ptr %a, i64 %s
  %x = load double, ptr %q
  %acc1 = fadd double %acc, %x
  %i1 = add i64 %i, 1
  %e = icmp eq i64 %i1, %n
  br i1 %e, label %two, label %one
two:
  %j = phi i64 [ 0, %one ], [ %j1, %two ]
  %p2 = phi i64 [ 0, %one ], [ %s2, %two ]
  %acc2 = phi double [ %acc1, %one ], [ %acc3, %two ]
  %c2 = icmp ult i64 %j, 2
  %s2 = select i1 %c2, i64 %j, i64 %p2
  %q2 = getelementptr double, ptr %a, i64 %s2
  %x2 = load double, ptr %q2
  %acc3 = fadd double %acc2, %x2
  %j1 = add i64 %j, 1
  %e2 = icmp eq i64 %j1, %n
  br i1 %e2, label %three, label %two
three:
  %k = phi i64 [ 0, %two ], [ %k1, %three ]
  %p3 = phi i64 [ 1, %two ], [ %s3, %three ]
  %acc4 = phi double [ %acc3, %two ], [ %acc5, %three ]
  %s3 = select i1 %c, i64 %k, i64 %p3
  %q3 = getelementptr double, ptr %a, i64 %s3
  %x3 = load double, ptr %q3
  %acc5 = fadd double %acc4, %x3
  %k1 = add i64 %k, 1
  %e3 = icmp eq i64 %k1, %n
  br i1 %e3, label %done, label %three
done:
  ret double %acc5
}
"""


def _run(text: str, a: np.ndarray, dim: int) -> float:
    jit = jit_module.jit(text)
    f = jit.function("fwdlaplace_sums", ctypes.c_double, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
    return f(a.ctypes.data, dim, a.shape[0])


def test_only_the_broadcast_pattern_becomes_a_strided_induction():
    module = read_llvm_ir(IR)
    assert stride_broadcast_indices(module, "fwdlaplace") == 1
    out = write_llvm_ir(module)
    assert "load volatile" in out and out.count("= select i1") == 2
    a = np.arange(1.0, 7.0) ** 2
    for dim in (1, a.shape[0]):  # a broadcast operand, a full one
        assert _run(out, a, dim) == _run(IR, a, dim)
    assert stride_broadcast_indices(read_llvm_ir(IR), "diffe") == 0  # other derivatives: untouched
