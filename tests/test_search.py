"""Search agents (agents/search.py): legal in every decision of every preset, deterministic
given the generator, blind to hidden information, a budget of 1, forced decisions without
search, and a compiled greedy playout policy equal to the NumPy ``greedy``."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from ono_env import VecGame
from ono_env import cards as C
from ono_env.agents import GreedyAgent, make_agent
from ono_env.agents import _search as E
from ono_env.agents.search import MAX_WORLDS, SearchAgent
from ono_env.arena import run_arena
from ono_env.rules import PRESETS, RuleSet


def positions(rules: RuleSet, n: int, seed: int, most: int = 60) -> VecGame:
    """n live positions after random play of different lengths, under ``most`` decisions
    (finished games dealt again)."""
    game = VecGame(rules, n, seed=seed)
    steps = np.random.default_rng(seed).integers(0, most, size=n)
    rng = np.random.default_rng(seed + 1)
    for k in range(int(steps.max())):
        mask = game.legal_mask()
        acts = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in mask])
        game.step(acts, active=(steps > k) & ~game.finished)
        if game.finished.any():
            game.reset(which=game.finished)
    return game


def copy_game(game: VecGame) -> VecGame:
    other = VecGame(game.rules, game.num_games, seed=0)
    for a, b in zip(other.state.arrays, game.state.arrays):
        a[...] = b
    return other


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("players", [2, 4])
def test_search_agents_play_every_decision_of_every_preset(preset, players):
    # the driver checks every action against the legal mask; budget 1 is the smallest
    match = RuleSet.preset(preset).target_score > 0
    games = (2 if match else 8) if players == 2 else (4 if match else 24)
    res = run_arena(["pimc:1", "ismcts:1", "oracle-hands:1", "oracle:1"][:max(players, 2) + 1],
                    preset, players, num_games=games, seed=2, rating=False)
    assert len(res.records.length) >= games
    assert (res.records.length > 0).all()


def test_decisions_are_legal_and_deterministic_given_the_generator():
    for preset in ("basic", "uno2018", "wikipedia"):
        rules = RuleSet.preset(preset, num_players=3)
        game = positions(rules, 64, seed=4)
        rows = np.flatnonzero(~game.finished)
        mask = game.legal_mask()
        for spec in ("pimc:3", "pimc-random:3", "ismcts:20", "ismcts-random:7",
                     "oracle-hands:2", "oracle:2"):
            agent = make_agent(spec, rules)
            a = agent.act_game(game, rows, np.random.default_rng(11))
            b = agent.act_game(game, rows, np.random.default_rng(11))
            assert np.array_equal(a, b)
            assert mask[rows, a].all()
        # the true position is not changed by searching it
        before = [x.copy() for x in game.state.arrays]
        make_agent("pimc:2", rules).act_game(game, rows, np.random.default_rng(0))
        assert all(np.array_equal(x, y) for x, y in zip(before, game.state.arrays))


@pytest.mark.parametrize("spec", ["pimc:2", "ismcts:4", "pimc:3ms", "pimc-ppo:2"])
def test_a_search_asked_for_a_game_that_is_over_says_so(spec):
    # before: action -1, or (pimc-ppo) the prior's "chose an illegal action"
    rules = RuleSet.preset("basic", num_players=2)
    game = VecGame(rules, 1, seed=4)
    rng = np.random.default_rng(0)
    while not game.finished[0]:   # one game played to its end
        game.step(np.array([rng.choice(np.flatnonzero(game.legal_mask()[0]))]))
    with pytest.raises(ValueError, match=r"act_game: game 0 is over; allowed: rows of games "
                                         r"under way"):
        make_agent(spec, rules).act_game(game, np.array([0]), np.random.default_rng(0))


def test_arena_runs_with_search_agents_reproduce():
    a = run_arena(["pimc:2", "greedy"], "basic", 2, num_games=16, seed=3, rating=False)
    b = run_arena(["pimc:2", "greedy"], "basic", 2, num_games=16, seed=3, rating=False)
    assert np.array_equal(a.records.wins, b.records.wins)
    assert np.array_equal(a.records.length, b.records.length)
    c = run_arena(["pimc:2", "greedy"], "basic", 2, num_games=16, seed=4, rating=False)
    assert not np.array_equal(a.records.length, c.records.length)   # the seed is used


def _hidden_swaps(game: VecGame, me_rows: np.ndarray, rng: np.random.Generator) -> VecGame:
    """A copy of ``game`` where, in every row, a card moves between two opponents' hands
    (when they hold different cards) and between an opponent's hand and the stock, and the
    game's generator and the Wild Draw Four bluff flag change: everything the acting seat
    cannot see. Hand sizes, the discard pile and the acting seat's hand stay."""
    other = copy_game(game)
    s = other.state
    P = game.num_players
    for i in me_rows:
        me = int(s.current[i])
        opp = [q for q in range(P) if q != me]
        a, b = opp[0], opp[-1]
        if a != b:   # between two opponents' hands
            ca = [c for c in np.flatnonzero(s.hands[i, a]) if s.hands[i, b, c] == 0]
            cb = [c for c in np.flatnonzero(s.hands[i, b]) if s.hands[i, a, c] == 0]
            if ca and cb:
                x, y = rng.choice(ca), rng.choice(cb)
                s.hands[i, a, x] -= 1
                s.hands[i, b, x] += 1
                s.hands[i, b, y] -= 1
                s.hands[i, a, y] += 1
        n = int(s.stock_len[i])   # between a hand and the stock
        held = np.flatnonzero(s.hands[i, a])
        if n and len(held):
            k = int(rng.integers(n))
            x, y = int(rng.choice(held)), int(s.stock[i, k])
            if x != y:
                s.hands[i, a, x] -= 1
                s.hands[i, a, y] += 1
                s.stock[i, k] = x
        s.rng[i] ^= np.uint64(0x9E3779B97F4A7C15)
        s.bluff[i] = 1 - s.bluff[i]
    return other


@pytest.mark.parametrize("preset, players", [("basic", 2), ("classic", 4), ("wikipedia", 3),
                                             ("uno2018", 2)])
def test_no_peeking_hidden_swaps_do_not_change_decisions(preset, players):
    rules = RuleSet.preset(preset, num_players=players)
    game = positions(rules, 96, seed=7)
    mask = game.legal_mask()
    rows = np.flatnonzero(~game.finished & (mask.sum(axis=1) > 1))
    swapped = _hidden_swaps(game, rows, np.random.default_rng(1))
    assert not all(np.array_equal(x, y) for x, y in zip(game.state.arrays, swapped.state.arrays))
    specs = ["pimc:4", "pimc-random:4", "ismcts:30"]
    if (preset, players) == ("basic", 2):
        specs.append("pimc-ppo:4")   # its prior reads the seat's observation
        specs.append("pimc-ppo-playout:3")   # and its playouts the worlds' observations
    for spec in specs:
        agent = make_agent(spec, rules)
        a = agent.act_game(game, rows, np.random.default_rng(5))
        va = agent.last_values.copy()
        b = agent.act_game(swapped, rows, np.random.default_rng(5))
        assert np.array_equal(a, b), spec
        assert np.array_equal(va, agent.last_values), spec   # the very same evaluations
    # the test has power: the cheating oracle reads the hands, and its evaluations move
    oracle = make_agent("oracle-hands:4", rules)
    oracle.act_game(game, rows, np.random.default_rng(5))
    va = oracle.last_values.copy()
    oracle.act_game(swapped, rows, np.random.default_rng(5))
    assert not np.array_equal(va, oracle.last_values)


class _Peeker:
    """A game agent of a user's own that reads every hand and the stock order of the game
    it is given, steps that game, and chooses by what it read."""

    name, uses_game, last_values, steps = "peeker", True, None, True

    def act(self, obs, mask, rng):
        raise AssertionError("a game agent is asked act_game")

    def act_game(self, game, rows, rng):
        self.seen = [a[rows].copy() for a in (game.state.hands, game.state.stock)]
        self.given = game
        mask = game.legal_mask()[rows].copy()
        live = game.legal_mask().copy()   # it may step what it was given
        if self.steps:
            game.step(np.where(live.any(axis=1), live.argmax(axis=1), 0),
                      active=live.any(axis=1))
        # a legal action picked by what the hidden cards are
        key = (self.seen[0].astype(np.int64) * np.arange(C.NUM_CARD_TYPES)).sum(axis=(1, 2)) \
            + self.seen[1][:, :5].astype(np.int64).sum(axis=1)
        return np.array([np.flatnonzero(m)[int(k) % int(m.sum())] for m, k in zip(mask, key)])


