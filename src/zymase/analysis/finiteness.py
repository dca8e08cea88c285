"""Which float values of a function may be infinite or NaN although its inputs are
finite, and which singular operations are regular where they are used: what strong
zeros must guard against (zymase.autodiff.semantics).

A term ``dy * partial`` needs a strong-zero guard when the partial may be infinite or
NaN. Partials of singular functions (``1/b`` of a division, ``1/(2 sqrt x)`` of a
square root, ``1/x`` of a logarithm) may be so at ordinary inputs, unless the operand
that makes them singular is bounded away from the pole: ``1 / (1 + exp(-x))`` divides
by at least 1, ``log(1 + exp(x))`` takes the logarithm of at least 1. Other partials
are primal values (``b`` in ``d(a*b)/da``); they are non-finite only when a singular
operation upstream made them so. A value may be non-finite when such an operation
produced it, or it was computed from, selected from, passed along (block arguments,
structured-op results) or loaded after a store of such a value. Finite inputs are
assumed, and overflow of arithmetic on finite values (``1e300 * 1e300``,
``exp(1000)``) is not tracked: those infinities keep IEEE semantics.

A non-finite value needs no guard when it is *exposed*: whenever it is computed, a use
that always follows carries the non-finiteness on (sums, products, quotients by it as
dividend, every edge of the branch ending its block) into the program's single output.
Wherever such a value is infinite, the output is infinite or NaN too, and a derivative
of a function whose value is not finite has nothing to be right about. A value whose
only uses hide it (a comparison, a select, a store that is not the output, a call, a
branch taken only sometimes) is not exposed, and the terms reading it are guarded.
"""

from __future__ import annotations

from zymase.analysis.memory import memory_kind
from zymase.analysis.op_classes import is_a
from zymase.analysis.scf import nested_blocks, value_flow
from zymase.autodiff.registry import ScalarRule
from zymase.autodiff.rules import scalar
from zymase.ir import Block, BlockArgument, FloatAttr, IndexType, IntegerType, Operation, SSAValue, is_float_type, llvm

POSITIVE = "positive"  # greater than 0
NONNEG = "nonneg"  # at least 0
NONZERO = "nonzero"  # not 0


