"""ono-play with scripted standard input."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import numpy as np
import pytest

from ono_env.apps.play import Quit, parse_choice, play
from ono_env.cards import action_id


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
    winner = play(["greedy"], "basic", seed=4, read=scripted_reader(out), out=out)
    text = out.getvalue()
    assert winner in (0, 1)
    assert "not accepted: unknown entry 'nonsense'" in text
    assert "not accepted: 999 is not one of the listed numbers (1 to " in text
    assert re.search(r"not accepted: (W is \d options: play W R, |W is not a legal play now)", text)
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


@pytest.mark.parametrize("text", ["\u00b2", "\u2460", "--1", "\u0661"])
def test_digits_of_other_scripts_are_an_unknown_entry_not_pythons_message(text):
    # before: str.isdigit() took them, then int() failed with "invalid literal for int()"
    with pytest.raises(ValueError, match=f"unknown entry '{text}'"):
        parse_choice(text, [5, 66])


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
        "challenge fails (the Wild Draw Four was legal): P1 draws 6 cards"]


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
    assert re.search(r"catch   \(accuse P\d of not calling ONO!; if P\d holds more than one "
                     r"card you draw 4\)", text)
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
