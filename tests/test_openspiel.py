"""ONO as an OpenSpiel game (ono_env/envs/openspiel.py): registration and parameters,
OpenSpiel's own random-simulation test on every preset, equality with VecGame, clones, the
resampler (it keeps what the seat knows and never reveals hidden cards), and OpenSpiel's
bots playing whole games."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

if os.environ.get("ONO_REQUIRE_OPENSPIEL") == "1":
    import pyspiel
else:
    pyspiel = pytest.importorskip("pyspiel")

from ono_env import PRESETS, VecGame
from ono_env.envs import openspiel as O


def _random_game(state, rng, steps=None):
    n = 0
    while not state.is_terminal() and (steps is None or n < steps):
        state.apply_action(int(rng.choice(state.legal_actions())))
        n += 1
    return state


def test_registered_once_with_the_project_parameters():
    assert O.GAME_NAME in pyspiel.registered_names()
    O.register()   # again: nothing happens
    assert pyspiel.registered_names().count(O.GAME_NAME) == 1
    game = pyspiel.load_game(O.GAME_NAME)
    assert game.num_players() == 2 and game.rules == PRESETS["classic"].replace(num_players=2)
    assert game.num_distinct_actions() == 85
    assert game.get_type().utility == pyspiel.GameType.Utility.ZERO_SUM
    game = pyspiel.load_game(O.GAME_NAME, {"preset": "ono", "players": 4, "stacking": "true",
                                           "hand_size": "5", "dealer": "highest_card"})
    assert game.rules == PRESETS["ono"].replace(num_players=4, stacking=True, hand_size=5,
                                                dealer="highest_card")
    assert game.observation_tensor_shape() == [game.new_initial_state().engine.observation_size]
    # the game string form OpenSpiel users write works too
    assert pyspiel.load_game("python_ono(preset=basic,players=3)").rules.num_players == 3
    points = pyspiel.load_game(O.GAME_NAME, {"reward": "points"})
    assert points.get_type().reward_model == pyspiel.GameType.RewardModel.REWARDS
    assert points.max_utility() == 0.01 * (500 + 1240)   # a match's points, times 0.01


@pytest.mark.parametrize("params, match", [
    ({"preset": "nope"}, "parameter preset='nope'; allowed: basic, ono"),
    ({"players": 1}, "parameter players=1; allowed: 2 to 10"),
    ({"players": 11}, "parameter players=11; allowed: 2 to 10"),
    ({"stacking": "yes"}, "parameter stacking='yes'; allowed: 'true', 'false'"),
    ({"hand_size": "7.5"}, "parameter hand_size='7.5'; allowed: a whole number"),
    ({"hand_size": "007"}, "parameter hand_size='007'; allowed: a whole number written in "
                           "digits without leading zeros"),
    ({"dealer": "oldest"}, "dealer"),
    ({"hand_size": "90"}, "too few to deal hand_size=90"),
    # an option the message names that the parameters did not set is the preset's
    ({"stacking": "true"}, r"challenge=True; allowed: false when stacking is true .*\) "
                           r"\(challenge: preset classic's value, not a parameter given; set it "
                           r"as a parameter\)$"),
    ({"reward": "score"}, "parameter reward='score'; allowed: 'win', 'points'"),
    ({"preset": "basic", "reward": "points"}, "reward='points' under rules without scoring"),
    ({"seed": -1}, "parameter seed=-1; allowed: 0 to 2,147,483,647 \\(OpenSpiel's integer "
                   "parameters are 32-bit\\)"),
    ({"max_decisions": -5}, "parameter max_decisions=-5"),
    ({"observation_version": 3}, "parameter observation_version=3; allowed: 1, 2 \\(2: one "
                                 "length for every rule set"),
])
def test_bad_parameters_are_one_error_naming_what_is_allowed(params, match):
    with pytest.raises(ValueError, match=match):
        pyspiel.load_game(O.GAME_NAME, params)


def test_a_game_string_sets_options_named_by_a_word_and_not_switches():
    """As docs/openspiel.md says: OpenSpiel reads true and digits in a game string as a bool
    and an int, which a string parameter refuses (OpenSpiel's check, before the game)."""
    game = pyspiel.load_game("python_ono(preset=basic,players=3,dealer=highest_card,seed=7)")
    assert game.rules.dealer == "highest_card" and game.seed == 7
    assert pyspiel.load_game(str(game)).rules == game.rules
    for text in ("python_ono(stacking=true)", "python_ono(hand_size=5)"):
        with pytest.raises(pyspiel.SpielError, match="Wrong type for parameter"):
            pyspiel.load_game(text)


def test_the_openspiel_example_refuses_bad_flags_in_one_line(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "docs" / "examples" / \
        "openspiel_policy_gradient.py"
    for argv, message in [(["--seed", "2147483648"], "argument --seed: 2,147,483,648 is out of range"),
                          (["--episodes", "-5"], "argument --episodes: -5 is out of range"),
                          (["--minutes", "nan"], "argument --minutes: 'nan'; allowed")]:
        proc = subprocess.run([sys.executable, str(script), *argv, "--out", str(tmp_path)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    assert not any(tmp_path.iterdir())
    # before the training (before: a file as --out was refused after it, with a traceback,
    # and an earlier model was replaced)
    (tmp_path / "model.safetensors").write_text("kept")
    for out, message in [(tmp_path / "model.safetensors", "exists and is not a folder"),
                         # (before: "give a new file name", where --out is a folder)
                         (tmp_path, "already holds model.safetensors (an earlier model, never "
                                    "replaced); give a new or empty folder")]:
        proc = subprocess.run([sys.executable, str(script), "--out", str(out)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert "error: --out: " in proc.stderr and message in proc.stderr, proc.stderr
    assert (tmp_path / "model.safetensors").read_text() == "kept"


def test_unknown_parameters_and_types_get_openspiels_own_error():
    with pytest.raises(pyspiel.SpielError, match=r"Unknown parameter 'colour'\. Available "
                                                 r"parameters are: .*preset"):
        pyspiel.load_game(O.GAME_NAME, {"colour": "red"})
    with pytest.raises(pyspiel.SpielError, match="Wrong type for parameter players"):
        pyspiel.load_game(O.GAME_NAME, {"players": "two"})


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.parametrize("players", [2, 3, 4])
def test_openspiels_random_simulation_test(preset, players):
    game = pyspiel.load_game(O.GAME_NAME, {"preset": preset, "players": players,
                                           "max_decisions": 300})
    pyspiel.random_sim_test(game, num_sims=1, serialize=False, verbose=False)


@pytest.mark.parametrize("params", [
    {"preset": "classic", "players": 2, "target_score": "60"},
    {"preset": "wikipedia", "players": 3, "target_score": "60"},
    {"preset": "stacking", "players": 4, "target_score": "60"},   # penalty scoring: shared wins
])
@pytest.mark.parametrize("reward", ["points", "win"])
def test_openspiels_random_simulation_test_of_matches(params, reward):
    """Matches to a (low) target: per-round point rewards, and the win rewards of a match
    (shared in a penalty-scored one)."""
    game = pyspiel.load_game(O.GAME_NAME, {**params, "reward": reward, "max_decisions": 6000})
    pyspiel.random_sim_test(game, num_sims=1, serialize=False, verbose=False)


def test_the_rewards_are_exact_and_sum_to_zero():
    for players, paid, exact in [
            (3, [1.0, -0.5, -0.5], [1.0, -0.5, -0.5]),
            (4, [0.5, 0.5, -0.5, -0.5], [0.5, 0.5, -0.5, -0.5]),          # a shared win
            (5, [0.5, -1 / 3, 0.5, -1 / 3, -1 / 3], [0.5, -1 / 3, 0.5, -1 / 3, -1 / 3]),
            (4, [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0])]:            # cut: no winner
        state = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": players}
                                  ).new_initial_state()
        got = state._exact(np.array(paid, np.float32), None)
        assert np.array_equal(got, np.array(exact)) and abs(got.sum()) < 1e-15
    # points: each round's score changes, centred, over 100, in float64 (before: the engine's
    # float32 centred again, -0.2800000011920929 for -0.28), as the engine pays them
    for preset, players in (("classic", 3), ("stacking", 4)):   # winner and penalty scoring
        game = pyspiel.load_game(O.GAME_NAME, {"preset": preset, "players": players,
                                               "reward": "points", "target_score": "100"})
        state, rng, paid = game.new_initial_state(), np.random.default_rng(players), 0
        while not state.is_terminal():
            before = state.engine.state.pl[0, :, 2].copy()   # the scores
            state.apply_action(int(rng.choice(state.legal_actions())))
            got, change = np.array(state.rewards()), state.engine.state.pl[0, :, 2] - before
            if change.any():
                paid += 1
                gain = change if preset == "classic" else -change
                assert np.abs(got * 100 * players - (players * gain - gain.sum())).max() < 1e-9
            else:
                assert not got.any()
            assert abs(got.sum()) < 1e-12
        assert paid >= 1


@pytest.mark.parametrize("preset, players", [("basic", 2), ("classic", 3), ("ono", 4),
                                             ("uno2018", 4)])
def test_the_same_actions_give_the_same_game_as_vecgame(preset, players):
    game = pyspiel.load_game(O.GAME_NAME, {"preset": preset, "players": players, "seed": 5})
    state = game.new_initial_state()
    seed = int(np.random.SeedSequence([5, 0]).generate_state(1)[0])
    twin = VecGame(game.rules, 1, seed=seed)
    rng = np.random.default_rng(1)
    returns = np.zeros(players)
    for _ in range(400):
        if state.is_terminal():
            break
        assert state.current_player() == int(twin.current_player[0])
        legal = state.legal_actions()
        assert legal == np.flatnonzero(twin.legal_mask()[0]).tolist()
        a = int(rng.choice(legal))
        state.apply_action(a)
        returns += twin.step(np.array([a])).rewards[0]
        assert state.engine.to_dict(0) == twin.to_dict(0)
    assert state.returns() == returns.tolist()


def test_deals_differ_and_are_reproducible_from_the_seed():
    a = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "seed": 3})
    b = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "seed": 3})
    first, second = a.new_initial_state(), a.new_initial_state()
    assert str(first) != str(second)
    assert str(b.new_initial_state()) == str(first)


def test_a_clone_plays_alike_and_apart():
    game = pyspiel.load_game(O.GAME_NAME, {"preset": "classic", "players": 3})
    state = _random_game(game.new_initial_state(), np.random.default_rng(0), steps=30)
    clone = state.clone()
    assert str(clone) == str(state) and clone.history_names == state.history_names
    # its history shares the strings, not the list (before: each string deep-copied, 4-9 ms
    # a clone at 20,000 actions)
    assert type(clone.history_names) is O._Log and clone.history_names is not state.history_names
    assert all(a is b for a, b in zip(clone.history_names, state.history_names))
    rng1, rng2 = np.random.default_rng(7), np.random.default_rng(7)
    _random_game(state, rng1, steps=50)
    assert str(clone) != str(state)           # the clone did not move
    _random_game(clone, rng2, steps=50)
    assert str(clone) == str(state)           # the engine's generator was copied
    # clones and resampled worlds take no deal: the next state is the game's second deal
    # (before, each clone took a deal's number, so the deals depended on the clones made)
    # nor do child(), the tensors' shapes or rl_environment's specs (OpenSpiel's own answers
    # made a state); a clone in one thread leaves another thread's deals as they are
    import threading

    from open_spiel.python import rl_environment

    for _ in range(3):
        clone.clone()
    state.resample_from_infostate(state.current_player(),
                                  pyspiel.UniformProbabilitySampler(0.0, 1.0))
    if not state.is_terminal():
        assert str(state.child(state.legal_actions()[0])) != str(state)
        before = str(state)
        for bad in (True, float(state.legal_actions()[0]), "0", None):   # one error, naming child
            with pytest.raises(TypeError, match=r"child\(action=.*allowed: an action id"):
                state.child(bad)
        # and apply_action: before, True played action 1 and -1 or 10**20 gave OpenSpiel's
        # C++ checks' text
        for bad, error in ((True, TypeError), (-1, ValueError), (10**20, ValueError),
                           (85, ValueError)):
            with pytest.raises(error, match=r"apply_action\(action=.*allowed: an action id, a "
                                            r"Python or NumPy integer 0\.\.84"):
                state.apply_action(bad)
        assert str(state) == before
        assert str(state.child(np.int64(state.legal_actions()[0]))) != before
        # a player the game does not have (before: [] for 3, OpenSpiel's C++ text for -2)
        n = game.num_players()
        for bad in (n, -2, True):
            for method in ("legal_actions", "legal_actions_mask"):
                with pytest.raises(ValueError, match=rf"{method} of player {bad}; allowed: a "
                                                     rf"player 0 to {n - 1}"):
                    getattr(state, method)(bad)
        assert state.legal_actions(state.current_player()) == state.legal_actions()
        assert state.legal_actions((state.current_player() + 1) % n) == []
    assert game.observation_tensor_shape() == [game.observation_tensor_size()] \
        == game.information_state_tensor_shape() == [state.engine.observation_size]
    env = rl_environment.Environment(game)
    env.observation_spec()
    step = env.reset()   # the game's second deal; reading the tensors at every step takes none
    for _ in range(5):
        if step.last():
            break
        step = env.step([step.observations["legal_actions"][step.observations["current_player"]][0]])
    twin = pyspiel.load_game(O.GAME_NAME, {"preset": "classic", "players": 3})
    twin.new_initial_state()
    twin.new_initial_state()   # rl_environment's deal
    assert game.new_initial_state().engine.to_dict(0) == twin.new_initial_state().engine.to_dict(0)
    stop = threading.Event()
    cloner = threading.Thread(target=lambda: [clone.clone() for _ in iter(stop.is_set, True)])
    cloner.start()
    try:
        dealt = [game.new_initial_state() for _ in range(300)]
    finally:
        stop.set()
        cloner.join()
    assert all(d.engine.to_dict(0) == twin.new_initial_state().engine.to_dict(0) for d in dealt)


def test_a_finished_game_has_the_win_rewards():
    game = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 3})
    state = _random_game(game.new_initial_state(), np.random.default_rng(2))
    assert state.is_terminal() and state.current_player() == pyspiel.PlayerId.TERMINAL
    returns = state.returns()
    assert sorted(returns) == [-0.5, -0.5, 1.0] and state.rewards() == returns
    # before: a finished game took more actions (the engine ignored them), and its history,
    # then its serialised text, held them; now refused, and nothing changes
    history, text = state.history(), state.serialize()
    for action in (0, 84):
        with pytest.raises(ValueError, match=r"the game is over \(is_terminal\(\)\); no action"):
            state.apply_action(action)
    assert state.history() == history and state.serialize() == text
    assert game.deserialize_state(text).returns() == returns
    # a seat's tensor still; the player to act's is none (before: "a tensor of player -4")
    assert len(state.observation_tensor(0)) == game.observation_tensor_size()
    for tensor in (state.observation_tensor, state.information_state_tensor):
        with pytest.raises(ValueError, match=r"a tensor of the player to act, in a game that has "
                                             r"ended \(no player acts\); allowed: a player 0 to 2$"):
            tensor()
    # the strings too (before: OpenSpiel's C++ check, "player >= 0 / player = -4")
    for method, what in (("observation_string", "an observation string"),
                         ("information_state_string", "an information state string")):
        with pytest.raises(ValueError, match=f"{what} of the player to act, in a game that has "
                                             r"ended \(no player acts\); allowed: a player 0 to 2$"):
            getattr(state, method)()
        mine, theirs = getattr(state, method)(0), getattr(state, method)(1)   # a seat's still
        assert isinstance(mine, str) and mine and mine != theirs


