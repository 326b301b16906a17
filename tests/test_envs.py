"""The adapters: observations, PettingZoo AEC, Gymnasium, Stable-Baselines3 VecEnv."""

from __future__ import annotations

import itertools
import warnings

import gymnasium
import numpy as np
import pytest
from conftest import make_position, random_playout
from pettingzoo.test import api_test, seed_test

import ono_env
from ono_env import PRESETS, RuleSet, VecGame, ono_v0, random_legal
from ono_env.agents import RandomAgent, make_agent
from ono_env.envs.gym_env import OnoEnv
from ono_env.envs.sb3 import OnoVecEnv
from ono_env.game import first_legal
from ono_env.observation import format_observation_layout, observation_layout, observation_size

CASES = [(name, n) for name in PRESETS for n in (2, 3, 4, 10)]


# ---- observation -----------------------------------------------------------------------
def test_layout_table_covers_the_vector_without_gaps():
    for rules in (RuleSet.preset("classic", num_players=4), RuleSet.preset("basic", num_players=2)):
        blocks = observation_layout(rules)
        assert blocks[0].start == 0
        assert all(a.stop == b.start for a, b in itertools.pairwise(blocks))
        assert VecGame(rules, 2, seed=0).observe(0).shape == (2, observation_size(rules))
    assert "scores" in format_observation_layout(RuleSet.preset("classic"))
    assert "scores" not in format_observation_layout(RuleSet.preset("basic"))


def test_observation_holds_own_hand_and_public_facts():
    rules = RuleSet.preset("classic", num_players=3)
    g = VecGame.from_dict(make_position(rules, [["R1", "R1", "W"], ["B1", "B2"], ["G1"]],
                                        ["Y3", "R5"], called=[False, False, True]))
    o = g.observe(0)[0]
    view = {b.name: o[b.start:b.stop] for b in observation_layout(rules)}
    assert view["hand"][1] == 2 and view["hand"][52] == 1 and view["hand"].sum() == 3
    assert view["top_card"][5] == 1 and view["color"].tolist() == [1, 0, 0, 0]
    assert view["my_turn"][0] == 1 and view["discard_pile"].sum() == 2
    assert view["opponents"].tolist() == [2, 0, 1, 1]  # seat 1: 2 cards; seat 2: 1 card, called
    assert view["self"].tolist() == [3, 0]


def _swap(d, a_key, a_index, b_key, b_index):
    d = {**d, "hands": [list(h) for h in d["hands"]], "stock": list(d["stock"])}
    def get(key):
        return d["stock"] if key == "stock" else d["hands"][key]
    A, B = get(a_key), get(b_key)
    A[a_index], B[b_index] = B[b_index], A[a_index]
    return d


@pytest.mark.parametrize("preset", list(PRESETS))
def test_no_hidden_information_in_observations(preset):
    g = VecGame(preset, 1, seed=21, num_players=4)
    random_playout(g, 15, seed=2)
    d = g.to_dict(0)
    n = 4
    base = [VecGame.from_dict(d).observe(s)[0] for s in range(n)]
    # a card of seat 1 and a different card of seat 2 change places
    i = 0
    j = next(k for k, c in enumerate(d["hands"][2]) if c != d["hands"][1][i])
    swapped = VecGame.from_dict(_swap(d, 1, i, 2, j))
    for s in (0, 3):
        np.testing.assert_array_equal(swapped.observe(s)[0], base[s])
    assert not np.array_equal(swapped.observe(1)[0], base[1])  # seat 1 does see its hand
    # a card of seat 2 and a different card deep in the stock change places
    k = next(k for k, c in enumerate(d["stock"]) if c != d["hands"][2][0])
    swapped = VecGame.from_dict(_swap(d, 2, 0, "stock", k))
    for s in (0, 1, 3):
        np.testing.assert_array_equal(swapped.observe(s)[0], base[s])


# ---- PettingZoo --------------------------------------------------------------------------
@pytest.mark.parametrize("preset,players", CASES)
def test_pettingzoo_api(preset, players):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(ono_v0.env(rules=preset, num_players=players), num_cycles=1000)


@pytest.mark.parametrize("preset,players", CASES)
def test_pettingzoo_seed(preset, players):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seed_test(lambda: ono_v0.env(rules=preset, num_players=players), num_cycles=300)


def test_pettingzoo_names_metadata_and_entry_points():
    e = ono_env.env(rules="ono", num_players=3)
    assert e.metadata["name"] == "ono_v0" and not e.metadata["is_parallelizable"]
    assert e.possible_agents == ["player_0", "player_1", "player_2"]
    assert isinstance(ono_env.raw_env(), ono_v0.raw_env)


def test_pettingzoo_rewards_go_to_their_agents_and_infos_list_legal_actions():
    e = ono_v0.raw_env(rules="basic", num_players=3)
    e.reset(seed=4)
    rng = np.random.default_rng(0)
    totals = dict.fromkeys(e.agents, 0.0)
    for agent in e.agent_iter():
        obs, reward, term, trunc, info = e.last()
        totals[agent] += reward
        if term or trunc:
            e.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        assert sorted(info["legal_actions"]) == sorted(ono_env.action_name(a) for a in legal)
        e.step(int(rng.choice(legal)))
    winner = f"player_{e.game.to_dict(0)['winner']}"
    assert totals[winner] == 1.0
    assert all(v == -0.5 for a, v in totals.items() if a != winner)


