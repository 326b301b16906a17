"""The agent interface: what plays a seat, wherever one is needed.

An agent is any object with ``act(obs, mask, rng) -> actions``: ``obs`` is ``(B, D) float32``
(the observations of :mod:`ono_env.observation`), ``mask`` is ``(B, A) bool`` (the legal
actions; every row has at least one), ``rng`` a ``numpy.random.Generator``; it returns ``(B,)``
integer actions, each legal in its row. Agents see nothing but these inputs.

An agent that never reads ``obs`` may set ``uses_observation = False``; batch drivers then
skip encoding observations for it and pass an array of the right shape whose contents are
unspecified.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from ono_env.game import random_legal


@runtime_checkable
class Agent(Protocol):
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


def checked_actions(agent: Agent, obs: np.ndarray, mask: np.ndarray,
                    rng: np.random.Generator) -> np.ndarray:
    """``agent.act`` with its output checked: shape (B,), integers, and legal in every row."""
    actions = np.asarray(agent.act(obs, mask, rng))
    if actions.shape != (mask.shape[0],) or not np.issubdtype(actions.dtype, np.integer):
        raise ValueError(f"{agent!r}.act returned {actions.dtype} {actions.shape}; "
                         f"expected ({mask.shape[0]},) integers")
    ok = (actions >= 0) & (actions < mask.shape[1])
    ok[ok] &= mask[np.flatnonzero(ok), actions[ok]]
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        raise ValueError(f"{agent!r} chose illegal action {int(actions[k])} in row {k}")
    return actions.astype(np.int64, copy=False)
