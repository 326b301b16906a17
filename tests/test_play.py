"""ono-play with scripted standard input."""

from __future__ import annotations

import io
import itertools
import re
import subprocess
import sys

import numpy as np
import pytest
from conftest import make_position

from ono_env.apps.play import Quit, parse_choice, play
from ono_env.cards import CARD_IDS, CARD_NAMES, CARD_POINTS, action_id


def scripted_reader(out: io.StringIO, prefix=("nonsense", "999", "play W")):
    """Answers the prompts: first the entries in ``prefix`` (all wrong), then alternately
    the number and the name of the first listed option."""
    queue = list(prefix)
    count = [0]

    def read(prompt: str) -> str:
        if queue:
            return queue.pop(0)
        block = out.getvalue().rsplit("your options:", 1)[1]
        first = re.search(r"^\s+(\d+)\s+(.+?)(?:\s{3}\(.*\))?$", block, re.M)
        count[0] += 1
        return first.group(1) if count[0] % 2 else first.group(2)
    return read


def test_a_scripted_human_finishes_a_round_and_wrong_entries_are_re_prompted():
    out = io.StringIO()
    won = play(["greedy"], "basic", seed=4, read=scripted_reader(out), out=out)
    text = out.getvalue()
    assert won in ([0], [1])
    winner = won[0]
    assert "not accepted: unknown entry 'nonsense'" in text
    assert "not accepted: 999 is not one of the listed numbers (1 to " in text
    assert re.search(r"not accepted: (W is \d options: play W R, |W is not a legal play now)", text)
    assert text.count("your options:") >= 3
    assert ("you win!" in text) == (winner == 0)
    assert "(greedy)" in text
    # the table is printed after each move, showing only the human's own hand
    assert text.count("P0 to act") + text.count("P1 to act") >= text.count("your options:")
    assert re.search(r"P1 \(?.*\[\d+ cards\]", text)


def test_a_match_against_three_agents_and_a_single_round_option():
    out = io.StringIO()
    play(["greedy", "color", "defensive"], "classic", seat=2, seed=1, single_round=True,
         read=scripted_reader(out, ()), out=out)
    text = out.getvalue()
    assert "4 players" in text and "You are P2" in text and "game over" in text


def test_parse_choice_by_number_name_or_card():
    assert parse_choice(" 2 ", [5, 66]) == 66           # the options are numbered 1..n
    assert parse_choice("1", [5, 66]) == 5
    assert parse_choice("play  R5", [5, 66]) == 5
    assert parse_choice("r5", [5, 66]) == 5             # a bare card name
    assert parse_choice("W+4 g", [action_id("play W+4 G")]) == action_id("play W+4 G")
    with pytest.raises(ValueError, match="'draw' is not legal now"):
        parse_choice("draw", [5])
    with pytest.raises(ValueError, match=r"66 is not one of the listed numbers \(1 to 2\)"):
        parse_choice("66", [5, 66])
    wilds = [action_id(f"play W {c}") for c in "RYGB"]
    with pytest.raises(ValueError, match="W is 4 options: play W R, play W Y, play W G, play W B"):
        parse_choice("w", wilds)
    with pytest.raises(ValueError, match="'play R6' is not legal now"):
        parse_choice("R6", [5, 66])


def test_a_colour_is_named_as_the_game_writes_it_and_a_player_by_seat():
    """Before: ``R``, ``red`` and ``colour r`` were unknown entries (only ``color R``), and
    ``target 2`` meant two seats on from the player, which a player at seat 1 took for P2."""
    colours = [action_id(f"color {c}") for c in "RYGB"]
    for text in ("R", "red", "colour r", "Color R", "COLOR red"):
        assert parse_choice(text, colours) == action_id("color R")
    assert parse_choice("b", colours) == action_id("color B")
    with pytest.raises(ValueError, match=r"'color R' is not legal now \(no colour is to be named\)"):
        parse_choice("red", [5, 66])
    position = {"current_player": 1, "hands": [[], [], []]}   # P1 of three chooses
    targets = [action_id("target 1"), action_id("target 2")]
    assert parse_choice("target P2", targets, position) == action_id("target 1")
    assert parse_choice("p0", targets, position) == action_id("target 2")
    assert parse_choice("target 2", targets, position) == action_id("target 2")   # as before
    for text in ("target 0", "target -1", "TARGET 10"):   # before: "unknown entry"
        with pytest.raises(ValueError, match=rf"^'{text}' names no player; allowed: target N, "
                                             rf"the player N seats on from you"):
            parse_choice(text, targets, position)
    for text, message in (("P1", r"P1 is no player to swap hands with \(you are P1"),
                          ("target P3", r"P3 is no player to swap hands with .*P0 to P2\)")):
        with pytest.raises(ValueError, match=message):
            parse_choice(text, targets, position)
    with pytest.raises(ValueError, match=r"'target P2' is not legal now"):
        parse_choice("P2", [5], position)
    # your own seat, or one past the table, where no player is to be chosen: that is why
    # (before: "P1 is no player to swap hands with", where P2 said why)
    for text in ("P1", "P7"):
        with pytest.raises(ValueError, match=rf"^'target {text}' is not legal now \(no player is "
                                             rf"to be chosen\)$"):
            parse_choice(text, [5], {**position, "phase": "play"})
    # an action's own name says why as the seat's form does (before: "'target 1' is not legal
    # now", alone, and 'color R' the same)
    position = {**position, "phase": "play"}
    for text, why in (("target 1", "no player is to be chosen"),
                      ("color R", "no colour is to be named")):
        with pytest.raises(ValueError, match=rf"^'{text}' is not legal now \({why}\)$"):
            parse_choice(text, [5], position)


def test_a_play_of_a_card_not_held_says_so():
    """Before: the same "is not legal now" whether the card was held or not, and a card held
    was refused with no reason where the position gives a plain one."""
    position = {"current_player": 1, "hands": [["R5"], ["R7", "W", "B3", "G+2"]],
                "phase": "play", "discard": ["GS"], "color": "G", "drawn_card": None,
                "pending_draw": 0}
    draw = [action_id("draw")]
    for text, message in (
            ("play R5", r"^'play R5' is not legal now \(you hold no R5\)$"),
            ("w+4", r"^W\+4 is not a legal play now \(you hold no W\+4\)$"),
            ("R7", r"^'play R7' is not legal now \(it matches neither the colour in play, G, "
                   r"nor the top card's value, Skip\)$"),
            ("play W G", r"^'play W G' is not legal now$")):   # a wild: the options say why
        with pytest.raises(ValueError, match=message):
            parse_choice(text, draw, position)
    wild = dict(position, discard=["GS", "W"])
    with pytest.raises(ValueError, match=r"^'play B3' is not legal now \(it matches neither "
                                         r"the colour in play, G\)$"):
        parse_choice("B3", draw, wild)
    drawn = dict(position, phase="drawn", drawn_card="W")
    with pytest.raises(ValueError, match=r"\(after a draw only the drawn card, W, may be "
                                         r"played\)$"):
        parse_choice("R7", [action_id("keep"), action_id("play W G")], drawn)
    # the drawn card may not be played either (before: told it may)
    with pytest.raises(ValueError, match=r"\(after a draw only the drawn card may be played, "
                                         r"and W may not: keep it\)$"):
        parse_choice("R7", [action_id("keep")], drawn)
    drawn = dict(position, phase="drawn", drawn_card="B3")   # the drawn card itself: no match
    with pytest.raises(ValueError, match=r"\(it matches neither the colour in play, G, nor"):
        parse_choice("B3", [action_id("keep")], drawn)
    pending = dict(position, phase="pending", pending_draw=2, discard=["R+2"], color="R")
    with pytest.raises(ValueError, match=r"\(2 cards to draw are pending: take them, or answer"):
        parse_choice("R7", [action_id("accept"), action_id("play G+2")], pending)
    # nothing to answer with (no stacking): the options named (before: "answer with a card")
    with pytest.raises(ValueError, match=r"\(2 cards to draw are pending; your options: "
                                         r"accept\)$"):
        parse_choice("R7", [action_id("accept")], pending)
    matching = dict(position, discard=["R+2"], color="R")   # held and matching: no reason made up
    with pytest.raises(ValueError, match=r"^'play R7' is not legal now$"):
        parse_choice("R7", draw, matching)


