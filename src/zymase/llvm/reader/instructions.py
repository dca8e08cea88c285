"""The instruction handlers (part of :mod:`zymase.llvm.reader`): one method per
opcode, each parsing the rest of its line (the cursor is after the opcode) and
building the ``llvm`` op, plus the op builders that constant expressions share.
:class:`_InstructionHandlers` is a mixin of
:class:`~zymase.llvm.reader.function_reader._FunctionReader` (the package docstring
says why); terminators are recorded as :class:`_Pending` and built by the reader
once every phi is known."""

from __future__ import annotations

from dataclasses import dataclass, field

from zymase.ir import (
    ArrayAttr,
    Attribute,
    DenseArrayBase,
    DictionaryAttr,
    Operation,
    IntegerAttr,
    SSAValue,
    StringAttr,
    UnitAttr,
    builtin,
    llvm,
    llvm_ext,
)
from zymase.ir import fast_ops, llvm_eh
from zymase.llvm.noalias_scopes import DECL_INTRINSIC, scope_decl
from zymase.llvm.reader.attributes import _CCONVS, _attr_dict_array, _parse_fn_attr_items, _parse_param_attrs
from zymase.llvm.reader.constants import _BINOP_FLAGS, _FMF_WORDS, _GEP_FLAGS, Const, _parse_const
from zymase.llvm.reader.inline_asm import lanewise_min_max
from zymase.llvm.reader.lexer import _Cursor, _ParseFailure, _string_literal, _symbol_name
from zymase.llvm.reader.types import _I32, _I64, _PTR, _UNIT, _element_type, function_type, int_attr, symbol_ref


@dataclass
class _Pending:
    """A terminator, built once all phis (block arguments) of its successors are known."""

    kind: str
    block_label: str
    operands: list[Const] = field(default_factory=list)
    dests: list[str] = field(default_factory=list)
    case_values: list[int] = field(default_factory=list)
    location: Attribute | None = None
    line: str = ""
    loop_hints: tuple[str, ...] = ()
    invoke: tuple | None = None  # (_CallParts, operands as Const, stand-in for the result)


@dataclass
class _CallParts:
    """A parsed ``call``/``invoke`` up to its destinations."""

    fmf: Attribute
    cconv: str = "ccc"
    res_attrs: dict = field(default_factory=dict)
    result_type: Attribute | None = None
    fn_params: list[Attribute] | None = None
    variadic: bool = False
    callee: str | None = None
    callee_text: str = ""
    args: list[Const] = field(default_factory=list)
    arg_attrs: list[dict[str, Attribute]] = field(default_factory=list)
    bundles: list[str] = field(default_factory=list)
    #: an inline assembly callee: (template, constraints, flags such as "sideeffect")
    asm: tuple[str, str, frozenset[str]] | None = None

    def attributes(self) -> dict[str, Attribute]:
        attrs: dict[str, Attribute] = {}
        if (a := _attr_dict_array(self.arg_attrs)) is not None:
            attrs["arg_attrs"] = a
        if self.res_attrs:
            attrs["res_attrs"] = ArrayAttr([DictionaryAttr(self.res_attrs)])
        return attrs


_ICMP_PREDICATES = {p.value: p.to_int() for p in llvm.ICmpPredicateFlag}
_FCMP_PREDICATES = {p.value.lstrip("_"): p.to_int() for p in llvm.FCmpPredicateFlag}
_fmf_cache: dict[frozenset, Attribute] = {}


def _fast_math(words: list[str]) -> Attribute:
    key = frozenset(words)
    attr = _fmf_cache.get(key)
    if attr is None:
        if "fast" in key:
            attr = llvm.FastMathAttr("fast")
        else:
            attr = llvm.FastMathAttr(tuple(sorted(key)) if key else None)
        _fmf_cache[key] = attr
    return attr


def _parse_fmf(cur: _Cursor) -> Attribute:
    words = []
    while cur.text() in _FMF_WORDS:
        words.append(cur.next()[1])
    return _fast_math(words)


