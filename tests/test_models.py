"""Model files: data, never code.

A model is a ``.safetensors`` file (weights + JSON metadata, run in NumPy); a training
checkpoint zip is loaded as an agent through its ``ono_policy.safetensors`` member only.
These tests build zips whose pickled members would write a marker file when unpickled and
check that no loader (library, console scripts, environments, opponent pools, the exporter)
ever runs them; then the round trip from a live MaskablePPO, every damaged file, and the
shipped models against a torch forward pass of the same weights on real observations.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import os
import pickle
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load as st_load
from safetensors.numpy import save as st_save

from ono_env.agents import make_agent
from ono_env.agents.learned import (
    LearnedAgent,
    PolicyNet,
    load_agent,
    make_metadata,
    model_bytes,
    read_metadata,
    read_model,
    shipped_models,
    write_model,
)
from ono_env.game import VecGame
from ono_env.observation import observation_scale, observation_size
from ono_env.rules import RuleSet

RULES = RuleSet.preset("basic", num_players=2)
EXPORT_HINT = "ono-export"


# ---- helpers ----------------------------------------------------------------------------
def tiny_net(rules=RULES, hidden=(8,), seed=0, activation="tanh") -> PolicyNet:
    rng = np.random.default_rng(seed)
    sizes = [observation_size(rules), *hidden, 85]
    layers = [(rng.normal(0, 0.3, (o, i)).astype(np.float32), rng.normal(0, 0.1, o).astype(np.float32))
              for i, o in itertools.pairwise(sizes)]
    return PolicyNet(observation_scale(rules), layers, activation)


def tiny_meta(net: PolicyNet, rules=RULES) -> dict:
    return make_metadata(rules, 123, {"name": "tiny"}, hidden_sizes=net.hidden_sizes,
                         activation=net.activation)


def tiny_bytes(rules=RULES) -> bytes:
    net = tiny_net(rules)
    return model_bytes(net, tiny_meta(net, rules))


class Payload:
    """Unpickling this runs ``exec`` of code that writes ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('pwned')",)


def old_meta(rules=RULES) -> dict:
    """Valid format-version-1 metadata (what ono_meta.json of an old checkpoint held)."""
    from ono_env.cards import ACTION_NAMES
    return {"format": "ono_env-policy", "format_version": 1, "rules": rules.to_dict(),
            "num_players": rules.num_players, "observation_version": 1,
            "observation_size": observation_size(rules), "action_names": list(ACTION_NAMES),
            "training_steps": 1000, "config": {"policy": {"net_arch": [8], "activation": "tanh"}},
            "saved_at": "2026-11-22T10:00:00"}


def torch_archive(obj) -> bytes:
    import torch as th
    buf = io.BytesIO()
    th.save(obj, buf)
    return buf.getvalue()


def malicious_zip(path: Path, marker: Path, *, safe_member: bool, pth: str = "pickle") -> Path:
    """An SB3-like checkpoint whose pickled parts all run the payload: ``data`` (JSON with a
    base64 cloudpickle, as SB3 stores classes), ``policy.pth`` (a bare pickle or a torch
    archive), ``pytorch_variables.pth``, ``policy.optimizer.pth``; with a copied valid
    ``ono_meta.json`` and, if ``safe_member``, a valid ``ono_policy.safetensors``."""
    evil = base64.b64encode(pickle.dumps(Payload(marker))).decode()
    data = {k: {":type:": "<class 'abc.ABCMeta'>", ":serialized:": evil}
            for k in ("policy_class", "policy_kwargs", "observation_space", "action_space")}
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("data", json.dumps(data))
        z.writestr("policy.pth", pickle.dumps(Payload(marker)) if pth == "pickle"
                   else torch_archive({"w": Payload(marker)}))
        z.writestr("pytorch_variables.pth", pickle.dumps(Payload(marker)))
        z.writestr("policy.optimizer.pth", torch_archive(Payload(marker)))
        z.writestr("_stable_baselines3_version", "2.3.0")
        z.writestr("ono_meta.json", json.dumps(old_meta()))
        if safe_member:
            z.writestr("ono_policy.safetensors", tiny_bytes())
    return path


def real_observations(rules, n, seed=0):
    """``n`` (observation, legal mask) rows from seeded greedy-vs-random games."""
    B = 64
    g = VecGame(rules, num_games=B, seed=seed, autoreset=True)
    agents = [make_agent("greedy", rules), make_agent("random", rules)]   # by seat parity
    rng = np.random.default_rng(seed)
    obs_rows, M, total = [], [], 0
    while total < n:
        mask = g.legal_mask().copy()
        seat = g.current_player
        obs = g.observe(seat)
        live = mask.any(1)
        obs_rows.append(obs[live].copy())
        M.append(mask[live])
        total += int(live.sum())
        who = (seat + np.arange(B)) % 2
        act = np.zeros(B, np.int64)
        for k, a in enumerate(agents):
            rows = live & (who == k)
            if rows.any():
                act[rows] = a.act(obs[rows], mask[rows], rng)
        g.step(act)
    return np.concatenate(obs_rows)[:n], np.concatenate(M)[:n]


# ---- (a) pickles are never run ----------------------------------------------------------
@pytest.mark.filterwarnings("ignore")
def test_the_payload_is_live_and_sb3s_loader_would_run_it(tmp_path):
    """The test zip is a real threat: Stable-Baselines3's loader (what ono_env used before)
    runs its payload."""
    from stable_baselines3.common.save_util import load_from_zip_file
    marker = tmp_path / "ran"
    path = malicious_zip(tmp_path / "evil.zip", marker, safe_member=True)
    try:
        load_from_zip_file(str(path), device="cpu", load_data=True)
    except Exception:  # noqa: BLE001 - whatever the loader raises, the marker shows it ran
        pass
    assert marker.exists()


