"""Training over many tables at once (``tables`` in a training config), and models on
version-2 observations: parsing and refusals, a tiny two-table run end to end (checkpoint,
resume, the model as an agent under other rules and player counts), the model format."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from ono_env.train.config import load_config

TWO_TABLES = ["observation_version=2",
              "tables=[{rules: ono, num_players: 3, weight: 1}, {rules: basic, weight: 2}]"]


def test_a_mixture_parses():
    cfg = load_config("default", TWO_TABLES)
    assert [(t.rules, t.num_players, t.weight) for t in cfg.tables] == [("ono", 3, 1.0),
                                                                        ("basic", 2, 2.0)]
    assert cfg.observation_version == 2
    gen = load_config("generalist")
    assert gen.observation_version == 2 and len(gen.tables) >= 24
    assert {t.rules for t in gen.tables} == {"basic", "classic", "ono", "stacking", "uno2018",
                                             "wikipedia"}


def test_a_mixtures_printed_config_leaves_out_the_unread_rules_and_loads_back(tmp_path):
    import yaml

    from ono_env.train.config import dump_config

    cfg = load_config("generalist")
    text = dump_config(cfg)
    data = yaml.safe_load(text)
    assert "rules" not in data and "num_players" not in data   # each table names its own
    assert [t["rules"] for t in data["tables"]][:2] == ["basic", "basic"]
    (tmp_path / "printed.yaml").write_text(text)
    assert load_config(str(tmp_path / "printed.yaml")) == cfg
    # a single table keeps them: it reads them
    one = yaml.safe_load(dump_config(load_config("default", ["rules=ono", "num_players=3"])))
    assert (one["rules"], one["num_players"]) == ("ono", 3)


@pytest.mark.parametrize("overrides, message", [
    (["tables=[{rules: nope}]", "observation_version=2"],
     "tables\\[0\\].rules: no rules file 'nope'.*basic, ono, classic, stacking, uno2018, wikipedia"),
    (["tables=[{rules: {preset: ono, stacking: maybe}}]", "observation_version=2"],
     "tables\\[0\\].rules: invalid rule set: stacking='maybe'; allowed: true or false"),
    (["tables=[{rules: ono, weight: 0}]", "observation_version=2"],
     "'tables.0.weight' = 0: Input should be greater than 0"),
    (["tables=[{rules: ono, weight: -2}]", "observation_version=2"],
     "'tables.0.weight' = -2: Input should be greater than 0"),
    (["tables=[{rules: ono, weight: '3'}]", "observation_version=2"],
     "'tables.0.weight' = '3': Input should be a valid number"),
    (["tables=[{rules: ono, num_players: 11}]", "observation_version=2"],
     "'tables.0.num_players' = 11: Input should be less than or equal to 10"),
    (["tables=[{rules: ono, num_players: 1}]", "observation_version=2"],
     "'tables.0.num_players' = 1: Input should be greater than or equal to 2"),
    (["tables=[{rules: ono, players: 4}]", "observation_version=2"],
     "unknown config field 'tables.0.players'; allowed: tables.0.rules, tables.0.num_players"),
    (["tables=[]", "observation_version=2"], "'tables' = \\[\\]: List should have at least 1"),
    (["tables=[{rules: ono, name: a}, {rules: basic, name: A}]", "observation_version=2"],
     "tables\\[1\\].name='A' is taken by tables\\[0\\] \\('a'\\); allowed: a name no other "
     "table has, in upper or lower case"),
    (["tables=[{rules: ono, name: 'my/table'}]", "observation_version=2"],
     "'tables.0.name' = 'my/table': allowed: 1-64 letters, digits, '.', '_' and '-', the first"),
    (["tables=[{rules: ono, name: ''}]", "observation_version=2"],
     "'tables.0.name' = '': allowed: 1-64 letters"),
    (["tables=[{rules: ono}]"], "tables \\(a mixture\\) needs observation_version: 2"),
    (["tables=[{rules: ono}]", "observation_version=2", "rules=classic"],
     "with tables, rules and num_players are not read, and this config sets rules='classic' "
     "\\(a shipped config's or an override's\\); allowed: rules=basic and num_players=2"),
    (["tables=[{rules: ono}]", "observation_version=2", "rules=classic", "num_players=4"],
     "this config sets rules='classic' and num_players=4 "),
    # a table's label, from its rules' name, names a folder: it cannot leave tables/
    (["tables=[{rules: {preset: basic, name: '../../escape'}}, {rules: ono}]",
      "observation_version=2"],
     "tables\\[0\\]: a table without a name is called <rules name>-<N>p, which names its folder "
     "tables/<name>/, and the rules' name '../../escape' makes that '../../escape-2p'; allowed: "),
    (["opponents={greedy: 1e308, random: 1e308}"],
     "'default': opponents: the weights sum to more than a float holds"),
    (["tables=[{rules: basic, opponents: {greedy: 1e308, random: 1e308}}, {rules: ono}]",
      "observation_version=2"],
     "'default': tables\\[0\\].opponents: the weights sum to more than a float holds"),
    (["tables=[{rules: ono}]", "observation_version=2", "algo=maskable_ppo", "policy.shared=false"],
     "tables \\(a mixture\\) is read only by algo: ppo"),
    (["tables=[{rules: basic, teacher_coef: 2}]", "observation_version=2"],
     "tables\\[0\\].teacher_coef=2.0 weighs the pull toward a teacher: name one"),
    (["tables=[{rules: basic, teacher: ppo-basic-2p, teacher_coef: 0}]", "observation_version=2"],
     "'tables.0.teacher_coef' = 0: Input should be greater than 0"),
    (["observation_version=3"], "'observation_version' = 3: Input should be 1 or 2"),
    (["policy.opponent_encoder=16"], "policy.opponent_encoder=16 reads the opponent blocks"),
    (["tables=[{rules: ono, weight: 1e308}, {rules: basic, weight: 1e308}]", "observation_version=2"],
     "tables: the weights sum to more than a float holds; allowed: weights whose sum is a finite"),
    (["tables=[{rules: {preset: ono, num_players: 6}}]", "observation_version=2"],
     "tables\\[0\\].rules sets num_players=6 and tables\\[0\\].num_players is 2 \\(also its default when "
     "not given\\): give the player count once"),
    (["rules={preset: ono, num_players: 3}"], "'default': rules sets num_players=3 and num_players is 2 "
     "\\(also its default"),
    # a count that equals the config's but is no integer: before, trained (2.0 == 2)
    (["rules={preset: basic, num_players: 2.0}"], "'default': rules: invalid rule set: "
     "num_players=2.0; allowed: an integer from 2 to 10$"),
    (["tables=[{rules: {preset: basic, num_players: 2.0}}]", "observation_version=2"],
     "'default': tables\\[0\\].rules: invalid rule set: num_players=2.0; allowed: an integer from 2 to 10$"),
    (["tables=[{rules: {preset: ono, hand_size: 100}, num_players: 10}]", "observation_version=2"],
     "too few to deal hand_size=100 to num_players=10"),
    # a union field (a name or a mapping; auto or a mapping): one line, not one per branch
    (["tables=[{rules: 5}]", "observation_version=2"],
     "'default': config field 'tables.0.rules' = 5: Input should be a valid string, or a valid dictionary$"),
    (["tables=[{rules: ono, opponents: {greedy: -1}}]", "observation_version=2"],
     "'default': config field 'tables.0.opponents.greedy' = -1: Input should be greater than or equal to 0$"),
    (["tables=[{rules: ono, opponents: []}]", "observation_version=2"],
     "'default': config field 'tables.0.opponents' = \\[\\]: Input should be 'auto', or a valid dictionary$"),
    (["tables=[5]", "observation_version=2"],
     "'tables.0' = 5: Input should be a mapping of its fields \\(--print-config shows them\\)$"),
    # a table's own pool and the reward are checked with the config, one line naming the table
    (["tables=[{rules: ono}, {rules: basic, opponents: {greedy: 0}}]", "observation_version=2"],
     "'default': tables\\[1\\].opponents needs at least one agent with a weight > 0 \\(or auto, "
     "or unset for the run's opponents\\)$"),
    (["tables=[{rules: ono, opponents: {}}]", "observation_version=2"],
     "'default': tables\\[0\\].opponents needs at least one agent with a weight > 0"),
    # the run's opponents when no table plays them: not read, so refused, as rules are
    (["opponents={nosuch: 1}", "tables=[{opponents: {greedy: 1}}]", "observation_version=2"],
     "'default': opponents={'nosuch': 1.0} is not read: every table names its own "
     "\\(tables\\[k\\].opponents\\); allowed: opponents: auto, its default, or a table that "
     "leaves its opponents unset to play these$"),
    (["tables=[{rules: classic}, {rules: basic}]", "observation_version=2", "reward=points"],
     "'default': tables\\[1\\]: reward 'points' needs a rule set with scoring; the 'basic' rules "
     "keep no score \\(allowed: reward win or auto, or rules that keep a score\\)$"),
    # a mixture with fewer game slots than tables: refused with the config (so --print-config
    # refuses it too), not when the run plans its tables
    (["tables=[{rules: ono}, {rules: basic}, {rules: classic}]", "observation_version=2",
      "num_envs=2", "ppo.batch_size=16"],
     "'default': num_envs=2: a mixture of 3 tables needs at least one game slot per table; "
     "allowed: num_envs >= 3$"),
    (["opponents={str: -1}"], "config field 'opponents.str' = -1: Input should be greater"),
    # a bad key of a mapping is named as a key of its field (pydantic's loc ends in '[key]')
    (['opponents={"": 1}'], "'default': config field 'opponents' has the key '': String should "
     "have at least 1 character$"),
    (['tables=[{rules: ono, opponents: {"": 1}}]', "observation_version=2"],
     "'default': config field 'tables.0.opponents' has the key '': String should have at least"),
    (["opponents={greedy: -1}"], "'default': config field 'opponents.greedy' = -1: Input should be greater"),
    # a hidden field named twice: before, accepted
    (["observation_version=2", "observation_hide=[lacks, known_cards, lacks]"],
     "'default': observation_hide names lacks more than once; allowed: each of known_cards, "),
])
def test_a_bad_mixture_is_one_clear_error(overrides, message):
    with pytest.raises(ValueError, match=message):
        load_config("default", overrides)


def test_overrides_that_are_no_list_are_named():
    # before, None was "'NoneType' object is not iterable"
    for bad in (None, "rules=ono", 5):
        with pytest.raises(ValueError, match=r"\); allowed: a list of key=value strings$"):
            load_config("default", bad)
    assert load_config("default", ("rules=ono",)).rules == "ono"


def test_table_slots_split_num_envs_by_weight_with_one_slot_each_at_least():
    from ono_env.train.config import table_slots

    assert table_slots(8, [1, 1]) == [4, 4]
    assert table_slots(10, [1, 3]) == [3, 7]   # 2.5 and 7.5: the tie's first takes the slot left
    assert table_slots(10, [1, 4]) == [2, 8]
    assert table_slots(4, [1, 1, 1, 100]) == [1, 1, 1, 1]
    assert table_slots(3, [1, 1, 1]) == [1, 1, 1]
    # the slots rounding leaves go one each to the largest remainders, not all to one table
    # (before: 100 slots over 30 equal tables gave one table 13 and the others 3)
    assert sorted(table_slots(100, [1] * 30)) == [3] * 20 + [4] * 10
    assert sorted(table_slots(1024, [1] * 30)) == [34] * 26 + [35] * 4
    assert table_slots(11, [1] * 9 + [10, 10]) == [1] * 11   # before: refused
    assert table_slots(7, [1, 1e-9, 5]) == [1, 1, 5]         # one each: from the largest table
    for n, weights in [(64, [0.001, 5, 2]), (1536, [1.0] * 30), (31, [7, 1e-9, 3, 1])]:
        slots = table_slots(n, weights)
        assert sum(slots) == n and min(slots) >= 1
    with pytest.raises(ValueError, match=r"^num_envs=2: a mixture of 3 tables needs"):
        table_slots(2, [1, 1, 1])


@pytest.mark.parametrize("override, field", [("tables.0.weight=0", "tables"),
                                             ("tables.weight=2", "tables"),
                                             ("policy.net_arch.0=64", "policy.net_arch")])
def test_an_item_of_a_list_is_not_overridden_by_a_dotted_key(override, field):
    with pytest.raises(ValueError, match=f"override '{override}': {field} is a list, given whole"):
        load_config("generalist", [override])


@pytest.mark.parametrize("override, field", [("seed.0=1", "seed"), ("nosuch.0=1", "nosuch")])
def test_a_dotted_key_of_digits_into_no_list_is_not_called_a_list(override, field):
    """A key part of digits under a field that is no list is an ordinary key: the mapping is
    built, and the config's validation (or, for an agent's name, the run's start) judges it."""
    from ono_env.train.config import parse_override

    assert parse_override(override) == {field: {"0": 1}}
    with pytest.raises(ValueError) as err:
        load_config("default", [override])
    assert "is a list" not in str(err.value)


