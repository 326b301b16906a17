"""Agents for ono_env. The rule-based baselines and the policy loader arrive with their own
issue; this package exists so that ``pip install`` ships it with ``ono_env`` and ``train``."""
