"""The benchmark suite (``ono-bench``), its ratings, result cards, ``module:Class`` agents and
the exploiter (``ono-exploit``)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from ono_env.agents.registry import agent_from_class, is_class_spec
from ono_env.apps.bench_cli import main as bench_main
from ono_env.arena import suite as S
from ono_env.rules import PRESETS, resolve_rules

DATA = Path(__file__).parent / "data"
SMALL = {"deals": 60, "slow_deals": 2}


def _no_timing(card: dict) -> dict:
    return {k: v for k, v in card.items() if k != "timing"}


@pytest.fixture
def in_data(monkeypatch):
    """The current directory holds tests/data/planted.py: ``planted:Class`` imports."""
    monkeypatch.chdir(DATA)


# ---- the suite ---------------------------------------------------------------------------
def test_the_suite_covers_every_preset_at_2_and_4_players_with_a_published_ladder():
    suite = S.load_suite()
    assert suite.version == max(S.suite_versions())
    got = {(t.preset, t.players) for t in suite.tables.values()}
    assert got >= {(p, n) for p in PRESETS for n in (2, 4)}
    ladder = S.read_ladder(suite)
    S.check_field(suite, list(suite.tables.values()), ladder)   # the shipped files match
    for t in suite.tables.values():
        names = t.names()
        assert names[:5] == ["random", "greedy", "color", "defensive", "ppo-any"]
        assert [r.name for r in t.field if r.cheating] == ["oracle-hands:8", "oracle:4"]
        assert [r.name for r in t.field if r.slow and not r.cheating] == ["pimc:8"]
        assert set(ladder["tables"][t.name]["ratings"]) == set(names)
        assert ladder["tables"][t.name]["ratings"]["greedy"]["rating"] == pytest.approx(1000)
        # the published ladder: at least 2,000 deals in every pairing
        assert t.ladder_deals >= 2000 and t.ladder_slow_deals >= 2000
        assert ladder["tables"][t.name]["min_deals"] >= 2000
    assert suite.tables["basic-2p"].names()[5] == "ppo-basic-2p"
    assert len({t.seed for t in suite.tables.values()}) == len(suite.tables)


def test_every_published_suite_version_loads_with_its_ladder():
    """Every shipped suite version (not only the latest) loads, and its published ladder rates
    exactly its tables' fields, with greedy at 1000: an old version's card can be read
    against the scale it was measured on."""
    versions = S.suite_versions()
    assert versions == list(range(1, max(versions) + 1))
    for v in versions:
        suite = S.load_suite(v)
        ladder = S.read_ladder(suite)
        assert suite.version == v and set(ladder["tables"]) == set(suite.tables), v
        for t in suite.tables.values():
            ratings = ladder["tables"][t.name]["ratings"]
            assert set(ratings) == set(t.names()), (v, t.name)
            assert ratings["greedy"]["rating"] == pytest.approx(1000), (v, t.name)
    # a version's number, where its Suite is read: one error naming what is allowed (before:
    # an AttributeError)
    with pytest.raises(ValueError, match=r"^read_ladder: suite=10 \(int\); allowed: a Suite"):
        S.read_ladder(10)


def test_every_published_ladder_page_pins_its_suite_version():
    """A page's command plays its own version's deals, not the latest's (before: suite 10's
    pages read "bench_suite.py ladder ...", which plays a later version once there is one)."""
    import json

    root = Path(__file__).resolve().parent.parent / "docs" / "results"
    for v in S.suite_versions():
        for t in S.load_suite(v).tables:
            command = json.loads((root / f"suite-{v}" / f"{t}.json").read_text())["command"]
            assert command.startswith(f"python benchmarks/bench_suite.py --suite {v} ladder "), \
                (v, t, command)
            assert f"```bash\n{command}\n```" in (root / f"suite-{v}" / f"{t}.md").read_text()


def test_unknown_versions_and_tables_are_refused():
    with pytest.raises(ValueError, match="unknown suite version 99; there are: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10"):
        S.load_suite(99)
    with pytest.raises(ValueError, match="no table 'basic-3p'; its tables: basic-2p, basic-4p"):
        S.select_tables(S.load_suite(1), ["basic-3p"])
    # an iterator is read once (before: the first check used it up, and no table was chosen)
    assert [t.name for t in S.select_tables(S.load_suite(1), iter(["basic-4p"]))] == ["basic-4p"]
    with pytest.raises(ValueError, match=r"tables=5 \(int\); allowed: a list or tuple"):
        S.select_tables(S.load_suite(1), 5)


def test_a_changed_reference_model_is_refused(monkeypatch):
    suite = S.load_suite()
    ladder = S.read_ladder(suite)
    bad = {**ladder, "models": {**ladder["models"], "ppo-any": "0" * 64}}
    monkeypatch.setattr(S, "read_ladder", lambda s: bad)
    with pytest.raises(ValueError, match="reference agent ppo-any: its model file is not the one"):
        S.bench_agent("greedy", tables=["ono-2p"], **SMALL)
    # on an earlier version the refusal names the version that the shipped files measure on
    latest = max(S.suite_versions())
    with pytest.raises(ValueError, match=f"field makes a new suite version; version {latest} is "
                                         "measured with the shipped files"):
        S.bench_agent("greedy", 1, tables=["ono-2p"], **SMALL)


# ---- ratings ------------------------------------------------------------------------------
def _simulated(true: dict[str, float], pairs, players: int, games: int, rng) -> list[dict]:
    out = []
    for a, b in pairs:
        ga, gb = 10 ** (true[a] / 400), 10 ** (true[b] / 400)
        wins = rng.binomial(games, ga / (ga + (players - 1) * gb))
        out.append({"agent": a, "reference": b, "players": players, "games": games,
                    "wins": float(wins)})
    return out


@pytest.mark.parametrize("players", [2, 4])
def test_the_fit_recovers_known_ratings_and_placing_keeps_the_field(players):
    rng = np.random.default_rng(3)
    true = {"random": 850.0, "greedy": 1000.0, "color": 1010.0, "strong": 1200.0}
    names = list(true)
    pairs = [(a, b) for a in names for b in names if a != b]
    recs = _simulated(true, pairs, players, 20_000, rng)
    fit = S.fit_ratings(names, recs, "greedy", 1000.0)
    for n in names:
        assert fit[n]["rating"] == pytest.approx(true[n], abs=12), (n, fit[n])
        assert fit[n]["low"] <= fit[n]["rating"] <= fit[n]["high"]
    assert fit["greedy"]["low"] == fit["greedy"]["high"] == 1000.0
    # a new agent placed against the field, which stays where it is
    field = {n: fit[n]["rating"] for n in names}
    new = _simulated({**true, "new": 1100.0}, [("new", n) for n in names], players, 20_000, rng)
    rows = [{"reference": r["reference"], "games": r["games"], "wins": r["wins"]} for r in new]
    placed = S.place_agent(field, rows, players, 1000.0)
    assert placed["rating"] == pytest.approx(1100, abs=15)
    assert placed["low"] < placed["rating"] < placed["high"]
    # an agent that never wins keeps a finite rating (the virtual half-won game)
    lost = [{**r, "wins": 0.0} for r in rows]
    assert np.isfinite(S.place_agent(field, lost, players, 1000.0)["rating"])
    # counts that are not counts, named (before: a ZeroDivisionError for NaN or too many
    # wins, a rating of -68,410 for negative wins, a bare KeyError for an unknown name)
    ref = rows[0]["reference"]
    for bad, why in (({"wins": float("nan")}, "wins nan"), ({"wins": -5}, "wins -5"),
                     ({"wins": 10**9}, "wins 1000000000"),
                     ({"reference": "nobody"}, "reference 'nobody' is not in the field")):
        with pytest.raises(ValueError, match=re.escape(why)):
            S.place_agent(field, [{**rows[0], **bad}], players, 1000.0)
        with pytest.raises(ValueError, match=re.escape(why)):
            S.fit_ratings(names, [{**recs[0], **bad, "agent": recs[0]["agent"]}], "greedy", 1000.0)
    with pytest.raises(ValueError, match=rf"the field's rating of '{ref}' is nan"):
        S.place_agent({**field, ref: float("nan")}, rows[:1], players, 1000.0)
    # a fit at its rounding near a bound stops there (2,000 deals at 4 players: its steps
    # stay at some 1e-12 for ever), and is not refused as not converging
    near = S.place_agent({"greedy": 1000.0, "random": 200.0},
                         [{"reference": "random", "games": 48_000, "wins": 47_999.75}], 4, 1000.0)
    assert 2000 < near["rating"] < 2600


def test_an_agent_that_wins_all_of_millions_of_games_is_rated():
    """Before: fit_ratings stopped only on a step under 1e-10, and an agent that won all
    2,000,000 games of its pairing kept stepping by some 1e-10 (rounding) until "no
    convergence in 200 Newton steps", after every pairing of a ladder had been played."""
    from ono_env.arena.stats import ELO

    games = 2_000_000
    recs = [{"agent": "a", "reference": "b", "players": 2, "games": games, "wins": games / 2},
            {"agent": "c", "reference": "a", "players": 2, "games": games, "wins": float(games)}]
    fit = S.fit_ratings(["a", "b", "c"], recs, "a", 1000.0)
    # c against the anchor alone: its games and its virtual half-won one, 4,000,001 to 1
    assert fit["c"]["rating"] == pytest.approx(1000 + ELO * np.log(2 * games + 1), abs=1e-6)
    assert fit["b"]["rating"] == pytest.approx(1000.0, abs=1e-6)


