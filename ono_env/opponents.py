"""Playing the opponents of a learner, in batch: shared by the Gymnasium env and the SB3 VecEnv."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ono_env.game import VecGame
from ono_env.observation import observation_size
from ono_env.policies import Policy, RandomPolicy, checked_actions, make_policy


def make_opponents(spec: Any, num_players: int) -> list[Policy]:
    """One policy per seat to the learner's left (seats 1..N-1 from the learner).

    ``spec`` is a name or policy (used for every opponent seat) or a sequence of N-1 of them."""
    if isinstance(spec, (str, Policy)) or hasattr(spec, "act"):
        spec = [spec] * (num_players - 1)
    spec = list(spec)
    if len(spec) != num_players - 1:
        raise ValueError(f"opponents: {len(spec)} given for {num_players} players; allowed: one "
                         f"agent for every seat, or {num_players - 1} (one per opponent seat)")
    built: dict[Any, Policy] = {}
    out = []
    for s in spec:
        key = s if isinstance(s, str) else id(s)
        if key not in built:  # one object per name, so its rows are batched together
            built[key] = make_policy(s)
        out.append(built[key])
    return out


class OpponentDriver:
    """Steps a VecGame's opponent seats until every unfinished game waits for its learner."""

    def __init__(self, game: VecGame, opponents: Sequence[Policy]) -> None:
        self.game = game
        self.opponents = list(opponents)
        self._obs = np.zeros((game.num_games, observation_size(game.rules)), np.float32)
        self._actions = np.zeros(game.num_games, np.int64)
        self._rows = np.arange(game.num_games)
        # group relative seats that share a policy object: one act() call per policy
        groups: dict[int, tuple[Policy, list[int]]] = {}
        for k, pol in enumerate(self.opponents, start=1):
            groups.setdefault(id(pol), (pol, []))[1].append(k)
        self._groups = [(pol, np.array(offs)) for pol, offs in groups.values()]
        self._need_obs = any(getattr(pol, "uses_observation", True) for pol in self.opponents)
        # All opponents uniformly random: play them in one compiled loop (same policy; its
        # draws come from a per-game generator seeded from the driver's rng).
        self._all_random = all(type(pol) is RandomPolicy for pol in self.opponents)
        self._policy_rng: np.ndarray | None = None
        self._scratch = np.zeros(game.num_games, np.float64)

    def advance(self, learner: np.ndarray, rng: np.random.Generator,
                learner_rewards: np.ndarray | None = None) -> int:
        """Play opponent decisions until each unfinished game is at its learner's turn.
        Adds the learner's rewards from these steps to ``learner_rewards`` ((B,) float).
        Returns the number of opponent decisions taken."""
        game = self.game
        if self._all_random:
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
            mask = game.legal_mask(which=waiting)
            obs = game.observe(current, which=waiting, out=self._obs) if self._need_obs else self._obs
            for policy, offsets in self._groups:
                sel = waiting & np.isin(offset, offsets) if len(offsets) < n - 1 else waiting
                if sel.any():
                    self._actions[sel] = checked_actions(policy, obs[sel], mask[sel], rng)
            # checked_actions verified every action against this mask
            result = game.step(self._actions, active=waiting, check=False)
            taken += int(waiting.sum())
            if learner_rewards is not None:
                learner_rewards += result.rewards[self._rows, learner]
