"""What the engine refuses before it differentiates a function: constructs whose
derivative it would get wrong (aggregates of active floats, active memory passed where
shadow analysis cannot follow it, inline assembly, float bits moved through integers,
vectors reaching ops without lane-wise rules, ...), each refused with one error naming
the construct, the function and the source line. ``reject_unsupported`` runs on the
prepared copy of every function the engine differentiates (``common.prepare``)."""

from __future__ import annotations

from zymase.analysis.activity import ActivityInfo
# (at module level: the refusals ask for them at every op of the function)
from zymase.analysis.memory import (DEALLOCATED_ARG, INTEGER_ONLY_EXTERNALS, MARKER_INTRINSICS, READ_ONLY_EXTERNALS,
                                    inline_asm_may_access_memory, is_pointer, may_write_through_arguments, memory_kind)
from zymase.analysis.scf import nested_blocks
from zymase.autodiff.common import Context, describe, function_name
from zymase.autodiff.flavor import Flavor, is_differentiable_type
from zymase.autodiff.mantissa_flow import mantissa_mask, varying_bits
from zymase.autodiff.rules.blas_signatures import is_blas_or_lapack, supported_names
from zymase.autodiff.annotated_calls import mark_of
from zymase.autodiff.library_refusals import (boxed_for_python_refusal, calls_python_code, sort_or_search_refusal,
                                              text_into_shadowed_refusal)
from zymase.autodiff.type_rules import is_float_vector
from zymase.errors import ZymaseError
from zymase.ir import Attribute, IntegerType, Operation, Region, SSAValue, VectorType, is_float_type, llvm, location_of
from zymase.ir import enzyme as ez
from zymase.transforms.inline import is_variadic
from zymase.analysis.op_classes import is_a