class Finiteness:
    """The analysis of one prepared function body (``prepared.region``, nested regions
    included). ``ctx`` is the autodiff Context (rules, callees, flavor); ``ret_acts``
    the activities of the results; ``entry``: the function is the one the program
    differentiates (a marker's), so its results are the program's outputs."""

    def __init__(self, prepared, ctx, ret_acts, *, entry: bool, primal: Operation | None = None):
        self.ctx = ctx
        self.cfg = prepared.cfg
        self._signs: dict[tuple[SSAValue, Block | None], str | None] = {}
        self._facts: dict[Block, dict[SSAValue, str]] = {}
        self.ops = [op for b in nested_blocks(prepared.region) for op in b.ops]
        self._noalias = _noalias_arguments(prepared, primal)
        self.nonfinite = self._nonfinite_values()
        sink = self._single_output(prepared, ret_acts) if entry else None
        self.exposed = self._exposed(sink) if sink is not None else set()

    def needs_guard(self, v: SSAValue) -> bool:
        """Whether a term whose partial is ``v`` needs a strong-zero guard: ``v`` may be
        non-finite where the program's output is finite."""
        return v in self.nonfinite and v not in self.exposed

    # ----- singular ops ----------------------------------------------------------
    def singular(self, op: Operation, rule) -> bool:
        """Whether ``op`` (with ScalarRule ``rule``) may have an infinite or NaN value
        or partial here: its rule is singular and the operands that would make it
        regular are not known to be bounded away from the pole."""
        return rule.singular and not self._holds(op, rule.regular_if)

    def singular_value(self, op: Operation, rule) -> bool:
        """Whether ``op``'s value may be infinite or NaN at its (finite) operands."""
        return rule.singular and rule.finite_value_if is not None and not self._holds(op, rule.finite_value_if)

    def _holds(self, op: Operation, conditions) -> bool:
        where = op.parent_block()
        return bool(conditions) and all(_implies(self.sign(op.operands[i], where), need) for i, need in conditions)

    def sign(self, v: SSAValue, where: Block | None = None) -> str | None:
        """The sign ``v`` provably has in block ``where`` (anywhere, without it):
        POSITIVE, NONNEG, NONZERO or None. A small forward analysis: constants,
        exp, squares, sums of such, and the conditions of the branches that lead to
        ``where`` (``if (t != 0)``, ``if (n > 1e-4)``)."""
        key = (v, where)
        if key in self._signs:
            return self._signs[key]
        self._signs[key] = None  # cycles (through block arguments) prove nothing
        out = self._sign_of(v)
        if where is not None:
            out = _meet(out, self._facts_at(where).get(v))
        self._signs[key] = out
        return out

    def _facts_at(self, b: Block) -> dict[SSAValue, str]:
        """What the branch conditions on the way to ``b`` say about float values: for
        each block dominating ``b`` entered by one edge only, the condition of the
        branch that takes that edge holds."""
        if b in self._facts:
            return self._facts[b]
        facts: dict[SSAValue, str] = {}
        d: Block | None = b
        while d is not None and d in self.cfg.preds:
            edges = self.cfg.preds[d]
            if len(edges) == 1:
                term = edges[0].src.last_op
                if isinstance(term, llvm.CondBrOp) and term.then_block is not term.else_block:
                    for v, sign in _branch_facts(term.cond, holds=edges[0].slot == 0):
                        facts[v] = _meet(facts.get(v), sign)
            d = self.cfg.idom.get(d)
        self._facts[b] = facts
        return facts

    def _sign_of(self, v: SSAValue) -> str | None:
        if isinstance(v, BlockArgument) or not isinstance(v.owner, Operation):
            return None
        op = v.owner
        here = op.parent_block()
        if self.ctx.flavor.is_constant(op):
            value = getattr(op, "value", None)
            x = value.value.data if isinstance(value, FloatAttr) else None
            return None if x is None or x != x else POSITIVE if x > 0 else NONNEG if x == 0 else None
        rule = self.ctx.rule_for(op)
        args = list(op.operands)
        if rule is scalar.MATH["exp"] or rule is scalar.MATH["exp2"] or rule is scalar.MATH["fabs"]:
            return NONNEG  # exp underflows to 0
        if rule is scalar.MATH["sqrt"]:
            arg = self.sign(args[0], here)
            return arg if arg in (POSITIVE, NONNEG) else None
        if rule is scalar.FMUL:
            return _product_sign(args[0] is args[1], self.sign(args[0], here), self.sign(args[1], here))
        if rule is scalar.FADD:
            return _sum_sign(self.sign(args[0], here), self.sign(args[1], here))
        if rule is scalar.MATH["fma"]:
            return _sum_sign(_product_sign(args[0] is args[1], self.sign(args[0], here), self.sign(args[1], here)),
                             self.sign(args[2], here))
        if rule is scalar.FDIV:
            a, b = self.sign(args[0], here), self.sign(args[1], here)
            return NONNEG if a is not None and b == POSITIVE else None
        if isinstance(op, llvm.SelectOp) or op.name == "arith.select":
            a, b = self.sign(args[1], here), self.sign(args[2], here)
            return a if a == b else NONNEG if a is not None and b is not None else None
        return None

    # ----- values ----------------------------------------------------------------
    def _nonfinite_values(self) -> set[SSAValue]:
        ctx = self.ctx
        ops = self.ops
        # value -> the values it flows into directly (operands to results, sources to
        # destinations of branches and structured ops)
        flows: dict[SSAValue, list[SSAValue]] = {}
        seeds: list[SSAValue] = []
        loads: list[tuple[SSAValue, SSAValue | None]] = []  # (value loaded, pointer)
        stored: list[tuple[SSAValue, SSAValue | None]] = []  # (value written to memory, pointer)
        # whether every write of a float to memory is a store whose pointer says where
        # (no memcpy, no call writing through a pointer): then a load reads a non-finite
        # value only if it may read what such a store wrote
        tracked = ctx.flavor.name == "llvm"

        def edge(src: SSAValue, dst: SSAValue) -> None:
            flows.setdefault(src, []).append(dst)

        def passes_through(op: Operation) -> None:
            for o in op.operands:
                for r in op.results:
                    edge(o, r)

        for op in ops:
            for dst, src in value_flow(op):
                edge(src, dst)
            if op.successors:
                for succ, operands in zip(op.successors, ctx.flavor.successor_operands(op)):
                    for arg, v in zip(succ.args, operands):
                        edge(v, arg)
            kind = memory_kind(op)
            if kind not in _TRACKED_KINDS or (kind is None and _may_write_memory(ctx, op)):
                tracked = False
            if kind == "load":
                loads.append((op.results[0], op.operands[0]))
            elif op.name == "memref.load":
                loads.append((op.results[0], None))
            elif kind == "store":
                stored.append((op.operands[0], op.operands[1]))
            elif op.name == "memref.store":
                stored.append((op.operands[0], None))
            elif kind is not None or not op.results:
                continue
            elif ctx.flavor.is_constant(op):
                seeds += [r for r in op.results if _nonfinite_constant(op)]
            elif isinstance(rule := ctx.rule_for(op), ScalarRule):
                if self.singular_value(op, rule):
                    seeds += list(op.results)
                else:
                    passes_through(op)
            elif ctx.defined_function(op) is not None or (rule is None and ctx.flavor.callee(op) is not None):
                # a call left in place, or a declared function without a rule: its
                # results may be anything
                seeds += [r for r in op.results if _may_hold_float(r)]
            else:
                passes_through(op)
        # the function's arguments are finite by assumption: nothing seeds them

        found: set[SSAValue] = set()
        work = list(seeds)
        while True:
            while work:
                v = work.pop()
                if v not in found:
                    found.add(v)
                    work += flows.get(v, [])
            # memory may hold a non-finite value: the loads that may read it (all of them,
            # unless every write is tracked and the pointers' objects tell them apart)
            written = [p for v, p in stored if v in found]
            if not written:
                return found
            work = [v for v, p in loads if v not in found and (not tracked or self._may_read(p, written))]
            if not work:
                return found

    def _may_read(self, ptr: SSAValue | None, written: list[SSAValue | None]) -> bool:
        """Whether a load through ``ptr`` may read memory a store through one of the
        ``written`` pointers wrote: their objects (analysis.memory.pointer_roots) may be
        one, as in autodiff/written_memory (two objects from outside the function are
        apart only when one is a ``noalias`` argument; an allocation made here is apart
        from every other object)."""
        mine = self._roots(ptr)
        if mine is None:
            return True
        for w in written:
            theirs = self._roots(w)
            if theirs is None or any(self._may_share(a, b) for a in mine for b in theirs):
                return True
        return False

    def _roots(self, ptr: SSAValue | None):
        from zymase.analysis.memory import pointer_roots

        if ptr is None:
            return None
        cfg, flavor = self.cfg, self.ctx.flavor

        def incoming(arg: BlockArgument) -> list[SSAValue]:
            return [flavor.successor_operands(e.src.last_op)[e.slot][arg.index] for e in cfg.preds.get(arg.block, [])]

        return pointer_roots(ptr, cfg.blocks[0], incoming)

    def _may_share(self, a, b) -> bool:
        outside = (BlockArgument, str)
        return a is b or (isinstance(a, outside) and isinstance(b, outside) and not (a in self._noalias or b in self._noalias))


    # ----- exposure ----------------------------------------------------------------
    def _single_output(self, prepared, ret_acts) -> tuple[Operation, SSAValue] | None:
        """The one place the program's output leaves the function, as (op, value): the
        return of the only active float result when no float reaches memory outside the
        function's own stack, or else the only such store when it writes straight
        through a pointer argument, outside any loop (Numba's ``retptr``, a C
        ``*out = ...``). None when there are several outputs or it cannot tell."""
        ctx = self.ctx
        entry_args = set(prepared.region.blocks[0].args)
        outside: list[Operation] = []  # writes that may put floats outside the stack frame
        for op in self.ops:
            kind = memory_kind(op)
            if kind == "store":
                if is_float_type(op.operands[0].type) and not _into_alloca(op.operands[1]):
                    outside.append(op)
                elif not is_float_type(op.operands[0].type) and _may_hold_float(op.operands[0]) \
                        and not _into_alloca(op.operands[1]):
                    return None  # an aggregate or vector of floats
            elif kind in ("memcpy", "memset", "memref") or op.name == "memref.store":
                return None
            elif kind is None and ctx.flavor.callee(op) is not None and not isinstance(ctx.rule_for(op), ScalarRule):
                # a call that may write floats through its pointer operands or elsewhere
                if any(isinstance(o.type, llvm.LLVMPointerType) for o in op.operands) or ctx.call_writes_unseen(op):
                    return None
        active = [(v, a) for v, a in zip(prepared.returned, ret_acts) if a.is_active]
        ret = prepared.exit.last_op
        if active:
            if len(active) == 1 and is_float_type(active[0][0].type) and not outside:
                return ret, active[0][0]
            return None
        if len(outside) != 1:
            return None
        store = outside[0]
        if store.operands[1] not in entry_args or store.parent_block() in prepared.cfg.in_cycle:
            return None
        return store, store.operands[0]

    def _exposed(self, sink: tuple[Operation, SSAValue]) -> set[SSAValue]:
        """The values whose non-finiteness must reach the output: each time one is
        computed, uses that always follow carry it into another such value or into the
        output. A greatest fixpoint: assume all, drop those not carried."""
        exposed = {v for v in self.nonfinite if is_float_type(v.type)}
        changed = True
        while changed:
            changed = False
            for v in list(exposed):
                home = _defining_block(v)
                if not self._carried(v, home, home, sink, exposed, {}):
                    exposed.discard(v)
                    changed = True
        return exposed

    def _carried(self, v: SSAValue, block: Block, home: Block, sink, exposed: set[SSAValue],
                 memo: dict[Block, bool | None]) -> bool:
        """Whether, once control is in ``block`` with ``v`` computed (in ``home``), a
        non-finite ``v`` is sure to be carried on: by a use in ``block``, or on every
        edge leaving it (passed into an exposed block argument, or carried in a block
        only reached through ``home``). A use elsewhere may be skipped (the other side
        of a branch); a path back to ``home`` computes ``v`` again first (the next
        iteration), so it does not carry this value. Programs that do not return have
        no derivative to protect: every path is taken to leave the loops it enters."""
        if block in memo:
            # None: on the current path, an inner loop (not through home, so v is not
            # computed again): going around it decides nothing, its exits decide
            return memo[block] is not False
        memo[block] = None
        memo[block] = found = self._carried_from(v, block, home, sink, exposed, memo)
        return found

    def _carried_from(self, v, block, home, sink, exposed, memo) -> bool:
        for use in v.uses:
            op = use.operation
            if op.parent_block() is block and not op.successors and self._carries(use, v, sink, exposed):
                return True
        term = block.last_op
        if term is None or not term.successors:
            return False
        for succ, operands in zip(term.successors, self.ctx.flavor.successor_operands(term)):
            if any(o is v and arg in exposed for arg, o in zip(succ.args, operands)):
                continue
            if succ is not home and self.cfg.dominates(home, succ) \
                    and self._carried(v, succ, home, sink, exposed, memo):
                continue
            return False
        return True

    def _carries(self, use, v: SSAValue, sink: tuple[Operation, SSAValue], exposed: set[SSAValue]) -> bool:
        """Whether ``use`` of ``v`` (not a branch) passes a non-finite ``v`` on to an
        exposed value or is the output."""
        op = use.operation
        sink_op, sink_value = sink
        if op is sink_op:
            return v is sink_value and (memory_kind(op) != "store" or use.index == 0)
        rule = self.ctx.rule_for(op)
        if rule is None or op.regions or len(op.results) != 1 or op.results[0] not in exposed:
            return False
        return _preserves(rule, use.index)


