"""The accelerator class of :mod:`tests.privateuse1.named_plugin`: the generic one for its device type, renamed."""

from __future__ import annotations

import torch

from accelhal_backends.generic.accelerator import build_class

_Base = build_class(torch._C._get_privateuse1_backend_name())


class AcmeAccelerator(_Base):
    """The test device under the plugin's own name."""

    _name = "acme"
