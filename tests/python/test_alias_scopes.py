"""Scoped-noalias metadata on differentiated code (zymase.transforms.alias_scopes):
which accesses are declared distinct, and that the writer's metadata is LLVM IR that
llvmlite parses, verifies and optimizes with."""

from __future__ import annotations

import re

import llvmlite.binding as llvm

from zymase.ir import ArrayAttr
from zymase.ir import llvm as L
from zymase.llvm.reader import read_llvm_ir
from zymase.llvm.writer import write_llvm_ir
from zymase.transforms.alias_scopes import ALIAS_SCOPE, NOALIAS, annotate_alias_scopes

IR = """
declare ptr @NRT_MemInfo_alloc_aligned(i64, i32)
declare ptr @NRT_MemInfo_data_fast(ptr)
define double @f(ptr %a, ptr %b, ptr noalias %out, i64 %n) {
entry:
  %m = call ptr @NRT_MemInfo_alloc_aligned(i64 64, i32 32)
  %t = call ptr @NRT_MemInfo_data_fast(ptr %m)
  %slot = alloca double
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %s = phi double [ 0.0, %entry ], [ %s2, %loop ]
  %pa = getelementptr double, ptr %a, i64 %i
  %va = load double, ptr %pa
  %pt = getelementptr double, ptr %t, i64 %i
  %twice = fmul double %va, 2.0
  store double %twice, ptr %pt
  %again = load double, ptr %pa
  %pb = getelementptr double, ptr %b, i64 %i
  store double %s, ptr %pb
  store double %again, ptr %slot
  %loaded = load ptr, ptr %out
  %vx = load double, ptr %loaded
  %s1 = fadd double %s, %again
  %s2 = fadd double %s1, %vx
  %next = add i64 %i, 1
  %c = icmp slt i64 %next, %n
  br i1 %c, label %loop, label %exit
exit:
  store double %s2, ptr %out
  ret double %s2
}
"""


def _scopes(op):
    def names(attr):
        value = op.attributes.get(attr)
        return {a.data.rsplit(".", 1)[-1] for a in value.data} if isinstance(value, ArrayAttr) else None

    return names(ALIAS_SCOPE), names(NOALIAS)


def _accesses():
    module = read_llvm_ir(IR)
    annotate_alias_scopes(module)
    fn = next(op for op in module.body.block.ops if isinstance(op, L.FuncOp) and op.sym_name.data == "f")
    return module, [op for b in fn.body.blocks for op in b.ops if isinstance(op, (L.LoadOp, L.StoreOp))]


def test_objects_allocated_here_and_noalias_arguments_get_scopes_of_their_own():
    _, ops = _accesses()
    load_a, store_t, load_a2, store_b, store_slot, load_out, load_x, store_out = ops
    outside = _scopes(load_a)[0]
    assert outside == {"outside"} and _scopes(store_b)[0] == outside == _scopes(load_a2)[0]
    # a and b may be the same array: neither is declared distinct from the other
    assert "outside" not in _scopes(store_b)[1]
    # the array allocated here is distinct from both, and from the noalias argument
    t_scope, t_noalias = _scopes(store_t)
    assert t_scope.isdisjoint({"outside", "arg2"}) and {"outside", "arg2"} <= t_noalias
    assert _scopes(store_out)[0] == {"arg2"} and {"outside"} <= _scopes(store_out)[1]
    assert _scopes(load_out)[0] == {"arg2"}
    # stack slots are LLVM's business; a pointer read from memory has unknown roots
    assert _scopes(store_slot) == (None, None)
    assert _scopes(load_x) == (None, None)


def _double_loads(text: str) -> int:
    from zymase.llvm import toolchain

    optimized = toolchain.optimize(text, 2)
    f = re.search(r"define[^\n]*@f\(.*?\n}\n", optimized, re.S).group(0)
    return len(re.findall(r"= load double", f))


def test_metadata_is_valid_llvm_ir_that_lets_llvm_drop_a_reload():
    module, _ = _accesses()
    text = write_llvm_ir(module)
    assert "!alias.scope" in text and "!noalias" in text
    llvm.parse_assembly(text).verify()
    # the store into the array allocated here cannot change a[i], so the second load
    # of a[i] goes; without the scopes LLVM must keep it (the allocation is opaque)
    plain = write_llvm_ir(read_llvm_ir(IR))
    assert _double_loads(text) == _double_loads(plain) - 1


SHADOW_IR = """
define void @g(ptr %x, ptr %dx, ptr %y, ptr %dy, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %px = getelementptr double, ptr %x, i64 %i
  %v = load double, ptr %px
  %pdy = getelementptr double, ptr %dy, i64 %i
  %dv = load double, ptr %pdy
  %pdx = getelementptr double, ptr %dx, i64 %i
  store double %dv, ptr %pdx
  %py = getelementptr double, ptr %y, i64 %i
  store double %v, ptr %py
  %next = add i64 %i, 1
  %c = icmp slt i64 %next, %n
  br i1 %c, label %loop, label %exit
exit:
  ret void
}
"""


def test_shadow_arguments_are_distinct_from_primal_ones_not_from_each_other():
    from zymase.autodiff.common import mark_shadow_args

    module = read_llvm_ir(SHADOW_IR)
    fn = next(op for op in module.body.block.ops if isinstance(op, L.FuncOp))
    mark_shadow_args(fn, [1, 3])
    annotate_alias_scopes(module)
    load_x, load_dy, store_dx, store_y = [op for b in fn.body.blocks for op in b.ops if isinstance(op, (L.LoadOp, L.StoreOp))]
    assert _scopes(load_x)[0] == _scopes(store_y)[0] == {"outside"}
    assert _scopes(load_dy)[0] == _scopes(store_dx)[0] == {"shadows"}  # "...outside.shadows"
    # x and y may overlap, and so may their shadows; a shadow never overlaps a primal
    assert "outside" not in _scopes(store_y)[1] and "shadows" not in _scopes(store_dx)[1]
    assert "outside" in _scopes(store_dx)[1] and "shadows" in _scopes(load_x)[1]


def test_generated_gradients_mark_their_shadow_arguments():
    from zymase.frontends.c import Timings, differentiate_llvm_ir

    src = """
define internal void @g(ptr %x, ptr %y, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %px = getelementptr double, ptr %x, i64 %i
  %v = load double, ptr %px
  %sq = fmul double %v, %v
  %py = getelementptr double, ptr %y, i64 %i
  store double %sq, ptr %py
  %next = add i64 %i, 1
  %c = icmp slt i64 %next, %n
  br i1 %c, label %loop, label %exit
exit:
  ret void
}
@enzyme_dup = external global i32
@enzyme_const = external global i32
declare void @__enzyme_autodiff(ptr, ...)
define void @grad(ptr %x, ptr %dx, ptr %y, ptr %dy, i64 %n) {
  call void (ptr, ...) @__enzyme_autodiff(ptr @g, ptr @enzyme_dup, ptr %x, ptr %dx, ptr @enzyme_dup, ptr %y, ptr %dy, ptr @enzyme_const, i64 %n)
  ret void
}
"""
    out = differentiate_llvm_ir(src, "shadows.ll", 0, Timings(), preoptimize=False)
    # the shadows of x and y: one scope, apart from the primals' one
    assert re.search(r'!"diffeg[^"]*\.outside\.shadows"', out), out[-3000:]
    assert re.search(r'!"diffeg[^"]*\.outside"', out)
