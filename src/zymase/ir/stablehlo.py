"""The StableHLO dialect, as far as zymase reads and writes it (xDSL 0.74 has none).

JAX lowers a function to StableHLO (``jax.jit(f).lower(x).compiler_ir('stablehlo')``);
zymase reads that module in MLIR's generic op form, differentiates it and prints it
back in generic form for XLA. So only the generic form is needed: every op declares
its operands, results, regions and properties, and nothing else.

StableHLO's structured attributes (``#stablehlo.dot<...>``, ``#stablehlo<precision
DEFAULT>``, ``#stablehlo<comparison_direction LT>``, ``#stablehlo.gather<...>``) are
kept as their body text (:class:`_BodyAttr`), printed back verbatim; the few whose
fields the rules need are read by :func:`dims_field` and built by :func:`dot_dims`,
:func:`comparison`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SpacedOpaqueSyntaxAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_region_def,
    var_result_def,
)
from xdsl.irdl import param_def
from xdsl.traits import IsTerminator, Pure


class _BodyAttr(ParametrizedAttribute):
    """A StableHLO attribute kept as the text between its angle brackets. Parses both
    spellings MLIR prints (``#stablehlo.dot<...>`` and the opaque
    ``#stablehlo<precision DEFAULT>``) and prints the first."""

    body: StringAttr = param_def()

    @classmethod
    def parse_parameters(cls, parser):
        from xdsl.utils.mlir_lexer import MLIRTokenKind

        if parser._current_token.kind == MLIRTokenKind.LESS:
            return (StringAttr(parser._parse_dialect_symbol_body().strip()),)
        # opaque spelling: the mnemonic is read, the body runs to the closing '>'
        start = parser._current_token.span.start
        end = parser._raw_scan_balanced(start)
        text = parser.lexer.input.content[start:end]
        parser.lexer.pos = end
        parser._parser_state.current_token = parser.lexer.lex()
        return (StringAttr(text.strip()),)

    def print_parameters(self, printer) -> None:
        printer.print_string(f"<{self.body.data}>")


class _EnumAttr(_BodyAttr, SpacedOpaqueSyntaxAttribute):
    """A StableHLO enum attribute, which MLIR spells only opaquely:
    ``#stablehlo<comparison_direction LT>``; the body is the value (``LT``)."""

    def print_parameters(self, printer) -> None:
        printer.print_string(self.body.data)


def _body_attr(mnemonic: str, base: type[_BodyAttr] = _BodyAttr, dialect: str = "stablehlo") -> type[_BodyAttr]:
    # the parameter is declared on each class: xDSL's definition does not take it from
    # an undecorated base, and without it every instance would compare equal
    namespace = {"name": f"{dialect}.{mnemonic}", "__annotations__": {"body": StringAttr}, "body": param_def()}
    cls = type(f"{mnemonic.title().replace('_', '')}Attr", (base,), namespace)
    return irdl_attr_definition(cls)


DotAttr = _body_attr("dot")
DotAlgorithmAttr = _body_attr("dot_algorithm")
PrecisionAttr = _body_attr("precision", _EnumAttr)
ComparisonDirectionAttr = _body_attr("comparison_direction", _EnumAttr)
ComparisonTypeAttr = _body_attr("comparison_type", _EnumAttr)
GatherAttr = _body_attr("gather")
ScatterAttr = _body_attr("scatter")
ConvAttr = _body_attr("conv")
ResultAccuracyAttr = _body_attr("result_accuracy")
ResultAccuracyModeAttr = _body_attr("result_accuracy_mode", _EnumAttr)
RngAlgorithmAttr = _body_attr("rng_algorithm", _EnumAttr)
RngDistributionAttr = _body_attr("rng_distribution", _EnumAttr)
TransposeAttr = _body_attr("transpose", _EnumAttr)
OutputOperandAliasAttr = _body_attr("output_operand_alias")

# Shardy's sharding rule, which JAX puts on the custom_calls of jnp.linalg (kept as text)
OpShardingRuleAttr = _body_attr("op_sharding_rule", dialect="sdy")
Sdy = Dialect("sdy", [], [OpShardingRuleAttr])

_ATTRS = [
    DotAttr, DotAlgorithmAttr, PrecisionAttr, ComparisonDirectionAttr, ComparisonTypeAttr, GatherAttr,
    ScatterAttr, ConvAttr, ResultAccuracyAttr, ResultAccuracyModeAttr, RngAlgorithmAttr,
    RngDistributionAttr, TransposeAttr, OutputOperandAliasAttr,
]


def dims_field(attr: _BodyAttr, field: str) -> list[int]:
    """The integer list ``field = [1, 2]`` of a structured attribute (absent: [])."""
    m = re.search(rf"\b{field}\s*=\s*\[([^\]]*)\]", attr.body.data)
    return [int(x) for x in m.group(1).split(",") if x.strip()] if m else []


def int_field(attr: _BodyAttr, field: str) -> int | None:
    """The integer ``field = 1`` of a structured attribute (absent: None)."""
    m = re.search(rf"\b{field}\s*=\s*(-?\d+)", attr.body.data)
    return int(m.group(1)) if m else None


def structured(attr_class: type[_BodyAttr], fields: dict[str, list[int] | int | None]) -> _BodyAttr:
    """A structured attribute (``#stablehlo.gather<...>``) from its fields in order;
    empty lists and None are left out, as MLIR prints them."""
    parts = []
    for name, value in fields.items():
        if isinstance(value, list) and value:
            parts.append(f"{name} = [{', '.join(str(d) for d in value)}]")
        elif isinstance(value, int):
            parts.append(f"{name} = {value}")
    return attr_class(StringAttr(", ".join(parts)))


def dot_dims(lhs_batch, rhs_batch, lhs_contract, rhs_contract) -> DotAttr:
    """A ``#stablehlo.dot<...>`` with the four dimension lists."""
    parts = []
    for name, dims in (("lhs_batching_dimensions", lhs_batch), ("rhs_batching_dimensions", rhs_batch),
                       ("lhs_contracting_dimensions", lhs_contract), ("rhs_contracting_dimensions", rhs_contract)):
        if dims:
            parts.append(f"{name} = [{', '.join(str(d) for d in dims)}]")
    return DotAttr(StringAttr(", ".join(parts)))


def comparison(direction: str) -> ComparisonDirectionAttr:
    """``#stablehlo<comparison_direction EQ>`` (EQ, NE, LT, LE, GT, GE)."""
    return ComparisonDirectionAttr(StringAttr(direction))


def comparison_type(kind: str) -> ComparisonTypeAttr:
    """``#stablehlo<comparison_type FLOAT>`` (FLOAT, TOTALORDER, SIGNED, UNSIGNED)."""
    return ComparisonTypeAttr(StringAttr(kind))


def direction_of(op) -> str:
    """The direction (EQ, LT, ...) of a ``stablehlo.compare``."""
    return op.comparison_direction.body.data


# ----- ops ------------------------------------------------------------------------
class HloOp(IRDLOperation):
    """Every StableHLO op: operands and results of any number and type (the rules
    and XLA's verifier check them)."""

    args = var_operand_def()
    res = var_result_def()


def _op(name: str, base: type = HloOp, pure: bool = True, prefix: str = "stablehlo", **fields) -> type:
    """An op class; ``pure`` ops (no effects, no regions that could have any) may be
    merged by CSE and removed when unused. ``prefix``: the dialect (``ir/chlo.py``)."""
    if pure and "traits" not in fields:
        fields["traits"] = traits_def(Pure())
    cls = type(_class_name(name), (base,), {"name": f"{prefix}.{name}", **fields})
    return irdl_op_definition(cls)


def _class_name(name: str) -> str:
    return "".join(p.title() for p in name.split("_")) + "Op"


class _Elementwise(HloOp):
    """Elementwise ops; math ops may carry a ``result_accuracy``."""

    result_accuracy = opt_prop_def(Attribute)


UNARY = ("negate", "exponential", "exponential_minus_one", "log", "log_plus_one", "tanh", "sqrt", "rsqrt",
         "cbrt", "abs", "sine", "cosine", "tan", "logistic", "floor", "ceil", "sign", "round_nearest_even",
         "round_nearest_afz", "not", "is_finite", "real", "imag", "popcnt", "count_leading_zeros")
BINARY = ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum", "atan2", "remainder", "and",
          "or", "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical")

