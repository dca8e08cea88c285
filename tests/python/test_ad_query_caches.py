"""The AD phase's repeated queries are answered once (issue 29, compile time): counts of
the work behind each answer, not seconds.

- ``analysis/memory.memory_kind`` of a call is decided by its callee's name, once per
  name (the analyses and generators ask for every op many times); a call whose kind
  depends on more than its name (``NRT_MemInfo_alloc_dtor``: its destructor) is
  decided each time.
- ``autodiff/common.Context.defined_function`` reads a callee's Enzyme mark (a parse of
  its passthrough list) once per function, again only when the function is marked anew.
- The reverse sweep decides whether a forward value may be recomputed once per value
  (every min-cut reaching it and every rebuild after a cut asked again), and finds the
  loop a value is hoisted out of once per (block of the value, block being reversed).
- The float constants derivatives emit are built (and verified) once per value and type.
- The type rules are resolved once per type class (a class without a rule of its own went
  through every registered class), again after a registration.
- The LLVM writer spells each type object once: an xDSL attribute's hash is computed at
  every dictionary lookup, and every operand and result asks for its type's text.
"""

from __future__ import annotations


import pytest

from zymase.analysis import memory
from zymase.autodiff import common
from zymase.autodiff.flavor import LLVMFlavor
from zymase.ir import ArrayAttr, Block, IntegerAttr, Region, StringAttr, f64, fast_ops, i64, llvm
from zymase.llvm import toolchain

PTR = llvm.LLVMPointerType()


@pytest.fixture
def pointer():
    return llvm.ZeroOp.build(result_types=[PTR]).results[0]


def _counting_call_rules(monkeypatch) -> list[str | None]:
    asked: list[str | None] = []
    lookup = memory.call_memory_rule

    def counted(name):
        asked.append(name)
        return lookup(name)

    monkeypatch.setattr(memory, "call_memory_rule", counted)
    return asked


def test_memory_kind_of_a_call_is_decided_once_per_callee(monkeypatch, pointer) -> None:
    asked = _counting_call_rules(monkeypatch)
    n = llvm.ConstantOp(IntegerAttr(8, i64), i64).result
    calls = [fast_ops.call("zymase_test_opaque", [pointer, n]) for _ in range(50)]
    assert {memory.memory_kind(c) for c in calls for _ in range(3)} == {None}
    assert asked == ["zymase_test_opaque"]
    # the answers are the tables' own
    assert memory.memory_kind(fast_ops.call("free", [pointer])) == "free"
    assert memory.memory_kind(fast_ops.call("malloc", [n], PTR)) == "malloc"
    copy = fast_ops.call_intrinsic("llvm.memcpy.p0.p0.i64", [pointer, pointer, n], [])
    assert memory.memory_kind(copy) == "memcpy"
    assert memory.memory_kind(fast_ops.call_intrinsic("llvm.memset.p0.i64", [pointer, n], [])) == "memset"


def test_a_call_whose_kind_needs_its_operands_is_not_kept(monkeypatch) -> None:
    """``NRT_MemInfo_alloc_dtor`` allocates an array-like MemInfo only for a jitclass of
    numbers (its destructor's name says): two calls, two answers."""
    size = llvm.ConstantOp(IntegerAttr(16, i64), i64).result
    scalar = llvm.AddressOfOp("_Dtor.instance.jitclass.Box#7f<s:float64,n:int64>", PTR).results[0]
    holding = llvm.AddressOfOp("_Dtor.instance.jitclass.Box#7f<a:array(float64, 1d, C)>", PTR).results[0]
    first = fast_ops.call("NRT_MemInfo_alloc_dtor", [size, scalar], PTR)
    second = fast_ops.call("NRT_MemInfo_alloc_dtor", [size, holding], PTR)
    assert memory.memory_kind(first) == "nrt_alloc"
    assert memory.memory_kind(second) is None
    assert memory.memory_kind(first) == "nrt_alloc"


class _Symbols:
    """What Context asks of the driver here: the module's functions by name."""

    def __init__(self, *functions):
        self.functions = {f.sym_name.data: f for f in functions}

    def lookup_function(self, name):
        return self.functions.get(name)


def _function(name: str) -> llvm.FuncOp:
    body = Block(arg_types=[f64])
    body.add_op(llvm.ReturnOp(body.args[0]))
    return llvm.FuncOp(name, llvm.LLVMFunctionType([f64], f64), body=Region(body))


def test_a_callees_mark_is_read_once_per_function(monkeypatch) -> None:
    read: list[str] = []
    mark_of = common.mark_of

    def counted(fop):
        read.append(fop.sym_name.data)
        return mark_of(fop)

    monkeypatch.setattr(common, "mark_of", counted)
    square, other = _function("square"), _function("other")
    ctx = common.Context(None, LLVMFlavor(), _Symbols(square, other))
    x = llvm.ConstantOp.create(result_types=[f64], properties={"value": llvm.FloatAttr(2.0, f64)}).results[0]
    calls = [fast_ops.call(name, [x], f64) for name in ("square", "other") * 40]
    assert all(ctx.defined_function(c) is not None for c in calls)
    assert sorted(read) == ["other", "square"]
    # marked inactive afterwards (a new passthrough attribute): read again, and obeyed
    square.properties["passthrough"] = ArrayAttr([StringAttr("enzyme_inactive")])
    assert ctx.defined_function(calls[0]) is None
    assert ctx.defined_function(calls[2]) is None
    assert sorted(read) == ["other", "square", "square"]