@pytest.mark.parametrize("preset, players", [("basic", 2), ("ono", 4), ("uno2018", 6)])
def test_a_game_agent_that_does_not_declare_cheating_is_given_worlds_not_the_game(preset,
                                                                                  players):
    """The drivers' ``game_actions`` hands a user's game agent that declares no ``cheating``
    worlds dealt from its seat's view: the live game, hidden swaps in it, change nothing it
    sees or does (before: it was given the live game, every hand and the stock order, and
    its tables did not mark it cheating); what its seat may know is the same in them."""
    from ono_env.agents.search import game_actions

    rules = RuleSet.preset(preset, num_players=players)
    game = positions(rules, 48, seed=3)
    mask = game.legal_mask().copy()
    rows = np.flatnonzero(~game.finished)
    swapped = _hidden_swaps(game, rows, np.random.default_rng(1))
    before = [a.copy() for a in game.state.arrays]
    peeker = _Peeker()
    a = game_actions(peeker, game, rows, mask[rows], np.random.default_rng(5))
    seen, world = peeker.seen, peeker.given
    assert all(np.array_equal(x, y) for x, y in zip(before, game.state.arrays))  # untouched
    b = game_actions(peeker, swapped, rows, mask[rows], np.random.default_rng(5))
    assert np.array_equal(a, b)
    assert all(np.array_equal(x, y) for x, y in zip(seen, peeker.seen))
    assert all(mask[r, x] for r, x in zip(rows, a))
    # the worlds: what the seat may know is the live game's, the rest dealt afresh
    fresh = seat_world_of(game, rows)
    current = game.state.current[rows].astype(np.int64)
    for version in (1, 2):
        assert np.array_equal(fresh.observe(current, version=version),
                              game.observe(current, version=version)[rows])
    assert np.array_equal(fresh.legal_mask(), mask[rows])
    for j, r in enumerate(rows):   # the piles as the table saw them (their tails unused)
        assert fresh.to_dict(j)["discard"] == game.to_dict(int(r))["discard"]
    me = np.arange(len(rows))
    assert np.array_equal(fresh.state.hands[me, current], game.state.hands[rows, current])
    assert not np.array_equal(fresh.state.hands, game.state.hands[rows])
    assert world.num_games == len(rows) and world.autoreset == game.autoreset
    again = VecGame(rules, 4, seed=1, autoreset=True)   # a world keeps the game's autoreset
    assert seat_world_of(again, np.arange(4)).autoreset
    # the test has power: declaring cheating gives it the live game, and the swaps move it
    # (and must leave that as it found it)
    peeker.cheating = True
    with pytest.raises(ValueError, match="act_game changed the game it was given"):
        game_actions(peeker, copy_game(game), rows, mask[rows], np.random.default_rng(5))
    peeker.steps = False
    game_actions(peeker, game, rows, mask[rows], np.random.default_rng(5))
    first = peeker.seen
    game_actions(peeker, swapped, rows, mask[rows], np.random.default_rng(5))
    assert not all(np.array_equal(x, y) for x, y in zip(first, peeker.seen))
    # a SearchAgent's subclass is given worlds too, whatever method it overrides, and so is
    # an instance with a method set on it (before: any SearchAgent the live game); only a
    # SearchAgent itself, with no method set on the instance, the live game

    class Subclass(SearchAgent):
        def act_game(self, game, rows, rng):
            Subclass.given = game
            return super().act_game(game, rows, rng)

    class Inner(SearchAgent):   # the method that copies the seat's view, its own
        def _act_game(self, game, rows, rng):
            Subclass.given = game
            return super()._act_game(game, rows, rng)

    class Helper(SearchAgent):   # keeps both, overrides what _act_game calls with the game
        def _prior_choices(self, game, rows, rng):
            Subclass.given = game
            return super()._prior_choices(game, rows, rng)

    patched = SearchAgent(rules, 2)   # and one patched on an instance
    patched._act_game = lambda g, r, rng: (setattr(Subclass, "given", g),
                                           SearchAgent._act_game(patched, g, r, rng))[1]
    helped = SearchAgent(rules, 2)
    helped._prior_choices = lambda g, r, rng: (setattr(Subclass, "given", g),
                                               SearchAgent._prior_choices(helped, g, r, rng))[1]
    for agent in (Subclass(rules, 2), Inner(rules, 2), Helper(rules, 2), patched, helped):
        Subclass.given = None
        game_actions(agent, game, rows, mask[rows], np.random.default_rng(5))
        assert Subclass.given is not game and Subclass.given.num_games == len(rows)
    plain = SearchAgent(rules, 2)   # the class's own: the live game, no world dealt
    import ono_env.agents.search as search_module
    dealt = []
    real = search_module.seat_world
    search_module.seat_world = lambda *a: dealt.append(a) or real(*a)
    try:
        game_actions(plain, game, rows, mask[rows], np.random.default_rng(5))
    finally:
        search_module.seat_world = real
    assert dealt == []


def seat_world_of(game: VecGame, rows: np.ndarray) -> VecGame:
    from ono_env.agents.search import seat_world

    return seat_world(game, rows, np.random.default_rng(0))


def test_a_users_game_agent_plays_the_arena_unmarked_and_reproducibly():
    """Given worlds, a user's game agent plays the arena like any fair agent: seeded runs
    reproduce, its label has no cheating mark."""
    runs = [run_arena([_Peeker(), "greedy", "color"], "ono", 3, num_games=12, seed=4, rating=False)
            for _ in range(2)]
    assert np.array_equal(runs[0].records.wins, runs[1].records.wins)
    assert np.array_equal(runs[0].records.length, runs[1].records.length)
    assert "peeker" in runs[0].format_table() and "cheating" not in runs[0].format_table()


def test_pimc_ppo_keeps_the_policy_choice_unless_clearly_beaten():
    rules = RuleSet.preset("basic", num_players=2)
    game = positions(rules, 128, seed=12)
    mask = game.legal_mask().copy()
    rows = np.flatnonzero(~game.finished)
    ppo = make_agent("ppo-basic-2p", rules)
    obs = game.observe(game.state.current.astype(np.int64))[rows]
    policy = ppo.act(obs, mask[rows], np.random.default_rng(0))
    agent = make_agent("pimc-ppo:6", rules)
    assert agent.prior.name == "ppo-basic-2p" and agent.margin == pytest.approx(1.2 / 6 ** 0.5)
    acts = agent.act_game(game, rows, np.random.default_rng(3))
    assert mask[rows, acts].all()
    assert np.array_equal(acts, agent.act_game(game, rows, np.random.default_rng(3)))
    v, k = agent.last_values, np.arange(len(rows))
    plain = make_agent("pimc-plain:6", rules).act_game(game, rows, np.random.default_rng(3))
    changed = acts != policy
    assert 0 < changed.sum() < (plain != policy).sum()   # some overrides, fewer than plain's
    assert np.array_equal(agent.last_prior, policy)   # the choice it kept or overrode
    # a call with no rows leaves no earlier rows behind (before: the last call's were kept)
    assert agent.act_game(game, rows[:0], np.random.default_rng(3)).shape == (0,)
    assert (agent.last_prior.shape, agent.last_values.shape, agent.last_worlds.shape) == \
        ((0,), (0, v.shape[1]), (0,))
    # overridden only where the search's choice beats the policy's by more than the margin
    assert (v[k, acts] - v[k, policy] > agent.margin)[changed].all()
    assert (v[k, acts] >= v.max(axis=1) - 1e-9)[changed].all()
    # a margin nothing beats: the policy itself
    a = SearchAgent(rules, 6, margin=2.0, prior=ppo, name="x")
    assert np.array_equal(a.act_game(game, rows, np.random.default_rng(3)), policy)
    assert np.array_equal(a.last_prior, policy)
    # a prior with no margin, which it would never read, or with a search agent, is refused
    # (before: the first taken as the plain search, named "prior at margin -1"; the second
    # refused at its first decision); so is a margin of an ismcts search, which reads none
    for kwargs, said in ((dict(margin=-1.0, prior=ppo), r"the prior is read only with a "
                                                         r"margin of 0 or more"),
                         (dict(margin=0.1, prior=make_agent("pimc:2", rules)),
                          r"a search agent; allowed: an agent that chooses from the obs"),
                         (dict(margin=5.0, method="ismcts"), r"^margin = 5.0: an ismcts search "
                                                             r"keeps no prior's choice")):
        with pytest.raises(ValueError, match=said):
            SearchAgent(rules, 6, **kwargs)
    # no specialist at basic 3 players: the generalist is the prior
    assert make_agent("pimc-ppo", RuleSet.preset("basic", num_players=3)).prior.name == "ppo-any"
    with pytest.raises(ValueError, match=r"prior = .*allowed: None, or for a pimc search"):
        SearchAgent(rules, 4, method="ismcts", prior=ppo)
    # the prior's answer is checked as every agent's is (before: 0.7 past an action was cut
    # to it, an id past the actions an IndexError, None a TypeError)
    class Odd:
        def __init__(self, answer):
            self.answer, self.name = answer, "odd"

        def act(self, obs, mask, rng):
            return self.answer(mask)

        def __repr__(self):
            return "Odd()"
    for answer, message in ((lambda m: m.argmax(axis=1) + 0.7, "Odd().act returned float64"),
                            (lambda m: np.full(len(m), 99), "Odd() chose illegal action 99"),
                            (lambda m: None, "Odd().act returned object ()")):
        odd = SearchAgent(rules, 2, margin=0.1, prior=Odd(answer), name="odd")
        with pytest.raises(ValueError, match=r"^SearchAgent\('odd'.*: the prior: "
                                             + re.escape(message)):
            odd.act_game(game, rows, np.random.default_rng(3))
    # the cheating ceiling with the same prior: only what it sees differs from pimc-ppo
    oracle = make_agent("oracle-ppo:6", rules)
    assert oracle.cheating and oracle.view == "hands" and oracle.prior.name == ppo.name
    assert oracle.margin == make_agent("pimc-ppo:6", rules).margin


def test_a_forced_decision_is_returned_without_search_and_budget_one_works():
    rules = RuleSet.preset("classic", num_players=2)
    game = positions(rules, 256, seed=9)
    mask = game.legal_mask()
    one = np.flatnonzero(~game.finished & (mask.sum(axis=1) == 1))
    many = np.flatnonzero(~game.finished & (mask.sum(axis=1) > 1))
    assert len(one) and len(many)
    for spec in ("ismcts:1", "pimc:1"):
        agent = make_agent(spec, rules)
        acts = agent.act_game(game, one, np.random.default_rng(0))
        assert np.array_equal(acts, mask[one].argmax(axis=1))
        assert (agent.last_values == -1).all()                   # nothing was evaluated
        assert (agent.last_worlds == 0).all()
        assert mask[many, agent.act_game(game, many, np.random.default_rng(0))].all()
        assert (agent.last_worlds == 1).all()
    acts = agent.act_game(game, many, np.random.default_rng(0))
    assert mask[many, acts].all()
    vals = agent.last_values
    assert ((vals >= 0) == mask[many]).all() and (vals <= 1).all()


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("players", [2, 4])
def test_compiled_greedy_equals_the_numpy_greedy(preset, players):
    rules = RuleSet.preset(preset, num_players=players)
    game = positions(rules, 400, seed=players)
    live = ~game.finished
    mask = game.legal_mask().copy()
    obs = game.observe(game.state.current.astype(np.int64))
    want = GreedyAgent(rules).scores(obs)
    got = np.zeros((game.num_games, C.NUM_ACTIONS))
    E.baseline_scores(*game.state.arrays, game.internals.params, E.POLICY_GREEDY,
                      np.ascontiguousarray(live), got, np.zeros(16))
    for i in np.flatnonzero(live):
        legal = mask[i]
        assert np.allclose(got[i, legal], want[i, legal], atol=1e-4), (i, np.flatnonzero(legal))
        best = np.flatnonzero(np.isclose(want[i], want[i, legal].max(), atol=1e-4) & legal)
        top = np.flatnonzero(np.isclose(got[i], got[i, legal].max(), atol=1e-4) & legal)
        assert np.array_equal(best, top)