def test_the_ladder_carries_over_only_pairings_with_the_same_key(monkeypatch):
    first = S.play_ladder(1, "basic-2p", deals=6, slow_deals=2)
    assert all(r["interval"] == S.LADDER_INTERVAL for r in first["pairings"])
    keys = [r["key"] for r in first["pairings"]]
    assert len(set(keys)) == len(keys)
    assert [(r["agent"], r["reference"]) for r in first["pairings"]][-6:] == [
        ("pimc:8", "greedy"), ("pimc:8", "ppo-any"), ("oracle-hands:8", "greedy"),
        ("oracle-hands:8", "ppo-any"), ("oracle:4", "greedy"), ("oracle:4", "ppo-any")]
    # version 2's slow reference agents play greedy alone; everything else keeps its key
    two = S.load_suite(2)
    assert two.ladder_slow_anchors == ("greedy",)
    t2 = two.tables["basic-2p"]
    plan = S.ladder_plan(t2, anchors=two.ladder_slow_anchors, deals=6, slow_deals=2)
    models = S.field_models([t2])
    again = [S.pairing_key(two, t2, x, y, n, models) for x, y, n in plan]
    assert set(again) < set(keys) and len(again) == len(keys) - 3
    # a changed deal count, model file or table gives another key
    one = S.load_suite(1)
    t1 = one.tables["basic-2p"]
    k = S.pairing_key(one, t1, "greedy", "ppo-any", 6, models)
    assert k in keys
    assert S.pairing_key(one, t1, "greedy", "ppo-any", 7, models) != k
    assert S.pairing_key(one, t1, "greedy", "ppo-any", 6, {**models, "ppo-any": "0" * 64}) != k
    assert S.pairing_key(one, one.tables["basic-4p"], "greedy", "ppo-any", 6, models) != k

    def no_games(*a, **kw):
        raise AssertionError("a carried-over pairing was played")

    monkeypatch.setattr(S, "play_pairing", no_games)
    carried = S.play_ladder(2, "basic-2p", deals=6, slow_deals=2,
                            reuse={r["key"]: {**r, "from_version": 1} for r in first["pairings"]})
    assert all(r["from_version"] == 1 for r in carried["pairings"])
    assert "(v1)" in S.format_ladder_markdown(carried, "cmd")
    with pytest.raises(AssertionError, match="was played"):   # a key not carried is played
        S.play_ladder(2, "basic-2p", deals=6, slow_deals=3,
                      reuse={r["key"]: r for r in first["pairings"]})


# ---- ono-bench ---------------------------------------------------------------------------
def test_the_same_agent_gets_the_same_card_and_the_card_has_its_format():
    a = S.bench_agent("greedy", tables=["basic-2p", "stacking-4p"], **SMALL)
    b = S.bench_agent("greedy", tables=["basic-2p", "stacking-4p"], **SMALL)
    assert _no_timing(a) == _no_timing(b)
    S.check_card(json.loads(json.dumps(a)))
    assert a["format"] == "ono-bench-card" and a["suite_version"] == S.load_suite().version
    assert a["agent"] == {"spec": "greedy", "kind": "name", "label": "greedy", "cheating": False}
    t = a["tables"]["stacking-4p"]
    assert t["players"] == 4 and t["fair_share"] == 0.25
    refs = [r["reference"] for r in t["rows"]]
    assert refs == S.load_suite().tables["stacking-4p"].names()
    for r in t["rows"]:
        assert r["deals"] == (2 if r["slow"] else 60) and r["games"] == 4 * r["deals"]
        assert 0 <= r["low"] <= r["rate"] <= r["high"] <= 1 or r["deals"] < 3
    # greedy against itself: the deals are mirrored, so its share is near the fair one
    me = next(r for r in a["tables"]["basic-2p"]["rows"] if r["reference"] == "greedy")
    assert abs(me["rate"] - 0.5) < 0.1
    # two worker processes play the same games
    c = S.bench_agent("greedy", tables=["basic-2p", "stacking-4p"], workers=2, **SMALL)
    assert c["timing"]["workers"] == 2 and _no_timing(c) == _no_timing(a)


def test_a_card_records_the_worker_processes_that_played(monkeypatch):
    """A pool starts no more processes than it has pairings (before: --workers 256 on the nine
    pairings of one table recorded 256). The processes stand in here, the games in one."""
    from ono_env.agents import make_agent

    def in_one(spec, suite, todo, workers, finished, digests):
        for t, ref, n in todo:
            r = S.play_pairing(t.rules, make_agent(spec, t.rules), make_agent(ref.name, t.rules),
                               n, t.seed, suite.batch_size)
            finished(t, ref, r, 0.0)
    monkeypatch.setattr(S, "_play_in_processes", in_one)
    card = S.bench_agent("greedy", tables=["basic-2p"], workers=256, deals=4, slow_deals=1)
    assert card["timing"]["workers"] == len(card["tables"]["basic-2p"]["rows"]) == 9


def test_counts_may_be_numpy_integers():
    # before: deals=np.int64(2) was refused as no whole number, which every other count takes
    card = S.bench_agent("greedy", tables=["basic-2p"], deals=np.int64(2), slow_deals=np.int64(1),
                         workers=np.int64(1))
    S.check_card(json.loads(json.dumps(card)))
    assert {r["deals"] for r in card["tables"]["basic-2p"]["rows"]} <= {1, 2}
    assert type(card["timing"]["workers"]) is int


def test_an_agent_with_a_planted_weakness_ranks_below_greedy(in_data):
    kw = {"tables": ["basic-2p"], "deals": 1500, "slow_deals": 2}
    red = S.bench_agent("planted:NamesRed", **kw)
    greedy = S.bench_agent("greedy", **kw)
    assert red["agent"]["kind"] == "class" and red["agent"]["label"] == "planted:NamesRed"
    r, g = red["tables"]["basic-2p"]["rating"], greedy["tables"]["basic-2p"]["rating"]
    assert r["high"] < g["low"], (r, g)
    row = next(x for x in red["tables"]["basic-2p"]["rows"] if x["reference"] == "greedy")
    assert row["high"] < 0.5


def test_a_card_cannot_hide_that_its_agent_cheats(tmp_path):
    """A registered name's card says it cheats as the agent it names does, and a model
    file's that it does not: before, an edited card printed ``oracle:2`` unmarked."""
    from ono_env.agents.learned import shipped_models

    card = S.bench_agent("oracle:2", tables=["basic-2p"], deals=2, slow_deals=1)
    assert card["agent"]["cheating"] is True
    S.check_card(json.loads(json.dumps(card)))
    for edit in ({"cheating": False}, {}):
        d = json.loads(json.dumps(card))
        d["agent"].pop("cheating")
        d["agent"].update(edit)
        with pytest.raises(ValueError, match=r"the agent's cheating = false; allowed: true "
                                             r"\(the agent 'oracle:2' is CHEATING\)"):
            S.check_card(d)
    # before: with its kind removed or made another, or under a label of its own, the edit
    # above printed "oracle:2 on benchmark suite ..." unmarked
    for edit, words in (({"kind": None}, r"cheating = false; allowed: true \(the agent "
                                         r"'oracle:2' is CHEATING\)"),
                        ({"kind": "object"}, r"cheating = false; allowed: true"),
                        ({"kind": "class"}, r"the agent's kind = 'class' for the spec 'oracle:2'; "
                                            r"allowed: 'name' \(what the spec names\) or 'object'"),
                        ({"kind": "model"}, r"the agent's kind = 'model' for the spec"),
                        ({"spec": "mine:Fair", "kind": "class"},
                         r"the agent's label = 'oracle:2'; allowed: its spec 'mine:Fair'")):
        d = json.loads(json.dumps(card))
        d["agent"]["cheating"] = False
        d["agent"].update(edit)
        if edit.get("kind", "") is None:
            d["agent"].pop("kind")
        with pytest.raises(ValueError, match=words):
            S.check_card(d)
    model = S.bench_agent(str(shipped_models()["ppo-basic-2p"]), tables=["basic-2p"],
                          deals=2, slow_deals=1)
    S.check_card(json.loads(json.dumps(model)))
    d = json.loads(json.dumps(model))
    d["agent"]["label"] = "oracle:2"   # a fair model shown under a cheating agent's name
    with pytest.raises(ValueError, match=r"the agent's label = 'oracle:2', the name of another "
                                         r"agent; allowed: the label of a model file"):
        S.check_card(d)
    model["agent"]["cheating"] = True
    with pytest.raises(ValueError, match=r"cheating = true; allowed: false \(a model file is fair\)"):
        S.check_card(model)


