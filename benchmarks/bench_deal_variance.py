"""How much of a game's outcome its deal fixes, against how much the policy's critic explains.

    python benchmarks/bench_deal_variance.py --tables ono-6,basic-6,ono-2,basic-2 --deals 10000 \
        --plays 4 --out docs/results/generalist/deal-variance
    python benchmarks/bench_deal_variance.py --tables ono-3 --deals 20 --plays 2 --out /tmp/d

The question behind it: would a training signal that compares plays of the same deal (play
each deal several times and learn from each play's outcome against the others', a
leave-one-out baseline) be much steadier than the one the trainer uses, the critic's value of
the seat's own observation? The script measures both on the same games, without training.

At each table (``--tables``, ``<preset>-<players>``) the model (``--model``, ``ppo-any`` by
default) samples its moves from its policy, as in training, in one seat (a random seat per
deal, as the trainer's ``learner_seat: random``) against the preset's best baseline in every
other seat (as in ``bench_generalist.py``). Each of ``--deals`` deals is played ``--plays``
times: the same cards dealt, the same stock order, the same seat; only the model's sampled
moves differ (and what follows from them). Each quantity is a squared error at each of the
seat's decisions in the first play of a deal, averaged over all those decisions (as the
trainer weighs them), with a 95% interval over deals, in the trainer's reward units
(``reward: win``: 1 for a win, -1/(P-1) for a loss), against the Monte Carlo return (the
reward plus the change of ``ppo.hand_shaping``'s potential, 0.1 per card in hand, to the
game's end; the trainer's advantages, GAE with lambda 0.95, bootstrap from the critic along
the way, which this does not):

- ``outcome variance``: the reward's spread about its mean (no baseline);
- ``critic``: the return less the critic's value; ``critic, first decision``: the same with
  the value at the seat's first decision (a baseline fixed when the cards are dealt);
- ``leave-one-out, K plays``: the reward less the mean of the other K-1 plays' rewards;
- ``critic and deal``: the critic's error less the mean of the other K-1 plays' critic
  errors at their first decision (how much better than the critic expected the deal went
  for them), at weight 1, and at the weight that leaves the least (fitted on the same
  deals, ``fitted_weight``);
- ``deal floor``: the variance of the reward between plays of the same deal, what a baseline
  that knew each deal's mean exactly, and nothing else, would leave.

Writes ``results.json`` and ``results.md`` into ``--out``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time

# one thread a process: a second BLAS thread halves the speed of two processes on two cores
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from bench_args import out_folder, parser, run_script, within
from bench_generalist import PROBE_FILES, add_probe_arguments, probe_setup

from ono_env.agents.learned import load_agent
from ono_env.arena.stats import mean_interval
from ono_env.checks import MAX_SEED
from ono_env.envs.learner_batch import LearnerBatch
from ono_env.observation import OBS_SELF
from ono_env.rules import resolve_rules
from ono_env.train.run import HAND_SHAPING

SCRIPT = "bench_deal_variance"
BATCH = 1_000
"""Deals played side by side (one LearnerBatch); the deals' results do not depend on it."""
MAX_PLAYS = 100
"""The most plays of each deal (``--plays``): the spread within a deal is measured from 4 by
default (before, any count was taken, and a large one ended in a ``MemoryError`` traceback)."""
MAX_PLAYED = 10_000_000
"""The most plays times deals (``--plays`` x ``--deals``): three numbers are kept per play of
a deal (240 MB at this bound; the default 4 x 10,000 keeps 1 MB)."""


