"""``ono_v0.env()`` keeps PettingZoo's wrapper behaviour without the wrappers: checked
against the wrapper stack it replaces (``OrderEnforcingWrapper(AssertOutOfBoundsWrapper(
TerminateIllegalWrapper(raw_env, -1)))``), step by step, including illegal moves, bad
actions and calls out of order."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.utils import wrappers

from ono_env import ono_v0


def reference(**kw):
    e = ono_v0.raw_env(**kw)
    e = wrappers.TerminateIllegalWrapper(e, illegal_reward=-1)
    e = wrappers.AssertOutOfBoundsWrapper(e)
    return wrappers.OrderEnforcingWrapper(e)


def snapshot(e):
    obs, rew, term, trunc, info = e.last()
    return (e.agent_selection, list(e.agents), obs["observation"].tobytes(),
            obs["action_mask"].tobytes(), rew, term, trunc, info, dict(e.rewards),
            dict(e.terminations), dict(e.truncations), dict(e._cumulative_rewards))


def outcome(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn()
            error = None
        except Exception as exc:  # noqa: BLE001 - the type and message are compared
            error = (type(exc), str(exc))
    return error, [str(w.message) for w in caught]


@pytest.mark.parametrize("rules,players", [("basic", 2), ("classic", 4), ("stacking", 3)])
@pytest.mark.parametrize("seed", range(6))
def test_same_trajectories_as_the_wrapper_stack_with_illegal_and_bad_moves(rules, players, seed):
    kw = dict(rules=rules, num_players=players)
    if rules == "classic":
        kw["target_score"] = 0
    ours, ref = ono_v0.env(**kw), reference(**kw)
    ours.reset(seed=seed)
    ref.reset(seed=seed)
    rng = np.random.default_rng(seed)
    illegal_at = int(rng.integers(5, 60)) if seed % 2 else -1
    steps = 0
    while ref.agents:
        assert snapshot(ours) == snapshot(ref)
        _, _, term, trunc, _ = ref.last()
        mask = ref.observe(ref.agent_selection)["action_mask"]
        if term or trunc:
            action = None
        elif steps == illegal_at:
            action = int(np.flatnonzero(mask == 0)[0])
        else:
            action = int(rng.choice(np.flatnonzero(mask)))
        if steps % 7 == 3 and not (term or trunc):     # a bad action first: same refusal
            bad = [85, -1, 1.5, "3", np.float64(2.0)][steps % 5]
            a, b = outcome(lambda: ours.step(bad)), outcome(lambda: ref.step(bad))
            assert a[0][0] is b[0][0] is AssertionError
            assert snapshot(ours) == snapshot(ref)
        a, b = outcome(lambda: ours.step(action)), outcome(lambda: ref.step(action))
        assert a == b
        steps += 1
        assert steps < 20_000
    assert ours.agents == [] and (outcome(lambda: ours.step(None)) == outcome(lambda: ref.step(None)))
    if illegal_at >= 0 and illegal_at < steps:
        assert min(ours._cumulative_rewards.values(), default=0) <= 0


def test_order_is_enforced_as_by_the_wrapper():
    ours, ref = ono_v0.env(rules="basic", num_players=2), reference(rules="basic", num_players=2)
    for name in ("rewards", "terminations", "truncations", "infos", "agent_selection",
                 "num_agents", "agents"):
        a = outcome(lambda: getattr(ours, name))
        assert a == outcome(lambda: getattr(ref, name))
        assert a[0] == (AttributeError, f"{name} cannot be accessed before reset")
    for call in (lambda e: e.step(0), lambda e: e.observe("player_0"), lambda e: e.render(),
                 lambda e: e.agent_iter()):
        a, b = outcome(lambda: call(ours)), outcome(lambda: call(ref))
        assert a == b and a[0][0] is AssertionError and "reset() needs to be called" in a[0][1]
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = ours.nothing
    # agent_iter without a step in between asserts, as the wrapper's iterator does
    for e in (ours, ref):
        e.reset(seed=0)
        it = iter(e.agent_iter())
        next(it)
        with pytest.raises(AssertionError, match="need to call step"):
            next(it)
    assert ours.unwrapped is ours


def test_bools_are_not_action_ids():
    e = ono_v0.env(rules="basic", num_players=2)
    e.reset(seed=0)
    before = e.game.to_dict(0)
    for bad in (True, np.bool_(False), np.array([1]), [1], None):
        with pytest.raises(AssertionError, match="is not in the action space Discrete"):
            e.step(bad)
    assert e.game.to_dict(0) == before
