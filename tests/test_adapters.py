"""The environments as a stranger uses them: every preset through Gymnasium's and SB3's own
checkers, determinism after a seeded reset, no finished game handed to a learner, and every
argument of the wrong type refused."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from ono_env import PRESETS, VecGame, ono_v0, random_legal
from ono_env.agents import GreedyAgent, RandomAgent
from ono_env.agents.driver import AgentDriver
from ono_env.envs.gym_env import OnoEnv
from ono_env.envs.opponents import OpponentPool
from ono_env.envs.sb3 import OnoVecEnv
from ono_env.observation import observation_layout
from ono_env.rules import resolve_rules


@pytest.mark.parametrize("num_players", [2, 3, 4])
@pytest.mark.parametrize("preset", PRESETS)
def test_gymnasium_and_sb3_checkers_pass_for_every_preset(preset, num_players):
    from gymnasium.utils.env_checker import check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # a pool of a compiled (random) and a Python (greedy) opponent: the determinism
        # check covers the pool's draws and both loops
        check_env(OnoEnv(preset, num_players=num_players, opponents={"random": 1, "greedy": 1}),
                  skip_render_check=True)
        sb3_check_env(OnoEnv(preset, num_players=num_players, opponents="greedy"))
        check_env(OnoEnv(preset, num_players=num_players, opponents="random", learner_seat=1,
                         hand_size=1), skip_render_check=True)      # deals again often


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
    def run(env: OnoVecEnv, seed: int = 11) -> list[bytes]:
        env.seed(seed)
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
    other = run(env, 12)
    assert other[0] != first[0] and other != first   # the seed is used


# ---- never a finished game ----------------------------------------------------------------
TINY = dict(hand_size=1)


def test_gymnasium_deals_again_when_the_opponents_finish_first():
    env = OnoEnv("basic", num_players=4, opponents="random", learner_seat=3, **TINY)
    for k in range(200):
        _obs, _info = env.reset(seed=k)
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
        assert (env.game.state.current == env.batch.learner).all()
        assert not env.game.finished.any()
        env.step(np.array([rng.choice(np.flatnonzero(m)) for m in mask]))
    assert env.batch._driver.redeals > 0


# ---- rewards before the learner's first decision --------------------------------------------
# a short match with per-round rewards and one-card hands: the opponents often finish a
# whole round before the learner (seat 3) first moves
MATCH = dict(num_players=4, hand_size=1, target_score=30, reward="points")


def test_gymnasium_reports_the_rewards_of_rounds_won_before_the_learners_first_move():
    env = OnoEnv("classic", opponents="random", learner_seat=3, **MATCH)
    rng = np.random.default_rng(0)
    opening = 0
    for k in range(150):
        env.reset(seed=k)
        opening += env._driver.pending[0] != 0
        total, done = 0.0, False
        while not done:
            _, r, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            total += r
            done = term or trunc
        scores = np.array(env.game.to_dict(0)["scores"], float)
        # per-round rewards sum to 0.01 x (own score - mean score) over the match
        assert total == pytest.approx(0.01 * (scores[3] - scores.mean()), abs=1e-4)
    assert opening > 0                     # the situation did occur


def test_sb3_reports_the_rewards_of_rounds_won_before_the_learners_first_move():
    rules = resolve_rules("classic", num_players=4, hand_size=1, target_score=30)
    env = OnoVecEnv(rules, num_envs=32, opponents="random", learner_seat=3, seed=0,
                    reward="points")
    scores = next(b for b in observation_layout(rules) if b.name == "scores")
    env.reset()
    opening = int((env.batch._driver.pending != 0).sum())
    total = np.zeros(32)
    rng = np.random.default_rng(0)
    episodes = 0
    for _ in range(300):
        mask = env.action_masks()
        _, rew, done, infos = env.step(random_legal(mask, rng))
        total += rew
        for i in np.flatnonzero(done):
            s = infos[i]["terminal_observation"][scores.start:scores.stop] * 30  # own first
            assert total[i] == pytest.approx(0.01 * (s[0] - s.mean()), abs=1e-3)
            total[i] = 0.0
            episodes += 1
        opening += int((env.batch._driver.pending != 0).sum())
    assert episodes > 50 and opening > 0


# ---- the one driver loop ----------------------------------------------------------------
class Coin:
    """Uniform like RandomAgent, but a Python agent drawing from the shared generator (so
    the order agents are asked in matters), counting the rows it is asked for."""

    def __init__(self, name: str) -> None:
        self.name, self.rows = name, 0

    def act(self, obs, mask, rng):
        self.rows += len(mask)
        return random_legal(mask, rng)


def test_a_member_removed_from_the_pool_finishes_the_games_it_was_dealt():
    rules = resolve_rules("basic", num_players=3)
    a, b, c = Coin("a"), Coin("b"), Coin("c")
    pool = OpponentPool({a: 1, b: 1, c: 1}, rules)
    env = OnoVecEnv(rules, num_envs=64, opponents=pool, seed=0)
    env.reset()
    driver = env.batch._driver
    def seated(agent):
        return np.array([[driver.agents[j] is agent for j in row] for row in driver.member])
    had_a = seated(a).any(axis=1)
    assert had_a.any()
    pool.remove("a")
    rng = np.random.default_rng(1)
    before = a.rows
    while a in driver.agents:
        kept = seated(a).any(axis=1)
        assert (kept <= had_a).all()       # no new deal draws the removed member
        env.step(random_legal(env.action_masks(), rng))
        assert (driver.member < len(driver.agents)).all()
    assert a.rows > before                  # it went on playing the games it was dealt
    after = a.rows
    for _ in range(20):
        env.step(random_legal(env.action_masks(), rng))
    assert a.rows == after and not seated(a).any()


def test_a_seeded_reset_does_not_depend_on_the_pools_history():
    rules = resolve_rules("basic", num_players=3)

    def run(env):
        env.seed(11)
        out = [env.reset().tobytes()]
        rng = np.random.default_rng(2)
        for _ in range(30):
            obs, rew, done, _ = env.step(random_legal(env.action_masks(), rng))
            out.append(obs.tobytes() + rew.tobytes() + done.tobytes())
        return out

    pool = OpponentPool({Coin("a"): 1, Coin("b"): 1}, rules)
    used = OnoVecEnv(rules, num_envs=32, opponents=pool, seed=7)
    used.reset()
    pool.set_weight("a", 0)                 # "a" leaves every game, then comes back
    rng = np.random.default_rng(0)
    while len(used.batch._driver.agents) > 1:
        used.step(random_legal(used.action_masks(), rng))
    pool.set_weight("a", 1)
    used.step(random_legal(used.action_masks(), rng))
    fresh = OnoVecEnv(rules, num_envs=32,
                      opponents=OpponentPool({Coin("a"): 1, Coin("b"): 1}, rules))
    assert run(used) == run(fresh)


def test_pool_draws_are_those_of_generator_choice():
    rules = resolve_rules("basic", num_players=4)
    pool = OpponentPool({"greedy": 2, "color": 1, "defensive": 2, "random": 0.5}, rules)
    for seed in range(200):
        if seed == 100:   # the kept cumulative weights follow a change of weight
            pool.set_weight("color", 0)
        shape = (seed % 7 + 1, 3)
        want = np.random.default_rng(seed).choice(4, size=shape, p=pool.probabilities())
        got = pool.draw(np.random.default_rng(seed), shape)
        assert got.dtype == np.int64 and np.array_equal(got, want)
    assert not (pool.draw(np.random.default_rng(0), (500, 3)) == 1).any()
    # before: AttributeError ('NoneType' object has no attribute 'random')
    for rng in (None, 0, np.random.RandomState(0)):
        with pytest.raises(ValueError, match=r"^rng is a \w+; allowed: a numpy.random.Generator"):
            pool.draw(rng, (2, 3))


@pytest.mark.parametrize("bits", [np.random.PCG64, np.random.PCG64DXSM, np.random.Philox,
                                  np.random.SFC64, np.random.MT19937])
def test_driver_seeds_are_those_of_generator_integers(bits):
    game = VecGame("basic", 64, seed=0, num_players=2)
    driver = AgentDriver(game, [RandomAgent()])
    for seed in range(50):
        which = np.random.default_rng(seed).random(64) < 0.3
        mine, theirs = np.random.Generator(bits(seed)), np.random.Generator(bits(seed))
        driver.seed_games(which, mine)
        want = theirs.integers(0, 2**63, size=int(which.sum()), dtype=np.uint64)
        assert np.array_equal(driver.policy_rng[which], want)
        assert mine.random() == theirs.random()   # and the generator is where it would be


def test_a_pool_whose_weights_sum_past_the_floats_is_refused():
    rules = resolve_rules("basic", num_players=2)
    # refused as the pool is made, at the member that would take the sum past the floats
    with pytest.raises(ValueError, match="adding 'color' would make the weights' sum infinite; "
                                         "allowed: weights whose sum"):
        OnoVecEnv(rules, num_envs=4, opponents={"greedy": 1e308, "color": 1e308})


@pytest.mark.parametrize("opponents", [
    {"greedy": 2, "color": 1, "defensive": 2},
    {"greedy": 1, "ppo-basic-4p": 1, "random": 1},
    ["greedy", "color", "ppo-basic-4p"],
    "coins",
])
def test_learner_batch_short_paths_play_as_the_long_ones(monkeypatch, opponents):
    """The opponents' short paths (a pool's draw kept as it was, the seats kept between
    deals, no Python loop where every agent is compiled, only the Python agents a waiting
    game needs asked) change nothing: the same games, step by step, and the same state of
    the generators, as with them switched off. "coins": two Python agents that draw from
    the shared generator, beside a compiled one, so the order they are asked in counts."""
    from ono_env.envs.learner_batch import LearnerBatch
    from ono_env.envs.opponents import OpponentDriver

    def run() -> list[bytes]:
        opp = ({Coin("a"): 1, "greedy": 1, Coin("b"): 1} if opponents == "coins" else opponents)
        b = LearnerBatch("basic", 24, opponents=opp, seed=3, num_players=4,
                         observation_version=2, max_decisions=300)
        out = [b.reset(seed=3).tobytes()]
        rng = np.random.default_rng(5)
        for t in range(200):
            if t == 100 and isinstance(opponents, dict):
                b._driver.pool.set_weight("greedy", 0)   # its games finish, then it leaves
            r = b.step(random_legal(b.action_masks(), rng))
            out.append(r.obs.tobytes() + r.rewards.tobytes() + r.dones.tobytes()
                       + b._driver.member.tobytes() + b._driver.driver.policy_rng.tobytes())
        out.append(np.float64(b.rng.random()).tobytes())
        return out

    short = run()
    with monkeypatch.context() as m:
        m.setattr(OpponentDriver, "short_paths", False)
        m.setattr(AgentDriver, "short_paths", False)
        assert run() == short


def test_sb3_constructor_seed_is_the_seed_of_the_first_reset():
    a = OnoVecEnv("basic", num_envs=8, num_players=3, seed=5)
    b = OnoVecEnv("basic", num_envs=8, num_players=3)
    b.seed(5)
    assert a.reset().tobytes() == b.reset().tobytes()
    c = OnoVecEnv("basic", num_envs=8, num_players=3, seed=6)
    assert c.reset().tobytes() != OnoVecEnv("basic", num_envs=8, num_players=3,
                                            seed=5).reset().tobytes()
    assert a.reset_infos == b.reset_infos and set(a.reset_infos[0]) == {"learner_seat"}


def test_driver_fast_path_never_plays_a_seat_it_does_not_drive():
    game = VecGame("basic", 256, seed=3, num_players=4)
    driver = AgentDriver(game, [RandomAgent()])
    driver.seat_agent[:] = [0, -1, 0, -1]   # two seats per game are someone else's
    driver.seed_games(np.ones(256, bool), np.random.default_rng(0))
    start = game.state.current.copy()
    decisions = game.state.decisions.copy()
    driver.play(np.random.default_rng(0))
    live = ~game.finished
    assert np.isin(game.state.current[live], [1, 3]).all()
    waiting = np.isin(start, [1, 3])
    assert waiting.any() and (game.state.decisions[waiting] == decisions[waiting]).all()


def test_driver_refuses_a_seat_without_an_agent():
    game = VecGame("basic", 4, seed=0, num_players=2)
    driver = AgentDriver(game, [RandomAgent()])
    driver.seat_agent[:] = [0, 1]
    with pytest.raises(ValueError, match=r"seat_agent names agent 1; allowed: -1 \(a seat the "
                                         r"driver does not play\) to 0 \(the driver has 1 agent"):
        driver.play(np.random.default_rng(0))


@pytest.mark.parametrize("seat_agent, message", [
    # before: the compiled kernel read past the array and played on; -2 seated another agent
    (np.zeros((1, 2), np.int64), r"seat_agent must be a \(4, 2\) integer array .*; got int64 \(1, 2\)"),
    (np.zeros((4, 2)), r"seat_agent must be a \(4, 2\) integer array .*; got float64 \(4, 2\)"),
    ([[0, 0]] * 4, r"got list"),
    (np.full((4, 2), -2), r"seat_agent names agent -2; allowed: -1"),
])
def test_driver_refuses_a_seat_agent_of_another_shape_or_index(seat_agent, message):
    game = VecGame("basic", 4, seed=0, num_players=2)
    driver = AgentDriver(game, [GreedyAgent(game.rules), RandomAgent()])
    driver.seat_agent = seat_agent
    before = game.state.decisions.copy()
    with pytest.raises(ValueError, match=message):
        driver.play(np.random.default_rng(0))
    assert (game.state.decisions == before).all()


def test_driver_plays_whole_games_for_the_arena():
    from ono_env.arena import run_arena

    for entrants in (["greedy", "random"], ["random", "random"]):   # Python loop, compiled loop
        result = run_arena(entrants, rules="basic", num_players=2, num_games=48, seed=0)
        r = result.records
        assert len(r.length) == 48 and not r.truncated.any()
        assert (r.wins.sum(axis=1) == 1).all() and (r.length > 0).all()  # played to the end
        again = run_arena(entrants, rules="basic", num_players=2, num_games=48, seed=0)
        np.testing.assert_array_equal(again.records.wins, r.wins)  # reproducible from the seed


# ---- wrong types are refused ------------------------------------------------------------
GYM_BAD_ACTIONS = [0.5, 1.0, True, False, "3", None, [1], np.float32(2.0), np.array([1]),
                   np.array(1.0), np.bool_(True), 85, -1, np.int64(85), 10**20]


@pytest.mark.parametrize("illegal_action", ["lose", "raise"])
@pytest.mark.parametrize("action", GYM_BAD_ACTIONS, ids=repr)
def test_gymnasium_step_refuses_actions_that_are_not_action_ids(action, illegal_action):
    env = OnoEnv("basic", num_players=2, learner_seat=0, illegal_action=illegal_action)
    env.reset(seed=0)
    before = env.game.to_dict(0)
    with pytest.raises(ValueError, match=r"action=.*allowed: an integer"):
        env.step(action)
    assert env.game.to_dict(0) == before
    env.step(int(np.flatnonzero(env.action_masks())[0]))   # the episode goes on


def test_gymnasium_step_takes_integer_types():
    env = OnoEnv("basic", num_players=2, learner_seat=0)
    env.reset(seed=0)
    a = int(np.flatnonzero(env.action_masks())[0])
    for value in (np.int64(a), np.uint8(a), np.array(a), np.array(a, np.int32), a):
        env.reset(seed=0)
        env.step(value)


def test_gymnasium_masks_are_empty_once_the_episode_is_over():
    env = OnoEnv("basic", num_players=2, learner_seat=0)
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.step(illegal)
    assert not env.action_masks().any()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(0)


GYM_BAD_KWARGS = [
    (dict(learner_seat=2), "learner_seat=2"), (dict(learner_seat=True), "learner_seat=True"),
    (dict(learner_seat="left"), "learner_seat='left'"), (dict(learner_seat=1.0), "learner_seat=1.0"),
    (dict(learner_seat=-1), "learner_seat=-1"), (dict(learner_seat=None), "learner_seat=None"),
    (dict(num_players=True), "num_players=True"), (dict(num_players=2.0), "num_players=2.0"),
    (dict(illegal_action="ignore"), "illegal_action"), (dict(illegal_action=False), "illegal_action"),
    (dict(render_mode="rgb_array"), "render_mode"), (dict(render_mode=1), "render_mode"),
    (dict(skip_forced="no"), "skip_forced"), (dict(skip_forced=1), "skip_forced"),
    (dict(max_decisions=True), "max_decisions"), (dict(max_decisions=2.5), "max_decisions"),
    (dict(max_decisions=0), "max_decisions"), (dict(reward="score"), "reward"),
    (dict(hand_size="1"), "hand_size"),
    (dict(opponents={"greedy": True}), "weight"), (dict(opponents={"greedy": math.nan}), "weight"),
    (dict(opponents={"greedy": math.inf}), "weight"),
    (dict(opponents={"greedy": -1}), "weight"), (dict(opponents={"greedy": "2"}), "weight"),
    (dict(opponents={}), "pool is empty"), (dict(opponents={"greedy": 0}), "pool is empty"),
    (dict(opponents="genius"), "unknown agent 'genius'"), (dict(opponents=5), "opponents=5"),
    (dict(opponents=None), "opponents=None"), (dict(opponents=["random", "random"]), "2 given"),
    (dict(opponents=OpponentPool({"random": 1}, resolve_rules("basic", num_players=3))),
     "OpponentPool made for the rules"),
]


@pytest.mark.parametrize("kwargs,message", GYM_BAD_KWARGS, ids=repr)
def test_gymnasium_constructor_refuses_wrong_types(kwargs, message):
    with pytest.raises(ValueError, match=message):
        OnoEnv("basic", **{"num_players": 2, **kwargs})


@pytest.mark.parametrize("seed", [1.5, -1, "1", True, 2**63, np.float64(3)], ids=repr)
def test_gymnasium_reset_refuses_bad_seeds(seed):
    with pytest.raises(ValueError, match="seed"):
        OnoEnv("basic", num_players=2).reset(seed=seed)


@pytest.mark.parametrize("options", [5, "fast", [("a", 1)]], ids=repr)
def test_gymnasium_reset_refuses_options_that_are_not_a_dict(options):
    with pytest.raises(ValueError, match="options="):
        OnoEnv("basic", num_players=2).reset(options=options)


def test_a_preset_keyword_says_to_give_the_preset_as_rules():
    with pytest.raises(ValueError, match=r"preset='classic': OnoEnv takes the preset as rules "
                                         r"\(rules='ono', or a mapping"):
        OnoEnv("basic", preset="classic")
    with pytest.raises(ValueError, match=r"preset='ono': ono_v0's env takes the preset as rules"):
        ono_v0.raw_env(preset="ono")


def test_numpy_integer_seeds_are_seeds():
    env = OnoEnv("basic", num_players=3)
    assert env.reset(seed=np.int64(3))[0].tobytes() == env.reset(seed=3)[0].tobytes()
    e = ono_v0.raw_env(rules="basic", num_players=3)
    e.reset(seed=np.uint32(3))
    first = e.game.to_dict(0)
    e.reset(seed=3)
    assert e.game.to_dict(0) == first
    venv = OnoVecEnv("basic", num_envs=4, num_players=3)
    venv.seed(np.int64(3))
    assert venv.reset().tobytes() == OnoVecEnv("basic", num_envs=4, num_players=3,
                                               seed=3).reset().tobytes()
    venv.seed(np.int64(4))
    assert venv.reset().tobytes() != OnoVecEnv("basic", num_envs=4, num_players=3,
                                               seed=3).reset().tobytes()


def test_the_old_seat_keyword_points_to_learner_seat_and_a_seed_to_reset():
    import gymnasium

    from ono_env.envs.gym_vector import OnoVectorEnv
    for make in (lambda: OnoEnv("basic", num_players=2, seat=0),
                 lambda: OnoVecEnv("basic", num_envs=2, num_players=2, seat=0)):
        with pytest.raises(ValueError, match="seat=0: the learner's seat is learner_seat"):
            make()
    # before: OnoVectorEnv's seed reached LearnerBatch twice (a TypeError), OnoEnv's was an
    # "unknown rule option"
    for make, env in ((lambda: OnoEnv("basic", num_players=2, seed=1), "OnoEnv"),
                      (lambda: OnoVectorEnv(2, "basic", 2, seed=1), "OnoVectorEnv"),
                      (lambda: gymnasium.make_vec("ono_env/Ono-v0", num_envs=2, seed=1,
                                                  vectorization_mode="vector_entry_point",
                                                  rules="basic", num_players=2), "OnoVectorEnv"),
                      (lambda: ono_v0.env(rules="basic", seed=1), "ono_v0's env")):
        with pytest.raises(ValueError, match=rf"^seed=1: {env} takes its seed in "
                                             rf"reset\(seed=\.\.\.\)"):
            make()


def test_an_argument_no_env_takes_is_named_with_the_env_own_and_the_rule_options():
    """Before: "unknown rule option(s) 'opponent'" listing the rule options alone, and
    make_vec's max_episode_steps was one too."""
    import gymnasium

    from ono_env.envs.gym_vector import OnoVectorEnv
    for make, env, own in (
            (lambda: OnoEnv("basic", skip_force=True), "OnoEnv", "learner_seat"),
            (lambda: OnoVectorEnv(2, "basic", skip_force=True), "OnoVectorEnv", "render_mode"),
            (lambda: OnoVecEnv("basic", num_envs=2, skip_force=True), "OnoVecEnv", "seed"),
            (lambda: ono_v0.env(rules="basic", skip_force=True), "ono_v0's env", "reward")):
        with pytest.raises(ValueError, match=rf"^{env}: unknown argument\(s\) 'skip_force' "
                                             rf"\(did you mean 'skip_forced'\?\); allowed: its own "
                                             rf"\((num_envs, )?rules, .*{own}.*\) and the rule options "
                                             rf"\(name, .*target_score\)$"):
            make()
    with pytest.raises(ValueError, match=r"^max_episode_steps=5: OnoVectorEnv ends a game that "
                                         r"reaches max_decisions decisions \(truncated\); give "
                                         r"max_decisions$"):
        gymnasium.make_vec("ono_env/Ono-v0", num_envs=2, vectorization_mode="vector_entry_point",
                           max_episode_steps=5)
    with pytest.raises(ValueError, match=r"^OnoEnv: unknown argument\(s\) 'opponent' \(did you "
                                         r"mean 'opponents'\?\)"):
        OnoEnv("basic", opponent="greedy")
    assert OnoEnv("basic", stacking=True).rules.stacking   # a rule option still passes