_INT_BINOP_CLASSES = {
    "add": llvm.AddOp, "sub": llvm.SubOp, "mul": llvm.MulOp, "shl": llvm.ShlOp,
    "udiv": llvm.UDivOp, "sdiv": llvm.SDivOp, "lshr": llvm.LShrOp, "ashr": llvm.AShrOp,
    "urem": llvm.URemOp, "srem": llvm.SRemOp, "and": llvm.AndOp, "xor": llvm.XOrOp,
    "or": llvm.OrOp,
}
_OVERFLOW_OPS = frozenset(["add", "sub", "mul", "shl"])
_EXACT_OPS = frozenset(["udiv", "sdiv", "lshr", "ashr"])
_FLOAT_BINOP_CLASSES = {
    "fadd": llvm.FAddOp, "fsub": llvm.FSubOp, "fmul": llvm.FMulOp, "fdiv": llvm.FDivOp,
    "frem": llvm.FRemOp,
}
_SIMPLE_CASTS = {
    "sext": llvm.SExtOp, "fptrunc": llvm.FPTruncOp, "fpext": llvm.FPExtOp,
    "sitofp": llvm.SIToFPOp, "fptosi": llvm_ext.FPToSIOp, "fptoui": llvm_ext.FPToUIOp,
    "ptrtoint": llvm.PtrToIntOp, "inttoptr": llvm.IntToPtrOp, "bitcast": llvm.BitcastOp,
    "addrspacecast": llvm_ext.AddrSpaceCastOp,
}
_UNSUPPORTED_INSTRUCTIONS = {
    "catchswitch": "exception handling (catchswitch) is not supported",
    "catchpad": "exception handling (catchpad) is not supported",
    "cleanuppad": "exception handling (cleanuppad) is not supported",
    "catchret": "exception handling (catchret) is not supported",
    "cleanupret": "exception handling (cleanupret) is not supported",
    "indirectbr": "indirect branches (indirectbr: GNU C's computed goto, 'goto *p') are not supported",
    "callbr": "callbr (asm goto) is not supported",
}
_DROPPED_INTRINSICS = ("llvm.dbg.", "llvm.assume",
                       "llvm.pseudoprobe")
_TAIL_KINDS = {"tail": llvm.TailCallKind.TAIL, "musttail": llvm.TailCallKind.MUST_TAIL,
               "notail": llvm.TailCallKind.NOTAIL}
_ORDERINGS = llvm_ext.ATOMIC_ORDERING_BY_NAME


def _memory_properties(ordering: int, alignment: int | None, volatile: bool) -> dict[str, Attribute]:
    """The properties ``llvm_ext.LoadOp(...)`` and ``StoreOp(...)`` give a load or store,
    for building them without IRDL's generic constructor (loads and stores are a third
    of a typical function's instructions)."""
    props: dict[str, Attribute] = {"ordering": int_attr(ordering, _I64)}
    if alignment is not None:
        props["alignment"] = int_attr(alignment, _I64)
    if volatile:
        props["volatile_"] = _UNIT
    return props


