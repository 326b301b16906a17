"""The Ray path: RLlib environments, the masked module and its export, the ``rllib_ppo`` trainer
of ``ono-train`` and the distributed arena, on a two-node Ray cluster started on this
machine (``ray.cluster_utils.Cluster``: a head and a second node, one CPU each).

Needs the ``[ray]`` extra: skipped without it (the base install must not need Ray), unless
``ONO_REQUIRE_RAY=1`` (set by ``.ci/run``, whose install has it), which makes a missing Ray a
failure.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile

import numpy as np
import pytest

if os.environ.get("ONO_REQUIRE_RAY") == "1":
    import ray
    import ray.rllib
    import torch
else:
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.rllib")
    torch = pytest.importorskip("torch")

from ono_env import random_legal
from ono_env.agents import make_agent
from ono_env.agents.learned import load_agent
from ono_env.arena import run_arena
from ono_env.cards import NUM_ACTIONS
from ono_env.envs.rllib_env import OnoMultiAgentEnv, OnoRLlibVectorEnv
from ono_env.game import VecGame
from ono_env.rules import RuleSet
from ono_env.train import rllib as R
from ono_env.train.config import load_config

BASIC2 = RuleSet.preset("basic", num_players=2)


# ---- the single-agent vector env --------------------------------------------------------
def _roll(env: OnoRLlibVectorEnv, steps: int, seed: int | None):
    rng = np.random.default_rng(seed if seed is not None else 5)
    obs, _ = env.reset(seed=seed)
    out = []
    for _ in range(steps):
        a = random_legal(obs["action_mask"] > 0, rng)
        obs, r, te, tr, _ = env.step(a)
        out.append((obs["observations"].copy(), obs["action_mask"].copy(), r, te, tr))
    return out


def test_vector_env_spaces_masks_and_next_step_autoreset():
    env = OnoRLlibVectorEnv({"rules": "basic", "num_players": 2, "num_envs": 32,
                        "opponents": {"greedy": 1, "random": 1}})
    assert env.single_observation_space["observations"].shape == (VecGame(BASIC2, 1).observation_size,)
    assert env.single_observation_space["action_mask"].shape == (NUM_ACTIONS,)
    assert env.metadata["autoreset_mode"].name == "NEXT_STEP"
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    # every observation is the learner's turn, with its legal actions
    assert (obs["action_mask"].sum(axis=1) >= 1).all()
    np.testing.assert_array_equal(obs["action_mask"] > 0, env.game.legal_mask())
    rng = np.random.default_rng(1)
    restarting = np.zeros(32, bool)
    returns, episode = [], np.zeros(32)
    for _ in range(400):
        a = random_legal(obs["action_mask"] > 0, rng)
        obs, r, te, tr, _ = env.step(a)
        # the step after an episode's end deals again: reward 0, a fresh learner turn
        assert (r[restarting] == 0).all() and not (te | tr)[restarting].any()
        assert (obs["action_mask"][restarting].sum(axis=1) >= 1).all()
        done = te | tr
        assert (obs["action_mask"][done] == 0).all()       # a final observation: nothing legal
        episode += r
        returns += list(episode[done])
        episode[done] = 0
        restarting = done
    returns = np.array(returns)
    assert len(returns) > 100 and set(np.unique(returns)) <= {-1.0, 1.0}


def test_vector_env_is_seeded_and_refuses_bad_input():
    make = lambda: OnoRLlibVectorEnv({"rules": "basic", "num_players": 2, "num_envs": 8,  # noqa: E731
                                 "opponents": {"greedy": 1, "random": 1}})
    a, b = _roll(make(), 60, 5), _roll(make(), 60, 5)
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)
    env = make()
    with pytest.raises(ValueError, match="unknown config key 'colour'; allowed: rules"):
        OnoRLlibVectorEnv({"rules": "basic", "colour": 1})
    # a rule option, as the other envs take it, and a near miss, each named (before: the
    # list of keys alone)
    with pytest.raises(ValueError, match=r"unknown config key 'draw_until_playable' \(a rule "
                                         r"option: give it inside 'rules', as \{'rules': "
                                         r"\{'preset': 'classic', 'draw_until_playable'"):
        OnoRLlibVectorEnv({"rules": "basic", "draw_until_playable": True})
    with pytest.raises(ValueError, match=r"'opponent' \(did you mean 'opponents'\?\); allowed"):
        OnoRLlibVectorEnv({"rules": "basic", "opponent": "random"})
    assert OnoRLlibVectorEnv({"rules": {"preset": "basic", "draw_until_playable": True},
                              "num_envs": 2}).rules.draw_until_playable
    with pytest.raises(ValueError, match="num_envs"):
        OnoRLlibVectorEnv({"num_envs": True})
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(8, np.int64))
    obs, _ = env.reset(seed=0)
    with pytest.raises(ValueError, match="integer array of shape"):
        env.step(np.zeros(8))
    illegal = np.argmin(obs["action_mask"], axis=1)
    with pytest.raises(ValueError, match="illegal action"):
        env.step(illegal)


def test_the_configs_seed_is_the_first_unseeded_resets():
    """Before: the constructor dealt from the config's seed and the first reset() dealt the
    next episode, so it differed from reset(seed=s) (the SB3 env's constructor seed is the
    first reset's)."""
    cfg = {"rules": "basic", "num_players": 2, "num_envs": 8, "opponents": {"greedy": 1, "random": 1}}
    seeded, plain = OnoRLlibVectorEnv({**cfg, "seed": 5}), OnoRLlibVectorEnv(cfg)
    for x, y in zip(_roll(seeded, 40, None), _roll(plain, 40, 5)):
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)
    first, _ = seeded.reset()   # the next unseeded reset goes on from the stream
    again, _ = plain.reset()
    np.testing.assert_array_equal(first["observations"], again["observations"])
    one = OnoMultiAgentEnv({"rules": "basic", "num_players": 3, "seed": 9})
    other = OnoMultiAgentEnv({"rules": "basic", "num_players": 3})
    (a, oa), = one.reset()[0].items()
    (b, ob), = other.reset(seed=9)[0].items()
    assert a == b and all(np.array_equal(oa[k], ob[k]) for k in oa)


