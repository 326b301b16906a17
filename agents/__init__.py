"""Agents for ono_env: the rule-based baselines and the loader for saved learned policies.

Every agent has the policy interface of :mod:`ono_env.policies`: ``act(obs, mask, rng)``
over a batch, reading only the observation and the legal-action mask. Importing this
package registers the names ``greedy``, ``color`` and ``defensive`` (``random`` is built
in) and one name per policy shipped in ``agents/models/`` (``ppo-basic-2p``, ...), so ``ono_env.policies.make_policy(name, rules)``, ``ono-arena`` and ``ono-play`` accept
them, as they accept the path of a saved model (``agents.load_policy``).
"""

from pathlib import Path

from agents.rule_based import (RULE_BASED, ColorControlAgent, DefensiveAgent, Features,
                               GreedyAgent, RuleBasedAgent)
from ono_env.policies import RandomAgent, make_policy, policy_names, register_policy

for _name, _cls in RULE_BASED.items():
    register_policy(_name, _cls)


def _shipped_factory(path):
    def factory(rules):
        from agents.learned import load_policy as _load
        return _load(path, rules)
    return factory


def _register_shipped() -> None:
    for path in sorted((Path(__file__).parent / "models").glob("*.zip")):
        register_policy(path.stem, _shipped_factory(path))


_register_shipped()


def load_policy(path, rules=None, **kwargs):
    """A saved learned policy as an agent (see :mod:`agents.learned`)."""
    from agents.learned import load_policy as _load
    return _load(path, rules, **kwargs)


__all__ = ["RandomAgent", "GreedyAgent", "ColorControlAgent", "DefensiveAgent", "RuleBasedAgent",
           "Features", "RULE_BASED", "load_policy", "make_policy", "policy_names", "register_policy"]
