"""Positions: the one schema of ``VecGame.to_dict(i)``, ``VecGame.set_position(i, d)`` and
``VecGame.from_dict(d)``, and its checks (docs/positions.md documents both, key by key).

A position is a dict with exactly the keys of ``POSITION_KEYS``. :func:`read_position`
checks one completely before anything is written: first every key on its own (its type and
range, strictly: a bool is not an int, ``"false"`` is not a bool, ``5`` is not a card),
then the invariants that every position reached by play keeps (the deck, and the phase
agreeing with the other keys). A refusal is one ``ValueError`` that names the key or keys
involved and what is allowed. :func:`position_dict` and :func:`write_position` move a game
out of and into the state arrays.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from ono_env import cards as C
from ono_env._engine import G_NAMES, S_LACKS, held_of
from ono_env.checks import JSONError, first_few, is_int, is_u64_text, parse_json, shown
from ono_env.observation import PHASE_NAMES
from ono_env.rules import RuleSet

POSITION_VERSION = 1
POSITION_KEYS: tuple[str, ...] = (
    "version", "rules", "hands", "stock", "discard", "color", "current_player", "direction",
    "phase", "pending_draw", "drawn_card", "called", "exposed", "previous_player",
    "turn_fresh", "wild_draw_four_bluff", "color_then_play", "scores", "dealer", "round",
    "decisions", "winner", "terminated", "truncated", "rng",
)
"""Every key of a position, in the order ``to_dict`` writes them; all are required."""

MAX_COUNT = 10_000_000
"""The largest ``round`` and ``decisions``: the largest ``max_decisions`` (a game goes on
only while its decisions are below its max_decisions, and the counters are 32-bit)."""
MAX_PENDING_DRAW = 4 * (MAX_COUNT + 1)
"""The largest ``pending_draw``: it is at most 4 x (decisions + 1), as each decision adds
at most 4 to it (a stack can outgrow the deck's draw cards when a catch reshuffles played
ones back into hands)."""

_CARD_ALLOWED = ("a card name: a colour R Y G B followed by 0-9, S, R or +2 ('R5', 'GS', "
                 "'B+2'), or a wild W, W+4, WS, WC")
_DRAW_VALUE = {C.WILD_DRAW_FOUR: 4, **{col * C.NUM_RANKS + C.RANK_DRAW_TWO: 2
                                       for col in range(C.NUM_COLORS)}}
_WD4, _WS, _WC, _W = C.WILD_DRAW_FOUR, C.WILD_SHUFFLE_HANDS, C.WILD_CUSTOMIZABLE, C.WILD
_NAMING = ("first_player_names", "dealer_names")  # first_card_wild values that name a colour


# ---- messages ---------------------------------------------------------------------------
def _typed(value: Any) -> str:
    return f"{shown(value, 80)} ({type(value).__name__})"


def refusal(keys: str | tuple[str, ...], detail: str, allowed: str) -> ValueError:
    """The one error of a refused position: ``position key 'k': <what it is>; allowed:
    <what is allowed>`` (``position keys 'a', 'b': ...`` when an invariant ties several)."""
    keys = (keys,) if isinstance(keys, str) else keys
    names = ", ".join(repr(k) for k in keys)
    head = f"position key {names}" if len(keys) == 1 else f"position keys {names}"
    return ValueError(f"{head}: {detail}; allowed: {allowed}")


# ---- reading ----------------------------------------------------------------------------
MAX_POSITION_TEXT = 1 << 20
"""The longest position JSON :meth:`VecGame.from_json <ono_env.game.VecGame.from_json>` reads
(characters of a str, bytes else): the largest table's positions (10 players, 40 of each
wild) write under 3 KB, indented a few times that; longer text is refused before it is
parsed (before: 22 MB took a second and 330 MB before the deck check refused it)."""


def load_json(text: Any, what: str = "position JSON", most: int | None = None) -> Any:
    """The data of a JSON text (a position's, unless ``what`` names another), read by
    :func:`~ono_env.checks.parse_json`: malformed JSON, a key given twice, nesting too deep or
    bytes that are not UTF-8 are one ``ValueError`` that says what (``position JSON is
    malformed: Expecting value at line 1, column 1``), never a ``JSONDecodeError``. A leading
    byte order mark, as some editors write, is skipped. NaN is read as Python reads it, for
    the fields' own checks to name. Text longer than ``most`` (characters of a str, bytes
    else) is refused before it is read."""
    if not isinstance(text, (str, bytes, bytearray)):
        raise ValueError(f"{what} must be text; got {type(text).__name__}; allowed: a str, "
                         f"bytes or bytearray of JSON")
    if most is not None and len(text) > most:
        unit = "characters" if isinstance(text, str) else "bytes"
        raise ValueError(f"{what} is {len(text):,} {unit} long; allowed: at most {most:,} "
                         f"{unit}")
    try:
        return parse_json(text, finite=False, bom=True)
    except JSONError as exc:
        raise ValueError(f"{what} is malformed: {exc}") from None


def check_keys(d: Any) -> Mapping[str, Any]:
    """``d`` when it is a mapping with exactly the keys of a position."""
    allowed = "a mapping with exactly the keys " + ", ".join(POSITION_KEYS)
    if not isinstance(d, Mapping):
        raise ValueError(f"a position must be a mapping (dict); got {type(d).__name__}; "
                         f"allowed: {allowed}")
    unknown = [k for k in d if k not in POSITION_KEYS]
    missing = [k for k in POSITION_KEYS if k not in d]
    if unknown or missing:   # at most five of each (before: every unknown key, megabytes)
        parts = [first_few([f"{shown(k, 60)} (unknown)" for k in unknown]),
                 first_few([f"{k!r} (missing)" for k in missing])]
        which = "key" if len(unknown) + len(missing) == 1 else "keys"
        raise ValueError(f"position {which} {', '.join(p for p in parts if p)}; "
                         f"allowed: {allowed}")
    return d


def read_rules(value: Any, whole: bool = False, key: str = "position key 'rules'") -> RuleSet:
    """The rule set of a position's ``rules`` value (``RuleSet.to_dict()``, or anything
    :meth:`~ono_env.rules.RuleSet.from_dict` reads); ``whole``: every option written out
    (:meth:`~ono_env.rules.RuleSet.from_written`, a replay's). ``key``: what a refusal names."""
    try:
        return RuleSet.from_written(value) if whole else RuleSet.from_dict(value)
    except (ValueError, TypeError) as exc:
        if "; allowed: " in str(exc):  # the rule set's own message says what is allowed
            raise ValueError(f"{key}: {exc}") from None
        raise ValueError(f"{key}: {exc}; allowed: a rules mapping, as RuleSet.to_dict() "
                         f"writes it") from None


# ---- the keys one by one: a table of what each holds ----------------------------------------
FIELDS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    # key, reader (a method of _Fields), the reader's arguments; read in this order
    ("hands", "hands", {}),
    ("stock", "cards", {}),
    ("discard", "discard", {}),
    ("color", "color", {}),
    ("current_player", "seat", {}),
    ("direction", "direction", {}),
    ("phase", "phase", {}),
    ("pending_draw", "pending_draw", {}),
    ("drawn_card", "card_or_null", {}),
    ("called", "seat_bools", {}),
    ("exposed", "seat", {"allow_none": True}),
    ("previous_player", "seat", {"allow_none": True}),
    ("turn_fresh", "boolean", {}),
    ("wild_draw_four_bluff", "boolean", {}),
    ("color_then_play", "boolean", {}),
    ("scores", "scores", {}),
    ("dealer", "seat", {}),
    ("round", "integer", {"high": MAX_COUNT}),
    ("decisions", "integer", {"high": MAX_COUNT}),
    ("winner", "seat", {"allow_none": True}),
    ("terminated", "boolean", {}),
    ("truncated", "boolean", {}),
    ("rng", "rng", {}),
)
"""Every key of a position but ``version`` and ``rules`` (read first, by
:func:`read_position` itself): the reader that checks its value on its own. What the keys
must satisfy together (the deck, a reachable position) :func:`read_position` checks after."""