def test_names_budgets_and_refusals():
    rules = RuleSet.preset("basic", num_players=2)
    assert make_agent("pimc", rules).worlds == 64
    assert make_agent("pimc:200", rules).worlds == 200
    assert make_agent("ismcts", rules).method == "ismcts" and make_agent("ismcts:7", rules).worlds == 7
    a = make_agent("oracle:3", rules)
    assert a.cheating and "CHEATING" in repr(a) and a.name == "oracle:3"
    assert not make_agent("pimc:3", rules).cheating
    colors = SearchAgent(rules, 3, view="colors", name="colors:3")   # knows the hands' colours
    assert colors.cheating and "CHEATING" in repr(colors)
    game = positions(rules, 16, seed=1)
    rows = np.flatnonzero(~game.finished)
    assert game.legal_mask()[rows, colors.act_game(game, rows, np.random.default_rng(0))].all()
    with pytest.raises(ValueError, match=r"view = 'colours'; allowed: fair, hands, all, colors"):
        SearchAgent(rules, 3, view="colours")
    for bad in ("pimc:0", "pimc:x", "pimc:", "ismcts:-3"):
        with pytest.raises(ValueError, match="number of worlds"):
            make_agent(bad, rules)
    with pytest.raises(ValueError, match="plays only through"):
        make_agent("pimc", rules).act(np.zeros((1, 241), np.float32), np.ones((1, 85), bool),
                                      np.random.default_rng())
    with pytest.raises(ValueError, match="policy = 'genius'; allowed: random, greedy, color, defensive"):
        SearchAgent(rules, 4, policy="genius")
    with pytest.raises(ValueError, match="2-player 'basic' rules"):
        make_agent("pimc", rules).act_game(VecGame("basic", 2, seed=0, num_players=3),
                                           np.array([0]), np.random.default_rng())


def test_search_beats_random_and_the_oracle_beats_greedy():
    res = run_arena(["pimc:8", "random"], "basic", 2, num_games=200, seed=1, rating=False)
    assert res.agent_rows()[0]["win_rate"] > 0.6
    res = run_arena(["oracle:4", "greedy"], "basic", 2, num_games=200, seed=1, rating=False)
    assert res.agent_rows()[0]["win_rate"] > 0.75


def test_a_search_agent_is_an_environment_opponent():
    from ono_env.envs.gym_env import OnoEnv

    env = OnoEnv(rules="basic", num_players=2, opponents=["pimc:2"])
    env.reset(seed=0)
    for _ in range(500):
        mask = env.action_masks()
        _obs, _reward, term, trunc, _info = env.step(int(np.flatnonzero(mask)[0]))
        if term or trunc:
            break
    assert term or trunc


