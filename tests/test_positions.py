"""Positions: one schema, checked key by key and invariant by invariant before anything is
written (ono_env/positions.py, docs/positions.md).

Every bad input is refused with one ``ValueError`` naming the key(s) involved; a refused
``set_position`` leaves the game byte for byte unchanged; and a property test mutates valid
positions from real play at random: each mutant is either refused by name, or accepted and
then played by random legal moves to its end with every card kept.
"""

from __future__ import annotations

import copy
import functools
import json

import numpy as np
import pytest
from conftest import act, make_position
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ono_env import PRESETS, RuleSet, VecGame, game_seeds
from ono_env.cards import CARD_IDS, CARD_NAMES
from ono_env.game import MAX_DECISIONS, random_legal
from ono_env.observation import PHASE_NAMES
from ono_env.positions import MAX_COUNT, MAX_PENDING_DRAW, POSITION_KEYS

CL2 = RuleSet.preset("classic", num_players=2)
CL2_SINGLE = RuleSet.preset("classic", num_players=2, target_score=0)
BASIC2 = RuleSet.preset("basic", num_players=2)
WIKI2 = RuleSet.preset("wikipedia", num_players=2)
ONO2 = RuleSet.preset("ono", num_players=2)
STACK2 = RuleSet.preset("stacking", num_players=2)
U18_2 = RuleSet.preset("uno2018", num_players=2, scoring="winner")
U18_SWAP3 = RuleSet.preset("uno2018", num_players=3, wild_customizable="swap_hands")
CL3 = RuleSet.preset("classic", num_players=3)


def states(game: VecGame) -> list[np.ndarray]:
    """Copies of every state array of a game batch (for byte-for-byte comparisons)."""
    return [a.copy() for a in game.state.arrays]


def unchanged(game: VecGame, before: list[np.ndarray]) -> bool:
    return all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(game.state.arrays, before))


def pos(rules: RuleSet, hands, discard, /, *, drop=(), **fields):
    """A valid fresh position (make_position) with ``fields`` overwritten (None included)
    and the keys in ``drop`` removed."""
    d = make_position(rules, hands, discard, color="R" if discard[-1].startswith("W") else None)
    d.update(fields)
    for k in drop:
        del d[k]
    return d


def base2(**fields):
    """Classic, two players: seat 0 holds R1 R2, seat 1 holds R3; R5 on top."""
    return pos(CL2, [["R1", "R2"], ["R3"]], ["R5"], **fields)


def moved(d, src, dst, card=None):
    """``d`` with one card (the last of ``src``, or ``card``) moved to the end of ``dst``."""
    d = copy.deepcopy(d)
    get = lambda k: d["hands"][k] if isinstance(k, int) else d[k]  # noqa: E731
    c = card if card is not None else get(src)[-1]
    get(src).remove(c)
    get(dst).append(c)
    return d


def with_(d, **fields):
    d = copy.deepcopy(d)
    d.update(fields)
    return d


def terminated_single(scores=None, **fields):
    """Seat 0 has just gone out with R1 in a single scored round (classic, target 0)."""
    d = pos(CL2_SINGLE, [[], ["R3", "GS"]], ["R5", "R1"], round=1, winner=0, terminated=True,
            turn_fresh=False, decisions=9, scores=scores if scores is not None else [23, 0])
    d.update(fields)
    return d