@pytest.mark.parametrize("override, field", [("rules.preset=classic", "rules"),
                                             ("opponents.greedy=3", "opponents"),
                                             ("opponents.0=1", "opponents")])
def test_a_key_of_a_mapping_given_whole_is_not_overridden_by_a_dotted_key(tmp_path, override, field):
    # before: the override replaced the config's whole mapping, dropping its other keys
    config = tmp_path / "c.yaml"
    config.write_text("rules: {preset: ono, hand_size: 5}\nopponents: {random: 1, greedy: 2}\n")
    with pytest.raises(ValueError, match=rf"override '{override}': {field} is a mapping, given "
                                         rf"whole \({field}=\{{\.\.\.\}}; "):
        load_config(str(config), [override])


def test_a_rules_file_with_another_player_count_is_one_clear_error(tmp_path):
    rules = tmp_path / "six.yaml"
    rules.write_text("preset: ono\nnum_players: 6\n")
    with pytest.raises(ValueError, match=rf"tables\[0\].rules file '{rules}' sets num_players=6 "
                                         r"and tables\[0\].num_players is 4"):
        load_config("default", ["observation_version=2", f"tables=[{{rules: {rules}, num_players: 4}}]"])
    assert load_config("default", ["observation_version=2",
                                   f"tables=[{{rules: {rules}, num_players: 6}}]"]).tables[0].num_players == 6


def test_what_auto_leaves_out_is_said_per_table(capsys):
    pytest.importorskip("torch")
    from ono_env.train.ppo import plan_tables

    plan_tables(load_config("default", TWO_TABLES))
    err = capsys.readouterr().err
    assert "ono-3p: opponents: auto leaves out random" in err
    assert "basic-2p: opponents" not in err   # random finishes its games under basic


def test_a_table_is_called_by_its_name_or_by_its_rules_and_player_count(capsys):
    pytest.importorskip("torch")
    from ono_env.rules import resolve_rules
    from ono_env.train.ppo import plan_tables, table_labels

    cfg = load_config("default", ["observation_version=2", "tables=[{rules: ono, num_players: 3, "
                                  "name: house}, {rules: basic}, {rules: basic}]"])
    assert [spec[0] for spec in plan_tables(cfg)] == ["house", "basic-2p", "basic-2p+"]
    assert "house: opponents: auto leaves out random" in capsys.readouterr().err
    basic = resolve_rules("basic", num_players=2)
    # a name given to a later table is not taken by an earlier one's rules and count
    assert table_labels([basic, basic], [None, "basic-2p"]) == ["basic-2p+", "basic-2p"]
    assert table_labels([basic, basic]) == ["basic-2p", "basic-2p+"]
    assert table_labels([basic, basic], [None, "BASIC-2p"]) == ["basic-2p+", "BASIC-2p"]


def test_each_table_s_stall_warning_counts_its_own_choices(tmp_path, monkeypatch, capsys):
    """The learner's catch and draw shares that a table's stall warning reads come from that
    table's steps: a catch is legal under ono and never under basic."""
    pytest.importorskip("torch")
    from ono_env.train import ppo

    seen = []

    def record(rows, baselines, choices, gamma, truncation, pool, shaping, *args, **kwargs):
        seen.append(dict(choices))
        shapings.append(shaping)
        return None

    shapings = []

    monkeypatch.setattr(ppo, "stall_warning", record)
    ppo.train(load_config("default", [
        "observation_version=2", "tables=[{rules: basic}, {rules: ono}]", "num_envs=16",
        "ppo.n_steps=8", "ppo.batch_size=64", "ppo.n_epochs=1", "policy.net_arch=[8]",
        "policy.opponent_encoder=4", "total_steps=300", "eval.every=128", "eval.games=4",
        "final_eval.games=0", "progress=false", "torch_threads=1", f"run_dir={tmp_path / 'r'}"]))
    basic, ono = seen[0], seen[1]   # the first evaluation, in the tables' order
    assert "catch" not in basic and "catch" in ono
    # ppo.hand_shaping: auto is passed as None, never named as a cause (in a match it is 0)
    assert shapings and set(shapings) == {None}
    # no final evaluation: no table folder for its results, and no line that would head them
    assert not (tmp_path / "r" / "tables").exists()
    printed = capsys.readouterr()
    assert "table basic-2p:" in printed.err     # the plan's line, with what follows it
    assert not [line for line in (printed.out + printed.err).splitlines()
                if re.fullmatch(r"table \S+:", line.rstrip())]


