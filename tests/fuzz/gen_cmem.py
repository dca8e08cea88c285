"""Random C programs that move active doubles through memory at run-time offsets and lengths
(``--lang c-mem``, session 31): the idioms the C generator (gen_c.py) never writes.

``generate_cmem(seed)`` is a gen_c program (same expressions, statements, driver and
promises: no warnings under clang -Wall, no undefined behaviour, bounded values) whose
statements are, about one in three and at least once, one of ``CMEM_FEATURES``:

- ``move_within``: ``memmove(a + o2, a + o1, L * sizeof(double))`` inside one array;
- ``copy_between``: ``memcpy(d + o2, s + o1, L * sizeof(double))`` between two arrays;
- ``copy_helper``: the same copies inside helpers (noinline or not): a window copy, a shift
  right by one at a position, a byte copy through ``void *``;
- ``growbuf``: a buffer grown by ``realloc`` doubling, each value inserted at a run-time
  position with ``memmove`` (written inline, or as ``struct vec`` helpers with an erase);
- ``byte_offsets``: ``(double *)((char *)p + sizeof(double) * k)`` read or written, and
  byte strides through an array of structs with ``offsetof``;
- ``struct_copies``: arrays of ``struct rec {double u; int k; double w;}`` copied whole or
  from an offset with ``memcpy`` of ``m * sizeof(struct rec)``, and struct assignment;
- ``row_copies``: 2-D arrays (stack ``[3][NMAX]`` or a flat malloc'd ``3 * n``) copied row
  by row (rows permuted, windows of rows);
- ``rotate``: a rotation by k through a scratch buffer (memcpy, memmove, memcpy);
- ``byte_scratch``: doubles through an ``_Alignas(double) unsigned char`` buffer and back;
- ``ptrdiff_len``: lengths from pointer differences ``(char *)end - (char *)p``;
- ``single``: one double copied with ``memcpy(&t, a + k, sizeof t)`` (and back);
- ``calloc_realloc``: calloc, a copy at an offset, realloc growing then shrinking.

Offsets and lengths are ints in range by construction: from ``n`` (``(n + c) % m``,
``n - 1``, ``n / 2``), constants, or ``pick(value, m)`` of the data (a kink where the index
changes, which the checker's two-point rule accepts); lengths may be 0. Every array in the
scope keeps its n valid elements after each construct. The constructs are drawn from a
stream of their own (``CMemProgram.mem``); the other streams are gen_c's, so ``c`` mode's
programs are untouched by this module.
"""

from __future__ import annotations

import random

from .gen_c import C_FEATURES, NMIN, CProgram, _Scope

CMEM_FEATURES = ("move_within", "copy_between", "copy_helper", "growbuf", "byte_offsets", "struct_copies",
                 "row_copies", "rotate", "byte_scratch", "ptrdiff_len", "single", "calloc_realloc")
ALL_CMEM_FEATURES = tuple(C_FEATURES) + CMEM_FEATURES
P_MEM = 0.35  # the chance that a statement is one of CMEM_FEATURES

_REC = "#include <stddef.h>\n\nstruct rec {\n    double u;\n    int k;\n    double w;\n};\n"
_VEC = """\
struct vec {
    double *data;
    int len;
    int cap;
};

static void vec_init(struct vec *v, int cap) {
    v->data = malloc((size_t)cap * sizeof(double));
    v->len = 0;
    v->cap = cap;
}

{attr}static void vec_insert(struct vec *v, int pos, double val) {
    if (v->len == v->cap) {
        v->cap *= 2;
        v->data = realloc(v->data, (size_t)v->cap * sizeof(double));
    }
    memmove(v->data + pos + 1, v->data + pos, (size_t)(v->len - pos) * sizeof(double));
    v->data[pos] = val;
    v->len++;
}

__attribute__((unused)) {attr}static void vec_erase(struct vec *v, int pos) {
    memmove(v->data + pos, v->data + pos + 1, (size_t)(v->len - pos - 1) * sizeof(double));
    v->len--;
}
"""
_COPY_HELPERS = {
    "copy_window": "static void copy_window(double *dst, const double *src, int off, int len) {\n"
                   "    memcpy(dst, src + off, (size_t)len * sizeof(double));\n}\n",
    "shift_right": "static void shift_right(double *a, int pos, int len) {\n"
                   "    memmove(a + pos + 1, a + pos, (size_t)(len - pos - 1) * sizeof(double));\n}\n",
    "copy_bytes": "static void copy_bytes(void *dst, const void *src, size_t bytes) {\n"
                  "    memcpy(dst, src, bytes);\n}\n",
    "at_byte": "static double *at_byte(double *p, long off) {\n    return (double *)((char *)p + off);\n}\n",
}


