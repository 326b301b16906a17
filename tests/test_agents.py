"""The rule-based baselines: legal and sensible in every preset, deterministic given the
generator, and each strategy's own idea visible in a position built for it."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import game_at

from ono_env import VecGame, action_id, action_name
from ono_env.agents import ColorControlAgent, DefensiveAgent, GreedyAgent, RandomAgent, make_agent
from ono_env.arena import run_arena
from ono_env.rules import PRESETS, RuleSet

BASELINES = ["greedy", "color", "defensive"]


def choice(agent_cls, game, seed=0):
    """The agent's action (name) for game 0's acting player."""
    agent = agent_cls(game.rules)
    p = int(game.state.current[0])
    obs = game.observe(p)
    mask = game.legal_mask().copy()
    return action_name(int(agent.act(obs, mask, np.random.default_rng(seed))[0]))


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("players", [2, 4])
def test_baselines_play_every_decision_of_every_preset(preset, players):
    # checked_actions inside the arena raises on any illegal or malformed action; a match
    # preset plays ~10 rounds per game, so fewer games cover as many decisions
    match = RuleSet.preset(preset).target_score > 0
    games = (12 if match else 48) if players == 2 else (24 if match else 96)
    res = run_arena(BASELINES + ["random"], preset, players, num_games=games, seed=1, rating=False)
    assert res.records.truncated.sum() == 0
    assert sum(r["wins"] for r in res.agent_rows()) == pytest.approx(len(res.records.length))


def test_agents_are_deterministic_given_the_generator():
    rules = RuleSet.preset("classic", num_players=3, target_score=0)   # single rounds
    res_a = run_arena(BASELINES, rules, num_games=24, seed=5, rating=False)
    res_b = run_arena(BASELINES, rules, num_games=24, seed=5, rating=False)
    assert np.array_equal(res_a.records.wins, res_b.records.wins)
    assert np.array_equal(res_a.records.length, res_b.records.length)
    res_c = run_arena(BASELINES, rules, num_games=24, seed=6, rating=False)
    assert not np.array_equal(res_a.records.length, res_c.records.length)


def test_agents_refuse_observations_of_other_rules():
    agent = make_agent("greedy", RuleSet.preset("basic", num_players=2))
    with pytest.raises(ValueError, match="reads \\(B, 241\\) for 2-player 'basic' rules"):
        agent.act(np.zeros((1, 245), np.float32), np.ones((1, 85), bool), np.random.default_rng())


BASIC2 = RuleSet.preset("basic", num_players=2)
CLASSIC2 = RuleSet.preset("classic", num_players=2)


@pytest.mark.parametrize("cls", [GreedyAgent, ColorControlAgent, DefensiveAgent])
def test_everyone_calls_ono_before_playing_down_to_one_card(cls):
    g = game_at(CLASSIC2, [["R5", "R7"], ["B1", "B2", "B3"]], ["R2"])
    assert choice(cls, g) == "call"


@pytest.mark.parametrize("cls", [GreedyAgent, ColorControlAgent, DefensiveAgent])
def test_everyone_catches_an_uncalled_last_card_and_never_a_called_one(cls):
    g = game_at(CLASSIC2, [["R5", "R7", "G1"], ["B1"]], ["R2"], exposed=1, previous_player=1,
                turn_fresh=True)
    assert choice(cls, g) == "catch"
    ono = RuleSet.preset("ono", num_players=2)  # false catches cost 4 cards there
    g = game_at(ono, [["R5", "R7", "G1"], ["B1"]], ["R2"], previous_player=1, turn_fresh=True,
                called=[False, True])
    assert "catch" in g.legal_action_names(0)
    assert choice(cls, g) != "catch"


@pytest.mark.parametrize("cls", [GreedyAgent, ColorControlAgent, DefensiveAgent])
def test_challenge_follows_the_public_estimate(cls):
    # the offender kept 6 cards: it very likely held the colour -> challenge
    big = game_at(CLASSIC2, [["R5", "G7"], ["B1", "B2", "B3", "Y4", "Y5", "G6"]], ["R2", "W+4"],
                  color="B", phase="pending", pending_draw=4, previous_player=1)
    assert choice(cls, big) == "challenge"
    # one card left: most likely an honest last resort -> accept
    small = game_at(CLASSIC2, [["R5", "G7"], ["B1"]], ["R2", "W+4"], color="B", phase="pending",
                    pending_draw=4, previous_player=1, called=[False, True])
    assert choice(cls, small) == "accept"


@pytest.mark.parametrize("cls", [GreedyAgent, ColorControlAgent, DefensiveAgent])
def test_stack_when_allowed(cls):
    st = RuleSet.preset("stacking", num_players=2)
    g = game_at(st, [["R5", "G+2", "B1"], ["B2", "B3", "Y4"]], ["R+2"], phase="pending",
                pending_draw=2, previous_player=1)
    assert choice(cls, g) == "play G+2"


@pytest.mark.parametrize("cls", [GreedyAgent, ColorControlAgent, DefensiveAgent])
def test_name_the_strongest_colour_and_swap_with_the_shortest_hand(cls):
    g = game_at(BASIC2, [["B1", "B5", "B7", "R2", "W"], ["Y1", "Y2", "Y3"]], ["G2"])
    assert choice(cls, g) in ("play R2", "play W B")     # a wild names blue, never R/Y/G
    g = game_at(BASIC2, [["B1", "B5", "B7", "R4", "W"], ["Y1", "Y2", "Y3"]], ["G2"])
    assert choice(cls, g) == "play W B"
    g = game_at(BASIC2, [["Y1", "G5", "G7", "G2"], ["Y1", "Y2", "Y3"]], ["W"], color=None,
                phase="color", color_then_play=True)
    assert choice(cls, g) == "color G"
    u18 = RuleSet.preset("uno2018", num_players=4, wild_customizable="swap_hands")
    g = game_at(u18, [["R1", "R2"], ["B1", "B2", "B3"], ["G1"], ["Y1", "Y2"]], ["WC"], color=None,
                phase="target")
    assert choice(cls, g) == "target 2"  # seat 2, two to the left, holds one card


def test_greedy_sheds_points_and_saves_wilds():
    g = game_at(BASIC2, [["R1", "R9", "RS", "W"], ["B1", "B2"]], ["R2"])
    assert choice(GreedyAgent, g) == "play RS"
    g = game_at(BASIC2, [["R1", "R9", "W", "W+4", "B4"], ["B1", "B2"]], ["R2"])
    assert choice(GreedyAgent, g) == "play R9"


def test_color_control_keeps_its_strongest_colour():
    # R4 switches to blue (three blue cards left), R7 keeps red (one red left)
    g = game_at(BASIC2, [["R7", "R1", "B4", "B5", "B6", "B8"], ["G1", "G2", "G3"]], ["R4"])
    assert choice(ColorControlAgent, g) == "play B4"
    assert choice(GreedyAgent, g) == "play R7"


def test_defensive_saves_attacks_until_the_next_player_is_close():
    hand = ["R+2", "R3", "RS", "Y5"]
    calm = game_at(RuleSet.preset("basic", num_players=3),
                   [hand, ["B1", "B2", "B3", "B4"], ["G1", "G2", "G3"]], ["R9"])
    assert choice(DefensiveAgent, calm) == "play R3"
    close = game_at(RuleSet.preset("basic", num_players=3), [hand, ["B1", "B2"], ["G1", "G2", "G3"]],
                    ["R9"])
    assert choice(DefensiveAgent, close) == "play R+2"


def test_honest_agents_do_not_bluff_a_wild_draw_four():
    g = game_at(CLASSIC2, [["W+4", "G1", "B2"], ["Y1", "Y2", "Y3"]], ["G2"])
    assert "play W+4 R" in g.legal_action_names(0)   # a bluff is legal under challenge rules
    for cls in (GreedyAgent, ColorControlAgent, DefensiveAgent):
        assert choice(cls, g) in ("play G1", "play B2")


def test_unknown_agent_names_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown agent 'genius': known agents are .*greedy.*"
                                         r"or the path of a saved model"):
        make_agent("genius", "basic")
    assert action_id("play R5") == 5


@pytest.mark.parametrize("spec, hint", [
    ("ppo_any", "(did you mean 'ppo-any'?)"), ("PPO-ANY", "(did you mean 'ppo-any'?)"),
    ("gredy", "(did you mean 'greedy'?)"), ("pimcc:8", "(did you mean 'pimc:8'?)"),
    ("ppo-any:4", "('ppo-any' takes no ':'; only the search agents take name:N"),
    # before: 'pimc' (the budget dropped), and no hint for a model file's suffix in capitals
    ("PIMC:8", "(did you mean 'pimc:8'?)"), ("pimc_ppo:30ms", "(did you mean 'pimc-ppo:30ms'?)"),
    ("x.SAFETENSORS", "(a model file's name ends in .safetensors or .zip, in lower case)"),
])
def test_a_near_miss_agent_name_says_what_it_probably_meant(spec, hint):
    with pytest.raises(ValueError) as err:
        make_agent(spec, "basic")
    assert str(err.value).startswith(f"unknown agent {spec!r} {hint}")
    assert "known agents are" in str(err.value)


def test_a_name_that_is_a_file_or_folder_here_says_so(tmp_path, monkeypatch):
    """A name without a '/' or a model file's extension is an agent's name; where a file or
    folder of that name is here, the refusal says so (before: "unknown agent" alone)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "od2").mkdir()
    (tmp_path / "mine").write_bytes(b"")
    for spec, hint in (("od2", "(a folder of that name is here: a model file is needed, not a "
                               "folder)"),
                       ("mine", "(a file of that name is here: a model file is named by a path "
                                "with a '/' or by its extension, .safetensors or .zip, as "
                                "'./mine')")):
        with pytest.raises(ValueError) as err:
            make_agent(spec, "basic")
        assert str(err.value).startswith(f"unknown agent {spec!r} {hint}: known agents are")


