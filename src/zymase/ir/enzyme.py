"""The ``enzyme`` dialect, spelled as in Enzyme-MLIR.

* ``enzyme.autodiff`` / ``enzyme.fwddiff``: differentiate the function ``fn`` with
  per-argument ``activity`` and per-result ``ret_activity``.
* ``enzyme.batch``: evaluate the function ``fn`` on ``batch_shape`` lanes at once.
* ``enzyme.init`` creates a gradient accumulator (``!enzyme.Gradient<T>``) or a
  LIFO cache (``!enzyme.Cache<T>``); ``enzyme.get``/``enzyme.set`` read and write
  accumulators, ``enzyme.push``/``enzyme.pop`` fill and drain caches.
* ``enzyme.init`` also creates an indexed cache (``!enzyme.IndexedCache<T>``), for
  values of loops whose trip counts are known before they run:
  ``enzyme.cache_reserve`` makes room for a number of slots (before the loop),
  ``enzyme.cache_store``/``enzyme.cache_load`` write and read slot ``i`` (derived
  from the iteration numbers). The storage lives until the function returns.

* ``enzyme.ignore_derivatives`` stops derivatives at a value;
  ``enzyme.autodiff_region`` / ``enzyme.fwddiff_region`` (body ended by
  ``enzyme.yield``) differentiate a region in place of a named function.

Reverse mode is first generated with these generic ops and later simplified
(push/pop of values still available become plain SSA uses) and lowered to memory.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from enum import Enum

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, FlatSymbolRefAttr, IntegerAttr, StringAttr, SymbolRefAttr, UnitAttr
from xdsl.ir import (
    Attribute,
    Dialect,
    ParametrizedAttribute,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator
from xdsl.utils.exceptions import VerifyException

from zymase.ir.fast_ops import init_op


class Activity(Enum):
    """Enzyme-MLIR's six activities (the enum spelling is the textual one)."""

    ACTIVE = "enzyme_active"
    DUP = "enzyme_dup"
    CONST = "enzyme_const"
    DUPNONEED = "enzyme_dupnoneed"
    ACTIVENONEED = "enzyme_activenoneed"
    CONSTNONEED = "enzyme_constnoneed"

    @property
    def needs_primal(self) -> bool:
        """Whether the primal value of a result with this activity is returned."""
        return self not in (Activity.DUPNONEED, Activity.ACTIVENONEED, Activity.CONSTNONEED)

    @property
    def is_active(self) -> bool:
        return self in (Activity.ACTIVE, Activity.ACTIVENONEED)

    @property
    def is_dup(self) -> bool:
        return self in (Activity.DUP, Activity.DUPNONEED)

    @property
    def is_const(self) -> bool:
        return self in (Activity.CONST, Activity.CONSTNONEED)


@irdl_attr_definition
class ActivityAttr(SpacedOpaqueSyntaxAttribute, ParametrizedAttribute):
    """``#enzyme<activity enzyme_active>`` (also read as ``#enzyme.activity<enzyme_active>``)."""

    name = "enzyme.activity"
    value: StringAttr

    def __init__(self, activity: Activity | str):
        if isinstance(activity, str):
            activity = Activity(activity)
        super().__init__(StringAttr(activity.value))

    @property
    def activity(self) -> Activity:
        return Activity(self.value.data)  # type: ignore[attr-defined]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        # ``#enzyme<activity enzyme_dup>``, or Enzyme-MLIR's newer spelling
        # ``#enzyme.activity<enzyme_dup>`` (then the parameter is in angle brackets)
        bracketed = parser.parse_optional_punctuation("<") is not None
        pos = parser.pos
        word = parser.parse_identifier()
        if bracketed:
            parser.parse_punctuation(">")
        try:
            Activity(word)
        except ValueError:
            parser.raise_error(
                f"unknown activity '{word}' (expected one of "
                + ", ".join(a.value for a in Activity)
                + ")",
                pos,
                parser.pos,
            )
        return (StringAttr(word),)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(self.value.data)  # type: ignore[attr-defined]


