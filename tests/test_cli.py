"""Every console script turns every bad input into one line ``ono-<tool>: error: ...`` and
exit status 2: never a traceback, never a silent success."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ono_env import RuleSet
from ono_env.agents.rule_based import GreedyAgent
from ono_env.apps.arena_cli import main as arena_main
from ono_env.apps.bench_cli import main as bench_main
from ono_env.apps.demo import main as demo_main
from ono_env.apps.play import main as play_main
from ono_env.train.cli import main as train_main
from ono_env.train.exploit import main as exploit_main

TOOLS = {"ono-demo": demo_main, "ono-arena": arena_main, "ono-play": play_main,
         "ono-train": train_main, "ono-bench": bench_main, "ono-exploit": exploit_main}


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("bad")
    files = {
        "yaml_syntax": ("rules.yaml", "preset: classic\nnum_players: [2\n"),
        "not_mapping": ("list.yaml", "- classic\n- basic\n"),
        "unknown_key": ("unknown.yaml", "preset: classic\nnum_playerz: 2\n"),
        "bool_count": ("bool.yaml", "preset: classic\nhand_size: true\n"),
        "huge_target": ("huge.yaml", "preset: classic\ntarget_score: 1000000000000000000000000000000\n"),
        "string_flag": ("flag.yaml", "preset: classic\nstacking: 'no'\n"),
        "bad_preset": ("preset.yaml", "preset: nosuch\n"),
    }
    out = {}
    for key, (name, text) in files.items():
        (d / name).write_text(text)
        out[key] = str(d / name)
    (d / "latin1.yaml").write_bytes(b"preset: classic\nname: caf\xe9\n")
    out["not_utf8"] = str(d / "latin1.yaml")
    (d / "folder.yaml").mkdir()
    out["folder"] = str(d / "folder.yaml")
    out["missing"] = str(d / "missing.yaml")
    (d / "garbage.safetensors").write_bytes(b"\x00\x01 not a model")
    out["garbage_model"] = str(d / "garbage.safetensors")
    (d / "garbage.zip").write_bytes(b"PK\x03\x04 truncated")
    out["garbage_zip"] = str(d / "garbage.zip")
    (d / "train.yaml").write_text("total_steps: true\n")
    out["train_bool"] = str(d / "train.yaml")
    (d / "train_list.yaml").write_text("- 1\n")
    out["train_list"] = str(d / "train_list.yaml")
    return out


RULE_FILES = ["yaml_syntax", "not_mapping", "unknown_key", "bool_count", "huge_target",
              "string_flag", "bad_preset", "not_utf8", "folder", "missing"]

ARGUMENTS = {
    "ono-demo": [["--games", "0"], ["--games", str(10**30)], ["--games", "-3"], ["--games", "2.5"],
                 ["--players", "1"], ["--players", "11"], ["--players", "two"], ["--seed", "-1"],
                 ["--seed", "1.5"], ["--rules", "nosuch"], ["--bogus"]],
    "ono-arena": [["greedy", "random", "--games", "0"], ["greedy", "random", "--games", str(10**30)],
                  ["greedy", "random", "--batch", "0"], ["greedy", "random", "--batch", "10000000"],
                  ["greedy", "random", "--players", "1"], ["greedy", "random", "--seed", "-1"],
                  ["greedy", "random", "--seed", "x"], ["genius", "random", "--players", "2"],
                  ["greedy", "--players", "2"], ["greedy", "random", "--rules", "nosuch"],
                  ["greedy", "random", "--players", "2", "--rules", "basic", "--games", "1e3"]],
    "ono-play": [["greedy", "--seat", "5"], ["greedy", "--seat", "-1"], ["greedy", "--players", "0"],
                 ["greedy", "--seed", "abc"], ["genius"], ["greedy", "--rules", "nosuch"],
                 ["greedy", "random", "--players", "2"]],
    "ono-train": [["nosuch"], ["default", "ppo.lr=1"], ["default", "total_steps=true"],
                  ["default", "total_steps=-5"], ["default", "num_envs='5'"],
                  ["default", "policy.activation=gelu"], ["default", "opponents={}"],
                  ["default", "rules=nosuch"], ["default", "x"], ["default", "=3"],
                  ["default", "ppo.gamma=.nan"], ["default", "self_play.weight=1"],
                  ["default", "reward=points"], ["default", "--bogus"]],
    "ono-bench": [["genius"], ["greedy", "--deals", "0"], ["greedy", "--deals", "1e3"],
                  ["greedy", "--slow-deals", "-1"], ["greedy", "--suite", "0"],
                  ["greedy", "--tables", "nosuch"], ["greedy", "--bogus"], ["a:b:c"],
                  ["pimc:x"], ["greedy", "--render", "x.json"], ["greedy", "--workers", "0"]],
    "ono-exploit": [["genius"], ["greedy", "--steps", "0"], ["greedy", "--players", "11"],
                    ["greedy", "--rules", "nosuch"], ["greedy", "--deals", "-2"],
                    ["ppo-basic-2p", "--rules", "ono"], ["greedy", "--seed", "x"],
                    ["greedy", "--threads", "zero"], ["greedy", "--deals", "1"]],
}


def _one_error_line(tool: str, argv: list[str], capsys) -> str:
    rc = TOOLS[tool](argv)
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert rc == 2, (argv, captured.out[-500:], err)
    assert err.startswith(f"{tool}: error: "), (argv, err)
    assert "\n" not in err, (argv, err)
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("tool,argv", [(t, a) for t, args in ARGUMENTS.items() for a in args])
def test_bad_arguments_are_one_line(tool, argv, capsys):
    _one_error_line(tool, argv + (["--no-progress"] if tool == "ono-arena" else []), capsys)


@pytest.mark.parametrize("tool,argv,message", [
    ("ono-demo", ["--games", "1", "--games", "2"], "argument --games: given more than once"),
    ("ono-arena", ["greedy", "random", "--seed=1", "--seed", "2", "--no-progress"],
     "argument --seed: given more than once"),
    ("ono-arena", ["greedy", "random", "--mirrored", "--mirrored", "--no-progress"],
     "argument --mirrored: given more than once"),
    ("ono-play", ["greedy", "--seed", "1", "--seed", "1"], "argument --seed: given more than once"),
    ("ono-train", ["default", "--print-config", "--print-config"],
     "argument --print-config: given more than once"),
    ("ono-train", ["default", "seed=1", "total_steps=5", "seed=2", "--print-config"],
     "override key 'seed' is given twice (seed=1, seed=2); allowed: each field once"),
    # a whole mapping and a field inside it: one of them would silently win
    ("ono-train", ["default", "ppo={n_steps: 64}", "ppo.n_steps=128", "--print-config"],
     "override key 'ppo.n_steps' overlaps 'ppo' (ppo={n_steps: 64}, ppo.n_steps=128)"),
    ("ono-train", ["default", "ppo.n_steps=128", "ppo={n_steps: 64}", "--print-config"],
     "override key 'ppo' overlaps 'ppo.n_steps'"),
    ("ono-bench", ["greedy", "--deals", "10", "--deals", "20"], "argument --deals: given more"),
    ("ono-exploit", ["greedy", "--seed", "1", "--seed", "2"], "argument --seed: given more"),
    # a prefix of an option is not the option; the nearest option is named where one is near
    # (before: none)
    ("ono-demo", ["--game", "1"], "unrecognized arguments: --game 1; did you mean --games? (see"),
    ("ono-arena", ["greedy", "random", "--mirror", "--no-progress"],
     "unrecognized arguments: --mirror; did you mean --mirrored? (see"),
    ("ono-train", ["default", "--print"], "unrecognized arguments: --print (see ono-train --help)"),
    ("ono-bench", ["greedy", "--deal", "10"], "unrecognized arguments: --deal 10; did you mean --deals?"),
])
def test_an_option_is_given_once_and_in_full(tool, argv, message, capsys):
    """argparse keeps the last of a repeated option and takes a prefix of an option's name,
    each silently: ``--seed 1 --seed 2`` ran with seed 2, ``--game 1`` set --games."""
    assert message in _one_error_line(tool, argv, capsys)
    if "given more than once" in message:   # with --help: the help, as asked
        with pytest.raises(SystemExit) as exc:
            TOOLS[tool]([*argv, "--help"])
        assert exc.value.code == 0 and capsys.readouterr().out.startswith(f"usage: {tool}")
        # a --help after "--" is a positional word: the repeat is still refused
        assert message in _one_error_line(tool, [*argv, "--", "--help"], capsys)


@pytest.mark.parametrize("version", ["\uff11", "\u00b9", "\u0661", "01"])
def test_a_suite_version_is_ascii_digits(version, capsys):
    # before: a full-width 1 (and 01) read as version 1, a superscript 1 failed inside int()
    err = _one_error_line("ono-bench", ["greedy", "--suite", version], capsys)
    assert f"unknown suite version {version!r}; there are: 1, 2," in err


def test_an_exploiter_budget_under_one_rollout_is_refused_before_training(tmp_path, capsys):
    # before: --steps 100 trained a whole rollout (16,384 steps) and said so only afterwards
    from ono_env.train.exploit import rollout_steps

    least = rollout_steps("basic", 2)
    err = _one_error_line("ono-exploit", ["greedy", "--steps", str(least - 1), "--no-progress",
                                          "--out", str(tmp_path / "x")], capsys)
    assert f"--steps: {least - 1:,} is out of range; allowed: {least:,} to " in err
    assert not (tmp_path / "x").exists()
    # from Python, a whole number before anything trains (before: deals=2.5 trained, then
    # the measurement refused it; True was reported as 1)
    from ono_env.train.exploit import exploit
    for kwargs, words in (({"deals": 2.5}, "deals 2.5; allowed: a whole number from 2 to "),
                          ({"deals": True}, "deals True; allowed"),
                          ({"steps": True}, "steps True; allowed: a whole number from "),
                          ({"steps": float(least)}, "steps 16384.0; allowed"),
                          # before: taken as text, read again as YAML: the seed 7, 2 threads
                          ({"seed": "7"}, "seed='7' (str); allowed: an integer from 0"),
                          ({"torch_threads": "2"}, "torch_threads='2'; allowed: 'auto', or a whole"),
                          # before: pydantic's lines about the opponents' literal 'auto'
                          ({"target": GreedyAgent(RuleSet.preset("basic", num_players=2))},
                           "target = GreedyAgent(rules='basic', num_players=2) (GreedyAgent); "
                           "allowed: a registered name"),
                          # before: seven lines of pydantic's about the opponents
                          ({"target": "n\udcffx.safetensors"}, "target n?x.safetensors: its "
                           "name holds bytes that are not UTF-8 text; allowed: a name or path"),
                          # before: a TypeError (unhashable), an override's YAML words, the
                          # folder "5", pydantic's lines
                          ({"rules": ["basic"]}, "rules ['basic']; allowed: a preset (basic, "),
                          ({"progress": "no"}, "progress='no'; allowed: True or False"),
                          ({"run_dir": 5}, "run_dir: a folder path is needed; got 5"),
                          ({"run_dir": " "}, "run_dir: a folder path is needed; got ' '")):
        with pytest.raises(ValueError, match=f"^{re.escape(words)}"):
            exploit(kwargs.pop("target", "greedy"), steps=kwargs.pop("steps", least),
                    deals=kwargs.pop("deals", 2), run_dir=kwargs.pop("run_dir", str(tmp_path / "y")),
                    **kwargs)
    assert not (tmp_path / "y").exists()
    # threads, its old name (torch_threads, as ono-train's config names it): warned, and an
    # error names what the caller wrote
    with pytest.warns(DeprecationWarning, match=r"exploit\(threads=...\) is now torch_threads"), \
            pytest.raises(ValueError, match=r"^threads='2'; allowed: 'auto'"):
        exploit("greedy", steps=least, deals=2, threads="2", run_dir=str(tmp_path / "y"))
    for given in (1, "auto"):
        with pytest.raises(ValueError, match="give torch_threads, not also threads"):
            exploit("greedy", steps=least, deals=2, threads=1, torch_threads=given)
    assert not (tmp_path / "y").exists()


def test_an_exploiter_takes_numpy_integers_as_every_count_does(tmp_path):
    """Before: a NumPy seed or player count was taken, trained and measured, and then
    exploit.json failed to be written (a TypeError); NumPy steps and deals were refused as
    out of range."""
    import json

    import numpy as np

    from ono_env.train.exploit import exploit, rollout_steps

    least = rollout_steps("basic", 2)
    out = exploit("greedy", num_players=np.int64(2), seed=np.int64(3),
                  steps=np.int64(least), deals=np.int64(2), torch_threads=1,
                  run_dir=str(tmp_path / "run"))
    saved = json.loads((tmp_path / "run" / "exploit.json").read_text())
    for key, value in (("players", 2), ("seed", 3), ("deals", 2)):
        assert type(out[key]) is int and saved[key] == value, key


def test_an_exploiter_of_a_cheating_target_says_so(tmp_path, capsys):
    """Before: ``exploiter of oracle:1`` unmarked, where every table marks it, and no
    ``cheating`` in exploit.json."""
    import json

    from ono_env.train.exploit import rollout_steps

    least = rollout_steps("basic", 2)
    for target, cheats in (("oracle:1", True), ("greedy", False)):
        out = tmp_path / target.replace(":", "-")
        threads = "--threads" if cheats else "--torch-threads"   # its old name too
        assert exploit_main([target, "--steps", str(least), "--deals", "2", threads, "1",
                             "--out", str(out), "--no-progress"]) == 0
        said = capsys.readouterr().out
        saved = json.loads((out / "exploit.json").read_text())
        assert saved["cheating"] is cheats and saved["torch_threads"] == 1
        assert (f"exploiter of {target} (cheating) (" in said) is cheats, said


def test_an_exploiter_is_not_written_into_a_folder_with_files(tmp_path, capsys):
    (tmp_path / "old.txt").write_text("an earlier run")
    err = _one_error_line("ono-exploit", ["greedy", "--out", str(tmp_path), "--no-progress"], capsys)
    assert f"--out: {str(tmp_path)!r} already holds files (old.txt); allowed: a new or empty" in err
    assert [q.name for q in tmp_path.iterdir()] == ["old.txt"]



def test_an_exploiters_folder_is_named_as_its_flag_and_an_interrupt_says_not_measured(tmp_path,
                                                                                       capsys):
    # before: "run_dir '...'", a field ono-exploit has not, and "no final evaluation", where
    # what an interrupted exploiter lacks is its measurement
    err = _one_error_line("ono-exploit", ["greedy", "--no-progress", "--out",
                                          str(tmp_path / "a\tb")], capsys)
    assert "--out '" in err and "its folder's name is the label its models play under" in err
    assert list(tmp_path.iterdir()) == []
    from ono_env.train.run import StopOnInterrupt
    for program, said in (("ono-exploit", "; not measured (ono-exploit measures the exploiter "
                                          "once it has trained): no exploit.json"),
                          ("ono-train", "; no final evaluation")):
        stop = StopOnInterrupt((), program=program)
        stop.signum = 2
        with pytest.raises(KeyboardInterrupt):
            stop.end(100, 200, tmp_path / "model.safetensors")
        assert capsys.readouterr().err.rstrip().endswith(said)


@pytest.mark.parametrize("tool,argv", [
    ("ono-bench", ["nosuch", "--out", "{out}"]),
    ("ono-bench", ["greedy", "--tables", "nosuch", "--out", "{out}"]),
    ("ono-arena", ["nosuch", "greedy", "--players", "2", "--no-progress", "--out", "{out}",
                   "--record", "2", "{out}/replays"]),
    ("ono-exploit", ["nosuch", "--no-progress", "--out", "{out}"]),
])
def test_a_refused_run_leaves_no_output_folder(tool, argv, tmp_path, capsys):
    """The output folders a console script makes before it refuses the run (they are checked
    first, so that no work is done without somewhere to write) are removed again; a folder
    that was there before is kept."""
    out = tmp_path / "new" / "run"
    _one_error_line(tool, [a.format(out=out) for a in argv], capsys)
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    _one_error_line(tool, [a.format(out=tmp_path / "kept") for a in argv], capsys)
    assert [q.name for q in tmp_path.iterdir()] == ["kept"]
    assert list((tmp_path / "kept").iterdir()) == []


@pytest.mark.parametrize("tool,argv", [
    ("ono-bench", ["greedy", "--tables", "basic-2p", "--deals", "2", "--out"]),
    ("ono-arena", ["greedy", "random", "--players", "2", "--games", "2", "--no-progress",
                   "--out"]),
])
def test_an_output_folder_of_spaces_is_refused(tool, argv, tmp_path, capsys, monkeypatch):
    # before: a folder named " " was made, and "wrote  /arena.json" said
    monkeypatch.chdir(tmp_path)
    err = _one_error_line(tool, [*argv, " "], capsys)
    assert "--out: a folder path is needed; got ' '" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", RULE_FILES)
@pytest.mark.parametrize("tool", ["ono-demo", "ono-arena", "ono-play"])
def test_bad_rules_files_are_one_line(tool, kind, bad_files, capsys):
    argv = {"ono-demo": ["--quiet", "--games", "1"],
            "ono-arena": ["greedy", "random", "--games", "10", "--no-progress"],
            "ono-play": ["greedy"]}[tool] + ["--rules", bad_files[kind]]
    err = _one_error_line(tool, argv, capsys)
    assert bad_files[kind] in err


def test_options_may_come_between_the_positional_words(capsys):
    """An option between or before the positional words (agents, overrides) leaves the
    words after it to the same positional: ``ono-arena greedy --games 4 random``."""
    argv = ["--rules", "basic", "--players", "2", "--seed", "1"]
    assert arena_main(["greedy", "--games", "4", "random", *argv]) == 0
    between = capsys.readouterr().out
    assert arena_main(["greedy", "random", "--games", "4", *argv]) == 0
    after = capsys.readouterr().out
    assert "greedy" in between and "random" in between
    strip = [line for line in between.splitlines() if "played in" not in line]
    assert strip == [line for line in after.splitlines() if "played in" not in line]
    assert arena_main(["greedy", "--games", "4", "random", "--bogus"]) == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err
    # after "--" every word is positional, however it is spelled, as in plain parsing
    from ono_env.train.export import build_parser as export_parser
    args = export_parser().parse_args(["--", "-a.zip", "-b.safetensors"])
    assert (args.src, args.dest) == ("-a.zip", "-b.safetensors")
    assert arena_main(["--games", "4", *argv, "--", "greedy", "random"]) == 0
    assert [line for line in capsys.readouterr().out.splitlines()
            if "played in" not in line] == strip


@pytest.mark.parametrize("tool, argv", [
    ("ono-demo", ["--quiet", "--games", "1"]), ("ono-bench", ["--list"]),
    ("ono-arena", ["random", "greedy", "--players", "2", "--games", "4", "--no-rating",
                   "--no-progress"]),
    ("ono-train", ["default", "--print-config"]), ("ono-play", ["greedy"])])
def test_a_closed_stdout_is_refused_before_anything_runs(tool, argv, monkeypatch, capsys):
    """Python makes a closed stdout None and print() then writes nothing (before: every tool
    but ono-play ran, its results lost, and ended with status 0)."""
    monkeypatch.setattr(sys, "stdout", None)
    assert TOOLS[tool](argv) == 2
    assert capsys.readouterr().err == (
        f"{tool}: error: standard output is closed ({tool} prints its results there); allowed: "
        "a terminal, a file or a pipe (>/dev/null to discard them)\n")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_full_stdout_is_named_in_the_one_error_line():
    """Before: ``ono-demo > /dev/full`` ended with "error: [Errno 28] No space left on
    device", which names no file (a failed write to any output file reads the same)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}   # (before: the
    # buffered output failed at the interpreter's exit, "Exception ignored", status 120)
    with open("/dev/full", "w") as full:
        run = subprocess.run([sys.executable, "-m", "ono_env.apps.demo", "--games", "1"],
                             stdout=full, stderr=subprocess.PIPE, timeout=120, env=env)
    assert run.returncode == 2
    assert run.stderr.decode() == ("ono-demo: error: cannot write the standard output: "
                                   "[Errno 28] No space left on device\n")


