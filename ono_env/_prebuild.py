"""Build step: compile every kernel into ``ono_env/_prebuilt/`` when the package is built.

``pyproject.toml`` names :class:`BuildPy` as setuptools' ``build_py`` command, so ``pip
install`` (a wheel, an sdist, or ``pip install -e .``, which writes into the source tree)
runs it after copying the package. It compiles the kernels of ``ono_env._engine``,
``ono_env.agents._baselines`` and ``ono_env.agents._search`` in a process of its own, for the portable
CPU level of the architecture (:func:`portable_cpu`), and saves them as numba cache files
with a manifest of what they were built for (:mod:`ono_env._compile` says when they are
used). It takes about a minute of CPU. If it fails (a compile error in an edited checkout,
no room on disk), the install goes on with a warning and no prebuilt kernels, which then
compile on first use, as they would on a machine they were not built for.

A wheel or install built from a source tree that already holds a whole build (an editable
install's ``ono_env/_prebuilt/``) copies those kernels instead when that build's manifest
is the one this build would write: the same numba, NumPy, Python, machine, portable CPU
level, rules sources and build step (:func:`reusable`). The kernels are compiled from the
source tree either way, so the copy is what a new build would make, a minute sooner.

This module imports neither numba nor setuptools at import (setuptools gets :class:`BuildPy`
by attribute); the package never imports it at run time: the CPU level both read is the leaf
module :mod:`ono_env._cpu`.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

KERNEL_MODULES = ("ono_env._engine", "ono_env.agents._baselines", "ono_env.agents._search")
"""The modules whose kernels are prebuilt (the engine's compile on first use; the others'
at their import)."""

def _cpu_module() -> types.ModuleType:
    """This source tree's :mod:`ono_env._cpu`, loaded from its file.

    setuptools loads this module from its file to get :class:`BuildPy`, and nothing makes
    ``ono_env`` importable in the installer's process: ``from ono_env._cpu import ...``
    there failed on a machine with no ono_env installed (no prebuilt kernels, one warning in
    pip's verbose output) and, where another checkout was installed in editable mode, read
    that checkout's module. ``_cpu`` imports nothing of the package, so its file is enough.
    """
    module = sys.modules.get("ono_env._cpu")
    here = Path(__file__).resolve().parent / "_cpu.py"
    if module is not None and Path(module.__file__ or "").resolve() == here:
        return module
    spec = importlib.util.spec_from_file_location("_ono_env_prebuild_cpu", here)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build_env(scratch: Path) -> dict[str, str]:
    """The build process's environment: numba's defaults (no NUMBA_OPT, NUMBA_BOUNDSCHECK,
    ... of the installer's shell), the portable CPU level and a throwaway cache."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(NUMBA_CPU_NAME=_cpu_module().portable_cpu()[0], NUMBA_CPU_FEATURES="",
               NUMBA_CACHE_DIR=str(scratch / "cache"))
    return env


def step_hash() -> str:
    """sha256 of this build step's own code (which kernels it builds), in the manifest."""
    return hashlib.sha256(Path(__file__).resolve().read_bytes()).hexdigest()


def reusable(root: Path, earlier: Path) -> bool:
    """Whether the whole build in ``earlier`` is what building the source tree ``root`` now
    would write: its manifest equals the one a build process prints (same numba, NumPy,
    Python, machine, CPU level, rules sources and build step). False without a manifest,
    and False with a warning when that process fails (the build then compiles as ever)."""
    try:
        old = json.loads((earlier / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    try:
        with tempfile.TemporaryDirectory() as scratch:
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--manifest",
                                   str(root)], env=_build_env(Path(scratch)),
                                  capture_output=True, text=True, check=True)
        return bool(old == json.loads(proc.stdout))
    except subprocess.CalledProcessError as e:
        why = ((e.stderr or "").strip().splitlines() or [f"exit status {e.returncode}"])[-1]
    except (OSError, ValueError) as e:
        why = str(e)
    print(f"ono_env: the build in {earlier} is not reused: a build process could not say what "
          f"it would build ({why})", file=sys.stderr)
    return False


def _land(src: Path, out: Path) -> None:
    """Copy the whole build ``src`` to ``out``: into a sibling folder first, renamed to
    ``out`` once complete, so that ``out`` never holds part of a build (an interrupted copy
    would otherwise leave a manifest beside missing kernels, which :func:`reusable` trusts)."""
    landing = out.with_name(out.name + ".landing")
    if landing.exists():
        shutil.rmtree(landing)
    shutil.copytree(src, landing)
    if out.exists():
        shutil.rmtree(out)
    landing.rename(out)


def build(root: Path, out: Path, reuse: Path | None = None) -> None:
    """Compile the kernels of the source tree ``root`` into ``out`` (in a new process, so
    that numba starts with the portable CPU level and a throwaway cache for the rules
    functions); or, when ``reuse`` holds a build that is :func:`reusable`, copy it."""
    if reuse is not None and reuse.resolve() != out.resolve() and reusable(root, reuse):
        _land(reuse, out)
        return
    if out.exists():
        shutil.rmtree(out)
    with tempfile.TemporaryDirectory() as scratch:
        env = _build_env(Path(scratch))
        partial = Path(scratch) / "prebuilt"
        env[_cpu_module().BUILD_ENV] = str(partial)
        subprocess.run([sys.executable, str(Path(__file__).resolve()), str(root), str(partial)],
                       env=env, check=True)
        # only a whole build lands: the manifest is written last, and the copy is renamed
        _land(partial, out)


def load_rules_packages(root: Path) -> None:
    """Make ``ono_env`` and ``ono_env.agents`` the source tree ``root``'s packages without
    running their ``__init__`` (which would import the whole package), so that importing
    the rules modules loads only what they need."""
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if p not in ("", here)]  # no package module top-level
    for name, folder in (("ono_env", root / "ono_env"), ("ono_env.agents", root / "agents")):
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        sys.modules[name] = importlib.util.module_from_spec(spec)


