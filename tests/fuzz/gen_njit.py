"""Random ``@numba.njit`` functions in zymase's supported subset, one module per seed.

``generate_njit(seed)`` returns the text of a Python module defining helpers and
``f(x)`` or ``f(x, a)`` (x a 1-D float64 array, a a float) returning a float, and
``make_args(p)`` giving the arguments at point p = 0 or 1. The checker (check_njit.py)
compares ``zymase.grad`` with ``zymase.jvp`` (one basis direction at a time) and with
central finite differences.

Constructs: array loops (some overwriting x in place), slices, temporaries from
np.empty / np.zeros / copies / array expressions, branches on data, while loops with
data-dependent exits, early returns, NumPy reductions (np.sum, np.dot, np.max, np.min,
np.mean), math and NumPy element functions with arguments kept in their domains, calls to
other njit functions. Values stay bounded as in gen_c.py.

The constructs of ``LATER_NJIT_FEATURES`` (2-D temporaries filled by loops, read by rows,
axis sums and ``@``; tuples returned by helpers and unpacked, tuples of slices; searches:
a ``while`` loop advancing an index until a data-dependent test fails, a loop left by
``break``; helpers writing into an output array argument or returning a new array;
more NumPy: cumsum, where, clip, reversed copies, argmax as an index, prod, norm, var,
``a @ b``, methods ``.sum()``/``.max()``) are decided by a second random stream, so that a
program that uses none of them is the same text as before they were added.

``NEWEST_NJIT_FEATURES`` (session 30), from a third stream likewise: temporaries sized by
the counter of the loop that makes them (``np.empty(m)``, ``np.zeros(m + 1)``,
``np.ones((m, 2))`` for ``m`` in ``range(1, n + 1)``: Numba's size check is a second exit
test of that loop); stencils with boundary selects (``a[i - 1] if i > 0 else a[i]``) over
the first ``n - c`` elements (trip counts from 1: the loops transforms/peel.py peels),
into a copy or in place; integer powers ``v ** i`` of the loop counter (``int_power``).
"""

from __future__ import annotations

import random

NMIN = 5  # make_args gives arrays of 5..7 elements: constant indices 0..4 are in bounds

NJIT_FEATURES = (
    "loops", "inplace", "slices", "temporaries", "branches", "while_loops", "early_return",
    "reductions", "maxmin", "calls", "scalar_arg", "array_expr",
)
LATER_NJIT_FEATURES = ("matrices", "tuples", "searches", "outputs", "numpy_more")
NEWEST_NJIT_FEATURES = ("grown", "boundary", "int_powers")
NJIT_FEATURES = NJIT_FEATURES + LATER_NJIT_FEATURES + NEWEST_NJIT_FEATURES


