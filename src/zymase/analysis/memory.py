"""Memory in activity analysis (llvm dialect): which pointers need shadows.

Enzyme's shadow memory: every pointer that may point to active data has a shadow
pointer to memory of the same layout holding derivatives. Shadows start at
duplicated (``enzyme_dup``) arguments and follow pointer arithmetic, selects, block
arguments and pointer loads. When active data is stored through a pointer that has
no shadow yet, the need travels back to where the pointer came from: an ``alloca``
or ``malloc``/``calloc`` then gets a zeroed shadow allocation; a constant argument
is an error (the derivative would be lost); a global gets a zero-initialized shadow
global.

This module only decides; :mod:`zymase.autodiff.memory` emits the shadow code.
"""

from __future__ import annotations

import re

from zymase.autodiff.registry import call_memory_rule
from zymase.errors import ZymaseError
from zymase.autodiff.type_rules import carries_derivatives
from zymase.ir import Block, BlockArgument, IntegerAttr, Operation, SSAValue, StringAttr, llvm, llvm_ext, location_of
from zymase.analysis.op_classes import is_a

#: the root standing for what a call to an opaque function may write: it overlaps every
#: argument and global, as a global's name does (roots that are strings are globals).
#: Shared by the llvm memory model (autodiff/reverse.py) and the memref one.
UNSEEN_WRITES = "<memory a called function may write>"
#: the root standing for the C library's ``signgam``, the int that lgamma, lgammaf and
#: lgammal set besides their result (a global, like UNSEEN_WRITES it overlaps every
#: argument); a float-typed access (``float_typed_access``) never touches it
SIGNGAM = "<signgam, the int lgamma sets>"
SIGNGAM_SETTERS = {"lgamma", "lgammaf", "lgammal"}

ALLOCATORS = {"malloc", "calloc"}
#: allocators taking (alignment, size): malloc-like memory whose shadow must be as aligned
#: (LLVM may use the alignment for the shadow's accesses too)
ALIGNED_ALLOCATORS = {"aligned_alloc"}
#: on a call of a function registered with __enzyme_allocation_like (llvm/annotations.py):
#: the position of its size argument; the call allocates like malloc of that size
ALLOCATION_SIZE_ARG = "zymase.allocation_size_arg"
#: on a call of the deallocator registered with it: the position of the pointer it frees
DEALLOCATED_ARG = "zymase.deallocated_arg"
DEALLOCATORS = {"free"}
# The tape buffers of a derivative that is differentiated again (transforms/lower_to_llvm,
# "heap" caches) come from a small pool of spare malloc blocks, so that a Hessian-vector
# product called in a loop does not map and fault in fresh pages for its tapes each call:
# realloc and free as far as derivatives go (the shadows come from the same pool).
TAPE_POOL = {"__zymase_tape_realloc": "realloc", "__zymase_tape_free": "free"}
# Numba's runtime (NRT): an array's memory is a reference-counted MemInfo whose data
# pointer NRT_MemInfo_data_fast reads. A MemInfo that will hold active data gets a
# shadow MemInfo; data pointers derive from MemInfos like GEPs from pointers; reference
# counting touches no data.
# A list's MemInfo (NRT_MemInfo_new_varsize_dtor(size, dtor)) counts too: after the
# optimizer sinks the decrefs of several MemInfos into one (np.linalg.solve's temporary
# list and its arrays), a phi joins it with shadowed ones; its zeroed shadow is an empty
# list, which its destructor releases without touching any item.
NRT_ALLOCATORS = {"NRT_MemInfo_alloc_aligned", "NRT_MemInfo_alloc_safe_aligned", "NRT_MemInfo_alloc",
                  "NRT_MemInfo_alloc_safe", "NRT_MemInfo_new_varsize_dtor"}
NRT_DERIVE = {"NRT_MemInfo_data_fast", "NRT_MemInfo_data"}
NRT_REFCOUNT = {"NRT_incref", "NRT_decref"}
# NRT's raw allocator (scratch buffers without a MemInfo: the copy a slice assignment
# makes of a right-hand side that may overlap its target) behaves as malloc/free
NRT_RAW = {"NRT_Allocate": "malloc", "NRT_Free": "free"}
# C++'s operator new / new[] (Itanium names) allocate like malloc, and operator delete /
# delete[] (also the sized ones, whose second argument is the size) release like free.
# Every variant takes the size first and the pointer to release first; the over-aligned
# ones (std::align_val_t, an i64 after the size) get a shadow just as aligned.
CXX_ALIGNED_NEW = {"_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
                   "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t"}
CXX_ALLOCATION = {
    **{name: "malloc" for name in ("_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
                                   *CXX_ALIGNED_NEW)},
    **{name: "free" for name in ("_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZdlPvRKSt9nothrow_t",
                                 "_ZdaPvRKSt9nothrow_t", "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
                                 "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
                                 "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t")},
}
# External functions that only read the memory behind their pointer arguments (the
# comparisons return an integer, which carries no derivative: a memcmp of active doubles
# as a guard was refused as an opaque call, session 31; clang makes memcmp(..) == 0 a bcmp).
READ_ONLY_EXTERNALS = {"printf", "fprintf", "puts", "fputs", "strlen", "sprintf", "snprintf",
                       "memcmp", "bcmp", "strcmp", "strncmp"}
# Of those, the ones that write text through their first argument (they write nothing
# else): a destination with a shadow is refused (autodiff/common.py), as the bytes the
# text replaces would keep their derivatives (session 32: a buffer of doubles reused for
# sprintf kept them, and the doubles read back there had them, silently).
TEXT_WRITERS = {"sprintf", "snprintf"}
# External functions whose pointer arguments lead only to integers: Numba's reshape
# helper reads a shape and strides and writes new strides, in stack slots that also
# hold an array's data pointer (hence shadowed). No derivative flows through them, and
# the integer fields of a shadow are never read (only its pointers are).
# malloc_usable_size reads only the allocator's bookkeeping (zymase's forward mode of
# realloc calls it, so a derivative differentiated again meets it).
INTEGER_ONLY_EXTERNALS = {"numba_attempt_nocopy_reshape", "malloc_usable_size",
                           # Numba's prange schedule and threading layer (transforms/numba_parfor.py):
                           # integer bounds, and settings of the runtime's own
                           "get_sched_size", "do_scheduling_signed", "do_scheduling_unsigned",
                           "get_num_threads", "get_thread_id", "get_parallel_chunksize",
                           "set_parallel_chunksize"}