def test_vector_env_pool_update_for_the_league():
    env = OnoRLlibVectorEnv({"rules": "basic", "num_players": 2, "num_envs": 16,
                        "opponents": {"greedy": 1, "random": 1}})
    env.reset(seed=0)
    snap = make_agent("random", BASIC2)
    env.update_pool({"greedy": 0.4, "random": 0.4, "snapshot-1": 0.2}, {"snapshot-1": snap})
    assert env.pool.names == ["greedy", "random", "snapshot-1"]
    env.update_pool({"greedy": 0.5, "snapshot-1": 0.5}, {"snapshot-1": snap})   # sent again
    assert env.pool.names == ["greedy", "snapshot-1"] and env.pool.weights == [0.5, 0.5]
    _roll(env, 50, 1)  # plays on with the new pool
    fixed = OnoRLlibVectorEnv({"rules": "basic", "num_players": 2, "opponents": "greedy"})
    with pytest.raises(ValueError, match="needs an opponent pool"):
        fixed.update_pool({"greedy": 1.0})
    # a refused update leaves the pool as it was
    for weights, new, message in [({"greedy": 2, "nosuch": 1}, None, "'nosuch', neither a member"),
                                  ({"greedy": 1, "snapshot-1": True}, None, "not a bool"),
                                  ({"greedy": 0, "snapshot-1": 0}, None,
                                   "would leave no member of positive weight"),
                                  ({"x": 1}, {"x": "nosuch-agent"}, "nosuch-agent"),
                                  # another agent under a member's name, or no agent at all
                                  # (before: dropped without a word or a check)
                                  ({"greedy": 1, "snapshot-1": 1}, {"snapshot-1": "color"},
                                   "opponent pool already has 'snapshot-1'"),
                                  ({"greedy": 1, "x": 1}, {"x": 42}, "an agent must be a name"),
                                  (5, None, "allowed: a dict of name -> weight")]:
        with pytest.raises(ValueError, match=message):
            env.update_pool(weights, new)
        assert env.pool.names == ["greedy", "snapshot-1"] and env.pool.weights == [0.5, 0.5]
    # the pool refuses a change that leaves no positive weight even for a moment, so an
    # update sets the positive weights before the zeros and the removals
    env.update_pool({"greedy": 1.0, "snapshot-1": 0.0})
    env.update_pool({"snapshot-1": 1.0, "greedy": 0.0})
    env.update_pool({"new": 1.0}, {"new": snap})
    assert env.pool.names == ["new"] and env.pool.weights == [1.0]
    env.update_pool({"new": 1e308, "newer": 0.0}, {"newer": snap})
    env.update_pool({"new": 0.0, "newer": 1e308})   # one sum at a time: never infinite
    assert env.pool.weights == [0.0, 1e308]
    assert R.league_weights({"a": 1, "b": 3}, [], 0.2) == {"a": 0.25, "b": 0.75}
    assert R.league_weights({"a": 1, "b": 3}, ["s1", "s2"], 0.2) == pytest.approx(
        {"a": 0.2, "b": 0.6, "s1": 0.1, "s2": 0.1})


# ---- the multi-agent env ----------------------------------------------------------------
@pytest.mark.parametrize("players", [2, 4])
def test_multi_agent_env_only_the_acting_seat_observes(players):
    env = OnoMultiAgentEnv({"rules": "basic", "num_players": players})
    rng = np.random.default_rng(players)
    for episode in range(3):
        obs, _ = env.reset(seed=episode)
        total = dict.fromkeys(env.possible_agents, 0.0)
        while True:
            assert list(obs) == [env.acting_agent]
            (agent, o), = obs.items()
            assert env.observation_spaces[agent].contains(o)
            np.testing.assert_array_equal(o["action_mask"] > 0, env.game.legal_mask()[0])
            seat = int(agent.split("_")[1])
            np.testing.assert_array_equal(o["observations"], env.game.observe(seat)[0])
            a = int(random_legal(o["action_mask"][None] > 0, rng)[0])
            obs, rew, te, tr, _ = env.step({agent: a})
            for k, v in rew.items():
                total[k] += v
            if te["__all__"] or tr["__all__"]:
                break
        assert set(obs) == set(env.possible_agents)           # everyone sees the end
        assert all((o["action_mask"] == 0).all() for o in obs.values())
        assert sorted(total.values())[-1] == 1.0 and abs(sum(total.values())) < 1e-6
    with pytest.raises(RuntimeError, match="reset"):
        env.step({env.acting_agent: 0})
    obs, _ = env.reset(seed=9)
    other = next(a for a in env.possible_agents if a != env.acting_agent)
    with pytest.raises(ValueError, match="the acting agent is"):
        env.step({other: 0})
    illegal = int(np.argmin(obs[env.acting_agent]["action_mask"]))
    with pytest.raises(ValueError, match="illegal action"):
        env.step({env.acting_agent: illegal})


# ---- the masked module and its export ----------------------------------------------------
def test_masked_module_masks_and_exports_to_the_model_format(tmp_path):
    from ray.rllib.utils.torch_utils import FLOAT_MIN

    torch.manual_seed(0)
    module = R.module_spec(BASIC2, [64, 32], "relu").build()
    # the module built for a Dict space sees the raw observation plus the mask
    env = OnoRLlibVectorEnv({"rules": BASIC2, "num_envs": 64, "opponents": "greedy"})
    obs, _ = env.reset(seed=2)
    batch = {"obs": {k: torch.as_tensor(v) for k, v in obs.items()}}
    with torch.no_grad():
        logits = module.forward_inference(batch)["action_dist_inputs"].numpy()
        explore = module.forward_exploration(
            {"obs": {k: torch.as_tensor(v) for k, v in obs.items()}})["action_dist_inputs"].numpy()
    legal = obs["action_mask"] > 0
    assert (logits[~legal] <= FLOAT_MIN / 2).all() and (explore[~legal] <= FLOAT_MIN / 2).all()
    net = R.policy_net_from_state(module.state_dict(), BASIC2, "relu")
    assert net.hidden_sizes == [64, 32]
    np.testing.assert_allclose(net(obs["observations"])[legal], logits[legal], rtol=1e-5, atol=1e-5)
    with torch.no_grad():   # the critic comes along as the model's value network
        values = module.compute_values(
            {"obs": {k: torch.as_tensor(v) for k, v in obs.items()}}).numpy()
    np.testing.assert_allclose(net.value(obs["observations"]), values, rtol=1e-5, atol=1e-5)
    path = R.export_policy(net, tmp_path / "m.safetensors", BASIC2, 123, {"algo": "rllib_ppo"})
    agent = load_agent(path, BASIC2)
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(agent.act(obs["observations"], legal, rng),
                                  np.where(legal, logits, -np.inf).argmax(axis=1))
    with pytest.raises(ValueError, match="trained for 'basic' rules"):
        load_agent(path, RuleSet.preset("classic", num_players=2))
    with pytest.raises(ValueError, match=r"not a MaskablePPO|MaskedPPOModule"):
        R.policy_net_from_state({"x": np.zeros(2)}, BASIC2, "tanh")