def play_deals(model, rules, against: str, deals: int, plays: int, seed: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[np.ndarray], list[np.ndarray],
                          int]:
    """Of the first game of each deal in each play, ``(plays, deals)`` each: the rewards, and
    the critic's value and the seat's hand size at the seat's first decision; per deal the
    critic's values and the seat's hand sizes at its decisions in the first play; the seat's
    decisions in that play. A deal is the first game of one env of a LearnerBatch whose seed
    comes from ``seed`` and the batch's number: every play of it starts from the same game."""
    rewards = np.zeros((plays, deals))
    first_value = np.zeros((plays, deals))     # the critic's value at each play's first decision
    first_hand = np.zeros((plays, deals))
    values: list[np.ndarray] = []
    hands: list[np.ndarray] = []
    decisions = 0
    for b, start in enumerate(range(0, deals, BATCH)):
        n = min(BATCH, deals - start)
        first = None
        deal_seed = int(np.random.default_rng([seed, b]).integers(MAX_SEED))
        for k in range(plays):
            batch = LearnerBatch(rules, num_envs=n, opponents=against, seed=deal_seed,
                                 learner_seat="random", observation_version=2)
            obs = batch.reset(deal_seed)
            if first is None:
                first = obs.copy()
            elif not np.array_equal(first, obs):   # the plays must start from the same deal
                raise RuntimeError(f"play {k} of batch {b} starts from other deals")
            rng = np.random.default_rng([seed, b, k])
            alive = np.ones(n, bool)
            seen_v: list[list[float]] = [[] for _ in range(n)]
            seen_h: list[list[float]] = [[] for _ in range(n)]
            v = model.net.value(obs).reshape(-1)
            first_value[k, start:start + n] = v
            first_hand[k, start:start + n] = obs[:, OBS_SELF]
            while alive.any():
                if k == 0:
                    for i in np.flatnonzero(alive):
                        seen_v[i].append(float(v[i]))
                        seen_h[i].append(float(obs[i, OBS_SELF]))
                    decisions += int(alive.sum())
                step = batch.step(model.act(obs, batch.action_masks(), rng))
                if k == 0:
                    v = model.net.value(step.obs).reshape(-1)
                ended = alive & step.dones
                rewards[k, start + np.flatnonzero(ended)] = step.rewards[ended]
                alive &= ~step.dones
                obs = step.obs
            if k == 0:
                values += [np.asarray(x) for x in seen_v]
                hands += [np.asarray(x) for x in seen_h]
    return rewards, first_value, first_hand, values, hands, decisions


def per_decision(sums: np.ndarray, counts: np.ndarray) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean over every decision of a quantity whose sum over each
    deal's decisions is ``sums`` (``counts`` decisions), with a 95% interval over deals (the
    ratio of two sums: its normal interval by the delta method; deals are independent,
    their decisions are not)."""
    mean = float(sums.sum() / counts.sum())
    _, low, high = mean_interval((sums - mean * counts) / counts.mean())   # about 0 +- half
    half = (high - low) / 2
    return mean, mean - half, mean + half


def estimates(r: np.ndarray, v0: np.ndarray, h0: np.ndarray, values: list[np.ndarray],
              hands: list[np.ndarray], c: float) -> dict:
    """The quantities of the module docstring from what :func:`play_deals` returns, ``c``
    the shaping per card: every error is taken at each of the seat's decisions in the first
    play, against the Monte Carlo return ``reward + c * hand`` (the potential's change
    to the end), and averaged over all those decisions."""
    plays, deals = r.shape
    first = r[0]
    n = np.array([len(v) for v in values], np.float64)
    err = [first[i] + c * hands[i] - values[i] for i in range(deals)]   # the critic's errors
    # how much better than the critic expected the other plays of each deal went, at their
    # first decision: a baseline for the first play's errors that knows the deal
    surprise = r + c * h0 - v0
    others = (surprise.sum(axis=0) - surprise[0]) / (plays - 1)
    beta = (sum(float(e.sum()) * o for e, o in zip(err, others))
            / float((n * others ** 2).sum()))   # the weight that leaves the least, fitted
    loo = first - (r.sum(axis=0) - first) / (plays - 1)
    within = r.var(axis=0, ddof=1)                       # per deal: between its plays
    mean_r = float((n * first).sum() / n.sum())
    return {
        "win_rate": mean_interval((r > 0).mean(axis=0)),
        "outcome_variance": per_decision(n * (first - mean_r) ** 2, n),
        "critic_first": per_decision(np.array([len(e) * e[0] ** 2 for e in err]), n),
        "critic_all": per_decision(np.array([float((e ** 2).sum()) for e in err]), n),
        "leave_one_out": per_decision(n * loo ** 2, n),
        "critic_and_deal": per_decision(
            np.array([float(((e - o) ** 2).sum()) for e, o in zip(err, others)]), n),
        "critic_and_deal_fitted": per_decision(
            np.array([float(((e - beta * o) ** 2).sum()) for e, o in zip(err, others)]), n),
        "fitted_weight": beta,
        "deal_floor": per_decision(n * within, n),
        "decisions_per_game": float(n.mean()),
        "shaping": c,
    }


def measure(model, rules, against: str, deals: int, plays: int, seed: int) -> dict:
    """One table's row: the quantities of the module docstring, each ``[mean, low, high]``."""
    t0 = time.perf_counter()
    r, v0, h0, values, hands, _ = play_deals(model, rules, against, deals, plays, seed)
    c = 0.0 if rules.scoring != "none" and rules.target_score else HAND_SHAPING
    return {**estimates(r, v0, h0, values, hands, c), "seconds": time.perf_counter() - t0}


