"""zymase.ir.fast_ops builds the very ops xDSL's IRDL constructors build (issue 29: AD
builds them without IRDL's generic argument matching): the same class, operands, result
types, properties (in the same order) and attributes, and the same printed form."""

from __future__ import annotations

import pytest
from xdsl.irdl import IRDLOperation

from zymase.ir import Block, FloatAttr, IntegerAttr, VectorType, f64, fast_ops, i1, i32, i64, llvm, llvm_ext
from zymase.ir import enzyme as ez
from zymase.ir.enzyme import CacheType, GradientType, IndexedCacheType

PTR = llvm.LLVMPointerType()


def _same(fast, slow) -> None:
    assert type(fast) is type(slow)
    assert list(fast.operands) == list(slow.operands)
    assert [r.type for r in fast.results] == [r.type for r in slow.results]
    assert list(fast.properties.items()) == list(slow.properties.items())
    assert fast.attributes == slow.attributes
    if not isinstance(fast, llvm.CallOp) and not fast.successors:  # (calls and branches verify in a module)
        fast.verify()
    assert str(fast) == str(slow)


@pytest.fixture(scope="module")
def values():
    """An f64, an i64, a pointer and enzyme handles, as op results."""
    x = llvm.ConstantOp(FloatAttr(2.0, f64), f64)
    n = llvm.ConstantOp(IntegerAttr(3, i64), i64)
    p = llvm.ZeroOp.build(result_types=[PTR])
    grad = ez.InitOp(GradientType(f64))
    cache = ez.InitOp(CacheType(f64))
    indexed = ez.InitOp(IndexedCacheType(f64))
    return x.result, n.result, p.results[0], grad.result, cache.result, indexed.result


def test_builders_match_the_constructors(values) -> None:
    x, n, p, *_ = values
    _same(fast_ops.constant(FloatAttr(1.5, f64), f64), llvm.ConstantOp(FloatAttr(1.5, f64), f64))
    _same(fast_ops.constant(fast_ops.int_attr(7, i32), i32), llvm.ConstantOp(IntegerAttr(7, i32), i32))
    for cls in (llvm.FAddOp, llvm.FSubOp, llvm.FMulOp, llvm.FDivOp):
        _same(fast_ops.float_arith(cls, x, x.owner), cls(x, x))
    for cls in (llvm.AddOp, llvm.SubOp, llvm.MulOp):
        _same(fast_ops.int_arith(cls, n, n), cls(n, n))
    _same(fast_ops.call("free", [p]), llvm.CallOp("free", p))
    _same(fast_ops.call("g", [x, n, p], f64), llvm.CallOp("g", x, n, p, return_type=f64))
    _same(fast_ops.call("h", []), llvm.CallOp("h"))
    flag = llvm_ext.ICmpOp(n, n, IntegerAttr(0, i64)).results[0]
    for cls in (llvm.SelectOp, llvm_ext.SelectOp):
        _same(fast_ops.select(cls, flag, x, x.owner), cls(flag, x, x))
    _same(fast_ops.alloca(n, f64, 8), llvm.AllocaOp(n, f64, alignment=8))
    _same(fast_ops.load(p, f64), llvm.LoadOp(p, f64))
    _same(fast_ops.store(x, p), llvm.StoreOp(x, p))
    pair = llvm.LLVMStructType.from_type_list([PTR, i64])
    _same(fast_ops.gep(p, [0, 1], pair), llvm.GEPOp(p, [0, 1], pair))
    _same(fast_ops.gep(p, [llvm.GEP_USE_SSA_VAL], f64, [n]), llvm.GEPOp(p, [llvm.GEP_USE_SSA_VAL], f64, ssa_indices=[n]))
    for cls in (llvm.ICmpOp, llvm_ext.ICmpOp):
        _same(fast_ops.icmp(cls, n, n, IntegerAttr(2, i64)), cls(n, n, IntegerAttr(2, i64)))
    # (pointer comparisons are the extended dialect's)
    _same(fast_ops.icmp(llvm_ext.ICmpOp, p, p, IntegerAttr(0, i64)), llvm_ext.ICmpOp(p, p, IntegerAttr(0, i64)))
    for name in ("oeq", "uno", "olt"):
        _same(fast_ops.fcmp(x, x, fast_ops.fcmp_predicate(name)), llvm_ext.FCmpOp(x, x, name))
    fast = llvm.FastMathAttr("fast")
    _same(fast_ops.fcmp(x, x, IntegerAttr(4, i64), fast), llvm_ext.FCmpOp(x, x, IntegerAttr(4, i64), fast_math=fast))
    pair_of_doubles = VectorType(f64, [2])
    lanes = llvm.UndefOp(pair_of_doubles).results[0]
    _same(fast_ops.fcmp(lanes, lanes, fast_ops.fcmp_predicate("ogt")), llvm_ext.FCmpOp(lanes, lanes, "ogt"))
    _same(fast_ops.call_intrinsic("llvm.experimental.noalias.scope.decl", [], []),
          llvm.CallIntrinsicOp("llvm.experimental.noalias.scope.decl", [], []))
    _same(fast_ops.call_intrinsic("llvm.fabs.f64", [x], [f64]), llvm.CallIntrinsicOp("llvm.fabs.f64", [x], [f64]))
    here, there = Block(arg_types=[f64]), Block(arg_types=[f64, i64])
    _same(fast_ops.br(here, [x]), llvm.BrOp(here, x))
    _same(fast_ops.br(here), llvm.BrOp(here))
    for targs, eargs in (([x], [x, n]), ([], [])):
        _same(fast_ops.cond_br(flag, here, targs, there, eargs), llvm.CondBrOp(flag, here, targs, there, eargs))
    # shared attributes are still the values the constructors make; True is not 1
    assert fast_ops.int_attr(1, i1) == IntegerAttr(1, i1)
    assert fast_ops.int_attr(True, i1) is not fast_ops.int_attr(1, i1)