def _every_loader_refuses(path: Path, capsys, tmp_path) -> None:
    from ono_env.apps import arena_cli
    from ono_env.apps import play as play_mod
    from ono_env.envs.gym_env import OnoEnv
    from ono_env.envs.opponents import OpponentPool, make_opponents
    from ono_env.envs.sb3 import OnoVecEnv
    from ono_env.train.export import export_model
    from ono_env.train.export import main as export_main

    s = str(path)
    for call in (lambda: load_agent(path), lambda: read_metadata(path),
                 lambda: make_agent(s, RULES),
                 lambda: play_mod.play([s], "basic", num_players=2, read=lambda p: "quit",
                                       out=io.StringIO()),
                 lambda: OpponentPool({s: 1.0, "random": 1.0}, RULES),
                 lambda: make_opponents(s, RULES),
                 lambda: OnoEnv("basic", num_players=2, opponents=s),
                 lambda: OnoVecEnv("basic", num_envs=2, opponents=s, num_players=2)):
        with pytest.raises(ValueError, match=r"ono_policy.safetensors") as exc:
            call()
        assert EXPORT_HINT in str(exc.value) and s in str(exc.value)
    with pytest.raises(ValueError, match=r"policy.pth"):
        export_model(path, tmp_path / "out.safetensors")
    assert not (tmp_path / "out.safetensors").exists()
    capsys.readouterr()
    for prog, main in (
        ("ono-arena", lambda: arena_cli.main([s, "random", "--rules", "basic", "--players", "2",
                                              "--games", "4", "--no-progress", "--no-rating"])),
        ("ono-play", lambda: play_mod.main([s, "--rules", "basic", "--players", "2"])),
        ("ono-export",
         lambda: export_main([s, str(tmp_path / "out.safetensors")])),
    ):
        status = main()
        err = capsys.readouterr().err
        assert status == 2 and err.startswith(f"{prog}: error: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("pth", ["pickle", "torch archive"])
def test_no_loader_runs_the_pickles_of_an_old_checkpoint(tmp_path, capsys, pth):
    marker = tmp_path / "ran"
    path = malicious_zip(tmp_path / "evil.zip", marker, safe_member=False, pth=pth)
    _every_loader_refuses(path, capsys, tmp_path)
    assert not marker.exists()


def test_a_checkpoint_with_a_safe_member_plays_and_its_pickles_never_run(tmp_path, capsys):
    from ono_env.apps import arena_cli
    from ono_env.apps import play as play_mod
    from ono_env.envs.gym_env import OnoEnv
    from ono_env.envs.opponents import OpponentPool, make_opponents
    from ono_env.envs.sb3 import OnoVecEnv
    from ono_env.train.export import export_model

    marker = tmp_path / "ran"
    path = malicious_zip(tmp_path / "evil.zip", marker, safe_member=True)
    s = str(path)
    agent = load_agent(path)
    assert isinstance(agent, LearnedAgent) and agent.rules == RULES
    assert read_metadata(path)["training_steps"] == 123
    assert isinstance(make_agent(s, RULES), LearnedAgent)
    assert arena_cli.main([s, "random", "--rules", "basic", "--players", "2", "--games", "8",
                           "--no-progress", "--no-rating"]) == 0
    assert "evil" in capsys.readouterr().out
    with pytest.raises(play_mod.Quit):
        play_mod.play([s], "basic", num_players=2, seat=1, seed=1, read=lambda p: "quit",
                      out=io.StringIO())
    assert len(OpponentPool({s: 1.0}, RULES).agents) == 1
    assert isinstance(make_opponents(s, RULES)[0], LearnedAgent)
    env = OnoEnv("basic", num_players=2, opponents=s)
    env.reset(seed=0)
    for _ in range(5):
        _, _, done, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
        if done:
            env.reset()
    venv = OnoVecEnv("basic", num_envs=4, opponents=s, num_players=2, seed=0)
    venv.reset()
    venv.step(np.array([int(np.flatnonzero(m)[0]) for m in venv.action_masks()]))
    out = export_model(path, tmp_path / "exported.safetensors")
    assert load_agent(out).meta == agent.meta
    assert not marker.exists()


def test_playing_a_model_needs_no_torch(tmp_path):
    """With torch and Stable-Baselines3 unimportable, the shipped models and a checkpoint's
    safe member still load and play."""
    import subprocess
    import sys
    path = malicious_zip(tmp_path / "ck.zip", tmp_path / "ran", safe_member=True)
    code = (
        "import sys\n"
        "for m in ('torch', 'stable_baselines3', 'sb3_contrib'): sys.modules[m] = None\n"
        "import numpy as np\n"
        "from ono_env.agents import make_agent\n"
        "from ono_env.rules import RuleSet\n"
        "for name, preset in (('ppo-basic-2p', 'basic'), ('ppo-classic-2p', 'classic'), "
        f"({str(path)!r}, 'basic')):\n"
        "    rules = RuleSet.preset(preset, num_players=2)\n"
        "    a = make_agent(name, rules)\n"
        "    x = np.zeros((3, a.obs_size), np.float32)\n"
        "    print(a.name, a.act(x, np.ones((3, 85), bool), np.random.default_rng(0)).shape)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:3] == ["ppo-basic-2p (3,)", "ppo-classic-2p (3,)", "ck (3,)"]
    assert not (tmp_path / "ran").exists()


# ---- (b) round trip from a live MaskablePPO ---------------------------------------------
def test_save_model_round_trip_and_live_or_frozen_agents(tmp_path):
    import torch as th
    from sb3_contrib import MaskablePPO

    from ono_env.envs.sb3 import OnoVecEnv
    from ono_env.train.export import export_model
    from ono_env.train.nets import ScaledObservation, agent_from_model, save_model

    th.set_num_threads(1)
    venv = OnoVecEnv(RULES, num_envs=4, opponents="random", seed=0)
    model = MaskablePPO(
        "MlpPolicy", venv, n_steps=16, batch_size=32, n_epochs=1, seed=0, device="cpu",
        policy_kwargs={"net_arch": {"pi": [16, 8], "vf": [16]}, "activation_fn": th.nn.ReLU,
                       "features_extractor_class": ScaledObservation,
                       "features_extractor_kwargs": {"scale": observation_scale(RULES).tolist()}})
    model.learn(64)
    path = save_model(model, tmp_path / "ck", RULES, model.num_timesteps, {"total_steps": 64})
    assert path.suffix == ".zip" and "ono_policy.safetensors" in zipfile.ZipFile(path).namelist()
    agent = load_agent(path)
    meta = agent.meta
    assert meta["format_version"] == 3 and meta["training_steps"] == model.num_timesteps
    assert meta["architecture"] == {"type": "mlp", "hidden_sizes": [16, 8], "activation": "relu",
                                    "value_hidden_sizes": [16]}
    assert meta["config"] == {"total_steps": 64} and meta["rules"] == RULES.to_dict()

    obs, legal = real_observations(RULES, 600, seed=3)
    pol = model.policy

    def torch_logits():
        with th.no_grad():
            x = th.as_tensor(obs)
            return pol.action_net(pol.mlp_extractor.forward_actor(
                pol.extract_features(x, pol.pi_features_extractor))).numpy()

    np.testing.assert_allclose(agent.logits(obs), torch_logits(), atol=1e-5)
    with th.no_grad():   # the value estimate is SB3's critic
        sb3_values = pol.predict_values(th.as_tensor(obs)).numpy()[:, 0]
    np.testing.assert_allclose(agent.explain(obs, legal)[1], sb3_values, atol=1e-5)
    sb3_actions, _ = model.predict(obs, action_masks=legal, deterministic=True)
    assert np.array_equal(agent.act(obs, legal, np.random.default_rng(0)), sb3_actions)
    # sampling draws legal actions from the generator passed in
    sampler = load_agent(path, deterministic=False)
    a1 = sampler.act(obs, legal, np.random.default_rng(5))
    assert legal[np.arange(len(obs)), a1].all()
    assert np.array_equal(a1, sampler.act(obs, legal, np.random.default_rng(5)))
    # the export of the checkpoint is the same model
    exp = load_agent(export_model(path, tmp_path / "ck.safetensors"))
    assert np.array_equal(exp.logits(obs), agent.logits(obs)) and exp.meta == meta
    # live agents follow training, snapshots stay frozen
    live = agent_from_model(model, RULES, "learner")
    snap = agent_from_model(model, RULES, "snapshot", copy=True)
    before = snap.logits(obs).copy()
    with th.no_grad():
        pol.action_net.bias.add_(th.linspace(-3, 3, 85))
        pol.mlp_extractor.policy_net[0].weight.mul_(1.5)
    np.testing.assert_allclose(live.logits(obs), torch_logits(), atol=1e-5)
    assert np.array_equal(snap.logits(obs), before)
    assert not np.allclose(live.logits(obs), before)
    # the checkpoint still resumes training (our own file: MaskablePPO.load is trusted here)
    assert MaskablePPO.load(path, device="cpu").num_timesteps == model.num_timesteps


def test_export_of_an_old_format_checkpoint(tmp_path):
    """A format-version-1 checkpoint (ono_meta.json + policy.pth as torch saved it) becomes
    a model with the same logits; the state dict is read with weights_only."""
    import torch as th

    from ono_env.train.export import export_model

    net = tiny_net(hidden=(8, 4))
    sd = {"features_extractor.scale": th.from_numpy(net.scale),
          "pi_features_extractor.scale": th.from_numpy(net.scale),
          "vf_features_extractor.scale": th.from_numpy(net.scale),
          "value_net.weight": th.full((1, 4), 0.5), "value_net.bias": th.full((1,), 0.25)}
    for i, (w, b) in enumerate(net.layers[:-1]):
        sd[f"mlp_extractor.policy_net.{2 * i}.weight"] = th.from_numpy(w)
        sd[f"mlp_extractor.policy_net.{2 * i}.bias"] = th.from_numpy(b)
        sd[f"mlp_extractor.value_net.{2 * i}.weight"] = th.zeros_like(th.from_numpy(w))
        sd[f"mlp_extractor.value_net.{2 * i}.bias"] = th.ones_like(th.from_numpy(b))
    sd["action_net.weight"], sd["action_net.bias"] = map(th.from_numpy, net.layers[-1])
    path = tmp_path / "old.zip"
    marker = tmp_path / "ran"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("data", json.dumps({"policy_class": {":serialized:": base64.b64encode(
            pickle.dumps(Payload(marker))).decode()}}))
        z.writestr("policy.pth", torch_archive(sd))
        z.writestr("ono_meta.json", json.dumps(old_meta()))
    with pytest.raises(ValueError, match=r"saved before ono_env's model format version 2.*"
                                         r"ono-export"):
        load_agent(path)
    out = export_model(path, tmp_path / "new.safetensors")
    agent = load_agent(out)
    assert agent.meta["architecture"] == {"type": "mlp", "hidden_sizes": [8, 4], "activation": "tanh",
                                          "value_hidden_sizes": [8, 4]}
    # the value network came along: tanh(1) in each of the 4 units, times 0.5, plus 0.25
    v = agent.explain(np.zeros((1, net.scale.shape[0]), np.float32), np.ones((1, 85), bool))[1]
    assert abs(float(v[0]) - (4 * 0.5 * np.tanh(1.0) + 0.25)) < 1e-5
    assert agent.meta["training_steps"] == 1000 and agent.meta["saved_at"] == "2026-11-22T10:00:00"
    obs, _ = real_observations(RULES, 200)
    np.testing.assert_array_equal(agent.logits(obs), net(obs))
    assert not marker.exists()
    # a NaN in ono_meta.json is named (before: "Out of range float values are not JSON
    # compliant", from writing the new file)
    nan = tmp_path / "nan.zip"
    with zipfile.ZipFile(nan, "w") as z:
        z.writestr("policy.pth", torch_archive(sd))
        z.writestr("ono_meta.json", json.dumps({**old_meta(), "config": {"x": float("nan")}}))
    with pytest.raises(ValueError, match=r"ono_meta.json is not JSON \(NaN, which JSON has not"):
        export_model(nan, tmp_path / "nan.safetensors")
    assert not (tmp_path / "nan.safetensors").exists()


def test_export_keeps_a_file_that_appeared_at_its_destination_while_it_read(tmp_path,
                                                                           monkeypatch):
    # before: checked at the start, then renamed over whatever was there by the end
    import ono_env.train.export as X

    dest = tmp_path / "out.safetensors"
    real = X.read_model

    def another_writer_meanwhile(src):
        dest.write_bytes(b"another run's model")
        return real(src)
    monkeypatch.setattr(X, "read_model", another_writer_meanwhile)
    with pytest.raises(ValueError, match=r"a file appeared there during the run .*; it is "
                                         r"kept, never replaced"):
        X.export_model(Path(__file__).resolve().parents[1] / "agents" / "models" /
                       "ppo-basic-2p.safetensors", dest)
    assert dest.read_bytes() == b"another run's model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.safetensors"]   # no temporary


# ---- (c) damaged files ------------------------------------------------------------------
def _with_meta(change):
    def build(p: Path) -> bytes:
        net = tiny_net()
        meta = tiny_meta(net)
        change(meta)
        return st_save(net.tensors(), metadata={"ono_env": json.dumps(meta)})
    return build


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _with_tensors(change):
    def build(p: Path) -> bytes:
        net = tiny_net()
        t = net.tensors()
        change(t)
        return st_save(t, metadata={"ono_env": json.dumps(tiny_meta(net))})
    return build


def _header(text: str) -> bytes:
    raw = text.encode()
    return len(raw).to_bytes(8, "little") + raw


def _set(key, value):
    return lambda m: m.__setitem__(key, value)


def _meta_key_twice(p: Path) -> bytes:
    """A model whose metadata gives ``saved_at`` twice (json would keep the last)."""
    net = tiny_net()
    text = json.dumps(tiny_meta(net))
    return st_save(net.tensors(), metadata={"ono_env": text[:-1] + ', "saved_at": "x"}'})


def _header_key_twice(p: Path) -> bytes:
    """A model whose safetensors header lists its last tensor twice."""
    data = tiny_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    last = next(k for k in reversed(header) if k != "__metadata__")
    text = json.dumps(header)[:-1] + f', "{last}": ' + json.dumps(header[last]) + "}"
    text += " " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text.encode() + data[8 + n:]


def _zip(members):
    def build(p: Path) -> bytes:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for name, data in members().items():
                z.writestr(name, data)
        return buf.getvalue()
    return build


def _member_twice(p: Path) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z, pytest.warns(UserWarning, match="Duplicate name"):
        z.writestr("ono_policy.safetensors", tiny_bytes(RuleSet.preset("classic", num_players=2)))
        z.writestr("ono_policy.safetensors", tiny_bytes())
    return buf.getvalue()


def _bad_crc() -> bytes:
    data = _zip(lambda: {"ono_policy.safetensors": tiny_bytes()})(None)
    i = data.index(b'{"__metadata__"') + 40         # a stored member: flip one byte of it
    return data[:i] + bytes([data[i] ^ 1]) + data[i + 1:]


DAMAGED = {
    # name: (file name, bytes builder or None for "no such file" / "dir" for a folder / "loop"
    # for two symbolic links that lead to each other, expected words)
    "missing file": ("m.safetensors", None, "no such file"),
    "a folder": ("dir.safetensors", "dir", "it is a folder"),
    # before: "no such file" (ono-export named the loop)
    "a symbolic link in a loop": ("loop.safetensors", "loop", "a symbolic link that leads to no "
                                                              "file \\(a loop, or its target"),
    "not safetensors": ("m.safetensors", lambda p: b"hello, world", "not a safetensors model file"),
    "empty": ("m.safetensors", lambda p: b"", "not a safetensors model file"),
    "truncated data": ("m.safetensors", lambda p: tiny_bytes()[:-100], "truncated"),
    "truncated header": ("m.safetensors", lambda p: tiny_bytes()[:60], "truncated"),
    "header not JSON": ("m.safetensors", lambda p: _header("{not json") + b"\0" * 8, "header is not JSON"),
    "header a list": ("m.safetensors", lambda p: _header("[1, 2]"), "not a JSON object"),
    "no metadata": ("m.safetensors", lambda p: st_save(tiny_net().tensors()), "no 'ono_env' entry"),
    "other metadata": ("m.safetensors", lambda p: st_save(tiny_net().tensors(), metadata={"x": "y"}),
                       "no 'ono_env' entry"),
    "metadata not JSON": ("m.safetensors", lambda p: st_save(tiny_net().tensors(),
                                                             metadata={"ono_env": "{oops"}), "is not JSON"),
    # Python's json reads NaN and Infinity, JSON has neither: such a file loaded, then could
    # not be exported
    "metadata NaN": ("m.safetensors", _with_meta(lambda m: m["config"].update(x=float("nan"))),
                     r"metadata is not JSON \(NaN, which JSON has not; allowed: finite numbers\)"),
    "metadata Infinity": ("m.safetensors", _with_meta(lambda m: m.update(training_steps=float("-inf"))),
                          r"metadata is not JSON \(-Infinity, which JSON has not; allowed: finite numbers\)"),
    "metadata a list": ("m.safetensors", lambda p: st_save(tiny_net().tensors(),
                                                           metadata={"ono_env": "[]"}), "not an object"),
    "wrong format": ("m.safetensors", _with_meta(_set("format", "other")), "not an ono_env model"),
    "format version 1": ("m.safetensors", _with_meta(_set("format_version", 1)),
                         r"format version 1; .* \(version 1 was a checkpoint zip of ono_meta.json "
                         r"and policy.pth, which ono-export converts; no release wrote it in a "
                         r"model's metadata\)$"),
    "format version 5": ("m.safetensors", _with_meta(_set("format_version", 5)),
                         "format version 5; this version of ono_env reads versions 2, 3 and 4"),
    "version 3 without a value network": ("m.safetensors", _with_meta(_set("format_version", 3)),
                                          "value_hidden_sizes exactly in format versions 3 and 4"),
    "version 2 with a value network": ("m.safetensors", _with_meta(
        lambda m: m["architecture"].update(value_hidden_sizes=[4])),
        "value_hidden_sizes exactly in format versions 3 and 4"),
    "no architecture": ("m.safetensors", _with_meta(lambda m: m.pop("architecture")), "no 'architecture'"),
    "no rules": ("m.safetensors", _with_meta(lambda m: m.pop("rules")), "no 'rules'"),
    "no action names": ("m.safetensors", _with_meta(lambda m: m.pop("action_names")), "no 'action_names'"),
    "no saved_at": ("m.safetensors", _with_meta(lambda m: m.pop("saved_at")), "no 'saved_at'"),
    "hidden sizes as text": ("m.safetensors", _with_meta(lambda m: m["architecture"].update(hidden_sizes="8")),
                             "'architecture'"),
    "unknown activation": ("m.safetensors", _with_meta(lambda m: m["architecture"].update(activation="gelu")),
                           "'architecture'"),
    "encoder out of range": ("m.safetensors", _with_meta(
        lambda m: m["architecture"].update(opponent_encoder=10**9)),
        "architecture.opponent_encoder is 1000000000; expected a whole number from 1 to 4096"),
    "players as text": ("m.safetensors", _with_meta(_set("num_players", "2")), "'num_players'"),
    # the audit's: blamed 'num_players' (2) for the text "2" in the rules
    "rules' players as text": ("m.safetensors", _with_meta(lambda m: m["rules"].update(num_players="2")),
                               "metadata 'rules' is .*num_players \\(a whole number\\)"),
    # a million layers made a 41 MB message and took 565 MB; a layer of 10**12 would be built
    # (a hundred thousand: a million no longer fits in a model's header of 1 MiB)
    "a hundred thousand hidden layers": ("m.safetensors", _with_meta(
        lambda m: m["architecture"].update(hidden_sizes=[1] * 10**5)),
        "at most 64 whole numbers from 1 to 65,536"),
    "a hidden layer too wide": ("m.safetensors", _with_meta(lambda m: m["architecture"].update(
        hidden_sizes=[10**12])), "at most 64 whole numbers from 1 to 65,536"),
    "65 hidden layers": ("m.safetensors", _with_meta(lambda m: m["architecture"].update(
        hidden_sizes=[4] * 65)), "at most 64 whole numbers"),
    "64 hidden layers": ("m.safetensors", _with_meta(lambda m: m["architecture"].update(
        hidden_sizes=[4] * 64)),
        r"tensor 'hidden.1.weight' is missing \(the metadata describes obs_scale, hidden.0.weight, "
        r"hidden.0.bias, .*, hidden.3.weight and 123 more\)$"),
    "negative steps": ("m.safetensors", _with_meta(_set("training_steps", -1)), "'training_steps'"),
    "steps a bool": ("m.safetensors", _with_meta(_set("training_steps", True)), "'training_steps'"),
    # before: any size, printed whole by ono-export (5,692 characters for 4,200 digits)
    "steps past 2**63 - 1": ("m.safetensors", _with_meta(_set("training_steps", 2**63)),
                             r"'training_steps'.*a whole number from 0 to 9,223,372,036,854,775,807"),
    "action names numbers": ("m.safetensors", _with_meta(_set("action_names", [1, 2])), "'action_names'"),
    "format version true": ("m.safetensors", _with_meta(_set("format_version", True)),
                            r"format version True; this version of ono_env reads versions 2, 3 "
                            r"and 4$"),
    "config a list": ("m.safetensors", _with_meta(_set("config", [])), "'config'"),
    # before: a key given twice was kept silently (the last)
    "metadata key of no version": ("m.safetensors", _with_meta(_set("lable", "x")),
                                   "the metadata has the key 'lable', which no version of "
                                   "ono_env writes; allowed: format, format_version, "),
    "metadata key twice": ("m.safetensors", _meta_key_twice,
                           "metadata is not JSON \\(the key 'saved_at' is given twice\\)"),
    "header key twice": ("m.safetensors", _header_key_twice,
                         "its header is not JSON: the key '.*' is given twice\\)"),
    "rules a string": ("m.safetensors", _with_meta(_set("rules", "basic")), "'rules'"),
    # before: filled in from the preset silently (and a 'preset' picked another rule set)
    "rules left out": ("m.safetensors", _with_meta(_set("rules", {"name": "basic", "num_players": 2})),
                       "its rules cannot be read by this version of ono_env: options left out: "
                       "hand_size, wild_cards, "),
    "rules with a preset": ("m.safetensors", _with_meta(lambda m: m["rules"].update(preset="classic")),
                            "'preset' is not an option; allowed: every option written out"),
    # before: TypeError: unhashable type: 'list'
    "activation a list": ("m.safetensors", _with_meta(lambda m: m["architecture"].update(
        activation=["tanh"])), "'architecture'"),
    # before: read and exported, then a RecursionError as it was loaded
    "metadata nested 900 deep": ("m.safetensors", _with_meta(lambda m: m["config"].update(
        deep=_nested(900))), "its metadata nests lists or objects 902 deep; allowed: at most 64"),
    # before: Errno 36 from pathlib, naming no model file
    "a name too long": ("a" * 300 + ".safetensors", None, "cannot read model file .*: File name "
                        "too long"),
    # before: the last member read as if the first were not there, and any text as the date
    "zip member twice": ("m.zip", _member_twice, r"damaged zip \(it holds ono_policy.safetensors "
                                                 r"twice\)"),
    "saved_at empty": ("m.safetensors", _with_meta(_set("saved_at", "")),
                       r"'saved_at'.*an ISO date as text"),
    # read by Python 3.11's fromisoformat and not by 3.10's: refused under both
    "saved_at with a Z": ("m.safetensors", _with_meta(_set("saved_at", "2026-11-22T10:00:00Z")),
                          r"'saved_at'.*an ISO date as text"),
    "saved_at without dashes": ("m.safetensors", _with_meta(_set("saved_at", "20261122")),
                                r"'saved_at'.*an ISO date as text"),
    "unreadable rules": ("m.safetensors", _with_meta(lambda m: m["rules"].update(hand_size="seven")),
                         "its rules cannot be read"),
    "observation size off": ("m.safetensors", _with_meta(_set("observation_size", 240)),
                             "tensor 'obs_scale' has shape \\[241\\]; the metadata gives \\[240\\]"),
    "version 2 at another length": ("m.safetensors", _with_meta(_set("observation_version", 2)),
                                    "'observation_size' is 241; expected 1,415 \\(version-2 "
                                    "observations have one length\\)"),
    "hidden size off": ("m.safetensors", _with_meta(lambda m: m["architecture"].update(hidden_sizes=[9])),
                        "'hidden.0.weight' has shape"),
    "missing tensor": ("m.safetensors", _with_tensors(lambda t: t.pop("logits.bias")),
                       "tensor 'logits.bias' is missing"),
    "extra tensor": ("m.safetensors", _with_tensors(lambda t: t.update(extra=np.zeros(2, np.float32))),
                     "unexpected tensor 'extra'"),
    "float64 tensor": ("m.safetensors", _with_tensors(
        lambda t: t.update({"logits.bias": t["logits.bias"].astype(np.float64)})), "float64; expected float32"),
    "NaN weight": ("m.safetensors", _with_tensors(lambda t: t["hidden.0.weight"].__setitem__((0, 0), np.nan)),
                   "NaN or infinite"),
    "zero scale": ("m.safetensors", _with_tensors(lambda t: t["obs_scale"].__setitem__(0, 0.0)),
                   "'obs_scale' has entries <= 0"),
    "zip that is no zip": ("m.zip", lambda p: b"hello", "not a zip file"),
    # before: "export a checkpoint with ono-export", which refuses such a zip
    "zip without member": ("m.zip", _zip(lambda: {"data": "{}"}),
                           "is not an ono_env model.*no ono_policy.*allowed: a model file, or a "
                           "checkpoint zip that ono-train saved"),
    "zip of an old checkpoint": ("m.zip", _zip(lambda: {"ono_meta.json": json.dumps(old_meta()),
                                                        "policy.pth": b"x"}),
                                 "ono-export .*m.zip .*m.safetensors"),
    "zip with a damaged member": ("m.zip", _zip(lambda: {"ono_policy.safetensors": tiny_bytes()[:-50]}),
                                  "member ono_policy.safetensors.*truncated"),
    "zip with a corrupt member": ("m.zip", lambda p: _bad_crc(), "damaged zip"),
    "truncated zip": ("m.zip", lambda p: _zip(lambda: {"ono_policy.safetensors": tiny_bytes()})(p)[:-30],
                      "damaged zip"),
    "safetensors name, zip inside": ("m.safetensors", _zip(lambda: {"data": "{}"}), "no ono_policy"),
    # before: read whole; zipfile unpacks a bzip2 or LZMA block in one piece, however large
    "zip member in bzip2": ("m.zip", lambda p: _zip_with(zipfile.ZIP_BZIP2, tiny_bytes()),
                            "member ono_policy.safetensors is compressed with method 12 "
                            r"\(allowed: 0 \(stored\), 8 \(deflate\)\)"),
    "zip member in LZMA": ("m.zip", lambda p: _zip_with(zipfile.ZIP_LZMA, tiny_bytes()),
                           "compressed with method 14"),
    # before: "damaged zip member (RuntimeError: File ... is encrypted, password required ...)"
    "encrypted zip member": ("m.zip", lambda p: _encrypted(_zip_with(zipfile.ZIP_STORED,
                                                                        tiny_bytes())),
                             "member ono_policy.safetensors is encrypted"),
    # before: any header up to safetensors' 100 MB was parsed (a 96 KB zip took 2.6 GB)
    "a header over 1 MiB": ("m.safetensors", lambda p: st_save(tiny_net().tensors(), metadata={
        "ono_env": json.dumps(tiny_meta(tiny_net())), "pad": "x" * (1 << 20)}),
        r"its safetensors header declares 1,0\d\d,\d{3} bytes; allowed: at most 1,048,576"),
    # before: read as an infinity; the model loaded, and ono-export failed with json's words
    "a number beyond a float's range": ("m.safetensors", lambda p: st_save(
        tiny_net().tensors(), metadata={"ono_env": json.dumps(tiny_meta(tiny_net())).replace(
            '"training_steps": 123', '"training_steps": 1e400')}),
        r"metadata is not JSON \(1e400, beyond a float's range; allowed: finite numbers\)"),
    # a byte order mark, which no writer of a model puts there (read past for a moment)
    "metadata after a byte order mark": ("m.safetensors", lambda p: st_save(
        tiny_net().tensors(), metadata={"ono_env": "\ufeff" + json.dumps(tiny_meta(tiny_net()))}),
        r"metadata is not JSON \(Unexpected UTF-8 BOM"),
}


def _encrypted(data: bytes) -> bytes:
    """The zip with its member's "encrypted" flag set (general purpose bit 0), in the local
    and the central header (the data stays plain: zipfile would ask for a password)."""
    out = bytearray(data)
    for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        i = data.index(sig)
        out[i + at] |= 1
    return bytes(out)


def _zip_with(method: int, data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        z.writestr("ono_policy.safetensors", data)
    return buf.getvalue()


def _deflate_bomb(unpacked_mib: int, declared: int) -> bytes:
    """A zip whose one member declares ``declared`` bytes and unpacks to ``unpacked_mib`` MiB of
    zeros (about 1 KiB of deflate a MiB)."""
    import struct
    import zlib
    z = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(1 << 20)
    data = b"".join([z.compress(zeros) for _ in range(unpacked_mib)] + [z.flush()])
    name = b"ono_policy.safetensors"
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, 0, 0, 0, len(data), declared,
                        len(name), 0) + name
    central = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, 0, len(data),
                          declared, len(name), 0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central),
                      len(local) + len(data), 0)
    return local + data + central + end


