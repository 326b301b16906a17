"""The package's layout: the import contract between its layers, and the 0.2 module paths.

The contract is checked on the source with ``ast`` rather than with import-linter: the
installed package ``ono_env`` is assembled from four repository folders (``ono_env/``,
``agents/``, ``train/``, ``configs/``, by ``pyproject.toml``'s package-dir), which
import-linter's graph builder, reading one folder per package, does not follow.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import ono_env
from ono_env import _moved

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"ono_env": ROOT / "ono_env", "ono_env.agents": ROOT / "agents",
           "ono_env.train": ROOT / "train", "ono_env.configs": ROOT / "configs"}

# The layers, lowest first: a module may import its own layer and those below it.
LAYERS = ("configs", "core", "agents", "envs", "arena", "apps", "train")
HEAVY = ("gymnasium", "pettingzoo", "torch", "ray", "stable_baselines3", "sb3_contrib")
HEAVY_ALLOWED: set[tuple[str, str]] = set()
# The package's face keeps PettingZoo's convention ``from ono_env import ono_v0`` (and
# ``ono_env.env``), a lazy attribute: the one reference upward, loaded on first use only.
UPWARD_ALLOWED = {("ono_env", "ono_env.envs.ono_v0")}


def python_code(code: str, timeout: int = 300, **kwargs) -> subprocess.CompletedProcess:
    """``python -c code`` in a fresh interpreter, its output captured as text."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, **kwargs)


def _modules() -> dict[str, Path]:
    out = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            if "__pycache__" in rel.parts or any(p.startswith(".") for p in rel.parts):
                continue
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([package, *parts])
            if package == "ono_env" and parts and parts[0] in ("agents", "train", "configs"):
                continue
            out[name] = path
    return out


MODULES = _modules()


def layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "core"
    if parts[1] in ("agents", "envs", "arena", "apps", "train", "configs"):
        return parts[1]
    return "core"


