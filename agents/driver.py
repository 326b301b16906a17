"""The one loop that plays agents over the acting seats of a batch of games.

``AgentDriver(game, agents)`` knows, for every game and seat, which agent plays it
(``seat_agent[i, s]``: an index into ``agents``, or -1 for a seat it does not play, such as
a learner's). ``play()`` steps every unfinished game whose acting seat it plays until each
game is finished or waiting for a seat it does not play. The arena drives every seat; the
environments drive the opponents of a learner.

Compiled baselines: an agent whose type is exactly :class:`~ono_env.agents.base.RandomAgent`,
``GreedyAgent``, ``ColorControlAgent`` or ``DefensiveAgent`` (agents/rule_based.py; for
these three, built for the game's very rules) is played in compiled code
(``ono_env.agents._baselines``, imported on first use): ``play`` alternates between one kernel
call that plays every game until it waits on a seat of a Python agent (or a seat the
driver does not play) or is finished, and one batch step of the Python agents on the games
waiting for them. The compiled baselines make the NumPy agents' decisions (the same
scores) but break ties, and the random agent draws, from :attr:`AgentDriver.policy_rng`
(one generator state per game, reseeded by :meth:`AgentDriver.seed_games`), not from the Python
generator ``rng``, which they do not consume. When the only agent is the random one and
each game has at most one seat the driver does not play, the loop is
``VecGame.play_random_until`` (the same draws). A subclass of these agents, or one built for
other rules, is a Python agent.

Python agents: each step encodes observations once for the agents that read them, asks
each agent for the rows it plays, checks every action against the legal mask, and steps the
batch. An agent with ``uses_game = True`` (the search agents, :mod:`ono_env.agents.search`)
is asked ``act_game(game, rows, rng)`` instead of ``act``: a ``SearchAgent`` itself (not a
subclass, no method set on the instance) receives the live game and copies the seat's view
of those rows as its first step; another game agent that declares no ``cheating`` receives
worlds dealt from that view
(:func:`~ono_env.agents.search.game_actions`); its actions are checked the same way.

``agents`` and ``seat_agent`` may change between calls to ``play`` (the opponents of a
learner change at every deal); ``play`` refuses a ``seat_agent`` entry that names no agent
rather than leave a row without an action.

Recording: ``driver.recording[i] = Replay.start(...)`` makes ``play`` add every decision of
game ``i`` to that replay, with what the acting agent reported where it can
(:func:`~ono_env.replay.agent_thinking`, under the replay's label of the seat that acted).
Recorded games take the same actions as unrecorded ones: their compiled decisions are played
one at a time through the same kernel (the same generator, the same choice), so recording
changes no result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ono_env import cards as C
from ono_env.agents.base import (
    Agent,
    RandomAgent,
    agent_label,
    checked_actions,
    explainer,
    named,
    observation_version,
    plays_from_game,
    uses_observation,
)
from ono_env.agents.rule_based import ColorControlAgent, DefensiveAgent, GreedyAgent
from ono_env.agents.search import game_actions
from ono_env.checks import add_note, check_rng, shown
from ono_env.game import GameInternals, VecGame
from ono_env.observation import observation_size
from ono_env.replay import Replay, agent_thinking, search_thinking

_COMPILED = {RandomAgent: "random", GreedyAgent: "greedy", ColorControlAgent: "color",
             DefensiveAgent: "defensive"}
"""Agent types played in compiled code -> their policy name (codes: ono_env.agents._baselines)."""

RAW64 = (np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64)
"""Bit generators whose raw output (``random_raw``) is one 64-bit word per draw, as
``Generator.integers`` reads them (MT19937's is a 32-bit word: it is asked through
``integers``)."""

_BASELINES: Any = None


def _baselines() -> Any:
    """``ono_env.agents._baselines``, imported (so its kernels loaded, prebuilt or from numba's
    cache, or compiled) on first use."""
    global _BASELINES
    if _BASELINES is None:
        from ono_env.agents import _baselines as K
        _BASELINES = K
    return _BASELINES


class AgentDriver:
    """Plays ``agents`` over the seats of ``game`` given by ``seat_agent`` ((B, P) int64,
    -1 = not played by the driver; all -1 until set)."""

    short_paths = True
    """False: :meth:`play` takes its long way, which the short one must match decision for
    decision (tests compare them): the Python loop after the compiled moves even where every
    agent is compiled, and every Python agent asked in turn."""

    def __init__(self, game: VecGame, agents: Sequence[Agent]) -> None:
        # before: an AttributeError from None, and from a name at the first step
        if not isinstance(game, VecGame):
            raise ValueError(f"AgentDriver: game is a {type(game).__name__}; allowed: a VecGame")
        if isinstance(agents, (str, bytes)) or not isinstance(agents, Sequence):
            raise ValueError(f"AgentDriver: agents={shown(agents, 40)}; allowed: a list of agent "
                             f"objects")
        for k, agent in enumerate(agents):
            _check_agent_object(agent, f"AgentDriver: agents[{k}]", f"= {shown(agent, 40)}")
        self.game = game
        self.agents = list(agents)
        B, P = game.num_games, game.num_players
        self.seat_agent = np.full((B, P), -1, np.int64)
        self._obs_by_version: dict[int, np.ndarray] = {}
        self._actions = np.zeros(B, np.int64)
        self._rows = np.arange(B)
        self._rewards = np.zeros((B, P), np.float64)
        self._stop_seat = np.zeros(B, np.int64)
        self._all = np.ones(B, np.bool_)
        self._one = np.zeros(B, np.bool_)
        self._last = np.full(B, -1, np.int64)
        self._sc = np.zeros(C.NUM_ACTIONS, np.float64)
        self._tmp = np.zeros(16, np.float64)
        self.policy_rng = np.zeros(B, np.uint64)
        """(B,) generator states of the compiled agents (random draws, the baselines' tie
        breaks), one per game (reseeded by :meth:`AgentDriver.seed_games`)."""
        self.recording: dict[int, Replay] = {}
        """Game index -> the replay its decisions are added to (see the module docstring)."""
        self._plan_of: tuple[tuple[Agent, ...], tuple[list[str | None], np.ndarray,
                                                       np.ndarray | None]] | None = None

    def seed_games(self, which: np.ndarray, rng: np.random.Generator) -> None:
        """New generator states for the compiled agents in the games ``which``: the values
        of ``rng.integers(0, 2**63, size=k, dtype=np.uint64)``. Where the bit generator's
        raw output is one 64-bit word a draw (:data:`RAW64`), those values are its next
        ``k`` raw words shifted right by one, for this power-of-two range (tests compare the
        two, values and the generator's state after), and are read that way: ``integers``
        costs about 7 us a call against 2, and a learner's table seeds a new deal at nearly
        every step. Any other generator is asked through ``integers``."""
        k = int(np.count_nonzero(which))
        if type(rng.bit_generator) in RAW64:
            self.policy_rng[which] = rng.bit_generator.random_raw(k) >> np.uint64(1)
        else:
            self.policy_rng[which] = rng.integers(0, 2**63, size=k, dtype=np.uint64)

    def _policy_name(self, agent: Agent) -> str | None:
        """The compiled policy that plays ``agent`` (None: a Python agent)."""
        name = _COMPILED.get(type(agent))
        if name is None or name == "random":
            return name
        return name if agent.rules == self.game.rules else None  # type: ignore[attr-defined]

    def _plan(self) -> tuple[list[str | None], np.ndarray, np.ndarray | None]:
        """For the agents now in ``agents``: each one's compiled policy name
        (:meth:`_policy_name`), ``python`` (which are Python agents; one more entry, False,
        for a seat not driven) and the policy code of each (None when all are Python
        agents). Kept for the same agent objects: a learner's opponents are asked this at
        every step, and comparing rule sets each time costs more than the compiled moves."""
        agents = tuple(self.agents)
        cached = self._plan_of
        if (cached is not None and len(cached[0]) == len(agents)
                and all(a is b for a, b in zip(cached[0], agents))):
            return cached[1]
        names = [self._policy_name(agent) for agent in agents]
        python = np.array([n is None for n in names] + [False])   # [-1]: a seat not driven
        codes = None
        if not python[:-1].all():
            K = _baselines()
            codes = np.array([K.POLICY_NONE if n is None else K.POLICY_CODES[n] for n in names]
                             + [K.POLICY_NONE], np.int64)
        self._plan_of = (agents, (names, python, codes))
        return names, python, codes

    def _all_random(self, driven: np.ndarray, names: list[str | None]) -> bool:
        """The random loop applies: one agent, the uniform random one, no game with more
        than one seat the driver does not play (the loop stops at one), nothing recorded."""
        return (len(names) == 1 and names[0] == "random" and not self.recording
                and bool(((~driven).sum(axis=1) <= 1).all()))

    def play(self, rng: np.random.Generator, rewards: np.ndarray | None = None) -> int:
        """Play the driven seats until every unfinished game waits for a seat the driver
        does not play (or every game is finished). Adds every seat's rewards from these steps
        to ``rewards`` ((B, P) float64) when given. Returns the number of decisions taken.

        ``rng`` is the generator of the Python agents; the compiled agents draw from
        ``policy_rng``."""
        check_rng("AgentDriver.play: rng", rng)   # before: read only where a Python agent drew
        game = self.game
        if rewards is None:
            rewards = self._rewards
        elif not (isinstance(rewards, np.ndarray) and rewards.dtype == np.float64
                  and rewards.shape == self._rewards.shape and rewards.flags.writeable):
            got = (f"{rewards.dtype} {rewards.shape}"
                   + ("" if rewards.flags.writeable else " (read-only)")
                   if isinstance(rewards, np.ndarray) else type(rewards).__name__)
            raise ValueError(f"rewards must be a writable {self._rewards.shape} float64 array; "
                             f"got {got}")
        sa = self.seat_agent
        shape = (game.num_games, game.rules.num_players)
        if not (isinstance(sa, np.ndarray) and sa.shape == shape and sa.dtype.kind in "iu"):
            # before: the compiled kernel read past a smaller array, and played on
            got = f"{sa.dtype} {sa.shape}" if isinstance(sa, np.ndarray) else type(sa).__name__
            raise ValueError(f"seat_agent must be a {shape} integer array (an agent index per "
                             f"game and seat, -1 for a seat the driver does not play); got {got}")
        if sa.size and (int(sa.max()) >= len(self.agents) or int(sa.min()) < -1):
            # before: -2 was read as another agent, -3 an IndexError
            bad = int(sa.max()) if int(sa.max()) >= len(self.agents) else int(sa.min())
            raise ValueError(f"seat_agent names agent {bad}; allowed: -1 (a seat the driver "
                             f"does not play) to {len(self.agents) - 1} (the driver has "
                             f"{len(self.agents)} agent(s))")
        # the compiled agents move the game outside its own calls: its lock is held meanwhile,
        # so that another thread's change is refused (before: 200,000 resets from another
        # thread were taken during one play)
        inner = game.internals   # one for the whole play
        with inner.changing():
            return self._drive(rng, rewards, inner)

    def _drive(self, rng: np.random.Generator, rewards: np.ndarray, inner: GameInternals) -> int:
        """:meth:`play` once its arguments are checked, the game's lock held."""
        game = self.game
        driven = self.seat_agent >= 0
        names, python, codes = self._plan()
        if self._all_random(driven, names):
            # The driver plays every seat but (at most) one per game: stop at that seat.
            self._stop_seat[:] = np.where(driven.all(axis=1), -1, np.argmin(driven, axis=1))
            return game.play_random_until(self._stop_seat, self.policy_rng, rewards)
        seat_policy = None
        if codes is not None:
            seat_policy = np.ascontiguousarray(codes[self.seat_agent])   # -1 -> POLICY_NONE
        taken = 0
        while True:
            if seat_policy is not None:
                taken += self._play_compiled(seat_policy, rewards, inner)
                if self.short_paths and not python[:-1].any():   # nothing Python plays
                    return taken
            current = game.state.current.astype(np.int64)
            who = self.seat_agent[self._rows, current]                 # (B,) agent index
            waiting = python[who] & ~game.finished
            if not waiting.any():
                return taken
            taken += self._python_step(rng, rewards, current, who, waiting, inner)

    def _python_step(self, rng: np.random.Generator, rewards: np.ndarray, current: np.ndarray,
                     who: np.ndarray, waiting: np.ndarray, inner: GameInternals) -> int:
        """One decision of the Python agents in every game ``waiting`` for one of them."""
        game = self.game
        mask = game.legal_mask(which=waiting)
        observed: set[int] = set()
        single = len(self.agents) == 1
        # the agents some waiting game asks, in the agents' order (the order they draw from rng)
        asked = (range(len(self.agents)) if not self.short_paths
                 else [0] if single else np.unique(who[waiting]).tolist())
        for j in asked:
            agent = self.agents[j]
            sel = waiting if single else waiting & (who == j)
            if not self.short_paths and not sel.any():   # the long way asks every agent
                continue
            version = observation_version(agent)
            reads = uses_observation(agent)
            obs = self._obs(version)
            if version not in observed and reads:
                game.observe(current, which=waiting, out=obs, version=version)
                observed.add(version)
            try:
                if plays_from_game(agent):
                    # a search agent: sees the game through its own seat view (agents/search.py)
                    self._actions[sel] = game_actions(agent, game, np.flatnonzero(sel),
                                                      mask[sel], rng)
                else:   # an agent that reads none gets zeros (before: the rows as the
                    # buffer held them, another seat's observation, its hand, often)
                    rows = (obs[sel] if reads
                            else np.zeros((int(sel.sum()), obs.shape[1]), obs.dtype))
                    self._actions[sel] = checked_actions(agent, rows, mask[sel], rng)
                for i in self.recording:   # what it reports of them (its explain's error named
                    if sel[i]:   # as the agent's, as its act's is)
                        self._record(i, agent, int(current[i]), mask[i], np.flatnonzero(sel))
            except SystemExit as exc:   # an agent's sys.exit (before: a console script
                # ended with its status, 0 too, and no word)
                raise RuntimeError(f"the agent {agent_label(agent)} called "
                                   f"sys.exit({shown(exc.code, 40)}) "
                                   f"while deciding; allowed: an agent that returns actions") from None
            except Exception as exc:   # which agent: a console script's one line names it
                label = agent_label(agent)   # (before: "RuntimeError: boom" alone)
                # named already as the project's checks name it ('e' (mine.E) chose ...), not
                # by any part of the message (before: the agent "e" was taken as named in
                # "late boom")
                if named(agent) not in str(exc) and repr(label) not in str(exc):
                    add_note(exc, f"raised by the agent {label}")
                raise
        # checked_actions verified every action against this mask
        result = inner.step_unchecked(self._actions, waiting)
        rewards += result.rewards
        return int(waiting.sum())

    def _play_compiled(self, seat_policy: np.ndarray, rewards: np.ndarray,
                       inner: GameInternals) -> int:
        """Every game plays its compiled seats until it waits on another seat or is
        finished (recorded games first, one decision at a time, through the same kernel)."""
        K, game = _baselines(), self.game
        out = rewards
        if not rewards.flags.c_contiguous:   # play() checked its dtype, shape and writability
            out = self._rewards
            out[:] = 0.0
        args = (*inner.state_args, seat_policy, self.policy_rng)
        scratch = (inner.scratch_rewards, self._sc, self._tmp, self._last)
        taken = 0
        for i, replay in self.recording.items():
            one = self._one
            one[:] = False
            one[i] = True
            while not game.finished[i]:
                seat = int(game.state.current[i])
                if seat_policy[i, seat] < 0:
                    break
                j = int(self.seat_agent[i, seat])
                agent = self.agents[j]
                mask_row = game.legal_mask(which=one)[i].copy()
                obs = self._obs(observation_version(agent))
                if explainer(agent) is not None:
                    game.observe(seat, which=one, out=obs, version=observation_version(agent))
                done = int(K.policy_moves(*args, one, 1, out, *scratch))
                inner.mask_changed()
                if done == 0:
                    break
                replay.add(int(self._last[i]), agent_thinking(agent, replay.players[seat], obs[i],
                                                              mask_row))
                taken += done
        taken += int(K.policy_moves(*args, self._all, -1, out, *scratch))
        inner.mask_changed()
        if out is not rewards:
            rewards += out
        return taken

    def _obs(self, version: int) -> np.ndarray:
        """The observation buffer of layout ``version`` (made on first use)."""
        buf = self._obs_by_version.get(version)
        if buf is None:
            buf = np.zeros((self.game.num_games, observation_size(self.game.rules, version)),
                           np.float32)
            self._obs_by_version[version] = buf
        return buf

    def _record(self, i: int, agent: Agent, seat: int, mask_row: np.ndarray,
                rows: np.ndarray) -> None:
        # labelled by the seat that acted, as the replay names it (before: by the agent's first
        # seat, so one agent object given twice had every decision labelled "<label>#1")
        label = self.recording[i].players[seat]
        if plays_from_game(agent):   # its values for the rows it was just asked
            thinking: dict[str, Any] | None = _game_thinking(
                agent, label, int(np.searchsorted(rows, i)), mask_row)
        else:
            thinking = agent_thinking(agent, label, self._obs(observation_version(agent))[i],
                                      mask_row)
        self.recording[i].add(int(self._actions[i]), thinking)


def _game_thinking(agent: Any, label: str, k: int, mask_row: np.ndarray) -> dict[str, Any] | None:
    """What a search agent reported of the ``k``-th row it was just asked
    (:func:`~ono_env.replay.search_thinking` of its ``last_values`` row); None for a game
    agent that keeps no such values (before: an ``AttributeError`` or ``TypeError`` after it
    had decided), one ``ValueError`` for values of another shape."""
    values = getattr(agent, "last_values", None)
    if values is None:
        return None
    if (not isinstance(values, np.ndarray) or values.ndim != 2 or not k < len(values)
            or values.shape[1] != len(mask_row)):
        what = (f"{values.dtype} {values.shape}" if isinstance(values, np.ndarray)
                else type(values).__name__)
        raise ValueError(f"{named(agent)}: last_values is {what}; allowed: None, or an array of a row "
                         f"of {len(mask_row)} values for each game it was just asked")
    return search_thinking(label, values[k], mask_row)


def _check_agent_object(agent: Any, where: str, shown_as: str) -> None:
    """``ValueError`` (``where`` first, the agent as ``shown_as``) where ``agent`` is not an
    agent object: a class, which has ``act`` too (before: a ``TypeError`` at its first
    decision), or an object without an ``act`` method."""
    if isinstance(agent, type):
        what = f"is the class {agent.__name__} itself"
    elif not callable(getattr(agent, "act", None)):
        what = f"{shown_as} has no act method"
    else:
        return
    raise ValueError(f"{where} {what}; allowed: an agent object (make_agent(name, rules) makes "
                     f"one from a name)")


def act_one(agent: Agent, label: str, game: VecGame,
            rng: np.random.Generator) -> tuple[int, dict | None]:
    """The decision of ``agent`` for the acting seat of a one-game ``game`` (the terminal and
    web tables), checked against the legal actions, and what the agent reported of it
    (:func:`~ono_env.replay.agent_thinking`, or for a search agent
    :func:`~ono_env.replay.search_thinking`)."""
    if not isinstance(game, VecGame) or game.num_games != 1:
        what = (f"a VecGame of {game.num_games} games" if isinstance(game, VecGame)
                else f"a {type(game).__name__}")
        raise ValueError(f"act_one: game is {what}; allowed: a VecGame of one game")
    _check_agent_object(agent, "act_one: agent", repr(agent))
    check_rng("act_one: rng", rng)
    mask = game.legal_mask().copy()
    if not mask.any():
        raise ValueError("act_one: the game is over (no legal action); allowed: a game still "
                         "in play (reset it to deal again)")
    if plays_from_game(agent):
        a = int(game_actions(agent, game, np.zeros(1, np.int64), mask, rng)[0])
        return a, _game_thinking(agent, label, 0, mask[0])
    obs = game.observe(int(game.state.current[0]), version=observation_version(agent))
    a = int(checked_actions(agent, obs, mask, rng)[0])
    return a, agent_thinking(agent, label, obs[0], mask[0])
