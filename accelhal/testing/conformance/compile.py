"""torch.compile: the backend ``get_compile_backend`` names, and the reason ``compile_backend_choice`` gives."""

from __future__ import annotations

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.compile_backend import SOURCES, CompileChoice
from accelhal.testing.conformance.base import SuiteBase, expect, expect_type


class CompileTests(SuiteBase):
    """``get_compile_backend`` answers a name, and ``compile_backend_choice`` says why; both without compiling."""

    def test_compile_backend_and_its_reason(self, accelerator: Accelerator) -> None:
        name = accelerator.get_compile_backend()
        expect_type(name, "get_compile_backend()", str)
        expect(bool(name), "get_compile_backend()", "a torch.compile backend name", name)
        choice = accelerator.compile_backend_choice()
        expect_type(choice, "compile_backend_choice()", CompileChoice)
        expect(choice.backend == name, "compile_backend_choice().backend", f"{name!r} (get_compile_backend())", choice)
        expect(bool(choice.reason), "compile_backend_choice().reason", "a sentence saying why", choice.reason)
        expect(choice.source in SOURCES, "compile_backend_choice().source", f"one of {SOURCES}", choice.source)
