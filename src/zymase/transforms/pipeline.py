"""Named passes for ``zymase-opt`` (``-p enzyme,canonicalize,...``)."""

from __future__ import annotations

from collections.abc import Callable

from zymase.errors import ZymaseError
from zymase.ir import ModuleOp, make_context, parse_mlir, print_mlir


def _enzyme(module: ModuleOp, *, structured: bool = True) -> None:
    from zymase.transforms.enzyme_pass import run_enzyme_pass
    from zymase.transforms.lower_structured import prepare_for_differentiation

    # linalg -> scf; scf stays for the region rules unless ``structured`` is off
    prepare_for_differentiation(module, structured=structured)
    run_enzyme_pass(module)


def _enzyme_cfg(module: ModuleOp) -> None:
    """The enzyme pass after lowering scf to cf (the CFG path, issue 5's other level)."""
    _enzyme(module, structured=False)


def _xdsl_pass(name: str) -> Callable[[ModuleOp], None]:
    def run(module: ModuleOp) -> None:
        from zymase.ir import xdsl_pass

        xdsl_pass(name).apply(make_context(), module)

    return run


def _cleanup(module: ModuleOp) -> None:
    from zymase.transforms.enzyme_cleanup import remove_unnecessary_enzyme_ops

    remove_unnecessary_enzyme_ops(module)


def _activity_opt(module: ModuleOp) -> None:
    from zymase.transforms.activity_opt import run_activity_opt

    run_activity_opt(module)


def _lower(module: ModuleOp) -> None:
    from zymase.transforms.lower_to_llvm import lower_to_llvm

    lower_to_llvm(module)


def _stablehlo_simplify(module: ModuleOp) -> None:
    from zymase.transforms.hlo_rewrites import simplify

    simplify(module)


def _print_activity(module: ModuleOp) -> None:
    from zymase.autodiff.report import activity_report
    from zymase.transforms.lower_structured import prepare_for_differentiation
    import sys

    # Analyze what the enzyme pass would differentiate -- scf regions as they are,
    # linalg as loops -- on a copy: an analysis leaves the module as it is.
    copy = module.clone()
    prepare_for_differentiation(copy, structured=True)
    sys.stderr.write(activity_report(copy))


def _enzyme_wrap(module: ModuleOp, options: str) -> None:
    from zymase.transforms.enzyme_wrap import enzyme_wrap, parse_options

    enzyme_wrap(module, parse_options(options))
    _enzyme(module)


#: passes that take options: ``name{key=value ...}``
PASSES_WITH_OPTIONS: dict[str, Callable[[ModuleOp, str], None]] = {
    "enzyme-wrap": _enzyme_wrap,
}


def split_pipeline(text: str) -> list[str]:
    """``a,b{x=1 y=p,q},c`` -> ``["a", "b{x=1 y=p,q}", "c"]``: commas inside braces
    belong to the options."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        current += ch
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


PASSES: dict[str, Callable[[ModuleOp], None]] = {
    "enzyme": _enzyme,
    "enzyme-cfg": _enzyme_cfg,
    "enzyme-activity-opt": _activity_opt,
    "remove-unnecessary-enzyme-ops": _cleanup,
    "canonicalize": _xdsl_pass("canonicalize"),
    "cse": _xdsl_pass("cse"),
    "dce": _xdsl_pass("dce"),
    "lower-to-llvm": _lower,
    "print-activity-analysis": _print_activity,
    "stablehlo-simplify": _stablehlo_simplify,
}


def run_passes(text: str, filename: str, names: list[str]) -> str:
    module = parse_mlir(text, filename)
    _verify(module, filename, "input")
    for n in names:
        name, brace, options = n.partition("{")
        if brace:
            if name not in PASSES_WITH_OPTIONS or not options.endswith("}"):
                raise ZymaseError(f"unknown pass '{n}'", hint="passes with options: " + ", ".join(PASSES_WITH_OPTIONS))
            PASSES_WITH_OPTIONS[name](module, options[:-1])
            continue
        if n in PASSES_WITH_OPTIONS:
            PASSES_WITH_OPTIONS[n](module, "")
            continue
        if n not in PASSES:
            raise ZymaseError(f"unknown pass '{n}'", hint="available: " + ", ".join([*PASSES, *PASSES_WITH_OPTIONS]))
        PASSES[n](module)
    _verify(module, filename, "output")
    return print_mlir(module)


def _verify(module: ModuleOp, filename: str, what: str) -> None:
    from zymase.ir import VerifyException

    try:
        module.verify()
    except VerifyException as exc:
        msg = str(exc).strip().splitlines()[0]
        if what == "input":
            raise ZymaseError(f"invalid MLIR: {msg}", location=filename, hint="fix the input module") from None
        raise
