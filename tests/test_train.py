"""Training smoke tests (tiny budgets): config, overrides, a MaskablePPO run (``algo:
maskable_ppo``) end to end, checkpoints that load back as agents (their
ono_policy.safetensors member), and the metadata checks. The project's own trainer (``algo:
ppo``) has tests/test_train_ppo.py."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from ono_env.agents.learned import load_agent, read_metadata
from ono_env.apps.play import play
from ono_env.arena import run_arena
from ono_env.train.cli import main as train_main
from ono_env.train.config import TrainConfig, describe_fields, load_config
from ono_env.train.maskable_ppo import train
from ono_env.train.run import learning_rate_schedule

CONFIGS = Path(__file__).resolve().parent.parent / "configs" / "train"

TINY = ["algo=maskable_ppo", "policy.shared=false", "total_steps=2048", "num_envs=16",
        "ppo.n_steps=64", "ppo.batch_size=256",
        "ppo.n_epochs=1", "policy.net_arch=[32]", "eval.every=1024", "eval.games=16",
        "eval.opponents=[random, greedy]", "final_eval.games=24",
        "final_eval.opponents=[random, greedy]", "final_eval.workers=2", "self_play.enabled=true",
        "self_play.snapshot_every=1024", "self_play.max_snapshots=1", "progress=false",
        "torch_threads=1"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    cfg = load_config(CONFIGS / "default.yaml", TINY + [f"run_dir={run_dir}"])
    result = train(cfg)
    return cfg, result


def test_maskable_ppo_prints_a_line_per_evaluation(tmp_path, capsys):
    """algo maskable_ppo says each evaluation on the console, as algo ppo does, with the
    progress bar off too."""
    cfg = load_config(CONFIGS / "default.yaml", TINY + ["final_eval.games=0",
                                                        "self_play.enabled=false",
                                                        f"run_dir={tmp_path / 'run'}"])
    import random

    import torch
    capsys.readouterr()

    def seed_and_draw(draw):
        random.seed(5)
        np.random.seed(5)
        torch.manual_seed(5)
        draw()
        return random.random(), np.random.random(), torch.rand(1).item()

    # the caller's global generators as they were (before: SB3 reseeded all three to cfg.seed)
    assert seed_and_draw(lambda: train(cfg)) == seed_and_draw(lambda: None)
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("eval at step")]
    assert len(lines) == 2 and "win rate vs random" in lines[0] and "greedy" in lines[0]


def test_maskable_ppo_evaluates_with_the_runs_decision_limit(tmp_path, capsys):
    """Before: its in-training evaluations played games to the engine's own limit, where the
    run's max_decisions cut algo ppo's (docs/training.md: "the same cut")."""
    cfg = load_config(CONFIGS / "default.yaml", TINY + [
        "final_eval.games=0", "self_play.enabled=false", "max_decisions=30",
        "eval.opponents=[greedy]", f"run_dir={tmp_path / 'run'}"])
    train(cfg)
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("eval at step")]
    lengths = [float(re.search(r"mean length ([\d.,]+) decisions", x).group(1)) for x in lines]
    assert lines and all(n <= 30 for n in lengths), lines


def test_maskable_ppo_counts_its_learners_stalling_choices(tmp_path, capsys, monkeypatch):
    """Before: algo maskable_ppo counted none of its learner's choices, so the stall warning's
    third trigger (a learner that mostly stalls where it may and wins far under its fair
    share: at 8-10 players, where the other seats end its games in time, the only one that
    fires) never fired there. Here the rollouts' learner accuses wherever it may and else draws
    wherever it may, and its evaluations are scored as lost; the same run sampling its
    untrained policy, scored the same, is not warned of."""
    import torch
    from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy

    import ono_env.arena as arena
    from ono_env.cards import A_CATCH, A_DRAW

    forward, evaluate = MaskableActorCriticPolicy.forward, arena.evaluate

    def stalling(self, obs, deterministic=False, action_masks=None):
        actions, values, logp = forward(self, obs, deterministic, action_masks)
        m = torch.as_tensor(np.asarray(action_masks, bool)).reshape(len(actions), -1)
        return torch.where(m[:, A_CATCH], A_CATCH, torch.where(m[:, A_DRAW], A_DRAW, actions)), values, logp

    monkeypatch.setattr(arena, "evaluate", lambda *a, **k: [{**r, "win_rate": 0.0}
                                                            for r in evaluate(*a, **k)])
    for name, stalls in (("sampled", False), ("staller", True)):
        if stalls:
            monkeypatch.setattr(MaskableActorCriticPolicy, "forward", stalling)
        train(load_config(CONFIGS / "default.yaml", TINY + [
            "rules=ono", "num_players=8", "total_steps=1024", "final_eval.games=0",
            "self_play.enabled=false", "eval.opponents=[greedy]", f"run_dir={tmp_path / name}"]))
        err = capsys.readouterr().err
        assert "eval at step 1,024" in err
        assert ("warning: the learner wins 0.0% of its games (fair share 12.5%) and mostly "
                "stalls where it may (catch 100%" in err) is stalls, err
        assert ("warning" in err) is stalls, err


@pytest.mark.parametrize("total, said", [(16, False), (4096, True)])
def test_maskable_ppo_names_the_time_limit_only_where_it_cut_the_steps(total, said, tmp_path,
                                                                       capsys):
    """Before: a run that had its total_steps when the clock ran out (SB3 steps all 16
    games at once) said "time limit of ... reached after 16 of 16 steps"; algo ppo says it
    only where the limit cut the steps short."""
    cfg = load_config(CONFIGS / "default.yaml", TINY + [
        "final_eval.games=0", "self_play.enabled=false", "eval.every=0", f"total_steps={total}",
        "time_limit_minutes=1e-9", f"run_dir={tmp_path / 'run'}"])
    train(cfg)
    assert ("time limit of 1e-09 min reached after 16 of" in capsys.readouterr().out) is said


def test_maskable_ppo_refuses_an_unknown_opponent_by_its_field_before_writing(tmp_path):
    """Before: the run's folder and config.yaml were written first, and the error named no
    field."""
    cfg = load_config(CONFIGS / "default.yaml", TINY + [
        "opponents={nosuch: 1}", f"out_dir={tmp_path / 'out'}"])
    with pytest.raises(ValueError, match=r"^opponents: unknown agent 'nosuch'"):
        train(cfg)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name, raised", [("SIGINT", KeyboardInterrupt), ("SIGTERM", SystemExit)])
def test_maskable_ppo_saves_its_model_on_ctrl_c_or_sigterm(name, raised, tmp_path, monkeypatch,
                                                         capsys):
    """Before: Ctrl-C or SIGTERM to a ``maskable_ppo`` run ended it with nothing saved (only
    config.yaml and tb/ in its folder). Now it stops at its rollout's next step and writes
    model.zip, with no final evaluation, as algo ppo does."""
    import signal

    from ono_env.envs.sb3 import OnoVecEnv
    sig = getattr(signal, name)
    step_wait = OnoVecEnv.step_wait
    calls = []

    def step_then_signal(self):
        calls.append(1)
        if len(calls) == 70:   # in the second rollout (64 steps a rollout)
            signal.raise_signal(sig)
        return step_wait(self)
    monkeypatch.setattr(OnoVecEnv, "step_wait", step_then_signal)
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    run_dir = tmp_path / "run"
    cfg = load_config(CONFIGS / "default.yaml", TINY + ["total_steps=100000", "eval.every=0",
                                                        "self_play.enabled=false",
                                                        f"run_dir={run_dir}"])
    with pytest.raises(raised) as stopped:
        train(cfg, stop_signals=("SIGINT", "SIGTERM"))
    if raised is SystemExit:
        assert stopped.value.code == 128 + signal.SIGTERM
    assert {s: signal.getsignal(s) for s in before} == before
    err = capsys.readouterr().err
    assert "stopping at the rollout's next step" in err
    assert "interrupted after 1,120 of 100,000 steps: model saved to" in err   # 70 x 16 games
    assert (run_dir / "model.zip").is_file() and not (run_dir / "final_eval.json").exists()
    assert len(calls) == 70


def test_every_shipped_config_loads():
    names = sorted(p.stem for p in CONFIGS.glob("*.yaml"))
    assert "default" in names and len(names) >= 3
    for p in CONFIGS.glob("*.yaml"):
        cfg = load_config(p)
        assert isinstance(cfg, TrainConfig) and cfg.name == p.stem
        assert load_config(p.stem) == cfg          # shipped configs are found by name


def test_every_config_field_has_a_one_line_docstring():
    rows = describe_fields()
    assert len(rows) > 30
    for name, _, doc in rows:
        assert doc and "\n" not in doc, name


def test_overrides_reach_nested_fields_and_bad_ones_are_named():
    cfg = load_config(CONFIGS / "default.yaml", ["ppo.learning_rate=1e-4", "opponents={greedy: 1}",
                                                 "policy.net_arch=[64, 64]"])
    assert cfg.ppo.learning_rate == 1e-4
    assert cfg.opponents == {"greedy": 1}
    assert cfg.policy.net_arch == [64, 64]
    with pytest.raises(ValueError, match=r"unknown config field 'ppo.lr'; allowed: ppo.learning_rate"):
        load_config(None, ["ppo.lr=1"])
    with pytest.raises(ValueError, match=r"'policy.activation' = 'gelu': Input should be 'tanh' or 'relu'"):
        load_config(None, ["policy.activation=gelu"])
    with pytest.raises(ValueError, match="write key=value"):
        load_config(None, ["total_steps"])
    # an empty value (resume=$CKPT with CKPT unset) is refused, not read as null
    for empty in ("resume=", "time_limit_minutes=  "):
        with pytest.raises(ValueError, match=r"no value after '='; allowed: a value, or null"):
            load_config(None, [empty])
    assert load_config(None, ["time_limit_minutes=null"]).time_limit_minutes is None
    assert load_config(None, ["total_steps=1", "total_steps=2"]).total_steps == 2   # the last
    # bounds where a value passed the config before and failed in the run, or ruined it
    for override, why in [("max_decisions=20000000", "allowed: 'auto', or an integer at least 1 "
                                                      "and at most 10,000,000"),
                          ("time_limit_minutes=1e308", "less than or equal to 1000000"),
                          ("ppo.learning_rate=1e6", "less than or equal to 1"),
                          ("ppo.learning_rate_end=2", "less than or equal to 1"),
                          ("ppo.clip_range=0", "greater than 0"),
                          ("eval.opponents=[greedy, color, greedy]",   # not "should be 'auto'"
                           "= ['greedy', 'color', 'greedy']: 'greedy' named more than once; "
                           "allowed: each agent once"),
                          ("final_eval.opponents=[color, color]", "'color' named more than once")]:
        with pytest.raises(ValueError, match=re.escape(why)):
            load_config(None, [override])


def test_learning_rate_decays_over_steps_or_time_whichever_ends_first():
    by_steps = learning_rate_schedule(3e-4, 1e-4)
    assert by_steps(1.0) == pytest.approx(3e-4) and by_steps(0.5) == pytest.approx(2e-4)
    now = [100.0]
    by_time = learning_rate_schedule(3e-4, 1e-4, seconds=60.0, clock=lambda: now[0])
    assert by_time(1.0) == pytest.approx(3e-4)
    now[0] = 130.0                      # half the time gone, a tenth of the steps
    assert by_time(0.9) == pytest.approx(2e-4)
    assert by_time(0.2) == pytest.approx(1.4e-4)   # steps ahead of the clock
    now[0] = 500.0                      # past the limit: the end value, never below
    assert by_time(0.9) == pytest.approx(1e-4)
    with pytest.raises(ValueError, match=r"'final_eval.workers' = 0: Input should be greater than or equal to 1"):
        load_config(None, ["final_eval.workers=0"])


def test_cli_prints_resolved_config_and_refuses_bad_input(capsys):
    assert train_main(["default", "total_steps=1234", "--print-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["total_steps"] == 1234
    # the flag may come before or between the overrides too
    assert train_main(["default", "--print-config", "total_steps=1235", "seed=3"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert (printed["total_steps"], printed["seed"]) == (1235, 3)
    assert train_main(["default", "seed=4", "--print-config", "total_steps=1236"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert (printed["total_steps"], printed["seed"]) == (1236, 4)
    assert train_main(["no-such-config"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ono-train: error: cannot read training config 'no-such-config'")
    assert "default" in err
    assert train_main(["default", "opponents={genius: 1}"]) == 2
    err = capsys.readouterr().err   # one line, before the probe games print their notes
    assert err.startswith("ono-train: error: opponents: unknown agent 'genius'") and err.count("\n") == 1



@pytest.mark.parametrize("field, most, said", [
    # before: n_epochs=10**12 kept one update running for ever, and a count of games past
    # the arena's limit was refused only after training, by a message naming no field
    ("ppo.n_epochs", 1_000, ": Input should be less than or equal to 1000"),
    # ('auto' or a count: the whole of what it takes)
    ("eval.games", 100_000_000, "; allowed: 'auto', or an integer at least 1 and at most 100,000,000"),
    ("final_eval.games", 100_000_000, "; allowed: 'auto', or an integer at least 0 and at most 100,000,000"),
    ("self_play.max_snapshots", 1_000, ": Input should be less than or equal to 1000")])
def test_counts_have_an_upper_bound_checked_before_training(capsys, field, most, said):
    assert train_main(["default", f"{field}={most + 1}", "--print-config"]) == 2
    err = capsys.readouterr().err
    assert f"config field '{field}' = {most + 1}{said}" in err and err.count("\n") == 1
    assert train_main(["default", f"{field}={most}", "--print-config"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    section, key = field.split(".")
    assert printed[section][key] == most


@pytest.mark.parametrize("name", ["1_e5", "1e5", "2.5", "1.e-3"])
def test_a_dumped_config_and_rules_load_back_whatever_their_names(tmp_path, name):
    # before: PyYAML wrote name: 1_e5 plain, which the project's reader refuses as a number
    # (so a run's config.yaml could not be trained from, nor its folder resumed in)
    from ono_env.rules import RuleSet
    from ono_env.train.config import dump_config
    from ono_env.train.run import is_run_config

    cfg = load_config("default", [f'name="{name}"'])
    (tmp_path / "config.yaml").write_text(dump_config(cfg))
    assert load_config(tmp_path / "config.yaml") == cfg
    assert is_run_config(tmp_path / "config.yaml")
    (tmp_path / "r.yaml").write_text(RuleSet.preset("ono").replace(name=name).to_yaml())
    assert RuleSet.load(tmp_path / "r.yaml").name == name


@pytest.mark.parametrize("algo", ["ppo", "maskable_ppo"])
def test_the_ray_fields_are_read_only_by_rllib_ppo(algo):
    # before: num_env_runners=7 with another algo was accepted and never read
    for override, shown in (("num_env_runners=7", "num_env_runners=7"),
                            ("ray_address=auto", "ray_address='auto'")):
        with pytest.raises(ValueError, match=rf"{shown} is read only by algo: rllib_ppo "):
            load_config("default", [f"algo={algo}", "policy.shared=false", override])
    load_config("default", [f"algo={algo}", "policy.shared=false", "num_env_runners=2"])
    assert load_config("rllib-basic", ["num_env_runners=7"]).num_env_runners == 7


def test_the_seed_and_minibatches_the_sb3_and_rllib_trainers_take():
    # before: each failed after the run folder was made (Seed must be between 0 and
    # 2**32 - 1; NaN logits at MaskablePPO's first update)
    sb3 = ["algo=maskable_ppo", "policy.shared=false"]
    rllib = ["algo=rllib_ppo", "policy.shared=false"]
    for overrides, message in (
            (sb3 + ["seed=4294967296"], "seed=4,294,967,296: algo maskable_ppo seeds NumPy's "
             "global generator, which takes at most 2**32 - 1; allowed with algo maskable_ppo: "
             "0 to 4,294,967,295"),
            (rllib + ["seed=4294967294"], "which takes at most 2**32 - 1 less num_env_runners "
             "(2: RLlib seeds each env runner with seed + its index); allowed with algo "
             "rllib_ppo: 0 to 4,294,967,293"),
            (sb3 + ["ppo.batch_size=16383"], "ppo.batch_size=16,383 leaves a minibatch of one "
             "step in each rollout (num_envs x ppo.n_steps = 16,384 steps)"),
            (sb3 + ["ppo.batch_size=1"], "ppo.batch_size=1 leaves a minibatch of one step")):
        with pytest.raises(ValueError, match=re.escape(message)):
            load_config("default", overrides)
    for fits in (sb3 + ["seed=4294967295", "ppo.batch_size=16382"], rllib + ["seed=4294967293"],
                 ["seed=4294967296", "ppo.batch_size=16383"]):   # algo ppo keeps them apart
        load_config("default", fits)


def test_an_rllib_rollout_is_checked_against_the_memory(monkeypatch):
    # before: not checked (RLlib's env runners keep their own), and a rollout of 313 GiB
    # was started
    import ono_env.train.run as run

    cfg = load_config("default", ["algo=rllib_ppo", "policy.shared=false", "num_envs=4096"])
    need = run.rollout_bytes(cfg, run.rules_of(cfg)) * 2
    memory = need * 3 // 4   # over with its two env runners, under with one
    monkeypatch.setattr(run, "memory_limit", lambda: memory)
    with pytest.raises(ValueError, match=re.escape(
            f"a rollout of num_envs=4,096 x ppo.n_steps=16 x num_env_runners=2 steps keeps "
            f"{need / 2**30:,.1f} GiB of observations and masks, and this process may hold "
            f"{memory / 2**30:,.1f} GiB (the machine's memory, or its container's limit); "
            f"allowed: a smaller num_envs or ppo.n_steps or "
            f"num_env_runners")):
        run.check_rollout_memory(cfg, run.rules_of(cfg))
    run.check_rollout_memory(load_config("default", ["num_envs=4096"]), run.rules_of(cfg))


def test_a_symbolic_link_to_nothing_is_named_so(tmp_path, monkeypatch, capsys):
    # before: "no such file" for the config and resume=, and "is a file, not a folder" for
    # out_dir and run_dir
    monkeypatch.chdir(tmp_path)
    Path("a").symlink_to("b")
    Path("b").symlink_to("a")
    Path("gone").symlink_to("nowhere")
    link = "a symbolic link that leads to no{} (a loop, or its target is gone)"
    for argv, message in (
            (["a"], f"cannot read training config 'a': {link.format(' file')}, and no shipped "),
            (["default", "resume=gone"], f"resume='gone': {link.format(' file')}, and no "),
            (["default", "out_dir=a/x"], f"out_dir 'a/x': 'a' is {link.format('thing')}; "
                                         f"allowed: a folder path"),
            (["default", "run_dir=gone"], f"run_dir 'gone': 'gone' is {link.format('thing')}"),
            (["default", "resume=nothing"], "resume='nothing': no such file, and no ")):
        assert train_main(argv + ["total_steps=1000", "progress=false"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"ono-train: error: {message}") and err.count("\n") == 1, err


@pytest.mark.parametrize("text, got", [("", "nothing \\(an empty file\\)"),
                                       ("# only a comment\n", "nothing"), ("~\n", "null$"),
                                       ("null  # none\n", "null$"), ("- 1\n", "list")])
def test_a_config_file_that_is_no_mapping_is_refused(tmp_path, capsys, text, got):
    # before: an empty file (or a comment, or ~) trained with every default, silently
    (tmp_path / "c.yaml").write_text(text)
    assert train_main([str(tmp_path / "c.yaml"), "--print-config"]) == 2
    assert re.match(rf"ono-train: error: training config '.*c.yaml': a mapping of fields is "
                    rf"needed \({{}} for every default\); got {got}", capsys.readouterr().err)
    (tmp_path / "c.yaml").write_text("{}\n")   # every default, said so
    assert train_main([str(tmp_path / "c.yaml"), "--print-config"]) == 0


SMALL = ["total_steps=64", "num_envs=4", "ppo.n_steps=16", "ppo.batch_size=32", "eval.every=0",
         "final_eval.games=0", "progress=false", "torch_threads=1"]


@pytest.mark.parametrize("overrides, field", [(["final_eval.games=100000000"], "final_eval.games"),
                                             (["eval.every=64", "eval.games=100000000"], "eval.games")])
def test_evaluations_too_large_for_memory_are_refused_before_training(tmp_path, capsys,
                                                                      monkeypatch, overrides, field):
    """Before: the evaluations' games were checked in the evaluations themselves: the final
    one failed after the whole training, the first in-training one before any model was
    saved."""
    import ono_env.game as G
    monkeypatch.setattr(G, "available_memory", lambda: 1 << 30)
    out = tmp_path / "runs"
    keys = {o.split("=", 1)[0] for o in overrides}   # each key once: the case's value stands
    assert train_main(["default", *(o for o in SMALL if o.split("=", 1)[0] not in keys),
                       "num_players=10", *overrides, f"out_dir={out}"]) == 2
    err = capsys.readouterr().err
    from ono_env.arena import record_bytes
    most = (1 << 30) // record_bytes(10) // 10 * 10   # whole rounds of its 10 seatings
    assert (f"{field}=100,000,000: the 100,000,000 games played need 95.7 GiB" in err
            and f"(at most {most:,} played here), a smaller {field}" in err), err
    assert not out.exists()


def test_a_config_whose_run_config_would_be_too_long_to_read_back_is_refused(tmp_path, capsys,
                                                                            monkeypatch):
    """Before: a mixture of 64 tables whose config was under the 64 KiB a config is read up
    to trained, and wrote a longer config.yaml (every field, defaults included), which
    neither loaded as a config nor marked the folder as a run's: the run could not be
    carried on there."""
    from ono_env.agents.learned import shipped_models
    from ono_env.rules import MAX_YAML_BYTES

    monkeypatch.chdir(tmp_path)
    paths = [f"{'x' * 90}{i}.safetensors" for i in range(8)]
    for p in paths:
        shutil.copy(shipped_models()["ppo-basic-2p"], p)
    config = tmp_path / "mixture.yaml"
    config.write_text(yaml.safe_dump({"observation_version": 2, "tables": [
        {"rules": "basic", "num_players": 2, "opponents": dict.fromkeys(paths, 1)}
        for _ in range(64)]}))
    assert config.stat().st_size < MAX_YAML_BYTES
    assert train_main([str(config), *(o for o in SMALL if not o.startswith("num_envs=")),
                       "num_envs=64", "out_dir=runs"]) == 2
    err = capsys.readouterr().err
    m = re.match(r"ono-train: error: the run's config\.yaml \(every field, defaults included\) "
                 r"would take ([\d,]+) bytes, and a training config is read up to 65,536 ", err)
    assert m and int(m[1].replace(",", "")) > MAX_YAML_BYTES, err
    assert not (tmp_path / "runs").exists()


def test_the_final_evaluations_workers_are_counted_in_its_memory(monkeypatch):
    """final_eval.workers play as many opponents at once, each in a process of its own with
    its games' records: 200,000 games at 10 players fit in 1 GiB two at a time, not four
    (before, each worker checked its own games alone, and the four together ran out of
    memory; the processes themselves were not counted)."""
    import ono_env.game as G
    from ono_env.train.config import load_config
    from ono_env.train.run import check_evaluation_memory, rules_of

    monkeypatch.setattr(G, "available_memory", lambda: 1 << 30)
    fields = ["num_players=10", "final_eval.games=200000"]
    for workers, opponents in ((1, "[random,greedy,color,defensive]"), (1, "auto"),
                               (4, "[random,greedy]")):   # at most two evaluations at once
        cfg = load_config("default", [*fields, f"final_eval.workers={workers}",
                                      f"final_eval.opponents={opponents}"])
        check_evaluation_memory(cfg, rules_of(cfg))
    for opponents in ("[random,greedy,color,defensive]", "auto"):
        cfg = load_config("default", [*fields, "final_eval.workers=4",
                                      f"final_eval.opponents={opponents}"])
        with pytest.raises(ValueError, match=r"^final_eval\.workers=4: 4 processes at once, each "
                                             r"of at least 160 MiB .* and its games' records, need "
                                             r"1\.4 GiB, .*; allowed: fewer workers \(at most 2 "
                                             r"here\), or a smaller final_eval\.games$"):
            check_evaluation_memory(cfg, rules_of(cfg))
    # final_eval.games: auto is counted at its most, 100,000 games each
    cfg = load_config("default", ["num_players=10", "final_eval.workers=4"])
    with pytest.raises(ValueError, match=r"^final_eval\.workers=4: 4 processes at once"):
        check_evaluation_memory(cfg, rules_of(cfg))


def test_a_maskable_checkpoint_counts_adams_state_in_its_size():
    """maskable_ppo's model.zip holds SB3's weights and Adam's two moments besides the model
    (about four times it): a network whose model alone fits, but whose zip would be over what
    a model file is read up to, is refused for it and not for ppo."""
    from ono_env.train.config import load_config
    from ono_env.train.run import check_network_memory, model_file_bytes, rules_of

    cfg = load_config("default", ["policy.net_arch=[6000,6000]"])
    assert model_file_bytes(cfg, rules_of(cfg)) < 1 << 30 < 4 * model_file_bytes(cfg, rules_of(cfg))
    check_network_memory(cfg, rules_of(cfg))
    masked = load_config("default", ["policy.net_arch=[6000,6000]", "algo=maskable_ppo",
                                     "policy.shared=false"])
    with pytest.raises(ValueError, match=r"^policy\.net_arch=\[6000, 6000\]: its model file would "
                                         r"take at least 1,206,528,000 bytes"):
        check_network_memory(masked, rules_of(masked))


@pytest.mark.parametrize("algo", ["ppo", "maskable_ppo"])
@pytest.mark.parametrize("overrides, message", [
    # before: the run folder escaped out_dir (name=../x), a run cut the minibatches to the
    # rollout silently, numpy's MemoryError came after config.yaml was written, and a path
    # under a file was the system's errno text naming no field
    (["name=../escaped"], "config field 'name' = '../escaped': allowed: 1-64 letters"),
    (["ppo.batch_size=100000"], "ppo.batch_size=100,000 is more than a rollout (num_envs x "
                                "ppo.n_steps = 64 steps)"),
    (["ppo.n_steps=1000000000"], "steps keeps 4,857.8 GiB of observations and masks"),
    # before: the kernel ended the process with no word (or torch's allocation error named
    # no field); sixteen layers of 65,536 need about 1 TiB at the least
    (["policy.shared=false", "policy.net_arch=[4096,4096]", "num_envs=4096", "ppo.n_steps=1024",
      "ppo.batch_size=4194304"],
     "policy.net_arch=[4096, 4096]: training it takes at least 512.5 GiB (weights, "
     "gradients and Adam's state, a minibatch of ppo.batch_size=4,194,304)"),
    # before: a network whose model file every loader refuses (over 1 GiB) trained to the end,
    # and the run's own final evaluation refused it
    (["policy.net_arch=[11600,11600]"], "bytes, and a model file is read up to 1,073,741,824 "
                                        "(by this run's final evaluation"),
    # before: 1,000 snapshots of this network (about 0.14 GB each) ran out of memory hours in
    (["policy.net_arch=[4096,4096]", "self_play.enabled=true", "self_play.max_snapshots=1000"],
     "and self_play.max_snapshots=1,000 copies of the network)"),
    (["run_dir={file}/sub"], "run_dir '{file}/sub': '{file}' is a file, not a folder"),
    (["out_dir={file}/sub"], "out_dir '{file}/sub': '{file}' is a file, not a folder"),
    # before: a bare OSError or RecursionError (a name too long, a folder /proc refuses, a
    # value nested 600 deep)
    (["run_dir={dir}/" + "a" * 300], "File name too long; allowed: a folder path"),
    (["run_dir=/proc/ono-nosuch"], "run_dir: cannot create the run's folder '/proc/ono-nosuch': "
                                   "No such file or directory; allowed: a folder that can"),
    (["tables=" + "[" * 600 + "]" * 600], "(lists or mappings nested more than 64 deep; allowed: "
                                          "at most 64)"),
    # before: pydantic's words alone, with no way out named
    (["name=2024"], "config field 'name' = 2024: Input should be a valid string (YAML reads it "
                    "as a number: quote it, '<as written>' in a file or "
                    "name=\"'<as written>'\" on a command line)"),
    # nothing is echoed as YAML read it (True for true, 2024.1 for 2024.10; before: 1_0 was
    # advised as '10', 0x10 as '16')
    (["name=1_0"], "config field 'name' = 10: Input should be a valid string (YAML reads it "
                   "as a number: quote it, '<as written>' in a file"),
    (["name=true"], "config field 'name' = True: Input should be a valid string (YAML reads it "
                    "as true or false: quote it, '<as written>' in a file or "
                    "name=\"'<as written>'\" on a command line)"),
    (["name=2024.10"], "(YAML reads it as a number: quote it, '<as written>' in a file"),
    # a table's field: quoted inside the list on a command line (before: a dotted override
    # advised, which is refused)
    (["observation_version=2", "tables=[{rules: basic, name: 12}]"],
     "config field 'tables.0.name' = 12: Input should be a valid string (YAML reads it as a "
     "number: quote it, '<as written>' in a file or inside tables=[...] on a command line)"),
    # before: true read as 1 and 2.0 as 2, where every other number is strict
    (["observation_version=true"], "config field 'observation_version' = True: Input should be "
                                   "1 or 2 as a whole number, not True"),
    (["observation_version=2.0"], "config field 'observation_version' = 2.0: Input should be "
                                  "1 or 2 as a whole number"),
    (["total_steps=1e6"], "config field 'total_steps' = 1000000.0: Input should be a valid "
                          "integer (YAML reads it as a float: write the whole number, 1000000)"),
    # before: pydantic's words for a number of 23 digits, and a wrong kind's without its range
    (["observation_version=99999999999999999999999"],
     "config field 'observation_version' = 99999999999999999999999: Input should be 1 or 2"),
    (["seed=1.5"], "config field 'seed' = 1.5: Input should be a valid integer; allowed: an "
                   "integer at least 0 and at most 9,223,372,036,854,775,807"),
    (["ppo.n_epochs=x"], "config field 'ppo.n_epochs' = 'x': Input should be a valid integer; "
                         "allowed: an integer at least 1 and at most 1,000"),
    (["self_play.weight=x"], "config field 'self_play.weight' = 'x': Input should be a valid "
                             "number; allowed: a number at least 0 and below 1"),
    (["self_play.enabled=3"], "config field 'self_play.enabled' = 3: Input should be a valid "
                              "boolean; allowed: true or false"),
    (["observation_version=2", "tables=[{rules: basic, num_players: x}]"],
     "config field 'tables.0.num_players' = 'x': Input should be a valid integer; allowed: an "
     "integer at least 2 and at most 10"),
    # an item of another list given whole: the whole list on a command line (before: the
    # dotted key eval.opponents.0, which is refused)
    (["eval.opponents=[1]"], "config field 'eval.opponents.0' = 1: Input should be a valid "
                             "string (YAML reads it as a number: quote it, '<as written>' in a "
                             "file or inside eval.opponents=[...] on a command line)"),
    # 'auto' or a number, and a number or null: said whole, with its range (before: "Input
    # should be 'auto', or a valid integer"; "Input should be a valid number")
    (["max_decisions=2.0"], "config field 'max_decisions' = 2.0 (YAML reads it as a float: write "
                            "the whole number, 2); allowed: 'auto', or an integer at least 1 and "
                            "at most 10,000,000"),
    (["torch_threads=0"], "config field 'torch_threads' = 0; allowed: 'auto', or an integer at "
                          "least 1 and at most 1,024"),
    # no whole number advised that the field refuses (before: "write the whole number,
    # 1000000000" for a field of at most 10,000,000)
    (["max_decisions=1e9"], "config field 'max_decisions' = 1000000000.0; allowed: 'auto', or an "
                            "integer at least 1 and at most 10,000,000"),
    (["num_players=2e12"], "config field 'num_players' = 2000000000000.0: Input should be a valid "
                           "integer; allowed: an integer at least 2 and at most 10"),
    (["time_limit_minutes=true"], "config field 'time_limit_minutes' = True: Input should be a "
                                  "valid number; allowed: a number above 0 and at most "
                                  "1,000,000, or null"),
    # before: past float32's range, torch's overflow error named no field (clip_range), or
    # the weight became inf and the run diverged, each after the run folder was made
    (["ppo.clip_range=1e39"], "config field 'ppo.clip_range' = 1e+39: Input should be less "
                              "than or equal to 100"),
    (["ppo.ent_coef=1e39"], "config field 'ppo.ent_coef' = 1e+39: Input should be less than"),
    (["ppo.vf_coef=101"], "config field 'ppo.vf_coef' = 101: Input should be less than"),
    (["tables=[{rules: basic, teacher: ppo-basic-2p, teacher_coef: 1e308}]"],
     "config field 'tables.0.teacher_coef' = 1e+308: Input should be less than or equal to 100"),
    # before: taken by --print-config, then a memory check of 4.9e33 GiB at the run's start
    (["ppo.n_steps=1010101010101010101010101010101010101010"],
     "config field 'ppo.n_steps' = 1010101010101010101010101010101010101010: Input should be "
     "less than or equal to 1000000000000"),
])
def test_ono_train_refuses_before_writing_anything(tmp_path, capsys, algo, overrides, message):
    file = tmp_path / "existing.json"
    file.write_text("{}")
    extra = ([] if any(o.startswith("run_dir") for o in overrides)
             else [f"run_dir={tmp_path / 'out' / 'run'}"])
    policy = ["policy.shared=false"] if algo == "maskable_ppo" else []
    given = [o.replace("{file}", str(file)).replace("{dir}", str(tmp_path)) for o in overrides]
    keys = {o.split("=", 1)[0] for o in given}   # each key once: the case's value stands
    argv = ["default", f"algo={algo}",
            *(o for o in [*policy, *SMALL, *extra] if o.split("=", 1)[0] not in keys), *given]
    if any(o.startswith("out_dir") for o in overrides):
        argv = [a for a in argv if not a.startswith("run_dir")]
    assert train_main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("ono-train: error: ") and message.replace("{file}", str(file)) in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing.json"]


def test_a_run_dir_of_a_run_that_saved_nothing_is_refused_without_naming_resume(tmp_path,
                                                                                   capsys,
                                                                                   nan_loss):
    """Before: the refusal advised resume= a model file in a folder that holds none (a run
    that diverged at its first update leaves config.yaml and tb/ only)."""
    run = tmp_path / "run"
    assert train_main(["default", *SMALL, f"run_dir={run}"]) == 2
    assert "diverged" in capsys.readouterr().err
    assert train_main(["default", *SMALL, f"run_dir={run}"]) == 2
    err = capsys.readouterr().err
    assert "already holds the files of a run that saved no model (config.yaml" in err
    assert "resume=" not in err


def test_a_ppo_part_is_not_carried_on_in_a_maskable_runs_folder(tmp_path):
    """Before: resume= a maskable_ppo checkpoint (a ppo part carries on its playable model)
    with run_dir its own folder was taken, past the furthest-along check (which read only
    .safetensors files): the folder then held both runs' models, under one label."""
    from ono_env.train.run import check_run_dir
    run = tmp_path / "m"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("seed: 0\ntotal_steps: 4096\nalgo: maskable_ppo\n")
    for name in ("model.zip", "checkpoints/step_2048.zip", "checkpoints/step_4096.zip"):
        (run / name).write_bytes(b"PK")
    with pytest.raises(ValueError, match=r"holds an algo: maskable_ppo run \(checkpoints/"
                                         r"step_2048.zip, checkpoints/step_4096.zip, "
                                         r"model.zip\).*allowed: resume=.* with a new run_dir"):
        check_run_dir(run, str(run / "checkpoints" / "step_2048.zip"))
    check_run_dir(tmp_path / "new", str(run / "checkpoints" / "step_2048.zip"))   # elsewhere: taken


