"""Marks put on clang's LLVM IR text before the pre-AD pipeline, and the names they
read: the ``__enzyme_*`` declarations ``nomerge`` (:func:`protect_marker_calls`), the
functions Enzyme's annotations or registrations name ``noinline`` and the accesses of
inactive globals volatile (:func:`protect_annotated_functions`).

Text only, no xDSL: ``zymase cc`` runs these, the pre-AD pipeline and the split while
another thread loads the engine (``frontends/c``). What the marks mean is said in
``llvm/annotations.py`` and ``llvm/markers.py``, which read the IR these marks protect
and re-export these names.
"""

from __future__ import annotations

import re

from zymase.errors import ZymaseError

#: The calls zymase lowers: Enzyme matches any function whose name contains one of
#: these (``__enzyme_autodiff2``, C++'s ``_Z17__enzyme_autodiffIdJdEET_Pvz``).
MARKER_FUNCTIONS = {"__enzyme_autodiff": "rev", "__enzyme_fwddiff": "fwd", "__enzyme_augmentfwd": "augment",
                    "__enzyme_reverse": "reverse", "__enzyme_fwdsplit": "fwdsplit", "__enzyme_augmentsize": "size",
                    "__enzyme_batch": "batch"}

#: Functions a program defines for Enzyme to call back (its logging of gradients and
#: errors): zymase never calls them, so a program that defines one is refused.
LOGGING_HOOKS = {
    "enzymeLogGrad": "is called by Enzyme with every adjoint it computes",
    "enzymeLogValue": "is called by Enzyme with every value it computes",
    "enzymeLogError": "is called by Enzyme's error-estimation mode",
}

#: the function attributes the engine reads
INACTIVE = "enzyme_inactive"
FUNCTION_LIKE = "enzyme_math"
#: the attribute of a global marked inactive (not written to LLVM IR)
INACTIVE_GLOBAL = "zymase.inactive_global"

#: Enzyme's attribute spellings implemented (the header maps them onto annotate(...))
SOURCE_ATTRIBUTES = ("enzyme_inactive", "enzyme_inactive_noblock", "enzyme_function_like")

#: registration globals implemented, by name prefix (any suffix: __enzyme_inactivefn2)
REGISTRATIONS = ("__enzyme_inactivefn", "__enzyme_function_like", "__enzyme_inactive_global",
                 "__enzyme_allocation_like")
#: the function attribute of a custom allocator: the position of its size argument
ALLOCATOR = "enzyme_allocator"
#: the function attribute of its deallocator: Enzyme's free-args ("2,-1": -1 is the pointer)
DEALLOCATOR = "enzyme_deallocator"

#: annotation strings for inactive functions: zymase's header and Enzyme's plugin
_INACTIVE_ANNOTATIONS = ("enzyme_inactive", "enzyme_inactive_noblock", "enzyme_inactivefn",
                         "enzyme_inactivenoblockfn")
_LIKE_PREFIX = "enzyme_function_like="

#: function attributes of hand-written IR accepted as marks
_INACTIVE_ATTRIBUTES = ("enzyme_inactive", "enzyme_inactive_noblock")

_SYMBOL = r'@(?:"(?:[^"\\]|\\.)*"|[-a-zA-Z$._0-9]+)'
_SYMBOL_RE = re.compile(_SYMBOL)


def is_implemented_annotation(text: str) -> bool:
    """Whether ``annotate("<text>")`` is one this module reads (for the refusal of the rest)."""
    return text in _INACTIVE_ANNOTATIONS or text.startswith(_LIKE_PREFIX)


def is_implemented_attribute(name: str) -> bool:
    """Whether the ``enzyme_*`` function attribute ``name`` is one the engine reads."""
    return name in (INACTIVE, FUNCTION_LIKE, ALLOCATOR, DEALLOCATOR, *_INACTIVE_ATTRIBUTES)


#: registration globals of custom derivatives (read by autodiff/custom.py); their function
#: is kept out of line like a marked one
_DERIVATIVE_REGISTRATIONS = ("__enzyme_register_gradient", "__enzyme_register_derivative",
                             "__enzyme_register_splitderivative")


def is_registration(name: str) -> bool:
    return name.startswith(REGISTRATIONS)