def test_raw_env_illegal_action_names_the_legal_ones():
    e = ono_v0.raw_env(rules="basic", num_players=2)
    e.reset(seed=0)
    obs = e.observe(e.agent_selection)
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match="legal actions:"):
        e.step(illegal)


def test_raw_env_a_refused_action_keeps_the_reward_the_agent_has_not_read():
    e = ono_v0.raw_env(rules="classic", num_players=2, reward="points")
    with pytest.raises(RuntimeError, match=r"last\(\) before reset\(\)"):
        e.last()
    e.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(5000):   # random legal play until the acting agent has a reward to read
        obs, reward, done, _, _ = e.last()
        if reward != 0 and not done:
            break
        e.step(None if done else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert reward != 0
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0])
    with pytest.raises(ValueError, match="legal actions:"):
        e.step(illegal)
    assert e.last()[1] == reward


def test_wrapped_env_ends_the_episode_on_an_illegal_action():
    e = ono_v0.env(rules="basic", num_players=2)
    e.reset(seed=0)
    agent = e.agent_selection
    illegal = int(np.flatnonzero(e.observe(agent)["action_mask"] == 0)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e.step(illegal)
    assert all(e.terminations.values())
    assert e.rewards[agent] == -1


def test_render_ansi_and_human(capsys):
    e = ono_v0.raw_env(rules="classic", num_players=3, render_mode="ansi")
    e.reset(seed=3)
    e.step(int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0]))
    text = e.render()
    assert "top" in text and "cards]" in text and "last actions: P" in text and "\x1b[" in text
    h = ono_v0.raw_env(rules="classic", num_players=3, render_mode="human")
    h.reset(seed=3)
    assert h.render() is None and "top" in capsys.readouterr().out
    # the Gymnasium env as PettingZoo's (before: a table of a deal nobody asked for, with
    # the learner's hand)
    from ono_env.envs.gym_env import OnoEnv
    g = OnoEnv(rules="basic", render_mode="ansi")
    with pytest.raises(RuntimeError, match=r"^render\(\) before reset\(\): call reset\(\) first$"):
        g.render()
    g.reset(seed=3)
    assert "top" in g.render()


# ---- Gymnasium ---------------------------------------------------------------------------
def test_gymnasium_make_and_checkers():
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gymnasium.make("ono_env/Ono-v0", rules="basic", num_players=2, opponents=["random"], learner_seat=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env.unwrapped)
        sb3_check_env(OnoEnv("classic", num_players=3, learner_seat="random"))


def test_gymnasium_learner_sees_only_its_turns_and_its_reward():
    env = OnoEnv("basic", num_players=3, opponents="random", learner_seat=1)
    obs, _ = env.reset(seed=5)
    rules = env.rules
    my_turn = next(b for b in observation_layout(rules) if b.name == "my_turn").start
    rng = np.random.default_rng(1)
    total = 0.0
    for _ in range(500):
        assert obs[my_turn] == 1.0 and int(env.game.state.current[0]) == 1
        mask = env.action_masks()
        obs, reward, term, trunc, _info = env.step(int(rng.choice(np.flatnonzero(mask))))
        total += reward
        if term or trunc:
            break
    assert term
    winner = env.game.to_dict(0)["winner"]
    assert total == (1.0 if winner == 1 else -0.5)


def test_gymnasium_illegal_action_lose_or_raise():
    env = OnoEnv("basic", num_players=2)
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _obs, reward, term, _trunc, info = env.step(illegal)
    assert term and reward == -1.0 and info["illegal_action"] == ono_env.action_name(illegal)
    strict = OnoEnv("basic", num_players=2, illegal_action="raise")
    strict.reset(seed=0)
    with pytest.raises(ValueError, match="legal actions:"):
        strict.step(illegal)
    # what the opponents' opening moves earned arrives with the first step, an illegal one
    # too (before: dropped): one card each, points, the learner last to act
    for seed in range(400):
        env = OnoEnv("classic", 3, hand_size=1, reward="points", learner_seat=2,
                     opponents="random")
        _obs, info = env.reset(seed=seed)
        pending = float(env._driver.pending[0])   # (the driver's, not yet reported)
        if pending != 0.0:
            break
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reward = env.step(int(np.flatnonzero(~info["action_mask"])[0]))[1]
    assert pending != 0.0 and reward == pytest.approx(-1.0 + pending)


