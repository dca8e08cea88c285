"""Random C programs in zymase's supported subset, one per seed, with a driver `main`.

``generate_c(seed)`` returns the text of a C file defining ``double f(double *x, int n)``
(or ``double f(double *x, double a, int n)``) plus helpers, and a ``main`` that prints, at
two points, the primal, the reverse-mode gradient (``__enzyme_autodiff`` with an
``enzyme_dup`` shadow), one forward-mode derivative per basis direction
(``__enzyme_fwddiff``) and central finite differences with two step sizes. The Python
side (check_c.py) compares them; the program itself checks nothing.

Generated code has no undefined behaviour by construction: every index is a loop index
below ``n`` (``n <= NMAX``), a constant below ``NMIN`` or ``pick(v, n)``; every array is
filled right after it is created; libm arguments are kept in their domains
(``log(1 + u*u)``, ``sqrt(u*u + eps)``, ...); values stay bounded (state fed back through
loops passes through bounded functions), so no overflow and no float->int conversion out of
range. The feature switches in ``C_FEATURES`` let a caller leave a construct out.

The constructs of ``LATER_FEATURES`` (views: structs of a pointer and a length returned
by value, chosen by a ternary, kept in an array of views; pointers chosen by if/else;
reversed walks with negative offsets; loops left by ``break``; calls through function
pointers) are decided by a second random stream, so that a program that uses none of
them is the same text as before they were added. Those of ``NEWEST_FEATURES`` (2-D stack
arrays filled by nested loops and read through a row pointer chosen by data; structs of
arrays, filled in place and passed by pointer to a helper; searches: a ``while`` loop
advancing an index while a data-dependent test holds, the index then read) by a third.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field

NMIN = 5  # main passes n = argc + 4 >= 5, so constant indices 0..4 are in bounds
NMAX = 8  # stack arrays have NMAX elements; main never passes more

# Constructs the generator can emit; a sample may exclude some (see test_fuzz_sample.py).
C_FEATURES = (
    "loops", "trip_loops", "while_loops", "malloc", "stack_arrays", "vla", "inplace",
    "structs", "calls", "recursion", "switch", "early_return", "pointer_select",
    "memcpy", "memset", "libm", "minmax", "scalar_arg", "pick_index",
    "views", "pointer_phi", "negative_offsets", "early_break", "function_pointers",
)
# added later: drawn from CProgram.later, a stream of their own (see the module docstring)
LATER_FEATURES = ("views", "pointer_phi", "negative_offsets", "early_break", "function_pointers")
# added in session 29: drawn from CProgram.newest, a third stream (so that the programs using
# the LATER_FEATURES are unchanged too)
NEWEST_FEATURES = ("matrices", "struct_of_arrays", "searches")
C_FEATURES = C_FEATURES + NEWEST_FEATURES


@dataclass
class _Scope:
    scalars: list[str]
    arrays: list[str]  # every array here has n valid, initialised elements
    heap: list[str] = field(default_factory=list)  # malloc'd, freed before any return
    declared: list[str] = field(default_factory=list)  # scalars declared in this block
    has_n: bool = True  # n (the array length) is in scope


class CProgram:
    """Builds one program; ``text`` is the whole C file."""

    def __init__(self, seed: int, features: set[str] | None = None, size: int = 8):
        self.rng = random.Random(seed)
        self.seed = seed
        self.on = set(C_FEATURES if features is None else features)
        self.size = size
        self.helpers: list[str] = []
        self.scalar_helpers: list[str] = []  # name(double, double)
        self.array_helpers: list[str] = []  # name(const double *, int)
        self.rec_helpers: list[str] = []  # name(double, int)
        self.uses_struct = False
        self.uses_view = False
        self.view_helper = ""  # the name of view_of, made on first use
        self.later = random.Random(seed * 104729 + 17)
        self.newest = random.Random(seed * 130363 + 29)
        self.soa_helper = ""  # the name of the struct-of-arrays helper, made on first use
        self.counter = 0
        self.scalar_arg = "scalar_arg" in self.on and self.rng.random() < 0.4

    # ---- names and small pieces -------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self) -> str:
        r = self.rng
        return f"{r.choice([0.25, 0.5, 0.75, 1.5, 2.0, 0.3, 0.7, 1.1, 1.3, 0.9]) * r.choice([1, -1]):.2f}"

    def feature(self, name: str, p: float) -> bool:
        return name in self.on and self.rng.random() < p

    def leaf(self, sc: _Scope, idx: str | None) -> str:
        r = self.rng
        choices = []
        if sc.scalars:
            choices += ["s"] * 3
        if sc.arrays:
            choices += ["a"] * 3
        choices.append("c")
        kind = r.choice(choices)
        if kind == "s":
            return r.choice(sc.scalars)
        if kind == "a":
            arr = r.choice(sc.arrays)
            if idx is not None and r.random() < 0.7:
                return f"{arr}[{idx}]"
            if sc.has_n and self.feature("pick_index", 0.25) and sc.scalars:
                return f"{arr}[pick({r.choice(sc.scalars)}, n)]"
            return f"{arr}[{r.randrange(NMIN)}]"
        return self.const()

    def expr(self, sc: _Scope, depth: int = 2, idx: str | None = None) -> str:
        """An expression whose value stays bounded when its leaves are bounded."""
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            return self.leaf(sc, idx)
        a = self.expr(sc, depth - 1, idx)
        b = self.expr(sc, depth - 1, idx)
        ops = ["add", "sub", "mul", "div", "un", "un", "bin2"]
        op = r.choice(ops)
        if op == "add":
            return f"({a} + {b})"
        if op == "sub":
            return f"({a} - {b})"
        if op == "mul":
            return f"({a} * {b})"
        if op == "div":
            return f"({a} / (1.0 + {b} * {b}))"
        if op == "bin2" and self.feature("minmax", 0.5):
            fn = r.choice(["fmax", "fmin", "hypot"])
            return f"{fn}({a}, {b})"
        if op == "bin2" and "libm" in self.on:
            return r.choice([f"atan2({a}, 0.5 + {b} * {b})", f"pow(0.5 + {a} * {a}, {r.choice(['1.5', '0.5', '2.0'])})"])
        return self.unary(a)

    def unary(self, a: str) -> str:
        r = self.rng
        if "libm" not in self.on:
            return f"({a} * {a} / (1.0 + {a} * {a}))"
        forms = [
            f"sin({a})", f"cos({a})", f"tanh({a})", f"atan({a})", f"exp(0.5 * sin({a}))",
            f"log(1.0 + {a} * {a})", f"sqrt({a} * {a} + 0.25)", f"log1p({a} * {a})", f"erf({a})",
            f"cbrt({a} * {a} + 1.0)", f"exp(-({a} * {a}))", f"expm1(0.3 * tanh({a}))",
        ]
        if "minmax" in self.on:
            forms.append(f"fabs({a})")
        return r.choice(forms)

    def bounded(self, sc: _Scope, idx: str | None = None) -> str:
        """An expression in [-2, 2]: what loops feed back into state."""
        e = self.expr(sc, 2, idx)
        return self.rng.choice([f"tanh({e})", f"sin({e})", f"({e} / (1.0 + {e} * {e}))", f"(0.5 * cos({e}))"]) \
            if "libm" in self.on else f"({e} / (1.0 + {e} * {e}))"

    # ---- helpers ---------------------------------------------------------------
    def make_helpers(self) -> None:
        r = self.rng
        if self.feature("calls", 0.7):
            for _ in range(r.randint(1, 2)):
                name = self.fresh("h")
                sc = _Scope(["a", "b"], [], has_n=False)
                attr = "__attribute__((noinline)) " if r.random() < 0.4 else ""
                body = f"    double t = {self.expr(sc, 2)};\n"
                if r.random() < 0.5:
                    body += f"    if (a > b) t = t * {self.bounded(_Scope(['a', 't'], [], has_n=False))};\n"
                body += f"    return t + {self.bounded(sc)};\n"
                self.helpers.append(f"{attr}static double {name}(double a, double b) {{\n{body}}}\n")
                self.scalar_helpers.append(name)
            if r.random() < 0.6:
                name = self.fresh("hs")
                sc = _Scope(["s"], ["p"], has_n=False)
                self.helpers.append(
                    f"static double {name}(const double *p, int m) {{\n"
                    f"    double s = 0.0;\n"
                    f"    for (int i = 0; i < m; i++)\n"
                    f"        s += {self.bounded(sc, 'i')};\n"
                    f"    return s;\n}}\n")
                self.array_helpers.append(name)
        if self.feature("recursion", 0.35):
            name = self.fresh("rec")
            sc = _Scope(["v"], [], has_n=False)
            self.helpers.append(
                f"static double {name}(double v, int d) {{\n"
                f"    if (d <= 0)\n"
                f"        return {self.expr(sc, 1)};\n"
                f"    return 0.5 * {name}({self.bounded(sc)}, d - 1) + {self.bounded(sc)};\n}}\n")
            self.rec_helpers.append(name)

    # ---- statements ------------------------------------------------------------
    def through(self, sc, out, ind, base: str, length: str, write: bool) -> None:
        """A loop over base[0..length) that updates it in place (write) or sums it into a
        new scalar: the psel, view and pointer-choice statements' use of their pointer."""
        if write:
            out.append(f"{ind}for (int i = 0; i < {length}; i++)")
            out.append(f"{ind}    {base}[i] = 0.5 * {base}[i] + {self.bounded(sc, 'i')};")
        else:
            t = self.new_scalar(sc, out, ind, "0.0")
            out.append(f"{ind}for (int i = 0; i < {length}; i++)")
            out.append(f"{ind}    {t} += {base}[i] * {self.bounded(sc, 'i')};")

    def new_scalar(self, sc: _Scope, out: list[str], ind: str, value: str) -> str:
        name = self.fresh("t")
        out.append(f"{ind}double {name} = {value};")
        sc.scalars.append(name)
        sc.declared.append(name)
        return name

    def free_all(self, sc: _Scope, out: list[str], ind: str) -> None:
        for h in sc.heap:
            out.append(f"{ind}free({h});")

    def new_array(self, sc: _Scope, out: list[str], ind: str) -> None:
        r = self.rng
        kinds = [k for k, feat in (("malloc", "malloc"), ("stack", "stack_arrays"), ("vla", "vla")) if feat in self.on]
        if not kinds:
            return
        kind = r.choice(kinds)
        name = self.fresh({"malloc": "m", "stack": "w", "vla": "v"}[kind])
        if kind == "malloc":
            out.append(f"{ind}double *{name} = malloc((size_t)n * sizeof(double));")
        elif kind == "stack":
            out.append(f"{ind}double {name}[NMAX];")
        else:
            out.append(f"{ind}double {name}[n];")
        src = [a for a in sc.arrays]
        if src and self.feature("memcpy", 0.35):
            out.append(f"{ind}memcpy({name}, {r.choice(src)}, (size_t)n * sizeof(double));")
        elif self.feature("memset", 0.2):
            out.append(f"{ind}memset({name}, 0, (size_t)n * sizeof(double));")
        else:
            out.append(f"{ind}for (int i = 0; i < n; i++)")
            out.append(f"{ind}    {name}[i] = {self.bounded(sc, 'i')};")
        sc.arrays.append(name)
        if kind == "malloc":
            sc.heap.append(name)

    def statement(self, sc: _Scope, out: list[str], ind: str, depth: int) -> None:
        r = self.rng
        newest = [f for f in NEWEST_FEATURES if f in self.on]
        if newest and self.newest.random() < 0.15 and self.newest_statement(self.newest.choice(newest), sc, out, ind):
            return
        later = [f for f in LATER_FEATURES if f in self.on]
        if later and self.later.random() < 0.2 and self.later_statement(self.later.choice(later), sc, out, ind):
            return
        kinds = ["assign", "assign", "update"]
        if "loops" in self.on:
            kinds += ["map", "reduce", "reduce", "scan"]
        if "trip_loops" in self.on:
            kinds.append("trip")
        if "while_loops" in self.on:
            kinds.append("while")
        if depth < 2:
            kinds += ["if"]
            if "switch" in self.on:
                kinds.append("switch")
        if any(f in self.on for f in ("malloc", "stack_arrays", "vla")) and depth == 0:
            kinds += ["array"]
        if "early_return" in self.on and depth > 0:
            kinds.append("ret")
        if "pointer_select" in self.on and len(sc.arrays) >= 2:
            kinds.append("psel")
        if "structs" in self.on:
            kinds.append("struct")
        if self.scalar_helpers or self.array_helpers or self.rec_helpers:
            kinds += ["call", "call"]
        if "memcpy" in self.on and len(sc.arrays) >= 2:
            kinds.append("copy")
        kind = r.choice(kinds)
        writable = [a for a in sc.arrays if a != "x" or "inplace" in self.on]

        if kind == "assign":
            self.new_scalar(sc, out, ind, self.expr(sc, 2))
        elif kind == "update" and sc.scalars:
            t = r.choice(sc.scalars)
            out.append(f"{ind}{t} = {self.const()} * {t} + {self.bounded(sc)};")
        elif kind == "map" and writable:
            a = r.choice(writable)
            out.append(f"{ind}for (int i = 0; i < n; i++)")
            out.append(f"{ind}    {a}[i] = 0.5 * {a}[i] + {self.bounded(sc, 'i')};")
        elif kind == "reduce":
            t = self.new_scalar(sc, out, ind, "0.0")
            out.append(f"{ind}for (int i = 0; i < n; i++)")
            e = self.expr(sc, 2, "i")
            if re.search(rf"\b{t}\b", e):
                # the sum reads itself: unbounded, it grows like t -= t**4 (seed 100008
                # overflowed); bounded, the sum grows by at most 0.5 an iteration
                e = f"({e} / (1.0 + {e} * {e}))"
            out.append(f"{ind}    {t} += {e};")
        elif kind == "scan" and writable:
            a = r.choice(writable)
            out.append(f"{ind}for (int i = 1; i < n; i++)")
            out.append(f"{ind}    {a}[i] = {a}[i] * {self.const()} + 0.5 * {self.bounded(_Scope(sc.scalars, [a], has_n=sc.has_n), 'i - 1')};")
        elif kind == "trip" and sc.scalars:
            t = r.choice(sc.scalars)
            m = self.fresh("k")
            out.append(f"{ind}int {m} = pick({self.expr(sc, 1)}, {r.randint(2, 5)});")
            out.append(f"{ind}for (int j = 0; j <= {m}; j++)")
            out.append(f"{ind}    {t} = 0.5 * {t} + {self.bounded(sc)};")
        elif kind == "while":
            t = self.new_scalar(sc, out, ind, f"tanh({self.expr(sc, 1)})")
            it = self.fresh("it")
            out.append(f"{ind}int {it} = 0;")
            out.append(f"{ind}while ({t} < {r.choice(['1.5', '2.5', '3.0'])} && {it} < 8) {{")
            out.append(f"{ind}    {t} += 0.4 + 0.2 * {self.bounded(sc)};")
            out.append(f"{ind}    {it}++;")
            out.append(f"{ind}}}")
        elif kind == "if":
            out.append(f"{ind}if ({self.expr(sc, 1)} > {self.const()}) {{")
            self.block(sc, out, ind + "    ", depth + 1)
            if r.random() < 0.6:
                out.append(f"{ind}}} else {{")
                self.block(sc, out, ind + "    ", depth + 1)
            out.append(f"{ind}}}")
        elif kind == "switch" and sc.scalars:
            t = r.choice(sc.scalars)
            out.append(f"{ind}switch (pick({self.expr(sc, 1)}, 4)) {{")
            for case in ("case 0:", "case 1:", "case 2:", "default:"):
                out.append(f"{ind}{case}")
                out.append(f"{ind}    {t} = {self.const()} * {t} + {self.bounded(sc)};")
                if case == "default:" or r.random() < 0.7:
                    out.append(f"{ind}    break;")
            out.append(f"{ind}}}")
        elif kind == "array":
            self.new_array(sc, out, ind)
        elif kind == "ret":
            out.append(f"{ind}if ({self.expr(sc, 1)} > {self.const()}) {{")
            value = self.expr(sc, 2)
            if sc.heap:
                v = self.fresh("r")
                out.append(f"{ind}    double {v} = {value};")
                self.free_all(sc, out, ind + "    ")
                value = v
            out.append(f"{ind}    return {value};")
            out.append(f"{ind}}}")
        elif kind == "psel" and sc.scalars:
            a, b = r.sample(sc.arrays, 2)
            p = self.fresh("p")
            out.append(f"{ind}double *{p} = ({r.choice(sc.scalars)} > {self.expr(sc, 1)}) ? {a} : {b};")
            self.through(sc, out, ind, p, "n", r.random() < 0.5 and a in writable and b in writable)
        elif kind == "struct":
            self.uses_struct = True
            if r.random() < 0.5 or not sc.arrays:
                s = self.fresh("st")
                out.append(f"{ind}struct pair {s} = {{ {self.expr(sc, 1)}, {self.bounded(sc)}, {r.randint(0, 3)} }};")
                out.append(f"{ind}{s}.a = {s}.a * {s}.b + {s}.k;")
                self.new_scalar(sc, out, ind, f"{s}.a - {self.const()} * {s}.b")
            else:
                s = self.fresh("ps")
                src = r.choice(sc.arrays)
                out.append(f"{ind}struct pair {s}[NMAX];")
                out.append(f"{ind}for (int i = 0; i < n; i++) {{")
                out.append(f"{ind}    {s}[i].a = {src}[i];")
                out.append(f"{ind}    {s}[i].b = {self.bounded(sc, 'i')};")
                out.append(f"{ind}    {s}[i].k = i % 3;")
                out.append(f"{ind}}}")
                t = self.new_scalar(sc, out, ind, "0.0")
                out.append(f"{ind}for (int i = 0; i < n; i++)")
                out.append(f"{ind}    {t} += {s}[i].a * {s}[i].b + {s}[i].k * {s}[i].a;")
        elif kind == "call":
            opts = []
            if self.scalar_helpers:
                h = r.choice(self.scalar_helpers)
                opts.append(f"{h}({self.expr(sc, 1)}, {self.expr(sc, 1)})")
            if self.array_helpers and sc.arrays:
                opts.append(f"{r.choice(self.array_helpers)}({r.choice(sc.arrays)}, n)")
            if self.rec_helpers:
                opts.append(f"{r.choice(self.rec_helpers)}({self.expr(sc, 1)}, {r.randint(1, 4)})")
            self.new_scalar(sc, out, ind, r.choice(opts))
        elif kind == "copy":
            dst = [a for a in writable if a != "x"] or writable
            if dst:
                d = r.choice(dst)
                s = r.choice([a for a in sc.arrays if a != d])
                out.append(f"{ind}memcpy({d}, {s}, (size_t)n * sizeof(double));")
        else:
            self.new_scalar(sc, out, ind, self.expr(sc, 2))

    def view_of(self) -> str:
        """The helper that makes a view of an array (noinline or not, by the later stream)."""
        if not self.view_helper:
            self.uses_view = True
            self.view_helper = self.fresh("view_of")
            attr = "__attribute__((noinline)) " if self.later.random() < 0.5 else ""
            self.helpers.append(f"{attr}static struct view {self.view_helper}(double *p, int m) {{\n"
                                f"    struct view v = {{p, m}};\n    return v;\n}}\n")
        return self.view_helper

    def later_statement(self, kind: str, sc: _Scope, out: list[str], ind: str) -> bool:
        """One of the LATER_FEATURES constructs; False when the scope cannot hold it."""
        r, lr = self.rng, self.later
        writable = [a for a in sc.arrays if a != "x" or "inplace" in self.on]
        if kind == "views" and sc.has_n:
            v = self.fresh("vw")
            shape = lr.choice(["returned", "ternary", "array"] if len(sc.arrays) >= 2 and sc.scalars else ["returned"])
            pool = writable if (lr.random() < 0.5 and len(writable) >= (2 if shape != "returned" else 1)) else sc.arrays
            if len(pool) < (2 if shape != "returned" else 1):
                return False
            mk = self.view_of()
            if shape == "returned":
                out.append(f"{ind}struct view {v} = {mk}({lr.choice(pool)}, n);")
            else:
                a, b = lr.sample(pool, 2)
                if shape == "ternary":
                    out.append(f"{ind}struct view {v} = ({r.choice(sc.scalars)} > {self.expr(sc, 1)}) ? "
                               f"{mk}({a}, n) : {mk}({b}, n);")
                else:
                    views = self.fresh("vws")
                    out.append(f"{ind}struct view {views}[2] = {{{mk}({a}, n), {mk}({b}, n)}};")
                    out.append(f"{ind}struct view {v} = {views}[pick({r.choice(sc.scalars)}, 2)];")
            self.through(sc, out, ind, f"{v}.data", f"{v}.n", pool is writable and lr.random() < 0.6)
            return True
        if kind == "pointer_phi" and len(sc.arrays) >= 2 and sc.scalars:
            pool = writable if lr.random() < 0.5 and len(writable) >= 2 else sc.arrays
            a, b = lr.sample(pool, 2)
            p = self.fresh("q")
            out.append(f"{ind}double *{p};")
            out.append(f"{ind}if ({r.choice(sc.scalars)} > {self.expr(sc, 1)})")
            out.append(f"{ind}    {p} = {a};")
            out.append(f"{ind}else")
            out.append(f"{ind}    {p} = {b};")
            self.through(sc, out, ind, p, "n", pool is writable and lr.random() < 0.5)
            return True
        if kind == "negative_offsets" and sc.arrays and sc.has_n:
            # a pointer to the last element walked backwards: q[-i] for i in [0, n)
            a = lr.choice(writable if writable and lr.random() < 0.5 else sc.arrays)
            q = self.fresh("e")
            out.append(f"{ind}double *{q} = {a} + (n - 1);")
            if a in writable and lr.random() < 0.5:
                out.append(f"{ind}for (int i = 1; i < n; i++)")
                out.append(f"{ind}    {q}[-i] = 0.5 * {q}[-i] + 0.25 * {q}[1 - i] * {self.bounded(sc, 'i')};")
            else:
                t = self.new_scalar(sc, out, ind, "0.0")
                out.append(f"{ind}for (int i = 0; i < n; i++)")
                out.append(f"{ind}    {t} = 0.5 * {t} + {q}[-i] * {self.bounded(sc, 'i')};")
            return True
        if kind == "early_break" and sc.has_n:
            t = self.new_scalar(sc, out, ind, "0.0")
            out.append(f"{ind}for (int i = 0; i < n; i++) {{")
            out.append(f"{ind}    if ({self.expr(sc, 1, 'i')} > {lr.choice(['0.8', '1.2', '1.6'])})")
            out.append(f"{ind}        break;")
            out.append(f"{ind}    {t} += {self.bounded(sc, 'i')};")
            out.append(f"{ind}}}")
            return True
        if kind == "function_pointers" and len(self.scalar_helpers) >= 2 and sc.scalars:
            g, h = lr.sample(self.scalar_helpers, 2)
            fp = self.fresh("fp")
            out.append(f"{ind}double (*{fp})(double, double) = ({r.choice(sc.scalars)} > {self.expr(sc, 1)}) ? {g} : {h};")
            self.new_scalar(sc, out, ind, f"{fp}({self.expr(sc, 1)}, {self.expr(sc, 1)})")
            return True
        return False

    def newest_statement(self, kind: str, sc: _Scope, out: list[str], ind: str) -> bool:
        """One of the NEWEST_FEATURES constructs; False when the scope cannot hold it."""
        r, nr = self.rng, self.newest
        if not sc.has_n or not sc.arrays:
            return False
        a, b = nr.choice(sc.arrays), nr.choice(sc.arrays)
        if kind == "matrices":
            m, row = self.fresh("m"), self.fresh("row")
            out.append(f"{ind}double {m}[2][NMAX];")
            out.append(f"{ind}for (int i = 0; i < n; i++) {{")
            out.append(f"{ind}    {m}[0][i] = {self.bounded(sc, 'i')};")
            out.append(f"{ind}    {m}[1][i] = {self.const()} * {a}[i] + 0.5 * {m}[0][i] * {b}[i];")
            out.append(f"{ind}}}")
            if sc.scalars and nr.random() < 0.6:
                out.append(f"{ind}double *{row} = {m}[pick({r.choice(sc.scalars)}, 2)];")
            else:
                out.append(f"{ind}double *{row} = {m}[{nr.randrange(2)}];")
            if nr.random() < 0.5:  # a column walk: both rows at each i
                t = self.new_scalar(sc, out, ind, "0.0")
                out.append(f"{ind}for (int i = 0; i < n; i++)")
                out.append(f"{ind}    {t} += {m}[0][i] * {m}[1][n - 1 - i];")
            self.through(sc, out, ind, row, "n", nr.random() < 0.4)
            sc.arrays.append(row)  # n valid elements, read and written by later statements
            return True
        if kind == "struct_of_arrays":
            v = self.fresh("soa")
            out.append(f"{ind}struct soa {v};")
            out.append(f"{ind}for (int i = 0; i < n; i++) {{")
            out.append(f"{ind}    {v}.u[i] = {self.bounded(sc, 'i')};")
            out.append(f"{ind}    {v}.w[i] = {self.const()} * {a}[i];")
            out.append(f"{ind}}}")
            out.append(f"{ind}{v}.scale = {self.bounded(sc)};")
            if nr.random() < 0.5:
                out.append(f"{ind}for (int i = 1; i < n; i++)")
                out.append(f"{ind}    {v}.w[i] += 0.5 * {v}.u[i - 1] * {v}.scale;")
            self.new_scalar(sc, out, ind, f"{self.soa_of()}(&{v}, n)")
            sc.arrays.append(f"{v}.u")
            return True
        if kind == "searches":
            k = self.fresh("k")
            out.append(f"{ind}int {k} = 0;")
            out.append(f"{ind}while ({k} < n - 1 && {a}[{k}] < {self.const()})")
            out.append(f"{ind}    {k}++;")
            self.new_scalar(sc, out, ind, f"{a}[{k}] * {self.bounded(sc)} + {b}[n - 1 - {k}]")
            return True
        return False

    def soa_of(self) -> str:
        if not self.soa_helper:
            self.soa_helper = self.fresh("soa_sum")
            attr = "__attribute__((noinline)) " if self.newest.random() < 0.5 else ""
            self.helpers.insert(0, _SOA)
            self.helpers.append(f"{attr}static double {self.soa_helper}(const struct soa *s, int m) {{\n"
                                f"    double t = 0.0;\n    for (int i = 0; i < m; i++)\n"
                                f"        t += s->u[i] * s->w[i] * s->scale;\n    return t;\n}}\n")
        return self.soa_helper

    def block(self, sc: _Scope, out: list[str], ind: str, depth: int) -> None:
        # a nested block may read the outer scope and assign to outer scalars but its own
        # declarations and arrays end with it (heap ones are freed at its end)
        inner = _Scope(list(sc.scalars), list(sc.arrays), list(sc.heap), has_n=sc.has_n)
        for _ in range(self.rng.randint(1, 3)):
            self.statement(inner, out, ind, depth)
        # every value computed reaches the result (and no variable is set but unused)
        if inner.declared:
            out.append(f"{ind}acc += {' + '.join(inner.declared)};")
        for h in inner.heap[len(sc.heap):]:
            out.append(f"{ind}free({h});")

    def function(self) -> str:
        params = "double *x, double a, int n" if self.scalar_arg else "double *x, int n"
        sc = _Scope(["a"] if self.scalar_arg else [], ["x"])
        out: list[str] = ["    double acc = 0.0;"]
        # the first scalar reads the input, so that every program depends on x
        self.new_scalar(sc, out, "    ", f"x[0] * {self.const()} + x[{NMIN - 1}]")
        for _ in range(self.size):
            self.statement(sc, out, "    ", 0)
        # every helper is called at least once (no unused static functions)
        for name in self.scalar_helpers + self.array_helpers + self.rec_helpers:
            if not re.search(rf"\b{name}\(", "\n".join(out)):
                if name in self.scalar_helpers:
                    call = f"{name}({self.expr(sc, 1)}, {self.expr(sc, 1)})"
                elif name in self.array_helpers:
                    call = f"{name}({self.rng.choice(sc.arrays)}, n)"
                else:
                    call = f"{name}({self.expr(sc, 1)}, {self.rng.randint(1, 4)})"
                self.new_scalar(sc, out, "    ", call)
        terms = ["acc"] + sc.declared + [f"{self.const()} * {a}[{self.rng.randrange(NMIN)}]" for a in sc.arrays]
        out.append(f"    double result = {' + '.join(terms)};")
        self.free_all(sc, out, "    ")
        out.append("    return result;")
        return f"double f({params}) {{\n" + "\n".join(out) + "\n}\n"

    @property
    def text(self) -> str:
        if not hasattr(self, "_text"):
            self.make_helpers()
            body = self.function()
            self._text = _render(self.seed, self.helpers, body, self.uses_struct, self.scalar_arg, self.rng,
                                 self.uses_view)
        return self._text