def _refused_before_training(tmp_path, capsys, overrides, match):
    """train() of the default config with ``overrides`` (after the first of TWO_TABLES) is one
    ValueError matching ``match``, before the probe games print anything and before the run
    folder is made."""
    pytest.importorskip("torch")
    from ono_env.train.ppo import train

    cfg = load_config("default", [*TWO_TABLES[:1], *overrides, f"run_dir={tmp_path / 'run'}",
                                  "progress=false"])
    capsys.readouterr()
    with pytest.raises(ValueError, match=match):
        train(cfg)
    assert capsys.readouterr() == ("", "")   # before the probe games and their notes
    assert not (tmp_path / "run").exists()


def test_an_agent_that_cannot_play_a_table_is_named_with_its_table(tmp_path, capsys):
    _refused_before_training(
        tmp_path, capsys, ["tables=[{rules: basic}, {rules: ono, num_players: 4, "
                           "opponents: {ppo-basic-2p: 1}}]"],
        r"^tables\[1\] \(ono-4p\) opponents: .*ppo-basic-2p.*trained for 2 players, asked to "
        r"play 4")


def test_an_unknown_opponent_of_a_table_fails_before_training(tmp_path, capsys):
    """Refused before the probe games of the tables, which print their notes: the error is
    all the run says."""
    _refused_before_training(tmp_path, capsys, ["tables=[{rules: ono, opponents: {nobody: 1}}]"],
                             r"^tables\[0\] \(ono-2p\) opponents: unknown agent 'nobody'")
    # the run's opponents, at a table that leaves its own unset: named as the run's
    _refused_before_training(
        tmp_path, capsys, ["opponents={nobody: 1}",
                           "tables=[{rules: ono, opponents: auto}, {rules: basic}]"],
        r"^tables\[1\] \(basic-2p\) opponents \(the run's, which it plays\): unknown agent "
        r"'nobody'")


@pytest.mark.parametrize("teacher, message", [
    ("greedy", "tables\\[0\\].teacher='greedy' is not a learned policy"),
    ("ppo-classic-2p", "trained for 'classic' rules"),
    ("nobody.safetensors", "cannot read model file 'nobody.safetensors': no such file"),
])
def test_a_teacher_that_cannot_teach_fails_before_training(tmp_path, teacher, message, capsys):
    _refused_before_training(tmp_path, capsys,
                             [f"tables=[{{rules: basic, teacher: {teacher}}}]"], message)


def test_a_teacher_pulls_the_learner_toward_its_choices(tmp_path):
    """With tables[k].teacher the update adds the KL divergence from the teacher's policy:
    the same tiny run (same seed, same games) picks the teacher's action far more often
    with it than without it."""
    pytest.importorskip("torch")
    from ono_env.arena import agreement
    from ono_env.train.ppo import train

    def run(teach: str, where: str):
        tables = ("tables=[{rules: basic, weight: 3" + teach + "}, "
                  "{rules: ono, num_players: 3, weight: 1}]")
        return train(load_config("default", [
            "observation_version=2", tables, "num_envs=64", "ppo.n_steps=16",
            "ppo.batch_size=256", "ppo.n_epochs=2", "ppo.learning_rate=0.003",
            "policy.net_arch=[64]", "policy.opponent_encoder=4", "eval.every=0",
            "final_eval.games=0", "progress=false", "torch_threads=1", "total_steps=20000",
            "seed=3", f"run_dir={tmp_path / where}"]))["model"]

    rules = {"preset": "basic", "num_players": 2}
    plain = agreement(str(run("", "plain")), "ppo-basic-2p", rules, 300, seed=5, max_decisions=40)
    taught = agreement(str(run(", teacher: ppo-basic-2p, teacher_coef: 5", "taught")),
                       "ppo-basic-2p", rules, 300, seed=5, max_decisions=40)
    assert taught["agreement"] > plain["agreement"] + 0.1, (plain, taught)
    recorded = json.loads((tmp_path / "taught" / "tables.json").read_text())
    assert [(t["teacher"], t["teacher_coef"]) for t in recorded] == [("ppo-basic-2p", 5.0),
                                                                      (None, None)]


def test_two_tables_train_resume_and_play_anywhere(tmp_path, resume_loads):
    pytest.importorskip("torch")
    from ono_env.agents import make_agent
    from ono_env.agents.learned import read_metadata
    from ono_env.arena import run_arena
    from ono_env.train.ppo import train

    common = [*TWO_TABLES, "num_envs=24", "ppo.n_steps=8", "ppo.batch_size=64", "ppo.n_epochs=1",
              "policy.net_arch=[16]", "policy.opponent_encoder=4", "eval.every=300",
              "eval.games=4", "final_eval.games=4", "progress=false", "torch_threads=1"]
    first = train(load_config("default", [*common, "total_steps=400",
                                          f"run_dir={tmp_path / 'a'}"]))
    assert first["steps"] >= 400
    assert {r["table"] for r in first["final_eval"]} == {"ono-3p", "basic-2p"}
    tables = json.loads((tmp_path / "a" / "tables.json").read_text())
    assert [t["game_slots"] for t in tables] == [8, 16]
    assert "ppo-basic-2p" in tables[1]["opponents"]   # a shipped specialist that fits
    header = (tmp_path / "a" / "eval.csv").read_text().splitlines()[0]
    assert header.startswith("step,table,opponent")   # each row names its table
    checkpoints = sorted((tmp_path / "a" / "checkpoints").glob("step_*.safetensors"))
    assert checkpoints and (tmp_path / "a" / "tables" / "ono-3p" / "final_eval.json").is_file()
    meta = read_metadata(first["model"])
    assert meta["observation_version"] == 2 and meta["format_version"] == 4
    assert meta["architecture"]["opponent_encoder"] == 4

    second = train(load_config("default", [*common, "total_steps=800",
                                           f"resume={first['model']}",
                                           f"run_dir={tmp_path / 'b'}"]))
    assert second["steps"] >= 800 and read_metadata(second["model"])["training_steps"] >= 800
    assert resume_loads == [first["steps"]] * 2   # its weights, encoder and Adam's state

    # resumed in its own folder as one table, evaluating nothing: the mixture's tables.json and
    # tables/<label>/ folders go with its evaluations (they described tables no longer there)
    single = [c for c in common if c not in TWO_TABLES and not c.startswith(("eval.", "final_eval."))]
    train(load_config("default", [*single, "observation_version=2", "rules=basic",
                                  "eval.every=0", "final_eval.games=0", "total_steps=800",
                                  f"resume={first['model']}", f"run_dir={tmp_path / 'a'}"]))
    assert not (tmp_path / "a" / "tables.json").exists()
    assert not (tmp_path / "a" / "tables").exists()
    assert not (tmp_path / "a" / "eval.csv").exists()

    # the model plays under rules and player counts it never trained on
    for preset, n in (("classic", 4), ("uno2018", 6)):
        agent = make_agent(str(second["model"]), {"preset": preset, "num_players": n})
        assert agent.observation_version == 2
        res = run_arena([agent] + ["greedy"] * (n - 1), rules={"preset": preset, "num_players": n},
                        num_games=2 * n, seed=1)
        assert res.agent_rows()[0]["games"] >= 2 * n   # it played (the arena checks each action)


def test_self_play_snapshots_join_and_play_at_every_table(tmp_path, monkeypatch):
    """docs/training.md: "Self-play snapshots join every table's pool". Each snapshot joins
    both tables' leagues at the same step, the oldest leaves beyond ``max_snapshots``, and
    the snapshots play the games of both tables, reading version 2."""
    pytest.importorskip("torch")
    from ono_env.agents.learned import LearnedAgent
    from ono_env.observation import OBS_V2_SIZE
    from ono_env.train import run as run_module
    from ono_env.train.ppo import train

    joined: list[tuple[int, str]] = []     # (the league's id, the snapshot's name)
    add = run_module.League.add_snapshot

    def record(self, agent, step):
        joined.append((id(self), add(self, agent, step)))
        assert len(self.snapshots) <= 2 and self.snapshots[-1] == f"snapshot-{step}"
        return joined[-1][1]

    played: list[tuple[int, int]] = []     # (players at the table, the observation's length)
    act = LearnedAgent.act

    def spy(self, obs, mask, rng):
        if self.name.startswith("snapshot-"):
            played.append((self.rules.num_players, obs.shape[1]))
        return act(self, obs, mask, rng)

    monkeypatch.setattr(run_module.League, "add_snapshot", record)
    monkeypatch.setattr(LearnedAgent, "act", spy)
    res = train(load_config("default", [
        *TWO_TABLES, "num_envs=24", "ppo.n_steps=8", "ppo.batch_size=64", "ppo.n_epochs=1",
        "policy.net_arch=[16]", "policy.opponent_encoder=4", "eval.every=0",
        "final_eval.games=0", "progress=false", "torch_threads=1", "total_steps=1200",
        "self_play={enabled: true, snapshot_every: 200, max_snapshots: 2, weight: 0.9}",
        f"run_dir={tmp_path}"]))
    assert res["steps"] >= 1200
    leagues = sorted({league for league, _ in joined})
    assert len(leagues) == 2                              # one league per table
    names = [[n for league, n in joined if league == k] for k in leagues]
    assert names[0] == names[1] and len(names[0]) >= 4    # the same snapshots, at both
    assert {n for n, _ in played} == {3, 2}               # they played at both tables
    assert {size for _, size in played} == {OBS_V2_SIZE}