def test_config_algo_fields():
    cfg = load_config("rllib-basic")
    assert cfg.algo == "rllib_ppo" and cfg.num_env_runners == 2 and cfg.ray_address is None
    assert load_config("default").algo == "ppo"
    with pytest.raises(ValueError, match="algo"):
        load_config("default", ["algo=torch"])
    with pytest.raises(ValueError, match="read only by algo: rllib_ppo"):
        load_config("default", ["ray_address=auto"])
    with pytest.raises(ValueError, match="num_env_runners"):
        load_config("rllib-basic", ["num_env_runners=-1"])


def test_an_rllib_config_of_a_config_not_resolved_is_refused_in_the_driver():
    """algorithm_config reads a resolved config: an auto left (bench_ray built its config
    without resolve_auto) is one error here, not an env runner that dies in its actor and an
    IndexError from RLlib; resolved, max_decisions is the baselines' game length times 10."""
    from ono_env.train.run import resolve_auto, rules_of

    cfg = load_config("rllib-basic", ["num_env_runners=1"])
    with pytest.raises(ValueError, match="max_decisions is still 'auto'"):
        R.algorithm_config(cfg, rules_of(cfg))
    done, _ = resolve_auto(cfg, rules_of(cfg))
    env_config = R.algorithm_config(done, rules_of(cfg)).env_config
    assert isinstance(env_config["max_decisions"], int) and env_config["max_decisions"] > 10


def test_a_ray_address_of_another_form_is_refused_with_the_config():
    # before: --print-config printed it; a run wrote its folder, then refused it
    with pytest.raises(ValueError, match="ray_address='foo'; allowed: local"):
        load_config("rllib-basic", ["ray_address=foo"])


def test_rllib_runs_refuse_what_would_hang_or_fail_before_writing_a_folder(tmp_path, monkeypatch):
    from ono_env.train.cli import main as train_main

    out = tmp_path / "runs"
    # an address that does not answer: refused before the run folder is written
    assert train_main(["rllib-basic", "ray_address=127.0.0.1:1", f"out_dir={out}",
                       "progress=false"]) == 2
    assert not out.exists()
    # more env runners than a new local Ray's CPUs: Ray would wait for ever (before: a hang)
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0})
    with pytest.raises(ValueError, match=r"^num_env_runners=4: each env runner takes one CPU, "
                                         r"and the local Ray has 2; allowed: at most 2 here"):
        R.check_runner_cpus(4, local=True)
    R.check_runner_cpus(2, local=True)
    R.check_runner_cpus(0, local=True)


def test_on_a_cluster_too_few_cpus_is_a_note_and_a_wait_a_signal_can_stop(monkeypatch, capsys):
    """The wait for the runners' CPUs is the trainer's, in Python, so that a signal stops it
    (before: Ray's, inside build_algo, where a SIGTERM did nothing for ever)."""
    sizes = iter([3.0, 3.0, 3.0, 8.0])   # a node joins at the third look
    monkeypatch.setattr(ray, "available_resources", lambda: {"CPU": next(sizes)})
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 6.0})   # 3 held by others
    slept: list[float] = []
    R.check_runner_cpus(8, local=False, sleep=slept.append)
    assert "num_env_runners=8: each env runner takes one CPU, and the Ray cluster has 3 free " \
        "now (6 in all): training starts when it has 8 CPUs free" in capsys.readouterr().err
    assert slept == [1.0, 1.0]

    def stopped(seconds):   # a signal's handler raises in the main thread, here in the sleep
        raise KeyboardInterrupt
    monkeypatch.setattr(ray, "available_resources", lambda: {"CPU": 0.0})
    with pytest.raises(KeyboardInterrupt):
        R.check_runner_cpus(1, local=False, sleep=stopped)

    # CPUs enough in all, but held by other work: a wait too (before: Ray's, which no signal
    # stopped)
    monkeypatch.setattr(ray, "available_resources", lambda: {"CPU": 1.0})
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0})
    with pytest.raises(KeyboardInterrupt):
        R.check_runner_cpus(2, local=False, sleep=stopped)
    R.check_runner_cpus(1, local=False, sleep=stopped)


