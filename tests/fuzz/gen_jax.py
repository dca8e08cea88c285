"""Random JAX functions in the subset zymase's StableHLO rules cover, one module per seed.

``generate_jax(seed)`` returns the text of a Python module defining ``f(x)`` / ``f(x, y)``
/ ``f(x, y, z)`` (float arrays of rank 0 to 3, dimensions 2 to 4, all float32 or all
float64) returning a float scalar, and ``make_args(p)`` giving the arguments at point
p = 0 or 1. The checker (check_jax.py) compares zymase's reverse and forward modes with
each other, with ``jax.grad`` / ``jax.jvp`` of the same function (finite differences
where JAX cannot differentiate it), and ``zymase.jax.jit(f)`` with ``f``.

Constructs (features): elementwise math with arguments kept in their domains and
broadcasting between compatible shapes; reshape, transpose, broadcast_to, expand_dims;
basic slices, ``x[i]``, ``.at[...].set/add/mul``, integer-array indexing (gather and
scatter with duplicate indices); dynamic slices and updates at data-dependent indices;
concatenate, stack, pad, flip, roll; ``jnp.dot`` / ``@`` / ``einsum`` (with each other
and with constant weights); reductions (sum, max, min, mean, logsumexp) over an axis or
all; ``jnp.where`` / compare / ``lax.select`` / clip; ``lax.scan``; ``lax.fori_loop``
(counted, also updating one element or a window per step, also running a while_loop or a
scan in its body); ``lax.while_loop`` with a data-dependent
exit (bounded: at most 8 trips); ``lax.cond`` and ``lax.switch`` on data. Values stay
bounded (tanh/sin wrap what could grow), so primals are finite by construction.
"""

from __future__ import annotations

import random
from math import prod

JAX_FEATURES = (
    "elementwise", "broadcast", "reshape", "slices", "indexing", "dynamic", "concat", "contract",
    "reductions", "select", "scan", "fori", "while", "cond", "float32", "nested",
)


def _broadcastable(small: tuple, big: tuple) -> bool:
    """Whether ``small`` broadcasts to ``big`` without changing ``big`` (NumPy's rule)."""
    if len(small) > len(big):
        return False
    return all(s in (1, b) for s, b in zip(reversed(small), reversed(big)))


def _fmt(shape: tuple) -> str:
    return f"({shape[0]},)" if len(shape) == 1 else "(" + ", ".join(map(str, shape)) + ")"


