"""Rule sets: one frozen dataclass whose fields are the options of ../shared/RULES.md.

Every house rule that differs between the five source documents is a field; each document
is a preset. ``RuleSet.preset("ono", num_players=4, draw_until_playable=True)`` starts from
a preset and overrides fields. Construction validates every field and raises ``ValueError``
naming the field and the allowed values; nothing is clamped.

Presets (the source document in brackets):

- ``basic``: the common core alone, what most UNO engines play (108 cards, no ONO call, no
  challenge, Wild Draw Four any time, no stacking, no voluntary draw, the drawn card may be
  played, single round). The dealer is random (the core names no method); the first card
  follows the official rule of 001.
- ``ono`` [000, "ONO!"]: 112 cards with 8 Wilds; a first wild is shuffled back; not calling
  ONO lets the catcher swap hands with the offender; a false accusation costs the accuser 4.
  Scoring is optional in 000 and off in the preset.
- ``classic`` [001, official rules, the default]: dealer by highest card; a first Wild is
  named by the first player; Wild Draw Four only without a card of the current colour,
  challengeable; not calling costs 4; winner scores opponents' points, match to 500.
- ``stacking`` [002, "OONO"]: Draw Two / Draw Four stacking; not calling costs 2; the
  winner scores 0 and the others their own cards (lower is better), single round.
- ``uno2018`` [003, 2018 official rules]: 112 cards with Wild Shuffle Hands and three Wild
  Customizable (played as plain wilds unless ``wild_customizable="swap_hands"``); a first
  action or wild card is ignored and cards are flipped until a number; challenge as 001;
  not calling costs 2; scoring optional (off in the preset).
- ``wikipedia`` [004]: dealer by highest number card; a first Wild is named by the dealer;
  not calling costs 2; winner scores opponents' points, match to 500.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ono_env import cards as C

MIN_PLAYERS = 2
MAX_PLAYERS = 10

# Allowed values of the string-valued options, in the order their integer codes take.
CHOICES: dict[str, tuple[str, ...]] = {
    "dealer": ("random", "highest_card", "highest_number"),
    "first_card_action": ("dealer_plays", "flip_again"),
    "first_card_wild": ("return", "first_player_names", "dealer_names", "flip_again"),
    "first_card_wild_draw_four": ("return", "flip_again"),
    "ono_penalty": ("none", "draw", "swap_hands"),
    "wild_customizable": ("plain", "swap_hands"),
    "scoring": ("none", "winner", "penalty"),
}


@dataclass(frozen=True)
class RuleSet:
    """One complete rule set. Every field is an option of RULES.md; see the module docstring."""

    name: str = "classic"
    """Preset this rule set was made from (informational; equality ignores nothing)."""
    num_players: int = 4
    """Players at the table, 2-10."""
    hand_size: int = 7
    """Cards dealt to each player."""
    wild_cards: int = 4
    """Plain Wild cards in the deck (000: 8)."""
    wild_draw_four_cards: int = 4
    """Wild Draw Four cards in the deck."""
    wild_shuffle_hands_cards: int = 0
    """Wild Shuffle Hands cards (003: 1)."""
    wild_customizable_cards: int = 0
    """Wild Customizable cards (003: 3)."""
    short_deck: bool = False
    """Remove the coloured 6, 7, 8 and 9 ("shorter game" of 000)."""
    dealer: str = "highest_card"
    """How the first dealer is chosen: random, highest_card (highest point value drawn,
    ties draw again) or highest_number (number cards only)."""
    first_card_action: str = "dealer_plays"
    """First card Skip/Reverse/Draw Two: dealer_plays (as if the dealer played it) or
    flip_again (ignored: flip the next card onto it)."""
    first_card_wild: str = "first_player_names"
    """First card Wild (and Shuffle Hands / Customizable, which act as a plain wild here):
    return (shuffled back, flip again), first_player_names (the first player names the
    colour, then plays), dealer_names (the dealer names it), flip_again."""
    first_card_wild_draw_four: str = "return"
    """First card Wild Draw Four: return (shuffled back, flip again) or flip_again."""
    wild_draw_four_restricted: bool = True
    """Wild Draw Four only without a card of the current colour."""
    challenge: bool = True
    """The victim of a Wild Draw Four may challenge it (needs the restriction). With
    challenge on, an illegal Wild Draw Four may be played as a bluff."""
    stacking: bool = False
    """Draw Two on Draw Two, Draw Four on Draw Two or Draw Four (never Draw Two on Draw
    Four); the victim stacks or accepts the running total."""
    reverse_skips_with_two_players: bool = True
    """With two players a Reverse acts as a Skip (official). False: it only flips direction."""
    voluntary_draw: bool = True
    """A player may draw while holding a playable card."""
    must_play_drawn: bool = False
    """A playable drawn card must be played (no keep)."""
    draw_until_playable: bool = False
    """A player without a playable card draws until one is playable ("longer game" of 000)."""
    ono_penalty: str = "draw"
    """Not calling ONO and being caught: none (no call rule), draw (the offender draws
    ono_penalty_cards) or swap_hands (the catcher swaps hands with the offender)."""
    ono_penalty_cards: int = 4
    """Cards the offender draws when ono_penalty is draw."""
    false_catch_penalty: int = 0
    """Cards an accuser draws when the previous player did not fail to call (000: 4).
    0 means a catch is only legal when it succeeds."""
    wild_customizable: str = "plain"
    """Wild Customizable: plain (a plain wild) or swap_hands (swap hands with a chosen player)."""
    scoring: str = "winner"
    """Points at the end of a round: none, winner (the winner scores the points of the cards
    left in the opponents' hands) or penalty (each player scores their own cards; lower is
    better)."""
    target_score: int = 500
    """0 plays a single round; >0 plays a match of rounds (dealer rotating left) until a
    score reaches it. With penalty scoring the lowest total then wins."""

    # ---- construction ---------------------------------------------------------------
    def __post_init__(self) -> None:
        self._validate()

    @classmethod
    def preset(cls, preset: str = "classic", /, **overrides: Any) -> "RuleSet":
        """The named preset with ``overrides`` applied (``num_players=4``, ...)."""
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}: presets are {', '.join(PRESETS)}")
        _check_option_names(overrides)
        return dataclasses.replace(PRESETS[preset], **overrides)

    def replace(self, **overrides: Any) -> "RuleSet":
        """A copy with some fields changed (validated like any construction)."""
        _check_option_names(overrides)
        return dataclasses.replace(self, **overrides)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RuleSet":
        """Rule set from a mapping: ``preset`` (or ``name``) picks the base, other keys override."""
        d = dict(d)
        base = d.pop("preset", None)
        if base is None:
            if d.get("name") in PRESETS:
                base = d["name"]
            elif set(FIELD_NAMES) <= set(d):
                _check_option_names(d)
                return cls(**d)
            else:
                raise ValueError(
                    "a rules mapping needs 'preset' (one of " + ", ".join(PRESETS) +
                    ") unless it gives every option"
                )
        return cls.preset(base, **d)

    @classmethod
    def load(cls, path_or_name: str | Path) -> "RuleSet":
        """Rule set from a YAML file path, or a preset name / file stem under configs/rules/."""
        import yaml

        p = Path(path_or_name)
        if not p.suffix and str(path_or_name) in PRESETS:
            return cls.preset(str(path_or_name))
        if not p.exists():
            candidate = RULES_CONFIG_DIR / f"{path_or_name}.yaml"
            if candidate.exists():
                p = candidate
            else:
                raise ValueError(
                    f"no rules file {str(path_or_name)!r}: give a YAML path or one of "
                    f"{', '.join(PRESETS)}"
                )
        with open(p) as f:
            data = yaml.safe_load(f) or {}
        if not isinstance(data, dict):
            raise ValueError(f"rules file {str(p)!r} must hold a mapping of option: value")
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        """Every field as a plain JSON/YAML-serialisable dict."""
        return dataclasses.asdict(self)

    def to_yaml(self) -> str:
        import yaml

        return yaml.safe_dump(self.to_dict(), sort_keys=False)

    # ---- derived --------------------------------------------------------------------
    @property
    def deck_counts(self) -> np.ndarray:
        """``(56,) int16``: copies of each card type in the deck."""
        counts = np.zeros(C.NUM_CARD_TYPES, dtype=np.int16)
        for col in range(C.NUM_COLORS):
            for rank in range(C.NUM_RANKS):
                if self.short_deck and 6 <= rank <= 9:
                    continue
                counts[col * C.NUM_RANKS + rank] = 1 if rank == 0 else 2
        counts[C.WILD] = self.wild_cards
        counts[C.WILD_DRAW_FOUR] = self.wild_draw_four_cards
        counts[C.WILD_SHUFFLE_HANDS] = self.wild_shuffle_hands_cards
        counts[C.WILD_CUSTOMIZABLE] = self.wild_customizable_cards
        return counts

    @property
    def deck_size(self) -> int:
        return int(self.deck_counts.sum())

    @property
    def has_ono_call(self) -> bool:
        return self.ono_penalty != "none"

    # ---- validation -----------------------------------------------------------------
    def _validate(self) -> None:
        def bad(field: str, allowed: str) -> ValueError:
            return ValueError(
                f"invalid rule set: {field}={getattr(self, field)!r}; allowed: {allowed}"
            )

        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in ("bool", bool):
                if not isinstance(v, (bool, np.bool_)):
                    raise bad(f.name, "true or false")
            elif f.type in ("int", int):
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                    raise bad(f.name, "an integer")
            elif f.name in CHOICES:
                if v not in CHOICES[f.name]:
                    raise bad(f.name, " | ".join(CHOICES[f.name]))
        if not isinstance(self.name, str):
            raise bad("name", "a string")
        if not MIN_PLAYERS <= self.num_players <= MAX_PLAYERS:
            raise bad("num_players", f"{MIN_PLAYERS} to {MAX_PLAYERS}")
        if self.hand_size < 1:
            raise bad("hand_size", "1 or more")
        for name in ("wild_cards", "wild_draw_four_cards", "wild_shuffle_hands_cards",
                     "wild_customizable_cards"):
            if not 0 <= getattr(self, name) <= 40:
                raise bad(name, "0 to 40")
        if self.ono_penalty == "draw" and not 1 <= self.ono_penalty_cards <= 20:
            raise bad("ono_penalty_cards", "1 to 20 when ono_penalty is 'draw'")
        if not 0 <= self.ono_penalty_cards <= 20:
            raise bad("ono_penalty_cards", "0 to 20")
        if not 0 <= self.false_catch_penalty <= 20:
            raise bad("false_catch_penalty", "0 to 20")
        if self.false_catch_penalty > 0 and self.ono_penalty == "none":
            raise bad("false_catch_penalty", "0 when ono_penalty is 'none' (there is no catch)")
        if self.challenge and not self.wild_draw_four_restricted:
            raise bad("challenge", "false unless wild_draw_four_restricted is true "
                                   "(a challenge tests that restriction)")
        if self.challenge and self.stacking:
            raise bad("challenge", "false when stacking is true (no source document defines "
                                   "a challenge of a stacked Wild Draw Four)")
        if self.target_score < 0:
            raise bad("target_score", "0 (single round) or a positive score")
        if self.target_score > 0 and self.scoring == "none":
            raise bad("target_score", "0 when scoring is 'none' (a match needs points)")
        needed = self.num_players * self.hand_size + 1
        if self.deck_size < needed:
            raise ValueError(
                f"invalid rule set: the deck has {self.deck_size} cards, too few to deal "
                f"hand_size={self.hand_size} to num_players={self.num_players} and turn a "
                f"first card ({needed} needed)"
            )

    # ---- engine parameters ----------------------------------------------------------
    def params(self) -> np.ndarray:
        """``(NUM_PARAMS,) int64``: this rule set encoded for the compiled engine."""
        p = np.zeros(NUM_PARAMS, dtype=np.int64)
        p[P_PLAYERS] = self.num_players
        p[P_HAND_SIZE] = self.hand_size
        p[P_DEALER] = CHOICES["dealer"].index(self.dealer)
        p[P_FIRST_ACTION] = CHOICES["first_card_action"].index(self.first_card_action)
        p[P_FIRST_WILD] = CHOICES["first_card_wild"].index(self.first_card_wild)
        p[P_FIRST_WD4] = CHOICES["first_card_wild_draw_four"].index(self.first_card_wild_draw_four)
        p[P_WD4_RESTRICTED] = self.wild_draw_four_restricted
        p[P_CHALLENGE] = self.challenge
        p[P_STACKING] = self.stacking
        p[P_REVERSE_SKIPS] = self.reverse_skips_with_two_players
        p[P_VOLUNTARY_DRAW] = self.voluntary_draw
        p[P_MUST_PLAY_DRAWN] = self.must_play_drawn
        p[P_DRAW_UNTIL_PLAYABLE] = self.draw_until_playable
        p[P_ONO_PENALTY] = CHOICES["ono_penalty"].index(self.ono_penalty)
        p[P_ONO_PENALTY_CARDS] = self.ono_penalty_cards
        p[P_FALSE_CATCH] = self.false_catch_penalty
        p[P_WC_SWAP] = self.wild_customizable == "swap_hands"
        p[P_SCORING] = CHOICES["scoring"].index(self.scoring)
        p[P_TARGET] = self.target_score
        p[P_DECK_SIZE] = self.deck_size
        p[P_DECK:P_DECK + C.NUM_CARD_TYPES] = self.deck_counts
        # P_SKIP_FORCED, P_MAX_DECISIONS and P_REWARD_POINTS are set by VecGame.
        return p


# Indices into RuleSet.params(), read by the engine. P_SKIP_FORCED, P_MAX_DECISIONS and
# P_REWARD_POINTS are game settings that VecGame fills in; P_DECK is the first of 56 entries
# holding deck_counts (copies of each card type), so the deck is defined here alone.
(P_PLAYERS, P_HAND_SIZE, P_DEALER, P_FIRST_ACTION, P_FIRST_WILD, P_FIRST_WD4,
 P_WD4_RESTRICTED, P_CHALLENGE, P_STACKING, P_REVERSE_SKIPS, P_VOLUNTARY_DRAW,
 P_MUST_PLAY_DRAWN, P_DRAW_UNTIL_PLAYABLE, P_ONO_PENALTY, P_ONO_PENALTY_CARDS,
 P_FALSE_CATCH, P_WC_SWAP, P_SCORING, P_TARGET, P_DECK_SIZE, P_SKIP_FORCED,
 P_MAX_DECISIONS, P_REWARD_POINTS, P_DECK) = range(24)
NUM_PARAMS = P_DECK + C.NUM_CARD_TYPES

FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(RuleSet))


def _check_option_names(overrides: Mapping[str, Any]) -> None:
    unknown = sorted(set(overrides) - set(FIELD_NAMES))
    if unknown:
        raise ValueError(
            f"unknown rule option(s) {', '.join(map(repr, unknown))}: options are "
            f"{', '.join(FIELD_NAMES)}"
        )

RULES_CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs" / "rules"

_OFFICIAL = RuleSet()  # the field defaults are the official (001) rules

PRESETS: dict[str, RuleSet] = {
    "basic": dataclasses.replace(
        _OFFICIAL, name="basic", dealer="random", wild_draw_four_restricted=False,
        challenge=False, voluntary_draw=False, ono_penalty="none", ono_penalty_cards=0,
        scoring="none", target_score=0,
    ),
    "ono": dataclasses.replace(
        _OFFICIAL, name="ono", wild_cards=8, dealer="random", first_card_wild="return",
        wild_draw_four_restricted=False, challenge=False, ono_penalty="swap_hands",
        ono_penalty_cards=0, false_catch_penalty=4, scoring="none", target_score=0,
    ),
    "classic": dataclasses.replace(_OFFICIAL, name="classic"),
    "stacking": dataclasses.replace(
        _OFFICIAL, name="stacking", dealer="random", first_card_wild="return",
        wild_draw_four_restricted=False, challenge=False, stacking=True,
        ono_penalty_cards=2, scoring="penalty", target_score=0,
    ),
    "uno2018": dataclasses.replace(
        _OFFICIAL, name="uno2018", dealer="random", wild_shuffle_hands_cards=1,
        wild_customizable_cards=3, first_card_action="flip_again", first_card_wild="flip_again",
        first_card_wild_draw_four="flip_again", ono_penalty_cards=2, scoring="none",
        target_score=0,
    ),
    "wikipedia": dataclasses.replace(
        _OFFICIAL, name="wikipedia", dealer="highest_number", first_card_wild="dealer_names",
        wild_draw_four_restricted=False, challenge=False, ono_penalty_cards=2,
    ),
}


def resolve_rules(rules: "RuleSet | str | Path | Mapping[str, Any] | None" = None,
                  **overrides: Any) -> RuleSet:
    """A RuleSet from a RuleSet, a preset name, a YAML path or a mapping, with overrides."""
    if rules is None:
        rs = RuleSet.preset("classic")
    elif isinstance(rules, RuleSet):
        rs = rules
    elif isinstance(rules, Mapping):
        rs = RuleSet.from_dict(rules)
    elif isinstance(rules, (str, Path)):
        rs = RuleSet.load(rules)
    else:
        raise ValueError(
            f"rules must be a RuleSet, a preset name ({', '.join(PRESETS)}), a YAML path or "
            f"a mapping; got {type(rules).__name__}"
        )
    return rs.replace(**overrides) if overrides else rs
