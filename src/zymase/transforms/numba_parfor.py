"""Numba ``prange`` loops (parfors) through AD, forked by Numba's own threading layer.

Numba lowers a parfor to a gufunc ``G(char **args, intp *dims, intp *steps, void *data)``
(the loop body inlined into it by the pre-AD pipeline) and runs it with
``numba_parallel_for(@G, args, dims, steps, data, inner_ndim, array_count, nthreads)``:
the threading layer splits the ``dims[0]`` rows of the schedule between its threads and
calls ``G`` on each with ``args[j]`` advanced by ``steps[j]`` per row (``count = 1``).
Calling ``G`` once on all rows is the serial loop. So, around the enzyme pass (as
``transforms/openmp.py`` does for ``__kmpc_fork_call``):

- ``outline_parfors`` turns each ``numba_parallel_for`` call into the direct call
  ``@G(args, dims, steps, data)``, which the analyses see through; ``G`` is marked
  ``PARFOR`` (with its ``inner_ndim`` and ``array_count``) and ``autodiff/common.prepare``
  does not inline it. Numba's schedule buffer (``allocate_sched``/``deallocate_sched``)
  becomes ``malloc``/``free``, so that its free waits for the reverse sweep, whose
  recomputation reads it again;
- the driver marks every derivative of ``G`` with its ``ROLE`` and its ``LAYOUT`` (which
  parameters a shadow follows): a forward derivative, or the combined reverse derivative
  a caller's reverse sweep runs to recompute the parfor (``autodiff/numba_parfor.py``
  decides when it may; otherwise the Numba front end falls back to a serial derivative);
- ``restore_parfors`` forks every call again: ``G`` as Numba did; a derivative through a
  site function that builds a second ``args`` array, ``[args..., shadow args...]`` with
  the same per-row steps (so the threading layer advances the shadows with their
  primals), releases the GIL as Numba's launcher does, and calls ``numba_parallel_for``
  with a thread wrapper, which calls the derivative with the two halves and the original
  ``steps`` and ``data`` (passed through ``data``).

The number of threads is ``get_num_threads()`` at the fork: the team the user set with
``numba.set_num_threads``.
"""

from __future__ import annotations

from zymase.errors import ZymaseError
from zymase.ir import IntegerAttr, ModuleOp, Operation, StringAttr, SymbolRefAttr, i64, llvm, location_of, parse_mlir

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
"""On the thread wrappers this module forks."""

_HINT = ("write the prange loop so that it only reads arrays it does not write (or sums into them), "
         "or use range instead of prange in the differentiated function")


class ParforNeedsTape(ZymaseError):
    """A parfor whose reverse sweep could not recompute it: its derivative would need the
    split-mode tape, which Numba's JIT cannot allocate per thread. The Numba front end
    differentiates the function's serial copy instead."""


def _callee(op: Operation) -> str | None:
    callee = getattr(op, "callee", None)
    return callee.root_reference.data if callee is not None else None


def _functions(module: ModuleOp) -> dict[str, llvm.FuncOp]:
    return {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, llvm.FuncOp)}


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
    """Every ``numba_parallel_for`` call of a defined gufunc becomes a direct call of it
    (module docstring); returns how many."""
    funcs = _functions(module)
    count = 0
    for fop in funcs.values():
        if THREAD in fop.attributes:
            continue
        for op in list(fop.walk()):
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
            gufunc.attributes[PARFOR] = StringAttr(f"{_constant(inner)} {_constant(arrays)}")
            _drop_gil_release(op)
            call = llvm.CallOp(gufunc.sym_name.data, args, dims, steps, data)
            call.location = op.location
            op.parent_block().insert_op_before(call, op)
            op.parent_block().erase_op(op)
            if not any(r.uses for r in target.results):
                target.parent_block().erase_op(target)
            count += 1
    return count


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
        new = llvm.CallOp("malloc", size.results[0], return_type=llvm.LLVMPointerType())
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
    calls = [op for f in funcs.values() if THREAD not in f.attributes for op in f.walk()
             if isinstance(op, llvm.CallOp) and is_parfor(funcs.get(_callee(op)))]
    sites: dict[str, str] = {}
    for op in calls:
        callee = funcs[_callee(op)]
        inner, arrays = (int(x) for x in callee.attributes[PARFOR].data.split())
        role = callee.attributes.get(ROLE)
        role = role.data if role is not None else "primal"
        if role == "primal":
            name = callee.sym_name.data
            if name not in sites:
                sites[name] = _add_primal_site(module, callee, inner, arrays)
            op.properties["callee"] = SymbolRefAttr(sites[name])
            continue
        if role == "combined":
            raise ZymaseError("a prange loop's reverse derivative cannot run inside another derivative",
                              function=callee.sym_name.data, location=location_of(op), hint=_HINT)
        name = callee.sym_name.data
        if name not in sites:
            sites[name] = _add_site(module, callee, inner, arrays)
        op.properties["callee"] = SymbolRefAttr(sites[name])


