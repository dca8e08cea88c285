"""Derivative rules of structured control flow: ``scf.for``, ``scf.if``, ``scf.while``
and their terminators ``scf.yield`` / ``scf.condition`` (Enzyme-MLIR style: the
derivative of a structured op is again a structured op).

A :class:`RegionRule` answers three questions about one region-carrying op:

* ``forward_region`` (forward mode): the same op carrying tangents next to the
  primal values — extra ``iter_args``, results and block arguments for the active
  positions; the ops inside get their own rules through ``g._op``.
* ``forward_sweep`` (reverse mode, the primal sweep): a copy of the op whose inner
  ops the generator copies one by one (so values the reverse needs can be pushed
  right after their definition); ``scf.while`` also counts its iterations.
* ``reverse_region`` (reverse mode, the adjoint sweep, emitted at the op's mirror
  point): ``scf.for`` becomes an ``scf.for`` over the same number of iterations
  running them backwards (``iv = lb + (n - 1 - k) * step``) with the adjoints of
  the ``iter_args`` as its own ``iter_args``; ``scf.if`` an ``scf.if`` on the same
  condition; ``scf.while`` the reverse of the last ``before`` run followed by an
  ``scf.for`` over the counted iterations (reverse ``after``, then ``before``).

The generators provide: ``g.E`` (emitter), ``g.act`` (activity), ``g.vmap``/
``g.primal`` (primal values), in forward mode ``g.tmap``/``g._tangent_or_zero``/
``g._op``, in reverse mode ``g.forward_op``, ``g.reverse_ops``, ``g.frame``
(a reverse block mirroring a forward block), ``g._take_adjoint``/``g._accumulate``.
"""

from __future__ import annotations

from zymase.autodiff.registry import Rule, register
from zymase.autodiff.type_rules import shadow_type
from zymase.errors import ZymaseError
from zymase.ir import Block, IndexType, IntegerAttr, Operation, Region, SSAValue, arith, location_of, scf


def _index_const(E, value: int, typ) -> SSAValue:
    return E.v(arith.ConstantOp(IntegerAttr(value, typ), typ))


def emit_trip_count(insert, lb: SSAValue, ub: SSAValue, step: SSAValue) -> SSAValue:
    """``max(ceildiv(ub - lb, step), 0)``: the iterations of ``scf.for lb to ub step
    step`` (step > 0, as scf.for requires). ``insert(op)`` places an op and returns
    its result."""
    span = insert(arith.SubiOp(ub, lb))
    n = insert(arith.CeilDivSIOp(span, step))
    zero = insert(arith.ConstantOp(IntegerAttr(0, lb.type), lb.type))
    return insert(arith.MaxSIOp(n, zero))


def _with_block(E, block: Block):
    """Point the emitter at the end of ``block``; returns the previous position."""
    saved = (E.block, E.anchor)
    E.at_end(block)
    return saved


def _restore(E, saved) -> None:
    E.block, E.anchor = saved


def _zero_or(E, d: SSAValue | None, typ) -> SSAValue:
    return d if d is not None else E.zero(typ)


def _check_no_shadowed_carry(g, op: Operation, values) -> None:
    """Memrefs holding active data may not travel through iter_args/results: their
    shadows would have to travel alongside (not supported yet)."""
    for v in values:
        if v in g.act.shadowed:
            raise ZymaseError(
                "a memref holding active data is carried through the region arguments or results "
                f"of '{op.name}'; carrying shadows through structured control flow is not supported yet",
                construct=op.name,
                function=g.fname,
                location=location_of(op),
                hint="pass the memref into the region directly (use it from the enclosing block)",
            )


class RegionRule(Rule):
    """A region-carrying op's derivative (see the module docstring)."""

    def propagates(self, op: Operation, index: int) -> bool:
        return False  # values flow through regions as analysis/scf.py describes

    def forward_region(self, g, op: Operation) -> None:
        raise NotImplementedError

    def forward_sweep(self, g, op: Operation) -> None:
        raise NotImplementedError

    def reverse_region(self, g, op: Operation) -> None:
        raise NotImplementedError


