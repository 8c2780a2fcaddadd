"""Op builders: an unknown name gives the documented ``NotImplementedBuilder`` whose use raises."""

from __future__ import annotations

import pytest

from accelhal.contract.accelerator import Accelerator
from accelhal.errors import UnsupportedFeatureError
from accelhal.ops import NotImplementedBuilder
from accelhal.testing.conformance.base import SuiteBase, expect, expect_type

UNKNOWN = "NoSuchConformanceOpBuilder"


class OpBuilderTests(SuiteBase):
    """``get_op_builder``, ``create_op_builder`` and ``op_builder_dir``."""

    def test_unknown_builder_class(self, accelerator: Accelerator) -> None:
        builder = accelerator.get_op_builder(UNKNOWN)
        expect(
            isinstance(builder, type) and issubclass(builder, NotImplementedBuilder),
            f"get_op_builder({UNKNOWN!r})",
            "a subclass of accelhal.ops.NotImplementedBuilder",
            builder,
        )

    def test_unknown_builder_raises_on_load(self, accelerator: Accelerator) -> None:
        builder = accelerator.create_op_builder(UNKNOWN)
        expect(
            isinstance(builder, NotImplementedBuilder),
            f"create_op_builder({UNKNOWN!r})",
            "a NotImplementedBuilder instance",
            builder,
        )
        expect(
            builder.is_compatible() is False,
            f"create_op_builder({UNKNOWN!r}).is_compatible()",
            "False",
            builder.is_compatible(),
        )
        with pytest.raises(UnsupportedFeatureError, match=UNKNOWN):
            builder.load()

    def test_op_builder_dir(self, accelerator: Accelerator) -> None:
        expect_type(accelerator.op_builder_dir(), "op_builder_dir()", str)
