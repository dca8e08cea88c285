"""Enzyme's split reverse mode at the C interface: ``__enzyme_augmentfwd`` and
``__enzyme_reverse``, one tape per call.

zymase's split-mode derivatives (``Driver.split``: ``augmented<f>`` pushes what the
reverse sweep needs on the thread's global tape ``__zymase_tape``, ``diffe<f>`` pops it)
serve calls inside a derivative, where the two halves run in LIFO order. Enzyme's
interface lets a program run several forward passes and reverse them in any order, so
each ``__enzyme_augmentfwd`` gets a tape of its own:

* augment: the global tape is set aside in a stack slot, ``augmented<f>`` pushes onto an
  empty one, and what it pushed becomes the call's *tape object* ``{ptr data, i64 size,
  i64 capacity}`` (24 bytes, what ``__enzyme_augmentsize`` returns), malloc'd or in the
  caller's buffer (``enzyme_allocated, size, enzyme_tape, buffer``); the global tape is
  restored;
* reverse: the tape object becomes the global tape, ``diffe<f>`` pops all of it, its data
  is freed (and the object, unless it is the caller's buffer), the global tape restored.

With ``enzyme_width, N`` (vector mode) the pair is ``Driver.split``'s width-N pair:
N shadows per dup argument, N seeds of an active result, N derivatives per active
argument, and still one tape object (the augmented pass runs the primal once); split
forward mode's pair is ``Driver.fwdsplit``'s width-N pair, the width part of the tape's
activity pattern: one function may be split at several widths and activity patterns (as
Enzyme makes its augmented primal per width), each ``__enzyme_augmentfwd`` running the
augmented primal of the fwdsplit pattern equal to its own.

The reverse sweep depends only on its arguments and the tape: split mode never re-reads
primal memory (docs/architecture.md, section 5), so the caller may overwrite the inputs
between the two calls.

Split forward mode (``__enzyme_fwdsplit(f, args with tangents..., tape)``) reads the same
kind of tape object: when a program differentiates ``f`` by ``__enzyme_fwdsplit``, its
``__enzyme_augmentfwd(f, ...)`` calls run ``Driver.fwdsplit``'s augmented primal, which
pushes what the tangent function reads (autodiff/forward_split.py), and the fwdsplit
call checks the key the augmented pass pushed first (``__zymase_fwdsplit_data``: a
tape written for another reader stops the program), passes the rest of the tape's data
to ``fwdsplit<f>`` and frees it as ``__enzyme_reverse`` does (``enzyme_nofree`` keeps it: the tangent function only reads the tape, from its
start, so a tape kept that way is read again by the next fwdsplit call, one tangent
direction after another). One tape cannot serve both: a program that reverses ``f`` and also differentiates
it by ``__enzyme_fwdsplit`` is refused (:func:`mark_fwdsplit_tapes`), as is an
augmented call of ``f`` whose activities and width are those of no fwdsplit call of ``f``. The marker parsing is in :mod:`zymase.llvm.markers`; this module
builds the ``enzyme.split_autodiff`` op there and lowers it in the enzyme pass.
"""

from __future__ import annotations

from zymase.cache import parsed_mlir
from zymase.errors import ZymaseError
from zymase.ir import (
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Operation,
    SSAValue,
    StringAttr,
    UnitAttr,
    i64,
    llvm,
    location_of,
    parse_mlir,
)
from zymase.ir import enzyme as ez
from zymase.ir.enzyme import Activity
from zymase.autodiff.forward_split import TAPE_KEY
from zymase.transforms.lower_tape import CACHE_INLINE_BYTES, CACHE_STRUCT, GLOBAL_TAPE
from zymase.transforms.global_shadow_reset import zero_shadows

PTR = llvm.LLVMPointerType()
#: bytes of the tape object: data pointer, size, capacity
TAPE_OBJECT_BYTES = 24
_GLOBAL_TAPE_BYTES = 8 + 8 + 8 + CACHE_INLINE_BYTES

BEGIN = "__zymase_split_begin"
END = "__zymase_split_end"
RESUME = "__zymase_split_resume"
FINISH = "__zymase_split_finish"
TOO_SMALL = "__zymase_split_tape_too_small"
FWDSPLIT_DATA = "__zymase_fwdsplit_data"

