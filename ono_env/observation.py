"""The observation: one flat float32 vector per seat, written for the whole batch by the
compiled encoder (``ono_env._engine.observe``), used by every adapter and agent.

It holds what that seat may know and nothing more: its own hand, the public table (top card,
colour, phase, pending draw, direction, pile sizes, the discard pile's contents), each
opponent's hand size and ONO call, and the scores when the rules keep them. Other hands and
the order of the stock are never in it.

The layout is defined here once, by the block table ``BLOCKS`` below; the compiled encoder
writes at the offsets derived from it, and agents read it through named views
(:func:`observation_view`), never through offsets. ``print_observation_layout(rules)``
prints the table for a rule set; ``observation_layout(rules)`` returns it.

``OBS_VERSION`` changes whenever the layout changes (saved models record it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ono_env.cards import NUM_CARD_TYPES, NUM_COLORS
from ono_env.rules import RuleSet, resolve_rules

OBS_VERSION = 1

# What the acting player is deciding. The first five are observed (one-hot); round_end is
# an instant between the rounds of a match that no player acts in.
PHASE_NAMES = ("play", "pending", "drawn", "color", "target", "round_end")
NUM_OBSERVED_PHASES = 5

# The fixed blocks, in order: (name, size, meaning). After them come the per-opponent block
# (2 entries per opponent) and, when the rules score, one score per seat.
BLOCKS: tuple[tuple[str, int, str], ...] = (
    ("hand", NUM_CARD_TYPES, "own hand: copies of each card type (card ids as in ono_env.cards)"),
    ("top_card", NUM_CARD_TYPES, "top card of the discard pile, one-hot"),
    ("color", NUM_COLORS, "current colour R Y G B, one-hot (all 0 before a first wild is named)"),
    ("phase", NUM_OBSERVED_PHASES, "acting player's phase: play, pending, drawn, color, target (one-hot)"),
    ("my_turn", 1, "1 if this seat acts now"),
    ("pending_draw", 1, "cards the acting player draws if they accept"),
    ("drawn_card", NUM_CARD_TYPES, "the card this seat just drew, one-hot (phase drawn, own turn only)"),
    ("direction", 1, "+1 play passes left (clockwise), -1 right"),
    ("stock_size", 1, "cards in the stock"),
    ("discard_pile", NUM_CARD_TYPES,
     "copies of each card type in the discard pile (seen played since the last reshuffle)"),
    ("self", 2, "own hand size, own ONO call (1/0)"),
)


def _offsets() -> dict[str, int]:
    out, at = {}, 0
    for name, size, _ in BLOCKS:
        out[name] = at
        at += size
    out["opponents"] = at
    return out


_AT = _offsets()
# Offsets the compiled encoder writes at (derived from BLOCKS; nothing else should read them).
OBS_HAND = _AT["hand"]
OBS_TOP = _AT["top_card"]
OBS_COLOR = _AT["color"]
OBS_PHASE = _AT["phase"]
OBS_MY_TURN = _AT["my_turn"]
OBS_PENDING = _AT["pending_draw"]
OBS_DRAWN = _AT["drawn_card"]
OBS_DIRECTION = _AT["direction"]
OBS_STOCK = _AT["stock_size"]
OBS_DISCARD = _AT["discard_pile"]
OBS_SELF = _AT["self"]
OBS_OPPONENTS = _AT["opponents"]   # 2 per opponent from the left: hand size, called ONO


class Block(NamedTuple):
    name: str
    start: int
    stop: int
    meaning: str


def observation_layout(rules: RuleSet) -> list[Block]:
    """The blocks of the observation vector for ``rules`` (its size depends on the number of
    players and on whether the rules keep scores)."""
    n = rules.num_players
    blocks = [Block(name, _AT[name], _AT[name] + size, meaning) for name, size, meaning in BLOCKS]
    blocks.append(Block("opponents", OBS_OPPONENTS, OBS_OPPONENTS + 2 * (n - 1),
                        "per opponent from this seat's left: hand size, ONO call (1/0)"))
    if rules.scoring != "none":
        start = OBS_OPPONENTS + 2 * (n - 1)
        scale = f"/ {rules.target_score}" if rules.target_score else "/ 100"
        blocks.append(Block("scores", start, start + n,
                            f"scores {scale}: own first, then from this seat's left"))
    return blocks


def observation_size(rules: RuleSet) -> int:
    """Length of the observation vector under ``rules``."""
    return observation_layout(rules)[-1].stop


class ObservationView(NamedTuple):
    """Named views into a batch of observations ``(B, D)``: each field is a view (writing
    through it writes the batch). Shapes for N players."""

    hand: np.ndarray            # (B, 56) own hand, copies per card type
    top_card: np.ndarray        # (B, 56) one-hot
    color: np.ndarray           # (B, 4) one-hot, all 0 before a first wild is named
    phase: np.ndarray           # (B, 5) one-hot: play, pending, drawn, color, target
    my_turn: np.ndarray         # (B,)
    pending_draw: np.ndarray    # (B,)
    drawn_card: np.ndarray      # (B, 56) one-hot
    direction: np.ndarray       # (B,) +1 / -1
    stock_size: np.ndarray      # (B,)
    discard_pile: np.ndarray    # (B, 56) copies per card type
    self_size: np.ndarray       # (B,) own hand size
    self_called: np.ndarray     # (B,) own ONO call
    opponent_sizes: np.ndarray  # (B, N-1) from this seat's left
    opponent_called: np.ndarray  # (B, N-1)
    scores: np.ndarray | None   # (B, N) own first, then from the left; None without scoring


def observation_view(obs: np.ndarray, rules: RuleSet) -> ObservationView:
    """Named views of ``obs`` (``(B, D)``, D = ``observation_size(rules)``)."""
    size = observation_size(rules)
    if obs.ndim != 2 or obs.shape[1] != size:
        raise ValueError(f"observations of shape {obs.shape}; {rules.num_players}-player "
                         f"{rules.name!r} rules have (B, {size})")
    n = rules.num_players
    blk = {name: obs[:, _AT[name]:_AT[name] + sz] for name, sz, _ in BLOCKS}
    opp = obs[:, OBS_OPPONENTS:OBS_OPPONENTS + 2 * (n - 1)]
    scores = None
    if rules.scoring != "none":
        start = OBS_OPPONENTS + 2 * (n - 1)
        scores = obs[:, start:start + n]
    return ObservationView(
        hand=blk["hand"], top_card=blk["top_card"], color=blk["color"], phase=blk["phase"],
        my_turn=blk["my_turn"][:, 0], pending_draw=blk["pending_draw"][:, 0],
        drawn_card=blk["drawn_card"], direction=blk["direction"][:, 0],
        stock_size=blk["stock_size"][:, 0], discard_pile=blk["discard_pile"],
        self_size=blk["self"][:, 0], self_called=blk["self"][:, 1],
        opponent_sizes=opp[:, 0::2], opponent_called=opp[:, 1::2], scores=scores,
    )


def observation_scale(rules: RuleSet) -> np.ndarray:
    """``(D,) float32``: a fixed divisor per observation entry that brings counts to about
    [0, 1] (one-hot blocks, flags and the scaled scores are left as they are). Learned agents
    divide by it before their network; saved models store it."""
    scale = np.ones((1, observation_size(rules)), np.float32)
    v = observation_view(scale, rules)
    v.hand[:] = 2.0
    v.pending_draw[:] = 8.0
    v.stock_size[:] = float(rules.deck_size)
    v.discard_pile[:] = 2.0
    v.self_size[:] = 10.0
    v.opponent_sizes[:] = 10.0
    return scale[0]


def format_observation_layout(rules: RuleSet) -> str:
    lines = [f"observation layout v{OBS_VERSION} ({rules.name}, {rules.num_players} players, "
             f"{observation_size(rules)} floats)",
             f"{'name':<14} {'slice':<12} meaning"]
    for b in observation_layout(rules):
        lines.append(f"{b.name:<14} {f'{b.start}:{b.stop}':<12} {b.meaning}")
    return "\n".join(lines)


def print_observation_layout(rules: RuleSet | str | Mapping[str, Any]) -> None:
    """Print the observation table for ``rules`` (a RuleSet, a preset name, a YAML path or a
    mapping, as ``resolve_rules`` takes): the layout depends on the number of players, so
    pass the env's own ``env.rules``."""
    print(format_observation_layout(resolve_rules(rules)))