def test_a_zip_member_that_unpacks_past_its_declared_size_is_refused_in_bounded_memory(tmp_path):
    """Before: ``ZipFile.read`` unpacked a deflated member in one call of up to 2 GiB, and the
    declared size was checked only after: a 3 MB zip declaring 1,000 bytes took 2.2 GB."""
    import tracemalloc

    from ono_env.train.export import export_model
    path = tmp_path / "bomb.zip"
    path.write_bytes(_deflate_bomb(64, 1000))
    tracemalloc.start()
    try:
        for call in (lambda: load_agent(path),
                     lambda: export_model(path, tmp_path / "out.safetensors")):
            with pytest.raises(ValueError, match=r"bomb\.zip.*damaged zip member "
                                                 r"ono_policy\.safetensors"):
                call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"{peak:,} bytes at the peak"
    assert not (tmp_path / "out.safetensors").exists()


def test_a_zip_member_with_no_model_header_is_refused_before_it_is_unpacked(tmp_path):
    """The policy member's first bytes are checked before the rest is unpacked: before, a
    300 KB zip of 600 MB of zeros was unpacked whole (1.9 GB at ``ono-bench``, which loads the
    agent once a table) to find no safetensors header."""

    path = tmp_path / "zeros.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("ono_policy.safetensors", bytes(64 << 20))
    _refused_in_bounded_memory(path, r"zeros\.zip' \(member ono_policy\.safetensors\): not a "
                                     r"safetensors model file \(no safetensors header\)$")


