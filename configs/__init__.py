"""The configs shipped with ono_env, found by name from any working directory.

In the repository these are the folders ``configs/rules/``, ``configs/train/`` and
``configs/bench/`` (the benchmark suites and their published ladders); installed, they are
package data of ``ono_env.configs``. ``config_file("rules", "ono")`` is the path of
``rules/ono.yaml``; ``config_names("train")`` lists the training configs (``default``, ...).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

KINDS = ("rules", "train", "bench")


def _folder(kind: str):
    if kind not in KINDS:
        raise ValueError(f"config kind {kind!r}; allowed: {', '.join(KINDS)}")
    return resources.files(__name__).joinpath(kind)


def config_names(kind: str) -> list[str]:
    """The names of the shipped configs of ``kind`` (``"rules"``, ``"train"`` or ``"bench"``),
    sorted."""
    return sorted(p.name[:-5] for p in _folder(kind).iterdir() if p.name.endswith(".yaml"))


def config_file(kind: str, name: str) -> Path | None:
    """The path of the shipped config ``name`` of ``kind``, or None when there is none."""
    if not isinstance(name, str) or name not in config_names(kind):
        return None
    return Path(str(_folder(kind).joinpath(f"{name}.yaml")))


def data_file(kind: str, name: str) -> Path:
    """The path of the shipped file ``name`` (with its suffix) in the folder of ``kind``,
    whether or not it exists."""
    return Path(str(_folder(kind).joinpath(name)))