def _resolve(target: str) -> str | None:
    """The project module an imported name lands in (None outside the project)."""
    if target != "ono_env" and not target.startswith("ono_env."):
        return None
    while target not in MODULES:
        target = target.rpartition(".")[0]
    return target


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(path: Path, top_level_only: bool) -> list[tuple[str, int]]:
    """(imported module, line) of every import in the file; with ``top_level_only`` only
    those run when the module is imported (not in functions or ``TYPE_CHECKING`` blocks)."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                   ast.Lambda)) and not _type_checking(child)
            if isinstance(child, ast.Import) and (inner or not top_level_only):
                found.extend((a.name, child.lineno) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and (inner or not top_level_only):
                assert child.level == 0, f"{path}:{child.lineno}: relative import"
                for a in child.names:   # `from pkg import submodule` imports the submodule
                    sub = f"{child.module}.{a.name}"
                    found.append((sub if sub in MODULES else child.module, child.lineno))
            if inner or not top_level_only:
                visit(child, inner)

    visit(tree, True)
    return found


def test_every_module_is_in_a_layer():
    assert len(MODULES) > 40
    assert {layer(m) for m in MODULES} == set(LAYERS)


def test_no_layer_imports_a_layer_above_it():
    """core < agents < envs < arena < apps < train (configs, the shipped YAML, below all):
    the core imports nothing above it, agents no envs, arena or apps, envs and arena no apps.
    Every import counts, also those inside functions."""
    wrong = []
    for name, path in MODULES.items():
        for target, line in imports(path, top_level_only=False):
            dest = _resolve(target)
            if (dest is not None and LAYERS.index(layer(dest)) > LAYERS.index(layer(name))
                    and (name, dest) not in UPWARD_ALLOWED):
                wrong.append(f"{_shown(path)}:{line} ({layer(name)}) imports "
                             f"{target} ({layer(dest)})")
    assert not wrong, "\n".join(wrong)


def test_the_core_imports_no_rl_library():
    wrong = []
    for name, path in MODULES.items():
        if layer(name) not in ("core", "configs"):
            continue
        for target, line in imports(path, top_level_only=False):
            top = target.split(".")[0]
            if top in HEAVY and (name, top) not in HEAVY_ALLOWED:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_importing_the_core_loads_no_rl_library_and_gymnasium_still_finds_the_env():
    """``import ono_env`` and its core modules load none of the RL libraries, and the
    Gymnasium id is registered whichever of ``ono_env`` and ``gymnasium`` is imported first
    (also through pettingzoo, which imports gymnasium)."""
    heavy = ("gymnasium", "pettingzoo", "torch", "ray")
    check = (f"import sys\nimport ono_env, ono_env.rules, ono_env.cards, ono_env.game, "
             f"ono_env.observation\nprint(sorted(m for m in {heavy!r} if m in sys.modules))\n")
    orders = {"ono_env first": "import ono_env\nimport gymnasium as gym\n",
              "gymnasium first": "import gymnasium as gym\nimport ono_env\n",
              "through pettingzoo": "import ono_env\nimport pettingzoo\nimport gymnasium as gym\n"}
    proc = python_code(check)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]"]
    for what, imports in orders.items():
        code = imports + "print(type(gym.make('ono_env/Ono-v0', rules='basic', num_players=2).unwrapped).__name__)\n"
        proc = python_code(code)
        assert proc.returncode == 0, (what, proc.stderr)
        assert proc.stdout.split() == ["OnoEnv"], what


def _docs_extra_packages() -> set[str]:
    """The distributions that ``pip install ".[docs]"`` brings on this machine, normalised:
    the core dependencies, those of the extras that the ``docs`` extra names, and everything
    that these require in turn (numba's llvmlite), as the installed packages' metadata says,
    environment markers evaluated here."""
    import importlib.metadata as md

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    tomllib = pytest.importorskip("tomllib")   # Python 3.11 on
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    todo = [Requirement(r) for r in project["dependencies"]]
    for req in map(Requirement, extras["docs"]):
        if canonicalize_name(req.name) == "ono-env":
            todo += [Requirement(r) for extra in req.extras for r in extras[extra]]
        else:
            todo.append(req)
    out: set[str] = set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in out or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        out.add(name)
        try:
            todo += [Requirement(r) for r in md.requires(name) or []]
        except md.PackageNotFoundError:
            continue
    return out


def _mocked_where_missing() -> tuple[str, ...]:
    """docs/conf.py's ``MOCKED_WHERE_MISSING``, read without running the file."""
    conf = ast.parse((ROOT / "docs" / "conf.py").read_text())
    return next(ast.literal_eval(n.value) for n in conf.body if isinstance(n, ast.Assign)
                and any(getattr(t, "id", "") == "MOCKED_WHERE_MISSING" for t in n.targets))


def test_every_module_of_the_api_pages_imports_with_the_heavy_extras_stood_in_for():
    """What a build with only the ``docs`` extra does: every module that docs/api/*.md
    documents imports, in a fresh interpreter, with Sphinx's stand-ins for all of
    ``MOCKED_WHERE_MISSING`` (also those installed here, which the suite's own docs build
    imports for real)."""
    import re

    modules = sorted({m for page in (ROOT / "docs" / "api").glob("*.md")
                      for m in re.findall(r"automodule:: ([\w.]+)", page.read_text())})
    assert len(modules) > 40
    code = ("import importlib, sys\n"
            "from sphinx.ext.autodoc.mock import mock\n"
            f"with mock({list(_mocked_where_missing())!r}):\n"
            f"    for name in {modules!r}:\n"
            "        importlib.import_module(name)\n"
            "    assert type(sys.modules['torch']).__name__ == '_MockModule', sys.modules['torch']\n")
    run = python_code(code, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]


def test_the_docs_extra_imports_every_module():
    """The API reference imports every module. Each package a module imports at its top is
    installed by the ``docs`` extra, or is one that docs/conf.py has Sphinx stand in for where
    it is missing (``MOCKED_WHERE_MISSING``): else ``pip install -e ".[docs]"`` and the docs
    build would fail on that module's page."""
    import importlib.metadata as md

    from packaging.utils import canonicalize_name

    mocked = _mocked_where_missing()
    provided = md.packages_distributions()
    docs = _docs_extra_packages()
    wrong = []
    for path in MODULES.values():
        for target, line in imports(path, top_level_only=True):
            top = target.split(".")[0]
            if top in sys.stdlib_module_names or top in ("ono_env", "__future__") \
                    or top in mocked:
                continue
            dists = {canonicalize_name(d) for d in provided.get(top, [top])}
            if not dists & docs:
                wrong.append(f"{_shown(path)}:{line} imports {target} ({', '.join(sorted(dists))})")
    assert not wrong, ("not installed by the docs extra nor in docs/conf.py's "
                       "MOCKED_WHERE_MISSING:\n" + "\n".join(wrong))


@pytest.mark.parametrize("module, library, extra", [
    ("ono_env.envs.sb3", "stable_baselines3", "train"),
    ("ono_env.envs.rllib_env", "ray", "ray"),
    ("ono_env.envs.openspiel", "pyspiel", "openspiel"),
])
def test_an_adapter_without_its_extra_names_the_extra(module, library, extra, monkeypatch):
    """Before: "No module named 'stable_baselines3'", and no word of the extra to install.
    The error keeps the missing module's name (the console scripts name the extra by it)."""
    import importlib

    for name in [library, *(m for m in sys.modules if m.startswith(library + "."))]:
        monkeypatch.setitem(sys.modules, name, None)   # as if not installed (its submodules
        # too: one imported by an earlier test would be found without its package)
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(ModuleNotFoundError) as exc:
        importlib.import_module(module)
    assert str(exc.value) == (f"{module} needs {library}, which is not installed: pip install "
                              f"'ono-env[{extra}]'")
    assert exc.value.name == library


def test_the_rllib_module_class_without_ray_names_the_extra(monkeypatch):
    """Before: a bare "No module named 'ray'" from ``from ono_env.train.rllib import
    MaskedPPOModule``, where the rest of the module names the extra."""
    import importlib

    for name in ["ray", *(m for m in sys.modules if m.startswith("ray."))]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "ono_env.train.rllib", raising=False)
    rllib = importlib.import_module("ono_env.train.rllib")   # needs no Ray
    with pytest.raises(ValueError, match=r"^MaskedPPOModule needs Ray RLlib and torch \(ray is "
                                         r"not installed\): .*ono-env\[ray\]"):
        rllib.MaskedPPOModule   # noqa: B018 - the attribute builds the class


