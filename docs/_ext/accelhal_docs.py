"""Sphinx directives that render documentation from accelhal's own tables, at build time.

- ``accelhal-variables``: every environment variable, from :data:`accelhal.settings.VARIABLES`;
- ``accelhal-priorities``: every built-in backend in probing order, from
  :func:`accelhal.selection.registry` (third-party plugins of the building machine are left out);
- ``accelhal-cli``: the ``--help`` of the command and of each subcommand, from the argparse parser.

Because the pages are drawn from the code, they cannot drift from it.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util.docutils import SphinxDirective


def _cell(text: str, literal: bool = False) -> nodes.entry:
    inner: nodes.Node = nodes.literal(text=text) if literal else nodes.Text(text)
    return nodes.entry("", nodes.paragraph("", "", inner))


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], literal_columns: Sequence[int] = ()) -> nodes.table:
    """A docutils table; cells of ``literal_columns`` are set as code."""
    group = nodes.tgroup(cols=len(headers))
    group += [nodes.colspec(colwidth=1) for _ in headers]
    head = nodes.thead()
    head += nodes.row("", *(_cell(h) for h in headers))
    body = nodes.tbody()
    for values in rows:
        body += nodes.row("", *(_cell(v, i in literal_columns) for i, v in enumerate(values)))
    group += [head, body]
    return nodes.table("", group)


class VariablesDirective(SphinxDirective):
    """The table of environment variables."""

    def run(self) -> list[nodes.Node]:
        from accelhal.settings import VARIABLES

        rows = [(v.name, v.kind, v.default, v.help) for v in VARIABLES]
        return [table(("Variable", "Value", "Default", "Meaning"), rows, literal_columns=(0,))]


class PrioritiesDirective(SphinxDirective):
    """The priority table of the backends built into accelhal (probing order)."""

    def run(self) -> list[nodes.Node]:
        from accelhal.selection import registry

        rows = []
        builtins = [r for r in registry().ordered() if r.plugin.builtin]  # not the build machine's extras
        for rank, registration in enumerate(builtins, start=1):
            spec = registration.spec
            rows.append(
                (
                    str(rank),
                    spec.name,
                    str(spec.priority),
                    spec.device_type,
                    spec.comm_backend,
                    ", ".join(spec.visible_devices_envs) or "-",
                    registration.plugin.source,
                    spec.description or "-",
                )
            )
        headers = ("#", "Backend", "Priority", "Device type", "Comm", "Visible-devices variables", "Source", "About")
        return [table(headers, rows, literal_columns=(1, 3))]


class CliDirective(SphinxDirective):
    """The ``--help`` of ``accelhal`` and of each subcommand."""

    def run(self) -> list[nodes.Node]:
        from accelhal.cli import build_parser

        parser = build_parser()
        parser.formatter_class = _fixed_width(parser.formatter_class)
        result: list[nodes.Node] = [nodes.literal_block(text=parser.format_help(), language="text")]
        for action in parser._subparsers._group_actions if parser._subparsers else []:
            if not isinstance(action, argparse._SubParsersAction):
                continue
            for name, sub in action.choices.items():
                sub.formatter_class = _fixed_width(sub.formatter_class)
                result.append(nodes.rubric(text=f"accelhal {name}"))
                result.append(nodes.literal_block(text=sub.format_help(), language="text"))
        return result


def _fixed_width(formatter: type[argparse.HelpFormatter]) -> type[argparse.HelpFormatter]:
    """``formatter`` at 80 columns whatever the building terminal's width."""

    class Fixed(formatter):  # type: ignore[valid-type,misc]
        def __init__(self, prog: str) -> None:
            super().__init__(prog, width=80)

    return Fixed


def resolve_public_name(
    app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.TextElement
) -> nodes.reference | None:
    """Resolve ``accelhal.Name`` (and a bare ``Name``) to where ``Name`` is documented.

    The public names are re-exported by ``accelhal/__init__.py`` (``accelhal._EXPORTS``) but
    documented in their own modules; docstrings use the short public spelling.
    """
    from accelhal import _EXPORTS

    if node.get("refdomain") != "py":
        return None
    target = str(node.get("reftarget", ""))
    head, _, rest = target.removeprefix("accelhal.").partition(".")
    module = _EXPORTS.get(head)
    if module is None:
        return None
    full = f"{module}.{head}" + (f".{rest}" if rest else "")
    domain = env.get_domain("py")
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], full, node, contnode)


def setup(app: Sphinx) -> dict[str, object]:
    """Register the directives and the public-name resolver."""
    app.connect("missing-reference", resolve_public_name)
    app.add_directive("accelhal-variables", VariablesDirective)
    app.add_directive("accelhal-priorities", PrioritiesDirective)
    app.add_directive("accelhal-cli", CliDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
