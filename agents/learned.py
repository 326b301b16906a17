"""Learned policies: the model file format, its metadata, and loading a model as an agent.

A model file is data, never code: loading one runs nothing from the file. It is a
`safetensors <https://huggingface.co/docs/safetensors>`_ file (an 8-byte little-endian
header length, a JSON header, the raw little-endian tensor bytes) holding the policy
network's weights, every tensor ``float32`` (``F32``), under neutral names; with
``H = architecture.hidden_sizes``, ``n = len(H)``, ``D = observation_size`` and
``A = len(action_names)``, exactly these tensors and no others::

    obs_scale            (D,)              divisor of each observation entry (all > 0)
    hidden.<i>.weight    (H[i], H[i-1])    hidden layer i = 0 .. n-1 (H[-1] means D)
    hidden.<i>.bias      (H[i],)
    logits.weight        (A, H[n-1])       the action head (A, D) when n = 0
    logits.bias          (A,)

and, in format version 3, whose ``architecture`` has ``value_hidden_sizes`` (``V``,
``m = len(V)``), the value network beside it, over the same scaled observation::

    value_hidden.<i>.weight  (V[i], V[i-1])   value hidden layer i = 0 .. m-1 (V[-1] means D)
    value_hidden.<i>.bias    (V[i],)
    value.weight             (1, V[m-1])
    value.bias               (1,)

and, in format version 4 (a version-2 observation, ``architecture.opponent_encoder = E``),
the opponent encoder that the nine opponent blocks pass through before the hidden layers
(:func:`encode_opponents`; ``H[-1]`` of the first hidden layer then means ``272 + 9 E``)::

    opponent.weight          (E, 127)
    opponent.bias            (E,)

The header's ``__metadata__`` (a string-to-string map) has one key, ``"ono_env"``, whose
value is this JSON object (every key required; types checked on loading)::

    {"format": "ono_env-policy", "format_version": 3,
     "architecture": {"type": "mlp", "hidden_sizes": [256, 256], "activation": "tanh",
                      "value_hidden_sizes": [256, 256]},
     "rules": {... every RuleSet field (RuleSet.to_dict()) ...}, "num_players": 2,
     "observation_version": 1, "observation_size": 241,
     "action_names": ["play R0", ...], "training_steps": 11684608,
     "config": {... the training config ...}, "saved_at": "2026-11-22T10:00:00"}

(``activation``: ``"tanh"`` or ``"relu"``; ``observation_version`` is the layout it was
trained on, 1 or 2 (:mod:`ono_env.observation`), and ``action_names`` is
:data:`ono_env.cards.ACTION_NAMES` of the version that trained it; ``config`` is the training
config, any JSON object; ``saved_at`` an ISO date.) The network computes, in ``float32``::

    x = obs / obs_scale
    for i in range(n):  x = activation(x @ hidden.<i>.weight.T + hidden.<i>.bias)
    logits = x @ logits.weight.T + logits.bias

which is Stable-Baselines3's actor, ``action_net(mlp_extractor.policy_net(obs / scale))``,
and the value estimate (when present) ``value_net(mlp_extractor.value_net(obs / scale))``
with the same activation; the value plays no part in choosing actions (it is shown as what
the agent thinks of a position). It runs in NumPy: playing a learned agent needs neither torch
nor Stable-Baselines3.

The observation scale is stored in the file (``obs_scale``: the vector the network was
trained with, ``observation_scale(rules)`` of :mod:`ono_env.observation` at training time)
rather than recomputed when loading, so the file alone defines the function it computes.
A model is only played under its own rules and observation layout version (below), where
``observation_scale`` gives the same vector (the tests check it for the shipped models).

``ono-train``'s default ``algo: ppo`` writes model files directly (``model.safetensors``,
``checkpoints/step_<n>.safetensors``). The checkpoints of ``algo: maskable_ppo``
(``checkpoints/step_<n>.zip`` and ``model.zip``) are MaskablePPO zips, which
``MaskablePPO.load`` resumes; they carry the same model as one more zip member,
``ono_policy.safetensors``. Wherever a model is taken as an agent
(``load_agent``, ``make_agent``, ``ono-arena``, ``ono-play``, the opponents of the
environments, training pools) a ``.safetensors`` file or a zip works, and of a zip only that
member is read (with ``zipfile``; nothing else in the zip is opened, nothing is
unpickled). A zip without it (saved by ono_env before format version 2) is refused with the
command that converts it: ``ono-export OLD.zip NEW.safetensors``
(:mod:`ono_env.train.export`).

``load_agent(path, rules)`` reads a model, refuses a version-1 model made for other rules or
another player count, and any model of an unknown observation layout or another action
table, with a message that says which (:func:`check_compatible`), and returns a
:class:`LearnedAgent`. A version-2 model (the generalist ``ppo-any``) plays any rules at 2-10
players. Every damaged or foreign
file is one ``ValueError`` naming the file and what is wrong.

The torch side (the features extractor used in training, weights of a live MaskablePPO
policy, ``save_model`` and ``agent_from_model``) is :mod:`ono_env.train.nets`.
"""

from __future__ import annotations

import copy
import datetime as _dt
import hashlib
import json
import os
import shlex
import threading
import weakref
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ono_env import cards as C
from ono_env.checks import (
    JSONError,
    check_act_mask,
    check_act_obs,
    check_bool,
    check_write_path,
    cut,
    first_few,
    is_int,
    is_iso_date,
    nesting,
    no_file,
    parse_json,
    path_text,
    printable,
    shown,
    write_whole,
)
from ono_env.observation import (
    MAX_OPPONENTS,
    OBS2_OPPONENTS,
    OBS_V2_SIZE,
    OBS_VERSIONS,
    OPPONENT_SIZE,
    OPP_PRESENT,
    observation_size,
)
from ono_env.rules import PRESETS, RuleSet, check_rule_set, resolve_rules

FORMAT = "ono_env-policy"
FORMAT_VERSION = 3
"""The model format written with a value network; without one, version 2 (the same format
less the value network) is written, so that ono_env releases that read only version 2
still play it; with an opponent encoder (version-2 observations), version 4. All are read."""
FORMAT_VERSIONS = (2, 3, 4)
META_KEY = "ono_env"
"""The key of the safetensors ``__metadata__`` map that holds the JSON metadata."""
SAFE_MEMBER = "ono_policy.safetensors"
"""The member of a training checkpoint zip that holds the playable model."""
OLD_META_NAME = "ono_meta.json"
"""The metadata member of a format-version-1 checkpoint (read only by the exporter)."""
MAX_MODEL_BYTES = 1 << 30
"""The largest model file (or zip member) read: 1 GiB."""
MAX_HEADER_BYTES = 1 << 20
"""The largest safetensors header a model file may have: 1 MiB (the shipped models' are 4-10
KB: the tensors' entries and the JSON metadata). safetensors itself allows 100 MB, and
Python's JSON reader takes about 26 times a header's size in memory (before: a 96 KB zip
made 2.6 GB of it); :func:`model_bytes` never writes a larger one."""
MAX_MODEL_LABEL = 100
"""The longest ``label`` a model's metadata may hold."""
MAX_LAYERS = 64
"""The most hidden layers (``hidden_sizes``, ``value_hidden_sizes``) a model's metadata may
give (training writes at most 16)."""
MAX_WIDTH = 65_536
"""The widest hidden layer a model's metadata may give (as training's ``net_arch``)."""
MAX_OUTPUT = 1e6
"""The largest logit or value a model may compute on extreme observations (every entry -1, 0
or the deck size: the counts' range; a match's scaled scores can pass it under unusual rules
(:func:`~ono_env.observation.observation_high`), but a probe of every entry at such a bound
would refuse sound models of those rules)."""
SHARED_MODELS = 16
"""The most networks :func:`load_agent` keeps to share between the agents it makes."""
SHARED_MODEL_BYTES = 256 << 20
"""The most bytes of model files whose networks :func:`load_agent` keeps (a larger file's
network is not kept)."""
EXPORT_COMMAND = "ono-export"
MODELS_DIR = Path(__file__).parent / "models"
_META_KEYS = ("format", "format_version", "architecture", "rules", "num_players",
              "observation_version", "observation_size", "action_names", "training_steps",
              "config", "saved_at")


def _tanh(x: np.ndarray) -> np.ndarray:
    return np.tanh(x, out=x)


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0, out=x)


ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {"tanh": _tanh, "relu": _relu}
"""The activations a model may name (in place on a float32 array)."""


