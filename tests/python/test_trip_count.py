"""Trip counts known before a loop runs (zymase.analysis.trip_count) and the tape they
enable: loops with a computable count store their values in indexed caches
(``enzyme.cache_store``/``enzyme.cache_load``), the others push on LIFO stacks; what
goes on that tape (induction variables and pointers are rebuilt, not saved) and what
the reverse sweep knows without one (the compares that guarded a block, assumed).

The loops are hand-written LLVM IR in the rotated form clang -O2 produces (a guard,
then a do-while loop whose latch compares the incremented induction variable) and in
the while form (the test in the header)."""

from __future__ import annotations

import pytest

from zymase.analysis.cfg import CFG
from zymase.analysis.trip_count import trip_count
from zymase.autodiff.flavor import LLVMFlavor
from zymase.ir import BlockArgument, ModuleOp, llvm as L
from zymase.llvm.reader import read_llvm_ir
from forking_cli import run_cli


def _loop_and_exits(ir: str):
    """The trip count of the one loop in ``ir``, and the loop's exit edges."""
    module: ModuleOp = read_llvm_ir(ir)
    fop = next(op for op in module.body.block.ops if isinstance(op, L.FuncOp) and op.body.blocks)
    cfg = CFG.build(fop.body)
    [(header, body)] = cfg.natural_loops()
    preds = cfg.preds[header]
    [entry] = [e for e in preds if e.src not in body]
    [latch] = [e for e in preds if e.src in body]
    exits = [e for b in body for e in cfg.succs[b] if e.dst not in body]
    return trip_count(cfg, header, body, entry, latch, LLVMFlavor().successor_operands), exits


def _loop(ir: str):
    return _loop_and_exits(ir)[0]


ROTATED = """
define void @f(ptr %p, i64 %n) {{
entry:
  %guard = icmp sgt i64 %n, 0
  br i1 %guard, label %loop, label %exit
loop:
  %i = phi i64 [ {init}, %entry ], [ %next, %loop ]
  %a = getelementptr double, ptr %p, i64 %i
  store double 1.0, ptr %a
  %next = {step}
  %c = icmp {pred} i64 %next, %n
  br i1 %c, label {taken}, label {other}
exit:
  ret void
}}
"""


@pytest.mark.parametrize(
    "init, step, pred, continue_if_true, want",
    [
        ("0", "add i64 %i, 1", "eq", False, (1, False, 1)),     # for (i = 0; i != n; i++)
        ("0", "add i64 %i, 1", "slt", True, (1, False, 1)),     # i < n
        ("0", "add i64 %i, 2", "slt", True, (2, False, 1)),     # i < n, i += 2
        ("0", "add i64 %i, 1", "sle", True, (1, True, 1)),      # i <= n
        ("0", "add i64 %i, 1", "ult", True, (1, False, 1)),     # unsigned
        ("100", "sub i64 %i, 1", "sgt", True, (-1, False, 1)),  # for (i = 100; i > n; i--)
    ],
)
def test_rotated_loops(init, step, pred, continue_if_true, want):
    taken, other = ("%loop", "%exit") if continue_if_true else ("%exit", "%loop")
    tc = _loop(ROTATED.format(init=init, step=step, pred=pred, taken=taken, other=other))
    assert tc is not None
    assert (tc.step, tc.inclusive, tc.offset) == want
    assert tc.unsigned == (pred.startswith("u"))


def test_while_form_tests_the_header_value():
    tc = _loop("""
define void @f(ptr %p, i32 %n) {
entry:
  br label %head
head:
  %i = phi i32 [ 0, %entry ], [ %next, %body ]
  %c = icmp slt i32 %i, %n
  br i1 %c, label %body, label %exit
body:
  %w = sext i32 %i to i64
  %a = getelementptr double, ptr %p, i64 %w
  store double 1.0, ptr %a
  %next = add i32 %i, 1
  br label %head
exit:
  ret void
}
""")
    assert tc is not None and tc.offset == 0 and tc.step == 1 and not tc.inclusive