@pytest.mark.parametrize("action", [-1, 85])
def test_an_action_out_of_range_has_no_name(action):
    state = pyspiel.load_game(O.GAME_NAME).new_initial_state()
    with pytest.raises(ValueError, match=rf"action_to_string\(action={action}\); allowed: an "
                                         r"action id, a Python or NumPy integer 0..84"):
        state.action_to_string(0, action)   # before: -1 named action 84, 85 an IndexError


def test_an_actions_name_takes_integers_only():
    """Before: OpenSpiel converted the arguments first, so True was read as player or
    action 1, and a float gave pybind's TypeError listing the method's signatures."""
    state = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 3}).new_initial_state()
    assert state.current_player() == 0
    for args, message in (
            ((True, 0), r"an action's name of player True; allowed: a player 0 to 2, a Python"),
            ((1.0, 0), r"an action's name of player 1\.0; allowed: a player 0 to 2"),
            ((0, True), r"action_to_string\(action=True\); allowed: an action id"),
            ((0, np.float64(3.0)), r"action_to_string\(action=np\.float64\(3\.0\)\); allowed"),
            ((np.True_,), r"action_to_string\(action=np\.True_\); allowed"),
            ((), r"takes \(player, action\) or \(action\); got 0 arguments")):
        with pytest.raises(TypeError, match=message):
            state.action_to_string(*args)
    assert state.action_to_string(np.int64(1), np.int64(5)) == "play R5"
    assert state.action_to_string(5) == "play R5"   # the player to act's


