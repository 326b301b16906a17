"""The arena: seat rotation, statistics, ratings, files, the command line and its errors."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from ono_env.agents.base import RandomAgent, agent_label
from ono_env.apps.arena_cli import main
from ono_env.arena import (
    bounded_mean_interval,
    evaluate,
    games_played,
    mean_interval,
    run_arena,
    seatings,
    wilson_interval,
)
from ono_env.arena.play import play_games
from ono_env.rules import RuleSet


def test_wilson_interval_matches_known_values():
    lo, hi = wilson_interval(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-4) and hi == pytest.approx(0.5962, abs=1e-4)
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == pytest.approx(1.0)
    assert wilson_interval(10, 10)[0] == pytest.approx(0.7225, abs=1e-4)
    for n in (7, 100, 2_000):   # the ends exactly, not a rounding error above 0 or under 1
        assert wilson_interval(0, n)[0] == 0.0 and wilson_interval(n, n)[1] == 1.0
        assert 0.0 < wilson_interval(0, n)[1] < 1.0 and 0.0 < wilson_interval(n, n)[0] < 1.0


def test_every_seating_plays_the_same_number_of_games():
    res = run_arena(["greedy", "random", "color"], "basic", 3, num_games=60, seed=0, rating=False)
    assert len(seatings(3)) == 6
    ent = res.records.entrants
    assert ent.shape == (60, 3)
    for seat in range(3):   # each entrant sits in each seat equally often
        assert np.bincount(ent[:, seat], minlength=3).tolist() == [20, 20, 20]


def test_random_against_itself_is_even_and_strong_baselines_beat_random():
    res = run_arena(["random", "random"], "basic", 2, num_games=4000, seed=3, rating=False)
    rows = res.agent_rows()
    assert rows[0]["ci_low"] < 0.5 < rows[0]["ci_high"]
    assert rows[0]["win_rate"] + rows[1]["win_rate"] == pytest.approx(1.0)
    res = run_arena(["greedy", "random"], "basic", 2, num_games=2000, seed=3, rating=False)
    assert res.agent_rows()[0]["ci_low"] > 0.543


def test_more_entrants_than_seats_play_every_pairing_and_head_to_head_is_consistent():
    res = run_arena(["greedy", "defensive", "random"], "basic", 2, num_games=600, seed=1)
    h = res.head_to_head()
    assert (h["games"][~np.eye(3, dtype=bool)] == 200).all()
    off = ~np.eye(3, dtype=bool)
    assert np.allclose((h["rate"] + h["rate"].T)[off], 1.0)   # no truncation in basic
    assert (h["low"][off] <= h["rate"][off]).all() and (h["rate"][off] <= h["high"][off]).all()
    rows = {r["agent"]: r for r in res.agent_rows()}
    assert rows["greedy"]["rating"] > rows["random"]["rating"]
    assert rows["greedy"]["games"] == 400


def test_scores_are_reported_under_scoring_rules():
    res = run_arena(["greedy", "random"], "classic", 2, num_games=8, seed=0, rating=False)
    rows = res.agent_rows()
    assert all("mean_score" in r for r in rows)
    assert max(r["mean_score"] for r in rows) >= 250  # the match winner reached 500
    assert "mean_score" not in run_arena(["greedy", "random"], "basic", 2, 4, rating=False).agent_rows()[0]


def test_seeded_runs_reproduce():
    a = run_arena(["greedy", "color"], "ono", 2, num_games=40, seed=9)
    b = run_arena(["greedy", "color"], "ono", 2, num_games=40, seed=9)
    assert a.to_dict()["agents"][0]["wins"] == b.to_dict()["agents"][0]["wins"]
    assert np.array_equal(a.records.length, b.records.length)
    assert a.ratings == b.ratings
    c = run_arena(["greedy", "color"], "ono", 2, num_games=40, seed=10)
    assert not np.array_equal(a.records.length, c.records.length)   # the seed is used


@pytest.mark.parametrize("call, fragment", [
    # before, a set was seated in its hash order (another result for the same seed in each
    # process), a dict's weights were dropped and a string read as one agent per letter
    (lambda: run_arena({"greedy", "random"}, "basic", 2, 8, rating=False),
     "(set); allowed: a list or tuple of agents"),
    (lambda: run_arena({"greedy": 2, "random": 1}, "basic", 2, 8, rating=False), "(dict)"),
    (lambda: run_arena("greedy", "basic", 2, 8, rating=False), "agents='greedy' (str)"),
    # evaluate's seed and opponents: before, True was seed 1, 1.5 NumPy's TypeError, and no
    # opponent an empty result
    (lambda: evaluate("greedy", ["random"], "basic", 8, seed=True), "seed=True (bool)"),
    (lambda: evaluate("greedy", ["random"], "basic", 8, seed=1.5), "seed=1.5 (float)"),
    (lambda: evaluate("greedy", [], "basic", 8), "opponents=[]; allowed: a list or tuple of one"),
    (lambda: evaluate("greedy", "random", "basic", 8), "opponents='random' (str)"),
])
def test_loose_agent_lists_and_seeds_are_refused_by_name(call, fragment):
    with pytest.raises(ValueError) as info:
        call()
    assert fragment in str(info.value)


def test_evaluate_takes_a_seed_past_int64_as_the_trainers_derive_it():
    # the trainers evaluate at their seed plus the steps trained: a config's seed of
    # 2**63 - 1 goes past it
    row = evaluate("greedy", ("random",), "basic", 4, seed=2**63 + 5)[0]
    assert row["opponent"] == "random" and 0 <= row["win_rate"] <= 1


def test_paired_statistics_and_save_refuse_what_names_no_entrant_or_file(tmp_path):
    res = run_arena(["greedy", "random"], "basic", 2, 8, seed=0, rating=False, mirrored=True)
    assert res.paired(0)["deals"] == 4 and res.paired(0, 1)["deals"] == 4
    # before, 5 or "greedy" gave a rate of nan over 0 deals, True was entrant 1, and other=e
    # was accepted
    for e, other, fragment in [(5, None, "e=5 (int); allowed: an entrant's place, 0 to 1"),
                               ("greedy", None, "e='greedy' (str)"), (True, None, "e=True (bool)"),
                               (0, 0, "other=0 (int); allowed: None or an entrant's place, 0 to "
                                      "1, other than e=0")]:
        with pytest.raises(ValueError, match=fr"^{re.escape(fragment)}"):
            res.paired(e, other)
    # a stem is a file name: before, "../escaped" wrote beside the folder and "" wrote ".json"
    for stem in ("../escaped", "", ".hidden", 5):
        with pytest.raises(ValueError, match="allowed: a file name without a folder"):
            res.save(tmp_path / "out", stem)
    assert not (tmp_path / "escaped.json").exists() and not (tmp_path / "out").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"'.*file' exists and is not a folder"):
        res.save(tmp_path / "file")
    assert [p.name for p in res.save(tmp_path / "out", "run-1")] == ["run-1.json", "run-1.csv"]


def test_arena_and_replay_saves_replace_a_file_whole_or_not_at_all(tmp_path, monkeypatch):
    """Before: ``ArenaResult.save`` and ``Replay.save`` wrote in place, so a write that
    failed or a run killed meanwhile left part of a file where the earlier one had been."""
    import ono_env.checks
    res = run_arena(["greedy", "random"], "basic", 2, 4, seed=0, rating=False, record=1)
    json_path, csv_path = res.save(tmp_path)
    replay_path = res.replays[0].save(tmp_path / "r.json")
    before = {p: p.read_bytes() for p in (json_path, csv_path, replay_path)}
    later = run_arena(["random", "greedy"], "basic", 2, 4, seed=1, rating=False, record=1)

    def fails(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(ono_env.checks.os, "replace", fails)
    with pytest.raises(ValueError, match=r"^cannot write arena result file '.*arena.json': No "
                                         r"space left on device$"):
        later.save(tmp_path)
    with pytest.raises(ValueError, match=r"^cannot write replay file '.*r.json': No space"):
        later.replays[0].save(replay_path)
    assert {p: p.read_bytes() for p in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["arena.csv", "arena.json", "r.json"]
    monkeypatch.undo()
    later.save(tmp_path)   # replaced, as the docstring says
    assert json.loads(json_path.read_text())["agents"][0]["agent"] == "random"
    # as a plain write would: a private file stays private, a link keeps its file
    import os
    replay_path.chmod(0o600)
    (tmp_path / "link.json").symlink_to(replay_path)
    later.replays[0].save(tmp_path / "link.json")
    assert (tmp_path / "link.json").is_symlink()
    assert replay_path.read_text() == later.replays[0].to_json() + "\n" != before[replay_path].decode()
    assert os.stat(replay_path).st_mode & 0o777 == 0o600


def test_evaluation_in_worker_processes_gives_the_same_rows():
    args = ("greedy", ["random", "defensive"], {"preset": "basic", "num_players": 2}, 40)
    one = evaluate(*args, seed=5)
    two = evaluate(*args, seed=5, workers=2)
    def drop(rows):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]
    assert drop(one) == drop(two)
    assert [r["opponent"] for r in two] == ["random", "defensive"]
    with pytest.raises(ValueError, match="workers=0; allowed: an integer >= 1"):
        evaluate(*args, workers=0)


def test_evaluation_workers_that_do_not_fit_in_memory_are_refused_before_any_starts(monkeypatch):
    """Each worker's games were checked in it alone, and the processes not at all: four
    evaluations of 200,000 games at 10 players, about 1.4 GiB at once, started under 1 GiB."""
    import concurrent.futures

    import ono_env.game as G
    monkeypatch.setattr(G, "available_memory", lambda: 1 << 30)
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor",
                        lambda *a, **k: pytest.fail("a worker was started"))
    rules = {"preset": "basic", "num_players": 10}
    with pytest.raises(ValueError, match=r"^workers=4: 4 processes at once, each of at least 160 "
                                         r"MiB .* and its games' records, need 1\.4 GiB.*\(at most "
                                         r"2 here\)$"):
        evaluate("greedy", ["random", "greedy", "color", "defensive"], rules, 200_000, workers=4)


def test_cli_writes_json_csv_png(tmp_path, capsys):
    rc = main(["greedy", "random", "--rules", "basic", "--players", "2", "--games", "200",
               "--seed", "2", "--out", str(tmp_path), "--no-progress"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "win rate" in out and "rating (95% interval)" in out and "fair share 50.0%" in out
    assert "head to head" not in out   # one table: each cell would repeat its row's rate
    data = json.loads((tmp_path / "arena.json").read_text())
    assert data["games"] == 200 and data["rules"]["name"] == "basic"
    assert [a["agent"] for a in data["agents"]] == ["greedy", "random"]
    assert data["head_to_head"]["win_rate"][0][0] is None
    with open(tmp_path / "arena.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert rows[0]["agent"] == "greedy" and float(rows[0]["ci_low"]) < float(rows[0]["win_rate"])
    assert (tmp_path / "arena.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"



@pytest.mark.parametrize("others", [["random"], ["random", "greedy"]])   # bars, then a matrix
def test_a_label_with_dollars_is_drawn_as_written(tmp_path, capsys, others):
    # before: '$\\bad$' was read as mathtext; the plot failed after arena.json and arena.csv
    # were written, in a four-line error
    import shutil

    from ono_env.agents.learned import shipped_models
    model = tmp_path / "$\\bad$.safetensors"
    shutil.copy(shipped_models()["ppo-basic-2p"], model)
    out = tmp_path / "out"
    rc = main([str(model), *others, "--rules", "basic", "--players", "2", "--games", "60",
               "--no-rating", "--out", str(out), "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    assert (out / "arena.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("shares", [((0.0, 0.0, 0.0014), (1.0, 0.9986, 1.0)),
                                    ((0.19, 0.18, 0.2), (0.16, 0.15, 0.17))])
def test_the_single_table_plot_keeps_each_share_label_on_its_axis(monkeypatch, shares):
    """Before: a share under the fair one whose interval reached 0% had its label drawn under
    the axis, over the entrants' names, and one of 100% above the axis, against the title."""
    from matplotlib.figure import Figure

    import ono_env.apps.arena_cli as A
    drawn: list[Figure] = []
    monkeypatch.setattr(A, "_save_png", lambda fig, path: drawn.append(fig))
    (r0, l0, h0), (r1, l1, h1) = shares
    A.plot_shares(["a", "b"], [r0, r1], [l0, l1], [h0, h1], "t", "unused.png", 0.5)
    (ax,) = drawn[0].axes
    drawn[0].canvas.draw()   # the labels' extents as laid out
    frame = ax.get_window_extent()
    labels = [t for t in ax.texts if t.get_text().endswith("%") and "fair" not in t.get_text()]
    assert [t.get_text() for t in labels] == [f"{100 * r0:.1f}%", f"{100 * r1:.1f}%"]
    for text in labels:
        box = text.get_window_extent()
        assert frame.y0 <= box.y0 and box.y1 <= frame.y1, (text.get_text(), box, frame)
    assert all(-1e-9 <= t <= 1 + 1e-9 for t in ax.get_yticks())


@pytest.mark.parametrize("others", [["random"], ["random", "greedy"]])
def test_a_plot_is_written_whole_at_exactly_its_path(tmp_path, monkeypatch, others):
    """Before: matplotlib wrote into the file as it drew, so a run stopped then left a
    124-byte arena.png that no viewer opens; a path without .png wrote <path>.png and
    returned <path>; None and a result of another kind were AttributeErrors."""
    from matplotlib.figure import Figure

    from ono_env.apps.arena_cli import plot_head_to_head
    result = run_arena(["greedy", *others], "basic", 2, num_games=12, rating=False)
    real = Figure.savefig

    def stopped(self, fname, *args, **kwargs):   # a part of the PNG written, then a Ctrl-C
        real(self, fname, *args, **kwargs)
        fname.truncate(124)
        raise KeyboardInterrupt
    monkeypatch.setattr(Figure, "savefig", stopped)
    with pytest.raises(KeyboardInterrupt):
        plot_head_to_head(result, tmp_path / "arena.png")
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    assert plot_head_to_head(result, tmp_path / "plain") == tmp_path / "plain"
    assert (tmp_path / "plain").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]
    for result_, path, said in ((result, tmp_path, "cannot write plot .*: it is a folder"),
                                (result, None, "path=None; allowed: the path of the PNG"),
                                (None, tmp_path / "x.png", "result is a NoneType; allowed")):
        with pytest.raises(ValueError, match=said):
            plot_head_to_head(result_, path)


