"""Resolving op builders by backend and name."""

from __future__ import annotations

from typing import Any

from accelhal.errors import UnsupportedFeatureError


class NotImplementedBuilder:
    """What an unknown op name resolves to: constructing it works, using it raises.

    >>> builder = get_op_builder("cpu", "NoSuchBuilder")()
    >>> builder.is_compatible()
    False
    >>> builder.load()
    Traceback (most recent call last):
    UnsupportedFeatureError: the 'cpu' accelerator does not support op 'NoSuchBuilder': ...
    """

    backend: str = "?"
    op_name: str = "?"
    NAME = "not_implemented"

    def is_compatible(self, verbose: bool = False) -> bool:
        """Always False."""
        return False

    def load(self, verbose: bool = True) -> Any:
        """Raise :class:`~accelhal.UnsupportedFeatureError` naming the op and the backend."""
        raise UnsupportedFeatureError(self.backend, f"op {self.op_name!r}", "no plugin provides this op builder")

    jit_load = load


def op_builder_dir(backend: str) -> str:
    """The dotted package holding ``backend``'s op builders."""
    return f"accelhal.ops.{backend}"


def get_op_builder(backend: str, name: str) -> type[Any]:
    """The builder class ``name`` contributed for ``backend``, else a :class:`NotImplementedBuilder`."""
    return type(name, (NotImplementedBuilder,), {"backend": backend, "op_name": name})
