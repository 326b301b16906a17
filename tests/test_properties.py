"""Invariants under random legal play, over every preset at 2, 3, 4 and 10 players."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ono_env import PRESETS, RuleSet, VecGame, game_seeds
from ono_env.positions import read_position
from ono_env.rules import CHOICES

PLAYERS = (2, 3, 4, 10)
CASES = [(name, n) for name in PRESETS for n in PLAYERS]


def counter_actions(mask: np.ndarray, game_ids: np.ndarray, t: int) -> np.ndarray:
    """A legal action per row chosen by a hash of (game id, step): the same game gets the same
    choices whatever batch it runs in. Rows with no legal action get 0."""
    count = mask.sum(1)
    u = (game_ids.astype(np.uint64) * np.uint64(2654435761) + np.uint64(t * 40503 + 1)) % np.uint64(1 << 31)
    k = (u % np.maximum(count, 1).astype(np.uint64)).astype(np.int64)
    pos = np.cumsum(mask, 1) - 1
    hit = mask & (pos == k[:, None])
    return np.where(count > 0, np.argmax(hit, 1), 0)


def run(game: VecGame, steps: int, game_ids: np.ndarray, check=None) -> None:
    for t in range(steps):
        mask = game.legal_mask()
        if check:
            check(game, mask)
        game.step(counter_actions(mask, game_ids, t))
        if game.finished.all():
            break


def invariants(game: VecGame, mask: np.ndarray) -> None:
    s = game.state
    live = ~game.finished
    assert mask[live].any(1).all(), "an unfinished game has no legal action"
    assert not mask[~live].any(), "a finished game has a legal action"
    total = s.hand_len.sum(1) + s.stock_len + s.discard_len
    assert (total == game.rules.deck_size).all(), "cards are not conserved"
    assert (s.hands.sum((1, 2)) == s.hand_len.sum(1)).all()
    deck = game.rules.deck_counts
    for i in range(0, game.num_games, max(1, game.num_games // 4)):
        counts = s.hands[i].sum(0).astype(np.int64)
        counts += np.bincount(s.stock[i, : s.stock_len[i]], minlength=56)
        counts += np.bincount(s.discard[i, : s.discard_len[i]], minlength=56)
        assert (counts == deck).all(), "the multiset of cards changed"
    naming = (s.phase == 3) | (s.phase == 4)  # color, or target (the colour follows the swap)
    assert ((s.color[live] >= 0) != naming[live]).all(), "a colour exactly outside colour choices"
    # every position play reaches passes the position checks (docs/positions.md)
    i = int(s.decisions.sum()) % game.num_games
    read_position(game.to_dict(i), game.rules)


@pytest.mark.parametrize("preset,players", CASES)
def test_random_play_conserves_cards_and_always_offers_an_action(preset, players):
    game = VecGame(preset, 32, seed=5, num_players=players, autoreset=True)
    run(game, 300, np.arange(32), invariants)


@pytest.mark.parametrize("preset,players", CASES)
def test_same_seed_same_game(preset, players):
    a = VecGame(preset, 8, seed=123, num_players=players)
    b = VecGame(preset, 8, seed=123, num_players=players)
    ids = np.arange(8)
    run(a, 150, ids)
    run(b, 150, ids)
    assert [a.to_dict(i) for i in range(8)] == [b.to_dict(i) for i in range(8)]
    c = VecGame(preset, 8, seed=124, num_players=players)
    other = VecGame(preset, 8, seed=123, num_players=players)
    assert [c.to_dict(i) for i in range(8)] != [other.to_dict(i) for i in range(8)]


@pytest.mark.parametrize("preset,players", CASES)
def test_batch_equals_single(preset, players):
    B = 6
    batch = VecGame(preset, B, seed=77, num_players=players)
    run(batch, 200, np.arange(B))
    seeds = game_seeds(77, B)
    for i in (0, B - 1):
        single = VecGame(preset, 1, num_players=players)
        single.reset(seeds=seeds[i : i + 1])
        run(single, 200, np.array([i]))
        assert single.to_dict(0) == batch.to_dict(i)


def test_game_in_a_batch_of_4096_plays_as_alone():
    B = 4096
    batch = VecGame("classic", B, seed=2026, num_players=4)
    run(batch, 120, np.arange(B))
    seeds = game_seeds(2026, B)
    for i in (0, 1234, 4095):
        single = VecGame("classic", 1, num_players=4)
        single.reset(seeds=seeds[i : i + 1])
        run(single, 120, np.array([i]))
        assert single.to_dict(0) == batch.to_dict(i)


def test_autoreset_reports_the_end_then_deals_again():
    game = VecGame("basic", 16, seed=3, num_players=2, autoreset=True)
    ended = 0
    for t in range(400):
        r = game.step(counter_actions(game.legal_mask(), np.arange(16), t))
        done = r.terminated | r.truncated
        ended += done.sum()
        assert np.allclose(r.rewards[done].sum(1), 0.0)  # zero-sum
        assert (np.abs(r.rewards[done]).max(1) == 1.0).all()
        assert not r.rewards[~done].any()
        assert not game.finished.any()  # already dealt again
        assert (game.state.decisions[done] == 0).all()
    assert ended > 16


def test_finished_games_ignore_actions_until_reset():
    game = VecGame("basic", 4, seed=9, num_players=2)
    t = 0
    while not game.finished.any():
        game.step(counter_actions(game.legal_mask(), np.arange(4), t))
        t += 1
    i = int(np.flatnonzero(game.finished)[0])
    before = game.to_dict(i)
    actions = counter_actions(game.legal_mask(), np.arange(4), t)
    actions[i] = 0  # anything: a finished game ignores it
    r = game.step(actions)
    assert game.to_dict(i) == before and not r.rewards[i].any()
    game.reset(which=game.finished.copy())
    assert not game.finished[i] and game.legal_mask()[i].any()


def test_truncation_at_max_decisions():
    game = VecGame("ono", 8, seed=1, num_players=4, max_decisions=50)
    for t in range(60):
        game.step(counter_actions(game.legal_mask(), np.arange(8), t))
    assert game.finished.all()
    assert (game.state.decisions <= 50).all()
    assert game.truncated.any()


# ---- custom rule sets --------------------------------------------------------------------
@st.composite
def rule_sets(draw):
    opts = {k: draw(st.sampled_from(v)) for k, v in CHOICES.items()}
    opts.update({k: draw(st.booleans()) for k in
                 ("short_deck", "stacking", "voluntary_draw", "must_play_drawn",
                  "draw_until_playable", "reverse_skips_with_two_players",
                  "wild_draw_four_restricted")})
    opts["challenge"] = opts["wild_draw_four_restricted"] and not opts["stacking"] and draw(st.booleans())
    opts["ono_penalty_cards"] = draw(st.integers(1, 4))
    opts["false_catch_penalty"] = 0 if opts["ono_penalty"] == "none" else draw(st.sampled_from([0, 4]))
    opts["target_score"] = 0 if opts["scoring"] == "none" else draw(st.sampled_from([0, 200]))
    opts["wild_shuffle_hands_cards"] = draw(st.integers(0, 2))
    opts["wild_customizable_cards"] = draw(st.integers(0, 3))
    opts["num_players"] = draw(st.sampled_from(PLAYERS))
    return RuleSet.preset("classic", **opts)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=rule_sets(), seed=st.integers(0, 2**32))
def test_any_valid_rule_set_plays_without_breaking_invariants(rules, seed):
    game = VecGame(rules, 8, seed=seed, autoreset=True, skip_forced=seed % 2 == 0)
    run(game, 150, np.arange(8), invariants)


# ---- NUMBA_DISABLE_JIT ------------------------------------------------------------------
# Every seat's observations in both layouts, hashed at every step, then the final states.
# The ono rule set without voluntary draws makes forced draws, which version 2 records as
# what a hand lacks. Pure Python does NumPy arithmetic on the engine's int8 card tables,
# where an offset past 127 overflows and a shift past 7 bits wraps; the kernels cast first.
_SCRIPT = """
import hashlib, json, sys, numpy as np
sys.path.insert(0, {tests!r})
from test_properties import run
from ono_env import RuleSet, VecGame
out = []
def record(game, mask):
    h = hashlib.sha256()
    for seat in range(game.rules.num_players):
        for version in (1, 2):
            h.update(game.observe(seat, version=version).tobytes())
    out.append(h.hexdigest())
for rules in ("classic", "stacking", "uno2018", RuleSet.preset("ono", voluntary_draw=False)):
    g = VecGame(rules, 3, seed=4, num_players=3, autoreset=True)
    run(g, 100, np.arange(3), record)
    out.append([g.to_dict(i) for i in range(3)])
print(json.dumps(out))
"""


def test_pure_python_engine_plays_identically():
    tests = str(Path(__file__).parent)
    script = _SCRIPT.format(tests=tests)
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    slow = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=600, check=True)
    fast = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600, check=True)
    assert json.loads(slow.stdout) == json.loads(fast.stdout)
