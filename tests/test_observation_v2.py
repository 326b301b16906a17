"""Observation version 2: one length for every table, only what the seat may know, and each
public-knowledge entry against what happened at the table (a swap, a challenge, a forced
draw, a play); version 1 is unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from ono_env import _engine as E
from ono_env import cards as C
from ono_env.game import VecGame
from ono_env.observation import (
    MAX_OPPONENTS,
    OBS_V2_SIZE,
    observation_layout,
    observation_scale,
    observation_size,
    observation_view,
    rules_features,
)
from ono_env.rules import PRESETS, resolve_rules

PRESET_NAMES = sorted(PRESETS)


def _random_steps(g: VecGame, rng: np.random.Generator, steps: int, on_step=None) -> None:
    for _ in range(steps):
        mask = g.legal_mask().copy()
        acts = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
        before = None if on_step is None else _snapshot(g)
        g.step(acts)
        if on_step is not None:
            on_step(before, acts, g)


def _snapshot(g: VecGame) -> dict:
    s = g.state
    return {"hands": s.hands.copy(), "current": s.current.copy(), "previous": s.previous.copy(),
            "color": s.color.copy(), "top": np.array([s.discard[i, s.discard_len[i] - 1]
                                                      for i in range(g.num_games)]),
            "hand_len": s.hand_len.copy(), "phase": s.phase.copy(), "bluff": s.bluff.copy(),
            "round": s.round.copy(), "decisions": s.decisions.copy()}


def _same_deal(before: dict, g: VecGame, i: int) -> bool:
    """The step did not end the round (a new deal, or a new episode)."""
    return (g.state.round[i] == before["round"][i] and g.state.decisions[i] > before["decisions"][i]
            and g.state.phase[i] != E.PH_ROUND_END)


def _code(c: int) -> np.ndarray:
    out = np.zeros(21, np.float32)
    if c < 52:
        out[c // 13] = 1
        out[4 + c % 13] = 1
    else:
        out[4 + 13 + c - 52] = 1
    return out


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_one_length_for_every_table(name):
    for n in (2, 3, 4, 6, 10):
        rules = resolve_rules(name, num_players=n)
        assert observation_size(rules, 2) == OBS_V2_SIZE
        g = VecGame(rules, 3, seed=n, observation_version=2, autoreset=True)
        _random_steps(g, np.random.default_rng(n), 20)
        obs = g.observe(0)
        assert obs.shape == (3, OBS_V2_SIZE)
        v = observation_view(obs, rules, 2)
        assert np.array_equal(v.opponents.present, np.tile(np.arange(MAX_OPPONENTS) < n - 1, (3, 1)))
        assert (v.players.argmax(axis=1) == n - 2).all() and (v.players.sum(axis=1) == 1).all()
        assert np.allclose(v.rules, rules_features(rules))       # the encoder's row = Python's
        assert np.array_equal(v.opponents.hand_size[:, :n - 1],
                              np.stack([g.state.hand_len[:, (1 + k) % n] for k in range(n - 1)], 1))
        assert (obs[:, v.opponents.hand_size.shape[1] * 0:] == obs).all()
        assert observation_scale(rules, 2).shape == (OBS_V2_SIZE,)
        assert observation_layout(rules, 2)[-1].stop == OBS_V2_SIZE


def test_version_1_is_unchanged_beside_version_2():
    for name in PRESET_NAMES:
        rules = resolve_rules(name, num_players=3)
        a = VecGame(rules, 4, seed=5, autoreset=True)
        b = VecGame(rules, 4, seed=5, autoreset=True, observation_version=2)
        for game in (a, b):
            _random_steps(game, np.random.default_rng(1), 40)
        # the same games; version 1 written by either (default of a, asked of b)
        assert np.array_equal(a.observe(1), b.observe(1, version=1))
        assert a.observe(1).shape == (4, observation_size(rules))
        assert np.array_equal(b.observe(2)[:, :239], a.observe(2)[:, :239])


def test_bad_version_is_refused():
    with pytest.raises(ValueError, match="observation_version=3; allowed: 1, 2"):
        VecGame("basic", 1, observation_version=3)
    with pytest.raises(ValueError, match="allowed: 1, 2"):
        VecGame("basic", 1).observe(0, version=0)
    for wrong in (2.0, True, "2", None):   # refused, never coerced
        with pytest.raises(ValueError, match=f"observation_version={wrong!r}; allowed: 1, 2"):
            VecGame("basic", 1, observation_version=wrong)
    assert VecGame("basic", 1, observation_version=np.int64(2)).observation_version == 2


@pytest.mark.parametrize("players", [2, 6, 10])
def test_every_environment_gives_version_2_with_its_space(players):
    """observation_version=2 on each adapter: the space has version 2's length and holds
    what reset and step return; a float version is refused there too."""
    import gymnasium as gym

    from ono_env.envs import ono_v0
    from ono_env.envs.gym_env import OnoEnv
    from ono_env.envs.gym_vector import OnoVectorEnv
    from ono_env.envs.sb3 import OnoVecEnv

    single = OnoEnv("uno2018", num_players=players, opponents="greedy", observation_version=2)
    obs, _ = single.reset(seed=1)
    assert single.observation_space.shape == (OBS_V2_SIZE,) and single.observation_space.contains(obs)
    vec = OnoVectorEnv(3, "uno2018", num_players=players, opponents="greedy",
                       observation_version=2)
    obs, _ = vec.reset(seed=1)
    assert vec.single_observation_space.shape == (OBS_V2_SIZE,) and obs.shape == (3, OBS_V2_SIZE)
    sb3 = OnoVecEnv("uno2018", num_envs=3, opponents="greedy", seed=1, num_players=players,
                    observation_version=2)
    obs = sb3.reset()
    assert sb3.observation_space.shape == (OBS_V2_SIZE,)
    assert all(sb3.observation_space.contains(row) for row in obs)
    sb3.step_async(np.array([np.flatnonzero(m)[0] for m in sb3.action_masks()]))
    assert sb3.step_wait()[0].shape == (3, OBS_V2_SIZE)
    aec = ono_v0.env(rules="uno2018", num_players=players, observation_version=2)
    aec.reset(seed=1)
    space = aec.observation_space(aec.agent_selection)["observation"]
    assert space.shape == (OBS_V2_SIZE,) and space.contains(aec.observe(aec.agent_selection)["observation"])
    for make in (lambda v: OnoVecEnv("basic", 2, observation_version=v),
                 lambda v: ono_v0.env(rules="basic", num_players=2, observation_version=v),
                 lambda v: OnoEnv("basic", num_players=2, observation_version=v)):
        with pytest.raises(ValueError, match=r"observation_version=2\.0; allowed: 1, 2"):
            make(2.0)
    assert isinstance(single, gym.Env)


@pytest.mark.parametrize("players", [2, 10])
def test_the_rllib_environments_give_version_2_with_its_space(players):
    pytest.importorskip("ray")
    from ono_env.envs.rllib_env import OBS_KEY, OnoMultiAgentEnv, OnoRLlibVectorEnv

    multi = OnoMultiAgentEnv({"rules": "ono", "num_players": players, "observation_version": 2})
    obs, _ = multi.reset(seed=2)
    (agent, seen), = obs.items()
    assert multi.observation_spaces[agent][OBS_KEY].shape == (OBS_V2_SIZE,)
    assert multi.observation_spaces[agent].contains(seen)
    vec = OnoRLlibVectorEnv({"rules": "ono", "num_players": players, "num_envs": 2,
                             "opponents": "greedy", "observation_version": 2})
    obs, _ = vec.reset(seed=2)
    assert vec.single_observation_space[OBS_KEY].shape == (OBS_V2_SIZE,)
    assert obs[OBS_KEY].shape == (2, OBS_V2_SIZE)
    with pytest.raises(ValueError, match=r"observation_version=2\.0; allowed: 1, 2"):
        OnoMultiAgentEnv({"observation_version": 2.0})


def _movable(s, i: int, q: int) -> np.ndarray:
    """The card types of seat ``q``'s hand in game ``i`` that may move: all but the card it
    has just drawn and is deciding whether to play (before, that card could go, and the
    engine then played a card the hand no longer held, a count wrapped below zero)."""
    counts = s.hands[i, q].astype(np.int64)
    if q == s.current[i] and s.drawn[i] >= 0:
        counts[s.drawn[i]] -= 1
    return np.flatnonzero(counts > 0)


def _hidden_swaps(g: VecGame, me: np.ndarray, rng: np.random.Generator) -> None:
    """Exchange hidden cards: one card between two opponents of ``me`` (sizes kept), and one
    card between an opponent's hand and the stock."""
    s = g.state
    n = g.num_players
    for i in range(g.num_games):
        opps = [q for q in range(n) if q != me[i] and len(_movable(s, i, q))]
        if len(opps) >= 2:
            a, b = rng.choice(opps, 2, replace=False)
            ca = rng.choice(_movable(s, i, a))
            cb = rng.choice(_movable(s, i, b))
            s.hands[i, a, ca] -= 1
            s.hands[i, b, ca] += 1
            s.hands[i, b, cb] -= 1
            s.hands[i, a, cb] += 1
        if opps and s.stock_len[i] > 0:
            q = rng.choice(opps)
            k = rng.integers(s.stock_len[i])
            c = rng.choice(_movable(s, i, q))
            s.hands[i, q, c] -= 1
            s.hands[i, q, s.stock[i, k]] += 1
            s.stock[i, k] = c
        rng.shuffle(s.stock[i, :s.stock_len[i]])
    s.held[:] = E.held_of(s.hands)


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_hidden_cards_never_change_an_observation(name):
    rng = np.random.default_rng(7)
    for n in (2, 4):
        g = VecGame(name, 16, seed=3, num_players=n, observation_version=2, autoreset=True)
        for _ in range(6):
            _random_steps(g, rng, 25)
            for seat in range(n):
                me = np.full(g.num_games, seat)
                before = g.observe(seat).copy()
                _hidden_swaps(g, me, rng)
                assert np.array_equal(g.observe(seat), before)


