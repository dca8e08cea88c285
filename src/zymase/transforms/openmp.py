"""OpenMP parallel regions through AD (clang's outlined functions and LLVM's libomp).

clang outlines the body of ``#pragma omp parallel`` into a function
``f(ptr gtid, ptr btid, captured...)`` and starts it on every thread of a team with
``__kmpc_fork_call(ident, n, @f, captured...)``. For the engine a fork call is an
opaque external call; for AD it is a call of ``@f`` on each thread. So, around the
enzyme pass (``frontends/c.differentiate_module``):

- ``outline_parallel_regions`` turns each fork call into a direct call
  ``@f(null, null, captured...)`` that activity, memory and type analysis see through
  (``@f`` is marked ``OUTLINED``, and ``autodiff/common.prepare`` does not inline it);
  ``check_region`` refuses, when a derivative of ``@f`` is asked for, the OpenMP
  constructs the derivative would get wrong;
- the driver marks every derivative of ``@f`` with its ``ROLE``;
- ``restore_parallel_regions`` turns every direct call of an outlined function or of a
  derivative back into a fork call: ``@f`` and its forward derivative are forked as
  they are; the augmented forward sweep (split mode, pushing on the thread-local tape
  ``__zymase_tape``) and the reverse sweep are forked through thread wrappers that give
  each thread a tape slot of its own in a per-call record (the "slots"): the forward
  fork leaves thread t's tape in slot t, the reverse fork (same team size, pushed with
  ``__kmpc_push_num_threads``) gives slot t back to thread t, which pops what it pushed.
  The forking thread pushes the record on its own tape between the two forks (the
  reverse sweep mirrors the forward one; a split-mode call's own tape object carries it
  too). A reverse fork that gets another team size aborts.

Which adjoint updates must be atomic is decided in ``autodiff/parallel.py``.
"""

from __future__ import annotations

from zymase.analysis.memory import memory_kind
from zymase.analysis.op_classes import is_a
from zymase.cache import parsed_mlir
from zymase.errors import ZymaseError
from zymase.ir import (BlockArgument, IntegerAttr, IntegerType, ModuleOp, Operation, StringAttr, SymbolRefAttr,
                       UnitAttr, i32, i64, llvm, llvm_ext, location_of, parse_mlir)
from zymase.ir.walk import walk_ops
from zymase.transforms.inline import is_recursive

FORK_CALL = "__kmpc_fork_call"
OUTLINED = "zymase.omp_outlined"
"""On an outlined function and its derivatives: the name of the fork call's ident_t global."""
ROLE = "zymase.omp_role"
"""On a derivative of an outlined function: ``forward``, ``augmented``, ``reverse``,
``combined`` or ``recomputed`` (a combined derivative the reverse sweep of a caller forks
instead of a split pair: ``autodiff/region_recompute.py``)."""
FORKED = "zymase.omp_forked"
"""On the direct calls ``outline_parallel_regions`` makes of fork calls."""
SERIALIZED = "zymase.omp_serialized"
"""On clang's own direct calls of an outlined function (the serialized path of an ``if``
clause), whose thread-id pointers are placeholders while AD runs. Derivatives of such a
call are forked like the others (inside the serialized region: a team of one thread)."""
THREAD = "zymase.omp_thread"
"""On the thread wrappers this module forks (not regions of the user's)."""

PTR = llvm.LLVMPointerType()

