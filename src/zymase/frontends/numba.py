"""Numba front end: a ``@numba.njit`` function in, a native derivative kernel out.

Pipeline, for one function, argument types and activities:

1. **Numba IR** (:mod:`zymase.frontends.numba_copy`, re-exported here). The function
   (and every njit function it names as a global or in its closure) is recompiled as
   a private copy with Numba's LLVM optimization switched off (``NUMBA_OPT=0``); the
   user's own dispatchers are never touched. ``prange`` loops stay parfors, whose
   derivatives fork through Numba's threading layer (transforms/numba_parfor.py); when
   a reverse sweep cannot recompute one, the kernel is built from a copy without
   ``parallel=True`` instead.
2. **Kernel source** (:mod:`zymase.frontends.numba_kernel`). Around Numba's entry
   point ``i32 f(retptr, excinfo, args...)`` we write two functions in LLVM IR text:
   ``status_f``, which stores ``f``'s status code instead of returning it (reverse mode
   returns only derivatives), and the kernel,
   which calls ``__enzyme_autodiff``/``__enzyme_fwddiff`` on ``status_f`` with one
   Enzyme marker per flattened argument. The kernel itself follows Numba's calling
   convention, so njit code calls it like any njit function and Numba's exceptions
   propagate (the primal's ``excinfo`` is the kernel's).
3. **Differentiation** as for C: the pre-AD pipeline (no vectorization, no unrolling
   but of ``int_power``'s loop, :func:`unroll_integer_powers`)
   plus Numba's reference-count pruning, the enzyme pass, tape lowering, then the full
   O3 pipeline and MCJIT. Numba's runtime helpers (``NRT_incref``/``NRT_decref``/
   ``NRT_MemInfo_data_fast``) are kept as calls through AD (the memory model knows
   them) and their definitions are put back before the final pipeline inlines them.
4. **Linking.** The final module, every function but the kernel made ``internal``
   (MCJIT drops ``linkonce_odr`` definitions), is compiled by an MCJIT engine of its
   own (:func:`_jit_in_numba`; Numba's runtime symbols resolve through LLVM's
   process-wide table, where Numba registers them). The kernel's address is published
   with ``llvmlite.binding.add_symbol``; an intrinsic in :mod:`zymase.api` declares the
   kernel by name and calls it from njit code.

Kernels are cached in memory per (function, argument types, activities, options), and
on disk (final LLVM IR, in :mod:`zymase.cache`) when asked, keyed by the function's
code, the activities and options, and the engine's version and sources.
"""

from __future__ import annotations

import dataclasses

import os
import re
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from zymase.autodiff.names import ABANDON
from zymase.collect_rarely import collecting_garbage_rarely
from zymase.autodiff.rules.numba_linalg import LINALG_WITH_RULES
from zymase.autodiff.rules.numba_linalg import NUMPY_NAMES as NUMPY_LINALG
from zymase.errors import VectorModeRefused, ZymaseError
from zymase.ir.xdsl_import import importing_xdsl
from zymase.llvm.quiet_hints import unroll_warnings_hidden
from zymase.transforms.numba_parfor import FORK, ParforSerial, forks_a_derivative

from zymase.frontends.numba_copy import (  # noqa: F401 - step 1's names, re-exported
    NumbaIR, _declared, _dispatcher_refs, _functions, _lock, as_dispatcher, function_label, numba_ir,
)
from zymase.frontends.numba_kernel import (  # noqa: F401 - the kernel's names, re-exported
    ACTIVE, CONST, DUP, DUPNONEED, KernelSpec, _promotion, _q, active_leaves, has_shadow, is_float_tuple,
    kernel_ir, kernel_types,
)
from zymase.frontends.numba_blas_loops import define_blas_loops  # noqa: F401 - re-exported (api_sparse)

#: Numba runtime helpers defined inside every Numba module. They stay calls during AD
#: (the memory model gives them meaning) and get their bodies back afterwards.
NRT_HELPERS = ("NRT_incref", "NRT_decref", "NRT_MemInfo_data_fast", "nrt_atomic_add", "nrt_atomic_sub")
_NRT_DECLS = {
    "NRT_incref": "declare void @NRT_incref(ptr) nounwind",
    "NRT_decref": "declare void @NRT_decref(ptr) nounwind",
    # the data pointer of a MemInfo never changes: a read-only call LLVM may CSE and hoist
    "NRT_MemInfo_data_fast": "declare ptr @NRT_MemInfo_data_fast(ptr) nounwind willreturn memory(argmem: read)",
    "nrt_atomic_add": "declare i64 @nrt_atomic_add(ptr) nounwind",
    "nrt_atomic_sub": "declare i64 @nrt_atomic_sub(ptr) nounwind",
}


# --------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------