def test_no_import_circle():
    """No circle among the imports a module runs when it is imported."""
    graph = {name: sorted({d for t, _ in imports(path, top_level_only=True)
                           if (d := _resolve(t)) is not None and d != name})
             for name, path in MODULES.items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def walk(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in graph[n]:
            if state.get(m) == 1:
                circles.append(stack[stack.index(m):] + [m])
            elif m not in state:
                walk(m)
        stack.pop()
        state[n] = 2

    for n in graph:
        if n not in state:
            walk(n)
    assert not circles, "\n".join(" -> ".join(c) for c in circles)


def test_the_contract_check_would_see_an_upward_import(tmp_path, monkeypatch):
    """The checker itself: an import of the arena from an agent module is found."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from ono_env.arena import run_arena\n")
    monkeypatch.setitem(MODULES, "ono_env.agents.bad", bad)
    with pytest.raises(AssertionError, match=r"bad\.py:2 \(agents\) imports ono_env\.arena"):
        test_no_layer_imports_a_layer_above_it()


# ---- the 0.2 module paths ---------------------------------------------------------------
@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_an_old_module_path_warns_and_gives_the_new_module(old):
    new = _moved.MOVED[old]
    code = (f"import warnings, importlib\nwarnings.simplefilter('error')\n"
            f"new = importlib.import_module({new!r})\n"
            f"warnings.simplefilter('always')\n"
            f"with warnings.catch_warnings(record=True) as w:\n"
            f"    old = importlib.import_module({old!r})\n"
            f"assert old is new, (old, new)\n"
            f"assert [str(x.message) for x in w if x.category is DeprecationWarning] == "
            f"[{old!r} + ' moved to ' + {new!r} + '; the old path is removed in ono_env 0.4'], "
            f"[str(x.message) for x in w]\n")
    proc = python_code(code)
    assert proc.returncode == 0, proc.stderr


def test_the_warning_points_at_the_importing_line(tmp_path):
    (tmp_path / "user.py").write_text("import ono_env.gym_env\n")
    proc = subprocess.run([sys.executable, "-W", "always::DeprecationWarning", "-c",
                           "import user"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "user.py:1: DeprecationWarning: ono_env.gym_env moved to ono_env.envs.gym_env" \
        in proc.stderr, proc.stderr


def test_old_submodule_paths_of_a_moved_package():
    with pytest.warns(DeprecationWarning) as caught:
        old = importlib.import_module("ono_env.web.table")
    said = [str(w.message) for w in caught]
    assert any(s.startswith("ono_env.web moved to ono_env.apps.web;") for s in said), said
    assert any(s.startswith("ono_env.web.table moved to ono_env.apps.web.table;")
               for s in said), said
    assert old is importlib.import_module("ono_env.apps.web.table")
    assert _moved.new_name("ono_env.web.server") == "ono_env.apps.web.server"
    assert _moved.new_name("ono_env.game") is None
    assert _moved.new_name("ono_env.webby") is None


def test_a_pickle_naming_an_old_path_loads():
    """What an RLlib checkpoint holds of its env: the class by module path."""
    from ono_env.envs.rllib_env import OnoMultiAgentEnv

    data = pickle.dumps(OnoMultiAgentEnv, protocol=0).replace(b"ono_env.envs.rllib_env",
                                                  b"ono_env.rllib_env")
    assert b"ono_env.rllib_env" in data
    with pytest.warns(DeprecationWarning, match="ono_env.rllib_env moved"):
        assert pickle.loads(data) is OnoMultiAgentEnv


def test_the_old_rllib_vector_env_name_warns():
    from ono_env.envs import rllib_env

    with pytest.warns(DeprecationWarning, match="OnoRLlibVectorEnv"):
        assert rllib_env.OnoVectorEnv is rllib_env.OnoRLlibVectorEnv
    from ono_env.envs.gym_vector import OnoVectorEnv

    assert OnoVectorEnv is not rllib_env.OnoRLlibVectorEnv


def test_the_public_paths_do_not_warn():
    code = ("import warnings\nwarnings.simplefilter('error')\n"
            "import gymnasium\nfrom ono_env import ono_v0, env, raw_env, VecGame\n"
            "from ono_env.arena import run_arena, evaluate, ArenaResult\n"
            "from ono_env.agents import make_agent\n"
            "e = gymnasium.make('ono_env/Ono-v0', rules='basic', num_players=2)\n"
            "v = gymnasium.make_vec('ono_env/Ono-v0', num_envs=2, rules='basic', num_players=2,"
            " vectorization_mode='vector_entry_point')\n"
            "print(type(e.unwrapped).__module__, type(v).__module__)\n")
    proc = python_code(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["ono_env.envs.gym_env", "ono_env.envs.gym_vector"]


SCRIPT_MODULES = {"ono-demo": "ono_env.apps.demo", "ono-arena": "ono_env.apps.arena_cli",
                  "ono-play": "ono_env.apps.play", "ono-train": "ono_env.train.cli",
                  "ono-export": "ono_env.train.export", "ono-web": "ono_env.apps.web.server",
                  "ono-bench": "ono_env.apps.bench_cli", "ono-exploit": "ono_env.train.exploit"}


def test_console_scripts_point_at_the_apps(monkeypatch):
    """Each console script starts from a launcher (``ono_env.apps.launch``, and
    ``ono_env.train.launch`` for training's) that runs its application module's ``main``
    under its own name."""
    from importlib.metadata import entry_points

    from ono_env.apps import launch as apps_launch
    from ono_env.train import launch as train_launch

    scripts = {e.name: e for e in entry_points(group="console_scripts")
               if e.name.startswith("ono-")}
    assert sorted(scripts) == sorted(SCRIPT_MODULES)
    started = []
    for launcher in (apps_launch, train_launch):
        monkeypatch.setattr(launcher, "start", lambda module, script: started.append(
            (script, module)) or 0)
    for name, entry in scripts.items():
        assert entry.module in ("ono_env.apps.launch", "ono_env.train.launch")
        assert entry.load()() == 0
        assert started[-1] == (name, SCRIPT_MODULES[name])
        assert callable(importlib.import_module(SCRIPT_MODULES[name]).main)


def test_the_launchers_load_nothing_heavy():
    """``import ono_env`` and the console scripts' launchers load no numpy, numba or torch:
    the package's names load on first use, so a launcher is in place before the heavy
    modules load (and a Ctrl-C while they do ends with one line)."""
    code = ("import sys, ono_env, ono_env.apps.launch, ono_env.train.launch\n"
            "print(sorted(m for m in ('numpy', 'numba', 'torch', 'ono_env.game') "
            "if m in sys.modules))\n"
            "print(ono_env.VecGame.__module__, ono_env.cards.__name__, "
            "'numba' in sys.modules)\n")
    proc = python_code(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[]", "ono_env.game ono_env.cards True"]


def test_a_script_on_a_terminal_ends_with_its_last_line():
    """numba's coloured error messages (colorama) wrote an escape code, ``\\x1b[0m``, to the
    terminal as the process exited, after the script's last line; the launchers turn them
    off."""
    import pty

    primary, secondary = pty.openpty()
    code = ("import sys\nfrom ono_env.apps.launch import demo\n"
            "sys.argv = ['ono-demo', '--games', '1', '--quiet']\nsys.exit(demo())\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING"}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=secondary, stderr=secondary,
                            env=env)
    os.close(secondary)
    out = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:   # the terminal closed with the process
            break
        if not chunk:
            break
        out += chunk
    os.close(primary)
    assert proc.wait(timeout=300) == 0
    assert out.startswith(b"summary: 1 game of basic rules") and out.endswith(b"decisions\r\n"), out


def test_the_packages_attributes_are_its_names_and_public_submodules():
    """``ono_env``'s names and public submodules load on first use; any other name is an
    ``AttributeError`` that imports nothing (before the names were lazy no name imported a
    module; the first lazy version imported any submodule for any name: ``_prebuild``, the
    old ``cli`` path with its warning, and failed on ``"a.b"`` with ModuleNotFoundError)."""
    code = ("import sys, warnings\nwarnings.simplefilter('error')\nimport ono_env\n"
            "print([hasattr(ono_env, n) for n in ('a.b', '..', 'cli', 'driver', '_prebuild', "
            "'_engine', '__wrapped__')])\n"
            "print(sorted(m for m in sys.modules if m.startswith('ono_env.')))\n"
            "print(ono_env.positions.__name__, ono_env.rule_help.__name__)\n"
            "print([n for n in dir(ono_env) if n.startswith('_')])\n")
    proc = python_code(code)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == str([False] * 7)
    assert lines[1] == "['ono_env._moved']"
    assert lines[2] == "ono_env.positions ono_env.rule_help"
    assert lines[3] == "['__version__']"
    names = {m.split(".")[1] for m in MODULES if m.count(".") >= 1}
    assert set(ono_env._SUBMODULES) == {n for n in names if not n.startswith("_")} | {
        "agents", "train", "configs"}


def test_a_ctrl_c_while_a_script_loads_ends_with_one_line(tmp_path, monkeypatch, capsys):
    """A Ctrl-C while a console script's modules load (here: a module whose import is
    interrupted, and one whose import a SIGINT makes fail as numba's C extensions do) ends
    with ``<script>: interrupted`` and status 130, no traceback; before, the package's own
    import loaded numba, and a Ctrl-C then printed a traceback. A module that does not load
    for another reason is one line too."""
    import signal

    from ono_env.apps.launch import start

    monkeypatch.delenv("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", raising=False)
    (tmp_path / "slow_to_load.py").write_text("raise KeyboardInterrupt\n")
    (tmp_path / "fails_on_sigint.py").write_text(
        "import os, signal\n"
        "try:\n    os.kill(os.getpid(), signal.SIGINT)\n"
        "except KeyboardInterrupt:\n    raise ImportError('numba._devicearray failed to import')\n")
    (tmp_path / "broken.py").write_text("import no_such_module_here\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = signal.getsignal(signal.SIGINT)
    try:
        for module in ("slow_to_load", "fails_on_sigint"):
            signal.signal(signal.SIGINT, signal.default_int_handler)
            assert start(module, "ono-arena") == 130
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            out = capsys.readouterr()
            assert (out.out, out.err) == ("", "ono-arena: interrupted\n")
    finally:
        signal.signal(signal.SIGINT, before)
    assert start("broken", "ono-demo") == 2
    assert capsys.readouterr().err == ("ono-demo: error: cannot load broken: ModuleNotFoundError: "
                                       "No module named 'no_such_module_here'\n")
    (tmp_path / "runs_fine.py").write_text("def main():\n    return 3\n")
    assert start("runs_fine", "ono-demo") == 3


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_sigterm_while_a_script_loads_ends_with_one_line(tmp_path, name):
    """As a Ctrl-C then does, and as the scripts' own handling ends on it (before: the
    process ended by the signal without a word)."""
    import signal

    (tmp_path / "stopped_loading.py").write_text(
        f"import os, signal, time\nos.kill(os.getpid(), signal.{name})\ntime.sleep(60)\n")
    code = (f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n"
            f"from ono_env.apps.launch import start\nsys.exit(start('stopped_loading', 'ono-arena'))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -getattr(signal, name), proc
    assert proc.stderr == f"ono-arena: stopped by {name}\n"


def test_the_results_json_files_are_strict_json():
    """Every JSON file under docs/results holds no NaN or Infinity, which Python writes by
    default but JSON does not have (JavaScript's JSON.parse and jq refuse such a file)."""
    def no_constant(name):
        raise ValueError(f"{name} is not JSON")

    files = sorted((ROOT / "docs" / "results").rglob("*.json"))
    assert len(files) > 100
    for path in files:
        try:
            json.loads(path.read_text(encoding="utf-8"), parse_constant=no_constant)
        except ValueError as e:
            raise AssertionError(f"{path.relative_to(ROOT)}: {e}") from None


# ---- the files of 0.2 read unchanged ----------------------------------------------------
def test_saved_files_of_before_the_move_still_load():
    """Model files, arena results, positions and replays hold no module path: files written
    before the package moved (the shipped models, the arena results under docs/results, a
    position and a replay that 0.2 wrote) load as before."""
    from ono_env.agents.learned import load_agent, shipped_models
    from ono_env.arena import mirrored_record, read_arena_json, run_arena
    from ono_env.replay import Replay, replay_positions

    models = shipped_models()
    assert models
    for path in models.values():
        agent = load_agent(path)
        assert agent.act(np.zeros((1, agent.obs_size), np.float32),
                         np.ones((1, ono_env.NUM_ACTIONS), bool),
                         np.random.default_rng(0)).shape == (1,)
    run = read_arena_json(ROOT / "docs" / "results" / "arena-basic-2p" / "arena.json")
    assert run["games"] > 0
    mirrored = ROOT / "docs" / "results" / "ladder" / "ppo-vs-maskable-seed13" / "arena.json"
    assert len(mirrored_record(read_arena_json(mirrored), "run")["per_deal"]) == 2
    # a position and a replay that ono_env 0.2 wrote (tests/data/v0.2)
    old = ROOT / "tests" / "data" / "v0.2"
    text = (old / "position.json").read_text()
    again = ono_env.VecGame.from_json(text)
    assert json.loads(again.to_json(0)) == json.loads(text)
    replay = Replay.load(old / "replay.json")
    positions = replay_positions(replay)   # plays it and checks its recorded result
    assert len(positions) == len(replay.actions) + 1 and positions[-1]["terminated"]
    recorded = run_arena(["greedy", "random"], "basic", 2, num_games=2, record=1).replays[0]
    assert Replay.from_json(recorded.to_json()).to_json() == recorded.to_json()


def test_no_module_of_the_package_warns_on_import():
    code = ("import warnings, importlib\nwarnings.simplefilter('error')\n"
            f"for m in {sorted(m for m in MODULES if not m.endswith('__main__'))!r}:\n"
            "    importlib.import_module(m)\n")
    proc = python_code(code, timeout=600, cwd=ROOT / "tests")
    assert proc.returncode == 0, proc.stderr[-3000:]
    warnings.simplefilter("default")


def test_the_docs_sidebar_handler_collapses_and_shares_a_results_folders_sidebar():
    """docs/conf.py's ``html-page-context`` handler, run in a fresh interpreter (the file
    changes the import path): every page's ``toctree()`` collapses; a results page's goes one
    level deep and is computed once per folder; results/index and the other pages get their
    own."""
    code = r"""
import runpy
conf = runpy.run_path("docs/conf.py")
handler = conf["_collapse_navigation"]
calls = []

def toctree(**kwargs):
    calls.append(kwargs)
    return "tree %d" % len(calls)

def sidebar(page):
    context = {"toctree": toctree}
    handler(None, page, "page.html", context, None)
    return context["toctree"](includehidden=True)

got = {page: sidebar(page) for page in
       ["results/a", "results/b", "results/generalist/run-1/results",
        "results/generalist/run-2/results", "results/generalist/run-1/more",
        "results/index", "results/index", "training", "training"]}
print(got)
print(calls)
assert got["results/a"] == got["results/b"] == "tree 1", got
assert got["results/generalist/run-1/results"] == got["results/generalist/run-1/more"] == "tree 2"
assert got["results/generalist/run-2/results"] == "tree 3"
assert calls[:3] == [{"includehidden": True, "collapse": True, "maxdepth": 1}] * 3, calls
assert calls[3:] == [{"includehidden": True, "collapse": True}] * 4, calls
assert len(calls) == 7
"""
    run = python_code(code, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]


def test_a_closed_standard_error_is_the_null_device(tmp_path):
    """``2>&-``: the scripts' messages go nowhere and their work goes on (before: the first
    message failed, status 1, and ono-train left a run folder behind); a refusal is still
    status 2."""
    import os
    import subprocess
    import sys

    def run(*argv):
        return subprocess.run([sys.executable, "-c", "import sys; from ono_env.apps.launch "
                               "import start; sys.argv = sys.argv[1:]; "
                               "sys.exit(start(sys.argv[0], sys.argv[1]))", *argv],
                              stdout=subprocess.PIPE, text=True, timeout=300,
                              preexec_fn=lambda: os.close(2))
    ok = run("ono_env.apps.arena_cli", "greedy", "greedy", "--players", "2", "--games", "4",
             "--no-rating")
    assert ok.returncode == 0 and "greedy#2" in ok.stdout
    bad = run("ono_env.apps.arena_cli", "greedy", "--players", "2")
    assert bad.returncode == 2 and bad.stdout == ""