#: intrinsics that neither read nor write program memory (markers and hints)
MARKER_INTRINSICS = ("llvm.lifetime", "llvm.dbg", "llvm.assume", "llvm.experimental.noalias.scope.decl",
                     "llvm.prefetch")  # (Eigen's product kernels prefetch the packed blocks)


def callee_name(op: Operation) -> str | None:
    if is_a(op, llvm.CallOp) and op.callee is not None:
        return op.callee.root_reference.data
    return None


def intrinsic_base_name(op: Operation) -> str | None:
    if isinstance(op, llvm.CallIntrinsicOp):
        parts = op.intrin.data.split(".")
        return parts[1] if len(parts) > 1 else None
    return None


def float_typed_access(op: Operation) -> bool:
    """A load or store whose TBAA access type (clang's, ``zymase.tbaa``) is a C
    floating-point type: by C's aliasing rule it does not read or write an ``int`` such
    as ``signgam``. Without TBAA (-O0, Numba) nothing is assumed."""
    tbaa = op.attributes.get("zymase.tbaa")
    return isinstance(tbaa, StringAttr) and tbaa.data.strip() in ("double", "float", "long double")


def may_write_unseen_memory(fop: Operation | None) -> bool:
    """Whether a call to ``fop`` (None: an indirect call) may write memory that it does
    not reach through its pointer arguments: globals, or objects whose address escaped.
    Decided by the function's attributes (``memory(...)``, ``readonly``, ``readnone``);
    memory only the callee sees (``inaccessiblemem``, ``errnomem``) does not count, as
    the program cannot load it through a pointer of known roots."""
    if fop is None:
        return True
    attrs = fop.properties.get("passthrough")
    words = [a.data for a in attrs.data if isinstance(a, StringAttr)] if attrs is not None else []
    if "readnone" in words or "readonly" in words:
        return False
    for word in words:
        if word.startswith("memory(") and word.endswith(")"):
            # memory(<default kind>, <location>: <kind>, ...); no default means none
            default = "none"
            for item in word[len("memory("):-1].split(","):
                if ":" not in item:
                    default = item.strip()
            return "write" in default
    return True


def may_write_through_arguments(fop: Operation | None) -> bool:
    """Whether a call to the declared function ``fop`` may write memory its pointer
    arguments reach, by its attributes (``readonly``, ``readnone``, ``memory(...)``
    without ``write`` for the default or ``argmem`` say it cannot)."""
    if fop is None:
        return True
    attrs = fop.properties.get("passthrough")
    words = [a.data for a in attrs.data if isinstance(a, StringAttr)] if attrs is not None else []
    if "readnone" in words or "readonly" in words:
        return False
    for word in words:
        if word.startswith("memory(") and word.endswith(")"):
            for item in word[len("memory("):-1].split(","):
                where, _, kind = item.rpartition(":")
                if "write" in kind and where.strip() in ("", "argmem"):
                    return True
            return False
    return True


def args_marked(fn: Operation, attr: str) -> set[int]:
    """Positions of the parameters of llvm function ``fn`` that carry ``attr``
    (``llvm.noalias``, ``llvm.dead_on_return``)."""
    attrs = fn.properties.get("arg_attrs")
    if attrs is None:
        return set()
    return {i for i, d in enumerate(attrs.data) if attr in d.data}


def is_pointer(v: SSAValue) -> bool:
    return is_a(v.type, llvm.LLVMPointerType)


#: addresses below this are in the null page, which Linux never maps (vm.mmap_min_addr is
#: 4096 or more): nothing is ever stored there, so such a constant is only arithmetic on
#: null (``begin + k`` of an empty std::vector, folded by LLVM into ``inttoptr 16``)
NULL_PAGE = 4096


def null_page_address(op: Operation) -> bool:
    """Whether ``op`` is ``inttoptr`` of a constant in the null page: like null, it has
    no memory of its own and is its own shadow (the shadow of null plus k bytes)."""
    if not isinstance(op, llvm.IntToPtrOp):
        return False
    const = op.input.owner
    value = getattr(const, "value", None) if isinstance(const, llvm.ConstantOp) else None
    return isinstance(value, IntegerAttr) and 0 <= value.value.data < NULL_PAGE


def holds_pointer(t) -> bool:
    """Whether a value of type ``t`` is a pointer or an aggregate with one among its fields."""
    if isinstance(t, llvm.LLVMPointerType):
        return True
    if isinstance(t, llvm.LLVMStructType):
        return any(holds_pointer(x) for x in t.types.data)
    if isinstance(t, llvm.LLVMArrayType):
        return holds_pointer(t.type)
    return False


_SYMBOL = re.compile(r'@("(?:[^"\\]|\\.)*"|[-\w.$]+)')


def initializer_symbols(glob: Operation) -> frozenset[str]:
    """The symbols (globals, functions) whose addresses the initializer of global
    ``glob`` holds: a table of pointers, or the constant clang copies a struct
    initializer such as ``{buf, n}`` from at -O0 (the reader keeps such initializers
    as LLVM text, ``zymase.llvm_init``)."""
    init = glob.attributes.get("zymase.llvm_init")
    if not isinstance(init, StringAttr):
        return frozenset()
    return frozenset(m.group(1).strip('"') for m in _SYMBOL.finditer(init.data))


#: The ops whose class alone decides memory_kind (what isinstance would find below).
_CLASS_KINDS = (
    (llvm.LoadOp, "load"),
    (llvm.StoreOp, "store"),
    ((llvm.GEPOp, llvm.BitcastOp, llvm_ext.AddrSpaceCastOp), "derive"),
    (llvm.AllocaOp, "alloca"),
    (llvm.AddressOfOp, "global"),
)
#: op class -> its kind, _NO_KIND when the class alone says the op has none, or "" when
#: the class alone does not decide (calls, intrinsics ...): filled on first
#: sight of a class. The analyses and generators ask for every op, many times, and
#: xDSL's op classes are ABCs, whose isinstance checks are slow.
_KIND_OF_CLASS: dict[type, str] = {}


