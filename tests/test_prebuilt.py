"""Prebuilt kernels (ono_env/_prebuilt/, written by the build step): used only where they fit,
playing exactly like kernels compiled on this machine, and a first import that plays random
games compiles nothing.

The tests that need the prebuilt kernels of this install skip without them (an install whose
build step could not run), except in CI (``ONO_REQUIRE_PREBUILT=1``), where they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from ono_env import _compile as K
from ono_env import _cpu, _prebuild


def _needs_prebuilt():
    status = K.prebuilt_status()
    if status != "used":
        if os.environ.get("ONO_REQUIRE_PREBUILT") == "1":
            pytest.fail(f"prebuilt kernels: {status}")
        pytest.skip(f"prebuilt kernels: {status}")


def _run(code: str, **env) -> str:
    full = dict(os.environ, **env)
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=900, env=full)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


FIRST_IMPORT = """
from numba.core import event
compiles = []
class Count(event.Listener):
    def on_start(self, e):
        compiles.append(e.data["dispatcher"].py_func.__name__)
    def on_end(self, e):
        pass
event.register("numba:compile", Count())
import ono_env
from ono_env import _compile
g = ono_env.VecGame("classic", 3, seed=0)
g.play_random(200, seed=0)
g.step(g.legal_mask().argmax(axis=1))
g.observe(g.current_player)
print(_compile.prebuilt_status())
print(len(compiles), len(_compile._PENDING))
"""


def test_first_import_with_an_empty_numba_cache_compiles_nothing(tmp_path):
    """A fresh machine (numba's cache empty): import, random play, a step and an
    observation load prebuilt kernels, compile no function and leave every rules function
    uncompiled."""
    _needs_prebuilt()
    out = _run(FIRST_IMPORT, NUMBA_CACHE_DIR=str(tmp_path)).split("\n")
    assert out[0] == "used"
    compiles, pending = map(int, out[1].split())
    assert compiles == 0
    assert pending > 20


NO_CACHE_FOLDER = """
import warnings
from numba.core import caching
# numba finds no folder it can write (a read-only install, no writable home): every one of
# its locators declines, and a cache made for a function raises "no locator available"
for locator in caching.CacheImpl._locator_classes:
    locator.from_function = classmethod(lambda cls, py_func, py_file: None)
warnings.simplefilter("error")   # a warning too would be a failure
import ono_env
g = ono_env.VecGame("classic", 3, seed=0)
g.play_random(200, seed=0)
g.observe(g.current_player)
from ono_env import _compile
print(_compile.prebuilt_status())
"""


def test_the_prebuilt_kernels_load_where_numba_finds_no_folder_to_cache_in(monkeypatch):
    """Before: numba's cache was made for every kernel at import, and where it finds no
    folder it can write (a read-only install, no writable home) its "no locator available"
    RuntimeError stopped ``import ono_env``, though the prebuilt kernels fit and need no
    cache. Now the cache is made only where a kernel compiles, and there it is none, after
    one warning (checked below on a cache made for a function, without compiling it)."""
    _needs_prebuilt()
    assert _run(NO_CACHE_FOLDER).strip() == "used"
    from numba.core import caching

    for locator in caching.CacheImpl._locator_classes:
        monkeypatch.setattr(locator, "from_function",
                            classmethod(lambda cls, py_func, py_file: None))
    monkeypatch.delitem(K._PREBUILT_STATE, "said_no_cache", raising=False)

    def kernel_source():   # any function of a file: numba's locators decline it
        return 0
    with pytest.warns(RuntimeWarning, match=r"^ono_env: numba finds no folder it can write to "
                                             r"cache compiled kernels in .*set NUMBA_CACHE_DIR"):
        cache = K._cache_classes().make_user_cache(kernel_source)
    assert isinstance(cache, caching.NullCache)
    monkeypatch.setitem(K._PREBUILT_STATE, "said_no_cache", False)


PLAY = """
import json, numpy as np, ono_env
from ono_env import _compile
from ono_env.agents import make_agent
from ono_env.arena import run_arena
out = {"status": _compile.prebuilt_status(), "games": []}
for preset, players in (("basic", 2), ("basic", 4), ("classic", 2), ("ono", 3), ("stacking", 5),
                        ("uno2018", 2), ("wikipedia", 4)):
    g = ono_env.VecGame(preset, 4, seed=7, num_players=players)
    g.play_random(300, seed=1)
    rng = np.random.default_rng(3)
    for _ in range(60):
        mask = g.legal_mask()
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in mask])
        g.step(actions)
        g.reset(which=g.finished.copy()) if g.finished.any() else None
    out["games"].append([g.to_dict(i) for i in range(4)])
    out["games"].append(g.observe(g.current_player).round(6).tolist())
