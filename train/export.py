"""Export a playable model file (``.safetensors``, :mod:`ono_env.agents.learned`) from a
training checkpoint:

    ono-export runs/basic-60min-.../model.zip ppo-basic-2p.safetensors

``export_model(src, dest)`` takes

- a checkpoint of this version (a MaskablePPO zip with an ``ono_policy.safetensors`` member):
  that member, checked, becomes the file;
- a checkpoint saved before model format version 2 (a MaskablePPO zip with
  ``ono_meta.json`` and ``policy.pth``): the network is rebuilt from ``policy.pth``, read
  with ``torch.load(..., weights_only=True)`` (torch's restricted unpickler, which builds
  tensors and refuses anything else; ``policy.pth`` must also be a torch zip archive, not a
  bare pickle) and from ``ono_meta.json``. The hidden layer sizes come from the shapes of
  ``mlp_extractor.policy_net.<i>.weight``, the observation scale from the features
  extractor's ``scale`` buffer, the activation from the stored training config
  (``policy.activation``; ``tanh`` when absent: the config's default, and what
  ``ono-train`` has always passed to MaskablePPO as ``activation_fn``; a ``config`` or
  ``policy`` that is not a mapping is refused, and so is a layer number given twice). The value network
  (``mlp_extractor.value_net`` and ``value_net``) comes along when present, for the value
  estimate that the web table shows; the optimizer state is left out. This needs torch
  (the ``[train]`` extra);
- a ``.safetensors`` model: checked and copied.

Nothing else in the zip is read: SB3's ``data`` member (pickled classes and spaces),
``pytorch_variables.pth`` and ``policy.optimizer.pth`` are never opened, and nothing is
unpickled. Every refusal is one ``ValueError`` (from the command line: one line
``ono-export: error: ...`` on stderr and status 2).
"""

from __future__ import annotations

import io
import itertools
import os
import re
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ono_env.agents.learned import (
    FORMAT,
    FORMAT_VERSION,
    MAX_MODEL_BYTES,
    MAX_ZIP_MEMBERS,
    OLD_META_NAME,
    PolicyNet,
    SAFE_MEMBER,
    ZIP_TAIL_BYTES,
    check_metadata,
    check_playable,
    read_model,
    read_zip_member,
    rules_named,
    write_model,
    zip_members,
    zip_members_of_tail,
    zip_too_large,
)
from ono_env.apps import console as cli
from ono_env.checks import (
    JSONError,
    check_input_file,
    check_output_file,
    cut,
    is_int,
    made_dirs_kept_on_success,
    parse_json,
    printable,
    shown,
)
from ono_env.rules import RuleSet

_HIDDEN = re.compile(r"mlp_extractor\.policy_net\.(\d+)\.weight")
_VALUE_HIDDEN = re.compile(r"mlp_extractor\.value_net\.(\d+)\.weight")


MAX_OLD_META_BYTES = 1 << 20
"""The largest ``ono_meta.json`` read: 1 MiB (one written by ono-train holds a few KB; JSON
takes about 26 times its text in memory as Python objects)."""


def _member(zf: zipfile.ZipFile, name: str, where: str) -> bytes:
    if sum(i.filename == name for i in zf.infolist()) > 1:   # before: the last one, silently
        raise ValueError(f"{where}: damaged checkpoint: it holds {name} twice")
    info = zf.NameToInfo.get(name)
    if info is None:   # before: "it has neither ... nor ono_meta.json and policy.pth" beside it
        if name == OLD_META_NAME:
            raise ValueError(f"{where}: not a checkpoint saved before model format version 2 "
                             f"(no {OLD_META_NAME})")
        raise ValueError(f"{where}: damaged checkpoint saved before model format version 2: it "
                         f"has {OLD_META_NAME} but no {name}")
    if name == OLD_META_NAME and info.file_size > MAX_OLD_META_BYTES:
        # before: up to 1 GiB read, then parsed (a 146 KB zip took 3.9 GB)
        raise ValueError(f"{where}: damaged checkpoint: its {name} declares "
                         f"{info.file_size:,} bytes; allowed: at most {MAX_OLD_META_BYTES:,}")
    return read_zip_member(zf, info, where)


def _old_metadata(raw: bytes, where: str) -> dict[str, Any]:
    try:   # NaN, Infinity and 1e400: Python's JSON reads them; the new file could not hold them
        meta = parse_json(raw)
    except JSONError as exc:
        raise ValueError(f"{where}: damaged checkpoint: {OLD_META_NAME} is not JSON ({cut(str(exc), 120)})") \
            from None
    version = meta.get("format_version") if isinstance(meta, dict) else None
    # (before: true and 1.0 were taken for 1)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or not (is_int(version)
                                                                          and version == 1):
        got = (f"format {meta.get('format')!r}, format version {meta.get('format_version')!r}"
               if isinstance(meta, dict) else f"a JSON {type(meta).__name__}")
        raise ValueError(f"{where}: {OLD_META_NAME} is not ono_env model format version 1 "
                         f"({got}; allowed: format {FORMAT!r}, format version 1)")
    return meta


