"""Training speed of the two in-process trainers, measured side by side in one run.

    python benchmarks/bench_train.py --out docs/results/train-speed          # both parts
    python benchmarks/bench_train.py --steps 300000 --rounds 3 --skip-busy

1. Idle machine: ``ono-train``'s default config (basic rules, two players, against the pool
   of baselines) trained for ``--steps`` learner steps with ``algo: ppo`` (ours) and with
   ``algo: maskable_ppo`` (sb3-contrib), in alternating rounds (A B A B ...), both with
   ``--threads`` torch threads; learner steps per second of the whole ``train()`` call
   (setup included, no evaluation), the median over rounds.
2. Busy machine: one other process spinning on a core the whole time; ``algo: ppo`` with
   ``torch_threads`` 1, 2 and ``auto`` in alternating rounds. ``auto`` should keep the
   one-thread rate (it counts the free cores at start).
4. Mixture (``--mixture``): the default run (one table, observation version 1) against a
   mixture of all six presets at 2, 3, 4, 5 and 6 players (30 tables, equal weights,
   observation version 2 with the opponent encoder), both with the default config's
   ``num_envs``, network width and ``--threads``, in alternating rounds; and the mixture
   with the generalist's network (``configs/train/generalist.yaml``'s ``policy``). Steps per
   second of the training loop, as the trainer counts them (setup not included), where
   that time goes (the games, the rest of the rollouts, the update), and what the update
   alone allows (each run's rate against the default run's were its games and the rest of
   its rollouts as cheap as the default run's). With
   ``--mixture-device cuda`` the mixtures train on the GPU (the default run stays on the cpu,
   and trains on the GPU too as a fourth row); run it as ``taskset -c 0,1 python ...`` to
   keep to two cores on a larger machine.
3. Learning per step (``--learn-steps``): both trainers train the default config for the same
   number of steps with the network both can express (``policy.shared=false``), seeds 0 and
   1, and each final policy plays ``--learn-games`` games against ``greedy``.

Part 1 and 2 use the default config as shipped, so ``algo: ppo`` runs its own default network
there (``policy.shared`` included) while ``maskable_ppo`` runs two networks of the same width:
each trainer at the setting a user gets.

Nothing else should run on the machine meanwhile. Writes ``bench_train.json`` and
``bench_train.md`` into ``--out`` (when given) and prints the table.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import shlex
import statistics
import sys
import tempfile
import time

from bench_args import (
    checked_rounds,
    cpu_name,
    machine,
    optional_out,
    out_folder,
    parser,
    path_arg,
    refuse_unused,
    run_script,
    within,
)

from ono_env.arena import MAX_GAMES
from ono_env.train.config import MAX_STEPS, load_config

MAX_THREADS = 1024
"""The most torch threads the training config allows (its ``torch_threads``)."""
OUT_FILES = ("bench_train.md", "bench_train.json")
"""What a run writes into --out."""


def _spin(stop) -> None:
    while not stop.is_set():
        pass


def _config(algo: str, steps: int, threads: int | str, seed: int, run_dir: str,
            extra: list[str] = ()):
    over = [f"algo={algo}", f"total_steps={steps}", "eval.every=0", "final_eval.games=0",
            "progress=false", f"seed={seed}", f"torch_threads={threads}", f"run_dir={run_dir}",
            *extra]
    if algo != "ppo":
        over.append("policy.shared=false")
    return load_config("default", over)


def _trainer(algo: str):
    if algo == "ppo":
        from ono_env.train.ppo import train
    else:
        from ono_env.train.maskable_ppo import train
    return train


PRESET_NAMES = ("basic", "classic", "ono", "stacking", "uno2018", "wikipedia")
MIXTURE = ["observation_version=2", "tables=[" + ", ".join(
    f"{{rules: {p}, num_players: {n}}}" for p in PRESET_NAMES for n in (2, 3, 4, 5, 6)) + "]"]
"""The overrides of part 4's mixture: every preset at 2-6 players."""
GENERALIST_NET = ["policy={net_arch: [256, 256], activation: tanh, shared: true, "
                  "opponent_encoder: 32}"]


PRECISIONS: dict[str, set[str]] = {}
"""Each measured setting's precisions (``one_run``'s ``label``), as its ``algo: ppo`` runs
trained in them (the report says them)."""

TRAINED: set[int] = set()
"""The learner steps each measured training call did (``--steps`` rounded up to whole
rollouts; the untimed warm-up calls, which have no ``label``, are not counted). ``main``
empties it, and :data:`PRECISIONS`, first."""


def trained_text(counts: set[int]) -> str:
    """What the report says of the steps some calls trained: one count, or their range."""
    low, high = min(counts), max(counts)
    return f"{low:,}" if low == high else f"{low:,} to {high:,}"


