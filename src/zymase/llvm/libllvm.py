"""LLVM's release build for the heavy steps: the O-level pipelines and code generation run
in the system's shared LLVM library (``libLLVM.so.22``, Debian's ``libllvm22``) through
LLVM's C API, when it is there and is llvmlite's major version.

Why: llvmlite's wheels carry an LLVM built with assertions (``-debug-only`` is accepted),
which runs the same pipeline on the same IR 1.5-2x slower than a release build (hand's
derivative module: the O2 pipeline 0.45 s against 0.24-0.30 s, its object code 0.20 against
0.13 s; issue 29). Same major version, same passes: the output is the same text
(tests/python/test_release_llvm.py compares the two on the bench workloads). llvmlite stays
the rest of the toolchain (parsing for checks, linking, the JIT) and the fallback: without
the library, or with ``ZYMASE_LLVM=llvmlite``, :func:`available` is false and every step
runs in llvmlite as before.

Each call works in a context and with a target machine of its own, created and disposed
here, so that calls from several threads do not share LLVM state; LLVM's command-line
options are process-wide, so a pipeline run holds :data:`_OPTIONS_LOCK` while it sets them,
runs and gives them back (pipelines run one at a time; code generation does not wait).
"""

from __future__ import annotations

import ctypes
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

_OPTIONS_LOCK = threading.Lock()


class LLVMError(RuntimeError):
    """A step failed inside the library (parse, verification, pipeline, code generation)."""


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
    from llvmlite import binding as llvmlite_binding

    major = llvmlite_binding.llvm_version_info[0]
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


class Module:
    """An LLVM module parsed from text in a context of its own; :meth:`dispose` (or the
    ``with`` statement) frees both."""

    def __init__(self, text: str, *, triple: str, data_layout: str):
        self._lib = lib = _library()
        self._context = lib.ContextCreate()
        data = text.encode()
        buffer = lib.CreateMemoryBufferWithMemoryRangeCopy(data, len(data), b"<string>")
        module, err = _P(), _P()
        if lib.ParseIRInContext(self._context, buffer, ctypes.byref(module), ctypes.byref(err)):
            lib.ContextDispose(self._context)
            raise LLVMError(lib.message(err))
        self._module = module
        if not lib.GetTarget(module):
            lib.SetTarget(module, triple.encode())
        if not lib.GetDataLayoutStr(module):
            lib.SetDataLayout(module, data_layout.encode())

    def __enter__(self) -> Module:
        return self

    def __exit__(self, *exc) -> None:
        self.dispose()

    def dispose(self) -> None:
        if self._module is not None:
            self._lib.DisposeModule(self._module)
            self._lib.ContextDispose(self._context)
            self._module = None

    @property
    def triple(self) -> bytes:
        return self._lib.GetTarget(self._module)

    def verify(self) -> str | None:
        """None when the module verifies, else the verifier's message."""
        err = _P()
        broken = self._lib.VerifyModule(self._module, _VERIFY_RETURN_STATUS, ctypes.byref(err))
        message = self._lib.message(err)
        return (message or "the module does not verify") if broken else None

    def text(self) -> str:
        return self._lib.message(self._lib.PrintModuleToString(self._module))

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
            with _options(switches), _target_machine(self.triple, opt, cpu.encode(), features.encode(), reloc,
                                                     code_model) as tm:
                err = lib.RunPasses(self._module, pipeline.encode(), tm, pbo)
        finally:
            lib.DisposePassBuilderOptions(pbo)
        if err:
            msg = lib.GetErrorMessage(err)
            text = ctypes.string_at(msg).decode(errors="replace")
            lib.DisposeErrorMessage(msg)
            raise LLVMError(text)

    def emit_object(self, *, opt: int, cpu: str = "", features: str = "", reloc: str = "pic",
                    code_model: str = "default") -> bytes:
        """The module's native object code."""
        lib = self._lib
        err, buffer = _P(), _P()
        with _target_machine(self.triple, opt, cpu.encode(), features.encode(), reloc, code_model) as tm:
            failed = lib.TargetMachineEmitToMemoryBuffer(tm, self._module, _OBJECT_FILE, ctypes.byref(err),
                                                         ctypes.byref(buffer))
        if failed:
            raise LLVMError(lib.message(err))
        try:
            return ctypes.string_at(lib.GetBufferStart(buffer), lib.GetBufferSize(buffer))
        finally:
            lib.DisposeMemoryBuffer(buffer)