ELEMENTWISE = {name: _op(name, _Elementwise) for name in UNARY + BINARY}
AddOp, SubtractOp, MultiplyOp, DivideOp = (ELEMENTWISE[n] for n in ("add", "subtract", "multiply", "divide"))
NegateOp, MaximumOp, MinimumOp = ELEMENTWISE["negate"], ELEMENTWISE["maximum"], ELEMENTWISE["minimum"]

ConstantOp = _op("constant", value=prop_def(Attribute))
IotaOp = _op("iota", iota_dimension=prop_def(IntegerAttr))
CompareOp = _op("compare", comparison_direction=prop_def(ComparisonDirectionAttr),
                compare_type=opt_prop_def(ComparisonTypeAttr))
SelectOp = _op("select")
ClampOp = _op("clamp")
ConvertOp = _op("convert")
BitcastConvertOp = _op("bitcast_convert")
BroadcastInDimOp = _op("broadcast_in_dim", broadcast_dimensions=prop_def(DenseArrayBase))
ReshapeOp = _op("reshape")
TransposeOp = _op("transpose", permutation=prop_def(DenseArrayBase))
ReverseOp = _op("reverse", dimensions=prop_def(DenseArrayBase))
SliceOp = _op("slice", start_indices=prop_def(DenseArrayBase), limit_indices=prop_def(DenseArrayBase),
              strides=prop_def(DenseArrayBase))
