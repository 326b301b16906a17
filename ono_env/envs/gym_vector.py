"""ONO as a native Gymnasium vector environment: ``num_envs`` games in one ``VecGame``.

.. code-block:: python

    import gymnasium, ono_env
    envs = gymnasium.make_vec("ono_env/Ono-v0", num_envs=256, vectorization_mode="vector_entry_point",
                              rules="basic", num_players=2, opponents="greedy")
    obs, infos = envs.reset(seed=0)
    mask = infos["action_mask"]                       # (256, 85) bool, also envs.action_masks()
    obs, rewards, terminated, truncated, infos = envs.step(actions)   # (256,) int actions

One ``VecGame`` steps every game at once and the opponents play in batch between the
learner's decisions (:class:`ono_env.envs.learner_batch.LearnerBatch`, the core shared with the
Stable-Baselines3 VecEnv): no subprocesses and no Python object per game, unlike
``SyncVectorEnv`` / ``AsyncVectorEnv`` over :class:`ono_env.envs.gym_env.OnoEnv`, which
``make_vec``'s other vectorization modes still build.

- Spaces: ``single_observation_space`` is the single env's ``Box`` of ``(D,) float32``,
  ``single_action_space`` is ``Discrete(85)``; ``observation_space`` / ``action_space`` are
  their batched forms (``Box (N, D)``, ``MultiDiscrete``).
- Masks: ``infos["action_mask"]`` ``(N, 85) bool`` after every ``reset`` and ``step`` (the
  legal actions of the observation returned beside it) and :meth:`OnoVectorEnv.action_masks`.
- Autoreset: ``autoreset_mode``, in ``metadata["autoreset_mode"]``. ``AutoresetMode.SAME_STEP``
  (the default): a game that ends in ``step`` is dealt again in the same step; the returned
  observation (and mask) is the new episode's, and ``infos["final_obs"]`` /
  ``infos["final_info"]`` (with the ``"_final_obs"`` / ``"_final_info"`` masks) hold the
  finished episode's last observation and its info (``final_info["action_mask"]`` ``(N,
  85)``, all False where a game finished), as ``SyncVectorEnv`` builds them in that mode.
  ``AutoresetMode.NEXT_STEP`` (Gymnasium's default, which its vector wrappers assume): the
  step a game ends returns its last observation (no legal action in its mask), and the next
  step deals it again, its action ignored, reward 0, the new episode's observation.
- ``infos["learner_seat"]``: the learner's seat in each game (``learner_seat="random"``, the
  default, draws a new one per game and episode from the env's seeded generator).
- Rewards, opponents, ``rules`` and its overrides, ``max_decisions``, ``skip_forced`` and
  ``reward`` as for :class:`~ono_env.envs.gym_env.OnoEnv`.
- Seeding: ``reset(seed=s)`` (an integer) fixes every later episode of every game; a list of
  per-game seeds is refused (the games' seeds follow from ``s``). Actions must be an integer
  array of shape ``(N,)``; an illegal action raises ``ValueError`` naming the game and its
  legal actions, and no game changes (a vector env has no single episode to end as a loss).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from ono_env.cards import NUM_ACTIONS
from ono_env.checks import check_seed, shown
from ono_env.envs.learner_batch import LearnerBatch
from ono_env.envs.opponents import check_rule_overrides
from ono_env.observation import observation_high


class OnoVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` games (default 16) as one Gymnasium vector env stepped in batch (the
    module docstring has the spaces, masks, autoreset and seeding).

    Args:
        num_envs: the number of games (default 16).
        render_mode: None only (the single env renders).
        autoreset_mode: ``AutoresetMode.SAME_STEP`` (the default) or ``NEXT_STEP`` (or their
            values, ``"SameStep"``, ``"NextStep"``): when a game that ended is dealt again
            (the module docstring).

    The other arguments are :class:`~ono_env.envs.gym_env.OnoEnv`'s, with its defaults
    (``rules="classic"``, ``opponents="random"``, ``learner_seat="random"``, ...), but for
    ``illegal_action`` (an illegal action raises ``ValueError``).
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        num_envs: int = 16,
        rules: Any = "classic",
        num_players: int | None = None,
        opponents: Any = "random",
        learner_seat: int | str = "random",
        *,
        max_decisions: int | None = None,
        skip_forced: bool = False,
        reward: str = "win",
        observation_version: int = 1,
        render_mode: str | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.SAME_STEP,
        **rule_overrides: Any,
    ) -> None:
        modes = (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP)
        mode = next((m for m in modes if autoreset_mode is m or (
            isinstance(autoreset_mode, str) and autoreset_mode == m.value)), None)
        if mode is None:   # before: SAME_STEP only, which Gymnasium's vector wrappers refuse
            raise ValueError(f"autoreset_mode={shown(autoreset_mode, 40)}; allowed: "
                             f"{', '.join(f'AutoresetMode.{m.name} (or {m.value!r})' for m in modes)}")
        if render_mode is not None:   # a Gymnasium argument, not a rule option
            raise ValueError(f"render_mode={shown(render_mode, 40)}; allowed: None (OnoVectorEnv does "
                             f"not render; the single env does: gymnasium.make, or make_vec's "
                             f"'sync' mode)")
        check_rule_overrides(rule_overrides, "OnoVectorEnv", OnoVectorEnv.__init__)
        if num_players is not None:
            rule_overrides["num_players"] = num_players
        self.batch = LearnerBatch(rules, num_envs, opponents, None, learner_seat,
                                  max_decisions=max_decisions, skip_forced=skip_forced,
                                  reward=reward, observation_version=observation_version,
                                  autoreset="next_step" if mode is AutoresetMode.NEXT_STEP
                                  else "same_step", batched_space=True, **rule_overrides)
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self.rules = self.batch.rules
        self.game = self.batch.game
        self.num_envs = self.batch.num_envs
        self.single_observation_space = spaces.Box(
            -1.0, observation_high(self.rules), (self.game.observation_size,), np.float32)
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.render_mode = None
        self._all = np.ones(self.num_envs, np.bool_)

    @property
    def learner_seat(self) -> int | str:
        """A seat number, or ``"random"`` (drawn per game and episode)."""
        return self.batch.learner_seat

    @learner_seat.setter
    def learner_seat(self, value: int | str) -> None:
        self.batch.learner_seat = value

    def _infos(self) -> dict[str, Any]:
        return {"action_mask": self.batch.action_masks(), "_action_mask": self._all.copy(),
                "learner_seat": self.batch.learner.copy(), "_learner_seat": self._all.copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Deal every game again (from ``seed``, an integer, when given) up to each
        learner's first turn. Returns ``(obs (N, D), infos)``. ``options``: a dict or None;
        no option is read, and Gymnasium's ``reset_mask`` (a partial reset) is refused."""
        if isinstance(seed, (list, tuple, np.ndarray)):
            raise ValueError(f"seed must be one integer for all {self.num_envs} games (each "
                             f"game's deal follows from it) or None; got a "
                             f"{type(seed).__name__}")
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"options={shown(options, 80)} ({type(options).__name__}); allowed: a "
                             f"dict or None (OnoVectorEnv.reset takes no options)")
        if options and "reset_mask" in options:   # Gymnasium's partial reset: not ignored
            raise ValueError("options['reset_mask']: OnoVectorEnv.reset deals every game again "
                             "(a game that ends is dealt again by step, as autoreset_mode "
                             "says); allowed: no reset_mask")
        seed = check_seed("seed", seed)
        if seed is not None:
            seed = int(seed)   # a NumPy integer too: gymnasium's seeding takes a Python int
        obs = self.batch.reset(seed)
        if seed is not None:
            self._np_random, self._np_random_seed = gym.utils.seeding.np_random(seed)
        return obs, self._infos()

    def step(self, actions: Any):
        """One decision in every game, the opponents up to each learner's next turn, and
        autoreset (``metadata["autoreset_mode"]``). Returns ``(obs, rewards, terminated,
        truncated, infos)``."""
        seats = self.batch.learner.copy()   # the finished episodes' seats, before autoreset
        r = self.batch.step(actions)
        infos = self._infos()
        if r.final_obs is not None:   # as SyncVectorEnv gives them in SAME_STEP mode
            # (VectorEnv._add_info); NEXT_STEP returns the last observation itself
            last = np.zeros(NUM_ACTIONS, np.bool_)   # a finished episode has no legal action
            for i in np.flatnonzero(r.dones):
                final = {"learner_seat": int(seats[i]), "action_mask": last}
                infos = self._add_info(infos, {"final_obs": r.final_obs[i],
                                               "final_info": final}, int(i))
        return r.obs, r.rewards, r.terminated, r.truncated, infos

    def action_masks(self) -> np.ndarray:
        """``(N, 85) bool``: each learner's legal actions now (all False before
        ``reset()`` and after a step that failed midway: no learner is to act)."""
        return self.batch.action_masks()