def test_a_swap_shows_each_side_the_other_hand():
    """uno2018's Wild Customizable swap and ono's catch: after a swap of a with b, a knows b
    holds a's old hand card for card, and b knows the same of a; third seats know nothing
    more of either hand."""
    seen = {"swaps": 0}

    def check(before, acts, g):
        for i, a in enumerate(acts):
            p = before["current"][i]
            if not (a >= C.A_TARGET or (a == C.A_CATCH and g.state.hand_len[i, p] == 1
                                        and before["hand_len"][i, p] > 1)):
                continue
            if not _same_deal(before, g, i):
                continue
            n = g.num_players
            other = (int(np.flatnonzero((g.state.hands[i] == before["hands"][i, p]).all(axis=1)
                                        & (np.arange(n) != p))[0]))
            seen["swaps"] += 1
            for me, them in ((p, other), (other, p)):
                obs = g.observe(me)[i:i + 1]
                v = observation_view(obs, g.rules, 2)
                k = (them - me) % n - 1
                assert np.array_equal(v.opponents.known_cards[0, k], g.state.hands[i, them])
                assert v.opponents.unknown[0, k] == 0
            for third in set(range(n)) - {p, other}:   # what it knew moved with the hands
                v = observation_view(g.observe(third)[i:i + 1], g.rules, 2)
                for q, r in ((p, other), (other, p)):
                    assert np.array_equal(v.opponents.known_cards[0, (q - third) % n - 1],
                                          third_before[i][third][(r - third) % n - 1])

    rng = np.random.default_rng(0)
    third_before: list = []
    for rules, n in ((dict(preset="uno2018", wild_customizable="swap_hands"), 3), ("ono", 2),
                     ("ono", 4)):
        g = VecGame(rules, 64, seed=1, num_players=n, observation_version=2, autoreset=True,
                    max_decisions=400)
        for _ in range(150):
            views = [observation_view(g.observe(q), g.rules, 2).opponents.known_cards.copy()
                     for q in range(n)]
            third_before = [[views[q][i] for q in range(n)] for i in range(64)]
            _random_steps(g, rng, 1, check)
    assert seen["swaps"] > 20