def test_sb3_make_vec_env_builds_the_gymnasium_env():
    """Before: make_vec_env asked for render_mode='rgb_array', got a ValueError and ended;
    it makes the env without a render mode only on a TypeError."""
    from stable_baselines3.common.env_util import make_vec_env

    from ono_env.envs.gym_env import RenderModeError
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # Gymnasium's warning of a mode not in render_modes
        vec = make_vec_env("ono_env/Ono-v0", n_envs=2, seed=0,
                           env_kwargs=dict(rules="basic", num_players=2))
    assert vec.reset().shape == (2, 241) and vec.get_attr("render_mode") == [None, None]
    with pytest.raises(RenderModeError, match=r"render_mode='rgb_array'; allowed: None \| human "
                                              r"\| ansi") as err:
        OnoEnv("basic", render_mode="rgb_array")
    assert isinstance(err.value, ValueError) and isinstance(err.value, TypeError)


def test_sb3_reset_infos_name_each_new_episodes_learner_seat():
    env = OnoVecEnv("basic", num_envs=16, num_players=4, seed=0)
    env.reset()
    rng = np.random.default_rng(0)
    renewed = 0
    for _ in range(200):
        _, _, done, _ = env.step(random_legal(env.action_masks(), rng))
        renewed += int(done.sum())
        assert [i["learner_seat"] for i in env.reset_infos] == env.batch.learner.tolist()
        assert (env.game.state.current == env.batch.learner).all()
    assert renewed > 0 and len(set(env.batch.learner.tolist())) > 1


