"""The observation: one flat float32 vector per seat, written for the whole batch by the
compiled encoder (``ono_env._engine.observe``), used by every adapter and agent.

It holds what that seat may know and nothing more. Two layouts exist, and a saved model
records the one it was trained on (``observation_version``):

- **version 1** (the environments' default, unchanged since 0.1): its own hand, the public
  table (top card, colour, phase, pending draw, direction, pile sizes, the discard pile's
  contents), each opponent's hand size and ONO call, and the scores when the rules keep them.
  Its length depends on the player count and on the scoring.
- **version 2** (:data:`OBS_VERSION`, opt-in with ``observation_version=2``): one length,
  :data:`OBS_V2_SIZE`, for every rule set and 2-10 players. The version-1 blocks, then the
  seat's own score, the player count, a block of the rules that change play
  (:func:`rules_features`), and nine per-opponent blocks (from the seat's left; a flag says
  whether the seat is present) holding each opponent's hand size, call and score, what this
  seat publicly or privately knows of its hand (cards it is known to hold, card types it is
  known to lack and for how many of its cards, how many of its cards are unknown) and its
  recent play (its last two cards played, the colour it last named, whether it has drawn
  since it last played).

Other hands and the order of the stock are never in either. The layouts are defined here
once, by the block tables ``BLOCKS`` and ``V2_BLOCKS``/``OPPONENT_FIELDS``; the compiled
encoder writes at the offsets derived from them, and agents read observations through named
views (:func:`observation_view`), never through offsets. ``print_observation_layout(rules)``
prints the table for a rule set; ``observation_layout(rules)`` returns it.

A version number changes whenever a layout changes (saved models record it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from ono_env import cards as C
from ono_env.cards import NUM_CARD_TYPES, NUM_COLORS, NUM_RANKS, NUM_WILD_TYPES
from ono_env.checks import shown
from ono_env.rules import CHOICES, RuleSet, resolve_rules

OBS_VERSION = 2
"""The newest observation layout (what ``observation_version=2`` selects)."""
OBS_VERSIONS = (1, 2)
"""Every layout this version of ono_env writes (and so every layout a model may name)."""
DEFAULT_OBS_VERSION = 1
"""The layout the environments and ``VecGame`` write unless told otherwise (version 1: their
spaces stay as they were; version 2 is opt-in)."""

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
    ("pending_draw", 1, "cards the acting player draws if they accept (a stack past "
                        "observation_high's bound reads as it)"),
    ("drawn_card", NUM_CARD_TYPES, "the card this seat just drew, one-hot (phase drawn, own turn only)"),
    ("direction", 1, "+1 play passes left (clockwise), -1 right"),
    ("stock_size", 1, "cards in the stock"),
    ("discard_pile", NUM_CARD_TYPES,
     "copies of each card type in the discard pile (seen played since the last reshuffle)"),
    ("self", 2, "own hand size, own ONO call (1/0)"),
)


def _offsets_of(blocks: tuple[tuple[str, int, str], ...]) -> dict[str, int]:
    """Each block's start, and ``"end"``: where the last one stops."""
    out, at = {}, 0
    for name, size, _ in blocks:
        out[name] = at
        at += size
    out["end"] = at
    return out


_AT = _offsets_of(BLOCKS)
_AT["opponents"] = _AT["end"]
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

# ---- version 2 -----------------------------------------------------------------------------
MAX_PLAYERS = 10
MAX_OPPONENTS = MAX_PLAYERS - 1
CARD_KINDS = NUM_RANKS + NUM_WILD_TYPES
"""The kinds of card in the version-2 history blocks: the 13 ranks, then the 4 wild types (17)."""
CARD_CODE = NUM_COLORS + CARD_KINDS
"""A card in the version-2 history blocks: its colour (4, none for a wild) and its kind
(:data:`CARD_KINDS`), 21 entries."""
LACKS_CODE = NUM_COLORS + NUM_RANKS + 1
"""The lacks entries of an opponent: the 4 colours, the 13 ranks, and wilds (any wild)."""