_PRELUDE = """\
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;

#define NMAX {nmax}

/* an index in [0, m) from a bounded value; no out-of-range conversion */
__attribute__((unused)) static int pick(double v, int m) {{
    double u = fabs(v);
    if (!(u < 1000.0))
        u = 0.0;
    return (int)(u * 3.0) % m;
}}
"""

_STRUCT = "struct pair {\n    double a;\n    double b;\n    int k;\n};\n"
_VIEW = "struct view {\n    double *data;\n    int n;\n};\n"
_SOA = "struct soa {\n    double u[NMAX];\n    double w[NMAX];\n    double scale;\n};\n"

# The driver prints, for points p = 0, 1: "primal p v", "rev p i v" (the gradient; index n
# is the scalar argument a), "fwd p i v" (the derivative along e_i), "fd p k i v"
# (central differences, step 1e-4 (k=0) or 1e-6 (k=1), relative to max(1, |x_i|)).
_MAIN = """\
#define NARG (NMAX + 1)
static const double X0[2][NARG] = {{
    {{{p0}}},
    {{{p1}}},
}};

static double call_f(double *x, const double *v, int n) {{
    for (int i = 0; i < n; i++)
        x[i] = v[i];
    return f({call_args});
}}

int main(int argc, char **argv) {{
    (void)argv;
    int n = argc + 4;
    int nv = n + {has_a};
    double x[NMAX], dx[NMAX], tx[NMAX], v[NARG];
    for (int p = 0; p < 2; p++) {{
        printf("primal %d %.17g\\n", p, call_f(x, X0[p], n));
        for (int i = 0; i < NARG; i++)
            v[i] = X0[p][i];
        for (int i = 0; i < n; i++) {{
            x[i] = v[i];
            dx[i] = 0.0;
        }}
        {rev_call}
        for (int i = 0; i < n; i++)
            printf("rev %d %d %.17g\\n", p, i, dx[i]);
        {rev_a}
        for (int j = 0; j < nv; j++) {{
            for (int i = 0; i < n; i++) {{
                x[i] = v[i];
                tx[i] = i == j ? 1.0 : 0.0;
            }}
            double ta = j == n ? 1.0 : 0.0;
            (void)ta;
            double d = {fwd_call};
            printf("fwd %d %d %.17g\\n", p, j, d);
        }}
        for (int k = 0; k < 2; k++) {{
            for (int j = 0; j < nv; j++) {{
                double w[NARG];
                for (int i = 0; i < NARG; i++)
                    w[i] = v[i];
                double h = (k == 0 ? 1e-4 : 1e-6) * (fabs(v[j]) > 1.0 ? fabs(v[j]) : 1.0);
                double up = v[j] + h, down = v[j] - h;
                w[j] = up;
                double fp = call_f(x, w, n);
                w[j] = down;
                double fm = call_f(x, w, n);
                printf("fd %d %d %d %.17g\\n", p, k, j, (fp - fm) / (up - down));
            }}
        }}
    }}
    return 0;
}}
"""


