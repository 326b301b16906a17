"""Sphinx configuration of the ono_env documentation.

Build (warnings are errors)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import importlib.abc
import importlib.metadata
import importlib.util
import logging
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: Sphinx itself installs tomli there
    import tomli as tomllib

# The API pages document this checkout's code, whichever ono_env is installed and wherever the
# build starts. ``sphinx-build`` does not put the working directory on the import path, and
# the subpackages that pyproject.toml's package-dir maps from other folders (``agents/`` is
# ``ono_env.agents``) are found by the installed package's finder: after an editable install
# of another clone they were that clone's code, or, once that clone was deleted, not found at
# all (every API page of them a warning). The finder below maps them to this checkout.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PACKAGE_DIRS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
    "tool"]["setuptools"]["package-dir"]


class _CheckoutPackages(importlib.abc.MetaPathFinder):
    """Finds ``ono_env.agents``, ``ono_env.train`` and ``ono_env.configs`` (package-dir's
    mapped subpackages) in this checkout; their modules then follow from their ``__path__``."""

    def find_spec(self, name, path=None, target=None):
        folder = PACKAGE_DIRS.get(name)
        if folder is None or folder == name.replace(".", "/"):
            return None
        return importlib.util.spec_from_file_location(
            name, ROOT / folder / "__init__.py", submodule_search_locations=[str(ROOT / folder)])


sys.meta_path.insert(0, _CheckoutPackages())

project = "ono_env"
author = "ono_env contributors"
copyright = "ono_env contributors"
try:
    release = importlib.metadata.version("ono-env")
except importlib.metadata.PackageNotFoundError:  # pragma: no cover - not installed
    release = "0.0"
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"

# Pages are docs/*.md, docs/api/*.md and the Markdown files under docs/results/; the rest of
# docs/ (example scripts, data files, images) is linked from the pages, not built as pages.
exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    "examples/**",
    # tables included by the pages results/ladder*.md and results/train-any-rules-table.md
    "results/ladder/ladder.md",
    "results/ladder/*/ladder.md",
    "results/train-any-rules/results.md",
    # tables included by benchmark.md (the time ono-bench takes, the exploiters) and the
    # cards that the timing run wrote
    "results/suite-*/timing/**",
    "results/exploiters/exploiters.md",
    "results/suite-*/ceiling-ties.md",
]

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3


class _NoMystConfigDump(logging.Filter):
    """MyST-Parser logs its whole configuration at every build ("myst v5.2.0:
    MdParserConfig(..., suppress_warnings=[], ...)"), one line of some 1,300 characters that
    says nothing about this site and reads as a warning to anyone searching the build's log
    for one. This drops that record only; every warning still reaches Sphinx (``-W``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.levelno == logging.INFO and "MdParserConfig(" in record.getMessage())


logging.getLogger("sphinx.myst_parser.sphinx_ext.main").addFilter(_NoMystConfigDump())

autodoc_default_options = {
    "members": True,
    # a function or class without a docstring is listed too, by its signature (Sphinx takes
    # any value given here, False included, as the option switched on); a module's constant
    # is listed only with a docstring below it, the one place autodoc finds a constant's
    "undoc-members": True,
    "show-inheritance": True,
}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_class_signature = "separated"
# the docstrings are reST with Google-style "Args:" sections
napoleon_google_docstring = True
napoleon_numpy_docstring = False
# document what this project wrote, not the docstrings inherited from gymnasium, pettingzoo
# or RLlib base classes (RLlib's use doctest directives)
autodoc_inherit_docstrings = False
# The heavy extras that modules import at their top: where one is not installed, autodoc
# imports a stand-in for it (Sphinx's mock), so the `docs` extra builds the whole API reference
# without torch, SB3, TensorBoard, Ray, OpenSpiel or TorchRL (about 0.5 GB installed instead
# of 6.6 GB). The pages say the same either way but for some of those packages' types in the
# signatures (a name written in full, ``torch.Tensor`` for ``Tensor``, or an alias of SB3's not
# expanded). tests/test_layout.py checks that every other package a module imports at its top
# comes with the `docs` extra, and that every module of the API pages imports with these
# stood in for.
MOCKED_WHERE_MISSING = ("torch", "stable_baselines3", "sb3_contrib", "tensorboard", "ray",
                        "pyspiel", "open_spiel", "torchrl", "tensordict")
autodoc_mock_imports = [name for name in MOCKED_WHERE_MISSING
                        if importlib.util.find_spec(name) is None]

html_theme = "furo"
html_title = f"ono_env {release}"


def _collapse_navigation(app, pagename, templatename, context, doctree):
    """Have furo's sidebar expand only the branch of the page being written, and keep the
    sidebar of a page under results/ to the top-level pages.

    furo renders the whole site tree, every branch expanded, into every page: with about 300
    pages (most under results/) that is quadratic, and it took more than half of a build's
    time. furo has no option for it, so this handler, run before furo's own
    (``html-page-context`` at a lower priority), makes the ``toctree()`` it calls collapse
    the branches that do not hold the page. Collapsed, each of the ~300 results pages still
    listed all ~160 entries of results/index's toctree, a third of the build (84 s against
    55 s without, on 2 cores); so their sidebar goes one level deep (the top-level pages, with
    Results marked), and the results pages are listed on results/index and in its sidebar.
    """
    toctree = context.get("toctree")
    if toctree is None:
        return
    fixed = {"collapse": True}
    if pagename.startswith("results/") and pagename != "results/index":
        fixed["maxdepth"] = 1
        folder = pagename.rpartition("/")[0]

        def shallow(**kwargs):
            key = (folder, tuple(sorted({**kwargs, **fixed}.items())))
            if key not in _SHALLOW_SIDEBARS:
                _SHALLOW_SIDEBARS[key] = toctree(**{**kwargs, **fixed})
            return _SHALLOW_SIDEBARS[key]

        context["toctree"] = shallow
        return
    context["toctree"] = lambda **kwargs: toctree(**{**kwargs, **fixed})


# The one-level sidebar of a results page, by the page's folder and the toctree() arguments.
# Sphinx resolves the whole site tree for every call and prunes it afterwards, so each call
# costs as much as a full sidebar; yet one level deep, every results page outside
# results/index lists the same top-level pages with Results marked, and pages of one folder
# share their relative links, so the HTML is the same for a folder's pages: built with and
# without this cache, the site's pages are the same byte for byte, and the build took 0.96
# times as long (medians of 3 alternating builds of each).
_SHALLOW_SIDEBARS: dict[tuple, str] = {}


def _attribute_prose_first(app, what, name, obj, options, lines):
    """napoleon reads an attribute's docstring whose first line holds a colon ("How the first
    dealer is chosen: ...") as ``type: description`` and renders "Type: How the first
    dealer ...". Run before napoleon (``autodoc-process-docstring`` at a lower priority),
    this starts such a docstring with an empty reST comment (``..`` and a blank line), the
    line napoleon then reads as the first (it skips blank lines, not comments): no colon, no
    type, and the docstring is shown as the prose it is."""
    if what in ("attribute", "data", "property") and lines and ":" in lines[0]:
        lines[0:0] = ["..", ""]


def setup(app):
    app.connect("html-page-context", _collapse_navigation, priority=400)
    app.connect("autodoc-process-docstring", _attribute_prose_first, priority=400)