def test_no_agent_given_is_greedy_at_every_other_seat(tmp_path):
    """Before: the default agent was counted as given: ``--players 4`` alone was "1 agent
    for 4 players: give 3"."""
    from ono_env.apps.play import main

    for argv, players in (([], 2), (["--players", "4"], 4),
                          (["--rules", str(tmp_path / "three.yaml")], 3)):
        (tmp_path / "three.yaml").write_text("preset: basic\nnum_players: 3\n")
        proc = subprocess.run([sys.executable, "-m", "ono_env.apps.play", *argv, "--seed", "1"],
                              input="quit\n", capture_output=True, text=True, timeout=300)
        assert proc.returncode == 1, proc.stderr
        others = ", ".join(f"P{q} greedy" for q in range(1, players))
        assert f"{players} players, seed 1. You are P0. {others}. Type help" in proc.stdout
    assert main(["random", "random", "--players", "4", "--seed", "1"]) == 2   # given: counted
    (tmp_path / "eleven.yaml").write_text("preset: basic\nnum_players: 11\n")
    proc = subprocess.run([sys.executable, "-m", "ono_env.apps.play", "--rules",
                           str(tmp_path / "eleven.yaml")], input="quit\n", capture_output=True,
                          text=True, timeout=300)   # the file's count refused as the file's
    assert proc.returncode == 2 and proc.stderr == (
        f"ono-play: error: rules file '{tmp_path / 'eleven.yaml'}': invalid rule set: "
        f"num_players=11; allowed: 2 to 10\n")


def test_a_terminal_entry_can_be_edited_with_the_arrow_keys():
    """``input()`` edits its line once ``readline`` is imported: "hep", left, "l" is
    "help" (before: never imported, an "unknown entry 'hep\\x1b[Dl'")."""
    import pexpect

    child = pexpect.spawn(sys.executable, ["-m", "ono_env.apps.play", "--seed", "1",
                                           "--no-color"], encoding="utf-8", timeout=120)
    child.expect(r"help\): ")
    child.send("hep\x1b[Dl\r")
    child.expect(r"help\): ")
    assert "commands:" in child.before and "not accepted" not in child.before
    child.sendline("quit")
    child.expect(pexpect.EOF)


def test_colours_only_on_a_terminal_that_wants_them(monkeypatch):
    from ono_env.apps.play import _colours

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr("sys.stdout", Terminal())
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert _colours(False) and not _colours(True)
    monkeypatch.setenv("NO_COLOR", "1")   # before: colours all the same
    assert not _colours(False)
    monkeypatch.setenv("NO_COLOR", "")    # set but empty: no say (no-color.org)
    assert _colours(False)
    monkeypatch.setenv("TERM", "dumb")
    assert not _colours(False)
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert not _colours(False)


def test_a_search_at_the_table_says_it_is_thinking_on_a_terminal():
    """A search may take seconds a decision: on a terminal its seat says it is thinking
    before it plays (before: the terminal was silent); in a log, nothing is added."""
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    for out, shown in ((Terminal(), True), (io.StringIO(), False)):
        moves = iter(["1"] * 3)
        with pytest.raises(Quit):
            play(["pimc:2", "greedy"], "basic", seed=3,
                 read=lambda prompt, moves=moves: next(moves, "quit"), out=out)
        text = out.getvalue()
        assert ("  P1 (pimc:2) is thinking..." in text) is shown
        assert "P2 (greedy) is thinking" not in text   # a rule-based seat plays at once


def test_a_game_left_shows_its_drawn_seed():
    """A game dealt from a drawn seed shows the seed when the player leaves, so that it can
    be dealt again (before: shown only at the end of a finished game)."""
    out = io.StringIO()
    with pytest.raises(Quit):
        play(["greedy"], "basic", read=lambda prompt: "quit", out=out)
    seed = re.search(r"^seed (\d+) \(--seed \1 deals this game again\)$", out.getvalue(), re.M)
    again = io.StringIO()
    with pytest.raises(Quit):
        play(["greedy"], "basic", seed=int(seed.group(1)), read=lambda prompt: "quit", out=again)
    assert out.getvalue().split("\n")[1:4] == again.getvalue().split("\n")[1:4]   # the deal
    chosen = io.StringIO()
    with pytest.raises(Quit):
        play(["greedy"], "basic", seed=5, read=lambda prompt: "quit", out=chosen)
    assert "deals this game again" not in chosen.getvalue()
    # and every other way out before the end (before: the seed was lost): Ctrl-C or a signal
    # at the prompt, an input line refused, Ctrl-C while an agent thinks
    from ono_env.apps.console import Stopped

    def raises(exc):
        def read(prompt):
            raise exc
        return read

    class Thinks:
        name = "thinks"

        def act(self, obs, mask, rng):
            raise KeyboardInterrupt
    for exc, read, agents in ((KeyboardInterrupt, raises(KeyboardInterrupt()), ["greedy"]),
                              (Stopped, raises(Stopped(15)), ["greedy"]),
                              (ValueError, raises(ValueError("an input line of more than")),
                               ["greedy"]),
                              (KeyboardInterrupt, lambda prompt: "1", [Thinks()])):
        left = io.StringIO()
        with pytest.raises(exc):
            play(agents, "basic", read=read, out=left, seat=1)
        assert re.search(r"^seed (\d+) \(--seed \1 deals this game again\)$", left.getvalue(),
                         re.M), exc