def test_observations_are_the_seats_own():
    game = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 3})
    state = _random_game(game.new_initial_state(), np.random.default_rng(3), steps=10)
    from ono_env.observation import observation_scale

    scale = observation_scale(game.rules)
    for p in range(3):
        seen = state.engine.observe(p)[0] / scale
        assert np.array_equal(state.observation_tensor(p), seen)
        assert np.array_equal(state.information_state_tensor(p), seen)
        text = state.observation_string(p)
        mine = [line for line in text.splitlines() if line.lstrip("> ").startswith(f"P{p}")]
        assert mine and "cards]" not in mine[0]   # its own hand is shown, the others' sizes
        assert sum("cards]" in line for line in text.splitlines()) == 2
    history, seen, deals = state.information_state_string(0).splitlines()[-3:]
    assert history == f"history: {'; '.join(state.history_names)}"
    assert f"{seen}\n{deals}" == f"seen: {state.private_text(0)}"
    assert seen.startswith("seen: 0: hand ") and deals.startswith("deals: 0: discard ")


def test_version_2_tensors_have_one_length_for_every_table_and_are_the_seats_own():
    from ono_env.observation import observation_scale, observation_size

    sizes = set()
    for preset, players in (("basic", 2), ("ono", 6), ("uno2018", 10)):
        game = pyspiel.load_game(O.GAME_NAME, {"preset": preset, "players": players,
                                               "observation_version": 2})
        assert game.observation_version == 2
        sizes.add(game.observation_tensor_size())
        sizes.add(game.information_state_tensor_size())
        state = _random_game(game.new_initial_state(), np.random.default_rng(4), steps=30)
        scale = observation_scale(game.rules, 2)
        for p in range(players):
            seen = state.engine.observe(p, version=2)[0] / scale
            assert np.array_equal(state.observation_tensor(p), seen)
            assert np.array_equal(state.information_state_tensor(p), seen)
    assert sizes == {observation_size(PRESETS["basic"], 2)}
    # in a game string too; version 1 stays the default
    assert pyspiel.load_game("python_ono(players=3,observation_version=2)").observation_tensor_size() \
        == observation_size(PRESETS["basic"], 2)
    assert pyspiel.load_game(O.GAME_NAME).observation_version == 1


def test_an_agent_trained_on_version_2_tensors_plays_at_other_tables(tmp_path):
    """An OpenSpiel PolicyGradient agent on the version-2 tensors of basic at 2 players,
    exported, is a version-2 model that plays at any table its observation covers."""
    import torch
    from open_spiel.python.pytorch import policy_gradient

    from ono_env.agents.learned import read_metadata

    torch.manual_seed(0)
    game = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 2,
                                           "observation_version": 2})
    agent = policy_gradient.PolicyGradient(0, game.information_state_tensor_size(), 85,
                                           loss_str="a2c", hidden_layers_sizes=[16])
    path = O.export_policy_gradient(agent, game, str(tmp_path / "v2.safetensors"),
                                    training_steps=0)
    assert read_metadata(path)["observation_version"] == 2
    state = game.new_initial_state()
    bot = O.AgentBot(path, game, state.current_player())
    assert bot.step(state) in state.legal_actions()
    six = pyspiel.load_game(O.GAME_NAME, {"preset": "ono", "players": 6})
    state = six.new_initial_state()
    bot = O.AgentBot(path, six, state.current_player())   # reads its own version, 2
    assert bot.step(state) in state.legal_actions()