@pytest.mark.parametrize("agent, module", [("pimc:4", "_search"), ("greedy", "_baselines")])
def test_compiled_agent_kernels_load_only_when_such_an_agent_plays(agent, module):
    """``import ono_env`` (and its agents) imports neither the search kernels nor the compiled
    baselines: making an agent does not, only playing it does."""
    import subprocess
    import sys
    code = ("import sys, ono_env, ono_env.agents, ono_env.arena; "
            f"from ono_env.agents import make_agent; make_agent({agent!r}, 'basic'); "
            f"print('ono_env.{module}' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("policy", ["color", "defensive"])
def test_every_compiled_baseline_is_a_playout_policy(policy):
    """Playouts take any baseline (compiled, ono_env.agents._baselines); two such agents with the
    same seed play the same games."""
    rules = RuleSet.preset("basic", num_players=2)
    runs = [run_arena([SearchAgent(rules, 2, policy=policy), "greedy"], rules, 2, num_games=8,
                      seed=5, rating=False) for _ in range(2)]
    assert (runs[0].records.length > 0).all()
    assert np.array_equal(runs[0].records.wins, runs[1].records.wins)
    assert np.array_equal(runs[0].records.length, runs[1].records.length)


@pytest.mark.parametrize("name, players", [("ppo-basic-2p", 2), ("ppo-basic-4p", 4),
                                           ("ppo-classic-2p", 2)])
def test_the_compiled_playout_network_equals_the_numpy_network(name, players):
    """The network the playouts run (ono_env.agents._search.pack_network, network_logits) computes
    the shipped policy's logits (within the rational tanh's error) and picks its action."""
    rules = RuleSet.preset(name.split("-")[1], num_players=players)
    policy = make_agent(name, rules)
    game = positions(rules, 300, seed=players + 20)
    live = np.flatnonzero(~game.finished)
    mask = np.ascontiguousarray(game.legal_mask()[live])
    obs = np.ascontiguousarray(game.observe(game.state.current.astype(np.int64))[live])
    _check_network(policy.net, obs, mask, policy.act(obs, mask, np.random.default_rng(0)))


@pytest.mark.parametrize("E_, H", [(6, 24), (160, 8), (6, None)])
def test_the_compiled_playouts_run_a_version_2_network(E_, H):
    """A network over version-2 observations (an opponent encoder) runs in the compiled
    playouts as in NumPy, and a search agent plays with it as its playout policy. An
    encoder of 160 makes the encoded features (272 + 9 * 160) wider than the observation
    and every layer: the kernels' scratch must hold them (it held the widest of those, and
    the playouts wrote past its end). ``H=None``: no hidden layer, the encoded features
    straight into the output layer (before: the playouts read the raw observation there)."""
    from ono_env.agents.learned import LearnedAgent, PolicyNet
    from ono_env.agents.search import _kernels
    from ono_env.observation import OBS2_OPPONENTS, OPPONENT_SIZE, observation_scale

    rules = RuleSet.preset("ono", num_players=3)
    rng = np.random.default_rng(5)
    enc = (rng.normal(0, 0.3, (E_, OPPONENT_SIZE)).astype(np.float32),
           rng.normal(0, 0.3, E_).astype(np.float32))
    features = OBS2_OPPONENTS + 9 * E_
    hidden = [] if H is None else [(rng.normal(0, 0.2, (H, features)).astype(np.float32),
                                    rng.normal(0, 0.2, H).astype(np.float32))]
    layers = hidden + [(rng.normal(0, 1.0 if hidden else 0.2, (85, H or features)).astype(np.float32),
                        np.zeros(85, np.float32))]
    net = PolicyNet(observation_scale(rules, 2), layers, "tanh", None, enc)
    game = VecGame(rules, 200, seed=9, observation_version=2, autoreset=True)
    for _ in range(30):
        m = game.legal_mask()
        game.step(np.array([rng.choice(np.flatnonzero(r)) for r in m]))
    mask = game.legal_mask().copy()
    obs = np.ascontiguousarray(game.observe(game.state.current.astype(np.int64)))
    _check_network(net, obs, mask)
    # two worlds: each of the search's decisions plays them out with the network
    agent = SearchAgent(rules, 2, LearnedAgent(net, rules, "v2"))
    scratch = agent._playout_args(game, _kernels()[4])[1][3]
    assert scratch.shape == (2, max(OBS2_OPPONENTS + 9 * E_, obs.shape[1]))
    res = run_arena([agent, "greedy", "greedy"], rules, num_games=6, seed=3, rating=False)
    assert res.agent_rows()[0]["games"] == 6


def _check_network(net, obs, mask, want_choice=None):
    weights, shape = E.pack_network(net.scale, net.layers, net.activation, net.encoder)
    got = np.zeros(mask.shape, np.float32)
    choice = np.zeros(len(obs), np.int64)
    E.network_logits(obs, mask, weights, shape, E.network_scratch(shape), got, choice)
    want = net._mlp(obs, net.layers)
    assert np.allclose(got[mask], want[mask], atol=2e-3 * (1 + np.abs(want[mask]).max()))
    assert np.isneginf(got[~mask]).all()
    masked = np.where(mask, want, -np.inf)
    top2 = np.sort(masked, axis=1)[:, -2:]
    clear = (top2[:, 1] - top2[:, 0] > 0.05) & mask.any(axis=1)
    assert clear.sum() > len(obs) // 4
    assert np.array_equal(choice[clear], masked.argmax(axis=1)[clear])
    if want_choice is not None:
        assert np.array_equal(choice[clear], want_choice[clear])
    return choice


@pytest.mark.parametrize("activation, hidden", [("relu", [32, 16, 8]), ("tanh", [])])
def test_the_playout_network_takes_any_depth_and_activation(activation, hidden):
    from ono_env.agents.learned import PolicyNet
    rules = RuleSet.preset("basic", num_players=2)
    game = positions(rules, 200, seed=31)
    live = np.flatnonzero(~game.finished)
    mask = np.ascontiguousarray(game.legal_mask()[live])
    obs = np.ascontiguousarray(game.observe(game.state.current.astype(np.int64))[live])
    rng = np.random.default_rng(0)
    sizes = [obs.shape[1]] + hidden + [C.NUM_ACTIONS]
    layers = [(rng.normal(0, 1 / np.sqrt(i), (o, i)).astype(np.float32),
               rng.normal(0, 0.1, o).astype(np.float32)) for i, o in itertools.pairwise(sizes)]
    scale = rng.uniform(0.5, 2.0, obs.shape[1]).astype(np.float32)
    _check_network(PolicyNet(scale, layers, activation), obs, mask)


def test_learned_playouts_are_legal_deterministic_and_checked():
    """A learned policy as the playout policy (``pimc-ppo-playout``, or any LearnedAgent for
    the rules, in pimc and ismcts): legal, the same decisions from the same generator, and
    values that differ from greedy playouts'; a policy for other rules is refused."""
    rules = RuleSet.preset("basic", num_players=2)
    game = positions(rules, 64, seed=41)
    mask = game.legal_mask()
    rows = np.flatnonzero(~game.finished & (mask.sum(axis=1) > 1))
    ppo = make_agent("ppo-basic-2p", rules)
    agent = make_agent("pimc-ppo-playout:4", rules)
    assert agent.policy == "learned:ppo-basic-2p" and agent.prior.name == "ppo-basic-2p"
    a = agent.act_game(game, rows, np.random.default_rng(2))
    va = agent.last_values.copy()
    assert mask[rows, a].all()
    assert np.array_equal(a, agent.act_game(game, rows, np.random.default_rng(2)))
    greedy = SearchAgent(rules, 4, margin=agent.margin, prior=ppo, name="g")
    greedy.act_game(game, rows, np.random.default_rng(2))
    assert not np.array_equal(va, greedy.last_values)   # the playouts are the network's
    ism = SearchAgent(rules, 20, policy=ppo, method="ismcts", name="i")
    b = ism.act_game(game, rows, np.random.default_rng(3))
    assert mask[rows, b].all()
    assert np.array_equal(b, ism.act_game(game, rows, np.random.default_rng(3)))
    with pytest.raises(ValueError, match="playout policy 'ppo-classic-2p': trained for 'classic'"):
        SearchAgent(rules, 4, policy=make_agent("ppo-classic-2p", RuleSet.preset("classic", num_players=2)))
    with pytest.raises(ValueError, match="allowed: random, greedy, color, defensive, or a learned"):
        SearchAgent(rules, 4, policy=GreedyAgent(rules))
    assert make_agent("pimc-ppo-playout:2",
                      RuleSet.preset("basic", num_players=3)).prior.name == "ppo-any"


def test_playout_opponents_model_the_other_seats():
    """``playout_opponents``: the network plays the searching seat and the named baseline
    every other seat. From the same positions the shipped policy wins more playouts against
    ``random`` than against ``greedy``, and against either more than against itself (so the
    seats are not swapped, nor the baseline ignored); refused without a learned policy or
    with an unknown baseline."""
    rules = RuleSet.preset("basic", num_players=2)
    game = positions(rules, 240, seed=43)
    mask = game.legal_mask()
    rows = np.flatnonzero(~game.finished & (mask.sum(axis=1) > 1))
    ppo = make_agent("ppo-basic-2p", rules)

    def mean_value(**kw) -> float:
        agent = SearchAgent(rules, 8, policy=ppo, view="all", **kw)
        agent.act_game(game, rows, np.random.default_rng(4))
        return float(agent.last_values[agent.last_values >= 0].mean())

    against = SearchAgent(rules, 2, policy=ppo, playout_opponents="random")
    assert against.playout_opponents == "random" and "playout_opponents='random'" in repr(against)
    vs_random, vs_greedy, itself = (mean_value(playout_opponents="random"),
                                    mean_value(playout_opponents="greedy"), mean_value())
    assert vs_random > 0.65 and vs_random > vs_greedy + 0.05 and vs_greedy > itself
    assert 0.4 < itself < 0.7 and vs_random > itself + 0.1
    with pytest.raises(ValueError, match="playout_opponents = 'color'; allowed: None, or with a learned"):
        SearchAgent(rules, 2, playout_opponents="color")
    with pytest.raises(ValueError, match="allowed: None, or with a learned playout policy one of random"):
        SearchAgent(rules, 2, policy=ppo, playout_opponents="ppo")


class _Ticks:
    """A clock that moves 1 ms each time it is read: time budgets become reproducible."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.001
        return self.t


def test_a_time_budget_samples_worlds_until_the_time_is_spent():
    """``pimc:<T>ms``: worlds in batches until T ms have passed (here a clock that moves
    1 ms per reading: 13 worlds for 5 ms), the compiled search's choice rule on the pooled
    values, reproducible given the generator and the clock, and blind to hidden cards."""
    rules = RuleSet.preset("basic", num_players=2)
    game = positions(rules, 64, seed=51)
    mask = game.legal_mask()
    live = np.flatnonzero(~game.finished)
    many = mask[live].sum(axis=1) > 1
    assert many.any() and (~many).any()
    runs = []
    for g in (game, _hidden_swaps(game, live, np.random.default_rng(1))):
        for spec in ("pimc:5ms", "pimc-ppo:5ms", "pimc-plain:5ms", "ismcts:5ms"):
            agent = make_agent(spec, rules)
            agent.clock = _Ticks()
            acts = agent.act_game(g, live, np.random.default_rng(7))
            runs.append((spec, acts, agent.last_values.copy(), agent.last_worlds.copy()))
            assert mask[live, acts].all()
            assert np.array_equal(agent.last_worlds, np.where(many, 13, 0))
            v = agent.last_values
            k = np.flatnonzero(many)
            if spec == "ismcts:5ms":   # the tree's values: root actions it tried
                assert ((v >= 0) <= (mask[live] & many[:, None])).all() and (v <= 1).all()
                assert ((v >= 0).sum(axis=1)[k] >= 1).all()
                continue
            assert ((v >= 0) == (mask[live] & many[:, None])).all() and (v <= 1).all()
            best = v[k].max(axis=1)
            if spec == "pimc-plain:5ms":    # the plain argmax
                assert (v[k, acts[k]] >= best - 1e-9).all()
            else:                           # the prior's choice unless beaten by the margin at 13
                margin = agent.margin * np.sqrt(agent.worlds / 13)
                assert ((v[k, acts[k]] >= best - 1e-9) | (best - v[k, acts[k]] <= margin + 1e-9)).all()
    for (s1, a1, v1, _w1), (s2, a2, v2, _w2) in zip(runs[:4], runs[4:]):
        assert s1 == s2 and np.array_equal(a1, a2) and np.array_equal(v1, v2), s1
    plain = make_agent("pimc-plain:13", rules)
    plain.act_game(game, live, np.random.default_rng(7))
    assert not np.array_equal(plain.last_values, runs[2][2])   # pooled batches, other worlds


def test_a_search_made_by_hand_is_named_as_what_it_is():
    """Before: every SearchAgent made without a name was ``pimc:<worlds>``, an ismcts, a
    time budget, a CHEATING view or random playouts alike, and the arena showed it so; the
    registry's spec where the search is one of its agents, else a description no spec reads
    as."""
    from ono_env.agents.search import default_margin
    rules = RuleSet.preset("basic", num_players=2)
    for kwargs, name in (({}, "pimc-plain:8"), ({"method": "ismcts"}, "ismcts:8"),
                         ({"view": "all"}, "oracle:8"), ({"time_ms": 12345.678},
                                                         "pimc-plain:12345.678ms"),
                         ({"policy": "random"}, "pimc-random:8"),
                         ({"margin": default_margin(8)}, "pimc:8"),
                         ({"view": "colors"}, "pimc search (8 worlds, greedy playouts, view "
                                              "colors)"),
                         ({"policy": make_agent("ppo-basic-2p", rules)},
                          "pimc search (8 worlds, learned:ppo-basic-2p playouts)"),
                         ({"name": "mine"}, "mine")):
        assert SearchAgent(rules, 8, **kwargs).name == name
    for spec in ("pimc:8", "pimc-plain:8", "pimc-random:8", "ismcts:8", "oracle:8"):
        a = make_agent(spec, rules)   # the same search made by hand has the registry's name
        assert SearchAgent(rules, a.worlds, a.policy, a.view, method=a.method,
                           margin=a.margin).name == spec


def test_a_search_whose_view_is_changed_to_see_hands_is_marked_cheating():
    """``cheating`` follows ``view`` (before: set once at construction, so a fair search
    changed to ``view = "all"`` read every hand with no mark, and was given the live game as
    a fair search)."""
    from ono_env.agents.base import is_cheating
    rules = RuleSet.preset("basic", num_players=2)
    agent = make_agent("pimc:4", rules)
    assert not is_cheating(agent) and "CHEATING" not in repr(agent)
    agent.view = "all"
    assert is_cheating(agent) and "CHEATING" in repr(agent)
    assert "(cheating)" in run_arena([agent, "random"], rules, 2, num_games=2, seed=0,
                                     rating=False).labels[0]
    agent.view = "fair"
    assert not is_cheating(agent)


def test_time_budget_names_and_refusals():
    rules = RuleSet.preset("basic", num_players=2)
    a = make_agent("pimc-ppo-playout:20ms", rules)
    assert a.time_ms == 20.0 and a.name == "pimc-ppo-playout:20ms" and "budget=20 ms" in repr(a)
    assert make_agent("oracle:2.5ms", rules).time_ms == 2.5
    for bad in ("pimc:0ms", "pimc:-1ms", "pimc:xms", "pimc:nanms", "pimc:60001ms"):
        with pytest.raises(ValueError, match="a time budget is <T>ms, T milliseconds per decision"):
            make_agent(bad, rules)
    with pytest.raises(ValueError, match="or <T>ms: T milliseconds per decision"):
        make_agent("pimc:fast", rules)
    assert make_agent("ismcts:5ms", rules).time_ms == 5.0
    for bad in (0, -5.0, True, "5", float("nan")):
        with pytest.raises(ValueError, match=r"time_ms = .*allowed: None, or a number of milli"):
            SearchAgent(rules, 4, time_ms=bad)


def test_a_search_agent_decides_for_one_thread_at_a_time():
    """Before: threads sharing one search agent made other moves than each would alone (its
    observation buffer), and read each other's last_values, silently."""
    import pickle
    import threading

    rules = RuleSet.preset("basic", num_players=2)
    game = positions(rules, 32, seed=61)
    rows = np.flatnonzero(~game.finished)[:4]
    agent = make_agent("pimc-ppo:2", rules)
    alone = agent.act_game(game, rows, np.random.default_rng(0))
    clone = pickle.loads(pickle.dumps(agent))   # a copy has a lock of its own
    import copy
    assert agent._obs is not None and copy.copy(agent)._obs is None   # and its own buffer
    inside, go, out = threading.Event(), threading.Event(), []
    real = agent._act_game

    def held(*args):
        inside.set()
        go.wait(30)
        return real(*args)
    agent._act_game = held
    other = threading.Thread(target=lambda: out.append(
        agent.act_game(game, rows, np.random.default_rng(0))))
    other.start()
    assert inside.wait(30)
    with pytest.raises(RuntimeError, match=r"is deciding in another thread at this moment; "
                                           r"allowed: one thread at a time"):
        agent.act_game(game, rows, np.random.default_rng(1))
    assert np.array_equal(clone.act_game(game, rows, np.random.default_rng(0)), alone)
    go.set()
    other.join(30)
    assert np.array_equal(out[0], alone)   # the first call, untouched
    assert np.array_equal(agent.act_game(game, rows, np.random.default_rng(0)), alone)


@pytest.mark.parametrize("spec", ["ismcts:1000ms", "pimc:1000ms"])
def test_a_time_budget_samples_at_most_the_largest_budget_of_worlds(monkeypatch, spec):
    """Before: a time budget had no cap on its worlds (iterations): an ismcts tree of a
    minute's budget grew to 2.5M iterations and 1.7 GB in one decision."""
    import ono_env.agents.search as S
    rules = RuleSet.preset("basic", num_players=2)
    game = positions(rules, 32, seed=61)
    row = np.flatnonzero(~game.finished & (game.legal_mask().sum(axis=1) > 2))[:1]
    agent = make_agent(spec, rules)
    monkeypatch.setattr(S, "MAX_WORLDS", 5)   # read as it searches
    agent.clock = _Ticks()   # 1 ms a read: a thousand reads before the budget is spent
    agent.act_game(game, row, np.random.default_rng(0))
    assert agent.last_worlds[0] == 5


def test_ismcts_resumes_its_tree_in_batches():
    """The compiled ISMCTS's ``resume``, as a time budget uses it, grows one tree: the
    nodes in use only grow from batch to batch, and the tree's arrays grow when full."""
    from ono_env.agents.search import _Tree
    rules = RuleSet.preset("basic", num_players=2)
    game = positions(rules, 32, seed=61)
    mask = game.legal_mask()
    row = np.flatnonzero(~game.finished & (mask.sum(axis=1) > 2))[:1]
    agent = make_agent("ismcts:5ms", rules)
    seen = []

    class Tree(_Tree):
        def reserve(self, iterations):
            seen.append((int(self.nodes[0]), len(self.visits)))
            super().reserve(iterations)

    import ono_env.agents.search as S
    old, S._Tree = S._Tree, Tree
    try:
        agent.clock = _Ticks()
        agent.act_game(game, row, np.random.default_rng(0))
    finally:
        S._Tree = old
    assert agent.last_worlds[0] == 13   # 1 + 2 + 4 + 4 + 2 iterations in five batches
    nodes = [u for u, _ in seen]
    assert len(seen) == 5 and nodes[0] == 0 and all(a < b for a, b in itertools.pairwise(nodes))
    small = _Tree(capacity=2)
    small.nodes[0] = 2
    small.child[1, 5] = 7
    small.reserve(10)
    assert len(small.visits) >= 13 and small.child[1, 5] == 7 and small.child[2, 5] == -1


def _sample_worlds(game: VecGame, view: tuple, seed: int, mode: int = E.VIEW_FAIR) -> tuple:
    """One world of every row of ``view`` (a seat view in ``mode``), as the searches sample
    them."""
    from ono_env._engine import State
    from ono_env.game import kernel_entry
    R, D = view[0].shape[0], game.rules.deck_size
    worlds = State(R, game.num_players, D).arrays
    seeds = np.random.default_rng(seed).integers(0, 2**63, R, dtype=np.uint64)
    kernel_entry(E.sample_worlds)(*view, game.internals.params, seeds, mode, *worlds,
                            np.zeros(C.NUM_CARD_TYPES, np.int64), np.zeros(D, np.int8),
                            np.zeros(2, np.uint64))
    return worlds


@pytest.mark.parametrize("players, steps", [(3, 60), (10, 200)])
def test_sampled_worlds_keep_what_is_publicly_known_of_each_hand(players, steps):
    """Before, at ten players: the hands dealt in seat order, an earlier hand could take the
    cards a later one is known to hold, and 1.4% to 1.8% of the worlds gave a hand more cards
    of the types it is known to lack than it was given since."""
    from test_engine_bits import lacked_types

    from ono_env._engine import State
    from ono_env.game import kernel_entry
    rules = RuleSet.preset("basic", num_players=players)
    game = positions(rules, 64, seed=9, most=steps)
    rows = np.repeat(np.flatnonzero(~game.finished), 40)   # 40 worlds of each position
    view = State(len(rows), players, rules.deck_size).arrays
    kernel_entry(E.seat_view)(*game.state.arrays, rows, E.VIEW_FAIR, *view)
    known, lacks = view.pl[:, :, E.S_KNOWN].copy(), view.pl[:, :, E.S_LACKS].copy()
    me = view.g[:, E.G_CURRENT]
    others = np.arange(players)[None, :] != me[:, None]
    assert (known[others] > 0).mean() > 0.3            # the positions do know something
    worlds = _sample_worlds(game, view, seed=1)
    outside = np.where(lacked_types(lacks), 0, worlds.hands.astype(np.int64)).sum(axis=2)
    assert (outside >= known).all()                    # every sampled hand keeps to it
    assert np.array_equal(worlds.pl, view.pl)
    assert np.array_equal(worlds.hands.sum(axis=2), view.pl[:, :, E.S_HAND_LEN])
    seat = np.arange(len(rows))
    assert np.array_equal(worlds.hands[seat, me], view.hands[seat, me])
    # and it binds: sampled without it, some hands break it
    view.pl[:, :, E.S_KNOWN] = 0
    blind = _sample_worlds(game, view, seed=1)
    outside = np.where(lacked_types(lacks), 0, blind.hands.astype(np.int64)).sum(axis=2)
    assert (outside < known).any()


def test_a_hands_seen_cards_count_toward_what_it_is_known_to_hold():
    """The table knows that ``known`` of a hand's cards are of types it does not lack; where
    the seat has seen cards of such types in that hand, they count (before: ``known`` more
    were asked of the hand's other cards, so none of the worlds held a hand whose other cards
    were all of the lacked types)."""
    from test_engine_bits import lacked_types

    from ono_env._engine import State
    from ono_env.game import kernel_entry
    rules = RuleSet.preset("basic", num_players=3)
    game = positions(rules, 256, seed=9)
    view = State(256, 3, rules.deck_size).arrays
    kernel_entry(E.seat_view)(*game.state.arrays, np.arange(256), E.VIEW_FAIR, *view)
    me = view.g[:, E.G_CURRENT]
    q = (me + 1) % 3
    rows = np.arange(256)
    lacks = lacked_types(view.pl[rows, q, E.S_LACKS])
    ok = ((view.pl[rows, q, E.S_KNOWN] == 1) & (view.pl[rows, q, E.S_HAND_LEN] >= 3)
          & ~game.finished)
    r = int(np.flatnonzero(ok)[0])   # a position where the next hand is known to hold 1 such card
    held = game.state.hands[r, q[r]]
    seen = int(np.flatnonzero((held > 0) & ~lacks[r])[0])   # one it holds, shown to the seat
    view = State(400, 3, rules.deck_size).arrays
    kernel_entry(E.seat_view)(*game.state.arrays, np.full(400, r), E.VIEW_FAIR, *view)
    view.pl[:, me[r], E.S_SEEN + C.NUM_CARD_TYPES * q[r] + seen] = 1
    worlds = _sample_worlds(game, view, seed=3)
    hands = worlds.hands[:, q[r]].astype(np.int64)
    assert (hands[:, seen] >= 1).all()   # the seen card is dealt to it
    rest = hands.copy()
    rest[:, seen] -= 1
    fitting = np.where(lacks[r], 0, rest).sum(axis=1)
    assert (fitting == 0).any() and (fitting > 0).any(), np.bincount(fitting)


def test_colors_worlds_keep_each_hands_colours_and_deal_its_ranks_at_random():
    """The CHEATING colors view: each other hand gets its true count of each colour and of
    each wild type, from the cards the seat has not seen; the seat's own hand, the discard
    pile and every count stay."""
    from ono_env._engine import State
    from ono_env.game import kernel_entry
    rules = RuleSet.preset("ono", num_players=6)
    game = positions(rules, 32, seed=4)
    rows = np.repeat(np.flatnonzero(~game.finished), 20)
    view = State(len(rows), 6, rules.deck_size).arrays
    kernel_entry(E.seat_view)(*game.state.arrays, rows, E.VIEW_COLORS, *view)
    worlds = _sample_worlds(game, view, seed=3, mode=E.VIEW_COLORS)

    def by_color(hands):   # (R, P, 4 colours + 4 wild types)
        h = hands.astype(np.int64)
        return np.concatenate([np.stack([h[..., :52][..., C.CARD_COLOR[:52] == k].sum(axis=2)
                                         for k in range(4)], axis=2), h[..., 52:]], axis=2)
    assert np.array_equal(by_color(worlds.hands), by_color(view.hands))
    assert np.array_equal(worlds.hands.sum(axis=2), view.pl[:, :, E.S_HAND_LEN])
    seat, me = np.arange(len(rows)), view.g[:, E.G_CURRENT]
    assert np.array_equal(worlds.hands[seat, me], view.hands[seat, me])
    assert np.array_equal(worlds.discard, view.discard) and np.array_equal(worlds.pl, view.pl)
    # every card of the deck is somewhere, once: hands, stock and discard pile
    deck = rules.deck_counts.astype(np.int64)
    for r in range(0, len(rows), 97):
        total = worlds.hands[r].astype(np.int64).sum(axis=0)
        total += np.bincount(worlds.stock[r, :worlds.g[r, E.G_STOCK_LEN]], minlength=len(deck))
        total += np.bincount(worlds.discard[r, :worlds.g[r, E.G_DISCARD_LEN]], minlength=len(deck))
        assert np.array_equal(total, deck)
    # and the ranks are not the true ones: the hands differ card by card
    others = np.arange(6)[None, :] != me[:, None]
    assert (worlds.hands != view.hands).any(axis=2)[others].mean() > 0.5


def test_the_belief_weighs_a_world_by_the_networks_probability_of_the_opponents_play():
    """ppo-basic-2p plays both seats. At each seat-0 decision, the belief weight of the TRUE
    position, given seat 0's previous view and action, is the NumPy network's probability
    (softmax) of the opponent's play where that play came right after seat 0's action, and
    1 otherwise (also where seat 0's action drew cards); a higher temperature makes it less
    sure of the network's choice."""
    from ono_env._engine import State
    from ono_env.game import kernel_entry
    rules = RuleSet.preset("basic", num_players=2)
    pol = make_agent("ppo-basic-2p", rules)
    weights, shape = E.pack_network(pol.net.scale, pol.net.layers, pol.net.activation)
    B, P, D = 64, 2, rules.deck_size
    game = VecGame(rules, B, seed=12)
    rng = np.random.default_rng(0)
    prev = State(B, P, D).arrays
    prev_act = np.full(B, -1, np.int64)
    since = np.full(B, -1, np.int64)    # decisions since seat 0's: -1 none yet
    prob = np.ones(B)                   # NumPy probability of the opponent's last play
    kernel = kernel_entry(E.belief_weights)
    checked = flat = 0
    for _ in range(150):
        live = ~game.finished
        mask = game.legal_mask().copy()
        cur = game.current_player.astype(np.int64)
        obs = game.observe(cur)
        acts = pol.act(obs, mask, rng)
        mine = np.flatnonzero(live & (cur == 0) & (prev_act >= 0))
        if len(mine):
            out = np.zeros(len(mine))
            temp_out = np.zeros(len(mine))
            args = (*(x[mine] for x in prev), *(x[mine] for x in game.state.arrays),
                    game.internals.params, prev_act[mine])
            scratch = (weights, shape, np.zeros(game.observation_size, np.float32),
                       E.network_scratch(shape), np.zeros(C.NUM_ACTIONS, np.bool_),
                       np.zeros((4, P), np.float32), *State(4, P, D).arrays)
            kernel(*args, 1.0, *scratch, out)
            kernel(*args, 4.0, *scratch, temp_out)
            # the record applies where the play came right after seat 0's action, unless that
            # action drew cards (which the earlier view cannot tell)
            applies = (since[mine] == 1) & ~np.isin(prev_act[mine], [C.A_DRAW, C.A_ACCEPT])
            expect = np.where(applies, prob[mine], 1.0)
            assert np.allclose(out, expect, atol=2e-4)
            checked += int(applies.sum())
            unsure = applies & (out < 1 - 1e-6)     # the network's choice, less sure when hotter
            assert (temp_out[unsure] < out[unsure]).all() and (temp_out[~applies] == 1).all()
            flat += int(unsure.sum())
        # play the step; keep seat 0's views and the opponent's play probabilities
        at0 = np.flatnonzero(live & (cur == 0))
        if len(at0):
            view = State(len(at0), P, D).arrays
            kernel_entry(E.seat_view)(*game.state.arrays, at0, E.VIEW_FAIR, *view)
            for x, y in zip(prev, view):
                x[at0] = y
            prev_act[at0] = acts[at0]
            since[at0] = 0
        at1 = np.flatnonzero(live & (cur == 1) & (since >= 0))
        for i in at1:
            since[i] += 1
            z = pol.logits(obs[i:i + 1])[0].astype(np.float64)
            z = np.where(mask[i], z, -np.inf)
            p = np.exp(z - z.max())
            played = acts[i] < C.A_DRAW and game.state.phase[i] == 0 and mask[i].sum() > 1
            prob[i] = p[acts[i]] / p.sum() if played else 1.0
            if not played:
                since[i] = 99           # a draw or a forced play: the record does not apply
        game.step(acts, active=live)
        if game.finished.any():
            done = game.finished
            prev_act[done], since[done] = -1, -1
            game.reset(which=done)
    assert checked >= 500 and flat >= checked // 4


def test_a_belief_search_keeps_only_its_own_views_and_does_not_peek():
    """SearchAgent(belief=...) remembers the seat's own view and action at each decision; the
    remembered views hold no other hand and no stock, hidden swaps change none of its
    decisions or evaluations, and the belief does move the evaluations."""
    rules = RuleSet.preset("basic", num_players=2)
    pol = make_agent("ppo-basic-2p", rules)
    agent = SearchAgent(rules, 6, pol, margin=0.1, prior=pol, belief=1.0, name="belief:6")
    game = VecGame(rules, 48, seed=21)
    rng = np.random.default_rng(2)
    for _ in range(14):                             # the agent in seat 0, the policy in seat 1
        live = ~game.finished
        cur = game.current_player.astype(np.int64)
        acts = pol.act(game.observe(cur), game.legal_mask(), rng)
        mine = np.flatnonzero(live & (cur == 0))
        if len(mine):
            acts[mine] = agent.act_game(game, mine, rng)
        game.step(acts, active=live)
    _, views, acted = agent._memory
    seen = acted[0::2] >= 0
    assert seen.sum() >= 30
    assert (views.hands[0::2][seen][:, 1] == 0).all() and (views.stock[0::2][seen] == 0).all()
    mask = game.legal_mask()
    rows = np.flatnonzero(~game.finished & (game.current_player == 0) & (mask.sum(axis=1) > 1))
    assert len(rows) >= 8
    swapped = _hidden_swaps(game, rows, np.random.default_rng(1))
    saved = [x.copy() for x in game.state.arrays]
    memory = [x.copy() for x in (*views, acted)]
    results = []
    for state in (saved, swapped.state.arrays, saved):
        for x, y in zip(game.state.arrays, state):
            x[...] = y
        for x, y in zip((*views, acted), memory):   # the same memory each time
            x[...] = y
        if len(results) == 2:
            agent.belief = None                     # the third: without the belief
        results.append((agent.act_game(game, rows, np.random.default_rng(5)),
                        agent.last_values.copy()))
    for x, y in zip((*views, acted), memory):
        x[...] = y
    agent.belief, agent.worlds = 1e-3, 1            # so cold that weights underflow
    agent.act_game(game, rows, np.random.default_rng(5))
    assert np.isfinite(agent.last_values).all()
    agent.belief, agent.worlds = 1.0, 6
    assert np.array_equal(results[0][0], results[1][0])
    assert np.array_equal(results[0][1], results[1][1])
    assert not np.array_equal(results[0][1], results[2][1])   # the belief weighs the worlds
    import pickle
    again = pickle.loads(pickle.dumps(agent))       # to a worker: the memory stays behind
    assert again._memory is None and again.belief == 1.0 and agent._memory is not None
    for bad, message in ((dict(belief=0.0), "belief = 0.0; allowed"),
                         (dict(belief=1.0, prior=None), "a learned prior"),
                         (dict(belief=1.0, time_ms=5.0), "a fixed number of worlds")):
        kw = dict(dict(margin=0.1, prior=pol), **bad)
        with pytest.raises(ValueError, match=message):
            SearchAgent(rules, 4, pol, **kw)
    with pytest.raises(ValueError, match="2-player"):
        SearchAgent(RuleSet.preset("basic", num_players=3), 4, belief=1.0)
    from ono_env.agents.learned import LearnedAgent, PolicyNet
    net = PolicyNet(pol.net.scale, [(w * 1.5, b) for w, b in pol.net.layers], pol.net.activation)
    with pytest.raises(ValueError, match="the playouts' network must be the prior's"):
        SearchAgent(rules, 4, LearnedAgent(net, rules, "other", True, pol.meta), margin=0.1,
                    prior=pol, belief=1.0)
    greedy_playouts = SearchAgent(rules, 4, "greedy", margin=0.1, prior=pol, belief=1.0)
    assert greedy_playouts._playout_args(game, {"greedy": 1, "learned": 100})[1][0] is \
        greedy_playouts._net_belief[0]               # the prior's network, for the belief only
    # a prior made for other rules (before: taken, and the compiled search read another
    # layout's observations with its network until the process crashed)
    classic = RuleSet.preset("classic", num_players=2)
    with pytest.raises(ValueError, match=r"^the prior 'ppo-basic-2p': trained for 'basic' rules"):
        SearchAgent(classic, 16, "greedy", prior=make_agent("ppo-basic-2p", rules), belief=1.0)


def test_two_threads_loading_one_file_at_once_share_one_network_and_one_packing(tmp_path,
                                                                                 monkeypatch):
    """Before: two threads that missed the cache together (the web table deals games in
    threads) each parsed the file, each kept its own network, and so each search packed its
    own copy. Both now take the first network kept, and its packing. Each thread waits for
    the other inside the parse (and the packing), where the race was."""
    import shutil
    import threading

    import ono_env.agents.learned as learned
    from ono_env.agents.search import packed_network

    path = tmp_path / "m.safetensors"
    shutil.copy(learned.shipped_models()["ppo-any"], path)
    learned.shared_nets.clear()
    both = threading.Barrier(2, timeout=30)

    def meeting(real):
        def call(*args, **kwargs):
            both.wait()
            return real(*args, **kwargs)
        return call

    def in_two_threads(work):
        out: list = [None, None]

        def run(k):
            out[k] = work(k)
        threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out

    monkeypatch.setattr(learned, "parse_model", meeting(learned.parse_model))
    agents = in_two_threads(lambda k: learned.load_agent(path, "basic"))
    assert agents[0].net is agents[1].net
    monkeypatch.setattr(E, "pack_network", meeting(E.pack_network))
    packs = in_two_threads(lambda k: packed_network(agents[k].net))
    assert packs[0] is packs[1] and packed_network(agents[0].net) is packs[0]


def test_searches_over_one_model_file_share_its_packed_network():
    """Nine pimc-ppo-playout at a table hold one packed network (0.9 MB), not nine: the
    network that load_agent shares is read-only, so its packing is kept; a network that may
    change (built by hand, or a live view of a model in training) is packed anew each time,
    so that a search never plays stale weights."""
    from ono_env.agents.learned import LearnedAgent, PolicyNet

    rules = RuleSet.preset("basic", num_players=10)
    a, b = make_agent("pimc-ppo-playout", rules), make_agent("pimc-ppo-playout", rules)
    assert a._net is not None and all(x is y for x, y in zip(a._net, b._net))
    pol = make_agent("ppo-any", rules)
    live = PolicyNet(pol.net.scale.copy(), [(w.copy(), c.copy()) for w, c in pol.net.layers],
                     pol.net.activation, None, tuple(x.copy() for x in pol.net.encoder))
    agent = LearnedAgent(live, rules, "live", True, pol.meta)
    first = SearchAgent(rules, 4, agent)._net
    live.layers[0][0][0, 0] += 1.0                    # training moved it
    second = SearchAgent(rules, 4, agent)._net
    assert first is not None and second is not None and first[0] is not second[0]
    assert not np.array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[0], a._net[0])


