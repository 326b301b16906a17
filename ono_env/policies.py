"""Policies: the one interface used wherever an opponent (or any agent) is needed.

A policy is any object with ``act(obs, mask, rng) -> actions``: ``obs`` is ``(B, D) float32``
(the observations of :mod:`ono_env.observation`), ``mask`` is ``(B, A) bool`` (the legal
actions; every row has at least one), ``rng`` a ``numpy.random.Generator``; it returns ``(B,)``
integer actions, each legal in its row. Policies see nothing but these inputs.

``make_policy(spec, rules)`` builds a policy from a registered name ("random", and the
rule-based agents of ``agents/``: "greedy", "color", "defensive"), from the path of a saved
model (``.zip``, loaded by ``agents.load_policy``), or returns an object that already has
``act``. ``register_policy`` adds names. Rule-based agents need the rule set to read the
observation, so ``make_policy`` passes ``rules`` to every factory.

A policy that never reads ``obs`` may set ``uses_observation = False``; batch drivers then
skip encoding observations for it and pass an array of the right shape whose contents are
unspecified.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from ono_env.game import random_legal
from ono_env.rules import RuleSet, resolve_rules


@runtime_checkable
class Policy(Protocol):
    """``act(obs (B, D) float32, mask (B, A) bool, rng) -> (B,) int``, legal in every row."""

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        ...


class RandomAgent:
    """Uniform over the legal actions of each row (one uniform draw of ``rng`` per row)."""

    name = "random"
    uses_observation = False

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return random_legal(mask, rng)

    def __repr__(self) -> str:
        return "RandomAgent()"


_REGISTRY: dict[str, Callable[[RuleSet], Policy]] = {"random": lambda rules: RandomAgent()}


def register_policy(name: str, factory: Callable[[RuleSet], Policy]) -> None:
    """Make ``make_policy(name, rules)`` build ``factory(rules)``."""
    _REGISTRY[name] = factory


def _load_builtin_agents() -> None:
    import agents  # noqa: F401  (registers the rule-based agents)


def policy_names() -> list[str]:
    """The registered agent names (built-in ones included)."""
    _load_builtin_agents()
    return sorted(_REGISTRY)


def is_model_path(spec: str) -> bool:
    """Does the agent spec name a saved model file rather than a registered agent?"""
    return spec.endswith(".zip") or os.sep in spec or "/" in spec


def make_policy(spec: Any, rules: Any = None) -> Policy:
    """A policy from a registered name, a saved model's path, or an object that has ``act``.

    ``rules`` (a RuleSet, preset name, ...; default classic) is the rule set the policy will
    play: rule-based agents read the observation layout from it, and a saved model is
    refused unless it was trained for it."""
    rules = resolve_rules(rules)
    if isinstance(spec, str):
        if is_model_path(spec):
            from agents.learned import load_policy
            return load_policy(spec, rules)
        if spec not in _REGISTRY:
            _load_builtin_agents()
        if spec not in _REGISTRY:
            raise ValueError(f"unknown agent {spec!r}: known agents are {', '.join(policy_names())}, "
                             f"or the path of a saved model (.zip)")
        return _REGISTRY[spec](rules)
    if isinstance(spec, Policy):
        return spec
    raise ValueError(
        f"an agent must be a name ({', '.join(policy_names())}), the path of a saved model "
        f"(.zip), or an object with act(obs, mask, rng); got {type(spec).__name__}"
    )


def checked_actions(policy: Policy, obs: np.ndarray, mask: np.ndarray,
                    rng: np.random.Generator) -> np.ndarray:
    """``policy.act`` with its output checked: shape (B,), and legal in every row."""
    actions = np.asarray(policy.act(obs, mask, rng))
    if actions.shape != (mask.shape[0],) or not np.issubdtype(actions.dtype, np.integer):
        raise ValueError(f"{policy!r}.act returned {actions.dtype} {actions.shape}; "
                         f"expected ({mask.shape[0]},) integers")
    ok = (actions >= 0) & (actions < mask.shape[1])
    ok[ok] &= mask[np.flatnonzero(ok), actions[ok]]
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"{policy!r} chose illegal action {int(actions[k])} in row {k}")
    return actions.astype(np.int64, copy=False)