def test_the_information_state_holds_what_the_seat_was_shown():
    """Perfect recall: a card moved unseen between the offender's hand and the stock leaves
    the challenger's information state as it was, until the Wild Draw Four challenge shows
    it that hand; from then on the two states differ for it (the string holds the seat's
    record of what it saw, not only the public history and its current view)."""
    from ono_env import cards as C

    game = pyspiel.load_game(O.GAME_NAME, {"preset": "classic", "players": 2})
    challenge = C.ACTION_NAMES.index("challenge")
    rng = np.random.default_rng(0)
    found = 0
    for _ in range(400):
        state = game.new_initial_state()
        while not state.is_terminal() and challenge not in state.legal_actions():
            state.apply_action(int(rng.choice(state.legal_actions())))
        if state.is_terminal():
            continue
        me = state.current_player()
        other = 1 - me
        s = state.engine.state
        hand = [c for c in np.flatnonzero(s.hands[0, other]) if c < 52]   # a coloured card
        stock = [int(s.stock[0, k]) for k in range(int(s.stock_len[0]))
                 if int(s.stock[0, k]) < 52 and s.hands[0, other, int(s.stock[0, k])] == 0]
        if not hand or not stock:
            continue
        twin = state.clone()
        t = twin.engine.state
        x, y = int(hand[0]), stock[0]
        k = int(np.flatnonzero(t.stock[0, :int(t.stock_len[0])] == y)[0])
        t.hands[0, other, x] -= 1
        t.hands[0, other, y] += 1
        t.stock[0, k] = x
        assert twin.information_state_string(me) == state.information_state_string(me)
        for st in (state, twin):
            st.apply_action(challenge)
        assert twin.information_state_string(me) != state.information_state_string(me)
        assert twin.history_names == state.history_names
        found += 1
        if found == 3:
            break
    assert found == 3


def test_a_resampled_world_that_played_on_is_not_serialised():
    # before: its replay ran the deal's cards, where its later actions were often illegal,
    # or replayed into another game
    game = pyspiel.load_game(O.GAME_NAME, {"preset": "classic", "players": 3})
    state = _random_game(game.new_initial_state(), np.random.default_rng(2), steps=20)
    world = state.resample_from_infostate(state.current_player(), lambda: 0.5)
    again = game.deserialize_state(world.serialize())   # as made: it round-trips
    assert again.engine.to_dict(0) == world.engine.to_dict(0)
    world.apply_action(world.legal_actions()[0])
    with pytest.raises(ValueError, match=r"a resampled world that has played on since it was "
                                         r"made \(1 actions\) cannot be serialised"):
        world.serialize()
    assert game.deserialize_state(state.serialize()).history() == state.history()


def test_only_one_players_view_is_offered():
    game = pyspiel.load_game(O.GAME_NAME)
    for kind in (pyspiel.PrivateInfoType.NONE, pyspiel.PrivateInfoType.ALL_PLAYERS):
        with pytest.raises(ValueError, match="a public-only or all-players observation is not offered"):
            game.make_py_observer(pyspiel.IIGObservationType(
                perfect_recall=False, public_info=True, private_info=kind))
    with pytest.raises(ValueError, match="public_info=False"):
        game.make_py_observer(pyspiel.IIGObservationType(perfect_recall=False, public_info=False))
    for recall in (False, True):
        assert game.make_py_observer(pyspiel.IIGObservationType(perfect_recall=recall))


def _hidden_swap(state, rng):
    """A clone of ``state`` in which a card moves between two opponents' hands and between
    an opponent's hand and the stock, and the engine's generator changes: nothing the acting
    seat can see (as tests/test_search.py swaps them for the search agents)."""
    out = state.clone()
    s = out.engine.state
    P = out.engine.num_players
    me = int(s.current[0])
    opp = [q for q in range(P) if q != me]
    a, b = opp[0], opp[-1]
    ca = [c for c in np.flatnonzero(s.hands[0, a]) if s.hands[0, b, c] == 0]
    cb = [c for c in np.flatnonzero(s.hands[0, b]) if s.hands[0, a, c] == 0]
    if a != b and ca and cb:
        x, y = rng.choice(ca), rng.choice(cb)
        s.hands[0, a, x] -= 1
        s.hands[0, b, x] += 1
        s.hands[0, b, y] -= 1
        s.hands[0, a, y] += 1
    held = np.flatnonzero(s.hands[0, a])
    if not s.stock_len[0] or not len(held):   # an empty stock or hand: nothing to swap there
        s.rng[0] ^= np.uint64(0x9E3779B97F4A7C15)
        return out
    k = int(rng.integers(int(s.stock_len[0])))
    x, y = int(rng.choice(held)), int(s.stock[0, k])
    if x != y:
        s.hands[0, a, x] -= 1
        s.hands[0, a, y] += 1
        s.stock[0, k] = x
    s.rng[0] ^= np.uint64(0x9E3779B97F4A7C15)
    return out


def test_every_resampled_world_at_ten_players_loads_back_from_its_own_text():
    """Before: the hands were dealt in seat order only, and an earlier hand could take the
    cards a later one is known to hold (it drew with nothing playable): 1.4% to 1.8% of the
    worlds at basic with ten players broke what the table knows, and deserialize_state
    refused the world's own serialize() text."""
    game = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 10})
    rng = np.random.default_rng(0)
    worlds = 0
    for _ in range(12):
        state = game.new_initial_state()
        while not state.is_terminal():
            me = state.current_player()
            world = state.resample_from_infostate(me, pyspiel.UniformProbabilitySampler(0., 1.))
            game.deserialize_state(world.serialize())   # its knowledge checked as it loads
            worlds += 1
            state.apply_action(int(rng.choice(state.legal_actions())))
    assert worlds > 1000


