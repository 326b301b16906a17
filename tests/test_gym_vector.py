"""The native Gymnasium vector env (``make_vec(..., vectorization_mode="vector_entry_point")``).

Gymnasium ships no checker for custom vector envs; these tests hold ours to the contract
its own vector envs keep (the checks of Gymnasium's vector test-suite: the same spaces as a
``SyncVectorEnv`` of the single env, batched return types, seeding) and to same-step
autoreset as Gymnasium documents it."""

from __future__ import annotations

import re
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import ono_env  # noqa: F401 - registers ono_env/Ono-v0
from ono_env.envs.gym_vector import OnoVectorEnv
from ono_env.envs.sb3 import OnoVecEnv

KW = dict(rules="basic", num_players=2, opponents="greedy")


def make(n=8, **kw):
    return gym.make_vec("ono_env/Ono-v0", num_envs=n, vectorization_mode="vector_entry_point",
                        **{**KW, **kw})


def random_actions(mask, rng):
    return np.array([rng.choice(np.flatnonzero(m)) for m in mask])


def test_make_vec_builds_it_with_the_spaces_of_the_single_env():
    envs = make(8)
    assert isinstance(envs, OnoVectorEnv) and envs.num_envs == 8
    assert envs.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    sync = gym.make_vec("ono_env/Ono-v0", num_envs=8, vectorization_mode="sync", **KW)
    assert envs.single_observation_space == sync.single_observation_space
    assert envs.single_action_space == sync.single_action_space == gym.spaces.Discrete(85)
    assert envs.observation_space == sync.observation_space
    assert envs.action_space == sync.action_space
    # with no vectorization mode the vector entry point is the default
    assert isinstance(gym.make_vec("ono_env/Ono-v0", num_envs=2, **KW), OnoVectorEnv)


def test_reset_and_step_return_batched_values_with_masks():
    envs = make(16, rules="classic", num_players=4, opponents="random", target_score=0)
    obs, infos = envs.reset(seed=3)
    assert obs.shape == (16, envs.single_observation_space.shape[0]) and obs.dtype == np.float32
    assert envs.observation_space.contains(obs)
    assert infos["action_mask"].shape == (16, 85) and infos["_action_mask"].all()
    assert np.array_equal(infos["action_mask"], envs.action_masks())
    assert (infos["action_mask"].any(axis=1)).all()
    assert np.array_equal(infos["learner_seat"], envs.game.state.current)
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(300):
        actions = random_actions(infos["action_mask"], rng)
        assert envs.action_space.contains(actions)
        obs, rewards, terminated, truncated, infos = envs.step(actions)
        assert obs.shape == (16, obs.shape[1]) and envs.observation_space.contains(obs)
        assert rewards.dtype == np.float32 and rewards.shape == (16,)
        assert terminated.dtype == np.bool_ and truncated.dtype == np.bool_
        # every game handed back is the learner's turn, its mask that of the returned obs
        assert np.array_equal(envs.game.state.current, infos["learner_seat"])
        assert np.array_equal(infos["action_mask"], envs.action_masks())
        assert not envs.game.finished.any()
        finished += int(terminated.sum())
    assert finished > 0