def test_bound_read_inside_the_loop_is_not_computable():
    assert _loop("""
define void @f(ptr %p, ptr %q) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %a = getelementptr double, ptr %p, i64 %i
  store double 1.0, ptr %a
  %n = load i64, ptr %q
  %next = add i64 %i, 1
  %c = icmp slt i64 %next, %n
  br i1 %c, label %loop, label %exit
exit:
  ret void
}
""") is None


def test_data_dependent_exit_is_not_computable():
    assert _loop("""
define void @f(ptr %p) {
entry:
  br label %loop
loop:
  %x = phi double [ 1.0, %entry ], [ %y, %loop ]
  %y = fmul double %x, 0.5
  %c = fcmp ogt double %y, 0.001
  br i1 %c, label %loop, label %exit
exit:
  ret void
}
""") is None


def test_a_test_that_not_every_iteration_runs_is_not_a_bound():
    # the compare sits in a block that does not dominate the latch: iterations that
    # skip it are not bounded by it
    assert _loop("""
define void @f(ptr %p, i64 %n, i1 %flag) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %latch ]
  br i1 %flag, label %test, label %latch
test:
  %c = icmp slt i64 %i, %n
  br i1 %c, label %latch, label %exit
latch:
  %next = add i64 %i, 1
  br label %loop
exit:
  ret void
}
""") is None


DIFF = """
define double @f(ptr %x, i32 %n, i32 %m) {{
entry:
  br label %head
head:
  %i = phi i32 [ 0, %entry ], [ %inext, %latch ]
  %s = phi double [ 0.0, %entry ], [ %s2, %latch ]
  %w = sext i32 %i to i64
  %a = getelementptr double, ptr %x, i64 %w
  %v = load double, ptr %a
  %e = call double @sin(double %v)
  store double %e, ptr %a
  %s2 = fadd double %s, %e
  br label %latch
latch:
  %inext = add i32 %i, 1
  %c = icmp {pred} {lhs}, {rhs}
  br i1 %c, label %head, label %done
done:
  ret double %s2
}}
declare double @sin(double)
"""


def _differentiated(ir: str, constants: list[tuple[str, str]]) -> ModuleOp:
    """``ir`` (a function ``@f(ptr %x, ...)``) with a caller that takes its gradient with
    respect to ``x``; the other parameters, (type, name) each, are constant."""
    from zymase.llvm.markers import lower_markers
    from zymase.transforms.enzyme_pass import run_enzyme_pass

    params = "".join(f", {t} {n}" for t, n in constants)
    args = "".join(f", i32 %const, {t} {n}" for t, n in constants)
    caller = f"""
@enzyme_dup = external global i32
@enzyme_const = external global i32
define void @g(ptr %x, ptr %dx{params}) {{
  %dup = load i32, ptr @enzyme_dup
  %const = load i32, ptr @enzyme_const
  %r = call double (ptr, ...) @__enzyme_autodiff(ptr @f, i32 %dup, ptr %x, ptr %dx{args})
  ret void
}}
declare double @__enzyme_autodiff(ptr, ...)
"""
    module = read_llvm_ir(ir + caller)
    assert lower_markers(module) == 1
    run_enzyme_pass(module)  # differentiate; the tape ops are not lowered yet
    return module


def _reverse_ops(ir: str) -> set[str]:
    return {op.name for op in _differentiated(ir, [("i32", "%n"), ("i32", "%m")]).walk()}


def test_counted_loop_uses_an_indexed_cache():
    names = _reverse_ops(DIFF.format(pred="slt", lhs="i32 %inext", rhs="%n"))
    assert "enzyme.cache_store" in names and "enzyme.cache_load" in names
    assert "enzyme.cache_reserve" in names


