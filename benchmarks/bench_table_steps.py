"""What one learner step costs in the games of a mixture, table by table, against the
default run's single table: the fixed cost of a ``LearnerBatch.step`` call and the
opponents' decisions it carries.

    python benchmarks/bench_table_steps.py --out docs/results/table-steps
    python benchmarks/bench_table_steps.py --games 34 --steps 150 --rounds 5
    python benchmarks/bench_table_steps.py --vs ../old-tree --runs 3 --out docs/results/table-steps

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
decision (the learner's and the opponents'), for every table, and for the 30 together (their
calls' mean, their learner steps and decisions summed).

``--vs PATH`` compares two packages: the one installed here and the one in ``PATH``, a
source tree laid out as installed (``PATH/ono_env/`` with ``agents``, ``train`` and
``configs`` inside it, as ``bench_web_load.py --server-path`` takes). The script runs itself
``--runs`` times for each, alternating (A B A B ...), each run a process of its own, and
reports each table's medians over the runs, side by side with their ratio, and where each
run imported its driver from. The decisions per learner step must be the same on both sides
(the same seeds play the same games where the engine is unchanged); the report says whether
they are.

Nothing else should run on the machine meanwhile. Writes ``table_steps.md`` and
``table_steps.json`` into ``--out`` (when given) and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_args import (
    checked_rounds,
    cpu_name,
    machine,
    optional_out,
    out_file,
    out_folder,
    parser,
    path_arg,
    refuse_unused,
    run_script,
    within,
)
from bench_train import PRESET_NAMES

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
        label = f"{preset}-{n}p" if version == 2 else DEFAULT
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


TOGETHER = "the 30 tables (their mean call)"
DEFAULT = "default (basic-2p, v1, 1,024 games)"
METRICS = ("us_per_call", "us_per_learner_step", "decisions_per_learner_step", "us_per_decision")


def measure(games: int, steps: int, rounds: int, seed: int) -> dict[str, dict[str, float]]:
    """Every table's medians over ``rounds`` rounds (:data:`METRICS`), the 30 tables'
    together first (a call's mean over them), then the default run's table, then each."""
    made = tables(games, seed)
    labels = list(made)
    mixture, default = [made[k] for k in labels[:-1]], [made[labels[-1]]]
    rng = np.random.default_rng(seed)
    step_all(mixture, 10, rng)   # warm-up: numba's cache, the agents' first calls
    step_all(default, 10, rng)
    rows: dict[str, list[list[float]]] = {k: [] for k in labels}
    for _ in range(rounds):
        for k, s in zip(labels, step_all(mixture, steps, rng) + step_all(default, steps, rng)):
            rows[k].append(s)
    n_mix = len(labels) - 1
    together = [[sum(rows[k][r][i] for k in labels[:-1]) for i in range(3)] for r in range(rounds)]
    out = {}
    for name, runs, calls in ([(TOGETHER, together, steps * n_mix), (DEFAULT, rows[labels[-1]], steps)]
                              + [(k, rows[k], steps) for k in labels[:-1]]):
        out[name] = {"us_per_call": statistics.median(1e6 * t / calls for t, _, _ in runs),
                     "us_per_learner_step": statistics.median(1e6 * t / n for t, n, _ in runs),
                     "decisions_per_learner_step": statistics.median(d / n for _, n, d in runs),
                     "us_per_decision": statistics.median(1e6 * t / d for t, _, d in runs)}
    return out


def imported() -> dict[str, str]:
    """Where this process imported the package and the modules the speed work changed."""
    import ono_env
    import ono_env.agents.driver
    import ono_env.envs.opponents
    return {m.__name__: str(Path(m.__file__ or "?").absolute())   # as found, links kept
            for m in (ono_env, ono_env.agents.driver, ono_env.envs.opponents)}


def compare(args: argparse.Namespace) -> tuple[str, dict]:
    """``--vs``: this package and the one in ``args.vs``, ``args.runs`` processes each,
    alternating; the report and its data."""
    own = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    sides = {"this": own, "vs": {**own, "PYTHONPATH": str(Path(args.vs).resolve())}}
    got: dict[str, list[dict]] = {"this": [], "vs": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.runs):
            for side, env in sides.items():
                out = Path(tmp) / f"{side}-{r}.json"
                cmd = [sys.executable, str(Path(__file__).resolve()), "--games", str(args.games),
                       "--steps", str(args.steps), "--rounds", str(args.rounds),
                       "--seed", str(args.seed), "--json-out", str(out)]
                done = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"bench_table_steps: the {side} run {r + 1} failed "
                             f"(rc {done.returncode}): {done.stderr.strip()[-600:]}")
                got[side].append(json.loads(out.read_text()))
                print(f"run {r + 1} {side}: {got[side][-1]['results'][TOGETHER]['us_per_call']:,.0f} "
                      f"us per call", file=sys.stderr)
    med = {side: {name: {m: statistics.median(run["results"][name][m] for run in runs)
                         for m in METRICS} for name in runs[0]["results"]}
           for side, runs in got.items()}
    same = all(a["results"][n]["decisions_per_learner_step"]
               == b["results"][n]["decisions_per_learner_step"]
               for a in got["this"] for b in got["vs"] for n in a["results"])
    lines = [f"{args.games} games at each of the 30 tables, {args.steps} calls of each table per "
             f"round, medians of {args.rounds} rounds in each run, then the median over "
             f"{args.runs} runs of each package, alternating (this, then --vs); {machine()}.", "",
             "Where each side imported its driver: this "
             f"`{got['this'][0]['imported']['ono_env.agents.driver']}`, --vs "
             f"`{got['vs'][0]['imported']['ono_env.agents.driver']}`. The decisions per learner "
             f"step are {'the same in every run of both' if same else 'NOT the same'} (the same "
             f"games).", "",
             "The 30 tables' mean call, each run (us): this "
             + ", ".join(f"{run['results'][TOGETHER]['us_per_call']:,.0f}" for run in got["this"])
             + "; --vs " + ", ".join(f"{run['results'][TOGETHER]['us_per_call']:,.0f}"
                                     for run in got["vs"]) + ".", "",
             "| table | us per call, this | us per call, --vs | this / --vs | us per learner step, "
             "this | us per learner step, --vs | decisions per learner step |",
             "|---|---|---|---|---|---|---|"]
    for name, row in med["this"].items():
        other = med["vs"][name]
        lines.append(f"| {name} | {row['us_per_call']:,.0f} | {other['us_per_call']:,.0f} | "
                     f"{row['us_per_call'] / other['us_per_call']:.2f} | "
                     f"{row['us_per_learner_step']:.2f} | {other['us_per_learner_step']:.2f} | "
                     f"{row['decisions_per_learner_step']:.2f} |")
    return "\n".join(lines) + "\n", {"runs": got, "medians": med, "same_decisions": same}


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--games", type=int, default=34, help="games at each of the 30 tables")
    ap.add_argument("--steps", type=int, default=150, help="calls of each table per round")
    ap.add_argument("--rounds", type=int, default=5, help="rounds (the report gives medians)")
    ap.add_argument("--seed", type=int, default=0,
                    help="seed of the deals and the learner's moves (default 0)")
    ap.add_argument("--vs", type=path_arg, default=None,
                    help="a source tree laid out as installed, whose package to compare with")
    ap.add_argument("--runs", type=int, default=None,
                    help="with --vs only: runs of each package, alternating (default 3)")
    ap.add_argument("--out", type=path_arg, default=None,
                    help=optional_out("table_steps.md and table_steps.json"))
    ap.add_argument("--json-out", type=path_arg, default=None, help=argparse.SUPPRESS)  # --vs's runs
    args = ap.parse_args()
    # all 30 tables' games are held at once: together at most the games of one VecGame of the
    # library (MAX_GAMES, about 1 GB of state), not 30 times that
    within("bench_table_steps", "--games", args.games, 1,
           MAX_GAMES // (len(PRESET_NAMES) * len(PLAYERS)))
    within("bench_table_steps", "--steps", args.steps, 1, 1_000_000)
    checked_rounds("bench_table_steps", args.rounds)
    within("bench_table_steps", "--seed", args.seed, 0, 2**31)
    runs_given, args.runs = args.runs is not None, 3 if args.runs is None else args.runs
    within("bench_table_steps", "--runs", args.runs, 1, 100)
    if runs_given and args.vs is None:   # it would be ignored: one run, no sides
        sys.exit(f"bench_table_steps: --runs {args.runs} without --vs; allowed: --runs with "
                 f"--vs (the runs of each package it compares), or no --runs")
    if args.vs is not None and not (Path(args.vs) / "ono_env" / "__init__.py").is_file():
        sys.exit(f"bench_table_steps: --vs {str(args.vs)!r}; allowed: a folder holding a package "
                 f"ono_env/ laid out as installed")
    if args.json_out is not None:   # --vs's own sub-runs: they write this file alone
        refuse_unused("bench_table_steps", ("--out", "--vs", "--runs"),
                      "--json-out writes one run's file alone")
    if args.out:
        out_folder(args.out, "bench_table_steps", writes=("table_steps.md", "table_steps.json"))

    if args.json_out is not None:   # one run of --vs's comparison (a file never replaced)
        out_file(args.json_out, "bench_table_steps", "--json-out").write_text(json.dumps(
            {"results": measure(args.games, args.steps, args.rounds, args.seed),
             "imported": imported()}, indent=2) + "\n")
        return
    if args.vs is not None:
        text, data = compare(args)
    else:
        data = {"results": measure(args.games, args.steps, args.rounds, args.seed),
                "imported": imported()}
        text = "\n".join(
            [f"{args.games} games at each of the 30 tables, {args.steps} calls of each table per "
             f"round, medians of {args.rounds} rounds; {machine()}; the driver imported from "
             f"`{data['imported']['ono_env.agents.driver']}`.", "",
             "| table | us per call | us per learner step | decisions per learner step | us per "
             "decision |", "|---|---|---|---|---|"]
            + [f"| {name} | {r['us_per_call']:,.0f} | {r['us_per_learner_step']:.2f} | "
               f"{r['decisions_per_learner_step']:.2f} | {r['us_per_decision']:.2f} |"
               for name, r in data["results"].items()]) + "\n"
    print(text)
    if args.out:
        (args.out / "table_steps.md").write_text(
            "# The games' cost per learner step\n\n`python benchmarks/bench_table_steps.py "
            + shlex.join(sys.argv[1:]) + "`\n\n" + text)
        (args.out / "table_steps.json").write_text(json.dumps(
            {"games": args.games, "steps": args.steps, "rounds": args.rounds, "seed": args.seed,
             "runs": args.runs if args.vs else None, "cpu": cpu_name(), **data},
            indent=2) + "\n")


if __name__ == "__main__":
    run_script("bench_table_steps", main)
