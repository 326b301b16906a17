"""Argument checks shared by every public constructor and step function.

Each refuses a value of the wrong type instead of coercing it (``True`` is not a count,
``"no"`` is not a flag, ``1.5`` is not a seed or an action) and raises one ``ValueError``
naming the argument, the value and what is allowed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MAX_SEED = 2**63 - 1


def is_int(value: Any) -> bool:
    """A Python or NumPy integer, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as an ``int`` when it is an integer (not a bool) from ``low`` to ``high``."""
    allowed = f"an integer >= {low:,}" if high is None else f"an integer from {low:,} to {high:,}"
    if not is_int(value):
        raise ValueError(f"{name}={value!r} ({type(value).__name__}); allowed: {allowed}")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name}={value!r}; allowed: {allowed}")
    return int(value)


def check_bool(name: str, value: Any) -> bool:
    """``value`` when it is a bool (Python or NumPy)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={value!r} ({type(value).__name__}); allowed: True or False")
    return bool(value)


def check_seed(name: str, value: Any, allow_none: bool = True) -> int | None:
    """A seed: ``None`` (when allowed) or an integer from 0 to 2**63 - 1."""
    if value is None and allow_none:
        return None
    return check_int(name, value, 0, MAX_SEED)


def check_choice(name: str, value: Any, choices: Any) -> Any:
    """``value`` when it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={value!r}; allowed: {' | '.join(map(str, choices))}")
    return value


def check_action(name: str, value: Any) -> int:
    """An action id as an ``int``: a Python or NumPy integer (or a 0-d integer array), not a
    bool, float or string. (The range and legality are the caller's to check.)"""
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "iu":
        return int(value)
    if not is_int(value):
        raise ValueError(f"{name}={value!r} ({type(value).__name__}); allowed: an integer action id")
    return int(value)


def check_learner_seat(value: Any, num_players: int) -> int | str:
    """The learner's seat of an environment: ``"random"`` (a new seat every episode, drawn
    from the environment's seeded generator) or a seat number."""
    if value == "random" and isinstance(value, str):
        return value
    if not is_int(value) or not 0 <= value < num_players:
        raise ValueError(f"learner_seat={value!r}; allowed: 'random' or a seat from 0 to "
                         f"{num_players - 1}")
    return int(value)
