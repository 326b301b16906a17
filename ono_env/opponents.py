"""Playing the opponents of a learner, in batch: shared by the Gymnasium env and the SB3 VecEnv.

Opponents are given as

- one agent (a name, a saved model's path, or a policy object) for every opponent seat;
- a list of N-1 of them, one per seat to the learner's left;
- an :class:`OpponentPool` (or a dict ``{agent: weight}``): every opponent seat of every
  game draws one member by weight each time the game is dealt. Members can be added and
  removed while training runs (league self-play adds frozen snapshots of the learner).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import math

import numpy as np

from ono_env.game import VecGame
from ono_env.agents.base import Agent
from ono_env.agents.registry import make_agent
from ono_env.driver import AgentDriver
from ono_env.rules import RuleSet


def _is_agent(spec: Any) -> bool:
    return isinstance(spec, str) or hasattr(spec, "act")


MAX_REDEALS = 10_000
"""Deals in a row that may end before the learner's first decision before giving up."""


class OpponentPool:
    """Weighted opponents, drawn per game and seat when a game is dealt.

    ``OpponentPool({"greedy": 2, "random": 1}, rules)``; ``add(agent, weight, name)`` and
    ``remove(name)`` change it (the games already dealt keep their opponents)."""

    def __init__(self, members: Mapping[Any, float] | None, rules: RuleSet) -> None:
        self.rules = rules
        self.agents: list[Agent] = []
        self.names: list[str] = []
        self.weights: list[float] = []
        for spec, w in (members or {}).items():
            self.add(spec, w)

    def add(self, agent: Any, weight: float, name: str | None = None) -> None:
        weight = _check_weight(weight, agent)
        name = name or (agent if isinstance(agent, str) else getattr(agent, "name", repr(agent)))
        if name in self.names:
            raise ValueError(f"opponent pool already has {name!r}")
        self.agents.append(make_agent(agent, self.rules))
        self.names.append(name)
        self.weights.append(weight)

    def _index(self, name: str) -> int:
        if name not in self.names:
            raise ValueError(f"opponent pool has no member {name!r}; members: "
                             f"{', '.join(map(repr, self.names)) or 'none'}")
        return self.names.index(name)

    def remove(self, name: str) -> None:
        k = self._index(name)
        del self.agents[k], self.names[k], self.weights[k]

    def set_weight(self, name: str, weight: float) -> None:
        self.weights[self._index(name)] = _check_weight(weight, name)

    def probabilities(self) -> np.ndarray:
        w = np.asarray(self.weights, np.float64)
        if len(w) == 0 or w.sum() <= 0:
            raise ValueError("the opponent pool is empty (no member with a positive weight)")
        return w / w.sum()

    def __repr__(self) -> str:
        return "OpponentPool(" + ", ".join(f"{n}: {w:g}" for n, w in zip(self.names, self.weights)) + ")"


def _check_weight(weight: Any, agent: Any) -> float:
    ok = (isinstance(weight, (int, float, np.integer, np.floating))
          and not isinstance(weight, (bool, np.bool_)) and math.isfinite(weight) and weight >= 0)
    if not ok:
        raise ValueError(f"opponent weight {weight!r} for {agent!r}; allowed: a finite number >= 0")
    return float(weight)


def make_opponents(spec: Any, rules: RuleSet) -> list[Agent] | OpponentPool:
    """Opponents from a spec (see the module docstring): a list with one policy per seat
    to the learner's left, or an :class:`OpponentPool`."""
    num_players = rules.num_players
    if isinstance(spec, OpponentPool):
        return spec
    if isinstance(spec, Mapping):
        return OpponentPool(spec, rules)
    if _is_agent(spec):
        spec = [spec] * (num_players - 1)
    spec = list(spec)
    if len(spec) != num_players - 1:
        raise ValueError(f"opponents: {len(spec)} given for {num_players} players; allowed: one "
                         f"agent for every seat, {num_players - 1} (one per opponent seat), or "
                         f"a dict of agents and weights (drawn per game)")
    built: dict[Any, Agent] = {}
    out = []
    for s in spec:
        key = s if isinstance(s, str) else id(s)
        if key not in built:  # one object per name, so its rows are batched together
            built[key] = make_agent(s, rules)
        out.append(built[key])
    return out


