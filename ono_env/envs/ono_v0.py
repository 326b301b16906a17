"""ONO as a PettingZoo AEC environment.

.. code-block:: python

    from ono_env import ono_v0
    env = ono_v0.env(rules="classic", num_players=4, render_mode="ansi")
    env.reset(seed=42)
    for agent in env.agent_iter():
        obs, reward, termination, truncation, info = env.last()
        action = None if termination or truncation else env.action_space(agent).sample(obs["action_mask"])
        env.step(action)

:agents: ``player_0`` ... ``player_{N-1}``; ``player_k`` sits at seat k, seat k+1 on its left
:action space: ``Discrete(85)``, the same for every rule set (``ono_env.print_action_table()``)
:observation: ``{"observation": (D,) float32, "action_mask": (85,) int8}``; layout printed
    by ``ono_env.observation.print_observation_layout(env.rules)``; the mask is all 0 for an
    agent that is not acting; ``observation_version=2`` gives every agent the layout of one
    length for every table (``D`` = 1,415)
:rewards: at the end of the episode (round, or match with ``target_score``): winner +1,
    every other player -1/(N-1) (k seats tied on the lowest total of a penalty-scored match:
    +1/k, the others -1/(N-k)); ``reward="points"`` gives per-round score rewards (see
    ``VecGame``)
:reset: a deal that ends before any decision (``skip_forced`` with small hands: every
    decision forced) is dealt again, as the Gymnasium, SB3 and RLlib environments do
:infos: the acting agent's ``info["legal_actions"]`` lists the legal action names; other agents get an empty list
:turn order: whoever the rules say acts next: after a Skip, a draw or a Wild Draw Four
    challenge the same or another agent may act twice in a row

``raw_env`` raises ``ValueError`` naming the legal actions when given an illegal one. ``env``
returns :class:`checked_env`: ``raw_env`` with the behaviour of PettingZoo's usual wrappers
(``OrderEnforcingWrapper``, ``AssertOutOfBoundsWrapper``, ``TerminateIllegalWrapper``, the
stack ``env()`` used to build) written into the class instead of wrapped around it, since
each wrapper level costs an attribute lookup through ``__getattr__`` on every read
(``env.agents``, ``env.terminations``, ...), about two thirds of a step's time:

- order: ``rewards``, ``terminations``, ``truncations``, ``infos``, ``agent_selection``,
  ``num_agents`` and ``agents`` raise ``AttributeError`` before ``reset``; ``step``,
  ``observe``, ``render``, ``state`` and ``agent_iter`` raise ``AssertionError`` before it
  (PettingZoo's messages); a loop over ``agent_iter`` that does not step asserts; ``step``
  after every agent is done warns and does nothing;
- bounds: an action that is not an integer id 0..84 (or None once the agent is done)
  raises ``AssertionError`` naming it (a bool is not an action id);
- an illegal move (not in the observation's ``action_mask``) ends the episode: PettingZoo's
  warning is printed, every agent is terminated and truncated, the offender's reward is -1
  and the others' 0 (an int, as PettingZoo's wrapper pays it; the infos are left as they
  were, so an agent's ``legal_actions`` may still list moves: its mask is all zero), and the
  agents then step out with ``None``.

``env().unwrapped`` is the env itself (there are no wrappers).

Wrong types are refused with one ``ValueError`` naming the argument, the value and what is
allowed, before anything changes: an action given to :class:`raw_env` must be an integer id
0..84 (a NumPy integer or a 0-d integer array is fine; not a float, bool or string), ``None``
exactly when the agent is done (``env()``'s bounds check raises ``AssertionError`` for a bad
action first, as above); an agent must be one of ``possible_agents`` (``observe``, ``observation_space``,
``action_space``); a seed an integer from 0 to 2**63 - 1; ``options`` a dict or None (no
reset options exist; their contents are ignored); ``render_mode`` one of ``metadata``'s.

Version history: v0, first release.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils.env import AECIterable, AECIterator
from pettingzoo.utils.env_logger import EnvLogger

from ono_env._engine import G_CURRENT, G_TERMINATED, G_TRUNCATED
from ono_env.cards import ACTION_NAMES, NUM_ACTIONS
from ono_env.checks import check_action, check_choice, check_seed, shown
from ono_env.envs.opponents import MAX_REDEALS, check_rule_overrides
from ono_env.game import CopiedWhole, VecGame
from ono_env.observation import observation_high, observation_size
from ono_env.render import describe_action, render_text
from ono_env.rules import RuleSet, resolve_rules

HISTORY = 6  # actions shown by render
_NAMES = np.array(ACTION_NAMES, dtype=object)


def env(**kwargs: Any) -> AECEnv:
    """The AEC env with PettingZoo's order, bounds and illegal-move checks
    (:class:`checked_env`); keyword arguments as for :class:`raw_env`."""
    return checked_env(**kwargs)


RENDER_MODES = ("human", "ansi")
"""What ``render_mode`` may be besides None (``metadata["render_modes"]``)."""


class raw_env(CopiedWhole, AECEnv):
    """ONO for N agents. ``rules``: a RuleSet, preset name, rules YAML path or mapping;
    ``num_players`` and other keyword arguments override rule options; ``max_decisions``,
    ``skip_forced``, ``reward`` and ``observation_version`` are passed to
    :class:`~ono_env.game.VecGame`."""

    metadata = {"name": "ono_v0", "render_modes": list(RENDER_MODES), "is_parallelizable": False}

    def __init__(
        self,
        rules: RuleSet | str | Any = "classic",
        num_players: int | None = None,
        render_mode: str | None = None,
        *,
        max_decisions: int | None = None,
        skip_forced: bool = False,
        reward: str = "win",
        observation_version: int = 1,
        **rule_overrides: Any,
    ) -> None:
        super().__init__()
        check_rule_overrides(rule_overrides, "ono_v0's env", raw_env.__init__, learner=False)
        if num_players is not None:
            rule_overrides["num_players"] = num_players
        self.rules = resolve_rules(rules, **rule_overrides)
        if render_mode is not None:   # the message names None too (before: "human | ansi")
            check_choice("render_mode", render_mode, [None, *RENDER_MODES])
        self.render_mode = render_mode
        self._game_kwargs: dict[str, Any] = dict(max_decisions=max_decisions,
                                                 skip_forced=skip_forced, reward=reward,
                                                 observation_version=observation_version)
        n = self.rules.num_players
        self.possible_agents = [f"player_{k}" for k in range(n)]
        self.agents = self.possible_agents[:]
        size = observation_size(self.rules, observation_version)   # checks the version
        obs_space = spaces.Dict({
            "observation": spaces.Box(-1.0, observation_high(self.rules), (size,), np.float32),
            "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), np.int8),
        })
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces: dict[str, spaces.Space] = {a: spaces.Discrete(NUM_ACTIONS)
                                                       for a in self.possible_agents}
        self.game = VecGame(self.rules, 1, seed=None, **self._game_kwargs)
        self._history: deque[tuple[int, int]] = deque(maxlen=HISTORY)  # (seat, action)
        self._seat_of = {a: k for k, a in enumerate(self.possible_agents)}
        self._agent_at = tuple(self.possible_agents)
        self._action = np.zeros(1, np.int64)
        self._g = self.game.state.g       # the game's scalar fields (G_* columns), a view
        self._inner = self.game.internals  # its step and buffers (GameInternals)
        self._live = False                # reset() dealt a game that is not over

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[self.possible_agents[self._seat(agent)]]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[self.possible_agents[self._seat(agent)]]

    # ---- episode ----------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        seed = check_seed("seed", seed)
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"options={shown(options, 80)} ({type(options).__name__}); allowed: a "
                             f"dict or None (ono_v0 takes no reset options)")
        self.game.reset(seed=seed)
        g = self.game.state.g   # the game's flags read as scalars: finished[0] builds arrays
        for _ in range(MAX_REDEALS):   # a deal that ended before any decision: deal again
            if not (g[0, G_TERMINATED] or g[0, G_TRUNCATED]):
                break
            self.game.reset()
        else:
            raise RuntimeError(f"{MAX_REDEALS} deals in a row ended before any decision: these "
                               f"rules leave no game to play")
        self._mask = self.game.legal_mask()[0].copy()
        self._obs = self.game.observe(int(self.game.state.current[0]))[0].copy()
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self._history.clear()
        self.infos: dict[str, dict[str, Any]] = {a: {"legal_actions": []} for a in self.agents}
        self._select_acting_agent()
        self._ready = True
        self._live = True   # the loop above left a game that is on

    def _select_acting_agent(self) -> None:
        # self._mask / self._obs hold the acting seat's legal actions and observation; only
        # the infos of the agents whose entry changes are replaced (new dicts, so an info a
        # caller holds from an earlier step never changes under it)
        before = getattr(self, "agent_selection", None)
        self.agent_selection = agent = self._agent_at[int(self._g[0, G_CURRENT])]
        if before is not None and before != agent and before in self.infos:
            self.infos[before] = {"legal_actions": []}
        self.infos[agent] = {"legal_actions": _NAMES[self._mask].tolist()}

    def step(self, action: int | None) -> None:
        self._require_reset("step")
        if not self.agents:
            raise RuntimeError("step() after every agent is done: call reset()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            if action is not None:
                raise ValueError(f"action {shown(action, 40)} for {agent}, which is done; allowed: None")
            self._was_dead_step(action)
            return
        if action is None:
            raise ValueError(f"action None for {agent}; allowed: an action id 0..{NUM_ACTIONS - 1}")
        action = check_action(f"action for {agent}", action)
        if not 0 <= action < NUM_ACTIONS:
            raise ValueError(f"action {shown(action, 40)} for {agent}; allowed: an action id 0..{NUM_ACTIONS - 1}")
        self._play(agent, action, check=True)  # ValueError naming the legal actions if illegal

    def _play(self, agent: str, action: int, check: bool) -> None:
        """``agent`` (the acting one) takes ``action`` (an id 0..84); ``check=False`` for an
        action already checked against ``self._mask``."""
        inner = self._inner
        self._action[0] = action
        bad = inner.step_observed(self._action, check)
        if bad >= 0:   # refused: nothing changed, the agent's reward so far included
            inner.raise_illegal(bad, self._action)
        self._cumulative_rewards[agent] = 0.0
        self._mask[:] = inner.mask[0]
        self._obs[:] = inner.next_obs[0]
        self._history.append((self._seat_of[agent], action))
        self.rewards = dict(zip(self.possible_agents, inner.rewards[0].tolist()))
        terminated, truncated = bool(self._g[0, G_TERMINATED]), bool(self._g[0, G_TRUNCATED])
        if terminated or truncated:
            self._live = False
            self.terminations = dict.fromkeys(self.agents, terminated)
            self.truncations = dict.fromkeys(self.agents, truncated)
            self.infos = {a: {"legal_actions": []} for a in self.agents}
        else:
            self._select_acting_agent()
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    # ---- views ------------------------------------------------------------------------
    def _require_reset(self, what: str) -> None:
        if not getattr(self, "_ready", False):
            raise RuntimeError(f"{what}() before reset(): call reset() first")

    def _acting(self, agent: str) -> bool:
        """Whether ``agent`` is to act in a game that goes on: not over, nor ended by an
        illegal move (here, or by a wrapper such as PettingZoo's TerminateIllegalWrapper,
        which ends the episode in its own terminations), after which every agent sees its
        own view and none has a legal action."""
        return (self._live and agent == self.agent_selection
                and not (self.terminations.get(agent) or self.truncations.get(agent)))

    def _seat(self, agent: Any) -> int:
        if not isinstance(agent, str) or agent not in self._seat_of:
            raise ValueError(f"unknown agent {shown(agent, 60)}; agents: {', '.join(self.possible_agents)}")
        return self._seat_of[agent]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        if self._acting(agent):   # the acting agent: cached
            return {"observation": self._obs.copy(), "action_mask": self._mask.astype(np.int8)}
        seat = self._seat(agent)
        self._require_reset("observe")
        return {"observation": self.game.observe(seat)[0].copy(),
                "action_mask": np.zeros(NUM_ACTIONS, np.int8)}

    def last(self, observe: bool = True):
        """PettingZoo's ``last()``; after every agent is done (the game is over and each has
        taken its ``None`` step) a ``RuntimeError`` saying so, not a bare ``KeyError``."""
        self._require_reset("last")
        if not self.agents:
            raise RuntimeError("last() after every agent is done: the game is over; call "
                               "reset() to deal a new one")
        return super().last(observe)

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        self._require_reset("render")   # before: a table of a deal nobody asked for
        seat = int(self.game.state.current[0])
        history = [describe_action(p, a) for p, a in self._history]
        text = render_text(self.game, 0, seat=seat, ansi=True, history=history)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        pass

    def legal_action_names(self) -> list[str]:
        """Names of the acting agent's legal actions (``RuntimeError`` before ``reset``, as
        for ``step`` and ``observe``; before, those of a deal nobody asked for)."""
        self._require_reset("legal_action_names")
        return self.game.legal_action_names(0)

    def __str__(self) -> str:
        return f"ono_v0({self.rules.name}, {self.rules.num_players} players)"


_BEFORE_RESET = frozenset({"rewards", "terminations", "truncations", "infos", "agent_selection",
                           "num_agents", "agents"})


class checked_env(raw_env):
    """:class:`raw_env` with PettingZoo's order, bounds and illegal-move checks built in
    (see the module docstring; what ``env()`` returns)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        del self.agents              # PettingZoo: not readable before reset
        self._has_reset = False
        self._has_updated = False

    def __getattr__(self, name: str) -> Any:
        # only reached when normal lookup fails: no cost on the reads that succeed
        if name in _BEFORE_RESET:
            raise AttributeError(f"{name} cannot be accessed before reset")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        super().reset(seed=seed, options=options)
        self._has_reset = True
        self._has_updated = True

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return super().observe(agent)

    def render(self) -> str | None:
        if not self._has_reset:
            EnvLogger.error_render_before_reset()
        return super().render()

    def state(self) -> np.ndarray:
        if not self._has_reset:
            EnvLogger.error_state_before_reset()
        return super().state()

    def agent_iter(self, max_iter: int = 2**63) -> AECIterable:
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return _CheckedIterable(self, max_iter)

    def step(self, action: int | None) -> None:
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        if not self.agents:
            self._has_updated = True
            EnvLogger.warn_step_after_terminated_truncated()
            return
        self._has_updated = True
        agent = self.agent_selection
        dead = self.terminations[agent] or self.truncations[agent]
        if action is None and dead:
            self._was_dead_step(None)
            return
        if (isinstance(action, bool) or not isinstance(action, (int, np.integer))
                or not 0 <= action < NUM_ACTIONS):
            if not (isinstance(action, np.ndarray) and action.shape == ()
                    and action.dtype.kind in "iu" and 0 <= action < NUM_ACTIONS):
                raise AssertionError(
                    f"action {shown(action, 40)} for {agent} is not in the action space "
                    f"Discrete({NUM_ACTIONS}): give an integer id 0..{NUM_ACTIONS - 1}"
                    + (", or None (the agent is done)" if dead else ""))
        if dead:
            raise ValueError(f"action {shown(action, 40)} for {agent}, which is done; allowed: None")
        if not self._mask[action]:
            EnvLogger.warn_on_illegal_move()
            self._live = False   # every agent sees its own view, and none has a legal action
            self._cumulative_rewards[agent] = 0
            self.terminations = dict.fromkeys(self.agents, True)
            self.truncations = dict.fromkeys(self.agents, True)
            # as PettingZoo's TerminateIllegalWrapper does, to the type: the others' 0 an int,
            # the infos left as they were (the suite plays it against that wrapper)
            self.rewards = dict.fromkeys(self.truncations, 0)
            self.rewards[agent] = -1.0
            self._accumulate_rewards()
            self._deads_step_first()
            return
        # checked against the env's mask just now; the engine checks again against its own
        # cached mask (nearly free), so a game changed behind the env's back is still safe
        self._play(agent, int(action), check=True)


class _CheckedIterable(AECIterable):
    def __iter__(self) -> _CheckedIterator:
        return _CheckedIterator(self.env, self.max_iter)


class _CheckedIterator(AECIterator):
    def __next__(self) -> str:
        agent = super().__next__()
        assert self.env._has_updated, "need to call step() or reset() in a loop over `agent_iter`"
        self.env._has_updated = False
        return agent