_STRUCT = f"!llvm.struct<(ptr, i64, i64, array<{CACHE_INLINE_BYTES} x i8>)>"
# The tape object may sit in a caller's char buffer: its accesses assume no alignment.
_RUNTIME = f"""
builtin.module {{
  llvm.func internal @{BEGIN}(%g: !llvm.ptr, %saved: !llvm.ptr) {{
    %n = llvm.mlir.constant({_GLOBAL_TAPE_BYTES} : i64) : i64
    %no = llvm.mlir.constant(false) : i1
    %null = llvm.mlir.zero : !llvm.ptr
    %zero = llvm.mlir.constant(0 : i64) : i64
    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%saved, %g, %n, %no) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
    %size_p = llvm.getelementptr %g[0, 1] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    %cap_p = llvm.getelementptr %g[0, 2] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    llvm.store %null, %g : !llvm.ptr, !llvm.ptr
    llvm.store %zero, %size_p : i64, !llvm.ptr
    llvm.store %zero, %cap_p : i64, !llvm.ptr
    llvm.return
  }}
  llvm.func internal @{END}(%g: !llvm.ptr, %saved: !llvm.ptr, %obj: !llvm.ptr) {{
    %n = llvm.mlir.constant({_GLOBAL_TAPE_BYTES} : i64) : i64
    %no = llvm.mlir.constant(false) : i1
    %one = llvm.mlir.constant(1 : i64) : i64
    %eight = llvm.mlir.constant(8 : i64) : i64
    %sixteen = llvm.mlir.constant(16 : i64) : i64
    %size_p = llvm.getelementptr %g[0, 1] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    %cap_p = llvm.getelementptr %g[0, 2] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    %inline = llvm.getelementptr %g[0, 3] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    %data = llvm.load %g : !llvm.ptr -> !llvm.ptr
    %size = llvm.load %size_p : !llvm.ptr -> i64
    %cap = llvm.load %cap_p : !llvm.ptr -> i64
    %in_global = llvm.icmp "eq" %data, %inline : !llvm.ptr
    llvm.cond_br %in_global, ^move, ^keep(%data, %cap : !llvm.ptr, i64)
  ^move:
    %bytes = llvm.call_intrinsic "llvm.umax.i64"(%size, %one) : (i64, i64) -> i64
    %heap = llvm.call @malloc(%bytes) : (i64) -> !llvm.ptr
    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%heap, %inline, %size, %no) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
    llvm.br ^keep(%heap, %bytes : !llvm.ptr, i64)
  ^keep(%d: !llvm.ptr, %c: i64):
    %osize = llvm.getelementptr %obj[%eight] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %ocap = llvm.getelementptr %obj[%sixteen] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %d, %obj {{alignment = 1 : i64}} : !llvm.ptr, !llvm.ptr
    llvm.store %size, %osize {{alignment = 1 : i64}} : i64, !llvm.ptr
    llvm.store %c, %ocap {{alignment = 1 : i64}} : i64, !llvm.ptr
    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%g, %saved, %n, %no) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
    llvm.return
  }}
  llvm.func internal @{RESUME}(%g: !llvm.ptr, %saved: !llvm.ptr, %obj: !llvm.ptr) {{
    %n = llvm.mlir.constant({_GLOBAL_TAPE_BYTES} : i64) : i64
    %no = llvm.mlir.constant(false) : i1
    %eight = llvm.mlir.constant(8 : i64) : i64
    %sixteen = llvm.mlir.constant(16 : i64) : i64
    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%saved, %g, %n, %no) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
    %osize = llvm.getelementptr %obj[%eight] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %ocap = llvm.getelementptr %obj[%sixteen] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %d = llvm.load %obj {{alignment = 1 : i64}} : !llvm.ptr -> !llvm.ptr
    %size = llvm.load %osize {{alignment = 1 : i64}} : !llvm.ptr -> i64
    %c = llvm.load %ocap {{alignment = 1 : i64}} : !llvm.ptr -> i64
    %size_p = llvm.getelementptr %g[0, 1] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    %cap_p = llvm.getelementptr %g[0, 2] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    llvm.store %d, %g : !llvm.ptr, !llvm.ptr
    llvm.store %size, %size_p : i64, !llvm.ptr
    llvm.store %c, %cap_p : i64, !llvm.ptr
    llvm.return
  }}
  llvm.func internal @{FINISH}(%g: !llvm.ptr, %saved: !llvm.ptr) {{
    %n = llvm.mlir.constant({_GLOBAL_TAPE_BYTES} : i64) : i64
    %no = llvm.mlir.constant(false) : i1
    %data = llvm.load %g : !llvm.ptr -> !llvm.ptr
    llvm.call @free(%data) : (!llvm.ptr) -> ()
    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%g, %saved, %n, %no) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
    llvm.return
  }}
}}
"""