def precisions() -> str:
    """What the report says of :data:`PRECISIONS`: one precision for all, or each setting's."""
    kinds = {k for v in PRECISIONS.values() for k in v}
    if len(kinds) <= 1:
        return f"; `algo: ppo` trained in {kinds.pop()}" if kinds else ""
    return "; `algo: ppo` trained in " + ", ".join(
        f"{' and '.join(sorted(v))} ({name})" for name, v in PRECISIONS.items())


def one_run(algo: str, steps: int, threads: int | str, seed: int,
            extra: list[str] = (), loop: bool = False, parts: list | None = None,
            label: str | None = None) -> float:
    """Learner steps per second of one training call (setup included, no evaluation); with
    ``loop``, of its training loop alone (the trainer's own count, without the setup: the
    mixture's setup probes the baselines' games at each of its 30 tables). With ``parts``
    (``algo: ppo``), appends where the loop's time went, in seconds per 100,000 learner
    steps: ``[games, policy and bookkeeping, update]`` (the games: the learner's moves
    applied, the opponents' moves, new deals; the trainer's ``games_seconds``)."""
    with tempfile.TemporaryDirectory() as tmp:
        cfg = _config(algo, steps, threads, seed, f"{tmp}/run", list(extra))
        t = time.perf_counter()
        res = _trainer(algo)(cfg)
        if algo == "ppo" and label is not None:
            PRECISIONS.setdefault(label, set()).add("bf16 autocast" if res["bf16"] else "fp32")
        if parts is not None:
            per = 100_000 / res["steps"]
            parts.append([per * res["games_seconds"],
                          per * (res["rollout_seconds"] - res["games_seconds"]),
                          per * res["update_seconds"]])
        took = time.perf_counter() - t
        if label is not None:
            TRAINED.add(steps_done(res))
        return res["steps_per_second"] if loop else steps_done(res) / took


def steps_done(res: dict) -> int:
    """The learner steps a training call did, as the trainer counts them: it rounds the
    steps asked up to whole rollouts, so the count asked is not the count done. ``algo:
    ppo`` returns it; ``maskable_ppo`` writes it into its model file only."""
    if "steps" in res:
        return int(res["steps"])
    from ono_env.agents.learned import read_metadata

    return int(read_metadata(res["model"])["training_steps"])


def learning(algo: str, steps: int, seed: int, games: int,
             threads: int | str) -> tuple[list[float], int]:
    """Win rate [low, high] against greedy after ``steps`` steps with two networks, and the
    steps the trainer trained (whole rollouts)."""
    from ono_env.agents.learned import load_agent
    from ono_env.arena import evaluate

    with tempfile.TemporaryDirectory() as tmp:
        cfg = _config(algo, steps, threads, seed, f"{tmp}/run", ["policy.shared=false"])
        res = _trainer(algo)(cfg)
        agent = load_agent(res["model"])
        r = evaluate(agent, ["greedy"], agent.rules, games, seed=1234)[0]
        return [r["win_rate"], r["ci_low"], r["ci_high"]], steps_done(res)


def update_bound(parts: dict[str, list[float]]) -> list[str]:
    """The report's lines on what the update alone allows: each other run's rate against the
    first's (the default run) were its games and the rest of its rollouts as cheap as the
    first's, its update as measured (``parts``: each run's seconds per 100,000 learner steps,
    ``[games, policy and bookkeeping, update]``)."""
    (base_name, base), *others = parts.items()
    if not others or sum(base) <= 0:
        return []
    rest = base[0] + base[1]
    return ["", f"What the update alone allows: each run's rate against the {base_name.split(' (')[0]} "
                f"run's were its games and the rest of its rollouts as cheap as that run's "
                f"({rest:.2f} s per 100,000 learner steps), its update as measured: "
            + "; ".join(f"{name} {sum(base) / (rest + p[2]):.2f}x" for name, p in others) + "."]


