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

In vector mode (the generator's ``width`` N > 1) each active value carries N tangents
or adjoints, its lanes side by side (``_lane_types``); the primal values are carried
once.

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


def _lane_types(g, values) -> list:
    """The types of the derivatives carried for ``values``: per value, one per lane
    (vector mode's width, autodiff/lanes.py), lane by lane."""
    return [shadow_type(v.type) for v in values for _ in range(g.width)]


def _map_tangents(g, values, carried) -> None:
    """Forward mode: the tangents of ``values`` are ``carried`` (laid out as
    ``_lane_types`` says), for those that are active."""
    carried = iter(carried)
    for v in values:
        for _ in g.each_lane():
            t = next(carried)
            if g.act.is_active(v):
                g.tmap[v] = t


def _lane_adjoints(g, values, types) -> list[SSAValue]:
    """Reverse mode: the adjoints of ``values`` (zero where there is none), taken per
    value in each lane, lane by lane (the layout of ``_lane_types``)."""
    E = g.E
    return [d for v, t in zip(values, types) for d in g.in_each_lane(lambda: _zero_or(E, g._take_adjoint(v), t))]


def _by_value(g, positions, carried) -> dict[int, list[SSAValue]]:
    """``carried`` (per position, its lanes side by side) as position -> its lanes."""
    carried = list(carried)
    return {i: carried[k * g.width:(k + 1) * g.width] for k, i in enumerate(positions)}


def _accumulate_lanes(g, values, carried) -> None:
    """Add ``carried`` (per value, its lanes side by side) to the adjoints of ``values``."""
    for v, lane_adjoints in zip(values, _by_value(g, range(len(values)), carried).values()):
        for lane in g.each_lane():
            g._accumulate(v, lane_adjoints[lane])


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
        extra = [t for i in slots for t in g.in_each_lane(lambda: g._tangent_or_zero(vals[i]))]
        primal = [g.primal(v) for v in vals]
        if isinstance(op, scf.ConditionOp):
            return g.E.insert(scf.ConditionOp(g.primal(op.condition), *primal, *extra))
        return g.E.insert(scf.YieldOp(*primal, *extra))

    def reverse_terminator(self, g, op: Operation, adjoints: dict[int, list[SSAValue | None]]) -> None:
        """``adjoints``: per position passed, its adjoint in each lane."""
        vals = self.passed(op)
        for i, lane_adjoints in adjoints.items():
            for lane in g.each_lane():
                g._accumulate(vals[i], lane_adjoints[lane])


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
        E = g.E
        body = op.body.block
        _check_no_shadowed_carry(g, op, [*op.results, *body.args])
        slots = self.slots(g, op)
        inits = [g.primal(x) for x in op.iter_args]
        inits += [t for i in slots for t in g.in_each_lane(lambda: g._tangent_or_zero(op.iter_args[i]))]
        arg_types = [a.type for a in body.args] + _lane_types(g, [body.args[1 + i] for i in slots])
        nb = Block(arg_types=arg_types)
        new = E.insert(scf.ForOp(g.primal(op.lb), g.primal(op.ub), g.primal(op.step), inits, Region(nb)))
        for a, na in zip(body.args, nb.args):
            g.vmap[a] = na
        n = len(op.iter_args)
        _map_tangents(g, [body.args[1 + i] for i in slots], nb.args[1 + n:])
        saved = _with_block(E, nb)
        for inner in list(body.ops)[:-1]:
            g._op(inner)
        TERMINATOR.forward_terminator(g, body.last_op, slots)
        _restore(E, saved)
        for i, r in enumerate(op.results):
            g.vmap[r] = new.results[i]
        _map_tangents(g, [op.results[i] for i in slots], new.results[n:])

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
        seeds = _lane_adjoints(g, [op.results[i] for i in slots], types)
        iv_type = body.args[0].type
        rb = Block(arg_types=[iv_type, *_lane_types(g, [op.results[i] for i in slots])])
        rev = E.insert(scf.ForOp(_index_const(E, 0, iv_type), n, _index_const(E, 1, iv_type), seeds, Region(rb)))
        with g.frame(body, rb, loop=(op, lb, step, n, rb.args[0])):
            TERMINATOR.reverse_terminator(g, body.last_op, _by_value(g, slots, rb.args[1:]))
            g.reverse_ops(body)
            outs = _lane_adjoints(g, [body.args[1 + i] for i in slots], types)
            E.insert(scf.YieldOp(*outs))
        _accumulate_lanes(g, [op.iter_args[i] for i in slots], rev.results)


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
        types = [r.type for r in op.results] + _lane_types(g, [op.results[i] for i in slots])
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
        _map_tangents(g, [op.results[i] for i in slots], new.results[n:])

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
        dres = {}
        for i, r in enumerate(op.results):
            lane_adjoints = g.in_each_lane(lambda: g._take_adjoint(r))
            if any(d is not None for d in lane_adjoints):
                dres[i] = lane_adjoints
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
        E = g.E
        before, after = op.before_region.block, op.after_region.block
        _check_no_shadowed_carry(g, op, [*op.results, *before.args])
        bslots, aslots = self.slots(g, op)
        inits = [g.primal(x) for x in op.arguments]
        inits += [t for i in bslots for t in g.in_each_lane(lambda: g._tangent_or_zero(op.arguments[i]))]
        nb = Block(arg_types=[a.type for a in before.args] + _lane_types(g, [before.args[i] for i in bslots]))
        na = Block(arg_types=[a.type for a in after.args] + _lane_types(g, [after.args[j] for j in aslots]))
        res_types = [r.type for r in op.results] + _lane_types(g, [op.results[j] for j in aslots])
        new = E.insert(scf.WhileOp(inits, res_types, Region(nb), Region(na)))
        for blk, new_blk, slots, term_slots in ((before, nb, bslots, aslots), (after, na, aslots, bslots)):
            for a, x in zip(blk.args, new_blk.args):
                g.vmap[a] = x
            _map_tangents(g, [blk.args[i] for i in slots], new_blk.args[len(blk.args):])
            saved = _with_block(E, new_blk)
            for inner in list(blk.ops)[:-1]:
                g._op(inner)
            TERMINATOR.forward_terminator(g, blk.last_op, term_slots)
            _restore(E, saved)
        n = len(op.results)
        for i, r in enumerate(op.results):
            g.vmap[r] = new.results[i]
        _map_tangents(g, [op.results[j] for j in aslots], new.results[n:])

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
        bvalues = [before.args[i] for i in bslots]
        btypes = [v.type for v in bvalues]
        n = g.fetch_computed_in(op.parent_block(), g.while_counts[op])
        dres = _by_value(g, aslots, _lane_adjoints(g, [op.results[j] for j in aslots],
                                                    [op.results[j].type for j in aslots]))

        def rev_before(dx: dict[int, list[SSAValue]]) -> list[SSAValue]:
            TERMINATOR.reverse_terminator(g, before.last_op, dx)
            g.reverse_ops(before)
            return _lane_adjoints(g, bvalues, btypes)

        with g.frame(before, E.block):
            db = rev_before(dres)
        idx = n.type
        rb = Block(arg_types=[idx, *_lane_types(g, bvalues)])
        loop = E.insert(scf.ForOp(_index_const(E, 0, idx), n, _index_const(E, 1, idx), db, Region(rb)))
        with g.frame(after, rb):
            TERMINATOR.reverse_terminator(g, after.last_op, _by_value(g, bslots, rb.args[1:]))
            g.reverse_ops(after)
            da = _by_value(g, aslots, _lane_adjoints(g, [after.args[j] for j in aslots],
                                                      [after.args[j].type for j in aslots]))
        with g.frame(before, rb):
            outs = rev_before(da)
            E.insert(scf.YieldOp(*outs))
        _accumulate_lanes(g, [op.arguments[i] for i in bslots], loop.results)
