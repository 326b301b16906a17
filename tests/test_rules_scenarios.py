"""One scenario per row of the rules spec's table (the options: docs/rules.md; readings where it is
silent: docs/rules-choices.md): a position, actions, the expected position."""

from __future__ import annotations

import functools
import json
import operator
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import act, game_at, legal

from ono_env import RuleSet, VecGame
from ono_env.cards import CARD_NAMES


def P(name: str, **kw) -> RuleSet:
    return RuleSet.preset(name, **kw)


# ---- dealer ----------------------------------------------------------------------------
# The dealer's draw is not a position (no card of it stays anywhere), so it is tested on the
# engine's rules function itself, run as plain Python (NUMBA_DISABLE_JIT) on a stock laid out
# by hand (the whole deck): each seat draws from the front of the stock in seat order, ties draw again.
_DEALER_SCRIPT = """
import json, sys
from ono_env import VecGame, _engine as E
from ono_env.cards import CARD_IDS
out = []
for preset, cards, seed in json.loads(sys.argv[1]):
    g = VecGame(preset, 1, seed=seed, num_players=4)
    a = E.Arrays(*g.state.arrays)
    rest = [c for c, k in enumerate(g.rules.deck_counts) for _ in range(int(k))]
    ids = [CARD_IDS[c] for c in cards]
    for c in ids:
        rest.remove(c)
    a.stock[0, :len(rest) + len(ids)] = ids + rest   # the whole deck, these cards first
    a.g[0, E.G_STOCK_LEN] = len(rest) + len(ids)
    out.append(int(E._choose_dealer(a, g.internals.params, 0)))
print(json.dumps(out))
"""
# seats 0-3 draw R5 (5 points), GS (20), B9 (9), W (50); a number card only: R5, B9 (GS and W
# go back), Y7, G8
_DRAWS = ["R5", "GS", "B9", "W", "Y7", "G8"]


