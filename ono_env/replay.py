"""Replays: a game as its rules, its deal's seed and its actions, enough to play it again.

A replay file is JSON (never code: reading one runs nothing from it), every key required::

    {"format": "ono_env-replay", "format_version": 1,
     "rules": {... every RuleSet field, none left out (RuleSet.to_dict()) ...},
     "game_seed": "1234567890123",      # the game's generator state before the deal
     "max_decisions": 5000,             # the game's decision limit
     "players": ["you", "ppo-basic-2p"],   # a label per seat
     "actions": ["play R5", "draw", ...],   # every decision in order, as action names
     "thinking": [null, {"agent": "ppo-basic-2p", "probs": {"play R5": 0.91, ...},
                         "value": 0.42}, ...],   # per action: what the agent reported, or null;
                                                 # "agent" is the deciding seat's label
     "result": {"winner": 1, "terminated": true, "truncated": false,
                "scores": [0, 0], "decisions": 37},
     "source": "ono-arena",             # what wrote it
     "saved_at": "2026-11-24T12:00:00"} # when the game finished, an ISO date

``game_seed`` is a decimal string (a 64-bit integer does not survive every JSON reader).
The deal and every later shuffle come from the game's own generator, so the position after
any number of actions follows from ``rules``, ``game_seed`` and the actions alone:
:func:`replay_positions` plays them with the engine, checks every action against the legal
actions of its position, and checks the final position against ``result``. ``thinking``
is what the acting agent reported: for a learned agent (:func:`agent_thinking`) the
probability of each legal action and, where the model has one, its value estimate (``value``
may be null); for a search agent (:func:`search_thinking`) ``"values"``, the mean playout
result of each legal action.

Replays are written by ``ono-play --replay FILE``, by the web table (``ono-web``) and by
``ono-arena --record N DIR`` (a seeded sample of the arena's games), and shown by the web
table's replay viewer.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ono_env import cards as C
from ono_env.checks import (
    check_action,
    check_bool,
    check_input_file,
    check_int,
    check_text,
    check_write_path,
    cut,
    is_int,
    is_iso_date,
    is_u64_text,
    printable,
    shown,
    write_whole,
)
from ono_env.game import MAX_DECISIONS, VecGame
from ono_env.positions import load_json, most_points, read_rules
from ono_env.rules import RuleSet

REPLAY_FORMAT = "ono_env-replay"
REPLAY_VERSION = 1
REPLAY_KEYS = ("format", "format_version", "rules", "game_seed", "max_decisions", "players",
               "actions", "thinking", "result", "source", "saved_at")
THINKING_KEYS = {"agent", "probs", "value", "values"}
RESULT_KEYS = ("winner", "terminated", "truncated", "scores", "decisions")
MAX_REPLAY_BYTES = 64 << 20
"""The largest replay file read: 64 MiB."""
MAX_LABEL = 80
"""The longest player label or source text."""


MAX_GAME_SEED = 2**64 - 1
"""A deal's generator state is a 64-bit word: 0 .. 2**64 - 1."""


def new_game(rules: RuleSet, game_seed: int, max_decisions: int | None = None) -> VecGame:
    """A one-game ``VecGame`` dealt from the generator state ``game_seed`` (0 .. 2**64 - 1;
    anything else is one ``ValueError``, where a float was truncated before and a number out
    of range was NumPy's ``OverflowError``)."""
    game_seed = check_int("game_seed", game_seed, 0, MAX_GAME_SEED)
    game = VecGame(rules, 1, seed=0, max_decisions=max_decisions)
    game.reset(seeds=np.array([game_seed], np.uint64))
    return game


def clean_label(text: Any) -> str:
    """A label the project made (an agent's name, a file's stem) as replays store it: at most
    :data:`MAX_LABEL` characters, a character UTF-8 cannot encode or a control character
    shown as ``?`` (a file name may hold both), ``?`` for an empty or blank one; what
    :func:`~ono_env.checks.check_text` accepts when the replay is read back. A longer label
    keeps its start and its end (an entrant's ``#2``, `` (cheating)``) around 8 hex digits of
    its SHA-256, so that two labels alike in their first characters stay apart (before: cut
    to its first 80, two model files of long names alike read the same in every seat)."""
    text = str(text)
    if len(text) > MAX_LABEL:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        keep = (MAX_LABEL - len(digest) - 2) // 2
        text = f"{text[:keep]}…{digest}…{text[len(text) - keep:]}"
    label = printable(text.encode("utf-8", "replace").decode("utf-8"))
    return label if label.strip() else "?"


