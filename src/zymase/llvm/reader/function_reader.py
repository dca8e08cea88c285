"""One function body (part of :mod:`zymase.llvm.reader`): blocks, phis as block
arguments, SSA names and forward references, constants materialised before their
use, the dispatch from opcode to handler (:mod:`.instructions`), metadata
attachments, and the deferred terminators that carry the phi operands."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from zymase.errors import ZymaseError
from zymase.ir import (
    ArrayAttr,
    Attribute,
    Block,
    DenseArrayBase,
    FileLineColLoc,
    FloatAttr,
    IntegerType,
    Operation,
    SSAValue,
    StringAttr,
    builtin,
    llvm,
    llvm_ext,
)
from zymase.ir import fast_ops, llvm_eh
from zymase.llvm.loop_hints import LOOP_HINTS_ATTR
from zymase.llvm.noalias_scopes import SRC_ALIAS_SCOPE, SRC_NOALIAS
from zymase.llvm.reader.constants import (
    _CAST_OPS,
    Const,
    WideFloat,
    _bits_float,
    _const_type,
    _parse_const,
)
from zymase.llvm.reader.instructions import (
    _FLOAT_BINOP_CLASSES,
    _INT_BINOP_CLASSES,
    _TAIL_KINDS,
    _UNSUPPORTED_INSTRUCTIONS,
    _cast_op,
    _InstructionHandlers,
    _int_binop,
    _Pending,
)
from zymase.llvm.reader.lexer import _Cursor, _ParseFailure, _tokenize
from zymase.llvm.reader.types import (_I32, _I64, _PTR, _UNIT, _element_type, _is_float_type, _raw_indices, int_attr,
                                      symbol_ref)

if TYPE_CHECKING:  # only for annotations: module_reader imports this module
    from zymase.llvm.reader.module_reader import _ModuleReader


class _FunctionReader(_InstructionHandlers):
    """Builds the body of one ``llvm.func`` from its lines."""

    def __init__(self, module: _ModuleReader, func: Operation, arg_names: list[str | None],
                 entry_label: str, header_index: int):
        self.module = module
        self.types = module.types
        self.metadata = module.metadata
        self.func = func
        self.name = func.properties["sym_name"].data
        self.arg_names = arg_names
        self.entry_label = entry_label
        self.header_index = header_index
        self.values: dict[str, SSAValue] = {}
        self.placeholders: dict[str, Operation] = {}
        self.blocks: dict[str, Block] = {}
        self.block_order: list[str] = []
        self.block: Block | None = None
        self.label = ""
        self.const_cache: dict[int, dict[Const, SSAValue]] = {}
        self.phis: dict[str, list[list[tuple[Const, str]]]] = {}  # label -> incoming per phi
        self.pending: list[_Pending] = []
        self.has_terminator: set[str] = set()
        self.pending_labels: set[str] = set()
        self.cur_line: tuple[str, int, Attribute | None] = ("", header_index, None)

    # -- driving

    def read(self, lines: list[str], start: int, end: int) -> None:
        region = self.func.regions[0]
        fn_type = self.func.properties["function_type"]
        entry = self._start_block(self._entry_label(lines, start, end))
        for arg_type, name in zip(fn_type.inputs.data, self.arg_names):
            arg = entry.insert_arg(arg_type, len(entry.args))
            if name is not None:
                self.values[name] = arg
        index = start
        while index < end:
            line = lines[index]
            index += 1
            stripped = line.strip()
            if not stripped or stripped[0] in ";#":
                continue
            if line[0] not in " \t":
                label = self._label_of(line, index - 1)
                if label != self.label or self.block.ops.first is not None or label in self.pending_labels:
                    self._start_block(label)
                self.pending_labels.add(label)
                continue
            first_index = index - 1
            if stripped.startswith("switch ") and stripped.endswith("["):
                while index < end:  # the cases follow on their own lines, up to "]"
                    case_line = lines[index].strip()
                    index += 1
                    stripped += " " + case_line
                    if case_line.startswith("]"):
                        break
            elif index < end and lines[index].lstrip().startswith("to label"):
                stripped += " " + lines[index].strip()  # an invoke's destinations
                index += 1
            elif "landingpad" in stripped.split(";", 1)[0].split():
                while index < end and lines[index].strip().startswith(_CLAUSE_WORDS):
                    stripped += " " + lines[index].strip()  # its clauses, one per line
                    index += 1
            self._instruction(stripped, first_index)
        self._finish()
        for label in self.block_order:
            region.add_block(self.blocks[label])

    def _entry_label(self, lines: list[str], start: int, end: int) -> str:
        for index in range(start, end):
            line = lines[index]
            if not line.strip() or line.strip().startswith(";"):
                continue
            if line[0] not in " \t":
                return self._label_of(line, index)
            break
        return self.entry_label

    def _label_of(self, line: str, index: int) -> str:
        toks = _tokenize(line)
        if len(toks) < 2 or toks[1][1] != ":":
            raise self.module._error("cannot read block label", line, index, self.name)
        return toks[0][1]

    def _block(self, label: str) -> Block:
        block = self.blocks.get(label)
        if block is None:
            block = self.blocks[label] = Block()
        return block

    def _start_block(self, label: str) -> Block:
        self.block = self._block(label)
        self.label = label
        self.block_order.append(label)
        return self.block

    def _error(self, message: str, line: str, index: int, loc: Attribute | None = None,
               hint: str | None = None) -> ZymaseError:
        location = None
        if isinstance(loc, FileLineColLoc):
            location = f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        return self.module._error(message, line, index, self.name, location, hint)

    # -- one instruction

    def _instruction(self, text: str, index: int) -> None:
        try:
            toks = _tokenize(text)
        except _ParseFailure as exc:
            raise self._error(f"cannot read instruction: {exc}", text, index) from None
        attachments: dict[str, str] = {}
        while len(toks) >= 3 and toks[-3][1] == "," and toks[-2][0] == "m" and toks[-1][0] == "m":
            attachments[toks[-2][1]] = toks[-1][1]
            del toks[-3:]
        loc = self.metadata.location(attachments["!dbg"]) if "!dbg" in attachments else None
        cur = _Cursor(text, toks)
        result_name = None
        if len(toks) >= 2 and toks[0][0] == "l" and toks[1][1] == "=":
            result_name = toks[0][1]
            cur.i = 2
        opcode = cur.text()
        if opcode in _UNSUPPORTED_INSTRUCTIONS:
            raise self._error(_UNSUPPORTED_INSTRUCTIONS[opcode], text, index, loc)
        handler = _HANDLERS.get(opcode)
        if handler is None:
            if opcode in _TAIL_KINDS:
                handler = _FunctionReader._call
            else:
                raise self._error(f"unsupported LLVM instruction '{opcode}'", text, index, loc)
        self.cur_line = (text, index, loc)
        self.cur_attachments = attachments
        try:
            if handler is not _FunctionReader._call:
                cur.next()
            result = handler(self, cur, loc)
            if not cur.at_end():
                raise _ParseFailure(f"unexpected '{cur.text()}'")
        except _ParseFailure as exc:
            raise self._error(f"cannot read instruction: {exc}", text, index, loc) from None
        if isinstance(result, Operation):
            self._append(result, loc)
            if "!tbaa" in attachments:
                name = self.metadata.tbaa_name(attachments["!tbaa"])
                if name is not None:
                    result.attributes["zymase.tbaa"] = StringAttr(name)
            if isinstance(result, (llvm.LoadOp, llvm.StoreOp)):
                for key, attr in (("!alias.scope", SRC_ALIAS_SCOPE), ("!noalias", SRC_NOALIAS)):
                    names = self.metadata.scope_names(attachments[key], self.name) if key in attachments else None
                    if names:
                        result.attributes[attr] = ArrayAttr([StringAttr(n) for n in names])
            value = result.results[0] if result.results else None
        else:
            value = result
        if result_name is not None:
            if value is None:
                raise self._error("instruction has no result", text, index, loc)
            self._define(result_name, value)

    def _append(self, op: Operation, loc: Attribute | None = None) -> Operation:
        if loc is not None:
            op.location = loc
        fast_ops.append(self.block, op)
        return op

    def _define(self, name: str, value: SSAValue) -> None:
        self.values[name] = value
        placeholder = self.placeholders.pop(name, None)
        if placeholder is not None:
            placeholder.results[0].replace_all_uses_with(value)
            placeholder.erase()

    # -- operands

    def _value(self, cur: _Cursor, ty: Attribute) -> SSAValue:
        """Parse a value of a known type and return it as an SSA value in this block."""
        return self._materialize(_parse_const(cur, ty, self.types))

    def _typed_value(self, cur: _Cursor) -> SSAValue:
        ty = self.types.parse(cur)
        return self._value(cur, ty)

    def _lookup(self, name: str, ty: Attribute) -> SSAValue:
        value = self.values.get(name)
        if value is not None:
            return value
        placeholder = self.placeholders.get(name)
        if placeholder is None:  # forward reference: a stand-in replaced at the definition
            placeholder = self.placeholders[name] = llvm.UndefOp(ty)
        return placeholder.results[0]

    def _materialize(self, c: Const) -> SSAValue:
        tag = c[0]
        if tag == "local":
            return self._lookup(c[1], c[2])
        if tag == "meta":
            raise _ParseFailure("metadata operands are only supported on dropped intrinsics")
        cache = self.const_cache.setdefault(id(self.block), {})
        value = cache.get(c)
        if value is None:
            value = self._build_const(c)
            cache[c] = value
        return value

    def _emit(self, op: Operation) -> SSAValue:
        fast_ops.append(self.block, op)
        return op.results[0]

    def _build_const(self, c: Const) -> SSAValue:
        tag = c[0]
        if tag == "int":
            return self._emit(fast_ops.constant(int_attr(c[2], c[1]), c[1]))
        if tag == "float":
            return self._emit(fast_ops.constant(_float_constant(c), c[1]))
        if tag == "zero":
            return self._emit(_zero_op(c[1]))
        if tag == "undef":
            return self._emit(llvm.UndefOp(c[1]))
        if tag == "poison":
            return self._emit(llvm_ext.PoisonOp(c[1]))
        if tag == "global":
            space = self.module.global_spaces.get(c[1], 0)
            ptr = llvm.LLVMPointerType(builtin.IntAttr(space)) if space else _PTR
            # (what llvm.AddressOfOp(SymbolRefAttr(name), ptr) builds, without IRDL's
            # generic constructor: every reference to a global is one)
            return self._emit(fast_ops.build(llvm.AddressOfOp, result_types=[ptr],
                                             properties={"global_name": symbol_ref(c[1])}))
        if tag in ("vec", "splat"):
            return self._build_vector(c)
        if tag == "agg":
            return self._build_aggregate(c[1], c[2])
        if tag == "cstr":
            elems = tuple(("int", _element_type(c[1], 0), b) for b in c[2].encode("latin-1"))
            return self._build_aggregate(c[1], elems)
        if tag == "cast":
            return self._emit(_cast_op(c[1], self._materialize(c[2]), c[3], False))
        if tag == "bin":
            lhs, rhs = self._materialize(c[3]), self._materialize(c[4])
            return self._emit(_int_binop(c[1], set(c[2]), lhs, rhs))
        if tag == "gep":
            return self._emit(self._gep(c[1], c[2], self._materialize(c[3]), list(c[4])))
        raise _ParseFailure(f"unsupported constant {tag}")

    def _build_vector(self, c: Const) -> SSAValue:
        ty = c[1]
        count = ty.get_shape()[0]
        elems = list(c[2]) if c[0] == "vec" else [c[2]] * count
        if all(e[0] in ("int", "float") for e in elems):
            values = [e[2] if e[0] == "int" else _bits_float(e[2]) for e in elems]
            dense = builtin.DenseIntOrFPElementsAttr.from_list(ty, values)
            return self._emit(llvm.ConstantOp(dense, ty))
        vector = self._emit(llvm_ext.PoisonOp(ty))
        for lane, elem in enumerate(elems):
            if elem[0] == "poison":
                continue
            index = self._materialize(("int", _I32, lane))
            vector = self._emit(llvm.InsertElementOp(vector, self._materialize(elem), index))
        return vector

    def _build_aggregate(self, ty: Attribute, elems: tuple) -> SSAValue:
        value = self._emit(llvm.UndefOp(ty))
        for position, elem in enumerate(elems):
            if elem[0] == "undef":
                continue
            member = self._materialize(elem)
            value = self._emit(
                llvm.InsertValueOp(DenseArrayBase.from_list(_I64, [position]), value, member)
            )
        return value

    def _gep(self, flags, elem_type: Attribute, base: SSAValue, indices: list[Const]) -> Operation:
        raw: list[int] = []
        dynamic: list[SSAValue] = []
        for idx in indices:
            if isinstance(_const_type(idx), builtin.VectorType):
                raise _ParseFailure("vector getelementptr is not supported")
            if idx[0] == "int" and -(2**31) < idx[2] < 2**31:
                raw.append(idx[2])
            else:
                raw.append(llvm.GEP_USE_SSA_VAL)
                dynamic.append(self._materialize(idx))
        if not isinstance(base.type, llvm.LLVMPointerType):
            raise _ParseFailure("vector getelementptr is not supported")
        bits = (3 if "inbounds" in flags else 0) | (2 if "nusw" in flags else 0) | (4 if "nuw" in flags else 0)
        # what llvm.GEPOp(...) builds, without IRDL's generic constructor (a third of
        # the cost of reading a GEP); the raw indices are shared as the int attributes are
        props = {"rawConstantIndices": _raw_indices(tuple(raw)), "elem_type": elem_type,
                 "noWrapFlags": int_attr(bits, _I32)}
        if "inbounds" in flags:
            props["inbounds"] = _UNIT
        return fast_ops.build(llvm.GEPOp, operands=[base, *dynamic], result_types=[base.type], properties=props)

    # -- terminators (deferred until all block arguments are known)

    def _defer(self, pending: _Pending) -> None:
        pending.location = self.cur_line[2]
        pending.line = self.cur_line[0]
        loop = self.cur_attachments.get("!llvm.loop")
        if loop is not None:
            pending.loop_hints = self.metadata.loop_hints(loop)
        self.pending.append(pending)
        self.has_terminator.add(self.label)

    def _finish(self) -> None:
        """Build terminators with successor operands from the phis, then check refs."""
        incoming = self._incoming_by_pred()
        for pending in self.pending:
            self.block = self.blocks[pending.block_label]
            self.label = pending.block_label
            try:
                op = self._terminator(pending, incoming)
            except _ParseFailure as exc:
                raise self._error(f"cannot read instruction: {exc}", pending.line,
                                  self.header_index, pending.location) from None
            if pending.loop_hints:
                op.attributes[LOOP_HINTS_ATTR] = ArrayAttr([StringAttr(h) for h in pending.loop_hints])
            self._append(op, pending.location)
        for label in self.block_order:
            if label not in self.has_terminator:
                raise self._error(f"block %{label} has no terminator", label, self.header_index)
        if self.placeholders:
            name = next(iter(self.placeholders))
            raise self._error(f"use of undefined value {name}", name, self.header_index)

    def _incoming_by_pred(self) -> dict[tuple[str, str], list[Const]]:
        """(dest, pred) -> the values the phis of dest receive from pred, in phi order."""
        table: dict[tuple[str, str], list[Const]] = {}
        for dest, phis in self.phis.items():
            for position, entries in enumerate(phis):
                for value, pred in entries:
                    row = table.setdefault((dest, pred), [None] * len(phis))
                    row[position] = value
        return table

    def _edge_operands(self, dest: str, incoming) -> list[SSAValue]:
        if dest not in self.blocks:
            raise _ParseFailure(f"branch to unknown block %{dest}")
        row = incoming.get((dest, self.label))
        if row is None:
            if self.phis.get(dest):
                raise _ParseFailure(f"phi in %{dest} has no value for predecessor %{self.label}")
            return []
        return [self._materialize(v) for v in row]

    def _terminator(self, p: _Pending, incoming) -> Operation:
        if p.kind == "ret":
            return llvm.ReturnOp(self._materialize(p.operands[0]) if p.operands else None)
        if p.kind == "unreachable":
            return fast_ops.build(llvm.UnreachableOp)
        if p.kind == "resume":
            return llvm_eh.ResumeOp(self._materialize(p.operands[0]))
        if p.kind == "invoke":
            return self._invoke_op(p, incoming)
        # (branches built as their constructors build them, without IRDL's generic
        # argument matching: one per block)
        if p.kind == "br":
            return fast_ops.br(self.blocks[p.dests[0]], self._edge_operands(p.dests[0], incoming))
        if p.kind == "cond_br":
            then_ops = self._edge_operands(p.dests[0], incoming)
            else_ops = self._edge_operands(p.dests[1], incoming)
            cond = self._materialize(p.operands[0])
            return fast_ops.cond_br(cond, self.blocks[p.dests[0]], then_ops, self.blocks[p.dests[1]], else_ops)
        operands = [self._edge_operands(d, incoming) for d in p.dests]
        value = self._materialize(p.operands[0])
        return llvm_ext.SwitchOp(
            value, self.blocks[p.dests[0]], operands[0], p.case_values,
            [self.blocks[d] for d in p.dests[1:]], operands[1:],
        )

    def _invoke_op(self, p: _Pending, incoming) -> Operation:
        parts, operands, stand_in = p.invoke
        var_type = None
        if parts.variadic:
            var_type = llvm.LLVMFunctionType(parts.fn_params or [], parts.result_type, True)
        op = llvm_eh.InvokeOp(
            parts.callee, [self._materialize(c) for c in operands], stand_in.results[0].type if stand_in is not None else None,
            self.blocks[p.dests[0]], self._edge_operands(p.dests[0], incoming),
            self.blocks[p.dests[1]], self._edge_operands(p.dests[1], incoming),
            cconv=llvm.CallingConventionAttr(parts.cconv), var_callee_type=var_type,
            attributes=parts.attributes(),
        )
        if stand_in is not None:
            old, new = stand_in.results[0], op.results[0]
            old.replace_all_uses_with(new)
            for name in [n for n, v in self.values.items() if v is old]:
                self.values[name] = new  # for the operands of invokes built after this one
        return op


_CLAUSE_WORDS = ("catch ", "filter ", "cleanup")

#: float constants' attributes by (bits, type): a program repeats its constants (0.5, 1.0
#: ...), and building one checks it. The bits tell 0.0 from -0.0 and NaN payloads apart;
#: long doubles (four fields, WideFloat) are built each time.
_FLOAT_CONSTANTS: dict[tuple[int, Attribute], FloatAttr] = {}


def _float_constant(c: Const) -> FloatAttr:
    if len(c) != 3:
        return FloatAttr(WideFloat(_bits_float(c[2]), c[3]), c[1])
    key = (c[2], c[1])
    attr = _FLOAT_CONSTANTS.get(key)
    if attr is None:
        if len(_FLOAT_CONSTANTS) >= 8192:
            _FLOAT_CONSTANTS.clear()
        attr = _FLOAT_CONSTANTS[key] = FloatAttr(_bits_float(c[2]), c[1])
    return attr


def _zero_op(ty: Attribute) -> Operation:
    """``zeroinitializer``/``null`` of any type."""
    if isinstance(ty, IntegerType):
        return llvm.ConstantOp(int_attr(0, ty), ty)
    if _is_float_type(ty):
        return llvm.ConstantOp(FloatAttr(0.0, ty), ty)
    if isinstance(ty, builtin.VectorType):
        elem = ty.element_type
        count = ty.get_shape()[0]
        if isinstance(elem, IntegerType) or _is_float_type(elem):
            zero = 0 if isinstance(elem, IntegerType) else 0.0
            return llvm.ConstantOp(builtin.DenseIntOrFPElementsAttr.from_list(ty, [zero] * count), ty)
    return fast_ops.build(llvm.ZeroOp, result_types=[ty])


_HANDLERS: dict[str, Callable] = {
    **{op: _FunctionReader._int_binop for op in _INT_BINOP_CLASSES},
    **{op: _FunctionReader._float_binop for op in _FLOAT_BINOP_CLASSES},
    **{op: _FunctionReader._cast for op in _CAST_OPS},
    "fneg": _FunctionReader._fneg,
    "icmp": _FunctionReader._icmp,
    "fcmp": _FunctionReader._fcmp,
    "select": _FunctionReader._select,
    "alloca": _FunctionReader._alloca,
    "load": _FunctionReader._load,
    "store": _FunctionReader._store,
    "getelementptr": _FunctionReader._getelementptr,
    "extractvalue": _FunctionReader._extractvalue,
    "insertvalue": _FunctionReader._insertvalue,
    "extractelement": _FunctionReader._extractelement,
    "insertelement": _FunctionReader._insertelement,
    "shufflevector": _FunctionReader._shufflevector,
    "freeze": _FunctionReader._freeze,
    "va_arg": _FunctionReader._va_arg,
    "atomicrmw": _FunctionReader._atomicrmw,
    "cmpxchg": _FunctionReader._cmpxchg,
    "fence": _FunctionReader._fence,
    "phi": _FunctionReader._phi,
    "call": _FunctionReader._call,
    "br": _FunctionReader._br,
    "switch": _FunctionReader._switch,
    "ret": _FunctionReader._ret,
    "unreachable": _FunctionReader._unreachable,
    "invoke": _FunctionReader._invoke,
    "landingpad": _FunctionReader._landingpad,
    "resume": _FunctionReader._resume,
}
