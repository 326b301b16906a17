"""Replays: the file format, playing one back, and the three writers (arena, ono-play, web)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from ono_env.agents.base import RandomAgent
from ono_env.apps.arena_cli import main as arena_main
from ono_env.apps.play import play
from ono_env.arena import run_arena
from ono_env.cards import action_name
from ono_env.game import VecGame, game_seeds
from ono_env.replay import (
    MAX_REPLAY_BYTES,
    Replay,
    agent_thinking,
    clean_label,
    new_game,
    replay_positions,
    search_thinking,
)
from ono_env.rules import RuleSet

FIELDS = ("entrants", "wins", "scores", "length", "truncated")


@pytest.mark.parametrize("agents, rules, players", [
    (["random", "random"], "basic", 2),            # the compiled random loop
    (["greedy", "random"], "basic", 2),            # Python agents and the compiled one
    (["ppo-basic-2p", "color"], "basic", 2),       # a learned agent: thinking recorded
    (["random", "defensive", "random"], "classic", 3),   # a match, 3 players
])
def test_recorded_arena_games_replay_to_the_same_end_and_recording_changes_nothing(
        agents, rules, players):
    kw = dict(num_players=players, num_games=240, seed=4, batch_size=50, rating=False)
    plain = run_arena(agents, rules, **kw)
    rec = run_arena(agents, rules, record=6, **kw)
    for f in FIELDS:
        assert np.array_equal(getattr(plain.records, f), getattr(rec.records, f)), f
    assert len(rec.replays) == 6 and plain.replays == []
    assert len(rec.replay_rows) == 6
    for r, row in zip(rec.replays, rec.replay_rows):
        again = Replay.from_json(r.to_json())
        positions = replay_positions(again)          # checks every action and the result
        last = positions[-1]
        assert last["terminated"] or last["truncated"]
        assert last["decisions"] == r.result["decisions"] == len(r.actions)
        # the replay is the arena's game of that row: same seats, length, winner, scores
        assert r.players == [rec.labels[e] for e in rec.records.entrants[row]]
        assert r.result["decisions"] == rec.records.length[row]
        assert r.result["scores"] == rec.records.scores[row].tolist()
        won = rec.records.wins[row]
        assert (r.result["winner"] is None) == (won.sum() == 0)
        if r.result["winner"] is not None and rules == "basic":
            assert won[r.result["winner"]] == 1
        if agents[0] == "ppo-basic-2p":
            seat = r.players.index("ppo-basic-2p")
            mine = [t for k, t in enumerate(r.thinking) if positions[k]["current_player"] == seat]
            assert mine and all(t is not None and t["agent"] == "ppo-basic-2p" for t in mine)
            assert all(abs(sum(t["probs"].values()) - 1) < 1e-3 and t["value"] is not None
                       for t in mine)
        else:
            assert all(t is None for t in r.thinking)   # rule-based agents report nothing
    # the same seed draws the same sample
    again = run_arena(agents, rules, record=6, **kw)
    assert [r.to_dict() | {"saved_at": ""} for r in again.replays] == \
           [r.to_dict() | {"saved_at": ""} for r in rec.replays]


class _Named(RandomAgent):
    """A random agent under a given name (its arena label)."""

    def __init__(self, name):
        super().__init__()
        self.name = name


def test_arena_replays_label_each_seat_apart_and_its_thinking_by_the_seat_that_acted():
    """Before: labels past 80 characters were cut to their first 80, so two entrants alike
    there read the same in every seat (and past four players, where the order around the
    table is drawn per deal, nothing told them apart); and one agent object given twice had
    every recorded decision's thinking labelled by its first seat ("ppo-any#1")."""
    from ono_env.agents import make_agent

    rules = RuleSet.preset("basic", num_players=5)
    learned = make_agent("ppo-any", rules)
    long_a, long_b = "m" * 84 + "_a", "m" * 84 + "_b"
    res = run_arena([learned, _Named(long_a), learned, _Named(long_b), "greedy"], rules,
                    num_games=10, seed=3, rating=False, record=10)
    acted = set()
    for r, row in zip(res.replays, res.replay_rows):
        assert len(set(r.players)) == 5 and all(len(p) <= 80 for p in r.players), r.players
        assert r.players == [clean_label(res.labels[e]) for e in res.records.entrants[row]]
        assert {p for p in r.players if p.startswith("m")} and all(
            p.endswith(("_a", "_b")) for p in r.players if p.startswith("m"))
        positions = replay_positions(Replay.from_json(r.to_json()))
        for k, t in enumerate(r.thinking):
            seat = positions[k]["current_player"]
            if t is not None:
                assert t["agent"] == r.players[seat], (t["agent"], r.players)
                acted.add(t["agent"])
    assert acted == {"ppo-any#1", "ppo-any#2"}


