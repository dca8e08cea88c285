"""Call-level derivative rules of MPI communication (Open MPI), after Enzyme's MPI support.

Each MPI call that moves floating-point data is a
:class:`~zymase.autodiff.registry.CallMemoryRule`; its derivative is C code in
``mpi_runtime.c`` (linked in after AD by ``frontends/c.py``), which also says how each
derivative message is formed. Here:

* which operands are buffers read and written, and that a receive's buffer gets a shadow
  whatever this rank's inputs are (:meth:`receives`: the data may be active on the peer);
* compile-time checks: the datatype is ``MPI_DOUBLE`` or ``MPI_FLOAT`` (Open MPI's handles
  are the addresses of the globals ``ompi_mpi_double`` / ``ompi_mpi_float``; integer
  datatypes carry no derivative and the call is left alone), reductions use ``MPI_SUM``,
  ``MPI_MAX`` or ``MPI_MIN`` (the rank holding the extremum taped: :class:`ReductionRule`),
  no ``MPI_ANY_SOURCE``/``MPI_ANY_TAG``/``MPI_IN_PLACE`` where the derivative needs the
  envelope or separate buffers (checked again at run time when they are not constants);
* forward mode: ``__zymase_mpi_<call>_fwd`` after the primal call (before it for a wait),
  the tangent message;
* reverse mode: ``__zymase_mpi_<call>_rev`` at the mirror point; non-blocking calls record
  their request in the forward sweep (``*_record``, ``*_take`` at the wait), the reverse of
  the wait starts the adjoint message and the reverse of the isend/irecv completes it.

Communicators, ranks, counts and tags are constant; ``MPI_Barrier`` is mirrored in the
reverse sweep. A communicator the function makes and frees (``MPI_Comm_split`` ...
``MPI_Comm_free``) is freed in the reverse sweep instead, at the mirror of the call that
made it, since the derivative messages still use it (:func:`deferred_communicator_frees`).

Vector mode (width N): the generators call each rule once per lane (:meth:`lane_by_lane`);
the rule gathers the lanes' shadows and the last lane emits one ``*_lanes`` runtime call
(``mpi_lanes.h``) with an array of the N lanes' shadows per buffer: one derivative message
per primal message carrying every lane (packed, N x count elements), forward and reverse,
collectives included (MPI_SUM applies to the packed lanes element by element). What belongs
to the primal call is done once: the MAX/MIN owners (lane 0, freed after the last lane), a
non-blocking request's record (one for all lanes, so the waits are width 1's, on lane 0) and
the reverse sweep's barrier. Every rank calls the derivative at the same width, so both sides
of a message pack the same way. An MPI call without a rule that touches active data or moves
floating-point data is refused (:func:`refusal`).
"""

from __future__ import annotations

from pathlib import Path

from zymase.analysis.memory import callee_name
from zymase.analysis.op_classes import is_a
from zymase.autodiff.registry import REGISTRY, CallMemoryRule
from zymase.errors import ZymaseError
from zymase.ir import IntegerAttr, Operation, SSAValue, i32, llvm, location_of

PTR = llvm.LLVMPointerType()
RUNTIME_PREFIX = "__zymase_mpi_"
RUNTIME_SOURCE = Path(__file__).with_name("mpi_runtime.c")

#: Open MPI's predefined datatypes that carry derivatives: global -> (kind in the runtime,
#: element type in analysis/types.py's names, size)
FLOAT_DATATYPES = {"ompi_mpi_double": (0, "f64", 8), "ompi_mpi_float": (1, "f32", 4)}
#: Open MPI's integer and byte datatypes: no derivative moves with them
INTEGER_DATATYPES = frozenset(f"ompi_mpi_{n}" for n in (
    "char", "signed_char", "unsigned_char", "byte", "packed", "short", "unsigned_short", "int", "unsigned",
    "long", "unsigned_long", "long_long_int", "unsigned_long_long", "int8_t", "uint8_t", "int16_t",
    "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "c_bool", "cxx_bool", "wchar", "aint",
    "offset", "count", "2int"))
