"""The rule for ``stablehlo.convolution`` (``lax.conv_general_dilated``, ``lax.conv``,
``jnp.convolve``, flax's Conv).

A convolution is bilinear in its input and kernel: the tangent is conv(t_in, kernel) +
conv(in, t_kernel) with the same attributes. Each adjoint is again one convolution:

* input: the output adjoint convolved with the kernel reversed in its spatial dims,
  roles swapped (the kernel's input and output features; the output's layout read as
  the input's), the forward strides becoming an input dilation and the forward input
  dilation becoming strides, padded so each input element meets every output it fed;
* kernel: the input convolved with the output adjoint as the kernel (batch as the
  contracted feature), the forward strides becoming a kernel dilation.

These are the transposes JAX uses for ``conv_general_dilated``. Feature and batch
groups and window reversal are refused (named, with the JAX function).
"""

from __future__ import annotations

import re

from zymase.autodiff import hlo_flavor as T
from zymase.autodiff.registry import REGISTRY, Rule
from zymase.errors import ZymaseError
from zymase.ir import DenseIntOrFPElementsAttr, StringAttr, TensorType, i64, location_of
from zymase.ir import stablehlo as hlo

_ROLES = {"lhs": ("b", "f"), "rhs": ("o", "i"), "out": ("b", "f")}


def _specs(op) -> tuple[list[int], list[int], list[int]]:
    """JAX's (lhs, rhs, out) specs: for each operand, its (major, feature, spatial...)
    tensor dims, read from ``#stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>``."""
    m = re.fullmatch(r"\s*\[([^\]]*)\]\s*x\s*\[([^\]]*)\]\s*->\s*\[([^\]]*)\]\s*", op.dimension_numbers.body.data)
    specs = []
    for text, (major, minor) in zip(m.groups(), _ROLES.values()):
        labels = [t.strip() for t in text.split(",")]
        spatial = sorted((int(lbl), d) for d, lbl in enumerate(labels) if lbl.isdigit())
        specs.append([labels.index(major), labels.index(minor)] + [d for _, d in spatial])
    return tuple(specs)


def _conv_attr(lhs, rhs, out) -> hlo.ConvAttr:
    parts = []
    for spec, (major, minor) in zip((lhs, rhs, out), _ROLES.values()):
        labels = [""] * len(spec)
        labels[spec[0]], labels[spec[1]] = major, minor
        for k, d in enumerate(spec[2:]):
            labels[d] = str(k)
        parts.append("[" + ", ".join(labels) + "]")
    return hlo.ConvAttr(StringAttr(f"{parts[0]}x{parts[1]}->{parts[2]}"))


def _ints(op, name, n, default=1):
    prop = op.properties.get(name)
    return [int(v) for v in prop.get_values()] if prop is not None else [default] * n


def _padding(op, n) -> list[tuple[int, int]]:
    prop = op.properties.get("padding")
    if prop is None:
        return [(0, 0)] * n
    flat = list(prop.get_values())
    flat = flat * (2 * n) if len(flat) == 1 else flat
    return [(int(flat[2 * k]), int(flat[2 * k + 1])) for k in range(n)]


def _dilate(size, dilation):
    return 0 if size == 0 else 1 + dilation * (size - 1)


def _convolution(E, lhs, rhs, result_type, specs, strides, padding, lhs_dilation, rhs_dilation, precision):
    n = len(strides)
    properties = {
        "window_strides": hlo.array(strides), "lhs_dilation": hlo.array(lhs_dilation),
        "rhs_dilation": hlo.array(rhs_dilation), "dimension_numbers": _conv_attr(*specs),
        "feature_group_count": _i64(1), "batch_group_count": _i64(1),
        "padding": DenseIntOrFPElementsAttr.from_list(TensorType(i64, [n, 2]), [v for p in padding for v in p]),
    }
    if precision is not None:
        properties["precision_config"] = precision
    op = hlo.ConvolutionOp.create(operands=[lhs, rhs], result_types=[result_type], properties=properties)
    return E.insert(op).results[0]


def _i64(v):
    from zymase.ir import IntegerAttr

    return IntegerAttr(v, i64)