def test_replay_positions_follow_the_engine():
    game = VecGame("classic", 1, seed=9, num_players=3)
    replay = Replay.start(game, 0, int(game_seeds(9, 1)[0]), ["a", "b", "c"], "test")
    rng = np.random.default_rng(1)
    positions = [game.to_dict(0)]
    while not game.finished[0] and len(positions) < 60:
        legal = np.flatnonzero(game.legal_mask()[0])
        a = int(rng.choice(legal))
        replay.add(a)
        game.step(np.array([a]))
        positions.append(game.to_dict(0))
    assert not game.finished[0]   # cut at 60 positions: not finished, so no result to check
    assert replay_positions(replay, check_result=False) == positions
    assert new_game(replay.rules, replay.game_seed).to_dict(0) == positions[0]


def _replay_dict():
    r = run_arena(["greedy", "random"], "basic", num_players=2, num_games=20, seed=1,
                  rating=False, record=1).replays[0]
    return r.to_dict()


def test_replay_files_round_trip(tmp_path):
    d = _replay_dict()
    r = Replay.from_dict(d)
    path = r.save(tmp_path / "sub" / "game.json")
    back = Replay.load(path)
    assert back.to_dict() == d
    assert json.loads(path.read_text())["format"] == "ono_env-replay"


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("actions"), "actions: missing"),
    (lambda d: d.update(extra=1), "extra: unknown key"),
    (lambda d: d.update(format="pickle"), "format"),
    (lambda d: d.update(format_version=2), "format_version"),
    (lambda d: d.update(game_seed=12), "game_seed"),
    (lambda d: d.update(game_seed=str(2**64)), "game_seed"),
    # other scripts' digits, a superscript (int() then failed with no key named), a leading 0
    (lambda d: d.update(game_seed="\u0661\u0662"), "game_seed: '.*'; allowed: a decimal string"),
    (lambda d: d.update(game_seed="\u00b2"), "game_seed: '.*'; allowed: a decimal string"),
    (lambda d: d.update(game_seed="012"), "game_seed: '012'; allowed: a decimal string"),
    # a number too large for a float (before: an OverflowError, a 500 at the web table)
    (lambda d: d["thinking"].__setitem__(0, {"agent": "x", "probs": {}, "value": 10**400}),
     r"thinking\[0\]: value <an integer of 401 digits>; allowed: a finite number or null"),
    (lambda d: d["thinking"].__setitem__(0, {"agent": "x", "probs": {}, "value": None,
                                             "values": {"draw": -10**400}}),
     r"thinking\[0\]: values\['draw'\]=<a negative integer of 401 digits>; allowed: a finite number"),
    (lambda d: d.update(players=["a"]), "players"),
    # an actions list cut short: both lengths said (before: "thinking: list", as if its fault)
    (lambda d: d["actions"].pop(), r"^replay: thinking: list of (\d+) entries; allowed: a list "
                                   r"of (?!\1)\d+ entries, one per action of actions \(null or"),
    (lambda d: d.update(players=["a", "   "]), r"^replay: players\[1\]: '   '; allowed: a label "
                                             r"that is not blank$"),
    (lambda d: d["actions"].__setitem__(0, "play X9"), r"actions\[0\]"),
    (lambda d: d["actions"].__setitem__(0, 3), r"actions\[0\]"),
    # one text form, as written (before: read, and rewritten as 'draw')
    (lambda d: d["actions"].__setitem__(0, d["actions"][0].upper()),
     r"actions\[0\]: '.*'; allowed: the action's name as written: '"),
    (lambda d: d["actions"].__setitem__(0, f"  {d['actions'][0]}\t"),
     r"actions\[0\]: '.*'; allowed: the action's name as written: '"),
    (lambda d: d.update(thinking=[]), "thinking"),
    # an action left out (before: saved and loaded, and refused only when replayed, as an
    # illegal action further on)
    (lambda d: (d["actions"].pop(3), d["thinking"].pop(3)),
     r"^replay: actions: \d+ actions for a game of \d+ decisions \(result.decisions\); allowed: "
     r"one action for each decision$"),
    (lambda d: d["thinking"].__setitem__(0, {"agent": "x", "probs": {"play R5": 2}, "value": None}),
     r"thinking\[0\]"),
    (lambda d: d["result"].update(winner=7), "result"),
    # before: read, and refused only when replayed (10**100 decisions, a negative score)
    (lambda d: d["result"].update(decisions=10**100),
     r"^replay: result\.decisions: <an integer of 101 digits>; allowed: an integer 0 \.\. 5,000$"),
    (lambda d: d["result"].update(scores=[-5, 0]), r"^replay: result\.scores\[0\]: -5; allowed: "
                                                   r"an integer 0 \.\. 1,240$"),
    (lambda d: d["result"].update(scores=[0, 10**100]),
     r"^replay: result\.scores\[1\]: <an integer of 101 digits>; allowed: an integer 0 \.\. "),
    (lambda d: d["rules"].update(num_players=11), "rules"),
    # before: the options left out were taken from the preset ('preset' picked another one)
    (lambda d: d.update(rules={"name": "classic", "num_players": 2}),
     r"^replay: rules: options left out: hand_size, wild_cards, .* and 18 more; allowed: every "
     r"option written out, as RuleSet.to_dict\(\) writes it$"),
    (lambda d: d["rules"].update(preset="ono"), "^replay: rules: 'preset' is not an option; "),
    (lambda d: d.update(max_decisions=0), "max_decisions"),
    # before: any text of at most 80 characters, shown as the date in the web table's list
    (lambda d: d.update(saved_at="yesterday"),
     r"^replay: saved_at: 'yesterday'; allowed: the date the game finished, ISO text"),
    (lambda d: d.update(saved_at=""), "^replay: saved_at: ''; allowed: the date"),
    (lambda d: d.update(saved_at="2026-02-30T10:00:00"), "^replay: saved_at: '2026-02-30"),
    (lambda d: d.update(saved_at=None), "^replay: saved_at: None; allowed: the date"),
])
def test_bad_replays_are_refused_with_the_key(change, message):
    d = _replay_dict()
    change(d)
    with pytest.raises(ValueError, match=message):
        Replay.from_dict(d)


