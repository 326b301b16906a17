"""Every ```python block of README.md and docs/**/*.md runs.

One test per Markdown file: its Python blocks run in order in one namespace (a later block
may use what an earlier one made), inside a fresh temporary working directory, so a block
that writes files leaves nothing in the repository. A traceback points at the Markdown
file and the line of the block.

A block that must not run in the suite (hours of training, a server that never returns) is
fenced as ```python notest; it is still shown as Python by the documentation build.
Blocks in other languages (bash, text, ...) are not run.

Run with ``python -m pytest -q tests/test_docs_code.py`` (or the whole suite).
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SKIP_DIRS = {"_build"}
def markdown_files() -> list[Path]:
    files = [ROOT / "README.md"]
    files += sorted(p for p in (ROOT / "docs").rglob("*.md")
                    if not SKIP_DIRS & set(p.relative_to(ROOT / "docs").parts))
    return [p for p in files if p.is_file()]


def code_blocks(text: str) -> list[tuple[int, str, str]]:
    """``(first line of the code, 1-based; info string; code)`` of every fenced block, as
    markdown-it-py (the parser MyST builds the docs with) reads them."""
    from markdown_it import MarkdownIt

    return [(tok.map[0] + 2, tok.info.strip(), tok.content)
            for tok in MarkdownIt("commonmark").parse(text)
            if tok.type == "fence" and tok.map is not None]


def python_blocks(path: Path) -> tuple[list[tuple[int, str]], int]:
    """The blocks to run (line, code) and the number fenced ``python notest``."""
    run, skipped = [], 0
    for line, info, code in code_blocks(path.read_text(encoding="utf-8")):
        words = info.split()
        if not words or words[0].lower() not in ("python", "py", "python3"):
            continue
        if "notest" in words[1:]:
            skipped += 1
        else:
            run.append((line, code))
    return run, skipped


FILES = [p for p in markdown_files() if python_blocks(p)[0]]


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_markdown_python_blocks(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    namespace: dict = {"__name__": "__docs__"}
    for line, code in python_blocks(path)[0]:
        # pad so that line numbers in a traceback are the Markdown file's
        compiled = compile("\n" * (line - 1) + code, str(path), "exec")
        exec(compiled, namespace)


def test_fence_parser():
    text = "a\n```python\nx = 1\n```\n\n````md\n```python\nnot a block\n```\n````\n" \
           "```python notest\nraise SystemExit\n```\n"
    blocks = code_blocks(text)
    assert [(b[0], b[1]) for b in blocks] == [(3, "python"), (7, "md"), (12, "python notest")]
    assert blocks[0][2] == "x = 1\n"


def observation_table() -> list[str]:
    """The observation table of docs/environments.md, made from ``observation_layout``."""
    from ono_env import RuleSet
    from ono_env.observation import observation_layout

    general = {"opponents": "2 (N-1)", "scores": "N, only with scoring"}
    rows = ["| block | slice (classic, 4 players) | size | meaning |", "|---|---|---|---|"]
    for b in observation_layout(RuleSet.preset("classic", num_players=4)):
        size = general.get(b.name, str(b.stop - b.start))
        rows.append(f"| `{b.name}` | {b.start}:{b.stop} | {size} | {b.meaning} |")
    return rows


def _assert_table_in(page: str, table: list[str], source: str) -> None:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    assert "\n".join(table) in text, (
        f"docs/{page}'s table differs from {source}; the table made from the code:\n"
        + "\n".join(table))


def test_observation_table_matches_code():
    _assert_table_in("environments.md", observation_table(), "ono_env.observation")


def observation_v2_tables() -> list[str]:
    """The version-2 tables of docs/environments.md: the fixed blocks, one opponent block and
    the rules block, made from ``ono_env.observation``."""
    from ono_env import RuleSet
    from ono_env.observation import (
        MAX_OPPONENTS,
        OPPONENT_FIELDS,
        OPPONENT_SIZE,
        RULE_FEATURES,
        observation_layout,
    )

    rows = ["| block | slice | size | meaning |", "|---|---|---|---|"]
    blocks = observation_layout(RuleSet.preset("classic", num_players=4), 2)
    for b in blocks[:-MAX_OPPONENTS]:
        rows.append(f"| `{b.name}` | {b.start}:{b.stop} | {b.stop - b.start} | {b.meaning} |")
    first = blocks[-MAX_OPPONENTS]
    rows.append(f"| `opponent_1` ... `opponent_{MAX_OPPONENTS}` | {first.start}:"
                f"{blocks[-1].stop} | {MAX_OPPONENTS} x {OPPONENT_SIZE} | one block per "
                f"opponent from this seat's left (below) |")
    rows += ["", "| opponent field | offset | size | meaning |", "|---|---|---|---|"]
    at = 0
    for name, size, meaning in OPPONENT_FIELDS:
        rows.append(f"| `{name}` | {at}:{at + size} | {size} | {meaning} |")
        at += size
    rows += ["", "| rules entry | offset | value |", "|---|---|---|"]
    for k, (name, how) in enumerate(RULE_FEATURES):
        rows.append(f"| `{name}` | {k} | {how} |")
    return rows


def test_observation_v2_tables_match_code():
    _assert_table_in("environments.md", observation_v2_tables(), "ono_env.observation")


def preset_table() -> list[str]:
    """The table of docs/rules.md: every RuleSet option under every preset."""
    from dataclasses import fields

    from ono_env.rules import PRESETS, RuleSet

    names = list(PRESETS)
    rows = ["| option | " + " | ".join(f"`{n}`" for n in names) + " |",
            "|---|" + "---|" * len(names)]
    for f in fields(RuleSet):
        if f.name == "name":
            continue
        values = [getattr(PRESETS[n], f.name) for n in names]
        cells = [str(v).lower() if isinstance(v, bool) else str(v) for v in values]
        rows.append(f"| `{f.name}` | " + " | ".join(cells) + " |")
    return rows


def test_preset_table_matches_code():
    _assert_table_in("rules.md", preset_table(), "ono_env.rules.PRESETS")


def test_options_table_matches_the_rule_help():
    """docs/rules.md's options table is made of ``ono_env.rule_help.OPTION_HELP``, which the
    browser table and the terminal game read too: the meaning of an option is written once."""
    from ono_env.rule_help import options_table_markdown

    _assert_table_in("rules.md", options_table_markdown().splitlines(), "ono_env.rule_help")


def test_presets_table_of_the_readme_matches_the_rule_help():
    from ono_env.rule_help import PRESET_SUMMARY

    table = ["| preset | what it is |", "|---|---|"]
    table += [f"| `{name}` | {what} |" for name, what in PRESET_SUMMARY.items()]
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "\n".join(table) in text, "\n".join(table)


def test_the_docstring_examples_run():
    # the package's one doctest-style example (ono_env/game.py's module docstring) runs as
    # written: before, it called first_legal without importing it
    import doctest

    import ono_env.game

    failed, tried = doctest.testmod(ono_env.game, verbose=False, report=False)
    assert tried >= 4 and failed == 0


def test_every_exported_constant_has_a_docstring():
    """The API reference lists a module's constant only with a docstring below it (autodoc
    finds no other); before, RULE_BASED, Z95, CARD_FORMAT_VERSION and LATEST were exported
    in an ``__all__`` and on no page. A re-exported name is checked where it is defined."""
    import ast
    import importlib
    import inspect
    import pkgutil

    def definition(modname, name, depth=0):
        body = []   # the module's statements, those under ``if TYPE_CHECKING:`` among them
        for node in ast.parse(inspect.getsource(importlib.import_module(modname))).body:
            body += node.body if isinstance(node, ast.If) else [node]
        for i, node in enumerate(body):
            targets = ([t.id for t in node.targets if isinstance(t, ast.Name)]
                       if isinstance(node, ast.Assign) else
                       [node.target.id] if isinstance(node, ast.AnnAssign)
                       and isinstance(node.target, ast.Name) else [])
            if name in targets:
                nxt = body[i + 1] if i + 1 < len(body) else None
                return isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) \
                    and isinstance(nxt.value.value, str)
            if isinstance(node, ast.ImportFrom) and node.level == 0 and depth < 5:
                for a in node.names:
                    if (a.asname or a.name) == name:
                        return definition(node.module, a.name, depth + 1)
        return False

    undocumented, checked = [], 0
    for pkg in ("ono_env", "ono_env.agents", "ono_env.train", "ono_env.envs", "ono_env.arena",
                "ono_env.apps"):
        root = importlib.import_module(pkg)
        for name in [pkg] + [i.name for i in pkgutil.walk_packages(root.__path__, pkg + ".")]:
            if any(part.startswith("_") for part in name.split(".")[1:]):
                continue
            try:
                mod = importlib.import_module(name)
            except ImportError:   # an extra not installed (ray, pyspiel, ...)
                continue
            for member in getattr(mod, "__all__", ()):
                obj = getattr(mod, member)
                if inspect.ismodule(obj) or inspect.isclass(obj) or callable(obj):
                    continue
                checked += 1
                if not definition(name, member):
                    undocumented.append(f"{name}.{member}")
    assert checked > 10 and undocumented == []
