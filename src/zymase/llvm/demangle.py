"""C++ names as the user wrote them: ``_Z1fd`` -> ``f(double)``, through the demangler
of the LLVM or binutils installation (``llvm-cxxfilt``, ``c++filt``). A name that is not
mangled, or a machine without a demangler, gives the name unchanged."""

from __future__ import annotations

import functools
import shutil
import subprocess

_DEMANGLERS = ("llvm-cxxfilt-19", "llvm-cxxfilt", "c++filt")


@functools.cache
def _demangler() -> str | None:
    return next((path for tool in _DEMANGLERS if (path := shutil.which(tool))), None)


@functools.cache
def demangle(name: str) -> str:
    if not name.startswith("_Z") or _demangler() is None:
        return name
    try:
        proc = subprocess.run([_demangler(), name], capture_output=True, text=True, timeout=10,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return name
    text = proc.stdout.strip()
    return text if proc.returncode == 0 and text else name