@pytest.mark.parametrize("args, message", [
    (["genius", "random", "--players", "2"], "unknown agent 'genius'"),
    (["missing.zip", "random", "--players", "2"], "cannot read model file 'missing.zip'"),
    (["greedy", "random", "--players", "11"], "--players: 11 is out of range; allowed: 2 to 10"),
    # a number as written, not as int() would coerce it
    (["greedy", "random", "--players", " 2"], "--players: ' 2' is not a whole number"),
    (["greedy", "random", "--players", "2", "--seed", "1__0"], "--seed: '1__0' is not a whole number"),
    (["greedy", "random", "--players", "2", "--seed", "\uff15"], "is not a whole number"),
    # before: int()'s own error past 4,300 digits, in a message holding all of them
    (["greedy", "random", "--players", "9" * 5000], "--players: a number of 5,000 digits is out "
                                                    "of range; allowed: 2 to 10"),
    (["greedy", "random", "--players", "-" + "9" * 40], "a negative number of 40 digits"),
    (["greedy", "random", "--players", "x" * 5000], "--players: 'xxxxxxxxxxxxxxxxxxxxxxxxxxx"
                                                    "xxxxxxxxx... is not a whole number"),
    (["greedy", "--players", "2"], "1 agent for 2 players: give at least 2 (repeat a name to "
                                   "seat it more than once)"),
    (["greedy", "random", "random", "--players", "4"], "3 agents for 4 players: give at least "
                                                       "4 (repeat a name to seat it more than once)"),
    # an empty path is not the current folder (before: 'wrote 3 replays to .')
    (["greedy", "random", "--players", "2", "--record", "3", ""], "DIR is empty"),
    (["greedy", "random", "--rules", "nosuch"], "nosuch"),
    # classic seats 4 unless --players, named (before: not)
    (["greedy", "random"], "2 agents for 4 players: give at least 4 (repeat a name to seat it "
                           "more than once), or --players 2 for a table of 2"),
    # the games rounded up (a note) and an agent that cannot play: the error alone (before:
    # the note, then the error)
    (["ppo-any", "ppo-basic-2p", "greedy", "--players", "3", "--rules", "basic"],
     "'ppo-basic-2p': trained for 2 players, asked to play 3"),
])
def test_cli_bad_input_is_one_clear_line(args, message, capsys):
    assert main(args + ["--games", "10", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ono-arena: error:") and message in err
    assert len(err.splitlines()) == 1


def test_console_script_entry_point_runs():
    proc = subprocess.run([sys.executable, "-m", "ono_env.apps.arena_cli", "greedy", "random", "--rules",
                           "basic", "--players", "2", "--games", "20", "--no-progress", "--no-rating"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "greedy" in proc.stdout


class _FirstLegal:
    """A deterministic agent: always the lowest legal action (ignores its generator)."""

    name = "first-legal"
    uses_observation = False

    def act(self, obs, mask, rng):
        return mask.argmax(axis=1)


def test_mirrored_deals_give_two_copies_of_a_deterministic_agent_exactly_half():
    for players in (2, 3):
        res = run_arena([_FirstLegal(), _FirstLegal(), _FirstLegal()][:players], "basic", players,
                        num_games=60 * players, seed=4, rating=False, mirrored=True)
        assert res.mirrored and res.records.deal is not None
        for row in res.agent_rows():                           # ties counted as ties
            assert row["win_rate"] == pytest.approx(1.0 / players, abs=1e-12)
        pr = res.paired(0)
        assert pr["sd"] == pytest.approx(0.0, abs=1e-12)
        assert pr["games"] == pr["deals"] * len(seatings(players))   # every seating per deal
    # without mirroring the same agents are not exactly even
    res = run_arena([_FirstLegal(), _FirstLegal()], "basic", 2, num_games=120, seed=4, rating=False)
    assert res.agent_rows()[0]["win_rate"] != pytest.approx(0.5, abs=1e-12)


def _add_two(x, lo=0.0, hi=1.0, games_per_deal=1):
    """The normal 95% interval of ``x`` with two more games at each bound (each of weight
    1 / games_per_deal, x being means over that many games), clipped: the arena's interval,
    written out again (with 1, two more values at each bound)."""
    x = np.asarray(x, float)
    k = 2 / games_per_deal
    v, w = np.concatenate([x, [lo, hi]]), np.concatenate([np.ones(len(x)), [k, k]])
    m = (w * v).sum() / w.sum()
    var = (w * (v - m) ** 2).sum() / (w.sum() - 1)
    half = 1.959963984540054 * np.sqrt(var / w.sum())
    return max(lo, m - half), min(hi, m + half)


def test_mirrored_deals_get_an_interval_that_keeps_its_width_and_its_order():
    from ono_env.arena import bounded_mean_interval

    # two copies of a deterministic agent tie every deal: no spread over the deals, yet the
    # interval has width (a plain normal one would be [50%, 50%])
    res = run_arena([_FirstLegal(), _FirstLegal()], "basic", 2, num_games=8, seed=4,
                    rating=False, mirrored=True)
    pr = res.paired(0)
    assert pr["rate"] == pytest.approx(0.5) and pr["deals"] == 4
    assert (pr["low"], pr["high"]) == pytest.approx(_add_two([0.5] * 4, games_per_deal=2))
    assert pr["low"] < 0.3 and pr["high"] > 0.7
    row = res.agent_rows()[0]
    assert (row["ci_low"], row["ci_high"]) == (pr["low"], pr["high"])
    # one deal: an interval still
    one = run_arena(["greedy", "random"], "basic", 2, num_games=2, seed=0, rating=False,
                    mirrored=True).paired(0)
    assert one["deals"] == 1 and one["high"] - one["low"] > 0.5
    # near a bound a worse record never reaches higher (before: 19 won and 1 shared gave
    # [92.6, 100], 19 won and 1 lost [85.2, 100], 20 of 20 won [83.9, 100])
    lows = [bounded_mean_interval(np.array(x), 0.0, 1.0)[1]
            for x in ([1.0] * 20, [1.0] * 19 + [0.5], [1.0] * 19 + [0.0])]
    assert lows == sorted(lows, reverse=True) and lows[0] == pytest.approx(0.8037, abs=1e-4)
    assert bounded_mean_interval(np.zeros(2000), 0.0, 1.0)[1:] == (0.0, pytest.approx(0.00238, abs=1e-5))
    # with spread, over 200 deals, within four thousandths of the plain normal interval
    res = run_arena(["greedy", "random"], "basic", 2, num_games=400, seed=0, rating=False,
                    mirrored=True)
    deals, share, _ = res.per_deal(0)
    pr = res.paired(0)
    half = 1.959963984540054 * share.std(ddof=1) / np.sqrt(len(deals))
    assert share.min() < share.max()
    assert (pr["low"], pr["high"]) == pytest.approx(_add_two(share, games_per_deal=2))
    assert pr["low"] == pytest.approx(max(0.0, share.mean() - half), abs=4e-3)
    assert pr["high"] == pytest.approx(min(1.0, share.mean() + half), abs=4e-3)


def test_the_interval_over_deals_adds_two_games_not_two_deals_at_each_end():
    """A deal's share at N players is the mean of its seatings' games (24 at 4 players, N
    from 5 on): two games are added at each end, not two whole deals (before: 25 deals at 4
    players gave random [12.7, 29.6] around 16.5%, and six copies of greedy [15.7, 20.2]
    around 16.7%)."""
    from ono_env.arena import bounded_mean_interval

    res = run_arena(["greedy", "color", "defensive", "random"], "basic", 4, num_games=600,
                    seed=3, rating=False, mirrored=True)
    deals, share, games = res.per_deal(3)
    pr = res.paired(3)
    assert games == 24 * len(deals) == 600
    assert (pr["low"], pr["high"]) == pytest.approx(_add_two(share, 0.0, 1.0, 24))
    assert (pr["low"], pr["high"]) == pytest.approx(bounded_mean_interval(share, 0, 1, 24)[1:])
    half = 1.959963984540054 * share.std(ddof=1) / np.sqrt(len(deals))
    assert pr["high"] < 0.25 and pr["high"] - share.mean() < 1.3 * half   # near the plain one
    old = bounded_mean_interval(share, 0.0, 1.0)   # two deals at each end: wide, off-centre
    assert old[2] - share.mean() > 2 * half
    six = run_arena(["greedy"] * 6, "basic", 6, num_games=600, rating=False, mirrored=True)
    for e in range(6):   # a share of exactly 1/6: its interval nearly centred on it
        p6 = six.paired(e)
        assert p6["rate"] == pytest.approx(1 / 6, abs=1e-12)
        assert abs((p6["high"] - p6["rate"]) - (p6["rate"] - p6["low"])) < 0.01
    with pytest.raises(ValueError, match=r"games_per_deal=0.5; allowed: a finite number of at "
                                         r"least 1"):
        bounded_mean_interval(share, 0.0, 1.0, 0.5)
    # the head-to-head matrix and a paired difference count their games per deal too
    h = res.head_to_head()
    _d, pair, games = res.per_deal(0, 3)
    assert games == 24 * len(_d)
    assert (h["low"][0, 3], h["high"][0, 3]) == pytest.approx(
        bounded_mean_interval(pair, 0.0, 1.0, 24)[1:])
    from ono_env.arena import paired_difference
    other = run_arena(["pimc:1", "color", "defensive", "random"], "basic", 4, num_games=600,
                      seed=3, rating=False, mirrored=True)
    d = paired_difference(res, other)
    sa, sb = res.per_deal(0)[1], other.per_deal(0)[1]
    assert (d["low"], d["high"]) == pytest.approx(
        bounded_mean_interval(sa - sb, -1.0, 1.0, 24)[1:])


def _cyclic(order):
    """A seating's order around the table, read from its lowest entrant."""
    k = int(np.argmin(order))
    return tuple(int(x) for x in np.roll(order, -k))


def test_past_four_players_a_mixed_tables_order_around_it_is_drawn_for_each_deal():
    """Past four players a table plays its seats' rotations, which keep the order around the
    table: played in the order given, every entrant kept its neighbours, and its share moved
    with where it was listed (greedy 24.8% or 22.7% at 5 players on the same deals, by the
    order alone; two copies of one agent took shares whose intervals did not meet). Now each
    deal draws its order, kept in every seating of the deal and by another run of the
    seed; only a table of copies of one agent keeps its order (every order is the same).
    A run saved before, which played the order given past four players, is not paired with
    one of now; at four players every seating is played, and it still is."""
    from ono_env.arena.play import arrangements, arranges

    agents = ["greedy", "random", "color", "random", "defensive"]
    res = run_arena(agents, "basic", 5, num_games=300, seed=4, rating=False, mirrored=True,
                    record=300)
    ent, deal = res.records.entrants, res.records.deal
    orders = {}
    for d in np.unique(deal):
        games = ent[deal == d]
        assert len(games) == 5
        for seat in range(5):   # every entrant in every seat once
            assert sorted(games[:, seat].tolist()) == [0, 1, 2, 3, 4]
        cyc = {_cyclic(g) for g in games}
        assert len(cyc) == 1    # one order around the table in every seating of the deal
        orders[int(d)] = cyc.pop()
    assert len(set(orders.values())) > 10    # drawn per deal, not the order given
    assert any(abs(o.index(0) - o.index(1)) not in (1, 4) for o in orders.values())
    labels = res.labels   # a replay's seats are labelled with the entrants that sat there
    for k, replay in zip(res.replay_rows, res.replays):
        assert list(replay.players) == [labels[e] for e in ent[k]]
    again = run_arena(agents, "basic", 5, num_games=300, seed=4, rating=False, mirrored=True)
    np.testing.assert_array_equal(again.records.entrants, ent)
    np.testing.assert_array_equal(again.records.wins, res.records.wins)
    # one agent against copies of another is arranged too: each copy's share is then the
    # same whatever its place (before: greedy + 4 random kept each random's neighbours)
    one = run_arena(["greedy"] + ["color"] * 5, "basic", 6, num_games=60, seed=4, rating=False,
                    mirrored=True)
    assert len({_cyclic(g) for g in one.records.entrants}) > 1
    same = run_arena(["color"] * 6, "basic", 6, num_games=60, seed=4, rating=False,
                     mirrored=True)
    assert {_cyclic(g) for g in same.records.entrants} == {(0, 1, 2, 3, 4, 5)}
    assert arranges(["a", "b", "b", "b", "b"]) and not arranges(["a"] * 6)
    assert arranges(["a", "b", "c", "c", "c"]) and arranges(["a", "a", "b", "b", "b"])
    assert not arranges(["a", "b", "c", "d"])   # up to four: every permutation is played
    # a saved run of before (no "seating": the order given) is not paired past four players
    from ono_env.arena import paired_difference
    old = res.to_dict()
    assert old.pop("seating") == 2
    new = run_arena(["color", "random", "color", "random", "defensive"], "basic", 5,
                    num_games=300, seed=4, rating=False, mirrored=True)
    with pytest.raises(ValueError, match=r"^the second run seated its tables of 5 players in the "
                                         r"order its agents were given \(an arena.json written "
                                         r"before 2026-12-07\)"):
        paired_difference(new, old)
    paired_difference(new, res.to_dict())
    # one agent against copies of another: its shares are those of either seating, so an
    # old run of that table still pairs (review: refused before, though sound); a compared
    # copy's neighbours differ, so that is refused
    kw6 = dict(rules="basic", num_players=6, num_games=120, seed=4, rating=False, mirrored=True)
    lone = run_arena(["greedy"] + ["color"] * 5, **kw6).to_dict()
    lone.pop("seating")
    other = run_arena(["random"] + ["color"] * 5, **kw6)
    paired_difference(other, lone)
    with pytest.raises(ValueError, match="seated its tables of 6 players in the order"):
        paired_difference(run_arena(["greedy"] + ["color"] * 5, **kw6), lone, entrant=1)
    for bad in (3, "2", 0):   # a seating this version does not know, or not a whole number
        with pytest.raises(ValueError, match=r"seating"):
            paired_difference(other, dict(res.to_dict(), seating=bad))
    four = run_arena(["greedy", "random", "color", "random"], "basic", 4, num_games=240, seed=4,
                     rating=False, mirrored=True)
    four_old = four.to_dict()
    four_old.pop("seating")
    paired_difference(run_arena(["color", "random", "color", "random"], "basic", 4,
                                num_games=240, seed=4, rating=False, mirrored=True), four_old)
    arr = arrangements(4, 0, 50, 5)
    assert arr.shape == (50, 5) and (np.sort(arr, axis=1) == np.arange(5)).all()
    # play_games' seat_members: an integer array of places in agents, else one error (before:
    # a list was an AttributeError, a place past the agents an IndexError, -1 taken)
    from ono_env.agents import make_agent
    from ono_env.arena import play_games
    rules = RuleSet.preset("basic", num_players=2)
    two = [make_agent("greedy", rules), make_agent("random", rules)]
    for bad in ([[0, 1]] * 4, np.array([[0, 2]] * 4), np.array([[-1, 0]] * 4),
                np.array([[0.0, 1.0]] * 4), np.zeros((3, 2), np.int64)):
        with pytest.raises(ValueError, match=r"^seat_members is a .*; allowed: None, or a NumPy integer "
                                             r"array of shape \(4, 2\) of places in agents, 0 to 1$"):
            play_games(rules, two, 4, 0, seat_members=bad)
    swapped = play_games(rules, two, 4, 0, seat_members=np.array([[1, 0]] * 4))
    plain = play_games(rules, two[::-1], 4, 0)
    assert all(np.array_equal(x, y) for x, y in zip(swapped, plain))


def test_mirrored_seatings_replay_the_same_deal():
    from ono_env import VecGame

    res = run_arena(["greedy", "random"], "basic", 2, num_games=40, seed=8, rating=False,
                    mirrored=True, record=40)
    rows = np.asarray(res.replay_rows)
    seeds = {int(k): r.game_seed for k, r in zip(rows, res.replays)}
    deal = res.records.deal
    ent = res.records.entrants
    for k in range(20):                     # game k of seating 0 and game k of seating 1
        a, b = k, 20 + k
        assert deal[a] == deal[b] and seeds[a] == seeds[b]
        assert ent[a].tolist() == ent[b].tolist()[::-1]        # seats swapped
        hands = []
        for g in (a, b):
            game = VecGame(res.rules, 1, seed=0)
            game.reset(seeds=[seeds[g]])
            hands.append(game.state.hands[0].copy())
        assert np.array_equal(hands[0], hands[1])             # the same cards in each seat
    # the paired head-to-head is the per-deal mean, and the two sides sum to one
    h = res.head_to_head()
    assert h["rate"][0, 1] + h["rate"][1, 0] == pytest.approx(1.0)
    assert h["low"][0, 1] <= h["rate"][0, 1] <= h["high"][0, 1]
    plain = run_arena(["greedy", "random"], "basic", 2, num_games=40, seed=8, rating=False,
                      record=40)
    seeds = {int(k): r.game_seed for k, r in zip(plain.replay_rows, plain.replays)}
    assert all(seeds[k] != seeds[20 + k] for k in range(20))


def test_cli_mirrored_and_cheating_labels(capsys):
    assert main(["greedy", "oracle:1", "--rules", "basic", "--players", "2", "--games", "20",
                 "--mirrored", "--no-progress", "--no-rating"]) == 0
    out = capsys.readouterr().out
    assert "mirrored deals" in out and "oracle:1 (cheating)" in out


def test_paired_difference_compares_two_runs_deal_by_deal(tmp_path):
    """Two mirrored runs with the same seed deal the same cards: A against B is the per-deal
    difference of their shares, saved runs (arena.json) give the same numbers, and runs that
    did not deal the same cards, or seat other opponents, are refused."""
    from ono_env.arena import check_paired_plan, paired_difference, read_arena_json

    kw = dict(rules="basic", num_players=2, num_games=400, seed=5, rating=False, mirrored=True)
    a = run_arena(["greedy", "random"], **kw)
    b = run_arena(["color", "random"], **kw)
    d = paired_difference(a, b)
    assert (d["agent_a"], d["agent_b"], d["deals"]) == ("greedy", "color", 200)
    assert d["rate_a"] == pytest.approx(a.paired(0)["rate"])
    assert d["rate_b"] == pytest.approx(b.paired(0)["rate"])
    assert d["diff"] == pytest.approx(d["rate_a"] - d["rate_b"])
    assert d["low"] < d["diff"] < d["high"]
    deals_a, share_a, _ = a.per_deal(0)
    deals_b, share_b, _ = b.per_deal(0)
    assert np.array_equal(deals_a, deals_b) and not np.array_equal(share_a, share_b)
    same = paired_difference(a, run_arena(["greedy", "random"], **kw))   # a rerun: no difference
    assert same["diff"] == 0.0
    # ... and an interval that keeps width (before: [0, 0] from 200 equal differences)
    assert (same["low"], same["high"]) == pytest.approx(_add_two([0.0] * 200, -1.0, 1.0, 2))
    assert same["low"] < -0.01 and same["high"] > 0.01
    a.save(tmp_path / "a")
    saved = read_arena_json(tmp_path / "a")
    assert len(saved["per_deal"]["greedy"]["share"]) == 200 and saved["batch_size"] == 4096
    assert len((tmp_path / "a" / "arena.json").read_text().splitlines()) < 150   # a line a list
    back = paired_difference(b, saved)
    assert back["diff"] == pytest.approx(-d["diff"]) and back["agent_b"] == "greedy"
    check_paired_plan(saved, ["pimc:2", "random"], "basic", 2, 400, 5)   # would deal the same
    refusals = [
        (dict(kw, seed=6), ["color", "random"], r"differ in seed \(6 against 5\)"),
        (dict(kw, num_games=402), ["color", "random"],
         r"differ in number of games played \(402 against 400; a mirrored run plays the games "
         r"asked rounded up to whole deals\)"),
        (dict(kw, batch_size=100), ["color", "random"], r"differ in batch size \(100 against 4096\)"),
        (kw, ["color", "greedy"], r"the other entrants differ \(greedy against random\)"),
        # before: "differ in number of games (402 against 400)", where the games asked were
        # the same and three entrants play more of them
        (kw, ["color", "random", "random"], r"the two runs have 3 and 2 entrants"),
    ]
    for args, agents, message in refusals:
        with pytest.raises(ValueError, match=message):
            check_paired_plan(saved, agents, args["rules"], 2, args["num_games"], args["seed"],
                              args.get("batch_size", 4096))
        with pytest.raises(ValueError, match=message):
            paired_difference(run_arena(agents, **args), saved)
    with pytest.raises(ValueError, match="differ in rules"):
        check_paired_plan(saved, ["color", "random"], "classic", 2, 400, 5)
    # each argument checked as run_arena checks it (before: "greedy" read letter by letter,
    # "0" said to differ from 0, a float batch taken)
    for agents, games, seed, batch, message in (
            ("greedy", 400, 5, 4096, r"^agents='greedy' \(str\); allowed: a list"),
            (["color", "random"], 400, "5", 4096, r"^seed="),
            (["color", "random"], 400, -1, 4096, r"^seed="),
            (["color", "random"], 400, 5, 0, r"^batch_size="),
            (["color", "random"], 400, 5, 4096.0, r"^batch_size=")):
        with pytest.raises(ValueError, match=message):
            check_paired_plan(saved, agents, "basic", 2, games, seed, batch)
    # another decision limit cuts other games: refused (an arena.json of before, which does
    # not record it, is not compared)
    cut = run_arena(["color", "random"], **dict(kw, max_decisions=30))
    with pytest.raises(ValueError, match=r"different decision limits \(max_decisions 30 against None"):
        paired_difference(cut, saved)
    cut.save(tmp_path / "cut")
    check_paired_plan(read_arena_json(tmp_path / "cut"), ["greedy", "random"], "basic", 2, 400, 5,
                      max_decisions=30)   # the same limit given: pairs
    with pytest.raises(ValueError, match="different decision limits"):
        check_paired_plan(read_arena_json(tmp_path / "cut"), ["greedy", "random"], "basic", 2, 400, 5)
    older = {k: v for k, v in saved.items() if k not in ("max_decisions", "models")}
    assert paired_difference(run_arena(["color", "random"], **kw), older)["deals"] == 200
    # check_pairable reads records (mirrored_record's): an arena.json's dict as it was read,
    # or a record whose fields are of other kinds, is one ValueError (before: Python's
    # TypeError or AttributeError, or labels compared as the text of the file's rows)
    from ono_env.arena import check_pairable, mirrored_record
    record = mirrored_record(saved, "saved")
    check_pairable(record, record)
    for first, message in ((saved, r"^the first run's agents = \[\{'agent': 'greedy'"),
                           (dict(record, agents=False), r"^the first run's agents = False; allowed: "
                                                        r"a list of the entrants' labels \(mirrored_record"),
                           (dict(record, rules=2147483647), r"^the first run's rules = 2147483647; "),
                           (dict(record, seed=True), r"^the first run's seed = True; allowed: an integer"),
                           (dict(record, models=[]), r"^the first run's models = \[\]; "),
                           ([record], r"^the first run is a list; allowed: a run's record")):
        for one, two, which in ((first, record, "first"), (record, first, "second")):
            with pytest.raises(ValueError, match=message.replace("first", which)):
                check_pairable(one, two)
    # the arena writes what the reader takes: an agent named "" (written before, refused on
    # reading back) plays under its class name, as one named None, 5 or "   " does (before:
    # "?", "None", "5" and a blank label)
    class Unnamed:
        name = ""

        def act(self, obs, mask, rng):
            return mask.argmax(axis=1)
    unnamed = run_arena([Unnamed(), "random"], **kw)
    assert unnamed.labels[0] == "Unnamed"
    unnamed.save(tmp_path / "unnamed")
    assert paired_difference(a, read_arena_json(tmp_path / "unnamed"))["agent_b"] == "Unnamed"
    for name in (None, 5, "   "):
        Unnamed.name = name
        assert agent_label(Unnamed()) == "Unnamed"
    # a label that is not printable text (a terminal's escape sequence) is not printed back
    evil = dict(saved, agents=[dict(saved["agents"][0], agent="greedy\x1b[2J"),
                               *saved["agents"][1:]])
    with pytest.raises(ValueError, match=r"an agent's label = 'greedy\\x1b\[2J' holds U\+001B "
                                         r"\(a control character\), which is not printable"):
        paired_difference(b, evil)
    for entry in ("x", [1, 2], None):   # a damaged per_deal: one error naming the entry
        damaged = dict(saved, per_deal=dict(saved["per_deal"], greedy=entry))
        if entry is None:
            del damaged["per_deal"]["greedy"]
        with pytest.raises(ValueError, match=r"per_deal of 'greedy' \(an agent of the run\) = "
                                             r".*; allowed: a mapping with the lists"):
            paired_difference(b, damaged)
    # shares edited within their range: refused, their mean not the rate the run reported
    # (before: compared, "-10.00 points" beside a file whose rate said otherwise)
    entry = dict(saved["per_deal"]["greedy"])
    edited = dict(saved, per_deal=dict(saved["per_deal"], greedy=dict(
        entry, share=[0.5] * len(entry["share"]))))
    with pytest.raises(ValueError, match=r"per_deal of 'greedy': its shares' mean, "
                                         r"0\.500000, is not its win_rate, 0\.\d{6}; allowed"):
        paired_difference(b, edited)
    three = run_arena(["color", "random", "greedy"], **dict(kw, num_games=600))
    with pytest.raises(ValueError, match="have 3 and 2 entrants"):
        paired_difference(three, run_arena(["greedy", "random"], **dict(kw, num_games=600)))
    plain = run_arena(["greedy", "random"], "basic", 2, num_games=40, seed=5, rating=False)
    with pytest.raises(ValueError, match="was not played with mirrored deals"):
        paired_difference(plain, a)
    plain.save(tmp_path / "plain")
    with pytest.raises(ValueError, match="holds no per-deal results"):
        paired_difference(a, read_arena_json(tmp_path / "plain"))
    (tmp_path / "bad.json").write_text('{"seed": 1}')
    text = (tmp_path / "plain" / "arena.json").read_text().rstrip()   # before: the last kept
    (tmp_path / "twice.json").write_text(text[:-1] + ', "seed": 6}')
    for path, message in ((tmp_path / "bad.json", "is not an arena.json"),
                          (tmp_path / "twice.json", "is not an arena.json \\(not JSON: the key "
                                                    "'seed' is given twice\\)"),
                          (tmp_path / "none", "cannot read")):
        with pytest.raises(ValueError, match=message):
            read_arena_json(path)


def test_cli_out_refuses_before_any_game_what_it_could_not_write_or_would_replace(tmp_path, capsys):
    base = ["greedy", "random", "--rules", "basic", "--players", "2", "--games", "20",
            "--no-progress", "--no-rating"]
    assert main([*base, "--out", str(tmp_path / "run")]) == 0
    before = (tmp_path / "run" / "arena.json").read_bytes()
    (tmp_path / "dir" / "arena.json").mkdir(parents=True)
    for out, message in ((tmp_path / "run", "already holds arena.json, arena.csv"),
                         (tmp_path / "dir", "already holds arena.json"),
                         ("", "--out: a folder path is needed")):
        capsys.readouterr()
        assert main([*base, "--out", str(out)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""   # no game played: no table printed
        assert message in captured.err and len(captured.err.splitlines()) == 1
    assert (tmp_path / "run" / "arena.json").read_bytes() == before
    assert main([*base, "--mirrored", "--paired-with", ""]) == 2
    assert "--paired-with: an arena.json or the folder holding it" in capsys.readouterr().err


@pytest.mark.parametrize("call,message", [
    (lambda: wilson_interval(11, 10), "wins=11.0; allowed: a finite number from 0 to n=10"),
    (lambda: wilson_interval(-1, 10), "wins=-1.0; allowed"),
    (lambda: wilson_interval(float("nan"), 10), "wins=nan; allowed"),
    (lambda: wilson_interval(1, -10), "n=-10.0; allowed: a finite number of games: 0, or 1 or "
                                      "more"),
    (lambda: wilson_interval(1e-320, 1e-320), "n=1e-320; allowed"),   # was a ZeroDivisionError
    # mean_interval checks its values as bounded_mean_interval does (before: nothing)
    (lambda: mean_interval(np.ones((2, 2))), "x is float64 (2, 2); allowed: a 1-d"),
    (lambda: mean_interval("ab"), "x is <U2 (); allowed: a 1-d array of numbers"),
    (lambda: mean_interval(np.array([1.0, np.inf])), "x holds nan or inf; allowed: finite numbers"),
    (lambda: wilson_interval(1, 10, -1.96), "z=-1.96; allowed: a finite number above 0"),
    (lambda: wilson_interval(True, 10), "wins=True; allowed"),
    (lambda: bounded_mean_interval(np.array([0.5, 2.0]), 0, 1), "x holds values from 0.5 to 2.0"),
    (lambda: bounded_mean_interval(np.array([0.5, np.nan]), 0, 1), "x holds nan or inf"),
    (lambda: bounded_mean_interval(np.array([0.5]), 1, 0), "lo=1.0, hi=0.0; allowed: finite"),
    (lambda: bounded_mean_interval(np.ones((2, 2)), 0, 1), "x is float64 (2, 2); allowed: a 1-d"),
    (lambda: seatings(11), "num_players=11; allowed: an integer from 2 to 10"),
    (lambda: seatings(2.0), "num_players=2.0 (float); allowed"),
    (lambda: games_played(10, 1, 2), "num_entrants=1; allowed: an integer >= 2"),
    (lambda: games_played(-5, 2, 2), "num_games=-5; allowed: an integer >= 0"),
    (lambda: play_games(RuleSet.preset("basic", num_players=2), [RandomAgent()] * 2, 0, 0),
     "num_games=0; allowed: an integer >= 1"),
    (lambda: play_games(RuleSet.preset("basic", num_players=2), [RandomAgent()] * 2, 4, -1),
     "seed=-1; allowed"),
    (lambda: play_games(RuleSet.preset("basic", num_players=2), [RandomAgent()] * 2, 4, 0,
                        batch_size=0), "batch_size=0; allowed: an integer from 1 to"),
    (lambda: play_games(RuleSet.preset("basic", num_players=2), [RandomAgent()] * 2, 4, 0,
                        record=[1, 4], replays=[]), "record[1]=4; allowed: an integer from 0 to 3"),
    (lambda: play_games(RuleSet.preset("basic", num_players=2), [RandomAgent()] * 2, 4, 0,
                        record=[3]), "record=[3] with replays=None; allowed: a list"),
])
def test_the_statistics_helpers_refuse_what_they_cannot_measure(call, message):
    # before: a math domain error, a division by zero, an interval beyond its bounds, a
    # range() error, or a game to record silently not recorded
    with pytest.raises(ValueError) as exc:
        call()
    assert message in str(exc.value)


def test_the_statistics_helpers_keep_their_answers_at_the_bounds():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(10, 10)[1] == 1.0 and wilson_interval(0, 10)[0] == 0.0
    # a sum of shared wins a rounding error over the games still has its interval
    assert wilson_interval(10 * (1 + 1e-15), 10)[1] == 1.0
    assert bounded_mean_interval(np.array([1.0 + 1e-15, 0.0]), 0.0, 1.0)[0] == pytest.approx(0.5)


def test_a_plan_too_big_for_any_games_count_says_so():
    from ono_env.arena import check_plan, games_played
    planned = games_played(1, 30, 10)
    with pytest.raises(ValueError, match="every seating of every table alone is over") as info:
        check_plan(planned, 1, 30, 10)
    assert "ask for at least" not in str(info.value)
    with pytest.raises(ValueError, match="ask for at least"):
        check_plan(games_played(1, 20, 4), 1, 20, 4)


def test_cli_pairs_one_model_file_labelled_by_its_folder_and_rules_by_another_name(tmp_path, capsys):
    """Before: the same model file as the other entrant, labelled by its folder in one run
    (another entrant's file had its name) and by its name in the other, was refused as
    another entrant; and two rules files of one rule set under two names as dealing other
    cards."""
    import shutil

    from ono_env.agents.learned import shipped_models
    for folder, model in (("d1", "ppo-basic-2p"), ("d2", "ppo-any")):
        (tmp_path / folder).mkdir()
        shutil.copy(shipped_models()[model], tmp_path / folder / "m.safetensors")
    (tmp_path / "r1.yaml").write_text("preset: basic\nname: mine\n")
    (tmp_path / "r2.yaml").write_text("preset: basic\nname: yours\n")
    base = ["--players", "2", "--games", "40", "--seed", "3", "--mirrored", "--no-progress",
            "--no-rating"]
    d1, d2 = str(tmp_path / "d1" / "m.safetensors"), str(tmp_path / "d2" / "m.safetensors")
    assert main(["greedy", d1, "--rules", str(tmp_path / "r1.yaml"), *base,
                 "--out", str(tmp_path / "a")]) == 0
    capsys.readouterr()
    assert main([d2, d1, "--rules", str(tmp_path / "r2.yaml"), *base,
                 "--paired-with", str(tmp_path / "a")]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("paired with ") and "- greedy " in line
    # another file under the label: still refused, by its digest
    shutil.copy(shipped_models()["ppo-any"], tmp_path / "d1" / "m.safetensors")
    assert main([d2, d1, "--rules", "basic", *base, "--paired-with", str(tmp_path / "a")]) == 2
    assert "the other entrants differ (d1/m.safetensors against m)" in capsys.readouterr().err
    # a search agent guided by that very model is another entrant (its recorded digest is
    # its guide's): refused (before: paired as the folder-labelled file)
    shutil.copy(shipped_models()["ppo-basic-2p"], tmp_path / "d1" / "m.safetensors")
    (tmp_path / "d3").mkdir()
    d3 = str(shutil.copy(shipped_models()["ppo-basic-2p"], tmp_path / "d3" / "m.safetensors"))
    assert main(["random", d1, d3, "--rules", "basic", *base, "--out", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    for search in ("pimc-ppo:2", "oracle-ppo:2"):
        assert main(["greedy", search, d3, "--rules", "basic", *base,
                     "--paired-with", str(tmp_path / "b")]) == 2
        assert f"the other entrants differ ({search}, m against d1/m.safetensors, d3/m.safetensors)" \
            in capsys.readouterr().err
    # rules that deal other cards: refused, the fields named
    assert main(["color", "greedy", "--rules", "classic", *base, "--paired-with", str(tmp_path / "a")]) == 2
    assert "differ in rules" in capsys.readouterr().err


def test_cli_paired_with_an_earlier_run(tmp_path, capsys):
    base = ["--rules", "basic", "--players", "2", "--games", "200", "--seed", "3",
            "--mirrored", "--no-progress", "--no-rating"]
    assert main(["greedy", "random", *base, "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["color", "random", *base, "--paired-with", str(tmp_path)]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith(f"paired with {tmp_path}: color ") and "- greedy " in line
    assert line.endswith("over the same 100 deals")
    for seed, earlier, message in (("4", tmp_path, "differ in seed (4 against 3)"),
                                   ("3", tmp_path / "none", "error: cannot read arena.json")):
        argv = ["color", "random", *[seed if a == "3" else a for a in base],
                "--paired-with", str(earlier)]
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("ono-arena: error: ") and message in err and len(err.splitlines()) == 1
    assert main(["color", "random", "--rules", "basic", "--players", "2", "--games", "20",
                 "--paired-with", str(tmp_path)]) == 2
    assert "add --mirrored" in capsys.readouterr().err
    # a saved run edited by hand: refused before any game, the field named (before: a string
    # seed or a 1e30 deal number passed, or only failed after every game was played)
    good = json.loads((tmp_path / "arena.json").read_text())
    first = good["agents"][0]["agent"]
    edits = [(lambda d: d.update(seed="3"), "seed = '3'; allowed: an integer"),
             (lambda d: d.update(games=200.0), "games = 200.0; allowed: an integer"),
             (lambda d: d.update(mirrored="yes"), "holds no per-deal results"),
             (lambda d: d["per_deal"][first]["deals"].__setitem__(-1, 1e30),
              "a deal number of 'greedy' = 1e+30"),
             (lambda d: d["per_deal"][first]["deals"].__setitem__(-1, 10 ** 6),
              "each below the run's 200 games"),
             # before: found only after every game (a list cut short or shifted), Python's
             # TypeError or KeyError, and two entrants of one label read as one
             (lambda d: d["per_deal"][first].update(deals=d["per_deal"][first]["deals"][:50],
                                                    share=d["per_deal"][first]["share"][:50]),
              "per_deal of 'greedy': not the deals a mirrored run of 2 entrants at 2 players "
              "and 200 games seats it at"),
             (lambda d: d["per_deal"][first].update(
                 deals=[x + 1 for x in d["per_deal"][first]["deals"]],
                 share=d["per_deal"][first]["share"]), "not the deals a mirrored run"),
             (lambda d: d.update(agents="greedy"), "agents = 'greedy'; allowed: a list of one "
                                                   "mapping per entrant"),
             (lambda d: d.pop("batch_size"), "it has no 'batch_size'"),
             (lambda d: d["agents"][1].update(agent="greedy"),
              "the label 'greedy' is given twice")]
    bad = tmp_path / "bad"
    bad.mkdir()
    for edit, message in edits:
        d = json.loads(json.dumps(good))
        edit(d)
        (bad / "arena.json").write_text(json.dumps(d))
        assert main(["color", "random", *base, "--paired-with", str(bad)]) == 2
        out = capsys.readouterr()
        assert message in out.err and len(out.err.strip().splitlines()) == 1 and out.out == ""
    (bad / "arena.json").write_text("[" * 100_000)
    assert main(["color", "random", *base, "--paired-with", str(bad)]) == 2
    assert "is not an arena.json (not JSON: nested too deeply" in capsys.readouterr().err


def test_the_arena_writes_its_files_before_it_prints(tmp_path):
    """A reader that stops reading (``| head -1``) leaves the run's files and replays
    written (before: the table was printed first, and a closed pipe lost them)."""
    proc = subprocess.Popen([sys.executable, "-m", "ono_env.apps.arena_cli", "greedy", "random",
                             "--players", "2", "--games", "40", "--no-progress", "--no-rating",
                             "--out", str(tmp_path / "out"), "--record", "2",
                             str(tmp_path / "replays")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()   # nothing read: the first print meets a closed pipe
    assert proc.wait(timeout=300) == 141   # quietly, as Unix tools end there
    assert proc.stderr is not None and proc.stderr.read() == b""
    assert (tmp_path / "out" / "arena.json").is_file()
    assert len(list((tmp_path / "replays").glob("replay-*.json"))) == 2


def test_a_class_of_ones_own_named_as_a_built_in_agent_is_told_apart(capsys):
    """Before: a class named ``greedy`` beside greedy read greedy#1 and greedy#2."""
    class Greedyish:
        name = "greedy"

        def act(self, obs, mask, rng):
            return mask.argmax(axis=1)

    class Mine:
        name = "mine"

        def act(self, obs, mask, rng):
            return mask.argmax(axis=1)

    result = run_arena([Greedyish(), "greedy", Mine()], "basic", 2, 12, rating=False)
    assert result.labels == [f"{__name__}:test_a_class_of_ones_own_named_as_a_built_in_agent_"
                             f"is_told_apart.<locals>.Greedyish", "greedy", "mine"]


def test_pooling_mirrored_runs_of_different_seeds(tmp_path, capsys, monkeypatch):
    """benchmarks/pool_mirrored.py: two runs with different seeds pool into one interval over
    all their deals; --minus pairs each with a run of another agent on the same deals; the
    same seed twice, a --minus run on other deals, a run minus itself or --minus given twice
    is one error and prints no result."""
    import runpy
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "pool_mirrored.py"
    monkeypatch.syspath_prepend(str(script.parent))
    pool = runpy.run_path(str(script))["main"]
    kw = dict(rules="basic", num_players=2, num_games=200, rating=False, mirrored=True)
    shares = {}
    for agent in ("greedy", "color"):
        for seed in (1, 2):
            r = run_arena([agent, "random"], seed=seed, **kw)
            r.save(tmp_path / f"{agent}{seed}")
            shares[agent, seed] = r.per_deal(0)[1]
    a = np.concatenate([shares["greedy", 1], shares["greedy", 2]])
    b = np.concatenate([shares["color", 1], shares["color", 2]])
    runs = [str(tmp_path / "greedy1"), str(tmp_path / "greedy2")]
    assert pool(runs + ["--minus", str(tmp_path / "color1"), str(tmp_path / "color2")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"greedy: {100 * a.mean():.2f}% [") and "over 200 deals (2 runs)" in out[0]
    assert out[1].startswith(f"color: {100 * b.mean():.2f}% [")
    low, high = _add_two(a - b, -1.0, 1.0, 2)    # the arena's interval over all the deals
    assert out[2] == (f"greedy - color: {100 * (a - b).mean():+.2f} points "
                      f"[{100 * low:+.2f}, {100 * high:+.2f}] over 200 deals")
    assert pool([runs[0], runs[0]]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "the same seed" in captured.err
    assert pool(runs + ["--minus", str(tmp_path / "color2"), str(tmp_path / "color1")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "differ in seed (1 against 2)" in captured.err
    # before: +0.00 points, as if measured
    assert pool([runs[0], "--minus", str(tmp_path / "greedy1" / "arena.json")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "is the run" in captured.err and "itself" in captured.err
    with pytest.raises(SystemExit) as exc:   # before: the second --minus alone was read
        pool(runs + ["--minus", str(tmp_path / "color1"), "--minus", str(tmp_path / "color2")])
    assert exc.value.code == 2 and "argument --minus: given more than once" in capsys.readouterr().err
    # past four players, a run saved before (its tables in the order given) is not pooled
    # with one of now (before: pooled)
    five = dict(kw, num_players=5, num_games=50)
    agents = ["greedy", "random", "color", "random", "defensive"]
    for seed in (1, 2):
        run_arena(agents, seed=seed, **five).save(tmp_path / f"five{seed}")
    old = json.loads((tmp_path / "five2" / "arena.json").read_text())
    del old["seating"]
    (tmp_path / "five2" / "arena.json").write_text(json.dumps(old))
    assert pool([str(tmp_path / "five1"), str(tmp_path / "five2")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "seated their tables otherwise (seating 1 against 2" in captured.err


def test_agreement_counts_the_decisions_with_a_choice():
    """A deterministic policy agrees with itself at every decision (greedy, which breaks
    ties at random, does not); two different policies do not; the count covers only
    decisions with two or more legal actions, and is seeded."""
    from ono_env.arena import agreement

    rules = {"preset": "basic", "num_players": 2}
    same = agreement("ppo-basic-2p", "ppo-basic-2p", rules, 50, seed=1)
    assert same["agreement"] == 1.0 and same["decisions"] > 0
    # the same games played here: the decisions with a choice, and all of them
    from ono_env import VecGame
    from ono_env.agents import make_agent

    policy = make_agent("ppo-basic-2p", rules)
    game = VecGame("basic", 50, seed=1, num_players=2)
    rng = np.random.default_rng(0)
    with_choice = every = 0
    while not game.finished.all():
        live = ~game.finished
        mask = game.legal_mask().copy()
        with_choice += int((live & (mask.sum(axis=1) > 1)).sum())
        every += int(live.sum())
        act = policy.act(game.observe(game.current_player.astype(np.int64)), mask, rng)
        game.step(np.where(live, act, 0), active=live)
    assert same["decisions"] == with_choice < every
    assert agreement("greedy", "greedy", rules, 50, seed=1)["agreement"] < 1.0
    other = agreement("defensive", "greedy", rules, 50, seed=1)
    assert 0.0 < other["agreement"] < 1.0 and other["low"] < other["agreement"] < other["high"]
    assert agreement("defensive", "greedy", rules, 50, seed=1) == other
    # the reference's games decide the decisions: only those with a choice count
    short = agreement("defensive", "greedy", rules, 50, seed=1, max_decisions=5)
    assert 0 < short["decisions"] <= 50 * 5
    # the name before 0.3 (one thing, one name: max_decisions everywhere else) still works
    with pytest.warns(DeprecationWarning, match="max_decisions"):
        assert agreement("defensive", "greedy", rules, 50, seed=1, max_moves=5) == short
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match=r"^max_moves=-1"):
        agreement("defensive", "greedy", rules, 50, seed=1, max_moves=-1)
    with pytest.raises(ValueError, match="not also max_moves"):
        agreement("defensive", "greedy", rules, 50, seed=1, max_decisions=5, max_moves=5)


@pytest.mark.parametrize("kwargs, message", [
    ({"agent": "pimc:2"}, "pimc.* plays from the game"),
    ({"num_games": 0}, "num_games"),
    ({"max_decisions": -1}, "max_decisions"),
    ({"agent": "nobody"}, "unknown agent 'nobody'"),
])
def test_agreement_refuses_what_it_cannot_measure(kwargs, message):
    from ono_env.arena import agreement

    args = {"agent": "greedy", "reference": "greedy", "rules": "basic", "num_games": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        agreement(**args)


@pytest.mark.parametrize("answer, message", [
    (lambda mask: None, r"\.act returned object \(\); expected \(20,\) integers"),
    (lambda mask: 3, r"\.act returned int64 \(\); expected \(20,\) integers"),
    (lambda mask: mask.argmax(axis=1)[:1], r"\.act returned int64 \(1,\); expected \(20,\)"),
    (lambda mask: mask.argmax(axis=1).astype(float), r"\.act returned float64 \(20,\)"),
    (lambda mask: np.full(len(mask), 84), r"chose illegal action 84 \('target 9'\) in row \d+; legal there: "),
])
def test_agreement_checks_each_answer_as_the_drivers_do(answer, message):
    """Before: each was compared as it came (None agreed nowhere, a scalar or one action was
    broadcast, floats agreed everywhere), or NumPy's broadcast error."""
    from ono_env.arena import agreement

    class Odd:
        name = "odd"

        def act(self, obs, mask, rng):
            return answer(mask)
    with pytest.raises(ValueError, match=message) as exc:
        agreement(Odd(), "greedy", {"preset": "basic", "num_players": 2}, 20, seed=1)
    # named by its label and class, not Python's address (before: <...Odd object at 0x...>)
    assert str(exc.value).startswith("'odd' (") and ".<locals>.Odd)" in str(exc.value) \
        and "0x" not in str(exc.value)
    with pytest.raises(ValueError, match=message):
        agreement("greedy", Odd(), {"preset": "basic", "num_players": 2}, 20, seed=1)


def test_headroom_pairs_every_agent_with_the_one_named(tmp_path, monkeypatch, capsys):
    """benchmarks/bench_headroom.py --pair-with: each other agent's per-deal difference from
    the named one on the same deals, in results.json and the page's column; a name that is
    not among --agents is one error before anything is played."""
    import runpy
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "bench_headroom.py"))["main"]
    best = bench.parent / "docs" / "results" / "generalist" / "results.json"
    args = ["bench_headroom.py", "--tables", "basic-3", "--agents", "random,color", "--deals", "6",
            "--best-from", str(best), "--out", str(tmp_path / "h")]
    monkeypatch.setattr(sys, "argv", args + ["--pair-with", "color"])
    main()
    rows = json.loads((tmp_path / "h" / "results.json").read_text())["rows"]
    page = (tmp_path / "h" / "results.md").read_text()
    assert "minus color's share, same deals" in page
    shares = {}
    for agent in ("random", "color"):
        r = run_arena([agent, "greedy", "greedy"], "basic", 3, 6 * 6, 2026, mirrored=True,
                      rating=False)
        shares[agent] = r.per_deal(0)[1]
    assert [r["agent"] for r in rows] == ["random", "color"] and "minus_paired" not in rows[1]
    assert rows[0]["paired_with"] == "color"
    assert np.isclose(rows[0]["minus_paired"][0], (shares["random"] - shares["color"]).mean())
    monkeypatch.setattr(sys, "argv", args[:-2] + ["--pair-with", "greedy", "--out",
                                                  str(tmp_path / "g")])
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main()
    assert "--pair-with 'greedy'; allowed: one of --agents (random, color)" in str(exc.value)
    assert not (tmp_path / "g").exists()


def test_headroom_names_the_model_files_it_played(tmp_path, monkeypatch):
    """benchmarks/bench_headroom.py: results.json and the page name each model file's SHA-256
    (before: a page made with an earlier ppo-any named only ppo-any, and its command then
    played the model shipped since)."""
    import runpy
    from pathlib import Path

    from ono_env.agents.learned import model_sha256, shipped_models

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "bench_headroom.py"))["main"]
    best = bench.parent / "docs" / "results" / "generalist" / "results.json"
    monkeypatch.setattr(sys, "argv", ["bench_headroom.py", "--tables", "basic-3", "--agents",
                                      "ppo-any,random", "--deals", "2", "--best-from", str(best),
                                      "--out", str(tmp_path / "h")])
    main()
    rows = json.loads((tmp_path / "h" / "results.json").read_text())["rows"]
    sha = model_sha256(shipped_models()["ppo-any"])
    assert [r["models"] for r in rows] == [{"ppo-any": sha}, {}]
    assert f"Model files played (SHA-256): `ppo-any` {sha}." in (tmp_path / "h" / "results.md").read_text()


def test_ladder_json_holds_no_nan(tmp_path, monkeypatch):
    """benchmarks/bench_ladder.py: a four-player ladder's pairs have no interval; their bounds
    are written as null, and --render turns the NaN of a file written before into null, with
    the ratings and the table unchanged."""
    import runpy
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "bench_ladder.py"))["main"]
    shipped = bench.parent / "docs" / "results" / "ladder" / "basic-4p-ladder"
    data = json.loads((shipped / "ladder.json").read_text())
    data["results"][0]["low"] = data["results"][0]["high"] = float("nan")
    old = tmp_path / "ladder.json"
    old.write_text(json.dumps(data, indent=2))
    assert "NaN" in old.read_text()
    monkeypatch.setattr(sys, "argv", ["bench_ladder.py", "--render", str(old)])
    main()

    def no_constant(name):
        raise ValueError(f"not JSON: {name}")

    again = json.loads(old.read_text(), parse_constant=no_constant)
    assert again["results"][0]["low"] is None and again["results"][0]["high"] is None
    assert again["ratings"] == data["ratings"]
    assert old.with_suffix(".md").read_text() == (shipped / "ladder.md").read_text()


def test_benchmarks_find_the_best_baselines_from_any_directory(tmp_path, monkeypatch):
    """benchmarks/bench_headroom.py without --best-from reads the shipped generalist's
    results.json from the script's own place, so it runs from any working directory; a
    --best-from that is missing, not JSON, or has no part 'two' is one error naming the file
    before anything is written."""
    import runpy
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "bench_headroom.py"))["main"]
    monkeypatch.chdir(tmp_path)                      # no docs/results here
    args = ["bench_headroom.py", "--tables", "ono-3", "--agents", "random", "--deals", "2"]
    monkeypatch.setattr(sys, "argv", args + ["--out", "h"])
    main()
    (row,) = json.loads((tmp_path / "h" / "results.json").read_text())["rows"]
    assert row["opponent"] == "2 x color"            # ono's best baseline, from the shipped file
    (tmp_path / "text.json").write_text("not json")
    (tmp_path / "none.json").write_text('{"rows": [{"what": "many"}]}')
    shipped = json.loads((bench.parent / "docs/results/generalist/results.json").read_text())
    for r in shipped["rows"]:
        if r["what"] == "two" and r["preset"] == "ono":
            r["opponent"] = "nosuch"   # before: a traceback at its first game
    (tmp_path / "other.json").write_text(json.dumps(shipped))
    for path, message in (("missing.json", "FileNotFoundError"), ("text.json", "JSONDecodeError"),
                          ("none.json", "no part 'two'"),
                          ("other.json", "names the opponent(s) 'nosuch'; allowed: the "
                                         "baselines part two plays (greedy, color, defensive)")):
        monkeypatch.setattr(sys, "argv", args + ["--best-from", path, "--out", "g"])
        with pytest.raises(SystemExit) as exc:
            main()
        assert str(exc.value).startswith(f"bench_headroom: --best-from {path}: ")
        assert message in str(exc.value)
        assert not (tmp_path / "g").exists()


BAD_BENCHMARK_ARGUMENTS = [
    ("bench_generalist", ["--parts", "nosuch"], "--parts 'nosuch': unknown part(s) 'nosuch'"),
    ("bench_generalist", ["--deals", "1"], "--deals 1; allowed: 2 or more"),
    ("bench_generalist", ["--ten-presets", "basic,nosuch"], "--ten-presets 'basic,nosuch'; allowed"),
    # before: measured twice, its rows written twice
    ("bench_generalist", ["--ten-presets", "basic,basic"], "--ten-presets: 'basic' is given twice"),
    ("bench_generalist", ["--parts", "ten,ten"], "--parts: 'ten' is given twice"),
    ("bench_generalist", ["--model", "ppo-basic-2p"], "--model 'ppo-basic-2p': "),
    ("bench_generalist", ["--out", "{file}"], "--out: '{file}' exists and is not a folder"),
    ("bench_headroom", ["--tables", "ono-3", "--agents", "random,nosuch"],
     "--agents 'nosuch' at ono-3: unknown agent 'nosuch'"),
    ("bench_headroom", ["--tables", "ono-3", "--deals", "1"], "--deals 1; allowed: 2 or more"),
    ("bench_headroom", ["--tables", "ono-3", "--out", "{file}"], "exists and is not a folder"),
    # deals whose games (every seating of each) are more than the arena plays in one run,
    # refused before any game: the largest table size a part plays sets the bound
    ("bench_headroom", ["--tables", "ono-6,basic-4", "--deals", "4166667"],
     "--deals 4166667; allowed: at most 4,166,666"),
    ("bench_generalist", ["--deals-many", "4166667"], "--deals-many 4166667; allowed: at most 4,166,666"),
    ("bench_generalist", ["--deals-ten", "10000001"], "--deals-ten 10000001; allowed: at most 10,000,000"),
    ("bench_generalist", ["--deals", "50000001"], "--deals 50000001; allowed: at most 50,000,000"),
    ("bench_generalist", ["--seed", "-1"], "--seed -1; allowed: 0 or more"),
    ("bench_probes", ["--tables", "ono-6", "--deals", "16666667"],
     "--deals 16666667; allowed: at most 16,666,666"),
    ("bench_color_symmetry", ["--tables", "ono-3", "--seed", "-1"], "--seed -1; allowed: 0 or more"),
    ("bench_rollout_targets", ["--deals", "16666667"], "--deals 16666667; allowed: at most 16,666,666"),
    ("bench_rollout_targets", ["--procs", "65"], "--procs 65; allowed: at most 64"),
    ("bench_rollout_targets", ["--worlds", "1000001"], "--worlds 1000001; allowed: at most 1,000,000"),
    # after its games (their count is known only then), and before the fit: nothing is left
    ("bench_rollout_targets", ["--table", "basic-3", "--steps", "4", "--games", "8", "--procs",
                               "1", "--batch", "32", "--models", "{file}-models"],
     "fewer than one minibatch"),
    ("bench_headroom", ["--tables", "basic-3", "--agents", "best,greedy"],
     "--agents at basic-3 (best: greedy): 'greedy' is given twice"),
    ("bench_observation_worth", ["--jobs", "65"], "--jobs 65; allowed: at most 64"),
    ("bench_observation_worth", ["--jobs", "0"], "--jobs 0; allowed: 1 or more"),
    ("train_any_rules", ["--tables", "basic:2,ono:4", "--deals", "4166667"],
     "--deals 4166667; allowed: at most 4,166,666"),
    ("bench_observation_worth", ["--deals", "50000001"], "--deals 50000001; allowed: at most 50,000,000"),
    ("bench_probes", ["--tables", "ono-3", "--out", "{file}"], "exists and is not a folder"),
    # each named by its option (before: "at ono-3: ..." for both)
    ("bench_probes", ["--tables", "ono-3", "--model", "ppo-basic-2p"],
     "--model 'ppo-basic-2p' at ono-3: "),
    ("bench_probes", ["--tables", "ono-3", "--probes", "ensemble:{file}-none"],
     "--probes at ono-3: cannot read model file"),
    ("bench_color_symmetry", ["--tables", "ono-3", "--out", "{file}"], "exists and is not a folder"),
    ("bench_deal_variance", ["--plays", "1"], "--plays 1; allowed: 2 or more"),
    ("bench_deal_variance", ["--tables", "basic-2", "--model", "ppo-basic-2p"],
     "--model 'ppo-basic-2p': observation version 1, a value network; allowed: a version-2"),
    ("bench_deal_variance", ["--tables", "ono-11"], "table 'ono-11'; allowed: <preset>-<players>"),
    # before: a traceback from int('²'), and ono-02 ran as ono-2
    ("bench_probes", ["--tables", "ono-\u00b2"], "table 'ono-\u00b2'; allowed: <preset>-<players>"),
    ("bench_deal_variance", ["--tables", "ono-02"], "table 'ono-02'; allowed: <preset>-<players>"),
    ("bench_rollout_targets", ["--table", "basic-2,ono-2"], "--table 'basic-2,ono-2'; allowed: one"),
    ("bench_rollout_targets", ["--betas", "nan"], "--betas 'nan'; allowed: finite numbers above 0"),
    ("bench_rollout_targets", ["--lr", "-1"], "--lr -1.0; allowed: a finite number above 0"),
    ("bench_rollout_targets", ["--models", "{file}"], "--models: '{file}' exists and is not a"),
    ("bench_rollout_targets", ["--models", "{file}/m"], "--models: cannot create the folder"),
    ("bench_rollout_targets", ["--table", "basic-2", "--model", "ppo-basic-2p"],
     "--model 'ppo-basic-2p': observation version 1; allowed: a version-2 model"),
    ("bench_observation_worth", ["--presets", "basic,nosuch"],
     "--presets 'basic,nosuch': 'nosuch' is not a preset; allowed:"),
    ("bench_observation_worth", ["--steps", "0"], "--steps 0; allowed: 16,384 or more"),
    ("bench_train", ["--threads", "abc"], "--threads 'abc'; allowed: auto or a whole number"),
    ("bench_train", ["--rounds", "0"], "--rounds 0; allowed: 1 or more"),
    ("bench_train", ["--skip-idle", "--skip-busy"], "leave nothing to measure"),
    ("bench_ladder", ["--games-cheap", "3"], "--games-cheap 3; allowed: 4 or more"),
    ("bench_ladder", ["--players", "4", "--games-search", "47"],
     "--games-search 47; allowed: 48 or more"),
    ("bench_ladder", ["--out", "{file}"], "--out: '{file}' exists and is not a folder"),
    # before: taken and ignored
    ("bench_ladder", ["--render", "{file}", "--players", "4", "--seed", "3"],
     "--render plays nothing: --players, --seed are not used there"),
    ("bench_ladder", ["--retime", "{file}", "--seed", "0"],   # its default, given: refused too
     "--retime plays nothing: --seed is not used there"),
    ("bench_arena", ["--agents", "greedy", "greedy"], "--agents: 'greedy' is given twice"),
    ("bench_mirrored", ["--games", "2"], "--games 2; allowed: 4 or more"),
    ("bench_mirrored", ["--opponents", "random", "nosuch"], "--opponents 'nosuch': unknown agent"),
    ("bench_mirrored", ["--out", "{file}/m.json"], "--out: '{file}' exists and is not a folder"),
    ("bench_mirrored", ["--out", "."], "--out: '.' is a folder; allowed: the path of a file"),
    # before: wrote a file named as the folder
    ("bench_mirrored", ["--out", "{file}-new/"], "-new/' ends with '/', as a folder's name; "
                                                  "allowed: the path of a file"),
    ("bench_mirrored", ["--games", "100000001"], "--games 100000001; allowed: at most 100,000,000"),
    ("bench_ray", ["--iterations", "0"], "--iterations 0; allowed: 1 or more"),
    ("bench_ray", ["--sb3-steps", "1000000000001"], "allowed: at most 1,000,000,000,000"),
    ("bench_ray", ["--minutes", "nan"], "--minutes nan; allowed: a finite number above 0"),
    ("bench_ray", ["--skip-speed", "--skip-arena", "--skip-strength"], "leave nothing to measure"),
    # before: taken, ignored and recorded in the results
    ("bench_ray", ["--skip-strength", "--minutes", "9", "--eval-games", "5"],
     "--skip-strength skips their part: --minutes, --eval-games are not used there; allowed: "
     "leave them out"),
    ("bench_ray", ["--skip-speed", "--iterations", "5"],
     "--skip-speed skips their part: --iterations is not used there"),
    ("bench_prebuilt", ["--instructions-only", "--steps", "9"],
     "--instructions-only times nothing: --steps is not used there"),
    ("bench_ray", ["--out", "{file}"], "--out: '{file}' exists and is not a folder"),
    ("bench_web_load", ["--clients", "0"], "--clients 0; allowed: 1 to 500"),
    ("bench_web_load", ["--budget", "0"], "--budget 0; allowed: 1 or more"),
    ("bench_web_load", ["--uploads", "-1"], "--uploads -1; allowed: 0 to 1000"),
    ("bench_web_load", ["--server-path", "{file}"], "allowed: a folder holding a package ono_env/"),
    # before: any folder, and the server ran the installed package
    ("bench_web_load", ["--server-path", "/"], "--server-path '/'; allowed: a folder holding a "
     "package ono_env/ laid out as installed"),
    ("bench_web_load", ["--out", "{file}"], "--out: '{file}' exists and is not a folder"),
    ("sweep_train", ["--players", "11"], "--preset 'basic' --players 11: invalid rule set"),
    ("sweep_train", ["--only", "base,nosuch"], "--only 'base,nosuch': unknown variant(s) 'nosuch'"),
    # before: '' trained the first round, and 'base,' dropped its empty name
    ("sweep_train", ["--only", ""], "--only '': an empty variant name; allowed: base, "),
    ("sweep_train", ["--only", "base,"], "--only 'base,': an empty variant name"),
    ("sweep_train", ["--only", "points"], "the points variants need rules that keep a score"),
    ("sweep_train", ["--against", "greedy,nosuch"], "--against 'nosuch': unknown agent"),
    ("sweep_train", ["--only", "base,base"], "--only: 'base' is given twice; allowed: each at "
     "most once"),
    ("sweep_train", ["--against", "greedy,greedy"], "--against: 'greedy' is given twice"),
    ("sweep_train", ["--threads", "abc"], "--threads 'abc'; allowed: auto or a whole number"),
    ("sweep_train", ["--threads", "2000"], "--threads '2000'; allowed: auto or a whole number from"),
    ("sweep_train", ["--games", "100000001"], "--games 100000001; allowed: at most 100,000,000"),
    ("sweep_train", ["--minutes", "0"], "--minutes 0.0; allowed: a finite number above 0"),
    ("sweep_train", ["--out", "{file}"], "--out: '{file}' exists and is not a folder"),
    ("train_any_rules", ["--tables", "ono"], "--tables 'ono': table 'ono'; allowed: preset:players"),
    ("train_any_rules", ["--tables", "basic:11"], "--tables basic:11 with --variant default: "),
    ("train_any_rules", ["--tables", "basic:2", "--extra", "nosuch=1"],
     "--extra nosuch=1: training config 'default': unknown config field 'nosuch'"),
    ("train_any_rules", ["--tables", "basic:2", "--parallel", "0"], "--parallel 0; allowed: 1 or"),
    ("train_any_rules", ["--tables", "basic:2", "--deals", "1"], "--deals 1; allowed: 2 or more"),
    ("train_any_rules", ["--tables", "basic:2", "--only-mirror"], "--only-mirror: no "),
    ("train_any_rules", ["--tables", "basic:2", "--out", "{file}"], "exists and is not a folder"),
    ("train_any_rules", ["--deals", "5"], "--tables is needed (preset:players,...), unless --render"),
    # before: accepted here, refused by ono-train for every table, and the script ended 0
    ("train_any_rules", ["--tables", "basic:2", "--variant", "loss", "--extra", "ppo.gamma=0.95"],
     "override key 'ppo.gamma' is given twice (ppo.gamma=0.99, ppo.gamma=0.95)"),
    ("train_any_rules", ["--tables", "basic:2", "--extra", "num_players=3"],
     "override key 'num_players' is given twice (num_players=2, num_players=3)"),
    # scripts without --out, or whose --out defaults to the repository's docs
    ("bench_last_card", ["--players", "11"], "--rules 'ono' --players 11: invalid rule set"),
    ("bench_last_card", ["--opponent", "nosuch"], "--opponent 'nosuch': unknown agent"),
    ("bench_exploiters", ["--rules", "basic", "nosuch"], "--rules basic nosuch; allowed: one or"),
    ("bench_exploiters", ["--deals", "0"], "--deals 0; allowed: 2 or more"),
    ("bench_suite", ["--suite", "99", "render"], "render: unknown suite version 99"),
    ("bench_suite", ["time", "greedy", "--tables", "nosuch"], "time: suite version"),
    ("bench_suite", ["ladder", "--tables", "nosuch"], "ladder: suite version"),
    ("bench_arena", ["--games", "0"], "--games 0; allowed: 1 or more"),
    ("bench_arena", ["--games", "100000001"], "--games 100000001; allowed: at most 100,000,000"),
    ("bench_arena", ["--rules", "nosuch"], "--rules 'nosuch': no rules file 'nosuch'"),
    ("bench_arena", ["--agents", "greedy", "nosuch"], "--agents 'nosuch': unknown agent"),
    ("bench_ceiling_ties", ["--deals", "1"], "--deals 1; allowed: 2 or more"),
    ("bench_ceiling_ties", ["--suite", "99"], "--suite '99': unknown suite version 99"),
    ("bench_ceiling_ties", ["--tables", "nosuch"], "--tables nosuch: suite version"),
    ("bench_core", ["--rounds", "0"], "--rounds 0; allowed: 1 or more"),
    ("bench_openspiel", ["--simulations", "1"], "--simulations 1; allowed: 2 or more"),
    ("bench_openspiel", ["--json", "{file}/o.json"], "--json: '{file}' exists and is not a"),
    ("bench_prebuilt", ["--rounds", "0"], "--rounds 0; allowed: 1 or more"),
    ("bench_prebuilt", ["--steps", "-1"], "--steps -1; allowed: 1 or more"),
    ("bench_table_steps", ["--games", "0"], "--games 0; allowed: 1 or more"),
    ("bench_table_steps", ["--steps", "0"], "--steps 0; allowed: 1 or more"),
    ("bench_table_steps", ["--rounds", "0"], "--rounds 0; allowed: 1 or more"),
    ("bench_table_steps", ["--seed", "-1"], "--seed -1; allowed: 0 or more"),
    ("bench_table_steps", ["--out", "{file}"], "--out: '{file}' exists and is not a folder"),
    ("bench_table_steps", ["--runs", "0"], "--runs 0; allowed: 1 or more"),
    ("bench_table_steps", ["--json-out", "{file}.json", "--out", "{file}.d"],
     "--json-out writes one run's file alone: --out is not used there"),
    ("bench_table_steps", ["--vs", "{file}"], "allowed: a folder holding a package ono_env/"),
    ("bench_update_cost", ["--games", "4"], "--games 4; allowed: 5 or more"),
    ("bench_update_cost", ["--games", "1025"], "--games 1025; allowed: at most 1,024"),
    ("bench_update_cost", ["--rounds", "0"], "--rounds 0; allowed: 1 or more"),
    ("bench_update_cost", ["--threads", "0"], "--threads 0; allowed: 1 or more"),
    ("bench_update_cost", ["--seed", "-1"], "--seed -1; allowed: 0 or more"),
    ("bench_update_cost", ["--out", "{file}"], "--out: '{file}' exists and is not a folder"),
    # bounds, seeds and names given twice (the scripts' other checks: tests/test_benchmark_args.py)
    ("bench_train", ["--threads", "2000"], "--threads '2000'; allowed: auto or a whole number "
                                           "from 1 to 1024"),
    ("bench_train", ["--steps", "1000000000001"], "--steps 1000000000001; allowed: at most"),
    ("bench_train", ["--learn-steps", "10", "--learn-games", "100000001"],
     "--learn-games 100000001; allowed: at most 100,000,000"),
    ("bench_rollout_targets", ["--table", "basic-2", "--deals", "1"], "--deals 1; allowed: 2 or"),
    ("bench_rollout_targets", ["--table", "basic-2", "--seed", "-1"], "--seed -1; allowed: 0 or"),
    ("bench_headroom", ["--tables", "ono-3", "--set", "wild_cards=["],
     "--set 'wild_cards=[': the value cannot be read as YAML plain data"),
    # before: the last of the two kept silently; 'yes' read as true
    ("bench_headroom", ["--tables", "ono-3", "--set", "wild_cards=4", "--set", "wild_cards=8"],
     "--set wild_cards: given twice; allowed: each field once"),
    ("bench_headroom", ["--tables", "ono-3", "--set", "stacking=yes"],
     "--set 'stacking=yes': the value cannot be read as YAML plain data ('yes' is read by YAML "
     "1.1 as true"),
    # before: '٢' and '02' read as 2; --render took --tables and ignored it
    ("train_any_rules", ["--tables", "basic:\u0662", "--deals", "4"], "table 'basic:\u0662'; allowed"),
    ("train_any_rules", ["--tables", "basic:02"], "table 'basic:02'; allowed: preset:players"),
    ("train_any_rules", ["--render", "--tables", "nosuch:9"], "--tables is not used there"),
    ("train_any_rules", ["--render", "--deals", "5", "--seed", "3"], "--render reads --out's "
     "results: --deals, --seed are not used there; allowed: leave them out"),
    # before: part ten was played against greedy, not the preset's best baseline
    ("bench_generalist", ["--parts", "ten", "--ten-presets", "classic", "--deals-ten", "2"],
     "--parts ten plays each preset's best baseline, which part two finds"),
    ("bench_headroom", ["--tables", "ono-3", "--agents", "greedy,greedy"],
     "--agents: 'greedy' is given twice; allowed: each at most once"),
    ("bench_headroom", ["--tables", "ono-3", "--seed", "-1"], "--seed -1; allowed: 0 or more"),
    ("bench_color_symmetry", ["--tables", "basic-2,basic-2"], "--tables: 'basic-2' is given"),
    ("bench_last_card", ["--seed", "-1"], "--seed -1; allowed: 0 or more"),
    ("bench_last_card", ["--games", "999999999999"], "--games 999999999999; allowed: at most"),
    ("bench_observation_worth", ["--arena-seed", "-1"], "--arena-seed -1; allowed: 0 or more"),
    ("bench_observation_worth", ["--deals", "50000001"], "--deals 50000001; allowed: at most"),
    ("bench_exploiters", ["--seed", "-1"], "--seed -1; allowed: 0 or more"),
    ("bench_exploiters", ["--deals", "1000001"], "--deals 1000001; allowed: at most 1,000,000"),
    ("bench_ladder", ["--games-cheap", "100000001"], "--games-cheap 100000001; allowed: at most"),
    ("bench_ladder", ["--seed", "-1"], "--seed -1; allowed: 0 or more"),
    ("bench_table_steps", ["--games", "33334"], "--games 33334; allowed: at most 33,333"),
    ("bench_ceiling_ties", ["--deals", "999999999999"], "--deals 999999999999; allowed: at most"),
    ("bench_suite", ["verify", "-n", "-17"], "verify -n -17; allowed: 1 or more"),
    ("bench_suite", ["ladder", "--verify", "-1"], "ladder --verify -1; allowed: 0 or more"),
    ("train_any_rules", ["--tables", "basic:2,basic:2"],
     "--tables: 'basic:2' is given twice"),
]
NO_OUT = ("bench_last_card", "bench_exploiters", "bench_suite", "bench_arena",
          "bench_ceiling_ties", "bench_core", "bench_openspiel", "bench_prebuilt")


@pytest.mark.parametrize("script, argv, message", [
    ("bench_arena", ["--rules", "{r4}"], "sets num_players=4; allowed: rules of 2 players"),
    ("bench_last_card", ["--rules", "{r4}", "--players", "2"],
     "sets num_players=4 and --players is 2; allowed: the same count, or no --players"),
    ("sweep_train", ["--preset", "{r4}", "--players", "3", "--out", "{tmp}/sweep"],
     "sets num_players=4 and --players is 3; allowed: the same count, or no --players"),
])
def test_benchmarks_refuse_a_rules_file_of_another_player_count(script, argv, message, tmp_path,
                                                                monkeypatch):
    # before: a file of 4 players was played at 2 (or 3), silently
    import runpy
    from pathlib import Path
    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / f"{script}.py"))["main"]
    (tmp_path / "r4.yaml").write_text("preset: basic\nnum_players: 4\n")
    argv = [a.replace("{r4}", str(tmp_path / "r4.yaml")).replace("{tmp}", str(tmp_path))
            for a in argv]
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *argv])
    with pytest.raises(SystemExit, match=message):
        main()
    assert not (tmp_path / "sweep").exists()


def test_bench_ladder_writes_the_repositorys_ladder_from_any_directory(tmp_path, monkeypatch):
    """Before: its default --out, docs/results/ladder, was made in the current directory."""
    import runpy
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    main = runpy.run_path(str(root / "benchmarks" / "bench_ladder.py"))["main"]
    asked = []

    def no_folder(path, *args, **kwargs):
        asked.append(Path(path))
        raise SystemExit("stop before any game")

    monkeypatch.setitem(main.__globals__, "out_folder", no_folder)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["bench_ladder.py"])
    with pytest.raises(SystemExit, match="stop before any game"):
        main()
    assert asked == [root / "docs" / "results" / "ladder"]


def test_bench_last_card_plays_a_rules_files_own_player_count(tmp_path, monkeypatch, capsys):
    import runpy
    from pathlib import Path
    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "bench_last_card.py"))["main"]
    (tmp_path / "r3.yaml").write_text("preset: basic\nnum_players: 3\n")
    monkeypatch.setattr(sys, "argv", ["bench_last_card.py", "--rules", str(tmp_path / "r3.yaml"),
                                      "--games", "2", "--model", "greedy"])
    main()
    assert "greedy against 2 x random under " in capsys.readouterr().out   # 3 players


def test_bench_deal_variance_writes_both_files_when_the_outcome_never_varies(tmp_path,
                                                                           monkeypatch):
    """Before: a ZeroDivisionError after results.json was written (and no results.md), so the
    folder was then refused for a rerun."""
    import runpy
    from pathlib import Path
    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "bench_deal_variance.py"))["main"]
    monkeypatch.setattr(sys, "argv", ["bench_deal_variance.py", "--tables", "basic-2", "--deals",
                                      "2", "--plays", "2", "--out", str(tmp_path / "dv")])
    main()
    (row,) = json.loads((tmp_path / "dv" / "results.json").read_text())["rows"]
    assert row["outcome_variance"][0] == 0
    assert "| basic-2 | n/a | n/a | n/a | n/a | n/a | n/a |" in (tmp_path / "dv" / "results.md").read_text()


def test_bench_suite_intervals_takes_only_a_whole_suite_at_its_default_deals(tmp_path,
                                                                            monkeypatch):
    """Before: any card was taken (one of two deals, one table) and replaced the published
    page of its suite."""
    import runpy
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    bench = root / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "bench_suite.py"))["main"]
    card = json.loads((root / "docs/results/suite-1/timing/greedy/card.json").read_text())
    first = next(iter(card["tables"]))
    few = json.loads(json.dumps(card))
    few["tables"] = {first: few["tables"][first]}
    few["timing"]["tables"] = {first: few["timing"]["tables"][first]}   # as a card of one table
    (tmp_path / "few.json").write_text(json.dumps(few))
    monkeypatch.setattr(sys, "argv", ["bench_suite.py", "intervals", str(tmp_path / "few.json")])
    with pytest.raises(SystemExit, match=r"covers 1 of suite version 1's \d+ tables; allowed: a "
                                         r"card of the whole suite"):
        main()
    row = card["tables"][first]["rows"][0]
    row["deals"] += 2
    row["games"] += 2 * card["tables"][first]["players"]   # every seating of each deal
    row["wins"] = row["rate"] * row["games"]   # a card such a run writes: its wins and rating
    from ono_env.arena import suite as S
    suite = S.load_suite(card["suite_version"])
    scale = S.read_ladder(suite)["tables"][first]["ratings"]
    card["tables"][first]["rating"] = S.place_agent(
        {n: v["rating"] for n, v in scale.items()}, card["tables"][first]["rows"],
        card["tables"][first]["players"], suite.anchor_rating)
    (tmp_path / "other.json").write_text(json.dumps(card))
    monkeypatch.setattr(sys, "argv", ["bench_suite.py", "intervals", str(tmp_path / "other.json")])
    with pytest.raises(SystemExit, match=rf"played {row['reference']} at {first} on "
                                         rf"{row['deals']} deals, where the suite's default is"):
        main()


@pytest.mark.parametrize("script,argv,word", [
    # each call also names a table that does not exist: taken as a prefix, the option would
    # meet that table's refusal before any game or file
    ("bench_deal_variance", ["--play", "3", "--tables", "ono-11"], "--play"),
    ("bench_suite", ["ladder", "--forc", "--tables", "nosuch"], "--forc"),   # a subcommand's
    ("bench_headroom", ["--table", "ono-11"], "--table"),
])
def test_a_benchmark_takes_each_option_by_its_full_name(script, argv, word, monkeypatch, capsys,
                                                       tmp_path):
    # before: argparse took a prefix of an option's name (--play for --plays) silently
    import runpy
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / f"{script}.py"))["main"]
    out = [] if script == "bench_suite" else ["--out", str(tmp_path / "out")]
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *argv, *out])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2 and f"unrecognized arguments: {word}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("script,argv,message", BAD_BENCHMARK_ARGUMENTS)
def test_a_benchmark_refuses_bad_arguments_before_any_work(script, argv, message, tmp_path,
                                                          monkeypatch):
    """Each bad argument of a benchmark script is one line naming the script
    and what is allowed, before any game, training or file: no --out folder is left."""
    import runpy
    from pathlib import Path

    if script == "bench_openspiel" and os.environ.get("ONO_REQUIRE_OPENSPIEL") != "1":
        pytest.importorskip("pyspiel")   # the [openspiel] extra, as in test_openspiel.py
    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / f"{script}.py"))["main"]
    for name in ("ROOT", "OUT"):   # a script that writes into the repository writes here instead
        if script in NO_OUT and name in main.__globals__:
            monkeypatch.setitem(main.__globals__, name, tmp_path / "repo")
    afile = tmp_path / "afile"
    afile.write_text("")
    out = tmp_path / "out"
    argv = [a.format(file=afile) for a in argv]
    if "--out" not in argv and script not in NO_OUT:
        argv += ["--out", str(out)]
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *argv])
    with pytest.raises(SystemExit) as exc:
        main()
    assert str(exc.value).startswith(f"{script}: ")
    assert message.format(file=afile) in str(exc.value)
    assert sorted(q.name for q in tmp_path.iterdir()) == ["afile"]