def test_a_failed_write_to_the_standard_output_is_named_as_one():
    """Before: ``play`` held the standard output of the import, so a full disk was Python's
    bare "[Errno 28] No space left on device"."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "ono_env.apps.play", "--seed", "1"],
                              input="quit\n", stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.startswith("ono-play: error: cannot write the standard output: "), proc.stderr


def test_the_replay_never_replaces_a_file_that_appeared_during_the_game(tmp_path):
    """The ``--replay`` file is checked free before the game and written new after it: a
    file that appeared meanwhile (another game given the same name) is kept and the replay
    goes to the next free name; before, it was replaced without a word. The result is
    printed before the replay is written, so a failed write no longer hides it."""
    from ono_env.replay import Replay

    path = tmp_path / "both.json"

    def read(prompt):
        if not path.exists():   # mid-game, another run writes the same name
            path.write_text("precious")
            (tmp_path / "both-2.json").write_text("also kept")
        return "1"

    out = io.StringIO()
    won = play(["random"], "basic", seed=3, read=read, out=out, replay_path=str(path))
    text = out.getvalue()
    assert path.read_text() == "precious" and (tmp_path / "both-2.json").read_text() == "also kept"
    saved = Replay.load(tmp_path / "both-3.json")
    assert saved.players == ["you", "random"]
    assert text.rstrip().endswith(f"replay written to {tmp_path / 'both-3.json'} ({path} "
                                  f"appeared during the game and is kept)")
    result = "you win!" if won == [0] else "P1 (random) wins"
    assert text.index(result) < text.index("replay written")
    folder = tmp_path / "dir.json"   # a folder made at the name (before: the result lost to
    # "is a folder", and no replay): the result, then the replay beside it

    def read_dir(prompt):
        folder.mkdir(exist_ok=True)
        return "1"

    out = io.StringIO()
    play(["random"], "basic", seed=3, read=read_dir, out=out, replay_path=str(folder))
    assert out.getvalue().rstrip().endswith(f"replay written to {tmp_path / 'dir-2.json'} "
                                            f"({folder} appeared during the game and is kept)")
    assert result in out.getvalue() and Replay.load(tmp_path / "dir-2.json").result is not None


def test_letters_that_upper_case_to_ascii_are_no_card_and_a_long_entry_is_cut():
    # before: r + U+017F (long s) was read as RS, and a bad line was repeated whole
    from ono_env.cards import action_id
    rs = action_id("play RS")
    for text in ("r\u017f", "play r\u017f", "\u0131", "R5\u3000", "play\u00a0R5"):
        with pytest.raises(ValueError, match="unknown entry"):
            parse_choice(text, [rs])
    for name in ("play r\u017f", "play\u00a0R5", "play\u3000r5"):
        with pytest.raises(ValueError, match="unknown action"):
            action_id(name)
    with pytest.raises(ValueError) as err:
        parse_choice("x" * 200_000, [rs])
    assert len(str(err.value)) < 300


def test_an_entry_that_is_not_utf8_is_named_so():
    """Bytes that are no UTF-8 (read with surrogateescape) are named as such; before, an
    "unknown entry" shown by its escapes alone. Other entries keep their words."""
    with pytest.raises(ValueError, match=r"^an entry that is not UTF-8 text '\\udcff\\udcfe': type "
                                         r"a number from the list"):
        parse_choice("\udcff\udcfe", [5, 66])
    with pytest.raises(ValueError, match=r"^unknown entry 'caf\u00e9': "):
        parse_choice("caf\u00e9", [5, 66])
    # and so at the prompt, where the locale decodes its input strictly (before: the
    # codec's error ended the game)
    import os
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-m", "ono_env.apps.play", "greedy", "--seed", "1"],
                         input=b"\xff\xfe\nquit\n", capture_output=True, timeout=120,
                         env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"})
    out = run.stdout.decode(errors="replace")
    assert "not accepted: an entry that is not UTF-8 text '\\udcff\\udcfe'" in out, out[-2000:]
    assert b"Traceback" not in run.stderr and b"codec" not in run.stderr, run.stderr[-2000:]


@pytest.mark.parametrize("text", ["\u00b2", "\u2460", "--1", "\u0661"])
def test_digits_of_other_scripts_are_an_unknown_entry_not_pythons_message(text):
    # before: str.isdigit() took them, then int() failed with "invalid literal for int()"
    with pytest.raises(ValueError, match=f"unknown entry '{text}'"):
        parse_choice(text, [5, 66])


@pytest.mark.parametrize("text, said", [("1234567", "1234567"), ("-99999999", "-99999999"),
                                        ("9" * 5_000, "9" * 17 + "...")])
def test_a_long_number_is_out_of_the_list_like_a_short_one(text, said):
    """Before: 7 digits or more were an "unknown entry", 6 or fewer out of the list."""
    with pytest.raises(ValueError, match=f"^{re.escape(said)} is not one of the listed "
                                         r"numbers \(1 to 2\)$"):
        parse_choice(text, [5, 66])
    assert parse_choice("0" * 30 + "2", [5, 66]) == 66   # leading zeros, as in "02"
    assert parse_choice("0" * 5_000 + "1", [5, 66]) == 5   # past Python's digit limit too


def test_quit_help_and_moves_read_spaces_alike():
    """Before: "\u3000quit" quit (str.strip takes U+3000) while "\u3000draw" was refused."""
    out = io.StringIO()
    answers = iter(["\u3000quit", "quit"])
    with pytest.raises(Quit):
        play(["random"], "basic", seed=0, read=lambda p: next(answers), out=out)
    assert "not accepted: unknown entry " + repr("\u3000quit") in out.getvalue()


def test_quit_and_end_of_input_abandon_the_game():
    with pytest.raises(Quit):
        play(["random"], "basic", seed=0, read=lambda p: "quit", out=io.StringIO())

    def eof(prompt):
        raise EOFError
    with pytest.raises(Quit):
        play(["random"], "basic", seed=0, read=eof, out=io.StringIO())


def test_a_game_quit_early_leaves_no_folder_made_for_its_replay(tmp_path, monkeypatch, capsys):
    from ono_env.apps.play import main
    keep = tmp_path / "kept"
    keep.mkdir()
    monkeypatch.setattr("sys.stdin", io.StringIO("quit\n"))
    assert main(["random", "--seed", "0", "--replay", str(tmp_path / "new" / "dir" / "r.json")]) == 1
    assert main(["random", "--seed", "0", "--replay", str(keep / "r.json")]) == 1
    assert "game abandoned" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"] and not any(keep.iterdir())


def test_piped_input_that_ends_ends_the_prompt_line_first(monkeypatch, capsys):
    """Before: "game abandoned (input ended)" followed the prompt on its line."""
    from ono_env.apps.play import main
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["random", "--seed", "0", "--no-color"]) == 1
    assert capsys.readouterr().out.endswith("): \ngame abandoned (input ended)\n")


def test_console_script_with_piped_stdin():
    # every action number in turn: each wrong one is re-prompted until a legal one comes
    script = "\n".join(str(a) for a in range(85)) + "\n"
    proc = subprocess.run([sys.executable, "-m", "ono_env.apps.play", "random", "--rules", "basic",
                           "--seed", "7", "--no-color"], input=script * 150, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "you win!" in proc.stdout or "P1 (random) wins" in proc.stdout
    assert "not accepted" in proc.stdout


@pytest.mark.parametrize("tail", ["", "\nquit\n"])
def test_an_input_line_past_its_bound_is_one_line(tail):
    """Before: input() read a piped line with no end (``< /dev/zero``) until memory ran
    out; a line of 1,000 characters is still an entry, refused as any wrong one."""
    entries = "1" * 1_000 + "\n" + "\0" * 200_000 + tail
    proc = subprocess.run([sys.executable, "-m", "ono_env.apps.play", "random", "--rules", "basic",
                           "--seed", "7", "--no-color"], input=entries, capture_output=True,
                          text=True, timeout=300)
    assert "not accepted: 11111111111111111... is not one of the listed numbers" in proc.stdout
    assert proc.returncode == 2 and "quit" not in proc.stdout, proc.stdout[-500:]
    assert proc.stdout.endswith("): \n")   # the prompt's line ended before the error line
    assert proc.stderr == ("ono-play: error: an input line of more than 1,000 characters "
                           "('\\x00\\x00\\x00\\x00...); allowed: at most 1,000 per entry\n")


@pytest.mark.parametrize("signum,word", [(2, "interrupted"), (15, "stopped by SIGTERM")])
def test_a_signal_at_the_prompt_ends_its_line_first(signum, word):
    # before: "your move (...): ono-play: interrupted" on one line
    import signal
    import time
    proc = subprocess.Popen([sys.executable, "-m", "ono_env.apps.play", "random", "--rules",
                             "basic", "--seed", "7", "--no-color"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    shown = ""
    deadline = time.monotonic() + 240
    while not shown.endswith("): ") and time.monotonic() < deadline:
        got = proc.stdout.read(1)
        if not got:   # it ended before its first prompt
            break
        shown += got
    proc.send_signal(signal.Signals(signum))
    out, err = proc.communicate(timeout=120)
    assert shown.endswith("): ") and out == "\n", (shown[-200:], out)
    assert err == f"ono-play: {word}\n"


def test_bad_agent_or_player_count_is_one_line():
    proc = subprocess.run([sys.executable, "-m", "ono_env.apps.play", "genius", "--rules", "basic"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("ono-play: error: unknown agent 'genius'")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_seat_past_the_table_names_the_tables_size():
    # before: "seat=5; allowed: an integer from 0 to 1", where --seat's help says 0 to 9
    with pytest.raises(ValueError, match=r"^seat=5: this table has 2 players; allowed: a seat "
                                         r"from 0 to 1$"):
        play(["greedy"], "basic", seed=1, seat=5, read=lambda prompt: "quit", out=io.StringIO())


@pytest.mark.parametrize("agent, start", [
    ("x" * 5_000, "unknown agent 'xxx"), ("pimc:" + "x" * 5_000, "agent 'pimc:xxx"),
    ("pimc:" + "9" * 5_000, "agent 'pimc:999"), ("x" * 50_000 + ".safetensors",
                                                  "cannot read model file 'xxx")])
def test_a_long_agent_name_is_shown_cut(agent, start):
    """Before: the unknown name, the search budget and the model path were echoed whole (a
    100,000-character name made a 100,000-character line)."""
    proc = subprocess.run([sys.executable, "-m", "ono_env.apps.play", agent, "--rules", "basic"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and proc.stderr.startswith(f"ono-play: error: {start}"), \
        proc.stderr[:300]
    assert len(proc.stderr) < 5_000 and "..." in proc.stderr


@pytest.mark.parametrize("stream", ["stdin", "stdout"])
def test_a_closed_standard_stream_is_one_line(stream):
    """Before: a closed stdout was an AttributeError's text, and a closed stdin a game dealt
    and played up to your first move, then input()'s RuntimeError."""
    code = (f"import sys; sys.{stream} = None; from ono_env.apps.play import main; "
            f"sys.exit(main(['greedy', '--seed', '1']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    name = {"stdin": "input", "stdout": "output"}[stream]
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"ono-play: error: standard {name} is closed"), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# ---- what each move changed at the table ---------------------------------------------------
def _give(d: dict, seat: int, card: str) -> None:
    """Move one ``card`` into ``seat``'s hand from the stock or another hand, giving one of the
    seat's other cards back in its place (the deck stays whole)."""
    if card in d["hands"][seat]:
        return
    for pile in [d["stock"], *[h for q, h in enumerate(d["hands"]) if q != seat]]:
        if card in pile:
            k = pile.index(card)
            back = next(c for c in d["hands"][seat] if c != card)
            d["hands"][seat].remove(back)
            pile[k] = back
            d["hands"][seat].append(card)
            return
    raise AssertionError(card)


def _events(d: dict, action: str) -> list[str]:
    from ono_env import VecGame
    from ono_env.render import table_events

    game = VecGame.from_dict(d)
    before = game.to_dict(0)
    a = action_id(action)
    assert game.legal_mask()[0, a], (action, before["phase"])
    game.step(np.array([a]))
    return table_events(before, game.to_dict(0), before["current_player"], a)


def _position(rules: str, players: int = 4, seed: int = 3) -> dict:
    from ono_env import VecGame

    return VecGame(rules, 1, seed=seed, num_players=players).to_dict(0)