class _Convolution(Rule):
    def propagates(self, op, index):
        return hlo.is_float_tensor(op.operands[index].type)

    def _check(self, op):
        groups = (op.feature_group_count.value.data, op.batch_group_count.value.data)
        reversal = op.properties.get("window_reversal")
        if groups != (1, 1) or (reversal is not None and any(reversal.get_values())):
            raise ZymaseError("a grouped or window-reversed stablehlo.convolution has no derivative rule",
                              construct="stablehlo.convolution", location=location_of(op),
                              hint="lax.conv_general_dilated with feature_group_count=1 and batch_group_count=1")

    def forward(self, ctx, op, tangents):
        self._check(op)
        E = ctx.E
        lhs, rhs = (ctx.primal(v) for v in op.operands)
        total = None
        for k, t in enumerate(tangents):
            if t is None:
                continue
            operands = [t, rhs] if k == 0 else [lhs, t]
            new = op.create(operands=operands, result_types=[op.results[0].type], properties=dict(op.properties))
            term = E.insert(new).results[0]
            total = term if total is None else E.add(total, term)
        return [total]

    def reverse(self, ctx, op, dys):
        self._check(op)
        dy, E = dys[0], ctx.E
        out = [None, None]
        if dy is None:
            return out
        lhs, rhs = op.operands
        lhs_spec, rhs_spec, out_spec = _specs(op)
        n = len(lhs_spec) - 2
        strides = _ints(op, "window_strides", n)
        lhs_dilation, rhs_dilation = _ints(op, "lhs_dilation", n), _ints(op, "rhs_dilation", n)
        padding = _padding(op, n)
        precision = op.properties.get("precision_config")
        in_sizes = [T.shape(lhs)[d] for d in lhs_spec[2:]]
        window = [T.shape(rhs)[d] for d in rhs_spec[2:]]
        out_sizes = [T.shape(dy)[d] for d in out_spec[2:]]
        lhs_dilated = [_dilate(s, d) for s, d in zip(in_sizes, lhs_dilation)]
        rhs_dilated = [_dilate(s, d) for s, d in zip(window, rhs_dilation)]
        out_dilated = [_dilate(s, d) for s, d in zip(out_sizes, strides)]
        # a widening convolution (preferred_element_type: f32 operands, f64 result) has an
        # adjoint of the result's type: as JAX transposes it, the other operand is converted
        # to that type, the adjoint convolution computed in it and converted back
        wide = dy.type.element_type

        def in_adjoint_type(v):
            return E.fconv(v, TensorType(wide, T.shape(v)))  # no op when the types agree

        def back(v, like):
            return E.fconv(v, like.type)

        if ctx.wants(lhs):
            before = [r - lo - 1 for r, (lo, _) in zip(rhs_dilated, padding)]
            after = [a + r - 1 - o - b for a, r, o, b in zip(lhs_dilated, rhs_dilated, out_dilated, before)]
            kernel = in_adjoint_type(ctx.primal(rhs))
            reversed_kernel = T.emit(E, hlo.ReverseOp, [kernel], kernel.type, dimensions=hlo.array(rhs_spec[2:]))
            swapped = [rhs_spec[1], rhs_spec[0], *rhs_spec[2:]]
            out[0] = back(_convolution(E, dy, reversed_kernel, TensorType(wide, T.shape(lhs)),
                                       (out_spec, swapped, lhs_spec), lhs_dilation, list(zip(before, after)),
                                       strides, rhs_dilation, precision), lhs)
        if ctx.wants(rhs):
            high = [(o - a) + (r - lo - 1) for o, a, r, (lo, _) in zip(out_dilated, lhs_dilated, rhs_dilated, padding)]
            transposed = [[s[1], s[0], *s[2:]] for s in (lhs_spec, out_spec, rhs_spec)]
            out[1] = back(_convolution(E, in_adjoint_type(ctx.primal(lhs)), dy, TensorType(wide, T.shape(rhs)),
                                       transposed, rhs_dilation, [(lo, h) for (lo, _), h in zip(padding, high)],
                                       lhs_dilation, strides, precision), rhs)
        return out


REGISTRY.register(hlo.ConvolutionOp, _Convolution())
