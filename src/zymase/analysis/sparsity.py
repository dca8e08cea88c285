"""Sparsity patterns of derivatives, read off LLVM IR: which outputs depend on which
inputs (a Jacobian's pattern) and which pairs of inputs meet in a nonlinear operation (a
Hessian's pattern).

The analysis is an index-set propagation through the function's (preoptimized) IR, run
once on the call's arguments: integers, pointers and control flow take their concrete
values (so loops run their real trip counts and memory is followed element by element),
and every float carries, beside its value, the set of inputs it depends on and the set
of input pairs its second derivative may involve:

* ``a + b``, ``a - b``, ``-a``, ``fabs``, casts: unions (linear);
* ``a * b``: first-order ``A | B``, second-order ``A2 | B2 | A x B``;
* ``a / b``, ``pow``, ``atan2``: as ``a * g(b)`` with ``g`` nonlinear;
* a nonlinear function ``g(a)`` (exp, log, tanh, sqrt, sin ...): ``A`` and ``A2 | A x A``;
* ``floor``, comparisons, float-to-integer: no derivative (as AD treats them).

Sets are unions built lazily (a union is a node over its two operands, a product a
node over its factors), flattened once at the end, so accumulating n terms costs O(n),
not O(n^2). The control path is the one the arguments take, which is the path a
derivative at those arguments follows. Anything outside this vocabulary (a call the
analysis does not know, vectors, aggregates, pointer arithmetic through integers) raises
:class:`Unknown`: a dependence the analysis cannot see must not become a zero in a
sparse derivative.
"""

from __future__ import annotations

import math
import re
import struct

import numpy as np


class Unknown(Exception):
    """The analysis cannot follow ``construct`` (say why in ``why``)."""

    def __init__(self, construct: str, why: str):
        super().__init__(f"{why}: {construct}")
        self.construct, self.why = construct, why


# ----------------------------------------------------------------------------------
# Lazy index sets: None (empty), an int (one input), a _Union, or (second order) a
# _Product of two first-order sets
# ----------------------------------------------------------------------------------


class _Union:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


class _Product:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


def _union(a, b):
    if a is None:
        return b
    if b is None or b is a:
        return a
    return _Union(a, b)


def _product(a, b):
    return None if a is None or b is None else _Product(a, b)


def _leaves(s, memo: dict | None = None):
    """The leaves (ints, or _Product nodes) under a lazy set, each once."""
    out, seen, stack = [], set(), [s]
    while stack:
        n = stack.pop()
        if n is None:
            continue
        if isinstance(n, _Union):
            if id(n) in seen:
                continue
            seen.add(id(n))
            stack.append(n.a)
            stack.append(n.b)
        else:
            out.append(n)
    return out


def indices(s) -> set:
    """The input indices of a first-order lazy set."""
    return set(_leaves(s))


def pairs(s) -> set:
    """The input pairs (i, j), both orders, of a second-order lazy set."""
    flat: dict = {}
    out = set()
    for p in _leaves(s):
        a = flat.get(id(p.a))
        if a is None:
            a = flat[id(p.a)] = indices(p.a)
        b = flat.get(id(p.b))
        if b is None:
            b = flat[id(p.b)] = indices(p.b)
        for i in a:
            for j in b:
                out.add((i, j))
                out.add((j, i))
    return out


class _F:
    """A float: value, first-order set, second-order set."""

    __slots__ = ("v", "d1", "d2")

    def __init__(self, v, d1=None, d2=None):
        self.v, self.d1, self.d2 = v, d1, d2


def _linear(v, *xs):
    d1 = d2 = None
    for x in xs:
        d1, d2 = _union(d1, x.d1), _union(d2, x.d2)
    return _F(v, d1, d2)


def _times(v, a, b):
    return _F(v, _union(a.d1, b.d1), _union(_union(a.d2, b.d2), _product(a.d1, b.d1)))


