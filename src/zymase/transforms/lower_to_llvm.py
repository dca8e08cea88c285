"""Lowering of ``func``/``arith``/``math``/``cf`` and the enzyme tape ops to ``llvm``.

xDSL has no lowering of these dialects to its ``llvm`` dialect, so zymase owns one
(docs/architecture.md, section 5). The output is what :mod:`zymase.llvm.writer` turns
into LLVM IR text: ``llvm.func`` ops whose bodies use only llvm-dialect ops (plus
the extension ops of :mod:`zymase.ir.llvm_ext`), with block arguments kept as they
are (the writer makes phis).

How it works
------------
Each op class maps to one small *lowering function* in :data:`LOWERINGS`. The
function receives the op and an :class:`Emitter`, emits the replacement llvm ops
and returns the values that replace the op's results; the driver inserts the
emitted ops before the op, rewires the uses and erases the op. Blocks are visited
in reverse post-order, so every operand defined by an op has already been lowered
(and so has its final, converted type) when its users are lowered; block arguments
are retyped up front.

This module is the pass and its drivers (module- and function-level state: symbols,
declarations, entry-block allocas, the tape runtime added on first use, the caches
freed before each return). The type conversion, :data:`LOWERINGS` and the
:class:`Emitter` live in :mod:`zymase.transforms.lowering_registry`; the lowering
functions in :mod:`~zymase.transforms.lower_standard_ops` (func/arith/math/cf),
:mod:`~zymase.transforms.lower_tape` (the enzyme accumulator and tape ops) and
:mod:`~zymase.transforms.lower_memref`.

An op without a lowering is a user-visible :class:`~zymase.errors.ZymaseError`
naming the op and the function, with a hint.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from zymase.analysis.op_classes import is_a
from zymase.errors import ZymaseError
from zymase.transforms.tape_pool import (HEAP_TAPE, TAPE_FREE, TAPE_OUT_OF_MEMORY_GLOBAL, TAPE_OUT_OF_MEMORY_MESSAGE,
                                        TAPE_POOL_GLOBAL, TAPE_POOL_TYPE)
from zymase.ir import fast_ops
from zymase.ir import (
    StringAttr,
    Attribute,
    Block,
    FunctionType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    ModulePass,
    Operation,
    Rewriter,
    SSAValue,
    OpClasses,
    enzyme,
    func,
    i64,
    llvm,
    llvm_ext,
    location_of,
)
from zymase.transforms.lower_tape import (
    CACHE_RUNTIME_FUNCTIONS,
    CACHE_STRUCT,
    GLOBAL_TAPE,
    INDEXED_CACHE_STRUCT,
    POOL_GIVE,
    SITE_STRUCT,
    TAPE_SITE,
    TAPE_STATS_COUNTER,
    TAPE_STATS_GLOBAL,
    cache_runtime_closure,
    cache_runtime_text,
    tape_stats_enabled,
)
from zymase.transforms.lowering_registry import (
    LOWERINGS,
    PTR,
    Emitter,
    ExtLoadOp,
    ExtStoreOp,
    alloc_size,
    lower_type,
    packed_result_type,
)

#: func.func (named: the C and Numba paths do not import the func dialect, zymase/ir/on_first_use.py)
_FUNC = OpClasses("func.FuncOp")

__all__ = ["LowerToLLVM", "lower_to_llvm"]


# --------------------------------------------------------------------------- pass


class LowerToLLVM(ModulePass):
    """``lower-to-llvm``: func/arith/math/cf + enzyme init/get/set/push/pop -> llvm."""

    name = "lower-to-llvm"

    def apply(self, ctx, op: ModuleOp) -> None:  # noqa: ARG002 - ModulePass signature
        lower_to_llvm(op)


def lower_to_llvm(module: ModuleOp) -> ModuleOp:
    """Lower ``module`` in place (and return it for convenience)."""
    # one walk: the op names of each top-level op. After the enzyme pass on the C and
    # Numba paths they are llvm and enzyme ops only: nothing structured to rewrite
    # first (which would walk the module three more times), and only the functions
    # holding enzyme ops to lower
    names = {top: _names_inside(top) for top in module.body.block.ops}
    if not all(n.partition(".")[0] in _FLAT_DIALECTS and not n.startswith("llvm.intr.")
               for inside in names.values() for n in inside):
        from zymase.transforms.lower_memref import prepare_memref_lowering

        _load_standard_lowerings()
        prepare_memref_lowering(module)  # linalg/scf -> loops -> branches; memref operand types
        names = None
    ModuleLowering(module).run(names)
    return module


def _load_standard_lowerings() -> None:
    """Register the lowerings of func/arith/math/cf and memref ops (importing those
    dialects: the C and Numba paths lower llvm and enzyme ops only, and do not)."""
    from zymase.transforms import lower_memref as _memref  # noqa: F401
    from zymase.transforms import lower_standard_ops as _standard_ops  # noqa: F401


def _names_inside(top: Operation) -> set[str]:
    """The names of ``top`` and the ops nested in it: ``{op.name for op in top.walk()}``
    without a generator per op (xDSL's walk recurses into every op, regions or not; after
    AD the module is thousands of ops, walked here once)."""
    names = {top.name}
    work = [top]
    while work:
        for region in work.pop().regions:
            for block in region.blocks:
                for op in block.ops:
                    names.add(op.name)
                    if op.regions:
                        work.append(op)
    return names


#: dialects whose ops need no structured rewrite before lowering (enzyme's are lowered
#: op by op); ``llvm.intr.*`` ops do (they become intrinsic calls)
_FLAT_DIALECTS = frozenset({"llvm", "builtin", "enzyme"})


_UNSUPPORTED_HINTS = {
    "scf": "convert structured control flow to cf first (xDSL's convert-scf-to-cf pass)",
    "memref": "zymase lowers memref.load/store/alloc/alloca/dealloc/subview/cast/dim/copy; "
    "rewrite the op with those",
    "enzyme": "run the enzyme pass (zymase.transforms.enzyme_pass) before lowering",
}


class ModuleLowering:
    """Module-wide state: the symbol table, external declarations, runtime helpers."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.symbols: dict[str, Operation] = {}
        for op in module.body.block.ops:
            name = op.properties.get("sym_name")
            if name is not None:
                self.symbols[name.data] = op  # type: ignore[attr-defined]
        self._has_cache_runtime = not CACHE_RUNTIME_FUNCTIONS.isdisjoint(self.symbols)
        #: the runtime functions the code lowered here calls (added at the end of run)
        self._runtime_calls: set[str] = set()
        self._runtime_required = False
        #: the declarations :meth:`declare` found matching, by name: (symbol, its type
        #: attribute, inputs, output); the runtime's six are asked for at every tape
        #: site, and building the wanted function type to compare was most of the cost
        self._matching_declarations: dict[str, tuple] = {}

    def run(self, names: dict[Operation, set[str]] | None = None) -> None:
        """``names``: the names of the ops inside each top-level op, when known."""
        for op in list(self.module.body.block.ops):
            if isinstance(op, _FUNC):
                self._lower_function(op)
            elif isinstance(op, llvm.FuncOp) and op.body.blocks:
                # llvm.func bodies (code read from LLVM IR) may hold the enzyme
                # accumulator/cache ops of generated derivatives, and hand-written
                # MLIR may mix arith/math/cf into them.
                if (any(o.dialect_name() != "llvm" for o in op.body.walk()) if names is None
                        else any(n.partition(".")[0] != "llvm" for n in names[op])):
                    FunctionLowering(self, op, op.sym_name.data).run()
            elif op.dialect_name() != "llvm":
                raise ZymaseError(
                    f"no lowering to the llvm dialect for top-level '{op.name}'",
                    construct=op.name,
                    location=location_of(op),
                    hint=_UNSUPPORTED_HINTS.get(op.dialect_name(), "only func.func and llvm ops "
                                                "may appear at module level"),
                )
        if self._runtime_required:
            self._add_cache_runtime()
        if tape_stats_enabled() and not self._has_cache_runtime:
            self._define_unused_tape_counter()

    def _add_cache_runtime(self) -> None:
        """The runtime functions the lowered code calls, and those they call, that the
        module does not have yet (an earlier marker round may have added some); with tape
        statistics, the counter whatever the functions."""
        missing = cache_runtime_closure(self._runtime_calls) - set(self.symbols)
        if missing or tape_stats_enabled():
            self._add_runtime(cache_runtime_text(missing), "<zymase cache runtime>")

    def _define_unused_tape_counter(self) -> None:
        """A program that reads the tape counter links even when none of its
        derivatives tapes anything (then the counter stays 0)."""
        declared = self.symbols.get(TAPE_STATS_COUNTER)
        if isinstance(declared, llvm.GlobalOp) and not declared.body.blocks and declared.value is None:
            self._add_runtime("builtin.module {" + TAPE_STATS_GLOBAL + "}", "<zymase tape counter>")

    def _lower_function(self, fop: func.FuncOp) -> None:
        """func.func -> llvm.func with the C ABI.

        Public functions and declarations get external linkage (callable from the
        host, resolvable by the linker); private definitions get internal linkage so
        that LLVM may inline and drop them.
        """
        name = fop.sym_name.data
        ftype: FunctionType = fop.function_type
        inputs = [lower_type(t, function=name) for t in ftype.inputs]
        outputs = [lower_type(t, function=name) for t in ftype.outputs]
        for t in ftype.outputs:
            if isinstance(t, (enzyme.GradientType, enzyme.CacheType)):
                raise ZymaseError(
                    f"function returns a {t}, which lives on the function's stack",
                    construct=fop.name,
                    function=name,
                    location=location_of(fop),
                    hint="create accumulators and caches in the function that uses them",
                )
        private = fop.sym_visibility is not None and fop.sym_visibility.data == "private"
        linkage = "internal" if private and not fop.is_declaration else "external"
        body = Rewriter.move_region_contents_to_new_regions(fop.body)
        lowered = llvm.FuncOp(
            name,
            llvm.LLVMFunctionType(inputs, packed_result_type(outputs)),
            linkage=llvm.LinkageAttr(linkage),
            body=body,
        )
        self.module.body.block.insert_op_before(lowered, fop)
        fop.detach()
        fop.erase()
        self.symbols[name] = lowered
        if body.blocks:
            FunctionLowering(self, lowered, name).run()

    def declare(
        self,
        name: str,
        inputs: Sequence[Attribute],
        output: Attribute | None,
        e: Emitter | None = None,
    ) -> None:
        """Declare an external C function once (``llvm.func @name(...)``, no body).

        An existing symbol of that name is reused if its signature matches.
        """
        existing = self.symbols.get(name)
        known = self._matching_declarations.get(name)
        if (known is not None and known[0] is existing and known[1] is existing.properties.get("function_type")
                and known[2] == tuple(inputs) and known[3] == output):
            return
        wanted = llvm.LLVMFunctionType(list(inputs), output)
        if existing is None:
            decl = llvm.FuncOp(name, wanted, linkage=llvm.LinkageAttr("external"))
            self.module.body.block.add_op(decl)
            self.symbols[name] = decl
            return
        if isinstance(existing, _FUNC):
            have = llvm.LLVMFunctionType(
                [lower_type(t) for t in existing.function_type.inputs],
                packed_result_type([lower_type(t) for t in existing.function_type.outputs]),
            )
        else:
            have = existing.properties.get("function_type")
        if have != wanted:
            message = f"'@{name}' is needed as {wanted} but the module defines it as {have}"
            hint = f"rename the module's own '@{name}'"
            if e is not None:
                raise e.error(message, hint=hint)
            raise ZymaseError(message, hint=hint)
        self._matching_declarations[name] = (existing, existing.properties.get("function_type"), tuple(inputs), output)

    def require_global_tape(self, e: Emitter) -> None:
        """The thread-local global tape of split-mode derivatives (added once)."""
        if GLOBAL_TAPE in self.symbols:
            return
        tape = llvm.GlobalOp(CACHE_STRUCT, GLOBAL_TAPE, "weak", thread_local_=True,
                             alignment=16, value=None)
        tape.attributes["zymase.llvm_init"] = StringAttr("zeroinitializer")
        self.module.body.block.add_op(tape)
        self.symbols[GLOBAL_TAPE] = tape

    def new_heap_tape_name(self) -> str:
        """A fresh name for a ``"heap"`` indexed cache (alias scopes tell tapes apart by it)."""
        self._heap_tapes = getattr(self, "_heap_tapes", 0) + 1
        return f"{HEAP_TAPE}.{self._heap_tapes}"

    def new_tape_site(self) -> str:
        """A fresh zeroed global holding one cache's spare buffer between calls."""
        n = 0
        while f"{TAPE_SITE}.{n}" in self.symbols:
            n += 1
        name = f"{TAPE_SITE}.{n}"
        site = _site_global(name)
        site.attributes["zymase.llvm_init"] = StringAttr("zeroinitializer")
        self.module.body.block.add_op(site)
        self.symbols[name] = site
        return name

    def require_cache_runtime(self, e: Emitter, *functions: str) -> None:
        """The lowered code calls the runtime's ``functions``: realloc/free and the tape
        pool are declared now, the functions (parsed from the runtime's text) added at the
        end of :meth:`run`, only those the module calls (:func:`cache_runtime_closure`)."""
        self.declare("realloc", [PTR, i64], PTR, e)
        self.declare("malloc", [i64], PTR, e)
        self.declare("free", [PTR], None, e)
        self.declare("malloc_usable_size", [PTR], i64, e)
        # the out-of-memory report (tape_pool.TAPE_OUT_OF_MEMORY)
        self.declare("write", [IntegerType(32), PTR, i64], i64, e)
        self.declare("abort", [], None, e)
        if TAPE_OUT_OF_MEMORY_GLOBAL not in self.symbols:
            text = TAPE_OUT_OF_MEMORY_MESSAGE
            message = llvm.GlobalOp(llvm.LLVMArrayType(len(text.encode()), IntegerType(8)), TAPE_OUT_OF_MEMORY_GLOBAL,
                                    "private", constant=True, value=StringAttr(text))
            self.module.body.block.add_op(message)
            self.symbols[TAPE_OUT_OF_MEMORY_GLOBAL] = message
        self._runtime_calls.update(functions)
        if self._runtime_required:
            return
        self._runtime_required = self._has_cache_runtime = True
        if TAPE_POOL_GLOBAL not in self.symbols:
            pool = llvm.GlobalOp(TAPE_POOL_TYPE, TAPE_POOL_GLOBAL, "internal", alignment=16, value=None)
            pool.attributes["zymase.llvm_init"] = StringAttr("zeroinitializer")
            self.module.body.block.add_op(pool)
            self.symbols[TAPE_POOL_GLOBAL] = pool

    def _add_runtime(self, text: str, name: str) -> None:
        """Add the ops of the llvm-dialect module ``text``; a global the program only
        declares (its own ``extern`` declaration of the stats counter) gives way."""
        from zymase.cache import parsed_mlir

        runtime = parsed_mlir(text, name)
        for op in list(runtime.body.block.ops):
            existing = self.symbols.get(op.sym_name.data)  # type: ignore[attr-defined]
            if isinstance(existing, llvm.GlobalOp):
                self.module.body.block.erase_op(existing)
            op.detach()
            self.module.body.block.add_op(op)
            self.symbols[op.sym_name.data] = op  # type: ignore[attr-defined]