def test_a_learned_agent_object_is_checked_against_the_rules_it_is_given():
    # before: an object loaded for one table played at another (its name was refused there)
    from ono_env.envs.gym_env import OnoEnv

    specialist = make_agent("ppo-basic-2p", RuleSet.preset("basic", num_players=2))
    ono = RuleSet.preset("ono", num_players=2)
    for play in (lambda: make_agent(specialist, ono),
                 lambda: OnoEnv(ono, opponents=specialist),
                 lambda: run_arena([specialist, "random"], ono, 2, num_games=2)):
        with pytest.raises(ValueError, match="'ppo-basic-2p': trained for 'basic' rules, which "
                                             "differ from the 'ono' rules asked for"):
            play()
    assert make_agent(specialist) is specialist   # no rules given: returned as it is
    generalist = make_agent("ppo-any", "basic")   # version 2: any rules
    assert make_agent(generalist, ono) is generalist


def test_a_search_agents_learned_policy_is_checked_against_the_rules_it_is_given():
    """Before: a pimc-ppo object whose prior was ppo-basic-2p, made for basic, played a table
    of other rules (the arena, the environments' opponents) with that specialist; and a rule
    set made from a preset was named as the preset itself in the refusal."""
    from ono_env.envs.gym_env import OnoEnv

    basic = RuleSet.preset("basic", num_players=2)
    stacking = RuleSet.preset("basic", num_players=2, stacking=True)
    for spec in ("pimc-ppo:2", "pimc-ppo-playout:2"):
        search = make_agent(spec, basic)
        for play in (lambda s=search: make_agent(s, stacking),
                     lambda s=search: OnoEnv(stacking, opponents=s),
                     lambda s=search: run_arena([s, "random"], stacking, 2, num_games=2)):
            with pytest.raises(ValueError, match=r"^SearchAgent\(.*\): its learned policy "
                                                 r"'ppo-basic-2p': trained for 'basic' rules, "
                                                 r"which differ from custom rules based on "
                                                 r"'basic' asked for: stacking=False \(asked "
                                                 r"True\); allowed: .*; or ppo-any"):
                play()
        assert make_agent(search, basic) is search
    anywhere = make_agent("pimc-ppo:2", stacking)   # made for these rules: ppo-any guides it
    assert make_agent(anywhere, stacking) is anywhere
    # a search (as a rule-based agent) is made for its rules: refused for others at once
    # (before: taken, and refused once the games began, or played under the wrong rules)
    for agent in (anywhere, make_agent("greedy", stacking)):
        with pytest.raises(ValueError, match=r"was made for 2-player 'basic' rules, not 2-player "
                                             r"'ono' \(.*\); allowed: an agent made for the "
                                             r"table's rules"):
            make_agent(agent, RuleSet.preset("ono", num_players=2))
    # a prior made for other rules, rule-based or learned, is refused as the search is made
    # and as it is given (before: taken, and played at the search's table)
    from ono_env.agents.learned import LearnedAgent
    from ono_env.agents.search import SearchAgent
    for prior, said in ((make_agent("greedy", basic), r"^the prior GreedyAgent\(.*\) was made "
                                                      r"for 2-player 'basic' rules, not 2-player "
                                                      r"'basic' \(stacking differ\)"),
                        (make_agent("ppo-basic-2p", basic), r"^the prior 'ppo-basic-2p': trained "
                                                            r"for 'basic' rules, which differ")):
        with pytest.raises(ValueError, match=said):
            SearchAgent(stacking, 2, prior=prior, margin=0.1)
    search = SearchAgent(basic, 2, prior=make_agent("greedy", basic), margin=0.1)
    search.rules = stacking   # a search changed by hand: make_agent still reads its prior
    with pytest.raises(ValueError, match=r"^SearchAgent\(.*\): its prior GreedyAgent"):
        make_agent(search, stacking)
    # a learned agent without metadata: a version-1 network by the rules it was made for
    bare = LearnedAgent(make_agent("ppo-basic-2p", basic).net, basic, "mine")
    with pytest.raises(ValueError, match=r"^LearnedAgent\('mine'.*\) was made for 2-player "
                                         r"'basic' rules, not 2-player 'basic' \(stacking"):
        run_arena([bare, "random"], stacking, 2, num_games=2)
    assert make_agent(bare, basic) is bare
    generalist = make_agent("ppo-any", basic)   # version 2, without metadata: any table
    assert make_agent(LearnedAgent(generalist.net, basic, "any"), stacking).name == "any"
    # metadata given by hand is checked as a model file's (before: a KeyError)
    for meta, said in (({"foo": 1}, "not an ono_env model"),
                       ({**make_agent("ppo-basic-2p", basic).meta, "observation_version": "1"},
                        "metadata 'observation_version' is '1'")):
        with pytest.raises(ValueError, match=rf"^meta of 'm': .*{said}"):
            LearnedAgent(bare.net, basic, "m", meta=meta)


