"""Card and action tables: ids, names and points, shared by the engine and every adapter.

Card types (``NUM_CARD_TYPES = 56``)::

    id  = colour * 13 + rank        for coloured cards, colour in R Y G B (0-3),
                                    rank 0-9, 10 = Skip "S", 11 = Reverse "R", 12 = Draw Two "+2"
    52  W    Wild
    53  W+4  Wild Draw Four
    54  WS   Wild Shuffle Hands
    55  WC   Wild Customizable

Actions (``NUM_ACTIONS = 85``; the same fixed ``Discrete(85)`` for every rule set, and the
rule set's legal-action mask hides what it never allows)::

    0-51   play <coloured card>          "play R5", "play GS", "play B+2"
    52-55  play W <colour>               a Wild naming its colour: "play W G"
    56-59  play W+4 <colour>             "play W+4 G"
    60-63  play WC <colour>              Wild Customizable as a plain wild (the preset reading)
    64     play WS                       Wild Shuffle Hands: the colour is named after the deal
    65     play WC                       Wild Customizable with swap_hands: the colour is named
                                         after the swap
    66     draw
    67     keep                          keep the card just drawn
    68     call                          call ONO
    69     catch                         catch the previous player (ONO not called)
    70     challenge                     challenge a Wild Draw Four
    71     accept                        take the pending draw and lose the turn
    72-75  color <colour>                name a colour outside a play (first-card wild, after a
                                         shuffle or a swap)
    76-84  target <n>                    n = 1..9 seats to the player's left (swap hands)

``print_action_table()`` prints this table from the arrays below.
"""

from __future__ import annotations

import numpy as np

from ono_env.checks import as_int, shown