def _render(seed: int, helpers: list[str], body: str, uses_struct: bool, scalar_arg: bool, rng: random.Random,
            uses_view: bool = False) -> str:
    points = []
    for _ in range(2):
        # inputs in [0.3, 1.3] with random signs, none near 0 (log/sqrt forms are safe anyway)
        points.append(", ".join(f"{rng.choice([1, -1]) * rng.uniform(0.3, 1.3):.6f}" for _ in range(NMAX + 1)))
    if scalar_arg:
        call_args, has_a = "x, v[n], n", 1
        rev_call = "double da = __enzyme_autodiff((void *)f, enzyme_dup, x, dx, v[n], n);"
        rev_a = 'printf("rev %d %d %.17g\\n", p, n, da);'
        fwd_call = "__enzyme_fwddiff((void *)f, enzyme_dup, x, tx, v[n], ta, n)"
    else:
        call_args, has_a = "x, n", 0
        rev_call = "__enzyme_autodiff((void *)f, enzyme_dup, x, dx, n);"
        rev_a = ""
        fwd_call = "__enzyme_fwddiff((void *)f, enzyme_dup, x, tx, n)"
    head = f"/* fuzz: generated from seed {seed} by tests/fuzz/gen_c.py */\n" + _PRELUDE.format(nmax=NMAX)
    parts = [head]
    if uses_struct:
        parts.append(_STRUCT)
    if uses_view:
        parts.append(_VIEW)
    parts += helpers
    parts.append("/* ---- the function differentiated ---- */\n" + body)
    parts.append("/* ---- driver ---- */\n" + _MAIN.format(
        p0=points[0], p1=points[1], call_args=call_args, has_a=has_a, rev_call=rev_call, rev_a=rev_a,
        fwd_call=fwd_call))
    return "\n".join(parts)


