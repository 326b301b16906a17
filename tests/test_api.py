"""Rule sets, names, errors, positions and the demo."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import game_at, make_position, random_playout

from ono_env import (
    ACTION_NAMES,
    NUM_ACTIONS,
    PRESETS,
    RuleSet,
    VecGame,
    action_id,
    action_name,
    card_id,
    card_name,
    game_seeds,
)
from ono_env.agents import RandomAgent, make_agent
from ono_env.agents.learned import shipped_specialists
from ono_env.agents.search import default_margin, prior_margin
from ono_env.apps.demo import main as demo_main
from ono_env.apps.demo import play_demo
from ono_env.apps.play import parse_choice
from ono_env.apps.play import play as play_one
from ono_env.arena.suite import fit_ratings, load_suite, place_agent, play_pairing, select_tables
from ono_env.envs.opponents import make_opponents
from ono_env.rules import option_code

ROOT = Path(__file__).resolve().parent.parent


# ---- rule sets ---------------------------------------------------------------------------
def test_presets_match_the_rules_table():
    ono, classic, stacking, uno2018, wiki, basic = (PRESETS[n] for n in
        ("ono", "classic", "stacking", "uno2018", "wikipedia", "basic"))
    assert ono.deck_size == 112 and ono.wild_cards == 8
    assert uno2018.deck_size == 112 and uno2018.wild_shuffle_hands_cards == 1
    assert classic.deck_size == stacking.deck_size == wiki.deck_size == basic.deck_size == 108
    assert classic.challenge and uno2018.challenge and not (ono.challenge or wiki.challenge)
    assert stacking.stacking and not any(p.stacking for p in (ono, classic, uno2018, wiki, basic))
    assert (ono.ono_penalty, ono.false_catch_penalty) == ("swap_hands", 4)
    assert classic.ono_penalty_cards == 4 and wiki.ono_penalty_cards == 2
    assert basic.ono_penalty == "none" and not basic.voluntary_draw and basic.target_score == 0
    assert classic.scoring == "winner" and classic.target_score == 500
    assert stacking.scoring == "penalty" and stacking.target_score == 0
    assert uno2018.first_card_action == "flip_again" and wiki.first_card_wild == "dealer_names"
    assert RuleSet() == RuleSet.preset("classic")


@pytest.mark.parametrize("name", list(PRESETS))
def test_yaml_configs_are_the_presets(name):
    assert RuleSet.load(ROOT / "configs" / "rules" / f"{name}.yaml") == PRESETS[name]
    assert RuleSet.load(name) == PRESETS[name]


def test_preset_overrides_and_yaml_round_trip(tmp_path):
    rules = RuleSet.preset("ono", num_players=4, draw_until_playable=True)
    assert rules.draw_until_playable and rules.wild_cards == 8
    f = tmp_path / "mine.yaml"
    f.write_text("preset: stacking\nnum_players: 6\nshort_deck: true\n")
    mine = RuleSet.load(f)
    assert mine.stacking and mine.num_players == 6 and mine.short_deck
    assert RuleSet.from_dict(yaml.safe_load(rules.to_yaml())) == rules


@pytest.mark.parametrize("overrides,field", [
    ({"num_players": 1}, "num_players"),
    ({"num_players": 11}, "num_players"),
    ({"wild_cards": -1}, "wild_cards"),
    ({"hand_size": 0}, "hand_size"),
    ({"dealer": "youngest"}, "dealer"),
    ({"stacking": "yes"}, "stacking"),
    ({"challenge": True, "wild_draw_four_restricted": False}, "challenge"),
    ({"challenge": True, "stacking": True}, "challenge"),
    ({"target_score": 500, "scoring": "none"}, "target_score"),
    ({"target_score": -5}, "target_score"),
    ({"ono_penalty": "none", "false_catch_penalty": 4}, "false_catch_penalty"),
    ({"ono_penalty_cards": 0}, "ono_penalty_cards"),
    # before: Python's "Exceeds the limit (4300 digits) for integer string conversion"
    ({"target_score": 10**5000}, "target_score=<an integer of over 4,300 digits>; allowed: "),
])
def test_bad_rule_sets_name_the_field(overrides, field):
    with pytest.raises(ValueError, match=field):
        RuleSet.preset("classic", **overrides)


def test_a_challenge_under_stacking_is_refused_for_stacking_at_once():
    """Before: ``stacking`` with a challenge asked for wild_draw_four_restricted, and that
    given, refused the challenge for the stacking: two refusals where one was the reason."""
    for preset in ("stacking", "classic"):
        with pytest.raises(ValueError, match=r"challenge=True; allowed: false when stacking is "
                                             r"true"):
            RuleSet.preset(preset, stacking=True, challenge=True,
                           wild_draw_four_restricted=False)


def test_numpy_rule_values_are_stored_as_python_values():
    # before: a NumPy string was stored as it came, and to_yaml() then failed on it
    rules = RuleSet.preset("classic", dealer=np.str_("random"), name=np.str_("mine"),
                           num_players=np.int64(3), short_deck=np.bool_(True))
    assert [type(getattr(rules, f)) for f in ("dealer", "name", "num_players", "short_deck")] == [
        str, str, int, bool]
    assert RuleSet.from_dict(yaml.safe_load(rules.to_yaml())) == rules


def test_deck_too_small_to_deal_is_refused():
    with pytest.raises(ValueError, match="too few to deal"):
        RuleSet.preset("ono", short_deck=True, num_players=10, hand_size=8)


def test_unknown_preset_and_option():
    with pytest.raises(ValueError, match="unknown preset 'uno'"):
        RuleSet.preset("uno")
    with pytest.raises(ValueError, match=r"unknown rule option.*'stack'"):
        RuleSet.preset("classic", stack=True)
    with pytest.raises(ValueError, match="no rules file"):
        RuleSet.load("no/such/file.yaml")
    # preset= is no option beside any kind of rules (before: beside a mapping it replaced
    # the mapping's own preset, and the game played classic for a mapping that said ono)
    for rules in ("ono", RuleSet.preset("ono"), {"preset": "ono", "num_players": 3}):
        with pytest.raises(ValueError, match=r"^unknown rule option\(s\) 'preset'"):
            VecGame(rules, 1, preset="classic")
    assert VecGame({"preset": "ono"}, 1, num_players=3).rules == RuleSet.preset("ono", num_players=3)
    # a rules file and overrides that do not go together are named, both (before: neither,
    # and "ono-play --rules big.yaml --players 3" did not say that the file or --players
    # mattered); a preset's name or a RuleSet, which the caller names, as before
    from ono_env.rules import resolve_rules
    with pytest.raises(ValueError, match=r"^invalid rule set: the deck has 108 cards, too few"):
        resolve_rules("basic", hand_size=60)
    with pytest.raises(ValueError, match=r"^invalid rule set: num_players=11"):
        resolve_rules(RuleSet.preset("basic", name="mine"), num_players=11)


def test_a_device_or_pipe_given_as_rules_is_named_so(tmp_path):
    # before: "no rules file '/dev/null'", as if nothing were there
    fifo = tmp_path / "rules.fifo"
    os.mkfifo(fifo)
    for path in ("/dev/null", str(fifo)):
        with pytest.raises(ValueError, match=f"rules '{path}' is not a regular file: give a YAML"):
            RuleSet.load(path)


def test_a_folder_given_as_rules_is_named_a_folder(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"is a folder, not a rules file.*basic"):
        RuleSet.load(tmp_path)
    from ono_env.apps.arena_cli import main as arena
    assert arena(["greedy", "random", "--rules", str(tmp_path), "--games", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a folder, not a rules file" in err[0]
    with pytest.raises(ValueError, match=r"^rules '' names nothing: give a YAML file's path"):
        RuleSet.load("")   # before: called a folder (the current one)


def test_a_rules_file_nested_too_deep_is_one_clear_error(tmp_path):
    # before: a bare RecursionError from PyYAML's composer
    deep = tmp_path / "deep.yaml"
    deep.write_text("preset: basic\nx: " + "[" * 1000 + "]" * 1000 + "\n")
    with pytest.raises(ValueError, match=r"is not valid YAML at line 2, column 67: lists or "
                                         r"mappings nested more than 64 deep; allowed: at most 64"):
        RuleSet.load(deep)
    ok = tmp_path / "ok.yaml"   # 64 deep, a value inside, is read (then refused as an option)
    ok.write_text("preset: basic\nx: " + "[" * 63 + "1" + "]" * 63 + "\n")
    with pytest.raises(ValueError, match=r"unknown rule option\(s\) 'x'"):
        RuleSet.load(ok)


def test_yaml_numbers_read_as_they_look():
    """YAML 1.2's forms that PyYAML's 1.1 reads as text (+.5, .5e3) are numbers; digits with
    single underscores between them are too."""
    import yaml

    from ono_env.rules import YamlLoader

    text = "a: +.5\nb: -.5\nc: .5e3\nd: 1_000\ne: 1e-4\nf: v_1\ng: +._\nh: 0x1_F\n"
    assert yaml.load(text, Loader=YamlLoader) == {"a": 0.5, "b": -0.5, "c": 500.0, "d": 1000,
                                                  "e": 1e-4, "f": "v_1", "g": "+._", "h": 31}
    # dates are text, as in YAML 1.2 (before: a datetime.date, or Python's own error with no
    # file or line for 2024-02-30); what the project writes reads back so
    text = "a: 2024-02-30\nb: 2024-12-04\nc: 2001-12-14t21:59:43.10-05:00\n"
    assert yaml.load(text, Loader=YamlLoader) == {"a": "2024-02-30", "b": "2024-12-04",
                                                  "c": "2001-12-14t21:59:43.10-05:00"}
    written = RuleSet.preset("ono", name="2024-12-04").to_yaml()
    assert yaml.load(written, Loader=YamlLoader)["name"] == "2024-12-04"


def test_a_yaml_file_over_64_kib_is_refused_before_it_is_parsed(tmp_path):
    """Before: the cap was 1 MiB, and a rules file just under it (one list of 520,000
    numbers) took 33 s and 460 MB to parse before it was refused. The largest YAML the
    project writes is a few KiB."""
    from ono_env.rules import MAX_YAML_BYTES, read_yaml
    assert MAX_YAML_BYTES == 1 << 16
    big = tmp_path / "big.yaml"
    big.write_text("preset: ono\nname: [" + ",".join(["1"] * 40000) + "]\n")
    with pytest.raises(ValueError, match=rf"cannot read rules file '{big}': 80,\d+ bytes; at "
                                         rf"most 65,536$"):
        RuleSet.load(str(big))
    fits = tmp_path / "fits.yaml"
    fits.write_text("preset: ono\n" + "# a comment line\n" * 3000)
    assert RuleSet.load(str(fits)) == RuleSet.preset("ono")
    assert read_yaml(fits, "rules file") == {"preset": "ono"}


def test_a_key_given_twice_is_found_in_one_pass_over_the_keys(monkeypatch):
    """A mapping with a key given twice is checked with a set of the keys seen: before, a
    list, and a rules file of 90,000 keys (under the 1 MiB cap) took 170 s to refuse. Counted
    here in comparisons between keys, which a list makes for every pair."""
    import yaml

    from ono_env.rules import YamlLoader

    class Key(str):
        compared = 0

        def __eq__(self, other):
            Key.compared += 1
            return str.__eq__(self, other)

        __hash__ = str.__hash__

    build = YamlLoader.construct_object
    monkeypatch.setattr(YamlLoader, "construct_object", lambda self, node, deep=False: (
        Key(v) if isinstance(v := build(self, node, deep), str) else v))
    text = "".join(f"k{i}: 1\n" for i in range(2000)) + "k1: 2\n"
    with pytest.raises(yaml.constructor.ConstructorError, match="the key 'k1' is given twice"):
        yaml.load(text, Loader=YamlLoader)
    assert Key.compared < 100


@pytest.mark.parametrize("text, message", [
    # before: the last of the two was read silently
    ("preset: basic\nhand_size: 7\nhand_size: 8\n",
     r"not valid YAML at line 3, column 1: the key 'hand_size' is given twice; allowed: each key once$"),
    # before: nine levels of aliases hung the check (gigabytes of a value's text)
    ("preset: basic\na: &a [1, 1, 1]\nb: &b [*a, *a, *a]\nhand_size: [*b, *b, *b]\n",
     r"not valid YAML at line 3, column 8: an alias \(\*name\); allowed: every value written out$"),
    # before: read as YAML 1.1 reads them, 8 cards, a target of 100, stacking on
    ("preset: basic\nhand_size: 010\n",
     r"line 2, column 12: '010' is read by YAML 1.1 as 8 \(octal, binary or base 60\); "
     r"allowed: a decimal number without leading zeros$"),
    ("preset: classic\ntarget_score: 1:40\n", r"'1:40' is read by YAML 1.1 as 100"),
    ("preset: basic\nstacking: yes\n",
     r"line 2, column 11: 'yes' is read by YAML 1.1 as true; allowed: true or false$"),
    # before: read as 7 and 10, every underscore dropped
    ("preset: basic\nhand_size: 7_\n",
     r"line 2, column 12: '7_' is read by YAML 1.1 as an integer, with an underscore that is not "
     r"between two digits; allowed: digits with single underscores between them \(1_000\) or "
     r"none$"),
    ("preset: basic\nhand_size: 1__0\n", r"'1__0' is read by YAML 1.1 as an integer, with an "),
    ("preset: basic\nhand_size: 7.5_\n", r"'7.5_' is read by YAML 1.1 as a number, with an "),
    ("preset: basic\nhand_size: 1_e1\n", r"'1_e1' is read by YAML 1.1 as a number, with an "),
    ("preset: basic\nhand_size: 0x_1\n", r"'0x_1' is read by YAML 1.1 as an integer, with an "),
    # before: int()'s own error (over 4,300 digits), naming no file or line
    pytest.param("preset: classic\ntarget_score: " + "1" * 5000 + "\n",
                 r"line 2, column 15: an integer of 5,000 digits; allowed: at most 100$",
                 id="an-integer-of-5000-digits"),
    # before: merged silently, num_players 2
    ("preset: ono\n<<: {num_players: 2}\n",
     r"line 2, column 1: '<<' is read by YAML 1.1 as a merge of another mapping into this one; "
     r"allowed: every key written out$"),
    # before: Python's own ValueError or AttributeError, naming no file or line
    ("preset: classic\nname: !!timestamp xyz\n",
     r"line 2, column 7: 'xyz' is tagged as a date \(!!timestamp\); allowed: text, numbers, "
     r"true or false, lists and mappings$"),
    ("preset: classic\nnum_players: !!int 3.0\n",
     r"line 2, column 14: '3.0' cannot be read as !!int \(invalid literal for int\(\) with base "
     r"10: '3.0'\); allowed: a value of that kind, or no tag$"),
    ("preset: classic\nnum_players: !!float abc\n", r"'abc' cannot be read as !!float \("),
    # before: "read by YAML 1.1 as none"
    ("preset: basic\nstacking: !!bool 1\n",
     r"line 2, column 11: '1' is not a boolean; allowed: true or false$"),
    # a long value is cut in the message
    ("preset: basic\nhand_size: [" + ", ".join(["0"] * 5000) + "]\n",
     r"invalid rule set: hand_size=\[0, 0, 0, 0, 0, 0, \.\.\.\]; allowed: an integer from 1 to 100"),
])
def test_a_rules_file_is_plain_data_written_out(tmp_path, text, message):
    f = tmp_path / "mine.yaml"
    f.write_text(text)
    with pytest.raises(ValueError, match=message) as err:
        RuleSet.load(f)
    assert len(str(err.value)) < 300


# ---- names -------------------------------------------------------------------------------
def test_action_names_round_trip():
    assert NUM_ACTIONS == len(ACTION_NAMES) == 85
    for a in range(NUM_ACTIONS):
        assert action_id(action_name(a)) == a
    assert action_name(action_id("play W+4 G")) == "play W+4 G"
    assert action_id("  PLAY  r5 ") == action_id("play R5")
    assert card_name(card_id("B+2")) == "B+2"


@pytest.mark.parametrize("bad", ["play R10", "jump", "play W", "play WS R", "target 10", "color P"])
def test_unknown_action_names(bad):
    with pytest.raises(ValueError, match="unknown action"):
        action_id(bad)


# ---- actions -----------------------------------------------------------------------------
def test_illegal_action_names_the_legal_ones_and_changes_nothing():
    rules = RuleSet.preset("basic", num_players=3)
    g = game_at(rules, [["R3", "G1"], ["B1"], ["Y1"]], ["R5"])
    before = g.to_dict(0)
    with pytest.raises(ValueError, match=r"illegal action 'draw' .*legal actions: play R3"):
        g.step(np.array([action_id("draw")]))
    assert g.to_dict(0) == before


def test_one_illegal_action_in_a_batch_changes_no_game():
    g = VecGame("classic", 4, seed=0)
    before = [g.to_dict(i) for i in range(4)]
    actions = np.argmax(g.legal_mask(), 1)
    actions[2] = action_id("challenge")
    with pytest.raises(ValueError, match="game 2"):
        g.step(actions)
    assert [g.to_dict(i) for i in range(4)] == before


@pytest.mark.parametrize("actions", [np.array([0, 1]), np.array([[0]]), np.array([0.5])])
def test_malformed_actions(actions):
    g = VecGame("classic", 1, seed=0)
    with pytest.raises(ValueError, match="actions must be"):
        g.step(actions)


def test_out_of_range_action():
    g = VecGame("classic", 1, seed=0)
    with pytest.raises(ValueError, match=r"^action 999 is out of range \(action ids are 0 to 84\) in game 0"):
        g.step(np.array([999]))
    # before: a uint64 id of 2**63 or more wrapped to a negative int64 in the message
    for a in (2**63, 2**64 - 1):
        with pytest.raises(ValueError, match=f"^action {a} is out of range .* in game 0"):
            g.step(np.array([a], np.uint64))
    g2 = VecGame("classic", 2, seed=0)     # a game left out of the step may hold any id
    legal = int(np.flatnonzero(g2.legal_mask()[0])[0])
    g2.step(np.array([legal, 2**64 - 1], np.uint64), active=np.array([True, False]))


def test_a_vector_envs_batched_spaces_are_counted_before_its_games_are_made(monkeypatch):
    """Gymnasium's batch_space keeps two float32 bounds and two bool masks per value of the
    batched observation (and RLlib's action mask): about as much again as the games hold at
    version 1. Before, a num_envs that fitted the games alone passed the check and then
    failed inside Gymnasium (or the process was killed)."""
    import ono_env.game as G
    from ono_env.envs.gym_vector import OnoVectorEnv
    from ono_env.envs.rllib_env import OnoRLlibVectorEnv

    rules = RuleSet.preset("basic", num_players=2)
    free = 600 << 20
    monkeypatch.setattr(G, "available_memory", lambda: free)
    size = G.observation_size(rules)
    games_alone = free // G.game_bytes(rules)
    with_spaces = free // (G.game_bytes(rules) + G.SPACE_VALUE_BYTES * size)
    assert with_spaces < 0.6 * games_alone   # the bounds about double what is held
    n = with_spaces + 1   # fits without the spaces, not with them
    with pytest.raises(ValueError, match=f"^num_envs={n:,}: .* \\(their state, an observation "
                                         f"of each and the bounds of their batched observation "
                                         f"space\\), .*at most {with_spaces:,} here"):
        OnoVectorEnv(n, rules, opponents="random")
    with_mask = free // (G.game_bytes(rules) + G.SPACE_VALUE_BYTES * (size + 85))
    with pytest.raises(ValueError, match=f"^num_envs={with_mask + 1:,}: .*at most "
                                         f"{with_mask:,} here"):
        OnoRLlibVectorEnv({"rules": "basic", "num_players": 2, "num_envs": with_mask + 1})
    G.check_game_memory(rules, games_alone)   # the games alone still fit: the spaces decided


def test_a_batch_over_the_free_memory_is_refused_before_it_is_made(monkeypatch, tmp_path, capsys):
    # before: VecGame and the arena took up to 1,000,000 games at any table size, about
    # 23 GiB at 10 players, and the system killed the process with no word
    import ono_env.game as G
    from ono_env.arena import run_arena
    rules = RuleSet.preset("classic", num_players=10)
    each = G.game_bytes(rules)
    game = VecGame(rules, 3, seed=0)
    for seat in range(10):   # each seat observed: a row of its number kept for each
        game.observe(seat)
    held = sum(a.nbytes for a in game.state.arrays) + sum(
        a.nbytes for a in (game._rewards, game._scratch_rewards, game._pending, game._terminated,
                           game._truncated, game._current, game._mask, game._all,
                           *game._seat_rows.values()))
    assert held + 3 * 4 * game.observation_size == 3 * each   # what the bound counts is there
    assert max(G.game_bytes(RuleSet.preset(p, num_players=10), v)
               for p in ("classic", "ono", "uno2018") for v in (1, 2)) < G.GAME_BYTES_BOUND
    # the rules as everywhere (before: game_bytes("classic") failed inside, an AttributeError)
    assert G.game_bytes({"preset": "classic", "num_players": 10}) == each
    for bad, message in ((None, "rules=None; allowed"), ("classic:", "no rules file")):
        with pytest.raises(ValueError, match=message):
            G.game_bytes(bad)
        with pytest.raises(ValueError, match=message):
            G.check_game_memory(bad, 10)
    monkeypatch.setattr(G, "available_memory", lambda: 300 << 20)
    many = (300 << 20) // each + 1
    with pytest.raises(ValueError, match=f"num_games={many:,}: {many:,} games of 10 players "
                                         f"hold 0.3 GiB .* 0.3 GiB of memory free; allowed: "
                                         f"fewer games at once \\(at most {many - 1:,} here\\)"):
        VecGame(rules, many)
    VecGame(RuleSet.preset("classic", num_players=2), many)   # 2 players: a sixth of it
    monkeypatch.setattr(G, "available_memory", lambda: None)   # unknown: not checked
    VecGame(rules, many)
    monkeypatch.setattr(G, "available_memory", lambda: 300 << 20)
    with pytest.raises(ValueError, match=f"batch_size={many:,}: "):
        run_arena(["random"] * 10, rules, 10, 10 * many, batch_size=many, rating=False,
                  progress=False)
    # a batch larger than one seating's games holds only those at once: the message says so
    with pytest.raises(ValueError, match=f"batch_size={10 * many:,} \\({many:,} games at once: "
                                         f"a seating's\\): {many:,} games of 10 players"):
        run_arena(["random"] * 10, rules, 10, 10 * many, batch_size=10 * many, rating=False,
                  progress=False)
    # an agent that reads version-2 observations: the batch holds those, twice (the game's,
    # and the copy of the rows an agent is handed; before: once, and ono-arena ppo-any
    # greedy --batch 100000 took twice what was counted)
    fits = (300 << 20) // (G.game_bytes(rules, 2) + 4 * G.observation_size(rules, 2))
    assert fits < many - 1
    with pytest.raises(ValueError, match=f"hold 0.4 GiB \\(their state and two observations "
                                         f"of each\\), .*at most {fits:,} here"):
        run_arena(["ppo-any"] + ["random"] * 9, rules, 10, 10 * many, batch_size=many,
                  rating=False, progress=False)
    import re

    from ono_env.apps.arena_cli import main as arena
    # the console script counts the same observations before any game: a batch that fits
    # with version-1 observations and not with ppo-any's
    assert arena(["ppo-any"] + ["random"] * 9 + ["--rules", "classic", "--players", "10",
                 "--games", str(10 * (many - 1)), "--batch", str(many - 1), "--no-progress"]) == 2
    assert capsys.readouterr().err.startswith(f"ono-arena: error: --batch {many - 1:,}: ")
    from ono_env.arena import check_batch_memory
    for bad, message in ((dict(batch_size=0), "batch_size=0; allowed: an integer from 1 to"),
                         (dict(batch_size=2.5), "batch_size=2.5 (float)"),
                         (dict(observation_version=7), "observation_version=7; allowed: 1, 2"),
                         # before: taken for 1 and 2
                         (dict(observation_version=True), "observation_version=True; allowed: 1, 2"),
                         (dict(observation_version=2.0), "observation_version=2.0; allowed: 1, 2"),
                         (dict(rules="nosuch"), "no rules file 'nosuch'")):
        kwargs = {"rules": rules, "num_entrants": 10, "num_games": 10, "batch_size": 10, **bad}
        with pytest.raises(ValueError, match=re.escape(message)):
            check_batch_memory(**kwargs)
    # with Ray the tasks' nodes hold the batches: not checked against this machine's memory
    import ono_env.arena as A

    class Reached(Exception):
        pass

    def on_ray(*args, **kwargs):
        raise Reached

    monkeypatch.setattr(A, "play_on_ray", on_ray)
    monkeypatch.setattr(A, "check_ray_address", lambda address: address)
    with pytest.raises(Reached):
        run_arena(["random"] * 10, rules, 10, 10 * many, batch_size=many, rating=False,
                  progress=False, ray_address="ray://somewhere:10001")
    assert arena(["random"] * 10 + ["--rules", "classic", "--players", "10", "--games", str(10 * many), "--batch",
                                    str(many), "--no-progress", "--out", str(tmp_path / "a")]) == 2
    assert not (tmp_path / "a").exists()
    # the console script names its own option
    assert capsys.readouterr().err.startswith(f"ono-arena: error: --batch {many:,}: {many:,} games ")


def _fake_machine(tmp_path, meminfo):
    """A root of /proc and /sys (``root``, as the memory readers take it) with ``meminfo``,
    and the folder of its cgroup v2 mount (not made)."""
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "meminfo").write_text(meminfo)
    return str(tmp_path), tmp_path / "sys" / "fs" / "cgroup"


def _v2_group(group, limit, used):
    group.mkdir(parents=True, exist_ok=True)
    (group / "memory.max").write_text(f"{limit}\n")
    (group / "memory.current").write_text(str(used))


def test_the_free_memory_is_the_lower_of_the_system_and_the_control_group(tmp_path):
    from ono_env.game import available_memory
    root, group = _fake_machine(tmp_path, "MemTotal: 99 kB\nMemAvailable: 10485760 kB\n")
    assert available_memory(root) == 10 << 30                 # no control group: the system's
    _v2_group(group, "max", 1 << 30)                           # v2 without a limit
    assert available_memory(root) == 10 << 30
    _v2_group(group, 3 << 30, 1 << 30)                         # a container of 3 GiB, 1 used
    assert available_memory(root) == 2 << 30
    # of what it uses, the page cache it can drop counts as free
    (group / "memory.stat").write_text(f"anon 5\ninactive_file {1 << 29}\nactive_file 7\n")
    assert available_memory(root) == (2 << 30) + (1 << 29)
    # the process's own group, as /proc/self/cgroup names it
    (tmp_path / "proc" / "self" / "cgroup").write_text("0::/jobs/mine\n")
    (group / "jobs" / "mine").mkdir(parents=True)
    (group / "jobs" / "mine" / "memory.max").write_text(str(1 << 30))
    (group / "jobs" / "mine" / "memory.current").write_text(str(1 << 28))
    assert available_memory(root) == (1 << 30) - (1 << 28)
    for name in ("memory.max", "memory.current", "memory.stat"):
        (group / name).unlink()
    import shutil
    shutil.rmtree(group / "jobs")
    (tmp_path / "proc" / "self" / "cgroup").write_text("4:memory:/jobs/mine\n1:cpu:/\n")
    (group / "memory").mkdir()                                 # v1, its group not mounted:
    (group / "memory" / "memory.limit_in_bytes").write_text(str(2**63 - 4096))   # the root's
    (group / "memory" / "memory.usage_in_bytes").write_text(str(1 << 30))
    assert available_memory(root) == 10 << 30                 # no limit
    (group / "memory" / "memory.limit_in_bytes").write_text(str(12 << 30))
    assert available_memory(root) == 10 << 30                 # the system's is lower
    (tmp_path / "proc" / "meminfo").unlink()
    assert available_memory(root) == 11 << 30
    assert available_memory(str(tmp_path / "none")) is None


def test_the_memory_a_run_may_hold_is_the_lower_of_the_machine_and_the_control_group(tmp_path):
    # before: a training run checked its rollout against the machine's memory alone, so a
    # container's limit was not seen
    from ono_env.game import memory_limit
    root, group = _fake_machine(tmp_path, "MemTotal: 16777216 kB\nMemAvailable: 99 kB\n")
    assert memory_limit(root) == 16 << 30                     # no control group: the machine's
    _v2_group(group, "max", 1 << 30)
    assert memory_limit(root) == 16 << 30                     # no limit
    _v2_group(group, 3 << 30, 1 << 30)                         # a container of 3 GiB, 1 used
    assert memory_limit(root) == 3 << 30                      # its limit, not what is free
    (tmp_path / "proc" / "meminfo").unlink()
    assert memory_limit(root) == 3 << 30
    assert memory_limit(str(tmp_path / "none")) is None


def test_bad_game_options():
    with pytest.raises(ValueError, match="num_games"):
        VecGame("classic", 0)
    with pytest.raises(ValueError, match="reward"):
        VecGame("classic", 1, reward="money")
    with pytest.raises(ValueError, match="needs a rule set with scoring"):
        VecGame("basic", 1, reward="points")
    with pytest.raises(ValueError, match="max_decisions"):
        VecGame("classic", 1, max_decisions=0)


# ---- positions -----------------------------------------------------------------------------
@pytest.mark.parametrize("preset", list(PRESETS))
def test_position_round_trip_is_exact_and_play_continues_identically(preset):
    g = VecGame(preset, 4, seed=8, num_players=3)
    random_playout(g, 37, seed=1)
    for i in range(4):
        d = g.to_dict(i)
        text = json.dumps(d)
        copy = VecGame.from_json(text)
        assert copy.to_dict(0) == d
    # the restored game (generator state included) plays on exactly like the original
    d = g.to_dict(0)
    copy = VecGame.from_dict(d)
    one = VecGame(preset, 1, seed=0, num_players=3)
    one.set_position(0, d)
    for _t in range(30):
        if copy.finished[0]:
            break
        a = np.argmax(copy.legal_mask(), 1)
        copy.step(a)
        one.step(a)
    assert copy.to_dict(0) == one.to_dict(0)


def test_position_must_hold_the_deck():
    rules = RuleSet.preset("classic", num_players=2)
    d = make_position(rules, [["R1"], ["R2"]], ["R5"])
    d["stock"] = d["stock"][:-1]
    with pytest.raises(ValueError, match=r"'stock'.*W\+4 3 \(the deck has 4\).*exactly the deck"):
        VecGame.from_dict(d)


@pytest.mark.parametrize("key,value,match", [
    ("phase", "thinking", "position key 'phase': 'thinking'"),
    ("color", "P", "position key 'color': 'P'"),
    ("current_player", 5, "position key 'current_player': 5"),
    ("direction", 2, "position key 'direction': 2"),
    ("hands", [["R1"]], "position key 'hands'"),
    ("discard", [], "position key 'discard'"),
])
def test_malformed_positions(key, value, match):
    rules = RuleSet.preset("classic", num_players=2)
    d = make_position(rules, [["R1"], ["R2"]], ["R5"])
    d[key] = value
    with pytest.raises(ValueError, match=match):
        VecGame.from_dict(d)


@pytest.mark.parametrize("top,fields,match", [
    ("R5", {"phase": "drawn", "drawn_card": "R9", "turn_fresh": False},
     "'drawn_card', 'hands', 'current_player'.*not in hands"),
    ("R5", {"phase": "drawn", "turn_fresh": False}, "'drawn_card', 'phase': None in phase 'drawn'"),
    ("R5", {"phase": "pending", "pending_draw": 0}, "'phase', 'discard'"),
    ("R5", {"pending_draw": 2}, "'pending_draw', 'phase'"),
    ("R5", {"color": None}, "'color', 'discard': color=None on the top card 'R5'"),
    ("W", {"color": None}, "'color', 'phase': color=None in phase 'play'"),
])
def test_inconsistent_positions_are_refused(top, fields, match):
    rules = RuleSet.preset("classic", num_players=2)
    d = make_position(rules, [["R1", "R2"], ["R3"]], [top], color="R")
    d.update(fields)
    with pytest.raises(ValueError, match=match):
        VecGame.from_dict(d)


def test_empty_hand_in_a_live_position_is_refused():
    rules = RuleSet.preset("classic", num_players=2)
    with pytest.raises(ValueError, match="'hands', 'terminated', 'phase': empty hands"):
        VecGame.from_dict(make_position(rules, [["R1", "R2"], []], ["R5"]))


def test_a_deal_with_no_startable_card_in_the_stock_is_dealt_again():
    # 2 x 55 cards dealt from 112 leave a stock of 2; uno2018 starts only on a number card
    rules = RuleSet.preset("uno2018", num_players=2, hand_size=55)
    g = VecGame(rules, 256, seed=10)
    for i in range(256):
        d = g.to_dict(i)
        assert d["discard"][-1][1:].isdigit() and [len(h) for h in d["hands"]] == [55, 55]


def test_position_for_other_rules_is_refused():
    d = VecGame("classic", 1, seed=0, num_players=2).to_dict(0)
    g = VecGame("basic", 1, seed=0, num_players=2)
    with pytest.raises(ValueError, match="position key 'rules': for other rules"):
        g.set_position(0, d)


def test_state_bytes_per_game_is_small():
    # 1,000 bytes without the private-knowledge columns (S_SEEN: 56 int32 per pair of seats,
    # 3,584 bytes at 4 players), which observation version 2 reads
    g = VecGame("classic", 16, seed=0, num_players=4)
    seen = 4 * 4 * 56 * 4
    assert g.state_bytes_per_game - seen < 1024


# ---- demo --------------------------------------------------------------------------------
def test_demo_is_seeded_and_prints_a_summary():
    a, b = io.StringIO(), io.StringIO()
    wins = play_demo("basic", 3, 2, seed=4, verbose=True, out=a)
    play_demo("basic", 3, 2, seed=4, verbose=True, out=b)
    assert a.getvalue() == b.getvalue()
    c = io.StringIO()
    play_demo("basic", 3, 2, seed=5, verbose=True, out=c)
    assert c.getvalue() != a.getvalue()   # the seed is used
    # the game headed "seed 5" is the one --seed 5 plays (before: its deal, other moves)
    second = a.getvalue().split("=== game 2")[1].split("\n", 1)[1].split("summary:")[0]
    assert "seed 5)" in a.getvalue().split("=== game 2")[1].splitlines()[0]
    alone = io.StringIO()
    play_demo("basic", 3, 1, seed=5, verbose=True, out=alone)
    assert alone.getvalue().split("\n", 1)[1].split("summary:")[0] == second
    assert sum(wins.values()) == 2
    assert a.getvalue().splitlines()[-1].startswith("summary: 2 games of basic rules")
    assert "play " in a.getvalue()
    # what each move did, as ono-play says it (before: the moves alone)
    assert "deals; the first card is" in a.getvalue() and "draws 1 card" in a.getvalue()
    # every game's last round is said as ono-play says it (before: left out)
    assert a.getvalue().count("--- round 1 won by P") == 2
    one = io.StringIO()
    play_demo("classic", 2, 1, seed=3, verbose=True, out=one)
    rounds = re.findall(r"^--- round (\d+) won by P\d", one.getvalue(), re.M)
    assert [int(r) for r in rounds] == list(range(1, len(rounds) + 1)) and len(rounds) > 1
    last = one.getvalue().split("--- round")[-1]
    assert "game over" in last and "P0 deals" not in last and "P1 deals" not in last
    assert one.getvalue().splitlines()[-1].startswith("summary: 1 game of classic rules")
    # a game cut at the decision limit is said as ono-play says it, and the summary does not
    # list "truncated" among the seats (before: "game over: truncated" and "truncated 1")
    cut = io.StringIO()
    assert play_demo("ono", 2, 1, seed=0, verbose=True, out=cut) == {"truncated": 1}
    assert cut.getvalue().splitlines()[-2:] == [
        "the game was cut at the decision limit (5,000 decisions): no winner",
        "summary: 1 game of ono rules with 2 random players; wins: no winner (cut at the "
        "decision limit) 1; mean length 5000.0 decisions"]


def test_headers_name_custom_rules_as_custom(tmp_path):
    """Before: a rules file that changed ``ono`` was headed "ono rules" by ono-arena and
    ono-play, and ono-demo's summary printed the file's path."""
    from ono_env.arena import run_arena
    assert RuleSet.preset("ono").title == "ono rules" == RuleSet.preset("ono", num_players=6).title
    custom = RuleSet.preset("ono", stacking=True)
    assert custom.title == "custom rules based on ono" and not custom.is_preset()
    assert RuleSet.preset("basic", name="mine").title == "mine rules"
    # another preset's name on rules that are not that preset's is refused, every way in
    # (before: ono's options named "classic" were headed "custom rules based on classic")
    for make in (lambda: RuleSet.preset("ono", name="classic"),
                 lambda: RuleSet.from_dict({"preset": "ono", "name": "classic"}),
                 lambda: RuleSet.preset("ono").replace(name="classic")):
        with pytest.raises(ValueError, match=r"rules based on 'ono' cannot take the name "
                                             r"'classic': that preset's rules differ in "):
            make()
    # a shipped preset file, copied and changed (before: the refusal offered only the base's
    # name, 'classic', whose header then called ono's rules "custom rules based on classic")
    copied = tmp_path / "myono.yaml"
    copied.write_text((Path(__file__).parents[1] / "configs/rules/ono.yaml").read_text()
                      + "draw_until_playable: true\n")
    with pytest.raises(ValueError, match=r"cannot take the name 'ono': that preset's rules "
                                         r"differ in draw_until_playable; allowed: 'ono' as the "
                                         r"base \(preset: ono, then the fields that change it\)"):
        RuleSet.load(str(copied))
    text = copied.read_text().replace("preset: classic\nname: ono\n", "preset: ono\n")
    copied.write_text(text)
    assert RuleSet.load(str(copied)) == RuleSet.preset("ono", draw_until_playable=True)
    basic_options = {k: v for k, v in RuleSet.preset("basic").to_dict().items() if k != "name"}
    assert RuleSet.preset("classic", **basic_options, name="basic") == RuleSet.preset("basic")
    (tmp_path / "r.yaml").write_text("preset: basic\nhand_size: 5\n")
    out = io.StringIO()
    play_demo(str(tmp_path / "r.yaml"), 2, 1, seed=0, verbose=True, out=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("=== game 1 (custom rules based on basic, 2 players")
    assert lines[-1].startswith("summary: 1 game of custom rules based on basic with 2")
    res = run_arena(["greedy", "random"], RuleSet.preset("basic", hand_size=5, num_players=2),
                    num_games=2, rating=False)
    assert res.format_table().splitlines()[0].startswith("custom rules based on basic, 2 players")


def test_demo_plays_a_rules_files_own_count_and_checks_its_seeds_first(tmp_path, capsys):
    (tmp_path / "two.yaml").write_text("preset: basic\nnum_players: 2\n")
    assert demo_main(["--rules", str(tmp_path / "two.yaml"), "--quiet", "--games", "1"]) == 0
    assert "with 2 random players" in capsys.readouterr().out   # before: 4, silently
    assert demo_main(["--quiet", "--games", "1"]) == 0
    assert "with 4 random players" in capsys.readouterr().out
    assert demo_main(["--rules", str(tmp_path / "two.yaml"), "--players", "3", "--quiet",
                      "--games", "1"]) == 0   # --players sets the count, as in ono-play
    assert "with 3 random players" in capsys.readouterr().out
    assert demo_main(["--seed", str(2**63 - 1), "--games", "2", "--quiet"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "seed + games - 1 must be at most" in captured.err


@pytest.mark.parametrize("text, named", [
    ("a\x07", "U+0007 (a control character)"), ("a\xa0", "U+00A0 (no-break space)"),
    ("\u200b", "U+200B (zero width space)"), ("x\u2028y", "U+2028 (line separator)"),
    ("a\ue000", "U+E000 (a private-use character)"),
    ("a\u0378", "U+0378 (an unassigned code point)")])
def test_text_that_is_not_printable_names_the_character(text, named):
    """Before: every such character was called a control character, a no-break space too."""
    with pytest.raises(ValueError, match=re.escape(f"holds {named}, which is not printable; "
                                                   f"allowed: text of 1 to 80 printable")):
        RuleSet.preset("basic", name=text)


def test_demo_reads_its_rules_file_once(tmp_path, monkeypatch):
    """The rules file is read once, before the first game: before, every game read it
    again (51 reads for 50 games), so a file edited or removed mid-run changed the rules or
    failed at game k."""
    from ono_env import rules as rules_module
    from ono_env.apps.demo import play_demo

    path = tmp_path / "two.yaml"
    path.write_text("preset: basic\nnum_players: 2\n")
    reads = []
    read_yaml = rules_module.read_yaml
    monkeypatch.setattr(rules_module, "read_yaml", lambda *a: reads.append(a) or read_yaml(*a))
    wins = play_demo(str(path), None, 5, 0, False)
    assert sum(wins.values()) == 5 and len(reads) == 1


def test_demo_bad_rules_is_one_line(capsys, tmp_path):
    assert demo_main(["--rules", "nope", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no rules file 'nope'" in err[0]
    # a count the file's deck cannot deal: named with the file, as ono-arena and ono-play do
    # (before: "invalid rule set: ...", the file not named)
    small = tmp_path / "h.yaml"
    small.write_text("preset: classic\nhand_size: 11\nshort_deck: true\n")
    assert demo_main(["--rules", str(small), "--players", "10", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"ono-demo: error: rules file {str(small)!r} with num_players=10: invalid rule set: the deck"), err
    assert demo_main(["--rules", str(small), "--players", "2", "--quiet", "--games", "1"]) == 0


@pytest.mark.parametrize("call,message", [
    (lambda g: g.observe(True), "seat=True"), (lambda g: g.observe(2), "seat=2"),
    (lambda g: g.observe(1.0), "seat=1.0"), (lambda g: g.observe(np.array([0.0, 1.0])), "seats must be"),
    (lambda g: g.legal_action_names(-1), "game index -1"),
    (lambda g: g.legal_action_names(True), "game index True"),
    (lambda g: g.play_random(1.5), "steps=1.5"), (lambda g: g.play_random(-1), "steps=-1"),
    (lambda g: g.play_random(1, seed=-3), "seed=-3"), (lambda g: g.reset(seed=1.5), "seed=1.5"),
    (lambda g: g.step(np.array([0.0, 1.0])), "integer array"),
    (lambda g: g.step(np.array([0, 99])), "illegal action"),
])
def test_vecgame_entry_points_refuse_wrong_types(call, message):
    g = VecGame("basic", 2, seed=0, num_players=2)
    before = g.to_json(0) + g.to_json(1)
    with pytest.raises(ValueError, match=message):
        call(g)
    assert g.to_json(0) + g.to_json(1) == before


@pytest.mark.parametrize("kwargs,message", [
    (dict(num_games=True), "num_games=True"), (dict(num_games=0), "num_games=0"),
    (dict(num_games=2.0), "num_games=2.0"), (dict(num_games=10**7), "num_games"),
    (dict(seed=1.5), "seed=1.5"), (dict(seed=-1), "seed=-1"), (dict(autoreset="no"), "autoreset"),
    (dict(skip_forced=1), "skip_forced"), (dict(max_decisions=0), "max_decisions"),
    (dict(max_decisions=True), "max_decisions"), (dict(reward="score"), "reward"),
    (dict(target_score=10**30), "target_score"),
])
def test_vecgame_constructor_refuses_wrong_types(kwargs, message):
    with pytest.raises(ValueError, match=message):
        VecGame("classic", **kwargs)


def test_the_private_unchecked_step_still_range_checks_ids():
    g = VecGame("basic", 2, seed=0, num_players=2)
    before = g.to_json(0) + g.to_json(1)
    for bad in (np.array([0, 85]), np.array([-1, 0]), np.array([2**40, 0])):
        with pytest.raises(ValueError, match="out of range"):
            g.internals.step_unchecked(bad)
        assert g.to_json(0) + g.to_json(1) == before
    assert "check" not in VecGame.step.__code__.co_varnames   # no public unchecked flag


@pytest.mark.parametrize("how", ["deepcopy", "pickle", "copy"])
def test_a_copied_game_plays_on_its_own_buffers(how):
    """copy.deepcopy / pickle of a VecGame: its state views, legal mask and step results
    follow the copy's own arrays, and it plays exactly as the original. copy.copy makes the
    same (before: a shallow copy that shared the state, not the legal mask kept for it)."""
    import copy
    import pickle

    from ono_env import random_legal
    g = VecGame("basic", 32, seed=4, num_players=2)
    g.legal_mask()
    h = {"deepcopy": copy.deepcopy, "copy": copy.copy,
         "pickle": lambda x: pickle.loads(pickle.dumps(x))}[how](g)
    assert np.shares_memory(h.state.current, h.state.g)
    assert not np.shares_memory(h.state.g, g.state.g)
    rg, rh = np.random.default_rng(1), np.random.default_rng(1)
    for _ in range(200):
        mg, mh = g.legal_mask().copy(), h.legal_mask().copy()
        fresh = h.legal_mask(which=np.ones(32, np.bool_)).copy()   # computed again
        assert np.array_equal(mh, mg) and np.array_equal(mh, fresh)
        rsg, rsh = g.step(random_legal(mg, rg)), h.step(random_legal(mh, rh))
        assert np.array_equal(rsh.rewards, rsg.rewards)
        assert np.array_equal(rsh.terminated, h.state.terminated != 0)
        assert np.array_equal(h.state.g, g.state.g)



def test_a_bool_among_integers_is_refused_as_a_bool_array_is():
    """Before: np.asarray([True, 0]) is the integers [1, 0], so a bool in a list was read as
    action, seat or game 1 (a bool array alone was refused)."""
    from ono_env.agents.base import check_actions
    from ono_env.agents.search import SearchAgent
    from ono_env.envs.sb3 import OnoVecEnv

    g = VecGame("basic", 2, seed=0, num_players=2)
    mask = g.legal_mask().copy()
    rng = np.random.default_rng(0)
    venv = OnoVecEnv("basic", num_envs=2, num_players=2, seed=0)
    venv.reset()
    for call, message in (
            (lambda: g.step([True, 0]), "actions must be an integer array of shape (2,); got bool"),
            (lambda: g.observe([True, 0]), "seats must be an integer array of shape (2,) with "
                                           "seats 0..1; got bool"),
            (lambda: SearchAgent(g.rules, 4).act_game(g, [np.True_, 0], rng),
             "act_game: rows is bool (2,)"),
            (lambda: venv.step(np.array([True, 0], dtype=object).tolist()),
             "actions must be an integer array of shape (2,); got bool"),
            (lambda: check_actions("agent", (True, 0), mask), "'agent'.act returned bool (2,)")):
        with pytest.raises(ValueError, match=re.escape(message)):
            call()
    assert np.array_equal(g.legal_mask(), mask)   # nothing moved
    assert g.observe([1, 0]).shape[0] == 2 and len(check_actions("a", [0, 0], np.ones((2, 85), bool))) == 2


def _refusal(call):
    with pytest.raises(ValueError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("call, fragment", [
    # random_legal: before, rng=None was an AttributeError, a 1-D mask gave 85 zeros and a
    # float mask was read as bools
    (lambda: ono_env_random_legal(np.ones((2, 85), bool), None), "allowed: a numpy.random.Generator"),
    (lambda: ono_env_random_legal(np.ones(85, bool), np.random.default_rng(0)), "allowed: a (B, 85) array"),
    (lambda: ono_env_random_legal(np.ones((2, 85)), np.random.default_rng(0)), "float64 (2, 85)"),
    (lambda: ono_env_random_legal(np.full((2, 85), 2, np.int8), np.random.default_rng(0)),
     "values other than 0 and 1"),
    # game_seeds: before, 2.7 was 2, True 1 and -1 2**64 - 1
    (lambda: game_seeds(2.7, 2), "seed=2.7 (float)"),
    (lambda: game_seeds(True, 2), "seed=True (bool)"),
    (lambda: game_seeds(-1, 2), "seed=-1; allowed: an integer from 0"),
    (lambda: game_seeds(0, -1), "num_games=-1; allowed: an integer from 0 to"),
    # a rules mapping whose name is not text: before, a bare TypeError (unhashable)
    (lambda: RuleSet.from_dict({"name": ["a"]}), "needs 'preset'"),
    # a preset given as null: before, taken as left out (the base then the name "ono")
    (lambda: RuleSet.from_dict({"preset": None, "name": "ono"}), "preset is empty (null); allowed"),
    # before: ZeroDivisionError, "math domain error", a bare StopIteration, "unhashable", a
    # preset's name matched no model silently, and play() read a name letter by letter
    (lambda: default_margin(0), "default_margin: worlds=0; allowed: an integer >= 1"),
    (lambda: prior_margin(-1), "prior_margin: worlds=-1; allowed: an integer >= 1"),
    (lambda: load_suite(1).tables["basic-2p"].reference("nobody"),
     "table basic-2p has no reference 'nobody'; its field: "),
    (lambda: select_tables(load_suite(1), [["basic-2p"]]), "suite version 1 has no table "
     "['basic-2p']"),
    (lambda: shipped_specialists("basic"), "shipped_specialists: rules is a str; allowed: a "
     "RuleSet"),
    (lambda: play_one("greedy"), "agents='greedy' (str); allowed: a list of agent names"),
    (lambda: parse_choice(5, [0]), "parse_choice: text is a int; allowed: the text typed"),
    # the ratings' fits: before, bare KeyErrors
    (lambda: fit_ratings(["a", "b"], [], "c", 1000), "anchor 'c' is not in the field; allowed: "
     "one of 'a', 'b'"),
    (lambda: fit_ratings(["a", "b"], [{"agent": "a", "reference": "b", "games": 2, "wins": 1}],
                         "a", 1000), "pairing of 'a' against 'b': no players; allowed: a pairing "
     "with agent, reference, players, games and wins"),
    (lambda: place_agent({"a": 1000}, [{"games": 2, "wins": 1}], 2, 1000), "no reference; "
     "allowed: a pairing with reference, games and wins"),
    (lambda: play_pairing("classic", None, None, 2, 0, 16), "play_pairing: rules is a str; "
     "allowed: a RuleSet"),
    (lambda: make_opponents("greedy", "basic"), "make_opponents: rules is a str; allowed: a RuleSet"),
    # option_code: before, Python's KeyError and "tuple.index(x): x not in tuple"
    (lambda: option_code("bogus", "x"), "option_code: option 'bogus'; allowed: dealer, "),
    (lambda: option_code("dealer", "bogus"), "option_code: dealer='bogus'; allowed: random | "
     "highest_card | highest_number"),
    # without a preset: before, neither the misspelt option nor the name was named
    (lambda: RuleSet.from_dict({"draw_until": True}), "unknown rule option(s) 'draw_until'"),
    (lambda: RuleSet.from_dict({"name": "zzz"}), "every option; its name 'zzz' is not a preset's"),
    (lambda: RuleSet.from_dict({"preset": "basic", "name": ["a"]}), "name=['a']; allowed: a string"),
    # before: taken, and listed at the web table as "basic " or "Basic" rules
    (lambda: RuleSet.preset("classic", name="basic "),
     "name='basic '; allowed: a name that is not blank and has no space at either end"),
    (lambda: RuleSet.preset("classic", name=" "), "name=' '; allowed: a name that is not blank"),
    (lambda: RuleSet.preset("classic", name="Basic"),
     "name='Basic'; allowed: a name that is not a preset's in other letter cases or forms "
     "('basic' is the preset's)"),
    # before: taken, and headed as its rules (the full-width "ono", U+FF4F U+FF4E U+FF4F)
    (lambda: RuleSet.preset("classic", name="\uff4f\uff4e\uff4f"),
     "allowed: a name that is not a preset's in other letter cases or forms ('ono' is the "
     "preset's)"),
    # from_dict's own arguments: before, "got multiple values"
    (lambda: VecGame.from_dict(VecGame("basic", 1, seed=0).to_dict(), seed=5),
     "from_dict sets seed itself"),
    (lambda: VecGame.from_dict(VecGame("basic", 1, seed=0).to_dict(), num_games=2),
     "from_dict sets num_games itself"),
    # a rule option: before, refused as though the position's rules were wrong
    (lambda: VecGame.from_dict(VecGame("ono", 1, seed=3).to_dict(), stacking=True),
     "from_dict: stacking (rule options, or unknown): the position's rules are the game's; "
     "allowed keyword arguments: autoreset, skip_forced, max_decisions, reward, "
     "observation_version"),
])
def test_loose_inputs_of_the_library_are_refused_by_name(call, fragment):
    assert fragment in _refusal(call)


def _search_call(rows=(0,), game=None, rng=0):
    rules = RuleSet.preset("basic", num_players=2)
    game = VecGame(rules, 2, seed=0) if game is None else game
    rng = np.random.default_rng(0) if rng == 0 else rng
    return make_agent("pimc:2", rules).act_game(game, np.asarray(rows), rng)


def _act_one(game=None, agent=None, rng=0):
    from ono_env.agents.driver import act_one
    rules = RuleSet.preset("basic", num_players=2)
    return act_one(make_agent("greedy", rules) if agent is None else agent, "greedy",
                   VecGame(rules, 1, seed=0) if game is None else game,
                   np.random.default_rng(0) if rng == 0 else rng)


def _search_agent(**kwargs):
    from ono_env.agents.search import SearchAgent
    return SearchAgent(RuleSet.preset("basic", num_players=2), 2, **kwargs)


def _replay_positions(replay, **kwargs):
    from ono_env.replay import Replay, replay_positions
    if replay is None:
        replay = Replay(RuleSet.preset("basic", num_players=2), 0, None, ["a", "b"], [])
    return replay_positions(replay, **kwargs)


def _read_arena_json(path):
    from ono_env.arena.results import read_arena_json
    return read_arena_json(path)


def _load_config(spec):
    from ono_env.train.config import load_config
    return load_config(spec)


def _color_permutation(perm):
    from ono_env.observation import color_permutation
    return color_permutation(perm, "basic")


def _agreement(**kwargs):
    from ono_env.arena import agreement
    return agreement("greedy", "greedy", "basic", 4, **kwargs)


def _finished_game():
    game = VecGame(RuleSet.preset("basic", num_players=2), 1, seed=0)
    rng = np.random.default_rng(0)
    while game.legal_mask().any():
        game.step(ono_env_random_legal(game.legal_mask(), rng))
    return game


def _render(seat=None, game=None, **kw):
    from ono_env.render import render_text

    return render_text(VecGame("classic", 1, seed=3) if game is None else game, 0, seat=seat,
                       **kw)


@pytest.mark.parametrize("call, fragment", [
    # card and action names: before, True was 'play R1', 2.7 'play R2' and '3' 'play R3'
    # (int() of each), and a None name an AttributeError
    (lambda: action_name(True), "action id True (bool); allowed: an integer 0..84"),
    (lambda: action_name(2.7), "action id 2.7 (float)"),
    (lambda: action_name("3"), "action id '3' (str)"),
    (lambda: action_name(85), "action id 85 (int); allowed: an integer 0..84"),
    (lambda: card_name(1.5), "card id 1.5 (float); allowed: an integer 0..55"),
    (lambda: action_id(None), "action name None (NoneType); allowed: a string"),
    (lambda: card_id(None), "card name None (NoneType); allowed: a string"),
    # before: 'R' + U+017F was 'RS' (U+017F upper-cases to S), as action_id already refused
    (lambda: card_id("R\u017f"), "unknown card 'R\u017f'"),
    # render_text's seat: before, True and 1.0 showed seat 1's hand, 7, -1 and '1' none
    (lambda: _render(seat=True), "seat=True (bool); allowed: None (every hand shown) or a "
                                 "seat 0..3"),
    (lambda: _render(seat=1.0), "seat=1.0 (float)"),
    (lambda: _render(seat=7), "seat=7 (int)"),
    (lambda: _render(seat=-1), "seat=-1 (int)"),
    (lambda: _render(seat="1"), "seat='1' (str)"),
    # and its other arguments: before, a text history was shown a character a line,
    # ansi='no' coloured the table, and a game of None was an AttributeError
    (lambda: _render(history="play R5"), "history='play R5'; allowed: a list of lines (text)"),
    (lambda: _render(history=[1]), "history=[1]; allowed"),
    (lambda: _render(ansi="no"), "ansi='no' (str); allowed: True or False"),
    (lambda: _render(game=1), "game is a int; allowed: a VecGame"),
    # a search agent's rows go to compiled code: before, 10**7 ended the process with a
    # segmentation fault, 5 gave -1, -1 the last game and bools rows 1 and 0
    (lambda: _search_call([10**7]), "rows holds [10000000]; allowed: a 1-D integer array of "
                                    "game indices 0 to 1"),
    (lambda: _search_call([-1]), "rows holds [-1]"),
    (lambda: _search_call([True, False]), "rows is bool (2,)"),
    (lambda: _search_call([[0]]), "rows is int64 (1, 1)"),
    (lambda: _search_call(game="basic"), "act_game: game is a str; allowed: a VecGame"),
    (lambda: _search_call(rng=None), "act_game: rng is a NoneType"),
    # act_one (the terminal and web tables): before, a two-game batch was played as its first
    # game, a finished game blamed the agent, and a name or rng=None an AttributeError
    (lambda: _act_one(game=VecGame("basic", 2, seed=0)),
     "act_one: game is a VecGame of 2 games; allowed: a VecGame of one game"),
    (lambda: _act_one(agent="greedy"), "act_one: agent 'greedy' has no act method"),
    (lambda: _act_one(rng=None), "act_one: rng is a NoneType"),
    (lambda: _act_one(game=_finished_game()), "act_one: the game is over (no legal action)"),
    # the rest of the audit's loose inputs: before, margin "0.5" and True were read by
    # float(), a replay given as a dict or a rules name an AttributeError, check_result "no"
    # as true, [True, False, 2, 3] as a permutation, 2**70 steps an OverflowError, and
    # agreement's seed None a run that no seed repeats
    (lambda: _search_agent(margin="0.5"), "margin='0.5' (str); allowed: a number"),
    (lambda: _search_agent(margin=True), "margin=True (bool)"),
    (lambda: _search_agent(name=5), "name=5 (int); allowed: None"),
    (lambda: _replay_positions({}), "replay is a dict; allowed: a Replay"),
    (lambda: _replay_positions(None, check_result="no"), "check_result='no' (str)"),
    (lambda: _read_arena_json(None), "arena.json: a file or folder path is needed; got None"),
    # before: a bare OSError (a name too long), Python's "embedded null byte" naming no file
    (lambda: _read_arena_json("a" * 300), "cannot read arena.json 'aaaa"),
    (lambda: _read_arena_json("a\x00"), "arena.json: the path 'a\\x00' holds a NUL character; "
                                        "allowed: a file or folder path without one"),
    (lambda: _load_config("a" * 300), "cannot read training config 'aaaa"),
    (lambda: _color_permutation([True, False, 2, 3]), "color permutation [True, False, 2, 3]"),
    (lambda: VecGame("basic", 1, seed=0).play_random(2**70), "steps=1180591620717411303424;"),
    (lambda: RuleSet.preset("basic").differing_fields("classic"),
     "differing_fields: other is a str; allowed: a RuleSet"),
    (lambda: _agreement(seed=None), "seed=None (NoneType)"),
])
def test_unchecked_entry_points_of_agents_and_cards_are_refused_by_name(call, fragment):
    assert fragment in _refusal(call)


def test_the_play_apps_text_helpers_name_what_they_lack():
    from ono_env import render
    from ono_env.rule_help import plain
    d = VecGame("ono", 1, seed=3, num_players=3).to_dict(0)
    assert isinstance(render.table_events(d, d, 0, 0), list) and render.deal_events(d)
    # before: KeyError 'hands' / 'round' / 'rules', IndexError, TypeError, AttributeError
    for call, message in [
            (lambda: render.table_events({}, d, 0, 0), r"^table_events: the position before \{\} "
                                                       r"lacks 'version', 'rules', 'hands', 'stock', "
                                                       r"'discard' and 20 more; allowed: a position"),
            (lambda: render.table_events(d, [], 0, 0), r"^table_events: the position after \[\]"),
            (lambda: render.deal_events({}), r"^deal_events: the position"),
            (lambda: render.round_end_text({}, {}), r"^round_end_text: the position before"),
            (lambda: render.option_hint(0, {}), r"^option_hint: the position"),
            (lambda: render.challenge_reveal({}, 0, 0), r"^challenge_reveal: the position"),
            (lambda: render.color_card("", True), r"^color_card: name=''; allowed: a card's name"),
            (lambda: render.personal(None, 0), r"^personal: line=None, seat=0; allowed: an event"),
            (lambda: plain(None), r"^plain: text=None \(NoneType\); allowed: text"),
            # the seat and the options (before: a TypeError inside, "PNone" and "Px" written, and
            # seat 99's events told of a reshuffle that no seat made)
            (lambda: render.table_events(d, d, "a", 66), r"^table_events: player='a'; allowed: a "
                                                         r"seat, an integer from 0 to 2$"),
            (lambda: render.table_events(d, d, 99, 0), r"^table_events: player=99; allowed: a seat"),
            (lambda: render.option_hint(66, d, None), r"^option_hint: legal=None; allowed: a "
                                                      r"sequence of action ids"),
            (lambda: render.option_hint(action_id("catch"), d), r"^option_hint: 'catch' is no "
                                                                r"option at this position"),
            (lambda: render.challenge_reveal(d, 0, action_id("challenge")),
             r"^challenge_reveal: 'challenge' is no option at this position"),
            (lambda: render.challenge_reveal(d, None, 0), r"^challenge_reveal: player=None"),
            (lambda: render.describe_action("x", 66), r"^describe_action: player='x'; allowed: a "
                                                      r"seat, an integer from 0 to 9$")]:
        with pytest.raises(ValueError, match=message):
            call()
    assert render.describe_action(np.int64(2), 66) == "P2: draw"
    assert render.option_hint(66, d, np.array([66])) == render.option_hint(66, d, [66])


def test_custom_agents_that_lack_an_ability_are_named_not_crashed_on():
    from ono_env.agents.driver import AgentDriver, act_one
    from ono_env.arena import run_arena
    rules = RuleSet.preset("basic", num_players=2)
    game = VecGame(rules, 1, seed=0)

    class NoActGame:   # declares uses_game, has no act_game
        name, uses_game = "g1", True

        def act(self, obs, mask, rng):
            return mask.argmax(axis=1)

    class NoValues(NoActGame):   # act_game, but no last_values: decides, reports nothing
        name = "g2"

        def act_game(self, game, rows, rng):
            return game.legal_mask()[rows].argmax(axis=1)

    class ExplainsNothing:   # an explain that returns None
        name = "e"

        def act(self, obs, mask, rng):
            return mask.argmax(axis=1)

        def explain(self, obs, mask):
            return None
    # before: AttributeError 'act_game' / 'last_values', TypeError from unpacking None
    # named by its label and class (before: Python's <... object at 0x...>)
    with pytest.raises(ValueError, match=r"^'g1' \([\w.]+\.<locals>\.NoActGame\) declares "
                                         r"uses_game but has no act_game method"):
        act_one(NoActGame(), "g1", game, np.random.default_rng(0))
    action, thinking = act_one(NoValues(), "g2", game, np.random.default_rng(0))
    assert game.legal_mask()[0, action] and thinking is None
    # a game agent's actions are checked as an agent's are (before: a copy of the check,
    # which read [True] as action 1)
    from ono_env.agents.search import game_actions

    class SaysTrue(NoActGame):
        name = "g3"

        def act_game(self, game, rows, rng):
            return [int(np.flatnonzero(game.legal_mask()[0])[0]), True]
    two = VecGame(rules, 2, seed=0)
    with pytest.raises(ValueError, match=r"^'g3' \(.*SaysTrue\)\.act_game returned bool \(2,\); "
                                         r"expected \(2,\) integers$"):
        game_actions(SaysTrue(), two, np.array([0, 1]), two.legal_mask(), np.random.default_rng(0))
    class Illegal(NoActGame):
        def act_game(self, game, rows, rng):
            return np.full(len(rows), 84)
    # named, with the game's legal actions (before: the id alone)
    with pytest.raises(ValueError, match=r"chose illegal action 84 \('target 9'\) in game 0; legal "
                                         r"there: (play|draw)"):
        game_actions(Illegal(), game, np.array([0]), game.legal_mask(), np.random.default_rng(0))
    class CheatsIllegal(Illegal):
        cheating = True

    # rows past the batch, or not whole numbers: before, the compiled kernels read them
    # unchecked (a segmentation fault at 10**7, a world from memory past the arrays at 9)
    from ono_env.agents.search import seat_world
    for bad, said in ((np.array([10**7]), r"holds \[10000000\]"), (np.array([9]), r"holds \[9\]"),
                      (np.array([0.5]), "is float64 \\(1,\\)")):
        with pytest.raises(ValueError, match=rf"^seat_world: rows {said}; allowed: a 1-D "
                                             rf"integer array of game indices 0 to 1$"):
            seat_world(two, bad, np.random.default_rng(0))
        with pytest.raises(ValueError, match=rf"^game_actions: rows {said}; allowed: "):
            game_actions(Illegal(), two, bad, two.legal_mask(), np.random.default_rng(0))
        # one that cheats is given the live game, not worlds: the same check, its own
        with pytest.raises(ValueError, match=rf"^game_actions: rows {said}; allowed: "):
            game_actions(CheatsIllegal(), two, bad, two.legal_mask(), np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"^seat_world: game is a str; allowed: a VecGame$"):
        seat_world("basic", np.array([0]), np.random.default_rng(0))
    result = run_arena([NoValues(), "random"], rules, num_games=4, seed=0, record=2)
    assert len(result.replays) == 2 and all(t is None for r in result.replays for t in r.thinking)
    with pytest.raises(ValueError, match=r"agent 'e': explain returned None; allowed: "
                                         r"\(probabilities of shape \(1, 85\)"):
        run_arena([ExplainsNothing(), "random"], rules, num_games=4, seed=0, record=2)
    # another shape is refused too, not reshaped (a row of 85, values of shape (1, 1))
    ExplainsNothing.explain = lambda self, obs, mask: (np.full(85, 1 / 85), None)
    with pytest.raises(ValueError, match=r"agent 'e': explain returned"):
        run_arena([ExplainsNothing(), "random"], rules, num_games=4, seed=0, record=2)
    ExplainsNothing.explain = lambda self, obs, mask: (np.full((1, 85), 1 / 85), np.zeros((1, 1)))
    with pytest.raises(ValueError, match=r"agent 'e': explain returned"):
        run_arena([ExplainsNothing(), "random"], rules, num_games=4, seed=0, record=2)
    NoValues.last_values = np.zeros(85)   # values, but not a row for each game asked
    with pytest.raises(ValueError, match=r"last_values is float64 \(85,\); allowed: None, or an "
                                         r"array of a row of 85 values for each game"):
        act_one(NoValues(), "g2", game, np.random.default_rng(0))
    # before: AttributeError from None, and from a name at the first step
    with pytest.raises(ValueError, match=r"^AgentDriver: game is a NoneType; allowed: a VecGame"):
        AgentDriver(None, [])
    with pytest.raises(ValueError, match=r"^AgentDriver: agents\[0\] = 'greedy' has no act method"):
        AgentDriver(game, ["greedy"])
    # a class (it has act too: before, a TypeError at its first decision), and a play whose
    # rng is no generator (before: read only where a Python agent drew, 1.5 played)
    from ono_env.agents import GreedyAgent
    with pytest.raises(ValueError, match=r"^AgentDriver: agents\[0\] is the class GreedyAgent "
                                         r"itself; allowed: an agent object"):
        AgentDriver(game, [GreedyAgent])
    with pytest.raises(ValueError, match=r"^act_one: agent is the class GreedyAgent itself"):
        act_one(GreedyAgent, "x", game, np.random.default_rng(0))
    driver = AgentDriver(game, [make_agent("greedy", rules)])
    driver.seat_agent[:] = 0
    for rng in (1.5, None):
        with pytest.raises(ValueError, match=r"^AgentDriver.play: rng"):
            driver.play(rng)


def test_a_game_changed_by_another_thread_at_that_moment_is_refused():
    """The kernels run without Python's lock: before, two threads stepping one VecGame
    corrupted about half its games silently. A call that would change the game while another
    holds it is one RuntimeError, and changes nothing; the game is otherwise as it was."""
    import copy
    import pickle
    import threading

    from ono_env.game import random_legal
    game = VecGame("classic", 8, seed=0, num_players=4)
    before = [game.to_dict(i) for i in range(8)]
    rng = np.random.default_rng(0)
    action = random_legal(game.legal_mask(), rng)
    held = threading.Event()
    done = threading.Event()

    def other():   # another thread in the middle of changing the game
        with game._lock:
            held.set()
            done.wait(10)
    t = threading.Thread(target=other)
    t.start()
    held.wait(10)
    try:
        for call in (lambda: game.step(action), lambda: game.reset(seed=1),
                     lambda: game.play_random(5), lambda: game.set_position(0, before[1]),
                     lambda: game.internals.step_unchecked(action),
                     lambda: game.step_and_observe(action),
                     lambda: game.legal_mask(np.ones(8, bool))):   # writes the mask it keeps
            with pytest.raises(RuntimeError, match=r"^this VecGame is being changed by another "
                                                   r"thread at this moment; allowed: one thread"):
                call()
    finally:
        done.set()
        t.join()
    assert [game.to_dict(i) for i in range(8)] == before
    game.step(action)   # the lock is free again; and copies and pickles get a lock of their own
    for twin in (copy.copy(game), copy.deepcopy(game), pickle.loads(pickle.dumps(game))):
        assert twin._lock is not game._lock and twin.to_dict(3) == game.to_dict(3)
        twin.step(random_legal(twin.legal_mask(), rng))
    # two threads at it for real: one of them is refused now and then, no game breaks
    from ono_env.positions import read_position
    shared = VecGame("classic", 200, seed=0, num_players=4)

    def play(k):
        r = np.random.default_rng(k)
        for _ in range(60):
            try:
                shared.step(random_legal(shared.legal_mask(), r))
            except (ValueError, RuntimeError):   # a stale action, or the other thread's turn
                pass
    threads = [threading.Thread(target=play, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(200):
        read_position(shared.to_dict(i), shared.rules)   # ValueError for a broken game

def test_a_game_an_agent_driver_is_playing_is_refused_to_another_thread():
    """Before: the driver moved the game in compiled code without its lock, and another
    thread's reset in the middle of a play was taken."""
    import threading

    from ono_env.agents import make_agent
    from ono_env.agents.driver import AgentDriver

    inside, go = threading.Event(), threading.Event()

    class Waits:   # a Python agent: the driver's play waits in it
        def act(self, obs, mask, rng):
            inside.set()
            go.wait(30)
            return mask.argmax(axis=1)
    game = VecGame("basic", 4, seed=0, num_players=2)
    driver = AgentDriver(game, [Waits(), make_agent("greedy", game.rules)])
    driver.seat_agent[:] = [0, 1]
    other = threading.Thread(target=driver.play, args=(np.random.default_rng(0),))
    other.start()
    assert inside.wait(30)
    try:
        before = [game.to_dict(i) for i in range(4)]
        with pytest.raises(RuntimeError, match=r"^this VecGame is being changed by another"):
            game.reset(seed=1)
        assert [game.to_dict(i) for i in range(4)] == before
    finally:
        go.set()
        other.join(30)
    game.reset(seed=1)   # free again


def test_two_threads_observing_one_game_each_see_only_their_own_seat():
    """``observe`` takes no lock (a read). Before, it filled one buffer with the seat asked
    for and its kernel read that buffer without Python's lock: a second thread's call
    refilled it meanwhile, and each thread got rows of the other seat's hand (thousands of
    3,000 calls' rows)."""
    import threading

    from ono_env.observation import observation_view
    game = VecGame("basic", 256, seed=1, num_players=2)
    hands = game.state.hands.astype(np.float32)
    wrong = [0, 0]

    def watch(seat):
        for _ in range(400):
            seen = observation_view(game.observe(seat), game.rules).hand
            wrong[seat] += int((~np.all(seen == hands[:, seat], axis=1)).sum())
    threads = [threading.Thread(target=watch, args=(seat,)) for seat in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == [0, 0]
    assert game.observe(1).shape == (256, game.observation_size)   # and alone, as before
    np.testing.assert_array_equal(observation_view(game.observe(0), game.rules).hand, hands[:, 0])



def test_a_long_play_random_stops_at_ctrl_c_and_plays_as_one_call(monkeypatch):
    # before: one compiled call for every step, which Ctrl-C could not stop: 10**12 steps ran
    # for hours
    import subprocess
    import sys
    script = ("import signal, numpy as np\n"
              "from ono_env import VecGame\n"
              "from ono_env.positions import read_position\n"
              "g = VecGame('classic', 3, seed=1, num_players=4)\n"
              "g.play_random(1)\n"   # its kernel loaded: the alarm lands in the loop's pieces
              "def stop(*_): raise KeyboardInterrupt\n"
              "signal.signal(signal.SIGALRM, stop)\n"
              "signal.setitimer(signal.ITIMER_REAL, 0.3)\n"
              "try:\n"
              "    g.play_random(10**12)\n"
              "except KeyboardInterrupt:\n"
              "    [read_position(g.to_dict(i), g.rules) for i in range(3)]\n"
              "    g.play_random(5)\n"
              "    print('stopped')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "stopped", done.stderr[-2000:]
    # the pieces go on where the last one stopped: the same games and count as one call
    import ono_env.game as game_module
    whole = VecGame("ono", 5, seed=3, num_players=3)
    taken = whole.play_random(700, seed=9)
    monkeypatch.setattr(game_module, "_RANDOM_PIECE", 7)   # one step a game a piece
    pieces = VecGame("ono", 5, seed=3, num_players=3)
    assert pieces.play_random(700, seed=9) == taken
    assert [pieces.to_dict(i) for i in range(5)] == [whole.to_dict(i) for i in range(5)]


def test_a_rendered_history_stays_on_its_line():
    # before: a terminal's escape and a newline were written as given
    text = _render(history=["P1: play R5\x1b[2J", "P2:\ndraw"])
    assert text.splitlines()[-1] == "last actions: P1: play R5?[2J | P2:?draw"


def test_the_checked_entry_points_still_play():
    assert action_name(np.int8(66)) == "draw" and card_name(np.uint8(53)) == "W+4"
    assert card_id(" b+2 ") == card_id("B+2")
    shown = [line for line in _render(np.int64(2)).splitlines() if line[2:4] == "P2"]
    assert len(shown) == 1 and "]: " in shown[0]   # seat 2's cards, by name
    assert "last actions: P1: play R5" in _render(history=("P1: play R5",))
    from ono_env.rule_help import describe_rules, preset_summary
    # rules as everywhere: a preset's name or a mapping (before: an AttributeError)
    assert describe_rules("classic") == describe_rules(RuleSet.preset("classic"))
    assert preset_summary({"preset": "basic", "num_players": 3}) == \
        preset_summary(RuleSet.preset("basic", num_players=3))
    assert _search_call([1, 0]).shape == (2,) and _search_call([]).shape == (0,)
    action, _ = _act_one()
    assert VecGame(RuleSet.preset("basic", num_players=2), 1, seed=0).legal_mask()[0, action]


def ono_env_random_legal(mask, rng):
    from ono_env import random_legal
    return random_legal(mask, rng)


@pytest.mark.parametrize("spec", ["pimc: 16", "pimc:+16", "pimc:1_6", "pimc:\u0661\u0666",
                                  "pimc:016", "pimc:16.0", "pimc:", "pimc:1e1ms", "pimc: 20 ms",
                                  "pimc:20 ms", "pimc:020ms", "ismcts:1e3"])
def test_a_search_budget_is_ascii_digits_as_written_in_the_docs(spec):
    # before, int() and float() read the first eight as pimc:16, pimc:10ms and pimc:20ms
    assert f"agent {spec!r}: " in _refusal(lambda: make_agent(spec, "basic"))


def test_a_taken_agent_name_is_replaced_only_when_asked_and_unregister_gives_it_back():
    from ono_env.agents import GreedyAgent, register_agent, unregister_agent
    from ono_env.agents.registry import agent_names
    before = agent_names()
    # before: register_agent("greedy", ...) silently replaced the baseline for every later
    # make_agent("greedy"), and unregister_agent("greedy") then took the name away
    for name in ("greedy", "ppo-any", "random"):
        msg = _refusal(lambda n=name: register_agent(n, lambda rules: RandomAgent()))
        assert f"agent name {name!r} is taken (a built-in agent's)" in msg and "replace=True" in msg
    assert isinstance(make_agent("greedy", "basic"), GreedyAgent)
    register_agent("mine-test", lambda rules: RandomAgent())
    try:
        assert "is taken (registered before)" in _refusal(
            lambda: register_agent("mine-test", lambda rules: GreedyAgent(rules)))
        assert "replace=1 (int); allowed: True or False" in _refusal(
            lambda: register_agent("mine-test", RandomAgent, replace=1))
        register_agent("mine-test", lambda rules: GreedyAgent(rules), replace=True)
        assert isinstance(make_agent("mine-test", "basic"), GreedyAgent)
        register_agent("greedy", lambda rules: RandomAgent(), replace=True)
        assert isinstance(make_agent("greedy", "basic"), RandomAgent)
    finally:
        unregister_agent("mine-test")
        unregister_agent("greedy")
    assert isinstance(make_agent("greedy", "basic"), GreedyAgent)   # the built-in again
    unregister_agent("random")                                      # a built-in never leaves
    assert agent_names() == before
    # before: Python's TypeError (unhashable type: 'list')
    assert _refusal(lambda: unregister_agent(["x"])) == ("agent name ['x']; allowed: a name "
                                                         "given to register_agent")


def test_a_registered_name_is_no_built_ins_in_another_form_and_its_errors_are_named():
    """Before: 'Random' and 'ppo-ANY' were taken beside the built-ins, 'X.ZIP' beside the
    model file it reads as, 'a\\b' (a path on Windows); a factory's own error came bare, and
    make_agent(None) listed no search agent."""
    import re

    from ono_env.agents import make_agent, register_agent, unregister_agent
    from ono_env.agents.registry import agent_names
    before = agent_names()
    for name, why in (("Random", "it is the built-in 'random' in other letter cases"),
                      ("ppo_ANY", "it is the built-in 'ppo-any' in other letter cases"),
                      ("PIMC", "it is the built-in 'pimc' in other letter cases"),
                      ("X.ZIP", "it reads as a model file's name"),
                      ("m.SafeTensors", "it reads as a model file's name"),
                      ("a\\b", "it holds '\\', which separates folders")):
        assert f"{why}" in _refusal(lambda n=name: register_agent(n, lambda r: RandomAgent()))
    assert agent_names() == before

    def broken(rules):
        return 1 / 0
    register_agent("mine-broken", broken)
    try:
        with pytest.raises(ZeroDivisionError) as info:
            make_agent("mine-broken", "basic")
        assert info.value.__notes__ == ["raised by the factory registered as agent "
                                        "'mine-broken'"]
    finally:
        unregister_agent("mine-broken")
    with pytest.raises(ValueError, match=re.escape("or a search agent: pimc, ")):
        make_agent(None)


def test_a_registered_name_is_printable_and_its_factory_takes_the_rules():
    from ono_env.agents import register_agent
    from ono_env.agents.registry import agent_names
    before = agent_names()
    # before: each was registered, and the factory failed only at make_agent
    for name in ("mine\ntest", " mine", "mine\t", "mine\x00", "m" * 201):   # 201: before, taken
        assert "allowed: a name of 1 to 200 printable characters that is not a path" in _refusal(
            lambda n=name: register_agent(n, lambda rules: RandomAgent()))
    # the same names for a pool member and a search agent (before: each taken)
    from ono_env.agents.search import SearchAgent
    from ono_env.envs.opponents import OpponentPool
    pool = OpponentPool({"greedy": 1}, "basic")
    for name in ("x\x1b[2J", "   ", "a\nb", "m" * 201):
        assert "allowed: None (the agent's own name) or 1 to 200 printable characters without " \
               "spaces at its ends" in _refusal(lambda n=name: pool.add("random", 1, name=n))
        assert "allowed: None (the default, what the search is: 'pimc:<worlds>', " \
               "'ismcts:20ms', ...) or 1 to 200 printable" in _refusal(
            lambda n=name: SearchAgent(RuleSet.preset("basic", num_players=2), 4, name=n))
    assert pool.names == ["greedy"]
    # an object's own name goes through agent_label (before: any name, or a repr)

    class Named(RandomAgent):
        name = "two\nlines"
    pool.add(Named(), 1)
    Named.name = None
    pool.add(Named(), 1, name="named-2")
    Named.name = 7
    pool.add(Named(), 1)
    assert pool.names == ["greedy", "two?lines", "named-2", "Named"]
    import functools

    def passing_on(f):   # a wrapper that passes every argument on to what it wraps
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            return f(*args, **kwargs)
        return wrapper

    for factory, why in ((lambda: RandomAgent(), "too many positional arguments"),
                         (lambda rules, seed: RandomAgent(), "missing a required argument"),
                         (RandomAgent, "too many positional arguments"),
                         (passing_on(lambda rules, seed: RandomAgent()), "missing a required"),
                         (functools.cache(lambda: RandomAgent()), "too many positional")):
        msg = _refusal(lambda f=factory: register_agent("mine-test", f))
        assert "the factory cannot be called with the rules alone" in msg and why in msg
    assert agent_names() == before
    register_agent("mine test", lambda rules, seed=0: RandomAgent())   # a space within: a name

    def with_seed(f):   # a decorator that supplies an argument its function needs
        @functools.wraps(f)
        def wrapper(rules):
            return f(rules, 0)
        return wrapper

    @with_seed
    def seeded(rules, seed):
        return RandomAgent()

    register_agent("mine-seeded", seeded)
    register_agent("mine-cached", functools.cache(lambda rules: RandomAgent()))
    try:
        for name in ("mine test", "mine-seeded", "mine-cached"):
            assert isinstance(make_agent(name, "basic"), RandomAgent)
    finally:
        from ono_env.agents import unregister_agent
        for name in ("mine test", "mine-seeded", "mine-cached"):
            unregister_agent(name)


@pytest.mark.parametrize("name", ["ppo-basic-2p", "ppo-any", "greedy"])
def test_an_agent_refuses_a_mask_that_does_not_fit_its_observations(name):
    from ono_env.agents.learned import LearnedAgent
    rules = RuleSet.preset("basic", num_players=2)
    agent = make_agent(name, rules)
    version = agent.observation_version if isinstance(agent, LearnedAgent) else 1
    game = VecGame(rules, 3, seed=0, observation_version=version)
    obs, mask = game.observe(game.current_player), game.legal_mask()
    rng = np.random.default_rng(0)
    played = agent.act(obs, mask, np.random.default_rng(0))
    assert mask[np.arange(3), played].all()
    assert (agent.act(obs, mask.astype(np.int8), np.random.default_rng(0)) == played).all()
    # before: a mask of one row was broadcast over all three observations, a float mask
    # read as bools and a list of rows turned into an array
    for bad, fragment in [(mask[:1], "mask is bool (1, 85); allowed: a (3, 85) array"),
                          (mask.astype(float), "mask is float64 (3, 85)"),
                          (mask[:, :80], "mask is bool (3, 80)"),
                          (list(mask), "mask is list"),
                          (mask.astype(np.int8) * 2, "mask holds values from 0 to 2")]:
        assert fragment in _refusal(lambda b=bad: agent.act(obs, b, rng))


@pytest.mark.parametrize("name", ["ppo-basic-2p", "ppo-any"])
def test_a_learned_agents_probabilities_check_what_act_checks(name):
    """Before: only act checked; probabilities and explain broadcast a one-row mask, read a
    float mask as bools, gave NaN for NaN observations or a row with nothing legal (with a
    RuntimeWarning), and NumPy's own errors for another width or an empty batch (ppo-any)."""
    import warnings

    rules = RuleSet.preset("basic", num_players=2)
    agent = make_agent(name, rules)
    game = VecGame(rules, 3, seed=0, observation_version=agent.observation_version)
    obs, mask = game.observe(game.current_player), game.legal_mask()
    for call in (agent.probabilities, agent.explain):
        for bad_obs, bad_mask, fragment in [
                (obs, mask[:1], "mask is bool (1, 85); allowed: a (3, 85) array"),
                (obs, mask.astype(float), "mask is float64 (3, 85)"),
                (obs * np.nan, mask, "observations hold values that are not finite"),
                (obs[:, :-1], mask, f"observations of shape (3, {obs.shape[1] - 1})"),
                (obs[0], mask, "observations of shape")]:
            assert fragment in _refusal(lambda o=bad_obs, m=bad_mask, c=call: c(o, m))
    none = mask.copy()
    none[1] = False   # a finished game's row: nothing legal
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p, value = agent.explain(obs, none)
    assert np.allclose(p.sum(axis=1), [1, 0, 1]) and not np.isnan(p).any()
    assert (p[~none] == 0).all() and value is not None and value.shape == (3,)
    p0, v0 = agent.explain(obs[:0], mask[:0])
    assert p0.shape == (0, 85) and v0.shape == (0,)


@pytest.mark.parametrize("spec, worlds, ms", [("pimc:16", 16, None), ("pimc:0.5ms", 64, 0.5),
                                              ("pimc:20ms", 64, 20.0), ("ismcts:64", 64, None)])
def test_the_search_budgets_the_docs_write_still_read(spec, worlds, ms):
    from ono_env.agents.search import _budget
    assert _budget(*spec.split(":")) == (worlds, ms)


def test_the_registry_refuses_a_factory_that_is_no_agent_and_a_name_that_hides_a_search():
    from ono_env.agents.learned import load_agent, shipped_models
    from ono_env.agents.registry import register_agent, unregister_agent
    register_agent("five", lambda rules: 5)
    try:
        assert "returned a int, not an agent" in _refusal(lambda: make_agent("five", "basic"))
        # before: the class itself was returned, and a learned agent of other rules played
        register_agent("a-class", lambda rules: RandomAgent)
        assert "returned the class RandomAgent, not an agent" in _refusal(
            lambda: make_agent("a-class", "basic"))
        register_agent("fixed", lambda rules: load_agent(shipped_models()["ppo-basic-2p"]))
        assert make_agent("fixed", RuleSet.preset("basic", num_players=2)).name == "ppo-basic-2p"
        assert "trained for 'basic' rules" in _refusal(
            lambda: make_agent("fixed", RuleSet.preset("classic", num_players=2)))
    finally:
        for name in ("five", "a-class", "fixed"):
            unregister_agent(name)
    for name in ("pimc", "pimc:16", "oracle-hands"):
        assert "would hide the search agent" in _refusal(lambda n=name: register_agent(n, RandomAgent))
    # before: greedy:2 was registered, a budget that greedy does not take
    for name in ("greedy:2", "mine:2", "mine:", "a b:C"):
        assert "allowed: a name without ':'" in _refusal(lambda n=name: register_agent(n, RandomAgent))
    register_agent("my_agents:Clever", lambda rules: RandomAgent())   # module:Class: taken
    unregister_agent("my_agents:Clever")
    assert make_agent("pimc:4", "basic").name.startswith("pimc")
    for bad in ("no", 0):
        assert "deterministic" in _refusal(
            lambda b=bad: load_agent(shipped_models()["ppo-basic-2p"], deterministic=b))


@pytest.mark.parametrize("text,finite,message", [
    ('{"a": 1, "a": 2}', False, "the key 'a' is given twice"),
    ('{"a": [{"b": 1, "b": 1}]}', False, "the key 'b' is given twice"),   # in a nested object too
    ("{", False, "Expecting property name enclosed in double quotes at line 1, column 2"),
    # json's own words end in "at" here (before: "starting at at line 1, column 7")
    ('{"a": "x', False, "Unterminated string starting at line 1, column 7"),
    ("[" * 100_000, False, "nested too deeply for Python's JSON reader"),
    (b"{\"a\": \xff}", False, "not UTF-8 text (invalid start byte at byte 6)"),
    ('{"utf16": 1}'.encode("utf-16"), False, "not UTF-8 text (invalid start byte at byte 0)"),
    ("[NaN]", True, "NaN, which JSON has not; allowed: finite numbers"),
    ("[-Infinity]", True, "-Infinity, which JSON has not; allowed: finite numbers"),
    ("[1e400]", True, "1e400, beyond a float's range; allowed: finite numbers"),
    ("[-" + "9" * 50 + ".5e999]", True, "-" + "9" * 36 + "..., beyond a float's range"),
])
def test_parse_json_refuses_what_no_project_file_holds(text, finite, message):
    """Every reader of a project file (positions, replays, arena.json, result cards, model
    metadata, old checkpoints, an optimizer's tables) goes through one strict reader; each
    refusal is one JSONError (a ValueError) saying what, never json's own exception types."""
    from ono_env.checks import JSONError, parse_json
    with pytest.raises(JSONError) as e:
        parse_json(text, finite=finite)
    assert str(e.value).startswith(message)


def test_parse_json_reads_what_the_writers_write():
    import sys

    from ono_env.checks import JSONError, parse_json
    # a byte order mark skipped where a person may have edited the file, else refused
    assert parse_json('\ufeff{"a": [1, 2.5]}', bom=True) == {"a": [1, 2.5]}
    assert parse_json(b'\xef\xbb\xbf{"a": "\xc3\xa9"}', bom=True) == {"a": "\u00e9"}
    for marked in ('\ufeff{}', b'\xef\xbb\xbf{}'):
        with pytest.raises(JSONError, match=r"^Unexpected UTF-8 BOM"):
            parse_json(marked)
    assert parse_json("[1e308, -0.0]") == [1e308, -0.0]
    got = parse_json("[NaN, 1e400]", finite=False)   # the arena's rows of no games hold NaN
    assert np.isnan(got[0]) and got[1] == float("inf")
    digits = sys.get_int_max_str_digits()
    with pytest.raises(JSONError, match=f"^a number of more than {digits:,} digits$"):
        parse_json("[" + "9" * (digits + 1) + "]")
    assert parse_json("[" + "9" * digits + "]") == [int("9" * digits)]


def test_shown_tells_long_integers_by_sign_and_digits():
    """Before: a cut integer read as another number, its sign lost, a NumPy integer's type
    took the room of its value, and past Python's digits limit repr itself failed."""
    import sys

    from ono_env.checks import shown
    assert shown(-10**30) == "<a negative integer of 31 digits>"
    assert shown(10**30) == "<an integer of 31 digits>"
    assert shown(np.int64(-1234567890)) == "-1234567890"
    assert shown(2**64) == "18446744073709551616"
    limit = sys.get_int_max_str_digits()
    try:
        sys.set_int_max_str_digits(1000)
        assert shown(10**2000) == "<an integer of over 1,000 digits>"
        assert shown(-10**1000) == "<a negative integer of over 1,000 digits>"
        assert shown(10**999) == "<an integer of 1,000 digits>"   # at the limit: counted
        # before: repr raised Python's ValueError, and a deep list its RecursionError
        assert shown([10**2000]) == "<a value of type list that cannot be shown>"
    finally:
        sys.set_int_max_str_digits(limit)
    deep: list = []
    for _ in range(sys.getrecursionlimit() * 2):
        deep = [deep]
    assert shown(deep) == "<a value of type list that cannot be shown>"

    class Broken:
        def __repr__(self):
            raise TypeError("no")
    assert shown([Broken()]) == "<a value of type list that cannot be shown>"


def test_messages_cut_values_through_shown():
    """Before: about a hundred messages cut a value with ``f"{x!r:.40}"``, so an integer of
    41-70 digits read as another number, and one past Python's digits limit raised Python's
    own error in place of the message (the PettingZoo env's step, OpenSpiel's actions)."""
    import re
    from pathlib import Path

    from ono_env.envs.ono_v0 import env as make_env
    root = Path(__file__).resolve().parent.parent
    cuts = [f"{p.relative_to(root)}:{k}" for d in ("ono_env", "agents", "train", "benchmarks")
            for p in sorted((root / d).rglob("*.py"))
            for k, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"\{[^{}]+![rs]:\.\d+\}", line) and '``f"' not in line]
    assert cuts == []
    e = make_env()
    e.reset(seed=0)
    for action, told in ((10**70, "<an integer of 71 digits>"),
                         (10**5000, "<an integer of over")):
        with pytest.raises(AssertionError, match=f"action {told}"):
            e.step(action)
    spiel = pytest.importorskip("pyspiel")
    import ono_env.envs.openspiel  # noqa: F401 (registers the game)
    state = spiel.load_game("python_ono").new_initial_state()
    while state.is_chance_node():
        state.apply_action(state.legal_actions()[0])
    with pytest.raises(ValueError, match="action=<an integer of over"):
        state.apply_action(10**5000)
    # the core's names and indices too (before: Python's own error past its digits limit,
    # naming neither the argument nor what is allowed)
    from ono_env import action_name, card_name
    game = VecGame("classic", 1, seed=0)
    for call, told in ((lambda: action_name(10**5000), "action id <an integer of over"),
                       (lambda: card_name(10**5000), "card id <an integer of over"),
                       (lambda: game.to_dict(10**5000), "game index <an integer of over"),
                       (lambda: game.legal_action_names(10**5000), "game index <an integer"),
                       (lambda: game.set_position(10**5000, game.to_dict(0)), "game index <an"),
                       (lambda: game.reset(seeds=[10**5000]), r"seeds\[0\]=<an integer of over"),
                       (lambda: card_name("x" * 5000), "card id 'xxx.*\\.\\.\\. \\(str\\); allowed")):
        with pytest.raises(ValueError, match="^" + told) as exc:
            call()
        assert len(str(exc.value)) < 200