def test_train_any_rules_only_mirror_refuses_a_results_file_it_did_not_write(tmp_path,
                                                                          monkeypatch):
    """train_any_rules --only-mirror reads the rows of its --out's results.json before any
    game: one that is not JSON, whose rows lack a field the script writes, that holds no
    finished run of the table asked for, or whose run has no final evaluation or no model
    file here, is one error naming the file, and the file is left as it was."""
    import runpy
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "train_any_rules.py"))["main"]
    results = tmp_path / "results.json"
    run = tmp_path / "run"
    row = {"preset": "basic", "players": 2, "variant": "default", "rc": 0, "run_dir": str(run)}
    evaluated = {**row, "final_eval": {"results": [{"opponent": "greedy", "win_rate": 0.6}]}}
    cases = [("not json", "is not the results.json of a run of this script (JSONDecodeError"),
             ('[{"preset": "basic"}]', "is not the results.json of a run of this script (KeyError"),
             ("{}", "(ValueError: not a list of rows, one object per table trained)"),
             (json.dumps([{**row, "players": 4}]), "holds no finished run of basic:2 with"),
             (json.dumps([{**row, "rc": 1}]), "holds no finished run of basic:2 with"),
             (json.dumps([row]), "has no final evaluation"),
             (json.dumps([evaluated]), "model.safetensors (the model of basic:2 in")]
    for text, message in cases:
        results.write_text(text)
        monkeypatch.setattr(sys, "argv", ["train_any_rules.py", "--tables", "basic:2",
                                          "--only-mirror", "--out", str(tmp_path)])
        with pytest.raises(SystemExit) as exc:
            main()
        assert str(exc.value).startswith("train_any_rules: --only-mirror: ")
        assert message in str(exc.value)
        assert results.read_text() == text
        assert sorted(q.name for q in tmp_path.iterdir()) == ["results.json"]


