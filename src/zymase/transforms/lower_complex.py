"""The ``complex`` dialect as pairs of floats, before AD.

Every ``complex<T>`` value becomes two ``T`` values (real, imaginary part), and every
complex op the float arithmetic it means: ``create``/``re``/``im``/``constant``,
``add``/``sub``/``mul``/``div``/``neg``/``conj``, ``abs`` (``sqrt(a^2 + b^2)``),
``exp`` (``e^a (cos b, sin b)``) and ``log`` (``(log|z|, atan2(b, a))``). A function
taking or returning a complex value takes or returns its two parts in its place
(re first); calls, returns and the ``enzyme.autodiff``/``enzyme.fwddiff`` requests
are rewritten to match, a complex argument's activity applying to both its parts
(a dup complex argument ``x, dx`` becomes ``x.re, dx.re, x.im, dx.im``).

**The derivative convention** is therefore the one of a pair of floats, which is
Enzyme-MLIR's at the boundary of a derivative function: the gradient of a real
loss ``L`` returned for a complex argument ``z = a + ib`` is ``dL/da + i dL/db``,
and the seed of a complex result ``w`` means ``L = Re(conj(seed) w)``. For a
holomorphic ``f`` the reverse derivative is ``seed * conj(f'(z))`` and the forward
one ``f'(z) * dz``. (Enzyme-MLIR's op rules work with the conjugate, ``2 dL/dz``,
the Wirtinger convention for which ``mul``'s adjoint is ``dw * y``, and conjugate
the seeds and gradients at the function boundary: ``csquare`` returns ``2 dr
conj(x)``; zymase never materializes the conjugate form.)

``scf.for`` iter_args and ``scf.for``/``scf.if`` results of complex type are split
the same way. Complex values in other region ops, cf block arguments or memory are
refused by name, as are the complex ops not listed above.
"""

from __future__ import annotations

from collections.abc import Sequence

from zymase.errors import ZymaseError
from zymase.ir import (
    Attribute,
    Block,
    FloatAttr,
    FunctionType,
    ModuleOp,
    Operation,
    Region,
    SSAValue,
    arith,
    enzyme,
    func,
    location_of,
    math,
    scf,
)
from zymase.ir import complex as cx

__all__ = ["lower_complex", "split_types"]


def _is_complex(t: Attribute) -> bool:
    return isinstance(t, cx.ComplexType)


def split_types(types: Sequence[Attribute]) -> list[Attribute]:
    """Each ``complex<T>`` replaced by ``T, T``."""
    out: list[Attribute] = []
    for t in types:
        out += [t.element_type, t.element_type] if _is_complex(t) else [t]  # type: ignore[attr-defined]
    return out


def lower_complex(module: ModuleOp) -> bool:
    """Rewrite the module in place; False (nothing done) when no value is complex."""
    if not any(_is_complex(t) for op in module.walk() for t in (*op.result_types, *op.operand_types)) and not any(
        isinstance(op, func.FuncOp) and any(_is_complex(t) for t in (*op.function_type.inputs.data,
                                                                      *op.function_type.outputs.data))
        for op in module.body.block.ops
    ):
        return False
    functions = [f for f in module.body.block.ops if isinstance(f, func.FuncOp)]
    # the signatures before any is split: requests name their callee's original one
    original = {f.sym_name.data: (list(f.function_type.inputs.data), list(f.function_type.outputs.data))
                for f in functions}
    for fop in functions:
        _Function(fop, original).run()
    return True


