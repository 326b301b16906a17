"""The project's own masked PPO (``algo: ppo``, ono_env.train.ppo), tiny budgets: a run end to
end (config, overrides, checkpoints, the model as an agent, league snapshots, TensorBoard),
resuming from a checkpoint, the masked distribution, and the torch thread choice."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from ono_env.agents.learned import load_agent, read_metadata
from ono_env.arena import run_arena
from ono_env.train import run as R
from ono_env.train.cli import main as train_main
from ono_env.train.config import load_config
from ono_env.train.ppo import (
    ActorCritic,
    MASKED,
    bf16_supported,
    masked_entropy,
    masked_logits,
    resolve_device,
    sample,
    train,
)

TINY = ["total_steps=2048", "num_envs=16", "ppo.n_steps=64", "ppo.batch_size=256",
        "ppo.n_epochs=2", "policy.net_arch=[32]", "eval.every=1024", "eval.games=16",
        "eval.opponents=[random, greedy]", "final_eval.games=24",
        "final_eval.opponents=[random, greedy]", "self_play.enabled=true",
        "self_play.snapshot_every=1024", "self_play.max_snapshots=1", "progress=false",
        "torch_threads=1"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("ppo")
    cfg = load_config("default", TINY + [f"run_dir={run_dir}"])
    assert cfg.algo == "ppo"
    return cfg, train(cfg)


def test_a_tiny_run_writes_everything(tiny_run):
    _cfg, res = tiny_run
    run_dir = Path(res["run_dir"])
    assert res["steps"] == 2048 and res["torch_threads"] == 1 and res["device"] == "cpu"
    # config.yaml and the model's metadata say what ran: a cut game's end resolved from auto
    # (before: auto); the device and precision as asked, for another machine
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert (saved["device"], saved["precision"], saved["ppo"]["truncation"]) == ("auto", "auto",
                                                                               "loss")
    assert read_metadata(res["model"])["config"] == saved
    # the time in the games is a part of the rollouts
    assert 0.0 < res["games_seconds"] < res["rollout_seconds"]
    names = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert names == ["step_1024.optimizer.safetensors", "step_1024.safetensors",
                     "step_2048.optimizer.safetensors", "step_2048.safetensors"]
    assert (run_dir / "model.safetensors").is_file()
    assert (run_dir / "model.optimizer.safetensors").is_file()
    curve = (run_dir / "eval.csv").read_text().splitlines()
    assert curve[0].startswith("step,opponent") and len(curve) == 1 + 2 * 2
    final = json.loads((run_dir / "final_eval.json").read_text())
    assert final["algo"] == "ppo" and final["model"] == "model.safetensors"
    assert [r["opponent"] for r in final["results"]] == ["random", "greedy"]
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    events = list((run_dir / "tb").rglob("events.out.tfevents.*"))
    ea = EventAccumulator(str(events[0].parent))
    ea.Reload()
    tags = set(ea.Tags()["scalars"])
    assert {"eval/win_rate/random", "eval/win_rate/greedy", "league/snapshots", "train/entropy",
            "train/approx_kl", "time/steps_per_second", "rollout/episode_win_rate"} <= tags
    # a share is named one (before: eval/no_winner, a share where eval.csv's is a count)
    assert {"eval/no_winner_share/random", "eval/mean_length/greedy"} <= tags
    assert not any(t.startswith("eval/no_winner/") for t in tags)


def test_the_model_plays_as_an_agent_and_carries_its_value_net(tiny_run):
    import yaml

    _, res = tiny_run
    # the run's config.yaml says what ran: the auto encoder width resolved
    written = yaml.safe_load((Path(res["run_dir"]) / "config.yaml").read_text())
    assert written["policy"]["opponent_encoder"] == 0
    meta = read_metadata(res["model"])
    assert meta["training_steps"] == 2048 and meta["config"]["algo"] == "ppo"
    assert meta["architecture"]["hidden_sizes"] == [32]
    assert meta["architecture"]["value_hidden_sizes"] == [32]
    agent = load_agent(res["model"])
    assert agent.net.has_value
    out = run_arena([str(res["model"]), "random"], "basic", 2, num_games=20, seed=0, rating=False)
    assert out.records.wins.shape == (20, 2) and np.allclose(out.records.wins.sum(axis=1), 1.0)


def test_the_saved_model_computes_what_the_torch_network_computes(tiny_run):
    _, res = tiny_run
    agent = load_agent(res["model"])
    model = ActorCritic(agent.net.scale, [32], "tanh", False)
    model.load_policy_net(agent.net)
    obs = np.random.default_rng(0).integers(0, 3, (8, agent.obs_size)).astype(np.float32)
    with torch.no_grad():
        logits, value = model(torch.from_numpy(obs))
    np.testing.assert_allclose(logits.numpy(), agent.logits(obs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(value.numpy(), agent.net.value(obs), rtol=1e-5, atol=1e-5)


def test_resume_continues_from_a_checkpoint(tiny_run, tmp_path, resume_loads, capsys):
    _cfg, res = tiny_run
    ckpt = Path(res["run_dir"]) / "checkpoints" / "step_1024.safetensors"
    loaded = resume_loads
    capsys.readouterr()
    out = train(load_config("default", TINY + ["total_steps=3000", f"resume={ckpt}",
                                               f"run_dir={tmp_path}", "final_eval.games=0",
                                               "self_play.enabled=false"]))
    assert loaded == [1024, 1024]   # once to refuse a bad one before any work, once to train
    # the steps this part trains said (before: "training for 3,072 steps", 2,048 trained),
    # the more beside the whole rollouts' target (before: "to 3,000 steps (2,048 more)")
    assert ("or to 3,000 steps (in whole rollouts of 1,024 steps: 3,072; 2,048 more), whichever "
            "comes first") in capsys.readouterr().err
    assert out["steps"] == 3072
    assert read_metadata(out["model"])["training_steps"] == 3072
    # nothing left to train, and a network of another shape, are refused before any work
    with pytest.raises(ValueError, match="leaves nothing to train"):
        train(load_config("default", TINY + ["total_steps=1024", f"resume={ckpt}",
                                             f"run_dir={tmp_path / 'b'}"]))
    with pytest.raises(ValueError, match=r"this config's policy.net_arch is \[16\]: allowed: "
                                         r"policy.net_arch=\["):
        train(load_config("default", TINY + ["policy.net_arch=[16]", f"resume={ckpt}",
                                             f"run_dir={tmp_path / 'c'}"]))
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()


def test_a_resume_refused_as_the_run_starts_says_nothing_of_the_checkpoint(tiny_run, tmp_path,
                                                                          capsys):
    """The resume's summary is said once the run has started (before: "resume: ... at 1,024
    steps; Adam's state from ..." above the run's refusal, as if it had resumed)."""
    _cfg, res = tiny_run
    ckpt = Path(res["run_dir"]) / "checkpoints" / "step_1024.safetensors"
    capsys.readouterr()
    with pytest.raises(ValueError, match="memory"):   # refused as the run starts
        train(load_config("default", TINY + ["total_steps=3072", f"resume={ckpt}",
                                             "num_envs=1000000", "ppo.n_steps=100000",
                                             f"run_dir={tmp_path / 'run'}"]))
    assert "resume:" not in capsys.readouterr().err and not (tmp_path / "run").exists()


@pytest.mark.parametrize("name, opt", [("model.bin", "model.bin.optimizer.safetensors"),
                                       ("s.safetensors.safetensors", "s.safetensors.optimizer.safetensors")])
def test_resume_from_a_model_file_of_another_name(tiny_run, tmp_path, capsys, name, opt):
    """A model file not named X.safetensors has no optimizer file beside it: resume starts
    Adam afresh (the optimizer file's name was the model file's own for ``model.bin``, and
    the model was read as Adam's state and refused)."""
    _cfg, res = tiny_run
    src = Path(res["run_dir"]) / "checkpoints" / "step_1024.safetensors"
    (tmp_path / "in").mkdir()
    ckpt = tmp_path / "in" / name
    shutil.copyfile(src, ckpt)
    capsys.readouterr()
    out = train(load_config("default", TINY + ["total_steps=2048", f"resume={ckpt}",
                                               f"run_dir={tmp_path / 'out'}", "final_eval.games=0",
                                               "self_play.enabled=false"]))
    assert out["steps"] == 2048
    err = capsys.readouterr().err
    assert f"no Adam state beside it ({opt!r}): Adam starts afresh" in err, err
    # a folder of the optimizer file's name is refused (before: "no Adam state beside it")
    (tmp_path / "in" / opt).mkdir()
    with pytest.raises(ValueError, match=r"optimizer.safetensors', the name of the checkpoint's "
                                         r"Adam state, is not a file \(a folder, a broken link, "
                                         r"a device\)"):
        train(load_config("default", TINY + ["total_steps=2048", f"resume={ckpt}",
                                             f"run_dir={tmp_path / 'out2'}"]))
    assert not (tmp_path / "out2").exists()
    # a checkpoint at the most steps a run may have: no total_steps above it to suggest
    from ono_env.agents.learned import read_model, write_model
    meta, net = read_model(ckpt)
    full = write_model(tmp_path / "full.safetensors", net, meta | {"training_steps": 10**12})
    with pytest.raises(ValueError, match=r"leaves nothing to train; allowed: a checkpoint of "
                                         r"fewer steps \(total_steps is at most 1,000,000,000,000\)$"):
        train(load_config("default", TINY + ["total_steps=1000000000000", f"resume={full}",
                                             f"run_dir={tmp_path / 'b'}"]))
    assert not (tmp_path / "b").exists()


def test_two_evaluation_agents_of_one_name_are_refused(tiny_run, tmp_path):
    """Evaluation rows are keyed by the name an agent plays under: a model file named like a
    baseline, or two models of one file name, would give one row twice; refused before any
    work, naming both."""
    _cfg, res = tiny_run
    src = Path(res["run_dir"]) / "checkpoints" / "step_1024.safetensors"
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        shutil.copyfile(src, tmp_path / d / "Greedy.safetensors")
    a, b = tmp_path / "a" / "Greedy.safetensors", tmp_path / "b" / "Greedy.safetensors"
    for field, specs, first, second in [
            ("eval.opponents", f"[greedy, {a}]", "greedy", str(a)),
            ("final_eval.opponents", f"[{a}, random, {b}]", str(a), str(b))]:
        with pytest.raises(ValueError, match=re.escape(
                f"{field}: {first!r} and {second!r} both play under the name 'Greedy'")):
            train(load_config("default", TINY + [f"{field}={specs}",
                                                 f"run_dir={tmp_path / 'run'}"]))
        assert not (tmp_path / "run").exists()


def test_a_resumed_part_that_saves_nothing_leaves_the_earlier_parts_files(tiny_run, tmp_path,
                                                                          capsys, nan_loss):
    """Before: the earlier part's evaluations were removed and its config.yaml replaced as
    the part started, so a part that then diverged left the older model described by the
    failed part's config and by no evaluation."""
    _cfg, res = tiny_run
    run_dir = tmp_path / "run"
    shutil.copytree(res["run_dir"], run_dir)
    names = ("config.yaml", "eval.csv", "final_eval.json", "final_eval.csv")
    before = {n: (run_dir / n).read_bytes() for n in names}
    models = sorted(p.name for p in run_dir.rglob("*.safetensors"))
    with pytest.raises(ValueError, match="diverged"):
        train(load_config("default", TINY + ["total_steps=8192", "eval.every=1024",
                                             "self_play.enabled=false",
                                             f"resume={run_dir / 'model.safetensors'}",
                                             f"run_dir={run_dir}"]))
    assert {n: (run_dir / n).read_bytes() for n in names} == before
    assert sorted(p.name for p in run_dir.rglob("*.safetensors")) == models
    assert not (run_dir / ".earlier-part").exists()


def test_resume_in_its_own_folder_says_so_and_replaces_the_evaluations(tiny_run, tmp_path,
                                                                        capsys):
    """A part resumed in the run's own folder names the file, its steps and Adam's state, and
    removes the earlier part's final evaluation: with none of its own (eval.every=0,
    final_eval.games=0) none describes the older model beside the newer one. The learning
    curve, whose rows evaluate the checkpoints, stays (before: removed too)."""
    _cfg, res = tiny_run
    run_dir = tmp_path / "run"
    shutil.copytree(res["run_dir"], run_dir)
    assert (run_dir / "final_eval.json").is_file() and (run_dir / "eval.csv").is_file()
    curve = (run_dir / "eval.csv").read_bytes()
    capsys.readouterr()
    out = train(load_config("default", TINY + ["total_steps=3072", "eval.every=0",
                                               "final_eval.games=0", "self_play.enabled=false",
                                               f"resume={run_dir / 'model.safetensors'}",
                                               f"run_dir={run_dir}"]))
    err = capsys.readouterr().err
    assert read_metadata(out["model"])["training_steps"] == 3072
    assert (f"resume: {str(run_dir / 'model.safetensors')!r} at 2,048 steps; Adam's state from "
            f"'model.optimizer.safetensors'") in err
    assert ("resuming in its own folder: the earlier part's final_eval.json, final_eval.csv "
            "set aside in .earlier-part/ (they evaluated the model before this part: removed "
            "once this part saves a model, put back if it saves none); its learning curve, "
            "eval.csv, carried on") in err
    assert not any((run_dir / n).exists() for n in ("final_eval.json", "final_eval.csv",
                                                    ".earlier-part"))
    assert (run_dir / "eval.csv").read_bytes() == curve
    assert [r["step"] for r in out["curve"]] == [1024, 1024, 2048, 2048]
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["total_steps"] == 3072
    # a checkpoint without Adam's state beside it: Adam starts afresh, and the run says so
    ckpt = Path(res["run_dir"]) / "checkpoints" / "step_1024.safetensors"
    bare = tmp_path / "bare.safetensors"
    shutil.copy(ckpt, bare)
    train(load_config("default", TINY + ["total_steps=2048", "final_eval.games=0",
                                         "self_play.enabled=false", f"resume={bare}",
                                         f"run_dir={tmp_path / 'b'}"]))
    assert ("at 1,024 steps; no Adam state beside it ('bare.optimizer.safetensors'): Adam "
            "starts afresh") in capsys.readouterr().err


def test_a_part_resumed_in_its_own_folder_carries_the_learning_curve_on(tiny_run, tmp_path,
                                                                         capsys):
    """eval.csv holds every part's evaluations, one curve (before: each part's own alone, the
    earlier ones' removed once it saved a model); a curve of other columns (a mixture's, for
    a part of one table) is set aside as before, and one that cannot be read is refused."""
    _cfg, res = tiny_run
    run_dir = tmp_path / "run"
    shutil.copytree(res["run_dir"], run_dir)
    earlier = (run_dir / "eval.csv").read_text().splitlines()
    resume = ["self_play.enabled=false", f"resume={run_dir / 'model.safetensors'}",
              f"run_dir={run_dir}"]
    capsys.readouterr()
    out = train(load_config("default", TINY + ["total_steps=4096", *resume]))
    # what the part changed is said (before: not a word), but total_steps, which names the part
    assert ("resume: this part's config differs from the checkpoint's in self_play.enabled "
            "True -> False\n") in capsys.readouterr().err
    rows = (run_dir / "eval.csv").read_text().splitlines()
    assert rows[:len(earlier)] == earlier
    assert [int(r.split(",")[0]) for r in rows[1:]] == [1024] * 2 + [2048] * 2 + [3072] * 2 + [4096] * 2
    assert [r["step"] for r in out["curve"]] == [int(r.split(",")[0]) for r in rows[1:]]
    # rows of another layout: set aside (and gone once the part saves a model)
    mixed = rows[0].replace("step,", "step,table,") + "\n" + "1024,basic-2p," + rows[1].split(",", 1)[1]
    (run_dir / "eval.csv").write_text(mixed + "\n")
    capsys.readouterr()
    resume[1] = f"resume={run_dir / 'model.safetensors'}"
    out = train(load_config("default", TINY + ["total_steps=5120", "final_eval.games=0", *resume]))
    err = capsys.readouterr().err
    assert "the earlier part's eval.csv, final_eval.json, final_eval.csv set aside" in err
    assert ("resume: this part's config differs from the checkpoint's in final_eval.games "
            "24 -> 0\n") in err
    assert [int(r.split(",")[0]) for r in (run_dir / "eval.csv").read_text().splitlines()[1:]] == [5120] * 2
    # a curve that cannot be read: one error naming the file; the folder as it was
    (run_dir / "eval.csv").write_text(rows[0] + "\n1024,random,16,most\n")
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.name != ".lock"}
    with pytest.raises(ValueError, match=r"eval\.csv': the learning curve this part would carry "
                                         r"on cannot be read \(line 2 does not hold one value per "
                                         r"column\); allowed: the eval.csv the run wrote, or none"):
        train(load_config("default", TINY + ["total_steps=6144", *resume]))
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.name != ".lock"} == before