class TerminatorRule(Rule):
    """``scf.yield`` / ``scf.condition``: they pass values to their parent op, whose
    rule routes derivatives through them (``forward``: the terminator with tangents
    appended for ``slots``; ``reverse``: the adjoints of the passed values)."""

    def propagates(self, op: Operation, index: int) -> bool:
        return False

    @staticmethod
    def passed(op: Operation) -> list[SSAValue]:
        return list(op.args) if isinstance(op, scf.ConditionOp) else list(op.operands)

    def forward_terminator(self, g, op: Operation, slots: list[int]) -> Operation:
        vals = self.passed(op)
        extra = [g._tangent_or_zero(vals[i]) for i in slots]
        primal = [g.primal(v) for v in vals]
        if isinstance(op, scf.ConditionOp):
            return g.E.insert(scf.ConditionOp(g.primal(op.condition), *primal, *extra))
        return g.E.insert(scf.YieldOp(*primal, *extra))

    def reverse_terminator(self, g, op: Operation, adjoints: dict[int, SSAValue]) -> None:
        vals = self.passed(op)
        for i, d in adjoints.items():
            g._accumulate(vals[i], d)


def _rule(*op_classes):
    """Register one instance of the decorated rule class for ``op_classes``."""

    def deco(cls):
        register(*op_classes)(cls())
        return cls

    return deco


TERMINATOR = TerminatorRule()
register(scf.YieldOp, scf.ConditionOp)(TERMINATOR)


# ------------------------------------------------------------------------ scf.for


@_rule(scf.ForOp)
class ForRule(RegionRule):
    @staticmethod
    def slots(g, op) -> list[int]:
        """Positions of the iter_args that carry derivatives."""
        body = op.body.block
        return [i for i, (a, r) in enumerate(zip(body.args[1:], op.results)) if g.act.is_active(a) or g.act.is_active(r)]

    def forward_region(self, g, op):
        E, act = g.E, g.act
        body = op.body.block
        _check_no_shadowed_carry(g, op, [*op.results, *body.args])
        slots = self.slots(g, op)
        inits = [g.primal(x) for x in op.iter_args] + [g._tangent_or_zero(op.iter_args[i]) for i in slots]
        arg_types = [a.type for a in body.args] + [shadow_type(body.args[1 + i].type) for i in slots]
        nb = Block(arg_types=arg_types)
        new = E.insert(scf.ForOp(g.primal(op.lb), g.primal(op.ub), g.primal(op.step), inits, Region(nb)))
        for a, na in zip(body.args, nb.args):
            g.vmap[a] = na
        n = len(op.iter_args)
        for j, i in enumerate(slots):
            if act.is_active(body.args[1 + i]):
                g.tmap[body.args[1 + i]] = nb.args[1 + n + j]
        saved = _with_block(E, nb)
        for inner in list(body.ops)[:-1]:
            g._op(inner)
        TERMINATOR.forward_terminator(g, body.last_op, slots)
        _restore(E, saved)
        for i, r in enumerate(op.results):
            g.vmap[r] = new.results[i]
        for j, i in enumerate(slots):
            if act.is_active(op.results[i]):
                g.tmap[op.results[i]] = new.results[n + j]

    def forward_sweep(self, g, op):
        E = g.E
        body = op.body.block
        _check_no_shadowed_carry(g, op, [*op.results, *body.args])
        nb = Block(arg_types=[a.type for a in body.args])
        new = E.insert(scf.ForOp(g.fwd(op.lb), g.fwd(op.ub), g.fwd(op.step),
                                 [g.fwd(x) for x in op.iter_args], Region(nb)))
        for a, na in zip(body.args, nb.args):
            g.vmap[a] = na
        saved = _with_block(E, nb)
        for inner in body.ops:
            g.forward_op(inner)
        _restore(E, saved)
        for r, nr in zip(op.results, new.results):
            g.vmap[r] = nr

    def reverse_region(self, g, op):
        """``scf.for %k = 0 to n`` visiting the forward iterations last to first, the
        adjoints of the iter_args carried as its iter_args."""
        E = g.E
        body = op.body.block
        _check_no_shadowed_carry(g, op, op.results)
        slots = self.slots(g, op)
        types = [op.results[i].type for i in slots]
        lb, ub, step = g.primal(op.lb), g.primal(op.ub), g.primal(op.step)
        n = emit_trip_count(E.v, lb, ub, step)
        seeds = [_zero_or(E, g._take_adjoint(op.results[i]), t) for i, t in zip(slots, types)]
        iv_type = body.args[0].type
        rb = Block(arg_types=[iv_type, *types])
        rev = E.insert(scf.ForOp(_index_const(E, 0, iv_type), n, _index_const(E, 1, iv_type), seeds, Region(rb)))
        with g.frame(body, rb, loop=(op, lb, step, n, rb.args[0])):
            TERMINATOR.reverse_terminator(g, body.last_op, dict(zip(slots, rb.args[1:])))
            g.reverse_ops(body)
            outs = [_zero_or(E, g._take_adjoint(body.args[1 + i]), t) for i, t in zip(slots, types)]
            E.insert(scf.YieldOp(*outs))
        for i, d in zip(slots, rev.results):
            g._accumulate(op.iter_args[i], d)


