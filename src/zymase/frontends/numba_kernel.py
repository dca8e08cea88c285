"""The Numba front end's kernel source: what one derivative request (:class:`KernelSpec`)
asks of the engine, and the LLVM IR text of the kernel that asks it.

Around Numba's entry point ``i32 f(retptr, excinfo, args...)`` :func:`kernel_ir` writes
``<kernel>.status`` (f with its status code stored, not returned) and the kernel, which
calls ``__enzyme_autodiff``/``__enzyme_fwddiff`` on it with one Enzyme marker per
flattened argument slot and follows Numba's calling convention itself. Split out of
:mod:`zymase.frontends.numba` (which re-exports these names) to keep that module to
its pipeline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zymase.autodiff.names import ABANDON
from zymase.transforms.numba_parfor import FORK
from zymase.errors import ZymaseError

CONST, ACTIVE, DUP, DUPNONEED = "const", "active", "dup", "dupnoneed"

#: Numba status codes (numba.core.callconv): 0 returned a value, -2 returned None.
_STATUS_OK, _STATUS_NONE = 0, -2


def _q(name: str) -> str:
    return name if re.fullmatch(r"[\w.$-]+", name) else '"' + name + '"'


@dataclass(frozen=True)
class KernelSpec:
    """What to differentiate: mode and one activity per argument (a tuple of them for a
    tuple argument). Reverse: ``active`` floats, ``dup``/``dupnoneed`` arrays, ``const``.
    Forward: ``dup`` floats and arrays (followed by tangents), ``const``."""

    mode: str  # "rev" or "fwd"
    activities: tuple
    preopt: bool = True
    opt: int = 3
    #: strong zeros (zymase.autodiff.semantics); False: IEEE 0 * inf = NaN
    strong_zero: bool = True
    #: nested differentiation: this spec's mode applied to the kernel ``inner`` makes
    #: (forward over reverse: ``activities`` then name the inner kernel's arguments,
    #: see :func:`nested_ir`)
    inner: "KernelSpec | None" = None
    #: vector mode (``enzyme_width``): every shadow argument is ``width`` shadows, one
    #: per lane; forward, a float result has ``width`` tangents; reverse, a float
    #: result takes ``width`` seeds and every active leaf has ``width`` derivatives
    width: int = 1
    #: Laplacian mode (forward, ``width`` = N + 1, autodiff/laplacian.py): the last
    #: lane's tangent is the summed second-order term of the other N lanes' directions
    laplacian: bool = False
    #: the tape limit in bytes (zymase.autodiff.checkpoint; None: unlimited)
    tape_limit: int | None = None


def _slots(ty, act) -> list[str]:
    """The activity of each flattened LLVM parameter of a Numba argument of type ``ty``
    (Numba passes an array as meminfo, parent, nitems, itemsize, data, shape[n],
    strides[n]; a tuple as its members in order). The MemInfo shares the data's
    activity: a library function may return either its argument or a new array
    (``ravel`` copies only what is not contiguous), and the MemInfos of the two meet
    in a phi that needs a shadow when the new array's does."""
    from numba.core import types

    if isinstance(ty, types.Array):
        return [act] + [CONST] * 3 + [act] + [CONST] * (2 * ty.ndim)
    if isinstance(ty, types.BaseTuple):
        acts = act if isinstance(act, tuple) else (act,) * len(ty.types)
        return [s for t, a in zip(ty.types, acts) for s in _slots(t, a)]
    return [act]


#: whether kernels of functions calling prange loops take their array arguments' data
#: pointers as noalias (kernel_ir; a switch for tests that show what it changes)
_DATA_NOALIAS = True


def _data_pointers(ty) -> list[bool]:
    """For each flattened LLVM parameter of an argument of type ``ty``: whether it is the
    data pointer of an array (the fifth of an array's parameters, see ``_slots``)."""
    from numba.core import types

    if isinstance(ty, types.Array):
        return [False] * 4 + [True] + [False] * (2 * ty.ndim)
    if isinstance(ty, types.BaseTuple):
        return [d for t in ty.types for d in _data_pointers(t)]
    return [False]