#: a loop nest whose reverse recomputes and hoists: x[i] outside the inner loop, loads and
#: products rebuilt from them in every inner reverse iteration
_NEST = """
#include <math.h>
extern void __enzyme_autodiff(void *, ...);
double f(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) {
        double a = x[i] * x[i];
        for (int j = 0; j < n; j++)
            s += sin(a * x[j]) * x[i] / (1.0 + x[j] * x[j]) + cos(x[j] - a) * x[(i + j) % n];
    }
    return s;
}
void g(const double *x, double *dx, int n) { __enzyme_autodiff((void *)f, x, dx, n); }
"""


@pytest.mark.parametrize("level", [0, 2])
def test_recompute_and_hoist_queries_are_answered_once(level, tmp_path, monkeypatch) -> None:
    from zymase.analysis.cfg import CFG
    from zymase.autodiff import reverse, tape
    from zymase.frontends import c as c_frontend

    source = tmp_path / "nest.c"
    source.write_text(_NEST)
    ll = toolchain.c_to_llvm_ir(source, [], level)  # (clang -O<level>, no LLVM pass)

    decided: list[tuple] = []
    may_recompute = getattr(tape.MinCutRecompute, "_may_recompute", None)

    def counted_decision(self, v, w):
        decided.append((v, w))
        return may_recompute(self, v, w)

    monkeypatch.setattr(tape.MinCutRecompute, "_may_recompute", counted_decision, raising=False)
    hoisting = {"depth": 0, "scans": 0, "keys": set()}
    hoist_loop, natural_loops = reverse.ReverseGenerator._hoist_loop, CFG.natural_loops

    def counted_hoist(self, v):
        home = v.block if isinstance(v, reverse.BlockArgument) else v.owner.parent_block()
        if not self.split:
            hoisting["keys"].add((home, self.cur))
        hoisting["depth"] += 1
        try:
            return hoist_loop(self, v)
        finally:
            hoisting["depth"] -= 1

    def counted_loops(cfg):
        hoisting["scans"] += hoisting["depth"] > 0
        return natural_loops(cfg)

    monkeypatch.setattr(reverse.ReverseGenerator, "_hoist_loop", counted_hoist)
    monkeypatch.setattr(CFG, "natural_loops", counted_loops)
    out = c_frontend.differentiate_llvm_ir(ll, source.name, level, c_frontend.Timings())
    assert "define" in out
    assert hoisting["keys"] and hoisting["scans"] == len(hoisting["keys"]), (
        f"{hoisting['scans']} scans of the loops for {len(hoisting['keys'])} (value block, reverse block) pairs")
    assert decided and len(decided) == len(set(decided)), "a value's recomputation was decided again"


def test_float_constants_are_built_once_per_value_and_type() -> None:
    from zymase.autodiff.flavor import _float_attr
    from zymase.ir import FloatAttr, VectorType, f32

    ones = [_float_attr(1.0, f64) for _ in range(20)] + [_float_attr(1, f64)]
    assert all(a is ones[0] for a in ones) and ones[0] == FloatAttr(1.0, f64)
    # 0.0 and -0.0 compare equal but are different constants; types apart; splats
    zero, negative_zero = _float_attr(0.0, f64), _float_attr(-0.0, f64)
    assert zero is not negative_zero and str(negative_zero).startswith("-0.")
    assert _float_attr(0.5, f32) is not _float_attr(0.5, f64) and _float_attr(0.5, f32).type == f32
    splat = _float_attr(2.0, VectorType(f64, [4]))
    assert splat is _float_attr(2.0, VectorType(f64, [4])) and "dense<2.0" in str(splat)


def test_the_writer_spells_each_type_object_once(monkeypatch) -> None:
    from zymase.ir import IntegerType, ModuleOp
    from zymase.llvm.writer import write_llvm_ir

    body = Block(arg_types=[i64])
    total = body.args[0]
    for k in range(200):
        c = fast_ops.constant(fast_ops.int_attr(k, i64), i64)
        add = fast_ops.int_arith(llvm.AddOp, total, c.result)
        body.add_ops([c, add])
        total = add.results[0]
    body.add_op(llvm.ReturnOp(total))
    fn = llvm.FuncOp("sum", llvm.LLVMFunctionType([i64], i64), body=Region(body))
    hashed = []
    hash_type = IntegerType.__hash__

    def counted(self):
        hashed.append(self)
        return hash_type(self)

    monkeypatch.setattr(IntegerType, "__hash__", counted)
    text = write_llvm_ir(ModuleOp([fn]))
    assert text.count(" add i64 ") == 200
    assert len(hashed) < 20, f"{len(hashed)} hashes of integer types for 401 i64 values"


def test_type_rules_are_resolved_once_per_class() -> None:
    from zymase.autodiff import type_rules
    from zymase.ir import IntegerType

    registry = type_rules.TypeRegistry()
    for cls, rule in type_rules.TYPES.by_type.items():
        registry.register(cls, rule)
    scans: list[int] = []

    class CountingScans(dict):
        def items(self):
            scans.append(1)
            return super().items()

    registry.by_type = CountingScans(registry.by_type)
    for _ in range(100):
        assert registry.lookup(i64) is None and registry.lookup(PTR) is None
    assert registry.lookup(f64) is type_rules.TYPES.lookup(f64) is not None
    assert len(scans) <= 2, f"{len(scans)} scans of the registry for two classes"
    # a rule registered later is found
    rule = type_rules.TYPES.lookup(f64)
    registry.register(IntegerType, rule)
    assert registry.lookup(i64) is rule