# (name, entries, meaning, python default) of the rules block: the options that change play,
# in the order the encoder writes them (``rules_features`` computes the same row).
RULE_FEATURES: tuple[tuple[str, str], ...] = (
    ("wild_draw_four_restricted", "1/0"),
    ("challenge", "1/0"),
    ("stacking", "1/0"),
    ("reverse_skips_with_two_players", "1/0"),
    ("voluntary_draw", "1/0"),
    ("must_play_drawn", "1/0"),
    ("draw_until_playable", "1/0"),
    ("ono_penalty=none", "1/0"),
    ("ono_penalty=draw", "1/0"),
    ("ono_penalty=swap_hands", "1/0"),
    ("ono_penalty_cards", "/ 4"),
    ("false_catch_penalty", "/ 2"),
    ("wild_customizable=swap_hands", "1/0"),
    ("scoring=none", "1/0"),
    ("scoring=winner", "1/0"),
    ("scoring=penalty", "1/0"),
    ("target_score", "/ 500"),
    ("hand_size", "/ 7"),
    ("deck_size", "/ 108"),
    ("wild_cards", "/ 4"),
    ("wild_draw_four_cards", "/ 4"),
    ("wild_shuffle_hands_cards", "/ 4"),
    ("wild_customizable_cards", "/ 4"),
)
NUM_RULE_FEATURES = len(RULE_FEATURES)

V2_BLOCKS: tuple[tuple[str, int, str], ...] = BLOCKS + (
    ("own_score", 1, "own score (scaled as the scores of version 1; 0 without scoring)"),
    ("players", MAX_PLAYERS - 1, "player count 2-10, one-hot"),
    ("rules", NUM_RULE_FEATURES, "the options that change play (rules_features)"),
)
OPPONENT_FIELDS: tuple[tuple[str, int, str], ...] = (
    ("present", 1, "1 if this seat exists at the table"),
    ("hand_size", 1, "cards in its hand"),
    ("called", 1, "its ONO call (1/0)"),
    ("score", 1, "its score (scaled as own_score)"),
    ("known_cards", NUM_CARD_TYPES,
     "copies of each card type this seat knows it holds (its own old hand after a swap, a "
     "hand shown in a challenge), less the cards of those types it has played since"),
    ("lacks", LACKS_CODE,
     "card types it is publicly known to lack (a forced draw: colours R Y G B, ranks 0-9 S "
     "R +2, wilds), for lacks_covered of its cards"),
    ("lacks_covered", 1, "how many of its cards the lacks entries cover"),
    ("unknown", 1, "cards of its hand not in known_cards (drawn or received unseen)"),
    ("last_play", CARD_CODE, "the last card it played: colour (4, none for a wild), kind (13 "
     "ranks, 4 wild types)"),
    ("previous_play", CARD_CODE, "the card it played before that, coded the same way"),
    ("named_color", NUM_COLORS, "the colour it named last (after a wild), one-hot"),
    ("drew", 1, "1 from its draw (or a pending draw taken) until it next plays a card"),
)
"""The fields of one opponent block of version 2, ``(name, entries, meaning)``: one block per
opponent from this seat's left, ``MAX_OPPONENTS`` of them."""


_AT2 = _offsets_of(V2_BLOCKS)
_OPP = _offsets_of(OPPONENT_FIELDS)
OPPONENT_SIZE = _OPP["end"]
"""Entries of one opponent block."""
OBS2_OWN_SCORE = _AT2["own_score"]
OBS2_PLAYERS = _AT2["players"]
OBS2_RULES = _AT2["rules"]
OBS2_OPPONENTS = _AT2["end"]
"""Where the first opponent block starts (the fixed part's length)."""
OBS_V2_SIZE = OBS2_OPPONENTS + MAX_OPPONENTS * OPPONENT_SIZE
"""Length of every version-2 observation."""
# offsets inside an opponent block (for the compiled encoder)
OPP_PRESENT = _OPP["present"]
OPP_SIZE = _OPP["hand_size"]
OPP_CALLED = _OPP["called"]
OPP_SCORE = _OPP["score"]
OPP_KNOWN = _OPP["known_cards"]
OPP_LACKS = _OPP["lacks"]
OPP_COVERED = _OPP["lacks_covered"]
OPP_UNKNOWN = _OPP["unknown"]
OPP_LAST = _OPP["last_play"]
OPP_PREVIOUS = _OPP["previous_play"]
OPP_NAMED = _OPP["named_color"]
OPP_DREW = _OPP["drew"]