def test_a_name_the_output_cannot_encode_is_written_escaped(tmp_path):
    """Before: under PYTHONIOENCODING=ascii (or a C locale) a finished run ended "error:
    'ascii' codec can't encode character" with status 2, its files written, at the first
    name with an accent that it printed."""
    import shutil

    from ono_env.agents.learned import shipped_models

    shutil.copy(shipped_models()["ppo-basic-2p"], tmp_path / "mod\u00e8le.safetensors")
    run = subprocess.run([sys.executable, "-m", "ono_env.apps.arena_cli", "mod\u00e8le.safetensors",
                          "greedy", "--players", "2", "--games", "20", "--no-rating", "--no-progress"],
                         capture_output=True, timeout=300, cwd=tmp_path,
                         env=dict(os.environ, PYTHONIOENCODING="ascii"))
    assert run.returncode == 0, run.stderr
    assert b"mod\\xe8le " in run.stdout and run.stderr == b""


def test_a_module_class_agent_from_a_folder_gone_is_one_error(monkeypatch):
    """Before: "[Errno 2] No such file or directory", which named nothing."""
    from ono_env.agents.registry import agent_from_class

    def gone() -> str:
        raise FileNotFoundError(2, "No such file or directory")
    monkeypatch.setattr(os, "getcwd", gone)
    with pytest.raises(ValueError, match=r"^agent 'mine:Agent': the current folder, where its "
                                         r"module is looked for first, no longer exists"):
        agent_from_class("mine:Agent", "basic")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize("module", ["ono_env.apps.arena_cli", "ono_env.apps.demo"])