def test_train_any_rules_render_gives_the_arenas_interval_of_today(tmp_path, monkeypatch):
    """train_any_rules --render: a row written with the plain normal interval gets the
    arena's interval of today, the same as from its per-deal shares (all 0 here: every deal
    lost, which the plain interval gave no width); a row that says it holds today's keeps it;
    a file it did not write is refused and left as it was."""
    import runpy
    from pathlib import Path

    from ono_env.arena.stats import bounded_mean_interval

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "train_any_rules.py"))["main"]
    results = tmp_path / "results.json"
    m = {"opponent": "greedy", "deals": 1000, "games": 2000, "share": 0.0, "low": 0.0,
         "high": 0.0, "fair": 0.5, "no_winner": 0, "mean_length": 556.0}
    row = {"preset": "classic", "players": 2, "variant": "x", "rc": 0, "run_dir": "r",
           "command": "c", "final_eval": {"training_steps": 10}, "mirrored": m}
    kept = {**row, "mirrored": {**m, "share": 0.5, "low": 0.4, "high": 0.6,
                                "interval": "add-two-games"}}
    # a row of 2 to 6 December (two deals added at each end): computed again in games
    x = np.tile([0.0, 1.0], 500)
    _, lo, hi = bounded_mean_interval(x, 0.0, 1.0)
    deals_row = {**row, "variant": "y", "mirrored": {**m, "share": 0.5, "low": lo, "high": hi,
                                                     "interval": "add-two"}}
    results.write_text(json.dumps([row, kept, deals_row]))
    monkeypatch.setattr(sys, "argv", ["train_any_rules.py", "--render", "--out", str(tmp_path)])
    main()
    got = json.loads(results.read_text())
    _, low, high = bounded_mean_interval(np.zeros(1000), 0.0, 1.0, 2)   # 2 games a deal
    assert got[0]["mirrored"]["low"] == low == 0.0 and high > 0.002
    assert got[0]["mirrored"]["high"] == pytest.approx(high, abs=1e-12)
    assert got[0]["mirrored"]["interval"] == "add-two-games" and got[1] == kept
    _, low, high = bounded_mean_interval(x, 0.0, 1.0, 2)
    assert got[2]["mirrored"]["interval"] == "add-two-games"
    assert (got[2]["mirrored"]["low"], got[2]["mirrored"]["high"]) == (
        pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    page = (tmp_path / "results.md").read_text()
    assert "0.0% [0.0, 0.3]" in page and "50.0% [46.9, 53.1]" in page
    for text, message in (('[{"preset": "basic", "rc": 0}]', "is not the results.json of a run of"),
                          ("{}", "(ValueError: not a list of rows"),   # before: rendered as no rows
                          ("[]", "(ValueError: not a list of rows"),
                          (json.dumps([{**row, "mirrored": {**m, "share": 0.5, "high": 1.0}}]),
                           "'the model' against 'greedy': its interval [0.0, 1.0] is clipped")):
        results.write_text(text)
        (tmp_path / "results.lock").unlink(missing_ok=True)
        with pytest.raises(SystemExit) as exc:
            main()
        assert message in str(exc.value) and str(exc.value).startswith("train_any_rules: --render: ")
        assert results.read_text() == text
        assert sorted(q.name for q in tmp_path.iterdir()) == ["results.json", "results.md"]


def test_train_any_rules_names_a_run_that_did_not_finish(tmp_path, monkeypatch):
    """A table whose run folder is there is refused before any training: with --only-mirror
    as the advice where a row names the run as finished; where none does (a run stopped by
    Ctrl-C writes no row, a failed one a row with its status), without it (before, the
    advice was --only-mirror, which then refused the table: no finished run)."""
    import runpy
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    ns = runpy.run_path(str(bench / "train_any_rules.py"))
    run = ns["run_dir_of"]("basic", 2, "default", None, tmp_path, [])
    run.mkdir(parents=True)
    results = tmp_path / "results.json"
    row = {"preset": "basic", "players": 2, "variant": "default", "rc": 0, "run_dir": str(run)}
    for text, advice in ((None, "that did not finish"), (json.dumps([{**row, "rc": 1}]), "that did not finish"),
                         (json.dumps([row]), "allowed: --only-mirror to play its model again")):
        if text is not None:
            results.write_text(text)
        monkeypatch.setattr(sys, "argv", ["train_any_rules.py", "--tables", "basic:2",
                                          "--out", str(tmp_path)])
        with pytest.raises(SystemExit) as exc:
            ns["main"]()
        assert str(exc.value).startswith(f"train_any_rules: --tables basic:2 --variant default: "
                                         f"{run} holds an earlier run of them")
        assert advice in str(exc.value)
        assert ("--only-mirror" in str(exc.value)) == (advice.startswith("allowed"))
    # the row's run folder spelled relative to the current folder: the same run
    monkeypatch.chdir(tmp_path)
    results.write_text(json.dumps([{**row, "run_dir": str(run.relative_to(tmp_path))}]))
    with pytest.raises(SystemExit) as exc:
        ns["main"]()
    assert "allowed: --only-mirror to play its model again" in str(exc.value)
    # a results.json it would add its rows to, which it cannot: refused before any training
    run.rmdir()
    for text in ("{}", "not json"):
        results.write_text(text)
        with pytest.raises(SystemExit) as exc:
            ns["main"]()
        assert str(exc.value).startswith(f"train_any_rules: --out: {results} is not the "
                                         f"results.json of a run of this script (")
        assert results.read_text() == text and not run.exists()


def test_headroom_plays_each_table_against_each_opponent_under_changed_rules(tmp_path, monkeypatch):
    """benchmarks/bench_headroom.py --against and --set: every table against each named
    opponent, under the rules with the fields changed, the same games as the arena plays
    there; a field the rules do not have is one error before anything is played."""
    import runpy
    from pathlib import Path

    from ono_env.rules import resolve_rules

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "bench_headroom.py"))["main"]
    best = bench.parent / "docs" / "results" / "generalist" / "results.json"
    args = ["bench_headroom.py", "--tables", "ono-3", "--agents", "random", "--deals", "4",
            "--against", "best,greedy", "--set", "wild_cards=4", "--best-from", str(best)]
    monkeypatch.setattr(sys, "argv", args + ["--out", str(tmp_path / "h")])
    main()
    rows = json.loads((tmp_path / "h" / "results.json").read_text())["rows"]
    assert [r["opponent"] for r in rows] == ["2 x color", "2 x greedy"]
    assert all(r["rules_changed"] == {"wild_cards": 4} for r in rows)
    rules = resolve_rules("ono", num_players=3, wild_cards=4)
    r = run_arena(["random", "greedy", "greedy"], rules, 3, 4 * 6, 2026, mirrored=True,
                  rating=False)
    assert np.isclose(rows[1]["share"], r.paired(0)["rate"])
    assert "| ono (wild_cards=4) | 3 | random | 2 x greedy |" in (tmp_path / "h" / "results.md").read_text()
    monkeypatch.setattr(sys, "argv", args[:-4] + ["--set", "wilds=4", "--best-from", str(best),
                                                  "--out", str(tmp_path / "g")])
    with pytest.raises(SystemExit) as exc:
        main()
    assert "--set at ono-3: unknown rule option(s) 'wilds'" in str(exc.value)
    assert not (tmp_path / "g").exists()
    for bad, message in ((["--set", "num_players=4"], "--set num_players: the player count comes "
                          "from --tables"),
                         (["--against", "greedy,genius"], "--against 'genius' at ono-3: unknown")):
        monkeypatch.setattr(sys, "argv", args[:7] + bad + ["--best-from", str(best),
                                                           "--out", str(tmp_path / "g")])
        with pytest.raises(SystemExit) as exc:
            main()
        assert message in str(exc.value)
        assert not (tmp_path / "g").exists()


