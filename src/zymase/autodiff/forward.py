"""Forward mode: the primal function copied with a tangent computed next to every
active value. Block arguments get tangent block arguments; branches pass tangents
along; calls to defined functions become calls to their forward derivatives.

Vector mode (Enzyme's ``enzyme_width``, ``width`` > 1): one primal copy and ``width``
lanes of tangents. Each lane has its own tangent and shadow maps; the generator emits
an op's primal once and then its tangent code once per lane, with the lane's maps
selected (autodiff/lanes.py), so the rules stay scalar. Chains of scalar float ops
compute their partials once for all lanes instead (autodiff/lane_combos.py).

Laplacian mode (``laplacian=True``, autodiff/laplacian.py): the last lane carries the
summed second-order term of the other lanes' directions; its linear part is that lane's
ordinary tangent code, the quadratic part is added after each nonlinear op."""

from __future__ import annotations

from collections.abc import Sequence

from zymase.analysis.memory import DEALLOCATED_ARG, callee_name, memory_kind
from zymase.autodiff.common import Context, function_name, mark_shadow_args, no_rule_error, prepare
from zymase.autodiff.flavor import Emitter
from zymase.autodiff.lane_blocks import LaneBlocks
from zymase.autodiff.lane_combos import LaneCombos
from zymase.autodiff.lanes import LaneMaps
from zymase.autodiff.lane_liveness import LaneLiveness
from zymase.autodiff.laplacian import LaplacianTerms
from zymase.autodiff.memory import ShadowCode, twin_decl
from zymase.autodiff.registry import call_memory_rule
from zymase.errors import ZymaseError
from zymase.ir import Block, Operation, SSAValue, llvm, location_of
from zymase.ir.enzyme import Activity
from zymase.llvm.noalias_scopes import is_scope_decl


def _as_active(a: Activity) -> Activity:
    """Forward mode seeds tangents for dup and active alike."""
    if a.is_dup:
        return Activity.ACTIVE if a.needs_primal else Activity.ACTIVENONEED
    return a