def agent_thinking(agent: Any, label: str, obs: np.ndarray, mask: np.ndarray) -> dict[str, Any] | None:
    """What ``agent`` (shown as ``label``) reports of one decision (``obs`` (D,), ``mask``
    (A,)): ``{"agent": label, "probs":
    {action name: probability of each legal action}, "value": float or None}`` from its
    ``explain`` method, or None for an agent without one (the rule-based agents). The
    ability is the one ``ono_env.agents.base.ExplainingAgent`` declares (read here by name:
    the core imports no agents)."""
    explain = getattr(agent, "explain", None)
    if explain is None:
        return None
    if not callable(explain):   # before: "TypeError: 'int' object is not callable", unnamed
        raise ValueError(f"agent {clean_label(label)!r}: explain is {shown(explain, 40)} "
                         f"({type(explain).__name__}); allowed: a method explain(obs, mask) "
                         f"returning (probabilities, values), or none")
    got = explain(obs[None, :], mask[None, :].copy())
    try:   # before: a TypeError or IndexError from an explain that returned another shape
        probs, value = got
        probs = np.asarray(probs, np.float64)
        value = None if value is None else np.asarray(value, np.float64)
        ok = probs.shape == (1, len(mask)) and (value is None or value.shape == (1,))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"agent {clean_label(label)!r}: explain returned {shown(got, 60)}; "
                         f"allowed: (probabilities of shape (1, {len(mask)}), values of shape "
                         f"(1,) or None)")
    return {"agent": clean_label(label),
            "probs": {C.action_name(int(a)): round(float(probs[0, a]), 6)
                      for a in np.flatnonzero(mask)},
            "value": None if value is None else round(float(value[0]), 6)}


