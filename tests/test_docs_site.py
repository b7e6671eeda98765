"""The API reference (docs/api.rst) lists every public name of daskdca.

Reads the reStructuredText source only (its ``autosummary`` lists, ``currentmodule`` and ``module``
directives); building the site is .ci/run's job (``python -m sphinx -W ...``), not pytest's.
"""

import importlib
import re
from pathlib import Path

import pytest

import daskdca

DOCS = Path(__file__).resolve().parents[1] / "docs"

# The public modules whose __all__ the reference covers.  daskdca.driver, .routes, .partitions,
# .problem and .kernels are internal layers (docs/architecture.md); their names are not listed.
PUBLIC_MODULES = [
    "daskdca",
    "daskdca.api",
    "daskdca.estimators",
    "daskdca.regpath",
    "daskdca.advice",
    "daskdca.losses",
    "daskdca.methods",
    "daskdca.store",
    "daskdca.engine",
    "daskdca.saved_model",
    "daskdca.datasets",
    "daskdca.plot",
]

_DIRECTIVE = re.compile(r"^\.\.\s+([\w:-]+)::\s*(\S*)\s*$")


def documented_names(rst_text):
    """``(names, modules)``: the qualified names the autosummary lists document, and the modules
    that ``module`` / ``automodule`` directives document."""
    names, modules = set(), set()
    current = None
    in_autosummary = False
    for line in rst_text.splitlines():
        match = _DIRECTIVE.match(line)
        if match:
            directive, argument = match.groups()
            in_autosummary = directive == "autosummary"
            if directive in ("currentmodule", "module", "py:currentmodule", "py:module"):
                current = argument
            if directive in ("module", "automodule", "py:module"):
                modules.add(argument)
            continue
        if not in_autosummary:
            continue
        if line.strip() and not line.startswith(" "):
            in_autosummary = False  # the block ends at the first unindented line
            continue
        entry = line.strip()
        if not entry or entry.startswith(":"):  # a blank line or an option (:toctree:, ...)
            continue
        entry = entry.lstrip("~")
        names.add(entry if current is None or entry.startswith(current + ".") else f"{current}.{entry}")
    return names, modules


def _api_text():
    return (DOCS / "api.rst").read_text(encoding="utf-8")


def _resolve(qualified):
    module, _, name = qualified.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_parser_reads_autosummary_lists():
    text = """
.. currentmodule:: pkg

.. autosummary::
   :toctree: generated/

   one
   ~pkg.two

Heading
=======

.. module:: pkg.sub

.. autosummary::

   three
not_listed
"""
    names, modules = documented_names(text)
    assert names == {"pkg.one", "pkg.two", "pkg.sub.three"}
    assert modules == {"pkg.sub"}


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_public_name_is_in_the_api_reference(module_name):
    names, modules = documented_names(_api_text())
    module = importlib.import_module(module_name)
    # an object exported in several modules is listed once (at the top level where daskdca exports it)
    listed = {}
    for qualified in names:
        try:
            listed.setdefault(id(_resolve(qualified)), qualified)
        except (ImportError, AttributeError):
            pass
    missing = []
    for name in module.__all__:
        qualified = f"{module_name}.{name}"
        obj = getattr(module, name)
        if qualified in names or qualified in modules:
            continue
        if isinstance(obj, type(daskdca)) and obj.__name__ in modules:
            continue  # a module (daskdca.datasets, daskdca.plot) documented by its own section
        if not isinstance(obj, (int, float, str, bytes)) and id(obj) in listed:
            continue  # the same object, listed under another module (constants must be listed by name)
        missing.append(name)
    assert not missing, f"docs/api.rst does not list {module_name}.{{{', '.join(missing)}}}"


def test_methods_and_estimators_are_listed():
    names, _ = documented_names(_api_text())
    for name in ("SDCAClassifier", "SDCAClassifierCV", "SDCARegressor", "SDCA", "CoCoAPlus", "MinibatchSDCA",
                 "SDNA", "DualFreeSDCA", "AdaptiveDualFreeSDCA", "AdaptiveDualFreeSDCAPlus", "SPDC",
                 "MinibatchPegasos"):
        assert f"daskdca.{name}" in names
    from daskdca.methods import REGISTRY

    for cls in REGISTRY.values():
        assert f"daskdca.{cls.__name__}" in names or f"daskdca.methods.{cls.__name__}" in names


def test_every_listed_name_exists():
    """No entry of the reference names something the package no longer has."""
    names, modules = documented_names(_api_text())
    for qualified in sorted(names):
        _resolve(qualified)
    for module in modules:
        importlib.import_module(module)


def test_the_guides_are_in_the_site():
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for guide in ("user-guide", "performance", "architecture", "reliability", "references", "api"):
        assert re.search(rf"^{guide}$", index, re.M), f"docs/index.md's toctree lacks {guide}"
        assert any((DOCS / f"{guide}{suffix}").exists() for suffix in (".md", ".rst"))


# The numpydoc checks docs/conf.py must keep on (numpydoc_validation_checks; with -W each finding fails the
# build): every parameter documented with a type and a description, no unknown or misordered one, a Returns
# (Yields) section with a description wherever something is returned, one-line summaries that start with a
# capital and end with a period, and a sentence for each See Also entry.
REQUIRED_NUMPYDOC_CHECKS = {
    "GL01", "GL02", "GL03", "GL05", "GL06", "GL07", "GL09", "GL10",
    "SS01", "SS02", "SS03", "SS04", "SS05", "SS06",
    "PR01", "PR02", "PR03", "PR04", "PR05", "PR06", "PR07", "PR08", "PR09", "PR10",
    "RT01", "RT02", "RT03", "RT04", "RT05", "YD01",
    "SA02", "SA03", "SA04",
}


@pytest.fixture(scope="module")
def sphinx_conf():
    """docs/conf.py's settings, run as Sphinx runs it (from docs/, so that its ``..`` is the repository)."""
    import os
    import runpy
    import sys

    here, path = os.getcwd(), list(sys.path)
    os.chdir(DOCS)
    try:
        return runpy.run_path(str(DOCS / "conf.py"))
    finally:
        os.chdir(here)
        sys.path[:] = path


def test_numpydoc_validation_stays_on(sphinx_conf):
    from numpydoc.validate import get_validation_checks

    assert "numpydoc" in sphinx_conf["extensions"]
    enabled = get_validation_checks(set(sphinx_conf["numpydoc_validation_checks"]))
    missing = REQUIRED_NUMPYDOC_CHECKS - enabled
    assert not missing, f"docs/conf.py no longer enables the numpydoc checks {sorted(missing)}"


def test_numpydoc_exclusions_are_constants_only(sphinx_conf):
    """``numpydoc_validation_exclude`` skips every check of what it matches: only the module constants of
    the reference may be left out (numpydoc checks the docstring of their value's type), never a class or a
    function."""
    names, _ = documented_names(_api_text())
    for pattern in sphinx_conf.get("numpydoc_validation_exclude", ()):
        matched = [name for name in names if re.search(pattern, name)]
        assert matched, f"numpydoc_validation_exclude entry {pattern!r} matches no name of docs/api.rst"
        for name in matched:
            obj = _resolve(name)
            assert not callable(obj) and not isinstance(obj, type(daskdca)), \
                f"numpydoc_validation_exclude entry {pattern!r} skips {name}, which is not a constant"