def _refused_in_bounded_memory(path: Path, match: str) -> None:
    """``load_agent(path)`` refused with ``match``, under 16 MiB allocated at the peak."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=match):
            load_agent(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"{peak:,} bytes at the peak"


def test_a_zip_members_metadata_and_extent_are_checked_before_it_is_unpacked(tmp_path):
    """A member whose header is whole in its first chunk has its metadata and its tensors'
    extent checked before the rest is unpacked (before: a zip of a model's header, or of one
    with no ono_env metadata, followed by 64 MB of zeros was unpacked whole, 1.7 GB held for
    800 MB, to refuse what its first kilobyte said)."""
    import struct

    from ono_env.agents.learned import shipped_models

    data = shipped_models()["ppo-basic-2p"].read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    empty = json.dumps({"__metadata__": {"ono_env": "{}"}, **{
        k: v for k, v in header.items() if k != "__metadata__"}}).encode()
    for name, head, said in (
            ("extent", data[:8 + n], rf"its tensors take {len(data) - 8 - n:,} bytes, the data "
                                     rf"after the header holds {len(data) - 8 - n + (64 << 20):,}"),
            ("metadata", struct.pack("<Q", len(empty)) + empty, "not an ono_env model: metadata "
                                                               "format None")):
        path = tmp_path / f"{name}.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("ono_policy.safetensors", head + data[8 + n:] + bytes(64 << 20))
        _refused_in_bounded_memory(path, rf"{name}\.zip' \(member ono_policy\.safetensors\): .*{said}")


def test_a_zip_of_many_members_is_refused_before_they_are_read(tmp_path, monkeypatch):
    """Before: ``zipfile`` parsed every member's entry as it opened the zip: 1.2M empty ones
    took 10 s and 650 MB before the missing policy member was named."""
    import ono_env.agents.learned as L
    from ono_env.agents.learned import shipped_models
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for k in range(L.MAX_ZIP_MEMBERS + 1):
            zf.writestr(f"m{k}", b"")
    # a count written small does not hide them (before: zipfile parses the directory by its
    # size, whatever the count says: 1.2M entries under a count of 7, in 15 s and 790 MB)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k in range(2_000):
            zf.writestr(f"{k:0500d}", b"")
    data = bytearray(buf.getvalue())
    at = data.rfind(b"PK\x05\x06")
    data[at + 8:at + 12] = (7).to_bytes(2, "little") * 2
    (tmp_path / "patched.zip").write_bytes(bytes(data))
    opened = []
    monkeypatch.setattr(zipfile, "ZipFile", lambda *a, **k: opened.append(a) or pytest.fail("read"))
    with pytest.raises(ValueError, match=rf"many\.zip': a zip of {L.MAX_ZIP_MEMBERS + 1:,} "
                                         rf"members; allowed: at most {L.MAX_ZIP_MEMBERS:,}"):
        load_agent(path)
    with pytest.raises(ValueError, match=r"patched\.zip': a zip whose directory takes more than "
                                         r"1,024,000 bytes; allowed: at most 1,000 members \(a "
                                         r"model zip holds a few\), 1,024 bytes of directory each$"):
        load_agent(tmp_path / "patched.zip")
    monkeypatch.undo()
    ok = tmp_path / "ok.zip"   # a model zip of a few members loads as before
    with zipfile.ZipFile(ok, "w") as zf:
        zf.writestr("ono_policy.safetensors", shipped_models()["ppo-basic-2p"].read_bytes())
        zf.writestr("data", b"{}")
    assert L.zip_members(ok) == 2 and load_agent(ok).name


def test_a_zip64_count_is_read_past_a_comment_of_64_kib():
    """zipfile reads a zip64 end record's count and size wherever its locator sits before the
    end record; before, a comment of 64 KiB pushed them out of the bytes read, and a torch
    archive of 1,007 records whose end record said 7 was counted as 7."""
    import torch

    from ono_env.agents.learned import ZIP_TAIL_BYTES, zip_members_of_tail
    buf = io.BytesIO()
    torch.save({f"t{i}": torch.zeros(1) for i in range(1001)}, buf)
    data = bytearray(buf.getvalue())
    at = data.rfind(b"PK\x05\x06")
    data[at + 8:at + 16] = (7).to_bytes(2, "little") * 2 + (400).to_bytes(4, "little")
    data[at + 20:at + 22] = (65_500).to_bytes(2, "little")
    data += b"x" * 65_500
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        assert len(zf.infolist()) == 1007
    assert zip_members_of_tail(bytes(data[-ZIP_TAIL_BYTES:])) == 1007
    # a locator whose record is not where zipfile looks: past any bound
    data[at - 76:at - 72] = b"XXXX"
    assert zip_members_of_tail(bytes(data[-ZIP_TAIL_BYTES:])) > 1000


def test_a_label_with_spaces_at_its_ends_loads_and_plays_without_them(tmp_path):
    # written so before labels were checked at their ends; the arena printed "x " beside x
    from ono_env.agents.learned import model_label
    (tmp_path / "model.safetensors").write_bytes(_with_meta(_set("label", "x "))(tmp_path))
    assert read_metadata(tmp_path / "model.safetensors")["label"] == "x "
    assert model_label(tmp_path / "model.safetensors") == "x"


def test_a_runs_label_that_is_an_agents_name_is_told_apart(tmp_path):
    """A run labelled ``greedy`` (or ``pimc:8``) plays under its folder and file name, as a
    file named so plays under its whole name (before: greedy#1 beside greedy#2)."""
    from ono_env.agents.learned import model_label
    from ono_env.arena import _labels

    run = tmp_path / "r1"
    run.mkdir()
    for label in ("greedy", "pimc:8", "ppo-any"):
        (run / "model.safetensors").write_bytes(_with_meta(_set("label", label))(tmp_path))
        assert model_label(run / "model.safetensors") == "r1/model.safetensors"
    (run / "model.safetensors").write_bytes(_with_meta(_set("label", "mine"))(tmp_path))
    assert _labels([run / "model.safetensors", "greedy"]) == ["mine", "greedy"]
    # a copy of a shipped policy is that agent; the check reads the file as a model is read
    # (before: whole, with no check: a FIFO named as a shipped policy hung it)
    import shutil

    from ono_env.agents.learned import shipped_models
    (tmp_path / "copy").mkdir()
    shutil.copy(shipped_models()["ppo-any"], tmp_path / "copy" / "ppo-any.safetensors")
    assert model_label(tmp_path / "copy" / "ppo-any.safetensors") == "ppo-any"
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "ppo-any.safetensors")
    assert model_label(tmp_path / "fifo" / "ppo-any.safetensors") == "ppo-any.safetensors"


def test_a_label_shows_a_character_that_is_not_printable_as_a_question_mark(tmp_path):
    """Before: a newline or a tab in a model file's name, or in an agent's own name, was
    printed as it is and split the arena's table and CSV row over two lines."""
    import shutil

    from ono_env.agents.learned import model_label, shipped_models
    from ono_env.arena import run_arena

    path = tmp_path / "nl\nx\ty.safetensors"
    shutil.copy(shipped_models()["ppo-basic-2p"], path)
    assert model_label(path) == "nl?x?y"

    class Own:
        name = "mine\tnow"

        def act(self, obs, mask, rng):
            return mask.argmax(axis=1)
    res = run_arena([str(path), Own()], RuleSet.preset("basic", num_players=2), num_games=2,
                    rating=False)
    assert [r["agent"] for r in res.agent_rows()] == ["nl?x?y", "mine?now"]
    table = res.format_table()
    assert "\t" not in table and all("nl?x?y" not in line or "%" in line
                                      for line in table.splitlines())


@pytest.mark.parametrize("case", list(DAMAGED))
def test_every_damaged_file_is_one_value_error_naming_it(tmp_path, case):
    from ono_env.train.export import export_model
    name, build, words = DAMAGED[case]
    path = tmp_path / name
    if build == "dir":
        path.mkdir()
    elif build == "loop":
        path.symlink_to(tmp_path / "back.safetensors")
        (tmp_path / "back.safetensors").symlink_to(path)
    elif build is not None:
        path.write_bytes(build(path))
    loaders = [lambda: load_agent(path), lambda: read_metadata(path),
               lambda: make_agent(str(path), RULES)]
    exporter = lambda: export_model(path, tmp_path / "out.safetensors")   # noqa: E731
    for call in loaders + [exporter]:
        with pytest.raises(ValueError) as exc:
            call()
        msg = str(exc.value)
        assert type(exc.value) is ValueError, type(exc.value)
        assert str(path) in msg and "\n" not in msg, msg
        if call is not exporter:   # (the exporter tries to convert an old checkpoint)
            assert re.search(words, msg), msg
    assert not (tmp_path / "out.safetensors").exists()


class _RunsCode:
    """Pickles as a call of os.system (never made: the loader refuses it)."""

    def __reduce__(self):
        import os
        return (os.system, ("exit 3",))


def _old_zip(meta="valid", pth=None):
    def build(p: Path) -> bytes:
        import torch as th
        members = {"ono_meta.json": json.dumps(old_meta()) if meta == "valid" else meta}
        if pth is not None:
            members["policy.pth"] = pth(th) if callable(pth) else pth
        return _zip(lambda: members)(p)
    return build


def _members_twice(name):
    def build(p: Path) -> bytes:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z, pytest.warns(UserWarning, match="Duplicate name"):
            z.writestr(name, json.dumps(old_meta()))
            z.writestr(name, json.dumps(old_meta()))
        return buf.getvalue()
    return build