def test_uncountable_loop_uses_the_stack():
    # the bound is the running sum: not known before the loop runs
    names = _reverse_ops(DIFF.format(pred="olt", lhs="double %s2", rhs="100.0").replace("icmp olt", "fcmp olt"))
    assert "enzyme.cache_store" not in names
    assert "enzyme.push" in names and "enzyme.pop" in names


@pytest.mark.parametrize(
    "step, pred, exact",
    [
        ("add nuw nsw i64 %i, 1", "eq", True),   # != with either no-wrap flag
        ("add nuw i64 %i, 1", "eq", True),
        ("add i64 %i, 1", "eq", False),          # may wrap around: the count is only a bound
        ("add nsw i64 %i, 1", "slt", True),      # signed test, signed no-wrap
        ("add nuw i64 %i, 1", "slt", False),     # signed test, only unsigned no-wrap
        ("add nuw i64 %i, 1", "ult", True),
        ("add nsw i64 %i, 2", "slt", True),      # steps by two: ceil(d / 2) is exact
        ("add nsw i64 %i, 2", "sle", False),     # ... floor(d / 2) by truncation is not, d < 0
    ],
)
def test_exact_counts_need_one_exit_a_unit_step_and_no_wrap(step, pred, exact):
    ir = ROTATED.format(init="0", step=step, pred=pred,
                        taken="%exit" if pred == "eq" else "%loop", other="%loop" if pred == "eq" else "%exit")
    tc, exits = _loop_and_exits(ir)
    assert tc is not None and tc.exact(exits) is exact


def test_a_second_exit_makes_the_count_a_bound_only():
    ir = """
define void @f(ptr %p, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %latch ]
  %a = getelementptr double, ptr %p, i64 %i
  %v = load double, ptr %a
  %stop = fcmp ogt double %v, 1.0
  br i1 %stop, label %exit, label %latch
latch:
  %next = add nuw nsw i64 %i, 1
  %c = icmp slt i64 %next, %n
  br i1 %c, label %loop, label %exit
exit:
  ret void
}
"""
    tc, exits = _loop_and_exits(ir)
    assert tc is not None and len(exits) == 2 and not tc.exact(exits)



def test_every_exit_test_bounds_the_count():
    """Numba's np.empty(m) in a loop counting m leaves the loop when m == 2**60 (the
    first size too large) before the loop's own test m == n: both tests are counts;
    a constant count no tape could hold is not taken while another test is (a tape of
    2**63 bytes crashed: tests/numba/test_loop_sized_arrays.py), and the other
    (no-wrap) test bounds the count: the emitted count is the least of the two."""
    ir = """
define void @f(ptr %p, i64 %n) {
entry:
  br label %loop
loop:
  %m = phi i64 [ 1, %entry ], [ %next, %latch ]
  %next = add nuw nsw i64 %m, 1
  %big = icmp eq i64 %m, 1152921504606846976
  br i1 %big, label %exit, label %latch
latch:
  %a = getelementptr double, ptr %p, i64 %m
  store double 1.0, ptr %a
  %c = icmp eq i64 %m, %n
  br i1 %c, label %exit, label %loop
exit:
  ret void
}
"""
    tc, exits = _loop_and_exits(ir)
    assert tc is not None and len(exits) == 2 and not tc.exact(exits)
    assert isinstance(tc.bound, BlockArgument) and tc.bound.index == 1  # %n
    [other] = tc.others
    assert other.bound.owner.value.value.data == 1 << 60
    assert len(tc.operands()) == 4

STRIDED = """
define double @f(ptr %x, i64 %n, i64 %stride) {
entry:
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %inext, %head ]
  %p = phi ptr [ %x, %entry ], [ %pnext, %head ]
  %s = phi double [ 0.0, %entry ], [ %s2, %head ]
  %a = getelementptr double, ptr %x, i64 %i
  %v = load double, ptr %a
  %e = call double @sin(double %v)
  store double %e, ptr %a
  %w = load double, ptr %p
  %ew = call double @sin(double %w)
  %s1 = fadd double %s, %e
  %s2 = fadd double %s1, %ew
  %inext = add nsw i64 %i, %stride
  %pnext = getelementptr double, ptr %p, i64 %stride
  %c = icmp slt i64 %inext, %n
  br i1 %c, label %head, label %done
done:
  ret double %s2
}
declare double @sin(double)
"""


