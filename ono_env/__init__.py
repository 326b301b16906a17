"""ono_env: a fast, faithful reinforcement-learning environment for the UNO family ("ONO!").

The core (this package's ``rules``, ``cards``, ``game`` and the compiled ``_engine``) imports
no gymnasium, pettingzoo or torch.
"""

from ono_env.cards import (
    ACTION_NAMES, CARD_NAMES, NUM_ACTIONS, NUM_CARD_TYPES, action_id, action_name, card_id,
    card_name, print_action_table,
)
from ono_env.game import StepResult, VecGame, game_seeds, random_legal
from ono_env.rules import PRESETS, RuleSet

__version__ = "0.1.0"

__all__ = [
    "ACTION_NAMES", "CARD_NAMES", "NUM_ACTIONS", "NUM_CARD_TYPES", "PRESETS", "RuleSet",
    "StepResult", "VecGame", "action_id", "action_name", "card_id", "card_name",
    "game_seeds", "print_action_table", "random_legal",
]
