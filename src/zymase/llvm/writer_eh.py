"""LLVM IR text for the exception-handling ops of :mod:`zymase.ir.llvm_eh`
(``invoke``, ``landingpad``, ``resume``), kept out of :mod:`zymase.llvm.writer`, which
registers them: each function takes the writer's per-function state (``res``, ``typed``,
``val``, ``dest``, ``call_site``, ``m.type``) and the op."""

from __future__ import annotations

from collections.abc import Callable

from zymase.ir import llvm


def write_invoke(fw, op) -> str:
    prefix = f"{fw.res(op)} = " if op.results else ""
    site = fw.call_site(op, list(op.callee_operands))
    return f"{prefix}invoke{site}\n          to label {fw.dest(op, 0)} unwind label {fw.dest(op, 1)}"


def write_landingpad(fw, op) -> str:
    words = [f"{fw.res(op)} = landingpad {fw.m.type(op.results[0].type)}"]
    if "cleanup" in op.properties:
        words.append("cleanup")
    for clause in op.clauses:
        kind = "filter" if isinstance(clause.type, llvm.LLVMArrayType) else "catch"
        words.append(f"{kind} {fw.typed(clause)}")
    return "\n          ".join(words)


def write_resume(fw, op) -> str:
    return f"resume {fw.typed(op.operands[0])}"


EH_WRITERS: dict[str, Callable] = {
    "llvm.invoke": write_invoke,
    "llvm.landingpad": write_landingpad,
    "llvm.resume": write_resume,
}