def test_resume_takes_a_shipped_policys_name(tmp_path, monkeypatch):
    """resume=ppo-any stands for the shipped file (recorded as its path); a path that exists
    is kept as it is, even one spelled as a shipped name; anything else is refused with the
    names allowed."""
    from ono_env.agents.learned import shipped_models
    from ono_env.train.ppo import shipped_resume

    cfg = load_config("default", ["observation_version=2", "resume=ppo-any"])
    assert shipped_resume(cfg).resume == str(shipped_models()["ppo-any"])
    (tmp_path / "ppo-any").write_bytes(shipped_models()["ppo-basic-2p"].read_bytes())
    monkeypatch.chdir(tmp_path)
    assert shipped_resume(cfg).resume == "ppo-any"
    (tmp_path / "ppo-any").write_bytes(b"")   # a file there, but no model: refused by name
    with pytest.raises(ValueError, match=r"^resume='ppo-any': not a safetensors model file"):
        shipped_resume(cfg)
    cfg = load_config("default", ["resume=runs/x/model.safetensors"])
    with pytest.raises(ValueError, match=r"resume='runs/x/model.safetensors': no such file, and "
                                         r"no shipped policy has that name; allowed: a model or "
                                         r"checkpoint file, or one of ppo-any, ppo-basic-2p"):
        shipped_resume(cfg)


def _damaged(state, how):
    """A copy of an optimizer state's tensors damaged one way."""
    out = dict(state)
    key = next(k for k in out if k.endswith(".exp_avg_sq"))
    name = key[: -len(".exp_avg_sq")]
    if how == "shape":
        out[key] = np.zeros((3, 2), np.float32)
    elif how == "missing":
        del out[f"{name}.step"]
    elif how == "empty step":
        out[f"{name}.step"] = np.zeros(0, np.float32)
    elif how == "float64":
        out[f"{name}.exp_avg"] = out[f"{name}.exp_avg"].astype(np.float64)
    elif how == "nan":
        out[f"{name}.exp_avg"] = np.full_like(out[f"{name}.exp_avg"], np.nan)
    elif how == "negative":
        out[key] = -np.ones_like(out[key])
    elif how == "step":
        out[f"{name}.step"] = np.array([2.5], np.float32)
    elif how == "no exp_avg":   # before: that parameter's Adam silently started afresh
        del out[f"{name}.exp_avg"]
    elif how == "odd":          # before: ignored
        out["bogus"] = np.zeros(2, np.float32)
    return out


@pytest.mark.parametrize("how, match", [
    ("shape", r"holds '[\w.]+\.exp_avg_sq' as float32 \[3, 2\]; allowed: float32 \["),
    ("missing", r"has no tensor '[\w.]+\.step'"),
    ("empty step", r"holds '[\w.]+\.step' as float32 \[0\]; allowed: float32 \[1\]"),
    ("float64", r"holds '[\w.]+\.exp_avg' as float64"),
    ("nan", r"holds '[\w.]+\.exp_avg' as float32 \[\d+\] with values not finite"),
    ("negative", r"holds [\w.]+\.exp_avg_sq with values below 0"),
    ("step", r"holds [\w.]+\.step=2\.5; allowed: a whole number of steps"),
    ("no exp_avg", r"has no tensor '[\w.]+\.exp_avg'"),
    ("odd", r"holds 'bogus', which training does not write; allowed: ")])
