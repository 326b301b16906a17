"""The OpenSpiel game's speed: random play through ``python_ono`` beside OpenSpiel's C++
``crazy_eights`` driven from Python the same way (one run, interleaved rounds, medians), and
the time of one ISMCTS decision at a stated budget.

    python benchmarks/bench_openspiel.py [--steps 20000] [--rounds 5] [--simulations 100]

Random play: ``state.apply_action(rng.choice(state.legal_actions()))`` until ``--steps``
decisions, new games as needed; chance nodes of crazy_eights (the deal, draws) are sampled
from ``chance_outcomes()`` and not counted. ISMCTS: OpenSpiel's ``ISMCTSBot`` with a random
rollout evaluator, ``--simulations`` simulations per decision, on ``basic`` at 2 players,
timed over the decisions of one game where it has a choice.
"""

from __future__ import annotations

import json
import statistics
import time

import numpy as np
import pyspiel
from bench_args import checked_rounds, out_file, parser, path_arg, run_script, within

import ono_env.envs.openspiel  # noqa: F401 - registers python_ono

MAX_STEPS = 10_000_000
"""The most random decisions per round and game (``--steps``): a Python loop of some ten
thousand a second, so this bound is already hours (before, any count was taken)."""
MAX_SIMULATIONS = 10_000
"""The most ISMCTS simulations per decision (``--simulations``; 100 by default; before, any
count was taken)."""


def random_steps(game: pyspiel.Game, steps: int, seed: int) -> float:
    """Player decisions per second of random play."""
    rng = np.random.default_rng(seed)
    done = 0
    state = game.new_initial_state()
    t = time.perf_counter()
    while done < steps:
        if state.is_terminal():
            state = game.new_initial_state()
        if state.is_chance_node():
            actions, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(actions, p=probs)))
            continue
        state.apply_action(int(rng.choice(state.legal_actions())))
        done += 1
    return steps / (time.perf_counter() - t)


def ismcts_seconds(simulations: int, seed: int) -> tuple[float, int]:
    """Median seconds of one ISMCTS decision over one game (basic, 2 players), and the
    number of decisions timed: those with a choice (the bot returns a lone legal action at
    once; the rest of the seat's decisions are taken by its first legal action)."""
    from open_spiel.python.algorithms import ismcts, mcts

    game = pyspiel.load_game("python_ono", {"preset": "basic", "players": 2, "seed": seed})
    rs = np.random.RandomState(seed)
    bot = ismcts.ISMCTSBot(game, mcts.RandomRolloutEvaluator(1, rs), uct_c=2.0,
                           max_simulations=simulations, random_state=rs)
    # its worlds drawn from the seeded generator too (the bot's own sampler has no seed:
    # before, every run played another game)
    bot.set_resampler(lambda state, player: state.resample_from_infostate(
        player, pyspiel.UniformProbabilitySampler(int(rs.randint(2**31)), 0.0, 1.0)))
    state, times = game.new_initial_state(), []
    while not state.is_terminal():
        if state.current_player() == 0 and len(state.legal_actions()) > 1:
            t = time.perf_counter()
            action = bot.step(state)
            times.append(time.perf_counter() - t)
        elif state.current_player() == 0:
            action = state.legal_actions()[0]
        else:
            action = int(rs.choice(state.legal_actions()))
        state.apply_action(action)
    return statistics.median(times), len(times)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--steps", type=int, default=20_000,
                    help="random decisions per round and game (default 20,000)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="interleaved rounds (the rates are their medians; default 5)")
    ap.add_argument("--simulations", type=int, default=100,
                    help="ISMCTS simulations per decision, at least 2 (default 100)")
    ap.add_argument("--json", type=path_arg, help="also write the numbers to this file")
    args = ap.parse_args()
    within("bench_openspiel", "--steps", args.steps, 1, MAX_STEPS)
    checked_rounds("bench_openspiel", args.rounds)
    # OpenSpiel's ISMCTS asserts at fewer than 2 simulations (it aborts mid-run)
    within("bench_openspiel", "--simulations", args.simulations, 2, MAX_SIMULATIONS)
    if args.json is not None:
        out_file(args.json, "bench_openspiel", "--json")
    games = {"python_ono basic 2p": pyspiel.load_game("python_ono", {"preset": "basic"}),
             "python_ono classic 2p": pyspiel.load_game("python_ono", {"preset": "classic"}),
             "crazy_eights (C++) 2p": pyspiel.load_game("crazy_eights", {"players": 2})}
    for game in games.values():
        random_steps(game, 500, 0)   # warm-up (the engine's kernels load on first use)
    rates: dict[str, list[float]] = {name: [] for name in games}
    for r in range(args.rounds):
        for name, game in games.items():
            rates[name].append(random_steps(game, args.steps, r))
    out = {name: statistics.median(v) for name, v in rates.items()}
    print(f"random play through pyspiel from Python, player decisions per second, median of "
          f"{args.rounds} interleaved rounds of {args.steps:,}:")
    for name, v in out.items():
        print(f"  {name:24s} {v:10,.0f}/s")
    seconds, n = ismcts_seconds(args.simulations, 0)
    print(f"ISMCTS ({args.simulations} simulations, random rollouts), basic 2p: "
          f"{1000 * seconds:.0f} ms per decision (median of {n} decisions)")
    if args.json is not None:
        with open(args.json, "w") as f:
            json.dump({"random_play_per_second": out, "rounds": args.rounds, "steps": args.steps,
                       "ismcts_simulations": args.simulations,
                       "ismcts_seconds_per_decision": seconds, "ismcts_decisions": n}, f,
                      indent=1)


if __name__ == "__main__":
    run_script("bench_openspiel", main)
