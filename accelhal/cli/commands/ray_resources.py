"""``accelhal ray-resources``: this node's devices as Ray resources, in the form ``ray start`` takes.

By default the JSON object for ``ray start --resources=``. Ray refuses ``GPU`` there and takes
it through ``--num-gpus``, so on a backend whose devices are Ray's ``GPU`` the object leaves
it out and a note on stderr gives the option; ``--args`` prints every option, ready for
``ray start ... $(accelhal ray-resources --args)``. Needs the ``ray`` extra.
"""

from __future__ import annotations

import argparse

from accelhal.cli.output import render
from accelhal.cli.output.models import RayResourcesOutput
from accelhal.text import visible

NAME = "ray-resources"
HELP = "this node's devices as Ray resources, for 'ray start'"
DESCRIPTION = (
    "Print the JSON object that 'ray start --resources=' takes for the active backend's devices on this node: "
    "Ray's own resource name where Ray knows the devices (NPU, HPU, ...), else the backend's name. Ray takes GPU "
    "through --num-gpus instead (a note on stderr says so); --args prints every 'ray start' option. Empty on cpu, "
    "whose CPUs Ray counts itself. Needs Ray: accelhal's ray extra (docs/ray.md)."
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``ray-resources`` arguments."""
    parser.add_argument(
        "--args",
        dest="as_arguments",
        action="store_true",
        help="print the 'ray start' options instead (--num-gpus=N, --resources=JSON), on one line without quotes: "
        "ray start --address=HEAD $(accelhal ray-resources --args)",
    )


def collect() -> RayResourcesOutput:
    """The active backend's resources on this node, and the ``ray start`` forms of them."""
    import accelhal
    from accelhal.compat import ray as accelhal_ray
    from accelhal.compat.ray import _resources

    resources = accelhal_ray.node_resources()
    return RayResourcesOutput(
        backend=accelhal.get_accelerator().name,
        resources=resources,
        resources_json=_resources.resources_json(resources),
        arguments=accelhal_ray.ray_start_arguments(resources),
    )


def run(args: argparse.Namespace) -> int:
    """Print the resources as ``--resources`` JSON, as ``ray start`` options, or as the ``--json`` model."""
    output = collect()
    if args.json:
        render.print_json(output)
    elif args.as_arguments:
        render.write(visible(" ".join(output.arguments)) + "\n")
    else:
        render.write(render.json_text(output.resources_json) + "\n")
        by_option = [argument for argument in output.arguments if not argument.startswith("--resources=")]
        if by_option:
            render.note(
                f"ray start takes {', '.join(by_option)} as an option, not in --resources: "
                f"ray start {' '.join(output.arguments)} (accelhal ray-resources --args prints it)"
            )
    return 0