def test_replays_whose_actions_do_not_fit_are_refused_with_the_decision():
    d = _replay_dict()
    r = Replay.from_dict(d)
    legal0 = set(np.flatnonzero(new_game(r.rules, r.game_seed).legal_mask()[0]).tolist())
    illegal = next(a for a in range(85) if a not in legal0)
    r.actions[0] = illegal
    with pytest.raises(ValueError, match=r"actions\[0\] .* is not legal in its position; legal:"):
        replay_positions(r)
    r = Replay.from_dict(_replay_dict())
    w = r.result["winner"]
    r.result = dict(r.result, winner=1 - w, scores=[7, 0])
    # the entries that differ, as key=value, named as the caller names the replay (before:
    # both results as Python dicts, and "replay:" whatever the replay was)
    with pytest.raises(ValueError, match=rf"^uploaded replay: the actions end with winner={w}, "
                                         rf"scores=\[0, 0\]; the replay says winner={1 - w}, "
                                         rf"scores=\[7, 0\]$"):
        replay_positions(r, where="uploaded replay")
    r = Replay.from_dict(_replay_dict())
    r.actions.append(r.actions[-1])
    r.thinking.append(None)
    with pytest.raises(ValueError, match="the game ended after"):
        replay_positions(r)
    # what an agent reported of a decision names only that decision's legal actions (before:
    # a probability of 1 for a catch that could not be made was replayed and shown)
    r = Replay.from_dict(_replay_dict())
    first = r.players[int(new_game(r.rules, r.game_seed).state.current[0])]
    for part in ("probs", "values"):
        r.thinking[0] = {"agent": first, "probs": {}, "value": None, part: {action_name(illegal): 1.0}}
        with pytest.raises(ValueError, match=rf"^replay: thinking\[0\] names '{action_name(illegal)}', "
                                             rf"which is not legal in its position; legal: "):
            replay_positions(r)
    r.thinking[0] = {"agent": first, "probs": {action_name(min(legal0)): 1.0}, "value": None}
    assert len(replay_positions(r)) == len(r.actions) + 1
    # ... and is said by the seat that decides (before: any label, "you" at an agent's seat too)
    other = next(p for p in r.players if p != first)
    r.thinking[0] = {"agent": other, "probs": {action_name(min(legal0)): 1.0}, "value": None}
    with pytest.raises(ValueError, match=rf"^replay: thinking\[0\] is said by '{other}', but P\d "
                                         rf"\('{first}'\) decides there; allowed: the label of the "
                                         rf"seat that decides$"):
        replay_positions(r)


def test_a_searchs_values_are_mean_playout_results():
    """A search reports mean playout results, from (2 - players) / players (a penalty-scored
    match lost to tied winners) to 1 (each written rounded to 6 decimals): before, any
    finite number was read, 1e308 too, where the viewer shows results of 0 to 1."""
    from ono_env.rules import RuleSet

    d = _replay_dict()
    name = d["actions"][0]
    d["thinking"][0] = {"agent": "pimc", "probs": {}, "value": None, "values": {name: 1e308}}
    with pytest.raises(ValueError, match=rf"^replay: thinking\[0\]: values\['{name}'\]=1e\+308; "
                                         rf"allowed: a finite number 0 \.\. 1 \(a search's mean "
                                         rf"playout result at 2 players\)$"):
        Replay.from_dict(d)
    for players, ok, bad in [(2, [0, 1, 1.0000004], [-0.001, 1.01]),
                             (6, [round(-4 / 6, 6), 0.5], [-0.67, 2])]:
        game = VecGame(RuleSet.preset("classic", num_players=players), 1, seed=0)
        r = Replay.start(game, 0, int(game_seeds(0, 1)[0]), ["x"] * players, "test")
        for v in ok:
            r.add(0, {"agent": "pimc", "probs": {}, "value": None, "values": {"draw": v}})
        for v in bad:
            with pytest.raises(ValueError, match=rf"values\['draw'\]={v}; allowed: a finite "
                                                 rf"number {round((2 - players) / players, 6):g} "):
                r.add(0, {"agent": "pimc", "probs": {}, "value": None, "values": {"draw": v}})
        assert len(r.actions) == len(ok)