def test_color_symmetry_measures_agreement_and_the_averaged_agent(tmp_path, monkeypatch):
    """benchmarks/bench_color_symmetry.py: the plain agent's share is ppo-any's own on the
    same deals, the agreement a share in [0, 1], and the averaged agent's difference is the
    per-deal mean; a bad table is one error before anything is played."""
    import runpy
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "bench_color_symmetry.py"))["main"]
    best = bench.parent / "docs" / "results" / "generalist" / "results.json"
    args = ["bench_color_symmetry.py", "--tables", "ono-3", "--deals", "4",
            "--best-from", str(best), "--out", str(tmp_path / "c")]
    monkeypatch.setattr(sys, "argv", args)
    main()
    (row,) = json.loads((tmp_path / "c" / "results.json").read_text())["rows"]
    plain = run_arena(["ppo-any", row["opponent"], row["opponent"]], "ono", 3, 4 * 6, 2026,
                      mirrored=True, rating=False).per_deal(0)[1]
    assert np.isclose(row["plain"], plain.mean())
    assert 0.0 <= row["all_agree"] <= row["agreement"] <= 1.0 and row["decisions"] > 0
    assert np.isclose(row["difference"][0], row["averaged"] - row["plain"])
    assert "| ono | 3 | color |" in (tmp_path / "c" / "results.md").read_text()
    monkeypatch.setattr(sys, "argv", args[:2] + ["ono-1"] + args[3:-1] + [str(tmp_path / "d")])
    with pytest.raises(SystemExit) as exc:
        main()
    assert "table 'ono-1'; allowed: <preset>-<players>" in str(exc.value)
    assert not (tmp_path / "d").exists()


def test_deal_variance_plays_each_deal_again_from_the_same_cards(tmp_path, monkeypatch):
    """benchmarks/bench_deal_variance.py: every play of a deal starts from the same game, so a
    model that picks its most probable move plays each deal exactly as before (no variance
    between plays, a leave-one-out baseline that leaves nothing), and one that samples its
    moves does not; the first play is the model's own game in a LearnerBatch of that seed."""
    import runpy
    from pathlib import Path

    from ono_env.agents.learned import load_agent
    from ono_env.agents.registry import shipped_models
    from ono_env.rules import resolve_rules

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    script = runpy.run_path(str(bench / "bench_deal_variance.py"))
    rules = resolve_rules("ono", num_players=3)
    path = shipped_models()["ppo-any"]
    fixed = script["measure"](load_agent(path, rules), rules, "color", 12, 3, 5)
    assert fixed["deal_floor"] == fixed["leave_one_out"] == (0.0, 0.0, 0.0)
    assert fixed["outcome_variance"][0] > 0 and fixed["critic_all"][0] > 0
    sampled = script["play_deals"](load_agent(path, rules, deterministic=False), rules, "color",
                                   12, 3, 5)
    rewards, first_value, first_hand, values, hands, decisions = sampled
    assert rewards.shape == (3, 12) and len(values) == len(hands) == 12
    assert decisions == sum(map(len, values)) > 12
    assert np.array_equal(first_value[0], [v[0] for v in values])
    assert np.array_equal(first_hand[0], [h[0] for h in hands])
    # every play of a deal starts from the same observation
    assert (first_hand == first_hand[0]).all() and (first_value == first_value[0]).all()
    assert (rewards.var(axis=0) > 0).any()
    assert all(np.all(h >= 1) for h in hands)   # the seat's hand at each of its decisions
    monkeypatch.setattr(sys, "argv", ["bench_deal_variance.py", "--tables", "ono-3,basic-2",
                                      "--deals", "5", "--plays", "2", "--out", str(tmp_path / "d")])
    script["main"]()
    rows = json.loads((tmp_path / "d" / "results.json").read_text())["rows"]
    assert [(r["table"], r["opponent"], r["deals"], r["plays"]) for r in rows] == [
        ("ono-3", "color", 5, 2), ("basic-2", "greedy", 5, 2)]
    assert "| ono-3 | color | 5 |" in (tmp_path / "d" / "results.md").read_text()


def test_deal_variance_estimates_each_error_at_every_decision_of_the_first_play(monkeypatch):
    """benchmarks/bench_deal_variance.py's arithmetic on two deals played twice: the first deal's
    two decisions count twice as much as the second deal's one, as the trainer weighs them."""
    import runpy
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    estimates = runpy.run_path(str(bench / "bench_deal_variance.py"))["estimates"]
    r = np.array([[1.0, -1.0], [-1.0, -1.0]])           # (plays, deals) rewards
    v0 = np.array([[0.2, 0.1], [0.3, 0.1]])             # the critic at each play's first decision
    h0 = np.array([[7.0, 5.0], [7.0, 5.0]])
    values = [np.array([0.2, 0.5]), np.array([0.1])]    # the first play's decisions
    hands = [np.array([7.0, 3.0]), np.array([5.0])]
    e = estimates(r, v0, h0, values, hands, 0.1)
    # the critic's errors: 1 + 0.7 - 0.2, 1 + 0.3 - 0.5, -1 + 0.5 - 0.1; the other play's
    # surprise at its first decision: -1 + 0.7 - 0.3 and -1 + 0.5 - 0.1
    err, others = [1.5, 0.8, -0.6], [-0.6, -0.6, -0.6]
    beta = sum(a * b for a, b in zip(err, others)) / sum(b * b for b in others)
    expected = {
        "critic_all": (1.5 ** 2 + 0.8 ** 2 + 0.6 ** 2) / 3,
        "critic_first": (2 * 1.5 ** 2 + 0.6 ** 2) / 3,
        "critic_and_deal": sum((a - b) ** 2 for a, b in zip(err, others)) / 3,
        "critic_and_deal_fitted": sum((a - beta * b) ** 2 for a, b in zip(err, others)) / 3,
        "leave_one_out": (2 * 2.0 ** 2 + 0.0) / 3,
        "deal_floor": (2 * 2.0 + 0.0) / 3,
        "outcome_variance": (2 * (2 / 3) ** 2 + (4 / 3) ** 2) / 3,
    }
    for key, value in expected.items():
        assert e[key][0] == pytest.approx(value), key
    assert e["fitted_weight"] == pytest.approx(beta) and e["decisions_per_game"] == 1.5


