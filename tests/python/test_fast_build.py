"""``ir/fast_ops.build`` is xDSL's ``create`` and ``fast_ops.clone`` its ``Operation.clone``
(issue 29, compile time): the same op, mapped the same way; built without the generic
parts of ``Operation.__init__`` and ``IRDLOperation.__post_init__`` (the definition's
defaults are found once per class), and, in the AD phase, each copy given its operands
once (xDSL's clone builds the op with none and sets them again after walking it)."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import FloatAttr, StringAttr

from xdsl.dialects.builtin import UNKNOWN_LOC, IntegerAttr
from xdsl.irdl import IRDLOperation

from zymase.ir import Block, Operation, f64, fast_ops, i1, i64, llvm, llvm_ext
from zymase.ir import enzyme as ez
from zymase.llvm import toolchain

PTR = llvm.LLVMPointerType()


def _same_op(fast, slow) -> None:
    assert type(fast) is type(slow)
    assert list(fast.operands) == list(slow.operands)
    assert [r.type for r in fast.results] == [r.type for r in slow.results]
    assert [(r.op, r.index) for r in fast.results] == [(fast, k) for k in range(len(slow.results))]
    assert list(fast.properties.items()) == list(slow.properties.items())  # (the defaults last, in order)
    assert list(fast.attributes.items()) == list(slow.attributes.items())
    assert list(fast.successors) == list(slow.successors) and fast.regions == slow.regions == ()
    assert fast.location is slow.location and fast.parent is None


def test_build_is_create() -> None:
    entry, other = Block(arg_types=[PTR, f64, i64]), Block(arg_types=[f64])
    p, x, n = entry.args
    cases = [
        (llvm.CallOp, [x, p], [f64], {"callee": fast_ops._symbol("g")}, {"zymase.test": StringAttr("a")}, ()),
        (llvm.FAddOp, [x, x], [f64], {}, {}, ()),
        (llvm.FCmpOp, [x, x], [i1], {"predicate": IntegerAttr(4, i64)}, {}, ()),
        (llvm.BrOp, [x], [], {}, {}, [other]),
        (llvm_ext.LoadOp, [p], [f64], {"ordering": IntegerAttr(0, i64)}, {}, ()),
        (ez.InitOp, [], [ez.GradientType(f64)], {}, {}, ()),
        (llvm.ReturnOp, [], [], {}, {}, ()),
    ]
    for cls, operands, types, props, attrs, succ in cases:
        slow = cls.create(operands=operands, result_types=types, properties=props, attributes=attrs,
                          successors=succ, location=UNKNOWN_LOC)
        fast = fast_ops.build(cls, operands, types, dict(props), dict(attrs), succ)
        _same_op(fast, slow)
    # the uses: each operand's use by the op, at its index
    call = fast_ops.build(llvm.CallOp, [x, p, x], [f64], {"callee": fast_ops._symbol("g")})
    assert [(u.operation, u.index) for u in x.uses][:2] == [(call, 2), (call, 0)]
    assert [(u.operation, u.index) for u in other.uses][-1][1] == 0


def test_fast_builders_run_no_generic_construction(monkeypatch) -> None:
    """The builders AD uses by the thousand (and the extended dialects' hot ops, and
    clones) go through neither ``Operation.__init__`` nor IRDL's ``__post_init__``."""
    generic = []
    init, post_init = Operation.__init__, IRDLOperation.__post_init__

    def counted_init(op, *args, **kwargs):
        generic.append(("__init__", op.name))
        init(op, *args, **kwargs)

    def counted_post_init(op):
        generic.append(("__post_init__", op.name))
        post_init(op)

    entry = Block(arg_types=[PTR, f64, i64, i1])
    p, x, n, c = entry.args
    monkeypatch.setattr(Operation, "__init__", counted_init)
    monkeypatch.setattr(IRDLOperation, "__post_init__", counted_post_init)
    ops = [
        fast_ops.constant(fast_ops.int_attr(3), i64),
        fast_ops.float_arith(llvm.FMulOp, x, x),
        fast_ops.int_arith(llvm.AddOp, n, n),
        fast_ops.call("g", [x, p], f64),
        fast_ops.call_intrinsic("llvm.fabs.f64", [x], [f64]),
        fast_ops.load(p, f64), fast_ops.store(x, p), fast_ops.alloca(n, f64),
        fast_ops.gep(p, [0, 1], llvm.LLVMStructType.from_type_list([f64, f64])),
        fast_ops.icmp(llvm.ICmpOp, n, n, IntegerAttr(0, i64)),
        fast_ops.select(llvm.SelectOp, c, x, x),
        fast_ops.br(entry, [p, x, n, c]),
        llvm_ext.LoadOp(p, f64, alignment=8), llvm_ext.StoreOp(x, p, alignment=8),
        ez.InitOp(ez.GradientType(f64)),
    ]
    ops += [fast_ops.clone(op) for op in ops]
    assert not generic, f"{len(generic)} generic construction steps: {sorted(set(generic))}"