#: The ops whose kind the checks after the class's may decide: calls (by callee name or
#: an allocation attribute), intrinsics, pointer freezes and selects, memref ops. Ops of
#: any other class (arithmetic, branches, casts of numbers ...) do nothing to memory the
#: model tracks; the class alone says so, which spares every later check for them.
_CLASSES_ASKED_FURTHER = (llvm.CallOp, llvm.CallIntrinsicOp, llvm_ext.FreezeOp, llvm.SelectOp)
_NO_KIND = "-"  # _KIND_OF_CLASS's mark of such a class


def _class_kind(cls: type) -> str:
    kind = _KIND_OF_CLASS.get(cls)
    if kind is None:
        kind = next((k for c, k in _CLASS_KINDS if issubclass(cls, c)), "")
        if not kind and not issubclass(cls, _CLASSES_ASKED_FURTHER) and cls.dialect_name() != "memref":
            kind = _NO_KIND
        _KIND_OF_CLASS[cls] = kind
    return kind


#: the destructor Numba gives a jitclass instance's MemInfo, named after the class and its
#: fields: ``_Dtor.instance.jitclass.Box#7f2...<s:float64,n:int64>``
_JITCLASS_DTOR = re.compile(r"^_Dtor\.instance\.jitclass\.[^<]*<(.*)>$")
_SCALAR_FIELD = re.compile(r"^\w+:(float(16|32|64)|u?int(8|16|32|64)|bool)$")


def _scalar_jitclass_instance(op: Operation) -> bool:
    """Whether ``op``, a call ``NRT_MemInfo_alloc_dtor(size, dtor)``, allocates a jitclass
    instance whose fields are all numbers: its destructor touches nothing, so its memory
    is a MemInfo like an array's, and its shadow (a second instance, zeroed) is released
    the same way. An instance holding arrays or other instances has a destructor that
    releases their MemInfos, which a shadow instance would release again (session 34:
    a crash), so those stay unmodelled (refused where they hold derivatives)."""
    if len(op.operands) != 2:
        return False
    dtor = op.operands[1].owner
    while isinstance(dtor, llvm.BitcastOp):
        dtor = dtor.operands[0].owner
    if not isinstance(dtor, llvm.AddressOfOp):
        return False
    fields = _JITCLASS_DTOR.match(dtor.global_name.root_reference.data)
    return fields is not None and all(_SCALAR_FIELD.match(f) for f in fields.group(1).split(","))


def memory_kind(op: Operation) -> str | None:
    """What an op does to memory, for ops the memory model handles."""
    kind = _class_kind(type(op))
    if kind:
        # loads, stores, GEPs and casts, allocas, addresses of globals; or nothing
        return None if kind is _NO_KIND else kind
    if op.dialect_name() == "memref":
        return "memref"  # see zymase.analysis.memref and zymase.autodiff.rules.memref
    if is_a(op, llvm_ext.FreezeOp) and is_pointer(op.results[0]):
        return "derive"  # the same address (freeze only pins an undefined one)
    if is_a(op, llvm.SelectOp) and is_pointer(op.results[0]):
        return "select"
    if ALLOCATION_SIZE_ARG in op.attributes:
        return "malloc"  # a custom allocator (Enzyme's __enzyme_allocation_like)
    key = (type(op), _called_name(op))
    kind = _KIND_OF_CALL.get(key, _UNASKED)
    if kind is _UNASKED:
        kind = _call_kind(op)
        if key[1] != "NRT_MemInfo_alloc_dtor":  # (its kind depends on its destructor operand)
            _KIND_OF_CALL[key] = kind
    return kind


#: (op class, callee or intrinsic name) -> memory_kind of such a call, filled on first sight:
#: the analyses and generators ask for every op, many times, and a call's kind is decided by
#: its name alone (after the class, the pointer selects and freezes and the allocation
#: attribute, checked before): the name's way through the tables below cost more than the
#: rest of memory_kind together. (The call-level rules it consults are all registered when
#: the first is looked up: registry.call_memory_rule loads them.)
_KIND_OF_CALL: dict[tuple[type, str | None], str | None] = {}
_UNASKED = object()


def _called_name(op: Operation) -> str | None:
    """The callee's name of a direct call, the intrinsic's of an intrinsic call."""
    props = op.properties
    callee = props.get("callee")
    if callee is not None:
        return callee.root_reference.data
    intrin = props.get("intrin")
    return intrin.data if intrin is not None else None


def _call_kind(op: Operation) -> str | None:
    """memory_kind of a call (or of an op of a class whose kind is asked further that is
    none of the above), by its callee."""
    name = callee_name(op)
    if name in NRT_DERIVE:
        return "derive"
    if name in NRT_ALLOCATORS or (name == "NRT_MemInfo_alloc_dtor" and _scalar_jitclass_instance(op)):
        return "nrt_alloc"
    if name in NRT_REFCOUNT:
        return "refcount"
    if name in NRT_RAW:
        return NRT_RAW[name]
    if name in TAPE_POOL:
        return TAPE_POOL[name]
    if name in CXX_ALLOCATION:
        return CXX_ALLOCATION[name]
    if name in ALLOCATORS or name in ("realloc", "posix_memalign"):
        return name
    if name in ALIGNED_ALLOCATORS:
        return "malloc"  # C11's aligned_alloc(alignment, size): its shadow is aligned too
    if name in DEALLOCATORS:
        return "free"
    if name in ("memcpy", "memmove") or intrinsic_base_name(op) in ("memcpy", "memmove"):
        return "memcpy"
    if name == "memset" or intrinsic_base_name(op) == "memset":
        return "memset"
    if call_memory_rule(name) is not None:
        return "call_rule"  # an external function with a call-level rule (BLAS)
    return None


