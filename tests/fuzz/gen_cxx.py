"""Random C++ programs whose active doubles live in ``std::vector`` and pass through
<algorithm>/<numeric> (``--lang c++-stl``, session 31), built with ``zymase cc -x c++``.

``generate_cxx(seed)`` is a gen_c program (its expressions, statements, driver, promises;
without ``malloc`` and VLAs, which are not C++) whose statements are, about one in three
and at least once, one of ``CXX_FEATURES``:

- ``vectors``: a vector made from a pointer range, by ``push_back`` (with or without
  ``reserve``), or sized and filled;
- ``insert_erase``: ``insert`` of one value, of a count, or of a range of another array
  at a run-time position (reallocating when the capacity is full, which it is after
  construction), the longer vector read, then ``erase`` of as many at another position;
- ``resize``: up with a value and back down, or down and up again; ``push_back`` then
  ``pop_back``; ``erase(remove_if(...))`` then ``resize`` back to n;
- ``algorithms``: ``std::copy`` of a window between arrays, ``rotate`` and ``reverse``
  of a subrange, ``fill``, ``transform`` with a lambda capturing active scalars by
  reference, ``partial_sum``, ``adjacent_difference``;
- ``numeric``: ``inner_product`` and ``accumulate`` with a lambda into a new scalar;
- ``assign_swap``: copy assignment, ``assign`` from a pointer range, ``swap``.

Every vector in the scope holds n elements after each statement and is named by
``v.data()`` among the scope's arrays, so gen_c's statements read and write it too (the
pointer is taken anew at each use: an ``insert`` may move the elements). Offsets and
lengths are ints in range by construction, as in gen_cmem. The constructs are drawn from
a stream of their own (``CxxProgram.stl``).
"""

from __future__ import annotations

import random

from .gen_c import C_FEATURES, CProgram, _Scope

CXX_FEATURES = ("vectors", "insert_erase", "resize", "algorithms", "numeric", "assign_swap")
# gen_c's constructs that are C, not C++
NOT_CXX = ("malloc", "vla")
ALL_CXX_FEATURES = tuple(f for f in C_FEATURES if f not in NOT_CXX) + CXX_FEATURES
P_STL = 0.35

_C_DECLS = ("extern double __enzyme_autodiff(void *, ...);\nextern double __enzyme_fwddiff(void *, ...);\n"
            "extern int enzyme_dup, enzyme_const;\n")
_CXX_HEAD = "#include <algorithm>\n#include <numeric>\n#include <vector>\n\nextern \"C\" {\n" + _C_DECLS + "}\n"