def test_a_run_stopped_as_it_began_leaves_a_folder_the_same_command_takes(tmp_path, capsys):
    """A stop between the folder's config.yaml and training (tens of milliseconds) left a
    folder that refused the same command ("a run that saved no model"); it holds nothing the
    new run would not replace. A folder with more (a diverged run's tb/) is still refused."""
    from ono_env.train.run import check_run_dir
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("seed: 0\ntotal_steps: 4096\n")
    (run / "tables.json").write_text("[]\n")
    (run / ".lock").write_text("")
    check_run_dir(run, None)
    check_run_dir(run, "ppo-any")
    (run / "tb").mkdir()
    with pytest.raises(ValueError, match="already holds the files of a run that saved no model"):
        check_run_dir(run, None)
    (run / "tb").rmdir()
    (run / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="already holds the files of a run that saved no model"):
        check_run_dir(run, None)

    # the same command in that folder: trains, and says nothing of an earlier part (before:
    # "resuming in its own folder: the earlier part's tables.json set aside")
    (run / "notes.txt").unlink()
    assert train_main(["default", *SMALL, f"run_dir={run}"]) == 0
    err = capsys.readouterr().err
    assert "resuming" not in err and "earlier part" not in err
    assert not (run / "tables.json").exists() and (run / "model.safetensors").is_file()