@pytest.mark.parametrize("seat1, reward", [("R0", 0.5), ("R1", 1.0)])
def test_a_penalty_matchs_shared_win_is_valued_as_the_engine_pays_it(seat1, reward):
    # before: a win shared by the k seats tied on the lowest total was valued 1, as a sole
    # win (the engine pays +1/k), so a search settled for a tie where it could win alone;
    # the value is the engine's reward r on the search's scale, ((N-1) r + 1) / N
    rules = RuleSet.preset("classic", num_players=3, scoring="penalty", target_score=50)
    d = VecGame(rules, 1, seed=3).to_dict(0)
    cards = [c for h in d["hands"] for c in h] + d["stock"] + d["discard"]
    hands = [["R5"], [seat1], ["B9"]]   # seat 0 goes out on R5; seat 2 passes the target
    for c in ["R5", seat1, "B9", "R3"]:
        cards.remove(c)
    d.update(hands=hands, stock=cards, discard=["R3"], color="R", current_player=0, direction=1,
             phase="play", pending_draw=0, drawn_card=None, called=[True] * 3, exposed=None,
             previous_player=2, turn_fresh=True, wild_draw_four_bluff=False, scores=[40, 40, 45],
             winner=1, round=3, decisions=100)
    played = VecGame.from_dict(d)
    r = played.step(np.array([C.action_id("play R5")]))
    assert r.rewards[0, 0] == pytest.approx(reward)   # the engine: +1/2 tied, +1 alone
    oracle = make_agent("oracle:2", rules)   # sees every hand: the outcome is known
    oracle.act_game(VecGame.from_dict(d), np.array([0]), np.random.default_rng(0))
    assert oracle.last_values[0][C.action_id("play R5")] == pytest.approx((2 * reward + 1) / 3)