def test_a_damaged_optimizer_state_is_refused_before_anything_is_written(tiny_run, tmp_path,
                                                                         how, match):
    # before: a wrong shape of exp_avg_sq reached Adam's fused kernel (a segmentation fault),
    # a missing tensor was a bare KeyError, a float64 one a RuntimeError mid-run
    from safetensors.numpy import load_file, save_file

    _cfg, res = tiny_run
    src = Path(res["run_dir"]) / "checkpoints"
    shutil.copy(src / "step_1024.safetensors", tmp_path / "step_1024.safetensors")
    state = load_file(str(src / "step_1024.optimizer.safetensors"))
    save_file(_damaged(state, how), str(tmp_path / "step_1024.optimizer.safetensors"),
              metadata={"training_steps": "1024"})
    with pytest.raises(ValueError, match="resume: '.*step_1024.optimizer.safetensors' " + match):
        train(load_config("default", TINY + ["total_steps=3072",
                                             f"resume={tmp_path / 'step_1024.safetensors'}",
                                             f"run_dir={tmp_path / 'run'}"]))
    assert not (tmp_path / "run").exists()


def test_an_optimizer_state_numpy_cannot_read_or_a_huge_length_is_one_clear_error(tiny_run,
                                                                                   tmp_path):
    # before: "TypeError: data type 'bfloat16' not understood" and "OverflowError: int too
    # large to convert to float", naming neither the file nor what is allowed
    from safetensors.numpy import load_file
    from safetensors.torch import save_file

    _cfg, res = tiny_run
    src = Path(res["run_dir"]) / "checkpoints"
    shutil.copy(src / "step_1024.safetensors", tmp_path / "step_1024.safetensors")
    state = {k: torch.from_numpy(v) for k, v in
             load_file(str(src / "step_1024.optimizer.safetensors")).items()}
    opath = tmp_path / "step_1024.optimizer.safetensors"
    key = next(k for k in state if k.endswith(".exp_avg"))
    for tensors, meta, match in (
            ({**state, key: state[key].bfloat16()}, {},
             rf"holds '{re.escape(key)}' as bfloat16 \[\d+(, \d+)*\]; allowed: float32 \[\d+"),
            (state, {"tables_state": '{"basic-2p": {"eval_length": 1' + "0" * 400
                                     + ', "stall_counts": [0, 0, 0, 0]}}'},
             r"holds a tables_state that is not one; allowed: "),
            (state, {"tables_state": '{"a": {"eval_length": 1, "stall_counts": [0, 0, 0, 0]}, '
                                     '"a": {"eval_length": 2, "stall_counts": [0, 0, 0, 0]}}'},
             r"holds a tables_state that is not one \(the key 'a' is given twice\); allowed: ")):
        save_file(tensors, str(opath), metadata={"training_steps": "1024", **meta})
        with pytest.raises(ValueError, match="resume: '.*step_1024.optimizer.safetensors' " + match):
            train(load_config("default", TINY + ["total_steps=3072",
                                                 f"resume={tmp_path / 'step_1024.safetensors'}",
                                                 f"run_dir={tmp_path / 'run'}"]))
        assert not (tmp_path / "run").exists()


def _safetensors_with_a_huge_tensor(path: Path, state: dict[str, np.ndarray], meta: dict,
                                     huge: str, shape: list[int]) -> None:
    """``state`` as a safetensors file, and after it a float32 tensor ``huge`` of ``shape``
    whose bytes are a hole in a sparse file: declared, never written."""
    header: dict = {"__metadata__": meta}
    chunks, offset = [], 0
    for k, v in state.items():
        data = np.ascontiguousarray(v, np.float32).tobytes()
        header[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    size = 4 * int(np.prod(shape))
    header[huge] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + size]}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as fh:
        fh.write(len(text).to_bytes(8, "little") + text + b"".join(chunks))
        fh.truncate(8 + len(text) + offset + size)


def test_an_optimizer_file_is_read_only_where_it_names_the_networks_parameters(
        tiny_run, tmp_path, capsys):
    """Before: every tensor of the optimizer file was read whole before any check, so a file
    declaring a 2 GB tensor took 2 GB of memory (a larger one, the machine's); one naming no
    parameter, or missing some, was said to be read and Adam started afresh without a word."""
    import resource

    from safetensors.numpy import load_file

    _cfg, res = tiny_run
    src = Path(res["run_dir"]) / "checkpoints"
    shutil.copy(src / "step_1024.safetensors", tmp_path / "step_1024.safetensors")
    state = load_file(str(src / "step_1024.optimizer.safetensors"))
    opath = tmp_path / "step_1024.optimizer.safetensors"
    meta = {"training_steps": "1024"}
    args = TINY + ["total_steps=3072", f"resume={tmp_path / 'step_1024.safetensors'}"]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss   # KiB
    # a tensor of no parameter is not read; one of a parameter is refused by its header
    _safetensors_with_a_huge_tensor(opath, state, meta, "junk.exp_avg", [25_000, 20_000])
    train(load_config("default", args + [f"run_dir={tmp_path / 'a'}"]))
    assert (tmp_path / "a" / "model.safetensors").is_file()
    key = next(k for k in state if k.endswith(".exp_avg"))
    rest = {k: v for k, v in state.items() if k != key}
    _safetensors_with_a_huge_tensor(opath, rest, meta, key, [25_000, 20_000])
    with pytest.raises(ValueError, match=f"holds '{re.escape(key)}' as float32 \\[25000, 20000\\]; "
                                         f"allowed: float32 \\["):
        train(load_config("default", args + [f"run_dir={tmp_path / 'b'}"]))
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 1_000_000
    # none of the network's parameters: refused; some of them: said
    _safetensors_with_a_huge_tensor(opath, {}, meta, "junk.exp_avg", [2])
    capsys.readouterr()
    with pytest.raises(ValueError, match="holds Adam's state of no parameter of this network; "
                                         "allowed: the optimizer file written with "):
        train(load_config("default", args + [f"run_dir={tmp_path / 'c'}"]))
    assert "Adam's state from" not in capsys.readouterr().err   # not said above its refusal
    layer = key.rsplit(".", 2)[0]   # its weight's and bias's state both go
    part = {k: v for k, v in state.items() if not k.startswith(layer + ".")}
    _safetensors_with_a_huge_tensor(opath, part, meta, "junk.exp_avg", [2])
    capsys.readouterr()
    train(load_config("default", args + [f"run_dir={tmp_path / 'd'}"]))
    err = capsys.readouterr().err
    assert (f"steps; Adam's state from 'step_1024.optimizer.safetensors'\nresume: "
            f"'step_1024.optimizer.safetensors' holds no Adam state of {layer}: theirs starts "
            f"afresh\n") in err
    assert not (tmp_path / "b").exists() and not (tmp_path / "c").exists()
    # no Adam state at all, as save_checkpoint writes a fresh optimizer's: read, and said
    from safetensors.numpy import save_file
    save_file({}, str(opath), metadata=meta)
    train(load_config("default", args + [f"run_dir={tmp_path / 'e'}"]))
    assert ("resume: 'step_1024.optimizer.safetensors' holds no Adam state (saved before any "
            "update): Adam starts afresh") in capsys.readouterr().err