RulesSpec = RuleSet | str | Mapping[str, Any]
"""What the functions below take as rules: a RuleSet, a preset name or YAML path, a mapping."""


def _ruleset(rules: Any) -> RuleSet:
    """``rules`` as a RuleSet (a RuleSet, a preset name, a YAML path or a mapping, as
    :func:`~ono_env.rules.resolve_rules` takes), or ``ValueError``; no default here."""
    if rules is None:
        raise ValueError("rules=None; allowed: a RuleSet, a preset name, a YAML path or a "
                         "mapping")
    return rules if isinstance(rules, RuleSet) else resolve_rules(rules)


def rules_features(rules: RulesSpec) -> np.ndarray:
    """``(NUM_RULE_FEATURES,) float32``: the rules block of a version-2 observation under
    ``rules`` (the compiled encoder writes the same row; the tests check it)."""
    rules = _ruleset(rules)
    vals: dict[str, float] = {
        "wild_draw_four_restricted": rules.wild_draw_four_restricted,
        "challenge": rules.challenge, "stacking": rules.stacking,
        "reverse_skips_with_two_players": rules.reverse_skips_with_two_players,
        "voluntary_draw": rules.voluntary_draw, "must_play_drawn": rules.must_play_drawn,
        "draw_until_playable": rules.draw_until_playable,
        "ono_penalty_cards": rules.ono_penalty_cards / 4,
        "false_catch_penalty": rules.false_catch_penalty / 2,
        "target_score": rules.target_score / 500, "hand_size": rules.hand_size / 7,
        "deck_size": rules.deck_size / 108,
    }
    for option in ("ono_penalty", "wild_customizable", "scoring"):
        for value in CHOICES[option]:
            vals[f"{option}={value}"] = getattr(rules, option) == value
    counts = rules.deck_counts
    for name, card in (("wild_cards", 52), ("wild_draw_four_cards", 53),
                       ("wild_shuffle_hands_cards", 54), ("wild_customizable_cards", 55)):
        vals[name] = int(counts[card]) / 4
    return np.array([float(vals[name]) for name, _ in RULE_FEATURES], np.float32)


class Block(NamedTuple):
    name: str
    start: int
    stop: int
    meaning: str


def check_observation_version(version: int) -> int:
    """``version`` when it is one of :data:`OBS_VERSIONS` as an integer (a float such as 2.0,
    a bool or a string is refused, never coerced)."""
    if (isinstance(version, bool) or not isinstance(version, (int, np.integer))
            or version not in OBS_VERSIONS):
        raise ValueError(f"observation_version={shown(version, 40)}; allowed: "
                         f"{', '.join(map(str, OBS_VERSIONS))}")
    return int(version)


def observation_layout(rules: RulesSpec, version: int = DEFAULT_OBS_VERSION) -> list[Block]:
    """The blocks of the observation vector for ``rules``. Version 1's size depends on the
    number of players and on whether the rules keep scores; version 2 has one length for
    every table: its opponent blocks are listed as ``opponent_<k>`` (k = 1 is the seat's
    left), each made of the :data:`OPPONENT_FIELDS`."""
    rules = _ruleset(rules)
    if check_observation_version(version) == 2:
        blocks = [Block(name, _AT2[name], _AT2[name] + size, meaning)
                  for name, size, meaning in V2_BLOCKS]
        for k in range(MAX_OPPONENTS):
            start = OBS2_OPPONENTS + k * OPPONENT_SIZE
            blocks.append(Block(f"opponent_{k + 1}", start, start + OPPONENT_SIZE,
                                f"opponent {k + 1} from this seat's left: "
                                + ", ".join(name for name, _, _ in OPPONENT_FIELDS)))
        return blocks
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


