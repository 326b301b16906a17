"""The Ray path's numbers, measured in one run (needs the ``[ray]`` and ``[train]`` extras).

    python benchmarks/bench_ray.py --out docs/results/ray            # everything (~20 min)
    python benchmarks/bench_ray.py --skip-strength --iterations 3    # speed only, printed

1. Training speed on the same config (``configs/train/rllib-basic.yaml``): RLlib PPO with 1 and
   2 env runners (env steps per second over whole iterations: sampling and learning), and
   SB3's ``ono-train`` (``algo: maskable_ppo``) on the same config; the share of an RLlib iteration
   spent in our environment (the env runners' ``env_step_timer`` times the steps per runner,
   over the iteration's time) and in sampling.
2. The distributed arena: games per second in one process, and as Ray tasks on a cluster of
   one node and of two nodes (``ray.cluster_utils.Cluster``, one CPU each) on this machine;
   the results are checked identical.
3. Strength: the same config trained for ``--minutes`` with each trainer, then each final
   policy against the baselines (basic rules, two players), ``--eval-games`` per opponent.

Prints the tables; writes ``bench_ray.json`` and ``bench_ray.md`` into ``--out`` when it is
given (a folder that holds them already is refused: an earlier run's results are kept).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from bench_args import (
    at_least,
    at_most,
    machine,
    out_folder,
    parser,
    path_arg,
    positive_finite,
    refuse_unused,
    run_script,
)

from ono_env.arena import MAX_GAMES
from ono_env.train.config import MAX_STEPS, load_config

CONFIG = "rllib-basic"


def rllib_speed(runners: int, iterations: int, overrides: list[str]) -> dict:
    import ray

    from ono_env.train import rllib as R
    from ono_env.train.run import resolve_auto
    from ono_env.train.run import rules_of as _rules

    cfg = load_config(CONFIG, [f"num_env_runners={runners}", *overrides])
    rules = _rules(cfg)
    cfg, _ = resolve_auto(cfg, rules)   # max_decisions and the opponents' auto, as ono-train's
    import torch
    torch.set_num_threads(int(cfg.torch_threads))
    R.init_ray(None)
    algo = R.algorithm_config(cfg, rules).build_algo()
    try:
        r = algo.train()                     # warm-up: actors up, first compile of torch ops
        s0, t0 = R.env_steps(r), time.perf_counter()
        share_env, share_sample = [], []
        for _ in range(iterations):
            r = algo.train()
            it = float(r["time_this_iter_s"])
            runners_ = r["env_runners"]
            fragment = cfg.ppo.n_steps
            share_env.append(float(runners_["env_step_timer"]) * fragment / it)
            share_sample.append(float(r["timers"]["env_runner_sampling_timer"]) / it)
        steps = R.env_steps(r) - s0
        seconds = time.perf_counter() - t0
    finally:
        algo.stop()
        ray.shutdown()
    return {"env_runners": runners, "steps": steps, "seconds": seconds,
            "steps_per_s": steps / seconds, "env_share": float(np.mean(share_env)),
            "sample_share": float(np.mean(share_sample))}


def sb3_speed(steps: int, overrides: list[str], run_dir: Path) -> dict:
    from ono_env.train.maskable_ppo import train

    cfg = load_config(CONFIG, ["algo=maskable_ppo", f"total_steps={steps}", "eval.every=0",
                               "final_eval.games=0", "progress=false", "self_play.enabled=false",
                               f"run_dir={run_dir}", *overrides])
    t0 = time.perf_counter()
    train(cfg)
    seconds = time.perf_counter() - t0
    return {"steps": steps, "seconds": seconds, "steps_per_s": steps / seconds,
            "note": "whole train() call: setup and learning, no evaluation"}


def arena_speed(games: int) -> dict:
    import ray
    from ray.cluster_utils import Cluster

    from ono_env.arena import run_arena

    agents = ["greedy", "color", "defensive", "random"]
    run_arena(agents[:2], "basic", 2, 64, rating=False)   # compile / warm up
    one = run_arena(agents, "basic", 2, games, seed=0, rating=False)
    out = {"games": games, "agents": agents, "one_process_s": one.seconds}
    node = {"num_cpus": 1, "object_store_memory": 100 * 1024**2}
    for n in (1, 2):
        c = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
        try:
            for _ in range(n - 1):
                c.add_node(**node)
            c.wait_for_nodes()
            ray.init(address=c.address, log_to_driver=False, logging_level="warning")
            run_arena(agents[:2], "basic", 2, 2000, rating=False, ray_address=c.address)  # workers up
            res = run_arena(agents, "basic", 2, games, seed=0, rating=False, ray_address=c.address)
            same = all(np.array_equal(getattr(one.records, f), getattr(res.records, f))
                       for f in ("entrants", "wins", "scores", "length", "truncated"))
            out[f"{n}_nodes_s"] = res.seconds
            out[f"{n}_nodes_identical"] = bool(same)
            out[f"{n}_nodes_games_per_node"] = sorted(res.nodes.values())
        finally:
            ray.shutdown()
            c.shutdown()
    for k in ("one_process", "1_nodes", "2_nodes"):
        out[f"{k}_games_per_s"] = games / out[f"{k}_s"]
    return out


def strength(minutes: float, eval_games: int, root: Path, overrides: list[str]) -> dict:
    from ono_env.train import rllib as R
    from ono_env.train.maskable_ppo import train as train_sb3

    out = {}
    common = [f"time_limit_minutes={minutes}", "total_steps=100000000", "eval.every=0",
              f"final_eval.games={eval_games}", "progress=false", "ppo.learning_rate_end=null",
              *overrides]
    for backend in ("rllib", "sb3"):
        algo = "rllib_ppo" if backend == "rllib" else "maskable_ppo"
        cfg = load_config(CONFIG, [f"algo={algo}", f"run_dir={root / backend}", *common])
        res = R.train(cfg) if backend == "rllib" else train_sb3(cfg)
        steps = res.get("steps") or json.loads((root / backend / "final_eval.json").read_text())["training_steps"]
        out[backend] = {"steps": int(steps), "train_seconds": res["train_seconds"],
                        "final_eval": res["final_eval"]}
    return out


def markdown(res: dict) -> str:
    lines = [f"# Ray benchmark ({res['date']}, {res['machine']})", ""]
    if "speed" in res:
        s = res["speed"]
        lines += [f"## Training speed, `{CONFIG}` ({s['config_note']})", "",
                  "| trainer | env steps/s | share of an iteration in our env.step | in sampling |",
                  "|---|---|---|---|"]
        for r in s["rllib"]:
            lines.append(f"| RLlib PPO, {r['env_runners']} env runner(s) | {r['steps_per_s']:,.0f} | "
                         f"{100 * r['env_share']:.0f}% | {100 * r['sample_share']:.0f}% |")
        lines.append(f"| `ono-train`, `algo: maskable_ppo` (SB3; same config) | {s['sb3']['steps_per_s']:,.0f} | | |")
        lines.append("")
    if "arena" in res:
        a = res["arena"]
        lines += [f"## Distributed arena: {a['games']:,} basic 2-player games, "
                  f"{', '.join(a['agents'])}", "",
                  "| where | seconds | games/s | identical to one process |", "|---|---|---|---|",
                  f"| one process | {a['one_process_s']:.1f} | {a['one_process_games_per_s']:,.0f} | |",
                  f"| Ray, 1 node (1 CPU) | {a['1_nodes_s']:.1f} | {a['1_nodes_games_per_s']:,.0f} | "
                  f"{a['1_nodes_identical']} |",
                  f"| Ray, 2 nodes (1 CPU each) | {a['2_nodes_s']:.1f} | {a['2_nodes_games_per_s']:,.0f} | "
                  f"{a['2_nodes_identical']} (games per node {a['2_nodes_games_per_node']}) |", ""]
    if "strength" in res:
        st = res["strength"]
        opps = [r["opponent"] for r in st["rllib"]["final_eval"]]
        lines += [f"## Strength after {res['minutes']} min of training (basic, 2 players, "
                  f"{res['eval_games']:,} games per opponent)", "",
                  "| backend | steps | " + " | ".join(f"vs {o}" for o in opps) + " |",
                  "|---|---|" + "---|" * len(opps)]
        for backend in ("rllib", "sb3"):
            b = st[backend]
            cells = [f"{100 * r['win_rate']:.1f} [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}]"
                     for r in b["final_eval"]]
            lines.append(f"| {backend} | {b['steps']:,} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--out", type=path_arg, default=None,
                    help="the folder of bench_ray.json and bench_ray.md (default: none written; "
                         "the published results: --out docs/results/ray)")
    ap.add_argument("--iterations", type=int, default=5, help="timed RLlib iterations per setting")
    ap.add_argument("--sb3-steps", type=int, default=8192 * 6,
                    help="part 1: steps of the timed SB3 run (default 49,152)")
    ap.add_argument("--arena-games", type=int, default=60_000,
                    help="part 2: games of each arena setting (default 60,000)")
    ap.add_argument("--minutes", type=float, default=3.0, help="training budget per trainer")
    ap.add_argument("--eval-games", type=int, default=20_000,
                    help="part 3: games per opponent of each final policy (default 20,000)")
    ap.add_argument("--skip-speed", action="store_true", help="skip part 1 (training speed)")
    ap.add_argument("--skip-arena", action="store_true", help="skip part 2 (the arena)")
    ap.add_argument("--skip-strength", action="store_true", help="skip part 3 (strength)")
    args = ap.parse_args()
    for option, value in (("--iterations", args.iterations), ("--sb3-steps", args.sb3_steps),
                          ("--arena-games", args.arena_games), ("--eval-games", args.eval_games)):
        at_least("bench_ray", option, value, 1)
        at_most("bench_ray", option, value, MAX_STEPS if option == "--sb3-steps" else MAX_GAMES)
    positive_finite("bench_ray", "--minutes", args.minutes)
    if args.skip_speed and args.skip_arena and args.skip_strength:
        sys.exit("bench_ray: --skip-speed --skip-arena --skip-strength leave nothing to measure; "
                 "allowed: at most two of them")
    for skip, flag, options in ((args.skip_speed, "--skip-speed", ("--iterations", "--sb3-steps")),
                                (args.skip_arena, "--skip-arena", ("--arena-games",)),
                                (args.skip_strength, "--skip-strength", ("--minutes", "--eval-games"))):
        if skip:
            refuse_unused("bench_ray", options, f"{flag} skips their part")
    from ono_env.train.rllib import require_ray
    try:   # every part runs on Ray; parts 1 and 3 train with SB3 besides (before: a traceback
        require_ray("every part")   # at the first import, after the folders were made)
        if not (args.skip_speed and args.skip_strength):
            import sb3_contrib  # noqa: F401
    except ValueError as exc:
        sys.exit(f"bench_ray: {exc}")
    except ImportError:
        sys.exit("bench_ray: parts 1 and 3 need sb3-contrib, which is not installed: pip "
                 "install 'ono-env[train]' (or --skip-speed --skip-strength)")
    out = None if args.out is None else out_folder(args.out, "bench_ray",
                                                    writes=("bench_ray.json", "bench_ray.md"))
    tmp = tempfile.mkdtemp(prefix="raybench")   # Ray's session files (ray is imported later)
    os.environ.setdefault("RAY_TMPDIR", tmp)
    work = Path(tempfile.mkdtemp(prefix="bench_ray"))
    try:
        measure(args, out, work)
    finally:   # the run folders and Ray's session files, however the run ends (before: left
        for d in (work, tmp):   # by a failure or a Ctrl-C)
            shutil.rmtree(d, ignore_errors=True)


def measure(args: Any, out: Path | None, work: Path) -> None:
    """:func:`main`'s parts, run in the temporary folder ``work``; results into ``out``."""
    res: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                 "machine": machine(),   # as every script's (before: its own, without the CPU's name)
                 "minutes": args.minutes, "eval_games": args.eval_games}
    overrides = ["torch_threads=1"]
    if not args.skip_speed:
        res["speed"] = {"config_note": "num_envs 128 per runner, n_steps 64, 4 epochs, one torch thread",
                        "rllib": [rllib_speed(n, args.iterations, ["progress=false", *overrides])
                                  for n in (1, 2)],
                        "sb3": sb3_speed(args.sb3_steps, overrides, work / "sb3-speed")}
        print(json.dumps(res["speed"], indent=1))
    if not args.skip_arena:
        res["arena"] = arena_speed(args.arena_games)
        print(json.dumps(res["arena"], indent=1))
    if not args.skip_strength:
        res["strength"] = strength(args.minutes, args.eval_games, work, overrides)
    if out is not None:
        (out / "bench_ray.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
        (out / "bench_ray.md").write_text(markdown(res))
    print(markdown(res))


if __name__ == "__main__":
    run_script("bench_ray", main)