# Calls of the OpenMP runtime inside a region, by what the derivative needs of them.
_EVERYWHERE = {
    "__kmpc_for_static_init_4", "__kmpc_for_static_init_4u", "__kmpc_for_static_init_8",
    "__kmpc_for_static_init_8u", "__kmpc_for_static_fini", "__kmpc_global_thread_num",
    "omp_get_thread_num", "omp_get_num_threads", "omp_get_max_threads", "omp_get_wtime",
}
"""Integer bookkeeping of a static schedule: the tape keeps what each thread got, so its
reverse sweep reverses its own iterations."""
_SYNCHRONIZATION = {
    "__kmpc_barrier", "__kmpc_critical", "__kmpc_end_critical", "__kmpc_single", "__kmpc_end_single",
    "__kmpc_master", "__kmpc_end_master", "__kmpc_masked", "__kmpc_end_masked",
    "__kmpc_reduce_nowait", "__kmpc_end_reduce_nowait",
}
"""Synchronization the derivatives keep: the forward derivative computes tangents next to
the values they follow, inside the same synchronization; the reverse sweep mirrors what
orders adjoint updates (``REVERSE_MIRROR``); a 'reduction' combine becomes a critical
section first (``reductions_as_critical``)."""
REVERSE_MIRROR = {
    "__kmpc_barrier": "__kmpc_barrier",
    "__kmpc_critical": "__kmpc_end_critical",
    "__kmpc_end_critical": "__kmpc_critical",
}
"""What the reverse sweep calls at the mirror of each call: a barrier stays a barrier (the
adjoints of the phase after it are complete before the phase before it is reversed);
a critical section is entered where the forward one was left. A single/master section
needs nothing: the taped branch runs its reverse in the thread that ran it."""
_DYNAMIC_PREFIX = "__kmpc_dispatch_"
_CONSTRUCTS = {
    "__kmpc_reduce": "'reduction' clause on a loop without 'nowait' inside a parallel region",
    "__kmpc_end_reduce": "'reduction' clause on a loop without 'nowait' inside a parallel region",
    "__kmpc_critical_with_hint": "'critical' with a 'hint'",
    "__kmpc_ordered": "'ordered'",
    "__kmpc_end_ordered": "'ordered'",
    "__kmpc_omp_task_alloc": "'task'",
    "__kmpc_omp_task": "'task'",
    "__kmpc_omp_taskwait": "'taskwait'",
    "__kmpc_taskloop": "'taskloop'",
    "__kmpc_taskgroup": "'taskgroup'",
    "__kmpc_copyprivate": "'copyprivate'",
    "__kmpc_flush": "'flush'",
    "__kmpc_push_num_threads": "'parallel' nested",
    FORK_CALL: "'parallel' nested",
    "__kmpc_fork_teams": "'teams'",
}
_HINT = ("zymase differentiates parallel regions with worksharing loops of a static schedule, "
         "'reduction', 'critical', 'single', 'master' and 'barrier' (and, in forward mode, "
         "dynamic schedules); move the construct out of the differentiated code or rewrite it")


def _callee(op: Operation) -> str | None:
    callee = getattr(op, "callee", None)
    return callee.root_reference.data if callee is not None else None


def _functions(module: ModuleOp) -> dict[str, llvm.FuncOp]:
    return {op.sym_name.data: op for op in module.body.block.ops if is_a(op, llvm.FuncOp)}


def is_outlined_region(fop: Operation) -> bool:
    """A function clang outlined from a parallel region (or a derivative of one)."""
    return OUTLINED in fop.attributes


# ---------------------------------------------------------------------- before AD
def outline_parallel_regions(module: ModuleOp) -> int:
    """Every fork call of a defined outlined function becomes a direct call (see the
    module docstring); returns how many."""
    funcs = _functions(module)
    count = 0
    if FORK_CALL not in funcs:  # no call without its declaration: no body to walk
        return count
    for fop in funcs.values():
        if THREAD in fop.attributes:
            continue
        for op in list(walk_ops(fop)):
            if not isinstance(op, llvm.CallOp) or _callee(op) != FORK_CALL:
                continue
            args = list(op.args)
            loc, fn = args[0].owner, args[2].owner
            outlined = funcs.get(fn.global_name.root_reference.data) if isinstance(fn, llvm.AddressOfOp) else None
            if not isinstance(loc, llvm.AddressOfOp) or outlined is None or not outlined.body.blocks:
                raise ZymaseError("a parallel region whose outlined function is not in this module",
                                  construct=f"call @{FORK_CALL}", function=fop.sym_name.data,
                                  location=location_of(op), hint=_HINT)
            if len(outlined.function_type.inputs.data) != len(args) - 1 or THREAD in outlined.attributes:
                continue
            outlined.attributes[OUTLINED] = StringAttr(loc.global_name.root_reference.data)
            block = op.parent_block()
            null = _thread_id_placeholder(op)
            call = llvm.CallOp(outlined.sym_name.data, null, null, *args[3:])
            call.attributes[FORKED] = UnitAttr()
            call.location = op.location
            block.insert_op_before(call, op)
            block.erase_op(op)
            for const in (loc, args[1].owner, fn):
                if isinstance(const, Operation) and not any(r.uses for r in const.results):
                    const.parent_block().erase_op(const)
            count += 1
    # clang's serialized path (an 'if' clause that is false) calls the outlined function
    # directly with thread-id pointers of its own: placeholders too while AD runs
    for fop in funcs.values():
        for op in list(walk_ops(fop)):
            if (isinstance(op, llvm.CallOp) and _callee(op) in funcs and is_outlined_region(funcs[_callee(op)])
                    and FORKED not in op.attributes and SERIALIZED not in op.attributes):
                null = _thread_id_placeholder(op)
                op.operands = [null, null, *list(op.args)[2:]]
                op.attributes[SERIALIZED] = UnitAttr()
    return count


def _thread_id_placeholder(before: Operation):
    """The thread-id pointers a fork passes, while AD runs: an address made from an
    integer has no shadow (a null pointer would get one), so they stay constant parameters."""
    zero = llvm.ConstantOp(IntegerAttr(0, i64), i64)
    null = llvm.IntToPtrOp(zero.results[0])
    before.parent_block().insert_op_before(zero, before)
    before.parent_block().insert_op_before(null, before)
    return null.results[0]


