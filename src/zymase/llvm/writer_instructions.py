"""Function bodies as LLVM IR text, for the writer (:mod:`zymase.llvm.writer`): local
names, block arguments turned into phis (with trampolines for repeated edges) and one
line per instruction; the exception-handling ops are in :mod:`zymase.llvm.writer_eh`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from zymase.errors import ZymaseError
from zymase.ir import (ArrayAttr, Attribute, Block, Float16Type, Float32Type, Float64Type, IntegerType, Operation,
                       SSAValue, StringAttr, VectorType, builtin, llvm, llvm_ext)
from zymase.llvm.writer_text import (WRITER_BUG_HINT, WriteError, fastmath_text, int_literal,
                                     int_value, overflow_text, prop_or_attr, string_text,
                                     symbol_text)
from zymase.llvm.writer_constants import CONSTANT_OPS, constant_literal, gep_is_inbounds, index_into
from zymase.llvm.noalias_scopes import SCOPE_DECL
from zymase.llvm.writer_eh import EH_WRITERS

if TYPE_CHECKING:
    from zymase.llvm.writer import ModuleWriter


class Namer:
    """Unique local names (``%a0``, ``%v3``, ``bb2``) for one function."""

    def __init__(self):
        self.names: dict[SSAValue, str] = {}
        self.count = 0

    def name(self, value: SSAValue, prefix: str = "v") -> str:
        text = self.names.get(value)
        if text is None:
            text = self.names[value] = f"%{prefix}{self.count}"
            self.count += 1
        return text


_ORDERINGS = llvm_ext.ATOMIC_ORDERINGS
_ICMP_NAMES = {p.to_int(): p.value for p in llvm.ICmpPredicateFlag}
_FCMP_NAMES = {p.to_int(): p.value.lstrip("_") for p in llvm.FCmpPredicateFlag}

_INT_BINOPS = {
    "llvm.add": "add", "llvm.sub": "sub", "llvm.mul": "mul", "llvm.shl": "shl",
    "llvm.udiv": "udiv", "llvm.sdiv": "sdiv", "llvm.lshr": "lshr", "llvm.ashr": "ashr",
    "llvm.urem": "urem", "llvm.srem": "srem", "llvm.and": "and", "llvm.or": "or",
    "llvm.xor": "xor",
}
_FLOAT_BINOPS = {"llvm.fadd": "fadd", "llvm.fsub": "fsub", "llvm.fmul": "fmul",
                 "llvm.fdiv": "fdiv", "llvm.frem": "frem"}
_CASTS = {
    "llvm.trunc": "trunc", "llvm.zext": "zext", "llvm.sext": "sext", "llvm.fptrunc": "fptrunc",
    "llvm.fpext": "fpext", "llvm.fptosi": "fptosi", "llvm.fptoui": "fptoui",
    "llvm.sitofp": "sitofp", "llvm.uitofp": "uitofp", "llvm.ptrtoint": "ptrtoint",
    "llvm.inttoptr": "inttoptr", "llvm.bitcast": "bitcast", "llvm.addrspacecast": "addrspacecast",
}
_UNARY_INTRINSICS = {
    "llvm.intr.fabs": "fabs", "llvm.intr.ceil": "ceil", "llvm.intr.sqrt": "sqrt",
    "llvm.intr.floor": "floor", "llvm.intr.exp2": "exp2", "llvm.intr.log": "log",
    "llvm.intr.exp": "exp", "llvm.intr.sin": "sin", "llvm.intr.cos": "cos",
    "llvm.intr.log2": "log2", "llvm.intr.maxnum": "maxnum", "llvm.intr.minnum": "minnum",
    "llvm.intr.copysign": "copysign", "llvm.intr.fma": "fma", "llvm.intr.pow": "pow",
}


def _mangle(ty: Attribute) -> str:
    """LLVM's overloaded-intrinsic type suffix (f64, v4f32, p0, i32)."""
    if isinstance(ty, IntegerType):
        return f"i{ty.width.data}"
    if isinstance(ty, builtin.Float64Type):
        return "f64"
    if isinstance(ty, builtin.Float32Type):
        return "f32"
    if isinstance(ty, builtin.Float16Type):
        return "f16"
    if isinstance(ty, builtin.BFloat16Type):
        return "bf16"
    if isinstance(ty, builtin.Float80Type):
        return "f80"
    if isinstance(ty, builtin.Float128Type):
        return "f128"
    if isinstance(ty, llvm.LLVMPointerType):
        space = ty.addr_space
        return f"p{space.data if isinstance(space, builtin.IntAttr) else 0}"
    if isinstance(ty, builtin.VectorType):
        return f"v{ty.get_shape()[0]}{_mangle(ty.element_type)}"
    raise WriteError(f"cannot mangle intrinsic type {ty}")


