"""Laplacian mode's entry: the shadows of one Numba array allocation for all its live
lanes in one NRT allocation (a *lane block*), lane k's data ``k * stride`` bytes from
the first lane's, instead of a MemInfo, a zeroing and a free per lane.

Why: the entry carries N + 1 lanes (autodiff/laplacian.py), so each array the primal
allocates had N + 1 shadow allocations: 195 NRT allocations, zeroings and releases per
call of a two-layer MLP at d = 64. And the lanes of one array evenly spaced in one block
are the columns of one matrix, which the lanes-at-once gemv (rules/numba_linalg.py,
``xxgemv_fwd_lanes``) hands BLAS in place instead of packing and unpacking them.

How: the lanes share one MemInfo whose reference count starts at the number of lanes.
Each lane's reference-count calls mirror the primal's on its own array, so the count
reaches zero only after every lane's last release, which frees the block once. Lane k's
data pointer is the MemInfo's data plus k strides, added where the data pointer is
derived from the MemInfo (``NRT_MemInfo_data_fast``, memory.ShadowCode's ``derive``).
The offset can only be added where the derivation takes the allocation's result itself,
so a function shares blocks only when every data derivation in it does (or takes an
argument's MemInfo, which is never a block), and when it calls no defined function (whose
derivative would derive a shared MemInfo's data without the offset). Only the entry: its
results are floats, so no shared MemInfo leaves it.
"""

from __future__ import annotations

from zymase.analysis.memory import LANE_PART, NRT_DERIVE, callee_name
from zymase.ir import BlockArgument, IntegerAttr, Operation, OpResult, SSAValue, i8, i64, llvm

PTR = llvm.LLVMPointerType()

#: the allocators whose shadows may share a block: (size) or (size, alignment); not the
#: variable-size list MemInfo, whose destructor walks its items
_SHAREABLE = {"NRT_MemInfo_alloc_aligned", "NRT_MemInfo_alloc_safe_aligned", "NRT_MemInfo_alloc",
              "NRT_MemInfo_alloc_safe"}
#: lanes start at multiples of this many bytes (a cache line), or of the allocation's
#: alignment when larger
_LANE_ALIGN = 64
#: above this many bytes a lane's allocation is left as one block of the primal's size
#: (it fails, as the primal's did), so stride x lanes cannot overflow
_HUGE = 1 << 56
#: Numba's MemInfo starts with its reference count (a size_t: Numba's own NRT_incref
#: adds to the MemInfo's first word)
_REFCT_OFFSET = 0


