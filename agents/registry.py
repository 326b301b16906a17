"""Agent names: the one table that turns a name (or a model file's path) into an agent.

``make_agent(spec, rules)`` builds an agent from a name (``random``, the rule-based
``greedy``, ``color``, ``defensive``, and one name per policy shipped in ``models/``:
``ppo-basic-2p``, ...; the search agents of :mod:`ono_env.agents.search`, ``pimc`` or
``pimc:N``, and the CHEATING ceilings ``oracle-hands`` and ``oracle``), from the path of a
saved model, or returns an object that already has ``act``. ``register_agent(name,
factory)`` adds a name; a factory takes the rule set the agent will play (rule-based agents
read the observation layout from it, and a saved model is refused unless it was trained
for it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from ono_env.agents.base import Agent, RandomAgent
from ono_env.agents.learned import load_agent, shipped_models
from ono_env.agents.rule_based import RULE_BASED
from ono_env.agents.search import SEARCH_AGENTS
from ono_env.rules import RuleSet, resolve_rules

Factory = Callable[[RuleSet], Agent]


def _shipped_factory(path) -> Factory:
    return lambda rules: load_agent(path, rules)


def _builtin() -> dict[str, Factory]:
    table: dict[str, Factory] = {"random": lambda rules: RandomAgent()}
    table.update(RULE_BASED)
    for name, path in shipped_models().items():
        table[name] = _shipped_factory(path)
    return table


_REGISTRY: dict[str, Factory] = _builtin()


def register_agent(name: str, factory: Factory) -> None:
    """Make ``make_agent(name, rules)`` build ``factory(rules)``."""
    if not isinstance(name, str) or not name or is_model_path(name):
        raise ValueError(f"agent name {name!r}; allowed: a non-empty name that is not a path")
    if not callable(factory):
        raise ValueError(f"register_agent({name!r}, ...): the factory must be callable")
    _REGISTRY[name] = factory


def agent_names() -> list[str]:
    """Every registered agent name, sorted. The search agents (``SEARCH_AGENTS``: ``pimc``,
    ``ismcts``, ..., also as ``name:N`` or ``name:<T>ms``) are not listed: they play only
    through the agent driver (see :mod:`ono_env.agents.search`), so the tables that list
    agents (the web table) do not offer them."""
    return sorted(_REGISTRY)


def is_model_path(spec: str) -> bool:
    """Does an agent spec name a saved model file rather than a registered agent?"""
    return spec.endswith((".zip", ".safetensors")) or os.sep in spec or "/" in spec


def make_agent(spec: Any, rules: Any = None) -> Agent:
    """An agent from a registered name, a saved model's path, or an object that has ``act``.

    ``rules`` (a RuleSet, preset name, ...; default classic) is the rule set it will play."""
    rules = resolve_rules(rules)
    if isinstance(spec, str):
        if is_model_path(spec):
            return load_agent(spec, rules)
        base, colon, arg = spec.partition(":")
        if base in SEARCH_AGENTS and spec not in _REGISTRY:   # name, name:N or name:<T>ms
            return SEARCH_AGENTS[base](rules, arg if colon else None)
        if spec not in _REGISTRY:
            raise ValueError(f"unknown agent {spec!r}: known agents are {', '.join(agent_names())}, "
                             f"the search agents {', '.join(SEARCH_AGENTS)} (also as name:N or "
                             f"name:<T>ms), "
                             f"or the path of a saved model (.safetensors or .zip)")
        return _REGISTRY[spec](rules)
    if isinstance(spec, Agent):
        return spec
    raise ValueError(
        f"an agent must be a name ({', '.join(agent_names())}), the path of a saved model, or "
        f"an object with act(obs, mask, rng); got {type(spec).__name__}"
    )