class FunctionWriter:
    """Prints one function body: names, phis (with trampolines), instructions."""

    def __init__(self, module: ModuleWriter, func: Operation, namer: Namer):
        self.m = module
        self.func = func
        self.namer = namer
        self.literals: dict[SSAValue, str] = {}
        self.labels: dict[Block, str] = {}
        self.incoming: dict[Block, list[tuple[str, Sequence[SSAValue]]]] = {}
        self.edge_labels: dict[tuple[int, int], str] = {}
        self.trampolines: list[str] = []
        self.lines: list[str] = []

    # -- driver

    def write(self) -> str:
        blocks = list(self.func.regions[0].blocks)
        for index, block in enumerate(blocks):
            self.labels[block] = f"bb{index}"
        self._name_values(blocks)
        self._collect_edges(blocks)
        if self.incoming.get(blocks[0]):
            raise WriteError("the entry block of a function cannot have predecessors")
        for block in blocks[1:]:
            if block.args and not self.incoming.get(block):
                # unreachable block: its arguments can be anything, there is no phi
                for arg in block.args:
                    self.literals[arg] = "poison"
        for block in blocks:
            self.lines.append(f"{self.labels[block]}:")
            if block is not blocks[0] and self.incoming.get(block):
                self._phis(block)
            for op in block.ops:
                if op.name in CONSTANT_OPS:
                    continue
                try:
                    text = self._op(op)
                except WriteError as exc:
                    raise ZymaseError(
                        f"cannot write LLVM IR: {exc}",
                        construct=op.name,
                        function=self.func.properties["sym_name"].data,
                        hint=WRITER_BUG_HINT,
                    ) from None
                if text:
                    self.lines.append("  " + text)
        self.lines.extend(self.trampolines)
        return "\n".join(self.lines) + "\n"

    def _name_values(self, blocks: list[Block]) -> None:
        namer = self.namer
        for index, block in enumerate(blocks):
            if index:
                for arg in block.args:
                    namer.name(arg, "p")
            for op in block.ops:
                if op.name in CONSTANT_OPS:
                    try:
                        self.literals[op.results[0]] = constant_literal(self.m, op)
                    except WriteError as exc:
                        raise ZymaseError(f"cannot write LLVM IR: {exc}", construct=op.name,
                                          function=self.func.properties["sym_name"].data,
                                          hint=WRITER_BUG_HINT) from None
                    continue
                for result in op.results:
                    namer.name(result)

    # -- values

    def val(self, value: SSAValue) -> str:
        text = self.literals.get(value)
        if text is not None:
            return text
        text = self.namer.names.get(value)
        if text is None:
            raise WriteError(f"operand {value} is not defined in this function")
        return text

    def typed(self, value: SSAValue) -> str:
        return f"{self.m.type(value.type)} {self.val(value)}"

    def res(self, op: Operation) -> str:
        return self.namer.names[op.results[0]]

    # -- block arguments -> phis

    def _successor_slots(self, term: Operation) -> list[tuple[Block, Sequence[SSAValue]]]:
        name = term.name
        if name == "llvm.br":
            return [(term.successors[0], tuple(term.operands))]
        if name == "llvm.cond_br":
            return [(term.successors[0], tuple(term.then_arguments)),
                    (term.successors[1], tuple(term.else_arguments))]
        if name == "llvm.switch":
            slots = [(term.successors[0], tuple(term.default_operands))]
            slots += list(zip(term.successors[1:], term.case_operand_lists()))
            return slots
        if name == "llvm.invoke":
            return [(term.normal_dest, tuple(term.normal_dest_operands)),
                    (term.unwind_dest, tuple(term.unwind_dest_operands))]
        if term.successors:
            raise WriteError(f"unknown branch op '{name}'")
        return []

    def _collect_edges(self, blocks: list[Block]) -> None:
        for block in blocks:
            term = block.last_op
            if term is None:
                raise WriteError(f"block {self.labels[block]} is empty (no terminator)")
            first_operands: dict[Block, Sequence[SSAValue]] = {}
            for slot, (dest, operands) in enumerate(self._successor_slots(term)):
                if dest not in self.labels:
                    raise WriteError("branch to a block of another region")
                if len(operands) != len(dest.args):
                    raise WriteError(
                        f"branch passes {len(operands)} values to a block with {len(dest.args)} arguments"
                    )
                source, target = self.labels[block], self.labels[dest]
                seen = first_operands.get(dest)
                if seen is not None and not _same_values(seen, operands):
                    # a second edge to dest with other values: split it (LLVM's phi
                    # has one value per predecessor block)
                    source = target = self._trampoline(block, slot, dest)
                elif seen is None:
                    first_operands[dest] = operands
                self.edge_labels[(id(term), slot)] = target
                self.incoming.setdefault(dest, []).append((source, operands))

    def _trampoline(self, block: Block, slot: int, dest: Block) -> str:
        label = f"{self.labels[block]}.split{slot}"
        self.trampolines.append(f"{label}:")
        self.trampolines.append(f"  br label %{self.labels[dest]}")
        return label

    def _phis(self, block: Block) -> None:
        edges = self.incoming.get(block, [])
        for position, arg in enumerate(block.args):
            entries = ", ".join(f"[ {self.val(ops[position])}, %{src} ]" for src, ops in edges)
            self.lines.append(f"  {self.namer.names[arg]} = phi {self.m.type(arg.type)} {entries}")

    def dest(self, term: Operation, slot: int) -> str:
        return "%" + self.edge_labels[(id(term), slot)]

    # -- instructions

    def _op(self, op: Operation) -> str:
        name = op.name
        if name in _INT_BINOPS:
            return self._int_binop(op, _INT_BINOPS[name])
        if name in _FLOAT_BINOPS:
            a, b = op.operands
            return f"{self.res(op)} = {_FLOAT_BINOPS[name]}{fastmath_text(op)} {self.typed(a)}, {self.val(b)}"
        if name in _CASTS:
            return self._cast(op, _CASTS[name])
        if name in _UNARY_INTRINSICS:
            return self._xdsl_intrinsic(op, _UNARY_INTRINSICS[name])
        handler = _OP_WRITERS.get(name)
        if handler is None:
            raise WriteError(f"op '{name}' has no LLVM IR equivalent in the writer")
        return handler(self, op)

    def _int_binop(self, op: Operation, opcode: str) -> str:
        a, b = op.operands
        flags = ""
        if opcode in ("add", "sub", "mul", "shl"):
            flags = overflow_text(llvm_ext.overflow_bits(op))
        elif opcode in ("udiv", "sdiv", "lshr", "ashr") and prop_or_attr(op, "isExact") is not None:
            flags = " exact"
        elif opcode == "or" and prop_or_attr(op, "isDisjoint") is not None:
            flags = " disjoint"
        return f"{self.res(op)} = {opcode}{flags} {self.typed(a)}, {self.val(b)}"

    def _cast(self, op: Operation, opcode: str) -> str:
        flags = ""
        if opcode == "trunc":
            flags = overflow_text(llvm_ext.overflow_bits(op))
        elif opcode in ("zext", "uitofp") and prop_or_attr(op, "nonNeg") is not None:
            flags = " nneg"
        return f"{self.res(op)} = {opcode}{flags} {self.typed(op.operands[0])} to {self.m.type(op.results[0].type)}"

    def _fneg(self, op: Operation) -> str:
        return f"{self.res(op)} = fneg{fastmath_text(op)} {self.typed(op.operands[0])}"

    def _icmp(self, op: Operation) -> str:
        a, b = op.operands
        pred = _ICMP_NAMES[op.properties["predicate"].value.data]
        return f"{self.res(op)} = icmp {pred} {self.typed(a)}, {self.val(b)}"

    def _fcmp(self, op: Operation) -> str:
        a, b = op.operands
        pred = _FCMP_NAMES[op.properties["predicate"].value.data]
        return f"{self.res(op)} = fcmp{fastmath_text(op)} {pred} {self.typed(a)}, {self.val(b)}"

    def _select(self, op: Operation) -> str:
        c, a, b = op.operands
        return f"{self.res(op)} = select{fastmath_text(op)} {self.typed(c)}, {self.typed(a)}, {self.typed(b)}"

    def _alloca(self, op: Operation) -> str:
        text = f"{self.res(op)} = alloca {self.m.type(op.properties['elem_type'])}, {self.typed(op.operands[0])}"
        if (align := op.properties.get("alignment")) is not None and int_value(align):
            text += f", align {int_value(align)}"
        space = op.results[0].type.addr_space
        if isinstance(space, builtin.IntAttr) and space.data:
            text += f", addrspace({space.data})"
        return text

    def _memory_tail(self, op: Operation, ordering: int, accessed: Attribute) -> str:
        text = ""
        if ordering:
            text += f" {_ORDERINGS[ordering]}"
        align = op.properties.get("alignment")
        if align is not None:
            text += f", align {int_value(align)}"
        elif ordering:
            raise WriteError("atomic load/store needs an explicit alignment")
        elif isinstance(accessed, VectorType) and (lane := _lane_alignment(accessed.element_type)):
            # without one LLVM takes a vector's own (16 for <2 x double>): the engine's
            # loads and stores of shadows and tape slots, made without the primal's, would
            # be aligned SSE moves at addresses only the elements' alignment is known for
            # (a fault on vectorized IR, session 32)
            text += f", align {lane}"
        return text

    def _load(self, op: Operation) -> str:
        ordering = int_value(op.properties.get("ordering"))
        volatile = " volatile" if prop_or_attr(op, "volatile_") is not None else ""
        atomic = " atomic" if ordering else ""
        ty = self.m.type(op.results[0].type)
        return (f"{self.res(op)} = load{atomic}{volatile} {ty}, {self.typed(op.operands[0])}"
                + self._memory_tail(op, ordering, op.results[0].type) + self.m.alias_metadata(op))

    def _store(self, op: Operation) -> str:
        ordering = int_value(op.properties.get("ordering"))
        volatile = " volatile" if prop_or_attr(op, "volatile_") is not None else ""
        atomic = " atomic" if ordering else ""
        value, ptr = op.operands
        return (f"store{atomic}{volatile} {self.typed(value)}, {self.typed(ptr)}"
                + self._memory_tail(op, ordering, value.type) + self.m.alias_metadata(op))

    def _gep(self, op: Operation) -> str:
        elem = op.properties["elem_type"]
        flags_bits = int_value(op.properties.get("noWrapFlags"))
        flags = ""
        if gep_is_inbounds(op):
            flags += " inbounds"
        elif flags_bits & 2:
            flags += " nusw"
        if flags_bits & 4:
            flags += " nuw"
        dynamic = iter(op.operands[1:])
        parts = []
        ty = elem
        for position, raw in enumerate(op.properties["rawConstantIndices"].get_values()):
            if raw == llvm.GEP_USE_SSA_VAL:
                index_value = next(dynamic)
                parts.append(self.typed(index_value))
                if position > 0:
                    ty = index_into(ty, 0) if not isinstance(
                        ty, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType)) else _struct_dynamic(ty)
            else:
                is_struct = position > 0 and isinstance(ty, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType))
                parts.append(f"{'i32' if is_struct else 'i64'} {raw}")
                if position > 0:
                    ty = index_into(ty, raw)
        indices = "".join(", " + p for p in parts)
        return f"{self.res(op)} = getelementptr{flags} {self.m.type(elem)}, {self.typed(op.operands[0])}{indices}"

    def _extractvalue(self, op: Operation) -> str:
        positions = ", ".join(str(p) for p in op.properties["position"].get_values())
        return f"{self.res(op)} = extractvalue {self.typed(op.operands[0])}, {positions}"

    def _insertvalue(self, op: Operation) -> str:
        container, value = op.operands
        positions = ", ".join(str(p) for p in op.properties["position"].get_values())
        return f"{self.res(op)} = insertvalue {self.typed(container)}, {self.typed(value)}, {positions}"

    def _extractelement(self, op: Operation) -> str:
        vector, index = op.operands
        return f"{self.res(op)} = extractelement {self.typed(vector)}, {self.typed(index)}"

    def _insertelement(self, op: Operation) -> str:
        vector, value, index = op.operands
        return f"{self.res(op)} = insertelement {self.typed(vector)}, {self.typed(value)}, {self.typed(index)}"

    def _shufflevector(self, op: Operation) -> str:
        v1, v2 = op.operands
        lanes = list(op.properties["mask"].get_values())
        mask = ", ".join("i32 poison" if lane < 0 else f"i32 {lane}" for lane in lanes)
        return (f"{self.res(op)} = shufflevector {self.typed(v1)}, {self.typed(v2)}, "
                f"<{len(lanes)} x i32> <{mask}>")

    def _freeze(self, op: Operation) -> str:
        return f"{self.res(op)} = freeze {self.typed(op.operands[0])}"

    def _va_arg(self, op: Operation) -> str:
        return f"{self.res(op)} = va_arg {self.typed(op.operands[0])}, {self.m.type(op.results[0].type)}"

    def _atomic_suffix(self, op: Operation) -> str:
        text = ""
        scope = op.properties.get("syncscope")
        if isinstance(scope, StringAttr):
            text += f" syncscope({string_text(scope.data)})"
        return text

    def _atomicrmw(self, op: Operation) -> str:
        ptr, value = op.operands
        volatile = " volatile" if "volatile_" in op.properties else ""
        text = (f"{self.res(op)} = atomicrmw{volatile} {op.properties['bin_op'].data} "
                f"{self.typed(ptr)}, {self.typed(value)}{self._atomic_suffix(op)} "
                f"{_ORDERINGS[int_value(op.properties['ordering'])]}")
        if (align := op.properties.get("alignment")) is not None:
            text += f", align {int_value(align)}"
        return text

    def _cmpxchg(self, op: Operation) -> str:
        ptr, cmp, new = op.operands
        weak = " weak" if "weak" in op.properties else ""
        volatile = " volatile" if "volatile_" in op.properties else ""
        text = (f"{self.res(op)} = cmpxchg{weak}{volatile} {self.typed(ptr)}, {self.typed(cmp)}, "
                f"{self.typed(new)}{self._atomic_suffix(op)} "
                f"{_ORDERINGS[int_value(op.properties['success_ordering'])]} "
                f"{_ORDERINGS[int_value(op.properties['failure_ordering'])]}")
        if (align := op.properties.get("alignment")) is not None:
            text += f", align {int_value(align)}"
        return text

    def _fence(self, op: Operation) -> str:
        return f"fence{self._atomic_suffix(op)} {_ORDERINGS[int_value(op.properties['ordering'])]}"

    def _call(self, op: Operation) -> str:
        prefix = f"{self.res(op)} = " if op.results else ""
        tail = op.properties.get("TailCallKind")
        tail_text = ""
        if isinstance(tail, llvm.TailCallKindAttr) and tail.data != llvm.TailCallKind.NONE:
            tail_text = f"{tail.data.value} "
        return f"{prefix}{tail_text}call{fastmath_text(op)}{self.call_site(op, list(op.operands))}"

    def _inline_asm(self, op: Operation) -> str:
        prefix = f"{self.res(op)} = " if op.results else ""
        ret = self.m.type(op.results[0].type) if op.results else "void"
        flags = "".join(f" {word}" for word, prop in (("sideeffect", "has_side_effects"),
                                                       ("alignstack", "is_align_stack"))
                        if prop in op.properties)
        dialect = op.properties.get("asm_dialect")
        if dialect is not None and int_value(dialect) == 1:
            flags += " inteldialect"
        arg_attrs = prop_or_attr(op, "arg_attrs")
        attr_list = arg_attrs.data if isinstance(arg_attrs, ArrayAttr) else ()
        arg_texts = []
        for index, arg in enumerate(op.operands):
            attrs = self.m._param_attrs(attr_list[index]) if index < len(attr_list) else ""
            arg_texts.append(f"{self.m.type(arg.type)}{' ' + attrs if attrs else ''} {self.val(arg)}")
        template = string_text(op.properties["asm_string"].data)
        constraints = string_text(op.properties["constraints"].data)
        return f'{prefix}call {ret} asm{flags} {template}, {constraints}({", ".join(arg_texts)})'

    def call_site(self, op: Operation, operands: list[SSAValue]) -> str:
        """What a call and an invoke of ``op`` share: `` <cc> <ret attrs> <type> <callee>(<args>)``;
        ``operands`` start with the function pointer of an indirect call."""
        callee = op.properties.get("callee")
        results = op.results
        ret_ty = results[0].type if results else None
        ret = self.m.type(ret_ty) if ret_ty is not None else "void"
        var_type = op.properties.get("var_callee_type")
        if callee is not None:
            target = symbol_text("@", callee.root_reference.data)
            args = operands
            self.m.callee(callee.root_reference.data, ret_ty, [a.type for a in args], var_type)
        else:
            target = self.val(operands[0])
            args = operands[1:]
        fn_ty = ret
        if isinstance(var_type, llvm.LLVMFunctionType):
            fn_ty = self.m.type(var_type)
        arg_attrs = prop_or_attr(op, "arg_attrs")
        attr_list = arg_attrs.data if isinstance(arg_attrs, ArrayAttr) else ()
        arg_texts = []
        for index, arg in enumerate(args):
            attrs = self.m._param_attrs(attr_list[index]) if index < len(attr_list) else ""
            arg_texts.append(f"{self.m.type(arg.type)}{' ' + attrs if attrs else ''} {self.val(arg)}")
        cconv = op.properties.get("CConv")
        cconv_text = ""
        if isinstance(cconv, llvm.CallingConventionAttr) and cconv.cconv_name != "ccc":
            cconv_text = f" {cconv.cconv_name}"
        res_attrs = prop_or_attr(op, "res_attrs")
        res_text = ""
        if isinstance(res_attrs, ArrayAttr) and res_attrs.data:
            res_text = self.m._param_attrs(res_attrs.data[0])
            res_text = f" {res_text}" if res_text else ""
        return f"{cconv_text}{res_text} {fn_ty} {target}({', '.join(arg_texts)})"

    def _call_intrinsic(self, op: Operation) -> str:
        if SCOPE_DECL in op.attributes:
            return self.m.scope_decl(op)
        name = op.properties["intrin"].data
        bundles = op.properties.get("op_bundle_sizes")
        if bundles is not None and len(bundles.get_values()):
            raise WriteError("operand bundles on intrinsic calls are not supported")
        args = list(op.args)
        ret_ty = op.results[0].type if op.results else None
        self.m.intrinsic(name, ret_ty, [a.type for a in args])
        return self._intrinsic_call(op, name, ret_ty, args)

    def _intrinsic_call(self, op: Operation, name: str, ret_ty: Attribute | None,
                        args: Sequence[SSAValue]) -> str:
        ret = self.m.type(ret_ty) if ret_ty is not None else "void"
        prefix = f"{self.res(op)} = " if op.results else ""
        arg_text = ", ".join(self.typed(a) for a in args)
        return f"{prefix}call{fastmath_text(op)} {ret} {symbol_text('@', name)}({arg_text})"

    def _xdsl_intrinsic(self, op: Operation, base: str) -> str:
        ret_ty = op.results[0].type
        name = f"llvm.{base}.{_mangle(ret_ty)}"
        args = list(op.operands)
        self.m.intrinsic(name, ret_ty, [a.type for a in args])
        return self._intrinsic_call(op, name, ret_ty, args)

    def _stacksave(self, op: Operation) -> str:
        ret_ty = op.results[0].type
        name = f"llvm.stacksave.{_mangle(ret_ty)}"
        self.m.intrinsic(name, ret_ty, [])
        return self._intrinsic_call(op, name, ret_ty, [])

    def _stackrestore(self, op: Operation) -> str:
        ptr = op.operands[0]
        name = f"llvm.stackrestore.{_mangle(ptr.type)}"
        self.m.intrinsic(name, None, [ptr.type])
        return self._intrinsic_call(op, name, None, [ptr])

    def _reduce(self, op: Operation) -> str:
        start, vector = op.operands
        kind = op.name.rsplit(".", 1)[1]
        name = f"llvm.vector.reduce.{kind}.{_mangle(vector.type)}"
        self.m.intrinsic(name, start.type, [start.type, vector.type])
        return self._intrinsic_call(op, name, start.type, [start, vector])

    # -- terminators

    def _return(self, op: Operation) -> str:
        if op.operands:
            return f"ret {self.typed(op.operands[0])}"
        return "ret void"

    def _br(self, op: Operation) -> str:
        return f"br label {self.dest(op, 0)}" + self.m.loop_metadata(op)

    def _cond_br(self, op: Operation) -> str:
        return (f"br {self.typed(op.operands[0])}, label {self.dest(op, 0)}, label {self.dest(op, 1)}"
                + self.m.loop_metadata(op))

    def _switch(self, op: Operation) -> str:
        value = op.operands[0]
        ty = self.m.type(value.type)
        cases = "".join(
            f"\n    {ty} {int_literal(v, value.type)}, label {self.dest(op, i + 1)}"
            for i, v in enumerate(op.case_value_list())
        )
        return f"switch {self.typed(value)}, label {self.dest(op, 0)} [{cases}\n  ]"

    def _unreachable(self, op: Operation) -> str:
        return "unreachable"