def test_opponents_by_name_or_object_and_bad_agents():
    class FirstLegal:
        def act(self, obs, mask, rng):
            return np.argmax(mask, axis=1)

    env = OnoEnv("classic", num_players=3, opponents=["random", FirstLegal()])
    env.reset(seed=0)
    env.step(int(np.flatnonzero(env.action_masks())[0]))
    with pytest.raises(ValueError, match=r"unknown agent .genius.: known agents are color, "
                                         r"defensive, greedy, .*random"):
        OnoEnv("classic", num_players=2, opponents="genius")
    with pytest.raises(ValueError, match="opponents: 1 given for 4 players"):
        OnoEnv("classic", num_players=4, opponents=["random"])
    with pytest.raises(ValueError, match="learner_seat=7"):
        OnoEnv("classic", num_players=4, learner_seat=7)
    # before: NumPy's "truth value of an array is ambiguous", naming nothing
    with pytest.raises(ValueError, match=r"learner_seat=array\(\[0, 1\]\); allowed: 'random'"):
        OnoEnv("classic", num_players=4, learner_seat=np.array([0, 1]))
    assert isinstance(make_agent("random"), RandomAgent)
    # a path object names a model file everywhere a text path does (before: make_agent and
    # the envs refused it, load_agent took it)
    from pathlib import Path

    from ono_env.agents.learned import shipped_models
    model = Path(shipped_models()["ppo-any"])
    assert make_agent(model, "classic").observation_version == 2
    OnoEnv("classic", num_players=3, opponents=model).reset(seed=0)
    OnoEnv("classic", num_players=3, opponents={model: 1, "random": 1}).reset(seed=0)
    # a path object's member is named by its whole path, as a text path's (before: by its
    # file name, so two folders' m.safetensors were one name twice)
    from ono_env.envs.opponents import OpponentPool
    assert OpponentPool({model: 1}, "classic").names == [str(model)]
    # the class of an agent is not an agent (before: it passed the check, then failed inside
    # with a TypeError)
    with pytest.raises(ValueError, match=r"got the class FirstLegal itself: allowed: an "
                                         r"instance of it \(FirstLegal\(...\)\)"):
        make_agent(FirstLegal, "classic")
    from ono_env.arena import run_arena
    with pytest.raises(ValueError, match="got the class FirstLegal itself"):
        run_arena([FirstLegal, "random"], "basic", 2, 2, rating=False)
    # an object whose act cannot be called (before: the env took it, and its first reset
    # failed with "TypeError: 'int' object is not callable")
    actless = type("Actless", (), {"act": 5, "name": "x"})()
    for make in (lambda: make_agent(actless, "basic"),
                 lambda: OnoEnv("basic", num_players=2, opponents=actless, learner_seat=1),
                 lambda: run_arena([actless, "random"], "basic", 2, 2, rating=False)):
        with pytest.raises(ValueError, match=r"an agent's act must be a method act\(obs, mask, "
                                             r"rng\); the Actless given has act = 5 \(int\)"):
            make()


def test_the_generalist_sits_as_an_opponent_in_every_environment(monkeypatch):
    """``opponents="ppo-any"`` in the Gymnasium env, SB3's VecEnv and RLlib's vector env, at
    tables no specialist serves, beside a learner that reads version 1: the driver observes
    the generalist in version 2, and the games end."""
    from ono_env.agents.learned import LearnedAgent
    from ono_env.envs.rllib_env import OnoRLlibVectorEnv
    from ono_env.observation import OBS_V2_SIZE

    seen: list[int] = []
    act = LearnedAgent.act

    def spy(self, obs, mask, rng):
        seen.append(obs.shape[1])
        return act(self, obs, mask, rng)

    monkeypatch.setattr(LearnedAgent, "act", spy)
    rng = np.random.default_rng(0)

    env = OnoEnv("ono", num_players=6, opponents="ppo-any", learner_seat=2)
    obs, _ = env.reset(seed=1)
    assert obs.shape == (observation_size(env.rules, 1),)
    for _ in range(600):
        obs, _r, term, trunc, _i = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
        if term or trunc:
            break
    assert term and seen and set(seen) == {OBS_V2_SIZE}

    def pick(masks):
        return np.array([int(rng.choice(np.flatnonzero(m))) if m.any() else 0 for m in masks])

    venv = OnoVecEnv("uno2018", num_envs=4, seed=0, num_players=5, opponents="ppo-any")
    rl = OnoRLlibVectorEnv({"rules": "stacking", "num_players": 7, "num_envs": 4, "seed": 0,
                            "opponents": "ppo-any"})
    for vec in (venv, rl):
        seen.clear()
        out = vec.reset()
        ended = 0
        for _ in range(300):
            if vec is venv:
                out = vec.step(pick(vec.action_masks()))
                ended += int(np.sum(out[2]))
            else:
                out = vec.step(pick(out[0]["action_mask"] > 0))
                ended += int(np.sum(out[2]) + np.sum(out[3]))
            if ended >= 4:
                break
        assert ended >= 4 and seen and set(seen) == {OBS_V2_SIZE}


def test_the_rllib_vector_env_names_a_uint64_action_past_int64_as_given():
    # before: cast to int64 first, the id was named -1
    from ono_env.envs.rllib_env import OnoRLlibVectorEnv
    env = OnoRLlibVectorEnv({"rules": "basic", "num_envs": 2, "seed": 0})
    obs, _ = env.reset()
    legal = [int(np.flatnonzero(m)[0]) for m in obs["action_mask"] > 0]
    with pytest.raises(ValueError, match=r"^action 18446744073709551615 is out of range "
                                         r"\(action ids are 0 to 84\) in game 0"):
        env.step(np.array([2**64 - 1, legal[1]], np.uint64))
    env.step(np.array(legal, np.uint8))   # nothing changed: the legal ones play


