"""autodiff/module_symbols.find_symbol answers as a scan of the module's top level would,
whatever happened to the module since its index was built, and keeps no module alive."""

from __future__ import annotations

import gc
import weakref

from zymase.autodiff.module_symbols import _index, find_symbol
from zymase.ir import ModuleOp, StringAttr, llvm


def _declaration(name: str) -> llvm.FuncOp:
    return llvm.FuncOp(name, llvm.LLVMFunctionType([], None), linkage=llvm.LinkageAttr("external"))


def _scan(module: ModuleOp, name: str):
    return next((op for op in module.body.block.ops
                 if getattr(op, "sym_name", None) is not None and op.sym_name.data == name), None)


def test_lookups_follow_ops_added_erased_and_renamed_behind_the_index():
    f, g = _declaration("f"), _declaration("g")
    module = ModuleOp([f, g])
    assert find_symbol(module, "f") is f and find_symbol(module, "g") is g
    assert find_symbol(module, "h") is None
    h = _declaration("h")
    module.body.block.add_op(h)  # added without the index
    assert find_symbol(module, "h") is h
    module.body.block.erase_op(g)  # erased
    assert find_symbol(module, "g") is None
    f.properties["sym_name"] = StringAttr("f2")  # renamed
    assert find_symbol(module, "f") is None and find_symbol(module, "f2") is f
    again = _declaration("g")  # the name taken again by another op
    module.body.block.add_op(again)
    assert find_symbol(module, "g") is again
    for name in ("f", "f2", "g", "h", "x"):
        assert find_symbol(module, name) is _scan(module, name), name


def test_the_index_keeps_no_module_alive():
    module = ModuleOp([_declaration("f"), _declaration("g")])
    assert find_symbol(module, "g") is not None
    body = weakref.ref(module.body.block)
    del module
    gc.collect()
    assert body() is None
    assert all(block is not None for block in _index.keys())