def test_events_of_catches_swaps_and_false_accusations():
    d = _position("ono")   # P1 went down to one card without calling; P2 catches
    h = d["hands"][1]
    d["hands"][1], d["stock"] = h[:1], d["stock"] + h[1:]
    d.update(exposed=1, previous_player=1, current_player=2, turn_fresh=True)
    assert _events(d, "catch") == ["P2 catches P1 without an ONO! call: P1 and P2 swap hands "
                                   "(P1 now holds 7 cards, P2 1 card)"]
    d = _position("ono")   # P1 holds 7 cards: a false accusation
    d.update(previous_player=1, current_player=2, turn_fresh=True)
    assert _events(d, "catch") == ["false accusation: P2 draws 4 cards"]
    d = _position("classic")   # under classic a caught player draws 4
    h = d["hands"][1]
    d["hands"][1], d["stock"] = h[:1], d["stock"] + h[1:]
    d.update(exposed=1, previous_player=1, current_player=2, turn_fresh=True)
    assert _events(d, "catch") == ["P2 catches P1 without an ONO! call: P1 draws 4 cards"]


def test_events_of_skips_reversals_draws_and_challenges():
    from ono_env import VecGame

    d = _position("classic", seed=5)
    d.update(current_player=0, direction=1)
    col = d["color"]
    for card in (f"{col}S", f"{col}R"):
        _give(d, 0, card)
    assert _events(d, f"play {col}S") == ["P1 is skipped"]
    assert _events(d, f"play {col}R") == ["direction reversed: play goes counter-clockwise now"]
    assert _events(d, "draw") == ["P0 draws 1 card"]
    two = _position("basic", players=2, seed=5)   # at two players a Skip skips the other
    from ono_env import RuleSet

    two["rules"] = RuleSet.preset("basic", num_players=2,
                                  reverse_skips_with_two_players=False).to_dict()
    skip = f"{two['color']}S"
    _give(two, two["current_player"], skip)
    assert _events(two, f"play {skip}") == [f"P{1 - two['current_player']} is skipped"]
    # a Wild Draw Four played holding the current colour: a bluff, challenged or taken
    _give(d, 0, "W+4")
    game = VecGame.from_dict(d)
    other = next(c for c in "RYGB" if c != col)
    game.step(np.array([action_id(f"play W+4 {other}")]))
    bluff = game.to_dict(0)
    assert bluff["current_player"] == 1 and bluff["pending_draw"] == 4
    assert _events(bluff, "challenge") == [
        "P0 shows P1 their hand",
        "challenge succeeds (the Wild Draw Four was a bluff): P0 draws 4 cards"]
    assert _events(bluff, "accept") == ["P1 takes the penalty: draws 4 cards and loses the turn"]
    # the same Wild Draw Four without a card of the colour: legal, and the challenger pays 6
    legal = dict(d, hands=[list(h) for h in d["hands"]], stock=list(d["stock"]))
    for c in [c for c in legal["hands"][0] if c.startswith(col)]:
        swap = next(x for x in legal["stock"] if x[0] in "RYGB" and x[0] != col)
        legal["hands"][0][legal["hands"][0].index(c)] = swap
        legal["stock"][legal["stock"].index(swap)] = c
    game = VecGame.from_dict(legal)
    game.step(np.array([action_id(f"play W+4 {other}")]))
    assert _events(game.to_dict(0), "challenge") == [
        "P0 shows P1 their hand",
        "challenge fails (the Wild Draw Four was legal): P1 draws 6 cards and loses the turn"]
    # as each seat reads it: the challenger alone sees the cards (before: the other seats
    # were not told a hand was shown, and a failed challenge not that the turn was lost)
    from ono_env.render import personal, seat_events
    challenged = game.to_dict(0)
    game.step(np.array([action_id("challenge")]))
    for seat, lines in ((1, ["P0 shows you their hand: " + " ".join(challenged["hands"][0]),
                             "challenge fails (the Wild Draw Four was legal): you draw 6 cards "
                             "and lose the turn"]),
                        (0, ["you show P1 your hand",
                             "challenge fails (the Wild Draw Four was legal): P1 draws 6 cards "
                             "and loses the turn"])):
        assert [personal(e, seat) for e in seat_events(challenged, game.to_dict(0), 1,
                                                        action_id("challenge"), seat)] == lines


def test_events_of_shuffled_and_customised_hands():
    d = _position("uno2018", seed=2)
    _give(d, d["current_player"], "WS")
    events = _events(d, "play WS")
    assert events == ["Wild Shuffle Hands: every hand is gathered, shuffled and dealt out again"]
    from ono_env import RuleSet

    d = _position("uno2018", seed=2)
    d["rules"] = RuleSet.preset("uno2018", num_players=4,
                                wild_customizable="swap_hands").to_dict()
    p = d["current_player"]
    _give(d, p, "WC")
    from ono_env import VecGame

    game = VecGame.from_dict(d)
    game.step(np.array([action_id("play WC")]))
    mid = game.to_dict(0)
    q = (p + 2) % 4
    events = _events(mid, "target 2")
    assert events[0].startswith(f"Wild Customizable: P{min(p, q)} and P{max(p, q)} swap hands")


# ---- a scripted terminal session --------------------------------------------------------
def _session(rules: str, seed: int) -> str:
    """``ono-play`` against greedy, color and defensive, driven through a terminal: ``help``
    and ``rules`` first, then a bare card name when a single-card play is listed (``y3``), a
    Wild Customizable when offered, one false accusation, a catch whenever a hand is down
    to one card, and never an ONO! call; else option 1 by its number."""
    import pexpect

    child = pexpect.spawn(sys.executable, ["-m", "ono_env.apps.play", "greedy", "color",
                                           "defensive", "--rules", rules, "--seed", str(seed),
                                           "--no-color"], encoding="utf-8", timeout=120)
    log: list[str] = []
    first, falsed = True, False
    while child.expect([r"your move \(number, action or card; help\): ", pexpect.EOF]) == 0:
        log.append(child.before)
        if first:
            for word in ("help", "rules"):
                child.sendline(word)
                child.expect(r"help\): ")
                log.append(child.before)
            first = False
        block = "".join(log).rsplit("your options:", 1)[1]
        names = [m[1] for m in re.findall(r"^\s+(\d+)\s+(.+?)(?:\s{3}\(.*\))?\r?$", block, re.M)]
        table = "".join(log).rsplit("top ", 1)[1]
        exposed = re.search(r"^  P\d+ \[1 card\]", table, re.M)
        plays = [n for n in names if n.startswith("play ") and len(n.split()) == 2]
        if "catch" in names and (exposed or not falsed):
            falsed = falsed or not exposed
            child.sendline("catch")
        elif plays:
            child.sendline(plays[0].split()[1].lower())
        else:
            child.sendline(str(next(k for k, n in enumerate(names, 1) if n != "call")))
    log.append(child.before)
    child.close()
    assert child.exitstatus == 0, "".join(log)[-2000:]
    return "".join(log)


def test_a_terminal_session_under_ono_announces_skips_false_catches_and_swaps():
    text = _session("ono", 5)
    assert "commands:" in text and "card codes:" in text and "W+4" in text   # help
    assert "Rules: ono" in text and "costs the accuser 4 cards" in text      # rules
    assert re.search(r"^\s+1\s+play \w", text, re.M)                          # numbered 1..n
    assert re.search(r"catch   \(accuse P(\d) of not calling ONO!: caught, you swap hands "
                     r"with P\1; if P\1 holds more than one card you draw 4\)", text)
    who = r"(P\d|you)"
    assert re.search(rf"^  {who} (is|are) skipped", text, re.M)
    assert re.search(r"^  false accusation: you draw 4 cards", text, re.M)       # your own: "you"
    assert re.search(rf"^  {who} catches? {who} without an ONO! call: {who} and {who} swap hands",
                     text, re.M)
    assert "[1 cards]" not in text and "not accepted" not in text
    assert re.search(r"you win!|P\d \(\w+\) wins", text)


def test_a_terminal_session_under_uno2018_announces_swaps(tmp_path):
    rules = tmp_path / "uno2018-swap.yaml"
    rules.write_text("preset: uno2018\nwild_customizable: swap_hands\n")
    text = _session(str(rules), 0)
    assert "Wild Customizable: swap hands with a player you choose" in text   # rules
    who = r"(P\d|you)"
    assert re.search(rf"^  {who} (is|are) skipped", text, re.M)
    assert re.search(rf"^  Wild Customizable: {who} and {who} swap hands", text, re.M)
    assert re.search(r"target 1   \(swap hands with P\d \(\d+ cards?\)\)", text)


def test_a_drawn_seed_is_shown_only_at_the_end_and_deals_the_game_again():
    # the seed deals every hand and the stock: printed before the end, it would show them
    out = io.StringIO()
    winner = play(["greedy"], "basic", read=scripted_reader(out), out=out)
    text = out.getvalue()
    first = text.split("your options:", 1)[0]
    assert "a fresh seed (shown at the end)" in first and "seed " not in first.replace("fresh seed", "")
    seed = int(re.search(r"^seed (\d+) \(--seed \1 deals this game again\)$", text, re.M).group(1))
    again = io.StringIO()
    assert play(["greedy"], "basic", seed=seed, read=scripted_reader(again), out=again) == winner
    assert again.getvalue().split("\n", 1)[1].split("your options:", 1)[0] == \
        text.split("\n", 1)[1].split("your options:", 1)[0]       # the same deal
    assert f"seed {seed}." in again.getvalue().split("\n", 1)[0]  # a seed given is shown