_TOO_SMALL_MESSAGE = "zymase: error: the tape buffer given to __enzyme_augmentfwd/__enzyme_reverse " \
    f"(enzyme_allocated) is smaller than the {TAPE_OBJECT_BYTES} bytes __enzyme_augmentsize returns\n"


def split_op(site, fname: str, operands: list[SSAValue], seed: list[SSAValue] | None, opts, acts: list[Activity],
             ret_acts: list[Activity], fn_inputs, fn_out, builder) -> Operation:
    """The ``enzyme.split_autodiff`` op for one ``__enzyme_augmentfwd`` /
    ``__enzyme_reverse`` call (``site``, parsed by zymase.llvm.markers). In vector mode
    (``enzyme_width, N``) the operands hold N shadows per dup argument and N seeds of an
    active result (one per lane), the results N derivatives per active argument, lane by
    lane; the tape is one, as the augmented pass runs the primal once."""
    from zymase.llvm.marker_calls import _err

    allocated = _check_caller_tape(site, opts, builder)
    part = "augment" if site.mode == "augment" else "reverse"
    if part == "augment":
        tape = opts.tape if allocated else builder.v(llvm.ZeroOp.build(result_types=[PTR]))
        inputs = [*operands, tape]
        results = [PTR] + ([fn_out] if ret_acts else [])
    else:
        if not isinstance(opts.tape.type, llvm.LLVMPointerType):
            raise _err(site, f"the tape passed to {site.marker_fn} is not a pointer",
                       "pass the void* __enzyme_augmentfwd returned")
        inputs = [*operands, *(seed or []), opts.tape]
        results = [t for t, a in zip(fn_inputs, acts) if a.is_active for _ in range(opts.width)]
    op = ez.SplitDiffOp(part, allocated, fname, inputs, results, acts, ret_acts, width=opts.width)
    return op


#: On a function whose tapes __enzyme_fwdsplit reads: the patterns (``_pattern``) of its
#: fwdsplit calls, joined by ``_PATTERNS_SEP``.
FWDSPLIT_TAPE = "zymase.fwdsplit_tape"
_PATTERNS_SEP = "; "
#: On a fwdsplit op: enzyme_nofree, the tape is neither freed nor used up (read again later).
NOFREE = "zymase.nofree"


def mark_fwdsplit_tapes(sites, target_of) -> None:
    """Before any site is lowered: mark the functions some ``__enzyme_fwdsplit`` call
    differentiates (their ``__enzyme_augmentfwd`` calls then write its kind of tape);
    refuse a function also given to ``__enzyme_reverse``."""
    from zymase.llvm.marker_calls import _err

    by_function: dict[str, dict[str, object]] = {}
    for site in sites:
        if site.mode in ("fwdsplit", "reverse"):
            fop = target_of(site)
            if fop is not None:
                by_function.setdefault(fop.sym_name.data, {"fop": fop}).setdefault(site.mode, site)
    for name, found in by_function.items():
        if "fwdsplit" not in found:
            continue
        if "reverse" in found:
            raise _err(found["fwdsplit"], f"'{name}' is differentiated by both __enzyme_fwdsplit and "
                       "__enzyme_reverse: zymase's tape of __enzyme_augmentfwd holds what one of them reads, "
                       "not both", f"give one of them a function of your own that calls '{name}'")
        found["fop"].attributes[FWDSPLIT_TAPE] = StringAttr("")


def fwdsplit_patterns(fop: Operation) -> list[str]:
    """The patterns of the ``__enzyme_fwdsplit`` calls of ``fop`` seen so far."""
    known = fop.attributes.get(FWDSPLIT_TAPE)
    return known.data.split(_PATTERNS_SEP) if isinstance(known, StringAttr) and known.data else []