#: ``icmp ne``
_NE = IntegerAttr(1, i64)

#: a tape site's linkage, address space and alignment (attributes are immutable: shared)
_INTERNAL, _ADDR_SPACE_0, _ALIGN_16 = llvm.LinkageAttr("internal"), IntegerAttr(0, 32), IntegerAttr(16, 64)


def _site_global(name: str) -> llvm.GlobalOp:
    """``llvm.GlobalOp(SITE_STRUCT, name, "internal", alignment=16, value=None)``, built
    without IRDL's generic argument matching (one per indexed cache; see lower_tape's
    builders)."""
    from zymase.ir import Region

    return llvm.GlobalOp.create(
        properties={"global_type": SITE_STRUCT, "sym_name": StringAttr(name), "linkage": _INTERNAL,
                    "addr_space": _ADDR_SPACE_0, "alignment": _ALIGN_16},
        regions=[Region()])

class FunctionLowering:
    """Per-function state: entry-block allocas and the caches to free on return."""

    def __init__(self, module: ModuleLowering, fn: llvm.FuncOp, name: str):
        self.module = module
        self.fn = fn
        self.name = name
        self.entry = fn.body.blocks[0]
        self.caches: list[SSAValue] = []
        self.indexed_caches: dict[SSAValue, tuple[Attribute, str]] = {}  # handle -> element type, site
        self.heap_caches: set[SSAValue] = set()  # LIFO caches of derivatives differentiated again
        self._alloca_anchor: Operation | None = None

    def run(self) -> None:
        for block in self.fn.body.blocks:
            for arg in list(block.args):
                t = lower_type(arg.type, function=self.name)
                if t != arg.type:
                    Rewriter.replace_value_with_new_type(arg, t)
        for block in _reverse_post_order(self.fn.body.blocks):
            for op in list(block.ops):
                self._lower_op(op)
        if self.caches or self.indexed_caches or self.heap_caches:
            self.module.declare("free", [PTR], None)
            self._free_caches_before_returns()

    def _lower_op(self, op: Operation) -> None:
        if op.dialect_name() == "llvm":
            return
        lowering = LOWERINGS.get(type(op))
        if lowering is None and op.dialect_name() != "enzyme":
            _load_standard_lowerings()
            lowering = LOWERINGS.get(type(op))
        if lowering is None:
            raise ZymaseError(
                f"no lowering to the llvm dialect for '{op.name}'",
                construct=op.name,
                function=self.name,
                location=location_of(op),
                hint=_UNSUPPORTED_HINTS.get(
                    op.dialect_name(),
                    "rewrite it with func/arith/math/cf ops that zymase can lower",
                ),
            )
        e = Emitter(self, op)
        replacements = lowering(op, e)
        block = op.parent_block()
        assert block is not None
        for new_op in e.ops:
            fast_ops.insert_before(block, new_op, op)
        for old, new in zip(op.results, replacements, strict=True):
            if new.name_hint is None:
                new.name_hint = old.name_hint
            old.replace_all_uses_with(new)
        op.detach()
        op.erase()

    def entry_alloca(self, elem: Attribute, *, zero_init: bool = False,
                     zero_fields: Sequence[int] = ()) -> SSAValue:
        """An alloca of one ``elem`` at the top of the entry block.

        Entry-block allocas are static (no stack growth inside loops) and promotable
        by mem2reg. With ``zero_init`` the slot is also zeroed right there; with
        ``zero_fields`` only those fields of a struct are (a store of a whole struct
        is split by InstCombine into one store per scalar, per byte of an ``i8``
        array: a cache's 128-byte inline buffer was 128 stores and GEPs that every
        pass after it walked, per cache).
        """
        ops: list[Operation] = []
        if self._alloca_anchor is None:
            one = llvm.ConstantOp(IntegerAttr(1, i64), i64)
            ops.append(one)
            self._one = one.result
        alloca = fast_ops.alloca(self._one, elem, alignment=alloc_size(elem) or 8)
        ops.append(alloca)
        if zero_init:
            zero = llvm.ZeroOp.build(result_types=[elem])
            ops += [zero, ExtStoreOp(zero.results[0], alloca.res)]
        for field in zero_fields:
            field_type = elem.types.data[field]  # type: ignore[attr-defined]
            address: SSAValue = alloca.res
            if field:
                ops.append(gep := fast_ops.gep(alloca.res, [0, field], elem))
                address = gep.result
            if isinstance(field_type, IntegerType):
                zero = llvm.ConstantOp(IntegerAttr(0, field_type), field_type)
            else:
                zero = llvm.ZeroOp.build(result_types=[field_type])
            ops += [zero, ExtStoreOp(zero.results[0], address)]
        if self._alloca_anchor is None:
            first = self.entry.first_op
            assert first is not None
            self.entry.insert_ops_before(ops, first)
        else:
            self.entry.insert_ops_after(ops, self._alloca_anchor)
        self._alloca_anchor = ops[-1]
        return alloca.res

    def _free_caches_before_returns(self) -> None:
        """Release every heap cache buffer on each exit: ``free(data)`` unless the
        data is still null or the cache's inline buffer (``free(NULL)`` is a no-op)."""
        from zymase.transforms.lower_tape import address_of

        for block in self.fn.body.blocks:
            term = block.last_op
            if not is_a(term, llvm.ReturnOp):
                continue
            ops: list[Operation] = []
            for cache in self.caches:
                data = ExtLoadOp(cache, PTR)
                inline = fast_ops.gep(cache, [0, 3], CACHE_STRUCT)
                on_heap = fast_ops.icmp(llvm_ext.ICmpOp, data.dereferenced_value, inline.result, _NE)
                null = llvm.ZeroOp.build(result_types=[PTR])
                heap = fast_ops.select(llvm.SelectOp, on_heap.results[0], data.dereferenced_value, null.results[0])
                ops += [data, inline, on_heap, null, heap, fast_ops.call("free", [heap.results[0]])]
            for handle in self.heap_caches:
                data = ExtLoadOp(handle, PTR)
                ops += [data, fast_ops.call(TAPE_FREE, [data.dereferenced_value])]
            for handle, (_, site) in self.indexed_caches.items():  # data: null, the site's or realloc's
                data = ExtLoadOp(handle, PTR)
                if site.startswith(HEAP_TAPE):
                    ops += [data, fast_ops.call(TAPE_FREE, [data.dereferenced_value])]
                    continue
                cap_ptr = fast_ops.gep(handle, [0, 1], INDEXED_CACHE_STRUCT)
                cap = ExtLoadOp(cap_ptr.result, i64)
                site_ptr = address_of(site)
                ops += [data, cap_ptr, cap, site_ptr,
                        fast_ops.call(POOL_GIVE, [site_ptr.result, data.dereferenced_value, cap.dereferenced_value])]
            block.insert_ops_before(ops, term)


def _reverse_post_order(blocks: Iterable[Block]) -> list[Block]:
    """Blocks in reverse post-order from the entry, then any unreachable blocks."""
    blocks = list(blocks)
    if not blocks:
        return []
    seen: set[int] = set()
    order: list[Block] = []
    stack: list[tuple[Block, Iterable[Block]]] = [(blocks[0], iter(_successors(blocks[0])))]
    seen.add(id(blocks[0]))
    while stack:
        block, succs = stack[-1]
        for succ in succs:
            if id(succ) not in seen:
                seen.add(id(succ))
                stack.append((succ, iter(_successors(succ))))
                break
        else:
            stack.pop()
            order.append(block)
    order.reverse()
    return order + [b for b in blocks if id(b) not in seen]


def _successors(block: Block) -> Sequence[Block]:
    term = block.last_op
    return list(term.successors) if term is not None else []