def test_fresh_seeds_span_their_bits():
    from ono_env.game import FRESH_SEED_BITS, fresh_seed

    seeds = [fresh_seed() for _ in range(64)]
    assert all(0 <= s < 2**FRESH_SEED_BITS for s in seeds)
    # 64 draws all under 2**40 (a seed space a player could search) has chance 2**-832
    assert max(seeds) >= 2**40 and len(set(seeds)) == 64


def test_a_penalty_scored_match_is_won_by_the_lowest_total_not_the_last_rounds_winner():
    # before: the terminal, the table's last line and the web table named the last round's
    # winner, where the engine's rewards give the match to the lowest total; and then the
    # terminal said "P1 (random) wins", with no word of the total that won it
    from ono_env.game import VecGame
    from ono_env.positions import game_winners
    from ono_env.render import render_text

    rules = {"preset": "stacking", "target_score": 250}
    rng = np.random.default_rng(0)
    differ = 0
    for seed in range(40):
        g = VecGame(rules, 1, seed=seed)
        while not g.finished[0]:
            r = g.step(np.array([rng.choice(np.flatnonzero(g.legal_mask()[0]))]))
        d = g.to_dict(0)
        won = game_winners(d)
        assert won == [q for q in range(4) if r.rewards[0, q] > 0]   # the engine's verdict
        differ += won != [d["winner"]]
        last = render_text(g).splitlines()[-1]
        assert last == (f"game over: winner P{won[0]} (the lowest total)" if len(won) == 1 else
                        "game over: winners " + " ".join(f"P{q}" for q in won)
                        + " (tied on the lowest total)")
    assert differ > 0
    out = io.StringIO()
    won = play(["random"] * 3, rules, seed=7, read=lambda prompt: "1", out=out)
    text = out.getvalue()
    final = [int(v) for v in re.findall(r"scores((?: (?:P\d|you) \d+)+)", text)[-1].split()[1::2]]
    assert won == [q for q, v in enumerate(final) if v == min(final)]
    assert len(won) == 1 and won != [int(re.findall(r"--- round \d+ won by P(\d)", text)[-1])]
    assert text.rstrip().endswith("you win on the lowest total!" if won == [0] else
                                  f"P{won[0]} (random) wins on the lowest total")
    g = VecGame("stacking", 1, seed=3, num_players=2)   # a round, no match: as before
    while not g.finished[0]:
        g.step(np.array([int(np.flatnonzero(g.legal_mask()[0])[0])]))
    assert re.search(r"^game over: winner P\d$", render_text(g), re.M)


def _random_steps(rules, seeds, num_players=None):
    """(before, after, player, action) of random games, positions as to_dict gives them."""
    from ono_env.game import VecGame
    for seed in seeds:
        g = VecGame(rules, 1, seed=seed, **({} if num_players is None else {"num_players": num_players}))
        rng = np.random.default_rng(seed)
        before = g.to_dict(0)
        while not g.finished[0]:
            p = int(g.current_player[0])
            a = int(rng.choice(np.flatnonzero(g.legal_mask()[0])))
            g.step(np.array([a]))
            after = g.to_dict(0)
            yield before, after, p, a
            before = after


def test_a_last_draw_card_a_challengers_view_and_round_ends_are_said():
    # before: the next player's draw after a round won on a Draw Two or Wild Draw Four was
    # not said; the rules text said the challenger sees the accused hand, and nothing showed it
    from ono_env.cards import action_name
    from ono_env.game import VecGame
    from ono_env.render import challenge_reveal, round_end_text, table_events

    last_draws = challenges = ends = against = 0
    steps = itertools.chain(_random_steps({"preset": "classic", "target_score": 200}, range(40), 4),
                            _random_steps("basic", range(40), 4))
    for before, after, p, a in steps:
        name = action_name(a)
        events = table_events(before, after, p, a)
        ended = round_end_text(before, after)
        assert (ended is None) == (after["round"] == before["round"])
        if ended:
            ends += 1
            gained = [a - b for a, b in zip(after["scores"], before["scores"])]
            assert ended == (f"round {after['round']} won by P{after['winner']}" + (
                "" if after["rules"]["scoring"] == "none" else
                " (" + ", ".join(f"P{q} +{v}" for q, v in enumerate(gained) if v)
                + "); scores " + " ".join(f"P{q} {v}" for q, v in enumerate(after["scores"]))))
            if name.startswith("play W+4") or "+2" in name:
                # a match deals the next round at once (its direction set anew): the same
                # round, played as a match that ends there, shows the last hands
                last = after
                if not after["terminated"] and after["round"] == 1:
                    last = VecGame.from_dict(dict(before, rules=dict(before["rules"], target_score=1)))
                    last.step(np.array([a]))
                    last = last.to_dict(0)
                if last["terminated"]:
                    grew = [(q, len(last["hands"][q]) - len(before["hands"][q])) for q in range(4)
                            if len(last["hands"][q]) > len(before["hands"][q])]
                    assert events == [f"P{q} draws {k} cards (the last card's draw)" for q, k in grew]
                    assert len(grew) == 1 and grew[0][1] == before["pending_draw"] + (
                        4 if "W+4" in name else 2)
                    last_draws += 1
                    against += before["direction"] == -1
        shown = challenge_reveal(before, p, a)
        if name == "challenge":
            accused = before["previous_player"]
            assert shown == f"P{accused} shows P{p} their hand: " + " ".join(before["hands"][accused])
            challenges += 1
        else:
            assert shown is None
    assert last_draws and against and challenges and ends   # counter-clockwise too
    # a match that goes on, its round won on a Draw Two while play went counter-clockwise:
    # the next deal's direction is another (the drawer is the winner's right-hand seat)
    before, after, p, a = next(step for step in _random_steps("classic", [18], 3)
                               if step[1]["round"] == 1)
    assert before["direction"] == -1 != after["direction"] and not after["terminated"]
    last = VecGame.from_dict(dict(before, rules=dict(before["rules"], target_score=1)))
    last.step(np.array([a]))
    grew = [q for q in range(3) if len(last.to_dict(0)["hands"][q]) > len(before["hands"][q])]
    assert grew == [(p - 1) % 3]
    assert table_events(before, after, p, a) == [
        f"P{grew[0]} draws {before['pending_draw'] + (4 if 'W+4' in action_name(a) else 2)} cards "
        f"(the last card's draw)"]


@pytest.mark.parametrize("rules, players, seed, called", [
    ("ono", 3, 2, True),   # the accused called, holding one card
    ({"preset": "ono", "ono_penalty": "draw", "ono_penalty_cards": 3, "false_catch_penalty": 2,
      "scoring": "winner", "target_score": 100, "hand_size": 4}, 6, 16, False)])   # window gone
def test_a_catch_that_can_have_no_effect_is_hinted_and_told_so(rules, players, seed, called):
    """Before: the hint offered only "caught, ..." or "you draw 4" where the accused held one
    card it had called, or had not gone down to on its last turn: a catch then does nothing,
    and the event line gave a reason only for the first."""
    from ono_env.cards import action_id
    from ono_env.game import VecGame
    from ono_env.positions import catch_succeeds
    from ono_env.render import option_hint, table_events

    catch = action_id("catch")
    g = VecGame(rules, 1, seed=seed, num_players=players)
    rng = np.random.default_rng(seed)
    for _ in range(20_000):   # random play, no calls, until such a catch is open
        d = g.to_dict(0)
        legal = [int(a) for a in np.flatnonzero(g.legal_mask()[0])]
        prev = d["previous_player"]
        if (catch in legal and prev is not None and len(d["hands"][prev]) == 1
                and not catch_succeeds(d, prev) and d["called"][prev] is called):
            break
        moves = [a for a in legal if a != action_id("call") or called] or legal
        g.step(np.array([rng.choice(moves)]))
        if g.finished[0]:
            g.reset()
    else:
        pytest.fail("no such position in 20,000 decisions")
    why = ("called ONO! in time" if called else
           "is not open to a catch (only a seat that plays down to one card without calling is)")
    assert option_hint(catch, d, legal) == (f"accuse P{prev} of not calling ONO!: no effect, as "
                                            f"P{prev} {why}")
    player = d["current_player"]
    g.step(np.array([catch]))
    after = g.to_dict(0)
    assert [len(h) for h in after["hands"]] == [len(h) for h in d["hands"]]   # none drew
    assert table_events(d, after, player, catch) == [f"P{player}'s catch has no effect: P{prev} {why}"]


