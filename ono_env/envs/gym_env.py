"""ONO as a single-agent Gymnasium environment: the learner plays one seat, the opponents'
turns are played inside ``step`` by the given policies.

.. code-block:: python

    import gymnasium, ono_env
    env = gymnasium.make("ono_env/Ono-v0", rules="basic", num_players=2, opponents=["random"], learner_seat=0)
    obs, info = env.reset(seed=0)
    mask = env.unwrapped.action_masks()          # (85,) bool

- Observation: ``(D,) float32`` (``ono_env.observation``) of the learner's seat, in layout
  ``observation_version`` (1, the default, or 2: one length for every table); action:
  ``Discrete(85)``; ``action_masks()`` returns the learner's legal actions (sb3-contrib's
  ``MaskablePPO`` finds it), and every ``reset`` and ``step`` also hands them over as
  ``info["action_mask"]`` ``(85,) bool`` (all False once the episode is over), where
  libraries that read masks from the info find them (TorchRL's info reader:
  docs/examples/torchrl_ppo.py).
- Reward: the learner's own reward only (``VecGame`` rewards of its seat), summed over the
  opponents' moves up to its next turn (a reward from the opponents' moves before the
  learner's first decision, possible with per-round rewards in a match, comes with its first
  step).
- ``learner_seat``: ``"random"`` (default: a new seat every episode, drawn from the env's
  seeded generator) or a seat number; ``info["learner_seat"]`` after ``reset`` and each ``step`` says which.
  The same name and default as :class:`ono_env.envs.sb3.OnoVecEnv`. A deal that ends before the
  learner's first decision (possible with tiny hands), or is cut there at ``max_decisions``,
  is dealt again, so ``reset`` always hands the learner a game to play (a ``max_decisions``
  shorter than a deal's opening keeps only the deals where the learner acts early).
- Seeding: after ``reset(seed=s)`` every later episode (deal, learner seat, opponents drawn
  from a pool, the opponents' choices) follows from ``s`` alone.
- Wrong types are refused with ``ValueError``: an action must be an integer id 0..84 (a
  NumPy integer or 0-d integer array is fine; a float, bool, string or an id out of range is
  refused, whatever ``illegal_action`` says), a seed an integer from 0 to 2**63 - 1, and
  ``options`` a dict or None (``reset`` takes no options; their contents are ignored).
- ``opponents``: one agent for all opponent seats, one per seat (from the learner's left),
  or a pool ``{agent: weight}`` drawn per episode and seat (``ono_env.envs.opponents``). An agent
  is a name (``"random"``, ``"greedy"``, ``"color"``, ``"defensive"``, a shipped policy such
  as ``"ppo-basic-2p"``), a model file's path, or an object with ``act``. An opponent that
  fails (an illegal choice, or an error of its own) inside ``step`` or ``reset`` raises to
  the caller, and ``step`` is then refused until ``reset`` (``opponents.midway``).
- ``illegal_action``: ``"lose"`` (default, PettingZoo's usual handling: the episode ends, the
  learner gets -1, ``info["illegal_action"]`` and ``info["legal_actions"]`` say what happened
  and a warning is logged) or ``"raise"`` (``ValueError`` naming the legal actions). Either
  way the game is unchanged.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ono_env.cards import ACTION_NAMES, NUM_ACTIONS
from ono_env.checks import (
    check_action,
    check_choice,
    check_int,
    check_learner_seat,
    check_seed,
    shown,
)
from ono_env.envs.opponents import OpponentDriver, check_rule_overrides, make_opponents, midway
from ono_env.game import CopiedWhole, VecGame
from ono_env.observation import observation_high
from ono_env.render import render_text
from ono_env.rules import resolve_rules

ENV_ID = "ono_env/Ono-v0"
"""The Gymnasium id the single env is registered under (``gymnasium.make(ENV_ID)``)."""


class RenderModeError(ValueError, TypeError):
    """A ``render_mode`` the env does not draw. A ``ValueError`` as every bad value is, and a
    ``TypeError`` too: Stable-Baselines3's ``make_vec_env`` (and RL Zoo through it) asks
    ``gymnasium.make`` for ``render_mode="rgb_array"`` first and makes the env without one
    only where that raises ``TypeError`` (before: its ``ValueError`` ended ``make_vec_env``)."""


class OnoEnv(CopiedWhole, gym.Env):
    """One game as a Gymnasium env: the learner plays one seat and the opponents' turns are
    played inside ``step`` (the module docstring has the spaces, rewards and episode ends).

    Args:
        rules: a ``RuleSet``, preset name, rules YAML path or mapping (default ``"classic"``,
            as for ``VecGame``; the console scripts default to ``basic``).
        num_players: sets the rules' player count (None: the rules' own).
        opponents: the other seats' agents: one agent (a name, a model path or an agent
            object) for every other seat, a list of one per seat to the learner's left, or an
            ``OpponentPool`` or ``{agent: weight}`` (default ``"random"``;
            :mod:`ono_env.envs.opponents`).
        learner_seat: the learner's seat, or ``"random"`` (the default) for a new seat each
            episode, drawn from the env's seeded generator.
        max_decisions, skip_forced, reward: as for :class:`~ono_env.game.VecGame` (an
            episode cut after that many decisions; single-option decisions taken for the
            learner; ``"win"``, the default, or the other reward modes it lists).
        observation_version: 1 (the default) or 2 (one length for every table).
        **rule_overrides: ``RuleSet`` options that change ``rules`` (``draw_until_playable=True``).
        render_mode: None, ``"human"`` or ``"ansi"``.
        illegal_action: ``"lose"`` (the default: the episode ends as a loss) or ``"raise"``.
    """

    # render_fps: Gymnasium's checker asks for it with any render mode; the text is drawn
    # once a step, whatever the rate
    metadata = {"render_modes": ["human", "ansi"], "render_fps": 4}

    def __init__(
        self,
        rules: Any = "classic",
        num_players: int | None = None,
        opponents: Any = "random",
        learner_seat: int | str = "random",
        render_mode: str | None = None,
        *,
        max_decisions: int | None = None,
        skip_forced: bool = False,
        reward: str = "win",
        illegal_action: str = "lose",
        observation_version: int = 1,
        **rule_overrides: Any,
    ) -> None:
        check_rule_overrides(rule_overrides, "OnoEnv", OnoEnv.__init__)
        if num_players is not None:
            rule_overrides["num_players"] = num_players
        self.rules = resolve_rules(rules, **rule_overrides)
        self._learner_seat = check_learner_seat(learner_seat, self.rules.num_players)
        check_choice("illegal_action", illegal_action, ("lose", "raise"))
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise RenderModeError(f"render_mode={shown(render_mode, 40)}; allowed: None | "
                                  f"{' | '.join(self.metadata['render_modes'])}")
        self.render_mode = render_mode
        self.illegal_action = illegal_action
        self.game = VecGame(self.rules, 1, seed=None, max_decisions=max_decisions,
                            skip_forced=skip_forced, reward=reward,
                            observation_version=observation_version)
        self.opponents = make_opponents(opponents, self.rules)
        self._driver = OpponentDriver(self.game, self.opponents)
        self._learner = np.zeros(1, np.int64)
        self.observation_space = spaces.Box(-1.0, observation_high(self.rules),
                                            (self.game.observation_size,), np.float32)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self._over = True
        self._dealt = False   # reset() not called yet
        self._failed: str | None = None   # why the last step() or reset() failed midway

    @property
    def learner_seat(self) -> int | str:
        """The learner's seat: a seat number, or ``"random"`` (drawn every episode)."""
        return self._learner_seat

    @learner_seat.setter
    def learner_seat(self, value: int | str) -> None:
        self._learner_seat = check_learner_seat(value, self.rules.num_players)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Deal a new episode. After ``reset(seed=s)`` every later episode (deal, learner
        seat, opponents and their choices) follows from ``s`` alone. A deal that ends before
        the learner's first decision is dealt again."""
        seed = check_seed("seed", seed)
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"options={shown(options, 80)} ({type(options).__name__}); allowed: a "
                             f"dict or None (OnoEnv.reset takes no options)")
        super().reset(seed=seed)
        with midway("reset()", self._stop):   # an opponent may fail in the deal
            self.game.reset(seed=int(self.np_random.integers(2**63)))
            self._driver.start(np.ones(1, np.bool_), self._learner, self.learner_seat,
                               self.np_random)
        self._over, self._failed = False, None
        self._dealt = True
        if self.render_mode == "human":
            self.render()
        return self._obs(), {"learner_seat": int(self._learner[0]),
                             "action_mask": self.action_masks()}

    def step(self, action: int):
        """Play the learner's ``action`` (an integer id 0..84; a float, bool, string or an id
        out of range is refused with ``ValueError``), then the opponents' decisions up to the
        learner's next turn."""
        a = check_int("action", check_action("action", action), 0, NUM_ACTIONS - 1)
        if self._over:
            raise RuntimeError(self._failed or ("step() after the episode ended: call reset()"
                                                if self._dealt
                                                else "step() before reset(): call reset() first"))
        mask = self.action_masks()
        if not mask[a]:
            legal = [ACTION_NAMES[k] for k in np.flatnonzero(mask)]
            name = ACTION_NAMES[a]
            if self.illegal_action == "raise":
                raise ValueError(f"illegal action {name!r}; legal actions: {', '.join(legal)}")
            gym.logger.warn(f"illegal action {name!r} ends the episode as a loss; legal: {legal}")
            self._over = True
            # -1, and what the opponents' opening moves earned, which arrives with the first
            # step (before: dropped where that step was illegal)
            lost = -1.0 + float(self._driver.take_pending()[0])
            return self._obs(), lost, True, False, {"illegal_action": name, "legal_actions": legal,
                                                    "learner_seat": int(self._learner[0]),
                                                    "action_mask": self.action_masks()}
        reward = self._driver.take_pending()  # the opponents' opening moves, if any
        result = self.game.internals.step_unchecked(np.array([a]))  # checked against the mask above
        with midway("step()", self._stop):   # the learner's move is made
            reward += result.rewards[0, self._learner[0]]
            self._driver.advance(self._learner, self.np_random, reward)
        terminated = bool(self.game.terminated[0])
        truncated = bool(self.game.truncated[0])
        self._over = terminated or truncated
        if self.render_mode == "human":
            self.render()
        # the seat in every info, reset's and step's (before: reset's alone, so an episode's
        # last info, a vector env's final_info, did not say whose episode it was)
        return self._obs(), float(reward[0]), terminated, truncated, {
            "learner_seat": int(self._learner[0]), "action_mask": self.action_masks()}

    def _stop(self, why: str) -> None:
        self._over, self._failed = True, why

    def action_masks(self) -> np.ndarray:
        """``(85,) bool``: the learner's legal actions (all False once the episode is over,
        also when it ended on an illegal action)."""
        if self._over:
            return np.zeros(NUM_ACTIONS, np.bool_)
        return self.game.legal_mask()[0].copy()

    def _obs(self) -> np.ndarray:
        return self.game.observe(self._learner)[0]

    def render(self) -> str | None:  # type: ignore[override]  # text, not Gymnasium's frames
        if self.render_mode is None:
            return None
        if not self._dealt:   # before: a table of a deal nobody asked for (as ono_v0 says)
            raise RuntimeError("render() before reset(): call reset() first")
        text = render_text(self.game, 0, seat=int(self._learner[0]), ansi=True)
        if self.render_mode == "human":
            print(text)
            return None
        return text