def test_a_time_budget_is_named_exactly_and_a_nan_margin_is_refused():
    # before: pimc:12345.678ms was named pimc:12345.7ms (another budget when made again), and
    # pimc:0.0000001ms pimc:1e-07ms, a name refused; a margin of NaN played the plain argmax
    for spec in ("pimc:12345.678ms", "pimc:0.000001ms", "ismcts:2.5ms"):
        agent = make_agent(spec, "basic")
        assert agent.name == spec and make_agent(agent.name, "basic").time_ms == agent.time_ms
    # a nanosecond at the least (before: 5e-324 ms was taken, a name of 330 characters)
    with pytest.raises(ValueError, match=r"from 0.000001 to 60000 \(e.g. pimc:20ms\)"):
        make_agent("pimc:0.0000001ms", "basic")
    with pytest.raises(ValueError, match=r"time_ms = 5e-324; allowed: None, or a number of "
                                         r"milliseconds from 0.000001 to 60000"):
        SearchAgent(RuleSet.preset("basic"), 4, time_ms=5e-324)
    with pytest.raises(ValueError, match=r"margin=nan \(float\); allowed: a number"):
        SearchAgent(RuleSet.preset("basic"), 4, margin=float("nan"))


def test_worlds_under_a_wild_draw_four_on_a_wild_keep_the_colour_the_table_saw_named():
    # before: the colour in force under it was drawn at random, so a fifth of the worlds'
    # bluff flags contradicted what the table had seen (the Wild's player named it)
    from ono_env import _engine as EN
    rules = RuleSet.preset("classic", num_players=3, target_score=0)
    P, D = 3, rules.deck_size
    g = VecGame(rules, 64, seed=0)
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(300):
        s = g.state
        for i in range(64):
            nd = int(s.discard_len[i])
            if not (s.phase[i] == EN.PH_PENDING and nd >= 2
                    and s.discard[i, nd - 1] == C.WILD_DRAW_FOUR and s.discard[i, nd - 2] == C.WILD):
                continue
            off = int(s.previous[i])
            namers = [q for q in range(P) if q != off and s.pl[i, q, EN.S_LAST] == C.WILD + 1]
            if len(namers) != 1:
                continue
            col = int(s.pl[i, namers[0], EN.S_NAMED]) - 1
            view = EN.State(1, P, D).arrays
            E.seat_view(*s.arrays, np.array([i]), E.VIEW_FAIR, *view)
            N = 100
            world = EN.State(N, P, D)
            E.sample_worlds(*(np.repeat(x, N, axis=0) for x in view), g.internals.params,
                            np.arange(1, N + 1, dtype=np.uint64) * np.uint64(7919), E.VIEW_FAIR,
                            *world.arrays, np.zeros(C.NUM_CARD_TYPES, np.int64),
                            np.zeros(D, np.int8), np.zeros(2, np.uint64))
            colored = [c for c in range(52) if EN._CARD_COLOR[c] == col]
            holds = world.hands[:, off, colored].sum(axis=1) > 0
            assert np.array_equal(world.bluff.astype(bool), holds)
            checked += 1
        if checked >= 3:
            break
        mask = g.legal_mask()
        g.step(np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in mask]),
               active=~g.finished)
        if g.finished.any():
            g.reset(which=g.finished)
    assert checked >= 3