def test_a_cluster_that_cannot_be_found_is_named_by_the_callers_name(monkeypatch):
    from ono_env.arena.distributed import connect_ray

    def no_cluster(**kwargs):
        raise ConnectionError("Could not find any running Ray instance. Please specify the one "
                              "to connect to by setting `--address` flag")

    import ono_env.arena.distributed as D

    monkeypatch.setattr(ray, "init", no_cluster)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(D, "_ray_reading", lambda address: None)   # no head left an address
    with pytest.raises(ValueError, match=r"^--ray auto: no running Ray cluster was found there"):
        connect_ray("auto", "--ray")
    with pytest.raises(ValueError, match=r"^ray_address=auto: no running Ray cluster"):
        connect_ray("auto")
    # auto that found a head, by RAY_ADDRESS or by the address a head left: a token, perhaps
    # (before: "no running Ray cluster was found there" for a cluster that asked for one)
    monkeypatch.setattr(D, "_ray_reading", lambda address: "10.0.0.5:6379")
    with pytest.raises(ValueError, match=r"^--ray auto: no Ray cluster there accepted the "
                                         r"connection; .* set RAY_AUTH_MODE=token"):
        connect_ray("auto", "--ray")
    monkeypatch.setenv("RAY_ADDRESS", "ray://10.0.0.5:10001")
    with pytest.raises(ValueError, match=r"^--ray auto \(RAY_ADDRESS='ray://10.0.0.5:10001'\): no "
                                         r"Ray cluster there accepted the connection; .* set "
                                         r"RAY_AUTH_MODE=token"):
        connect_ray("auto", "--ray")
    # an address given: Ray's error is the same for no cluster and for a refused token
    with pytest.raises(ValueError, match=r"^--ray 127.0.0.1:6380: no Ray cluster there accepted "
                                         r"the connection; .* set RAY_AUTH_MODE=token"):
        connect_ray("127.0.0.1:6380", "--ray")


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_env_runners=1.9), r"num_env_runners=1.9 \(float\); allowed: an integer"),
    (dict(num_env_runners=-3), "num_env_runners=-3; allowed: an integer from 0"),
    (dict(seed=True), r"seed=True \(bool\)"),
    (dict(seed="7"), r"seed='7' \(str\)"),
    (dict(num_envs_per_env_runner=True), r"num_envs_per_env_runner=True \(bool\)"),
    (dict(activation="bogus"), "activation='bogus'; allowed: tanh | relu"),
    (dict(net_arch=[]), r"net_arch=\[\]; allowed: a list of 1 to 16 layer widths"),
    (dict(net_arch=[-4]), r"net_arch\[0\]=-4; allowed"),
    (dict(net_arch=[2.5]), r"net_arch\[0\]=2.5 \(float\)"),
    (dict(module_id=""), "module_id is 0 characters long"),
])
def test_self_play_config_checks_its_arguments(kwargs, message):
    """Before: int() coerced floats, bools and strings, and the rest was accepted."""
    with pytest.raises(ValueError, match=message):
        R.self_play_config(BASIC2, **kwargs)


def test_self_play_config_takes_a_presets_name():
    # before: AttributeError: 'str' object has no attribute 'to_dict'
    config = R.self_play_config("basic", net_arch=[16])
    assert RuleSet.from_dict(config.env_config["rules"]) == RuleSet.preset("basic")


def test_the_arena_checks_max_decisions_before_ray_starts(monkeypatch):
    # before: each Ray task failed with it, a remote traceback apiece (a RayTaskError)
    monkeypatch.setattr(ray, "init", lambda **kw: pytest.fail("Ray was started"))
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match=r"^max_decisions=") as err:
            run_arena(["greedy", "random"], "basic", 2, 10, ray_address="local",
                      max_decisions=bad)
        assert type(err.value) is ValueError


def test_a_local_ray_is_started_once_a_run_and_never_from_ray_address(monkeypatch):
    """Before: ``--ray`` with no address called ``ray.init()``, which reads RAY_ADDRESS (and
    waited for ever on a dead one), and ``ono-bench --ray`` started and shut down a local Ray
    for every pairing (about 5 s each)."""
    from ono_env.arena.distributed import check_ray_flag
    from ono_env.train.rllib import init_ray

    calls, up = [], []
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    monkeypatch.setattr(ray, "init", lambda **kw: (calls.append(kw), up.append(1)))
    monkeypatch.setattr(ray, "is_initialized", lambda: bool(up))
    monkeypatch.setattr(ray, "shutdown", lambda: pytest.fail("the run's Ray was shut down"))
    check_ray_flag("local")
    assert [c["address"] for c in calls] == ["local"]
    check_ray_flag("local")   # already up: not started again (play_on_ray keeps it too)
    assert len(calls) == 1
    up.clear()
    init_ray(None)
    assert calls[-1]["address"] == "local"


def test_without_ray_the_commands_name_the_extra(monkeypatch, capsys):
    from ono_env.train.cli import main as train_main

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ValueError, match=r"pip install 'ono-env\[ray\]'"):
        R.require_ray()
    with pytest.raises(ValueError, match=r"pip install 'ono-env\[ray\]'"):
        run_arena(["greedy", "random"], "basic", 2, 10, ray_address="local", rating=False)
    assert train_main(["rllib-basic", "progress=false"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'ono-env[ray]'" in err[0], err
    with pytest.raises(ValueError, match="ray_address=''"):
        run_arena(["greedy", "random"], "basic", 2, 10, ray_address="")
    from ono_env.apps.arena_cli import main as arena_main
    from ono_env.apps.bench_cli import main as bench_main

    assert arena_main(["greedy", "random", "--players", "2", "--games", "2", "--ray"]) == 2
    assert bench_main(["greedy", "--tables", "basic-2p", "--ray"]) == 2
    # before an address is reached (before: "cannot connect ...; is a Ray cluster running")
    assert arena_main(["greedy", "random", "--players", "2", "--ray", "127.0.0.1:1"]) == 2
    for line in capsys.readouterr().err.strip().splitlines():
        assert line.endswith("error: --ray needs Ray, which is not installed: pip install "
                             "'ono-env[ray]'"), line


def test_a_sigterm_while_ray_starts_goes_to_this_processs_handler(monkeypatch):
    """Before: ray.init sets its SIGTERM handler (sys.exit(15)) first thing, so a SIGTERM in
    the seconds Ray takes to start ended the console scripts with status 15 and no word,
    their --out folder left behind."""
    import signal

    from ono_env.arena.distributed import start_local_ray

    class Stop(Exception):
        pass

    def mine(signum, frame):
        raise Stop(signum)

    def starting(**kwargs):   # as ray.init: its handler first, then the signal comes
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("Ray's handler should have ended the start")

    shut = []
    monkeypatch.setattr(ray, "init", starting)
    monkeypatch.setattr(ray, "shutdown", lambda: shut.append(1))
    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, mine)
    try:
        with pytest.raises(Stop) as err:
            start_local_ray()
        assert err.value.args == (signal.SIGTERM,) and shut == [1]
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, before)


def test_ray_keeps_this_processs_signal_handlers(capfd, monkeypatch, tmp_path):
    """Before: ray.init put its own SIGTERM handler (sys.exit) and a C++ one (a stack dump)
    in place of the console scripts' ("stopped by SIGTERM", then death by the signal), and
    they stayed after ray.shutdown()."""
    import signal
    import time

    from ono_env.arena.distributed import held_ray
    if ray.is_initialized():
        ray.shutdown()
    tmp = tempfile.mkdtemp(prefix="ray")   # short: Ray's socket paths must stay < 108 bytes
    for name, value in (("RAY_AUTH_MODE", "disabled"), ("RAY_TMPDIR", tmp), ("HOME", tmp),
                        ("RAY_USAGE_STATS_ENABLED", "0")):
        monkeypatch.setenv(name, value)
    got = []

    def mine(signum, frame):
        got.append(signum)
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    signal.signal(signal.SIGTERM, mine)
    try:
        with held_ray("local"):
            assert ray.is_initialized() and signal.getsignal(signal.SIGTERM) is mine
            assert signal.getsignal(signal.SIGINT) is before[signal.SIGINT]
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
        assert got == [signal.SIGTERM] and not ray.is_initialized()
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        shutil.rmtree(tmp, ignore_errors=True)
    assert "SIGTERM received" not in capfd.readouterr().err