def test_the_model_format_holds_the_encoder(tmp_path):
    from ono_env.agents.learned import PolicyNet, make_metadata, read_model, write_model
    from ono_env.observation import OBS2_OPPONENTS, OBS_V2_SIZE, OPPONENT_SIZE, observation_scale
    from ono_env.rules import resolve_rules

    rng = np.random.default_rng(0)
    rules = resolve_rules("ono", num_players=2)
    E, H = 3, 5
    enc = (rng.normal(size=(E, OPPONENT_SIZE)).astype(np.float32), np.zeros(E, np.float32))
    layers = [(rng.normal(size=(H, OBS2_OPPONENTS + 9 * E)).astype(np.float32),
               np.zeros(H, np.float32)),
              (rng.normal(size=(85, H)).astype(np.float32), np.zeros(85, np.float32))]
    value = [(layers[0][0].copy(), layers[0][1].copy()),
             (rng.normal(size=(1, H)).astype(np.float32), np.zeros(1, np.float32))]
    net = PolicyNet(observation_scale(rules, 2), layers, "tanh", value, enc)
    meta = make_metadata(rules, 7, hidden_sizes=[H], activation="tanh", value_hidden_sizes=[H],
                         observation_version=2, opponent_encoder=E)
    path = write_model(tmp_path / "m.safetensors", net, meta)
    meta2, net2 = read_model(path)
    obs = rng.random((4, OBS_V2_SIZE)).astype(np.float32)
    assert np.array_equal(net2(obs), net(obs))
    # an absent seat's block does not reach the network
    obs2 = obs.copy()
    obs[:, OBS2_OPPONENTS + 8 * OPPONENT_SIZE] = 0.0          # opponent 9 not present
    obs2[:, OBS2_OPPONENTS + 8 * OPPONENT_SIZE] = 0.0
    obs2[:, OBS2_OPPONENTS + 8 * OPPONENT_SIZE + 1:] = 5.0
    assert np.allclose(net2(obs), net2(obs2))
    # an encoder in a version-1 model's metadata is refused
    bad = dict(meta2, observation_version=1)
    with pytest.raises(ValueError, match=r"observation_version.*expected 2"):
        write_model(tmp_path / "bad.safetensors", net, bad)


@pytest.mark.parametrize("preset", ["basic", "classic", "ono", "stacking", "uno2018", "wikipedia"])
def test_the_generalist_plays_every_preset_at_every_table_size(preset):
    """ppo-any plays legal actions (the arena checks each) under every preset at 2, 3, 4, 6
    and 10 players, beside the baselines; rules of a custom mapping too."""
    from ono_env.agents import make_agent
    from ono_env.arena import run_arena

    for n in (2, 3, 4, 6, 10):
        rules = {"preset": preset, "num_players": n}
        agent = make_agent("ppo-any", rules)
        assert agent.observation_version == 2
        res = run_arena([agent] + ["greedy"] * (n - 1), rules, num_games=n, seed=n,
                        rating=False, max_decisions=3000)
        assert res.agent_rows()[0]["games"] >= n


def test_the_generalist_fills_in_where_no_specialist_exists():
    from ono_env.agents import make_agent
    from ono_env.agents.search import shipped_policy

    custom = {"preset": "basic", "num_players": 3, "stacking": True}
    assert shipped_policy(custom).name == "ppo-any"
    assert shipped_policy({"preset": "basic", "num_players": 2}).name == "ppo-basic-2p"
    # by the rules' options, not their name (before: another name got ppo-any)
    assert shipped_policy({"preset": "basic", "num_players": 2, "name": "mine"}).name == "ppo-basic-2p"
    assert shipped_policy({"preset": "classic", "num_players": 2, "name": "x"}).name == "ppo-classic-2p"
    assert shipped_policy({"preset": "basic", "num_players": 2, "hand_size": 8}).name == "ppo-any"
    search = make_agent("pimc-ppo-playout:2", {"preset": "ono", "num_players": 2})
    assert search.prior.name == "ppo-any"
    with pytest.raises(ValueError, match="trained for 'basic' rules"):
        make_agent("ppo-basic-2p", {"preset": "ono", "num_players": 2})


def _observations_at(tables, with_hands=False):
    """Learner observations (version 2) from games in progress at each (preset, players)."""
    from ono_env.envs.learner_batch import LearnerBatch

    rng = np.random.default_rng(0)
    out, hands = [], []
    for preset, n in tables:
        batch = LearnerBatch(preset, 16, "greedy", seed=n, num_players=n, observation_version=2)
        obs = batch.reset(seed=n)
        for _ in range(12):
            mask = batch.action_masks()
            obs = batch.step((rng.random(mask.shape) * mask).argmax(axis=1)).obs
        out.append(obs)
        if with_hands:   # and every opponent's hand (training's CHEATING targets)
            from ono_env.train.ppo import hidden_hands
            hands.append(hidden_hands(batch.game, batch.learner))
    return (np.concatenate(out), np.concatenate(hands)) if with_hands else np.concatenate(out)


@pytest.mark.parametrize("bf16", [False, True])
def test_the_trainer_encodes_only_present_seats_and_computes_the_same(bf16):
    """The trainer's network runs its opponent encoder on the blocks of the seats present
    only (its minibatches read observations prepared once per update): the values are
    those of encoding all nine blocks and multiplying by the presence flag (the model
    format's function), and of the model file's NumPy network."""
    import torch

    from ono_env.observation import (
        MAX_OPPONENTS,
        OBS2_OPPONENTS,
        OPPONENT_SIZE,
        OPP_PRESENT,
        observation_scale,
    )
    from ono_env.rules import resolve_rules
    from ono_env.train.ppo import ActorCritic

    obs_np = _observations_at([("ono", 2), ("classic", 4), ("uno2018", 6), ("basic", 10)])
    obs = torch.from_numpy(obs_np)
    torch.manual_seed(0)
    model = ActorCritic(observation_scale(resolve_rules("ono", num_players=2), 2), [32, 32],
                        "tanh", True, 8)

    def every_block(o):
        x = o / model.scale
        opp = x[:, OBS2_OPPONENTS:].reshape(len(x), MAX_OPPONENTS, OPPONENT_SIZE)
        e = torch.tanh(model.encoder(opp)) * opp[:, :, OPP_PRESENT:OPP_PRESENT + 1]
        return torch.cat([x[:, :OBS2_OPPONENTS], e.reshape(len(x), -1).to(x.dtype)], dim=1)

    idx = torch.randperm(len(obs), generator=torch.Generator().manual_seed(1))[:40]
    # the matrix products may round differently for another number of rows: one bf16 step
    tol = {"rtol": 1e-2, "atol": 1e-2} if bf16 else {"rtol": 1e-5, "atol": 1e-6}
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        want = every_block(obs)
        features = model.features(obs)
        torch.testing.assert_close(features, want, **tol)
        # a strided view of the rows (every other one), a view that starts past the first
        # row (as the rollout's rows of one step are), and no rows at all
        torch.testing.assert_close(model.features(obs[::2]), want[::2], **tol)
        torch.testing.assert_close(model.features(obs[3:]), want[3:], **tol)
        assert model.features(obs[:0]).shape == (0, want.shape[1])
        prep = model.prepare(obs, torch.bfloat16 if bf16 else torch.float32)
        got = model.minibatch(prep, idx)
        torch.testing.assert_close(got.float(), want[idx].to(got.dtype).float(), **tol)
        torch.testing.assert_close(model.heads(got)[0].float(), model.heads(want[idx])[0].float(),
                                   **tol)
    # an absent seat's encoding is exactly 0; the encoder ran on the 1 + 3 + 5 + 9 present
    # blocks of the 16 games of each table, not on all nine
    absent = ~prep.present
    enc = features[:, OBS2_OPPONENTS:].reshape(len(obs), MAX_OPPONENTS, -1)
    assert absent.any() and not enc[absent].any() and enc[~absent].any()
    assert int(prep.present.sum()) == 16 * (1 + 3 + 5 + 9)
    # the prepared rollout keeps the present blocks only, and knows where each is
    assert len(prep.blocks) == int(prep.present.sum())
    assert bool((prep.row[absent] == -1).all())
    assert torch.equal(prep.row[~absent], torch.arange(len(prep.blocks)))
    if not bf16:   # the exported model plays the same function
        with torch.no_grad():
            logits = model(obs)[0].numpy()
        assert np.allclose(model.policy_net()(obs_np), logits, atol=1e-4)


