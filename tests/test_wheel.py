"""The package as a stranger installs it: a wheel (not editable) in a fresh virtual
environment with the base dependencies only, used from a folder that holds its own
``agents.py`` and ``train.py`` (names common in research code, which must not shadow ours).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd: list[str], cwd: Path, timeout: int = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    return proc


def _source_copy(dest: Path) -> Path:
    """The working tree's source files (tracked, and new ones git does not ignore) and its
    prebuilt kernels (which the build step reuses where they are current) copied to ``dest``:
    the build writes its build/ and egg-info folders there, not into the checkout, and two
    test processes building at once do not share them."""
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                  cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    for name in filter(None, listed.stdout.split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    prebuilt = ROOT / "ono_env" / "_prebuilt"   # ignored by git: the kernels the build reuses
    if prebuilt.is_dir():
        shutil.copytree(prebuilt, dest / "ono_env" / "_prebuilt")
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    src = _source_copy(tmp_path_factory.mktemp("source"))
    proc = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                 "-q", "-w", str(out), str(src)], cwd=out)
    assert proc.returncode == 0, proc.stderr
    (whl,) = out.glob("ono_env-*.whl")
    return whl


def test_wheel_has_one_import_name_and_carries_configs_and_models(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if ".dist-info/" not in n}
    assert tops == {"ono_env"}
    for expected in ("ono_env/configs/rules/classic.yaml", "ono_env/configs/train/default.yaml",
                     "ono_env/configs/train/generalist.yaml",
                     "ono_env/agents/models/ppo-basic-2p.safetensors",
                     "ono_env/agents/models/ppo-classic-2p.safetensors",
                     "ono_env/agents/models/ppo-basic-4p.safetensors",
                     "ono_env/agents/models/ppo-any.safetensors",
                     "ono_env/agents/rule_based.py", "ono_env/train/config.py",
                     "ono_env/apps/web/static/index.html", "ono_env/apps/web/static/app.js",
                     "ono_env/apps/web/static/style.css", "ono_env/replay.py"):
        assert expected in names, expected
    # nothing from the source tree that is not package code or data: numba cache files only
    # as the prebuilt kernels the build step wrote, none from a __pycache__
    assert not [n for n in names if n.endswith((".zip", ".pyc"))]
    assert not [n for n in names
                if n.endswith((".nbi", ".nbc")) and not n.startswith("ono_env/_prebuilt/")]
    assert "ono_env/_prebuilt/manifest.json" in names
    # the licence's text (MIT asks copies to carry it), in the wheel's metadata
    (licence,) = [n for n in names if n.endswith("LICENSE")]   # once, not in the package too
    assert licence.endswith(".dist-info/licenses/ono_env/LICENSE")
    assert zipfile.ZipFile(wheel).read(licence).startswith(b"MIT License")
    for kernel in ("_engine.reset", "_engine.random_moves", "_engine.step", "_engine.observe",
                   "_engine.legal_mask", "_baselines.policy_moves", "_search.pimc_search"):
        assert [n for n in names if n.startswith(f"ono_env/_prebuilt/{kernel}-")
                and n.endswith(".nbc")], kernel


def test_wheel_installs_and_works_from_a_folder_with_its_own_agents_and_train(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    py = bin_dir / "python"
    # numba at the version the wheel's kernels were prebuilt with (a newer one would
    # compile them on first use instead, which is correct but not what this test checks)
    import numba
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel),
                 f"numba=={numba.__version__}"], cwd=tmp_path, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]

    work = tmp_path / "research"
    work.mkdir()
    (work / "agents.py").write_text("raise RuntimeError('the user\\'s own agents.py was imported')\n")
    (work / "train.py").write_text("raise RuntimeError('the user\\'s own train.py was imported')\n")
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"

    proc = _run([str(bin_dir / "ono-train"), "default", "--print-config"], cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "name: default" in proc.stdout and "total_steps: 1000000" in proc.stdout

    proc = _run([str(bin_dir / "ono-arena"), "greedy", "random", "--games", "200",
                 "--players", "2", "--no-progress"], cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "greedy" in proc.stdout and "random" in proc.stdout

    check = (
        "import sys, importlib.util, ono_env\n"
        "from ono_env.agents import make_agent\n"
        "from ono_env.rules import RuleSet\n"
        "assert ono_env.__file__.startswith(sys.prefix), ono_env.__file__\n"
        "assert importlib.util.find_spec('torch') is None, 'torch came with the base install'\n"
        "for name, preset in (('ppo-basic-2p', 'basic'), ('ppo-classic-2p', 'classic')):\n"
        "    agent = make_agent(name, RuleSet.preset(preset, num_players=2))\n"
        "    print(name, type(agent).__name__)\n"
        "print(RuleSet.load('ono').name)\n"
    )
    proc = _run([str(py), "-c", check], cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "ppo-basic-2p LearnedAgent" in proc.stdout and "ppo-classic-2p LearnedAgent" in proc.stdout
    assert proc.stdout.strip().endswith("ono")

    # a first import on a machine with an empty numba cache: the prebuilt kernels are
    # used, and random play, a step and an observation compile nothing
    first = (
        "from numba.core import event\n"
        "n = []\n"
        "class C(event.Listener):\n"
        "    def on_start(self, e): n.append(1)\n"
        "    def on_end(self, e): pass\n"
        "event.register('numba:compile', C())\n"
        "import ono_env\n"
        "from ono_env import _compile\n"
        "g = ono_env.VecGame('classic', 2, seed=0)\n"
        "g.play_random(100, seed=0)\n"
        "g.step(g.legal_mask().argmax(axis=1))\n"
        "print(_compile.prebuilt_status(), len(n))\n"
    )
    proc = _run([str(py), "-c", first], cwd=work, env={**env, "NUMBA_CACHE_DIR": str(tmp_path / "nc")})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["used", "0"]

    # without the [train] extra, training says what to install, in one line
    proc = _run([str(bin_dir / "ono-train"), "default", "total_steps=100"], cwd=work, env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "pip install 'ono-env[train]'" in proc.stderr
    # and so does the web table without the [web] extra
    proc = _run([str(bin_dir / "ono-web"), "--port", "0"], cwd=work, env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "pip install 'ono-env[web]'" in proc.stderr
