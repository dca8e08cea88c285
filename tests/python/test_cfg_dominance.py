"""analysis/cfg.CFG.dominates against the definition: ``a`` dominates ``b`` when ``a`` is
``b`` or on ``b``'s chain of immediate dominators (an unreachable block dominates only
itself). Since session 35 it answers from the dominator tree's pre-order numbers,
not by walking the chain per query."""

from __future__ import annotations

from zymase.analysis.cfg import CFG
from zymase.ir import ModuleOp, llvm as L
from zymase.llvm.reader import read_llvm_ir

# entry -> (loop: head <-> body) -> diamond (left | right) -> join -> exit; `dead` is
# unreachable and branches into the diamond's join; `nest` is a loop inside the loop
_IR = """
define double @f(double %x, i32 %n) {
entry:
  br label %head
head:
  %i = phi i32 [ 0, %entry ], [ %i1, %latch ]
  %c = icmp slt i32 %i, %n
  br i1 %c, label %nest, label %split
nest:
  %j = phi i32 [ 0, %head ], [ %j1, %nest ]
  %j1 = add i32 %j, 1
  %cj = icmp slt i32 %j1, %i
  br i1 %cj, label %nest, label %latch
latch:
  %i1 = add i32 %i, 1
  br label %head
split:
  %p = fcmp ogt double %x, 0.0
  br i1 %p, label %left, label %right
left:
  br label %join
right:
  br label %join
dead:
  br label %join
join:
  %r = phi double [ %x, %left ], [ 0.0, %right ], [ 1.0, %dead ]
  ret double %r
}
"""


def _by_chain(cfg: CFG, a, b) -> bool:
    x = b
    while x is not None:
        if x is a:
            return True
        x = cfg.idom.get(x)
    return False


def test_dominates_agrees_with_the_chain_of_immediate_dominators():
    module: ModuleOp = read_llvm_ir(_IR)
    fop = next(op for op in module.body.block.ops if isinstance(op, L.FuncOp) and op.body.blocks)
    cfg = CFG.build(fop.body)
    blocks = cfg.blocks
    assert len(blocks) == 9
    entry, head, nest, latch, split, left, right, dead, join = blocks
    assert dead not in cfg.reachable
    for a in blocks:
        for b in blocks:
            assert cfg.dominates(a, b) == _by_chain(cfg, a, b), (blocks.index(a), blocks.index(b))
    # a few by hand
    assert cfg.dominates(entry, join) and cfg.dominates(head, latch) and cfg.dominates(split, join)
    assert not cfg.dominates(left, join) and not cfg.dominates(nest, head) and not cfg.dominates(latch, split)
    assert cfg.dominates(dead, dead) and not cfg.dominates(dead, join) and not cfg.dominates(entry, dead)
    assert {h for h, _ in cfg.natural_loops()} == {head, nest}  # (found by the same query)


def test_dominance_of_a_cfg_with_edges_only_is_identity():
    module: ModuleOp = read_llvm_ir(_IR)
    fop = next(op for op in module.body.block.ops if isinstance(op, L.FuncOp) and op.body.blocks)
    cfg = CFG.edges_only(fop.body)
    for a in cfg.blocks:
        for b in cfg.blocks:
            assert cfg.dominates(a, b) == (a is b)