def _pattern(acts, ret_active: bool, width: int = 1) -> str:
    """The activities and the width that decide what the tape holds, as the error
    messages spell them (dupnoneed is dup: the tangent function never uses a primal
    pointer). The width is Enzyme's too: its augmented primal is made per width, so the
    augmented call and the fwdsplit call of one tape give the same ``enzyme_width``."""
    names = ["dup" if a is Activity.DUPNONEED else a.name.lower() for a in acts]
    return ", ".join(names) + (" -> active result" if ret_active else "") + (
        f" at enzyme_width {width}" if width > 1 else "")


def fwdsplit_op(site, fname: str, operands: list[SSAValue], opts, acts: list[Activity], ret_kind: str | None,
                fn_out, builder) -> Operation:
    """The ``enzyme.split_autodiff`` op (``part = "fwdsplit"``) of one
    ``__enzyme_fwdsplit`` call: the arguments with their tangents, then the tape; its
    result is the tangent of a float result."""
    from zymase.llvm.marker_calls import _err

    if isinstance(fn_out, llvm.LLVMPointerType) and ret_kind != "const":
        raise _err(site, f"'{fname}' returns a pointer, whose shadow __enzyme_fwdsplit does not return",
                   "add enzyme_const_return, or return the value through a pointer argument")
    allocated = _check_caller_tape(site, opts, builder)
    if not isinstance(opts.tape.type, llvm.LLVMPointerType):
        raise _err(site, f"the tape passed to {site.marker_fn} is not a pointer",
                   "pass the void* __enzyme_augmentfwd returned")
    ret_active = fn_out is not None and ret_kind != "const"
    fop = site.call
    while not isinstance(fop, llvm.FuncOp):
        fop = fop.parent_op()
    module = fop.parent_op()
    target = next(op for op in module.body.block.ops if isinstance(op, llvm.FuncOp) and op.sym_name.data == fname)
    # each pattern (width included) is a derivative pair of its own, Driver.fwdsplit's key;
    # an __enzyme_augmentfwd call pairs with the pattern equal to its own (lower_split_op)
    pattern = _pattern(acts, ret_active, opts.width)
    known = fwdsplit_patterns(target)
    if pattern not in known:
        target.attributes[FWDSPLIT_TAPE] = StringAttr(_PATTERNS_SEP.join([*known, pattern]))
    results = [fn_out] * opts.width if ret_active else []  # a tangent per lane
    ret_acts = [Activity.DUPNONEED if ret_active else Activity.CONSTNONEED] if fn_out is not None else []
    op = ez.SplitDiffOp("fwdsplit", allocated, fname, [*operands, opts.tape], results, acts, ret_acts,
                        width=opts.width)
    if opts.nofree:
        op.attributes[NOFREE] = UnitAttr()
    return op


def _check_caller_tape(site, opts, builder) -> bool:
    """Whether the tape lives in the caller's buffer (``enzyme_allocated, size,
    enzyme_tape, buffer``), whose size is checked: at compile time when it is a
    constant, else by a run-time report."""
    from zymase.llvm.marker_calls import _err

    if opts.allocated is None:
        return False
    size = opts.allocated
    known = _constant_int(size)
    if known is not None and known < TAPE_OBJECT_BYTES:
        raise _err(site, f"the tape buffer of {known} bytes (enzyme_allocated) is too small: zymase's tape "
                   f"takes {TAPE_OBJECT_BYTES} bytes", "allocate __enzyme_augmentsize(f, ...) bytes for it")
    if known is None:
        if not isinstance(size.type, IntegerType):
            raise _err(site, "enzyme_allocated must be followed by the buffer's size (an integer)",
                       "pass enzyme_allocated, size, enzyme_tape, buffer")
        builder.insert(llvm.CallOp(TOO_SMALL, size if size.type == i64 else builder.v(
            llvm.SExtOp(size, i64))))
    if not isinstance(opts.tape.type, llvm.LLVMPointerType):
        raise _err(site, "enzyme_tape must be followed by a pointer to the tape buffer",
                   "pass enzyme_allocated, size, enzyme_tape, buffer")
    return True


