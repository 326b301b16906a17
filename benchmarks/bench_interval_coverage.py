"""How often the arena's interval over mirrored deals holds the true mean, and how wide it is.

    python benchmarks/bench_interval_coverage.py --out docs/results/interval-coverage
    python benchmarks/bench_interval_coverage.py --deals-scale 0.05 --resamples 500 --out /tmp/c

The arena's 95% interval of a win share over mirrored deals
(``ono_env.arena.stats.bounded_mean_interval``) is a normal interval over the per-deal
shares with two more games at 0 and two at 1 (Agresti and Coull's "add two successes and two
failures"). Until 7 December 2026 the additions were two whole deals at each end, however
many games a deal holds (2 at 2 players, 24 at 4, the player count at 5-10). This script
measures both against the plain normal interval, without any model:

1. For each table it plays many mirrored deals once (``--deals-scale`` times 6,000 deals at
   2 players, 1,500 at 4, 3,000 at 6, 2,000 at 10) and takes every entrant's per-deal
   shares, and the first two entrants' per-deal differences, as a population whose mean is
   known exactly. The tables: ``basic`` rules with ``greedy``, ``color``, ``defensive`` and
   ``random`` in turn round the table (at 2 players ``greedy`` against ``color``); and
   ``greedy`` in one seat against ``random`` in every other, under ``basic`` and under
   ``ono`` (where ``greedy`` takes 97% to 99.9%: near the bound).
2. For ``n`` of 5, 10, 25, 100 and 400 deals it draws ``--resamples`` samples of ``n`` deals
   from each population (with replacement, a generator seeded by ``--seed``) and computes
   each interval on each sample.
3. Coverage: the share of samples whose interval holds the population's mean (95% is the
   aim); width: the mean width, in points.

Writes ``results.json`` (every row) and ``results.md`` (per table size and ``n``, the lowest
coverage and the mean width over the table's series) into ``--out``.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
import time

import numpy as np
from bench_args import (
    checked_seed,
    out_folder,
    parser,
    path_arg,
    positive_finite,
    run_script,
    within,
)

from ono_env.arena import MAX_GAMES, run_arena
from ono_env.arena.play import seatings
from ono_env.arena.stats import Z95, bounded_intervals, bounded_mean_interval

TABLES = {2: ["greedy", "color"],
          4: ["greedy", "color", "defensive", "random"],
          6: ["greedy", "color", "defensive", "random", "greedy", "color"],
          10: ["greedy", "color", "defensive", "random"] * 2 + ["greedy", "color"]}
AGAINST_RANDOM = {P: ["greedy"] + ["random"] * (P - 1) for P in TABLES}
"""Tables of one strong seat: ``greedy`` against ``random`` everywhere else (under ``ono``
its share is 97-99.9%, near the bound that the games added are for)."""
GROUPS = (("baselines", "basic", TABLES), ("greedy vs random", "basic", AGAINST_RANDOM),
          ("greedy vs random", "ono", AGAINST_RANDOM))
DEALS = {2: 6000, 4: 1500, 6: 3000, 10: 2000}
"""Deals of each table's population at ``--deals-scale 1``."""
SIZES = (5, 10, 25, 100, 400)
METHODS = ("games", "deals", "plain")
"""Today's interval (two games at each end), that of before (two deals), the plain one."""


def intervals(x: np.ndarray, lo: float, hi: float, method: str, g: int) -> tuple[np.ndarray,
                                                                               np.ndarray]:
    """``(low, high)`` of each row of samples ``x`` (R, n): ``bounded_mean_interval`` with
    ``games_per_deal`` ``g`` (``games``) or 1 (``deals``: two deals at each end), or the
    plain normal interval clipped to ``[lo, hi]``. Computed for all rows at once
    (``bounded_intervals``); the first rows are checked against ``bounded_mean_interval``."""
    R, n = x.shape
    mean = x.mean(axis=1)
    ss = ((x - mean[:, None]) ** 2).sum(axis=1)
    if method == "plain":
        half = Z95 * np.sqrt(ss / max(n - 1, 1) / n)
        return np.maximum(lo, mean - half), np.minimum(hi, mean + half)
    low, high = bounded_intervals(mean, ss, n, lo, hi, g if method == "games" else 1)
    for r in range(min(R, 3)):   # the library's own interval, to the last bits
        _m, a, b = bounded_mean_interval(x[r], lo, hi, g if method == "games" else 1)
        assert abs(a - low[r]) < 1e-9 and abs(b - high[r]) < 1e-9
    return low, high