def test_a_challenge_shows_the_hand_to_the_challenger():
    seen = {"challenges": 0}

    def check(before, acts, g):
        for i, a in enumerate(acts):
            if a != C.A_CHALLENGE or not _same_deal(before, g, i):
                continue
            p, offender = before["current"][i], before["previous"][i]
            n = g.num_players
            v = observation_view(g.observe(p)[i:i + 1], g.rules, 2)
            k = (offender - p) % n - 1
            assert np.array_equal(v.opponents.known_cards[0, k], before["hands"][i, offender])
            drawn = g.state.hand_len[i, offender] - before["hand_len"][i, offender]
            assert drawn == (4 if before["bluff"][i] else 0)
            assert v.opponents.unknown[0, k] == drawn
            for third in set(range(n)) - {p, offender}:   # the others see nothing of it
                w = observation_view(g.observe(third)[i:i + 1], g.rules, 2)
                k3 = (offender - third) % n - 1
                assert np.array_equal(w.opponents.known_cards[0, k3], known[third][i, k3])
            seen["challenges"] += 1

    rng = np.random.default_rng(1)
    for n in (2, 3):
        g = VecGame("classic", 64, seed=2, num_players=n, observation_version=2,
                    autoreset=True, target_score=0, max_decisions=400)
        for _ in range(120):
            known = [observation_view(g.observe(q), g.rules, 2).opponents.known_cards.copy()
                     for q in range(n)]
            _random_steps(g, rng, 1, check)
    assert seen["challenges"] > 20


