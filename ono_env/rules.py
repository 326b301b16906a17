"""Rule sets: one frozen dataclass whose fields are the rules options (docs/rules.md).

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
import re
import reprlib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from ono_env import cards as C
from ono_env.checks import check_input_file, check_text, first_few, is_int, no_file, shown

MIN_PLAYERS = 2
"""The fewest players at a table."""
MAX_PLAYERS = 10
"""The most players at a table."""
MAX_YAML_BYTES = 1 << 16
"""The largest rules or training config YAML file read: 64 KiB, over ten times the largest
the project writes (a training config with its mixture of tables, a run's config.yaml).
PyYAML takes about 30 us a node, so a file near the earlier cap of 1 MiB, one long list,
took 33 s and 460 MB before it was refused as rules."""
MAX_NAME = 80
"""The longest rule set name."""
MAX_TARGET_SCORE = 1_000_000   # scores are int32 in the engine; real matches play to 500
MAX_WILD_CARDS = 40            # copies of one wild type (hands count copies in uint8)
MAX_PENALTY_CARDS = 20
MAX_HAND_SIZE = 100            # the deck size check bounds it further
INT_RANGES = {"num_players": (MIN_PLAYERS, MAX_PLAYERS), "hand_size": (1, MAX_HAND_SIZE),
              **{f"wild_{kind}cards": (0, MAX_WILD_CARDS)
                 for kind in ("", "draw_four_", "shuffle_hands_", "customizable_")},
              "ono_penalty_cards": (0, MAX_PENALTY_CARDS),
              "false_catch_penalty": (0, MAX_PENALTY_CARDS), "target_score": (0, MAX_TARGET_SCORE)}
"""Each whole-number rule's bounds (a rule set may narrow them: ``ono_penalty_cards`` from 1
with the draw penalty, the hand size by the deck)."""

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
    """One complete rule set. Every field is a rules option (docs/rules.md); see the module
    docstring."""

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
    """A playable drawn card must be played (no keep), except a Wild Draw Four that would be a
    bluff (the player holds the colour in effect; legal only with ``challenge``)."""
    draw_until_playable: bool = False
    """A player without a playable card draws until one is playable ("longer game" of 000)."""
    ono_penalty: str = "draw"
    """Not calling ONO and being caught: none (no call rule), draw (the offender draws
    ono_penalty_cards) or swap_hands (the catcher swaps hands with the offender)."""
    ono_penalty_cards: int = 4
    """Cards the offender draws when ono_penalty is draw."""
    false_catch_penalty: int = 0
    """Cards an accuser draws when the accused holds more than one card, a false accusation
    (000: 4); accusing a one-card player who cannot be caught (who called) costs nothing. 0 means a catch is only
    legal when it succeeds."""
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
    def preset(cls, preset: str = "classic", /, **overrides: Any) -> RuleSet:
        """The named preset with ``overrides`` applied (``num_players=4``, ...)."""
        if not isinstance(preset, str) or preset not in PRESETS:
            raise ValueError(f"unknown preset {shown(preset, 60)}: presets are {', '.join(PRESETS)}")
        _check_option_names(overrides)
        return _renamed_checked(preset, dataclasses.replace(PRESETS[preset], **overrides))

    def replace(self, **overrides: Any) -> RuleSet:
        """A copy with some fields changed (validated like any construction)."""
        _check_option_names(overrides)
        return _renamed_checked(self.name, dataclasses.replace(self, **overrides))

    def differing_fields(self, other: RuleSet, skip: tuple[str, ...] = ()) -> list[str]:
        """The fields whose values differ from ``other``'s, in declaration order, but for
        those named in ``skip``: what an error or a summary names of two rule sets."""
        if not isinstance(other, RuleSet):
            raise ValueError(f"differing_fields: other is a {type(other).__name__}; allowed: a "
                             f"RuleSet (RuleSet.preset(name) makes one from a preset's name)")
        return [f.name for f in dataclasses.fields(self)
                if f.name not in skip and getattr(self, f.name) != getattr(other, f.name)]

    def mismatch(self, other: RuleSet) -> str | None:
        """None where ``other`` plays as these rules do (a name is no rule), else what an
        agent made for these rules and refused at ``other``'s table says of the two:
        ``"2-player 'basic' rules, not 2-player 'basic' (stacking differ)"`` for ``basic``'s
        2-player rules and those with ``stacking=True``, every field that differs named."""
        differ = self.differing_fields(other, skip=("name",))
        if not differ:
            return None
        return (f"{self.num_players}-player {self.name!r} rules, not {other.num_players}-player "
                f"{other.name!r} ({', '.join(differ)} differ)")

    def is_preset(self) -> bool:
        """Are these a preset's rules (the preset named by ``name``), at any player count?"""
        base = PRESETS.get(self.name)
        return base is not None and not base.differing_fields(self, skip=("name", "num_players"))

    @property
    def title(self) -> str:
        """How headers and summaries name these rules: "ono rules" for a preset's (at any
        player count), "custom rules based on ono" for a rule set built from a preset that
        changes it (it keeps the preset's ``name``; before, a rules file that changed ``ono``
        was headed "ono rules"), and "mine rules" for one given a ``name`` of its own."""
        if self.name in PRESETS and not self.is_preset():
            return f"custom rules based on {self.name}"
        return f"{self.name} rules"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RuleSet:
        """Rule set from a mapping: ``preset`` (or ``name``) picks the base, other keys override."""
        if not isinstance(d, Mapping):
            raise ValueError(f"a rules mapping must be a mapping of option: value; got "
                             f"{type(d).__name__}")
        d = dict(d)
        bad_keys = [k for k in d if not isinstance(k, str)]
        if bad_keys:
            raise ValueError(f"rule option names must be strings; got {shown(bad_keys[0], 60)}")
        if "preset" in d and d["preset"] is None:   # before: taken as left out, the base then
            # the mapping's name where that was a preset's, or "needs 'preset'" where it was not
            raise ValueError(f"preset is empty (null); allowed: a preset's name "
                             f"({', '.join(PRESETS)}), or no preset key where the name is a "
                             f"preset's or every option is given")
        base = d.pop("preset", None)
        if base is None:
            if isinstance(d.get("name"), str) and d["name"] in PRESETS:
                base = d["name"]
            elif set(FIELD_NAMES) <= set(d):
                _check_option_names(d)
                return cls(**d)
            else:
                # a misspelt option first (before: only "needs 'preset'" for {"draw_until": 1})
                _check_option_names(d)
                named = (f"; its name {shown(d['name'], 40)} is not a preset's" if "name" in d
                         else "")
                raise ValueError(
                    "a rules mapping needs 'preset' (one of " + ", ".join(PRESETS) +
                    ") unless it gives every option" + named
                )
        return cls.preset(base, **d)

    @classmethod
    def from_written(cls, d: Any) -> RuleSet:
        """Rule set from a mapping of every option, as :meth:`to_dict` writes it (a replay's
        and a model file's ``rules``): an option left out, or a ``preset``, is one
        ``ValueError`` naming it, where :meth:`from_dict` (a rules file, a position) takes
        what is not given from the preset."""
        if isinstance(d, Mapping):
            allowed = "every option written out, as RuleSet.to_dict() writes it"
            if "preset" in d:
                raise ValueError(f"'preset' is not an option; allowed: {allowed}")
            missing = [n for n in FIELD_NAMES if n not in d]
            if missing:
                raise ValueError(f"options left out: {first_few(missing)}; allowed: {allowed}")
        return cls.from_dict(d)

    @classmethod
    def load(cls, path_or_name: str | Path) -> RuleSet:
        """Rule set from a YAML file path, or a preset name / the name of a rules file shipped
        with ono_env (``configs/rules/<name>.yaml``). Any problem with the file is one
        ``ValueError`` naming the file and what is wrong; loading runs no code from it."""
        from ono_env.configs import config_file, config_names

        if not isinstance(path_or_name, (str, Path)):
            raise ValueError(f"rules must be a preset name or a YAML path; got "
                             f"{type(path_or_name).__name__}")
        text = str(path_or_name)
        if text in PRESETS:
            return cls.preset(text)
        p = Path(path_or_name)
        named = shown(text, 240)   # a path is worth showing whole; a page of one is not
        try:
            is_file = p.is_file()
        except OSError as exc:   # a name too long for the system (before: its OSError, whole)
            raise ValueError(f"rules {named}: {exc.strerror or exc}; allowed: a YAML file's path "
                             f"or a preset's name ({', '.join(PRESETS)})") from None
        if not is_file:
            shipped = config_file("rules", text)
            if shipped is None:
                names = ", ".join([*PRESETS, *(n for n in config_names("rules") if n not in PRESETS)])
                if not text.strip():
                    raise ValueError(f"rules {named} names nothing: give a YAML file's path "
                                     f"or one of {names}")
                if p.is_dir():
                    raise ValueError(f"rules {named} is a folder, not a rules file: give a "
                                     f"YAML file's path or one of {names}")
                if p.exists():   # a device, a pipe or a socket: reading it could block
                    raise ValueError(f"rules {named} is not a regular file: give a YAML "
                                     f"file's path or one of {names}")
                if p.is_symlink():   # before: "no rules file" for a link in a loop
                    raise ValueError(f"rules {named} is {no_file(p)}: give a YAML file's "
                                     f"path or one of {names}")
                raise ValueError(f"no rules file {named}: give a YAML path or one of {names}")
            p = shipped
        data = read_yaml(p, "rules file")
        if not isinstance(data, dict):
            raise ValueError(f"rules file {str(p)!r} must hold a mapping of option: value")
        try:
            return cls.from_dict(data)
        except ValueError as exc:
            raise ValueError(f"rules file {str(p)!r}: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        """Every field as a plain JSON/YAML-serialisable dict."""
        return dataclasses.asdict(self)

    def to_yaml(self) -> str:
        return yaml.dump(self.to_dict(), Dumper=YamlDumper, sort_keys=False)

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
    def deck_points(self) -> int:
        """The points of the whole deck (:data:`~ono_env.cards.CARD_POINTS`): the most a
        round can score."""
        return int((self.deck_counts.astype(np.int64) * C.CARD_POINTS).sum())

    @property
    def has_ono_call(self) -> bool:
        return self.ono_penalty != "none"

    # ---- validation -----------------------------------------------------------------
    def _validate(self) -> None:
        def bad(field: str, allowed: str) -> ValueError:
            v = getattr(self, field)   # an integer by shown(): repr() refuses 5,000 digits
            told = shown(v, 30) if is_int(v) else reprlib.repr(v)
            return ValueError(f"invalid rule set: {field}={told}; allowed: {allowed}")

        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in ("bool", bool):
                if not isinstance(v, (bool, np.bool_)):
                    raise bad(f.name, "true or false")
                object.__setattr__(self, f.name, bool(v))
            elif f.type in ("int", int):
                if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                    # with its range (before: "allowed: an integer" for num_players=2.0, and
                    # the range only once an integer was given)
                    low, high = INT_RANGES[f.name]
                    raise bad(f.name, f"an integer from {low} to {high:,}")
                object.__setattr__(self, f.name, int(v))   # NumPy integers become int
            elif f.name in CHOICES:
                if not isinstance(v, str) or v not in CHOICES[f.name]:
                    raise bad(f.name, " | ".join(CHOICES[f.name]))
                object.__setattr__(self, f.name, str.__str__(v))   # NumPy strings become str
        if not isinstance(self.name, str):
            raise bad("name", "a string")
        object.__setattr__(self, "name", str.__str__(self.name))
        check_text("rules option 'name'", self.name, MAX_NAME)
        if not self.name.strip() or self.name != self.name.strip():   # before: " " and "basic "
            raise bad("name", "a name that is not blank and has no space at either end")
        folded = unicodedata.normalize("NFKC", self.name).casefold()
        near = [p for p in globals().get("PRESETS", ())   # none while the presets are made
                if p != self.name and p.casefold() == folded]
        if near:   # before: "Basic" was taken for rules that need not be basic's, and the
            # full-width "ono" (U+FF4F U+FF4E U+FF4F) is not caught by casefold alone
            raise bad("name", f"a name that is not a preset's in other letter cases or forms "
                              f"({near[0]!r} is the preset's)")
        for name, (low, high) in INT_RANGES.items():   # the bounds, then what a rule narrows
            if not low <= getattr(self, name) <= high:
                raise bad(name, (f"0 (single round) or a score up to {high:,}"
                                 if name == "target_score" else f"{low} to {high}"))
        if self.ono_penalty == "draw" and self.ono_penalty_cards < 1:
            raise bad("ono_penalty_cards", f"1 to {MAX_PENALTY_CARDS} when ono_penalty is 'draw'")
        if self.false_catch_penalty > 0 and self.ono_penalty == "none":
            raise bad("false_catch_penalty", "0 when ono_penalty is 'none' (there is no catch)")
        # stacking first: under it no restriction makes a challenge allowed (before: a
        # stacking rule set asked for wild_draw_four_restricted, then refused it)
        if self.challenge and self.stacking:
            raise bad("challenge", "false when stacking is true (no source document defines "
                                   "a challenge of a stacked Wild Draw Four)")
        if self.challenge and not self.wild_draw_four_restricted:
            raise bad("challenge", "false unless wild_draw_four_restricted is true "
                                   "(a challenge tests that restriction)")
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
        """``(NUM_PARAMS,) int64``: this rule set encoded for the compiled engine (the
        fields of ``PARAM_FIELDS`` in order, string options as their ``option_code``, then
        the deck; VecGame fills in the game settings)."""
        p = np.zeros(NUM_PARAMS, dtype=np.int64)
        for k, name in enumerate(PARAM_FIELDS):
            value = getattr(self, name)
            p[k] = option_code(name, value) if name in CHOICES else int(value)
        p[P_DECK_SIZE] = self.deck_size
        p[P_DECK:P_DECK + C.NUM_CARD_TYPES] = self.deck_counts
        return p


def option_code(option: str, value: str) -> int:
    """The integer the engine reads for a string option's value (its index in CHOICES); one
    ``ValueError`` naming the option or value and what is allowed for any other (before:
    Python's ``KeyError`` or "tuple.index(x): x not in tuple")."""
    if option not in CHOICES:
        raise ValueError(f"option_code: option {shown(option, 40)}; allowed: "
                         f"{', '.join(CHOICES)}")
    if value not in CHOICES[option]:
        raise ValueError(f"option_code: {option}={shown(value, 40)}; allowed: "
                         f"{' | '.join(CHOICES[option])}")
    return CHOICES[option].index(value)


# The engine's parameter vector, one table: the rule fields in this order (P_<NAME> below
# indexes each), then the game settings VecGame fills in, then 56 entries of deck counts
# (copies of each card type), so the deck is defined by RuleSet.deck_counts alone.
PARAM_FIELDS: tuple[str, ...] = (
    "num_players", "hand_size", "dealer", "first_card_action", "first_card_wild",
    "first_card_wild_draw_four", "wild_draw_four_restricted", "challenge", "stacking",
    "reverse_skips_with_two_players", "voluntary_draw", "must_play_drawn",
    "draw_until_playable", "ono_penalty", "ono_penalty_cards", "false_catch_penalty",
    "wild_customizable", "scoring", "target_score",
)
GAME_SETTINGS: tuple[str, ...] = ("deck_size", "skip_forced", "max_decisions", "reward_points",
                                  "observation_version")
_INDEX = {name: k for k, name in enumerate(PARAM_FIELDS + GAME_SETTINGS)}
P_PLAYERS = _INDEX["num_players"]
P_HAND_SIZE = _INDEX["hand_size"]
P_DEALER = _INDEX["dealer"]
P_FIRST_ACTION = _INDEX["first_card_action"]
P_FIRST_WILD = _INDEX["first_card_wild"]
P_FIRST_WD4 = _INDEX["first_card_wild_draw_four"]
P_WD4_RESTRICTED = _INDEX["wild_draw_four_restricted"]
P_CHALLENGE = _INDEX["challenge"]
P_STACKING = _INDEX["stacking"]
P_REVERSE_SKIPS = _INDEX["reverse_skips_with_two_players"]
P_VOLUNTARY_DRAW = _INDEX["voluntary_draw"]
P_MUST_PLAY_DRAWN = _INDEX["must_play_drawn"]
P_DRAW_UNTIL_PLAYABLE = _INDEX["draw_until_playable"]
P_ONO_PENALTY = _INDEX["ono_penalty"]
P_ONO_PENALTY_CARDS = _INDEX["ono_penalty_cards"]
P_FALSE_CATCH = _INDEX["false_catch_penalty"]
P_WC_SWAP = _INDEX["wild_customizable"]      # option_code 1: swap_hands
P_SCORING = _INDEX["scoring"]
P_TARGET = _INDEX["target_score"]
P_DECK_SIZE = _INDEX["deck_size"]
P_SKIP_FORCED = _INDEX["skip_forced"]
P_MAX_DECISIONS = _INDEX["max_decisions"]
P_REWARD_POINTS = _INDEX["reward_points"]
P_OBS_VERSION = _INDEX["observation_version"]
P_DECK = len(_INDEX)
NUM_PARAMS = P_DECK + C.NUM_CARD_TYPES

FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(RuleSet))


def _check_option_names(overrides: Mapping[str, Any]) -> None:
    unknown = sorted(map(str, set(overrides) - set(FIELD_NAMES)))
    if unknown:   # each cut, and at most five named (before: every one, whole)
        raise ValueError(
            f"unknown rule option(s) {first_few([shown(k, 40) for k in unknown])}: "
            f"options are {', '.join(FIELD_NAMES)}"
        )


def _renamed_checked(base: str, rules: RuleSet) -> RuleSet:
    """``rules``, built from ``base``'s, unless they took another preset's name without being
    that preset's rules: a header would call ``ono``'s options "custom rules based on
    classic" (before, ``{"preset": "ono", "name": "classic"}`` was such a rule set)."""
    if rules.name != base and rules.name in PRESETS and not rules.is_preset():
        differ = PRESETS[rules.name].differing_fields(rules, skip=("name", "num_players"))
        raise ValueError(
            f"rules based on {shown(base, 40)} cannot take the name {rules.name!r}: that "
            f"preset's rules differ in {first_few(differ)}; "
            f"allowed: {rules.name!r} as the base (preset: {rules.name}, then the fields "
            f"that change it), the name {shown(base, 40)}, or a name that is not a preset's "
            f"({', '.join(PRESETS)})")
    return rules


def read_yaml(path: str | Path, what: str) -> Any:
    """The data of a YAML file, read with the safe loader (no code runs, no Python objects
    are built). Any problem (no such file, a folder, not UTF-8 text, bad YAML) is one
    ``ValueError`` naming the file."""
    import yaml

    p = check_input_file(path, what, MAX_YAML_BYTES)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"cannot read {what} {str(p)!r}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"cannot read {what} {str(p)!r}: it is a folder") from None
    except UnicodeDecodeError:
        raise ValueError(f"cannot read {what} {str(p)!r}: not UTF-8 text") from None
    except OSError as exc:
        raise ValueError(f"cannot read {what} {str(p)!r}: {exc.strerror or exc}") from None
    try:
        return yaml.load(text, Loader=YamlLoader)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"{what} {str(p)!r} is not valid YAML{at}: {problem}") from None