def _deflated(archive: bytes) -> bytes:
    """A torch archive with every record deflated (torch writes them stored)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as src, \
            zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            out.writestr(info.filename, src.read(info))
    return buf.getvalue()


def _repickled(archive: bytes, data: bytes) -> bytes:
    """A torch archive whose data.pkl is ``data``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as src, zipfile.ZipFile(buf, "w") as out:
        for info in src.infolist():
            out.writestr(info.filename, data if info.filename.endswith("data.pkl")
                         else src.read(info))
    return buf.getvalue()


def _old_sd(th, drop=(), size=241, layer="0", extra=None):
    net = tiny_net()
    sd = {"pi_features_extractor.scale": th.ones(size),
          f"mlp_extractor.policy_net.{layer}.weight": th.from_numpy(net.layers[0][0][:, :size].copy()),
          f"mlp_extractor.policy_net.{layer}.bias": th.from_numpy(net.layers[0][1]),
          "action_net.weight": th.from_numpy(net.layers[1][0]),
          "action_net.bias": th.from_numpy(net.layers[1][1]), **(extra or {})}
    return torch_archive({k: v for k, v in sd.items() if k not in drop})


OLD_DAMAGED = {
    "meta not JSON": (_old_zip("{oops", pth=b"PK"), "ono_meta.json is not JSON"),
    "meta key twice": (_old_zip('{"format": "x", "format": "ono_env-policy"}', pth=b"PK"),
                       "ono_meta.json is not JSON \\(the key 'format' is given twice\\)"),
    "meta of another version": (_old_zip(json.dumps({"format": "ono_env-policy", "format_version": 3}),
                                         pth=b"PK"), "not ono_env model format version 1"),
    "meta of another format": (_old_zip(json.dumps({"format": "x", "format_version": 1}), pth=b"PK"),
                               r"\(format 'x', format version 1; allowed: format "
                               r"'ono_env-policy', format version 1\)"),
    "a pickle that would run code": (_old_zip(pth=lambda th: torch_archive({"a": _RunsCode()})),
                                     "unsupported GLOBAL posix.system"),
    # before: "it has neither ono_policy.safetensors nor ono_meta.json and policy.pth"
    "no policy.pth": (_old_zip(), "damaged checkpoint saved before model format version 2: it "
                                  "has ono_meta.json but no policy.pth$"),
    # before: the reason printed empty, "(torch.load with weights_only=True: )"
    "a policy.pth of two bytes": (_old_zip(pth=b"PK.."),
                                  r"policy.pth is a damaged zip archive \([^)]+\)$"),
    # (before: left to torch.load, which reads some zips that zipfile refuses: one whose
    # directory entry was damaged unpacked its compressed record, 400 MB)
    "damaged torch archive": (_old_zip(pth=lambda th: _old_sd(th)[:-40]),
                              r"policy.pth is a damaged zip archive \(.+\)$"),
    # before: torch's warning of the pickle protocol, with its source path, above the error
    "a pickle of another protocol": (_old_zip(pth=lambda th: _repickled(
        torch_archive({"a": th.zeros(1)}), pickle.dumps(_RunsCode(), protocol=4))),
        "cannot be read as weights only"),
    # before: a 1 GB model from a 200 KB checkpoint (3.5 GB of memory), written and refused
    "a tensor that repeats one stored value": (_old_zip(pth=lambda th: _old_sd(th, extra={
        "mlp_extractor.policy_net.0.weight": th.zeros(1).expand(8, 241)})),
        r"policy.pth's tensor 'mlp_extractor.policy_net.0.weight' holds more values than its "
        r"record stores"),
    "not a state dict": (_old_zip(pth=lambda th: torch_archive({"a": 1})), "not a state dict of tensors"),
    "no scale": (_old_zip(pth=lambda th: _old_sd(th, drop=["pi_features_extractor.scale"])),
                 "no observation scale"),
    "no head": (_old_zip(pth=lambda th: _old_sd(th, drop=["action_net.bias"])), "'logits.bias'"),
    # before: the value network was dropped without a word, and the model written as version 2
    "a value head without its bias": (_old_zip(pth=lambda th: _old_sd(
        th, extra={"value_net.weight": th.zeros(1, 8)})), "lacks the weights of 'value.bias'"),
    "wrong input size": (_old_zip(pth=lambda th: _old_sd(th, size=240)),
                         "'obs_scale' has shape \\[240\\]; the metadata gives \\[241\\]"),
    # before: converted with the activation tanh, as if no config were stored
    "a config.policy that is a list": (_old_zip(json.dumps(old_meta() | {"config": {"policy": [1]}}),
                                                pth=lambda th: _old_sd(th)),
                                       r"ono_meta.json config.policy = \[1\] \(list\); allowed: "
                                       r"a mapping \(the training config\)"),
    "a config that is text": (_old_zip(json.dumps(old_meta() | {"config": "x"}),
                                       pth=lambda th: _old_sd(th)),
                              r"ono_meta.json config = 'x' \(str\); allowed: a mapping"),
    # before: 1 GiB read and parsed (a 146 KB zip took 3.9 GB)
    "meta over 1 MiB": (_old_zip("[" + "{}," * 400_000 + "{}]", pth=b"PK"),
                        r"its ono_meta.json declares 1,200,00\d bytes; allowed: at most "
                        r"1,048,576"),
    # before: the last one read, silently
    "meta given twice": (_members_twice("ono_meta.json"), "it holds ono_meta.json twice"),
    "a format version true": (_old_zip(json.dumps({"format": "ono_env-policy",
                                                   "format_version": True}), pth=b"PK"),
                              "format version True; allowed"),
    "a number beyond a float's range": (_old_zip(json.dumps(old_meta()).replace(
        '"training_steps": 1000', '"training_steps": -1e999'), pth=lambda th: _old_sd(th)),
        r"ono_meta.json is not JSON \(-1e999, beyond a float's range; allowed: finite numbers\)"),
    # before: torch.load unpacked it (a 403 KB checkpoint made a 1.6 GB tensor)
    "a compressed record in policy.pth": (_old_zip(pth=lambda th: _deflated(_old_sd(th))),
                                          r"policy.pth's record '[^']+' is compressed; allowed: "
                                          r"stored records"),
    # before: the policy's scale read, the other left without a word
    "two scales that differ": (_old_zip(pth=lambda th: _old_sd(th, extra={
        "features_extractor.scale": th.full((241,), 2.0)})), "two observation scales that differ"),
    # before: "'hidden.0.weight' has shape [241, 8]; the metadata gives [241, 241]", shapes
    # the metadata had read from that weight itself
    "a transposed weight": (_old_zip(pth=lambda th: _old_sd(th, extra={
        "mlp_extractor.policy_net.0.weight": th.from_numpy(tiny_net().layers[0][0].T.copy())})),
        r"policy.pth's 'mlp_extractor.policy_net.0.weight' has shape \[241, 8\]; allowed: "
        r"\[units, 241\] \(a layer reading the 241 entries before it\)"),
    # before: read as two layers, and refused for "the weights of 'hidden.1.bias'"
    "a layer given twice": (_old_zip(pth=lambda th: _old_sd(th, extra={
        "mlp_extractor.policy_net.00.weight": th.zeros(8, 241)})),
        r"policy.pth gives layer 0 twice \('mlp_extractor.policy_net.0.weight' and "
        r"'mlp_extractor.policy_net.00.weight'\)"),
}


def test_an_old_checkpoints_refusal_is_its_one_line_with_no_warning_of_torch(tmp_path):
    """Before: torch's warning of the pickle protocol came first, with its source path."""
    import warnings

    from ono_env.train.export import export_model
    path = tmp_path / "old.zip"
    path.write_bytes(OLD_DAMAGED["a pickle of another protocol"][0](path))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="cannot be read as weights only"):
            export_model(path, tmp_path / "out.safetensors")
    assert not seen, [str(w.message) for w in seen]


@pytest.mark.parametrize("case", list(OLD_DAMAGED))
def test_export_refuses_damaged_old_checkpoints(tmp_path, case, capsys):
    from ono_env.train.export import export_model
    from ono_env.train.export import main as export_main
    build, words = OLD_DAMAGED[case]
    path = tmp_path / "old.zip"
    path.write_bytes(build(path))
    with pytest.raises(ValueError, match=words) as exc:
        export_model(path, tmp_path / "out.safetensors")
    assert type(exc.value) is ValueError and str(path) in str(exc.value)
    assert "weights_only=False" not in str(exc.value)   # no advice to load it so it runs code
    assert export_main([str(path), str(tmp_path / "out.safetensors")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ono-export: error: ") and err.count("\n") == 1
    assert not (tmp_path / "out.safetensors").exists()



def test_export_refuses_empty_paths(tmp_path, capsys, monkeypatch):
    # before: '' was the current folder, and the message named '.'
    from ono_env.train.export import main as export_main
    monkeypatch.chdir(tmp_path)
    shipped = str(shipped_models()["ppo-basic-2p"])
    for args, what in [(["", "a.safetensors"], "source ''"), ([shipped, ""], "destination ''")]:
        assert export_main(args) == 2
        err = capsys.readouterr().err
        assert err == f"ono-export: error: {what}: a file path is needed\n"
    assert not list(tmp_path.iterdir())


def test_export_says_what_it_wrote_and_refuses_what_no_load_plays(tmp_path, capsys):
    """Before: a model of observation version 3 or of another action table was exported
    and described as playable; custom rules were named as their preset's; a refused export
    left the folders it made; a non-path argument was Python's TypeError; an empty zip was
    told to run ono-export; an escape in the written file's name reached the terminal."""
    from ono_env.train.export import export_model
    from ono_env.train.export import main as export_main

    for key, value, words in (("observation_version", 3, "observation layout v3; this version "
                                                         "of ono_env writes v1, v2"),
                              ("action_names", ["x"] * 85, "a different action table")):
        src = tmp_path / f"{key}.safetensors"
        src.write_bytes(_with_meta(_set(key, value))(tmp_path))
        with pytest.raises(ValueError, match=words):
            export_model(src, tmp_path / "made" / "out.safetensors")
        assert not (tmp_path / "made").exists()   # no folder left behind
    custom = RuleSet.from_dict({"preset": "basic", "num_players": 2, "hand_size": 8})
    net = tiny_net(custom)
    write_model(tmp_path / "custom.safetensors", net, tiny_meta(net, custom))
    dest = tmp_path / "esc\x1b[31m.safetensors"
    assert export_main([str(tmp_path / "custom.safetensors"), str(dest)]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path}/esc?[31m.safetensors: custom rules based on 'basic', 2 players" in out
    for src, dest in ((5, "x.safetensors"), (tmp_path / "custom.safetensors", None),
                      (tmp_path / "custom.safetensors", b"x.safetensors")):
        with pytest.raises(ValueError, match=r"is a (int|NoneType|bytes); allowed: a file path"):
            export_model(src, dest)
    empty = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty, "w"):
        pass
    with pytest.raises(ValueError, match=r"not an ono_env checkpoint: it has neither "
                                         r"ono_policy.safetensors .* nor ono_meta.json") as exc:
        export_model(empty, tmp_path / "e.safetensors")
    assert "ono-export" not in str(exc.value)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_export_to_a_full_stdout_says_the_file_was_written(tmp_path):
    """Before: ``ono-export src dest > /dev/full`` said only that the standard output could
    not be written, with the file written whole, and a second run was refused for it."""
    import os
    import subprocess
    import sys

    src = Path(__file__).resolve().parent.parent / "agents" / "models" / "ppo-basic-2p.safetensors"
    dest = tmp_path / "x.safetensors"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}   # buffered
    with open("/dev/full", "w") as full:
        run = subprocess.run([sys.executable, "-m", "ono_env.train.export", str(src), str(dest)],
                             stdout=full, stderr=subprocess.PIPE, timeout=120, env=env)
    err = run.stderr.decode()
    assert run.returncode == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"ono-export: error: wrote {dest}: 'basic' rules, 2 players"), err
    assert err.endswith("; cannot write the standard output: [Errno 28] No space left on "
                        "device\n"), err
    assert read_model(dest)[0]["num_players"] == 2   # the file, whole