@pytest.mark.parametrize("raised, kept", [(KeyboardInterrupt, False), (RuntimeError, True)])
def test_a_run_stopped_before_any_model_takes_its_logs_along(tmp_path, monkeypatch, raised, kept):
    """A run stopped at once (a second Ctrl-C, a signal before the stop's handler) before it
    saved a model removes its tb/, so that the same command takes the folder again (before:
    refused as "a run that saved no model"); a run that failed otherwise keeps its logs."""
    import torch

    from ono_env.train.ppo import train
    from ono_env.train.run import check_run_dir

    run = tmp_path / "run"

    def stop(*args, **kwargs):
        (run / "eval.csv").write_text("steps\n")   # as an evaluation before the first checkpoint
        raise raised("stopped")
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", stop)   # in the first update
    with pytest.raises(raised):
        train(load_config("default", [*SMALL, f"run_dir={run}"]))
    assert (run / "tb").exists() == kept and not (run / "model.safetensors").exists()
    assert (run / "eval.csv").exists() == kept
    if kept:
        with pytest.raises(ValueError, match="a run that saved no model"):
            check_run_dir(run, None)
    else:
        check_run_dir(run, None)


@pytest.mark.parametrize("between", [False, True])
def test_a_run_stopped_again_during_its_final_save_takes_its_logs_along(tmp_path, monkeypatch,
                                                                       between):
    """A second Ctrl-C or SIGTERM while the stopped run saves its model (the console's handler
    is back by then), before it wrote anything or ``between`` Adam's state and the model,
    leaves a folder the same command takes again (before: tb/ was kept, with Adam's state
    alone in the second case, and the folder refused as "a run that saved no model")."""
    import ono_env.train.ppo as ppo
    from ono_env.train.run import check_run_dir

    run = tmp_path / "run"
    real = ppo.write_whole

    def write(path, *args, **kwargs):
        if path.name == ("model.safetensors" if between else "model.optimizer.safetensors"):
            (run / "eval.csv").write_text("steps\n")   # as an evaluation before it
            raise KeyboardInterrupt("stopped during the save")
        return real(path, *args, **kwargs)
    monkeypatch.setattr(ppo, "write_whole", write)
    with pytest.raises(KeyboardInterrupt):
        ppo.train(load_config("default", [*SMALL, f"run_dir={run}"]))
    assert not (run / "tb").exists() and not (run / "eval.csv").exists()
    assert not list(run.glob("model.*"))
    check_run_dir(run, None)


