"""Rules for StableHLO's indexing ops: gather and scatter (``x[i]``, ``x.at[i].add/set/mul``).

gather and scatter-add are each other's transposes. A scatter's update whose window
falls outside the operand is dropped by XLA (JAX's default mode for ``.at[]``
updates), so every adjoint read back from the result with a gather (which clamps
instead) is masked by ``in_bounds``. ``x.at[i].mul(u)`` is differentiated in both ``x``
and ``u``; with repeated indices, ``u_j``'s partial is the product of the other factors
scattered to the same element (computed without dividing by a zero factor), which is
JAX's derivative where JAX has one (unique indices) and the product rule elsewhere.
"""

from __future__ import annotations

from zymase.autodiff import hlo_flavor as T
from zymase.autodiff.registry import REGISTRY
from zymase.autodiff.rules.stablehlo import Linear, _linear, _region_kind
from zymase.errors import ZymaseError
from zymase.ir import DenseIntOrFPElementsAttr, location_of
from zymase.ir import stablehlo as hlo

_GATHER_FIELDS = ("offset_dims", "collapsed_slice_dims", "operand_batching_dims", "start_indices_batching_dims",
                  "start_index_map")
_SCATTER_FIELDS = ("update_window_dims", "inserted_window_dims", "input_batching_dims",
                   "scatter_indices_batching_dims", "scatter_dims_to_operand_dims")


def _scatter_add(E, operand, indices, updates, gather_numbers, sorted_attr):
    """The scatter-add that is the transpose of a gather with ``gather_numbers``."""
    fields = {s: hlo.dims_field(gather_numbers, g) for s, g in zip(_SCATTER_FIELDS, _GATHER_FIELDS)}
    fields["index_vector_dim"] = hlo.int_field(gather_numbers, "index_vector_dim")
    properties = {"scatter_dimension_numbers": hlo.structured(hlo.ScatterAttr, fields)}
    if sorted_attr is not None:
        properties["indices_are_sorted"] = sorted_attr
    op = hlo.ScatterOp.create(operands=[operand, indices, updates], result_types=[operand.type],
                              properties=properties, regions=[T._reducer(operand.type.element_type, hlo.AddOp)])
    return E.insert(op).results[0]