def inline_asm_may_access_memory(op: Operation) -> bool:
    """Whether a call of inline assembly may read or write memory: a template with
    instructions that is given a pointer, uses a memory constraint (``m``, ``*``) or
    clobbers ``memory``. An empty template (a compiler barrier, benchmark harnesses'
    ``asm volatile("" ::: "memory")``) runs no instruction, whatever its constraints
    promise the compiler."""
    if not is_a(op, llvm.InlineAsmOp) or not op.asm_string.data.strip():
        return False
    constraints = op.constraints.data
    return ("~{memory}" in constraints or "*" in constraints
            or any(code.lstrip("=+&").startswith(("m", "o", "V", "Q")) for code in constraints.split(","))
            or any(is_pointer(o) for o in op.operands))


def call_rule_writes(op: Operation) -> list[SSAValue]:
    """The pointers a ``call_rule`` call writes through (its rule says which)."""
    rule = call_memory_rule(callee_name(op))
    return [op.operands[i] for i in rule.writes(op)]


def allocation_size_position(op: Operation) -> int:
    """The operand of a ``malloc``-kind call that is the size in bytes."""
    custom = op.attributes.get(ALLOCATION_SIZE_ARG)
    if custom is not None:
        return custom.value.data
    return 1 if callee_name(op) in ALIGNED_ALLOCATORS else 0


ALLOCATION_KINDS = ("alloca", "malloc", "calloc", "realloc", "nrt_alloc")
"""Ops whose result points into a new object, distinct from all other memory."""


#: on the GEP that derives one lane's part of a lane block (autodiff/lane_blocks.py): the
#: lane's position in the block, whose parts never overlap
LANE_PART = "zymase.lane_part"


def pointer_roots(ptr: SSAValue, entry: Block, incoming, seen=None, *, parts: bool = False,
                  slots: dict | None = None) -> set | None:
    """The objects pointer ``ptr`` may point into: arguments of the ``entry`` block,
    allocation ops (:data:`ALLOCATION_KINDS`) and global names; None when unknown (a
    pointer loaded from memory, returned by an unknown call, made from an integer).
    ``incoming(arg)`` lists the values a non-entry block argument receives. With
    ``parts``, a pointer into one lane's part of a lane block has the root
    ``(block, lane position)`` instead of the block's allocation. With ``slots``
    (:func:`slot_contents`), a pointer loaded from a local variable (unoptimized code's
    ``alloca ptr``) has the roots of every pointer stored into it."""
    seen = set() if seen is None else seen
    if ptr in seen:
        return set()
    seen.add(ptr)
    if is_a(ptr, BlockArgument):
        if ptr.block is entry:
            return {ptr}
        out: set = set()
        for val in incoming(ptr):
            sub = pointer_roots(val, entry, incoming, seen, parts=parts, slots=slots)
            if sub is None:
                return None
            out |= sub
        return out
    op = ptr.owner
    kind = memory_kind(op)
    if kind == "derive":
        sub = pointer_roots(op.operands[0], entry, incoming, seen, parts=parts, slots=slots)
        part = op.attributes.get(LANE_PART) if parts else None
        if part is not None and sub is not None:
            return {(r, part.value.data) for r in sub}
        return sub
    if kind == "select":
        a = pointer_roots(op.operands[1], entry, incoming, seen, parts=parts, slots=slots)
        b = pointer_roots(op.operands[2], entry, incoming, seen, parts=parts, slots=slots)
        return None if a is None or b is None else a | b
    if kind in ALLOCATION_KINDS:
        return {op}
    if kind == "global":
        return {op.global_name.root_reference.data}
    if kind == "load" and slots is not None and not isinstance(op.ptr, BlockArgument):
        contents = slots.get(op.ptr.owner)
        return None if contents is None else set(contents)
    return None


def slot_contents(allocas, entry: Block, incoming) -> dict:
    """For each ``alloca`` of ``allocas`` whose every use is known (:func:`pointers_stored`
    with ``exact``), the roots (:func:`pointer_roots`) of all the pointers ever stored into
    it, through other such variables (``t = u; u = v; v = t``); None when one of them is
    unknown. Found by iterating to a fixpoint: the sets only grow, and None absorbs."""
    stored = {a: pointers_stored(a, exact=True) for a in allocas}
    contents: dict = {a: (set() if values is not None else None) for a, values in stored.items()}
    changed = True
    while changed:
        changed = False
        for a, values in stored.items():
            if contents[a] is None:
                continue
            found: set | None = set()
            for v in values:
                sub = pointer_roots(v, entry, incoming, slots=contents)
                if sub is None:
                    found = None
                    break
                found |= sub
            if found is None or not found <= contents[a]:
                contents[a] = None if found is None else contents[a] | found
                changed = True
    return contents


def pointers_stored(root: Operation, *, exact: bool = False, passed_to: Operation | None = None
                    ) -> list[SSAValue] | None:
    """The pointers (other than null and undef) stored anywhere into the ``alloca``
    ``root``; None when its address goes elsewhere than to loads, stores into it,
    markers and integer-only helpers (a block argument, a call, a copy: unknown). With
    ``exact``, also None when a value that is not a pointer is stored into it (an
    integer made from a pointer) or its address goes to an integer-only helper: then
    every pointer loaded from it is one of the values listed. ``passed_to``: a call
    that may receive the address too (and only read it)."""
    work, seen, stored = [root.results[0]], set(), []
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        for use in v.uses:
            op = use.operation
            kind = memory_kind(op)
            if kind in ("derive", "select"):
                work.extend(op.results)
            elif kind == "load" or is_marker(op) or (not exact and callee_name(op) in INTEGER_ONLY_EXTERNALS):
                continue
            elif op is passed_to:
                continue
            elif kind == "store" and op.ptr is v and op.value is not v:
                val = op.value
                if is_pointer(val) and not isinstance(val.owner, (llvm.ZeroOp, llvm.UndefOp)):
                    stored.append(val)
                elif exact and not is_pointer(val):
                    return None
            elif kind == "memset" and not exact:
                continue  # bytes, never a shadowed pointer
            else:
                return None
    return stored


