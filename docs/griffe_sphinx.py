"""A griffe extension (mkdocs.yml): the docstrings' reStructuredText markup, for mkdocstrings.

The docstrings are numpydoc, written for Sphinx: equations as ``.. math:: LATEX`` (a display)
and ``:math:`LATEX``` (inline), links as ``:func:`name```, ``:class:`~path```, ``:mod:`.sub```.
After griffe has loaded the package, this extension rewrites every docstring once:

* an attribute (a module's constant) without a docstring takes its ``#:`` comment lines,
  Sphinx's doc-comments, which is how the package documents its constants;
* math becomes pymdownx.arithmatex's ``$$LATEX$$`` and ``\\(LATEX\\)`` (MathJax renders it);
* a role becomes an autorefs cross-reference to the full path the name resolves to from the
  docstring's object (``~`` shows the last component only). It links where that object has
  a page of the reference, and stays code (no link) where it does not (a private module):
  autorefs' ``optional`` references, so the build does not warn for those.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

_DISPLAY = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<tex>.+)$", re.MULTILINE)
_INLINE = re.compile(r":math:`(?P<tex>[^`]+)`")
_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|obj|exc|const):`(?P<tilde>~?)(?P<name>[^`]+)`")


def to_arithmatex(text: str) -> str:
    """``text`` with its ``.. math::`` lines and ``:math:`` roles in arithmatex's syntax."""
    text = _DISPLAY.sub(
        lambda m: f"{m['indent']}$$\n{m['indent']}{m['tex'].strip()}\n{m['indent']}$$", text)
    return _INLINE.sub(lambda m: rf"\({m['tex']}\)", text)


def resolve(obj: griffe.Object, name: str) -> str:
    """The full dotted path ``name`` (as a role in ``obj``'s docstring writes it) names."""
    name = name.rstrip("()")
    if name.startswith("glmbandits."):
        return name
    if name.startswith("."):  # relative to the docstring's package, as in an import
        module = obj.module
        base = module.path if module.is_init_module else module.path.rsplit(".", 1)[0]
        dots = len(name) - len(name.lstrip("."))
        for _ in range(dots - 1):
            base = base.rsplit(".", 1)[0]
        return f"{base}.{name.lstrip('.')}"
    head, _, rest = name.partition(".")
    scope: griffe.Object | None = obj
    while scope is not None:
        if head in scope.members:
            return scope.members[head].path + (f".{rest}" if rest else "")
        try:
            found = scope.resolve(head)
        except (griffe.NameResolutionError, Exception):  # noqa: BLE001 - any miss: try the parent
            scope = scope.parent
            continue
        return found + (f".{rest}" if rest else "")
    return name


def with_references(obj: griffe.Object, text: str) -> str:
    """``text`` with each role replaced by an optional autorefs reference (see module)."""
    def link(match: re.Match[str]) -> str:
        name = match["name"].strip()
        title = name.rsplit(".", 1)[-1] if match["tilde"] else name
        identifier = html.escape(resolve(obj, name), quote=True)
        return (f'<autoref identifier="{identifier}" optional><code>{html.escape(title)}'
                f"</code></autoref>")
    return _ROLE.sub(link, text)


def doc_comment(obj: griffe.Object) -> str | None:
    """The ``#:`` comment lines right above ``obj``'s assignment, as one text (or None)."""
    if obj.lineno is None or obj.filepath is None or isinstance(obj.filepath, list):
        return None
    lines = obj.lines_collection[obj.filepath]
    found: list[str] = []
    row = obj.lineno - 2  # the line above the assignment (lineno counts from 1)
    while row >= 0 and lines[row].lstrip().startswith("#:"):
        found.insert(0, lines[row].lstrip()[2:].strip())
        row -= 1
    return "\n".join(found) or None


def _walk(obj: griffe.Object, seen: set[str]) -> None:
    if obj.path in seen:
        return
    seen.add(obj.path)
    if obj.docstring is None and obj.is_attribute and (comment := doc_comment(obj)):
        obj.docstring = griffe.Docstring(comment, parent=obj)
    if obj.docstring is not None:
        obj.docstring.value = with_references(obj, to_arithmatex(obj.docstring.value))
    for member in obj.members.values():
        if not member.is_alias:
            _walk(member, seen)  # type: ignore[arg-type]


class SphinxMarkup(griffe.Extension):
    """Rewrite the math and the roles of every docstring of the loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        _walk(pkg, set())