def test_same_step_autoreset_reports_the_finished_episode():
    envs = make(32)
    obs, infos = envs.reset(seed=1)
    rng = np.random.default_rng(1)
    seen = 0
    returns = np.zeros(32)
    for _ in range(200):
        seats = infos["learner_seat"]
        obs, rewards, terminated, truncated, infos = envs.step(
            random_actions(infos["action_mask"], rng))
        returns += rewards
        done = terminated | truncated
        if not done.any():
            assert "final_obs" not in infos
            continue
        assert np.array_equal(infos["_final_obs"], done) and np.array_equal(infos["_final_info"], done)
        for i in np.flatnonzero(done):
            final = infos["final_obs"][i]
            assert final.shape == obs[i].shape and not np.array_equal(final, obs[i])
            assert abs(returns[i]) == 1.0            # two players, reward "win": +1 or -1
            returns[i] = 0
            seen += 1
        for i in np.flatnonzero(~done):
            assert infos["final_obs"][i] is None
        # final_info as SyncVectorEnv builds it in SAME_STEP mode: a dict of per-game arrays
        # (the single env's last info: no legal action), which DictInfoToList reads
        final = infos["final_info"]
        assert set(final) == {"action_mask", "_action_mask", "learner_seat", "_learner_seat"}
        assert final["action_mask"].shape == (32, 85) and not final["action_mask"].any()
        assert np.array_equal(final["_action_mask"], done)
        # whose episode ended (before: only the new episode's seat, in infos["learner_seat"])
        assert np.array_equal(final["_learner_seat"], done)
        assert np.array_equal(final["learner_seat"][done], seats[done])
        # the new episodes have just begun: the decisions counter is back near zero
        assert (envs.game.state.decisions[done] < 10).all()
    assert seen > 20


def test_next_step_autoreset_as_gymnasium_documents_it_and_its_vector_wrappers_assume():
    """autoreset_mode=NEXT_STEP: the step a game ends returns its last observation (no legal
    action), and the next deals it again, its action ignored, reward 0, not done. Before,
    SAME_STEP only: Gymnasium's observation wrappers refused the env, and its episode
    statistics were a step short after each game's first episode."""
    from gymnasium.wrappers import vector as wv

    envs = make(8, autoreset_mode=AutoresetMode.NEXT_STEP)
    assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert OnoVectorEnv.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP   # the class's
    wv.FlattenObservation(envs)   # (before: an AssertionError)
    stats = wv.RecordEpisodeStatistics(envs)
    _obs, infos = stats.reset(seed=2)
    rng = np.random.default_rng(2)
    restart, length, ret, episodes = np.zeros(8, np.bool_), np.zeros(8, int), np.zeros(8), 0
    for _ in range(300):
        mask = infos["action_mask"]
        actions = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in mask])
        _obs, rewards, terminated, truncated, infos = stats.step(actions)
        done = terminated | truncated
        assert "final_obs" not in infos
        assert not infos["action_mask"][done].any()   # the last observation: no legal action
        assert (rewards[restart] == 0).all() and not done[restart].any()   # dealt again
        assert infos["action_mask"][restart].any(axis=1).all()
        length += ~restart
        ret += rewards
        for i in np.flatnonzero(infos.get("_episode", np.zeros(8, np.bool_))):
            assert infos["episode"]["l"][i] == length[i] and infos["episode"]["r"][i] == ret[i]
            episodes += 1
        length[done], ret[done] = 0, 0.0
        restart = done
    assert episodes > 20
    # the mode's value as text too; another mode is refused by name
    assert make(2, autoreset_mode="NextStep").metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    for bad in (AutoresetMode.DISABLED, "next_step", None):
        with pytest.raises(ValueError, match=r"^autoreset_mode=.*; allowed: "
                                             r"AutoresetMode.SAME_STEP \(or 'SameStep'\), "
                                             r"AutoresetMode.NEXT_STEP \(or 'NextStep'\)$"):
            OnoVectorEnv(2, autoreset_mode=bad)


def test_the_infos_have_the_structure_of_sync_vector_env_in_same_step_mode():
    from gymnasium.vector import AutoresetMode

    def structure(x):
        if isinstance(x, dict):
            return {k: structure(v) for k, v in x.items()}
        return (type(x).__name__, str(getattr(x, "dtype", "")), getattr(x, "shape", ()))

    def first_finish(envs):
        _, infos = envs.reset(seed=3)
        rng = np.random.default_rng(3)
        for _ in range(500):
            *_, infos = envs.step(random_actions(infos["action_mask"], rng))
            if "final_info" in infos:
                return structure(infos)
        raise AssertionError("no game finished")

    sync = gym.make_vec("ono_env/Ono-v0", num_envs=4, vectorization_mode="sync",
                        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP}, **KW)
    assert first_finish(make(4)) == first_finish(sync)
    # a Gymnasium argument gets a Gymnasium answer, not "unknown rule option"
    assert make(2, render_mode=None).render_mode is None
    with pytest.raises(ValueError, match=r"render_mode='ansi'; allowed: None \(OnoVectorEnv does not"):
        make(2, render_mode="ansi")