def test_induction_variables_with_a_run_time_step_are_rebuilt_not_taped():
    # i += stride and p = &p[stride]: the step is fixed during the loop, so the reverse
    # sweep computes i and p from the iteration number; what it pushes is the two
    # loaded values (needed by sin's derivative); the iteration count is saved once,
    # after the loop, in a slot (a save outside every cycle: tape.save_op), not pushed
    module = _differentiated(STRIDED, [("i64", "%n"), ("i64", "%stride")])
    pushed = sorted(str(op.operands[1].type) for op in module.walk() if op.name == "enzyme.push")
    assert pushed == ["f64", "f64"]


TRIANGLE = """
define double @f(ptr %x, i64 %n) {
entry:
  br label %outer
outer:
  %i = phi i64 [ 0, %entry ], [ %inext, %latch ]
  %p = phi ptr [ %x, %entry ], [ %qnext, %latch ]
  %s = phi double [ 0.0, %entry ], [ %t2, %latch ]
  br label %inner
inner:
  %j = phi i64 [ 0, %outer ], [ %jnext, %inner ]
  %q = phi ptr [ %p, %outer ], [ %qnext, %inner ]
  %t = phi double [ %s, %outer ], [ %t2, %inner ]
  %v = load double, ptr %q
  %e = call double @sin(double %v)
  %t2 = fadd double %t, %e
  %qnext = getelementptr double, ptr %q, i64 1
  %jnext = add nuw nsw i64 %j, 1
  %c = icmp ule i64 %jnext, %i
  br i1 %c, label %inner, label %latch
latch:
  %inext = add nuw nsw i64 %i, 1
  %c2 = icmp slt i64 %inext, %n
  br i1 %c2, label %outer, label %done
done:
  ret double %t2
}
declare double @sin(double)
"""


def test_a_pointer_into_one_object_is_taped_as_an_offset_shared_with_its_shadow():
    # row i of a packed triangle starts where row i-1 ended: the step changes from row to
    # row, so the row's start is taped. It points into x alone, so the tape holds its byte
    # offset from x, once, and the reverse sweep rebuilds the row pointer from x and its
    # shadow from dx (alias analysis then still knows what each points into)
    module = _differentiated(TRIANGLE, [("i64", "%n")])
    saved = [str(op.operands[-1].type) for op in module.walk() if op.name in ("enzyme.push", "enzyme.cache_store")]
    assert saved == ["i64"]
    rebuilt = [op for op in module.walk() if isinstance(op, L.GEPOp) and op.elem_type == L.IntegerType(8)]
    bases = {op.operands[0] for op in rebuilt}
    assert len(bases) == 2 and all(isinstance(b, BlockArgument) for b in bases)  # x and dx, not tape reads



NRT_TRIANGLE = TRIANGLE.replace(
    "entry:\n  br label %outer",
    """entry:
  %bytes = shl i64 %n, 3
  %mi = call ptr @NRT_MemInfo_alloc_safe_aligned(i64 %bytes, i32 32)
  %data = call ptr @NRT_MemInfo_data_fast(ptr %mi)
  call void @llvm.memcpy.p0.p0.i64(ptr %data, ptr %x, i64 %bytes, i1 false)
  br label %outer""",
).replace("[ %x, %entry ]", "[ %data, %entry ]") + """
declare ptr @NRT_MemInfo_alloc_safe_aligned(i64, i32)
declare ptr @NRT_MemInfo_data_fast(ptr)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
"""


