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
partial), so once the sweep is built (``RoundedPartials.finish``) it is taken away
where no adjoint the partial multiplies can fold to a nonzero constant: where each
depends, through arithmetic, cells and block arguments, on memory read at an address
that changes with a loop's iteration (a shadow element, or a primal value computed
from one). The product with such an adjoint is never an add LLVM can look into,
unless a second term into the same adjoint multiplies the same adjoint (LLVM factors
``p*d + q*d`` into ``(p + q)*d``): those fences stay. Products and quotients are never
fenced: reassociated they move by an ulp, not by a cancellation.
"""

from __future__ import annotations

from zymase.autodiff.type_rules import is_float_vector
from zymase.analysis.memory import is_marker
from zymase.ir import BlockArgument, OpClasses, Operation, SSAValue, is_float_type, llvm
from zymase.ir import enzyme as ez

# (each in both flavors: the llvm dialect's, and arith/math's, whose fastmath<reassoc> the
# lowering to LLVM keeps)
_SUMS = OpClasses(llvm.FAddOp, llvm.FSubOp, "arith.AddfOp", "arith.SubfOp")
_NEGATIONS = OpClasses(llvm.FNegOp, "arith.NegfOp")
_FUSED = ("llvm.fmuladd.", "llvm.fma.")
_FMA = OpClasses("math.FmaOp")
_PRODUCTS = OpClasses(llvm.FMulOp, "arith.MulfOp")
_QUOTIENTS = OpClasses(llvm.FDivOp, "arith.DivfOp")
_CONSTANTS = OpClasses(llvm.ConstantOp, "arith.ConstantOp")
_SELECTS = OpClasses(llvm.SelectOp, "arith.SelectOp")
_MEMREF_LOADS = OpClasses("memref.LoadOp")
# (the structured loops, whose bodies are regions rather than cycles of the CFG)
_LOOPS = OpClasses("scf.ForOp", "scf.WhileOp", "scf.ParallelOp")
# (the ops whose value is fixed when their operands are: arithmetic and conversions)
_PURE = OpClasses(_SUMS, _NEGATIONS, _PRODUCTS, _QUOTIENTS, llvm.FPExtOp, llvm.FPTruncOp, llvm.SIToFPOp,
                  llvm.ExtractValueOp, llvm.InsertValueOp, "arith.ExtFOp", "arith.TruncFOp", "arith.SIToFPOp")
# how far back a primal value's expression is followed (primal_varies)
_DEPTH = 48
# what an adjoint may fold to, in increasing order of danger (RoundedPartials._kind)
_ZERO, _VARYING, _CONSTANT = 0, 1, 2


def is_rounded_sum(v: SSAValue, _slots: frozenset = frozenset()) -> bool:
    """Whether primal value ``v`` is a float sum, difference or fused multiply-add that
    the program did not allow to reassociate, or the negation of one (``acc + -(a - b)``
    becomes ``acc - (a - b)``; the negation of a product is no more exposed than the
    product)."""
    if isinstance(v, BlockArgument) or not (is_float_type(v.type) or is_float_vector(v.type)):
        return False
    op = v.owner
    if isinstance(op, _NEGATIONS):
        return is_rounded_sum(op.operands[0], _slots)
    if isinstance(op, llvm.LoadOp):
        return _holds_rounded_sum(op.operands[0], _slots)
    if isinstance(op, _SUMS):
        flags = op.properties.get("fastmathFlags") or op.properties.get("fastmath")  # (llvm's, arith's)
        return not (flags is not None and any(str(f) in ("reassoc", "fast") for f in flags.data))
    if isinstance(op, _FMA):
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
        """Take away the fences that no adjoint that may fold to a nonzero constant
        meets; returns how many stay."""
        kinds = self._kinds([d for _, dys in self._fences for d in dys or () if d is not None])
        kept = 0
        for i, (fence, dys) in enumerate(self._fences):
            if (dys is None or any(d is not None and kinds[d] == _CONSTANT for d in dys)
                    or any(self._shared[pair] > 1 for pair in self._pairs.get(i, ()))):
                kept += 1
            elif fence.parent is not None:
                fence.results[0].replace_all_uses_with(fence.operands[0])
                fence.parent_block().erase_op(fence)
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
            elif isinstance(v.owner, _MEMREF_LOADS):
                found = any(self.in_cycle(i) for i in v.owner.indices)
            elif isinstance(v.owner, _SELECTS):
                found = all(self.primal_varies(x, depth + 1) for x in v.owner.operands[1:])
            else:  # (arithmetic, conversions, math functions)
                found = any(self.primal_varies(x, depth + 1) for x in v.owner.operands)
            self._varies[v] = found
        return found


def _in_loop_region(v: SSAValue) -> bool:
    """Whether ``v`` is defined in the body of a structured loop (at any depth)."""
    block = v.block if isinstance(v, BlockArgument) else v.owner.parent_block()
    op = block.parent_op() if block is not None else None
    while op is not None:
        if isinstance(op, _LOOPS):
            return True
        op = op.parent_op()
    return False


def _passed_to(arg: BlockArgument) -> list[SSAValue] | None:
    """The values the edges into ``arg``'s block pass to it (None: an entry block's
    argument, or an edge the llvm flavor does not know)."""
    from zymase.autodiff.flavor import LLVM

    passed = []
    for pred in arg.block.predecessors():
        term = pred.last_op
        for succ, operands in zip(term.successors, LLVM.successor_operands(term)):
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