MAX_YAML_DIGITS = 100
"""The most digits an integer in a YAML file may have (a 64-bit seed has 20)."""


class YamlLoader(yaml.SafeLoader):
    """PyYAML's safe loader (plain data only), reading ``1e-4``, ``+.5`` and ``.5e3`` as
    numbers, as YAML 1.2 does, rather than as text; it refuses aliases (``*name``: a few
    lines of nested aliases stand for billions of values, which a check then walks), a key
    given twice in one mapping (PyYAML keeps the last silently) and the YAML 1.1 forms that
    read otherwise than they look (below), and lists or mappings nested more than
    ``MAX_DEPTH`` deep (the composer recurses: deeper, Python's recursion limit stops it with a
    bare ``RecursionError``), each as a ``yaml.YAMLError`` at its line."""

    MAX_DEPTH = 64
    _depth = 0

    def flatten_mapping(self, node: Any) -> None:
        """YAML 1.1's merge key (``<<: {...}``, read by PyYAML as the mapping's own keys; YAML
        1.2 has none) is refused at its line (before: merged silently)."""
        for key, _ in node.value:
            if key.tag == "tag:yaml.org,2002:merge":
                raise yaml.constructor.ConstructorError(
                    None, None, "'<<' is read by YAML 1.1 as a merge of another mapping into "
                    "this one; allowed: every key written out", key.start_mark)
        super().flatten_mapping(node)

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None, None, "an alias (*name); allowed: every value written out",
                self.peek_event().start_mark)
        if not self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent):
            return super().compose_node(parent, index)   # a value: no deeper
        if self._depth >= self.MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"lists or mappings nested more than {self.MAX_DEPTH} deep; allowed: "
                f"at most {self.MAX_DEPTH}", self.peek_event().start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    # YAML 1.1 (PyYAML) reads some plain words and numbers otherwise than YAML 1.2 and than
    # they look: yes/no/on/off as booleans, 010 as the octal 8, 0b10 as 2, 1:40 as 100 (base
    # 60). Each is refused at its line, naming what is allowed, rather than read silently.
    def construct_yaml_bool(self, node: Any) -> bool:
        text = self.construct_scalar(node)
        if text.lower() not in ("true", "false"):
            meant = self.bool_values.get(text.lower())   # None: '!!bool 1', no boolean at all
            said = (f"is read by YAML 1.1 as {str(meant).lower()}" if meant is not None
                    else "is not a boolean")
            raise yaml.constructor.ConstructorError(
                None, None, f"{text!r} {said}; allowed: true or false", node.start_mark)
        return text.lower() == "true"

    def construct_yaml_timestamp(self, node: Any) -> Any:
        """A value tagged ``!!timestamp`` is refused at its line; a plain ``2024-12-04`` is
        text, as in YAML 1.2 (its resolver is removed below), since no field takes a date."""
        raise yaml.constructor.ConstructorError(
            None, None, f"{self.construct_scalar(node)!r} is tagged as a date (!!timestamp); "
            f"allowed: text, numbers, true or false, lists and mappings", node.start_mark)

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        """PyYAML's, with a value its constructor cannot read (``!!int 3.0``, ``!!float abc``:
        Python's ValueError or TypeError, with no line) refused as a ``yaml.YAMLError`` at its
        line, naming the value and its tag."""
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, TypeError, AttributeError, OverflowError) as exc:
            tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
            raise yaml.constructor.ConstructorError(
                None, None, f"{shown(node.value, 40)} cannot be read as {tag} ({exc}); allowed: "
                f"a value of that kind, or no tag", node.start_mark) from None

    def _check_underscores(self, node: Any, what: str) -> None:
        """YAML 1.1 reads ``3_``, ``1__0`` and ``1_e5`` as numbers (PyYAML drops every
        ``_``), where YAML 1.2 reads text and Python refuses them: refuse an underscore that
        is not between two digits (hexadecimal digits after ``0x``), so that ``1_000`` stays
        a number. ``what``: the number it would be read as ("an integer", "a number")."""
        text = self.construct_scalar(node)
        digit = "[0-9a-fA-F]" if re.match(r"[-+]?0x", text) else "[0-9]"
        if re.search(f"(?<!{digit})_|_(?!{digit})", text):
            raise yaml.constructor.ConstructorError(
                None, None, f"{text!r} is read by YAML 1.1 as {what}, with an underscore that "
                f"is not between two digits; allowed: digits with single underscores between "
                f"them (1_000) or none", node.start_mark)

    def construct_yaml_int(self, node: Any) -> int:
        text = self.construct_scalar(node)
        if "_" in text:
            self._check_underscores(node, "an integer")
        digits = text.replace("_", "").lstrip("+-")
        if len(digits) > MAX_YAML_DIGITS:   # before: int()'s own ValueError (over 4,300
            # digits), with no file or line
            raise yaml.constructor.ConstructorError(
                None, None, f"an integer of {len(digits):,} digits; allowed: at most "
                f"{MAX_YAML_DIGITS}", node.start_mark)
        if ":" in digits or digits.startswith("0b") or re.fullmatch(r"0[0-9]+", digits):
            raise yaml.constructor.ConstructorError(
                None, None, f"{text!r} is read by YAML 1.1 as {super().construct_yaml_int(node)} "
                f"(octal, binary or base 60); allowed: a decimal number without leading zeros",
                node.start_mark)
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node: Any) -> float:
        text = self.construct_scalar(node)
        if "_" in text:
            self._check_underscores(node, "a number")
        if ":" in text:
            raise yaml.constructor.ConstructorError(
                None, None, f"{text!r} is read by YAML 1.1 as {super().construct_yaml_float(node)} "
                f"(base 60); allowed: a decimal number", node.start_mark)
        return super().construct_yaml_float(node)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        mapping = super().construct_mapping(node, deep=deep)
        if len(mapping) < len(node.value):
            seen: set[Any] = set()   # hashable: the mapping above was built from them
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {reprlib.repr(key)} is given twice; allowed: "
                        f"each key once", key_node.start_mark)
                seen.add(key)
        return mapping


