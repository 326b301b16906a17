"""Training configuration: a YAML file under ``configs/train/``, every field overridable.

``load_config(path, overrides)`` starts from :data:`DEFAULTS`, applies the file, then the
``key=value`` overrides (dotted keys reach nested fields: ``ppo.learning_rate=1e-4``; values
are read as YAML: ``opponents={greedy: 1, random: 1}``), and checks the result. An unknown
key or a bad value raises ``ValueError`` naming it and what is allowed.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Sequence

import yaml

DEFAULTS: dict[str, Any] = {
    "name": "run",
    "seed": 0,
    "rules": "basic",                # preset name, rules YAML path, or a dict with "preset"
    "num_players": 2,
    "reward": "win",                 # win | points (points needs a scoring rule set)
    # opponents drawn per game and seat, by weight: names or saved-model paths
    "opponents": {"random": 1.0, "greedy": 1.0, "color": 1.0, "defensive": 1.0},
    "self_play": {
        "enabled": False,
        "snapshot_every": 500_000,   # learner steps between frozen snapshots joining the pool
        "max_snapshots": 5,          # the oldest leaves when a new one would exceed this
        "weight": 0.5,               # share of games against snapshots (once there is one)
    },
    "num_envs": 64,
    "policy": {"net_arch": [256, 256], "activation": "tanh"},
    "ppo": {
        "learning_rate": 3.0e-4,
        "learning_rate_end": None,   # set: linear decay to this value over total_steps
                                     # (or over time_limit_minutes, whichever ends first)
        "n_steps": 128,              # per game slot: a rollout is num_envs * n_steps steps
        "batch_size": 2048,
        "n_epochs": 4,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "clip_range": 0.2,
        "ent_coef": 0.01,
        "vf_coef": 0.5,
        "max_grad_norm": 0.5,
    },
    "total_steps": 1_000_000,        # learner decisions
    "time_limit_minutes": None,      # set: stop training (and go on to save) after this long
    "eval": {
        "every": 250_000,            # learner steps between evaluations (0: none)
        "games": 2_000,              # per opponent
        "opponents": ["random", "greedy", "color", "defensive"],
    },
    "final_eval": {
        "games": 100_000,            # per opponent
        "opponents": ["random", "greedy", "color", "defensive"],
        "workers": 1,                # processes, one opponent each at a time (same results)
    },
    "out_dir": "runs",
    "run_dir": None,                 # set: write here instead of out_dir/<name>-<time>
    "progress": True,
    "torch_threads": 2,
}

ACTIVATIONS = ("tanh", "relu")


def _merge(base: dict[str, Any], new: dict[str, Any], where: str = "") -> None:
    for k, v in new.items():
        key = f"{where}{k}"
        if k not in base:
            raise ValueError(f"unknown config field {key!r}; allowed: "
                             f"{', '.join(where + x for x in base)}")
        if isinstance(base[k], dict) and k != "opponents":
            if not isinstance(v, dict):
                raise ValueError(f"config field {key!r} must be a mapping of "
                                 f"{', '.join(base[k])}; got {v!r}")
            _merge(base[k], v, key + ".")
        else:
            base[k] = v


def parse_override(text: str) -> dict[str, Any]:
    """``"ppo.learning_rate=1e-4"`` -> ``{"ppo": {"learning_rate": 0.0001}}``."""
    if "=" not in text:
        raise ValueError(f"override {text!r}: write key=value (e.g. total_steps=200000)")
    key, raw = text.split("=", 1)
    value = yaml.safe_load(raw) if raw.strip() else None
    if isinstance(value, str):
        try:  # YAML 1.1 reads "1e-4" as text; a number is meant
            value = float(value)
        except ValueError:
            pass
    out: dict[str, Any] = {}
    node = out
    parts = key.strip().split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value
    return out


def load_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The resolved config: defaults, then the YAML file, then the overrides."""
    cfg = copy.deepcopy(DEFAULTS)
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ValueError(f"cannot read training config {str(p)!r}: no such file")
        data = yaml.safe_load(p.read_text()) or {}
        if not isinstance(data, dict):
            raise ValueError(f"{str(p)!r}: a training config is a mapping of fields")
        _merge(cfg, data)
    for o in overrides:
        _merge(cfg, parse_override(o))
    validate(cfg)
    return cfg