def _same_values(a: Sequence[SSAValue], b: Sequence[SSAValue]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _struct_dynamic(ty: Attribute) -> Attribute:
    raise WriteError(f"getelementptr into struct {ty} needs a constant index")


_OP_WRITERS: dict[str, Callable[[FunctionWriter, Operation], str]] = {
    "llvm.fneg": FunctionWriter._fneg,
    "llvm.icmp": FunctionWriter._icmp,
    "llvm.fcmp": FunctionWriter._fcmp,
    "llvm.select": FunctionWriter._select,
    "llvm.alloca": FunctionWriter._alloca,
    "llvm.load": FunctionWriter._load,
    "llvm.store": FunctionWriter._store,
    "llvm.getelementptr": FunctionWriter._gep,
    "llvm.extractvalue": FunctionWriter._extractvalue,
    "llvm.insertvalue": FunctionWriter._insertvalue,
    "llvm.extractelement": FunctionWriter._extractelement,
    "llvm.insertelement": FunctionWriter._insertelement,
    "llvm.shufflevector": FunctionWriter._shufflevector,
    "llvm.freeze": FunctionWriter._freeze,
    "llvm.va_arg": FunctionWriter._va_arg,
    "llvm.atomicrmw": FunctionWriter._atomicrmw,
    "llvm.cmpxchg": FunctionWriter._cmpxchg,
    "llvm.fence": FunctionWriter._fence,
    "llvm.call": FunctionWriter._call,
    "llvm.inline_asm": FunctionWriter._inline_asm,
    "llvm.call_intrinsic": FunctionWriter._call_intrinsic,
    "llvm.intr.stacksave": FunctionWriter._stacksave,
    "llvm.intr.stackrestore": FunctionWriter._stackrestore,
    "llvm.intr.vector.reduce.fadd": FunctionWriter._reduce,
    "llvm.intr.vector.reduce.fmul": FunctionWriter._reduce,
    "llvm.return": FunctionWriter._return,
    "llvm.br": FunctionWriter._br,
    "llvm.cond_br": FunctionWriter._cond_br,
    "llvm.switch": FunctionWriter._switch,
    "llvm.unreachable": FunctionWriter._unreachable,
    **EH_WRITERS,
}


def _lane_alignment(t: Attribute) -> int | None:
    """The alignment of one element of a vector of ``t`` (its size, as x86-64 aligns
    scalars), None for other element types."""
    if isinstance(t, (Float16Type, Float32Type, Float64Type)):
        return {Float16Type: 2, Float32Type: 4, Float64Type: 8}[type(t)]
    if isinstance(t, IntegerType):
        nbytes = max(1, (t.width.data + 7) // 8)
        return min(8, 1 << (nbytes - 1).bit_length())
    if isinstance(t, llvm.LLVMPointerType):
        return 8
    return None
