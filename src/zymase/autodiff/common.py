"""Pieces shared by the forward and reverse generators: preparing a private copy of
the primal function, the activity query, and the signatures of derivative functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from zymase.analysis.activity import ActivityInfo, analyze
from zymase.analysis.memory import TAPE_POOL, initializer_symbols, inline_asm_may_access_memory
from zymase.analysis.cfg import CFG
from zymase.analysis.op_classes import is_a
from zymase.analysis.scf import nested_blocks
from zymase.autodiff.flavor import Emitter, Flavor, is_differentiable_type
from zymase.autodiff.registry import REGISTRY, Rule, load_all_rules
from zymase.autodiff.annotated_calls import mark_of, rule_for_marked
from zymase.autodiff.type_rules import shadow_types
from zymase.autodiff.flavor import intrinsic_base
from zymase.autodiff.names import ABANDON, ABANDONED, SHADOW_ARGS, SHADOW_LANES
from zymase.errors import ZymaseError
from zymase.ir import (
    ArrayAttr, Attribute, Block, IntegerAttr, Operation, Region, SSAValue, UnitAttr, llvm, location_of,
)
from zymase.ir import fast_ops
from zymase.ir.enzyme import Activity

load_all_rules()


def describe(op: Operation) -> str:
    """A short name for an op in error messages (``call @foo`` for calls)."""
    if isinstance(op, llvm.CallIntrinsicOp):
        return f"call @{op.intrin.data}"
    if isinstance(op, llvm.InlineAsmOp):
        template = op.asm_string.data
        return f'asm "{template if len(template) <= 40 else template[:37] + "..."}"'
    callee = getattr(op, "callee", None)
    if callee is not None and hasattr(callee, "root_reference"):
        return f"{op.name} @{callee.root_reference.data}"
    return op.name


def function_name(fop: Operation) -> str:
    return fop.sym_name.data  # type: ignore[attr-defined]


#: the name of the detached function holding a prepared body (Prepared.func); messages
#: about it name the user's function without it
PREPARED_SUFFIX = ".prepared"


@dataclass
class Prepared:
    """A detached copy of the primal body with a single return block."""

    region: Region
    cfg: CFG
    exit: Block
    returned: list[SSAValue]
    activity: ActivityInfo
    func: Operation | None = None  # a detached function op holding ``region``
    #: OpenMP worksharing loops split into chunk edges and interior (transforms/omp_chunks.py),
    #: by the interior copy's induction variable
    chunk_splits: dict = field(default_factory=dict)


class Context:
    """What both generators need: the module, the flavor, the rule lookup and the
    callback that names derivative functions of callees (interprocedural AD)."""

    def __init__(self, module: Operation, flavor: Flavor, driver):
        self.module = module
        self.flavor = flavor
        self.driver = driver
        #: function -> (its passthrough attribute, whether it is marked): _marked
        self._marks: dict[Operation, tuple[Attribute | None, bool]] = {}

    def defined_function(self, op: Operation) -> Operation | None:
        name = self.flavor.callee(op)
        if name is None:
            return None
        fop = self.driver.lookup_function(name)
        if fop is None or self._marked(fop) or name in TAPE_POOL:
            # marked inactive, function_like or allocator, or the tape pool (analysis/memory):
            # called, not differentiated
            return None
        if not fop.body.blocks:
            # a declared function with a registered derivative is differentiated by it
            from zymase.autodiff.custom import has_custom_rule

            return fop if has_custom_rule(fop) else None
        return fop

    def _marked(self, fop: Operation) -> bool:
        """``mark_of(fop) is not None``, read from the function's attributes once: every
        call site asks (defined_function, for every call, in every analysis), and the mark
        is a parse of the function's passthrough list. Kept while that attribute is the
        same object (attributes are immutable: marking a function gives it a new one)."""
        passthrough = fop.properties.get("passthrough")
        known = self._marks.get(fop)
        if known is not None and known[0] is passthrough:
            return known[1]
        marked = mark_of(fop) is not None
        self._marks[fop] = (passthrough, marked)
        return marked

    def rule_for(self, op: Operation) -> Rule | None:
        rule = REGISTRY.lookup(op)
        if rule is not None:
            return rule
        if is_a(op, llvm.CallIntrinsicOp):
            return REGISTRY.by_function.get(intrinsic_base(op.intrin.data))
        name = self.flavor.callee(op)
        if name is not None and self.defined_function(op) is None:
            marked = rule_for_marked(self.driver.lookup_function(name))
            return marked if marked is not None else REGISTRY.by_function.get(name)
        return None

    def call_writes_unseen(self, call: Operation) -> bool:
        """Whether a call to a declared (or indirect) function may write globals or
        escaped memory, beyond what its pointer operands reach: judged by the callee's
        attributes (analysis.memory.may_write_unseen_memory)."""
        from zymase.analysis.memory import INTEGER_ONLY_EXTERNALS, READ_ONLY_EXTERNALS, may_write_unseen_memory

        name = self.flavor.callee(call)
        if name == ABANDON:
            return False  # the reverse sweep never runs after it
        if name in READ_ONLY_EXTERNALS or name in INTEGER_ONLY_EXTERNALS:
            return False  # they write through their pointer operands at most
        marked = self.driver.lookup_function(name) if name else None
        if (mark_of(marked) or ("",))[0] in ("inactive", "like") and marked.body.blocks:
            return self.writes_memory(marked)  # its body says (it is not differentiated)
        if self.rule_for(call) is not None and not (name or "").startswith("lgamma"):
            return False  # a math function: it writes errno at most (lgamma also sets signgam)
        return may_write_unseen_memory(self.driver.lookup_function(name) if name else None)

    def writes_memory(self, fop: Operation) -> bool:
        """Whether a defined function (or one it calls) stores to memory or calls a
        declared function that may write globals, cached."""
        cache = self.__dict__.setdefault("_writes", {})
        if fop not in cache:
            cache[fop] = _writes_memory(self, fop, set())
        return cache[fop]

    def reads_globals(self, fop: Operation) -> frozenset[str]:
        """The global variables a defined function (or one it calls) takes the address
        of, to read them: memory it is not given a pointer to. Its result may then carry
        derivatives that no operand of the call shows (a global written with active data
        by another callee), cached."""
        cache = self.__dict__.setdefault("_reads_globals", {})
        if fop not in cache:
            found: set[str] = set()
            _globals_referenced(self, fop, set(), found)
            cache[fop] = frozenset(found)
        return cache[fop]

    def propagates(self, op: Operation, index: int) -> bool:
        if self.defined_function(op) is not None:
            return is_differentiable_type(op.operands[index].type)
        rule = self.rule_for(op)
        if rule is not None:
            return rule.propagates(op, index)
        if not op.results or not any(is_differentiable_type(r.type) for r in op.results):
            return False
        return is_differentiable_type(op.operands[index].type)


def mark_shadow_args(fn: Operation, positions: Sequence[int], lanes: Sequence[int] | None = None) -> None:
    """Record SHADOW_ARGS (and in vector mode each one's lane, SHADOW_LANES) on an
    LLVM-dialect function (the only kind alias_scopes annotates; MLIR output carries no
    such attribute)."""
    if positions and isinstance(fn, llvm.FuncOp):
        fn.attributes[SHADOW_ARGS] = ArrayAttr([IntegerAttr(i, 64) for i in positions])
        if lanes is not None and max(lanes) > 0:
            fn.attributes[SHADOW_LANES] = ArrayAttr([IntegerAttr(k, 64) for k in lanes])


def prepare(ctx: Context, fop: Operation, arg_acts: Sequence[Activity], ret_acts: Sequence[Activity],
            *, abandon: bool = False, checkpoint: bool = False, split_chunks: bool = False) -> Prepared:
    """Copy the body, merge multiple returns into one exit block, run activity. With
    ``abandon``, returns after a call to ABANDON become ``unreachable`` ops marked
    ABANDONED (the generator turns them back into returns), as long as another return
    remains. With ``split_chunks`` (the combined reverse derivative of an OpenMP region),
    worksharing loops over a stencil are split into their chunk's edges and interior."""
    flavor = ctx.flavor
    chunk_splits = {}
    region = fast_ops.clone_region(fop.body)
    if flavor.name == "llvm":
        # a byval parameter the body writes to must stay the callee's own copy
        from zymase.transforms.byval_copies import copy_byval_params

        copy_byval_params(fop, region.blocks[0], flavor.successor_operands)
        # C++: the paths on which nothing throws are differentiated (an exception thrown
        # in the derivative ends the program: transforms/exceptions.guard_derivatives)
        from zymase.transforms.exceptions import lower_invokes

        lower_invokes(region)
        # Calls that pass or return pointers are inlined, so their memory effects are
        # differentiated in program order, and so are helpers that take or return a float's
        # bits as an integer, so that those bits meet the float ops that undo them
        # (recursive callees, which cannot be inlined, are split into augmented forward and
        # reverse functions instead: Driver.split).
        from zymase.analysis.memory import is_pointer
        from zymase.autodiff.custom import has_custom_rule
        from zymase.transforms.inline import inline_calls
        from zymase.transforms.integer_copies import passes_float_bits
        from zymase.transforms.numba_parfor import is_parfor
        from zymase.transforms.openmp import is_outlined_region

        from zymase.transforms.indirect_calls import dispatch_indirect_calls

        # indirect calls become direct calls of the functions they can reach
        # (transforms/indirect_calls.py), which are inlined in turn; their bodies may
        # hold indirect calls of their own
        for round_ in range(8):
            inline_calls(
                region,
                ctx.defined_function,
                # a function with a registered derivative stays a call (autodiff/custom.py)
                # (a callee reading a global is inlined too: what it reads may hold active data
                # that no operand of the call shows)
                # a parallel region stays a call, to be forked (transforms/openmp.py,
                # transforms/numba_parfor.py)
                lambda call, callee: not has_custom_rule(callee) and not is_outlined_region(callee)
                and not is_parfor(callee) and (
                    any(is_pointer(v) for v in (*call.operands, *call.results)) or ctx.writes_memory(callee)
                    or bool(ctx.reads_globals(callee)) or passes_float_bits(callee)),
            )
            # (bounded: calls through pointers that reach the function making them again
            # are left, and refused below)
            if round_ == 7 or len(region.blocks) > 20000 or not dispatch_indirect_calls(
                    region, ctx.module, function_name(fop)):
                break
        # landing pads of inlined C++ callees whose invokes became calls
        from zymase.transforms.exceptions import remove_unreachable_blocks

        remove_unreachable_blocks(region)
        if is_outlined_region(fop):
            # an OpenMP reduction's combine: a critical section (transforms/openmp.py)
            from zymase.transforms.openmp import reductions_as_critical

            reductions_as_critical(region)
        # boundary iterations peeled off loops: affine addresses in the middle loop
        from zymase.transforms.peel import peel_boundary_iterations

        peel_boundary_iterations(region, flavor, ctx.module)
        if split_chunks and is_outlined_region(fop):
            # a recomputed region's reverse: a stencil's worksharing loop split into its
            # chunk's edges and interior, whose adjoint adds need no atomics
            from zymase.transforms.omp_chunks import split_worksharing_loops

            chunk_splits = split_worksharing_loops(region, flavor, ctx.module)
        # the bits of floats copied through integer loads and stores: memcpys, which
        # move shadow bytes as type analysis says
        from zymase.transforms.integer_copies import expose_float_bits

        expose_float_bits(region)
        # (a + 0x1.8p52) - 0x1.8p52, rounding a to an integer: no derivative
        from zymase.transforms.rounding_shift import stop_rounding_shifts

        stop_rounding_shifts(region, ctx.module)
        # sincos, modf, frexp, remquo: results written through pointers become values and
        # stores (after inlining, so that inlined bodies are covered)
        from zymase.transforms.libm_outputs import expose_libm_outputs

        expose_libm_outputs(region)
        # poison lanes of float vectors (std::complex<float>, vector code) made zeros: a
        # zero adjoint times a poison lane would poison the lanes that matter
        from zymase.transforms.vector_lanes import define_vector_lanes

        define_vector_lanes(region)
        # a pointer taken out of a phi of structs (Numba's copy of a sliced array for
        # np.linalg.svd, qr, ...): a phi of the pointers, which the memory analysis follows
        from zymase.transforms.aggregate_phis import scatter_pointer_extracts

        scatter_pointer_extracts(region, flavor)
        if checkpoint:
            # under a tape limit, time loops become calls reversed by checkpointing
            from zymase.autodiff.checkpoint import outline_time_loops, tape_limit

            if tape_limit() is not None:
                outline_time_loops(ctx, region, fop, arg_acts)
    returns = [b.last_op for b in region.blocks if b.last_op is not None and flavor.is_return(b.last_op)]
    if abandon and flavor.name == "llvm":
        returns = _abandon_failed_returns(region, returns)
    if not returns:
        raise ZymaseError(
            "function never returns",
            function=function_name(fop),
            hint="only functions that return can be differentiated",
        )
    if len(returns) == 1:
        exit_block = returns[0].parent_block()
    else:
        _, outputs = flavor.signature(fop)
        exit_block = Block(arg_types=outputs)
        region.add_block(exit_block)
        E = Emitter(flavor, ctx.module).at_end(exit_block)
        flavor.ret(E, list(exit_block.args), fop)
        for r in returns:
            vals = flavor.return_values(r)
            blk = r.parent_block()
            new = flavor.br(exit_block, vals)
            new.location = r.location
            blk.insert_op_before(new, r)
            blk.erase_op(r)
        # The synthesized ret may have built an aggregate; the returned values are
        # the exit block's arguments.
    ret_op = exit_block.last_op
    returned = list(exit_block.args) if len(returns) > 1 else flavor.return_values(ret_op)
    cfg = CFG.build(region)
    if len(ret_acts) != len(returned):
        raise ZymaseError(
            f"{len(ret_acts)} return activities given for {len(returned)} results",
            function=function_name(fop),
        )
    memory = None
    if flavor.name == "llvm":
        from zymase.analysis.untracked_pointers import (refuse_integer_addresses_of_active_memory,
                                                        refuse_returned_pointers_to_active_memory)
        from zymase.analysis.memory import MemoryModel

        memory = MemoryModel(function_name(fop), list(region.blocks[0].args), arg_acts, ctx.defined_function,
                             ctx.driver.inactive_globals)
    else:
        from zymase.analysis.memref import memref_model

        memory = memref_model(function_name(fop), list(region.blocks[0].args), arg_acts, region)
    # Blocks nested in structured ops (scf regions) are analyzed with the others.
    blocks = nested_blocks(region)
    act = analyze(blocks, arg_acts, list(zip(returned, ret_acts)), ctx.propagates, flavor, memory)
    if flavor.name == "llvm":
        memory.refuse_addresses_in_initializers(blocks, act, ctx.driver.symbols)
    from zymase.autodiff.refusals import reject_unsupported

    reject_unsupported(ctx, fop, region, act, arg_acts)
    if flavor.name != "llvm":
        from zymase.analysis.float_bits import refuse_float_bits_returning

        refuse_float_bits_returning(blocks, act, function_name(fop))
    if flavor.name == "llvm":  # (after the refusals that name a construct in the user's terms)
        refuse_integer_addresses_of_active_memory(blocks, act, lambda a: memory._incoming.get(a, ()),
                                                  flavor.successor_operands, function_name(fop))
        refuse_returned_pointers_to_active_memory(
            blocks, act, flavor.successor_operands,
            lambda op: differentiated_body(ctx, op), function_name(fop))
    holder = None
    if flavor.name == "llvm":
        # Analyses that work on functions (type analysis) see the prepared body
        # through a detached function op that is never added to the module.
        holder = llvm.FuncOp(function_name(fop) + PREPARED_SUFFIX, fop.function_type, body=region)
        if "passthrough" in fop.properties:  # what a front end says about the arguments
            holder.properties["passthrough"] = fop.properties["passthrough"]
    return Prepared(region, cfg, exit_block, returned, act, holder, chunk_splits)


def _abandon_failed_returns(region: Region, returns: list[Operation]) -> list[Operation]:
    """A block that calls ABANDON and then only returns (directly or through blocks
    that only branch on) ends instead in an ``unreachable`` marked ABANDONED. Returns
    the returns still reachable; nothing changes if none would be."""

    def abandons(block: Block) -> bool:
        return any(is_a(op, llvm.CallOp) and op.callee is not None
                   and op.callee.root_reference.data == ABANDON for op in block.ops)

    def only_returns(term: Operation) -> bool:
        seen = set()
        while isinstance(term, llvm.BrOp) and term.successor not in seen:
            seen.add(term.successor)
            if term.successor.first_op is not term.successor.last_op:
                return False
            term = term.successor.last_op
        return isinstance(term, llvm.ReturnOp)

    failed = [b for b in region.blocks if abandons(b) and only_returns(b.last_op)]
    if not failed:
        return returns
    # the returns still reachable once the failed blocks stop there
    seen, work = set(), [region.blocks[0]]
    while work:
        b = work.pop()
        if b in seen:
            continue
        seen.add(b)
        if b not in failed:
            work.extend(b.last_op.successors)
    kept = [r for r in returns if r.parent_block() in seen and r.parent_block() not in failed]
    if not kept:
        return returns
    for b in failed:
        stop = llvm.UnreachableOp()
        stop.attributes[ABANDONED] = UnitAttr()
        stop.location = b.last_op.location
        b.insert_op_before(stop, b.last_op)
        b.erase_op(b.last_op)
    return kept


def differentiated_body(ctx: Context, op: Operation) -> bool:
    """Whether call ``op`` is of a function whose own body zymase differentiates (not a
    registered derivative, not a marked function)."""
    from zymase.autodiff.custom import has_custom_rule

    callee = ctx.defined_function(op)
    return callee is not None and bool(callee.body.blocks) and not has_custom_rule(callee)


def _writes_memory(ctx: Context, fop: Operation, seen: set) -> bool:
    """Whether a defined function, or one it calls, writes memory: stores, memory
    primitives (memcpy, memset, free), calls to declared functions that may write."""
    from zymase.analysis.memory import memory_kind

    if fop in seen:
        return False
    seen.add(fop)
    for op in fop.walk():
        kind = memory_kind(op)
        if kind in ("store", "memcpy", "memset", "free", "realloc", "call_rule") or inline_asm_may_access_memory(op):
            return True
        callee = ctx.defined_function(op)
        if callee is not None and _writes_memory(ctx, callee, seen):
            return True
        if callee is None and isinstance(op, llvm.CallOp) and kind is None and ctx.call_writes_unseen(op):
            return True
    return False


def _globals_referenced(ctx: Context, fop: Operation, seen: set, found: set[str]) -> None:
    """Add to ``found`` the global variables whose address a defined function, or one
    it calls, takes."""
    if fop in seen or not fop.body.blocks:
        return
    seen.add(fop)
    symbols = ctx.driver.symbols
    for op in fop.walk():
        if isinstance(op, llvm.AddressOfOp):
            _add_global(symbols, op.global_name.root_reference.data, found)
        callee = ctx.defined_function(op)
        if callee is not None:
            _globals_referenced(ctx, callee, seen, found)


def _add_global(symbols, name: str, found: set[str]) -> None:
    """Add global ``name`` to ``found``, with the globals whose addresses its initializer
    holds (a constant ``{buf, n}`` copied into a struct reads ``buf`` through it)."""
    glob = symbols.get(name)
    if isinstance(glob, llvm.GlobalOp) and name not in found:
        found.add(name)
        for held in initializer_symbols(glob):
            _add_global(symbols, held, found)


def derivative_follows(a: Activity, *, forward: bool) -> bool:
    """Whether a derivative parameter follows the primal one in a derivative function's
    inputs: the shadow of a dup argument; in forward mode also an active one's tangent."""
    return a.is_dup or (forward and a.is_active)


def rev_signature(inputs: Sequence[Attribute], outputs: Sequence[Attribute], arg_acts, ret_acts, width: int = 1,
                  tensor_lanes: bool = False):
    """Signature of a reverse-mode derivative function.

    Inputs: each primal argument, followed by its shadow when dup; then one seed per
    active result. Outputs: the primal results that are needed, then the derivative
    of each active argument (Enzyme-MLIR's convention for ``enzyme.autodiff``). In
    vector mode (``width`` > 1) each shadow, seed and derivative is ``width`` of them
    (``tensor_lanes``: one ``tensor<width x T>`` of them, Enzyme-MLIR's batched types)."""
    lanes = _lanes_as_tensor if tensor_lanes and width > 1 else shadow_types
    ins: list[Attribute] = []
    for t, a in zip(inputs, arg_acts):
        ins.append(t)
        if derivative_follows(a, forward=False):
            ins += lanes(t, width)
    for t, a in zip(outputs, ret_acts):
        if a.is_active:
            ins += lanes(t, width)
    outs = [t for t, a in zip(outputs, ret_acts) if a.needs_primal]
    outs += [s for t, a in zip(inputs, arg_acts) if a.is_active for s in lanes(t, width)]
    return ins, outs


def _lanes_as_tensor(t: Attribute, width: int) -> list[Attribute]:
    """The ``width`` shadows of a scalar ``t`` as one ``tensor<width x T>`` (the
    enzyme pass converts to and from the lanes, transforms/batch.py); a memref's (or
    pointer's) shadows stay ``width`` separate ones: no tensor holds memrefs."""
    from zymase.ir import MemRefType, TensorType

    if isinstance(t, (MemRefType, llvm.LLVMPointerType)):
        return shadow_types(t, width)
    return [TensorType(shadow_types(t, 1)[0], [width])]


def fwd_signature(inputs, outputs, arg_acts, ret_acts, width: int = 1, tensor_lanes: bool = False):
    """Signature of a forward-mode derivative function: each argument followed by its
    tangent when dup/active; per result the primal (unless *noneed) then the tangent.
    In vector mode (``width`` > 1) each tangent is ``width`` tangents, one per lane
    (``tensor_lanes``: one ``tensor<width x T>``, as in :func:`rev_signature`)."""
    lanes = _lanes_as_tensor if tensor_lanes and width > 1 else shadow_types
    ins: list[Attribute] = []
    for t, a in zip(inputs, arg_acts):
        ins.append(t)
        if derivative_follows(a, forward=True):
            ins += lanes(t, width)
    outs: list[Attribute] = []
    for t, a in zip(outputs, ret_acts):
        if a.needs_primal:
            outs.append(t)
        if not a.is_const:
            outs += lanes(t, width)
    return ins, outs


def no_rule_error(op: Operation, fname: str) -> ZymaseError:
    """The error for an active op without a derivative rule."""
    what = describe(op)
    if " @" in what:
        return ZymaseError(
            f"no derivative rule for external function '{what.split(' @')[1]}'",
            construct=what,
            function=fname,
            location=location_of(op),
            hint="define the function in the same module, or mark the argument enzyme_const",
        )
    return ZymaseError(
        f"no derivative rule for '{what}'",
        construct=what,
        function=fname,
        location=location_of(op),
        hint="this operation cannot be differentiated yet; keep it off the active path",
    )
