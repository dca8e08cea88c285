"""Rules shared by several dialects that are not scalar expressions."""

from zymase.autodiff.registry import Rule


class SelectRule(Rule):
    """``select(c, a, b)``: the adjoint goes to the chosen operand."""

    def propagates(self, op, index):
        return index in (1, 2)

    def reverse(self, ctx, op, dys):
        dy = dys[0]
        if dy is None:
            return [None, None, None]
        E = ctx.E
        c = ctx.primal(op.operands[0])
        zero = E.zero(dy.type)
        a = E.select(c, dy, zero) if ctx.wants(op.operands[1]) else None
        b = E.select(c, zero, dy) if ctx.wants(op.operands[2]) else None
        return [None, a, b]

    def forward(self, ctx, op, tangents):
        _, ta, tb = tangents
        if ta is None and tb is None:
            return [None]
        E = ctx.E
        t = op.results[0].type
        c = ctx.primal(op.operands[0])
        return [E.select(c, ta if ta is not None else E.zero(t), tb if tb is not None else E.zero(t))]


SELECT = SelectRule()
