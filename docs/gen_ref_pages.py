"""Write the API reference pages at build time (run by mkdocs-gen-files, see mkdocs.yml).

One page per public name: the names in ``__all__`` of ``glmbandits`` and of its public
subpackages (PUBLIC below), each rendered by mkdocstrings from its defining module
(``::: glmbandits.policies.ucb_glm.UCBGLM``). A name exported by several packages gets one
page, under the first package of PUBLIC that exports it; the first page of a defining
module also shows that module's docstring (where the equations are). Private modules
(a leading underscore, or a module no public ``__all__`` names) get no page.

mkdocs-gen-files runs this file (``runpy.run_path``: ``__name__`` is ``"<run_path>"``);
imported under another name it only defines :func:`sections` (tests/test_docs_site.py
checks that every name it lists has a docstring).
"""

from __future__ import annotations

import importlib
import inspect

#: The public subpackages and modules, in the reference's order.
PUBLIC = ("policies", "estimation", "families", "theory", "environments", "simulation",
          "batch", "evaluation", "data", "features", "persistence", "experiments",
          "service", "client", "testing", "exceptions")
#: Public names outside an ``__all__``: how a program starts the decision service.
EXTRA = {"service": ("glmbandits.service.server.start_service",
                     "glmbandits.service.server.run_server")}


def canonical_path(package: str, name: str) -> str:
    """The dotted path where ``name`` (exported by ``package``) is defined."""
    obj = getattr(importlib.import_module(package), name)
    if (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__.startswith("glmbandits"):
        return f"{obj.__module__}.{obj.__qualname__}"
    return f"{package}.{name}"  # a constant: griffe finds where it is assigned


def public_names(package: str) -> list[str]:
    """The dotted paths of the names ``package`` exports, plus EXTRA's."""
    module = importlib.import_module(package)
    paths = [canonical_path(package, name) for name in module.__all__]
    return paths + list(EXTRA.get(package.removeprefix("glmbandits."), ()))


def sections() -> dict[str, list[tuple[str, str]]]:
    """For each PUBLIC section: (dotted path, exporting package) of the names it holds.

    A name of ``glmbandits.__all__`` that no subpackage exports joins the section of the
    package that defines it.
    """
    held: dict[str, list[tuple[str, str]]] = {}
    for short in PUBLIC:
        held[short] = [(path, f"glmbandits.{short}") for path in public_names(f"glmbandits.{short}")]
    known = {path for pairs in held.values() for path, _ in pairs}
    top = importlib.import_module("glmbandits")
    for name in top.__all__:
        if inspect.ismodule(getattr(top, name)):
            continue  # families, theory: a section of their own
        path = canonical_path("glmbandits", name)
        section = path.split(".")[1]
        if path not in known and section in held:
            held[section].append((path, "glmbandits"))
            known.add(path)
    return held


def generate() -> None:
    """Write the reference pages, the home page and MathJax's configuration."""
    import mkdocs_gen_files

    page_of: dict[str, str] = {}  # canonical path -> page (relative to reference/)
    held = sections()
    for short, pairs in held.items():
        for path, _ in pairs:
            page_of.setdefault(path, f"{short}/{path.rsplit('.', 1)[1]}.md")
    module_shown: set[str] = set()
    nav = mkdocs_gen_files.Nav()
    for short, pairs in held.items():
        package = f"glmbandits.{short}"
        with mkdocs_gen_files.open(f"reference/{short}/index.md", "w") as fd:
            fd.write(f"# `{package}`\n\n::: {package}\n    options:\n      members: false\n"
                     "      show_root_heading: false\n      show_root_toc_entry: false\n\n")
            fd.write("## Public names\n\n")
            for path, _ in pairs:
                fd.write(f"* [`{path.rsplit('.', 1)[1]}`](../{page_of[path]})\n")
        nav[short] = f"{short}/index.md"
        for path, exporter in pairs:
            page = page_of[path]
            if not page.startswith(f"{short}/"):
                continue  # its page is in an earlier section
            name = path.rsplit(".", 1)[1]
            nav[short, name] = page
            defining = path.rsplit(".", 1)[0]
            where = "[`glmbandits`](../index.md)" if exporter == "glmbandits" else f"[`{exporter}`](index.md)"
            with mkdocs_gen_files.open(f"reference/{page}", "w") as fd:
                fd.write(f"# `{name}`\n\nExported by {where}; defined in `{defining}`.\n\n::: {path}\n")
                if defining != package and defining not in module_shown and "." not in \
                        path.removeprefix(defining + "."):
                    module_shown.add(defining)
                    fd.write(f"\n## Module `{defining}`\n\n::: {defining}\n    options:\n"
                             "      members: false\n      show_root_heading: false\n"
                             "      show_root_toc_entry: false\n")

    with mkdocs_gen_files.open("reference/index.md", "w") as fd:
        fd.write("# API reference\n\nOne page per public name. The names `glmbandits` exports:\n\n")
        for name in importlib.import_module("glmbandits").__all__:
            path = canonical_path("glmbandits", name)
            page = page_of.get(path)
            if page is None:  # a module (families, theory) has its index page
                page = f"{name}/index.md"
            fd.write(f"* [`{name}`]({page})\n")
    with mkdocs_gen_files.open("reference/SUMMARY.md", "w") as fd:
        fd.write("* [Overview](index.md)\n")
        fd.writelines(nav.build_literate_nav())

    # The home page and MathJax's configuration (for pymdownx.arithmatex's generic output).
    with mkdocs_gen_files.open("index.md", "w") as fd:
        fd.write("# glmbandits\n\nGeneralized linear contextual bandits: UCB-GLM, SupCB-GLM and their "
                 "successors, with simulation, offline evaluation and a decision service.\n\n"
                 "* The guides: start with [the architecture](architecture.md), "
                 "[the environments](environments.md) and [the service](service.md).\n"
                 "* [The API reference](reference/index.md): one page per public name.\n")
    with mkdocs_gen_files.open("javascripts/mathjax.js", "w") as fd:
        fd.write("window.MathJax = {\n  tex: {inlineMath: [['\\\\(', '\\\\)']], "
                 "displayMath: [['\\\\[', '\\\\]']],\n        processEscapes: true, "
                 "processEnvironments: true},\n  options: {ignoreHtmlClass: '.*|', "
                 "processHtmlClass: 'arithmatex'}\n};\n")


if __name__ == "<run_path>":
    generate()