def test_a_forced_draw_shows_what_the_hand_lacks():
    """Without voluntary draws a draw shows that the hand held no card of the colour, none of
    the top card's rank and no wild: every other seat sees those lacks, covering the whole
    hand before the draw; the drawer's last turn then ended without a play."""
    seen = {"draws": 0}

    def check(before, acts, g):
        for i, a in enumerate(acts):
            if a != C.A_DRAW or not _same_deal(before, g, i):
                continue
            p = before["current"][i]
            n = g.num_players
            for me in set(range(n)) - {p}:
                v = observation_view(g.observe(me)[i:i + 1], g.rules, 2)
                k = (p - me) % n - 1
                lacks = v.opponents.lacks[0, k]
                assert lacks[before["color"][i]] == 1 and lacks[17] == 1
                if before["top"][i] < 52:
                    assert lacks[4 + before["top"][i] % 13] == 1
                size = g.state.hand_len[i, p]
                assert v.opponents.lacks_covered[0, k] == min(before["hand_len"][i, p], size)
                assert v.opponents.drew[0, k] == 1
            seen["draws"] += 1

    rng = np.random.default_rng(2)
    g = VecGame("basic", 64, seed=3, num_players=3, observation_version=2, autoreset=True,
                voluntary_draw=False, max_decisions=400)
    _random_steps(g, rng, 60, check)
    assert seen["draws"] > 50


def test_plays_are_the_history_and_use_up_known_cards():
    seen = {"plays": 0, "known_used": 0}

    def check(before, acts, g):
        for i, a in enumerate(acts):
            if a >= C.A_DRAW or not _same_deal(before, g, i):
                continue
            p = before["current"][i]
            c = int(C.ACTION_CARD[a])
            n = g.num_players
            me = (p + 1) % n
            v = observation_view(g.observe(me)[i:i + 1], g.rules, 2)
            k = (p - me) % n - 1
            assert np.array_equal(v.opponents.last_play[0, k], _code(c))
            if c >= 52 and C.ACTION_COLOR[a] >= 0:
                assert v.opponents.named_color[0, k, C.ACTION_COLOR[a]] == 1
            assert v.opponents.drew[0, k] == 0
            seen["plays"] += 1
            if known_before[i] is not None and known_before[i][k, c] > 0:
                assert v.opponents.known_cards[0, k, c] == known_before[i][k, c] - 1
                seen["known_used"] += 1

    rng = np.random.default_rng(3)
    g = VecGame("classic", 64, seed=4, num_players=2, observation_version=2, autoreset=True,
                target_score=0, max_decisions=400)
    known_before: list = [None] * 64
    for _ in range(200):
        v = observation_view(g.observe((g.state.current + 1) % 2), g.rules, 2)
        known_before = [v.opponents.known_cards[i].copy() for i in range(64)]
        _random_steps(g, rng, 1, check)
    assert seen["plays"] > 1000 and seen["known_used"] > 5


