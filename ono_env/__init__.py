"""ono_env: a fast, faithful reinforcement-learning environment for the UNO family ("ONO!").

The core (this package's ``rules``, ``cards``, ``game``, ``observation`` and the compiled
``_engine``) imports no gymnasium, pettingzoo or torch. The adapters sit beside it:
``ono_env.envs.ono_v0`` (PettingZoo AEC; also ``ono_env.env`` / ``ono_env.raw_env``),
``ono_env.envs.gym_env`` (Gymnasium, registered as ``ono_env/Ono-v0`` when gymnasium is
installed, with ``ono_env.envs.gym_vector`` as its vector entry point) and ``ono_env.envs.sb3``
(Stable-Baselines3 VecEnv); they are imported on first use.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

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


try:  # register the Gymnasium env id without importing the adapter itself
    import gymnasium as _gym
except ImportError:  # pragma: no cover
    pass
else:
    if "ono_env/Ono-v0" not in _gym.registry:
        _gym.register(id="ono_env/Ono-v0", entry_point="ono_env.envs.gym_env:OnoEnv",
                      vector_entry_point="ono_env.envs.gym_vector:OnoVectorEnv")

__all__ = [
    "ACTION_NAMES", "CARD_NAMES", "NUM_ACTIONS", "NUM_CARD_TYPES", "PRESETS", "RuleSet",
    "StepResult", "VecGame", "action_id", "action_name", "card_id", "card_name",
    "game_seeds", "print_action_table", "random_legal",
]