def test_learner_seat_can_be_changed_only_to_a_seat():
    env = OnoEnv("basic", num_players=3)
    venv = OnoVecEnv("basic", num_envs=4, num_players=3, seed=0)
    for bad in (3, True, "left", 1.0):
        with pytest.raises(ValueError, match="learner_seat"):
            env.learner_seat = bad
        with pytest.raises(ValueError, match="learner_seat"):
            venv.set_attr("learner_seat", bad)
    env.learner_seat = 2
    venv.set_attr("learner_seat", 2)
    assert env.reset(seed=0)[1]["learner_seat"] == 2
    venv.reset()
    assert venv.get_attr("learner_seat") == [2] * 4 and (venv.game.state.current == 2).all()


SB3_BAD_KWARGS = [
    (dict(num_envs=True), "num_envs=True"), (dict(num_envs=0), "num_envs=0"),
    (dict(num_envs=-3), "num_envs=-3"), (dict(num_envs="4"), "num_envs='4'"),
    (dict(num_envs=2.0), "num_envs=2.0"), (dict(num_envs=10**7), "num_envs"),
    (dict(seed=1.5), "seed=1.5"), (dict(seed=-2), "seed=-2"), (dict(seed=True), "seed=True"),
    (dict(seed="0"), "seed='0'"), (dict(learner_seat=5), "learner_seat"),
    (dict(learner_seat="any"), "learner_seat"), (dict(learner_seat=False), "learner_seat"),
    (dict(autoreset=True), "autoreset"), (dict(max_decisions=True), "max_decisions=True"),
    (dict(max_decisions=1.5), "max_decisions=1.5"), (dict(skip_forced="yes"), "skip_forced"),
    (dict(reward="score"), "reward"), (dict(num_players=True), "num_players=True"),
    (dict(opponents=3), "opponents=3"), (dict(opponents={"random": -1}), "weight"),
]