def _constant_int(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, llvm.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    if isinstance(owner, (llvm.SExtOp, llvm.ZExtOp, llvm.TruncOp)):
        return _constant_int(owner.arg)
    return None


# ------------------------------------------------------------------ the enzyme pass


def lower_split_op(op: ez.SplitDiffOp, driver, module: ModuleOp) -> None:
    """Replace ``op`` by calls of the augmented or reverse function of its function,
    with the global tape swapped for the call's own."""
    fname = op.fn.root_reference.data
    fop = driver.function(fname)
    if not isinstance(fop, llvm.FuncOp):
        raise ZymaseError(f"{op.name} differentiates llvm.func functions only", construct=op.name,
                          location=location_of(op))
    arg_acts, ret_acts = op.arg_activities, op.ret_activities
    part = op.part.data
    ret_active = bool(ret_acts) and not ret_acts[0].is_const
    if part == "fwdsplit":
        _lower_fwdsplit(op, driver, module, fop, ret_active)
        return
    if FWDSPLIT_TAPE in fop.attributes:
        # the tape of the __enzyme_fwdsplit call with this call's activities and width
        # (Driver.fwdsplit's key: dupnoneed is dup there, so the pairing is one-to-one)
        wanted = fwdsplit_patterns(fop)
        given = _pattern(arg_acts, ret_active, op.lanes)
        if part != "augment" or given not in wanted:
            raise ZymaseError(
                f"__enzyme_augmentfwd of '{fname}' ({given}) writes the tape of __enzyme_fwdsplit, which is called "
                f"with other activities or another width ({'; '.join(wanted) or 'none known'})", construct=op.name,
                function=fname, location=location_of(op),
                hint="pass the same markers and enzyme_width to both calls (a float argument is active in both)")
        # the second name (the split tangent function) is used only for the globals it reaches
        aug_name, rev_name = driver.fwdsplit(fop, arg_acts, ret_active, width=op.lanes)
    else:
        aug_name, rev_name = driver.split(fop, arg_acts, ret_acts, width=op.lanes)
    _require_runtime(module)
    emit = _emitter(op)

    tape_global = emit(llvm.AddressOfOp(GLOBAL_TAPE, PTR))
    saved = _entry_slot(op)
    operands = list(op.operands)
    if op.part.data == "augment":
        *args, buffer = operands
        # the globals' values here are constants for the reverse sweep that follows
        zero_shadows(driver, [n for n in (aug_name, rev_name) if n], emit)
        emit(llvm.CallOp(BEGIN, tape_global, saved))
        primal_types = [r.type for r in op.results[1:]]
        primal = emit(llvm.CallOp(aug_name, *args, return_type=primal_types[0])) if primal_types else None
        if primal is None:
            emit(llvm.CallOp(aug_name, *args))
        if bool(op.allocated.value.data):
            tape = buffer
        else:
            size = emit(llvm.ConstantOp(IntegerAttr(TAPE_OBJECT_BYTES, i64), i64))
            tape = emit(llvm.CallOp("malloc", size, return_type=PTR))
        emit(llvm.CallOp(END, tape_global, saved, tape))
        new_results = [tape] + ([primal] if primal is not None else [])
    else:
        *args, tape = operands
        emit(llvm.CallOp(RESUME, tape_global, saved, tape))
        new_results = _call_results(emit, rev_name, args, [r.type for r in op.results])
        emit(llvm.CallOp(FINISH, tape_global, saved))
        if not bool(op.allocated.value.data):
            emit(llvm.CallOp("free", tape))
    for old, new in zip(op.results, new_results):
        old.replace_all_uses_with(new)
    op.parent_block().erase_op(op)


def _lower_fwdsplit(op: ez.SplitDiffOp, driver, module: ModuleOp, fop: Operation, ret_active: bool) -> None:
    """``fwdsplit<f>(args, tangents, data)`` with the tape object's data, which is then
    freed (and the object, unless the caller owns it), as __enzyme_reverse does."""
    arg_acts = op.arg_activities
    _, fs_name = driver.fwdsplit(fop, arg_acts, ret_active, width=op.lanes)
    _require_runtime(module)
    emit = _emitter(op)

    *args, tape = op.operands
    # Enzyme's users pass a NULL tape when the tangent needs nothing from it
    fs = driver.function(fs_name)
    needed = emit(llvm.ConstantOp(IntegerAttr(int(bool(fs.body.blocks[0].args[-1].uses)), 1), IntegerType(1)))
    key = emit(llvm.ConstantOp(fs.attributes[TAPE_KEY], i64))
    data = emit(llvm.CallOp(FWDSPLIT_DATA, tape, needed, key, return_type=PTR))
    values = emit(llvm.GEPOp(data, [KEY_BYTES], IntegerType(8)))  # after the key
    out_types = [r.type for r in op.results]  # the result's tangent per lane
    results = _call_results(emit, fs_name, [*args, values], out_types)
    if NOFREE not in op.attributes:
        emit(llvm.CallOp("free", data))
        if not bool(op.allocated.value.data):
            emit(llvm.CallOp("free", tape))
    for old, new in zip(op.results, results):
        old.replace_all_uses_with(new)
    op.parent_block().erase_op(op)


def _call_results(emit, name: str, args, out_types) -> list[SSAValue]:
    """Call ``name``, whose results come as one value or, several, as a struct: the
    results one by one."""
    if not out_types:
        emit(llvm.CallOp(name, *args))
        return []
    if len(out_types) == 1:
        return [emit(llvm.CallOp(name, *args, return_type=out_types[0]))]
    from zymase.ir import DenseArrayBase

    agg = emit(llvm.CallOp(name, *args, return_type=llvm.LLVMStructType.from_type_list(out_types)))
    return [emit(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [i]), agg, t)) for i, t in enumerate(out_types)]