class _Fields:
    """The readers of :data:`FIELDS`: each returns the value of one key of position ``d``
    for a game of ``rules`` (card ids, seats as ints, -1 for null), or raises its one
    ``ValueError`` naming the key and what it allows."""

    def __init__(self, d: Mapping[str, Any], rules: RuleSet) -> None:
        self.d, self.rules, self.P = d, rules, rules.num_players
        self.seats = f"a seat 0..{self.P - 1} (num_players={self.P} in 'rules')"

    def read_all(self) -> dict[str, Any]:
        return {key: getattr(self, reader)(key, **kw) for key, reader, kw in FIELDS}

    def cards(self, key: str, value: Any = None, label: str | None = None) -> list[int]:
        value = self.d[key] if value is None else value
        label = label or key
        if not isinstance(value, (list, tuple)):
            raise refusal(key, f"{label}={_typed(value)}",
                          f"a list of card names ({_CARD_ALLOWED})")
        ids = []
        for k, c in enumerate(value):
            if not isinstance(c, str) or c not in C.CARD_IDS:
                raise refusal(key, f"{label}[{k}]={_typed(c)}", _CARD_ALLOWED)
            ids.append(C.CARD_IDS[c])
        return ids

    def per_seat(self, key: str, what: str) -> list[Any]:
        v = self.d[key]
        if not isinstance(v, (list, tuple)) or len(v) != self.P:
            raise refusal(key, _typed(v), f"a list of {self.P} {what} (num_players={self.P} "
                                          f"in 'rules')")
        return list(v)

    def hands(self, key: str) -> np.ndarray:
        hand_counts = np.zeros((self.P, C.NUM_CARD_TYPES), np.int64)
        for q, h in enumerate(self.per_seat(key, "lists of card names, one hand per seat")):
            for c in self.cards(key, h, f"{key}[{q}]"):
                hand_counts[q, c] += 1
        return hand_counts

    def discard(self, key: str) -> list[int]:
        ids = self.cards(key)
        if not ids:
            raise refusal(key, "[] (empty)", "a list of at least one card name: the discard "
                                             "pile always has a top card")
        return ids

    def color(self, key: str) -> int:
        v = self.d[key]
        if v is not None and (not isinstance(v, str) or v not in C.COLORS):
            raise refusal(key, _typed(v), "'R', 'Y', 'G', 'B' or null")
        return -1 if v is None else C.COLORS.index(v)

    def seat(self, key: str, allow_none: bool = False) -> int:
        v = self.d[key]
        if v is None and allow_none:
            return -1
        if not is_int(v) or not 0 <= v < self.P:
            raise refusal(key, _typed(v), self.seats + (" or null" if allow_none else ""))
        return int(v)

    def direction(self, key: str) -> int:
        v = self.d[key]
        if not is_int(v) or v not in (1, -1):
            raise refusal(key, _typed(v), "1 (to the left) or -1 (to the right)")
        return int(v)

    def phase(self, key: str) -> str:
        v = self.d[key]
        if not isinstance(v, str) or v not in PHASE_NAMES:
            raise refusal(key, _typed(v), ", ".join(map(repr, PHASE_NAMES)))
        return v

    def integer(self, key: str, low: int = 0, high: int = MAX_COUNT,
                allowed: str | None = None) -> int:
        v = self.d[key]
        allowed = allowed or f"an integer from {low:,} to {high:,}"
        if not is_int(v) or not low <= v <= high:
            raise refusal(key, _typed(v), allowed)
        return int(v)

    def pending_draw(self, key: str) -> int:
        allowed = f"an even integer from 0 to {MAX_PENDING_DRAW:,}"
        pending = self.integer(key, 0, MAX_PENDING_DRAW, allowed)
        if pending % 2:
            raise refusal(key, _typed(pending), allowed + " (draws come in 2s and 4s)")
        return pending

    def card_or_null(self, key: str) -> int:
        v = self.d[key]
        if v is not None and (not isinstance(v, str) or v not in C.CARD_IDS):
            raise refusal(key, _typed(v), _CARD_ALLOWED + ", or null")
        return -1 if v is None else C.CARD_IDS[v]

    def boolean(self, key: str) -> bool:
        v = self.d[key]
        if not isinstance(v, (bool, np.bool_)):
            raise refusal(key, _typed(v), "true or false")
        return bool(v)

    def seat_bools(self, key: str) -> list[bool]:
        values = self.per_seat(key, "bools")
        for q, v in enumerate(values):
            if not isinstance(v, (bool, np.bool_)):
                raise refusal(key, f"{key}[{q}]={_typed(v)}", f"a list of {self.P} bools")
        return [bool(v) for v in values]

    def scores(self, key: str) -> list[int]:
        max_score = most_points(self.rules)
        values = self.per_seat(key, "integers")
        for q, v in enumerate(values):
            if not is_int(v) or not 0 <= v <= max_score:
                raise refusal(key, f"{shown(values, 80)}: {key}[{q}]={_typed(v)}",
                              f"a list of {self.P} integers from 0 to {max_score:,} "
                              f"(target_score in 'rules' plus the points of the whole deck)")
        return [int(v) for v in values]

    def rng(self, key: str) -> str:
        v = self.d[key]
        if not is_u64_text(v):
            raise refusal(key, _typed(v), "the generator state as a decimal string "
                                          "'0' to '18446744073709551615' (no sign or "
                                          "leading zeros), as to_dict writes it")
        return v