def check_region(module: ModuleOp, fop: Operation, mode: str) -> None:
    """Refuse the OpenMP constructs in outlined function ``fop`` (and the functions it
    calls) that a derivative in ``mode`` (``forward``, ``augmented``, ``reverse``,
    ``combined``) would get wrong or race on."""
    funcs = _functions(module)
    seen: set[str] = set()
    # as the derivative sees it: a reduction's atomic combine is gone
    body = fop.body.clone()
    reductions_as_critical(body)
    for param in list(body.blocks[0].args)[2:]:
        _check_captured_by_value(fop, param)
    if mode != "forward":
        for block in body.blocks:
            _check_critical_commutes(fop, block)
    dynamic = None  # named only if nothing more specific is found ('ordered' loops dispatch too)
    work = [body]
    while work:
        f = work.pop()
        for op in f.walk():  # (a region's walk: walk_ops takes an op)
            name = _callee(op)
            if isinstance(op, llvm_ext.AtomicRMWOp) and not isinstance(op.results[0].type, IntegerType):
                _refuse(fop, op, "'atomic' update of a floating-point value")
            if mode != "forward" and memory_kind(op) == "memcpy" and not _private(op.operands[1]):
                # its reverse adds the copy's adjoints into the source without atomics
                _refuse(fop, op, "memory copy (memcpy) from shared memory", reverse=True)
            if name is None:
                continue
            if mode != "forward" and name in funcs and is_recursive(funcs[name], lambda o: funcs.get(_callee(o))):
                # split into functions of their own, whose adjoint updates are not atomic
                _refuse(fop, op, f"recursive call of '{name}'", reverse=True)
            if name in funcs and is_outlined_region(funcs[name]):
                # (its fork call, made a direct call): the inner region's iterations are
                # not the only ones sharing its arrays, which the race analysis assumes
                _refuse(fop, op, _CONSTRUCTS[FORK_CALL], call=FORK_CALL)
            if name in funcs and funcs[name].body.blocks:
                if name not in seen:
                    seen.add(name)
                    work.append(funcs[name].body)
                continue
            if not name.startswith(("__kmpc_", "omp_", "GOMP_")) or name in _EVERYWHERE or name in _SYNCHRONIZATION:
                continue
            if name.startswith(_DYNAMIC_PREFIX):
                if mode != "forward" and dynamic is None:
                    dynamic = op
                continue
            _refuse(fop, op, _CONSTRUCTS.get(name) or f"runtime call '{name}'")
    if dynamic is not None:
        _refuse(fop, dynamic, "'schedule(dynamic)' (or 'guided', 'runtime') loop", reverse=True)


def _private(ptr) -> bool:
    """A pointer into a stack slot of the region's own."""
    while not isinstance(ptr, BlockArgument) and isinstance(ptr.owner, llvm.GEPOp):
        ptr = ptr.owner.operands[0]
    return not isinstance(ptr, BlockArgument) and isinstance(ptr.owner, llvm.AllocaOp)


def _check_captured_by_value(region: Operation, param) -> None:
    """A variable clang passes to the region by value (``firstprivate``, a captured
    ``const`` scalar) travels as the integer bits of its value (the fork call passes only
    pointer-sized integers), which carry no derivative: a float read from them would
    silently lose its adjoint or tangent."""
    from zymase.ir import is_float_type

    if isinstance(param.type, llvm.LLVMPointerType):
        return
    for use in [u for v in _through_branches(param) for u in v.uses]:
        user = use.operation
        floats = isinstance(user, llvm.BitcastOp) and is_float_type(user.results[0].type)
        if isinstance(user, llvm.StoreOp) and user.value is param:
            floats = any(isinstance(u.operation, llvm.LoadOp) and is_float_type(u.operation.results[0].type)
                         for u in user.ptr.uses)
        if floats:
            _refuse(region, user, "'firstprivate' (or by-value) floating-point variable",
                    why="clang passes it to the threads as integer bits, which carry no derivative",
                    call=FORK_CALL, hint="make the variable shared (drop 'firstprivate'), or copy it inside "
                                         "the region from a shared variable")


def _through_branches(value) -> list:
    """``value`` and the block arguments branches pass it to (the body of an outlined
    region may start by branching to a block that takes its parameters, as at -O0)."""
    from zymase.autodiff.flavor import LLVM

    seen, todo = [], [value]
    while todo:
        v = todo.pop()
        if any(v is w for w in seen):
            continue
        seen.append(v)
        for use in v.uses:
            term = use.operation
            if not term.successors:
                continue
            for block, passed in zip(term.successors, LLVM.successor_operands(term)):
                todo += [block.args[k] for k, a in enumerate(passed) if a is v]
    return seen