def _uses(value) -> list[tuple[str, int]]:
    """The use list of ``value``, in its order: (op name, operand index)."""
    return [(u.operation.name, u.index) for u in value.uses]


def _block():
    """A block of a load, float arithmetic, a call, a compare and a branch with block
    arguments (and name hints, one that xDSL's name setter shortens)."""
    entry = Block(arg_types=[PTR, f64, i1])
    then, other = Block(arg_types=[f64]), Block(arg_types=[f64])
    p, x, c = entry.args
    load = fast_ops.load(p, f64)
    load.results[0].name_hint = "v_1_2"  # kept as "v_1"; set again on a copy: "v"
    add = fast_ops.float_arith(llvm.FAddOp, load, x)
    add.results[0].name_hint = "sum"
    add.attributes["zymase.test"] = StringAttr("kept")
    call = fast_ops.call("g", [add, p], f64)
    cmp = llvm.FCmpOp(call.results[0], x, "olt")
    br = fast_ops.cond_br(c, then, [add], other, [call])
    entry.add_ops([load, add, call, cmp, br])
    return entry, (then, other), [load, add, call, cmp, br]


def _spelled(values, originals, copies, y) -> list:
    """Operands as the same thing across two runs of cloning: a value of the run's
    originals or a result of its copies by position, the run's constant "y"."""
    where = {id(r): ("copy", k, r.index) for k, c in enumerate(copies) for r in c.results}
    where.update({id(v): ("original", k) for k, v in enumerate(originals)})
    return ["y" if v is y else where[id(v)] for v in values]


@pytest.mark.parametrize("mapped", [False, True])
def test_fast_clone_is_xdsl_clone(mapped) -> None:
    runs = []
    for clone in (Operation.clone, fast_ops.clone):
        entry, (then, other), ops = _block()
        y = llvm.ConstantOp(FloatAttr(1.0, f64), f64).result
        vmap, bmap = ({entry.args[1]: y}, {then: other}) if mapped else (None, None)
        made = [clone(op, vmap, bmap) if mapped else clone(op) for op in ops]
        # the use lists of the originals' values: the copies' uses added as xDSL adds them
        originals = [*entry.args, *(r for op in ops for r in op.results)]
        runs.append((made, vmap, y, [_uses(v) for v in originals], originals, (then, other)))
    slow, slow_map, y_slow, slow_uses, slow_orig, _ = runs[0]
    fast, fast_map, y_fast, fast_uses, fast_orig, (then, other) = runs[1]
    assert fast_uses == slow_uses
    for s, f in zip(slow, fast):
        assert type(s) is type(f)
        assert _spelled(s.operands, slow_orig, slow, y_slow) == _spelled(f.operands, fast_orig, fast, y_fast)
        assert [r.type for r in s.results] == [r.type for r in f.results]
        assert [r.name_hint for r in s.results] == [r.name_hint for r in f.results]
        assert [_uses(r) for r in s.results] == [_uses(r) for r in f.results]
        assert list(s.properties.items()) == list(f.properties.items())
        assert s.attributes == f.attributes and s.location == f.location
        assert len(s.successors) == len(f.successors)
    assert [r.name_hint for r in fast[0].results] == ["v"]
    assert all(f.attributes is not o.owner.attributes and f.properties is not o.owner.properties
               for f, o in zip(fast, fast_orig[3:]))  # (copies, not shared)
    if mapped:
        # the results are entered in the mapper, the successors mapped
        assert len(fast_map) == len(slow_map) == 1 + sum(len(op.results) for op in fast)
        assert list(fast[-1].successors) == [other, other]
    else:
        assert list(fast[-1].successors) == [then, other]


_PROGRAM = r"""
#include <math.h>
extern void __enzyme_autodiff(void *, ...);
double f(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += sin(x[i]) * x[i] + cos(x[i] * s) / (1.0 + x[i] * x[i]);
    return s * s + exp(x[0]);
}
void g(const double *x, double *dx, int n) { __enzyme_autodiff((void *)f, x, dx, n); }
"""