def most_points(rules: RuleSet) -> int:
    """The largest score a seat may hold under ``rules``: ``target_score`` plus the points of
    the whole deck (the round that crosses the target scores at most every card)."""
    return rules.target_score + rules.deck_points


def read_position(d: Any, rules: RuleSet) -> dict[str, Any]:
    """Check position ``d`` for a game of ``rules`` and return its state values (one game's
    value of every ``State`` field). Raises one ``ValueError`` naming the key(s)."""
    d = check_keys(d)
    P = rules.num_players

    # ---- every key on its own -----------------------------------------------------------
    version = d["version"]
    if not is_int(version) or version != POSITION_VERSION:
        raise refusal("version", _typed(version), f"{POSITION_VERSION}")
    other = read_rules(d["rules"])
    if other != rules:
        diff = [f"{k}={getattr(other, k)!r} (this game: {getattr(rules, k)!r})"
                for k in other.differing_fields(rules)]
        raise refusal("rules", "for other rules than this game's: " + ", ".join(diff),
                      "this game's rules")
    v = _Fields(d, rules).read_all()
    hand_counts, stock, discard = v["hands"], v["stock"], v["discard"]
    color, color_id = d["color"], v["color"]
    current, direction, phase = v["current_player"], v["direction"], v["phase"]
    pending, drawn_name, drawn = v["pending_draw"], d["drawn_card"], v["drawn_card"]
    called, exposed, previous = v["called"], v["exposed"], v["previous_player"]
    fresh, bluff, then_play = v["turn_fresh"], v["wild_draw_four_bluff"], v["color_then_play"]
    scores, dealer, rounds, decisions = v["scores"], v["dealer"], v["round"], v["decisions"]
    winner, terminated, truncated, rng = v["winner"], v["terminated"], v["truncated"], v["rng"]
    deck = rules.deck_counts.astype(np.int64)

    # ---- the deck -----------------------------------------------------------------------
    total = hand_counts.sum(0) + np.bincount(stock + discard, minlength=C.NUM_CARD_TYPES)
    if not np.array_equal(total, deck):
        diff = [f"{C.CARD_NAMES[c]} {int(total[c])} (the deck has {int(deck[c])})"
                for c in np.flatnonzero(total != deck)]
        raise refusal(("hands", "stock", "discard", "rules"),
                      "together they hold " + "; ".join(diff),
                      f"exactly the deck of the 'rules' ({rules.deck_size} cards)")

    # ---- invariants of a reachable position ---------------------------------------------
    def need(ok: Any, keys: tuple[str, ...], detail: str, allowed: str) -> None:
        if not ok:
            raise refusal(keys, detail, allowed)

    top = discard[-1]
    top_name = C.CARD_NAMES[top]
    hand_len = hand_counts.sum(1)
    swap_wc = rules.wild_customizable == "swap_hands"
    over = terminated or phase == "round_end"  # the round was won (the rules: last card played)
    end_keys = ("terminated", "phase")

    need(not (terminated and truncated), ("terminated", "truncated"),
         "both true", "at most one of them true (an episode ends one way)")
    need(phase != "round_end" or rules.target_score > 0, ("phase", "rules"),
         f"phase='round_end' with target_score={rules.target_score} in 'rules'",
         "'round_end' only in a match (target_score > 0)")
    need(phase != "round_end" or truncated, ("phase", "terminated", "truncated"),
         f"phase='round_end' with terminated={terminated}, truncated={truncated}",
         "'round_end' only in a truncated game (a match that is not over deals the next "
         "round at once)")
    need(not truncated or decisions >= 1, ("truncated", "decisions"),
         "truncated=True at decisions=0", "a game cut at its max_decisions (at least 1) has "
         "made at least one decision")
    finished = terminated or truncated
    need(finished or decisions < MAX_COUNT, ("decisions", "terminated", "truncated"),
         f"decisions={decisions} in a game not finished",
         f"below {MAX_COUNT:,} until the game is finished (the largest max_decisions)")
    need(rounds <= decisions, ("round", "decisions"), f"round={rounds}, decisions={decisions}",
         "round at most decisions (each round ends with a decision)")
    need(pending <= 4 * (decisions + 1), ("pending_draw", "decisions"),
         f"pending_draw={pending}, decisions={decisions}",
         "pending_draw at most 4 x (decisions + 1) (each decision adds at most 4)")
    need((winner < 0) == (rounds == 0), ("winner", "round"),
         f"winner={d['winner']!r} with round={rounds}",
         "winner null exactly when no round is finished (round 0)")
    # the current colour follows the top card
    if top < 52:
        need(color_id == C.CARD_COLOR[top], ("color", "discard"),
             f"color={color!r} on the top card {top_name!r}",
             f"the colour of a coloured top card ({C.COLORS[C.CARD_COLOR[top]]!r})")
    need(drawn < 0 or phase == "drawn", ("drawn_card", "phase"),
         f"drawn_card={drawn_name!r} in phase {phase!r}",
         "a drawn card only in phase 'drawn'")
    need(pending == 0 or phase == "pending", ("pending_draw", "phase"),
         f"pending_draw={pending} in phase {phase!r}",
         "a positive pending_draw only in phase 'pending'")
    need(not bluff or (phase == "pending" and not over and top == _WD4 and rules.challenge),
         ("wild_draw_four_bluff", "phase", "discard", "terminated", "rules"),
         f"wild_draw_four_bluff=True in phase {phase!r} on the top card {top_name!r} "
         f"(challenge={rules.challenge} in 'rules', terminated={terminated})",
         "true only while a Wild Draw Four on top waits to be challenged or accepted "
         "(phase 'pending', challenge on)")
    need(not then_play or (phase == "color" and rules.first_card_wild == "first_player_names"),
         ("color_then_play", "phase", "rules"),
         f"color_then_play=True in phase {phase!r} (first_card_wild="
         f"{rules.first_card_wild!r} in 'rules')",
         "true only in phase 'color' when the first player names a first-card wild "
         "(first_card_wild 'first_player_names')")
    need(not fresh or (not over and phase in ("play", "pending", "color")),
         ("turn_fresh", "phase", "terminated"),
         f"turn_fresh=True in phase {phase!r} (terminated={terminated})",
         "true only in phases 'play', 'pending' or 'color' of a round not over (a turn "
         "begins in one of them)")
    for q in range(P):
        need(not called[q] or hand_len[q] <= 2, ("called", "hands"),
             f"called[{q}]=True with {int(hand_len[q])} cards in hands[{q}]",
             "a call only by a seat holding at most 2 cards (a call covers the two-card hand "
             "it was made with and ends when the hand grows)")
    need(not any(called) or rules.ono_penalty != "none", ("called", "rules"),
         f"called={called} with ono_penalty='none' in 'rules'", "no call without a call rule")
    if exposed >= 0:
        e = exposed
        need(rules.ono_penalty != "none", ("exposed", "rules"),
             f"exposed={e} with ono_penalty='none' in 'rules'", "null without a call rule")
        need(not over, ("exposed",) + end_keys,
             f"exposed={e} after the round was won", "null once the round is over")
        need(not called[e], ("exposed", "called"), f"exposed={e} with called[{e}]=True",
             "a seat that has not called")
        own = e == current and phase in ("color", "target") and not fresh
        window = e == previous and e != current and fresh
        need(own or window,
             ("exposed", "current_player", "previous_player", "turn_fresh", "phase"),
             f"exposed={e}, current_player={current}, previous_player={d['previous_player']!r},"
             f" turn_fresh={fresh}, phase={phase!r}",
             "the acting seat still naming a colour or target after its play (not a fresh "
             "turn), or the "
             "previous player at the fresh start of another seat's turn (the catch window)")
    # scores and the end of the game
    target = rules.target_score
    need(rules.scoring != "none" or not any(scores), ("scores", "rules"),
         f"{scores} with scoring='none' in 'rules'", "all 0 without scoring")
    if target > 0 and not terminated:
        need(max(scores) < target, ("scores", "terminated", "rules"),
             f"{scores} with target_score={target} in 'rules' and terminated=False",
             f"every score below {target} while the match goes on")

    if over:
        # the round was won: the winner played the last card and nothing is pending
        need(winner >= 0, ("winner",) + end_keys, "null after the round was won",
             "the seat that went out")
        empty = [q for q in range(P) if hand_len[q] == 0]
        need(empty == [winner], ("hands", "winner") + end_keys,
             f"empty hands {empty} with winner={winner}",
             "exactly the winner's hand empty once the round is won")
        need(current == winner, ("current_player", "winner") + end_keys,
             f"current_player={current}, winner={winner}",
             "the winner, who played the last card")
        need(phase in ("play", "pending", "round_end"), end_keys,
             f"phase={phase!r} with terminated={terminated}",
             "'play' or 'pending' (a last card is played in them) or 'round_end'")
        need(pending == 0, ("pending_draw",) + end_keys, f"pending_draw={pending}",
             "0 once the round is won (a last draw card is drawn at once)")
        # a last Wild Shuffle Hands / swapping Wild Customizable names no colour
        unnamed = top == _WS or (top == _WC and swap_wc)
        need((color_id < 0) == unnamed, ("color", "discard", "rules") + end_keys,
             f"color={color!r} on the last card {top_name!r}",
             "null exactly when the last card is a Wild Shuffle Hands or a swapping Wild "
             "Customizable (no colour is named after a last card)")
        if terminated and target == 0:
            need(rounds == 1, ("round", "terminated", "rules"),
                 f"round={rounds} in a finished single round", "1")
            pts = (hand_counts * C.CARD_POINTS).sum(1)
            if rules.scoring == "winner":
                expect = [int(pts.sum()) if q == winner else 0 for q in range(P)]
            elif rules.scoring == "penalty":
                expect = [0 if q == winner else int(pts[q]) for q in range(P)]
            else:
                expect = [0] * P
            need(scores == expect, ("scores", "hands", "winner", "terminated", "rules"),
                 f"{scores} after a single round scored {rules.scoring!r}",
                 f"{expect}: the points of the cards left in the hands")
        elif terminated:
            if rules.scoring == "winner":
                need(scores[winner] >= target, ("scores", "winner", "terminated", "rules"),
                     f"{scores} with winner={winner}, target_score={target}",
                     f"the winner's score at least {target} when the match is over")
                # only the last round's winner scored in it, and every other score was
                # below the target before it (before: [1700, 900] loaded as a match won by
                # seat 0, which play ends at seat 1's 500)
                need(all(scores[q] < target for q in range(P) if q != winner),
                     ("scores", "winner", "terminated", "rules"),
                     f"{scores} with winner={winner}, target_score={target}",
                     f"every other seat's score below {target} (the match ends at the first "
                     f"score to reach it, and only a round's winner scores)")
            else:
                need(max(scores) >= target, ("scores", "terminated", "rules"),
                     f"{scores} with target_score={target}",
                     f"a score at least {target} when the match is over")
    else:
        # a round in progress (or truncated in progress)
        empty = [q for q in range(P) if hand_len[q] == 0]
        need(not empty, ("hands",) + end_keys,
             f"empty hands {empty} in a round not over",
             "no empty hand until a player goes out")
        if target == 0:
            need(rounds == 0, ("round", "terminated", "rules"),
                 f"round={rounds} in a single round (target_score 0 in 'rules') not over", "0")
            need(not any(scores), ("scores", "terminated", "rules"),
                 f"{scores} in a single round not over", "all 0 until the round is scored")
        if phase in ("color", "target"):
            need(color_id < 0, ("color", "phase"), f"color={color!r} in phase {phase!r}",
                 f"null in phase {phase!r} (the colour is still to be named)")
        else:
            need(color_id >= 0, ("color", "phase"), f"color=None in phase {phase!r}",
                 "a colour R, Y, G, B (null only in phases 'color' and 'target')")
        if phase == "pending":
            value = _DRAW_VALUE.get(top, 0)
            need(value > 0, ("phase", "discard"), f"phase 'pending' on the top card {top_name!r}",
                 "a Draw Two or Wild Draw Four on top while a draw is pending")
            if rules.stacking:
                need(pending >= value, ("pending_draw", "discard", "phase", "rules"),
                     f"pending_draw={pending} on the top card {top_name!r}",
                     f"an even number at least {value} (the top card's draw, plus stacked ones)")
            else:
                need(pending == value, ("pending_draw", "discard", "phase", "rules"),
                     f"pending_draw={pending} on the top card {top_name!r} (stacking=False "
                     f"in 'rules')", f"{value}, the top card's draw")
            need(top != _WD4 or previous >= 0, ("previous_player", "phase", "discard"),
                 "previous_player=None with a Wild Draw Four pending",
                 "the seat that played the Wild Draw Four (the one a challenge tests)")
            # the draw falls on the seat after the one that played it (before: any seat
            # loaded, and a challenge then tested the challenger itself)
            need(previous < 0 or previous == (current - direction) % P,
                 ("previous_player", "current_player", "direction", "phase"),
                 f"previous_player={previous}, current_player={current}, direction="
                 f"{direction} in phase 'pending'",
                 f"the seat before current_player in the direction of play "
                 f"({(current - direction) % P}: it played the draw card on top), or null")
            # the bluff flag as the engine set it, where the position says which colour was in
            # play: a coloured card under the Wild Draw Four, and the offender's hand as it
            # was (a fresh turn: no catch has changed it yet). Before: a flag flipped by
            # hand loaded, and a challenge then gave the wrong verdict.
            if (top == _WD4 and rules.challenge and fresh and previous >= 0
                    and len(discard) >= 2 and discard[-2] < 52):
                col = int(C.CARD_COLOR[discard[-2]])
                held = bool(hand_counts[previous, :52][C.CARD_COLOR[:52] == col].any())
                need(bool(bluff) == held,
                     ("wild_draw_four_bluff", "hands", "previous_player", "discard"),
                     f"wild_draw_four_bluff={bool(bluff)} while hands[{previous}] "
                     f"(previous_player) holds {'a' if held else 'no'} "
                     f"{C.COLOR_WORDS[col]} card, the colour of {C.CARD_NAMES[discard[-2]]!r} "
                     f"under the Wild Draw Four",
                     f"{held}: the Wild Draw Four is a bluff exactly when its player held a "
                     f"card of the colour in play")
        elif phase == "drawn":
            need(drawn >= 0, ("drawn_card", "phase"), "None in phase 'drawn'",
                 "the card just drawn (in the acting player's hand)")
            need(hand_counts[current, drawn] > 0, ("drawn_card", "hands", "current_player"),
                 f"drawn_card={drawn_name!r} is not in hands[{current}] (current_player)",
                 "a card of the acting player's hand")
            need(hand_len[current] >= 2, ("hands", "current_player", "phase"),
                 f"{int(hand_len[current])} card in hands[{current}] in phase 'drawn'",
                 "at least 2 cards in the acting hand after a draw (a hand is never empty "
                 "before one)")
        elif phase == "color":
            first_card = top in (_W, _WS, _WC) and rules.first_card_wild in _NAMING
            played = top == _WS or (top == _WC and swap_wc)
            need(first_card or played, ("phase", "discard", "rules"),
                 f"phase 'color' on the top card {top_name!r} (first_card_wild="
                 f"{rules.first_card_wild!r}, wild_customizable={rules.wild_customizable!r} "
                 f"in 'rules')",
                 "phase 'color' on a first-card wild whose colour a player names, or after a "
                 "Wild Shuffle Hands or a swapping Wild Customizable was played")
            # a fresh turn in phase 'color' is the first turn: a first-card wild
            need(not fresh or (first_card and previous < 0),
                 ("turn_fresh", "previous_player", "phase", "discard", "rules"),
                 f"turn_fresh=True, previous_player={d['previous_player']!r} in phase 'color' "
                 f"on {top_name!r}",
                 "a fresh turn in phase 'color' only for a first-card wild (no previous player)")
            need(fresh or played, ("turn_fresh", "phase", "discard", "rules"),
                 f"turn_fresh=False in phase 'color' on {top_name!r}",
                 "a first-card wild is named at the fresh start of the first turn")
            first_player = rules.first_card_wild == "first_player_names"
            need(then_play == (fresh and first_player),
                 ("color_then_play", "turn_fresh", "phase", "rules"),
                 f"color_then_play={then_play}, turn_fresh={fresh}",
                 "true exactly for a first-card wild named by the first player (turn_fresh, "
                 "first_card_wild 'first_player_names')")
        elif phase == "target":
            need(top == _WC and swap_wc, ("phase", "discard", "rules"),
                 f"phase 'target' on the top card {top_name!r} (wild_customizable="
                 f"{rules.wild_customizable!r} in 'rules')",
                 "phase 'target' only after a Wild Customizable played under "
                 "wild_customizable 'swap_hands'")

    # last, so that the more specific refusals above speak first: a finished round too
    need(phase != "pending" or top == _WD4 or (top < 52 and C.CARD_RANK[top] == 12),
         ("phase", "discard"), f"phase 'pending' on the top card {top_name!r}",
         "phase 'pending' only on a draw card (a Draw Two or a Wild Draw Four) on top")
    return {
        "hands": hand_counts,
        "hand_len": hand_len,
        "stock": stock,
        "stock_len": len(stock),
        "discard": discard,
        "discard_len": len(discard),
        "color": color_id,
        "current": current,
        "direction": int(direction),
        "phase": PHASE_NAMES.index(phase),
        "pending": pending,
        "drawn": drawn,
        "called": called,
        "exposed": exposed,
        "previous": previous,
        "fresh": fresh,
        "bluff": bluff,
        "color_then_play": then_play,
        "scores": scores,
        "dealer": dealer,
        "round": rounds,
        "decisions": decisions,
        "winner": winner,
        "terminated": terminated,
        "truncated": truncated,
        "rng": np.uint64(int(rng)),
    }