@pytest.mark.parametrize("preset, players", [("basic", 3), ("classic", 4), ("ono", 4)])
def test_the_resampler_keeps_the_seats_knowledge_and_reveals_no_hidden_card(preset, players):
    from test_engine_bits import lacked_types

    from ono_env import _engine as E
    from ono_env import cards as C

    game = pyspiel.load_game(O.GAME_NAME, {"preset": preset, "players": players})
    rng = np.random.default_rng(4)
    checked = knowing = 0
    for _ in range(24):
        state = _random_game(game.new_initial_state(), rng, steps=int(rng.integers(5, 100)))
        if state.is_terminal():
            continue
        me = state.current_player()
        seen = state.engine.to_dict(0)
        swapped = _hidden_swap(state, rng)
        assert swapped.engine.state.rng[0] != state.engine.state.rng[0]
        worlds = []
        for s in (state, swapped):
            draws = iter([0.25, 0.75])
            worlds.append([s.resample_from_infostate(me, lambda d=draws: next(d))
                           for _ in range(2)])
        for w, w_swapped in zip(*worlds):
            # the same draws give the same world whatever the hidden cards were
            assert w.engine.to_dict(0) == w_swapped.engine.to_dict(0)
            d = w.engine.to_dict(0)
            assert d["hands"][me] == seen["hands"][me] and d["discard"] == seen["discard"]
            assert [len(h) for h in d["hands"]] == [len(h) for h in seen["hands"]]
            assert len(d["stock"]) == len(seen["stock"])
            assert w.observation_string(me) == state.observation_string(me)
            assert w.legal_actions() == state.legal_actions()
            assert w.history_names == state.history_names
            # the information state too (the seat's record of what it saw is kept); the
            # other seats' records are of the world only, not of the deal's hidden cards
            assert w.information_state_string(me) == state.information_state_string(me)
            for q in range(players):
                assert w.information_state_string(q) == w_swapped.information_state_string(q)
            # what the table has seen of each hand holds in the world: at least `known` of
            # its cards are of types it is not known to lack
            pl = state.engine.state.pl[0]
            hands = w.engine.state.hands[0].astype(np.int64)
            outside = np.where(lacked_types(pl[:, E.S_LACKS]), 0, hands).sum(axis=1)
            assert (outside >= pl[:, E.S_KNOWN]).all()
            # the public columns, and the acting seat's own knowledge of the other hands,
            # are kept (another seat's private knowledge is not the acting seat's to see)
            assert np.array_equal(w.engine.state.pl[0, :, :E.NUM_S], pl[:, :E.NUM_S])
            assert np.array_equal(w.engine.state.pl[0, me], pl[me])
            known_held = pl[me, E.S_SEEN:].reshape(-1, C.NUM_CARD_TYPES)
            assert (hands >= known_held).all()   # the cards it knows a hand holds are in it
            knowing += int((pl[:, E.S_KNOWN] > 0).any())
        assert worlds[0][0].engine.to_dict(0) != worlds[0][1].engine.to_dict(0)
        checked += 1
    assert checked >= 6
    # under basic (no voluntary draw) a draw shows that a hand held nothing playable, so
    # some of these positions know something of a hand; under classic and ono a draw shows
    # nothing and random play rarely reveals a card any other way
    assert knowing > 0 or preset != "basic"
    with pytest.raises(ValueError, match="allowed: the acting player"):
        state.resample_from_infostate((me + 1) % 3, lambda: 0.5)
    # before: -1.0 an OverflowError, nan "cannot convert float NaN", 2.0 taken silently
    for bad in (-1.0, float("nan"), 2.0, 1.0, "0.5", True):
        with pytest.raises(ValueError, match=r"probability_sampler\(\) gave .*; allowed: a "
                                             r"uniform draw, a number in \[0, 1\)"):
            state.resample_from_infostate(me, lambda b=bad: b)
    for bad in (None, 0.5):   # before: "'NoneType' object is not callable"
        with pytest.raises(ValueError, match=r"probability_sampler = .*; allowed: a function"):
            state.resample_from_infostate(me, bad)


class _ISMCTSBot:
    """OpenSpiel's ISMCTSBot with ``restart_at``, which ``evaluate_bots`` calls and that bot
    lacks in OpenSpiel 2.0 (it searches afresh at every step: ``run_search`` resets it)."""

    def __new__(cls, *args, **kwargs):
        from open_spiel.python.algorithms import ismcts

        class Bot(ismcts.ISMCTSBot):
            def restart_at(self, state):
                self.reset()

        return Bot(*args, **kwargs)


def test_openspiels_bots_play_whole_games():
    from open_spiel.python.algorithms import evaluate_bots, mcts

    game = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 2})
    rs = np.random.RandomState(0)
    evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=rs)
    ismcts_bot = _ISMCTSBot(game, evaluator, uct_c=2.0, max_simulations=8, random_state=rs)
    mcts_bot = mcts.MCTSBot(game, uct_c=2.0, max_simulations=8, evaluator=evaluator,
                            random_state=rs)
    random_bot = pyspiel.make_uniform_random_bot(1, 0)
    for bots in ([ismcts_bot, random_bot], [mcts_bot, ismcts_bot]):
        returns = evaluate_bots.evaluate_bots(game.new_initial_state(), bots, rs)
        assert sorted(returns) == [-1.0, 1.0]


@pytest.mark.parametrize("preset, players", [("ono", 3), ("uno2018", 2), ("stacking", 6)])
def test_the_projects_agents_sit_at_openspiel_tables_as_bots(preset, players):
    """The generalist and a baseline as OpenSpiel bots play the moves the same agents
    choose from each seat's own observation of the same deal, stepped by the engine."""
    from open_spiel.python.algorithms import evaluate_bots

    from ono_env.agents import make_agent
    from ono_env.agents.base import observation_version

    game = pyspiel.load_game(O.GAME_NAME, {"preset": preset, "players": players, "seed": 5})
    names = ["ppo-any"] + ["color"] * (players - 1)
    state = game.new_initial_state()
    bots = [O.AgentBot(name, game, p, seed=p) for p, name in enumerate(names)]
    returns = evaluate_bots.evaluate_bots(state, bots, np.random.RandomState(0))
    assert state.is_terminal() and sorted(returns)[-1] == 1.0

    agents = [make_agent(name, game.rules) for name in names]
    rngs = [np.random.default_rng(p) for p in range(players)]   # each bot's, from its seed
    twin = VecGame(game.rules, 1, seed=state.deal_seed)
    got = np.zeros(players)
    for a in state.history():
        p = int(twin.current_player[0])
        obs = twin.observe(p, version=observation_version(agents[p]))
        assert int(agents[p].act(obs, twin.legal_mask(), rngs[p])[0]) == a
        result = twin.step(np.array([a]))
        got += result.rewards[0]
    assert bool(result.terminated[0]) and np.allclose(got, returns, atol=1e-6)


def test_a_search_agent_bot_is_reproducible_from_its_seed_and_bad_input_is_named():
    from open_spiel.python.algorithms import evaluate_bots

    game = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 2, "seed": 1})

    def history(seed):
        state = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 2,
                                                "seed": 1}).new_initial_state()
        bots = [O.AgentBot("pimc:4", game, 0, seed=seed), O.AgentBot("random", game, 1)]
        evaluate_bots.evaluate_bots(state, bots, np.random.RandomState(0))
        return state.history()

    assert history(7) == history(7)
    assert any(history(7) != history(s) for s in (8, 9, 10))
    oracle = O.AgentBot("oracle", game, 1)
    assert re.fullmatch(r"AgentBot\('oracle:\d+ \(cheating\)', player_id=1\)", repr(oracle))
    assert oracle.cheating and not O.AgentBot("pimc:4", game, 1).cheating
    # a bot goes on from game to game with its generator: two bots of one seed, the same games
    again = [O.AgentBot("pimc:4", game, 0, seed=7), O.AgentBot("random", game, 1)]
    twin = [O.AgentBot("pimc:4", game, 0, seed=7), O.AgentBot("random", game, 1)]
    for _ in range(2):
        played = []
        for bots in (again, twin):
            state = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 2,
                                                    "seed": 1}).new_initial_state()
            evaluate_bots.evaluate_bots(state, bots, np.random.RandomState(0))
            played.append(state.history())
        assert played[0] == played[1]
    # rules that differ only in the preset's name are the same rules
    renamed = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 2})
    state = renamed.new_initial_state()
    state.rules = state.rules.replace(name="my-basic")
    assert O.AgentBot("greedy", game, state.current_player()).step(state) in state.legal_actions()
    state = game.new_initial_state()
    other = pyspiel.load_game(O.GAME_NAME, {"preset": "ono", "players": 2})
    hand6 = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 2, "hand_size": "6"})
    for make, match in [
        (lambda: O.AgentBot("greedy", game, 2), r"player_id=2; allowed: a seat 0 to 1"),
        (lambda: O.AgentBot("greedy", game, True), r"player_id=True; allowed"),
        (lambda: O.AgentBot("nope", game, 0), r"unknown agent 'nope'"),
        (lambda: O.AgentBot("greedy", "basic", 0), r"game of type str; allowed: a python_ono"),
        (lambda: O.AgentBot("greedy", game, 0, seed=-1), r"seed=-1; allowed"),
        (lambda: O.AgentBot("greedy", game, 1 - state.current_player()).step(state),
         r"the bot plays player \d, and it is player \d's turn"),
        (lambda: O.AgentBot("greedy", other, state.current_player()).step(state),
         r"the state's rules differ from the bot's: .*catch_penalty=0 \(the bot's 4\)"),
        (lambda: O.AgentBot("greedy", hand6, state.current_player()).step(state),
         r"the state's rules differ from the bot's: hand_size=7 \(the bot's 6\); allowed"),
        (lambda: O.AgentBot("greedy", game, 0).step(object()), r"a state of type object; allowed: a state"),
    ]:
        with pytest.raises(ValueError, match=match):
            make()


