"""Sphinx configuration of the ono_env documentation.

Build (warnings are errors)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import importlib.metadata

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

autodoc_default_options = {
    "members": True,
    "undoc-members": False,
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

html_theme = "furo"
html_title = f"ono_env {release}"