def test_ono_train_names_only_the_config_as_required(capsys):
    assert train_main([]) == 2
    err = capsys.readouterr().err
    assert "required: config (see ono-train --help)" in err and "overrides" not in err


def test_a_tiny_run_writes_everything(tiny_run):
    _cfg, result = tiny_run
    run_dir = Path(result["run_dir"])
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved["total_steps"] == 2048 and saved["policy"]["net_arch"] == [32]
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("*.zip")) == ["step_1024.zip",
                                                                             "step_2048.zip"]
    curve = (run_dir / "eval.csv").read_text().splitlines()
    assert curve[0].startswith("step,opponent") and len(curve) == 1 + 2 * 2
    final = json.loads((run_dir / "final_eval.json").read_text())
    assert [r["opponent"] for r in final["results"]] == ["random", "greedy"]
    assert all(r["games"] == 24 and 0 <= r["ci_low"] <= r["win_rate"] <= r["ci_high"] <= 1
               for r in final["results"])
    events = list((run_dir / "tb").rglob("events.out.tfevents.*"))
    assert events
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    ea = EventAccumulator(str(events[0].parent))
    ea.Reload()
    assert {"eval/win_rate/random", "eval/win_rate/greedy", "league/snapshots"} <= set(ea.Tags()["scalars"])