def test_the_openspiel_example_without_pyspiel_names_what_to_install_in_one_line():
    """Run where pyspiel cannot be imported (before: a traceback)."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "docs" / "examples" / \
        "openspiel_policy_gradient.py"
    run = ("import runpy, sys; sys.modules['pyspiel'] = None; sys.argv = ['x.py']; "
           f"runpy.run_path({str(script)!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip() == ("openspiel_policy_gradient.py: ono_env.envs.openspiel needs "
                                   "pyspiel, which is not installed: pip install "
                                   "'ono-env[openspiel]'")


def test_an_agent_trained_by_openspiel_is_exported_and_plays_in_the_arena(tmp_path):
    """docs/examples/openspiel_policy_gradient.py with a tiny budget: OpenSpiel's own
    learner, its policy written as a model file, played by the project's arena."""
    import importlib.util
    from pathlib import Path

    from ono_env.agents import make_agent
    from ono_env.agents.learned import read_metadata
    from ono_env.arena import run_arena

    script = Path(__file__).resolve().parent.parent / "docs" / "examples" / \
        "openspiel_policy_gradient.py"
    spec = importlib.util.spec_from_file_location("openspiel_pg", script)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    path, played, decisions, trained = example.train(episodes=4, minutes=5, out=tmp_path,
                                                     hidden=16, batch_size=2)
    assert played == 4 and decisions > 0 and path.exists()
    meta = read_metadata(path)
    assert meta["training_steps"] == decisions and meta["architecture"]["activation"] == "relu"
    rules = PRESETS["basic"].replace(num_players=2)
    agent = make_agent(str(path), rules)
    game = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 2})
    state = game.new_initial_state()
    # the exported network, given the seat's observation, gives OpenSpiel's agent's
    # probabilities on the tensor OpenSpiel hands it (the observation over its scale)
    seat = state.current_player()
    tensor = np.asarray(state.information_state_tensor(seat), np.float32)
    legal = state.legal_actions()
    mask = np.zeros((1, 85), bool)
    mask[0, legal] = True
    probs, value = agent.explain(state.engine.observe(seat), mask)
    _, expected = trained._act(tensor, legal)
    assert value is not None and np.allclose(probs[0], expected, atol=1e-5)
    result = run_arena([str(path), "random"], rules, num_games=40, seed=0)
    assert result.records.wins.sum() == 40
    with pytest.raises(ValueError, match="not an OpenSpiel PyTorch PolicyGradient"):
        O.export_policy_gradient(object(), game, str(tmp_path / "x.safetensors"),
                                 training_steps=0)
    for steps in (1.5, True, -1):   # before: written as int(steps)
        with pytest.raises(ValueError, match=r"training_steps=.*; allowed: a whole number >= 0"):
            O.export_policy_gradient(trained, game, str(tmp_path / "y.safetensors"),
                                     training_steps=steps)
    three = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 3})
    with pytest.raises(ValueError, match=r"a network for \(241,\) inputs; this game \(basic, "
                                         r"3 players, observation version 1\) has "
                                         r"information-state tensors of \(243,\): export the "
                                         r"agent with the game it was trained on"):
        O.export_policy_gradient(trained, three, str(tmp_path / "z.safetensors"),
                                 training_steps=0)   # before: a "damaged model" error
    assert not any(tmp_path.glob("[yz].safetensors"))


def test_a_state_serialises_as_json_and_replays():
    game = pyspiel.load_game(O.GAME_NAME, {"preset": "classic", "players": 3})
    state = _random_game(game.new_initial_state(), np.random.default_rng(5), steps=60)
    text = state.serialize()
    assert text.startswith("{") and '"actions"' in text     # JSON: nothing in it runs
    again = game.deserialize_state(text)
    assert str(again) == str(state) and again.history() == state.history()
    assert again.history_names == state.history_names and again.returns() == state.returns()
    world = state.resample_from_infostate(state.current_player(), lambda: 0.4)
    back = game.deserialize_state(world.serialize())
    assert str(back) == str(world) and back.history() == world.history()
    # texts of version 1 (before the rules were written) and 2 (before the reward and the
    # cut were) still replay
    import json
    two = {k: v for k, v in json.loads(text).items() if k not in ("reward", "max_decisions")}
    old = {k: v for k, v in two.items() if k != "rules"} | {"version": 1}
    for written in (two | {"version": 2}, old):
        assert game.deserialize_state(json.dumps(written)).history() == state.history()
    # a state of a game with another reward or cut is refused (before: a points game's state
    # read as a win game's, its returns changed; one terminal at its cut played on)
    for params, said in (({"reward": "points", "target_score": "500"}, "reward='points', where "
                                                                       "this game's is 'win'"),
                         ({"max_decisions": 400}, "max_decisions=400, where this game's is "
                                                  "50000")):
        theirs = pyspiel.load_game(O.GAME_NAME, {"preset": "classic", "players": 3, **params})
        with pytest.raises(ValueError, match=rf"a state of a game with {said}; allowed: a state "
                                             rf"this game wrote"):
            game.deserialize_state(theirs.new_initial_state().serialize())
    # a state of other rules is refused (before: replayed under these, refused only where an
    # action happened not to be legal)
    other = pyspiel.load_game(O.GAME_NAME, {"preset": "classic", "players": 3,
                                            "voluntary_draw": "false"})
    with pytest.raises(ValueError, match=r"a state of other rules \(voluntary_draw differ\); allowed: "
                                         r"a state this game wrote"):
        other.deserialize_state(text)
    for bad, match in [("[1]", "not a serialised state"), ("{", "malformed"),
                       (text.replace('"version": 3', '"version": 4'), "not a serialised state"),
                       (text.replace('"version": 3', '"version": 2'), "not a serialised state"),
                       (text.replace('"version": 3', '"version": 1'), "not a serialised state"),
                       # before, true and 1.0 passed as version 1 (JSON's true == 1 in Python)
                       (text.replace('"version": 3', '"version": true'), "not a serialised state"),
                       (text.replace('"version": 3', '"version": 3.0'), "not a serialised state"),
                       (text.replace('"max_decisions": 50000', '"max_decisions": 5e4'),
                        "max_decisions=50000.0, where"),
                       (text.replace('"stacking": false', '"stacking": 3'), "state: rules: "),
                       (text.replace('"actions": [', '"actions": [99, '), "action 99 is not legal"),
                       (text.replace('"seed": ', '"seed": -'), "seed=-"),
                       # before: said up to 2**64 - 1, then VecGame refused 2**63 unnamed
                       (re.sub(r'"seed": [0-9]+', f'"seed": {2**63}', text),
                        r"seed=9223372036854775808; allowed: an integer from 0 to "
                        r"9,223,372,036,854,775,807")]:
        with pytest.raises(ValueError, match=match):
            game.deserialize_state(bad)