def measure(group: str, rules: str, P: int, agents: list[str], deals: int, seed: int,
            resamples: int, rng: np.random.Generator) -> list[dict]:
    """One table's rows: each series at each size ``n``, each method's coverage and mean
    width (points)."""
    g = len(seatings(P))
    t = time.perf_counter()
    ar = run_arena(agents, rules, P, deals * g, seed, mirrored=True, rating=False)
    shares = [ar.per_deal(e)[1] for e in range(P)]
    series = [(f"{ar.labels[e]}", s, 0.0, 1.0) for e, s in enumerate(shares)]
    series.append((f"{ar.labels[0]} minus {ar.labels[1]}", shares[0] - shares[1], -1.0, 1.0))
    print(f"{group}, {rules}, {P} players: {deals:,} deals of {g} games in "
          f"{time.perf_counter() - t:.1f} s", file=sys.stderr)
    rows = []
    for name, v, lo, hi in series:
        mu = float(v.mean())
        for n in SIZES:
            x = v[rng.integers(0, len(v), size=(resamples, n))]
            row = {"tables": group, "rules": rules, "players": P, "games_per_deal": g,
                   "series": name, "mean": mu, "n": n}
            for method in METHODS:
                low, high = intervals(x, lo, hi, method, g)
                row[f"{method}_coverage"] = float(((low <= mu) & (mu <= high)).mean())
                row[f"{method}_width"] = float((high - low).mean() * 100)
            rows.append(row)
    return rows


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--deals-scale", type=float, default=1.0,
                    help="the populations' deals, times 6,000 / 1,500 / 3,000 / 2,000 at 2 / 4 / "
                         "6 / 10 players (default 1)")
    ap.add_argument("--resamples", type=int, default=20_000, help="samples of each size (default "
                                                                   "20,000)")
    ap.add_argument("--seed", type=int, default=11, help="the deals' and the samples' seed")
    ap.add_argument("--out", type=path_arg, required=True, help="folder of results.json and "
                                                               "results.md")
    args = ap.parse_args()
    script = "bench_interval_coverage"
    positive_finite(script, "--deals-scale", args.deals_scale)
    within(script, "--resamples", args.resamples, 100, 1_000_000)
    checked_seed(script, "--seed", args.seed)
    deals = {P: round(d * args.deals_scale) for P, d in DEALS.items()}
    # every seating of each deal is a game: past the arena's games, a refusal now (before: a
    # traceback at the first table over it, after the tables before it had played)
    if any(n * len(seatings(P)) > MAX_GAMES for P, n in deals.items()):
        most = math.floor(min(MAX_GAMES / (d * len(seatings(P))) for P, d in DEALS.items())
                          * 100) / 100   # two decimals, rounded down: a scale that is taken
        sys.exit(f"{script}: --deals-scale {args.deals_scale:g} gives more than "
                 f"{MAX_GAMES:,} games at a table; allowed: a scale of at most {most:g}")
    small = [P for P, d in deals.items() if d < max(SIZES)]
    if small:
        sys.exit(f"{script}: --deals-scale {args.deals_scale:g} gives {deals[small[0]]} deals at "
                 f"{small[0]} players; allowed: a scale that gives every table at least "
                 f"{max(SIZES)} deals (the largest sample)")
    out = out_folder(args.out, script, writes=("results.json", "results.md"))
    rng = np.random.default_rng(args.seed)
    rows = []
    for group, rules, tables in GROUPS:
        for P, agents in tables.items():
            rows += measure(group, rules, P, agents, deals[P], args.seed, args.resamples, rng)
    command = "python benchmarks/bench_interval_coverage.py " + shlex.join(sys.argv[1:])
    (out / "results.json").write_text(json.dumps(
        {"command": command, "deals": deals, "resamples": args.resamples, "rows": rows},
        indent=1) + "\n")
    lines = ["# How often the interval over mirrored deals holds the mean", "", f"`{command}`", "",
             f"The populations: {', '.join(f'{d:,} deals at {P} players' for P, d in deals.items())} "
             f"(each deal played in every seating: {', '.join(str(len(seatings(P))) for P in TABLES)} "
             f"games); {args.resamples:,} samples of each size drawn from each series (every "
             f"entrant's per-deal shares, and the first two entrants' per-deal difference). "
             f"Coverage: the lowest share of samples, over the table's series, whose 95% "
             f"interval held the population's mean; width: the mean width over the series, in "
             f"points. Tables: `baselines`, `basic` rules with `greedy`, `color`, `defensive` "
             f"and `random` in turn round the table (at 2 players `greedy` against `color`); "
             f"`greedy vs random`, `greedy` in one seat and `random` in every other.", "",
             "| tables | rules | players | deals | two games added (today) | two deals added "
             "(before) | plain normal |",
             "|---|---|---|---|---|---|---|"]
    for group, rules, tables in GROUPS:
        for P in tables:
            for n in SIZES:
                sel = [r for r in rows if (r["tables"], r["rules"], r["players"], r["n"])
                       == (group, rules, P, n)]
                cells = [f"{100 * min(r[f'{m}_coverage'] for r in sel):.1f}%, "
                         f"{np.mean([r[f'{m}_width'] for r in sel]):.1f} wide" for m in METHODS]
                lines.append(f"| {group} | {rules} | {P} | {n} | " + " | ".join(cells) + " |")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    run_script("bench_interval_coverage", main)
