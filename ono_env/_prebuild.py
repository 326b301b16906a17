"""Build step: compile every kernel into ``ono_env/_prebuilt/`` when the package is built.

``pyproject.toml`` names :class:`BuildPy` as setuptools' ``build_py`` command, so ``pip
install`` (a wheel, an sdist, or ``pip install -e .``, which writes into the source tree)
runs it after copying the package. It compiles the kernels of ``ono_env._engine``,
``ono_env._baselines`` and ``ono_env._search`` in a process of its own, for the portable
CPU level of the architecture (:func:`portable_cpu`), and saves them as numba cache files
with a manifest of what they were built for (:mod:`ono_env._compile` says when they are
used). It takes about a minute of CPU. If it fails (no numba in the build environment, an
unknown platform), the install goes on without prebuilt kernels and they compile on first
use, as they would on a machine they were not built for.

This module imports neither numba nor setuptools at import: the package reads
:func:`portable_cpu` from it at run time, and setuptools gets :class:`BuildPy` by attribute.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

KERNEL_MODULES = ("ono_env._engine", "ono_env._baselines", "ono_env._search")
"""The modules whose kernels are prebuilt (the engine's compile on first use; the others'
at their import)."""

# The CPU level of the prebuilt kernels, per architecture (``platform.machine()``), and the
# CPU features (LLVM's names) a machine needs to run them.
PORTABLE_CPUS = {
    "x86_64": ("x86-64-v2", ("cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3")),
    "amd64": ("x86-64-v2", ("cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3")),
}
GENERIC_CPU = ("generic", ())
BUILD_ENV = "_ONO_ENV_PREBUILDING"
"""Set (to the output folder) only in the build step's own process."""


def portable_cpu(machine: str | None = None) -> tuple[str, tuple[str, ...]]:
    """(LLVM CPU name, required CPU features) of the prebuilt kernels on this
    architecture: x86-64-v2 on x86-64 (every x86-64 CPU since about 2009), else the
    architecture's generic level."""
    return PORTABLE_CPUS.get((machine or platform.machine()).lower(), GENERIC_CPU)


def build(root: Path, out: Path) -> None:
    """Compile the kernels of the source tree ``root`` into ``out`` (in a new process, so
    that numba starts with the portable CPU level and a throwaway cache for the rules
    functions)."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.iterdir():
        old.unlink()
    with tempfile.TemporaryDirectory() as scratch:
        env = dict(os.environ, NUMBA_CPU_NAME=portable_cpu()[0], NUMBA_CPU_FEATURES="",
                   NUMBA_CACHE_DIR=scratch, NUMBA_DISABLE_JIT="0")
        env[BUILD_ENV] = str(out)
        subprocess.run([sys.executable, str(Path(__file__).resolve()), str(root), str(out)],
                       env=env, check=True)


def _compile_all(root: Path, out: Path) -> None:
    """In the build process: load the rules modules from ``root`` (the packages without
    their ``__init__``, which would import the whole package), make every kernel ready,
    which compiles and saves it, and write the manifest."""
    for name, folder in (("ono_env", root / "ono_env"), ("ono_env.agents", root / "agents")):
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(folder)]
        sys.modules[name] = importlib.util.module_from_spec(spec)
    from ono_env import _compile, _engine

    for name in list(_compile.LAZY_SIGNATURES):  # the engine's, made ready on first use
        module, _, kernel = name.rpartition(".")
        if module == "ono_env._engine":
            _compile.compiled(getattr(_engine, kernel))
    for module in KERNEL_MODULES:
        importlib.import_module(module)
    (out / _compile.MANIFEST).write_text(json.dumps(_compile.manifest(), indent=1) + "\n")


def _build_py_class():
    from setuptools.command.build_py import build_py

    class BuildPy(build_py):
        """setuptools' build_py, then the prebuilt kernels (:func:`build`)."""

        def run(self):
            super().run()
            root = Path(__file__).resolve().parent.parent
            if getattr(self, "editable_mode", False):
                out = root / "ono_env" / "_prebuilt"
            else:
                out = Path(self.build_lib) / "ono_env" / "_prebuilt"
            try:
                build(root, out)
            except Exception as e:  # noqa: BLE001 - the package works without them
                self.warn(f"ono_env: no prebuilt kernels ({e}); they compile on first use")

    return BuildPy


def __getattr__(name: str):
    if name == "BuildPy":
        return _build_py_class()
    raise AttributeError(name)


if __name__ == "__main__":
    _compile_all(Path(sys.argv[1]), Path(sys.argv[2]))