@dataclass
class CompileRecord:
    """One kernel compilation (``zymase.stats()``)."""

    function: str
    signature: str
    mode: str
    activities: tuple
    phases: dict[str, float] = field(default_factory=dict)
    cached: str = ""  # "", "disk"
    parfors: str = ""  # prange loops: "", "parallel" (derivatives forked), "serial" (the serial copy's)
    width: int = 1  # vector mode (KernelSpec.width)

    @property
    def total(self) -> float:
        return sum(self.phases.values())

    def summary(self) -> str:
        parts = " ".join(f"{k}={v * 1000:.0f}ms" for k, v in self.phases.items())
        src = " (from disk cache)" if self.cached == "disk" else ""
        src += f" (prange loops: {self.parfors})" if self.parfors else ""
        mode = f"{self.mode} (width {self.width})" if self.width > 1 else self.mode
        return (f"zymase: compiled {mode} kernel of {self.function}{self.signature} "
                f"activities={self.activities} in {self.total:.3f} s{src}: {parts}")


_records: list[CompileRecord] = []


def stats() -> list[CompileRecord]:
    """Every kernel compiled in this process, oldest first."""
    return list(_records)


def _debug() -> bool:
    return os.environ.get("ZYMASE_DEBUG", "") not in ("", "0")


@contextmanager
def _phase(rec: CompileRecord, name: str):
    t0 = time.perf_counter()
    try:
        yield
    finally:
        rec.phases[name] = rec.phases.get(name, 0.0) + time.perf_counter() - t0


#: njit callees longer than this (lines of Numba's unoptimized IR) are left to LLVM's
#: inliner; a callee of a few hundred lines of source stays under it.
_INLINE_MAX_LINES = 4000


def mark_callees_inline(text: str, entries) -> str:
    """Mark Numba's ``linkonce_odr`` definitions (the njit functions f calls, and the
    library overloads) ``alwaysinline``. LLVM's cost model keeps a call such as GMM's
    ``qtimesx`` out of line, and a call in the middle of a loop costs reverse mode
    dearly: the callee's tape is separate per call, stores before the call cannot be
    forwarded into it, and the reference counts Numba wraps around every call
    (atomic, several per argument) are left in place once jump threading splits the
    blocks around them."""
    lines, fns = _functions(text)
    # noinline may be spelled in the header or in an attribute group it names (Numba's
    # dictionary and list helpers); LLVM rejects a function marked both ways
    groups = set(re.findall(r"^attributes (#\d+) = \{[^}]*\bnoinline\b", text, re.M))
    for name, a, b in fns:
        head = lines[a]
        keeps_out_of_line = "noinline" in head or any(g in groups for g in re.findall(r"#\d+", head))
        # f itself goes into the status wrapper (see kernel_ir)
        if ((head.startswith("define linkonce_odr ") or name in entries) and head.endswith("{")
                and not keeps_out_of_line and b - a <= _INLINE_MAX_LINES):
            # an attribute goes before the metadata attachments (debug=True's !dbg !N)
            body = head[:-1].rstrip()
            attached = re.search(r"(\s+![\w.]+\s+!\d+)+$", body)
            cut = attached.start() if attached else len(body)
            lines[a] = body[:cut] + " alwaysinline" + body[cut:] + " {"
    return "\n".join(lines) + "\n"


def discard_once_inlined(text: str, entries) -> str:
    """Give ``linkonce_odr`` linkage, which Numba's callees have, to the ``entries``
    whose every use is a direct call from another function (f, called only by its
    status wrapper), so that the always-inliner deletes them once it has inlined them.
    Numba defines f with external linkage: a second copy of its body, which nothing
    calls, went through the pre-AD passes, the reader and the writer (issue 29: a
    third of the pre-AD work on GMM) before the final pipeline dropped it. A function
    called nowhere (the sparsity analysis reads f itself), calling itself or whose
    address is taken keeps its linkage."""
    lines, fns = _functions(text)
    for name, a, _ in fns:
        if name not in entries or not lines[a].startswith("define ") or _LINKAGE_WORD.match(lines[a], 7):
            continue
        needle = f"@{_q(name)}"
        use = re.compile(rf"{re.escape(needle)}(?![\w.$-])")
        inside = [(a2, b2) for n2, a2, b2 in fns if n2 != name]
        # (the substring test first: a regex search of each of the module's lines was
        # about 8M instructions of kpp's first grad)
        uses = [i for i, ln in enumerate(lines) if i != a and needle in ln and use.search(ln)]
        if uses and all(len(use.findall(lines[i])) == 1 and _DIRECT_CALL.match(lines[i])
                        and use.search(lines[i].split(" call ", 1)[1].split("(", 1)[0])
                        and any(a2 < i < b2 for a2, b2 in inside) for i in uses):
            lines[a] = "define linkonce_odr " + lines[a][len("define "):]
    return "\n".join(lines) + "\n"


_LINKAGE_WORD = re.compile(r"(?:private|internal|available_externally|linkonce|weak|common|appending|extern_weak|"
                           r"linkonce_odr|weak_odr|external)\b")
_DIRECT_CALL = re.compile(r"^\s+(?:%[\w.$-]+ = )?(?:(?:tail|musttail|notail) )?call ")


_BLOCK_LABEL = re.compile(r"^([\w.$-]+):")
_BRANCH = re.compile(r"^\s+br (?:label %([\w.$-]+)|i1 [^,]+, label %([\w.$-]+), label %([\w.$-]+))")


