"""Refusals of Numba's object-like constructs said in the user's Python terms: ``with
objmode(...)`` blocks handed differentiated values, jitclass (other than those of numbers
only, which are differentiated) or structref instances holding them, and calls of
compiled functions through ctypes or ``@cfunc`` pointers.

The engine refuses both in LLVM terms: a value made a Python object ('PyFloat_FromDouble')
in a function that calls Python code (autodiff/library_refusals.boxed_for_python_refusal),
and active data stored into memory Numba's runtime allocates with a destructor
(``NRT_MemInfo_alloc_dtor``: the instance's fields), whose shadow the engine does not
make. This module names instead the ``with objmode`` lines or the jitclass/structref
constructions of the user's source (the function's, else those of the njit functions it
calls), found in Numba's untyped IR. A ctypes function or a ``@cfunc`` is called through
its address, which the engine refuses as an indirect call (said for recursion and
functions passed as arguments); here the call is named.
"""

from __future__ import annotations

import re

from zymase.errors import ZymaseError

_HANDED_TO_PYTHON = re.compile(r"^a value being differentiated is made a Python object \('(\w+)'\)"
                               # (an array boxed or unboxed at the block's edge: the unoptimized
                               # code's memory analysis, preopt=False, sees active memory there)
                               r"|^memory holding active data is passed to 'NRT_adapt_ndarray_(to|from)_python")
_INDIRECT_CALL = re.compile(r"^an indirect call through a function pointer")
_RUNTIME_OBJECT = re.compile(r"^active data is written through a pointer produced by 'call @NRT_MemInfo_alloc_dtor'")


def objmode_refusal(err: ZymaseError, disp) -> ZymaseError | None:
    """The refusal of a differentiated value handed to an objmode block, ``err``, naming
    the ``with objmode`` lines; None when ``err`` is another error."""
    if _HANDED_TO_PYTHON.search(err.message) is None:
        return None
    where, owner = _first_sites(disp, _objmode_lines)
    name, place, location = _naming(disp, where, owner)
    return ZymaseError(
        f"{name} passes values that carry derivatives to or from Python code in a 'with objmode(...)' "
        f"block{place}; zymase cannot differentiate the Python code, whose results would be taken as "
        "constants (a zero derivative)",
        construct="with objmode(...)", function=name.strip("'"), location=location,
        hint="compute that step in njit code, or give the objmode block only values that are not "
        "differentiated (printing a value outside the block is fine); with preopt=False even arrays of "
        "constants crossing the block are refused: keep the default preopt=True")


def runtime_object_refusal(err: ZymaseError, disp) -> ZymaseError | None:
    """The refusal of differentiated values stored into the fields of a jitclass or
    structref instance, ``err``, naming the constructions; None when ``err`` is another
    error."""
    if _RUNTIME_OBJECT.search(err.message) is None:
        return None
    where, owner = _first_sites(disp, _instance_sites)
    kinds = sorted({kind for kind, _ in where}) or ["jitclass or structref"]
    # (a jitclass of numbers only is differentiated: analysis/memory._scalar_jitclass_instance)
    kinds = ["jitclass holding arrays or other objects" if k == "jitclass" else k for k in kinds]
    name, place, location = _naming(disp, [line for _, line in where], owner,
                                    what=", ".join(sorted({cls for _, (cls, _) in where})))
    return ZymaseError(
        f"{name} keeps differentiated values in the fields of a {' or '.join(kinds)} instance{place}, whose "
        "memory Numba's runtime allocates with a destructor (NRT_MemInfo_alloc_dtor); zymase does not "
        "differentiate through such objects",
        construct=f"{' or '.join(kinds)} instance", function=name.strip("'"), location=location,
        hint="keep the differentiated values in NumPy arrays, tuples or namedtuples passed between njit "
        "functions, or in a jitclass whose fields are all numbers; an instance holding only constants may be "
        "made inside the function (with the default preopt=True: Numba's unoptimized code moves even those "
        "through memory zymase cannot follow)")


def _naming(disp, where, owner, what: str = ""):
    """(the function's label, where the construct is in words, file:line) for a refusal
    in ``disp`` whose construct is on lines ``where`` of ``owner`` (``disp`` or a callee;
    lines may be (line) or (kind, (class, line)) items already reduced to lines)."""
    from zymase.frontends.numba import function_label

    name = function_label(disp)
    lines = sorted({line if isinstance(line, int) else line[1] for line in where})
    if not lines:
        code = disp.py_func.__code__
        return name, "", f"{code.co_filename}:{code.co_firstlineno}"
    code = owner.py_func.__code__
    made = f"{what}, " if what else ""
    span = f"line {lines[0]}" if len(lines) == 1 else f"lines {', '.join(map(str, lines))}"
    place = f" ({made}{span})" if owner is disp else f" ({made}{span} of {function_label(owner)}, which it calls)"
    return name, place, f"{code.co_filename}:{lines[0]}"