def test_an_opponent_choosing_an_illegal_action_is_an_error():
    class Cheater:
        def act(self, obs, mask, rng):
            return np.argmin(mask, axis=1)

    env = OnoEnv("basic", num_players=2, opponents=Cheater(), learner_seat=1)
    with pytest.raises(ValueError, match="chose illegal action"):
        env.reset(seed=0)
        for _ in range(10):  # the opponent acts at the latest after the learner's turn
            env.step(int(np.flatnonzero(env.action_masks())[0]))



class _FailsOnce:
    """An opponent that plays legally until ``armed``, then raises once (an agent's bug)."""

    def __init__(self):
        self.armed = False

    def act(self, obs, mask, rng):
        if self.armed:
            self.armed = False
            raise RuntimeError("the opponent's own bug")
        return first_legal(mask)


def _first_legal_actions(masks):
    return np.array([int(np.flatnonzero(m)[0]) for m in masks])


def test_an_env_whose_opponent_failed_midway_refuses_to_step_until_reset():
    """The learner's move is made when an opponent raises: the games wait at an opponent's
    turn, so a next step() must not play the learner's action there (it did: for the
    opponent's seat). It says why and asks for reset(), which deals the games again."""
    from ono_env.envs.rllib_env import OnoRLlibVectorEnv

    opp = _FailsOnce()
    env = OnoEnv("basic", num_players=2, opponents=opp, learner_seat=0)
    env.reset(seed=0)
    opp.armed = True
    with pytest.raises(RuntimeError, match="the opponent's own bug"):
        for _ in range(30):   # the opponent is asked at the latest after a few learner moves
            env.step(int(np.flatnonzero(env.action_masks())[0]))
    assert int(env.game.state.current[0]) == 1      # stopped at the opponent's turn
    assert not env.action_masks().any()
    with pytest.raises(RuntimeError, match=r"step\(\) after step\(\) failed midway .*call reset"):
        env.step(0)
    env.reset(seed=0)
    env.step(int(np.flatnonzero(env.action_masks())[0]))   # plays again

    for make in (lambda o: OnoVecEnv("basic", num_envs=3, seed=0, num_players=2, opponents=o,
                                     learner_seat=0),
                 lambda o: OnoRLlibVectorEnv({"rules": "basic", "num_envs": 3, "seed": 0,
                                              "opponents": o, "learner_seat": 0})):
        opp = _FailsOnce()
        venv = make(opp)
        venv.reset()
        opp.armed = True
        step = venv.step
        with pytest.raises(RuntimeError, match="the opponent's own bug"):
            for _ in range(30):
                masks = venv.game.legal_mask().copy()
                step(_first_legal_actions(masks))
        assert (venv.game.state.current == 1).any()
        if hasattr(venv, "action_masks"):   # no learner acts (before: the opponent's actions)
            assert not venv.action_masks().any()
        with pytest.raises(RuntimeError, match="failed midway"):
            step(_first_legal_actions(masks))
        venv.reset()
        step(_first_legal_actions(venv.game.legal_mask()))   # plays again

    # an opponent failing in the deal itself (its opening moves, learner in seat 1)
    opp = _FailsOnce()
    env = OnoEnv("basic", num_players=2, opponents=opp, learner_seat=1)
    opp.armed = True
    with pytest.raises(RuntimeError, match="the opponent's own bug"):
        env.reset(seed=0)
    with pytest.raises(RuntimeError, match=r"after reset\(\) failed midway"):
        env.step(0)


# ---- Stable-Baselines3 VecEnv --------------------------------------------------------------
def test_vecenv_seed_none_leaves_numpys_global_generator_alone():
    # before: SB3's seed(None) drew from np.random, so np.random.seed() chose the deals and
    # the call moved the caller's stream
    venv = OnoVecEnv("basic", num_envs=2, seed=0, num_players=2)
    np.random.seed(123)
    first, after = venv.seed(None)[0], np.random.random()
    np.random.seed(123)
    second = venv.seed(None)[0]
    assert np.random.random() == after and first != second and 0 <= first < 2**63


def test_vecenv_autoreset_infos_and_masks():
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.vec_env import VecMonitor

    venv = VecMonitor(OnoVecEnv("basic", num_envs=16, seed=0, num_players=2))
    assert is_masking_supported(venv)
    obs = venv.reset()
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(300):
        masks = get_action_masks(venv)
        assert masks.shape == (16, ono_env.NUM_ACTIONS) and masks.any(1).all()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, rewards, dones, infos = venv.step(actions)
        for i in np.flatnonzero(dones):
            assert infos[i]["terminal_observation"].shape == obs.shape[1:]
            assert infos[i]["TimeLimit.truncated"] is False
            assert "episode" in infos[i] and rewards[i] in (1.0, -1.0)
            finished += 1
        assert not rewards[~dones].any()
    assert finished > 16


def test_vecenv_is_seeded_and_raises_on_illegal_actions():
    def run(seed):
        venv = OnoVecEnv("classic", num_envs=8, seed=seed, num_players=3)
        obs = venv.reset()
        for _ in range(20):
            obs, _r, _d, _ = venv.step(np.argmax(venv.action_masks(), 1))
        return obs

    np.testing.assert_array_equal(run(3), run(3))
    assert not np.array_equal(run(3), run(4))   # the seed is used
    venv = OnoVecEnv("classic", num_envs=4, seed=0, num_players=2)
    venv.reset()
    with pytest.raises(ValueError, match="illegal action"):
        venv.step(np.argmin(venv.action_masks(), 1))


