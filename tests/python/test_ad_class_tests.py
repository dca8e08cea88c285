"""The AD phase's class tests and op construction stay cheap (issue 29, compile time):
counts, not seconds.

- xDSL's op, type and value classes are ABCs: ``isinstance`` of an object of another
  class goes through ``ABCMeta.__instancecheck__`` (a Python call). The walks of the
  marker lowering, the enzyme pass, the refusals, type deductions, written memory and the
  reverse sweep ask such questions of every op; they go through
  ``analysis/op_classes.is_a``, decided once per class. Session 37 measured about 12
  such calls per op of the differentiated module before, about 3 after.
- ``ir/fast_ops`` builds ops with their location given (xDSL's default is looked up by
  an import statement per op) and takes values as operands without ``SSAValue.get``'s
  ABC test.
- The reverse sweep's forward copy of the primal gives each copy its operands once: built
  with them, or, when an op uses a value of a block listed after it (a loop's latch
  before its header), set once every copy exists (session 38: before, every copy was
  built with its operands and given them all again); the ops the reverse sweep
  recomputes are cloned with their reverse-sweep operands, not given them after.
"""

from __future__ import annotations

import abc

import pytest
from xdsl.dialects.builtin import UNKNOWN_LOC
from xdsl.ir import core as xdsl_core

from zymase.ir import IntegerAttr, Operation, SSAValue, f64, fast_ops, i64, llvm
from zymase.llvm import toolchain


_PROGRAM = r"""
#include <math.h>
#include <string.h>
extern void __enzyme_autodiff(void *, ...);
struct P { double *v; int n; };
static double norm(struct P p) { double s = 0; for (int i = 0; i < p.n; i++) s += p.v[i] * p.v[i]; return sqrt(s); }
double f(const double *x, int n) {
    double buf[8];
    memcpy(buf, x, sizeof buf);
    struct P p = {buf, n < 8 ? n : 8};
    double s = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            s += sin(x[i] * x[j]) / (1.0 + x[j] * x[j]) + cos(x[j] - 0.5) * x[(i + j) % n];
    return s + norm(p);
}
void g(const double *x, double *dx, int n) { __enzyme_autodiff((void *)f, x, dx, n); }
"""