COLORS = ("R", "Y", "G", "B")
"""The colours' letters, by colour id 0-3 (the order of every colour block)."""
COLOR_WORDS = ("red", "yellow", "green", "blue")
"""The colours' names, by colour id."""
RANKS = ("0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "S", "R", "+2")
NUM_COLORS = 4
NUM_RANKS = 13
RANK_SKIP = 10
RANK_REVERSE = 11
RANK_DRAW_TWO = 12

WILD = 52
WILD_DRAW_FOUR = 53
WILD_SHUFFLE_HANDS = 54
WILD_CUSTOMIZABLE = 55
WILD_NAMES = ("W", "W+4", "WS", "WC")
NUM_WILD_TYPES = 4
NUM_CARD_TYPES = 56
"""Card types: 52 coloured (4 colours x 13 ranks), then the 4 wild types."""

CARD_NAMES: tuple[str, ...] = tuple(
    [c + r for c in COLORS for r in RANKS] + list(WILD_NAMES)
)
"""Each card type's name, by type id (``R0`` ... ``B+2``, then ``W``, ``W+4``, ``WS``, ``WC``)."""
CARD_IDS: dict[str, int] = {name: i for i, name in enumerate(CARD_NAMES)}

# card_color[c]: 0-3 for coloured cards, -1 for wilds.
CARD_COLOR = np.array([c // NUM_RANKS for c in range(52)] + [-1] * 4, dtype=np.int8)
# card_rank[c]: 0-12 for coloured cards, -1 for wilds.
CARD_RANK = np.array([c % NUM_RANKS for c in range(52)] + [-1] * 4, dtype=np.int8)
CARD_POINTS = np.array(
    [r if r <= 9 else 20 for _ in COLORS for r in range(NUM_RANKS)] + [50] * 4,
    dtype=np.int16,
)
"""Points of each card type at scoring: a number its face value, Skip, Reverse and Draw Two
20, any wild 50."""

# ---- actions -------------------------------------------------------------------------
A_PLAY_W = 52
"""``play W <c>``: the action id ``A_PLAY_W + c`` for colour id ``c`` (a coloured card's
play is its card id, 0-51)."""
A_PLAY_WD4 = 56
"""``play W+4 <c>``: ``A_PLAY_WD4 + c``."""
A_PLAY_WC_COLOR = 60
"""``play WC <c>`` (the Wild Customizable read as a plain wild): ``A_PLAY_WC_COLOR + c``."""
A_PLAY_WS = 64
"""``play WS``: the Wild Shuffle Hands."""
A_PLAY_WC = 65
"""``play WC`` (the Wild Customizable read as a swap of hands: no colour in the play)."""
A_DRAW = 66
"""``draw``."""
A_KEEP = 67
"""``keep``: keep the card just drawn."""
A_CALL = 68
"""``call``: call ONO."""
A_CATCH = 69
"""``catch``: catch a player who did not call ONO."""
A_CHALLENGE = 70
"""``challenge``: challenge a Wild Draw Four."""
A_ACCEPT = 71
"""``accept``: take a pending draw (a Wild Draw Four unchallenged, a stack not added to)."""
A_COLOR = 72
"""``color <c>``: ``A_COLOR + c``, naming a colour after a wild."""
A_TARGET = 76
"""``target <k>``: ``A_TARGET + k - 1``, the seat ``k`` places to the left (``k`` 1 to 9)."""
MAX_TARGET = 9
NUM_ACTIONS = 85
"""The actions of every rule set: one ``Discrete(85)`` space (the mask hides the rest)."""


def _build_action_names() -> tuple[str, ...]:
    names = ["play " + CARD_NAMES[c] for c in range(52)]
    for w in ("W", "W+4", "WC"):
        names += [f"play {w} {col}" for col in COLORS]
    names += ["play WS", "play WC", "draw", "keep", "call", "catch", "challenge", "accept"]
    names += [f"color {col}" for col in COLORS]
    names += [f"target {n}" for n in range(1, MAX_TARGET + 1)]
    assert len(names) == NUM_ACTIONS
    return tuple(names)


ACTION_NAMES: tuple[str, ...] = _build_action_names()
"""Each action's name, by action id (``play R5``, ``play W+4 G``, ``draw``, ``target 3``, ...)."""
ACTION_IDS: dict[str, int] = {name: i for i, name in enumerate(ACTION_NAMES)}

# action_card[a]: the card type a "play" action puts down, -1 for other actions.
ACTION_CARD = np.array(
    list(range(52)) + [WILD] * 4 + [WILD_DRAW_FOUR] * 4 + [WILD_CUSTOMIZABLE] * 4
    + [WILD_SHUFFLE_HANDS, WILD_CUSTOMIZABLE] + [-1] * 19,
    dtype=np.int8,
)
# action_color[a]: the colour a wild play or "color" action names, -1 otherwise.
ACTION_COLOR = np.array(
    [-1] * 52 + [k for _ in range(3) for k in range(4)] + [-1] * 8 + list(range(4)) + [-1] * 9,
    dtype=np.int8,
)
assert len(ACTION_CARD) == len(ACTION_COLOR) == NUM_ACTIONS


def card_name(card: int) -> str:
    """Text form of a card type id (``0 -> "R0"``, ``53 -> "W+4"``)."""
    k = as_int(card)
    if k is None or not 0 <= k < NUM_CARD_TYPES:
        raise ValueError(f"card id {shown(card, 40)} ({type(card).__name__}); allowed: an integer "
                         f"0..{NUM_CARD_TYPES - 1}")
    return CARD_NAMES[k]


def card_id(name: str) -> int:
    """Card type id of a text form such as ``"R5"``, ``"B+2"`` or ``"W+4"``."""
    if not isinstance(name, str):
        raise ValueError(f"card name {shown(name, 40)} ({type(name).__name__}); allowed: a string such "
                         f"as 'R5', 'B+2' or 'W+4'")
    key = name.strip().upper()
    if not name.isascii() or key not in CARD_IDS:   # U+017F upper-cases to S, as in action_id
        raise ValueError(
            f"unknown card {shown(name, 80)}: cards are a colour R Y G B followed by 0-9, S, R or +2 "
            f"(e.g. 'R5', 'GS', 'B+2'), or a wild W, W+4, WS, WC"
        )
    return CARD_IDS[key]


def action_name(action: int) -> str:
    """Text form of an action id (``66 -> "draw"``, ``57 -> "play W+4 Y"``)."""
    k = as_int(action)
    if k is None or not 0 <= k < NUM_ACTIONS:
        raise ValueError(f"action id {shown(action, 40)} ({type(action).__name__}); allowed: an integer "
                         f"0..{NUM_ACTIONS - 1}")
    return ACTION_NAMES[k]


def action_id(name: str) -> int:
    """Action id of a text form such as ``"play R5"``, ``"play W+4 G"``, ``"draw"``, ``"target 2"``."""
    if not isinstance(name, str):
        raise ValueError(f"action name {shown(name, 40)} ({type(name).__name__}); allowed: a string such "
                         f"as 'play R5', 'play W+4 G' or 'draw'")
    key = " ".join(name.split())
    parts = key.split(" ")
    # Card and colour letters are upper case; verbs lower case. Accept either.
    norm = " ".join([parts[0].lower()] + [p.upper() for p in parts[1:]])
    if not name.isascii() or norm not in ACTION_IDS:   # U+017F upper-cases to S, U+3000 is a
        # space to split(): letters and spaces as written
        raise ValueError(
            f"unknown action {shown(name, 80)}: actions are 'play <card>' ('play R5'), "
            f"'play <wild> <colour>' ('play W+4 G'), 'play WS', 'play WC', 'draw', 'keep', "
            f"'call', 'catch', "
            f"'challenge', 'accept', 'color <R|Y|G|B>', 'target <1-{MAX_TARGET}>'"
        )
    return ACTION_IDS[norm]


def action_table() -> list[tuple[int, str]]:
    """Every action as ``(id, name)``, in id order."""
    return list(enumerate(ACTION_NAMES))


def print_action_table() -> None:
    """Print the action table (id and name), the one documented source of the action space."""
    for a, name in action_table():
        print(f"{a:3d}  {name}")