MPI_SUM = "ompi_mpi_op_sum"
#: reductions whose result is one rank's value per element (that rank's is the derivative)
EXTREMA = ("ompi_mpi_op_max", "ompi_mpi_op_min")
ANY = -1  # MPI_ANY_SOURCE, MPI_ANY_TAG
ONE_SIDED = ("MPI_Put", "MPI_Get", "MPI_Accumulate", "MPI_Get_accumulate", "MPI_Fetch_and_op",
             "MPI_Compare_and_swap", "MPI_Rput", "MPI_Rget", "MPI_Raccumulate", "MPI_Rget_accumulate")
#: ways to complete a request other than MPI_Wait/MPI_Waitall: the derivative message of an
#: isend/irecv would not be completed with it (its record is taken at the wait)
OTHER_COMPLETIONS = ("MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome", "MPI_Waitany", "MPI_Waitsome",
                     "MPI_Request_free", "MPI_Cancel")
#: MPI functions that take a datatype but move no data (sizes, counts, derived datatypes)
QUERIES = ("MPI_Type_", "MPI_Get_count", "MPI_Get_elements", "MPI_Pack_size", "MPI_Sizeof")


def _global(v: SSAValue) -> str | None:
    """The global whose address ``v`` is (a predefined handle), if it is one."""
    owner = v.owner
    if isinstance(owner, llvm.AddressOfOp):
        return owner.global_name.root_reference.data
    return None


