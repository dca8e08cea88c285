"""The functions outside the differentiated part skip the pre-AD pipeline (issue 29).

The pre-AD pipeline exists so that AD reads optimized code; a function no derivative
reaches (``main``, input parsing, timing: most of a program) gains nothing from it. When
clang's own code replaces such a function (``llvm/clang_primal``), LLVM 22's work on it is
thrown away; when it stays zymase's (a root declined), the post-AD pipeline gives it the
full O-level pipeline, once, as clang does. So before the pre-AD pipeline those functions
(the ones :func:`llvm.reachable.differentiated_part` leaves out of clang's IR) are marked
``optnone`` (and ``noinline``, which ``optnone`` requires), which every function pass
skips, and :func:`unskip` takes the marks off again afterwards. The module keeps every
definition, so the interprocedural passes see the same uses of every global as before.

The marks are a string attribute naming what was added (``noinline`` only where the
function was not ``noinline`` already); a function that is ``optnone`` already, or has an
attribute the verifier refuses beside it (``alwaysinline``, ``optsize``, ``minsize``: ``-Os``,
``-Oz``), is not marked. Marking a function that ends up differentiated is never wrong,
only slower: the marks are removed before the split reads the module.
"""

from __future__ import annotations

import re

from zymase.llvm.pre_ad_marks import add_function_attribute
from zymase.llvm.reachable import _DEFINE, differentiated_part

_MARK = '"zymase-preopt-skip"'
#: attributes the verifier refuses beside ``optnone`` (and ``optnone`` itself: nothing to do)
_INCOMPATIBLE = {"optnone", "alwaysinline", "optsize", "minsize", "optdebug"}
_GROUP = re.compile(r"^attributes (#\d+) = \{(.*)\}$", re.M)
_MARKED_GROUP = re.compile(rf"^(attributes #\d+ = \{{)(.*{_MARK}=\"(added|kept)\".*)(\}})$", re.M)


def skip_outside_part(ll_text: str) -> tuple[str, int]:
    """``ll_text`` with the functions outside its differentiated part marked to be skipped
    by the pre-AD pipeline, and how many were marked (none when the split declines)."""
    part = differentiated_part(ll_text)
    if part is None or not part.stubbed:
        return ll_text, 0
    groups = dict(_GROUP.findall(ll_text))
    out, marked = [], 0
    for line in ll_text.split("\n"):
        m = _DEFINE.match(line) if line.startswith("define ") else None
        if m and m.group(1) in part.stubbed:
            attrs = line + " " + " ".join(groups.get(g, "") for g in re.findall(r"#\d+", line[m.end():]))
            words = set(re.findall(r"[a-z_]+", attrs))
            if not _INCOMPATIBLE & words:
                mark = f'{_MARK}="kept"' if "noinline" in words else f'noinline {_MARK}="added"'
                line = add_function_attribute(line, m.end() - 1, f"optnone {mark}")
                marked += 1
        out.append(line)
    return "\n".join(out), marked


def unskip(ll_text: str) -> str:
    """The pre-AD pipeline's output with :func:`skip_outside_part`'s marks removed (LLVM
    prints a function's attributes as one group)."""
    def clean(m: re.Match) -> str:
        drop = {"optnone", f'{_MARK}="{m[3]}"'} | ({"noinline"} if m[3] == "added" else set())
        body = f" {m[2].strip()} "
        for word in drop:
            body = body.replace(f" {word} ", " ")
        return f"{m[1]}{body}{m[4]}"

    return _MARKED_GROUP.sub(clean, ll_text)
