"""Vector mode's lanes (Enzyme's ``enzyme_width``): a derivative function at width N
computes the primal once and N derivatives of each kind side by side.

The generators keep their derivatives in maps (tangents, shadows, adjoint cells, the
adjoints of the block being reversed); :class:`LaneMaps` gives each lane its own set
and selects one at a time (:meth:`LaneMaps.each_lane`), so that the rules, the memory
code and the tape, which read ``g.tmap``, ``g.smap``, ``g.cells`` ..., stay scalar: the
generator emits an op's primal code once, then its derivative code once per lane.
Primal values the derivative code needs (partials, taped values) are fetched once and
shared by the lanes (the generators key them by value, not by lane). The lanes'
arithmetic ends up side by side in the output, where LLVM's SLP and loop vectorizers
find it; each lane's shadow arguments get their own alias scope
(``autodiff/names.SHADOW_LANES``). The signatures repeat every derivative argument
and result N times, lane by lane (``type_rules.shadow_types``).
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

from zymase.errors import VectorModeRefused
from zymase.ir import IntegerAttr, Operation, i64, llvm, location_of

#: the per-lane maps: forward tangents, shadows, posix_memalign shadow buffers, reverse
#: adjoint cells and the adjoints local to the block being reversed
LANE_FIELDS = ("tmap", "smap", "alloc_shadows", "cells", "local")


def _lane_field(name: str) -> property:
    return property(lambda self: getattr(self._lane, name),
                    lambda self, value: setattr(self._lane, name, value),
                    doc=f"the selected lane's {name}")


class LaneMaps:
    """Mixin of the generators: per-lane derivative maps. ``width`` 1 is scalar mode
    (one lane, always selected)."""

    #: the lane being emitted (ShadowCode emits primal-side effects on lane 0 only)
    lane_index = 0
    width = 1

    def init_lanes(self, width: int) -> None:
        self.width = width
        self._lanes = [SimpleNamespace(**{f: {} for f in LANE_FIELDS}) for _ in range(width)]
        self._lane = self._lanes[0]
        self.lane_index = 0

    def each_lane(self) -> Iterator[int]:
        """Select each lane's maps in turn; lane 0 is selected again afterwards."""
        try:
            for k, lane in enumerate(self._lanes):
                self._lane, self.lane_index = lane, k
                yield k
        finally:
            self._lane, self.lane_index = self._lanes[0], 0

    def in_each_lane(self, make) -> list:
        """``make()`` called with each lane selected in turn: one value per lane, in lane
        order (a derivative operand or result repeated lane by lane)."""
        return [make() for _ in self.each_lane()]

    def of_every_lane(self, field: str) -> list[dict]:
        """``field``'s map of each lane, in lane order."""
        return [getattr(lane, field) for lane in self._lanes]

    def reset_lanes(self, field: str, maps: list[dict] | None = None) -> None:
        """Give each lane an empty ``field`` map, or its own of ``maps`` (lane order):
        what ``of_every_lane`` saved, restored."""
        for k, lane in enumerate(self._lanes):
            setattr(lane, field, {} if maps is None else maps[k])

    def gathered(self, key, value) -> list | None:
        """``value``, the selected lane's, kept under ``key``; on the last lane every
        lane's, in lane order (and the record dropped), before it None: for a rule whose
        last lane emits one call for all lanes (LAPACK, MPI)."""
        kept = self.__dict__.setdefault("_gathered_lanes", {}).setdefault(key, [])
        kept.append(value)
        if self.lane_index < self.width - 1:
            return None
        del self._gathered_lanes[key]
        return kept

    def pointer_array(self, ptrs: list) -> object:
        """A stack array holding ``ptrs`` (every lane's shadow of one argument, say, for a
        runtime call that takes the lanes at once): allocated once, in the function's
        entry block, so that a call in a loop does not grow the stack; filled where the
        emitter stands."""
        E = self.E
        arr_t = llvm.LLVMArrayType(len(ptrs), llvm.LLVMPointerType())
        entry = E.block.parent_region().blocks[0]
        one = llvm.ConstantOp(IntegerAttr(1, 64), i64)
        slot = llvm.AllocaOp(one.results[0], arr_t, alignment=8)
        first = entry.first_op
        if first is None:
            entry.add_ops([one, slot])
        else:
            entry.insert_ops_before([one, slot], first)
        for k, p in enumerate(ptrs):
            at = E.v(llvm.GEPOp(slot.results[0], [0, k], pointee_type=arr_t))
            E.insert(llvm.StoreOp(p, at))
        return slot.results[0]

    def refuse_in_vector_mode(self, op: Operation, what: str, fname: str) -> None:
        """Vector mode does not cover ``what`` (at ``op``): refused, never approximated."""
        if self.width > 1:
            from zymase.autodiff.common import describe
            from zymase.transforms.numba_parfor import ParforSerial, is_parfor

            if isinstance(op, llvm.CallOp) and is_parfor(self.ctx.defined_function(op)):
                # a Numba prange loop: the front end takes the serial copy instead
                raise ParforSerial("a prange loop in vector mode", function=fname, location=location_of(op))

            raise VectorModeRefused(
                f"vector mode (width {self.width}) does not handle {what} yet",
                construct=describe(op), function=fname, location=location_of(op),
                hint="differentiate this function at width 1 (one call per tangent or cotangent)",
            )


for _name in LANE_FIELDS:
    setattr(LaneMaps, _name, _lane_field(_name))