def _emitter(op: Operation):
    """A function inserting an op before ``op`` (with its location) and returning the
    new op's first result, if any."""
    block = op.parent_block()

    def emit(new: Operation) -> SSAValue | None:
        new.location = op.location
        block.insert_op_before(new, op)
        return new.results[0] if new.results else None

    return emit


def _entry_slot(op: Operation) -> SSAValue:
    """A stack slot for the set-aside global tape, in the entry block (not where the
    call is: a slot allocated in a loop would grow the stack on every iteration)."""
    fop = op.parent_op()
    while fop is not None and not isinstance(fop, llvm.FuncOp):
        fop = fop.parent_op()
    entry = fop.body.blocks[0]
    anchor = entry.first_op
    one = llvm.ConstantOp(IntegerAttr(1, i64), i64)
    slot = llvm.AllocaOp(one.results[0], CACHE_STRUCT, alignment=16)
    entry.insert_op_before(one, anchor)
    entry.insert_op_before(slot, anchor)
    return slot.results[0]


def _require_runtime(module: ModuleOp) -> None:
    """The global tape, the four tape helpers, the too-small report, malloc and free."""
    symbols = {op.sym_name.data: op for op in module.body.block.ops if hasattr(op, "sym_name")}
    block = module.body.block
    if GLOBAL_TAPE not in symbols:
        tape = llvm.GlobalOp(CACHE_STRUCT, GLOBAL_TAPE, "weak", thread_local_=True, alignment=16, value=None)
        tape.attributes["zymase.llvm_init"] = StringAttr("zeroinitializer")
        block.add_op(tape)
    for name, inputs, output in (("malloc", [i64], PTR), ("free", [PTR], None), ("write", [IntegerType(32), PTR, i64], i64),
                                 ("abort", [], None)):
        if name not in symbols:
            block.add_op(llvm.FuncOp(name, llvm.LLVMFunctionType(inputs, output), linkage=llvm.LinkageAttr("external")))
    if FWDSPLIT_DATA not in symbols:
        block.add_op(_message_global(_NULL_TAPE_GLOBAL, _NULL_TAPE_MESSAGE))
        block.add_op(_message_global(_KEY_GLOBAL, _KEY_MESSAGE))
        block.add_op(_fwdsplit_data())
    if BEGIN in symbols:
        return
    for fn in list(parsed_mlir(_RUNTIME, "<zymase split-mode runtime>").body.block.ops):
        fn.detach()
        block.add_op(fn)
    block.add_op(_too_small_message())
    block.add_op(_too_small_check())


_MESSAGE_GLOBAL = "__zymase_split_tape_message"


def _too_small_message() -> Operation:
    data = _TOO_SMALL_MESSAGE.encode()
    return llvm.GlobalOp(llvm.LLVMArrayType(len(data), IntegerType(8)), _MESSAGE_GLOBAL, "private", constant=True,
                         value=StringAttr(_TOO_SMALL_MESSAGE))


_NULL_TAPE_GLOBAL = "__zymase_fwdsplit_null_tape_message"
_NULL_TAPE_MESSAGE = ("zymase: error: __enzyme_fwdsplit was given a NULL tape, but the tangent reads primal "
                      "values from the tape __enzyme_augmentfwd returned\n")
_KEY_GLOBAL = "__zymase_fwdsplit_key_message"
_KEY_MESSAGE = ("zymase: error: the tape given to __enzyme_fwdsplit was not written for it: only "
                "__enzyme_augmentfwd of the same function, with the same activities and enzyme_width, compiled the "
                "same way, writes the tape it reads\n")
