"""Which primal values the reverse sweep reads behind a barrier to reassociation.

Every adjoint sum carries ``reassoc nsz`` (``flavor.Emitter.accumulate``: reductions in
reverse loops vectorize), and LLVM takes an add's ``reassoc`` as leave to reassociate
with its operands' own adds whatever their flags (InstCombine's FAddCombine looks one
level into each operand, InstSimplify folds ``(X - Y) + Y`` to ``X``, the code
generator ``fma(a, b, c) + d`` to ``fma(a, b, c + d)``). A partial that is a primal sum
becomes an operand of an adjoint sum as soon as the adjoint it multiplies folds to a
constant (the seed 1 of a returned value, a shadow the caller set to 1), and then loses
its rounding: ``k = rint(a)`` written ``(a + C) - C`` met the seed and became ``a``, the
weight ``x - y`` met ``y`` and became ``x`` (sessions 34, 35).

What is a primal sum is known only once LLVM has optimized the derivative where it is
called: the derivative is inlined into its caller, a loop run a known number of times
unrolled, memory forwarded. So a partial is read behind a barrier when it is a sum the
program did not allow to reassociate, or may become one (:func:`is_rounded_sum`): a
parameter (the caller passed ``x - y``), a load from memory a caller or callee may have
written, a call's result, a phi, a select or a structured loop's value that may be one
of those. An adjoint that seems to vary per element folds all the same once the loop is
unrolled and the caller's seed array forwarded (session 36 found each of these wrong:
``dw = x`` for ``(x - y) + y``); so every such partial is read behind a barrier, whatever
it multiplies. Products and quotients are never fenced: reassociated they move by an ulp,
not by a cancellation.

The barrier is ``llvm.arithmetic.fence``, which no fold looks through, in IR that leaves
zymase unoptimized. The fence also stops the loop vectorizer (it is not an intrinsic it
can widen), so where zymase's own LLVM runs the post-AD pipeline next it is
``llvm.canonicalize`` instead (:func:`vectorizable_barriers`), which the vectorizer
widens and no fold looks through either, and which that pipeline's output turns back
into the fence (``toolchain.barriers_to_fences``: free in code generation, and code any
LLVM compiles). Arith code is read alike: the std flavor's accumulations carry
``fastmath<reassoc,nsz>``, which the lowering to LLVM keeps, and its barriers are the
LLVM dialect's calls of the same intrinsics.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar

from zymase.autodiff.type_rules import is_float_vector
from zymase.analysis.memory import is_marker
from zymase.ir import BlockArgument, OpClasses, Operation, SSAValue, is_float_type, llvm, llvm_ext
from zymase.ir.fast_ops import call_intrinsic

# (each in both flavors: the llvm dialect's, and arith/math's, whose fastmath<reassoc> the
# lowering to LLVM keeps)
_SUMS = OpClasses(llvm.FAddOp, llvm.FSubOp, "arith.AddfOp", "arith.SubfOp")
_NEGATIONS = OpClasses(llvm.FNegOp, "arith.NegfOp")
_FUSED = ("llvm.fmuladd.", "llvm.fma.")
_SELECTS = OpClasses(llvm.SelectOp, "arith.SelectOp")
# (values another function computed or memory holds: calls, loads from memrefs, members of
# aggregates and vectors, bits made a float: each may be a sum once LLVM has folded it)
_OPAQUE = OpClasses(llvm.CallOp, "memref.LoadOp", llvm.ExtractValueOp, llvm_ext.ExtractElementOp,
                    llvm.ShuffleVectorOp, llvm.BitcastOp)
# (ops whose value is one of their operands' once LLVM knows more: freeze of a defined
# value, and the intrinsics below; both flavors' absolute value and copysign)
_PASS_THROUGH = OpClasses(llvm_ext.FreezeOp, "math.AbsFOp", "math.CopySignOp")
_PASS_THROUGH_INTRINSICS = tuple(f"llvm.{name}." for name in (
    "fabs", "copysign", "minnum", "maxnum", "minimum", "maximum", "minimumnum", "maximumnum", "arithmetic.fence",
    "canonicalize"))
# (the structured ops whose results are values their regions yield)
_STRUCTURED = OpClasses("scf.ForOp", "scf.IfOp", "scf.WhileOp")
_FOR = OpClasses("scf.ForOp")
_WHILE = OpClasses("scf.WhileOp")
_YIELD = OpClasses("scf.YieldOp")
_CONDITION = OpClasses("scf.ConditionOp")
_FMA = OpClasses("math.FmaOp")
_FUNCTIONS = OpClasses(llvm.FuncOp, "func.FuncOp")
# (the std flavor's branches, whose operands its own flavor reads)
_CF_BRANCHES = OpClasses("cf.BranchOp", "cf.ConditionalBranchOp", "cf.SwitchOp")
#: whether the barriers are ``llvm.canonicalize`` (else fences): only where zymase's own
#: LLVM runs the post-AD pipeline and then turns every canonicalize back into a fence
#: (``llvm/toolchain.optimize``). The LLVM of a clang before 21 cannot generate code for
#: canonicalize on x86 (clang-19 stops with "Cannot select"), so IR that leaves zymase
#: unoptimized (``zymase opt`` without -O, ``zymase-opt``'s MLIR) keeps the fences, which
#: any LLVM compiles (its reverse loops that read such partials stay scalar there).
_VECTORIZABLE_BARRIERS: ContextVar[bool] = ContextVar("zymase_vectorizable_barriers", default=False)


@contextlib.contextmanager
def vectorizable_barriers(enabled: bool = True):
    """Differentiate with canonicalize as the barrier, which the vectorizer widens
    (see :data:`_VECTORIZABLE_BARRIERS`): for a module that is optimized by
    ``toolchain.optimize`` next and that calls no canonicalize of its own (those would be
    taken for barriers and become fences)."""
    token = _VECTORIZABLE_BARRIERS.set(enabled)
    try:
        yield
    finally:
        _VECTORIZABLE_BARRIERS.reset(token)


def is_rounded_sum(v: SSAValue, _seen: set | None = None) -> bool:
    """Whether primal value ``v`` is a float sum, difference or fused multiply-add that
    the program did not allow to reassociate, or the negation of one (``acc + -(a - b)``
    becomes ``acc - (a - b)``; the negation of a product is no more exposed than the
    product), or may become one once LLVM has inlined, unrolled and forwarded: a
    parameter, a load from memory (a local slot: when a store gives it one, or its address
    goes elsewhere), a call's result, a member of an aggregate, a block argument some edge
    passes one to, a select with one on either side, a structured op's result or loop
    argument that may be one, an absolute value, copysign, min or max or freeze of one
    (LLVM folds the phi of a loop it unrolls fully into the value of its one iteration, a
    select whose condition the caller fixes into that side). ``_seen``: the values and
    slots asked about already in this question (a search of the graph, each asked once:
    phis merging phis would otherwise be followed once per path)."""
    if _seen is None:
        _seen = set()
    elif v in _seen:
        return False  # (asked already: its answer is part of the answer being found)
    _seen.add(v)
    if not (is_float_type(v.type) or is_float_vector(v.type)):
        return False
    if isinstance(v, BlockArgument) or isinstance(v.owner, _STRUCTURED):
        if isinstance(v, BlockArgument) and _is_parameter(v):
            return True  # (the caller's value: x - y once the derivative is inlined there)
        passed = (_passed_to(v) or ()) if isinstance(v, BlockArgument) else ()
        return any(is_rounded_sum(x, _seen) for x in [*passed, *_structured_sources(v)])
    op = v.owner
    if isinstance(op, _OPAQUE):
        return True  # (what another function computed: the same, once inlined)
    if isinstance(op, _PASS_THROUGH) or (isinstance(op, llvm.CallIntrinsicOp)
                                         and op.intrin.data.startswith(_PASS_THROUGH_INTRINSICS)):
        return any(is_rounded_sum(x, _seen) for x in op.operands)
    if isinstance(op, _NEGATIONS):
        return is_rounded_sum(op.operands[0], _seen)
    if isinstance(op, _SELECTS):
        return any(is_rounded_sum(x, _seen) for x in op.operands[1:])
    if isinstance(op, llvm.LoadOp):
        # memory the caller or a callee wrote: forwarded once inlined; a local slot (code
        # differentiated before its locals were promoted) by its own stores, unless its
        # address goes elsewhere
        slot = _local_slot(op.operands[0])
        return slot is None or not _only_loaded_and_stored(slot) or _holds_rounded_sum(op.operands[0], _seen)
    if isinstance(op, _SUMS):
        flags = op.properties.get("fastmathFlags") or op.properties.get("fastmath")  # (llvm's, arith's)
        return not (flags is not None and any(str(f) in ("reassoc", "fast") for f in flags.data))
    if isinstance(op, _FMA):
        return True
    return isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(_FUSED)


def _is_parameter(arg: BlockArgument) -> bool:
    """Whether ``arg`` is a function's parameter (its entry block's argument)."""
    return isinstance(arg.block.parent_op(), _FUNCTIONS) and arg.block is arg.block.parent.blocks.first


def _holds_rounded_sum(ptr: SSAValue, seen: set) -> bool:
    """Whether a local slot (an alloca, or an element of one) that ``ptr`` points into
    is given a rounded sum by some store: LLVM forwards the sum to the load once it has
    promoted the slot (code differentiated before its locals were, ``--no-preopt``).
    ``seen``: what :func:`is_rounded_sum` asked about already (a slot given its own value)."""
    base = _local_slot(ptr)
    if base is None or base in seen:
        return False
    seen.add(base)
    addresses, reached = [base], {base}
    while addresses:
        for use in addresses.pop().uses:
            user = use.operation
            if isinstance(user, llvm.GEPOp) and use.index == 0 and user.results[0] not in reached:
                reached.add(user.results[0])
                addresses.append(user.results[0])
            elif isinstance(user, llvm.StoreOp) and use.index == 1 and is_rounded_sum(user.operands[0], seen):
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
    """The barriers of one reverse sweep: ``read`` puts every primal value that is or may
    become a rounded sum, read by a rule, behind a fence; ``finish`` makes the fences
    canonicalize where the module goes through the post-AD pipeline next
    (:func:`vectorizable_barriers`)."""

    def __init__(self):
        self._fences: list[Operation] = []
        self._rounded: dict[SSAValue, bool] = {}

    def read(self, E, v: SSAValue, w: SSAValue) -> SSAValue:
        """Primal ``v``, read as ``w`` by a rule, as the rule should use it."""
        rounded = self._rounded.get(v)
        if rounded is None:
            rounded = self._rounded[v] = is_rounded_sum(v)
        if not rounded:
            return w
        fenced = E.fence(w)
        if fenced is not w:
            self._fences.append(fenced.owner)
        return fenced

    def finish(self) -> int:
        """Once the sweep is built: a fence whose every use only computes something else
        from the value (a math function of it, a comparison, a divisor) goes (those
        results are no sum; the fence would keep LLVM from sharing ``sin(x)`` with the
        primal's); the others become canonicalize where :func:`vectorizable_barriers`
        says so. Returns how many barriers stay."""
        vectorizable, kept = _VECTORIZABLE_BARRIERS.get(), 0
        for fence in self._fences:
            if fence.parent is None:
                continue
            if all(_only_consumes(use) for use in fence.results[0].uses):
                fence.results[0].replace_all_uses_with(fence.operands[0])
                fence.parent_block().erase_op(fence)
                continue
            kept += 1
            if vectorizable:
                _vectorizable_barrier(fence)
        return kept


# (transcendental functions of a value, by intrinsic name and as math ops: their results
# are no sum of the value's terms, whatever LLVM knows of it. Not pow and powi, which fold
# to the value itself at exponent 1 (the partial of x^2 is 2 pow(x, 1)), nor fabs, min,
# max or the rounding functions, which give the value itself where its sign or
# integrality is known)
_MATH_INTRINSICS = tuple(
    f"llvm.{name}." for name in ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
                                 "exp", "exp2", "exp10", "log", "log2", "log10", "sqrt"))
_MATH_OPS = OpClasses("math.SinOp", "math.CosOp", "math.TanOp", "math.AsinOp", "math.AcosOp", "math.AtanOp",
                      "math.Atan2Op", "math.SinhOp", "math.CoshOp", "math.TanhOp", "math.ExpOp", "math.Exp2Op",
                      "math.ExpM1Op", "math.LogOp", "math.Log2Op", "math.Log10Op", "math.Log1pOp", "math.SqrtOp",
                      "math.RsqrtOp", "math.CbrtOp", "math.ErfOp")
_CONSUMERS = OpClasses(llvm.FCmpOp, "arith.CmpfOp", llvm_ext.FPToSIOp, llvm_ext.FPToUIOp, _MATH_OPS)
_DIVISIONS = OpClasses(llvm.FDivOp, "arith.DivfOp")


def _only_consumes(use) -> bool:
    """Whether ``use`` of a partial computes something else from it, which no adjoint sum
    can reassociate into the partial's terms."""
    user = use.operation
    if isinstance(user, _CONSUMERS):
        return True
    if isinstance(user, _DIVISIONS):
        return use.index == 1  # (a divisor)
    if isinstance(user, llvm.CallIntrinsicOp):
        name = user.intrin.data
        return name.startswith(_MATH_INTRINSICS)
    return False


def _vectorizable_barrier(fence: Operation) -> None:
    """Put ``llvm.canonicalize`` in place of ``fence``: a barrier the same way (a call no
    add's reassociation looks into; code generation makes it a strict multiplication by
    1.0, which later folds keep), which the loop vectorizer widens, as it does not the
    fence. It is ``x`` for every value but a signaling NaN, which it quiets; the post-AD
    pipeline's output has the fence again (``toolchain.barriers_to_fences``)."""
    name = fence.intrin.data.replace("llvm.arithmetic.fence.", "llvm.canonicalize.", 1)
    barrier = call_intrinsic(name, [fence.operands[0]], [fence.results[0].type])
    fence.parent_block().insert_op_before(barrier, fence)
    fence.results[0].replace_all_uses_with(barrier.results[0])
    fence.parent_block().erase_op(fence)


def _structured_sources(v: SSAValue) -> list[SSAValue]:
    """The values that become ``v`` when ``v`` is a structured op's result or loop-carried
    block argument: an scf.for's initial value and what its body yields, an scf.if's or
    scf.while's yields (LLVM folds them into one of these once it unrolls the loop or
    fixes the condition)."""
    if isinstance(v, BlockArgument):
        op = v.block.parent_op()
        if isinstance(op, _FOR) and v.index >= 1:  # (argument 0: the induction variable)
            k = v.index - 1
            return [op.iter_args[k], op.body.block.last_op.operands[k]]
        if isinstance(op, _WHILE):  # (either region's: what enters, what loops back)
            return [*op.operands[v.index:v.index + 1], *_yielded(op, v.index)]
        return []
    op, k = v.owner, v.index
    return [*(op.iter_args[k:k + 1] if isinstance(op, _FOR) else ()), *_yielded(op, k)]


def _yielded(op: Operation, k: int) -> list[SSAValue]:
    """The ``k``-th value each region of structured ``op`` ends with (an scf.yield's, or
    the value after an scf.condition's flag)."""
    out = []
    for region in op.regions:
        for block in region.blocks:
            last = block.last_op
            if isinstance(last, _YIELD) and k < len(last.operands):
                out.append(last.operands[k])
            elif isinstance(last, _CONDITION) and k + 1 < len(last.operands):
                out.append(last.operands[k + 1])
    return out


def _passed_to(arg: BlockArgument) -> list[SSAValue] | None:
    """The values the edges into ``arg``'s block pass to it (None: an entry block's
    argument, or an edge neither flavor knows)."""
    from zymase.autodiff.flavor import LLVM, STD

    passed = []
    for pred in arg.block.predecessors():
        term = pred.last_op
        flavor = STD if isinstance(term, _CF_BRANCHES) else LLVM
        for succ, operands in zip(term.successors, flavor.successor_operands(term)):
            if succ is arg.block:
                if len(operands) <= arg.index:
                    return None
                passed.append(operands[arg.index])
    return passed or None


