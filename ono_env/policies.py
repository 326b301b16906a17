"""Policies: the one interface used wherever an opponent (or any agent) is needed.

A policy is any object with ``act(obs, mask, rng) -> actions``: ``obs`` is ``(B, D) float32``
(the observations of :mod:`ono_env.observation`), ``mask`` is ``(B, A) bool`` (the legal
actions; every row has at least one), ``rng`` a ``numpy.random.Generator``; it returns ``(B,)``
integer actions, each legal in its row. Policies see nothing but these inputs.

``make_policy("random")`` builds a named policy; ``register_policy`` adds names (the
rule-based agents of ``agents/`` register theirs when imported).

A policy that never reads ``obs`` may set ``uses_observation = False``; batch drivers then
skip encoding observations for it and pass an array of the right shape whose contents are
unspecified.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from ono_env.game import random_legal


@runtime_checkable
class Policy(Protocol):
    """``act(obs (B, D) float32, mask (B, A) bool, rng) -> (B,) int``, legal in every row."""

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        ...


class RandomPolicy:
    """Uniform over the legal actions of each row (one uniform draw of ``rng`` per row)."""

    name = "random"
    uses_observation = False

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return random_legal(mask, rng)

    def __repr__(self) -> str:
        return "RandomPolicy()"


_REGISTRY: dict[str, Callable[[], Policy]] = {"random": RandomPolicy}


def register_policy(name: str, factory: Callable[[], Policy]) -> None:
    """Make ``make_policy(name)`` build ``factory()``."""
    _REGISTRY[name] = factory


def policy_names() -> list[str]:
    return sorted(_REGISTRY)


def make_policy(spec: Any) -> Policy:
    """A policy from a registered name or an object that has ``act``."""
    if isinstance(spec, str):
        if spec not in _REGISTRY:
            raise ValueError(f"unknown agent {spec!r}: known agents are {', '.join(policy_names())}")
        return _REGISTRY[spec]()
    if isinstance(spec, Policy):
        return spec
    raise ValueError(
        f"an agent must be a name ({', '.join(policy_names())}) or an object with "
        f"act(obs, mask, rng); got {type(spec).__name__}"
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
