"""Numba ``prange`` loops (parfors) through AD, forked by Numba's own threading layer.

Numba lowers a parfor to a gufunc ``G(char **args, intp *dims, intp *steps, void *data)``
(the loop body inlined into it by the pre-AD pipeline) and runs it with
``numba_parallel_for(@G, args, dims, steps, data, inner_ndim, array_count, nthreads)``:
the threading layer splits the ``dims[0]`` rows of the schedule between its threads and
calls ``G`` on each with ``args[j]`` advanced by ``steps[j]`` per row (``count = 1``).
Calling ``G`` once on all rows is the serial loop. So, around the enzyme pass (as
``transforms/openmp.py`` does for ``__kmpc_fork_call``):

- ``outline_parfors`` turns each ``numba_parallel_for`` call into a direct call of
  ``G``, which the analyses see through. ``G`` gets its arrays as parameters of their
  own, ``G(dims, steps, data, p0, ..., p{n-1})`` (``p_k`` the data pointer the caller
  stored in ``args[k]``; ``p0`` is Numba's schedule), so that each array has an activity
  of its own: a constant array gets no shadow (a shadow slot in ``args`` would hold a
  null pointer the derivative of ``G`` could not tell apart). ``G`` is marked ``PARFOR``
  (with its ``inner_ndim`` and ``n``) and ``autodiff/common.prepare`` does not inline
  it. Numba's schedule buffer (``allocate_sched``/``deallocate_sched``) becomes
  ``malloc``/``free``, so that its free waits for the reverse sweep, whose recomputation
  reads it again;
- the driver marks every derivative of ``G`` with its ``ROLE`` and its ``LAYOUT`` (which
  parameters a shadow follows): a forward derivative, or the combined reverse derivative
  a caller's reverse sweep runs to recompute the parfor (``autodiff/numba_parfor.py``
  decides when it may; otherwise the Numba front end falls back to a serial derivative);
- ``restore_parfors`` forks every call of ``G`` or of a derivative again, through a site
  function that stores the pointer parameters (arrays and their shadows) in an ``args``
  array with the per-row steps of their arrays (so the threading layer advances each
  shadow with its primal), releases the GIL as Numba's launcher does, and calls
  ``numba_parallel_for`` with a thread wrapper, which calls the function with the
  advanced pointers and the original ``steps`` and ``data`` (passed through ``data``).

The number of threads is ``get_num_threads()`` at the fork: the team the user set with
``numba.set_num_threads``.
"""

from __future__ import annotations

import re

from zymase.analysis.op_classes import is_a
from zymase.errors import ZymaseError
from zymase.ir import (IntegerAttr, IntegerType, ModuleOp, Operation, StringAttr, SymbolRefAttr, i64, llvm, location_of,
                       parse_mlir)
from zymase.ir.walk import walk_ops

FORK = "numba_parallel_for"
PARFOR = "zymase.numba_parfor"
"""On a parfor gufunc and its derivatives: ``"<inner_ndim> <array_count>"`` of its fork."""
ROLE = "zymase.numba_parfor_role"
"""On a derivative of a parfor gufunc: ``forward``, ``combined`` or ``recomputed`` (the
combined derivative a caller's reverse sweep forks, ``autodiff/numba_parfor.py``)."""
LAYOUT = "zymase.numba_parfor_layout"
"""On a derivative of a parfor gufunc: one character per primal parameter, ``1`` when its
shadow follows it in the derivative's parameters."""
THREAD = "zymase.numba_parfor_thread"
"""On the thread wrappers and fork sites this module adds."""
PTR = llvm.LLVMPointerType()
GEP_USE_SSA_VAL = llvm.GEP_USE_SSA_VAL

_HINT = ("write the prange loop so that it only reads arrays it does not write (or sums into them), "
         "or use range instead of prange in the differentiated function")