def _nonlinear(v, *xs):
    """``g(x1, x2, ...)`` with every second derivative of ``g`` possibly nonzero."""
    d1 = d2 = None
    for x in xs:
        d1, d2 = _union(d1, x.d1), _union(d2, x.d2)
    return _F(v, d1, _union(d2, _product(d1, d1)))


# ----------------------------------------------------------------------------------
# Memory: buffers of cells (offset -> value), argument arrays read lazily
# ----------------------------------------------------------------------------------


class _Buffer:
    __slots__ = ("cells", "array", "input", "zero_from", "what")

    def __init__(self, what: str, array=None, input_array: bool = False):
        self.cells: dict = {}
        self.array = None if array is None else np.ascontiguousarray(array).reshape(-1)
        self.input = input_array
        self.zero_from = None  # (start, end) byte range set to zero by memset
        self.what = what


class _Ptr:
    __slots__ = ("buf", "off")

    def __init__(self, buf, off):
        self.buf, self.off = buf, off

    def __eq__(self, other):
        return isinstance(other, _Ptr) and other.buf is self.buf and other.off == self.off

    def __hash__(self):
        return hash((id(self.buf), self.off))


_ALLOCATED, _STACK = "an array allocated by the function", "a stack slot"
_SCALAR_SIZES = {"double": 8, "float": 4, "i64": 8, "i32": 4, "i16": 2, "i8": 1, "i1": 1, "ptr": 8}
_INT = re.compile(r"i(\d+)$")


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "{[<(":
            depth += 1
        elif ch in "}]>)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _layout(ty: str):
    """(size, alignment) of an LLVM type written as text."""
    ty = ty.strip()
    if ty in _SCALAR_SIZES:
        n = _SCALAR_SIZES[ty]
        return n, n
    m = _INT.match(ty)
    if m:
        n = max(1, (int(m.group(1)) + 7) // 8)
        return n, n
    m = re.fullmatch(r"\[(\d+) x (.+)\]", ty)
    if m:
        size, align = _layout(m.group(2))
        return int(m.group(1)) * size, align
    if ty.startswith("{") or ty.startswith("<{"):
        packed = ty.startswith("<{")
        inner = ty[2:-2] if packed else ty[1:-1]
        off, align = 0, 1
        for f in _split_top(inner):
            s, a = _layout(f)
            if not packed:
                off = (off + a - 1) // a * a
                align = max(align, a)
            off += s
        return (off + align - 1) // align * align, align
    raise Unknown(ty, "a type the sparsity analysis does not lay out")


def _field_offset(ty: str, k: int) -> tuple[int, str]:
    inner = _split_top(ty.strip()[1:-1])
    off = 0
    for i, f in enumerate(inner):
        s, a = _layout(f)
        off = (off + a - 1) // a * a
        if i == k:
            return off, f
        off += s
    raise Unknown(ty, "a struct index out of range")


# ----------------------------------------------------------------------------------
# The interpreter
# ----------------------------------------------------------------------------------

_NONLINEAR_1 = {"sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh",
                "exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "erf", "erfc",
                "lgamma", "tgamma"}
_NONLINEAR_2 = {"pow", "atan2", "hypot"}
_PIECEWISE_CONSTANT = {"floor", "ceil", "trunc", "round", "rint", "nearbyint", "roundeven"}
_KNOWN_FLOAT_CALLS = _NONLINEAR_1 | _NONLINEAR_2 | _PIECEWISE_CONSTANT | {
    "fabs", "copysign", "minnum", "maxnum", "minimum", "maximum", "fmin", "fmax", "fma", "fmuladd"}
_FREE_CALLS = ("llvm.lifetime.", "llvm.assume", "llvm.dbg.", "llvm.experimental.noalias.scope.decl",
               "NRT_incref", "NRT_decref", "NRT_MemInfo_call_dtor", "llvm.invariant.")


def _libm_name(callee: str) -> str:
    """``llvm.tanh.f64`` / ``tanhf`` / ``tanh`` -> ``tanh``."""
    if callee.startswith("llvm."):
        return callee.split(".")[1]
    if callee.endswith("f") and callee[:-1] in _NONLINEAR_1 | _NONLINEAR_2 | _PIECEWISE_CONSTANT | {"fabs"}:
        return callee[:-1]
    return callee


class _Interpreter:
    def __init__(self, fn, limit: int):
        self.fn = fn
        self.limit = limit
        self._globals: dict = {}
        self.blocks = {b.name: list(b.instructions) for b in fn.blocks}
        self.entry = next(iter(fn.blocks)).name
        self.code = {name: [self._decode(i) for i in ins] for name, ins in self.blocks.items()}
        self.phis = {name: [(c[1], dict(c[3])) for c in code if c[0] == "phi"] for name, code in self.code.items()}

    # -- decoding ------------------------------------------------------------------

    def _operand(self, op):
        kind = op.value_kind.name
        if kind in ("instruction", "argument"):
            return ("v", op.name)
        if kind in ("undef_value", "poison_value"):
            return ("c", None if str(op.type) == "ptr" else _F(0.0) if str(op.type) in ("double", "float") else 0)
        text = str(op).strip()
        ty = str(op.type)
        if ty == "ptr":
            if text.endswith(" null"):
                return ("c", None)
            if kind in ("global_variable", "function"):
                return ("c", _Ptr(self._global(text), 0))
            raise Unknown(text, "a pointer constant")
        if ty in ("double", "float"):
            return ("c", _F(float(op.get_constant_value(round_fp=True))))
        m = _INT.match(ty)
        if m and kind != "constant_int":
            raise Unknown(text, f"an operand the sparsity analysis does not follow ({op.value_kind})")
        if m:
            if "poison" in text or "undef" in text:
                return ("c", 0)
            w = int(m.group(1))
            return ("c", op.get_constant_value(signed_int=False) & ((1 << w) - 1))
        raise Unknown(text, "a constant of a type the sparsity analysis does not follow")

    def _global(self, text):
        b = self._globals.get(text)
        if b is None:
            b = self._globals[text] = _Buffer(f"global {text.split()[-1]}")
        return b

    def _decode(self, ins):
        op = ins.opcode
        text = str(ins).strip()
        ops = list(ins.operands)
        name = ins.name
        ty = str(ins.type)
        if op == "phi":
            return (op, name, ty, [(b.name, self._operand(v)) for v, b in zip(ops, ins.incoming_blocks)])
        if op == "br":
            m = re.match(r"br i1 (.+?), label %(\"[^\"]+\"|\S+), label %(\"[^\"]+\"|\S+)$", text.split(", !")[0])
            if m:
                return (op, name, ty, (self._operand(ops[0]), m.group(2).strip('"'), m.group(3).strip('"')))
            m = re.match(r"br label %(\"[^\"]+\"|\S+)", text)
            return (op, name, ty, (None, m.group(1).strip('"'), None))
        if op == "switch":
            cases = re.findall(r"i\d+ (-?\d+), label %(\"[^\"]+\"|[^\s\]]+)", text.split("[", 1)[1])
            default = re.search(r", label %(\"[^\"]+\"|[^\s\[]+) \[", text).group(1).strip('"')
            w = int(_INT.match(str(ops[0].type)).group(1))
            return (op, name, ty, (self._operand(ops[0]), default,
                                   {int(v) & ((1 << w) - 1): b.strip('"') for v, b in cases}))
        if op in ("icmp", "fcmp"):
            pred = re.search(rf"{op} (?:samesign |fast |nnan |ninf |nsz |arcp |contract |afn |reassoc )*(\w+)",
                             text).group(1)
            return (op, name, str(ops[0].type), (pred, self._operand(ops[0]), self._operand(ops[1])))
        if op == "getelementptr":
            src = re.search(r"getelementptr (?:inbounds |nuw |nusw |inrange\(\S+\) )*(.+?), ptr ", text).group(1)
            idx = [(self._operand(o), str(o.type)) for o in ops[1:]]
            return (op, name, ty, (src, self._operand(ops[0]), idx))
        if op == "alloca":
            m = re.search(r"alloca (.+?)(?:, align \d+)?$", text)
            return (op, name, ty, m.group(1).split(", ")[0])
        if op == "call":
            callee = ops[-1]
            cname = callee.name
            if not cname:
                raise Unknown(text[:120], "an indirect call")
            return (op, name, ty, (cname, [self._operand(o) for o in ops[:-1]], [str(o.type) for o in ops[:-1]]))
        if op in ("extractvalue", "insertvalue", "extractelement", "insertelement", "shufflevector",
                  "ptrtoint", "inttoptr", "invoke", "landingpad", "atomicrmw", "cmpxchg", "fence", "va_arg",
                  "indirectbr", "callbr", "resume"):
            raise Unknown(text[:120], f"'{op}', which the sparsity analysis does not follow")
        if ty.startswith("<") or any(str(o.type).startswith("<") for o in ops):
            raise Unknown(text[:120], "vector code")
        return (op, name, ty, [self._operand(o) for o in ops], [str(o.type) for o in ops])

    # -- running -------------------------------------------------------------------

    def run(self, args: list):
        #: set when the path taken depends on float values or on argument array
        #: contents (a float comparison, a float-to-integer conversion, an integer or
        #: pointer read from an argument array, a min/max of floats): the pattern then
        #: holds for these values only
        self.value_dependent = False
        env = {a.name: v for a, v in zip(self.fn.arguments, args)}
        self.env = env

        def val(o):
            return env[o[1]] if o[0] == "v" else o[1]

        self.val = val
        block, prev, steps = self.entry, None, 0
        while True:
            code = self.code[block]
            phis = [(n, val(inc[prev])) for n, inc in self.phis[block]]
            for n, v in phis:
                env[n] = v
            nxt = None
            for c in code:
                op = c[0]
                if op == "phi":
                    continue
                steps += 1
                if op == "br":
                    cond, t, f = c[3]
                    nxt = t if cond is None or val(cond) else f
                    break
                if op == "switch":
                    v, default, cases = c[3]
                    nxt = cases.get(val(v), default)
                    break
                if op == "ret":
                    return val(c[3][0]) if c[3] else None
                if op == "unreachable":
                    raise Unknown("unreachable", "the function reached 'unreachable'")
                env[c[1]] = self._exec(c)
            if steps > self.limit:
                raise Unknown(f"more than {self.limit} instructions", "the function runs too long to analyze")
            prev, block = block, nxt

    def _exec(self, c):
        op, name, ty = c[0], c[1], c[2]
        val = self.val
        # the most frequent first: memory, then arithmetic
        if op == "load":
            return self._load(val(c[3][0]), ty)
        if op == "getelementptr":
            return self._gep(c)
        if op == "store":
            self._store(val(c[3][1]), c[4][0], val(c[3][0]))
            return None
        if op in _FLOAT_BINARY:
            a, b = val(c[3][0]), val(c[3][1])
            v = _float_op(op, a.v, b.v, ty)
            if op in ("fadd", "fsub"):
                return _linear(v, a, b)
            if op == "fmul":
                return _times(v, a, b)
            if op == "fdiv":
                return _times(v, a, _nonlinear(None, b))
            return _nonlinear(v, a, b)
        if op == "fneg":
            a = val(c[3][0])
            return _F(-a.v, a.d1, a.d2)
        if op in _INT_BINARY:
            w = _width(ty)
            mask = (1 << w) - 1
            a, b = (val(o) for o in c[3])
            if isinstance(a, _Ptr) or isinstance(b, _Ptr):
                raise Unknown(op, "integer arithmetic on a pointer")
            sa, sb = _signed(a, w), _signed(b, w)
            if op == "add":
                r = a + b
            elif op == "sub":
                r = a - b
            elif op == "mul":
                r = a * b
            elif op == "shl":
                r = a << b
            elif op == "lshr":
                r = a >> b
            elif op == "ashr":
                r = sa >> b
            elif op == "and":
                r = a & b
            elif op == "or":
                r = a | b
            elif op == "xor":
                r = a ^ b
            elif op in ("udiv", "urem") and b == 0:
                raise Unknown(f"{op} by zero", "undefined behaviour")
            elif op == "udiv":
                r = a // b
            elif op == "urem":
                r = a % b
            elif op == "sdiv":
                r = _trunc_div(sa, sb)
            else:
                r = sa - _trunc_div(sa, sb) * sb
            return r & mask
        if op == "icmp":
            pred, ao, bo = c[3]
            a, b = val(ao), val(bo)
            if c[2] == "ptr":
                return _pointer_compare(pred, a, b)
            w = _width(c[2])
            if pred[0] == "s":
                a, b = _signed(a, w), _signed(b, w)
            return int(_compare(pred.lstrip("su") if pred not in ("eq", "ne") else pred, a, b))
        if op == "fcmp":
            pred, ao, bo = c[3]
            a, b = val(ao).v, val(bo).v
            self.value_dependent = True
            return int(_fcompare(pred, a, b))
        if op == "select":
            cnd, a, b = (val(o) for o in c[3])
            return a if cnd else b
        if op == "freeze" or op == "bitcast" and ty == c[4][0]:
            return val(c[3][0])
        if op in ("sext", "zext", "trunc"):
            a = val(c[3][0])
            wi, wo = int(_INT.match(c[4][0]).group(1)), int(_INT.match(ty).group(1))
            if op == "sext":
                return _signed(a, wi) & ((1 << wo) - 1)
            return a & ((1 << wo) - 1)
        if op in ("sitofp", "uitofp"):
            a = val(c[3][0])
            wi = int(_INT.match(c[4][0]).group(1))
            v = float(_signed(a, wi) if op == "sitofp" else a)
            return _F(np.float32(v) if ty == "float" else v)
        if op in ("fptosi", "fptoui"):
            a = val(c[3][0]).v
            w = int(_INT.match(ty).group(1))
            self.value_dependent = True
            return (int(a) if math.isfinite(a) else 0) & ((1 << w) - 1)
        if op in ("fpext", "fptrunc"):
            a = val(c[3][0])
            return _F(np.float32(a.v) if ty == "float" else float(a.v), a.d1, a.d2)
        if op == "alloca":
            return _Ptr(_Buffer(_STACK), 0)
        if op == "call":
            return self._call(c)
        raise Unknown(op, f"'{op}', which the sparsity analysis does not follow")

    def _gep(self, c):
        src, base_o, idx = c[3]
        p = self.val(base_o)
        if p is None:
            raise Unknown("getelementptr on null", "address arithmetic on a null pointer")
        off = p.off
        ty = src
        for k, (o, ity) in enumerate(idx):
            i = _signed(self.val(o), _width(ity))
            if k == 0:
                off += i * _layout(ty)[0]
                continue
            ty = ty.strip()
            if ty.startswith("["):
                ty = re.fullmatch(r"\[(\d+) x (.+)\]", ty).group(2)
                off += i * _layout(ty)[0]
            elif ty.startswith("{"):
                fo, ty = _field_offset(ty, i)
                off += fo
            else:
                raise Unknown(ty, "an index into a type that is not an aggregate")
        return _Ptr(p.buf, off)

    def _load(self, p, ty):
        if not isinstance(p, _Ptr):
            raise Unknown(f"load {ty}", "a load through a pointer the analysis does not know")
        buf, off = p.buf, p.off
        cell = buf.cells.get(off)
        if cell is not None:
            cty, v = cell
            if cty != ty:
                raise Unknown(f"load {ty} of a {cty}", "memory read as another type than written")
            return v
        if buf.array is not None:
            a = buf.array
            item = a.dtype.itemsize
            k, r = divmod(off, item)
            if r or not 0 <= k < a.size:
                raise Unknown(f"load {ty} at byte {off} of {buf.what}", "a load outside an argument's elements")
            x = a[k]
            if ty in ("double", "float"):
                if a.dtype.kind != "f":
                    raise Unknown(f"load {ty} of {a.dtype}", "memory read as another type than written")
                return _F(float(x) if ty == "double" else x, k if buf.input else None)
            if _INT.match(ty) and a.dtype.kind in "iub":
                self.value_dependent = True
                return int(x) & ((1 << int(_INT.match(ty).group(1))) - 1)
            raise Unknown(f"load {ty} of {a.dtype}", "memory read as another type than written")
        if buf.zero_from and buf.zero_from[0] <= off < buf.zero_from[1]:
            return _F(0.0) if ty in ("double", "float") else None if ty == "ptr" else 0
        # never written: an uninitialized element of the function's own memory
        # (np.empty) has no derivative; a global's contents are not known here
        if ty in ("double", "float") and buf.what in (_ALLOCATED, _STACK):
            return _F(0.0)
        raise Unknown(f"load {ty} from {buf.what}", "a load of memory the analysis never saw written")

    def _store(self, p, ty, v):
        if not isinstance(p, _Ptr):
            raise Unknown(f"store {ty}", "a store through a pointer the analysis does not know")
        if p.buf.array is not None:
            raise Unknown(f"store {ty} into {p.buf.what}", "a store into an argument")
        if p.buf.what.startswith("global"):
            raise Unknown(f"store {ty} into {p.buf.what}", "a store into a global")
        if ty.startswith("{") or ty.startswith("["):
            raise Unknown(f"store {ty}", "an aggregate store")
        p.buf.cells[p.off] = (ty, v)

    def _call(self, c):
        cname, args, tys = c[3]
        vals = [self.val(o) for o in args]
        if cname.startswith(_FREE_CALLS):
            return None
        if cname.startswith("llvm.expect"):
            return vals[0]
        if cname in ("NRT_MemInfo_alloc_aligned", "NRT_MemInfo_alloc_safe_aligned", "NRT_MemInfo_alloc",
                     "NRT_MemInfo_alloc_safe"):
            mi = _Buffer("a MemInfo")
            mi.cells[0] = ("ptr", _Ptr(_Buffer(_ALLOCATED), 0))
            return _Ptr(mi, 0)
        if cname in ("NRT_MemInfo_data_fast", "NRT_MemInfo_data"):
            mi = vals[0]
            if not isinstance(mi, _Ptr) or mi.buf.what != "a MemInfo":
                raise Unknown(cname, "the data of a MemInfo the analysis did not see allocated")
            return mi.buf.cells[0][1]
        if cname.startswith("llvm.memset"):
            p, byte, n = vals[0], vals[1], vals[2]
            if byte != 0 or not isinstance(p, _Ptr) or p.buf.array is not None:
                raise Unknown(cname, "a memset other than zeroing memory of the function's own")
            buf = p.buf
            for k in [k for k in buf.cells if p.off <= k < p.off + n]:
                del buf.cells[k]
            if buf.zero_from is None or (buf.zero_from == (p.off + n, p.off + n)):
                buf.zero_from = (p.off, p.off + n)
            elif not (buf.zero_from[0] <= p.off and p.off + n <= buf.zero_from[1]):
                lo, hi = min(buf.zero_from[0], p.off), max(buf.zero_from[1], p.off + n)
                if any(lo <= k < hi for k in buf.cells):
                    raise Unknown(cname, "zeroing of scattered memory")
                buf.zero_from = (lo, hi)
            return None
        if cname.startswith(("llvm.memcpy", "llvm.memmove")):
            return self._memcpy(vals[0], vals[1], vals[2], cname)
        ints = ("smin", "smax", "umin", "umax", "abs")
        name = _libm_name(cname)
        if cname.startswith("llvm.") and name in ints:
            w = int(_INT.match(tys[0]).group(1))
            a, b = vals[0], vals[1]
            if name == "abs":
                return abs(_signed(a, w)) & ((1 << w) - 1)
            if name[0] == "s":
                a, b = _signed(a, w), _signed(b, w)
            r = min(a, b) if name.endswith("min") else max(a, b)
            return r & ((1 << w) - 1)
        if name == "powi" and cname.startswith("llvm.") and isinstance(vals[0], _F):
            w = int(_INT.match(tys[1]).group(1))
            return _nonlinear(_libm_value("pow", [float(vals[0].v), float(_signed(vals[1], w))]), vals[0])
        if name not in _KNOWN_FLOAT_CALLS or not vals or not all(isinstance(v, _F) for v in vals):
            raise Unknown(f"call @{cname}", "a call the sparsity analysis does not know")
        xs = [float(v.v) for v in vals]
        v = _libm_value(name, xs)
        if name in _NONLINEAR_1 and len(vals) == 1:
            return _nonlinear(v, vals[0])
        if name in _NONLINEAR_2 or name == "powi":
            return _nonlinear(v, *vals)
        if name in _PIECEWISE_CONSTANT:
            return _F(v)
        if name == "fabs":
            return _F(v, vals[0].d1, vals[0].d2)
        if name == "copysign":
            return _F(v, vals[0].d1, vals[0].d2)
        if name in ("minnum", "maxnum", "minimum", "maximum", "fmin", "fmax"):
            self.value_dependent = True
            pick = vals[0] if (v == xs[0]) else vals[1]
            return _F(v, pick.d1, pick.d2)
        if name in ("fma", "fmuladd"):
            prod = _times(None, vals[0], vals[1])
            return _linear(v, prod, vals[2])
        raise Unknown(f"call @{cname}", "a call the sparsity analysis does not know")

    def _memcpy(self, dst, src, n, cname):
        if not (isinstance(dst, _Ptr) and isinstance(src, _Ptr)) or dst.buf.array is not None:
            raise Unknown(cname, "a copy the sparsity analysis cannot follow")
        if src.buf.array is not None:
            a = src.buf.array
            item = a.dtype.itemsize
            if src.off % item or n % item or a.dtype.kind != "f":
                raise Unknown(cname, "a copy of part of an element")
            ty = "double" if item == 8 else "float"
            for k in range(n // item):
                dst.buf.cells[dst.off + k * item] = (ty, self._load(_Ptr(src.buf, src.off + k * item), ty))
            return None
        moved = {k - src.off + dst.off: v for k, v in src.buf.cells.items() if src.off <= k < src.off + n}
        if src.buf.zero_from and not (src.buf.zero_from[1] <= src.off or src.off + n <= src.buf.zero_from[0]):
            raise Unknown(cname, "a copy of zeroed memory")
        dst.buf.cells.update(moved)
        return None


_FLOAT_BINARY = frozenset({"fadd", "fsub", "fmul", "fdiv", "frem"})
_INT_BINARY = frozenset({"add", "sub", "mul", "shl", "lshr", "ashr", "and", "or", "xor", "sdiv", "udiv", "srem",
                         "urem"})
_WIDTHS: dict = {}


def _width(ty: str) -> int:
    """The bit width of an integer type's text (``i64`` -> 64), memoized."""
    w = _WIDTHS.get(ty)
    if w is None:
        w = _WIDTHS[ty] = int(_INT.match(ty).group(1))
    return w


def _float_op(op, x, y, ty):
    """IEEE arithmetic of one LLVM float instruction (Python floats are doubles; a
    division by zero or a float32 goes through NumPy)."""
    if ty == "double":
        try:
            if op == "fadd":
                return x + y
            if op == "fsub":
                return x - y
            if op == "fmul":
                return x * y
            if op == "fdiv":
                return x / y
        except ZeroDivisionError:
            pass
        x, y = np.float64(x), np.float64(y)
    else:
        x, y = np.float32(x), np.float32(y)
    with np.errstate(all="ignore"):
        return {"fadd": np.add, "fsub": np.subtract, "fmul": np.multiply, "fdiv": np.divide,
                "frem": np.fmod}[op](x, y)


#: the C library's functions as Python's math module calls them (the compiled code calls
#: the same libm, so the values, and the branches taken on them, agree)
_C_LIBM = {name: getattr(math, name) for name in (
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "exp",
    "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "erf", "erfc", "lgamma", "pow", "atan2",
    "floor", "ceil", "trunc", "fabs", "copysign")}
_C_LIBM["tgamma"] = math.gamma


def _libm_value(name, xs):
    """The value of a libm call (math's C functions where they exist; NumPy for the
    rest and where math raises, for IEEE infinities and NaNs)."""
    fn = _C_LIBM.get(name)
    if fn is not None:
        try:
            return float(fn(*xs))
        except (ValueError, OverflowError):
            pass
    with np.errstate(all="ignore"):
        fn = {"exp10": lambda t: 10.0 ** t, "atan2": np.arctan2, "pow": np.power, "hypot": np.hypot,
              "copysign": np.copysign, "minnum": np.fmin, "maxnum": np.fmax, "minimum": np.minimum,
              "maximum": np.maximum, "fmin": np.fmin, "fmax": np.fmax,
              "fma": lambda a, b, c: a * b + c, "fmuladd": lambda a, b, c: a * b + c,
              "roundeven": np.round, "nearbyint": np.rint, "rint": np.rint,
              "round": lambda t: math.copysign(math.floor(abs(t) + 0.5), t),
              "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "acosh": np.arccosh,
              "atanh": np.arctanh}.get(name) or getattr(np, name, None)
        if fn is None:
            raise Unknown(f"call of {name}", "a call the sparsity analysis does not know")
        try:
            return float(fn(*xs))
        except (ValueError, OverflowError):
            return float("nan")


def _signed(v, w):
    return v - (1 << w) if v >> (w - 1) & 1 else v


def _trunc_div(a, b):
    if b == 0:
        raise Unknown("integer division by zero", "undefined behaviour")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _compare(pred, a, b):
    return {"eq": a == b, "ne": a != b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b}[pred]


def _pointer_compare(pred, a, b):
    if pred in ("eq", "ne"):
        same = (a is None and b is None) or (isinstance(a, _Ptr) and a == b)
        return int(same if pred == "eq" else not same)
    if isinstance(a, _Ptr) and isinstance(b, _Ptr) and a.buf is b.buf:
        return int(_compare(pred[1:], a.off, b.off))
    raise Unknown(f"icmp {pred} ptr", "an ordered comparison of unrelated pointers")


def _fcompare(pred, a, b):
    unordered = math.isnan(a) or math.isnan(b)
    if pred == "true":
        return True
    if pred == "false":
        return False
    if pred == "ord":
        return not unordered
    if pred == "uno":
        return unordered
    base = {"eq": a == b, "ne": a != b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b}[pred[1:]]
    return (unordered or base) if pred[0] == "u" else (not unordered and base)


# ----------------------------------------------------------------------------------
# Entry point
# ----------------------------------------------------------------------------------


class Analysis:
    """One function's decoded IR, run once per call of :meth:`run`."""

    def __init__(self, fn, limit: int = 10_000_000):
        self._interp = _Interpreter(fn, limit)

    def run(self, args: list):
        """Run on ``args`` (the flattened parameters: ints, :class:`_F` floats,
        :class:`_Ptr` pointers, None); returns (the function's return value, whether
        the path depended on values, see ``_Interpreter.run``)."""
        status = self._interp.run(args)
        return status, self._interp.value_dependent