def test_maskable_ppo_trains_on_the_vecenv_without_illegal_actions():
    from sb3_contrib import MaskablePPO

    class Recording(OnoVecEnv):
        illegal = 0

        def step_async(self, actions):
            masks = self.action_masks()
            self.illegal += int((~masks[np.arange(self.num_envs), actions]).sum())
            super().step_async(actions)

    venv = Recording("basic", num_envs=32, seed=0, num_players=2)
    model = MaskablePPO("MlpPolicy", venv, n_steps=64, batch_size=256, n_epochs=1, seed=0,
                        policy_kwargs={"net_arch": [32]}, device="cpu")
    model.learn(total_timesteps=4096)
    assert model.num_timesteps >= 4096 and venv.illegal == 0


def _seated_names(driver, pool):
    """(B, N-1) pool names of the opponents seated in each game."""
    names = {id(a): n for a, n in zip(pool.agents, pool.names)}
    return np.array([[names.get(id(driver.agents[j]), "?") for j in row] for row in driver.member])


def test_opponent_pool_draws_per_game_and_accepts_snapshots():
    from ono_env.envs.opponents import OpponentPool

    rules = RuleSet.preset("basic", num_players=3)
    pool = OpponentPool({"greedy": 1, "random": 3, "color": 0}, rules)
    venv = OnoVecEnv(rules, num_envs=256, opponents=pool, seed=0)
    venv.reset()
    seated = _seated_names(venv.batch._driver, pool)
    assert not (seated == "color").any()                    # weight 0: never seated
    assert 0.15 < (seated == "greedy").mean() < 0.35        # about 1 in 4 seats
    for _ in range(30):
        venv.step(first_legal(venv.action_masks()))
    pool.add(make_agent("defensive", rules), 5.0, "snapshot-1")
    pool.remove("random")
    assert pool.names == ["greedy", "color", "snapshot-1"]
    with pytest.raises(ValueError, match="opponent weight -1"):
        pool.add("greedy", -1, "again")
    for huge in (10**400, 2**1024):   # before: OverflowError from math.isfinite
        with pytest.raises(ValueError, match=r"opponent weight <an integer of \d+ digits> "
                                             r"\(int\).*allowed: a finite number >= 0"):
            pool.add("greedy", huge, "again")
    pool.add("greedy", -0.0, "zero")   # kept as 0.0 (before: -0.0, shown "-0")
    assert str(pool.weights[-1]) == "0.0" and "zero: 0" in repr(pool)
    pool.remove("zero")
    with pytest.raises(ValueError, match="already has 'greedy'"):
        pool.add("greedy", 1)
    dealt = np.ones(256, bool)
    venv.batch._driver.assign(dealt, np.random.default_rng(0))
    assert set(_seated_names(venv.batch._driver, pool).ravel()) == {"greedy", "snapshot-1"}
    assert len(venv.batch._driver.agents) == 2                    # the removed member is forgotten
    # a change that would leave no positive weight is refused before it is made: an
    # environment draws from the pool in the middle of a step, where it would lose the step
    for change in (lambda: pool.set_weight("snapshot-1", 0), lambda: pool.remove("snapshot-1")):
        pool.set_weight("greedy", 0)
        with pytest.raises(ValueError, match="would leave no member of positive weight"):
            change()
        assert pool.names == ["greedy", "color", "snapshot-1"] and pool.weights == [0, 0, 5.0]
    pool.set_weight("greedy", 1e308)
    with pytest.raises(ValueError, match="would make the weights' sum infinite"):
        pool.set_weight("color", 1e308)
    with pytest.raises(ValueError, match="adding 'big' would make the weights' sum infinite"):
        pool.add("random", 1e308, "big")
    assert pool.names == ["greedy", "color", "snapshot-1"] and pool.weights == [1e308, 0, 5.0]
    # every weight at once: the unnamed members leave; refused as a whole, the pool unchanged
    for weights, message in [({"greedy": 0, "color": 0}, "no member of positive weight"),
                             ({"greedy": 1, "nosuch": 1}, "has no member 'nosuch'"),
                             ({"greedy": True}, "not a bool")]:
        with pytest.raises(ValueError, match=message):
            pool.reweight(weights)
        assert pool.names == ["greedy", "color", "snapshot-1"]
    pool.reweight({"color": 1e308, "greedy": 0})
    assert pool.names == ["greedy", "color"] and pool.weights == [0, 1e308]