DynamicSliceOp = _op("dynamic_slice", slice_sizes=prop_def(DenseArrayBase))
DynamicUpdateSliceOp = _op("dynamic_update_slice")
ConcatenateOp = _op("concatenate", dimension=prop_def(IntegerAttr))
PadOp = _op("pad", edge_padding_low=prop_def(DenseArrayBase), edge_padding_high=prop_def(DenseArrayBase),
            interior_padding=prop_def(DenseArrayBase))
DotGeneralOp = _op("dot_general", dot_dimension_numbers=prop_def(DotAttr),
                   precision_config=opt_prop_def(ArrayAttr), algorithm=opt_prop_def(DotAlgorithmAttr))
ReduceOp = _op("reduce", pure=False, dimensions=prop_def(DenseArrayBase), body=region_def())
ReduceWindowOp = _op("reduce_window", pure=False, window_dimensions=prop_def(DenseArrayBase),
                     window_strides=opt_prop_def(DenseArrayBase), base_dilations=opt_prop_def(DenseArrayBase),
                     window_dilations=opt_prop_def(DenseArrayBase), padding=opt_prop_def(Attribute),
                     body=region_def())
ConvolutionOp = _op("convolution", window_strides=opt_prop_def(DenseArrayBase), padding=opt_prop_def(Attribute),
                    lhs_dilation=opt_prop_def(DenseArrayBase), rhs_dilation=opt_prop_def(DenseArrayBase),
                    window_reversal=opt_prop_def(DenseArrayBase), dimension_numbers=prop_def(ConvAttr),
                    feature_group_count=prop_def(IntegerAttr), batch_group_count=prop_def(IntegerAttr),
                    precision_config=opt_prop_def(ArrayAttr))