def test_probes_change_the_model_one_way_on_the_same_deals(tmp_path, monkeypatch):
    """benchmarks/bench_probes.py: the model's share is ppo-any's own on the same deals, an
    ensemble of the model with its own file plays exactly as the model, a hidden group of
    fields and a taken-away decision are reported as the per-deal mean difference; a probe
    that is not one, or a version-1 model, is one error before anything is played."""
    import runpy
    from pathlib import Path

    from ono_env.agents.registry import shipped_models

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "bench_probes.py"))["main"]
    best = bench.parent / "docs" / "results" / "generalist" / "results.json"
    own = shipped_models()["ppo-any"]
    args = ["bench_probes.py", "--tables", "ono-3", "--deals", "6", "--probes",
            f"hide-public,no-voluntary-draw,ensemble:{own}", "--best-from", str(best),
            "--out", str(tmp_path / "p")]
    monkeypatch.setattr(sys, "argv", args)
    main()
    rows = json.loads((tmp_path / "p" / "results.json").read_text())["rows"]
    assert [r["probe"] for r in rows] == ["hide-public", "no-voluntary-draw", f"ensemble:{own}"]
    plain = run_arena(["ppo-any", "color", "color"], "ono", 3, 6 * 6, 2026, mirrored=True,
                      rating=False).per_deal(0)[1]
    for r in rows:
        assert np.isclose(r["plain"], plain.mean())
        assert np.isclose(r["difference"][0], r["probed"] - r["plain"])
    # a probe that changes nothing: no difference, and an interval that keeps its width
    assert rows[2]["probed"] == rows[2]["plain"] and rows[2]["difference"][0] == 0.0
    assert rows[2]["difference"][1] < 0 < rows[2]["difference"][2]
    assert "| ono | 3 | color | hide-public |" in (tmp_path / "p" / "results.md").read_text()
    for bad, message in ((["--probes", "hide-hands"], "--probes 'hide-hands'; allowed: "),
                         (["--model", "ppo-basic-2p"],
                          "--model 'ppo-basic-2p': observation version 1; allowed: a version-2 "
                          "model")):
        tables = ["--tables", "basic-2" if "--model" in bad else "ono-3"]
        monkeypatch.setattr(sys, "argv", args[:1] + tables + args[3:5] + bad
                            + ["--best-from", str(best), "--out", str(tmp_path / "q")])
        with pytest.raises(SystemExit) as exc:
            main()
        assert message in str(exc.value)
        assert not (tmp_path / "q").exists()


def test_rollout_targets_fit_the_policy_and_pair_it(tmp_path, monkeypatch):
    """benchmarks/bench_rollout_targets.py: the policy's decisions valued by playouts, one fit
    per beta from the policy's own weights (a large beta moves it less far from the policy
    than a small one), each fitted model a playable file paired with the policy;
    a bad beta or table is one error before anything is played."""
    import runpy
    from pathlib import Path

    from ono_env.agents.learned import load_agent
    from ono_env.rules import RuleSet

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "bench_rollout_targets.py"))["main"]
    args = ["bench_rollout_targets.py", "--table", "basic-3", "--steps", "6", "--games", "16",
            "--procs", "1", "--betas", "1000,0.0001", "--epochs", "2", "--batch", "8",
            "--lr", "1e-3", "--deals", "4", "--models", str(tmp_path / "m"), "--out"]
    monkeypatch.setattr(sys, "argv", args + [str(tmp_path / "r")])
    main()
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    assert res["against"] == "greedy" and res["decisions"] > 16
    keep, move = res["fits"]
    assert 2 * keep["kl"] < move["kl"] and keep["moved"] <= move["moved"] and move["moved"] > 0
    rules = RuleSet.preset("ono", num_players=4)
    assert load_agent(move["model"], rules).act is not None and (tmp_path / "r" / "paired" / "results.json").is_file()
    assert "| 0.0001 |" in (tmp_path / "r" / "results.md").read_text()
    for bad, message in ((["--betas", "0"], "--betas '0'; allowed: finite numbers above 0"),
                         (["--table", "ono-1"], "table 'ono-1'; allowed: <preset>-<players>")):
        monkeypatch.setattr(sys, "argv", args[:1] + bad + ["--out", str(tmp_path / "q")])
        with pytest.raises(SystemExit) as exc:
            main()
        assert message in str(exc.value)
        assert not (tmp_path / "q").exists()


def _bench_main(script: str, monkeypatch):
    """The ``main`` of ``benchmarks/<script>.py``, with the benchmarks' folder importable."""
    import runpy
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    return runpy.run_path(str(bench / f"{script}.py"))["main"]


def test_bench_table_steps_measures_every_table(tmp_path, monkeypatch):
    """bench_table_steps steps the 30 tables of the mixture and the default run's table, and
    reports each one's cost per call, per learner step and per decision."""
    main = _bench_main("bench_table_steps", monkeypatch)
    monkeypatch.setattr(sys, "argv", ["bench_table_steps.py", "--games", "3", "--steps", "2",
                                      "--rounds", "1", "--out", str(tmp_path)])
    main()
    res = json.loads((tmp_path / "table_steps.json").read_text())["results"]
    assert len(res) == 32 and "ono-6p" in res and "the 30 tables (their mean call)" in res
    for name, row in res.items():
        assert row["us_per_call"] > 0 and row["us_per_learner_step"] > 0, name
        low = 1 if "30 tables" in name or "2p" in name else 2   # 3-6 players: opponents move
        assert row["decisions_per_learner_step"] >= low, name
    assert (tmp_path / "table_steps.md").read_text().count("\n| ") == 33   # header + 32 rows


def test_bench_update_cost_counts_the_updates_arithmetic(tmp_path, monkeypatch):
    """bench_update_cost times the update's minibatches of the default run's network and the
    mixture's two, and counts their arithmetic: the default network's count is the one its
    shapes give (forward, the weights' gradients, and the inputs' gradients of every layer
    but the first, whose input is data), and the mixture's networks do more."""
    main = _bench_main("bench_update_cost", monkeypatch)
    monkeypatch.setattr(sys, "argv", ["bench_update_cost.py", "--games", "5", "--rounds", "1",
                                      "--threads", "1", "--out", str(tmp_path)])
    main()
    data = json.loads((tmp_path / "update_cost.json").read_text())
    default, width, generalist = data["results"].values()
    layers = [(241, 128), (128, 128), (128, 85), (128, 1)]   # trunk, policy head, value head
    macs = sum(i * o for i, o in layers) * 2 + sum(i * o for i, o in layers[1:])
    assert default["gflop_per_minibatch"] == pytest.approx(2 * 2048 * macs / 1e9, rel=1e-9)
    assert default["rows"] == 16 * 1024 and width["rows"] == 16 * 30 * 5
    assert 1 < width["opponents_present_mean"] < 5 and default["opponents_present_mean"] is None
    assert default["gflop_per_minibatch"] < width["gflop_per_minibatch"] < generalist["gflop_per_minibatch"]
    assert all(r["ms_per_minibatch"] > 0 for r in data["results"].values())
    assert (tmp_path / "update_cost.md").read_text().count("\n| ") == 4   # header + 3 rows


def test_bench_train_update_bound():
    """The bound bench_train reports for each mixture: its rate against the default run's with
    the default's games and rollouts and its own update."""
    import runpy
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    sys.path.insert(0, str(bench))
    try:
        bound = runpy.run_path(str(bench / "bench_train.py"))["update_bound"]
    finally:
        sys.path.remove(str(bench))
    lines = bound({"default (basic, 2 players, v1)": [0.2, 0.4, 3.4], "mixture": [1.6, 1.0, 4.4],
                   "wide": [1.6, 1.2, 7.4]})
    assert "(0.60 s per 100,000" in lines[1]
    assert "mixture 0.80x; wide 0.50x." in lines[1]   # 4.0 / (0.6 + 4.4), 4.0 / (0.6 + 7.4)
    assert bound({"default (basic, 2 players, v1)": [0.2, 0.6, 3.2]}) == []


def test_bench_table_steps_compares_two_packages(tmp_path, monkeypatch):
    """--vs runs the measurement in processes of their own, alternating this package and the
    one in a source tree laid out as installed (here the same code, linked), and says where
    each imported its driver and whether both played the same games."""
    import runpy
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    tree = tmp_path / "tree" / "ono_env"
    tree.mkdir(parents=True)
    for item in (root / "ono_env").iterdir():
        if item.name != "__pycache__":
            (tree / item.name).symlink_to(item)
    for name in ("agents", "train", "configs"):
        (tree / name).symlink_to(root / name)
    bench = root / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    main = runpy.run_path(str(bench / "bench_table_steps.py"))["main"]
    monkeypatch.setattr(sys, "argv", ["bench_table_steps.py", "--games", "2", "--steps", "1",
                                      "--rounds", "1", "--runs", "1", "--vs", str(tree.parent),
                                      "--out", str(tmp_path / "out")])
    main()
    data = json.loads((tmp_path / "out" / "table_steps.json").read_text())
    assert data["same_decisions"] is True
    this, vs = (data["runs"][k][0]["imported"]["ono_env.agents.driver"] for k in ("this", "vs"))
    assert vs == str(tree / "agents" / "driver.py") and not this.startswith(str(tmp_path))
    md = (tmp_path / "out" / "table_steps.md").read_text()
    assert "the same in every run of both" in md and md.count("\n| ") == 33


@pytest.mark.skipif(not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"),
                    reason="finds the server through /proc/<pid>/task/<pid>/children (Linux)")
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_bench_web_load_stopped_by_a_signal_stops_its_server(tmp_path, how):
    """A bench_web_load run stopped by SIGTERM (its handler stops the server) or SIGKILL (no
    handler runs; the kernel stops the server with it) ends with its ono-web server stopped,
    not left running on its port."""
    import signal
    import time
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_web_load.py"
    run = subprocess.Popen([sys.executable, str(script), "--clients", "1", "--seconds", "60"],
                           stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        line = "x"
        while line and not line.startswith("uploading"):   # its server has answered by then
            line = run.stderr.readline()
        assert line.startswith("uploading"), run.stderr.read()
        kids = Path(f"/proc/{run.pid}/task/{run.pid}/children").read_text().split()
        assert len(kids) == 1
        server = int(kids[0])
        run.send_signal(getattr(signal, how))
        _, err = run.communicate(timeout=60)
        assert run.returncode != 0
        assert ("stopped by signal" in err) == (how == "SIGTERM")
        for _ in range(100):
            stat = Path(f"/proc/{server}/stat")
            if not stat.exists() or stat.read_text().split(") ")[1][0] == "Z":
                break
            time.sleep(0.1)
        else:
            raise AssertionError(f"the server {server} still runs")
    finally:
        if run.poll() is None:
            run.kill()


def test_paired_runs_must_seat_the_same_model_files_not_only_the_same_labels(tmp_path):
    # a model's label is its file's name: another model saved under a shipped policy's name
    # would pass for it
    import shutil

    from ono_env.agents.learned import shipped_models
    from ono_env.arena import check_paired_plan, paired_difference, read_arena_json

    impostor = tmp_path / "ppo-basic-2p.safetensors"
    shutil.copy(shipped_models()["ppo-any"], impostor)
    kw = dict(rules="basic", num_players=2, num_games=20, seed=5, rating=False, mirrored=True)
    a = run_arena(["greedy", "ppo-basic-2p"], **kw)
    a.save(tmp_path / "a")
    saved = read_arena_json(tmp_path / "a")
    assert saved["models"]["ppo-basic-2p"] == a.models["ppo-basic-2p"]
    # (it plays under its whole file name now, and its model is not the shipped one's)
    message = r"the other entrants differ \(ppo-basic-2p.safetensors against ppo-basic-2p\)"
    with pytest.raises(ValueError, match=message):
        check_paired_plan(saved, ["color", str(impostor)], "basic", 2, 20, 5)
    with pytest.raises(ValueError, match=message):
        paired_difference(run_arena(["color", str(impostor)], **kw), saved)
    # the same file under its shipped name or its path pairs
    same = tmp_path / "same" / "ppo-basic-2p.safetensors"
    same.parent.mkdir()
    shutil.copy(shipped_models()["ppo-basic-2p"], same)
    check_paired_plan(saved, ["color", str(same)], "basic", 2, 20, 5)
    assert paired_difference(run_arena(["color", "ppo-basic-2p"], **kw), saved)["deals"] == 10


def test_paired_runs_must_seat_search_agents_with_the_same_guides(tmp_path):
    # a search agent's label names its budget, not the policy guiding it: two runs of
    # "pimc-guided:2" guided by different models must not pair
    import shutil

    from ono_env.agents.learned import load_agent, model_sha256, played_models, shipped_models
    from ono_env.agents.registry import make_agent
    from ono_env.agents.search import SearchAgent
    from ono_env.arena import check_paired_plan, paired_difference
    from ono_env.rules import RuleSet

    shipped = shipped_models()
    basic2 = RuleSet.preset("basic", num_players=2)
    assert played_models(make_agent("pimc-ppo:4", basic2)) == model_sha256(shipped["ppo-basic-2p"])
    assert played_models(make_agent("pimc-ppo:4", "ono")) == model_sha256(shipped["ppo-any"])
    assert played_models(make_agent("greedy", basic2)) is None
    copy = tmp_path / "copy.safetensors"
    shutil.copy(shipped["ppo-basic-2p"], copy)

    def guided(path):
        return SearchAgent(basic2, 2, prior=load_agent(path, basic2), margin=0.1,
                           name="pimc-guided:2")

    kw = dict(rules="basic", num_players=2, num_games=20, seed=5, rating=False, mirrored=True)
    a = run_arena(["greedy", guided(shipped["ppo-basic-2p"])], **kw)
    assert a.models == {"pimc-guided:2": model_sha256(shipped["ppo-basic-2p"])}
    other = run_arena(["color", guided(shipped["ppo-any"])], **kw)
    message = r"the other entrant 'pimc-guided:2' is not the same model in the two runs"
    with pytest.raises(ValueError, match=message):
        paired_difference(other, a)
    with pytest.raises(ValueError, match=message):
        check_paired_plan(a, ["color", guided(shipped["ppo-any"])], "basic", 2, 20, 5)
    # the same guide from another path pairs; a prior and a playout policy from two models
    # record one digest of both
    assert paired_difference(run_arena(["color", guided(copy)], **kw), a)["deals"] == 10
    two = SearchAgent(basic2, 2, policy=load_agent(shipped["ppo-any"], basic2),
                      prior=load_agent(copy, basic2), margin=0.1)
    swapped = SearchAgent(basic2, 2, policy=load_agent(copy, basic2),
                          prior=load_agent(shipped["ppo-any"], basic2), margin=0.1)
    assert played_models(two) not in (None, model_sha256(copy), model_sha256(shipped["ppo-any"]),
                                      played_models(swapped))
    # a search agent pickled before it kept its playout agent still names its prior's model
    old = guided(copy)
    del old.__dict__["_playout_agent"]
    assert played_models(old) == model_sha256(copy)


def test_arena_labels_stay_unique_where_a_given_label_looks_like_a_numbered_one():
    from pathlib import Path

    from ono_env.arena import _labels

    assert _labels(["greedy", "m#1", "m", "m"]) == ["greedy", "m#1", "m#2", "m#3"]
    assert _labels(["m", "m", "m#2", "x"]) == ["m#1", "m#3", "m#2", "x"]
    assert _labels(["a", "b"]) == ["a", "b"]
    # a model file's name with spaces at its ends plays as the name within (before: "greedy "
    # beside greedy, two rows printed alike); a name that is an agent's plays under the whole
    # file name (before: greedy#1 and greedy#2, and alone as the agent greedy)
    assert _labels(["x/greedy .safetensors", "greedy"]) == ["greedy .safetensors", "greedy"]
    assert _labels(["x/pimc:8.safetensors", "pimc:8"]) == ["pimc:8.safetensors", "pimc:8"]
    # a file that shares its label with another entrant plays under its folder and file name
    # (before: mine#1 and mine#2, as if one agent were given twice)
    assert _labels(["x/mine .safetensors", "mine"]) == ["x/mine .safetensors", "mine"]
    from ono_env.agents.learned import model_label, shipped_models
    assert model_label(shipped_models()["ppo-any"]) == "ppo-any"   # the shipped file is it
    assert model_label("x/ppo-any.safetensors") == "ppo-any.safetensors"
    assert _labels([Path("x/m.safetensors"), "greedy"]) == ["m", "greedy"]   # a path object

    # objects of different classes under one name play under their classes (before: dup#1
    # and dup#2, as if one agent were given twice); copies of one class stay numbered
    class DupA:
        name = "dup"

    class DupB(DupA):
        pass

    a, b, c = DupA(), DupB(), DupA()
    spec_a, spec_b = (f"{__name__}:{cls.__qualname__}" for cls in (DupA, DupB))
    assert _labels([a, b, c]) == [f"{spec_a}#1", spec_b, f"{spec_a}#2"]
    assert _labels([a, c, "greedy"]) == ["dup#1", "dup#2", "greedy"]

    # numbered as before where the classes' labels would be another entrant's, or alike
    # (classes a factory makes share one qualname)
    class Named:
        name = spec_a

    def made():
        class Made:
            name = "dup"
        return Made()

    assert _labels([a, b, Named()]) == ["dup#1", "dup#2", spec_a]
    assert _labels([made(), made()]) == ["dup#1", "dup#2"]


def test_ono_arena_plays_an_agent_class_of_ones_own(tmp_path, monkeypatch, capsys):
    """ono-arena takes module:Class as ono-bench does; the module's own imports from beside
    it work in the constructor and in act (the current directory stays on the path)."""
    (tmp_path / "arena_own_helper.py").write_text("LAST = -1\n")
    (tmp_path / "arena_own_agents.py").write_text(
        "import numpy as np\n"
        "class Last:\n"
        "    def __init__(self, rules):\n"
        "        import arena_own_helper\n"
        "        self.k = arena_own_helper.LAST\n"
        "    def act(self, obs, mask, rng):\n"
        "        import arena_own_helper  # noqa: F401\n"
        "        return np.array([np.flatnonzero(m)[self.k] for m in mask])\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert main(["arena_own_agents:Last", "greedy", "--players", "2", "--games", "8",
                 "--no-progress", "--mirrored", "--no-rating"]) == 0
    out = capsys.readouterr().out
    assert "\nLast " in out and "\ngreedy " in out


def test_evaluate_ends_its_worker_processes_when_interrupted():
    """Before: the pool's `with` block waited for the games under way (minutes in a final
    evaluation), and a SIGTERM to the process left its workers running."""
    import multiprocessing
    import signal
    import time

    from ono_env.arena import evaluate

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 4.0)   # once the workers play
    t = time.perf_counter()
    try:
        with pytest.raises(KeyboardInterrupt):
            evaluate("greedy", ["random", "greedy"], "basic", 2_000_000, workers=2)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.perf_counter() - t < 30
    assert not multiprocessing.active_children()


def test_a_run_of_copies_pairs_with_a_run_of_an_agent_against_those_copies():
    # before: "random random" and "greedy random" were refused as seating other opponents
    # (random#2 against random): a name given twice is numbered by its place
    from ono_env.arena import check_paired_plan, paired_difference

    kw = dict(rules="basic", num_players=4, num_games=480, seed=0, rating=False, mirrored=True)
    copies = run_arena(["random"] * 4, **kw)
    one = run_arena(["greedy", "random", "random", "random"], **kw)
    d = paired_difference(one, copies)
    assert (d["agent_a"], d["agent_b"]) == ("greedy", "random#1") and d["low"] < d["diff"] < d["high"]
    check_paired_plan(copies, ["greedy", "random", "random", "random"], "basic", 4, 480, 0)
    with pytest.raises(ValueError, match="the other entrants differ"):   # still: other others
        check_paired_plan(copies, ["greedy", "random", "random", "color"], "basic", 4, 480, 0)
    # a name of its own that ends in #2 is not a numbered copy
    two = dict(kw, num_players=2, num_games=200)
    from ono_env.agents import make_agent
    from ono_env.rules import RuleSet
    basic2 = RuleSet.preset("basic", num_players=2)
    bot2, bot = make_agent("greedy", basic2), make_agent("random", basic2)
    bot2.name, bot.name = "bot#2", "bot"
    a = run_arena(["color", bot2], **two)
    b = run_arena(["defensive", bot], **two)
    with pytest.raises(ValueError, match=r"the other entrants differ \(bot#2 against bot\)"):
        paired_difference(a, b)
    from ono_env.arena.results import _unnumbered  # the arena numbers every copy of a name
    assert _unnumbered(["x", "bot", "bot#1"]) == ["x", "bot", "bot#1"]
    assert _unnumbered(["y", "bot#1", "bot#2"]) == ["y", "bot", "bot"]


def test_the_printed_table_says_shares_and_seatings_as_the_table_has_them():
    # before: "row's win rate" at 3 players and "each played in every seating" at 5, where
    # only the 5 rotations are played
    three = run_arena(["random", "greedy", "color", "defensive"], "basic", 3, 24, 0, rating=False,
                      mirrored=True).format_table()
    assert "head to head: row's win share in games with column (95% interval; fair 33.3%)" in three
    assert "each played in every seating" in three
    five = run_arena(["random"] * 5, "basic", 5, 10, 0, rating=False, mirrored=True).format_table()
    assert "2 deals, each played in 5 seatings, the seats rotated" in five
    from ono_env.arena import suite as S
    assert "(fair 33.3%)" in S.format_ladder_markdown(
        {"players": 3, "table": "basic-3p", "suite_version": 0, "rules": "basic", "ratings": {},
         "cheating": [], "pairings": []}, "cmd")