# ---- every class of bad input: (name, rules of the game, position, the message) ------------
BAD = [
    # the mapping and its keys
    ("not a mapping", CL2, [1, 2], r"a position must be a mapping"),
    ("unknown key", CL2, with_(base2(), foo=1), r"position key 'foo' \(unknown\)"),
    ("a misspelt key", CL2, base2(drop=("called",), calls=[False, False]),
     r"'calls' \(unknown\), 'called' \(missing\)"),
    ("missing key", CL2, base2(drop=("rng",)), r"position key 'rng' \(missing\)"),
    # at most five of each named (before: every unknown key, megabytes of message)
    ("many unknown keys", CL2, with_(base2(drop=("rng",)), **{f"k{i}": 0 for i in range(50_000)}),
     r"^position keys 'k0' \(unknown\), 'k1' \(unknown\), 'k2' \(unknown\), 'k3' "
     r"\(unknown\), 'k4' \(unknown\) and 49,995 more, 'rng' \(missing\); allowed: "),
    ("missing keys", CL2, base2(drop=("version", "scores")),
     r"'version' \(missing\), 'scores' \(missing\)"),
    ("non-string key", CL2, {**base2(), 5: 1}, r"position key 5 \(unknown\)"),
    # each key's type and range
    ("version 2", CL2, base2(version=2), r"'version': 2 \(int\); allowed: 1"),
    ("version True", CL2, base2(version=True), r"'version': True \(bool\)"),
    ("version '1'", CL2, base2(version="1"), r"'version': '1' \(str\)"),
    ("rules None", CL2, base2(rules=None), r"'rules': a rules mapping must be a mapping"),
    ("rules for four players", PRESETS["classic"], base2(rules=PRESETS["classic"].to_dict()),
     r"'hands': .*allowed: a list of 4 lists of card names, one hand per seat \(num_players=4 "
     r"in 'rules'\)"),
    ("rules unknown option", CL2, base2(rules={**CL2.to_dict(), "speed": 2}),
     r"'rules': unknown rule option"),
    ("rules bad value", CL2, base2(rules={**CL2.to_dict(), "stacking": "yes"}),
     r"'rules': invalid rule set: stacking='yes'"),
    ("hands not a list", CL2, base2(hands="R1 R2"),
     r"'hands': 'R1 R2' \(str\); allowed: a list of 2"),
    ("three hands for two", CL2, base2(hands=[["R1"], ["R2"], ["R3"]]),
     r"'hands'.*allowed: a list of 2"),
    ("a hand not a list", CL2, base2(hands=[["R1", "R2"], "R3"]),
     r"'hands': hands\[1\]='R3' \(str\)"),
    ("card as an int", CL2, base2(hands=[[1, "R2"], ["R3"]]),
     r"'hands': hands\[0\]\[0\]=1 \(int\)"),
    ("card in lower case", CL2, base2(hands=[["r1", "R2"], ["R3"]]),
     r"'hands': hands\[0\]\[0\]='r1'"),
    ("unknown card", CL2, base2(hands=[["R10", "R2"], ["R3"]]), r"'hands': hands\[0\]\[0\]='R10'"),
    ("stock card as an int", CL2, with_(base2(), stock=[5] + base2()["stock"][1:]),
     r"'stock': stock\[0\]=5 \(int\)"),
    ("stock None", CL2, base2(stock=None), r"'stock': stock=None"),
    ("discard empty", CL2, base2(discard=[]), r"'discard': \[\] \(empty\)"),
    ("discard card None", CL2, base2(discard=[None]), r"'discard': discard\[0\]=None"),
    ("a card missing", CL2, with_(base2(), stock=base2()["stock"][1:]),
     r"'hands', 'stock', 'discard', 'rules': together they hold R0 0 \(the deck has 1\)"),
    ("a card twice", CL2, base2(hands=[["R1", "R2", "R2"], ["R3"]]),
     r"'hands', 'stock', 'discard', 'rules': together they hold R2 3"),
    ("a card of another deck", CL2, with_(base2(), stock=base2()["stock"] + ["WS"]),
     r"'hands', 'stock', 'discard', 'rules': together they hold WS 1 \(the deck has 0\)"),
    ("color 'P'", CL2, base2(color="P"), r"'color': 'P' \(str\)"),
    ("color 0", CL2, base2(color=0), r"'color': 0 \(int\)"),
    ("current_player out of range", CL2, base2(current_player=2),
     r"'current_player': 2 \(int\); allowed: a seat 0..1"),
    ("current_player -1", CL2, base2(current_player=-1), r"'current_player': -1"),
    ("current_player True", CL2, base2(current_player=True), r"'current_player': True \(bool\)"),
    ("current_player 1.0", CL2, base2(current_player=1.0), r"'current_player': 1.0 \(float\)"),
    ("current_player '0'", CL2, base2(current_player="0"), r"'current_player': '0' \(str\)"),
    ("direction 0", CL2, base2(direction=0), r"'direction': 0"),
    ("direction True", CL2, base2(direction=True), r"'direction': True \(bool\)"),
    ("phase unknown", CL2, base2(phase="thinking"), r"'phase': 'thinking'"),
    ("phase None", CL2, base2(phase=None), r"'phase': None"),
    ("pending_draw negative", CL2, base2(pending_draw=-2), r"'pending_draw': -2"),
    ("pending_draw odd", CL2, base2(pending_draw=3),
     r"'pending_draw': 3 \(int\); allowed: an even"),
    ("pending_draw too large", CL2, base2(pending_draw=MAX_PENDING_DRAW + 2), r"'pending_draw'"),
    ("pending_draw '2'", CL2, base2(pending_draw="2"), r"'pending_draw': '2' \(str\)"),
    ("drawn_card as an int", CL2, base2(drawn_card=5),
     r"'drawn_card': 5 \(int\); allowed: a card name"),
    ("drawn_card unknown", CL2, base2(drawn_card="X"), r"'drawn_card'.*'X'"),
    ("called 'ab'", CL2, base2(called="ab"), r"'called': 'ab' \(str\); allowed: a list of 2 bools"),
    ("called too short", CL2, base2(called=[True]), r"'called': \[True\]"),
    ("called 'false'", CL2, base2(called=["false", False]),
     r"'called': called\[0\]='false' \(str\)"),
    ("called 0/1", CL2, base2(called=[0, 1]), r"'called': called\[0\]=0 \(int\)"),
    ("exposed out of range", CL2, base2(exposed=2),
     r"'exposed': 2 \(int\); allowed: a seat 0..1 .* or null"),
    ("previous_player -1", CL2, base2(previous_player=-1), r"'previous_player': -1"),
    ("turn_fresh 'false'", CL2, base2(turn_fresh="false"),
     r"'turn_fresh': 'false' \(str\); allowed: true or false"),
    ("turn_fresh 1", CL2, base2(turn_fresh=1), r"'turn_fresh': 1 \(int\)"),
    ("wild_draw_four_bluff None", CL2, base2(wild_draw_four_bluff=None),
     r"'wild_draw_four_bluff': None"),
    ("color_then_play 0", CL2, base2(color_then_play=0), r"'color_then_play': 0 \(int\)"),
    ("scores too large", CL2, base2(scores=[10**12, 0]),
     r"'scores': \[1000000000000, 0\]: scores\[0\]=1000000000000 \(int\); allowed: a list of 2 "
     r"integers from 0 to"),
    ("scores negative", CL2, base2(scores=[-1, 0]), r"'scores'.*scores\[0\]=-1"),
    ("scores float", CL2, base2(scores=[1.5, 0]), r"'scores'.*\(float\)"),
    ("scores bool", CL2, base2(scores=[True, 0]), r"'scores'.*\(bool\)"),
    ("scores too few", CL2, base2(scores=[0]), r"'scores': \[0\] \(list\); allowed: a list of 2"),
    ("dealer out of range", CL2, base2(dealer=2), r"'dealer': 2"),
    ("round negative", CL2, base2(round=-1), r"'round': -1"),
    ("round too large", CL2, base2(round=MAX_COUNT + 1), r"'round'"),
    ("decisions 1.0", CL2, base2(decisions=1.0), r"'decisions': 1.0 \(float\)"),
    ("decisions too large", CL2, base2(decisions=MAX_COUNT + 1), r"'decisions'.*to 10,000,000"),
    ("decisions at the largest max_decisions in a game going on", CL2,
     base2(decisions=MAX_COUNT), r"'decisions', 'terminated', 'truncated': decisions=10000000"),
    ("more rounds than decisions", CL2, base2(round=3, winner=0, decisions=2),
     r"'round', 'decisions': round=3, decisions=2"),
    ("a stack larger than the decisions allow", STACK2,
     pos(STACK2, [["R1", "R2"], ["R3"]], ["R+2", "W+4"], color="G", phase="pending",
         pending_draw=10, previous_player=1, decisions=1),
     r"'pending_draw', 'decisions': pending_draw=10, decisions=1"),
    ("winner out of range", CL2, base2(winner=5), r"'winner': 5"),
    ("terminated 'false'", CL2, base2(terminated="false"), r"'terminated': 'false' \(str\)"),
    ("truncated None", CL2, base2(truncated=None), r"'truncated': None"),
    ("rng an int", CL2, base2(rng=12345),
     r"'rng': 12345 \(int\); allowed: the generator state as a decimal string"),
    ("rng negative", CL2, base2(rng="-1"), r"'rng': '-1'"),
    ("rng 2**64", CL2, base2(rng=str(2**64)), r"'rng': '18446744073709551616'"),
    ("rng not a number", CL2, base2(rng="abc"), r"'rng': 'abc'"),
    ("rng leading zeros", CL2, base2(rng="0012"), r"'rng': '0012'"),
    ("rng with a space", CL2, base2(rng=" 12"), r"'rng': ' 12'"),
    # invariants of a reachable position
    ("terminated and truncated", CL2, base2(terminated=True, truncated=True),
     r"'terminated', 'truncated': both true"),
    ("round_end in a game not over", CL2, base2(phase="round_end"),
     r"'phase', 'terminated', 'truncated': "
     r"phase='round_end' with terminated=False, truncated=False"),
    ("round_end in a single round", CL2_SINGLE,
     pos(CL2_SINGLE, [["R1", "R2"], ["R3"]], ["R5"], phase="round_end", truncated=True),
     r"'phase', 'rules': phase='round_end' with target_score=0"),
    ("drawn_card in phase play", CL2, base2(drawn_card="R1"),
     r"'drawn_card', 'phase': drawn_card='R1' in phase 'play'"),
    ("phase drawn without drawn_card", CL2, base2(phase="drawn", turn_fresh=False),
     r"'drawn_card', 'phase': None in phase 'drawn'"),
    ("drawn_card not in the acting hand", CL2,
     base2(phase="drawn", drawn_card="R3", turn_fresh=False),
     r"'drawn_card', 'hands', 'current_player': drawn_card='R3' is not in hands\[0\]"),
    ("pending_draw in phase play", CL2, base2(pending_draw=2),
     r"'pending_draw', 'phase': pending_draw=2 in phase 'play'"),
    ("phase pending on a number card", CL2, base2(phase="pending", pending_draw=2),
     r"'phase', 'discard': phase 'pending' on the top card 'R5'"),
    ("phase pending with nothing pending", CL2,
     pos(CL2, [["R1", "R2"], ["R3"]], ["R+2"], phase="pending"),
     r"'pending_draw', 'discard', 'phase', 'rules': pending_draw=0 on the top card 'R\+2'"),
    ("pending_draw other than the card's", CL2,
     pos(CL2, [["R1", "R2"], ["R3"]], ["W+4"], color="G", phase="pending", pending_draw=6,
         previous_player=1, decisions=5),
     r"'pending_draw', 'discard', 'phase', 'rules': pending_draw=6 on the top card 'W\+4'"),
    ("stacked pending_draw below the top card's", STACK2,
     pos(STACK2, [["R1", "R2"], ["R3"]], ["W+4"], color="G", phase="pending", pending_draw=2,
         previous_player=1),
     r"'pending_draw', 'discard', 'phase', 'rules'.*at least 4"),
    # before: loaded, and a challenge then tested the challenger (seat 0 drew 4 for its own
    # Wild Draw Four)
    ("Wild Draw Four pending from a seat not before the acting one", CL3,
     pos(CL3, [["R1", "R2"], ["R3"], ["G1"]], ["W+4"], color="G", phase="pending",
         pending_draw=4, previous_player=0, wild_draw_four_bluff=True),
     r"'previous_player', 'current_player', 'direction', 'phase': previous_player=0, "
     r"current_player=0, direction=1 in phase 'pending'; allowed: the seat before "
     r"current_player in the direction of play \(2: it played the draw card on top\), or null$"),
    ("Draw Two pending from a seat not before the acting one", CL3,
     pos(CL3, [["R1", "R2"], ["R3"], ["G1"]], ["R+2"], phase="pending", pending_draw=2,
         previous_player=2, direction=-1, decisions=1),
     r"previous_player=2, current_player=0, direction=-1 in phase 'pending'; allowed: the "
     r"seat before current_player in the direction of play \(1: "),
    ("truncated before any decision", CL2, base2(truncated=True),
     r"'truncated', 'decisions': truncated=True at decisions=0; allowed: a game cut at its "
     r"max_decisions \(at least 1\) has made at least one decision$"),
    ("Wild Draw Four pending with no previous player", CL2,
     pos(CL2, [["R1", "R2"], ["R3"]], ["W+4"], color="G", phase="pending", pending_draw=4),
     r"'previous_player', 'phase', 'discard'"),
    ("bluff in phase play", CL2, base2(wild_draw_four_bluff=True),
     r"'wild_draw_four_bluff', 'phase', 'discard', 'terminated', 'rules'"),
    ("bluff on a Draw Two", CL2,
     pos(CL2, [["R1", "R2"], ["R3"]], ["R+2"], phase="pending", pending_draw=2,
         wild_draw_four_bluff=True),
     r"'wild_draw_four_bluff'.*on the top card 'R\+2'"),
    ("bluff without challenge", WIKI2,
     pos(WIKI2, [["R1", "R2"], ["R3"]], ["W+4"], color="G", phase="pending", pending_draw=4,
         previous_player=1, wild_draw_four_bluff=True),
     r"'wild_draw_four_bluff'.*challenge=False"),
    # before: loaded, and a challenge then made the innocent offender draw 4 (or the
    # challenger of a bluff draw 6)
    ("bluff flag set while the offender held no card of the colour under it", CL2,
     pos(CL2, [["R1", "R2"], ["G3"]], ["R5", "W+4"], color="G", phase="pending",
         pending_draw=4, previous_player=1, wild_draw_four_bluff=True),
     r"'wild_draw_four_bluff', 'hands', 'previous_player', 'discard': wild_draw_four_bluff="
     r"True while hands\[1\] \(previous_player\) holds no red card, the colour of 'R5' under "
     r"the Wild Draw Four; allowed: False: "),
    ("bluff flag clear while the offender held the colour under it", CL2,
     pos(CL2, [["R1", "R2"], ["R3"]], ["R5", "W+4"], color="G", phase="pending",
         pending_draw=4, previous_player=1),
     r"wild_draw_four_bluff=False while hands\[1\] \(previous_player\) holds a red card"),
    ("called with three cards", CL2,
     pos(CL2, [["R1", "R2", "G7"], ["R3"]], ["R5"], called=[True, False]),
     r"'called', 'hands': called\[0\]=True with 3 cards"),
    ("called without a call rule", BASIC2,
     pos(BASIC2, [["R1", "R2"], ["R3"]], ["R5"], called=[True, False]), r"'called', 'rules'"),
    ("exposed without a call rule", BASIC2,
     pos(BASIC2, [["R1", "R2"], ["R3"]], ["R5"], exposed=1, previous_player=1),
     r"'exposed', 'rules'"),
    ("exposed after a call", CL2, base2(exposed=1, previous_player=1, called=[False, True]),
     r"'exposed', 'called': exposed=1 with called\[1\]=True"),
    ("exposed outside the catch window", CL2, base2(exposed=1, previous_player=None),
     r"'exposed', 'current_player', 'previous_player', 'turn_fresh', 'phase'"),
    ("exposed after the turn began", CL2, base2(exposed=1, previous_player=1, turn_fresh=False),
     r"'exposed', 'current_player', 'previous_player', 'turn_fresh', 'phase'"),
    ("the acting seat exposed in a fresh turn", CL2,
     pos(CL2, [["R1", "R2"], ["R3"]], ["W"], phase="color", color=None, color_then_play=True,
         exposed=0),
     r"'exposed', 'current_player', 'previous_player', 'turn_fresh', 'phase'"),
    ("no colour on a wild in phase play", CL2,
     pos(CL2, [["R1", "R2"], ["R3"]], ["W"], color=None),
     r"'color', 'phase': color=None in phase 'play'"),
    ("colour other than the top card's", CL2, base2(color="G"),
     r"'color', 'discard': color='G' on the top card 'R5'; "
     r"allowed: the colour of a coloured top card \('R'\)"),
    ("colour named in phase color", CL2,
     pos(CL2, [["R1", "R2"], ["R3"]], ["W"], phase="color", color="G", color_then_play=True),
     r"'color', 'phase': color='G' in phase 'color'"),
    ("phase color on a number card", CL2, base2(phase="color", color=None, turn_fresh=False),
     r"'color', 'discard': color=None on the top card 'R5'"),
    ("phase color on a first wild the rules return", ONO2,
     pos(ONO2, [["R1", "R2"], ["R3"]], ["W"], phase="color", color=None),
     r"'phase', 'discard', 'rules': phase 'color' on the top card 'W'"),
    ("phase target without the swap rule", CL2,
     pos(CL2, [["R1", "R2"], ["R3"]], ["W"], phase="target", color=None, turn_fresh=False),
     r"'phase', 'discard', 'rules': phase 'target' on the top card 'W'"),
    ("color_then_play in phase play", CL2, base2(color_then_play=True),
     r"'color_then_play', 'phase', 'rules'"),
    ("color_then_play where the dealer names the colour", WIKI2,
     pos(WIKI2, [["R1", "R2"], ["R3"]], ["W"], phase="color", color=None, color_then_play=True),
     r"'color_then_play', 'phase', 'rules'.*first_card_wild='dealer_names'"),
    ("first player names the colour without color_then_play", CL2,
     pos(CL2, [["R1", "R2"], ["R3"]], ["W"], phase="color", color=None, turn_fresh=True),
     r"'color_then_play', 'turn_fresh', 'phase', 'rules'"),
    ("phase drawn with one card", CL2,
     pos(CL2, [["R1"], ["R3", "R2"]], ["R5"], phase="drawn", drawn_card="R1", turn_fresh=False),
     r"'hands', 'current_player', 'phase': 1 card in hands\[0\] in phase 'drawn'"),
    ("turn_fresh in phase drawn", CL2, base2(phase="drawn", drawn_card="R2", turn_fresh=True),
     r"'turn_fresh', 'phase', 'terminated': turn_fresh=True in phase 'drawn'"),
    ("an empty hand in a round not over", CL2, pos(CL2, [["R1", "R2"], []], ["R5"]),
     r"'hands', 'terminated', 'phase': empty hands \[1\] in a round not over"),
    ("a winner before any round ended", CL2, base2(winner=0),
     r"'winner', 'round': winner=0 with round=0"),
    ("a round ended without a winner", CL2, base2(round=1, decisions=5),
     r"'winner', 'round': winner=None with round=1"),
    ("terminated without a winner", CL2_SINGLE, terminated_single(winner=None, round=0),
     r"'winner', 'terminated', 'phase': null after the round was won"),
    ("terminated with the winner holding cards", CL2_SINGLE,
     terminated_single(winner=1, current_player=1),
     r"'hands', 'winner', 'terminated', 'phase': empty hands \[0\] with winner=1"),
    ("terminated with another seat acting", CL2_SINGLE, terminated_single(current_player=1),
     r"'current_player', 'winner', 'terminated', 'phase'"),
    ("terminated with a draw pending", CL2_SINGLE,
     terminated_single(phase="pending", pending_draw=2),
     r"'pending_draw', 'phase'|'pending_draw', 'terminated', 'phase'"),
    ("terminated single round with wrong points", CL2_SINGLE, terminated_single(scores=[20, 0]),
     r"'scores', 'hands', 'winner', 'terminated', 'rules': \[20, 0\].*allowed: \[23, 0\]"),
    ("terminated single round counted twice", CL2_SINGLE, terminated_single(round=2),
     r"'round', 'terminated', 'rules': round=2"),
    ("a finished single round not marked terminated", CL2_SINGLE,
     terminated_single(terminated=False),
     r"'hands', 'terminated', 'phase': empty hands \[0\]"),
    ("a match going on with a score at the target", CL2, base2(scores=[500, 0]),
     r"'scores', 'terminated', 'rules': \[500, 0\] with target_score=500"),
    ("a match over below the target", CL2,
     pos(CL2, [[], ["R3", "GS"]], ["R5", "R1"], round=3, winner=0, terminated=True,
         turn_fresh=False, scores=[480, 0], decisions=300),
     r"'scores', 'winner', 'terminated', 'rules'.*at least 500"),
    ("a match over with a losing seat past the target", CL2,
     pos(CL2, [[], ["R3", "GS"]], ["R5", "R1"], round=3, winner=0, terminated=True,
         turn_fresh=False, scores=[1700, 900], decisions=300),
     r"'scores', 'winner', 'terminated', 'rules': \[1700, 900\] with winner=0, target_score="
     r"500; allowed: every other seat's score below 500"),
    ("points without scoring", BASIC2, pos(BASIC2, [["R1", "R2"], ["R3"]], ["R5"], scores=[5, 0]),
     r"'scores', 'rules': \[5, 0\] with scoring='none'"),
    ("points in a single round not over", CL2_SINGLE,
     pos(CL2_SINGLE, [["R1", "R2"], ["R3"]], ["R5"], scores=[5, 0]),
     r"'scores', 'terminated', 'rules': \[5, 0\] in a single round not over"),
]


