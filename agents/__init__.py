"""Agents for ono_env (installed as ``ono_env.agents``): the interface, the rule-based
baselines, learned agents loaded from saved models, and the table of agent names.

Every agent has one interface, ``act(obs, mask, rng)`` over a batch, reading only the
observation and the legal-action mask (:mod:`ono_env.agents.base`). Names (``random``,
``greedy``, ``color``, ``defensive``, the shipped specialists ``ppo-basic-2p``,
``ppo-classic-2p`` and ``ppo-basic-4p`` and the generalist ``ppo-any``) and model paths become
agents through :func:`~ono_env.agents.registry.make_agent`. The search agents (``pimc``,
``ismcts``, and the CHEATING ceilings ``oracle-hands``, ``oracle``, ``oracle-ppo``) read the seat's view of
the position instead (:mod:`ono_env.agents.search`).
"""

from ono_env.agents.base import Agent, RandomAgent, checked_actions
from ono_env.agents.learned import LearnedAgent, load_agent
from ono_env.agents.registry import (
                                     agent_names,
                                     is_model_path,
                                     make_agent,
                                     register_agent,
                                     unregister_agent,
)
from ono_env.agents.rule_based import (
                                       ColorControlAgent,
                                       DefensiveAgent,
                                       GreedyAgent,
                                       RULE_BASED,
                                       RuleBasedAgent,
)
from ono_env.agents.search import SEARCH_AGENTS, SearchAgent

__all__ = ["Agent", "RandomAgent", "GreedyAgent", "ColorControlAgent", "DefensiveAgent",
           "RuleBasedAgent", "RULE_BASED", "LearnedAgent", "load_agent", "make_agent",
           "agent_names", "register_agent", "unregister_agent", "is_model_path", "checked_actions",
           "SearchAgent", "SEARCH_AGENTS"]