def test_help_to_a_full_stdout_is_an_error(module):
    """Before: ``ono-arena --help > /dev/full`` ended with status 0, the help lost: argparse
    drops a failed write without a word. The help itself still reaches a working output."""
    with open("/dev/full", "w") as full:
        run = subprocess.run([sys.executable, "-m", module, "--help"], stdout=full,
                             stderr=subprocess.PIPE, timeout=120)
    assert run.returncode == 2
    assert run.stderr.decode().endswith(": error: cannot write the standard output: "
                                        "[Errno 28] No space left on device\n")
    assert len(run.stderr.decode().splitlines()) == 1
    ok = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, timeout=120)
    assert ok.returncode == 0 and ok.stdout.decode().startswith("usage: ") and not ok.stderr


@pytest.mark.parametrize("stop,status,line", [(KeyboardInterrupt(), 130, "x: interrupted"),
                                               (None, 143, "x: stopped by SIGTERM")])
def test_a_stop_raised_inside_compiled_code_ends_the_run_as_that_stop(stop, status, line, capsys):
    """Ray's compiled wait turns a signal handler's exception into a SystemError caused by it;
    before: "error: SystemError: <cyfunction CoreWorker.wait ...>" and status 2."""
    import signal

    from ono_env.apps import console
    cause = console.Stopped(signal.SIGTERM) if stop is None else stop

    def body(args):
        raise SystemError("<cyfunction CoreWorker.wait> returned a result with an exception set") \
            from cause
    parser = console.ArgumentParser(prog="x")
    assert console.run(parser, [], body) == status
    assert capsys.readouterr().err.strip().splitlines()[-1] == line


