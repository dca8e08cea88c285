"""zymase.ir.walk.walk_ops gives the ops xDSL's ``Operation.walk()`` gives, in its order,
also when the caller changes the IR while walking (erasing the op it was given, inserting
after it, filling its regions); the module-wide passes of a ``zymase cc`` build walk
through it, not through xDSL's nested generators (issue 29)."""

from __future__ import annotations

from xdsl.ir.core import Operation as XOperation

from xdsl.dialects.test import Test
from xdsl.parser import Parser

from zymase.ir import Block, ModuleOp, Region, fast_ops, i64, llvm, make_context
from zymase.ir.walk import walk_ops

_NESTED = """
builtin.module {
  llvm.func @empty()
  llvm.func @f(%a : i64) -> i64 {
    %0 = llvm.add %a, %a : i64
    llvm.br ^bb1(%0 : i64)
  ^bb1(%1 : i64):
    %2 = "test.op"() ({
      %3 = llvm.mul %1, %1 : i64
      "test.op"() ({
      ^bb0:
        "test.op"() : () -> ()
      }, {
      }) : () -> ()
    }, {
    ^bb0:
    ^bb1:
      %4 = llvm.sub %1, %1 : i64
    }) : () -> i64
    llvm.return %2 : i64
  }
  llvm.func @g() {
    llvm.return
  }
}
"""


def _module() -> ModuleOp:
    """The module above; ``test.op`` (xDSL's test dialect) holds regions of any shape."""
    context = make_context()
    context.load_dialect(Test)
    return Parser(context, _NESTED).parse_module()


def test_same_ops_in_the_same_order() -> None:
    module = _module()
    assert [op for op in walk_ops(module)] == list(module.walk())
    for op in module.walk():  # from every op too (leaves, empty regions, nested ones)
        assert list(walk_ops(op)) == list(op.walk())


def _walk_changing(walker, module: ModuleOp) -> list[str]:
    """Walk while erasing every ``llvm.add``, inserting a constant after every ``llvm.mul``
    and giving every ``llvm.func`` declaration a body: what was seen."""
    seen = []
    for op in walker(module):
        seen.append(op.name)
        if isinstance(op, llvm.AddOp):
            op.results[0].replace_all_uses_with(op.operands[0])
            op.parent_block().erase_op(op)
        elif isinstance(op, llvm.MulOp):
            op.parent_block().insert_op_after(fast_ops.constant(fast_ops.int_attr(1), i64), op)
        elif isinstance(op, llvm.FuncOp) and not op.body.blocks:
            op.body.add_block(Block([llvm.UnreachableOp()]))
    return seen


def test_changes_while_walking_are_seen_as_xdsl_sees_them() -> None:
    ours, theirs = _module(), _module()
    assert _walk_changing(walk_ops, ours) == _walk_changing(lambda m: m.walk(), theirs)
    assert str(ours) == str(theirs)


def test_an_op_without_regions_and_a_region_without_blocks() -> None:
    op = fast_ops.constant(fast_ops.int_attr(1), i64)
    assert list(walk_ops(op)) == [op]
    empty = ModuleOp(Region())
    assert list(walk_ops(empty)) == list(empty.walk()) == [empty]


def test_a_build_walks_modules_without_xdsl_walk(tmp_path, monkeypatch) -> None:
    """The module-wide passes of a ``zymase cc`` build (markers, annotations, known and
    constant callees, the enzyme pass and its nested requests, the dead marker globals)
    go through walk_ops: xDSL's walk of a whole module is not called. On the base, each
    walked it with xDSL's generators, 8 times or more per build."""
    from zymase.cli import main

    src = tmp_path / "sq.c"
    src.write_text(
        "extern double __enzyme_autodiff(void *, ...);\n"
        "static double sq(double x) { return x * x; }\n"
        "double run(double x) { return __enzyme_autodiff((void *)sq, x); }\n")
    module_walks = []
    xdsl_walk = XOperation.walk

    def counting(self, *args, **kwargs):
        if isinstance(self, ModuleOp):
            module_walks.append(self)
        return xdsl_walk(self, *args, **kwargs)

    monkeypatch.setattr(XOperation, "walk", counting)
    assert main(["cc", "-O2", "-c", "--no-cache", str(src), "-o", str(tmp_path / "sq.o")]) == 0
    assert module_walks == []


def test_a_region_given_instead_of_an_op_is_named():
    # session 39: openmp.check_region handed walk_ops function bodies (regions); the walk
    # gave the region itself as an op and the caller failed on it with an internal error
    import pytest

    region = Region([Block()])
    with pytest.raises(TypeError, match="not Region"):
        next(walk_ops(region))