# Vector forward mode (``--lang c-width``): at each point, WIDTH directions by one
# ``enzyme_width`` call (``enzyme_dupv``: the directions' rows ``sizeof`` a row apart) against
# as many scalar ``__enzyme_fwddiff`` calls, printed "lane p k width-value scalar-value". The
# scalar argument a, if any, is constant there (``enzyme_const``).
WIDTH = 3

_WIDTH_LANES = """\
        {{
            typedef struct {{ double d[{width}]; }} lanes_t;
            extern lanes_t __enzyme_fwddiff_lanes(void *, ...);
            extern int enzyme_width, enzyme_dupv;
            double dirs[{width}][NMAX], rows[{width}][NMAX], want[{width}];
            for (int k = 0; k < {width}; k++)
                for (int i = 0; i < NMAX; i++)
                    dirs[k][i] = cos(1.0 + k + 0.7 * i);
            for (int k = 0; k < {width}; k++) {{
                for (int i = 0; i < n; i++) {{
                    x[i] = v[i];
                    tx[i] = dirs[k][i];
                }}
                want[k] = __enzyme_fwddiff((void *)f, enzyme_dup, x, tx{a}, n);
            }}
            for (int i = 0; i < n; i++)
                x[i] = v[i];
            memcpy(rows, dirs, sizeof rows);
            lanes_t got = __enzyme_fwddiff_lanes((void *)f, enzyme_width, {width}, enzyme_dupv, (long)sizeof(rows[0]),
                                                 x, rows{a}, n);
            for (int k = 0; k < {width}; k++)
                printf("lane %d %d %.17g %.17g\\n", p, k, got.d[k], want[k]);
        }}
"""

