"""A learner's games in batch: the one core of the vector environments.

:class:`LearnerBatch` holds ``num_envs`` games of one ``VecGame``, a learner seat in each,
and the opponents (:mod:`ono_env.envs.opponents`) that play every other seat in batch between
the learner's decisions. :meth:`LearnerBatch.step` takes one action per game, plays the
opponents up to each learner's next turn, and deals a finished game again: at once
(``autoreset="same_step"``, the default), returning the finished episodes' last observations
beside the new ones, or on the next step (``"next_step"``, which ignores that step's action
for the game and returns the new episode's first observation with reward 0). The Gymnasium
vector env (:mod:`ono_env.envs.gym_vector`), the Stable-Baselines3 VecEnv
(:mod:`ono_env.envs.sb3`) and the RLlib vector env (:mod:`ono_env.envs.rllib_env`, next step)
are thin adapters over it, so all behave alike:

- ``learner_seat``: ``"random"`` (a new seat per game and episode, drawn from the batch's
  seeded generator) or a seat number. A deal that ends before the learner's first decision
  (possible with tiny hands) is dealt again: every game handed back is the learner's turn.
- ``observation_version``: the learner's observation layout (1, the default, or 2;
  :mod:`ono_env.observation`); each opponent is observed in its own layout.
- Rewards: the learner's own, summed over the opponents' moves up to its next turn (a
  reward from the opponents' moves before its first decision comes with its first step).
- Seeding: ``reset(seed)`` fixes every later episode of every game (deals, learner seats,
  opponents drawn from a pool, their choices).
- An opponent that fails (an illegal choice, or an error of its own) inside ``step`` or
  ``reset`` raises to the caller, and ``step`` is then refused until ``reset``
  (:func:`ono_env.envs.opponents.midway`).
- Actions: an integer array of shape ``(num_envs,)`` (floats, bools and other shapes are
  refused with ``ValueError``); an illegal learner action raises ``ValueError`` naming the
  game and its legal actions, and no game changes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ono_env.cards import NUM_ACTIONS
from ono_env.checks import as_array, check_choice, check_int, check_learner_seat, check_seed
from ono_env.envs.opponents import OpponentDriver, make_opponents, midway
from ono_env.game import MAX_GAMES, VecGame, check_game_memory
from ono_env.observation import observation_size
from ono_env.rules import resolve_rules


class BatchStep(NamedTuple):
    """What :meth:`LearnerBatch.step` returns (arrays over the games)."""

    obs: np.ndarray          # (N, D) float32: the learners' next observations (new episodes
                             # where one ended)
    rewards: np.ndarray      # (N,) float32
    terminated: np.ndarray   # (N,) bool
    truncated: np.ndarray    # (N,) bool: cut at max_decisions (and not terminated)
    final_obs: np.ndarray | None  # (N, D) float32: the last observation of each finished
                                  # episode (other rows 0); None when no game finished
    dones: np.ndarray        # (N,) bool: terminated | truncated


AUTORESETS = ("same_step", "next_step")
"""When :meth:`LearnerBatch.step` deals a finished game again (see the module)."""


class LearnerBatch:
    """``num_envs`` games under ``rules`` with a learner seat in each (see the module).
    ``batched_space``: the vector env over it batches the observation space (Gymnasium's
    ``batch_space``), and with ``mask_space`` an action mask space too (RLlib's dict
    observation), whose bounds are counted with the games against the free memory before
    they are made (:func:`~ono_env.game.check_game_memory`)."""

    def __init__(self, rules: Any = "classic", num_envs: int = 64, opponents: Any = "random",
                 seed: int | None = None, learner_seat: int | str = "random", *,
                 max_decisions: int | None = None, skip_forced: bool = False,
                 reward: str = "win", observation_version: int = 1,
                 autoreset: str = "same_step", batched_space: bool = False,
                 mask_space: bool = False, **rule_overrides: Any) -> None:
        self.rules = resolve_rules(rules, **rule_overrides)
        self.num_envs = check_int("num_envs", num_envs, 1, MAX_GAMES)
        check_seed("seed", seed)
        self._learner_seat = check_learner_seat(learner_seat, self.rules.num_players)
        self.autoreset = check_choice("autoreset", autoreset, AUTORESETS)
        if batched_space:   # a vector env's batched spaces, counted before the games
            values = observation_size(self.rules, observation_version) + NUM_ACTIONS * mask_space
            check_game_memory(self.rules, self.num_envs, observation_version,
                              f"num_envs={self.num_envs:,}", space_values=values)
        self.game = VecGame(self.rules, self.num_envs, seed=seed, max_decisions=max_decisions,
                            skip_forced=skip_forced, reward=reward,
                            observation_version=observation_version)
        self.opponents = make_opponents(opponents, self.rules)
        self._driver = OpponentDriver(self.game, self.opponents)
        self.rng = np.random.default_rng(seed)
        self.learner = np.zeros(self.num_envs, np.int64)
        """(N,) the learner's seat in each game."""
        self.decisions = 0
        """Every decision taken, the learner's and the opponents'."""
        self._rows = np.arange(self.num_envs)
        self._restart = np.zeros(self.num_envs, np.bool_)   # next step: to deal again
        self._ready = False
        self._failed: str | None = None   # why the last step() or reset() failed midway

    @property
    def learner_seat(self) -> int | str:
        """A seat number, or ``"random"``; a new value applies from the next deals."""
        return self._learner_seat

    @learner_seat.setter
    def learner_seat(self, value: int | str) -> None:
        self._learner_seat = check_learner_seat(value, self.rules.num_players)

    def _stop(self, why: str) -> None:
        self._ready, self._failed = False, why

    def _deal(self, which: np.ndarray) -> None:
        self.decisions += self._driver.start(which, self.learner, self.learner_seat, self.rng)

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Deal every game again (reseeded when ``seed`` is given) up to each learner's first
        turn; returns the learners' observations ``(N, D)``."""
        seed = check_seed("seed", seed)
        with midway("reset()", self._stop):   # an opponent may fail in the deal
            if seed is not None:
                self.game.reset(seed=seed)
                self.rng = np.random.default_rng(seed)
            else:
                self.game.reset()
            self._restart[:] = False
            self._deal(np.ones(self.num_envs, np.bool_))
        self._ready, self._failed = True, None
        return self.game.observe(self.learner)

    @staticmethod
    def check_actions(actions: Any, num_envs: int) -> np.ndarray:
        """``actions`` as an integer array of shape ``(num_envs,)``, or ``ValueError``: int64,
        or uint64 as given, which :meth:`~ono_env.game.VecGame.step` checks and names as given (cast here,
        2**64 - 1 was named -1)."""
        a = as_array(actions)
        if a.shape != (num_envs,) or a.dtype.kind not in "iu":
            raise ValueError(f"actions must be an integer array of shape ({num_envs},); "
                             f"got {a.dtype} {a.shape}")
        return a if a.dtype == np.uint64 else a.astype(np.int64)

    def step(self, actions: Any, out: np.ndarray | None = None) -> BatchStep:
        """One decision of every learner (see the module for the checks), the opponents up to
        each learner's next turn, and autoreset of the finished games (``autoreset``: in this
        step, or in the next, which ignores their actions). ``out``: a
        C-contiguous ``(N, D)`` float32 array that receives the next observations (the
        trainer's rollout buffer) and is returned as ``obs``; a new array when None."""
        if not self._ready:
            raise RuntimeError(self._failed or "step() before reset(): call reset() first")
        a = self.check_actions(actions, self.num_envs)
        out = self.game.check_observation_out(out)   # before any game moves
        if self.autoreset == "next_step":
            return self._step_next(a, out)
        result = self.game.step(a)          # raises ValueError on an illegal action
        with midway("step()", self._stop):   # the learners' moves are made
            rewards = self._driver.take_pending()
            rewards += result.rewards[self._rows, self.learner]
            self.decisions += self.num_envs
            self.decisions += self._driver.advance(self.learner, self.rng, rewards)
            terminated = self.game.terminated.copy()
            truncated = self.game.truncated & ~terminated
            dones = terminated | truncated
            final = None
            if dones.any():
                final = self.game.observe(self.learner, which=dones)
                self.game.reset(which=dones)
                self._deal(dones)
        obs = self.game.observe(self.learner, out=out)
        return BatchStep(obs, rewards.astype(np.float32), terminated, truncated, final, dones)

    def _step_next(self, a: np.ndarray, out: np.ndarray | None) -> BatchStep:
        """:meth:`step` with next-step autoreset: the games that ended on the step before are
        dealt again (their action ignored, reward 0), the others played."""
        restart = self._restart.copy()
        play = ~restart
        result = self.game.step(np.where(play, a, 0), play)   # ValueError on an illegal action
        with midway("step()", self._stop):   # the learners' moves are made
            rewards = np.where(play, self._driver.take_pending(), 0.0)
            rewards += np.where(play, result.rewards[self._rows, self.learner], 0.0)
            self.decisions += int(play.sum())
            # the opponents of the games played, up to each learner's next turn (the games to
            # deal again are finished: advance leaves them alone), then the new deals
            self.decisions += self._driver.advance(self.learner, self.rng, rewards)
            terminated = self.game.terminated & play
            truncated = self.game.truncated & ~self.game.terminated & play
            if restart.any():
                self.game.reset(which=restart)
                self._deal(restart)
        self._restart = terminated | truncated
        obs = self.game.observe(self.learner, out=out)
        return BatchStep(obs, rewards.astype(np.float32), terminated, truncated, None,
                         self._restart.copy())

    def action_masks(self) -> np.ndarray:
        """``(N, 85) bool``: each learner's legal actions now; all False before ``reset()`` and
        after a ``step()`` or ``reset()`` that failed midway, when no learner is to act
        (before: the legal actions of whichever seat the failure left acting)."""
        if not self._ready:
            return np.zeros((self.game.num_games, NUM_ACTIONS), np.bool_)
        return self.game.legal_mask().copy()
