"""The torch side of learned policies (needs the ``[train]`` extra): the features extractor
used in training, the weights of a live MaskablePPO policy as a NumPy
:class:`~ono_env.agents.learned.PolicyNet`, checkpoints that carry a playable model, and
agents over a model being trained.

- :class:`ScaledObservation`: the features extractor of ``ono-train``'s policies (divides the
  observation by :func:`~ono_env.observation.observation_scale`). Checkpoints name it by
  module path (``ono_env.train.nets.ScaledObservation``) in their pickled ``data``, which
  only ``MaskablePPO.load`` (resuming training) reads.
- :func:`policy_net`: the actor of a live ``MaskableActorCriticPolicy`` (``obs / scale``,
  ``mlp_extractor.policy_net``, ``action_net``) as a NumPy network.
- :func:`save_model`: ``model.save(path)`` (a MaskablePPO zip, to resume training) plus the
  member ``ono_policy.safetensors``: the model in the format of
  :mod:`ono_env.agents.learned`, the only part of the zip that is loaded as an agent.
- :func:`agent_from_model`: a :class:`~ono_env.agents.learned.LearnedAgent` over a live
  model (in-training evaluation, league snapshots).
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, FlattenExtractor

from ono_env.agents.learned import LearnedAgent, PolicyNet, SAFE_MEMBER, model_bytes, net_metadata
from ono_env.rules import RuleSet, check_rule_set

ACTIVATIONS: dict[str, type[th.nn.Module]] = {"tanh": th.nn.Tanh, "relu": th.nn.ReLU}
"""The activations a policy may use, by the name model files record."""


class ScaledObservation(BaseFeaturesExtractor):
    """Divides the observation by the fixed vector of :func:`~ono_env.observation.observation_scale` (given as
    ``features_extractor_kwargs={"scale": ...}``, saved with the model)."""

    scale: th.Tensor   # a buffer (register_buffer): saved and moved with the module

    def __init__(self, observation_space: Any, scale: list[float]) -> None:
        super().__init__(observation_space, features_dim=int(observation_space.shape[0]))
        self.register_buffer("scale", th.as_tensor(np.asarray(scale, np.float32)))

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return observations / self.scale


def _array(t: th.Tensor, copy: bool) -> np.ndarray:
    a = t.detach().to("cpu", th.float32).numpy()
    return a.copy() if copy else a


def policy_net(policy: Any, *, copy: bool = True) -> PolicyNet:
    """The actor of a live MaskablePPO policy (``MaskableActorCriticPolicy`` with an MLP
    extractor) as a NumPy :class:`PolicyNet`. ``copy=True``: frozen copies of the current
    weights; ``copy=False``: NumPy views of the parameters of a CPU policy, which follow
    training (the optimizer updates them in place). ``ValueError`` for a policy this format
    cannot express (another features extractor, layers other than Linear + one activation)."""
    fx = policy.pi_features_extractor
    if isinstance(fx, ScaledObservation):
        scale = _array(fx.scale, copy)
    elif isinstance(fx, FlattenExtractor):
        scale = np.ones(int(np.prod(policy.observation_space.shape)), np.float32)
    else:
        raise ValueError(f"cannot express a policy with features extractor {type(fx).__name__} "
                         f"(ScaledObservation or FlattenExtractor)")
    acts: set[type] = set()

    def linears(net: Any, head: Any, what: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """The Linear layers of ``net`` then ``head``; the other modules' types go to acts."""
        out = []
        for m in net:
            if isinstance(m, th.nn.Linear):
                out.append((_array(m.weight, copy), _array(m.bias, copy)))
            else:
                acts.add(type(m))
        if not isinstance(head, th.nn.Linear) or head.bias is None:
            raise ValueError(f"cannot express a policy whose {what} is {type(head).__name__}")
        return out + [(_array(head.weight, copy), _array(head.bias, copy))]

    layers = linears(policy.mlp_extractor.policy_net, policy.action_net, "action net")
    # the value network, over the same features (SB3 shares the extractor by default)
    value_layers = None
    vfx = getattr(policy, "vf_features_extractor", fx)
    if vfx is fx or (isinstance(vfx, FlattenExtractor) and isinstance(fx, FlattenExtractor)):
        value_layers = linears(policy.mlp_extractor.value_net, policy.value_net, "value net")
    names = [name for name, cls in ACTIVATIONS.items() if cls in acts]
    if len(acts) > 1 or (acts and not names):
        raise ValueError(f"cannot express a policy with activations "
                         f"{sorted(c.__name__ for c in acts)}; allowed: one of "
                         f"{', '.join(c.__name__ for c in ACTIVATIONS.values())}")
    return PolicyNet(scale, layers, names[0] if names else "tanh", value_layers)


def save_model(model: Any, path: str | Path, rules: RuleSet, training_steps: int,
               config: Mapping[str, Any] | None = None) -> Path:
    """``model.save(path)`` (a MaskablePPO checkpoint, to resume training), then the playable
    model as its member ``ono_policy.safetensors``. Returns the path (``.zip``)."""
    check_rule_set("save_model", rules)
    path = Path(path)
    if path.suffix != ".zip":
        path = path.with_suffix(".zip")
    net = policy_net(model.policy, copy=True)
    data = model_bytes(net, net_metadata(net, rules, training_steps, config))
    path.parent.mkdir(parents=True, exist_ok=True)
    model.save(path)
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(SAFE_MEMBER, data)
    return path


def agent_from_model(model: Any, rules: RuleSet, name: str = "learned", *, copy: bool = False,
                     deterministic: bool = True) -> LearnedAgent:
    """A :class:`LearnedAgent` over a live MaskablePPO model, run in NumPy. ``copy=True``
    freezes a copy of its current weights (a league snapshot); ``copy=False`` reads the live
    weights of a CPU model (views), so it plays as the model does now."""
    check_rule_set("agent_from_model", rules)
    net = policy_net(model.policy, copy=copy)
    meta = net_metadata(net, rules, int(getattr(model, "num_timesteps", 0)))
    return LearnedAgent(net, rules, name, deterministic, meta)