def derived_uses(start: SSAValue, successor_operands, *, through_realloc: bool = False):
    """Each use of pointer ``start``, or of a pointer derived from it (GEPs, casts,
    selects, block arguments; with ``through_realloc``, the result of ``realloc``), as
    ``(pointer, op)``; the deriving uses themselves are followed, not yielded.
    ``successor_operands(term)`` lists, per successor of a terminator, the values it
    passes to that block."""
    work, seen = [start], set()
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        for use in v.uses:
            op = use.operation
            kind = memory_kind(op)
            if kind in ("derive", "select"):
                work.extend(op.results)
            elif op.successors:
                for block, values in zip(op.successors, successor_operands(op)):
                    work.extend(block.args[k] for k, x in enumerate(values) if x is v)
            else:
                if kind == "realloc" and through_realloc:
                    work.extend(op.results)
                yield v, op


def is_marker(op: Operation) -> bool:
    """An intrinsic call that neither reads nor writes program memory."""
    return isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(MARKER_INTRINSICS)


def address_escapes(alloc: Operation, successor_operands) -> bool:
    """Whether the address of the object ``alloc`` allocates may become visible to code
    that does not see this function's SSA values: stored to memory, passed to a call that
    is not a memory primitive, returned, or turned into an integer. Derived pointers
    (GEPs, casts, selects, block arguments) are followed. ``successor_operands(term)``
    lists, per successor of a terminator, the values it passes to that block."""
    for v, op in derived_uses(alloc.results[0], successor_operands, through_realloc=True):
        kind = memory_kind(op)
        if kind == "load" or (kind == "store" and op.ptr is v and op.value is not v):
            continue
        if kind in ("free", "memcpy", "memset", "realloc") or isinstance(op, llvm.ICmpOp) or is_marker(op):
            continue
        return True
    return False