_RELEASE = """    %gil = llvm.alloca %one x i32 {alignment = 4 : i64} : (i64) -> !llvm.ptr
    %zero = llvm.mlir.constant(0 : i32) : i32
    llvm.store %zero, %gil : i32, !llvm.ptr
    llvm.call @numba_gil_ensure(%gil) : (!llvm.ptr) -> ()
    %saved = llvm.call @PyEval_SaveThread() : () -> !llvm.ptr"""
_TAKE = """    llvm.call @PyEval_RestoreThread(%saved) : (!llvm.ptr) -> ()
    llvm.call @numba_gil_release(%gil) : (!llvm.ptr) -> ()"""
_FORK_TYPES = "(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()"


def _add_primal_site(module: ModuleOp, gufunc: Operation, inner: int, arrays: int) -> str:
    """The function forking the primal gufunc as Numba's launcher did (the GIL released)."""
    name = gufunc.sym_name.data
    site = f"{name}.numba_fork"
    text = f"""builtin.module {{
  llvm.func internal @"{site}"(%args: !llvm.ptr, %dims: !llvm.ptr, %steps: !llvm.ptr, %data: !llvm.ptr) {{
    %one = llvm.mlir.constant(1 : i64) : i64
{_RELEASE}
    %threads = llvm.call @get_num_threads() : () -> i64
    %fn = llvm.mlir.addressof @"{name}" : !llvm.ptr
    %inner = llvm.mlir.constant({inner} : i64) : i64
    %count = llvm.mlir.constant({arrays} : i64) : i64
    llvm.call @{FORK}(%fn, %args, %dims, %steps, %data, %inner, %count, %threads) : {_FORK_TYPES}
{_TAKE}
    llvm.return
  }}
}}"""
    for op in list(parse_mlir(text).body.block.ops):
        op.detach()
        op.attributes[THREAD] = StringAttr(name)
        module.body.block.add_op(op)
    return site