@irdl_attr_definition
class GradientType(ParametrizedAttribute, TypeAttribute):
    """``!enzyme.Gradient<T>``: a mutable adjoint accumulator of type T."""

    name = "enzyme.Gradient"
    elem: Attribute

    def __init__(self, elem: Attribute):
        super().__init__(elem)


@irdl_attr_definition
class CacheType(ParametrizedAttribute, TypeAttribute):
    """``!enzyme.Cache<T>``: a LIFO stack of T filled by the forward sweep."""

    name = "enzyme.Cache"
    elem: Attribute

    def __init__(self, elem: Attribute):
        super().__init__(elem)


@irdl_attr_definition
class IndexedCacheType(ParametrizedAttribute, TypeAttribute):
    """``!enzyme.IndexedCache<T>``: a growable array of T, written by the forward
    sweep of a loop at slots derived from its iteration numbers and read back at the
    same slots by the reverse sweep (no per-iteration bookkeeping, unlike the LIFO
    cache)."""

    name = "enzyme.IndexedCache"
    elem: Attribute

    def __init__(self, elem: Attribute):
        super().__init__(elem)


def _activities(attr: ArrayAttr) -> list[Activity]:
    return [a.activity for a in attr.data]  # type: ignore[attr-defined]


def _parse_options(parser: Parser) -> dict[str, Attribute]:
    """The options of a request written after its operands, in Enzyme-MLIR's newer
    spellings: a property dictionary ``<{activity = [...], ret_activity = [...]}>`` (its
    tests' input) or ``<activity = [...], ret_activity = [...]>`` (what its printer
    writes now); nothing when neither is there (the options are then in the attribute
    dictionary that follows, the older spelling, which zymase prints)."""
    if parser.parse_optional_punctuation("<") is None:
        return {}
    braced = parser.parse_optional_punctuation("{") is not None
    entries: list[tuple[str, Attribute]] = []
    if not (braced and parser.parse_optional_punctuation("}") is not None):
        entries = parser.parse_comma_separated_list(parser.Delimiter.NONE, lambda: _parse_entry(parser))
        if braced:
            parser.parse_punctuation("}")
    parser.parse_punctuation(">")
    names = [name for name, _ in entries]
    for name in names:
        if names.count(name) > 1:
            parser.raise_error(f"option '{name}' given twice")
    return dict(entries)


def _parse_entry(parser: Parser) -> tuple[str, Attribute]:
    name = parser.parse_optional_identifier()
    if name is None:
        name = parser.parse_str_literal("an option name (activity, ret_activity, width, ...)")
    parser.parse_punctuation("=")
    return name, parser.parse_attribute()


def _build(cls, parser: Parser, operands, regions, options: dict[str, Attribute]):
    """The op ``cls`` with ``options`` split into its properties and other attributes,
    its operands resolved against the trailing ``: (inputs) -> (outputs)`` type."""
    parser.parse_punctuation(":")
    pos = parser.pos
    signature = parser.parse_function_type()
    inputs = parser.resolve_operands(operands, signature.inputs.data, pos)
    declared = cls.get_irdl_definition().properties
    return cls.create(operands=list(inputs), result_types=list(signature.outputs.data), regions=regions,
                      properties={k: v for k, v in options.items() if k in declared},
                      attributes={k: v for k, v in options.items() if k not in declared})


class _NamedRequestSyntax:
    """Parse/print of the ops naming a function (``enzyme.autodiff``, ``fwddiff``,
    ``split_autodiff``, ``batch``): ``@f(%x, %dx) <options> {attr-dict} : (types) ->
    (types)``. Printed with the options in the attribute dictionary (Enzyme-MLIR reads
    that spelling too)."""

    @classmethod
    def parse(cls, parser: Parser) -> IRDLOperation:
        fn = parser.parse_attribute()
        if not isinstance(fn, SymbolRefAttr):
            parser.raise_error(f"expected the differentiated function as @name, got {fn}")
        operands = parser.parse_op_args_list()
        options = _parse_options(parser)
        options.update(parser.parse_optional_attr_dict())
        return _build(cls, parser, operands, [], {"fn": fn, **options})

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.fn)
        printer.print_string("(")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(")")
        printer.print_op_attributes({k: v for k, v in {**self.attributes, **self.properties}.items() if k != "fn"})
        printer.print_string(" : ")
        printer.print_function_type(self.inputs.types, self.outputs.types)