class MemoryModel:
    """The memory half of activity analysis for one function body."""

    def __init__(self, fname: str, entry_args, arg_activities, defined=None, inactive_globals=frozenset()):
        self.fname = fname
        # globals marked inactive (Enzyme's enzyme_inactive): never shadowed; active data
        # stored into them drops its derivative, and what is loaded from them is constant
        self.inactive_globals = inactive_globals
        # defined(op) -> the callee when op calls a function defined in the module
        self.defined = defined or (lambda op: None)
        # pointer arguments with shadows: dup, or active (forward mode analyzes a dup
        # argument as active, see autodiff/forward.py)
        self.dup_args = {a for a, act in zip(entry_args, arg_activities)
                         if (act.is_dup or act.is_active) and is_pointer(a)}
        self.entry_args = list(entry_args)
        self._incoming: dict = {}
        self._constant_memory: dict = {}  # alloca op -> holds only constant pointers
        self._field_stores: dict = {}  # alloca op -> slot_field_stores(op)

    def is_pointer(self, v: SSAValue) -> bool:
        return is_pointer(v)

    def handles(self, op: Operation) -> bool:
        return memory_kind(op) is not None or self.is_memory_call(op)

    def is_memory_call(self, op: Operation) -> bool:
        """A call to a defined function that receives pointers (left after inlining:
        a recursive one); differentiated in split mode."""
        return self.defined(op) is not None and any(is_pointer(o) for o in op.operands)

    def shadowable(self, p: SSAValue, seen=None) -> bool:
        """Whether ``p`` can be given a shadow (all its origins can)."""
        seen = set() if seen is None else seen
        if p in seen:
            return True
        seen.add(p)
        if isinstance(p, BlockArgument):
            if p.block.parent is not None and p.block is p.block.parent.blocks[0]:
                return p in self.dup_args
            return all(self.shadowable(v, seen) for v in self._incoming.get(p, ()))
        op = p.owner
        kind = memory_kind(op)
        if kind == "derive":
            return self.shadowable(op.operands[0], seen)
        if kind == "select":
            return self.shadowable(op.operands[1], seen) and self.shadowable(op.operands[2], seen)
        if kind == "load":
            # a pointer read back from memory has the shadow that was stored with it:
            # every pointer stored into that slot must be shadowable too
            slot = op.ptr
            stored = [st.value for st in self._stores_into(slot) if is_pointer(st.value)]
            return self.shadowable(slot, seen) and all(self.shadowable(v, seen) for v in stored)
        return kind in ("alloca", "malloc", "calloc", "realloc", "global", "nrt_alloc") or isinstance(
            op, (llvm.ZeroOp, llvm.UndefOp)
        ) or null_page_address(op)

    def transfer(self, op: Operation, info, incoming) -> None:
        kind = memory_kind(op)
        shadowed = info.shadowed
        self._incoming = incoming
        if kind is None:  # a call to a defined function with pointer arguments
            if any(o in info.varied or o in shadowed for o in op.operands):
                for r in op.results:
                    if carries_derivatives(r.type):
                        info.varied.add(r)
                for o in op.operands:
                    if is_pointer(o) and o not in shadowed:
                        if self._holds_constant_pointers_for(o, op):
                            continue  # the callee gets it as constant memory
                        if self.shadowable(o):
                            self.need_shadow(o, op, info, incoming)
                        else:
                            self._parfor_writes_constant(op, o)
            return
        if kind == "derive":
            if op.operands[0] in shadowed:
                shadowed.add(op.results[0])
        elif kind == "select":
            if op.operands[1] in shadowed or op.operands[2] in shadowed:
                self.need_shadow(op.results[0], op, info, incoming)
        elif kind == "global":
            if op.global_name.root_reference.data in info.shadow_globals:
                shadowed.add(op.results[0])
        elif kind == "load":
            if op.ptr in shadowed and not self._into_inactive_global(op.ptr, op, read=True):
                r = op.results[0]
                if carries_derivatives(r.type):
                    info.varied.add(r)
                elif (is_pointer(r) and not self.holds_only_constant_pointers(op.ptr)
                      and self.constant_field_pointers(op.ptr) is None):
                    # (a pointer read from memory that only ever holds constant pointers
                    # is constant: its shadow slot holds null, and code that accumulated
                    # adjoints through it wrote through null)
                    shadowed.add(r)
        elif kind == "store":
            v = op.value
            if (carries_derivatives(v.type) and v in info.varied) or (is_pointer(v) and v in shadowed):
                if not self._into_inactive_global(op.ptr, op):
                    self.need_shadow(op.ptr, op, info, incoming)
            elif is_pointer(v) and op.ptr in shadowed and v not in shadowed and self.shadowable(v):
                # a pointer kept in shadowed memory (e.g. a local `double *t = malloc(..)`
                # before mem2reg) is loaded back as a shadowed pointer: it needs its shadow
                self.need_shadow(v, op, info, incoming)
        elif kind == "memcpy":
            dst, src = op.operands[0], op.operands[1]
            if src in shadowed and not self._into_inactive_global(dst, op):
                self.need_shadow(dst, op, info, incoming)
        elif kind == "realloc":
            if op.operands[0] in shadowed:
                self.need_shadow(op.results[0], op, info, incoming)
        elif kind == "call_rule":
            # a call-level rule (BLAS): what it writes and returns depends on what it reads
            rule = call_memory_rule(callee_name(op))
            if any(o in shadowed or o in info.varied for o in op.operands):
                try:  # a call the rule cannot read right (another prototype) is refused
                    rule.check(op)
                except ZymaseError as err:
                    err.function = err.function or self.fname
                    raise
            # (an MPI receive's output may be active whatever this function's inputs are)
            scalars_varied = rule.receives(op) or any(op.operands[i] in info.varied for i in rule.scalar_inputs(op))
            if scalars_varied or any(op.operands[i] in shadowed for i in rule.reads(op)):
                for r in op.results:
                    if carries_derivatives(r.type):
                        info.varied.add(r)
                for i in rule.float_outputs(op):
                    varied = scalars_varied or any(op.operands[j] in shadowed for j in rule.output_reads(op, i))
                    if varied and not self._into_inactive_global(op.operands[i], op):
                        self.need_shadow(op.operands[i], op, info, incoming)

    def _parfor_writes_constant(self, call: Operation, p: SSAValue) -> None:
        """A prange loop (parfor) given active data that writes into constant memory ``p``
        (an array argument without a shadow, e.g. ``out`` outside ``argnums``): whether
        the write is active is the parfor's own analysis, whose refusal would name the
        gufunc, not the argument. The serial copy then names the argument (and the front
        end gives ``out`` a shadow and tries the parallel derivative again); a float
        written there that carries no derivative gets the serial derivative, as before."""
        from zymase.autodiff.numba_parfor import slot_of
        from zymase.transforms.numba_parfor import ParforSerial, is_parfor

        callee = self.defined(call)
        if not is_parfor(callee):
            return
        slots = {i - 3 for i, o in enumerate(call.operands) if o is p and i >= 3}
        for op in callee.walk():
            kind = memory_kind(op)
            # (a float stored, or bytes copied: an integer, like a thread id, carries none)
            if kind == "store" and carries_derivatives(op.value.type):
                target = op.ptr
            else:
                target = op.operands[0] if kind == "memcpy" else None
            if target is not None and slot_of(target) in slots:
                raise ParforSerial("a prange loop writes into an array argument without a shadow",
                                   function=self.fname)

    def _into_inactive_global(self, ptr: SSAValue, where: Operation, *, read: bool = False) -> bool:
        """Whether ``ptr`` points only into globals marked inactive: a write there drops
        the derivative, a read gives a constant. A write through a pointer that may also
        point into other memory (``cond ? &inactive : p``, which the optimizer makes of
        two branches) goes through the shadow: the inactive global's shadow is then a
        scratch global that only such writes touch, zero in reverse mode (nothing
        accumulates into it, its loads being constant) and never read in forward mode.
        A read through such a pointer is refused: its derivative would be the
        other memory's for one and must be zero for the other."""
        if not self.inactive_globals:
            return False
        entry = self.entry_args[0].block if self.entry_args else None
        roots = pointer_roots(ptr, entry, lambda a: self._incoming.get(a, ()))
        inactive = {r for r in roots or () if isinstance(r, str) and r in self.inactive_globals}
        if not inactive:
            return False
        if inactive == roots:
            return True
        if read:
            raise _inactive_global_error(sorted(inactive)[0], where, self.fname)
        return False

    def holds_only_constant_pointers(self, slot: SSAValue) -> bool:
        """Whether every pointer the memory at ``slot`` can hold is constant (can have
        no shadow): ``slot`` points into a single ``alloca`` whose address goes nowhere
        but to loads, stores into it, markers and integer-only helpers, and no pointer
        stored into it is shadowable. A constant array's descriptor that Numba keeps in
        a stack slot next to a differentiated one is such memory."""
        root = self._single_alloca(slot)
        if root is None:
            return False
        if root not in self._constant_memory:  # (the IR does not change during analysis)
            stored = pointers_stored(root)
            self._constant_memory[root] = stored is not None and not any(self.shadowable(v) for v in stored)
        return self._constant_memory[root]

    def constant_field_pointers(self, slot: SSAValue) -> list[SSAValue] | None:
        """The pointers that a pointer loaded at ``slot`` can be, when ``slot`` is a field of
        a local struct or array of structs (:mod:`zymase.analysis.struct_fields`)
        into which only constant pointers, null or undef are ever stored at that offset;
        None otherwise. ``struct P p = {x, y}`` with ``x`` enzyme_const and ``y`` dup: the
        struct has a shadow (for ``y``), whose ``x`` field holds null, so ``p.x`` must be
        constant, not a shadowed pointer whose shadow is null (a segfault where the
        derivative read ``x``'s tangent or added its adjoint, session 33)."""
        from zymase.analysis.struct_fields import field_overlap, slot_field_stores

        root = self._single_alloca(slot) or self._held_alloca(slot)
        if root is None:
            return None
        if root not in self._field_stores:  # (the IR does not change during analysis)
            self._field_stores[root] = slot_field_stores(root)
        fields = self._field_stores[root]
        if fields is None or slot not in fields[1]:
            return None
        at, found = fields[1][slot], []
        for c, m, size, value in fields[0]:
            meets = field_overlap(at, 8, (c, m), size)
            if meets == "apart":
                continue  # another field
            if isinstance(value.owner, (llvm.ZeroOp, llvm.UndefOp, llvm_ext.PoisonOp)):
                continue
            if meets != "same" or not is_pointer(value) or self.shadowable(value):
                return None  # bytes of unknown meaning, or a pointer that may have a shadow
            found.append(value)
        return found

    def _held_alloca(self, slot: SSAValue) -> Operation | None:
        """The local struct whose address ``slot`` derives from, loaded from a field of
        another local struct (``o.in->c`` for ``struct Out o = {&in, n}``); the one address
        stored at that field is checked by :func:`~zymase.analysis.struct_fields.slot_field_stores`."""
        from zymase.analysis.struct_fields import alloca_of, field_overlap, slot_field_stores

        base = slot
        while not isinstance(base, BlockArgument) and memory_kind(base.owner) == "derive" \
                and callee_name(base.owner) is None:
            base = base.owner.operands[0]
        if isinstance(base, BlockArgument) or memory_kind(base.owner) != "load":
            return None
        outer = alloca_of(base.owner.ptr)
        if outer is None:
            return None
        if outer not in self._field_stores:
            self._field_stores[outer] = slot_field_stores(outer)
        fields = self._field_stores[outer]
        if fields is None or base.owner.ptr not in fields[1]:
            return None
        at = fields[1][base.owner.ptr]
        held = {alloca_of(value) for c, m, size, value in fields[0]
                if field_overlap(at, 8, (c, m), size) == "same" and is_pointer(value)}
        return held.pop() if len(held) == 1 and None not in held else None

    def _holds_constant_pointers_for(self, slot: SSAValue, call: Operation) -> bool:
        """Whether ``slot``, passed to the defined function ``call`` calls, is a local
        variable holding only constant pointers (``double *p = x`` with ``x``
        enzyme_const; the captured variables of an OpenMP region): given a shadow, it
        would hold null, and the callee, which loads the pointer and reads through its
        shadow, would read through null. As constant memory the callee's loads are
        constant; a callee storing a shadowed pointer into it is refused there."""
        root = self._single_alloca(slot)
        if root is None or slot is not root.results[0]:
            return False
        stored = pointers_stored(root, passed_to=call)
        return bool(stored) and not any(self.shadowable(v) for v in stored)

    def _single_alloca(self, slot: SSAValue) -> Operation | None:
        """The one ``alloca`` ``slot`` points into, if that is all it can point into."""
        if not self.entry_args:
            return None
        roots = pointer_roots(slot, self.entry_args[0].block, lambda a: self._incoming.get(a, ()))
        if roots is None or len(roots) != 1:
            return None
        (root,) = roots
        if not isinstance(root, Operation) or memory_kind(root) != "alloca":
            return None
        return root

    def _stores_into(self, slot: SSAValue):
        """Stores whose address is exactly ``slot`` (pointer slots of -O0 code)."""
        return [u.operation for u in slot.uses if isinstance(u.operation, llvm.StoreOp) and u.operation.ptr is slot]

    def need_shadow(self, p: SSAValue, where: Operation | None, info, incoming) -> None:
        """``p`` must have a shadow: walk back to where it comes from. ``where`` is the
        op that needs it (None: a phi joining it with shadowed pointers)."""
        work = [p]
        while work:
            v = work.pop()
            if v in info.shadowed:
                continue
            info.shadowed.add(v)
            if isinstance(v, BlockArgument):
                if v.block.parent is not None and v.block is v.block.parent.blocks[0]:
                    if v not in self.dup_args:
                        i = self.entry_args.index(v) + 1 if v in self.entry_args else 0
                        raise ZymaseError(
                            f"active data is written through argument {i} of '{self.fname}', which has no shadow",
                            construct=_describe(where) if where is not None else "a pointer phi",
                            function=self.fname,
                            location=location_of(where) if where is not None else None,
                            hint="mark the pointer enzyme_dup and pass a shadow after it",
                        )
                    continue
                work.extend(incoming.get(v, ()))
                continue
            op = v.owner
            kind = memory_kind(op)
            if kind == "derive":
                work.append(op.operands[0])
            elif kind == "select":
                work += [op.operands[1], op.operands[2]]
            elif kind in ("alloca", "malloc", "calloc", "nrt_alloc"):
                info.shadow_allocations.add(op)
            elif kind == "realloc":
                # the old contents move to the new memory: both need shadows
                info.shadow_allocations.add(op)
                work.append(op.operands[0])
            elif kind == "load":
                work.append(op.ptr)  # a pointer loaded from memory: that memory needs shadows
                in_field = self.constant_field_pointers(op.ptr)
                if in_field:
                    work += in_field  # (a constant argument's is an error naming it)
                elif self.holds_only_constant_pointers(op.ptr):
                    # what it loads is one of the constant pointers stored there: they
                    # need the shadow (a constant argument's is an error naming it).
                    # Unoptimized code stores a struct's field through one GEP and loads
                    # it through another, so when no store uses the load's own address,
                    # every pointer stored into the alloca is a candidate (all constant)
                    exact = [st.value for st in self._stores_into(op.ptr) if is_pointer(st.value)
                             and not isinstance(st.value.owner, (llvm.ZeroOp, llvm.UndefOp))]
                    work += exact or pointers_stored(self._single_alloca(op.ptr))
            elif isinstance(op, (llvm.ZeroOp, llvm.UndefOp, llvm_ext.PoisonOp)) or null_page_address(op):
                continue
            elif isinstance(op, llvm.AddressOfOp):
                # a global written with active data gets a shadow global; every
                # address of it then has a shadow (see transfer; an inactive global's
                # is the scratch of _into_inactive_global)
                info.shadow_globals.add(op.global_name.root_reference.data)
            else:
                # where is None for a pointer that reaches shadowed memory through a phi:
                # name the op that made it instead
                at = op if where is None else where
                if isinstance(op, llvm.CallOp) and op.callee is None:
                    raise _indirect_allocation_error(op, at, self.fname)
                raise ZymaseError(
                    f"active data is written through {_pointer_origin(op)}, whose memory has no shadow",
                    construct=_describe(at),
                    function=self.fname,
                    location=location_of(at),
                    hint="allocate aligned memory with posix_memalign instead of rounding an address as an "
                    "integer" if isinstance(op, llvm.IntToPtrOp) else _library_hint(op) or
                    ("a thread-local variable gets no shadow: keep the active value in an ordinary "
                     "variable" if _thread_local_variable(op) else None) or
                    "write active data only to local buffers, malloc'd memory or enzyme_dup arguments",
                )

    def refuse_addresses_in_initializers(self, blocks, info, symbols) -> None:
        """Refuse a pointer read from a global whose initializer holds the address of a
        global written with active data (``double *const table[] = {buf, ...}``, or a
        ``{buf, n}`` struct initializer that clang copies from a constant at -O0): such a
        pointer gets no shadow, so what is read through it would be taken as constant and
        its derivative lost. Run after the analysis, when the active globals are known."""
        if not info.shadow_globals:
            return
        entry = self.entry_args[0].block if self.entry_args else None
        for b in blocks:
            for op in b.ops:
                kind = memory_kind(op)
                if kind == "load" and holds_pointer(op.results[0].type):
                    source = op.ptr
                elif kind == "memcpy":
                    source = op.operands[1]
                else:
                    continue
                for root in pointer_roots(source, entry, lambda a: self._incoming.get(a, ())) or ():
                    table = symbols.get(root) if isinstance(root, str) else None
                    held = initializer_symbols(table) & info.shadow_globals if isinstance(table, llvm.GlobalOp) else ()
                    if held:
                        # (a load hoisted out of its loop may have lost its line: its
                        # users' lines name the same source)
                        where = location_of(op) or next(
                            (loc for r in op.results for u in r.uses if (loc := location_of(u.operation))), None)
                        raise ZymaseError(
                            f"the address of the global '{sorted(held)[0]}', which holds active data, is kept in "
                            f"the initializer of the global '{root}' (a table of pointers or a struct initializer); "
                            "a pointer read from there has no shadow, and the derivative through it would be lost",
                            construct=_describe(op),
                            function=self.fname,
                            location=where,
                            hint=f"take the address of '{sorted(held)[0]}' directly in the differentiated code, "
                            "or pass the array as a pointer argument (enzyme_dup)",
                        )

    def stored_to_shadow(self, blocks, info):
        """Float values stored into shadowed memory, or handed to calls that may
        store them there: outputs of the function."""
        out = []
        for b in blocks:
            for op in b.ops:
                if is_a(op, llvm.StoreOp) and op.ptr in info.shadowed and op.value in info.varied:
                    out.append(op.value)
                elif self.is_memory_call(op) and any(o in info.shadowed for o in op.operands):
                    out += [o for o in op.operands if carries_derivatives(o.type) and o in info.varied]
                elif memory_kind(op) == "call_rule" and any(
                        op.operands[i] in info.shadowed for i in call_memory_rule(callee_name(op)).float_outputs(op)):
                    rule = call_memory_rule(callee_name(op))
                    out += [op.operands[i] for i in rule.scalar_inputs(op) if op.operands[i] in info.varied]
        return out