def observation_high(rules: RulesSpec) -> float:
    """The largest value an entry of an observation under ``rules`` can take, either
    version: the upper bound of the environments' observation ``Box`` (its lower bound is
    -1). A count is at most the deck size; a score, scaled by the target (by 100 in a single
    round), is at most the target less one plus every card's points (a match ends in the
    round that reaches the target); the rules block holds the target divided by 500. With
    stacking, the cards to draw after a stack hold every Draw Two and Wild Draw Four of the
    deck once, or the deck size where that is more; a stack past that (a penalty draw
    reshuffles played draw cards into the stock, and they are drawn and stacked again: it
    happens under ``ono`` with stacking) is observed as that bound. Where a
    quotient is the bound, it is rounded up to the next float32, so that no entry, computed
    in float32, passes it; under the presets the bound is the deck size."""
    rules = _ruleset(rules)
    high = float(rules.deck_size)
    if rules.stacking:
        counts = rules.deck_counts
        draw_twos = sum(int(counts[c * C.NUM_RANKS + 12]) for c in range(C.NUM_COLORS))
        high = max(high, float(2 * draw_twos + 4 * int(counts[C.WILD_DRAW_FOUR])))
    if rules.scoring != "none":
        points = rules.deck_points
        target = rules.target_score
        scaled = max((target - 1 + points) / target if target else points / 100, target / 500)
        if scaled > high:
            high = float(np.nextafter(np.float32(scaled), np.float32(np.inf)))
    return high


def observation_size(rules: RulesSpec, version: int = DEFAULT_OBS_VERSION) -> int:
    """Length of the observation vector under ``rules`` (version 2: always
    :data:`OBS_V2_SIZE`)."""
    rules = _ruleset(rules)
    if check_observation_version(version) == 2:
        return OBS_V2_SIZE
    return observation_layout(rules)[-1].stop


# The fields whose entries are per colour: a card type (the 56 card ids) or a colour (their
# first NUM_COLORS entries, R Y G B). Every other entry is the same under any colour names.
_BY_CARD = ("hand", "top_card", "drawn_card", "discard_pile", "known_cards")
_BY_COLOR = ("color", "lacks", "last_play", "previous_play", "named_color")


def color_permutation(perm: Any, rules: RulesSpec,
                      version: int = DEFAULT_OBS_VERSION) -> tuple[np.ndarray, np.ndarray]:
    """The four colours renamed: colour ``k`` (0-3, R Y G B) becomes ``perm[k]``. No rule
    tells the colours apart, so the renamed position is the same position under other
    names; the two index arrays say where each entry goes:

    - ``obs_index``: ``obs[..., obs_index]`` is the observation of the renamed position;
    - ``action_index``: action ``a`` of the position is action ``action_index[a]`` of the
      renamed one, so ``logits[..., action_index]`` of the renamed observation are the
      logits of the original's actions (the legal mask likewise).

    For data augmentation and for playing a policy averaged over the 24 namings (a policy
    is not colour-blind by construction; how far ``ppo-any`` is, is measured in
    docs/results/color-symmetry). ``ValueError`` when ``perm`` is not a permutation of
    0-3. Checked against the engine by a test that plays a position and its renamed copy
    side by side."""
    rules = _ruleset(rules)
    p = np.asarray(perm) if not isinstance(perm, (str, bytes)) else np.asarray([])
    if (p.shape != (NUM_COLORS,) or p.dtype.kind not in "iu"
            or any(isinstance(x, (bool, np.bool_)) for x in perm)   # True is not colour 1
            or sorted(p.tolist()) != list(range(NUM_COLORS))):
        raise ValueError(f"color permutation {perm!r}; allowed: the numbers 0-3 in any order "
                         f"(colour k, of R Y G B, becomes perm[k])")
    inv = np.argsort(p)                       # new colour -> old colour
    cards = np.arange(NUM_CARD_TYPES)         # new card id -> old card id
    colored = NUM_COLORS * NUM_RANKS
    cards[:colored] = (inv[:, None] * NUM_RANKS + np.arange(NUM_RANKS)).reshape(-1)
    size = observation_size(rules, version)
    obs_index = np.arange(size)

    def fields(start: int, table: tuple[tuple[str, int, str], ...]) -> None:
        for name, at in _offsets_of(table).items():
            if name in _BY_CARD:
                obs_index[start + at:start + at + NUM_CARD_TYPES] = start + at + cards
            elif name in _BY_COLOR:
                obs_index[start + at:start + at + NUM_COLORS] = start + at + inv
    fields(0, V2_BLOCKS if check_observation_version(version) == 2 else BLOCKS)
    if version == 2:
        for k in range(MAX_OPPONENTS):
            fields(OBS2_OPPONENTS + k * OPPONENT_SIZE, OPPONENT_FIELDS)
    action_index = np.arange(C.NUM_ACTIONS)
    action_index[:colored] = (p[:, None] * NUM_RANKS + np.arange(NUM_RANKS)).reshape(-1)
    for first in (C.A_PLAY_W, C.A_PLAY_WD4, C.A_PLAY_WC_COLOR, C.A_COLOR):
        action_index[first:first + NUM_COLORS] = first + p
    return obs_index, action_index


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


