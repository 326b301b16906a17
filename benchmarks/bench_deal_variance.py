"""How much of a game's outcome its deal fixes, against how much the policy's critic explains.

    python benchmarks/bench_deal_variance.py --tables ono-6,basic-6,ono-2 --deals 4000 --plays 4 \
        --out docs/results/generalist/deal-variance
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
moves differ (and what follows from them). Measured per deal, then averaged over deals with a
95% interval, all in the trainer's reward units (``reward: win``: 1 for a win, -1/(P-1) for a
loss):

- ``outcome variance``: the variance of the reward over deals (no baseline);
- ``critic, first decision`` and ``critic, every decision``: the mean squared error of the
  critic's value against the return it is fitted to (the reward plus ``ppo.hand_shaping``'s
  potential, 0.1 per card in hand, as the trainer's targets for these presets), at the
  seat's first decision of the first play and over all its decisions;
- ``deal floor``: the variance of the reward between plays of the same deal (the part no
  baseline that knows the deal alone can remove); ``leave-one-out, K plays``: what a
  baseline of the other K-1 plays' mean leaves, ``K/(K-1)`` times the floor;
- ``critic and deal, K plays``: the critic's errors over every decision of the first play,
  less the mean of the other K-1 plays' critic errors at their first decision (how much
  better than the critic expected the deal went for them): both baselines at once.

Writes ``results.json`` and ``results.md`` into ``--out``.
"""

from __future__ import annotations

import json
import os
import sys
import time

# one thread a process: a second BLAS thread halves the speed of two processes on two cores
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from bench_args import at_least, out_folder, parser
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


def play_deals(model, rules, against: str, deals: int, plays: int, seed: int
               ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], list[np.ndarray], int]:
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


def measure(model, rules, against: str, deals: int, plays: int, seed: int) -> dict:
    """One table's row: the quantities of the module docstring, each ``[mean, low, high]``."""
    t0 = time.perf_counter()
    r, v0, h0, values, hands, decisions = play_deals(model, rules, against, deals, plays, seed)
    c = 0.0 if rules.scoring != "none" and rules.target_score else HAND_SHAPING
    first = r[0]
    sq_all = np.array([np.mean((first[i] + c * hands[i] - values[i]) ** 2) for i in range(deals)])
    # how much better than the critic expected the other plays of the deal did (at their
    # first decision): a baseline for the first play's critic errors that knows the deal
    surprise = r + c * h0 - v0
    others = (surprise.sum(axis=0) - surprise[0]) / (plays - 1)
    sq_both = np.array([np.mean((first[i] + c * hands[i] - values[i] - others[i]) ** 2)
                        for i in range(deals)])
    sq_first = np.array([(first[i] + c * hands[i][0] - values[i][0]) ** 2 for i in range(deals)])
    within = r.var(axis=0, ddof=1)                       # per deal: between its plays
    spread = (first - first.mean()) ** 2 * deals / (deals - 1)
    row = {
        "win_rate": mean_interval((r > 0).mean(axis=0)),
        "outcome_variance": mean_interval(spread),
        "critic_first": mean_interval(sq_first),
        "critic_all": mean_interval(sq_all),
        "critic_and_deal": mean_interval(sq_both),
        "deal_floor": mean_interval(within),
        "leave_one_out": mean_interval(within * plays / (plays - 1)),
        "decisions_per_game": decisions / deals,
        "shaping": c,
        "seconds": time.perf_counter() - t0,
    }
    return row


def cell(x: list[float] | tuple[float, float, float]) -> str:
    return f"{x[0]:.4f} [{x[1]:.4f}, {x[2]:.4f}]"


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--tables", default="ono-6,basic-6,ono-2",
                    help="<preset>-<players>, comma-separated (default ono-6,basic-6,ono-2)")
    ap.add_argument("--plays", type=int, default=4, help="plays of each deal (default 4)")
    add_probe_arguments(ap)
    args = ap.parse_args()
    best, tables, path = probe_setup(args, SCRIPT)
    at_least(SCRIPT, "--plays", args.plays, 2)
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
    command = f"python benchmarks/{SCRIPT}.py " + " ".join(sys.argv[1:])
    (out / "results.json").write_text(json.dumps(
        {"command": command, "model": str(args.model), "rows": rows}, indent=1) + "\n")
    K = args.plays
    lines = [
        "# How much of the outcome the deal fixes", "", f"`{command}`", "",
        f"`{args.model}` sampling its moves in one seat (a random seat per deal), the preset's best "
        f"baseline in every other; each deal played {K} times from the same cards, stock and "
        f"seat. Squared errors in the trainer's reward units (1 a win, -1/(P-1) a loss), mean "
        f"over deals with a 95% interval over deals.", "",
        f"| table | opponent | deals | win rate | decisions a game | outcome variance | "
        f"critic, first decision | critic, every decision | deal floor | leave-one-out, {K} plays | "
        f"critic and deal, {K} plays |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['table']} | {r['opponent']} | {r['deals']:,} | "
                     f"{100 * r['win_rate'][0]:.1f}% | {r['decisions_per_game']:.1f} | "
                     f"{cell(r['outcome_variance'])} | {cell(r['critic_first'])} | "
                     f"{cell(r['critic_all'])} | {cell(r['deal_floor'])} | "
                     f"{cell(r['leave_one_out'])} | {cell(r['critic_and_deal'])} |")
    lines += ["", "Share of the outcome variance that each leaves (the mean's ratio):", "",
              f"| table | critic, first decision | critic, every decision | deal floor | "
              f"leave-one-out, {K} plays | critic and deal, {K} plays |", "|---|---|---|---|---|---|"]
    for r in rows:
        v = r["outcome_variance"][0]
        lines.append(f"| {r['table']} | {r['critic_first'][0] / v:.2f} | "
                     f"{r['critic_all'][0] / v:.2f} | {r['deal_floor'][0] / v:.2f} | "
                     f"{r['leave_one_out'][0] / v:.2f} | {r['critic_and_deal'][0] / v:.2f} |")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
