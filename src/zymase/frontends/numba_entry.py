"""A kernel's entry point for Python: Numba's CPython wrapper around a direct call of the kernel.

A ``grad`` object called from Python passes the kernel its arguments, the shadows it made
with NumPy and the seed, and gets back the kernel's tuple. Numba's wrapper does the work
that matters there (unboxing NumPy arrays, tuples and scalars into Numba's data model,
boxing the result, turning an error status into the Python exception the function
raised); it is generated here for the kernel's own signature and compiled in an MCJIT
engine of its own, instead of compiling an njit function that calls the kernel (typing
and lowering its body, a second wrapper, Numba's O3 pipeline over the module: 0.06-0.13 s
of CPU on a first call against about 0.02 s here; issue 29).

The wrapper unboxes each argument as the kernel's type says, without the dispatcher's
type check: the caller passes values of those types only (the argument types a kernel is
compiled for, and shadows made like their primals).
"""

from __future__ import annotations

import ctypes
import sys
import threading

_count = 0
_count_lock = threading.Lock()


def python_entry(kernel, qualname: str):
    """A Python callable taking the kernel's arguments (``kernel.argtypes``, in order) and
    returning its result; ``qualname`` names it in Numba's messages (a wrong argument
    count)."""
    import llvmlite.ir as lir
    from numba import _dynfunc
    from numba.core.callwrapper import PyCallWrapper
    from numba.core.environment import Environment
    from numba.core.registry import cpu_target

    from zymase.llvm.jit import jit

    global _count
    with _count_lock:
        _count += 1
        name = f"{kernel.symbol}.entry{_count}"
    context = cpu_target.target_context
    module = context.create_module(name)
    fnty = context.call_conv.get_function_type(kernel.restype, list(kernel.argtypes))
    callee = lir.Function(module, fnty, kernel.symbol)  # resolved by name: add_symbol published it
    api = sys.modules[__name__]
    desc = _Description(tuple(kernel.argtypes), kernel.restype, qualname, f"cpython.{name}",
                        f"_ZN08NumbaEnv{len(name)}{name}", api)
    # the Environment boxes Python objects the wrapper may need (an exception's arguments)
    env = Environment({"__name__": __name__})
    env.env_name = desc.env_name
    PyCallWrapper(context, module, callee, desc, env, call_helper=None, release_gil=False).build()
    # unoptimized IR: the wrapper runs as fast as Numba's optimized one (it is calls into
    # Numba's C helpers), and LLVM's pipeline would cost more than MCJIT alone
    engine = jit(str(module), opt=3)
    ctypes.c_void_p.from_address(engine.address(desc.env_name)).value = id(env)
    return _dynfunc.make_function(api, qualname, f"zymase's entry point of {kernel.symbol}",
                                  engine.address(desc.llvm_cpython_wrapper_name), env, (engine,))


class _Description:
    """What Numba's wrapper generator reads of a function descriptor."""

    def __init__(self, argtypes, restype, qualname, wrapper_name, env_name, module):
        self.argtypes, self.restype, self.qualname = argtypes, restype, qualname
        self.llvm_cpython_wrapper_name, self.env_name = wrapper_name, env_name
        self._module = module

    def lookup_module(self):
        return self._module
