"""Training under any rules and table size (the default config's mechanism, not a number):
what ``auto`` opponents and evaluation sizes mean under each preset, the console's evaluation
line and stall warning (on a run built to stall, and not on a normal run), the N-player output
of the final table and the arena (fair share, games with no winner, deals, no matrix for a
single table), model labels from run names, and the web table's agents per table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from ono_env.agents.learned import load_agent, model_label, read_metadata
from ono_env.apps.arena_cli import main as arena_main
from ono_env.arena import format_evaluation, run_arena
from ono_env.rules import resolve_rules
from ono_env.train import run as R
from ono_env.train.config import load_config
from ono_env.train.ppo import train

TINY = ["num_envs=64", "ppo.n_steps=32", "ppo.batch_size=512", "ppo.n_epochs=1",
        "policy.net_arch=[16]", "progress=false", "torch_threads=1", "final_eval.games=0",
        "eval.games=40"]


# ---- what auto means --------------------------------------------------------------------
def test_random_is_left_out_where_it_cannot_finish_games():
    ono = R.baseline_games(resolve_rules("ono", num_players=4))
    assert not ono["random"]["finishes"] and ono["random"]["cut_share"] > 0.5
    assert all(ono[n]["finishes"] for n in ("greedy", "color", "defensive"))
    basic = R.baseline_games(resolve_rules("basic", num_players=2))
    assert all(v["finishes"] for v in basic.values())


@pytest.mark.parametrize("preset, players, pool_has_random", [("basic", 2, True), ("ono", 4, False),
                                                              ("ono", 2, False)])
def test_auto_opponents_and_evaluations_follow_the_rules(preset, players, pool_has_random):
    cfg = load_config("default", [f"rules={preset}", f"num_players={players}"])
    assert cfg.opponents == "auto" and cfg.eval.games == "auto" and cfg.final_eval.games == "auto"
    out, plan = R.resolve_auto(cfg, resolve_rules(preset, num_players=players))
    assert ("random" in out.opponents) == pool_has_random
    assert ("random" in out.eval.opponents) == pool_has_random
    assert out.final_eval.opponents == out.eval.opponents
    assert set(out.opponents) <= set(R.AUTO_WEIGHTS) and out.opponents["greedy"] == 2.0
    # the sizes come from the length of the baselines' own games, within their bounds
    assert out.final_eval.games == R.games_for(R.FINAL_DECISIONS, plan["length"], 2_000, 100_000)
    assert 200 <= out.eval.games <= 2_000


def test_the_auto_note_is_printed_only_where_an_auto_pool_plays(capsys):
    """'opponents: auto leaves out random' is about the pools that play: a run that trains
    against named opponents and evaluates nothing (as ono-exploit's) is not told of it."""
    rules = resolve_rules("ono", num_players=2)
    quiet = ["rules=ono", "opponents={greedy: 1}", "eval.every=0", "final_eval.games=0"]
    capsys.readouterr()
    R.resolve_auto(load_config("default", quiet), rules)
    assert "auto leaves out" not in capsys.readouterr().err
    R.resolve_auto(load_config("default", quiet[:-1]), rules)   # a final evaluation plays
    assert "opponents: auto leaves out random" in capsys.readouterr().err


def test_a_max_decisions_that_cuts_the_baselines_own_games_is_named(capsys):
    """max_decisions=1 (or any cut within 3 times the baselines' own game length) is named
    at the start and in the stall warning, which blamed the learner and the rules before."""
    rules = resolve_rules("basic", num_players=2)
    capsys.readouterr()
    out, plan = R.resolve_auto(load_config("default", ["max_decisions=1"]), rules)
    err = capsys.readouterr().err
    quickest = min(v["mean_length"] for v in plan["baselines"].values() if v["finishes"])
    assert out.max_decisions == 1
    assert ("warning: max_decisions=1 cuts games that " in err
            and f"in {quickest:,.0f} decisions on average under these rules" in err
            and "allowed: max_decisions: auto (10 times the baselines' game length, at least "
                "200), or at least" in err)
    roomy = int(R.STALL_RATIO * quickest) + 1
    R.resolve_auto(load_config("default", [f"max_decisions={roomy}"]), rules)
    R.resolve_auto(load_config("default"), rules)
    assert "max_decisions" not in capsys.readouterr().err
    base = {"greedy": {"mean_length": 56, "finishes": True}}
    cut = R.stall_warning([_row("greedy", 1, no_winner=100)], base, max_decisions=1)
    assert "max_decisions=1 cuts games that greedy plays against itself in 56" in cut
    assert "stalling" not in cut and "Likely causes" not in cut
    kept = R.stall_warning([_row("greedy", 60, no_winner=5)], base, max_decisions=168)
    assert "the learner is stalling" in kept and "max_decisions" not in kept
    # the number said is the least allowed, rounded up: 3 x 43.6 = 130.8
    text = R.short_cut(130, {"g": {"mean_length": 43.6}})
    assert text.endswith("or at least 131") and R.short_cut(131, {"g": {"mean_length": 43.6}}) is None
    # a cut that auto chose is not named (it is auto's own, at most the engine's limit)
    assert plan["cut_auto"] is False
    assert R.resolve_auto(load_config("default"), rules)[1]["cut_auto"] is True


def test_rules_where_no_baseline_finishes_are_one_error(monkeypatch):
    cut = {n: {"mean_length": 5000.0, "cut_share": 0.9, "finishes": False} for n in R.AUTO_WEIGHTS}
    monkeypatch.setattr(R, "baseline_games", lambda rules: cut)
    with pytest.raises(ValueError, match=r"under these rules no baseline finishes its own games "
                                         r"\(random 90% cut at the engine's decision limit; .*\): "
                                         r"games here end at the cut with no winner too often "
                                         r"\(more than 1% of even the quickest baseline's\) to "
                                         r"learn from or to measure the learner by, nor is there "
                                         r"a game length for the auto settings to go by; "
                                         r"allowed: rules whose games the baselines end"):
        R.resolve_auto(load_config("default"), resolve_rules("basic", num_players=2))


def test_a_match_to_500_gets_fewer_final_games_than_a_single_round():
    cfg = load_config("default", ["rules=classic"])
    out, plan = R.resolve_auto(cfg, resolve_rules("classic", num_players=2))
    basic, _ = R.resolve_auto(load_config("default"), resolve_rules("basic", num_players=2))
    assert basic.final_eval.games == 100_000
    assert plan["length"] > 300 and out.final_eval.games < 20_000
    assert "random" not in out.opponents   # its matches last about 20 times the others'


def test_explicit_settings_are_kept():
    cfg = load_config("default", ["opponents={random: 1}", "eval.games=33",
                                  "final_eval.opponents=[color]", "rules=ono"])
    out, _ = R.resolve_auto(cfg, resolve_rules("ono", num_players=2))
    assert out.opponents == {"random": 1} and out.eval.games == 33
    assert out.final_eval.opponents == ["color"]


def test_truncation_loss_is_refused_for_the_other_trainers():
    with pytest.raises(ValueError, match=r"ppo.truncation='loss' is read only by algo: ppo"):
        load_config("default", ["algo=maskable_ppo", "policy.shared=false", "ppo.truncation=loss"])
    assert load_config("default", ["algo=maskable_ppo", "policy.shared=false"]).ppo.truncation == "auto"


# ---- the console during training ------------------------------------------------------------
def _row(opp, length, no_winner=0, games=100, rate=0.2, fair=0.25):
    return {"opponent": opp, "games": games, "win_rate": rate, "ci_low": 0.1, "ci_high": 0.3,
            "fair_share": fair, "mean_length": length, "no_winner": no_winner}


def test_the_evaluation_line_says_share_fair_share_length_and_cut_games():
    line = R.evaluation_line(4_000_000, 2.5, [_row("greedy", 60), _row("color", 80, no_winner=2)])
    assert "step 4,000,000 (2.5 min)" in line and "win share vs greedy 20.0%, color 20.0%" in line
    assert "(fair 25%)" in line and "mean length 70 decisions" in line and "no winner 1.0%" in line
    two = R.evaluation_line(1, 0.1, [_row("greedy", 50, fair=0.5)])
    assert "win rate vs greedy" in two and "(fair 50%)" in two
    eight = R.evaluation_line(1, 0.1, [_row("greedy", 50, fair=1 / 8)])   # before: "fair 12%"
    assert "(fair 12.5%)" in eight and "(fair 16.7%)" in R.evaluation_line(1, 0.1, [_row("g", 5, fair=1 / 6)])


def test_the_summary_line_names_a_baseline_only_where_the_opponents_are_baselines():
    rows = [_row("random", 50, rate=0.7), _row("greedy", 50, rate=0.55), _row("color", 50, rate=0.6)]
    assert R.summary_line(rows) == ("trained agent: vs random 70.00% [10.00, 30.00]; vs best "
                                    "baseline (greedy) 55.00% [10.00, 30.00]")
    # a model file among the final opponents is no baseline (before: "best baseline (mine)")
    mixed = rows + [_row("runs/a/model.safetensors", 50, rate=0.4)]
    assert "; vs hardest opponent (runs/a/model.safetensors) 40.00%" in R.summary_line(mixed)


def test_the_stall_warning_names_the_likely_causes():
    base = {"greedy": {"mean_length": 56, "finishes": True},
            "random": {"mean_length": 4988, "finishes": False}}
    assert R.stall_warning([_row("greedy", 100)], base) is None
    w = R.stall_warning([_row("greedy", 600, no_winner=8)], base, {"catch": 0.9}, gamma=0.99,
                        truncation="bootstrap", pool=["greedy", "random"])
    assert "greedy 600 decisions against its own 56" in w and "greedy 8%" in w
    assert "catch 90%" in w and "ppo.gamma=0.99" in w and "ppo.truncation=bootstrap" in w
    assert "(random; opponents: auto leaves them out)" in w and "hand_shaping" not in w
    assert "ppo.hand_shaping=0" in R.stall_warning([_row("greedy", 600)], base, shaping=0.0)
    only_cut = R.stall_warning([_row("greedy", 60, no_winner=5)], base)
    assert only_cut is not None and "cut with no winner" in only_cut
    sb3 = R.stall_warning([_row("greedy", 600)], base, truncation="sb3")
    assert "algo maskable_ppo (SB3) bootstraps a game cut" in sb3
    assert "ppo.truncation=bootstrap" not in sb3
    # ppo.hand_shaping: auto, which is 0 in a match, is not named (before: "try
    # ppo.hand_shaping=auto", the setting that gave the 0)
    assert "hand_shaping" not in R.stall_warning([_row("greedy", 600)], base, shaping=None)


def test_the_stall_warning_fires_at_a_large_table_where_the_games_stay_short():
    """At 8-10 players the other seats finish a stalling learner's games nearly as quickly as
    their own, and almost none is cut (under ono: 1.2 times as long, under 1% cut, 0% won):
    before, no warning. Now a learner that mostly stalls where it may and wins under a third of
    its fair share is warned, its choices named; one that stalls less, or wins, is not."""
    base = {"greedy": {"mean_length": 94, "finishes": True}, "color": {"mean_length": 91, "finishes": True}}
    rows = [_row("greedy", 116, no_winner=0, rate=0.0, fair=1 / 8), _row("color", 116, rate=0.02, fair=1 / 8)]
    stalls = {"catch": 0.97, "draw holding a playable card": 0.45}
    w = R.stall_warning(rows, base, stalls, max_decisions=912)
    assert w.startswith("warning: the learner wins 1.0% of its games (fair share 12.5%) and mostly "
                        "stalls where it may (catch 97%, draw holding a playable card 45%): the "
                        "learner is stalling. Likely causes: the rules let a losing seat"), w
    assert "max_decisions" not in w and "Its choices" not in w
    assert R.stall_warning(rows, base, {"catch": 0.39, "draw holding a playable card": 0.3}) is None
    assert R.stall_warning(rows, base) is None   # no choices counted
    winning = [dict(r, win_rate=0.05) for r in rows]   # 5% > 12.5% / 3
    assert R.stall_warning(winning, base, stalls) is None
    assert "ppo.gamma=0.99" in R.stall_warning(rows, base, stalls, gamma=0.99)


def test_a_catch_counts_as_stalling_only_where_a_false_one_costs():
    """Under classic (no false catch penalty) a catch is legal only where it succeeds, so
    catching whenever one may is the right play: it is no stall, and a learner that does so
    while losing is not warned of stalling (before the count was per rules: a warning naming
    "catch 100%" and "a false catch" as its cause under rules that have none)."""
    counts = (9, 9, 1, 10)   # catches / legal, draws holding a playable card / legal
    ono = R.stall_choices(counts, resolve_rules("ono", num_players=8))
    classic = R.stall_choices(counts, resolve_rules("classic", num_players=8))
    assert ono == {"catch": 1.0, "draw holding a playable card": 0.1}
    assert classic == {"draw holding a playable card": 0.1}
    assert R.stall_choices((0, 0, 0, 0), resolve_rules("ono", num_players=8)) == {}
    base = {"greedy": {"mean_length": 400, "finishes": True}}
    rows = [_row("greedy", 380, rate=0.0, fair=1 / 8)]
    assert R.stall_warning(rows, base, classic) is None
    assert "(catch 100%)" in R.stall_warning(rows, base, ono)


def _staller(path: Path, rules) -> Path:
    """A checkpoint of the tiny network that accuses at every turn's start and otherwise
    draws whenever it may (under ono a false catch costs 4 cards): a policy built to stall."""
    import torch

    from ono_env.cards import A_CATCH, A_DRAW
    from ono_env.observation import observation_scale
    from ono_env.train.ppo import ActorCritic, save_checkpoint

    model = ActorCritic(observation_scale(rules), [16], "tanh", True)
    with torch.no_grad():
        model.pi.bias[A_CATCH] = 50.0
        model.pi.bias[A_DRAW] = 40.0
    opt = torch.optim.Adam(model.parameters())
    return save_checkpoint(model, opt, path, rules, 0, {})


def test_a_run_built_to_stall_warns_and_a_normal_run_does_not(tmp_path, capsys):
    rules = resolve_rules("ono", num_players=4)
    start = _staller(tmp_path / "staller.safetensors", rules)
    train(load_config("default", TINY + [
        "rules=ono", "num_players=4", "total_steps=2048", "eval.every=2048", "ppo.learning_rate=0",
        "ppo.learning_rate_end=0", "ppo.gamma=0.99", "ppo.truncation=bootstrap",
        "opponents={random: 1, greedy: 1}", f"resume={start}", f"run_dir={tmp_path / 'stall'}"]))
    err = capsys.readouterr().err
    assert "eval at step 2,048" in err and "(fair 25%)" in err
    assert "warning: the learner's games" in err and "the learner is stalling" in err
    assert "ppo.gamma=0.99" in err and "(random; opponents: auto leaves them out)" in err
    assert "Its choices since the last evaluation: catch" in err and "ppo.hand_shaping=0" not in err
    train(load_config("default", TINY + ["total_steps=2048", "eval.every=2048",
                                         f"run_dir={tmp_path / 'normal'}"]))
    err = capsys.readouterr().err
    assert "eval at step 2,048" in err and "(fair 50%)" in err and "warning" not in err


def test_a_time_limit_says_what_runs_after_it(tmp_path, capsys):
    train(load_config("default", TINY + ["total_steps=1024", "eval.every=0",
                                         "final_eval.games=50", "final_eval.opponents=[greedy]",
                                         "time_limit_minutes=5", f"run_dir={tmp_path}"]))
    err = capsys.readouterr().err
    assert ("training for 5 min (in-training evaluations included) or 1,024 steps (in whole "
            "rollouts of 2,048 steps: 2,048), whichever comes first; then the final "
            "evaluation: 50 games against each of greedy") in err
    assert "final evaluation: 50 games against each of greedy (95% interval about +-13.9 points)" in err


def test_the_final_evaluation_says_the_games_it_plays(tmp_path, capsys):
    # at 3 players every seating plays equally often: 4 games asked are 6 played (before:
    # "4 games against each", then a table of 6)
    res = train(load_config("default", TINY + ["rules=basic", "num_players=3", "total_steps=1024",
                                               "eval.every=0", "final_eval.games=4",
                                               "final_eval.opponents=[greedy]",
                                               f"run_dir={tmp_path}"]))
    err = capsys.readouterr().err
    assert "then the final evaluation: 6 games against each of greedy" in err
    assert ("final evaluation: 6 games against each of greedy (4 asked, rounded up so that the "
            "agent plays every seat equally often)") in err
    assert [row["games"] for row in res["final_eval"]] == [6]


def test_the_final_evaluation_gives_the_same_numbers_with_one_worker_or_two(tmp_path, capsys):
    """An opponent naming the run's own model file plays as its copy whatever the workers
    (before: one worker evaluated the model as a loaded object, two as its path, so at 5-10
    players that table was arranged around it in one and not in the other: 18.17% against
    16.50% in one probe)."""
    import torch

    from ono_env.observation import observation_scale
    from ono_env.train.ppo import ActorCritic, save_checkpoint
    from ono_env.train.run import final_evaluation

    rules = resolve_rules("basic", num_players=5)
    torch.manual_seed(0)
    model = ActorCritic(observation_scale(rules), [16], "tanh", True)
    path = save_checkpoint(model, torch.optim.Adam(model.parameters()), tmp_path / "m.safetensors",
                           rules, 0, {})
    rows = {}
    for workers in (1, 2):
        cfg = load_config("default", ["rules=basic", "num_players=5", "final_eval.games=200",
                                      f"final_eval.opponents=[{path}, random]",
                                      f"final_eval.workers={workers}", "progress=false"])
        run = tmp_path / f"w{workers}"
        run.mkdir()
        rows[workers] = [(r["opponent"], r["games"], r["wins"] if "wins" in r else r["win_rate"])
                         for r in final_evaluation(cfg, rules, path, run, 0, 0.0, "ppo")]
    capsys.readouterr()
    assert rows[1] == rows[2] and len(rows[1]) == 2, rows


def test_a_signal_during_the_final_evaluation_stops_it_and_says_where_the_model_is(
        tmp_path, capsys, monkeypatch):
    """Before: SIGTERM there ended the process without a word (the run's last line, the
    model's path, comes after the evaluation), and Ctrl-C said only "interrupted"."""
    import signal

    import ono_env.arena as arena

    def signalled(*args, **kwargs):
        signal.raise_signal(signal.SIGTERM)
        raise AssertionError("the evaluation went on after the signal")

    monkeypatch.setattr(arena, "evaluate", signalled)
    before = signal.getsignal(signal.SIGTERM)
    cfg = load_config("default", TINY + ["total_steps=1024", "eval.every=0",
                                         "final_eval.games=4", "final_eval.opponents=[greedy]",
                                         f"run_dir={tmp_path}"])
    with pytest.raises(SystemExit) as stopped:
        train(cfg, stop_signals=("SIGINT", "SIGTERM"))
    assert stopped.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before
    err = capsys.readouterr().err
    assert re.search(r"interrupted during the final evaluation after [\d,]+ steps: model saved "
                     rf"to {re.escape(str(tmp_path / 'model.safetensors'))}; no final "
                     r"evaluation", err), err   # trained to total_steps: no resume= to suggest
    assert (tmp_path / "model.safetensors").is_file() and not (tmp_path / "final_eval.json").exists()


def test_a_signal_during_a_mixtures_final_evaluation_names_the_tables_evaluated(
        tmp_path, capsys, monkeypatch):
    """Before: "no final evaluation" though the first table's was written, and no resume=."""
    import signal

    import ono_env.arena as arena

    real, calls = arena.evaluate, []

    def second_signalled(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            signal.raise_signal(signal.SIGTERM)
            raise AssertionError("the evaluation went on after the signal")
        return real(*args, **kwargs)

    monkeypatch.setattr(arena, "evaluate", second_signalled)
    cfg = load_config("default", TINY + ["total_steps=1024", "eval.every=0", "observation_version=2",
                                         "tables=[{rules: basic, weight: 1}, "
                                         "{rules: ono, num_players: 3, weight: 1}]",
                                         "final_eval.games=4", "final_eval.opponents=[greedy]",
                                         f"run_dir={tmp_path}"])
    with pytest.raises(SystemExit):
        train(cfg, stop_signals=("SIGINT", "SIGTERM"))
    err = capsys.readouterr().err
    assert re.search(r"model.safetensors; the final evaluation of basic-2p only "
                     r"\(in tables/<label>/\)", err), err
    assert (tmp_path / "tables" / "basic-2p" / "final_eval.json").is_file()
    # the table whose evaluation the stop ended: no folder (before: an empty one)
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == ["basic-2p"]


# ---- N-player output ----------------------------------------------------------------------------
def test_the_final_table_shows_the_fair_share_and_games_with_no_winner():
    text = format_evaluation([_row("greedy", 60, no_winner=3)], "x")
    assert "win share" in text and "fair share" in text and "no winner" in text
    assert "25.0%" in text and text.rstrip().endswith("3")
    # before: KeyError 'ci_low', TypeError for None
    with pytest.raises(ValueError, match=r"^rows\[0\] = .* lacks 'opponent', 'games', 'win_rate', "
                                         r"'ci_low', 'ci_high' and 1 more; allowed: a row"):
        format_evaluation([{"a": 1}])
    with pytest.raises(ValueError, match=r"^rows = None \(NoneType\); allowed: the list evaluate"):
        format_evaluation(None)


def test_the_arena_text_and_files_at_four_players(tmp_path, capsys):
    assert arena_main(["greedy", "color", "defensive", "random", "--rules", "basic", "--players",
                       "4", "--games", "240", "--mirrored", "--no-progress", "--out",
                       str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "10 deals, each played in every seating" in out
    assert "fair share 25.0% (1 / 4 players); 0 games with no winner" in out
    assert "rating (95% interval)" in out
    assert "head to head" not in out              # one table: the matrix would repeat each row
    data = json.loads((tmp_path / "arena.json").read_text())
    assert data["fair_share"] == 0.25 and data["no_winner"] == 0 and data["deals"] == 10
    assert data["tables"] == 1
    assert (tmp_path / "arena.png").stat().st_size > 1000
    assert "fair_share" in (tmp_path / "arena.csv").read_text().splitlines()[0]


def test_a_matrix_where_there_are_several_tables():
    res = run_arena(["greedy", "color", "random"], "basic", 2, 60, 0, rating=False)
    assert res.tables == 3 and "head to head" in res.format_table()
    assert res.deals is None and res.to_dict()["fair_share"] == 0.5


def test_games_with_no_winner_are_counted():
    res = run_arena(["random"] * 4, "ono", 4, 24, 0, rating=False, max_decisions=200)
    assert res.no_winner > 0 and f"{res.no_winner:,} games with no winner" in res.format_table()


# ---- labels ------------------------------------------------------------------------------------
def test_two_runs_models_have_their_runs_names(tmp_path):
    paths = []
    for name in ("alpha", "beta"):
        res = train(load_config("default", TINY + ["total_steps=512", "eval.every=0",
                                                   f"name={name}", f"out_dir={tmp_path}"]))
        paths.append(str(res["model"]))
    labels = [model_label(p) for p in paths]
    assert labels[0].startswith("alpha-") and labels[1].startswith("beta-")
    assert labels == [Path(p).parent.name for p in paths]
    assert read_metadata(paths[0])["label"] == labels[0]
    assert load_agent(paths[0], resolve_rules("basic", num_players=2)).name == labels[0]
    res = run_arena(paths, resolve_rules("basic", num_players=2), None, 4, 0, rating=False)
    assert res.labels == labels
    # a file given another name plays under that name
    renamed = tmp_path / "mine.safetensors"
    renamed.write_bytes(Path(paths[0]).read_bytes())
    assert model_label(renamed) == "mine"
    from fastapi.testclient import TestClient

    from ono_env.apps.web.server import create_app
    client = TestClient(create_app(models=paths))
    assert set(labels) <= set(client.get("/api/options").json()["agents"])


# ---- the web table's agents ----------------------------------------------------------------
@pytest.fixture(scope="module")
def web():
    from fastapi.testclient import TestClient

    from ono_env.apps.web.server import create_app
    return TestClient(create_app())


@pytest.mark.parametrize("preset", ["basic", "classic", "ono", "stacking", "uno2018", "wikipedia"])
@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_browser_is_offered_only_agents_that_fit_the_table(web, preset, players):
    from ono_env.agents.learned import shipped_models

    got = web.post("/api/agents", json={"rules": preset, "num_players": players}).json()["agents"]
    for base in ("random", "greedy", "color", "defensive", "pimc"):
        assert base in got
    for name, path in shipped_models().items():
        meta = read_metadata(path)
        # a specialist fits its own table only; the generalist (version 2) fits every table
        fits = meta["observation_version"] == 2 or (meta["rules"]["name"] == preset
                                                     and meta["num_players"] == players)
        assert (name in got) == fits, (name, preset, players)


def test_an_option_that_differs_from_the_models_rules_removes_it(web):
    plain = web.post("/api/agents", json={"rules": "basic", "num_players": 2}).json()["agents"]
    changed = web.post("/api/agents", json={"rules": "basic", "num_players": 2,
                                            "options": {"hand_size": 5}}).json()["agents"]
    assert "ppo-basic-2p" in plain and "ppo-basic-2p" not in changed
    bad = web.post("/api/agents", json={"rules": "basic", "options": {"hand_size": -1}})
    assert bad.status_code == 400 and "hand_size" in bad.json()["error"]


def test_no_web_error_names_a_server_path(web, tmp_path):
    from fastapi.testclient import TestClient

    from ono_env.agents.learned import shipped_models
    from ono_env.apps.web.server import create_app

    r = web.post("/api/games", json={"rules": "ono", "num_players": 2,
                                     "opponents": ["ppo-basic-2p"]})
    assert r.status_code == 400 and "cannot sit at this table" in r.json()["error"]
    assert "/" not in r.json()["error"]
    mine = tmp_path / "deep" / "folder" / "mine.safetensors"
    mine.parent.mkdir(parents=True)
    mine.write_bytes(shipped_models()["ppo-basic-2p"].read_bytes())
    client = TestClient(create_app(models=[str(mine)]))
    r = client.post("/api/games", json={"rules": "classic", "num_players": 2, "opponents": ["mine"]})
    assert r.status_code == 400 and "'mine'" in r.json()["error"]
    assert str(tmp_path) not in r.text and "safetensors" not in r.text


# ---- the mechanism's parts ------------------------------------------------------------------
def test_training_games_are_cut_at_ten_times_the_baselines_games():
    for preset, players, low, high in [("ono", 2, 300, 500), ("basic", 2, 400, 600),
                                       ("classic", 2, 5_000, 50_000)]:
        out, plan = R.resolve_auto(load_config("default", [f"rules={preset}",
                                                           f"num_players={players}"]),
                                   resolve_rules(preset, num_players=players))
        assert out.max_decisions == round(R.CUT_RATIO * plan["length"]) and low < out.max_decisions < high
    kept, _ = R.resolve_auto(load_config("default", ["max_decisions=777"]), resolve_rules("basic", num_players=2))
    assert kept.max_decisions == 777


def test_hand_shaping_sums_to_the_same_for_every_game():
    rng = np.random.default_rng(0)
    for _ in range(20):   # a random walk of hand sizes ending at any size: shaping sums to c * dealt
        hands = np.concatenate([[7], rng.integers(0, 30, size=rng.integers(1, 50))])
        dones = np.zeros(len(hands) - 1, bool)
        dones[-1] = True
        total = R.hand_shaping(hands[:-1].astype(float), hands[1:].astype(float), dones, 0.1).sum()
        assert total == pytest.approx(0.7)
        # discounted as the returns are, at any gamma (before: only at gamma 1)
        steps = R.hand_shaping(hands[:-1].astype(float), hands[1:].astype(float), dones, 0.1, 0.9)
        assert (steps * 0.9 ** np.arange(len(steps))).sum() == pytest.approx(0.7)


def test_a_cut_game_bootstrapped_from_its_value_keeps_its_last_hand_as_the_potential():
    # a game cut with 5 cards: scored as the end (truncation loss), its potential ends at 0;
    # bootstrapped from the value of its last observation (which holds c * 5 of shaping to
    # come, the value being of shaped returns), it ends at that hand: counted once, not twice
    from ono_env.envs.learner_batch import BatchStep

    obs = np.zeros((2, 3), np.float32)
    obs[:, 0] = [7, 6]                     # the new games' hands (rows reset after an end)
    final = np.zeros((2, 3), np.float32)
    final[0, 0] = 5                        # row 0: cut with 5 cards
    step = BatchStep(obs, np.zeros(2, np.float32), np.array([False, False]),
                     np.array([True, False]), final, np.array([True, False]))
    before = np.array([6.0, 6.0])
    loss = R.step_shaping(before, step, 0, 0.1, 1.0, bootstrap=False)
    assert loss.tolist() == pytest.approx([0.6, 0.0])
    boot = R.step_shaping(before, step, 0, 0.1, 1.0, bootstrap=True)
    assert boot.tolist() == pytest.approx([0.1, 0.0])      # 6 -> 5 cards, and no end
    ended = step._replace(terminated=np.array([True, False]), truncated=np.array([False, False]))
    assert R.step_shaping(before, ended, 0, 0.1, 1.0, bootstrap=True).tolist() == \
        pytest.approx([0.6, 0.0])                          # a game won ends at 0 either way


def test_the_reward_and_the_shaping_follow_the_rules():
    for preset, reward, shaping in [("basic", "win", 0.1), ("ono", "win", 0.1),
                                    ("stacking", "win", 0.1), ("classic", "points", 0.0),
                                    ("wikipedia", "points", 0.0)]:
        out, _ = R.resolve_auto(load_config("default", [f"rules={preset}", "num_players=2"]),
                                resolve_rules(preset, num_players=2))
        assert (out.reward, out.ppo.hand_shaping) == (reward, shaping), preset
    out, _ = R.resolve_auto(load_config("default", ["rules=classic", "reward=win"]),
                            resolve_rules("classic", num_players=2))
    assert out.reward == "win"


def test_the_shaping_is_refused_for_the_other_trainers():
    with pytest.raises(ValueError, match=r"ppo.hand_shaping=0.1 is read only by algo: ppo"):
        load_config("default", ["algo=maskable_ppo", "policy.shared=false", "ppo.hand_shaping=0.1"])
    assert load_config("default", ["algo=maskable_ppo", "policy.shared=false",
                                   "ppo.hand_shaping=0"]).ppo.hand_shaping == 0


def test_a_mixtures_one_cut_is_named_by_the_table_that_needs_the_most(capsys):
    """max_decisions is the run's, for every table; each table's warning names the least it
    needs, which may still cut another's. Before, only those: following the first still cut
    the others."""
    from ono_env.train.ppo import plan_tables
    cfg = load_config("default", TINY + ["max_decisions=100", "observation_version=2",
                                         "tables=[{rules: basic, weight: 1}, "
                                         "{rules: ono, num_players: 3, weight: 1}, "
                                         "{rules: stacking, num_players: 2, weight: 1}]"])
    plan_tables(cfg)
    err = capsys.readouterr().err
    each = {m.group(1): int(m.group(2).replace(",", ""))
            for m in re.finditer(r"^(\S+): warning: max_decisions=100 .* at least ([\d,]+)$", err, re.M)}
    assert len(each) == 3 and len(set(each.values())) > 1, err
    worst = max(each, key=each.__getitem__)
    assert (f"warning: max_decisions=100 is every table's cut; allowed: auto (each table's own), "
            f"or at least {each[worst]:,}, the most any table needs ({worst})") in err
    plan_tables(load_config("default", TINY + [f"max_decisions={each[worst]}", "observation_version=2",
                                               "tables=[{rules: basic, "
                                               "weight: 1}, {rules: ono, num_players: 3, weight: 1}]"]))
    assert "warning" not in capsys.readouterr().err
