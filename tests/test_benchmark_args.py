"""The benchmark scripts' argument checks: one line before any work, no file replaced, the
numbers they record are the ones they measured (``benchmarks/``, with ``bench_args.py``)."""

from __future__ import annotations

import argparse
import json
import runpy
import shutil
import subprocess
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
    ("bench_core", ["--out", "{out}"], "results.json"),
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
    ("bench_search_margins", ["--table", "ono-3", "--out", "{out}"], "results.md"),
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

    assert list(tmp_path.iterdir()) == []   # its temporary folders removed as the work failed


def test_bench_ray_without_ray_is_one_line_before_any_folder(tmp_path, monkeypatch):
    # before: a traceback at the first import of ray, and its temporary folders left
    import ono_env.train.rllib as R
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    main = bench_main("bench_ray", monkeypatch)

    def missing(what):
        raise ValueError(f"{what} needs Ray RLlib and torch (ray is not installed): {R.RAY_HINT}")
    monkeypatch.setattr(R, "require_ray", missing)
    message = refused(main, monkeypatch, ["bench_ray", "--skip-speed", "--skip-strength"])
    assert message == ("bench_ray: every part needs Ray RLlib and torch (ray is not installed): "
                       "pip install 'ono-env[ray]'")
    assert list(tmp_path.iterdir()) == []

def test_bench_train_counts_the_steps_the_trainer_did(monkeypatch):
    """The trainer rounds the steps asked up to whole rollouts: the rate is of its count."""
    one_run = bench_main("bench_train", monkeypatch, "one_run")
    monkeypatch.setitem(one_run.__globals__, "_trainer",
                        lambda algo: lambda cfg: {"steps": 8192, "bf16": False})
    clock = iter([10.0, 12.0] * 3)
    monkeypatch.setitem(one_run.__globals__, "time",
                        types.SimpleNamespace(perf_counter=lambda: next(clock)))
    assert one_run("ppo", 100, 1, 0) == 4096.0   # 8,192 steps in 2 s, not 100
    # the page's count of the steps trained is of the measured calls, not of the warm-ups
    trained = set()
    monkeypatch.setitem(one_run.__globals__, "TRAINED", trained)
    one_run("ppo", 100, 1, 0)   # a warm-up: no label
    assert trained == set()
    one_run("ppo", 100, 1, 0, label="idle, ppo")
    assert trained == {8192} and one_run.__globals__["trained_text"](trained) == "8,192"


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


def test_bench_core_writes_the_rates_it_measured(tmp_path, monkeypatch, capsys):
    """``--out``: results.json holds each measured rate and results.md's tables show them."""
    main = bench_main("bench_core", monkeypatch)
    fakes = {
        "engine_rate": lambda players, batch, n: 1e6 * players + batch,
        "python_loop_rate": lambda players, batch, n: 1e5 * players + batch,
        "vecenv_rate": lambda players, steps: 3e6 + players,
        "gym_vector_rate": lambda players, steps: 4e6 + players,
        "aec_rate": lambda wrapped, n: 60_000.0 if wrapped else 75_000.0,
        "rlcard_rates": lambda n: (80_000.0, 30_000.0),
        "import_cpu_seconds": lambda fresh, prebuilt=True: 1.5 if prebuilt else 20.0,
        "instructions_per_decision": lambda cases: {case: 300.0 for case in cases},
        "truncation_table": lambda episodes: [("basic", 2, episodes, 0, 81.5, 66)],
    }
    for name, fake in fakes.items():
        monkeypatch.setitem(main.__globals__, name, fake)
    monkeypatch.setattr(sys, "argv", ["bench_core", "--quick", "--rounds", "3",
                                      "--out", str(tmp_path / "o")])
    main()
    data = json.loads((tmp_path / "o" / "results.json").read_text())
    assert data["command"] == ("python benchmarks/bench_core.py --quick --rounds 3 --out "
                               + str(tmp_path / "o"))
    assert data["batches"][2] == {"players": 2, "batch": 4096, "engine": 2_004_096.0,
                                  "python_loop": 204_096.0}
    assert data["one_game"] == {"python_loop": 200_001.0, "raw_env": 75_000.0, "env": 60_000.0,
                                "rlcard_game_step": 80_000.0, "rlcard_env_step": 30_000.0}
    assert data["random_play"] == [{"rules": "basic", "players": 2, "episodes": 100,
                                    "truncated": 0, "mean": 81.5, "median": 66}]
    md = (tmp_path / "o" / "results.md").read_text()
    assert "| engine, `VecGame.play_random`, B=4096 | 2.00M/s | 4.00M/s |" in md
    assert "| PettingZoo `raw_env`, one game through the AEC API | 75.0k/s | |" in md
    assert "the B=1 Python loop 2.50x RLCard's `UnoGame.step` loop" in md
    assert "| `classic` | 4 | 300 |" in md and "| `basic` | 2 | 100 | 0 | 81.5 | 66 |" in md
    assert "medians of 3 interleaved rounds" in md
    assert data["instructions_not_counted"] is None
    assert "1.5 s of CPU as this install loads its kernels (prebuilt kernels: " in md
    assert "      2  4096    2,004,096      204,096" in capsys.readouterr().out   # as printed


def test_bench_probes_checks_each_ensemble_member(tmp_path, monkeypatch):
    from ono_env.agents.learned import shipped_models

    main = bench_main("bench_probes", monkeypatch)
    v1 = shipped_models()["ppo-basic-2p"]
    got = refused(main, monkeypatch, ["bench_probes", "--tables", "basic-2", "--deals", "2",
                                      "--probes", f"ensemble:{v1}", "--out", str(tmp_path / "o")])
    assert got.startswith("bench_probes: --probes at basic-2: ensemble member ")
    assert "observation version 1" in got and not (tmp_path / "o").exists()


