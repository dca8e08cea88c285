"""Refusals of calls of C library functions on memory holding derivatives, whose code
zymase does not see and whose effect on that memory it does not model: the sort and
binary search (they move elements or return pointers into the array), the formatted
writers that put text over it, and differentiated values handed to Python code through
Python's C API (Numba's ``with objmode(...)`` blocks). Kept apart from
:mod:`zymase.autodiff.common`, whose ``refusals.reject_unsupported`` asks them."""

from __future__ import annotations

from zymase.analysis.memory import TEXT_WRITERS
from zymase.analysis.op_classes import is_a
from zymase.errors import ZymaseError
from zymase.ir import Operation, llvm, location_of


def sort_or_search_refusal(name: str) -> tuple[str, str] | None:
    """The message and hint for the C library's sort or binary search (``qsort``,
    ``bsearch``) given memory holding active data, if ``name`` is one of them: the
    library's code and the comparator it calls through a pointer are out of zymase's
    sight, so the permutation a sort makes (or the element a search picks) is not
    known to the derivative. The generic "define the function in the same file" means
    nothing for a library function."""
    if name in ("qsort", "qsort_r", "qsort_s"):
        return (f"'{name}' of memory holding active data cannot be differentiated: the C library "
                "moves the elements in code zymase does not see, so their derivatives cannot follow",
                "sort an array of indices (int) by the values with qsort and read the values through "
                "it, or write the sort in this file")
    if name in ("bsearch", "bsearch_s"):
        return (f"'{name}' in memory holding active data cannot be differentiated: the C library "
                "returns a pointer into the array from code zymase does not see",
                "search for the index with a loop written in this file (or bsearch an array that is "
                "not differentiated) and read the element through that index")
    return None


def text_into_shadowed_refusal(ctx, op: Operation, act) -> ZymaseError | None:
    """The error for a call of ``sprintf``/``snprintf`` (not a definition of the module's
    own) whose destination has a shadow, if ``op`` is one (the caller names the
    function): the bytes the text replaces kept their derivatives, and doubles read
    back there had them (session 32). Zeroing the shadow of the ``ret + 1`` bytes written
    would lift it (and a ``char`` label in a struct of doubles, refused too)."""
    if not (is_a(op, llvm.CallOp) and ctx.flavor.callee(op) in TEXT_WRITERS
            and ctx.defined_function(op) is None and op.operands and op.operands[0] in act.shadowed):
        return None
    return ZymaseError(
        f"'{ctx.flavor.callee(op)}' writes text into memory that holds derivatives (its destination is, "
        "or shares an object with, floating-point data being differentiated); zymase cannot tell which "
        "bytes the text replaces, and their derivatives would stay",
        construct=f"{op.name} @{ctx.flavor.callee(op)}",
        location=location_of(op),
        hint="write the text into a char array of its own, not into memory that holds or held the values "
        "being differentiated",
    )


#: Python's C API calls that run Python code (Numba's objmode blocks call the block this way)
_PYTHON_CALLS = ("PyObject_Call",)


def calls_python_code(ctx, ops) -> tuple[bool, bool]:
    """Whether ``ops`` call Python code through Python's C API (a declaration, not a
    definition of the module's own), and whether they read numbers or arrays back from
    Python objects (``PyFloat_AsDouble``, Numba's ``NRT_adapt_ndarray_from_python``:
    an objmode block's results)."""
    calls = unboxes = False
    for op in ops:
        if not is_a(op, llvm.CallOp) or ctx.defined_function(op) is not None:
            continue
        name = ctx.flavor.callee(op) or ""
        calls = calls or name.startswith(_PYTHON_CALLS)
        unboxes = unboxes or _from_python(name)
    return calls, unboxes


def _from_python(name: str) -> bool:
    return name.startswith("NRT_adapt_ndarray_from_python") or name == "PyObject_IsTrue" or (
        name.startswith("Py") and "_As" in name)


def boxed_for_python_refusal(ctx, op: Operation, act, unboxes: bool) -> ZymaseError | None:
    """The error for ``op`` when it makes a Python object of a value or memory that
    carries derivatives (``PyFloat_FromDouble`` of an active float, Numba's
    ``NRT_adapt_ndarray_to_python*`` of an array with a shadow) in a function that calls
    Python code (the caller asks :func:`calls_python_code` first). The Python code's
    result is unboxed as a number the engine takes as constant: the derivative through
    it would be silently zero (session 34: ``with objmode(z='float64'): z = np.tanh(y)``
    gave dz/dy = 0). Printing boxes values too but calls no Python code, so it is kept;
    so is a float handed to Python code when nothing comes back from Python (``unboxes``
    false: an objmode block that only prints). An array handed over is refused always:
    the Python code may write into it. The caller names the function."""
    if not isinstance(op, llvm.CallOp) or ctx.defined_function(op) is not None:
        return None
    name = ctx.flavor.callee(op) or ""
    if not (name.startswith("Py") or name.startswith("NRT_adapt_ndarray_to_python")):
        return None
    if not (any(o in act.shadowed for o in op.operands) or unboxes and any(o in act.varied for o in op.operands)):
        return None
    return ZymaseError(
        f"a value being differentiated is made a Python object ('{name}') and handed to Python code "
        "(a Numba objmode block), whose result zymase cannot differentiate: its derivative would be "
        "taken as zero",
        construct=f"{op.name} @{name}",
        location=location_of(op),
        hint="compute that step in njit code, or pass the Python code only values that are not "
        "differentiated",
    )
