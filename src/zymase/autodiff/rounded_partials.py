"""Which primal values the reverse sweep reads behind an arithmetic fence.

Every adjoint sum carries ``reassoc nsz`` (``flavor.Emitter.accumulate``: reductions in
reverse loops vectorize), and LLVM takes an add's ``reassoc`` as leave to reassociate
with its operands' own adds whatever their flags (InstCombine's FAddCombine looks one
level into each operand, InstSimplify folds ``(X - Y) + Y`` to ``X``, the code
generator ``fma(a, b, c) + d`` to ``fma(a, b, c + d)``). A partial that is a primal sum
becomes an operand of an adjoint sum as soon as the adjoint it multiplies folds to a
constant (the seed 1 of a returned value, a shadow the caller set to 1), and then lost
its rounding: ``k = rint(a)`` written ``(a + C) - C`` met the seed and became ``a``, the
weight ``x - y`` met ``y`` and became ``x`` (sessions 34, 35). Such a partial is read
behind ``llvm.arithmetic.fence``, which no fold looks through. Arith code is read alike:
the std flavor's accumulations carry ``fastmath<reassoc,nsz>``, which the lowering to
LLVM keeps, and its fence is the LLVM dialect's call of the same intrinsic.

The fence also stops the loop vectorizer (it is not an intrinsic it can widen: ode's
and fft's gradients took 1.9x and 1.6x the instructions with a fence on every such
partial), so once the sweep is built (``RoundedPartials.finish``) it is replaced by
``llvm.canonicalize``, which the vectorizer widens (a multiplication by 1.0 per element),
where no adjoint the partial multiplies can fold to a nonzero constant in the loop as
written: where each depends, through arithmetic, cells and block arguments, on memory read
at an address that changes with a loop's iteration (a shadow element, or a primal value
computed from one), unless a second term into the same adjoint multiplies the same adjoint
(LLVM factors ``p*d + q*d`` into ``(p + q)*d``): those fences stay. Such an adjoint still
folds once LLVM unrolls the loop fully and forwards what the caller stored into the shadow
(four elements seeded with ones: session 36), so the partial is never read bare. Products
and quotients are never fenced: reassociated they move by an ulp, not by a cancellation.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar

from zymase.autodiff.type_rules import is_float_vector
from zymase.analysis.memory import is_marker
from zymase.ir import BlockArgument, Operation, SSAValue, arith, cf, is_float_type, llvm, math, memref, scf
from zymase.ir import enzyme as ez
from zymase.ir.fast_ops import call_intrinsic

# (each in both flavors: the llvm dialect's, and arith/math's, whose fastmath<reassoc> the
# lowering to LLVM keeps)
_SUMS = (llvm.FAddOp, llvm.FSubOp, arith.AddfOp, arith.SubfOp)
_NEGATIONS = (llvm.FNegOp, arith.NegfOp)
_FUSED = ("llvm.fmuladd.", "llvm.fma.")
_PRODUCTS = (llvm.FMulOp, arith.MulfOp)
_QUOTIENTS = (llvm.FDivOp, arith.DivfOp)
_CONSTANTS = (llvm.ConstantOp, arith.ConstantOp)
_SELECTS = (llvm.SelectOp, arith.SelectOp)
# (the structured loops, whose bodies are regions rather than cycles of the CFG)
_LOOPS = (scf.ForOp, scf.WhileOp, scf.ParallelOp)
# (the structured ops whose results are values their regions yield)
_STRUCTURED = (scf.ForOp, scf.IfOp, scf.WhileOp)
# (the ops whose value is fixed when their operands are: arithmetic and conversions)
_PURE = (*_SUMS, *_NEGATIONS, *_PRODUCTS, *_QUOTIENTS, llvm.FPExtOp, llvm.FPTruncOp, llvm.SIToFPOp,
         llvm.ExtractValueOp, llvm.InsertValueOp, arith.ExtFOp, arith.TruncFOp, arith.SIToFPOp)
# how far back a primal value's expression is followed (primal_varies)
_DEPTH = 48
# what an adjoint may fold to, in increasing order of danger (RoundedPartials._kind)
_ZERO, _VARYING, _CONSTANT = 0, 1, 2
#: whether a fence whose adjoints vary per element becomes ``llvm.canonicalize`` (else it
#: stays): only where zymase's own LLVM runs the post-AD pipeline and then turns every
#: canonicalize back into a fence (``llvm/toolchain.optimize``). The LLVM of a clang
#: before 21 cannot generate code for canonicalize on x86 (clang-19 stops with "Cannot
#: select"), so IR that leaves zymase unoptimized (``zymase opt`` without -O,
#: ``zymase-opt``'s MLIR) keeps the fences, which any LLVM compiles.
_VECTORIZABLE_BARRIERS: ContextVar[bool] = ContextVar("zymase_vectorizable_barriers", default=False)


@contextlib.contextmanager
def vectorizable_barriers(enabled: bool = True):
    """Differentiate with canonicalize in place of the fences the vectorizer should
    widen (see :data:`_VECTORIZABLE_BARRIERS`): for a module that is optimized by
    ``toolchain.optimize`` next and that calls no canonicalize of its own (those would be
    taken for barriers and become fences)."""
    token = _VECTORIZABLE_BARRIERS.set(enabled)
    try:
        yield
    finally:
        _VECTORIZABLE_BARRIERS.reset(token)


def is_rounded_sum(v: SSAValue, _slots: frozenset = frozenset()) -> bool:
    """Whether primal value ``v`` is a float sum, difference or fused multiply-add that
    the program did not allow to reassociate, or the negation of one (``acc + -(a - b)``
    becomes ``acc - (a - b)``; the negation of a product is no more exposed than the
    product), or may become one: a block argument some edge passes one to, a select with
    one on either side (LLVM folds the phi of a loop it unrolls fully into the value of
    its one iteration, a select whose condition the caller fixes into that side)."""
    if not (is_float_type(v.type) or is_float_vector(v.type)):
        return False
    if isinstance(v, BlockArgument) or isinstance(v.owner, _STRUCTURED):
        if v in _slots:  # (a cycle of block arguments: asked already)
            return False
        passed = (_passed_to(v) or ()) if isinstance(v, BlockArgument) else ()
        return any(is_rounded_sum(x, _slots | {v}) for x in [*passed, *_structured_sources(v)])
    op = v.owner
    if isinstance(op, _NEGATIONS):
        return is_rounded_sum(op.operands[0], _slots)
    if isinstance(op, _SELECTS):
        return any(is_rounded_sum(x, _slots) for x in op.operands[1:])
    if isinstance(op, llvm.LoadOp):
        return _holds_rounded_sum(op.operands[0], _slots)
    if isinstance(op, _SUMS):
        flags = op.properties.get("fastmathFlags") or op.properties.get("fastmath")  # (llvm's, arith's)
        return not (flags is not None and any(str(f) in ("reassoc", "fast") for f in flags.data))
    if isinstance(op, math.FmaOp):
        return True
    return isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(_FUSED)


def _holds_rounded_sum(ptr: SSAValue, slots: frozenset) -> bool:
    """Whether a local slot (an alloca, or an element of one) that ``ptr`` points into
    is given a rounded sum by some store: LLVM forwards the sum to the load once it has
    promoted the slot (code differentiated before its locals were, ``--no-preopt``).
    ``slots``: the slots being asked about already (a slot given its own value)."""
    base = _local_slot(ptr)
    if base is None or base in slots:
        return False
    slots = slots | {base}
    addresses, seen = [base], {base}
    while addresses:
        for use in addresses.pop().uses:
            user = use.operation
            if isinstance(user, llvm.GEPOp) and use.index == 0 and user.results[0] not in seen:
                seen.add(user.results[0])
                addresses.append(user.results[0])
            elif isinstance(user, llvm.StoreOp) and use.index == 1 and is_rounded_sum(user.operands[0], slots):
                return True
    return False


def _local_slot(ptr: SSAValue) -> SSAValue | None:
    """The alloca ``ptr`` points into (through GEPs), if any."""
    base = ptr
    while not isinstance(base, BlockArgument) and isinstance(base.owner, llvm.GEPOp):
        base = base.owner.operands[0]
    return None if isinstance(base, BlockArgument) or not isinstance(base.owner, llvm.AllocaOp) else base


def _only_loaded_and_stored(slot: SSAValue) -> bool:
    """Whether every use of local slot ``slot`` (through GEPs) is a load from it or a
    store to it (no call, copy or escape writes its shadow behind the engine's back)."""
    addresses = [slot]
    while addresses:
        for use in addresses.pop().uses:
            user = use.operation
            if isinstance(user, llvm.GEPOp) and use.index == 0:
                addresses.append(user.results[0])
            elif not (isinstance(user, llvm.LoadOp) or (isinstance(user, llvm.StoreOp) and use.index == 1)
                      or is_marker(user)):
                return False
    return True


class RoundedPartials:
    """The fences of one reverse sweep: ``read`` puts every rounded sum read as a partial
    behind one, ``finish`` takes away those whose adjoints (the op's adjoints the
    partial multiplies) cannot fold to a constant, once the whole sweep is known.

    An adjoint may fold unless it depends on a value read from memory at an address that
    changes with a loop's iteration (``loop_variant``: shadow elements, and primal values
    computed from such loads), through arithmetic; a shadow element of a local slot
    (``proj[0]`` of a loop body) holds what the sweep added into it, so it may fold
    when one of those adjoints may. Anything else unknown (a block argument, another
    load, a cell's value, a tape's) may fold."""

    def __init__(self, in_cycle):
        # whether primal value v is computed inside a loop: a cycle of the CFG, or the
        # body of a structured loop (scf.for: the std flavor's structured path)
        self.in_cycle = lambda v: in_cycle(v) or _in_loop_region(v)
        self.loop_variant: set[SSAValue] = set()
        self._slot_reads: dict[SSAValue, SSAValue] = {}
        self._slot_adds: dict[SSAValue, list[SSAValue]] = {}
        self._fences: list[tuple[Operation, list]] = []
        # (target, adjoint) -> how many ops' contributions to target multiply adjoint;
        # fence index -> the (target, adjoint) pairs of the op whose rule read it
        self._shared: dict[tuple, int] = {}
        self._pairs: dict[int, list[tuple]] = {}
        self._varies: dict[SSAValue, bool] = {}
        self._rounded: dict[SSAValue, bool] = {}

    # ---- while the sweep is emitted ----------------------------------------------
    def read(self, E, v: SSAValue, w: SSAValue, dys) -> SSAValue:
        """Primal ``v``, read as ``w`` by the rule of an op with adjoints ``dys`` (None:
        not a rule's partial), as the rule should use it."""
        if self.primal_varies(v):
            self.loop_variant.add(w)
        rounded = self._rounded.get(v)
        if rounded is None:
            rounded = self._rounded[v] = is_rounded_sum(v)
        if not rounded:
            return w
        fenced = E.fence(w)
        if fenced is not w:
            self._fences.append((fenced.owner, None if dys is None else list(dys)))
        return fenced

    def mark(self) -> int:
        """Where the fences of the rule about to run start (for ``contributed``)."""
        return len(self._fences)

    def contributed(self, start: int, targets: list[SSAValue], dys) -> None:
        """The rule whose fences start at ``start`` added to the adjoints of ``targets``
        terms that multiply its op's adjoints ``dys``. Two such terms with the same
        adjoint into one target are factored by LLVM, ``p*d + q*d -> (p + q)*d``, into
        an adjoint sum of the partials themselves (reassociable, so that its ``reassoc``
        reaches into a rounded sum): the fences of such a rule stay, whatever ``d``."""
        pairs = [(_target(t), _unsigned(d)) for t in targets for d in dys if d is not None]
        for pair in pairs:
            self._shared[pair] = self._shared.get(pair, 0) + 1
        for i in range(start, len(self._fences)):
            self._pairs[i] = pairs

    def shadow_read(self, d: SSAValue, ptr: SSAValue) -> None:
        """``d`` was read from the shadow of primal pointer ``ptr`` (a store's adjoint)."""
        if self.in_cycle(ptr):
            self.loop_variant.add(d)
            return
        slot = _local_slot(ptr)
        if slot is not None and _only_loaded_and_stored(slot):
            self._slot_reads[d] = slot

    def shadow_element_read(self, d: SSAValue, indices) -> None:
        """``d`` was read from a shadow memref at primal ``indices`` (a memref.store's
        adjoint): an element that changes with a loop's iteration when an index does."""
        if any(self.in_cycle(i) for i in indices):
            self.loop_variant.add(d)

    def shadow_add(self, ptr: SSAValue, dy: SSAValue) -> None:
        """``dy`` was added into the shadow of primal pointer ``ptr`` (a load's adjoint)."""
        slot = _local_slot(ptr)
        if slot is not None:
            self._slot_adds.setdefault(slot, []).append(dy)

    # ---- once it is ----------------------------------------------------------------
    def finish(self) -> int:
        """Put canonicalize in place of the fences that no adjoint that may fold to a
        nonzero constant in the loop as written meets (:func:`vectorizable_barriers`);
        returns how many fences stay."""
        if not self._fences or not _VECTORIZABLE_BARRIERS.get():
            return len(self._fences)
        kinds = self._kinds([d for _, dys in self._fences for d in dys or () if d is not None])
        kept = 0
        for i, (fence, dys) in enumerate(self._fences):
            if (dys is None or any(d is not None and kinds[d] == _CONSTANT for d in dys)
                    or any(self._shared[pair] > 1 for pair in self._pairs.get(i, ()))):
                kept += 1
            elif fence.parent is not None:
                _vectorizable_barrier(fence)
        return kept

    def _kinds(self, roots: list[SSAValue]) -> dict[SSAValue, int]:
        """What each value ``roots`` depend on may fold to (_ZERO, _VARYING or _CONSTANT:
        a nonzero constant), the least solution: adjoints flow around loops through
        cells, so values are raised from _ZERO until nothing changes."""
        inputs: dict[SSAValue, list[SSAValue]] = {}
        users: dict[SSAValue, list[SSAValue]] = {}
        stack = list(roots)
        while stack:
            v = stack.pop()
            if v in inputs:
                continue
            inputs[v] = self._inputs(v)
            for x in inputs[v]:
                users.setdefault(x, []).append(v)
                stack.append(x)
        kinds = dict.fromkeys(inputs, _ZERO)
        work = list(inputs)
        while work:
            v = work.pop()
            k = self._kind(v, [kinds[x] for x in inputs[v]])
            if k > kinds[v]:
                kinds[v] = k
                work.extend(users.get(v, ()))
        return kinds

    def _inputs(self, v: SSAValue) -> list[SSAValue]:
        """The values whose kinds decide ``v``'s (see _kind)."""
        if v in self.loop_variant:
            return []
        if isinstance(v, BlockArgument):
            return _passed_to(v) or []
        slot = self._slot_reads.get(v)
        if slot is not None:
            return list(self._slot_adds.get(slot, ()))
        op = v.owner
        if isinstance(op, ez.GetOp):
            cell = [use.operation for use in op.gradient.uses]
            if all(isinstance(u, (ez.GetOp, ez.SetOp)) for u in cell):
                return [u.value for u in cell if isinstance(u, ez.SetOp)]
            return []
        if isinstance(op, _SELECTS):
            return list(op.operands[1:])
        if isinstance(op, _PURE) or _is_intrinsic(op):
            return list(op.operands)
        return []

    def _kind(self, v: SSAValue, kinds: list[int]) -> int:
        """``v``'s kind from those of its inputs."""
        if v in self.loop_variant:
            return _VARYING
        if isinstance(v, BlockArgument):  # (what its edges pass; an entry's: a seed, say)
            return max(kinds) if kinds else _CONSTANT
        if v in self._slot_reads:  # (the shadow of a local slot starts at zero)
            return max(kinds, default=_ZERO)
        op = v.owner
        if isinstance(op, _CONSTANTS):
            return _ZERO if _is_zero(op) else _CONSTANT
        if isinstance(op, ez.GetOp):  # a cell: what is set into it, from zero
            cell = op.gradient.uses
            return max(kinds, default=_ZERO) if all(isinstance(u.operation, (ez.GetOp, ez.SetOp)) for u in cell) \
                else _CONSTANT
        if isinstance(op, _SELECTS):  # (either side may be the one taken)
            return max(kinds)
        if isinstance(op, (*_PRODUCTS, *_QUOTIENTS)):
            if kinds[0] == _ZERO or (isinstance(op, _PRODUCTS) and kinds[1] == _ZERO):
                return _ZERO
            return _VARYING if _VARYING in kinds else _CONSTANT
        if isinstance(op, _PURE) or _is_intrinsic(op):
            return _VARYING if _VARYING in kinds else max(kinds, default=_CONSTANT)
        return _CONSTANT

    def primal_varies(self, v: SSAValue, depth: int = 0) -> bool:
        """Whether primal value ``v`` depends on a load from an address computed anew in
        each iteration of a loop (then no constant folding makes it a constant). A
        block argument does when every value its edges pass does."""
        if depth > _DEPTH:
            return False
        found = self._varies.get(v)
        if found is None:
            self._varies[v] = False  # (while found: a cycle through block arguments)
            if isinstance(v, BlockArgument):
                passed = _passed_to(v)
                found = bool(passed) and all(self.primal_varies(x, depth + 1) for x in passed)
            elif isinstance(v.owner, llvm.LoadOp):
                found = self.in_cycle(v.owner.operands[0])
            elif isinstance(v.owner, memref.LoadOp):
                found = any(self.in_cycle(i) for i in v.owner.indices)
            elif isinstance(v.owner, _SELECTS):
                found = all(self.primal_varies(x, depth + 1) for x in v.owner.operands[1:])
            else:  # (arithmetic, conversions, math functions)
                found = any(self.primal_varies(x, depth + 1) for x in v.owner.operands)
            self._varies[v] = found
        return found


def _vectorizable_barrier(fence: Operation) -> None:
    """Put ``llvm.canonicalize`` in place of ``fence``. An adjoint that varies per element
    in the loop as written still folds to a constant once LLVM unrolls the loop fully and
    forwards what the caller stored into the shadow (a seed array of ones, a trip count
    known only after inlining), and the partial's rounding is lost as with a constant
    adjoint: so the sum cannot be read bare. ``canonicalize`` is a barrier the same way
    (a call no add's reassociation looks into; code generation makes it a strict
    multiplication by 1.0, kept by later folds), and the loop vectorizer widens it, which
    it does not do with the fence: a multiplication per element instead of a scalar loop.
    It is ``x`` for every value but a signaling NaN, which it quiets."""
    name = fence.intrin.data.replace("llvm.arithmetic.fence.", "llvm.canonicalize.", 1)
    barrier = call_intrinsic(name, [fence.operands[0]], [fence.results[0].type])
    fence.parent_block().insert_op_before(barrier, fence)
    fence.results[0].replace_all_uses_with(barrier.results[0])
    fence.parent_block().erase_op(fence)


def _in_loop_region(v: SSAValue) -> bool:
    """Whether ``v`` is defined in the body of a structured loop (at any depth)."""
    block = v.block if isinstance(v, BlockArgument) else v.owner.parent_block()
    op = block.parent_op() if block is not None else None
    while op is not None:
        if isinstance(op, _LOOPS):
            return True
        op = op.parent_op()
    return False


def _structured_sources(v: SSAValue) -> list[SSAValue]:
    """The values that become ``v`` when ``v`` is a structured op's result or loop-carried
    block argument: an scf.for's initial value and what its body yields, an scf.if's or
    scf.while's yields (LLVM folds them into one of these once it unrolls the loop or
    fixes the condition)."""
    if isinstance(v, BlockArgument):
        op = v.block.parent_op()
        if isinstance(op, scf.ForOp) and v.index >= 1:  # (argument 0: the induction variable)
            k = v.index - 1
            return [op.iter_args[k], op.body.block.last_op.operands[k]]
        if isinstance(op, scf.WhileOp):  # (either region's: what enters, what loops back)
            return [*op.operands[v.index:v.index + 1], *_yielded(op, v.index)]
        return []
    op, k = v.owner, v.index
    return [*(op.iter_args[k:k + 1] if isinstance(op, scf.ForOp) else ()), *_yielded(op, k)]


def _yielded(op: Operation, k: int) -> list[SSAValue]:
    """The ``k``-th value each region of structured ``op`` ends with (an scf.yield's, or
    the value after an scf.condition's flag)."""
    out = []
    for region in op.regions:
        for block in region.blocks:
            last = block.last_op
            if isinstance(last, scf.YieldOp) and k < len(last.operands):
                out.append(last.operands[k])
            elif isinstance(last, scf.ConditionOp) and k + 1 < len(last.operands):
                out.append(last.operands[k + 1])
    return out


def _passed_to(arg: BlockArgument) -> list[SSAValue] | None:
    """The values the edges into ``arg``'s block pass to it (None: an entry block's
    argument, or an edge neither flavor knows)."""
    from zymase.autodiff.flavor import LLVM, STD

    passed = []
    for pred in arg.block.predecessors():
        term = pred.last_op
        flavor = STD if isinstance(term, (cf.BranchOp, cf.ConditionalBranchOp, cf.SwitchOp)) else LLVM
        for succ, operands in zip(term.successors, flavor.successor_operands(term)):
            if succ is arg.block:
                if len(operands) <= arg.index:
                    return None
                passed.append(operands[arg.index])
    return passed or None


def _is_zero(op: Operation) -> bool:
    """Whether constant ``op`` is a float zero (or a vector of them)."""
    value = op.properties.get("value") or op.attributes.get("value")
    data = getattr(value, "value", None)
    if data is not None and hasattr(data, "data"):
        return data.data == 0.0
    return False


def _is_intrinsic(op: Operation) -> bool:
    return isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith("llvm.")


def _target(v: SSAValue):
    """What an adjoint term for ``v`` is added into: the address ``v`` was loaded from
    (the loads of one element share its shadow), else ``v``'s own adjoint."""
    if not isinstance(v, BlockArgument) and isinstance(v.owner, llvm.LoadOp):
        return v.owner.operands[0]
    return v


def _unsigned(d: SSAValue) -> SSAValue:
    """``d`` without negations (``p*d - q*d`` is factored as well)."""
    while not isinstance(d, BlockArgument) and isinstance(d.owner, _NEGATIONS):
        d = d.owner.operands[0]
    return d
