"""Refusals that need the user's Python source to be said in the user's terms: kernels
compiled with ``preopt=False``, and array copies whose element type is unknown.

Without the pre-AD pipeline the engine differentiates Numba's unoptimized IR, where some
NumPy functions and array operations bring code that only optimization removes or
simplifies: an error path formatting its message through Numba's recursive string
functions (``np.diff(x, n)``, a shape check of ``y[1::2] = ...``), an array copied with
one memcpy whose bytes are also read as the array struct's pointers (``A.flatten()``,
``np.diag``, ``np.linalg.cholesky``), arrays returned inside a tuple built as a struct of
pointers (``np.linalg.lstsq``). The engine's refusal names a mangled Numba function or
an LLVM instruction of the kernel. This module names instead the NumPy call or array
operation of the user's function whose Numba implementation holds the refused code, with
its source line, and says to keep the default ``preopt=True``.

The implementation is found on the call graph of Numba's IR: the functions the user's
function calls directly whose callees (transitively) hold the refused code; each is
matched by name with the calls in the user's Python source (Numba's untyped IR).

With the default ``preopt=True`` the NumPy implementations are inlined, so the type
analysis' refusal of a block copy (a memcpy of an array some of whose elements the
function never reads or writes as numbers, as a copy of a partly filled ``np.empty``
array) names LLVM's memcpy and C remedies: :func:`copy_refusal` names the copying calls
of the user's source instead (by name: every ``.copy()`` line, say); a Python list of
differentiated values (its storage grown by Numba's C runtime) is refused naming its
appends (:func:`list_refusal`).
"""

from __future__ import annotations

import re

from zymase.errors import ZymaseError

#: the refusals this module rewrites: (pattern of the engine's message, what the
#: refused code is, in Python terms)
_KINDS = (
    (re.compile(r"^'(_ZN[\w.$]+)' reads the global .* is called \(not inlined: it is recursive\)"),
     "its error path formats a message through Numba's recursive string functions, which zymase does not "
     "differentiate across"),
    (re.compile(r"^cannot deduce a single floating-point type for the memory .*memcpy"),
     "it copies array data with one memcpy whose bytes the unoptimized code also reads as pointers, so "
     "their type is ambiguous"),
    (re.compile(r"^a pointer to active memory is put into a struct or array value"),
     "it returns arrays inside a tuple, a struct holding pointers to differentiated memory"),
)

#: Numba implementation names whose Python name differs from the name they contain
_PYTHON_NAMES = {"cho": "cholesky", "raise_with_shape_context": "[]="}

_DEFINE = re.compile(r'^define [^@]*@"?([^"(]+)"?\(')
_CALL = re.compile(r'\bcall [^@]*@"?([\w.$]+)"?\(')


def refusal(err: ZymaseError, disp, ir) -> ZymaseError | None:
    """The user's-terms error for ``err``, raised compiling a ``preopt=False`` kernel of
    ``disp`` from Numba IR ``ir``; None when ``err`` is not one of these refusals."""
    from zymase.frontends.numba import function_label

    kind = next(((m, why) for pattern, why in _KINDS if (m := pattern.search(err.message))), None)
    if kind is None:
        return None
    match, why = kind
    bodies = _bodies(ir.text)
    if match.groups():  # the recursive function is named: what reaches it
        held = lambda fn: match.group(1) in _callees(bodies, fn)  # noqa: E731
    elif "memcpy" in err.message:
        held = lambda fn: any("@llvm.memcpy" in ln for g in _callees(bodies, fn) | {fn}  # noqa: E731
                              for ln in bodies.get(g, ()))
    else:  # a tuple of arrays returned: the function's result is a struct of array structs
        held = lambda fn: _returns_arrays_in_a_tuple(bodies.get(fn, ()))  # noqa: E731
    culprits = [fn for fn in _direct_calls(bodies.get(ir.entry, ())) if fn.startswith("_Z") and held(fn)]
    sites = _python_sites(disp, culprits)
    name = function_label(disp)
    py = disp.py_func.__code__
    if sites:
        what = ", ".join(f"{construct} ({_lines(lines)})" for construct, lines in sites)
        location = f"{py.co_filename}:{sites[0][1][0]}"
        message = (f"{name} is compiled with preopt=False, and Numba's unoptimized code for {what} cannot be "
                   f"differentiated: {why}")
    else:
        location = f"{py.co_filename}:{py.co_firstlineno}"
        message = (f"{name} is compiled with preopt=False, and Numba's unoptimized code for a NumPy function or "
                   f"array operation in it cannot be differentiated: {why}")
    return ZymaseError(message, construct="preopt=False", function=name.strip("'"), location=location,
                       hint="use the default preopt=True: Numba's helpers are then inlined and simplified before "
                       "differentiation, which removes that code")


