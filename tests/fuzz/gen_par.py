"""Random parallel programs (issue 27: OpenMP regions and Numba prange loops), one per seed.

``generate_omp(seed)`` returns a C file like gen_c.py's (the same driver ``main``, which
prints the primal, the reverse gradient, one forward derivative per direction and central
finite differences) whose ``double f(double *x, int n)`` runs its array work in
``#pragma omp parallel for`` loops: maps, stencils reading neighbours, ``reduction(+:s)``
loops, loops with a serial loop nested inside, strided (2-D row) loops; static schedules
with and without a chunk size; regions inlined in ``f`` and in helpers whose array
parameters are ``restrict`` or not; a helper map called with the same array as input and
output (aliasing); regions inside a time loop; arrays the caller overwrites after a region.
The same text built without ``-fopenmp`` is the serial program (the pragmas are ignored).

``generate_prange(seed)`` returns a module like gen_njit.py's whose ``f`` is
``@njit(parallel=True)`` with ``prange`` loops (maps, stencils, reductions, rows of a 2-D
array, a prange inside a time loop); ``SERIAL_SWITCH`` turns it into the serial function.

Only race-free primals: an iteration writes only its own elements (``out[i]``, or the
row ``out[2*i], out[2*i+1]``) of arrays that the loop does not otherwise read, or sums into
a reduction variable; every other array it reads is read-only in that loop. An array is
passed as both input and output only to a map, which reads just the element it writes.
Values stay bounded as in gen_c.py (the expressions come from its ``CProgram``).
"""

from __future__ import annotations

import random

from .gen_c import _MAIN, _PRELUDE, CProgram, _Scope

NMAX = 100  # stack arrays' size; the repeated gradients use n = N_REPEAT
N_OMP = 12  # main passes n = argc + 11 = 12: with 4 threads, 3 iterations each
N_REPEAT = 96  # more elements per thread make a race's collisions likelier
NMIN = 5  # constant indices below 5 are in bounds

SCHEDULES = ("", " schedule(static)", " schedule(static, 1)", " schedule(static, 2)", " schedule(static, 3)")

OMP_FEATURES = ("map", "stencil", "reduction", "nested", "strided", "helpers", "restrict", "alias",
                "time_loop", "overwrite", "inplace", "chunks", "update", "scalar_args")
PRANGE_FEATURES = ("map", "stencil", "reduction", "rows", "time_loop", "overwrite", "single_assignment",
                   "arguments")


class _Exprs(CProgram):
    """gen_c's bounded expressions over a list of atoms (array elements, scalars)."""

    def __init__(self, rng: random.Random, python: bool = False):
        super().__init__(0, {"libm"} if python else {"libm", "minmax"})
        self.rng = rng
        self.python = python

    def over(self, atoms: list[str], bounded: bool = True) -> str:
        """A bounded expression over ``atoms`` that reads the first one at least (the
        loops pass an element indexed by the loop index first)."""
        sc = _Scope(list(atoms), [], has_n=False)
        e = self.bounded(sc) if bounded else self.expr(sc, 2)
        if atoms and atoms[0] not in e:
            e = f"({e} + 0.25 * {atoms[0]})"
        if self.python:  # C's libm names that differ in Python's math module
            for c, py in (("tanh(", "math.tanh("), ("sin(", "math.sin("), ("cos(", "math.cos("),
                          ("atan(", "math.atan("), ("exp(", "math.exp("), ("log(", "math.log("),
                          ("sqrt(", "math.sqrt("), ("log1p(", "math.log1p("), ("erf(", "math.erf("),
                          ("expm1(", "math.expm1("), ("atan2(", "math.atan2("), ("pow(", "math.pow(")):
                e = _replace_call(e, c, py)
            e = e.replace("cbrt(", "_cbrt(")
        return e