res = run_arena(["greedy", "defensive"], rules="basic", num_players=2, num_games=60, seed=5,
                rating=False)
out["arena"] = [res.records.wins.tolist(), res.records.length.tolist()]
print(json.dumps(out, sort_keys=True, default=str))
"""


def test_prebuilt_kernels_play_exactly_like_kernels_compiled_here(tmp_path):
    """Random play, steps, resets, observations and a compiled-baseline arena give the same
    positions, observations and results with the prebuilt kernels as with kernels compiled
    on this machine (ONO_ENV_PREBUILT=0, an empty numba cache)."""
    _needs_prebuilt()
    prebuilt = json.loads(_run(PLAY))
    compiled = json.loads(_run(PLAY, ONO_ENV_PREBUILT="0", NUMBA_CACHE_DIR=str(tmp_path)))
    assert prebuilt["status"] == "used"
    assert compiled["status"] == "not used: ONO_ENV_PREBUILT=0"
    assert prebuilt["games"] == compiled["games"]
    assert prebuilt["arena"] == compiled["arena"]


@pytest.fixture
def fresh_status(monkeypatch):
    """prebuilt_status() computed anew (and forgotten after the test)."""
    monkeypatch.setattr(K, "_PREBUILT_STATE", {})
    return K.prebuilt_status


def _fake_prebuilt(monkeypatch, tmp_path, **changes):
    manifest = K.manifest()
    manifest.update(changes)
    (tmp_path / K.MANIFEST).write_text(json.dumps(manifest))
    monkeypatch.setattr(K, "PREBUILT_DIR", tmp_path)
    monkeypatch.delenv(K.DISABLE_ENV, raising=False)
    monkeypatch.delenv(_cpu.BUILD_ENV, raising=False)


def test_prebuilt_kernels_matching_this_machine_are_used(monkeypatch, tmp_path, fresh_status):
    _fake_prebuilt(monkeypatch, tmp_path)
    assert fresh_status() == "used"


@pytest.mark.parametrize("changes, says", [
    ({"sources": "0" * 64}, "the rules sources changed since the build"),
    ({"numba": "0.1.0"}, "built for numba 0.1.0"),
    ({"numpy": "1.0"}, "built for numpy 1.0"),
    ({"python": "2.7"}, "built for python 2.7"),
    ({"machine": "riscv64"}, "built for machine riscv64"),
    ({"features": ["popcnt", "no-such-feature"]}, "this CPU lacks no-such-feature"),
    # every difference, not the first alone
    ({"numpy": "1.0", "python": "2.7"}, "built for numpy 1.0, this is "),
    ({"numpy": "1.0", "python": "2.7"}, "; built for python 2.7, this is "),
])
def test_prebuilt_kernels_that_do_not_fit_are_not_used(monkeypatch, tmp_path, fresh_status,
                                                       changes, says):
    _fake_prebuilt(monkeypatch, tmp_path, **changes)
    status = fresh_status()
    assert status.startswith("not used") and says in status, status


def test_compiling_where_the_prebuilt_kernels_do_not_fit_is_said_once(monkeypatch, tmp_path,
                                                                       fresh_status):
    """Before: the first use compiled for about 20 s without a word (the reason went to an
    INFO log). Now one warning as the first kernel compiles, and none where the user chose to
    compile (ONO_ENV_PREBUILT=0)."""
    import warnings

    _fake_prebuilt(monkeypatch, tmp_path, numpy="1.0")
    fresh_status()
    with pytest.warns(RuntimeWarning, match=r"^ono_env: prebuilt kernels not used: built for "
                                            r"numpy 1.0, this is .*: compiling the kernels"):
        K._say_compiling()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        K._say_compiling()   # once per process
        monkeypatch.setenv(K.DISABLE_ENV, "0")
        monkeypatch.setattr(K, "_PREBUILT_STATE", {})   # a new process, this setting chosen
        assert K.prebuilt_status() == "not used: ONO_ENV_PREBUILT=0"
        K._say_compiling()


def test_no_prebuilt_kernels_or_disabled(monkeypatch, tmp_path, fresh_status):
    monkeypatch.setattr(K, "PREBUILT_DIR", tmp_path / "missing")
    monkeypatch.delenv(_cpu.BUILD_ENV, raising=False)
    assert fresh_status() == "not used: this install has no prebuilt kernels"
    _fake_prebuilt(monkeypatch, tmp_path)
    monkeypatch.setenv(K.DISABLE_ENV, "0")
    K._PREBUILT_STATE.clear()
    assert fresh_status() == "not used: ONO_ENV_PREBUILT=0"


def test_source_hash_covers_every_rules_source(monkeypatch, tmp_path):
    """Editing any file whose code the kernels hold changes the hash (so stale prebuilt
    kernels are never used)."""
    import shutil
    from pathlib import Path

    here = Path(K.__file__).parent
    copy = tmp_path / "ono_env"
    copy.mkdir()
    for name in K.RULES_SOURCES:
        shutil.copy(here / name, copy / name)
    agents = tmp_path / "agents"
    agents.mkdir()
    for name in K.AGENT_SOURCES:
        shutil.copy(K._agents_dir() / name, agents / name)
    monkeypatch.setattr(K, "__file__", str(copy / "_compile.py"))
    monkeypatch.setattr(K, "_agents_dir", lambda: agents)
    base = K.source_hash()
    for path in [copy / n for n in K.RULES_SOURCES] + [agents / n for n in K.AGENT_SOURCES]:
        text = path.read_text()
        path.write_text(text + "\n# edited\n")
        assert K.source_hash() != base, path.name
        path.write_text(text)
    assert K.source_hash() == base


def test_portable_cpu_levels():
    assert _cpu.portable_cpu("x86_64")[0] == "x86-64-v2"
    assert "popcnt" in _cpu.portable_cpu("x86_64")[1]
    assert _cpu.portable_cpu("aarch64") == ("generic", ())


def _some_function(x):
    return x


def test_kernel_cache_lookup_order(monkeypatch, fresh_status, tmp_path):
    """Prebuilt first, then numba's cache; an unreadable prebuilt file is a miss; a miss in
    both compiles the rules functions first (so the kernel links them at their signatures)."""
    _fake_prebuilt(monkeypatch, tmp_path)
    assert fresh_status() == "used"

    class Found:
        def __init__(self, value=None, error=None):
            self.value, self.error, self.calls = value, error, 0

        def load_overload(self, sig, ctx):
            self.calls += 1
            if self.error:
                raise self.error
            return self.value

    compiled_rules = []
    monkeypatch.setattr(K, "compile_rules", lambda: compiled_rules.append(1))
    cache = K._cache_classes()(_some_function)

    cache._prebuilt, cache._user = Found("prebuilt"), Found("user")
    assert cache.load_overload("sig", None) == "prebuilt" and cache._user.calls == 0
    cache._prebuilt, cache._user = Found(None), Found("user")
    assert cache.load_overload("sig", None) == "user"
    cache._prebuilt, cache._user = Found(error=EOFError("truncated")), Found("user")
    assert cache.load_overload("sig", None) == "user"
    assert not compiled_rules
    cache._prebuilt, cache._user = Found(None), Found(None)
    assert cache.load_overload("sig", None) is None
    assert compiled_rules == [1]


def test_numbas_own_cache_is_stamped_with_every_rules_source():
    """A cached kernel holds the rules functions it calls from other modules (a search
    kernel the engine's): numba's usual stamp, the time of the function's own file, would
    keep serving it after the engine changed. Kernels and rules functions alike are stamped
    with the hash of every rules source instead."""
    from ono_env import _engine as E
    kernel_cache = K._cache_classes()(_some_function)
    assert kernel_cache._user._impl.locator.get_source_stamp() == K.source_hash()
    K.compile_rules()
    assert isinstance(E._deal._cache, K._cache_classes().user_cache)
    assert E._deal._cache._impl.locator.get_source_stamp() == K.source_hash()


@pytest.mark.parametrize("value", ["off", "false", "", "2", " 0"])
def test_a_bad_prebuilt_setting_is_refused(monkeypatch, tmp_path, fresh_status, value):
    _fake_prebuilt(monkeypatch, tmp_path)
    monkeypatch.setenv(K.DISABLE_ENV, value)
    with pytest.raises(ValueError, match=r"ONO_ENV_PREBUILT must be 0 .* or 1 .*got"):
        fresh_status()


@pytest.mark.parametrize("setting, value", [("BOUNDSCHECK", True), ("DEBUGINFO_DEFAULT", True)])
def test_numba_set_to_compile_differently_does_not_use_them(monkeypatch, tmp_path, fresh_status,
                                                            setting, value):
    import numba

    _fake_prebuilt(monkeypatch, tmp_path)
    monkeypatch.setattr(numba.config, setting, value)
    status = fresh_status()
    assert status.startswith("not used: numba is set to compile differently"), status


def test_the_triple_drops_the_os_release():
    assert K._portable_triple("arm64-apple-darwin23.1.0") == "arm64-apple-darwin"
    assert K._portable_triple("x86_64-unknown-linux-gnu") == "x86_64-unknown-linux-gnu"


def test_a_failed_build_leaves_no_prebuilt_folder(monkeypatch, tmp_path):
    """Only a whole build lands: a build process that fails after writing some kernels
    leaves no folder behind (and none of an earlier build)."""
    from pathlib import Path

    out = tmp_path / "_prebuilt"
    out.mkdir()
    (out / "old.nbi").write_text("an earlier build")

    def fails(cmd, env, check):
        partial = Path(env[_cpu.BUILD_ENV])
        partial.mkdir(parents=True)
        (partial / "half.nbi").write_text("")
        assert not any(k.startswith("NUMBA_") and k not in (
            "NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES", "NUMBA_CACHE_DIR") for k in env)
        raise subprocess.CalledProcessError(1, cmd)

    monkeypatch.setenv("NUMBA_BOUNDSCHECK", "1")
    monkeypatch.setattr(_prebuild.subprocess, "run", fails)
    with pytest.raises(subprocess.CalledProcessError):
        _prebuild.build(tmp_path, out)
    assert not out.exists()



AS_SETUPTOOLS = """
import importlib.abc, importlib.util, json, os, subprocess, sys
from pathlib import Path

class NoPackage(importlib.abc.MetaPathFinder):   # no ono_env installed anywhere
    def find_spec(self, name, path=None, target=None):
        if name == "ono_env" or name.startswith("ono_env."):
            raise ModuleNotFoundError(f"No module named {name!r}")

sys.meta_path.insert(0, NoPackage())
for name in [m for m in sys.modules if m == "ono_env" or m.startswith("ono_env.")]:
    del sys.modules[name]
root = Path(os.environ["ONO_ROOT"])
# as setuptools loads a cmdclass: from its file, under its dotted name, with no package
spec = importlib.util.spec_from_file_location("ono_env._prebuild", root / "ono_env" / "_prebuild.py")
prebuild = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prebuild)
seen = {}