def test_bench_rollout_targets_needs_a_decision(tmp_path, monkeypatch):
    """Seed 1, one step of one game: the policy meets no decision with a choice."""
    main = bench_main("bench_rollout_targets", monkeypatch)
    got = refused(main, monkeypatch, [
        "bench_rollout_targets", "--table", "basic-2", "--steps", "1", "--games", "1",
        "--procs", "1", "--batch", "1", "--seed", "1", "--deals", "2", "--out", str(tmp_path / "o"),
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
            "--games", "1", "--procs", "1", "--batch", "1", "--seed", "1", "--deals", "2"]
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


def test_bench_generalist_keeps_a_part_only_as_asked(tmp_path, monkeypatch, capsys):
    """A part already in results.json is kept when asked with the options it was measured
    with, and refused when asked with others (before: "already measured", status 0, and the
    rows of the other options kept)."""
    import shutil

    main = bench_main("bench_generalist", monkeypatch)
    monkeypatch.setitem(main.__globals__, "part_many", lambda *a: pytest.fail("played"))
    out = tmp_path / "g"
    out.mkdir()
    shipped = BENCH.parent / "docs/results/generalist/results.json"
    shutil.copy(shipped, out / "results.json")
    got = refused(main, monkeypatch, ["bench_generalist", "--model", "ppo-any", "--parts", "ten",
                                      "--deals-ten", "4", "--seed", "5", "--out", str(out)])
    assert got == (f"bench_generalist: --parts ten: {out / 'results.json'} holds it measured "
                   f"with --deals-ten 10000, --seed 2026, not as asked now; allowed: --again to "
                   f"measure it again, or the options it was measured with")
    assert (out / "results.json").read_bytes() == shipped.read_bytes()
    monkeypatch.setattr(sys, "argv", ["bench_generalist", "--model", "ppo-any", "--parts", "ten",
                                      "--deals-ten", "10000", "--out", str(out)])
    main()
    assert "ten: already measured" in capsys.readouterr().err
    # the presets in another order are the same part (before: refused as other options)
    presets = "wikipedia,basic,classic,ono,stacking,uno2018"
    monkeypatch.setattr(sys, "argv", ["bench_generalist", "--model", "ppo-any", "--parts", "ten",
                                      "--deals-ten", "10000", "--ten-presets", presets,
                                      "--out", str(out)])
    main()
    assert "ten: already measured" in capsys.readouterr().err


def test_bench_ladder_render_refuses_a_file_missing_keys(tmp_path, monkeypatch):
    main = bench_main("bench_ladder", monkeypatch)
    data = json.loads((BENCH.parent / "docs/results/ladder/ladder.json").read_text())
    del data["results"][0]["deals"]
    path = tmp_path / "ladder.json"
    path.write_text(json.dumps(data))
    got = refused(main, monkeypatch, ["bench_ladder", "--render", str(path)])
    assert got.startswith(f"bench_ladder: --render {path}: not a ladder.json") and "'deals'" in got
    assert json.loads(path.read_text()) == data and not path.with_suffix(".md").exists()


def test_bench_ladder_keeps_a_stopped_runs_pairings_with_its_settings(tmp_path, monkeypatch):
    """A Ctrl-C keeps the pairings that finished in ladder.partial.json, with the rules,
    games and seed that played them (before: the pairings alone)."""
    main = bench_main("bench_ladder", monkeypatch)

    def stopped(args, baselines, search, pairs, results, shares):
        results.append({"a": "greedy", "b": "random", "wins_a": 3, "games": 4})
        raise KeyboardInterrupt
    monkeypatch.setitem(main.__globals__, "two_player", stopped)
    monkeypatch.setattr(sys, "argv", ["bench_ladder", "--games-cheap", "8", "--games-search",
                                      "6", "--seed", "5", "--out", str(tmp_path / "l")])
    with pytest.raises(KeyboardInterrupt):
        main()
    data = json.loads((tmp_path / "l" / "ladder.partial.json").read_text())
    assert {k: data[k] for k in ("complete", "rules", "players", "games_cheap", "games_search",
                                 "seed")} == {"complete": False, "rules": "basic", "players": 2,
                                              "games_cheap": 8, "games_search": 6, "seed": 5}
    assert data["results"] == [{"a": "greedy", "b": "random", "wins_a": 3, "games": 4}]


def test_bench_web_load_imports_the_server_path_it_is_given(tmp_path, monkeypatch):
    """From the repository's root, ``python -c``/``-m`` found the checkout's own ono_env/
    before --server-path's: the server ran the checkout whatever the path named. Now the
    --server-path tree is what the server imports; one that cannot be imported is one line
    naming the sub-run, before any server starts (before: a traceback)."""
    main = bench_main("bench_web_load", monkeypatch)
    g = main.__globals__

    def no_server(*args, **kwargs):
        pytest.fail("a server was started")
    monkeypatch.setitem(g, "subprocess", types.SimpleNamespace(
        run=subprocess.run, PIPE=subprocess.PIPE, Popen=no_server))
    monkeypatch.setitem(g["sub_run"].__globals__, "subprocess", subprocess)
    (tmp_path / "tree" / "ono_env").mkdir(parents=True)
    (tmp_path / "tree" / "ono_env" / "__init__.py").write_text("raise ImportError('the tree')\n")
    monkeypatch.chdir(BENCH.parent)   # the repository's root, which holds ono_env/ too
    got = refused(main, monkeypatch, ["bench_web_load", "--server-path", str(tmp_path / "tree"),
                                      "--out", str(tmp_path / "o")])
    assert got.startswith(f"bench_web_load: the sub-run `{sys.executable} -c ")
    assert got.endswith("stopped with exit status 1 (its error is above)")


def test_bench_mirrored_records_the_games_played(tmp_path, monkeypatch):
    import shlex

    main = bench_main("bench_mirrored", monkeypatch)
    path = tmp_path / "a b" / "m.json"
    monkeypatch.setattr(sys, "argv", ["bench_mirrored", "--games", "5", "--opponents", "random",
                                      "--out", str(path)])
    main()
    data = json.loads(path.read_text())
    (row,) = data["rows"]
    assert row["games"] == 6 and row["mirrored"]["games"] == 6 and row["mirrored"]["deals"] == 3
    words = shlex.split(data["command"])   # before: the path's space made two words
    assert words[words.index("--out") + 1] == str(path)


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


def test_train_any_rules_ends_1_when_a_table_failed(tmp_path, monkeypatch, capsys):
    """A table whose training failed is a row with its status, and the script's own status
    is 1 (before: 0, the failure only in a printed line)."""
    main = bench_main("train_any_rules", monkeypatch)

    def train_one(preset, players, variant, minutes, out, extra):
        return {"preset": preset, "players": players, "variant": variant, "command": "c",
                "rc": 2, "seconds": 0.0, "run_dir": str(out / "runs" / preset),
                "final_eval": None}
    monkeypatch.setitem(main.__globals__, "train_one", train_one)
    monkeypatch.setattr(sys, "argv", ["train_any_rules", "--tables", "basic:2,ono:3", "--out",
                                      str(tmp_path / "o")])
    assert main() == 1
    err = capsys.readouterr().err
    assert err.startswith("train_any_rules: the training of basic:2, ono:3 failed")
    rows = json.loads((tmp_path / "o" / "results.json").read_text())
    assert [(r["preset"], r["rc"]) for r in rows] == [("basic", 2), ("ono", 2)]


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
    text = json.dumps({"budget_steps": 3_000_000, "deals": 2000, "seed": 0, "command": "c",
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


def test_bench_ceiling_ties_checks_its_folder_before_any_game(tmp_path, monkeypatch):
    """Before: a page folder that could not be made was a traceback once every pairing had
    been played."""
    main = bench_main("bench_ceiling_ties", monkeypatch)
    (tmp_path / "docs").write_text("a file where the results' folder would be")
    monkeypatch.setitem(main.__globals__, "ROOT", tmp_path)
    monkeypatch.setitem(main.__globals__, "play_pairing", _no_work)
    got = refused(main, monkeypatch, ["bench_ceiling_ties", "--deals", "2"])
    assert got.startswith("bench_ceiling_ties: --suite: ")


def test_best_from_names_what_a_file_lacks(tmp_path, monkeypatch):
    """Before: '[]' gave Python's "list indices must be integers or slices, not str"."""
    main = bench_main("bench_color_symmetry", monkeypatch)
    monkeypatch.setitem(main.__globals__, "run_arena", _no_work)
    for text in ("[]", '{"rows": 5}', '{"rows": [1]}'):
        (tmp_path / "r.json").write_text(text)
        got = refused(main, monkeypatch, ["bench_color_symmetry", "--best-from",
                                          str(tmp_path / "r.json"), "--out", str(tmp_path / "o")])
        assert got.endswith("not a results.json of bench_generalist.py (an object whose 'rows' "
                            "are a list of measurements)")
    assert not (tmp_path / "o").exists()


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


def test_bench_args_sub_run_and_whole_rollouts(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import bench_args

    cmd = [sys.executable, "-c", "raise SystemExit(3)"]
    with pytest.raises(SystemExit) as exc:
        bench_args.sub_run("s", cmd)
    assert str(exc.value) == (f"s: the sub-run `{sys.executable} -c 'raise SystemExit(3)'` "
                              f"stopped with exit status 3 (its error is above)")
    assert bench_args.sub_run("s", [sys.executable, "-c", "pass"]).returncode == 0
    with pytest.raises(SystemExit) as exc:
        bench_args.whole_rollouts("s", "--steps", 1000, 16384)
    assert str(exc.value) == ("s: --steps 1000; allowed: 16,384 or more (one rollout: training "
                              "runs in whole rollouts of 16,384 steps)")
    bench_args.whole_rollouts("s", "--steps", 16384, 16384)


def _no_work(*args, **kwargs):
    pytest.fail("the work began")


# script, its arguments ({tmp}: a temporary folder), what the one line holds, and the parts of
# the work stubbed so that a script that did not refuse fails at once
REFUSALS = [
    # an option of a part that does not run (before: taken unchecked, and unused)
    ("bench_train", ["--learn-games", "0"], "bench_train: --learn-games is read by the part "
     "that --learn-steps runs, which is not asked for; allowed: --learn-games with --learn-steps",
     ["one_run"]),
    ("bench_train", ["--mixture-device", "cuda"], "bench_train: --mixture-device is read by the "
     "part that --mixture runs, which is not asked for; allowed: --mixture-device with --mixture",
     ["one_run"]),
    ("bench_train", ["--skip-idle", "--skip-busy", "--learn-steps", "16384", "--rounds", "7"],
     "bench_train: only part 3 runs (its steps are --learn-steps): --rounds is not used there; "
     "allowed: leave it out", ["one_run", "learning"]),
    ("bench_train", ["--skip-idle", "--threads", "1"], "bench_train: only part 2 (busy machine) "
     "runs, which trains at 1, 2 and auto threads: --threads is not used there", ["one_run"]),
    ("bench_rollout_targets", ["--table", "basic-2", "--betas", "0.1,0.1", "--procs", "1",
                               "--out", "{tmp}/o", "--models", "{tmp}/m"],
     "bench_rollout_targets: --betas: '0.1' is given twice; allowed: each beta once",
     ["collect"]),
    ("bench_rollout_targets", ["--table", "basic-2", "--betas", "0.1,0.10", "--procs", "1",
                               "--out", "{tmp}/o", "--models", "{tmp}/m"],
     "'0.1' and '0.10' are one beta to 6 significant digits", ["collect"]),
    ("bench_exploiters", ["--steps", "1", "--out", "{tmp}/o"],
     "bench_exploiters: --steps 1; allowed: 16,384 or more (one rollout", ["exploit"]),
    ("bench_exploiters", ["--deals", "1", "--out", "{tmp}/o"],
     "bench_exploiters: --deals 1; allowed: 2 or more", ["exploit"]),
    ("bench_exploiters", ["--rules", "basic", "basic", "--out", "{tmp}/o"],
     "bench_exploiters: --rules: 'basic' is given twice", ["exploit"]),
    ("bench_observation_worth", ["--steps", "1000", "--out", "{tmp}/o"],
     "bench_observation_worth: --steps 1000; allowed: 16,384 or more (one rollout",
     ["train_one", "train_all"]),
    ("bench_observation_worth", ["--steps", "0", "--out", "{tmp}/o"],
     "bench_observation_worth: --steps 0; allowed: 16,384 or more", ["train_one", "train_all"]),
    ("bench_observation_worth", ["--presets", "", "--out", "{tmp}/o"],
     "bench_observation_worth: --presets '': '' is not a preset; allowed: basic, ",
     ["train_one", "train_all"]),
    ("bench_observation_worth", ["--presets", "basic,basic", "--out", "{tmp}/o"],
     "bench_observation_worth: --presets: 'basic' is given twice", ["train_one", "train_all"]),
    ("bench_observation_worth", ["--threads", "0", "--out", "{tmp}/o"],
     "bench_observation_worth: --threads 0; allowed: 1 or more", ["train_one", "train_all"]),
    ("bench_observation_worth", ["--seed", "-1", "--out", "{tmp}/o"],
     "bench_observation_worth: --seed -1; allowed: 0 or more", ["train_one", "train_all"]),
    ("bench_probes", ["--tables", "ono-3", "--deals", "2", "--probes",
                      "hide-history,hide-history", "--out", "{tmp}/o"],
     "bench_probes: --probes: 'hide-history' is given twice", ["run_arena"]),
    ("bench_probes", ["--tables", "ono-3", "--deals", "2", "--model", "greedy",
                      "--out", "{tmp}/o"],
     "bench_probes: --model 'greedy': neither a shipped model nor a model file; allowed: a "
     "shipped model (ppo-any, ", ["run_arena"]),
    ("bench_color_symmetry", ["--tables", "ono-3", "--deals", "2", "--model", "greedy",
                              "--out", "{tmp}/o"],
     "bench_color_symmetry: --model 'greedy': neither a shipped model nor a model file",
     ["run_arena"]),
    ("bench_generalist", ["--model", "greedy", "--out", "{tmp}/o"],
     "bench_generalist: --model 'greedy': neither a shipped model nor a model file; allowed: a "
     "shipped model (ppo-any, ", ["part_two"]),
    ("bench_generalist", ["--model", "{tmp}/gone.safetensors", "--out", "{tmp}/o"],
     "bench_generalist: --model '{tmp}/gone.safetensors': no such file; allowed: a shipped "
     "model (ppo-any, ", ["part_two"]),
    ("bench_rollout_targets", ["--table", "basic-2", "--model", "greedy", "--out", "{tmp}/o"],
     "bench_rollout_targets: --model 'greedy': neither a shipped model nor a model file",
     ["collect"]),
    # before: a traceback at the first table past the arena's games, after the others played
    ("bench_interval_coverage", ["--deals-scale", "3000", "--out", "{tmp}/o"],
     "bench_interval_coverage: --deals-scale 3000 gives more than 100,000,000 games at a table; "
     "allowed: a scale of at most 2777.77", ["measure"]),
    ("bench_table_steps", ["--runs", "5", "--out", "{tmp}/o"],
     "bench_table_steps: --runs 5 without --vs; allowed: --runs with --vs", ["measure"]),
    ("bench_search_margins", ["--margins", "0.1,0.10", "--out", "{tmp}/o"],
     "bench_search_margins: --margins '0.1,0.10': a margin given twice", ["play"]),
    ("bench_search_margins", ["--margins", "-0.1", "--out", "{tmp}/o"],
     "bench_search_margins: --margins '-0.1'; allowed: finite numbers of 0 or more", ["play"]),
    ("bench_search_margins", ["--against", "ppo-any", "--out", "{tmp}/o"],
     "bench_search_margins: --against 'ppo-any'; allowed: best, random, greedy, color, defensive", ["play"]),
    ("bench_search_margins", ["--model", "greedy", "--out", "{tmp}/o"],
     "bench_search_margins: --model 'greedy': neither a shipped model nor a model file",
     ["play"]),
    ("bench_search_margins", ["--table", "ono-3,ono-4", "--out", "{tmp}/o"],
     "bench_search_margins: --table 'ono-3,ono-4'; allowed: one table", ["play"]),
    ("bench_search_margins", ["--worlds", "0", "--out", "{tmp}/o"],
     "bench_search_margins: --worlds 0; allowed: 1 or more", ["play"]),
    ("bench_search_margins", ["--model-deals", "0", "--out", "{tmp}/o"],
     "bench_search_margins: --model-deals 0; allowed: 1 or more", ["play"]),
    ("bench_search_margins", ["--model-deals", "4", "--view", "hands", "--out", "{tmp}/o"],
     "bench_search_margins: --model-deals 4 with --view hands; allowed: --model-deals above 1 "
     "only with --view fair", ["play"]),
    ("bench_search_margins", ["--model-deals", "4", "--against", "random", "--out", "{tmp}/o"],
     "bench_search_margins: --model-deals 4 with --against random; allowed: --model-deals above "
     "1 only against a baseline the worlds can fit (greedy, color, defensive)", ["play"]),
]


@pytest.mark.parametrize("script,args,said,work", REFUSALS,
                         ids=[f"{s}-{' '.join(a[:4])}" for s, a, _, _ in REFUSALS])
def test_benchmarks_refuse_before_any_work(script, args, said, work, tmp_path, monkeypatch):
    main = bench_main(script, monkeypatch)
    for name in work:
        monkeypatch.setitem(main.__globals__, name, _no_work)
    if script == "bench_exploiters":   # its default --out: today's page, kept out of reach
        monkeypatch.setitem(main.__globals__, "OUT", tmp_path / "default")
    got = refused(main, monkeypatch, [script] + [a.format(tmp=tmp_path) for a in args])
    assert said.format(tmp=tmp_path) in got
    assert list(tmp_path.iterdir()) == []   # no folder made


def test_bench_rollout_targets_names_a_failing_sub_run(tmp_path, monkeypatch):
    """The pairing's sub-run fails: one line with its command and exit status, no
    traceback."""
    import numpy as np

    main = bench_main("bench_rollout_targets", monkeypatch)
    g = main.__globals__

    def collect(job):   # eight decisions with a choice, each of two legal actions
        mask = np.zeros((8, 85), bool)
        mask[:, :2] = True
        np.savez(job[-1], obs=np.zeros((8, 4), np.float16), mask=mask,
                 values=np.zeros((8, 85), np.float32))
        return {"seed": job[0], "rows": 8, "games": 1, "wins": 0.0, "seconds": 0.0}

    def fit(model_path, obs, mask, values, beta, lr, epochs, batch, seed, out):
        Path(out).write_text("a fitted model")
        return {"beta": beta, "model": str(out), "moved": 0.0, "kl": 0.0, "seconds": 0.0}

    here = tmp_path / "here"
    here.mkdir()
    (here / "bench_headroom.py").write_text("raise SystemExit(3)\n")
    for name, value in (("collect", collect), ("fit", fit), ("HERE", here)):
        monkeypatch.setitem(g, name, value)
    got = refused(main, monkeypatch, [
        "bench_rollout_targets", "--table", "basic-2", "--betas", "0.5", "--procs", "1",
        "--batch", "8", "--deals", "2", "--out", str(tmp_path / "o"), "--models",
        str(tmp_path / "m")])
    assert got.startswith(f"bench_rollout_targets: the sub-run `{sys.executable} "
                          f"{here / 'bench_headroom.py'} --tables basic-2 ")
    assert got.endswith("` stopped with exit status 3 (its error is above)")
    # no results name the fitted models: they go, so that the same command runs again (before:
    # it was refused for them as an earlier run's results)
    assert list((tmp_path / "m").iterdir()) == []


def _exploit_row(target, rules, players, *, steps, deals, seed, run_dir, torch_threads):
    """Stands for ``ono-exploit``: the row of a trained exploiter (a whole rollout more)."""
    return {"target": target, "rules": rules, "players": players, "steps": steps + 16384 - 1,
            "budget_steps": steps, "seed": seed, "rate": 0.5, "low": 0.4, "high": 0.6,
            "deals": deals, "train_seconds": 6.0, "run_dir": str(run_dir),
            "model": str(Path(run_dir) / "model.safetensors")}


def test_bench_exploiters_writes_into_out(tmp_path, monkeypatch):
    """--out takes the json and the page (the default stays untouched); the run folders go
    apart from the default's, and the page says the steps trained."""
    main = bench_main("bench_exploiters", monkeypatch)
    g = main.__globals__
    monkeypatch.setitem(g, "ROOT", tmp_path)
    monkeypatch.setitem(g, "OUT", tmp_path / "default")
    monkeypatch.setitem(g, "exploit", _exploit_row)
    monkeypatch.setattr(sys, "argv", ["bench_exploiters", "--rules", "ono", "--steps", "16385",
                                      "--deals", "2", "--out", str(tmp_path / "mine")])
    main()
    data = json.loads((tmp_path / "mine" / "exploiters-16385.json").read_text())
    assert data["command"].endswith("--steps 16385 --deals 2 --out mine")   # from the root
    (folder,) = {Path(r["run_dir"]).parts[:3] for r in data["results"]}
    assert folder[:2] == ("runs", "exploiters") and folder[2].startswith("mine-")
    assert {Path(r["run_dir"]).name for r in data["results"]} == {
        f"ono-{t}" for t in g["TARGETS"]["ono"]}
    page = (tmp_path / "mine" / "exploiters.md").read_text()
    assert "Steps trained (each budget in whole rollouts of the trainer, rounded up): " \
           "0.016385M: 32,768." in page
    assert not (tmp_path / "default").exists()
    # another --out of the same name elsewhere: run folders of its own (before: the same
    # runs/exploiters/mine/, whose exploiters the second run deleted)
    monkeypatch.setattr(sys, "argv", ["bench_exploiters", "--rules", "ono", "--steps", "16385",
                                      "--deals", "2", "--out", str(tmp_path / "b" / "mine")])
    main()
    other = json.loads((tmp_path / "b" / "mine" / "exploiters-16385.json").read_text())
    assert {Path(r["run_dir"]).parts[2] for r in other["results"]} != {folder[2]}


def test_bench_exploiters_force_measures_only_its_rules_again(tmp_path, monkeypatch):
    """--force with some --rules measures those afresh and keeps the others' rows (before:
    it dropped them); with other --deals than the file's it would drop them: refused."""
    main = bench_main("bench_exploiters", monkeypatch)
    g = main.__globals__
    monkeypatch.setitem(g, "ROOT", tmp_path)
    monkeypatch.setitem(g, "OUT", tmp_path / "default")
    calls = []

    def row(target, rules, *args, **kwargs):
        calls.append((rules, target))
        return _exploit_row(target, rules, *args, **kwargs)
    monkeypatch.setitem(g, "exploit", row)
    base = ["bench_exploiters", "--steps", "16384", "--deals", "2", "--out", str(tmp_path / "o")]
    monkeypatch.setattr(sys, "argv", base)
    main()
    path = tmp_path / "o" / "exploiters-16384.json"
    before = json.loads(path.read_text())["results"]
    calls.clear()
    monkeypatch.setattr(sys, "argv", base + ["--rules", "basic", "--force"])
    main()
    after = json.loads(path.read_text())["results"]
    assert {r for r, _ in calls} == {"basic"} and len(calls) == len(g["TARGETS"]["basic"])
    assert [r for r in after if r["rules"] == "ono"] == [r for r in before if r["rules"] == "ono"]
    assert len(after) == len(before)
    got = refused(main, monkeypatch, base[:4] + ["3", "--out", str(tmp_path / "o"), "--rules",
                                                 "basic", "--force"])
    assert "holds rows of --rules ono measured with --deals 2 --seed 0, which those settings " \
           "would drop; allowed: --rules basic ono" in got
    assert json.loads(path.read_text())["results"] == after
    # a file of the old format (the budget as "steps") is read, with --force too: its other
    # preset's rows stay (a review found them dropped without a word)
    old_format = json.loads(path.read_text())
    old_format["steps"] = old_format.pop("budget_steps")
    path.write_text(json.dumps(old_format))
    monkeypatch.setattr(sys, "argv", base + ["--rules", "basic", "--force"])
    main()
    assert [r for r in json.loads(path.read_text())["results"] if r["rules"] == "ono"] == \
        [r for r in after if r["rules"] == "ono"]
    # another budget's file that cannot be read is named before any work (before: a traceback
    # from the page, after the first exploiter had trained)
    good = json.loads(path.read_text())
    for bad, why in (({}, "KeyError: "), ({**good, "budget_steps": "3000000"},
                                          "TypeError: its budget_steps is not a whole number"),
                     ({**good, "results": [{}]}, "TypeError: a row lacks one of high, low, rate"),
                     # before: a KeyError or a format error from the page, after the training
                     ({**good, "results": [{**good["results"][0], "rules": "zzz"}]},
                      "ValueError: a row of rules 'zzz'"),
                     ({**good, "results": [{**good["results"][0], "rate": "half"}]},
                      "ValueError: the row of ('basic', "),
                     ({**good, "results": good["results"][:1] * 2}, "ValueError: two rows of"),
                     ({**good, "results": [{**good["results"][0], "rules": ["basic"]}]},
                      "TypeError: a row's rules or target is not a text"),
                     ({**good, "results": [{**good["results"][0], "target": "nosuch"}]},
                      "ValueError: a row of rules 'basic', target 'nosuch'"),
                     ({**good, "results": [{**good["results"][0], "train_seconds": -1}]},
                      "ValueError: the row of ('basic', "),
                     ({**good, "results": [{**good["results"][0], "low": None}]},
                      "ValueError: the row of ('basic', "),
                     ({**good, "results": [{**good["results"][0], "high": 10**400}]},
                      "OverflowError: ")):
        (tmp_path / "o" / "exploiters-99999.json").write_text(json.dumps(bad))
        calls.clear()
        got = refused(main, monkeypatch, base + ["--rules", "basic", "--force"])
        assert "exploiters-99999.json: cannot read the rows measured before (" + why in got
        assert calls == []


def test_bench_exploiters_page_says_each_columns_deals_and_seed(monkeypatch):
    table = bench_main("bench_exploiters", monkeypatch, "table")
    rows = [{"rules": "basic", "target": "random", "rate": 0.5, "low": 0.4, "high": 0.6,
             "train_seconds": 60.0, "steps": 3_014_656}]
    runs = [{"budget_steps": 3_000_000, "deals": 2000, "seed": 0, "command": "a", "results": rows},
            {"budget_steps": 10_000_000, "deals": 500, "seed": 1, "command": "b",
             "results": [{**rows[0], "steps": 10_010_624}]}]
    page = table(runs)
    assert "first 2,000 deals" not in page and "seed 0)" not in page
    assert "| 3M steps, 2,000 deals, seed 0 | 10M steps, 500 deals, seed 1 |" in page
    assert "3M: 3,014,656; 10M: 10,010,624" in page
    same = table([runs[0], {**runs[1], "deals": 2000, "seed": 0}])
    assert "seed 0) for the budget" in same and "on the first 2,000 deals" in same


class _Arena:
    """Stands for an arena run of two deals."""

    def paired(self, seat):
        return {"rate": 0.5, "low": 0.4, "high": 0.6, "deals": 2}

    def per_deal(self, seat):
        import numpy as np

        return np.arange(2), np.array([0.5, 0.25]), 4   # two deals of two games


def test_bench_observation_worth_says_the_steps_trained(tmp_path, monkeypatch):
    main = bench_main("bench_observation_worth", monkeypatch)
    monkeypatch.setitem(main.__globals__, "train_one", lambda *a: {
        "model": "m", "steps": 32_768, "steps_per_second": 1.0, "train_seconds": 0.0})
    monkeypatch.setitem(main.__globals__, "play", lambda *a: _Arena())
    monkeypatch.setattr(sys, "argv", ["bench_observation_worth", "--presets", "basic",
                                      "--steps", "20000", "--deals", "2", "--out",
                                      str(tmp_path / "o")])
    main()
    page = (tmp_path / "o" / "results.md").read_text()
    assert "at 32,768 steps (--steps 20,000 in whole rollouts) per variant" in page
    # every variant scored the same on both deals: the paired difference is 0, and its
    # interval keeps a width (before: [0, 0] from two deals)
    rows = json.loads((tmp_path / "o" / "results.json").read_text())["rows"]
    minus = [r["minus v1"] for r in rows if "minus v1" in r]
    assert minus and all(m[0] == 0 and m[1] < -0.3 and m[2] > 0.3 for m in minus)


def test_bench_suite_time_checks_every_agent_first(tmp_path, monkeypatch):
    import subprocess

    main = bench_main("bench_suite", monkeypatch)
    g = main.__globals__
    monkeypatch.setitem(g, "out_dir", lambda version: tmp_path / f"suite-{version}")
    monkeypatch.setitem(g, "subprocess", types.SimpleNamespace(
        run=_no_work, DEVNULL=None, CalledProcessError=subprocess.CalledProcessError))
    got = refused(main, monkeypatch, ["bench_suite", "time", "greedy", "nosuchagent",
                                      "--tables", "basic-2p"])
    assert got.startswith("bench_suite: time: agent 'nosuchagent' at basic-2p: ")
    got = refused(main, monkeypatch, ["bench_suite", "time", "nosuchagent"])
    assert got.startswith("bench_suite: time: agent 'nosuchagent' at ")
    got = refused(main, monkeypatch, ["bench_suite", "time", "greedy", "greedy"])
    assert got == "bench_suite: time: agent 'greedy': given twice; allowed: each agent once"
    assert list(tmp_path.iterdir()) == []   # no timing folder
    from ono_env.arena.suite import load_suite

    card = tmp_path / f"suite-{load_suite('latest').version}" / "timing" / "greedy" / "card.md"
    card.parent.mkdir(parents=True)
    card.write_text("earlier")
    got = refused(main, monkeypatch, ["bench_suite", "time", "random", "greedy"])
    assert got.startswith("bench_suite: time: agent 'greedy': ") and "already holds card.md" in got


def test_bench_suite_time_names_a_model_files_card_in_one_folder(monkeypatch):
    """Before: ``time path/to/m.safetensors`` made folders inside ``timing/`` for its card,
    and the table's file name held the path's '/': it could not be written once every agent
    was timed; an absolute path made the card's folder the model file itself."""
    name_part = bench_main("bench_suite", monkeypatch, "name_part")
    assert name_part("benchmarks/models/m.safetensors") == "benchmarks-models-m.safetensors"
    assert name_part("/tmp/runs/m.safetensors") == "tmp-runs-m.safetensors"
    assert name_part("pimc:8") == "pimc-8" and name_part("pimc:8", colon="") == "pimc8"
    assert name_part("ppo-any") == "ppo-any" and name_part("/") == "agent"


def test_bench_suite_intervals_refuses_a_suite_other_than_its_cards(tmp_path, monkeypatch):
    """Before: ``--suite 3 intervals CARD`` took --suite and wrote the page of the card's own
    version."""
    main = bench_main("bench_suite", monkeypatch)
    monkeypatch.setitem(main.__globals__, "out_dir", lambda version: tmp_path / f"suite-{version}")
    card = BENCH.parent / "docs/results/suite-1/timing/greedy/card.json"
    got = refused(main, monkeypatch, ["bench_suite", "--suite", "3", "intervals", str(card)])
    assert got == (f"bench_suite: intervals: --suite 3 and {card}, a card of suite version 1; "
                   f"allowed: the card's version, or no --suite (the card says its version)")
    assert not tmp_path.joinpath("suite-1").exists() and not tmp_path.joinpath("suite-3").exists()


def test_bench_suite_time_names_a_failing_sub_run(tmp_path, monkeypatch):
    main = bench_main("bench_suite", monkeypatch)
    g = main.__globals__
    monkeypatch.setitem(g, "out_dir", lambda version: tmp_path)
    ran = []

    def failing(cmd, **kwargs):   # ono-bench refusing, as a process that exits with 2
        ran.append(cmd)
        return types.SimpleNamespace(returncode=2)

    monkeypatch.setitem(g["sub_run"].__globals__, "subprocess",
                        types.SimpleNamespace(run=failing))
    got = refused(main, monkeypatch, ["bench_suite", "time", "greedy", "--tables", "basic-2p"])
    assert got.startswith(f"bench_suite: time: the sub-run `{sys.executable} -m "
                          f"ono_env.apps.bench_cli greedy --suite ")
    assert got.endswith("` stopped with exit status 2 (its error is above)") and len(ran) == 1


def test_bench_suite_ladder_refuses_a_version_to_reuse_that_is_not_there(tmp_path, monkeypatch):
    main = bench_main("bench_suite", monkeypatch)
    monkeypatch.setitem(main.__globals__, "out_dir", lambda v: tmp_path / f"suite-{v}")
    monkeypatch.setitem(main.__globals__, "play_ladder", _no_work)
    from ono_env.arena.suite import load_suite

    latest = load_suite("latest").version
    (tmp_path / f"suite-{latest}").mkdir()
    (tmp_path / f"suite-{latest}" / "basic-2p.json").write_text("{}")   # kept: not played
    argv = ["bench_suite", "ladder", "--tables", "basic-2p", "--reuse-from"]
    got = refused(main, monkeypatch, [*argv, "99"])
    assert got.startswith("bench_suite: ladder: --reuse-from 99: unknown suite version 99; "
                          "there are: 1, 2, ")
    got = refused(main, monkeypatch, [*argv, "1"])
    assert got.startswith("bench_suite: ladder: --reuse-from 1: suite version 1 has no ladder "
                          "file ") and got.endswith(f"allowed: a version with them ({latest})")


def test_bench_suite_verify_says_when_there_is_nothing_to_verify(tmp_path, monkeypatch, capsys):
    main = bench_main("bench_suite", monkeypatch)
    monkeypatch.setitem(main.__globals__, "out_dir", lambda v: tmp_path)
    monkeypatch.setitem(main.__globals__, "play_pairing", _no_work)
    (tmp_path / "basic-2p.json").write_text(json.dumps({"pairings": [
        {"agent": "greedy", "reference": "random", "seconds": 1.0, "key": "k"}]}))
    monkeypatch.setattr(sys, "argv", ["bench_suite", "verify", "--tables", "basic-2p",
                                      "ono-2p"])
    main()
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["basic-2p:", "  nothing to verify: none of its 1 pairings was carried "
                                    "over from another version (--reuse-from)"]
    assert out[2] == "ono-2p:" and out[3].startswith("  nothing to verify: no ladder file yet (")


def _help(script: str, monkeypatch, capsys, *argv: str) -> str:
    main = bench_main(script, monkeypatch)
    monkeypatch.setattr(sys, "argv", [script, *argv, "--help"])
    with pytest.raises(SystemExit):
        main()
    return " ".join(capsys.readouterr().out.split())


HELPED = ["bench_core", "bench_observation_worth", "bench_prebuilt", "bench_table_steps",
          "bench_update_cost", "bench_web_load", "bench_ladder", "bench_mirrored"]


@pytest.mark.parametrize("script", HELPED)
def test_benchmarks_help_describes_the_script_whole(script, monkeypatch, capsys):
    doc = bench_main(script, monkeypatch, "__doc__")
    assert " ".join(doc.split()) in _help(script, monkeypatch, capsys)


def test_benchmarks_help_says_defaults_and_all_tables(monkeypatch, capsys):
    arena = _help("bench_arena", monkeypatch, capsys)
    assert "(default 100,000;" in arena and "(default basic)" in arena
    assert "(default: greedy color defensive)" in arena
    for script, argv in (("bench_suite", ["ladder"]), ("bench_suite", ["verify"]),
                         ("bench_suite", ["time", "greedy"]), ("bench_ceiling_ties", [])):
        assert "--tables with no names" in _help(script, monkeypatch, capsys, *argv)
    ties = _help("bench_ceiling_ties", monkeypatch, capsys)
    assert "docs/results/suite-<version>/ceiling-ties.md and .json" in ties
    probes = _help("bench_probes", monkeypatch, capsys)
    assert "a shipped model (ppo-any, " in probes and "registered name" not in probes


def test_ceiling_ties_pages_name_their_suite():
    """A page's command makes that page again: it names the suite, which otherwise is the
    latest."""
    pages = sorted((BENCH.parent / "docs" / "results").glob("suite-*/ceiling-ties.md"))
    assert pages
    for page in pages:
        version = page.parent.name.removeprefix("suite-")
        command = page.read_text().split("Regenerate with `")[1].split("`")[0]
        assert f" --suite {version} " in f"{command} ", page


def test_bench_ladder_render_writes_into_out(tmp_path, monkeypatch):
    main = bench_main("bench_ladder", monkeypatch)
    path = tmp_path / "ladder.json"
    shutil.copy(BENCH.parent / "docs/results/ladder/ladder.json", path)
    before = path.read_text()
    monkeypatch.setattr(sys, "argv", ["bench_ladder", "--render", str(path), "--out",
                                      str(tmp_path / "o")])
    main()
    assert path.read_text() == before and not (tmp_path / "ladder.md").exists()
    assert (tmp_path / "o" / "ladder.md").is_file()
    assert json.loads((tmp_path / "o" / "ladder.json").read_text())["results"]
    got = refused(main, monkeypatch, ["bench_ladder", "--render", str(path), "--out",
                                      str(tmp_path / "o")])
    assert got.startswith("bench_ladder: --out: the folder ") and "already holds ladder.json" in got


def test_a_benchmark_stopped_by_ctrl_c_is_one_line_and_keeps_no_empty_folder(tmp_path,
                                                                               monkeypatch,
                                                                               capsys):
    """Before: a KeyboardInterrupt traceback, and the --out folder made for the run left."""
    monkeypatch.syspath_prepend(str(BENCH))
    import signal

    import bench_args

    def main():
        bench_args.out_folder(tmp_path / "out", "bench_x")
        raise KeyboardInterrupt
    before = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit) as exc:
            bench_args.run_script("bench_x", main)
        # a second Ctrl-C as the interpreter exits prints no traceback
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
    assert exc.value.code == 130 and capsys.readouterr().err == "bench_x: interrupted\n"
    assert not (tmp_path / "out").exists()
    with pytest.raises(SystemExit) as exc:
        bench_args.run_script("bench_x", lambda: 3)
    assert exc.value.code == 3


def test_a_ctrl_c_that_a_library_turned_into_another_error_is_an_interruption(tmp_path,
                                                                            monkeypatch, capsys):
    """Before: a Ctrl-C while numba compiled was swallowed by llvmlite's callback, numba then
    failed ("no compiled object yet"), and the script printed that traceback."""
    monkeypatch.syspath_prepend(str(BENCH))
    import os
    import signal
    import time

    import bench_args

    def main():
        bench_args.out_folder(tmp_path / "out", "bench_x")
        try:   # as llvmlite's callback: the KeyboardInterrupt caught and dropped
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            pass
        raise RuntimeError("no compiled object yet")
    before = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit) as exc:
            bench_args.run_script("bench_x", main)
    finally:
        signal.signal(signal.SIGINT, before)
    assert exc.value.code == 130 and capsys.readouterr().err == "bench_x: interrupted\n"
    assert not (tmp_path / "out").exists()
    with pytest.raises(RuntimeError):   # without a Ctrl-C: the error, its traceback kept
        bench_args.run_script("bench_x", lambda: (_ for _ in ()).throw(RuntimeError("bug")))
    assert signal.getsignal(signal.SIGINT) is before


def test_a_benchmarks_refusal_is_its_message_and_status_2(tmp_path, monkeypatch, capsys):
    """Before: sys.exit(message) ended with Python's status 1, as a run that failed does,
    where argparse's refusals and the console scripts' end with 2."""
    monkeypatch.syspath_prepend(str(BENCH))
    import bench_args

    def main():
        bench_args.out_folder(tmp_path / "out", "bench_x")
        sys.exit("bench_x: --games 0; allowed: 1 or more")
    with pytest.raises(SystemExit) as exc:
        bench_args.run_script("bench_x", main)
    assert exc.value.code == 2 and not (tmp_path / "out").exists()
    assert capsys.readouterr().err == "bench_x: --games 0; allowed: 1 or more\n"
    proc = subprocess.run([sys.executable, str(BENCH / "bench_arena.py"), "--games", "0"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr == "bench_arena: --games 0; allowed: 1 or more\n"


def test_a_benchmark_that_fails_keeps_its_traceback_and_no_empty_folder(tmp_path, monkeypatch):
    """Before: an error of the script's own (a ``MemoryError`` of ``bench_deal_variance
    --plays``) left the --out folder made for the run; only a Ctrl-C or a signal removed it."""
    monkeypatch.syspath_prepend(str(BENCH))
    import bench_args

    def main():
        bench_args.out_folder(tmp_path / "out", "bench_x")
        raise MemoryError
    with pytest.raises(MemoryError):
        bench_args.run_script("bench_x", main)
    assert not (tmp_path / "out").exists()


# counts that had no upper bound: a run that never ended, or an allocation's traceback
UNBOUNDED = [("bench_core", "--rounds", "1,000"), ("bench_train", "--rounds", "1,000"),
             ("bench_prebuilt", "--rounds", "1,000"), ("bench_openspiel", "--rounds", "1,000"),
             ("bench_prebuilt", "--steps", f"{10**12:,}"), ("bench_openspiel", "--steps", "10,000,000"),
             ("bench_rollout_targets", "--steps", "100,000"),
             ("bench_rollout_targets", "--epochs", "1,000"),
             ("bench_deal_variance", "--plays", "100"),
             ("bench_search_margins", "--worlds", "1,000,000"),
             ("bench_search_margins", "--procs", "64")]


@pytest.mark.parametrize("script,option,most", UNBOUNDED, ids=[" ".join(u[:2]) for u in UNBOUNDED])
def test_benchmark_counts_have_an_upper_bound(script, option, most, monkeypatch, tmp_path):
    main = bench_main(script, monkeypatch)
    monkeypatch.chdir(tmp_path)
    too_many = str(int(most.replace(",", "")) + 1)
    argv = [script, option, too_many]
    if script in ("bench_rollout_targets", "bench_deal_variance", "bench_search_margins"):
        argv += ["--out", str(tmp_path / "out")]
    assert refused(main, monkeypatch, argv) == f"{script}: {option} {too_many}; allowed: at most {most}"
    assert list(tmp_path.iterdir()) == []


def test_bench_mirrored_refuses_an_opponent_twice_and_an_empty_out(monkeypatch, tmp_path):
    """Before: the same row measured twice, and --out '' taken as no --out."""
    main = bench_main("bench_mirrored", monkeypatch)
    assert refused(main, monkeypatch, ["x", "--games", "8", "--opponents", "random", "random"]) \
        == "bench_mirrored: --opponents: 'random' is given twice; allowed: each at most once"
    assert refused(main, monkeypatch, ["x", "--games", "8", "--out", ""]) \
        == "bench_mirrored: --out: ''; allowed: the path of a file"


def test_bench_mirrored_keeps_the_pairings_finished_before_a_ctrl_c(monkeypatch, tmp_path,
                                                                     capsys):
    """Before: a traceback, and the rows already printed were not written."""
    monkeypatch.syspath_prepend(str(BENCH))
    module = runpy.run_path(str(BENCH / "bench_mirrored.py"))
    measure = module["measure"]
    calls = []

    def measured(args, opp):
        calls.append(opp)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return measure(args, opp)
    module["main"].__globals__["measure"] = measured
    out = tmp_path / "m.json"
    monkeypatch.setattr(sys, "argv", ["x", "--games", "8", "--opponents", "random", "greedy",
                                      "--out", str(out)])
    with pytest.raises(KeyboardInterrupt):
        module["main"]()
    kept = json.loads(out.read_text())
    assert [r["pairing"] for r in kept["rows"]] == ["greedy vs random"] and not kept["complete"]
    assert calls == ["random", "greedy"]
    assert f"the 1 pairing(s) that finished are in {out}" in capsys.readouterr().err


# every path option of the scripts (argparse type ``bench_args.path_arg``)
PATH_OPTIONS = [
    ("bench_train", "--out"), ("bench_update_cost", "--out"), ("bench_generalist", "--out"),
    ("bench_generalist", "--best-from"), ("bench_color_symmetry", "--out"),
    ("bench_deal_variance", "--out"), ("bench_probes", "--out"), ("bench_exploiters", "--out"),
    ("bench_headroom", "--out"), ("bench_observation_worth", "--out"),
    ("bench_rollout_targets", "--out"), ("bench_rollout_targets", "--models"),
    ("bench_table_steps", "--out"), ("sweep_train", "--out"), ("train_any_rules", "--out"),
    ("bench_web_load", "--out"), ("bench_ladder", "--render"), ("bench_ladder", "--retime"),
    ("bench_ladder", "--out"), ("bench_ray", "--out"), ("bench_table_steps", "--vs"),
    ("bench_web_load", "--server-path"), ("bench_search_margins", "--out"),
    ("bench_search_margins", "--best-from"), ("bench_openspiel", "--json"),
]


@pytest.mark.parametrize("script,option", PATH_OPTIONS, ids=[" ".join(p) for p in PATH_OPTIONS])
@pytest.mark.parametrize("given", ["", " "])
def test_benchmarks_refuse_an_empty_path(script, option, given, tmp_path, monkeypatch, capsys):
    """Before: ``--out ''`` was ``Path('')``, the current folder, and the results went into the
    folder the script was started from; ``--render ''`` played the whole ladder."""
    main = bench_main(script, monkeypatch)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [script, option, given])
    parse_args = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, *args, **kwargs):
        # what the parser accepts is not run: the script's work is not this test's
        accepted = parse_args(self, *args, **kwargs)
        raise AssertionError(f"{script} {option} {given!r} was accepted: {accepted}")

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    assert (f"error: argument {option}: {given!r}; allowed: a path, not empty or blank"
            in capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("given,said", [
    ([" 7"], "' 7' is not a whole number"), (["\u0663"], "'\u0663' is not a whole number"),
    (["7_"], "'7_' is not a whole number"), (["9" * 5000], "a number of 5,000 characters"),
    (["5", "--games", "10"], "given more than once; allowed: once")])
def test_benchmark_counts_are_whole_numbers_given_once(given, said, monkeypatch, capsys):
    """Before: the scripts' ``type=int`` took " 7" and other scripts' digits ("\u0663" played 3
    games), and an option given twice kept its last value without a word; the console
    scripts refused both."""
    main = bench_main("bench_arena", monkeypatch)
    monkeypatch.setattr(sys, "argv", ["bench_arena", "--games", *given])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2 and f"error: argument --games: {said}" in capsys.readouterr().err
    import bench_args
    assert bench_args.whole_number("1_000") == 1000 and bench_args.whole_number("-3") == -3


def test_benchmarks_take_every_path_through_path_arg():
    """A path option typed ``Path`` takes ``''`` as the current folder (the test above)."""
    typed = [f.name for f in BENCH.glob("*.py") if "type=Path" in f.read_text()]
    assert typed == []
    # an --out without it: bench_mirrored's, a file whose out_file refuses '' (tested above)
    untyped = sorted(f.name for f in BENCH.glob("*.py") for line in f.read_text().splitlines()
                     if 'add_argument("--out"' in line and "type=path_arg" not in line)
    assert untyped == ["bench_mirrored.py"]


def test_sweep_train_stopped_says_its_run_folder_is_gone(tmp_path, monkeypatch, capsys):
    """Before: a Ctrl-C ended with ono-train's "model saved to <temporary folder>
    (resume=<it> carries on)", and the temporary folder was removed as the script ended."""
    import signal

    import ono_env.train.ppo as ppo
    from ono_env.apps.console import Stopped

    main = bench_main("sweep_train", monkeypatch)
    for stop in (KeyboardInterrupt(), Stopped(signal.SIGTERM)):
        asked = []

        def stopped(cfg, program="ono-train", stop=stop, asked=asked):
            asked.append(program)
            raise stop
        monkeypatch.setattr(ppo, "train", stopped)
        monkeypatch.setattr(sys, "argv", ["sweep_train", "--only", "base"])
        with pytest.raises(type(stop)):
            main()
        assert asked == ["sweep_train"]   # no "resume=<it> carries on": that is ono-train's
        assert ("sweep_train: variant 'base' was training in a temporary folder, removed now: "
                "its model is not kept") in capsys.readouterr().err


def test_bench_table_steps_json_out_replaces_no_file(tmp_path, monkeypatch):
    """The hidden --json-out (one run of --vs's comparison) wrote over any file it named."""
    main = bench_main("bench_table_steps", monkeypatch)
    kept = tmp_path / "kept.json"
    kept.write_text("mine")
    got = refused(main, monkeypatch, ["bench_table_steps", "--json-out", str(kept)])
    assert got == (f"bench_table_steps: --json-out: {str(kept)!r} already exists (an earlier "
                   f"run's results); allowed: a new file, or remove it")
    assert kept.read_text() == "mine"


def test_bench_deal_variance_bounds_plays_times_deals(monkeypatch, tmp_path):
    """--plays at most 100 still allowed 100 x 16 million deals (40 GB of arrays)."""
    main = bench_main("bench_deal_variance", monkeypatch)
    out = tmp_path / "out"
    got = refused(main, monkeypatch, ["x", "--plays", "100", "--deals", "100001", "--out", str(out)])
    assert got == ("bench_deal_variance: --plays 100 --deals 100,001: 10,000,100 plays of deals; "
                   "allowed: at most 10,000,000")
    assert not out.exists()


def test_bench_rollout_targets_refuses_a_batch_past_its_rows_before_collecting(monkeypatch,
                                                                                tmp_path):
    main = bench_main("bench_rollout_targets", monkeypatch)
    got = refused(main, monkeypatch, ["x", "--steps", "10", "--games", "4", "--procs", "1",
                                      "--batch", "41", "--out", str(tmp_path / "out")])
    assert got == ("bench_rollout_targets: --batch 41: more than the 40 rows that --steps 10 "
                   "--games 4 --procs 1 collect at most; allowed: at most 40")
    assert not (tmp_path / "out").exists()


def test_bench_openspiel_bounds_its_simulations(monkeypatch):
    main = bench_main("bench_openspiel", monkeypatch)
    assert refused(main, monkeypatch, ["x", "--simulations", "10001"]) \
        == "bench_openspiel: --simulations 10001; allowed: at most 10,000"


def test_bench_search_margins_pairs_each_margin_with_its_prior(tmp_path, monkeypatch):
    """A tiny run end to end: the prior's row, one row per margin paired with it on the same
    deals, and the count of the search's decisions that left the prior's choice."""
    main = bench_main("bench_search_margins", monkeypatch)
    out = tmp_path / "o"
    monkeypatch.setattr(sys, "argv", ["bench_search_margins", "--table", "basic-3", "--worlds",
                                      "2", "--margins", "2,0", "--deals", "3", "--procs", "1",
                                      "--out", str(out)])
    main()
    got = json.loads((out / "results.json").read_text())
    prior, keep, plain = got["rows"]
    assert (prior["agent"], prior["decisions"], "minus_model" not in prior) == ("ppo-any", 0, True)
    # a margin of 2 is never beaten: the prior's own games, on the same deals
    assert keep["agent"] == "search:2@2" and keep["decisions"] > 0 and keep["overrides"] == 0
    assert keep["share"] == prior["share"] and keep["minus_model"][0] == 0
    assert 0 < plain["overrides"] <= plain["decisions"]
    assert plain["minus_model"][0] == pytest.approx(plain["share"] - prior["share"])
    assert got["against"] == "greedy" and "| search:2@0 | 0 |" in (out / "results.md").read_text()
    assert not any(r["cheating"] for r in got["rows"])
    # seeing every hand: the search's rows are marked, the policy's is not
    monkeypatch.setattr(sys, "argv", ["bench_search_margins", "--table", "basic-3", "--worlds",
                                      "2", "--margins", "0", "--deals", "2", "--procs", "1",
                                      "--view", "hands", "--out", str(tmp_path / "h")])
    main()
    got = json.loads((tmp_path / "h" / "results.json").read_text())
    assert [r["cheating"] for r in got["rows"]] == [False, True] and got["view"] == "hands"
    page = (tmp_path / "h" / "results.md").read_text()
    assert "| search:2@0 (cheating) | 0 |" in page and "| ppo-any |  |" in page


def test_a_script_whose_work_runs_in_processes_ends_on_sigterm(tmp_path):
    """Before: a fork pool's workers inherited the script's signal handler, died raising it,
    and the pool waited on them forever (bench_search_margins.py never ended on SIGTERM)."""
    import signal
    import subprocess
    import time

    script = tmp_path / "slow_script.py"
    script.write_text(
        "import sys, time\n"
        f"sys.path.insert(0, {str(BENCH)!r})\n"
        "from bench_args import map_in_processes, out_folder, run_script\n"
        "def slow(k):\n"
        "    time.sleep(60)\n"
        "    return k\n"
        "def main():\n"
        f"    out_folder({str(tmp_path / 'out')!r}, 'slow_script')\n"
        "    print('started', flush=True)\n"
        "    return map_in_processes(slow, [1, 2], 2) and 0\n"
        "if __name__ == '__main__':\n"
        "    run_script('slow_script', main)\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "started\n"
    time.sleep(2)   # the workers under way
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == -signal.SIGTERM and time.perf_counter() - t0 < 30
    assert proc.stderr is not None and "slow_script: stopped by SIGTERM" in proc.stderr.read()
    assert not (tmp_path / "out").exists()
    # the results of a run that is not stopped, in order, in processes and in this one
    sys.path.insert(0, str(BENCH))
    try:
        import bench_args
        assert bench_args.map_in_processes(abs, [-1, -2, 3], 2) == [1, 2, 3]
        assert bench_args.map_in_processes(abs, [-1], 2) == [1]
    finally:
        sys.path.remove(str(BENCH))


def test_bench_mirrored_writes_strict_json_when_one_side_wins_every_game(tmp_path):
    """Before: a share of 100% wrote NaN (no strict JSON reader takes it) and "0 games"."""
    out = tmp_path / "m.json"
    proc = subprocess.run([sys.executable, str(BENCH / "bench_mirrored.py"), "--games", "4",
                           "--seed", "10", "--opponents", "random", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "no spread to compare" in proc.stdout

    def refuse(name):
        raise ValueError(name)
    row = json.loads(out.read_text(), parse_constant=refuse)["rows"][0]
    assert row["independent"]["win_rate"] == 1.0
    assert row["mirrored_games_per_independent_game"] is None
    assert row["independent"]["games_for_pm_0.35pt"] is None