def test_the_draw_options_hint_says_what_draw_until_playable_does_with_a_playable_card():
    # before: "draw until you can play" with a playable card in hand, where the engine draws one
    from ono_env.cards import action_id, action_name
    from ono_env.game import VecGame
    from ono_env.render import option_hint
    from ono_env.rule_help import describe_rules
    from ono_env.rules import RuleSet

    rules = {"preset": "ono", "draw_until_playable": True}
    seen = set()
    g = VecGame(rules, 1, seed=4)
    rng = np.random.default_rng(4)
    while len(seen) < 2 and not g.finished[0]:
        legal = [int(a) for a in np.flatnonzero(g.legal_mask()[0])]
        if action_id("draw") in legal:
            plays = any(action_name(a).startswith("play") for a in legal)
            hint = option_hint(action_id("draw"), g.to_dict(0), legal)
            assert hint == ("draw a card" if plays else "draw until you can play")
            seen.add(plays)
        g.step(np.array([rng.choice(legal)]))
    assert seen == {True, False}
    text = " ".join(describe_rules(RuleSet.preset("ono", draw_until_playable=True)))
    assert ("Holding no playable card you draw until you get one; holding one, you draw one "
            "card.") in text
    # a kind of card the deck lacks is not named (before: "0 Wild", and Wild Draw Four's
    # draw, stacking and first-card rules in a deck without one)
    for preset in ("basic", "stacking", "classic"):
        rules = RuleSet.preset(preset, wild_cards=0, wild_draw_four_cards=0, must_play_drawn=True)
        lines = describe_rules(rules)
        text = " ".join(lines)
        assert "Wild Draw Four" not in text and "0 Wild" not in text and "a Wild " not in text
        assert "no Wild cards." in text and "or a Wild" not in text
        assert ("Draw Twos stack" in text) == rules.stacking
    text = " ".join(describe_rules(RuleSet.preset("stacking")))
    assert "A catch is offered only when it succeeds." in text and "Wild Draw Four stack" in text
    # a bluff kept only where one can be made (before: also without a restriction), and one
    # card counted as one (before: "1 cards each", "costs the accuser 1 cards")
    bluff = "(a Wild Draw Four that would be a bluff may be kept)"
    assert bluff in " ".join(describe_rules(RuleSet.preset("classic", must_play_drawn=True)))
    assert bluff not in " ".join(describe_rules(RuleSet.preset("stacking", must_play_drawn=True)))
    text = " ".join(describe_rules(RuleSet.preset("basic", hand_size=1, ono_penalty="draw",
                                                  ono_penalty_cards=1, false_catch_penalty=1)))
    assert "4 players, 1 card each." in text and "costs the accuser 1 card." in text


def test_the_rules_text_says_what_a_match_a_last_draw_card_and_a_won_challenge_do():
    """Before: the text named only the first dealer, never said that a round's last Draw Two
    still makes the next player draw before the points are counted, nor what a challenger who
    wins plays next; and "the caught player draws 1" named no card. Each is checked against
    the engine where it can be."""
    from itertools import pairwise

    from ono_env.game import VecGame
    from ono_env.rule_help import describe_rules
    from ono_env.rules import RuleSet

    moves = "The dealer moves one seat to the left each round."
    last = "A round's last card, if a Draw Two or Wild Draw Four, still makes the next player draw"
    for rules, match, scored in ((RuleSet.preset("basic"), False, False),
                                 (RuleSet.preset("wikipedia", target_score=300), True, True),
                                 (RuleSet.preset("basic", scoring="penalty", target_score=50), True, True),
                                 (RuleSet.preset("basic", scoring="winner"), False, True)):
        text = " ".join(describe_rules(rules))
        assert (moves in text) == match and (last in text) == scored, text
    won = "draws the 4 instead and the challenger plays on as usual"
    assert won in " ".join(describe_rules(RuleSet.preset("classic")))
    assert "the caught player draws 1 card." in " ".join(describe_rules(RuleSet.preset(
        "basic", ono_penalty="draw", ono_penalty_cards=1)))
    # the engine: each new round's dealer sits one seat to the left (the next seat clockwise)
    g = VecGame(RuleSet.preset("wikipedia", target_score=300, num_players=4), 1, seed=5)
    rng = np.random.default_rng(5)
    dealers = [g.to_dict(0)["dealer"]]
    while not g.finished[0]:
        g.step(np.array([rng.choice(np.flatnonzero(g.legal_mask()[0]))]))
        d = g.to_dict(0)
        if not d["terminated"] and len(dealers) == d["round"]:
            dealers.append(d["dealer"])
    assert len(dealers) >= 3 and all((b - a) % 4 == 1 for a, b in pairwise(dealers)), dealers


def test_a_wild_draw_four_bluff_is_said_as_the_engine_judges_it():
    """Before: under classic a Wild Draw Four played against the rule was listed with no word."""
    from ono_env.cards import action_name
    from ono_env.game import VecGame
    from ono_env.render import option_hint

    g = VecGame("classic", 1, seed=2, num_players=3)
    rng = np.random.default_rng(2)
    seen = set()
    while len(seen) < 2 and not g.finished[0]:
        legal = [int(a) for a in np.flatnonzero(g.legal_mask()[0])]
        d = g.to_dict(0)
        fours = [a for a in legal if action_name(a).startswith("play W+4")]
        if fours:
            hint = option_hint(fours[0], d, legal)
            probe = VecGame.from_dict(d)
            probe.step(np.array([fours[0]]))
            bluff = probe.to_dict(0)["wild_draw_four_bluff"]
            assert hint.startswith("a bluff: you hold a ") == bluff and (bluff or hint == "")
            assert not bluff or hint.endswith("card; if challenged you draw the 4 instead")
            seen.add(bluff)
        g.step(np.array([rng.choice(legal)]))
    assert seen == {True, False}
    # where no challenge is allowed there is no bluff to name
    d["rules"] = {**d["rules"], "challenge": False}
    assert option_hint(fours[0], d, legal) == ""


def test_a_human_challenger_is_shown_the_accused_hand():
    out = io.StringIO()

    def read(prompt):
        block = out.getvalue().rsplit("your options:", 1)[1]
        options = re.findall(r"^\s+(\d+)\s+(\S.*)$", block, re.M)
        return next((k for k, o in options if o.startswith("challenge")), options[0][0])

    play(["greedy"] * 3, "classic", seed=1, single_round=True, read=read, out=out)
    text = out.getvalue()
    assert "P0: challenge (you)" in text
    after = text.split("P0: challenge (you)", 1)[1].splitlines()
    assert any(re.fullmatch(r"  P\d shows you their hand: ([RYGBW]\S* ?)+", line) for line in after[1:4])


def test_an_empty_stock_and_a_reshuffle_are_said():
    # before: a false accusation or a draw with every card in a hand was "no effect" or
    # nothing at all, and a reshuffle of the discard pile was never mentioned
    from ono_env.cards import action_name
    from ono_env.game import VecGame
    from ono_env.render import table_events

    rng = np.random.default_rng(0)
    said: set[str] = set()
    reshuffled = 0
    g = VecGame("ono", 1, seed=0, num_players=2)
    before = g.to_dict(0)
    while not g.finished[0]:   # hoard cards: draw and keep, catch once nothing is left
        legal = [int(a) for a in np.flatnonzero(g.legal_mask()[0])]
        empty = not before["stock"] and len(before["discard"]) == 1
        catch = [a for a in legal if action_name(a) == "catch"]
        if g.state.decisions[0] + 1 >= g.max_decisions:
            break   # the cut: the game's end is said by its result
        keep = [a for a in legal if action_name(a) in ("draw", "keep")]
        a = catch[0] if catch and empty else keep[0] if keep else int(rng.choice(legal))
        p = int(g.current_player[0])
        g.step(np.array([a]))
        after = g.to_dict(0)
        events = table_events(before, after, p, a)
        shuffled = "the discard pile, but for its top card, is shuffled into a new stock"
        assert (shuffled in events) == (
            len(after["discard"]) < len(before["discard"]) + action_name(a).startswith("play"))
        reshuffled += shuffled in events
        if empty and action_name(a) == "draw":
            assert f"P{p} draws nothing (no cards left to draw)" in events
            said.add("draw")
        if empty and action_name(a) == "catch" and len(before["hands"][1 - p]) > 1:
            assert events == [f"false accusation: P{p} draws nothing (no cards left to draw)"]
            said.add("catch")
        before = after
    for before, after, p, a in _random_steps({"preset": "ono", "draw_until_playable": True},
                                             range(4), 4):
        events = table_events(before, after, p, a)
        shuffled = "the discard pile, but for its top card, is shuffled into a new stock"
        if after["round"] == before["round"] and not after["truncated"]:
            assert (shuffled in events) == (
                len(after["discard"]) < len(before["discard"]) + action_name(a).startswith("play"))
        reshuffled += shuffled in events
    assert said == {"draw", "catch"} and reshuffled


