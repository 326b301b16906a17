"""ONO for RLlib's current API stack (RLModule / Learner / EnvRunner); needs the ``[ray]`` extra.

Two environments, both with the observation RLlib's action-masking pattern reads::

    {"observations": (D,) float32, "action_mask": (85,) float32 (1 legal, 0 illegal)}

(``"observations"``, not PettingZoo's ``"observation"``: RLlib's masking module pops that
key; the vector is :mod:`ono_env.observation`'s, unscaled, holding only what the seat may
know.)

- :class:`OnoRLlibVectorEnv`: a single learner against opponents, ``num_envs`` games on **one**
  batched :class:`~ono_env.game.VecGame` (a ``gymnasium.vector.VectorEnv``, handed to RLlib
  with ``gym_env_vectorize_mode="vector_entry_point"``: no Python object per game). The
  opponents (names, model files, agents, or an :class:`~ono_env.envs.opponents.OpponentPool`
  drawn per game and seat) are stepped in batch inside ``step`` by the same
  :class:`~ono_env.envs.learner_batch.LearnerBatch` as the Gymnasium and SB3 adapters. Autoreset is
  gymnasium's ``NEXT_STEP`` mode (what RLlib's ``SingleAgentEnvRunner`` expects): a game that
  ends reports its final observation (mask all 0) and is dealt again on the next ``step``,
  which ignores its action and returns the new episode's first observation with reward 0.
  League self-play changes the pool while training runs (:meth:`OnoRLlibVectorEnv.update_pool`).
- :class:`OnoMultiAgentEnv`: an RLlib ``MultiAgentEnv`` for self-play and mixed tables: every
  seat is an agent id (``player_0`` ... ``player_{N-1}``), each observation dict holds only
  the acting seat; at the end of an episode every seat gets its final observation and
  reward. One game per object: RLlib vectorizes multi-agent envs only by stepping several
  such objects in turn (``SyncVectorMultiAgentEnv``).

Both take one ``config`` mapping (what RLlib passes an env creator): ``rules`` (a preset
name, YAML path, mapping or RuleSet), ``num_players``, ``seed``, ``max_decisions``,
``reward``, ``observation_version`` (1, the default, or 2); :class:`OnoRLlibVectorEnv` also
``num_envs``, ``opponents`` and ``learner_seat``.
An unknown key or a bad value is one ``ValueError`` naming it. ``reset(seed=s)`` fixes every
later episode (deals, seats, opponents and their choices) from ``s`` alone; the config's
``seed`` is the seed of the first ``reset()`` that gives none, as the SB3 env's constructor
seed is (before: the first ``reset()`` dealt the episode after ``reset(seed=s)``'s).

RLlib's env checker sends unmasked random actions; disable it
(``config.environment(disable_env_checking=True)``): these envs are checked by the suite.
An illegal action raises ``ValueError`` naming the legal actions (no game changes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import batch_space

from ono_env.cards import NUM_ACTIONS
from ono_env.checks import check_action, check_int, check_seed, missing_extra, nearest, shown
from ono_env.envs.learner_batch import LearnerBatch
from ono_env.envs.opponents import OpponentPool
from ono_env.game import VecGame
from ono_env.observation import observation_high, observation_size
from ono_env.rules import FIELD_NAMES, RuleSet, resolve_rules

try:
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
except ImportError as exc:
    raise missing_extra(exc, "ono_env.envs.rllib_env", "ray", "ray") from exc

OBS_KEY = "observations"
MASK_KEY = "action_mask"
_COMMON_KEYS = ("rules", "num_players", "seed", "max_decisions", "reward", "observation_version")
VECTOR_KEYS = _COMMON_KEYS + ("num_envs", "opponents", "learner_seat")
MULTI_AGENT_KEYS = _COMMON_KEYS


def observation_space(rules: RuleSet, version: int = 1) -> spaces.Dict:
    """The observation space of one seat: ``{"observations": Box(D), "action_mask": Box(85)}``
    (``D`` of observation ``version``)."""
    return spaces.Dict({
        OBS_KEY: spaces.Box(-1.0, observation_high(rules), (observation_size(rules, version),),
                            np.float32),
        MASK_KEY: spaces.Box(0.0, 1.0, (NUM_ACTIONS,), np.float32),
    })


def _config(config: Mapping[str, Any] | None, allowed: tuple[str, ...], what: str) -> dict:
    if config is None:
        return {}
    if not isinstance(config, Mapping):
        raise ValueError(f"{what} config={shown(config, 80)} ({type(config).__name__}); allowed: a "
                         f"mapping with keys {', '.join(allowed)}")
    bad = [k for k in config if k not in allowed]
    if bad:
        key, hint = bad[0], ""
        if key == "preset":
            hint = " (the preset is the value of 'rules': {'rules': 'ono'})"
        elif key in FIELD_NAMES:   # the other envs take rule options as keywords
            hint = (f" (a rule option: give it inside 'rules', as {{'rules': {{'preset': "
                    f"'classic', {key!r}: ...}}}})")
        elif isinstance(key, str):
            close = nearest(key, allowed)
            hint = f" (did you mean {close!r}?)" if close else ""
        raise ValueError(f"{what}: unknown config key {shown(key, 60)}{hint}; allowed: "
                         f"{', '.join(allowed)}")
    return dict(config)


def _rules(cfg: dict) -> RuleSet:
    overrides = {} if cfg.get("num_players") is None else {"num_players": cfg["num_players"]}
    return resolve_rules(cfg.get("rules", "classic"), **overrides)


class OnoRLlibVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` games of one learner against opponents on one ``VecGame`` (see the module
    docstring). ``config`` keys: ``rules``, ``num_players``, ``num_envs`` (default 64),
    ``opponents`` (default ``"random"``), ``learner_seat`` (``"random"`` or a seat),
    ``seed``, ``max_decisions``, ``reward``, ``observation_version``."""

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP, "render_modes": []}

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        cfg = _config(config, VECTOR_KEYS, "OnoRLlibVectorEnv")
        # the batched spaces' bounds too: the observation and the action mask of every game
        self.batch = LearnerBatch(_rules(cfg), cfg.get("num_envs", 64), cfg.get("opponents", "random"),
                                  cfg.get("seed"), cfg.get("learner_seat", "random"),
                                  max_decisions=cfg.get("max_decisions"), reward=cfg.get("reward", "win"),
                                  observation_version=cfg.get("observation_version", 1),
                                  autoreset="next_step", batched_space=True, mask_space=True)
        self.rules = self.batch.rules
        self.game = self.batch.game
        self.opponents = self.batch.opponents
        self.num_envs = self.batch.num_envs
        self._first_seed = cfg.get("seed")   # the first reset()'s, where it gives none
        self.single_observation_space = observation_space(self.rules, self.game.observation_version)
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._mask = np.zeros((self.num_envs, NUM_ACTIONS), np.float32)

    @property
    def decisions(self) -> int:
        """Every decision taken, the learner's and the opponents'."""
        return self.batch.decisions

    # ---- the league ---------------------------------------------------------------------
    @property
    def pool(self) -> OpponentPool | None:
        """The opponent pool (``None`` with fixed opponents)."""
        return self.opponents if isinstance(self.opponents, OpponentPool) else None

    def update_pool(self, weights: Mapping[str, float], new: Mapping[str, Any] | None = None) -> None:
        """Make the pool's members ``weights`` (name -> weight): add the agents of ``new``
        (name -> agent) first, remove the members not named, set every weight. Games already
        dealt keep their opponents; the next deals draw from the new pool. A refused update
        (a name that is neither a member nor in ``new``, a name in ``new`` that a member of
        another agent has, a bad weight or agent, no positive weight left) raises
        ``ValueError`` and leaves the pool as it was; ``new`` naming a member with that very
        agent object changes nothing of it (an update sent twice in one process; a copy, as
        Ray sends one, is another agent, refused under a member's name: give each snapshot
        a name of its own)."""
        pool = self.pool
        if pool is None:
            raise ValueError("update_pool needs an opponent pool (opponents given as "
                             "{agent: weight}); this env has fixed opponents")
        for what, value in (("weights", weights), ("new", {} if new is None else new)):
            if not isinstance(value, Mapping):
                raise ValueError(f"update_pool {what}={shown(value, 60)} ({type(value).__name__}); "
                                 f"allowed: a dict of name -> "
                                 f"{'weight' if what == 'weights' else 'agent'}")
        unknown = [n for n in weights if n not in pool.names and n not in (new or {})]
        if unknown:
            raise ValueError(f"update_pool weights name {shown(unknown[0], 60)}, neither a member nor in "
                             f"new; members: {', '.join(map(repr, pool.names)) or 'none'}")
        kept = (list(pool.agents), list(pool.names), list(pool.weights))
        try:
            for name, agent in (new or {}).items():
                if name in pool.names and pool.agents[pool.names.index(name)] is agent:
                    continue   # before: any agent under a member's name was dropped unchecked
                pool.add(agent, 0.0, name)   # its weight comes with the others (a member's
                # name refused)
            pool.reweight(weights)   # all at once: no moment without a positive weight
            pool.probabilities()   # some weight positive, the sum finite
        except Exception:
            pool.agents, pool.names, pool.weights = kept
            raise

    # ---- episodes -----------------------------------------------------------------------
    def _observe(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        np.copyto(self._mask, self.batch.action_masks())
        return {OBS_KEY: obs, MASK_KEY: self._mask.copy()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Deal every game again (from ``seed`` when given) and play the opponents up to each
        learner's first turn."""
        seed = check_seed("seed", seed)
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"options={shown(options, 80)}; allowed: a dict or None (no options)")
        seed, self._first_seed = (self._first_seed if seed is None else seed), None
        return self._observe(self.batch.reset(seed)), {}

    def step(self, actions: Any):
        """``actions``: ``(num_envs,)`` integer action ids. Games that ended on the previous
        step are dealt again instead (their action is ignored)."""
        r = self.batch.step(actions)
        return self._observe(r.obs), r.rewards, r.terminated, r.truncated, {}

    def close_extras(self, **kwargs: Any) -> None:
        pass


class OnoMultiAgentEnv(MultiAgentEnv):
    """One game with every seat an agent (see the module docstring). ``config`` keys:
    ``rules``, ``num_players``, ``seed``, ``max_decisions``, ``reward``,
    ``observation_version``."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        cfg = _config(config, MULTI_AGENT_KEYS, "OnoMultiAgentEnv")
        self.rules = _rules(cfg)
        seed = check_seed("seed", cfg.get("seed"))
        self.game = VecGame(self.rules, 1, seed=seed, max_decisions=cfg.get("max_decisions"),
                            reward=cfg.get("reward", "win"),
                            observation_version=cfg.get("observation_version", 1))
        n = self.rules.num_players
        self.possible_agents = [f"player_{k}" for k in range(n)]
        self.agents = list(self.possible_agents)
        space = observation_space(self.rules, self.game.observation_version)
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in self.possible_agents}
        self._pending = np.zeros(n, np.float64)   # rewards not yet handed to their seat
        self._over = True
        self._dealt = False   # reset() not called yet
        self._first_seed = seed   # the first reset()'s, where it gives none

    def _obs(self, seat: int) -> dict[str, np.ndarray]:
        acting = seat == int(self.game.state.current[0]) and not self._over
        mask = self.game.legal_mask()[0] if acting else np.zeros(NUM_ACTIONS, np.bool_)
        return {OBS_KEY: self.game.observe(seat)[0], MASK_KEY: mask.astype(np.float32)}

    @property
    def acting_agent(self) -> str:
        """The agent whose turn it is."""
        return cast(str, self.possible_agents[int(self.game.state.current[0])])

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        seed = check_seed("seed", seed)
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"options={shown(options, 80)} ({type(options).__name__}); allowed: a "
                             f"dict or None (this env takes no reset options)")
        seed, self._first_seed = (self._first_seed if seed is None else seed), None
        self.game.reset(seed=seed)
        while self.game.finished[0]:   # a deal that ends before anyone acts: deal again
            self.game.reset()
        self._pending[:] = 0.0
        self._over = False
        self._dealt = True
        seat = int(self.game.state.current[0])
        return {self.possible_agents[seat]: self._obs(seat)}, {}

    def step(self, action_dict: Mapping[str, Any]):  # type: ignore[override]  # our agent ids are str
        if self._over:
            raise RuntimeError("step() after the episode ended: call reset()" if self._dealt
                               else "step() before reset(): call reset() first")
        agent = self.acting_agent
        if not isinstance(action_dict, Mapping) or set(action_dict) != {agent}:
            got = list(action_dict) if isinstance(action_dict, Mapping) else action_dict
            raise ValueError(f"actions={shown(got, 80)}: the acting agent is {agent!r}; give exactly "
                             f"{{{agent!r}: action}}")
        a = check_int("action", check_action("action", action_dict[agent]), 0, NUM_ACTIONS - 1)
        result = self.game.step(np.array([a]))   # ValueError naming the legal actions
        self._pending += result.rewards[0]
        terminated = bool(result.terminated[0])
        truncated = bool(result.truncated[0]) and not terminated
        if terminated or truncated:
            self._over = True
            obs = {p: self._obs(k) for k, p in enumerate(self.possible_agents)}
            rewards = {p: float(self._pending[k]) for k, p in enumerate(self.possible_agents)}
            self._pending[:] = 0.0
            return (obs, rewards, {"__all__": terminated}, {"__all__": truncated}, {})
        # a seat's rewards wait for its next observation (per-round rewards in a match)
        seat = int(self.game.state.current[0])
        rewards = {self.possible_agents[seat]: float(self._pending[seat])}
        self._pending[seat] = 0.0
        return ({self.possible_agents[seat]: self._obs(seat)}, rewards,
                {"__all__": False}, {"__all__": False}, {})


def __getattr__(name: str) -> Any:
    if name == "OnoVectorEnv":   # the 0.2 name, shared with the Gymnasium vector env's
        import warnings

        warnings.warn("ono_env.envs.rllib_env.OnoVectorEnv is now OnoRLlibVectorEnv (the "
                      "Gymnasium vector env keeps the name OnoVectorEnv); the old name is "
                      "removed in ono_env 0.4", DeprecationWarning, stacklevel=2)
        return OnoRLlibVectorEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
