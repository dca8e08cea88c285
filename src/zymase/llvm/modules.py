"""LLVM modules for the toolchain's text-to-text steps (canonical printing, joining
modules with LLVM's linker, dropping dead globals): parsed, changed, verified and printed
in LLVM's release library when it is there (:mod:`zymase.llvm.libllvm`), in llvmlite's LLVM
otherwise; and this machine's target facts from the same place.

Why one place: ``zymase cc`` then never loads llvmlite's LLVM (0.07 s of loading, and its
parser and verifier carry assertions), and each step is written once for both libraries.
The two give the same text (LLVM 22 both; tests/python/test_release_llvm.py). A
:class:`Workspace` holds the modules of one step: modules linked together must come from
one (one LLVM context).
"""

from __future__ import annotations

import functools

from zymase.errors import ZymaseError
from zymase.llvm import libllvm

def _binding():
    from zymase.llvm.toolchain import _init_llvm, llvm

    _init_llvm()
    return llvm


@functools.cache
def host_triple() -> str:
    """The triple a module without one gets."""
    return libllvm.process_triple() if libllvm.available() else _binding().get_process_triple()


@functools.cache
def host_data_layout() -> str:
    """The data layout a module without one gets (the host triple's)."""
    if libllvm.available():
        return libllvm.data_layout(host_triple())
    from zymase.llvm.toolchain import target_machine

    return str(target_machine().target_data)


def host_cpu() -> tuple[str, str]:
    """This machine's CPU name and features (as llvmlite's ``flatten`` orders them)."""
    if libllvm.available():
        return libllvm.host_cpu()
    llvm = _binding()
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


class Workspace:
    """The modules of one step. ``fresh``: in llvmlite, a context of their own rather than
    the global one (where a struct type an earlier module defined would be renamed,
    ``%struct.S`` -> ``%struct.S.0``); the release library always gives one."""

    def __init__(self, *, fresh: bool = False):
        self.release = libllvm.available()
        #: LLVM's linkage kinds (``Linkage.internal`` ...) as this workspace's modules take
        #: them (both libraries number them as LLVM's C API does: they compare equal)
        self.Linkage = libllvm.Linkage if self.release else _binding().Linkage
        self._context = libllvm.Context() if self.release else None
        self._llvmlite_context = _binding().create_context() if fresh and not self.release else None

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._context is not None:
            self._context.dispose()
            self._context = None

    def parse(self, ll_text: str, *, fill_target: bool = True):
        """``ll_text`` parsed and verified (invalid IR is a :class:`ZymaseError`, in
        :func:`toolchain._parse`'s words); ``fill_target``: a module without a triple or a
        data layout gets the host's."""
        triple = host_triple() if fill_target else None
        layout = host_data_layout() if fill_target else None
        if self.release:
            try:
                module = self._context.parse(ll_text, triple=triple, data_layout=layout)
            except libllvm.LLVMError as exc:
                raise _invalid(str(exc)) from None
            problem = module.verify()
            if problem is not None:
                raise _invalid(problem)
            return module
        llvm = _binding()
        try:
            if self._llvmlite_context is not None:
                module = llvm.parse_assembly(ll_text, self._llvmlite_context)
            else:
                module = llvm.parse_assembly(ll_text)
            module.verify()
        except RuntimeError as exc:
            raise _invalid(str(exc)) from None
        if triple is not None and not module.triple:
            module.triple = triple
        if layout is not None and not module.data_layout:
            module.data_layout = layout
        return module

    def print(self, module) -> str:
        """The module's text, verified first (a module a step broke is an internal bug)."""
        problem = module.verify() if self.release else _llvmlite_problem(module)
        if problem is not None:
            raise RuntimeError(f"LLVM module does not verify after optimization: {problem}")
        return str(module)

    def link(self, module, other) -> None:
        """Link ``other`` into ``module`` (``other`` is consumed); a refusal of LLVM's
        linker is a RuntimeError with its message."""
        try:
            module.link_in(other)
        except libllvm.LLVMError as exc:
            raise RuntimeError(str(exc)) from None

    def drop_dead(self, module, *, prototypes: bool = False) -> None:
        """Remove the module's unused local globals (LLVM's GlobalDCE), and with
        ``prototypes`` the declarations nothing calls."""
        if self.release:
            module.run("globaldce,strip-dead-prototypes" if prototypes else "globaldce", opt=0)
            return
        from zymase.llvm.toolchain import target_machine

        llvm = _binding()
        pb = llvm.create_pass_builder(target_machine(opt=0), llvm.create_pipeline_tuning_options(0))
        pm = llvm.create_new_module_pass_manager()
        pm.add_global_dead_code_eliminate_pass()
        if prototypes:
            pm.add_strip_dead_prototype_pass()
        pm.run(module, pb)

    def detach(self, module):
        """``module`` freed on its own from now on (its workspace's other modules must be
        linked in or no longer needed): for :class:`toolchain.OptimizedIR`, which hands it to
        code generation after this workspace is gone."""
        if self.release:
            self._context.hand_over(module)
            self._context = None
        return module


def _llvmlite_problem(module) -> str | None:
    try:
        module.verify()
    except RuntimeError as exc:
        return str(exc)
    return None


def _invalid(message: str) -> ZymaseError:
    text = message.strip()
    # llvmlite prefixes LLVM's own diagnostic with a generic first line
    lines = [l for l in text.splitlines() if l.strip() and l.strip() != "LLVM IR parsing error"]
    first = lines[0].replace("<string>", "line") if lines else "parse failure"
    error = ZymaseError(
        f"invalid LLVM IR: {first}",
        hint="the IR must be LLVM 22 compatible (clang 14..22) and pass the verifier",
    )
    error.llvm_message = text  # (all of LLVM's report, for a caller that words its own)
    return error


def canonical(ll_text: str) -> str:
    """``ll_text`` as LLVM prints it (parsed, verified, printed)."""
    with Workspace() as space:
        return space.print(space.parse(ll_text))