def search_thinking(label: str, values: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
    """What a search agent reports of one decision: the mean playout result of each legal
    action (``values`` (A,), its ``last_values`` row; ``mask`` (A,) the legal actions) under
    ``"values"``, beside empty ``probs`` and no ``value``. A decision taken without search
    (one legal action) has no values: its row holds the search's mark -1 there, below any
    playout result (at least (2 - players) / players), and was reported as a value. Values
    of another length than ``mask``, or a legal action's value NaN or infinite, are one
    ``ValueError`` (before: an ``IndexError``, and a NaN left out without a word)."""
    values, mask = np.asarray(values), np.asarray(mask)
    if values.shape != mask.shape or mask.ndim != 1 or values.dtype.kind not in "iuf":
        raise ValueError(f"search_thinking: values {values.dtype} {values.shape} for a mask of "
                         f"shape {mask.shape}; allowed: a row of numbers, one per action")
    if not np.isfinite(values[mask.astype(bool)]).all():
        raise ValueError(f"search_thinking: {clean_label(label)!r} reported a value that is NaN "
                         f"or infinite for a legal action; allowed: finite playout results")
    return {"agent": clean_label(label), "probs": {}, "value": None,
            "values": {C.action_name(int(a)): round(float(values[a]), 6)
                       for a in np.flatnonzero(mask) if values[a] > -1.0}}


def _check_game(game: Any) -> None:
    """``game`` is a VecGame (before: an AttributeError for anything else)."""
    if not isinstance(game, VecGame):
        raise ValueError(f"game is a {type(game).__name__}; allowed: the VecGame the replay "
                         f"records")


@dataclass
class Replay:
    """One game: rules, the deal's generator state, the players' labels, the actions."""

    rules: RuleSet
    game_seed: int
    max_decisions: int
    players: list[str]
    actions: list[int] = field(default_factory=list)
    thinking: list[dict[str, Any] | None] = field(default_factory=list)
    result: dict[str, Any] | None = None
    source: str = "ono_env"
    saved_at: str = ""

    # ---- recording --------------------------------------------------------------------
    @classmethod
    def start(cls, game: VecGame, i: int, game_seed: int, players: list[str] | tuple[str, ...],
              source: str) -> Replay:
        """An empty replay of game ``i`` of ``game``, dealt from ``game_seed``, before its
        first decision. Labels longer than :data:`MAX_LABEL` characters are shortened to it
        (:func:`clean_label`). A
        game with ``skip_forced`` or ``autoreset`` is refused: its forced decisions or its
        next episodes would not be in the replay. So is what the file could not hold (each one
        ``ValueError``; before, these were saved and then refused by :meth:`load`): ``i``
        not a game of ``game``, ``game_seed`` outside 0 .. 2**64 - 1 or not an integer, a
        label count other than the table's players, a label or ``source`` that is no text
        (before: its ``str()`` was kept, "None" for None), ``game`` no VecGame, and a game
        that is not the deal of ``game_seed`` before its first decision (before: recorded
        to its end, and refused as an illegal action when replayed)."""
        _check_game(game)
        if game.skip_forced or game.autoreset:
            raise ValueError("a replay records a game without skip_forced and autoreset "
                             "(every decision must be offered, one episode)")
        check_int("i", i, 0, game.num_games - 1)
        game_seed = check_int("game_seed", game_seed, 0, MAX_GAME_SEED)
        n = game.rules.num_players
        if not isinstance(players, (list, tuple)) or len(players) != n \
                or not all(isinstance(label, str) for label in players):
            raise ValueError(f"players={shown(players, 60)}; allowed: a list of {n} labels "
                             f"(text), one a seat")
        if not isinstance(source, str):
            raise ValueError(f"source={shown(source, 60)}; allowed: text saying what wrote the "
                             f"replay (e.g. 'ono-play')")
        # one deal (under a millisecond) against a replay that could not be replayed
        position = game.to_dict(i)
        if position["decisions"]:
            raise ValueError(f"game {i} has taken {position['decisions']} decisions; allowed: "
                             f"a game before its first step (a replay records it from its deal)")
        if position != new_game(game.rules, game_seed, game.max_decisions).to_dict(0):
            raise ValueError(f"game {i} is not the deal of game_seed={game_seed}; allowed: "
                             f"the seed that dealt it (game_seeds(seed, num_games)[{i}] for "
                             f"VecGame(..., seed=seed))")
        return cls(game.rules, game_seed, game.max_decisions,
                   [clean_label(p) for p in players], source=clean_label(source))

    def add(self, action: int, thinking: dict[str, Any] | None = None) -> None:
        """Record the next decision (before or after it is stepped): an integer action id
        (a float or a bool is one ``ValueError``; before, it was truncated) and what the agent
        reported of it, checked as :meth:`load` checks it (before: a NaN probability was
        recorded, and ``save`` refused the replay after the games, ``ono-arena --record``
        losing its ``--out`` too). A finished replay takes no more (before: taken, and
        :func:`replay_positions` then found actions after the game's end)."""
        if self.result is not None:
            raise ValueError("the replay is finished (its game is over): it takes no more "
                             "decisions")
        action = check_action("action", action)
        if not 0 <= action < C.NUM_ACTIONS:
            raise ValueError(f"action={action}; allowed: an action id 0 .. {C.NUM_ACTIONS - 1}")
        who = f" of {shown(thinking['agent'], 40)}" if isinstance(thinking, Mapping) and "agent" in thinking else ""
        checked = _check_thinking(thinking, f"decision {len(self.actions)}: thinking{who}",
                                  self.rules.num_players)
        self.actions.append(action)
        self.thinking.append(checked)

    def finish(self, game: VecGame, i: int = 0) -> Replay:
        """Record how game ``i`` of ``game`` ended (its current position); a game that has
        not ended is one ``ValueError`` (before: recorded, saved, and refused by :meth:`load`)."""
        _check_game(game)
        i = check_int("i", i, 0, game.num_games - 1)
        position = game.to_dict(i)
        if not (position["terminated"] or position["truncated"]):
            raise ValueError(f"game {i} has not ended; a replay is finished once its game is over")
        self.result = final_result(position)
        self.saved_at = _dt.datetime.now().replace(microsecond=0).isoformat()
        return self

    # ---- the file format --------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"format": REPLAY_FORMAT, "format_version": REPLAY_VERSION,
                "rules": self.rules.to_dict(), "game_seed": str(self.game_seed),
                "max_decisions": self.max_decisions, "players": list(self.players),
                "actions": [C.action_name(a) for a in self.actions],
                "thinking": list(self.thinking), "result": self.result,
                "source": self.source, "saved_at": self.saved_at}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), allow_nan=False)   # the reader refuses NaN and inf too

    def save(self, path: str | Path, new: bool = False) -> Path:
        """Write the replay of a finished game (``finish`` called) as JSON. A file already at
        ``path`` is replaced, unless ``new``: then it is kept and the write refused
        (``ValueError``; ``ono-play --replay`` and ``ono-arena --record`` refuse one before
        they play, and save ``new``, so that a file that appeared during the run is kept);
        the file is written whole, through a temporary file, so a run
        killed meanwhile leaves no part of one. Its folder is made where missing; a path that
        is no text, a folder, or a folder that cannot be made is one ``ValueError``."""
        if self.result is None:
            raise ValueError("a replay is saved once its game is over (call finish)")
        text = self.to_json()
        # what load would refuse is not written (a Replay built or changed by hand, too)
        Replay.from_dict(json.loads(text), "the replay to save")
        # before: FileExistsError where a parent is a file, pathlib's errors for "" and None
        path = check_write_path(path, "replay file")
        return write_whole(path, (text + "\n").encode(), "replay file", new=new)

    @classmethod
    def from_dict(cls, d: Any, where: str = "replay") -> Replay:
        """A replay from its dict, every key checked; one ``ValueError`` naming the key and
        what is allowed. (The actions' legality, and that each decision's thinking names only
        its legal actions, are checked by :func:`replay_positions`.)"""
        def bad(key: str, detail: str, allowed: str) -> ValueError:
            return ValueError(f"{where}: {key}: {detail}; allowed: {allowed}")

        if not isinstance(d, Mapping):
            raise ValueError(f"{where}: a replay is a JSON object; got {type(d).__name__}")
        missing = [k for k in REPLAY_KEYS if k not in d]
        if missing:
            raise bad(missing[0], "missing", f"the keys {', '.join(REPLAY_KEYS)}")
        extra = sorted(str(k) for k in d if k not in REPLAY_KEYS)
        if extra:
            # printable: a key of a lone surrogate failed the web server's JSON answer (500),
            # and a terminal's escape codes reached ono-web's console
            raise bad(cut(printable(extra[0]), 60), "unknown key",
                      f"the keys {', '.join(REPLAY_KEYS)}")
        # the kind first: a NumPy array compared gave NumPy's error, naming no key
        if not isinstance(d["format"], str) or d["format"] != REPLAY_FORMAT:
            raise bad("format", f"{shown(d['format'], 60)}", repr(REPLAY_FORMAT))
        if not is_int(d["format_version"]) or d["format_version"] != REPLAY_VERSION:
            raise bad("format_version", f"{shown(d['format_version'], 60)}", str(REPLAY_VERSION))
        rules = read_rules(d["rules"], whole=True, key=f"{where}: rules")
        seed = d["game_seed"]
        if not is_u64_text(seed):   # 0 .. MAX_GAME_SEED
            raise bad("game_seed", f"{shown(seed, 60)}", "a decimal string of an integer 0 .. 2**64 - 1 "
                      "(ASCII digits, no sign, spaces or leading zeros)")
        md = d["max_decisions"]
        if not is_int(md) or not 1 <= md <= MAX_DECISIONS:
            raise bad("max_decisions", f"{shown(md, 60)}", f"an integer 1 .. {MAX_DECISIONS}")
        players = d["players"]
        n = rules.num_players
        if not isinstance(players, list) or len(players) != n:
            raise bad("players", f"{shown(players, 60)}",
                      f"a list of {n} labels (strings of 1 .. {MAX_LABEL} characters)")
        for k, p in enumerate(players):
            check_text(f"{where}: players[{k}]", p, MAX_LABEL)
            if not p.strip():   # before: a blank label, shown as nothing in every list
                raise bad(f"players[{k}]", f"{shown(p, 20)}", "a label that is not blank")
        actions = d["actions"]
        if not isinstance(actions, list) or len(actions) > md:
            raise bad("actions", f"{type(actions).__name__} of {len(actions) if isinstance(actions, list) else '-'}",
                      f"a list of at most max_decisions={md} action names")
        ids = []
        for k, a in enumerate(actions):
            if not isinstance(a, str):
                raise bad(f"actions[{k}]", f"{shown(a, 60)}", "an action name such as 'play R5' or 'draw'")
            try:
                ids.append(C.action_id(a))
            except ValueError as exc:
                raise ValueError(f"{where}: actions[{k}]: {exc}") from None
            if C.action_name(ids[-1]) != a:   # one text form, as written (action_id also
                # takes other cases and spacing): before, 'Play W B  ' was read and rewritten
                raise bad(f"actions[{k}]", f"{shown(a, 60)}", f"the action's name as written: "
                          f"{C.action_name(ids[-1])!r}")
        thinking = d["thinking"]
        if not isinstance(thinking, list) or len(thinking) != len(actions):
            # the lengths said (before: "list" alone, and an actions list cut short read as
            # a fault of thinking's)
            raise bad("thinking", f"{type(thinking).__name__}" + (
                f" of {len(thinking)} entries" if isinstance(thinking, list) else ""),
                f"a list of {len(actions)} entries, one per action of actions (null or "
                "{\"agent\", \"probs\", \"value\"})")
        checked_thinking = [_check_thinking(t, f"{where}: thinking[{k}]", n)
                            for k, t in enumerate(thinking)]
        result = _check_result(d["result"], rules, int(md), f"{where}: result")
        if result["decisions"] != len(ids):   # every decision is one action (no forced skips)
            raise bad("actions", f"{len(ids)} actions for a game of {result['decisions']} "
                      f"decisions (result.decisions)", "one action for each decision")
        source = d["source"]
        if not isinstance(source, str) or len(source) > MAX_LABEL:
            raise bad("source", f"{shown(source, 60)}", f"a string of at most {MAX_LABEL} characters")
        if source:
            check_text(f"{where}: source", source, MAX_LABEL)
        if not is_iso_date(d["saved_at"]):   # before: any text of at most MAX_LABEL characters
            raise bad("saved_at", f"{shown(d['saved_at'], 60)}",
                      "the date the game finished, ISO text (2026-11-24T12:00:00)")
        return cls(rules, int(seed), int(md), list(players), ids, checked_thinking, result,
                   d["source"], d["saved_at"])

    @classmethod
    def from_json(cls, text: str, where: str = "replay") -> Replay:
        try:
            d = load_json(text, "replay JSON")
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        return cls.from_dict(d, where)

    @classmethod
    def load(cls, path: str | Path) -> Replay:
        """Read a replay file (JSON only; at most :data:`MAX_REPLAY_BYTES`)."""
        path = check_input_file(path, "replay file", MAX_REPLAY_BYTES)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{str(path)!r}: not a replay (not UTF-8 JSON text)") from None
        except OSError as exc:   # a read error after the checks: EIO, EACCES, ...
            raise ValueError(f"cannot read replay file {str(path)!r}: "
                             f"{exc.strerror or exc}") from None
        return cls.from_json(text, repr(str(path)))