def _compile_all(root: Path, out: Path) -> None:
    """In the build process: load the rules modules from ``root``, make every kernel ready,
    which compiles and saves it, and write the manifest."""
    load_rules_packages(root)
    from ono_env import _compile, _engine

    for name in list(_compile.LAZY_SIGNATURES):  # the engine's, made ready on first use
        module, _, kernel = name.rpartition(".")
        if module == "ono_env._engine":
            _compile.compiled(getattr(_engine, kernel))
    for module in KERNEL_MODULES:
        importlib.import_module(module)
    out.mkdir(parents=True, exist_ok=True)
    (out / _compile.MANIFEST).write_text(json.dumps(_manifest(), indent=1) + "\n")


def _manifest() -> dict:
    """In a build process: what the kernels are built for (``_compile.manifest``, which the
    package reads) and the build step's hash (which only :func:`reusable` reads)."""
    from ono_env import _compile

    return {**_compile.manifest(), "build_step": step_hash()}


def _build_py_class():
    from setuptools.command.build_py import build_py

    class BuildPy(build_py):
        """setuptools' build_py, then the prebuilt kernels (:func:`build`)."""

        def run(self):
            super().run()
            root = Path(__file__).resolve().parent.parent
            here = root / "ono_env" / "_prebuilt"
            if getattr(self, "editable_mode", False):
                out, reuse = here, None
            else:
                out, reuse = Path(self.build_lib) / "ono_env" / "_prebuilt", here
            try:
                build(root, out, reuse if reuse is not None and reuse.is_dir() else None)
            except Exception as e:  # noqa: BLE001 - the package works without them
                self.warn(f"ono_env: no prebuilt kernels ({e}); they compile on first use")

    return BuildPy


def __getattr__(name: str):
    if name == "BuildPy":
        return _build_py_class()
    raise AttributeError(name)


if __name__ == "__main__":
    if sys.argv[1] == "--manifest":
        load_rules_packages(Path(sys.argv[2]))
        print(json.dumps(_manifest()))
    else:
        _compile_all(Path(sys.argv[1]), Path(sys.argv[2]))
