"""Python API: sparse Jacobians and Hessians, ``jacfwd(f, sparse=True)`` and
``hessian(f, sparse=True)``, returned as ``scipy.sparse`` CSR matrices.

Per call: the sparsity pattern is read off the njit function's LLVM IR (after the same
inlining and pre-AD optimization the engine differentiates) by
:mod:`zymase.analysis.sparsity`, at the call's arguments; its columns are coloured
greedily so that no two columns of one colour share a row (distance-1 colouring of the
column intersection graph for a Jacobian; for a Hessian the same on the symmetric
pattern, a distance-2 colouring of its adjacency graph, or a distance-1 colouring whose
entries are each recoverable from one side by symmetry when that needs fewer colours,
see ``_hessian_plan``); one derivative sweep per colour gives every entry directly: a
forward-mode ``jvp`` per colour for the Jacobian, a forward-over-reverse
Hessian-vector product per colour for the Hessian, seeded with the sum of the colour's
unit vectors. A Hessian entry is read once per pair (the upper triangle) and mirrored.

When the analysis cannot follow the function it refuses (a ZymaseError pointing to
``sparse=False``): a dependence it missed would be a silent zero.
"""

from __future__ import annotations

import numpy as np

from zymase import api
from zymase.api import _label, _options, _param_names, _typeof
from zymase.errors import ZymaseError
from zymase.frontends import numba as zn


def _analysed_ir(disp, argtypes):
    """(llvmlite module, entry name): the function as the engine would differentiate it
    (``frontends.numba.differentiate_numba_ir``'s steps before AD, without a kernel),
    with every value named."""
    from zymase.llvm import toolchain

    ir = zn.numba_ir(disp, argtypes, serial=True)  # prange loops as plain loops: one interpretation
    text, _ = zn.split_nrt_helpers(zn.define_blas_loops(ir.text))
    text = toolchain.prune_refcounts(text)
    text = toolchain.inline_always(zn.mark_callees_inline(text, (ir.entry, *ir.inline_too)))
    text = toolchain.prune_refcounts(toolchain.preopt(toolchain.prune_refcounts(text), 2))
    text = toolchain._run_passes(text, ["instruction_namer"])
    return toolchain.parse_module(text), ir.entry, ir.restype


def _flat_args(values, types, k: int):
    """Numba's flattened parameters for the analysis; argument ``k``'s data are the
    inputs."""
    from numba.core import types as nt

    from zymase.analysis import sparsity as sp

    arrays = [(i, v) for i, v in enumerate(values) if isinstance(v, np.ndarray)]
    for a, (i, u) in enumerate(arrays):
        for j, w in arrays[a + 1:]:
            if np.shares_memory(u, w):
                # the analysis gives each argument its own memory: a write or an input
                # seen through the other name would be missed
                raise sp.Unknown(f"arguments {i} and {j}", "arguments that share memory")
    out = []
    for i, (v, ty) in enumerate(zip(values, types)):
        if isinstance(ty, nt.Array):
            data = sp._Buffer(f"argument {i}", array=v, input_array=(i == k))
            out += [sp._Ptr(sp._Buffer("an argument's MemInfo"), 0), None, v.size, v.itemsize, sp._Ptr(data, 0)]
            out += [int(s) & (2 ** 64 - 1) for s in v.shape] + [int(s) & (2 ** 64 - 1) for s in v.strides]
        elif isinstance(ty, nt.Float):
            out.append(sp._F(float(v)))
        elif isinstance(ty, (nt.Integer, nt.Boolean)):
            out.append(int(v) & (2 ** (ty.bitwidth if isinstance(ty, nt.Integer) else 8) - 1))
        else:
            raise sp.Unknown(f"argument {i} of type {ty}", "an argument type the sparsity analysis does not follow")
    return out


_analyses: dict = {}
#: (function, types, shapes, integer arguments) -> pattern, for functions whose path
#: did not depend on float values or array contents (the same run would repeat)
_patterns: dict = {}


def _pattern_key(disp, types, args, k, order):
    from numba.core import types as nt

    shapes = tuple(np.shape(v) for v in args)
    ints = tuple(int(v) for v, t in zip(args, types) if isinstance(t, (nt.Integer, nt.Boolean)))
    return (disp, types, shapes, ints, k, order)


