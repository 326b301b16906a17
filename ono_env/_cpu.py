"""The CPU level of the prebuilt kernels: read by the build step (:mod:`ono_env._prebuild`)
and by the runtime that decides whether they fit (:mod:`ono_env._compile`).

A leaf module (it imports nothing of the package), so that the runtime does not import the
build script.
"""

from __future__ import annotations

import platform

# The CPU level of the prebuilt kernels, per architecture (``platform.machine()``), and the
# CPU features (LLVM's names) a machine needs to run them.
_X86_64_V2 = ("x86-64-v2", ("cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3"))
PORTABLE_CPUS = {"x86_64": _X86_64_V2, "amd64": _X86_64_V2}   # amd64: Windows' name
GENERIC_CPU = ("generic", ())
BUILD_ENV = "_ONO_ENV_PREBUILDING"
"""Set (to the output folder) only in the build step's own process."""


def portable_cpu(machine: str | None = None) -> tuple[str, tuple[str, ...]]:
    """(LLVM CPU name, required CPU features) of the prebuilt kernels on this
    architecture: x86-64-v2 on x86-64 (every x86-64 CPU since about 2009), else the
    architecture's generic level."""
    return PORTABLE_CPUS.get((machine or platform.machine()).lower(), GENERIC_CPU)