@pytest.mark.parametrize("shared", [True, False])
def test_the_update_path_computes_the_same_values_and_gradients(shared):
    """``run_prepared`` (the update's way: rows sorted by how many seats are present, each
    group of rows through its seats' columns of the first layer) gives the logits, values and
    parameter gradients of encoding every block, in the order of the rows it returns; rows
    whose present blocks are not their first take the plain way, in their own order."""
    import torch

    from ono_env.observation import OBS2_OPPONENTS, OPPONENT_SIZE, OPP_PRESENT, observation_scale
    from ono_env.rules import resolve_rules
    from ono_env.train.ppo import ActorCritic

    obs = torch.from_numpy(_observations_at([("ono", 2), ("classic", 4), ("uno2018", 6),
                                             ("basic", 10), ("wikipedia", 3)]))
    torch.manual_seed(0)
    model = ActorCritic(observation_scale(resolve_rules("ono", num_players=2), 2), [32, 16],
                        "tanh", shared, 8)
    idx = torch.randperm(len(obs), generator=torch.Generator().manual_seed(2))[:50]

    def grads(logits, value):
        model.zero_grad()
        (logits.pow(2).mean() + value.pow(3).mean()).backward()
        return {n: p.grad.clone() for n, p in model.named_parameters()}

    prep = model.prepare(obs, torch.float32)
    assert prep.prefix
    logits, value, order = model.run_prepared(prep, idx)
    assert sorted(order.tolist()) == sorted(idx.tolist()) and not torch.equal(order, idx)
    counts = prep.seats[order]
    assert bool((counts[:-1] >= counts[1:]).all())   # the most seats first
    got = grads(logits, value)
    want_logits, want_value = model.heads(model.features(obs[order]))   # every block encoded
    torch.testing.assert_close(logits, want_logits, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(value, want_value, rtol=1e-5, atol=1e-6)
    want = grads(want_logits, want_value)
    for name in want:
        torch.testing.assert_close(got[name], want[name], rtol=1e-4, atol=1e-6, msg=name)

    # a row whose second block is present and first absent: the plain way, rows in order
    odd = obs.clone()
    odd[0, OBS2_OPPONENTS + OPP_PRESENT] = 0.0
    odd[0, OBS2_OPPONENTS + OPPONENT_SIZE + OPP_PRESENT] = 1.0
    prep = model.prepare(odd, torch.float32)
    assert not prep.prefix
    logits, value, order = model.run_prepared(prep, idx)
    assert torch.equal(order, idx)
    with torch.no_grad():
        torch.testing.assert_close(logits, model.heads(model.features(odd[idx]))[0],
                                   rtol=1e-5, atol=1e-6)


def test_the_privileged_critic_reads_the_hidden_hands_and_only_the_value(tmp_path):
    """``policy.privileged_critic``: the hands it reads are every opponent's, in the order of
    the observation's blocks; it starts as the public value, the update's way computes what
    the plain way does, and the policy (and the model file) does not depend on the hands."""
    import torch

    from ono_env.envs.learner_batch import LearnerBatch
    from ono_env.observation import MAX_OPPONENTS, OBS2_OPPONENTS, OPPONENT_SIZE, OPP_SIZE
    from ono_env.train.ppo import ActorCritic, hidden_hands

    rng = np.random.default_rng(0)
    obs, hands = [], []
    for preset, n in (("ono", 2), ("uno2018", 6), ("basic", 10), ("classic", 4)):
        batch = LearnerBatch(preset, 16, "greedy", seed=n, num_players=n, observation_version=2)
        o = batch.reset(seed=n)
        for _ in range(8):
            mask = batch.action_masks()
            o = batch.step((rng.random(mask.shape) * mask).argmax(axis=1)).obs
        h = hidden_hands(batch.game, batch.learner)
        # every opponent's hand size, seat by seat from the left, is the observation's
        sizes = 2 * h.reshape(16, MAX_OPPONENTS, -1).sum(axis=2)
        seen = o[:, OBS2_OPPONENTS + OPP_SIZE::OPPONENT_SIZE]
        assert np.array_equal(sizes, seen) and not sizes[:, n - 1:].any()
        obs.append(o)
        hands.append(h)
    obs_t, hands_t = torch.from_numpy(np.concatenate(obs)), torch.from_numpy(np.concatenate(hands))
    torch.manual_seed(0)
    from ono_env.observation import observation_scale
    from ono_env.rules import resolve_rules
    model = ActorCritic(observation_scale(resolve_rules("ono", num_players=2), 2), [32, 16],
                        "tanh", True, 8, privileged=True)
    with torch.no_grad():
        _, value, pvalue = model(obs_t, hands_t)
        torch.testing.assert_close(pvalue, value)          # zero-initialised correction
        model.hands_value.weight.normal_()
        logits2, value2, pvalue2 = model(obs_t, hands_t)
        assert not torch.allclose(pvalue2, value2)
        other = model(obs_t, hands_t.flip(0))              # other hands: only that value moves
        assert torch.equal(other[0], logits2) and torch.equal(other[1], value2)
        assert not torch.allclose(other[2], pvalue2)
    idx = torch.randperm(len(obs_t), generator=torch.Generator().manual_seed(2))[:40]
    prep = model.prepare(obs_t, torch.float32)
    lg, v, pv, order = model.run_prepared(prep, idx, hands_t)
    want = model(obs_t[order], hands_t[order])
    for got, w in zip((lg, v, pv), want):
        torch.testing.assert_close(got, w, rtol=1e-5, atol=1e-6)
    # the plain way (rows in their own order; a GPU's way) computes the same
    lg, v, pv_plain, same = model.run_prepared(prep._replace(prefix=False), idx, hands_t)
    assert torch.equal(same, idx)
    for got, w in zip((lg, v, pv_plain), model(obs_t[idx], hands_t[idx])):
        torch.testing.assert_close(got, w, rtol=1e-5, atol=1e-6)
    pv.sum().backward()
    assert model.hands_encoder.weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="a privileged critic reads a shared trunk"):
        ActorCritic(model.scale.numpy(), [8], "tanh", False, 8, privileged=True)


def _hands_and_scale():
    """Version-2 observations and every opponent's hand at three tables, as tensors, and the
    observation scale: the inputs of the training-only parts' tests."""
    import torch

    from ono_env.observation import observation_scale
    from ono_env.rules import resolve_rules

    obs, hands = _observations_at((("ono", 6), ("basic", 3), ("uno2018", 2)), with_hands=True)
    torch.manual_seed(0)
    return (torch.from_numpy(obs), torch.from_numpy(hands),
            observation_scale(resolve_rules("ono", num_players=2), 2))


def test_hand_prediction_predicts_from_the_trunk_and_moves_nothing_else():
    """``policy.hand_prediction``: a head on the shared trunk, zero at the start; the update's
    way (:meth:`run_prepared`) computes what the plain way does, with or without a privileged
    critic beside it, and its weights change neither the policy nor the value."""
    import torch

    from ono_env.train.ppo import ActorCritic

    obs_t, hands_t, scale = _hands_and_scale()
    model = ActorCritic(scale, [32, 16], "tanh", True, 8, hand_prediction=True)
    with torch.no_grad():
        logits, value, predicted = model(obs_t, None, True)
        assert predicted.shape == hands_t.shape and not predicted.any()   # zero at the start
        model.hands_predict.weight.normal_()
        logits2, value2, predicted2 = model(obs_t, None, True)
        assert torch.equal(logits2, logits) and torch.equal(value2, value) and predicted2.any()
        assert len(model(obs_t)) == 2   # the rollouts' call reads no prediction
    idx = torch.randperm(len(obs_t), generator=torch.Generator().manual_seed(3))[:30]
    prep = model.prepare(obs_t, torch.float32)
    lg, v, pr, order = model.run_prepared(prep, idx, None, True)
    for got, w in zip((lg, v, pr), model(obs_t[order], None, True)):
        torch.testing.assert_close(got, w, rtol=1e-5, atol=1e-6)
    pr.square().sum().backward()
    assert model.pi_body[0].weight.grad.abs().sum() > 0   # it trains the trunk
    both = ActorCritic(scale, [16], "tanh", True, 4, privileged=True, hand_prediction=True)
    with torch.no_grad():
        both.hands_value.weight.normal_()
        both.hands_predict.weight.normal_()
        out = both.run_prepared(both.prepare(obs_t, torch.float32), idx, hands_t, True)
        want = both(obs_t[out[-1]], hands_t[out[-1]], True)   # logits, value, privileged, hands
        assert len(out) == 5 and want[3].shape == hands_t[:30].shape
        for got, w in zip(out[:4], want):
            torch.testing.assert_close(got, w, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="hand prediction reads a shared trunk"):
        ActorCritic(scale, [8], "tanh", True, 0, hand_prediction=True)