def _gather(E, operand, indices, scatter_numbers, updates_type, sorted_attr):
    """The gather that is the transpose of a scatter-add with ``scatter_numbers``: it
    reads, for every update element, the operand element the update went to."""
    fields = {g: hlo.dims_field(scatter_numbers, s) for s, g in zip(_SCATTER_FIELDS, _GATHER_FIELDS)}
    fields["index_vector_dim"] = hlo.int_field(scatter_numbers, "index_vector_dim")
    window = fields["offset_dims"]
    skipped = set(fields["collapsed_slice_dims"]) | set(fields["operand_batching_dims"])
    update_shape = updates_type.get_shape()
    sizes, k = [], 0
    for d in range(len(T.shape(operand))):
        if d in skipped:
            sizes.append(1)
        else:
            sizes.append(update_shape[window[k]])
            k += 1
    ordered = {name: fields[name] for name in ("offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                                               "start_indices_batching_dims", "start_index_map", "index_vector_dim")}
    properties = {"dimension_numbers": hlo.structured(hlo.GatherAttr, ordered), "slice_sizes": hlo.array(sizes)}
    if sorted_attr is not None:
        properties["indices_are_sorted"] = sorted_attr
    return T.emit(E, hlo.GatherOp, [operand, indices], updates_type, **properties)


@_linear(hlo.GatherOp)
def gather_adjoint(ctx, op, i, dy):
    operand = op.operands[0]
    zeros = ctx.E.zero(operand.type)
    indices = _clamped_starts(ctx.E, op, ctx.primal(op.operands[1]))
    return _scatter_add(ctx.E, zeros, indices, dy, op.dimension_numbers, op.properties.get("indices_are_sorted"))


def _clamped_starts(E, op, indices):
    """Gather ``op``'s start ``indices`` clamped as XLA's gather clamps them (to
    ``[0, size - slice size]`` in each indexed dim), so that the scatter-add of the
    adjoint, which drops out-of-bounds windows instead, adds it where the gather read
    (``jnp.take(x, i, mode='clip')`` past the end read the last element and its
    adjoint was dropped)."""
    from zymase.ir import TensorType

    numbers = op.dimension_numbers
    to_operand = hlo.dims_field(numbers, "start_index_map")
    if not to_operand:
        return indices
    operand_shape = T.shape(op.operands[0])
    sizes = list(op.properties["slice_sizes"].get_values())
    bounds = [operand_shape[d] - sizes[d] for d in to_operand]
    index_shape = T.shape(indices)
    vector_dim = hlo.int_field(numbers, "index_vector_dim") or 0  # absent when 0
    element = indices.type.element_type
    if vector_dim == len(index_shape):  # an implicit trailing vector dim of one index
        high = E.v(T.splat(bounds[0], indices.type))
    else:
        row = TensorType(element, [len(bounds)])
        values = E.v(hlo.ConstantOp.create(properties={"value": DenseIntOrFPElementsAttr.from_list(row, bounds)},
                                           result_types=[row]))
        high = T.broadcast(E, values, index_shape, [vector_dim])
    low = E.v(T.splat(0, indices.type))
    return T.emit(E, hlo.ClampOp, [low, indices, high], indices.type)


def scatter_kind(op) -> str | None:
    """``add`` (x.at[i].add), ``set`` (x.at[i].set), ``multiply`` (x.at[i].mul) for a
    one-operand scatter with that update body; None otherwise."""
    if len(op.operands) != 3:
        return None
    region = op.update_computation
    ops = list(region.block.ops)
    if len(ops) == 1 and ops[0].operands[0] is region.block.args[1]:
        return "set"
    if len(ops) == 2 and isinstance(ops[0], hlo.MultiplyOp) and ops[1].operands[0] is ops[0].results[0] \
            and set(ops[0].operands) == set(region.block.args):
        return "multiply"
    return "add" if _region_kind(region) == "add" else None


def _scatter_like(E, op, operand, updates):
    """``op``'s scatter (same indices, numbers and body) of ``updates`` into ``operand``
    (the indices are read where they are: one XLA program keeps every primal value)."""
    new = op.create(operands=[operand, op.operands[1], updates], result_types=[operand.type],
                    properties=dict(op.properties), regions=[op.update_computation.clone()])
    return E.insert(new).results[0]


class _Scatter(Linear):
    """scatter with an add, set or multiply body (``x.at[i].add/set/mul(u)``).

    * add: linear in x (adjoint dy) and u (adjoint: dy gathered where each update went);
    * set: linear in (x, u) together: x's adjoint is dy with the written elements zeroed,
      u's is dy gathered where u went, for the update that won among duplicate indices
      only (found by scattering the update's ids the same way and reading them back);
    * multiply: ``y = x * P`` with ``P`` the product of the factors scattered to each
      element: x's adjoint is dy times P (the same scatter-multiply of ones), ``u_j``'s
      is ``x dy`` gathered where it went times the other factors of its element
      (``_other_factors``); the tangent is ``scatter_mul(dx, i, u) + x scatter_add(0, i,
      others du)``.
    An update dropped for being out of bounds gets no adjoint (``in_bounds``).
    """

    through = (0, 2)

    def _kind(self, op) -> str:
        kind = scatter_kind(op)
        if kind is None:
            raise ZymaseError("this stablehlo.scatter has no derivative rule (x.at[i].add, .set and .mul have one)",
                              construct="stablehlo.scatter", location=location_of(op),
                              hint="write the update as x.at[i].add(...), .set(...) or .mul(...)")
        return kind

    def forward(self, ctx, op, tangents):
        if self._kind(op) != "multiply":
            return super().forward(ctx, op, tangents)
        E = ctx.E
        x, u = ctx.primal(op.operands[0]), ctx.primal(op.operands[2])
        total = None
        if tangents[0] is not None:
            total = _scatter_like(E, op, tangents[0], u)
        if tangents[2] is not None:
            spread = _scatter_add_like(E, op, E.zero(x.type), E.mul(_other_factors(E, op), tangents[2]))
            term = E.mul(x, spread)
            total = term if total is None else E.add(total, term)
        return [total]

    def transpose(self, ctx, op, i, dy):
        E, kind = ctx.E, self._kind(op)
        updates = op.operands[2]
        if i == 0:
            if kind == "add":
                return dy
            if kind == "set":  # what the scatter overwrote gets nothing
                return _scatter_like(E, op, dy, E.zero(updates.type))
            ones = E.const_like(1.0, dy)
            return E.mul(dy, _scatter_like(E, op, ones, ctx.primal(updates)))
        if kind == "multiply":
            dy = E.mul(dy, ctx.primal(op.operands[0]))
        gathered = _gather(E, dy, ctx.primal(op.operands[1]), op.scatter_dimension_numbers, updates.type,
                           op.properties.get("indices_are_sorted"))
        zero = E.zero(updates.type)
        if kind == "multiply":
            gathered = E.mul(gathered, _other_factors(E, op))
        if kind == "set" and not _is_true(op.properties.get("unique_indices")):
            return E.select(_winners(E, op), gathered, zero)  # a dropped update never wins
        inside = in_bounds(E, op)
        return gathered if inside is None else E.select(inside, gathered, zero)


def _scatter_add_like(E, op, operand, updates):
    """``op``'s scatter (same indices and numbers) of ``updates`` into ``operand`` with an
    add body."""
    new = op.create(operands=[operand, op.operands[1], updates], result_types=[operand.type],
                    properties=dict(op.properties), regions=[T._reducer(operand.type.element_type, hlo.AddOp)])
    return E.insert(new).results[0]


def _other_factors(E, op):
    """For each factor ``u_j`` of a scatter-multiply, the product of the other factors
    scattered to the same element (ones when the indices are unique). Without division
    by zero: per element, the product of its nonzero factors and the count of its zero
    factors; a zero ``u_j`` sees that product when it is its element's only zero, a
    nonzero one sees it divided by ``u_j`` when its element has no zero; else 0."""
    updates = op.operands[2]
    if _is_true(op.properties.get("unique_indices")):
        return E.const_like(1.0, updates)
    x, indices, u = op.operands
    one, zero = E.const_like(1.0, u), E.zero(u.type)
    is_zero = E.fcmp("oeq", u, zero)
    nonzero = E.select(is_zero, one, u)
    numbers, sorted_attr = op.scatter_dimension_numbers, op.properties.get("indices_are_sorted")
    product = _gather(E, _scatter_like(E, op, E.const_like(1.0, x), nonzero), indices, numbers, u.type, sorted_attr)
    zeros = _scatter_add_like(E, op, E.zero(x.type), E.select(is_zero, one, zero))
    zeros = _gather(E, zeros, indices, numbers, u.type, sorted_attr)
    alone = E.fcmp("oeq", zeros, one)
    none = E.fcmp("oeq", zeros, zero)
    return E.select(is_zero, E.select(alone, product, zero), E.select(none, E.div(product, nonzero), zero))


def in_bounds(E, op):
    """Whether each update element of scatter ``op`` is written: XLA drops an update
    whose window does not fit in the operand (``0 <= start <= size - window`` in every
    indexed dim). A boolean tensor of the updates' shape; None without indexed dims."""
    from zymase.ir import TensorType, i1

    numbers = op.scatter_dimension_numbers
    operand_shape, update_shape = T.shape(op.operands[0]), T.shape(op.operands[2])
    window_dims = hlo.dims_field(numbers, "update_window_dims")
    unwindowed = set(hlo.dims_field(numbers, "inserted_window_dims")) | set(hlo.dims_field(numbers, "input_batching_dims"))
    windows = iter(window_dims)
    sizes = [1 if d in unwindowed else update_shape[next(windows)] for d in range(len(operand_shape))]
    to_operand = hlo.dims_field(numbers, "scatter_dims_to_operand_dims")
    if not to_operand:
        return None
    indices = op.operands[1]
    vector_dim = hlo.int_field(numbers, "index_vector_dim") or 0  # absent when 0
    if vector_dim == len(T.shape(indices)):  # an implicit trailing vector dim of one index
        indices = T.reshape(E, indices, (*T.shape(indices), 1))
    index_shape = T.shape(indices)
    batch = [n for d, n in enumerate(index_shape) if d != vector_dim]
    ok = None
    for c, d in enumerate(to_operand):
        start = [c if k == vector_dim else 0 for k in range(len(index_shape))]
        limit = [c + 1 if k == vector_dim else n for k, n in enumerate(index_shape)]
        component = T.reshape(E, T.slice_(E, indices, start, limit), batch)
        for direction, bound in (("GE", 0), ("LE", operand_shape[d] - sizes[d])):
            limit_value = E.v(T.splat(bound, component.type))
            test = E.v(hlo.CompareOp.create(operands=[component, limit_value], result_types=[TensorType(i1, batch)],
                                            properties={"comparison_direction": hlo.comparison(direction)}))
            ok = test if ok is None else T.emit(E, hlo.ELEMENTWISE["and"], [ok, test], test.type)
    scatter_dims = [d for d in range(len(update_shape)) if d not in window_dims]
    return T.broadcast(E, ok, update_shape, scatter_dims)


def _is_true(attr) -> bool:
    return attr is not None and getattr(attr, "value", None) is not None and attr.value.data == 1


def _winners(E, op):
    """For each update element of a scatter-set, whether its write is the one the result
    keeps (among updates to the same element, XLA CPU keeps the last, as here)."""
    from zymase.ir import IntegerAttr, TensorType, i32, i64

    updates, indices = op.operands[2], op.operands[1]
    shape = T.shape(updates)
    count = 1
    for n in shape:
        count *= n
    ids = E.v(hlo.IotaOp.create(properties={"iota_dimension": IntegerAttr(0, i64)},
                                result_types=[TensorType(i32, [count])]))
    ids = T.reshape(E, ids, shape)
    unwritten = E.v(T.splat(-1, TensorType(i32, T.shape(op.operands[0]))))
    scattered = op.create(operands=[unwritten, indices, ids], result_types=[unwritten.type],
                          properties=dict(op.properties), regions=[_set_body(i32)])
    written = E.insert(scattered).results[0]
    read_back = _gather(E, written, indices, op.scatter_dimension_numbers, ids.type,
                        op.properties.get("indices_are_sorted"))
    return E.icmp_eq(read_back, ids)


def _set_body(element_type):
    from zymase.ir import Block, Region, TensorType

    scalar = TensorType(element_type, [])
    block = Block(arg_types=[scalar, scalar])
    block.add_op(hlo.ReturnOp.create(operands=[block.args[1]]))
    return Region(block)


REGISTRY.register(hlo.ScatterOp, _Scatter())