def test_states_and_games_copy_and_pickle():
    """Before: copy.copy, copy.deepcopy and pickle of a state or a game gave OpenSpiel's
    "GetRNGState unimplemented"."""
    import copy
    import pickle
    game = pyspiel.load_game(O.GAME_NAME, {"preset": "ono", "players": 3,
                                           "observation_version": 2})
    state = _random_game(game.new_initial_state(), np.random.default_rng(7), steps=40)
    seat = state.current_player()
    for other in (copy.copy(state), copy.deepcopy(state), pickle.loads(pickle.dumps(state))):
        assert str(other) == str(state) and other.history() == state.history()
        assert other.observation_tensor(seat) == state.observation_tensor(seat)
        other.apply_action(other.legal_actions()[0])   # apart: the state stays as it was
        assert len(other.history()) == len(state.history()) + 1
    again = pickle.loads(pickle.dumps(game))
    assert again.get_parameters() == game.get_parameters()
    assert str(again.new_initial_state()) == str(pyspiel.load_game(
        O.GAME_NAME, game.get_parameters()).new_initial_state())   # deals from its seed afresh
    world = state.resample_from_infostate(seat, lambda: 0.3)
    world.apply_action(world.legal_actions()[0])
    with pytest.raises(ValueError, match="a resampled world that has played on"):
        pickle.dumps(world)


def test_a_serialised_world_must_agree_with_what_its_deal_shows_the_acting_seat():
    # before: a position of another seat's turn (current_player() then said one seat and the
    # engine played another), other scores or another discard pile loaded silently
    import json

    game = pyspiel.load_game(O.GAME_NAME, {"preset": "classic", "players": 3})
    state = _random_game(game.new_initial_state(), np.random.default_rng(3), steps=30)
    world = json.loads(state.resample_from_infostate(state.current_player(), lambda: 0.6)
                       .serialize())
    me, pos = state.current_player(), world["position"]
    other = dict(pos, hands=[list(reversed(h)) for h in pos["hands"]])   # any order: a world
    game.deserialize_state(json.dumps(dict(world, position=other)))
    for change, named in [(dict(current_player=(me + 1) % 3), "current_player"),
                          (dict(scores=[400, 0, 0]), "scores"), (dict(decisions=0), "decisions"),
                          (dict(discard=pos["discard"][:-1] + ["W"]), "discard"),
                          (dict(hands=[h + ["R1"] if q != me else h
                                       for q, h in enumerate(pos["hands"])]), "hand sizes"),
                          (dict(hands=[[c for c in h if c != h[0]] + ["W"] * h.count(h[0])
                                       if q == me else h
                                       for q, h in enumerate(pos["hands"])]),
                           f"hand of the acting player {me}")]:
        with pytest.raises(ValueError, match=f"the position's {named} .* is not the replayed "
                                             f"deal's"):
            game.deserialize_state(json.dumps(dict(world, position={**pos, **change})))
    with pytest.raises(ValueError, match="is not the replayed deal's"):   # no actions
        game.deserialize_state(json.dumps(dict(world, actions=[])))


def _world_where(game, rng, wanted):
    """A resampled world's JSON (and its deal's engine state and acting seat) at the first
    point of random play where ``wanted(state row 0 arrays, acting seat)`` holds."""
    import json
    for _ in range(200):
        state = game.new_initial_state()
        while not state.is_terminal():
            me = state.current_player()
            if wanted(state.engine.state, me):
                world = state.resample_from_infostate(me, lambda: 0.25)
                return json.loads(world.serialize()), world.engine.state, me
            state.apply_action(int(rng.choice(state.legal_actions())))
    raise AssertionError("no such point")


def test_a_serialised_world_must_hold_what_the_record_says_of_each_hand():
    # before: a known card swapped for a stock card, or a card of a type a hand is known
    # to lack, loaded; every resample of that world kept it
    import json

    from ono_env import _engine as E
    from ono_env import cards as C
    NC, rng = C.NUM_CARD_TYPES, np.random.default_rng(4)

    def swapped(d, q, take, give):   # hand q gives a card `take` to the stock for `give`
        pos = json.loads(json.dumps(d["position"]))
        pos["hands"][q].remove(take)
        pos["stock"].remove(give)
        pos["hands"][q].append(give)
        pos["stock"].append(take)
        return json.dumps(dict(d, position=pos))

    game = pyspiel.load_game(O.GAME_NAME, {"preset": "uno2018", "players": 2,
                                           "wild_customizable": "swap_hands"})
    def seen(s, me):   # the acting seat knows a card of the other hand
        return s.pl[0, me, E.S_SEEN + NC * (1 - me):E.S_SEEN + NC * (2 - me)].any()
    d, s, me = _world_where(game, rng, seen)
    q = 1 - me
    known = C.CARD_NAMES[int(np.flatnonzero(s.pl[0, me, E.S_SEEN + NC * q:
                                                  E.S_SEEN + NC * (q + 1)])[0])]
    other = next(c for c in d["position"]["stock"] if c != known)
    with pytest.raises(ValueError, match=f"player {q}'s hand holds .* the acting player {me} "
                                         f"knows it holds"):
        game.deserialize_state(swapped(d, q, known, other))

    game = pyspiel.load_game(O.GAME_NAME, {"preset": "basic", "players": 2})

    def lacks(s, me):   # the other seat lacks types, and every card of it is covered
        q = 1 - me
        return s.pl[0, q, E.S_LACKS] and s.pl[0, q, E.S_KNOWN] == s.pl[0, q, E.S_HAND_LEN]
    d, s, me = _world_where(game, rng, lacks)
    q, code, bits = 1 - me, int(s.pl[0, 1 - me, E.S_LACKS]), 0
    for b, mask in enumerate(E._LACKS_BITS.tolist()):
        bits |= mask if code >> b & 1 else 0
    lacked = next(c for c in d["position"]["stock"]
                  if bits >> C.CARD_NAMES.index(c) & 1)
    with pytest.raises(ValueError, match=f"player {q}'s hand holds 1 cards of types it is "
                                         f"known to lack, more than the 0"):
        game.deserialize_state(swapped(d, q, d["position"]["hands"][q][0], lacked))