def test_a_version_1_model_of_another_size_than_its_rules_is_neither_exported_nor_loaded(
        tmp_path):
    """Before: a 2-player network whose metadata gave 4 players was exported as fine, then
    no load took the file (its size was checked only in a load under its rules)."""
    from ono_env.train.export import export_model
    src = tmp_path / "m.safetensors"
    src.write_bytes(_with_meta(lambda m: m.update(
        rules=RuleSet.preset("basic", num_players=4).to_dict(), num_players=4))(src))
    words = (r"damaged model: observation size 241; its observations under the 'basic' rules "
             r"have 245 entries")
    for call in (lambda: export_model(src, tmp_path / "out.safetensors"), lambda: load_agent(src),
                 lambda: make_agent(str(src), RULES)):
        with pytest.raises(ValueError, match=words):
            call()
    assert not (tmp_path / "out.safetensors").exists()
    assert read_metadata(src)["num_players"] == 4   # its metadata is still read as it is


def test_export_refuses_a_zip_of_many_members_unparsed_and_a_destination_ending_in_a_slash(
        tmp_path, monkeypatch):
    """Before: ono-export parsed every member of the zip first (600,000 empty ones: 417 MB),
    where load_agent refuses it unread; "x.safetensors/" wrote the file x.safetensors."""
    import ono_env.agents.learned as L
    from ono_env.train.export import export_model
    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w") as zf:
        for k in range(L.MAX_ZIP_MEMBERS + 1):
            zf.writestr(f"m{k}", b"")
    monkeypatch.setattr(zipfile, "ZipFile", lambda *a, **k: pytest.fail("parsed"))
    with pytest.raises(ValueError, match=rf"many\.zip': a zip of {L.MAX_ZIP_MEMBERS + 1:,} "
                                         rf"members; allowed: at most {L.MAX_ZIP_MEMBERS:,}"):
        export_model(many, tmp_path / "out.safetensors")
    monkeypatch.undo()
    src = shipped_models()["ppo-basic-2p"]
    with pytest.raises(ValueError, match=r"x\.safetensors/' names a folder \(it ends with '/'\)"):
        export_model(src, f"{tmp_path}/x.safetensors/")
    assert sorted(q.name for q in tmp_path.iterdir()) == ["many.zip"]


def test_a_model_path_with_a_nul_or_an_agents_name_and_an_extension_is_told(tmp_path):
    # before: "no such file" for both, with no word of the NUL or of the agent's name
    with pytest.raises(ValueError, match=r"its path holds a NUL character; allowed: a file path "
                                         r"without one"):
        make_agent("a\x00b.safetensors", RULES)
    with pytest.raises(ValueError, match=r"no such file \('ppo-basic-2p', without the "
                                         r"extension, is an agent's name\)$"):
        make_agent("ppo-basic-2p.safetensors", RULES)


def test_a_model_that_no_load_could_read_is_never_written(tmp_path):
    # before: json's own words ("Out of range float values are not JSON compliant"); and a
    # header over what a load reads was written
    net = tiny_net()
    meta = tiny_meta(net)
    meta["config"]["lr"] = float("inf")
    with pytest.raises(ValueError, match=r"^model to save: its metadata holds a number JSON has "
                                         r"not \(NaN or an infinity\); allowed: finite numbers$"):
        write_model(tmp_path / "a.safetensors", net, meta)
    meta["config"]["lr"] = "x" * (1 << 20)
    with pytest.raises(ValueError, match=r"^model to save: its safetensors header would take "
                                         r"1,0\d\d,\d{3} bytes; allowed: at most 1,048,576"):
        write_model(tmp_path / "a.safetensors", net, meta)
    assert list(tmp_path.iterdir()) == []


def test_a_model_file_named_zip_loads_and_an_empty_path_is_named(tmp_path):
    """Before: a model renamed .zip was "not a zip file" (a zip renamed .safetensors loads),
    and load_agent('') named the folder '.'."""
    renamed = tmp_path / "model.zip"
    renamed.write_bytes(shipped_models()["ppo-basic-2p"].read_bytes())
    assert load_agent(renamed, RULES).act(*_one_decision(RULES)).shape == (1,)
    (tmp_path / "junk.zip").write_bytes(b"hello, no zip at all")
    with pytest.raises(ValueError, match=r"not a zip file \(nor a safetensors model\)$"):
        load_agent(tmp_path / "junk.zip")
    with pytest.raises(ValueError, match=r"^model path '': a file path is needed$"):
        load_agent("")


def test_write_model_refuses_inconsistent_models(tmp_path):
    net = tiny_net()
    meta = tiny_meta(net)
    with pytest.raises(ValueError, match=r"ends in .safetensors"):
        write_model(tmp_path / "m.zip", net, meta)
    meta["architecture"]["hidden_sizes"] = [9]
    with pytest.raises(ValueError, match=r"model to save: damaged model: tensor 'hidden.0.weight'"):
        write_model(tmp_path / "m.safetensors", net, meta)
    assert not list(tmp_path.iterdir())
    # before: pathlib's TypeError, an AttributeError and FileExistsError
    meta = tiny_meta(net)
    (tmp_path / "f").write_text("kept")
    for path, a_net, message in ((5, net, "model file: a file path is needed; got 5"),
                                 (tmp_path / "m.safetensors", None,
                                  "model to save: net is a NoneType; allowed: a PolicyNet"),
                                 (tmp_path / "f" / "m.safetensors", net,
                                  "model file: '" + str(tmp_path / "f") + "' exists and is not a "
                                  "folder")):
        with pytest.raises(ValueError, match=re.escape(message)):
            write_model(path, a_net, meta)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


# ---- (d) the shipped models -------------------------------------------------------------
SHIPPED = {"ppo-basic-2p": ("basic", 2), "ppo-classic-2p": ("classic", 2),
           "ppo-basic-4p": ("basic", 4)}
"""Each shipped specialist (version-1 observations): its rules and player count."""
GENERALIST = "ppo-any"
"""The shipped generalist (version-2 observations, any rules)."""
WIDTH = {"ppo-basic-2p": 128, "ppo-classic-2p": 128, "ppo-basic-4p": 128}
"""The width of each model's two hidden layers (algo ppo runs: 128)."""


def test_shipped_models_are_safetensors_files_and_load_by_name():
    models = shipped_models()
    assert sorted(models) == sorted([*SHIPPED, GENERALIST])
    for name, (preset, players) in SHIPPED.items():
        path = models[name]
        assert path.suffix == ".safetensors" and path.parent.name == "models"
        rules = RuleSet.preset(preset, num_players=players)
        agent = make_agent(name, rules)
        assert isinstance(agent, LearnedAgent) and agent.rules == rules and agent.name == name
        meta = agent.meta
        assert meta["format_version"] == 3 and meta["rules"] == rules.to_dict()
        w = WIDTH[name]
        assert meta["architecture"] == {"type": "mlp", "hidden_sizes": [w, w], "activation": "tanh",
                                        "value_hidden_sizes": [w, w]}
        assert meta["training_steps"] > 10_000_000 and meta["config"]["policy"]["activation"] == "tanh"
        # the stored scale is the one this version computes for those rules
        assert np.array_equal(agent.net.scale, observation_scale(rules))
        other_n = 4 if players == 2 else 2
        # the refusal names the policy as the user gave it, not the path it is installed at
        with pytest.raises(ValueError, match=f"^'{name}': trained for {players} players, asked to play "
                                             f"{other_n} .*allowed: a table of {players} players "
                                             f"under its '{preset}' rules \\(num_players={players}; "
                                             f"ono-arena --players {players}; ono-play with "
                                             f"{players - 1} agents? for the other seats?\\); or "
                                             f"ppo-any, which plays every rule set at 2-10 players$"):
            make_agent(name, RuleSet.preset(preset, num_players=other_n))
        other = "classic" if preset == "basic" else "basic"
        with pytest.raises(ValueError, match=f"trained for '{preset}' rules, which differ from "
                                             f"the '{other}' rules asked for: .*; allowed: the "
                                             f"'{preset}' rules it was trained for; or ppo-any"):
            make_agent(name, RuleSet.preset(other, num_players=players))
        # both differ: the message names the rules too
        with pytest.raises(ValueError, match=f"asked to play {other_n} \\(the table's player "
                                             f"count\\); its rules differ from the '{other}' "
                                             f"rules asked for too: "):
            make_agent(name, RuleSet.preset(other, num_players=other_n))


def test_a_model_of_custom_rules_is_refused_as_one(tmp_path):
    """A rule set built from a preset keeps its name: the refusal says the model's rules are
    custom and what they set (before: "trained for 'basic' rules, which differ from the
    'basic' rules asked for ...; allowed: the 'basic' rules it was trained for")."""
    custom = RuleSet.from_dict({"preset": "basic", "num_players": 2, "hand_size": 8})
    path = tmp_path / "custom.safetensors"
    net = tiny_net(custom)
    write_model(path, net, tiny_meta(net, custom))
    with pytest.raises(ValueError, match=r"trained for custom rules based on 'basic' "
                                         r"\(hand_size=8\), which differ from the 'basic' rules "
                                         r"asked for: hand_size=8 \(asked 7\); allowed: the "
                                         r"custom rules based on 'basic' \(hand_size=8\) it was "
                                         r"trained for; or ppo-any"):
        load_agent(path, RULES)
    with pytest.raises(ValueError, match=r"allowed: a table of 2 players under its custom rules "
                                         r"based on 'basic' \(hand_size=8\) \(num_players=2;"):
        load_agent(path, RuleSet.preset("basic", num_players=4))
    assert load_agent(path, custom).act(*_one_decision(custom)).shape == (1,)
    from ono_env.agents.learned import rules_named  # a name of its own: no "based on"
    assert rules_named(RuleSet.from_dict({"preset": "basic", "name": "house",
                                          "hand_size": 8})) == "the 'house' rules"


def _one_decision(rules):
    g = VecGame(rules, 1, seed=0)
    return g.observe(int(g.state.current[0])), g.legal_mask(), np.random.default_rng(0)


def test_a_learned_agent_made_by_hand_checks_its_arguments():
    """Before: rules given as a preset's name or a mapping were kept as given (repr and every
    error of act then failed with an AttributeError), deterministic='no' played as True, a
    name of 5 was taken and a None net failed with an AttributeError."""
    from ono_env.agents.learned import LearnedAgent
    rules = RuleSet.preset("basic", num_players=2)
    a = make_agent("ppo-basic-2p", rules)
    made = LearnedAgent(a.net, {"preset": "basic", "num_players": 2}, "mine")
    assert made.rules == rules and repr(made) == "LearnedAgent('mine', rules='basic', num_players=2)"
    for kw, message in ((dict(rules="classic"), "mine: a network for (241,) observations and 85 "
                                                 "actions cannot play 'classic' with 4 players"),
                        (dict(deterministic="no"), "deterministic='no' (str); allowed: True or False"),
                        (dict(name=5), "name = 5 (int); allowed: text"),
                        (dict(net=None), "net is a NoneType; allowed: a PolicyNet"),
                        (dict(meta=[1]), "meta is a list; allowed: a dict or None")):
        args = {"net": a.net, "rules": rules, "name": "mine", "deterministic": True,
                "meta": None, **kw}
        with pytest.raises(ValueError, match=re.escape(message)):
            LearnedAgent(**args)