def run(cmd, env, check):   # the build process, stood in for: writes a whole build
    partial = Path(env["_ONO_ENV_PREBUILDING"])
    partial.mkdir(parents=True)
    (partial / "manifest.json").write_text("{}")
    seen.update(cmd=cmd[1:], cpu=env["NUMBA_CPU_NAME"], cache=env["NUMBA_CACHE_DIR"])

prebuild.subprocess.run = run
out = Path(os.environ["ONO_OUT"])
prebuild.build(root, out)
print(json.dumps({**seen, "landed": sorted(p.name for p in out.iterdir())}))
"""


def test_the_build_step_needs_no_installed_package(tmp_path):
    """setuptools loads the build step from its file, and on a machine with no ono_env
    installed nothing makes ``ono_env`` importable in the installer's process: the step
    still starts its build process, with the portable CPU level of this source tree's
    ``_cpu``, and lands the build (it once failed there with "No module named 'ono_env'",
    and pip's quiet output hid the warning)."""
    from pathlib import Path

    root = Path(_prebuild.__file__).resolve().parent.parent
    out = tmp_path / "_prebuilt"
    seen = json.loads(_run(AS_SETUPTOOLS, ONO_ROOT=str(root), ONO_OUT=str(out)))
    assert seen["cmd"][:2] == [str(root / "ono_env" / "_prebuild.py"), str(root)]
    assert seen["cpu"] == _cpu.portable_cpu()[0]
    assert seen["landed"] == ["manifest.json"]

HASHED = """
import importlib.util, os, sys
from pathlib import Path
root = Path(os.environ["ONO_ROOT"])
spec = importlib.util.spec_from_file_location("prebuild", root / "ono_env" / "_prebuild.py")
_prebuild = importlib.util.module_from_spec(spec)
spec.loader.exec_module(_prebuild)
_prebuild.load_rules_packages(root)
import importlib
for name in _prebuild.KERNEL_MODULES:
    importlib.import_module(name)
for name, module in sorted(sys.modules.items()):
    if name.startswith("ono_env") and getattr(module, "__file__", None):
        print(Path(module.__file__).name)
"""


def test_every_module_the_kernels_are_built_from_is_hashed():
    """The build loads exactly the modules whose code the kernels hold: each of them is in
    the source hash, so a new one left out of it would fail here."""
    from pathlib import Path

    root = Path(K.__file__).resolve().parent.parent
    out = _run(HASHED, ONO_ROOT=str(root))
    loaded = {line for line in out.split() if line and line != "__init__.py"}
    assert loaded, out
    assert loaded <= set(K.RULES_SOURCES) | set(K.AGENT_SOURCES), loaded


def test_a_bad_prebuilt_setting_is_one_line_from_a_console_script(tmp_path):
    """Importing ono_env does not fail on it; the first kernel does, and a console script
    says so in one line with status 2."""
    env = dict(os.environ, ONO_ENV_PREBUILT="off", NUMBA_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", "import ono_env; print('imported')"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "imported", proc.stderr
    proc = subprocess.run(["ono-arena", "greedy", "random", "--players", "2", "--games", "10",
                           "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "ONO_ENV_PREBUILT='off'; allowed: 0 or 1" in proc.stderr


def test_a_build_copies_a_whole_earlier_build_of_the_same_sources_and_versions(monkeypatch,
                                                                                tmp_path):
    """A wheel built from a source tree whose editable install holds a whole build reuses it
    (:func:`ono_env._prebuild.reusable`): its manifest is the one a build process prints
    now. One that differs in anything it records, or that has no manifest, is built anew."""
    import shutil
    from pathlib import Path

    _needs_prebuilt()
    root = Path(K.__file__).resolve().parent.parent
    here = root / "ono_env" / "_prebuilt"
    if not (root / "agents").is_dir() or K.PREBUILT_DIR.resolve() != here.resolve():
        pytest.skip("not an editable install of a source tree")
    if json.loads((here / "manifest.json").read_text()).get("build_step") != _prebuild.step_hash():
        why = "the editable build predates this build step: pip install -e . again"
        if os.environ.get("ONO_REQUIRE_PREBUILT") == "1":
            pytest.fail(why)
        pytest.skip(why)
    assert _prebuild.reusable(root, here)
    calls = []
    run = subprocess.run

    def only_the_manifest(cmd, **kwargs):
        calls.append(cmd)
        assert "--manifest" in cmd, "the build compiled the kernels instead of copying them"
        return run(cmd, **kwargs)

    monkeypatch.setattr(_prebuild.subprocess, "run", only_the_manifest)
    out = tmp_path / "wheel" / "_prebuilt"
    out.mkdir(parents=True)
    (out / "stale.nbi").write_text("what build_py copied")
    _prebuild.build(root, out, reuse=here)
    assert len(calls) == 1
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in here.iterdir())
    assert (out / "manifest.json").read_bytes() == (here / "manifest.json").read_bytes()
    monkeypatch.setattr(_prebuild.subprocess, "run", run)

    other = tmp_path / "other"
    shutil.copytree(here, other)
    manifest = json.loads((other / "manifest.json").read_text())
    for key, value in (("numba", "0.0.1"), ("sources", "0" * 64), ("build_step", "0" * 64),
                       ("cpu", "pentium")):
        (other / "manifest.json").write_text(json.dumps({**manifest, key: value}))
        assert not _prebuild.reusable(root, other), key
    (other / "manifest.json").unlink()
    assert not _prebuild.reusable(root, other)


def test_a_build_whose_manifest_check_fails_compiles_as_ever(monkeypatch, tmp_path, capsys):
    """When the build process cannot say what it would build, the earlier build is not
    reused: one line says why, and the kernels are compiled and land whole."""
    from pathlib import Path

    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "manifest.json").write_text("{}")
    calls = []

    def run(cmd, **kwargs):
        calls.append(cmd)
        if "--manifest" in cmd:
            raise subprocess.CalledProcessError(1, cmd, "", "Traceback ...\nImportError: no numba")
        partial = Path(kwargs["env"][_cpu.BUILD_ENV])
        partial.mkdir(parents=True)
        (partial / "kernel.nbi").write_text("compiled")
        (partial / "manifest.json").write_text("{}")

    monkeypatch.setattr(_prebuild.subprocess, "run", run)
    out = tmp_path / "_prebuilt"
    _prebuild.build(tmp_path, out, reuse=earlier)
    assert len(calls) == 2 and "--manifest" not in calls[1]
    assert (out / "kernel.nbi").read_text() == "compiled"
    assert not (tmp_path / "_prebuilt.landing").exists()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not reused" in err and "ImportError: no numba" in err
