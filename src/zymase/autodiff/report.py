"""Human-readable activity analysis (``zymase opt --print-activity``,
``zymase-opt -p print-activity-analysis``): for every differentiation request in a
module, each argument and op result of the differentiated function with its activity.

Structured ops are analysed as they are (no lowering to branches first, like the
``enzyme`` pass): after a region op's results come the values of its regions,
indented -- a header naming the region (``scf.for body``, ``scf.if then``,
...), its block arguments (induction variable, ``iter_args``, ``scf.while``
arguments) and the results of the ops inside.
"""

from __future__ import annotations

from zymase.analysis.scf import nested_blocks
from zymase.autodiff.common import Context, describe, function_name, prepare
from zymase.autodiff.driver import Driver
from zymase.autodiff.flavor import flavor_of
from zymase.ir import ModuleOp, location_of
from zymase.ir import enzyme as ez


def _names(region):
    """Value names as the MLIR printer gives them (``%t``, then ``%t_1``, ...; the
    results of ``%r:2 = ...`` are ``%r#0`` and ``%r#1``)."""
    names, k, seen = {}, 0, {}

    def fresh(hint: str | None) -> str:
        nonlocal k
        if not hint:
            k += 1
            return f"%{k - 1}"
        n = seen.get(hint, 0)
        seen[hint] = n + 1
        return f"%{hint}" if n == 0 else f"%{hint}_{n}"

    for b in nested_blocks(region):
        for a in b.args:
            names[a] = fresh(a.name_hint)
        for op in b.ops:
            hints = {r.name_hint for r in op.results}
            if len(op.results) > 1 and len(hints) == 1 and None not in hints:
                base = fresh(hints.pop())
                names.update((r, f"{base}#{i}") for i, r in enumerate(op.results))
            else:
                names.update((r, fresh(r.name_hint)) for r in op.results)
    return names


_REGION_NAMES = {
    "scf.for": ["body"],
    "scf.if": ["then", "else"],
    "scf.while": ["before", "after"],
}


def _arg_kinds(block) -> list[str]:
    """What each argument of ``block`` is, from the op owning its region."""
    parent = block.parent_op()  # None: the function body (a detached copy)
    n = len(block.args)
    if parent is None or hasattr(parent, "sym_name"):
        return ["block argument"] * n
    if parent.name == "scf.for":
        return ["induction variable"] + ["iter_arg"] * (n - 1)
    if parent.name == "scf.while":
        which = _REGION_NAMES["scf.while"][parent.regions.index(block.parent)]
        return [f"{which} argument"] * n
    return [f"{parent.name} argument"] * n


def _region_title(op, index: int) -> str:
    names = _REGION_NAMES.get(op.name)
    return f"{op.name} {names[index]}" if names and index < len(names) else f"{op.name} region {index}"


def _block_rows(block, names, activity, indent: int, lines: list[str]) -> None:
    pad = "  " * indent

    def row(v, what: str) -> None:
        state = "active" if activity.is_active(v) else "const"
        owner = v.owner
        loc = (location_of(owner) or "") if hasattr(owner, "location") else ""
        lines.append(f"{pad}{names[v]:<12} {state:<7} {what}{'  ' + loc if loc else ''}")

    for v, kind in zip(block.args, _arg_kinds(block)):
        row(v, kind)
    for o in block.ops:
        for r in o.results:
            row(r, describe(o) + (" result" if o.regions else ""))
        for i, region in enumerate(o.regions):
            for b in region.blocks:
                lines.append(f"{pad}  {_region_title(o, i)}:")
                _block_rows(b, names, activity, indent + 2, lines)


def activity_report(module: ModuleOp) -> str:
    driver = Driver(module)
    lines: list[str] = []
    for op in module.walk():
        if not isinstance(op, (ez.AutoDiffOp, ez.FwdDiffOp)):
            continue
        fop = driver.function(op.fn.root_reference.data)
        flavor = flavor_of(fop)
        mode = "reverse" if isinstance(op, ez.AutoDiffOp) else "forward"
        arg_acts = op.arg_activities
        ret_acts = op.ret_activities
        if mode == "forward":
            from zymase.autodiff.forward import _as_active

            arg_acts = [_as_active(a) for a in arg_acts]
            ret_acts = [_as_active(a) for a in ret_acts]
        p = prepare(Context(module, flavor, driver), fop, arg_acts, ret_acts)
        names = _names(p.region)
        acts = ", ".join(a.value.removeprefix("enzyme_") for a in op.arg_activities)
        racts = ", ".join(a.value.removeprefix("enzyme_") for a in op.ret_activities) or "none"
        lines.append(f"@{function_name(fop)} ({mode} mode; arguments: {acts}; result: {racts})")
        for b in p.region.blocks:
            _block_rows(b, names, p.activity, 1, lines)
        lines.append("")
    if not lines:
        return "no __enzyme_autodiff/__enzyme_fwddiff or enzyme.autodiff/fwddiff requests found\n"
    return "\n".join(lines) + "\n"
