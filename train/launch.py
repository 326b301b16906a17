"""The training console scripts' entry points (``ono-train``, ``ono-export``,
``ono-exploit``): each loads its module and runs its ``main`` through
:func:`ono_env.apps.launch.start`, so that a Ctrl-C while torch and the kernels load ends
with one line, as it does once the script runs. Loads nothing but the standard library."""

from __future__ import annotations

from ono_env.apps.launch import start


def train() -> int:
    """``ono-train``: :func:`ono_env.train.cli.main`."""
    return start("ono_env.train.cli", "ono-train")


def export() -> int:
    """``ono-export``: :func:`ono_env.train.export.main`."""
    return start("ono_env.train.export", "ono-export")


def exploit() -> int:
    """``ono-exploit``: :func:`ono_env.train.exploit.main`."""
    return start("ono_env.train.exploit", "ono-exploit")