def unroll_integer_powers(text: str) -> str:
    """Ask LLVM to unroll fully the loop of Numba's ``int_power`` (``x ** n`` for a float
    ``x`` and an integer ``n`` that Numba did not type as a literal; ``x ** 2`` in most
    loops). The pre-AD pipeline does not unroll (Enzyme's recipe), so once the exponent
    is inlined as a constant the loop stayed, with a data-dependent trip count: reverse
    mode taped every squaring on a growing stack, about 400x the primal for Rosenbrock's
    ``(x[i + 1] - x[i] ** 2) ** 2``. ``llvm.loop.unroll.full`` makes the pre-AD pipeline
    unroll it when the trip count is a known constant, into the multiplications Numba's
    own constant-exponent lowering would give (the same ones in the same order, so the
    primal is unchanged); with an exponent known only at run time the loop stays."""
    lines, fns = _functions(text)
    ids = [int(n) for n in re.findall(r"!(\d+)\b", text)]
    next_id = max(ids, default=0) + 1
    nodes = []
    for name, a, b in fns:
        if "int_power_impl" not in name:
            continue
        seen_blocks, loop_id = set(), None
        for k in range(a + 1, b):
            label = _BLOCK_LABEL.match(lines[k])
            if label:
                seen_blocks.add(label.group(1))
                continue
            branch = _BRANCH.match(lines[k])
            if not branch or "!llvm.loop" in lines[k]:
                continue
            # a branch back to a block already laid out is the latch: Numba lays blocks
            # out in bytecode order, and the exponent loop is the function's only loop
            if seen_blocks.intersection(t for t in branch.groups() if t):
                if loop_id is None:
                    loop_id = next_id
                    nodes.append(f"!{loop_id} = distinct !{{!{loop_id}, !{loop_id + 1}}}")
                    nodes.append(f'!{loop_id + 1} = !{{!"llvm.loop.unroll.full"}}')
                    next_id += 2
                lines[k] += f", !llvm.loop !{loop_id}"
    return "\n".join(lines + nodes) + "\n"


def split_nrt_helpers(text: str) -> tuple[str, str]:
    """Replace the bodies of Numba's runtime helpers by declarations; returns (module
    text, the removed definitions)."""
    lines, fns = _functions(text)
    removed, drop, decls = [], set(), []
    for name, a, b in fns:
        if name in NRT_HELPERS:
            # metadata attachments (!prof branch weights) refer to module-level nodes
            # that do not travel with the body, and so do attribute groups (#N), which the
            # module's numbering changes when AD links a runtime in (the MPI rules'): a
            # stale #N gave NRT_incref another function's memory(argmem: read) and LLVM
            # deleted the increfs
            removed.append(re.sub(r", ![\w.]+ !\d+| #\d+\b", "", "\n".join(lines[a : b + 1])))
            drop.update(range(a, b + 1))
            decls.append(_NRT_DECLS[name])
    kept = [ln for k, ln in enumerate(lines) if k not in drop]
    # declarations the helpers call (NRT_MemInfo_call_dtor, ...): the pre-AD pipeline
    # may delete them as unused, so they travel with the definitions
    body = "\n".join(removed)
    for ln in lines:
        name = _declared(ln)
        if name and f"@{name}(" in body and name not in NRT_HELPERS:
            removed.append(ln)
    return "\n".join(kept + decls) + "\n", "\n\n".join(removed) + "\n"


def restore_nrt_helpers(text: str, definitions: str) -> str:
    """Put the runtime helpers' definitions back in place of their declarations."""
    if not definitions.strip():
        return text
    _, fns = _functions(definitions)
    names = {n for n, _, _ in fns}
    declared = set()
    out = []
    for ln in text.splitlines():
        name = _declared(ln)
        if name in names:
            continue
        if name:
            declared.add(name)
        out.append(ln)
    extra = [ln for ln in definitions.splitlines() if _declared(ln) not in declared or _declared(ln) is None]
    return "\n".join(out) + "\n" + "\n".join(extra) + "\n"


# --------------------------------------------------------------------------------------
# Step 2: the kernel's LLVM IR (frontends/numba_kernel.py) and nested requests
# --------------------------------------------------------------------------------------


def nested_ir(ir: NumbaIR, spec: KernelSpec, symbol: str) -> NumbaIR:
    """For a nested request (``spec.inner`` set): Numba's IR plus the inner kernel's
    source (still calling ``__enzyme_autodiff``), presented as the function the outer
    request differentiates. The inner kernel follows Numba's calling convention, so the
    outer kernel wraps it exactly as it wraps an njit function; the marker rounds of
    the C path then differentiate the inner site first and the outer one over its
    result (forward over reverse)."""
    inner_symbol = symbol + "0"  # still a kernel name (_KERNEL_NAME) in messages
    k_args, k_res = kernel_types(ir, spec.inner)
    text = ir.text + "\n" + kernel_ir(ir, spec.inner, inner_symbol)
    return NumbaIR(text, inner_symbol, k_res, k_args, ir.context, ir.seconds, ir.environment,
                   inline_too=(ir.entry, *ir.inline_too))


# --------------------------------------------------------------------------------------
# Step 3 and 4: differentiate, compile, publish
# --------------------------------------------------------------------------------------