def test_checkpoint_metadata_and_loading_into_the_arena_and_play(tiny_run):
    _cfg, result = tiny_run
    model = Path(result["model"])
    meta = read_metadata(model)
    assert meta["rules"]["name"] == "basic" and meta["num_players"] == 2
    assert meta["training_steps"] == 2048 and meta["observation_version"] == 1
    assert len(meta["action_names"]) == 85 and meta["config"]["total_steps"] == 2048
    res = run_arena([str(model), "random"], "basic", 2, num_games=40, seed=0, rating=False)
    assert res.labels == ["model", "random"] and res.records.length.shape == (40,)
    # the same file plays in the terminal game (the human quits at once)
    out = io.StringIO()
    with pytest.raises(Exception, match="quit"):
        play([str(model)], "basic", seat=1, seed=2, read=lambda p: "quit", out=out)
    # deterministic policy: same choices for the same observations
    pol = load_agent(model)
    obs = np.zeros((3, pol.obs_size), np.float32)
    mask = np.zeros((3, 85), bool)
    mask[:, [3, 66]] = True
    assert np.array_equal(pol.act(obs, mask, np.random.default_rng(0)), pol.act(obs, mask, np.random.default_rng(1)))
    assert set(pol.act(obs, mask, np.random.default_rng(0))) <= {3, 66}