@pytest.mark.parametrize("shared, encoder", [(False, 0), (True, 0), (True, 4)])
def test_a_grown_network_computes_what_the_narrower_one_did(shared, encoder):
    from ono_env.observation import observation_scale
    from ono_env.rules import resolve_rules

    rules = resolve_rules("ono", num_players=4)
    scale = observation_scale(rules, 2 if encoder else 1)
    torch.manual_seed(0)
    small = ActorCritic(scale, [8, 6], "tanh", shared, encoder)
    with torch.no_grad():   # every weight and bias nonzero, so that nothing is checked by luck
        for prm in small.parameters():
            prm.normal_(0.0, 0.5)
    net = small.policy_net()
    big = ActorCritic(scale, [16, 12], "tanh", shared, encoder)
    assert big.load_policy_net(net, grow=True) is True
    obs = torch.from_numpy(np.random.default_rng(1).integers(0, 3, (32, len(scale))).astype(np.float32))
    with torch.no_grad():
        (l0, v0), (l1, v1) = small(obs), big(obs)
    np.testing.assert_allclose(l1.numpy(), l0.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(v1.numpy(), v0.numpy(), rtol=1e-5, atol=1e-5)
    # the new units are live: the loss has a gradient in their outgoing weights
    assert big.pi_body[2].weight[6:].abs().sum() > 0 and big.pi.weight[:, 6:].abs().sum() == 0
    loss = big(obs)[0].logsumexp(1).sum()
    loss.backward()
    assert big.pi.weight.grad[:, 6:].abs().sum() > 0
    # the same network loads without growing; a deeper, a narrower or (without grow) a
    # wider one is refused
    assert ActorCritic(scale, [8, 6], "tanh", shared, encoder).load_policy_net(net, grow=True) is False
    for arch, grow in (([16, 12, 4], True), ([16, 4], True), ([16, 12], False)):
        with pytest.raises(ValueError, match=r"network is 8x6, this config's policy.net_arch is "
                           + re.escape(f"{arch}: allowed: policy.net_arch=[8, 6]")) as err:
            ActorCritic(scale, arch, "tanh", shared, encoder).load_policy_net(net, grow=grow)
        assert ("resume_grow=true" in str(err.value)) is (not grow)


@pytest.mark.parametrize("shared", [False, True])
def test_a_grown_opponent_encoder_computes_what_the_narrower_one_did(shared):
    from ono_env.observation import (
        MAX_OPPONENTS,
        OBS2_OPPONENTS,
        OPPONENT_SIZE,
        OPP_PRESENT,
        observation_scale,
    )
    from ono_env.rules import resolve_rules

    scale = observation_scale(resolve_rules("ono", num_players=6), 2)
    small = _random_network(scale, shared, 4)
    net = small.policy_net()
    big = ActorCritic(scale, [16, 6], "tanh", shared, 7)
    assert big.load_policy_net(net, grow=True) is True
    # observations of 2-10 players: some opponent blocks present, the rest absent
    rng = np.random.default_rng(2)
    obs = rng.integers(0, 3, (40, len(scale))).astype(np.float32)
    present = OBS2_OPPONENTS + OPP_PRESENT + OPPONENT_SIZE * np.arange(MAX_OPPONENTS)
    obs[:, present] = np.arange(MAX_OPPONENTS)[None, :] < rng.integers(1, 10, (40, 1))
    obs = torch.from_numpy(obs)
    with torch.no_grad():
        (l0, v0), (l1, v1) = small(obs), big(obs)
    np.testing.assert_allclose(l1.numpy(), l0.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(v1.numpy(), v0.numpy(), rtol=1e-5, atol=1e-5)
    # the model file of the grown network plays as the checkpoint's too
    np.testing.assert_allclose(big.policy_net()(obs.numpy()), net(obs.numpy()),
                               rtol=1e-4, atol=1e-4)
    # the new encoder units are live: the loss has a gradient in the columns that read them
    big(obs)[0].logsumexp(1).sum().backward()
    first = big.pi_body[0].weight
    new_cols = [OBS2_OPPONENTS + k * 7 + j for k in range(MAX_OPPONENTS) for j in range(4, 7)]
    # (the old hidden units' weights from them start at 0; the new hidden units' are fresh)
    assert first[:8, new_cols].abs().sum() == 0 and first.grad[:8, new_cols].abs().sum() > 0
    # without resume_grow, or to a narrower encoder, it is refused with what is allowed
    with pytest.raises(ValueError, match=r"a 4-wide opponent encoder, this config a 7-wide "
                       r"opponent encoder: allowed: policy.opponent_encoder=4 \(or resume_grow"):
        ActorCritic(scale, [16, 6], "tanh", shared, 7).load_policy_net(net)
    with pytest.raises(ValueError, match=r"this config a 3-wide opponent encoder: allowed: "
                       r"policy.opponent_encoder=4$"):
        ActorCritic(scale, [16, 6], "tanh", shared, 3).load_policy_net(net, grow=True)


def _split_network() -> tuple[np.ndarray, ActorCritic]:
    """A basic two-player observation scale and an 8x6 network whose value has a trunk of its
    own, every weight random (nothing equal by luck)."""
    from ono_env.observation import observation_scale
    from ono_env.rules import resolve_rules

    scale = observation_scale(resolve_rules("basic", num_players=2), 1)
    return scale, _random_network(scale, False, 0)


def _random_network(scale: np.ndarray, shared: bool, encoder: int) -> ActorCritic:
    """An 8x6 network every weight of which is random (nothing equal by luck), seeded."""
    torch.manual_seed(0)
    net = ActorCritic(scale, [8, 6], "tanh", shared, encoder)
    with torch.no_grad():
        for prm in net.parameters():
            prm.normal_(0.0, 0.5)
    return net


def test_a_config_that_shares_one_trunk_refuses_a_checkpoint_with_a_value_network_of_its_own():
    """A checkpoint trained with policy.shared: false (ppo-any) resumed by a config that shares
    the trunk would keep its value head on the policy's trunk and drop its value network: one
    error instead. A shared checkpoint still loads into two trunks (both start as it)."""
    scale, own = _split_network()
    with pytest.raises(ValueError, match=r"the checkpoint's value has a network of its own .* "
                                         r"allowed: policy.shared=false"):
        ActorCritic(scale, [8, 6], "tanh", True, 0).load_policy_net(own.policy_net())
    assert ActorCritic(scale, [8, 6], "tanh", False, 0).load_policy_net(own.policy_net()) is False
    shared = ActorCritic(scale, [8, 6], "tanh", True, 0).policy_net()
    assert ActorCritic(scale, [8, 6], "tanh", False, 0).load_policy_net(shared) is False


def test_resume_drop_value_puts_the_value_head_on_the_policy_trunk():
    """resume_drop_value: the recorded one-table fine-tunes of ppo-any resumed its split
    network into one shared trunk, dropping its value network; that stays possible, by name."""
    scale, own = _split_network()
    shared = ActorCritic(scale, [8, 6], "tanh", True, 0)
    assert shared.load_policy_net(own.policy_net(), drop_value=True) is False
    net = shared.policy_net()
    for (w, b), (w0, b0) in zip(net.layers, own.policy_net().layers):
        assert np.array_equal(w, w0) and np.array_equal(b, b0)   # the policy as it was
    assert np.array_equal(net.value_layers[0][0], net.layers[0][0])   # the value reads its trunk
    assert np.array_equal(net.value_layers[-1][0], own.policy_net().value_layers[-1][0])
    with pytest.raises(ValueError, match="no value network of its own to drop"):
        ActorCritic(scale, [8, 6], "tanh", True, 0).load_policy_net(net, drop_value=True)
    with pytest.raises(ValueError, match=r"resume_drop_value=true drops the value network .* needs "
                                         r"resume=<model file> and policy.shared: true"):
        load_config("default", ["resume_drop_value=true"])


def test_resume_names_the_opponent_encoder_it_has():
    from ono_env.observation import observation_scale
    from ono_env.rules import resolve_rules

    scale = observation_scale(resolve_rules("ono", num_players=4), 2)
    plain = ActorCritic(scale, [8], "tanh", True, 0).policy_net()
    with pytest.raises(ValueError, match=r"the checkpoint has no opponent encoder, this config a "
                                         r"4-wide opponent encoder: allowed: policy\.opponent_encoder=0"):
        ActorCritic(scale, [8], "tanh", True, 4).load_policy_net(plain)


def test_resume_refuses_another_observation_version(tiny_run, tmp_path):
    _cfg, res = tiny_run
    ckpt = Path(res["run_dir"]) / "checkpoints" / "step_1024.safetensors"
    with pytest.raises(ValueError, match="reads observation version 1, this config's "
                                         "observation_version is 2: allowed: observation_version=1"):
        train(load_config("default", TINY + ["observation_version=2", f"resume={ckpt}",
                                             f"run_dir={tmp_path / 'v2'}"]))
    assert not (tmp_path / "v2").exists()
    # a version no config takes: as every loader says it (before: "allowed:
    # observation_version=3", which the config refuses)
    import json

    from safetensors.numpy import load_file, save_file

    from ono_env.agents.learned import META_KEY, read_metadata

    v3 = tmp_path / "v3.safetensors"
    meta = {**read_metadata(ckpt), "observation_version": 3}
    save_file(load_file(str(ckpt)), str(v3), metadata={META_KEY: json.dumps(meta)})
    with pytest.raises(ValueError, match=rf"^resume: '{re.escape(str(v3))}': trained on observation "
                                         rf"layout v3; this version of ono_env writes v1, v2: retrain"):
        train(load_config("default", TINY + [f"resume={v3}", f"run_dir={tmp_path / 'v3'}"]))
    assert not (tmp_path / "v3").exists()
    # a damaged model: its path once, and its own allowed (before: the path twice, then
    # "allowed: a model or checkpoint file", which it is)
    tensors = load_file(str(ckpt))
    name = next(iter(tensors))
    tensors[name] = tensors[name].copy()
    tensors[name].flat[0] = np.nan
    nan = tmp_path / "nan.safetensors"
    save_file(tensors, str(nan), metadata={META_KEY: json.dumps(read_metadata(ckpt))})
    with pytest.raises(ValueError, match=rf"^resume='{re.escape(str(nan))}': damaged model: tensor "
                                         rf"'{re.escape(name)}' holds NaN or infinite values; "
                                         rf"allowed: finite values only$"):
        train(load_config("default", TINY + [f"resume={nan}", f"run_dir={tmp_path / 'nan'}"]))
    assert not (tmp_path / "nan").exists()


def test_resume_under_other_rules_names_the_option(tiny_run, tmp_path):
    """Before: the error began with the file's name alone, naming no option."""
    _cfg, res = tiny_run
    ckpt = Path(res["run_dir"]) / "checkpoints" / "step_1024.safetensors"
    with pytest.raises(ValueError, match=f"^resume: {re.escape(repr(str(ckpt)))}: trained for "
                                         f"'basic' rules, which differ from the 'classic'"):
        train(load_config("default", TINY + ["rules=classic", f"resume={ckpt}",
                                             f"run_dir={tmp_path / 'c'}"]))
    assert not (tmp_path / "c").exists()


def test_resume_of_a_model_file_changed_since_its_optimizer_file_says_so(tiny_run, tmp_path):
    """A byte changed in a shared trunk's value layers (a damaged file): before, the resume
    said the checkpoint's value had a network of its own and advised policy.shared=false,
    which would have trained on the damaged weights; the pair is checked first now."""
    import struct

    _cfg, res = tiny_run
    ckpt = tmp_path / "ckpt" / "step_1024.safetensors"
    ckpt.parent.mkdir()
    for name in ("step_1024.safetensors", "step_1024.optimizer.safetensors"):
        shutil.copy(Path(res["run_dir"]) / "checkpoints" / name, ckpt.parent / name)
    data = bytearray(ckpt.read_bytes())
    size = struct.unpack("<Q", bytes(data[:8]))[0]
    header = json.loads(bytes(data[8:8 + size]))
    at = 8 + size + header["value_hidden.0.weight"]["data_offsets"][0]   # the trunk's copy
    data[at] ^= 1   # the lowest bit of one weight: a trunk the value no longer shares exactly
    ckpt.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"step_1024\.optimizer\.safetensors' holds Adam's "
                                         r"state of another model file than .*step_1024\."
                                         r"safetensors' \(its SHA-256 differs: .* or damaged\)"):
        train(load_config("default", TINY + ["total_steps=4096", f"resume={ckpt}",
                                             f"run_dir={tmp_path / 'b'}"]))
    assert not (tmp_path / "b").exists()


def test_a_run_folder_that_holds_another_run_is_refused(tiny_run, tmp_path):
    """A second run into a folder with files would overwrite some and leave others beside its
    own; resuming a model file in the folder carries that run on there."""
    _cfg, res = tiny_run
    run_dir = Path(res["run_dir"])
    before = sorted(p.name for p in run_dir.iterdir())
    with pytest.raises(ValueError, match=r"already holds another run's files .*allowed: a new or "
                                         r"empty folder, or resume= a model file in it"):
        train(load_config("default", TINY + [f"run_dir={run_dir}"]))
    assert sorted(p.name for p in run_dir.iterdir()) == before
    (tmp_path / "empty").mkdir()
    R.check_run_dir(tmp_path / "empty", None)            # an empty folder is fine
    steps = sorted(R._checkpoint_step(c) for c in (run_dir / "checkpoints").glob("step_*.safetensors")
                   if R._checkpoint_step(c) is not None)
    assert len(steps) >= 2
    R.check_run_dir(run_dir, str(run_dir / "checkpoints" / f"step_{steps[-1]}.safetensors"))
    R.check_run_dir(run_dir, str(run_dir / "model.safetensors"))
    # a branch from an earlier checkpoint would leave the later ones of the abandoned branch
    with pytest.raises(ValueError, match=rf"is not the model file .* furthest along \((model|"
                                         rf"checkpoints/step_{steps[-1]}).safetensors: "
                                         rf"{steps[-1]:,} steps\)"):
        R.check_run_dir(run_dir, str(run_dir / "checkpoints" / f"step_{steps[0]}.safetensors"))
    # a part resumed without checkpoints carried model.safetensors past the newest checkpoint:
    # that checkpoint is an earlier point too, and a branch from it would overwrite the model
    ahead = tmp_path / "ahead"
    shutil.copytree(run_dir, ahead)
    for p in (ahead / "checkpoints").glob(f"step_{steps[-1]}.*"):
        p.unlink()
    with pytest.raises(ValueError, match=rf"\({steps[-2]:,} steps\) is not the model file .* "
                                         rf"\(model.safetensors: {steps[-1]:,} steps\); allowed: "
                                         rf"resume=.*model.safetensors"):
        R.check_run_dir(ahead, str(ahead / "checkpoints" / f"step_{steps[-2]}.safetensors"))
    R.check_run_dir(ahead, str(ahead / "model.safetensors"))
    # a part stopped after a checkpoint and before its model: the model is the earlier point
    behind = tmp_path / "behind"
    shutil.copytree(run_dir, behind)
    shutil.copy(behind / "checkpoints" / f"step_{steps[-2]}.safetensors", behind / "model.safetensors")
    with pytest.raises(ValueError, match=f"is not the model file .* furthest along "
                                         rf"\(checkpoints/step_{steps[-1]}.safetensors"):
        R.check_run_dir(behind, str(behind / "model.safetensors"))
    R.check_run_dir(behind, str(behind / "checkpoints" / f"step_{steps[-1]}.safetensors"))
    # an unreadable model.safetensors is left out: the checkpoints alone are compared
    (behind / "model.safetensors").write_bytes(b"not a model")
    R.check_run_dir(behind, str(behind / "checkpoints" / f"step_{steps[-1]}.safetensors"))
    with pytest.raises(ValueError, match=f"furthest along \\(checkpoints/step_{steps[-1]}"):
        R.check_run_dir(behind, str(behind / "checkpoints" / f"step_{steps[-2]}.safetensors"))
    # another model file of the folder, an earlier point copied there: its recorded steps
    # are compared as well, so it cannot overwrite the further model.safetensors
    shutil.copy(run_dir / "checkpoints" / f"step_{steps[0]}.safetensors", ahead / "old.safetensors")
    with pytest.raises(ValueError, match=rf"old.safetensors' \({steps[0]:,} steps\) is not the "
                                         rf"model file .* \(model.safetensors: {steps[-1]:,} steps"):
        R.check_run_dir(ahead, str(ahead / "old.safetensors"))
    shutil.copy(ahead / "model.safetensors", ahead / "same.safetensors")
    R.check_run_dir(ahead, str(ahead / "same.safetensors"))   # as far along: carried on there
    # a folder of model files that is not a run's (no config.yaml): nothing in it is replaced
    models = tmp_path / "models"
    models.mkdir()
    shutil.copy(run_dir / "model.safetensors", models / "copy.safetensors")
    (models / "final_eval.json").write_text("{}")
    with pytest.raises(ValueError, match=r"already holds files and is not a run's folder \(no "
                                         r"config.yaml that a run wrote\): copy.safetensors, "
                                         r"final_eval.json; allowed: a new or empty folder$"):
        R.check_run_dir(models, str(models / "copy.safetensors"))
    # nor is a folder whose config.yaml a run did not write (before: a file of that name
    # made it a run's folder, and the run replaced config.yaml and deleted eval.csv there)
    for text in ("my config\n", "algo: ppo\nseed: 0\n", "[", "- seed\n"):
        (models / "config.yaml").write_text(text)
        with pytest.raises(ValueError, match=r"not a run's folder \(no config.yaml that a run "
                                             r"wrote\): config.yaml, copy.safetensors"):
            R.check_run_dir(models, str(models / "copy.safetensors"))
    shutil.copy(run_dir / "config.yaml", models / "config.yaml")   # a run's: it carries on
    R.check_run_dir(models, str(models / "copy.safetensors"))
    # a run folder of an older trainer, whose config.yaml had no algo or run_dir yet
    (models / "config.yaml").write_text("seed: 0\ntotal_steps: 1000\nnum_envs: 8\n")
    R.check_run_dir(models, str(models / "copy.safetensors"))
    for elsewhere in (tmp_path / "elsewhere.safetensors", run_dir / "tb" / "x" / "m.safetensors"):
        with pytest.raises(ValueError, match="already holds"):
            R.check_run_dir(run_dir, str(elsewhere))
    with pytest.raises(ValueError, match="already holds"):   # a folder above the model file
        R.check_run_dir(run_dir.parent, str(run_dir / "model.safetensors"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="/file' is a file, not a folder; allowed: a folder path"):
        R.check_run_dir(tmp_path / "file", None)
    with pytest.raises(ValueError, match="File name too long; allowed: a folder path"):
        R.check_run_dir(tmp_path / ("a" * 300), None)   # before: a bare OSError


def test_resume_grow_carries_a_run_on_in_a_wider_network(tiny_run, tmp_path, capsys):
    _cfg, res = tiny_run
    ckpt = Path(res["run_dir"]) / "checkpoints" / "step_1024.safetensors"
    out = train(load_config("default", TINY + ["total_steps=2048", f"resume={ckpt}",
                                               "resume_grow=true", "policy.net_arch=[48]",
                                               f"run_dir={tmp_path}", "final_eval.games=0",
                                               "self_play.enabled=false"]))
    assert "grown to 48" in capsys.readouterr().err
    meta = read_metadata(out["model"])
    assert meta["training_steps"] == 2048 and meta["architecture"]["hidden_sizes"] == [48]
    with pytest.raises(ValueError, match="resume_grow=true grows the network of a checkpoint"):
        load_config("default", ["resume_grow=true"])


def test_a_run_that_fails_closes_its_tensorboard_writer(tmp_path, monkeypatch):
    """Before: the writer was closed only when the run ended normally, so each failed run
    left a writer thread running in the process (and its events unwritten)."""
    import threading

    import ono_env.arena

    def failing(*args, **kwargs):
        raise RuntimeError("an evaluation that fails")

    monkeypatch.setattr(ono_env.arena, "evaluate", failing)
    writers = lambda: sum(type(t).__name__ == "_AsyncWriterThread"   # noqa: E731
                          for t in threading.enumerate())
    before = writers()
    with pytest.raises(RuntimeError, match="an evaluation that fails"):
        train(load_config("default", TINY + ["self_play.enabled=false", "total_steps=1024",
                                             f"run_dir={tmp_path}"]))
    assert writers() == before
    assert list((tmp_path / "tb").iterdir())   # its events were written


def test_a_shared_trunk_trains_and_saves_a_playable_model(tmp_path):
    res = train(load_config("default", TINY + ["policy.shared=true", "self_play.enabled=false",
                                               "eval.every=0", "final_eval.games=0",
                                               "total_steps=1024", f"run_dir={tmp_path}"]))
    agent = load_agent(res["model"])
    w_pi, w_v = agent.net.layers[0][0], agent.net.value_layers[0][0]
    assert np.array_equal(w_pi, w_v)          # the one trunk, written in front of each head


def test_the_masked_distribution_never_samples_an_illegal_action():
    gen = torch.Generator().manual_seed(0)
    rng = np.random.default_rng(1)
    for _ in range(50):
        mask = torch.from_numpy(rng.random((256, 85)) < rng.uniform(0.01, 0.3))
        mask[torch.arange(256), torch.from_numpy(rng.integers(0, 85, 256))] = True
        # illegal actions with huge logits must still never be drawn
        logits = torch.from_numpy(rng.normal(0, 30, (256, 85)).astype(np.float32))
        logits[~mask] += 1e4
        z = masked_logits(logits, mask)
        a = sample(z, gen)
        assert bool(mask[torch.arange(256), a].all())
        p = torch.softmax(z, dim=1)
        assert float(p[~mask].max()) == 0.0
    assert MASKED < -1e8


def test_the_masked_entropy_is_the_plain_formula_values_and_gradients():
    """masked_entropy avoids exp() of the illegal actions' log-probabilities: the same value
    and the same gradient as -(exp(logp) * logp).sum(1).mean(), bit for bit, and a row
    with one legal action has entropy 0."""
    rng = np.random.default_rng(3)
    mask = torch.from_numpy(rng.random((512, 85)) < 0.2)
    mask[:, 0] = True
    mask[7] = False
    mask[7, 3] = True                                  # one legal action: entropy 0
    raw = torch.from_numpy(rng.normal(0, 3, (512, 85)).astype(np.float32))
    grads, values = [], []
    for f in (masked_entropy, lambda la, m: -(la.exp() * la).sum(dim=1).mean()):
        x = raw.clone().requires_grad_(True)
        la = torch.log_softmax(masked_logits(x, mask), dim=1)
        h = f(la, mask)
        h.backward()
        values.append(h.detach())
        grads.append(x.grad)
    assert torch.equal(values[0], values[1]) and float(values[0]) > 0
    assert torch.equal(grads[0], grads[1]) and bool((grads[0][~mask] == 0).all())
    la = torch.log_softmax(masked_logits(raw, mask), dim=1)
    assert float(masked_entropy(la[7:8], mask[7:8])) == 0.0


def test_sampling_follows_the_softmax():
    gen = torch.Generator().manual_seed(0)
    logits = torch.tensor([[0.0, np.log(3.0), MASKED]] * 20000, dtype=torch.float32)
    counts = np.bincount(sample(logits, gen).numpy(), minlength=3)
    assert counts[2] == 0 and abs(counts[1] / 20000 - 0.75) < 0.015


def test_threads_follow_the_free_cores(monkeypatch):
    monkeypatch.setattr(R, "usable_cores", lambda: 2)
    assert R.choose_threads(3)[0] == 3                       # a number is taken as given
    # said so, whoever set it (before: "set in the config", after ono-exploit --threads too)
    assert R.choose_threads(1) == (1, "torch_threads: 1 (as set, not auto)")
    assert R.choose_threads("auto", free=2.0)[0] == 2        # an idle machine: both cores
    assert R.choose_threads("auto", free=0.9)[0] == 1        # one other busy process: one
    assert R.choose_threads("auto", free=0.1)[0] == 1        # never fewer than one
    # before: "invalid literal for int()" for "x", and 0 and 2.0 taken
    for bad in ("x", 0, 2.0, True, 1025):
        with pytest.raises(ValueError, match=rf"^torch_threads={re.escape(repr(bad))}; allowed: "
                                             rf"auto or a whole number from 1 to 1,024$"):
            R.choose_threads(bad)
    # a simulated busy machine as /proc/stat shows it: one of two cores busy over the sample
    stats = iter(["cpu  100 0 100 1000 0 0 0 0 0 0\n", "cpu  150 0 150 1100 0 0 0 0 0 0\n"])
    free = R.free_cores(0.0, read=lambda: next(stats), sleep=lambda s: None)
    assert free == pytest.approx(2 * 100 / 200)
    n, why = R.choose_threads("auto", free=free)
    assert n == 1 and "1.0 of 2 cores free" in why


def test_a_runs_config_says_the_thread_count_auto_chose(tmp_path, monkeypatch):
    """config.yaml and the model's metadata hold the count ``torch_threads: auto`` chose, so
    that the config runs again as it ran (before: auto, which chose again)."""
    import ono_env.train.ppo as ppo

    monkeypatch.setattr(ppo, "choose_threads", lambda setting: (1, "torch_threads: auto -> 1"))
    over = ["total_steps=64", "time_limit_minutes=null", "num_envs=4", "ppo.n_steps=16",
            "ppo.batch_size=64", "ppo.n_epochs=1", "eval.every=0", "final_eval.games=0",
            "progress=false", "torch_threads=auto", f"run_dir={tmp_path / 'run'}"]
    res = train(load_config("default", over))
    saved = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert saved["torch_threads"] == 1 and read_metadata(res["model"])["config"] == saved


def test_a_run_gives_the_same_model_whatever_ran_before_in_the_process(tmp_path):
    """A run's first weights come from its seed and its ``torch_threads``: torch's orthogonal
    initialisation (a QR decomposition) comes out otherwise at another thread count, so the
    trainer sets the count before it builds the network. (It used to build it at the
    process's count: the machine's cores, or what the last run in the process had set.)"""
    from safetensors.numpy import load_file

    # no time limit: under one the learning rate decays with the clock too
    over = ["total_steps=64", "time_limit_minutes=null", "device=cpu", "num_envs=4",
            "ppo.n_steps=16", "ppo.batch_size=64", "ppo.n_epochs=1", "eval.every=0",
            "final_eval.games=0", "progress=false", "torch_threads=1"]
    saved = torch.get_num_threads()
    models = []
    try:
        for k, before in enumerate((2, 1)):
            torch.set_num_threads(before)   # what the process had before the run
            torch.manual_seed(100 + k)       # and its global generator
            state = torch.random.get_rng_state()
            res = train(load_config("default", over + [f"run_dir={tmp_path / str(k)}"]))
            models.append(load_file(res["model"]))
            # the run leaves both as they were: its seed does not reseed the caller's draws
            assert torch.get_num_threads() == before
            assert torch.equal(torch.random.get_rng_state(), state)
    finally:
        torch.set_num_threads(saved)
    assert models[0].keys() == models[1].keys()
    for name in models[0]:
        np.testing.assert_array_equal(models[0][name], models[1][name], err_msg=name)


def test_config_fields_of_the_lean_trainer_are_checked():
    with pytest.raises(ValueError, match=r"read only by algo: ppo; with algo: maskable_ppo set policy.shared=false"):
        load_config("default", ["algo=maskable_ppo"])       # the default config shares a trunk
    assert not load_config("default", ["algo=maskable_ppo", "policy.shared=false"]).policy.shared
    with pytest.raises(ValueError, match="read only by algo: ppo"):
        load_config("default", ["algo=maskable_ppo", "precision=bf16"])
    with pytest.raises(ValueError, match="torch_threads"):
        load_config("default", ["torch_threads=0"])
    with pytest.raises(ValueError, match="precision"):
        load_config("default", ["precision=fp16"])
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            resolve_device(load_config("default", ["device=cuda"]))


def test_bf16_autocast_only_where_the_cpu_has_bf16_instructions():
    cpu = torch.device("cpu")
    # plain AVX-512: oneDNN would emulate bf16 (slower than fp32), so auto keeps fp32
    assert not bf16_supported(cpu, {"avx512_f": True, "avx512_bf16": False, "amx_bf16": False})
    assert not bf16_supported(cpu, {})
    assert bf16_supported(cpu, {"avx512_f": True, "avx512_bf16": True})
    assert bf16_supported(cpu, {"amx_bf16": True, "amx_tile": True})


def test_the_cli_trains_with_algo_ppo_and_refuses_a_bad_resume(tmp_path, capsys):
    own = ["total_steps=512", "eval.every=0", "final_eval.games=0", "self_play.enabled=false"]
    keys = {o.split("=")[0] for o in own}   # the command line takes each key once
    assert train_main(["default", *(o for o in TINY if o.split("=")[0] not in keys), *own,
                       f"run_dir={tmp_path / 'ok'}"]) == 0
    assert (tmp_path / "ok" / "model.safetensors").is_file()
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a model")
    assert train_main(["default", *TINY, f"resume={bad}", f"run_dir={tmp_path / 'x'}"]) == 2
    err = capsys.readouterr().err
    assert "bad.safetensors" in err and "Traceback" not in err


@pytest.mark.parametrize("override, message", [
    ("opponents={'0': 1}", r"^opponents: unknown agent '0'"),
    ("eval.opponents=[greedy, nobody]", r"^eval.opponents: unknown agent 'nobody'"),
    ("final_eval.opponents=[ppo-classic-2p]", r"^final_eval.opponents: .*'classic' rules"),
])
def test_an_agent_a_single_table_run_cannot_make_fails_before_anything_is_written(
        tmp_path, capsys, override, message):
    """As a mixture's tables, a single-table run makes every agent it names (opponents, the
    evaluations' opponents) before its run folder is written: one error naming the field."""
    run_dir = tmp_path / "run"
    with pytest.raises(ValueError, match=message):
        train(load_config("default", [override, "progress=false", f"run_dir={run_dir}"]))
    assert not run_dir.exists()
    capsys.readouterr()
    # the console script: the same error, one line, no traceback
    assert train_main(["default", override, "progress=false", f"run_dir={run_dir}"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert re.search(r"ono-train: error: (eval\.|final_eval\.)?opponents: ", err), err
    assert not run_dir.exists()


@pytest.mark.parametrize("name, raised, program", [("SIGINT", KeyboardInterrupt, "ono-train"),
                                                  ("SIGTERM", SystemExit, "ono-train"),
                                                  ("SIGTERM", SystemExit, "ono-exploit")])
def test_ctrl_c_or_sigterm_stops_after_the_update_and_saves_the_model(name, raised, program,
                                                                     tmp_path, monkeypatch,
                                                                     capsys):
    import signal

    import ono_env.train.ppo as ppo
    calls = []
    sig = getattr(signal, name)

    def sample_then_interrupt(logits, gen):
        calls.append(1)
        if len(calls) == 70:   # in the second rollout (64 steps a rollout)
            signal.raise_signal(sig)
        return sample(logits, gen)
    monkeypatch.setattr(ppo, "sample", sample_then_interrupt)
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    run_dir = tmp_path / "run"
    with pytest.raises(raised) as stopped:   # the signals the console script passes
        train(load_config("default", TINY + ["total_steps=100000", "eval.every=0",
                                             f"run_dir={run_dir}"]),
              stop_signals=("SIGINT", "SIGTERM"), program=program)
    if raised is SystemExit:
        assert stopped.value.code == 128 + signal.SIGTERM   # 143, as a shell reports it
    assert {s: signal.getsignal(s) for s in before} == before
    err = capsys.readouterr().err
    assert "stopping after the rollout under way and one minibatch of its update" in err
    # no evaluation is named where none is made (before: "(or the evaluation under way, one
    # table's)", in ono-exploit's message too)
    assert "evaluation under way" not in err
    assert "interrupted after 2,048 of 100,000 steps" in err
    assert "so are the in-training evaluations" not in err   # eval.every=0: none (before: said)
    assert (f"{program}: Ctrl-C:" if name == "SIGINT" else f"{program}: SIGTERM:") in err
    # before: ono-exploit's run said "ono-train: SIGTERM" and offered resume=, which it has not
    assert ("resume=<it> carries on" in err) == (program == "ono-train")
    assert read_metadata(run_dir / "model.safetensors")["training_steps"] == 2048   # two rollouts
    assert (run_dir / "model.optimizer.safetensors").is_file()
    assert not (run_dir / "final_eval.json").exists()


class _GoneStderr:
    """A stderr whose reader goes away once training is under way (``2>&1 | head``, a
    ``tee`` ended by the Ctrl-C); what the run said before it is kept."""

    def __init__(self):
        self.before = []

    def write(self, text):
        if R.StopOnInterrupt.active is None:
            self.before.append(text)
            return len(text)
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        pass


def test_a_reader_that_goes_away_stops_training_with_the_model_saved(tmp_path, monkeypatch):
    """Before: the evaluation line met the broken pipe, and the run ended at once, its
    model lost (status 141, nothing said); now it stops as a signal would, the model saved,
    and ends with SIGPIPE's status."""
    import signal

    monkeypatch.setattr("sys.stderr", _GoneStderr())
    run_dir = tmp_path / "run"
    with pytest.raises(SystemExit) as stopped:
        train(load_config("default", TINY + ["total_steps=100000", "eval.every=1024",
                                             f"run_dir={run_dir}"]),
              stop_signals=("SIGINT", "SIGTERM"))
    assert stopped.value.code == 128 + signal.SIGPIPE
    assert read_metadata(run_dir / "model.safetensors")["training_steps"] == 1024   # its eval
    assert (run_dir / "model.optimizer.safetensors").is_file()
    assert R.StopOnInterrupt.active is None   # the training is over: say() raises again


def test_a_ctrl_c_whose_message_cannot_be_written_still_saves_the_model(tmp_path, monkeypatch):
    """Before: the handler's own line raised into the training (``2>&1 | tee`` ended by the
    same Ctrl-C, a closed terminal), and the run ended without its model."""
    import signal

    import ono_env.train.ppo as ppo
    calls = []

    def sample_then_interrupt(logits, gen):
        calls.append(1)
        if len(calls) == 70:
            signal.raise_signal(signal.SIGINT)
        return sample(logits, gen)
    monkeypatch.setattr(ppo, "sample", sample_then_interrupt)
    monkeypatch.setattr("sys.stderr", _GoneStderr())
    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        train(load_config("default", TINY + ["total_steps=100000", "eval.every=0",
                                             f"run_dir={run_dir}"]),
              stop_signals=("SIGINT",))
    assert read_metadata(run_dir / "model.safetensors")["training_steps"] == 2048
    assert (run_dir / "model.optimizer.safetensors").is_file()


def test_an_evaluation_due_after_a_ctrl_c_is_left_out(tmp_path, monkeypatch, capsys):
    """Before: an evaluation due after the stop was asked still played every table (and a
    long one held the stop for minutes)."""
    import signal

    import ono_env.train.ppo as ppo
    calls = []

    def sample_then_interrupt(logits, gen):
        calls.append(1)
        if len(calls) == 70:   # in the second rollout, whose end is an evaluation's step
            signal.raise_signal(signal.SIGINT)
        return sample(logits, gen)
    monkeypatch.setattr(ppo, "sample", sample_then_interrupt)
    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        train(load_config("default", TINY + ["total_steps=100000", "eval.every=1024",
                                             f"run_dir={run_dir}"]),
              stop_signals=("SIGINT",))
    steps = {int(r.split(",")[0]) for r in (run_dir / "eval.csv").read_text().splitlines()[1:]}
    assert steps == {1024}
    err = capsys.readouterr().err
    assert "(or the evaluation under way, one table's)" in err
    assert "; so are the in-training evaluations" in err


def test_a_save_stopped_between_its_files_leaves_no_model_without_adams_state(tmp_path,
                                                                              monkeypatch):
    """Adam's state is written first, the model last (before: a second Ctrl-C between them
    left a model whose resume started Adam afresh without a word)."""
    import ono_env.train.ppo as ppo
    written = []
    real = ppo.write_whole

    def write_then_stop(path, data, what, **kw):
        written.append(Path(path).name)
        if what == "model file":
            raise KeyboardInterrupt
        return real(path, data, what, **kw)
    monkeypatch.setattr(ppo, "write_whole", write_then_stop)
    run_dir = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        train(load_config("default", TINY + ["eval.every=0", f"run_dir={run_dir}"]))
    assert written == ["model.optimizer.safetensors", "model.safetensors"]
    assert not (run_dir / "model.safetensors").exists()


@pytest.mark.parametrize("how", ["signal", "time limit"])
def test_a_long_update_ends_at_its_minibatch_for_ctrl_c_and_the_time_limit(how, tmp_path,
                                                                          monkeypatch, capsys):
    """Before: the loop looked at Ctrl-C and the clock only after an update, so a large
    ppo.n_epochs (here the most, 1,000) held the run past both (the update's minibatches are
    counted here, and more than 50 fail the test rather than wait for them)."""
    import signal

    import ono_env.train.ppo as ppo
    clip = torch.nn.utils.clip_grad_norm_
    calls = []

    def clip_and_count(params, norm):
        calls.append(1)
        if len(calls) > 50:
            raise AssertionError("the update went on after Ctrl-C or the time limit")
        if len(calls) == 3:   # the first update's third minibatch
            if how == "signal":
                signal.raise_signal(signal.SIGINT)
            else:   # the clock past the limit from here on
                monkeypatch.setattr(ppo.time, "perf_counter", lambda: clock() + 1e6)
        return clip(params, norm)
    clock = time.perf_counter
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", clip_and_count)
    run_dir = tmp_path / "run"
    cfg = load_config("default", TINY + ["total_steps=100000", "eval.every=0",
                                         "final_eval.games=0", "ppo.n_epochs=1000",
                                         f"run_dir={run_dir}"]
                      + (["time_limit_minutes=60"] if how == "time limit" else []))
    if how == "signal":
        with pytest.raises(KeyboardInterrupt):
            train(cfg)
    else:
        train(cfg)
    monkeypatch.undo()
    assert len(calls) == 3   # the minibatch under way ended the update
    assert read_metadata(run_dir / "model.safetensors")["training_steps"] == 1024   # one rollout
    capsys.readouterr()


def test_ctrl_c_handling_leaves_an_ignored_sigint_alone():
    import signal

    from ono_env.train.ppo import StopOnInterrupt
    term = signal.getsignal(signal.SIGTERM)
    StopOnInterrupt().restore()
    assert signal.getsignal(signal.SIGTERM) is term   # SIGTERM only where asked (ono-train):
    # a process pool stops its workers with it, and their training must stop at once
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        stop = StopOnInterrupt()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN   # not installed
        stop.restore()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)


def test_an_exploiters_run_name_is_a_valid_run_name():
    # before: a model named modèle.safetensors, or with a stem over 56 characters, made a run
    # name that the config refuses
    from ono_env.train.config import load_config
    from ono_env.train.exploit import run_name_of
    for target in ("runs/x/modèle.safetensors", "a" * 80 + ".safetensors", "greedy",
                   "mymod:MyAgent"):
        name = run_name_of(target)
        assert load_config("default", [f"name={name}"]).name == name
    assert run_name_of("runs/x/modèle.safetensors") == "exploit-mod-le"
    # a module's agent whole (before: cut at its first dot, exploit-my_pkg)
    assert run_name_of("my_pkg.agents:Clever") == "exploit-my_pkg.agents-Clever"
    assert run_name_of("pimc:8") == "exploit-pimc-8"


def test_a_resumed_part_samples_from_a_stream_of_its_own(tmp_path, monkeypatch):
    # the first part's generator is seeded with the seed, a resumed part's with the seed plus
    # its start step (as its deals are): not the first part's draws over again
    import ono_env.train.ppo as ppo

    seeds = []
    real = ppo.sample
    monkeypatch.setattr(ppo, "sample", lambda z, gen: (seeds.append(gen.initial_seed()), real(z, gen))[1])
    over = ["num_envs=4", "ppo.n_steps=16", "ppo.batch_size=64", "ppo.n_epochs=1", "eval.every=0",
            "final_eval.games=0", "progress=false", "torch_threads=1", "seed=7"]
    first = train(load_config("default", over + ["total_steps=64", f"run_dir={tmp_path / 'a'}"]))
    assert set(seeds) == {7}
    seeds.clear()
    train(load_config("default", over + ["total_steps=128", f"resume={first['model']}",
                                         f"run_dir={tmp_path / 'b'}"]))
    assert set(seeds) == {7 + 64}


def test_a_resumed_part_carries_each_tables_evaluation_length_and_stall_counts(tiny_run, tmp_path):
    # before: a resumed part started with no learner game length, so an eval.games of auto
    # played another number of games at the same step than the run that went on
    from safetensors.numpy import load_file, save_file

    import ono_env.train.ppo as ppo

    _, res = tiny_run
    run_dir = Path(res["run_dir"])
    curve = [line.split(",") for line in (run_dir / "eval.csv").read_text().splitlines()[1:]]
    state = ppo.read_tables_state(run_dir / "checkpoints" / "step_1024.safetensors")
    (label,) = state
    # the last evaluation's longest mean length; counted choices reset at every evaluation
    assert state[label].eval_length == max(float(r[7]) for r in curve if r[0] == "1024") > 0
    assert state[label].stall_counts == (0, 0, 0, 0)
    assert ppo.read_tables_state(run_dir / "model.safetensors")[label].eval_length == max(
        float(r[7]) for r in curve if r[0] == "2048")
    # a checkpoint whose learner games were long: the resumed part's evaluation at auto plays
    # the fewer games those lengths call for, as the run that went on would have
    ckpt = tmp_path / "ckpt" / "step_1024.safetensors"
    ckpt.parent.mkdir()
    shutil.copy(run_dir / "checkpoints" / "step_1024.safetensors", ckpt)
    opt_state = load_file(str(run_dir / "checkpoints" / "step_1024.optimizer.safetensors"))

    def with_state(text):
        save_file(opt_state, str(ckpt.with_name("step_1024.optimizer.safetensors")),
                  metadata={"training_steps": "1024", "tables_state": text})

    def refused_resume(match):
        """The resume from ``ckpt`` is refused with ``match``, before anything is written."""
        with pytest.raises(ValueError, match=match):
            train(load_config("default", over + ["total_steps=2048", f"resume={ckpt}",
                                                 f"run_dir={tmp_path / 'b'}"]))
        assert not (tmp_path / "b").exists()

    with_state(json.dumps({label: {"eval_length": 6000.0, "stall_counts": [1, 2, 3, 4]}}))
    assert ppo.read_tables_state(ckpt)[label] == ppo.TableState(6000.0, (1, 2, 3, 4))
    over = [o for o in TINY if not o.startswith(("eval.games", "total_steps"))]
    train(load_config("default", over + ["total_steps=2048", f"resume={ckpt}", "eval.games=auto",
                                         "final_eval.games=0", f"run_dir={tmp_path / 'a'}"]))
    resumed = (tmp_path / "a" / "eval.csv").read_text().splitlines()[1:]
    # 120,000 decisions at 6,000 a game: the fewest, 200 games for each opponent
    assert [line.split(",")[2] for line in resumed] == ["200", "200"]
    # a tables_state that is not one is refused, naming the file, before anything is written
    for bad in ("[]", "{", json.dumps({label: {"eval_length": -1.0, "stall_counts": [0, 0, 0, 0]}}),
                json.dumps({label: {"eval_length": 1.0, "stall_counts": [0, 0, 0]}}),
                json.dumps({label: {"eval_length": 1.0, "stall_counts": [2**63, 0, 0, 0]}}),
                json.dumps({label: {"eval_length": True, "stall_counts": [0, 0, 0, 0]}})):
        with_state(bad)
        why = " \\(Expecting property name .* at line 1, column 2\\)" if bad == "{" else ""
        refused_resume(r"step_1024\.optimizer\.safetensors' holds a tables_state that is not "
                       rf"one{why}; allowed: ")
    # another checkpoint's Adam state beside the model (or one half written): refused, so
    # that neither its moments nor its tables' state are carried on by mistake
    for steps in ("2048", None):
        save_file(opt_state, str(ckpt.with_name("step_1024.optimizer.safetensors")),
                  metadata=None if steps is None else {"training_steps": steps})
        shown = "no step count" if steps is None else "2048 steps"
        refused_resume(rf"step_1024\.optimizer\.safetensors' holds Adam's state at {shown}, "
                       r"its model file .* is at 1,024 steps; allowed: the optimizer file "
                       r"written with")
    # Adam's state of another model file at the same step count (another run's checkpoint
    # put beside this one; before: taken), told apart by the model's SHA-256 kept beside it
    from safetensors import safe_open

    from ono_env.agents.learned import model_sha256

    with safe_open(str(run_dir / "checkpoints" / "step_1024.optimizer.safetensors"), "np") as f:
        assert f.metadata()["model_sha256"] == model_sha256(ckpt)
    save_file(opt_state, str(ckpt.with_name("step_1024.optimizer.safetensors")),
              metadata={"training_steps": "1024",
                        "model_sha256": model_sha256(run_dir / "model.safetensors")})
    refused_resume(r"step_1024\.optimizer\.safetensors' holds Adam's state of another model "
                   r"file than .*step_1024\.safetensors' \(its SHA-256 differs")
    # a network grown on resume starts Adam afresh: it reads nothing beside the model file
    # (neither Adam's state nor the tables'), so even a damaged file there does not stop it
    ckpt.with_name("step_1024.optimizer.safetensors").write_bytes(b"not a safetensors file")
    grown = train(load_config("default", [o for o in over if not o.startswith("policy.net_arch")]
                              + ["policy.net_arch=[48]", "resume_grow=true", "total_steps=2048",
                                 f"resume={ckpt}", "final_eval.games=0", f"run_dir={tmp_path / 'g'}"]))
    assert grown["steps"] == 2048


def test_the_optimizer_file_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """Before: model.optimizer.safetensors was written in place, so a run killed while it
    wrote left a part of it, which resume then refused. Now it goes through a temporary file
    renamed, as the model file: a write that fails leaves the old file as it was."""
    import os

    from ono_env.observation import observation_scale
    from ono_env.rules import resolve_rules
    from ono_env.train.ppo import optimizer_path, save_checkpoint

    rules = resolve_rules("basic", num_players=2)
    model = ActorCritic(observation_scale(rules), [8], "tanh", True)
    opt = torch.optim.Adam(model.parameters())
    model(torch.zeros(1, len(observation_scale(rules))))[1].sum().backward()
    opt.step()
    path = save_checkpoint(model, opt, tmp_path / "m.safetensors", rules, 1024, {})
    old = optimizer_path(path).read_bytes()
    replace = os.replace

    def fail_for_the_optimizer(src, dst):
        if str(dst).endswith(".optimizer.safetensors"):
            raise OSError(28, "No space left on device")
        return replace(src, dst)
    monkeypatch.setattr(os, "replace", fail_for_the_optimizer)
    with pytest.raises(ValueError, match=r"^cannot write optimizer state file .*m\.optimizer\."
                                         r"safetensors': No space left on device$"):
        save_checkpoint(model, opt, path, rules, 2048, {})
    assert optimizer_path(path).read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.optimizer.safetensors",
                                                          "m.safetensors"]   # no part left


def test_max_grad_norm_above_zero():
    # before: 0 was taken, and clipped every gradient to nothing (not "no clipping")
    with pytest.raises(ValueError, match=r"ppo\.max_grad_norm"):
        load_config("default", ["ppo.max_grad_norm=0"])
    assert load_config("default", ["ppo.max_grad_norm=1e9"]).ppo.max_grad_norm == 1e9


def test_a_loss_that_is_not_finite_stops_the_run_at_its_update_naming_the_loss_weights(
        tmp_path, nan_loss):
    """Before: ppo.vf_coef=1e300 trained to the end with NaN weights, and only the final save
    said the run diverged, naming the learning rate alone."""
    with pytest.raises(ValueError, match=r"^training diverged by 1,024 steps, nothing saved then "
                                         r"\(the update's loss is not finite\); allowed: "
                                         r"a smaller ppo.learning_rate \(this run's: .*\) or "
                                         r"smaller loss weights \(ppo.vf_coef: 0.5, "
                                         r"ppo.ent_coef: 0.01\)"):
        train(load_config("default", TINY + ["total_steps=200000", "eval.every=0",
                                             f"run_dir={tmp_path / 'r'}"]))
    assert not (tmp_path / "r" / "model.safetensors").exists()


def test_weights_that_blew_up_are_not_saved_and_the_learning_rate_is_named(tmp_path):
    from ono_env.observation import observation_scale
    from ono_env.rules import resolve_rules
    from ono_env.train.ppo import save_checkpoint

    rules = resolve_rules("basic", num_players=2)
    model = ActorCritic(observation_scale(rules), [8], "tanh", True)
    with torch.no_grad():
        model.pi.weight.fill_(float("inf"))
    opt = torch.optim.Adam(model.parameters())
    cfg = load_config("default", ["ppo.learning_rate=0.5"]).to_dict()
    with pytest.raises(ValueError, match=r"training diverged by 1,024 steps, nothing saved then "
                                         r"\(.*\); allowed: a smaller ppo.learning_rate \(this "
                                         r"run's: 0.5\)"):
        save_checkpoint(model, opt, tmp_path / "m.safetensors", rules, 1024, cfg)
    assert list(tmp_path.iterdir()) == []
    # a healthy model that cannot be written says so, not that training diverged
    healthy = ActorCritic(observation_scale(rules), [8], "tanh", True)
    (tmp_path / "m.safetensors").mkdir()
    with pytest.raises(ValueError, match=r"^model file: .*m.safetensors' is a folder; give a "
                                         r"file name$"):
        save_checkpoint(healthy, opt, tmp_path / "m.safetensors", rules, 1024, cfg)
    # and the signals a training stops at are checked (a list, tuple or set of names)
    from ono_env.train.run import check_stop_signals
    assert sorted(check_stop_signals({"SIGINT", "SIGTERM"})) == ["SIGINT", "SIGTERM"]
    for bad in ("SIGTERM", ("SIGTREM",), b"SIGINT", [1]):
        with pytest.raises(ValueError, match=r"stop_signals=.*; allowed: a sequence of SIGINT, "
                                             r"SIGTERM, SIGHUP \(names\)$"):
            train(load_config("default", TINY), stop_signals=bad)


def test_a_run_folder_whose_name_cannot_be_a_label_is_refused_before_training(tmp_path,
                                                                              monkeypatch):
    """The folder's name is its models' label: before, a name with a control or formatting
    character, or run_dir=. (an empty name), trained the whole budget and was refused only
    as the model was saved."""
    for bad in (tmp_path / "bidi\u202edir", tmp_path / "tab\there", Path("/"),
                tmp_path / ("x" * 101)):
        with pytest.raises(ValueError, match=r"its folder's name is the label its models play "
                                             r"under; allowed: a folder whose name is printable, "
                                             r"of 1 to 100 characters"):
            R.check_run_dir(bad, None)
        assert not bad.exists() or bad == Path("/")
    monkeypatch.chdir(tmp_path)
    assert R.run_label(Path(".")) == tmp_path.name   # the current folder's own name
    R.check_run_dir(Path("."), None)
    R.check_run_dir(tmp_path / ("x" * 100), None)


def test_a_closed_terminal_asks_a_training_to_stop_and_save():
    """ono-train and ono-exploit stop on SIGHUP as on SIGTERM, saving the model (before: a
    closed terminal ended the run at once, and the console scripts' Stopped did too)."""
    import signal

    assert R.STOP_SIGNALS == ("SIGINT", "SIGTERM", "SIGHUP")
    before = signal.getsignal(signal.SIGHUP)
    interrupt = R.StopOnInterrupt(R.STOP_SIGNALS, program="ono-train")
    try:
        signal.raise_signal(signal.SIGHUP)
        assert interrupt.asked and interrupt.signum == signal.SIGHUP
    finally:
        interrupt.restore()
    assert signal.getsignal(signal.SIGHUP) is before


def test_a_run_whose_reader_goes_away_saves_its_model_and_ends_quietly(tmp_path):
    """The whole path, in a process: its stderr read until training starts, then the pipe
    closed (``2>&1 | head``): the next evaluation line stops training, the model is saved,
    and the run ends with SIGPIPE's status (before: at once, status 141, no model)."""
    import subprocess
    import sys

    run_dir = tmp_path / "run"
    given = [x for x in TINY if not x.startswith(("total_steps=", "eval.every="))]
    proc = subprocess.Popen([sys.executable, "-m", "ono_env.train.cli", "default", *given,
                             "total_steps=10000000", "eval.every=1024", "time_limit_minutes=null",
                             f"run_dir={run_dir}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    for line in proc.stderr:   # the run's opening lines, up to the one that starts training
        if line.startswith(b"training for"):
            break
    proc.stderr.close()
    assert proc.wait(timeout=300) == 141
    steps = read_metadata(run_dir / "model.safetensors")["training_steps"]
    assert 1024 <= steps < 10_000_000 and (run_dir / "model.optimizer.safetensors").is_file()
