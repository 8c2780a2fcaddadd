"""Sphinx directives that render documentation from accelhal's own tables, at build time.

- ``accelhal-variables``: every environment variable, from :data:`accelhal.process.settings.VARIABLES`.

Because the pages are drawn from the code, they cannot drift from it. The priority table, the
command's help and the contract page are Markdown written by ``scripts/reference_markdown.py``
instead, so that the repository shows them too (``tests/test_reference_markdown.py`` checks them).
"""

from __future__ import annotations

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
        from accelhal.process.settings import VARIABLES

        rows = [(v.name, v.kind, v.default, v.help) for v in VARIABLES]
        return [table(("Variable", "Value", "Default", "Meaning"), rows, literal_columns=(0,))]


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
    return {"parallel_read_safe": True, "parallel_write_safe": True}