#: memory kinds (analysis.memory.memory_kind) whose float writes are stores the analysis
#: sees with their pointers; any other (memcpy, realloc, BLAS calls, memref) may copy a
#: non-finite value anywhere
_TRACKED_KINDS = frozenset({None, "load", "store", "derive", "select", "global", "alloca", "malloc", "calloc",
                            "nrt_alloc", "free", "memset", "refcount"})


def _may_write_memory(ctx, op: Operation) -> bool:
    """Whether ``op``, which the memory model does not know, is a call that may write
    memory: a defined function that stores (``Context.writes_memory``: not the norm a
    loop divides by), or a declared one given a pointer or writing memory it is not
    given (``Context.call_writes_unseen``); not an intrinsic that only marks lifetimes or
    scopes."""
    if ctx.flavor.callee(op) is None or isinstance(ctx.rule_for(op), ScalarRule):
        return False
    callee = ctx.defined_function(op)
    if callee is not None:
        return ctx.writes_memory(callee)
    if isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(
            ("llvm.lifetime.", "llvm.experimental.noalias.scope.decl", "llvm.assume")):
        return False
    return any(isinstance(o.type, llvm.LLVMPointerType) for o in op.operands) or ctx.call_writes_unseen(op)


def _noalias_arguments(prepared, fn: Operation | None) -> set[SSAValue]:
    """The entry arguments of the prepared body of function ``fn`` that are ``noalias``
    parameters (``restrict`` in C)."""
    from zymase.analysis.memory import args_marked

    if not isinstance(fn, llvm.FuncOp):
        return set()
    args = prepared.region.blocks[0].args
    return {args[i] for i in args_marked(fn, "llvm.noalias") if i < len(args)}