def cell(x: list[float] | tuple[float, float, float]) -> str:
    return f"{x[0]:.4f} [{x[1]:.4f}, {x[2]:.4f}]"


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--tables", default="ono-6,basic-6,ono-2,basic-2",
                    help="<preset>-<players>, comma-separated (default ono-6,basic-6,ono-2,"
                         "basic-2)")
    ap.add_argument("--plays", type=int, default=4,
                    help=f"plays of each deal (default 4, at most {MAX_PLAYS})")
    add_probe_arguments(ap)
    args = ap.parse_args()
    within(SCRIPT, "--plays", args.plays, 2, MAX_PLAYS)   # before the --out folder is made
    if args.plays * args.deals > MAX_PLAYED:
        sys.exit(f"{SCRIPT}: --plays {args.plays} --deals {args.deals:,}: "
                 f"{args.plays * args.deals:,} plays of deals; allowed: at most {MAX_PLAYED:,}")
    best, tables, path = probe_setup(args, SCRIPT)
    models = {}
    for preset, players in tables:             # every model loads before anything is played
        rules = resolve_rules(preset, num_players=players)
        try:
            model = load_agent(path, rules, deterministic=False)
        except (OSError, ValueError) as exc:
            sys.exit(f"{SCRIPT}: at {preset}-{players}: {exc}")
        if model.observation_version != 2 or not model.net.has_value:
            sys.exit(f"{SCRIPT}: --model {args.model!r}: observation version "
                     f"{model.observation_version}, {'a' if model.net.has_value else 'no'} value "
                     f"network; allowed: a version-2 model with its value network")
        models[preset, players] = rules, model
    out = out_folder(args.out, SCRIPT, writes=PROBE_FILES)
    rows = []
    for preset, players in tables:
        rules, model = models[preset, players]
        against = best[preset]
        row = {"table": f"{preset}-{players}", "opponent": against, "deals": args.deals,
               "plays": args.plays,
               **measure(model, rules, against, args.deals, args.plays, args.seed)}
        rows.append(row)
        print(f"{row['table']}: floor {cell(row['deal_floor'])}, critic {cell(row['critic_all'])}"
              f" ({row['seconds']:.0f} s)", file=sys.stderr)
    command = f"python benchmarks/{SCRIPT}.py " + shlex.join(sys.argv[1:])
    K = args.plays
    lines = [
        "# How much of the outcome the deal fixes", "", f"`{command}`", "",
        f"`{args.model}` sampling its moves in one seat (a random seat per deal), the preset's best "
        f"baseline in every other; each deal played {K} times from the same cards, stock and "
        f"seat. Squared errors against the Monte Carlo return at each of the seat's decisions "
        f"in a deal's first play, mean over all those decisions with a 95% interval over deals, "
        f"in the trainer's reward units (1 a win, -1/(P-1) a loss). The module docstring says "
        f"what each column is.", "",
        f"| table | opponent | deals | win rate | decisions a game | outcome variance | "
        f"critic, first decision | critic | leave-one-out, {K} plays | critic and deal, weight "
        f"1 | critic and deal, fitted weight | deal floor |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['table']} | {r['opponent']} | {r['deals']:,} | "
                     f"{100 * r['win_rate'][0]:.1f}% | {r['decisions_per_game']:.1f} | "
                     f"{cell(r['outcome_variance'])} | {cell(r['critic_first'])} | "
                     f"{cell(r['critic_all'])} | {cell(r['leave_one_out'])} | "
                     f"{cell(r['critic_and_deal'])} | {cell(r['critic_and_deal_fitted'])} "
                     f"({r['fitted_weight']:.2f}) | {cell(r['deal_floor'])} |")
    lines += ["", "Share of the outcome variance that each leaves (the means' ratio):", "",
              f"| table | critic, first decision | critic | leave-one-out, {K} plays | critic "
              f"and deal, weight 1 | critic and deal, fitted weight | deal floor |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        v = r["outcome_variance"][0]
        # every first play ended alike (a few deals can): no variance to share, n/a (before:
        # a ZeroDivisionError, after results.json was written)
        lines.append(f"| {r['table']} | " + " | ".join(
            f"{r[k][0] / v:.2f}" if v > 0 else "n/a"
            for k in ("critic_first", "critic_all", "leave_one_out", "critic_and_deal",
                      "critic_and_deal_fitted", "deal_floor")) + " |")
    # both files once both are made: a failure leaves neither
    (out / "results.json").write_text(json.dumps(
        {"command": command, "model": str(args.model), "rows": rows}, indent=1) + "\n")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    run_script("bench_deal_variance", main)