class _Own:
    """An agent of the user's own, its attributes set by each case."""

    def act(self, obs, mask, rng):
        return mask.argmax(axis=1)


@pytest.mark.parametrize("attr, value, message", [
    # before: int() read "2" and 2.9 as 2 and True as 1; bool() read "no" as cheating
    ("observation_version", "2", "observation_version = '2' (str); allowed: 1 or 2"),
    ("observation_version", 2.9, "observation_version = 2.9 (float)"),
    ("observation_version", True, "observation_version = True (bool)"),
    ("observation_version", 3, "observation_version = 3 (int)"),
    ("cheating", "no", "cheating = 'no' (str); allowed: True or False"),
    ("cheating", 1, "cheating = 1 (int)"),
    # and the others (before: bool() read "no" as a game agent, and as one reading no obs)
    ("uses_game", "no", "uses_game = 'no' (str); allowed: True or False"),
    ("uses_observation", "no", "uses_observation = 'no' (str); allowed: True or False"),
])
def test_an_agents_declared_attributes_are_read_strictly(attr, value, message):
    agent = _Own()
    setattr(agent, attr, value)
    with pytest.raises(ValueError, match=re.escape(f"agent '_Own': {message}")):
        run_arena([agent, "random"], "basic", 2, num_games=2, rating=False)
    agent = _Own()
    agent.observation_version, agent.cheating = np.int64(2), np.bool_(False)
    agent.uses_game, agent.uses_observation = np.bool_(False), True
    from ono_env.agents.learned import load_agent, shipped_models
    with pytest.raises(ValueError, match=r"^name = 5 \(int\); allowed: None or text"):
        load_agent(shipped_models()["ppo-basic-2p"], name=5)
    assert run_arena([agent, "random"], "basic", 2, num_games=2, rating=False).agent_rows()