@pytest.mark.parametrize("rules,d,match", [pytest.param(r, d, m, id=name) for name, r, d, m in BAD])
def test_bad_positions_are_refused_by_name_and_change_nothing(rules, d, match):
    with pytest.raises(ValueError, match=match) as refused:
        VecGame.from_dict(d)
    assert type(refused.value) is ValueError and "allowed:" in str(refused.value)
    # set_position: the same refusal, and not one byte of the game written
    g = VecGame(rules, 3, seed=5)
    before = states(g)
    with pytest.raises(ValueError, match=match):
        g.set_position(1, d)
    assert unchanged(g, before)


def test_set_position_refuses_a_position_of_other_rules():
    g = VecGame(CL2, 2, seed=3)
    d = base2(rules=BASIC2.to_dict())
    VecGame.from_dict(d)  # a valid position of the basic rules
    before = states(g)
    with pytest.raises(ValueError, match=r"position key 'rules': for other rules than this "
                                         r"game's: name='basic' \(this game: 'classic'\)"):
        g.set_position(0, d)
    assert unchanged(g, before)


@pytest.mark.parametrize("preset,players", [("ono", 4), ("uno2018", 3), ("classic", 2),
                                             ("stacking", 6)])
def test_a_position_set_over_a_played_game_keeps_none_of_its_history(preset, players):
    # before: set_position cleared only lacks and known, so the last plays, named colours,
    # draws and the cards a seat knew another held stayed from the game it overwrote, in
    # the version-2 observation too
    rules = RuleSet.preset(preset, num_players=players)
    source = VecGame(rules, 1, seed=11, observation_version=2)
    source.play_random(37, seed=4)
    d = source.to_dict(0)
    fresh = VecGame.from_dict(d, observation_version=2)
    g = VecGame(rules, 2, seed=5, observation_version=2)
    g.play_random(60, seed=6)
    assert g.state.pl[0, :, 3:].any()   # the game overwritten has history to lose
    g.set_position(0, d)
    assert g.to_dict(0) == d == fresh.to_dict(0)
    assert not g.state.pl[0, :, 3:].any() and not fresh.state.pl[0, :, 3:].any()
    for seat in range(players):
        np.testing.assert_array_equal(g.observe(seat)[0], fresh.observe(seat)[0])


