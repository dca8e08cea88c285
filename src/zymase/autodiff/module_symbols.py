"""A module's top-level symbol (function, global) by name, without a scan of the
module per lookup.

Derivatives declare the C functions they call (``free``, ``write``, libm), and add
messages and runtime helpers once per module, asking each time whether the symbol is
there already. A scan of the module's ops per request made that quadratic: at -O0 on
tests/cxx/library_mix.cpp, about 1,000 requests over modules of hundreds of functions
were 7% of AD. The index kept here is built by one scan and checked on every hit, so
that ops added, erased or renamed behind its back are still seen as a scan would see
them: a hit counts only while its op is in the module under that name, and a miss
scans again."""

from __future__ import annotations

from weakref import WeakKeyDictionary, ref

from zymase.ir import Block, Operation

#: per module body, its top-level ops by symbol name (the first of a name) at the last
#: scan; weakly both ways, so that the index keeps no module alive (the ops point to
#: their block: strong references to them would keep the key alive, in the Python API's
#: process, for good)
_index: WeakKeyDictionary[Block, dict[str, ref[Operation]]] = WeakKeyDictionary()


def find_symbol(module: Operation, name: str) -> Operation | None:
    """The op of ``module``'s body named ``name`` (``sym_name``), or None."""
    block = module.body.block
    symbols = _index.get(block)
    if symbols is not None:
        known = symbols.get(name)
        op = known() if known is not None else None
        if op is not None and op.parent is block and op.sym_name.data == name:
            return op
    symbols = {}
    found = None
    for op in block.ops:
        sym = getattr(op, "sym_name", None)
        if sym is not None and sym.data not in symbols:
            symbols[sym.data] = ref(op)
            if sym.data == name:
                found = op
    _index[block] = symbols
    return found
