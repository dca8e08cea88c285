"""Loop versioning for strong-zero guards whose singularity is loop-invariant (LLVM dialect).

Under strong zeros a term ``d * p`` whose partial ``p`` may be infinite is guarded,
``d == 0 ? 0 : d * p``, element by element (autodiff/semantics.py). When every factor of
``p`` that may be non-finite is the same in each iteration of the loop around it (the
normalization's ``1/m``), whether the guard can ever matter is known before the loop
runs: ``registry.zero_probe`` computes, from loop-invariant values, whether the term at a
zero ``d`` is NaN, and the rule emits the guard as
``select((d == 0) & probe, 0, d * p)`` marked with :data:`MARK` (:func:`invariant_guard`).

:func:`version_invariant_guards` then versions each loop holding such guards: a new
preheader computes the probes (their slices cloned out of the loop) and branches to the
original loop when one is true, to a copy without those guards otherwise. The copy's terms
are the unguarded products; at a zero ``d`` they are zeros of some sign, which adjoint
accumulations do not distinguish (``Emitter.accumulate`` gives them ``nsz``), and every
other value is the same as the guarded loop's. A loop is left alone (the guards stay, and
stay correct: the probe only narrows them) when a probe's slice is not pure arithmetic on
values from outside the loop, or a value the loop defines is used after it other than
through the block arguments its exits pass (the copy would need SSA repair).
"""

from __future__ import annotations

from zymase.analysis.cfg import CFG
from zymase.ir import Block, BlockArgument, ModuleOp, Operation, Region, SSAValue, UnitAttr, llvm

#: the attribute marking a select built by :func:`invariant_guard`
MARK = "zymase.invariant_guard"

# ops a probe's slice may hold: arithmetic without side effects or traps
_PURE = (llvm.FAddOp, llvm.FSubOp, llvm.FMulOp, llvm.FDivOp, llvm.FNegOp, llvm.FCmpOp, llvm.ConstantOp, llvm.AndOp,
         llvm.OrOp, llvm.XOrOp, llvm.SelectOp)


#: id of a module -> names of its functions holding marked guards (recorded as they are
#: built, so that a module without any is not walked)
_PENDING: dict[int, set[str]] = {}


def invariant_guard(E, dead: SSAValue, singular: SSAValue, term: SSAValue) -> SSAValue:
    """``term``, zero where ``dead`` (a zero adjoint) and ``singular`` (the loop-invariant
    probe: the term may be NaN at a zero adjoint) both hold; marked for versioning."""
    both = E.v(llvm.AndOp(dead, singular))
    out = E.select(both, E.zero(term.type), term)
    out.owner.attributes[MARK] = UnitAttr()
    fn = E.block.parent_op()  # the derivative being built
    if fn is not None and getattr(fn, "sym_name", None) is not None:
        _PENDING.setdefault(id(E.module), set()).add(fn.sym_name.data)
    return out


def version_invariant_guards(module: ModuleOp) -> int:
    """Version the loops of ``module``'s functions that hold marked guards; returns how
    many guards the loops' unguarded copies dropped. Every mark is gone afterwards (a
    mark left on a select, in code this misses, would only be ignored by the writer)."""
    names = _PENDING.pop(id(module), None)
    if not names:
        return 0
    count = 0
    for fop in list(module.body.block.ops):
        if isinstance(fop, llvm.FuncOp) and fop.sym_name.data in names and fop.body.blocks:
            count += _version_function(fop.body)
    return count


def _marked(region: Region) -> list[Operation]:
    return [op for b in region.blocks for op in b.ops if MARK in op.attributes]


def _version_function(region: Region) -> int:
    count = 0
    while guards := _marked(region):
        cfg = CFG.build(region)
        loops = cfg.natural_loops()
        by_loop: dict[Block, list[Operation]] = {}
        bodies: dict[Block, set[Block]] = {}
        for g in guards:
            b = g.parent_block()
            around = [(h, body) for h, body in loops if b in body]
            if not around:
                del g.attributes[MARK]
                continue
            header, body = min(around, key=lambda hb: len(hb[1]))  # the innermost loop
            by_loop.setdefault(header, []).append(g)
            bodies[header] = body
        if not by_loop:
            break
        # one loop per round: versioning changes the CFG the next one is found in
        header = next(b for b in cfg.blocks if b in by_loop)
        gs = by_loop[header]
        for g in gs:
            del g.attributes[MARK]
        count += _version_loop(region, cfg, header, bodies[header], gs)
    return count


