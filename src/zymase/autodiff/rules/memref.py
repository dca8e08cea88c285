"""Derivative rules of ``memref`` ops: shadow memrefs, forward tangents, reverse adjoints.

Shadow memory as in Enzyme (see :mod:`zymase.autodiff.memory`), at the memref
level: a shadowed memref has a shadow memref of the same shape holding
derivatives (:mod:`zymase.analysis.memref` decides which ones).

=================  ==========================  ==========================  ===========================
op                 shadow (both modes)         forward mode                reverse mode
=================  ==========================  ==========================  ===========================
alloc / alloca     zeroed shadow buffer        —                           dealloc the shadow (alloc)
dealloc            dealloc the shadow (fwd)    —                           — (the shadow lives on)
subview / cast     same view of the shadow     —                           —
load               —                           tangent = shadow[i]         shadow[i] += adjoint
store              —                           shadow[i] = tangent or 0    adjoint += shadow[i];
                                                                           shadow[i] = 0
copy               —                           copy the shadows (or zero)  dsrc += ddst; ddst = 0
dim                —                           —                           —
=================  ==========================  ==========================  ===========================

Each rule is a :class:`MemoryRule`, registered for its op class in the rule
registry; the generators' shadow-code mixin dispatches memref ops here. Rules use
the generator ``g``: ``g.E`` (emitter), ``g.act`` (activity), ``g.smap`` (memref ->
shadow in the forward sweep), ``g.tmap`` (tangents), ``g.vmap`` (primal copies),
and in reverse mode ``g.primal``/``g.fetch_shadow`` (values made available in the
reverse sweep) and ``g._take_adjoint``/``g._accumulate``.
"""

from __future__ import annotations

from collections.abc import Sequence

from zymase.autodiff.registry import Rule, register
from zymase.errors import ZymaseError
from zymase.ir import Operation, SSAValue, UnitAttr, is_float_type, location_of, memref
from zymase.ir import memref_ext
from zymase.transforms.lower_memref import ZERO_INIT


class MemoryRule(Rule):
    """A memref op's shadow structure and its forward and reverse derivative code."""

    def propagates(self, op: Operation, index: int) -> bool:
        return False  # memory flow is modelled by zymase.analysis.memref

    def structure(self, g, op: Operation, clone: Operation, *, forward_mode: bool) -> None:
        """Shadow memrefs in the forward sweep (the emitter is right after ``clone``)."""

    def forward_memory(self, g, op: Operation) -> None:
        """Forward mode: tangents through memory."""

    def reverse_memory(self, g, op: Operation) -> None:
        """Reverse mode: the op's adjoint code, at its mirror point."""


def _rule(*op_classes):
    """Register one instance of the decorated rule class for ``op_classes``."""

    def deco(cls):
        register(*op_classes)(cls())
        return cls

    return deco


def _mapped(g, values: Sequence[SSAValue]) -> list[SSAValue]:
    return [g.vmap.get(v, v) for v in values]


@_rule(memref.AllocOp, memref.AllocaOp)
class _Allocation(MemoryRule):
    def structure(self, g, op, clone, *, forward_mode):
        if op not in g.act.shadow_allocations:
            return
        shadow = clone.clone()
        shadow.operands = list(clone.operands)
        shadow.attributes[ZERO_INIT] = UnitAttr()
        g.E.insert(shadow)
        g.smap[op.results[0]] = shadow.results[0]

    def reverse_memory(self, g, op):
        if op in g.act.shadow_allocations and isinstance(op, memref.AllocOp):
            g.E.insert(memref.DeallocOp.get(g.fetch_shadow(op.results[0])))


@_rule(memref.DeallocOp)
class _Dealloc(MemoryRule):
    def structure(self, g, op, clone, *, forward_mode):
        # Reverse mode frees the shadow at the allocation's mirror point instead.
        if forward_mode and op.memref in g.act.shadowed:
            g.E.insert(memref.DeallocOp.get(g.shadow_of(op.memref)))


@_rule(memref.SubviewOp, memref_ext.CastOp)
class _View(MemoryRule):
    def structure(self, g, op, clone, *, forward_mode):
        if op.results[0] not in g.act.shadowed:
            return
        shadow = clone.clone()
        shadow.operands = [g.shadow_of(op.operands[0]), *clone.operands[1:]]
        g.E.insert(shadow)
        g.smap[op.results[0]] = shadow.results[0]


