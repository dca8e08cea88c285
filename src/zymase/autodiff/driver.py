"""Generates derivative functions on demand, once per (function, mode, activities).

The driver owns naming (``diffe<name>``, ``fwddiffe<name>``, with a numeric suffix
when one function is differentiated with several activity patterns) and makes
recursion work: a derivative function is registered before its body is generated,
so a recursive call finds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from zymase.autodiff.annotated_calls import inactive_global_names
from zymase.autodiff.common import Context, derivative_follows, fwd_signature, rev_signature
from zymase.autodiff.custom import CustomRules, custom_derivative, custom_gradient, custom_splitderivative
from zymase.autodiff.flavor import flavor_of
from zymase.autodiff.forward import ForwardGenerator
from zymase.autodiff.reverse import ReverseGenerator
from zymase.autodiff.structured import StructuredReverse, is_structured
from zymase.errors import VectorModeRefused, ZymaseError
from zymase.autodiff.names import SHADOW_GLOBAL_PREFIX
from zymase.ir import ArrayAttr, DictionaryAttr, ModuleOp, Operation, UnitAttr, llvm
from zymase.ir.enzyme import Activity
from zymase.transforms import numba_parfor
from zymase.transforms.openmp import is_outlined_region, mark_derivative

#: the names of Laplacian-mode derivatives begin with this (``fwdlaplace65f``)
LAPLACE_PREFIX = "fwdlaplace"


class Driver:
    def __init__(self, module: ModuleOp):
        self.module = module
        self.symbols: dict[str, Operation] = {}
        #: the shadow globals derivatives made, by name (autodiff/memory._shadow_global),
        #: which transforms/global_shadow_reset zeroes where the program asks for a
        #: derivative: those of earlier marker rounds (another Driver) too
        self.shadow_globals: dict[str, Operation] = {}
        for op in module.body.block.ops:
            name = getattr(op, "sym_name", None)
            if name is not None:
                self.symbols[name.data] = op
                if isinstance(op, llvm.GlobalOp) and name.data.startswith(SHADOW_GLOBAL_PREFIX):
                    self.shadow_globals[name.data] = op
        #: the shadow globals this driver made, by primal global (another round's are
        #: primal memory here: autodiff/memory.ShadowCode._shadow_global)
        self.own_shadow_globals: dict[str, str] = {}
        self.done: dict[tuple, str] = {}

    def lookup_function(self, name: str) -> Operation | None:
        return self.symbols.get(name)

    @cached_property
    def inactive_globals(self) -> frozenset[str]:
        """The globals marked inactive, read once per module: ``prepare`` needs them for
        every function it differentiates, and a scan of the module each time made AD
        quadratic in the number of functions (AD adds no marked globals)."""
        return inactive_global_names(self.module)

    @cached_property
    def has_tbaa(self) -> bool:
        """Whether the module's accesses carry TBAA, read once per module for the type
        analysis of every function that copies memory: a walk of the whole module per
        analysis was quadratic at -O0, where none does (AD copies tags, adds none)."""
        from zymase.analysis.type_fixpoint import module_has_tbaa

        return module_has_tbaa(self.module)

    def function(self, name: str, where: Operation | None = None) -> Operation:
        fop = self.symbols.get(name)
        if fop is None or not hasattr(fop, "body"):
            raise ZymaseError(f"no function named '{name}' to differentiate", construct=f"@{name}")
        if not fop.body.blocks:
            raise ZymaseError(
                f"cannot differentiate '{name}': it is only declared here, its body is not in this module",
                construct=f"@{name}",
                hint="define the function in the same translation unit",
            )
        return fop

    def _fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.symbols:
            k += 1
            name = f"{base}.{k}"
        return name

    def _generate(self, mode: str, fop: Operation, arg_acts: Sequence[Activity], ret_acts: Sequence[Activity],
                  entry: bool, width: int = 1) -> str:
        fname = fop.sym_name.data
        key = (mode, fname, tuple(arg_acts), tuple(ret_acts), entry, width)
        if key in self.done:
            return self.done[key]
        flavor = flavor_of(fop)
        inputs, outputs = flavor.signature(fop)
        if len(arg_acts) != len(inputs):
            raise ZymaseError(
                f"{len(arg_acts)} argument activities given for {len(inputs)} arguments",
                function=fname,
            )
        _refuse_width(fop, mode, width)
        sig = rev_signature if mode == "rev" else fwd_signature
        ins, outs = sig(inputs, outputs, arg_acts, ret_acts, width)
        # Enzyme's names: fwddiffe3f is f's forward derivative at width 3
        prefix = {"rev": "diffe", "fwd": "fwddiffe", "lap": LAPLACE_PREFIX}[mode]
        name = self._fresh(prefix + (str(width) if width > 1 else "") + fname)
        gop = flavor.make_function(name, ins, outs, fop)
        if is_outlined_region(fop):
            mark_derivative(self.module, fop, gop, "combined" if mode == "rev" else "forward")
        if numba_parfor.is_parfor(fop):
            if width > 1:
                raise numba_parfor.ParforSerial("a prange loop in vector mode", function=fname)
            follows = [derivative_follows(a, forward=mode != "rev") for a in arg_acts]
            numba_parfor.mark_derivative(fop, gop, "combined" if mode == "rev" else "forward", follows)
        _mark_unneeded_primal_memory(gop, fop, inputs, arg_acts, forward=mode != "rev", width=width)
        self.module.body.block.add_op(gop)
        self.symbols[name] = gop
        self.done[key] = name
        ctx = Context(self.module, flavor, self)
        if _custom_rule_for(fop, mode):
            # a registered derivative: a function calling the user's, not one of the body
            rules = CustomRules(self.module, flavor, fop)
            if mode == "rev":
                rules.reverse(gop, arg_acts, ret_acts)
            else:
                rules.forward(gop, arg_acts, ret_acts, ctx.writes_memory(fop))
            return name
        if mode == "rev":
            # structured control flow (scf regions) is reversed region by region
            gen_cls = StructuredReverse if is_structured(fop) else ReverseGenerator
        else:
            gen_cls = ForwardGenerator
        extra = {"width": width} if width > 1 else {}
        if mode == "lap":
            extra["laplacian"] = True
        gen = gen_cls(ctx, fop, arg_acts, ret_acts, name, **extra)
        gen.entry = entry
        gen.generate(gop)
        return name

    def split(self, fop: Operation, arg_acts, ret_acts, *, width: int = 1) -> tuple[str, str]:
        """Augmented forward + reverse functions of ``fop`` (Enzyme's split mode):
        ``augmented<name>(args, shadows) -> primal results`` pushes on the global tape,
        ``diffe<name>(args, shadows, seeds) -> derivatives`` pops it back. ``width`` > 1
        (vector mode): ``width`` shadows per dup argument in both, ``width`` seeds per
        active result and derivatives per active argument in the reverse; the
        augmented function runs the primal once and writes one tape for all lanes."""
        fname = fop.sym_name.data
        if numba_parfor.is_parfor(fop):
            # its tape would be the thread-local split-mode tape, which MCJIT cannot allocate
            raise numba_parfor.ParforSerial("a prange loop whose reverse sweep cannot recompute it",
                                               function=fname)
        key = ("split", fname, tuple(arg_acts), tuple(ret_acts), width)
        if key in self.done:
            return self.done[key]
        _refuse_width(fop, "rev", width)
        flavor = flavor_of(fop)
        inputs, outputs = flavor.signature(fop)
        aug_ins = []
        for t, a in zip(inputs, arg_acts):
            aug_ins.append(t)
            if a.is_dup:
                aug_ins += [t] * width
        rev_ins, rev_outs = rev_signature(inputs, outputs, arg_acts, ret_acts, width)
        lanes = str(width) if width > 1 else ""
        aug_name = self._fresh("augmented" + lanes + fname)
        aug = flavor.make_function(aug_name, aug_ins, outputs, fop)
        self.module.body.block.add_op(aug)
        self.symbols[aug_name] = aug
        rev_name = self._fresh("diffe" + lanes + fname)
        rev = flavor.make_function(rev_name, rev_ins, rev_outs, fop)
        self.module.body.block.add_op(rev)
        self.symbols[rev_name] = rev
        self.done[key] = (aug_name, rev_name)
        if is_outlined_region(fop):
            mark_derivative(self.module, fop, aug, "augmented")
            mark_derivative(self.module, fop, rev, "reverse")
        if _custom_rule_for(fop, "rev"):
            CustomRules(self.module, flavor, fop).split(aug, rev, arg_acts, ret_acts)
            return aug_name, rev_name
        ctx = Context(self.module, flavor, self)
        ReverseGenerator(ctx, fop, arg_acts, ret_acts, rev_name, width=width).generate_split(aug, rev)
        return aug_name, rev_name

    def fwdsplit(self, fop: Operation, arg_acts, ret_active: bool, *, width: int = 1) -> tuple[str, str]:
        """Split forward mode (autodiff/forward_split.py): ``augmented<name>(args,
        shadows) -> primal result`` pushes on the global tape what
        ``fwdsplit<name>(args, tangents, tape data) -> result tangent`` reads back.
        ``arg_acts`` as the markers give them (a float with a tangent is active).
        ``width`` > 1 (vector mode, Enzyme's ``__enzyme_fwdsplit`` with ``enzyme_width``):
        N shadows per dup argument in both (the augmented function does not read them),
        N tangents per active argument and result in the tangent function, which reads
        the one tape the augmented function wrote for all lanes."""
        from zymase.autodiff.forward_split import SplitForwardGenerator, registered_split_pair

        fname = fop.sym_name.data
        # the tangent function never uses a primal pointer: dupnoneed is dup here
        arg_acts = [Activity.DUP if a is Activity.DUPNONEED else a for a in arg_acts]
        key = ("fwdsplit", fname, tuple(arg_acts), ret_active, width)
        if key in self.done:
            return self.done[key]
        flavor = flavor_of(fop)
        registered = custom_splitderivative(fop) is not None
        if flavor.name != "llvm" or is_outlined_region(fop) or (not registered and (
                custom_gradient(fop) is not None or custom_derivative(fop) is not None)):
            what = ("a function with a registered gradient or forward derivative (not a split one)"
                    if flavor.name == "llvm" and not is_outlined_region(fop) else "an OpenMP region or MLIR function")
            raise ZymaseError(f"split forward mode (__enzyme_fwdsplit) of '{fname}', {what}, is not supported",
                              construct=f"@{fname}", function=fname,
                              hint=f"register its split derivative (__enzyme_register_splitderivative_{fname}), or "
                              "call it from a function of your own and differentiate that one")
        if registered and width > 1:
            # Enzyme calls a registered split derivative with one tangent per argument
            # whatever the width (EnzymeLogic CreateForwardDiff): no vector convention
            raise VectorModeRefused(
                f"vector mode (width {width}) cannot differentiate '{fname}', a function with a registered split "
                "derivative, by __enzyme_fwdsplit", construct=f"@{fname}", function=fname,
                hint="call __enzyme_fwdsplit at width 1 (one call per tangent, enzyme_nofree keeps the tape)")
        inputs, outputs = flavor.signature(fop)
        fwd_acts = [Activity.DUP if a.is_active else a for a in arg_acts]
        ret_acts = [Activity.DUPNONEED if ret_active else Activity.CONSTNONEED for _ in outputs]
        aug_ins = []
        for t, a in zip(inputs, arg_acts):
            aug_ins += [t] * (1 + width) if a.is_dup else [t]
        fs_ins, fs_outs = fwd_signature(inputs, outputs, fwd_acts, ret_acts, width)
        suffix = (str(width) if width > 1 else "") + fname
        aug_name = self._fresh("augmented" + suffix)
        aug = flavor.make_function(aug_name, aug_ins, outputs, fop)
        fs_name = self._fresh("fwdsplit" + suffix)
        fs = flavor.make_function(fs_name, [*fs_ins, llvm.LLVMPointerType()], fs_outs, fop)
        for name, op in ((aug_name, aug), (fs_name, fs)):
            self.module.body.block.add_op(op)
            self.symbols[name] = op
        self.done[key] = (aug_name, fs_name)
        ctx = Context(self.module, flavor, self)
        if registered:
            registered_split_pair(ctx, fop, aug, fs, fwd_acts, ret_active)
        else:
            SplitForwardGenerator(ctx, fop, fwd_acts, ret_acts, fs_name, width).generate_pair(aug, fs, arg_acts)
        return aug_name, fs_name

    def reverse(self, fop: Operation, arg_acts, ret_acts, *, entry: bool = False, width: int = 1) -> str:
        """The reverse-mode derivative of ``fop``. ``entry``: asked for by the program
        (a marker), not by the derivative of a caller: its results are the program's
        outputs (strong zeros rely on that, analysis.finiteness). ``width`` > 1: vector
        mode, that many cotangents in one sweep (reverse.ReverseGenerator)."""
        return self._generate("rev", fop, arg_acts, ret_acts, entry, width)

    def forward(self, fop: Operation, arg_acts, ret_acts, *, entry: bool = False, width: int = 1) -> str:
        """The forward-mode derivative of ``fop``; ``width`` > 1: vector mode, that many
        tangents per active value (forward.ForwardGenerator)."""
        return self._generate("fwd", fop, arg_acts, ret_acts, entry, width)

    def laplacian(self, fop: Operation, arg_acts, ret_acts, *, entry: bool = False, width: int = 2) -> str:
        """Laplacian mode (autodiff/laplacian.py): forward mode at ``width`` lanes, the
        last of which carries the summed second-order term of the others' directions.
        The signature is vector forward mode's at that width."""
        if width < 2:
            raise ZymaseError(f"Laplacian mode needs at least one direction and the Laplacian lane (width {width})",
                              function=fop.sym_name.data, hint="use width N + 1 for N directions")
        return self._generate("lap", fop, arg_acts, ret_acts, entry, width)


def _refuse_width(fop: Operation, mode: str, width: int) -> None:
    """Vector mode does not reach registered derivatives yet."""
    if width > 1 and _custom_rule_for(fop, mode):
        fname = fop.sym_name.data
        what = "a function with a registered derivative"
        raise VectorModeRefused(
            f"vector mode (width {width}) cannot differentiate '{fname}', {what}",
            construct=f"@{fname}", function=fname,
            hint="differentiate it at width 1 (one call per tangent or cotangent)",
        )


def _custom_rule_for(fop: Operation, mode: str) -> bool:
    """Whether the user registered the derivative of ``fop`` for ``mode`` (autodiff/custom.py)."""
    return (custom_gradient(fop) if mode == "rev" else custom_derivative(fop)) is not None


def _mark_unneeded_primal_memory(gop: Operation, fop: Operation, inputs, arg_acts: Sequence[Activity], *,
                                 forward: bool, width: int = 1) -> None:
    """A dupnoneed pointer argument says the caller will not read the primal memory
    after the call (an output buffer only the derivative is wanted of): its parameter in
    the derivative function gets LLVM's ``dead_on_return``, so dead-store elimination may
    drop the stores into it that nothing in the derivative reads again, and the
    computations that only fed them (the normalized vector of a normalization whose
    gradient alone is asked for). LLVM drops such stores only into memory no other
    pointer reaches: the parameter keeps the primal's ``noalias`` (``restrict``), which
    holds in the derivative too, as Enzyme's contract keeps shadows apart from primals.
    Shadow parameters, which carry the result, keep their stores."""
    if not isinstance(gop, llvm.FuncOp):
        return
    primal_attrs = fop.properties.get("arg_attrs")
    attrs = []
    for i, (t, a) in enumerate(zip(inputs, arg_acts)):
        marks = {}
        if a is Activity.DUPNONEED and isinstance(t, llvm.LLVMPointerType):
            marks["llvm.dead_on_return"] = UnitAttr()
            if isinstance(primal_attrs, ArrayAttr) and "llvm.noalias" in primal_attrs.data[i].data:
                marks["llvm.noalias"] = UnitAttr()
        attrs.append(DictionaryAttr(marks))
        if derivative_follows(a, forward=forward):
            attrs += [DictionaryAttr({}) for _ in range(width)]  # a shadow per lane
    if any(d.data for d in attrs):
        attrs += [DictionaryAttr({}) for _ in range(len(gop.function_type.inputs.data) - len(attrs))]
        gop.properties["arg_attrs"] = ArrayAttr(attrs)