def test_loading_under_other_rules_players_or_layout_fails_clearly(tiny_run, tmp_path):
    model = Path(tiny_run[1]["model"])
    with pytest.raises(ValueError, match="trained for 'basic' rules, which differ from the 'classic'"):
        load_agent(model, {"preset": "classic", "num_players": 2})
    with pytest.raises(ValueError, match="trained for 2 players, asked to play 4"):
        load_agent(model, "basic")          # basic seats 4 by default
    with pytest.raises(ValueError, match="trained for 'basic' rules"):
        run_arena([str(model), "random"], "ono", 2, num_games=4)
    # a model from another observation layout version (the checkpoint's playable member)
    from safetensors.numpy import load, save
    old = tmp_path / "old.zip"
    with zipfile.ZipFile(model) as src, zipfile.ZipFile(old, "w") as dst:
        for item in src.namelist():
            data = src.read(item)
            if item == "ono_policy.safetensors":
                meta = read_metadata(model)
                meta["observation_version"] = 0
                data = save(load(data), metadata={"ono_env": json.dumps(meta)})
            dst.writestr(item, data)
    with pytest.raises(ValueError, match="observation layout v0; this version of ono_env writes "
                                         "v1, v2: retrain the model"):
        load_agent(old)
    # a zip that is not an ono_env model, and a file that is no zip
    plain = tmp_path / "plain.zip"
    with zipfile.ZipFile(plain, "w") as z:
        z.writestr("data", "{}")
    with pytest.raises(ValueError, match="is not an ono_env model"):
        load_agent(plain)
    junk = tmp_path / "junk.zip"
    junk.write_text("hello")
    with pytest.raises(ValueError, match="not a zip file"):
        load_agent(junk)
    shutil.rmtree(tmp_path, ignore_errors=True)


def test_shipped_policies_load_as_agents():
    from ono_env.agents import agent_names
    from ono_env.agents.learned import shipped_models
    models = shipped_models()
    assert models, "the package ships at least one trained policy"
    for name, path in models.items():
        assert name in agent_names()
        meta = read_metadata(path)
        n = meta["num_players"]
        res = run_arena([name] + ["random"] * (n - 1), meta["rules"]["name"], n,
                        num_games=24, seed=0, rating=False)
        assert res.records.length.shape == (24,)


def test_exported_model_plays_like_the_checkpoint(tiny_run, tmp_path):
    from ono_env.train.export import export_model
    from ono_env.train.export import main as export_main
    model = Path(tiny_run[1]["model"])
    small = export_model(model, tmp_path / "small.safetensors")
    assert small.stat().st_size < model.stat().st_size / 2
    full, exp = load_agent(model), load_agent(small)
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 3, size=(64, full.obs_size)).astype(np.float32)
    mask = rng.random((64, 85)) < 0.3
    mask[:, 66] = True
    assert np.array_equal(full.act(obs, mask, rng), exp.act(obs, mask, rng))
    assert np.array_equal(full.logits(obs), exp.logits(obs))
    assert read_metadata(small) == read_metadata(model)
    assert export_main([str(model), str(tmp_path / "cli.safetensors")]) == 0
    assert (tmp_path / "cli.safetensors").read_bytes() == small.read_bytes()


def test_a_checkpoint_still_resumes_with_maskableppo(tiny_run):
    from sb3_contrib import MaskablePPO
    model = MaskablePPO.load(tiny_run[1]["model"], device="cpu")   # our own file, trusted
    assert model.num_timesteps == 2048


def test_the_module_docs_name_every_shipped_training_config():
    """ono-train's and the config module's docstrings (rendered in the API reference) list
    the configs shipped with the package: every one of them."""
    from ono_env.configs import config_names
    from ono_env.train import cli, config

    for name in config_names("train"):
        for module in (cli, config):
            assert f"``{name}``" in module.__doc__, (module.__name__, name)


def test_runs_named_by_their_time_never_share_a_folder(tmp_path, monkeypatch):
    """Two runs started in the same second (no run_dir) get two folders: the second takes
    <name>-<time>-2 (before: it was refused after its setup, naming a run_dir it never set)."""
    from ono_env.train import run as R

    first = R.claim_run_dir(tmp_path / "out" / "default-20261202-101010")
    second = R.claim_run_dir(tmp_path / "out" / "default-20261202-101010")
    assert first.name == "default-20261202-101010" and second.name == "default-20261202-101010-2"
    (first / "config.yaml").write_text("name: default\n")
    # the whole start: the second run checks nothing of the first's folder and leaves it alone
    monkeypatch.setattr(R, "run_dir_of", lambda cfg: first)
    import torch
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)   # this process keeps its own
    cfg = load_config("default", ["total_steps=16", "eval.every=0", "final_eval.games=0",
                                  f"out_dir={tmp_path / 'out'}", "torch_threads=1"])
    _rules, third, _n, _why = R.start_run(cfg)
    assert third.name == "default-20261202-101010-3"
    assert (first / "config.yaml").read_text() == "name: default\n"
    assert (third / "config.yaml").is_file()
    monkeypatch.setattr(R, "MAX_CLAIMS", 3)
    with pytest.raises(ValueError, match=r"out_dir: 3 folders named .* exist already"):
        R.claim_run_dir(first)