def test_a_model_given_the_other_observation_version_says_which_it_reads():
    import numpy as np

    from ono_env.game import VecGame

    rng = np.random.default_rng(0)
    for name, version in (("ppo-any", 1), ("ppo-basic-2p", 2)):
        game = VecGame(RuleSet.preset("basic", num_players=2), 2, seed=1,
                       observation_version=version)
        agent = make_agent(name, RuleSet.preset("basic", num_players=2))
        seats = game.current_player.copy()
        with pytest.raises(ValueError, match=f"it reads version-{3 - version} observations: "
                                             f"VecGame\\(..., observation_version={3 - version}\\)"):
            agent.act(game.observe(seats), game.legal_mask(), rng)
        agent.act(game.observe(seats, version=3 - version), game.legal_mask(), rng)


def test_the_benchmarks_reference_policy_plays_from_its_file_and_is_not_shipped():
    """benchmarks/models/ppo-basic-2p-maskable.safetensors, the MaskablePPO policy that
    ppo-basic-2p was when the search targets were set (README, strength ladder), still
    loads as a model file agent; it is not in the package."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "models" / \
        "ppo-basic-2p-maskable.safetensors"
    rules = RuleSet.preset("basic", num_players=2)
    agent = make_agent(str(path), rules)
    assert isinstance(agent, LearnedAgent) and agent.name == "ppo-basic-2p-maskable"
    assert agent.name not in shipped_models() and agent.meta["rules"] == rules.to_dict()
    assert agent.meta["architecture"]["hidden_sizes"] == [256, 256]
    shipped = make_agent("ppo-basic-2p", rules)
    game = VecGame(rules, 64, seed=5)
    obs, mask = game.observe(game.state.current.astype(np.int64)), game.legal_mask()
    mine = agent.act(obs, mask, np.random.default_rng(0))
    assert mask[np.arange(64), mine].all()
    assert not np.array_equal(agent.logits(obs), shipped.logits(obs))


def test_the_generalist_model_file():
    """ppo-any: format version 4, version-2 observations, the scale this version computes,
    and the torch network of the trainer (a policy and a value trunk apart, as runs 9-26 trained
    it), loaded with its weights, computes its logits and values."""
    import torch as th

    from ono_env.train.ppo import ActorCritic
    th.set_num_threads(1)
    meta, net = read_model(shipped_models()[GENERALIST])
    assert meta["format_version"] == 4 and meta["observation_version"] == 2
    arch = meta["architecture"]
    assert arch["opponent_encoder"] == 32 and arch["hidden_sizes"] == [256, 256]
    assert arch["value_hidden_sizes"] == [256, 256]
    assert meta["training_steps"] > 845_000_000 and len(meta["config"]["tables"]) == 30
    assert meta["config"]["policy"]["shared"] is False   # since run 9: a value trunk of its own
    assert meta["config"]["ppo"]["color_consistency"] == 1.0   # run 26: the colour-consistency term
    for preset, n in (("ono", 4), ("stacking", 6), ("basic", 10)):
        rules = RuleSet.preset(preset, num_players=n)
        assert np.array_equal(net.scale, observation_scale(rules, 2))
        g = VecGame(rules, num_games=64, seed=n, autoreset=True, observation_version=2)
        rng = np.random.default_rng(n)
        for _ in range(20):
            g.step(np.array([rng.choice(np.flatnonzero(m)) for m in g.legal_mask()]))
        obs = g.observe(g.state.current.astype(np.int64))
        model = ActorCritic(net.scale, arch["hidden_sizes"], arch["activation"], False, 32)
        model.load_policy_net(net)
        with th.no_grad():
            logits, value = model(th.from_numpy(obs))
        assert np.abs(logits.numpy() - net(obs)).max() < 1e-4
        assert np.abs(value.numpy() - net.value(obs)).max() < 1e-4


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_model_matches_a_torch_forward_pass_of_its_weights(name):
    """The NumPy network against torch's Linear/Tanh on the same weights, on real
    observations: the same logits (float32 rounding) and the same masked argmax."""
    import torch as th
    th.set_num_threads(1)
    path = shipped_models()[name]
    preset, players = SHIPPED[name]
    rules = RuleSet.preset(preset, num_players=players)
    t = {k: th.from_numpy(v) for k, v in st_load(path.read_bytes()).items()}
    D, w = observation_size(rules), WIDTH[name]
    net = th.nn.Sequential(th.nn.Linear(D, w), th.nn.Tanh(), th.nn.Linear(w, w), th.nn.Tanh(),
                           th.nn.Linear(w, 85))
    net.load_state_dict({"0.weight": t["hidden.0.weight"], "0.bias": t["hidden.0.bias"],
                         "2.weight": t["hidden.1.weight"], "2.bias": t["hidden.1.bias"],
                         "4.weight": t["logits.weight"], "4.bias": t["logits.bias"]})
    obs, legal = real_observations(rules, 3000, seed=11)
    with th.no_grad():
        ref = net(th.from_numpy(obs) / t["obs_scale"]).numpy()
    agent = make_agent(name, rules)
    z = agent.logits(obs)
    assert np.abs(z - ref).max() < 1e-4
    assert np.array_equal(agent.act(obs, legal, np.random.default_rng(0)),
                          np.where(legal, ref, -np.inf).argmax(1))
    # the value network (shown by the web table), and explain()'s masked probabilities
    vnet = th.nn.Sequential(th.nn.Linear(obs.shape[1], w), th.nn.Tanh(),
                            th.nn.Linear(w, w), th.nn.Tanh(), th.nn.Linear(w, 1))
    vnet.load_state_dict({"0.weight": t["value_hidden.0.weight"], "0.bias": t["value_hidden.0.bias"],
                          "2.weight": t["value_hidden.1.weight"], "2.bias": t["value_hidden.1.bias"],
                          "4.weight": t["value.weight"], "4.bias": t["value.bias"]})
    with th.no_grad():
        v_ref = vnet(th.from_numpy(obs) / t["obs_scale"]).numpy()[:, 0]
    probs, value = agent.explain(obs, legal)
    assert np.abs(value - v_ref).max() < 1e-4 and np.abs(value).max() < 2
    p_ref = th.softmax(th.from_numpy(np.where(legal, ref, -np.inf)).double(), dim=1).numpy()
    assert np.abs(probs - p_ref).max() < 1e-4
    assert (probs[~legal] == 0).all() and np.allclose(probs.sum(1), 1)
    assert np.array_equal(probs.argmax(1), agent.act(obs, legal, np.random.default_rng(0)))


def test_a_version_2_model_without_a_value_network_still_plays(tmp_path):
    """Models written before value networks (format version 2) load and play; explain
    gives their probabilities and no value."""
    net = tiny_net()
    meta = make_metadata(RULES, 5, {}, hidden_sizes=net.hidden_sizes, activation="tanh")
    assert meta["format_version"] == 2 and "value_hidden_sizes" not in meta["architecture"]
    path = write_model(tmp_path / "v2.safetensors", net, meta)
    agent = load_agent(path)
    obs, legal = real_observations(RULES, 50)
    probs, value = agent.explain(obs, legal)
    assert value is None and np.allclose(probs.sum(1), 1)
    assert np.array_equal(agent.act(obs, legal, np.random.default_rng(0)), probs.argmax(1))


def test_a_model_of_another_action_table_names_the_first_action_that_differs(tmp_path):
    path = tmp_path / "m.safetensors"
    path.write_bytes(_with_meta(lambda m: m.update(
        action_names=[m["action_names"][1], m["action_names"][0]] + m["action_names"][2:]))(path))
    for call in (lambda: load_agent(path), lambda: make_agent(str(path), RULES)):
        with pytest.raises(ValueError, match=r"different action table \(85 actions; action 0 is "
                                             r"'play R1' there and 'play R0' here\); this version "
                                             r"of ono_env has 85: retrain the model$"):
            call()


def test_export_replaces_no_model_and_no_file_of_the_users(tmp_path):
    # before: a second export to the same name replaced the first model silently, and a
    # file "<dest>.tmp" of the user's was overwritten, then renamed away
    from ono_env.agents.learned import shipped_models
    from ono_env.train.export import export_model
    dest = tmp_path / "mine.safetensors"
    (tmp_path / "mine.safetensors.tmp").write_text("keep")
    export_model(shipped_models()["ppo-basic-2p"], dest)
    first = dest.read_bytes()
    with pytest.raises(ValueError, match=r"destination: .* already exists; give a new file name"):
        export_model(shipped_models()["ppo-basic-4p"], dest)
    assert dest.read_bytes() == first
    assert (tmp_path / "mine.safetensors.tmp").read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.safetensors", "mine.safetensors.tmp"]
    import os
    import stat
    umask = os.umask(0)
    os.umask(umask)
    # the mode of a plain write (0666 less the umask), not a temporary file's 0600
    assert stat.S_IMODE(dest.stat().st_mode) == 0o666 & ~umask


def test_the_agents_of_one_model_file_share_one_read_only_network(tmp_path):
    """A table of nine ppo-any holds its network once: every agent that load_agent makes of
    one file's bytes shares the arrays, which are read-only; a file changed on disk is read
    anew, and read_model still gives a network of one's own."""
    import shutil

    from ono_env.agents.learned import load_agent, read_model, shared_nets

    path = tmp_path / "m.safetensors"
    shutil.copy(shipped_models()["ppo-basic-2p"], path)
    shared_nets.clear()
    a, b = load_agent(path), load_agent(path, deterministic=False)
    assert a.net is b.net and a.meta is not b.meta and a.meta == b.meta
    assert all(not x.flags.writeable for x in a.net.arrays())
    with pytest.raises(ValueError, match="read-only"):
        a.net.layers[0][0][0, 0] = 1.0
    a.meta["label"] = "changed"                      # each agent's metadata is its own
    assert load_agent(path).meta.get("label") != "changed"
    assert make_agent(str(path), a.rules).net is a.net
    own = read_model(path)[1]
    assert own is not a.net and own.layers[0][0].flags.writeable
    meta, net = read_model(path)                     # the same file with other weights
    write_model(path, PolicyNet(net.scale, [(w * 0.5, b) for w, b in net.layers], net.activation,
                                net.value_layers), meta)
    c = load_agent(path)
    assert c.net is not a.net
    np.testing.assert_allclose(c.net.layers[0][0], 0.5 * a.net.layers[0][0])
    obs = np.random.default_rng(0).integers(0, 3, (4, a.obs_size)).astype(np.float32)
    assert not np.allclose(c.logits(obs), a.logits(obs))


def test_a_model_too_large_to_keep_is_shared_while_an_agent_holds_it(tmp_path, monkeypatch):
    """Before: a file over SHARED_MODEL_BYTES was read and unpacked anew for every seat, each
    a copy of the network (a 600 MB model at four seats held 3.2 GB). Now its network is
    shared while an agent holds it, and forgotten with the last one; after clear(), a new
    read is not given the network an older agent holds, and keeps its metadata (each
    network's metadata is keyed by the network: an earlier version kept it by the bytes'
    digest, and a network's end could drop a newer read's)."""
    import gc
    import shutil

    import ono_env.agents.learned as L

    path = tmp_path / "m.safetensors"
    shutil.copy(shipped_models()["ppo-basic-2p"], path)
    monkeypatch.setattr(L, "SHARED_MODEL_BYTES", 10)   # no file is kept
    L.shared_nets.clear()
    a, b = L.load_agent(path), L.load_agent(path)
    assert a.net is b.net and not L.shared_nets._nets and a.meta == b.meta
    del a, b
    gc.collect()
    assert not L.shared_nets._alive and not L.shared_nets._alive_meta   # forgotten
    c = L.load_agent(path)
    L.shared_nets.clear()
    d = L.load_agent(path)
    assert d.net is not c.net
    del c
    gc.collect()   # the older network's end leaves the newer one's metadata
    assert L.load_agent(path).net is d.net