class OpponentDriver:
    """Plays a learner's opponents (through the one :class:`~ono_env.driver.AgentDriver`
    loop) until every unfinished game waits for its learner."""

    def __init__(self, game: VecGame, opponents: Sequence[Agent] | OpponentPool) -> None:
        self.game = game
        n = game.num_players
        B = game.num_games
        self.pool = opponents if isinstance(opponents, OpponentPool) else None
        # member[i, k-1]: index (into self.opponents) of the opponent k seats to the
        # learner's left in game i
        self.member = np.zeros((B, n - 1), np.int64)
        if self.pool is None:
            self._fixed: list[Agent] = []
            for k, agent in enumerate(opponents):
                if not any(agent is q for q in self._fixed):
                    self._fixed.append(agent)
                self.member[:, k] = next(j for j, q in enumerate(self._fixed) if q is agent)
        self.driver = AgentDriver(game, self.opponents)
        self._rows = np.arange(B)
        self._offsets = np.arange(1, n)
        self._seeded = False
        self._rewards = np.zeros((B, n), np.float64)
        self.redeals = 0
        """Deals that ended before the learner's first decision and were dealt again."""

    @property
    def opponents(self) -> list[Agent]:
        return self.pool.agents if self.pool is not None else self._fixed

    def assign(self, which: np.ndarray, rng: np.random.Generator) -> None:
        """Draw the opponents of the games in ``which`` (pool only; fixed opponents stay)."""
        if self.pool is None:
            return
        k = int(which.sum())
        p = self.pool.probabilities()
        self.member[which] = rng.choice(len(p), size=(k, self.member.shape[1]), p=p)

    def start(self, which: np.ndarray, learner: np.ndarray, learner_seat: int | str,
              rng: np.random.Generator) -> int:
        """Begin the episodes of the games in ``which`` (just dealt): choose each learner's
        seat (``learner_seat``: a seat, or ``"random"``), draw the opponents, reseed the
        compiled random opponents, and play up to each learner's first turn, everything
        drawn from ``rng`` (so a seeded generator fixes the episodes). A game that ends before
        its learner's first decision (possible with tiny hands) is dealt again: a learner is
        never handed a finished game. Returns the opponent decisions taken."""
        game = self.game
        n = game.num_players
        taken = 0
        todo = np.array(which, np.bool_, copy=True)
        for _ in range(MAX_REDEALS):
            k = int(todo.sum())
            if k == 0:
                return taken
            learner[todo] = (rng.integers(n, size=k) if learner_seat == "random"
                             else learner_seat)
            self.assign(todo, rng)
            self.driver.seed_games(todo, rng)
            self._seeded = True
            taken += self.advance(learner, rng)
            todo &= game.finished
            self.redeals += int(todo.sum())
            if todo.any():
                game.reset(which=todo)
        raise RuntimeError(f"{MAX_REDEALS} deals in a row ended before the learner's first "
                           f"decision: these rules leave the learner no game to play")

    def advance(self, learner: np.ndarray, rng: np.random.Generator,
                learner_rewards: np.ndarray | None = None) -> int:
        """Play opponent decisions until each unfinished game is at its learner's turn.
        Adds the learner's rewards from these steps to ``learner_rewards`` ((B,) float).
        Returns the number of opponent decisions taken."""
        game, driver = self.game, self.driver
        n = game.num_players
        if not self._seeded:
            driver.seed_games(np.ones(game.num_games, np.bool_), rng)
            self._seeded = True
        driver.agents = list(self.opponents)
        seats = (learner[:, None] + self._offsets[None, :]) % n
        driver.seat_agent[self._rows[:, None], seats] = self.member
        driver.seat_agent[self._rows, learner] = -1
        self._rewards[:] = 0.0
        taken = driver.play(rng, self._rewards)
        if learner_rewards is not None:
            learner_rewards += self._rewards[self._rows, learner]
        return taken
