"""Pieces shared by the forward and reverse generators: preparing a private copy of
the primal function, the activity query, and the signatures of derivative functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from zymase.analysis.activity import ActivityInfo, analyze
from zymase.analysis.memory import TAPE_POOL, initializer_symbols, inline_asm_may_access_memory
from zymase.analysis.cfg import CFG
from zymase.analysis.scf import nested_blocks
from zymase.autodiff.flavor import Emitter, Flavor, is_differentiable_type
from zymase.autodiff.registry import REGISTRY, Rule, load_all_rules
from zymase.autodiff.rules.blas_signatures import is_blas_or_lapack, supported_names
from zymase.autodiff.annotated_calls import mark_of, rule_for_marked
from zymase.autodiff.library_refusals import sort_or_search_refusal, text_into_shadowed_refusal
from zymase.autodiff.type_rules import is_float_vector, shadow_types
from zymase.autodiff.flavor import intrinsic_base
from zymase.autodiff.names import ABANDON, ABANDONED, SHADOW_ARGS, SHADOW_LANES
from zymase.errors import ZymaseError
from zymase.ir import (
    ArrayAttr, Attribute, Block, IntegerAttr, IntegerType, Operation, Region, SSAValue, UnitAttr, VectorType,
    is_float_type, llvm, location_of,
)
from zymase.ir import enzyme as ez
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

    def defined_function(self, op: Operation) -> Operation | None:
        name = self.flavor.callee(op)
        if name is None:
            return None
        fop = self.driver.lookup_function(name)
        if fop is None or mark_of(fop) is not None or name in TAPE_POOL:
            # marked inactive, function_like or allocator, or the tape pool (analysis/memory):
            # called, not differentiated
            return None
        if not fop.body.blocks:
            # a declared function with a registered derivative is differentiated by it
            from zymase.autodiff.custom import has_custom_rule

            return fop if has_custom_rule(fop) else None
        return fop

    def rule_for(self, op: Operation) -> Rule | None:
        rule = REGISTRY.lookup(op)
        if rule is not None:
            return rule
        if isinstance(op, llvm.CallIntrinsicOp):
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
    region = fop.body.clone()
    if flavor.name == "llvm":
        # a byval parameter the body writes to must stay the callee's own copy
        from zymase.transforms.byval_copies import copy_byval_params

        copy_byval_params(fop, region.blocks[0], flavor.successor_operands)
        # C++: the paths on which nothing throws are differentiated (an exception thrown
        # in the derivative ends the program: transforms/exceptions.guard_derivatives)
        from zymase.transforms.exceptions import lower_invokes

        lower_invokes(region)
        # Calls that pass or return pointers are inlined, so their memory effects are
        # differentiated in program order (recursive callees, which cannot be inlined, are split
        # into augmented forward and reverse functions instead: Driver.split).
        from zymase.analysis.memory import is_pointer
        from zymase.autodiff.custom import has_custom_rule
        from zymase.transforms.inline import inline_calls
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
                    or bool(ctx.reads_globals(callee))),
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
    _reject_unsupported(ctx, fop, region, act, arg_acts)
    if flavor.name != "llvm":
        from zymase.analysis.float_bits import refuse_float_bits_returning

        refuse_float_bits_returning(blocks, act, function_name(fop))
    if flavor.name == "llvm":  # (after the refusals that name a construct in the user's terms)
        refuse_integer_addresses_of_active_memory(blocks, act, lambda a: memory._incoming.get(a, ()),
                                                  flavor.successor_operands, function_name(fop))
        refuse_returned_pointers_to_active_memory(
            blocks, act, flavor.successor_operands,
            lambda op: _differentiated_body(ctx, op), function_name(fop))
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
        return any(isinstance(op, llvm.CallOp) and op.callee is not None
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


def _reject_unsupported(ctx: Context, fop: Operation, region: Region, act: ActivityInfo, arg_acts) -> None:
    """Refuse, with a clear error, programs whose derivative this engine would get
    wrong (aggregates of active floats, active memory passed to calls it cannot see
    through), instead of returning a wrong derivative."""
    fname = function_name(fop)
    shadowed_globals = {op.global_name.root_reference.data for block in nested_blocks(region) for op in block.ops
                        if isinstance(op, llvm.AddressOfOp) and op.results[0] in act.shadowed}
    for block in nested_blocks(region):
        for op in block.ops:
            callee = ctx.defined_function(op) if shadowed_globals and isinstance(op, llvm.CallOp) else None
            if callee is not None and (read := ctx.reads_globals(callee) & shadowed_globals):
                # a call left after inlining (a recursive one) reads a global that holds
                # derivatives here. Its derivative is built from its own operands' activity
                # and does not reach the caller's shadow of that global: with no active
                # operand its result is taken as constant, and with one (an active double,
                # an active pointer) the global's derivatives are still dropped
                from zymase.transforms.lower_tape import GLOBAL_TAPE

                if GLOBAL_TAPE in read:  # the derivative of a recursive function, differentiated again
                    from zymase.autodiff.names import primal_of

                    primal = primal_of(function_name(callee))
                    primal_fop = ctx.driver.lookup_function(primal)
                    raise ZymaseError(
                        f"cannot differentiate the derivative of the recursive function '{primal}' again: "
                        "its derivative keeps its tape in a global buffer shared by its recursive calls, "
                        "which a second differentiation cannot follow",
                        construct=describe(op),
                        function=primal,
                        # (the call is the derivative's own, without a line: the recursive
                        # function's first line is the user's)
                        location=location_of(op) or next(
                            (loc for o in (primal_fop.walk() if primal_fop is not None else ())
                             if (loc := location_of(o))), None),
                        hint=f"write '{primal}' as a loop (an explicit stack), or take only first derivatives "
                        "through it",
                    )
                from zymase.transforms.numba_parfor import ParforSerial, is_parfor

                if is_parfor(callee):
                    # a prange loop's gufunc is kept outlined (not recursive): the serial
                    # copy of the function inlines the loop body, and the global with it
                    raise ParforSerial("a prange loop reading a global that holds active data",
                                       function=fname, location=location_of(op))
                raise ZymaseError(
                    f"'{function_name(callee)}' reads the global '{sorted(read)[0]}', which holds active data, "
                    "but is called (not inlined: it is recursive); its derivative would not reach the "
                    "global's derivatives",
                    construct=describe(op),
                    function=fname,
                    location=location_of(op),
                    hint="pass the global's data to the function as a pointer argument",
                )
            if isinstance(op, (ez.PushOp, ez.PopOp)) or (
                    isinstance(op, ez.InitOp) and isinstance(op.result.type, ez.CacheType)):
                # the LIFO tape of a loop reversed on the MLIR CFG path, in a derivative
                # (inlined here) that is differentiated again
                raise ZymaseError(
                    f"'{fname}' holds the tape of a derivative reversed on the CFG path ('{op.name}'): "
                    "a derivative that keeps a LIFO tape cannot be differentiated again",
                    construct=op.name,
                    function=fname,
                    location=location_of(op),
                    hint="differentiate on the structured path (zymase-opt -p enzyme, "
                    "zymase.mlir.compile(structured_ad=True)) with the loops written as scf.for",
                )
            if op.dialect_name() == "enzyme" and op.name != "enzyme.ignore_derivatives":
                # (ignore_derivatives has its zero rule, rules/enzyme_ops.py)
                # a derivative request, or a generated derivative's accumulators and
                # caches: no rule moves derivatives through them (their values would
                # be taken as constant, a zero derivative)
                raise ZymaseError(
                    f"'{fname}' holds '{op.name}': differentiating a function that itself "
                    "differentiates (or a derivative zymase generated) is not supported on this path",
                    construct=op.name,
                    function=fname,
                    location=location_of(op),
                    hint="nest the requests instead: __enzyme_autodiff/__enzyme_fwddiff calls in C, "
                    "enzyme.autodiff/enzyme.fwddiff ops in MLIR (the inner one is differentiated first)",
                )
            if any(o in act.varied for o in op.operands) and _touches_float_vectors(op) and not _vector_safe(ctx, op):
                raise ZymaseError(
                    f"an active vector of floats reaches '{describe(op)}'; zymase differentiates "
                    "vectors only through lane-wise arithmetic (fadd, fsub, fmul, fdiv, fneg, fma, sqrt, "
                    "fabs, min/max, select, fpext/fptrunc), extractelement, insertelement, shufflevector, "
                    "loads, stores and the float _Complex functions",
                    construct=describe(op),
                    function=fname,
                    location=location_of(op),
                    hint="write this step on the vector's elements (v[0], v[1], ...)",
                )
            if any(o in act.varied for o in op.operands) and any(
                _holds_floats(r.type) and not is_differentiable_type(r.type) for r in op.results
            ):
                raise ZymaseError(
                    f"an active value flows into a {op.results[0].type} (a struct, array or vector); "
                    "differentiating aggregates is not supported yet",
                    construct=describe(op),
                    function=fname,
                    location=location_of(op),
                    hint="return or pass the scalars separately, or compile so the optimizer splits the aggregate",
                )
            if any(o in act.shadowed for o in op.operands) and any(
                isinstance(r.type, (llvm.LLVMStructType, llvm.LLVMArrayType)) and not is_differentiable_type(r.type)
                for r in op.results
            ):
                # the shadow would have to travel inside the aggregate: refuse rather
                # than lose the derivative
                callee = ctx.defined_function(op) if isinstance(op, llvm.CallOp) else None
                from zymase.llvm.demangle import demangle  # (C++ names; only on this error path)

                what = (f"'{demangle(function_name(callee))}' (recursive, so not inlined) returns a struct or array value "
                        "that may hold a pointer to the active memory it is given" if callee is not None else
                        "a pointer to active memory is put into a struct or array value")
                raise ZymaseError(
                    f"{what}; shadows of pointers inside aggregates are not supported yet",
                    construct=describe(op),
                    function=fname,
                    location=location_of(op),
                    hint="optimize before differentiating (SROA/instcombine split such aggregates), "
                    "or pass the pointer separately",
                )
            back = _float_bits_made_float_again(op, act, ctx.flavor)
            if isinstance(back, llvm.StoreOp):
                raise ZymaseError(
                    f"the bits of an active float are stored to memory in pieces (as an "
                    f"i{back.value.type.width.data} integer); zymase moves derivatives through whole "
                    "floating-point values only and would lose this one",
                    construct=describe(op),
                    function=fname,
                    location=location_of(back) or location_of(op),
                    hint="store whole values (doubles, structs) instead of byte pieces; where this is "
                    "std::vector::insert of a variable, insert a copy of it (v.insert(pos, T(x)))",
                )
            if back is not None:
                raise ZymaseError(
                    "the bits of an active float are read as an integer, changed by integer "
                    "arithmetic and made a float again; zymase moves derivatives through float "
                    "operations only and would return a wrong one",
                    construct=describe(op),
                    function=fname,
                    location=location_of(back) or location_of(op),
                    hint="write the computation with float operations (nextafter, ldexp, frexp, "
                    "copysign, fabs, sqrt) instead of bit manipulation",
                )
            moved = _float_aggregate_access(op, act)
            if moved is not None:
                # its derivative would be lost: loads and stores move derivatives only for
                # scalar types (a vectorized loop in the input, or a struct copied whole)
                raise ZymaseError(
                    f"a {moved} is {'loaded from' if isinstance(op, llvm.LoadOp) else 'stored to'} memory "
                    "that holds derivatives; only scalar loads and stores of floating-point values "
                    "are differentiated",
                    construct=describe(op),
                    function=fname,
                    location=location_of(op),
                    hint="differentiate scalar code: remove `#pragma clang loop vectorize(...)` and vector "
                    "types from it (zymase vectorizes the derivative after AD)",
                )
            lost = next((r.type for r in op.results if _untracked_float(r.type)), None)
            if lost is not None and any(o in act.varied for o in op.operands):
                # the derivative would silently stop here: the type has no rules
                raise ZymaseError(
                    f"an active value is converted to {lost}, a floating-point type zymase does not "
                    "differentiate (__float128)",
                    construct=describe(op),
                    function=fname,
                    location=location_of(op),
                    hint="compute in double or float",
                )
            if inline_asm_may_access_memory(op):
                raise ZymaseError(
                    "inline assembly that may read or write memory cannot be differentiated: zymase "
                    "cannot see which memory it changes",
                    construct=describe(op),
                    function=fname,
                    location=location_of(op),
                    hint="move the assembly out of the function being differentiated (into its caller), "
                    "or write it in C",
                )
            unsupported = _unsupported_on_active(op, act)
            if unsupported:
                indirect = isinstance(op, llvm.CallOp) and op.callee is None
                raise ZymaseError(
                    f"{unsupported} on active data cannot be differentiated"
                    + (": no function of this type has its address taken in this file, so zymase "
                       "cannot tell which functions it may call" if indirect else ""),
                    construct=describe(op),
                    function=fname,
                    location=location_of(op),
                    hint="call the function directly, or take the addresses of the functions it may call "
                    "in this file" if indirect else "keep this construct away from the values being differentiated",
                )
            text_error = text_into_shadowed_refusal(ctx, op, act)
            if text_error is not None:
                text_error.function = fname
                raise text_error
            if _variadic_definition(ctx, op) and any(o in act.varied or o in act.shadowed for o in op.operands):
                raise ZymaseError(
                    f"active data is passed to the variadic function '{ctx.flavor.callee(op)}', whose "
                    "derivative zymase cannot build (the values it reads with va_arg have no shadows)",
                    construct=describe(op),
                    function=fname,
                    location=location_of(op),
                    hint="give the function fixed parameters, or pass the values in an array",
                )
            if _active_into_pointer_writer(ctx, op, act):
                raise ZymaseError(
                    f"no derivative rule for external function '{ctx.flavor.callee(op)}', which is passed "
                    "an active value and may write results through its pointer arguments",
                    construct=describe(op),
                    function=fname,
                    location=location_of(op),
                    hint="define the function in the same file, or pass it only values that are not "
                    "differentiated",
                )
            if _inactive_writer_of_shadowed(ctx, op, act):
                raise ZymaseError(
                    f"memory holding active data is passed to '{ctx.flavor.callee(op)}', which is marked "
                    "inactive and may write to it: the derivatives kept for that memory would not match "
                    "the values the call writes",
                    construct=describe(op),
                    function=fname,
                    location=location_of(op),
                    hint="pass the inactive function copies of the data it writes, or remove the inactive mark",
                )
            mpi_error = _mpi_refusal(ctx, op, act)
            if mpi_error is not None:
                mpi_error.function = fname
                raise mpi_error
            if any(o in act.shadowed for o in op.operands) and _opaque_call(ctx, op):
                if is_blas_or_lapack(ctx.flavor.callee(op) or ""):
                    raise ZymaseError(
                        f"no derivative rule for the BLAS/LAPACK routine '{ctx.flavor.callee(op)}', which is "
                        "passed memory holding active data",
                        construct=describe(op),
                        function=fname,
                        location=location_of(op),
                        hint=f"zymase differentiates these BLAS routines at the level of the call: "
                        f"{supported_names()}; call one of them, or keep this call off the active data",
                    )
                sort_or_search = sort_or_search_refusal(ctx.flavor.callee(op) or "")
                if sort_or_search is not None:
                    message, hint = sort_or_search
                    raise ZymaseError(message, construct=describe(op), function=fname,
                                      location=location_of(op), hint=hint)
                from zymase.llvm.demangle import compiled_library_hint  # (only on this error path)

                callee = describe(op).split('@')[-1]
                raise ZymaseError(
                    f"memory holding active data is passed to '{callee}', whose derivative zymase cannot build",
                    construct=describe(op),
                    function=fname,
                    location=location_of(op),
                    hint=compiled_library_hint(callee) or "define the function in the same file, or copy the "
                    "data it needs into local variables",
                )


def _mpi_refusal(ctx: Context, op: Operation, act: ActivityInfo) -> ZymaseError | None:
    """The error for an MPI call without a rule that touches active data or moves
    floating-point data (autodiff/rules/mpi.py), if ``op`` is one."""
    name = ctx.flavor.callee(op) if isinstance(op, llvm.CallOp) else None
    if not name or not name.startswith(("MPI_", "PMPI_")):
        return None
    from zymase.autodiff.rules.mpi import refusal

    return refusal(op, name, any(o in act.varied or o in act.shadowed for o in op.operands))


def _float_bits_made_float_again(op: Operation, act: ActivityInfo, flavor: Flavor) -> Operation | None:
    """For a bitcast of an active float to an integer: the op (a bitcast back to a float)
    that its bits reach through integer arithmetic, if any (``i = bits(x); i += 1;
    x = float(i)``, the fast inverse square root), or a store of a narrower piece of them
    (SROA stores a copied double as an i8 and an i56). Such a value depends on x, but the
    engine sees no float operation in between and would give it derivative 0. Bits that
    are only compared (a sign or NaN test) or that round-trip unchanged (folded away
    before AD, transforms/integer_copies.py) are fine. The round trip through memory
    (load the bits as an integer, change them, store them over the float) is refused where
    the store is differentiated: autodiff/memory.ShadowCode._refuse_float_bits_arithmetic."""
    if not isinstance(op, llvm.BitcastOp) or op.operands[0] not in act.varied:
        return None
    if not isinstance(op.results[0].type, IntegerType):
        return None
    for use in integer_flow(op.results[0], flavor):
        user = use.operation
        if isinstance(user, llvm.BitcastOp) and is_float_like(user.results[0].type):
            return user
        if (isinstance(user, llvm.StoreOp) and use.index == 0 and isinstance(user.value.type, IntegerType)
                and user.value.type.width.data != op.results[0].type.width.data):
            return user  # a piece of the bits stored (SROA's i8 + i56 of a copied double)
    return None


def is_int_like(t) -> bool:
    """An integer or a vector of integers (the bits of floats as SSE code moves them)."""
    return isinstance(t, IntegerType) or (isinstance(t, VectorType) and isinstance(t.element_type, IntegerType))


def is_float_like(t) -> bool:
    return is_float_type(t) or is_float_vector(t)


def integer_flow(start: SSAValue, flavor: Flavor):
    """The uses an integer's bits reach, through integer operations (on vectors of
    integers too: Eigen's packet abs() is an ``and <2 x i64>`` with the sign mask) and
    branches (block arguments): each use is yielded; the results of its op are followed
    unless it is a compare, a store, a call or a bitcast to a float or a float vector
    (where the bits leave integers)."""
    seen: set[SSAValue] = set()
    work: list[SSAValue] = [start]
    while work:
        value = work.pop()
        if value in seen:
            continue
        seen.add(value)
        for use in value.uses:
            user = use.operation
            yield use
            if user.successors:  # a branch passing the integer to block arguments
                for successor, operands in zip(user.successors, flavor.successor_operands(user)):
                    work.extend(arg for arg, passed in zip(successor.args, operands) if passed is value)
                continue
            if isinstance(user, (llvm.ICmpOp, llvm.StoreOp, llvm.CallOp)) or (
                    isinstance(user, llvm.BitcastOp) and is_float_like(user.results[0].type)):
                continue
            work.extend(r for r in user.results if is_int_like(r.type))


def _active_into_pointer_writer(ctx: Context, op: Operation, act: ActivityInfo) -> bool:
    """An external call without a derivative rule that receives an active value and a
    pointer it may write through (``polar(t, &out)``, like libm's sincos): what it stores
    there depends on the active value, but the engine sees no store, so the loads after it
    would carry a zero derivative."""
    from zymase.analysis.memory import is_pointer, may_write_through_arguments

    if not isinstance(op, llvm.CallOp) or not _opaque_call(ctx, op) or ctx.rule_for(op) is not None:
        return False
    if not any(o in act.varied for o in op.operands) or not any(is_pointer(o) for o in op.operands):
        return False
    return may_write_through_arguments(ctx.driver.lookup_function(ctx.flavor.callee(op)))


def _differentiated_body(ctx: Context, op: Operation) -> bool:
    """Whether call ``op`` is of a function whose own body zymase differentiates (not a
    registered derivative, not a marked function)."""
    from zymase.autodiff.custom import has_custom_rule

    callee = ctx.defined_function(op)
    return callee is not None and bool(callee.body.blocks) and not has_custom_rule(callee)


def _marked_callee(ctx: Context, op: Operation) -> Operation | None:
    """The callee of ``op`` when it is a defined function marked inactive or function_like."""
    name = ctx.flavor.callee(op) if isinstance(op, llvm.CallOp) else None
    fop = ctx.driver.lookup_function(name) if name else None
    mark = mark_of(fop) if fop is not None and fop.body.blocks else None
    return fop if mark is not None and mark[0] in ("inactive", "like") else None


def _inactive_writer_of_shadowed(ctx: Context, op: Operation, act: ActivityInfo) -> bool:
    """A marked function given a pointer to memory with shadows, which its body may write."""
    fop = _marked_callee(ctx, op)
    return (fop is not None and any(o in act.shadowed for o in op.operands)
            and _writes_beyond_locals(ctx, fop, set()))


def _writes_beyond_locals(ctx: Context, fop: Operation, seen: set) -> bool:
    """Whether a defined function may write memory other than its own stack slots (the
    locals of an unoptimized body are allocas): stores through arguments or globals,
    memory primitives, calls that may write."""
    from zymase.analysis.memory import memory_kind

    if fop in seen:
        return False
    seen.add(fop)
    for op in fop.walk():
        kind = memory_kind(op)
        if kind == "store" and _local_slot(op.ptr):
            continue
        if kind in ("store", "memcpy", "memset", "free", "realloc", "call_rule") or inline_asm_may_access_memory(op):
            return True
        callee = ctx.defined_function(op) or _marked_callee(ctx, op)
        if callee is not None and _writes_beyond_locals(ctx, callee, seen):
            return True
        if callee is None and isinstance(op, llvm.CallOp) and kind is None and ctx.call_writes_unseen(op):
            return True
    return False


def _local_slot(ptr) -> bool:
    """A pointer into an alloca of the function (through GEPs)."""
    while isinstance(ptr.owner, llvm.GEPOp):
        ptr = ptr.owner.ptr
    return isinstance(ptr.owner, llvm.AllocaOp)


def _unsupported_on_active(op: Operation, act: ActivityInfo) -> str | None:
    """Constructs whose derivative cannot be built when they touch active data."""
    touches = any(o in act.varied or o in act.shadowed for o in op.operands)
    if not touches and op.name in ("llvm.cmpxchg", "llvm.atomicrmw"):
        # a C11 `_Atomic double` update is a compare-exchange loop on the bits of the
        # double (bitcast to i64): the value moves through integers, the derivative
        # would be lost (zero, silently)
        touches = any(isinstance(o.owner, llvm.BitcastOp) and o.owner.operands[0] in act.varied
                      for o in op.operands)
    if not touches:
        return None
    if isinstance(op, llvm.InlineAsmOp):
        return "inline assembly"
    if isinstance(op, llvm.CallOp) and op.callee is None:
        return "an indirect call through a function pointer"
    if isinstance(op, (llvm.LoadOp, llvm.StoreOp)) and op.ptr in act.shadowed:
        if getattr(op, "volatile_", None) is not None:
            return "a volatile memory access"
        ordering = op.properties.get("ordering")
        value = op.results[0] if isinstance(op, llvm.LoadOp) else op.value
        if ordering is not None and ordering.value.data != 0 and not isinstance(value.type, IntegerType):
            return "an atomic memory access"
    # integer read-modify-writes (C++'s reference counts, which make_shared puts next to
    # active data) change no float and have no derivative
    if op.name == "llvm.cmpxchg" or (op.name == "llvm.atomicrmw" and not isinstance(op.val.type, IntegerType)):
        return "an atomic memory operation"
    return None


def _variadic_definition(ctx: Context, op: Operation) -> bool:
    """A call to a function defined in the module with a ``...`` parameter list: its
    body reads the extra arguments through a ``va_list`` in memory that shadow
    analysis does not follow (calls to external variadic functions, like printf, are
    judged like any external call)."""
    from zymase.transforms.inline import is_variadic

    fop = ctx.defined_function(op)
    return fop is not None and is_variadic(fop)


def _opaque_call(ctx: Context, op: Operation) -> bool:
    """A call whose effect on memory the engine does not model: an external function
    other than the allocators, memcpy/memset, read-only printing and the helpers that
    touch only integers, or a recursive (hence not inlined) defined function."""
    from zymase.analysis.memory import (DEALLOCATED_ARG, INTEGER_ONLY_EXTERNALS, MARKER_INTRINSICS,
                                        READ_ONLY_EXTERNALS, memory_kind)

    if memory_kind(op) is not None:
        return False
    if isinstance(op, llvm.CallIntrinsicOp):
        return not op.intrin.data.startswith(MARKER_INTRINSICS)
    name = ctx.flavor.callee(op)
    if name is None:
        return False
    if ctx.defined_function(op) is not None:
        return False  # differentiated in split mode
    if _marked_callee(ctx, op) is not None:
        return False  # its body is seen: only reads memory it is given (else refused above)
    if DEALLOCATED_ARG in op.attributes:
        return False  # releases a custom allocation (its shadow: ShadowCode.free_deallocated_shadow)
    return name not in READ_ONLY_EXTERNALS and name not in INTEGER_ONLY_EXTERNALS


def _float_aggregate_access(op: Operation, act: ActivityInfo) -> Attribute | None:
    """The type of a vector, struct or array of floats that ``op`` loads from or stores
    to memory with shadows, if it does."""
    if isinstance(op, llvm.LoadOp) and op.ptr in act.shadowed:
        t = op.results[0].type
    elif isinstance(op, llvm.StoreOp) and op.ptr in act.shadowed:
        t = op.value.type
    else:
        return None
    # float structs and arrays carry derivatives (type_rules) and are loaded and stored
    # whole, shadow included; vectors are not
    return t if _holds_floats(t) and not is_differentiable_type(t) else None


# ops whose rules (or whose handling in the engine) work lane by lane on vectors of floats
_VECTOR_SAFE_OPS = frozenset({
    "llvm.fadd", "llvm.fsub", "llvm.fmul", "llvm.fdiv", "llvm.fneg", "llvm.select", "llvm.fpext",
    "llvm.fptrunc", "llvm.extractelement", "llvm.insertelement", "llvm.shufflevector", "llvm.load",
    "llvm.store", "llvm.freeze",
    # a compare of vectors gives a mask (no derivative), read by a lane-wise select
    "llvm.fcmp",
})


def _touches_float_vectors(op: Operation) -> bool:
    from zymase.autodiff.type_rules import is_float_vector

    return any(is_float_vector(v.type) for v in (*op.operands, *op.results))


def _vector_safe(ctx: Context, op: Operation) -> bool:
    """Whether ``op``'s derivative is right when its operands or results are vectors of
    floats: lane-wise ops, terminators (block arguments carry vectors like any value),
    calls of defined functions and calls whose rule says it handles them (the
    ``float _Complex`` functions)."""
    from xdsl.traits import IsTerminator

    if op.name in _VECTOR_SAFE_OPS or op.has_trait(IsTerminator):
        return True
    if ctx.defined_function(op) is not None:
        return True  # the callee's own ops are checked when it is differentiated
    rule = ctx.rule_for(op) if isinstance(op, (llvm.CallOp, llvm.CallIntrinsicOp)) else None
    return bool(getattr(rule, "handles_vectors", False))


def _untracked_float(t: Attribute) -> bool:
    """A scalar floating-point type without derivative rules (fp128; x86_fp80 has them)."""
    from zymase.ir import Float80Type, Float128Type

    return isinstance(t, (Float80Type, Float128Type)) and not is_differentiable_type(t)


def _holds_floats(t: Attribute) -> bool:
    """Whether a type is or contains floating-point values."""
    from zymase.ir import VectorType

    if is_differentiable_type(t):
        return True
    if isinstance(t, (llvm.LLVMStructType,)):
        return any(_holds_floats(x) for x in t.types.data)
    if isinstance(t, llvm.LLVMArrayType):
        return _holds_floats(t.type)
    if isinstance(t, VectorType):
        return is_differentiable_type(t.element_type)
    return False


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