def test_a_pointer_into_numba_array_data_is_rebuilt_from_the_data_not_the_meminfo():
    # Numba's data pointer lies at an offset from its MemInfo that depends on where the
    # allocator put it (alignment padding): the shadow MemInfo's data need not lie at the
    # same offset. A row pointer into the copy is rebuilt from the data pointers, never
    # from the MemInfos (that gave wrong gradients, now and then, in tests/numba's alloc_2d)
    module = _differentiated(NRT_TRIANGLE, [("i64", "%n")])
    # (in the derivatives, not in the memcpy adjoint's helpers, which take shadows as arguments)
    derivatives = [f for f in module.body.block.ops if isinstance(f, L.FuncOp)
                   and not f.sym_name.data.startswith("__zymase_memcpy_adjoint")]
    rebuilt = [op for f in derivatives for op in f.walk()
               if isinstance(op, L.GEPOp) and op.elem_type == L.IntegerType(8)]
    assert rebuilt
    for op in rebuilt:
        base = op.operands[0].owner
        assert isinstance(base, L.CallOp) and base.callee.root_reference.data == "NRT_MemInfo_data_fast"


GUARDED = """
define double @f(ptr %x, i64 %h, ptr %k) {
entry:
  %positive = icmp sgt i64 %h, 0
  br i1 %positive, label %body, label %done
body:
  %kv = load i64, ptr %k
  %small = icmp slt i64 %kv, 3
  br i1 %small, label %mid, label %done
mid:
  %five = icmp eq i64 %h, 5
  br i1 %five, label %done, label %far
far:
  %b = getelementptr double, ptr %x, i64 %h
  %va = load double, ptr %x
  %vb = load double, ptr %b
  %m = fmul double %va, %vb
  store double %m, ptr %b
  br label %done
done:
  %r = phi double [ 0.0, %entry ], [ 1.0, %body ], [ 2.0, %mid ], [ %m, %far ]
  ret double %r
}
"""


def test_the_compares_that_led_to_a_block_are_assumed_in_its_reverse():
    # x[0] and x[h] are distinct because h > 0 was checked on the way in; the reverse of
    # `far` says so (and that h != 5), but not kv < 3: kv is not needed by the reverse
    # sweep, and it is not taped just for an assumption
    module = _differentiated(GUARDED, [("i64", "%h"), ("ptr", "%k")])
    fn = next(op for op in module.walk() if isinstance(op, L.FuncOp) and op.sym_name.data.startswith("diffe"))
    assumed = set()
    for op in fn.walk():
        if isinstance(op, L.CallIntrinsicOp) and op.intrin.data == "llvm.assume":
            cond = op.operands[0].owner
            negated = isinstance(cond, L.XOrOp)
            cmp = cond.operands[0].owner if negated else cond
            pred = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"][cmp.predicate.value.data]
            assumed.add(("not " if negated else "") + pred)
    assert assumed == {"sgt", "not eq"}
    assert not [op for op in fn.walk() if op.name == "enzyme.push" and str(op.operands[1].type) == "i64"]


def test_the_assumes_are_the_ops_xdsls_constructors_build():
    # issue 29 (first-call time): _assume builds its compare, xor, constant and llvm.assume
    # with Operation.create (xDSL's constructors were 3x the time, GMM has 527 assumes);
    # they must be the ops those constructors make, defaults of the properties included
    from zymase.ir import IntegerAttr, IntegerType

    def same(op, built):
        assert type(op) is type(built), (op, built)
        assert op.properties == built.properties and op.attributes == built.attributes, (op, built)
        assert [r.type for r in op.results] == [r.type for r in built.results]
        built.drop_all_references()

    module = _differentiated(GUARDED, [("i64", "%h"), ("ptr", "%k")])
    fn = next(op for op in module.walk() if isinstance(op, L.FuncOp) and op.sym_name.data.startswith("diffe"))
    seen = 0
    for op in list(fn.walk()):
        if not (isinstance(op, L.CallIntrinsicOp) and op.intrin.data == "llvm.assume"):
            continue
        same(op, L.CallIntrinsicOp("llvm.assume", list(op.operands), []))
        cond = op.operands[0].owner
        if isinstance(cond, L.XOrOp):
            same(cond, L.XOrOp(cond.operands[0], cond.operands[1]))
            same(cond.operands[1].owner, L.ConstantOp(IntegerAttr(-1, IntegerType(1)), IntegerType(1)))
            cond = cond.operands[0].owner
        same(cond, L.ICmpOp(cond.operands[0], cond.operands[1], cond.predicate))
        seen += 1
    assert seen == 4  # (h > 0 in three reverse blocks, h != 5 in one)