def forward_index(E, loop) -> SSAValue:
    """In the reverse body of ``loop`` = (op, lb, step, n, k): the forward
    iteration being reversed, ``n - 1 - k``."""
    _, _, _, n, k = loop
    one = _index_const(E, 1, k.type)
    return E.v(arith.SubiOp(E.v(arith.SubiOp(n, one)), k))


def reverse_iv(E, loop) -> SSAValue:
    """The forward induction variable of the iteration being reversed:
    ``lb + (n - 1 - k) * step``."""
    _, lb, step, _, _ = loop
    return E.v(arith.AddiOp(lb, E.v(arith.MuliOp(forward_index(E, loop), step))))


# ------------------------------------------------------------------------ scf.if


def _regions(op) -> list[Region]:
    return [op.true_region, op.false_region]


@_rule(scf.IfOp)
class IfRule(RegionRule):
    def forward_region(self, g, op):
        E, act = g.E, g.act
        _check_no_shadowed_carry(g, op, op.results)
        slots = [i for i, r in enumerate(op.results) if act.is_active(r)]
        types = [r.type for r in op.results] + [shadow_type(op.results[i].type) for i in slots]
        blocks = [Block() if r.blocks else None for r in _regions(op)]
        new = E.insert(scf.IfOp(g.primal(op.cond), types, Region(blocks[0]),
                                Region(blocks[1]) if blocks[1] is not None else None))
        for region, nb in zip(_regions(op), blocks):
            if nb is None:
                continue
            saved = _with_block(E, nb)
            for inner in list(region.block.ops)[:-1]:
                g._op(inner)
            TERMINATOR.forward_terminator(g, region.block.last_op, slots)
            _restore(E, saved)
        n = len(op.results)
        for i, r in enumerate(op.results):
            g.vmap[r] = new.results[i]
        for j, i in enumerate(slots):
            g.tmap[op.results[i]] = new.results[n + j]

    def forward_sweep(self, g, op):
        E = g.E
        _check_no_shadowed_carry(g, op, op.results)
        blocks = [Block() if r.blocks else None for r in _regions(op)]
        new = E.insert(scf.IfOp(g.fwd(op.cond), [r.type for r in op.results], Region(blocks[0]),
                                Region(blocks[1]) if blocks[1] is not None else None))
        for region, nb in zip(_regions(op), blocks):
            if nb is None:
                continue
            saved = _with_block(E, nb)
            for inner in region.block.ops:
                g.forward_op(inner)
            _restore(E, saved)
        for r, nr in zip(op.results, new.results):
            g.vmap[r] = nr

    def reverse_region(self, g, op):
        """An scf.if on the same condition; each branch reverses its forward branch."""
        E = g.E
        _check_no_shadowed_carry(g, op, op.results)
        cond = g.primal(op.cond)
        dres = {i: d for i, r in enumerate(op.results) if (d := g._take_adjoint(r)) is not None}
        blocks = [Block() if r.blocks else None for r in _regions(op)]
        E.insert(scf.IfOp(cond, [], Region(blocks[0]), Region(blocks[1]) if blocks[1] is not None else None))
        for region, rb in zip(_regions(op), blocks):
            if rb is None:
                continue
            with g.frame(region.block, rb):
                TERMINATOR.reverse_terminator(g, region.block.last_op, dres)
                g.reverse_ops(region.block)
                E.insert(scf.YieldOp())


# ------------------------------------------------------------------------ scf.while