def _irdl(cls, **kwargs):
    """``cls`` built by IRDL's generic constructor (what its ``__init__`` used to call)."""
    op = cls.__new__(cls)
    IRDLOperation.__init__(op, **kwargs)
    return op


def test_extended_and_enzyme_ops_match_irdl(values) -> None:
    x, n, p, grad, cache, indexed = values
    _same(llvm_ext.LoadOp(p, f64, alignment=8), _irdl(
        llvm_ext.LoadOp, operands=[p], result_types=[f64],
        properties={"ordering": IntegerAttr(0, i64), "alignment": IntegerAttr(8, i64)}))
    _same(llvm_ext.LoadOp(p, f64, ordering=2, volatile=True), _irdl(
        llvm_ext.LoadOp, operands=[p], result_types=[f64],
        properties={"ordering": IntegerAttr(2, i64), "volatile_": llvm_ext.UnitAttr()}))
    _same(llvm_ext.StoreOp(x, p, alignment=8, nontemporal=True), _irdl(
        llvm_ext.StoreOp, operands=[x, p], result_types=[],
        properties={"ordering": IntegerAttr(0, i64), "alignment": IntegerAttr(8, i64),
                    "nontemporal": llvm_ext.UnitAttr()}))
    # xDSL's own StoreOp constructor, run on the extended class
    slow = llvm_ext.StoreOp.__new__(llvm_ext.StoreOp)
    llvm.StoreOp.__init__(slow, x, p, alignment=4, ordering=5, volatile=True)
    _same(llvm_ext.StoreOp(x, p, alignment=4, ordering=5, volatile=True), slow)
    _same(ez.InitOp(GradientType(f64)), _irdl(ez.InitOp, result_types=[GradientType(f64)]))
    # the derivative requests (one variadic operand group, one variadic result group)
    from zymase.ir.enzyme import Activity, ActivityAttr
    from xdsl.dialects.builtin import ArrayAttr, FlatSymbolRefAttr

    acts = [Activity.DUP, Activity.CONST]
    for cls, width in ((ez.AutoDiffOp, 1), (ez.FwdDiffOp, 2)):
        props = {"fn": FlatSymbolRefAttr("f"), "activity": ArrayAttr([ActivityAttr(a) for a in acts]),
                 "ret_activity": ArrayAttr([ActivityAttr(Activity.ACTIVE)])}
        if width != 1:
            props["width"] = IntegerAttr(width, 64)
        _same(cls("f", [p, p, n], [f64, i64], acts, [Activity.ACTIVE], width=width),
              _irdl(cls, operands=[[p, p, n]], result_types=[[f64, i64]], properties=props))
    _same(ez.SetOp(grad, x), _irdl(ez.SetOp, operands=[grad, x]))
    _same(ez.GetOp(grad), _irdl(ez.GetOp, operands=[grad], result_types=[f64]))
    _same(ez.PushOp(cache, x), _irdl(ez.PushOp, operands=[cache, x]))
    _same(ez.PopOp(cache), _irdl(ez.PopOp, operands=[cache], result_types=[f64]))
    _same(ez.CacheReserveOp(indexed, n), _irdl(ez.CacheReserveOp, operands=[indexed, n]))
    _same(ez.CacheStoreOp(indexed, n, x), _irdl(ez.CacheStoreOp, operands=[indexed, n, x]))
    _same(ez.CacheLoadOp(indexed, n), _irdl(ez.CacheLoadOp, operands=[indexed, n], result_types=[f64]))


