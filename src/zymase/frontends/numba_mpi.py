"""MPI calls made through the ``numba-mpi`` package in njit code, named for the MPI rules.

numba-mpi calls libmpi through ctypes function pointers, which Numba lowers to a call
through a global holding the function's address (``@numba.dynamic.globals.<id> = global
ptr inttoptr (i64 <address> to ptr)``), and passes Open MPI's handles (``MPI_DOUBLE``,
``MPI_COMM_WORLD``, ``MPI_SUM``) as values loaded at run time from mpi4py's objects
(``load i64, ptr inttoptr (i64 <address> to ptr)``). The MPI rules
(``autodiff/rules/mpi.py``) recognize calls by the callee's name and handles by the
global they are the address of, so before AD this module rewrites both, with tables
built at compile time in this process:

* each ctypes function numba-mpi holds (``_MPI_Allreduce`` ...), by its address, becomes
  a direct call of the libmpi symbol (``@MPI_Allreduce``);
* each address numba-mpi reads a handle from (its datatype table, ``Operator``,
  ``_MPI_Comm_World_ptr``) is read now; the handle is the address of one of Open MPI's
  predefined objects, found by comparing it with libmpi's symbols, and the load becomes
  that symbol's address (``@ompi_mpi_double``). Predefined handles are constant for the
  life of the process, so this is the value the load would give.

The rewritten IR holds no process address of libmpi or mpi4py (the disk cache may keep
it); the JIT resolves the MPI symbols from the libmpi numba-mpi loaded
(:func:`load_libmpi`). Only in processes that imported ``numba_mpi``: without it, no
njit code can call it and nothing here runs.
"""

from __future__ import annotations

import ctypes
import re
import sys
from functools import cache

#: Open MPI's predefined objects numba-mpi passes handles of: the datatypes it maps NumPy
#: dtypes to, its reduction operators, ``MPI_COMM_WORLD``
_HANDLE_SYMBOLS = (
    "ompi_mpi_double", "ompi_mpi_float", "ompi_mpi_char", "ompi_mpi_int32_t", "ompi_mpi_int64_t",
    "ompi_mpi_c_float_complex", "ompi_mpi_c_double_complex", "ompi_mpi_c_complex",
    "ompi_mpi_op_sum", "ompi_mpi_op_max", "ompi_mpi_op_min", "ompi_mpi_op_prod",
    "ompi_mpi_comm_world", "ompi_mpi_comm_self")

_DYNAMIC_GLOBAL = re.compile(
    r"^(@numba\.dynamic\.globals\.[0-9a-f]+) = [^\n]*?global ptr inttoptr \(i64 (\d+) to ptr\)[^\n]*$", re.M)
_CONSTANT_LOAD = re.compile(r"load i64, ptr inttoptr \(i64 (\d+) to ptr\)(?:, align \d+)?")


def in_use() -> bool:
    """Whether numba-mpi is loaded in this process (njit code can call it only then)."""
    return "numba_mpi" in sys.modules


@cache
def _libmpi():
    from numba_mpi import common

    return common.libmpi, common.LIB


@cache
def _functions() -> dict[int, tuple[str, str]]:
    """Address of each libmpi function numba-mpi calls -> (MPI name, numba_mpi function)."""
    import numba_mpi

    out = {}
    for modname, module in list(sys.modules.items()):
        if not modname.startswith("numba_mpi."):
            continue
        for value in vars(module).values():
            name = getattr(value, "__name__", "")
            if isinstance(value, ctypes._CFuncPtr) and name.startswith("MPI_"):
                out[ctypes.cast(value, ctypes.c_void_p).value] = (name, _numba_mpi_name(name, numba_mpi))
    return out


def _numba_mpi_name(mpi_name: str, numba_mpi) -> str:
    """The numba_mpi function that calls ``mpi_name`` (``MPI_Allreduce`` -> allreduce)."""
    short = mpi_name.removeprefix("MPI_").lower()
    for candidate in (short, short.removeprefix("comm_")):
        if callable(getattr(numba_mpi, candidate, None)):
            return f"numba_mpi.{candidate}"
    return mpi_name


@cache
def _handles() -> dict[int, str]:
    """Address numba-mpi reads a handle from -> the Open MPI object the handle names."""
    from numba_mpi import common
    from numba_mpi.api.operator import Operator

    libmpi, _ = _libmpi()
    by_value = {}
    for symbol in _HANDLE_SYMBOLS:
        try:
            by_value[ctypes.addressof(ctypes.c_char.in_dll(libmpi, symbol))] = symbol
        except ValueError:
            continue  # not in this Open MPI (or not Open MPI): left as a load
    sources = [*common._MPI_DTYPES.values(), *(int(op) for op in Operator), common._MPI_Comm_World_ptr]
    out = {}
    for address in sources:
        handle = ctypes.c_void_p.from_address(address).value
        if handle in by_value:
            out[address] = by_value[handle]
    return out