def test_a_four_player_ladders_pairs_count_deals_not_games(monkeypatch):
    # before: "deals" held the games both agents sat in (24 a deal: 7,200 for 300 deals)
    import argparse
    import runpy
    from pathlib import Path

    bench = Path(__file__).resolve().parents[1] / "benchmarks"
    monkeypatch.syspath_prepend(str(bench))
    four_player = runpy.run_path(str(bench / "bench_ladder.py"))["four_player"]
    args = argparse.Namespace(rules="basic", games_cheap=120, games_search=24, seed=0)
    results: list[dict] = []
    shares: list[dict] = []
    four_player(args, ["random", "greedy", "color", "defensive", "random"], [], [], results, shares)
    # five entrants, four seats: five tables of one deal each (24 seatings), two entrants
    # sit together at three of them
    assert len(results) == 10 and {r["deals"] for r in results} == {3}
    assert all(s["deals"] == 4 for s in shares)


def test_each_batch_of_games_is_freed_before_the_next_is_dealt(monkeypatch):
    """Before: a game held itself in a reference cycle (its GameInternals held its bound
    methods), so each batch's arrays stayed until Python's cycle collector ran: a million
    10-player games of random agents took 7 GB where one batch takes 97 MiB. Now the last
    reference to a batch's game goes with the batch (checked here with the collector off)."""
    import gc
    import weakref

    from ono_env.agents import make_agent
    from ono_env.arena import play
    from ono_env.rules import RuleSet

    made: list[weakref.ref] = []
    alive_at_deal: list[int] = []

    class Counted(play.VecGame):
        def __init__(self, *args, **kwargs):
            alive_at_deal.append(sum(r() is not None for r in made))
            super().__init__(*args, **kwargs)
            made.append(weakref.ref(self))
    monkeypatch.setattr(play, "VecGame", Counted)
    rules = RuleSet.preset("basic", num_players=4)
    was = gc.isenabled()
    gc.disable()
    try:
        play.play_games(rules, [make_agent("greedy", rules)] * 4, 40, 0, batch_size=8)
    finally:
        if was:
            gc.enable()
    assert len(made) == 5 and alive_at_deal == [0, 0, 0, 0, 0]


def test_an_agent_that_fails_during_the_games_is_named(tmp_path, monkeypatch, capsys):
    """Before: 'ono-arena: error: RuntimeError: boom', naming no agent."""
    (tmp_path / "arena_late_agents.py").write_text(
        "import numpy as np\n"
        "class Late:\n"
        "    def __init__(self, rules):\n"
        "        self.calls = 0\n"
        "    def act(self, obs, mask, rng):\n"
        "        self.calls += 1\n"
        "        if self.calls > 3:\n"
        "            raise RuntimeError('boom')\n"
        "        return mask.argmax(axis=1)\n")
    monkeypatch.chdir(tmp_path)
    assert main(["arena_late_agents:Late", "greedy", "--players", "2", "--games", "8",
                 "--no-progress", "--no-rating"]) == 2
    assert capsys.readouterr().err == "ono-arena: error: RuntimeError: boom (raised by the " \
                                      "agent Late)\n"


def test_arena_json_and_a_result_card_with_a_byte_order_mark_are_read(tmp_path):
    """Before: arena.json and ono-bench's card were read in the locale's encoding, and a
    byte order mark (some editors write one) was refused as malformed JSON."""
    from ono_env.arena.results import read_arena_json
    from ono_env.arena.suite import read_card

    res = run_arena(["greedy", "random"], "basic", num_players=2, num_games=20, seed=1,
                    rating=False)
    res.save(tmp_path / "run")
    plain = read_arena_json(tmp_path / "run")
    marked = tmp_path / "marked" / "arena.json"
    marked.parent.mkdir()
    marked.write_text("\ufeff" + (tmp_path / "run" / "arena.json").read_text(), encoding="utf-8")
    assert read_arena_json(marked) == plain
    card = tmp_path / "card.json"
    card.write_text("\ufeff{}", encoding="utf-8")
    with pytest.raises(ValueError) as e:   # read past the mark: refused as a card, not as JSON
        read_card(card)
    assert "malformed" not in str(e.value) and "BOM" not in str(e.value)


@pytest.mark.parametrize("flag", [["--out"], ["--record", "2"]])
def test_an_output_folder_the_system_cannot_name_is_one_line_and_makes_nothing(tmp_path, capsys,
                                                                                monkeypatch, flag):
    """Before: a name too long for the system was OSError's own line, naming no flag, and a
    refused folder left the parents it had made."""
    monkeypatch.chdir(tmp_path)
    for folder in ("a" * 300, "new/deeper/" + "a" * 300):
        rc = main(["greedy", "random", "--players", "2", "--games", "2", *flag, folder])
        err = capsys.readouterr().err
        assert rc == 2 and err.startswith(f"ono-arena: error: {flag[0]}: cannot create the "
                                          f"folder ") and "File name too long" in err, err
        assert err.count("\n") == 1 and list(tmp_path.iterdir()) == []


def test_with_ray_the_agents_and_a_local_batch_are_checked_before_ray_starts(monkeypatch,
                                                                               capsys):
    """Before: a bad agent was named after Ray's seconds of start-up, and a local Ray's batch
    past the free memory failed in its tasks, naming num_games instead of --batch."""
    import ono_env.apps.arena_cli as A
    import ono_env.game as G

    monkeypatch.setattr(A, "check_ray_flag", lambda address: pytest.fail("Ray was started"))
    assert main(["nope", "random", "--players", "2", "--games", "4", "--ray"]) == 2
    assert "unknown agent 'nope'" in capsys.readouterr().err
    monkeypatch.setattr(G, "available_memory", lambda: 64 << 20)
    for ray in (["--ray"], ["--ray", "local"]):
        assert main(["random"] * 2 + ["--players", "2", "--batch", "1000000", "--games",
                                      "1000000", *ray]) == 2
        assert "ono-arena: error: --batch 1,000,000" in capsys.readouterr().err


def test_an_agent_that_calls_sys_exit_is_an_error_not_the_programs_end(tmp_path, monkeypatch,
                                                                       capsys):
    """Before: an agent's sys.exit(0) ended ono-arena with status 0 and no output, and a
    module that exited as it was imported ended it with that status, silently."""
    (tmp_path / "exiting_agents.py").write_text(
        "import sys\n"
        "class Quits:\n"
        "    def act(self, obs, mask, rng):\n"
        "        sys.exit(0)\n"
        "class QuitsAtOnce:\n"
        "    def __init__(self):\n"
        "        sys.exit(0)\n"
        "    def act(self, obs, mask, rng):\n"
        "        return mask.argmax(axis=1)\n"
        "class QuitsQuietly(QuitsAtOnce):\n"
        "    def __init__(self):\n"
        "        sys.exit()\n")
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(3)\n")
    monkeypatch.chdir(tmp_path)
    assert main(["exiting_agents:Quits", "random", "--players", "2", "--games", "4"]) == 2
    assert ("act(obs, mask, rng) failed on real positions of basic: SystemExit: 0"
            in capsys.readouterr().err)
    import importlib

    from ono_env import VecGame
    from ono_env.agents.driver import AgentDriver
    monkeypatch.syspath_prepend(str(tmp_path))
    quits = importlib.import_module("exiting_agents").Quits()
    driver = AgentDriver(VecGame("basic", 2, seed=0, num_players=2), [quits])   # past the
    driver.seat_agent[:] = 0   # arena's check: the driver names it
    with pytest.raises(RuntimeError, match=r"^the agent Quits called sys.exit\(0\) while deciding"):
        driver.play(np.random.default_rng(0))
    assert main(["exits_on_import:X", "random", "--players", "2", "--games", "4"]) == 2
    assert ("error: agent exits_on_import:X: importing 'exits_on_import' raised SystemExit: 3"
            in capsys.readouterr().err)
    # and one whose constructor exits (before: status 0 and no output)
    assert main(["exiting_agents:QuitsAtOnce", "random", "--players", "2", "--games", "4"]) == 2
    assert ("error: agent exiting_agents:QuitsAtOnce: QuitsAtOnce() raised SystemExit: 0"
            in capsys.readouterr().err)
    assert main(["exiting_agents:QuitsQuietly", "random", "--players", "2", "--games", "4"]) == 2
    assert capsys.readouterr().err.endswith(   # no code: the type alone, no colon after it
        "error: agent exiting_agents:QuitsQuietly: QuitsQuietly() raised SystemExit\n")
    # a registered factory's sys.exit too (before: the program ended with its status)
    from ono_env.agents import make_agent, register_agent, unregister_agent
    register_agent("exits-test", lambda rules: sys.exit(0))
    try:
        with pytest.raises(ValueError, match=r"^the factory registered as agent 'exits-test' "
                                             r"called sys.exit\(0\); allowed: a factory"):
            make_agent("exits-test", "basic")
    finally:
        unregister_agent("exits-test")


def test_an_agent_that_reads_no_observation_is_given_zeros_not_another_seats(tmp_path):
    """Before: an agent with uses_observation = False was given the rows of the driver's
    buffer as the last observing agent left them: another seat's observation, its hand."""
    from ono_env import VecGame
    from ono_env.agents.driver import AgentDriver

    seen: dict[str, list[np.ndarray]] = {"reader": [], "blind": []}

    class Reader:
        name = "reader"

        def act(self, obs, mask, rng):
            seen["reader"].append(obs.copy())
            return mask.argmax(axis=1)

    class Blind(Reader):
        name = "blind"
        uses_observation = False

        def act(self, obs, mask, rng):
            seen["blind"].append(obs.copy())
            return mask.argmax(axis=1)

    driver = AgentDriver(VecGame("basic", 4, seed=0, num_players=2), [Reader(), Blind()])
    driver.seat_agent[:] = [0, 1]
    for _ in range(10):
        driver.play(np.random.default_rng(0))
    assert seen["reader"] and seen["blind"] and any(o.any() for o in seen["reader"])
    assert not any(o.any() for o in seen["blind"])


def test_an_agents_error_names_it_unless_the_message_names_it_already():
    """Before: the note was left out where the label was any part of the message: the agent
    "e" raising "late boom" went unnamed; ono-bench's refusal of a failed pairing dropped the
    note too. A message that names the agent as the project's checks do ('e' or its repr)
    gets none."""
    from types import SimpleNamespace

    from ono_env import VecGame
    from ono_env.agents.driver import AgentDriver
    from ono_env.arena.suite import _failed

    class E:
        def __init__(self, name, message):
            self.name, self.message = name, message

        def act(self, obs, mask, rng):
            raise RuntimeError(self.message)

    for name, message, noted in (("e", "late boom", True), ("x", "x must be positive", True),
                                 ("boom", "the agent 'boom' broke", False),
                                 ("b", "a-b c", True)):
        driver = AgentDriver(VecGame("basic", 2, seed=0, num_players=2), [E(name, message)])
        driver.seat_agent[:] = 0
        with pytest.raises(RuntimeError) as err:
            driver.play(np.random.default_rng(0))
        assert (getattr(err.value, "__notes__", []) == [f"raised by the agent {name}"]) == noted
        if noted:
            refused = _failed(SimpleNamespace(name="basic-2p"), SimpleNamespace(name="random"),
                              err.value)
            assert str(refused) == (f"the pairing at basic-2p against random failed: "
                                    f"RuntimeError: {message} (raised by the agent {name})")


def test_a_game_agent_of_version_2_is_given_worlds_that_observe_in_version_2():
    """Before: worlds in the game's version (1 in the arena) to an agent that declared 2."""
    from ono_env import VecGame
    from ono_env.agents.driver import AgentDriver
    from ono_env.observation import OBS_V2_SIZE

    widths = []

    class GameV2:
        name, uses_game, observation_version = "gv2", True, 2

        def act(self, obs, mask, rng):   # the protocol's; the driver asks act_game
            raise AssertionError("not asked")

        def act_game(self, game, rows, rng):
            widths.append((game.observation_version,
                           game.observe(game.state.current[rows]).shape[-1]))
            return np.array([np.flatnonzero(game.legal_mask()[r])[0] for r in rows])

    driver = AgentDriver(VecGame("basic", 2, seed=0, num_players=2), [GameV2()])
    driver.seat_agent[:] = 0
    driver.play(np.random.default_rng(0))
    assert widths and set(widths) == {(2, OBS_V2_SIZE)}


