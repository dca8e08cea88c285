"""LLVM's release build for the heavy steps: the O-level pipelines and code generation run
in the system's shared LLVM library (``libLLVM.so.22``, Debian's ``libllvm22``) through
LLVM's C API, when it is there and is llvmlite's major version.

Why: llvmlite's wheels carry an LLVM built with assertions (``-debug-only`` is accepted),
which runs the same pipeline on the same IR 1.5-2x slower than a release build (hand's
derivative module: the O2 pipeline 0.45 s against 0.24-0.30 s, its object code 0.20 against
0.13 s; issue 29). Same major version, same passes: the output is the same text
(tests/python/test_release_llvm.py compares the two on the bench workloads). ``zymase cc``
also parses, verifies, links and prints its modules here (:class:`Module`, :class:`Context`),
so that it never loads llvmlite's LLVM (0.07 s to load, and its parser and verifier run
with assertions). llvmlite stays the JIT's engine (MCJIT) and the Numba path's, and the
fallback: without the library, or with ``ZYMASE_LLVM=llvmlite``, :func:`available` is false
and every step runs in llvmlite as before.

Each call works in a context and with a target machine of its own, created and disposed
here, so that calls from several threads do not share LLVM state (modules linked together
share a :class:`Context`); each context reports LLVM's diagnostics to Python: without a
handler LLVM prints an error and exits the process (a failed link, an error in code
generation); LLVM's command-line
options are process-wide, so a pipeline run holds :data:`_OPTIONS_LOCK` while it sets them,
runs and gives them back (pipelines run one at a time; code generation does not wait).
"""

from __future__ import annotations

import ctypes
import enum
import functools
import os
import platform
import threading
from contextlib import contextmanager

_P = ctypes.c_void_p
_STR = ctypes.c_char_p

#: the C API's enums used here (llvm-c/TargetMachine.h, llvm-c/Analysis.h)
_RELOC = {"default": 0, "static": 1, "pic": 2}
_CODE_MODEL = {"default": 0, "jitdefault": 1, "small": 3, "large": 6}
_OBJECT_FILE = 1
_VERIFY_RETURN_STATUS = 2
_DIAGNOSTIC_ERROR, _DIAGNOSTIC_WARNING, _DIAGNOSTIC_NOTE = 0, 1, 3
_DIAGNOSTIC_HANDLER = ctypes.CFUNCTYPE(None, _P, _P)

#: llvmlite's version (major.minor) -> the LLVM major version its wheels carry; llvmlite
#: itself says so only once its own LLVM is loaded (``llvm_version_info``), which a build
#: that never needs llvmlite's LLVM should not pay (pyproject pins llvmlite 0.50)
_LLVMLITE_LLVM_MAJOR = {"0.50": 22}


class Linkage(enum.IntEnum):
    """LLVM's linkage kinds as the C API numbers them (llvmlite's ``Linkage`` uses the same
    numbers, so the two compare equal)."""

    external = 0
    available_externally = 1
    linkonce_any = 2
    linkonce_odr = 3
    weak_any = 5
    weak_odr = 6
    appending = 7
    internal = 8
    private = 9
    external_weak = 12
    common = 14

_OPTIONS_LOCK = threading.Lock()


class LLVMError(RuntimeError):
    """A step failed inside the library (parse, verification, pipeline, code generation)."""


class CodeGenerationError(LLVMError):
    """Code generation failed on a module that parsed (an inline assembly error, say)."""


def _candidates(major: int) -> list[str]:
    override = os.environ.get("ZYMASE_LIBLLVM")
    if override:
        return [override]
    return [f"libLLVM.so.{major}.1", f"libLLVM-{major}.so", f"libLLVM.so.{major}",
            f"/usr/lib/llvm-{major}/lib/libLLVM.so"]