class _InstructionHandlers:
    """Mixin of :class:`~zymase.llvm.reader.function_reader._FunctionReader`: the
    handlers use its state (``types``, ``metadata``, ``block``, ``label``, ``name``,
    ``phis``) and its operand plumbing (``_value``, ``_typed_value``, ``_materialize``,
    ``_lookup``, ``_gep``, ``_defer``)."""

    # -- instruction handlers (cursor after the opcode)

    def _int_binop(self, cur: _Cursor, loc) -> Operation:
        opcode = cur.toks[cur.i - 1][1]
        flags = set()
        while cur.text() in _BINOP_FLAGS:
            flags.add(cur.next()[1])
        ty = self.types.parse(cur)
        lhs = self._value(cur, ty)
        cur.expect(",")
        rhs = self._value(cur, ty)
        return _int_binop(opcode, flags, lhs, rhs)

    def _float_binop(self, cur: _Cursor, loc) -> Operation:
        cls = _FLOAT_BINOP_CLASSES[cur.toks[cur.i - 1][1]]
        fmf = _parse_fmf(cur)
        ty = self.types.parse(cur)
        lhs = self._value(cur, ty)
        cur.expect(",")
        rhs = self._value(cur, ty)
        return fast_ops.build(cls, operands=[lhs, rhs], result_types=[ty], properties={"fastmathFlags": fmf})

    def _fneg(self, cur: _Cursor, loc) -> Operation:
        fmf = _parse_fmf(cur)
        arg = self._typed_value(cur)
        return llvm.FNegOp(arg, fmf)

    def _icmp(self, cur: _Cursor, loc) -> Operation:
        cur.accept("samesign")  # a poison-generating hint: dropping it is sound
        predicate = cur.next()[1]
        ty = self.types.parse(cur)
        lhs = self._value(cur, ty)
        cur.expect(",")
        rhs = self._value(cur, ty)
        return fast_ops.icmp(llvm_ext.ICmpOp, lhs, rhs, int_attr(_ICMP_PREDICATES[predicate], _I64))

    def _fcmp(self, cur: _Cursor, loc) -> Operation:
        fmf = _parse_fmf(cur)
        predicate = cur.next()[1]
        ty = self.types.parse(cur)
        lhs = self._value(cur, ty)
        cur.expect(",")
        rhs = self._value(cur, ty)
        pred = int_attr(_FCMP_PREDICATES[predicate], _I64)
        return fast_ops.fcmp(lhs, rhs, pred, fmf)

    def _cast(self, cur: _Cursor, loc) -> Operation:
        opcode = cur.toks[cur.i - 1][1]
        flags = set()
        while cur.text() in ("nuw", "nsw", "nneg") or cur.text() in _FMF_WORDS:
            flags.add(cur.next()[1])
        arg = self._typed_value(cur)
        cur.expect("to")
        result_type = self.types.parse(cur)
        return _cast_op(opcode, arg, result_type, flags)

    def _select(self, cur: _Cursor, loc) -> Operation:
        fmf = _parse_fmf(cur)
        cond = self._typed_value(cur)
        cur.expect(",")
        lhs = self._typed_value(cur)
        cur.expect(",")
        rhs = self._typed_value(cur)
        return fast_ops.build(llvm_ext.SelectOp,
            operands=[cond, lhs, rhs], result_types=[lhs.type], properties={"fastmathFlags": fmf}
        )

    def _alloca(self, cur: _Cursor, loc) -> Operation:
        if cur.accept("inalloca"):
            raise _ParseFailure("inalloca is not supported")
        elem_type = self.types.parse(cur)
        size = None
        props: dict[str, Attribute] = {"elem_type": elem_type}
        result_type: Attribute = _PTR
        while cur.accept(","):
            if cur.accept("align"):
                props["alignment"] = int_attr(cur.expect_int(), _I64)
            elif cur.accept("addrspace"):
                cur.expect("(")
                space = cur.expect_int()
                cur.expect(")")
                result_type = llvm.LLVMPointerType(builtin.IntAttr(space)) if space else _PTR
            else:
                size = self._typed_value(cur)
        if size is None:
            size = self._materialize(("int", _I32, 1))
        return fast_ops.build(llvm.AllocaOp, operands=[size], result_types=[result_type], properties=props)

    def _atomic_tail(self, cur: _Cursor) -> None:
        if cur.text() == "syncscope":
            cur.next()
            cur.balanced_text()

    def _load(self, cur: _Cursor, loc) -> Operation:
        atomic = cur.accept("atomic")
        volatile = cur.accept("volatile")
        ty = self.types.parse(cur)
        cur.expect(",")
        ptr = self._typed_value(cur)
        ordering = 0
        if atomic:
            self._atomic_tail(cur)
            ordering = _ORDERINGS[cur.next()[1]]
        props = _memory_properties(ordering, self._align_tail(cur), volatile)
        return fast_ops.build(llvm_ext.LoadOp, operands=[ptr], result_types=[ty], properties=props)

    def _align_tail(self, cur: _Cursor) -> int | None:
        alignment = None
        while cur.accept(","):
            cur.expect("align")
            alignment = cur.expect_int()
        return alignment

    def _store(self, cur: _Cursor, loc) -> Operation:
        atomic = cur.accept("atomic")
        volatile = cur.accept("volatile")
        value = self._typed_value(cur)
        cur.expect(",")
        ptr = self._typed_value(cur)
        ordering = 0
        if atomic:
            self._atomic_tail(cur)
            ordering = _ORDERINGS[cur.next()[1]]
        props = _memory_properties(ordering, self._align_tail(cur), volatile)
        return fast_ops.build(llvm_ext.StoreOp, operands=[value, ptr], properties=props)

    def _getelementptr(self, cur: _Cursor, loc) -> Operation:
        flags = []
        while cur.text() in _GEP_FLAGS:
            flags.append(cur.next()[1])
        elem_type = self.types.parse(cur)
        cur.expect(",")
        base = self._typed_value(cur)
        indices: list[Const] = []
        while cur.accept(","):
            ty = self.types.parse(cur)
            indices.append(_parse_const(cur, ty, self.types))
        return self._gep(tuple(flags), elem_type, base, indices)

    def _extractvalue(self, cur: _Cursor, loc) -> Operation:
        container = self._typed_value(cur)
        positions = []
        ty = container.type
        while cur.accept(","):
            positions.append(cur.expect_int())
            ty = _element_type(ty, positions[-1])
        return llvm.ExtractValueOp(DenseArrayBase.from_list(_I64, positions), container, ty)

    def _insertvalue(self, cur: _Cursor, loc) -> Operation:
        container = self._typed_value(cur)
        cur.expect(",")
        value = self._typed_value(cur)
        positions = []
        while cur.accept(","):
            positions.append(cur.expect_int())
        return llvm.InsertValueOp(DenseArrayBase.from_list(_I64, positions), container, value)

    def _extractelement(self, cur: _Cursor, loc) -> Operation:
        vector = self._typed_value(cur)
        cur.expect(",")
        index = self._typed_value(cur)
        return llvm_ext.ExtractElementOp(vector, index)

    def _insertelement(self, cur: _Cursor, loc) -> Operation:
        vector = self._typed_value(cur)
        cur.expect(",")
        value = self._typed_value(cur)
        cur.expect(",")
        index = self._typed_value(cur)
        return llvm.InsertElementOp(vector, value, index)

    def _shufflevector(self, cur: _Cursor, loc) -> Operation:
        v1 = self._typed_value(cur)
        cur.expect(",")
        v2 = self._typed_value(cur)
        cur.expect(",")
        mask_type = self.types.parse(cur)
        mask = _parse_const(cur, mask_type, self.types)
        count = mask_type.get_shape()[0]
        if mask[0] == "vec":
            lanes = [e[2] if e[0] == "int" else -1 for e in mask[2]]
        elif mask[0] == "splat":
            lanes = [mask[2][2] if mask[2][0] == "int" else -1] * count
        elif mask[0] == "zero":
            lanes = [0] * count
        else:
            lanes = [-1] * count
        result_type = builtin.VectorType(v1.type.element_type, [count])
        return llvm.ShuffleVectorOp(v1, v2, DenseArrayBase.from_list(_I32, lanes), result_type)

    def _freeze(self, cur: _Cursor, loc) -> Operation:
        return llvm_ext.FreezeOp(self._typed_value(cur))

    def _va_arg(self, cur: _Cursor, loc) -> Operation:
        va_list = self._typed_value(cur)
        cur.expect(",")
        return llvm_ext.VaArgOp(va_list, self.types.parse(cur))

    def _atomicrmw(self, cur: _Cursor, loc) -> Operation:
        volatile = cur.accept("volatile")
        bin_op = cur.next()[1]
        ptr = self._typed_value(cur)
        cur.expect(",")
        value = self._typed_value(cur)
        self._atomic_tail(cur)
        ordering = _ORDERINGS[cur.next()[1]]
        alignment = self._align_tail(cur)
        return llvm_ext.AtomicRMWOp(bin_op, ptr, value, ordering, alignment, volatile=volatile)

    def _cmpxchg(self, cur: _Cursor, loc) -> Operation:
        weak = cur.accept("weak")
        volatile = cur.accept("volatile")
        ptr = self._typed_value(cur)
        cur.expect(",")
        cmp = self._typed_value(cur)
        cur.expect(",")
        new = self._typed_value(cur)
        self._atomic_tail(cur)
        success = _ORDERINGS[cur.next()[1]]
        failure = _ORDERINGS[cur.next()[1]]
        alignment = self._align_tail(cur)
        return llvm_ext.AtomicCmpXchgOp(ptr, cmp, new, success, failure, alignment,
                                        weak=weak, volatile=volatile)

    def _fence(self, cur: _Cursor, loc) -> Operation:
        self._atomic_tail(cur)
        return llvm_ext.FenceOp(_ORDERINGS[cur.next()[1]])

    def _phi(self, cur: _Cursor, loc) -> SSAValue:
        _parse_fmf(cur)
        ty = self.types.parse(cur)
        incoming: list[tuple[Const, str]] = []
        while True:
            cur.expect("[")
            value = _parse_const(cur, ty, self.types)
            cur.expect(",")
            pred = cur.next()[1][1:]
            cur.expect("]")
            incoming.append((value, pred))
            if not cur.accept(","):
                break
        if self.block.ops.first is not None:
            raise _ParseFailure("phi after a non-phi instruction")
        arg = self.block.insert_arg(ty, len(self.block.args))
        self.phis.setdefault(self.label, []).append(incoming)
        return arg

    # -- calls

    def _call(self, cur: _Cursor, loc) -> Operation | None:
        tail = llvm.TailCallKind.NONE
        if cur.text() in _TAIL_KINDS:
            tail = _TAIL_KINDS[cur.next()[1]]
        cur.expect("call")
        parts = self._call_parts(cur, lambda t: t[0] != "w")
        if parts.callee is not None and parts.callee.startswith("llvm."):
            return self._intrinsic(parts.callee, parts.args, parts.result_type, parts.fmf)
        if parts.bundles:
            raise _ParseFailure("operand bundles on calls are not supported")
        operands = [self._materialize(a) for a in parts.args]
        if parts.asm is not None:
            return self._inline_asm(parts, operands, tail)
        if parts.callee is None:
            operands.insert(0, self._lookup(parts.callee_text, _PTR))
        props: dict[str, Attribute] = {
            "fastmathFlags": parts.fmf,
            "CConv": _calling_convention(parts.cconv),
            "TailCallKind": _tail_call_kind(tail),
            "op_bundle_sizes": _NO_BUNDLES,
            "operandSegmentSizes": _call_segments(len(operands)),
        }
        if parts.callee is not None:
            props["callee"] = symbol_ref(parts.callee)
        if parts.variadic:
            props["var_callee_type"] = function_type(parts.fn_params or [], parts.result_type, True)
        results = [] if isinstance(parts.result_type, llvm.LLVMVoidType) else [parts.result_type]
        return fast_ops.build(llvm.CallOp, operands=operands, result_types=results, properties=props,
                                  attributes=parts.attributes())

    def _inline_asm(self, parts: _CallParts, operands: list[SSAValue], tail) -> Operation:
        """The lane-wise compare and select of an x86 SIMD min/max instruction (Eigen's
        packets, :mod:`zymase.llvm.reader.inline_asm`); any other asm is ``llvm.inline_asm``."""
        template, constraints, flags = parts.asm
        found = None if flags else lanewise_min_max(template, constraints, operands, parts.result_type)
        if found is None:
            return _inline_asm(parts, operands, tail)
        predicate, first, second = found
        mask = self._emit(llvm_ext.FCmpOp(first, second, int_attr(_FCMP_PREDICATES[predicate], _I64),
                                          fast_math=parts.fmf))
        return fast_ops.build(llvm_ext.SelectOp, operands=[mask, first, second], result_types=[first.type],
                                        properties={"fastmathFlags": parts.fmf})

    def _call_parts(self, cur: _Cursor, attr_end) -> _CallParts:
        """What ``call`` and ``invoke`` share: from the fast-math flags up to the function
        attributes (``attr_end`` tells where their inline attributes stop)."""
        parts = _CallParts(fmf=_parse_fmf(cur))
        if cur.text() in _CCONVS:
            parts.cconv = cur.next()[1]
        elif cur.text() == "cc":
            cur.next()
            parts.cconv = f"cc {cur.expect_int()}"
        parts.res_attrs = _parse_param_attrs(cur, self.types)
        if cur.text() == "addrspace":
            cur.next()
            cur.balanced_text()
        parts.result_type = self.types.parse(cur)
        if cur.text() == "(":
            cur.next()
            parts.fn_params = []
            while not cur.accept(")"):
                if cur.accept("..."):
                    parts.variadic = True
                elif not cur.accept(","):
                    parts.fn_params.append(self.types.parse(cur))
        kind, parts.callee_text, _ = cur.next()
        if kind == "w" and parts.callee_text == "asm":
            parts.asm = _asm_callee(cur)
            kind = "l"  # its operands follow as for an indirect call
        if kind not in ("g", "l"):
            raise _ParseFailure(f"unsupported callee '{parts.callee_text}'")
        parts.callee = _symbol_name(parts.callee_text) if kind == "g" else None
        cur.expect("(")
        while not cur.accept(")"):
            if cur.accept(","):
                continue
            if cur.accept("metadata"):  # only legal on intrinsics (most are dropped)
                ref = cur.text()
                _skip_operand(cur)
                parts.args.append(("meta", ref))
                parts.arg_attrs.append({})
                continue
            ty = self.types.parse(cur)
            parts.arg_attrs.append(_parse_param_attrs(cur, self.types))
            parts.args.append(_parse_const(cur, ty, self.types))
        while not cur.at_end():
            kind, word, _ = cur.peek()
            if kind == "a":
                cur.next()
            elif word == "[":
                parts.bundles.append(self._skip_bundles(cur))
            elif kind == "w" and word != "to":
                _parse_fn_attr_items(cur, attr_end)
            else:
                break
        return parts

    def _invoke(self, cur: _Cursor, loc) -> SSAValue | None:
        """A call with a normal and an unwind destination: a terminator, built once the
        phis of both destinations are known; its result is a stand-in until then."""
        parts = self._call_parts(cur, lambda t: t[0] != "w" or t[1] == "to")
        if parts.callee is not None and parts.callee.startswith("llvm."):
            raise _ParseFailure(f"invoke of the intrinsic {parts.callee} is not supported")
        if parts.bundles:
            raise _ParseFailure("operand bundles on invokes are not supported")
        if parts.asm is not None:
            raise _ParseFailure("inline assembly that may unwind (invoke of asm) is not supported")
        cur.expect("to")
        cur.expect("label")
        normal = cur.next()[1][1:]
        cur.expect("unwind")
        cur.expect("label")
        unwind = cur.next()[1][1:]
        # the operands are read when the invoke is built (they may be defined later in the text)
        operands = list(parts.args)
        if parts.callee is None:
            operands.insert(0, ("local", parts.callee_text, _PTR))
        result = None if isinstance(parts.result_type, llvm.LLVMVoidType) else llvm.UndefOp(parts.result_type)
        self._defer(_Pending("invoke", self.label, dests=[normal, unwind],
                             invoke=(parts, operands, result)))
        return result.results[0] if result is not None else None

    def _landingpad(self, cur: _Cursor, loc) -> Operation:
        ty = self.types.parse(cur)
        cleanup = False
        clauses: list[SSAValue] = []
        while not cur.at_end():
            if cur.accept("cleanup"):
                cleanup = True
            elif cur.accept("catch") or cur.accept("filter"):
                clauses.append(self._typed_value(cur))
            else:
                raise _ParseFailure(f"unexpected '{cur.text()}' in landingpad")
        return llvm_eh.LandingPadOp(ty, clauses, cleanup)

    def _resume(self, cur: _Cursor, loc) -> None:
        ty = self.types.parse(cur)
        self._defer(_Pending("resume", self.label, operands=[_parse_const(cur, ty, self.types)]))
        return None

    def _skip_bundles(self, cur: _Cursor) -> str:
        start = cur.peek()[2]
        depth = 0
        while not cur.at_end():
            t = cur.next()[1]
            depth += t == "["
            depth -= t == "]"
            if depth == 0:
                break
        return cur.line[start : cur.toks[cur.i - 1][2] + 1]

    def _intrinsic(self, name: str, args: list[Const], result_type: Attribute, fmf) -> Operation | None:
        if name == DECL_INTRINSIC:
            # kept: it marks where an inlined callee's restrict promise starts
            names = self.metadata.scope_names(args[0][1], self.name) if args and args[0][0] == "meta" else None
            return scope_decl(names[0]) if names and len(names) == 1 else None
        if name.startswith(_DROPPED_INTRINSICS):
            return None
        if any(a[0] == "meta" for a in args):
            raise _ParseFailure(f"intrinsic {name} with metadata operands is not supported")
        operands = [self._materialize(a) for a in args]
        results = [] if isinstance(result_type, llvm.LLVMVoidType) else [result_type]
        op = fast_ops.call_intrinsic(name, operands, results)
        op.properties["fastmathFlags"] = fmf
        return op

    # -- terminators (recorded as _Pending; the reader builds them once all phis are known)

    def _br(self, cur: _Cursor, loc) -> None:
        if cur.accept("label"):
            self._defer(_Pending("br", self.label, dests=[cur.next()[1][1:]]))
            return None
        ty = self.types.parse(cur)
        cond = _parse_const(cur, ty, self.types)
        dests = []
        while cur.accept(","):
            cur.expect("label")
            dests.append(cur.next()[1][1:])
        self._defer(_Pending("cond_br", self.label, operands=[cond], dests=dests))
        return None

    def _switch(self, cur: _Cursor, loc) -> None:
        ty = self.types.parse(cur)
        value = _parse_const(cur, ty, self.types)
        cur.expect(",")
        cur.expect("label")
        dests = [cur.next()[1][1:]]
        cur.expect("[")
        cases = []
        while not cur.accept("]"):
            case_ty = self.types.parse(cur)
            case = _parse_const(cur, case_ty, self.types)
            if case[0] != "int":
                raise _ParseFailure("switch case values must be integer constants")
            cur.expect(",")
            cur.expect("label")
            cases.append(case[2])
            dests.append(cur.next()[1][1:])
        self._defer(_Pending("switch", self.label, operands=[value], dests=dests, case_values=cases))
        return None

    def _ret(self, cur: _Cursor, loc) -> None:
        if cur.accept("void"):
            self._defer(_Pending("ret", self.label))
            return None
        ty = self.types.parse(cur)
        self._defer(_Pending("ret", self.label, operands=[_parse_const(cur, ty, self.types)]))
        return None

    def _unreachable(self, cur: _Cursor, loc) -> None:
        self._defer(_Pending("unreachable", self.label))
        return None