@pytest.mark.parametrize("level", [0, 2])
def test_the_ad_phase_gives_each_copy_its_operands_once(level, tmp_path, monkeypatch) -> None:
    """The forward sweep's copy of the primal, the values fetched and the ops recomputed in
    the reverse sweep: every op AD copies has its operand list set once (xDSL's clone:
    twice, an empty list and then the operands, with a walk of the op in between)."""
    from zymase.frontends import c as c_frontend

    source = tmp_path / "loop.c"
    source.write_text(_PROGRAM)
    ll = toolchain.c_to_llvm_ir(source, [], level)  # (clang -O<level>, no LLVM pass)
    inside: list[list[int]] = []  # per clone call in progress: the ops whose operands it set
    per_copy: list[tuple[str, int]] = []  # (copy's name, times its clone set its operands)
    operands, xdsl_clone, fast_clone = Operation.operands, Operation.clone, getattr(fast_ops, "clone", None)

    def counted_set(op, new):
        if inside:
            inside[-1].append(id(op))
        operands.fset(op, new)

    def counted(clone):
        def cloning(op, *args, **kwargs):
            inside.append([])
            try:
                copy = clone(op, *args, **kwargs)
            finally:
                set_here = inside.pop()
            if not op.regions:
                per_copy.append((copy.name, set_here.count(id(copy))))
            return copy
        return cloning

    monkeypatch.setattr(Operation, "operands", property(operands.fget, counted_set))
    # (fast_ops gives a new op its operands without the property: counted the same)
    fast_set = fast_ops._set_operands

    def counted_fast_set(op, new):
        if inside:
            inside[-1].append(id(op))
        fast_set(op, new)

    monkeypatch.setattr(fast_ops, "_set_operands", counted_fast_set)
    monkeypatch.setattr(Operation, "clone", counted(xdsl_clone))
    if fast_clone is not None:
        monkeypatch.setattr(fast_ops, "clone", counted(fast_clone))
    out = c_frontend.differentiate_llvm_ir(ll, source.name, level, c_frontend.Timings())
    assert "@__enzyme_autodiff" not in out
    assert len(per_copy) > 20, "AD copied few ops: the program no longer tests this"
    twice = [name for name, n in per_copy if n != 1]
    assert not twice, f"{len(twice)} of {len(per_copy)} copies given operands more than once: {sorted(set(twice))}"


_LOOP_IR = r"""
define double @f(ptr %x, i64 %n) {
entry:
  br label %head
latch:
  %next = add i64 %i, 1
  %acc = fadd double %s, %v
  br label %head
head:
  %i = phi i64 [ 0, %entry ], [ %next, %latch ]
  %s = phi double [ 0.0, %entry ], [ %acc, %latch ]
  %p = getelementptr double, ptr %x, i64 %i
  %v = load double, ptr %p
  %more = icmp slt i64 %i, %n
  br i1 %more, label %latch, label %done
done:
  ret double %s
}
"""


def _positions(region):
    """Each value of ``region`` (block arguments, results) by position, and its uses as
    (position of the using op, operand index), in use-list order."""
    ops = [op for b in region.blocks for op in b.ops]
    where = {id(op): k for k, op in enumerate(ops)}
    values = [a for b in region.blocks for a in b.args] + [r for op in ops for r in op.results]
    return ([(v.name_hint, v.type, [(where[id(u.operation)], u.index) for u in v.uses]) for v in values],
            [(op.name, list(op.properties.items()), list(op.attributes.items()),
              [region.blocks.index(s) for s in op.successors]) for op in ops])


def test_clone_region_is_xdsl_region_clone(monkeypatch) -> None:
    """A function body whose blocks use values of blocks after them (the loop's latch
    before its header): the same blocks, ops, names, and use lists in the same order; no
    op cloned or built by xDSL's generic code."""
    from zymase.llvm.reader import read_llvm_ir

    func = next(op for op in read_llvm_ir(_LOOP_IR, "loop.ll").body.block.ops if isinstance(op, llvm.FuncOp))
    slow = func.body.clone()
    generic = []
    init, clone = Operation.__init__, Operation.clone
    monkeypatch.setattr(Operation, "__init__", lambda op, *a, **k: generic.append(op.name) or init(op, *a, **k))
    monkeypatch.setattr(Operation, "clone", lambda op, *a, **k: generic.append(op.name) or clone(op, *a, **k))
    fast = fast_ops.clone_region(func.body)
    assert not generic, f"built or cloned by xDSL: {generic}"
    assert _positions(fast) == _positions(slow)
    assert all(op.parent_block() is b for b in fast.blocks for op in b.ops)
    # the originals keep their uses: the copies use only copies
    assert _positions(func.body) == _positions(fast)