def test_a_player_out_of_range_is_refused_and_changes_no_seats_record():
    # before: the perfect-recall observer read player -1 as the last seat's record (its
    # private text, under the name of another player) and cut that record short for good
    from open_spiel.python.observation import make_observation

    game = pyspiel.load_game(O.GAME_NAME, {"players": 3, "seed": 7})
    state = game.new_initial_state()
    before = state.information_state_string(2)
    for recall in (True, False):
        obs = make_observation(game, pyspiel.IIGObservationType(
            perfect_recall=recall, public_info=True,
            private_info=pyspiel.PrivateInfoType.SINGLE_PLAYER))
        for player in (-1, -3, 3, True, 1.0):
            with pytest.raises(ValueError, match=f"of player {player!r}; allowed: a player 0 "
                                                 f"to 2"):
                obs.string_from(state, player)
            with pytest.raises(ValueError, match="allowed: a player 0 to 2"):
                obs.set_from(state, player)
    assert state.information_state_string(2) == before
    # the state's own strings (before: OpenSpiel's C++ check, "player < NumPlayers()")
    for player in (-1, 3, True):
        for method, what in (("information_state_string", "an information state string"),
                             ("observation_string", "an observation string")):
            with pytest.raises(ValueError, match=f"{what} of player {player!r}; allowed: a "
                                                 f"player 0 to 2"):
                getattr(state, method)(player)
    assert state.observation_string() == state.observation_string(state.current_player())
    with pytest.raises(ValueError, match="an action's name of player 3"):
        state.action_to_string(3, 9)
    assert state.action_to_string(state.current_player(), 9) == "play R9"
    done = _random_game(state.clone(), np.random.default_rng(0))
    assert done.action_to_string(done.current_player(), 9) == "play R9"   # the terminal id
    with pytest.raises(ValueError, match="resample_from_infostate of a finished game"):
        done.resample_from_infostate(done.current_player(), lambda: 0.5)
    with pytest.raises(ValueError, match="no chance nodes"):   # before: "pure virtual"
        state.chance_outcomes()


def test_observers_and_state_calls_refuse_another_tables_states_and_players_by_name():
    game = pyspiel.load_game(O.GAME_NAME, {"players": 3, "seed": 7})
    state = game.new_initial_state()
    before = state.serialize()
    four = pyspiel.load_game(O.GAME_NAME, {"players": 4}).new_initial_state()
    wide = pyspiel.load_game(O.GAME_NAME, {"players": 3, "observation_version": 2})
    ono4 = pyspiel.load_game(O.GAME_NAME, {"players": 4, "preset": "ono",
                                           "observation_version": 2}).new_initial_state()
    obs, obs2 = game.make_py_observer(), wide.make_py_observer()
    sampler = pyspiel.UniformProbabilitySampler(0.0, 1.0)
    for call, match in [
        # before: a broadcasting error, seat 3 of a 4-player table from a 3-player observer,
        # a version-2 observer (one length) filled from another table, an AttributeError
        (lambda: obs.set_from(four, 0), r"an observation of a state of other rules: "
                                        r"num_players=4 \(this game's 3\); allowed"),
        (lambda: obs.string_from(four, 3), r"an observation string of a state of other rules"),
        (lambda: obs2.set_from(ono4, 3), r"an observation of a state of other rules: .*"
                                         r"num_players=4"),
        (lambda: obs.set_from("x", 0), r"an observation of a str; allowed: a state of a "
                                       r"python_ono game"),
        # before: True and 1.0 were player 1
        (lambda: state.resample_from_infostate(True, sampler),
         r"resample_from_infostate of player True; allowed: a player 0 to 2"),
        (lambda: state.resample_from_infostate(1.0, sampler), r"of player 1.0; allowed"),
        # before: OpenSpiel's C++ checks' text, or "pure virtual function"
        (lambda: state.player_return(7), r"player_return of player 7; allowed: a player 0 to 2"),
        (lambda: state.player_return(-1), r"player_return of player -1; allowed"),
        (lambda: state.player_reward(3), r"player_reward of player 3; allowed"),
        (lambda: state.apply_actions([0]), r"apply_actions is for simultaneous moves; allowed: "
                                           r"apply_action"),
        (lambda: state.distribution_support(), r"distribution_support is for mean-field games"),
        # before: AttributeError: 'str' object has no attribute 'public_info'
        (lambda: game.make_py_observer("x"), r"observation type 'x'; allowed: a "
                                             r"pyspiel.IIGObservationType, or None"),
        (lambda: game.make_py_observer(5), r"observation type 5; allowed"),
    ]:
        with pytest.raises(ValueError, match=match):
            call()
    assert state.serialize() == before
    done = _random_game(state.clone(), np.random.default_rng(0))
    assert [done.player_return(p) for p in range(3)] == done.returns()
    assert [done.player_reward(p) for p in range(3)] == done.rewards()
    obs.set_from(state, 1)   # a state of the same rules under another preset name is taken
    renamed = state.clone()
    renamed.rules = renamed.rules.replace(name="mine")
    assert obs.string_from(renamed, 1) == obs.string_from(state, 1)


@pytest.mark.parametrize("preset,players", [("ono", 4), ("uno2018", 3), ("classic", 3)])
def test_a_resampled_world_replays_exactly(preset, players):
    # set_position starts a position's history empty; the replay puts back what a resampled
    # world keeps (the public record and the acting seat's own knowledge), so every array of
    # the engine, and every seat's version-2 observation, comes back as it was
    game = pyspiel.load_game(O.GAME_NAME, {"preset": preset, "players": players})
    rng = np.random.default_rng(7)
    checked = 0
    for steps in (20, 45, 70, 95, 120):
        state = _random_game(game.new_initial_state(), rng, steps=steps)
        if state.is_terminal():
            continue
        world = state.resample_from_infostate(state.current_player(), lambda: 0.3)
        back = game.deserialize_state(world.serialize())
        for name in world.engine.state.arrays._fields:
            np.testing.assert_array_equal(getattr(back.engine.state.arrays, name),
                                          getattr(world.engine.state.arrays, name), name)
        for seat in range(players):
            np.testing.assert_array_equal(back.engine.observe(seat, version=2),
                                          world.engine.observe(seat, version=2))
        checked += 1
    assert checked >= 3


def test_a_game_made_directly_checks_its_parameters_as_load_game_does():
    # before: a RuleSet gave a TypeError, and rules='basic' (no such parameter) was ignored,
    # so the game played the default preset
    from ono_env.envs.openspiel import OnoGame
    from ono_env.rules import RuleSet

    for params, message in ((RuleSet.preset("basic"), "params is a RuleSet; allowed: None or a dict"),
                            ({"rules": "basic"}, "unknown parameter 'rules'; allowed: preset, players"),
                            ({"players": "3"}, "parameter players='3' (str); allowed: an int"),
                            ({"players": True}, "parameter players=True (bool); allowed: an int"),
                            ({"preset": 4}, "parameter preset=4 (int); allowed: a str")):
        with pytest.raises(ValueError, match=re.escape(f"python_ono: {message}")):
            OnoGame(params)
    assert OnoGame({"preset": "basic", "players": 3}).rules.name == "basic"
