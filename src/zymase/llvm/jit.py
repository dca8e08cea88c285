"""JIT compilation of LLVM IR text for the Python API and ``zymase run``: an MCJIT engine
owning one module (or the machine code LLVM's release library made of it, :mod:`zymase.llvm.libllvm`),
and the C libraries the JIT's code calls (libm, libgcc_s), loaded once per process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re
import sys

from zymase.errors import ZymaseError
from zymase.llvm.toolchain import OptimizedIR, llvm, parse_module, release_object, target_machine

#: the sonames ``ctypes.util.find_library`` gives for libm and libgcc_s on glibc Linux
_GLIBC_SONAMES = {"m": "libm.so.6", "gcc_s": "libgcc_s.so.1"}


@functools.cache
def _load_libm() -> None:
    """Make libm's symbols visible to the JIT (the Python process usually has them).
    Once per process: a library LLVM loads stays loaded (a kernel and its Python entry
    point are two engines; issue 29)."""
    # libm for the math functions; libgcc_s for compiler runtime helpers that LLVM
    # calls on its own (e.g. __powidf2 for llvm.powi), which MCJIT cannot resolve
    # otherwise (it jumps to address 0 instead of reporting a missing symbol).
    for lib in ("m", "gcc_s"):
        _load_library(lib)


def _load_library(lib: str) -> bool:
    """Load ``lib`` (``m``, ``gcc_s``) for the JIT; whether it loaded. On Linux by the
    soname ``find_library`` returns there (the dynamic loader finds it the same way):
    ``find_library`` runs ``ldconfig -p`` in a child process per library, about 12 ms of
    a first ``zymase.grad`` call's wall time, 10 of them the children's CPU (issue 29).
    Elsewhere, or when the soname does not load (a libc whose libm is another file), by
    ``find_library``'s name."""
    soname = _GLIBC_SONAMES.get(lib) if sys.platform.startswith("linux") else None
    if soname is not None:
        try:
            llvm.load_library_permanently(soname)
            return True
        except RuntimeError:
            pass
    name = ctypes.util.find_library(lib)
    if not name:
        return False
    try:
        llvm.load_library_permanently(name)
    except RuntimeError:
        return False
    return True


class JITModule:
    """An MCJIT engine owning one LLVM module; keeps all of it alive while referenced."""

    def __init__(self, ll_text: str, opt: int = 2):
        # (the substring first: the multiline regex alone scanned every character of the
        # module, about 8M instructions of a first zymase.grad call)
        if "thread_local" in ll_text and re.search(r"^@\S+ = .*\bthread_local\b", ll_text, re.M):
            # MCJIT aborts the whole process on thread-local storage
            raise ZymaseError(
                "the module needs thread-local storage (the tape of recursive derivatives "
                "that take memory), which the JIT cannot allocate",
                hint="compile it to an executable with `zymase cc` instead of JIT-compiling it",
            )
        _load_libm()
        parsed = ll_text.take_module() if isinstance(ll_text, OptimizedIR) else None
        if parsed is not None and not isinstance(parsed, llvm.ModuleRef):
            parsed.dispose()  # the release library's (llvm/modules): its object code is made below
            parsed = None
        # Code generation at -O0 (FastISel) produces code that crashes under MCJIT
        # for modules with many functions; instruction selection at -O1 or above
        # does not, and the IR-level optimization level is unaffected.
        self._tm = target_machine(opt=max(opt, 1), jit=True)
        # the machine code from LLVM's release library when it is there (llvm/libllvm),
        # loaded into an engine around an empty module; static constructors run from the
        # module's IR, so a module with some is compiled by llvmlite's LLVM
        released = None
        if parsed is None and "@llvm.global_ctors" not in ll_text:
            released = release_object(ll_text, max(opt, 1), jit=True)
        self._object = None
        if released is not None:
            self._module = parse_module("")
            self._object = llvm.ObjectFileRef.from_data(released)
        else:
            self._module = parsed if parsed is not None else parse_module(ll_text)
        try:
            self._engine = llvm.create_mcjit_compiler(self._module, self._tm)
            if self._object is not None:
                self._engine.add_object_file(self._object)
            self._engine.finalize_object()
            self._engine.run_static_constructors()
        except RuntimeError as exc:
            raise ZymaseError(
                f"JIT compilation failed: {str(exc).strip()}",
                hint="undefined symbols must exist in this process (libc, libm)",
            ) from None
        self._functions: list[object] = []

    def address(self, name: str) -> int:
        """The address of function (or global) ``name``; ZymaseError if it does not exist."""
        addr = self._engine.get_function_address(name)
        if not addr:
            addr = self._engine.get_global_value_address(name)
        if not addr:
            raise ZymaseError(
                f"no function or global named '{name}' in the JIT module",
                hint="check the name (C functions keep their name; static ones may be "
                "inlined away by optimization)",
            )
        return addr

    def function(self, name: str, restype, *argtypes):
        """A ctypes function for ``name`` with the given ctypes signature.

        The returned object keeps this JIT module alive.
        """
        proto = ctypes.CFUNCTYPE(restype, *argtypes)
        fn = proto(self.address(name))
        fn._zymase_jit = self  # type: ignore[attr-defined]
        return fn


def jit(ll_text: str, opt: int = 2) -> JITModule:
    """JIT-compile LLVM IR text (MCJIT). ``opt`` is the code generator's level."""
    return JITModule(ll_text, opt=opt)