def _check_critical_commutes(region: Operation, block) -> None:
    """Each critical section of ``block`` must be straight-line code whose float stores
    add to what the same location held (``*s += e``, ``e`` not read from memory the
    section writes): such updates commute, so reversing each thread's sections in its
    own order gives the derivative of the order the threads took. Other updates
    (``*s = 0.5 * *s + v``) depend on that order, which the reverse sweep does not
    replay."""
    from zymase.ir import is_float_type

    for op in block.ops:
        if _callee(op) != "__kmpc_critical":
            continue
        section = _straight_line_until(op, "__kmpc_end_critical")
        if section is None:
            _refuse(region, op, "'critical' section", reverse=True,
                    why="it has branches inside (zymase reverses straight-line critical sections)")
        written = {o.ptr for o in section if isinstance(o, llvm.StoreOp)}
        inside = set(section)

        def reads_written(v, seen) -> bool:
            o = v.owner
            if not isinstance(o, Operation) or o not in inside or o in seen:
                return False
            seen.add(o)
            if isinstance(o, llvm.LoadOp) and o.ptr in written:
                return True
            return any(reads_written(x, seen) for x in o.operands)

        for o in section:
            if not isinstance(o, llvm.StoreOp) or not is_float_type(o.value.type):
                continue
            add = o.value.owner
            ok = isinstance(add, (llvm.FAddOp, llvm.FSubOp)) and add in inside
            if ok:
                mine = [x for x in add.operands if isinstance(x.owner, llvm.LoadOp) and x.owner.ptr is o.ptr]
                old = mine[0] if mine and (isinstance(add, llvm.FAddOp) or add.operands[0] is mine[0]) else None
                rest = [x for x in add.operands if x is not old]
                ok = old is not None and len(list(old.uses)) == 1 and len(rest) == 1 and not reads_written(rest[0], set())
            if not ok:
                _refuse(region, o, "'critical' section (or 'reduction' other than '+')", reverse=True,
                        why="its update is not a sum ('*s += e'), so its derivative depends on the "
                            "order in which the threads entered it")


def _straight_line_until(start: Operation, callee: str) -> list[Operation] | None:
    """The ops after ``start`` up to the call of ``callee``, through unconditional
    branches; None if a conditional branch comes first."""
    ops: list[Operation] = []
    seen = set()
    op = start.next_op
    while op is not None and _callee(op) != callee:
        if isinstance(op, llvm.BrOp):
            if op.successor in seen:
                return None
            seen.add(op.successor)
            op = op.successor.first_op
            continue
        if op.successors:
            return None
        ops.append(op)
        op = op.next_op
    return ops if op is not None else None


def _refuse(region: Operation, op: Operation, construct: str, *, reverse: bool = False, why: str = "",
            call: str | None = None, hint: str = _HINT) -> None:
    where = " in reverse mode" if reverse else ""
    why = f": {why}" if why else ""
    call = call or _callee(op)
    raise ZymaseError(f"OpenMP {construct} in a parallel region cannot be differentiated{where}{why}",
                      construct=f"call @{call}" if call else op.name,
                      function=_user_function(region), location=location_of(op) or _first_location(region),
                      hint=hint)


def _first_location(region: Operation) -> str | None:
    """Where the region starts (its pragma), for ops without a line of their own."""
    return next((loc for op in region.walk() if (loc := location_of(op)) is not None), None)


def _user_function(region: Operation) -> str:
    """``foo.omp_outlined`` -> ``foo`` (the C function the region is in)."""
    name = region.sym_name.data
    return name.split(".omp_outlined")[0] if ".omp_outlined" in name else name


def mark_derivative(module: ModuleOp, primal: Operation, derivative: Operation, role: str) -> None:
    """``derivative`` of outlined function ``primal`` in ``role``: checked, and marked so
    that ``restore_parallel_regions`` forks it."""
    from zymase.transforms.omp_dead_stores import PRIMAL

    check_region(module, primal, role)
    derivative.attributes[OUTLINED] = primal.attributes[OUTLINED]
    derivative.attributes[ROLE] = StringAttr(role)
    derivative.attributes[PRIMAL] = StringAttr(primal.sym_name.data)


def mark_recomputed(derivative: Operation) -> None:
    """The combined derivative of a region that a caller's reverse sweep forks, each
    thread recomputing its own iterations (``autodiff/region_recompute.py``)."""
    derivative.attributes[ROLE] = StringAttr("recomputed")