def test_a_deals_first_card_is_said_with_what_it_did():
    # before: a first Skip, Reverse, Draw Two or Wild changed the turn with no line
    from ono_env.game import VecGame
    from ono_env.render import deal_events

    kinds = set()
    for preset in ("basic", "stacking", "wikipedia"):
        for n in (2, 4):
            for seed in range(60):
                d = VecGame(preset, 1, seed=seed, num_players=n).to_dict(0)
                top, dealer, cur = d["discard"][-1], d["dealer"], d["current_player"]
                events = deal_events(d)
                assert events[0] == f"P{dealer} deals; the first card is {top}"
                if top in ("W", "W+4"):
                    expect = [f"P{cur} names the colour of the first Wild"]
                elif top.endswith("S"):
                    expect = [f"P{(dealer + 1) % n} is skipped"]
                elif top.endswith("R"):
                    expect = ["direction reversed: play goes counter-clockwise"] + (
                        [f"P{1 - dealer} is skipped"] if n == 2 else [])
                elif top.endswith("+2"):
                    expect = [f"P{(dealer + 1) % n} must draw 2"
                              + (" (or stack)" if preset == "stacking" else "")]
                else:
                    expect = []
                assert events[1:] == expect, (preset, n, seed)
                kinds.add(top[-1] if top[-1] in "SR2" else top if top[0] == "W" else "number")
    assert kinds >= {"S", "R", "2", "W", "number"}
    out = io.StringIO()
    play(["greedy"], "basic", seed=next(s for s in range(100) if VecGame(
        "basic", 1, seed=s, num_players=2).to_dict(0)["discard"][-1].endswith("S")),
        read=lambda prompt: "1", out=out)
    head = out.getvalue().split("your options:", 1)[0]
    assert re.search(r"^  (P1 deals|you deal); the first card is [RYGB]S$", head, re.M)
    assert re.search(r"^  (P1 is|you are) skipped$", head, re.M)


def _step_at(rules, n, seed, decision, **options):
    """(before, after, player, action) of the step taken at ``decision`` of a game of random
    legal actions (ono_env.game.random_legal, its generator seeded with ``seed``)."""
    from ono_env.game import VecGame, random_legal
    g = VecGame(rules, 1, seed=seed, num_players=n, **options)
    rng = np.random.default_rng(seed)
    after = g.to_dict(0)
    while not g.finished[0]:
        p, a = int(g.current_player[0]), int(random_legal(g.legal_mask(), rng)[0])
        before = after
        g.step(np.array([a]))
        after = g.to_dict(0)
        if before["decisions"] == decision:
            return before, after, p, a
    raise AssertionError("the game ended before that decision")


def test_a_challenge_an_accepted_draw_and_a_catch_with_nothing_left_to_draw_are_said():
    # before: each said nothing at all, or "no effect" for a catch that succeeded
    from ono_env.cards import action_id
    from ono_env.game import VecGame
    from ono_env.render import table_events

    before, after, p, a = _step_at("classic", 10, 0, 1321, target_score=150)
    assert not before["stock"] and [len(h) for h in before["hands"]] == [len(h) for h in after["hands"]]
    assert table_events(before, after, p, a) == [
        f"P{before['previous_player']} shows P{p} their hand",
        f"challenge fails (the Wild Draw Four was legal): P{p} draws nothing (no cards left to "
        f"draw) and loses the turn"]
    before, after, p, a = _step_at("ono", 2, 0, 235, hand_size=12)
    assert table_events(before, after, p, a) == [
        f"P{p} takes the penalty: draws nothing (no cards left to draw) and loses the turn"]
    g = VecGame("classic", 1, seed=1, num_players=3)   # P0 down to one card, not called
    d = g.to_dict(0)
    d["hands"][2] = d["hands"][2] + d["stock"] + d["hands"][0][1:]
    d["hands"][0], d["stock"] = d["hands"][0][:1], []
    d.update(current_player=1, previous_player=0, exposed=0, turn_fresh=True, decisions=5)
    g.set_position(0, d)
    before = g.to_dict(0)
    g.step(np.array([action_id("catch")]))
    assert table_events(before, g.to_dict(0), 1, action_id("catch")) == [
        "P1 catches P0 without an ONO! call: P0 draws nothing (no cards left to draw)"]


def test_a_cheating_opponent_is_named_so_at_the_terminal():
    out = io.StringIO()
    play(["oracle:2"], "basic", seed=1, read=lambda prompt: "1", out=out)
    assert "P1 oracle:2 (cheating)" in out.getvalue()


def test_a_cut_step_and_the_cards_passed_over_at_a_deal_are_said():
    """A step that reaches the decision limit mid-round says what it did (before: nothing);
    uno2018's cards turned and passed over before the first number card are named (every
    seat saw them)."""
    from ono_env import action_id
    from ono_env.game import VecGame
    from ono_env.render import deal_events, table_events

    seed = next(s for s in range(100) if VecGame("classic", 1, seed=s, num_players=3)
                .legal_action_names(0)[-1] == "draw")
    d = VecGame("classic", 1, seed=seed, num_players=3).to_dict(0)
    cut = VecGame.from_dict(d, max_decisions=d["decisions"] + 1)
    p = int(cut.current_player[0])
    cut.step(np.array([action_id("draw")]))
    after = cut.to_dict(0)
    assert after["truncated"] and not after["terminated"]
    assert table_events(d, after, p, action_id("draw"))[:1] == [f"P{p} draws 1 card"]
    seen = 0
    for seed in range(40):
        d = VecGame("uno2018", 1, seed=seed, num_players=4).to_dict(0)
        under = d["discard"][:-1]
        first = deal_events(d)[0]
        assert first.endswith(f"(turned before it and passed over: {' '.join(under)})") == bool(under)
        seen += bool(under)
    assert seen > 0


def test_ono_play_says_you_for_your_own_round(tmp_path):
    out = io.StringIO()
    play(["greedy"], {"preset": "classic", "num_players": 2, "target_score": 30}, seed=2,
         read=lambda prompt: "1", out=out)
    ends = re.findall(r"^--- round \d+ won by .*$", out.getvalue(), re.M)
    assert ends and all("P0" not in line for line in ends), ends
    assert any("won by you" in line or "scores you " in line for line in ends)


def _shown_cards(line: str) -> tuple[list[str], int]:
    """The cards and points of a round_hands line ("P1 shows R3 G5 and the 2 cards drawn
    for the last Draw Two, B1 Y7: 16 points")."""
    cards, points = line.split(" shows ", 1)[1].rsplit(": ", 1)
    words = cards.replace(" and the ", " ").replace(",", "").split(" ")
    return [w for w in words if w in CARD_IDS], int(points.split(" ")[0])


def _counted(before, after, a):
    """The hands that a round was counted from: ``after``'s where the step ended the game,
    else the same step replayed as a match that ends there (round 1 only; None otherwise)."""
    from ono_env.game import VecGame
    if after["terminated"]:
        return after["hands"]
    if before["round"] == 0:
        last = VecGame.from_dict(dict(before, rules=dict(before["rules"], target_score=1)))
        last.step(np.array([a]))
        return last.to_dict(0)["hands"]
    return None


def test_a_match_rounds_hands_are_shown_with_their_points():
    # before: a round of a match that went on said only the points it scored, and the next
    # deal followed; nobody saw the hands that were counted
    from collections import Counter

    from ono_env.render import round_end_events, round_hands

    checked = compared = drawn = 0
    for scoring in ("winner", "penalty"):
        rules = {"preset": "classic", "scoring": scoring, "target_score": 150}
        for before, after, _p, a in _random_steps(rules, range(8), 3):
            lines = round_hands(before, after)
            if after["round"] == before["round"]:
                assert lines == []
                continue
            w = after["winner"]
            gain = [x - y for x, y in zip(after["scores"], before["scores"])]
            assert [line.split(" ")[0] for line in lines] == [f"P{q}" for q in range(3) if q != w]
            seen = {int(line[1]): _shown_cards(line) for line in lines}
            if scoring == "penalty":
                assert all(gain[q] == pts for q, (_, pts) in seen.items())
            else:
                assert gain[w] == sum(pts for _, pts in seen.values())
            hands = _counted(before, after, a)
            if hands is not None:
                for q, (cards, pts) in seen.items():
                    assert Counter(cards) == Counter(hands[q])
                    assert pts == sum(int(CARD_POINTS[CARD_IDS[c]]) for c in hands[q])
                compared += 1
            drawn += any("drawn for the last" in line for line in lines)
            ended = round_end_events(before, after)
            assert (ended[1:1 + len(lines)] == lines) != bool(after["terminated"])
            checked += 1
    assert checked >= 10 and compared >= 4 and drawn