@dataclass
class Kernel:
    spec: KernelSpec  # as compiled (constant arrays written with active data promoted)
    symbol: str
    argtypes: tuple  # Numba types of the kernel's arguments
    restype: object  # Numba tuple type
    address: int
    record: CompileRecord
    _engine: object = None  # keeps the machine code alive


_kernels: dict = {}


def _source_key(disp, seen=None) -> list:
    """What the disk cache key covers for a function and its njit callees: their code
    (bytecode, constants, names) and the modification stamp of their source files."""
    seen = set() if seen is None else seen
    if disp in seen:
        return []
    seen.add(disp)
    py = disp.py_func
    code = py.__code__
    try:
        st = os.stat(code.co_filename)
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None
    parts = [py.__module__, py.__qualname__, code.co_code.hex(), repr(code.co_consts), code.co_names,
             code.co_filename, stamp, repr(sorted(disp.targetoptions.items(), key=str))]
    for _, callee, _ in _dispatcher_refs(py):
        parts += _source_key(callee, seen)
    # a transform's trampoline (passed as an argument) stands for the transform
    transforms = [getattr(disp, "zymase_transform", None)]
    for name in code.co_names:
        # a zymase.grad(g) the function calls (api.Transformed, or another transform
        # njit code can call): g's code is linked in and differentiated with it
        # (with_called_kernels), and what the transform computes is part of the key:
        # the njit function zymase.grad(zymase.grad(g, 0)) differentiates has the same
        # code as the one of grad(grad(g, 1))
        transforms.append(py.__globals__.get(name))
    for transform in transforms:
        inner = getattr(transform, "disp", None)
        if inner is not None and hasattr(inner, "py_func"):
            parts.append(repr((type(transform).__name__, getattr(transform, "api", None),
                               getattr(transform, "argnums", None),
                               sorted(getattr(transform, "options", {}).items()))))
            parts += _source_key(inner, seen)
    return parts


def _disk_key(disp, argtypes, spec: KernelSpec) -> str:
    import numba

    from zymase import cache as derivative_cache

    from zymase.llvm import toolchain

    # the host CPU: the linear-algebra runtime in the kernel is compiled for it
    parts = ["numba kernel", numba.__version__, sys.version, toolchain.host_cpu_identity(), repr(spec),
             repr(tuple(str(t) for t in argtypes)),
             *map(repr, _source_key(disp))]
    seen: set = set()
    todo = list(argtypes)
    while todo:
        t = todo.pop()
        if isinstance(t, numba.core.types.BaseTuple):
            todo += t.types
        elif isinstance(t, numba.core.types.Dispatcher):
            # an njit function passed as an argument is compiled into the kernel: its code
            # is part of the key (its type names it only by name and address)
            parts += map(repr, _source_key(t.dispatcher, seen))
    return derivative_cache.make_key(*parts)


def get_kernel(disp, argtypes: tuple, spec: KernelSpec, *, cache: bool = False, promote: bool = False) -> Kernel:
    """The compiled kernel for ``disp`` at ``argtypes`` with ``spec`` (compiled once).

    ``promote``: a constant float array that receives active data (``x[i] = a * x[i]``
    with ``a`` differentiated) is duplicated instead of being an error; the returned
    kernel's ``spec`` says which activities were compiled."""
    key = (disp, tuple(argtypes), spec, promote)
    with _lock:
        k = _kernels.get(key)
        if k is None:
            while True:
                try:
                    # (the engine's modules a first build imports, toolchain, frontends/c and
                    # llvm/reachable among them, make their dataclasses in xdsl_import's window)
                    with collecting_garbage_rarely(), importing_xdsl():
                        k = _compile_kernel(disp, tuple(argtypes), spec, cache)
                    break
                except ZymaseError as err:
                    acts = _promotion(numba_ir(disp, tuple(argtypes)), spec, err)
                    if acts is None:
                        if not spec.preopt:
                            from zymase.frontends import numba_unoptimized

                            unoptimized = numba_unoptimized.refusal(err, disp, numba_ir(disp, tuple(argtypes)))
                            if unoptimized is not None:
                                raise unoptimized from None
                        from zymase.frontends.numba_unoptimized import in_source_terms

                        raise (in_source_terms(err, disp) or _in_user_terms(err, disp)) from None
                    if not promote:
                        k_arg = next(i for i, (a, b) in enumerate(zip(acts, spec.activities)) if a != b)
                        names = disp.py_func.__code__.co_varnames
                        raise ZymaseError(
                            f"{function_label(disp)} writes differentiated values into argument {k_arg} "
                            f"('{names[k_arg]}'), which is constant",
                            construct="array store",
                            function=function_label(disp).strip("'"),
                            hint="pass that array as Duplicated(x, np.zeros_like(x)) so its derivative has a place",
                        ) from None
                    spec = dataclasses.replace(spec, activities=acts)
            _kernels[key] = k
        return k