class _Library:
    """The loaded library with the C API's functions typed."""

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib

        def fn(name: str, restype, *argtypes):
            f = getattr(lib, name)
            f.restype, f.argtypes = restype, list(argtypes)
            setattr(self, name.removeprefix("LLVM"), f)

        fn("LLVMContextCreate", _P)
        fn("LLVMContextDispose", None, _P)
        fn("LLVMCreateMemoryBufferWithMemoryRangeCopy", _P, _STR, ctypes.c_size_t, _STR)
        fn("LLVMParseIRInContext", ctypes.c_int, _P, _P, ctypes.POINTER(_P), ctypes.POINTER(_P))
        fn("LLVMVerifyModule", ctypes.c_int, _P, ctypes.c_int, ctypes.POINTER(_P))
        fn("LLVMPrintModuleToString", _P, _P)
        fn("LLVMDisposeModule", None, _P)
        fn("LLVMDisposeMessage", None, _P)
        fn("LLVMGetTarget", _STR, _P)
        fn("LLVMSetTarget", None, _P, _STR)
        fn("LLVMGetDataLayoutStr", _STR, _P)
        fn("LLVMSetDataLayout", None, _P, _STR)
        fn("LLVMGetTargetFromTriple", ctypes.c_int, _STR, ctypes.POINTER(_P), ctypes.POINTER(_P))
        fn("LLVMCreateTargetMachine", _P, _P, _STR, _STR, _STR, ctypes.c_int, ctypes.c_int, ctypes.c_int)
        fn("LLVMDisposeTargetMachine", None, _P)
        fn("LLVMCreatePassBuilderOptions", _P)
        fn("LLVMDisposePassBuilderOptions", None, _P)
        fn("LLVMPassBuilderOptionsSetLoopVectorization", None, _P, ctypes.c_int)
        fn("LLVMPassBuilderOptionsSetSLPVectorization", None, _P, ctypes.c_int)
        fn("LLVMPassBuilderOptionsSetLoopUnrolling", None, _P, ctypes.c_int)
        fn("LLVMRunPasses", _P, _P, _STR, _P, _P)
        fn("LLVMGetErrorMessage", _P, _P)
        fn("LLVMDisposeErrorMessage", None, _P)
        fn("LLVMParseCommandLineOptions", None, ctypes.c_int, ctypes.POINTER(_STR), _STR)
        fn("LLVMTargetMachineEmitToMemoryBuffer", ctypes.c_int, _P, _P, ctypes.c_int, ctypes.POINTER(_P),
           ctypes.POINTER(_P))
        fn("LLVMGetBufferStart", _P, _P)
        fn("LLVMGetBufferSize", ctypes.c_size_t, _P)
        fn("LLVMDisposeMemoryBuffer", None, _P)
        fn("LLVMContextSetDiagnosticHandler", None, _P, _DIAGNOSTIC_HANDLER, _P)
        fn("LLVMGetDiagInfoDescription", _P, _P)
        fn("LLVMGetDiagInfoSeverity", ctypes.c_int, _P)
        fn("LLVMLinkModules2", ctypes.c_int, _P, _P)
        fn("LLVMGetFirstFunction", _P, _P)
        fn("LLVMGetNextFunction", _P, _P)
        fn("LLVMGetFirstGlobal", _P, _P)
        fn("LLVMGetNextGlobal", _P, _P)
        fn("LLVMGetValueName2", ctypes.POINTER(ctypes.c_char), _P, ctypes.POINTER(ctypes.c_size_t))
        fn("LLVMSetValueName2", None, _P, ctypes.c_char_p, ctypes.c_size_t)
        fn("LLVMIsDeclaration", ctypes.c_int, _P)
        fn("LLVMGetLinkage", ctypes.c_int, _P)
        fn("LLVMSetLinkage", None, _P, ctypes.c_int)
        fn("LLVMGetDefaultTargetTriple", _P)
        fn("LLVMNormalizeTargetTriple", _P, _STR)
        fn("LLVMGetHostCPUName", _P)
        fn("LLVMGetHostCPUFeatures", _P)
        fn("LLVMCreateTargetDataLayout", _P, _P)
        fn("LLVMCopyStringRepOfTargetData", _P, _P)
        fn("LLVMDisposeTargetData", None, _P)

    def message(self, ptr) -> str:
        """A C API message as text, disposed."""
        if not ptr:
            return ""
        text = ctypes.string_at(ptr).decode(errors="replace")
        self.DisposeMessage(ptr)
        return text


def _native_target_names() -> tuple[str, ...]:
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64", "i686", "i386"):
        return ("X86",)
    if machine in ("aarch64", "arm64"):
        return ("AArch64",)
    return ()