class CxxProgram(CProgram):
    def __init__(self, seed: int, features: set[str] | None = None, size: int = 8):
        on = set(ALL_CXX_FEATURES if features is None else features) - set(NOT_CXX)
        super().__init__(seed, on, size)
        self.stl = random.Random(seed * 32452843 + 53)
        self.used: list[str] = []

    def index(self, sc: _Scope, bound: str, out: list[str], ind: str) -> str:
        """A new int variable in [0, bound) (``bound`` a C++ int expression >= 1)."""
        m = self.stl
        name = self.fresh("o")
        forms = [f"({bound}) - 1", "0", f"(n + {m.randrange(7)}) % ({bound})"]
        if sc.scalars:
            forms += [f"pick({self.expr(sc, 1)}, {bound})"] * 3
        out.append(f"{ind}int {name} = {m.choice(forms)};")
        return name

    def read_all(self, sc: _Scope, out: list[str], ind: str, vec: str, length: str) -> None:
        t = self.new_scalar(sc, out, ind, "0.0")
        out.append(f"{ind}for (int i = 0; i < {length}; i++)")
        out.append(f"{ind}    {t} += {vec}[i] * {self.bounded(sc, 'i % n')};")

    def lam(self, sc: _Scope, params: tuple[str, ...]) -> str:
        """A lambda body over ``params`` and the scope's scalars (captured by reference)."""
        inner = _Scope(list(params) + [s for s in sc.scalars if self.stl.random() < 0.3][:2], [], has_n=False)
        return f"[&]({', '.join('double ' + p for p in params)}) {{ return 0.5 * {params[0]} + {self.bounded(inner)}; }}"

    def statement(self, sc: _Scope, out: list[str], ind: str, depth: int) -> None:
        stl = [f for f in CXX_FEATURES if f in self.on]
        if stl and sc.has_n and sc.arrays and (not self.used or self.stl.random() < P_STL):
            vecs = [a[:-len(".data()")] for a in sc.arrays if a.endswith(".data()")]
            kind = self.stl.choice(stl) if vecs else "vectors"
            if "vectors" in self.on and self.stl_statement(kind, sc, out, ind, vecs):
                self.used.append(kind)
                return
        super().statement(sc, out, ind, depth)

    def stl_statement(self, kind: str, sc: _Scope, out: list[str], ind: str, vecs: list[str]) -> bool:
        m = self.stl
        if kind == "vectors":
            v = self.fresh("vec")
            src = m.choice(sc.arrays)
            shape = m.choice(["range", "push", "reserve", "sized"])
            if shape == "range":
                out.append(f"{ind}std::vector<double> {v}({src}, {src} + n);")
            elif shape == "sized":
                out.append(f"{ind}std::vector<double> {v}((size_t)n);")
                out.append(f"{ind}for (int i = 0; i < n; i++)")
                out.append(f"{ind}    {v}[i] = {self.bounded(sc, 'i')};")
            else:
                out.append(f"{ind}std::vector<double> {v};")
                if shape == "reserve":
                    out.append(f"{ind}{v}.reserve((size_t)n);")
                out.append(f"{ind}for (int i = 0; i < n; i++)")
                out.append(f"{ind}    {v}.push_back({self.bounded(sc, 'i')});")
            sc.arrays.append(f"{v}.data()")
            return True
        v = m.choice(vecs)
        others = [a for a in sc.arrays if a != f"{v}.data()"]
        if kind == "insert_erase":
            k = self.index(sc, "n + 1", out, ind)
            shape = m.choice(["one", "count", "range"] if others else ["one", "count"])
            if m.random() < 0.3:
                out.append(f"{ind}{v}.reserve((size_t)n + {m.choice(['1', 'n'])});")
            if shape == "one":
                out.append(f"{ind}{v}.insert({v}.begin() + {k}, {self.bounded(sc)});")
                length = "1"
            elif shape == "count":
                length = str(m.randint(0, 3))
                out.append(f"{ind}{v}.insert({v}.begin() + {k}, {length}, {self.bounded(sc)});")
            else:
                s = m.choice(others)
                o1 = self.index(sc, "n", out, ind)
                length = self.index(sc, f"n - {o1} + 1", out, ind)
                out.append(f"{ind}{v}.insert({v}.begin() + {k}, {s} + {o1}, {s} + {o1} + {length});")
            self.read_all(sc, out, ind, v, f"(int){v}.size()")
            j = self.index(sc, "n + 1", out, ind)
            out.append(f"{ind}{v}.erase({v}.begin() + {j}, {v}.begin() + {j} + {length});")
            return True
        if kind == "resize":
            shape = m.choice(["up", "down", "push", "remove_if"])
            if shape == "up":
                out.append(f"{ind}{v}.resize((size_t)n + {m.randint(1, 4)}, {self.bounded(sc)});")
                self.read_all(sc, out, ind, v, f"(int){v}.size()")
                out.append(f"{ind}{v}.resize((size_t)n);")
            elif shape == "down":
                k = self.index(sc, "n", out, ind)
                out.append(f"{ind}{v}.resize((size_t){k});")
                out.append(f"{ind}{v}.resize((size_t)n, {self.bounded(sc)});")
            elif shape == "push":
                out.append(f"{ind}{v}.push_back({self.bounded(sc)});")
                self.read_all(sc, out, ind, v, f"(int){v}.size()")
                out.append(f"{ind}{v}.pop_back();")
            else:
                out.append(f"{ind}{v}.erase(std::remove_if({v}.begin(), {v}.end(), [&](double e) {{ return e > "
                           f"{self.const()}; }}), {v}.end());")
                self.read_all(sc, out, ind, v, f"(int){v}.size()")
                out.append(f"{ind}{v}.resize((size_t)n, {self.bounded(sc)});")
            return True
        if kind == "algorithms":
            shape = m.choice(["copy", "rotate", "reverse", "fill", "transform", "partial_sum", "adjacent"])
            if shape == "copy" and others:
                s = m.choice(others)
                o1, o2 = self.index(sc, "n", out, ind), self.index(sc, "n", out, ind)
                length = self.index(sc, f"n - ({o1} > {o2} ? {o1} : {o2}) + 1", out, ind)
                out.append(f"{ind}std::copy({s} + {o1}, {s} + {o1} + {length}, {v}.begin() + {o2});")
            elif shape == "rotate":
                lo = self.index(sc, "n", out, ind)
                mid = self.index(sc, f"n - {lo} + 1", out, ind)
                out.append(f"{ind}std::rotate({v}.begin() + {lo}, {v}.begin() + {lo} + {mid}, {v}.end());")
            elif shape == "reverse":
                lo = self.index(sc, "n", out, ind)
                out.append(f"{ind}std::reverse({v}.begin() + {lo}, {v}.end());")
            elif shape == "fill":
                lo = self.index(sc, "n", out, ind)
                out.append(f"{ind}std::fill({v}.begin() + {lo}, {v}.end(), {self.bounded(sc)});")
            elif shape == "transform" and others:
                s = m.choice(others)
                out.append(f"{ind}std::transform({v}.begin(), {v}.end(), {s}, {v}.begin(), {self.lam(sc, ('p', 'q'))});")
            elif shape == "partial_sum":
                out.append(f"{ind}std::partial_sum({v}.begin(), {v}.end(), {v}.begin());")
            else:
                out.append(f"{ind}std::adjacent_difference({v}.begin(), {v}.end(), {v}.begin());")
            if m.random() < 0.5:
                self.read_all(sc, out, ind, v, "n")
            return True
        if kind == "numeric":
            s = m.choice(sc.arrays)
            if m.random() < 0.5:
                self.new_scalar(sc, out, ind, f"std::inner_product({v}.begin(), {v}.end(), {s}, 0.0)")
            else:
                self.new_scalar(sc, out, ind, f"std::accumulate({v}.begin(), {v}.end(), 0.0, "
                                              f"{self.lam(sc, ('p', 'q'))})")
            return True
        if kind == "assign_swap":
            if len(vecs) >= 2 and m.random() < 0.6:
                w = m.choice([u for u in vecs if u != v])
                out.append(f"{ind}{m.choice([f'{v} = {w};', f'std::swap({v}, {w});', f'{v}.swap({w});'])}")
            elif others:
                s = m.choice(others)
                out.append(f"{ind}{v}.assign({s}, {s} + n);")
            else:
                return False
            return True
        return False

    @property
    def text(self) -> str:
        text = super().text.replace("by tests/fuzz/gen_c.py */", "by tests/fuzz/gen_cxx.py (C++) */", 1)
        assert text.count(_C_DECLS) == 1
        return text.replace(_C_DECLS, _CXX_HEAD, 1)


def cxx_program(seed: int, features: set[str] | None = None, size: int | None = None) -> CxxProgram:
    rng = random.Random(seed * 7919 + 1)
    prog = CxxProgram(seed, features, size if size is not None else rng.randint(4, 10))
    prog.text  # noqa: B018 (generates)
    return prog


def generate_cxx(seed: int, features: set[str] | None = None, size: int | None = None) -> str:
    """The C++ program of ``--lang c++-stl`` for ``seed`` (same seed, features, size: same text)."""
    return cxx_program(seed, features, size).text