#: kernel symbol -> the function it differentiates (to name a kernel njit code calls)
_kernel_functions: dict[str, str] = {}
#: kernel symbol -> (dispatcher, argument types, spec) of a kernel of width 1 (first
#: order or nested), whose source njit code that calls it (``g = df(x)``, ``h =
#: hess(x)``) links in to be differentiated again
_kernel_sources: dict[str, tuple] = {}
_CALLED_KERNEL = re.compile(r"^declare\b[^@]*@(__zymase_kernel_\d+_\d+_\d+)\(", re.M)


def with_called_kernels(ir: NumbaIR, depth: int = 0, serial: bool = False) -> NumbaIR:
    """``ir`` with the source of every zymase kernel it calls (njit code calling a
    ``zymase.grad`` of another function) linked in: Numba's IR of that function and
    the kernel text still calling ``__enzyme_autodiff``, so that the C path's marker
    rounds differentiate the inner request first and the outer one over it. A nested
    kernel (``hessian``/``hvp`` called from njit code) brings its inner kernel's source
    too (:func:`nested_ir`). A kernel whose source is not known (a vector-mode one)
    stays declared, and the engine refuses the call (``_in_user_terms`` names it)."""
    from zymase.llvm.toolchain import link_modules

    if "@__zymase_kernel_" not in ir.text:  # (a substring search, not a multiline regex's scan)
        return ir
    called = [k for k in dict.fromkeys(_CALLED_KERNEL.findall(ir.text)) if k in _kernel_sources]
    if not called:
        return ir
    if depth > 8:
        raise ZymaseError("zymase gradients called inside njit code nest more than 8 deep",
                          construct="call of zymase.grad(...) in njit code",
                          hint="differentiate fewer levels of gradients called from njit code")
    text = ir.text
    for symbol in called:
        disp, argtypes, spec = _kernel_sources[symbol]
        inner = with_called_kernels(numba_ir(disp, argtypes, serial), depth + 1, serial)
        if spec.inner is not None:
            inner = nested_ir(inner, spec, symbol)
        source = inner.text + "\n" + kernel_ir(inner, spec, symbol)
        # two kernels of one function (grad(f) and hvp(f) both called) bring the same
        # Numba function: one definition kept
        text = link_modules(text, source, same_definitions=True)
    return dataclasses.replace(ir, text=text)


_KERNEL_NAME = re.compile(r"__zymase_kernel_\d+_\d+_\d+(?:\.status)?(?:\.prepared)?")


def _in_user_terms(err: ZymaseError, disp) -> ZymaseError:
    """An engine error about the generated kernel, naming the user's function instead
    (Numba emits no source lines unless the function is compiled with ``debug=True``)."""
    from zymase.frontends.numba_mpi import in_numba_mpi_terms

    err = in_numba_mpi_terms(err)
    name = function_label(disp).strip("'")
    called = re.search(r"@(__zymase_kernel_\d+_\d+_\d+)\b(?!\.)", f"{err.construct or ''} {err.message}")
    if called and called.group(1) in _kernel_functions:
        # a kernel njit code calls whose source is not linked in (with_called_kernels:
        # only kernels of width 1 keep one) is machine code, not IR to differentiate
        return ZymaseError(
            f"{function_label(disp)} calls a derivative of '{_kernel_functions[called.group(1)]}' made by zymase "
            "inside njit code that zymase cannot differentiate again (only grad, value_and_grad, hessian and hvp "
            "kernels are)",
            construct="call of zymase.grad(...) in njit code",
            function=name,
            hint="for second derivatives call zymase.hessian(f), zymase.hvp(f), zymase.jacfwd(zymase.grad(f)) or "
            "zymase.grad(zymase.grad(f)) from Python (forward over reverse)")
    derivative = re.search(r"@__zymase_nblas_[ds](\w+?)_(?:save|fwd|rev)\b", err.construct or "")
    if derivative and f"numba_{derivative.group(1)}" in NUMPY_LINALG:
        # a second-order request: the outer sweep meets the first derivative of a NumPy
        # linear-algebra call, compiled C (rules/numba_linalg_runtime.c) without rules of its own
        numpy = NUMPY_LINALG[f"numba_{derivative.group(1)}"]
        return ZymaseError(
            f"second derivatives through {numpy} are not supported in zymase: {function_label(disp)} applies it "
            "to differentiated data, and its first derivative is compiled code that cannot be differentiated again",
            construct=f"{numpy} under a second-order transform",
            function=name,
            hint="take first derivatives of this function (grad, jvp, vjp, jacfwd, jacrev); second order works "
            "through '@' and np.dot, and through linear algebra written as loops")
    hint, construct = err.hint, err.construct
    runtime = re.search(r"@(numba_\w+)", err.construct or "")
    message = err.message
    # the C-minded hints ("define the function in the same file") mean nothing here
    if runtime and "memory holding active data" in err.message and runtime.group(1) in NUMPY_LINALG:
        numpy = NUMPY_LINALG[runtime.group(1)]
        message = (f"{numpy} has no derivative in zymase: {function_label(disp)} applies it to "
                   "differentiated data")
        hint = (f"zymase differentiates {LINALG_WITH_RULES} in njit code; apply {numpy.split(' ')[0]} "
                "only to values that are not differentiated")
    elif runtime and "memory holding active data" in err.message:
        hint = (f"'{runtime.group(1)}' is compiled C in Numba's runtime (np.linalg, '@' on 2-D arrays, "
                "typed dicts and lists and some NumPy functions call such routines), which zymase cannot "
                "see into; write that step as loops over arrays in the njit function")
    elif runtime and err.message.startswith("no derivative rule"):
        hint = (f"'{runtime.group(1)}' is Numba's C helper for a math or NumPy function (math.frexp calls "
                "numba_frexp) that zymase has no derivative rule for; apply it only to values that are "
                "not differentiated, or write it with functions that have rules (exp, log, sin, ...)")
    elif message.startswith("an indirect call through a function pointer"):
        # no pointer the user wrote: Numba calls a recursive function from another one,
        # and a function passed as an argument, through a pointer (the C text says "file")
        message = (f"{function_label(disp)} or a function it calls makes a call through a function pointer, "
                   "as Numba compiles the call of a recursive njit function from another function and the call "
                   "of a function passed as an argument; zymase cannot tell which function it calls")
        hint = "write the recursion as a loop, or call the function by name instead of through an argument"
        construct = "call through a function pointer"
    if err.location is None:
        hint = (hint + "; " if hint else "") + "compile the function with @njit(debug=True) to see source lines"
    # a vector-mode refusal stays one: the transforms that chose the width fall back to width 1
    cls = VectorModeRefused if isinstance(err, VectorModeRefused) else ZymaseError
    return cls(
        _KERNEL_NAME.sub(name, message),
        construct=construct,
        function=_KERNEL_NAME.sub(name, err.function) if err.function else name,
        location=err.location,
        hint=hint,
    )