@pytest.mark.parametrize("target, version", [(1, 1), (1, 2), (1_000_000, 2), (0, 1)])
def test_every_observation_lies_in_the_declared_box_at_any_target(target, version):
    from ono_env.envs.gym_vector import OnoVectorEnv
    from ono_env.envs.rllib_env import observation_space as rllib_space
    from ono_env.observation import observation_high
    options = {"target_score": target} if target else {"target_score": 0, "scoring": "penalty"}
    rules = RuleSet.preset("classic", **options)
    env = OnoEnv(rules, num_players=2, opponents="random", observation_version=version)
    assert env.observation_space.high.max() == np.float32(observation_high(rules))
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    top = obs.max()
    for _ in range(800):
        assert env.observation_space.contains(obs), (obs.max(), env.observation_space.high.max())
        obs, _, term, trunc, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        top = max(top, obs.max())
        if term or trunc:
            obs, info = env.reset()
    if target == 1_000_000:   # the rules block's target / 500 passes the deck size
        assert top == 2000
    for space in (ono_v0.raw_env(rules=rules, observation_version=version)
                  .observation_space("player_0")["observation"],
                  OnoVecEnv(rules, num_envs=2, observation_version=version).observation_space,
                  OnoVectorEnv(2, rules, observation_version=version)
                  .single_observation_space,
                  rllib_space(rules, version)["observations"]):
        assert space.high.max() == env.observation_space.high.max()


def test_the_observation_functions_take_a_preset_name_and_refuse_what_is_not_rules():
    from ono_env.observation import (
        color_permutation,
        observation_scale,
        observation_view,
        print_observation_layout,
        rules_features,
    )
    classic = RuleSet.preset("classic")
    assert observation_size("classic", 1) == observation_size(classic, 1)
    assert format_observation_layout("classic", 2) == format_observation_layout(classic, 2)
    basic = RuleSet.preset("basic")
    assert observation_layout("basic", 1) == observation_layout(basic, 1)
    assert np.array_equal(observation_scale("classic", 2), observation_scale(classic, 2))
    assert np.array_equal(rules_features("classic"), rules_features(classic))
    assert all(np.array_equal(a, b) for a, b in zip(color_permutation([1, 0, 2, 3], "classic"),
                                                     color_permutation([1, 0, 2, 3], classic)))
    for bad, message in [(None, "rules=None"), (42, "rules must be a RuleSet")]:
        with pytest.raises(ValueError, match=message):
            observation_size(bad, 2)
        # before: print_observation_layout(None) printed classic's 4-player table
        with pytest.raises(ValueError, match=message):
            print_observation_layout(bad, 2)
    with pytest.raises(ValueError, match=r"obs is a list; allowed: a NumPy array of shape \(B, "):
        observation_view([[0.0] * 10], "classic", 1)


def test_a_step_before_any_reset_says_so():
    # before: "step() after the episode ended", for an episode never dealt
    with pytest.raises(RuntimeError, match=r"step\(\) before reset\(\): call reset\(\) first"):
        OnoEnv("basic", num_players=2).step(0)
    env = OnoEnv("basic", num_players=2)
    env.reset(seed=0)
    env._over = True
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(0)
    # the PettingZoo env's views of a deal not yet asked for (before: answered from one)
    from ono_env.envs.ono_v0 import raw_env
    aec = raw_env(rules="basic", num_players=2, render_mode="ansi")
    for call, what in ((aec.render, "render"), (aec.legal_action_names, "legal_action_names")):
        with pytest.raises(RuntimeError, match=rf"^{what}\(\) before reset\(\): call reset\(\) first"):
            call()
    aec.reset(seed=0)
    assert aec.legal_action_names() and "last actions" not in aec.render()


def test_a_stack_of_every_draw_card_stays_in_the_declared_box():
    # before: the bound was the deck size, and a stack of forty Wild Draw Fours passed it
    from ono_env.cards import ACTION_NAMES
    from ono_env.observation import observation_high
    rules = RuleSet.preset("classic", num_players=2, hand_size=50, short_deck=True, wild_cards=0,
                           wild_draw_four_cards=40, stacking=True, challenge=False,
                           wild_draw_four_restricted=False)
    high = observation_high(rules)
    draws = np.array(["+4" in n or "+2" in n for n in ACTION_NAMES])
    game = VecGame(rules, 8, seed=0)
    rng = np.random.default_rng(0)
    top = 0.0
    for _ in range(150):   # stack whenever a draw card can be played
        mask = game.legal_mask()
        stack = mask & draws
        pick = np.where(stack.any(1, keepdims=True), stack, mask)
        game.step(np.argmax(pick * rng.random(pick.shape) + pick, 1))
        top = max(top, float(game.observe(game.current_player).max()))
        if game.finished.all():
            break
    assert rules.deck_size < top <= high