def _first_sites(disp, find):
    """``find``'s sites in ``disp``'s source, else in the first njit function it calls
    (transitively, breadth first) that has some, with that function; ([], disp) when
    none is found or a source cannot be read (the refusal is then said without lines)."""
    from zymase.frontends.numba_copy import _dispatcher_refs

    seen, todo = {disp}, [disp]
    while todo:
        current = todo.pop(0)
        try:
            sites = find(current)
        except Exception:
            sites = []
        if sites:
            return sites, current
        for _, callee, _ in _dispatcher_refs(current.py_func):
            if callee not in seen:
                seen.add(callee)
                todo.append(callee)
    return [], disp


def _statements(disp):
    from numba.core import compiler

    func_ir = compiler.run_frontend(disp.py_func)
    return func_ir, [stmt for block in func_ir.blocks.values() for stmt in block.body]


def _resolved(func_ir, var):
    """The Python object a variable of the untyped IR names (a global, a closure cell or
    an attribute of one), or None."""
    from numba.core import ir

    try:
        d = func_ir.get_definition(var)
    except Exception:
        return None
    if isinstance(d, (ir.Global, ir.FreeVar)):
        return d.value
    if isinstance(d, ir.Expr) and d.op == "getattr":
        base = _resolved(func_ir, d.value)
        return getattr(base, d.attr, None) if base is not None else None
    return None


def _objmode_lines(disp) -> list[int]:
    """The lines of ``disp``'s ``with objmode(...)`` statements."""
    from numba.core import ir
    from numba.core.withcontexts import _ObjModeContextType

    func_ir, stmts = _statements(disp)
    lines = []
    for stmt in stmts:
        if not isinstance(stmt, ir.EnterWith):
            continue
        manager = stmt.contextmanager
        d = func_ir.get_definition(manager)
        if isinstance(d, ir.Expr) and d.op == "call":
            manager = d.func
        if isinstance(_resolved(func_ir, manager), _ObjModeContextType):
            lines.append(stmt.loc.line)
    return lines


def _instance_sites(disp) -> list[tuple[str, tuple[str, int]]]:
    """(kind, (class name, line)) of each jitclass or structref construction in
    ``disp``'s source."""
    from numba.core import ir
    from numba.experimental.jitclass.base import JitClassType
    from numba.experimental.structref import StructRefProxy

    func_ir, stmts = _statements(disp)
    sites = []
    for stmt in stmts:
        if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call":
            cls = _resolved(func_ir, stmt.value.func)
            if isinstance(cls, JitClassType):
                sites.append(("jitclass", (cls.__name__, stmt.loc.line)))
            elif isinstance(cls, type) and issubclass(cls, StructRefProxy):
                sites.append(("structref", (cls.__name__, stmt.loc.line)))
    return sites


def foreign_call_refusal(err: ZymaseError, disp) -> ZymaseError | None:
    """The refusal of an indirect call, ``err``, where the function (or an njit function
    it calls) calls a ctypes function or a ``@cfunc``: names those calls and their
    lines; None when ``err`` is another error or no such call is found (the generic
    refusal then stands: recursion, a function passed as an argument)."""
    if _INDIRECT_CALL.search(err.message) is None:
        return None
    where, owner = _first_sites(disp, _foreign_calls)
    if not where:
        return None
    names = ", ".join(sorted({callee for callee, _ in where}))
    name, place, location = _naming(disp, [line for _, line in where], owner, what=names)
    return ZymaseError(
        f"{name} calls compiled code through a ctypes or @cfunc function pointer{place}, which zymase cannot "
        "see into or differentiate",
        construct="call of a ctypes or @cfunc function", function=name.strip("'"), location=location,
        hint="call an njit function instead (a @cfunc's Python function decorated with @njit), or pass the "
        "foreign function only values that are not differentiated")


def _foreign_calls(disp) -> list[tuple[str, int]]:
    """(name, line) of each call in ``disp``'s source of a ctypes function or a
    ``@cfunc`` (or its ``.ctypes``)."""
    import ctypes

    from numba.core import ir
    from numba.core.ccallback import CFunc

    func_ir, stmts = _statements(disp)
    sites = []
    for stmt in stmts:
        if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call":
            fn = _resolved(func_ir, stmt.value.func)
            if isinstance(fn, (ctypes._CFuncPtr, CFunc)):
                named = func_ir.get_definition(stmt.value.func)  # the name the source calls it by
                sites.append((getattr(named, "name", None) or getattr(named, "attr", None) or "?", stmt.loc.line))
    return sites