def _run_folder(run: Path) -> dict[str, bytes]:
    """A run folder's files as an earlier part left them (the contents are only compared)."""
    files = {"config.yaml": b"name: first\n", "eval.csv": b"steps\n1\n",
             "final_eval.json": b"[]\n", "final_eval.csv": b"opponent\n",
             "model.safetensors": b"model", "checkpoints/step_1.safetensors": b"ckpt"}
    for name, data in files.items():
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_bytes(data)
    return files


def _contents(run: Path) -> dict[str, bytes]:
    return {p.relative_to(run).as_posix(): p.read_bytes() for p in run.rglob("*") if p.is_file()}


def test_a_part_killed_while_it_held_the_earlier_part_is_settled_from_its_record(tmp_path):
    """A part killed outright leaves .earlier-part/; the next part settles it from the record
    of the model files it holds (before: removed unread, so the earlier part's evaluations and
    config.yaml were lost when the killed part had saved nothing)."""
    from ono_env.train import run as R

    run = tmp_path / "run"
    files = _run_folder(run)
    R.EarlierPart(run).hold()   # a part starts, writes its own files, and is killed
    (run / "config.yaml").write_text("name: killed\n")
    (run / "eval.csv").write_text("steps\n9\n")
    part = R.EarlierPart(run)
    assert part.hold() == ["eval.csv", "final_eval.json", "final_eval.csv"]
    part.settle()   # this part saves nothing either: the first part's files are all back
    assert _contents(run) == files
    # a record that cannot be read: one error naming the folder, and nothing moved
    R.EarlierPart(run).hold()
    # (before: a deep nesting's RecursionError escaped, and a key given twice was read as its
    # last value)
    for record in ('{"models": [1]}', "[" * 100_000 + "]" * 100_000, "[]",
                   '{"models": {}, "models": {"model.safetensors": 1}}'):
        (run / R.HELD_FOLDER / R.HELD_RECORD).write_text(record)
        before = _contents(run)
        with pytest.raises(ValueError, match=r"run_dir: '.*\.earlier-part' was left by a part that "
                                             r"ended without settling it, and its record "
                                             r"models\.json cannot be read .*; allowed: move"):
            R.EarlierPart(run).hold()
        assert _contents(run) == before


def test_a_curve_carried_on_survives_a_part_killed_before_its_first_save(tmp_path):
    """A part resumed in its own folder carries eval.csv on rather than holding it; killed
    outright before it saved anything, the next part settles what it left and keeps the
    curve (before: removed with the killed part's own files, every earlier part's rows)."""
    from ono_env.train import run as R

    run = tmp_path / "run"
    files = _run_folder(run)
    curve = ",".join(R.CURVE_FIELDS) + "\n1,random,16,0.5,0.2,0.8,0.5,40.0,0\n"
    (run / "eval.csv").write_text(curve)
    files["eval.csv"] = curve.encode()
    part = R.EarlierPart(run, curve=list(R.CURVE_FIELDS))
    assert part.hold() == ["final_eval.json", "final_eval.csv"]   # the curve stays
    (run / "config.yaml").write_text("name: killed\n")   # then the part is killed
    # the next part, as start_run makes it: the killed one's files settled first
    R.EarlierPart(run, curve=list(R.CURVE_FIELDS)).hold()
    assert (run / "eval.csv").read_bytes() == files["eval.csv"]
    # the first part's config.yaml was put back, and this part holds it now
    assert (run / R.HELD_FOLDER / "config.yaml").read_bytes() == files["config.yaml"]