def test_a_stack_restacked_past_the_bound_is_observed_at_the_bound():
    """Under ``ono`` with stacking a penalty draw reshuffles played draw cards into the stock,
    and they are drawn and stacked again: random play reached a pending draw of 114 past the
    bound of 112 (the deck), and the observation left the environments' Box. It reads as the
    bound now, in both layouts; the game still draws every card."""
    from ono_env.observation import OBS_PENDING, observation_high
    from ono_env.positions import read_position
    rules = RuleSet.preset("ono", num_players=2, stacking=True, challenge=False)
    high = observation_high(rules)
    game = VecGame(rules, 1, seed=2, autoreset=True)
    rng = np.random.default_rng(0)
    for _ in range(2000):   # to a pending Draw Two or Wild Draw Four
        if game.to_dict(0)["phase"] == "pending":
            break
        game.step(random_legal(game.legal_mask(), rng))
    d = game.to_dict(0)
    assert d["phase"] == "pending"
    for pending in (int(high) - 2, int(high) + 2, 2 * int(high)):
        d = {**d, "pending_draw": pending, "decisions": max(d["decisions"], pending)}
        read_position(d, rules)   # a position the rules can reach
        game.set_position(0, d)
        for version in (1, 2):
            obs = game.observe(game.current_player, version=version)
            assert obs[0, OBS_PENDING] == min(pending, high)
            assert obs.max() <= high
        assert game.to_dict(0)["pending_draw"] == pending   # the game keeps every card to draw
    # where the stack's bound is past the deck (forty Wild Draw Fours in a deck of 108), a
    # pending draw between the two reads as it is (the cap is the bound, not the deck)
    rules = RuleSet.preset("classic", num_players=2, hand_size=50, short_deck=True, wild_cards=0,
                           wild_draw_four_cards=40, stacking=True, challenge=False,
                           wild_draw_four_restricted=False)
    high = observation_high(rules)
    assert rules.deck_size < high
    game = VecGame(rules, 1, seed=2, autoreset=True)
    for _ in range(4000):
        if game.to_dict(0)["phase"] == "pending":
            break
        game.step(random_legal(game.legal_mask(), rng))
    d = game.to_dict(0)
    assert d["phase"] == "pending"
    for pending in (rules.deck_size + 2, int(high) - 2, int(high) + 2):
        d = {**d, "pending_draw": pending, "decisions": max(d["decisions"], pending)}
        game.set_position(0, d)
        obs = game.observe(game.current_player)
        assert obs[0, OBS_PENDING] == min(pending, high), pending


@pytest.mark.parametrize("wrapped", [False, True])
def test_after_an_illegal_move_every_agent_sees_its_own_view_and_no_legal_action(wrapped):
    # before: every agent's last() gave the offender's observation and legal mask
    from pettingzoo.utils import wrappers

    from ono_env.envs.ono_v0 import raw_env
    env = (wrappers.OrderEnforcingWrapper(wrappers.TerminateIllegalWrapper(
        raw_env(rules="basic", num_players=3), illegal_reward=-1)) if wrapped
        else ono_v0.env(rules="basic", num_players=3))
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    while env.agent_selection != "player_1":
        obs = env.last()[0]
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    game = env.unwrapped.game
    own = {a: game.observe(int(a[-1]))[0].copy() for a in env.possible_agents}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(int(np.flatnonzero(env.last()[0]["action_mask"] == 0)[0]))
    seen = set()
    for agent in env.agent_iter():
        obs, reward, termination, _, _ = env.last()
        assert termination and np.array_equal(obs["observation"], own[agent])
        assert obs["action_mask"].sum() == 0 and reward == (-1.0 if agent == "player_1" else 0.0)
        seen.add(agent)
        env.step(None)
    assert seen == set(env.possible_agents)


def test_a_deal_whose_forced_plays_end_it_reports_its_rewards():
    # before: with skip_forced a round (or game) that ended inside reset() lost its rewards,
    # and the PettingZoo env handed out a finished game that no termination flag marked
    g = VecGame("basic", 200, seed=0, num_players=2, hand_size=1, skip_forced=True)
    ended = g.finished.copy()
    assert 0 < ended.sum() < 200   # a first card the first player's only card matches
    r = g.step(first_legal(g.legal_mask()))
    # the games that ended inside the deal report it now, with the winner's +1
    assert r.terminated[ended].all()
    assert np.allclose(np.sort(r.rewards[ended], axis=1), [-1.0, 1.0])
    auto = VecGame("basic", 64, seed=1, num_players=2, hand_size=1, skip_forced=True,
                   autoreset=True)
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(50):
        r = auto.step(ono_env.random_legal(auto.legal_mask(), rng))
        done = r.terminated | r.truncated
        assert np.allclose(np.sort(r.rewards[r.terminated], axis=1), [-1.0, 1.0])
        episodes += int(done.sum())
    assert episodes > 100
    points = VecGame("basic", 100, seed=2, num_players=2, hand_size=1, skip_forced=True,
                     scoring="winner", target_score=100, reward="points")
    # random opponents' moves (here none: each game waits for the seat to act) keep them
    assert points.play_random_until(points.state.current.astype(np.int64), np.arange(
        100, dtype=np.uint64), np.zeros((100, 2))) == 0
    total = np.zeros((100, 2))
    done = np.zeros(100, bool)
    while not done.all():   # every reward of a match: its final scores, centred, times 0.01
        r = points.step(ono_env.random_legal(points.legal_mask(), rng))
        total[~done] += r.rewards[~done]
        done |= r.terminated | r.truncated
    scores = points.state.scores.astype(float)
    assert np.allclose(total, 0.01 * (scores - scores.mean(axis=1, keepdims=True)), atol=1e-5)
    # play_random deals the finished games again: their earlier deal's rewards are dropped
    g = VecGame("basic", 200, seed=0, num_players=2, hand_size=1, skip_forced=True)
    g.play_random(1)
    r = g.step(first_legal(g.legal_mask()))
    going = ~(r.terminated | r.truncated)
    assert going.any() and not r.rewards[going].any()
    env = ono_v0.env(rules="basic", num_players=2, hand_size=1, skip_forced=True)
    for seed in range(40):
        env.reset(seed=seed)
        assert not env.unwrapped.game.finished[0] and env.last()[0]["action_mask"].any()


