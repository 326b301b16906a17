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

import numpy as np

from ono_env.game import VecGame
from ono_env.observation import observation_size
from ono_env.policies import Policy, RandomAgent, checked_actions, make_policy
from ono_env.rules import RuleSet


def _is_agent(spec: Any) -> bool:
    return isinstance(spec, str) or hasattr(spec, "act")


class OpponentPool:
    """Weighted opponents, drawn per game and seat when a game is dealt.

    ``OpponentPool({"greedy": 2, "random": 1}, rules)``; ``add(agent, weight, name)`` and
    ``remove(name)`` change it (the games already dealt keep their opponents)."""

    def __init__(self, members: Mapping[Any, float] | None, rules: RuleSet) -> None:
        self.rules = rules
        self.policies: list[Policy] = []
        self.names: list[str] = []
        self.weights: list[float] = []
        for spec, w in (members or {}).items():
            self.add(spec, w)

    def add(self, agent: Any, weight: float, name: str | None = None) -> None:
        if not (isinstance(weight, (int, float)) and weight >= 0):
            raise ValueError(f"opponent weight {weight!r} for {agent!r}; allowed: a number >= 0")
        name = name or (agent if isinstance(agent, str) else getattr(agent, "name", repr(agent)))
        if name in self.names:
            raise ValueError(f"opponent pool already has {name!r}")
        self.policies.append(make_policy(agent, self.rules))
        self.names.append(name)
        self.weights.append(float(weight))

    def remove(self, name: str) -> None:
        k = self.names.index(name)
        del self.policies[k], self.names[k], self.weights[k]

    def set_weight(self, name: str, weight: float) -> None:
        self.weights[self.names.index(name)] = float(weight)

    def probabilities(self) -> np.ndarray:
        w = np.asarray(self.weights, np.float64)
        if len(w) == 0 or w.sum() <= 0:
            raise ValueError("the opponent pool is empty (no member with a positive weight)")
        return w / w.sum()

    def __repr__(self) -> str:
        return "OpponentPool(" + ", ".join(f"{n}: {w:g}" for n, w in zip(self.names, self.weights)) + ")"


def make_opponents(spec: Any, rules: RuleSet) -> list[Policy] | OpponentPool:
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
    built: dict[Any, Policy] = {}
    out = []
    for s in spec:
        key = s if isinstance(s, str) else id(s)
        if key not in built:  # one object per name, so its rows are batched together
            built[key] = make_policy(s, rules)
        out.append(built[key])
    return out


class OpponentDriver:
    """Steps a VecGame's opponent seats until every unfinished game waits for its learner."""

    def __init__(self, game: VecGame, opponents: Sequence[Policy] | OpponentPool) -> None:
        self.game = game
        n = game.num_players
        B = game.num_games
        self.pool = opponents if isinstance(opponents, OpponentPool) else None
        # member[i, k-1]: index (into self._members()) of the opponent k seats to the
        # learner's left in game i
        self.member = np.zeros((B, n - 1), np.int64)
        if self.pool is None:
            fixed = list(opponents)
            self._fixed: list[Policy] = []
            for k, pol in enumerate(fixed):
                if not any(pol is q for q in self._fixed):
                    self._fixed.append(pol)
                self.member[:, k] = next(j for j, q in enumerate(self._fixed) if q is pol)
        self._obs = np.zeros((B, observation_size(game.rules)), np.float32)
        self._actions = np.zeros(B, np.int64)
        self._rows = np.arange(B)
        self._policy_rng: np.ndarray | None = None
        self._scratch = np.zeros(B, np.float64)

    @property
    def opponents(self) -> list[Policy]:
        return self.pool.policies if self.pool is not None else self._fixed

    def assign(self, which: np.ndarray, rng: np.random.Generator) -> None:
        """Draw the opponents of the games in ``which`` (pool only; fixed opponents stay)."""
        if self.pool is None:
            return
        k = int(which.sum())
        p = self.pool.probabilities()
        self.member[which] = rng.choice(len(p), size=(k, self.member.shape[1]), p=p)

    def advance(self, learner: np.ndarray, rng: np.random.Generator,
                learner_rewards: np.ndarray | None = None) -> int:
        """Play opponent decisions until each unfinished game is at its learner's turn.
        Adds the learner's rewards from these steps to ``learner_rewards`` ((B,) float).
        Returns the number of opponent decisions taken."""
        game = self.game
        members = self.opponents
        if len(members) == 1 and type(members[0]) is RandomAgent:
            # all opponents uniformly random: play them in one compiled loop (per-game
            # generators seeded once from the driver's rng)
            if self._policy_rng is None:
                self._policy_rng = rng.integers(0, 2**63, size=game.num_games, dtype=np.uint64)
            if learner_rewards is None:
                learner_rewards = self._scratch
            return game.play_random_until(learner, self._policy_rng, learner_rewards)
        n = game.num_players
        taken = 0
        while True:
            current = game.state.current
            waiting = (current != learner) & ~game.finished
            if not waiting.any():
                return taken
            offset = (current - learner) % n
            who = self.member[self._rows, np.maximum(offset, 1) - 1]      # (B,) member index
            mask = game.legal_mask(which=waiting)
            need_obs = True
            for j, policy in enumerate(members):
                sel = waiting & (who == j) if len(members) > 1 else waiting
                if not sel.any():
                    continue
                if need_obs and getattr(policy, "uses_observation", True):
                    game.observe(current, which=waiting, out=self._obs)
                    need_obs = False
                self._actions[sel] = checked_actions(policy, self._obs[sel], mask[sel], rng)
            # checked_actions verified every action against this mask
            result = game.step(self._actions, active=waiting, check=False)
            taken += int(waiting.sum())
            if learner_rewards is not None:
                learner_rewards += result.rewards[self._rows, learner]