class _DiffOp(_NamedRequestSyntax, IRDLOperation):
    fn = prop_def(SymbolRefAttr)
    inputs = var_operand_def()
    outputs = var_result_def()
    activity = prop_def(ArrayAttr)
    ret_activity = prop_def(ArrayAttr)
    #: vector mode (Enzyme's ``width``): every derivative operand and result is
    #: repeated ``width`` times, one per lane; absent means 1
    width = opt_prop_def(IntegerAttr)
    #: zymase's Laplacian mode (forward only, autodiff/laplacian.py): the last of the
    #: ``width`` lanes carries the summed second-order term of the others' directions
    laplacian = opt_prop_def(UnitAttr)

    def __init__(
        self,
        fn: str | SymbolRefAttr,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        activity: Sequence[Activity],
        ret_activity: Sequence[Activity],
        width: int = 1,
        laplacian: bool = False,
    ):
        if isinstance(fn, str):
            fn = FlatSymbolRefAttr(fn)
        properties = {
            "fn": fn,
            "activity": ArrayAttr([_activity_attr(a) for a in activity]),
            "ret_activity": ArrayAttr([_activity_attr(a) for a in ret_activity]),
        }
        if width != 1:
            properties["width"] = IntegerAttr(width, 64)
        if laplacian:
            properties["laplacian"] = UnitAttr()
        # (one variadic operand group and one variadic result group: what IRDL's generic
        # constructor makes of [inputs] and [result_types], without its matching)
        init_op(self, inputs, result_types, properties)

    @property
    def lanes(self) -> int:
        """The vector width: how many derivatives of each kind the op carries."""
        return self.width.value.data if self.width is not None else 1

    @property
    def arg_activities(self) -> list[Activity]:
        return _activities(self.activity)

    @property
    def ret_activities(self) -> list[Activity]:
        return _activities(self.ret_activity)

    def verify_(self) -> None:
        for attr in (*self.activity.data, *self.ret_activity.data):
            if not isinstance(attr, ActivityAttr):
                raise VerifyException(
                    f"{self.name}: activities must be #enzyme<activity ...>, got {attr}"
                )


@functools.cache
def _activity_attr(activity: Activity | str) -> ActivityAttr:
    """``ActivityAttr(activity)``, one object per activity (immutable)."""
    return ActivityAttr(activity)


@irdl_op_definition
class AutoDiffOp(_DiffOp):
    """Reverse mode: operands are the primal arguments (each dup argument followed by
    its shadow) and then one seed per active result; results are the primal results
    that are needed, followed by the derivatives of the active arguments."""

    name = "enzyme.autodiff"


@irdl_op_definition
class FwdDiffOp(_DiffOp):
    """Forward mode: operands are the primal arguments, each dup argument followed
    by its tangent; results are, per function result, the primal (unless *noneed)
    followed by the tangent (for dup/dupnoneed)."""

    name = "enzyme.fwddiff"