_POINT_LOOP_END = "    }\n    return 0;\n}\n"


def with_width_lanes(text: str, width: int = WIDTH) -> str:
    """``text`` (a program of :func:`generate_c`) whose driver also prints, per point,
    ``width`` directional derivatives by one vector forward-mode call and by scalar calls."""
    scalar_arg = "enzyme_dup, x, tx, v[n], ta, n)" in text
    block = _WIDTH_LANES.format(width=width, a=", enzyme_const, v[n]" if scalar_arg else "")
    assert text.count(_POINT_LOOP_END) == 1, "the driver's point loop"
    return text.replace(_POINT_LOOP_END, block + _POINT_LOOP_END)


def generate_c(seed: int, features: set[str] | None = None, size: int | None = None) -> str:
    """The C program for ``seed`` (same seed, features and size: same text)."""
    rng = random.Random(seed * 7919 + 1)
    return CProgram(seed, features, size if size is not None else rng.randint(4, 10)).text


# Second order (``--lang c-nested``): the first derivative along W2 as a C function, by
# reverse mode (``d1_rev``: w . grad f, the gradient from ``__enzyme_autodiff``) and by
# forward mode (``d1_fwd``: ``__enzyme_fwddiff`` of f along w), the same number. The
# driver then differentiates ``d1_rev`` instead of f: its "rev" lines are reverse over
# reverse, its "fwd" lines forward over reverse (e_j . H w), its "fd" lines central
# differences of the first derivative; and per direction j "lane" lines compare
# reverse over forward (``__enzyme_autodiff`` of d1_fwd), forward over forward and the
# Hessian-vector product of ``grad_into`` (forward mode over a function that writes the
# gradient into an ``enzyme_dupnoneed`` buffer) with forward over reverse. x is copied
# before the inner call: f may write into it.
_NESTED_FUNCTIONS = """\
/* ---- second order (--lang c-nested) ---- */
extern int enzyme_dupnoneed;
static const double W2[NMAX + 1] = {{{w}}};

/* w . grad f, the gradient by reverse mode */
static double d1_rev(double *x{pa}, int n) {{
    double xc[NMAX], gr[NMAX];
    for (int i = 0; i < n; i++) {{
        xc[i] = x[i];
        gr[i] = 0.0;
    }}
    {da}__enzyme_autodiff((void *)f, enzyme_dup, xc, gr{a}, n);
    double s = {s0};
    for (int i = 0; i < n; i++)
        s += W2[i] * gr[i];
    return s;
}}

/* the same number by forward mode along w */
static double d1_fwd(double *x{pa}, int n) {{
    double xc[NMAX], tx[NMAX];
    for (int i = 0; i < n; i++) {{
        xc[i] = x[i];
        tx[i] = W2[i];
    }}
    return __enzyme_fwddiff((void *)f, enzyme_dup, xc, tx{ta}, n);
}}

/* the gradient written into g (and ga: d/da) */
static void grad_into(double *x, double *g{pga}, int n) {{
    double xc[NMAX];
    for (int i = 0; i < n; i++) {{
        xc[i] = x[i];
        g[i] = 0.0;
    }}
    {ga}__enzyme_autodiff((void *)f, enzyme_dup, xc, g{a}, n);
}}
"""