def test_sigterm_to_ono_arena_on_ray_is_said_and_ends_by_the_signal(tmp_path):
    """Before: Ray's own handlers answered it (exit status 1, 15 or a SIGABRT, a stack dump),
    and once they were put back, the console's stop came out of Ray's compiled wait as
    "ono-arena: error: SystemError: <cyfunction CoreWorker.wait ...>"."""
    import signal
    import subprocess
    import threading
    import time

    tmp = tempfile.mkdtemp(prefix="ray")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_TMPDIR": tmp, "HOME": tmp,
           "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "ono_env.apps.arena_cli", "random", "greedy",
                             "--rules", "basic", "--players", "2", "--games", "10000000",
                             "--no-rating", "--ray"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    err: list[bytes] = []
    reader = threading.Thread(target=lambda: err.extend(iter(lambda: proc.stderr.read(1), b"")))
    reader.start()
    try:
        deadline = time.monotonic() + 120
        # the bar is drawn once Ray is up (ono-arena connects first), then the tasks wait
        while b"game/s" not in b"".join(err) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert b"game/s" in b"".join(err), b"".join(err)[-2000:]
        time.sleep(2)
        ray_processes = _descendants(proc.pid)   # the local Ray it started
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        # Ray is shut down before the process ends by the signal (before: the process ran no
        # atexit, and Ray's dashboard and runtime-env agents ran on for about 60 s)
        deadline = time.monotonic() + 15
        while _alive(ray_processes) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _alive(ray_processes)
    finally:
        proc.kill()
        reader.join(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    text = b"".join(err).decode(errors="replace")
    assert proc.returncode == -signal.SIGTERM, text[-2000:]
    assert "ono-arena: stopped by SIGTERM" in text and "no results kept" in text, text[-2000:]
    assert "SystemError" not in text and "SIGTERM received" not in text
    assert len(ray_processes) >= 2 and not left, (ray_processes, left)


def _descendants(pid: int) -> dict[int, str]:
    """Every living process under ``pid`` (Linux's /proc), by its id, with its name."""
    parent, name = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            parent[int(entry)] = int(fields[1])
            name[int(entry)] = stat[stat.index("(") + 1:stat.rindex(")")]
    found, todo = {}, [pid]
    while todo:
        p = todo.pop()
        for child, up in parent.items():
            if up == p and child not in found:
                found[child] = name[child]
                todo.append(child)
    return found


def _alive(processes: dict[int, str]) -> dict[int, str]:
    """Those of ``processes`` that still run (not gone, not a zombie)."""
    left = {}
    for pid, name in processes.items():
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] != "Z":
            left[pid] = name
    return left


def test_auto_is_checked_at_the_address_ray_reads_it_as(monkeypatch):
    """Before: auto was not checked, and a dead cluster's address (RAY_ADDRESS, or the one a
    head that died left in Ray's folder) was waited on for ever."""
    from ono_env.arena import check_ray_address
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    with pytest.raises(ValueError, match=r"^--ray auto, which Ray reads as [0-9.]+:1: cannot "
                                         r"connect within 5 s"):
        check_ray_address("auto", reach=True, name="--ray")
    assert check_ray_address("auto") == "auto"   # the form alone: nothing reached
    # a ray:// one too (before: Ray's reading refused it, so it went unchecked, and ray.init
    # retried it for 30 s, then said no cluster was found)
    monkeypatch.setenv("RAY_ADDRESS", "ray://127.0.0.1:1")
    with pytest.raises(ValueError, match=r"^--ray auto, which Ray reads as ray://127.0.0.1:1: "
                                         r"cannot connect within 5 s"):
        check_ray_address("auto", reach=True, name="--ray")
    # a RAY_ADDRESS of no Ray form (before: Ray's "Invalid address format: garbage", or for
    # ray:// gRPC's resolver errors over many lines)
    for env in ("garbage", "127.0.0.1:", "ray://"):
        monkeypatch.setenv("RAY_ADDRESS", env)
        with pytest.raises(ValueError, match=rf"^--ray auto reads RAY_ADDRESS='{re.escape(env)}', "
                                             rf"which is no Ray address; allowed: host:port"):
            check_ray_address("auto", name="--ray")


def test_this_machines_own_name_is_checked_where_ray_connects(monkeypatch):
    """Ray reads 127.0.0.1 (localhost, ::1) as this machine's address on the network. Before,
    only the loopback address was checked: a gRPC server listening there alone passed, and
    Ray then retried its network address for about 14 minutes, Ctrl-C taking 40 s."""
    from concurrent import futures

    grpc = pytest.importorskip("grpc")
    from ray._private.services import get_node_ip_address

    from ono_env.arena import check_ray_address
    if get_node_ip_address() in ("127.0.0.1", "::1"):
        pytest.skip("this machine has no address but loopback")
    server = grpc.server(futures.ThreadPoolExecutor(1))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with pytest.raises(ValueError, match=rf"^--ray 127.0.0.1:{port}, which Ray reads as "
                                             rf"{re.escape(get_node_ip_address())}:{port}: cannot "
                                             rf"connect within 5 s"):
            check_ray_address(f"127.0.0.1:{port}", reach=True, name="--ray")
        with pytest.raises(ValueError, match=rf"^ray_address=127.0.0.1:{port}, which Ray reads "
                                             rf"as {re.escape(get_node_ip_address())}:{port}: "):
            check_ray_address(f"127.0.0.1:{port}", reach=True)
    finally:
        server.stop(0)