class OpponentView(NamedTuple):
    """Named views of the nine version-2 opponent blocks ``(B, 9, ...)``, from the seat's
    left (rows beyond the table's opponents are all 0, ``present`` 0)."""

    present: np.ndarray        # (B, 9)
    hand_size: np.ndarray      # (B, 9)
    called: np.ndarray         # (B, 9)
    score: np.ndarray          # (B, 9)
    known_cards: np.ndarray    # (B, 9, 56)
    lacks: np.ndarray          # (B, 9, 18) colours R Y G B, ranks 0-9 S R +2, wilds
    lacks_covered: np.ndarray  # (B, 9)
    unknown: np.ndarray        # (B, 9)
    last_play: np.ndarray      # (B, 9, 21) colour (4), kind (17)
    previous_play: np.ndarray  # (B, 9, 21)
    named_color: np.ndarray    # (B, 9, 4)
    drew: np.ndarray           # (B, 9)


class ObservationViewV2(NamedTuple):
    """Named views into a batch of version-2 observations ``(B, OBS_V2_SIZE)``; the
    version-1 fields keep their names (``opponent_sizes`` and friends become
    ``opponents``)."""

    hand: np.ndarray
    top_card: np.ndarray
    color: np.ndarray
    phase: np.ndarray
    my_turn: np.ndarray
    pending_draw: np.ndarray
    drawn_card: np.ndarray
    direction: np.ndarray
    stock_size: np.ndarray
    discard_pile: np.ndarray
    self_size: np.ndarray
    self_called: np.ndarray
    own_score: np.ndarray       # (B,)
    players: np.ndarray         # (B, 9) one-hot of 2-10
    rules: np.ndarray           # (B, NUM_RULE_FEATURES)
    opponents: OpponentView