def _compile_kernel(disp, argtypes: tuple, spec: KernelSpec, cache: bool) -> Kernel:
    import llvmlite.binding as ll

    from zymase import cache as derivative_cache

    sig = "(" + ", ".join(str(t) for t in argtypes) + ")"
    rec = CompileRecord(function_label(disp).strip("'"), sig, spec.mode, spec.activities, width=spec.width)
    disk_key = _disk_key(disp, argtypes, spec) if cache and derivative_cache.enabled() else None
    symbol = f"__zymase_kernel_{len(_kernels)}_{os.getpid()}_{abs(hash((disp, argtypes, spec))) % 10**8}"
    final = None
    if disk_key:
        with _phase(rec, "load"):
            stored = derivative_cache.load(disk_key, "numba.ll")
        if stored is not None:
            final = stored.decode().replace("@__zymase_cached_kernel", f"@{symbol}")
            rec.cached = "disk"
    # (a kernel of the serial copy says so in its first line, for the disk cache)
    ir = _kernel_source(disp, argtypes, spec, symbol, rec, serial=(final or "").startswith(_SERIAL))
    k_args, k_res = kernel_types(ir, spec)
    if final is None:
        try:
            final = differentiate_numba_ir(ir, spec, symbol, rec)
        except ParforSerial as why:
            # a prange loop whose reverse sweep cannot recompute it (or a nested or vector
            # request over one): the derivative of the serial copy (docs/architecture.md, 10)
            if _debug():
                print(f"zymase: {why.format()}: the serial derivative", file=sys.stderr)
            ir = _kernel_source(disp, argtypes, spec, symbol, rec, serial=True)
            final = _SERIAL + differentiate_numba_ir(ir, spec, symbol, rec)
        if disk_key:
            stored = final.replace(f"@{symbol}", "@__zymase_cached_kernel")
            derivative_cache.store(disk_key, "numba.ll", stored.encode())
    # (a module that never names the threading layer forks nothing: the substring test
    # spares the regex's scan of the whole module)
    forks = FORK in final and forks_a_derivative(final)
    rec.parfors = "serial" if final.startswith(_SERIAL) else "parallel" if forks else ""
    _check_jit_supported(final, disp)
    with _phase(rec, "jit"):
        engine, addr = _jit_in_numba(final, symbol, ir.environment)
        ll.add_symbol(symbol, addr)
    _records.append(rec)
    _kernel_functions[symbol] = rec.function
    if spec.width == 1:
        _kernel_sources[symbol] = (disp, tuple(argtypes), spec)
    if _debug():
        print(rec.summary(), file=sys.stderr)
    return Kernel(spec, symbol, k_args, k_res, addr, rec, engine)


_SERIAL = "; zymase: the derivative of the serial copy (prange loops as range)\n"


def _kernel_source(disp, argtypes: tuple, spec: KernelSpec, symbol: str, rec, serial: bool) -> NumbaIR:
    """Numba's IR of the function, the kernels it calls and a nested request's inner kernel."""
    ir = numba_ir(disp, argtypes, serial)
    rec.phases["numba"] = rec.phases.get("numba", 0.0) + ir.seconds
    ir = with_called_kernels(ir, serial=serial)
    if spec.inner is not None:
        ir = nested_ir(ir, spec, symbol)
    return ir