class LaneBlocks:
    """Mixin of ForwardGenerator: lane blocks for the Laplacian entry's allocations."""

    def allocates_lane_block(self, op: Operation, clone: Operation) -> bool:
        """Emit the shadows of allocation ``op`` (its primal copy ``clone``, the emitter
        right after it) for every live lane as one block, if this function may; False
        (nothing emitted) otherwise."""
        if callee_name(op) not in _SHAREABLE or op not in self.act.shadow_allocations or not self._shares_blocks():
            return False
        lanes = [k for k in self.live_lanes(op)]
        if len(lanes) < 2:
            return False
        E = self.E
        size = self.primal(op.operands[0])
        unit = self._i64(_LANE_ALIGN)
        if len(op.operands) > 1:  # the aligned allocators: (size, alignment)
            align = E.v(llvm.ZExtOp(self.primal(op.operands[1]), i64))
            unit = E.select(E.v(llvm.ICmpOp(align, unit, IntegerAttr(8, i64))), align, unit)  # umax
        rounded = E.v(llvm.AddOp(size, E.v(llvm.SubOp(unit, self._i64(1)))))
        # an odd number of units: lanes a power of two apart (256 doubles: 2 KiB) fall in
        # the same few L1 sets when a loop reads every lane's element i, and evict each other
        odd = E.v(llvm.OrOp(E.v(llvm.UDivOp(rounded, unit)), self._i64(1)))
        stride = E.v(llvm.MulOp(odd, unit))
        total = E.v(llvm.MulOp(stride, self._i64(len(lanes))))
        # the size with one spare slot after the last lane, which a gemv whose x and y
        # lanes are whole blocks claims (claim_spare_slot); unused, LLVM drops it
        spared = E.v(llvm.AddOp(total, stride))
        huge = E.v(llvm.ICmpOp(size, self._i64(_HUGE), IntegerAttr(8, i64)))
        total = E.select(huge, size, total)
        spared = E.select(huge, size, spared)
        block = clone.clone()
        block.operands = [total, *clone.operands[1:]]
        E.insert(block)
        mi = block.results[0]
        count = E.v(llvm.GEPOp(mi, [_REFCT_OFFSET], i8))
        E.insert(llvm.StoreOp(self._i64(len(lanes)), count))
        self._declare("NRT_MemInfo_data_fast", [PTR], PTR)
        data = E.v(llvm.CallOp("NRT_MemInfo_data_fast", mi, return_type=PTR))
        self._memset_zero(data, total)
        self.__dict__.setdefault("lane_block_lanes", {})[mi] = (len(lanes), block, spared)
        positions = {}
        for position, _ in enumerate(self.live_lanes(op)):
            self.smap[op.results[0]] = mi
            positions[self.lane_index] = position
        self.__dict__.setdefault("lane_blocks", {})[op.results[0]] = (stride, positions)
        return True

    def _shares_blocks(self) -> bool:
        """Whether this function's allocations may share lane blocks (module docstring):
        the Laplacian entry, every data derivation taking an allocation's result or an
        argument, no defined callee."""
        known = self.__dict__.get("_shares_blocks_known")
        if known is None:
            known = self._shares_blocks_known = self.lane_liveness is not None and all(
                self._block_safe(op) for op in self.p.region.walk())
        return known

    def _block_safe(self, op: Operation) -> bool:
        if isinstance(op, llvm.CallOp) and self.ctx.defined_function(op) is not None:
            return False
        if callee_name(op) in NRT_DERIVE:
            mi = op.operands[0]
            if isinstance(mi, BlockArgument):
                return mi.block is self.p.region.blocks[0]
            return isinstance(mi, OpResult) and callee_name(mi.owner) in _SHAREABLE
        return True


def whole_block(g, lanes: list[SSAValue]) -> SSAValue | None:
    """The MemInfo of the lane block whose every lane ``lanes`` (one pointer per lane of
    ``g``, in lane order) are, each derived straight from the block's MemInfo (so evenly
    spaced, in order), or None."""
    blocks = g.__dict__.get("lane_block_lanes", {})
    mi = None
    for position, ptr in enumerate(lanes):
        if position and not (isinstance(ptr, OpResult) and isinstance(ptr.owner, llvm.GEPOp)
                             and LANE_PART in ptr.owner.attributes
                             and ptr.owner.attributes[LANE_PART].value.data == position):
            return None
        data = ptr.owner.operands[0] if position else ptr
        if not (isinstance(data, OpResult) and callee_name(data.owner) == "NRT_MemInfo_data_fast"):
            return None
        owner = data.owner.operands[0]
        if position == 0:
            mi = owner
        if owner is not mi or mi not in blocks or blocks[mi][0] != len(lanes):
            return None
    return mi


def claim_spare_slot(g, meminfo: SSAValue) -> None:
    """Allocate block ``meminfo`` with one slot more after its last lane, not zeroed, for
    the caller's own use (gemv's lanes-at-once runtime puts the primal x and y there, one
    more column of the lanes' gemm). A block too large to allocate stays so: its
    allocation fails as the primal's does, and no lane is ever read."""
    _, block, spared = g.__dict__["lane_block_lanes"][meminfo]
    block.operands = [spared, *block.operands[1:]]


def lane_data(g, meminfo: SSAValue, data: SSAValue) -> SSAValue:
    """The current lane's data in the block of ``meminfo`` (a primal allocation's
    result), given the block's data pointer ``data``; ``data`` itself if the allocation's
    shadows are not a block."""
    stride, positions = g.__dict__.get("lane_blocks", {}).get(meminfo, (None, None))
    if stride is None or positions[g.lane_index] == 0:
        return data
    E = g.E
    position = positions[g.lane_index]
    offset = E.v(llvm.MulOp(stride, g._i64(position)))
    part = llvm.GEPOp(data, [llvm.GEP_USE_SSA_VAL], i8, ssa_indices=[offset])
    # the lanes' parts never overlap: each gets its own alias scope (transforms/alias_scopes)
    part.attributes[LANE_PART] = IntegerAttr(position, i64)
    return E.v(part)