def test_a_part_that_saved_checkpoints_but_no_model_puts_back_the_final_evaluation(tmp_path):
    """final_eval.* evaluate model.*: a part that saved a checkpoint and then failed leaves the
    older model, and its evaluation comes back (before: removed, as for a part that saved a
    model); the part's own config.yaml and eval.csv stay beside its checkpoint."""
    import os

    from ono_env.train import run as R

    run = tmp_path / "run"
    files = _run_folder(run)
    part = R.EarlierPart(run)
    part.hold()
    (run / "config.yaml").write_text("name: second\n")
    (run / "eval.csv").write_text("steps\n2\n")
    (run / "checkpoints" / "step_2.safetensors").write_bytes(b"ckpt2")
    part.settle()
    got = _contents(run)
    assert {n: got[n] for n in ("final_eval.json", "final_eval.csv")} == \
        {n: files[n] for n in ("final_eval.json", "final_eval.csv")}
    assert got["config.yaml"] == b"name: second\n" and got["eval.csv"] == b"steps\n2\n"
    assert not (run / R.HELD_FOLDER).exists()
    # a part that saved the model too: the older model's evaluation goes
    part = R.EarlierPart(run)
    part.hold()
    stat = (run / "model.safetensors").stat()
    os.utime(run / "model.safetensors", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    part.settle()
    assert not any((run / n).exists() for n in ("final_eval.json", "final_eval.csv", "eval.csv",
                                                R.HELD_FOLDER))


def test_a_run_folder_in_training_is_locked(tmp_path):
    """Two parts in one named folder would set aside and put back each other's files; the
    second is refused while the first holds the folder's lock (a killed process's is gone)."""
    from ono_env.train import run as R

    first = R.lock_run_dir(tmp_path)
    with pytest.raises(ValueError, match=r"run_dir: a run is training in '.*' now \(its \.lock "
                                         r"is locked by another process\); allowed: resume it"):
        R.lock_run_dir(tmp_path)
    first.close()
    R.lock_run_dir(tmp_path).close()
    R.check_run_dir(tmp_path, None)   # a folder holding only the lock file holds nothing


def test_a_run_training_in_the_folder_is_said_before_its_files(tmp_path):
    """Before: a second run in a folder where a run was training was told that the folder
    held another run's files, or to resume from the first run's newest checkpoint (which
    kept changing); the lock was checked only after. Nothing is written."""
    from ono_env.train import run as R

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("name: other\n")
    (run / "checkpoints").mkdir()
    first = R.lock_run_dir(run)
    before = sorted(p.name for p in run.iterdir())
    try:
        cfg = load_config(CONFIGS / "default.yaml", TINY + [f"run_dir={run}"])
        with pytest.raises(ValueError, match=r"run_dir: a run is training in '.*' now"):
            R.check_start(cfg)
        # so does the trainer's own first check (before: "already holds another run's files")
        from ono_env.train.ppo import train
        with pytest.raises(ValueError, match=r"run_dir: a run is training in '.*' now"):
            train(cfg)
    finally:
        first.close()
    assert sorted(p.name for p in run.iterdir()) == before
    with pytest.raises(ValueError, match="already holds files"):   # once it has ended
        R.check_start(cfg)


def test_a_divergence_names_every_loss_weight_of_the_run():
    from ono_env.train.ppo import diverged

    cfg = load_config(CONFIGS / "default.yaml", [
        "observation_version=2", "ppo.color_consistency=0.5",
        "tables=[{rules: ono, num_players: 3, teacher: ppo-any, teacher_coef: 50}, "
        "{rules: basic}]"])
    text = str(diverged(10, cfg.to_dict(), "the update's loss is not finite"))
    for named in ("ppo.vf_coef: 0.5", "ppo.ent_coef: 0.01", "ppo.color_consistency: 0.5",
                  "tables[0].teacher_coef: 50.0"):
        assert named in text
    assert "tables[1]" not in text and "hand_prediction" not in text


def test_a_run_folder_on_a_file_system_without_locks_trains_unlocked(tmp_path, monkeypatch,
                                                                      capsys):
    """Before: every error of flock read as another run holding the folder, so every run on
    such a mount was refused for ever, for a reason that was not so."""
    import errno
    import fcntl

    from ono_env.train import run as R

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(fcntl, "flock", no_locks)
    R.lock_run_dir(tmp_path).close()
    err = capsys.readouterr().err
    assert err.startswith(f"warning: run_dir {str(tmp_path)!r} cannot be locked (No locks "
                          f"available: its file system may not support locks)"), err


def test_settling_that_fails_is_one_warning_and_the_folder_is_unlocked(tmp_path, capsys):
    """The trainers settle the earlier part in their finally: an OSError there replaced the
    error that ended the part (before); now one warning, and the folder's lock released."""
    from ono_env.train import run as R

    class Stuck(R.EarlierPart):
        def settle(self) -> None:
            raise PermissionError(13, "Permission denied")

    part = R._Part()
    part.lock, part.earlier = R.lock_run_dir(tmp_path), Stuck(tmp_path)
    R._part = part
    R.settle_earlier_part()
    err = capsys.readouterr().err
    assert err.startswith("warning: the earlier part's files in ") and "Permission denied" in err
    assert err.count("\n") == 1 and part.lock.closed and R._part is None
    R.lock_run_dir(tmp_path).close()


def test_a_shipped_configs_name_is_that_config_beside_a_file_of_that_name(tmp_path, monkeypatch):
    # before: a file named "default" in the current folder was read instead, without a word
    from ono_env.train.config import config_path
    monkeypatch.chdir(tmp_path)
    (tmp_path / "default").write_text("total_steps: 7\n")
    assert load_config("default").total_steps != 7
    assert load_config("./default").total_steps == 7
    assert config_path("default").parent.name == "train"


def test_a_path_override_is_the_path_as_written():
    """Before: read as YAML, so " #2" was a comment and cut off (the run wrote to another
    folder), a newline became a space, and a bare ~ was null (resume=~ trained afresh)."""
    from ono_env.train.config import parse_override
    for text, value in (("run_dir=/tmp/exp #2", "/tmp/exp #2"), ("out_dir=a\nb", "a\nb"),
                        ("out_dir=123", "123"), ("run_dir= x ", "x"),
                        ("run_dir='a #b'", "a #b"),   # quoted: YAML's string, as before
                        ("resume=null", None)):
        assert parse_override(text) == {text.split("=")[0]: value}
    cfg = load_config("default", ["run_dir=/tmp/exp #2", "resume=~"])
    assert cfg.run_dir == "/tmp/exp #2" and cfg.resume == os.path.expanduser("~")


def test_a_long_override_is_cut_in_its_error(capsys):
    """Before: an override of 5,000 digits, an unknown field of 3,000 characters and a rules
    name too long for a file name (the system's OSError, no field named) were echoed whole."""
    assert train_main(["default", "total_steps=" + "9" * 5000]) == 2
    err = capsys.readouterr().err
    assert "'total_steps=99999" in err and "an integer of 5,000 digits; allowed: at most 100" in err
    assert len(err) < 300, len(err)
    assert train_main(["default", "k" * 3000 + "=1"]) == 2
    err = capsys.readouterr().err
    assert "unknown config field 'kkkk" in err and len(err) < 600, len(err)
    assert train_main(["default", "rules=" + "q" * 300]) == 2
    err = capsys.readouterr().err
    assert "rules: rules 'qqqq" in err and "...: File name too long; allowed: a YAML" in err, err
    assert len(err) < 500, len(err)


def test_a_leftover_whose_record_cannot_be_read_is_left_as_it_is_by_a_whole_start(tmp_path,
                                                                                    monkeypatch):
    """Through start_run and the trainers' settle: before, the refusal was followed by the
    settle of the part that had not begun, which removed the held files it had just refused
    to touch."""
    from ono_env.train import run as R

    run = tmp_path / "run"
    _run_folder(run)
    (run / "config.yaml").write_text(yaml.safe_dump(load_config("default").to_dict()))
    R.EarlierPart(run).hold()
    (run / R.HELD_FOLDER / R.HELD_RECORD).unlink()   # as a part of the version before left it
    (run / "config.yaml").write_text(yaml.safe_dump(load_config("default").to_dict()))
    before = _contents(run)
    import torch
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    cfg = load_config("default", ["torch_threads=1", f"run_dir={run}",
                                  f"resume={run / 'model.safetensors'}"])
    monkeypatch.setattr(R, "check_start", lambda cfg, agents=(): (None, run))
    with pytest.raises(ValueError, match=r"its record models\.json cannot be read"):
        R.start_run(cfg)
    R.settle_earlier_part()
    assert {k: v for k, v in _contents(run).items() if k != R.LOCK_FILE} == before
    # a part killed as it set the earlier part aside (config.yaml held, none written yet)
    shutil.rmtree(run)
    _run_folder(run)
    (run / "config.yaml").write_text(yaml.safe_dump(load_config("default").to_dict()))
    R.EarlierPart(run).hold()
    R.check_run_dir(run, str(run / "model.safetensors"))   # still a run's folder


def test_a_home_folder_in_a_path_and_more_threads_than_cores(monkeypatch):
    """Before: ``run_dir: ~/x`` in a config file made a folder named ``~`` in the current
    one, and 1,024 torch threads on 2 cores ran at 1% of the speed without a word."""
    from ono_env.train.run import choose_threads, usable_cores

    monkeypatch.setenv("HOME", "/home/someone")
    cfg = load_config("default", ["run_dir=~/x", "out_dir=~/runs", "resume=~/m.safetensors"])
    assert (cfg.run_dir, cfg.out_dir, cfg.resume) == ("/home/someone/x", "/home/someone/runs",
                                                      "/home/someone/m.safetensors")
    assert load_config("default", ["run_dir=a~b"]).run_dir == "a~b"   # only a leading ~
    cores = usable_cores()
    n, why = choose_threads(cores + 1)
    assert n == cores + 1 and f"more than the {cores} cores this process may use" in why
    assert "more than" not in choose_threads(1)[1]


def test_ono_exploit_checks_the_folder_it_writes_for_a_home_out(monkeypatch, capsys, tmp_path):
    """Before: ``--out '~/x'`` checked ./~/x while the run went to the home folder."""
    import ono_env.train.exploit as ex

    def checked(path, what):
        raise ValueError(f"checked {path}")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(ex, "check_output_dir", checked)
    assert ex.main(["greedy", "--out", "~/x"]) == 2
    assert f"checked {tmp_path}/x" in capsys.readouterr().err


class _BrokenBar:
    """A progress bar whose terminal is gone: each draw fails as tqdm's does on a broken
    pipe (tqdm passes EPIPE on)."""

    n = 0

    def __init__(self, *args, **kwargs):
        pass

    def update(self, *args):
        raise BrokenPipeError(32, "Broken pipe")

    set_postfix = close = write = update


def test_maskable_ppo_saves_its_model_when_its_progress_bar_cannot_be_drawn(tmp_path,
                                                                           monkeypatch):
    """Before: only algo ppo's bar stopped training as a lost output; maskable_ppo's error
    ended the run with status 141 and no model."""
    import signal

    import tqdm

    monkeypatch.setattr(tqdm, "tqdm", _BrokenBar)
    run_dir = tmp_path / "run"
    cfg = load_config(CONFIGS / "default.yaml", TINY + ["total_steps=100000", "eval.every=0",
                                                        "self_play.enabled=false",
                                                        "progress=true", f"run_dir={run_dir}"])
    with pytest.raises(SystemExit) as stopped:
        train(cfg, stop_signals=("SIGINT",))
    assert stopped.value.code == 128 + signal.SIGPIPE
    assert (run_dir / "model.zip").is_file()