def _plain(x: Any) -> Any:
    """A NumPy number as the Python number it holds (``np.float32(0.5)`` as 0.5: before, it
    was refused as no number, while ``np.float64``, a float, was taken); anything else as
    it is, for the checks to judge (a NumPy bool stays one, and is refused)."""
    return x.item() if isinstance(x, (np.integer, np.floating)) else x


def _finite_number(x: Any) -> bool:
    """An int (not a bool) or float that a float holds finitely: an int too large for a
    float is refused, not an ``OverflowError``."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


PROBS_SLACK = 1e-3
"""How far a decision's ``probs`` may sum past 1: each is written rounded to 6 decimals
(:func:`agent_thinking`), 85 actions at most, from a float32 softmax."""
VALUES_SLACK = 1e-6
"""How far a search's ``values`` may pass their range (:func:`_check_thinking`): each is
written rounded to 6 decimals (:func:`search_thinking`)."""


def _check_thinking(t: Any, where: str, players: int) -> dict[str, Any] | None:
    """A decision's ``thinking`` as a replay keeps it, of a game of ``players``. A search's
    ``values`` are mean playout results, from (2 - players) / players (a penalty-scored match
    lost to tied winners) to 1 (a win; ``ono_env.agents.search``): before, any finite number
    was taken, 1e308 too, and the viewer, which shows them as results of 0 to 1, drew it."""
    if t is None:
        return None
    allowed = ('null or {"agent": label, "probs": {action name: probability}, '
               '"value": number or null, optionally "values": {action name: number}}')
    if not isinstance(t, Mapping) or not {"agent", "probs", "value"} <= set(t) <= THINKING_KEYS:
        raise ValueError(f"{where}: {shown(t, 60)}; allowed: {allowed}")
    check_text(f"{where}: agent", t["agent"], MAX_LABEL)
    probs = t["probs"]
    if not isinstance(probs, Mapping) or len(probs) > C.NUM_ACTIONS:
        raise ValueError(f"{where}: probs {shown(probs, 60)}; allowed: {allowed}")
    probs = {name: _plain(p) for name, p in probs.items()}
    for name, p in probs.items():
        if name not in C.ACTION_NAMES:
            raise ValueError(f"{where}: probs: unknown action {shown(name, 40)}; allowed: action names")
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise ValueError(f"{where}: probs[{name!r}]={shown(p, 40)}; allowed: a number 0 .. 1")
    if sum(probs.values()) > 1 + PROBS_SLACK:   # before: 0.9 and 0.9 were taken
        raise ValueError(f"{where}: probs sum to {sum(probs.values()):.6g}; allowed: "
                         f"probabilities that sum to at most 1 (the legal actions' share)")
    v = _plain(t["value"])
    if v is not None and not _finite_number(v):
        raise ValueError(f"{where}: value {shown(v, 40)}; allowed: a finite number or null")
    out = {"agent": t["agent"], "probs": dict(probs), "value": v}
    if "values" in t:
        values = t["values"]
        if not isinstance(values, Mapping) or len(values) > C.NUM_ACTIONS:
            raise ValueError(f"{where}: values {shown(values, 60)}; allowed: {allowed}")
        values = {name: _plain(x) for name, x in values.items()}
        low = (2 - players) / players
        for name, x in values.items():
            if name not in C.ACTION_NAMES:
                raise ValueError(f"{where}: values: unknown action {shown(name, 40)}; allowed: action names")
            if not (_finite_number(x) and low - VALUES_SLACK <= x <= 1 + VALUES_SLACK):
                raise ValueError(f"{where}: values[{name!r}]={shown(x, 40)}; allowed: a finite "
                                 f"number {round(low, 6):g} .. 1 (a search's mean playout "
                                 f"result at {players} players)")
        out["values"] = values
    return out


def _check_result(r: Any, rules: RuleSet, max_decisions: int, where: str) -> dict[str, Any]:
    """``r`` as a replay's result of a game under ``rules`` and its decision limit (before:
    any integers as scores and decisions, 10**100 among them, refused only when replayed)."""
    n, top = rules.num_players, most_points(rules)
    allowed = (f'{{"winner": seat or null, "terminated": bool, "truncated": bool, '
               f'"scores": {n} integers 0 .. {top:,}, "decisions": integer 0 .. {max_decisions:,}}}')
    if not isinstance(r, Mapping) or set(r) != set(RESULT_KEYS):
        raise ValueError(f"{where}: {shown(r, 60)}; allowed: {allowed}")
    w, scores, decisions = r["winner"], r["scores"], r["decisions"]
    # each entry named apart (before: one message showed the result cut at 80 characters,
    # so that the wrong entry was often out of view)
    for key, ok, what in (
            ("winner", w is None or (is_int(w) and 0 <= w < n), f"a seat 0 .. {n - 1} or null"),
            ("terminated", isinstance(r["terminated"], bool), "true or false"),
            ("truncated", isinstance(r["truncated"], bool), "true or false"),
            ("scores", isinstance(scores, list) and len(scores) == n,
             f"a list of {n} integers 0 .. {top:,}, one a seat"),
            ("decisions", is_int(decisions) and 0 <= decisions <= max_decisions,
             f"an integer 0 .. {max_decisions:,}")):
        if not ok:
            raise ValueError(f"{where}.{key}: {shown(r[key], 60)}; allowed: {what}")
    for seat, s in enumerate(scores):   # the entry named (a list of 10 may be cut short)
        if not (is_int(s) and 0 <= s <= top):
            raise ValueError(f"{where}.scores[{seat}]: {shown(s, 60)}; allowed: an integer "
                             f"0 .. {top:,}")
    if not (r["terminated"] or r["truncated"]):   # no writer records a game still on
        raise ValueError(f"{where}: the game is neither terminated nor truncated; allowed: the "
                         f"result of a game that ended (terminated) or was cut at the decision "
                         f"limit (truncated)")
    return {k: r[k] for k in RESULT_KEYS}


def final_result(position: Mapping[str, Any]) -> dict[str, Any]:
    """The ``result`` entry of a replay from the game's last position."""
    return {"winner": position["winner"], "terminated": position["terminated"],
            "truncated": position["truncated"], "scores": list(position["scores"]),
            "decisions": position["decisions"]}