_ASM_FLAGS = ("sideeffect", "alignstack", "inteldialect", "unwind")

# A call's attributes, one object per value (attributes are immutable): building the
# calling convention, the tail-call kind and the two segment arrays anew, each checked,
# was most of the time of reading a call.
_NO_BUNDLES = DenseArrayBase.from_list(_I32, [])
_CALLING_CONVENTIONS: dict[str, Attribute] = {}
_TAIL_CALL_KINDS: dict[object, Attribute] = {}
_CALL_SEGMENTS: dict[int, DenseArrayBase] = {}


def _calling_convention(name: str) -> Attribute:
    attr = _CALLING_CONVENTIONS.get(name)
    if attr is None:
        attr = _CALLING_CONVENTIONS[name] = llvm.CallingConventionAttr(name)
    return attr


def _tail_call_kind(kind) -> Attribute:
    attr = _TAIL_CALL_KINDS.get(kind)
    if attr is None:
        attr = _TAIL_CALL_KINDS[kind] = llvm.TailCallKindAttr(kind)
    return attr


def _call_segments(arguments: int) -> DenseArrayBase:
    """A call's ``operandSegmentSizes``: its arguments, no operand bundles."""
    attr = _CALL_SEGMENTS.get(arguments)
    if attr is None:
        attr = _CALL_SEGMENTS[arguments] = DenseArrayBase.from_list(_I32, [arguments, 0])
    return attr