def reductions_as_critical(region) -> None:
    """In the private copy of an outlined function (``autodiff/common.prepare``): each
    'reduction' combine (``switch __kmpc_reduce_nowait(...)``: 1 = combine here, holding
    the reduction's lock; 2 = combine with atomic adds) becomes the combine of case 1 in
    a critical section on the same lock, one of the runtime's own methods. Its derivative
    is then the critical section's: in reverse every thread reads the adjoint of the
    shared result into its partial result (the adjoint is broadcast), under the lock."""
    from zymase.transforms.exceptions import remove_unreachable_blocks

    rewrote = False
    for block in list(region.blocks):
        for op in list(block.ops):
            if not isinstance(op, llvm.CallOp) or _callee(op) != "__kmpc_reduce_nowait":
                continue
            loc, gtid, *_, lock = op.args
            uses = [u.operation for u in op.results[0].uses]
            switch = uses[0] if len(uses) == 1 else None
            if not isinstance(switch, llvm_ext.SwitchOp) or 1 not in switch.case_value_list():
                raise ZymaseError("a 'reduction' clause in an unexpected form", construct="call @__kmpc_reduce_nowait",
                                  location=location_of(op), hint=_HINT)
            k = switch.case_value_list().index(1)
            segments = switch.case_operand_segments.get_values()
            start = sum(segments[:k])
            operands = list(switch.case_operands)[start:start + segments[k]]
            target = switch.case_destinations[k]
            enter = llvm.CallOp("__kmpc_critical", loc, gtid, lock)
            enter.location = op.location
            block.insert_op_before(enter, op)
            branch = llvm.BrOp(target, *operands)
            switch.parent_block().insert_op_before(branch, switch)
            switch.parent_block().erase_op(switch)
            block.erase_op(op)
            rewrote = True
    if not rewrote:
        return
    for block in region.blocks:
        for op in list(block.ops):
            if isinstance(op, llvm.CallOp) and _callee(op) == "__kmpc_end_reduce_nowait":
                leave = llvm.CallOp("__kmpc_end_critical", *op.args)
                leave.location = op.location
                block.insert_op_before(leave, op)
                block.erase_op(op)
    remove_unreachable_blocks(region)


def reverse_mirror(op: Operation) -> str | None:
    """The runtime call the reverse sweep makes at the mirror of ``op`` (``REVERSE_MIRROR``)."""
    return REVERSE_MIRROR.get(_callee(op)) if is_a(op, llvm.CallOp) else None


# ---------------------------------------------------------------------- after AD
def restore_parallel_regions(module: ModuleOp) -> None:
    """Every direct call of an outlined function or of one of its derivatives becomes a
    fork call (with the thread wrappers and the tape records of split mode)."""
    funcs = _functions(module)
    if not any(map(is_outlined_region, funcs.values())):  # nothing to call: no body to walk
        return
    calls = [(f, op) for f in funcs.values() for op in walk_ops(f)
             if isinstance(op, llvm.CallOp) and _callee(op) in funcs and is_outlined_region(funcs[_callee(op)])]
    if not calls:
        return
    from zymase.transforms.omp_dead_stores import drop_recomputed_stores

    drop_recomputed_stores(module)  # what recomputed regions store for no one
    added: dict[str, str] = {}
    for caller, op in calls:
        callee = funcs[_callee(op)]
        role = callee.attributes.get(ROLE)
        role = role.data if role is not None else "primal"
        loc = callee.attributes[OUTLINED].data
        if role == "combined":
            raise ZymaseError("a parallel region's derivative cannot be recomputed inside another "
                              "derivative", function=_user_function(callee), location=location_of(op),
                              hint=_HINT)
        if role == "primal" and SERIALIZED in op.attributes:
            _serialized_call(caller, op, loc)
            continue
        if role in ("primal", "forward", "recomputed"):
            _fork_in_place(op, loc, callee.sym_name.data, list(op.args)[2:])
            continue
        name = callee.sym_name.data
        if name not in added:
            added[name] = _add_site(module, callee, loc, role == "reverse")
        op.properties["callee"] = SymbolRefAttr(added[name])
    _add_runtime(module)


def _serialized_call(caller: Operation, op: Operation, loc: str) -> None:
    """Clang's direct call again, with thread-id pointers: this thread's global id and a
    zero bound id, in slots of the caller's entry block."""
    entry = caller.body.blocks[0]
    one = llvm.ConstantOp(IntegerAttr(1, i32), i32)
    slots = [llvm.AllocaOp(one.results[0], i32, 4) for _ in range(2)]
    first = entry.first_op
    for new in (one, *slots):
        entry.insert_op_before(new, first)
    block = op.parent_block()
    where = llvm.AddressOfOp(loc, PTR)
    gtid = llvm.CallOp("__kmpc_global_thread_num", where.results[0], return_type=i32)
    zero = llvm.ConstantOp(IntegerAttr(0, i32), i32)
    for new in (where, gtid, zero, llvm.StoreOp(gtid.results[0], slots[0].results[0]),
                llvm.StoreOp(zero.results[0], slots[1].results[0])):
        block.insert_op_before(new, op)
    del op.attributes[SERIALIZED]
    op.operands = [slots[0].results[0], slots[1].results[0], *list(op.args)[2:]]