def _slice(v: SSAValue, body: set[Block], out: list[Operation], seen: set[Operation]) -> bool:
    """Append to ``out`` (operands first) the ops inside ``body`` that compute ``v``;
    False when one is not pure arithmetic or reads a value that varies in the loop."""
    if isinstance(v, BlockArgument):
        return v.block not in body
    op = v.owner
    if op.parent_block() not in body or op in seen:
        return True
    if not isinstance(op, _PURE) and not _invariant_slot_load(op, body):
        return False
    seen.add(op)
    if not all(_slice(o, body, out, seen) for o in op.operands):
        return False
    out.append(op)
    return True


def _invariant_slot_load(op: Operation, body: set[Block]) -> bool:
    """A load of a stack slot that the loop does not store to and nothing else can reach:
    an alloca made outside the loop whose every use is a load from it or a store of a
    value into it, none of the stores inside the loop (the reverse sweep keeps a value
    defined before a loop in such a slot while the loop runs; autodiff/reverse._hoist)."""
    if not isinstance(op, llvm.LoadOp) or "volatile_" in op.properties:
        return False
    slot = op.operands[0]
    if isinstance(slot, BlockArgument) or not isinstance(slot.owner, llvm.AllocaOp):
        return False
    if slot.owner.parent_block() in body:
        return False
    for use in slot.uses:
        user = use.operation
        if isinstance(user, llvm.LoadOp) and use.index == 0:
            continue
        if isinstance(user, llvm.StoreOp) and use.index == 1 and user.parent_block() not in body:
            continue
        return False
    return True


def _used_after(body: set[Block]) -> bool:
    """Whether a value defined in the loop is used outside it (not through the block
    arguments of an exit edge, which the copy passes its own values to)."""
    for b in body:
        values = list(b.args) + [r for op in b.ops for r in op.results]
        if any(use.operation.parent_block() not in body for v in values for use in v.uses):
            return True
    return False


def _version_loop(region: Region, cfg: CFG, header: Block, body: set[Block], guards: list[Operation]) -> int:
    """Version the loop on the ``guards``' probes; returns how many guards its copy dropped."""
    probes, ops, seen = [], [], set()
    for g in guards:
        probe = g.operands[0].owner.operands[1]
        mine, marked = [], set(seen)  # a slice that fails leaves nothing half-taken
        if _slice(probe, body, mine, marked):
            probes.append(probe)
            ops += mine
            seen = marked
    if not probes or _used_after(body) or header is cfg.blocks[0]:
        return 0
    kept = {p.owner for p in probes}
    guards = [g for g in guards if g.operands[0].owner.operands[1].owner in kept]
    # the preheader: every edge entering the loop from outside now enters it
    pre = Block(arg_types=[a.type for a in header.args])
    region.insert_block_before(pre, header)
    for e in cfg.preds[header]:
        if e.src not in body:
            term = e.src.last_op
            succs = list(term.successors)
            succs[e.slot] = pre
            term.successors = succs
    vmap: dict[SSAValue, SSAValue] = {}
    for op in ops:
        pre.add_op(op.clone(vmap))
    any_singular = vmap.get(probes[0], probes[0])
    for p in probes[1:]:
        or_op = llvm.OrOp(any_singular, vmap.get(p, p))
        pre.add_op(or_op)
        any_singular = or_op.results[0]
    # the copy without the guards
    blocks = cfg.in_order(body)
    bmap = {b: Block(arg_types=[a.type for a in b.args]) for b in blocks}
    cmap: dict[SSAValue, SSAValue] = {}
    for b in blocks:
        cmap.update(zip(b.args, bmap[b].args))
    clones: dict[Operation, Operation] = {}
    for b in blocks:
        for op in b.ops:
            clones[op] = op.clone(cmap, bmap)
            bmap[b].add_op(clones[op])
    for c in clones.values():  # operands defined in a later block
        c.operands = [cmap.get(o, o) for o in c.operands]
    region.insert_block_after([bmap[b] for b in blocks], region.blocks[-1])
    pre.add_op(llvm.CondBrOp(any_singular, header, list(pre.args), bmap[header], list(pre.args)))
    for g in guards:
        fast = clones[g]
        both = fast.operands[0].owner
        fast.results[0].replace_all_uses_with(fast.operands[2])
        fast.parent_block().erase_op(fast)
        if not both.results[0].uses:
            both.parent_block().erase_op(both)
    return len(guards)