class _AbcChecks:
    """Counts ``ABCMeta.__instancecheck__`` calls while ``on``, and the classes asked for."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.count = 0
        self.on = False
        self.classes: set[type] = set()
        check = abc.ABCMeta.__instancecheck__

        def counting(cls, instance):
            if self.on:
                self.count += 1
                self.classes.add(cls)
            return check(cls, instance)

        monkeypatch.setattr(abc.ABCMeta, "__instancecheck__", counting)


@pytest.mark.parametrize("level", [0, 2])
def test_the_ad_phase_decides_class_tests_by_class(level, tmp_path, monkeypatch) -> None:
    from zymase.frontends import c as c_frontend

    source = tmp_path / "classes.c"
    source.write_text(_PROGRAM)
    ll = toolchain.c_to_llvm_ir(source, [], level)  # (clang -O<level>, no LLVM pass)
    # once first: the engine's modules imported (their own class tests are not the AD's)
    c_frontend.differentiate_llvm_ir(ll, source.name, level, c_frontend.Timings())
    checks = _AbcChecks(monkeypatch)
    ops = []
    differentiate = c_frontend.differentiate_module

    def counted(module):
        checks.on = True
        try:
            return differentiate(module)
        finally:
            checks.on = False
            ops.append(sum(1 for _ in module.walk()))

    monkeypatch.setattr(c_frontend, "differentiate_module", counted)
    out = c_frontend.differentiate_llvm_ir(ll, source.name, level, c_frontend.Timings())
    assert "@__enzyme_autodiff" not in out and ops and ops[0] > 500
    # about 12 per op before session 37, 3 after
    assert checks.count <= 6 * ops[0], (
        f"{checks.count} ABC instance checks for {ops[0]} ops: a walk tests classes with isinstance")


def test_fast_ops_builders_look_up_no_default_location_and_test_no_abc(monkeypatch) -> None:
    defaults = []
    unknown_loc = xdsl_core._unknown_loc

    def counted_default():
        defaults.append(1)
        return unknown_loc()

    monkeypatch.setattr(xdsl_core, "_unknown_loc", counted_default)
    ptr = llvm.ZeroOp.build(result_types=[llvm.LLVMPointerType()]).results[0]
    x = llvm.ConstantOp(IntegerAttr(1, i64), i64).results[0]
    pair, eq, three = llvm.LLVMStructType.from_type_list([f64, f64]), IntegerAttr(0, i64), fast_ops.int_attr(3)
    defaults.clear()
    checks = _AbcChecks(monkeypatch)
    checks.on = True
    y = fast_ops.constant(three, i64)
    ops = [
        y,
        fast_ops.int_arith(llvm.AddOp, x, y.results[0]),
        fast_ops.float_arith(llvm.FAddOp, x, x),
        fast_ops.load(ptr, f64),
        fast_ops.store(x, ptr),
        fast_ops.call("zymase_test_callee", [x, ptr]),
        fast_ops.gep(ptr, [0, 1], pair),
        fast_ops.alloca(x, f64),
        fast_ops.select(llvm.SelectOp, fast_ops.icmp(llvm.ICmpOp, x, x, eq).results[0], x, x),
        fast_ops.call_intrinsic("llvm.fabs.f64", [x], [f64]),
    ]
    checks.on = False
    assert not defaults, f"{len(defaults)} default locations looked up by xDSL"
    # (the attributes and IRDL's default properties xDSL checks are its own)
    assert SSAValue not in checks.classes, "an operand was taken through SSAValue.get's ABC test"
    assert all(op.location is UNKNOWN_LOC for op in ops)


_STRAIGHT = r"""
#include <math.h>
extern void __enzyme_autodiff(void *, ...);
double f(const double *x) {
    double s = sin(x[0]) * x[1] + cos(x[2] * x[0]);
    return s * exp(x[1] - s);
}
void g(const double *x, double *dx) { __enzyme_autodiff((void *)f, x, dx); }
"""


def _count_clones(monkeypatch, on_copy) -> None:
    """``on_copy(copy)`` for each op AD clones, either way: xDSL's ``Operation.clone`` and
    ``fast_ops.clone`` (the same op, built once; an op with regions goes to the former)."""
    xdsl_clone, fast_clone = Operation.clone, getattr(fast_ops, "clone", None)

    def counted_clone(op, *args, **kwargs):
        copy = xdsl_clone(op, *args, **kwargs)
        on_copy(copy)
        return copy

    def counted_fast_clone(op, *args, **kwargs):
        copy = fast_clone(op, *args, **kwargs)
        if not op.regions:  # (else counted as xDSL's)
            on_copy(copy)
        return copy

    monkeypatch.setattr(Operation, "clone", counted_clone)
    if fast_clone is not None:  # (absent before session 38)
        monkeypatch.setattr(fast_ops, "clone", counted_fast_clone)


@pytest.mark.parametrize("level", [0, 2])
@pytest.mark.parametrize("program", ["straight", "loop"])
def test_clones_are_not_given_their_own_operands_again(program, level, tmp_path, monkeypatch) -> None:
    """A straight-line function's copies are built with their operands; a loop's at -O2
    uses values of blocks listed after it (the latch before the header), whose copies
    get their operands once all exist, once."""
    from zymase.frontends import c as c_frontend

    source = tmp_path / f"{program}.c"
    source.write_text(_STRAIGHT if program == "straight" else _LOOP)
    ll = toolchain.c_to_llvm_ir(source, [], level)  # (clang -O<level>, no LLVM pass)
    cloned: dict[int, Operation] = {}  # (the copies kept: a freed one's id is reused)
    again = []
    operands = Operation.operands

    def on_copy(copy):
        cloned[id(copy)] = copy

    def counted_set(op, new):
        new = list(new)
        if id(op) in cloned and list(op.operands) == new:
            again.append(op.name)
        operands.fset(op, new)

    _count_clones(monkeypatch, on_copy)
    monkeypatch.setattr(Operation, "operands", property(operands.fget, counted_set))
    out = c_frontend.differentiate_llvm_ir(ll, source.name, level, c_frontend.Timings())
    assert "@__enzyme_autodiff" not in out and cloned
    assert not again, f"{len(again)} clones given the operands they had: {sorted(set(again))}"


_LOOP = r"""
#include <math.h>
extern void __enzyme_autodiff(void *, ...);
double f(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += sin(x[i]) * x[i] + cos(x[i] * s);
    return s * s;
}
void g(const double *x, double *dx, int n) { __enzyme_autodiff((void *)f, x, dx, n); }
"""


@pytest.mark.parametrize("level", [0, 2])
def test_recomputed_ops_are_built_with_their_operands(level, tmp_path, monkeypatch) -> None:
    """The reverse sweep's recomputed ops (tape.MinCutRecompute._rebuild) are cloned with
    their reverse-sweep operands, not cloned with the forward ones and given these after."""
    from zymase.autodiff import tape
    from zymase.frontends import c as c_frontend

    source = tmp_path / "loop.c"
    source.write_text(_LOOP)
    ll = toolchain.c_to_llvm_ir(source, [], level)  # (clang -O<level>, no LLVM pass)
    rebuilding = {"depth": 0, "clones": {}, "set": 0}  # (the copies kept: a freed one's id is reused)
    rebuild, operands = tape.MinCutRecompute._rebuild, Operation.operands

    def counted_rebuild(self, *args, **kwargs):
        rebuilding["depth"] += 1
        try:
            return rebuild(self, *args, **kwargs)
        finally:
            rebuilding["depth"] -= 1

    def on_copy(copy):
        if rebuilding["depth"]:
            rebuilding["clones"][id(copy)] = copy

    def counted_set(op, new):
        rebuilding["set"] += id(op) in rebuilding["clones"]
        operands.fset(op, new)

    monkeypatch.setattr(tape.MinCutRecompute, "_rebuild", counted_rebuild)
    _count_clones(monkeypatch, on_copy)
    monkeypatch.setattr(Operation, "operands", property(operands.fget, counted_set))
    out = c_frontend.differentiate_llvm_ir(ll, source.name, level, c_frontend.Timings())
    assert "@__enzyme_autodiff" not in out
    assert rebuilding["clones"], "nothing recomputed: the program no longer tests this"
    assert rebuilding["set"] == 0, f"{rebuilding['set']} recomputed ops given their operands after cloning"