@pytest.mark.parametrize("kwargs,message", SB3_BAD_KWARGS, ids=repr)
def test_sb3_constructor_refuses_wrong_types(kwargs, message):
    with pytest.raises(ValueError, match=message):
        OnoVecEnv("basic", **{"num_players": 2, **kwargs})


@pytest.mark.parametrize("actions", [np.zeros(4, np.float32), np.zeros(4, np.float64),
                                     np.zeros(3, np.int64), np.zeros((4, 2), np.int64),
                                     np.zeros((1, 4), np.int64), np.array([True] * 4),
                                     ["1"] * 4, [0.0, 1.0, 2.0, 3.0], np.int64(0), None],
                         ids=repr)
def test_sb3_step_refuses_actions_of_the_wrong_type_or_shape(actions):
    env = OnoVecEnv("basic", num_envs=4, num_players=2, seed=0)
    env.reset()
    before = [env.game.to_dict(i) for i in range(4)]
    with pytest.raises(ValueError, match=r"actions must be an integer array of shape \(4,\)"):
        env.step(actions)
    assert [env.game.to_dict(i) for i in range(4)] == before


def test_sb3_step_takes_integer_arrays_and_lists():
    env = OnoVecEnv("basic", num_envs=4, num_players=2, seed=0)
    env.reset()
    for kind in (np.int64, np.int32, np.uint8, list):
        a = np.argmax(env.action_masks(), 1)
        env.step(a.tolist() if kind is list else a.astype(kind))