BIASED = """
define void @f(ptr %p, i64 %n) {{
entry:
  %guard = icmp sgt i64 %n, 1
  br i1 %guard, label %loop, label %exit
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %a = getelementptr double, ptr %p, i64 %i
  store double 1.0, ptr %a
  %next = add nuw nsw i64 %i, 2
  %t = {test}
  %c = icmp {pred} i64 %t, %n
  br i1 %c, label %loop, label %exit
exit:
  ret void
}}
"""


@pytest.mark.parametrize(
    "test, pred, bias",
    [
        ("or disjoint i64 %next, 1", "ult", 1),  # for (i = 0; i + 1 < n; i += 2), as clang -O2 has it
        ("add nsw i64 %next, 1", "slt", 1),
        ("add nuw i64 %next, 3", "ult", 3),
        ("or i64 %next, 1", "ult", None),        # not disjoint: not an add
        ("add i64 %next, 1", "slt", None),       # may wrap: not a bound
        ("add nuw i64 %next, 1", "slt", None),   # unsigned no-wrap, signed test
    ],
)
def test_an_exit_test_on_the_induction_variable_plus_a_constant(test, pred, bias):
    tc = _loop(BIASED.format(test=test, pred=pred))
    if bias is None:
        assert tc is None
    else:
        assert tc is not None and (tc.step, tc.offset, tc.bias) == (2, 1, bias)


PAIRS = r"""
#include <math.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

/* counts by two and tests i + 1 < n: clang -O2 writes the test as (i + 2) | 1 < n */
double pairs(int n, const double *restrict x) {
    double s = 0.0;
    for (int i = 0; i + 1 < n; i += 2)
        s += exp(x[i]) * x[i + 1];
    return s;
}

/* downwards by three, a strict test: its count ceil((n - 1) / 3) is exact too */
double down(int n, const double *restrict x) {
    double s = 0.0;
    for (int i = n - 1; i > 0; i -= 3)
        s += sin(x[i]) * x[i - 1];
    return s;
}

__attribute__((noinline)) void grad(int n, const double *x, double *dx) {
    __enzyme_autodiff((void *)pairs, enzyme_const, n, enzyme_dup, x, dx);
}

__attribute__((noinline)) void grad_down(int n, const double *x, double *dx) {
    __enzyme_autodiff((void *)down, enzyme_const, n, enzyme_dup, x, dx);
}

int main(void) {
    double x[13], dx[13], worst = 0.0;
    for (int n = 0; n <= 13; n++) {
        for (int i = 0; i < 13; i++) {
            x[i] = 0.1 * i - 0.4;
            dx[i] = 0.0;
        }
        grad(n, x, dx);
        for (int i = 0; i < 13; i++) {
            double want = 0.0;
            if (i % 2 == 0 && i + 1 < n) want = exp(x[i]) * x[i + 1];
            if (i % 2 == 1 && i < n) want = exp(x[i - 1]);
            worst = fmax(worst, fabs(dx[i] - want));
        }
        for (int i = 0; i < 13; i++) dx[i] = 0.0;
        grad_down(n, x, dx);
        for (int i = 0; i < 13; i++) {
            double want = 0.0;
            if (i < n && i > 0 && (n - 1 - i) % 3 == 0) want += cos(x[i]) * x[i - 1];
            if (i + 1 < n && (n - 2 - i) % 3 == 0) want += sin(x[i + 1]);
            worst = fmax(worst, fabs(dx[i] - want));
        }
    }
    printf("%g\n", worst);
    return !(worst < 1e-14);
}
"""