def _add_site(module: ModuleOp, derivative: Operation, inner: int, arrays: int) -> str:
    """The function forking ``derivative`` (same parameters) and its thread wrapper."""
    name = derivative.sym_name.data
    layout = derivative.attributes[LAYOUT].data
    types = [str(t) for t in derivative.function_type.inputs.data]
    if layout[0] != "1" or len(types) != 4 + layout.count("1"):
        raise ZymaseError("a prange loop's derivative in an unexpected form (internal error)", function=name,
                          hint="report this to the zymase developers")
    thread, site = f"{name}.numba_thread", f"{name}.numba_fork"
    n = arrays
    copies = []
    for k in range(n):
        copies.append(f"""
    %o{k} = llvm.mlir.constant({8 * k} : i64) : i64
    %s{k} = llvm.mlir.constant({8 * (n + k)} : i64) : i64
    %pa{k} = llvm.getelementptr %args[%o{k}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %va{k} = llvm.load %pa{k} : !llvm.ptr -> !llvm.ptr
    %qa{k} = llvm.getelementptr %args2[%o{k}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %va{k}, %qa{k} : !llvm.ptr, !llvm.ptr
    %pd{k} = llvm.getelementptr %dargs[%o{k}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %vd{k} = llvm.load %pd{k} : !llvm.ptr -> !llvm.ptr
    %qd{k} = llvm.getelementptr %args2[%s{k}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %vd{k}, %qd{k} : !llvm.ptr, !llvm.ptr
    %ps{k} = llvm.getelementptr %steps[%o{k}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %vs{k} = llvm.load %ps{k} : !llvm.ptr -> i64
    %qs{k} = llvm.getelementptr %steps2[%o{k}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %vs{k}, %qs{k} : i64, !llvm.ptr
    %rs{k} = llvm.getelementptr %steps2[%s{k}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %vs{k}, %rs{k} : i64, !llvm.ptr""")
    # the record passed as ``data``: the original steps and data, then the shadows the
    # derivative takes of dims, steps and data (Numba's integer bookkeeping: the same
    # pointers on every thread)
    shadowed = [p for p, f in zip(("dims", "steps", "data"), layout[1:]) if f == "1"]
    record = ["steps", "data", *(f"d{p}" for p in shadowed)]
    unpack = "\n".join(f"""    %r{k} = llvm.mlir.constant({8 * k} : i64) : i64
    %rp{k} = llvm.getelementptr %rec[%r{k}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %{v} = llvm.load %rp{k} : !llvm.ptr -> !llvm.ptr""" for k, v in enumerate(record))
    pack = "\n".join(f"""    %r{k} = llvm.mlir.constant({8 * k} : i64) : i64
    %rp{k} = llvm.getelementptr %rec[%r{k}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %{v}, %rp{k} : !llvm.ptr, !llvm.ptr""" for k, v in enumerate(record))
    params = ["args", "dargs"] + [q for p in ("dims", "steps", "data") for q in ((p, f"d{p}") if p in shadowed else (p,))]
    inner_args = ["a", "da"] + [q for p in ("dims", "steps", "data") for q in ((p, f"d{p}") if p in shadowed else (p,))]
    text = f"""builtin.module {{
  llvm.func internal @"{thread}"(%a: !llvm.ptr, %dims: !llvm.ptr, %steps2: !llvm.ptr, %rec: !llvm.ptr) {{
{unpack}
    %half = llvm.mlir.constant({8 * n} : i64) : i64
    %da = llvm.getelementptr %a[%half] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.call @"{name}"({", ".join("%" + v for v in inner_args)}) : ({", ".join(types)}) -> ()
    llvm.return
  }}
  llvm.func internal @"{site}"({", ".join(f"%{p}: !llvm.ptr" for p in params)}) {{
    %one = llvm.mlir.constant(1 : i64) : i64
    %args2 = llvm.alloca %one x !llvm.array<{2 * n} x ptr> {{alignment = 8 : i64}} : (i64) -> !llvm.ptr
    %steps2 = llvm.alloca %one x !llvm.array<{2 * n} x i64> {{alignment = 8 : i64}} : (i64) -> !llvm.ptr
    %rec = llvm.alloca %one x !llvm.array<{len(record)} x ptr> {{alignment = 8 : i64}} : (i64) -> !llvm.ptr
    {"".join(copies)}
{pack}
{_RELEASE}
    %threads = llvm.call @get_num_threads() : () -> i64
    %fn = llvm.mlir.addressof @"{thread}" : !llvm.ptr
    %inner = llvm.mlir.constant({inner} : i64) : i64
    %count = llvm.mlir.constant({2 * n} : i64) : i64
    llvm.call @{FORK}(%fn, %args2, %dims, %steps2, %rec, %inner, %count, %threads) : {_FORK_TYPES}
{_TAKE}
    llvm.return
  }}
}}"""
    for op in list(parse_mlir(text).body.block.ops):
        op.detach()
        if op.sym_name.data == thread:
            op.attributes[THREAD] = StringAttr(name)
        module.body.block.add_op(op)
    return site