def validate(cfg: dict[str, Any]) -> None:
    def positive_int(key: str, v: Any, zero: bool = False) -> None:
        if not isinstance(v, int) or isinstance(v, bool) or v < (0 if zero else 1):
            raise ValueError(f"config field {key!r} = {v!r}; allowed: an integer >= {0 if zero else 1}")

    positive_int("num_players", cfg["num_players"])
    positive_int("num_envs", cfg["num_envs"])
    positive_int("total_steps", cfg["total_steps"])
    positive_int("seed", cfg["seed"], zero=True)
    positive_int("eval.every", cfg["eval"]["every"], zero=True)
    positive_int("eval.games", cfg["eval"]["games"])
    positive_int("final_eval.games", cfg["final_eval"]["games"], zero=True)
    positive_int("final_eval.workers", cfg["final_eval"]["workers"])
    positive_int("ppo.n_steps", cfg["ppo"]["n_steps"])
    positive_int("ppo.batch_size", cfg["ppo"]["batch_size"])
    positive_int("ppo.n_epochs", cfg["ppo"]["n_epochs"])
    for k in ("learning_rate", "gamma", "gae_lambda", "clip_range", "ent_coef", "vf_coef",
              "max_grad_norm"):
        v = cfg["ppo"][k]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
            raise ValueError(f"config field 'ppo.{k}' = {v!r}; allowed: a number >= 0 "
                             f"(write 3.0e-4, not 3e-4, in YAML files)")
    end = cfg["ppo"]["learning_rate_end"]
    if end is not None and (not isinstance(end, (int, float)) or end < 0):
        raise ValueError(f"config field 'ppo.learning_rate_end' = {end!r}; allowed: null or a number >= 0")
    limit = cfg["time_limit_minutes"]
    if limit is not None and not (isinstance(limit, (int, float)) and limit > 0):
        raise ValueError(f"config field 'time_limit_minutes' = {limit!r}; allowed: null or minutes > 0")
    sp = cfg["self_play"]
    positive_int("self_play.snapshot_every", sp["snapshot_every"])
    positive_int("self_play.max_snapshots", sp["max_snapshots"])
    if not 0.0 <= float(sp["weight"]) < 1.0:
        raise ValueError(f"config field 'self_play.weight' = {sp['weight']!r}; allowed: 0 <= w < 1")
    if cfg["reward"] not in ("win", "points"):
        raise ValueError(f"config field 'reward' = {cfg['reward']!r}; allowed: win | points")
    if cfg["policy"]["activation"] not in ACTIVATIONS:
        raise ValueError(f"config field 'policy.activation' = {cfg['policy']['activation']!r}; "
                         f"allowed: {' | '.join(ACTIVATIONS)}")
    arch = cfg["policy"]["net_arch"]
    if not (isinstance(arch, list) and arch and all(isinstance(x, int) and x > 0 for x in arch)):
        raise ValueError(f"config field 'policy.net_arch' = {arch!r}; allowed: a list of layer sizes")
    opp = cfg["opponents"]
    if not (isinstance(opp, dict) and opp and all(isinstance(w, (int, float)) and w >= 0
                                                   for w in opp.values())
            and sum(opp.values()) > 0):
        raise ValueError(f"config field 'opponents' = {opp!r}; allowed: a mapping of agent names "
                         f"(or model paths) to weights >= 0, at least one positive")
    for key in ("eval", "final_eval"):
        if not isinstance(cfg[key]["opponents"], list) or not cfg[key]["opponents"]:
            raise ValueError(f"config field '{key}.opponents' must be a non-empty list of agents")


def dump_config(cfg: dict[str, Any]) -> str:
    return yaml.safe_dump(cfg, sort_keys=False)