def test_a_finished_position_under_autoreset_is_reported_once_and_dealt_again():
    g = VecGame("basic", 2, seed=1, num_players=2)
    rng = np.random.default_rng(0)
    while not g.finished.all():
        g.step(random_legal(g.legal_mask(), rng))
    over = g.to_dict(0)
    table = VecGame("basic", 2, seed=5, num_players=2, autoreset=True)
    table.set_position(1, over)
    first = table.to_dict(0)
    step = table.step(np.array([random_legal(table.legal_mask(), rng)[0], 0]))
    assert step.terminated.tolist() == [False, True] and not step.rewards[1].any()
    assert table.to_dict(1)["decisions"] == 0 and table.to_dict(0) != first
    assert not table.finished.any()


def test_the_issue_example_scores_writes_nothing():
    # before: hands and piles were written, then scores=[10**12, 0] refused
    g = VecGame("classic", 2, seed=1, num_players=2)
    d = g.to_dict(1)
    d["scores"] = [10**12, 0]
    before = states(g)
    with pytest.raises(ValueError, match=r"position key 'scores': \[1000000000000, 0\]"):
        g.set_position(0, d)
    assert unchanged(g, before)


def test_valid_hand_made_positions_are_accepted():
    # every phase, written by hand (the checks accept what play reaches)
    ok = [
        base2(),
        base2(phase="drawn", drawn_card="R2", turn_fresh=False),
        pos(CL2, [["R1", "R2"], ["R3"]], ["R+2"], phase="pending", pending_draw=2),
        pos(CL2, [["R1", "R2"], ["R3"]], ["W+4"], color="G", phase="pending", pending_draw=4,
            previous_player=1, wild_draw_four_bluff=True),
        pos(CL2, [["R1", "R2"], ["R3"]], ["R5", "W+4"], color="G", phase="pending",
            pending_draw=4, previous_player=1, wild_draw_four_bluff=True),
        pos(CL2, [["R1", "R2"], ["G3"]], ["R5", "W+4"], color="G", phase="pending",
            pending_draw=4, previous_player=1),
        # after a catch the turn is not fresh, and the offender's hand may have changed
        pos(CL2, [["R1", "R2"], ["G3"]], ["R5", "W+4"], color="G", phase="pending",
            pending_draw=4, previous_player=1, wild_draw_four_bluff=True, turn_fresh=False,
            decisions=1),
        pos(CL3, [["R1", "R2"], ["R3"], ["G1"]], ["W+4"], color="G", phase="pending",
            pending_draw=4, previous_player=2, decisions=1),
        pos(CL3, [["R1", "R2"], ["R3"], ["G1"]], ["R+2"], phase="pending", pending_draw=2,
            previous_player=1, direction=1, current_player=2, decisions=1),
        pos(STACK2, [["R1", "R2"], ["R3"]], ["R+2", "W+4"], color="G", phase="pending",
            pending_draw=6, previous_player=1, decisions=1),
        pos(CL2, [["R1", "R2"], ["R3"]], ["W"], phase="color", color=None, color_then_play=True),
        pos(WIKI2, [["R1", "R2"], ["R3"]], ["W"], phase="color", color=None, turn_fresh=True),
        pos(U18_SWAP3, [["R1"], ["R3"], ["G1"]], ["WC"], phase="target", color=None,
            turn_fresh=False),
        pos(U18_SWAP3, [["R1"], ["R3"], ["G1"]], ["WS"], phase="color", color=None,
            turn_fresh=False, exposed=0),
        base2(exposed=1, previous_player=1),
        base2(called=[True, True]),
        base2(scores=[499, 120], round=4, winner=1, decisions=400),
        terminated_single(),
        pos(U18_2, [[], ["R3", "GS"]], ["R5", "WS"], color=None, round=1, winner=0,
            terminated=True, turn_fresh=False, scores=[23, 0], decisions=3),
        base2(truncated=True, decisions=5000),
        base2(rng=str(2**64 - 1), decisions=MAX_COUNT - 1, round=MAX_COUNT - 1, winner=0),
        base2(truncated=True, decisions=MAX_COUNT, round=MAX_COUNT, winner=1),
    ]
    for d in ok:   # the largest decision limit: a live game's decisions stay below its own
        g = VecGame.from_dict(d, max_decisions=MAX_COUNT)
        out = g.to_dict(0)
        assert out == {**d, "hands": [sorted(h, key=CARD_IDS.get) for h in d["hands"]]}


