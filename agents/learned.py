"""Learned policies: the saved-model format, its metadata, and loading a model as an agent.

A saved model is a MaskablePPO ``.zip`` (Stable-Baselines3's format, loadable with
``MaskablePPO.load`` to resume training) with one more member, ``ono_meta.json``:

```json
{"format": "ono_env-policy", "format_version": 1,
 "rules": {... every RuleSet field ...}, "num_players": 2,
 "observation_version": 1, "observation_size": 241,
 "action_names": ["play R0", ...], "training_steps": 1000000,
 "config": {... the training config ...}, "saved_at": "2026-11-22T10:00:00"}
```

``load_agent(path, rules)`` reads it, refuses a model made for other rules, another player
count, another observation layout or another action table with a message that says which,
and returns a :class:`LearnedAgent` (the policy interface of :mod:`ono_env.agents`), so a
saved model goes wherever an agent name does: ``ono-arena``, ``ono-play``, the opponents of
the environments, the training pool.
"""

from __future__ import annotations

import datetime as _dt
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from ono_env import cards as C
from ono_env.observation import OBS_VERSION, observation_scale, observation_size
from ono_env.rules import RuleSet, resolve_rules

META_NAME = "ono_meta.json"
FORMAT = "ono_env-policy"
FORMAT_VERSION = 1
MODELS_DIR = Path(__file__).parent / "models"


class ScaledObservation(BaseFeaturesExtractor):
    """Divides the observation by the fixed vector of :func:`observation_scale` (given as
    ``features_extractor_kwargs={"scale": ...}``, saved with the model)."""

    def __init__(self, observation_space: Any, scale: list[float]) -> None:
        super().__init__(observation_space, features_dim=int(observation_space.shape[0]))
        self.register_buffer("scale", th.as_tensor(np.asarray(scale, np.float32)))

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return observations / self.scale


# ---- metadata ---------------------------------------------------------------------------
def make_metadata(rules: RuleSet, training_steps: int, config: dict[str, Any] | None = None) -> dict:
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION,
        "rules": rules.to_dict(), "num_players": rules.num_players,
        "observation_version": OBS_VERSION, "observation_size": observation_size(rules),
        "action_names": list(C.ACTION_NAMES), "training_steps": int(training_steps),
        "config": config or {},
        "saved_at": _dt.datetime.now().replace(microsecond=0).isoformat(),
    }


def save_model(model: Any, path: str | Path, rules: RuleSet, training_steps: int,
               config: dict[str, Any] | None = None) -> Path:
    """``model.save(path)`` and add the metadata member. Returns the path (``.zip``)."""
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_suffix(".zip")
    path.parent.mkdir(parents=True, exist_ok=True)
    model.save(path)
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr(META_NAME, json.dumps(make_metadata(rules, training_steps, config), indent=1))
    return path


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The metadata of a saved model; a clear ``ValueError`` for anything else."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"cannot read model file {str(path)!r}: no such file")
    try:
        with zipfile.ZipFile(path) as zf:
            if META_NAME not in zf.namelist():
                raise ValueError(f"{str(path)!r} is not an ono_env model: it has no {META_NAME} "
                                 f"(save models with agents.learned.save_model or ono-train)")
            meta = json.loads(zf.read(META_NAME))
    except zipfile.BadZipFile:
        raise ValueError(f"cannot read model file {str(path)!r}: not a zip file") from None
    if meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{str(path)!r}: model format {meta.get('format')!r} v{meta.get('format_version')}; "
                         f"this version reads {FORMAT!r} v{FORMAT_VERSION}")
    return meta


def check_compatible(meta: dict[str, Any], rules: RuleSet, path: str = "model") -> None:
    """Raise ``ValueError`` unless a model with ``meta`` can play ``rules``."""
    if meta["observation_version"] != OBS_VERSION:
        raise ValueError(f"{path}: trained on observation layout v{meta['observation_version']}; "
                         f"this version of ono_env has v{OBS_VERSION}: retrain the model")
    if list(meta["action_names"]) != list(C.ACTION_NAMES):
        raise ValueError(f"{path}: trained with a different action table ({len(meta['action_names'])} "
                         f"actions); this version of ono_env has {C.NUM_ACTIONS}: retrain the model")
    trained = RuleSet.from_dict(meta["rules"])
    if trained.num_players != rules.num_players:
        raise ValueError(f"{path}: trained for {trained.num_players} players, asked to play "
                         f"{rules.num_players}; use --players {trained.num_players}")
    a, b = trained.to_dict(), rules.to_dict()
    diff = [k for k in a if k != "name" and a[k] != b.get(k)]
    if diff:
        shown = ", ".join(f"{k}={a[k]!r} (asked {b.get(k)!r})" for k in diff[:4])
        more = f" and {len(diff) - 4} more" if len(diff) > 4 else ""
        raise ValueError(f"{path}: trained for {trained.name!r} rules, which differ from the "
                         f"{rules.name!r} rules asked for: {shown}{more}; play it under the "
                         f"rules it was trained for")


