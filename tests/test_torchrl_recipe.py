"""The TorchRL recipe (docs/examples/torchrl_ppo.py) runs with a tiny budget: TorchRL's
Gymnasium wrapper reads the env's action mask, the masked policy takes only legal actions,
and PPO updates it."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

if os.environ.get("ONO_REQUIRE_TORCHRL") != "1":
    pytest.importorskip("torchrl")

RECIPE = Path(__file__).resolve().parent.parent / "docs" / "examples" / "torchrl_ppo.py"


def _recipe():
    spec = importlib.util.spec_from_file_location("torchrl_ppo", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_recipe_trains_a_masked_policy_that_plays_legal_actions():
    import torch

    recipe = _recipe()
    torch.set_num_threads(1)
    untrained, _, _ = recipe.train(frames=1_024, batch=1_024, epochs=0, seed=0)
    actor, env, collected = recipe.train(frames=2_048, batch=1_024, epochs=1, seed=0)
    assert collected == 2_048
    # the same seed starts from the same weights; PPO's updates moved them
    assert any(not torch.equal(a, b) for a, b in zip(untrained.parameters(), actor.parameters()))
    rollout = env.rollout(300, actor, break_when_any_done=False)
    masks, actions = rollout["action_mask"], rollout["action"]
    assert masks.shape[-1] == 85 and masks.any(-1).all()
    assert masks.gather(-1, actions.unsqueeze(-1)).all()   # every action was legal
    assert 0.0 <= recipe.win_rate(actor, env, episodes=10) <= 1.0


@pytest.mark.parametrize("kw", [dict(frames=-5, batch=1_024), dict(frames=512, batch=1_024),
                                dict(frames=2_048, batch=200), dict(frames=2_048, batch=0)])
def test_the_recipe_refuses_budgets_that_would_train_for_ever_or_not_at_all(kw):
    """Before: TorchRL ran for ever on negative frames; a batch under one minibatch made no
    gradient step, silently; a batch of 0 was a ZeroDivisionError."""
    with pytest.raises(ValueError, match="allowed: 1 <= minibatch <= batch <= frames"):
        _recipe().train(**kw)


@pytest.mark.parametrize("kw,message", [
    (dict(frames=2_048, batch=300, minibatch=256), "allowed: a batch that is a multiple of"),
    (dict(frames=2_048, batch=1_024, epochs=-1), "epochs=-1; allowed: 0"),
    (dict(frames=2_048.0, batch=1_024), "frames=2048.0; allowed: a whole number"),
    (dict(frames=2_048, batch=True), "batch=True; allowed: a whole number")])
def test_the_recipe_refuses_a_budget_it_would_bend(kw, message):
    """Before: a batch's remainder past its last whole minibatch sat out every epoch, and
    negative epochs were read as 0, silently."""
    with pytest.raises(ValueError, match=message):
        _recipe().train(**kw)


def test_the_recipe_command_refuses_bad_flags_in_one_line():
    import subprocess
    import sys

    for argv, message in [(["--frames", "-5"], "argument --frames: -5 is out of range"),
                          (["--batch", "4096", "--frames", "2048"],
                           "--batch 4,096 is more than --frames 2,048"),
                          (["--episodes", "0"], "argument --episodes: 0 is out of range"),
                          (["--batch", "300"], "--batch 300; allowed: a multiple of the "
                                               "minibatch, 256")]:
        proc = subprocess.run([sys.executable, str(RECIPE), *argv], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr


def test_the_recipe_command_without_torchrl_names_what_to_install_in_one_line():
    """Run where torchrl cannot be imported (before: a traceback from inside make_env)."""
    import subprocess
    import sys

    run = ("import runpy, sys; sys.modules['torchrl'] = None; sys.argv = ['torchrl_ppo.py']; "
           f"runpy.run_path({str(RECIPE)!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "torchrl_ppo.py: error: torchrl_ppo.py needs torchrl, which is not installed: pip "
        "install 'ono-env[torchrl]'")


def test_the_recipe_env_refuses_an_action_that_is_no_integer_and_plays_on():
    # before: TorchRL's GymWrapper cast it first (safe=False): 2.7 played action 2, True 1
    import torch

    env = _recipe().make_env(seed=0)
    td = env.reset()
    for action in (torch.tensor(2.7), torch.tensor(True), torch.tensor(float("nan"))):
        step = td.clone()
        step["action"] = action
        with pytest.raises(ValueError, match=r"^action=tensor\(.*\) \(torch\.(float32|bool)\); "
                                             r"allowed: one integer action id"):
            env.step(step)
    legal = int(td["action_mask"].nonzero()[0, 0])
    for action in (torch.tensor([legal]), torch.tensor([[legal]])):   # before: a TypeError
        step = td.clone()   # from inside TorchRL (its int() of the action)
        step["action"] = action
        with pytest.raises(ValueError, match=r"^action=tensor\(.*\) of shape \((1,|1, 1)\); "
                                             r"allowed: one integer action id, as a 0-d"):
            env.step(step)
    step = td.clone()   # nothing was played: the first legal action is still legal
    step["action"] = torch.tensor(int(td["action_mask"].nonzero()[0, 0]))
    assert env.step(step)["next", "reward"].item() == 0.0


def test_a_batched_env_seeded_as_the_docs_say_deals_each_copy_its_own_games():
    """Each make_env seeds its env 0, so a SerialEnv's copies dealt the same games (43 of 43
    episodes alike); the batched env's set_seed gives each its own, as docs/openspiel.md
    says."""
    import torch
    from torchrl.envs import SerialEnv

    recipe = _recipe()
    alike = SerialEnv(3, recipe.make_env).reset()["observation"]
    assert all(torch.equal(alike[0], row) for row in alike[1:])   # the pitfall
    batched = SerialEnv(3, recipe.make_env)
    batched.set_seed(7)
    first = batched.reset()["observation"]
    assert not any(torch.equal(first[0], row) for row in first[1:])
    again = SerialEnv(3, recipe.make_env)
    again.set_seed(7)
    assert torch.equal(again.reset()["observation"], first)   # and reproducibly
