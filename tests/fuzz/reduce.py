"""Shrinking a failing fuzz program to a minimal one with the same failure.

``reduce_c`` deletes statements of the generated part of a C program (whole blocks,
single lines, an array declaration together with the loop or memcpy that fills it, terms
of a sum, subexpressions replaced by a constant) while (1) clang -Wall -Werror still
compiles it and (2) the checker reports the same failure signature at the same level.
``reduce_njit`` does the same for a generated njit module (indentation blocks). The
driver (``main`` / the argument maker) is never touched, so the program keeps printing
what the checker compares. Initialising an array is never deleted on its own: that
would make the program read uninitialised memory.
"""

from __future__ import annotations

import re
from typing import Callable

from .check_c import Outcome


def signature(o: Outcome) -> tuple[str, str]:
    """The failure class that must persist: outcome kind and the kind of disagreement."""
    d = o.detail
    if o.kind == "wrong":
        for key in ("not finite", "jax.grad(zymase.jax.jit", "zymase.jax.jit(f)", "value_and_grad value",
                    "jax.jvp", "!= jax.grad", "reverse", "finite differences", "driver printed", "raised"):
            if key in d:
                return o.kind, key
        return o.kind, "other"
    if o.kind == "crashed":
        m = re.match(r"(build exit \d+|build timeout|run: signal \d+|run: exit \d+|run: valgrind error|run timeout"
                     r"|internal error|njit worker died)", d)
        return o.kind, m.group(1) if m else d[:40]
    return o.kind, ""


# ---------------------------------------------------------------- C chunks
_ARRAY_DECL = re.compile(r"^\s*(double (\*\w+ = malloc\(|\w+\[(NMAX|n)\];)|struct pair \w+\[NMAX\];)")
_LOOP_HEAD = re.compile(r"^\s*(for|while) \(.*\)\s*$")


def _braces(line: str) -> int:
    return line.count("{") - line.count("}")


def _c_region(lines: list[str]) -> tuple[int, int]:
    """Line range [start, end) the reducer may edit: helpers and f, not the prelude or main."""
    start = next(i for i, ln in enumerate(lines) if ln.startswith("__attribute__((unused)) static int pick"))
    start = next(i for i in range(start, len(lines)) if lines[i].startswith("}")) + 1
    end = next(i for i, ln in enumerate(lines) if ln.startswith("/* ---- driver"))
    return start, end


def _block_end(lines: list[str], i: int, end: int) -> int:
    depth = 0
    for j in range(i, end):
        depth += _braces(lines[j])
        if depth <= 0 and j > i:
            return j
        if depth <= 0 and j == i:
            return j
    return end - 1


def c_chunks(lines: list[str]) -> list[tuple[int, int]]:
    """Deletable ranges [a, b] (inclusive) of the editable region, larger ones first."""
    start, end = _c_region(lines)
    chunks, protected = [], set()
    for i in range(start, end):
        ln = lines[i]
        if _ARRAY_DECL.match(ln):
            j = i + 1  # the memcpy / memset / filling loop (with its body) belongs to it
            if j < end and lines[j].rstrip().endswith("{"):
                j = _block_end(lines, j, end)
            elif j < end and _LOOP_HEAD.match(lines[j]):
                j += 1
            chunks.append((i, j))
            protected.update(range(i + 1, j + 1))
    for i in range(start, end):
        ln = lines[i]
        s = ln.strip()
        if not s or i in protected or _ARRAY_DECL.match(ln):
            continue
        if s.startswith("} else {"):
            chunks.append((i, _else_end(lines, i, end)))
        elif s.endswith("{") and _braces(ln) > 0:
            chunks.append((i, _block_end(lines, i, end)))
        elif _LOOP_HEAD.match(ln):
            chunks.append((i, i + 1))
        elif s == "}":
            continue
        else:
            chunks.append((i, i))
    chunks.sort(key=lambda c: c[0] - c[1])
    return chunks


def _else_end(lines: list[str], i: int, end: int) -> int:
    """The last line of an else branch opened on line i (the line before its closing brace)."""
    depth = 1
    for j in range(i + 1, end):
        depth += _braces(lines[j])
        if depth <= 0:
            return j - 1
    return end - 1


