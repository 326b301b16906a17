"""The one loop that plays agents over the acting seats of a batch of games.

``AgentDriver(game, agents)`` knows, for every game and seat, which agent plays it
(``seat_agent[i, s]``: an index into ``agents``, or -1 for a seat it does not play, such as
a learner's). ``play()`` steps every unfinished game whose acting seat it plays until each
game is finished or waiting for a seat it does not play. The arena drives every seat; the
environments drive the opponents of a learner.

Each step encodes observations once for the agents that read them, asks each agent for the
rows it plays, checks every action against the legal mask, and steps the batch. When the
only agent is :class:`~ono_env.agents.RandomAgent` and each game has at most one seat the
driver does not play, the whole loop runs in compiled code (``VecGame.play_random_until``,
drawing from :attr:`AgentDriver.policy_rng` instead of the Python generator).

An agent with ``uses_game = True`` (the search agents, :mod:`ono_env.agents.search`) is
asked ``act_game(game, rows, rng)`` instead of ``act``: it receives the live game and copies
the seat's view of those rows as its first step; its actions are checked the same way.

``agents`` and ``seat_agent`` may change between calls to ``play`` (the opponents of a
learner change at every deal); ``play`` refuses a ``seat_agent`` entry that names no agent
rather than leave a row without an action.

Recording: ``driver.recording[i] = Replay.start(...)`` makes ``play`` add every decision of
game ``i`` to that replay, with what the acting agent reported where it can
(:func:`~ono_env.replay.agent_thinking`; ``driver.labels`` names the agents). Recorded games
take the same actions as unrecorded ones: in the compiled random loop they are played first,
one decision at a time in Python with the same generator and the same choice of legal action
(the ``k``-th legal action for ``k = next_u53 % count``), so recording changes no result.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ono_env._engine import _next_u53_py
from ono_env.agents.base import Agent, RandomAgent, checked_actions
from ono_env.agents.search import game_actions
from ono_env.game import VecGame
from ono_env.replay import Replay, agent_thinking, search_thinking


class AgentDriver:
    """Plays ``agents`` over the seats of ``game`` given by ``seat_agent`` ((B, P) int64,
    -1 = not played by the driver; all -1 until set)."""

    def __init__(self, game: VecGame, agents: Sequence[Agent]) -> None:
        self.game = game
        self.agents = list(agents)
        B, P = game.num_games, game.num_players
        self.seat_agent = np.full((B, P), -1, np.int64)
        self._obs = np.zeros((B, game.observation_size), np.float32)
        self._actions = np.zeros(B, np.int64)
        self._rows = np.arange(B)
        self._rewards = np.zeros((B, P), np.float64)
        self._stop_seat = np.zeros(B, np.int64)
        self.policy_rng = np.zeros(B, np.uint64)
        """(B,) generator states of the compiled random agent, one per game (reseeded by
        :meth:`seed_games`)."""
        self.recording: dict[int, Replay] = {}
        """Game index -> the replay its decisions are added to (see the module docstring)."""
        self.labels: list[str] | None = None
        """Labels of ``agents`` for the ``thinking`` of recorded decisions (default: repr)."""

    def seed_games(self, which: np.ndarray, rng: np.random.Generator) -> None:
        """New generator states for the compiled random agent in the games ``which``."""
        self.policy_rng[which] = rng.integers(0, 2**63, size=int(which.sum()), dtype=np.uint64)

    def _all_random(self, driven: np.ndarray) -> bool:
        """The compiled loop applies: one agent, the uniform random one, and no game with
        more than one seat the driver does not play (the compiled loop stops at one)."""
        return (len(self.agents) == 1 and type(self.agents[0]) is RandomAgent
                and bool(((~driven).sum(axis=1) <= 1).all()))

    def play(self, rng: np.random.Generator, rewards: np.ndarray | None = None) -> int:
        """Play the driven seats until every unfinished game waits for a seat the driver
        does not play (or every game is finished). Adds every seat's rewards from these steps
        to ``rewards`` ((B, P) float64) when given. Returns the number of decisions taken.

        ``rng`` is the generator of the Python agents; the compiled random agent draws from
        ``policy_rng``."""
        game = self.game
        if rewards is None:
            rewards = self._rewards
        if self.seat_agent.size and int(self.seat_agent.max()) >= len(self.agents):
            raise ValueError(f"seat_agent names agent {int(self.seat_agent.max())}; the driver "
                             f"has {len(self.agents)} agent(s)")
        driven = self.seat_agent >= 0
        if self._all_random(driven):
            # The driver plays every seat but (at most) one per game: stop at that seat.
            self._stop_seat[:] = np.where(driven.all(axis=1), -1, np.argmin(driven, axis=1))
            taken = self._play_recorded_random(rewards) if self.recording else 0
            return taken + game.play_random_until(self._stop_seat, self.policy_rng, rewards)
        taken = 0
        single = len(self.agents) == 1
        while True:
            current = game.state.current.astype(np.int64)
            who = self.seat_agent[self._rows, current]                 # (B,) agent index
            waiting = (who >= 0) & ~game.finished
            if not waiting.any():
                return taken
            mask = game.legal_mask(which=waiting)
            observed = False
            for j, agent in enumerate(self.agents):
                sel = waiting if single else waiting & (who == j)
                if not sel.any():
                    continue
                if not observed and getattr(agent, "uses_observation", True):
                    game.observe(current, which=waiting, out=self._obs)
                    observed = True
                if getattr(agent, "uses_game", False):
                    # a search agent: sees the game through its own seat view (agents/search.py)
                    self._actions[sel] = game_actions(agent, game, np.flatnonzero(sel),
                                                      mask[sel], rng)
                else:
                    self._actions[sel] = checked_actions(agent, self._obs[sel], mask[sel], rng)
                for i in self.recording:
                    if sel[i]:
                        self._record(i, agent, j, mask[i], np.flatnonzero(sel))
            # checked_actions verified every action against this mask
            result = game._step_unchecked(self._actions, waiting)
            taken += int(waiting.sum())
            rewards += result.rewards

    def _record(self, i: int, agent: Agent, j: int, mask_row: np.ndarray,
                rows: np.ndarray) -> None:
        label = self.labels[j] if self.labels is not None else repr(agent)
        if getattr(agent, "uses_game", False):   # its values for the rows it was just asked
            k = int(np.searchsorted(rows, i))
            thinking = search_thinking(label, agent.last_values[k], mask_row)
        else:
            thinking = agent_thinking(agent, label, self._obs[i], mask_row)
        self.recording[i].add(int(self._actions[i]), thinking)

    def _play_recorded_random(self, rewards: np.ndarray) -> int:
        """The compiled random loop's decisions of the recorded games, in Python: the same
        generator draw and the same legal action as ``_random_action`` in the engine."""
        game, taken = self.game, 0
        one = np.zeros(game.num_games, np.bool_)
        for i, replay in self.recording.items():
            one[:] = False
            one[i] = True
            while not game.finished[i] and int(game.state.current[i]) != self._stop_seat[i]:
                legal = np.flatnonzero(game.legal_mask(which=one)[i])
                if len(legal) == 0:
                    break
                self._actions[i] = legal[_next_u53_py(self.policy_rng, i) % len(legal)]
                rewards += game._step_unchecked(self._actions, one).rewards
                replay.add(int(self._actions[i]))
                taken += 1
        return taken


def act_one(agent: Agent, label: str, game: VecGame,
            rng: np.random.Generator) -> tuple[int, dict | None]:
    """The decision of ``agent`` for the acting seat of a one-game ``game`` (the terminal and
    web tables), checked against the legal actions, and what the agent reported of it
    (:func:`~ono_env.replay.agent_thinking`, or for a search agent
    :func:`~ono_env.replay.search_thinking`)."""
    mask = game.legal_mask().copy()
    if getattr(agent, "uses_game", False):
        a = int(game_actions(agent, game, np.zeros(1, np.int64), mask, rng)[0])
        return a, search_thinking(label, agent.last_values[0], mask[0])
    obs = game.observe(int(game.state.current[0]))
    a = int(checked_actions(agent, obs, mask, rng)[0])
    return a, agent_thinking(agent, label, obs[0], mask[0])