def name_mpi_calls(text: str) -> str:
    """numba-mpi's calls through ctypes pointers made direct calls of the MPI functions,
    and its handle loads the addresses of Open MPI's objects (module docstring). Run
    after inlining (the loads and calls sit in the user's function then) and followed by
    instcombine, which folds the loads of the now-constant globals into direct calls."""
    if not in_use():
        return text
    functions, handles = _functions(), _handles()
    named: dict[str, str] = {}  # dynamic global -> MPI function

    def callee(m: re.Match) -> str:
        found = functions.get(int(m.group(2)))
        if found is None:
            return m.group(0)
        named[m.group(1)] = found[0]
        return f"{m.group(1)} = internal unnamed_addr constant ptr @{found[0]}"

    text = _DYNAMIC_GLOBAL.sub(callee, text)
    used = {handles[int(a)] for a in _CONSTANT_LOAD.findall(text) if int(a) in handles}
    # `%x = load i64, ptr inttoptr (...)` -> `%x = add i64 ptrtoint (ptr @ompi_mpi_double to i64), 0`
    text = _CONSTANT_LOAD.sub(
        lambda m: f"add i64 ptrtoint (ptr @{handles[int(m.group(1))]} to i64), 0" if int(m.group(1)) in handles
        else m.group(0), text)
    decls = {name: _signature(text, glob, name) for glob, name in named.items()}
    lines = [d for name, d in sorted(decls.items()) if not re.search(rf"^declare [^\n]*@{name}\(", text, re.M)]
    lines += [f"@{s} = external global [0 x i8]" for s in sorted(used) if not re.search(rf"^@{s} = ", text, re.M)]
    return text + "\n" + "\n".join(lines) + "\n" if lines else text


_STATUS_CALL = re.compile(r"(call i32 @MPI_(?:Recv|Sendrecv|Wait|Waitall)\([^)]*, )ptr [^,)]+\)")


def ignore_statuses(text: str) -> str:
    """numba-mpi's ``recv``/``sendrecv``/``wait``/``waitall`` pass status buffers of 5 C
    ints (20 bytes) per status, which nothing reads, where Open MPI writes a 24-byte
    ``MPI_Status``: the last 4 bytes land past the allocation (harmless in Numba's
    padding, heap corruption once the derivative's allocations differ). The kernel passes
    ``MPI_STATUS_IGNORE``/``MPI_STATUSES_IGNORE`` (null pointers in Open MPI) instead; the
    buffers are local to numba-mpi's functions, so nothing else changes. Run on the direct
    calls :func:`name_mpi_calls` made, after instcombine."""
    return _STATUS_CALL.sub(r"\1ptr null)", text) if in_use() else text


def _signature(text: str, glob: str, name: str) -> str:
    """The declaration of MPI function ``name`` with the types of its calls through ``glob``
    (ctypes' argtypes, as Numba lowered them)."""
    for loaded in re.findall(rf"(%[\w.\"-]+) = load ptr, ptr {re.escape(glob)}\b", text):
        call = re.search(rf"call (\w+) {re.escape(loaded)}\(([^)]*)\)", text)
        if call:
            types = [arg.split()[0] for arg in call.group(2).split(", ") if arg]
            return f"declare {call.group(1)} @{name}({', '.join(types)})"
    return f"declare i32 @{name}(...)"


def numba_mpi_function(mpi_name: str) -> str | None:
    """The numba_mpi function whose call is ``mpi_name`` (for errors), if numba-mpi makes it."""
    if not in_use():
        return None
    for name, user in _functions().values():
        if name == mpi_name:
            return user
    return None


def load_libmpi(text: str) -> None:
    """Make the MPI symbols of a kernel resolvable by the JIT: the libmpi numba-mpi loaded."""
    if not in_use() or not re.search(r"@(MPI_\w+|ompi_mpi_\w+)\b", text):
        return
    import llvmlite.binding as ll

    ll.load_library_permanently(_libmpi()[1])



def in_numba_mpi_terms(err):
    """An MPI rule's refusal of a call numba-mpi made, naming the numba_mpi function the
    user called (``'MPI_Recv'`` -> ``'numba_mpi.recv' (MPI_Recv)``)."""
    from zymase.errors import ZymaseError

    called = re.search(r"@(MPI_\w+)", err.construct or "")
    user = numba_mpi_function(called.group(1)) if called else None
    if user is None:
        return err
    mpi_name = called.group(1)
    return ZymaseError(err.message.replace(f"'{mpi_name}'", f"'{user}' ({mpi_name})", 1),
                       construct=f"call of {user}", function=err.function, location=err.location, hint=err.hint)