_NESTED_LANES = """\
        {{
            double dx1[NMAX], tx1[NMAX], g1[NMAX], hv[NMAX], ga1 = 0.0, hva = 0.0;
            (void)ga1;
            (void)hva;
            for (int i = 0; i < n; i++) {{
                x[i] = v[i];
                tx1[i] = W2[i];
            }}
            __enzyme_fwddiff((void *)grad_into, enzyme_dup, x, tx1, enzyme_dupnoneed, g1, hv{hvp_a}, n);
            for (int i = 0; i < n; i++)
                x[i] = v[i];
            double by_fwd = d1_fwd(x{va}, n);
            for (int i = 0; i < n; i++)
                x[i] = v[i];
            printf("lane %d 0 %.17g %.17g first-derivative-by-forward-vs-by-reverse\\n", p, by_fwd, d1_rev(x{va}, n));
            for (int i = 0; i < n; i++) {{
                x[i] = v[i];
                dx1[i] = 0.0;
            }}
            {rf_a}__enzyme_autodiff((void *)d1_fwd, enzyme_dup, x, dx1{va}, n);
            for (int j = 0; j < nv; j++) {{
                for (int i = 0; i < n; i++) {{
                    x[i] = v[i];
                    tx[i] = i == j ? 1.0 : 0.0;
                }}
                double ta = j == n ? 1.0 : 0.0;
                (void)ta;
                double want = __enzyme_fwddiff((void *)d1_rev, enzyme_dup, x, tx{ta_arg}, n);
                for (int i = 0; i < n; i++)
                    x[i] = v[i];
                double ff = __enzyme_fwddiff((void *)d1_fwd, enzyme_dup, x, tx{ta_arg}, n);
                printf("lane %d %d %.17g %.17g reverse-over-forward-vs-forward-over-reverse\\n", p, 1 + j,
                       j < n ? dx1[j] : {rf_da}, want);
                printf("lane %d %d %.17g %.17g forward-over-forward-vs-forward-over-reverse\\n", p, 1 + NARG + j,
                       ff, want);
                printf("lane %d %d %.17g %.17g hvp-of-grad_into-dupnoneed-vs-forward-over-reverse\\n", p,
                       1 + 2 * NARG + j, j < n ? hv[j] : hva, want);
            }}
        }}
"""