# ---- colour renaming ----------------------------------------------------------------------
def _renamed(d: dict, perm) -> dict:
    """A position with colour k (R Y G B) renamed perm[k]: every card and the colour."""
    from ono_env.cards import COLORS

    def card(name):
        if name is None or name[0] == "W":
            return name
        return COLORS[perm[COLORS.index(name[0])]] + name[1:]
    out = dict(d)
    out["hands"] = [[card(c) for c in hand] for hand in d["hands"]]
    out["stock"] = [card(c) for c in d["stock"]]
    out["discard"] = [card(c) for c in d["discard"]]
    out["drawn_card"] = card(d["drawn_card"])
    out["color"] = None if d["color"] is None else COLORS[perm[COLORS.index(d["color"])]]
    return out


@pytest.mark.parametrize("preset,players", [("basic", 2), ("ono", 3), ("ono", 6),
                                            ("uno2018", 4), ("stacking", 3), ("classic", 2),
                                            ("wikipedia", 10)])
def test_color_permutation_matches_the_engine_on_a_renamed_position(preset, players):
    """A position and its copy with the colours renamed, played side by side with the same
    moves (renamed): every seat's observation of the copy, in both versions, is the
    original's through obs_index, the legal masks through action_index, and the states stay
    each other's renaming (the history and public-knowledge fields fill as they play), up to
    a new round or a Wild Shuffle Hands, whose deals depend on the cards' ids."""
    from ono_env.observation import color_permutation

    rng = np.random.default_rng(players)
    checked = 0
    for seed in range(3):
        perm = [int(x) for x in rng.permutation(4)]
        start = VecGame(preset, 1, seed=seed, num_players=players)
        start.reset()
        d = start.to_dict(0)
        a, b = VecGame.from_dict(d), VecGame.from_dict(_renamed(d, perm))
        idx = {v: color_permutation(perm, a.rules, v) for v in (1, 2)}
        for _ in range(300):
            if a.finished[0] or a.to_dict(0)["round"] != d["round"]:
                break   # a new round deals a fresh deck, which is not renamed
            da, db = a.to_dict(0), b.to_dict(0)
            want = _renamed(da, perm)
            assert [sorted(h) for h in db["hands"]] == [sorted(h) for h in want["hands"]]
            assert {k: v for k, v in db.items() if k != "hands"} == \
                {k: v for k, v in want.items() if k != "hands"}
            for v, (oi, ai) in idx.items():
                for seat in range(players):
                    np.testing.assert_array_equal(b.observe(seat, version=v),
                                                  a.observe(seat, version=v)[:, oi])
                np.testing.assert_array_equal(b.legal_mask()[:, ai], a.legal_mask())
            act = int(rng.choice(np.flatnonzero(a.legal_mask()[0])))
            if act == C.A_PLAY_WS:
                break   # a Wild Shuffle Hands deals the hands' cards out in card-id order
            a.step(np.array([act]))
            b.step(np.array([idx[2][1][act]]))
            checked += 1
    assert checked > 100


@pytest.mark.parametrize("perm", [[0, 1, 2], [0, 1, 2, 2], [0, 1, 2, 4], "0123", [0.0, 1, 2, 3]])
def test_color_permutation_refuses_what_is_not_a_permutation(perm):
    from ono_env.observation import color_permutation

    with pytest.raises(ValueError, match="allowed: the numbers 0-3 in any order"):
        color_permutation(perm, resolve_rules("basic"), 2)


@pytest.mark.parametrize("answer, drew", [("accept", 1), ("challenge", 0)])
def test_a_turn_lost_to_a_failed_challenge_leaves_drew_as_it_was(answer, drew):
    # the challenger of an honest Wild Draw Four draws 4 + 2 and loses its turn; unlike
    # accept, this leaves its drew as it was (0 here): the shipped version-2 models were
    # trained so, and the published suite's games depend on it (docs/environments.md)
    from conftest import act, game_at

    from ono_env.rules import RuleSet

    rules = RuleSet.preset("classic", num_players=2)
    g = game_at(rules, [["W+4", "G1", "G2"], ["B1", "B2", "B3"]], ["R5"])
    g = VecGame.from_dict(g.to_dict(0), observation_version=2)
    act(g, "play W+4 G", answer)
    v = observation_view(g.observe(0), g.rules, 2)
    assert g.state.hand_len[0, 1] == (9 if answer == "challenge" else 7)
    assert v.opponents.drew[0, 0] == drew
