"""The documentation site (issue 26): ``mkdocs build --strict`` builds it without a warning.

``mkdocs.yml`` renders the pages of ``docs/`` and an API reference that
``docs/gen_ref_pages.py`` writes at build time (one page per public name, rendered from
the numpydoc docstrings by mkdocstrings; ``docs/griffe_sphinx.py`` turns the docstrings'
Sphinx roles into cross-references and their math into MathJax's). With ``--strict`` a
broken link, a missing page or an unresolved reference fails the build; a public name
without a docstring would render as an empty page, so a test here requires one.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: Quiet the plugins' banners about MkDocs' future (they are not build warnings).
QUIET = {"NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
#: A sample of public names and the reference page each must have.
SAMPLE = {
    "UCBGLM": "reference/policies/UCBGLM/index.html",
    "fit_glm": "reference/estimation/fit_glm/index.html",
    "simulate_batch": "reference/batch/simulate_batch/index.html",
    "FeatureSchema": "reference/features/FeatureSchema/index.html",
    "DriftMonitor": "reference/evaluation/DriftMonitor/index.html",
    "Client": "reference/client/Client/index.html",
}


def _load(name: str) -> ModuleType:
    """A script of docs/ as a module (the reference generator does not run on import)."""
    spec = importlib.util.spec_from_file_location(f"_docs_{name}", DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The site built by ``mkdocs build --strict`` into a temporary folder, and its log."""
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    out = tmp_path_factory.mktemp("site")
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=600,
                           env={**os.environ, **QUIET})
    log = build.stdout + build.stderr
    assert build.returncode == 0, log
    return out, log


def test_sphinx_math_and_roles_become_arithmatex_and_references() -> None:
    griffe = pytest.importorskip("griffe")
    markup = _load("griffe_sphinx")
    assert markup.to_arithmatex("x\n    .. math:: a^2 + b\ny :math:`\\mu` z") == \
        "x\n    $$\n    a^2 + b\n    $$\ny \\(\\mu\\) z"
    package = griffe.load("glmbandits", search_paths=[str(ROOT / "src")])
    policy = package["policies.ucb_glm.UCBGLM"]
    assert markup.resolve(policy, "glmbandits.theory.ucb_glm_alpha") == "glmbandits.theory.ucb_glm_alpha"
    assert markup.resolve(policy, "from_theory") == "glmbandits.policies.ucb_glm.UCBGLM.from_theory"
    assert markup.resolve(package["estimation"], ".mle") == "glmbandits.estimation.mle"
    text = markup.with_references(policy, "see :class:`~glmbandits.policies.base.Policy`")
    assert text == ('see <autoref identifier="glmbandits.policies.base.Policy" optional>'
                    "<code>Policy</code></autoref>")


@pytest.mark.slow
def test_every_public_name_of_the_reference_has_a_docstring() -> None:
    griffe = pytest.importorskip("griffe")
    pytest.importorskip("mkdocs_gen_files")
    sections = _load("gen_ref_pages").sections()
    package = griffe.load("glmbandits", search_paths=[str(ROOT / "src")],
                          extensions=griffe.load_extensions(f"{DOCS / 'griffe_sphinx.py'}:SphinxMarkup"))
    paths = [path for pairs in sections.values() for path, _ in pairs]
    assert {"glmbandits.policies.ucb_glm.UCBGLM", "glmbandits.testing.CHECKS",
            "glmbandits.service.server.start_service", "glmbandits.client.sync.Client"} <= set(paths)
    assert len(paths) > 150
    missing = []
    for path in paths:
        obj = package[path.removeprefix("glmbandits.")]
        obj = obj.final_target if obj.is_alias else obj
        if obj.docstring is None or not obj.docstring.value.strip():
            missing.append(path)
    assert not missing, f"public names without a docstring (their reference page is empty): {missing}"


@pytest.mark.slow
def test_the_site_builds_strict_without_warnings(site: tuple[Path, str]) -> None:
    _, log = site
    warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    assert not warnings, "\n".join(warnings)


@pytest.mark.slow
def test_the_guides_and_their_images_are_pages(site: tuple[Path, str]) -> None:
    out, _ = site
    for page in sorted(DOCS.glob("*.md")):
        assert (out / page.stem / "index.html").is_file(), page.name
    for image in sorted(DOCS.glob("*.png")):
        assert (out / image.name).is_file(), image.name
    assert (out / "index.html").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SAMPLE))
def test_a_public_name_has_a_rendered_page(site: tuple[Path, str], name: str) -> None:
    out, _ = site
    html = (out / SAMPLE[name]).read_text(encoding="utf-8")
    assert f">{name}<" in html or f">{name}</" in html
    assert 'doc-section-title">Parameters:' in html  # the numpydoc section, rendered
    assert "mathjax" in html.lower() and "<script" in html


@pytest.mark.slow
def test_numpydoc_sections_references_and_math_render(site: tuple[Path, str]) -> None:
    out, _ = site
    ucb = (out / SAMPLE["UCBGLM"]).read_text(encoding="utf-8")
    assert 'doc-section-title">Examples:' in ucb and "<summary>References</summary>" in ucb
    # a Sphinx role of the docstring links the page of its target
    assert 'href="../../theory/ucb_glm_alpha/#glmbandits.theory.ucb_glm_alpha"' in ucb
    fit = (out / SAMPLE["fit_glm"]).read_text(encoding="utf-8")
    assert 'doc-section-title">Returns:' in fit
    # the estimating equation of glmbandits.estimation.mle's docstring, as MathJax source
    module = (out / "reference/estimation/GLMFit/index.html").read_text(encoding="utf-8")
    assert 'class="arithmatex"' in module and "\\sum_i (Y_i - \\mu(X_i'\\theta)) X_i" in module
