"""Do less: only the part of a module that differentiation needs goes through xDSL.

The functions that call ``__enzyme_*`` markers, the functions they name, everything those
reach (calls, function pointers, global initializers), and every function that touches a
writable global that part uses (an analysis may reason about who writes it) form the
*differentiated part*. The other functions (``main``, input parsing, timing: most of a
typical program) become declarations in the text the reader imports, and keep their
LLVM IR exactly (debug info, TBAA, anything the reader would drop or refuse): after AD,
:func:`merge` links the differentiated part back into the optimized-before-AD module with
LLVM's linker (llvmlite), where the reimported functions and the globals replace their
originals.

:func:`differentiated_part` declines (returns None, and the whole module is imported as
before) when the module has something the split would have to reason about beyond
functions and globals: comdats, appending globals (``llvm.global_ctors``,
``llvm.global.annotations``), aliases, ifuncs, module asm, exception personalities,
Enzyme registration globals (``__enzyme_register_gradient_*`` ...), ``"enzyme_*"``
function attributes, or quoted names; and when the part is the whole module, unless the
module has debug information (the part then keeps the unchanged functions' own IR). Functions
named like Enzyme's logging hooks stay in the part, where llvm/markers refuses them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zymase.llvm.loop_hints import show_vectorization_hints
from zymase.llvm.pre_ad_marks import LOGGING_HOOKS, plain_function_name

#: a global symbol reference; quoted names make the split decline (see the module doc)
_REF = re.compile(r"@([-a-zA-Z$._][-a-zA-Z$._0-9]*|\d+)")
_DEFINE = re.compile(r"^define [^@]*@([-a-zA-Z$._][-a-zA-Z$._0-9]*|\d+)\(")
_GLOBAL = re.compile(r"^@([-a-zA-Z$._][-a-zA-Z$._0-9]*|\d+) = (.*)$")
#: what the split does not reason about (module doc): top-level entities, matched at line
#: starts, and words anywhere (``personality`` and ``appending`` as function or global
#: properties). Three searches rather than one alternation: one regex with unanchored
#: alternatives tries all of them at every character (20-45 ms on hand's 130 kB, twice a
#: build); a word absent from the text needs no search at all.
_DECLINE_LINE = re.compile(r'^(?:module asm|\$\S+ = comdat|@\S+ = .*\b(?:alias|ifunc)\b|@\S*__enzyme'
                           r'|attributes #.*"enzyme_)', re.M)
_DECLINE_WORD = re.compile(r"\b(?:appending|personality)\b")
#: how a function or instruction in LLVM's printed IR names its debug information
_DEBUG_ATTACHMENT = "!dbg "
#: linkages a declaration cannot have
_DEFINITION_LINKAGES = {"internal", "private", "linkonce", "linkonce_odr", "weak", "weak_odr",
                        "available_externally", "common"}


@dataclass
class Part:
    """The text the reader imports, and what :func:`merge` needs to put the module back."""

    text: str
    original: str
    functions: frozenset[str]  # the functions defined in ``text``
    stubbed: frozenset[str]  # the functions turned into declarations (they keep their IR)


def _functions(text: str) -> tuple[dict[str, tuple[int, int]], dict[str, str]]:
    """Per defined function, its (first, last) line numbers; per global, its line."""
    lines = text.split("\n")
    functions: dict[str, tuple[int, int]] = {}
    globals_: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _DEFINE.match(line)
        if m:
            j = i
            while lines[j] != "}":
                j += 1
            functions[m.group(1)] = (i, j)
            i = j + 1
            continue
        g = _GLOBAL.match(line)
        if g:
            globals_[g.group(1)] = g.group(2)
        i += 1
    return functions, globals_


def _is_writable_definition(rest: str) -> bool:
    """Whether a global (the text after ``@name = ``) is defined here and not constant."""
    words = rest.split(" ")
    kind = next((w for w in words if w in ("global", "constant")), "constant")
    return kind == "global" and "external" not in words[: words.index("global")] and "extern_weak" not in words


def _declines(text: str) -> bool:
    """Whether ``text`` has something the split does not reason about (module doc)."""
    if '@"' in text:  # a quoted name
        return True
    if ("appending" in text or "personality" in text) and _DECLINE_WORD.search(text):
        return True
    return _DECLINE_LINE.search(text) is not None


def differentiated_part(text: str) -> Part | None:
    """The differentiated part of the printed (canonical) LLVM IR ``text``, or None when
    the split declines (module doc)."""
    if "__enzyme_" not in text or _declines(text):
        return None
    lines = text.split("\n")
    functions, globals_ = _functions(text)
    refs = {f: set(_REF.findall("\n".join(lines[a:b + 1]))) for f, (a, b) in functions.items()}
    # (C++ mangles the markers: _Z17__enzyme_autodiffPvz)
    marker_callers = {f for f, r in refs.items() if any("__enzyme" in n for n in r)}
    marker_callers |= {f for f in functions if plain_function_name(f) in LOGGING_HOOKS}
    writable = {g for g, rest in globals_.items() if _is_writable_definition(rest)}
    users: dict[str, set[str]] = {}
    for f, r in refs.items():
        for g in r & writable:
            users.setdefault(g, set()).add(f)
    keep: set[str] = set()
    seen_globals: set[str] = set()
    todo = list(marker_callers)
    while todo:
        f = todo.pop()
        if f in keep:
            continue
        keep.add(f)
        names = set(refs[f])
        while names:
            n = names.pop()
            if n in functions:
                todo.append(n)
            elif n in globals_ and n not in seen_globals:
                seen_globals.add(n)
                names |= set(_REF.findall(globals_[n]))  # what its initializer points to
                todo.extend(users.get(n, ()))
    if len(keep) == len(functions) and _DEBUG_ATTACHMENT not in text:
        # nothing to leave out; with debug info the part is still worth its export and
        # merge: the functions AD leaves unchanged keep their IR, and with it their
        # debug info, which the reader and writer drop (``zymase cc -g``)
        return None
    stubbed = set(functions) - keep
    out: list[str] = []
    start = 0
    for f, (a, b) in sorted(((f, functions[f]) for f in stubbed), key=lambda x: x[1]):
        out.extend(lines[start:a])
        out.append(_declaration(lines[a]))
        start = b + 1
    out.extend(lines[start:])
    return Part("\n".join(out), text, frozenset(keep), frozenset(stubbed))


def _top_level_split(s: str, sep: str = ",") -> list[str]:
    items, depth, start = [], 0, 0
    for i, ch in enumerate(s):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == sep and depth == 0:
            items.append(s[start:i])
            start = i + 1
    items.append(s[start:])
    return items


def _declaration(header: str) -> str:
    """``define <...> @f(<type> %a, ...) <tail> {`` as ``declare <...> @f(<type>, ...) <attrs>``:
    no definition linkage, no parameter names, of the tail only the attribute groups and
    ``unnamed_addr``."""
    at = _DEFINE.match(header).end() - 1  # the "(" of the parameter list
    head = header[len("define "):at]
    depth, close = 0, at
    for close in range(at, len(header)):
        depth += {"(": 1, ")": -1}.get(header[close], 0)
        if depth == 0:
            break
    params = []
    for p in _top_level_split(header[at + 1:close]):
        p = p.strip()
        if p and p != "...":
            words = p.split(" ")
            p = " ".join(words[:-1]) if words[-1].startswith("%") and len(words) > 1 else p
        if p:
            params.append(p)
    head_words = [w for w in head.split(" ") if w and w not in _DEFINITION_LINKAGES]
    tail = [w for w in header[close + 1:].split(" ") if re.fullmatch(r"#\d+|(?:local_)?unnamed_addr", w)]
    return " ".join(["declare", *head_words]) + "(" + ", ".join(params) + ")" + "".join(f" {w}" for w in tail)


#: the first line of a differentiated part's exported text: the functions AD left as
#: they were (kept in the derivative cache with the text, so a cached part still says it)
UNCHANGED_HEADER = "; zymase: unchanged by AD:"
#: metadata attachments the comparison ignores: alias scopes (transforms/alias_scopes
#: annotates every function; for a primal function they repeat what LLVM knows from its
#: noalias arguments and allocations) and metadata numbers (the writer numbers them per
#: module)
_SCOPE_ATTACHMENT = re.compile(r", !(?:alias\.scope|noalias) !\d+")
_METADATA_NUMBER = re.compile(r"!\d+")
_ATTRIBUTE_GROUP = re.compile(r"^attributes (#\d+) = (.*)$", re.M)


def _function_texts(text: str) -> dict[str, str]:
    """Per function defined in the writer's ``text``, its definition with attribute
    groups spelled out and metadata numbers and alias scopes left out (see above)."""
    groups = dict(_ATTRIBUTE_GROUP.findall(text))
    lines = text.split("\n")
    out = {}
    for name, (a, b) in _functions(text)[0].items():
        body = _METADATA_NUMBER.sub("!", _SCOPE_ATTACHMENT.sub("", "\n".join(lines[a:b + 1])))
        out[name] = re.sub(r"#\d+", lambda m: groups.get(m.group(0), m.group(0)), body)
    return out


def unchanged_functions(before: str, after: str) -> list[str]:
    """The functions the writer printed alike before and after AD (``before``: the
    imported module written back without any change). :func:`merge` keeps their original
    IR, with what the round trip through the reader and writer drops (TBAA, debug info)."""
    old, new = _function_texts(before), _function_texts(after)
    return sorted(name for name, body in new.items() if old.get(name) == body)


def _unchanged_listed(differentiated: str) -> set[str]:
    """The functions the ``UNCHANGED_HEADER`` line of an exported part lists."""
    first = differentiated.split("\n", 1)[0]
    return set(first[len(UNCHANGED_HEADER):].split()) if first.startswith(UNCHANGED_HEADER) else set()


def changed_functions(part: Part, differentiated: str) -> frozenset[str]:
    """The functions of the original module that AD changed: those of the part not listed
    as unchanged (the derivatives AD added are not the original module's)."""
    return part.functions - _unchanged_listed(differentiated)


def merge(part: Part, differentiated: str) -> str:
    """The module again: ``part.original``'s stubbed functions with their own IR, and
    everything else (the differentiated part's functions, the derivatives, the globals)
    from ``differentiated``, joined by LLVM's linker. Symbols both sides define are made
    external for the link (a local symbol would be renamed, not joined) and get their
    linkage back afterwards.

    The part's functions that AD left unchanged (listed on the ``UNCHANGED_HEADER`` line
    of ``differentiated``) keep their original definition as the stubbed ones do: the
    primal as clang's pipeline would see it, TBAA and all, as Enzyme leaves it (issue 29:
    without TBAA the primal of a differentiated function could be slower than clang's)."""
    from zymase.llvm.modules import Workspace

    unchanged = _unchanged_listed(differentiated)
    with Workspace() as space:
        linkage = space.Linkage
        # the functions kept as they were skip the reader, which would give the vectorization
        # hints the pre-AD pipeline hid their names back
        base = space.parse(show_vectorization_hints(part.original))
        new = space.parse(differentiated)
        restore: dict[str, object] = {}
        theirs = _definitions(new)
        declared = {v.name for v in [*new.functions, *new.global_variables] if v.is_declaration}
        for name, value in _definitions(base).items():
            if name in theirs and name in unchanged:  # the original definition stays
                restore[name] = value.linkage
                value.linkage = linkage.external
                theirs[name].linkage = linkage.available_externally
            elif name in theirs:  # replaced by the differentiated part's definition
                restore[name] = theirs[name].linkage
                theirs[name].linkage = linkage.external
                value.linkage = linkage.available_externally
            elif name in declared:  # a function kept here that the differentiated part calls
                restore[name] = value.linkage
                value.linkage = linkage.external
        space.link(base, new)
        merged = _definitions(base)
        for name, kind in restore.items():
            merged[name].linkage = kind
        return space.print(base)


def _definitions(module) -> dict:
    """The functions and global variables ``module`` defines, by name (llvmlite's lookups
    by name do not see local symbols). Unnamed globals (``@0``, clang's OpenMP
    ``ident_t`` constants) are left out: they all have the name "", so they cannot be
    matched by name, and each module keeps its own private copy through the link."""
    return {v.name: v for v in [*module.functions, *module.global_variables] if not v.is_declaration and v.name}
