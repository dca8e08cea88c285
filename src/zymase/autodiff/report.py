"""Human-readable activity analysis (``zymase opt --print-activity``,
``zymase-opt -p print-activity-analysis``): for every differentiation request in a
module, each argument and op result of the differentiated function with its activity."""

from __future__ import annotations

from zymase.autodiff.common import Context, describe, function_name, prepare
from zymase.autodiff.driver import Driver
from zymase.autodiff.flavor import flavor_of
from zymase.ir import ModuleOp, location_of
from zymase.ir import enzyme as ez


def _names(region):
    names, k = {}, 0
    for b in region.blocks:
        for v in [*b.args, *(r for op in b.ops for r in op.results)]:
            hint = v.name_hint
            names[v] = f"%{hint}" if hint else f"%{k}"
            k += 0 if hint else 1
    return names


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
            rows = [(v, "block argument") for v in b.args]
            rows += [(r, describe(o)) for o in b.ops for r in o.results]
            for v, what in rows:
                state = "active" if p.activity.is_active(v) else "const"
                loc = ""
                owner = v.owner
                if hasattr(owner, "location"):
                    loc = location_of(owner) or ""
                lines.append(f"  {names[v]:<12} {state:<7} {what}{'  ' + loc if loc else ''}")
        lines.append("")
    if not lines:
        return "no __enzyme_autodiff/__enzyme_fwddiff or enzyme.autodiff/fwddiff requests found\n"
    return "\n".join(lines) + "\n"