def test_replay_loading_refuses_non_replays(tmp_path):
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"x.json"):
        Replay.load(tmp_path / "x.json")
    (tmp_path / "dup.json").write_text('{"format": 1, "format": 2}')
    with pytest.raises(ValueError, match=r"dup.json"):
        Replay.load(tmp_path / "dup.json")
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(MAX_REPLAY_BYTES + 1)
    with pytest.raises(ValueError, match="bytes; at most"):
        Replay.load(big)
    with pytest.raises(ValueError, match=r"cannot read replay file .*: no such file"):
        Replay.load(tmp_path / "missing.json")


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux's /proc/self/mem")
def test_a_replay_file_that_cannot_be_read_is_one_value_error_naming_it(tmp_path):
    """Before: an ``OSError`` (EIO here, EACCES for a file of mode 000) came out of
    ``Replay.load`` as it was, and ``ono-web --replays`` refused to start over one file."""
    (tmp_path / "unread.json").symlink_to("/proc/self/mem")   # a regular file whose read fails
    with pytest.raises(ValueError, match=r"^cannot read replay file '.*unread.json': "):
        Replay.load(tmp_path / "unread.json")


def test_agent_thinking_only_for_agents_that_explain():
    from ono_env.agents import make_agent
    game = VecGame("basic", 1, seed=2, num_players=2)
    obs, mask = game.observe(0)[0], game.legal_mask()[0]
    assert agent_thinking(make_agent("greedy", "basic"), "greedy", obs, mask) is None
    t = agent_thinking(make_agent("ppo-basic-2p", RULES_BASIC_2P()), "ppo", obs, mask)
    assert t["agent"] == "ppo" and set(t["probs"]) == {
        __import__("ono_env").cards.action_name(int(a)) for a in np.flatnonzero(mask)}
    assert isinstance(t["value"], float)


def test_a_search_agents_forced_decision_reports_no_values():
    """Before: a decision with one legal action, taken without search, reported its action's
    value as -1.0 (the search's mark for an illegal action) in replays and the web table."""
    rules = {"preset": "classic", "num_players": 2, "must_play_drawn": True}
    res = run_arena(["pimc:2", "random"], rules, num_games=4, seed=3, record=4, rating=False)
    forced = searched = 0
    for replay in res.replays:
        for t in replay.thinking:
            if t is None:
                continue
            assert all(v > -1.0 for v in t["values"].values()), t
            forced += not t["values"]
            searched += bool(t["values"])
    assert forced and searched
    # values of another length, or NaN for a legal action: one error (before: an IndexError,
    # and a NaN left out of the report without a word)
    mask = np.zeros(85, bool)
    mask[[3, 66]] = True
    values = np.full(85, -1.0)
    values[[3, 66]] = 0.5
    assert search_thinking("s", values, mask)["values"] == {action_name(3): 0.5, "draw": 0.5}
    values[66] = np.nan
    with pytest.raises(ValueError, match=r"^search_thinking: 's' reported a value that is NaN or "
                                         r"infinite for a legal action"):
        search_thinking("s", values, mask)
    with pytest.raises(ValueError, match=r"^search_thinking: values float64 \(4,\) for a mask of "
                                         r"shape \(85,\)"):
        search_thinking("s", values[:4], mask)


def RULES_BASIC_2P():
    from ono_env.rules import RuleSet
    return RuleSet.preset("basic", num_players=2)


# ---- the writers' command lines ----------------------------------------------------------
def test_ono_play_writes_a_replay_of_the_game(tmp_path):
    import io
    path = tmp_path / "mine.json"
    out = io.StringIO()

    def read_first(prompt):   # the human always takes the first listed action
        text = out.getvalue()
        return text[text.rfind("your options:"):].split("\n")[1].split()[0]

    winner = play(["ppo-basic-2p"], "basic", seed=11, read=read_first, out=out,
                  replay_path=str(path))
    r = Replay.load(path)
    assert r.source == "ono-play" and r.players == ["you", "ppo-basic-2p"]
    assert [replay_positions(r)[-1]["winner"]] == winner == [r.result["winner"]]
    assert any(t is not None for t in r.thinking)       # the learned agent's decisions
    assert f"replay written to {path}" in out.getvalue()


