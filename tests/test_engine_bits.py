"""The engine's bit sets: the hands' card-type sets (``held``) stay equal to the counts, the
legal actions computed on bits equal a plain scan of the rules over every card type, the
public knowledge of each hand (``lacks``, ``known``) is true, and compiled random play takes
the same actions as a uniform choice over the legal mask."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from test_properties import PLAYERS, counter_actions, rule_sets

from ono_env import PRESETS, RuleSet, VecGame, game_seeds
from ono_env import _engine as E
from ono_env import cards as C
from ono_env.observation import PHASE_NAMES

PH = {name: k for k, name in enumerate(PHASE_NAMES)}


def reference_legal(game: VecGame, i: int) -> np.ndarray:
    """Game i's legal actions by scanning every card type of the hand against the rules
    (the engine's rules functions, written again without bits)."""
    r, s = game.rules, game.state
    row = np.zeros(C.NUM_ACTIONS, bool)
    if s.terminated[i] or s.truncated[i]:
        return row
    p, ph, col = int(s.current[i]), int(s.phase[i]), int(s.color[i])
    hand = s.hands[i, p]
    top = int(s.discard[i, s.discard_len[i] - 1])

    def draw_two(c):
        return c < 52 and c % 13 == C.RANK_DRAW_TWO

    def wd4_allowed():
        if r.wild_draw_four_restricted and not r.challenge:
            return not (col >= 0 and hand[13 * col: 13 * col + 13].any())
        return True

    def playable(c):
        if c >= 52:
            return c != C.WILD_DRAW_FOUR or wd4_allowed()
        return c // 13 == col or (top < 52 and top % 13 == c % 13)

    def can_stack(c):
        if c == C.WILD_DRAW_FOUR:
            return (top == C.WILD_DRAW_FOUR or draw_two(top)) and wd4_allowed()
        return draw_two(c) and draw_two(top)

    def mark(c):
        if c < 52:
            row[c] = True
        elif c == C.WILD_SHUFFLE_HANDS:
            row[C.A_PLAY_WS] = True
        elif c == C.WILD_CUSTOMIZABLE and r.wild_customizable == "swap_hands":
            row[C.A_PLAY_WC] = True
        else:
            base = {C.WILD: C.A_PLAY_W, C.WILD_DRAW_FOUR: C.A_PLAY_WD4}.get(c, C.A_PLAY_WC_COLOR)
            row[base: base + 4] = True

    call_ok = (r.ono_penalty != "none" and s.hand_len[i, p] == 2 and not s.called[i, p])
    catch_ok = False
    if s.fresh[i] and r.ono_penalty != "none":
        prev, e = int(s.previous[i]), int(s.exposed[i])
        if r.false_catch_penalty > 0:
            catch_ok = prev >= 0 and prev != p
        else:
            catch_ok = e >= 0 and e == prev and s.hand_len[i, e] == 1
    if ph == PH["play"]:
        plays = [c for c in range(C.NUM_CARD_TYPES) if hand[c] > 0 and playable(c)]
        for c in plays:
            mark(c)
        row[C.A_DRAW] = not plays or r.voluntary_draw
        row[C.A_CALL] = bool(plays) and call_ok
        row[C.A_CATCH] = catch_ok
    elif ph == PH["pending"]:
        row[C.A_ACCEPT] = True
        if r.stacking:
            stacks = [c for c in range(C.NUM_CARD_TYPES) if hand[c] > 0 and can_stack(c)]
            for c in stacks:
                mark(c)
            row[C.A_CALL] = bool(stacks) and call_ok
        row[C.A_CHALLENGE] = r.challenge and top == C.WILD_DRAW_FOUR
        row[C.A_CATCH] = catch_ok
    elif ph == PH["drawn"]:
        c = int(s.drawn[i])
        if playable(c):
            mark(c)
            row[C.A_CALL] = call_ok
        bluff = (c == C.WILD_DRAW_FOUR and r.wild_draw_four_restricted
                 and col >= 0 and hand[13 * col: 13 * col + 13].any())
        row[C.A_KEEP] = not (playable(c) and r.must_play_drawn and not bluff)
    elif ph == PH["color"]:
        row[C.A_COLOR: C.A_COLOR + 4] = True
    elif ph == PH["target"]:
        row[C.A_TARGET: C.A_TARGET + r.num_players - 1] = True
    return row


def lacked_types(codes: np.ndarray) -> np.ndarray:
    """(..., 56) bool: the card types of each lacks code (column S_LACKS), written again
    without bits: a coloured card by its colour or rank, a wild by its type."""
    codes = np.asarray(codes, np.int64)[..., None]
    c = np.arange(C.NUM_CARD_TYPES)
    colour, rank = np.minimum(c // 13, 3), c % 13
    coloured = ((codes >> colour) & 1) | ((codes >> (E.LACKS_RANK + rank)) & 1)
    wild = (codes >> (E.LACKS_WILD + np.maximum(c - 52, 0))) & 1
    return np.where(c < 52, coloured, wild).astype(bool)


def check_knowledge(game: VecGame) -> None:
    """The public knowledge of each hand is true: at least ``known`` of its cards are of
    types outside ``lacks``; and there is none where a draw reveals nothing (voluntary draw)."""
    s = game.state
    assert ((s.known >= 0) & (s.known <= s.hand_len)).all()
    outside = np.where(lacked_types(s.lacks), 0, s.hands.astype(np.int64)).sum(axis=2)
    assert (outside >= s.known).all(), "a hand breaks what is publicly known of it"
    if game.rules.voluntary_draw:
        assert not s.known.any() and not s.lacks.any()


def check_bits(game: VecGame, mask: np.ndarray) -> None:
    s = game.state
    assert np.array_equal(s.held, E.held_of(s.hands)), "held differs from the hand counts"
    check_knowledge(game)
    for i in range(game.num_games):
        assert np.array_equal(mask[i], reference_legal(game, i)), (
            f"game {i}: {game.to_dict(i)}")


def play(game: VecGame, steps: int) -> None:
    ids = np.arange(game.num_games)
    for t in range(steps):
        mask = game.legal_mask()
        check_bits(game, mask)
        game.step(counter_actions(mask, ids, t))


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("players", PLAYERS)
def test_bit_sets_equal_the_counts_and_the_rules(preset, players):
    game = VecGame(preset, 16, seed=21, num_players=players, autoreset=True)
    play(game, 120)


@pytest.mark.parametrize("overrides", [
    {"wild_customizable": "swap_hands", "wild_customizable_cards": 3,
     "wild_shuffle_hands_cards": 2},
    {"stacking": True, "challenge": False, "ono_penalty": "swap_hands"},
    {"wild_draw_four_restricted": True, "challenge": False, "must_play_drawn": True},
    # with challenge (uno2018's) a drawn Wild Draw Four may be a bluff, which keep answers
    {"must_play_drawn": True},
    {"draw_until_playable": True, "voluntary_draw": False, "false_catch_penalty": 4},
])
def test_bit_sets_under_rule_options(overrides):
    rules = RuleSet.preset("uno2018", num_players=3, **overrides)
    play(VecGame(rules, 16, seed=5, autoreset=True), 200)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=rule_sets())
def test_bit_sets_under_any_rule_set(rules):
    play(VecGame(rules, 8, seed=3, autoreset=True, skip_forced=True), 60)


@pytest.mark.parametrize("preset, players", [("classic", 2), ("basic", 4), ("uno2018", 3)])
def test_compiled_random_play_is_a_uniform_choice_over_the_legal_mask(preset, players):
    """play_random draws the (next % count)-th legal action in id order from each game's
    policy generator (seeded from game_seeds(seed ^ 0x5EED, B)): the same actions as that
    choice made from Python over the legal mask."""
    B, seed, steps = 8, 3, 150
    fast = VecGame(preset, B, seed=9, num_players=players)
    slow = VecGame(preset, B, seed=9, num_players=players)
    fast.play_random(steps, seed=seed)
    policy = [int(x) for x in game_seeds(seed ^ 0x5EED, B)]
    for _ in range(steps):
        done = slow.finished
        if done.any():
            slow.reset(which=done.copy())
        mask = slow.legal_mask()
        actions = np.zeros(B, np.int64)
        for i in range(B):
            legal = np.flatnonzero(mask[i])
            state = np.array([policy[i]], np.uint64)
            k = E._next_u53_py(state, 0) % len(legal)
            policy[i] = int(state[0])
            actions[i] = legal[k]
        slow.step(actions)
    assert [fast.to_dict(i) for i in range(B)] == [slow.to_dict(i) for i in range(B)]


LAZY_PROBE = """
from ono_env import VecGame, _engine as E
g = VecGame("basic", 4, seed=0)
g.play_random(50, seed=1)
print(len(E.step.signatures), len(E.observe.signatures))
g.step(g.legal_mask().argmax(axis=1))
print(len(E.step.signatures), len(E.observe.signatures))
try:
    E.step(*[0] * 18)  # any other types: refused, as an eagerly compiled kernel refuses
except TypeError:
    print("refused")
"""


def test_kernels_compile_on_first_use():
    """Random play compiles neither step nor observe; the first step compiles step for its
    one signature and closes it to others."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", LAZY_PROBE], capture_output=True, text=True,
                         timeout=600, check=True).stdout.split("\n")
    assert out[:3] == ["0 0", "1 0", "refused"]


def test_a_forced_draw_reveals_what_the_hand_lacks():
    # basic: no voluntary draw, so drawing shows every player that the hand held nothing
    # playable on R5: no red, no 5, no wild
    from conftest import act, game_at
    rules = RuleSet.preset("basic", num_players=2)
    game = game_at(rules, [["Y3", "G7", "B1"], ["Y9", "G2", "G4"]], ["R5"], stock_top=["R9"])
    s = game.state
    assert s.known[0].tolist() == [0, 0]
    act(game, "draw")
    lacked = lacked_types(s.lacks[0, 0])
    assert set(np.flatnonzero(lacked)) == (set(range(13)) | {5, 18, 31, 44} | {52, 53, 54, 55})
    assert s.known[0, 0] == 3 and s.hand_len[0, 0] == 4   # the drawn R9 is not covered
    act(game, "play R9")                                   # the drawn card: still 3 covered
    assert s.known[0, 0] == 3 and s.hand_len[0, 0] == 3
    act(game, "play Y9")
    act(game, "play Y3")      # may be a covered card: one fewer is known for sure
    assert s.known[0, 0] == 2 and s.hand_len[0, 0] == 2
    assert s.known[0, 1] == 0
    # a position holds no history: setting one starts the record empty
    game.set_position(0, game.to_dict(0))
    assert not s.known.any() and not s.lacks.any()
    # where the rules allow drawing with a playable card, a draw reveals nothing
    game = game_at(RuleSet.preset("classic", num_players=2),
                   [["Y3", "G7", "B1"], ["Y9", "G2", "G4"]], ["R5"], stock_top=["R9"])
    act(game, "draw")
    assert game.state.known[0, 0] == 0 and game.state.lacks[0, 0] == 0
