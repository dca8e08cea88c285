"""Drop the stores of a derivative into primal memory the caller does not want back.

An ``enzyme_dupnoneed`` pointer argument says the caller will not read the primal
memory after the call: only the derivative of what is computed into it matters (the
normalized vector of a normalization, a scratch buffer). The driver marks such a
parameter ``dead_on_return``. LLVM's dead-store elimination then removes stores into it
that nothing reads again, but only straight-line ones: a store in a loop reaches the
loop's next iteration in LLVM's memory SSA, and DSE gives up on it. The derivative's
forward sweep is mostly loops (the division loop of the normalization is one), so this
pass does it itself, for the whole parameter at once:

* the parameter is ``noalias`` (``restrict``), so no pointer not derived from it
  reaches its memory, and its address does not escape (it is only loaded from, stored
  to, offset, compared, or passed between blocks);
* no load from it is live: liveness starts at everything with an effect other than the
  candidate stores (other stores, calls, returns, branch conditions) and follows
  operands, and block arguments through the edges that pass them.

Then every store whose address has that parameter as its only root is removed; what
only fed those stores (the divisions) becomes dead, and LLVM deletes it after AD.
Runs on llvm-dialect functions after AD and tape lowering.
"""

from __future__ import annotations

from zymase.analysis.cfg import CFG
from zymase.analysis.memory import args_marked, derived_uses, is_marker, memory_kind, pointer_roots
from zymase.autodiff.tape import is_pure
from zymase.ir import BlockArgument, ModuleOp, Operation, SSAValue, is_side_effect_free, llvm


def remove_dead_primal_stores(module: ModuleOp) -> int:
    """Remove dead stores into ``dead_on_return`` parameters; returns how many."""
    removed = 0
    for op in module.body.block.ops:
        if isinstance(op, llvm.FuncOp) and op.body.blocks:
            dead = args_marked(op, "llvm.dead_on_return") & args_marked(op, "llvm.noalias")
            for index in sorted(dead):
                removed += _remove_stores_into(op, op.body.blocks[0].args[index])
    return removed


def _remove_stores_into(fn: llvm.FuncOp, param: BlockArgument) -> int:
    from zymase.autodiff.flavor import LLVMFlavor

    flavor = LLVMFlavor()
    cfg = CFG.build(fn.body)
    entry = fn.body.blocks[0]

    def incoming(arg: BlockArgument) -> list[SSAValue]:
        return [flavor.successor_operands(e.src.last_op)[e.slot][arg.index] for e in cfg.preds[arg.block]]

    accesses = _accesses(param, flavor)
    if accesses is None:
        return 0
    loads, stores = accesses
    candidates = [s for s in stores if pointer_roots(s.ptr, entry, incoming) == {param}
                  and not s.properties.get("volatile_")]
    if not candidates:
        return 0
    live = _live_values(fn, cfg, flavor, set(candidates))
    if any(load.results[0] in live for load in loads):
        return 0
    for store in candidates:
        store.detach()
        store.erase()
    return len(candidates)


def _accesses(param: BlockArgument, flavor) -> tuple[list[Operation], list[Operation]] | None:
    """The loads and stores whose address derives from ``param``; None when its address
    may reach anything else (stored as a value, passed to a call, turned into an integer,
    returned)."""
    loads, stores = [], []
    for v, op in derived_uses(param, flavor.successor_operands):
        kind = memory_kind(op)
        if kind == "load":
            loads.append(op)
        elif kind == "store" and op.ptr is v and op.value is not v:
            stores.append(op)
        elif not (isinstance(op, llvm.ICmpOp) or is_marker(op)):
            return None
    return loads, stores


def _live_values(fn: llvm.FuncOp, cfg: CFG, flavor, removable: set[Operation]) -> set[SSAValue]:
    """Values some effect other than the ``removable`` stores depends on."""
    live: set[SSAValue] = set()
    work: list[SSAValue] = []

    def need(v: SSAValue) -> None:
        if v not in live:
            live.add(v)
            work.append(v)

    for block in fn.body.blocks:
        for op in block.ops:
            if op in removable or _removable_when_unused(op):
                continue
            # a branch's own operands (its condition) come first; what it passes to
            # its successors is live only where the receiving block argument is
            passed = sum(len(values) for values in flavor.successor_operands(op)) if op.successors else 0
            for operand in op.operands[:len(op.operands) - passed]:
                need(operand)
    while work:
        v = work.pop()
        if isinstance(v, BlockArgument):
            if v.block is fn.body.blocks[0]:
                continue
            for e in cfg.preds[v.block]:
                need(flavor.successor_operands(e.src.last_op)[e.slot][v.index])
            continue
        for operand in v.owner.operands:
            need(operand)
    return live


def _removable_when_unused(op: Operation) -> bool:
    """Ops without effects beyond their results: dead when nothing uses them."""
    return isinstance(op, llvm.LoadOp) or is_side_effect_free(op) or is_pure(op)