@functools.cache
def _library() -> _Library | None:
    if os.environ.get("ZYMASE_LLVM", "").lower() == "llvmlite":
        return None
    major = _llvmlite_llvm_major()
    names = _native_target_names()
    if not names:
        return None
    for name in _candidates(major):
        try:
            # RTLD_LOCAL: its symbols stay its own, apart from llvmlite's LLVM
            lib = ctypes.CDLL(name, mode=os.RTLD_LOCAL)
        except OSError:
            continue
        try:
            version = [ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()]
            lib.LLVMGetVersion.restype = None
            lib.LLVMGetVersion(*(ctypes.byref(v) for v in version))
            if version[0].value != major:
                continue
            loaded = _Library(lib)
            for target in names:
                for part in ("TargetInfo", "Target", "TargetMC", "AsmPrinter", "AsmParser"):
                    init = getattr(lib, f"LLVMInitialize{target}{part}")
                    init.restype, init.argtypes = None, []
                    init()
        except AttributeError:  # a library without the C API's functions used here
            continue
        return loaded
    return None


def _llvmlite_llvm_major() -> int:
    import llvmlite

    major = _LLVMLITE_LLVM_MAJOR.get(".".join(llvmlite.__version__.split(".")[:2]))
    if major is None:  # a llvmlite this table does not know: ask its LLVM
        from llvmlite import binding as llvmlite_binding

        major = llvmlite_binding.llvm_version_info[0]
    return major


def available() -> bool:
    """Whether the release library is there (and not switched off)."""
    return _library() is not None


def _set_options(options: tuple[str, ...]) -> None:
    lib = _library()
    argv = (_STR * (len(options) + 1))(b"zymase", *(o.encode() for o in options))
    lib.ParseCommandLineOptions(len(options) + 1, argv, None)


@contextmanager
def _options(options: dict[str, tuple[str, str]]):
    """LLVM's command-line options set for the block (``name -> (value, default)``) and
    given back their defaults after it, under the process-wide lock."""
    with _OPTIONS_LOCK:
        if options:
            _set_options(tuple(f"-{k}={v}" for k, (v, _) in options.items()))
        try:
            yield
        finally:
            if options:
                _set_options(tuple(f"-{k}={d}" for k, (_, d) in options.items()))


@contextmanager
def _target_machine(triple: bytes, opt: int, cpu: bytes, features: bytes, reloc: str, code_model: str):
    """A target machine for one step (0.5 ms to make): LLVM's target machines cache
    subtargets without a lock, so threads must not share one."""
    lib = _library()
    target, err = _P(), _P()
    if lib.GetTargetFromTriple(triple, ctypes.byref(target), ctypes.byref(err)):
        raise LLVMError(lib.message(err))
    tm = lib.CreateTargetMachine(target, triple, cpu, features, opt, _RELOC[reloc], _CODE_MODEL[code_model])
    if not tm:
        raise LLVMError(f"no target machine for {triple.decode()}")
    try:
        yield tm
    finally:
        lib.DisposeTargetMachine(tm)


@functools.cache
def process_triple() -> str:
    """This machine's target triple as the library names it (Debian's: ``x86_64-pc-linux-gnu``;
    llvmlite's wheel says ``unknown`` for the vendor: the same target)."""
    lib = _library()
    return lib.message(lib.GetDefaultTargetTriple())


@functools.cache
def host_cpu() -> tuple[str, str]:
    """This machine's CPU name and its features, sorted as llvmlite's ``flatten`` gives them
    (the features' order is the target machine's key: the same order, the same code)."""
    lib = _library()
    name = lib.message(lib.GetHostCPUName())
    features = [f for f in lib.message(lib.GetHostCPUFeatures()).split(",") if f]
    return name, ",".join(sorted(features, key=lambda f: f[1:]))


@functools.cache
def data_layout(triple: str) -> str:
    """The data layout of ``triple``'s target machine (what a module without one gets)."""
    lib = _library()
    with _target_machine(triple.encode(), 2, b"", b"", "pic", "default") as tm:
        target_data = lib.CreateTargetDataLayout(tm)
        try:
            return lib.message(lib.CopyStringRepOfTargetData(target_data))
        finally:
            lib.DisposeTargetData(target_data)


def check_target_machine(triple: str, features: str) -> None:
    """Make (and free) a target machine with ``features``: LLVM reports each feature it
    does not know on stderr as it does (``toolchain.drop_unknown_target_features``)."""
    with _target_machine(triple.encode(), 2, b"", features.encode(), "pic", "default"):
        pass


