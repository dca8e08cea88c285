"""Fields extracted from a phi of structs holding pointers become phis of the fields
before AD (zymase.transforms.aggregate_phis; issue 26, the remaining item 2): the shape
of Numba's copy of an array whose layout it knows only at run time (a slice passed to
np.linalg.svd, qr, inv, det, ...). The derivatives through such copies are checked against
finite differences by tests/numba/linalg_campaign.py (svd and qr of slices)."""

from __future__ import annotations

from zymase.autodiff.flavor import LLVMFlavor
from zymase.ir import BlockArgument
from zymase.ir import llvm as L
from zymase.llvm.reader import read_llvm_ir
from zymase.transforms.aggregate_phis import scatter_pointer_extracts

# an array struct {meminfo, data, [2 x i64] shape} chosen at run time between two built by
# insertvalue chains (the second shape inserted element by element, as SROA leaves it)
CHOICE = """
define double @f(ptr %m, ptr %a, ptr %b, i64 %n, i1 %c) {
entry:
  br i1 %c, label %one, label %two
one:
  %s1 = insertvalue { ptr, ptr, [2 x i64] } undef, ptr %m, 0
  %s2 = insertvalue { ptr, ptr, [2 x i64] } %s1, ptr %a, 1
  %sh = insertvalue [2 x i64] undef, i64 %n, 0
  %sh2 = insertvalue [2 x i64] %sh, i64 3, 1
  %s3 = insertvalue { ptr, ptr, [2 x i64] } %s2, [2 x i64] %sh2, 2
  br label %join
two:
  %t1 = insertvalue { ptr, ptr, [2 x i64] } poison, ptr %m, 0
  %t2 = insertvalue { ptr, ptr, [2 x i64] } %t1, ptr %b, 1
  %t3 = insertvalue { ptr, ptr, [2 x i64] } %t2, i64 %n, 2, 0
  %t4 = insertvalue { ptr, ptr, [2 x i64] } %t3, i64 4, 2, 1
  br label %join
join:
  %arr = phi { ptr, ptr, [2 x i64] } [ %s3, %one ], [ %t4, %two ]
  %data = extractvalue { ptr, ptr, [2 x i64] } %arr, 1
  %shape = extractvalue { ptr, ptr, [2 x i64] } %arr, 2
  %cols = extractvalue [2 x i64] %shape, 1
  %p = getelementptr double, ptr %data, i64 %cols
  %x = load double, ptr %p
  ret double %x
}
"""


def test_pointer_field_of_a_struct_phi_becomes_a_phi_of_pointers():
    module = read_llvm_ir(CHOICE)
    fop = next(op for op in module.body.block.ops if isinstance(op, L.FuncOp) and op.body.blocks)
    scatter_pointer_extracts(fop.body, LLVMFlavor())
    fop.verify()
    join = fop.body.blocks[3]
    # no struct phi and no insertvalue carrying a pointer is left; the data pointer is a
    # phi of a and b, the shape a phi of the two [2 x i64] values
    assert not any(isinstance(a.type, L.LLVMStructType) for a in join.args)
    assert not any(isinstance(op, L.InsertValueOp) and isinstance(op.value.type, L.LLVMPointerType)
                   for op in fop.walk())
    gep = next(op for op in join.ops if isinstance(op, L.GEPOp))
    data = gep.operands[0]
    assert isinstance(data, BlockArgument) and data.block is join
    entry_args = list(fop.body.blocks[0].args)
    incoming = [term.operands[data.index] for term in (fop.body.blocks[1].last_op, fop.body.blocks[2].last_op)]
    assert incoming == [entry_args[1], entry_args[2]]