def test_oracle_guiding_reads_the_kept_hands_in_the_first_layer_only():
    """``policy.oracle_guiding``: the hands feed the trunk's first layer, which moves the
    policy and the value; a hand of zeros (nothing kept) adds nothing, so the network is then
    the model file's; the update's way computes what the plain way does, and the gradient
    reaches the hands' own layer."""
    import torch

    from ono_env.train.ppo import ActorCritic

    obs_t, hands_t, scale = _hands_and_scale()
    model = ActorCritic(scale, [32, 16], "tanh", True, 8, oracle=True)
    with torch.no_grad():
        blind = model(obs_t)
        for got, want in zip(model(obs_t, None, False, hands_t), blind):   # zero at the start
            assert torch.equal(got, want)
        model.hands_oracle_in.weight.normal_(std=0.3)
        seeing = model(obs_t, None, False, hands_t)
        assert not torch.allclose(seeing[0], blind[0]) and not torch.allclose(seeing[1], blind[1])
        for got, want in zip(model(obs_t, None, False, torch.zeros_like(hands_t)), blind):
            assert torch.equal(got, want)                                # nothing kept
        np.testing.assert_allclose(model.policy_net()(obs_t.numpy()), blind[0].numpy(), atol=1e-4)
    idx = torch.randperm(len(obs_t), generator=torch.Generator().manual_seed(4))[:30]
    prep = model.prepare(obs_t, torch.float32)
    lg, v, order = model.run_prepared(prep, idx, None, False, hands_t)
    for got, want in zip((lg, v), model(obs_t[order], None, False, hands_t[order])):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    lg_plain, v_plain, same = model.run_prepared(prep._replace(prefix=False), idx, None, False,
                                                 hands_t)
    assert torch.equal(same, idx)
    for got, want in zip((lg_plain, v_plain), model(obs_t[idx], None, False, hands_t[idx])):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    lg.square().sum().backward()
    assert model.hands_oracle_encoder.weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="oracle guiding reads a shared trunk"):
        ActorCritic(scale, [8], "tanh", False, 8, oracle=True)


@pytest.mark.parametrize("overrides", [["policy.shared=false"], ["policy.opponent_encoder=0"],
                                       ["observation_version=1", "policy.opponent_encoder=auto"]])
def test_oracle_guiding_without_its_network_is_one_clear_error(overrides):
    with pytest.raises(ValueError, match=r"policy\.oracle_guiding=0\.5 feeds the hidden hands"):
        load_config("default", ["observation_version=2", "policy.shared=true",
                                "policy.oracle_guiding=0.5", *overrides])


def test_oracle_guiding_beside_the_colour_term_is_one_clear_error():
    with pytest.raises(ValueError, match=r"policy\.oracle_guiding=0\.5 and "
                                         r"ppo\.color_consistency=1\.0: .* allowed: one of them"):
        load_config("default", ["observation_version=2", "policy.shared=true",
                                "policy.oracle_guiding=0.5", "ppo.color_consistency=1.0"])
    with pytest.raises(ValueError, match="oracle_guiding"):
        load_config("default", ["observation_version=2", "policy.shared=true",
                                "policy.oracle_guiding=1.5"])


def test_oracle_guiding_fades_resumes_and_its_model_plays(tmp_path):
    """A run with oracle guiding: the share of the hands kept falls from 1 to 0 over the
    share of the run it names (TensorBoard's ``train/oracle_keep``), and again over a resumed
    run's own steps; the hands' layers are kept beside Adam's state and read back on resume;
    the model file plays as any other."""
    pytest.importorskip("torch")
    import torch
    from safetensors.numpy import load_file
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from ono_env.agents import make_agent
    from ono_env.arena import run_arena
    from ono_env.observation import observation_scale
    from ono_env.rules import resolve_rules
    from ono_env.train.ppo import ActorCritic, load_checkpoint, optimizer_path, train

    common = ["observation_version=2", "tables=[{rules: ono, num_players: 3}, {rules: basic}]",
              "policy.oracle_guiding=0.5", "policy.shared=true", "num_envs=24",
              "ppo.n_steps=8", "ppo.batch_size=64", "ppo.n_epochs=1", "policy.net_arch=[16]",
              "policy.opponent_encoder=4", "eval.every=0", "final_eval.games=0",
              "progress=false", "torch_threads=1", "time_limit_minutes=null"]   # the schedule by steps alone
    first = train(load_config("default", [*common, "total_steps=1920",
                                          f"run_dir={tmp_path / 'a'}"]))
    events = EventAccumulator(str(tmp_path / "a" / "tb"))
    events.Reload()
    keep = [(e.step, e.value) for e in events.Scalars("train/oracle_keep")]
    assert keep[0] == (192, 1.0)               # the first rollout read every count
    for step, value in keep:                   # then 1 - (steps before the rollout) / 960
        assert value == pytest.approx(max(0.0, 1.0 - (step - 192) / 960), abs=1e-6)
    assert keep[-1][1] == 0.0
    saved = load_file(str(optimizer_path(first["model"])))
    weights = {k: v for k, v in saved.items() if k.startswith("weights.hands_oracle")}
    assert set(weights) == {"weights.hands_oracle_encoder.weight", "weights.hands_oracle_in.weight"}
    assert weights["weights.hands_oracle_in.weight"].any()   # trained away from its zero start
    rules = resolve_rules("ono", num_players=3)
    model = ActorCritic(observation_scale(rules, 2), [16], "tanh", True, 4, oracle=True)
    load_checkpoint(model, torch.optim.Adam(model.parameters()), first["model"], rules)
    assert np.array_equal(model.hands_oracle_in.weight.detach().numpy(),
                          weights["weights.hands_oracle_in.weight"])
    second = train(load_config("default", [*common, "total_steps=2400",
                                           f"resume={first['model']}",
                                           f"run_dir={tmp_path / 'b'}"]))
    assert second["steps"] >= 2400
    events = EventAccumulator(str(tmp_path / "b" / "tb"))
    events.Reload()   # a resumed run fades afresh, over its own 480 steps
    assert [round(e.value, 6) for e in events.Scalars("train/oracle_keep")] == [1.0, 0.2, 0.0]
    agent = make_agent(str(second["model"]), {"preset": "classic", "num_players": 4})
    res = run_arena([agent] + ["greedy"] * 3, rules={"preset": "classic", "num_players": 4},
                    num_games=8, seed=1)
    assert res.agent_rows()[0]["games"] >= 8


@pytest.mark.parametrize("overrides", [["policy.shared=false"], ["policy.opponent_encoder=0"],
                                       ["observation_version=1", "policy.opponent_encoder=auto"]])
def test_hand_prediction_without_its_network_is_one_clear_error(overrides):
    with pytest.raises(ValueError, match=r"policy\.hand_prediction=0\.2 adds a head"):
        load_config("default", ["observation_version=2", "policy.shared=true",
                                "policy.hand_prediction=0.2", *overrides])


@pytest.mark.parametrize("overrides", [["policy.shared=false"], ["policy.opponent_encoder=0"],
                                       ["observation_version=1", "policy.opponent_encoder=auto"]])
def test_a_privileged_critic_without_its_network_is_one_clear_error(overrides):
    with pytest.raises(ValueError, match=r"policy\.privileged_critic=true adds a value head"):
        load_config("default", ["observation_version=2", "policy.privileged_critic=true",
                                *overrides])