class _Function:
    def __init__(self, fop: func.FuncOp, original: dict):
        self.fop = fop
        self.original = original
        self.dead_args: list = []
        self.dead_ops: list[Operation] = []
        self.name = fop.sym_name.data
        self.parts: dict[SSAValue, tuple[SSAValue, SSAValue]] = {}

    # ------------------------------------------------------------------ driver
    def run(self) -> None:
        fop = self.fop
        ins, outs = list(fop.function_type.inputs.data), list(fop.function_type.outputs.data)
        if any(map(_is_complex, (*ins, *outs))):
            fop.function_type = FunctionType.from_lists(split_types(ins), split_types(outs))
            if fop.arg_attrs is not None or fop.res_attrs is not None:
                fop.arg_attrs = fop.res_attrs = None
        if fop.is_declaration:
            return
        for block in fop.body.blocks:
            self._split_block_args(block, is_entry=block is fop.body.blocks[0])
        for op in list(fop.body.walk()):
            self._lower(op)
        # replaced ops go last to first: a complex result is used until its users go
        for op in reversed(self.dead_ops):
            op.parent_block().erase_op(op)
        for block, arg in self.dead_args:
            block.erase_arg(arg)

    def _split_block_args(self, block: Block, *, is_entry: bool) -> None:
        for arg in list(block.args):
            if not _is_complex(arg.type):
                continue
            if not is_entry:
                raise self._error(None, "a complex block argument is not supported",
                                  "carry complex values through scf.for/scf.if, not cf block arguments")
            t = arg.type.element_type  # type: ignore[attr-defined]
            k = arg.index
            re = block.insert_arg(t, k)
            im = block.insert_arg(t, k + 1)
            if arg.name_hint:
                re.name_hint, im.name_hint = f"{arg.name_hint}_re", f"{arg.name_hint}_im"
            self.parts[arg] = (re, im)
            self.dead_args.append((block, arg))  # erased once its users are rewritten

    def _pair(self, op: Operation, v: SSAValue) -> tuple[SSAValue, SSAValue]:
        if v not in self.parts:
            raise self._error(op, f"complex value {v.name_hint or ''} does not come from a supported op",
                              "complex values must be made by complex ops, arguments or calls")
        return self.parts[v]

    # ------------------------------------------------------------------ ops
    def _lower(self, op: Operation) -> None:
        touches = any(map(_is_complex, (*op.operand_types, *op.result_types)))
        if isinstance(op, func.FuncOp) or (not touches and op.dialect_name() != "complex"):
            return
        at = _Emit(op, self.dead_ops)
        if isinstance(op, func.ReturnOp):
            at.replace_with(func.ReturnOp(*self._split_operands(op)))
        elif isinstance(op, func.CallOp):
            new = func.CallOp(op.callee, self._split_operands(op), split_types(op.result_types))
            at.insert(new)
            self._bind_results(op, list(new.results))
            at.erase()
        elif isinstance(op, (enzyme.AutoDiffOp, enzyme.FwdDiffOp)):
            self._lower_request(op, at)
        elif isinstance(op, scf.YieldOp):
            at.replace_with(scf.YieldOp(*self._split_operands(op)))
        elif isinstance(op, scf.ForOp):
            self._split_block_args(op.body.block, is_entry=True)
            body = Region()
            op.body.move_blocks(body)
            inits = []
            for v in op.iter_args:
                inits += list(self._pair(op, v)) if _is_complex(v.type) else [v]
            new = scf.ForOp(op.lb, op.ub, op.step, inits, body)
            at.insert(new)
            self._bind_results(op, list(new.results))
            at.erase()
        elif isinstance(op, scf.IfOp):
            then, other = Region(), Region()
            op.true_region.move_blocks(then)
            op.false_region.move_blocks(other)
            new = scf.IfOp(op.cond, split_types(op.result_types), then, other if other.blocks else None)
            at.insert(new)
            self._bind_results(op, list(new.results))
            at.erase()
        elif op.dialect_name() == "complex":
            self._lower_complex_op(op, at)
        else:
            raise self._error(op, f"'{op.name}' on complex values is not supported",
                              "complex values may be used by complex ops, func.call and func.return only; "
                              "pass their parts (complex.re / complex.im) through other ops")

    def _split_operands(self, op: Operation) -> list[SSAValue]:
        out: list[SSAValue] = []
        for v in op.operands:
            out += list(self._pair(op, v)) if _is_complex(v.type) else [v]
        return out

    def _bind_results(self, op: Operation, new: list[SSAValue]) -> None:
        it = iter(new)
        for r in op.results:
            if _is_complex(r.type):
                self.parts[r] = (next(it), next(it))
            else:
                r.replace_all_uses_with(next(it))

    def _lower_request(self, op, at: "_Emit") -> None:
        """Expand a derivative request over the parts of complex arguments/results."""
        callee = op.fn.root_reference.data
        if callee not in self.original:
            return  # the enzyme pass names the missing function
        ins, outs = self.original[callee]
        acts, rets = op.arg_activities, op.ret_activities
        if len(acts) != len(ins) or len(rets) != len(outs):
            return  # the enzyme pass reports the count mismatch
        operands = iter(op.operands)
        new_operands: list[SSAValue] = []
        new_acts = []
        for t, a in zip(ins, acts):
            primal = next(operands)
            shadow = next(operands) if a.is_dup else None
            if _is_complex(t):
                pr, sh = self._pair(op, primal), (self._pair(op, shadow) if shadow is not None else None)
                for k in range(2):
                    new_operands.append(pr[k])
                    if sh is not None:
                        new_operands.append(sh[k])
                    new_acts.append(a)
            else:
                new_operands += [primal] + ([shadow] if shadow is not None else [])
                new_acts.append(a)
        new_rets = []
        for t, a in zip(outs, rets):
            new_rets += [a, a] if _is_complex(t) else [a]
        rest = list(operands)  # seeds (reverse): one per active result, complex ones split
        for v in rest:
            new_operands += list(self._pair(op, v)) if _is_complex(v.type) else [v]
        if op.lanes != 1:
            raise self._error(op, "vector mode (width) with complex arguments or results is not supported",
                              "differentiate with width 1, once per direction")
        new = type(op)(op.fn, new_operands, split_types(op.result_types), new_acts, new_rets)
        at.insert(new)
        flat = list(new.results)
        if isinstance(op, enzyme.FwdDiffOp):
            flat = self._forward_results_grouped(outs, rets, flat)
        self._bind_results(op, flat)
        at.erase()

    @staticmethod
    def _forward_results_grouped(outs, rets, flat: list[SSAValue]) -> list[SSAValue]:
        """A forward request's results per function result are its primal then its
        tangent; a split complex result gives ``p.re, t.re, p.im, t.im``, reordered
        here to ``p.re, p.im, t.re, t.im`` (the parts of each complex value together)."""
        out: list[SSAValue] = []
        it = iter(flat)
        for t, a in zip(outs, rets):
            count = int(a.needs_primal) + int(a.is_dup)
            if not _is_complex(t):
                out += [next(it) for _ in range(count)]
                continue
            re_parts = [next(it) for _ in range(count)]
            im_parts = [next(it) for _ in range(count)]
            for re, im in zip(re_parts, im_parts):
                out += [re, im]
        return out

    def _lower_complex_op(self, op: Operation, at: "_Emit") -> None:
        if isinstance(op, cx.CreateOp):
            self.parts[op.complex] = (op.real, op.imaginary)
            at.erase()
            return
        if isinstance(op, cx.ConstantOp):
            t = op.complex.type.element_type
            re, im = (at.v(arith.ConstantOp(FloatAttr(a.value.data, t), t)) for a in op.value.data)
            self.parts[op.complex] = (re, im)
            at.erase()
            return
        if isinstance(op, (cx.ReOp, cx.ImOp, cx.AbsOp)):
            a, b = self._pair(op, op.complex)
            if isinstance(op, cx.ReOp):
                value = a
            elif isinstance(op, cx.ImOp):
                value = b
            else:
                value = at.v(math.SqrtOp(at.v(arith.AddfOp(at.v(arith.MulfOp(a, a)), at.v(arith.MulfOp(b, b))))))
            op.result.replace_all_uses_with(value)
            at.erase()
            return
        if isinstance(op, cx.ComplexBinaryOp) and type(op) in _BINARY:
            self.parts[op.result] = _BINARY[type(op)](at, self._pair(op, op.lhs), self._pair(op, op.rhs))
            at.erase()
            return
        if type(op) in _UNARY:
            self.parts[op.result] = _UNARY[type(op)](at, self._pair(op, op.complex))
            at.erase()
            return
        raise self._error(op, f"'{op.name}' is not supported",
                          "supported: complex.create/re/im/constant/add/sub/mul/div/neg/conj/abs/exp/log; "
                          "write others with complex.re/im and math ops")

    def _error(self, op: Operation | None, message: str, hint: str) -> ZymaseError:
        return ZymaseError(message, construct=op.name if op is not None else "complex",
                           function=self.name, location=location_of(op) if op is not None else None, hint=hint)