@irdl_op_definition
class SplitDiffOp(_DiffOp):
    """zymase's own: one half of Enzyme's split reverse mode, as the C interface asks
    for it (``__enzyme_augmentfwd`` / ``__enzyme_reverse``, zymase.transforms.split_mode).
    ``part = "augment"``: operands are the primal arguments (each dup argument followed
    by its shadow) and the caller's tape buffer (null unless ``allocated``); results are
    the tape and the primal result. ``part = "reverse"``: operands are the arguments
    with their shadows, the seed of an active result and the tape; results are the
    derivatives of the active arguments. ``part = "fwdsplit"`` (split forward mode,
    ``__enzyme_fwdsplit``): operands are the arguments with their tangents or shadows
    and the tape; the result is the tangent of an active result. ``width`` (vector mode,
    augment and reverse only): N shadows per dup argument, N seeds per active result,
    N derivatives per active argument, lane by lane; one tape."""

    name = "enzyme.split_autodiff"
    part = prop_def(StringAttr)
    allocated = prop_def(IntegerAttr)

    def __init__(self, part: str, allocated: bool, fn: str, inputs: Sequence[SSAValue],
                 result_types: Sequence[Attribute], activity: Sequence[Activity], ret_activity: Sequence[Activity],
                 width: int = 1):
        properties = {
            "fn": FlatSymbolRefAttr(fn),
            "activity": ArrayAttr([ActivityAttr(a) for a in activity]),
            "ret_activity": ArrayAttr([ActivityAttr(a) for a in ret_activity]),
            "part": StringAttr(part),
            "allocated": IntegerAttr(int(allocated), 1),
        }
        if width != 1:
            properties["width"] = IntegerAttr(width, 64)
        IRDLOperation.__init__(self, operands=[inputs], result_types=[result_types], properties=properties)


@irdl_op_definition
class BatchOp(_NamedRequestSyntax, IRDLOperation):
    """Enzyme-MLIR's batched evaluation: ``fn`` applied to ``batch_shape`` lanes at once.
    Each operand is a tensor whose leading dimensions are ``batch_shape`` and whose lane
    is ``fn``'s parameter; each result likewise (zymase.transforms.batch)."""

    name = "enzyme.batch"
    fn = prop_def(SymbolRefAttr)
    inputs = var_operand_def()
    outputs = var_result_def()
    batch_shape = prop_def(DenseArrayBase)


@irdl_op_definition
class InitOp(IRDLOperation):
    """Create an accumulator or a cache."""

    name = "enzyme.init"
    result = result_def(GradientType | CacheType | IndexedCacheType)
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, typ: Attribute):
        init_op(self, (), [typ])


@irdl_op_definition
class SetOp(IRDLOperation):
    name = "enzyme.set"
    gradient = operand_def(GradientType)
    value = operand_def()
    assembly_format = "$gradient `,` $value attr-dict `:` type($gradient) `,` type($value)"

    def __init__(self, gradient: SSAValue, value: SSAValue):
        init_op(self, [gradient, value])


@irdl_op_definition
class GetOp(IRDLOperation):
    name = "enzyme.get"
    gradient = operand_def(GradientType)
    result = result_def()
    assembly_format = "$gradient attr-dict `:` type($gradient) `->` type($result)"

    def __init__(self, gradient: SSAValue):
        init_op(self, [gradient], [gradient.type.elem])  # type: ignore[attr-defined]


@irdl_op_definition
class PushOp(IRDLOperation):
    name = "enzyme.push"
    cache = operand_def(CacheType)
    value = operand_def()
    assembly_format = "$cache `,` $value attr-dict `:` type($cache) `,` type($value)"

    def __init__(self, cache: SSAValue, value: SSAValue):
        init_op(self, [cache, value])


@irdl_op_definition
class PopOp(IRDLOperation):
    name = "enzyme.pop"
    cache = operand_def(CacheType)
    result = result_def()
    assembly_format = "$cache attr-dict `:` type($cache) `->` type($result)"

    def __init__(self, cache: SSAValue):
        init_op(self, [cache], [cache.type.elem])  # type: ignore[attr-defined]


@irdl_op_definition
class CacheReserveOp(IRDLOperation):
    """Make an indexed cache hold at least ``count`` (i64) slots, keeping its contents
    (slots already written keep their values; storage may move)."""

    name = "enzyme.cache_reserve"
    cache = operand_def(IndexedCacheType)
    count = operand_def()
    assembly_format = "$cache `,` $count attr-dict `:` type($cache) `,` type($count)"

    def __init__(self, cache: SSAValue, count: SSAValue):
        init_op(self, [cache, count])


@irdl_op_definition
class CacheStoreOp(IRDLOperation):
    """Write ``value`` into slot ``index`` (i64) of an indexed cache."""

    name = "enzyme.cache_store"
    cache = operand_def(IndexedCacheType)
    index = operand_def()
    value = operand_def()
    assembly_format = "$cache `[` $index `]` `,` $value attr-dict `:` type($cache) `,` type($index) `,` type($value)"

    def __init__(self, cache: SSAValue, index: SSAValue, value: SSAValue):
        init_op(self, [cache, index, value])