def _asm_callee(cur: _Cursor) -> tuple[str, str, frozenset[str]]:
    """``asm [sideeffect] [alignstack] [inteldialect] "template", "constraints"`` after
    the ``asm`` keyword of a call."""
    flags = set()
    while cur.text() in _ASM_FLAGS:
        flags.add(cur.next()[1])
    if "unwind" in flags:
        raise _ParseFailure("inline assembly that may unwind is not supported")
    kind, template, _ = cur.next()
    cur.expect(",")
    kind2, constraints, _ = cur.next()
    if kind != "s" or kind2 != "s":
        raise _ParseFailure("malformed inline assembly")
    return _string_literal(template), _string_literal(constraints), frozenset(flags)


def _inline_asm(parts: _CallParts, operands: list[SSAValue], tail) -> Operation:
    """A call of inline assembly as ``llvm.inline_asm`` (its parameter attributes, such
    as the ``elementtype`` an indirect memory constraint needs, kept as on calls)."""
    template, constraints, flags = parts.asm
    props: dict[str, Attribute] = {
        "asm_string": StringAttr(template),
        "constraints": StringAttr(constraints),
        "tail_call_kind": llvm.TailCallKindAttr(tail),
    }
    if "sideeffect" in flags:
        props["has_side_effects"] = _UNIT
    if "alignstack" in flags:
        props["is_align_stack"] = _UNIT
    if "inteldialect" in flags:
        props["asm_dialect"] = IntegerAttr(1, 64)
    results = [] if isinstance(parts.result_type, llvm.LLVMVoidType) else [parts.result_type]
    return fast_ops.build(llvm.InlineAsmOp, operands=operands, result_types=results, properties=props,
                                   attributes=parts.attributes())


