"""C++ names as the user wrote them: ``_Z1fd`` -> ``f(double)`` (and Rust's ``_R...``
names, which reach ``zymase opt``), through the demangler
of the LLVM or binutils installation (``llvm-cxxfilt``, ``c++filt``). A name that is not
mangled, or a machine without a demangler, gives the name unchanged. Also what messages
tell the user about a function of the C++ standard library that is compiled into
libstdc++ (:func:`compiled_library_hint`)."""

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
    if not name.startswith(("_Z", "_R")) or _demangler() is None:
        return name
    try:
        proc = subprocess.run([_demangler(), name], capture_output=True, text=True, timeout=10,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return name
    text = proc.stdout.strip()
    return text if proc.returncode == 0 and text else name


#: the node-based containers whose linking code libstdc++ compiles into the library
#: (demangled name prefixes of those functions -> what the user wrote)
_LIBSTDCXX_NODE_CODE = (
    ("std::__detail::_List_node_base::", "std::list"),
    ("std::_Rb_tree", "std::map, std::set and their multi- forms"),
    ("std::__detail::_Prime_rehash_policy::", "std::unordered_map and std::unordered_set"),
)


def compiled_library_hint(callee: str) -> str | None:
    """The hint for memory holding active data passed to a function of the C++ standard
    library that is compiled into libstdc++ (not in its headers), if ``callee`` (its
    name, mangled or not) is one: "define the function in the same file" means nothing
    for it. Only on error paths: demangling starts a process."""
    callee = demangle(callee)
    if not callee.startswith(("std::", "__gnu_cxx::")):
        return None
    for prefix, containers in _LIBSTDCXX_NODE_CODE:
        if callee.startswith(prefix):
            return (f"the nodes of {containers} are linked by code compiled into libstdc++, out of zymase's "
                    "sight: keep the differentiated values in a std::vector, a std::array or a plain array")
    return ("this part of the C++ standard library is compiled into libstdc++, out of zymase's sight: keep the "
            "differentiated values away from it (std::vector, std::array and plain arrays are differentiated)")
