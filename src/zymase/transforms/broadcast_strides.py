"""Numba's broadcast indices as strided inductions, so that LLVM vectorizes the loops
that carry them (llvm dialect, after AD; Laplacian-mode derivatives).

Numba's element-wise loops (array expressions, ufuncs) index each operand of length
``dim`` with ``s = select(dim > 1, i, p)``, ``p`` a phi of ``[0, preheader], [s, latch]``:
element ``i``, or element 0 of a size-1 operand broadcast along the loop. The phi hides
that ``s`` is an induction: LLVM's loop vectorizer does not see the loads through ``s``
as consecutive, and a Laplacian-mode derivative's element loop (64 gradient lanes of
scalar code per element, a ``tanh`` call among them) stays scalar; unswitching on the
condition would copy the whole loop and is past LLVM's size limit.

Here ``s`` becomes ``i * stride``, ``stride = zext(c)`` with ``c`` the condition:

* it is ``select(c, i, 0)`` when ``c`` is defined in a block that strictly dominates the
  phi's block ``B`` and every value ``p`` receives is 0 or ``s``: ``c`` cannot change
  between an entry into ``B`` and the next ``s`` (its block is not dominated by ``B``),
  a back edge passes the ``s`` of the same run of iterations, and an entry from
  outside passes 0, so while ``c`` is false ``s`` stays 0;
* ``stride`` is stored to a stack slot and read back by a volatile load, right after
  ``c`` is defined: an identity LLVM does not see through, so instcombine does not fold
  the product back into the select, and the loop vectorizer treats ``stride`` as a
  symbolic stride, which it speculates to be 1 (a run-time check, the scalar loop
  for ``dim == 1``). The load runs once per loop entry, not per element.

Every value is the same (``i * 1``, ``i * 0``); where the loop vectorizer does not
vectorize, a multiply replaced a select. Libm calls in such a loop (``tanh``) become
LLVM's vector intrinsics, expanded to the same scalar calls.
"""

from __future__ import annotations

from zymase.analysis.cfg import CFG
from zymase.analysis.trip_count import constant_int
from zymase.autodiff.flavor import LLVM
from zymase.ir import Block, BlockArgument, IntegerType, ModuleOp, Operation, SSAValue, fast_ops, i1, i64, llvm, llvm_ext


def stride_broadcast_indices(module: ModuleOp, prefix: str) -> int:
    """Rewrite the broadcast indices of the functions whose names start with ``prefix``;
    returns how many."""
    count = 0
    for fop in module.body.block.ops:
        if isinstance(fop, llvm.FuncOp) and fop.body.blocks and fop.sym_name.data.startswith(prefix):
            count += _rewrite_function(fop)
    return count


def _rewrite_function(fop: llvm.FuncOp) -> int:
    region = fop.body
    cfg = CFG.build(region)
    strides: dict[SSAValue, SSAValue] = {}
    count = 0
    for block in cfg.blocks[1:]:
        if block not in cfg.reachable:
            continue
        for p in block.args:
            s = _broadcast_index(cfg, block, p)
            if s is None:
                continue
            select = s.owner
            cond, index = select.operands[0], select.operands[1]
            stride = _stride(region.blocks[0], cond, index.type, strides)
            mul = fast_ops.int_arith(llvm.MulOp, index, stride)
            select.parent_block().insert_op_before(mul, select)
            s.replace_all_uses_with(mul.results[0])
            select.parent_block().erase_op(select)
            count += 1
    return count


def _broadcast_index(cfg: CFG, block: Block, p: BlockArgument) -> SSAValue | None:
    """``s`` when ``p`` is the phi of a broadcast index ``s = select(c, i, p)`` whose
    values are 0 or ``s`` and whose ``c`` is fixed before ``block`` is entered."""
    selects = [u.operation for u in p.uses if u.operation.name == "llvm.select" and u.index == 2]
    if len(selects) != 1:
        return None
    s = selects[0].results[0]
    cond = selects[0].operands[0]
    if cond.type != i1 or not isinstance(s.type, IntegerType) or not _defined_before(cfg, cond, block):
        return None
    edges = cfg.preds[block]
    if not edges:
        return None
    for e in edges:
        operands = LLVM.successor_operands(e.src.last_op)
        if e.slot >= len(operands) or len(operands[e.slot]) != len(block.args):
            return None
        v = operands[e.slot][p.index]
        if v is not s and constant_int(v) != 0:
            return None
    return s


def _defined_before(cfg: CFG, v: SSAValue, block: Block) -> bool:
    """Whether ``v``'s block strictly dominates ``block`` (and ``v`` is no terminator's
    result, after which nothing can be inserted)."""
    if isinstance(v, BlockArgument):
        where = v.block
    elif v.owner.parent_block() is not None and v.owner is v.owner.parent_block().last_op:
        return False
    else:
        where = v.owner.parent_block()
    return where is not None and where is not block and where in cfg.reachable and cfg.dominates(where, block)


def _stride(entry: Block, cond: SSAValue, typ, strides: dict[SSAValue, SSAValue]) -> SSAValue:
    """``zext(cond)`` read back through a volatile load of a stack slot, right after
    ``cond`` is defined (one per condition and type)."""
    key = (cond, typ)
    if key in strides:
        return strides[key]
    one = fast_ops.constant(fast_ops.int_attr(1), i64)
    slot = fast_ops.alloca(one, typ, alignment=8)
    first = entry.first_op
    for op in (one, slot):  # a static slot: in the entry block
        entry.insert_op_before(op, first)
    ext = llvm.ZExtOp(cond, typ)
    store = fast_ops.store(ext, slot)
    load = llvm_ext.LoadOp(slot, typ, alignment=8, volatile=True)
    ops: list[Operation] = [ext, store, load]
    at = slot if isinstance(cond, BlockArgument) and cond.block is entry else None
    if isinstance(cond, BlockArgument) and at is None:
        anchor = cond.block.first_op
        for op in ops:
            cond.block.insert_op_before(op, anchor)
    else:
        at = at or cond.owner
        for op in ops:
            at.parent_block().insert_op_after(op, at)
            at = op
    strides[key] = load.results[0]
    return load.results[0]