class JaxProgram:
    def __init__(self, seed: int, features: set[str] | None = None, size: int = 6):
        self.rng = random.Random(seed)
        self.seed = seed
        self.on = set(JAX_FEATURES if features is None else features)
        self.size = size
        self.counter = 0
        self.lines: list[str] = []
        self.helpers: list[str] = []
        self.vals: list[tuple[str, tuple]] = []  # (name, shape) of every array value in f
        self.unused: list[str] = []  # values not read yet: they reach the result at the end
        self.dtype = "float32" if self.feature("float32", 0.35) else "float64"
        self._hit = False  # whether expr() used a leaf of the full target shape

    # ------------------------------------------------------------------ helpers
    def fresh(self, p: str) -> str:
        self.counter += 1
        return f"{p}{self.counter}"

    def feature(self, name: str, p: float) -> bool:
        return name in self.on and self.rng.random() < p

    def const(self) -> str:
        r = self.rng
        return f"{r.choice([0.25, 0.5, 0.75, 1.5, 2.0, 0.3, 0.7, 1.1, 1.3, 0.9]) * r.choice([1, -1])}"

    def pick(self, pred=lambda s: True) -> tuple[str, tuple] | None:
        """A value whose shape satisfies ``pred``, preferring values not read yet."""
        cands = [v for v in self.vals if pred(v[1])]
        if not cands:
            return None
        fresh = [v for v in cands if v[0] in self.unused]
        v = self.rng.choice(fresh) if fresh and self.rng.random() < 0.7 else self.rng.choice(cands)
        self.use(v[0])
        return v

    def use(self, name: str) -> None:
        if name in self.unused:
            self.unused.remove(name)

    def emit(self, expr: str, shape: tuple, prefix: str = "t") -> str:
        name = self.fresh(prefix)
        self.lines.append(f"    {name} = {expr}")
        self.vals.append((name, shape))
        self.unused.append(name)
        return name

    # ------------------------------------------------------------------ elementwise
    def leaf(self, env, shape) -> str:
        r = self.rng
        cands = [(n, s) for n, s in env if _broadcastable(s, shape)]
        if cands and r.random() < 0.85:
            n, s = r.choice(cands)
            self.use(n)
            self._hit = self._hit or s == shape
            return n
        return f"({self.const()})"

    def unary(self, a: str) -> str:
        forms = ["jnp.sin({a})", "jnp.cos({a})", "jnp.tanh({a})", "jnp.arctan({a})", "jnp.exp(0.5 * jnp.sin({a}))",
                 "jnp.log(1.0 + {a} * {a})", "jnp.sqrt({a} * {a} + 0.25)", "jnp.log1p({a} * {a})",
                 "jnp.expm1(0.3 * jnp.tanh({a}))", "({a} * {a})", "jax.nn.sigmoid({a})", "lax.rsqrt({a} * {a} + 1.0)",
                 "jnp.power({a} * {a} + 0.5, 1.5)", "jnp.tanh({a}) ** 3", "jax.nn.softplus({a})",
                 "jax.scipy.special.erf({a})", "jnp.cosh(0.5 * jnp.tanh({a}))", "jnp.arcsinh({a})",
                 "jnp.arccos(0.9 * jnp.tanh({a}))", "jnp.reciprocal(1.0 + {a} * {a})", "jnp.cbrt({a} * {a} + 0.5)",
                 "jnp.log2(1.0 + {a} * {a})", "(-{a})"]
        if "select" in self.on:
            forms += ["jnp.abs({a})", "jax.nn.relu({a})"]
        return self.rng.choice(forms).format(a=a)

    def binary(self, a: str, b: str) -> str:
        forms = ["({a} + {b})", "({a} - {b})", "({a} * {b})", "({a} / (1.0 + {b} * {b}))",
                 "jnp.arctan2({a}, 0.5 + {b} * {b})", "jnp.power(0.5 + {a} * {a}, jnp.tanh({b}))",
                 "jnp.logaddexp({a}, {b})", "jnp.hypot({a}, 0.5 + {b} * {b})"]
        if "select" in self.on:
            forms += ["jnp.maximum({a}, {b})", "jnp.minimum({a}, {b})"]
        return self.rng.choice(forms).format(a=a, b=b)

    def expr(self, env, shape, depth=2) -> str:
        """An elementwise expression of ``shape`` (values of ``env`` that broadcast to it)."""
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            return self.leaf(env, shape)
        if r.random() < 0.4:
            return self.unary(self.expr(env, shape, depth - 1))
        return self.binary(self.expr(env, shape, depth - 1), self.expr(env, shape, depth - 1))

    def bounded(self, env, shape, depth=2) -> str:
        e = self.expr(env, shape, depth)
        return self.rng.choice([f"jnp.tanh({e})", f"jnp.sin({e})", f"(0.5 * jnp.cos({e}))"])

    def shaped(self, env, shape, depth=2) -> str:
        """A bounded expression of exactly ``shape`` and the arguments' dtype: one leaf
        of that shape makes the whole expression that shape (the others broadcast)."""
        self._hit = False
        e = self.bounded(env, shape, depth)
        if not self._hit:
            exact = [n for n, s in env if s == shape]
            if exact:
                n = self.rng.choice(exact)
                self.use(n)
                e = f"({e} + 0.5 * {n})"
            else:
                n = self.rng.choice(env)[0]  # no value has the shape: a broadcast one that still varies
                self.use(n)
                return f"jnp.broadcast_to({e} + 0.3 * jnp.mean({n}), {_fmt(shape) if shape else '()'}).astype(x.dtype)"
        # jnp functions of Python constants alone are float64 arrays, which would promote
        # a float32 value (and a loop carry or an update must keep its dtype)
        return f"({e}).astype(x.dtype)" if self.dtype == "float32" else e

    def env(self) -> list[tuple[str, tuple]]:
        return list(self.vals)

    # ------------------------------------------------------------------ statements
    def s_elementwise(self):
        _, shape = self.pick()
        self.emit(self.shaped(self.env(), shape), shape)

    def s_broadcast(self):
        r = self.rng
        picked = self.pick(lambda s: len(s) <= 2)
        if picked is None:
            return self.s_elementwise()
        name, shape = picked
        k = r.randint(2, 3)
        forms = [(f"jnp.broadcast_to({name}, {_fmt((k,) + shape)})", (k,) + shape),
                 (f"jnp.expand_dims({name}, 0) * jnp.ones({_fmt((k,) + shape)}, {name}.dtype)", (k,) + shape)]
        if len(shape) == 1:
            other = self.pick(lambda s: len(s) == 1)
            forms.append((f"{name}[:, None] * jnp.tanh({other[0]})[None, :]", shape + other[1]))
            forms.append((f"jnp.outer({name}, jnp.sin({other[0]}))", shape + other[1]))
        if len(shape) >= 1:
            forms.append((f"jnp.repeat({name}, 2, axis=0)", (2 * shape[0],) + shape[1:]))
        expr, new = r.choice(forms)
        self.emit(expr, new)

    def s_reshape(self):
        r = self.rng
        picked = self.pick(lambda s: prod(s) > 1)
        if picked is None:
            return self.s_elementwise()
        name, shape = picked
        n = prod(shape)
        if len(shape) >= 2 and r.random() < 0.5:
            perm = list(range(len(shape)))
            while perm == sorted(perm):
                r.shuffle(perm)
            form = r.choice(["transpose", "swap"] if len(shape) == 2 else ["transpose", "swap", "moveaxis"])
            if form == "transpose":
                self.emit(f"jnp.transpose({name}, {tuple(perm)})", tuple(shape[p] for p in perm))
            elif form == "swap":
                new = list(shape)
                new[0], new[-1] = new[-1], new[0]
                self.emit(f"jnp.swapaxes({name}, 0, -1)", tuple(new))
            else:
                self.emit(f"jnp.moveaxis({name}, -1, 0)", (shape[-1],) + shape[:-1])
            return
        divisors = [d for d in range(2, n) if n % d == 0]
        if divisors and r.random() < 0.6:
            d = r.choice(divisors)
            new = (d, n // d)
        else:
            new = (n,)
        if new == shape:
            new = (n,) if len(shape) > 1 else (1, n)
        self.emit(r.choice([f"{name}.reshape({_fmt(new)})", f"jnp.reshape({name}, {_fmt(new)})"]), new)

    def _slice(self, dim: int) -> tuple[str, int]:
        r = self.rng
        forms = [("1:", dim - 1), (":-1", dim - 1), ("::2", (dim + 1) // 2), ("1::2", dim // 2), ("::-1", dim),
                 (":", dim)] + ([(f"{dim - 2}:", 2)] if dim >= 2 else [])
        return r.choice([f for f in forms if f[1] >= 1])

    def s_slices(self):
        r = self.rng
        picked = self.pick(lambda s: len(s) >= 1)
        if picked is None:
            return self.s_elementwise()
        name, shape = picked
        if r.random() < 0.35:  # x[i] / x[..., i]: an integer index drops the axis
            ax = r.randrange(len(shape))
            i = r.choice([0, -1, r.randrange(shape[ax])])
            idx = ", ".join([":"] * ax + [str(i)])
            self.emit(f"{name}[{idx}]", shape[:ax] + shape[ax + 1:])
            return
        parts, new = [], []
        for d in shape:
            s, n = self._slice(d)
            parts.append(s)
            new.append(n)
        self.emit(f"{name}[{', '.join(parts)}]", tuple(new))

    def s_indexing(self):
        r = self.rng
        picked = self.pick(lambda s: len(s) >= 1)
        if picked is None:
            return self.s_elementwise()
        name, shape = picked
        n = shape[0]
        kind = r.choice(["set", "add", "mul", "slice_set", "gather", "scatter_add", "take"])
        row = shape[1:]
        env = self.env()
        if kind in ("set", "add", "mul"):
            i = r.choice([0, -1, r.randrange(n)])
            self.emit(f"{name}.at[{i}].{kind}({self.shaped(env, row)})", shape)
        elif kind == "slice_set" and n >= 2:
            self.emit(f"{name}.at[1:].set({self.shaped(env, (n - 1,) + row)})", shape)
        elif kind in ("gather", "slice_set"):
            idx = [r.randrange(n) for _ in range(r.randint(2, 4))]
            self.emit(f"{name}[jnp.array({idx})]", (len(idx),) + row)
        elif kind == "take":
            ax = r.randrange(len(shape))
            idx = [r.randrange(shape[ax]) for _ in range(r.randint(2, 4))]
            self.emit(f"jnp.take({name}, jnp.array({idx}), axis={ax})",
                      shape[:ax] + (len(idx),) + shape[ax + 1:])
        else:  # duplicate indices: the adjoint of each update is the same row's
            idx = [r.randrange(n) for _ in range(r.randint(2, 4))]
            upd = self.shaped(env, (len(idx),) + row)
            self.emit(f"{name}.at[jnp.array({idx})].add({upd})", shape)

    def data_index(self, limit: int) -> str:
        """An int32 index in [0, limit) computed from the data (a kink for finite differences)."""
        src = self.pick()
        return f"jnp.clip(jnp.floor(jnp.sum({src[0]}) * 2.0), 0, {limit - 1}).astype(int)"

    def s_dynamic(self):
        r = self.rng
        picked = self.pick(lambda s: len(s) >= 1 and s[0] >= 2)
        if picked is None:
            return self.s_elementwise()
        name, shape = picked
        k = self.fresh("k")
        self.lines.append(f"    {k} = {self.data_index(shape[0] - 1)}")
        kind = r.choice(["slice", "update", "index", "index_update"])
        zeros = ", ".join(["0"] * (len(shape) - 1))
        starts = f"({k}, {zeros})" if zeros else f"({k},)"
        if kind == "slice":
            sizes = (2,) + shape[1:]
            self.emit(f"lax.dynamic_slice({name}, {starts}, {_fmt(sizes)})", sizes)
        elif kind == "update":
            upd = (2,) + shape[1:]
            self.emit(f"lax.dynamic_update_slice({name}, {self.shaped(self.env(), upd)}, {starts})", shape)
        elif kind == "index":
            self.emit(f"{name}[{k}]", shape[1:])
        else:
            self.emit(f"{name}.at[{k}].add({self.shaped(self.env(), shape[1:])})", shape)

    def s_concat(self):
        r = self.rng
        picked = self.pick(lambda s: len(s) >= 1)
        if picked is None:
            return self.s_elementwise()
        name, shape = picked
        kind = r.choice(["concat", "stack", "pad", "flip", "roll"])
        env = self.env()
        if kind == "concat":
            ax = r.randrange(len(shape))
            other = list(shape)
            other[ax] = r.randint(1, 3)
            new = list(shape)
            new[ax] += other[ax]
            self.emit(f"jnp.concatenate([{name}, {self.shaped(env, tuple(other))}], axis={ax})", tuple(new))
        elif kind == "stack":
            self.emit(f"jnp.stack([{name}, {self.shaped(env, shape)}])", (2,) + shape)
        elif kind == "pad":
            widths = [(r.randint(0, 2), r.randint(0, 1)) for _ in shape]
            new = tuple(d + a + b for d, (a, b) in zip(shape, widths))
            value = r.choice(["", ", constant_values=0.5"])
            self.emit(f"jnp.pad({name}, {tuple(widths)}{value})", new)
        elif kind == "flip":
            self.emit(f"jnp.flip({name}, axis={r.randrange(len(shape))})", shape)
        else:
            self.emit(f"jnp.roll({name}, {r.choice([1, -1, 2])}, axis={r.randrange(len(shape))})", shape)

    def weights(self, rows: int, cols: int, like: str) -> str:
        """A constant matrix (no argument of f): values spread over [-1, 1]."""
        return f"jnp.linspace(-1.0, 1.0, {rows * cols}, dtype={like}.dtype).reshape({rows}, {cols})"

    def s_contract(self):
        r = self.rng
        picked = self.pick(lambda s: 1 <= len(s) <= 3)
        if picked is None:
            return self.s_elementwise()
        name, shape = picked
        same = [v for v in self.vals if v[1] == shape and v[0] != name]
        other = r.choice(same)[0] if same and r.random() < 0.7 else f"jnp.cos({name})"
        if other in [v[0] for v in self.vals]:
            self.use(other)
        if len(shape) == 1:
            k = r.randint(2, 3)
            forms = [(f"jnp.dot({name}, {other})", ()), (f"jnp.einsum('i,i->', {name}, {other})", ()),
                     (f"{name} @ {self.weights(shape[0], k, name)}", (k,)),
                     (f"jnp.einsum('i,j->ij', {name}, {other})", shape + shape)]
        elif len(shape) == 2:
            m, n = shape
            k = r.randint(2, 3)
            forms = [(f"{name} @ {other}.T", (m, m)), (f"jnp.dot({name}.T, {other})", (n, n)),
                     (f"jnp.matmul({name}, {self.weights(n, k, name)})", (m, k)),
                     (f"jnp.einsum('ij,ij->j', {name}, {other})", (n,)),
                     (f"jnp.einsum('ij,kj->ik', {name}, {other})", (m, m)),
                     (f"{name} @ jnp.sin({other}[0])", (m,))]
        else:
            b, m, n = shape
            forms = [(f"jnp.einsum('bij,bkj->bik', {name}, {other})", (b, m, m)),
                     (f"jnp.matmul({name}, jnp.swapaxes({other}, -1, -2))", (b, m, m)),
                     (f"jnp.einsum('bij,bij->i', {name}, {other})", (m,)),
                     (f"{name} @ {self.weights(n, 2, name)}", (b, m, 2))]
        expr, new = r.choice(forms)
        self.emit(f"jnp.tanh({expr})" if r.random() < 0.6 else expr, new)

    def s_reductions(self):
        r = self.rng
        picked = self.pick(lambda s: len(s) >= 1)
        if picked is None:
            return self.s_elementwise()
        name, shape = picked
        fn = r.choice(["jnp.sum", "jnp.max", "jnp.min", "jnp.mean", "jax.nn.logsumexp", "jnp.sum"])
        if fn in ("jnp.max", "jnp.min") and "select" not in self.on:
            fn = "jnp.sum"
        arg = name if r.random() < 0.5 else self.unary(name)
        if r.random() < 0.3:
            self.emit(f"{fn}({arg})", ())
            return
        ax = r.randrange(len(shape))
        keep = r.random() < 0.3
        new = shape[:ax] + ((1,) if keep else ()) + shape[ax + 1:]
        self.emit(f"{fn}({arg}, axis={ax}{', keepdims=True' if keep else ''})", new)

    def s_select(self):
        r = self.rng
        name, shape = self.pick()
        env = self.env()
        forms = [f"jnp.where({name} > {self.expr(env, shape, 1)}, {self.expr(env, shape, 1)}, {self.expr(env, shape, 1)})",
                 f"jnp.clip({name}, {r.choice(['-0.5', '-0.8'])}, {r.choice(['0.4', '0.9'])})",
                 f"lax.select({name} > {self.const()}, {self.unary(name)}, {self.expr(env, shape, 1)} * jnp.ones_like({name}))",
                 f"jnp.where({name} < 0.0, 0.1 * {name}, {name})",
                 f"jnp.where(jnp.abs({name}) < {r.choice(['0.5', '0.8'])}, jnp.sin({name}), 0.5)"]
        self.emit(r.choice(forms), shape)

    def body_expr(self, env, shape) -> str:
        """A loop body's update: contracting (0.5 * old) plus a bounded term."""
        return self.shaped(env, shape)

    def s_scan(self):
        r = self.rng
        picked = self.pick(lambda s: len(s) >= 1)
        if picked is None:
            return self.s_elementwise()
        name, shape = picked
        row = shape[1:]
        body = self.fresh("scan_body")
        init = self.pick(lambda s: s == row)
        init_expr = init[0] if init else f"jnp.zeros({_fmt(row) if row else '()'}, {name}.dtype) + 0.5"
        closed = [v for v in self.vals if _broadcastable(v[1], row)]
        env = [("c", row), ("xs", row)] + ([r.choice(closed)] if closed else [])
        for n, _ in env[2:]:
            self.use(n)
        self.lines.append(f"    def {body}(c, xs):")
        if r.random() < 0.3:  # a branch on the data inside the loop body
            self.lines.append(f"        c = lax.cond(jnp.sum(xs) > {self.const()}, lambda c: 0.5 * c + "
                              f"{self.body_expr(env, row)}, lambda c: {self.body_expr(env, row)}, c)")
        else:
            self.lines.append(f"        c = 0.5 * c + {self.body_expr(env, row)}")
        self.lines.append(f"        return c, {self.shaped(env, row, 1)}")
        c, ys = self.fresh("t"), self.fresh("t")
        rev = ", reverse=True" if r.random() < 0.3 else ""
        self.lines.append(f"    {c}, {ys} = lax.scan({body}, {init_expr}, {name}{rev})")
        self.vals += [(c, row), (ys, shape)]
        self.unused += [c, ys]

    def s_fori(self):
        r = self.rng
        name, shape = self.pick()
        body = self.fresh("fori_body")
        trips = r.randint(2, 5)
        closed = [v for v in self.vals if _broadcastable(v[1], shape) and v[0] != name]
        env = [("v", shape)] + ([r.choice(closed)] if closed else [])
        for n, _ in env[1:]:
            self.use(n)
        self.lines.append(f"    def {body}(i, v):")
        # (a separate stream decides nesting, so that programs without it stay as they were)
        if "nested" in self.on and random.Random(self.seed * 31 + self.counter).random() < 0.35:
            self.nested_loop(shape)
        elif shape and r.random() < 0.3:  # one element per step, at the counter
            self.lines.append(f"        return v.at[i % {shape[0]}].add(0.3 * jnp.tanh(v[(i + 1) % {shape[0]}]))")
        elif shape and shape[0] >= 2 and r.random() < 0.3:  # a window at the counter, updated in place
            starts = ", ".join([f"i % {shape[0] - 1}"] + ["0"] * (len(shape) - 1))
            sizes = _fmt((2,) + shape[1:])
            self.lines.append(f"        w = lax.dynamic_slice(v, ({starts},), {sizes})")
            self.lines.append(f"        return lax.dynamic_update_slice(v, 0.5 * w + 0.3 * jnp.sin(w[::-1]), ({starts},))")
        else:
            env.append(("(0.1 * i).astype(v.dtype)", ()))
            self.lines.append(f"        return 0.5 * v + {self.body_expr(env, shape)}")
        self.emit(f"lax.fori_loop(0, {trips}, {body}, {name})", shape)

    def nested_loop(self, shape):
        """A fori_loop body (state ``v``, counter ``i``) running a loop of its own: a
        data-dependent while_loop, or a scan over ``v``'s rows."""
        if shape and self.rng.random() < 0.5:
            self.lines.append("        c, ys = lax.scan(lambda c, xs: (0.5 * c + jnp.tanh(xs * c), c * xs), v[0], v)")
            self.lines.append("        return 0.5 * v + 0.3 * jnp.sin(ys) + 0.1 * jnp.sum(c)")
            return
        self.lines.append("        def inner_cond(s):")
        self.lines.append(f"            return (s[1] < {self.rng.choice(['1.5', '2.5'])}) & (s[0] < 4)")
        self.lines.append("        def inner_body(s):")
        self.lines.append("            it, t, u = s")
        self.lines.append("            return it + 1, t + 0.5 + 0.2 * jnp.tanh(jnp.sum(u)), 0.5 * u + 0.3 * jnp.sin(u * t)")
        self.lines.append("        _, _, u = lax.while_loop(inner_cond, inner_body, (0, jnp.tanh(jnp.sum(v)) + 0.1 * i, v))")
        self.lines.append("        return u")

    def s_while(self):
        r = self.rng
        name, shape = self.pick()
        src = self.pick()
        cond, body = self.fresh("while_cond"), self.fresh("while_body")
        counted = r.random() < 0.3
        limit = r.choice(["1.5", "2.5"])
        self.lines.append(f"    def {cond}(s):")
        if counted:
            self.lines.append(f"        return s[0] < {r.randint(2, 5)}")
        else:  # the exit depends on the data: t grows by at least 0.2 a trip, at most 8 trips
            self.lines.append(f"        return (s[1] < {limit}) & (s[0] < 8)")
        self.lines.append(f"    def {body}(s):")
        self.lines.append("        it, t, v = s")
        self.lines.append("        t = t + 0.4 + 0.2 * jnp.tanh(jnp.sum(v))")
        self.lines.append(f"        v = 0.5 * v + {self.body_expr([('v', shape), ('t', ())], shape)}")
        self.lines.append("        return it + 1, t, v")
        t, v = self.fresh("t"), self.fresh("t")
        self.lines.append(f"    _, {t}, {v} = lax.while_loop({cond}, {body}, (0, jnp.tanh(jnp.sum({src[0]})), {name}))")
        self.vals += [(t, ()), (v, shape)]
        self.unused += [t, v]

    def s_cond(self):
        r = self.rng
        name, shape = self.pick()
        other = self.pick()
        env = [("a", shape), ("b", other[1])]
        pred = f"jnp.sum({self.unary(name)}) > {self.const()}"
        if r.random() < 0.5:
            t, e = self.fresh("then_"), self.fresh("else_")
            self.lines.append(f"    def {t}(a, b):")
            self.lines.append(f"        return {self.shaped(env, shape)}")
            self.lines.append(f"    def {e}(a, b):")
            self.lines.append(f"        return {self.shaped(env, shape, 1)}")
            self.emit(f"lax.cond({pred}, {t}, {e}, {name}, {other[0]})", shape)
            return
        names = [self.fresh("branch") for _ in range(r.randint(2, 3))]
        for b in names:
            self.lines.append(f"    def {b}(a, b):")
            self.lines.append(f"        return {self.shaped(env, shape)}")
        k = self.fresh("k")
        self.lines.append(f"    {k} = {self.data_index(len(names))}")
        self.emit(f"lax.switch({k}, [{', '.join(names)}], {name}, {other[0]})", shape)

    # ------------------------------------------------------------------ program
    STATEMENTS = {"elementwise": 4, "broadcast": 1, "reshape": 2, "slices": 2, "indexing": 2, "dynamic": 1,
                  "concat": 2, "contract": 2, "reductions": 2, "select": 1, "scan": 1, "fori": 1, "while": 1,
                  "cond": 1}

    def statement(self):
        kinds = [k for k, w in self.STATEMENTS.items() for _ in range(w) if k in self.on or k == "elementwise"]
        getattr(self, f"s_{self.rng.choice(kinds)}")()

    def result(self) -> str:
        terms = []
        for name in self.unused:
            shape = dict(self.vals)[name]
            terms.append(self.rng.choice([f"jnp.sum({name})", f"jnp.sum(jnp.sin({name}))", f"jnp.mean({name} * {name})",
                                          f"{self.const()} * jnp.sum({name})"]) if shape else
                         self.rng.choice([name, f"jnp.tanh({name})", f"{self.const()} * {name}"]))
        return " + ".join(terms)

    @property
    def text(self) -> str:
        r = self.rng
        nargs = r.choice([1, 2, 2, 3])
        names = ["x", "y", "z"][:nargs]
        shapes = []
        for _ in names:
            rank = r.choice([0, 1, 1, 2, 2, 2, 3])
            shapes.append(tuple(r.randint(2, 4 if rank < 3 else 3) for _ in range(rank)))
        if all(not s for s in shapes):
            shapes[0] = (r.randint(2, 4),)
        for n, s in zip(names, shapes):
            self.vals.append((n, s))
            self.unused.append(n)
        for _ in range(self.size):
            self.statement()
        body = "\n".join(self.lines)
        ret = self.result()
        shapes_text = "[" + ", ".join(_fmt(s) if s else "()" for s in shapes) + "]"
        return (f"# fuzz: generated from seed {self.seed} by tests/fuzz/gen_jax.py\n"
                "import jax\nimport jax.numpy as jnp\nimport jax.scipy.special\nimport numpy as np\nfrom jax import lax\n\n"
                f"DTYPE = np.{self.dtype}\nSHAPES = {shapes_text}\n\n# ---- functions\n"
                f"def f({', '.join(names)}):\n{body}\n    return {ret}\n\n"
                "# ---- arguments\ndef make_args(p):\n"
                f"    rng = np.random.default_rng({self.seed} * 2 + p)\n"
                "    return tuple((rng.choice([-1.0, 1.0], s) * rng.uniform(0.3, 1.3, s)).astype(DTYPE) for s in SHAPES)\n")


def generate_jax(seed: int, features: set[str] | None = None, size: int | None = None) -> str:
    rng = random.Random(seed * 7919 + 3)
    return JaxProgram(seed, features, size if size is not None else rng.randint(3, 8)).text