class Context:
    """An LLVM context: modules to be linked together are parsed in one. Its errors are
    collected (:meth:`take_errors`) instead of LLVM's default, which prints an error and
    exits the process; warnings and notes go to file descriptor 2 as LLVM's default prints
    them (remarks, which LLVM prints only when asked to, are dropped)."""

    def __init__(self):
        self._lib = lib = _library()
        self._ref = lib.ContextCreate()
        self._errors: list[str] = []
        self._handler = _DIAGNOSTIC_HANDLER(self._diagnose)  # (kept alive with the context)
        lib.ContextSetDiagnosticHandler(self._ref, self._handler, None)
        self._modules: list[Module] = []

    def _diagnose(self, info, _user) -> None:
        severity = self._lib.GetDiagInfoSeverity(info)
        if severity == _DIAGNOSTIC_ERROR:
            self._errors.append(self._lib.message(self._lib.GetDiagInfoDescription(info)))
        elif severity in (_DIAGNOSTIC_WARNING, _DIAGNOSTIC_NOTE):
            # written to file descriptor 2 as LLVM's own printer writes it (not through
            # sys.stderr): llvm/quiet_hints filters the descriptor around the pipelines
            prefix = b"warning: " if severity == _DIAGNOSTIC_WARNING else b"note: "
            text = self._lib.message(self._lib.GetDiagInfoDescription(info)).encode(errors="replace")
            try:
                os.write(2, prefix + text + b"\n")
            except OSError:
                pass

    def take_errors(self) -> list[str]:
        errors, self._errors = self._errors, []
        return errors

    def parse(self, text: str, *, triple: str | None = None, data_layout: str | None = None) -> Module:
        """``text`` parsed in this context (freed with it); a missing triple or data layout
        is set to the one given, if any."""
        module = Module(text, triple=triple, data_layout=data_layout, context=self)
        self._modules.append(module)
        return module

    def hand_over(self, module: Module) -> None:
        """``module`` owns this context from now on (freed with it); the context's other
        modules are freed now."""
        for other in self._modules:
            if other is not module:
                other._free()
        self._modules = [module]
        module._own_context = True

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc) -> None:
        self.dispose()

    def dispose(self) -> None:
        if self._ref is None:
            return
        ref, self._ref = self._ref, None
        modules, self._modules = self._modules, []
        for module in modules:
            module._free()
        self._lib.ContextDispose(ref)


class GlobalValue:
    """A function or global variable of a :class:`Module` (the part of llvmlite's
    ``ValueRef`` that linking needs)."""

    __slots__ = ("_lib", "_ref")

    def __init__(self, lib: _Library, ref):
        self._lib, self._ref = lib, ref

    @property
    def name(self) -> str:
        size = ctypes.c_size_t()
        data = self._lib.GetValueName2(self._ref, ctypes.byref(size))
        return ctypes.string_at(data, size.value).decode()

    @name.setter
    def name(self, value: str) -> None:
        data = value.encode()
        self._lib.SetValueName2(self._ref, data, len(data))

    @property
    def is_declaration(self) -> bool:
        return bool(self._lib.IsDeclaration(self._ref))

    @property
    def linkage(self) -> int:
        return self._lib.GetLinkage(self._ref)

    @linkage.setter
    def linkage(self, value: int) -> None:
        self._lib.SetLinkage(self._ref, int(value))