_DRIVER_MARK = "/* ---- driver ---- */\n"


def with_nested(text: str) -> str:
    """``text`` (a program of :func:`generate_c`) whose driver differentiates the first
    derivative of f (see _NESTED_FUNCTIONS) instead of f."""
    scalar_arg = "enzyme_dup, x, tx, v[n], ta, n)" in text
    w = ", ".join(f"{math.cos(1.0 + 0.7 * i):.6f}" for i in range(NMAX + 1))
    if scalar_arg:
        funcs = _NESTED_FUNCTIONS.format(w=w, pa=", double a", a=", a", da="double da = ", s0="W2[n] * da",
                                         ta=", a, W2[n]", pga=", double a, double *ga", ga="*ga = ")
        lanes = _NESTED_LANES.format(hvp_a=", v[n], W2[n], enzyme_dupnoneed, &ga1, &hva", va=", v[n]",
                                     rf_a="double rf_da = ", rf_da="rf_da", ta_arg=", v[n], ta")
    else:
        funcs = _NESTED_FUNCTIONS.format(w=w, pa="", a="", da="", s0="0.0", ta="", pga="", ga="")
        lanes = _NESTED_LANES.format(hvp_a="", va="", rf_a="", rf_da="0.0", ta_arg="")
    assert text.count(_DRIVER_MARK) == 1 and text.count(_POINT_LOOP_END) == 1
    head, driver = text.split(_DRIVER_MARK)
    driver = driver.replace("(void *)f,", "(void *)d1_rev,").replace("return f(", "return d1_rev(")
    driver = driver.replace(_POINT_LOOP_END, lanes + _POINT_LOOP_END)
    return head + funcs + "\n" + _DRIVER_MARK + driver