def _old_state_dict(raw: bytes, where: str) -> dict[str, np.ndarray]:
    if not raw.startswith(b"PK"):
        raise ValueError(f"{where}: policy.pth is not a torch zip archive (a bare pickle is "
                         f"never read)")
    _check_torch_records(raw, where)
    try:
        import torch as th
    except ImportError:
        raise ValueError(f"{where}: converting a checkpoint saved before model format version 2 "
                         f"needs torch: pip install 'ono-env[train]'") from None
    import warnings

    try:
        with warnings.catch_warnings():   # before: torch's warnings (a pickle protocol) were
            warnings.simplefilter("ignore")   # printed, with its source path, above the error
            sd = th.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - the restricted unpickler's refusals, damage
        raise ValueError(f"{where}: policy.pth cannot be read as weights only "
                         f"(torch.load with weights_only=True: {_torch_reason(exc)})") from None
    if not isinstance(sd, dict) or not all(isinstance(k, str) and isinstance(v, th.Tensor)
                                          for k, v in sd.items()):
        raise ValueError(f"{where}: policy.pth is not a state dict of tensors")
    total = 0
    for k, v in sd.items():   # each value stored once (before: a stride-0 view of one value
        # made a 200 KB checkpoint into a 1 GB model, 3.5 GB of memory, written and then refused)
        size = v.numel() * v.element_size()
        if v.untyped_storage().nbytes() < size:   # (a transposed view stores them all)
            raise ValueError(f"{where}: policy.pth's tensor {shown(k, 80)} holds more values "
                             f"than its record stores (a view that repeats them); allowed: "
                             f"tensors as torch saves a module's parameters")
        total += size
    if total > MAX_MODEL_BYTES:
        raise ValueError(f"{where}: policy.pth's tensors take {total:,} bytes; allowed: at most "
                         f"{MAX_MODEL_BYTES:,}, what a model file may hold")
    try:
        return {k: v.detach().to("cpu").numpy() for k, v in sd.items()}
    except Exception as exc:  # noqa: BLE001 - e.g. a dtype NumPy has no type for
        raise ValueError(f"{where}: policy.pth holds a tensor NumPy cannot read: {exc}") from None


def _check_torch_records(raw: bytes, where: str) -> None:
    """Refuse a ``policy.pth`` whose records ``torch.load`` could unpack to more than the
    file holds: torch writes every record stored, so a compressed one (before: a 403 KB
    checkpoint made a 1.6 GB tensor), as well as more than :data:`MAX_ZIP_MEMBERS` records
    or a zip64 count (each parsed before anything else is read), is one ``ValueError``."""
    members = zip_members_of_tail(raw[-ZIP_TAIL_BYTES:])
    if members is not None and members > MAX_ZIP_MEMBERS:
        raise ValueError(f"{where}: policy.pth is {zip_too_large(members, 'records')}")
    try:   # a zip that zipfile cannot read is refused (before: left to torch.load, which
        # read one with a damaged directory entry and unpacked its compressed record)
        with zipfile.ZipFile(io.BytesIO(raw)) as inner:
            packed = next((i.filename for i in inner.infolist()
                           if i.compress_type != zipfile.ZIP_STORED), None)
    except Exception as exc:  # noqa: BLE001 - BadZipFile, EOFError, ...
        raise ValueError(f"{where}: policy.pth is a damaged zip archive "
                         f"({cut(str(exc) or type(exc).__name__, 120)})") from None
    if packed is not None:
        raise ValueError(f"{where}: policy.pth's record {shown(packed, 80)} is compressed; "
                         f"allowed: stored records, as torch writes them")