def reject_unsupported(ctx: Context, fop: Operation, region: Region, act: ActivityInfo, arg_acts) -> None:
    """Refuse, with a clear error, programs whose derivative this engine would get
    wrong (aggregates of active floats, active memory passed to calls it cannot see
    through), instead of returning a wrong derivative."""
    fname = function_name(fop)
    shadowed_globals = {op.global_name.root_reference.data for block in nested_blocks(region) for op in block.ops
                        if is_a(op, llvm.AddressOfOp) and op.results[0] in act.shadowed}
    calls_python, unboxes = calls_python_code(ctx, (op for block in nested_blocks(region) for op in block.ops))
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
            if is_a(op, (ez.PushOp, ez.PopOp)) or (
                    is_a(op, ez.InitOp) and is_a(op.result.type, ez.CacheType)):
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
                is_a(r.type, (llvm.LLVMStructType, llvm.LLVMArrayType)) and not is_differentiable_type(r.type)
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
            if is_a(back, llvm.StoreOp):
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
            if back is not None and back.name in _INT_TO_FLOAT:
                raise ZymaseError(
                    "the bits of an active float are read as an integer that keeps bits of its "
                    f"mantissa, and that integer is converted to a number ('{back.name}'); it moves with "
                    "the float, but integers carry no derivative and zymase would return a wrong one",
                    construct=describe(back),
                    function=fname,
                    location=location_of(back) or location_of(op),
                    hint="compute the number with float operations (log2, frexp, ldexp) instead of from the "
                    "bits; the exponent or sign bits alone ((bits >> 52) & 0x7ff, bits >> 63) are fine",
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
            made = _rounded_into_mantissa(op, act, ctx.flavor)
            if made is not None:
                raise ZymaseError(
                    "an integer rounded from an active float becomes the mantissa bits of a float "
                    "(a bit-level approximation, such as Schraudolph's exp): the float moves with the "
                    "active value in steps of its last bits, which zymase would differentiate as a "
                    "constant",
                    construct=describe(made),
                    function=fname,
                    location=location_of(made) or location_of(op),
                    hint="compute the value with float operations (exp, exp2, ldexp with an integer "
                    "exponent); an integer shifted into the exponent field only (k << 52) is fine",
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
                    f"differentiate ({'__bf16' if str(lost) == 'bf16' else '__float128'})",
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
            if text_error is None and calls_python:
                text_error = boxed_for_python_refusal(ctx, op, act, unboxes)
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
    name = ctx.flavor.callee(op) if is_a(op, llvm.CallOp) else None
    if not name or not name.startswith(("MPI_", "PMPI_")):
        return None
    from zymase.autodiff.rules.mpi import refusal

    return refusal(op, name, any(o in act.varied or o in act.shadowed for o in op.operands))


def _float_bits_made_float_again(op: Operation, act: ActivityInfo, flavor: Flavor) -> Operation | None:
    """For a bitcast of an active float to an integer: the op (a bitcast back to a float)
    that its bits reach through integer arithmetic, if any (``i = bits(x); i += 1;
    x = float(i)``, the fast inverse square root), or a store of a narrower piece of them
    (SROA stores a copied double as an i8 and an i56), or a conversion to a float
    (``sitofp``/``uitofp``) of an integer that keeps mantissa bits (autodiff/mantissa_flow). Such a value depends on x, but the
    engine sees no float operation in between and would give it derivative 0. Bits that
    are only compared (a sign or NaN test) or that round-trip unchanged (folded away
    before AD, transforms/integer_copies.py) are fine. The round trip through memory
    (load the bits as an integer, change them, store them over the float) is refused where
    the store is differentiated: autodiff/memory.ShadowCode._refuse_float_bits_arithmetic."""
    if not is_a(op, llvm.BitcastOp) or op.operands[0] not in act.varied:
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
    # the bits converted to a number: wrong where they keep mantissa bits (a "fast log2",
    # (double)bits * 0x1p-52), right where only exponent or sign bits are left
    masks = None
    for use in integer_flow(op.results[0], flavor):
        user = use.operation
        if user.name in _INT_TO_FLOAT and is_float_like(user.results[0].type):
            masks = masks if masks is not None else varying_bits(op.results[0], flavor)
            if masks.get(user.operands[0], 0):
                return user
    return None


_INT_TO_FLOAT = ("llvm.sitofp", "llvm.uitofp")


def _rounded_into_mantissa(op: Operation, act: ActivityInfo, flavor: Flavor) -> Operation | None:
    """For a conversion of an active float to an integer (``fptosi``/``fptoui``): the
    bitcast to a float that puts the integer's bits into that float's mantissa, if any
    (autodiff/mantissa_flow)."""
    if op.name not in ("llvm.fptosi", "llvm.fptoui") or op.operands[0] not in act.varied:
        return None
    result = op.results[0]
    if not isinstance(result.type, IntegerType):
        return None
    masks = None
    for use in integer_flow(result, flavor):
        user = use.operation
        if isinstance(user, llvm.BitcastOp) and is_float_type(user.results[0].type):
            masks = masks if masks is not None else varying_bits(result, flavor, (1 << result.type.width.data) - 1)
            if masks.get(user.operands[0], 0) & mantissa_mask(user.results[0].type):
                return user
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
    if not is_a(op, llvm.CallOp) or not _opaque_call(ctx, op) or ctx.rule_for(op) is not None:
        return False
    if not any(o in act.varied for o in op.operands) or not any(is_pointer(o) for o in op.operands):
        return False
    return may_write_through_arguments(ctx.driver.lookup_function(ctx.flavor.callee(op)))




def _marked_callee(ctx: Context, op: Operation) -> Operation | None:
    """The callee of ``op`` when it is a defined function marked inactive or function_like."""
    name = ctx.flavor.callee(op) if is_a(op, llvm.CallOp) else None
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
    if is_a(op, llvm.InlineAsmOp):
        return "inline assembly"
    if is_a(op, llvm.CallOp) and op.callee is None:
        return "an indirect call through a function pointer"
    if is_a(op, (llvm.LoadOp, llvm.StoreOp)) and op.ptr in act.shadowed:
        if getattr(op, "volatile_", None) is not None and not _local_slot(op.ptr):
            # (a volatile local, which compensated sums use to keep the compiler from
            # reassociating, is a stack slot like any other: its shadow is one too)
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
    fop = ctx.defined_function(op)
    return fop is not None and is_variadic(fop)


def _opaque_call(ctx: Context, op: Operation) -> bool:
    """A call whose effect on memory the engine does not model: an external function
    other than the allocators, memcpy/memset, read-only printing and the helpers that
    touch only integers, or a recursive (hence not inlined) defined function."""
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
    if is_a(op, llvm.LoadOp) and op.ptr in act.shadowed:
        t = op.results[0].type
    elif is_a(op, llvm.StoreOp) and op.ptr in act.shadowed:
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
    """A scalar floating-point type without derivative rules (fp128, bfloat; x86_fp80 has
    them). ``(double)(__bf16)y`` is an fptrunc to bfloat and an fpext back: without this
    the derivative stopped there, silently (session 34)."""
    # (by class, once: asked of every result of every op; analysis/op_classes.py)
    return is_a(t, _UNTRACKED_FLOAT_CLASSES) and not is_differentiable_type(t)


def _untracked_float_classes() -> tuple[type, ...]:
    from xdsl.dialects.builtin import BFloat16Type
    from zymase.ir import Float80Type, Float128Type

    return (Float80Type, Float128Type, BFloat16Type)


_UNTRACKED_FLOAT_CLASSES = _untracked_float_classes()


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