def test_a_network_whose_weights_are_not_finite_is_named_as_the_cause():
    """A diverged run's weights give logits that are not finite from observations in range:
    the error names the network, not the observations."""
    from ono_env.agents.learned import LearnedAgent, PolicyNet
    rules = RuleSet.preset("basic", num_players=2)
    agent = make_agent("ppo-basic-2p", rules)
    layers = [(w.copy(), b) for w, b in agent.net.layers]
    layers[0][0][0, 0] = np.nan
    broken = LearnedAgent(PolicyNet(agent.net.scale, layers, agent.net.activation), rules,
                          "broken")
    game = VecGame(rules, 3, seed=0)
    obs, mask = game.observe(game.current_player), game.legal_mask()
    with pytest.raises(ValueError, match=r"^LearnedAgent\('broken'.*logits that are not "
                                         r"finite, from its network, whose weights are not "
                                         r"all finite$"):
        broken.act(obs, mask, np.random.default_rng(0))
    # finite weights that overflow where the load's extreme observations did not reach
    # (before: also asked "are its weights finite?")
    layers = [(w.copy(), b) for w, b in agent.net.layers]
    layers[-1][0][:] = 3e38
    huge = LearnedAgent(PolicyNet(agent.net.scale, layers, agent.net.activation), rules, "huge")
    with pytest.raises(ValueError, match=r"^LearnedAgent\('huge'.*logits that are not finite, "
                                         r"from its network: finite weights whose products "
                                         r"overflow on these observations \(a damaged model\)$"):
        huge.act(obs, mask, np.random.default_rng(0))