def test_a_workers_error_is_named_with_the_agent_that_raised_it():
    """Before: the last line of Ray's text, the note "raised by the agent ..." without the
    error itself."""
    from ono_env.arena.distributed import _task_failure
    cause = RuntimeError("boom on worker")
    cause.__notes__ = ["raised by the agent Bad"]
    failed = ray.exceptions.RayTaskError("_play_task", "Traceback ...\nRuntimeError: boom on "
                                         "worker\nraised by the agent Bad", cause)
    assert _task_failure(failed) == ("a Ray task failed on a worker: RuntimeError: boom on "
                                     "worker raised by the agent Bad")

    class Unsayable(Exception):
        def __str__(self):
            raise RuntimeError("no text")
    for cause, said in ((Unsayable(), "Unsayable: <exception str() failed>"),
                        (RuntimeError("x" * 5_000), "RuntimeError: xxx"),
                        (KeyboardInterrupt(), "KeyboardInterrupt")):
        line = _task_failure(ray.exceptions.RayTaskError("_play_task", "tb", cause))
        assert line.startswith("a Ray task failed on a worker: ") and said in line, line
        assert len(line) < 500 and "\n" not in line


# ---- a two-node cluster on this machine --------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    tmp = tempfile.mkdtemp(prefix="ray")   # short: Ray's socket paths must stay < 108 bytes
    mp = pytest.MonkeyPatch()
    mp.setenv("RAY_AUTH_MODE", "disabled")
    mp.setenv("RAY_TMPDIR", tmp)
    mp.setenv("HOME", tmp)
    mp.setenv("RAY_USAGE_STATS_ENABLED", "0")
    mp.setenv("OMP_NUM_THREADS", "1")
    # an Algorithm built outside Tune makes a folder under ~/ray_results (a path Ray fixes
    # when it is imported): keep it in the temporary folder
    from ray.tune.trainable import trainable

    mp.setattr(trainable, "DEFAULT_STORAGE_PATH", os.path.join(tmp, "ray_results"))
    if ray.is_initialized():
        ray.shutdown()
    node = {"num_cpus": 1, "object_store_memory": 80 * 1024**2}
    c = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    try:
        c.add_node(**node)
        c.wait_for_nodes()
        ray.init(address=c.address, log_to_driver=False, logging_level="warning")
        yield c
    finally:
        ray.shutdown()
        c.shutdown()
        mp.undo()
        shutil.rmtree(tmp, ignore_errors=True)


def test_cluster_rllib_training_saves_its_model_on_sigterm(cluster, tmp_path, capsys, monkeypatch):
    """Before: Ctrl-C or SIGTERM to an ``rllib_ppo`` run ended it with nothing saved. Now the
    iteration under way ends, the model and the RLlib checkpoint are written, and there is no
    final evaluation (the signal is raised in the first iteration's bookkeeping)."""
    import signal

    row = R.progress_row

    def row_then_signal(*args):
        signal.raise_signal(signal.SIGTERM)
        return row(*args)
    monkeypatch.setattr(R, "progress_row", row_then_signal)
    before = signal.getsignal(signal.SIGTERM)
    cfg = load_config("rllib-basic", [
        f"run_dir={tmp_path / 'run'}", "num_env_runners=1", "num_envs=32", "ppo.n_steps=16",
        "ppo.batch_size=512", "ppo.n_epochs=1", "policy.net_arch=[32]", "total_steps=100000",
        "eval.every=0", "self_play.enabled=false", "final_eval.games=200",
        "final_eval.opponents=[greedy]", "progress=false", "torch_threads=1"])
    with pytest.raises(SystemExit) as stopped:
        R.train(cfg, stop_signals=("SIGINT", "SIGTERM"))
    assert stopped.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before
    err = capsys.readouterr().err
    assert "SIGTERM: stopping after the training iteration under way" in err
    assert re.search(r"interrupted after [\d,]+ of 100,000 steps: model saved to .*; no final "
                     r"evaluation", err), err
    run = tmp_path / "run"
    assert (run / "model.safetensors").is_file() and (run / "rllib_checkpoint").is_dir()
    assert not (run / "final_eval.json").exists()


def test_an_rllib_run_interrupted_while_ray_builds_leaves_no_folder(monkeypatch, tmp_path):
    """Before: the run folder and its config.yaml were written before Ray built the algorithm
    and started its env runners (seconds; for ever on a cluster short of CPUs), so a Ctrl-C
    there left a folder that a named run_dir then refused as another run's."""
    class Building:
        def build_algo(self):
            raise KeyboardInterrupt

    monkeypatch.setattr(R, "init_ray", lambda address: False)
    monkeypatch.setattr(R, "check_runner_cpus", lambda runners, local: None)
    monkeypatch.setattr(R, "algorithm_config", lambda cfg, rules: Building())
    cfg = load_config("rllib-basic", [f"run_dir={tmp_path / 'run'}", "num_env_runners=0",
                                      "progress=false", "torch_threads=1"])
    with pytest.raises(KeyboardInterrupt):
        R.train(cfg)
    assert not (tmp_path / "run").exists()


def test_an_rllib_run_holds_its_folder_through_its_final_evaluation(cluster, tmp_path,
                                                                    monkeypatch):
    """Before: the run folder's lock went with the training, and the final evaluation wrote
    final_eval.* in a folder a second run could already start in."""
    from ono_env.train import run as T

    held = []

    def evaluation(cfg, rules, model_path, run_dir, *args, **kwargs):
        with pytest.raises(ValueError, match="a run is training in"):
            T.lock_run_dir(run_dir)
        held.append(run_dir)
        return []
    monkeypatch.setattr(T, "final_evaluation", evaluation)
    cfg = load_config("rllib-basic", [
        f"run_dir={tmp_path / 'run'}", "num_env_runners=0", "num_envs=32", "ppo.n_steps=16",
        "ppo.batch_size=512", "ppo.n_epochs=1", "policy.net_arch=[32]", "total_steps=512",
        "eval.every=0", "self_play.enabled=false", "progress=false", "torch_threads=1"])
    R.train(cfg)
    assert held == [tmp_path / "run"]
    T.lock_run_dir(tmp_path / "run").close()   # and released at the end