def test_append_and_insert_before_link_ops_as_xdsl_does(values) -> None:
    """fast_ops.append / insert_before (the generators' Emitter, the reader, clone_region)
    leave a block's op list as ``add_op`` / ``insert_op_before`` leave it, and still refuse
    what xDSL refuses; they skip xDSL's walk up from the block to its ancestors."""
    x, *_ = values

    def ops():
        return [fast_ops.constant(fast_ops.int_attr(k), i64) for k in range(4)]

    ours, theirs = Block(), Block()
    a, b = ops(), ops()
    fast_ops.append(ours, a[0])
    theirs.add_op(b[0])
    fast_ops.insert_before(ours, a[1], a[0])
    theirs.insert_op_before(b[1], b[0])
    fast_ops.append(ours, a[2])
    theirs.add_op(b[2])
    fast_ops.insert_before(ours, a[3], a[2])
    theirs.insert_op_before(b[3], b[2])

    def links(block, made):
        index = {id(op): k for k, op in enumerate(made)}
        named = lambda op: None if op is None else index[id(op)]  # noqa: E731
        return (named(block.first_op), named(block.last_op),
                [(named(op.prev_op), named(op.next_op), op.parent is block) for op in made])

    assert links(ours, a) == links(theirs, b)
    assert [op.value.value.data for op in ours.ops] == [1, 0, 3, 2]
    with pytest.raises(ValueError):
        fast_ops.append(Block(), a[0])  # already in a block
    with pytest.raises(ValueError):
        fast_ops.insert_before(Block(), ops()[0], a[0])  # the anchor is not in that block


def test_the_generators_insert_without_xdsl_ancestor_walks(tmp_path, monkeypatch) -> None:
    """A build's AD and import attach ops through fast_ops: xDSL's ``is_ancestor`` walk
    (run by ``Block._attach_op`` for every op added) is left to the few ops with regions
    and the passes outside AD. On the base, every op the reader and the generators made
    walked up from its block to the module."""
    from xdsl.ir.core import Block as XBlock

    from zymase.cli import main

    src = tmp_path / "sq.c"
    src.write_text(
        "extern double __enzyme_autodiff(void *, ...);\n"
        "static double sq(double x) { return x * x * x + x * (x + 1.5) * (x - 2.5) / (x * x + 3.5) + x * x; }\n"
        "double run(double x) { return __enzyme_autodiff((void *)sq, x); }\n")
    attached = []
    xdsl_attach = XBlock._attach_op

    def counting(self, op):
        attached.append(op)
        return xdsl_attach(self, op)

    monkeypatch.setattr(XBlock, "_attach_op", counting)
    assert main(["cc", "-O0", "-c", "--no-cache", str(src), "-o", str(tmp_path / "sq.o")]) == 0
    # (the functions, the derivative's blocks' terminators moved by xDSL's rewriter ...)
    assert len(attached) < 30, len(attached)


def test_a_build_makes_compares_and_requests_without_irdl(tmp_path, monkeypatch) -> None:
    """The reader's and the generators' float compares (fast_ops.fcmp) and the marker
    sites' derivative requests (enzyme.autodiff / fwddiff) are built without IRDL's
    generic constructor; on the base each went through it (0.3-1 ms apiece)."""
    from xdsl.irdl import operations

    from zymase.cli import main

    src = tmp_path / "relu.c"
    src.write_text(
        "extern double __enzyme_autodiff(void *, ...);\n"
        "extern double __enzyme_fwddiff(void *, ...);\n"
        "static double f(double x) { return x > 0.5 ? x * x : x / (x * x + 1.0); }\n"
        "double run(double x) { return __enzyme_autodiff((void *)f, x) + __enzyme_fwddiff((void *)f, x, 1.0); }\n")
    built = []
    irdl = operations.irdl_op_init

    def counting(self, *args, **kwargs):
        built.append(type(self).__name__)
        return irdl(self, *args, **kwargs)

    monkeypatch.setattr(operations, "irdl_op_init", counting)
    assert main(["cc", "-O0", "-c", "--no-cache", str(src), "-o", str(tmp_path / "relu.o")]) == 0
    assert built  # (the count sees IRDL's constructions: functions, returns ...)
    assert not {"FCmpOp", "AutoDiffOp", "FwdDiffOp"} & set(built), sorted(built)