@irdl_op_definition
class CacheLoadOp(IRDLOperation):
    """Read slot ``index`` (i64) of an indexed cache."""

    name = "enzyme.cache_load"
    cache = operand_def(IndexedCacheType)
    index = operand_def()
    result = result_def()
    assembly_format = "$cache `[` $index `]` attr-dict `:` type($cache) `,` type($index) `->` type($result)"

    def __init__(self, cache: SSAValue, index: SSAValue):
        init_op(self, [cache, index], [cache.type.elem])  # type: ignore[attr-defined]


@irdl_op_definition
class IgnoreDerivativesOp(IRDLOperation):
    """``enzyme.ignore_derivatives %x : T -> T``: the value of ``%x``, through which
    no derivative flows (its rule is zero; lowered to ``%x`` itself)."""

    name = "enzyme.ignore_derivatives"
    input = operand_def()
    result = result_def()
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value], result_types=[value.type])


@irdl_op_definition
class YieldOp(IRDLOperation):
    """``enzyme.yield``: the results of an ``enzyme.autodiff_region`` body."""

    name = "enzyme.yield"
    values = var_operand_def()
    traits = traits_def(IsTerminator())
    assembly_format = "attr-dict ($values^ `:` type($values))?"


class _DiffRegionOp(IRDLOperation):
    """The region forms of the requests: the body (its block arguments are the
    arguments, ``enzyme.yield`` gives the results) is differentiated as if it were a
    function; values it uses from outside are constants. Operands and results are
    those of ``enzyme.autodiff`` / ``enzyme.fwddiff`` with the same activities.
    ``transforms/diff_regions`` outlines the body and makes the request a call."""

    inputs = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")
    activity = prop_def(ArrayAttr)
    ret_activity = prop_def(ArrayAttr)
    width = opt_prop_def(IntegerAttr)
    strong_zero = opt_prop_def(Attribute)
    fn = opt_prop_def(Attribute)

    @classmethod
    def parse(cls, parser: Parser) -> "_DiffRegionOp":
        """``(%x, %dx) { body } <options> attributes {...} : (types) -> (types)``, the
        options in any of Enzyme-MLIR's spellings (see :func:`_parse_options`)."""
        operands = parser.parse_op_args_list()
        body = parser.parse_region()
        options = _parse_options(parser)
        keyword = parser.parse_optional_attr_dict_with_keyword()
        options.update(keyword.data if keyword is not None else parser.parse_optional_attr_dict())
        return _build(cls, parser, operands, [body], options)

    def print(self, printer: Printer) -> None:
        printer.print_string("(")
        printer.print_list(self.inputs, printer.print_operand)
        printer.print_string(") ")
        printer.print_region(self.body)
        printer.print_op_attributes({**self.attributes, **self.properties}, print_keyword=True)
        printer.print_string(" : ")
        printer.print_function_type(self.inputs.types, self.outputs.types)

    @property
    def arg_activities(self) -> list[Activity]:
        return _activities(self.activity)

    @property
    def ret_activities(self) -> list[Activity]:
        return _activities(self.ret_activity)


@irdl_op_definition
class AutoDiffRegionOp(_DiffRegionOp):
    name = "enzyme.autodiff_region"


@irdl_op_definition
class FwdDiffRegionOp(_DiffRegionOp):
    name = "enzyme.fwddiff_region"


Enzyme = Dialect(
    "enzyme",
    [AutoDiffOp, FwdDiffOp, SplitDiffOp, BatchOp, InitOp, SetOp, GetOp, PushOp, PopOp, CacheReserveOp,
     CacheStoreOp, CacheLoadOp, IgnoreDerivativesOp, YieldOp, AutoDiffRegionOp, FwdDiffRegionOp],
    [ActivityAttr, GradientType, CacheType, IndexedCacheType],
)