def _top_level_terms(expr: str) -> list[tuple[int, int]]:
    """Spans of ' + term' / ' - term' at parenthesis depth 0 of ``expr`` (not the first term)."""
    spans, depth, i = [], 0, 0
    starts = []
    while i < len(expr):
        c = expr[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif depth == 0 and expr[i:i + 3] in (" + ", " - "):
            starts.append(i)
            i += 3
            continue
        i += 1
    bounds = starts + [len(expr)]
    for a, b in zip(bounds, bounds[1:]):
        spans.append((a, b))
    return spans


def _paren_groups(line: str) -> list[tuple[int, int]]:
    """Spans (a, b) of balanced '(...)' groups in ``line``, innermost last."""
    out, stack = [], []
    for i, c in enumerate(line):
        if c == "(":
            stack.append(i)
        elif c == ")" and stack:
            out.append((stack.pop(), i + 1))
    out.sort(key=lambda s: s[0] - s[1])  # larger groups first
    return out


def _is_constant(group: str) -> bool:
    return re.fullmatch(r"\(-?[\d.]+\)", group) is not None


def _groups_to_try(expr: str, limit: int = 4) -> list[tuple[int, int]]:
    """The largest few parenthesised groups worth replacing by a constant (each try is a
    build, so not every group: the reducer's passes repeat until nothing changes)."""
    out = []
    for a, b in _paren_groups(expr):
        if _is_constant(expr[a:b]) or (expr[a - 1:a].isalnum() and "," in expr[a:b]):
            continue  # already minimal, or a call's argument list (keep the call)
        out.append((a, b))
    return out[:limit]


def c_line_edits(lines: list[str]) -> list[tuple[int, str]]:
    """Candidate rewrites of one line: drop a term of a sum, replace a group by a constant."""
    start, end = _c_region(lines)
    edits = []
    for i in range(start, end):
        ln = lines[i]
        m = re.match(r"^(\s*(?:double \w+ = |\w+(?:\[\w+\])? [+]?= |return ))(.*);$", ln)
        if not m:
            continue
        head, expr = m.group(1), m.group(2)
        if expr != "0.5":
            edits.append((i, head + "0.5;"))
        for a, b in _top_level_terms(expr):
            edits.append((i, head + expr[:a] + expr[b:] + ";"))
        for a, b in _groups_to_try(expr):
            edits.append((i, head + expr[:a] + "(0.5)" + expr[b:] + ";"))
    return edits


def reduce_lines(text: str, fails: Callable[[str], bool], chunks: Callable[[list[str]], list[tuple[int, int]]],
                 line_edits: Callable[[list[str]], list[tuple[int, str]]] | None, log=print,
                 progress: Callable[[str], None] | None = None) -> str:
    """Greedy deletion to a fixpoint: ``fails(candidate)`` must stay true; ``progress``
    gets every accepted smaller program (so an interrupted reduction is not lost)."""
    lines = text.split("\n")
    changed = True
    while changed:
        changed = False
        i = 0
        while True:
            cs = chunks(lines)
            if i >= len(cs):
                break
            a, b = cs[i]
            cand = lines[:a] + lines[b + 1:]
            if fails("\n".join(cand)):
                log(f"  deleted lines {a + 1}-{b + 1}: {lines[a].strip()[:70]}")
                lines = cand
                if progress:
                    progress("\n".join(lines))
                changed = True
            else:
                i += 1
        if line_edits is None:
            continue
        i = 0
        while True:
            es = line_edits(lines)
            if i >= len(es):
                break
            k, new = es[i]
            if new == lines[k]:
                i += 1
                continue
            cand = lines[:k] + [new] + lines[k + 1:]
            if fails("\n".join(cand)):
                log(f"  line {k + 1}: {new.strip()[:70]}")
                lines = cand
                if progress:
                    progress("\n".join(lines))
                changed = True
            else:
                i += 1
    return "\n".join(lines)


# ---------------------------------------------------------------- njit chunks
def njit_chunks(lines: list[str]) -> list[tuple[int, int]]:
    """Deletable ranges of the generated functions (a statement with its indented block)."""
    start = next(i for i, ln in enumerate(lines) if ln.startswith("# ---- functions"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("# ---- arguments"))
    chunks = []
    for i in range(start, end):
        ln = lines[i]
        s = ln.strip()
        if not s or s.startswith("#") or s.startswith("@") or ln.startswith("def ") or s.startswith("return r"):
            continue
        ind = len(ln) - len(ln.lstrip())
        j = i
        while j + 1 < end and lines[j + 1].strip() and len(lines[j + 1]) - len(lines[j + 1].lstrip()) > ind:
            j += 1
        chunks.append((i, j))
    chunks.sort(key=lambda c: c[0] - c[1])
    return chunks


def njit_line_edits(lines: list[str]) -> list[tuple[int, str]]:
    start = next(i for i, ln in enumerate(lines) if ln.startswith("# ---- functions"))
    end = next(i for i, ln in enumerate(lines) if ln.startswith("# ---- arguments"))
    edits = []
    for i in range(start, end):
        m = re.match(r"^(\s*(?:\w+(?:\[\w+\])? [+]?= |return ))(.*)$", lines[i])
        if not m or lines[i].rstrip().endswith(":"):
            continue
        head, expr = m.group(1), m.group(2)
        if expr != "0.5":
            edits.append((i, head + "0.5"))
        for a, b in _top_level_terms(expr):
            edits.append((i, head + expr[:a] + expr[b:]))
        for a, b in _groups_to_try(expr):
            edits.append((i, head + expr[:a] + "(0.5)" + expr[b:]))
    return edits