def _describe(op: Operation) -> str:
    name = callee_name(op)
    if name:
        return f"call @{name}"
    if isinstance(op, llvm.CallIntrinsicOp):
        return f"call @{op.intrin.data}"
    return op.name


def _pointer_origin(op: Operation) -> str:
    """The op that made a pointer, in the user's terms where one exists: a pointer taken
    out of a struct that a (recursive, not inlined) call returned names that call."""
    if isinstance(op, llvm.ExtractValueOp) and isinstance(op.container.owner, llvm.CallOp):
        name = callee_name(op.container.owner)
        if name:
            from zymase.llvm.demangle import demangle  # (C++ names; only on this error path)

            return f"a pointer field of the struct returned by '{demangle(name)}'"
    variable = _thread_local_variable(op)
    if variable is not None:
        return f"the thread-local variable '{variable}'"
    return f"a pointer produced by '{_describe(op)}'"


def _thread_local_variable(op: Operation) -> str | None:
    """The name of the thread-local global whose address ``op`` computes, if it does
    (clang reads a ``_Thread_local``/``__thread``/``thread_local`` variable through
    ``llvm.threadlocal.address``, which -O0 keeps)."""
    if not (isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith("llvm.threadlocal.address")):
        return None
    source = op.operands[0].owner if op.operands else None
    if isinstance(source, llvm.AddressOfOp):
        from zymase.llvm.demangle import demangle  # (C++ names; only on this error path)

        return demangle(source.global_name.root_reference.data)
    return None


