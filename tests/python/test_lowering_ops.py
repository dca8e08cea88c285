"""The tape lowering's and the trip counts' op builders (transforms/lower_tape.py,
transforms/lower_to_llvm.py, analysis/trip_count.py, the LLVM flavor's negation) build the
very ops xDSL's IRDL constructors build, without their generic argument matching (issue 29):
the same class, operands, result types, properties (in the same order) and attributes, and
the same printed form."""

from __future__ import annotations

from zymase.analysis.trip_count import _sdiv
from zymase.autodiff.flavor import LLVMFlavor
from zymase.ir import FloatAttr, IntegerAttr, f64, i32, i64, llvm
from zymase.transforms.lower_tape import SITE_STRUCT, _extract_field, _inbounds_gep, address_of
from zymase.transforms.lower_to_llvm import _site_global

PTR = llvm.LLVMPointerType()


def _same(fast, slow) -> None:
    assert type(fast) is type(slow)
    assert list(fast.operands) == list(slow.operands)
    assert [r.type for r in fast.results] == [r.type for r in slow.results]
    assert list(fast.properties.items()) == list(slow.properties.items())
    assert fast.attributes == slow.attributes
    assert len(fast.regions) == len(slow.regions)
    assert str(fast) == str(slow)


def test_builders_match_the_constructors() -> None:
    x = llvm.ConstantOp(FloatAttr(2.0, f64), f64).result
    n = llvm.ConstantOp(IntegerAttr(3, i64), i64).result
    m = llvm.ConstantOp(IntegerAttr(3, i32), i32).result
    p = llvm.ZeroOp.build(result_types=[PTR]).results[0]
    pair = llvm.LLVMStructType.from_type_list([PTR, i64])
    grown = llvm.UndefOp(pair).res

    _same(address_of("__zymase_tape_site.0"), llvm.AddressOfOp("__zymase_tape_site.0", PTR))
    _same(_extract_field(grown, 0, PTR), llvm.ExtractValueOp(llvm.DenseArrayBase.from_list(i64, [0]), grown, PTR))
    _same(_extract_field(grown, 1, i64), llvm.ExtractValueOp(llvm.DenseArrayBase.from_list(i64, [1]), grown, i64))
    _same(_inbounds_gep(p, n, f64), llvm.GEPOp(p, [llvm.GEP_USE_SSA_VAL], f64, ssa_indices=[n], inbounds=True))
    _same(_site_global("__zymase_tape_site.3"),
          llvm.GlobalOp(SITE_STRUCT, "__zymase_tape_site.3", "internal", alignment=16, value=None))
    _same(_sdiv(n, n), llvm.SDivOp(n, n))
    _same(llvm.UDivOp.create(operands=[n, n], result_types=[i64]), llvm.UDivOp(n, n))
    for cls in (llvm.ZExtOp, llvm.SExtOp):
        _same(cls.create(operands=[m], result_types=[i64]), cls(m, i64))
    _same(LLVMFlavor().neg(x), llvm.FNegOp(x))


def test_names_inside_are_the_walks_names() -> None:
    """lower_to_llvm's one pass over the module finds the names ``walk`` finds, nested
    regions included."""
    from zymase.ir import parse_mlir
    from zymase.transforms.lower_to_llvm import _names_inside

    module = parse_mlir("""
    func.func @f(%n: index, %x: f64) -> f64 {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (f64) {
        %b = scf.if %true -> (f64) {
          %m = arith.mulf %a, %a : f64
          scf.yield %m : f64
        } else {
          scf.yield %a : f64
        }
        scf.yield %b : f64
      }
      func.return %r : f64
    }
    """.replace("%true", "%t").replace("%c1 = arith.constant 1 : index",
                                       "%c1 = arith.constant 1 : index\n      %t = arith.constant true"), "<test>")
    for top in module.body.block.ops:
        assert _names_inside(top) == {op.name for op in top.walk()}
        assert {"scf.if", "arith.mulf", "scf.yield", "func.return"} <= _names_inside(top)