def _fork_in_place(op: Operation, loc: str, fn: str, args) -> None:
    block = op.parent_block()
    ops = [llvm.AddressOfOp(loc, PTR), llvm.ConstantOp(IntegerAttr(len(args), i32), i32), llvm.AddressOfOp(fn, PTR)]
    for o in ops:
        block.insert_op_before(o, op)
    fork = llvm.CallOp(FORK_CALL, *(o.results[0] for o in ops), *args, variadic_args=len(args),
                       var_callee_type=_FORK_TYPE)
    fork.location = op.location
    block.insert_op_before(fork, op)
    block.erase_op(op)


_FORK_TYPE = llvm.LLVMFunctionType([PTR, i32, PTR], llvm.LLVMVoidType(), is_variadic=True)


def _add_site(module: ModuleOp, callee: Operation, loc: str, reverse: bool) -> str:
    """The function that forks ``callee`` (an augmented or reverse sweep) through a thread
    wrapper; same parameters as ``callee``."""
    name = callee.sym_name.data
    types = [str(t) for t in callee.function_type.inputs.data]
    captured = types[2:]
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    fwd_args = ", ".join(f"%a{i}" for i in range(2, len(types)))
    sig = ", ".join(["!llvm.ptr", "i32", "!llvm.ptr", "!llvm.ptr", *captured])
    thread = f"{name}.omp_thread"
    site = f"{name}.omp_fork"
    quoted_loc = '"' + loc.replace('"', '\\"') + '"'
    comma = ", " if fwd_args else ""
    inner_args = ", ".join(["%g", "%b", *(f"%c{i}" for i in range(len(captured)))])
    thread_params = ", ".join(["%g: !llvm.ptr", "%b: !llvm.ptr", "%s: !llvm.ptr",
                               *(f"%c{i}: {t}" for i, t in enumerate(captured))])
    fork = (f"llvm.call @{FORK_CALL}(%loc, %n, %f, %s{comma}{fwd_args}) "
            f"vararg(!llvm.func<void (!llvm.ptr, i32, !llvm.ptr, ...)>) : ({sig}) -> ()")
    if reverse:
        before = ("%s = llvm.call @__zymase_omp_unpark() : () -> !llvm.ptr\n"
                  "    %gtid = llvm.call @__kmpc_global_thread_num(%loc) : (!llvm.ptr) -> i32\n"
                  "    %team = llvm.call @__zymase_omp_team(%s) : (!llvm.ptr) -> i32\n"
                  "    llvm.call @__kmpc_push_num_threads(%loc, %gtid, %team) : (!llvm.ptr, i32, i32) -> ()")
        after = "llvm.call @__zymase_omp_slots_free(%s) : (!llvm.ptr) -> ()"
    else:
        before = "%s = llvm.call @__zymase_omp_slots_new() : () -> !llvm.ptr"
        after = "llvm.call @__zymase_omp_park(%s) : (!llvm.ptr) -> ()"
    text = f"""builtin.module {{
  llvm.func internal @"{thread}"({thread_params}) {{
    %rev = llvm.mlir.constant({'true' if reverse else 'false'}) : i1
    %slot = llvm.call @__zymase_omp_slot(%s, %rev) : (!llvm.ptr, i1) -> !llvm.ptr
    llvm.call @__zymase_omp_swap(%slot) : (!llvm.ptr) -> ()
    llvm.call @"{name}"({inner_args}) : ({", ".join(types)}) -> ()
    llvm.call @__zymase_omp_swap(%slot) : (!llvm.ptr) -> ()
    llvm.return
  }}
  llvm.func internal @"{site}"({params}) {{
    %loc = llvm.mlir.addressof @{quoted_loc} : !llvm.ptr
    %f = llvm.mlir.addressof @"{thread}" : !llvm.ptr
    %n = llvm.mlir.constant({len(captured) + 1} : i32) : i32
    {before}
    {fork}
    {after}
    llvm.return
  }}
}}"""
    for op in list(parse_mlir(text).body.block.ops):
        op.detach()
        if op.sym_name.data == thread:
            op.attributes[THREAD] = UnitAttr()
        else:
            _record_on_tape(op)
        module.body.block.add_op(op)
    return site