@functools.lru_cache(maxsize=64)
def _rules_dict(rules: RuleSet) -> dict[str, Any]:
    return rules.to_dict()  # every value a str, int or bool: a shallow copy is a copy


_CARD_TYPES = np.arange(C.NUM_CARD_TYPES)


# ---- the state arrays -------------------------------------------------------------------
def write_position(state: Any, i: int, values: Mapping[str, Any]) -> None:
    """Write ``read_position``'s values into game ``i`` of ``state`` (cannot fail), and the
    hands' card-type sets (``held``) the engine keeps beside the counts. A position holds
    no history, so every seat's record of the game so far starts empty, as in a new game:
    what forced draws revealed (``lacks``, ``known``), the last plays, named colours and
    draws (``last_play``, ``previous_play``, ``named_color``, ``drew``) and the cards each
    seat knows another holds (the columns from ``S_SEEN`` on), whatever game ``i`` held
    before."""
    for name, value in values.items():
        arr = getattr(state, name)
        if name in ("stock", "discard"):
            arr[i] = 0
            arr[i, : len(value)] = value
        else:
            arr[i] = value
    state.held[i] = held_of(state.hands[i])
    state.pl[i, :, S_LACKS:] = 0   # every column after hand_len, called and scores


def position_dict(state: Any, i: int, rules: RuleSet) -> dict[str, Any]:
    """Game ``i`` of ``state`` as a position dict (every key of ``POSITION_KEYS``)."""
    names = C.CARD_NAMES
    f = dict(zip(G_NAMES, state.g[i].tolist()))
    hands = [[names[c] for c in np.repeat(_CARD_TYPES, row).tolist()] for row in state.hands[i]]

    def seat(v: int) -> int | None:
        return None if v < 0 else v

    return {
        "version": POSITION_VERSION,
        "rules": dict(_rules_dict(rules)),
        "hands": hands,
        "stock": [names[c] for c in state.stock[i, : f["stock_len"]].tolist()],
        "discard": [names[c] for c in state.discard[i, : f["discard_len"]].tolist()],
        "color": None if f["color"] < 0 else C.COLORS[f["color"]],
        "current_player": f["current"],
        "direction": f["direction"],
        "phase": PHASE_NAMES[f["phase"]],
        "pending_draw": f["pending"],
        "drawn_card": None if f["drawn"] < 0 else names[f["drawn"]],
        "called": [bool(x) for x in state.called[i].tolist()],
        "exposed": seat(f["exposed"]),
        "previous_player": seat(f["previous"]),
        "turn_fresh": bool(f["fresh"]),
        "wild_draw_four_bluff": bool(f["bluff"]),
        "color_then_play": bool(f["color_then_play"]),
        "scores": state.scores[i].tolist(),
        "dealer": f["dealer"],
        "round": f["round"],
        "decisions": f["decisions"],
        "winner": seat(f["winner"]),
        "terminated": bool(f["terminated"]),
        "truncated": bool(f["truncated"]),
        "rng": str(int(state.rng[i])),
    }