@pytest.mark.parametrize("opt", ["-O1", "-O2", "-O3"])
def test_a_loop_counting_by_two_tapes_into_an_indexed_cache(tmp_path, zymase_cli, opt):
    # before, the biased exit test was not recognized: exp(x[i]) went on a stack that
    # grows on every call, and the iteration count with it
    import os
    import subprocess

    from c_harness import build_and_run

    src = tmp_path / "pairs.c"
    src.write_text(PAIRS)
    build = run_cli(["cc", opt, "-g", "-c", str(src), "-o", str(tmp_path / "pairs.o")],
                    timeout=300,
                    env={**os.environ, "ZYMASE_DEBUG_TAPE": "1"})
    for fn, call in (("pairs", "@exp"), ("down", "@sin")):
        taped = [line for line in build.stderr.splitlines() if line.startswith(f"zymase: tape: {fn}:") and call in line]
        assert len(taped) == 1 and "indexed by 1 of 1 loops" in taped[0], build.stderr
    assert "per iteration" not in build.stderr, build.stderr
    build_and_run(src, [opt], tmp_path, zymase_cli)


# The worksharing loop of an OpenMP region after clang -O2 (issue 27 item 2): the
# induction variable is widened to i64 from the chunk's i32 lower bound, and the latch
# compares its truncation with the i32 upper bound plus one. Before the loop a guard
# leaves when lower > upper.
WORKSHARING = """
define void @f(ptr %p, i32 %lower, i32 %upper) {{
entry:
  %empty = icmp {guard} i32 %lower, %upper
  br i1 %empty, label %exit, label %pre
pre:
  %start = sext i32 %lower to i64
  %end = add nsw i32 %upper, {plus}
  br label %loop
loop:
  %i = phi i64 [ %start, %pre ], [ %next, %loop ]
  %a = getelementptr double, ptr %p, i64 %i
  store double 1.0, ptr %a
  %next = add nsw i64 %i, 1
  %t = trunc i64 %next to i32
  %c = icmp eq i32 %end, %t
  br i1 %c, label %exit, label %loop
exit:
  ret void
}}
"""


def test_a_truncated_exit_test_guarded_against_wrapping_is_an_exact_count():
    # item 2: trunc(i + 1) == upper + 1 after a guard lower <= upper runs upper - lower + 1
    # times: i + 1 reaches upper + 1 before its low 32 bits could wrap around
    from zymase.analysis.trip_count import constant_trip_count

    tc, exits = _loop_and_exits(WORKSHARING.format(guard="sgt", plus="1"))
    assert tc is not None and tc.exact(exits)
    assert (tc.step, tc.inclusive, tc.offset, tc.unsigned) == (1, False, 1, False)
    # the count is the upper bound's distance from the wide start: emitted as i64 arithmetic
    assert isinstance(tc.init.owner, L.SExtOp) and tc.bound.type.width.data == 32
    assert constant_trip_count(tc) is None


@pytest.mark.parametrize("guard, plus", [
    ("eq", "1"),    # entered whenever lower != upper: lower > upper + 1 wraps around
    ("slt", "1"),   # entered with lower >= upper: the same
    ("sgt", "0"),   # trunc(i + 1) == upper with lower == upper: 2^32 - 1 iterations
    ("sgt", "-1"),  # ... upper - 1
])
def test_a_truncated_exit_test_that_may_wrap_is_not_counted(guard, plus):
    # item 2: without a guard proving the bound above the start, the truncated test may
    # only be met after the low 32 bits wrap around: no count rather than a wrong one
    assert _loop(WORKSHARING.format(guard=guard, plus=plus)) is None