def test_seeded_runs_repeat_and_match_the_sb3_env():
    def run(env_reset, env_step, masks):
        rng = np.random.default_rng(5)
        out = [env_reset()]
        for _ in range(60):
            out.append(env_step(random_actions(masks(), rng)))
        return out

    a, b = make(8), make(8)
    ra = run(lambda: a.reset(seed=9)[0], lambda x: a.step(x)[:4], a.action_masks)
    rb = run(lambda: b.reset(seed=9)[0], lambda x: b.step(x)[:4], b.action_masks)
    for x, y in zip(ra, rb):
        assert all(np.array_equal(p, q) for p, q in zip(x if isinstance(x, tuple) else (x,),
                                                         y if isinstance(y, tuple) else (y,)))
    # the same core as the SB3 VecEnv: same seed, same actions, same observations and rewards
    sb3 = OnoVecEnv("basic", num_envs=8, opponents="greedy", num_players=2, seed=9)
    rs = run(sb3.reset, lambda x: sb3.step(x)[:3], sb3.action_masks)
    assert np.array_equal(rs[0], ra[0])
    for (obs_g, rew_g, term_g, trunc_g), (obs_s, rew_s, done_s) in zip(ra[1:], rs[1:]):
        assert np.array_equal(obs_g, obs_s) and np.array_equal(rew_g, rew_s)
        assert np.array_equal(term_g | trunc_g, done_s)
    c = make(8)
    assert not np.array_equal(c.reset(seed=10)[0], ra[0])


def test_bad_input_is_refused_and_changes_nothing():
    envs = make(4)
    with pytest.raises(RuntimeError, match="before reset"):
        envs.step(np.zeros(4, np.int64))
    _obs, infos = envs.reset(seed=0)
    before = [envs.game.to_dict(i) for i in range(4)]
    for bad in (np.zeros(4), np.zeros(3, np.int64), np.zeros((4, 1), np.int64), [True] * 4):
        with pytest.raises(ValueError, match=r"actions must be an integer array of shape \(4,\)"):
            envs.step(bad)
    actions = random_actions(infos["action_mask"], np.random.default_rng(0))
    illegal = next(a for a in range(85) if not infos["action_mask"][2, a])
    actions[2] = illegal
    with pytest.raises(ValueError, match="illegal"):
        envs.step(actions)
    # an unsigned id past int64 is named as given (before: cast first, 2**64 - 1 as -1)
    with pytest.raises(ValueError, match=r"^action 18446744073709551615 is out of range "
                                         r"\(action ids are 0 to 84\) in game 1"):
        envs.step(np.array([0, 2**64 - 1, 0, 0], np.uint64))
    assert [envs.game.to_dict(i) for i in range(4)] == before
    with pytest.raises(ValueError, match="seed must be one integer"):
        envs.reset(seed=[1, 2, 3, 4])
    with pytest.raises(ValueError, match="seed"):
        envs.reset(seed=-1)
    with pytest.raises(ValueError, match="options"):
        envs.reset(options=[1])
    # Gymnasium's partial reset is refused, not read as a reset of every game
    with pytest.raises(ValueError, match=r"options\['reset_mask'\].*allowed: no reset_mask"):
        envs.reset(options={"reset_mask": np.array([True, False, False, False])})
    assert [envs.game.to_dict(i) for i in range(4)] == before
    with pytest.raises(ValueError, match="num_envs"):
        make(0)