@_rule(scf.WhileOp)
class WhileRule(RegionRule):
    @staticmethod
    def slots(g, op) -> tuple[list[int], list[int]]:
        """(before-argument positions, condition/after/result positions) that carry
        derivatives."""
        act = g.act
        before, after = op.before_region.block, op.after_region.block
        b = [i for i, a in enumerate(before.args) if act.is_active(a)]
        a = [j for j, (x, r) in enumerate(zip(after.args, op.results)) if act.is_active(x) or act.is_active(r)]
        return b, a

    def forward_region(self, g, op):
        E, act = g.E, g.act
        before, after = op.before_region.block, op.after_region.block
        _check_no_shadowed_carry(g, op, [*op.results, *before.args])
        bslots, aslots = self.slots(g, op)
        inits = [g.primal(x) for x in op.arguments] + [g._tangent_or_zero(op.arguments[i]) for i in bslots]
        nb = Block(arg_types=[a.type for a in before.args] + [shadow_type(before.args[i].type) for i in bslots])
        na = Block(arg_types=[a.type for a in after.args] + [shadow_type(after.args[j].type) for j in aslots])
        res_types = [r.type for r in op.results] + [shadow_type(op.results[j].type) for j in aslots]
        new = E.insert(scf.WhileOp(inits, res_types, Region(nb), Region(na)))
        for blk, new_blk, slots, term_slots in ((before, nb, bslots, aslots), (after, na, aslots, bslots)):
            for a, x in zip(blk.args, new_blk.args):
                g.vmap[a] = x
            for k, i in enumerate(slots):
                if act.is_active(blk.args[i]):
                    g.tmap[blk.args[i]] = new_blk.args[len(blk.args) + k]
            saved = _with_block(E, new_blk)
            for inner in list(blk.ops)[:-1]:
                g._op(inner)
            TERMINATOR.forward_terminator(g, blk.last_op, term_slots)
            _restore(E, saved)
        n = len(op.results)
        for i, r in enumerate(op.results):
            g.vmap[r] = new.results[i]
        for k, j in enumerate(aslots):
            if act.is_active(op.results[j]):
                g.tmap[op.results[j]] = new.results[n + k]

    def forward_sweep(self, g, op):
        """The primal loop with one more value carried around: the number of times the
        ``after`` region ran, which the reverse sweep loops over."""
        E = g.E
        before, after = op.before_region.block, op.after_region.block
        _check_no_shadowed_carry(g, op, [*op.results, *before.args, *after.args])
        if not g.region_active(op):
            return g.copy_op(op)
        idx = IndexType()
        zero = _index_const(E, 0, idx)
        nb = Block(arg_types=[a.type for a in before.args] + [idx])
        na = Block(arg_types=[a.type for a in after.args] + [idx])
        new = E.insert(scf.WhileOp([*(g.fwd(x) for x in op.arguments), zero],
                                   [*(r.type for r in op.results), idx], Region(nb), Region(na)))
        for blk, new_blk in ((before, nb), (after, na)):
            for a, x in zip(blk.args, new_blk.args):
                g.vmap[a] = x
            saved = _with_block(E, new_blk)
            for inner in list(blk.ops)[:-1]:
                g.forward_op(inner)
            term = blk.last_op
            count = new_blk.args[-1]
            if blk is before:
                E.insert(scf.ConditionOp(g.fwd(term.condition), *(g.fwd(v) for v in term.args), count))
            else:
                nxt = E.v(arith.AddiOp(count, _index_const(E, 1, idx)))
                E.insert(scf.YieldOp(*(g.fwd(v) for v in term.operands), nxt))
            _restore(E, saved)
        for r, nr in zip(op.results, new.results):
            g.vmap[r] = nr
        g.while_counts[op] = new.results[-1]

    def reverse_region(self, g, op):
        """Reverse of the last ``before`` run (the one that left the loop), then an
        ``scf.for`` over the counted iterations: reverse ``after``, reverse
        ``before``, the adjoints of the ``before`` arguments carried around."""
        E = g.E
        before, after = op.before_region.block, op.after_region.block
        _check_no_shadowed_carry(g, op, [*op.results, *before.args])
        bslots, aslots = self.slots(g, op)
        btypes = [before.args[i].type for i in bslots]
        n = g.fetch_computed_in(op.parent_block(), g.while_counts[op])
        dres = {j: _zero_or(E, g._take_adjoint(op.results[j]), op.results[j].type) for j in aslots}

        def rev_before(dx: dict[int, SSAValue]) -> list[SSAValue]:
            TERMINATOR.reverse_terminator(g, before.last_op, dx)
            g.reverse_ops(before)
            return [_zero_or(E, g._take_adjoint(before.args[i]), t) for i, t in zip(bslots, btypes)]

        with g.frame(before, E.block):
            db = rev_before(dres)
        idx = n.type
        rb = Block(arg_types=[idx, *btypes])
        loop = E.insert(scf.ForOp(_index_const(E, 0, idx), n, _index_const(E, 1, idx), db, Region(rb)))
        with g.frame(after, rb):
            TERMINATOR.reverse_terminator(g, after.last_op, dict(zip(bslots, rb.args[1:])))
            g.reverse_ops(after)
            da = {j: _zero_or(E, g._take_adjoint(after.args[j]), after.args[j].type) for j in aslots}
        with g.frame(before, rb):
            outs = rev_before(da)
            E.insert(scf.YieldOp(*outs))
        for i, d in zip(bslots, loop.results):
            g._accumulate(op.arguments[i], d)