def _constant_int(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, llvm.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    if isinstance(owner, llvm.IntToPtrOp):
        return _constant_int(owner.operands[0])
    return None


class MpiRule(CallMemoryRule):
    """One MPI call. ``params`` names the operand positions the derivative uses:
    ``buf`` (``sbuf``/``rbuf``), ``count``, ``dt``, ``peer`` (``dest``/``src``), ``tag``,
    ``root``, ``op``, ``comm``, ``req``; ``read``/``written`` name the buffers."""

    def __init__(self, name: str, params: dict[str, int], read=(), written=(), others_written=()):
        self.name = name
        self.params = params
        self.read = read
        self.written = written
        self.others_written = others_written  # request and status operands

    def _p(self, op: Operation, name: str) -> SSAValue:
        return op.operands[self.params[name]]

    # ---- datatype ----------------------------------------------------------------------
    def datatype(self, op: Operation) -> str | None:
        """The datatype's global when it is a predefined one, else None."""
        if "dt" not in self.params or len(op.operands) <= self.params["dt"]:
            return None
        return _global(self._p(op, "dt"))

    def moves_floats(self, op: Operation) -> bool:
        """Whether the call moves data that may carry derivatives (anything but an integer
        datatype: a datatype the rule cannot name is refused by :meth:`check`)."""
        return "dt" in self.params and self.datatype(op) not in INTEGER_DATATYPES

    # ---- what the call reads and writes --------------------------------------------------
    def reads(self, op):
        return [self.params[b] for b in self.read if self.moves_floats(op)]

    def writes(self, op):
        return [self.params[b] for b in self.written] + [i for i in self.others_written if i < len(op.operands)]

    def float_outputs(self, op):
        return [self.params[b] for b in self.written] if self.moves_floats(op) else []

    def receives(self, op):
        return bool(self.written) and self.moves_floats(op)

    def pointee_types(self, op):
        dt = self.datatype(op)
        if dt not in FLOAT_DATATYPES:
            return {}
        _, element, size = FLOAT_DATATYPES[dt]
        return {self.params[b]: (element, size) for b in (*self.read, *self.written)}

    def check(self, op: Operation) -> None:
        if not self.moves_floats(op):
            return
        dt = self.datatype(op)
        if dt not in FLOAT_DATATYPES:
            what = f"the datatype '{dt}'" if dt else "a datatype that is not a predefined constant"
            self._refuse(op, f"moves data of {what}; zymase differentiates MPI messages of MPI_DOUBLE and MPI_FLOAT",
                         "send doubles or floats with MPI_DOUBLE or MPI_FLOAT (not a derived or runtime-chosen datatype)")
        if "rdt" in self.params and _global(self._p(op, "rdt")) != dt:
            self._refuse(op, "sends and receives different datatypes; zymase differentiates messages whose two "
                         "sides have the same one", "send and receive the same datatype (MPI_DOUBLE or MPI_FLOAT)")
        if "op" in self.params and _global(self._p(op, "op")) not in (MPI_SUM, *EXTREMA):
            reduction = (_global(self._p(op, "op")) or "a runtime-chosen operation").replace("ompi_mpi_op_", "MPI_").upper()
            self._refuse(op, f"reduces with {reduction}; zymase differentiates MPI reductions with MPI_SUM, MPI_MAX "
                         "and MPI_MIN", "reduce with one of them, or keep this reduction off the differentiated data")
        if "sbuf" in self.params and _constant_int(self._p(op, "sbuf")) == 1:
            self._refuse(op, "passes MPI_IN_PLACE, which zymase does not differentiate",
                         "pass separate send and receive buffers")
        for name in ("src", "tag") if "src" in self.params else ():
            if _constant_int(self._p(op, name)) == ANY:
                self._refuse(op, f"receives with MPI_ANY_{'SOURCE' if name == 'src' else 'TAG'}; the derivative "
                             "message must name the same peer and tag", "receive from a named rank with a named tag")

    def _refuse(self, op: Operation, what: str, hint: str) -> None:
        raise ZymaseError(f"the call to '{self.name}' {what}", construct=f"call @{self.name}",
                          location=location_of(op), hint=hint)

    # ---- generated code ----------------------------------------------------------------
    def _kind(self, op: Operation) -> int:
        return FLOAT_DATATYPES[self.datatype(op)][0]

    def _const(self, g, value: int) -> SSAValue:
        return g.E.v(llvm.ConstantOp(IntegerAttr(value, i32), i32))

    def _call(self, g, suffix: str, args: list[SSAValue], result=None) -> SSAValue | None:
        """A call to the runtime's ``__zymase_mpi_<suffix>`` where the emitter stands."""
        name = f"{RUNTIME_PREFIX}{suffix}"
        g._declare(name, [a.type for a in args], result or llvm.LLVMVoidType())
        if result is None:
            g.E.insert(llvm.CallOp(name, *args))
            return None
        return g.E.v(llvm.CallOp(name, *args, return_type=result))

    def _shadow(self, g, op: Operation, name: str, *, reverse: bool) -> SSAValue:
        """The shadow of buffer ``name``, or a null pointer when it has none here."""
        v = self._p(op, name)
        if v in g.act.shadowed:
            return g.fetch_shadow(v) if reverse else g.shadow_of(v)
        return g.E.v(llvm.ZeroOp.build(result_types=[PTR]))

    def _value(self, g, op: Operation, name: str, *, reverse: bool) -> SSAValue:
        v = self._p(op, name)
        return g.primal(v) if reverse else g.vmap.get(v, v)

    def _args(self, g, op: Operation, layout: str, *, reverse: bool) -> list[SSAValue]:
        """The runtime call's arguments, by a layout like ``"d:buf count dt kind peer tag comm"``
        (``d:x`` the shadow of buffer x, ``kind`` the element kind)."""
        out = []
        for item in layout.split():
            if item.startswith("d:"):
                out.append(self._shadow(g, op, item[2:], reverse=reverse))
            elif item == "kind":
                out.append(self._const(g, self._kind(op)))
            else:
                out.append(self._value(g, op, item, reverse=reverse))
        return out

    def _emit(self, g, op: Operation, suffix: str, layout: str, *, reverse: bool, extra=lambda: [],
              result=None) -> SSAValue | None:
        """The runtime call ``suffix`` by ``layout`` (then ``extra()``'s values): at width 1
        on this lane's shadows; at width N, once, on the last lane (None before it):
        ``<suffix>_lanes`` with each shadow argument an array of every lane's shadows and the
        width last (one message for all lanes, mpi_lanes.h)."""
        if g.width == 1:
            return self._call(g, suffix, [*self._args(g, op, layout, reverse=reverse), *extra()], result)
        items = layout.split()
        lanes = g.gathered((op, reverse),
                           [self._shadow(g, op, item[2:], reverse=reverse) for item in items if item.startswith("d:")])
        if lanes is None:
            return None
        arrays = iter([g.pointer_array([lane[j] for lane in lanes]) for j in range(len(lanes[0]))])
        args = [next(arrays) if item.startswith("d:") else self._args(g, op, item, reverse=reverse)[0]
                for item in items]
        return self._call(g, f"{suffix}_lanes", [*args, *extra(), self._const(g, g.width)], result)

    #: the runtime's argument layout of this call (blocking calls)
    layout = ""

    def _checked(self, g, op: Operation) -> bool:
        """Whether the call has a derivative (it moves floats), after the checks."""
        if not self.moves_floats(op):
            return False
        try:
            self.check(op)
        except ZymaseError as err:
            err.function = err.function or g.fname
            raise
        return True

    def structure(self, g, op, clone, *, forward_mode):
        if forward_mode and self._checked(g, op):
            self._emit(g, op, f"{self.suffix}_fwd", self.layout, reverse=False)

    def reverse_memory(self, g, op):
        if self._checked(g, op):
            self._emit(g, op, f"{self.suffix}_rev", self.layout, reverse=True)

    @property
    def suffix(self) -> str:
        return self.name.removeprefix("MPI_").lower()

    def lane_by_lane(self, op: Operation) -> bool:
        """Vector mode: the generators call the rule once per lane; the last lane sends one
        message for every lane (:meth:`_emit`, the module's docstring)."""
        return True

    @staticmethod
    def _free_after_last_lane(g, pointer: SSAValue) -> None:
        """Free what lane 0 made for every lane, once the last lane has used it."""
        if g.lane_index == g.width - 1:
            g._declare("free", [PTR], llvm.LLVMVoidType())
            g.E.insert(llvm.CallOp("free", pointer))


class ReductionRule(MpiRule):
    """``MPI_Reduce``/``MPI_Allreduce``: with ``MPI_SUM`` as :class:`MpiRule`; with
    ``MPI_MAX``/``MPI_MIN`` the rank whose value is the result gets the derivative: which
    one (per element) is found right after the primal call and taped (``*_extremum_record``,
    both ranks' values compared with the result; the lowest rank among ties)."""

    def _extremum(self, op: Operation) -> bool:
        return _global(self._p(op, "op")) in EXTREMA

    def _root(self) -> str:
        return " root" if "root" in self.params else ""

    def structure(self, g, op, clone, *, forward_mode):
        if not self._checked(g, op):
            return
        if not self._extremum(op):
            return super().structure(g, op, clone, forward_mode=forward_mode)
        records = g.__dict__.setdefault("_mpi_records", {})
        if g.lane_index == 0:  # the owners, found once for every lane (a collective: every rank finds them)
            args = self._args(g, op, f"sbuf rbuf count dt kind{self._root()} comm", reverse=False)
            records[op] = self._call(g, f"{self.suffix}_extremum_record", args, PTR)
        if forward_mode:
            self._emit(g, op, f"{self.suffix}_extremum_fwd", f"d:sbuf d:rbuf count dt kind{self._root()} comm",
                       reverse=False, extra=lambda: [records[op]])
            self._free_after_last_lane(g, records[op])

    def reverse_memory(self, g, op):
        if not self._checked(g, op):
            return
        if not self._extremum(op):
            return super().reverse_memory(g, op)
        owners = []  # fetched where the call is emitted (at width N, on the last lane only)

        def fetch_owners() -> list[SSAValue]:
            owners.append(g.fetch_computed_in(op.parent_block(), g._mpi_records[op]))
            return owners

        self._emit(g, op, f"{self.suffix}_extremum_rev", f"d:sbuf d:rbuf count dt kind{self._root()} comm",
                   reverse=True, extra=fetch_owners)
        if owners:
            self._free_after_last_lane(g, owners[0])


class NonBlockingRule(MpiRule):
    """``MPI_Isend``/``MPI_Irecv``: forward mode starts the tangent message beside the
    primal one; reverse mode records the request in the forward sweep and, at the mirror
    point (after the reverse of its wait started the adjoint message), completes it. At
    width N one message and one record carry every lane."""

    layout = "d:buf count dt kind peer tag comm req"

    def structure(self, g, op, clone, *, forward_mode):
        if not self._checked(g, op):
            return
        if forward_mode:
            self._emit(g, op, f"{self.suffix}_fwd", self.layout, reverse=False)
        elif (rec := self._emit(g, op, f"{self.suffix}_record", self.layout, reverse=False, result=PTR)) is not None:
            g.__dict__.setdefault("_mpi_records", {})[op] = rec

    def reverse_memory(self, g, op):
        if not self._checked(g, op) or g.lane_index > 0:
            return  # one record for every lane
        rec = g.fetch_computed_in(op.parent_block(), g._mpi_records[op])
        self._call(g, "request_rev", [rec])


class WaitRule(MpiRule):
    """``MPI_Wait``/``MPI_Waitall``: forward mode completes the tangent messages (before
    the primal wait clears the handles); reverse mode takes the requests' records in the
    forward sweep and starts their adjoint messages at the mirror point. A request has one
    record for all lanes (:class:`NonBlockingRule`), so at width N the wait is width 1's,
    on lane 0."""

    def moves_floats(self, op):
        return False  # the buffers belong to the isend/irecv

    def _handles(self, g, op: Operation) -> list[SSAValue]:
        return [g.vmap.get(v, v) for v in op.operands[: 2 if self.name == "MPI_Waitall" else 1]]

    def structure(self, g, op, clone, *, forward_mode):
        if g.lane_index > 0:
            return  # lane 0 completed or took the record of every lane
        g.E.before(clone)
        if forward_mode:
            self._call(g, f"{self.suffix}_fwd", self._handles(g, op))
        else:
            g.__dict__.setdefault("_mpi_records", {})[op] = self._call(g, f"{self.suffix}_take", self._handles(g, op),
                                                                       PTR)
        if clone.next_op is not None:
            g.E.before(clone.next_op)
        else:
            g.E.at_end(clone.parent_block())

    def reverse_memory(self, g, op):
        if g.lane_index > 0:
            return  # lane 0 started every lane's adjoint messages
        args = [g.fetch_computed_in(op.parent_block(), g._mpi_records[op])]
        if self.name == "MPI_Waitall":
            args = [g.primal(op.operands[0]), *args]
        self._call(g, f"{self.suffix}_rev", args)


class BarrierRule(MpiRule):
    """``MPI_Barrier``: mirrored in the reverse sweep (the adjoint program synchronizes
    where the primal did, in reverse order)."""

    def structure(self, g, op, clone, *, forward_mode):
        pass

    def reverse_memory(self, g, op):
        if g.lane_index > 0:
            return  # one barrier for every lane
        comm = g.primal(op.operands[0])
        g._declare(self.name, [PTR], i32)
        g.E.v(llvm.CallOp(self.name, comm, return_type=i32))


def _register() -> None:
    p2p = dict(buf=0, count=1, dt=2, tag=4, comm=5)
    send = MpiRule("MPI_Send", {**p2p, "peer": 3}, read=("buf",))
    recv = MpiRule("MPI_Recv", {**p2p, "peer": 3, "src": 3}, written=("buf",), others_written=(6,))
    for rule in (send, recv):
        rule.layout = "d:buf count dt kind peer tag comm"
    sendrecv = MpiRule("MPI_Sendrecv", dict(sbuf=0, scount=1, dt=2, dest=3, stag=4, rbuf=5, rcount=6, rdt=7,
                                            src=8, tag=9, comm=10), read=("sbuf",), written=("rbuf",),
                       others_written=(11,))
    sendrecv.layout = "d:sbuf scount dest stag d:rbuf rcount src tag dt kind comm"
    bcast = MpiRule("MPI_Bcast", dict(buf=0, count=1, dt=2, root=3, comm=4), read=("buf",), written=("buf",))
    bcast.layout = "d:buf count dt kind root comm"
    reduce = ReductionRule("MPI_Reduce", dict(sbuf=0, rbuf=1, count=2, dt=3, op=4, root=5, comm=6),
                     read=("sbuf",), written=("rbuf",))
    reduce.layout = "d:sbuf d:rbuf count dt kind root comm"
    allreduce = ReductionRule("MPI_Allreduce", dict(sbuf=0, rbuf=1, count=2, dt=3, op=4, comm=5),
                        read=("sbuf",), written=("rbuf",))
    allreduce.layout = "d:sbuf d:rbuf count dt kind comm"
    isend = NonBlockingRule("MPI_Isend", {**p2p, "peer": 3, "req": 6}, read=("buf",), others_written=(6,))
    irecv = NonBlockingRule("MPI_Irecv", {**p2p, "peer": 3, "src": 3, "req": 6}, written=("buf",),
                            others_written=(6,))
    blocks = dict(sbuf=0, scount=1, dt=2, rbuf=3, rcount=4, rdt=5)
    gather = MpiRule("MPI_Gather", {**blocks, "root": 6, "comm": 7}, read=("sbuf",), written=("rbuf",))
    scatter = MpiRule("MPI_Scatter", {**blocks, "root": 6, "comm": 7}, read=("sbuf",), written=("rbuf",))
    for rule in (gather, scatter):
        rule.layout = "d:sbuf scount d:rbuf rcount dt kind root comm"
    allgather = MpiRule("MPI_Allgather", {**blocks, "comm": 6}, read=("sbuf",), written=("rbuf",))
    allgather.layout = "d:sbuf scount d:rbuf rcount dt kind comm"
    wait = WaitRule("MPI_Wait", {}, others_written=(0, 1))
    waitall = WaitRule("MPI_Waitall", {}, others_written=(1, 2))
    barrier = BarrierRule("MPI_Barrier", {"comm": 0})
    for rule in (send, recv, sendrecv, bcast, reduce, allreduce, gather, scatter, allgather, isend, irecv, wait,
                 waitall, barrier):
        REGISTRY.register_call_rule(rule.name, rule)


_register()


#: the calls that make a communicator -> the position of their ``MPI_Comm *`` result
COMMUNICATOR_MAKERS = {"MPI_Comm_dup": 1, "MPI_Comm_split": 3, "MPI_Comm_create": 2, "MPI_Comm_split_type": 4,
                       "MPI_Comm_create_group": 3, "MPI_Cart_create": 5, "MPI_Cart_sub": 2, "MPI_Graph_create": 5,
                       "MPI_Dist_graph_create_adjacent": 9}
COMMUNICATOR_FREES = ("MPI_Comm_free", "MPI_Comm_disconnect")


def deferred_communicator_frees(gen) -> dict[Operation, Operation]:
    """In a reverse-mode derivative (``gen``, the reverse generator) of a function that
    makes MPI calls with rules: the call that made a communicator -> the
    ``MPI_Comm_free`` of it, which the reverse sweep runs at that call's mirror instead of
    the forward sweep running it. The derivative messages of the reverse sweep use the
    communicators the forward sweep used, and Open MPI's handle is a pointer to the freed
    object (a segfault, session 32). As a free of memory is moved
    (``WrittenMemory._find_deferred_frees``): both calls run once per call of the function
    (outside loops, on every path to its exit), the making one first, on the same handle
    variable, freed once. Any other free of a communicator there is refused."""
    calls = [op for b in gen.p.region.blocks for op in b.ops if is_a(op, llvm.CallOp)]
    frees = [op for op in calls if callee_name(op) in COMMUNICATOR_FREES]
    if not frees or not any((n := callee_name(op) or "").startswith("MPI_") and n in REGISTRY.call_rules
                            for op in calls):
        return {}
    cfg, exit_ = gen.cfg, gen.p.exit

    def once(op: Operation) -> bool:
        return op.parent_block() not in cfg.in_cycle and cfg.dominates(op.parent_block(), exit_)

    def handle(op: Operation, position: int):
        roots = gen._roots(op.operands[position]) if len(op.operands) > position else None
        return frozenset(roots) if roots else None

    made: dict = {}
    for op in calls:
        position = COMMUNICATOR_MAKERS.get(callee_name(op) or "")
        if position is not None and (h := handle(op, position)) is not None:
            made.setdefault(h, []).append(op)
    freed: dict = {}
    for op in frees:
        freed.setdefault(handle(op, 0), []).append(op)
    deferred = {}
    for free in frees:
        h = handle(free, 0)
        makers = made.get(h, []) if h is not None else []
        maker = makers[0] if len(makers) == 1 else None
        if (gen.split or maker is None or len(freed[h]) != 1 or not once(maker) or not once(free)
                or not cfg.dominates(maker.parent_block(), free.parent_block())):
            raise ZymaseError(
                f"'{callee_name(free)}' frees a communicator in a function whose derivative sends MPI "
                "messages: the reverse sweep's messages would use it after it is freed",
                construct=f"call @{callee_name(free)}",
                function=gen.fname,
                location=location_of(free),
                hint="free the communicator after the derivative call returns, or make and free it once per "
                "call of the function, outside loops (then zymase frees it after the reverse sweep)",
            )
        deferred[maker] = free
    return deferred


def supported_names() -> str:
    return ", ".join(sorted(REGISTRY.call_rules[n].name for n in REGISTRY.call_rules if n.startswith("MPI_")))


def refusal(op: Operation, name: str, touches_active: bool) -> ZymaseError | None:
    """The error for a call to an MPI function without a rule (``name``) in a function
    being differentiated, when it touches active data or moves floating-point data (which
    may be active on another rank); None for the others (``MPI_Comm_rank``, ...)."""
    if not name.startswith(("MPI_", "PMPI_")) or name in REGISTRY.call_rules or name.startswith(QUERIES):
        return None
    floats = [g for o in op.operands if (g := _global(o)) is not None and g not in INTEGER_DATATYPES
              and g.startswith("ompi_mpi_") and not g.startswith(("ompi_mpi_comm_", "ompi_mpi_op_", "ompi_mpi_group_",
                                                                 "ompi_mpi_info_", "ompi_mpi_errors_", "ompi_mpi_win_"))]
    if name in OTHER_COMPLETIONS:
        return ZymaseError(
            f"'{name}' completes a request in a function being differentiated; zymase pairs each "
            "MPI_Isend/MPI_Irecv with its derivative message at an MPI_Wait or MPI_Waitall",
            construct=f"call @{name}",
            location=location_of(op),
            hint="complete the requests with MPI_Wait or MPI_Waitall",
        )
    if not touches_active and not floats and not name.startswith(("MPI_Win_", *ONE_SIDED)):
        return None
    what = "one-sided MPI communication" if name.startswith(("MPI_Win_", *ONE_SIDED)) else "an MPI call"
    return ZymaseError(
        f"no derivative rule for '{name}' ({what}), which "
        + ("is passed active data" if touches_active else "moves floating-point data that may be active on another rank"),
        construct=f"call @{name}",
        location=location_of(op),
        hint=f"zymase differentiates these MPI calls: {supported_names()}; use them, or keep this call "
        "out of the differentiated function",
    )