def _element_kinds(ty) -> list[tuple[str, int] | None]:
    """For each flattened LLVM parameter of an argument of type ``ty``: (type-tree kind,
    bytes) of the elements its data pointer points to, for the data pointer of a C- or
    F-contiguous array of floats or integers (every byte of its buffer belongs to an
    element); None for the other parameters and for arrays that may be strided views
    (layout 'A': the bytes between elements may belong to another field of a record)."""
    from numba.core import types

    if isinstance(ty, types.Array):
        kind = None
        if ty.layout in ("C", "F"):
            if isinstance(ty.dtype, types.Float) and ty.dtype.bitwidth in (32, 64):
                kind = (f"f{ty.dtype.bitwidth}", ty.dtype.bitwidth // 8)
            elif isinstance(ty.dtype, types.Integer):
                kind = ("int", ty.dtype.bitwidth // 8)
        return [None] * 4 + [kind] + [None] * (2 * ty.ndim)
    if isinstance(ty, types.BaseTuple):
        return [k for t in ty.types for k in _element_kinds(t)]
    return [None]


def _overlap_checked(ty) -> bool:
    """Whether the entry points' overlap checks see every array an argument of type ``ty``
    reaches (arrays, tuples of them, plain scalars). A typed list, a record (a pointer
    into some array's data) or an object holding arrays may reach an argument array's
    memory unchecked: with one of those, no argument is taken as ``noalias``."""
    from numba.core import types

    if isinstance(ty, types.BaseTuple):
        return all(_overlap_checked(t) for t in ty.types)
    return isinstance(ty, (types.Array, types.Number, types.Boolean, types.NoneType, types.Omitted))


def _slot_paths(ty, path=()) -> list[tuple]:
    """For each flattened LLVM parameter of an argument of type ``ty``: the path (tuple
    indices) of the leaf it belongs to."""
    from numba.core import types

    if isinstance(ty, types.Array):
        return [path] * (5 + 2 * ty.ndim)
    if isinstance(ty, types.BaseTuple):
        return [p for i, t in enumerate(ty.types) for p in _slot_paths(t, path + (i,))]
    return [path]


def _with_leaf(act, ty, path: tuple, new):
    """``act`` with the leaf at ``path`` set to ``new``."""
    if not path:
        return new
    acts = act if isinstance(act, tuple) else (act,) * len(ty.types)
    i = path[0]
    return acts[:i] + (_with_leaf(acts[i], ty.types[i], path[1:], new),) + acts[i + 1 :]


_WRITTEN_CONST = re.compile(r"active data is written through argument (\d+) of '([^']+)\.status'")


def _promotion(ir, spec: KernelSpec, err: ZymaseError):
    """When AD failed because a constant array receives active data (a function that
    writes into an array derived from a differentiated argument), the activities with
    that array duplicated; else None."""
    from numba.core import types

    m = _WRITTEN_CONST.search(err.message)
    if not m or spec.inner is not None:  # a nested request comes with its inner activities promoted
        return None
    flat = int(m.group(1)) - 4  # status_f's parameters: retptr, excinfo, status, f's
    if flat < 0:
        return None
    for k, ty in enumerate(ir.argtypes):
        paths = _slot_paths(ty)
        if flat < len(paths):
            path = paths[flat]
            leaf = ty
            for i in path:
                leaf = leaf.types[i]
            if not (isinstance(leaf, types.Array) and isinstance(leaf.dtype, types.Float)):
                return None
            acts = list(spec.activities)
            acts[k] = _with_leaf(acts[k], ty, path, DUP)
            if tuple(acts) == spec.activities:
                return None
            return tuple(acts)
        flat -= len(paths)
    return None


def has_shadow(act) -> bool:
    if isinstance(act, tuple):
        return any(has_shadow(a) for a in act)
    return act in (DUP, DUPNONEED)


def active_leaves(ty, act) -> list:
    """Numba types of the ``active`` leaves of an argument, in order."""
    from numba.core import types

    if isinstance(ty, types.BaseTuple):
        acts = act if isinstance(act, tuple) else (act,) * len(ty.types)
        return [t for sub, a in zip(ty.types, acts) for t in active_leaves(sub, a)]
    return [ty] if act == ACTIVE else []


def kernel_types(ir, spec: KernelSpec):
    """The kernel's Numba signature: (argument types, result type).

    Arguments: each argument, followed by its shadow when it has ``dup`` parts; in
    reverse mode with a float result, the seed last. Result: a tuple (value, then the
    derivatives of the ``active`` leaves) in reverse mode, (value, tangent) forward."""
    from numba.core import types

    argtys = []
    for ty, act in zip(ir.argtypes, spec.activities):
        argtys.append(ty)
        if has_shadow(act):
            argtys += [ty] * spec.width
    if spec.width > 1 and (spec.laplacian or spec.mode != "fwd") and is_float_tuple(ir.restype):
        raise ZymaseError("reverse and Laplacian vector modes are not built for derivative kernels (second "
                          "order)", hint="use width 1")
    if spec.mode == "fwd" and is_float_tuple(ir.restype):
        # a nested request over a reverse kernel: its values, then their tangents lane by lane
        return tuple(argtys), types.Tuple(list(ir.restype.types) * (1 + spec.width))
    value_t = ir.restype if isinstance(ir.restype, types.Float) else types.float64
    if spec.mode == "rev":
        if isinstance(ir.restype, types.Float):
            argtys += [ir.restype] * spec.width  # the seed of each lane
        # each active leaf's derivative, once per lane
        outs = [value_t] + [t for ty, a in zip(ir.argtypes, spec.activities) for t in active_leaves(ty, a)
                            for _ in range(spec.width)]
    else:
        # Laplacian mode returns the value and the Laplacian lane only: the gradient
        # lanes of the result are then dead code LLVM removes
        outs = [value_t] * (2 if spec.laplacian else 1 + spec.width)
    return tuple(argtys), types.Tuple(outs)


def is_float_tuple(ty) -> bool:
    """A tuple of float scalars (what a reverse kernel returns)."""
    from numba.core import types

    return isinstance(ty, types.BaseTuple) and all(isinstance(t, types.Float) for t in ty.types)


def kernel_ir(ir, spec: KernelSpec, symbol: str) -> str:
    """LLVM IR text of ``status_f`` and the kernel, to be appended to ``ir.text``."""
    from numba.core import types

    from zymase.analysis import types as types_analysis

    ctx = ir.context
    packer = ctx.get_arg_packer
    f_params = [str(t) for t in packer(ir.argtypes).argument_types]
    slot_acts = [s for ty, a in zip(ir.argtypes, spec.activities) for s in _slots(ty, a)]
    assert len(slot_acts) == len(f_params), (slot_acts, f_params)
    k_args, k_res = kernel_types(ir, spec)
    k_params = [str(t) for t in packer(k_args).argument_types]
    res_llty = str(ctx.data_model_manager[k_res].get_return_type())
    f_ret = ctx.data_model_manager[ir.restype].get_return_type()
    float_result = isinstance(ir.restype, types.Float)
    tuple_result = is_float_tuple(ir.restype)
    if tuple_result and spec.mode != "fwd":
        raise ZymaseError("reverse mode over a derivative kernel is not built (only forward over reverse)",
                          hint="use zymase.hessian, zymase.hvp or zymase.jacfwd(zymase.grad(f))")
    ret_llty = str(f_ret) if float_result or tuple_result else "i64"
    status_fn = f"{symbol}.status"

    # status_f: Numba's function with its status code stored, not returned. In a function
    # with prange loops, the data pointers of the array arguments are noalias: every entry
    # point refuses a call where two of them overlap and f may write into one (api_aliasing),
    # which lets a parfor reading one argument and writing another recompute its reverse
    # sweep (autodiff/numba_parfor.plan) rather than fall back to the serial copy
    distinct = _DATA_NOALIAS and FORK in ir.text and all(_overlap_checked(ty) for ty in ir.argtypes)
    data = [d for ty in ir.argtypes for d in _data_pointers(ty)]
    ps = ", ".join(f"{t}{' noalias' if distinct and d else ''} %a{i}" for i, (t, d) in enumerate(zip(f_params, data)))
    call_args = ", ".join(f"{t} %a{i}" for i, t in enumerate(f_params))
    # the element type of contiguous array arguments, for type analysis: a copy of the
    # whole array (x.copy()) must know every byte's type, also elements f never reads
    elements = [k for ty in ir.argtypes for k in _element_kinds(ty)]
    known = ",".join(f"{3 + i}:{k[0]}:{k[1]}" for i, k in enumerate(elements) if k is not None)
    fn_attrs = f' "{types_analysis.ELEMENTS_ATTR}"="{known}"' if known else ""
    # A raised exception abandons the derivative (see autodiff.names.ABANDON): once f
    # is inlined here, the pre-AD pipeline threads each error path of f to `failed`,
    # and the reverse sweep only follows the paths that return normally.
    status_src = (
        f"define internal void @{_q(status_fn)}(ptr noalias %retptr, ptr noalias %excinfo, ptr noalias %status{', ' if ps else ''}{ps}){fn_attrs} {{\n"
        f"  %s = call i32 @{_q(ir.entry)}(ptr %retptr, ptr %excinfo{', ' if call_args else ''}{call_args})\n"
        f"  store i32 %s, ptr %status\n"
        f"  %ok = icmp eq i32 %s, {_STATUS_OK}\n  %none = icmp eq i32 %s, {_STATUS_NONE}\n  %good = or i1 %ok, %none\n"
        f"  br i1 %good, label %done, label %failed\n"
        f"failed:\n  call void @{ABANDON}()\n  ret void\n"
        f"done:\n  ret void\n}}\n"
    )

    # map kernel parameters: per argument its primal slice and shadow slice
    body = []
    enz: list[str] = []
    kp = 0  # index into k_params
    fp = 0  # index into f_params
    for ty, act in zip(ir.argtypes, spec.activities):
        n = len(packer((ty,)).argument_types)
        prim = list(range(kp, kp + n))
        kp += n
        lanes = []  # per lane, the shadow's parameters
        if has_shadow(act):
            for _ in range(spec.width):
                lanes.append(list(range(kp, kp + n)))
                kp += n
        for j in range(n):
            a = slot_acts[fp + j]
            t = f_params[fp + j]
            if a == CONST:
                enz.append(f"ptr @enzyme_const, {t} %p{prim[j]}")
            elif a == ACTIVE:
                enz.append(f"ptr @enzyme_out, {t} %p{prim[j]}")
            else:
                marker = "enzyme_dup" if a == DUP else "enzyme_dupnoneed"
                shadows = ", ".join(f"{t} %p{lane[j]}" for lane in lanes)
                enz.append(f"ptr @{marker}, {t} %p{prim[j]}, {shadows}")
        fp += n
    seeds = [None] * spec.width  # per lane, the result's seed (reverse mode, float result)
    if spec.mode == "rev" and float_result:
        seeds = [f"%p{kp + k}" for k in range(spec.width)]
        kp += spec.width
    assert kp == len(k_params)

    k_ps = ", ".join(f"{t} %p{i}" for i, t in enumerate(k_params))
    body.append("  %status = alloca i32, align 4\n  store i32 0, ptr %status")
    # the result's and excinfo's shadows, one per lane (%dres, %dres1, ...)
    lane_names = [""] + [str(k) for k in range(1, spec.width)]
    zero = "0.0" if float_result else "zeroinitializer" if tuple_result else "0"
    body.append(f"  %res = alloca {ret_llty}, align 16\n  store {ret_llty} {zero}, ptr %res")
    for k, seed in zip(lane_names, seeds):
        body.append(f"  %dres{k} = alloca {ret_llty}, align 16")
        body.append(f"  store {ret_llty} {seed if seed else zero}, ptr %dres{k}")
        # excinfo gets a shadow slot that is never read: a recursive Numba call passes it
        # on like any pointer, and pointers reaching differentiated calls need shadows
        body.append(f"  %dexc{k} = alloca ptr, align 8\n  store ptr null, ptr %dexc{k}")
    width = f"ptr @enzyme_width, i64 {spec.width}, " if spec.width > 1 else ""
    if spec.laplacian:
        width += "ptr @zymase_laplacian, "
    dres = ", ".join(f"ptr %dres{k}" for k in lane_names)
    dexc = ", ".join(f"ptr %dexc{k}" for k in lane_names)
    head = (f"ptr @{_q(status_fn)}, {width}ptr @enzyme_dup, ptr %res, {dres}, ptr @enzyme_dup, ptr %excinfo, {dexc}, "
            "ptr @enzyme_const, ptr %status")
    marker_args = ", ".join([head, *enz])
    outs = []
    if spec.mode == "rev":
        act_types = [str(ctx.get_value_type(t)) for ty, a in zip(ir.argtypes, spec.activities)
                     for t in active_leaves(ty, a) for _ in range(spec.width)]
        if not act_types:
            body.append(f"  call void (ptr, ...) @__enzyme_autodiff({marker_args})")
        elif len(act_types) == 1:
            body.append(f"  %d = call {act_types[0]} (ptr, ...) @__enzyme_autodiff({marker_args})")
            outs = [(act_types[0], "%d")]
        else:
            st = "{ " + ", ".join(act_types) + " }"
            body.append(f"  %d = call {st} (ptr, ...) @__enzyme_autodiff({marker_args})")
            for i, t in enumerate(act_types):
                body.append(f"  %d{i} = extractvalue {st} %d, {i}")
                outs.append((t, f"%d{i}"))
    else:
        body.append(f"  call void (ptr, ...) @__enzyme_fwddiff({marker_args})")
    body.append("  %s = load i32, ptr %status")
    body.append(f"  %ok = icmp eq i32 %s, {_STATUS_OK}\n  %none = icmp eq i32 %s, {_STATUS_NONE}\n  %good = or i1 %ok, %none")
    body.append("  br i1 %good, label %done, label %fail\nfail:\n  ret i32 %s\ndone:")
    value_t = str(ctx.get_value_type(k_res.types[0]))
    if tuple_result:
        vals = []
        for src in ("%res", *(f"%dres{k}" for k in lane_names)):
            body.append(f"  %{src[1:]}.v = load {ret_llty}, ptr {src}")
            for i, t in enumerate(ir.restype.types):
                body.append(f"  %{src[1:]}.{i} = extractvalue {ret_llty} %{src[1:]}.v, {i}")
                vals.append((str(ctx.get_value_type(t)), f"%{src[1:]}.{i}"))
    elif float_result:
        body.append(f"  %v = load {ret_llty}, ptr %res")
        vals = [(value_t, "%v")]
    else:
        vals = [(value_t, "0.0")]
    if spec.mode == "fwd" and tuple_result:
        pass
    elif spec.mode == "fwd":
        for k in lane_names[-1:] if spec.laplacian else lane_names:
            if float_result:
                body.append(f"  %t{k} = load {ret_llty}, ptr %dres{k}")
                vals.append((value_t, f"%t{k}"))
            else:
                vals.append((value_t, "0.0"))
    else:
        vals += outs
    agg = "undef"
    for i, (t, v) in enumerate(vals):
        body.append(f"  %r{i} = insertvalue {res_llty} {agg}, {t} {v}, {i}")
        agg = f"%r{i}"
    body.append(f"  store {res_llty} {agg}, ptr %retptr\n  ret i32 0")
    kernel_src = (
        f"define i32 @{_q(symbol)}(ptr noalias %retptr, ptr noalias %excinfo{', ' if k_ps else ''}{k_ps}) {{\nentry:\n"
        + "\n".join(body)
        + "\n}\n"
    )
    decls = f"declare void @{ABANDON}()\n" if f"declare void @{ABANDON}()" not in ir.text else ""
    for name in ("__enzyme_autodiff", "__enzyme_fwddiff"):
        if f"@{name}(" not in ir.text:
            decls += f"declare void @{name}(ptr, ...)\n"
    for m in ("enzyme_const", "enzyme_out", "enzyme_dup", "enzyme_dupnoneed", "enzyme_width", "zymase_laplacian"):
        if f"@{m} =" not in ir.text:
            decls += f"@{m} = external global i32\n"
    return status_src + "\n" + kernel_src + "\n" + decls