def catch_succeeds(d: Mapping[str, Any], q: int) -> bool:
    """Would a catch of seat ``q`` succeed in position ``d``, as the engine tests it: ``q``
    went down to one card without calling (``exposed``), played last, and holds that card
    still (not a seat that was given cards since, by a Wild Shuffle Hands)."""
    need_keys(d, ("exposed", "previous_player", "hands"), "catch_succeeds: the position")
    return d["exposed"] == q == d["previous_player"] and len(d["hands"][q]) == 1


def need_keys(d: Any, keys: tuple[str, ...], what: str,
              allowed: str = "a position dict (VecGame.to_dict) or a replay's result with its "
                             "rules") -> None:
    """One ``ValueError`` naming the keys of ``keys`` that ``d`` lacks (the first five, and
    how many more); before, the helpers that read position dicts gave a ``KeyError`` for the
    first one, or an ``AttributeError`` where ``d`` is no mapping."""
    missing = [k for k in keys if not isinstance(d, Mapping) or k not in d]
    if missing:
        raise ValueError(f"{what} {shown(d, 40)} lacks {first_few(list(map(repr, missing)))}; "
                         f"allowed: {allowed}")


def need_position(d: Any, what: str) -> None:
    """:func:`need_keys` of every key of a position dict (:data:`POSITION_KEYS`): what the
    play apps' text helpers (:mod:`ono_env.render`) check before they read one."""
    need_keys(d, POSITION_KEYS, what, "a position dict, as VecGame.to_dict writes it")


