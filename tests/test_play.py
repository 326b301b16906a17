"""ono-play with scripted standard input."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest

from ono_env.apps.play import Quit, parse_choice, play


def scripted_reader(out: io.StringIO, prefix=("nonsense", "999", "play W")):
    """Answers the prompts: first the entries in ``prefix`` (all wrong), then alternately
    the number and the name of the first listed option."""
    queue = list(prefix)
    count = [0]

    def read(prompt: str) -> str:
        if queue:
            return queue.pop(0)
        block = out.getvalue().rsplit("your options:", 1)[1]
        first = re.search(r"^\s+(\d+)\s+(.+)$", block, re.M)
        count[0] += 1
        return first.group(1) if count[0] % 2 else first.group(2)
    return read


def test_a_scripted_human_finishes_a_round_and_wrong_entries_are_re_prompted():
    out = io.StringIO()
    winner = play(["greedy"], "basic", seed=4, read=scripted_reader(out), out=out)
    text = out.getvalue()
    assert winner in (0, 1)
    assert "not accepted: unknown action 'nonsense'" in text
    assert "not accepted: 999 is not one of the listed numbers" in text
    assert "not accepted: unknown action 'play W'" in text
    assert text.count("your options:") >= 3
    assert ("you win!" in text) == (winner == 0)
    assert "P1 (greedy)" in text or "(greedy)" in text
    # the table is printed after each move, showing only the human's own hand
    assert text.count("P0 to act") + text.count("P1 to act") >= text.count("your options:")
    assert re.search(r"P1 \(?.*\[\d+ cards\]", text)


def test_a_match_against_three_agents_and_a_single_round_option():
    out = io.StringIO()
    play(["greedy", "color", "defensive"], "classic", seat=2, seed=1, single_round=True,
         read=scripted_reader(out, ()), out=out)
    text = out.getvalue()
    assert "4 players" in text and "You are P2" in text and "game over" in text


def test_parse_choice_by_number_or_name():
    assert parse_choice(" 66 ", [5, 66]) == 66
    assert parse_choice("play  R5", [5, 66]) == 5
    with pytest.raises(ValueError, match="'draw' is not legal now"):
        parse_choice("draw", [5])


def test_quit_and_end_of_input_abandon_the_game():
    with pytest.raises(Quit):
        play(["random"], "basic", seed=0, read=lambda p: "quit", out=io.StringIO())

    def eof(prompt):
        raise EOFError
    with pytest.raises(Quit):
        play(["random"], "basic", seed=0, read=eof, out=io.StringIO())


def test_console_script_with_piped_stdin():
    # every action number in turn: each wrong one is re-prompted until a legal one comes
    script = "\n".join(str(a) for a in range(85)) + "\n"
    proc = subprocess.run([sys.executable, "-m", "ono_env.apps.play", "random", "--rules", "basic",
                           "--seed", "7", "--no-color"], input=script * 150, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "you win!" in proc.stdout or "P1 (random) wins" in proc.stdout
    assert "not accepted" in proc.stdout


def test_bad_agent_or_player_count_is_one_line():
    proc = subprocess.run([sys.executable, "-m", "ono_env.apps.play", "genius", "--rules", "basic"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("ono-play: error: unknown agent 'genius'")
    assert len(proc.stderr.strip().splitlines()) == 1