def test_missing_and_unknown_keys_are_named_together():
    d = base2(drop=("turn_fresh",), fresh=True)
    with pytest.raises(ValueError) as e:
        VecGame.from_dict(d)
    assert "'fresh' (unknown), 'turn_fresh' (missing)" in str(e.value)
    assert all(k in str(e.value) for k in POSITION_KEYS)  # the allowed keys are listed


# ---- indexes, JSON, seeds ------------------------------------------------------------------
@pytest.mark.parametrize("i", [-1, 3, True, False, 1.0, "0", None, np.float64(0)])
def test_game_index_out_of_range_or_not_an_integer(i):
    g = VecGame("classic", 3, seed=0, num_players=2)
    d = g.to_dict(0)
    before = states(g)
    with pytest.raises(ValueError, match=r"game index .*; allowed: an integer from 0 to 2") as a:
        g.to_dict(i)
    with pytest.raises(ValueError, match=r"game index") as b:
        g.set_position(i, d)
    assert str(a.value) == str(b.value)  # the same message for both
    assert unchanged(g, before)


def test_numpy_integer_game_index():
    g = VecGame("classic", 3, seed=0, num_players=2)
    d = g.to_dict(np.int64(2))
    g.set_position(np.int32(0), d)
    assert g.to_dict(0) == d


@pytest.mark.parametrize("text,match", [
    ("{", r"position JSON is malformed: Expecting property name"),
    ("", r"position JSON is malformed: Expecting value at line 1, column 1"),
    ("{'version': 1}", r"position JSON is malformed"),
    ("[1, 2]", r"a position must be a mapping \(dict\); got list"),
    ('{"version": 1, "version": 1}', r"position JSON is malformed: the key 'version' is given twice"),
    (b"\xff\xfe{", r"position JSON is malformed: not UTF-8 text \(invalid start byte at byte 0\)"),
    (5, r"position JSON must be text; got int; allowed: a str, bytes or bytearray of JSON$"),
    (None, r"position JSON must be text; got NoneType"),
])
def test_malformed_json_is_a_value_error(text, match):
    with pytest.raises(ValueError, match=match) as e:
        VecGame.from_json(text)
    assert not isinstance(e.value, json.JSONDecodeError)


