"""Peeling of boundary iterations before AD (zymase.transforms.peel): which loops are
peeled, and what the middle loop looks like. The derivatives of peeled loops are checked
against finite differences by tests/c/memory/boundary_stencils.c."""

from __future__ import annotations

import pytest

from zymase.autodiff.flavor import LLVMFlavor
from zymase.ir import llvm as L
from zymase.llvm.reader import read_llvm_ir
from zymase.transforms.peel import peel_boundary_iterations

# for (i = 0; i < n; i++) v[i] = u[i > 0 ? i - 1 : i] + u[i < n - 1 ? i + 1 : i] ...; s is used after
STENCIL = """
define double @f(ptr %u, ptr %v, i64 %n, i64 %k) {{
entry:
  %go = icmp sgt i64 %n, 0
  br i1 %go, label %pre, label %done
pre:
  %last = add nsw i64 %n, -1
  br label %loop
loop:
  %i = phi i64 [ 0, %pre ], [ %next, %loop ]
  %s = phi double [ 0.0, %pre ], [ %s2, %loop ]
  %first = icmp {first_pred} i64 %i, {first_bound}
  %il = add nsw i64 %i, -1
  %li = select i1 %first, i64 %i, i64 %il
  %pl = getelementptr double, ptr %u, i64 %li
  %l = load double, ptr %pl
  %inner = icmp slt i64 %i, %last
  %ir = add nsw i64 %i, 1
  %ri = select i1 %inner, i64 %ir, i64 %i
  %pr = getelementptr double, ptr %u, i64 %ri
  %r = load double, ptr %pr
  %x = fadd double %l, %r
  %pv = getelementptr double, ptr %v, i64 %i
  store double %x, ptr %pv
  %s2 = fadd double %s, %x
  %next = add nuw nsw i64 %i, 1
  %c = icmp slt i64 %next, %n
  br i1 %c, label %loop, label %done
done:
  %res = phi double [ 0.0, %entry ], [ %s2, %loop ]
  ret double %res
}}
"""


def _peel(ir: str):
    module = read_llvm_ir(ir)
    fop = next(op for op in module.body.block.ops if isinstance(op, L.FuncOp) and op.body.blocks)
    n = peel_boundary_iterations(fop.body, LLVMFlavor(), module)
    fop.verify()
    return n, fop


def _selects_per_block(fop) -> list[int]:
    return [sum(isinstance(op, L.SelectOp) for op in b.ops) for b in fop.body.blocks]


def test_a_stencil_loop_loses_its_selects_in_the_middle():
    n, fop = _peel(STENCIL.format(first_pred="eq", first_bound="0"))
    assert n == 1
    loops = [b for b in fop.body.blocks if any(s is b for s in b.last_op.successors)]
    assert len(loops) == 1  # the middle loop: the original is not kept for short runs
    middle = loops[0]
    assert sum(isinstance(op, L.SelectOp) for op in middle.ops) == 0
    # one first and one last iteration peeled: each copy knows its iteration, so only
    # the first copy's i < n - 1 is left (a run of one iteration may end there), and the
    # guard's trip count clamps at zero with one more
    assert sum(_selects_per_block(fop)) == 1 + 1
    # runs of 3 iterations and more take the middle loop; shorter ones leave after the
    # first copy (by its own exit test) or go from it to the last copy
    guards = [op for op in fop.walk() if isinstance(op, L.ICmpOp) and op.predicate.value.data == 5]  # sge
    assert len(guards) == 1 and guards[0].operands[1].owner.value.value.data == 3
    guard = guards[0].parent_block()
    (first_copy,) = guard.last_op.successors
    onward, leave = first_copy.last_op.successors  # the loop's own test, i + 1 < n
    assert isinstance(first_copy.last_op, L.CondBrOp) and middle in onward.last_op.successors
    assert middle not in leave.last_op.successors and not isinstance(onward.last_op, L.ReturnOp)


@pytest.mark.parametrize(
    "first_pred, first_bound, peeled",
    [
        ("eq", "0", True),
        ("sle", "1", True),    # true for i = 0, 1: two first iterations
        ("sle", "2", False),   # three: more than MAX_PEEL
        ("eq", "%n", True),    # i < n, so i == n never holds
        ("slt", "%k", False),  # a bound unrelated to the trip count
    ],
)
def test_how_many_iterations_a_compare_needs(first_pred, first_bound, peeled):
    n, fop = _peel(STENCIL.format(first_pred=first_pred, first_bound=first_bound))
    # the i < n - 1 compare alone is always decided by one last iteration
    assert n == 1
    middle = [b for b in fop.body.blocks if any(s is b for s in b.last_op.successors)][-1]
    assert (sum(isinstance(op, L.SelectOp) for op in middle.ops) == 0) is peeled