def _record_on_tape(site: Operation) -> None:
    """The record goes on the thread's tape between the forward and the reverse fork (a
    push and a pop lowered like split mode's, ``lower_to_llvm``): so it follows whatever
    tape is current, the global one or a split-mode call's own tape object."""
    from zymase.ir import enzyme

    for op in list(walk_ops(site)):
        if _callee(op) not in ("__zymase_omp_park", "__zymase_omp_unpark"):
            continue
        block = op.parent_block()
        tape = enzyme.InitOp(enzyme.CacheType(PTR))
        tape.attributes["zymase.tape"] = StringAttr("global")
        block.insert_op_before(tape, op)
        if _callee(op) == "__zymase_omp_park":
            block.insert_op_before(enzyme.PushOp(tape.results[0], op.operands[0]), op)
        else:
            pop = enzyme.PopOp(tape.results[0])
            block.insert_op_before(pop, op)
            op.results[0].replace_all_uses_with(pop.results[0])
        block.erase_op(op)


# ---------------------------------------------------------------------- runtime
_SLOT_BYTES = 320
"""A thread's slot: a tape (``lower_tape.CACHE_STRUCT``, 152 bytes) and room to swap it."""
_HEADER_BYTES = 32
"""A record's header: ``{i64 unused, i64 team, i64 capacity, i64 unused}``."""
_TEAM_MISMATCH = ("zymase: error: the reverse sweep of an OpenMP parallel region got a different "
                  "number of threads than its forward sweep, or the region more threads than "
                  "max(64, omp_get_max_threads()); hint: do not change the number of threads "
                  "(omp_set_num_threads, omp_set_dynamic) between the sweeps, and keep "
                  "'num_threads' within that bound\n")

