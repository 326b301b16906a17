"""ono_env: a fast, faithful reinforcement-learning environment for the UNO family ("ONO!").

The core (this package's ``rules``, ``cards``, ``game``, ``observation`` and the compiled
``_engine``) imports no gymnasium, pettingzoo or torch. The adapters sit beside it:
``ono_env.envs.ono_v0`` (PettingZoo AEC; also ``ono_env.env`` / ``ono_env.raw_env``),
``ono_env.envs.gym_env`` (Gymnasium, registered as ``ono_env/Ono-v0`` once gymnasium is
imported, before or after ``ono_env``, with ``ono_env.envs.gym_vector`` as its vector entry
point) and ``ono_env.envs.sb3`` (Stable-Baselines3 VecEnv); they are imported on first use.
"""

import importlib as _importlib
from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version
from typing import Any as _Any
from typing import TYPE_CHECKING as _TYPE_CHECKING

import wrapt as _wrapt

from ono_env import _moved

if _TYPE_CHECKING:   # the names below load on first use (``__getattr__``)
    from ono_env.cards import (
        ACTION_NAMES,
        CARD_NAMES,
        NUM_ACTIONS,
        NUM_CARD_TYPES,
        action_id,
        action_name,
        card_id,
        card_name,
        print_action_table,
    )
    from ono_env.game import StepResult, VecGame, game_seeds, random_legal
    from ono_env.rules import PRESETS, RuleSet

try:
    __version__ = _version("ono-env")
except _PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
    __version__ = "0+unknown"


_moved.install()

_LAZY = {
    "ono_env.cards": ("ACTION_NAMES", "CARD_NAMES", "NUM_ACTIONS", "NUM_CARD_TYPES", "action_id",
                      "action_name", "card_id", "card_name", "print_action_table"),
    "ono_env.game": ("StepResult", "VecGame", "game_seeds", "random_legal"),
    "ono_env.rules": ("PRESETS", "RuleSet"),
    "ono_env.envs.ono_v0": ("env", "raw_env"),
}
"""Module -> the names this package gives from it. They load on first use (PEP 562's
module ``__getattr__``), so that ``import ono_env`` compiles and loads nothing heavy: numpy
and the numba kernels load with the first name that needs them, and the PettingZoo env needs
no pettingzoo until it is asked for. A console script can then catch a Ctrl-C while its
modules load (:mod:`ono_env.apps.launch`); before, the package's own import loaded numba
first, and a Ctrl-C in that second printed a traceback. Ten lines of the language's own
mechanism, so no lazy-loading library."""

_FROM = {name: module for module, names in _LAZY.items() for name in names}

_SUBMODULES = ("agents", "apps", "arena", "cards", "checks", "configs", "envs", "game",
               "observation", "positions", "render", "replay", "rule_help", "rules", "train")
"""The public submodules, which load on first use as attributes too (``ono_env.cards``), as
the package's eager import once made some of them; any other name is an ``AttributeError``
(``hasattr`` imports nothing else: no build step, no old module path)."""


def __getattr__(name: str) -> _Any:
    if name in _FROM:
        value = getattr(_importlib.import_module(_FROM[name]), name)
    elif name == "ono_v0":
        value = _importlib.import_module("ono_env.envs.ono_v0")
    elif name in _SUBMODULES:
        value = _importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module 'ono_env' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    public = {n for n in globals() if not n.startswith("_")}
    return sorted(public | set(_FROM) | {"ono_v0", *_SUBMODULES, "__version__"})


def _register_gym(gym) -> None:
    """Register the Gymnasium env id ``ono_env/Ono-v0`` (the adapter itself loads on
    ``gym.make``)."""
    if "ono_env/Ono-v0" not in gym.registry:
        gym.register(id="ono_env/Ono-v0", entry_point="ono_env.envs.gym_env:OnoEnv",
                     vector_entry_point="ono_env.envs.gym_vector:OnoVectorEnv")


# The core imports no gymnasium: the id is registered as soon as gymnasium is imported, now
# if it already is, else when it is (wrapt's post-import hook), in either order of the two
# imports.
_wrapt.register_post_import_hook(_register_gym, "gymnasium")

__all__ = [
    "ACTION_NAMES", "CARD_NAMES", "NUM_ACTIONS", "NUM_CARD_TYPES", "PRESETS", "RuleSet",
    "StepResult", "VecGame", "action_id", "action_name", "card_id", "card_name",
    "game_seeds", "print_action_table", "random_legal",
]