SelectAndScatterOp = _op("select_and_scatter", pure=False, window_dimensions=opt_prop_def(DenseArrayBase),
                         window_strides=opt_prop_def(DenseArrayBase), padding=opt_prop_def(Attribute),
                         select=region_def(), scatter=region_def())
GatherOp = _op("gather", dimension_numbers=prop_def(GatherAttr), slice_sizes=prop_def(DenseArrayBase),
               indices_are_sorted=opt_prop_def(Attribute))
ScatterOp = _op("scatter", pure=False, scatter_dimension_numbers=prop_def(ScatterAttr),
                indices_are_sorted=opt_prop_def(Attribute), unique_indices=opt_prop_def(Attribute),
                update_computation=region_def())
WhileOp = _op("while", pure=False, cond=region_def(), body=region_def())
CaseOp = _op("case", pure=False, branches=var_region_def())
IfOp = _op("if", pure=False, true_branch=region_def(), false_branch=region_def())
ReturnOp = _op("return", traits=traits_def(IsTerminator()))
OptimizationBarrierOp = _op("optimization_barrier", pure=False)
SortOp = _op("sort", pure=False, dimension=opt_prop_def(IntegerAttr), is_stable=opt_prop_def(Attribute),
             comparator=region_def())
CustomCallOp = _op("custom_call", pure=False, call_target_name=prop_def(StringAttr),
                   has_side_effect=opt_prop_def(Attribute), backend_config=opt_prop_def(Attribute),
                   api_version=opt_prop_def(Attribute), called_computations=opt_prop_def(Attribute),
                   operand_layouts=opt_prop_def(Attribute), result_layouts=opt_prop_def(Attribute),
                   output_operand_aliases=opt_prop_def(Attribute))
# ``jax.lax.stop_gradient`` leaves no trace in the StableHLO JAX emits (its lowering is the
# identity); zymase's lowering (frontends/jax.py) marks it with a custom_call of this target,
# which the derivative treats as a constant and replaces by its operand before XLA sees it
STOP_GRADIENT_TARGET = "zymase.stop_gradient"


def is_stop_gradient(op) -> bool:
    return isinstance(op, CustomCallOp) and op.call_target_name.data == STOP_GRADIENT_TARGET


# a user's jax.custom_vjp / jax.custom_jvp call, as zymase's lowering marks it
# (frontends/jax_custom_rules.py): the called computations are the primal and the rule
CUSTOM_VJP_TARGET = "zymase.custom_vjp"
CUSTOM_JVP_TARGET = "zymase.custom_jvp"
# the linear solve of a jax.lax.custom_linear_solve (frontends/jax_linear_solve.py): the
# called computations are the solve and the transposed solve JAX's rule applies
LINEAR_SOLVE_TARGET = "zymase.linear_solve"


def is_custom_rule(op) -> bool:
    return isinstance(op, CustomCallOp) and op.call_target_name.data in (CUSTOM_VJP_TARGET, CUSTOM_JVP_TARGET,
                                                                         LINEAR_SOLVE_TARGET)


def called_computations(op) -> list[str]:
    """The names of the functions a custom_call calls (``called_computations``)."""
    attr = op.properties.get("called_computations")
    return [ref.root_reference.data for ref in attr.data] if attr is not None else []


# JAX's LAPACK custom_calls (typed FFI) carry their options as a dictionary of ui8 character
# codes (``{uplo = 76 : ui8}`` is 'L') in ``mhlo.backend_config``, and the number of leading
# batch dimensions as text in ``mhlo.frontend_attributes``; arrays are column-major
def ffi_options(op) -> dict[str, str]:
    """A LAPACK custom_call's character options: ``{"uplo": "L", "trans_x": "T", ...}``."""
    config = op.attributes.get("mhlo.backend_config")
    if not isinstance(config, DictionaryAttr):
        return {}
    return {k: chr(v.value.data) for k, v in config.data.items() if isinstance(v, IntegerAttr)}


