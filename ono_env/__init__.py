"""ono_env: a fast, faithful reinforcement-learning environment for the UNO family ("ONO!").

The core (this package's ``rules``, ``cards``, ``game``, ``observation`` and the compiled
``_engine``) imports no gymnasium, pettingzoo or torch. The adapters sit beside it:
``ono_env.envs.ono_v0`` (PettingZoo AEC; also ``ono_env.env`` / ``ono_env.raw_env``),
``ono_env.envs.gym_env`` (Gymnasium, registered as ``ono_env/Ono-v0`` once gymnasium is
imported, before or after ``ono_env``, with ``ono_env.envs.gym_vector`` as its vector entry
point) and ``ono_env.envs.sb3`` (Stable-Baselines3 VecEnv); they are imported on first use.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

import wrapt

from ono_env import _moved
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
except PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
    __version__ = "0+unknown"


_moved.install()


def __getattr__(name: str):
    # The PettingZoo env loads lazily so that ``import ono_env`` needs no pettingzoo.
    if name in ("env", "raw_env", "ono_v0"):
        from ono_env.envs import ono_v0

        return ono_v0 if name == "ono_v0" else getattr(ono_v0, name)
    raise AttributeError(f"module 'ono_env' has no attribute {name!r}")


def _register_gym(gym) -> None:
    """Register the Gymnasium env id ``ono_env/Ono-v0`` (the adapter itself loads on
    ``gym.make``)."""
    if "ono_env/Ono-v0" not in gym.registry:
        gym.register(id="ono_env/Ono-v0", entry_point="ono_env.envs.gym_env:OnoEnv",
                     vector_entry_point="ono_env.envs.gym_vector:OnoVectorEnv")


# The core imports no gymnasium: the id is registered as soon as gymnasium is imported, now
# if it already is, else when it is (wrapt's post-import hook), in either order of the two
# imports.
wrapt.register_post_import_hook(_register_gym, "gymnasium")

__all__ = [
    "ACTION_NAMES", "CARD_NAMES", "NUM_ACTIONS", "NUM_CARD_TYPES", "PRESETS", "RuleSet",
    "StepResult", "VecGame", "action_id", "action_name", "card_id", "card_name",
    "game_seeds", "print_action_table", "random_legal",
]