def test_a_card_of_a_registered_name_reads_in_a_process_that_never_registered_it():
    """Before: "not a result card (the agent's spec 'my-first' (kind name): unknown agent")
    for the card bench_agent had just written; its cheating flag is taken as a class's is."""
    from ono_env.agents import register_agent, unregister_agent

    class FirstLegal:
        def act(self, obs, mask, rng):
            return mask.argmax(axis=1)

    register_agent("my-first", lambda rules: FirstLegal())
    try:
        card = S.bench_agent("my-first", tables=["basic-2p"], deals=2, slow_deals=1)
    finally:
        unregister_agent("my-first")
    assert card["agent"]["kind"] == "name" and card["agent"]["cheating"] is False
    S.check_card(json.loads(json.dumps(card)))
    assert S.card_agent_label(card) == "my-first"


def test_a_card_of_an_object_is_rendered_and_one_of_another_packages_never_shows_a_builtin_name():
    # an ono_env object plays as its name's agent; another package's object named so is
    # labelled by its class, as the arena labels it (before: "greedy" on its card)
    from ono_env.agents import GreedyAgent
    from ono_env.rules import RuleSet

    rules = RuleSet.preset("basic", num_players=2)
    card = S.bench_agent(GreedyAgent(rules), tables=["basic-2p"], deals=2, slow_deals=1)
    assert (card["agent"]["kind"], card["agent"]["label"]) == ("object", "greedy")
    S.check_card(json.loads(json.dumps(card)))

    class Greedyish(GreedyAgent):
        name = "greedy"
    Greedyish.__module__ = "mine"
    card = S.bench_agent(Greedyish(rules), tables=["basic-2p"], deals=2, slow_deals=1)
    label = card["agent"]["label"]
    assert label == card["agent"]["spec"] and label.startswith("mine:") \
        and label.endswith(".Greedyish")
    S.check_card(json.loads(json.dumps(card)))


@pytest.mark.parametrize("workers", [1, 2])
def test_a_model_file_replaced_during_the_run_is_refused(tmp_path, workers):
    """Each pairing makes the agent again from its file: one replaced during the run (a
    training run writing to the same path) is refused, not mixed into a card that names
    the first model's SHA-256."""
    import shutil

    from ono_env.agents.learned import shipped_models

    path = tmp_path / "mine.safetensors"
    shutil.copy(shipped_models()["ppo-basic-2p"], path)

    def swap():   # once the agent is checked, before the first game: replaced as the
        # first pairing finished, two workers could finish every other pairing before the
        # swap on a loaded machine, and nothing was refused
        shutil.copy(shipped_models()["ppo-any"], path)

    with pytest.raises(ValueError, match=r"the agent's model changed during the run \(SHA-256 "):
        S.bench_agent(str(path), tables=["basic-2p"], deals=2, slow_deals=1, workers=workers,
                      before_games=swap)


@pytest.mark.parametrize("card_file", ["suite-3/timing/ppo-any", "suite-1/timing/pimc-8"])
def test_no_two_labels_of_the_plot_print_over_each_other(card_file):
    """Before: the field's labels sat at 35 degrees above and below their dots by turns, and
    overlapped wherever three agents were close (ten agents near 1000 at every table)."""
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    from ono_env.apps.bench_cli import card_figure

    card = S.read_card(Path(__file__).parent.parent / "docs" / "results" / card_file /
                       "card.json")
    fig = card_figure(card)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    # each label's text alone (an annotation's own extent takes in its line to the dot)
    boxes = [Text.get_window_extent(t, renderer) for t in fig.axes[0].texts]
    assert len(boxes) == sum(len(t["field"]) for t in card["tables"].values())
    axes_box = fig.axes[0].get_window_extent(renderer)
    crossed = [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]
    assert not crossed, crossed[:3]
    assert all(axes_box.x0 <= b.x0 and b.x1 <= axes_box.x1 for b in boxes)   # none cut off


def test_the_plot_marks_every_cheating_agent_as_the_text_card_does():
    """Before: the plot's title and its field's labels were the raw names, ``oracle:2`` and
    ``oracle-hands:8`` unmarked."""
    pytest.importorskip("matplotlib")
    from ono_env.apps.bench_cli import card_figure

    card = S.bench_agent("oracle:2", tables=["basic-2p"], deals=2, slow_deals=1)
    ax = card_figure(card).axes[0]
    assert ax.get_title().startswith("oracle:2 (cheating) on benchmark suite version")
    labels = {t.get_text() for t in ax.texts}
    rows = card["tables"]["basic-2p"]["rows"]
    assert labels == {f"{r['reference']} (cheating)" if r["cheating"] else r["reference"]
                      for r in rows}
    assert any(r["cheating"] for r in rows) and any(not r["cheating"] for r in rows)
    assert S.format_card(card).splitlines()[0].startswith("oracle:2 (cheating) on benchmark")


def test_an_agent_with_a_generator_of_its_own_gets_the_same_card_at_any_workers(in_data):
    """Each pairing plays an agent made afresh from its spec, at one worker as in worker
    processes: before, one object played every pairing at one worker, and an agent that
    seeds a generator of its own got another card at two (greedy 33.3% against 50.0%)."""
    kw = {"tables": ["basic-2p"], "deals": 6, "slow_deals": 1}
    one = S.bench_agent("planted:OwnSeeded", workers=1, **kw)
    two = S.bench_agent("planted:OwnSeeded", workers=2, **kw)
    assert _no_timing(one) == _no_timing(two)


def test_a_model_files_name_with_a_colon_is_read_as_the_model_and_imports_nothing(
        tmp_path, monkeypatch):
    # before: best:v1.safetensors read as module:Class, so best.py beside it ran
    import shutil

    from ono_env.agents.learned import LearnedAgent
    monkeypatch.chdir(tmp_path)
    shutil.copy(Path(__file__).resolve().parent.parent / "agents" / "models" /
                "ppo-basic-2p.safetensors", "best:v1.safetensors")
    (tmp_path / "best.py").write_text("open('ran', 'w').close()\n")
    agent = S.resolve_agent("best:v1.safetensors", resolve_rules("basic", num_players=2))
    assert isinstance(agent, LearnedAgent) and not (tmp_path / "ran").exists()
    assert not is_class_spec("best:v1.safetensors")


def test_module_class_loading_and_its_refusals(in_data):
    rules = resolve_rules("basic", num_players=2)
    assert is_class_spec("planted:NamesRed") and not is_class_spec("pimc:8")
    assert not is_class_spec("greedy") and not is_class_spec("a/b.safetensors")
    assert not is_class_spec("run_3:best.zip")
    agent = agent_from_class("planted:NamesRed", rules)
    assert agent.name == "names-red"
    # an optional first parameter named rules (a shipped agent's subclass) is given the table's
    # rules: left out, it meant classic at 4 players and failed at this table
    assert agent_from_class("planted:MyGreedy", rules).rules == rules
    # and so is a parameter named rules of a subclass passing *args, **kwargs on to its base
    # class, or a keyword-only one (each was called with none before)
    assert agent_from_class("planted:PassesOn", rules).rules == rules
    assert agent_from_class("planted:KeywordRules", rules).rules == rules
    agent_from_class("planted:Tuned", rules)   # another optional one: its constructor
    # asserts it was called with none
    with pytest.raises(ValueError, match=r"\(NoRules was called with no argument: a "
                                         r"constructor parameter named rules is given"):
        agent_from_class("planted:NoRules", rules)
    cases = {"nosuchmodule:Agent": "cannot import module 'nosuchmodule'",
             "planted:Missing": "has no 'Missing'",
             "planted:NoAct": "does not implement the agent protocol",
             # (before: "TypeError: 'int' object is not callable")
             "planted:ActNotCallable": "does not implement the agent protocol",
             # (before: given the hint, its observations being of another length here)
             "planted:RaisesOwn": r"failed on real positions of basic: RuntimeError: boom$",
             "planted:Illegal": "chose illegal action",
             # refused before any game (before: its written mask passed the check)
             "planted:MaskWriter": "chose illegal action",
             "planted:NeedsTwo": "takes 2 arguments",
             # a function is not called, however harmless: sys:exit, os:abort would be
             "planted:act_first": "'act_first' is a function, not a class; allowed: module:Class",
             "sys:exit": "'exit' is a builtin_function_or_method, not a class"}
    for spec, why in cases.items():
        with pytest.raises(ValueError, match=why) as refused:
            agent_from_class(spec, rules)
        # before: every failure of a class called with no argument ended with that hint,
        # which only an observation of another table's shape calls for
        assert "was called with no argument" not in str(refused.value)


