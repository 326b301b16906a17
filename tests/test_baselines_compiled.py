"""The compiled baselines (ono_env/_baselines.py) equal the NumPy reference
(agents/rule_based.py): the same scores of all 85 actions in thousands of positions of every
preset at 2, 3 and 4 players, and a chosen action among the NumPy agent's tied-best legal
actions; and the driver plays them in compiled code, reproducibly, recorded or not."""

from __future__ import annotations

import numpy as np
import pytest

from ono_env import VecGame
from ono_env import cards as C
from ono_env._engine import PH_COLOR, PH_DRAWN, PH_PENDING, PH_PLAY, PH_TARGET
from ono_env.agents import ColorControlAgent, DefensiveAgent, GreedyAgent
from ono_env.arena import run_arena
from ono_env.replay import replay_positions
from ono_env.rules import PRESETS, RuleSet

AGENTS = {"greedy": GreedyAgent, "color": ColorControlAgent, "defensive": DefensiveAgent}


def _kernels():
    from ono_env.agents import _baselines as K
    return K


# every preset, and uno2018 with its Wild Customizable cards swapping hands (no preset has
# that option; it is the one way to the choice of a target)
CASES = sorted(PRESETS) + ["uno2018+swap"]


@pytest.mark.parametrize("preset", CASES)
@pytest.mark.parametrize("players", [2, 3, 4])
def test_compiled_baselines_equal_the_numpy_baselines(preset, players):
    K = _kernels()
    if preset == "uno2018+swap":
        rules = RuleSet.preset("uno2018", num_players=players, wild_customizable="swap_hands")
    else:
        rules = RuleSet.preset(preset, num_players=players)
    B = 256
    game = VecGame(rules, B, seed=players * 7 + len(preset))
    rng = np.random.default_rng(players)
    agents = {name: cls(rules) for name, cls in AGENTS.items()}
    tmp = np.zeros(16)
    got = np.zeros((B, C.NUM_ACTIONS))
    last = np.zeros(B, np.int64)
    scratch = np.zeros((B, players), np.float32)
    seen_phases = set()
    checked = 0
    for _ in range(32):
        live = np.ascontiguousarray(~game.finished)
        mask = game.legal_mask().copy()
        obs = game.observe(game.state.current.astype(np.int64))
        seen_phases.update(np.unique(game.state.phase[live]).tolist())
        for name, agent in agents.items():
            code = K.POLICY_CODES[name]
            want = agent.scores(obs)
            got[:] = 0.0
            K.baseline_scores(*game.state.arrays, game.internals.params, code, live, got, tmp)
            np.testing.assert_allclose(got[live], want[live], rtol=0, atol=1e-12,
                                       err_msg=f"{name} {preset} {players}")
            # the compiled choice (on a copy of the batch) is one of NumPy's tied best
            arrays = [a.copy() for a in game.state.arrays]
            policy = np.full((B, players), code, np.int64)
            prng = rng.integers(0, 2**63, size=B, dtype=np.uint64)
            last[:] = -1
            K.policy_moves(*arrays, game.internals.params, policy, prng, live, 1,
                           np.zeros((B, players)), scratch, np.zeros(C.NUM_ACTIONS), tmp, last)
            legal_want = np.where(mask, want, -np.inf)
            top = legal_want.max(axis=1, keepdims=True)
            tied = mask & (np.abs(want - top) <= 1e-9)
            rows = np.flatnonzero(live)
            assert (last[rows] >= 0).all()
            assert tied[rows, last[rows]].all(), f"{name} {preset} {players}"
        checked += int(live.sum())
        acts = np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in mask])
        game.step(acts, active=live)
        if game.finished.any():
            game.reset(which=game.finished)
    assert checked >= 32 * B * 0.9
    assert {PH_PLAY, PH_PENDING, PH_DRAWN} <= seen_phases
    if preset.startswith("uno2018"):   # a Wild Shuffle Hands / a swap: the colour is named
        assert PH_COLOR in seen_phases
    if preset == "uno2018+swap":
        assert PH_TARGET in seen_phases


def _python_steps(monkeypatch) -> list[int]:
    """Counts the decisions the driver hands to Python agents (one entry per call)."""
    from ono_env.agents.driver import AgentDriver

    calls: list[int] = []
    step = AgentDriver._python_step

    def counted(self, rng, rewards, current, who, waiting, inner):
        calls.append(int(waiting.sum()))
        return step(self, rng, rewards, current, who, waiting, inner)

    monkeypatch.setattr(AgentDriver, "_python_step", counted)
    return calls


def test_the_driver_plays_baselines_compiled_and_reproducibly(monkeypatch):
    names = ["greedy", "color", "defensive", "random"]
    python_steps = _python_steps(monkeypatch)
    a = run_arena(names, "classic", 4, num_games=64, seed=3, rating=False)
    b = run_arena(names, "classic", 4, num_games=64, seed=3, rating=False)
    assert np.array_equal(a.records.length, b.records.length)
    assert [r["wins"] for r in a.agent_rows()] == [r["wins"] for r in b.agent_rows()]
    assert python_steps == []   # every decision was the compiled baselines'
    # recording (one decision at a time through the same kernel) changes no result
    c = run_arena(names, "classic", 4, num_games=64, seed=3, rating=False, record=5)
    assert np.array_equal(a.records.length, c.records.length)
    assert len(c.replays) == 5
    for replay in c.replays:   # each replays to its recorded result
        assert len(replay_positions(replay)) > 0


class SubclassedGreedy(GreedyAgent):
    """Not exactly GreedyAgent: a Python agent to the driver."""


def test_python_and_compiled_agents_share_a_table(monkeypatch):
    rules = RuleSet.preset("uno2018", num_players=4)
    names = [SubclassedGreedy(rules), "greedy", "defensive", "random"]
    python_steps = _python_steps(monkeypatch)
    a = run_arena(names, rules, 4, num_games=48, seed=1, rating=False)
    # the subclass plays in Python, one seat of four: about a quarter of the decisions
    assert 0.15 < sum(python_steps) / a.records.length.sum() < 0.35
    b = run_arena(names, rules, 4, num_games=48, seed=1, rating=False, record=4)
    assert np.array_equal(a.records.length, b.records.length)
    assert (a.records.length > 0).all() and a.records.truncated.sum() == 0
    for replay in b.replays:
        assert len(replay_positions(replay)) > 0