def test_ono_arena_record_writes_replays(tmp_path, capsys):
    out = tmp_path / "rec"
    assert arena_main(["greedy", "random", "--rules", "basic", "--players", "2", "--games", "50",
                       "--no-progress", "--no-rating", "--record", "3", str(out)]) == 0
    files = sorted(out.glob("*.json"))
    assert [f.name for f in files] == ["replay-00001.json", "replay-00002.json", "replay-00003.json"]
    for f in files:
        replay_positions(Replay.load(f))
    assert "wrote 3 replays" in capsys.readouterr().out
    # more asked than played: all are written, and the line says why fewer (before: silent)
    assert arena_main(["greedy", "random", "--rules", "basic", "--players", "2", "--games", "2",
                       "--no-progress", "--no-rating", "--record", "5", str(tmp_path / "b")]) == 0
    assert len(list((tmp_path / "b").glob("*.json"))) == 2
    assert (f"wrote 2 replays to {tmp_path / 'b'} (--record 5: the run played 2 games)"
            in capsys.readouterr().out)


@pytest.mark.parametrize("args, message", [
    (["--record", "0", "x"], "out of range; allowed: 1 to"),
    (["--record", "many", "x"], "is not"),
    (["--record", "3"], "expected 2 arguments"),
])
def test_ono_arena_record_refuses_bad_arguments(tmp_path, capsys, args, message):
    assert arena_main(["greedy", "random", "--rules", "basic", "--players", "2", "--games", "10",
                       "--no-progress", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ono-arena: error:") and message in err


def test_replays_refuse_games_they_cannot_reproduce_and_unfinished_saves(tmp_path):
    for kw in (dict(skip_forced=True), dict(autoreset=True)):
        game = VecGame("basic", 1, seed=0, num_players=2, **kw)
        with pytest.raises(ValueError, match="without skip_forced and autoreset"):
            Replay.start(game, 0, 1, ["a", "b"], "test")
    game = VecGame("basic", 1, seed=0, num_players=2)
    r = Replay.start(game, 0, int(game_seeds(0, 1)[0]), ["x" * 200, "b"], "test")
    # labels shortened to the format's limit, their start and end kept around a digest
    assert len(r.players[0]) == 80 and r.players[0].startswith("x" * 35 + "…")
    assert r.players[0].endswith("…" + "x" * 35)
    # a blank label recorded as "?", which the reader takes (before: kept blank)
    assert Replay.start(game, 0, int(game_seeds(0, 1)[0]), ["   ", "\t"],
                        "test").players == ["?", "?"]
    with pytest.raises(ValueError, match="once its game is over"):
        r.save(tmp_path / "r.json")
    assert not (tmp_path / "r.json").exists()


def test_recording_refuses_what_a_replay_file_cannot_hold(tmp_path):
    """Before: each of these was recorded (floats truncated), saved, and then refused by
    Replay.load; NumPy's OverflowError came out of new_game."""
    game = VecGame("basic", 3, seed=0, num_players=2)
    for kw, message in [(dict(i=3), r"^i=3; allowed: an integer from 0 to 2$"),
                        (dict(game_seed=-1), r"^game_seed=-1; allowed: an integer from 0 to "),
                        (dict(game_seed=2**64), r"^game_seed=18446744073709551616; allowed"),
                        (dict(game_seed=5.7), r"^game_seed=5.7 \(float\); allowed"),
                        (dict(players=["a"]), r"^players=\['a'\]; allowed: a list of 2 labels"),
                        (dict(players="ab"), r"^players='ab'; allowed: a list of 2 labels")]:
        args = {"i": 0, "game_seed": 5, "players": ["a", "b"], **kw}
        with pytest.raises(ValueError, match=message):
            Replay.start(game, args["i"], args["game_seed"], args["players"], "test")
    r = Replay.start(game, 2, int(game_seeds(0, 3)[2]), ["a", "b"], "test")
    for bad, message in [(66.9, r"action=66.9 \(float\)"), (True, r"action=True \(bool\)"),
                         (85, r"action=85; allowed: an action id 0 .. 84")]:
        with pytest.raises(ValueError, match=message):
            r.add(bad)
    # what an agent reports is checked as load checks it (before: recorded, and save refused it)
    for thinking, message in [
            ({"agent": "x", "probs": {"play R5": float("nan")}, "value": None},
             r"^decision 0: thinking of 'x': probs\['play R5'\]=nan; allowed: a number 0 .. 1$"),
            ({"agent": "x", "probs": {}, "value": float("inf")},
             r"^decision 0: thinking of 'x': value inf; allowed: a finite number or null$"),
            ({"probs": {}}, r"^decision 0: thinking: \{'probs': \{\}\}; allowed: null or")]:
        with pytest.raises(ValueError, match=message):
            r.add(0, thinking)
    assert r.actions == [] and r.thinking == []
    # a NumPy number is the number it holds (before: np.float32(0.5) was "no number 0 .. 1",
    # where np.float64 was taken), and written as JSON; a NumPy bool is still no number
    r.add(0, {"agent": "x", "probs": {"play R1": np.float32(0.5)}, "value": np.float32(0.25),
              "values": {"play R1": np.int64(1)}})
    assert r.thinking == [{"agent": "x", "probs": {"play R1": 0.5}, "value": 0.25,
                           "values": {"play R1": 1}}]
    assert json.loads(json.dumps(r.thinking)) == r.thinking
    with pytest.raises(ValueError, match=r"probs\['play R1'\]=np.True_; allowed: a number"):
        r.add(0, {"agent": "x", "probs": {"play R1": np.True_}, "value": None})
    r.actions.clear()
    r.thinking.clear()
    with pytest.raises(ValueError, match="game 2 has not ended"):
        r.finish(game, 2)
    assert r.result is None
    for bad, message in [(3.5, r"game_seed=3.5 \(float\)"), (-1, "game_seed=-1; allowed"),
                         (2**64, "game_seed=18446744073709551616; allowed")]:
        with pytest.raises(ValueError, match=message):
            new_game(game.rules, bad)


def _record_to_the_end(game, r):
    """Play game 0 of ``game`` to its end with random legal moves, recording each in ``r``,
    and finish ``r``."""
    rng = np.random.default_rng(0)
    while not (game.terminated[0] or game.truncated[0]):
        a = int(rng.choice(np.flatnonzero(game.legal_mask()[0])))
        r.add(a)
        game.step(np.array([a]))
    r.finish(game)


def test_recording_a_replay_checks_the_game_the_labels_and_the_end():
    """Before: a game that was no VecGame was an AttributeError, labels were kept as their
    str() ("None"), and a finished replay took more decisions, which replay_positions then
    found after the game's end."""
    game = new_game(VecGame("basic", 1, seed=0, num_players=2).rules, 7)
    for call, message in ((lambda: Replay.start(None, 0, 7, ["a", "b"], "test"),
                           "game is a NoneType; allowed: the VecGame the replay records"),
                          (lambda: Replay.start(game, 0, 7, [None, "b"], "test"),
                           "players=[None, 'b']; allowed: a list of 2 labels (text), one a seat"),
                          # before: kept as its str(), 'None'
                          (lambda: Replay.start(game, 0, 7, ["a", "b"], None),
                           "source=None; allowed: text saying what wrote the replay")):
        with pytest.raises(ValueError, match=re.escape(message)):
            call()
    r = Replay.start(game, 0, 7, ["a", "b"], "test")
    with pytest.raises(ValueError, match="game is a NoneType"):
        r.finish(None)
    _record_to_the_end(game, r)
    with pytest.raises(ValueError, match=r"the replay is finished \(its game is over\)"):
        r.add(0)
    assert len(replay_positions(r)) == len(r.actions) + 1


def test_a_replay_changed_by_hand_is_not_saved_where_load_would_refuse_it(tmp_path):
    game = new_game(VecGame("basic", 1, seed=0, num_players=2).rules, 7)
    r = Replay.start(game, 0, 7, ["a", "b"], "test")
    _record_to_the_end(game, r)
    assert Replay.load(r.save(tmp_path / "ok.json")).actions == r.actions
    r.game_seed = -1
    with pytest.raises(ValueError, match=r"^the replay to save: game_seed: '-1'; allowed"):
        r.save(tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()
    # before: FileExistsError (a parent that is a file), "PosixPath('.') has an empty name"
    # and pathlib's TypeError, none naming the replay file
    r.game_seed = 7
    (tmp_path / "f.json").write_text("kept")
    for path, message in [(tmp_path / "f.json" / "x.json", "replay file: '.*f.json' exists and "
                                                          "is not a folder"),
                          ("", "replay file: a file path is needed; got ''"),
                          (tmp_path, "is a folder; give a file name"),
                          (None, "replay file: a file path is needed; got None"),
                          (tmp_path / ("a" * 300 + ".json"), "replay file: cannot write the "
                                                             "file .*: File name too long"),
                          # before: Python's bare "embedded null byte", naming no file
                          (f"{tmp_path}/a\x00.json", r"^replay file: the path '.*a\\x00.json' "
                                                      r"holds a NUL character; allowed: a file path")]:
        with pytest.raises(ValueError, match=message):
            r.save(path)
    with pytest.raises(ValueError, match=r"^replay file: the path '.*' holds a NUL character"):
        Replay.load(f"{tmp_path}/f.json\x00")
    assert (tmp_path / "f.json").read_text() == "kept"
    assert Replay.load(r.save(tmp_path / "new" / "dir" / "r.json")).actions == r.actions


def test_ono_play_refuses_a_replay_path_it_cannot_write_before_playing(tmp_path):
    import io
    out = io.StringIO()
    with pytest.raises(ValueError, match="is a folder; give a file name"):
        play(["greedy"], "basic", seed=1, read=lambda p: "0", out=out, replay_path=str(tmp_path))
    assert out.getvalue() == ""                     # refused before the game began
    # before, these failed after the whole game (the OS refused the name), or replaced a file
    (tmp_path / "old.json").write_text("kept")
    for path, message in [(tmp_path / ("a" * 300 + ".json"), "cannot write the file"),
                          (tmp_path / "old.json", "already exists; give a new file name"),
                          ("", "a file path is needed")]:
        with pytest.raises(ValueError, match=message):
            play(["greedy"], "basic", seed=1, read=lambda p: "0", out=out, replay_path=str(path))
        assert out.getvalue() == ""
    assert (tmp_path / "old.json").read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]


def test_ono_play_labels_a_model_file_by_its_name(tmp_path):
    import io
    import shutil

    from ono_env.agents.learned import shipped_models
    model = tmp_path / "deep" / "folder" / "my-model.safetensors"
    model.parent.mkdir(parents=True)
    shutil.copy(shipped_models()["ppo-basic-2p"], model)
    out = io.StringIO()

    def read_first(prompt):
        text = out.getvalue()
        return text[text.rfind("your options:"):].split("\n")[1].split()[0]

    play([str(model)], "basic", seed=2, read=read_first, out=out,
         replay_path=str(tmp_path / "r.json"))
    assert Replay.load(tmp_path / "r.json").players == ["you", "my-model"]


def test_ono_arena_record_refuses_a_folder_with_replays(tmp_path, capsys):
    (tmp_path / "replay-00001.json").write_text("{}")
    assert arena_main(["greedy", "random", "--rules", "basic", "--players", "2", "--games", "10",
                       "--no-progress", "--record", "2", str(tmp_path)]) == 2
    assert "already holds replay files" in capsys.readouterr().err


def test_search_agents_record_their_action_values_and_play_in_ono_play(tmp_path):
    import io
    rec = run_arena(["pimc:4", "greedy"], "basic", num_players=2, num_games=20, seed=3,
                    rating=False, record=2)
    for r in rec.replays:
        again = Replay.from_json(r.to_json())
        positions = replay_positions(again)
        seat = r.players.index("pimc:4")
        mine = [k for k in range(len(again.actions)) if positions[k]["current_player"] == seat]
        assert mine   # each of its decisions: a value for every legal action, the chosen one
        # too; one with a single legal action is taken without search and has none
        for k in mine:
            game = VecGame.from_dict(positions[k])
            legal = {action_name(int(a)) for a in np.flatnonzero(game.legal_mask()[0])}
            values = again.thinking[k]["values"]
            assert set(values) == (legal if len(legal) > 1 else set())
            assert action_name(again.actions[k]) in legal
    out = io.StringIO()

    def read_first(prompt):
        text = out.getvalue()
        return text[text.rfind("your options:"):].split("\n")[1].split()[0]

    winner = play(["pimc:4"], "basic", seed=5, read=read_first, out=out,
                  replay_path=str(tmp_path / "p.json"))
    r = Replay.load(tmp_path / "p.json")
    assert [r.result["winner"]] == winner and any(t and "values" in t for t in r.thinking)


def test_ono_arena_record_with_an_agent_whose_report_cannot_be_saved(tmp_path, capsys):
    """An agent whose explain gives NaN: one error naming it, at the first recorded decision
    (before: every game was played, then saving a replay failed with json's "Out of range
    float values are not JSON compliant", before --out was written)."""
    from ono_env.agents import register_agent, unregister_agent

    class NanAgent(RandomAgent):
        def explain(self, obs, mask):
            return np.full(mask.shape, np.nan), None

    register_agent("nan-explainer", lambda rules: NanAgent())
    try:
        rc = arena_main(["nan-explainer", "greedy", "--players", "2", "--games", "20",
                         "--record", "2", str(tmp_path / "rep"), "--out", str(tmp_path / "out"),
                         "--no-progress"])
    finally:
        unregister_agent("nan-explainer")
    err = capsys.readouterr().err
    assert rc == 2 and re.search(r"error: decision \d+: thinking of 'nan-explainer': "
                                 r"probs\['[^']+'\]=nan; allowed: a number 0 .. 1", err), err
    assert list(tmp_path.iterdir()) == []


def test_a_replay_file_with_a_byte_order_mark_loads_and_long_keys_are_cut(tmp_path):
    """Before: a replay saved by an editor that writes a byte order mark was refused (rules
    YAML and position bytes took it), and an unknown key came back whole in the error."""
    d = _replay_dict()
    path = tmp_path / "bom.json"
    path.write_text("\ufeff" + json.dumps(d), encoding="utf-8")
    assert Replay.load(path).to_dict() == Replay.from_dict(d).to_dict()
    with pytest.raises(ValueError) as e:
        Replay.from_dict({**d, "k" * 100_000: 1})
    assert len(str(e.value)) < 1000 and "unknown key" in str(e.value)


def test_probabilities_that_sum_past_one_are_refused():
    d = _replay_dict()
    d["thinking"][0] = {"agent": "x", "probs": {"draw": 0.9, "play R5": 0.9}, "value": None}
    with pytest.raises(ValueError, match=r"probs sum to 1\.8; allowed: probabilities that sum"):
        Replay.from_dict(d)
    d["thinking"][0]["probs"] = {"draw": 0.5, "play R5": 0.5000004}   # rounding: taken
    Replay.from_dict(d)


def test_a_recording_names_the_agent_whose_explain_gives_scores():
    """An agent's ``explain`` that returns a score per action (0.9 each) stops the recording
    with the agent's label and what is allowed (``ExplainingAgent``)."""
    class Scores:
        name = "scores"

        def act(self, obs, mask, rng):
            return np.array([np.flatnonzero(m)[0] for m in mask])

        def explain(self, obs, mask):
            return mask.astype(np.float32) * 0.9, None
    with pytest.raises(ValueError, match=r"decision 0: thinking of 'scores': probs sum to "
                                         r"[\d.]+; allowed: probabilities that sum to at most 1"):
        run_arena([Scores(), "random"], "basic", num_players=2, num_games=2, seed=1,
                  rating=False, record=1)


def test_recording_refuses_a_game_that_is_not_its_seeds_deal_or_is_under_way():
    """Before: a replay of the wrong deal, or begun decisions in, was recorded to the game's
    end and then refused as an illegal action (or a count of actions) when replayed."""
    game = VecGame("basic", 3, seed=777, num_players=2)
    right = int(game_seeds(777, 3)[1])
    for seed in (777, int(game_seeds(777, 3)[0])):   # the batch's seed; another game's deal
        with pytest.raises(ValueError, match=rf"^game 1 is not the deal of game_seed={seed}; "
                                             rf"allowed: the seed that dealt it "
                                             rf"\(game_seeds\(seed, num_games\)\[1\] for"):
            Replay.start(game, 1, seed, ["a", "b"], "test")
    assert Replay.start(game, 1, right, ["a", "b"], "test").game_seed == right
    game.step(np.array([int(np.flatnonzero(game.legal_mask()[k])[0]) for k in range(3)]))
    with pytest.raises(ValueError, match=r"^game 1 has taken 1 decisions; allowed: a game "
                                         r"before its first step"):
        Replay.start(game, 1, right, ["a", "b"], "test")


def test_a_replays_result_names_its_wrong_entry():
    """Before: one message for any wrong entry, showing the result cut at 80 characters (at
    10 players the entry was out of view)."""
    d = run_arena(["greedy"] * 10, "basic", num_players=10, num_games=1, seed=1,
                  rating=False, record=1).replays[0].to_dict()
    for key, value, allowed in [("decisions", True, "an integer 0 .. 5,000"),
                                ("decisions", 10**9, "an integer 0 .. 5,000"),
                                ("terminated", 1, "true or false"),
                                ("truncated", None, "true or false"),
                                ("winner", 10, "a seat 0 .. 9 or null"),
                                ("scores", [0] * 9, "a list of 10 integers 0 .. ")]:
        bad = json.loads(json.dumps(d))
        bad["result"][key] = value
        with pytest.raises(ValueError, match=rf"^replay: result\.{key}: "
                                             rf"{re.escape(repr(value)[:20])}.*; allowed: "
                                             rf"{re.escape(allowed)}"):
            Replay.from_dict(bad)
    bad = json.loads(json.dumps(d))
    bad["result"]["scores"] = [10**6] * 9 + [-1]   # the entry named, not the list cut short
    with pytest.raises(ValueError, match=r"^replay: result\.scores\[0\]: 1000000; allowed: an "
                                         r"integer 0 \.\. "):
        Replay.from_dict(bad)
    bad["result"]["scores"] = [0] * 9 + [-1]
    with pytest.raises(ValueError, match=r"^replay: result\.scores\[9\]: -1; allowed: "):
        Replay.from_dict(bad)


def test_a_replays_format_of_another_kind_is_named():
    """Before: NumPy's "truth value of an array is ambiguous", naming no key."""
    for key in ("format", "format_version"):
        d = _replay_dict()
        d[key] = np.array([1, 1])
        with pytest.raises(ValueError, match=rf"^replay: {key}: "):
            Replay.from_dict(d)