def test_the_dealer_is_drawn_as_each_preset_says():
    cases = [("classic", _DRAWS, 0),                          # highest card: W, seat 3
             ("classic", ["R9", "W", "Y9", "W+4", "R1", "B7"], 0),   # W and W+4 tie: seats 1
             # and 3 draw again, R1 against B7: seat 3
             ("wikipedia", _DRAWS, 0)]                        # highest number card: B9, seat 1
    cases += [(p, _DRAWS, seed) for p in ("basic", "stacking") for seed in range(12)]
    run = subprocess.run([sys.executable, "-c", _DEALER_SCRIPT, json.dumps(cases)],
                         env=dict(os.environ, NUMBA_DISABLE_JIT="1"), capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    dealers = json.loads(run.stdout)
    assert dealers[:3] == [3, 3, 1]
    # random: whatever the cards, the seed decides (the same seed, the same dealer)
    for k in range(2):
        assert len(set(dealers[3 + 12 * k:15 + 12 * k])) > 1
    assert RuleSet.preset("basic").dealer == "random" == RuleSet.preset("stacking").dealer
    assert RuleSet.preset("classic").dealer == "highest_card"
    assert RuleSet.preset("wikipedia").dealer == "highest_number"


# ---- first card ------------------------------------------------------------------------
def _first_cards(rules: RuleSet, n: int = 4096):
    g = VecGame(rules, n, seed=11)
    return g, [g.to_dict(i) for i in range(n)]


def _seat(d, k):
    return (d["dealer"] + k) % len(d["hands"])


@pytest.mark.parametrize("preset", ["classic", "ono", "wikipedia", "stacking"])
def test_first_action_card_is_played_by_the_dealer(preset):
    _g, games = _first_cards(P(preset, num_players=4))
    seen = set()
    for d in games:
        top = d["discard"][-1]
        if len(d["discard"]) != 1 or top.startswith("W"):
            continue
        rank = top[1:]
        if rank == "S":  # first player skipped
            assert d["current_player"] == _seat(d, 2) and d["phase"] == "play"
        elif rank == "R":  # dealer's right starts, play goes right
            assert d["direction"] == -1 and d["current_player"] == _seat(d, -1)
        elif rank == "+2":  # first player draws 2 (as the accept decision) and is skipped
            assert d["current_player"] == _seat(d, 1) and d["phase"] == "pending"
            assert d["pending_draw"] == 2
        else:
            assert d["current_player"] == _seat(d, 1) and d["direction"] == 1
            continue
        seen.add(rank)
    assert seen == {"S", "R", "+2"}


def test_first_draw_two_makes_the_first_player_draw_two_and_lose_the_turn():
    _g, games = _first_cards(P("classic", num_players=4), 512)
    i = next(k for k, d in enumerate(games) if d["discard"][-1].endswith("+2"))
    one = VecGame.from_dict(games[i])
    d = games[i]
    act(one, "accept")
    after = one.to_dict(0)
    assert len(after["hands"][_seat(d, 1)]) == 9
    assert after["current_player"] == _seat(d, 2)


def test_first_reverse_two_players_acts_as_if_the_dealer_played_it():
    _g, games = _first_cards(P("classic", num_players=2), 2048)
    ds = [d for d in games if d["discard"][-1][1:] == "R"]
    assert ds
    for d in ds:  # a Reverse is a Skip with two players: the dealer plays first
        assert d["current_player"] == d["dealer"]


def test_first_wild_classic_first_player_names_the_colour_then_plays():
    _g, games = _first_cards(P("classic", num_players=3), 2048)
    i = next(k for k, d in enumerate(games) if d["discard"][-1] == "W")
    d = games[i]
    assert d["phase"] == "color" and d["current_player"] == _seat(d, 1) and d["color"] is None
    one = VecGame.from_dict(d)
    assert legal(one) == ["color R", "color Y", "color G", "color B"]
    act(one, "color G")
    d2 = one.to_dict(0)
    assert d2["color"] == "G" and d2["phase"] == "play" and d2["current_player"] == _seat(d, 1)


def test_first_wild_wikipedia_dealer_names_the_colour():
    _g, games = _first_cards(P("wikipedia", num_players=3), 2048)
    i = next(k for k, d in enumerate(games) if d["discard"][-1] == "W")
    d = games[i]
    assert d["phase"] == "color" and d["current_player"] == d["dealer"]
    one = VecGame.from_dict(d)
    act(one, "color Y")
    d2 = one.to_dict(0)
    assert d2["color"] == "Y" and d2["phase"] == "play" and d2["current_player"] == _seat(d, 1)


@pytest.mark.parametrize("preset", ["ono", "stacking", "classic", "wikipedia"])
def test_first_wild_draw_four_goes_back_into_the_deck(preset):
    _g, games = _first_cards(P(preset, num_players=4))
    for d in games:
        assert "W+4" not in d["discard"]
        if preset in ("ono", "stacking"):  # a first Wild is shuffled back too
            assert d["discard"] == [d["discard"][-1]] and not d["discard"][-1].startswith("W")


def test_uno2018_flips_until_a_number_card():
    _g, games = _first_cards(P("uno2018", num_players=4))
    flipped_over = 0
    for d in games:
        top = d["discard"][-1]
        assert top[0] in "RYGB" and top[1:].isdigit()
        assert d["current_player"] == _seat(d, 1) and d["direction"] == 1
        assert all(len(h) == 7 for h in d["hands"])
        flipped_over += len(d["discard"]) > 1
    assert flipped_over > 0  # ignored action/wild cards stay under the number card


# ---- Wild Draw Four: restriction, bluff and challenge ------------------------------------
def test_wild_draw_four_bluff_guilty(classic3):
    g = game_at(classic3, [["R3", "W+4", "G1"], ["B1", "B2"], ["Y1", "Y2"]], ["R5"])
    assert "play W+4 G" in legal(g)  # holding red: an illegal play, but a bluff is possible
    act(g, "play W+4 G")
    assert legal(g) == ["challenge", "accept"]
    act(g, "challenge")
    d = g.to_dict(0)
    assert len(d["hands"][0]) == 2 + 4  # the offender draws the 4
    assert d["current_player"] == 1 and d["phase"] == "play"  # the victim then plays normally
    assert len(d["hands"][1]) == 2 and d["color"] == "G"  # the named colour stands


def test_wild_draw_four_challenge_innocent(classic3):
    g = game_at(classic3, [["Y3", "W+4", "G1"], ["B1", "B2"], ["Y1", "Y2"]], ["R5"])
    act(g, "play W+4 B", "challenge")
    d = g.to_dict(0)
    assert len(d["hands"][1]) == 2 + 6  # 4 plus 2, and the turn is lost
    assert d["current_player"] == 2 and d["color"] == "B" and len(d["hands"][0]) == 2


def test_wild_draw_four_accept(classic3):
    g = game_at(classic3, [["Y3", "W+4", "G1"], ["B1", "B2"], ["Y1", "Y2"]], ["R5"])
    act(g, "play W+4 B", "accept")
    d = g.to_dict(0)
    assert len(d["hands"][1]) == 6 and d["current_player"] == 2


def test_restricted_wild_draw_four_without_challenge_is_not_playable_holding_the_colour():
    rules = P("classic", num_players=3, challenge=False)
    g = game_at(rules, [["R3", "W+4"], ["B1"], ["Y1"]], ["R5"])
    assert not any(a.startswith("play W+4") for a in legal(g))
    g = game_at(rules, [["Y3", "W+4"], ["B1"], ["Y1"]], ["R5"])
    assert "play W+4 R" in legal(g)


@pytest.mark.parametrize("preset", ["ono", "stacking", "wikipedia", "basic"])
def test_wild_draw_four_any_time_and_no_challenge(preset):
    g = game_at(P(preset, num_players=3), [["R3", "W+4", "G1"], ["B1", "B2"], ["Y1"]], ["R5"])
    act(g, "play W+4 Y")
    assert "challenge" not in legal(g)


# ---- stacking --------------------------------------------------------------------------
def stacking3():
    return P("stacking", num_players=3)


def test_stack_draw_two_on_draw_two():
    g = game_at(stacking3(), [["R+2", "R1", "R2"], ["G+2", "B3", "B4"], ["Y1", "Y2"]], ["R5"])
    act(g, "play R+2")
    assert set(legal(g)) == {"play G+2", "accept"}
    act(g, "play G+2")
    d = g.to_dict(0)
    assert d["current_player"] == 2 and d["pending_draw"] == 4 and d["phase"] == "pending"
    act(g, "accept")
    d = g.to_dict(0)
    assert len(d["hands"][2]) == 6 and d["current_player"] == 0 and d["pending_draw"] == 0


def test_a_player_who_may_stack_down_to_one_card_may_call():
    g = game_at(stacking3(), [["R+2", "R1", "R2"], ["G+2", "B3"], ["Y1", "Y2"]], ["R5"])
    act(g, "play R+2")
    assert set(legal(g)) == {"play G+2", "accept", "call"}


def test_stack_draw_four_on_draw_two():
    g = game_at(stacking3(), [["R+2", "R1"], ["W+4", "B3"], ["Y1", "Y2"]], ["R5"])
    act(g, "play R+2", "play W+4 Y")
    d = g.to_dict(0)
    assert d["pending_draw"] == 6 and d["current_player"] == 2 and d["color"] == "Y"


def test_stack_draw_four_on_draw_four_and_never_draw_two_on_draw_four():
    g = game_at(stacking3(), [["W+4", "R1"], ["W+4", "G+2", "B3"], ["Y1", "Y2"]], ["R5"])
    act(g, "play W+4 G")
    options = legal(g)
    assert "play G+2" not in options  # never Draw Two on Draw Four
    assert {"play W+4 R", "play W+4 G", "accept"} <= set(options)
    act(g, "play W+4 R")
    assert g.to_dict(0)["pending_draw"] == 8


def test_without_stacking_a_draw_two_victim_only_accepts(classic3):
    g = game_at(classic3, [["R+2", "R1", "R2"], ["G+2", "B3"], ["Y1", "Y2"]], ["R5"])
    act(g, "play R+2")
    assert legal(g) == ["accept"]


# ---- two players: Skip and Reverse -----------------------------------------------------
@pytest.mark.parametrize("card", ["RS", "RR"])
def test_two_players_skip_and_reverse_return_the_turn(card):
    g = game_at(P("classic", num_players=2), [[card, "R1", "R2"], ["B1", "B2"]], ["R5"])
    act(g, f"play {card}")
    assert g.to_dict(0)["current_player"] == 0


def test_two_players_reverse_only_flips_when_the_option_is_off():
    rules = P("classic", num_players=2, reverse_skips_with_two_players=False)
    g = game_at(rules, [["RR", "R1"], ["B1", "B2"]], ["R5"])
    act(g, "play RR")
    assert g.to_dict(0)["current_player"] == 1


def test_reverse_with_three_players_turns_play_around(classic3):
    g = game_at(classic3, [["RR", "R1"], ["B1"], ["Y1"]], ["R5"])
    act(g, "play RR")
    d = g.to_dict(0)
    assert d["direction"] == -1 and d["current_player"] == 2


# ---- draws -----------------------------------------------------------------------------
def test_voluntary_draw_is_allowed_with_a_playable_card(classic3):
    g = game_at(classic3, [["R3", "G1", "G2"], ["B1"], ["Y1"]], ["R5"])
    assert set(legal(g)) == {"play R3", "draw"}


def test_basic_has_no_voluntary_draw():
    g = game_at(P("basic", num_players=3), [["R3", "G1"], ["B1"], ["Y1"]], ["R5"])
    assert legal(g) == ["play R3"]
    g = game_at(P("basic", num_players=3), [["Y3", "G1"], ["B1"], ["Y1"]], ["R5"])
    assert legal(g) == ["draw"]


def test_after_a_draw_only_the_drawn_card_may_be_played_or_kept(classic3):
    g = game_at(classic3, [["R3", "G1"], ["B1"], ["Y1"]], ["R5"], stock_top=["R7"])
    act(g, "draw")
    d = g.to_dict(0)
    assert d["phase"] == "drawn" and d["drawn_card"] == "R7"
    assert set(legal(g)) == {"play R7", "keep"}  # not R3 from the hand
    act(g, "keep")
    d = g.to_dict(0)
    assert d["current_player"] == 1 and sorted(d["hands"][0]) == ["G1", "R3", "R7"]


def test_play_the_drawn_card(classic3):
    g = game_at(classic3, [["R3", "G1"], ["B1"], ["Y1"]], ["R5"], stock_top=["R7"])
    act(g, "draw", "play R7")
    d = g.to_dict(0)
    assert d["discard"][-1] == "R7" and d["current_player"] == 1


def test_must_play_drawn_removes_keep():
    rules = P("classic", num_players=3, must_play_drawn=True)
    g = game_at(rules, [["Y3", "G1"], ["B1"], ["Y1"]], ["R5"], stock_top=["R7"])
    act(g, "draw")
    assert legal(g) == ["play R7"]


def test_must_play_drawn_never_forces_a_bluff():
    # 001: a Wild Draw Four may be played "only when you don't have a card ... that matches
    # the colour"; drawn while holding the colour it is no card the player may play, so
    # "play it" does not apply: keep stays, and the bluff stays an option under challenge
    rules = P("classic", num_players=3, must_play_drawn=True)
    g = game_at(rules, [["R3", "B1"], ["B2", "B3"], ["Y2", "Y3"]], ["R5"], stock_top=["W+4"])
    act(g, "draw")
    assert legal(g) == ["play W+4 R", "play W+4 Y", "play W+4 G", "play W+4 B", "keep"]
    # without a card of the colour it is a legal play, and must be played
    g = game_at(rules, [["Y3", "B1"], ["B2", "B3"], ["Y2", "Y3"]], ["R5"], stock_top=["W+4"])
    act(g, "draw")
    assert legal(g) == ["play W+4 R", "play W+4 Y", "play W+4 G", "play W+4 B"]


def test_an_unplayable_drawn_card_is_kept(classic3):
    g = game_at(classic3, [["Y3", "G1"], ["B1"], ["Y1"]], ["R5"], stock_top=["B9"])
    act(g, "draw")
    assert legal(g) == ["keep"]


def test_skip_forced_takes_single_option_decisions(classic3):
    g = game_at(classic3, [["Y3", "G1"], ["R1", "B1", "B2"], ["Y1"]], ["R5"], stock_top=["B9"],
                skip_forced=True)
    act(g, "draw")  # the keep is forced and taken inside the step
    d = g.to_dict(0)
    assert d["current_player"] == 1 and d["decisions"] == 2


def test_draw_until_playable():
    rules = P("ono", num_players=3, draw_until_playable=True)
    g = game_at(rules, [["G1", "B2"], ["B1"], ["Y1"]], ["R5"], stock_top=["G3", "Y4", "B8", "R9"])
    act(g, "draw")
    d = g.to_dict(0)
    assert d["drawn_card"] == "R9" and len(d["hands"][0]) == 6 and d["phase"] == "drawn"


def test_draw_until_playable_draws_one_on_a_voluntary_draw():
    rules = P("ono", num_players=3, draw_until_playable=True)
    g = game_at(rules, [["R1", "B2"], ["B1"], ["Y1"]], ["R5"], stock_top=["G3", "R9"])
    act(g, "draw")
    d = g.to_dict(0)
    assert d["drawn_card"] == "G3" and len(d["hands"][0]) == 3


def test_short_deck_removes_six_to_nine():
    rules = P("ono", short_deck=True)
    assert rules.deck_size == 112 - 32
    g = VecGame(rules, 64, seed=0)
    for i in range(64):
        d = g.to_dict(i)
        cards = d["stock"] + d["discard"] + functools.reduce(operator.iadd, d["hands"], [])
        assert not any(c[0] in "RYGB" and c[1:] in ("6", "7", "8", "9") for c in cards)


# ---- ONO call and catch ------------------------------------------------------------------
@pytest.mark.parametrize("preset,penalty", [("classic", 4), ("stacking", 2), ("uno2018", 2),
                                            ("wikipedia", 2)])
def test_catch_makes_the_offender_draw(preset, penalty):
    g = game_at(P(preset, num_players=3), [["R3", "R4"], ["B1", "B2"], ["Y1"]], ["R5"])
    assert "call" in legal(g)
    act(g, "play R3")
    assert "catch" in legal(g)
    act(g, "catch")
    d = g.to_dict(0)
    assert len(d["hands"][0]) == 1 + penalty
    assert d["current_player"] == 1 and "catch" not in legal(g)


def test_a_call_protects_and_is_public(classic3):
    g = game_at(classic3, [["R3", "R4"], ["B1", "B2"], ["Y1"]], ["R5"])
    act(g, "call")
    assert g.to_dict(0)["called"] == [True, False, False]
    act(g, "play R3")
    assert "catch" not in legal(g)
    assert g.to_dict(0)["called"][0]


def test_catch_window_closes_once_the_next_player_acts(classic3):
    g = game_at(classic3, [["R3", "R4"], ["B1", "B2"], ["Y1", "Y2"]], ["R5"], stock_top=["G9"])
    act(g, "play R3", "draw", "keep")
    assert g.to_dict(0)["current_player"] == 2 and "catch" not in legal(g)


def test_basic_has_no_call_or_catch():
    g = game_at(P("basic", num_players=3), [["R3", "R4"], ["B1", "B2"], ["Y1"]], ["R5"])
    assert "call" not in legal(g)
    act(g, "play R3")
    assert "catch" not in legal(g)


def test_ono_catch_swaps_hands():
    g = game_at(P("ono", num_players=3), [["R3", "R4"], ["B1", "B2", "G7"], ["Y1"]], ["R5"])
    act(g, "play R3", "catch")
    d = g.to_dict(0)
    assert d["hands"][1] == ["R4"] and sorted(d["hands"][0]) == ["B1", "B2", "G7"]
    assert d["current_player"] == 1 and d["phase"] == "play"
    r = act(g, "play R4")  # the catcher goes out with the swapped card
    assert r.terminated[0] and g.to_dict(0)["winner"] == 1


def test_ono_false_accusation_costs_the_accuser_four():
    g = game_at(P("ono", num_players=3), [["R3", "R4", "R6"], ["B1", "B2"], ["Y1"]], ["R5"])
    act(g, "play R3")
    assert "catch" in legal(g)  # legal at the start of any turn in ONO!
    act(g, "catch")
    d = g.to_dict(0)
    assert len(d["hands"][1]) == 2 + 4 and len(d["hands"][0]) == 2


def test_ono_catching_a_player_with_one_card_who_called_costs_nothing():
    # the spec: a false accusation is calling ONO on a player with more than one card
    g = game_at(P("ono", num_players=3), [["R3", "R4"], ["B1", "B2"], ["Y1"]], ["R5"])
    act(g, "call", "play R3", "catch")
    d = g.to_dict(0)
    assert len(d["hands"][1]) == 2 and d["hands"][0] == ["R4"]
    assert d["current_player"] == 1 and "catch" not in legal(g)


def test_ono_no_previous_player_at_the_first_turn_even_after_a_first_action_card():
    g = VecGame(P("ono", num_players=3), 512, seed=3)
    firsts = [g.to_dict(i) for i in range(512)]
    d = next(d for d in firsts if d["discard"][-1][1:] == "S")
    assert d["previous_player"] is None
    assert "catch" not in VecGame.from_dict(d).legal_action_names(0)


# ---- 2018 wilds --------------------------------------------------------------------------
def test_wild_shuffle_hands_deals_from_the_players_left_and_keeps_direction():
    rules = P("uno2018", num_players=4)
    hands = [["WS", "R1", "R2"], ["B1", "B2", "B3", "B4", "B5"],
             ["G1", "G2", "G3", "G4", "G5", "G6"], ["Y1", "Y2", "Y3", "Y4", "Y5", "Y6", "Y7", "Y8"]]
    g = game_at(rules, hands, ["R5"], direction=-1)
    before = sorted(functools.reduce(operator.iadd, hands, []))
    before.remove("WS")
    act(g, "play WS")
    d = g.to_dict(0)
    # 21 cards dealt one at a time from seat 1 clockwise: seat 1 gets the extra card
    assert [len(h) for h in d["hands"]] == [5, 6, 5, 5]
    assert sorted(functools.reduce(operator.iadd, d["hands"], [])) == before
    # then the player, seeing the new hand, names the colour
    assert d["phase"] == "color" and d["current_player"] == 0 and d["color"] is None
    act(g, "color G")
    d = g.to_dict(0)
    assert d["direction"] == -1 and d["color"] == "G" and d["current_player"] == 3


def test_wild_customizable_is_a_plain_wild_in_the_preset():
    g = game_at(P("uno2018", num_players=3), [["WC", "R1", "R2"], ["B1"], ["Y1"]], ["R5"])
    assert {"play WC R", "play WC Y", "play WC G", "play WC B"} <= set(legal(g))
    assert "play WC" not in legal(g)
    act(g, "play WC B")
    d = g.to_dict(0)
    assert d["color"] == "B" and d["current_player"] == 1 and d["hands"][0] == ["R1", "R2"]


def test_wild_customizable_swap_hands_with_a_chosen_player():
    rules = P("uno2018", num_players=4, wild_customizable="swap_hands")
    g = game_at(rules, [["WC", "R1", "R2"], ["B1"], ["G1", "G2", "G3", "G4"], ["Y1"]], ["R5"])
    assert "play WC" in legal(g) and "play WC B" not in legal(g)
    act(g, "play WC")
    assert legal(g) == ["target 1", "target 2", "target 3"]
    act(g, "target 2")
    d = g.to_dict(0)
    assert d["hands"][0] == ["G1", "G2", "G3", "G4"] and d["hands"][2] == ["R1", "R2"]
    # the house rule is performed, then the colour is named
    assert d["phase"] == "color" and d["current_player"] == 0
    act(g, "color G")
    d = g.to_dict(0)
    assert d["current_player"] == 1 and d["color"] == "G"


# ---- going out and scoring -----------------------------------------------------------------
def test_last_card_draw_two_is_drawn_before_points_are_counted():
    rules = P("classic", num_players=2)  # winner scores, match to 500
    g = game_at(rules, [["R+2"], ["G1", "G2"]], ["R5"], stock_top=["B9", "Y7"])
    r = act(g, "play R+2")
    d = g.to_dict(0)
    assert d["scores"] == [1 + 2 + 9 + 7, 0]
    assert not r.terminated[0] and d["round"] == 1
    # the next round is dealt at once: dealer one seat to the left, seven cards each
    assert d["dealer"] == 1 and [len(h) for h in d["hands"]] == [7, 7]


def test_match_ends_at_the_target_score():
    rules = P("classic", num_players=2)
    g = game_at(rules, [["R1"], ["GS"]], ["R5"], scores=[490, 0])
    r = act(g, "play R1")
    assert r.terminated[0]
    assert g.to_dict(0)["scores"] == [510, 0]
    assert r.rewards[0].tolist() == [1.0, -1.0]


def test_winner_scoring_single_round_rewards():
    rules = P("classic", num_players=3, target_score=0)
    g = game_at(rules, [["R1"], ["W", "G5"], ["BS"]], ["R5"])
    r = act(g, "play R1")
    assert r.terminated[0] and g.to_dict(0)["scores"] == [75, 0, 0]
    assert r.rewards[0].tolist() == [1.0, -0.5, -0.5]


def test_penalty_scoring_each_player_scores_their_own_cards():
    g = game_at(P("stacking", num_players=3), [["R1"], ["W", "G5"], ["BS"]], ["R5"])
    r = act(g, "play R1")
    assert r.terminated[0] and g.to_dict(0)["scores"] == [0, 55, 20]


def test_penalty_match_lowest_total_wins_and_ties_share():
    rules = P("stacking", num_players=3, target_score=100)
    g = game_at(rules, [["R0"], ["Y6", "G9"], ["R1"]], ["R5"], current=2, scores=[30, 90, 30])
    r = act(g, "play R1")
    assert r.terminated[0]
    assert g.to_dict(0)["scores"] == [30, 105, 30]
    assert r.rewards[0].tolist() == [0.5, -1.0, 0.5]


def test_points_reward_is_the_centred_score_change():
    rules = P("classic", num_players=3, target_score=0)
    g = game_at(rules, [["R1"], ["W", "G5"], ["BS"]], ["R5"], reward="points")
    r = act(g, "play R1")
    np.testing.assert_allclose(r.rewards[0], [0.75 - 0.25, -0.25, -0.25], atol=1e-6)


# ---- exhausted stock -------------------------------------------------------------------
def test_stock_and_discard_exhausted_a_draw_draws_nothing_and_the_turn_passes():
    rules = P("basic", num_players=2)
    deck = [CARD_NAMES[c] for c, n in enumerate(rules.deck_counts) for _ in range(n)]
    deck.remove("R5")
    unplayable = [c for c in deck if c[0] in "YGB" and c[1:] != "5"]
    rest = [c for c in deck if c not in unplayable]
    g = game_at(rules, [unplayable, rest], ["R5"], stock_rest=False, skip_forced=True)
    assert legal(g) == ["draw"]
    act(g, "draw")
    d = g.to_dict(0)
    assert d["current_player"] == 1 and len(d["hands"][0]) == len(unplayable)
    assert d["stock"] == [] and d["discard"] == ["R5"]


def test_reshuffle_keeps_the_top_card(classic3):
    g = game_at(classic3, [["Y3"], ["B1"], ["Y1"]], ["R7", "G2", "R5"], stock_top=[])
    d = g.to_dict(0)
    # empty the stock into player 2's hand (position surgery), then draw
    d["hands"][2] = d["hands"][2] + d["stock"]
    d["stock"] = []
    g = VecGame.from_dict(d)
    act(g, "draw")
    d = g.to_dict(0)
    assert d["discard"] == ["R5"] and len(d["stock"]) == 1 and len(d["hands"][0]) == 2


# ---- fixes: a play ends the drawn-card decision; call; the bluff flag; random loops --------
def test_playing_a_drawn_wild_shuffle_hands_clears_the_drawn_card():
    # the game: draw, then play the Wild Shuffle Hands just drawn
    g = VecGame("uno2018", 1, seed=65, num_players=2)
    p = g.to_dict(0)["current_player"]
    act(g, "draw")
    assert g.to_dict(0)["drawn_card"] == "WS" and legal(g) == ["play WS", "keep"]
    act(g, "play WS")
    d = g.to_dict(0)
    assert d["phase"] == "color" and d["drawn_card"] is None
    assert VecGame.from_dict(d).to_dict(0) == d  # the saved position loads again
    act(g, "color B")
    assert g.to_dict(0)["color"] == "B" and g.to_dict(0)["current_player"] == 1 - p


def test_playing_a_drawn_swapping_wild_customizable_clears_the_drawn_card():
    rules = P("uno2018", num_players=3, wild_customizable="swap_hands")
    g = game_at(rules, [["R1", "G2"], ["B1", "B2"], ["Y1", "Y2", "Y3"]], ["R5"], stock_top=["WC"])
    act(g, "draw", "play WC")
    d = g.to_dict(0)
    assert d["phase"] == "target" and d["drawn_card"] is None
    assert VecGame.from_dict(d).to_dict(0) == d
    act(g, "target 2", "color Y")
    d = g.to_dict(0)
    assert d["hands"][0] == ["Y1", "Y2", "Y3"] and d["current_player"] == 1


def test_call_needs_a_card_to_play(classic3):
    # the spec: a call is legal when the player holds two cards "and is about to play one"
    g = game_at(classic3, [["Y3", "G1"], ["B1"], ["Y1"]], ["R5"], stock_top=["B9"])
    assert legal(g) == ["draw"]  # two cards, nothing playable: no call
    g = game_at(classic3, [["Y3", "R1"], ["B1"], ["Y1"]], ["R5"])
    assert set(legal(g)) == {"play R1", "draw", "call"}


def test_call_after_a_draw_only_when_the_drawn_card_can_be_played(classic3):
    g = game_at(classic3, [["Y3"], ["B1"], ["Y1"]], ["R5"], stock_top=["B9"])
    act(g, "draw")
    assert legal(g) == ["keep"]  # two cards now, but the drawn one cannot be played
    g = game_at(classic3, [["Y3"], ["B1"], ["Y1"]], ["R5"], stock_top=["R9"])
    act(g, "draw")
    assert set(legal(g)) == {"play R9", "keep", "call"}


def test_a_pending_draw_victim_who_cannot_stack_may_not_call():
    g = game_at(stacking3(), [["R+2", "R1", "R2"], ["G3", "B3"], ["Y1", "Y2"]], ["R5"])
    act(g, "play R+2")
    assert legal(g) == ["accept"]


def test_accepting_a_bluffed_wild_draw_four_clears_the_bluff(classic3):
    g = game_at(classic3, [["R3", "W+4", "G1"], ["B1", "B2"], ["Y1", "Y2"]], ["R5"])
    act(g, "play W+4 G")
    assert g.to_dict(0)["wild_draw_four_bluff"]
    act(g, "accept")
    d = g.to_dict(0)
    assert not d["wild_draw_four_bluff"] and d["phase"] == "play" and d["current_player"] == 2
    assert VecGame.from_dict(d).to_dict(0) == d


def test_random_play_stops_on_a_game_without_legal_action():
    # Checked positions never leave a live game without a legal action; if the state arrays
    # are written directly into such a game (an unfinished game in phase round_end), the
    # compiled random loops stop instead of dividing by zero or spinning.
    from ono_env import _engine as E

    g = VecGame("classic", 2, seed=3, num_players=2)
    g.state.phase[0] = E.PH_ROUND_END
    assert not g.legal_mask()[0].any() and not g.finished[0]
    before = g.to_dict(0)
    rewards = np.zeros((2, 2))
    g.play_random_until(np.full(2, -1, np.int64), np.arange(2, dtype=np.uint64), rewards)
    assert g.to_dict(0) == before and g.finished[1]  # game 1 played to its end
    g.play_random(5)
    assert g.to_dict(0)["decisions"] == before["decisions"]