def test_a_wild_draw_four_on_its_own_players_wild_does_not_read_another_seats_colour():
    # seat 1 names B with a Wild, seat 0 names Y with one, seat 1 draws, seat 0 plays the Wild
    # Draw Four on its own Wild: the colour under it is not in the public columns (seat 0's
    # S_NAMED is the Wild Draw Four's now); before, every world took seat 1's stale B
    from ono_env import _engine as EN
    rules = RuleSet.preset("classic", num_players=2)
    d = VecGame(rules, 1, seed=3).to_dict(0)
    cards = [c for h in d["hands"] for c in h] + d["stock"] + d["discard"]
    h0, h1 = ["R5", "W", "W+4", "Y1", "G2", "G3", "G4"], ["W", "B1", "B2", "B3", "B4", "B5", "B6"]
    for c in h0 + h1 + ["R3", "R9"]:
        cards.remove(c)
    d.update(hands=[h0, h1], stock=cards + ["R9"], discard=["R3"], color="R", current_player=0,
             direction=1, phase="play", pending_draw=0, drawn_card=None, called=[False] * 2,
             exposed=None, previous_player=1, turn_fresh=True, wild_draw_four_bluff=False)
    g = VecGame.from_dict(d)
    for name in ["play R5", "play W B", "play W Y", "draw", "keep", "play W+4 R"]:
        g.step(np.array([C.action_id(name)]))
    assert g.state.phase[0] == EN.PH_PENDING and g.state.bluff[0]   # seat 0 held Y1
    view = EN.State(1, 2, rules.deck_size).arrays
    E.seat_view(*g.state.arrays, np.array([0]), E.VIEW_FAIR, *view)
    N = 200
    world = EN.State(N, 2, rules.deck_size)
    E.sample_worlds(*(np.repeat(x, N, axis=0) for x in view), g.internals.params,
                    np.arange(1, N + 1, dtype=np.uint64) * np.uint64(7919), E.VIEW_FAIR,
                    *world.arrays, np.zeros(C.NUM_CARD_TYPES, np.int64),
                    np.zeros(rules.deck_size, np.int8), np.zeros(2, np.uint64))
    blue = [c for c in range(52) if EN._CARD_COLOR[c] == C.COLORS.index("B")]
    follows_blue = world.bluff.astype(bool) == (world.hands[:, 0, blue].sum(axis=1) > 0)
    assert not follows_blue.all()   # the colour is drawn, not read from seat 1


def test_a_search_whose_every_value_is_below_0_still_reports_its_worlds():
    # every legal action ends a penalty match that seats 1 and 2 win tied: each is worth
    # ((4-1) r + 1) / 4 with r = -1/2, -0.125; before, last_worlds said 0 (values >= 0 tested)
    rules = RuleSet.preset("classic", num_players=4, scoring="penalty", target_score=100,
                           voluntary_draw=False)
    d = VecGame(rules, 1, seed=3).to_dict(0)
    cards = [c for h in d["hands"] for c in h] + d["stock"] + d["discard"]
    for c in ["W", "R1", "R1", "B9", "R3"]:
        cards.remove(c)
    d.update(hands=[["W"], ["R1"], ["R1"], ["B9"]], stock=cards, discard=["R3"], color="R",
             current_player=0, direction=1, phase="play", pending_draw=0, drawn_card=None,
             called=[True] * 4, exposed=None, previous_player=3, turn_fresh=True,
             wild_draw_four_bluff=False, scores=[70, 50, 50, 95], winner=1, round=3, decisions=100)
    oracle = make_agent("oracle:8", rules)
    oracle.act_game(VecGame.from_dict(d), np.array([0]), np.random.default_rng(0))
    legal = np.flatnonzero(VecGame.from_dict(d).legal_mask()[0])
    assert np.allclose(oracle.last_values[0][legal], -0.125) and list(oracle.last_worlds) == [8]


@pytest.mark.parametrize("spec", ["pimc:2", "ismcts:4"])
def test_a_search_made_for_other_rules_of_the_same_size_refuses_the_game(spec):
    """Before: only the player count and the deck were compared, so a search made for
    `basic` searched a `classic` game (or one of other options) without a word."""
    basic = RuleSet.preset("basic", num_players=2)
    for other, what in [(RuleSet.preset("classic", num_players=2), r"2-player 'classic' \(.*"
                                                                   r"target_score.* differ\)"),
                        (RuleSet.preset("basic", num_players=2, stacking=True),
                         r"2-player 'basic' \(stacking differ\)")]:
        game = VecGame(other, 1, seed=4)
        with pytest.raises(ValueError, match=rf"plays 2-player 'basic' rules, not {what}; "
                                             r"allowed: a game of the rules it was made for"):
            make_agent(spec, basic).act_game(game, np.array([0]), np.random.default_rng(0))
    # the same rules under another name: a name is no rule (OpenSpiel's AgentBot takes them)
    renamed = VecGame(RuleSet.from_dict({**basic.to_dict(), "name": "mine"}), 1, seed=4)
    a = make_agent(spec, basic).act_game(renamed, np.array([0]), np.random.default_rng(0))
    assert renamed.legal_mask()[0, a[0]]


@pytest.mark.parametrize("spec,preset,players", [("pimc:16", "classic", 3), ("ismcts:16", "ono", 2),
                                                 ("pimc-ppo:8", "basic", 2)])
def test_a_fixed_budget_searches_in_pieces_that_decide_as_one_call(spec, preset, players,
                                                                   monkeypatch):
    """The compiled search does not see Ctrl-C: before, one call searched every row, and
    pimc:1024 at the arena's 4,096 games ran minutes past a Ctrl-C. It runs in pieces of
    about SEARCH_PIECE worlds now; each row searches from its own seed, so the pieces decide
    as one call did, values included."""
    import ono_env.agents.search as S
    rules = RuleSet.preset(preset, num_players=players)
    seen = []
    kernels = S._kernels()
    for piece in (10**9, 16 * 3, 1):
        monkeypatch.setattr(S, "SEARCH_PIECE", piece)
        calls = [0]
        counted = list(kernels)
        k = 2 if spec.startswith("ismcts") else 1
        counted[k] = lambda *a, f=kernels[k], n=calls: (n.__setitem__(0, n[0] + 1), f(*a))[1]
        monkeypatch.setattr(S, "_kernels", lambda c=tuple(counted): c)
        agent = make_agent(spec, rules)
        game = VecGame(rules, 24, seed=5)
        rng = np.random.default_rng(1)
        played, values = [], []
        for _ in range(12):
            rows = np.flatnonzero(~game.finished)
            actions = np.zeros(24, np.int64)
            actions[rows] = agent.act_game(game, rows, rng)
            played.append(actions)
            values.append(agent.last_values.copy())
            if piece == 1:   # a call a row (searches: 16 or 8 worlds each, over a piece of 1)
                assert calls[0] == len(rows)
            calls[0] = 0
            game.step(actions, active=~game.finished)
        seen.append((np.array(played), values))
    for played, values in seen[1:]:
        np.testing.assert_array_equal(played, seen[0][0])
        for a, b in zip(values, seen[0][1]):
            np.testing.assert_array_equal(a, b)


