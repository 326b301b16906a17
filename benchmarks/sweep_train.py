"""A short hyper-parameter sweep of ``algo: ppo`` at an equal time budget per variant.

    python benchmarks/sweep_train.py --preset basic --minutes 1.5 --out docs/results/sweep-basic-2p
    python benchmarks/sweep_train.py --preset classic --base default --minutes 3 --games 10000 \
        --against greedy --only base,points,gamma0.995,points+gamma0.995,width256,lr3e-4 \
        --out docs/results/sweep-classic-2p

Every variant starts from the same base (the ``default`` config's players and opponent pool,
``--preset``'s rules, and with ``--base sweep`` the first sweep's base network and
hyper-parameters below, with ``--base default`` the ``default`` config's own, which the first
sweep chose) and changes one thing: network width, a shared trunk or two
networks, activation, minibatch size, epochs, entropy weight, learning-rate schedule, and
(where the rules keep a score) the reward. Each trains for ``--minutes`` of wall-clock time
(the question the default run asks: what is strongest after a fixed time), then plays
``--games`` games against each of ``--against`` (seats rotated, the agent greedy in its masked
logits). Variants run one after another; nothing else should run meanwhile. Writes
``sweep.md`` and ``sweep.json`` into ``--out`` and prints the table.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import sys
import tempfile

from bench_args import (
    at_least,
    at_most,
    checked_agent,
    distinct,
    optional_out,
    out_folder,
    parser,
    path_arg,
    positive_finite,
    rules_at,
    run_script,
)

BASE = ["policy.net_arch=[256, 256]", "policy.activation=relu", "policy.shared=true",
        "ppo.batch_size=4096", "ppo.n_epochs=4", "ppo.ent_coef=0.01",
        "ppo.learning_rate=3.0e-4", "ppo.learning_rate_end=1.0e-4", "num_envs=256",
        "ppo.n_steps=64", "reward=win"]
VARIANTS: dict[str, list[str]] = {
    "base": [],
    "separate": ["policy.shared=false"],
    "tanh": ["policy.activation=tanh"],
    "width128": ["policy.net_arch=[128, 128]"],
    "width512": ["policy.net_arch=[512, 512]"],
    "deep3": ["policy.net_arch=[256, 256, 256]"],
    "batch2048": ["ppo.batch_size=2048"],
    "batch8192": ["ppo.batch_size=8192"],
    "epochs2": ["ppo.n_epochs=2"],
    "epochs8": ["ppo.n_epochs=8"],
    "ent0.003": ["ppo.ent_coef=0.003"],
    "ent0.03": ["ppo.ent_coef=0.03"],
    "lr_const": ["ppo.learning_rate_end=null"],
    "lr1e-3": ["ppo.learning_rate=1.0e-3"],
    "envs1024": ["num_envs=1024", "ppo.n_steps=16"],
    "points": ["reward=points"],
    "gamma0.995": ["ppo.gamma=0.995"],
    "points+gamma0.995": ["reward=points", "ppo.gamma=0.995"],
    "width256": ["policy.net_arch=[256, 256]"],
    "lr3e-4": ["ppo.learning_rate=3.0e-4"],
    # second round: the single changes that helped, combined
    "tanh+lr1e-3+b2048": ["policy.activation=tanh", "ppo.learning_rate=1.0e-3",
                          "ppo.batch_size=2048"],
    "tanh+w128+lr1e-3+b2048": ["policy.activation=tanh", "policy.net_arch=[128, 128]",
                               "ppo.learning_rate=1.0e-3", "ppo.batch_size=2048"],
    "tanh+w128+lr2e-3+b2048": ["policy.activation=tanh", "policy.net_arch=[128, 128]",
                               "ppo.learning_rate=2.0e-3", "ppo.batch_size=2048"],
    "tanh+w256+lr2e-3+b2048": ["policy.activation=tanh", "ppo.learning_rate=2.0e-3",
                               "ppo.batch_size=2048"],
    "tanh+w128+lr1e-3+b2048+envs1024": ["policy.activation=tanh", "policy.net_arch=[128, 128]",
                                        "ppo.learning_rate=1.0e-3", "ppo.batch_size=2048",
                                        "num_envs=1024", "ppo.n_steps=16"],
}
FIRST_ROUND = [n for n in VARIANTS if "+" not in n]


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--preset", default="basic", help="the rules trained (default basic)")
    ap.add_argument("--players", type=int, default=None,
                    help="players (default: a rules file's own count, else 2)")
    ap.add_argument("--base", choices=("sweep", "default"), default="sweep",
                    help="sweep: the first sweep's base (BASE); default: the default config's "
                         "own network and hyper-parameters")
    ap.add_argument("--minutes", type=float, default=1.5, help="training time per variant")
    ap.add_argument("--games", type=int, default=10_000, help="evaluation games per opponent")
    ap.add_argument("--against", default="greedy,defensive",
                    help="the evaluation's opponents, comma-separated (default greedy,defensive)")
    ap.add_argument("--only", default=None, help="comma-separated variant names (default: the "
                                                "first round, every single change)")
    ap.add_argument("--threads", default="2",
                    help="torch threads of each run: auto or 1-1024 (default 2)")
    ap.add_argument("--seed", type=int, default=0,
                    help="the runs' training seed (the evaluation's: --seed + 77; default 0)")
    ap.add_argument("--out", type=path_arg, default=None,
                    help=optional_out("sweep.md and sweep.json"))
    args = ap.parse_args()

    from ono_env.arena import MAX_GAMES, evaluate
    from ono_env.train.config import load_config
    from ono_env.train.ppo import train

    script = "sweep_train"
    rules = rules_at(script, "--preset", args.preset, args.players, 2)
    args.players = rules.num_players
    if args.threads != "auto" and not (args.threads.isdecimal() and 1 <= int(args.threads) <= 1024):
        sys.exit(f"{script}: --threads {args.threads!r}; allowed: auto or a whole number from 1 "
                 f"to 1024")
    positive_finite(script, "--minutes", args.minutes)
    at_least(script, "--games", args.games, 1)
    at_most(script, "--games", args.games, MAX_GAMES)
    at_least(script, "--seed", args.seed, 0)
    base = BASE if args.base == "sweep" else []
    # given, --only names every variant (before: '' ran the first round, and 'base,' dropped
    # the empty name)
    names = args.only.split(",") if args.only is not None else list(FIRST_ROUND)
    unknown = [n for n in names if n and n not in VARIANTS]
    if unknown or not all(names):
        what = f"unknown variant(s) {', '.join(map(repr, unknown))}" if unknown else (
            "an empty variant name")
        sys.exit(f"{script}: --only {args.only!r}: {what}; allowed: {', '.join(VARIANTS)}, "
                 f"comma-separated")
    distinct(script, "--only", names)   # before: a variant given twice was trained twice
    if rules.scoring == "none":   # reward "points" needs a rule set that keeps a score
        if args.only is not None and any("points" in n for n in names):
            sys.exit(f"{script}: --only {args.only!r}: the points variants need rules that keep "
                     f"a score; {args.preset!r} keeps none; allowed: variants without 'points'")
        names = [n for n in names if "points" not in n]
    # before: an opponent given twice was played twice, and one column's number lost
    against = distinct(script, "--against", args.against.split(","))
    for name in against:   # every opponent before any training
        checked_agent(script, "--against", name, rules)

    def config(name: str, run_dir: str):
        return load_config("default", [
            f"rules={args.preset}", f"num_players={args.players}", *base, *VARIANTS[name],
            "total_steps=1000000000", f"time_limit_minutes={args.minutes}", "eval.every=0",
            "final_eval.games=0", "progress=false", f"torch_threads={args.threads}",
            f"seed={args.seed}", f"run_dir={run_dir}"])

    for name in names:   # every variant's config before any training
        try:
            config(name, "unused")
        except ValueError as exc:
            sys.exit(f"{script}: variant {name!r} with --preset {args.preset} --players "
                     f"{args.players} --minutes {args.minutes} --threads {args.threads} --seed "
                     f"{args.seed}: {exc}")
    if args.out:
        out_folder(args.out, script, writes=("sweep.md", "sweep.json"))
    rows = []
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            try:   # named as this script: no "resume=<it> carries on" of ono-train
                res = train(config(name, f"{tmp}/run"), program=script)
            except Exception:
                raise
            except BaseException:   # stopped (Ctrl-C, a signal): the model said saved goes now
                print(f"{script}: variant {name!r} was training in a temporary folder, removed "
                      f"now: its model is not kept (the variants that finished are the rows "
                      f"above)", file=sys.stderr)
                raise
            from ono_env.agents.learned import load_agent
            agent = load_agent(res["model"], rules)
            ev = evaluate(agent, against, rules, args.games, seed=args.seed + 77)
        row = {"variant": name, "change": " ".join(VARIANTS[name]) or "(base)",
               "steps": res["steps"], "steps_per_second": res["steps_per_second"],
               "results": {r["opponent"]: [r["win_rate"], r["ci_low"], r["ci_high"]] for r in ev}}
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)

    head = ("| variant | change | steps | steps/s | "
            + " | ".join(f"vs {o} [95%]" for o in against) + " |")
    lines = [f"`algo: ppo`, {args.preset} rules, {args.players} players, {args.minutes} min of "
             f"training per variant, {args.games:,} games per opponent; base: "
             f"`{' '.join(base) or 'the default config'}`; "
             f"{os.cpu_count()} cores, torch_threads={args.threads}, Python "
             f"{platform.python_version()}.", "", head,
             "|" + "---|" * (4 + len(against))]
    for r in rows:
        cells = [f"{100 * w:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"
                 for w, lo, hi in (r["results"][o] for o in against)]
        lines.append(f"| {r['variant']} | `{r['change']}` | {r['steps'] / 1e6:.2f}M | "
                     f"{r['steps_per_second']:,.0f} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        (args.out / "sweep.md").write_text(
            f"# Sweep: {args.preset}, {args.players} players\n\n`python benchmarks/sweep_train.py "
            + shlex.join(sys.argv[1:]) + "`\n\n" + text)
        (args.out / "sweep.json").write_text(json.dumps({"args": vars(args) | {"out": str(args.out)},
                                                         "base": base, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    run_script("sweep_train", main)