@pytest.mark.parametrize("hand_prediction", [0.0, 0.5])
def test_training_only_heads_train_resume_and_their_model_plays(tmp_path, hand_prediction):
    """A privileged critic, alone and beside hand prediction: the training-only heads'
    weights are kept beside Adam's state and read back on resume; the model file holds the
    policy and the public value only, and plays other rules and table sizes."""
    pytest.importorskip("torch")
    import torch
    from safetensors.numpy import load_file

    from ono_env.agents import make_agent
    from ono_env.arena import run_arena
    from ono_env.observation import observation_scale
    from ono_env.rules import resolve_rules
    from ono_env.train.ppo import ActorCritic, load_checkpoint, optimizer_path, train

    common = ["observation_version=2", "tables=[{rules: ono, num_players: 3}, {rules: basic}]",
              "policy.privileged_critic=true", f"policy.hand_prediction={hand_prediction}",
              "policy.shared=true", "num_envs=24",
              "ppo.n_steps=8", "ppo.batch_size=64", "ppo.n_epochs=1", "policy.net_arch=[16]",
              "policy.opponent_encoder=4", "eval.every=0", "final_eval.games=0",
              "progress=false", "torch_threads=1"]
    first = train(load_config("default", [*common, "total_steps=400", f"run_dir={tmp_path / 'a'}"]))
    saved = load_file(str(optimizer_path(first["model"])))
    weights = {k: v for k, v in saved.items() if k.startswith("weights.hands_")}
    heads = ("encoder", "hidden", "value") + (("predict",) if hand_prediction else ())
    assert set(weights) == {f"weights.hands_{m}.{p}" for m in heads for p in ("weight", "bias")}
    for m in heads[2:]:   # each trained away from its zero start
        assert weights[f"weights.hands_{m}.weight"].any()
    # resuming reads them back
    rules = resolve_rules("ono", num_players=3)
    model = ActorCritic(observation_scale(rules, 2), [16], "tanh", True, 4, privileged=True,
                        hand_prediction=hand_prediction > 0)
    load_checkpoint(model, torch.optim.Adam(model.parameters()), first["model"], rules)
    for m in heads[2:]:
        assert np.array_equal(getattr(model, f"hands_{m}").weight.detach().numpy(),
                              weights[f"weights.hands_{m}.weight"])
    # the model file alone (as shared): the message says these layers start afresh
    import contextlib
    import io
    import shutil
    alone = tmp_path / "alone" / "model.safetensors"
    alone.parent.mkdir()
    shutil.copyfile(first["model"], alone)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        load_checkpoint(model, torch.optim.Adam(model.parameters()), alone, rules)
    names = ", ".join(f"hands_{m}" for m in sorted(heads))
    assert f"Adam starts afresh; the training-only layers ({names}) start afresh" in err.getvalue()
    # an optimizer file without them (a run trained without these layers): said so too
    # (before: not a word, though they started afresh)
    from safetensors import safe_open
    from safetensors.numpy import save_file
    bare = tmp_path / "bare" / "model.safetensors"
    bare.parent.mkdir()
    shutil.copyfile(first["model"], bare)
    with safe_open(str(optimizer_path(first["model"])), "np") as fh:
        opt_meta = fh.metadata()
    save_file({k: v for k, v in saved.items() if not k.startswith("weights.hands_")},
              str(optimizer_path(bare)), metadata=opt_meta)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        load_checkpoint(model, torch.optim.Adam(model.parameters()), bare, rules)
    assert (f"'model.optimizer.safetensors' holds no weights of {names} (its run trained "
            f"without them): those training-only layers start afresh") in err.getvalue()
    # the other way, a model without these layers resumed from a checkpoint with them: said
    # (before: their trained weights were dropped without a word)
    plain = ActorCritic(observation_scale(rules, 2), [16], "tanh", True, 4)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        load_checkpoint(plain, torch.optim.Adam(plain.parameters()), first["model"], rules)
    assert (f"'model.optimizer.safetensors' holds the trained weights of {names}, "
            f"training-only layers that this config trains without: they are left out") in err.getvalue()
    # and so with the network grown, whose Adam state (and those layers) is not read
    wide = ActorCritic(observation_scale(rules, 2), [24], "tanh", True, 4)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        load_checkpoint(wide, torch.optim.Adam(wide.parameters()), first["model"], rules, grow=True)
    assert (f"; its training-only layers {names}, which this config trains without, are left "
            f"out") in err.getvalue()
    second = train(load_config("default", [*common, "total_steps=800", f"resume={first['model']}",
                                           f"run_dir={tmp_path / 'b'}"]))
    assert second["steps"] >= 800
    n = 4 if hand_prediction else 5
    agent = make_agent(str(second["model"]), {"preset": "uno2018", "num_players": n})
    res = run_arena([agent] + ["greedy"] * (n - 1), rules={"preset": "uno2018", "num_players": n},
                    num_games=8, seed=1)
    assert res.agent_rows()[0]["games"] >= 8


def test_normalise_by_table_scales_each_table_apart():
    """``ppo.advantage_norm: table``: each table's columns of a rollout's advantages to mean 0
    and standard deviation 1, whatever their scale before; a table of one value is left as it
    is (no standard deviation)."""
    torch = pytest.importorskip("torch")
    from ono_env.train.ppo import normalise_by_table

    gen = torch.Generator().manual_seed(0)
    adv = torch.cat([torch.randn(8, 5, generator=gen) * 0.1 + 3.0,
                     torch.randn(8, 3, generator=gen) * 4.0 - 1.0], dim=1)
    raw = adv.clone()
    normalise_by_table(adv, [slice(0, 5), slice(5, 8)])
    for sl in (slice(0, 5), slice(5, 8)):
        assert abs(float(adv[:, sl].mean())) < 1e-5
        assert abs(float(adv[:, sl].std()) - 1.0) < 1e-4
        # the order within a table is kept: the same values, shifted and scaled
        assert torch.equal(adv[:, sl].flatten().argsort(), raw[:, sl].flatten().argsort())
    one = torch.tensor([[2.5]])
    normalise_by_table(one, [slice(0, 1)])
    assert float(one) == 2.5


def test_advantage_norm_table_changes_the_update_and_the_model_plays(tmp_path):
    """The same tiny two-table run (same seed, same games to start) trains other weights with
    ``ppo.advantage_norm: table`` than with the default, and its model plays; TensorBoard logs
    each table's advantages' spread."""
    pytest.importorskip("torch")
    from safetensors.numpy import load_file

    from ono_env.agents import make_agent
    from ono_env.arena import run_arena
    from ono_env.train.ppo import train

    def run(norm: str):
        return train(load_config("default", TWO_TABLES + [
            "num_envs=32", "ppo.n_steps=8", "ppo.batch_size=128", "ppo.n_epochs=1",
            "policy.net_arch=[16]", "policy.opponent_encoder=4", "eval.every=0",
            "final_eval.games=0", "progress=false", "torch_threads=1", "total_steps=512",
            "seed=3", f"ppo.advantage_norm={norm}", f"run_dir={tmp_path / norm}"]))["model"]

    plain, by_table = load_file(str(run("minibatch"))), load_file(str(run("table")))
    assert plain.keys() == by_table.keys()
    assert any(not np.array_equal(plain[k], by_table[k]) for k in plain)
    # TensorBoard has each table's advantages' spread before normalising, with either setting
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    for norm in ("minibatch", "table"):
        ea = EventAccumulator(str(tmp_path / norm / "tb"))
        ea.Reload()
        spreads = {t: ea.Scalars(t)[-1].value for t in ea.Tags()["scalars"]
                   if t.startswith("advantage_std/")}
        assert set(spreads) == {"advantage_std/ono-3p", "advantage_std/basic-2p"}
        assert all(v > 0 for v in spreads.values())
    rules = {"preset": "ono", "num_players": 3}
    agent = make_agent(str(tmp_path / "table" / "model.safetensors"), rules)
    res = run_arena([agent, "greedy", "greedy"], rules=rules, num_games=3, seed=1)
    assert res.agent_rows()[0]["games"] >= 3   # it played (the arena checks each action)


def test_a_table_of_one_advantage_logs_no_spread(tmp_path):
    """A rollout of one step at a table of one game slot has one advantage there: no spread
    is logged for it (before: NaN at every update), and every scalar logged is finite."""
    pytest.importorskip("torch")
    import math

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from ono_env.train.ppo import train

    train(load_config("default", [
        "observation_version=2", "tables=[{rules: basic, num_players: 3}, {rules: ono, "
        "num_players: 3, weight: 3}]", "num_envs=4", "ppo.n_steps=1", "ppo.batch_size=4",
        "policy.net_arch=[8]", "eval.every=0", "final_eval.games=0", "progress=false",
        "torch_threads=1", "total_steps=16", f"run_dir={tmp_path / 'r'}"]))
    ea = EventAccumulator(str(tmp_path / "r" / "tb"))
    ea.Reload()
    tags = ea.Tags()["scalars"]
    assert "advantage_std/ono-3p" in tags and "advantage_std/basic-3p" not in tags
    assert all(math.isfinite(s.value) for tag in tags for s in ea.Scalars(tag))


def test_advantage_norm_is_read_by_algo_ppo_only():
    with pytest.raises(ValueError, match=r"ppo\.advantage_norm=.table. is read only by algo: ppo"):
        load_config("default", ["algo=maskable_ppo", "policy.shared=false",
                                "ppo.advantage_norm=table"])
    with pytest.raises(ValueError, match="advantage_norm"):
        load_config("default", ["ppo.advantage_norm=tables"])