def _torch_reason(exc: BaseException) -> str:
    """One line out of torch.load's multi-paragraph refusal."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    # the reason may start on a later line (before: "Unsupported operand 80" after two
    # newlines was read as an empty reason)
    m = re.search(r"WeightsUnpickler error:\s*(.*?)(?: Please |\n|$)", text)
    if m and m.group(1).strip():
        return m.group(1).strip()
    # torch 2.6 and later: the reason follows advice to load with weights_only=False (which
    # would run the file's code); only the reason is kept
    m = re.search(r"^(Trying to load unsupported .*|Unsupported .*)$", text, re.M)
    if m:
        return m.group(1).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()
             and "weights_only" not in ln]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def convert_old_checkpoint(zf: zipfile.ZipFile, where: str) -> tuple[dict[str, Any], PolicyNet]:
    """Metadata and network of a format-version-1 checkpoint (``ono_meta.json`` and
    ``policy.pth`` only; see the module docstring)."""
    old = _old_metadata(_member(zf, OLD_META_NAME, where), where)
    sd = _old_state_dict(_member(zf, "policy.pth", where), where)
    scale = sd.get("pi_features_extractor.scale", sd.get("features_extractor.scale"))
    other = sd.get("features_extractor.scale")
    if scale is not None and other is not None and (
            scale.shape != other.shape or not np.array_equal(scale, other)):
        # before: the policy's read, the other left without a word
        raise ValueError(f"{where}: policy.pth gives two observation scales that differ "
                         f"(pi_features_extractor.scale and features_extractor.scale)")
    if scale is None:
        raise ValueError(f"{where}: policy.pth has no observation scale "
                         f"(pi_features_extractor.scale): not an ono-train checkpoint")
    def layers(pattern: re.Pattern[str]) -> list[str]:   # each layer's weight key, in order
        found = sorted((int(m.group(1)), k) for k in sd if (m := pattern.fullmatch(k)))
        for (a, ka), (b, kb) in itertools.pairwise(found):   # '00' is layer 0 too
            if a == b:   # before: read as two layers, and refused for a bias it lacked
                raise ValueError(f"{where}: policy.pth gives layer {a} twice ({ka!r} and {kb!r})")
        return [k for _, k in found]

    idx, v_idx = layers(_HIDDEN), layers(_VALUE_HIDDEN)
    for chain in (idx, v_idx):   # the hidden sizes are read from these shapes: each must read
        width = int(np.asarray(scale).size)   # the layer before (before: a transposed weight
        for k in chain:                       # was refused against shapes made from itself)
            w = sd[k]
            if w.ndim != 2 or w.shape[1] != width:
                raise ValueError(f"{where}: policy.pth's {k!r} has shape {list(w.shape)}; "
                                 f"allowed: [units, {width}] (a layer reading the {width} "
                                 f"entries before it)")
            width = int(w.shape[0])
    tensors: dict[str, Any] = {"obs_scale": scale}
    for i, k in enumerate(idx):
        tensors[f"hidden.{i}.weight"] = sd[k]
        tensors[f"hidden.{i}.bias"] = sd.get(k.removesuffix("weight") + "bias")
    tensors["logits.weight"] = sd.get("action_net.weight")
    tensors["logits.bias"] = sd.get("action_net.bias")
    has_value = "value_net.weight" in sd or "value_net.bias" in sd
    if has_value:   # the value network, shown as what the agent thinks of a position
        for i, k in enumerate(v_idx):
            tensors[f"value_hidden.{i}.weight"] = sd[k]
            tensors[f"value_hidden.{i}.bias"] = sd.get(k.removesuffix("weight") + "bias")
        tensors["value.weight"] = sd.get("value_net.weight")   # one without the other:
        tensors["value.bias"] = sd.get("value_net.bias")       # refused below, not dropped
    missing = [k for k, v in tensors.items() if v is None]
    if missing:
        raise ValueError(f"{where}: policy.pth lacks the weights of {missing[0]!r}")
    config: Any = old.get("config", {})
    policy_cfg: Any = config.get("policy", {}) if isinstance(config, dict) else None
    if not isinstance(policy_cfg, dict):   # before: taken as no config, the activation tanh
        what = ("config" if not isinstance(config, dict) else "config.policy")
        value = config if what == "config" else policy_cfg
        raise ValueError(f"{where}: {OLD_META_NAME} {what} = {shown(value, 40)} "
                         f"({type(value).__name__}); allowed: a mapping (the training config)")
    meta = {
        "format": FORMAT, "format_version": FORMAT_VERSION if has_value else 2,
        "architecture": {"type": "mlp",
                         "hidden_sizes": [int(tensors[f"hidden.{i}.weight"].shape[0])
                                          for i in range(len(idx))],
                         "activation": policy_cfg.get("activation", "tanh"),
                         **({"value_hidden_sizes": [int(tensors[f"value_hidden.{i}.weight"].shape[0])
                                                    for i in range(len(v_idx))]}
                            if has_value else {})},
        **{k: old.get(k) for k in ("rules", "num_players", "observation_version",
                                    "observation_size", "action_names", "training_steps",
                                    "config", "saved_at")},
    }
    check_metadata(meta, where)
    return meta, PolicyNet.from_tensors(tensors, meta, where)


def export_model(src: str | Path, dest: str | Path) -> Path:
    """Write the ``.safetensors`` model file ``dest`` from the checkpoint (or model file)
    ``src``; see the module docstring. Returns ``dest``."""
    for what, given in (("source", src), ("destination", dest)):
        if not isinstance(given, (str, os.PathLike)) or isinstance(os.fspath(given), bytes):
            # before: Python's TypeError from Path()
            raise ValueError(f"{what} is a {type(given).__name__}; allowed: a file path (a str "
                             f"or a pathlib.Path)")
        if not str(given).strip():   # Path('') is the current folder
            raise ValueError(f"{what} {str(given)!r}: a file path is needed")
    given_dest = dest   # its text: a trailing '/' names a folder, which Path drops
    src, dest = Path(src), Path(dest)
    if dest.suffix != ".safetensors":   # '.safetensors' alone is a name without a suffix
        raise ValueError(f"destination {str(dest)!r}: a model file's name is a name and "
                         f".safetensors (model.safetensors)")

    def exists(path: Path, what: str) -> bool:   # a name too long: its OSError, named
        try:
            return path.exists()
        except OSError as exc:
            raise ValueError(f"{what} {str(path)!r}: {exc.strerror or exc}") from None
    if exists(dest, "destination") and exists(src, "source") and dest.resolve() == src.resolve():
        raise ValueError(f"destination {str(dest)!r} is the source file")
    check_input_file(src, "model file", MAX_MODEL_BYTES)   # no FIFO or device is opened
    if dest.is_dir():
        raise ValueError(f"destination {str(dest)!r} is a folder; give a file name ending in "
                         f".safetensors")
    # a refusal leaves no folder made for dest behind (before: an empty one)
    with made_dirs_kept_on_success():
        check_output_file(given_dest, "destination")   # a new file: an earlier model is never replaced
        kind = _zip_kind(src)
        if kind == "old":
            with zipfile.ZipFile(src) as zf:
                meta, net = convert_old_checkpoint(zf, repr(str(src)))
        elif kind == "neither":   # before: read_model's advice to run ono-export, as just done
            raise ValueError(f"{str(src)!r}: not an ono_env checkpoint: it has neither "
                             f"{SAFE_MEMBER} (a checkpoint of this version) nor {OLD_META_NAME} "
                             f"and policy.pth (one saved before model format version 2)")
        else:
            meta, net = read_model(src)   # a checkpoint's safe member or a model file, checked
        check_playable(meta, repr(str(src)))   # before: a file no load accepts, exported as fine
        return write_model(dest, net, meta, new=True)   # nor one made while it read


def _zip_kind(src: Path) -> str | None:
    """``"old"`` for a zip with ``ono_meta.json`` and no ``ono_policy.safetensors``,
    ``"neither"`` for a zip with neither, else None (a checkpoint of this version, a model
    file, or anything unreadable, left to :func:`read_model`'s messages)."""
    try:
        with open(src, "rb") as fh:
            if fh.read(2) != b"PK":
                return None
        members = zip_members(src)
        if members is None or members > MAX_ZIP_MEMBERS:   # read_model refuses it unparsed
            return None
        with zipfile.ZipFile(src) as zf:
            if SAFE_MEMBER in zf.NameToInfo:
                return None
            return "old" if OLD_META_NAME in zf.NameToInfo else "neither"
    except Exception:  # noqa: BLE001
        return None


def build_parser() -> cli.ArgumentParser:
    p = cli.ArgumentParser(
        prog="ono-export",
        description="Write a playable model file (.safetensors: weights and JSON metadata, "
                    "no code) from an ono-train checkpoint (.zip, also one saved before model "
                    "format version 2) or check and copy a model file.")
    p.add_argument("src", help="checkpoint .zip (or a .safetensors model)")
    p.add_argument("dest", help="model file to write (.safetensors), a new file: an existing one "
                                "is refused, never replaced")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    def body(args) -> None:
        dest = export_model(args.src, args.dest)
        meta = read_model(dest)[0]
        arch = meta["architecture"]
        # custom rules are named so (before: a rule set built from 'basic' was "'basic' rules")
        rules = rules_named(RuleSet.from_dict(meta["rules"])).removeprefix("the ")
        plays = (f"{rules}, {meta['num_players']} players"
                 if meta["observation_version"] == 1 else   # version 2: one length, every table
                 f"observation version 2 (plays every rule set at 2-10 players; its metadata "
                 f"names {rules}, {meta['num_players']} players)")
        # the path as errors show it (before: a name's escapes and newlines reached the terminal)
        said = (f"wrote {printable(str(dest))}: {plays}, {meta['training_steps']:,} training "
                f"steps, hidden {arch['hidden_sizes']} {arch['activation']}")
        try:
            print(said, flush=True)   # written now, not in a buffer
        except cli.StdoutError as exc:   # the file is whole: the error says so (before: only
            # that stdout failed, and a second run was refused for the file it did not name)
            raise cli.StdoutError(f"{said}; {exc}") from None

    return cli.run(build_parser(), argv, body)


if __name__ == "__main__":
    sys.exit(main())
