"""Constants as LLVM IR literals, for the writer (:mod:`zymase.llvm.writer`): the
constant-like ops printed at every use, and global initializer regions folded into
one constant (insertvalue, GEP and cast chains of constants)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from zymase.ir import Attribute, IntegerType, Operation, SSAValue, builtin, llvm, llvm_ext
from zymase.llvm.writer_text import WriteError, float_literal, int_value, symbol_text

if TYPE_CHECKING:
    from zymase.llvm.writer import ModuleWriter


CONSTANT_OPS = frozenset(
    ["llvm.mlir.constant", "llvm.mlir.zero", "llvm.mlir.undef", "llvm.mlir.poison",
     "llvm.mlir.addressof"]
)


class ConstFolder:
    """Folds constant-like ops (and insertvalue/GEP/cast chains of them, for global
    initializer regions) into LLVM constant literals."""

    def __init__(self, writer: ModuleWriter):
        self.writer = writer

    def literal(self, value: SSAValue) -> str:
        op = value.owner if isinstance(value.owner, Operation) else None
        if op is None:
            raise WriteError("global initializer uses a non-constant value")
        name = op.name
        if name in CONSTANT_OPS:
            return constant_literal(self.writer, op)
        if name == "llvm.insertvalue":
            return self._aggregate(value)
        if name == "llvm.getelementptr":
            return self._gep(op)
        raise WriteError(f"cannot fold '{name}' into a global initializer")

    def _aggregate(self, value: SSAValue) -> str:
        """insertvalue chains on undef/zero -> ``{ T a, T b }`` / ``[T a, ...]``."""
        chain = []
        while value.owner.name == "llvm.insertvalue":
            chain.append(value.owner)
            value = value.owner.operands[0]
        base = value.owner
        ty = value.type
        members = self._members(ty)
        fill = "zeroinitializer" if base.name == "llvm.mlir.zero" else "undef"
        slots: dict[tuple[int, ...], str] = {}
        for op in reversed(chain):
            position = tuple(op.properties["position"].get_values())
            slots[position] = self.literal(op.operands[1])
        return self._render(ty, (), slots, fill, members)

    def _members(self, ty: Attribute) -> list[Attribute]:
        if isinstance(ty, llvm.LLVMArrayType):
            return [ty.type] * ty.size.data
        if isinstance(ty, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType)):
            return list(ty.types.data)
        raise WriteError(f"insertvalue into non-aggregate {ty}")

    def _render(self, ty, prefix, slots, fill, members) -> str:
        parts = []
        for index, member_ty in enumerate(members):
            key = prefix + (index,)
            if key in slots:
                text = slots[key]
            elif any(k[: len(key)] == key for k in slots):
                text = self._render(member_ty, key, slots, fill, self._members(member_ty))
            else:
                text = fill
            parts.append(f"{self.writer.type(member_ty)} {text}")
        if isinstance(ty, llvm.LLVMArrayType):
            return "[" + ", ".join(parts) + "]"
        body = "{ " + ", ".join(parts) + " }" if parts else "{}"
        return f"<{body}>" if isinstance(ty, llvm_ext.LLVMPackedStructType) else body

    def _gep(self, op: Operation) -> str:
        if op.operands[1:]:
            raise WriteError("getelementptr in a global initializer must have constant indices")
        base = self.literal(op.operands[0])
        elem = op.properties["elem_type"]
        indices = []
        ty = elem
        for position, index in enumerate(op.properties["rawConstantIndices"].get_values()):
            is_struct = position > 0 and isinstance(ty, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType))
            indices.append(f"{'i32' if is_struct else 'i64'} {index}")
            if position > 0:
                ty = index_into(ty, index)
        inbounds = " inbounds" if gep_is_inbounds(op) else ""
        return (f"getelementptr{inbounds} ({self.writer.type(elem)}, "
                f"{self.writer.type(op.operands[0].type)} {base}, {', '.join(indices)})")


def constant_literal(writer: ModuleWriter, op: Operation) -> str:
    """The literal text of a constant-like op's result."""
    name = op.name
    ty = op.results[0].type
    if name == "llvm.mlir.constant":
        return writer.attr_literal(op.properties["value"], ty)
    if name == "llvm.mlir.zero":
        if isinstance(ty, llvm.LLVMPointerType):
            return "null"
        if isinstance(ty, IntegerType):
            return "0"
        if isinstance(ty, (builtin.Float16Type, builtin.BFloat16Type, builtin.Float32Type,
                           builtin.Float64Type, builtin.Float80Type, builtin.Float128Type)):
            return float_literal(0.0, ty)
        return "zeroinitializer"
    if name == "llvm.mlir.undef":
        return "undef"
    if name == "llvm.mlir.poison":
        return "poison"
    if name == "llvm.mlir.addressof":
        return symbol_text("@", op.properties["global_name"].root_reference.data)
    raise WriteError(f"'{name}' is not a constant")


def index_into(ty: Attribute, index: int) -> Attribute:
    if isinstance(ty, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType)):
        return ty.types.data[index]
    if isinstance(ty, llvm.LLVMArrayType):
        return ty.type
    if isinstance(ty, builtin.VectorType):
        return ty.element_type
    raise WriteError(f"getelementptr cannot index into {ty}")


def gep_is_inbounds(op: Operation) -> bool:
    return "inbounds" in op.properties or bool(int_value(op.properties.get("noWrapFlags")) & 1)