def test_a_refused_resume_fails_before_the_tables_are_probed(tmp_path, capsys):
    """A checkpoint the config cannot resume (here ``ppo-any``, whose value has a network of its
    own, into one shared trunk) is refused before the tables are planned: nothing of the
    baselines' probe games at each table is printed, and nothing is written."""
    pytest.importorskip("torch")
    from ono_env.train.ppo import train

    run_dir = tmp_path / "run"
    with pytest.raises(ValueError, match="value has a network of its own"):
        train(load_config("default", TWO_TABLES + [
            "policy={net_arch: [256, 256], activation: tanh, shared: true, opponent_encoder: 32}",
            "resume=agents/models/ppo-any.safetensors", "total_steps=2000000000",
            "progress=false", f"run_dir={run_dir}"]))
    err = capsys.readouterr().err
    assert "leaves out" not in err and "table " not in err, err
    assert not run_dir.exists()


def test_a_resume_that_is_no_model_file_is_refused_naming_resume(tmp_path):
    # before: "cannot read model file ...: it is a folder", and the others, without resume=
    pytest.importorskip("torch")
    from ono_env.train.ppo import train

    (tmp_path / "tables.json").write_text("{}\n")
    for given, said in ((tmp_path, "it is a folder"),
                        (tmp_path / "tables.json", "not a safetensors model file")):
        with pytest.raises(ValueError, match=rf"^resume='{re.escape(str(given))}': .*{said}.*; "
                                             rf"allowed: a model or checkpoint file, or one of "
                                             rf"ppo-any"):
            train(load_config("default", [f"resume={given}", "progress=false",
                                          f"run_dir={tmp_path / 'run'}"]))
    assert not (tmp_path / "run").exists()
    # a run's folder: its model file named (before: "it is a folder" alone)
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match=rf"^resume='{re.escape(str(tmp_path))}': a folder \(a "
                                         rf"run's: resume='{re.escape(str(tmp_path))}/model\."
                                         rf"safetensors' carries it on\); allowed: a model or "):
        train(load_config("default", [f"resume={tmp_path}", "progress=false",
                                      f"run_dir={tmp_path / 'run'}"]))
    assert not (tmp_path / "run").exists()


def test_color_consistency_is_zero_for_a_colour_blind_network_and_its_order_holds():
    """``ppo.color_consistency``'s terms: 0 when the renamed rows' outputs are the rows' own
    (read back through the naming), positive when they differ; the renamed prepared rollout
    comes back from ``run_prepared`` in the rows' order, with its logits those of the
    renamed observations."""
    torch = pytest.importorskip("torch")
    from ono_env import VecGame
    from ono_env.observation import color_permutation, observation_scale
    from ono_env.train.ppo import ActorCritic, color_consistency, masked_logits, renamed_prepared

    game = VecGame("ono", 64, seed=2, num_players=4, observation_version=2)
    game.play_random(40, seed=1)
    obs = torch.as_tensor(game.observe(game.current_player))
    legal = torch.as_tensor(np.array(game.legal_mask()))
    torch.manual_seed(0)
    model = ActorCritic(observation_scale(game.rules, 2), [32], "tanh", True, opponent_encoder=8)
    obs_at, act_at = (torch.as_tensor(x) for x in color_permutation([2, 0, 3, 1], game.rules, 2))
    prep = model.prepare(obs, torch.float32)
    idx = torch.randperm(64, generator=torch.Generator().manual_seed(1))[:48]
    logits, value, order = model.run_prepared(prep, idx)
    logits_c, value_c, order_c = model.run_prepared(renamed_prepared(prep, obs_at), idx)
    assert torch.equal(order, order_c)
    want_c, want_v = model(obs.index_select(1, obs_at).index_select(0, order))[:2]
    torch.testing.assert_close(logits_c, want_c, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(value_c, want_v, rtol=1e-5, atol=1e-5)
    mask = legal.index_select(0, order)
    logp_all = torch.log_softmax(masked_logits(logits, mask), dim=1)
    kl, v = color_consistency(logp_all, value, logits_c, value_c, act_at, mask)
    assert float(kl.detach()) > 0 and float(v.detach()) > 0   # an untrained net tells colours apart
    same = logits.index_select(1, torch.argsort(act_at))      # what a colour-blind net would give
    kl0, v0 = color_consistency(logp_all, value, same, value, act_at, mask)
    assert abs(float(kl0.detach())) < 1e-6 and float(v0.detach()) == 0.0


@pytest.mark.parametrize("extra", [TWO_TABLES + ["policy.opponent_encoder=4"], []])
def test_color_consistency_changes_the_update_and_logs(tmp_path, extra):
    """A tiny run (a two-table mixture with an opponent encoder; the default single table on
    version 1) trains other weights with ``ppo.color_consistency`` than without, and logs the
    two terms."""
    pytest.importorskip("torch")
    from safetensors.numpy import load_file
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from ono_env.train.ppo import train

    def run(c: float):
        return train(load_config("default", extra + [
            "num_envs=32", "ppo.n_steps=8", "ppo.batch_size=128", "ppo.n_epochs=2",
            "policy.net_arch=[16]", "eval.every=0", "final_eval.games=0", "progress=false",
            "torch_threads=1", "total_steps=512", "seed=3", f"ppo.color_consistency={c}",
            f"run_dir={tmp_path / str(c)}"]))["model"]

    plain, cc = load_file(str(run(0.0))), load_file(str(run(0.5)))
    assert any(not np.array_equal(plain[k], cc[k]) for k in plain)
    ea = EventAccumulator(str(tmp_path / "0.5" / "tb"))
    ea.Reload()
    assert {"train/color_kl", "train/color_value_sq"} <= set(ea.Tags()["scalars"])
    assert ea.Scalars("train/color_kl")[-1].value > 0


def test_color_consistency_is_read_by_algo_ppo_only():
    with pytest.raises(ValueError, match=r"ppo\.color_consistency=0\.1 is read only by algo: ppo"):
        load_config("default", ["algo=maskable_ppo", "policy.shared=false",
                                "ppo.color_consistency=0.1"])
    for bad in ("-1", "nan", "'0.1'", "101"):
        with pytest.raises(ValueError, match="color_consistency"):
            load_config("default", [f"ppo.color_consistency={bad}"])


def test_a_weight_near_the_largest_float_splits_the_slots_by_ratio():
    # before: num_envs * weight overflowed to inf before the division (OverflowError)
    from ono_env.train.ppo import plan_tables

    cfg = load_config("default", ["observation_version=2", "num_envs=8", "ppo.batch_size=128",
                                  "tables=[{rules: basic, weight: 1e308}, {rules: ono, weight: 1}]"])
    slots = [(label, end - start) for label, _r, _c, _p, start, end in plan_tables(cfg)]
    assert slots == [("basic-2p", 7), ("ono-2p", 1)]


def test_hidden_fields_stay_hidden_in_the_model_and_a_resume_must_hide_them_too(tmp_path):
    """observation_hide: the model's scale hides exactly those opponent fields (so the saved
    model never sees them either), and a resume under other hidden fields, or another
    activation, is refused before any work (before: the network then read fields it never
    saw, and a tanh network's weights ran under relu, without a word)."""
    pytest.importorskip("torch")
    from ono_env.agents.learned import read_model
    from ono_env.rules import resolve_rules
    from ono_env.train.ppo import hidden_fields, train

    common = ["observation_version=2", "policy.opponent_encoder=4", "policy.net_arch=[16]",
              "num_envs=16", "ppo.n_steps=32", "ppo.batch_size=256", "ppo.n_epochs=1",
              "eval.every=0", "final_eval.games=0", "progress=false", "torch_threads=1",
              "rules=ono", "num_players=3"]
    first = train(load_config("default", [*common, "total_steps=512",
                                          "observation_hide=[lacks, known_cards]",
                                          f"run_dir={tmp_path / 'a'}"]))
    _meta, net = read_model(first["model"])
    rules = resolve_rules("ono", num_players=3)
    assert hidden_fields(net.scale, rules) == ["known_cards", "lacks"]
    for extra, why in [([], r"was trained with observation_hide=\[known_cards, lacks\], this "
                            r"config's observation_hide is \[\]: allowed: "
                            r"observation_hide=\[known_cards, lacks\]"),
                       (["observation_hide=[drew]"], r"observation_hide is \[drew\]"),
                       (["observation_hide=[known_cards, lacks]", "policy.activation=relu"],
                        r"the checkpoint's activation is tanh, this config's policy.activation "
                        r"is relu: allowed: policy.activation=tanh")]:
        with pytest.raises(ValueError, match=why):
            train(load_config("default", [*common, *extra, "total_steps=1024",
                                          f"resume={first['model']}",
                                          f"run_dir={tmp_path / 'refused'}"]))
        assert not (tmp_path / "refused").exists()
    second = train(load_config("default", [*common, "total_steps=1024",
                                           "observation_hide=[known_cards, lacks]",
                                           f"resume={first['model']}", f"run_dir={tmp_path / 'b'}"]))
    assert hidden_fields(read_model(second["model"])[1].scale, rules) == ["known_cards", "lacks"]