def test_json_values_are_checked_like_dict_values():
    d = base2()
    text = json.dumps(d).replace('"scores": [0, 0]', '"scores": [NaN, 0]')
    with pytest.raises(ValueError, match=r"'scores'.*nan \(float\)"):
        VecGame.from_json(text)
    text = json.dumps(d).replace('"turn_fresh": true', '"turn_fresh": "true"')
    with pytest.raises(ValueError, match=r"'turn_fresh': 'true' \(str\)"):
        VecGame.from_json(text)
    g = VecGame.from_json(json.dumps(d))
    assert json.loads(g.to_json(0)) == d


def test_position_json_longer_than_the_limit_is_refused_before_it_is_read():
    """Before: 22 MB of position JSON took a second and 330 MB before the deck check refused
    it. The largest table's position, indented, stays far under the limit."""
    from ono_env.positions import MAX_POSITION_TEXT
    d = base2()
    d["hands"] = [d["hands"][0] * 100_000] + d["hands"][1:]   # a text of megabytes
    for text in (json.dumps(d), json.dumps(d).encode()):
        unit = "characters" if isinstance(text, str) else "bytes"
        with pytest.raises(ValueError, match=rf"^position JSON is {len(text):,} {unit} long; "
                                             rf"allowed: at most {MAX_POSITION_TEXT:,} {unit}$"):
            VecGame.from_json(text)
    big = VecGame("uno2018", 1, seed=1, num_players=10, hand_size=14, wild_cards=40,
                  wild_draw_four_cards=40, wild_shuffle_hands_cards=40,
                  wild_customizable_cards=40)
    text = json.dumps(big.to_dict(0), indent=8)
    assert len(text) < MAX_POSITION_TEXT // 20
    assert VecGame.from_json(text).to_dict(0) == big.to_dict(0)


# ---- engine fixes seen through positions -----------------------------------------------------
def test_a_drawn_wild_shuffle_hands_played_at_once_round_trips():
    g = VecGame("uno2018", 1, seed=65, num_players=2)
    act(g, "draw", "play WS")
    d = g.to_dict(0)
    assert d["drawn_card"] is None and d["phase"] == "color"
    assert VecGame.from_dict(d).to_dict(0) == d
    assert VecGame.from_json(g.to_json(0)).to_dict(0) == d


def _round_end_position():
    """A match truncated at the very decision that ended a round: phase 'round_end'."""
    rules = RuleSet.preset("basic", num_players=2, scoring="winner", target_score=100)
    g = VecGame(rules, 1, seed=1)
    rng = np.random.default_rng(1)
    actions = []
    while g.to_dict(0)["round"] == 0:
        actions.append(random_legal(g.legal_mask(), rng))
        g.step(actions[-1])
    assert not g.terminated[0]
    cut = VecGame(rules, 1, seed=1, max_decisions=len(actions))
    for a in actions:
        cut.step(a)
    d = cut.to_dict(0)
    assert d["phase"] == "round_end" and d["truncated"] and d["round"] == 1
    return d


def test_round_end_only_in_a_truncated_match():
    d = _round_end_position()
    g = VecGame.from_dict(d)
    assert g.to_dict(0) == d and not g.legal_mask()[0].any()
    assert g.play_random_until(np.full(1, -1, np.int64), np.ones(1, np.uint64),
                               np.zeros((1, 2))) == 0
    live = {**d, "truncated": False}  # the issue's position: no legal action, loops forever
    with pytest.raises(ValueError, match=r"'phase', 'terminated', 'truncated': phase='round_end'"):
        VecGame.from_dict(live)


# ---- reset(seeds=...) -------------------------------------------------------------------------
@pytest.mark.parametrize("seeds,match", [
    ([1, 2], r"seeds=\[1, 2\] \(list\); allowed: 3 integers"),
    ([1, 2, -1], r"seeds\[2\]=-1 \(int\)"),
    ([1, 2, 2**64], r"seeds\[2\]=18446744073709551616"),
    ([1, 2, 1.5], r"seeds\[2\]=1.5 \(float\)"),
    ([1, 2, True], r"seeds\[2\]=True \(bool\)"),
    ([1, 2, "3"], r"seeds\[2\]='3' \(str\)"),
    ("123", r"seeds='123' \(str\)"),
    (5, r"seeds=5 \(int\)"),
    (np.array([1.0, 2.0, 3.0]), r"seeds is a float64 array"),
    (np.array([1, 2, -3]), r"seeds\[2\]=-3"),
    (np.array([True, False, True]), r"seeds is a bool array"),
    (np.zeros((3, 1), np.uint64), r"seeds is a uint64 array of shape \(3, 1\)"),
])
def test_bad_reset_seeds(seeds, match):
    g = VecGame("classic", 3, seed=0, num_players=2)
    before = states(g)
    with pytest.raises(ValueError, match=match):
        g.reset(seeds=seeds)
    assert unchanged(g, before)


def test_reset_seeds_accepts_lists_and_arrays_of_generator_states():
    a = VecGame("classic", 3, num_players=2)
    a.reset(seeds=[int(s) for s in game_seeds(7, 3)])
    b = VecGame("classic", 3, num_players=2)
    b.reset(seeds=game_seeds(7, 3))
    c = VecGame("classic", 3, seed=7, num_players=2)
    assert [a.to_dict(i) for i in range(3)] == [b.to_dict(i) for i in range(3)] \
        == [c.to_dict(i) for i in range(3)]
    a.reset(seeds=[0, 2**64 - 1, 5])
    assert a.to_dict(1)["rng"] != str(2**64 - 1)  # consumed by the deal


def test_bounds_agree_with_the_game():
    assert MAX_COUNT == MAX_DECISIONS


# ---- property: mutants of real positions -----------------------------------------------------
CAP = 5000  # decisions of random play from an accepted mutant


@functools.cache
def valid_positions() -> tuple[dict, ...]:
    """Positions from seeded random play: every preset at 2-4 players plus rule sets that
    reach the rarer phases, the first of each kind of position seen in each."""
    configs = [RuleSet.preset(name, num_players=n) for name in PRESETS for n in (2, 3, 4)]
    configs += [U18_SWAP3, RuleSet.preset("uno2018", num_players=2, wild_customizable="swap_hands",
                                          wild_shuffle_hands_cards=3),
                RuleSet.preset("basic", num_players=3, scoring="penalty", target_score=60),
                RuleSet.preset("stacking", num_players=3, ono_penalty="swap_hands",
                               false_catch_penalty=4)]
    rng = np.random.default_rng(2024)
    out = []
    for k, rules in enumerate(configs):
        short = k % 2 == 1  # some games are truncated early
        g = VecGame(rules, 4, seed=k, max_decisions=int(rng.integers(20, 200)) if short else 5000)
        kinds = {}
        for _ in range(250):
            for i in range(4):
                d = g.to_dict(i)
                kind = (d["phase"], d["terminated"], d["truncated"], d["exposed"] is not None,
                        d["wild_draw_four_bluff"], any(d["called"]), d["round"] > 0)
                kinds.setdefault(kind, d)
            if g.finished.all():
                break
            g.step(random_legal(g.legal_mask(), rng))
        out += kinds.values()
    out.append(_round_end_position())
    return tuple(out)