def test_read_only_arrays_are_refused_before_anything_is_written(tmp_path):
    """The kernels write ``out``, ``policy_rng`` and ``rewards`` directly: a read-only array
    (a memory-mapped file opened read-only segfaulted) is refused, and the game is unchanged."""
    from ono_env.agents.driver import AgentDriver
    from ono_env.envs.learner_batch import LearnerBatch

    game = VecGame(RuleSet.preset("basic", num_players=2), 2, seed=0)
    size = game.observation_size
    np.save(tmp_path / "obs.npy", np.zeros((2, size), np.float32))
    for out in (np.load(tmp_path / "obs.npy", mmap_mode="r"), np.zeros((2, size), np.float32)):
        if out.flags.writeable:
            out.flags.writeable = False
        before = game.to_json()
        with pytest.raises(ValueError, match=r"writable .*read-only"):
            game.observe(game.current_player, out=out)
        assert game.to_json() == before and not out.any()
    seats = np.full(2, -1, np.int64)
    rng_states = np.arange(1, 3, dtype=np.uint64)
    rewards = np.zeros((2, 2), np.float64)
    for name in ("policy_rng", "rewards"):
        states, rew = rng_states.copy(), rewards.copy()
        (states if name == "policy_rng" else rew).flags.writeable = False
        before = game.to_json()
        with pytest.raises(ValueError, match=f"{name} must be a writable"):
            game.play_random_until(seats, states, rew)
        assert game.to_json() == before and not rew.any()
    for bad in (99, -7):   # before: 99 played every game to its end, -7 took no move
        before = game.to_json()
        with pytest.raises(ValueError, match=rf"seats holds \[{bad}\]; allowed: a seat 0..1, "
                                             r"or -1 \(until the game ends\)"):
            game.play_random_until(np.array([bad, -1]), rng_states.copy(), rewards.copy())
        assert game.to_json() == before

    batch = LearnerBatch("basic", 2, opponents="greedy", seed=0, num_players=2)
    batch.reset()
    out = np.zeros((2, batch.game.observation_size), np.float32)
    out.flags.writeable = False
    before = batch.game.to_json()
    with pytest.raises(ValueError, match="writable"):
        batch.step(first_legal(batch.action_masks()), out=out)
    assert batch.game.to_json() == before

    driver = AgentDriver(game, [RandomAgent()])
    driver.seat_agent[:] = 0
    frozen = np.zeros((2, 2), np.float64)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="rewards must be a writable"):
        driver.play(np.random.default_rng(0), frozen)


def test_a_copy_of_an_env_plays_on_by_itself():
    """copy.copy of the Gymnasium and PettingZoo envs: an env of its own (before: a shallow
    copy shared the game, so stepping the original and then the copy played an action
    that was no longer legal: an illegal-action loss, or PettingZoo's error)."""
    import copy

    from ono_env.envs.ono_v0 import raw_env
    env = OnoEnv("basic", num_players=2, opponents="greedy", learner_seat=0)
    env.reset(seed=3)
    twin = copy.copy(env)
    assert twin.game is not env.game
    a = int(np.flatnonzero(env.action_masks())[0])
    first = env.step(a)
    again = twin.step(a)   # the same move from the same position: the same outcome
    assert np.array_equal(first[0], again[0]) and first[1:4] == again[1:4]
    aec = raw_env(rules="basic", num_players=2)
    aec.reset(seed=3)
    other = copy.copy(aec)
    assert other.game is not aec.game
    move = int(np.flatnonzero(aec.observe(aec.agent_selection)["action_mask"])[0])
    aec.step(move)
    other.step(move)   # before: "illegal action" (the shared game had moved on)
    assert other.agent_selection == aec.agent_selection


def _long_refusals():
    long_list, long_text = list(range(200_000)), "x" * 200_000

    def gym_step():
        env = OnoEnv("basic", num_players=2)
        env.reset(seed=0)
        env.step(long_list)

    def raw_step():
        env = ono_v0.raw_env(rules="basic", num_players=2)
        env.reset(seed=0)
        env.step(long_list)

    def vec(call):
        def run():
            env = OnoVecEnv("basic", num_envs=2, num_players=2)
            call(env)
        return run

    return {
        "gym step": gym_step,
        "raw_env step": raw_step,
        "learner_seat": lambda: OnoEnv("basic", num_players=2, learner_seat=long_list),
        "reward": lambda: OnoEnv("basic", num_players=2, reward=long_text),
        "illegal_action": lambda: OnoEnv("basic", num_players=2, illegal_action=long_text),
        "observation_version": lambda: OnoEnv("basic", num_players=2, observation_version=long_text),
        "get_attr": vec(lambda env: env.get_attr(long_text)),
        "env_method": vec(lambda env: env.env_method(long_text)),
        "set_attr": vec(lambda env: env.set_attr("_" + long_text, 1)),
    }


@pytest.mark.parametrize("case", list(_long_refusals()))
def test_a_refused_value_is_shown_cut_short(case):
    """Before: these refusals printed the value whole (1.5 million characters for a list of
    200,000 numbers given as an action)."""
    with pytest.raises((ValueError, AttributeError)) as err:
        _long_refusals()[case]()
    assert len(str(err.value)) < 400, len(str(err.value))