def _defining_block(v: SSAValue) -> Block | None:
    return v.block if isinstance(v, BlockArgument) else v.owner.parent_block()


def _into_alloca(ptr: SSAValue) -> bool:
    """Whether ``ptr`` points into a stack slot of the function (GEPs followed)."""
    while not isinstance(ptr, BlockArgument) and isinstance(ptr.owner, llvm.GEPOp):
        ptr = ptr.owner.operands[0]
    return not isinstance(ptr, BlockArgument) and isinstance(ptr.owner, llvm.AllocaOp)


def _preserves(rule, index: int) -> bool:
    """Whether the op of ``rule`` is infinite or NaN when its operand ``index`` is,
    whatever the other operands: a non-finite operand of a sum, product or square root
    stays visible in the result. A quotient hides its divisor (x / inf = 0), so only
    the dividend counts."""
    if rule is scalar.FDIV:
        return index == 0
    return rule in (scalar.FADD, scalar.FSUB, scalar.FMUL, scalar.FNEG, scalar.FCONV, scalar.MATH["fma"],
                    scalar.MATH["sqrt"])


def _implies(sign: str | None, need: str) -> bool:
    """Whether a value of ``sign`` meets the requirement ``need`` (rules' regular_if)."""
    if sign is None:
        return False
    return sign == need or sign == POSITIVE or (need == NONZERO and sign == NONZERO)