def test_a_round_won_on_a_draw_card_after_a_reshuffle_counts_the_drawn_cards_by_points():
    from collections import Counter

    from ono_env.cards import action_id
    from ono_env.game import VecGame
    from ono_env.render import round_end_events
    from ono_env.rules import RuleSet

    rules = RuleSet.preset("classic", num_players=2)
    hands = [["R+2"], ["G3", "Y4"]]
    deck = Counter({CARD_NAMES[c]: int(n) for c, n in enumerate(rules.deck_counts) if n})
    rest = sorted((deck - Counter(hands[0] + hands[1] + ["B1", "R5"])).elements(),
                  key=lambda n: CARD_IDS[n])
    d = make_position(rules, hands, rest + ["R5"], stock_top=["B1"], stock_rest=False)
    g = VecGame.from_dict(d)
    before = g.to_dict(0)
    g.step(np.array([action_id("play R+2")]))
    after = g.to_dict(0)
    gain = after["scores"][0]
    assert after["round"] == 1 and not after["terminated"] and gain >= 3 + 4 + 1
    assert round_end_events(before, after)[1] == (
        f"P1 shows {' '.join(before['hands'][1])} and the cards drawn for the last Draw Two (after a reshuffle): "
        f"{gain} points")
    counted = _counted(before, after, action_id("play R+2"))
    assert gain == sum(int(CARD_POINTS[CARD_IDS[c]]) for c in counted[1])


@pytest.mark.parametrize("stop", [EOFError, KeyboardInterrupt])
def test_the_end_of_input_at_a_terminal_ends_the_prompts_line(monkeypatch, capsys, stop):
    # before: Ctrl-D at a terminal left "game abandoned (input ended)" on the prompt's line
    # (Ctrl-C and piped input ended it first)
    import builtins

    from ono_env.apps import play as play_app

    def ends(prompt):
        print(prompt, end="")
        raise stop

    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(play_app, "_line_editing", lambda: None)
    monkeypatch.setattr(builtins, "input", ends)
    with pytest.raises(stop):
        play_app.read_line("your move: ")
    assert capsys.readouterr().out == "your move: \n"


def test_a_refused_action_other_than_a_play_says_why():
    # before: "'draw' is not legal now", and the same for keep, call, catch, challenge and
    # accept, with no reason (a card play had one)
    from ono_env.game import VecGame
    from ono_env.rules import RuleSet

    def refusal(rules, hands, discard, entry, **fields):
        d = make_position(rules, hands, discard, **fields)
        g = VecGame.from_dict(d)
        legal = [int(a) for a in np.flatnonzero(g.legal_mask()[0])]
        with pytest.raises(ValueError) as e:
            parse_choice(entry, legal, g.to_dict(0))
        return str(e.value)

    basic = RuleSet.preset("basic", num_players=2)
    classic = RuleSet.preset("classic", num_players=2)
    ono = RuleSet.preset("ono", num_players=3)
    swap = RuleSet.preset("uno2018", num_players=3, wild_customizable="swap_hands")
    hands = [["R1", "R2", "G7"], ["R3"]]
    assert refusal(basic, hands, ["R5"], "draw") == (
        "'draw' is not legal now (you hold a playable card, and these rules have no voluntary "
        "draw)")
    assert refusal(basic, hands, ["R5"], "call").endswith("(these rules have no ONO! call)")
    assert refusal(basic, hands, ["R5"], "keep").endswith("(only the card just drawn can be kept)")
    assert refusal(basic, hands, ["R5"], "accept").endswith("(no draw is pending)")
    assert refusal(classic, hands, ["R5"], "call").endswith(
        "(only with two cards in hand, before you play one)")
    # two cards held, none playable: the call's reason is the play's (before: "only with two
    # cards in hand" to a player holding two)
    two = [["G1", "Y8"], ["R3"]]
    assert refusal(classic, two, ["R5"], "call").endswith(
        "(a call goes with the play of your second-to-last card, and no card you hold can be "
        "played now)")
    assert refusal(classic, two, ["R+2"], "call", phase="pending", pending_draw=2,
                   previous_player=1).endswith("and 2 cards to draw are pending: accept takes them)")
    assert refusal(classic, two, ["R5"], "call", phase="drawn", drawn_card="Y8",
                   turn_fresh=False).endswith("and the drawn card cannot be played: keep it)")
    assert refusal(classic, two, ["R5"], "call", called=[True, False]).endswith(
        "(you have called already)")
    assert refusal(classic, hands, ["R5"], "catch").endswith(
        "(only as the first decision of your turn, against the previous player, who went down "
        "to one card without calling ONO!)")
    assert refusal(ono, hands + [["G1"]], ["R5"], "catch").endswith(
        "(only as the first decision of your turn, against the previous player)")
    pending = {"phase": "pending", "pending_draw": 2, "previous_player": 1}
    assert refusal(classic, hands, ["R+2"], "challenge", **pending).endswith(
        "(only a Wild Draw Four can be challenged)")
    assert refusal(classic, hands, ["R+2"], "keep", **pending).endswith(
        "(2 cards to draw are pending: accept takes them)")
    assert refusal(classic, hands, ["W"], "draw", color=None, phase="color",
                   color_then_play=True).endswith("(name a colour first: color R, Y, G or B)")
    target = {"color": None, "phase": "target", "turn_fresh": False}
    three = [["R1", "G2"], ["R3"], ["G1"]]
    assert refusal(swap, three, ["WC"], "draw", **target).endswith(
        "(choose the player to swap hands with first: target 1 to 2)")
    assert refusal(swap, three, ["WC"], "target 5", **target).endswith(
        "(the other players are target 1 to 2, counted from your left)")
    # a colour or a play while a player is to be chosen, a play while a colour is to be
    # named (before: "no colour is to be named", and no reason)
    assert refusal(swap, three, ["WC"], "R", **target) == (
        "'color R' is not legal now (choose the player to swap hands with first: target 1 to 2)")
    assert refusal(swap, three, ["WC"], "play R1", **target).endswith("target 1 to 2)")
    assert refusal(classic, hands, ["W"], "play R1", color=None, phase="color",
                   color_then_play=True).endswith("(name a colour first: color R, Y, G or B)")
    # must_play_drawn: the drawn card that can be played may not be kept (before: "only the
    # card just drawn can be kept", of that very card)
    must = RuleSet.preset("classic", num_players=2, must_play_drawn=True)
    drawn = {"phase": "drawn", "drawn_card": "R9", "turn_fresh": False}
    assert refusal(must, [["R9", "G7"], ["R3"]], ["R5"], "keep", **drawn).endswith(
        "(these rules make you play a drawn card you can play)")
    assert refusal(must, [["R9", "G7"], ["R3"]], ["R5"], "draw", **drawn).endswith(
        "(you have drawn: these rules make you play the drawn card)")
    assert refusal(classic, [["R9", "G7"], ["R3"]], ["R5"], "draw", **drawn).endswith(
        "(you have drawn: play the drawn card or keep it)")


def test_a_draw_that_takes_the_last_cards_says_so_after_the_reshuffle_it_needed():
    # before: "P0 draws 1 card" for a penalty of 4 with one card left, with no word why, and
    # the reshuffle that a draw needed was said after the draw
    from ono_env.cards import action_id
    from ono_env.game import VecGame
    from ono_env.render import table_events

    shuffled = "the discard pile, but for its top card, is shuffled into a new stock"
    said = []
    for stock, discard in ((1, 1), (4, 1), (0, 6)):
        g = VecGame("classic", 1, seed=1, num_players=3)   # P0 down to one card, not called
        d = g.to_dict(0)
        assert d["rules"]["ono_penalty"] == "draw" and d["rules"]["ono_penalty_cards"] == 4
        spare = d["stock"] + d["hands"][0][1:] + d["discard"][:-1]
        top = d["discard"][-1]
        d["discard"] = spare[:discard - 1] + [top]
        d["stock"] = spare[discard - 1:discard - 1 + stock]
        d["hands"][2] = d["hands"][2] + spare[discard - 1 + stock:]
        d["hands"][0] = d["hands"][0][:1]
        d.update(current_player=1, previous_player=0, exposed=0, turn_fresh=True, decisions=5)
        g.set_position(0, d)
        before = g.to_dict(0)
        g.step(np.array([action_id("catch")]))
        said.append(table_events(before, g.to_dict(0), 1, action_id("catch")))
    assert said == [
        ["P1 catches P0 without an ONO! call: P0 draws 1 card (the last there was)"],
        ["P1 catches P0 without an ONO! call: P0 draws 4 cards (the last there were)"],
        [shuffled, "P1 catches P0 without an ONO! call: P0 draws 4 cards"]]