#: NumPy functions and array methods whose Numba implementations copy a whole buffer
_COPYING = ("copy", "array", "ascontiguousarray", "asfortranarray", "flatten", "concatenate", "hstack",
            "vstack", "stack", "append")
_UNKNOWN_COPY = re.compile(r"^cannot deduce the type of the memory that .*, copied by this (memcpy|memmove): (.*)$")


def copy_refusal(err: ZymaseError, disp) -> ZymaseError | None:
    """The type analysis' refusal of an array copy, ``err``, in Python terms (the copying
    calls of ``disp``'s source and their lines); None when ``err`` is another error."""
    from zymase.frontends.numba import function_label

    match = _UNKNOWN_COPY.search(err.message)
    if match is None:
        return None
    name = function_label(disp)
    py = disp.py_func.__code__
    sites = {}
    for called, construct, line in _calls_or_none(disp):
        if called in _COPYING:
            sites.setdefault(construct, []).append(line)
    if sites:
        what = ", ".join(f"{construct} ({_lines(sorted(set(lines)))})" for construct, lines in sites.items())
        location = f"{py.co_filename}:{min(min(v) for v in sites.values())}"
        what = f"an array copy in it ({what})"
    else:
        location = f"{py.co_filename}:{py.co_firstlineno}"
        what = "an array copy in it (a NumPy function copying an array's buffer)"
    detail = match.group(2).replace("so they could hold floating-point values", "so they could hold floats")
    detail = re.sub(r"\bfloat\b", "float32", re.sub(r"\bdouble\b", "float64", detail))  # NumPy's names
    return ZymaseError(
        f"cannot differentiate {name}: zymase cannot tell whether {what} moves floats, as some elements of the "
        f"copied array are never read or written as numbers in the function ({detail})",
        construct="array copy", function=name.strip("'"), location=location,
        hint="fill every element of the array before copying it (np.zeros instead of np.empty, or assign "
        "them all), or copy it element by element in a loop")


_LIST_GROWTH = re.compile(r"^memory holding active data is passed to 'NRT_MemInfo_varsize_\w+'")


def list_refusal(err: ZymaseError, disp) -> ZymaseError | None:
    """The refusal of differentiated values kept in a Python (reflected) list, ``err`` (Numba
    grows the list's storage in its C runtime, NRT_MemInfo_varsize_realloc, which zymase
    cannot see into), in Python terms: the appends of ``disp``'s source and their lines;
    None when ``err`` is another error."""
    from zymase.frontends.numba import function_label

    if _LIST_GROWTH.search(err.message) is None:
        return None
    name = function_label(disp)
    py = disp.py_func.__code__
    calls = _calls_or_none(disp)
    lines = sorted({line for called, _, line in calls if called in ("append", "extend", "insert")})
    numpy = {} if lines or _makes_lists(py) else _numpy_sites(calls)
    if lines:
        what = f"(.append() on {_lines(lines)}) "
    elif numpy:
        # no list in the source: a NumPy function Numba implements with one (np.allclose
        # broadcasts its operands into a list of arrays)
        what = ("(none written in it: one made by a NumPy function Numba implements with a list, among "
                + ", ".join(f"{c} ({_lines(ls)})" for c, ls in numpy.items()) + ") ")
        lines = [min(min(ls) for ls in numpy.values())]
    else:
        what = "(a list comprehension or a list grown by .append()) "
    location = f"{py.co_filename}:{lines[0] if lines else py.co_firstlineno}"
    return ZymaseError(
        f"{name} keeps differentiated values in a list {what}whose storage Numba grows in its C runtime "
        "(NRT_MemInfo_varsize_realloc), which zymase cannot differentiate through",
        construct="list of differentiated values", function=name.strip("'"), location=location,
        hint="write that NumPy call as array arithmetic or a loop (np.allclose(a, b, rtol, atol) as "
        "np.all(np.abs(a - b) <= atol + rtol * np.abs(b)))" if numpy else
        "keep the values in a NumPy array instead: np.empty(n) filled by index (with a counter for the "
        "values a condition selects), or np.array([...]) of a fixed number of values")


