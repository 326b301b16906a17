"""What one learner step costs in the games of a mixture, table by table, against the
default run's single table: the fixed cost of a ``LearnerBatch.step`` call and the
opponents' decisions it carries.

    python benchmarks/bench_table_steps.py --out docs/results/table-steps
    python benchmarks/bench_table_steps.py --games 34 --steps 150 --rounds 5

Builds the 30 tables of ``bench_train.py --mixture`` (every preset at 2-6 players, observation
version 2) with ``--games`` games each (34: the share of each of the 30 tables in the default
run's 1,024 game slots), and one table of 1,024 games as the default run has it (``basic``, 2
players, version 1). Every table's opponents are a pool like the one ``opponents: auto`` gives
it in training: ``greedy`` 2, ``color`` 1, ``defensive`` 2, ``random`` 1 under ``basic``, and
at the mixture's tables each shipped specialist whose table it is, weight 1 (the trainer's own
pool also leaves out a baseline whose games do not finish, which takes a probe of several
seconds per table; these pools are fixed instead). The learner plays uniformly random legal moves.

Each round steps every table ``--steps`` times in turn, as the trainer's rollouts do, then
the default table as many times; the report gives the medians over ``--rounds`` rounds: the
microseconds of one ``step`` call, per learner step (a call over its games) and per
decision (the learner's and the opponents'), for every table and for the 30 together.

Nothing else should run on the machine meanwhile. Writes ``table_steps.md`` and
``table_steps.json`` into ``--out`` (when given) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from bench_args import at_least, at_most, out_folder
from bench_train import PRESET_NAMES, cpu_name

from ono_env.game import MAX_GAMES

PLAYERS = (2, 3, 4, 5, 6)


def pool(rules, specialists: bool) -> dict[str, float]:
    """The opponents of one table (see the module docstring); the default run's table has
    no specialist (its ``opponents: auto`` adds none)."""
    from ono_env.train.ppo import fitting_policies

    out: dict[str, float] = {"greedy": 2, "color": 1, "defensive": 2}
    if rules.name == "basic":
        out["random"] = 1
    if specialists:
        out.update(fitting_policies(rules))
    return out


def tables(games: int, seed: int) -> dict[str, tuple]:
    """Label -> (LearnerBatch, its observation buffer), dealt and ready."""
    from ono_env.envs.learner_batch import LearnerBatch
    from ono_env.rules import resolve_rules

    out = {}
    shapes = [(p, n, 2, games) for p in PRESET_NAMES for n in PLAYERS] + [("basic", 2, 1, 1024)]
    for k, (preset, n, version, count) in enumerate(shapes):
        rules = resolve_rules(preset, num_players=n)
        label = f"{preset}-{n}p" if version == 2 else "default (basic-2p, v1, 1,024 games)"
        batch = LearnerBatch(rules, count, opponents=pool(rules, version == 2), seed=seed + k,
                             observation_version=version, max_decisions=1000)
        first = batch.reset(seed=seed + k)
        out[label] = (batch, np.zeros_like(first))
    return out


def step_all(batches: list[tuple], steps: int, rng: np.random.Generator) -> list[list[float]]:
    """``steps`` calls of every batch in turn: [seconds, learner steps, decisions] of each."""
    sums = [[0.0, 0, 0] for _ in batches]
    for _ in range(steps):
        for (batch, buf), s in zip(batches, sums):
            mask = batch.game.legal_mask()
            actions = (rng.random(mask.shape) * mask).argmax(axis=1)
            d0 = batch.decisions
            t = time.perf_counter()
            batch.step(actions, out=buf)
            s[0] += time.perf_counter() - t
            s[1] += batch.num_envs
            s[2] += batch.decisions - d0
    return sums


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=34, help="games at each of the 30 tables")
    ap.add_argument("--steps", type=int, default=150, help="calls of each table per round")
    ap.add_argument("--rounds", type=int, default=5, help="rounds (the report gives medians)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    at_least("bench_table_steps", "--games", args.games, 1)
    at_most("bench_table_steps", "--games", args.games, MAX_GAMES)
    at_least("bench_table_steps", "--steps", args.steps, 1)
    at_most("bench_table_steps", "--steps", args.steps, 1_000_000)
    at_least("bench_table_steps", "--rounds", args.rounds, 1)
    at_most("bench_table_steps", "--rounds", args.rounds, 1000)
    at_least("bench_table_steps", "--seed", args.seed, 0)
    at_most("bench_table_steps", "--seed", args.seed, 2**31)
    if args.out:
        out_folder(args.out, "bench_table_steps")

    made = tables(args.games, args.seed)
    labels = list(made)
    mixture, default = [made[k] for k in labels[:-1]], [made[labels[-1]]]
    rng = np.random.default_rng(args.seed)
    step_all(mixture, 10, rng)   # warm-up: numba's cache, the agents' first calls
    step_all(default, 10, rng)
    rows: dict[str, list[list[float]]] = {k: [] for k in labels}
    for _ in range(args.rounds):
        for k, s in zip(labels, step_all(mixture, args.steps, rng) + step_all(default, args.steps, rng)):
            rows[k].append(s)

    def line(name: str, runs: list[list[float]], calls: int) -> tuple[str, dict[str, float]]:
        per_call = statistics.median(1e6 * s / calls for s, _, _ in runs)
        per_step = statistics.median(1e6 * s / n for s, n, _ in runs)
        per_dec = statistics.median(1e6 * s / d for s, _, d in runs)
        dec = statistics.median(d / n for _, n, d in runs)
        return (f"| {name} | {per_call:,.0f} | {per_step:.2f} | {dec:.2f} | {per_dec:.2f} |",
                {"us_per_call": per_call, "us_per_learner_step": per_step,
                 "decisions_per_learner_step": dec, "us_per_decision": per_dec})

    together = [[sum(rows[k][r][i] for k in labels[:-1]) for i in range(3)]
                for r in range(args.rounds)]
    table, data = [], {}
    for name, runs, calls in ([("the 30 tables together", together, args.steps * 30),
                               (labels[-1], rows[labels[-1]], args.steps)]
                              + [(k, rows[k], args.steps) for k in labels[:-1]]):
        text, data[name] = line(name, runs, calls)
        table.append(text)
    import ono_env
    head = (f"{args.games} games at each of the 30 tables, {args.steps} calls of each table per "
            f"round, medians of {args.rounds} rounds; {len(os.sched_getaffinity(0))} cores, "
            f"{platform.machine()} ({cpu_name()}), Python {platform.python_version()}, the "
            f"package at {Path(ono_env.__file__).parent}.")
    text = "\n".join([head, "", "| table | us per call | us per learner step | decisions per "
                      "learner step | us per decision |", "|---|---|---|---|---|", *table]) + "\n"
    print(text)
    if args.out:
        (args.out / "table_steps.md").write_text(
            "# The games' cost per learner step\n\n`python benchmarks/bench_table_steps.py "
            + " ".join(sys.argv[1:]) + "`\n\n" + text)
        (args.out / "table_steps.json").write_text(json.dumps(
            {"games": args.games, "steps": args.steps, "rounds": args.rounds, "seed": args.seed,
             "cpu": cpu_name(), "results": data}, indent=2) + "\n")


if __name__ == "__main__":
    main()