def _library_hint(op: Operation) -> str | None:
    """The hint for a pointer returned by a function of the C++ standard library compiled
    into libstdc++ (``std::_Rb_tree_increment`` walking a std::map), if ``op`` is such a call."""
    name = callee_name(op) if isinstance(op, llvm.CallOp) else None
    if not name:
        return None
    from zymase.llvm.demangle import compiled_library_hint  # (only on this error path)

    return compiled_library_hint(name)


def _inactive_global_error(name: str, at: Operation, fname: str) -> ZymaseError:
    return ZymaseError(
        f"memory is read through a pointer that may point into the inactive global '{name}' "
        "or into memory that holds derivatives: the value read would be constant for the one and "
        "active for the other",
        construct=_describe(at),
        function=fname,
        location=location_of(at),
        hint="read the inactive global through its own name, apart from memory that holds derivatives",
    )


def _indirect_allocation_error(call: Operation, at: Operation, fname: str) -> ZymaseError:
    """Active data in memory returned by a call through a function pointer: which
    function it calls is not known (a pointer in a global that the program may change,
    or one computed at run time), so neither is whether it allocates."""
    from zymase.transforms.known_callees import callee_source

    source = callee_source(call)
    what = (f"a function pointer read from the global '{source[0]}', which the program may change"
            if source is not None else "a function pointer")
    return ZymaseError(
        f"active data is written to memory returned by an indirect call through {what}: zymase "
        "cannot tell whether it allocates, so that memory has no shadow",
        construct=_describe(at),
        function=fname,
        location=location_of(call) or location_of(at),
        hint="make the table of function pointers 'static const' (then the call is known to be the "
             "allocator it holds), or call malloc directly",
    )