def test_a_capped_budget_of_worlds_stops_at_its_worlds_or_its_time():
    """``time_cap_ms`` (the web table's): a budget of worlds runs in batches until its worlds
    are all run or the time is spent. Before, the web's pimc-ppo-playout:512 under 100-card
    hands held a worker for minutes a decision."""
    rules = RuleSet.preset("basic", num_players=2)
    game = positions(rules, 64, seed=51)
    mask = game.legal_mask()
    live = np.flatnonzero(~game.finished)
    many = mask[live].sum(axis=1) > 1
    for spec in ("pimc:8", "pimc-ppo:8", "ismcts:8", "pimc:64"):
        agent = make_agent(spec, rules)
        agent.time_cap_ms = 5.0
        agent.clock = _Ticks()   # 1 ms a reading: 13 worlds fit in 5 ms, as a time budget's
        acts = agent.act_game(game, live, np.random.default_rng(7))
        assert mask[live, acts].all()
        cap = min(agent.worlds, 13)   # its worlds, or those the time allowed
        assert np.array_equal(agent.last_worlds, np.where(many, cap, 0)), spec
    uncapped = make_agent("pimc:64", rules)   # the default: the compiled search, all its worlds
    uncapped.clock = _Ticks()
    uncapped.act_game(game, live, np.random.default_rng(7))
    assert np.array_equal(uncapped.last_worlds, np.where(many, 64, 0))


def test_the_web_table_caps_a_budget_of_worlds_in_time():
    pytest.importorskip("fastapi")
    from ono_env.apps.web.table import WEB_SEARCH_CAP_MS, default_agent_factory
    build = default_agent_factory(RuleSet.preset("basic", num_players=2), {}, None)
    assert build("pimc-ppo-playout:512").time_cap_ms == WEB_SEARCH_CAP_MS
    timed = build("pimc:50ms")
    assert timed.time_cap_ms is None and timed.time_ms == 50.0


def _baseline_table(rules: RuleSet, base: str, games: int, steps: int, seed: int):
    """Yield a VecGame of ``games`` tables where every seat plays the baseline ``base``, at
    each of ``steps`` decisions (finished games dealt again)."""
    agent = make_agent(base, rules)
    game = VecGame(rules, games, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        yield game
        cur = game.current_player.astype(np.int64)
        game.step(agent.act(game.observe(cur), game.legal_mask(), rng))


def _misses(game: VecGame, rows: np.ndarray, worlds, base: str) -> np.ndarray:
    """_model_misses of each world row for the acting seat's view of game row rows[r]."""
    from ono_env._engine import State
    from ono_env.agents._baselines import POLICY_CODES
    from ono_env.game import kernel_entry
    P, D = game.num_players, game.rules.deck_size
    view = State(len(rows), P, D).arrays
    kernel_entry(E.seat_view)(*game.state.arrays, rows, E.VIEW_FAIR, *view)
    out = np.zeros(len(rows), np.int64)
    kernel_entry(E.model_misses)(*view, *worlds, game.internals.params, POLICY_CODES[base],
                                 *State(3, P, D).arrays, np.zeros(C.NUM_ACTIONS), np.zeros(32),
                                 np.zeros(C.NUM_ACTIONS, np.bool_), out)
    return out


@pytest.mark.parametrize("preset, players, base", [
    ("ono", 6, "color"), ("basic", 4, "greedy"), ("classic", 3, "color"),
    ("uno2018", 6, "greedy"), ("stacking", 4, "color"), ("wikipedia", 2, "greedy")])
def test_the_opponents_model_fits_a_table_of_that_baseline_and_binds_on_dealt_worlds(
        preset, players, base):
    """``model_deals``' check (_model_misses): at a table where every seat plays the baseline,
    the TRUE hands agree with every opponent's last play and named colour in nearly every
    decision (a hand changed outside its turns may not: under 1%), while worlds dealt from
    the seat's view disagree in many (the check says something about the hidden hands)."""
    rules = RuleSet.preset(preset, num_players=players)
    true_misses = dealt_misses = decisions = dealt = 0
    for step, game in enumerate(_baseline_table(rules, base, 48, 160, seed=3)):
        rows = np.arange(48)
        true_misses += int((_misses(game, rows, game.state.arrays, base) > 0).sum())
        decisions += len(rows)
        if step % 8 == 7:
            view_rows = np.repeat(rows, 4)
            from ono_env._engine import State
            view = State(len(view_rows), players, rules.deck_size).arrays
            from ono_env.game import kernel_entry
            kernel_entry(E.seat_view)(*game.state.arrays, view_rows, E.VIEW_FAIR, *view)
            worlds = _sample_worlds(game, view, seed=step)
            dealt_misses += int((_misses(game, view_rows, worlds, base) > 0).sum())
            dealt += len(view_rows)
    assert true_misses <= 0.01 * decisions, (true_misses, decisions)
    assert dealt_misses >= (0.1 if players > 2 else 0.03) * dealt, (dealt_misses, dealt)


def test_a_search_that_deals_its_worlds_to_fit_its_opponents_does_not_peek():
    """SearchAgent(model_deals=...): hidden swaps (between opponents' hands, a hand and the
    stock) change none of its decisions or evaluations; the deals do move the evaluations;
    its name says so; and what it cannot model is refused."""
    rules = RuleSet.preset("ono", num_players=4)
    game = next(g for k, g in enumerate(_baseline_table(rules, "color", 64, 40, seed=5))
                if k == 39)
    mask = game.legal_mask()
    rows = np.flatnonzero(~game.finished & (mask.sum(axis=1) > 1))
    assert len(rows) >= 10
    swapped = _hidden_swaps(game, rows, np.random.default_rng(1))
    pol = make_agent("ppo-any", rules)
    agent = SearchAgent(rules, 6, pol, margin=0.2, prior=pol, playout_opponents="color",
                        model_deals=32)
    assert agent.name.endswith("32 deals a world to fit the opponents)")
    a = agent.act_game(game, rows, np.random.default_rng(5))
    va = agent.last_values.copy()
    b = agent.act_game(swapped, rows, np.random.default_rng(5))
    assert np.array_equal(a, b) and np.array_equal(va, agent.last_values)
    plain = SearchAgent(rules, 6, pol, margin=0.2, prior=pol, playout_opponents="color")
    plain.act_game(game, rows, np.random.default_rng(5))
    assert not np.array_equal(va, plain.last_values)   # the deals weigh in
    greedy_model = SearchAgent(rules, 6, "greedy", model_deals=8)   # the playouts' baseline
    assert greedy_model.act_game(game, rows, np.random.default_rng(5)).shape == rows.shape
    for kw, message in ((dict(model_deals=0), "model_deals = 0; allowed: an integer from 1"),
                        (dict(model_deals=True), "model_deals = True; allowed"),
                        (dict(model_deals=4097), "model_deals = 4097; allowed"),
                        (dict(model_deals=2.0), "model_deals = 2.0; allowed"),
                        (dict(model_deals=4, policy="random"), "opponents 'random'"),
                        (dict(model_deals=4, policy=pol), "opponents 'learned:ppo-any'"),
                        (dict(model_deals=4, method="ismcts"), "method 'ismcts'"),
                        (dict(model_deals=4, view="hands"), "view 'hands'")):
        with pytest.raises(ValueError, match=message):
            SearchAgent(rules, 4, **kw)


def test_a_budget_set_after_construction_is_checked_as_the_constructors_is():
    """``worlds``, ``time_ms``, ``time_cap_ms`` (which the web table sets) and ``margin`` set
    on a made search are checked at its next decision (before: worlds 0 was a
    ZeroDivisionError, -3 searched nothing and returned moves, a NaN cap was int()'s error)."""
    rules = RuleSet.preset("basic", num_players=2)
    game = VecGame(rules, 4, seed=3)
    for key, value, said in (("worlds", 0, "worlds = 0; allowed: an integer from 1 to"),
                             ("worlds", -3, "worlds = -3"), ("worlds", 2.5, "worlds = 2.5"),
                             ("time_cap_ms", float("nan"), "time_cap_ms = nan"),
                             ("time_cap_ms", "5", "time_cap_ms = '5'"),
                             ("time_cap_ms", True, "time_cap_ms = True"),
                             ("time_cap_ms", -5, "time_cap_ms = -5"),
                             ("time_ms", 0, "time_ms = 0"),
                             ("margin", float("nan"), "margin=nan")):
        agent = make_agent("pimc:4", rules)
        setattr(agent, key, value)
        with pytest.raises(ValueError, match=rf"^the search's {re.escape(said)}"):
            agent.act_game(game, np.arange(4), np.random.default_rng(0))
    agent = make_agent("pimc:4", rules)   # a time budget lifts MAX_WORLDS: not named then
    agent.time_ms, agent.worlds = 20.0, 0   # (before: "an integer from 1 to 1000000")
    with pytest.raises(ValueError, match=r"^the search's worlds = 0; allowed: an integer of at least 1$"):
        agent.act_game(game, np.arange(4), np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"^worlds = 0; allowed: an integer of at least 1$"):
        SearchAgent(rules, 0, time_ms=20.0)   # the constructor as the decision checks it
    assert SearchAgent(rules, MAX_WORLDS + 1, time_ms=20.0).worlds == MAX_WORLDS + 1
    agent.worlds = MAX_WORLDS + 1   # without one it is named
    agent.time_ms = None
    with pytest.raises(ValueError, match=rf"^the search's worlds = {MAX_WORLDS + 1}; allowed: an "
                                         rf"integer from 1 to {MAX_WORLDS}$"):
        agent.act_game(game, np.arange(4), np.random.default_rng(0))
    agent = make_agent("ismcts:4", rules)
    agent.margin = 0.5
    with pytest.raises(ValueError, match=r"^the search's margin = 0.5: an ismcts search keeps no"):
        agent.act_game(game, np.arange(4), np.random.default_rng(0))
    agent = make_agent("pimc:4", rules)
    agent.time_cap_ms = 50.0   # in range: plays
    assert agent.act_game(game, np.arange(4), np.random.default_rng(0)).shape == (4,)