def test_an_agent_that_writes_its_mask_or_steps_the_game_is_refused(tmp_path, monkeypatch,
                                                                     capsys):
    """Before: an agent that set every entry of its mask had its illegal actions checked
    against that mask and played (it won every game, held counts wrapped to 255); a game
    agent that stepped the live game had the actions it chose before played unchecked (now
    only a cheating one is given the live game, the others worlds of their own); with
    --record, an explain that raised was not named as the agent's, and an explain of 3 was
    "TypeError: 'int' object is not callable"."""
    from pathlib import Path

    from ono_env import VecGame
    from ono_env.agents import make_agent
    from ono_env.agents.driver import AgentDriver, act_one

    data = Path(__file__).resolve().parent / "data"
    monkeypatch.chdir(data)
    assert main(["planted:MaskWriter", "greedy", "--players", "2", "--games", "8",
                 "--no-rating", "--no-progress"]) == 2
    assert "MaskWriter" in capsys.readouterr().err
    monkeypatch.syspath_prepend(str(data))
    import planted
    for agent in (planted.GameStepper(), planted.StockShuffler()):
        # given worlds of its own (it declares no cheating), it steps and shuffles those
        game = VecGame("basic", 8, seed=0, num_players=2)
        driver = AgentDriver(game, [agent, make_agent("greedy", game.rules)])
        driver.seat_agent[:] = [0, 1]
        driver.play(np.random.default_rng(0))
        assert game.finished.all() and int(game.state.hands.max()) < 10
    stepper, shuffler = planted.GameStepper(), planted.StockShuffler()
    stepper.cheating = shuffler.cheating = True   # given the live game, which it must not change
    for agent in (planted.MaskWriter(), stepper, shuffler):
        game = VecGame("basic", 8, seed=0, num_players=2)
        driver = AgentDriver(game, [agent, make_agent("greedy", game.rules)])
        driver.seat_agent[:] = [0, 1]
        said = ("illegal" if isinstance(agent, planted.MaskWriter) else
                r"act_game changed the game it was given .*; allowed: an agent that reads")
        with pytest.raises(ValueError, match=said):
            driver.play(np.random.default_rng(0))
        assert int(game.state.hands.max()) < 10   # no count wrapped
        one = VecGame("basic", 1, seed=0, num_players=2)
        with pytest.raises(ValueError, match=said):
            act_one(agent, "mine", one, np.random.default_rng(0))
    for name, said in (("ExplainRaises", "RuntimeError: explode"),
                       ("ExplainNotCallable", "'explain-number': explain is 3 \\(int\\); "
                                              "allowed: a method explain\\(obs, mask\\)")):
        assert main([f"planted:{name}", "greedy", "--players", "2", "--games", "4", "--no-rating",
                     "--no-progress", "--record", "2", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert re.search(said, err) and len(err.splitlines()) == 1, err
        if name == "ExplainRaises":
            assert "explain-raises" in err, err


def test_a_run_whose_records_would_not_fit_in_memory_is_refused_before_any_game(monkeypatch,
                                                                                 capsys):
    """Before: nothing counted the per-game records; 100,000,000 games at 10 players (about
    42 GB of them) would play for hours and then fail."""
    import ono_env.game as G
    from ono_env.arena import record_bytes

    monkeypatch.setattr(G, "available_memory", lambda: 1 << 30)
    played = []
    monkeypatch.setattr("ono_env.arena.play_games", lambda *a, **k: played.append(1))
    # not one round of the plan fits: 20 entrants at 10 players seat 184,756 tables (before:
    # "at most 0 games played here")
    with pytest.raises(ValueError, match=r"^num_games=1,847,560: one round of the plan, every "
                                         r"seating of every table, is 1,847,560 games, which need "
                                         r"1\.8 GiB .* allowed: fewer entrants"):
        run_arena(["random"] * 20, "basic", 10, num_games=1_847_560, rating=False)
    # the most it advises is whole rounds of the plan (10 seatings), so that asking for it
    # plays that many and fits (before: 1,044,495, which the plan rounds up to 1,044,500)
    most = (1 << 30) // record_bytes(10) // 10 * 10
    assert games_played(most, 10, 10) == most and most * record_bytes(10) <= 1 << 30
    with pytest.raises(ValueError, match=r"^num_games=100,000,000: the 100,000,000 games "
                                         r"played need 9[0-9.]+ GiB \(their records, and room "
                                         r"for the ratings and tables made from them\), and this "
                                         r"machine has 1.0 GiB of memory free; allowed: fewer "
                                         rf"games \(at most {most:,} played here\)"):
        run_arena(["random"] * 10, "basic", 10, num_games=100_000_000, rating=False)
    assert played == []
    assert main(["random"] * 10 + ["--players", "10", "--games", "100000000"]) == 2   # named
    assert "error: --games 100,000,000: the 100,000,000 games played need" in \
        capsys.readouterr().err
    # a count rounded up: the error alone (before: the note of the rounding above it)
    assert main(["random"] * 10 + ["--players", "10", "--games", "99999999"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ono-arena: error: --games 99,999,999: the "
                                                    "100,000,000 games played need"), err
    monkeypatch.undo()
    assert run_arena(["random"] * 2, "basic", 2, num_games=10, rating=False).agent_rows()


def test_the_paths_written_are_printed_without_their_control_characters(tmp_path, capsys):
    # before: a control character of --out reached the terminal in the "wrote" line
    out = tmp_path / "nul\x01ctl"
    assert main(["greedy", "random", "--players", "2", "--games", "4", "--no-rating",
                 "--no-progress", "--out", str(out), "--record", "1", str(out / "r")]) == 0
    printed = capsys.readouterr().out
    assert "\x01" not in printed and "nul?ctl" in printed
    assert (out / "arena.json").is_file() and list((out / "r").glob("replay-*.json"))
    # and the run paired with (before: printed raw)
    base = ["--players", "2", "--games", "4", "--no-rating", "--no-progress", "--mirrored"]
    assert main(["greedy", "random", *base, "--out", str(tmp_path / "p\x1bq")]) == 0
    assert main(["color", "random", *base, "--paired-with", str(tmp_path / "p\x1bq")]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "paired with " in printed and "p?q" in printed


def test_a_run_that_fails_or_is_stopped_writing_its_files_prints_its_table(tmp_path, capsys,
                                                                          monkeypatch):
    """Before: a full disk at the third replay (or a stop there) ended the run with the error
    alone, its table never printed: a run without --out lost its results."""
    from ono_env import replay as R
    real = R.Replay.save
    for failure, code in ((ValueError("cannot write replay file: No space left on device"), 2),
                          (KeyboardInterrupt(), 130)):
        calls: list = []

        def save(self, path, *a, failure=failure, calls=calls, **kw):
            calls.append(path)
            if len(calls) == 3:
                raise failure
            return real(self, path, *a, **kw)
        monkeypatch.setattr(R.Replay, "save", save)
        rec = tmp_path / f"r{code}"
        assert main(["greedy", "random", "--players", "2", "--games", "20", "--no-rating",
                     "--no-progress", "--record", "5", str(rec)]) == code
        out, err = capsys.readouterr()
        assert "win rate" in out and "wrote 2 of 5 replays to" in out, out
        assert len(list(rec.glob("replay-*.json"))) == 2
        assert ("No space left on device" if code == 2 else "interrupted") in err


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"),
                                     MemoryError("Unable to allocate 2.59 GiB for an array")])
def test_a_run_whose_plot_fails_names_the_files_it_wrote(tmp_path, capsys, monkeypatch, failure):
    """Before: a failure at arena.png (or at the CSV) left arena.json written and unsaid, and
    the rerun was refused as the folder holds arena.json; a MemoryError there (130 entrants'
    matrix) printed no table either. And --out saves with new=True."""
    import ono_env.apps.arena_cli as A
    from ono_env.arena.results import ArenaResult
    real_save, news = ArenaResult.save, []

    def save(self, *a, **kw):
        news.append(kw.get("new"))
        return real_save(self, *a, **kw)

    def fails(result, path):
        raise failure
    monkeypatch.setattr(ArenaResult, "save", save)
    monkeypatch.setattr(A, "plot_head_to_head", fails)
    out = tmp_path / "o"
    assert main(["greedy", "random", "--players", "2", "--games", "4", "--no-rating",
                 "--no-progress", "--out", str(out)]) == 2
    printed, err = capsys.readouterr()
    assert "win rate" in printed and f"wrote {out / 'arena.json'}, {out / 'arena.csv'}" in printed
    assert str(failure).split()[-1] in err and news == [True]


def test_a_result_marked_mirrored_without_deals_has_no_head_to_head():
    """As per_deal says (before the head-to-head counted shares itself: Wilson intervals of
    a plain run's wins, without a word)."""
    import dataclasses
    r = run_arena(["greedy", "random", "color"], "basic", 2, 12, rating=False)
    marked = dataclasses.replace(r, mirrored=True)
    with pytest.raises(ValueError, match=r"^paired statistics need a mirrored run"):
        marked.head_to_head()
    assert r.head_to_head()["games"][0, 1] > 0


def test_an_arena_json_too_large_to_pair_with_is_said(tmp_path, capsys, monkeypatch):
    """Before: a mirrored run of more than about 22,000,000 games wrote an arena.json over
    the size --paired-with reads, and only the next run found it out."""
    import ono_env.apps.arena_cli as A
    monkeypatch.setattr(A, "MAX_ARENA_JSON_BYTES", 1000)
    base = ["greedy", "random", "--players", "2", "--games", "40", "--no-progress", "--no-rating"]
    assert main([*base, "--mirrored", "--out", str(tmp_path / "m")]) == 0
    size = (tmp_path / "m" / "arena.json").stat().st_size
    assert (f"note: arena.json is {size:,} bytes, over the 1,000 that --paired-with reads"
            in capsys.readouterr().err)
    assert main([*base, "--out", str(tmp_path / "p")]) == 0   # not mirrored: nothing to pair
    assert "--paired-with reads" not in capsys.readouterr().err


def test_a_matrix_of_many_entrants_keeps_its_size(tmp_path):
    """Before: the figure grew with the entrants, a cell's text each (100 entrants: 73 s and
    10 GB for an 18 MB image). Beyond MATRIX_TEXT entrants the cells hold their colours
    alone, in a figure no larger than MATRIX_TEXT entrants'."""
    from matplotlib.image import imread

    from ono_env.apps.arena_cli import MATRIX_TEXT, plot_matrix
    sizes = {}
    for k in (MATRIX_TEXT, 5 * MATRIX_TEXT):
        rate = np.full((k, k), 0.5)
        np.fill_diagonal(rate, np.nan)
        plot_matrix([f"a{i}" for i in range(k)], rate, rate - 0.1, rate + 0.1,
                    np.ones((k, k), int), "many", tmp_path / f"{k}.png")
        sizes[k] = imread(tmp_path / f"{k}.png").shape[:2]
    assert sizes[5 * MATRIX_TEXT][0] <= sizes[MATRIX_TEXT][0]
    assert sizes[5 * MATRIX_TEXT][1] <= sizes[MATRIX_TEXT][1]


def test_two_runs_into_one_folder_do_not_mix(tmp_path):
    """ono-arena --out saves with new=True: a run that finds the folder filled since its
    check is refused (before: its files replaced the other run's, the PNG of one beside the
    JSON of the other)."""
    first = run_arena(["greedy", "random"], "basic", 2, 4, rating=False)
    first.save(tmp_path, new=True)
    before = (tmp_path / "arena.json").read_bytes()
    other = run_arena(["color", "random"], "basic", 2, 4, rating=False)
    with pytest.raises(ValueError, match=r"arena\.json"):
        other.save(tmp_path, new=True)
    assert (tmp_path / "arena.json").read_bytes() == before
    other.save(tmp_path)   # the library's default: replaced, as documented
    assert (tmp_path / "arena.json").read_bytes() != before


def test_the_words_of_a_small_mirrored_run_and_a_label_the_font_lacks(tmp_path, capsys):
    """Before: "(1 deals, ...)", "--record N DIR: N a number of 6 digits is out of range",
    and matplotlib's two-line warning for each character of a label that its font lacks."""
    import warnings

    from ono_env.apps.arena_cli import plot_head_to_head

    one = run_arena(["greedy", "random"], "basic", 2, 1, rating=False, mirrored=True)
    assert "2 games (1 deal, each played in every seating)" in one.format_table()
    # which way the columns count (before: only in the docs)
    assert "\nmean length: decisions a game\n" in one.format_table()
    penalty = {"preset": "basic", "num_players": 2, "scoring": "penalty", "target_score": 50}
    assert ("mean score: the penalty points a seat ends with (fewer is better)"
            in run_arena(["greedy", "random"], penalty, None, 2, rating=False).format_table())
    assert main(["greedy", "random", "--players", "2", "--games", "3", "--mirrored",
                 "--no-progress", "--no-rating"]) == 0
    assert ("playing 4 games (--games 3 rounded up so that every table plays every seating "
            "equally: 2 deals, each played in every seating)") in capsys.readouterr().err
    assert main(["greedy", "random", "--players", "2", "--record", "100000",
                 str(tmp_path / "r")]) == 2
    assert "--record N DIR: N 100,000 is out of range; allowed: 1 to 10,000" in \
        capsys.readouterr().err
    class Named:
        name = "\u6a21\u578b"   # two CJK characters, which matplotlib's default font lacks

        def act(self, obs, mask, rng):
            return mask.argmax(axis=1)
    result = run_arena([Named(), "random"], "basic", 2, 4, rating=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot_head_to_head(result, tmp_path / "cjk.png")
    assert (tmp_path / "cjk.png").stat().st_size > 0


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux's /proc")
def test_a_folder_that_takes_no_file_is_refused_before_the_games(tmp_path):
    """A folder os.access calls writable that takes no file (/proc, /sys; quotas, ACLs): a
    file made and removed there says so before any game (before: after every game)."""
    from ono_env.checks import check_output_dir

    with pytest.raises(ValueError, match=r"^--out: cannot write into the folder '/proc/self/fd' "
                                         r"\("):
        check_output_dir("/proc/self/fd", "--out")
    assert check_output_dir(tmp_path, "--out") == tmp_path and not list(tmp_path.iterdir())


# ---- ratings: the Luce model of the winner fitted to all the games at once ----------------

def _records(entrants, wins):
    from ono_env.arena.play import GameRecords
    ent = np.asarray(entrants, np.int64)
    w = np.asarray(wins, np.float64)
    return GameRecords(ent, w, np.zeros_like(w), np.zeros(len(ent), np.int64),
                       w.sum(axis=1) == 0)


def _same_ratings(a, b, tol=1e-9):
    """Every entrant's every number alike to ``tol`` (whatever the keys)."""
    return len(a) == len(b) and all(x.keys() == y.keys() and all(abs(x[k] - y[k]) <= tol
                                                                 for k in x)
                                    for x, y in zip(a, b))


def test_ratings_do_not_depend_on_the_order_of_the_games():
    """Before: OpenSkill's online updates, one game at a time in a seeded shuffled order,
    gave other ratings for the same games in another order."""
    from ono_env.arena.play import GameRecords
    from ono_env.arena.stats import rate_games

    res = run_arena(["greedy", "random", "color"], "basic", 2, num_games=600, seed=2, rating=False)
    r = res.records
    rng = np.random.default_rng(0)
    rows = rng.permutation(len(r.length))
    seats = np.argsort(rng.random(r.entrants.shape), axis=1)   # the seats of each game shuffled
    shuffled = GameRecords(np.take_along_axis(r.entrants[rows], seats, 1),
                           np.take_along_axis(r.wins[rows], seats, 1), r.scores[rows],
                           r.length[rows], r.truncated[rows])
    assert _same_ratings(rate_games(r, 3), rate_games(shuffled, 3))
    half = len(rows) // 2   # the games in halves, the later half first
    turned = GameRecords(np.roll(r.entrants, half, 0), np.roll(r.wins, half, 0), r.scores,
                         r.length, r.truncated)
    assert _same_ratings(rate_games(r, 3), rate_games(turned, 3))


def test_identical_records_get_identical_ratings(capsys):
    """Before: ``ono-arena random random --mirrored`` rated two identical records apart."""
    res = run_arena(["random", "random"], "basic", 2, num_games=2000, seed=0, mirrored=True)
    one, two = res.agent_rows()
    assert one["wins"] == two["wins"]
    assert _same_ratings(res.ratings[:1], res.ratings[1:])
    assert abs(one["rating"]) < 1e-9 and one["rating_low"] < 0 < one["rating_high"]
    assert main(["random", "random", "--players", "2", "--mirrored", "--games", "400",
                 "--no-progress"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("random#")]
    assert len(rows) == 2 and rows[0].split()[-3:] == rows[1].split()[-3:] == ["+0", "[-17,",
                                                                              "+17]"]


def test_a_clearly_stronger_agent_is_rated_higher_beyond_its_interval(capsys):
    """Before: ``ono-arena greedy random --players 2 --games 100 --seed 1`` rated greedy (67%
    of the wins) 17.24 below random (33%) 17.34."""
    res = run_arena(["greedy", "random"], "basic", 2, num_games=100, seed=1)
    greedy, rand = res.agent_rows()
    assert greedy["win_rate"] == 0.67
    assert greedy["rating_low"] > rand["rating_high"]
    assert greedy["rating"] == pytest.approx(-rand["rating"], abs=1e-9)   # centred at 0
    # two players: the rating difference says the win rate (the virtual games pull it in)
    gap = greedy["rating"] - rand["rating"]
    assert 1 / (1 + 10 ** (-gap / 400)) == pytest.approx(0.67, abs=0.01)
    assert main(["greedy", "random", "--players", "2", "--games", "100", "--seed", "1",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "rating (95% interval)" in out and "mu" not in out
    assert re.search(r"^greedy .* \+61 \[\+25, \+97\]$", out, re.M)
    assert re.search(r"^random .* -61 \[-97, -25\]$", out, re.M)


def test_an_entrant_that_never_wins_keeps_a_finite_rating():
    from ono_env.arena.stats import rate_games

    # 0 wins every game it plays, 2 none; 1 wins against 2 only; one game has no winner
    ent = [[0, 1]] * 30 + [[0, 2]] * 30 + [[1, 2]] * 30 + [[1, 2]]
    wins = [[1, 0]] * 60 + [[1, 0]] * 30 + [[0, 0]]
    out = rate_games(_records(ent, wins), 3)
    assert all(np.isfinite([x["rating"], x["low"], x["high"]]).all() for x in out)
    assert out[0]["rating"] > out[1]["rating"] > out[2]["rating"]
    assert all(x["low"] < x["rating"] < x["high"] for x in out)
    assert sum(x["rating"] for x in out) == pytest.approx(0.0, abs=1e-9)
    assert out[0]["low"] > out[1]["high"] and out[1]["low"] > out[2]["high"]
    with pytest.raises(ValueError, match=r"^records: entrants from 0 to 2; allowed: 0 to 1 "
                                         r"\(num_entrants=2\)$"):
        rate_games(_records(ent, wins), 2)


def test_millions_of_games_are_rated():
    """Before: ``ono-arena greedy random --players 2 --games 5000000`` played every game and
    then failed with "rate_games: no convergence in 100 Newton steps": the gradient's rounding
    at these counts kept the entrants' common level moving by about 1e-9. The records here
    are that run's: greedy won 3,328,432 of the 5,000,000 games."""
    from ono_env.arena.stats import ELO, rate_games

    games, won = 5_000_000, 3_328_432
    ent = np.zeros((games, 2), np.int64)
    ent[1::2, 0] = 1                       # greedy (0) and random (1) change seats each game
    ent[0::2, 1] = 1
    seat = (ent[:, 0] != 0).astype(np.int64)   # greedy's seat
    wins = np.zeros((games, 2))
    wins[np.arange(games), np.where(np.arange(games) < won, seat, 1 - seat)] = 1
    greedy, rand = rate_games(_records(ent, wins), 2)
    # two entrants: the rating difference is the log-odds of the wins (the two virtual games
    # move it by about 1e-4 here)
    assert greedy["rating"] - rand["rating"] == pytest.approx(ELO * np.log(won / (games - won)),
                                                             abs=1e-3)
    assert greedy["rating"] == pytest.approx(-rand["rating"], abs=1e-9)
    assert rand["high"] < rand["rating"] + 0.2 and greedy["low"] > greedy["rating"] - 0.2


def test_ratings_are_the_maximum_of_the_likelihood_written_out_game_by_game():
    """The fit checked against the Luce model's log-likelihood summed one game at a time in
    plain Python (no grouping), maximised by scipy, its interval from the curvature."""
    scipy_optimize = pytest.importorskip("scipy.optimize")
    from ono_env.arena.stats import ELO, rate_games

    # 2 and 3 entrants of 4 at tables of 3 seats; shared wins and games with no winner
    ent = [[0, 1, 2], [2, 0, 1], [1, 2, 3], [3, 1, 0], [0, 2, 3], [2, 3, 1], [0, 1, 3]]
    wins = [[1, 0, 0], [0, 0.5, 0.5], [0, 1, 0], [0, 0, 0], [0, 0, 1], [1 / 3] * 3,
            [0, 0, 1]]
    ent, wins = ent * 3 + [[0, 1, 2]], wins * 3 + [[0, 0, 1]]

    def loglik(theta):
        total = 0.0
        for seated, won in zip(ent, wins):
            z = sum(np.exp(theta[e]) for e in seated)
            total += sum(w * (theta[e] - np.log(z)) for e, w in zip(seated, won))
        return total + sum(0.5 * t - np.log1p(np.exp(t)) for t in theta)   # virtual games

    best = scipy_optimize.minimize(lambda t: -loglik(t), np.zeros(4), method="BFGS",
                                   options={"gtol": 1e-10}).x
    out = rate_games(_records(ent, wins), 4)
    want = ELO * (best - best.mean())
    assert [x["rating"] for x in out] == pytest.approx(want, abs=1e-3)
    # the interval: the inverse of the curvature (by finite differences), centred
    h, K = 1e-4, 4
    H = np.zeros((K, K))
    for i in range(K):
        for j in range(K):
            ei, ej = np.eye(K)[i] * h, np.eye(K)[j] * h
            H[i, j] = -(loglik(best + ei + ej) - loglik(best + ei - ej) - loglik(best - ei + ej)
                        + loglik(best - ei - ej)) / (4 * h * h)
    centre = np.eye(K) - 1 / K
    half = 1.959963984540054 * ELO * np.sqrt(np.diag(centre @ np.linalg.inv(H) @ centre))
    assert [x["high"] - x["rating"] for x in out] == pytest.approx(half, rel=1e-4)
    assert [x["rating"] - x["low"] for x in out] == pytest.approx(half, rel=1e-4)


def test_the_rating_files_keys_and_an_older_arena_json_still_pairs(tmp_path, capsys):
    """arena.json and arena.csv hold rating, rating_low and rating_high (before: OpenSkill's
    rating_mu, rating_sigma and rating_ordinal); an arena.json with the old keys is still
    read by --paired-with."""
    base = ["--players", "2", "--games", "200", "--mirrored", "--seed", "0", "--no-progress"]
    assert main(["greedy", "random", *base, "--out", str(tmp_path / "g")]) == 0
    data = json.loads((tmp_path / "g" / "arena.json").read_text())
    rows = {r["agent"]: r for r in data["agents"]}
    assert not any(k in rows["greedy"] for k in ("rating_mu", "rating_sigma", "rating_ordinal"))
    assert rows["greedy"]["rating_low"] > rows["random"]["rating_high"]
    assert rows["greedy"]["rating"] == pytest.approx(-rows["random"]["rating"])
    with open(tmp_path / "g" / "arena.csv") as fh:
        head = next(csv.reader(fh))
    assert head[-3:] == ["rating", "rating_low", "rating_high"]
    old = tmp_path / "old"
    old.mkdir()
    for row in data["agents"]:   # as the files written before the change
        for k in ("rating", "rating_low", "rating_high"):
            del row[k]
        row.update(rating_mu=25.0, rating_sigma=1.0, rating_ordinal=22.0)
    (old / "arena.json").write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["color", "random", *base, "--paired-with", str(old)]) == 0
    assert "paired with" in capsys.readouterr().out


def test_a_paired_comparison_takes_another_batch_size_where_the_deals_are_the_same(tmp_path):
    """Before: any other batch size was refused as "so they did not deal the same cards",
    though a seating's games that fit in one batch in both runs are dealt alike."""
    from ono_env.arena import paired_difference

    kw = dict(rules="basic", num_players=2, num_games=200, seed=0, rating=False, mirrored=True)
    first = run_arena(["greedy", "random"], batch_size=4096, **kw)   # 100 games a seating
    for batch in (100, 4000):   # the same deals: the same games, to the last decision
        again = run_arena(["greedy", "random"], batch_size=batch, **kw)
        d = paired_difference(again, first)
        assert d["diff"] == 0.0 and d["low"] < 0 < d["high"] and d["deals"] == 100
        assert np.array_equal(again.records.length, first.records.length)
        assert paired_difference(run_arena(["color", "random"], batch_size=batch, **kw),
                                 first)["deals"] == 100
    other = run_arena(["color", "random"], batch_size=60, **kw)   # two batches a seating
    with pytest.raises(ValueError, match=r"^the two runs differ in batch size \(60 against "
                                         r"4096\): a seating's 100 games fill more than one "
                                         r"batch of 60, and each batch deals from a seed of its "
                                         r"own, so they did not deal the same cards"):
        paired_difference(other, first)
    assert not np.array_equal(run_arena(["greedy", "random"], batch_size=60, **kw)
                              .records.length, first.records.length)   # other deals indeed


def test_model_files_of_one_name_that_are_not_one_file_are_labelled_by_their_folder(
        tmp_path, monkeypatch):
    """Before: d1/m.safetensors and d2/m.safetensors (other models) were m#1 and m#2, the
    notation of one agent given twice."""
    import shutil

    from ono_env.agents.learned import shipped_models
    from ono_env.arena import _labels

    shipped = shipped_models()
    for folder, model in (("d1", "ppo-basic-2p"), ("d2", "ppo-any"), ("a/x", "ppo-basic-2p"),
                          ("b/x", "ppo-any")):
        (tmp_path / folder).mkdir(parents=True)
        shutil.copy(shipped[model], tmp_path / folder / "m.safetensors")
    (tmp_path / "d3").mkdir()
    (tmp_path / "d3" / "m.safetensors").symlink_to(tmp_path / "d1" / "m.safetensors")
    monkeypatch.chdir(tmp_path)
    assert _labels(["d1/m.safetensors", "d2/m.safetensors"]) == ["d1/m.safetensors",
                                                                  "d2/m.safetensors"]
    assert _labels(["d1/m.safetensors", "d1/m.safetensors"]) == ["m#1", "m#2"]   # copies
    # one file spelt two ways is one agent given twice, beside another file
    assert _labels(["d1/m.safetensors", "./d1/../d1/m.safetensors", "d2/m.safetensors"]) == [
        "d1/m.safetensors#1", "d1/m.safetensors#2", "d2/m.safetensors"]
    assert _labels(["a/x/m.safetensors", "b/x/m.safetensors"]) == ["a/x/m.safetensors",
                                                                    "b/x/m.safetensors"]
    assert _labels(["d1/m.safetensors", "d3/m.safetensors"]) == ["m#1", "m#2"]   # a link to it
    # a file whose name reads as a copy's number plays under its folder and file name
    shutil.copy(shipped["ppo-basic-2p"], tmp_path / "d1" / "random#1.safetensors")
    assert _labels(["d1/random#1.safetensors", "random", "random"]) == [
        "d1/random#1.safetensors", "random#1", "random#2"]
    result = run_arena(["d1/m.safetensors", "d2/m.safetensors"], "basic", 2, 4, rating=False)
    assert result.labels == ["d1/m.safetensors", "d2/m.safetensors"]


@pytest.mark.parametrize("name", ["random#1", "sneaky (cheating)", "mine#12"])
def test_a_class_of_ones_own_never_takes_the_arenas_numbers_or_cheating_mark(name):
    """Before: a class named random#1 beside random random made three rows random#1, random#2
    and random#3, and a fair class named "sneaky (cheating)" was shown as cheating."""
    class Own:
        def act(self, obs, mask, rng):
            return mask.argmax(axis=1)
    Own.name = name
    own = (f"{__name__}:test_a_class_of_ones_own_never_takes_the_arenas_numbers_or_cheating_"
           f"mark.<locals>.Own")
    result = run_arena([Own(), "random", "random"], "basic", 2, 12, rating=False)
    assert result.labels == [own, "random#1", "random#2"]
    assert "(cheating)" not in result.format_table()


def test_one_game_with_no_winner_is_said_in_the_singular():
    from ono_env.arena.results import ArenaResult
    from ono_env.rules import resolve_rules

    def table(no_winner):
        wins = [[1.0, 0.0]] * (3 - no_winner) + [[0.0, 0.0]] * no_winner
        return ArenaResult(resolve_rules("basic", num_players=2), ["a", "b"],
                           _records([[0, 1], [1, 0], [0, 1]], wins), 0, 0.0).format_table()
    assert "; 1 game with no winner (cut at" in table(1)
    assert "; 2 games with no winner (cut at" in table(2)


def test_an_unknown_agent_is_told_that_module_class_is_taken(capsys):
    assert main(["genius", "random", "--players", "2", "--games", "2", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ono-arena: error: unknown agent 'genius'")
    assert ("or the path of a saved model (.safetensors or .zip); ono-arena, ono-bench and "
            "ono-exploit also take module:Class, an agent class of your own") in err


def test_no_printed_interval_reads_as_having_no_width():
    """Before: an interval whose ends round alike at the table's decimals printed as
    ``100.0 [100.0, 100.0]`` (ends at 99.96 and 100), and a head-to-head cell wider than its
    column pushed the row out of line with the header."""
    from ono_env.arena import ArenaResult
    from ono_env.arena.stats import percent_interval

    assert percent_interval(1.0, 0.9996, 1.0, 1) == ("100.00", "99.96", "100.00")
    assert percent_interval(0.5, 0.49998, 0.50002, 1) == ("50.000", "49.998", "50.002")
    assert percent_interval(0.523, 0.51, 0.53, 1) == ("52.3", "51.0", "53.0")   # as before
    assert percent_interval(1.0, 1.0, 1.0, 1) == ("100.0", "100.0", "100.0")    # no width
    n = 5000   # a always beats c; b and c take turns; a and b not seated together
    seated = [[0, 2], [2, 0], [1, 2], [2, 1]]
    ent = np.repeat(np.array(seated), n, axis=0)
    wins = np.zeros((4 * n, 2))
    wins[:n, 0] = wins[n:2 * n, 1] = 1
    wins[2 * n:, 0] = np.arange(2 * n) % 2
    wins[2 * n:, 1] = 1 - wins[2 * n:, 0]
    table = ArenaResult(RuleSet.preset("basic", num_players=2), ["a", "b", "c"],
                        _records(ent, wins), 0, 0.0).format_table().splitlines()
    a_row = next(line for line in table if line.startswith("a ") and "100.00 [99.9" in line)
    header = table[table.index(a_row) - 1]
    assert len(a_row) == len(header) and header.rstrip().endswith("c")
    assert "[100.0, 100.0]" not in "\n".join(table) and "[0.0, 0.0]" not in "\n".join(table)


def test_a_mirrored_runs_wins_carry_no_float_noise():
    """Before: wins = rate * games, and arena.csv said 10.999999999999998 for 11 games won."""
    r = run_arena(["greedy", "random", "color", "defensive"], "basic", 3, 48, 2, rating=False,
                  mirrored=True)
    assert r.no_winner == 0   # every game won: each share a whole number of games
    wins = [x["wins"] for x in r.agent_rows()]
    assert all(w == round(w) for w in wins) and sum(wins) == 48, wins