def sparsity_pattern(disp, names, args, k: int, order: int, api_name: str):
    """For ``order`` 1: the list of input-index sets of each output element (rows of the
    Jacobian); for ``order`` 2: the set of (i, j) pairs of the Hessian's pattern. With
    it the key it is cached under, or None when it holds for these values only."""
    from zymase.analysis import sparsity as sp

    types = tuple(_typeof(v, _label(names, i)) for i, v in enumerate(args))
    key = _pattern_key(disp, types, args, k, order)
    if key in _patterns:
        return _patterns[key], key
    try:
        analysis = _analyses.get((disp, types))
        if analysis is None:
            module, entry, restype = _analysed_ir(disp, types)
            analysis = _analyses[(disp, types)] = (sp.Analysis(module.get_function(entry)), restype, module)
        analysis, restype, _ = analysis
        ret, exc = sp._Ptr(sp._Buffer("the return slot"), 0), sp._Ptr(sp._Buffer("excinfo"), 0)
        status, value_dependent = analysis.run([ret, exc, *_flat_args(args, types, k)])
        if status != 0:
            raise ZymaseError(f"{zn.function_label(disp)} raised an exception at these arguments (Numba status "
                              f"{status})", hint=f"call {zn.function_label(disp)} on them to see it")
        if order == 2:
            cell = ret.buf.cells.get(0)
            pattern = sp.pairs(cell[1].d2) if cell and isinstance(cell[1], sp._F) else set()
        else:
            data = ret.buf.cells.get(32, ("", None))[1]
            size = ret.buf.cells.get(16, ("", 0))[1]
            item = restype.dtype.bitwidth // 8
            if size and not isinstance(data, sp._Ptr):
                raise sp.Unknown("the returned array", "a result whose data the analysis did not see")
            pattern = []
            for e in range(size):
                cell = data.buf.cells.get(data.off + e * item)
                if cell is None and data.buf.array is not None:  # the function returned an argument's data
                    cell = ("", analysis._interp._load(sp._Ptr(data.buf, data.off + e * item), str(restype.dtype)
                                                       .replace("float64", "double").replace("float32", "float")))
                pattern.append(sp.indices(cell[1].d1) if cell and isinstance(cell[1], sp._F) else set())
    except sp.Unknown as err:
        raise ZymaseError(f"{api_name}(..., sparse=True) cannot find the sparsity pattern of "
                          f"{zn.function_label(disp)}: {err.why}", construct=err.construct,
                          function=zn.function_label(disp).strip("'"),
                          hint=f"compute it dense with {api_name}(f) (sparse=False)") from None
    if value_dependent:
        return pattern, None
    _patterns[key] = pattern
    return pattern, key


def colour_columns(rows, n: int) -> list[int]:
    """Greedy colouring of the columns 0..n-1 so that no two columns sharing a row
    (a set in ``rows``) get the same colour, in natural order (optimal for bands)."""
    rows_of = [[] for _ in range(n)]
    for r, cols in enumerate(rows):
        for j in cols:
            rows_of[j].append(r)
    colour = [-1] * n
    for j in range(n):
        taken = {colour[c] for r in rows_of[j] for c in rows[r] if c != j and colour[c] >= 0}
        c = 0
        while c in taken:
            c += 1
        colour[j] = c
    return colour


def _seeds(colour, n, dtype):
    k = max(colour, default=-1) + 1
    seeds = np.zeros((k, n), dtype)
    seeds[colour, np.arange(n)] = 1.0
    return seeds


def _check_x(disp, names, args, k, api_name):
    x = args[k]
    if not (isinstance(x, np.ndarray) and x.ndim == 1 and x.dtype.kind == "f"):
        raise ZymaseError(f"{api_name}(..., sparse=True) differentiates {_label(names, k)} of "
                          f"{zn.function_label(disp)}, which must be a 1-D float array, got {type(x).__name__} "
                          f"{api._short(x)}", hint=f"use {api_name}(f) (dense) for other arguments")


def _single_argnum(argnums, names, api_name):
    if not isinstance(argnums, (int, np.integer)):
        raise ZymaseError(f"{api_name}(..., sparse=True) takes one argument number, got argnums={argnums}",
                          hint=f"use {api_name}(f, argnums=...) without sparse=True for tuples")
    return api._argnums(argnums, len(names))[0]


#: what the last sparse call did, for benchmarks and tests: colours (sweeps) and
#: structural nonzeros
last = {}


#: pattern key -> (seeds, rows, cols, colour of each entry's column, off-diagonal
#: entries), the work a cached pattern leaves for each call
_plans: dict = {}


def _hessian_plan(pattern, n):
    """Colouring and recovery indices for a Hessian pattern (pairs in both orders): for
    each upper-triangle entry (i, j) the sweep and row it is read from; the strict upper
    triangle is mirrored. Two colourings are tried and the valid one with fewer colours
    kept: a distance-2 colouring (every entry read directly as row i of column j's
    sweep) and a distance-1 colouring, largest degree first, used only if every entry
    is recoverable from one side, (i, j) from the sweep of j's colour when no other
    column in row i has that colour, or else (j, i) likewise (symmetric direct recovery,
    what a star colouring guarantees: an arrow takes two sweeps instead of n)."""
    rows_of = [set() for _ in range(n)]
    for i, j in pattern:
        rows_of[i].add(j)
    upper = np.array(sorted((i, j) for i, j in pattern if i <= j), dtype=np.int64).reshape(-1, 2)
    rows, cols = upper[:, 0], upper[:, 1]
    colour = np.array(colour_columns(rows_of, n), dtype=np.int64)
    read_row, read_colour = rows, colour[cols]
    symmetric = _symmetric_recovery(rows_of, n, rows, cols)
    if symmetric is not None and symmetric[0].max(initial=-1) < colour.max(initial=-1):
        colour, read_row, read_colour = symmetric
    return _seeds(list(colour), n, np.float64), rows, cols, read_row, read_colour, np.nonzero(rows != cols)[0]