YamlLoader.yaml_implicit_resolvers = {   # a plain 2024-12-04 is text, as in YAML 1.2
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
YamlLoader.add_constructor("tag:yaml.org,2002:bool", YamlLoader.construct_yaml_bool)
YamlLoader.add_constructor("tag:yaml.org,2002:timestamp", YamlLoader.construct_yaml_timestamp)
YamlLoader.add_constructor("tag:yaml.org,2002:int", YamlLoader.construct_yaml_int)
YamlLoader.add_constructor("tag:yaml.org,2002:float", YamlLoader.construct_yaml_float)
_YAML_FLOAT = re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
                |[-+]?\.[0-9][0-9_]*(?:[eE][-+]?[0-9]+)?
                |[-+]?\.(?:inf|Inf|INF)
                |\.(?:nan|NaN|NAN))$""", re.X)
"""The plain scalars that :class:`YamlLoader` reads as numbers, YAML 1.2's ``1e-4`` among them."""
YamlLoader.add_implicit_resolver("tag:yaml.org,2002:float", _YAML_FLOAT, list("-+0123456789."))


class YamlDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, resolving plain scalars as :class:`YamlLoader` reads them, so
    that a text it would read as a number (``1e5``, ``1_e5``, which PyYAML's YAML 1.1 reads
    as text and leaves plain) is written quoted: what the project writes (a run's
    ``config.yaml``, ``RuleSet.to_yaml``) it reads back as written."""


YamlDumper.add_implicit_resolver("tag:yaml.org,2002:float", _YAML_FLOAT, list("-+0123456789."))


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
"""The six presets by name: ``basic``, ``classic`` (the official rules, the default), ``ono``,
``stacking``, ``uno2018`` and ``wikipedia`` (docs/rules.md)."""


def given_player_count(rules: Any) -> tuple[Any, str] | None:
    """The player count that a rules file or a rules mapping sets itself, and what to call it
    in a message (``rules`` or ``rules file 'x.yaml'``); None for a preset, a RuleSet, a
    file or mapping that leaves the count to its preset, or a file that cannot be read
    (:func:`resolve_rules` names what is wrong with it). A file is found as
    :meth:`RuleSet.load` finds it (a path, or the name of a rules file shipped with ono_env).
    A caller that also takes a player count of its own checks the two against each other
    rather than drop one silently."""
    given = rules
    if isinstance(rules, (str, Path)):
        from ono_env.configs import config_file

        if str(rules) in PRESETS:
            return None
        try:
            path = Path(rules) if Path(rules).is_file() else config_file("rules", str(rules))
            if path is None:
                return None
            given = read_yaml(path, "rules file")
        except (OSError, ValueError):
            return None
    if isinstance(given, Mapping) and "num_players" in given:
        return given["num_players"], "rules" if given is rules else f"rules file {str(rules)!r}"
    return None


def check_rule_set(where: str, rules: Any) -> RuleSet:
    """``rules`` where it is a :class:`RuleSet`, for a function that takes resolved rules
    alone; one ``ValueError`` naming ``where`` otherwise (before: an ``AttributeError`` for a
    preset's name, or nothing said)."""
    if not isinstance(rules, RuleSet):
        raise ValueError(f"{where}: rules is a {type(rules).__name__}; allowed: a RuleSet "
                         f"(resolve_rules(name) makes one from a preset's name)")
    return rules


def resolve_rules(rules: RuleSet | str | Path | Mapping[str, Any] | None = None,
                  **overrides: Any) -> RuleSet:
    """A RuleSet from a RuleSet, a preset name, a YAML path or a mapping (None: the ``classic``
    preset), with overrides."""
    if rules is None:
        rs = RuleSet.preset("classic")
    elif isinstance(rules, RuleSet):
        rs = rules
    elif isinstance(rules, Mapping):   # overrides join the mapping: validated once, together
        _check_option_names(overrides)   # before: preset= replaced the mapping's own preset
        return RuleSet.from_dict({**rules, **overrides})
    elif isinstance(rules, (str, Path)):
        rs = RuleSet.load(rules)
    else:
        raise ValueError(
            f"rules must be a RuleSet, a preset name ({', '.join(PRESETS)}), a YAML path or "
            f"a mapping; got {type(rules).__name__}"
        )
    if not overrides:
        return rs
    if not isinstance(rules, (str, Path)) or (isinstance(rules, str) and rules in PRESETS):
        return rs.replace(**overrides)   # rules the caller named, and the message names
    _check_option_names(overrides)   # an unknown name is refused as the mapping's are
    try:
        return rs.replace(**overrides)
    except ValueError as exc:   # a file's rules: before, neither it nor the overrides named
        given = ", ".join(f"{k}={shown(v, 40)}" for k, v in overrides.items())
        raise ValueError(f"rules file {str(rules)!r} with {given}: {exc}") from None