JUNK = [None, True, False, 0, 1, -1, 2, 7, 10**12, 1.0, 0.5, float("nan"), "", "0", "false",
        "ab", "R5", "r5", "W+4", "play", [], [True], ["R5"], [5], [1, 2], {}, {"a": 1}]
CARD_LISTS = ("hands", "stock", "discard")


def plausible(d: dict, key: str) -> list:
    """Values of the right kind (or nearly) for ``key``: in range, just out of it, retyped."""
    hands = d.get("hands") if isinstance(d.get("hands"), list) else []
    P = len(hands) or 2
    seats = list(range(-1, P + 1))
    v = d.get(key)
    by_key = {
        "version": [2, 0, True, "1", 1.0],
        "phase": list(PHASE_NAMES) + ["Play"],
        "color": [None, "R", "Y", "G", "B", "r", 0],
        "current_player": seats + [True, "0", 0.0],
        "dealer": seats,
        "exposed": [None] + seats,
        "previous_player": [None] + seats,
        "winner": [None] + seats,
        "direction": [1, -1, 0, 2, True, -1.0],
        "pending_draw": [0, 2, 4, 6, 8, 1, -2, MAX_PENDING_DRAW, MAX_PENDING_DRAW + 2, "4"],
        "drawn_card": [None, "R5", "W", "WS", "W+4", "X", 5]
                      + [c for h in hands if isinstance(h, list) for c in h[:2]],
        "called": [[False] * P, [True] * P, [True] * (P + 1), ["false"] * P, [1] * P, "ab"],
        "scores": [[0] * P, [499] + [0] * (P - 1), [500] + [0] * (P - 1), [10**12] + [0] * (P - 1),
                   [-1] + [0] * (P - 1), [1.5] * P, [0] * (P + 1)],
        "round": [0, 1, 2, 5, -1, MAX_COUNT, MAX_COUNT + 1, True],
        "decisions": [0, 1, 50, 4999, -1, MAX_COUNT, MAX_COUNT + 1, 3.0],
        "rng": ["0", "1", str(2**64 - 1), str(2**64), "-1", "01", " 1", 12345, "abc", "1e3"],
        "turn_fresh": [True, False, "false", 0, 1],
        "wild_draw_four_bluff": [True, False, "true", 1],
        "color_then_play": [True, False, "false", 0],
        "terminated": [True, False, "false", 0, None],
        "truncated": [True, False, "true", 1],
    }
    out = list(by_key.get(key, []))
    if isinstance(v, int) and not isinstance(v, bool):
        out += [v - 2, v - 1, v + 1, v + 2]
    if isinstance(v, bool):
        out += [not v]
    return out


@st.composite
def mutants(draw, base: dict, pool: tuple[dict, ...] = ()):
    """(mutant, keys touched): ``base`` with one to three random changes (a key's value
    from ``pool``, positions of other games, among them)."""
    d = copy.deepcopy(base)
    touched: set[str] = set()
    donors = [p for p in pool if len(p["hands"]) == len(base["hands"])]
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["value", "value", "value", "remove", "add", "move", "move",
                                   "swap", "rename", "rules", "called", "drawn", "transplant",
                                   "transplant"]))
        keys = sorted(k for k in d if isinstance(k, str))
        if op == "value":
            key = draw(st.sampled_from(keys))
            choices = plausible(d, key) + JUNK
            d[key] = copy.deepcopy(draw(st.sampled_from(choices)))
            touched.add(key)
        elif op == "remove":
            key = draw(st.sampled_from(keys))
            del d[key]
            touched.add(key)
        elif op == "add":
            key = draw(st.sampled_from(["extra", "Phase", "hand", "seed", "color "]))
            d[key] = draw(st.sampled_from(JUNK))
            touched.add(key)
        elif op in ("move", "swap", "rename"):
            if not all(isinstance(d.get(k), list) for k in CARD_LISTS) or not all(
                    isinstance(h, list) for h in d["hands"]):
                continue
            places = [("hands", q) for q in range(len(d["hands"]))] + [("stock", None),
                                                                       ("discard", None)]
            cards_at = lambda p: d[p[0]] if p[1] is None else d["hands"][p[1]]  # noqa: E731
            src = draw(st.sampled_from([p for p in places if cards_at(p)] or [None]))
            if src is None:
                continue
            src_cards = cards_at(src)
            k = draw(st.sampled_from([len(src_cards) - 1, 0,
                                      draw(st.integers(0, len(src_cards) - 1))]))
            if op == "rename":
                src_cards[k] = draw(st.sampled_from(list(CARD_NAMES[:8]) + ["W", "W+4", "WS", "WC",
                                                    5, "r1", "X", None]))
                touched.add(src[0])
                continue
            dst = draw(st.sampled_from(places))
            dst_cards = cards_at(dst)
            if op == "move":
                card = src_cards.pop(k)
                at = draw(st.sampled_from([len(dst_cards), 0]))
                dst_cards.insert(at, card)
            else:
                if not dst_cards:
                    continue
                j = draw(st.integers(0, len(dst_cards) - 1))
                src_cards[k], dst_cards[j] = dst_cards[j], src_cards[k]
            touched.update({src[0], dst[0]})
        elif op == "rules":
            r = d.get("rules")
            choice = draw(st.sampled_from(["preset", "field", "junk", "drop"]))
            if choice == "preset":
                name = draw(st.sampled_from(sorted(PRESETS)))
                n = draw(st.sampled_from([2, 3, 4]))
                d["rules"] = RuleSet.preset(name, num_players=n).to_dict()
            elif choice == "field" and isinstance(r, dict):
                field, value = draw(st.sampled_from([
                    ("stacking", True), ("challenge", False), ("must_play_drawn", True),
                    ("voluntary_draw", False), ("scoring", "none"), ("target_score", 0),
                    ("target_score", 50), ("ono_penalty", "none"), ("wild_cards", 5),
                    ("wild_customizable", "swap_hands"), ("draw_until_playable", True),
                    ("stacking", "yes"), ("num_players", 1), ("hand_size", 2.0),
                ]))
                d["rules"] = {**r, field: value}
            elif choice == "drop" and isinstance(r, dict) and r:
                d["rules"] = {k: v for k, v in r.items() if k != draw(st.sampled_from(sorted(r)))}
            else:
                d["rules"] = draw(st.sampled_from(JUNK))
            touched.add("rules")
        elif op == "called" and isinstance(d.get("called"), list) and d["called"]:
            q = draw(st.integers(0, len(d["called"]) - 1))
            d["called"][q] = draw(st.sampled_from([True, False, "false", 1, None]))
            touched.add("called")
        elif op == "drawn":
            # a coherent pair: phase 'drawn' with a card of the acting hand
            try:
                hand = d["hands"][d["current_player"]]
                card = draw(st.sampled_from(hand)) if hand else None
            except (KeyError, IndexError, TypeError):
                continue
            d.update(phase="drawn", drawn_card=card, turn_fresh=False)
            touched.update({"phase", "drawn_card", "turn_fresh"})
        elif op == "transplant" and donors:
            # plausible combinations: some keys of another real position (same table size)
            donor = draw(st.sampled_from(donors))
            keys = draw(st.lists(st.sampled_from(sorted(set(POSITION_KEYS) - {
                "rules", "hands", "stock", "discard", "version"})), min_size=1, max_size=5,
                unique=True))
            for key in keys:
                d[key] = copy.deepcopy(donor[key])
            touched.update(keys)
    return d, touched


