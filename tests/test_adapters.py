"""The environments as a stranger uses them: every preset through Gymnasium's and SB3's own
checkers, determinism after a seeded reset, no finished game handed to a learner, and every
argument of the wrong type refused."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from ono_env import PRESETS, ono_v0
from ono_env.gym_env import OnoEnv
from ono_env.opponents import OpponentPool
from ono_env.sb3 import OnoVecEnv


@pytest.mark.parametrize("num_players", [2, 3, 4])
@pytest.mark.parametrize("preset", PRESETS)
def test_gymnasium_and_sb3_checkers_pass_for_every_preset(preset, num_players):
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(OnoEnv(preset, num_players=num_players), skip_render_check=True)
        sb3_check_env(OnoEnv(preset, num_players=num_players, opponents="greedy"))


def test_gymnasium_make_passes_the_determinism_check():
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    env = gymnasium.make("ono_env/Ono-v0", rules="classic", num_players=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(env.unwrapped)


def _episodes(env: OnoEnv, seed: int | None, count: int) -> list:
    out = []
    rng = np.random.default_rng(0)
    for k in range(count):
        obs, info = env.reset(seed=seed if k == 0 else None)
        trace = [info["learner_seat"], obs.tobytes()]
        for _ in range(30):
            mask = env.action_masks()
            obs, r, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(mask))))
            trace.append((obs.tobytes(), r))
            if term or trunc:
                break
        out.append(trace)
    return out


@pytest.mark.parametrize("opponents", ["random", {"greedy": 1, "random": 1}])
def test_a_seeded_reset_fixes_every_later_episode(opponents):
    a = _episodes(OnoEnv("basic", num_players=3, opponents=opponents), 123, 4)
    env = OnoEnv("basic", num_players=3, opponents=opponents)
    _episodes(env, 7, 3)                       # a different history before the seed
    b = _episodes(env, 123, 4)
    assert a == b
    assert len({t[0] for t in a} | {t[0] for t in _episodes(env, 5, 6)}) > 1   # seats vary


def test_sb3_vecenv_is_reproducible_from_its_seed():
    def run(env: OnoVecEnv) -> list[bytes]:
        env.seed(11)
        obs = env.reset()
        out = [obs.tobytes()]
        rng = np.random.default_rng(3)
        for _ in range(40):
            mask = env.action_masks()
            acts = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
            obs, rew, done, _ = env.step(acts)
            out.append(obs.tobytes() + rew.tobytes() + done.tobytes())
        return out

    env = OnoVecEnv("basic", num_envs=8, opponents="random", num_players=3)
    first = run(env)
    assert run(env) == first
    assert run(OnoVecEnv("basic", num_envs=8, opponents="random", num_players=3)) == first


# ---- never a finished game ----------------------------------------------------------------
TINY = dict(hand_size=1)


def test_gymnasium_deals_again_when_the_opponents_finish_first():
    env = OnoEnv("basic", num_players=4, opponents="random", learner_seat=3, **TINY)
    for k in range(200):
        obs, info = env.reset(seed=k)
        assert not env.game.finished[0]
        assert int(env.game.state.current[0]) == 3 and env.action_masks().any()
    assert env._driver.redeals > 0          # the situation did occur, and was dealt again


def test_sb3_deals_again_when_the_opponents_finish_first():
    env = OnoVecEnv("basic", num_envs=64, opponents="random", num_players=4, seed=0, **TINY)
    env.reset()
    rng = np.random.default_rng(0)
    for _ in range(50):
        mask = env.action_masks()
        assert mask.any(axis=1).all()                       # every learner has a move
        assert (env.game.state.current == env._learner).all()
        assert not env.game.finished.any()
        env.step(np.array([rng.choice(np.flatnonzero(m)) for m in mask]))
    assert env._driver.redeals > 0


# ---- wrong types are refused ------------------------------------------------------------
@pytest.mark.parametrize("action", [0.5, 1.0, True, "3", None, [1], np.float32(2.0), np.array([1])])
def test_gymnasium_step_refuses_actions_that_are_not_integers(action):
    env = OnoEnv("basic", num_players=2, learner_seat=0)
    env.reset(seed=0)
    before = env.game.to_dict(0)
    with pytest.raises(ValueError, match="action"):
        env.step(action)
    assert env.game.to_dict(0) == before


def test_gymnasium_step_takes_integer_types():
    env = OnoEnv("basic", num_players=2, learner_seat=0)
    env.reset(seed=0)
    a = int(np.flatnonzero(env.action_masks())[0])
    for value in (np.int64(a), np.array(a), a):
        env.reset(seed=0)
        env.step(value)


@pytest.mark.parametrize("kwargs,message", [
    (dict(learner_seat=2), "learner_seat=2"), (dict(learner_seat=True), "learner_seat=True"),
    (dict(learner_seat="left"), "learner_seat='left'"), (dict(learner_seat=1.0), "learner_seat=1.0"),
    (dict(illegal_action="ignore"), "illegal_action"), (dict(render_mode="rgb_array"), "render_mode"),
    (dict(skip_forced="no"), "skip_forced"), (dict(max_decisions=True), "max_decisions"),
    (dict(max_decisions=2.5), "max_decisions"), (dict(reward="score"), "reward"),
    (dict(opponents={"greedy": True}), "weight"), (dict(opponents={"greedy": math.nan}), "weight"),
    (dict(opponents={"greedy": -1}), "weight"), (dict(opponents={"greedy": "2"}), "weight"),
    (dict(opponents="genius"), "unknown agent 'genius'"),
])
def test_gymnasium_constructor_refuses_wrong_types(kwargs, message):
    with pytest.raises(ValueError, match=message):
        OnoEnv("basic", num_players=2, **kwargs)


@pytest.mark.parametrize("seed", [1.5, -1, "1", True])
def test_gymnasium_reset_refuses_bad_seeds(seed):
    with pytest.raises(ValueError, match="seed"):
        OnoEnv("basic", num_players=2).reset(seed=seed)


@pytest.mark.parametrize("kwargs,message", [
    (dict(num_envs=True), "num_envs=True"), (dict(num_envs=0), "num_envs=0"),
    (dict(num_envs=2.0), "num_envs=2.0"), (dict(num_envs=10**7), "num_envs"),
    (dict(seed=1.5), "seed=1.5"), (dict(seed=-2), "seed=-2"), (dict(learner_seat=5), "learner_seat"),
    (dict(autoreset=True), "autoreset"),
])
def test_sb3_constructor_refuses_wrong_types(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        OnoVecEnv("basic", num_players=2, **kwargs)


@pytest.mark.parametrize("actions", [np.zeros(4, np.float32), np.zeros(3, np.int64),
                                     np.zeros((4, 2), np.int64), np.array([True] * 4), ["1"] * 4])
def test_sb3_step_refuses_actions_of_the_wrong_type_or_shape(actions):
    env = OnoVecEnv("basic", num_envs=4, num_players=2, seed=0)
    env.reset()
    with pytest.raises(ValueError, match="actions must be an integer array of shape"):
        env.step_async(actions)


@pytest.mark.parametrize("action", ["66", 1.5, True, np.float64(3.0), -1, 85])
def test_pettingzoo_step_refuses_bad_actions(action):
    e = ono_v0.raw_env(rules="basic", num_players=2)
    e.reset(seed=0)
    before = e.game.to_dict(0)
    with pytest.raises(ValueError, match="action"):
        e.step(action)
    assert e.game.to_dict(0) == before


@pytest.mark.parametrize("agent", ["player_9", "player_-1", 0, None])
def test_pettingzoo_unknown_agents_are_named(agent):
    e = ono_v0.raw_env(rules="basic", num_players=2)
    e.reset(seed=0)
    for call in (e.observe, e.observation_space, e.action_space):
        with pytest.raises(ValueError, match="unknown agent .*agents: player_0, player_1"):
            call(agent)


def test_opponent_pool_refuses_bad_weights_and_unknown_members():
    pool = OpponentPool({"greedy": 1, "random": 2}, "basic")
    for bad in (True, math.inf, math.nan, -0.5, "1", None):
        with pytest.raises(ValueError, match="weight"):
            pool.add("color", bad)
        with pytest.raises(ValueError, match="weight"):
            pool.set_weight("greedy", bad)
    assert pool.weights == [1.0, 2.0]
    with pytest.raises(ValueError, match="no member 'color'; members: 'greedy', 'random'"):
        pool.remove("color")
    with pytest.raises(ValueError, match="already has 'greedy'"):
        pool.add("greedy", 1)