def _name(symbol: str) -> str:
    """``@"a b"`` or ``@f`` -> the symbol's name."""
    body = symbol[1:]
    return body[1:-1] if body.startswith('"') else body




def protect_annotated_functions(ll_text: str) -> str:
    """Mark ``noinline`` every function that LLVM IR text annotates or registers as
    inactive or function-like, or registers a derivative for: the pre-AD pipeline would
    otherwise inline it at -O1 and up, and its body would be differentiated in place of
    the annotation or the registered derivative. The accesses
    of inactive globals become volatile (:func:`_volatile_accesses`)."""
    strings = {}
    for m in re.finditer(rf'^({_SYMBOL}) = .*?c"((?:[^"\\]|\\..)*)\\00"', ll_text, re.M):
        strings[_name(m[1])] = m[2]
    marked: set[str] = set()
    inactive_globals: set[str] = set()
    variables = {_name(m[1]) for m in re.finditer(rf"^({_SYMBOL}) = [^(]*?\b(?:global|constant)\b", ll_text, re.M)}
    for line in ll_text.splitlines():
        if not line.startswith("@"):
            continue
        head = _SYMBOL_RE.match(line)
        gname = _name(head[0]) if head else ""
        if gname == "llvm.global.annotations":
            for entry in re.finditer(r"\{([^{}]*@[^{}]*)\}", line):
                symbols = [_name(s) for s in _SYMBOL_RE.findall(entry[1])]
                if len(symbols) >= 2 and is_implemented_annotation(strings.get(symbols[1], "")):
                    (inactive_globals if symbols[0] in variables else marked).add(symbols[0])
        elif gname.startswith("__enzyme_inactive_global"):
            inactive_globals.update(_name(s) for s in _SYMBOL_RE.findall(line[head.end():]))
        elif is_registration(gname):
            marked.update(_name(s) for s in _SYMBOL_RE.findall(line[head.end():]))
        elif any(prefix in gname for prefix in _DERIVATIVE_REGISTRATIONS):
            # the function a derivative is registered for (autodiff/custom.py): the first entry
            first = _SYMBOL_RE.findall(line[head.end():])
            if first:
                marked.add(_name(first[0]))
    if inactive_globals:
        ll_text = _volatile_accesses(ll_text, inactive_globals)
    # Enzyme's function attributes, written inline or in an attribute group
    marks = re.compile(r'"enzyme_inactive(?:_noblock)?"|"enzyme_math"=')
    group_text = dict(re.findall(r"^attributes (#\d+) = \{(.*)\}", ll_text, re.M))
    groups = {g for g, text in group_text.items() if marks.search(text)}
    always = {g for g, text in group_text.items() if re.search(r"\balwaysinline\b", text)}
    out = []
    for line in ll_text.splitlines():
        if line.startswith("define "):
            m = re.search(rf"\s({_SYMBOL})\(", line)
            attributed = marks.search(line) or any(re.search(rf"{g}\b", line) for g in groups)
            if m and (_name(m[1]) in marked or attributed) and (
                    " alwaysinline" in line or any(re.search(rf"{g}\b", line) for g in always)):
                raise ZymaseError(
                    f"'{_name(m[1])}' is marked inactive, function_like or with a registered derivative, and "
                    "also always_inline: zymase "
                    "keeps such a function out of line, where its calls are not differentiated through",
                    construct="__attribute__((always_inline))", function=_name(m[1]),
                    location=_debug_location(ll_text, line),
                    hint="remove always_inline from the function")
            if m and (_name(m[1]) in marked or attributed) and " noinline" not in line:
                line = add_function_attribute(line, m.end() - 1, "noinline")
        out.append(line)
    return "\n".join(out) + "\n"