def test_a_reader_that_stops_early_ends_a_console_script_quietly():
    """A console script whose reader stops (``ono-demo ... | head -1``) ends with the status of
    a SIGPIPE and says nothing, as Unix tools do, rather than an error line."""
    run = subprocess.Popen([sys.executable, "-m", "ono_env.apps.demo", "--rules", "classic",
                            "--players", "4", "--games", "30"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert run.stdout is not None and run.stderr is not None
    assert run.stdout.readline().startswith(b"=== game 1")
    run.stdout.close()   # the reader goes away with most of the output unread
    err = run.stderr.read().decode()
    assert run.wait(timeout=120) == 141 and err == ""


def test_an_interrupted_console_script_ignores_a_second_ctrl_c_as_it_exits(monkeypatch, capsys):
    """Before: a second Ctrl-C while the interpreter exited (after "interrupted", status 130)
    printed a traceback from an atexit callback. Run as the console script (argv None), the
    interrupted run now ignores SIGINT from there on; called with its arguments (from Python),
    it leaves the handler alone."""
    import argparse
    import signal

    from ono_env.apps import console

    def body(args):
        raise KeyboardInterrupt
    before = signal.getsignal(signal.SIGINT)
    try:
        assert console.run(argparse.ArgumentParser(prog="ono-x"), [], body) == 130
        assert signal.getsignal(signal.SIGINT) is before
        monkeypatch.setattr(sys, "argv", ["ono-x"])
        assert console.run(argparse.ArgumentParser(prog="ono-x"), None, body) == 130
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
    assert capsys.readouterr().err == "ono-x: interrupted\nono-x: interrupted\n"


@pytest.mark.parametrize("stop, status, said", [
    (KeyboardInterrupt, 130, "ono-x: interrupted\n"), (None, 143, "ono-x: stopped by SIGTERM\n")])
def test_a_stop_python_could_only_print_ends_the_run_as_that_stop(stop, status, said, capsys):
    """Before: a Ctrl-C or SIGTERM while numba compiled a kernel was raised in its ctypes
    callback, where Python prints "Exception ignored ..." and a traceback and goes on; the
    compile then failed ("no compiled object yet") and the run ended "error: RuntimeError"
    with status 2. Such a stop (here from a ``__del__``, which Python treats alike) is now
    kept, printed as nothing, and the failure after it ends the run as the stop does; the
    caller's unraisable hook is back afterwards, and other unraisable errors still reach it."""
    import argparse

    from ono_env.apps import console

    class Raises:
        def __init__(self, exc):
            self.exc = exc

        def __del__(self):
            raise self.exc

    def body(args):
        Raises(stop() if stop else console.Stopped(15))   # dropped at once: its __del__ raises
        raise RuntimeError("no compiled object yet")

    seen = []
    before = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        assert console.run(argparse.ArgumentParser(prog="ono-x"), [], body) == status
        assert sys.unraisablehook == seen.append
        assert capsys.readouterr().err == said and seen == []

        def other(args):
            Raises(ValueError("not a stop"))
            raise RuntimeError("failed")
        assert console.run(argparse.ArgumentParser(prog="ono-x"), [], other) == 2
        assert capsys.readouterr().err == "ono-x: error: RuntimeError: failed\n"
        assert [type(u.exc_value) for u in seen] == [ValueError]
    finally:
        sys.unraisablehook = before


def test_a_sigterm_ends_a_console_script_as_a_ctrl_c_does(tmp_path, capsys):
    """Before: SIGTERM's default ended the process at once: no word, an output folder made
    for the run left behind, and a worker pool's processes running on. Now it raises
    console.Stopped in the main thread (cleanup runs), the run says so, removes its empty
    folders and ends with status 128 + 15; the handler is the caller's again afterwards."""
    import argparse
    import signal

    from ono_env.apps import console
    from ono_env.checks import check_output_dir

    cleaned = []

    def body(args):
        check_output_dir(tmp_path / "out", "--out")
        try:
            signal.raise_signal(signal.SIGTERM)
            raise AssertionError("the run went on after the signal")
        finally:
            cleaned.append(True)
    before = signal.getsignal(signal.SIGTERM)
    assert console.run(argparse.ArgumentParser(prog="ono-x"), [], body) == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before and cleaned == [True]
    assert capsys.readouterr().err == "ono-x: stopped by SIGTERM\n"
    assert not (tmp_path / "out").exists()


def test_a_sigterm_to_ono_bench_stops_its_worker_processes(tmp_path):
    """Before: the main process died at once and its two worker processes ran on (handed to
    PID 1) until their pairings ended. Now they are stopped, and the run names the pairings
    it kept."""
    import signal
    import time

    out = tmp_path / "b"
    run = subprocess.Popen([sys.executable, "-m", "ono_env.apps.bench_cli", "pimc:16", "--tables",
                            "basic-2p", "--deals", "4000", "--slow-deals", "400", "--no-progress",
                            "--workers", "2", "--out", str(out)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not ((out / "pairings.jsonl").is_file()
                   and (out / "pairings.jsonl").read_text().strip()):
            assert run.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        children = [int(c) for c in Path(f"/proc/{run.pid}/task/{run.pid}/children")
                    .read_text().split()]
        assert len(children) >= 2   # the workers (and the resource tracker)
        run.send_signal(signal.SIGTERM)
        assert run.wait(timeout=60) == -signal.SIGTERM   # ended by the signal, its cleanup done
        err = run.stderr.read()
    finally:
        run.kill()
    assert err.endswith("ono-bench: stopped by SIGTERM\n") and "pairing(s) that finished are in " \
        f"{out / 'pairings.jsonl'}" in err, err

    def alive() -> list[int]:   # running (a zombie has ended; a pid gone has too)
        found = []
        for pid in children:
            try:
                if "State:\tZ" not in Path(f"/proc/{pid}/status").read_text():
                    found.append(pid)
            except FileNotFoundError:
                pass
        return found
    deadline = time.monotonic() + 15   # the workers are terminated; the tracker follows them
    while alive() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert alive() == []


def test_a_broken_pipe_that_is_not_stdout_is_an_error_line(capsys):
    """A BrokenPipeError while stdout is still there (another pipe the tool writes broke) is
    the usual one error line, not a quiet end."""
    import argparse

    from ono_env.apps import console

    def body(args):
        raise BrokenPipeError(32, "Broken pipe")
    assert console.run(argparse.ArgumentParser(prog="ono-x"), [], body) == 2
    assert capsys.readouterr().err == "ono-x: error: [Errno 32] Broken pipe\n"


def test_a_file_to_write_named_as_a_folder_is_refused(tmp_path, capsys):
    """Before: ``--replay y/`` for a folder not there yet was taken, and the replay written to a
    file named ``y``; for a folder that exists the message named ``'y'``."""
    err = _one_error_line("ono-play", ["greedy", "--replay", f"{tmp_path}/y/"], capsys)
    assert err == (f"ono-play: error: --replay: '{tmp_path}/y/' names a folder (it ends with "
                   f"'/'); give a file name")
    assert not (tmp_path / "y").exists()
    from ono_env.checks import check_output_file, check_write_path
    for check in (check_output_file, check_write_path):
        with pytest.raises(ValueError, match=r"^out: '[^']*/' names a folder \(it ends with "):
            check(f"{tmp_path}/", "out")


def test_play_keeps_a_rules_files_player_count(tmp_path, capsys):
    """ono-play with a rules file that sets num_players and agents for another count is one
    error naming both (the file's count is not dropped silently); agents that fill the file's
    seats, or --players, are taken."""
    rules = tmp_path / "seven.yaml"
    rules.write_text("preset: wikipedia\nnum_players: 7\n")
    err = _one_error_line("ono-play", ["greedy", "--rules", str(rules)], capsys)
    assert (f"rules file '{rules}' sets num_players=7 and 1 agent makes 2 players: give 6 (one "
            f"per other seat), or --players to play another count") in err
    err = _one_error_line("ono-play", ["greedy", "color", "--rules", str(rules)], capsys)
    assert "2 agents make 3 players" in err
    # a count given that the file's rules cannot deal: the file and the count named (before:
    # "invalid rule set: ..." alone)
    big = tmp_path / "big.yaml"
    big.write_text("preset: basic\nnum_players: 2\nhand_size: 50\n")
    err = _one_error_line("ono-play", ["--rules", str(big), "--players", "3"], capsys)
    assert err.startswith(f"ono-play: error: rules file '{big}' with num_players=3: invalid "
                          f"rule set: the deck has 108 cards, too few to deal hand_size=50")
    # ten agents, no count given: named as the agents' count, not as a rules field
    err = _one_error_line("ono-play", ["greedy"] * 10, capsys)
    assert err.endswith("10 agents make 11 players; allowed: 1 to 9 agents (one per other "
                        "seat, 2 to 10 players)")
    from ono_env.apps.play import play
    with pytest.raises(ValueError, match=r"^0 agents make 1 player; allowed: 1 to 9 agents"):
        play([], "basic")
    from ono_env.apps.play import Quit, play
    from ono_env.rules import resolve_rules

    def leave(prompt: str) -> str:
        raise Quit("test")
    shown = io.StringIO()
    with pytest.raises(Quit):
        play(["greedy"] * 6, str(rules), read=leave, out=shown, seed=1)
    assert "wikipedia rules, 7 players" in shown.getvalue()
    shown = io.StringIO()
    with pytest.raises(Quit):
        play(["greedy"], str(rules), num_players=2, read=leave, out=shown, seed=1)
    assert "wikipedia rules, 2 players" in shown.getvalue()
    from ono_env.rules import given_player_count
    assert given_player_count(rules) == (7, f"rules file '{rules}'")   # a Path as a str
    assert given_player_count(str(rules)) == (7, f"rules file '{rules}'")
    assert given_player_count({"preset": "ono", "num_players": 3}) == (3, "rules")
    (tmp_path / "nocount.yaml").write_text("preset: ono\n")
    (tmp_path / "bad.yaml").write_text("[unclosed\n")
    for none in ("wikipedia", tmp_path / "nocount.yaml", tmp_path / "bad.yaml",
                 tmp_path / "missing.yaml", {"preset": "ono"}, resolve_rules("ono")):
        assert given_player_count(none) is None, none
    assert resolve_rules("wikipedia").num_players != 2   # a preset's own count gives way as ever
    shown = io.StringIO()
    with pytest.raises(Quit):
        play(["greedy"], "wikipedia", read=leave, out=shown, seed=1)
    assert "wikipedia rules, 2 players" in shown.getvalue()


@pytest.mark.parametrize("kind", ["yaml_syntax", "not_mapping", "not_utf8", "folder", "missing",
                                  "train_bool", "train_list"])
def test_bad_training_config_files_are_one_line(kind, bad_files, capsys):
    err = _one_error_line("ono-train", [bad_files[kind], "--print-config"], capsys)
    assert bad_files[kind] in err


@pytest.mark.parametrize("kind", ["garbage_model", "garbage_zip", "folder", "missing"])
@pytest.mark.parametrize("tool", ["ono-arena", "ono-play"])
def test_bad_model_files_are_one_line(tool, kind, bad_files, capsys):
    model = bad_files[kind]
    if kind in ("folder", "missing"):
        model = model.replace(".yaml", ".safetensors")
        if kind == "folder":
            Path(model).mkdir(exist_ok=True)
    argv = {"ono-arena": [model, "random", "--players", "2", "--rules", "basic", "--games", "10",
                          "--no-progress"],
            "ono-play": [model, "--rules", "basic"]}[tool]
    err = _one_error_line(tool, argv, capsys)
    assert model in err


def test_the_rules_checks_name_what_was_wrong(bad_files, capsys):
    cases = {"unknown_key": "num_playerz", "bool_count": "hand_size", "huge_target": "target_score",
             "string_flag": "stacking", "bad_preset": "nosuch", "yaml_syntax": "line",
             "not_utf8": "UTF-8", "folder": "folder"}
    for kind, word in cases.items():
        err = _one_error_line("ono-demo", ["--quiet", "--rules", bad_files[kind]], capsys)
        assert word in err, (kind, err)


@pytest.mark.parametrize("script,argv", [
    ("ono_env.apps.demo", ["--games", "0"]),
    ("ono_env.apps.arena_cli", ["greedy", "random", "--rules", "{rules}"]),
    ("ono_env.apps.play", ["greedy", "--rules", "{rules}"]),
    ("ono_env.train.cli", ["{rules}"]),
    ("ono_env.apps.bench_cli", ["greedy", "--render", "{rules}"]),
    ("ono_env.train.exploit", ["greedy", "--rules", "{rules}"]),
])
def test_console_scripts_never_print_a_traceback(script, argv, bad_files):
    argv = [a.format(rules=bad_files["yaml_syntax"]) for a in argv]
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", script, *argv], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL, env=env)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_an_arena_stopped_midway_says_nothing_is_kept(monkeypatch, tmp_path, capsys):
    """Before: "interrupted" alone, though every game played so far was lost; an --out folder
    made for the run is removed again."""
    from ono_env.apps import arena_cli

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(arena_cli, "run_arena", stopped)
    assert arena_main(["greedy", "random", "--players", "2", "--games", "8", "--out",
                       str(tmp_path / "o")]) == 130
    assert capsys.readouterr().err == ("ono-arena: no results kept: they are counted once every "
                                       "game is played\nono-arena: interrupted\n")
    assert not (tmp_path / "o").exists()


def test_a_search_by_the_clock_is_said_not_to_repeat(capsys):
    """Before: the same seed gave 62.5% and then 52.5% with ismcts:3ms, and nothing said that
    a time budget makes a run unrepeatable."""
    from ono_env.agents.search import thinks_by_the_clock

    assert [thinks_by_the_clock(s) for s in ("pimc:20ms", "ismcts:3.5ms", "pimc:64", "pimc",
                                             "greedy", "mine.ms", "x:y:3ms", None)] == \
        [True, True, False, False, False, False, False, False]
    assert arena_main(["ismcts:3ms", "greedy", "--players", "2", "--games", "2",
                       "--no-progress", "--no-rating"]) == 0
    assert "ono-arena: note: ismcts:3ms think(s) for a time per decision: their moves depend " \
           "on the machine's speed and load" in capsys.readouterr().err
    assert arena_main(["pimc:4", "greedy", "--players", "2", "--games", "2", "--no-progress",
                       "--no-rating"]) == 0
    assert "note" not in capsys.readouterr().err


def test_ono_web_keeps_the_signals_to_its_server():
    """The web server is left its own signals (uvicorn stops gracefully on SIGTERM): the
    console scripts' Stopped, raised in its event loop, printed tracebacks on a SIGHUP, and
    under load the server ran on; on SIGTERM it ended with status 143, not by the signal."""
    import signal

    for sig in (signal.SIGHUP, signal.SIGTERM):
        run = subprocess.Popen([sys.executable, "-m", "ono_env.apps.web.server", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert run.stdout is not None and "open http" in run.stdout.readline()
            run.send_signal(sig)
            assert run.wait(timeout=60) == -sig
            err = run.stderr.read() if run.stderr is not None else ""
        finally:
            run.kill()
        assert "Traceback" not in err and "stopped by" not in err, err


def test_an_exploiter_of_a_clock_budget_says_it_will_not_repeat(tmp_path, capsys, monkeypatch):
    # before: trained as though the same --seed would give the same exploiter
    import ono_env.train.ppo as P
    from ono_env.train.exploit import exploit

    class Trains(Exception):
        pass

    def train(*args, **kwargs):
        raise Trains
    monkeypatch.setattr(P, "train", train)
    for target, noted in (("pimc:5ms", True), ("pimc:5", False)):
        with pytest.raises(Trains):
            exploit(target, steps=16_384, deals=2, run_dir=str(tmp_path / "x"))
        err = capsys.readouterr().err
        assert ("note: pimc:5ms thinks for a time per decision" in err) is noted, err


def test_a_missing_module_no_extra_installs_is_named_with_the_agent_that_imported_it(capsys):
    """Before: any ImportError was read as an ono-env extra not installed, "pip install
    'ono-env[all]'" for a user's agent's own import, and the agent was not named."""
    import argparse

    from ono_env.apps import console

    def body(missing):
        def run(args):
            exc = ModuleNotFoundError(f"No module named {missing!r}", name=missing)
            exc.add_note("raised by the agent Late")
            raise exc
        return run
    assert console.run(argparse.ArgumentParser(prog="ono-x"), [], body("torchvision_x")) == 2
    assert capsys.readouterr().err == ("ono-x: error: ModuleNotFoundError: No module named "
                                       "'torchvision_x' (raised by the agent Late)\n")
    assert console.run(argparse.ArgumentParser(prog="ono-x"), [], body("matplotlib")) == 2
    assert capsys.readouterr().err == ("ono-x: error: this needs matplotlib, which is not "
                                       "installed: pip install 'ono-env[arena]'\n")


def test_a_thread_left_running_is_said_before_the_program_waits_for_it(capsys):
    """Python's exit waits for every thread that is not a daemon: a console script whose
    agent left one running printed its results and hung without a word (before). A thread
    that ends within the grace is not named, nor an idle executor's workers, which Python's
    exit shuts down itself."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from ono_env.apps.console import say_threads_left

    idle = ThreadPoolExecutor(2)
    idle.submit(time.sleep, 0).result()
    go = threading.Event()
    quick = threading.Thread(target=lambda: None, name="quick")
    held = threading.Thread(target=go.wait, name="held-by-agent")
    quick.start()
    held.start()
    try:
        assert say_threads_left("ono-arena", grace=0.2) == ["held-by-agent"]
        assert capsys.readouterr().err == (
            "ono-arena: done, but Python waits for 1 thread still running before it ends "
            "(held-by-agent): an agent's threads must end, or be daemon threads\n")
    finally:
        go.set()
        held.join()
    assert say_threads_left("ono-arena", grace=0.2) == []
    assert capsys.readouterr().err == ""
    idle.shutdown()


def test_an_errors_notes_are_one_line_of_text():
    """What a console script's line and ono-bench's refusal append: each note in brackets,
    a newline in one shown as ?, a __notes__ that is no list of text left out (before: a
    note's newline broke the one line, and a string was spread out letter by letter)."""
    from ono_env.checks import notes_text

    exc = ValueError("bad")
    exc.__notes__ = ["raised by the agent a\nb", 3, "two"]
    assert notes_text(exc) == " (raised by the agent a?b) (two)"
    odd = ValueError("bad")
    odd.__notes__ = "text"
    assert notes_text(odd) == "" and notes_text(ValueError("plain")) == ""


def test_a_path_past_any_the_system_takes_is_cut_in_the_one_line(tmp_path, capsys):
    """Before: a 5,000-character path argument made a 5,000-character error line; a path is
    shown whole up to 4,200 characters (PATH_MAX is 4,096), cut with "..." past them."""
    from ono_env.checks import MAX_PATH_SHOWN, check_input_file, path_text

    long = "a" * 5000
    with pytest.raises(ValueError) as err:
        check_input_file(long, "model file", 1 << 20)
    assert len(str(err.value)) < MAX_PATH_SHOWN + 200
    assert path_text(long).endswith("aaa...") and len(path_text(long)) == MAX_PATH_SHOWN
    assert path_text(tmp_path / "x") == repr(str(tmp_path / "x"))   # a real path: whole
    assert bench_main(["--render", long]) == 2
    line = capsys.readouterr().err
    assert line.count("\n") == 1 and len(line) < MAX_PATH_SHOWN + 200