class CMemProgram(CProgram):
    """A gen_c program with the memory constructs of CMEM_FEATURES among its statements."""

    def __init__(self, seed: int, features: set[str] | None = None, size: int = 8):
        super().__init__(seed, set(ALL_CMEM_FEATURES if features is None else features), size)
        self.mem = random.Random(seed * 15485863 + 41)
        self.used: list[str] = []  # the CMEM_FEATURES constructs written, in order
        self.made: set[str] = set()  # helper groups already emitted

    # ---- helpers emitted on first use -------------------------------------------
    def attr(self) -> str:
        return "__attribute__((noinline)) " if self.mem.random() < 0.5 else ""

    def need(self, what: str) -> None:
        if what in self.made:
            return
        self.made.add(what)
        if what == "rec":
            self.helpers.insert(0, _REC)
        elif what == "vec":
            self.helpers.append(_VEC.replace("{attr}", self.attr()))
        else:
            self.helpers.append(self.attr() + _COPY_HELPERS[what])

    # ---- run-time ints ---------------------------------------------------------
    def index(self, sc: _Scope, bound: str, out: list[str], ind: str) -> str:
        """A new int variable in [0, bound) (``bound`` a C int expression >= 1)."""
        m = self.mem
        name = self.fresh("o")
        forms = [f"({bound}) - 1", "0", f"(n + {m.randrange(7)}) % ({bound})", f"n / 2 % ({bound})"]
        if sc.scalars:
            forms += [f"pick({self.expr(sc, 1)}, {bound})"] * 3
        out.append(f"{ind}int {name} = {m.choice(forms)};")
        return name

    def window(self, sc: _Scope, out: list[str], ind: str) -> tuple[str, str, str]:
        """(o1, o2, L): offsets in [0, n) and a length L in [0, n - max(o1, o2)]."""
        o1 = self.index(sc, "n", out, ind)
        o2 = self.index(sc, "n", out, ind)
        length = self.index(sc, f"n - ({o1} > {o2} ? {o1} : {o2}) + 1", out, ind)
        return o1, o2, length

    def read_all(self, sc: _Scope, out: list[str], ind: str, arr: str, length: str = "n", idx: str = "i") -> None:
        """A new scalar summing arr[0..length) (``idx``: the index of the other arrays read)."""
        t = self.new_scalar(sc, out, ind, "0.0")
        out.append(f"{ind}for (int i = 0; i < {length}; i++)")
        out.append(f"{ind}    {t} += {arr}[i] * {self.bounded(sc, idx)};")

    def fill(self, sc: _Scope, out: list[str], ind: str, target: str) -> None:
        out.append(f"{ind}for (int i = 0; i < n; i++)")
        out.append(f"{ind}    {target} = {self.bounded(sc, 'i')};")

    def other(self, sc: _Scope, out: list[str], ind: str, d: str) -> str:
        """An array of the scope other than ``d``; a new filled stack array when there is none."""
        others = [a for a in sc.arrays if a != d]
        if others:
            return self.mem.choice(others)
        w = self.fresh("w")
        out.append(f"{ind}double {w}[NMAX];")
        self.fill(sc, out, ind, f"{w}[i]")
        sc.arrays.append(w)
        return w

    # ---- statements ------------------------------------------------------------
    def statement(self, sc: _Scope, out: list[str], ind: str, depth: int) -> None:
        mem = [f for f in CMEM_FEATURES if f in self.on]
        if mem and sc.has_n and sc.arrays and (not self.used or self.mem.random() < P_MEM):
            kind = self.mem.choice(mem)
            if self.mem_statement(kind, sc, out, ind):
                self.used.append(kind)
                return
        super().statement(sc, out, ind, depth)

    def mem_statement(self, kind: str, sc: _Scope, out: list[str], ind: str) -> bool:
        """One construct of CMEM_FEATURES; False when the scope cannot hold it."""
        m = self.mem
        writable = [a for a in sc.arrays if a != "x" or "inplace" in self.on]
        if kind == "move_within" and writable:
            a = m.choice(writable)
            o1, o2, length = self.window(sc, out, ind)
            out.append(f"{ind}memmove({a} + {o2}, {a} + {o1}, (size_t){length} * sizeof(double));")
            if m.random() < 0.5:
                self.read_all(sc, out, ind, a)
            return True
        if kind == "copy_between" and writable:
            d = m.choice(writable)
            s = self.other(sc, out, ind, d)
            o1, o2, length = self.window(sc, out, ind)
            out.append(f"{ind}memcpy({d} + {o2}, {s} + {o1}, (size_t){length} * sizeof(double));")
            if m.random() < 0.5:
                self.read_all(sc, out, ind, d)
            return True
        if kind == "copy_helper" and writable:
            d = m.choice(writable)
            shape = m.choice(["window", "shift", "bytes", "at_byte"])
            if shape == "window":
                self.need("copy_window")
                s = self.other(sc, out, ind, d)
                o1, o2, length = self.window(sc, out, ind)
                out.append(f"{ind}copy_window({d} + {o2}, {s}, {o1}, {length});")
            elif shape == "shift":
                self.need("shift_right")
                pos = self.index(sc, "n", out, ind)
                out.append(f"{ind}shift_right({d}, {pos}, n);")
                out.append(f"{ind}{d}[{pos}] = {self.bounded(sc)};")
            elif shape == "bytes":
                self.need("copy_bytes")
                s = self.other(sc, out, ind, d)
                o1, o2, length = self.window(sc, out, ind)
                out.append(f"{ind}copy_bytes((char *){d} + {o2} * sizeof(double), (const char *){s} + "
                           f"{o1} * sizeof(double), (size_t){length} * sizeof(double));")
            else:
                self.need("at_byte")
                k = self.index(sc, "n", out, ind)
                q = self.fresh("q")
                out.append(f"{ind}double *{q} = at_byte({d}, (long)({k} * sizeof(double)));")
                out.append(f"{ind}for (int i = 0; i < n - {k}; i++)")
                out.append(f"{ind}    {q}[i] = 0.5 * {q}[i] + {self.bounded(sc, 'i')};")
            if m.random() < 0.5:
                self.read_all(sc, out, ind, d)
            return True
        if kind == "growbuf":
            if m.random() < 0.5:
                self.growbuf_inline(sc, out, ind)
            else:
                self.growbuf_vec(sc, out, ind)
            return True
        if kind == "byte_offsets":
            if m.random() < 0.6:
                a = m.choice(writable if writable and m.random() < 0.5 else sc.arrays)
                k = self.index(sc, "n", out, ind)
                q = self.fresh("q")
                out.append(f"{ind}double *{q} = (double *)((char *){a} + sizeof(double) * {k});")
                if a in writable and m.random() < 0.5:
                    out.append(f"{ind}for (int i = 0; i < n - {k}; i++)")
                    out.append(f"{ind}    {q}[i] = {self.const()} * {q}[i] + {self.bounded(sc, 'i')};")
                else:
                    t = self.new_scalar(sc, out, ind, "0.0")
                    out.append(f"{ind}for (int i = 0; i < n - {k}; i++)")
                    out.append(f"{ind}    {t} += *(double *)((char *){q} + i * sizeof(double)) * "
                               f"{self.bounded(sc, 'i')};")
            else:
                self.struct_array(sc, out, ind, strided=True)
            return True
        if kind == "struct_copies":
            self.struct_array(sc, out, ind, strided=False)
            return True
        if kind == "row_copies":
            self.row_copies(sc, out, ind)
            return True
        if kind == "rotate" and writable:
            a = m.choice(writable)
            k = self.index(sc, "n", out, ind)
            tmp = self.fresh("tmp")
            out.append(f"{ind}double {tmp}[NMAX];")
            out.append(f"{ind}memcpy({tmp}, {a}, (size_t){k} * sizeof(double));")
            out.append(f"{ind}memmove({a}, {a} + {k}, (size_t)(n - {k}) * sizeof(double));")
            out.append(f"{ind}memcpy({a} + n - {k}, {tmp}, (size_t){k} * sizeof(double));")
            if m.random() < 0.5:
                self.read_all(sc, out, ind, a)
            return True
        if kind == "byte_scratch":
            s = m.choice(sc.arrays)
            buf = self.fresh("bytes")
            out.append(f"{ind}_Alignas(double) unsigned char {buf}[NMAX * sizeof(double)];")
            out.append(f"{ind}memcpy({buf}, {s}, (size_t)n * sizeof(double));")
            if writable and m.random() < 0.5:
                d = m.choice(writable)
                k = self.index(sc, "n", out, ind)
                out.append(f"{ind}memcpy({d}, {buf} + {k} * sizeof(double), (size_t)(n - {k}) * sizeof(double));")
                if m.random() < 0.5:
                    self.read_all(sc, out, ind, d)
            else:
                t = self.new_scalar(sc, out, ind, "0.0")
                out.append(f"{ind}for (int i = 0; i < n; i++) {{")
                out.append(f"{ind}    double e;")
                out.append(f"{ind}    memcpy(&e, {buf} + i * sizeof(double), sizeof e);")
                out.append(f"{ind}    {t} += e * {self.bounded(sc, 'i')};")
                out.append(f"{ind}}}")
            return True
        if kind == "ptrdiff_len" and writable:
            d = m.choice(writable)
            s = self.other(sc, out, ind, d)
            k = self.index(sc, "n", out, ind)
            p, e = self.fresh("p"), self.fresh("end")
            out.append(f"{ind}const double *{e} = {s} + n;")
            out.append(f"{ind}const double *{p} = {s} + {k};")
            out.append(f"{ind}memcpy({d}, {p}, (size_t)((const char *){e} - (const char *){p}));")
            if m.random() < 0.5:
                t = self.new_scalar(sc, out, ind, "0.0")
                out.append(f"{ind}for (const double *r = {p}; r != {e}; r++)")
                out.append(f"{ind}    {t} += *r * {self.bounded(sc)};")
            return True
        if kind == "single":
            s = m.choice(sc.arrays)
            k = self.index(sc, "n", out, ind)
            t = self.new_scalar(sc, out, ind, "0.0")
            out.append(f"{ind}memcpy(&{t}, {s} + {k}, sizeof {t});")
            if writable and m.random() < 0.5:
                d = m.choice(writable)
                j = self.index(sc, "n", out, ind)
                u = self.new_scalar(sc, out, ind, f"{t} * {self.bounded(sc)}")
                out.append(f"{ind}memcpy({d} + {j}, &{u}, sizeof(double));")
            return True
        if kind == "calloc_realloc":
            self.calloc_realloc(sc, out, ind)
            return True
        return False

    def growbuf_inline(self, sc: _Scope, out: list[str], ind: str) -> None:
        """A buffer grown by realloc doubling, n values inserted at run-time positions."""
        m = self.mem
        buf, cap, ln = self.fresh("buf"), self.fresh("cap"), self.fresh("len")
        out.append(f"{ind}int {cap} = {m.choice([1, 2, 3])}, {ln} = 0;")
        out.append(f"{ind}double *{buf} = malloc((size_t){cap} * sizeof(double));")
        out.append(f"{ind}for (int i = 0; i < n; i++) {{")
        out.append(f"{ind}    if ({ln} == {cap}) {{")
        out.append(f"{ind}        {cap} *= 2;")
        out.append(f"{ind}        {buf} = realloc({buf}, (size_t){cap} * sizeof(double));")
        out.append(f"{ind}    }}")
        pos = m.choice([f"pick({self.expr(sc, 1, 'i')}, {ln} + 1)", "0", ln, "i / 2", f"({ln} + 1) / 2"])
        out.append(f"{ind}    int pos = {pos};")
        out.append(f"{ind}    memmove({buf} + pos + 1, {buf} + pos, (size_t)({ln} - pos) * sizeof(double));")
        out.append(f"{ind}    {buf}[pos] = {self.bounded(sc, 'i')};")
        out.append(f"{ind}    {ln}++;")
        out.append(f"{ind}}}")
        self.read_all(sc, out, ind, buf, ln)
        sc.arrays.append(buf)
        sc.heap.append(buf)

    def growbuf_vec(self, sc: _Scope, out: list[str], ind: str) -> None:
        """The same through struct vec helpers, with erases and re-inserts."""
        m = self.mem
        self.need("vec")
        v = self.fresh("vec")
        out.append(f"{ind}struct vec {v};")
        out.append(f"{ind}vec_init(&{v}, {m.choice([1, 2, 4])});")
        out.append(f"{ind}for (int i = 0; i < n; i++)")
        pos = m.choice([f"pick({self.expr(sc, 1, 'i')}, {v}.len + 1)", "0", f"{v}.len", f"{v}.len / 2"])
        out.append(f"{ind}    vec_insert(&{v}, {pos}, {self.bounded(sc, 'i')});")
        if m.random() < 0.6:
            k = self.index(sc, "n", out, ind)
            out.append(f"{ind}vec_erase(&{v}, {k});")
            j = self.index(sc, "n", out, ind)
            out.append(f"{ind}vec_insert(&{v}, {j}, {self.bounded(sc)});")
        self.read_all(sc, out, ind, f"{v}.data", f"{v}.len")
        sc.arrays.append(f"{v}.data")
        sc.heap.append(f"{v}.data")

    def struct_array(self, sc: _Scope, out: list[str], ind: str, strided: bool) -> None:
        m = self.mem
        self.need("rec")
        r, s = self.fresh("recs"), self.fresh("recs")
        a = m.choice(sc.arrays)
        out.append(f"{ind}struct rec {r}[NMAX], {s}[NMAX];")
        out.append(f"{ind}for (int i = 0; i < n; i++) {{")
        out.append(f"{ind}    {r}[i].u = {a}[i];")
        out.append(f"{ind}    {r}[i].k = i % 3;")
        out.append(f"{ind}    {r}[i].w = {self.bounded(sc, 'i')};")
        out.append(f"{ind}}}")
        shape = m.choice(["whole", "offset", "assign"])
        if shape == "whole":
            out.append(f"{ind}memcpy({s}, {r}, (size_t)n * sizeof(struct rec));")
        elif shape == "offset":
            k = self.index(sc, "n", out, ind)
            out.append(f"{ind}memcpy({s}, {r} + {k}, (size_t)(n - {k}) * sizeof(struct rec));")
            out.append(f"{ind}memcpy({s} + n - {k}, {r}, (size_t){k} * sizeof {r}[0]);")
        else:
            k = self.index(sc, "n", out, ind)
            out.append(f"{ind}for (int i = 0; i < n; i++)")
            out.append(f"{ind}    {s}[i] = {r}[(i + {k}) % n];")
        t = self.new_scalar(sc, out, ind, "0.0")
        out.append(f"{ind}for (int i = 0; i < n; i++)")
        if strided:
            out.append(f"{ind}    {t} += *(const double *)((const char *){s} + i * sizeof(struct rec) + "
                       f"offsetof(struct rec, {m.choice(['u', 'w'])})) * "
                       f"*(const double *)((const char *)&{s}[i] + offsetof(struct rec, w)) + {s}[i].k;")
        else:
            out.append(f"{ind}    {t} += {s}[i].u * {s}[i].w + {s}[i].k * {s}[i].u;")

    def row_copies(self, sc: _Scope, out: list[str], ind: str) -> None:
        m = self.mem
        if m.random() < 0.5:  # stack 2-D arrays, rows permuted
            a2, b2 = self.fresh("mat"), self.fresh("mat")
            out.append(f"{ind}double {a2}[3][NMAX], {b2}[3][NMAX];")
            out.append(f"{ind}for (int r = 0; r < 3; r++)")
            out.append(f"{ind}    for (int i = 0; i < n; i++)")
            out.append(f"{ind}        {a2}[r][i] = {self.bounded(sc, 'i')} + r * {m.choice(sc.arrays)}[i];")
            k = self.index(sc, "3", out, ind)
            out.append(f"{ind}for (int r = 0; r < 3; r++)")
            out.append(f"{ind}    memcpy({b2}[r], {a2}[(r + {k}) % 3], (size_t)n * sizeof(double));")
            t = self.new_scalar(sc, out, ind, "0.0")
            out.append(f"{ind}for (int r = 0; r < 3; r++)")
            out.append(f"{ind}    for (int i = 0; i < n; i++)")
            out.append(f"{ind}        {t} += {b2}[r][i] * {b2}[(r + 1) % 3][n - 1 - i];")
            return
        # a flat malloc'd 3 x n matrix; row windows copied in from arrays, a row copied out
        f = self.fresh("flat")
        out.append(f"{ind}double *{f} = malloc((size_t)(3 * n) * sizeof(double));")
        for row in range(3):
            s = m.choice(sc.arrays)
            out.append(f"{ind}memcpy({f} + {row} * n, {s}, (size_t)n * sizeof(double));")
        o1, o2, length = self.window(sc, out, ind)
        out.append(f"{ind}for (int r = 1; r < 3; r++)")
        out.append(f"{ind}    memmove({f} + r * n + {o2}, {f} + (r - 1) * n + {o1}, (size_t){length} * sizeof(double));")
        t = self.new_scalar(sc, out, ind, "0.0")
        out.append(f"{ind}for (int i = 0; i < 3 * n; i++)")
        out.append(f"{ind}    {t} += {f}[i] * {self.bounded(sc, 'i % n')};")
        writable = [a for a in sc.arrays if a != "x" or "inplace" in self.on]
        if writable and m.random() < 0.5:
            d = m.choice(writable)
            out.append(f"{ind}memcpy({d}, {f} + {m.randrange(3)} * n, (size_t)n * sizeof(double));")
        out.append(f"{ind}free({f});")

    def calloc_realloc(self, sc: _Scope, out: list[str], ind: str) -> None:
        m = self.mem
        c = self.fresh("c")
        a, b = m.choice(sc.arrays), m.choice(sc.arrays)
        k = self.index(sc, "n", out, ind)
        out.append(f"{ind}double *{c} = calloc((size_t)n, sizeof(double));")
        out.append(f"{ind}memcpy({c} + {k}, {a}, (size_t)(n - {k}) * sizeof(double));")
        out.append(f"{ind}{c} = realloc({c}, (size_t)(2 * n) * sizeof(double));")
        out.append(f"{ind}memcpy({c} + n, {b}, (size_t)n * sizeof(double));")
        self.read_all(sc, out, ind, c, "2 * n", "i % n")
        if m.random() < 0.5:
            out.append(f"{ind}{c} = realloc({c}, (size_t)n * sizeof(double));")
        sc.arrays.append(c)
        sc.heap.append(c)

    @property
    def text(self) -> str:
        return super().text.replace("by tests/fuzz/gen_c.py */", "by tests/fuzz/gen_cmem.py */", 1)


def cmem_program(seed: int, features: set[str] | None = None, size: int | None = None) -> CMemProgram:
    """The generated program of ``seed`` (its ``text`` made; ``used`` and ``made`` say which
    constructs and helpers it writes)."""
    rng = random.Random(seed * 7919 + 1)
    prog = CMemProgram(seed, features, size if size is not None else rng.randint(4, 10))
    prog.text  # noqa: B018 (generates)
    return prog


def generate_cmem(seed: int, features: set[str] | None = None, size: int | None = None) -> str:
    """The C program of ``--lang c-mem`` for ``seed`` (same seed, features and size: same text)."""
    return cmem_program(seed, features, size).text


assert NMIN >= 5  # offsets below n, and n >= NMIN