def test_an_rllib_run_cuts_its_evaluation_games_at_max_decisions(cluster, tmp_path, capsys):
    """The in-training evaluations are cut where the training games are, as under algo ppo
    and maskable_ppo (before: rllib_ppo's ran to the engine's limit, so a stalling learner's
    evaluations were slow and its cut games never showed); and their cut games are warned of
    as under the other algos, here naming the short cut (before: rllib_ppo warned of none)."""
    import csv

    cfg = load_config("rllib-basic", [
        f"run_dir={tmp_path / 'run'}", "num_env_runners=0", "num_envs=32", "ppo.n_steps=16",
        "ppo.batch_size=512", "ppo.n_epochs=1", "policy.net_arch=[32]", "total_steps=512",
        "max_decisions=20", "eval.every=512", "eval.games=40", "eval.opponents=[greedy]",
        "final_eval.games=0", "self_play.enabled=false", "progress=false", "torch_threads=1"])
    R.train(cfg)
    with open(tmp_path / "run" / "eval.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    # games of about 40 decisions under basic at two players, cut at 20: most have no winner
    assert rows and all(float(r["mean_length"]) <= 20 for r in rows), rows
    assert sum(int(r["no_winner"]) for r in rows) > 0
    warned = [line for line in capsys.readouterr().err.splitlines()
              if line.startswith("warning: the learner's games are often cut with no winner (greedy ")]
    assert warned and all("): max_decisions=20 cuts games that" in line for line in warned), warned


def test_cluster_rllib_training_with_two_env_runners_on_two_nodes(cluster, tmp_path, capsys):
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    cfg = load_config("rllib-basic", [
        f"run_dir={tmp_path / 'run'}", "num_env_runners=2", "num_envs=32", "ppo.n_steps=16",
        "ppo.batch_size=512", "ppo.n_epochs=1", "policy.net_arch=[32]", "total_steps=2000",
        "self_play.snapshot_every=1000", "eval.every=1000", "eval.games=100",
        "eval.opponents=[random]", "final_eval.games=200", "final_eval.opponents=[greedy]",
        "progress=false", "torch_threads=1"])
    out = R.train(cfg)
    # each evaluation is a console line, as under algo ppo (the progress bar is off)
    assert "eval at step" in capsys.readouterr().err
    # two iterations of 2 x 32 x 16 steps; one env runner on each node
    assert out["steps"] >= 2000 and len(out["progress"]) >= 2
    assert len(set(out["env_runner_nodes"])) == 2
    # league self-play: a frozen snapshot of the learner joined every env runner's pool
    for names in out["opponent_pools"]:
        assert names[:4] == ["random", "greedy", "color", "defensive"]
        assert any(n.startswith("snapshot-") for n in names), names
    run = tmp_path / "run"
    for name in ("config.yaml", "progress.csv", "eval.csv", "model.safetensors",
                 "final_eval.json", "final_eval.csv"):
        assert (run / name).is_file(), name
    assert list((run / "checkpoints").glob("step_*.safetensors"))
    assert (run / "rllib_checkpoint").is_dir()
    # the exported policy is an ordinary model: it plays in the arena and is refused elsewhere
    res = run_arena([str(run / "model.safetensors"), "random"], "basic", 2, 200, rating=False)
    assert res.agent_rows()[0]["games"] == 200
    with pytest.raises(ValueError, match="trained for 'basic' rules"):
        make_agent(str(run / "model.safetensors"), RuleSet.preset("classic", num_players=2))
    assert ray.is_initialized()   # training used the cluster and left it up


def test_cluster_arena_names_an_agent_module_the_workers_cannot_import(cluster, tmp_path,
                                                                       monkeypatch):
    """ono-arena --ray now takes module:Class as ono-bench --ray does (before: refused); a
    worker that cannot import the module is one line naming it (before: Ray's traceback of
    the worker, over many lines, inside the error)."""
    (tmp_path / "driver_only_agents.py").write_text(
        "import numpy as np\n"
        "class First:\n"
        "    def act(self, obs, mask, rng):\n"
        "        return np.argmax(mask, axis=1)\n")
    monkeypatch.syspath_prepend(str(tmp_path))   # the driver's path only
    from driver_only_agents import First

    with pytest.raises(ValueError) as refused:
        run_arena([First(), "random"], "basic", 2, 40, seed=1, batch_size=20, rating=False,
                  ray_address=cluster.address)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(
        "a Ray task failed on a worker: ModuleNotFoundError: No module named "
        "'driver_only_agents'; an agent given as module:Class must import on every Ray node"), line


def test_cluster_arena_ends_at_an_agent_that_kills_its_worker_with_one_line(cluster):
    """A worker process that dies (a crash, or out of memory, in an agent) is one line saying
    so, after one retry (before: Ray's three retries, 46 s and some twenty of Ray's lines,
    then "The worker died unexpectedly ..." alone)."""
    from ono_env.arena import distributed

    class Exiting:   # defined here: pickled by value, so the workers have it
        def act(self, obs, mask, rng):
            os._exit(3)

    with pytest.raises(ValueError) as refused:
        run_arena([Exiting(), "random"], "basic", 2, 8, seed=1, batch_size=8, rating=False,
                  ray_address=cluster.address)
    line = str(refused.value)
    assert "\n" not in line and line.startswith("a Ray task failed on a worker: ") and line.endswith(
        f"; its worker process died {distributed.TASK_RETRIES + 1} times running the same "
        f"games (an agent that crashed it, or ran it out of memory?)"), line


def _on_both_nodes(play, one, fields, tries=4):
    """``play()`` (a run on the two-node cluster) until a run's games went to both nodes, each
    run's records checked identical to ``one`` (a run in one process); the last run. Ray
    places tasks by the resources its nodes last reported, which lag: a run started while a
    node's CPU still read as held (a worker the test before this one killed, restarting) can
    put every task on the other node (two CI runs saw it, the second after a wait for both
    CPUs to read free), so placement is retried, never the records' check."""
    import time

    seen = []
    for _ in range(tries):
        deadline = time.monotonic() + 20   # both CPUs reading free first, as far as Ray knows
        while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        dist = play()
        for f in fields:
            np.testing.assert_array_equal(getattr(one.records, f), getattr(dist.records, f))
        seen.append(dict(dist.nodes))
        if len(dist.nodes) == 2:
            return dist
    raise AssertionError(f"no run of {tries} used both nodes: games per node {seen}; "
                         f"the cluster's nodes {[(n['Alive'], n['Resources']) for n in ray.nodes()]}")


def test_cluster_arena_is_identical_to_one_process_and_uses_both_nodes(cluster, capsys,
                                                                      monkeypatch):
    agents = ["greedy", "random", "color"]
    one = run_arena(agents, "basic", 2, 3000, seed=11, batch_size=250, rating=False)
    dist = _on_both_nodes(lambda: run_arena(agents, "basic", 2, 3000, seed=11, batch_size=250,
                                            rating=False, ray_address=cluster.address),
                          one, ("entrants", "wins", "scores", "length", "truncated"))
    assert one.format_table().split("\n")[1:] == dist.format_table().split("\n")[1:]
    assert sum(dist.nodes.values()) == 3000 and not one.nodes
    from ono_env.apps.arena_cli import main

    assert main(["greedy", "random", "--rules", "basic", "--players", "2", "--games", "400",
                 "--no-rating", "--no-progress", "--ray", cluster.address]) == 0
    assert "greedy" in capsys.readouterr().out
    # a cluster whose resources read no CPUs (a head started with --num-cpus=0, before a
    # worker joins) is said so (before: 0% for ever, without a word)
    real = ray.cluster_resources
    monkeypatch.setattr(ray, "cluster_resources", lambda: {**real(), "CPU": 0.0})
    run_arena(agents, "basic", 2, 30, seed=1, rating=False, ray_address=cluster.address)
    monkeypatch.undo()
    assert "note: the Ray cluster has no CPUs now: the games start when a node with CPUs joins" \
        in capsys.readouterr().err
    with pytest.raises(ValueError, match="record is not available with ray_address"):
        run_arena(agents, "basic", 2, 30, rating=False, ray_address=cluster.address, record=1)
    # mirrored deals: the same deals, seatings and per-deal results as in one process
    kw = dict(num_games=1200, seed=11, batch_size=250, rating=False, mirrored=True)
    one = run_arena(agents, "basic", 2, **kw)
    dist = _on_both_nodes(lambda: run_arena(agents, "basic", 2, ray_address=cluster.address, **kw),
                          one, ("entrants", "wins", "scores", "length", "truncated", "deal"))
    assert one.per_deal_table() == dist.per_deal_table()
    assert dist.paired(0) == one.paired(0)
    unmirrored = run_arena(agents, "basic", 2, ray_address=cluster.address,
                           **dict(kw, mirrored=False))
    assert not np.array_equal(unmirrored.records.wins, dist.records.wins)
    # a table whose order around it is drawn per deal (5 players, four agents), its
    # seatings cut into tasks of a few batches each: the same games
    five = ["greedy", "random", "color", "random", "defensive"]
    kw = dict(num_games=500, seed=4, batch_size=40, rating=False, mirrored=True)
    one = run_arena(five, "basic", 5, **kw)
    dist = run_arena(five, "basic", 5, ray_address=cluster.address, **kw)
    for f in ("entrants", "wins", "scores", "length", "truncated", "deal"):
        np.testing.assert_array_equal(getattr(one.records, f), getattr(dist.records, f))


def test_cluster_bench_gives_the_same_card_as_one_process(cluster):
    from ono_env.arena.suite import bench_agent

    kw = dict(tables=["basic-4p"], deals=50, slow_deals=2)
    one = bench_agent("color", **kw)
    dist = bench_agent("color", ray_address=cluster.address, **kw)
    one.pop("timing")
    dist.pop("timing")
    assert one == dist


@pytest.mark.parametrize("players", [2, 3])
def test_cluster_multi_agent_self_play_trains(cluster, players):
    rules = RuleSet.preset("basic", num_players=players)
    config = R.self_play_config(rules, net_arch=[32], num_envs_per_env_runner=4).training(
        train_batch_size_per_learner=400, minibatch_size=200, num_epochs=1)
    algo = config.build_algo()
    try:
        result = algo.train()
        assert R.env_steps(result) >= 400
        state = algo.learner_group.get_weights(["learner"])["learner"]
        net = R.policy_net_from_state(state, rules, "tanh")
        assert net.hidden_sizes == [32]
    finally:
        algo.stop()


def test_an_agent_that_does_not_pickle_is_named_before_ray_gets_it():
    """Before: Ray's serialization report of about twenty lines, then a TypeError that named
    no agent."""
    import threading

    from ono_env.agents.base import RandomAgent
    from ono_env.arena.distributed import _check_picklable

    class Locked:
        name = "locked"

        def __init__(self):
            self.lock = threading.Lock()

        def act(self, obs, mask, rng):
            return mask.argmax(axis=1)
    with pytest.raises(ValueError, match=r"^agent 'locked' cannot be sent to Ray's workers "
                                         r"\(pickling it: TypeError: cannot pickle "
                                         r"'_thread.lock' object\); allowed: "):
        _check_picklable([RandomAgent(), Locked()])
    _check_picklable([RandomAgent()])


def test_a_ray_address_with_a_port_out_of_range_says_so():
    """Before: the forms again, and a word on a bare --ray, for an address of the right form."""
    from ono_env.arena import check_ray_address

    for address, port in (("localhost:99999", 99999), ("ray://h:0", 0)):
        with pytest.raises(ValueError, match=rf"^--ray '{address}': port {port} is out of range; "
                                             rf"allowed: a port from 1 to 65535$"):
            check_ray_address(address, name="--ray")
    assert check_ray_address("localhost:6379") == "localhost:6379"
    # an address with a path is no agent's name a bare --ray took: no word on that (before:
    # the hint came with every refusal of --ray's word)
    for address in ("localhost:6379/x", "ray://h:10001/p", "http://h:8265"):
        with pytest.raises(ValueError) as info:
            check_ray_address(address, name="--ray")
        assert "a bare --ray took it" not in str(info.value)
    with pytest.raises(ValueError, match="a bare --ray took it as its address"):
        check_ray_address("greedy", name="--ray")
    # a search agent with a budget has a host:port's form: named, not dialled (before: "cannot
    # connect within 5 s (Name or service not known)")
    for spec in ("pimc:8", "ISMCTS:30", "pimc:20ms", "oracle"):
        with pytest.raises(ValueError, match=rf"^--ray '{spec}' is a search agent, not a host: a "
                                             rf"bare --ray took it as its address"):
            check_ray_address(spec, reach=True, name="--ray")
    assert check_ray_address("pimc:8", name="ray_address") == "pimc:8"   # only --ray's word