def _check_jit_supported(text: str, disp) -> None:
    """MCJIT cannot allocate thread-local storage and aborts the process ("LLVM ERROR:
    allocation of TLS not implemented"); the thread-local tape of split-mode derivatives
    (recursive functions that take arrays) would need it."""
    if "thread_local" in text and re.search(r"^@\S+ = .*\bthread_local\b", text, re.M):
        raise ZymaseError(
            f"{function_label(disp)} is recursive: its derivative needs a thread-local tape (Numba passes "
            "pointers to every call), which Numba's JIT cannot allocate",
            construct="recursive call",
            function=function_label(disp).strip("'"),
            hint="write the recursion as a loop",
        )


def _jit_in_numba(text: str, symbol: str, environment):
    """Machine code for the kernel module; returns (engine, kernel address).

    The module is already optimized (``differentiate_numba_ir``), so it goes straight to
    an MCJIT engine of its own rather than through a Numba code library, whose
    ``finalize`` would run Numba's optimization pipeline over it again (0.3 s per kernel,
    against 0.1 s). Numba's runtime and helper symbols (``NRT_*``, ``numba_*``) resolve
    because Numba registers them with LLVM's process-wide symbol table when its CPU
    target starts, which ``numba_ir`` has made happen before we get here."""
    from numba.core.registry import cpu_target

    from zymase.autodiff.rules.numba_linalg import SCIPY_PREFIX, register_scipy_symbols
    from zymase.llvm.jit import jit

    cpu_target.target_context  # noqa: B018 - starts Numba's runtime (registers its symbols)
    if SCIPY_PREFIX in text:
        register_scipy_symbols()  # the BLAS/LAPACK the linear-algebra derivatives call
    if "numba_mpi" in sys.modules:  # (numba_mpi.in_use: none without numba-mpi loaded)
        from zymase.frontends.numba_mpi import load_libmpi

        load_libmpi(text)  # numba-mpi's calls, made direct calls of libmpi's symbols
    engine = jit(text, opt=3)
    _link_environments(engine, text, environment)
    return engine, engine.address(symbol)


#: a global's line (matched in "\n" + the text: a literal first, so the search skips from
#: line to line; a multiline ``^`` was tried at every character, ~8M instructions of kpp)
_ENVIRONMENT_GLOBAL = re.compile(r"\n@(_ZN08NumbaEnv\S+) = ")


def _link_environments(engine, text: str, environment) -> None:
    """Point the module's copies of Numba's environment globals (``_ZN08NumbaEnv...``:
    the Python objects a function needs to box values, e.g. the arguments of a raised
    exception) at the environments Numba made for those functions. Inside Numba's own
    engine the copies would resolve to the one global by name; in an engine of our own
    each is a fresh null pointer, which Numba reports as "missing Environment".
    ``environment`` is the differentiated function's own (its compile result keeps it;
    Numba's registry of environments holds them only weakly); the environments of njit
    callees inlined into it are alive in their dispatchers and found by name."""
    import ctypes

    from numba.core.environment import lookup_environment

    kept = []
    for name in _ENVIRONMENT_GLOBAL.findall("\n" + text):
        env = environment if getattr(environment, "env_name", None) == name else lookup_environment(name)
        if env is None:
            continue  # none made (or no longer alive): left null, as Numba would
        ctypes.c_void_p.from_address(engine.address(name)).value = id(env)
        kept.append(env)
    engine.environments = kept  # the globals hold borrowed pointers: keep the objects alive


def _timed_step(rec: CompileRecord, name: str, step):
    """``step`` (a function of an llvmlite module) timed as phase ``name``; the time is
    also taken out of the phase that encloses it (``llvm text``: parsing and printing)."""

    def timed(module) -> None:
        t0 = time.perf_counter()
        with _phase(rec, name):
            step(module)
        rec.phases["llvm text"] = rec.phases.get("llvm text", 0.0) - (time.perf_counter() - t0)

    return timed