def test_random_reads_no_observation_but_needs_a_row_for_each_mask_row():
    game = VecGame("basic", 3, seed=0)
    obs, mask, agent = game.observe(np.zeros(3, np.int64)), game.legal_mask().copy(), RandomAgent()
    rng = np.random.default_rng(0)
    assert mask[np.arange(3), agent.act(np.full_like(obs, np.nan), mask, rng)].all()   # unread
    state = rng.bit_generator.state
    # before: one action for a mask of one row beside three observations, any obs at all
    # the mask blamed where both are tables, as the other agents blame it
    with pytest.raises(ValueError, match=r"^RandomAgent\(\): mask is bool \(1, 85\); allowed: "
                                         r"a \(3, 85\) array .*a row for each observation$"):
        agent.act(obs, mask[:1], rng)
    with pytest.raises(ValueError, match=r"^RandomAgent\(\): observations are float32 \(\d+,\); "
                                         r"allowed: a \(B, D\) array$"):
        agent.act(obs[0], mask[:1], rng)
    with pytest.raises(ValueError, match=r"^RandomAgent\(\): rng is a NoneType"):
        agent.act(obs, mask, None)
    with pytest.raises(ValueError, match=r"observations are list; allowed: a \(B, D\) array"):
        agent.act(list(obs), mask, rng)
    # the observation first, and each refusal named as this agent's, by its kind and shape
    # (before: a 1-d obs beside a 1-d mask blamed the mask, "(not C-contiguous)
    # (read-only)" named as though they were the fault, and no "RandomAgent():")
    with pytest.raises(ValueError, match=r"^RandomAgent\(\): observations are float32 \(\d+,\)"):
        agent.act(obs[0], mask[0], rng)
    read_only = mask.copy()
    read_only.flags.writeable = False
    for bad, what in ((read_only[:, :80], "bool \\(3, 80\\)"),
                      (mask.astype(np.float32), "float32 \\(3, 85\\)")):
        with pytest.raises(ValueError, match=rf"^RandomAgent\(\): mask is {what}; allowed: a "
                                             rf"\(B, 85\) array of bools or integers 0/1$"):
            agent.act(obs, bad, rng)
    assert rng.bit_generator.state == state   # refused before any draw


def test_a_masked_array_of_actions_is_refused_and_a_version_2_observation_is_named():
    """Before: an agent's masked array of actions was played, masked entries and all; a
    rule-based agent given a version-2 observation named the shapes alone."""
    from ono_env.agents.base import check_actions

    game = VecGame("basic", 2, seed=0, num_players=2)
    mask = game.legal_mask()
    legal = np.array([np.flatnonzero(m)[0] for m in mask])
    with pytest.raises(ValueError, match=r"^RandomAgent\(\)\.act returned a masked array; "
                                         r"expected \(2,\) integers in a plain array"):
        check_actions(RandomAgent(), np.ma.array(legal, mask=[True, True]), mask)
    assert list(check_actions(RandomAgent(), legal, mask)) == list(legal)
    greedy = make_agent("greedy", game.rules)
    obs2 = game.observe(np.zeros(2, np.int64), version=2)
    with pytest.raises(ValueError, match=r"that is a version-2 observation's length; this agent "
                                         r"reads version 1, observation_version=1"):
        greedy.act(obs2, mask.copy(), np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"rules$"):   # another length: the shapes alone
        greedy.act(obs2[:, :100], mask.copy(), np.random.default_rng(0))