def canonical(d: dict, rules: RuleSet) -> dict:
    """What to_dict writes for an accepted position ``d``: hands in card-id order, the rules
    in full."""
    return {**d, "rules": rules.to_dict(),
            "hands": [sorted(h, key=CARD_IDS.get) for h in d["hands"]]}


@functools.cache
def game_for(rules_json: str) -> VecGame:
    return VecGame(RuleSet.from_dict(json.loads(rules_json)), 2, seed=9)


def cards_in(d: dict) -> int:
    return sum(map(len, d["hands"])) + len(d["stock"]) + len(d["discard"])


@settings(max_examples=200, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_positions_are_refused_by_name_or_play_to_their_end(data):
    pool = valid_positions()
    base = pool[data.draw(st.integers(0, len(pool) - 1), label="base")]
    m, touched = data.draw(mutants(base, pool), label="mutant")
    play_seed = data.draw(st.integers(0, 2**32), label="play seed")
    try:
        rules = RuleSet.from_dict(m["rules"])  # for the accepted branch
        g = VecGame.from_dict(m, max_decisions=min(MAX_DECISIONS, m["decisions"] + CAP))
    except (ValueError, KeyError, TypeError):
        with pytest.raises(ValueError) as refused:
            VecGame.from_dict(m)
        msg = str(refused.value)
        event("refused")
        assert type(refused.value) is ValueError
        assert any(repr(k) in msg for k in touched), (sorted(map(str, touched)), msg)
        # the same position through set_position changes no byte of a live batch
        h = game_for(json.dumps(base["rules"], sort_keys=True))
        before = states(h)
        with pytest.raises(ValueError):
            h.set_position(1, m)
        assert unchanged(h, before)
        return
    # accepted: stored exactly, and random legal play runs to the end keeping every card
    event("accepted")
    d = g.to_dict(0)
    assert d == canonical(m, rules)
    deck = rules.deck_size
    rng = np.random.default_rng(play_seed)
    for t in range(CAP + 1):
        if g.finished[0]:
            break
        mask = g.legal_mask()
        assert mask[0].any(), f"no legal action in {d}"
        g.step(random_legal(mask, rng))
        d = g.to_dict(0)
        assert cards_in(d) == deck
        if t % 97 == 0:
            assert VecGame.from_dict(d).to_dict(0) == d  # every position reached is valid
    assert g.finished[0]
    event("ended terminated" if g.terminated[0] else "ended truncated")
    assert VecGame.from_dict(d).to_dict(0) == d


def test_long_keys_and_names_from_a_file_are_cut_in_the_error():
    """Before: an unknown key, a preset's name or a duplicate key came back whole in the
    error (a megabyte key, a megabyte message; the web table sent it back as its answer)."""
    d = VecGame(RuleSet.preset("basic"), 1, seed=3).to_dict(0)
    big = "k" * 100_000
    for call in (lambda: VecGame.from_dict({**d, big: 1}),
                 lambda: VecGame.from_dict({**d, "rules": {"preset": big}}),
                 lambda: VecGame.from_json(json.dumps({big: 1}).replace("}", f', "{big}": 2}}')),
                 lambda: RuleSet.preset(big)):
        with pytest.raises(ValueError) as e:
            call()
        assert len(str(e.value)) < 1000 and "kkk..." in str(e.value)


def test_a_byte_order_mark_is_skipped_as_bytes_and_yaml_skip_it(tmp_path):
    """Before: a position's JSON text with a byte order mark was refused, the same bytes
    taken, and rules YAML took it too."""
    g = VecGame(RuleSet.preset("classic"), 1, seed=5)
    text = g.to_json(0)
    for marked in ("\ufeff" + text, ("\ufeff" + text).encode()):
        assert VecGame.from_json(marked).to_json(0) == text
    with pytest.raises(ValueError, match="position JSON is malformed"):
        VecGame.from_json("\ufeff\ufeff" + text)   # one mark, not any number
    rules = tmp_path / "r.yaml"
    rules.write_text("\ufeffpreset: ono\nnum_players: 3\n", encoding="utf-8")
    assert RuleSet.load(rules) == RuleSet.preset("ono", num_players=3)


def test_a_rules_link_in_a_loop_is_named_as_a_link(tmp_path):
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    with pytest.raises(ValueError, match="is a symbolic link that leads to no file"):
        RuleSet.load(loop)


def test_the_result_helpers_name_what_a_dict_lacks():
    from ono_env.positions import catch_succeeds, game_winners
    d = VecGame("ono", 1, seed=3, num_players=3).to_dict(0)
    assert game_winners(d) == [] and catch_succeeds(d, 0) is False
    # before: KeyError 'rules' / 'exposed', AttributeError for a list
    for bad, missing in [({}, "'terminated', 'scores', 'winner', 'rules'"),
                         ({k: v for k, v in d.items() if k != "scores"}, "'scores'"),
                         ([1], "'terminated', 'scores', 'winner', 'rules'")]:
        with pytest.raises(ValueError, match=f"^game_winners: the result .* lacks {missing}; allowed: "):
            game_winners(bad)
    with pytest.raises(ValueError, match=r"^game_winners: the result's rules .* lacks 'target_score'"):
        game_winners(d | {"rules": {"scoring": "none"}})
    assert game_winners({"terminated": True, "scores": [0, 0], "winner": 1},
                        RuleSet.preset("basic", num_players=2)) == [1]
    with pytest.raises(ValueError, match=r"^catch_succeeds: the position .* lacks 'exposed', "
                                         r"'previous_player', 'hands'"):
        catch_succeeds({}, 0)