def main() -> None:
    TRAINED.clear()   # a second call in one process reports its own runs only
    PRECISIONS.clear()
    learn_trained: set[int] = set()
    ap = parser(__doc__)
    ap.add_argument("--steps", type=int, default=400_000, help="learner steps per training call")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per setting")
    ap.add_argument("--threads", default="2", help="torch threads of parts 1, 3 and 4 (a number or auto; default 2)")
    ap.add_argument("--skip-idle", action="store_true", help="skip part 1 (idle machine)")
    ap.add_argument("--skip-busy", action="store_true", help="skip part 2 (busy machine)")
    ap.add_argument("--learn-steps", type=int, default=0,
                    help="part 3: steps per trainer and seed (0: skip)")
    ap.add_argument("--learn-games", type=int, default=None,
                    help="part 3: games of each final policy against greedy (default 20,000)")
    ap.add_argument("--mixture", action="store_true",
                    help="part 4: the default run against the 30-table mixture")
    ap.add_argument("--mixture-device", choices=("cpu", "cuda"), default=None,
                    help="part 4: where the mixtures train; the default run trains on the cpu, "
                         "and with cuda also there, as a row of its own")
    ap.add_argument("--out", type=path_arg, default=None,
                    help=optional_out("bench_train.md and bench_train.json"))
    args = ap.parse_args()
    if args.threads != "auto" and not (args.threads.isascii() and args.threads.isdigit()
                                       and 1 <= int(args.threads) <= MAX_THREADS):
        sys.exit(f"bench_train: --threads {args.threads!r}; allowed: auto or a whole number "
                 f"from 1 to {MAX_THREADS}")
    threads = args.threads if args.threads == "auto" else int(args.threads)
    within("bench_train", "--steps", args.steps, 1, MAX_STEPS)
    checked_rounds("bench_train", args.rounds)
    within("bench_train", "--learn-steps", args.learn_steps, 0, MAX_STEPS)
    # an option of a part that does not run is refused (before: taken, unchecked, and unused)
    for option, given, part in (("--learn-games", args.learn_games, "--learn-steps"),
                                ("--mixture-device", args.mixture_device, "--mixture")):
        if given is not None and not (args.learn_steps if part == "--learn-steps" else args.mixture):
            sys.exit(f"bench_train: {option} is read by the part that {part} runs, which is not "
                     f"asked for; allowed: {option} with {part}")
    args.learn_games = 20_000 if args.learn_games is None else args.learn_games
    args.mixture_device = args.mixture_device or "cpu"
    if args.learn_steps:
        within("bench_train", "--learn-games", args.learn_games, 2, MAX_GAMES)
    if args.skip_idle and args.skip_busy and not args.learn_steps and not args.mixture:
        sys.exit("bench_train: --skip-idle and --skip-busy leave nothing to measure; allowed: "
                 "at most one of them, or with --learn-steps or --mixture")
    # before: taken, recorded in bench_train.json, and read by no part that ran
    if args.skip_idle and args.skip_busy and not args.mixture:
        refuse_unused("bench_train", ("--steps", "--rounds"),
                      "only part 3 runs (its steps are --learn-steps)")
    if args.skip_idle and not args.learn_steps and not args.mixture:
        refuse_unused("bench_train", ("--threads",),
                      "only part 2 (busy machine) runs, which trains at 1, 2 and auto threads")
    gpu = None
    if args.mixture and args.mixture_device == "cuda":
        import torch
        if not torch.cuda.is_available():
            sys.exit("bench_train: --mixture-device cuda: torch sees no CUDA GPU here; "
                     "allowed: cpu")
        gpu = torch.cuda.get_device_name(0)
    if args.out:
        out_folder(args.out, "bench_train", writes=OUT_FILES)

    # warm-up: numba's cache, torch's kernels, the imports
    one_run("ppo", 16_384, 1, 0)
    if not args.skip_idle or args.learn_steps:
        one_run("maskable_ppo", 16_384, 1, 0)
    res: dict[str, dict[str, list]] = {"idle": {}, "busy": {}, "learning": {}, "mixture": {},
                                       "mixture_parts": {}}
    if args.mixture:
        cuda = args.mixture_device == "cuda"
        dev = [f"device={args.mixture_device}"]
        where = ", cuda" if cuda else ""
        one_run("ppo", 16_384, 1, 0, MIXTURE + dev)
        settings = {"default (basic, 2 players, v1)" + (", cpu" if cuda else ""): ["device=cpu"],
                    "mixture (6 presets x 2-6 players, v2), default width" + where: MIXTURE + dev,
                    "mixture, the generalist's network" + where: MIXTURE + GENERALIST_NET + dev}
        if cuda:
            settings["default (basic, 2 players, v1), cuda"] = ["device=cuda"]
        for r in range(args.rounds):
            for name, extra in settings.items():
                v = one_run("ppo", args.steps, threads, r, extra, loop=True,
                            parts=res["mixture_parts"].setdefault(name, []), label=name)
                res["mixture"].setdefault(name, []).append(v)
                print(f"mixture round {r}: {name} {v:,.0f} steps/s", file=sys.stderr)
    if not args.skip_idle:
        for r in range(args.rounds):
            for algo in ("ppo", "maskable_ppo"):
                v = one_run(algo, args.steps, threads, r, label=f"idle, {algo}")
                res["idle"].setdefault(algo, []).append(v)
                print(f"idle round {r}: {algo} {v:,.0f} steps/s", file=sys.stderr)
    if not args.skip_busy:
        stop = mp.Event()
        spinner = mp.Process(target=_spin, args=(stop,), daemon=True)
        spinner.start()
        time.sleep(1.0)
        try:
            for r in range(args.rounds):
                for th in (1, 2, "auto"):
                    v = one_run("ppo", args.steps, th, r, label=f"busy, torch_threads={th}")
                    res["busy"].setdefault(f"ppo, torch_threads={th}", []).append(v)
                    print(f"busy round {r}: threads={th} {v:,.0f} steps/s", file=sys.stderr)
        finally:
            stop.set()
            spinner.join()

    if args.learn_steps:
        for seed in (0, 1):
            for algo in ("ppo", "maskable_ppo"):
                r, trained = learning(algo, args.learn_steps, seed, args.learn_games, threads)
                res["learning"][f"{algo}, seed {seed}"] = r
                learn_trained.add(trained)
                print(f"learning {algo} seed {seed}: {r}", file=sys.stderr)

    timed = (f"Learner steps per second, default config (basic, 2 players, pool of "
             f"baselines), {args.steps:,} steps asked per call ({trained_text(TRAINED)} "
             f"trained: the trainer trains whole rollouts), median of {args.rounds} "
             f"alternating rounds; " if TRAINED else "")   # no speed part ran: the machine only
    lines = [timed + f"{machine()}" + (f"; GPU: {gpu}" if gpu else "") + precisions() + "."]
    if res["idle"] or res["busy"]:
        lines += ["", "| machine | trainer | steps/s (median) | rounds |", "|---|---|---|---|"]
    for part, label in (("idle", f"idle, torch_threads={args.threads}"),
                        ("busy", "one other busy process")):
        for name, vals in res[part].items():
            lines.append(f"| {label} | {name} | {statistics.median(vals):,.0f} | "
                         + ", ".join(f"{v:,.0f}" for v in vals) + " |")
    if res["mixture"]:
        base = statistics.median(next(iter(res["mixture"].values())))
        lines += ["", f"Mixture against the default run, torch_threads={args.threads}, learner "
                      f"steps per second of the training loop (setup not counted):", "",
                  "| run | steps/s (median) | rounds | / default |", "|---|---|---|---|"]
        for name, vals in res["mixture"].items():
            med = statistics.median(vals)
            lines.append(f"| {name} | {med:,.0f} | " + ", ".join(f"{v:,.0f}" for v in vals)
                         + f" | {med / base:.2f}x |")
        lines += ["", "Where the training loop's time goes, seconds per 100,000 learner steps "
                      "(median over the rounds of each part): the games (the learner's moves "
                      "applied, the opponents' moves, new deals), the rest of the rollouts (the "
                      "policy's forward pass, sampling, rewards and bookkeeping), the update:", "",
                  "| run | games | policy and bookkeeping | update | total |", "|---|---|---|---|---|"]
        parts = {name: [statistics.median(col) for col in zip(*rows)]
                 for name, rows in res["mixture_parts"].items()}
        for name, med3 in parts.items():
            lines.append(f"| {name} | " + " | ".join(f"{v:.2f}" for v in med3)
                         + f" | {100_000 / statistics.median(res['mixture'][name]):.2f} |")
        lines += update_bound(parts)
    if res["learning"]:
        lines += ["", f"Learning per step: {args.learn_steps:,} steps asked "
                      f"({trained_text(learn_trained)} trained), two networks "
                      f"(`policy.shared=false`), win rate against greedy over "
                      f"{args.learn_games:,} games [95%]:", "",
                  "| trainer, seed | vs greedy |", "|---|---|"]
        for name, (w, lo, hi) in res["learning"].items():
            lines.append(f"| {name} | {100 * w:.1f} [{100 * lo:.1f}, {100 * hi:.1f}] |")
    if len(res["idle"]) == 2:
        ratio = statistics.median(res["idle"]["ppo"]) / statistics.median(res["idle"]["maskable_ppo"])
        lines += ["", f"ppo / maskable_ppo: {ratio:.2f}x"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_train.md").write_text(
            "# Training speed\n\n`python benchmarks/bench_train.py " + shlex.join(sys.argv[1:])
            + "`\n\n" + text)
        (args.out / "bench_train.json").write_text(json.dumps(
            {"steps": args.steps, "trained": sorted(TRAINED),
             "learn_trained": sorted(learn_trained), "rounds": args.rounds,
             "threads": args.threads,
             "cores": len(os.sched_getaffinity(0)), "cpu": cpu_name(), "gpu": gpu,
             "precisions": {k: sorted(v) for k, v in PRECISIONS.items()},
             "results": res}, indent=2) + "\n")


if __name__ == "__main__":
    run_script("bench_train", main)