def _skip_operand(cur: _Cursor) -> None:
    """Skip tokens up to the next top-level ``,`` or ``)`` (a metadata operand)."""
    depth = 0
    while not cur.at_end():
        text = cur.text()
        if depth == 0 and text in (",", ")"):
            return
        depth += text in ("(", "{", "[")
        depth -= text in (")", "}", "]")
        cur.next()


def _int_binop(opcode: str, flags: set, lhs: SSAValue, rhs: SSAValue) -> Operation:
    cls = _INT_BINOP_CLASSES[opcode]
    props: dict[str, Attribute] = {}
    if opcode in _OVERFLOW_OPS:
        bits = (1 if "nsw" in flags else 0) | (2 if "nuw" in flags else 0)
        props["overflowFlags"] = int_attr(bits, _I32)
    elif opcode in _EXACT_OPS and "exact" in flags:
        props["isExact"] = _UNIT
    elif opcode == "or" and "disjoint" in flags:
        props["isDisjoint"] = _UNIT
    return fast_ops.build(cls, operands=[lhs, rhs], result_types=[lhs.type], properties=props)


def _cast_op(opcode: str, arg: SSAValue, result_type: Attribute, flags) -> Operation:
    flags = flags or ()
    if opcode == "trunc":
        overflow = [f for f in ("nsw", "nuw") if f in flags]
        return fast_ops.build(llvm.TruncOp,
            operands=[arg], result_types=[result_type],
            properties={"overflowFlags": llvm.OverflowAttr(tuple(overflow) if overflow else "none")},
        )
    if opcode in ("zext", "uitofp"):
        cls = llvm.ZExtOp if opcode == "zext" else llvm_ext.UIToFPOp
        props = {"nonNeg": UnitAttr()} if "nneg" in flags else {}
        return fast_ops.build(cls, operands=[arg], result_types=[result_type], properties=props)
    cls = _SIMPLE_CASTS.get(opcode)
    if cls is None:
        raise _ParseFailure(f"unsupported cast '{opcode}'")
    return fast_ops.build(cls, operands=[arg], result_types=[result_type])