@pytest.mark.parametrize("seed", [1.5, -1, True, "3", 2**63], ids=repr)
def test_sb3_seed_refuses_what_is_not_a_seed(seed):
    env = OnoVecEnv("basic", num_envs=4, num_players=2)
    with pytest.raises(ValueError, match="seed="):
        env.seed(seed)


def test_sb3_step_before_reset_is_refused():
    env = OnoVecEnv("basic", num_envs=4, num_players=2, seed=0)
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(np.zeros(4, np.int64))


PZ_BAD_ACTIONS = ["66", 1.5, True, np.float64(3.0), -1, 85, None, [1], np.array([1]),
                  np.bool_(False)]


@pytest.mark.parametrize("action", PZ_BAD_ACTIONS, ids=repr)
def test_pettingzoo_step_refuses_bad_actions(action):
    e = ono_v0.raw_env(rules="basic", num_players=2)
    e.reset(seed=0)
    before = e.game.to_dict(0)
    with pytest.raises(ValueError, match=r"action .*player_\d.*allowed"):
        e.step(action)
    assert e.game.to_dict(0) == before


def test_pettingzoo_step_takes_integer_types_and_none_only_when_done():
    e = ono_v0.raw_env(rules="basic", num_players=2)
    for value in (np.int64, np.uint8, np.array, int):
        e.reset(seed=0)
        e.step(value(int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0])))
    e.reset(seed=1)
    while not any(e.terminations.values()):
        e.step(int(np.flatnonzero(e.observe(e.agent_selection)["action_mask"])[0]))
    with pytest.raises(ValueError, match=r"action 0 for player_\d, which is done; allowed: None"):
        e.step(0)
    while e.agents:
        e.step(None)
    with pytest.raises(RuntimeError, match="call reset"):
        e.step(None)