class ParforSerial(ZymaseError):
    """A parfor whose derivative is not forked: a reverse sweep that could not recompute
    it (its tape would be the split-mode tape, which Numba's JIT cannot allocate per
    thread), vector mode, or a nested request over a forked derivative. The Numba front
    end differentiates the function's serial copy instead."""


def forks_a_derivative(llvm_ir: str) -> bool:
    """Whether LLVM IR text calls Numba's threading layer on a derivative's thread wrapper."""
    return re.search(rf'call void @{FORK}\(ptr (?:nonnull )?@"?(?:fwddiffe|diffe)[^"(,]*\.numba_thread"?,',
                     llvm_ir) is not None


def _callee(op: Operation) -> str | None:
    callee = getattr(op, "callee", None)
    return callee.root_reference.data if callee is not None else None


def _functions(module: ModuleOp) -> dict[str, llvm.FuncOp]:
    return {op.sym_name.data: op for op in module.body.block.ops if is_a(op, llvm.FuncOp)}


def is_parfor(fop: Operation | None) -> bool:
    """A parfor gufunc (or a derivative of one)."""
    return fop is not None and PARFOR in fop.attributes


def _constant(v) -> int | None:
    op = getattr(v, "owner", None)
    if isinstance(op, llvm.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


# ---------------------------------------------------------------------- before AD
def outline_parfors(module: ModuleOp) -> int:
    """Every ``numba_parallel_for`` call of a defined gufunc becomes a direct call of it,
    its arrays unpacked into parameters (module docstring); returns how many."""
    funcs = _functions(module)
    if any(THREAD in f.attributes for f in funcs.values()):
        # a later round of nested requests (second order, a gradient called in njit
        # code): differentiating a forked derivative again is not built
        raise ParforSerial("a prange loop differentiated twice (a nested derivative)", hint=_HINT)
    if not funcs.keys() & {FORK, "allocate_sched", "deallocate_sched"}:
        return 0  # nothing declares Numba's threading layer: no walk of every function
    count = 0
    for fop in funcs.values():
        if any(isinstance(op, llvm.CallOp) and _callee(op) == FORK for op in walk_ops(fop)):
            _one_release_per_array(fop)
        for op in list(walk_ops(fop)):
            if isinstance(op, llvm.CallOp) and _callee(op) in ("allocate_sched", "deallocate_sched"):
                _schedule_buffer_as_malloc(op)
                continue
            if not isinstance(op, llvm.CallOp) or _callee(op) != FORK:
                continue
            fn, args, dims, steps, data, inner, arrays, _threads = op.args
            target = fn.owner if isinstance(fn.owner, llvm.AddressOfOp) else None
            gufunc = funcs.get(target.global_name.root_reference.data) if target is not None else None
            if gufunc is None or not gufunc.body.blocks or _constant(inner) is None or _constant(arrays) is None:
                raise ZymaseError("a prange loop whose gufunc is not in the module zymase differentiates",
                                  construct=f"call @{FORK}", function=fop.sym_name.data, location=location_of(op),
                                  hint=_HINT)
            n = _constant(arrays)
            if PARFOR not in gufunc.attributes:
                _unpack_arrays(gufunc, n)
                gufunc.attributes[PARFOR] = StringAttr(f"{_constant(inner)} {n}")
            _drop_gil_release(op)
            block = op.parent_block()
            stored = _stored_pointers(args, op)
            pointers = []
            for k in range(n):
                if 8 * k in stored:
                    pointers.append(stored[8 * k])
                    continue
                offset = llvm.ConstantOp(IntegerAttr(8 * k, i64), i64)
                slot = llvm.GEPOp(args, [GEP_USE_SSA_VAL], pointee_type=IntegerType(8), ssa_indices=[offset.results[0]])
                load = llvm.LoadOp(slot.results[0], PTR)
                for o in (offset, slot, load):
                    block.insert_op_before(o, op)
                pointers.append(load.results[0])
            call = llvm.CallOp(gufunc.sym_name.data, dims, steps, data, *pointers)
            call.location = op.location
            block.insert_op_before(call, op)
            block.erase_op(op)
            if not any(r.uses for r in target.results):
                target.parent_block().erase_op(target)
            count += 1
    return count


def _one_release_per_array(fop: Operation) -> None:
    """A Numba array the function allocates and releases (``NRT_decref``) in several
    blocks, one on each path, gets one release where those paths meet instead.

    LLVM's pipeline duplicates releases: with several loops over the same ``n``, the
    path taken when ``n == 0`` skips them all and releases every array in one block,
    while the other path releases each after its last loop. The engine can keep a
    prange loop's arrays alive until its reverse sweep recomputes the loop only when one
    release runs once per call (``WrittenMemory._find_deferred_frees``). The release is
    moved to the first block ``J`` after them when every path from the entry to ``J``
    passes through exactly one of them, every path from them to the return passes
    through ``J``, no error path (``ABANDON``) leaves from them and ``J`` runs once:
    the array is then released exactly as often, only later."""
    from zymase.analysis.memory import NRT_ALLOCATORS
    from zymase.autodiff.names import ABANDON

    blocks = list(fop.body.blocks)
    if not blocks:
        return
    succs = {b: list(dict.fromkeys(b.last_op.successors)) for b in blocks}

    def reach(starts, avoid=frozenset()):
        seen, work = set(), [s for b in starts for s in succs[b] if s not in avoid]
        while work:
            b = work.pop()
            if b not in seen:
                seen.add(b)
                work.extend(s for s in succs[b] if s not in avoid)
        return seen

    abandons = {b for b in blocks if any(_callee(o) == ABANDON for o in b.ops if isinstance(o, llvm.CallOp))}
    returns = {b for b in blocks if isinstance(b.last_op, llvm.ReturnOp)}
    entry = blocks[0]
    for op in list(walk_ops(fop)):
        if not (isinstance(op, llvm.CallOp) and _callee(op) in NRT_ALLOCATORS):
            continue
        array = op.results[0]
        releases = [u.operation for u in array.uses
                    if isinstance(u.operation, llvm.CallOp) and _callee(u.operation) == "NRT_decref"]
        where = [r.parent_block() for r in releases]
        if len(releases) < 2 or len(set(where)) != len(where):
            continue
        after = reach(where)
        if after & (set(where) | abandons) or set(where) & returns:
            continue  # in a loop, one after another, an error path after one, or returning
        # J: the first block after them that every path from them to the return passes
        order = [b for b in blocks if b in after]
        joins = [j for j in order if j not in returns and not reach(where, {j}) & returns
                 and all(j in reach([w]) for w in where)
                 and j not in reach([j]) and j not in ({entry} | reach([entry], set(where)))]
        if not joins:
            continue
        first = releases[0]
        first.detach()
        joins[0].insert_op_before(first, joins[0].first_op)
        for r in releases[1:]:
            r.parent_block().erase_op(r)


def _stored_pointers(args, fork: Operation) -> dict:
    """Byte offset -> the pointer that reaches ``fork`` in the caller's stack array
    ``args`` at that offset (Numba's launcher fills ``args`` before the fork), when only
    stores at constant offsets, loads, lifetime markers and forks touch ``args``; the
    offsets whose store is not found (the call then loads them) are left out.

    The store that reaches the fork is the last one before it, found walking back from
    the fork through single predecessors: Numba zero-fills its stack arrays at the
    function's entry, so in a function with several prange loops (each with its own
    ``args``) every slot has that store too, before the one that matters."""
    from zymase.analysis.memory import memory_kind
    from zymase.autodiff.forwarding import _address

    if not isinstance(args.owner, Operation) or memory_kind(args.owner) != "alloca":
        return {}
    offset_of: dict = {}  # store into args -> its byte offset
    lifetimes = set()
    work = [(args, 0)]
    while work:
        p, offset = work.pop()
        for use in p.uses:
            user = use.operation
            if isinstance(user, llvm.StoreOp) and user.ptr is p and user.value is not p:
                offset_of[user] = offset
            elif isinstance(user, llvm.GEPOp) and user.operands[0] is p:
                found = _address(user.results[0])
                if found is None or found[1] is not None or found[0] is not args:
                    return {}
                work.append((user.results[0], found[2]))
            elif isinstance(user, llvm.CallIntrinsicOp) and user.intrin.data.startswith("llvm.lifetime"):
                lifetimes.add(user)
            elif not (isinstance(user, llvm.LoadOp) or (isinstance(user, llvm.CallOp) and _callee(user) == FORK)):
                return {}
    stored: dict = {}
    block, ops, seen = fork.parent_block(), list(fork.parent_block().ops), set()
    ops = ops[:ops.index(fork)]
    while True:
        for op in reversed(ops):
            if op in lifetimes:
                return stored  # what was stored before is gone
            if op in offset_of:
                stored.setdefault(offset_of[op], op.value)
        seen.add(block)
        preds = set(block.predecessors())
        if len(preds) != 1:
            return stored
        block = preds.pop()
        if block in seen:
            return stored
        ops = list(block.ops)


def _unpack_arrays(gufunc: Operation, n: int) -> None:
    """``G(args, dims, steps, data)`` becomes ``G(dims, steps, data, p0, ..., p{n-1})``:
    each load of ``args[k]`` in its body is the new parameter ``p_k``."""
    from zymase.autodiff.forwarding import _address

    entry = gufunc.body.blocks[0]
    args = entry.args[0]
    loads = []
    for use in list(args.uses):
        user = use.operation
        found = _address(user.results[0]) if isinstance(user, llvm.GEPOp) else None
        users = [u.operation for u in user.results[0].uses] if found is not None else [user]
        offset = found[2] if found is not None and found[1] is None else 0 if user.operands[0] is args else None
        if offset is None or offset % 8 or offset // 8 >= n or not all(
                isinstance(u, llvm.LoadOp) and isinstance(u.results[0].type, llvm.LLVMPointerType) for u in users):
            raise ParforSerial("a prange loop's gufunc reads its arrays in an unexpected way",
                                  function=gufunc.sym_name.data, hint=_HINT)
        loads += [(u, offset // 8) for u in users]
        if found is not None:
            loads.append((user, None))
    params = [entry.insert_arg(PTR, len(entry.args)) for _ in range(n)]
    for op, k in loads:
        if k is not None:
            op.results[0].replace_all_uses_with(params[k])
    for op, k in sorted(loads, key=lambda e: e[1] is None):
        op.parent_block().erase_op(op)
    entry.erase_arg(args)
    inputs = list(gufunc.function_type.inputs.data)[1:] + [PTR] * n
    gufunc.properties["function_type"] = llvm.LLVMFunctionType(inputs, llvm.LLVMVoidType())
    gufunc.properties.pop("arg_attrs", None)
    gufunc.linkage = llvm.LinkageAttr("internal")


_GIL_CALLS = ("numba_gil_ensure", "PyEval_SaveThread", "PyEval_RestoreThread", "numba_gil_release")


def _drop_gil_release(fork: Operation) -> None:
    """Numba's launcher releases the GIL around the fork (``PyEval_SaveThread``, so that
    a thread raising an exception can take it); calls with pointers the engine cannot
    follow. They are dropped while AD runs, and every fork ``restore_parfors`` makes
    releases the GIL again."""
    ops = [o for o in fork.parent_block().ops if isinstance(o, llvm.CallOp) and _callee(o) in _GIL_CALLS]
    if sorted(_callee(o) for o in ops) != sorted(_GIL_CALLS):
        return
    for name in ("PyEval_RestoreThread", "numba_gil_release", "PyEval_SaveThread", "numba_gil_ensure"):
        o = next(o for o in ops if _callee(o) == name)
        if o.results and any(r.uses for r in o.results):
            return
        o.parent_block().erase_op(o)


def _schedule_buffer_as_malloc(op: Operation) -> None:
    """Numba's schedule (``new uintp[n]`` in its runtime) as ``malloc(8 n)`` and
    ``free``: the engine defers a free to the reverse sweep, which reads the schedule again."""
    block = op.parent_block()
    if _callee(op) == "allocate_sched":
        eight = llvm.ConstantOp(IntegerAttr(8, i64), i64)
        size = llvm.MulOp(op.args[0], eight.results[0])
        new = llvm.CallOp("malloc", size.results[0], return_type=PTR)
        for o in (eight, size, new):
            block.insert_op_before(o, op)
        op.results[0].replace_all_uses_with(new.results[0])
    else:
        block.insert_op_before(llvm.CallOp("free", op.args[0]), op)
    block.erase_op(op)


def mark_derivative(primal: Operation, derivative: Operation, role: str, follows: list[bool]) -> None:
    """``derivative`` of parfor gufunc ``primal`` in ``role``; ``follows[k]``: a shadow
    follows parameter ``k``."""
    derivative.attributes[PARFOR] = primal.attributes[PARFOR]
    derivative.attributes[ROLE] = StringAttr(role)
    derivative.attributes[LAYOUT] = StringAttr("".join("1" if f else "0" for f in follows))


def mark_recomputed(derivative: Operation) -> None:
    """The combined derivative a caller's reverse sweep forks (each thread recomputes its rows)."""
    derivative.attributes[ROLE] = StringAttr("recomputed")


# ---------------------------------------------------------------------- after AD
def restore_parfors(module: ModuleOp) -> None:
    """Every direct call of a parfor gufunc or of one of its derivatives becomes a fork
    through Numba's threading layer (module docstring)."""
    funcs = _functions(module)
    if not any(is_parfor(f) for f in funcs.values()):
        return  # no gufunc to call (C and C++, most njit code): no walk of the derivatives
    calls = [op for f in funcs.values() if THREAD not in f.attributes for op in walk_ops(f)
             if isinstance(op, llvm.CallOp) and is_parfor(funcs.get(_callee(op)))]
    sites: dict[str, str] = {}
    for op in calls:
        callee = funcs[_callee(op)]
        role = callee.attributes.get(ROLE)
        if role is not None and role.data == "combined":
            raise ZymaseError("a prange loop's reverse derivative cannot run inside another derivative",
                              function=callee.sym_name.data, location=location_of(op), hint=_HINT)
        name = callee.sym_name.data
        if name not in sites:
            sites[name] = _add_site(module, callee)
        op.properties["callee"] = SymbolRefAttr(sites[name])


_FORK_TYPES = "(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()"


def _add_site(module: ModuleOp, callee: Operation) -> str:
    """The function forking ``callee`` (a parfor gufunc or a derivative of one; same
    parameters) and its thread wrapper."""
    name = callee.sym_name.data
    inner, n = (int(x) for x in callee.attributes[PARFOR].data.split())
    layout = callee.attributes[LAYOUT].data if LAYOUT in callee.attributes else "0" * (3 + n)
    types = [str(t) for t in callee.function_type.inputs.data]
    if len(layout) != 3 + n or len(types) != 3 + n + layout.count("1"):
        raise ZymaseError("a prange loop's derivative in an unexpected form (internal error)", function=name,
                          hint="report this to the zymase developers")
    # the callee's parameters, in order: (name, slot of the array it points into or None)
    params = []
    for k, follows in enumerate(layout):
        base = ("dims", "steps", "data")[k] if k < 3 else f"p{k - 3}"
        params.append((base, k - 3 if k >= 3 else None))
        if follows == "1":
            params.append(("shadow_" + base, k - 3 if k >= 3 else None))
    pointers = [(p, slot) for p, slot in params if slot is not None]  # through the args array
    record = ["steps", "data"] + [p for p, slot in params if slot is None and p.startswith("shadow_")]
    thread, site = f"{name}.numba_thread", f"{name}.numba_fork"
    m = len(pointers)
    pack = []
    for j, (p, slot) in enumerate(pointers):
        pack.append(f"""    %o{j} = llvm.mlir.constant({8 * j} : i64) : i64
    %q{j} = llvm.getelementptr %args2[%o{j}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %{p}, %q{j} : !llvm.ptr, !llvm.ptr
    %so{j} = llvm.mlir.constant({8 * slot} : i64) : i64
    %sp{j} = llvm.getelementptr %steps[%so{j}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %sv{j} = llvm.load %sp{j} : !llvm.ptr -> i64
    %sq{j} = llvm.getelementptr %steps2[%o{j}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %sv{j}, %sq{j} : i64, !llvm.ptr""")
    for j, p in enumerate(record):
        pack.append(f"""    %r{j} = llvm.mlir.constant({8 * j} : i64) : i64
    %rp{j} = llvm.getelementptr %rec[%r{j}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %{p}, %rp{j} : !llvm.ptr, !llvm.ptr""")
    unpack = []
    for j, (p, _) in enumerate(pointers):
        unpack.append(f"""    %o{j} = llvm.mlir.constant({8 * j} : i64) : i64
    %q{j} = llvm.getelementptr %a[%o{j}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %{p} = llvm.load %q{j} : !llvm.ptr -> !llvm.ptr""")
    for j, p in enumerate(record):
        unpack.append(f"""    %r{j} = llvm.mlir.constant({8 * j} : i64) : i64
    %rp{j} = llvm.getelementptr %rec[%r{j}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %{p} = llvm.load %rp{j} : !llvm.ptr -> !llvm.ptr""")
    call_args = ", ".join("%" + p for p, _ in params)
    nl = "\n"
    text = f"""builtin.module {{
  llvm.func internal @"{thread}"(%a: !llvm.ptr, %dims: !llvm.ptr, %steps2: !llvm.ptr, %rec: !llvm.ptr) {{
{nl.join(unpack)}
    llvm.call @"{name}"({call_args}) : ({", ".join(types)}) -> ()
    llvm.return
  }}
  llvm.func internal @"{site}"({", ".join(f"%{p}: !llvm.ptr" for p, _ in params)}) {{
    %one = llvm.mlir.constant(1 : i64) : i64
    %args2 = llvm.alloca %one x !llvm.array<{m} x ptr> {{alignment = 8 : i64}} : (i64) -> !llvm.ptr
    %steps2 = llvm.alloca %one x !llvm.array<{m} x i64> {{alignment = 8 : i64}} : (i64) -> !llvm.ptr
    %rec = llvm.alloca %one x !llvm.array<{len(record)} x ptr> {{alignment = 8 : i64}} : (i64) -> !llvm.ptr
{nl.join(pack)}
    %gil = llvm.alloca %one x i32 {{alignment = 4 : i64}} : (i64) -> !llvm.ptr
    %zero = llvm.mlir.constant(0 : i32) : i32
    llvm.store %zero, %gil : i32, !llvm.ptr
    llvm.call @numba_gil_ensure(%gil) : (!llvm.ptr) -> ()
    %saved = llvm.call @PyEval_SaveThread() : () -> !llvm.ptr
    %threads = llvm.call @get_num_threads() : () -> i64
    %fn = llvm.mlir.addressof @"{thread}" : !llvm.ptr
    %inner = llvm.mlir.constant({inner} : i64) : i64
    %count = llvm.mlir.constant({m} : i64) : i64
    llvm.call @{FORK}(%fn, %args2, %dims, %steps2, %rec, %inner, %count, %threads) : {_FORK_TYPES}
    llvm.call @PyEval_RestoreThread(%saved) : (!llvm.ptr) -> ()
    llvm.call @numba_gil_release(%gil) : (!llvm.ptr) -> ()
    llvm.return
  }}
}}"""
    for op in list(parse_mlir(text).body.block.ops):
        op.detach()
        op.attributes[THREAD] = StringAttr(name)
        module.body.block.add_op(op)
    return site
