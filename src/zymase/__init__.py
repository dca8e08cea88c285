"""zymase: automatic differentiation of LLVM IR and MLIR, in the spirit of Enzyme.

The Python API (:mod:`zymase.api`: ``grad``, ``value_and_grad``, ``jvp``, ``vjp``,
``jacfwd``, ``jacrev``, ``jacobian``, ``hessian``, ``hvp``, ``laplacian``, ``autodiff``, ``fwddiff``
and the argument wrappers) is imported on first use, so the
command-line tools do not pay for importing Numba.
"""

__version__ = "0.1.0"

_API = {
    "grad", "value_and_grad", "jvp", "vjp", "autodiff", "fwddiff", "stats",
    "jacfwd", "jacrev", "jacobian", "hessian", "hvp", "laplacian",
    "Active", "Const", "Duplicated", "DuplicatedNoNeed",
}


def __getattr__(name):
    if name == "autodiff":
        # the engine package, callable as the Python API's reverse mode (see its docstring)
        import zymase.autodiff

        return zymase.autodiff
    if name in _API:
        from zymase.collect_rarely import collecting_garbage_rarely

        # the first import loads the engine; inside xdsl_import's window the dataclasses
        # it defines (KernelSpec, NumbaIR, CFG, ... 16 of them) get their methods' code
        # compiled once, as xDSL's do: 12-18 ms of a first zymase.grad call (issue 29).
        # The collector's window opens first: importing xdsl_import imports zymase.ir,
        # which is most of the import (xDSL's dialects), and at Python's threshold the
        # collector ran about 40 times during it
        with collecting_garbage_rarely():
            from zymase.ir.xdsl_import import importing_xdsl

            with importing_xdsl():
                from zymase import api
        return getattr(api, name)
    raise AttributeError(f"module 'zymase' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_API))