@pytest.mark.parametrize("agent", ["player_9", "player_-1", 0, None, "player_0 "], ids=repr)
def test_pettingzoo_unknown_agents_are_named(agent):
    e = ono_v0.raw_env(rules="basic", num_players=2)
    e.reset(seed=0)
    for call in (e.observe, e.observation_space, e.action_space):
        with pytest.raises(ValueError, match=r"unknown agent .*agents: player_0, player_1"):
            call(agent)


PZ_BAD_KWARGS = [
    (dict(render_mode="rgb_array"), r"render_mode='rgb_array'; allowed: None \| human \| ansi"),
    (dict(render_mode=True), "render_mode"),
    (dict(num_players=True), "num_players=True"), (dict(num_players=1), "num_players"),
    (dict(max_decisions=2.5), "max_decisions=2.5"), (dict(max_decisions=False), "max_decisions"),
    (dict(skip_forced=1), "skip_forced=1"), (dict(reward="score"), "reward"),
    (dict(rules=7), "rules must be"), (dict(hand_size=True), "hand_size"),
]


@pytest.mark.parametrize("kwargs,message", PZ_BAD_KWARGS, ids=repr)
def test_pettingzoo_constructor_refuses_wrong_types(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ono_v0.raw_env(**{"rules": "basic", "num_players": 2, **kwargs})


@pytest.mark.parametrize("kwargs,message", [
    (dict(seed=1.5), "seed=1.5"), (dict(seed=True), "seed=True"), (dict(seed=-1), "seed=-1"),
    (dict(seed="1"), "seed='1'"), (dict(options=3), "options=3"), (dict(options="x"), "options"),
], ids=repr)
def test_pettingzoo_reset_refuses_wrong_types(kwargs, message):
    e = ono_v0.raw_env(rules="basic", num_players=2)
    with pytest.raises(ValueError, match=message):
        e.reset(**kwargs)


def test_pettingzoo_step_and_observe_before_reset_are_refused():
    e = ono_v0.raw_env(rules="basic", num_players=2)
    with pytest.raises(RuntimeError, match="call reset"):
        e.step(0)
    with pytest.raises(RuntimeError, match="call reset"):
        e.observe("player_0")


POOL_BAD_WEIGHTS = [True, False, np.bool_(True), math.inf, -math.inf, math.nan, -0.5, -1,
                    "1", None, [1], 1 + 0j]


def test_opponent_pool_refuses_bad_weights_and_unknown_members():
    pool = OpponentPool({"greedy": 1, "random": 2}, "basic")
    for bad in POOL_BAD_WEIGHTS:
        with pytest.raises(ValueError, match="weight"):
            pool.add("color", bad)
        with pytest.raises(ValueError, match="weight"):
            pool.set_weight("greedy", bad)
    assert pool.weights == [1.0, 2.0] and pool.names == ["greedy", "random"]
    pool.set_weight("greedy", np.float32(0.5))
    pool.add("color", np.int64(3))
    assert pool.weights == [0.5, 2.0, 3.0]
    for bad in ("colour", "Greedy", 0, None):
        for call in (pool.remove, lambda n: pool.set_weight(n, 1)):
            with pytest.raises(ValueError, match=f"no member {bad!r}; members: 'greedy', "
                                                 f"'random', 'color'"):
                call(bad)
    with pytest.raises(ValueError, match="already has 'greedy'; members: 'greedy', 'random'"):
        pool.add("greedy", 1)
    with pytest.raises(ValueError, match="already has 'color'"):
        pool.add("defensive", 1, "color")
    for bad in (5, "", b"x"):
        with pytest.raises(ValueError, match="opponent name="):
            pool.add("defensive", 1, bad)
    with pytest.raises(ValueError, match=r"members=.*allowed: a dict"):
        OpponentPool(["greedy", "random"], "basic")
    assert pool.names == ["greedy", "random", "color"]


@pytest.mark.parametrize("bad", [np.zeros((4, 3), np.float32), np.zeros((4, 241), np.float64),
                                 np.zeros((241, 4), np.float32).T, [[0.0] * 241] * 4])
def test_a_learner_batch_refuses_a_bad_out_before_any_game_moves(bad):
    from ono_env.envs.learner_batch import LearnerBatch
    b = LearnerBatch("basic", 4, opponents="random", seed=0, num_players=2)
    b.reset(seed=0)
    before = [b.game.to_dict(i) for i in range(4)], b.decisions
    with pytest.raises(ValueError, match=r"out must be a writable C-contiguous \(4, 241\) float32 array; got"):
        b.step(random_legal(b.action_masks(), np.random.default_rng(0)), out=bad)
    assert ([b.game.to_dict(i) for i in range(4)], b.decisions) == before
    good = np.zeros((4, 241), np.float32)
    assert b.step(random_legal(b.action_masks(), np.random.default_rng(0)), out=good).obs is good


def test_a_learner_batch_deals_a_finished_game_on_the_step_or_the_next():
    """Same-step autoreset (Gymnasium, SB3, the trainer) and next-step (RLlib's vector env)
    from one LearnerBatch: on the same seed the two play the same first episodes; next-step
    reports each end with the episode's own last observation and deals on the next step
    (its action ignored, reward 0)."""
    from ono_env.envs.learner_batch import LearnerBatch
    with pytest.raises(ValueError, match=r"autoreset='later'; allowed: same_step \| next_step"):
        LearnerBatch("basic", 2, autoreset="later")
    same = LearnerBatch("basic", 1, "greedy", seed=4, num_players=2, learner_seat=0)
    nxt = LearnerBatch("basic", 1, "greedy", seed=4, num_players=2, learner_seat=0,
                       autoreset="next_step")
    obs_s, obs_n = same.reset(4), nxt.reset(4)
    rng = np.random.default_rng(0)
    ends = 0
    while ends < 3:
        np.testing.assert_array_equal(obs_s, obs_n)
        a = random_legal(same.action_masks(), rng)
        rs, rn = same.step(a), nxt.step(a)
        assert rs.rewards[0] == rn.rewards[0] and rs.dones[0] == rn.dones[0]
        obs_s, obs_n = rs.obs, rn.obs
        if rn.dones[0]:
            ends += 1
            assert rn.final_obs is None and not nxt.action_masks()[0].any()   # nothing to play
            np.testing.assert_array_equal(rn.obs, rs.final_obs)   # the episode's last view
            after = nxt.step(np.array([9999]))   # ignored: the game is dealt again
            assert after.rewards[0] == 0.0 and not after.dones[0]
            np.testing.assert_array_equal(after.obs, rs.obs)      # the same new deal
            obs_n = after.obs


def test_sb3_vecenv_checks_indices_and_keeps_its_own_attributes():
    v = OnoVecEnv("basic", num_envs=4, seed=0)
    v.reset()
    # before: [10] was an IndexError, np.int64(0) a TypeError, get_attr took [10] silently
    for bad in ([10], [-1], [True], "a", 2.0):
        with pytest.raises(ValueError, match=r"allowed: game indices 0 to 3"):
            v.env_method("action_masks", indices=bad)
        with pytest.raises(ValueError, match=r"allowed: game indices 0 to 3"):
            v.get_attr("render_mode", indices=bad)
    assert len(v.env_method("action_masks", indices=np.int64(2))) == 1
    assert len(v.get_attr("render_mode", indices=[0, 3])) == 2
    # get_attr("action_masks")[k]() is game k's mask, as env_method gives it and a DummyVecEnv
    # of OnoEnv does (before: every game's masks, (4, 85), at every index)
    v.step(np.array([int(np.flatnonzero(m)[-1]) for m in v.action_masks()]))
    got = [f() for f in v.get_attr("action_masks", indices=[3, 1])]
    assert [g.shape for g in got] == [(85,)] * 2
    for g, want in zip(got, v.env_method("action_masks", indices=[3, 1])):
        np.testing.assert_array_equal(g, want)
    assert not all(np.array_equal(v.action_masks()[0], m) for m in v.action_masks()[1:])
    # before: set_attr("num_envs", 7) was taken, and every later step broke
    with pytest.raises(ValueError, match="'num_envs' is set when it is made"):
        v.set_attr("num_envs", 7)
    v.set_attr("note", "mine")
    assert v.get_attr("note") == ["mine"] * 4 and v.num_envs == 4
    # before: a method or property was overwritten (MaskablePPO failed later on calling it, or
    # "property 'decisions' has no setter"), render_mode taken though nothing renders, and a
    # name that is no text failed with "'int' object has no attribute 'startswith'"
    for name, what in (("action_masks", "method"), ("step_wait", "method"),
                       ("decisions", "property")):
        with pytest.raises(ValueError, match=rf"OnoVecEnv.{name} is a {what} of the environment"):
            v.set_attr(name, None)
    with pytest.raises(ValueError, match=r"OnoVecEnv\.render_mode stays None: it renders no "
                                         "images"):
        v.set_attr("render_mode", "human")
    for call in (lambda: v.set_attr(123, 1), lambda: v.get_attr(123), lambda: v.get_attr(None)):
        with pytest.raises(ValueError, match=r"attr_name=.*allowed: an attribute's name, a str"):
            call()
    assert v.action_masks().shape == (4, v.action_space.n) and v.render_mode is None