def test_the_cleanrl_style_example_trains_on_it():
    """The example script, with a tiny budget: it runs end to end, and its masked policy
    never samples an illegal action (the env would raise ValueError)."""
    import importlib.util
    from pathlib import Path
    pytest.importorskip("torch")
    path = Path(__file__).parent.parent / "docs" / "examples" / "cleanrl_masked_ppo.py"
    spec = importlib.util.spec_from_file_location("cleanrl_masked_ppo", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module      # dataclasses look their module up there
    spec.loader.exec_module(module)
    out = module.main(module.Args(total_timesteps=2048, num_envs=32, num_steps=16, hidden=32,
                                  update_epochs=1))
    assert out["steps"] == 2048 and out["episodes"] > 0 and 0 <= out["win_rate"] <= 1
    # a rules file, as the environment takes it (before: RuleSet.preset's "unknown preset")
    stacking = Path(__file__).parent.parent / "configs" / "rules" / "stacking.yaml"
    out = module.main(module.Args(rules=str(stacking), players=3, total_timesteps=64, num_envs=4,
                                  num_steps=16, hidden=8, update_epochs=1))
    assert out["steps"] == 64
    # values it cannot use, refused before any work (before: a ZeroDivisionError, NaN logits,
    # torch's errors, or --gamma 2 and --total-timesteps 0 taken silently)
    for change, message in [({"num_minibatches": 0}, "--num-minibatches 0; allowed: from 1"),
                            ({"num_minibatches": 7, "num_envs": 4, "num_steps": 16,
                              "total_timesteps": 64}, "--num-minibatches 7; allowed: a divisor "
                                                      "of the batch, --num-envs x --num-steps = 64"),
                            # before: minibatches of one step, NaN advantages, then torch's error
                            ({"num_minibatches": 2, "num_envs": 2, "num_steps": 1,
                              "total_timesteps": 20}, "--num-minibatches 2; allowed: a divisor of "
                                                      "the batch, --num-envs x --num-steps = 2, "
                                                      "that leaves minibatches of at least 2 "
                                                      "steps (at most 1)"),
                            ({"learning_rate": float("nan")}, "--learning-rate nan; allowed: above 0"),
                            ({"gamma": 2.0}, "--gamma 2.0; allowed: from 0 to 1"),
                            ({"hidden": 0}, "--hidden 0"), ({"torch_threads": 0}, "--torch-threads 0"),
                            ({"total_timesteps": 100}, "--total-timesteps 100; allowed: at least "
                                                       "one batch, --num-envs x --num-steps = 4,096")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            module.main(module.Args(**change))
    import subprocess
    proc = subprocess.run([sys.executable, str(path), "--num-minibatches", "0"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.endswith("error: --num-minibatches 0; allowed: from 1 to 1000000\n")


def test_the_learner_batch_writes_observations_into_a_given_array():
    """LearnerBatch.step(out=...) (the trainer's rollout buffer) writes the same observations
    a step without it returns, into that array, finished games included."""
    from ono_env.envs.learner_batch import LearnerBatch

    kw = dict(opponents="greedy", seed=3, num_players=3, observation_version=2)
    a, b = LearnerBatch("ono", 8, **kw), LearnerBatch("ono", 8, **kw)
    oa, ob = a.reset(seed=3), b.reset(seed=3)
    assert np.array_equal(oa, ob)
    rng = np.random.default_rng(0)
    buf = np.full((2, 8, oa.shape[1]), np.nan, np.float32)
    finished = 0
    for t in range(60):
        mask = a.action_masks()
        act = (rng.random(mask.shape) * mask).argmax(axis=1)
        ra = a.step(act)
        rb = b.step(act, out=buf[t % 2])
        assert rb.obs is buf[t % 2] or np.shares_memory(rb.obs, buf[t % 2])
        assert np.array_equal(ra.obs, buf[t % 2]) and np.array_equal(ra.rewards, rb.rewards)
        finished += int(ra.dones.sum())
    assert finished > 0