def ffi_batch_dims(op) -> int:
    """How many leading dimensions of a LAPACK custom_call's operands are batch dimensions."""
    frontend = op.attributes.get("mhlo.frontend_attributes")
    count = frontend.data.get("num_batch_dims") if isinstance(frontend, DictionaryAttr) else None
    return int(count.data) if isinstance(count, StringAttr) else 0


def _column_major(rank: int, vector: bool = False) -> DenseIntOrFPElementsAttr:
    """The minor-to-major layout JAX gives LAPACK operands: the two matrix dims
    column-major, batch dims outermost; a ``vector`` (singular values, pivots, one per
    batch element) row-major."""
    if vector or rank < 2:
        order = list(reversed(range(rank)))
    else:
        order = [rank - 2, rank - 1, *range(rank - 2)]
    return DenseIntOrFPElementsAttr.from_list(TensorType(IndexType(), [rank]), order)


def lapack_call(target: str, operands, result_types, options: dict[str, str], batch_dims: int,
                vector_results: Sequence[int] = (), vector_operands: Sequence[int] = ()) -> Operation:
    """A ``stablehlo.custom_call`` of one of jaxlib's LAPACK FFI kernels, spelled as JAX
    spells it (without the Shardy rule, which only sharding propagation reads); the
    results and operands numbered in ``vector_results``/``vector_operands`` are vectors
    (gesdd's singular values, orgqr's reflector scales)."""
    ui8 = IntegerType(8, Signedness.UNSIGNED)
    config = DictionaryAttr({k: IntegerAttr(ord(v), ui8) for k, v in sorted(options.items())})
    properties = {
        "call_target_name": StringAttr(target), "api_version": IntegerAttr(1, IntegerType(32)),
        "backend_config": StringAttr(""),
        "operand_layouts": ArrayAttr([_column_major(len(v.type.get_shape()), i in vector_operands)
                                      for i, v in enumerate(operands)]),
        "result_layouts": ArrayAttr([_column_major(len(t.get_shape()), i in vector_results)
                                     for i, t in enumerate(result_types)]),
    }
    attributes = {"mhlo.backend_config": config,
                  "mhlo.frontend_attributes": DictionaryAttr({"num_batch_dims": StringAttr(str(batch_dims))})}
    return CustomCallOp.create(operands=list(operands), result_types=list(result_types), properties=properties,
                               attributes=attributes)


RngBitGeneratorOp = _op("rng_bit_generator", pure=False, rng_algorithm=prop_def(RngAlgorithmAttr))
ReducePrecisionOp = _op("reduce_precision", exponent_bits=prop_def(IntegerAttr),
                        mantissa_bits=prop_def(IntegerAttr))

StableHLO = Dialect(
    "stablehlo",
    [*ELEMENTWISE.values(), ConstantOp, IotaOp, CompareOp, SelectOp, ClampOp, ConvertOp, BitcastConvertOp,
     BroadcastInDimOp, ReshapeOp, TransposeOp, ReverseOp, SliceOp, DynamicSliceOp, DynamicUpdateSliceOp,
     ConcatenateOp, PadOp, DotGeneralOp, ReduceOp, ReduceWindowOp, SelectAndScatterOp, ConvolutionOp, GatherOp,
     ScatterOp, WhileOp, CaseOp, IfOp,
     ReturnOp, OptimizationBarrierOp, SortOp, CustomCallOp, RngBitGeneratorOp, ReducePrecisionOp],
    _ATTRS,
)


def is_float_tensor(t: Attribute) -> bool:
    """A ranked tensor of bf16/f16/f32/f64 (the values StableHLO derivatives flow through)."""
    from zymase.ir import FLOAT_TYPES

    return isinstance(t, TensorType) and isinstance(t.element_type, (*FLOAT_TYPES, BFloat16Type))


def array(values) -> DenseArrayBase:
    """An ``array<i64: ...>`` property."""
    from xdsl.dialects.builtin import i64

    return DenseArrayBase.from_list(i64, list(values))
