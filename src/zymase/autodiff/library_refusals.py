"""Refusals of calls of C library functions on memory holding derivatives, whose code
zymase does not see and whose effect on that memory it does not model: the sort and
binary search (they move elements or return pointers into the array), and the formatted
writers that put text over it. Kept apart from :mod:`zymase.autodiff.common`, whose
``refusals.reject_unsupported`` asks them."""

from __future__ import annotations

from zymase.analysis.memory import TEXT_WRITERS
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
    if not (isinstance(op, llvm.CallOp) and ctx.flavor.callee(op) in TEXT_WRITERS
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