def _symmetric_recovery(rows_of, n, rows, cols):
    """(colour, read row, read colour per entry) of a distance-1 colouring whose
    entries are all recoverable from one side, or None."""
    colour = [-1] * n
    for j in sorted(range(n), key=lambda v: -len(rows_of[v])):
        taken = {colour[k] for k in rows_of[j] if k != j}
        c = 0
        while c in taken:
            c += 1
        colour[j] = c
    counts = []
    for i in range(n):
        cnt: dict = {}
        for k in rows_of[i]:
            cnt[colour[k]] = cnt.get(colour[k], 0) + 1
        counts.append(cnt)
    read_row, read_colour = np.empty_like(rows), np.empty_like(rows)
    for e, (i, j) in enumerate(zip(rows.tolist(), cols.tolist())):
        if counts[i][colour[j]] == 1:
            read_row[e], read_colour[e] = i, colour[j]
        elif counts[j][colour[i]] == 1:
            read_row[e], read_colour[e] = j, colour[i]
        else:
            return None
    return np.array(colour, dtype=np.int64), read_row, read_colour


def _scipy_sparse():
    try:
        from scipy import sparse
    except ImportError:
        raise ZymaseError("sparse=True returns scipy.sparse matrices, and scipy is not installed",
                          hint="pip install 'zymase[sparse]' (or scipy)") from None
    return sparse


def sparse_hessian(f, argnums, options):
    """``hessian(f, argnums, sparse=True)``."""
    sparse = _scipy_sparse()

    preopt, cache, strong_zero = options
    disp, _ = _options(f, preopt, cache, strong_zero)
    names = _param_names(disp)
    k = _single_argnum(argnums, names, "hessian")
    hvp = api.hvp(f, argnums=k, preopt=preopt, cache=cache, strong_zero=strong_zero)

    def sparse_hessian_fn(*args):
        from zymase.api_second_order import _complete

        args = _complete(disp, names, args)
        _check_x(disp, names, args, k, "hessian")
        x = args[k]
        api._check_result(disp, tuple(_typeof(v, _label(names, i)) for i, v in enumerate(args)),
                          need_float=True, api="hessian")
        n = x.size
        pattern, key = sparsity_pattern(disp, names, args, k, 2, "hessian")
        plan = _plans.get(key)
        if plan is None:
            plan = _hessian_plan(pattern, n)
            if key is not None:
                _plans[key] = plan
        seeds, rows, cols, read_row, read_colour, mirror = plan
        products = np.array([hvp(*args, s) for s in seeds], dtype=x.dtype).reshape(len(seeds), n)
        upper = products[read_colour, read_row]  # entry (i, j), i <= j
        vals = np.concatenate([upper, upper[mirror]])
        r = np.concatenate([rows, cols[mirror]])
        c = np.concatenate([cols, rows[mirror]])
        last.update(colours=len(seeds), nonzeros=len(vals))
        return sparse.csr_matrix((vals, (r, c)), shape=(n, n), dtype=x.dtype)

    return sparse_hessian_fn


def sparse_jacfwd(f, argnums, options):
    """``jacfwd(f, argnums, sparse=True)`` of a function returning a 1-D float array."""
    from numba.core import types as nt

    sparse = _scipy_sparse()
    preopt, cache, strong_zero = options
    disp, _ = _options(f, preopt, cache, strong_zero)
    names = _param_names(disp)
    k = _single_argnum(argnums, names, "jacfwd")

    def sparse_jacfwd_fn(*args):
        from zymase.api_second_order import _complete

        args = _complete(disp, names, args)
        _check_x(disp, names, args, k, "jacfwd")
        x = args[k]
        rt = zn.numba_ir(disp, tuple(_typeof(v, _label(names, i)) for i, v in enumerate(args))).restype
        if not (isinstance(rt, nt.Array) and rt.ndim == 1 and rt.layout == "C" and isinstance(rt.dtype, nt.Float)):
            raise ZymaseError(f"jacfwd(..., sparse=True) needs {zn.function_label(disp)} to return a contiguous "
                              f"1-D float array, but it returns {rt}", hint="use jacfwd(f) (dense) for other results")
        rows, _ = sparsity_pattern(disp, names, args, k, 1, "jacfwd")
        n, m = x.size, len(rows)
        colour = colour_columns(rows, n)
        seeds = _seeds(colour, n, x.dtype)
        products = []
        for s in seeds:
            tangents = tuple(s if i == k else None for i in range(len(args)))
            products.append(np.asarray(api.jvp(f, args, tangents, preopt=preopt, cache=cache,
                                               strong_zero=strong_zero)[1]))
        entries = sorted((i, j) for i, cols in enumerate(rows) for j in cols)
        vals = np.array([products[colour[j]][i] for i, j in entries], dtype=np.dtype(str(rt.dtype)))
        last.update(colours=len(seeds), nonzeros=len(entries))
        return sparse.csr_matrix((vals, ([i for i, _ in entries], [j for _, j in entries])), shape=(m, n))

    return sparse_jacfwd_fn