def test_data_dependent_compares_and_inexact_counts_are_left_alone():
    data = STENCIL.format(first_pred="eq", first_bound="0").replace(
        "%inner = icmp slt i64 %i, %last", "%inner = fcmp olt double %s, 1.0").replace(
        "%first = icmp eq i64 %i, 0", "%first = fcmp ogt double %s, 2.0")
    assert _peel(data)[0] == 0
    # no no-wrap flag on the increment: the trip count is only a bound
    wraps = STENCIL.format(first_pred="eq", first_bound="0").replace("add nuw nsw i64 %i, 1", "add i64 %i, 1")
    assert _peel(wraps)[0] == 0


def test_an_exit_test_also_used_by_a_select_is_decided_in_the_middle():
    # %c (i + 1 < n) is the exit test and also picks a value: true in all but the last
    # iteration, so one last iteration is peeled and the middle loop's counter replaces it
    ir = STENCIL.format(first_pred="eq", first_bound="0").replace(
        "%s2 = fadd double %s, %x", "%keep = select i1 %c, double %x, double 0.0\n  %s2 = fadd double %s, %keep")
    ir = ir.replace("  %next = add nuw nsw i64 %i, 1\n  %c = icmp slt i64 %next, %n\n", "")
    ir = ir.replace("  %first = icmp", "  %next = add nuw nsw i64 %i, 1\n  %c = icmp slt i64 %next, %n\n  %first = icmp")
    n, fop = _peel(ir)
    assert n == 1
    middle = [b for b in fop.body.blocks if any(s is b for s in b.last_op.successors)][-1]
    assert sum(isinstance(op, L.SelectOp) for op in middle.ops) == 0


# for (i = 0; i < n; i++) { x = v[i]; v[i] = i == 0 ? a : (i == n - 1 ? 2.0 : x); } with
# the compares picking values only: every load and store is at v[i] whatever they say
VALUES_ONLY = """
define void @f(ptr %v, i64 %n, double %a) {
entry:
  %go = icmp sgt i64 %n, 0
  br i1 %go, label %pre, label %done
pre:
  %last = add nsw i64 %n, -1
  br label %loop
loop:
  %i = phi i64 [ 0, %pre ], [ %next, %loop ]
  %first = icmp eq i64 %i, 0
  %end = icmp eq i64 %i, %last
  %pv = getelementptr double, ptr %v, i64 %i
  %x = load double, ptr %pv
  %w = select i1 %first, double %a, double %x
  %y = select i1 %end, double 2.0, double %w
  store double %y, ptr %pv
  %next = add nuw nsw i64 %i, 1
  %c = icmp slt i64 %next, %n
  br i1 %c, label %loop, label %done
done:
  ret void
}
"""


def test_compares_that_only_select_values_are_not_peeled():
    # peeling would copy the body twice (each copy differentiated and compiled) and fold
    # two selects of values: the loop's addresses are affine already, so nothing is gained
    # at run time (bench/results/2026-11-28-s34-peel.md: bench/hand's value select)
    n, fop = _peel(VALUES_ONLY)
    assert n == 0
    assert sum(_selects_per_block(fop)) == 2


@pytest.mark.parametrize("address", [
    # the pointer itself is selected (Numba's u[i - 1] if i > 0 else u[i])
    "%pu = getelementptr double, ptr %v, i64 -1\n  %pl = select i1 %first, ptr %v, ptr %pu\n"
    "  %l = load double, ptr %pl",
    # the index is selected
    "%im = add nsw i64 %i, -1\n  %li = select i1 %first, i64 %i, i64 %im\n"
    "  %pl = getelementptr double, ptr %v, i64 %li\n  %l = load double, ptr %pl",
    # the compare is arithmetic on the index: v[i - 1 + (i == 0)]
    "%one = zext i1 %first to i64\n  %im = add nsw i64 %i, -1\n  %li = add nsw i64 %im, %one\n"
    "  %pl = getelementptr double, ptr %v, i64 %li\n  %l = load double, ptr %pl",
], ids=["pointer", "index", "index-arithmetic"])
def test_a_compare_choosing_an_address_sets_the_peeling_and_a_value_one_does_not(address):
    # i == 0 chooses where a load reads: one first iteration is peeled for it. i == n - 1
    # only chooses a value: it would need a last iteration of its own, which is not
    # peeled, so the middle loop keeps its select (and there is no last copy)
    ir = VALUES_ONLY.replace("  %w = select i1 %first, double %a, double %x",
                             f"  {address}\n  %w = fadd double %l, %x")
    n, fop = _peel(ir)
    assert n == 1
    loops = [b for b in fop.body.blocks if any(s is b for s in b.last_op.successors)]
    assert len(loops) == 1
    middle = loops[0]
    kept = [op for op in middle.ops if isinstance(op, L.SelectOp)]
    assert len(kept) == 1 and str(kept[0].results[0].type) == "f64"
    # the only copies are the first iteration and the middle loop: the one guard with
    # first + last + 1 = 2 and no copy for the last iteration
    guards = [op for op in fop.walk() if isinstance(op, L.ICmpOp) and op.predicate.value.data == 5]  # sge
    assert len(guards) == 1 and guards[0].operands[1].owner.value.value.data == 2
    copies_of_store = sum(isinstance(op, L.StoreOp) for op in fop.walk())
    assert copies_of_store == 2