def observation_view(obs: np.ndarray, rules: RulesSpec, version: int = DEFAULT_OBS_VERSION
                     ) -> Any:
    """Named views of ``obs`` (``(B, D)``, D = ``observation_size(rules, version)``): an
    :class:`ObservationView` for version 1, an :class:`ObservationViewV2` for version 2."""
    rules = _ruleset(rules)
    size = observation_size(rules, version)
    if not isinstance(obs, np.ndarray):
        raise ValueError(f"obs is a {type(obs).__name__}; allowed: a NumPy array of shape "
                         f"(B, {size})")
    if obs.ndim != 2 or obs.shape[1] != size:
        what = (f"{rules.num_players}-player {rules.name!r} rules have" if version == 1
                else "version-2 observations have")
        raise ValueError(f"observations of shape {obs.shape}; {what} (B, {size})")
    blk = {name: obs[:, _AT[name]:_AT[name] + sz] for name, sz, _ in BLOCKS}
    common = dict(
        hand=blk["hand"], top_card=blk["top_card"], color=blk["color"], phase=blk["phase"],
        my_turn=blk["my_turn"][:, 0], pending_draw=blk["pending_draw"][:, 0],
        drawn_card=blk["drawn_card"], direction=blk["direction"][:, 0],
        stock_size=blk["stock_size"][:, 0], discard_pile=blk["discard_pile"],
        self_size=blk["self"][:, 0], self_called=blk["self"][:, 1])
    if version == 2:
        opp = obs[:, OBS2_OPPONENTS:].reshape(len(obs), MAX_OPPONENTS, OPPONENT_SIZE)
        f = {name: opp[:, :, _OPP[name]:_OPP[name] + sz] for name, sz, _ in OPPONENT_FIELDS}
        one = {name: v[:, :, 0] for name, v in f.items() if v.shape[2] == 1}
        return ObservationViewV2(
            **common, own_score=obs[:, OBS2_OWN_SCORE],
            players=obs[:, OBS2_PLAYERS:OBS2_PLAYERS + MAX_PLAYERS - 1],
            rules=obs[:, OBS2_RULES:OBS2_RULES + NUM_RULE_FEATURES],
            opponents=OpponentView(**{name: one.get(name, f[name])
                                      for name, _, _ in OPPONENT_FIELDS}))
    n = rules.num_players
    opp1 = obs[:, OBS_OPPONENTS:OBS_OPPONENTS + 2 * (n - 1)]
    scores = None
    if rules.scoring != "none":
        start = OBS_OPPONENTS + 2 * (n - 1)
        scores = obs[:, start:start + n]
    return ObservationView(**common, opponent_sizes=opp1[:, 0::2],
                           opponent_called=opp1[:, 1::2], scores=scores)


def observation_scale(rules: RulesSpec, version: int = DEFAULT_OBS_VERSION) -> np.ndarray:
    """``(D,) float32``: a fixed divisor per observation entry: each count divided by a typical
    size (a hand size by 10, a card type's copies by 2), so that most lie in [0, 1] and a large
    hand reads above 1 (one-hot blocks, flags, the direction and the scaled scores are left
    as they are). Learned agents
    divide by it before their network; saved models store it. Version 2's depends on the
    deck size only through ``stock_size``, which it divides by 108 at every table."""
    rules = _ruleset(rules)
    scale = np.ones((1, observation_size(rules, version)), np.float32)
    v = observation_view(scale, rules, version)
    v.hand[:] = 2.0
    v.pending_draw[:] = 8.0
    v.discard_pile[:] = 2.0
    v.self_size[:] = 10.0
    if version == 2:
        v.stock_size[:] = 108.0
        o = v.opponents
        for field in (o.hand_size, o.lacks_covered, o.unknown):
            field[:] = 10.0
        o.known_cards[:] = 2.0
    else:
        v.stock_size[:] = float(rules.deck_size)
        v.opponent_sizes[:] = 10.0
    return scale[0]


def format_observation_layout(rules: RulesSpec, version: int = DEFAULT_OBS_VERSION) -> str:
    rules = _ruleset(rules)
    lines = [f"observation layout v{version} ({rules.name}, {rules.num_players} players, "
             f"{observation_size(rules, version)} floats)",
             f"{'name':<14} {'slice':<12} meaning"]
    for b in observation_layout(rules, version):
        lines.append(f"{b.name:<14} {f'{b.start}:{b.stop}':<12} {b.meaning}")
    if version == 2:
        lines.append("each opponent block (offsets inside it):")
        for name, size, meaning in OPPONENT_FIELDS:
            lines.append(f"  {name:<14} {f'{_OPP[name]}:{_OPP[name] + size}':<10} {meaning}")
        lines.append("the rules block (offsets inside it):")
        for k, (name, how) in enumerate(RULE_FEATURES):
            lines.append(f"  {name:<30} {k:<4} {how}")
    return "\n".join(lines)


def print_observation_layout(rules: RulesSpec,
                             version: int = DEFAULT_OBS_VERSION) -> None:
    """Print the observation table for ``rules`` (a RuleSet, a preset name, a YAML path or a
    mapping, as ``resolve_rules`` takes): version 1's layout depends on the number of
    players, so pass the env's own ``env.rules``. ``None`` is refused, as everywhere in this
    module (no default rules)."""
    print(format_observation_layout(rules, version))