class NjitProgram:
    def __init__(self, seed: int, features: set[str] | None = None, size: int = 7):
        self.rng = random.Random(seed)
        self.seed = seed
        self.on = set(NJIT_FEATURES if features is None else features)
        self.size = size
        self.counter = 0
        self.helpers: list[str] = []
        self.scalar_helpers: list[str] = []
        self.array_helpers: list[str] = []
        self.scalar_arg = "scalar_arg" in self.on and self.rng.random() < 0.4
        self.later = random.Random(seed * 104729 + 23)
        self.later_helpers: dict[str, str] = {}  # kind -> name, made on first use
        self.newest = random.Random(seed * 130363 + 29)

    def fresh(self, p: str) -> str:
        self.counter += 1
        return f"{p}{self.counter}"

    def feature(self, name: str, p: float) -> bool:
        return name in self.on and self.rng.random() < p

    def const(self) -> str:
        r = self.rng
        return f"{r.choice([0.25, 0.5, 0.75, 1.5, 2.0, 0.3, 0.7, 1.1, 1.3, 0.9]) * r.choice([1, -1])}"

    def leaf(self, scalars: list[str], arrays: list[str], idx: str | None) -> str:
        r = self.rng
        kinds = (["s"] * 3 if scalars else []) + (["a"] * 3 if arrays else []) + ["c"]
        k = r.choice(kinds)
        if k == "s":
            return r.choice(scalars)
        if k == "a":
            arr = r.choice(arrays)
            if idx is not None and r.random() < 0.7:
                return f"{arr}[{idx}]"
            return f"{arr}[{r.randrange(NMIN)}]"
        return f"({self.const()})"

    def expr(self, scalars, arrays, depth=2, idx=None) -> str:
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            return self.leaf(scalars, arrays, idx)
        a = self.expr(scalars, arrays, depth - 1, idx)
        b = self.expr(scalars, arrays, depth - 1, idx)
        op = r.choice(["+", "-", "*", "/", "u", "u", "b"])
        if op in "+-*":
            return f"({a} {op} {b})"
        if op == "/":
            return f"({a} / (1.0 + {b} * {b}))"
        if op == "b":
            forms = [f"math.atan2({a}, 0.5 + {b} * {b})", f"(0.5 + {a} * {a}) ** 1.5", f"math.hypot({a}, {b})"]
            if "maxmin" in self.on:
                forms += [f"max({a}, {b})", f"min({a}, {b})"]
            return r.choice(forms)
        return self.unary(a)

    def unary(self, a: str) -> str:
        forms = [f"math.sin({a})", f"math.cos({a})", f"math.tanh({a})", f"math.atan({a})",
                 f"math.exp(0.5 * math.sin({a}))", f"math.log(1.0 + {a} * {a})", f"math.sqrt({a} * {a} + 0.25)",
                 f"math.log1p({a} * {a})", f"math.erf({a})", f"math.exp(-({a} * {a}))", f"math.expm1(0.3 * math.tanh({a}))"]
        if "maxmin" in self.on:
            forms.append(f"abs({a})")
        return self.rng.choice(forms)

    def bounded(self, scalars, arrays, idx=None) -> str:
        e = self.expr(scalars, arrays, 2, idx)
        return self.rng.choice([f"math.tanh({e})", f"math.sin({e})", f"(0.5 * math.cos({e}))"])

    def array_fn(self, a: str) -> str:
        return self.rng.choice([f"np.sin({a})", f"np.tanh({a})", f"np.cos({a})", f"np.exp(0.5 * np.sin({a}))",
                                f"np.log(1.0 + {a} * {a})", f"np.sqrt({a} * {a} + 0.25)", f"({a} * {a})"])

    def make_helpers(self):
        r = self.rng
        if not self.feature("calls", 0.7):
            return
        for _ in range(r.randint(1, 2)):
            name = self.fresh("g")
            body = f"    t = {self.expr(['a', 'b'], [], 2)}\n"
            if r.random() < 0.5:
                body += f"    if a > b:\n        t = t * {self.bounded(['a', 't'], [])}\n"
            body += f"    return t + {self.bounded(['a', 'b'], [])}\n"
            self.helpers.append(f"@njit\ndef {name}(a, b):\n{body}")
            self.scalar_helpers.append(name)
        if r.random() < 0.6:
            name = self.fresh("ga")
            self.helpers.append(
                f"@njit\ndef {name}(p):\n    s = 0.0\n    for i in range(p.shape[0]):\n"
                f"        s += {self.bounded(['s'], ['p'], 'i')}\n    return s\n")
            self.array_helpers.append(name)

    def statement(self, sc, arrs, out, ind, depth, declared):
        later = [k for k in LATER_NJIT_FEATURES if k in self.on]
        if later and self.later.random() < 0.2:
            self.later_statement(self.later.choice(later), sc, arrs, out, ind, declared)
            return
        newest = [k for k in NEWEST_NJIT_FEATURES if k in self.on]
        if newest and self.newest.random() < 0.15 and depth == 0:
            self.newest_statement(self.newest.choice(newest), sc, arrs, out, ind, declared)
            return
        r = self.rng
        kinds = ["assign", "assign", "update"]
        if "loops" in self.on:
            kinds += ["map", "reduce", "scan"]
        if "slices" in self.on:
            kinds += ["slice"]
        if "temporaries" in self.on and depth == 0:
            kinds += ["temp", "temp"]
        if "branches" in self.on and depth < 2:
            kinds += ["if"]
        if "while_loops" in self.on:
            kinds += ["while"]
        if "early_return" in self.on and depth > 0:
            kinds += ["ret"]
        if "reductions" in self.on:
            kinds += ["npred", "npred"]
        if self.scalar_helpers or self.array_helpers:
            kinds += ["call"]
        kind = r.choice(kinds)
        writable = [a for a in arrs if a != "x" or "inplace" in self.on]

        def new(value):
            name = self.fresh("t")
            out.append(f"{ind}{name} = {value}")
            sc.append(name)
            declared.append(name)

        if kind == "update" and sc:
            t = r.choice(sc)
            out.append(f"{ind}{t} = {self.const()} * {t} + {self.bounded(sc, arrs)}")
        elif kind == "map" and writable:
            a = r.choice(writable)
            out.append(f"{ind}for i in range(n):")
            out.append(f"{ind}    {a}[i] = 0.5 * {a}[i] + {self.bounded(sc, arrs, 'i')}")
        elif kind == "reduce":
            t = self.fresh("t")
            out.append(f"{ind}{t} = 0.0")
            out.append(f"{ind}for i in range(n):")
            out.append(f"{ind}    {t} += {self.expr(sc, arrs, 2, 'i')}")
            sc.append(t)
            declared.append(t)
        elif kind == "scan" and writable:
            a = r.choice(writable)
            out.append(f"{ind}for i in range(1, n):")
            out.append(f"{ind}    {a}[i] = {a}[i] * {self.const()} + 0.5 * {self.bounded(sc, [a], 'i - 1')}")
        elif kind == "slice":
            a, b = r.choice(arrs), r.choice(arrs)
            k = r.randint(1, 2)
            form = r.choice([f"np.sum({self.array_fn(f'{a}[{k}:]')} * {b}[:-{k}])",
                             f"np.dot({a}[:-{k}], {b}[{k}:])", f"np.sum({a}[::2] * {a}[::2])",
                             f"np.mean({self.array_fn(f'{a}[1:-1]')})"])
            new(form)
        elif kind == "temp":
            name = self.fresh("y")
            src = r.choice(arrs)
            how = r.choice(["empty", "zeros", "copy", "expr"] if "array_expr" in self.on else ["empty", "zeros", "copy"])
            if how == "empty":
                out.append(f"{ind}{name} = np.empty(n)")
                out.append(f"{ind}for i in range(n):")
                out.append(f"{ind}    {name}[i] = {self.bounded(sc, arrs, 'i')}")
            elif how == "zeros":
                out.append(f"{ind}{name} = np.zeros(n)")
                out.append(f"{ind}{name}[1:] = {self.const()} * {src}[:-1]")
            elif how == "copy":
                out.append(f"{ind}{name} = {src}.copy()")
            else:
                s = r.choice(sc) if sc else "1.0"
                out.append(f"{ind}{name} = {self.const()} * {src} + {self.array_fn(r.choice(arrs))} * {s}")
            arrs.append(name)
        elif kind == "if":
            out.append(f"{ind}if {self.expr(sc, arrs, 1)} > {self.const()}:")
            self.block(sc, arrs, out, ind + "    ", depth + 1, declared)
            if r.random() < 0.6:
                out.append(f"{ind}else:")
                self.block(sc, arrs, out, ind + "    ", depth + 1, declared)
        elif kind == "while":
            t = self.fresh("t")
            it = self.fresh("it")
            out.append(f"{ind}{t} = math.tanh({self.expr(sc, arrs, 1)})")
            out.append(f"{ind}{it} = 0")
            out.append(f"{ind}while {t} < {r.choice(['1.5', '2.5'])} and {it} < 8:")
            sc2 = sc + [t]
            out.append(f"{ind}    {t} += 0.4 + 0.2 * {self.bounded(sc2, arrs)}")
            out.append(f"{ind}    {it} += 1")
            sc.append(t)
            declared.append(t)
        elif kind == "ret":
            out.append(f"{ind}if {self.expr(sc, arrs, 1)} > {self.const()}:")
            out.append(f"{ind}    return {self.expr(sc, arrs, 2)}")
        elif kind == "npred":
            a = r.choice(arrs)
            forms = [f"np.sum({self.array_fn(a)})", f"np.dot({a}, {r.choice(arrs)})", f"np.mean({a})"]
            if "maxmin" in self.on:
                forms += [f"np.max({a})", f"np.min({self.array_fn(a)})"]
            new(r.choice(forms))
        elif kind == "call":
            opts = []
            if self.scalar_helpers:
                opts.append(f"{r.choice(self.scalar_helpers)}({self.expr(sc, arrs, 1)}, {self.expr(sc, arrs, 1)})")
            if self.array_helpers:
                opts.append(f"{r.choice(self.array_helpers)}({r.choice(arrs)})")
            new(r.choice(opts))
        else:
            new(self.expr(sc, arrs, 2))

    # ---- the later constructs (self.later's stream only) ----------------------
    def lconst(self) -> str:
        r = self.later
        return f"{r.choice([0.25, 0.5, 0.75, 1.5, 0.3, 0.7, 1.1, 0.9]) * r.choice([1, -1])}"

    def lexpr(self, scalars, arrays, idx=None) -> str:
        """A bounded expression drawn from the later stream (the main stream untouched)."""
        r = self.later
        terms = []
        for _ in range(r.randint(1, 2)):
            k = r.choice((["s"] if scalars else []) + (["a"] if arrays else []) + ["c"])
            if k == "s":
                terms.append(r.choice(scalars))
            elif k == "a":
                a = r.choice(arrays)
                terms.append(f"{a}[{idx}]" if idx is not None and r.random() < 0.7 else f"{a}[{r.randrange(NMIN)}]")
            else:
                terms.append(f"({self.lconst()})")
        e = f" {r.choice(['+', '-', '*'])} ".join(terms)
        return r.choice([f"math.tanh({e})", f"math.sin({e})", f"(0.5 * math.cos({e}))", f"math.atan({e})"])

    def later_helper(self, kind: str) -> str:
        if kind in self.later_helpers:
            return self.later_helpers[kind]
        name = self.fresh({"pair": "gt", "out": "go", "new": "gn"}[kind])
        if kind == "pair":  # a tuple of two floats
            body = f"    u = {self.lexpr(['a', 'b'], [])}\n    return a * u, b + {self.lexpr(['a', 'u'], [])}\n"
            self.helpers.append(f"@njit\ndef {name}(a, b):\n{body}")
        elif kind == "out":  # writes its result into an argument
            self.helpers.append(
                f"@njit\ndef {name}(p, out):\n    for i in range(p.shape[0]):\n"
                f"        out[i] = {self.lconst()} * p[i] + {self.lexpr([], ['p'], 'i')}\n")
        else:  # returns a new array
            self.helpers.append(f"@njit\ndef {name}(p):\n    return {self.lconst()} * np.tanh(p) + 0.5 * p * p\n")
        self.later_helpers[kind] = name
        return name

    def later_statement(self, kind, sc, arrs, out, ind, declared):
        r = self.later

        def new(value):
            name = self.fresh("t")
            out.append(f"{ind}{name} = {value}")
            sc.append(name)
            declared.append(name)

        a, b = r.choice(arrs), r.choice(arrs)
        if kind == "matrices":
            m = self.fresh("M")
            out.append(f"{ind}{m} = np.empty((2, n))")
            out.append(f"{ind}for i in range(n):")
            out.append(f"{ind}    {m}[0, i] = {self.lexpr(sc, arrs, 'i')}")
            out.append(f"{ind}    {m}[1, i] = {self.lconst()} * {a}[i] + {m}[0, i] * {b}[i]")
            use = r.choice(["rows", "axis0", "matvec", "transpose"])
            if use == "rows":
                new(f"np.sum({m}[0, :] * {m}[1, :])")
            elif use == "axis0":
                y = self.fresh("y")
                out.append(f"{ind}{y} = np.sum({m}, axis=0)")
                arrs.append(y)
            elif use == "matvec":
                new(f"np.sum(({m} @ {a}) ** 2)")
            else:
                new(f"np.sum({m}.T[:, 1] * {m}[0])")
        elif kind == "tuples":
            if r.random() < 0.6:
                g = self.later_helper("pair")
                u, v = self.fresh("t"), self.fresh("t")
                out.append(f"{ind}{u}, {v} = {g}({self.lexpr(sc, arrs)}, {self.lexpr(sc, arrs)})")
                sc += [u, v]
                declared += [u, v]
            else:
                p, q = self.fresh("p"), self.fresh("q")
                k = r.randint(1, 2)
                out.append(f"{ind}{p}, {q} = {a}[{k}:], {b}[:-{k}]")
                new(f"np.dot({p}, {q}) + {p}[0] * {q}[-1]")
        elif kind == "searches":
            k = self.fresh("k")
            if r.random() < 0.5:
                out.append(f"{ind}{k} = 0")
                out.append(f"{ind}while {k} < n - 1 and {a}[{k}] < {self.lconst()}:")
                out.append(f"{ind}    {k} += 1")
                new(f"{a}[{k}] * {self.lexpr(sc, arrs)}")
            else:
                t = self.fresh("t")
                out.append(f"{ind}{t} = 0.0")
                out.append(f"{ind}for i in range(n):")
                out.append(f"{ind}    {t} += {self.lexpr(sc, arrs, 'i')}")
                out.append(f"{ind}    if {t} > {r.choice(['0.8', '1.2', '-0.3'])}:")
                out.append(f"{ind}        break")
                sc.append(t)
                declared.append(t)
        elif kind == "outputs":
            y = self.fresh("y")
            if r.random() < 0.5:
                out.append(f"{ind}{y} = np.empty(n)")
                out.append(f"{ind}{self.later_helper('out')}({a}, {y})")
            else:
                out.append(f"{ind}{y} = {self.later_helper('new')}({a})")
            arrs.append(y)
        else:  # numpy_more
            arrays = [f"np.cumsum(np.tanh({a})) * 0.3", f"np.where({a} > {self.lconst()}, {a}, {self.lconst()} * {b})",
                      f"np.clip({a}, -0.5, 0.8)", f"{a}[::-1].copy()", f"np.abs({a}) * {b}"]
            scalars = [f"{a}[np.argmax({b})]", f"np.prod(np.tanh({a}))", f"np.linalg.norm({a})", f"np.var({a})",
                       f"{a} @ {b}", f"{a}.sum()", f"{a}.max() * {b}.min()"]
            if r.random() < 0.5:
                y = self.fresh("y")
                out.append(f"{ind}{y} = {r.choice(arrays)}")
                arrs.append(y)
            else:
                new(r.choice(scalars))

    # ---- the newest constructs (self.newest's stream only; at the function's top level) ----
    def newest_statement(self, kind, sc, arrs, out, ind, declared):
        r = self.newest

        def c() -> str:
            return f"{r.choice([0.25, 0.5, 0.75, 0.3, 0.7, 0.9]) * r.choice([1, -1])}"

        def term(idx: str) -> str:  # a bounded value of the arrays at idx and a scalar
            a = r.choice(arrs)
            s = r.choice(sc) if sc else "1.0"
            return r.choice([f"math.tanh({a}[{idx}] * {s})", f"math.sin({a}[{idx}] + {c()})",
                             f"(0.5 * math.cos({a}[{idx}] - {s}))"])

        t = self.fresh("t")
        if kind == "grown":
            y = self.fresh("y")
            alloc, elem = r.choice([("np.empty(m)", "{y}[i]"), ("np.zeros(m + 1)", "{y}[i + 1]"),
                                    ("np.ones((m, 2))", "{y}[i, 0]")])
            out.append(f"{ind}{t} = 0.0")
            out.append(f"{ind}for m in range(1, n + 1):")
            out.append(f"{ind}    {y} = {alloc}")
            out.append(f"{ind}    for i in range(m):")
            out.append(f"{ind}        {elem.format(y=y)} = {term('i')}")
            out.append(f"{ind}    {t} += {c()} * {r.choice([f'np.sum({y} * {y})', f'np.sum(np.sin({y}))', f'np.max({y})'])}")
            out.append(f"{ind}{t} = {t} / n")
        elif kind == "boundary":
            a = r.choice(arrs)
            writable = [b for b in arrs if b != "x" or "inplace" in self.on]
            k = self.fresh("k")
            out.append(f"{ind}{k} = n - {r.randint(0, NMIN - 1)}")
            if writable and r.random() < 0.4:
                y = r.choice(writable)  # in place: iteration i reads the new y[i - 1]
            else:
                y = self.fresh("y")
                out.append(f"{ind}{y} = {a}.copy()")
                arrs.append(y)
            left = r.choice([f"{a}[i - 1] if i > 0 else {a}[i]", f"{a}[i - 1] if i >= 1 else {a}[0]"])
            right = r.choice([f"{a}[i + 1] if i < {k} - 1 else {a}[i]", f"{a}[i + 1] if i + 1 < {k} else {a}[{k} - 1]"])
            out.append(f"{ind}for i in range({k}):")
            out.append(f"{ind}    {y}[i] = 0.5 * {y}[i] + 0.25 * math.tanh(({left}) - {c()} * ({right}))"
                       f" + (0.1 if i == 0 else {c()}) * {term('i')}")
            out.append(f"{ind}{t} = np.sum({y}[:{k}]) / n")
        else:  # int_powers
            a = r.choice(arrs)
            out.append(f"{ind}{t} = 0.0")
            out.append(f"{ind}for i in range(n):")
            base = r.choice([f"(0.5 + 0.4 * math.tanh({a}[i]))", f"(1.0 + 0.2 * math.sin({a}[i]))"])
            power = r.choice(["i", "(i % 3)", "(n - i)", "(i - 2)"])
            out.append(f"{ind}    {t} += {c()} * {base} ** {power}")
            out.append(f"{ind}{t} = {t} / n")
        sc.append(t)
        declared.append(t)

    def block(self, sc, arrs, out, ind, depth, declared):
        # Python has no block scope: names assigned in a branch are not used after it
        # (they may be unbound on the other path), but they reach the result through acc
        inner_sc, inner_declared = list(sc), []
        for _ in range(self.rng.randint(1, 3)):
            self.statement(inner_sc, list(arrs), out, ind, depth, inner_declared)
        if inner_declared:
            out.append(f"{ind}acc += {' + '.join(inner_declared)}")

    def function(self) -> str:
        params = "x, a" if self.scalar_arg else "x"
        sc = ["a"] if self.scalar_arg else []
        arrs = ["x"]
        declared: list[str] = []
        out = ["    n = x.shape[0]", "    acc = 0.0"]
        t = self.fresh("t")
        out.append(f"    {t} = x[0] * {self.const()} + x[{NMIN - 1}]")
        sc.append(t)
        declared.append(t)
        for _ in range(self.size):
            self.statement(sc, arrs, out, "    ", 0, declared)
        for name in self.scalar_helpers + self.array_helpers:
            if not any(f"{name}(" in ln for ln in out):
                call = (f"{name}({self.expr(sc, arrs, 1)}, {self.expr(sc, arrs, 1)})" if name in self.scalar_helpers
                        else f"{name}({self.rng.choice(arrs)})")
                t = self.fresh("t")
                out.append(f"    {t} = {call}")
                declared.append(t)
        terms = ["acc"] + declared + [f"{self.const()} * {a}[{self.rng.randrange(NMIN)}]" for a in arrs]
        out.append(f"    r = {' + '.join(terms)}")
        out.append("    return r")
        return f"@njit\ndef f({params}):\n" + "\n".join(out) + "\n"

    @property
    def text(self) -> str:
        self.make_helpers()
        body = self.function()
        n = self.rng.randint(NMIN, NMIN + 2)
        pts = []
        for _ in range(2):
            pts.append([round(self.rng.choice([1, -1]) * self.rng.uniform(0.3, 1.3), 6) for _ in range(n + 1)])
        args = (f"    return (np.array({pts[0][:n]!r}), {pts[0][n]!r}) if p == 0 else "
                f"(np.array({pts[1][:n]!r}), {pts[1][n]!r})\n") if self.scalar_arg else (
                f"    return (np.array({pts[0][:n]!r}),) if p == 0 else (np.array({pts[1][:n]!r}),)\n")
        return (f"# fuzz: generated from seed {self.seed} by tests/fuzz/gen_njit.py\n"
                "import math\n\nimport numpy as np\nfrom numba import njit\n\n# ---- functions\n"
                + "\n\n".join(self.helpers + [body])
                + "\n\n# ---- arguments\ndef make_args(p):\n" + args)


def generate_njit(seed: int, features: set[str] | None = None, size: int | None = None) -> str:
    rng = random.Random(seed * 7919 + 2)
    return NjitProgram(seed, features, size if size is not None else rng.randint(3, 8)).text
