"""What observation version 2 is worth: the default run at equal training steps with
version 1, version 2, version 2 without its public-knowledge fields, and version 2 without
those and without its history fields, each then played against ``greedy`` on the same
mirrored deals.

    python benchmarks/bench_observation_worth.py --steps 3000000 --deals 10000 --out docs/results/observation-worth

Per preset (``--presets``, 2 players) and variant, one ``ono-train default`` run
(``total_steps=--steps``, no time limit, no evaluation, ``seed=--seed``, ``torch_threads``
``--threads``); the variants differ only in ``observation_version`` and
``observation_hide``. Every model then plays ``--deals`` mirrored deals against ``greedy``
with the same arena seed, so the deals are the same for every variant and the paired
difference of two variants is taken deal by deal. With ``--jobs N`` the runs train ``N`` at a
time in separate processes (the same runs: each is seeded; their steps/s are then those of
``N`` runs sharing the machine), and the games are played after them. Writes
``results.json`` and ``results.md``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import shlex
import sys
import tempfile
import time

import numpy as np
from bench_args import (
    checked_deals,
    checked_seed,
    distinct,
    out_folder,
    parser,
    path_arg,
    run_script,
    steps_help,
    whole_rollouts,
    within,
)

from ono_env.arena.stats import bounded_mean_interval
from ono_env.checks import write_whole

MAX_JOBS = 64
"""The most runs of --jobs trained at a time (each a process of its own)."""
MAX_THREADS = 1024
"""The most torch threads of --threads (the training config's ``torch_threads``)."""
KNOWLEDGE = ["known_cards", "lacks", "lacks_covered", "unknown"]
HISTORY = ["last_play", "previous_play", "named_color", "drew"]
VARIANTS = {
    "v1": ["observation_version=1"],
    "v2": ["observation_version=2"],
    "v2 without public knowledge": ["observation_version=2",
                                    f"observation_hide=[{', '.join(KNOWLEDGE)}]"],
    "v2 without public knowledge and history": [
        "observation_version=2", f"observation_hide=[{', '.join(KNOWLEDGE + HISTORY)}]"],
}


def run_config(preset: str, extra: list[str], steps: int, seed: int, threads: int,
               run_dir: str):
    """The training config of one run (``ValueError`` naming a bad value)."""
    from ono_env.train.config import load_config

    return load_config("default", [f"rules={preset}", f"total_steps={steps}",
                                   "time_limit_minutes=null", "eval.every=0",
                                   "final_eval.games=0", "progress=false", f"seed={seed}",
                                   f"torch_threads={threads}", f"run_dir={run_dir}", *extra])


def train_one(preset: str, extra: list[str], steps: int, seed: int, threads: int,
              run_dir: str) -> dict:
    from ono_env.train.ppo import train

    cfg = run_config(preset, extra, steps, seed, threads, run_dir)
    t = time.perf_counter()   # the training call (the config and imports before it not counted)
    res = train(cfg)
    return {"model": str(res["model"]), "steps": res["steps"],
            "steps_per_second": res["steps_per_second"],
            "train_seconds": time.perf_counter() - t}


def trained(rows: list[dict], asked: int) -> str:
    """The steps the runs of ``rows`` trained, as the page says them: the budget ``asked``
    (``--steps``) rounded up by the trainer to whole rollouts."""
    steps = sorted({r["steps"] for r in rows})
    said = " or ".join(f"{n:,}" for n in steps) + " steps"
    return said if steps == [asked] else f"{said} (--steps {asked:,} in whole rollouts)"


def play(model: str, preset: str, deals: int, seed: int):
    from ono_env.arena import run_arena

    return run_arena([model, "greedy"], preset, 2, 2 * deals, seed, mirrored=True, rating=False)


def _train_numbered(job: tuple[int, tuple]) -> tuple[int, dict]:
    k, run = job
    return k, train_one(*run)


def train_all(todo: list[tuple[str, str, list[str]]], args: argparse.Namespace,
              tmp: str) -> list[dict]:
    """Every run of ``todo``, ``args.jobs`` at a time in spawned processes, in ``todo``'s
    order; the first run that fails raises its error as it ends (in the order runs end), and
    leaving the pool's block terminates the others, rather than after every other run."""
    jobs = [(k, (preset, extra, args.steps, args.seed, args.threads, f"{tmp}/run-{k}"))
            for k, (preset, _, extra) in enumerate(todo)]
    with mp.get_context("spawn").Pool(min(args.jobs, len(jobs))) as pool:   # no idle process
        done = dict(pool.imap_unordered(_train_numbered, jobs))
    return [done[k] for k in range(len(todo))]


def main() -> None:
    from ono_env.checks import MAX_SEED
    from ono_env.rules import PRESETS

    ap = parser(__doc__)
    ap.add_argument("--presets", default="basic,ono",
                    help=f"the presets, comma-separated, each once, of {', '.join(PRESETS)} "
                         f"(default basic,ono)")
    ap.add_argument("--steps", type=int, default=3_000_000,
                    help=steps_help("training steps of each run", 3_000_000))
    ap.add_argument("--deals", type=int, default=10_000,
                    help="mirrored deals against greedy (default 10,000)")
    ap.add_argument("--seed", type=int, default=0,
                    help=f"the runs' training seed, 0 to {MAX_SEED:,} (default 0)")
    ap.add_argument("--arena-seed", type=int, default=77, help="the deals' seed (default 77)")
    ap.add_argument("--threads", type=int, default=2,
                    help=f"torch threads of each run, 1 to {MAX_THREADS} (default 2)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="runs trained at a time, each in its own process (default 1)")
    ap.add_argument("--out", type=path_arg, required=True,
                    help="folder of results.json and results.md (refused when it holds them)")
    args = ap.parse_args()
    script = "bench_observation_worth"
    presets = args.presets.split(",")
    if not all(p in PRESETS for p in presets):   # the flag named, not the config's field
        bad = next(p for p in presets if p not in PRESETS)
        sys.exit(f"{script}: --presets {args.presets!r}: {bad!r} is not a preset; allowed: "
                 f"{', '.join(PRESETS)}, comma-separated")
    distinct(script, "--presets", presets)
    checked_seed(script, "--seed", args.seed)
    within(script, "--threads", args.threads, 1, MAX_THREADS)
    within(script, "--jobs", args.jobs, 1, MAX_JOBS)
    checked_deals(script, "--deals", args.deals, (2,))
    checked_seed(script, "--arena-seed", args.arena_seed)
    rows = []
    todo = [(preset, name, extra) for preset in presets for name, extra in VARIANTS.items()]
    configs = []
    for preset, name, extra in todo:   # every run's config before any training (--steps
        try:                             # apart: it is checked against their rollouts)
            configs.append(run_config(preset, extra, 1, args.seed, args.threads, "unused"))
        except ValueError as exc:
            sys.exit(f"{script}: {preset}, {name}: {exc}")
    whole_rollouts(script, "--steps", args.steps,
                   max(c.num_envs * c.ppo.n_steps for c in configs))
    out_folder(args.out, "bench_observation_worth", writes=("results.json", "results.md"))
    with tempfile.TemporaryDirectory() as tmp:
        runs: list[dict] = []
        if args.jobs > 1:
            runs = train_all(todo, args, tmp)
        for preset in presets:
            per_deal: dict[str, np.ndarray] = {}
            deal_ids = None
            for name, extra in VARIANTS.items():
                k = len(rows)   # this run's place in todo
                if runs:
                    run = runs[k]
                else:
                    run = train_one(preset, extra, args.steps, args.seed, args.threads,
                                    f"{tmp}/run-{k}")
                t = time.perf_counter()
                ar = play(run["model"], preset, args.deals, args.arena_seed)
                pr = ar.paired(0)
                deals, share, games = ar.per_deal(0)
                if deal_ids is None:
                    deal_ids = deals
                assert np.array_equal(deals, deal_ids)   # the same deals for every variant
                per_deal[name] = share
                row = {"preset": preset, "variant": name, "steps": run["steps"],
                       "steps_per_second": run["steps_per_second"], "rate": pr["rate"],
                       "low": pr["low"], "high": pr["high"], "deals": pr["deals"],
                       "seconds": run["train_seconds"] + time.perf_counter() - t}
                for other in ("v1", "v2"):
                    if other in per_deal and other != name:
                        # the arena's interval for a bounded mean (before: a plain normal
                        # one, of no width where every deal gave the same difference)
                        row[f"minus {other}"] = list(bounded_mean_interval(
                            per_deal[name] - per_deal[other], -1.0, 1.0,
                            games / len(deals)))
                rows.append(row)
                print(f"{preset} {name}: {100 * pr['rate']:.1f}% [{100 * pr['low']:.1f}, "
                      f"{100 * pr['high']:.1f}] vs greedy, {run['steps_per_second']:,.0f} "
                      f"steps/s", file=sys.stderr)
                # whole or not at all, and "complete" false until the last row (before: a
                # run cut short looked like a finished one)
                write_whole(args.out / "results.json", (json.dumps(
                    {"budget_steps": args.steps, "deals": args.deals, "seed": args.seed,
                     "arena_seed": args.arena_seed, "threads": args.threads,
                     "jobs": args.jobs, "complete": len(rows) == len(todo), "rows": rows},
                    indent=1) + "\n").encode(), "results.json")
    lines = ["# What observation version 2 is worth", "",
             f"`python benchmarks/bench_observation_worth.py {shlex.join(sys.argv[1:])}`", "",
             f"The default run (`ono-train default`) at {trained(rows, args.steps)} per "
             f"variant, seed "
             f"{args.seed}, {args.threads} torch threads; each model against `greedy` on the same "
             f"{args.deals:,} mirrored deals (2 players), 95% intervals over deals; the paired "
             f"differences are taken deal by deal.", "",
             "| preset | variant | vs greedy | 95% interval | minus v1 | minus v2 | steps/s |",
             "|---|---|---|---|---|---|---|"]

    def diff(r: dict, k: str) -> str:
        if k not in r:
            return ""
        d = r[k]
        return f"{100 * d[0]:+.1f} [{100 * d[1]:+.1f}, {100 * d[2]:+.1f}]"

    for r in rows:
        lines.append(f"| {r['preset']} | {r['variant']} | {100 * r['rate']:.1f}% | "
                     f"[{100 * r['low']:.1f}, {100 * r['high']:.1f}] | {diff(r, 'minus v1')} | "
                     f"{diff(r, 'minus v2')} | {r['steps_per_second']:,.0f} |")
    text = "\n".join(lines) + "\n"
    (args.out / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    run_script("bench_observation_worth", main)