# ---- the policy -------------------------------------------------------------------------
class LearnedAgent:
    """A MaskablePPO actor as an agent: masked logits of the observation, then the most
    likely legal action (``deterministic=True``, the default) or a draw from the masked
    distribution made with the generator passed to ``act`` (Gumbel-max).

    Inference runs on ``threads`` torch threads (default 1; torch's setting is restored
    after each call): the batches are small, and on a machine whose other cores are busy a
    multi-threaded forward pass waits on them (measured: 0.5 ms on one thread, 39 ms on two
    for 100 rows while a training run used the machine)."""

    uses_observation = True

    def __init__(self, policy: Any, rules: RuleSet, name: str = "learned",
                 deterministic: bool = True, meta: dict[str, Any] | None = None,
                 threads: int = 1) -> None:
        self.policy = policy
        self.threads = threads
        self.rules = rules
        self.name = name
        self.deterministic = deterministic
        self.meta = meta or {}
        self.obs_size = observation_size(rules)

    def __repr__(self) -> str:
        return f"LearnedAgent({self.name!r}, rules={self.rules.name!r}, num_players={self.rules.num_players})"

    def logits(self, obs: np.ndarray) -> np.ndarray:
        pol = self.policy
        before = th.get_num_threads()
        if before != self.threads:
            th.set_num_threads(self.threads)
        try:
            with th.no_grad():
                x = th.as_tensor(obs, dtype=th.float32)
                feats = pol.extract_features(x, pol.pi_features_extractor)
                return pol.action_net(pol.mlp_extractor.forward_actor(feats)).numpy()
        finally:
            if before != self.threads:
                th.set_num_threads(before)

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if obs.ndim != 2 or obs.shape[1] != self.obs_size:
            raise ValueError(f"{self!r}: observations of shape {obs.shape}; expected (B, {self.obs_size})")
        if len(obs) == 0:
            return np.zeros(0, np.int64)
        z = self.logits(obs).astype(np.float64)
        if not self.deterministic:
            z = z + rng.gumbel(size=z.shape)
        return np.where(mask, z, -np.inf).argmax(axis=1)


def agent_from_model(model: Any, rules: RuleSet, name: str = "learned", *, copy: bool = False,
                      deterministic: bool = True) -> LearnedAgent:
    """A :class:`LearnedAgent` over a live MaskablePPO model (``copy=True`` freezes a copy
    of its current weights: a league snapshot)."""
    policy = model.policy
    if copy:
        import copy as _copy
        policy = _copy.deepcopy(policy)
        policy.optimizer = None
    policy.set_training_mode(False)
    return LearnedAgent(policy, rules, name, deterministic)


def load_agent(path: str | Path, rules: Any = None, *, deterministic: bool = True) -> LearnedAgent:
    """Load a saved model as an agent for ``rules`` (default: the rules it was trained for);
    ``ValueError`` with the reason when the file is not a model or the rules do not fit."""
    meta = read_metadata(path)
    rules = RuleSet.from_dict(meta["rules"]) if rules is None else resolve_rules(rules)
    check_compatible(meta, rules, repr(str(path)))
    try:
        policy = _load_actor(path)
    except Exception as exc:  # a damaged zip or an incompatible library version
        raise ValueError(f"cannot load model {str(path)!r}: {type(exc).__name__}: {exc}") from None
    return LearnedAgent(policy, rules, Path(path).stem, deterministic, meta)


def _load_actor(path: str | Path) -> Any:
    """The policy network of a saved model (a full checkpoint or a policy-only export)."""
    from stable_baselines3.common.save_util import load_from_zip_file

    data, params, _ = load_from_zip_file(str(path), device="cpu", load_data=True)
    policy = data["policy_class"](data["observation_space"], data["action_space"],
                                  lambda _: 0.0, **data["policy_kwargs"])
    policy.load_state_dict(params["policy"])
    policy.set_training_mode(False)
    return policy


# the members of SB3's "data" that rebuild the policy network
_POLICY_DATA = ("policy_class", "policy_kwargs", "observation_space", "action_space")


def export_policy(checkpoint: str | Path, dest: str | Path) -> Path:
    """A small policy-only copy of a checkpoint for playing (what ``agents/models`` ships):
    the policy weights, the metadata, and the part of SB3's ``data`` that rebuilds the
    network; no optimizer state, no rollout leftovers. ``load_agent`` reads it;
    ``MaskablePPO.load`` does not (resume training from the checkpoint itself)."""
    read_metadata(checkpoint)  # an ono_env model
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(checkpoint) as src, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as out:
        data = json.loads(src.read("data"))
        out.writestr("data", json.dumps({k: data[k] for k in _POLICY_DATA}))
        for name in ("policy.pth", META_NAME, "_stable_baselines3_version"):
            out.writestr(name, src.read(name))
    return dest


def shipped_models() -> dict[str, Path]:
    """The policies shipped in the package: agent name -> file (``ppo-basic-2p`` ...)."""
    return {p.stem: p for p in sorted(MODELS_DIR.glob("*.zip"))}