def differentiate_numba_ir(ir: NumbaIR, spec: KernelSpec, symbol: str, rec: CompileRecord) -> str:
    """Numba IR plus kernel source -> optimized LLVM IR with the kernel differentiated."""
    from zymase.frontends.c import Timings, differentiate_llvm_ir
    from zymase.llvm import toolchain

    with _phase(rec, "kernel"):
        # the call rules serve first-order kernels; forward vector (and Laplacian) kernels
        # too, for the helpers whose rule takes every lane at once (gemv: one gemm)
        call_rules = spec.inner is None and (spec.width == 1 or spec.mode == "fwd")
        text, helpers = split_nrt_helpers(define_blas_loops(ir.text, rules=call_rules))
        text = text + "\n" + kernel_ir(ir, spec, symbol)
    with _phase(rec, "refprune"):
        text = toolchain.prune_refcounts(text)
    if spec.preopt:
        # the pre-AD pipeline inlines Numba's helpers (array views, allocation); the
        # incref/decref pairs that meet only then are pruned by a second refprune
        from zymase.llvm.loop_hints import hide_vectorization_hints
        from zymase.llvm.pre_ad_marks import protect_marker_calls

        with _phase(rec, "llvm text"):
            # what the steps below need said in the text (the callees' alwaysinline, f's
            # linkage, the markers' nomerge) is said before they run: the passes keep the
            # attributes of declarations and the linkage as they find them. (On the text
            # LLVM prints, not Numba's own: unroll_integer_powers reads LLVM's spelling.)
            entries = (ir.entry, *ir.inline_too)
            hinted = unroll_integer_powers(text)
            # a hint LLVM could not honour (a run-time exponent) is not the user's to see
            zymase_hints = hinted != text
            text = hide_vectorization_hints(protect_marker_calls(discard_once_inlined(
                mark_callees_inline(hinted, entries), entries)))
        # inline first and prune the reference counts then, while each call's
        # incref/decref pairs still sit in blocks that dominate each other; the steps
        # share one parse and one print (each step's own text round trip was a parse, two
        # verifications and a print: issue 29, first-call time)
        steps = (("inline", toolchain.inline_always_module), ("refprune", toolchain.prune_refcounts_module),
                 ("preopt", lambda module: toolchain.preopt_module(module, 2)),
                 ("refprune", toolchain.prune_refcounts_module))
        with _phase(rec, "llvm text"), unroll_warnings_hidden(zymase_hints):
            text = toolchain.on_module(text, *(_timed_step(rec, name, step) for name, step in steps))
    else:
        zymase_hints = False
        # AD before optimization, on Numba's IR in SSA form: arrays travel as structs in
        # stack slots at -O0, which only SROA/instcombine turn into values
        with _phase(rec, "ssa"):
            text = toolchain.ssa_form(text)
    if "numba_mpi" in sys.modules:  # numba-mpi's ctypes calls named for the MPI rules (numba_mpi.in_use)
        from zymase.frontends import numba_mpi

        with _phase(rec, "mpi"):
            named = numba_mpi.name_mpi_calls(text)
            text = numba_mpi.ignore_statuses(toolchain.ssa_form(named)) if named != text else text
    from zymase.autodiff.checkpoint import limiting_tape
    from zymase.autodiff.semantics import derivative_semantics

    timings = Timings()
    with derivative_semantics(strong_zero=spec.strong_zero), limiting_tape(spec.tape_limit):
        out = differentiate_llvm_ir(text, f"<numba {rec.function}>", 2, timings, preoptimize=False)
    rec.phases.update(timings.phases)
    # the marker has done its job; calls left in forward-mode code call nothing
    # (the pattern starts with a literal, so the search skips from line to line: with a
    # multiline ``^`` it was tried at every character of the module, ~7M instructions of
    # kpp's first grad)
    out = re.sub(rf"\ndeclare void @{ABANDON}\(\)[^\n]*", f"\ndefine internal void @{ABANDON}() {{\n  ret void\n}}",
                 "\n" + out)[1:]
    with _phase(rec, "optimize"):
        # the runtime is linked after the helpers are back: linking reprints the module,
        # renumbering the attribute groups the helpers' text refers to
        out = _link_linalg_runtime(internalize(restore_nrt_helpers(out, helpers), keep=symbol))
        # Laplacian kernels for the host CPU: their element loops, vectorized
        # (transforms/broadcast_strides.py), get its vector width (4 doubles rather than
        # SSE2's 2: 3.5% of the two-layer MLP's time at d = 64, and of the one-layer's)
        with unroll_warnings_hidden(zymase_hints):
            out = toolchain.optimize(out, spec.opt, for_jit=True, host=spec.laplacian)
    return out


#: whether Numba kernels link zymase's linear-algebra runtime compiled for the host CPU
RUNTIME_FOR_HOST = True


def _link_linalg_runtime(text: str) -> str:
    """The derivatives of Numba's BLAS/LAPACK helpers (autodiff/rules/numba_linalg.py)
    call C code of zymase's: linked into the module when they do."""
    from zymase.autodiff.rules.numba_linalg import RUNTIME_PREFIX, RUNTIME_SOURCE
    from zymase.llvm import toolchain

    if f"@{RUNTIME_PREFIX}" not in text:
        return text
    # for the host CPU, as Numba compiles: the kernel runs in this process (unit lanes
    # of W @ x at d = 64: 13.8 us for generic x86-64 against 11.1 us with -march=native)
    linked = toolchain.link_c_runtime(text, RUNTIME_SOURCE, RUNTIME_PREFIX, host=RUNTIME_FOR_HOST)
    missing = re.findall(rf"^declare[^@]*@({RUNTIME_PREFIX}\w+)\(", linked, re.M)
    if missing:  # the JIT would resolve them to null
        raise ZymaseError(f"zymase's linear-algebra runtime lacks '{missing[0]}' (an internal error)",
                          hint="report this to the zymase developers")
    return linked


_LINKAGE = re.compile(r"^define\s+(?:(?:linkonce_odr|linkonce|weak_odr|weak|external|available_externally)\s+)?")


def internalize(text: str, keep: str) -> str:
    """Every function but the kernel becomes ``internal``. MCJIT drops ``linkonce_odr``
    definitions (Numba's callees and runtime helpers are linkonce_odr) and the call
    then jumps to address 0; internal ones are kept, and O3 may inline and delete them."""
    out = []
    for ln in text.splitlines():
        if ln.startswith("define") and f"@{_q(keep)}(" not in ln and " internal " not in ln.split("@")[0] + " ":
            ln = _LINKAGE.sub("define internal ", ln, count=1)
        out.append(ln)
    return "\n".join(out) + "\n"
