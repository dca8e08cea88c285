"""``enzyme-wrap``: generate the derivative function of a named function.

``zymase-opt -p "enzyme-wrap{infn=f outfn=df argTys=enzyme_active,enzyme_const
retTys=enzyme_active mode=ReverseModeCombined}"`` (Enzyme-MLIR's pass and options)
adds ``func.func @df`` with the derivative signature of ``enzyme.autodiff`` (mode
``ReverseModeCombined``) or ``enzyme.fwddiff`` (``ForwardMode``) for those
activities, whose body is that request, and runs the enzyme pass, so ``@df`` calls
the generated derivative. As in Enzyme-MLIR's pass, the derivative returns the
primal result only in forward mode with ``enzyme_dup``: a reverse-mode wrapper
returns the gradients alone (``retTys=enzyme_active`` means a seed is taken), and
a forward one with ``enzyme_dupnoneed`` the tangent alone. An empty ``outfn``
replaces ``@f`` itself: the primal is kept under a private name
(``<f>_primal``) and ``@f`` becomes its derivative.
"""

from __future__ import annotations

from zymase.errors import ZymaseError
from zymase.ir import Block, FunctionType, ModuleOp, Region, StringAttr, func
from zymase.ir import enzyme as ez

__all__ = ["enzyme_wrap", "parse_options"]

_MODES = {"ForwardMode": ez.FwdDiffOp, "ReverseModeCombined": ez.AutoDiffOp}
#: Enzyme's older spelling of an active value
_ALIASES = {"enzyme_out": "enzyme_active"}


def parse_options(text: str) -> dict[str, str]:
    """``key=value key2=value2`` (values without spaces; ``outfn=`` may be empty)."""
    options: dict[str, str] = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if not sep:
            raise ZymaseError(f"enzyme-wrap option '{word}' is not key=value", construct="enzyme-wrap",
                              hint="e.g. enzyme-wrap{infn=f outfn=df argTys=enzyme_active retTys=enzyme_active "
                              "mode=ReverseModeCombined}")
        options[key] = value
    return options


def _activities(text: str, what: str) -> list[ez.Activity]:
    out = []
    for word in (w for w in text.split(",") if w):
        word = _ALIASES.get(word, word)
        try:
            out.append(ez.Activity(word))
        except ValueError:
            raise ZymaseError(f"unknown activity '{word}' in {what}", construct="enzyme-wrap",
                              hint="use " + ", ".join(a.value for a in ez.Activity)) from None
    return out


def enzyme_wrap(module: ModuleOp, options: dict[str, str]) -> None:
    unknown = set(options) - {"infn", "outfn", "argTys", "retTys", "mode"}
    if unknown:
        raise ZymaseError(f"unknown enzyme-wrap option '{sorted(unknown)[0]}'", construct="enzyme-wrap",
                          hint="the options are infn, outfn, argTys, retTys, mode")
    infn, outfn = options.get("infn", ""), options.get("outfn", "")
    mode = options.get("mode", "ReverseModeCombined")
    if mode not in _MODES:
        raise ZymaseError(f"enzyme-wrap mode '{mode}' is not supported", construct="enzyme-wrap", function=infn,
                          hint="use ForwardMode or ReverseModeCombined")
    symbols = {op.sym_name.data: op for op in module.body.block.ops if getattr(op, "sym_name", None) is not None}
    fop = symbols.get(infn)
    if not isinstance(fop, func.FuncOp) or fop.is_declaration:
        raise ZymaseError(f"no func.func definition named '{infn}'", construct="enzyme-wrap",
                          hint="infn= names the function to differentiate")
    ins, outs = list(fop.function_type.inputs.data), list(fop.function_type.outputs.data)
    arg_acts = _activities(options.get("argTys", ""), "argTys")
    ret_acts = _activities(options.get("retTys", ""), "retTys")
    if len(arg_acts) != len(ins) or len(ret_acts) != len(outs):
        raise ZymaseError(f"'{infn}' has {len(ins)} arguments and {len(outs)} results, but argTys gives "
                          f"{len(arg_acts)} and retTys {len(ret_acts)} activities", construct="enzyme-wrap",
                          function=infn, hint="give one activity per argument and per result, comma-separated")
    from zymase.autodiff.common import fwd_signature, rev_signature

    cls = _MODES[mode]
    # the wrapper returns a primal result only for a forward enzyme_dup (Enzyme-MLIR)
    noneed = {ez.Activity.ACTIVE: ez.Activity.ACTIVENONEED, ez.Activity.CONST: ez.Activity.CONSTNONEED}
    if cls is ez.AutoDiffOp:
        ret_acts = [noneed.get(a, a) for a in ret_acts]
    else:
        ret_acts = [ez.Activity.CONSTNONEED if a.is_const else a for a in ret_acts]
    signature = rev_signature if cls is ez.AutoDiffOp else fwd_signature
    d_ins, d_outs = signature(ins, outs, arg_acts, ret_acts)
    target = infn
    if not outfn:
        # the derivative takes the function's name; the primal keeps its body elsewhere
        outfn, k = infn, 0
        target = f"{infn}_primal"
        while target in symbols:
            k += 1
            target = f"{infn}_primal{k}"
        fop.sym_name = StringAttr(target)
        fop.sym_visibility = StringAttr("private")
    elif outfn in symbols:
        raise ZymaseError(f"outfn '{outfn}' is already defined", construct="enzyme-wrap", function=infn,
                          hint="choose another outfn=")
    block = Block(arg_types=d_ins)
    request = cls(target, list(block.args), d_outs, arg_acts, ret_acts)
    block.add_ops([request, func.ReturnOp(*request.results)])
    module.body.block.add_op(func.FuncOp(outfn, FunctionType.from_lists(d_ins, d_outs), Region([block])))