class ForwardGenerator(LaneMaps, LaneCombos, LaneBlocks, ShadowCode, LaplacianTerms):
    def __init__(self, ctx: Context, fop: Operation, arg_acts: Sequence[Activity], ret_acts: Sequence[Activity], name: str,
                 width: int = 1, laplacian: bool = False):
        self.ctx = ctx
        self.flavor = ctx.flavor
        self.fop = fop
        self.arg_acts = list(arg_acts)
        self.ret_acts = list(ret_acts)
        self.fname = function_name(fop)
        self.init_lanes(width)
        self.init_combos()
        self.laplacian = laplacian

    def wants(self, v: SSAValue) -> bool:
        return self.act.is_active(v)

    def primal(self, v: SSAValue) -> SSAValue:
        return self.vmap.get(v, v)

    def varies_in_loop(self, v: SSAValue) -> bool:
        return False  # tangents are formed where the primal values are: all at hand

    def generate(self, gop: Operation) -> None:
        flavor = self.flavor
        p = prepare(self.ctx, self.fop, [_as_active(a) for a in self.arg_acts], [_as_active(a) for a in self.ret_acts])
        act = p.activity
        self.act = act
        self.p = p
        # Laplacian entry: the ops whose gradient lanes nothing needs get the Laplacian
        # lane alone (autodiff/lane_liveness.py)
        self.lane_liveness = None
        if self.laplacian and getattr(self, "entry", False):
            self.lane_liveness = LaneLiveness(self.fop, p.region, act, flavor)
        region = p.region
        self.E = E = Emitter(flavor, self.ctx.module)
        self.vmap: dict[SSAValue, SSAValue] = {}
        self.primal_copies: dict[Operation, Operation] = {}  # copy -> primal op
        bmap: dict[Block, Block] = {}
        self.bmap = bmap

        # Entry block: the derivative function's own entry.
        g_entry = gop.body.blocks[0]
        orig_entry = region.blocks[0]
        bmap[orig_entry] = g_entry
        g_args = iter(g_entry.args)
        for arg, a in zip(orig_entry.args, self.arg_acts):
            self.vmap[arg] = next(g_args)
            if a.is_dup or a.is_active:
                for _ in self.each_lane():
                    t = next(g_args)
                    if act.is_active(arg):
                        self.tmap[arg] = t
                    elif act.has_shadow(arg):
                        self.smap[arg] = t
        mark_shadow_args(gop, [t.index for smap in self.of_every_lane("smap") for t in smap.values()],
                         [k for k, smap in enumerate(self.of_every_lane("smap")) for _ in smap.values()])
        # Other blocks: primal args, then per active block argument one tangent arg per lane.
        # Unreachable blocks are dropped: no live branch can target them.
        order = [b for b in region.blocks if b in p.cfg.reachable]
        for b in order[1:]:
            nb = Block(arg_types=[a.type for a in b.args])
            bmap[b] = nb
            for a, na in zip(b.args, nb.args):
                self.vmap[a] = na
            for a in b.args:
                for _ in self.each_lane():
                    if act.is_active(a):
                        self.tmap[a] = nb.insert_arg(a.type, len(nb.args))
                    elif act.has_shadow(a):
                        self.smap[a] = nb.insert_arg(a.type, len(nb.args))
            gop.body.add_block(nb)

        rpo = [b for b in p.cfg.rpo() if b in bmap]
        for b in rpo:
            nb = bmap[b]
            E.at_end(nb)
            for op in b.ops:
                if op is b.last_op:
                    self._terminator(op, nb)
                else:
                    self._op(op)

    def _op(self, op: Operation) -> None:
        E = self.E
        if self.combos and not self.combinable(op):
            self.form_deferred_operands(op)
        if op.regions:
            self._region_op(op)
            return
        if (kind := memory_kind(op)) is not None:
            lanes_rule = None
            if kind in ("memref", "call_rule") and any(self.act.has_shadow(o) for o in op.operands):
                rule = call_memory_rule(callee_name(op)) if kind == "call_rule" else None
                if self.width > 1 and getattr(rule, "forwards_lanes", lambda o: False)(op):
                    lanes_rule = rule  # every lane in one call (gemv's lanes as one gemm)
                elif kind == "memref" and self.laplacian:
                    self.refuse_in_vector_mode(op, "memref memory operations in Laplacian mode", self.fname)
                elif kind == "call_rule" and not rule.lane_by_lane(op):
                    self.refuse_in_vector_mode(op, f"calls to '{callee_name(op)}'", self.fname)
                elif kind == "call_rule" and self.laplacian:  # a bilinear call's second-order term is not lane-wise
                    self.refuse_in_vector_mode(op, f"calls to '{callee_name(op)}' in Laplacian mode", self.fname)
            new = self._copy_primal(op)
            if lanes_rule is not None:
                lanes_rule.forward_lanes(self, op, new)
                return
            if kind == "nrt_alloc" and self.allocates_lane_block(op, new):
                return
            for _ in self.live_lanes(op):
                self.shadow_structure(op, new, forward_mode=True)
                self.forward_memory(op)
            return
        active = self.act.op_is_active(op)
        takes_memory = any(self.act.has_shadow(o) for o in op.operands)
        callee = self.ctx.defined_function(op) if (active or takes_memory) else None
        if callee is not None:
            self._call(op, callee)
            return
        new = self._copy_primal(op)
        if is_scope_decl(op):
            E.insert(twin_decl(op))  # the tangents' accesses carry the twin scopes
        if DEALLOCATED_ARG in op.attributes:
            for _ in self.live_lanes(op):
                self.free_deallocated_shadow(op)
        if not active:
            return
        rule = self.ctx.rule_for(op)
        if rule is None:
            raise no_rule_error(op, self.fname)
        if self.combinable(op, rule) and self.combine(op, rule):
            return
        if self.combos:
            self.form_deferred_operands(op)  # combine refused it: lane by lane
        lane_code = []  # Laplacian mode: per lane, the tangent code just emitted
        for _ in self.live_lanes(op):
            tangents = [self.tmap.get(o) if self.act.is_active(o) else None for o in op.operands]
            mark = self.emission_mark() if self.laplacian else None
            with E.derivative_of(op):
                outs = rule.forward(self, op, tangents)
            if self.laplacian:
                lane_code.append(self.emitted_since(mark))
            for r, t in zip(op.results, outs):
                if self.act.is_active(r):
                    self.tmap[r] = t if t is not None else E.zero(r.type)
        if self.laplacian and not self.lanes_dead(op):  # a lane-dead op is linear: no term
            self.add_second_order(op, lane_code, rule)

    def lanes_dead(self, op: Operation) -> bool:
        """Laplacian entry: whether nothing needs ``op``'s gradient lanes."""
        return self.lane_liveness is not None and op in self.lane_liveness.dead_ops

    def live_lanes(self, op: Operation):
        """The lanes to emit ``op``'s derivative code in: every lane, or the Laplacian
        lane alone when its gradient lanes are dead (each selected as ``each_lane`` does)."""
        for k in self.each_lane():
            if k == self.width - 1 or not self.lanes_dead(op):
                yield k

    def _shadow_or_null(self, v: SSAValue) -> SSAValue:
        """The shadow of ``v``, or null in a gradient lane of a dead class (no op reads it)."""
        if (self.lane_liveness is not None and self.lane_index < self.width - 1 and v not in self.smap
                and self.lane_liveness.is_dead(v)):
            return self.E.v(llvm.ZeroOp.build(result_types=[v.type]))
        return self.shadow_of(v)

    def _region_op(self, op: Operation) -> None:
        """Structured control flow (scf.for/if/while): the op's rule rebuilds it with
        tangents carried alongside (rules/scf.py)."""
        rule = self.ctx.rule_for(op)
        if hasattr(rule, "forward_region"):
            if self.laplacian and any(self.act.is_active(v) or self.act.has_shadow(v) for inner in op.walk()
                                      for v in (*inner.operands, *inner.results)):
                # the rules carry every lane's tangents; the Laplacian lane's
                # second-order terms are not carried through regions
                self.refuse_in_vector_mode(op, "structured control flow (scf) in Laplacian mode", self.fname)
            rule.forward_region(self, op)
            return
        if any(self.act.is_active(v) or self.act.has_shadow(v) for inner in op.walk() for v in (*inner.operands, *inner.results)):
            raise no_rule_error(op, self.fname)
        self._copy_primal(op)

    def _copy_primal(self, op: Operation) -> Operation:
        """The copy of primal op ``op`` at the insertion point (its results mapped).
        Split forward mode (autodiff/forward_split.py) tells these copies from the
        tangent code by ``primal_copies``."""
        new = op.clone(self.vmap, self.bmap)
        self.E.insert(new)
        for r, nr in zip(op.results, new.results):
            self.vmap[r] = nr
        self.primal_copies[new] = op
        return new

    def _call(self, op: Operation, callee: Operation) -> None:
        E = self.E
        args = self.flavor.call_args(op)
        arg_acts = [
            Activity.DUP if (self.act.is_active(a) or self.act.has_shadow(a)) else Activity.CONST for a in args
        ]
        ret_acts = [Activity.DUP if self.act.is_active(r) else Activity.CONST for r in op.results]
        if self.laplacian:
            name = self.ctx.driver.laplacian(callee, arg_acts, ret_acts, width=self.width)
        else:
            name = self.ctx.driver.forward(callee, arg_acts, ret_acts, width=self.width)
        call_args = []
        for a, act in zip(args, arg_acts):
            call_args.append(self.primal(a))
            if act.is_dup:
                for _ in self.each_lane():
                    call_args.append(self.shadow_of(a) if self.act.has_shadow(a) else self.tmap[a])
        out_types = []
        for r, act in zip(op.results, ret_acts):
            out_types += [r.type] + [r.type] * self.width if act.is_dup else [r.type]
        outs = iter(E.call(name, call_args, out_types))
        for r, act in zip(op.results, ret_acts):
            self.vmap[r] = next(outs)
            if act.is_dup:
                for _ in self.each_lane():
                    self.tmap[r] = next(outs)

    def _returned_derivative(self, v: SSAValue, ret: Operation) -> SSAValue:
        """The tangent of a returned float, or the shadow of a returned pointer."""
        from zymase.analysis.memory import is_pointer

        if not is_pointer(v):
            return self._tangent_or_zero(v)
        if v in self.smap or v.owner.name in ("llvm.mlir.zero", "llvm.mlir.undef"):
            return self.shadow_of(v)
        raise ZymaseError(
            "the returned pointer has no shadow: it does not point into duplicated or local active memory",
            construct="llvm.return",
            function=self.fname,
            location=location_of(ret),
            hint="return a pointer derived from an enzyme_dup argument, or ignore the result",
        )

    def _tangent_or_zero(self, v: SSAValue) -> SSAValue:
        if self.act.is_active(v) and v in self.tmap:
            return self.tmap[v]
        return self.E.zero(v.type)

    def _terminator(self, op: Operation, nb: Block) -> None:
        flavor = self.flavor
        E = self.E
        if self.combos:
            self.form_deferred_operands(op)
        if flavor.is_return(op):
            outs = []
            for v, a in zip(flavor.return_values(op), self.ret_acts):
                if a.needs_primal:
                    outs.append(self.primal(v))
                if not a.is_const:
                    for _ in self.each_lane():
                        outs.append(self._returned_derivative(v, op))
            flavor.ret(E, outs, None)
            return
        if not op.successors:
            new = op.clone(self.vmap, self.bmap)
            E.insert(new)
            return
        operand_lists = flavor.successor_operands(op)
        new_lists = []
        for succ, operands in zip(op.successors, operand_lists):
            lst = [self.primal(v) for v in operands]
            for arg, v in zip(succ.args, operands):
                for _ in self.each_lane():
                    if self.act.is_active(arg):
                        lst.append(self._tangent_or_zero(v))
                    elif self.act.has_shadow(arg):
                        lst.append(self._shadow_or_null(v))
            new_lists.append(lst)
        clone = op.clone(self.vmap, self.bmap)
        new = flavor.rebuild_terminator(clone, new_lists)
        clone.erase()
        E.insert(new)
