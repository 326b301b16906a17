"""The benchmark scripts' argument checks: one line before any work, no file replaced, the
numbers they record are the ones they measured (``benchmarks/``, with ``bench_args.py``)."""

from __future__ import annotations

import json
import runpy
import shutil
import sys
import tempfile
import types
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def bench_main(script: str, monkeypatch, name: str = "main"):
    """``name`` (default ``main``) of ``benchmarks/<script>.py``, the benchmarks importable."""
    monkeypatch.syspath_prepend(str(BENCH))
    return runpy.run_path(str(BENCH / f"{script}.py"))[name]


def refused(main, monkeypatch, argv: list[str]) -> str:
    """The one-line message ``main`` exits with for ``argv``."""
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exc:
        main()
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_out_folder_and_out_file_refuse_earlier_results(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import bench_args

    (tmp_path / "a.json").write_text("{}")
    with pytest.raises(SystemExit) as exc:
        bench_args.out_folder(tmp_path, "s", writes=("a.json", "b.md"))
    assert str(exc.value) == (f"s: --out: the folder {str(tmp_path)!r} already holds a.json (an "
                              f"earlier run's results); allowed: a new or empty folder, or "
                              f"remove them")
    assert bench_args.out_folder(tmp_path, "s", writes=("b.md",)) == tmp_path
    assert bench_args.out_folder(tmp_path / "new", "s", writes=("a.json",)).is_dir()
    with pytest.raises(SystemExit) as exc:
        bench_args.out_file(tmp_path / "a.json", "s", "--json")
    assert "s: --json: " in str(exc.value) and "already exists" in str(exc.value)
    assert (tmp_path / "a.json").read_text() == "{}"


# script, its arguments, the file an earlier run left in --out (a folder) and what is refused
EARLIER_RESULTS = [
    ("bench_train", ["--out", "{out}"], "bench_train.json"),
    ("bench_headroom", ["--tables", "ono-3", "--agents", "random", "--out", "{out}"],
     "results.md"),
    ("bench_observation_worth", ["--out", "{out}"], "results.json"),
    ("bench_rollout_targets", ["--table", "basic-2", "--out", "{out}", "--models", "{tmp}/m"],
     "paired/results.json"),
    ("bench_rollout_targets", ["--table", "basic-2", "--betas", "0.5", "--out", "{tmp}/o",
                               "--models", "{out}"], "basic-2-beta-0.5.safetensors"),
    ("bench_table_steps", ["--out", "{out}"], "table_steps.md"),
    ("bench_update_cost", ["--out", "{out}"], "update_cost.json"),
    ("sweep_train", ["--out", "{out}"], "sweep.json"),
    ("bench_web_load", ["--out", "{out}"], "load.json"),
    ("bench_color_symmetry", ["--tables", "ono-3", "--out", "{out}"], "results.json"),
    ("bench_probes", ["--tables", "ono-3", "--out", "{out}"], "results.md"),
    ("bench_ray", ["--out", "{out}"], "bench_ray.md"),
    ("bench_ladder", ["--out", "{out}"], "ladder.json"),
]


@pytest.mark.parametrize("script,args,held", EARLIER_RESULTS,
                         ids=[f"{s}-{h}" for s, _, h in EARLIER_RESULTS])
def test_benchmarks_keep_an_earlier_runs_results(script, args, held, tmp_path, monkeypatch):
    main = bench_main(script, monkeypatch)
    out = tmp_path / "out"
    (out / held).parent.mkdir(parents=True)
    (out / held).write_text("earlier")
    argv = [script] + [a.format(out=out, tmp=tmp_path) for a in args]
    message = refused(main, monkeypatch, argv)
    assert message.startswith(f"{script}: --") and f"already holds {held}" in message
    assert (out / held).read_text() == "earlier"
    assert not (tmp_path / "m").exists() and not (tmp_path / "o").exists()


def test_benchmarks_keep_an_earlier_file(tmp_path, monkeypatch):
    for script, option in (("bench_mirrored", "--out"), ("bench_openspiel", "--json")):
        path = tmp_path / f"{script}.json"
        path.write_text("earlier")
        message = refused(bench_main(script, monkeypatch), monkeypatch,
                          [script, option, str(path)])
        assert message == (f"{script}: {option}: {str(path)!r} already exists (an earlier "
                           f"run's results); allowed: a new file, or remove it")
        assert path.read_text() == "earlier"


def test_bench_ray_writes_nothing_without_out(tmp_path, monkeypatch):
    # bench_ray sets RAY_TMPDIR for the Ray it starts, in a temporary folder: both kept here
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    main = bench_main("bench_ray", monkeypatch)
    monkeypatch.setattr(sys, "argv", ["bench_ray", "--iterations", "1"])
    seen = {}

    def stop(path, *a, **k):   # stands for the work: bench_ray got as far as its folder
        seen["path"] = path
        raise SystemExit("stopped")

    monkeypatch.setitem(main.__globals__, "out_folder", stop)
    monkeypatch.setitem(main.__globals__, "rllib_speed", lambda *a: (_ for _ in ()).throw(
        SystemExit("working")))
    with pytest.raises(SystemExit) as exc:
        main()
    assert str(exc.value) == "working" and "path" not in seen   # no folder, the work begins


def test_bench_train_counts_the_steps_the_trainer_did(monkeypatch):
    """The trainer rounds the steps asked up to whole rollouts: the rate is of its count."""
    one_run = bench_main("bench_train", monkeypatch, "one_run")
    monkeypatch.setitem(one_run.__globals__, "_trainer",
                        lambda algo: lambda cfg: {"steps": 8192, "bf16": False})
    clock = iter([10.0, 12.0])
    monkeypatch.setitem(one_run.__globals__, "time",
                        types.SimpleNamespace(perf_counter=lambda: next(clock)))
    assert one_run("ppo", 100, 1, 0) == 4096.0   # 8,192 steps in 2 s, not 100


def test_bench_train_checks_cuda_first(tmp_path, monkeypatch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    main = bench_main("bench_train", monkeypatch)
    monkeypatch.setitem(main.__globals__, "one_run", lambda *a, **k: pytest.fail("trained"))
    got = refused(main, monkeypatch, ["bench_train", "--mixture", "--mixture-device", "cuda",
                                      "--out", str(tmp_path / "o")])
    assert got == "bench_train: --mixture-device cuda: torch sees no CUDA GPU here; allowed: cpu"
    assert not (tmp_path / "o").exists()


def test_bench_probes_checks_each_ensemble_member(tmp_path, monkeypatch):
    from ono_env.agents.learned import shipped_models

    main = bench_main("bench_probes", monkeypatch)
    v1 = shipped_models()["ppo-basic-2p"]
    got = refused(main, monkeypatch, ["bench_probes", "--tables", "basic-2", "--deals", "2",
                                      "--probes", f"ensemble:{v1}", "--out", str(tmp_path / "o")])
    assert got.startswith("bench_probes: at basic-2: ensemble member ")
    assert "observation version 1" in got and not (tmp_path / "o").exists()


def test_bench_rollout_targets_needs_a_decision(tmp_path, monkeypatch):
    """Seed 1, one step of one game: the policy meets no decision with a choice."""
    main = bench_main("bench_rollout_targets", monkeypatch)
    got = refused(main, monkeypatch, [
        "bench_rollout_targets", "--table", "basic-2", "--steps", "1", "--games", "1",
        "--procs", "1", "--seed", "1", "--deals", "2", "--out", str(tmp_path / "o"),
        "--models", str(tmp_path / "m")])
    assert "met no decision with more than one legal action" in got
    assert list(tmp_path.iterdir()) == []


def test_bench_rollout_targets_keeps_each_runs_models_apart(tmp_path, monkeypatch):
    """Without --models, a run's models go to runs/rollout-targets/<the name of --out>: the
    documented second run at a table (another --out) is not refused for the first's models,
    and a rerun into the same names is."""
    monkeypatch.chdir(tmp_path)
    first = tmp_path / "runs" / "rollout-targets" / "first"
    first.mkdir(parents=True)
    (first / "basic-2-beta-0.5.safetensors").write_bytes(b"x")
    main = bench_main("bench_rollout_targets", monkeypatch)
    args = ["bench_rollout_targets", "--table", "basic-2", "--betas", "0.5", "--steps", "1",
            "--games", "1", "--procs", "1", "--seed", "1", "--deals", "2"]
    got = refused(main, monkeypatch, [*args, "--out", str(tmp_path / "second")])
    assert "met no decision with more than one legal action" in got   # past the folder checks
    got = refused(main, monkeypatch, [*args, "--out", str(tmp_path / "x" / "first")])
    assert got.startswith("bench_rollout_targets: --models: the folder ") \
        and "basic-2-beta-0.5.safetensors" in got


def test_bench_generalist_keeps_what_it_cannot_read_or_would_drop(tmp_path, monkeypatch):
    main = bench_main("bench_generalist", monkeypatch)
    out = tmp_path / "g"
    out.mkdir()
    for text, why in (("[]", "it is not an object with rows"),
                      ('{"rows": [{"preset": "basic"}]}', "each with its part ('what')"),
                      ('{"model": "x", "model_sha256": "abc", "rows": [{"what": "two"}]}',
                       "holds the rows of another model file ('x', SHA-256 abc...)")):
        (out / "results.json").write_text(text)
        got = refused(main, monkeypatch, ["bench_generalist", "--parts", "two", "--out",
                                          str(out)])
        assert got.startswith("bench_generalist: --out: ") and why in got
        assert (out / "results.json").read_text() == text
        assert not (out / "results.md").exists()


def test_bench_ladder_render_refuses_a_file_missing_keys(tmp_path, monkeypatch):
    main = bench_main("bench_ladder", monkeypatch)
    data = json.loads((BENCH.parent / "docs/results/ladder/ladder.json").read_text())
    del data["results"][0]["deals"]
    path = tmp_path / "ladder.json"
    path.write_text(json.dumps(data))
    got = refused(main, monkeypatch, ["bench_ladder", "--render", str(path)])
    assert got.startswith(f"bench_ladder: --render {path}: not a ladder.json") and "'deals'" in got
    assert json.loads(path.read_text()) == data and not path.with_suffix(".md").exists()


def test_bench_mirrored_records_the_games_played(tmp_path, monkeypatch):
    main = bench_main("bench_mirrored", monkeypatch)
    path = tmp_path / "m.json"
    monkeypatch.setattr(sys, "argv", ["bench_mirrored", "--games", "5", "--opponents", "random",
                                      "--out", str(path)])
    main()
    (row,) = json.loads(path.read_text())["rows"]
    assert row["games"] == 6 and row["mirrored"]["games"] == 6 and row["mirrored"]["deals"] == 3


def test_bench_arena_rates_the_games_played(monkeypatch, capsys):
    main = bench_main("bench_arena", monkeypatch)
    monkeypatch.setattr(sys, "argv", ["bench_arena", "--games", "3", "--agents", "greedy"])
    main()
    row = capsys.readouterr().out.splitlines()[-1].split()
    assert row[0] == "greedy" and row[1] == "4"   # both seatings twice: 4 games


def test_train_any_rules_plays_every_seating_of_each_deal(tmp_path, monkeypatch):
    mirrored = bench_main("train_any_rules", monkeypatch, "mirrored")
    from ono_env.agents.learned import shipped_models

    shutil.copy(shipped_models()["ppo-any"], tmp_path / "model.safetensors")
    row = {"preset": "basic", "players": 3, "run_dir": str(tmp_path),
           "final_eval": {"results": [{"opponent": "random", "win_rate": 0.5}]}}
    got = mirrored(row, 2, 0)
    assert got["deals"] == 2 and got["games"] == 12   # 6 seatings of 3 players


def test_train_any_rules_keeps_an_earlier_run(tmp_path, monkeypatch):
    main = bench_main("train_any_rules", monkeypatch)
    run = tmp_path / "runs" / "basic-2p-default"
    run.mkdir(parents=True)
    (run / "model.safetensors").write_text("earlier")
    got = refused(main, monkeypatch, ["train_any_rules", "--tables", "basic:2", "--out",
                                      str(tmp_path)])
    assert got.startswith("train_any_rules: --tables basic:2 --variant default: ")
    assert "holds an earlier run" in got and (run / "model.safetensors").read_text() == "earlier"


def test_bench_exploiters_keeps_rows_of_other_settings(tmp_path, monkeypatch):
    main = bench_main("bench_exploiters", monkeypatch)
    monkeypatch.setitem(main.__globals__, "OUT", tmp_path)
    path = tmp_path / "exploiters-3000000.json"
    text = json.dumps({"steps": 3_000_000, "deals": 2000, "seed": 0, "command": "c",
                       "results": []})
    path.write_text(text)
    got = refused(main, monkeypatch, ["bench_exploiters", "--deals", "5"])
    assert got.startswith("bench_exploiters: --deals 5 --seed 0: ")
    assert "measured with --deals 2000 --seed 0" in got and path.read_text() == text


def test_bench_ceiling_ties_keeps_rows_of_more_deals(tmp_path, monkeypatch):
    main = bench_main("bench_ceiling_ties", monkeypatch)
    monkeypatch.setitem(main.__globals__, "ROOT", tmp_path)
    from ono_env.arena.suite import load_suite

    out = tmp_path / "docs" / "results" / f"suite-{load_suite('latest').version}"
    out.mkdir(parents=True)
    rows = [{"table": t, "deals": 1000} for t in ("ono-2p", "basic-2p")]
    (out / "ceiling-ties.json").write_text(json.dumps({"command": "c", "rows": rows}))
    got = refused(main, monkeypatch, ["bench_ceiling_ties", "--deals", "2"])
    assert "holds rows measured with more deals" in got and "--deals 1000 or more" in got
    got = refused(main, monkeypatch, ["bench_ceiling_ties", "--tables", "ono-2p",
                                      "--deals", "1000"])
    assert "also holds basic-2p, which this run would drop" in got
    assert sorted(p.name for p in out.iterdir()) == ["ceiling-ties.json"]


def test_bench_suite_records_commands_that_parse_back(tmp_path, monkeypatch):
    """The time command's agents come before --tables (which would take them), and both
    commands name the suite."""
    timing = bench_main("bench_suite", monkeypatch, "timing")
    g = timing.__globals__
    card = {"timing": {"tables": {"basic-2p": 1.0}},
            "tables": {"basic-2p": {"rows": [{"deals": 10, "slow": False},
                                             {"deals": 5, "slow": True}]}}}
    monkeypatch.setitem(g, "out_dir", lambda version: tmp_path)
    monkeypatch.setitem(g, "read_card", lambda path: card)
    monkeypatch.setitem(g, "format_card_markdown", lambda c: "")
    def bench_cli(cmd, **kwargs):   # stands for ono-bench: its card's folder
        Path(cmd[cmd.index("--out") + 1]).mkdir(parents=True)

    monkeypatch.setitem(g, "subprocess", types.SimpleNamespace(run=bench_cli, DEVNULL=None))
    args = types.SimpleNamespace(suite="latest", tables=["basic-2p"], workers=1,
                                 agents=["greedy"], note="n")
    timing(args)
    from ono_env.arena.suite import load_suite

    version = load_suite("latest").version
    text = (tmp_path / "timing" / "timing-greedy.md").read_text()
    assert (f"`python benchmarks/bench_suite.py --suite {version} time --workers 1 greedy "
            f"--tables basic-2p`") in text
    source = (BENCH / "bench_suite.py").read_text()
    assert 'bench_suite.py --suite {suite.version} ladder "' in source