#: bytes of the key at the start of a split forward mode tape (autodiff/forward_split.py)
KEY_BYTES = 8


def _message_global(name: str, text: str) -> Operation:
    return llvm.GlobalOp(llvm.LLVMArrayType(len(text.encode()), IntegerType(8)), name, "private", constant=True,
                         value=StringAttr(text))


def _fwdsplit_data() -> Operation:
    """``__zymase_fwdsplit_data(ptr tape, i1 needed, i64 key) -> ptr``: the tape
    object's data, after checking that it starts with ``key`` (the augmented function
    of this fwdsplit wrote it); a NULL tape is no data when the tangent function reads
    none. Otherwise a report and abort."""
    text = f"""
builtin.module {{
  llvm.func internal @{FWDSPLIT_DATA}(%tape: !llvm.ptr, %needed: i1, %key: i64) -> !llvm.ptr {{
    %null = llvm.mlir.zero : !llvm.ptr
    %fd = llvm.mlir.constant(2 : i32) : i32
    %none = llvm.icmp "eq" %tape, %null : !llvm.ptr
    llvm.cond_br %none, ^empty, ^read
  ^empty:
    llvm.cond_br %needed, ^no_tape, ^nothing
  ^no_tape:
    %len = llvm.mlir.constant({len(_NULL_TAPE_MESSAGE.encode())} : i64) : i64
    %msg = llvm.mlir.addressof @{_NULL_TAPE_GLOBAL} : !llvm.ptr
    %w = llvm.call @write(%fd, %msg, %len) : (i32, !llvm.ptr, i64) -> i64
    llvm.call @abort() : () -> ()
    llvm.unreachable
  ^nothing:
    llvm.return %null : !llvm.ptr
  ^read:
    %eight = llvm.mlir.constant({KEY_BYTES} : i64) : i64
    %data = llvm.load %tape {{alignment = 1 : i64}} : !llvm.ptr -> !llvm.ptr
    %size_p = llvm.getelementptr %tape[%eight] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %size = llvm.load %size_p {{alignment = 1 : i64}} : !llvm.ptr -> i64
    %short = llvm.icmp "ult" %size, %eight : i64
    llvm.cond_br %short, ^other, ^check
  ^check:
    %found = llvm.load %data {{alignment = 1 : i64}} : !llvm.ptr -> i64
    %same = llvm.icmp "eq" %found, %key : i64
    llvm.cond_br %same, ^ok, ^other
  ^ok:
    llvm.return %data : !llvm.ptr
  ^other:
    %len2 = llvm.mlir.constant({len(_KEY_MESSAGE.encode())} : i64) : i64
    %msg2 = llvm.mlir.addressof @{_KEY_GLOBAL} : !llvm.ptr
    %w2 = llvm.call @write(%fd, %msg2, %len2) : (i32, !llvm.ptr, i64) -> i64
    llvm.call @abort() : () -> ()
    llvm.unreachable
  }}
}}
"""
    fn = parse_mlir(text, "<zymase split forward mode tape>").body.block.first_op
    fn.detach()
    return fn


def _too_small_check() -> Operation:
    """``__zymase_split_tape_too_small(i64 size)``: report and abort when the caller's
    tape buffer is smaller than the tape object (a size known only at run time)."""
    text = f"""
builtin.module {{
  llvm.func internal @{TOO_SMALL}(%size: i64) {{
    %need = llvm.mlir.constant({TAPE_OBJECT_BYTES} : i64) : i64
    %small = llvm.icmp "slt" %size, %need : i64
    llvm.cond_br %small, ^fail, ^ok
  ^fail:
    %fd = llvm.mlir.constant(2 : i32) : i32
    %len = llvm.mlir.constant({len(_TOO_SMALL_MESSAGE.encode())} : i64) : i64
    %msg = llvm.mlir.addressof @{_MESSAGE_GLOBAL} : !llvm.ptr
    %w = llvm.call @write(%fd, %msg, %len) : (i32, !llvm.ptr, i64) -> i64
    llvm.call @abort() : () -> ()
    llvm.unreachable
  ^ok:
    llvm.return
  }}
}}
"""
    fn = parse_mlir(text, "<zymase split-mode size check>").body.block.first_op
    fn.detach()
    return fn
