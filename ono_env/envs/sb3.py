"""``OnoVecEnv``: a Stable-Baselines3 ``VecEnv`` directly over one batched ``VecGame``
(:class:`ono_env.envs.learner_batch.LearnerBatch`, the core it shares with the Gymnasium vector
env).

No subprocesses and no per-game Python objects: the learner's actions for all ``num_envs``
games go into one ``VecGame.step``, and the opponents are stepped in batch until every game
is back at the learner's turn.

.. code-block:: python

    from sb3_contrib import MaskablePPO
    from ono_env.envs.sb3 import OnoVecEnv
    venv = OnoVecEnv("basic", num_envs=64, opponents="random", seed=0, num_players=2)
    model = MaskablePPO("MlpPolicy", venv, n_steps=128).learn(10_000)  # n_steps per game

- ``action_masks()`` returns ``(num_envs, 85) bool``; ``MaskablePPO`` reads it through
  ``env_method("action_masks")`` / ``get_attr``, also under ``VecMonitor``: each gives one
  game's ``(85,)`` mask per index (``get_attr``: a method to call), as a ``DummyVecEnv`` of
  ``OnoEnv`` does.
- Same-step autoreset, as SB3 expects: a game that ends during ``step`` reports ``done``,
  its ``info["terminal_observation"]`` and ``info["TimeLimit.truncated"]``, and is dealt
  again at once (the returned observation is the new episode's).
- ``opponents``: one agent (name, saved model path, policy object) for every seat, one per
  seat to the learner's left, or a pool ``{agent: weight}`` / ``OpponentPool`` drawn per
  game and seat as each episode begins (see :mod:`ono_env.envs.opponents`).
- ``observation_version``: 1 (default) or 2, the layout of one length for every table; the
  observation space has that length.
- ``learner_seat``: ``"random"`` (default: a new seat per game and episode, drawn from the
  env's seeded generator) or a seat number; the same name and default as the Gymnasium env.
  ``reset_infos[i]["learner_seat"]`` says which (after ``reset`` and each autoreset). A deal
  that ends before the learner's first decision (possible with tiny hands) is dealt again,
  at ``reset`` and at every autoreset: every game returned is the learner's turn. A reward
  from the opponents' moves before the learner's first decision (per-round rewards in a
  match) comes with the episode's first step.
- Seeding: ``seed`` (the constructor's, or ``seed(s)`` before a ``reset``) fixes every later
  episode of every game: the deals, learner seats, opponents drawn from a pool and the
  opponents' choices. The constructor's seed acts like ``seed(s)``: ``OnoVecEnv(seed=s)``
  then ``reset()`` equals ``env.seed(s)`` then ``env.reset()``.
- Wrong types are refused with ``ValueError``: ``actions`` must be an integer array of
  shape ``(num_envs,)`` (no floats, bools, strings or other shapes); an illegal learner
  action raises ``ValueError`` naming the game and the legal actions (and no game changes).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any, cast

import numpy as np
from gymnasium import spaces

from ono_env.cards import NUM_ACTIONS
from ono_env.checks import check_seed, missing_extra, shown
from ono_env.envs.learner_batch import LearnerBatch
from ono_env.envs.opponents import check_rule_overrides
from ono_env.observation import observation_high

try:
    from stable_baselines3.common.vec_env.base_vec_env import (
        VecEnv,
        VecEnvIndices,
        VecEnvStepReturn,
    )
except ImportError as exc:
    raise missing_extra(exc, "ono_env.envs.sb3", "stable_baselines3", "train") from exc

FIXED_ATTRS = frozenset({"num_envs", "observation_space", "action_space", "batch", "rules",
                         "game", "opponents", "reset_infos"})
"""What ``OnoVecEnv.set_attr`` refuses besides the class's own methods and properties and
``render_mode``: the attributes its games and spaces are made of."""


def _check_attr_name(name: Any) -> None:
    """An attribute's name for ``get_attr``/``set_attr`` is text (before: an int failed with
    "'int' object has no attribute 'startswith'")."""
    if not isinstance(name, str):
        raise ValueError(f"attr_name={shown(name, 40)} ({type(name).__name__}); allowed: an "
                         f"attribute's name, a str")


class OnoVecEnv(VecEnv):
    """``num_envs`` games (default 64) as one Stable-Baselines3 ``VecEnv`` stepped in batch
    (the module docstring has the masks, resets and seeding).

    Args:
        num_envs: the number of games (default 64).
        seed: the games' seed (None: drawn afresh; ``seed(s)`` seeds the next ``reset``).

    The other arguments are :class:`~ono_env.envs.gym_env.OnoEnv`'s, with its defaults
    (``rules="classic"``, ``opponents="random"``, ``learner_seat="random"``, ...), but for
    ``render_mode`` and ``illegal_action`` (an illegal action raises); ``num_players`` is one
    of the ``**rule_overrides`` (``num_players=4``).
    """

    def __init__(
        self,
        rules: Any = "classic",
        num_envs: int = 64,
        opponents: Any = "random",
        seed: int | None = None,
        learner_seat: int | str = "random",
        *,
        max_decisions: int | None = None,
        skip_forced: bool = False,
        reward: str = "win",
        observation_version: int = 1,
        **rule_overrides: Any,
    ) -> None:
        check_rule_overrides(rule_overrides, "OnoVecEnv", OnoVecEnv.__init__)   # seed is its own argument here
        self.batch = LearnerBatch(rules, num_envs, opponents, seed, learner_seat,
                                  max_decisions=max_decisions, skip_forced=skip_forced,
                                  reward=reward, observation_version=observation_version,
                                  **rule_overrides)
        self.rules = self.batch.rules
        self.game = self.batch.game
        self.opponents = self.batch.opponents
        self._actions: np.ndarray | None = None
        self.render_mode = None
        obs_space = spaces.Box(-1.0, observation_high(self.rules), (self.game.observation_size,),
                               np.float32)
        super().__init__(self.batch.num_envs, obs_space, spaces.Discrete(NUM_ACTIONS))
        if seed is not None:
            self.seed(seed)  # the first reset() starts from it, as after seed(seed)

    @property
    def learner_seat(self) -> int | str:
        """The learner's seat in every game: a seat number, or ``"random"`` (drawn per game
        and episode). Set it (or ``set_attr``) to change it from the next deals on."""
        return self.batch.learner_seat

    @learner_seat.setter
    def learner_seat(self, value: int | str) -> None:
        self.batch.learner_seat = value

    @property
    def decisions(self) -> int:
        """Every decision taken, the learner's and the opponents'."""
        return self.batch.decisions

    def seed(self, seed: int | None = None) -> Sequence[int | None]:
        """Seed the next ``reset()`` (an integer from 0 to 2**63 - 1, or None for a random
        one, drawn from fresh entropy: SB3's own draws it from NumPy's global generator, so
        that a caller's np.random.seed() chose it and the call moved the caller's stream): it
        and every episode after it follow from this seed alone."""
        seed = check_seed("seed", seed)
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> 1)
        return super().seed(seed)

    # ---- episodes -----------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        """Deal every game again (from the seed given by ``seed()`` or the constructor, if
        one is pending) and play the opponents up to each learner's first turn."""
        obs = self.batch.reset(self._seeds[0])
        self._actions = None
        self._seeds = [None] * self.num_envs
        self.reset_infos = [{"learner_seat": int(s)} for s in self.batch.learner]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        """``actions``: ``(num_envs,)`` integer action ids (floats, bools and other shapes are
        refused with ``ValueError``; an illegal action raises it when stepped)."""
        self._actions = LearnerBatch.check_actions(actions, self.num_envs)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async()")
        actions, self._actions = self._actions, None
        r = self.batch.step(actions)       # raises ValueError on an illegal action
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        for i in np.flatnonzero(r.dones):
            infos[i]["terminal_observation"] = cast(np.ndarray, r.final_obs)[i]
            infos[i]["TimeLimit.truncated"] = bool(r.truncated[i])
            self.reset_infos[i] = {"learner_seat": int(self.batch.learner[i])}
        return r.obs, r.rewards, r.dones, infos

    # ---- masks --------------------------------------------------------------------------
    def action_masks(self) -> np.ndarray:
        """``(num_envs, 85) bool``: each learner's legal actions (all False before ``reset()``
        and after a step that failed midway: no learner is to act)."""
        return self.batch.action_masks()

    # ---- VecEnv plumbing ------------------------------------------------------------------
    def _indices(self, indices: VecEnvIndices) -> list[int]:
        """SB3's ``indices``: None (every game), one index or an iterable of them, each a
        whole number 0..num_envs-1 (not a bool); else ``ValueError`` naming the range."""
        if indices is None:
            return list(range(self.num_envs))
        many = list(indices) if isinstance(indices, Iterable) and not isinstance(
            indices, (str, bytes)) else [indices]
        for i in many:
            if (not isinstance(i, (int, np.integer)) or isinstance(i, (bool, np.bool_))
                    or not 0 <= i < self.num_envs):
                raise ValueError(f"indices: {shown(i, 40)} ({type(i).__name__}); allowed: game "
                                 f"indices 0 to {self.num_envs - 1}, one or a list, or None")
        return [int(i) for i in many]

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None,
                   **method_kwargs) -> list[Any]:
        idx = self._indices(indices)
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in idx]
        raise AttributeError(f"OnoVecEnv has no per-env method {shown(method_name, 60)}; available: action_masks")

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        _check_attr_name(attr_name)
        if attr_name == "action_masks":   # each game's own, as a DummyVecEnv of OnoEnv gives
            # (before: the vector's method at every index, whose call gave every game's masks)
            return [functools.partial(self._game_mask, i) for i in self._indices(indices)]
        if not attr_name.startswith("_") and hasattr(self, attr_name):
            return [getattr(self, attr_name)] * len(self._indices(indices))
        raise AttributeError(f"OnoVecEnv has no attribute {shown(attr_name, 60)}")

    def _game_mask(self, i: int) -> np.ndarray:
        """Game ``i``'s action mask, ``(85,) bool`` (:meth:`get_attr`'s ``action_masks``)."""
        return self.action_masks()[i]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set a public data attribute of every game (they share it). Refused, nothing
        changed: a name that is no text, begins with ``_`` or is in :data:`FIXED_ATTRS`, and
        the class's own methods and read-only properties (before: ``set_attr("action_masks",
        None)`` was taken, and MaskablePPO failed later on calling it). ``learner_seat``, a
        property with a setter, is set through it, checked."""
        _check_attr_name(attr_name)
        if len(set(self._indices(indices))) != self.num_envs:
            raise ValueError("OnoVecEnv attributes are shared by all games; set them for all indices")
        if attr_name.startswith("_") or attr_name in FIXED_ATTRS:
            raise ValueError(f"OnoVecEnv attribute {shown(attr_name, 60)} is set when it is made (the "
                             f"games, their spaces and rules); allowed: other public attributes")
        if attr_name == "render_mode":
            raise ValueError("OnoVecEnv.render_mode stays None: it renders no images (the "
                             "games render as text: ono_env.render)")
        held = getattr(type(self), attr_name, None)
        if held is not None and not (isinstance(held, property) and held.fset is not None):
            what = "property" if isinstance(held, property) else "method"
            raise ValueError(f"OnoVecEnv.{attr_name} is a {what} of the environment, not an "
                             f"attribute to set; allowed: other public attributes, and "
                             f"learner_seat")
        setattr(self, attr_name, value)

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False] * len(self._indices(indices))

    def get_images(self) -> Sequence[np.ndarray | None]:
        raise NotImplementedError("OnoVecEnv renders no images; use VecGame.to_dict or ono_env.render")

    def close(self) -> None:
        pass