@pytest.mark.parametrize("argv,why", [
    (["genius"], "unknown agent 'genius'"),
    (["nosuchmodule:Agent"], "cannot import module"),
    (["planted:NoAct", "--tables", "basic-2p"], "does not implement the agent protocol"),
    (["greedy", "--suite", "11"], "unknown suite version 11; there are: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10"),
    (["greedy", "--tables", "basic-5p"], "no table 'basic-5p'"),
    (["greedy", "--tables", "basic-2p", "basic-2p"], "table 'basic-2p' is named twice"),
    (["ppo-basic-2p"], "the tables it can play: basic-2p"),
    (["greedy", "--deals", "0"], "out of range"),
    ([], "give an AGENT"),
    (["greedy", "--render", "c.json"], "--render prints a saved card and takes no AGENT; got 'greedy'"),
    (["--render", "nosuch.json"], "cannot read"),
    (["--render", ""], "--render: a card file or an --out folder is needed; got ''"),   # was ./card.json
    (["greedy", "--tables", "basic-2p", "--plot", "/dev/null/x.png"], "--plot"),
    # before: another suffix changed the format, none had .png added, after the whole run
    (["greedy", "--tables", "basic-2p", "--plot", "card.txt"], "allowed: a file name ending .png"),
    (["greedy", "--tables", "basic-2p", "--plot", "noext"], "allowed: a file name ending .png"),
    # before: the options --render and --list do not read were ignored
    (["--render", "c.json", "--tables", "nope"], "--render plays nothing and takes only --plot; got --tables"),
    (["greedy", "--list"], "--list prints the suite's tables and takes only --suite; got agent"),
    # before: --suite had a default, so --render could not tell it was given
    (["--render", "c.json", "--suite", "3"], "--render plays nothing and takes only --plot; got --suite"),
    # before: named ray_address=, the library's argument, and was checked only at play time
    (["greedy", "--tables", "basic-2p", "--ray", "no such:1"], "--ray 'no such:1'; allowed: local"),
    (["greedy", "--tables", "basic-2p", "--ray", "127.0.0.1:1"], "--ray 127.0.0.1:1: cannot connect"),
    # before: Ray was reached (its seconds, or its 20 tries) before the agent was tried
    (["nosuchagent", "--tables", "basic-2p", "--ray", "127.0.0.1:1"], "unknown agent 'nosuchagent'"),
    # before: --workers was dropped without a word
    (["greedy", "--tables", "basic-2p", "--workers", "2", "--ray"], "--workers and --ray: with"),
    # before: a note that its card would not repeat, then this refusal
    (["pimc:0ms", "--tables", "basic-2p"], "agent 'pimc:0ms': a time budget is"),
])
def test_bad_input_is_one_line_before_anything_is_played(argv, why, in_data, capsys):
    quiet = [] if "--render" in argv or "--list" in argv else ["--no-progress"]
    assert bench_main([*argv, *quiet]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ono-bench: error: ") and "\n" not in err, err
    assert why in err, err


def test_worker_processes_that_do_not_fit_in_memory_are_refused_before_any_starts(
        in_data, capsys, monkeypatch):
    """Before: every worker was started, and the system killed some (a pool broken mid-run)
    or swapped the machine to a halt. Counted: the pairings played at once, at most one a
    worker (basic-2p has nine). The default is no more than fit."""
    import ono_env.game as G
    from ono_env.arena import check_workers_memory
    monkeypatch.setattr(G, "available_memory", lambda: 1 << 30)
    check_workers_memory(6, 99)      # 960 MiB
    check_workers_memory(256, 6)     # six pairings: six workers at most
    with pytest.raises(ValueError, match=r"^workers=7: 7 processes at once, each of at least "
                                         r"160 MiB \(Python, NumPy, the compiled engine and the "
                                         r"agents\), need 1\.1 GiB, and this machine has 1\.0 GiB "
                                         r"of memory free; allowed: fewer workers \(at most 6 "
                                         r"here\)$"):
        check_workers_memory(7, 99)
    assert bench_main(["greedy", "--tables", "basic-2p", "--workers", "64", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ono-bench: error: workers=64: 9 processes at once") and (
        "(at most 6 here)" in err and "\n" not in err), err

    def start(*args):
        raise RuntimeError("the workers start")

    monkeypatch.setattr(S, "_play_in_processes", start)
    with pytest.raises(RuntimeError, match="the workers start"):   # six fit in 1 GiB
        S.bench_agent("greedy", tables=["basic-2p"], deals=2, slow_deals=1, workers=6)
    # the default workers: no more than fit (before: 4 could be refused, a number the user
    # never gave): 200 MiB free fits one, which plays in this process
    import ono_env.apps.bench_cli as B
    asked = []

    def bench(*args, **kwargs):
        asked.append(kwargs["workers"])
        raise ValueError("stop here")

    monkeypatch.setattr(B, "bench_agent", bench)
    monkeypatch.setattr(B, "usable_cores", lambda: 8)
    for free, workers in ((200 << 20, 1), (500 << 20, 3), (1 << 40, 4)):
        monkeypatch.setattr(G, "available_memory", lambda free=free: free)
        assert bench_main(["greedy", "--tables", "basic-2p", "--no-progress"]) == 2
        assert asked.pop() == workers, free


@pytest.mark.parametrize("argv,why", [
    # before: --no-progress was taken and not read
    (["--list", "--no-progress"], "--list prints the suite's tables and takes only --suite; "
                                  "got --no-progress"),
    (["--render", "c.json", "--no-progress"], "--render plays nothing and takes only --plot; "
                                              "got --no-progress"),
    # before: every game was played, then a note, and no plot
    (["greedy", "--tables", "basic-2p", "--plot", "x.png"], "--plot needs matplotlib"),
])
def test_options_a_mode_does_not_read_and_a_plot_without_matplotlib_are_refused(
        argv, why, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    if "--plot" in argv:
        monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert bench_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"ono-bench: error: {why}" or (err.startswith("ono-bench: error: ")
                                                 and why in err and "\n" not in err), err
    assert list(tmp_path.iterdir()) == []


def test_a_card_that_appeared_in_out_during_the_run_is_kept(tmp_path, monkeypatch, capsys):
    # before: the card was written over whatever another run had put there since the checks
    import ono_env.apps.bench_cli as B

    real = B.bench_agent

    def another_run_writes(out, name):
        """A run into ``out`` while another run's ``name`` appears there as it ends."""
        def other_run_ends_first(*args, **kwargs):
            card = real(*args, **kwargs)
            (out / name).write_text("the other run's card")
            return card
        monkeypatch.setattr(B, "bench_agent", other_run_ends_first)
        assert bench_main(["greedy", "--tables", "stacking-2p", "--deals", "4", "--slow-deals",
                           "1", "--workers", "1", "--no-progress", "--out", str(out)]) == 2
        monkeypatch.setattr(B, "bench_agent", real)
        return capsys.readouterr().err

    out = tmp_path / "out"
    err = another_run_writes(out, "card.json")
    assert "a file appeared there during the run" in err and "pairings.jsonl" in err, err
    assert (out / "card.json").read_text() == "the other run's card"
    assert sorted(q.name for q in out.iterdir()) == ["card.json", "pairings.jsonl"]
    # a card.md that appeared: this run's card.json is not left beside it (before: it was, a
    # card that --render read as the folder's)
    md = tmp_path / "md"
    assert "pairings.jsonl" in another_run_writes(md, "card.md")
    assert (md / "card.md").read_text() == "the other run's card"
    assert sorted(q.name for q in md.iterdir()) == ["card.md", "pairings.jsonl"]
    # and a second run started while the first plays is refused by its pairings file
    started = tmp_path / "started"

    def first_run(*args, **kwargs):
        kwargs.pop("before_games")()   # its checks passed: its pairings file is made
        assert bench_main(["greedy", "--tables", "stacking-2p", "--deals", "4", "--out",
                           str(started), "--no-progress"]) == 2   # the second, meanwhile
        return real(*args, **kwargs)
    monkeypatch.setattr(B, "bench_agent", first_run)
    assert bench_main(["greedy", "--tables", "stacking-2p", "--deals", "4", "--slow-deals", "1",
                       "--workers", "1", "--no-progress", "--out", str(started)]) == 0
    assert "started' already holds pairings.jsonl (another run's" in capsys.readouterr().err


def test_the_lines_of_finished_pairings_mark_cheating_agents_and_name_shares(capsys):
    """Before: ``oracle:4: 0.0%``, and ``basic-4p greedy: 12.5%`` with nothing to say it is a
    share against a fair 25%."""
    assert bench_main(["greedy", "--tables", "basic-2p", "basic-4p", "--deals", "2",
                       "--slow-deals", "1", "--no-progress", "--workers", "1"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert re.search(r"^  basic-2p oracle:4 \(cheating\): \d+\.\d%$", "\n".join(lines), re.M)
    assert re.search(r"^  basic-4p greedy: \d+\.\d% \(win share; fair 25%\)$", "\n".join(lines),
                     re.M)
    assert re.search(r"^  basic-2p greedy: \d+\.\d%$", "\n".join(lines), re.M)


def test_an_option_whose_value_may_be_left_out_refuses_an_empty_one(capsys):
    """Before: ``--plot=`` was read as ``--plot`` alone, the default file."""
    from ono_env.apps.arena_cli import main as arena_main

    for main, argv, name in ((bench_main, ["greedy", "--tables", "basic-2p", "--plot="], "plot"),
                             (bench_main, ["greedy", "--ray="], "ray"),
                             (arena_main, ["random", "random", "--ray="], "ray")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.endswith(f": error: argument --{name}: an empty value; allowed: a value, or "
                            f"--{name} alone (see {err.split(':')[0]} --help)\n"), err


def test_the_card_is_written_before_it_is_printed(tmp_path):
    """Before: the card was printed first, and a standard output that could not be written
    lost it (and its pairings file) after every game was played."""
    import subprocess
    import sys

    code = ("import sys\nfrom ono_env.apps.bench_cli import main\nsys.exit(main(sys.argv[1:]))\n")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-c", code, "greedy", "--tables", "basic-2p",
                               "--deals", "2", "--slow-deals", "1", "--no-progress",
                               "--workers", "1", "--out", str(tmp_path / "o")],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=600)
    assert proc.returncode == 2 and "cannot write the standard output" in proc.stderr
    assert sorted(q.name for q in (tmp_path / "o").iterdir()) == ["card.json", "card.md"]
    S.read_card(tmp_path / "o" / "card.json")


def test_the_command_writes_renders_and_plots_a_card(tmp_path, capsys):
    out = tmp_path / "card"
    assert bench_main(["color", "--tables", "stacking-2p", "--deals", "40", "--slow-deals", "2",
                       "--out", str(out), "--plot", "--no-progress", "--workers", "1"]) == 0
    text = capsys.readouterr().out
    assert "stacking-2p: rating" in text and "oracle:4 (cheating)" in text
    card = S.read_card(out / "card.json")
    assert card["agent"]["label"] == "color"
    assert (out / "card.png").stat().st_size > 1000
    assert "| reference agent |" in (out / "card.md").read_text()
    assert bench_main(["--render", str(out / "card.json")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == text.splitlines()[0]
    # no earlier result is replaced (before: the card, and its plot, were overwritten)
    before = (out / "card.json").read_bytes(), (out / "card.png").read_bytes()
    assert bench_main(["greedy", "--tables", "stacking-2p", "--deals", "40", "--out", str(out),
                       "--no-progress", "--workers", "1"]) == 2
    # (before: "'.../card.json' already exists; give a new file name", of a folder)
    assert (f"--out: '{out}' already holds card.json, card.md (another run's: a card, or the "
            f"pairings of a run that plays or failed); give a new or empty folder"
            ) in capsys.readouterr().err
    # the folder stands for its card (before: "it is a folder")
    assert bench_main(["--render", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == text.splitlines()[0]
    assert bench_main(["--render", str(out / "card.json"), "--plot"]) == 2
    err = capsys.readouterr()
    assert err.out == "" and f"--plot: '{out / 'card.png'}' already exists" in err.err
    assert ((out / "card.json").read_bytes(), (out / "card.png").read_bytes()) == before
    # a label is drawn as written (before: '$\\bad$' was read as mathtext, and the plot failed)
    dollars = json.loads((out / "card.json").read_text())
    # (an object's card: a name's label is its spec's)
    dollars["agent"].update(kind="object", spec="$\\bad$", label="$\\bad$")
    (tmp_path / "dollars.json").write_text(json.dumps(dollars))
    assert bench_main(["--render", str(tmp_path / "dollars.json"), "--plot"]) == 0, \
        capsys.readouterr().err
    assert (tmp_path / "dollars.png").stat().st_size > 1000
    # the plot said as a run's files are (before: written in silence)
    assert capsys.readouterr().out.endswith(f"wrote {tmp_path / 'dollars.png'}\n")
    assert bench_main(["color", "--tables", "stacking-2p", "--deals", "4", "--slow-deals", "2",
                       "--plot", str(tmp_path / "alone.png"), "--no-progress", "--workers",
                       "1"]) == 0   # a plot without --out
    assert capsys.readouterr().out.endswith(f"wrote {tmp_path / 'alone.png'}\n")
    assert bench_main(["--list"]) == 0
    assert "wikipedia-4p" in capsys.readouterr().out
    # cards that are not cards
    bad = tmp_path / "bad.json"
    for content, why in [("[1, 2", "not JSON"), ('{"format": "x"}', "no \"format\""),
                         ('{"format": "ono-bench-card", "format_version": 1}',
                          "it has no 'suite_version'"),
                         ('{"format": "ono-bench-card", "format_version": true}',
                          "card format version True"),
                         ("[" * 100_000, "nested too deeply")]:
        bad.write_text(content)
        with pytest.raises(ValueError, match=why):
            S.read_card(bad)
    for where, value, why in [("agent", "no", "the agent's cheating = 'no'; allowed: true or false"),
                              ("field", "x", "field = 'x'; allowed: a mapping")]:
        damaged = json.loads((out / "card.json").read_text())
        holder = damaged["agent"] if where == "agent" else damaged["tables"]["stacking-2p"]
        holder["cheating" if where == "agent" else "field"] = value
        bad.write_text(json.dumps(damaged))
        with pytest.raises(ValueError, match=why):
            S.read_card(bad)
    broken = json.loads((out / "card.json").read_text())
    broken["tables"]["stacking-2p"]["field"]["greedy"] = "1000"
    bad.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match="the rating of 'greedy' = '1000'; allowed: a number"):
        S.read_card(bad)
    del broken["anchor"]
    bad.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match=r"not a result card \(it has no 'anchor'\)$"):
        S.read_card(bad)
    # before: printed as written (a ceiling not marked cheating, a reference twice, a blank
    # rating) or ignored (a key no card holds)
    card = json.loads((out / "card.json").read_text())
    rows = card["tables"]["stacking-2p"]["rows"]
    ceiling = next(k for k, r in enumerate(rows) if r["cheating"])
    for change, why in [
            (lambda d: d["tables"]["stacking-2p"]["rows"][ceiling].update(cheating=False),
             "cheating of .* = False; allowed: true \\(the suite's\\)"),
            (lambda d: d["tables"]["stacking-2p"]["rows"].append(rows[0]), "has two rows"),
            (lambda d: d["tables"]["stacking-2p"]["field"].pop(rows[0]["reference"]),
             "has a row and no rating in the field"),
            (lambda d: d.update(extra=1), "the key 'extra', which no card holds"),
            # before: these printed as written: an interval that does not hold the rating, a
            # card of one pairing in nine as a whole result, a key below the top level, wins
            # without games beyond any bound
            (lambda d: d["tables"]["stacking-2p"]["rating"].update(low=2000.0, high=10.0),
             r"its rating's interval \[2000, 10\] does not hold its rating"),
            (lambda d: d["tables"]["stacking-2p"].update(rows=rows[:1]),
             "table stacking-2p: no row for reference .*; allowed: a row for each"),
            (lambda d: d["tables"]["stacking-2p"]["rows"][0].update(evil=1),
             "table stacking-2p: a row: the key 'evil', which no card holds there"),
            (lambda d: d["tables"]["stacking-2p"].update(evil=1),
             "table stacking-2p: the key 'evil', which no card holds there"),
            (lambda d: d["agent"].update(evil=1), "the agent: the key 'evil'"),
            (lambda d: d["timing"].update(evil=1), "timing: the key 'evil'"),
            (lambda d: (d["tables"]["stacking-2p"]["rows"][0].pop("games"),
                        d["tables"]["stacking-2p"]["rows"][0].update(wins=-5)),
             "wins of .* = -5; allowed: a number from 0"),
            # before: printed as written: games that are not every seating of the deals, and
            # more games without a winner than games
            (lambda d: d["tables"]["stacking-2p"]["rows"][0].update(games=7),
             r"games of .* = 7; allowed: an integer from 80 to 80\)$"),
            (lambda d: d["tables"]["stacking-2p"]["rows"][0].update(deals=3),
             r"games of .* = 80; allowed: an integer from 6 to 6\)$"),
            (lambda d: d["tables"]["stacking-2p"]["rows"][0].update(no_winner=100),
             r"no_winner of .* = 100; allowed: an integer from 0 to 80\)$")]:
        damaged = json.loads(json.dumps(card))
        change(damaged)
        bad.write_text(json.dumps(damaged))
        with pytest.raises(ValueError, match=why):
            S.read_card(bad)
    bad.write_text(json.dumps(broken)[:-1] + ', "tables": {}}')   # before: the last kept
    with pytest.raises(ValueError, match=r"not a result card \(not JSON: the key "
                                         r"'tables' is given twice\)$"):
        S.read_card(bad)


# ---- the exploiter ---------------------------------------------------------------------
def test_an_exploiter_off_the_suite_names_the_seed_of_its_deals(tmp_path, monkeypatch):
    """At a table the suite lacks (3 players), exploit.json names the seed the deals were
    played from, and those deals give its result again (before: "seed 0", the run's seed,
    from which the deals' seed was derived unrecorded); and it names its files by whole paths
    (before: as relative as the run folder was given)."""
    import re

    from ono_env.agents import make_agent
    from ono_env.arena.suite import play_pairing
    from ono_env.rules import resolve_rules
    from ono_env.train.exploit import exploit

    monkeypatch.chdir(tmp_path)
    out = exploit("greedy", rules="basic", num_players=3, steps=16_384, deals=12, torch_threads=1,
                  run_dir="x")
    saved = json.loads((tmp_path / "x" / "exploit.json").read_text())
    assert saved["run_dir"] == str(tmp_path / "x") and saved["model"] == out["model"]
    assert Path(saved["model"]).is_absolute() and Path(saved["model"]).is_file()
    found = re.fullmatch(r"seed (\d+) \(derived from seed 0 and the table basic-3p\)",
                         out["deals_from"])
    assert found, out["deals_from"]
    rules = resolve_rules("basic", num_players=3)
    again = play_pairing(rules, make_agent(out["model"], rules), make_agent("greedy", rules), 12,
                         int(found.group(1)), 4096)
    assert again["rate"] == out["rate"] and again["deals"] == out["deals"]


def test_the_exploiter_of_a_planted_weakness_beats_it_by_more(in_data, tmp_path):
    from ono_env.train.exploit import exploit

    kw = dict(rules="basic", num_players=2, steps=120_000, deals=600, torch_threads=1)
    red = exploit("planted:NamesRed", run_dir=tmp_path / "red", **kw)
    greedy = exploit("greedy", run_dir=tmp_path / "greedy", **kw)
    assert red["deals_from"] == f"suite version {S.load_suite().version}, table basic-2p"
    assert red["rate"] > greedy["rate"] + 0.02, (red["rate"], greedy["rate"])
    saved = json.loads((tmp_path / "red" / "exploit.json").read_text())
    assert saved["rate"] == red["rate"] and saved["steps"] >= 120_000
    assert (tmp_path / "red" / "model.safetensors").is_file()


def test_a_card_names_the_model_each_table_was_played_with():
    # pimc-ppo is guided by a specialist where one exists, by ppo-any elsewhere: one digest
    # for the whole card named only the first table's
    from ono_env.agents.learned import model_sha256, shipped_models

    shipped = shipped_models()
    card = S.bench_agent("pimc-ppo:1", tables=["basic-2p", "ono-2p"], deals=2, slow_deals=1,
                         progress=False, workers=1)
    S.check_card(json.loads(json.dumps(card)))
    assert "sha256" not in card["agent"]
    assert card["tables"]["basic-2p"]["sha256"] == model_sha256(shipped["ppo-basic-2p"])
    assert card["tables"]["ono-2p"]["sha256"] == model_sha256(shipped["ppo-any"])
    one = S.bench_agent("ppo-any", tables=["basic-2p", "ono-2p"], deals=2, slow_deals=1,
                        progress=False, workers=1)
    assert one["agent"]["sha256"] == one["tables"]["ono-2p"]["sha256"] == model_sha256(shipped["ppo-any"])
    assert "sha256" not in S.bench_agent("color", tables=["ono-2p"], deals=2, slow_deals=1,
                                         progress=False, workers=1)["tables"]["ono-2p"]


def test_a_card_with_no_number_or_a_terminal_escape_is_refused(tmp_path):
    # before: a NaN rating was printed as nan and a label's escape reached the terminal
    good = json.loads(json.dumps(S.bench_agent("color", tables=["stacking-2p"], deals=4,
                                               slow_deals=1, progress=False, workers=1)))
    bad = tmp_path / "card.json"
    bad.write_text(json.dumps(good))
    S.read_card(bad)   # as written
    table = next(iter(good["tables"]))
    for edit, why in [
            (lambda d: d["tables"][table]["rating"].update(rating=float("nan")),
             r"not JSON: NaN, which JSON has not; allowed: finite numbers\)$"),
            (lambda d: d["anchor"].update(rating=float("inf")),
             r"not JSON: Infinity, which JSON has not; allowed: finite numbers\)$"),
            (lambda d: d["agent"].update(label="\x1b[2Jx"), "the agent's label"),
            # before: any JSON value
            (lambda d: d["agent"].update(spec=5), r"the agent's spec = 5 \(int\); allowed: text"),
            (lambda d: d["agent"].update(spec="\x1b[2J"),
             r"the agent's spec = .* holds U\+001B \(a control character\)"),
            (lambda d: d["tables"][table]["rows"][0].update(reference="a\nb"), "a reference's name"),
            # before: each was printed as it stood (a rate of -500.0%, a 309-digit rating)
            (lambda d: d["tables"][table]["rows"][0].update(rate=-5),
             r"rate of 'random' = -5; allowed: a number from 0 to 1\)$"),
            (lambda d: d["tables"][table]["rows"][0].update(low=0.9, rate=0.5),
             r"interval \[0.9, .*\] does not hold its rate 0.5; allowed: low <= rate <= high"),
            (lambda d: d["tables"][table]["rows"][0].update(deals=2.5),
             r"deals of 'random' = 2.5; allowed: an integer from 1 to 100,000,000"),
            (lambda d: d["tables"][table]["rows"][0].update(reference="nobody"),
             r"reference 'nobody'; allowed: the table's reference agents \("),
            (lambda d: d["tables"][table]["rows"][0].update(cheating="no"), r"allowed: true or false"),
            (lambda d: d["tables"][table]["rows"][0].update(games=-3), r"games of 'random' = -3"),
            (lambda d: d["tables"][table]["rating"].update(rating=1e308),
             r"its rating's rating = 1e\+308; allowed: a number from -1e\+06 to 1e\+06"),
            (lambda d: d["tables"][table]["rating"].update(rating=10 ** 400), r"its rating's rating"),
            (lambda d: d.update(suite_version=99), r"suite_version = 99; allowed: 1, 2, "),
            (lambda d: d.update(suite_version="10"), r"suite_version = '10'; allowed: "),
            (lambda d: d.update(tables={}), r"tables: allowed: a mapping of at least one"),
            (lambda d: d["tables"].update({"zzz-9p": d["tables"][table]}),
             r"table 'zzz-9p'; allowed: the tables of suite version"),
            (lambda d: d["tables"][table].update(players=0), r"players = 0; allowed: an integer"),
            (lambda d: d["tables"][table].update(rows=[]), r"rows: allowed: a list of at least one"),
            (lambda d: d.update(timing="x"), r"timing = 'x'; allowed: a mapping"),
            (lambda d: d["agent"].update(sha256="abc"), r"the agent's sha256 = 'abc'; allowed: a SHA"),
            (lambda d: d["tables"][table].update(sha256=7), r"sha256 = 7; allowed: a SHA-256 in 64"),
            # before: each was printed as it stood (ratings placed on "greedy = 5", a rules
            # name not the table's), or taken whatever it held
            (lambda d: d["anchor"].update(rating=5.0),
             r"the anchor's rating = 5.0; allowed: 1000.0 \(suite version \d+'s\)"),
            (lambda d: d["anchor"].update(agent="random"), r"the anchor's agent = 'random'"),
            (lambda d: d["agent"].update(kind="evil"),
             r"the agent's kind = 'evil'; allowed: class, model, name, object"),
            (lambda d: d["tables"][table].update(rules="classic"),
             r"rules = 'classic'; allowed: 'stacking' \(the suite's\)"),
            (lambda d: d["tables"][table]["rows"][0].update(slow=True),
             r"slow of 'random' = True; allowed: false \(the suite's\)"),
            (lambda d: d["timing"].update(workers=-1), r"timing: workers = -1; allowed: an int"),
            (lambda d: d["timing"].update(seconds=-5), r"timing: seconds = -5; allowed: a number"),
            (lambda d: d["timing"].update(tables=[]), r"timing: tables = \[\]; allowed: a mapping"),
            (lambda d: d["timing"]["tables"].update({"basic-2p": 1.0}),
             r"timing: table 'basic-2p'; allowed: the card's tables \(stacking-2p\)"),
            # before: printed as written, beside a header that said otherwise
            (lambda d: d["tables"][table]["field"].update(greedy=-500),
             r"the rating of 'greedy' = -500; allowed: 1000 \(suite version \d+'s published "
             r"ladder; a card written before that ladder was published again is not read"),
            (lambda d: d["tables"][table]["field"].update(nobody=1000),
             r"the field's 'nobody'; allowed: the table's reference agents"),
            (lambda d: d["tables"][table]["rows"][0].update(wins=0),
             r"wins of 'random' = 0; allowed: its rate times its games"),
            (lambda d: d["tables"][table]["rating"].update(
                {k: v + 100 for k, v in d["tables"][table]["rating"].items()}),
             r"its rating .*; allowed: the one its rows give on the published scale"),
            # before: rows without their (optional) wins left any rating unchecked
            (lambda d: [r.pop("wins") for r in d["tables"][table]["rows"]] and d["tables"][
                table]["rating"].update(rating=3000, low=2999, high=3001),
             r"its rating 3000 \[2999, 3001\]; allowed: the one its rows give on the published")]:
        d = json.loads(json.dumps(good))
        edit(d)
        bad.write_text(json.dumps(d))
        with pytest.raises(ValueError, match=why):
            S.read_card(bad)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_agent_that_fails_in_a_pairing_is_named_with_the_table(workers, in_data, capsys):
    # before: "RuntimeError: planted failure" alone, and with two workers only after every
    # other pairing had been played
    assert bench_main(["planted:FailsAtFour", "--tables", "basic-4p", "--deals", "4",
                       "--slow-deals", "1", "--workers", workers, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("ono-bench: error: the pairing at basic-4p against ")
    # the agent named too (before: the driver's note was dropped: the reference's or ours?)
    assert err.endswith(": RuntimeError: planted failure (raised by the agent fails-at-four)")


def test_a_run_that_fails_late_keeps_the_pairings_that_finished(in_data, tmp_path, capsys):
    # before: a failure at the last table dropped every pairing played before it
    out = tmp_path / "out"
    assert bench_main(["planted:FailsAtFour", "--tables", "basic-2p", "basic-4p", "--deals", "4",
                       "--slow-deals", "1", "--workers", "1", "--no-progress",
                       "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    field = S.load_suite().tables["basic-2p"].field
    assert err.startswith("ono-bench: error: the pairing at basic-4p against ")
    assert err.endswith(f"; the {len(field)} pairing(s) that finished before it are in "
                        f"{out / 'pairings.jsonl'} (one JSON object a line)"), err
    rows = [json.loads(line) for line in (out / "pairings.jsonl").read_text().splitlines()]
    assert [r["table"] for r in rows] == ["basic-2p"] * len(field)
    assert sorted(r["reference"] for r in rows) == sorted(ref.name for ref in field)
    assert all(0 <= r["rate"] <= 1 and r["deals"] >= 1 for r in rows)
    assert sorted(q.name for q in out.iterdir()) == ["pairings.jsonl"]
    # a folder holding them is refused, as one holding a card: nothing is replaced
    assert bench_main(["greedy", "--tables", "stacking-2p", "--out", str(out)]) == 2
    assert "pairings.jsonl" in capsys.readouterr().err
    # a run that ends writes its card and leaves no pairings file (the card holds them)
    done = tmp_path / "done"
    assert bench_main(["greedy", "--tables", "stacking-2p", "--deals", "4", "--slow-deals", "1",
                       "--workers", "1", "--no-progress", "--out", str(done)]) == 0
    assert sorted(q.name for q in done.iterdir()) == ["card.json", "card.md"]


def test_an_exploiters_folder_is_held_while_it_is_measured(tmp_path, monkeypatch):
    """Before: train() let the folder go as it ended, and a second run could start in it
    during the measurement and replace the model that exploit.json names."""
    import ono_env.train.exploit as X
    from ono_env.train.run import lock_run_dir

    real = X.play_pairing
    tried = []

    def measured(*args, **kwargs):
        with pytest.raises(ValueError, match=r"a run is training in .* now"):
            lock_run_dir(tmp_path / "x")
        tried.append(True)
        return real(*args, **kwargs)
    monkeypatch.setattr(X, "play_pairing", measured)
    X.exploit("greedy", steps=X.rollout_steps("basic", 2), deals=2, torch_threads=1,
              run_dir=tmp_path / "x")
    assert tried and (tmp_path / "x" / "exploit.json").is_file()
    lock_run_dir(tmp_path / "x").close()   # and let go at the end


def test_an_exploiter_whose_measurement_fails_keeps_its_training(tmp_path, monkeypatch):
    # before: the error alone; the trained model was there but nothing said so, and no
    # exploit.json recorded the training
    import ono_env.train.exploit as X

    def fails(*args, **kwargs):
        raise RuntimeError("planted failure")
    monkeypatch.setattr(X, "play_pairing", fails)
    with pytest.raises(ValueError, match=r"the exploiter trained and was saved \(.*model"
                                         r"\.safetensors; .*exploit\.json holds the training\), "
                                         r"but the measurement failed: RuntimeError: planted"):
        X.exploit("greedy", steps=X.rollout_steps("basic", 2), deals=2, torch_threads=1,
                  run_dir=tmp_path / "x #y")
    # the folder as named: it was pasted into a run_dir= override and read as YAML, so
    # '#y' was a comment (the run went to x/) and '~' or 'null' to runs/exploit-...
    saved = json.loads((tmp_path / "x #y" / "exploit.json").read_text())
    assert saved["measure_error"] == "RuntimeError: planted failure" and saved["steps"] > 0
    assert (tmp_path / "x #y" / "model.safetensors").is_file()
    assert not (tmp_path / "x").exists()


def test_an_exploiter_whose_target_fails_in_training_says_so_and_names_its_folder(
        tmp_path, monkeypatch):
    """Before: the target's error alone, naming neither the training nor the folder it left
    (which the same --out then refuses)."""
    import ono_env.train.exploit as X
    from ono_env.agents import register_agent, unregister_agent

    class FailsLate:
        def __init__(self):
            self.calls = 0

        def act(self, obs, mask, rng):
            self.calls += 1
            if self.calls > 20:
                raise ValueError("planted failure")
            return mask.argmax(axis=1)

    monkeypatch.chdir(tmp_path)
    register_agent("fails-late", lambda rules: FailsLate())
    try:
        for run_dir, folder in ((tmp_path / "x", re.escape(repr(str(tmp_path / "x")))),
                                (None, r"'runs/exploit-fails-late-\d{8}-\d{6}(-\d+)?'")):
            with pytest.raises(ValueError, match=r"^the exploiter's training stopped, no model "
                               rf"saved \(its run folder {folder} keeps the config and logs\): "
                               r".*planted failure"):
                X.exploit("fails-late", steps=X.rollout_steps("basic", 2), deals=2, torch_threads=1,
                          run_dir=run_dir)
    finally:
        unregister_agent("fails-late")
    # a refusal before the training began is said as it was
    with pytest.raises(ValueError, match=r"^(?!the exploiter's training)"):
        X.exploit("greedy", steps=X.rollout_steps("basic", 2), deals=2, torch_threads=1,
                  run_dir=tmp_path / "x")


def test_an_exploiter_stopped_during_its_measurement_says_so_and_keeps_its_training(
        tmp_path, monkeypatch, capsys):
    """Before: SIGTERM during the measurement ended ono-exploit without a word, and no
    exploit.json recorded the training."""
    import signal

    import ono_env.train.exploit as X

    def signalled(*args, **kwargs):
        signal.raise_signal(signal.SIGTERM)
        raise AssertionError("the measurement went on after the signal")
    monkeypatch.setattr(X, "play_pairing", signalled)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stopped:
        X.exploit("greedy", steps=X.rollout_steps("basic", 2), deals=2, torch_threads=1,
                  run_dir=tmp_path / "x", stop_signals=("SIGINT", "SIGTERM"))
    assert stopped.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before
    assert re.search(r"interrupted during the measurement: the exploiter was saved \(.*model"
                     r"\.safetensors; .*exploit\.json holds the training\); not measured",
                     capsys.readouterr().err)
    saved = json.loads((tmp_path / "x" / "exploit.json").read_text())
    assert saved["measure_error"] == "interrupted" and saved["steps"] > 0


def test_with_workers_a_failed_pairing_drops_the_pairings_not_begun(in_data, tmp_path, monkeypatch):
    # the 4-player table's pairings go first; when they fail, the 2-player ones not begun are
    # dropped (before, the pool's own shutdown could undo the cancelling)
    mark = tmp_path / "made"
    monkeypatch.setenv("ONO_TEST_MARK", str(mark))
    assert bench_main(["planted:FailsAtFour", "--tables", "basic-2p", "basic-4p", "--deals", "400",
                       "--slow-deals", "2", "--workers", "2", "--no-progress"]) == 2
    made = mark.read_text().split()
    two = len(S.load_suite().tables["basic-2p"].field)
    # made once in this process per table, then once per pairing begun
    assert made.count("2") < 1 + two // 2, made


def test_a_label_a_card_could_not_hold_is_refused_before_any_game():
    # before: the card was written after the games, then refused by --render; an agent's own
    # name is shown with '?' for a character that is not printable, as in the arena
    from ono_env.agents.rule_based import GreedyAgent
    agent = GreedyAgent(S.load_suite().tables["basic-2p"].rules)
    agent.name = "greedy\x1b[2J"
    card = S.bench_agent(agent, tables=["basic-2p"], deals=1, slow_deals=1, progress=False,
                         workers=1)
    assert card["agent"]["label"] == "greedy?[2J"
    S.check_card(card)
    agent.name = "g" * (S.MAX_CARD_TEXT + 1)
    with pytest.raises(ValueError, match="the agent's label"):
        S.bench_agent(agent, tables=["basic-2p"], deals=1, slow_deals=1, progress=False, workers=1)



def test_a_model_path_a_card_could_not_hold_is_refused_before_any_game(tmp_path):
    # before: written as the card's spec, which read_card then refused
    import shutil

    from ono_env.agents.learned import shipped_models
    deep = tmp_path / ("d" * 120) / ("e" * 60)
    deep.mkdir(parents=True)
    model = shutil.copy(shipped_models()["ppo-basic-2p"], deep / "m.safetensors")
    assert len(str(model)) > S.MAX_CARD_TEXT
    with pytest.raises(ValueError, match=r"the agent's spec \(a model's path: at most 200 "
                                         r"characters\) is .* characters long"):
        S.bench_agent(str(model), tables=["basic-2p"], deals=1, slow_deals=1, progress=False,
                      workers=1)


def test_a_pairing_that_never_wins_has_an_interval_with_width():
    # random never wins a 500-point classic match against greedy: the share is 0 at every
    # deal, and the suite's interval is the arena's (before: 0.0 [0.0, 0.0])
    from ono_env.agents import make_agent
    from ono_env.arena.stats import bounded_mean_interval
    from ono_env.arena.suite import play_pairing
    from ono_env.rules import RuleSet

    rules = RuleSet.preset("classic", num_players=2)
    r = play_pairing(rules, make_agent("random", rules), make_agent("greedy", rules), 6, 0, 64)
    assert r["rate"] == 0.0 and r["low"] == 0.0
    assert r["high"] == pytest.approx(bounded_mean_interval([0.0] * 6, 0.0, 1.0, 2)[2])
    assert r["high"] > 0.1


def test_a_rating_of_every_game_won_or_lost_is_marked_a_bound():
    """Every game won (or lost): the likelihood's maximum is at infinity, and the rating the
    scale gives comes from its virtual game and the games played (before: printed as a
    measure with a 95% interval)."""
    root = Path(__file__).resolve().parents[1]
    data = json.loads((root / "docs/results/suite-10/classic-2p.json").read_text())
    page = S.format_ladder_markdown(data, "cmd")
    ratings = page.split("Pairings:")[0]   # the ratings' table
    rows = {line.split(" | ")[0].strip("| "): line for line in ratings.splitlines()
            if line.startswith("| ") and " | " in line}
    assert "every game won: a bound, not a measure" in rows["oracle:4 (cheating)"]
    assert "every game lost: a bound, not a measure" in rows["random"]
    assert "bound" not in rows["ppo-any"]
    # a pairing as the reference counts too: one that won every game as the agent but lost
    # some as the reference is measured, not a bound
    def pair(a, b, rate):
        return {"agent": a, "reference": b, "deals": 10, "rate": rate, "low": 0.0,
                "high": 1.0, "seconds": 1.0}
    data = {"players": 2, "table": "t", "suite_version": 0, "rules": "basic", "cheating": [],
            "ratings": {n: {"rating": 1000.0, "low": 900.0, "high": 1100.0}
                        for n in ("x", "y", "z")},
            "pairings": [pair("x", "z", 1.0), pair("z", "x", 0.25), pair("y", "z", 1.0),
                         pair("z", "y", 0.0)]}
    ratings = S.format_ladder_markdown(data, "cmd").split("Pairings:")[0]
    lines = {line.split(" | ")[0].strip("| "): line for line in ratings.splitlines()
             if line.startswith("| ") and " | " in line}
    assert "bound" not in lines["x"] and "every game won" in lines["y"]
    # the number is the games played: 1000 + 400 log10(2 x games), for one pairing
    placed = S.place_agent({"greedy": 1000.0}, [{"reference": "greedy", "games": 4000,
                                                 "wins": 4000}], 2, 1000.0)
    assert placed["rating"] == pytest.approx(1000 + 400 * np.log10(2 * 4000), abs=1)
    card = json.loads((root / "docs/results/suite-3/timing/greedy/card.json").read_text())
    t = next(iter(card["tables"].values()))
    assert "bound" not in S.format_card(card)
    for row in t["rows"]:
        row["rate"] = 0.0
    assert "every game lost: a bound, not a measure" in S.format_card(card)
    assert "every game lost: a bound, not a measure" in S.format_card_markdown(card)


def test_a_ladder_record_of_before_gets_todays_interval_exactly():
    # a record holds the rate, the deal count and the plain normal interval (clipped to
    # [0, 1]); with_todays_interval gives what bounded_mean_interval gives from the per-deal
    # shares themselves, which a record does not keep
    from ono_env.arena.stats import bounded_mean_interval, mean_interval

    rng = np.random.default_rng(5)
    for n, p in [(20, 0.97), (200, 0.5), (2000, 0.0), (2000, 1.0), (2000, 0.9995), (150, 0.03)]:
        x = (rng.random(n) < p).astype(float)
        _m, lo, hi = mean_interval(x)
        rec = {"agent": "a", "reference": "b", "rate": float(x.mean()), "deals": n, "games": n,
               "low": max(0.0, lo) if n > 1 else 0.0, "high": min(1.0, hi) if n > 1 else 1.0}
        if x.min() == x.max():
            rec["low"] = rec["high"] = float(x[0])    # as the files of before wrote them
        new = S.with_todays_interval(rec)
        _m, low, high = bounded_mean_interval(x, 0.0, 1.0)
        assert (new["low"], new["high"]) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
        assert new["interval"] == S.LADDER_INTERVAL
        assert S.with_todays_interval(new) is new      # a record of today's is kept as it is
    with pytest.raises(ValueError, match="clipped at both ends"):
        S.with_todays_interval({"agent": "a", "reference": "b", "rate": 0.5, "deals": 4,
                                "low": 0.0, "high": 1.0})
    # neither games nor players: refused, not taken as one game a deal (before: the interval
    # of two deals at each end, labelled as today's)
    for size in ({}, {"games": 0, "deals": 0}, {"games": 3}):
        with pytest.raises(ValueError, match="its games per deal are not known"):
            S.with_todays_interval({"agent": "a", "reference": "b", "rate": 0.5, "deals": 4,
                                    "low": 0.4, "high": 0.6, **size})
    # a record of 2 to 6 December, two deals added at each end: taken out again, and the
    # interval made in games (its games per deal from games / deals, else its players)
    for n, g, p in [(20, 2, 0.9), (200, 24, 0.3), (2000, 6, 0.0), (25, 4, 0.17), (5, 10, 0.1)]:
        x = rng.binomial(g, p, size=n) / g
        m, lo, hi = bounded_mean_interval(x, 0.0, 1.0)
        for size in ({"games": n * g}, {"players": g}, {"games": float(n * g)}):
            new = S.with_todays_interval({"agent": "a", "reference": "b", "rate": m, "low": lo,
                                          "high": hi, "deals": n, "interval": "add-two", **size})
            _m, low, high = bounded_mean_interval(x, 0.0, 1.0, g)
            assert (new["low"], new["high"]) == (pytest.approx(low, abs=1e-12),
                                                 pytest.approx(high, abs=1e-12))
            assert new["interval"] == S.LADDER_INTERVAL == "add-two-games"


def test_a_cheating_agent_is_marked_on_its_card_and_in_a_ladders_pairings():
    # before: "oracle:4 on benchmark suite version ..." and "| oracle:4 | greedy |" unmarked
    card = {"agent": {"label": "oracle:4", "cheating": True}, "suite_version": 10,
            "package_version": "x", "anchor": {"agent": "greedy", "rating": 1000}, "tables": {}}
    assert S.format_card(card).startswith("oracle:4 (cheating) on benchmark suite version 10")
    assert S.format_card_markdown(card).startswith("Agent `oracle:4 (cheating)`, benchmark")
    page = (Path(__file__).parent.parent / "docs/results/suite-10/basic-2p.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| oracle")]
    assert rows and all(line.split(" | ")[0].endswith("(cheating)") for line in rows)
    data = json.loads((Path(__file__).parent.parent / "docs/results/suite-10/basic-2p.json").read_text())
    assert S.format_ladder_markdown(data, data["command"]).rstrip() == page.rstrip()


def test_bench_agent_refuses_one_table_given_as_text():
    # before: "basic-2p" was read letter by letter ("no table 'b'"), and "" as every table
    from ono_env.arena.suite import bench_agent

    for text in ("basic-2p", ""):
        with pytest.raises(ValueError, match=r"tables=.* \(str\); allowed: a list or tuple of "
                                             r"table names"):
            bench_agent("greedy", tables=text, deals=2)


def test_a_plot_never_replaces_a_file_that_appeared_at_its_path(tmp_path):
    # before: savefig wrote over whatever had appeared there since the run's checks
    pytest.importorskip("matplotlib")
    from ono_env.apps.bench_cli import plot_card
    card = S.read_card(Path(__file__).resolve().parents[1] / "docs" / "results" / "suite-1" /
                       "timing" / "greedy" / "card.json")
    other = tmp_path / "card.png"
    other.write_bytes(b"another run's plot")
    with pytest.raises(ValueError, match=r"cannot write --plot .*: a file appeared there"):
        plot_card(card, other)
    assert other.read_bytes() == b"another run's plot"
    assert plot_card(card, tmp_path / "new.png").read_bytes()[:4] == b"\x89PNG"


def test_the_default_workers_count_the_cores_this_process_may_use(monkeypatch):
    # before: os.cpu_count(), the machine's, where a container or taskset allows fewer
    import os

    import ono_env.apps.bench_cli as B

    seen = []
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    monkeypatch.setattr(B, "bench_agent", lambda *a, **kw: seen.append(kw["workers"]) or {})
    bench_main(["greedy", "--tables", "basic-2p", "--deals", "2", "--no-progress"])
    assert seen == [1]