def won_on_lowest_total(scoring: str, target_score: int) -> bool:
    """Is a game of these rules a penalty-scored match, won by the lowest total rather than by
    its last round's winner (``scoring: penalty`` with a ``target_score``)?"""
    return scoring == "penalty" and bool(target_score)


def game_winners(result: Mapping[str, Any], rules: RuleSet | None = None) -> list[int]:
    """The seats that won a finished game, as the engine's rewards have it: the winner of the
    last round, or in a penalty-scored match (``scoring: penalty`` with a ``target_score``)
    every seat with the lowest total (all of them tied: a draw, no one rewarded); empty for a
    game not terminated (still on, or cut at the decision limit). ``result``: a position
    (:meth:`~ono_env.game.VecGame.to_dict`, whose rules it reads) or a replay's ``result``
    with the replay's ``rules``. A position's ``winner`` is always the last round's."""
    need_keys(result, ("terminated", "scores", "winner") + (("rules",) if rules is None else ()),
               "game_winners: the result")
    if rules is None:
        need_keys(result["rules"], ("scoring", "target_score"), "game_winners: the result's rules")
    scoring, target = ((result["rules"]["scoring"], result["rules"]["target_score"])
                       if rules is None else (rules.scoring, rules.target_score))
    if not result["terminated"]:
        return []
    if won_on_lowest_total(scoring, target):
        low = min(result["scores"])
        return [q for q, s in enumerate(result["scores"]) if s == low]
    return [int(result["winner"])]
