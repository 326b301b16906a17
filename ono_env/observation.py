"""The observation: one flat float32 vector per seat, written for the whole batch by the
compiled encoder (``ono_env._engine.observe``), used by every adapter.

It holds what that seat may know and nothing more: its own hand, the public table (top card,
colour, phase, pending draw, direction, pile sizes, the discard pile's contents), each
opponent's hand size and ONO call, and the scores when the rules keep them. Other hands and
the order of the stock are never in it. ``print_observation_layout(rules)`` prints the table
below for a rule set; ``observation_layout(rules)`` returns it.

``OBS_VERSION`` changes whenever the layout changes (saved models record it).
"""

from __future__ import annotations

from typing import NamedTuple

from ono_env import _engine as E
from ono_env.cards import NUM_CARD_TYPES
from ono_env.rules import RuleSet

OBS_VERSION = 1


class Block(NamedTuple):
    name: str
    start: int
    stop: int
    meaning: str


def observation_layout(rules: RuleSet) -> list[Block]:
    """The blocks of the observation vector for ``rules`` (its size depends on the number of
    players and on whether the rules keep scores)."""
    n = rules.num_players
    nc = NUM_CARD_TYPES
    blocks = [
        Block("hand", E.OBS_HAND, E.OBS_HAND + nc, "own hand: copies of each card type (card ids as in ono_env.cards)"),
        Block("top_card", E.OBS_TOP, E.OBS_TOP + nc, "top card of the discard pile, one-hot"),
        Block("color", E.OBS_COLOR, E.OBS_COLOR + 4, "current colour R Y G B, one-hot (all 0 before a first wild is named)"),
        Block("phase", E.OBS_PHASE, E.OBS_PHASE + 5, "acting player's phase: play, pending, drawn, color, target (one-hot)"),
        Block("my_turn", E.OBS_MY_TURN, E.OBS_MY_TURN + 1, "1 if this seat acts now"),
        Block("pending_draw", E.OBS_PENDING, E.OBS_PENDING + 1, "cards the acting player draws if they accept"),
        Block("drawn_card", E.OBS_DRAWN, E.OBS_DRAWN + nc, "the card this seat just drew, one-hot (phase drawn, own turn only)"),
        Block("direction", E.OBS_DIRECTION, E.OBS_DIRECTION + 1, "+1 play passes left (clockwise), -1 right"),
        Block("stock_size", E.OBS_STOCK, E.OBS_STOCK + 1, "cards in the stock"),
        Block("discard_pile", E.OBS_DISCARD, E.OBS_DISCARD + nc, "copies of each card type in the discard pile (seen played since the last reshuffle)"),
        Block("self", E.OBS_SELF, E.OBS_SELF + 2, "own hand size, own ONO call (1/0)"),
        Block("opponents", E.OBS_OPPONENTS, E.OBS_OPPONENTS + 2 * (n - 1),
              "per opponent from this seat's left: hand size, ONO call (1/0)"),
    ]
    if rules.scoring != "none":
        start = E.OBS_OPPONENTS + 2 * (n - 1)
        scale = f"/ {rules.target_score}" if rules.target_score else "/ 100"
        blocks.append(Block("scores", start, start + n,
                            f"scores {scale}: own first, then from this seat's left"))
    return blocks


def observation_size(rules: RuleSet) -> int:
    """Length of the observation vector under ``rules``."""
    return observation_layout(rules)[-1].stop


def format_observation_layout(rules: RuleSet) -> str:
    lines = [f"observation layout v{OBS_VERSION} ({rules.name}, {rules.num_players} players, "
             f"{observation_size(rules)} floats)",
             f"{'name':<14} {'slice':<12} meaning"]
    for b in observation_layout(rules):
        lines.append(f"{b.name:<14} {f'{b.start}:{b.stop}':<12} {b.meaning}")
    return "\n".join(lines)


def print_observation_layout(rules: RuleSet | None = None) -> None:
    """Print the observation table for ``rules`` (default: classic, 4 players)."""
    print(format_observation_layout(rules or RuleSet()))