def _makes_lists(code) -> bool:
    """Whether the Python source of ``code`` may build a list: a list comprehension (a
    nested ``<listcomp>`` code object, Python < 3.12; inlined since, as BUILD_LIST) or a
    list display."""
    import dis

    return any(getattr(c, "co_name", None) == "<listcomp>" for c in code.co_consts) or any(
        ins.opname in ("BUILD_LIST", "LIST_APPEND") for ins in dis.get_instructions(code))


#: NumPy functions Numba 0.68 implements with a list of the arrays they are given
_LIST_MAKERS = ("allclose", "broadcast_arrays")


def _numpy_sites(calls) -> dict[str, list[int]]:
    """The ``np.*`` calls among ``calls`` (:func:`_source_calls`) that are known to build
    a list (:data:`_LIST_MAKERS`), else every one, with their lines."""
    sites: dict[str, list[int]] = {}
    known = any(called in _LIST_MAKERS and construct.startswith("np.") for called, construct, _ in calls)
    for called, construct, line in calls:
        if construct.startswith("np.") and (called in _LIST_MAKERS or not known):
            sites.setdefault(construct, []).append(line)
    return {c: sorted(set(ls)) for c, ls in sites.items()}


_TYPED_CONTAINER = re.compile(r"^memory holding active data is passed to 'numba_(list|dict)_\w+'")

#: how a typed List / Dict is made, and the calls that put values in it (names as _source_calls gives them)
_TYPED_MADE = {"list": ("List", "empty_list"), "dict": ("Dict", "empty", "{}")}
_TYPED_FILLED = {"list": ("append", "extend", "insert"), "dict": ("[]=", "setdefault", "update")}


def typed_container_refusal(err: ZymaseError, disp) -> ZymaseError | None:
    """The refusal of differentiated values kept in a ``numba.typed.List`` or ``Dict``,
    ``err`` (Numba keeps their items in its C runtime, ``numba_list_*``/``numba_dict_*``,
    which zymase cannot see into), in Python terms: where ``disp``'s source makes and fills
    such a container, with lines; None when ``err`` is another error. (The lines are
    those of every typed List/Dict made and every call that may fill one: the untyped IR
    does not tell a dict's ``d[k] = v`` from an array's, so a Dict's "filled" lines may
    include array item assignments; fills are named only when the function makes one.)"""
    from zymase.frontends.numba import function_label

    match = _TYPED_CONTAINER.search(err.message)
    if match is None:
        return None
    kind = match.group(1)
    name = function_label(disp)
    py = disp.py_func.__code__
    calls = _calls_or_none(disp)
    made = sorted({line for called, _, line in calls if called in _TYPED_MADE[kind]})
    filled = sorted({line for called, _, line in calls if called in _TYPED_FILLED[kind]}) if made else []
    container = "typed List" if kind == "list" else "typed Dict"
    sites = []
    if made:
        sites.append(f"made on {_lines(made)}")
    if filled:
        sites.append(f"filled on {_lines(filled)}")
    where = f" ({', '.join(sites)})" if sites else ""
    location = f"{py.co_filename}:{made[0] if made else py.co_firstlineno}"
    return ZymaseError(
        f"{name} keeps differentiated values in a {container}{where}, whose items Numba keeps in its C runtime "
        f"('{err.message.split(chr(39))[1]}'), which zymase cannot differentiate through",
        construct=f"{container} of differentiated values", function=name.strip("'"), location=location,
        hint="keep the values in a NumPy array instead: np.empty(n) filled by index"
        + (" (an integer key as the index, or a second array of the keys)" if kind == "dict" else
           " (with a counter for the values a condition selects)"))


def _calls_or_none(disp) -> list[tuple[str, str, int]]:
    """:func:`_source_calls`, or none when Numba's front end cannot read the function
    again (the refusal is then said without lines, never turned into a traceback)."""
    try:
        return _source_calls(disp)
    except Exception:
        return []


def in_source_terms(err: ZymaseError, disp) -> ZymaseError | None:
    """``err`` said in the terms of ``disp``'s Python source, where it is an array copy of
    unknown element type, a list of differentiated values, or one of Numba's object-like
    constructs (objmode blocks, jitclass and structref instances, ctypes and @cfunc calls);
    else None."""
    from zymase.frontends.numba_objects import foreign_call_refusal, objmode_refusal, runtime_object_refusal

    disp = _behind_glue(disp)
    return (copy_refusal(err, disp) or list_refusal(err, disp) or typed_container_refusal(err, disp)
            or objmode_refusal(err, disp) or runtime_object_refusal(err, disp) or foreign_call_refusal(err, disp))