@_rule(memref.LoadOp)
class _Load(MemoryRule):
    def forward_memory(self, g, op):
        r = op.res
        if op.memref in g.act.shadowed and g.act.is_active(r):
            g.tmap[r] = g.E.v(memref.LoadOp.get(g.shadow_of(op.memref), _mapped(g, op.indices)))

    def reverse_memory(self, g, op):
        r = op.res
        if op.memref not in g.act.shadowed or not g.act.is_active(r):
            return
        dy = g._take_adjoint(r)
        if dy is None:
            return
        E = g.E
        shadow = g.fetch_shadow(op.memref)
        indices = [g.primal(i) for i in op.indices]
        old = E.v(memref.LoadOp.get(shadow, indices))
        E.insert(memref.StoreOp.get(E.add(old, dy), shadow, indices))


@_rule(memref.StoreOp)
class _Store(MemoryRule):
    def forward_memory(self, g, op):
        v = op.value
        if op.memref not in g.act.shadowed or not is_float_type(v.type):
            return
        t = g.tmap.get(v) if g.act.is_active(v) else None
        if t is None:
            t = g.E.zero(v.type)
        g.E.insert(memref.StoreOp.get(t, g.shadow_of(op.memref), _mapped(g, op.indices)))

    def reverse_memory(self, g, op):
        v = op.value
        if op.memref not in g.act.shadowed or not is_float_type(v.type):
            return
        E = g.E
        shadow = g.fetch_shadow(op.memref)
        indices = [g.primal(i) for i in op.indices]
        d = E.v(memref.LoadOp.get(shadow, indices))
        E.insert(memref.StoreOp.get(E.zero(v.type), shadow, indices))
        if g.act.is_active(v):
            g._accumulate(v, d)


@_rule(memref_ext.CopyOp)
class _Copy(MemoryRule):
    def forward_memory(self, g, op):
        src, dst = op.source, op.destination
        if dst not in g.act.shadowed:
            return
        if src in g.act.shadowed:
            g.E.insert(memref_ext.CopyOp(g.shadow_of(src), g.shadow_of(dst)))
        elif is_float_type(dst.type.get_element_type()):
            _zero_fill(g, g.shadow_of(dst))

    def reverse_memory(self, g, op):
        src, dst = op.source, op.destination
        if dst not in g.act.shadowed or not is_float_type(dst.type.get_element_type()):
            return
        ddst = g.fetch_shadow(dst)
        dsrc = g.fetch_shadow(src) if src in g.act.shadowed else None
        elem = dst.type.get_element_type()

        def body(b, ivs):
            d = b.v(memref.LoadOp.get(ddst, ivs))
            b.add(memref.StoreOp.get(_zero(b, elem), ddst, ivs))
            if dsrc is not None:
                old = b.v(memref.LoadOp.get(dsrc, ivs))
                b.add(memref.StoreOp.get(_add(b, old, d), dsrc, ivs))

        _loops_over(g, ddst, body)


@_rule(memref.DimOp)
class _Dim(MemoryRule):
    pass  # an index: no derivative, no shadow


# ---- loops over a whole memref, emitted at the generator's insertion point --------


def _loops_over(g, m: SSAValue, body) -> None:
    from zymase.transforms.lower_structured import emit_loop_nest, loop_bounds

    E = g.E
    anchor = E.anchor if E.anchor is not None else E.block
    emit_loop_nest(anchor, loop_bounds(anchor, m), body)


def _zero_fill(g, m: SSAValue) -> None:
    elem = m.type.get_element_type()
    _loops_over(g, m, lambda b, ivs: b.add(memref.StoreOp.get(_zero(b, elem), m, ivs)))


def _zero(b, t) -> SSAValue:
    from zymase.autodiff.flavor import STD

    return b.v(STD.const(0.0, t))


def _add(b, x: SSAValue, y: SSAValue) -> SSAValue:
    from zymase.autodiff.flavor import STD

    return b.v(STD.binary("add", x, y))


def unsupported(g, op: Operation) -> ZymaseError:
    """The error for a memref op without a rule that touches shadowed memory."""
    return ZymaseError(
        f"no derivative rule for '{op.name}' on memory holding active data",
        construct=op.name,
        function=g.fname,
        location=location_of(op),
        hint="use memref.load/store/alloc/alloca/dealloc/subview/cast/dim/copy on active memory",
    )