def test_an_old_checkpoints_layer_written_00_is_exported(tmp_path):
    """Before: its index read as 0 and looked up as '...policy_net.0.weight': a KeyError."""
    from ono_env.train.export import export_model
    path = tmp_path / "old.zip"
    path.write_bytes(_old_zip(pth=lambda th: _old_sd(th, layer="00"))(path))
    export_model(path, tmp_path / "out.safetensors")
    assert load_agent(tmp_path / "out.safetensors").net.hidden_sizes == [8]


def test_a_model_whose_header_starts_like_a_zip_loads(tmp_path):
    """A safetensors header of 19,280 bytes (0x4B50) starts the file with b'PK\\0\\0'; before,
    every reader took it for a damaged zip, though write_model had written it."""
    net = tiny_net()
    meta = tiny_meta(net)
    base = len(model_bytes(net, meta))
    meta["config"]["pad"] = ""
    while True:   # pad the config until the header is 0x4B50 bytes (the writer pads to 8)
        data = model_bytes(net, meta)
        n = int.from_bytes(data[:8], "little")
        if n >= 0x4B50:
            break
        meta["config"]["pad"] += "x" * max(1, (0x4B50 - n) // 2)
    assert n == 0x4B50 and data[:4] == b"PK\0\0" and len(data) > base
    path = write_model(tmp_path / "pk.safetensors", net, meta)
    assert path.read_bytes()[:4] == b"PK\0\0"
    agent = load_agent(path)
    assert agent.net.hidden_sizes == [8]


def test_a_write_stopped_by_ctrl_c_leaves_no_temporary_file(tmp_path, monkeypatch):
    """Before: only an OSError removed the temporary file; a KeyboardInterrupt (a Ctrl-C as
    ono-export or a checkpoint writes) left '.ono-<hex>.tmp' beside the model."""
    import os

    from ono_env import checks

    def stopped(src, dst):
        raise KeyboardInterrupt
    monkeypatch.setattr(checks.os, "replace", stopped)
    with pytest.raises(KeyboardInterrupt):
        checks.write_whole(tmp_path / "m.safetensors", b"x" * 1000, "model file")
    monkeypatch.setattr(checks.os, "replace", os.replace)
    assert list(tmp_path.iterdir()) == []


def test_a_write_never_replaces_a_fifo_a_device_or_a_folder(tmp_path):
    """Before: the temporary file was renamed over whatever was at the path, so that a FIFO
    (or a link to one) became a regular file, and as root Replay.save('/dev/null') made the
    system's /dev/null one."""
    import os
    import stat

    from ono_env import checks
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "link").symlink_to(fifo)
    (tmp_path / "dir").mkdir()
    for path, why in ((fifo, "not a regular file"), (tmp_path / "link", "not a regular file"),
                      (tmp_path / "dir", "it is a folder")):
        with pytest.raises(ValueError, match=f"cannot write model file '{path}': {why}"):
            checks.write_whole(path, b"x", "model file")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and (tmp_path / "link").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "fifo", "link"]
    assert checks.write_whole(tmp_path / "new", b"x", "model file").read_bytes() == b"x"


def test_a_new_file_is_written_once_and_never_over_another_with_or_without_hard_links(
        tmp_path, monkeypatch):
    from ono_env import checks
    for links in (True, False):
        if not links:   # a file system without hard links: an exclusive create and a copy
            def no_links(src, dst):
                raise PermissionError(1, "Operation not permitted")
            monkeypatch.setattr(checks.os, "link", no_links)
        folder = tmp_path / str(links)
        folder.mkdir()
        assert checks.write_whole(folder / "a", b"new", "card", new=True).read_bytes() == b"new"
        with pytest.raises(ValueError, match=r"cannot write card '.*/a': a file appeared there "
                                             r"during the run"):
            checks.write_whole(folder / "a", b"other", "card", new=True)
        assert (folder / "a").read_bytes() == b"new" and [p.name for p in folder.iterdir()] == ["a"]


def test_export_names_a_destination_the_system_refuses(tmp_path, capsys, monkeypatch):
    """Before: '[Errno 36] File name too long', naming no destination; and '.safetensors'
    was told its name must end in .safetensors, which it does."""
    from ono_env.train.export import main as export_main
    monkeypatch.chdir(tmp_path)
    shipped = str(shipped_models()["ppo-basic-2p"])
    long = "a" * 300 + ".safetensors"
    for dest, said in [(long, f"destination '{long}': File name too long"),
                       (".safetensors", "destination '.safetensors': a model file's name is a "
                                        "name and .safetensors (model.safetensors)")]:
        assert export_main([shipped, dest]) == 2
        assert capsys.readouterr().err == f"ono-export: error: {said}\n"
    assert not list(tmp_path.iterdir())


def test_export_says_a_version_2_model_plays_every_table(tmp_path, capsys):
    """Before: ppo-any was reported as "'basic' rules, 2 players", its metadata's rules."""
    from ono_env.train.export import main as export_main
    models = shipped_models()
    assert export_main([str(models["ppo-any"]), str(tmp_path / "any.safetensors")]) == 0
    assert "observation version 2 (plays every rule set at 2-10 players; its metadata names " \
           "'basic' rules, 2 players)" in capsys.readouterr().out
    assert export_main([str(models["ppo-classic-2p"]), str(tmp_path / "c.safetensors")]) == 0
    assert ": 'classic' rules, 2 players, " in capsys.readouterr().out


def test_other_safetensors_metadata_is_read_past_and_not_copied(tmp_path):
    """safetensors.torch's save_model adds "format": "pt" beside the ono_env key: such a
    file loads, and ono-export writes the ono_env key alone (as docs/model-files.md says)."""
    from safetensors import safe_open

    from ono_env.train.export import export_model
    net = tiny_net()
    path = tmp_path / "m.safetensors"
    path.write_bytes(st_save(net.tensors(), metadata={"ono_env": json.dumps(tiny_meta(net)),
                                                      "format": "pt"}))
    assert load_agent(path).net.hidden_sizes == [8]
    export_model(path, tmp_path / "out.safetensors")
    with safe_open(str(tmp_path / "out.safetensors"), "np") as f:
        assert set(f.metadata()) == {"ono_env"}


@pytest.mark.parametrize("name, rules", [("ppo-basic-2p", "basic"), ("ppo-any", "ono")])
def test_a_large_batch_is_read_in_even_parts_with_the_same_output(name, rules, monkeypatch):
    """Before: the whole batch went through each layer at once (ono-arena ppo-any greedy
    --batch 100000 held 2.3 GiB, three times what its batch check counted). Now parts of
    at most ROWS_AT_ONCE rows, none under half of it, and every row's output is the one
    product of all rows gives, to float32 rounding, and its choice too where the top two
    logits are not within it (bit for bit before OpenBLAS 0.3.31, which rounds a row's sums
    by its place in the product's blocking: a few units in the last place)."""
    import ono_env.agents.learned as L

    agent = make_agent(name, RuleSet.preset(rules, num_players=2))
    game = VecGame(agent.rules, 64, seed=3, observation_version=agent.observation_version)
    rows = np.resize(game.observe(np.zeros(64, int)), (2 * L.ROWS_AT_ONCE + 5,
                                                       agent.obs_size))
    rows = rows * np.random.default_rng(0).uniform(0.5, 1.5, size=(len(rows), 1)).astype(
        np.float32)   # every row another
    parts: list[int] = []
    real = L.PolicyNet._mlp_rows

    def counted(self, obs, layers):
        parts.append(len(obs))
        return real(self, obs, layers)

    monkeypatch.setattr(L.PolicyNet, "_mlp_rows", counted)
    out = agent.net(rows)
    size = -(-len(rows) // 3)
    assert parts == [size, size, len(rows) - 2 * size]
    assert all(L.ROWS_AT_ONCE // 2 <= p <= L.ROWS_AT_ONCE for p in parts)
    monkeypatch.setattr(L, "ROWS_AT_ONCE", len(rows))
    whole = agent.net(rows)
    np.testing.assert_allclose(out, whole, rtol=0, atol=2e-6 * np.abs(whole).max())
    top2 = np.sort(whole, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 1e-5 * np.abs(whole).max()
    assert clear.mean() > 0.99
    assert np.array_equal(out[clear].argmax(1), whole[clear].argmax(1))


def test_a_wide_network_reads_fewer_rows_at_once_within_its_part_bytes(monkeypatch):
    """Before: 16,384 rows a part whatever the width, so that a layer of 65,536 units (a
    width training allows) took 8 GiB for one part. Now a part's widest arrays stay within
    PART_BYTES (here made small, for a layer of 4,096 units: 64 rows), and the outputs are
    the whole product's; a shipped network keeps its parts."""
    import ono_env.agents.learned as L
    from ono_env.agents.learned import PolicyNet

    rng = np.random.default_rng(0)
    layers = [(rng.normal(0, 0.05, (4096, 241)).astype(np.float32), np.zeros(4096, np.float32)),
              (rng.normal(0, 0.05, (85, 4096)).astype(np.float32), np.zeros(85, np.float32))]
    net = PolicyNet(np.ones(241, np.float32), layers, "tanh")
    obs = rng.random((300, 241)).astype(np.float32)
    parts: list[int] = []
    real = L.PolicyNet._mlp_rows

    def counted(self, x, layers):
        parts.append(len(x))
        return real(self, x, layers)

    whole = net(obs)
    monkeypatch.setattr(L, "PART_BYTES", 8 * 4096 * 64)
    monkeypatch.setattr(L.PolicyNet, "_mlp_rows", counted)
    out = net(obs)
    assert parts == [60] * 5   # 300 rows in even parts of at most 64
    np.testing.assert_allclose(out, whole, rtol=0, atol=2e-6 * np.abs(whole).max())
    monkeypatch.undo()
    shipped = make_agent("ppo-any", RuleSet.preset("ono", num_players=2)).net
    widest = max(max(w.shape) for w, _ in shipped.layers)
    assert L.PART_BYTES // (8 * widest) >= L.ROWS_AT_ONCE   # its parts as before


def test_the_export_hint_is_a_command_that_can_be_pasted():
    # before: ono-export my old.zip my old.safetensors, which a shell reads as four paths
    import shlex

    from ono_env.agents.learned import _export_hint
    hint = _export_hint(Path("runs/my old.zip"))
    assert shlex.split(hint) == ["ono-export", "runs/my old.zip", "runs/my old.safetensors"]


def test_a_model_too_large_for_any_loader_is_refused_before_it_is_written(tmp_path, monkeypatch):
    """Before: ono-export wrote a 1.1 GB model file, then refused it as too large for a
    model file as it read it back, and left it there."""
    import ono_env.agents.learned as L
    net = tiny_net()
    size = sum(a.size * 4 for a in net.arrays())
    monkeypatch.setattr(L, "MAX_MODEL_BYTES", size - 1)
    with pytest.raises(ValueError, match=rf"^model to save: its tensors would take {size:,} bytes; "
                                         rf"allowed: at most {size - 1:,}, what every model loader"):
        write_model(tmp_path / "big.safetensors", net, tiny_meta(net))
    monkeypatch.setattr(L, "MAX_MODEL_BYTES", size)   # the tensors fit, the header not
    with pytest.raises(ValueError, match=r"^model to save: its file would take 1\d,\d{3} bytes; "
                                         rf"allowed: at most {size:,}, what every model loader"):
        write_model(tmp_path / "big.safetensors", net, tiny_meta(net))
    assert not (tmp_path / "big.safetensors").exists()
    monkeypatch.undo()
    assert load_agent(write_model(tmp_path / "fits.safetensors", net, tiny_meta(net)))