def _behind_glue(disp):
    """The user's function a generated njit function calls (``jvp`` and the Jacobians
    differentiate an output writer that calls ``f``): its source has the lines to name,
    the glue's (``<zymase f>:1``) none; ``disp`` itself when it is not glue."""
    from zymase.frontends.numba_copy import _dispatcher_refs
    from zymase.njit_call_site import GENERATED

    seen = set()
    while disp.py_func.__code__.co_filename.startswith(GENERATED) and disp not in seen:
        seen.add(disp)
        called = {d for _, d, _ in _dispatcher_refs(disp.py_func)}
        if len(called) != 1:
            break
        disp = called.pop()
    return disp


def _lines(lines: list[int]) -> str:
    if len(lines) == 1:
        return f"line {lines[0]}"
    return f"lines {', '.join(map(str, lines[:-1]))} and {lines[-1]}"


def _bodies(text: str) -> dict[str, list[str]]:
    bodies, current = {}, None
    for line in text.splitlines():
        m = _DEFINE.match(line)
        if m:
            current = m.group(1)
            bodies[current] = []
        elif line.startswith("}"):
            current = None
        elif current is not None:
            bodies[current].append(line)
    return bodies


def _direct_calls(body) -> list[str]:
    """The functions ``body`` calls, in the order of their first call."""
    return list(dict.fromkeys(fn for line in body for fn in _CALL.findall(line)))


def _callees(bodies: dict, fn: str) -> set[str]:
    seen, todo = set(), [fn]
    while todo:
        for g in _direct_calls(bodies.get(todo.pop(), ())):
            if g not in seen:
                seen.add(g)
                todo.append(g)
    return seen


def _returns_arrays_in_a_tuple(body) -> bool:
    # a struct whose first member is a struct: a tuple of arrays (an array is a struct)
    return any(re.search(r"\binsertvalue \{\s*\{", line) for line in body)


def _implementation_name(mangled: str) -> str | None:
    """``np_diff_impl`` in ``_ZN5numba2np9arraymath12np_diff_impl...``: the first name
    after Numba's module path, with the prefixes and suffixes of implementations cut."""
    parts = _itanium_parts(mangled) if mangled.startswith("_ZN") else []
    if not parts or parts[0] != "numba" or len(parts) < 4:
        return None
    name = parts[3]
    name = re.sub(r"^(?:ol_np_|ol_|np_|impl_np_|impl_|array_)", "", name)
    name = re.sub(r"(?:_impl|_cpu|_generic)$", "", name)
    return _PYTHON_NAMES.get(name, name)


def _itanium_parts(mangled: str) -> list[str]:
    """The leading name components of an Itanium-mangled nested name (``_ZN<len><id>...``)."""
    parts, i = [], 3
    while i < len(mangled) and mangled[i].isdigit():
        j = i
        while mangled[j].isdigit():
            j += 1
        n = int(mangled[i:j])
        parts.append(mangled[j:j + n])
        i = j + n
    return parts


def _python_sites(disp, culprits: list[str]) -> list[tuple[str, list[int]]]:
    """(construct, lines) of the calls in ``disp``'s source that the Numba functions
    ``culprits`` implement, matched by name (every line calling that name: two calls of
    ``np.diff`` are not told apart)."""
    calls = _source_calls(disp)
    wanted: dict[str, int] = {}
    for fn in culprits:
        name = _implementation_name(fn)
        if name is not None:
            wanted.setdefault(name, 0)
    sites = []
    for name in wanted:
        found = [(line, construct) for n, construct, line in calls if n == name]
        if found:
            construct = found[0][1]
            sites.append((construct, sorted({line for line, _ in found})))
    return sites


def _source_calls(disp) -> list[tuple[str, str, int]]:
    """(name, construct as written, line) of each call, item assignment and dict display
    (name ``{}``) in ``disp``'s Python source, from Numba's untyped IR."""
    from numba.core import compiler, ir
    from numba.core.ir_utils import find_callname, guard

    func_ir = compiler.run_frontend(disp.py_func)
    out = []
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
                out.append(("[]=", f"the item assignment {stmt.target.name}[...] = ...", stmt.loc.line))
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "build_map":
                out.append(("{}", "the dict display {...}", stmt.loc.line))
            if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call":
                found = guard(find_callname, func_ir, stmt.value)
                if found is None:
                    continue
                name, where = found
                if isinstance(where, str):
                    construct = f"{where.replace('numpy', 'np')}.{name}(...)"
                else:
                    construct = f".{name}()"
                out.append((name, construct, stmt.loc.line))
    return out