def test_logits_checks_its_observations_as_act_does():
    game = VecGame("basic", 3, seed=0, num_players=2)
    obs = game.observe(np.zeros(3, np.int64))
    agent = make_agent("ppo-basic-2p", RuleSet.preset("basic", num_players=2))
    assert agent.logits(obs).shape == (3, 85)
    # before: NumPy's broadcast error, a list taken, a NaN blamed on the weights
    for bad, message in ((obs[:, :5], "observations of shape (3, 5); expected (B, "),
                         (list(obs), "observations are list; allowed: a (B, D) NumPy array"),
                         (np.where(obs == 0, np.nan, obs), "not finite (NaN or inf)")):
        with pytest.raises(ValueError, match=re.escape(message)):
            agent.logits(bad)


@pytest.mark.parametrize("spec", ["ppo-any", "greedy"])
def test_act_refuses_observations_that_are_not_finite_floats_and_a_missing_generator(spec):
    # before: bool and object observations were read as numbers, NaN played on, and a list or
    # rng=None gave an AttributeError
    version = 2 if spec == "ppo-any" else 1
    game = VecGame("basic", 3, seed=0, observation_version=version)
    obs, mask = game.observe(np.zeros(3, np.int64)), game.legal_mask().copy()
    agent, rng = make_agent(spec, "basic"), np.random.default_rng(0)
    assert mask[np.arange(3), agent.act(obs, mask, rng)].all()
    for bad, message in ((obs.astype(bool), "observations are bool (3, "),
                         (obs.astype(object), "observations are object"),
                         (list(obs), "observations are list; allowed: a (B, D) NumPy array "
                                     "of floats"),
                         (np.where(obs == 0, np.nan, obs), "not finite (NaN or inf)"),
                         # a subclass (before: a masked NaN passed the finite check, and the
                         # network was blamed)
                         (np.ma.masked_invalid(np.where(obs == 0, np.nan, obs)),
                          "observations are MaskedArray; allowed")):
        with pytest.raises(ValueError, match=re.escape(message)):
            agent.act(bad, mask, rng)
    for rng_bad in (None, np.random.RandomState(0)):
        with pytest.raises(ValueError, match=r"rng is a (NoneType|RandomState); allowed: a "
                                             r"numpy.random.Generator"):
            agent.act(obs, mask, rng_bad)
    if spec == "ppo-any":   # finite, but far past what a game writes: the products overflow
        # (before: the first legal action played, NaN probabilities, NumPy's warnings)
        huge = np.full_like(obs, 3e38)
        for call in (lambda: agent.act(huge, mask, rng), lambda: agent.explain(huge, mask)):
            with pytest.raises(ValueError, match=r"logits that are not finite, from "
                                                 r"observations far outside those a game "
                                                 r"writes \(the largest in size 3e\+38;"):
                call()


def test_a_class_spec_given_as_a_path_or_with_py_says_how_it_is_named(tmp_path, monkeypatch):
    """Before: ``./mine:First`` was a model file with no word of module:Class, and
    ``mine.py:First`` an import error with no word of the .py."""
    from ono_env.agents import make_agent

    (tmp_path / "spec_mine.py").write_text("class First:\n    def act(self, obs, mask, rng):\n"
                                           "        return mask.argmax(axis=1)\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"no such file \(a module:Class names a module on the "
                                         r"Python path, not a file: 'spec_mine:First'"):
        make_agent("./spec_mine:First", "basic")
    from ono_env.agents.registry import agent_from_class
    with pytest.raises(ValueError, match=r"\(a module is named without .py: spec_mine:First\)$"):
        agent_from_class("spec_mine.py:First", "basic")