class Module:
    """An LLVM module parsed from text, in a context of its own (:meth:`dispose`, or the
    ``with`` statement, frees both) or in a :class:`Context` (freed with it)."""

    def __init__(self, text: str, *, triple: str | None, data_layout: str | None, context: Context | None = None):
        self._lib = lib = _library()
        self._own_context = context is None
        self._context = context if context is not None else Context()
        data = text.encode()
        buffer = lib.CreateMemoryBufferWithMemoryRangeCopy(data, len(data), b"<string>")
        module, err = _P(), _P()
        if lib.ParseIRInContext(self._context._ref, buffer, ctypes.byref(module), ctypes.byref(err)):
            if self._own_context:
                self._context.dispose()
            raise LLVMError(lib.message(err))
        self._module = module
        if triple is not None and not lib.GetTarget(module):
            lib.SetTarget(module, triple.encode())
        if data_layout is not None and not lib.GetDataLayoutStr(module):
            lib.SetDataLayout(module, data_layout.encode())

    def __enter__(self) -> Module:
        return self

    def __exit__(self, *exc) -> None:
        self.dispose()

    def _free(self) -> None:
        if self._module is not None:
            self._lib.DisposeModule(self._module)
            self._module = None

    def dispose(self) -> None:
        self._free()
        if self._own_context:
            self._context.dispose()

    @property
    def triple(self) -> str:
        return (self._lib.GetTarget(self._module) or b"").decode()

    @triple.setter
    def triple(self, value: str) -> None:
        self._lib.SetTarget(self._module, value.encode())

    @property
    def data_layout(self) -> str:
        return (self._lib.GetDataLayoutStr(self._module) or b"").decode()

    @data_layout.setter
    def data_layout(self, value: str) -> None:
        self._lib.SetDataLayout(self._module, value.encode())

    def _values(self, first, following) -> list[GlobalValue]:
        out, ref = [], first(self._module)
        while ref:
            out.append(GlobalValue(self._lib, ref))
            ref = following(ref)
        return out

    @property
    def functions(self) -> list[GlobalValue]:
        return self._values(self._lib.GetFirstFunction, self._lib.GetNextFunction)

    @property
    def global_variables(self) -> list[GlobalValue]:
        return self._values(self._lib.GetFirstGlobal, self._lib.GetNextGlobal)

    def link_in(self, other: Module) -> None:
        """Link ``other`` (of the same :class:`Context`) into this module; ``other`` is
        consumed, as LLVM's linker destroys it."""
        if other._context is not self._context:
            raise ValueError("modules linked together must share a Context")
        failed = self._lib.LinkModules2(self._module, other._module)
        other._module = None
        errors = self._context.take_errors()
        if failed or errors:
            raise LLVMError("; ".join(errors) or "LLVM's linker failed")

    def verify(self) -> str | None:
        """None when the module verifies, else the verifier's message."""
        err = _P()
        broken = self._lib.VerifyModule(self._module, _VERIFY_RETURN_STATUS, ctypes.byref(err))
        message = self._lib.message(err)
        return (message or "the module does not verify") if broken else None

    def text(self) -> str:
        return self._lib.message(self._lib.PrintModuleToString(self._module))

    __str__ = text

    def run(self, pipeline: str, *, opt: int, loop_vectorize: bool = True, slp: bool = False,
            unroll: bool = True, options: dict[str, tuple[str, str]] | None = None,
            cpu: str = "", features: str = "", reloc: str = "pic", code_model: str = "default") -> None:
        """Run a pass pipeline in LLVM's textual form (``default<O2>``, ``sroa,instcombine``)
        with the pass builder's tuning options and LLVM options set for the run; the target
        machine (``cpu``, ``features``: the host's for code the JIT runs) tells the passes
        the costs of the target."""
        lib = self._lib
        pbo = lib.CreatePassBuilderOptions()
        try:
            lib.PassBuilderOptionsSetLoopVectorization(pbo, int(loop_vectorize))
            lib.PassBuilderOptionsSetSLPVectorization(pbo, int(slp))
            lib.PassBuilderOptionsSetLoopUnrolling(pbo, int(unroll))
            # the pass builder options' vectorizer switches are not honoured by LLVM 22's
            # C API (the vectorizers ran with them off); LLVM's own switches are, and turn
            # the passes off as llvmlite's pipeline tuning options do
            switches = dict(options or {})
            if not loop_vectorize:
                switches["vectorize-loops"] = ("false", "true")
            if not slp:
                switches["vectorize-slp"] = ("false", "true")
            with _options(switches), _target_machine(self.triple.encode(), opt, cpu.encode(), features.encode(), reloc,
                                                     code_model) as tm:
                err = lib.RunPasses(self._module, pipeline.encode(), tm, pbo)
        finally:
            lib.DisposePassBuilderOptions(pbo)
        errors = self._context.take_errors()
        if err:
            msg = lib.GetErrorMessage(err)
            errors.insert(0, ctypes.string_at(msg).decode(errors="replace"))
            lib.DisposeErrorMessage(msg)
        if errors:
            raise LLVMError("; ".join(errors))

    def emit_object(self, *, opt: int, cpu: str = "", features: str = "", reloc: str = "pic",
                    code_model: str = "default") -> bytes:
        """The module's native object code."""
        lib = self._lib
        err, buffer = _P(), _P()
        with _target_machine(self.triple.encode(), opt, cpu.encode(), features.encode(), reloc, code_model) as tm:
            failed = lib.TargetMachineEmitToMemoryBuffer(tm, self._module, _OBJECT_FILE, ctypes.byref(err),
                                                         ctypes.byref(buffer))
        errors = self._context.take_errors()
        if failed:
            errors.insert(0, lib.message(err))
        if errors:
            if buffer:
                lib.DisposeMemoryBuffer(buffer)
            raise CodeGenerationError("; ".join(errors))
        try:
            return ctypes.string_at(lib.GetBufferStart(buffer), lib.GetBufferSize(buffer))
        finally:
            lib.DisposeMemoryBuffer(buffer)