class _Emit:
    """Inserts ops before ``anchor``; ``erase()`` queues it for removal."""

    def __init__(self, anchor: Operation, dead: list[Operation]):
        self.anchor = anchor
        self.dead = dead

    def v(self, op: Operation) -> SSAValue:
        self.insert(op)
        return op.results[0]

    def insert(self, op: Operation) -> None:
        self.anchor.parent_block().insert_op_before(op, self.anchor)

    def replace_with(self, op: Operation) -> None:
        self.insert(op)
        self.erase()

    def erase(self) -> None:
        self.dead.append(self.anchor)


def _add(at, x, y):
    return at.v(arith.AddfOp(x[0], y[0])), at.v(arith.AddfOp(x[1], y[1]))


def _sub(at, x, y):
    return at.v(arith.SubfOp(x[0], y[0])), at.v(arith.SubfOp(x[1], y[1]))


def _mul(at, x, y):
    (a, b), (c, d) = x, y
    re = at.v(arith.SubfOp(at.v(arith.MulfOp(a, c)), at.v(arith.MulfOp(b, d))))
    im = at.v(arith.AddfOp(at.v(arith.MulfOp(a, d)), at.v(arith.MulfOp(b, c))))
    return re, im


def _div(at, x, y):
    (a, b), (c, d) = x, y
    den = at.v(arith.AddfOp(at.v(arith.MulfOp(c, c)), at.v(arith.MulfOp(d, d))))
    re = at.v(arith.AddfOp(at.v(arith.MulfOp(a, c)), at.v(arith.MulfOp(b, d))))
    im = at.v(arith.SubfOp(at.v(arith.MulfOp(b, c)), at.v(arith.MulfOp(a, d))))
    return at.v(arith.DivfOp(re, den)), at.v(arith.DivfOp(im, den))


def _neg(at, x):
    return at.v(arith.NegfOp(x[0])), at.v(arith.NegfOp(x[1]))


def _conj(at, x):
    return x[0], at.v(arith.NegfOp(x[1]))


def _exp(at, x):
    a, b = x
    r = at.v(math.ExpOp(a))
    return at.v(arith.MulfOp(r, at.v(math.CosOp(b)))), at.v(arith.MulfOp(r, at.v(math.SinOp(b))))


def _log(at, x):
    a, b = x
    modulus = at.v(math.SqrtOp(at.v(arith.AddfOp(at.v(arith.MulfOp(a, a)), at.v(arith.MulfOp(b, b))))))
    return at.v(math.LogOp(modulus)), at.v(math.Atan2Op(b, a))


_BINARY = {cx.AddOp: _add, cx.SubOp: _sub, cx.MulOp: _mul, cx.DivOp: _div}
_UNARY = {cx.NegOp: _neg, cx.ConjOp: _conj, cx.ExpOp: _exp, cx.LogOp: _log}