_RUNTIME = f"""builtin.module {{
  llvm.func internal @__zymase_omp_slots_new() -> !llvm.ptr {{
    %max = llvm.call @omp_get_max_threads() : () -> i32
    %max64 = llvm.sext %max : i32 to i64
    %floor = llvm.mlir.constant(64 : i64) : i64
    %cap = llvm.call_intrinsic "llvm.smax.i64"(%max64, %floor) : (i64, i64) -> i64
    %stride = llvm.mlir.constant({_SLOT_BYTES} : i64) : i64
    %head = llvm.mlir.constant({_HEADER_BYTES} : i64) : i64
    %body = llvm.mul %cap, %stride : i64
    %bytes = llvm.add %body, %head : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %s = llvm.call @calloc(%one, %bytes) : (i64, i64) -> !llvm.ptr
    %sixteen = llvm.mlir.constant(16 : i64) : i64
    %capp = llvm.getelementptr %s[%sixteen] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %cap, %capp : i64, !llvm.ptr
    llvm.return %s : !llvm.ptr
  }}
  llvm.func internal @__zymase_omp_team(%s: !llvm.ptr) -> i32 {{
    %eight = llvm.mlir.constant(8 : i64) : i64
    %p = llvm.getelementptr %s[%eight] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %n = llvm.load %p : !llvm.ptr -> i64
    %n32 = llvm.trunc %n : i64 to i32
    llvm.return %n32 : i32
  }}
  llvm.func internal @__zymase_omp_slot(%s: !llvm.ptr, %reverse: i1) -> !llvm.ptr {{
    %t = llvm.call @omp_get_thread_num() : () -> i32
    %n = llvm.call @omp_get_num_threads() : () -> i32
    %t64 = llvm.sext %t : i32 to i64
    %n64 = llvm.sext %n : i32 to i64
    %eight = llvm.mlir.constant(8 : i64) : i64
    %sixteen = llvm.mlir.constant(16 : i64) : i64
    %teamp = llvm.getelementptr %s[%eight] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %capp = llvm.getelementptr %s[%sixteen] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %cap = llvm.load %capp : !llvm.ptr -> i64
    %big = llvm.icmp "sgt" %n64, %cap : i64
    llvm.cond_br %big, ^fail, ^fits
  ^fits:
    llvm.cond_br %reverse, ^check, ^record
  ^record:
    %zero = llvm.mlir.constant(0 : i32) : i32
    %first = llvm.icmp "eq" %t, %zero : i32
    llvm.cond_br %first, ^store, ^slot
  ^store:
    llvm.store %n64, %teamp : i64, !llvm.ptr
    llvm.br ^slot
  ^check:
    %want = llvm.load %teamp : !llvm.ptr -> i64
    %same = llvm.icmp "eq" %want, %n64 : i64
    llvm.cond_br %same, ^slot, ^fail
  ^slot:
    %stride = llvm.mlir.constant({_SLOT_BYTES} : i64) : i64
    %head = llvm.mlir.constant({_HEADER_BYTES} : i64) : i64
    %off0 = llvm.mul %t64, %stride : i64
    %off = llvm.add %off0, %head : i64
    %p = llvm.getelementptr %s[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.return %p : !llvm.ptr
  ^fail:
    %two = llvm.mlir.constant(2 : i32) : i32
    %msg = llvm.mlir.addressof @__zymase_omp_message : !llvm.ptr
    %len = llvm.mlir.constant({len(_TEAM_MISMATCH.encode())} : i64) : i64
    %w = llvm.call @write(%two, %msg, %len) : (i32, !llvm.ptr, i64) -> i64
    llvm.call @abort() : () -> ()
    llvm.unreachable
  }}
  llvm.func internal @__zymase_omp_swap(%slot: !llvm.ptr) {{
    %tape = llvm.mlir.addressof @__zymase_tape : !llvm.ptr
    %size = llvm.mlir.constant(152 : i64) : i64
    %half = llvm.mlir.constant(160 : i64) : i64
    %inl = llvm.mlir.constant(24 : i64) : i64
    %no = llvm.mlir.constant(false) : i1
    %tmp = llvm.getelementptr %slot[%half] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%tmp, %tape, %size, %no) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%tape, %slot, %size, %no) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%slot, %tmp, %size, %no) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
    %tape_inline = llvm.getelementptr %tape[%inl] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %slot_inline = llvm.getelementptr %slot[%inl] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %td = llvm.load %tape : !llvm.ptr -> !llvm.ptr
    %t_moved = llvm.icmp "eq" %td, %slot_inline : !llvm.ptr
    %td2 = llvm.select %t_moved, %tape_inline, %td : i1, !llvm.ptr
    llvm.store %td2, %tape : !llvm.ptr, !llvm.ptr
    %sd = llvm.load %slot : !llvm.ptr -> !llvm.ptr
    %s_moved = llvm.icmp "eq" %sd, %tape_inline : !llvm.ptr
    %sd2 = llvm.select %s_moved, %slot_inline, %sd : i1, !llvm.ptr
    llvm.store %sd2, %slot : !llvm.ptr, !llvm.ptr
    llvm.return
  }}
  llvm.func internal @__zymase_omp_slots_free(%s: !llvm.ptr) {{
    %eight = llvm.mlir.constant(8 : i64) : i64
    %teamp = llvm.getelementptr %s[%eight] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %n = llvm.load %teamp : !llvm.ptr -> i64
    %zero = llvm.mlir.constant(0 : i64) : i64
    %null = llvm.mlir.zero : !llvm.ptr
    llvm.br ^loop(%zero : i64)
  ^loop(%i: i64):
    %more = llvm.icmp "slt" %i, %n : i64
    llvm.cond_br %more, ^body, ^done
  ^body:
    %stride = llvm.mlir.constant({_SLOT_BYTES} : i64) : i64
    %head = llvm.mlir.constant({_HEADER_BYTES} : i64) : i64
    %inl = llvm.mlir.constant(24 : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %off0 = llvm.mul %i, %stride : i64
    %off = llvm.add %off0, %head : i64
    %slot = llvm.getelementptr %s[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %data = llvm.load %slot : !llvm.ptr -> !llvm.ptr
    %inline = llvm.getelementptr %slot[%inl] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %is_inline = llvm.icmp "eq" %data, %inline : !llvm.ptr
    %heap = llvm.select %is_inline, %null, %data : i1, !llvm.ptr
    llvm.call @free(%heap) : (!llvm.ptr) -> ()
    %next = llvm.add %i, %one : i64
    llvm.br ^loop(%next : i64)
  ^done:
    llvm.call @free(%s) : (!llvm.ptr) -> ()
    llvm.return
  }}
}}"""


def _add_runtime(module: ModuleOp) -> None:
    """The record helpers above, the message, and the thread-local tape (the same global
    ``lower_to_llvm`` adds for split mode)."""
    from zymase.transforms.lower_tape import CACHE_STRUCT, GLOBAL_TAPE

    symbols = {op.sym_name.data for op in module.body.block.ops if hasattr(op, "sym_name")}
    if "__zymase_omp_slot" in symbols:
        return
    for op in list(parsed_mlir(_RUNTIME, "<zymase OpenMP runtime>").body.block.ops):
        op.detach()
        module.body.block.add_op(op)
    data = _TEAM_MISMATCH.encode()
    module.body.block.add_op(llvm.GlobalOp(llvm.LLVMArrayType(len(data), IntegerType(8)), "__zymase_omp_message",
                                           "private", constant=True, value=StringAttr(_TEAM_MISMATCH)))
    if GLOBAL_TAPE not in symbols:
        tape = llvm.GlobalOp(CACHE_STRUCT, GLOBAL_TAPE, "weak", thread_local_=True, alignment=16, value=None)
        tape.attributes["zymase.llvm_init"] = StringAttr("zeroinitializer")
        module.body.block.add_op(tape)