def _result_text(result: Any, keys: Any) -> str:
    """A result's entries of ``keys`` as ``key=value`` (JSON values): ``winner=1,
    scores=[0, 12]`` (before: a Python dict's repr)."""
    if not isinstance(result, Mapping):
        return shown(result, 200)
    return cut(", ".join(f"{k}={json.dumps(result.get(k), default=str)}" for k in keys), 200)


def replay_positions(replay: Replay, *, check_result: bool = True,
                     where: str = "replay") -> list[dict[str, Any]]:
    """Play ``replay`` with the engine: the position before the first action and after each
    one (``len(actions) + 1`` position dicts, every hand visible). ``ValueError`` naming
    the decision when an action is not legal in its position or the game ended before it,
    and (``check_result``) when the last position does not end as ``result`` says; so is a
    decision's ``thinking`` that reports on an action not legal there, or that is said by
    another label than that of the seat that decides. Each message starts
    with ``where`` (the web table's uploads: ``uploaded replay``, as their reading's do)."""
    if not isinstance(replay, Replay):
        raise ValueError(f"replay_positions: replay is a {type(replay).__name__}; allowed: a "
                         f"Replay (Replay.load(path), Replay.from_dict(d))")
    check_result = check_bool("check_result", check_result)
    if not isinstance(where, str):
        raise ValueError(f"replay_positions: where={shown(where, 40)}; allowed: text naming "
                         f"the replay in its messages")
    game = new_game(replay.rules, replay.game_seed, replay.max_decisions)
    out = [game.to_dict(0)]
    for k, a in enumerate(replay.actions):
        if game.finished[0]:
            raise ValueError(f"{where}: actions[{k}] {C.action_name(a)!r}: the game ended "
                             f"after {k} actions")
        legal = np.flatnonzero(game.legal_mask()[0])
        if a not in legal:
            raise ValueError(f"{where}: actions[{k}] {C.action_name(a)!r} is not legal in its "
                             f"position; legal: {', '.join(C.action_name(int(x)) for x in legal)}")
        said = replay.thinking[k] if k < len(replay.thinking) else None
        seat = int(game.state.current[0])
        if said is not None and said["agent"] != replay.players[seat]:
            # before: taken, so a file could show one seat's decisions as another agent's
            raise ValueError(f"{where}: thinking[{k}] is said by {said['agent']!r}, but P{seat} "
                             f"({replay.players[seat]!r}) decides there; allowed: the label of "
                             f"the seat that decides")
        if said is not None:   # before: probabilities of actions no agent could take, shown
            names = {C.action_name(int(x)) for x in legal}
            other = [n for part in ("probs", "values") for n in said.get(part, {}) if n not in names]
            if other:
                raise ValueError(f"{where}: thinking[{k}] names {other[0]!r}, which is not legal "
                                 f"in its position; legal: {', '.join(sorted(names))}")
        game.step(np.array([a]))
        out.append(game.to_dict(0))
    if check_result and replay.result is not None:
        got = final_result(out[-1])
        if got != replay.result:   # the entries that differ, where the replay has them all
            said = replay.result
            keys = [k for k in RESULT_KEYS if got[k] != said.get(k)] \
                if isinstance(said, Mapping) and set(said) == set(RESULT_KEYS) else RESULT_KEYS
            raise ValueError(f"{where}: the actions end with {_result_text(got, keys)}; the "
                             f"replay says {_result_text(said, keys)}")
    return out
