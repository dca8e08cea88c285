"""``remove-unnecessary-enzyme-ops`` (first part): simplify adjoint accumulators.

Reverse mode is generated with ``enzyme.init/get/set`` accumulators; this pass turns
the easy ones back into SSA values:

* within a block, an ``enzyme.get`` after an ``enzyme.set`` of the same accumulator
  reads the value just set, and one right after its ``enzyme.init`` reads zero
  (accumulators are private to their function, so nothing else can write them in
  between);
* an accumulator that is never read loses its sets and its init.

Caches (push/pop) of structured reverse mode (scf regions) become SSA values,
``scf.if`` results or buffers indexed by the iteration
(:mod:`zymase.transforms.structured_caches`), and its accumulators SSA values,
``scf.for``/``scf.while`` iter_args and ``scf.if`` results
(:mod:`zymase.transforms.promote_gradients`); the CFG path's caches are left
alone, and the LLVM path gets the rest from mem2reg.
"""

from __future__ import annotations

from zymase.ir import ModuleOp
from zymase.ir import enzyme as ez


def remove_unnecessary_enzyme_ops(module: ModuleOp) -> ModuleOp:
    from zymase.transforms.promote_gradients import promote_gradients
    from zymase.transforms.structured_caches import structured_caches

    for fop in list(module.body.block.ops):
        if any(op.regions and op.dialect_name() == "scf" for op in fop.walk()):
            structured_caches(fop)  # push/pop of scf regions -> SSA values, buffers
        promote_gradients(fop, module)  # get/set -> SSA values, iter_args, if results
    for op in list(module.walk()):
        if op.regions:
            for region in op.regions:
                for block in region.blocks:
                    _forward_sets(block)
    for op in list(module.walk()):
        if isinstance(op, ez.InitOp) and isinstance(op.result.type, ez.GradientType):
            users = [u.operation for u in op.result.uses]
            if all(isinstance(u, ez.SetOp) for u in users):
                for u in users:
                    u.parent_block().erase_op(u)
                op.parent_block().erase_op(op)
    return module


def _forward_sets(block) -> None:
    from zymase.transforms.promote_gradients import fold_zero_adds

    last: dict = {}
    for op in list(block.ops):
        if op.regions:
            # a structured op may write any accumulator it touches inside
            for inner in op.walk():
                if isinstance(inner, ez.SetOp):
                    last.pop(inner.gradient, None)
            continue
        if isinstance(op, ez.InitOp) and isinstance(op.result.type, ez.GradientType):
            last[op.result] = None  # zero, materialized on first read
        elif isinstance(op, ez.SetOp):
            last[op.gradient] = op.value
        elif isinstance(op, ez.GetOp) and op.gradient in last:
            value = last[op.gradient]
            if value is None and fold_zero_adds(op):
                block.erase_op(op)
                continue
            if value is None:
                zero = _flavor(op).const(0.0, op.result.type)
                block.insert_op_before(zero, op)
                value = last[op.gradient] = zero.results[0]
            op.result.replace_all_uses_with(value)
            block.erase_op(op)


def _flavor(op):
    from zymase.autodiff.flavor import flavor_of

    parent = op.parent_op()
    while parent is not None and not hasattr(parent, "sym_name"):
        parent = parent.parent_op()
    return flavor_of(parent)