def _volatile_accesses(ll_text: str, names: set[str]) -> str:
    """Loads and stores of the inactive globals ``names`` made volatile for the pre-AD
    pipeline, which would otherwise forward a stored value to a later load (the load,
    a constant, would become the active value stored); :func:`apply_annotations` makes
    them ordinary again. Only direct accesses can be kept so: a global whose address is
    used otherwise (an element of an array, a pointer passed on) is refused."""
    symbols = "|".join(re.escape(f"@{n}") for n in sorted(names))
    access = re.compile(rf"= load (?!volatile)([^,]+), ptr ({symbols})\b"
                        rf"|^(\s*)store (?!volatile)(.*), ptr ({symbols})\b")
    mention = re.compile(rf"({symbols})(?![-\w$.])")
    out, in_body, function = [], False, None
    for line in ll_text.splitlines():
        if line.startswith("define "):
            in_body = True
            named = re.search(rf"\s({_SYMBOL})\(", line)
            function = _name(named[1]) if named else None
        elif line.startswith("}"):
            in_body = False
        elif in_body:
            line = access.sub(lambda m: (f"= load volatile {m[1]}, ptr {m[2]}" if m[1] is not None
                                         else f"{m[3]}store volatile {m[4]}, ptr {m[5]}"), line)
            rest = re.sub(rf"= load volatile [^,]+, ptr ({symbols})\b|store volatile .*, ptr ({symbols})\b", "", line)
            other = mention.search(rest)
            if other:
                raise ZymaseError(
                    f"the inactive global '{_name(other[1])}' is used through its address (an array element, "
                    "a pointer passed on), not only read and written by name",
                    construct=_name(other[1]), function=function, location=_debug_location(ll_text, line),
                    hint="mark inactive a scalar global that the code reads and writes directly, or the "
                    "functions that use it")
        out.append(line)
    return "\n".join(out) + "\n"


def _debug_location(ll_text: str, line: str) -> str | None:
    """``file:line:col`` of an instruction line of LLVM IR text (``file:line`` of a
    ``define`` line), from its ``!dbg``."""
    ref = re.search(r"!dbg (!\d+)", line)
    source = re.search(r'^source_filename = "([^"]*)"', ll_text, re.M)
    if not ref or not source:
        return None
    loc = re.search(rf"^{ref[1]} = !DILocation\(line: (\d+), column: (\d+)", ll_text, re.M)
    if loc:
        return f"{source[1]}:{loc[1]}:{loc[2]}"
    function = re.search(rf"^{ref[1]} = distinct !DISubprogram\(.*?\bline: (\d+)", ll_text, re.M)
    return f"{source[1]}:{function[1]}" if function else None


_ADDR_WORDS = re.compile(r"(?:\s+(?:local_unnamed_addr|unnamed_addr|addrspace\(\d+\)))*")


def add_function_attribute(line: str, open_paren: int, attr: str) -> str:
    """``line`` (a ``define``) with ``attr`` after its parameter list and address words."""
    depth = 0
    for i in range(open_paren, len(line)):
        if line[i] == "(":
            depth += 1
        elif line[i] == ")":
            depth -= 1
            if depth == 0:
                at = _ADDR_WORDS.match(line, i + 1).end()
                return line[:at] + f" {attr}" + line[at:]
    return line


def protect_marker_calls(ll_text: str) -> str:
    """Mark the declarations of ``__enzyme_*`` functions ``nomerge`` in LLVM IR text.

    The pre-AD pipeline runs before the call sites are lowered; without this,
    SimplifyCFG merges two calls in different branches into one whose function or
    markers are phis (``cond ? f : g``), which no longer name what to differentiate.
    (Functions with an Enzyme mark or a registered derivative are kept out of line by
    :func:`protect_annotated_functions`.)
    """
    out = []
    for line in ll_text.splitlines():
        if line.startswith("declare") and any(marker in line for marker in MARKER_FUNCTIONS):
            # the name is the declaration's first `@`; C++ mangles a template one as
            # `@_Z17__enzyme_autodiffI...` or `@_ZN6enzyme...__enzyme_fwddiff...`
            # (function attributes follow unnamed_addr/addrspace: clang -O1 and up
            # writes `local_unnamed_addr`, so nomerge goes after them)
            line = add_function_attribute(line, line.index("(", line.index("@")), "nomerge")
        out.append(line)
    return "\n".join(out) + "\n"


_MANGLED_FREE_FUNCTION = re.compile(r"_Z(\d+)")


def plain_function_name(name: str) -> str:
    """A C++ free function's name without its mangling (``_Z13enzymeLogGraddPKc...`` ->
    ``enzymeLogGrad``); other names unchanged."""
    m = _MANGLED_FREE_FUNCTION.match(name)
    return name[m.end():m.end() + int(m.group(1))] if m else name