# ---- the network ------------------------------------------------------------------------
def encode_opponents(x: np.ndarray, encoder: tuple[np.ndarray, np.ndarray],
                     act: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``(B, F + 9 E)``: the fixed part of scaled version-2 observations ``x`` (``(B, D)``),
    then each of the nine opponent blocks through one shared layer ``act(block @ W.T + b)``,
    zero for a seat that is not at the table (its ``present`` entry 0). One set of weights
    for every seat lets what the network learns of one opponent serve every other, at every
    table size, and keeps the first layer small."""
    w, b = encoder
    opp = x[:, OBS2_OPPONENTS:].reshape(len(x), MAX_OPPONENTS, OPPONENT_SIZE)
    e = act(opp @ w.T + b) * opp[:, :, OPP_PRESENT:OPP_PRESENT + 1]
    return np.concatenate([x[:, :OBS2_OPPONENTS], e.reshape(len(x), -1)], axis=1)


ROWS_AT_ONCE = 16_384
"""The most observation rows a :class:`PolicyNet` reads in one product (``_mlp``)."""
PART_BYTES = 256 << 20
"""The most bytes of a part's widest working arrays (``_mlp``): a layer's product and its
sum with the bias, 8 bytes a row and unit. A network wider than 2,048 units reads fewer than
:data:`ROWS_AT_ONCE` rows at once (the shipped ones are narrower: their parts are as
before)."""


class PolicyNet:
    """The policy network of a model in NumPy: ``obs / scale``, the hidden layers with their
    activation, the logits head. ``layers`` is ``[(weight (out, in), bias (out,)), ...]``,
    the head last; every array ``float32``. The arrays are used as given (a view of live
    torch parameters stays live; see :func:`ono_env.train.nets.policy_net`)."""

    def __init__(self, scale: np.ndarray, layers: list[tuple[np.ndarray, np.ndarray]],
                 activation: str,
                 value_layers: list[tuple[np.ndarray, np.ndarray]] | None = None,
                 encoder: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        self.scale = scale
        self.layers = list(layers)
        self.activation = activation
        self._act = ACTIVATIONS[activation]
        self.value_layers = None if value_layers is None else list(value_layers)
        """The value network's layers (the head last, one output), or None."""
        self.encoder = encoder
        """Format version 4: the opponent encoder ``(weight (E, K), bias (E,))`` that both
        networks read the nine opponent blocks of a version-2 observation through, or None."""

    @property
    def opponent_width(self) -> int:
        """E, the width of the opponent encoder (0 without one)."""
        return 0 if self.encoder is None else int(self.encoder[0].shape[0])

    def features(self, obs: np.ndarray) -> np.ndarray:
        """What the hidden layers read: ``obs / scale``, its opponent blocks through the
        opponent encoder when there is one (:func:`encode_opponents`)."""
        x = np.asarray(obs, dtype=np.float32) / self.scale
        if self.encoder is None:
            return x
        return encode_opponents(x, self.encoder, self._act)

    @property
    def has_value(self) -> bool:
        return self.value_layers is not None

    @property
    def value_hidden_sizes(self) -> list[int] | None:
        if self.value_layers is None:
            return None
        return [int(w.shape[0]) for w, _ in self.value_layers[:-1]]

    def _mlp(self, obs: np.ndarray, layers: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """The network's output for ``obs``, read in even parts of at most
        :data:`ROWS_AT_ONCE` rows, fewer for a network whose widest layer's arrays would pass
        :data:`PART_BYTES`: the working arrays (the scaled copy, the encoded opponents,
        each layer's) stay within a part's (before: ``ono-arena ppo-any greedy --batch
        100000`` peaked at 2.3 GiB, three times what the batch check counted). Each part holds at
        least half of that many rows (parts alike in size). A row's output is the one a single
        product gives to float32 rounding, not bit for bit: BLAS rounds a row's sums by the
        product's shape and the row's place in it (OpenBLAS 0.3.31, with NumPy 2.4.6, by up
        to about 4e-7 of the largest logit's size, a few units in its last place; an earlier
        one gave the same bits for every part of half the bound or more)."""
        n = len(obs)
        # fewer rows for a wider network, within PART_BYTES (before: 16,384 rows whatever the
        # width: a layer of 65,536 units took 8 GiB for one part)
        widest = max(max(w.shape) for w, _ in layers)
        most = max(1, min(ROWS_AT_ONCE, PART_BYTES // (8 * widest)))
        if n <= most:
            return self._mlp_rows(obs, layers)
        parts = -(-n // most)   # ceiling divisions: even parts, none over the bound
        size = -(-n // parts)
        return np.concatenate([self._mlp_rows(obs[i:i + size], layers)
                               for i in range(0, n, size)])

    def _mlp_rows(self, obs: np.ndarray,
                  layers: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        x = self.features(obs)
        *hidden, (w_out, b_out) = layers
        for w, b in hidden:
            x = self._act(x @ w.T + b)
        return x @ w_out.T + b_out

    def value(self, obs: np.ndarray) -> np.ndarray:
        """``(B,) float32`` value estimates of ``(B, D)`` observations (needs ``has_value``)."""
        if self.value_layers is None:
            raise ValueError("this model holds no value network")
        return self._mlp(obs, self.value_layers)[:, 0]

    @property
    def hidden_sizes(self) -> list[int]:
        return [int(w.shape[0]) for w, _ in self.layers[:-1]]

    @property
    def observation_size(self) -> int:
        return int(self.scale.shape[0])

    @property
    def num_actions(self) -> int:
        return int(self.layers[-1][0].shape[0])

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        return self._mlp(obs, self.layers)

    def arrays(self) -> list[np.ndarray]:
        """Every array of the network: the scale, the encoder's, the layers', the value's."""
        out = [self.scale, *(a for wb in self.layers for a in wb)]
        if self.encoder is not None:
            out += list(self.encoder)
        if self.value_layers is not None:
            out += [a for wb in self.value_layers for a in wb]
        return out

    def tensors(self) -> dict[str, np.ndarray]:
        """The tensors of the file format (contiguous ``float32`` copies)."""
        out = {"obs_scale": self.scale}
        *hidden, (w_out, b_out) = self.layers
        for i, (w, b) in enumerate(hidden):
            out[f"hidden.{i}.weight"], out[f"hidden.{i}.bias"] = w, b
        out["logits.weight"], out["logits.bias"] = w_out, b_out
        if self.encoder is not None:
            out["opponent.weight"], out["opponent.bias"] = self.encoder
        if self.value_layers is not None:
            *v_hidden, (v_w, v_b) = self.value_layers
            for i, (w, b) in enumerate(v_hidden):
                out[f"value_hidden.{i}.weight"], out[f"value_hidden.{i}.bias"] = w, b
            out["value.weight"], out["value.bias"] = v_w, v_b
        return {k: np.array(v, dtype=np.float32, order="C", copy=True) for k, v in out.items()}

    @classmethod
    def from_tensors(cls, tensors: Mapping[str, np.ndarray], meta: Mapping[str, Any],
                     where: str = "model") -> PolicyNet:
        """The network that checked metadata (:func:`check_metadata`) describes, from the
        tensors of a file; ``ValueError`` naming ``where`` when a tensor is missing, extra,
        not ``float32``, of a shape the metadata does not give, or not finite."""
        arch = meta["architecture"]
        D = int(meta["observation_size"])
        E = int(arch.get("opponent_encoder", 0))
        trunk_in = D if not E else OBS2_OPPONENTS + MAX_OPPONENTS * E
        sizes = [trunk_in, *arch["hidden_sizes"], len(meta["action_names"])]
        n_hidden = len(arch["hidden_sizes"])
        expected: dict[str, tuple[int, ...]] = {"obs_scale": (D,)}
        if E:
            expected["opponent.weight"] = (E, OPPONENT_SIZE)
            expected["opponent.bias"] = (E,)
        for i in range(n_hidden):
            expected[f"hidden.{i}.weight"] = (sizes[i + 1], sizes[i])
            expected[f"hidden.{i}.bias"] = (sizes[i + 1],)
        expected["logits.weight"] = (sizes[-1], sizes[-2])
        expected["logits.bias"] = (sizes[-1],)
        v_sizes = arch.get("value_hidden_sizes")
        if v_sizes is not None:
            vs = [sizes[0], *v_sizes, 1]
            for i in range(len(v_sizes)):
                expected[f"value_hidden.{i}.weight"] = (vs[i + 1], vs[i])
                expected[f"value_hidden.{i}.bias"] = (vs[i + 1],)
            expected["value.weight"] = (1, vs[-2])
            expected["value.bias"] = (1,)
        names = list(expected)
        described = first_few(names, 8)
        missing = [k for k in expected if k not in tensors]
        if missing:
            raise ValueError(f"{where}: damaged model: tensor {missing[0]!r} is missing "
                             f"(the metadata describes {described})")
        extra = sorted(k for k in tensors if k not in expected)
        if extra:
            raise ValueError(f"{where}: damaged model: unexpected tensor {shown(extra[0], 80)} "
                             f"(the metadata describes {described})")
        arrays = {}
        for name, shape in expected.items():
            a = tensors[name]
            if not isinstance(a, np.ndarray) or a.dtype != np.float32:
                raise ValueError(f"{where}: damaged model: tensor {name!r} is "
                                 f"{getattr(a, 'dtype', type(a).__name__)}; expected float32")
            if a.shape != shape:
                raise ValueError(f"{where}: damaged model: tensor {name!r} has shape "
                                 f"{list(a.shape)}; the metadata gives {list(shape)}")
            if not np.isfinite(a).all():
                raise ValueError(f"{where}: damaged model: tensor {name!r} holds NaN or "
                                 f"infinite values; allowed: finite values only")
            arrays[name] = a
        if not (arrays["obs_scale"] > 0).all():
            raise ValueError(f"{where}: damaged model: 'obs_scale' has entries <= 0; allowed: "
                             f"entries above 0")
        layers = [(arrays[f"hidden.{i}.weight"], arrays[f"hidden.{i}.bias"]) for i in range(n_hidden)]
        layers.append((arrays["logits.weight"], arrays["logits.bias"]))
        value_layers = None
        if v_sizes is not None:
            value_layers = [(arrays[f"value_hidden.{i}.weight"], arrays[f"value_hidden.{i}.bias"])
                            for i in range(len(v_sizes))]
            value_layers.append((arrays["value.weight"], arrays["value.bias"]))
        encoder = (arrays["opponent.weight"], arrays["opponent.bias"]) if E else None
        net = cls(arrays["obs_scale"], layers, arch["activation"], value_layers, encoder)
        net.check_outputs(RuleSet.from_dict(meta["rules"]).deck_size, where)
        return net

    def check_outputs(self, high: float, where: str = "model") -> None:
        """``ValueError`` naming ``where`` unless the network's logits (and values) are finite
        and within +-:data:`MAX_OUTPUT` on extreme observations (every entry -1,
        0 or ``high``, and both halves mixed): finite weights can still overflow (huge
        logits, a tiny ``obs_scale``) and then play NaN probabilities."""
        D = self.observation_size
        probe = np.zeros((6, D), np.float32)
        probe[0], probe[1], probe[2] = -1.0, high, 0.0
        probe[3, ::2], probe[3, 1::2] = -1.0, high
        probe[4, ::2], probe[4, 1::2] = high, -1.0
        probe[5] = 1.0
        with np.errstate(all="ignore"):
            outputs = [("logits", self(probe))]
            if self.value_layers is not None:
                outputs.append(("value", self.value(probe)))
        for what, out in outputs:
            if not np.isfinite(out).all() or np.abs(out).max() > MAX_OUTPUT:
                found = ("NaN" if np.isnan(out).any()
                         else f"largest {np.abs(out).max():.3g}")   # inf prints as inf
                raise ValueError(f"{where}: damaged model: its {what} on extreme observations "
                                 f"are not finite numbers within +-{MAX_OUTPUT:g} "
                                 f"({found}); it would play NaN probabilities")


# ---- metadata ---------------------------------------------------------------------------
def make_metadata(rules: RuleSet, training_steps: int, config: Mapping[str, Any] | None = None, *,
                  hidden_sizes: list[int], activation: str, saved_at: str | None = None,
                  value_hidden_sizes: list[int] | None = None, label: str | None = None,
                  observation_version: int = 1, opponent_encoder: int = 0) -> dict:
    """The metadata of a model for ``rules`` (see the module docstring); a value network
    when ``value_hidden_sizes`` is given; ``label``: the name the model plays under when its
    file is named ``model.safetensors`` (a training run writes its run folder's name);
    ``opponent_encoder``: the width of the opponent encoder (version-2 observations only;
    format version 4)."""
    arch: dict[str, Any] = {"type": "mlp", "hidden_sizes": [int(h) for h in hidden_sizes],
                            "activation": activation}
    if value_hidden_sizes is not None:
        arch["value_hidden_sizes"] = [int(h) for h in value_hidden_sizes]
    if opponent_encoder:
        arch["opponent_encoder"] = int(opponent_encoder)
    extra = {} if label is None else {"label": str(label)[:MAX_MODEL_LABEL]}
    version = 4 if opponent_encoder else 3 if value_hidden_sizes is not None else 2
    return extra | {
        "format": FORMAT, "format_version": version,
        "architecture": arch,
        "rules": rules.to_dict(), "num_players": rules.num_players,
        "observation_version": observation_version,
        "observation_size": observation_size(rules, observation_version),
        "action_names": list(C.ACTION_NAMES), "training_steps": int(training_steps),
        "config": dict(config or {}),
        "saved_at": saved_at or _dt.datetime.now().replace(microsecond=0).isoformat(),
    }


def net_metadata(net: PolicyNet, rules: RuleSet, training_steps: int,
                 config: Mapping[str, Any] | None = None, *, label: str | None = None,
                 observation_version: int = 1) -> dict:
    """:func:`make_metadata` for ``net``, its architecture read from the network itself (the
    hidden and value layers' sizes, the activation, the opponent encoder's width); ``config``
    is saved as the JSON it reads back as (a tuple as a list), which every trainer writes."""
    return make_metadata(rules, training_steps, json.loads(json.dumps(dict(config or {}))),
                         hidden_sizes=net.hidden_sizes, activation=net.activation,
                         value_hidden_sizes=net.value_hidden_sizes, label=label,
                         observation_version=observation_version,
                         opponent_encoder=net.opponent_width)




MAX_META_NESTING = 64
"""The deepest a model file's metadata may nest lists and objects (a training config nests a
few levels)."""


MAX_META_COUNT = 2**63 - 1
"""The largest count in a model's metadata (``training_steps``, ``observation_size``, ...)."""


def check_metadata(meta: Any, where: str = "model") -> dict[str, Any]:
    """``meta`` if it is format-version-2 metadata with every key of the right type;
    otherwise one ``ValueError`` naming ``where`` and the first thing wrong."""
    if not isinstance(meta, dict):
        raise ValueError(f"{where}: the {META_KEY!r} metadata is a JSON {type(meta).__name__}, "
                         f"not an object")
    if nesting(meta) > MAX_META_NESTING:   # before: a RecursionError as the model was loaded
        raise ValueError(f"{where}: damaged model: its metadata nests lists or objects "
                         f"{nesting(meta)} deep; allowed: at most {MAX_META_NESTING}")
    if meta.get("format") != FORMAT:
        raise ValueError(f"{where}: not an ono_env model: metadata format "
                         f"{meta.get('format')!r}, expected {FORMAT!r}")
    version = meta.get("format_version")
    if version not in FORMAT_VERSIONS or not is_int(version):
        # version 1 was a checkpoint zip of OLD_META_NAME and policy.pth, read before this
        # (before: "convert it with ono-export OLD.zip NEW.safetensors", said of a model
        # file, which that command refuses alike)
        hint = (f" (version 1 was a checkpoint zip of {OLD_META_NAME} and policy.pth, which "
                f"{EXPORT_COMMAND} converts; no release wrote it in a model's metadata)"
                if version == 1 and is_int(version) else "")   # not for true, which == 1
        raise ValueError(f"{where}: model format version {version!r}; this version of ono_env "
                         f"reads versions {', '.join(map(str, FORMAT_VERSIONS[:-1]))} and "
                         f"{FORMAT_VERSIONS[-1]}{hint}")
    missing = [k for k in _META_KEYS if k not in meta]
    if missing:
        raise ValueError(f"{where}: damaged model: the metadata has no {', '.join(map(repr, missing))}")
    unknown = sorted(set(meta) - {*_META_KEYS, "label"})
    if unknown:   # a key no version writes (a typo of label: before, ignored)
        raise ValueError(f"{where}: damaged model: the metadata has the key {shown(unknown[0], 40)}, "
                         f"which no version of ono_env writes; allowed: "
                         f"{', '.join(_META_KEYS)} and label")

    def bad(key: str, expected: str) -> ValueError:
        return ValueError(f"{where}: damaged model: metadata {key!r} is {shown(meta[key], 80)}; "
                          f"expected {expected}")

    arch = meta["architecture"]
    if isinstance(arch, dict) and "opponent_encoder" in arch and not (
            is_int(arch["opponent_encoder"]) and 1 <= arch["opponent_encoder"] <= 4096):
        raise ValueError(f"{where}: damaged model: metadata architecture.opponent_encoder is "
                         f"{shown(arch['opponent_encoder'], 40)}; expected a whole number from 1 to 4096")
    def layers_ok(sizes: Any) -> bool:
        return (isinstance(sizes, list) and len(sizes) <= MAX_LAYERS
                and all(is_int(h) and 1 <= h <= MAX_WIDTH for h in sizes))

    if not isinstance(arch, dict) or arch.get("type") != "mlp" \
            or not layers_ok(arch.get("hidden_sizes")) \
            or not isinstance(arch.get("activation"), str) \
            or arch.get("activation") not in ACTIVATIONS \
            or set(arch) - {"type", "hidden_sizes", "activation", "value_hidden_sizes",
                            "opponent_encoder"} \
            or ("value_hidden_sizes" in arch and not layers_ok(arch["value_hidden_sizes"])):
        sizes = f"[at most {MAX_LAYERS} whole numbers from 1 to {MAX_WIDTH:,}]"
        raise bad("architecture", f'{{"type": "mlp", "hidden_sizes": {sizes}, '
                                  f'"activation": one of {", ".join(ACTIVATIONS)}, in format '
                                  f'versions 3 and 4 "value_hidden_sizes": {sizes}, '
                                  'in format version 4 "opponent_encoder": 1 to 4096} and no other key')
    if ("value_hidden_sizes" in arch) != (version in (3, 4)):
        raise bad("architecture", "value_hidden_sizes exactly in format versions 3 and 4 (a "
                                  "value network); version 2 has none")
    if ("opponent_encoder" in arch) != (version == 4):
        raise bad("architecture", "opponent_encoder exactly in format version 4")
    if version == 4 and meta.get("observation_version") != 2:
        raise bad("observation_version", "2 (an opponent encoder reads version-2 observations)")
    if not isinstance(meta["rules"], dict) or not is_int(meta["rules"].get("num_players")):
        raise bad("rules", "an object of every rule option, num_players (a whole number) "
                           "among them (as training writes it)")
    if not is_int(meta["num_players"]) or meta["rules"]["num_players"] != meta["num_players"]:
        raise bad("num_players", f"the player count of its rules, {meta['rules']['num_players']}")
    for key in ("observation_version", "observation_size", "training_steps"):
        # at most 2**63 - 1, a count training can reach (before: any size, so that a
        # crafted 4,200-digit count was printed whole)
        if not is_int(meta[key]) or not 0 <= meta[key] <= MAX_META_COUNT:
            raise bad(key, f"a whole number from 0 to {MAX_META_COUNT:,}")
    # version 2 has one length for every table: checked here, before a network is built on it
    if meta["observation_version"] == 2 and meta["observation_size"] != OBS_V2_SIZE:
        raise bad("observation_size", f"{OBS_V2_SIZE:,} (version-2 observations have one length)")
    if not isinstance(meta["action_names"], list) or not meta["action_names"] \
            or not all(isinstance(a, str) for a in meta["action_names"]):
        raise bad("action_names", "a list of action names")
    if not isinstance(meta["config"], dict):
        raise bad("config", "an object (the training config)")
    if not is_iso_date(meta["saved_at"]):
        raise bad("saved_at", "an ISO date as text (2026-11-22T10:00:00)")
    if "label" in meta and not (isinstance(meta["label"], str)
                                and 0 < len(meta["label"]) <= MAX_MODEL_LABEL
                                and meta["label"].isprintable() and "/" not in meta["label"]):
        raise bad("label", f"a name of 1 to {MAX_MODEL_LABEL} printable characters without '/'")
    try:
        RuleSet.from_written(meta["rules"])
    except Exception as exc:  # noqa: BLE001 - any refusal of the rules is one message
        raise ValueError(f"{where}: its rules cannot be read by this version of ono_env: {exc}") from None
    return meta


def rules_named(rules: RuleSet) -> str:
    """``rules`` as a message names them: "the 'classic' rules" where they are that preset's
    (at any player count), "custom rules based on 'classic'" for a rule set built from a
    preset (it keeps its name), "the 'house' rules" for one given a name of its own."""
    if rules.is_preset() or rules.name not in PRESETS:   # a preset's, or a name of its own
        return f"the {rules.name!r} rules"
    return f"custom rules based on {rules.name!r}"


def check_playable(meta: dict[str, Any], path: str = "model") -> None:
    """Raise ``ValueError`` unless this version of ono_env can play a model with (checked)
    ``meta`` under some rules: an observation version it writes, its action table, and an
    observation size that version has under the model's own rules (what
    :func:`check_compatible` checks first, and ``ono-export`` before it writes a file; before,
    a version-1 file of another size was exported, then no load took it)."""
    version = meta["observation_version"]
    if version not in OBS_VERSIONS:
        raise ValueError(f"{path}: trained on observation layout v{version}; this version of "
                         f"ono_env writes v{', v'.join(map(str, OBS_VERSIONS))}: retrain the "
                         f"model or update ono_env")
    theirs = list(meta["action_names"])
    if theirs != list(C.ACTION_NAMES):
        first = next((k for k, (a, b) in enumerate(zip(theirs, C.ACTION_NAMES)) if a != b),
                     min(len(theirs), C.NUM_ACTIONS))
        there = repr(theirs[first])[:40] if first < len(theirs) else "none"
        here = repr(C.ACTION_NAMES[first]) if first < C.NUM_ACTIONS else "none"
        raise ValueError(f"{path}: trained with a different action table ({len(theirs)} "
                         f"actions; action {first} is {there} there and {here} here); this "
                         f"version of ono_env has {C.NUM_ACTIONS}: retrain the model")
    if version == 1:   # its own rules' length (version 2's one length: check_metadata)
        trained = RuleSet.from_dict(meta["rules"])
        if meta["observation_size"] != observation_size(trained):
            raise ValueError(f"{path}: damaged model: observation size "
                             f"{meta['observation_size']}; its observations under "
                             f"{rules_named(trained)} have {observation_size(trained)} entries")


def check_compatible(meta: dict[str, Any], rules: RuleSet, path: str = "model") -> None:
    """Raise ``ValueError`` unless a model with (checked) ``meta`` can play ``rules``.

    A version-1 model plays only the rules it was trained for (its observation has neither
    the rules nor a fixed length). A version-2 observation covers every rule set at 2-10
    players (the rules block holds every option that changes play, and the player count), so
    a version-2 model plays under any rules; its ``observation_size`` must be version 2's."""
    check_playable(meta, path)   # a version-1 model's observation size too
    if meta["observation_version"] == 2:
        return
    trained = RuleSet.from_dict(meta["rules"])
    diff = trained.differing_fields(rules, skip=("name", "num_players"))
    shown = first_few([f"{k}={getattr(trained, k)!r} (asked {getattr(rules, k)!r})"
                       for k in diff], 4)
    # a version-1 model plays one table; the generalist plays every one
    other = "; or ppo-any, which plays every rule set at 2-10 players"
    # rules built from a preset keep its name: say they are custom, and what they set
    # (before: "trained for 'basic' rules, which differ from the 'basic' rules asked for")
    base = PRESETS.get(trained.name)
    its = f"{trained.name!r} rules"
    if base is not None and not trained.is_preset():
        its = (f"custom rules based on {trained.name!r} ("
               + ", ".join(f"{k}={getattr(trained, k)!r}"
                           for k in base.differing_fields(trained, skip=("name", "num_players")))
               + ")")
    if trained.num_players != rules.num_players:
        t = trained.num_players
        rules_too = (f"; its rules differ from {rules_named(rules)} asked for too: {shown}"
                     if diff else "")
        raise ValueError(f"{path}: trained for {t} players, asked to play {rules.num_players} "
                         f"(the table's player count){rules_too}; allowed: a table of {t} "
                         f"players under its {its} (num_players={t}; ono-arena "
                         f"--players {t}; ono-play with {t - 1} "
                         f"{'agent' if t == 2 else 'agents'} for the other "
                         f"{'seat' if t == 2 else 'seats'}){other}")
    if diff:
        raise ValueError(f"{path}: trained for {its}, which differ from "
                         f"{rules_named(rules)} asked for: {shown}; allowed: the "
                         f"{its} it was trained for{other}")


# ---- reading and writing ----------------------------------------------------------------
def model_bytes(net: PolicyNet, meta: dict[str, Any]) -> bytes:
    """The model file's bytes for ``net`` and its metadata (checked against each other)."""
    from safetensors.numpy import save

    if not isinstance(net, PolicyNet):   # before: an AttributeError
        raise ValueError(f"model to save: net is a {type(net).__name__}; allowed: a PolicyNet")
    check_metadata(meta, "model to save")
    arrays = sum(int(a.size) * 4 for a in net.arrays())   # float32, as the file holds them
    if arrays > MAX_MODEL_BYTES:   # before a copy is made (before: written, then refused as
        # too large by the loader that read it back)
        raise ValueError(f"model to save: its tensors would take {arrays:,} bytes; allowed: "
                         f"at most {MAX_MODEL_BYTES:,}, what every model loader reads")
    tensors = net.tensors()
    PolicyNet.from_tensors(tensors, meta, "model to save")
    try:
        text = json.dumps(meta, allow_nan=False)
    except ValueError:   # before: json's own words ("Out of range float values ..."), no model
        raise ValueError("model to save: its metadata holds a number JSON has not (NaN or an "
                         "infinity); allowed: finite numbers") from None
    data = save(tensors, metadata={META_KEY: text})
    if len(data) > MAX_MODEL_BYTES:   # the tensors fit, with the header not
        raise ValueError(f"model to save: its file would take {len(data):,} bytes; allowed: at "
                         f"most {MAX_MODEL_BYTES:,}, what every model loader reads")
    if (n := int.from_bytes(data[:8], "little")) > MAX_HEADER_BYTES:   # what no load reads
        raise ValueError(f"model to save: its safetensors header would take {n:,} bytes; "
                         f"allowed: at most {MAX_HEADER_BYTES:,} (its metadata is "
                         f"{len(text):,} bytes of JSON)")
    return data


def write_model(path: str | Path, net: PolicyNet, meta: dict[str, Any], *,
                new: bool = False) -> Path:
    """Write a ``.safetensors`` model file (through a temporary file, then renamed, or with
    ``new`` linked: :func:`~ono_env.checks.write_whole`); its
    folder is made where missing. A path that is no text, a folder, or a folder that cannot
    be made (a file on the way) is one ``ValueError`` (before: pathlib's ``TypeError`` and
    ``FileExistsError``). ``new``: never replace a file at ``path``, even one that appeared
    after the caller checked it (:func:`~ono_env.checks.write_whole`)."""
    if isinstance(path, (str, os.PathLike)) and Path(path).suffix != ".safetensors":
        raise ValueError(f"model file name {str(path)!r}: a model file's name ends in .safetensors")
    data = model_bytes(net, meta)
    return write_whole(check_write_path(path, "model file"), data, "model file", new=new)


def _header_length(head: bytes, size: int, where: str) -> int:
    """The length of the safetensors header that the first bytes ``head`` of model data of
    ``size`` bytes declare, or one ``ValueError`` naming ``where``: checked on a zip member's
    first bytes before the rest is unpacked, and again by :func:`parse_model`."""
    not_st = f"{where}: not a safetensors model file"
    if size < 8:
        raise ValueError(f"{not_st} (only {size} bytes)")
    n = int.from_bytes(head[:8], "little")
    if n < 2 or n > 100_000_000:   # safetensors' own limit: the bytes are something else
        raise ValueError(f"{not_st} (no safetensors header)")
    if n > MAX_HEADER_BYTES:
        # before: any length up to safetensors' 100 MB was parsed as JSON
        raise ValueError(f"{where}: its safetensors header declares {n:,} bytes; allowed: at "
                         f"most {MAX_HEADER_BYTES:,} (a model's header holds its tensors' "
                         f"entries and metadata, a few KB)")
    if 8 + n > size:
        raise ValueError(f"{where}: truncated or not a safetensors file (its header needs "
                         f"{8 + n:,} bytes, the file has {size:,})")
    return n


def parse_model(data: bytes, where: str) -> tuple[dict[str, Any], PolicyNet]:
    """Metadata and network of a model file's bytes; one ``ValueError`` naming ``where``
    for anything that is not a complete, consistent ono_env model."""
    meta = _read_header(data, _header_length(data, len(data), where), where)[1]
    from safetensors.numpy import load

    try:
        tensors = load(data)
    except Exception as exc:  # noqa: BLE001 - safetensors' own errors become one message
        raise ValueError(f"{where}: damaged or truncated safetensors data: {exc}") from None
    return meta, PolicyNet.from_tensors(tensors, meta, where)


def _read_header(data: bytes, n: int, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The safetensors header of ``n`` bytes at the start of ``data`` (model data, or only
    its first bytes) and its checked ono_env metadata; one ``ValueError`` naming ``where``."""
    not_st = f"{where}: not a safetensors model file"
    try:   # a tensor or a metadata key given twice: json would keep the last silently
        header = parse_json(data[8:8 + n], finite=False)
    except JSONError as exc:
        raise ValueError(f"{not_st} (its header is not JSON: {cut(str(exc), 120)})") from None
    if not isinstance(header, dict):
        raise ValueError(f"{not_st} (its header is not a JSON object)")
    extra = header.get("__metadata__")
    if not isinstance(extra, dict) or not isinstance(extra.get(META_KEY), str):
        raise ValueError(f"{where}: not an ono_env model: the safetensors metadata has no "
                         f"{META_KEY!r} entry")
    try:   # strict JSON, as the writer writes it (allow_nan=False): no NaN or Infinity
        meta = parse_json(extra[META_KEY])
    except JSONError as exc:
        raise ValueError(f"{where}: damaged model: the {META_KEY!r} metadata is not JSON "
                         f"({cut(str(exc), 120)})") from None
    check_metadata(meta, where)
    return header, meta


def _check_extent(header: dict[str, Any], size: int, where: str) -> None:
    """One ``ValueError`` naming ``where`` where the tensors of a well-formed ``header`` do
    not end at ``size``, the bytes of data after it, as safetensors' loading requires: said
    before a zip member's data is unpacked. A malformed entry is left to that loading."""
    ends: list[int] = []
    for key, entry in header.items():
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if key == "__metadata__":
            continue
        if not (isinstance(offsets, list) and len(offsets) == 2
                and all(type(x) is int for x in offsets)):
            return
        ends.append(offsets[1])
    end = max(ends, default=0)
    if end != size:
        raise ValueError(f"{where}: damaged or truncated safetensors data: its tensors take "
                         f"{end:,} bytes, the data after the header holds {size:,}")


def _export_hint(path: Path) -> str:
    # quoted as a shell reads it (before: a path with a space broke the command pasted)
    return shlex.join([EXPORT_COMMAND, str(path), str(path.with_suffix(".safetensors"))])


class _Refused(ValueError):
    """A zip member's first bytes refused by :func:`read_zip_member`'s ``first`` check: its
    message passes through as it is, not as a damaged member's."""


ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
"""The compression methods a model zip's members may use (what ono-train and Stable-Baselines3
write). bzip2 and LZMA are refused: ``zipfile`` unpacks each of their compressed blocks
whole, so a few kilobytes could unpack to gigabytes before any size is checked."""
_ZIP_CHUNK = 1 << 20


def read_zip_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str,
                    first: Callable[[bytes], Any] | None = None) -> bytes:
    """The bytes of ``info``, unpacked in chunks of 1 MiB: memory stays within twice the size
    the zip declares (the chunks and their join; at most :data:`MAX_MODEL_BYTES` declared),
    whatever the compressed data holds.
    ``zipfile.ZipFile.read`` unpacks a deflated member in one call of up to 2 GiB, so it is
    not used here. ``ValueError`` naming the member for a method outside :data:`ZIP_METHODS`,
    a declared size over the limit, or data that does not unpack to the declared size and
    CRC-32, or an encrypted member. ``first``: called with the first chunk (empty for an empty
    member) before any more is unpacked, to refuse data that is not what the member must
    hold without unpacking all of it (its :class:`_Refused` error passes through)."""
    name = info.filename
    if info.flag_bits & 0x1:
        raise ValueError(f"{where}: its member {name} is encrypted (allowed: a member that is "
                         f"not)")
    if info.compress_type not in ZIP_METHODS:
        raise ValueError(f"{where}: its member {name} is compressed with method "
                         f"{info.compress_type} (allowed: "
                         f"{', '.join(f'{m} ({n})' for m, n in ZIP_METHODS.items())})")
    if info.file_size > MAX_MODEL_BYTES:
        raise ValueError(f"{where}: its member {name} is too large ({info.file_size:,} bytes; "
                         f"at most {MAX_MODEL_BYTES:,})")
    parts: list[bytes] = []
    total = 0
    try:
        with zf.open(info) as fh:   # stops at the declared size and checks the CRC-32 there
            while chunk := fh.read(_ZIP_CHUNK):
                if first is not None and not parts:
                    first(chunk)
                total += len(chunk)
                parts.append(chunk)
            if first is not None and not parts:
                first(b"")
    except (MemoryError, _Refused):
        raise
    except Exception as exc:  # noqa: BLE001 - BadZipFile (CRC), zlib.error, EOFError, ...
        detail = str(exc) if isinstance(exc, zipfile.BadZipFile) else f"{type(exc).__name__}: {exc}"
        raise ValueError(f"{where}: damaged zip member {name} ({detail})") from None
    if total != info.file_size:
        raise ValueError(f"{where}: damaged zip member {name} ({total:,} bytes where the zip "
                         f"declares {info.file_size:,})")
    return b"".join(parts)


MAX_ZIP_MEMBERS = 1_000
"""The most members a model zip may hold (a Stable-Baselines3 zip holds seven): ``zipfile``
reads every member's entry as it opens a zip, whatever its number."""


_ZIP64 = 1 << 32
"""What :func:`zip_members` counts a zip64 archive as: past any bound of a model zip."""
_LARGE_DIRECTORY = 1 << 33
"""What :func:`zip_members` counts a zip whose central directory is too large as."""
ZIP_TAIL_BYTES = 22 + 0xFFFF + 76
"""The end of a zip read for its member count: the end record, a comment of at most 64 KiB,
and the zip64 end record and its locator before them (before: without the last two, a
comment of 64 KiB hid the zip64 record that ``zipfile`` reads)."""
ZIP_ENTRY_BYTES = 1024
"""The most bytes one member of a model zip takes in its central directory: 46 and its name
and extra fields (a Stable-Baselines3 zip's and torch's take under 200)."""


def zip_members(path: Path) -> int | None:
    """How many members the zip at ``path`` says it holds, read from its end-of-central-
    directory record (a zip64 one's count or size marks count as past any bound), before
    ``zipfile`` parses them; None where no such record is found (``zipfile`` then names the
    damage)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - ZIP_TAIL_BYTES))
            return zip_members_of_tail(fh.read())
    except OSError:
        return None


def zip_members_of_tail(tail: bytes) -> int | None:
    """:func:`zip_members` of a zip whose last :data:`ZIP_TAIL_BYTES` (or all of it) are
    ``tail``: the count of the zip64 end record where its locator comes before the end record
    (``zipfile`` reads that one, and torch writes one), else of the end record;
    ``_ZIP64`` for a zip64 mark or locator with no such record; ``_LARGE_DIRECTORY``
    where the central directory is larger than :data:`MAX_ZIP_MEMBERS` entries of
    :data:`ZIP_ENTRY_BYTES` (``zipfile`` parses the directory by its size, whatever the count
    says: before, a count written as 7 let 1.2M entries be parsed, in 15 s and 790 MB)."""
    import struct

    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        return None
    entries, directory = struct.unpack("<HI", tail[at + 10:at + 16])
    if at >= 20 and tail[at - 20:at - 16] == b"PK\x06\x07":   # a zip64 locator
        if at < 76 or tail[at - 76:at - 72] != b"PK\x06\x06":   # its record elsewhere
            return _ZIP64
        entries, directory = struct.unpack("<QQ", tail[at - 44:at - 28])   # its total, its size
    elif entries == 0xFFFF or directory == 0xFFFFFFFF:   # a zip64 count: past any bound here
        return _ZIP64
    if directory > MAX_ZIP_MEMBERS * ZIP_ENTRY_BYTES:
        return _LARGE_DIRECTORY
    return int(entries)


def zip_too_large(members: int, what: str = "members") -> str:
    """What a zip whose :func:`zip_members` are over :data:`MAX_ZIP_MEMBERS` is, and what is
    allowed (``what``: how its members are called)."""
    most = f"at most {MAX_ZIP_MEMBERS:,} {what} (a model zip holds a few)"
    if members == _ZIP64:
        return f"a zip64 archive whose count is past any bound here; allowed: {most}"
    if members == _LARGE_DIRECTORY:
        return (f"a zip whose directory takes more than {MAX_ZIP_MEMBERS * ZIP_ENTRY_BYTES:,} "
                f"bytes; allowed: {most}, {ZIP_ENTRY_BYTES:,} bytes of directory each")
    return f"a zip of {members:,} {what}; allowed: {most}"


def read_model_bytes(path: str | Path) -> tuple[bytes, str]:
    """The model bytes of ``path`` and how to name them in messages: the whole file, or a
    zip's :data:`SAFE_MEMBER` (read with ``zipfile``; nothing else in the zip is read).
    Not yet checked (:func:`parse_model` does that)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"a model path must be a str or a path; got {type(path).__name__}")
    if not str(path).strip():   # Path('') is the current folder (before: "'.': it is a folder")
        raise ValueError(f"model path {str(path)!r}: a file path is needed")
    if "\x00" in str(path):   # before: "no such file" (no system's path holds one)
        raise ValueError(f"cannot read model file {path_text(path)}: its path holds a "
                         f"NUL character; allowed: a file path without one")
    path = Path(path)
    # a path the system could open is shown whole; a page of one is not (before: echoed
    # whole, 100,000 characters of it)
    where = path_text(path)
    try:   # a name too long for the system: its OSError (is_dir passes ENAMETOOLONG on)
        if path.is_dir():
            raise ValueError(f"cannot read model file {where}: it is a folder")
        if not path.exists():
            raise ValueError(f"cannot read model file {where}: {no_file(path)}")
        if not path.is_file():
            raise ValueError(f"cannot read model file {where}: not a regular file")
        size = path.stat().st_size
        with open(path, "rb") as fh:
            first = fh.read(8)
            magic = first[:4]
    except OSError as exc:
        raise ValueError(f"cannot read model file {where}: {exc.strerror or exc}") from None
    if size > MAX_MODEL_BYTES:
        raise ValueError(f"{where}: {size:,} bytes is too large for a model file "
                         f"(at most {MAX_MODEL_BYTES:,})")
    # a zip's own signatures (a file's header, an empty zip's end): a safetensors header of
    # 19,280 bytes starts b'PK\0\0' too (before: read as a damaged zip)
    if magic not in (b"PK\x03\x04", b"PK\x05\x06"):
        if path.suffix.lower() == ".zip":   # a model file renamed .zip is read as one (before:
            try:                              # "not a zip file"; a zip renamed .safetensors loads)
                _header_length(first, size, where)
            except ValueError:
                raise ValueError(f"cannot read model file {where}: not a zip file (nor a "
                                 f"safetensors model)") from None
        try:
            return path.read_bytes(), where
        except OSError as exc:
            raise ValueError(f"cannot read model file {where}: {exc.strerror or exc}") from None
    members = zip_members(path)
    if members is not None and members > MAX_ZIP_MEMBERS:   # before: each member parsed first,
        # 1.2M empty ones in 10 s and 650 MB
        raise ValueError(f"cannot read model file {where}: {zip_too_large(members)}")
    try:
        zf = zipfile.ZipFile(path)
    except Exception as exc:  # noqa: BLE001 - BadZipFile, OSError, EOFError, ...
        detail = str(exc) if isinstance(exc, zipfile.BadZipFile) else f"{type(exc).__name__}: {exc}"
        raise ValueError(f"cannot read model file {where}: damaged zip ({detail})") from None
    with zf:
        if sum(i.filename == SAFE_MEMBER for i in zf.infolist()) > 1:   # before: the last read
            raise ValueError(f"cannot read model file {where}: damaged zip (it holds "
                             f"{SAFE_MEMBER} twice)")
        info = zf.NameToInfo.get(SAFE_MEMBER)
        old = OLD_META_NAME in zf.NameToInfo
        if info is not None:   # its header checked before the rest is unpacked (before: a
            # 300 KB zip of 600 MB of zeros was unpacked whole to find no header)
            member = f"{where} (member {SAFE_MEMBER})"

            def head(chunk: bytes) -> None:
                try:
                    n = _header_length(chunk, info.file_size, member)
                    if 8 + n <= len(chunk):   # the whole header: its metadata and the
                        # tensors' extent too (before: 800 MB of zeros unpacked, 1.7 GB held,
                        # to refuse metadata that the first kilobyte held)
                        _check_extent(_read_header(chunk, n, member)[0],
                                      info.file_size - 8 - n, member)
                except ValueError as exc:
                    raise _Refused(str(exc)) from None

            try:
                return read_zip_member(zf, info, where, head), member
            except _Refused as exc:   # said as every refusal is: a plain ValueError
                raise ValueError(str(exc)) from None
    if old:
        raise ValueError(
            f"{where} is a checkpoint saved before ono_env's model format version 2: it has no "
            f"{SAFE_MEMBER} member (the only part of a zip that is loaded as an agent; nothing "
            f"else in it is read). Convert it to a model file with: {_export_hint(path)}")
    # before: "export a checkpoint with ono-export", which refuses a zip without either member
    raise ValueError(
        f"{where} is not an ono_env model: it has no {SAFE_MEMBER} member (the only part of a "
        f"zip that is loaded as an agent; nothing else in it is read, so a network saved by "
        f"other code is not loaded from it); allowed: a model file, or a checkpoint zip that "
        f"ono-train saved. A model trained by your own code plays as an agent object of your "
        f"own, with act(obs, mask, rng) (docs/agents.md)")


def read_model(path: str | Path) -> tuple[dict[str, Any], PolicyNet]:
    """The checked metadata and the network of a model file or checkpoint zip; one
    ``ValueError`` naming the file for anything else."""
    return parse_model(*read_model_bytes(path))


class _SharedNets:
    """The networks that :func:`load_agent` has read, by the SHA-256 of the model bytes, so that
    the agents of one file share one set of weights: a table of nine ``ppo-any`` holds its
    network once, not nine times (1.7 MB each; the web table made 1,800 such agents for 200
    games). The bytes are read and hashed at every load, so a file changed on disk is read
    anew. The arrays are made read-only: a shared network cannot be changed through one agent
    behind another's back. At most :data:`SHARED_MODELS` networks and
    :data:`SHARED_MODEL_BYTES` bytes of model files are kept, the least recently loaded
    dropped first; beyond them, a network that an agent still holds is shared too, whatever
    its size, by a weak reference (before: a file over that size was read and unpacked anew
    for every seat, each a copy of the network: a 600 MB model at four seats held 3.2 GB).
    ``functools.lru_cache`` cannot bound by bytes nor key by content without reading the
    bytes first, hence this small cache; it is locked, as the web table loads in threads."""

    def __init__(self) -> None:
        self._nets: OrderedDict[bytes, tuple[dict[str, Any], PolicyNet, int]] = OrderedDict()
        # the networks agents hold, kept or not, and each one's metadata, which lives as long
        # as the network (keyed by it: no callback of its own, so no race with a new read)
        self._alive: weakref.WeakValueDictionary[bytes, PolicyNet] = weakref.WeakValueDictionary()
        self._alive_meta: weakref.WeakKeyDictionary[PolicyNet, dict[str, Any]] = \
            weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        # a process forked while another thread held the lock would find it held for ever
        if hasattr(os, "register_at_fork"):   # POSIX only
            os.register_at_fork(after_in_child=self._new_lock)

    def _new_lock(self) -> None:
        self._lock = threading.Lock()

    def read(self, path: str | Path) -> tuple[dict[str, Any], PolicyNet]:
        """The checked metadata and the shared network of a model file or checkpoint zip."""
        meta, net, _digest = self.read_digest(path)
        return meta, net

    def read_digest(self, path: str | Path) -> tuple[dict[str, Any], PolicyNet, str]:
        """:meth:`read`, and the SHA-256 (hex) of the model bytes read: those the network
        was made from (:func:`model_sha256`)."""
        data, where = read_model_bytes(path)
        key = hashlib.sha256(data).digest()
        with self._lock:
            hit = self._nets.get(key)
            if hit is not None:
                self._nets.move_to_end(key)
                return copy.deepcopy(hit[0]), hit[1], key.hex()
            alive = self._alive.get(key)
            if alive is not None:
                return copy.deepcopy(self._alive_meta[alive]), alive, key.hex()
        meta, net = parse_model(data, where)
        for a in net.arrays():
            a.flags.writeable = False
        with self._lock:
            alive = self._alive.get(key)   # another thread read the same bytes meanwhile
            if alive is not None:
                return meta, alive, key.hex()
            self._alive[key] = net
            self._alive_meta[net] = copy.deepcopy(meta)
        if len(data) <= SHARED_MODEL_BYTES:
            with self._lock:
                hit = self._nets.get(key)   # another thread read the same bytes meanwhile:
                if hit is not None:         # its network is the one shared
                    self._nets.move_to_end(key)
                    return meta, hit[1], key.hex()
                self._nets[key] = (copy.deepcopy(meta), net, len(data))
                while (len(self._nets) > SHARED_MODELS
                       or sum(n for *_, n in self._nets.values()) > SHARED_MODEL_BYTES):
                    self._nets.popitem(last=False)
        return meta, net, key.hex()

    def clear(self) -> None:
        """Forget every network kept (agents made before keep theirs)."""
        with self._lock:
            self._nets.clear()
            self._alive.clear()
            self._alive_meta.clear()


shared_nets = _SharedNets()
"""The networks shared by the agents that :func:`load_agent` makes."""


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The metadata of a model file or checkpoint zip (the whole file is checked);
    a clear ``ValueError`` for anything else."""
    return read_model(path)[0]


# ---- the agent --------------------------------------------------------------------------
OBS_FAR = 1e6
"""Past this size an observation value is far outside those a game writes (counts, scores
scaled to a few units; a match's points at most 1,000,000)."""


class LearnedAgent:
    """A policy network as an agent: the logits of the observation, then the most likely
    legal action (``deterministic=True``, the default) or a draw from the masked softmax
    made with the generator passed to ``act`` (Gumbel-max). Runs in NumPy."""

    uses_observation = True

    def __init__(self, net: PolicyNet, rules: RuleSet, name: str = "learned",
                 deterministic: bool = True, meta: dict[str, Any] | None = None) -> None:
        # each argument checked (before: rules='basic' was kept as text, and repr and every
        # error of act then failed; deterministic='no' played as True, a None net failed
        # with an AttributeError)
        if not isinstance(net, PolicyNet):
            raise ValueError(f"net is a {type(net).__name__}; allowed: a PolicyNet "
                             f"(load_agent reads one from a model file)")
        if meta is not None and not isinstance(meta, dict):
            raise ValueError(f"meta is a {type(meta).__name__}; allowed: a dict or None")
        self.net = net
        self.rules = resolve_rules(rules)
        if not isinstance(name, str):
            raise ValueError(f"name = {shown(name, 40)} ({type(name).__name__}); allowed: text")
        self.name = name
        self.deterministic = check_bool("deterministic", deterministic)
        if meta:   # checked as a model file's is, and against the rules (before: a KeyError
            # for partial metadata, and another layout's version named as this one's)
            meta = check_metadata(meta, f"meta of {shown(name, 40)}")
            check_compatible(meta, self.rules, f"meta of {shown(name, 40)}")
        self.meta = meta or {}
        self.model_sha256: str | None = None
        """The SHA-256 of the model bytes the network was read from (:func:`model_sha256`;
        set by :func:`load_agent`), None for a network made in memory: which model a run
        played, whatever its label."""
        self.observation_version = 2 if net.observation_size == OBS_V2_SIZE else 1
        """The observation layout the network reads (version 2 has its own length, which no
        version-1 layout has); the agent driver observes each agent in its own version."""
        self.obs_size = observation_size(self.rules, self.observation_version)
        if net.observation_size != self.obs_size or net.num_actions != C.NUM_ACTIONS:
            raise ValueError(f"{name}: a network for ({net.observation_size},) observations and "
                             f"{net.num_actions} actions cannot play {self.rules.name!r} with "
                             f"{self.rules.num_players} players ({self.obs_size}, "
                             f"{C.NUM_ACTIONS})")

    def __repr__(self) -> str:
        return f"LearnedAgent({self.name!r}, rules={self.rules.name!r}, num_players={self.rules.num_players})"

    def logits(self, obs: np.ndarray) -> np.ndarray:
        """``(B, A) float32`` unmasked logits of ``(B, D)`` observations, checked as :meth:`act`
        checks them (before: NumPy's broadcast error for another width, a list taken, a NaN
        blamed on the weights). Logits that are not finite are one ``ValueError``: finite
        observations far outside those a game writes (3e38) overflowed the products, and the
        agent played the first legal action and reported NaN probabilities, with NumPy's
        warnings; a network whose weights are not finite (a training run that diverged), or
        whose finite weights overflow on observations in range (a damaged file whose load's
        extreme observations did not reach them), is named as the cause where the
        observations are in range."""
        self._check_obs(obs, None, needs_rng=False)
        return self._logits(obs)

    def _logits(self, obs: np.ndarray) -> np.ndarray:
        """:meth:`logits` of observations already checked."""
        with np.errstate(over="ignore", invalid="ignore"):
            z = self.net(obs)
        if not np.isfinite(z).all():
            largest = float(np.abs(obs).max())
            # the cause named (before: "are its weights finite?" where they were, and a
            # crafted file's finite weights overflowed on observations its load did not try)
            why = (f"observations far outside those a game writes (the largest in size "
                   f"{largest:g}; allowed: observations as VecGame.observe writes them)"
                   if largest > OBS_FAR else "its network, whose weights are not all finite"
                   if not all(np.isfinite(a).all() for a in self.net.arrays())
                   else "its network: finite weights whose products overflow on these "
                        "observations (a damaged model)")
            raise ValueError(f"{self!r}: logits that are not finite, from {why}")
        return z

    def probabilities(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``(B, A)`` float64: the probability of each action under the masked softmax, 0 for
        illegal actions (the deterministic agent plays the largest), and 0 throughout a row
        with no legal action (a finished game's). ``obs`` and ``mask`` are checked as
        :meth:`act` checks them (before: only ``act`` did; a one-row mask was broadcast, a
        NaN gave NaN, a row with nothing legal NaN and a warning)."""
        self._check(obs, mask, None, needs_rng=False)
        if len(obs) == 0:
            return np.zeros((0, C.NUM_ACTIONS))
        legal = mask.astype(bool)
        z = np.where(legal, self._logits(obs).astype(np.float64), -np.inf)
        some = legal.any(axis=1)
        z[~some] = 0.0   # no legal action: all 0 below, not exp(-inf - -inf)
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z) * legal
        p[some] /= p[some].sum(axis=1, keepdims=True)
        return p

    def explain(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """What the policy makes of each row: :meth:`probabilities` and the value estimate
        (``(B,)``, or None when the model file holds no value network)."""
        probs = self.probabilities(obs, mask)   # checks obs and mask
        if not self.net.has_value:
            return probs, None
        return probs, self.net.value(obs) if len(obs) else np.zeros(0, np.float32)

    def _check(self, obs: Any, mask: Any, rng: Any, needs_rng: bool = True) -> None:
        """What :meth:`act`, :meth:`probabilities` and :meth:`explain` take: ``(B, D)``
        finite float observations of this agent's width and a ``(B, A)`` mask (and, for
        ``act``, a NumPy generator); one ``ValueError`` otherwise."""
        self._check_obs(obs, rng, needs_rng)
        check_act_mask(self, obs, mask, C.NUM_ACTIONS)

    def _check_obs(self, obs: Any, rng: Any, needs_rng: bool) -> None:
        """:meth:`_check` of the observations (and ``rng``) alone."""
        check_act_obs(self, obs, rng, needs_rng=needs_rng)
        if obs.ndim != 2 or obs.shape[1] != self.obs_size:
            v = self.observation_version
            which = (f" (it reads version-{v} observations: VecGame(..., observation_version={v}), "
                     f"or the environments' observation_version={v})"
                     if obs.ndim == 2 and obs.shape[1] == observation_size(self.rules, 3 - v)
                     else "")
            raise ValueError(f"{self!r}: observations of shape {obs.shape}; expected "
                             f"(B, {self.obs_size}){which}")

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        self._check(obs, mask, rng)
        if len(obs) == 0:
            return np.zeros(0, np.int64)
        z = self._logits(obs)
        if not self.deterministic:
            z = z.astype(np.float64) + rng.gumbel(size=z.shape)
        return np.where(mask, z, -np.inf).argmax(axis=1)


def load_agent(path: str | Path, rules: Any = None, *, deterministic: bool = True,
               name: str | None = None) -> LearnedAgent:
    """Load a model file (``.safetensors``) or a training checkpoint's model (a ``.zip``'s
    ``ono_policy.safetensors`` member) as an agent for ``rules`` (default: the rules it was
    trained for); ``ValueError`` with the reason when the file is not a model or the rules
    do not fit. ``deterministic``: play the most probable legal action (the default), or
    draw from the policy's probabilities with the ``rng`` given to ``act``. ``name``: what
    that reason calls the model (a shipped policy's name, which the user gave, rather than
    the path it is installed at); default: the path.

    The agents of one model file share its network (:data:`shared_nets`), whose arrays are
    read-only; :func:`read_model` gives a network of one's own to change."""
    check_bool("deterministic", deterministic)
    if name is not None and not isinstance(name, str):   # before: taken, and shown as repr
        raise ValueError(f"name = {shown(name, 40)} ({type(name).__name__}); allowed: None or "
                         f"text, what messages call the model")
    meta, net, digest = shared_nets.read_digest(path)
    rules = RuleSet.from_dict(meta["rules"]) if rules is None else resolve_rules(rules)
    check_compatible(meta, rules, repr(str(path)) if name is None else repr(name))
    agent = LearnedAgent(net, rules, model_label(path, meta), deterministic, meta)
    agent.model_sha256 = digest
    return agent


def model_label(path: str | Path, meta: Mapping[str, Any] | None = None) -> str:
    """The name a model file plays under (in the arena, the web table, replays): its file
    name without ``.safetensors``; for a file named ``model`` that a training run wrote, the
    run's name from its metadata (``label``: the run folder, ``<name>-<time>``), so that two
    runs' models can meet. ``meta`` is read from the file when not given. Spaces at the ends
    of either are left out, and a character that is not printable (a newline in a file name)
    is shown as ``?``. A file whose name without the extension is an agent's (``greedy``,
    ``pimc:8``), but for that shipped policy's own file or a copy of it, plays under its whole
    file name
    (``greedy.safetensors``), so that it is never taken for that agent (before: beside
    ``greedy``, the rows read ``greedy#1`` and ``greedy#2``, and alone it read ``greedy``); a
    run's label that is an agent's name, under its folder and file name
    (``runs/r1/model.safetensors`` labelled ``greedy``: ``r1/model.safetensors``)."""
    stem = printable(Path(path).stem.strip() or Path(path).name)
    if stem != "model":
        return _told_apart(stem, Path(path))
    if meta is None:
        try:
            meta = read_metadata(path)
        except ValueError:
            return stem
    label = meta.get("label") if isinstance(meta, Mapping) else None
    if not (isinstance(label, str) and label.strip()):
        return stem
    # a run's label that is an agent's name is told apart too, by the run folder and file
    # name (before: a run labelled greedy played as greedy#1 beside greedy#2)
    p = Path(path)
    return _told_apart(printable(label.strip()), p,
                       printable(f"{p.parent.name.strip()}/{p.name.strip()}".lstrip("/")))


def _told_apart(label: str, path: Path, whole: str | None = None) -> str:
    """``label``, or ``whole`` (default: the file's whole name) where ``label`` names an agent
    that ``path`` is not (:func:`model_label`)."""
    from ono_env.agents.registry import agent_names
    from ono_env.agents.search import SEARCH_AGENTS

    if label not in agent_names() and label.partition(":")[0] not in SEARCH_AGENTS:
        return label
    own = shipped_models().get(label)
    try:   # that policy's file, or a copy of it, is that agent; read as a model is, with its
        # checks (before: read whole, with none: a FIFO of that name hung, and a file of
        # several GB was read into memory)
        if own is not None and (own.resolve() == path.resolve()
                                or model_sha256(own) == model_sha256(path)):
            return label
    except (OSError, ValueError):
        pass
    return printable(path.name.strip()) if whole is None else whole


def model_sha256(path: str | Path) -> str:
    """The SHA-256 of a model's bytes, a model file's or a checkpoint zip's model member
    (:func:`read_model_bytes`; ``ValueError`` when they cannot be read): which model a run
    played, whatever its name."""
    return hashlib.sha256(read_model_bytes(path)[0]).hexdigest()


def played_models(agent: Any) -> str | None:
    """The SHA-256 of the model an agent plays from, None when it plays from none that was
    read from a file: a loaded learned policy's (:attr:`LearnedAgent.model_sha256`); for an
    agent guided by learned policies (its ``guides``: a search agent's prior, then its
    playout policy), their model's where they play from one, else a combined digest: the
    SHA-256 of their digests joined by ``+`` in that order (a prior A with playouts B is not
    a prior B with playouts A). A pairing of two runs checks it, so that neither a model
    file nor a search agent's guide can change under the same label."""
    own = getattr(agent, "model_sha256", None)
    if isinstance(own, str):
        return own
    found = [d for g in getattr(agent, "guides", ()) if (d := played_models(g)) is not None]
    if len(set(found)) <= 1:
        return found[0] if found else None
    return hashlib.sha256("+".join(found).encode()).hexdigest()


def shipped_models() -> dict[str, Path]:
    """The policies shipped in the package: agent name -> file (``ppo-basic-2p`` ...)."""
    return {p.stem: p for p in sorted(MODELS_DIR.glob("*.safetensors"))}


def shipped_specialists(rules: RuleSet) -> list[str]:
    """The shipped version-1 policies (the specialists, each trained for one table) that
    play ``rules``, by name, in :func:`shipped_models`' order: the search's prior and the
    trainer's opponent pools choose from them (one list, where each had its own loop)."""
    check_rule_set("shipped_specialists", rules)   # before: a preset's name matched nothing
    out = []
    for name, path in shipped_models().items():
        meta = read_metadata(path)
        if meta["observation_version"] != 1:
            continue
        try:   # a specialist plays exactly the rules it was trained for
            check_compatible(meta, rules, name)
        except ValueError:
            continue
        out.append(name)
    return out
