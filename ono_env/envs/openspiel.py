"""ONO as an OpenSpiel game: ``pyspiel.load_game("python_ono", {...})``.

Importing this module registers the game with OpenSpiel (the ``[openspiel]`` extra:
``pip install "ono-env[openspiel]"``). Its states step the project's engine (a one-game
:class:`~ono_env.game.VecGame`), so OpenSpiel's algorithms play exactly the project's rules::

    import pyspiel
    import ono_env.envs.openspiel            # registers "python_ono"
    game = pyspiel.load_game("python_ono", {"preset": "ono", "players": 4})
    state = game.new_initial_state()

The game
    Sequential, imperfect information, 2-10 players. Chance is sampled inside the game
    (``SAMPLED_STOCHASTIC``): the ``k``-th ``new_initial_state()`` of a game object deals from
    a seed derived from ``(seed, k)`` (a ``clone()``, a ``child()`` or a tensor read from
    Python, a resampled world or the tensors' shapes take no deal; a copy or a tensor made
    by OpenSpiel's C++ code does), and the engine's own generator (part of the state, copied
    by ``clone``) draws every later card, so a state and its clone play alike. The 85
    actions are the project's (``ono_env.cards.ACTION_NAMES``); a player acts whenever the
    rules say so, including forced decisions (a draw's keep or play, a challenge).
    ``reward="win"``: terminal, zero-sum rewards, the winner +1 and every other seat
    -1/(N-1) (k winners sharing a penalty-scored match +1/k, the others -1/(N-k); a game
    cut at ``max_decisions`` gives 0 to all). ``reward="points"`` (a scoring rule set): at
    the end of every round, the round's score change times 0.01, centred to sum to zero
    (OpenSpiel's per-step reward model).

Parameters
    ``preset`` (one of the presets, default ``classic``), ``players`` (2-10, default 2),
    ``reward`` (``win`` or ``points``, above), ``seed`` (the deals' seed, default 0),
    ``max_decisions`` (0: the engine's default, 5,000 a round and 50,000 a match),
    ``observation_version`` (the tensors' layout: 1, the default, or 2, one length for every
    rule set and 2-10 players with what the table has seen of each hand), and every
    option of :class:`~ono_env.rules.RuleSet` as a **string** parameter whose default ``""``
    keeps the preset's value (OpenSpiel fills in every parameter's default, so an unset
    option needs a value no option takes): ``"true"``/``"false"`` for a switch, a decimal
    number for a count, the choice's name otherwise (``{"stacking": "true", "dealer":
    "random"}``). A bad name or value is one ``SpielError``/``ValueError`` naming it and
    what is allowed; nothing is registered twice.

Observations
    ``observation_tensor`` and ``information_state_tensor`` are the seat's observation of
    :mod:`ono_env.observation` in the game's ``observation_version`` (what the seat may
    know: its hand, the table, the others' hand sizes and calls, and in version 2 what the
    table has seen of each hand and their last plays), divided by ``observation_scale`` as
    learned agents see it; the
    strings are the seat's view as the terminal game draws it, the information state's
    followed by every action of the game so far (all actions are public; a drawn card is not
    named) and the seat's record of what it privately saw: its hand and what it knows of the
    other hands (a hand shown at a challenge or handed over in a swap), each time either
    changed, and what each deal turned up (``OnoState.private_text``). The tensor holds no
    history, so it is not a perfect recall information state; the string is, but for a
    first card that a deal turned up and put back (a first Wild Draw Four returned to the
    deck), which the engine does not record. Only one player's view is offered
    (``make_py_observer`` refuses a public-only or an all-players observation type).

Serialisation
    ``state.serialize()`` is JSON of the game's rules, ``reward`` and ``max_decisions``, the
    deal's seed and the actions taken (and a resampled world's position);
    ``game.deserialize_state`` refuses a state of a game of other parameters, and replays it
    through the engine, so nothing
    in the text runs (OpenSpiel's default for a Python state unpickles its attributes). A
    resampled world that has played on since it was made is refused (its later actions were
    taken on cards a replay of the deal does not hold). A resampled world's text keeps the
    deal's seed (its replay rebuilds the public record from it), so it names the real deal's
    hidden cards, as the state object a bot is handed does: not the seat's information.
    ``copy.copy``/``copy.deepcopy`` of a state is ``clone()``; ``pickle`` writes a state as
    its game and ``serialize()``'s text, and a game as ``pyspiel.load_game`` of its
    parameters.

Resampling
    ``resample_from_infostate(player, sampler)`` (what OpenSpiel's ISMCTS bot calls) gives a
    state that agrees with everything the acting seat knows: its hand, the discard pile,
    every hand's size and call, and what the table has seen of each hand (cards it must
    hold, card types it lacks after drawing without a playable card), with the hidden cards
    dealt afresh, as the project's search agents sample their worlds
    (``ono_env.agents._search``). It is offered for the acting seat only.

Bots
    :class:`AgentBot` seats any of the project's agents (``ppo-any``, the baselines, the
    search agents, a model file) as a ``pyspiel.Bot``, deciding from the acting seat's view
    only (but for the research ceilings, labelled cheating), for ``evaluate_bots`` and the
    rest of OpenSpiel.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from ono_env import _engine as E
from ono_env import cards as C
from ono_env.checks import MAX_SEED, is_int, missing_extra, shown
from ono_env.game import (
    DEFAULT_MAX_DECISIONS_MATCH,
    DEFAULT_MAX_DECISIONS_ROUND,
    VecGame,
    kernel_entry,
)
from ono_env.observation import OBS_VERSIONS, observation_scale, observation_size
from ono_env.render import render_text
from ono_env.rules import MAX_PLAYERS, MIN_PLAYERS, PRESETS, RuleSet

try:
    import pyspiel
except ImportError as exc:
    raise missing_extra(exc, "ono_env.envs.openspiel", "pyspiel", "openspiel") from exc

GAME_NAME = "python_ono"
"""The short name the game is registered under (``pyspiel.load_game(GAME_NAME)``)."""
SERIAL_VERSION = 3
"""The version of ``OnoState.serialize``'s JSON (2 adds the game's rules, 3 its ``reward`` and
``max_decisions``; a text of version 1 or 2, without them, is still read)."""
_SERIAL_KEYS = {1: {"version", "seed", "actions", "position"}}
_SERIAL_KEYS[2] = _SERIAL_KEYS[1] | {"rules"}
_SERIAL_KEYS[3] = _SERIAL_KEYS[2] | {"reward", "max_decisions"}
OPTIONS = tuple(f for f in PRESETS["classic"].to_dict() if f not in ("name", "num_players"))
"""The rule options offered as parameters (every RuleSet field but the name and the
player count, which is ``players``)."""
MAX_PARAM_SEED = 2**31 - 1
"""The largest ``seed`` parameter: OpenSpiel holds an integer parameter in a C++ ``int``, and a
larger one fails in ``pyspiel.load_game`` before the game sees it."""
_DEFAULTS: dict[str, Any] = {"preset": "classic", "players": 2, "reward": "win", "seed": 0,
                             "max_decisions": 0, "observation_version": 1,
                             **dict.fromkeys(OPTIONS, "")}


def _game_type(reward_model: Any) -> Any:
    return pyspiel.GameType(
        short_name=GAME_NAME,
        long_name="ONO! (the UNO family of card games, ono_env's engine)",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.ZERO_SUM,
        reward_model=reward_model,
        max_num_players=MAX_PLAYERS,
        min_num_players=MIN_PLAYERS,
        provides_information_state_string=True,
        provides_information_state_tensor=True,
        provides_observation_string=True,
        provides_observation_tensor=True,
        parameter_specification=_DEFAULTS,
    )


# registered with terminal rewards (reward "win", the default); a game with reward "points"
# (paid at the end of every round of a match) says so in its own game type
_GAME_TYPE = _game_type(pyspiel.GameType.RewardModel.TERMINAL)
_POINTS_TYPE = _game_type(pyspiel.GameType.RewardModel.REWARDS)


def _option(name: str, text: str, kind: type) -> Any:
    """The value of option ``name`` written as ``text`` (a string parameter)."""
    if kind is bool:
        if text not in ("true", "false"):
            raise ValueError(f"{GAME_NAME}: parameter {name}={text!r}; allowed: 'true', "
                             f"'false', or '' (the preset's value)")
        return text == "true"
    if kind is int:
        if not re.fullmatch(r"0|[1-9][0-9]{0,11}", text):   # "007" is refused, not 7
            raise ValueError(f"{GAME_NAME}: parameter {name}={text!r}; allowed: a whole "
                             f"number written in digits without leading zeros, or '' (the "
                             f"preset's value)")
        return int(text)
    return text


def rules_of(params: dict[str, Any]) -> tuple[RuleSet, str, int, int]:
    """``(rules, reward, seed, max_decisions)`` of the game's parameters (OpenSpiel has
    checked their names and types); ``ValueError`` naming a bad value and what is allowed."""
    preset = params["preset"]
    if preset not in PRESETS:
        raise ValueError(f"{GAME_NAME}: parameter preset={preset!r}; allowed: "
                         f"{', '.join(PRESETS)}")
    players = params["players"]
    if not MIN_PLAYERS <= players <= MAX_PLAYERS:
        raise ValueError(f"{GAME_NAME}: parameter players={players}; allowed: "
                         f"{MIN_PLAYERS} to {MAX_PLAYERS}")
    if params["reward"] not in ("win", "points"):
        raise ValueError(f"{GAME_NAME}: parameter reward={params['reward']!r}; allowed: "
                         f"'win', 'points'")
    if not 0 <= params["seed"] <= MAX_PARAM_SEED:
        raise ValueError(f"{GAME_NAME}: parameter seed={params['seed']}; allowed: 0 to "
                         f"{MAX_PARAM_SEED:,} (OpenSpiel's integer parameters are 32-bit)")
    if not 0 <= params["max_decisions"] <= 10_000_000:
        raise ValueError(f"{GAME_NAME}: parameter max_decisions={params['max_decisions']}; "
                         f"allowed: 0 (the engine's default) to 10,000,000")
    base = PRESETS[preset]
    overrides = {k: _option(k, params[k], type(getattr(base, k)))
                 for k in OPTIONS if params[k] != ""}
    try:
        rules = RuleSet.preset(preset, num_players=players, **overrides)
    except ValueError as exc:
        # an option the message names but the parameters did not set is the preset's: say so
        # (before: "challenge=True" for stacking='true' alone, as if the user had set it)
        kept = [k for k in OPTIONS if k not in overrides and re.search(rf"\b{k}=", str(exc))]
        note = (f" ({', '.join(kept)}: preset {preset}'s value, not a parameter given; set "
                f"{'it' if len(kept) == 1 else 'them'} as a parameter)" if kept else "")
        raise ValueError(f"{GAME_NAME}: {exc}{note}") from None
    if params["reward"] == "points" and rules.scoring == "none":
        raise ValueError(f"{GAME_NAME}: parameter reward='points' under rules without "
                         f"scoring; allowed: reward='win', or a scoring rule set")
    return rules, params["reward"], params["seed"], params["max_decisions"]


def _check_params(params: Any) -> None:
    """The checks ``pyspiel.load_game`` makes of the parameters' names and types, for an
    ``OnoGame`` made directly (before: a RuleSet gave a ``TypeError``, and an unknown name,
    ``rules='basic'``, was ignored, so the game played the default preset)."""
    allowed = ", ".join(_DEFAULTS)
    if params is None:
        return
    if not isinstance(params, Mapping):
        raise ValueError(f"{GAME_NAME}: params is a {type(params).__name__}; allowed: None or a "
                         f"dict of the game's parameters ({allowed})")
    for name, value in params.items():
        if name not in _DEFAULTS:
            raise ValueError(f"{GAME_NAME}: unknown parameter {shown(name, 40)}; allowed: {allowed}")
        kind = type(_DEFAULTS[name])
        if type(value) is not kind:
            raise ValueError(f"{GAME_NAME}: parameter {name}={shown(value, 40)} "
                             f"({type(value).__name__}); allowed: {'an' if kind is int else 'a'} "
                             f"{kind.__name__}")


class OnoGame(pyspiel.Game):
    """The OpenSpiel game (see the module's docstring); made by ``pyspiel.load_game``."""

    def __init__(self, params: dict[str, Any] | None = None) -> None:
        _check_params(params)
        full = {**_DEFAULTS, **(params or {})}
        self.rules, self.reward, self.seed, cut = rules_of(full)
        version = full["observation_version"]
        if version not in OBS_VERSIONS:
            raise ValueError(f"{GAME_NAME}: parameter observation_version={version}; allowed: "
                             f"{', '.join(map(str, OBS_VERSIONS))} (2: one length for every "
                             f"rule set and 2-10 players, with what the table has seen of each "
                             f"hand)")
        self.observation_version = version
        """The layout of the observation and information-state tensors
        (:mod:`ono_env.observation`)."""
        default_cut = (DEFAULT_MAX_DECISIONS_MATCH if self.rules.target_score
                       else DEFAULT_MAX_DECISIONS_ROUND)
        self.max_decisions = cut or default_cut
        n = self.rules.num_players
        # points: 0.01 x a score change, centred, at most a whole match's points
        high = 1.0 if self.reward == "win" else \
            0.01 * float(max(self.rules.target_score, 1) + self.rules.deck_points)
        info = pyspiel.GameInfo(
            num_distinct_actions=C.NUM_ACTIONS, max_chance_outcomes=0, num_players=n,
            min_utility=-high, max_utility=high, utility_sum=0.0,
            max_game_length=self.max_decisions)
        super().__init__(_GAME_TYPE if self.reward == "win" else _POINTS_TYPE, info,
                         params or {})
        self._deals = 0
        self._deal_lock = threading.Lock()   # one number per deal, whichever thread asks
        self._cloning: set[int] = set()   # threads in OnoState.clone: their copy asks for a state
        self.scale = observation_scale(self.rules, self.observation_version)
        """What the tensors divide the observation by (:func:`~ono_env.observation.observation_scale`)."""

    def new_initial_state(self) -> OnoState:
        """A new deal (the ``k``-th from this game object: seed derived from (seed, k)).
        OpenSpiel's copy of a Python state asks the game for a new state and then copies the
        original's attributes into it; for ``OnoState.clone`` (and ``child``) that state
        deals nothing and counts as no deal, in the thread that clones only (before, every
        clone took a deal's number and dealt a game for nothing)."""
        if threading.get_ident() in self._cloning:
            return OnoState(self, None)
        with self._deal_lock:
            k = self._deals
            self._deals += 1
        seed = int(np.random.SeedSequence([self.seed, k]).generate_state(1)[0])
        return OnoState(self, seed)

    # the tensors' shapes, from the layout (OpenSpiel's own answer makes a new state: a deal)
    def observation_tensor_shape(self) -> list[int]:
        return [observation_size(self.rules, self.observation_version)]

    def observation_tensor_size(self) -> int:
        return observation_size(self.rules, self.observation_version)

    def information_state_tensor_shape(self) -> list[int]:
        return self.observation_tensor_shape()

    def information_state_tensor_size(self) -> int:
        return self.observation_tensor_size()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as ``pyspiel.load_game`` of its name and parameters (before: OpenSpiel's
        "GetRNGState unimplemented"); the game loaded deals from its seed afresh."""
        return pyspiel.load_game, (GAME_NAME, self.get_parameters())

    def deserialize_state(self, text: str) -> OnoState:
        """The state ``OnoState.serialize`` wrote (under this game's rules, ``reward`` and
        ``max_decisions``, which a text of version 3 names): JSON of the deal's seed and the
        actions taken, replayed through the engine (and for a resampled state its position),
        so nothing in the text runs (OpenSpiel's own serialisation of a Python state unpickles
        its attributes, which can run code). ``ValueError`` naming what is wrong."""
        from ono_env.positions import load_json, read_rules

        d = load_json(text, f"{GAME_NAME} state")
        version = d.get("version") if isinstance(d, dict) else None
        if not is_int(version) or version not in _SERIAL_KEYS or set(d) != _SERIAL_KEYS[version]:
            raise ValueError(f"{GAME_NAME}: not a serialised state; allowed: JSON with exactly "
                             f"the keys {sorted(_SERIAL_KEYS[SERIAL_VERSION])}, version "
                             f"{SERIAL_VERSION} (or version 2, without 'reward' and "
                             f"'max_decisions', or 1, without 'rules' too)")
        if version >= 2:   # before: a state of other rules replayed under these
            written = read_rules(d["rules"], whole=True, key=f"{GAME_NAME} state: rules")
            differ = written.differing_fields(self.rules, skip=("name",))
            if differ:
                raise ValueError(f"{GAME_NAME}: a state of other rules ({', '.join(differ[:5])} "
                                 f"differ); allowed: a state this game wrote (the same "
                                 f"parameters)")
        if version >= 3:   # before: a points game's state read as a win game's, its returns
            # changed, or one cut at 40 decisions, terminal there, played on under a cut of 400
            for key, ours in (("reward", self.reward), ("max_decisions", self.max_decisions)):
                if d[key] != ours or type(d[key]) is not type(ours):
                    raise ValueError(f"{GAME_NAME}: a state of a game with {key}="
                                     f"{shown(d[key], 40)}, where this game's is {ours!r}; "
                                     f"allowed: a state this game wrote (the same parameters)")
        seed, actions = d["seed"], d["actions"]
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
            raise ValueError(f"{GAME_NAME}: serialised state seed={shown(seed, 40)}; allowed: an "
                             f"integer from 0 to {MAX_SEED:,} (a deal's seed, as VecGame takes)")
        if not isinstance(actions, list) or len(actions) > self.max_decisions or not all(
                isinstance(a, int) and not isinstance(a, bool) for a in actions):
            raise ValueError(f"{GAME_NAME}: serialised state actions: allowed: a list of at "
                             f"most {self.max_decisions:,} action ids")
        state = OnoState(self, seed)
        for a in actions:
            if state.is_terminal() or a not in state.legal_actions():
                raise ValueError(f"{GAME_NAME}: serialised state action {a} is not legal "
                                 f"after {len(state.history())} actions")
            state.apply_action(a)
        if d["position"] is not None:
            _check_world(d["position"], state.engine.to_dict(0))
            # A position holds no history, and set_position starts it empty; a resampled
            # world keeps the deal's public record (the per-seat columns up to NUM_S) and
            # what the acting seat privately knows of the other hands (its S_SEEN columns),
            # and blanks what the other seats know (resample_from_infostate). The replay
            # above holds all of it: put back what the world keeps.
            history = state.engine.state.pl[0].copy()
            state.engine.set_position(0, d["position"])   # checked as every position is
            pl, me = state.engine.state.pl[0], state.engine.state.current[0]
            pl[:, E.S_LACKS:E.NUM_S] = history[:, E.S_LACKS:E.NUM_S]
            pl[me, E.S_SEEN:] = history[me, E.S_SEEN:]
            _check_knowledge(state.engine.state, me)
            state.resampled = True
            state._resampled_at = len(state.history_names)
            # as resample_from_infostate leaves them
            state._forget_private([q for q in range(self.rules.num_players) if q != me])
        return state

    def make_py_observer(self, iig_obs_type: Any = None,
                         params: dict[str, Any] | None = None) -> OnoObserver:
        if params:
            raise ValueError(f"{GAME_NAME}: observation parameters are not supported; got "
                             f"{sorted(params)}")
        if iig_obs_type is not None and not isinstance(iig_obs_type,
                                                       pyspiel.IIGObservationType):
            raise ValueError(f"{GAME_NAME}: observation type {shown(iig_obs_type, 40)}; allowed: "
                             f"a pyspiel.IIGObservationType, or None (the default)")
        if iig_obs_type is not None and (
                not iig_obs_type.public_info
                or iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER):
            raise ValueError(
                f"{GAME_NAME}: observation type public_info={iig_obs_type.public_info}, "
                f"private_info={iig_obs_type.private_info}; allowed: one player's view "
                f"(public_info=True, private_info=SINGLE_PLAYER), with or without perfect "
                f"recall (a public-only or all-players observation is not offered)")
        perfect_recall = bool(iig_obs_type is not None and iig_obs_type.perfect_recall)
        return OnoObserver(self.rules, perfect_recall, self.observation_version)


def _state_of(rules: RuleSet, state: Any, what: str) -> OnoState:
    """``state`` given to ``what`` of a game of ``rules``: a state of this game's kind and
    rules (the preset's name is no rule), else ``ValueError`` naming the fields that
    differ."""
    if not isinstance(state, OnoState):
        raise ValueError(f"{GAME_NAME}: {what} of a {type(state).__name__}; allowed: a state "
                         f"of a {GAME_NAME} game")
    if state.rules is rules or state.rules == rules:   # every observation asks: at once
        return state
    differ = [f"{k}={getattr(state.rules, k)!r} (this game's {getattr(rules, k)!r})"
              for k in state.rules.differing_fields(rules, skip=("name",))]
    if differ:
        raise ValueError(f"{GAME_NAME}: {what} of a state of other rules: {', '.join(differ)}; "
                         f"allowed: a state of the game this was made from")
    return state


_PUBLIC_KEYS = ("version", "rules", "discard", "color", "current_player", "direction", "phase",
                "pending_draw", "drawn_card", "called", "exposed", "previous_player",
                "turn_fresh", "color_then_play", "scores", "dealer", "round", "decisions",
                "winner", "terminated", "truncated")
"""The keys of a position that a resampled world keeps as the deal has them (what the acting
seat knows, and its drawn card), beside the hands' and the stock's sizes and its own hand."""


def _check_world(position: Any, deal: dict[str, Any]) -> None:
    """``ValueError`` unless a serialised resampled world's ``position`` agrees with the deal
    its actions replay (``deal``, the replayed position) in all that the acting seat knows,
    as :meth:`OnoState.resample_from_infostate` makes a world: before, a position of another
    seat's turn, scores or discard pile loaded, and its ``current_player()`` and legal
    actions then told two games apart."""
    def agrees(key: str, mine: Any, theirs: Any) -> None:
        if mine != theirs:
            raise ValueError(f"{GAME_NAME}: serialised state: the position's {key} "
                             f"({shown(mine, 60)}) is not the replayed deal's ({shown(theirs, 60)}); "
                             f"allowed: a world that agrees with all the acting seat knows, "
                             f"as resample_from_infostate makes it")

    if not isinstance(position, dict):
        raise ValueError(f"{GAME_NAME}: serialised state position: allowed: a position "
                         f"(an object) or null")
    for key in _PUBLIC_KEYS:
        agrees(key, position.get(key), deal[key])
    hands, stock = position.get("hands"), position.get("stock")
    if not isinstance(hands, list) or not all(isinstance(h, list) for h in hands) \
            or not isinstance(stock, list):
        raise ValueError(f"{GAME_NAME}: serialised state position: its hands and stock are "
                         f"lists of cards")
    agrees("hand sizes", [len(h) for h in hands], [len(h) for h in deal["hands"]])
    agrees("stock size", len(stock), len(deal["stock"]))
    me = deal["current_player"]   # a hand is counts: its cards in any order
    agrees(f"hand of the acting player {me}", sorted(map(str, hands[me])),
           sorted(deal["hands"][me]))


def _check_knowledge(s: Any, me: int) -> None:
    """``ValueError`` unless a world's hands hold what the deal's record says of them (row 0
    of state ``s``, its record put back): every card the acting seat ``me`` knows a hand
    holds, and no more cards of the types a hand is publicly known to lack than it was
    given since (``S_LACKS`` covers ``S_KNOWN`` of its cards). Before, a world with a known
    card swapped for a stock card loaded, and every resample of it kept the card."""
    NC = C.NUM_CARD_TYPES
    hands, pl = s.hands[0].astype(np.int64), s.pl[0].astype(np.int64)
    for q in range(hands.shape[0]):
        seen = pl[me, E.S_SEEN + NC * q:E.S_SEEN + NC * (q + 1)]
        if q != me and (hands[q] < seen).any():
            c = int(np.flatnonzero(hands[q] < seen)[0])
            raise ValueError(f"{GAME_NAME}: serialised state: player {q}'s hand holds "
                             f"{hands[q, c]} {C.CARD_NAMES[c]}, "
                             f"the acting player {me} knows it holds {seen[c]}; allowed: a "
                             f"world that agrees with all the acting seat knows")
        # the card types of its lacks code, by the engine's own table (_lacks, per card)
        lacked = (pl[q, E.S_LACKS] & E._CARD_LACKS.astype(np.int64)) != 0
        of = int(hands[q, lacked].sum())
        if of > pl[q, E.S_HAND_LEN] - pl[q, E.S_KNOWN]:
            raise ValueError(f"{GAME_NAME}: serialised state: player {q}'s hand holds {of} "
                             f"cards of types it is known to lack, more than the "
                             f"{pl[q, E.S_HAND_LEN] - pl[q, E.S_KNOWN]} it was given since; "
                             f"allowed: a world that agrees with all the acting seat knows")


class _Log(list):
    """An append-only list of immutable entries (tuples of ints and bytes, strings) that a
    state's ``clone`` copies shallowly: the entries are shared, the list is the clone's own.
    OpenSpiel clones a Python state by deep-copying each attribute, which would walk every
    entry of a long game's logs."""

    def __deepcopy__(self, memo: dict) -> _Log:
        return _Log(self)


class _SeatRecord:
    """Where a seat's text stopped in the logs (``h``, ``s``), the hands and S_SEEN bytes
    as of there, its last (hand, seen) part, and its text so far (``pieces``, and their
    join, kept until a piece is added)."""

    __slots__ = ("h", "hands", "joined", "joined_count", "last", "pieces", "s", "seen")

    def __init__(self, h: int = 0, s: int = 0) -> None:
        self.h, self.s = h, s
        self.hands: bytes | None = None
        self.seen: bytes | None = None
        self.last: tuple[bytes, bytes] | None = None
        self.pieces = _Log()
        self.joined, self.joined_count = "", 0

    def __deepcopy__(self, memo: dict) -> _SeatRecord:
        out = _SeatRecord(self.h, self.s)
        out.hands, out.seen, out.last = self.hands, self.seen, self.last   # immutable
        out.pieces = _Log(self.pieces)
        out.joined, out.joined_count = self.joined, self.joined_count
        return out


def _cards(counts: np.ndarray) -> str:
    """Card counts (56,) as names, each copy once: ``R5 R5 YS``."""
    return " ".join(C.CARD_NAMES[c] for c in np.flatnonzero(counts) for _ in range(int(counts[c])))


def _player_arg(seat: Any, n: int, what: str, given: Any = None, hint: str = "") -> int:
    """A seat given for ``what`` as an ``int`` from 0 to ``n - 1``, else ``ValueError``
    naming the player as given (``given``, where it differs from ``seat``): a negative seat
    indexed the seats' records from their end (another seat's private view)."""
    if not is_int(seat) or not 0 <= seat < n:
        player = seat if given is None else given
        raise ValueError(f"{GAME_NAME}: {what} of player {shown(player, 40)}; allowed: a player 0 "
                         f"to {n - 1}{hint}")
    return int(seat)


def _action_arg(where: str, action: Any) -> int:
    """An action given to ``where`` as an ``int``: a Python or NumPy integer (not a bool),
    else ``TypeError``, from 0 to 84, else ``ValueError``; whether it is legal in the
    position is the engine's to say."""
    allowed = (f"an action id, a Python or NumPy integer 0..{C.NUM_ACTIONS - 1} (one of "
               f"legal_actions())")
    if not is_int(action):
        raise TypeError(f"{where}(action={shown(action, 40)}); allowed: {allowed}")
    if not 0 <= action < C.NUM_ACTIONS:
        raise ValueError(f"{where}(action={shown(action, 40)}); allowed: {allowed}")
    return int(action)


class OnoState(pyspiel.State):
    """One game: a one-game VecGame, the returns so far and the action history."""

    def __init__(self, game: OnoGame, seed: int | None) -> None:
        super().__init__(game)
        if seed is None:   # the shell of a clone: OpenSpiel copies the original's attributes in
            return
        self.rules = game.rules
        self.engine = VecGame(game.rules, 1, seed=seed, reward=game.reward,
                              max_decisions=game.max_decisions)
        # a _Log: a clone shares its strings (before: deep-copied one by one, 4-9 ms a clone
        # at 20,000 actions, most of an ISMCTS step's time late in a long match)
        self.history_names: list[str] = _Log()
        self._returns = np.zeros(game.rules.num_players)
        self._last = np.zeros(game.rules.num_players)   # the last step's rewards
        self._done = False                                   # the engine's flags, kept
        self._current = int(self.engine.current_player[0])   # (OpenSpiel asks often)
        self.deal_seed = seed
        self.resampled = False   # a world of resample_from_infostate: not the deal's game
        self._resampled_at = 0   # the actions taken when it was resampled
        # what the seats privately see (their hands, and what each knows of the others':
        # S_SEEN), as the bytes of the engine's arrays, logged where any seat's changed with
        # the number of actions taken, and what each deal turned up (the discard pile and
        # the scores, public but named by no action); each seat's text is read from the
        # logs as it is asked for (private_text)
        self._hands_log = _Log()
        self._seen_log = _Log()
        self._deal_log = _Log()
        self._deal: tuple[int, bool] = (-1, False)
        self._records = [_SeatRecord() for _ in range(game.rules.num_players)]
        self._note_private(force=True)

    def __copy__(self) -> OnoState:
        """``copy.copy`` and ``copy.deepcopy`` give :meth:`clone` (before: OpenSpiel's
        "GetRNGState unimplemented")."""
        return self.clone()

    def __deepcopy__(self, memo: dict) -> OnoState:
        return self.clone()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as its game and :meth:`serialize`'s text, read back by
        ``game.deserialize_state`` (so nothing in a pickle of it runs but that); a resampled
        world that has played on is refused, as ``serialize`` refuses it."""
        return _state_from_text, (self.get_game(), self.serialize())

    def clone(self) -> OnoState:
        """A copy that plays alike and apart (OpenSpiel's copy of the attributes), which
        takes no deal of the game (``new_initial_state`` counts only the deals asked for)."""
        game, me = self.get_game(), threading.get_ident()
        game._cloning.add(me)
        try:
            return super().clone()
        finally:
            game._cloning.discard(me)

    # the tensors, read here (OpenSpiel's C++ sizes them by asking the game for a new state:
    # a deal for every read, and rl_environment reads them at every step)
    def observation_tensor(self, player: int | None = None) -> list[float]:
        return self._tensor(player)

    def information_state_tensor(self, player: int | None = None) -> list[float]:
        return self._tensor(player)

    def _tensor(self, player: int | None) -> list[float]:
        game = self.get_game()
        if player is None:
            self._someone_acts("a tensor")   # before: "a tensor of player -4"
        seat = self.current_player() if player is None else player
        seat = _player_arg(seat, self.rules.num_players, "a tensor", player,
                           " (none: the player to act, while one does)")
        obs = self.engine.observe(seat, version=game.observation_version)[0]
        return (obs / game.scale).tolist()

    def information_state_string(self, player: int | None = None) -> str:
        """OpenSpiel's, a ``player`` given checked first (``_player_arg``): OpenSpiel's
        own answered a player out of range with its C++ check's text."""
        if player is None:
            self._someone_acts("an information state string")
            return super().information_state_string()
        _player_arg(player, self.rules.num_players, "an information state string")
        return super().information_state_string(player)

    def observation_string(self, player: int | None = None) -> str:
        """OpenSpiel's, a ``player`` given checked first, as :meth:`information_state_string`."""
        if player is None:
            self._someone_acts("an observation string")
            return super().observation_string()
        _player_arg(player, self.rules.num_players, "an observation string")
        return super().observation_string(player)

    def _someone_acts(self, what: str) -> None:
        """``what`` of the player to act (no player given) needs one: at a finished game,
        ``ValueError`` (before: OpenSpiel's C++ check of player -4 for the strings)."""
        if self.is_terminal():
            raise ValueError(f"{GAME_NAME}: {what} of the player to act, in a game that has "
                             f"ended (no player acts); allowed: a player 0 to "
                             f"{self.rules.num_players - 1}")

    def legal_actions(self, player: int | None = None) -> list[int]:
        """OpenSpiel's ``legal_actions``, a ``player`` given checked first as the tensors'
        is (``_player_arg``): OpenSpiel's own answered ``[]`` for a player the game
        does not have (3 at a 3-player table) and its C++ text for a negative one."""
        if player is None:
            return super().legal_actions()
        self._legal_player(player, "legal_actions")
        return super().legal_actions(player)

    def legal_actions_mask(self, player: int | None = None) -> list[int]:
        """OpenSpiel's ``legal_actions_mask``, ``player`` checked as :meth:`legal_actions`
        checks it (OpenSpiel's own gave all zeros for player 3 at three players)."""
        if player is None:
            return super().legal_actions_mask()
        self._legal_player(player, "legal_actions_mask")
        return super().legal_actions_mask(player)

    def _legal_player(self, player: Any, what: str) -> None:
        """A player given to ``what``: a seat of the game, or the player to act (the
        terminal id at a finished game), else ``ValueError``."""
        if not (is_int(player) and player == self.current_player()):
            _player_arg(player, self.rules.num_players, what)

    def apply_action(self, action: int) -> None:
        """OpenSpiel's ``apply_action``, ``action`` checked first (``_action_arg``):
        OpenSpiel's own took ``True`` as action 1, and answered -1 or 2**64 with its C++
        checks' text."""
        super().apply_action(_action_arg("apply_action", action))

    def child(self, action: int) -> OnoState:
        """The state after ``action`` (``_action_arg``), a clone of this one (which takes
        no deal)."""
        action = _action_arg("child", action)
        out = self.clone()
        out.apply_action(action)
        return out

    def _note_private(self, force: bool = False) -> None:
        """Log the hands and the S_SEEN columns where either changed (``force``: now, as they
        are), and the discard pile and scores at the end of a round and at a new deal. A step
        costs two byte strings whatever the player count."""
        s = self.engine.state
        n = len(self.history_names)
        hands, seen = s.hands[0].tobytes(), s.pl[0, :, E.S_SEEN:].tobytes()
        if force or hands != self._hands_log[-1][1]:
            self._hands_log.append((n, hands))
        if force or seen != self._seen_log[-1][1]:
            self._seen_log.append((n, seen))
        deal = (int(s.round[0]), int(s.phase[0]) == E.PH_ROUND_END)
        if deal != self._deal:   # a round ended (the scores), or the next was dealt
            self._deal = deal
            pile = " ".join(C.CARD_NAMES[c] for c in s.discard[0, :int(s.discard_len[0])])
            scores = " ".join(str(int(x)) for x in s.scores[0])
            self._deal_log.append(f"{n}: discard {pile}; scores {scores}")

    def _forget_private(self, seats: list[int]) -> None:
        """Start the records of ``seats`` now, from the position as it is (a resampled world:
        what they saw before was of the deal's hidden cards, not the world's)."""
        for q in seats:
            self._records[q] = _SeatRecord(len(self._hands_log), len(self._seen_log))
        self._note_private(force=True)

    def private_text(self, player: int) -> str:
        """What the seat privately saw, each time it changed, as text: ``k: hand ...; P<q>
        holds ...`` (``k`` the number of actions taken before it), followed by what each deal
        turned up. The perfect-recall information state string holds it: the public
        history and the seat's current view alone do not say what it held or saw before (a
        card drawn and then played, a hand shown at a challenge or handed over in a swap,
        and then played away). Read from the logs where the last call stopped."""
        r = self._records[_player_arg(player, self.rules.num_players, "the private text")]
        H, S = self._hands_log, self._seen_log
        P, NC = self.rules.num_players, C.NUM_CARD_TYPES
        while r.h < len(H) or r.s < len(S):
            n = min(H[r.h][0] if r.h < len(H) else 1 << 62, S[r.s][0] if r.s < len(S) else 1 << 62)
            while r.h < len(H) and H[r.h][0] == n:   # the last entry of each log at step n
                r.hands = H[r.h][1]
                r.h += 1
            while r.s < len(S) and S[r.s][0] == n:
                r.seen = S[r.s][1]
                r.s += 1
            if r.hands is None or r.seen is None:
                continue
            w_h, w_s = len(r.hands) // P, len(r.seen) // P
            hand = r.hands[player * w_h:(player + 1) * w_h]
            seen = r.seen[player * w_s:(player + 1) * w_s]
            if (hand, seen) == r.last:
                continue
            r.last = (hand, seen)
            counts = np.frombuffer(hand, self.engine.state.hands.dtype)
            knows = np.frombuffer(seen, self.engine.state.pl.dtype)
            known = [f"P{q} holds {_cards(knows[NC * q:NC * (q + 1)])}"
                     for q in range(P) if knows[NC * q:NC * (q + 1)].any()]
            r.pieces.append("; ".join([f"{n}: hand {_cards(counts)}", *known]))
        if len(r.pieces) != r.joined_count:
            r.joined, r.joined_count = " | ".join(r.pieces), len(r.pieces)
        return f"{r.joined}\ndeals: {' | '.join(self._deal_log)}"

    def current_player(self) -> int:
        return int(pyspiel.PlayerId.TERMINAL) if self._done else self._current

    def chance_outcomes(self) -> list[tuple[int, float]]:
        """None to give: the game has no chance nodes (``ValueError``; OpenSpiel's base
        raised a bare "pure virtual function" ``RuntimeError``)."""
        raise ValueError(f"{GAME_NAME}: no chance nodes: the deal's seed fixes every shuffle "
                         f"(current_player() is never the chance player)")

    def player_return(self, player: int) -> float:
        """``returns()[player]``, ``player`` checked first (``_player_arg``): OpenSpiel's
        base answered one out of range with its C++ check's text."""
        return self.returns()[_player_arg(player, self.rules.num_players, "player_return")]

    def player_reward(self, player: int) -> float:
        """``rewards()[player]``, ``player`` checked as :meth:`player_return` checks it."""
        return self.rewards()[_player_arg(player, self.rules.num_players, "player_reward")]

    def apply_actions(self, actions: Any) -> None:
        """None to apply: a sequential game takes one action at a time (``ValueError``;
        OpenSpiel's base raised a bare "pure virtual function" ``RuntimeError``)."""
        raise ValueError(f"{GAME_NAME}: apply_actions is for simultaneous moves; allowed: "
                         f"apply_action(action) of the player to act (the game is sequential)")

    def distribution_support(self) -> list[str]:
        """None to give: the game is no mean-field game (``ValueError``, as
        :meth:`chance_outcomes`)."""
        raise ValueError(f"{GAME_NAME}: distribution_support is for mean-field games; this "
                         f"game has no distribution (it is sequential, without chance nodes)")

    def _legal_actions(self, player: int) -> list[int]:
        if player != self.current_player():
            return []
        return np.flatnonzero(self.engine.legal_mask()[0]).tolist()

    def _apply_action(self, action: int) -> None:
        if self._done:   # the engine ignores a finished game's row: say so, change nothing
            raise ValueError(f"{GAME_NAME}: the game is over (is_terminal()); no action may "
                             f"be applied")
        seat = self._current
        before = (None if self.get_game().reward == "win"   # the scores, for points rewards
                  else self.engine.state.pl[0, :, E.S_SCORE].astype(np.int64))
        result = self.engine.step(np.array([action], np.int64))   # ValueError if illegal
        self._last = self._exact(result.rewards[0], before)
        self._returns += self._last
        self._done = bool(result.terminated[0] or result.truncated[0])
        self._current = int(result.current_player[0])
        self.history_names.append(f"P{seat} {C.ACTION_NAMES[action]}")
        self._note_private()

    def _exact(self, rewards: np.ndarray, before: np.ndarray | None) -> np.ndarray:
        """The engine's float32 rewards in float64, summing to 0 as OpenSpiel checks: the
        win rewards exactly (k winners +1/k, the others -1/(N-k), as ``VecGame`` pays them),
        the points rewards (``before``: the seats' scores before the step; None in a game of
        win rewards) from the seats' integer score changes since then, as the engine pays
        them: a gain under winner scoring, a loss under penalty scoring, centred, times 0.01
        (before: the engine's float32 centred again, -0.2800000011920929 for -0.28)."""
        r = rewards.astype(np.float64)
        if before is not None:
            gain = self.engine.state.pl[0, :, E.S_SCORE].astype(np.int64) - before
            if self.rules.scoring == "penalty":
                gain = -gain
            return (gain - gain.mean()) / round(1 / E.POINTS_REWARD_SCALE)
        if not r.any():
            return r
        win = r > 0
        k, n = int(win.sum()), len(r)
        return np.where(win, 1.0 / k, np.where(r < 0, -1.0 / (n - k), 0.0))

    def action_to_string(self, *args: Any) -> str:
        """OpenSpiel's ``action_to_string(player, action)`` or ``(action)`` (the player to
        act), both checked here first: OpenSpiel's converted the arguments before the game
        saw them, so ``True`` was read as player or action 1, and a float gave pybind's
        ``TypeError`` listing its signatures."""
        if len(args) not in (1, 2):
            raise TypeError(f"action_to_string takes (player, action) or (action); got "
                            f"{len(args)} arguments")
        player, action = (self.current_player(), args[0]) if len(args) == 1 else args
        if not is_int(player):
            raise TypeError(f"{GAME_NAME}: an action's name of player {shown(player, 40)}; "
                            f"allowed: a player 0 to {self.rules.num_players - 1}, a Python or "
                            f"NumPy integer")
        return self._action_to_string(int(player), _action_arg("action_to_string", action))

    def _action_to_string(self, player: int, action: int) -> str:
        if player != self.current_player():   # the acting player's or the terminal id
            _player_arg(player, self.rules.num_players, "an action's name")
        if not 0 <= action < C.NUM_ACTIONS:   # a negative index would name another action
            raise ValueError(f"{GAME_NAME}: action {action}; allowed: 0 to {C.NUM_ACTIONS - 1}")
        return C.ACTION_NAMES[action]

    def is_terminal(self) -> bool:
        return self._done

    def returns(self) -> list[float]:
        return self._returns.tolist()

    def rewards(self) -> list[float]:
        """The last step's rewards (``points``: paid at the end of every round); with the
        terminal ``win`` rewards, the returns once the game is over."""
        if self.get_game().reward != "win":
            return self._last.tolist()
        return self._returns.tolist() if self.is_terminal() else [0.0] * len(self._returns)

    def __str__(self) -> str:
        return self.engine.to_json(0)

    def serialize(self) -> str:
        """JSON of the game's rules, ``reward`` and ``max_decisions``, the deal's seed and the
        actions taken (and, for a resampled world, its position): ``game.deserialize_state``
        replays it. ``ValueError`` for a resampled
        world that has played on since it was made: its later actions were taken on the
        world's cards, which a replay of the deal does not hold."""
        import json

        if self.resampled and len(self.history_names) != self._resampled_at:
            raise ValueError(f"{GAME_NAME}: a resampled world that has played on since it was "
                             f"made ({len(self.history_names) - self._resampled_at} actions) "
                             f"cannot be serialised: a replay of the deal would not hold its "
                             f"cards; allowed: the world as resample_from_infostate gave it, "
                             f"or any state of the deal itself")
        game = self.get_game()
        return json.dumps({"version": SERIAL_VERSION, "rules": self.rules.to_dict(),
                           "reward": game.reward, "max_decisions": game.max_decisions,
                           "seed": self.deal_seed,
                           "actions": [int(a) for a in self.history()],
                           "position": self.engine.to_dict(0) if self.resampled else None})

    def resample_from_infostate(self, player_id: int, probability_sampler: Any) -> OnoState:
        """A state that agrees with all the acting seat ``player_id`` knows, its hidden cards
        dealt afresh (see the module's docstring); ``probability_sampler()`` gives the
        uniform draw it is dealt from."""
        if self._done:   # the terminal pseudo-player is no seat to resample for
            raise ValueError(f"{GAME_NAME}: resample_from_infostate of a finished game; "
                             f"allowed: a state where a player is to act")
        player_id = _player_arg(player_id, self.rules.num_players, "resample_from_infostate")
        if player_id != self.current_player():   # before: True and 1.0 were player 1
            raise ValueError(f"{GAME_NAME}: resample_from_infostate for player {player_id}; "
                             f"allowed: the acting player ({self.current_player()})")
        if not callable(probability_sampler):   # before: "'NoneType' object is not callable"
            raise ValueError(f"{GAME_NAME}: resample_from_infostate's probability_sampler = "
                             f"{shown(probability_sampler, 40)}; allowed: a function that gives "
                             f"a uniform draw in [0, 1)")
        from ono_env.agents import _search as K

        game = self.engine
        P, D = game.num_players, game.rules.deck_size
        view = E.State(1, P, D).arrays
        kernel_entry(K.seat_view)(*game.state.arrays, np.zeros(1, np.int64), K.VIEW_FAIR,
                                  *view)
        u = probability_sampler()
        if not isinstance(u, (float, int, np.floating, np.integer)) or isinstance(u, bool) \
                or not 0.0 <= u < 1.0:   # also refuses nan
            raise ValueError(f"{GAME_NAME}: probability_sampler() gave {shown(u, 40)}; allowed: a "
                             f"uniform draw, a number in [0, 1)")
        seed = np.array([int(u * 2**53)], np.uint64)
        world = E.State(1, P, D).arrays
        kernel_entry(K.sample_worlds)(*view, game.internals.params, seed, K.VIEW_FAIR, *world,
                                      np.zeros(C.NUM_CARD_TYPES, np.int64), np.zeros(D, np.int8),
                                      np.zeros(2, np.uint64))
        out = self.clone()
        for mine, sampled in zip(out.engine.state.arrays, world):
            mine[...] = sampled
        out.engine.internals.mask_changed()
        out.resampled = True
        out._resampled_at = len(out.history_names)
        # the other seats' records held the deal's hidden cards: each starts from what it
        # holds and knows in this world now (the acting seat's is what it saw, kept)
        out._forget_private([q for q in range(P) if q != player_id])
        return out


def _state_from_text(game: OnoGame, text: str) -> OnoState:
    """What a pickled :class:`OnoState` is read back with."""
    return game.deserialize_state(text)


class OnoObserver:
    """OpenSpiel's observer of the game: ``tensor`` is the seat's observation divided by
    :func:`~ono_env.observation.observation_scale` (each count divided by a typical size, a
    hand size by 10, so that most lie in [0, 1] and a large hand reads above 1; as the
    project's learned agents see it: OpenSpiel's learners do not normalise their inputs);
    :func:`ono_env.observation.observation_view` names its parts. ``dict`` holds it whole
    as ``"observation"``. ``version``: the observation's layout (the game's
    ``observation_version``)."""

    def __init__(self, rules: RuleSet, perfect_recall: bool, version: int = 1) -> None:
        self.version = version
        self.tensor = np.zeros(observation_size(rules, version), np.float32)
        self.dict = {"observation": self.tensor}
        self.perfect_recall = perfect_recall
        self.scale = observation_scale(rules, version)
        self.rules = rules

    def set_from(self, state: OnoState, player: int) -> None:
        state = _state_of(self.rules, state, "an observation")   # before: another table's
        player = _player_arg(player, state.rules.num_players, "an observation")
        np.divide(state.engine.observe(player, version=self.version)[0], self.scale,
                  out=self.tensor)

    def string_from(self, state: OnoState, player: int) -> str:
        state = _state_of(self.rules, state, "an observation string")
        player = _player_arg(player, state.rules.num_players, "an observation string")
        view = render_text(state.engine, 0, seat=player)
        if self.perfect_recall:
            return (f"{view}\nhistory: {'; '.join(state.history_names)}\n"
                    f"seen: {state.private_text(player)}")
        return view


def export_policy_gradient(agent: Any, game: OnoGame, path: str, *, training_steps: int,
                           label: str | None = None) -> str:
    """Write the policy of an OpenSpiel PyTorch ``PolicyGradient`` agent
    (``open_spiel.python.pytorch.policy_gradient``) trained on ``game``'s information-state
    tensors as a project model file (``.safetensors``; see docs/model-files.md), so that
    ``make_agent(path, rules)``, ``ono-arena`` and the browser table play it. Its torso
    (Linear + ReLU layers) and logits head become the policy network, its baseline head
    (``a2c``, ``rpg``, ...: a one-output critic) the value network; the observation is the
    project's in the game's ``observation_version`` divided by ``observation_scale`` (the
    tensor this game hands OpenSpiel), so the model stores that version and scale (a
    version-2 model plays at every table its observation covers). Reads the agent's
    layers by their attribute names in OpenSpiel 2.0, which has no public accessor for them;
    ``ValueError`` for an agent of another shape. Returns the path written."""
    from ono_env.agents.learned import PolicyNet, net_metadata, write_model

    def linear(layer: Any) -> tuple[np.ndarray, np.ndarray]:
        return (layer.weight.detach().cpu().numpy().astype(np.float32).copy(),
                layer.bias.detach().cpu().numpy().astype(np.float32).copy())

    try:
        torso = [linear(block[0]) for block in agent._net_torso.model]
        head = linear(agent._policy_logits_layer)
    except (AttributeError, IndexError, TypeError) as exc:
        raise ValueError(f"{type(agent).__name__}: not an OpenSpiel PyTorch PolicyGradient "
                         f"agent with an MLP torso ({exc})") from None
    if isinstance(training_steps, bool) or not isinstance(training_steps, (int, np.integer)) \
            or training_steps < 0:
        raise ValueError(f"training_steps={shown(training_steps, 40)}; allowed: a whole number >= 0 "
                         f"(the decisions the agent was trained on)")
    critic = getattr(agent, "_baseline_layer", None)
    value = None if critic is None else [*torso, linear(critic)]
    version = game.observation_version
    size = observation_size(game.rules, version)
    if not torso or torso[0][0].ndim != 2 or torso[0][0].shape[1] != size:
        got = torso[0][0].shape[1:] if torso else "no torso"
        # the table, not str(game): every parameter, about 700 characters that hid the sizes
        raise ValueError(f"{type(agent).__name__}: a network for {got} inputs; this game "
                         f"({game.rules.name}, {game.rules.num_players} players, observation "
                         f"version {version}) has information-state tensors of ({size},): "
                         f"export the agent with the game it was trained on")
    net = PolicyNet(observation_scale(game.rules, version), [*torso, head], "relu", value)
    if net.observation_size != size or net.num_actions != C.NUM_ACTIONS:
        raise ValueError(f"{type(agent).__name__}: a network for ({net.observation_size},) "
                         f"inputs and {net.num_actions} actions; this game has ({size},) and "
                         f"{C.NUM_ACTIONS}")
    meta = net_metadata(net, game.rules, training_steps,
                        {"trainer": "open_spiel.python.pytorch.policy_gradient", "game": str(game)},
                        label=label, observation_version=version)
    return str(write_model(path, net, meta))


class AgentBot(pyspiel.Bot):
    """One of the project's agents as an OpenSpiel bot, for ``evaluate_bots`` and anything
    else that takes a ``pyspiel.Bot``: ``AgentBot("ppo-any", game, player_id=0)``.

    ``agent`` is what :func:`~ono_env.agents.registry.make_agent` takes (a name such as ``ppo-any``,
    ``greedy`` or ``pimc:64``, a model file's path, or an object with ``act``), made for
    ``game``'s rules, so the generalist and the baselines sit at any table this game can
    deal. ``step(state)`` decides for ``player_id`` as the terminal and browser tables ask
    an agent (:func:`ono_env.agents.driver.act_one`: the seat's observation in the agent's
    own layout, or, for a search agent, the seat's view of the game), checked against the
    legal actions. Every agent sees that seat's view only, but for the research ceilings
    (``oracle``, ``oracle-hands``, ``oracle-ppo``) and an agent of one's own that declares
    ``cheating``, which read every hand: ``cheating`` is then True and ``label`` says so.
    ``seed`` makes the generator the agent draws from (a search agent's worlds, a sampling
    policy's draws); it runs on from step to step and
    from game to game, so bots made with the same seed play the same moves over the same
    games (a search agent with a time budget, ``pimc:20ms``, excepted: how far it searches
    depends on the machine). A state of another game, rules that differ from the bot's
    (the fields that differ are named; the preset's name is not a rule), a finished game
    or another seat's turn is a ``ValueError``. The bot keeps no record of the game
    (``restart_at`` and ``inform_action`` do nothing) and offers no policy
    (``provides_policy()`` is False: a deterministic learned agent plays its most probable
    action, not a draw from its probabilities)."""

    def __init__(self, agent: Any, game: OnoGame, player_id: int, seed: int = 0) -> None:
        pyspiel.Bot.__init__(self)
        from ono_env.agents.base import agent_label, is_cheating, marked
        from ono_env.agents.registry import make_agent
        from ono_env.checks import check_seed

        if not isinstance(game, OnoGame):
            raise ValueError(f"AgentBot: a game of type {type(game).__name__}; allowed: a "
                             f"{GAME_NAME} game (pyspiel.load_game({GAME_NAME!r}, ...))")
        players = game.rules.num_players
        if isinstance(player_id, bool) or not isinstance(player_id, (int, np.integer)) \
                or not 0 <= player_id < players:
            raise ValueError(f"AgentBot: player_id={shown(player_id, 40)}; allowed: a seat 0 to "
                             f"{players - 1} of this {players}-player game")
        self.rules = game.rules
        self.player_id = int(player_id)
        self.agent = make_agent(agent, game.rules)
        self.cheating = is_cheating(self.agent)
        """True for an agent that reads every hand (the research ceilings)."""
        self.label = marked(agent_label(self.agent), self.cheating)
        self.rng = np.random.default_rng(check_seed("seed", seed, allow_none=False))

    def step(self, state: Any) -> int:
        from ono_env.agents.driver import act_one

        if not isinstance(state, OnoState):
            raise ValueError(f"AgentBot.step: a state of type {type(state).__name__}; "
                             f"allowed: a state of a {GAME_NAME} game")
        if state.rules != self.rules:   # the preset's name is no rule: only the fields count
            differ = [f"{k}={getattr(state.rules, k)!r} (the bot's {getattr(self.rules, k)!r})"
                      for k in state.rules.differing_fields(self.rules, skip=("name",))]
            if differ:
                raise ValueError(f"AgentBot.step: the state's rules differ from the bot's: "
                                 f"{', '.join(differ)}; allowed: a state of the bot's game's "
                                 f"rules (make the bot with the state's game)")
        if state.current_player() != self.player_id:
            now = ("the game is over" if state.is_terminal()
                   else f"it is player {state.current_player()}'s turn")
            raise ValueError(f"AgentBot.step: the bot plays player {self.player_id}, and "
                             f"{now}")
        return act_one(self.agent, self.label, state.engine, self.rng)[0]

    def restart_at(self, state: Any) -> None:
        pass

    def restart(self) -> None:
        pass

    def inform_action(self, state: Any, player_id: int, action: int) -> None:
        pass

    def provides_policy(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"AgentBot({self.label!r}, player_id={self.player_id})"


def register() -> None:
    """Register ``python_ono`` with OpenSpiel (once; importing this module does it)."""
    if GAME_NAME not in pyspiel.registered_names():
        pyspiel.register_game(_GAME_TYPE, OnoGame)


register()