def _meet(a: str | None, b: str | None) -> str | None:
    """Both facts at once: at least 0 and not 0 is greater than 0."""
    if a is None or b is None:
        return a or b
    if a == b:
        return a
    return POSITIVE if {a, b} in ({NONNEG, NONZERO}, {POSITIVE, NONNEG}, {POSITIVE, NONZERO}) else a


# fcmp predicates: what ``v <pred> c`` says of v when it holds, for a constant c, by
# the sign of c (">0", "=0"); negated predicates for the branch not taken
_GT = {"ogt", "ugt", "oge", "uge"}


def _branch_facts(cond: SSAValue, *, holds: bool):
    """(value, sign) facts that ``cond`` being ``holds`` establishes, for conditions
    ``fcmp pred v, c`` with a constant ``c`` (or ``c, v``)."""
    op = getattr(cond, "owner", None)
    if not isinstance(op, llvm.FCmpOp):
        return []
    from xdsl.dialects.llvm import FCmpPredicateFlag

    pred = str(FCmpPredicateFlag.from_int(op.predicate.value.data).value)
    lhs, rhs = op.operands
    c = _float_constant(rhs)
    v = lhs
    if c is None:
        c, v = _float_constant(lhs), rhs
        pred = _SWAPPED.get(pred, pred)
    if c is None:
        return []
    if not holds:
        pred = _NEGATED.get(pred)
        if pred is None:
            return []
    if pred in ("one", "une") and c == 0.0:
        return [(v, NONZERO)]
    if pred in ("ogt", "ugt") and c >= 0.0 or pred in ("oge", "uge") and c > 0.0:
        return [(v, POSITIVE)]
    if pred in ("oge", "uge") and c == 0.0:
        return [(v, NONNEG)]
    if pred in ("olt", "ult") and c <= 0.0 or pred in ("ole", "ule") and c < 0.0:
        return [(v, NONZERO)]
    return []


_SWAPPED = {"ogt": "olt", "olt": "ogt", "oge": "ole", "ole": "oge", "ugt": "ult", "ult": "ugt", "uge": "ule",
            "ule": "uge"}
# not (v pred c), for v not NaN (finite inputs)
_NEGATED = {"oeq": "une", "ueq": "one", "one": "ueq", "une": "oeq", "ogt": "ule", "ugt": "ole", "oge": "ult",
            "uge": "olt", "olt": "uge", "ult": "oge", "ole": "ugt", "ule": "ogt"}


def _float_constant(v: SSAValue) -> float | None:
    op = getattr(v, "owner", None)
    value = getattr(op, "value", None) if isinstance(op, Operation) and op.name in (
        "llvm.mlir.constant", "arith.constant") else None
    return value.value.data if isinstance(value, FloatAttr) else None


def _product_sign(square: bool, a: str | None, b: str | None) -> str | None:
    if square:
        return a if a == POSITIVE else NONNEG
    if a is None or b is None:
        return None
    return POSITIVE if a == b == POSITIVE else NONNEG


def _sum_sign(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return None
    return POSITIVE if POSITIVE in (a, b) else NONNEG


def _may_hold_float(v: SSAValue) -> bool:
    """Floats, and aggregates or vectors that may contain them (not integers, pointers
    or indices)."""
    return is_float_type(v.type) or not isinstance(v.type, (IntegerType, IndexType, llvm.LLVMPointerType))


def _nonfinite_constant(op: Operation) -> bool:
    value = getattr(op, "value", None)
    if not is_a(value, FloatAttr):
        return False
    x = value.value.data
    return x != x or x in (float("inf"), float("-inf"))