def _replace_call(text: str, name: str, repl: str) -> str:
    # replace calls of `name` that are not part of a longer name (sin( inside asin(, math.sin()
    out, i = [], 0
    while True:
        j = text.find(name, i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        prev = text[j - 1] if j else " "
        out.append(text[i:j])
        out.append(name if (prev.isalnum() or prev in "._") else repl)
        i = j + len(name)


# ------------------------------------------------------------------ C with OpenMP
# A race in a reverse sweep (a plain add where two threads meet) loses an update only when
# the threads touch the element at the same moment: the driver repeats the gradient and
# prints "revdev p d", the largest relative deviation of a repeat from the first gradient
# (atomic adds in another order differ by rounding only), with N_REPEAT elements.
REPEATS = 60
_REPEAT = f"""
        double dev = 0.0, dx1[NMAX];
        for (int rep = 0; rep < {REPEATS}; rep++) {{
            double dx2[NMAX];
            for (int i = 0; i < {N_REPEAT}; i++) {{
                x[i] = X0[p][i];
                dx2[i] = 0.0;
            }}
            __enzyme_autodiff((void *)f, enzyme_dup, x, dx2, {N_REPEAT});
            for (int i = 0; i < {N_REPEAT}; i++) {{
                if (rep == 0)
                    dx1[i] = dx2[i];
                dev = fmax(dev, fabs(dx2[i] - dx1[i]) / (1.0 + fabs(dx1[i])));
            }}
        }}
        printf("revdev %d %.17g\\n", p, dev);"""
class OmpProgram:
    def __init__(self, seed: int, features: set[str] | None = None, size: int = 5):
        self.rng = random.Random(seed)
        self.seed = seed
        self.on = set(OMP_FEATURES if features is None else features)
        self.size = size
        self.ex = _Exprs(self.rng)
        self.helpers: list[str] = []
        self.counter = 0

    def fresh(self, p: str) -> str:
        self.counter += 1
        return f"{p}{self.counter}"

    def feature(self, name: str, p: float) -> bool:
        return name in self.on and self.rng.random() < p

    def sched(self, reduction: str = "") -> str:
        s = self.rng.choice(SCHEDULES if "chunks" in self.on else SCHEDULES[:2])
        return f"#pragma omp parallel for{reduction}{s}"

    def body(self, kind: str, ins: list[str], out: str | None, scalars: list[str], ind: str,
             red: str | None = None) -> list[str]:
        """The parallel loop of a region of ``kind`` reading ``ins``, writing ``out`` (or
        summing into ``red``)."""
        r = self.rng
        lines: list[str] = []
        own = [f"{out}[i]"] if out and self.feature("update", 0.4) else []  # reads its own element
        if kind == "map":
            atoms = [f"{a}[i]" for a in ins] * 2 + scalars + own
            lines += [self.sched(), f"{ind}for (int i = 0; i < n; i++)",
                      f"{ind}    {out}[i] = {self.ex.over(atoms)};"]
        elif kind == "stencil":
            atoms = [f"{a}[i {d}]" for a in ins for d in ("- 1", "+ 0", "+ 1")] + scalars
            lo, hi = r.choice([("1", "n - 1"), ("1", "n - 1"), ("0", "n - 2")])
            if lo == "0":
                atoms = [f"{a}[i {d}]" for a in ins for d in ("+ 0", "+ 1", "+ 2")] + scalars
            atoms += own
            lines += [self.sched(), f"{ind}for (int i = {lo}; i < {hi}; i++)",
                      f"{ind}    {out}[i] = {self.ex.over(atoms)};"]
        elif kind == "reduction":
            atoms = [f"{a}[i]" for a in ins] * 2 + scalars
            lines += [self.sched(f" reduction(+:{red})"), f"{ind}for (int i = 0; i < n; i++)",
                      f"{ind}    {red} += {self.ex.over(atoms, bounded=r.random() < 0.5)};"]
        elif kind == "nested":
            t = self.fresh("q")
            atoms = [f"{a}[i]" for a in ins] + [f"{a}[j]" for a in ins] + scalars
            lines += [self.sched(), f"{ind}for (int i = 0; i < n; i++) {{",
                      f"{ind}    double {t} = 0.0;",
                      f"{ind}    for (int j = 0; j < n; j++)",
                      f"{ind}        {t} += {self.ex.over(atoms)};",
                      f"{ind}    {out}[i] = 0.1 * {t};",
                      f"{ind}}}"]
        else:  # strided: rows of two elements, out[2i] and out[2i+1] from the row of the inputs
            atoms = [f"{a}[2 * i]" for a in ins] + [f"{a}[2 * i + 1]" for a in ins] + scalars
            lines += [self.sched(), f"{ind}for (int i = 0; i < n / 2; i++) {{",
                      f"{ind}    {out}[2 * i] = {self.ex.over(atoms)};",
                      f"{ind}    {out}[2 * i + 1] = {self.ex.over(atoms)};",
                      f"{ind}}}"]
        return lines

    def kinds(self) -> list[str]:
        return [k for k in ("map", "stencil", "nested", "strided") if k in self.on] or ["map"]

    def region(self, arrays: list[str], writable: list[str], scalars: list[str], out_lines: list[str],
               ind: str, acc: list[str], helper_ok: bool = True) -> str | None:
        """One parallel region in ``f``, inline or through a helper; returns the array it
        wrote (None for a reduction)."""
        r = self.rng
        if "reduction" in self.on and r.random() < 0.3:
            ins = r.sample(arrays, min(len(arrays), r.randint(1, 2)))
            if helper_ok and self.feature("helpers", 0.5):
                name = self.fresh("rr")
                q = " restrict" if self.feature("restrict", 0.5) else ""
                params = ", ".join(f"const double *{q.strip()} p{k}".replace("  ", " ") for k in range(len(ins)))
                body = self.body("reduction", [f"p{k}" for k in range(len(ins))], None, [], "    ", red="s")
                self.helpers.append(f"static double {name}({params}, int n) {{\n    double s = 0.0;\n"
                                    + "\n".join(body) + "\n    return s;\n}\n")
                t = self.fresh("t")
                out_lines.append(f"{ind}double {t} = {name}({', '.join(ins)}, n);")
            else:
                t = self.fresh("t")
                out_lines.append(f"{ind}double {t} = 0.0;")
                out_lines += self.body("reduction", ins, None, scalars, ind, red=t)
            acc.append(t)
            if not ind.startswith("        "):  # a reduction's result read by later regions
                scalars.append(f"(0.1 * {t})")
            return None
        if not writable:
            return None
        kind = r.choice(self.kinds())
        out = r.choice(writable)
        ins = [a for a in arrays if a != out]
        if not ins:
            return None
        ins = r.sample(ins, min(len(ins), r.randint(1, 2)))
        if helper_ok and self.feature("helpers", 0.5):
            name = self.fresh("r")
            alias = kind == "map" and self.feature("alias", 0.35)
            q = " restrict" if (not alias and self.feature("restrict", 0.5)) else ""
            params = [f"const double *{q.strip()} p{k}".replace("  ", " ") for k in range(len(ins))]
            params.append(f"double *{q.strip()} o".replace("  ", " "))
            # a scalar argument the region reads (shared, or private to each thread)
            by_value = scalars and self.feature("scalar_args", 0.4)
            if by_value:
                params.append("double c")
            body = self.body(kind, [f"p{k}" for k in range(len(ins))], "o", ["c"] if by_value else [], "    ")
            self.helpers.append(f"static void {name}({', '.join(params)}, int n) {{\n" + "\n".join(body) + "\n}\n")
            args = list(ins)
            if alias:  # the same array as an input and the output: a map reads only o[i]
                args[0] = out
            args.append(out)
            if by_value:
                args.append(r.choice(scalars))
            out_lines.append(f"{ind}{name}({', '.join(args)}, n);")
        else:
            out_lines += self.body(kind, ins, out, scalars, ind)
        return out

    def function(self) -> str:
        r = self.rng
        lines = ["    double acc = 0.0;"]
        scalars: list[str] = []
        acc: list[str] = []
        t0 = self.fresh("t")
        lines.append(f"    double {t0} = x[0] * 0.75 + x[{NMIN - 1}];")
        scalars.append(t0)
        acc.append(t0)
        arrays = ["x"]
        heap = []
        for _ in range(r.randint(2, 3)):  # temporaries, filled from x
            if r.random() < 0.5:
                a = self.fresh("m")
                lines.append(f"    double *{a} = malloc((size_t)n * sizeof(double));")
                heap.append(a)
            else:
                a = self.fresh("w")
                lines.append(f"    double {a}[NMAX];")
            lines.append("    for (int i = 0; i < n; i++)")
            lines.append(f"        {a}[i] = {self.ex.over(['x[i]', 'x[i]', t0])};")
            arrays.append(a)
        writable = [a for a in arrays if a != "x" or "inplace" in self.on]
        written: list[str] = []
        for _ in range(self.size):
            roll = r.random()
            if roll < 0.15 and self.feature("time_loop", 0.9):
                steps = r.randint(2, 4)
                lines.append(f"    for (int step = 0; step < {steps}; step++) {{")
                sums: list[str] = []  # reductions inside the loop are summed into acc there
                for _ in range(r.randint(1, 2)):
                    w = self.region(arrays, writable, scalars, lines, "        ", sums)
                    if w:
                        written.append(w)
                lines += [f"        acc += {t};" for t in sums]
                lines.append("    }")
            elif roll < 0.3 and written and self.feature("overwrite", 0.9):
                # the caller overwrites (part of) a region's output after it
                a = r.choice(written)
                if r.random() < 0.5:
                    lines.append("    for (int i = 0; i < n; i++)")
                    lines.append(f"        {a}[i] = 0.5 * {a}[i] + {self.ex.over([f'{a}[i]', *scalars])};")
                else:
                    lines.append(f"    {a}[{r.randrange(NMIN)}] = {self.ex.over([*scalars, f'{a}[0]'])};")
            elif roll < 0.4:
                t = self.fresh("t")
                src = r.choice(arrays)
                lines.append(f"    double {t} = {self.ex.over([*scalars, f'{src}[{r.randrange(NMIN)}]'])};")
                scalars.append(t)
                acc.append(t)
            else:
                w = self.region(arrays, writable, scalars, lines, "    ", acc)
                if w:
                    written.append(w)
        for a in arrays:
            lines.append("    for (int i = 0; i < n; i++)")
            sq = f" * {a}[i]" if r.random() < 0.4 else ""
            lines.append(f"        acc += {self.ex.const()} * {a}[i]{sq};")
        terms = ["acc"] + acc
        lines.append(f"    double result = {' + '.join(terms)};")
        for h in heap:
            lines.append(f"    free({h});")
        lines.append("    return result;")
        return "double f(double *x, int n) {\n" + "\n".join(lines) + "\n}\n"

    @property
    def text(self) -> str:
        body = self.function()
        rng = self.rng
        points = [", ".join(f"{rng.choice([1, -1]) * rng.uniform(0.3, 1.3):.6f}" for _ in range(NMAX + 1))
                  for _ in range(2)]
        head = (f"/* fuzz: generated from seed {self.seed} by tests/fuzz/gen_par.py (OpenMP) */\n"
                + _PRELUDE.format(nmax=NMAX))
        main = _MAIN.format(p0=points[0], p1=points[1], call_args="x, n", has_a=0,
                            rev_call="__enzyme_autodiff((void *)f, enzyme_dup, x, dx, n);" + _REPEAT, rev_a="",
                            fwd_call="__enzyme_fwddiff((void *)f, enzyme_dup, x, tx, n)")
        main = main.replace("int n = argc + 4;", f"int n = argc + {N_OMP - 1};")
        return "\n".join([head, *self.helpers, "/* ---- the function differentiated ---- */\n" + body,
                          "/* ---- driver ---- */\n" + main])


def generate_omp(seed: int, features: set[str] | None = None, size: int | None = None) -> str:
    """The OpenMP C program for ``seed`` (build without -fopenmp for the serial one)."""
    rng = random.Random(seed * 7919 + 3)
    return OmpProgram(seed, features, size if size is not None else rng.randint(3, 6)).text


# ------------------------------------------------------------------ njit with prange
N_PRANGE = 12
ROWS, COLS = 4, 3
SERIAL_SWITCH = ("@njit(parallel=True)", "@njit(parallel=False)")


def serial_prange(text: str) -> str:
    """The serial twin of a generated prange module (prange runs as range)."""
    return text.replace(*SERIAL_SWITCH)


class PrangeProgram:
    def __init__(self, seed: int, features: set[str] | None = None, size: int = 4):
        self.rng = random.Random(seed)
        self.seed = seed
        self.on = set(PRANGE_FEATURES if features is None else features)
        self.size = size
        self.ex = _Exprs(self.rng, python=True)
        self.counter = 0
        self.rows = "rows" in self.on and self.rng.random() < 0.5
        # every loop writes a new array and no array is overwritten: the parfors' reverse
        # sweeps can recompute them in parallel (otherwise the serial copy's derivative)
        self.single_assignment = "single_assignment" in self.on and self.rng.random() < 0.5
        # the work arrays are arguments (passed zeroed) rather than allocated in f: loops
        # read and write argument arrays, which the reverse sweep recomputes in parallel
        # when nothing overwrites them (session 26). Drawn from a generator of its own so
        # that the programs of other seeds and feature sets stay as they were
        self.arguments = "arguments" in self.on and random.Random(seed * 104729 + 11).random() < 0.5
        self.array_params: list[str] = []

    def fresh(self, p: str) -> str:
        self.counter += 1
        return f"{p}{self.counter}"

    def loop(self, arrays: list[str], writable: list[str], scalars: list[str], out: list[str], ind: str,
             acc: list[str]) -> str | None:
        r = self.rng
        kinds = [k for k in ("map", "stencil") if k in self.on] or ["map"]
        if "reduction" in self.on and r.random() < 0.3:
            t = self.fresh("s")
            ins = r.sample(arrays, min(len(arrays), r.randint(1, 2)))
            out.append(f"{ind}{t} = 0.0")
            out.append(f"{ind}for i in prange(n):")
            out.append(f"{ind}    {t} += {self.ex.over([f'{a}[i]' for a in ins] * 2 + scalars)}")
            acc.append(t)
            return None
        kind = r.choice(kinds)
        if self.single_assignment:  # a new array for every loop: nothing is overwritten
            dst = self.fresh("d")
            out.append(f"{ind}{dst} = np.zeros(n)")
        else:
            dst = r.choice(writable)
        ins = [a for a in arrays if a != dst]
        ins = r.sample(ins, min(len(ins), r.randint(1, 2)))
        if kind == "map":
            out.append(f"{ind}for i in prange(n):")
            out.append(f"{ind}    {dst}[i] = {self.ex.over([f'{a}[i]' for a in ins] * 2 + scalars)}")
        else:
            atoms = [f"{a}[i{d}]" for a in ins for d in (" - 1", "", " + 1")] + scalars
            out.append(f"{ind}for i in prange(1, n - 1):")
            out.append(f"{ind}    {dst}[i] = {self.ex.over(atoms)}")
        if self.single_assignment:
            arrays.append(dst)
        return dst

    def function(self) -> str:
        r = self.rng
        params = "x, y" if self.rows else "x"
        lines = ["    n = x.shape[0]", "    acc = 0.0", f"    t0 = x[0] * 0.75 + x[{NMIN - 1}]"]
        scalars, acc = ["t0"], []
        arrays = ["x"]
        for _ in range(r.randint(1, 2)):
            a = self.fresh("m")
            if self.arguments:
                self.array_params.append(a)
            else:
                lines.append(f"    {a} = np.empty(n)")
            lines.append("    for i in range(n):")
            lines.append(f"        {a}[i] = {self.ex.over(['x[i]', 'x[i]', 't0'])}")
            arrays.append(a)
        writable = arrays[1:]
        written: list[str] = []
        if self.rows:  # rows of a 2-D argument: a prange over rows, a loop over columns inside
            o = self.fresh("m")
            lines.append(f"    {o} = np.empty(n)")
            lines.append("    for i in range(n):")
            lines.append(f"        {o}[i] = 0.5 * x[i]")
            lines.append(f"    for i in prange({ROWS}):")
            lines.append("        q = 0.0")
            lines.append(f"        for j in range({COLS}):")
            lines.append(f"            q += {self.ex.over(['y[i, j]', 'y[i, j]', 'x[j]'])}")
            lines.append(f"        {o}[i] = q")
            arrays.append(o)
            written.append(o)
        for _ in range(self.size):
            roll = r.random()
            if roll < 0.2 and "time_loop" in self.on and not self.single_assignment:
                lines.append(f"    for step in range({r.randint(2, 4)}):")
                w = self.loop(arrays, writable, scalars, lines, "        ", acc)
                if w:
                    written.append(w)
            elif roll < 0.35 and written and "overwrite" in self.on and not self.single_assignment:
                a = r.choice(written)
                lines.append(f"    {a}[{r.randrange(NMIN)}] = {self.ex.over([*scalars, f'{a}[1]'])}")
            else:
                w = self.loop(arrays, writable, scalars, lines, "    ", acc)
                if w:
                    written.append(w)
        for a in arrays:
            lines.append("    for i in range(n):")
            lines.append(f"        acc += {self.ex.const()} * {a}[i]")
        lines.append(f"    return {' + '.join(['acc'] + acc)}")
        params = ", ".join([params, *self.array_params])
        return f"{SERIAL_SWITCH[0]}\ndef f({params}):\n" + "\n".join(lines) + "\n"

    @property
    def text(self) -> str:
        body = self.function()
        rng = self.rng

        def arr(shape):
            vals = [round(rng.choice([1, -1]) * rng.uniform(0.3, 1.3), 6) for _ in range(shape[0] * shape[1])]
            return f"np.array({vals!r}).reshape({shape!r})" if shape[1] > 1 else f"np.array({vals!r})"

        pts = []
        for _ in range(2):
            xs = arr((N_PRANGE, 1))
            work = "".join(f"np.zeros({N_PRANGE}), " for _ in self.array_params)
            pts.append(f"({xs}, {arr((ROWS, COLS))}, {work})" if self.rows else f"({xs}, {work})")
        return (f"# fuzz: generated from seed {self.seed} by tests/fuzz/gen_par.py (prange)\n"
                "import math\n\nimport numpy as np\nfrom numba import njit, prange\n\n\n"
                "@njit\ndef _cbrt(v):\n    return v ** (1.0 / 3.0)\n\n\n# ---- functions\n"
                + body + f"\n\n# ---- arguments\ndef make_args(p):\n    return {pts[0]} if p == 0 else {pts[1]}\n")


def generate_prange(seed: int, features: set[str] | None = None, size: int | None = None) -> str:
    rng = random.Random(seed * 7919 + 4)
    return PrangeProgram(seed, features, size if size is not None else rng.randint(2, 5)).text
