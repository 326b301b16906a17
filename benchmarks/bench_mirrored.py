"""How many games do mirrored deals save? ``basic``, 2 players: ``greedy`` against ``random``
and against ``ppo-basic-2p``, the same number of games played as independent deals and as
mirrored deal pairs (seats swapped, same cards).

    python benchmarks/bench_mirrored.py --games 20000 --out docs/results/ladder/mirrored.json

For each pairing it prints the win rate and 95% half-width of both formats and the factor
of games the mirrored format needs for the interval of independent games:
``2 * sd_deal**2 / (p * (1 - p))`` (sd_deal: standard deviation of a deal pair's mean score;
p(1-p): the variance of one independent game)."""

from __future__ import annotations

import json
import math
import shlex
import sys
import time
from typing import Any

from bench_args import (
    at_least,
    at_most,
    checked_agent,
    checked_seed,
    distinct,
    out_file,
    parser,
    run_script,
)

from ono_env.arena import MAX_GAMES, Z95, run_arena
from ono_env.rules import resolve_rules


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--games", type=int, default=20000,
                    help="games of each format per pairing, at least 4 (default 20,000)")
    ap.add_argument("--seed", type=int, default=0, help="the deals' seed (default 0)")
    ap.add_argument("--opponents", nargs="+", default=["random", "ppo-basic-2p"],
                    help="greedy's opponents (default: random ppo-basic-2p)")
    ap.add_argument("--out", default=None,
                    help="a new JSON file for the rows (default: none, printed only)")
    args = ap.parse_args()
    distinct("bench_mirrored", "--opponents", args.opponents)   # before: measured twice
    at_least("bench_mirrored", "--games", args.games, 4)   # two mirrored deals at least
    at_most("bench_mirrored", "--games", args.games, MAX_GAMES)
    checked_seed("bench_mirrored", "--seed", args.seed)
    rules = resolve_rules("basic", num_players=2)
    for opp in args.opponents:   # every opponent before any game
        checked_agent("bench_mirrored", "--opponents", opp, rules)
    if args.out is not None:   # '' too: refused by name (before: taken as no --out)
        out_file(args.out, "bench_mirrored")
    rows: list[dict] = []
    try:
        for opp in args.opponents:
            rows.append(measure(args, opp))
    except KeyboardInterrupt:   # the pairings finished are kept (before: a traceback, no file)
        if rows and args.out is not None:
            write(args, rows)
            print(f"bench_mirrored: the {len(rows)} pairing(s) that finished are in {args.out}",
                  file=sys.stderr)
        raise
    if args.out is not None:
        write(args, rows)


def measure(args: Any, opp: str) -> dict:
    """One pairing's row (printed as it is measured): greedy against ``opp``, independent and
    mirrored deals."""
    t = time.perf_counter()
    ind = run_arena(["greedy", opp], "basic", 2, args.games, args.seed, rating=False)
    mir = run_arena(["greedy", opp], "basic", 2, args.games, args.seed, rating=False,
                    mirrored=True)
    a = ind.agent_rows()[0]
    p = a["win_rate"]
    pr = mir.paired(0)
    # a share of 0 or 1 has no spread to compare: null in the JSON (before: NaN, which no
    # strict JSON reader takes, and "0 games" for the independent games)
    spread = 0 < p < 1
    factor = 2 * pr["sd"] ** 2 / (p * (1 - p)) if spread else None
    # the games played, not --games: each run rounds up to whole seatings or deals
    row = {"pairing": f"greedy vs {opp}", "games": a["games"],
           "independent": {"win_rate": p, "half_width": (a["ci_high"] - a["ci_low"]) / 2,
                           "games_for_pm_0.35pt": math.ceil(p * (1 - p) * (Z95 / 0.0035) ** 2)
                           if spread else None},
           "mirrored": {"win_rate": pr["rate"], "deals": pr["deals"], "games": pr["games"],
                        "half_width": (pr["high"] - pr["low"]) / 2, "sd_deal": pr["sd"],
                        # one deal pair at least (its spread 0: every pair scored alike)
                        "games_for_pm_0.35pt": max(2, math.ceil(2 * pr["sd"] ** 2 * (Z95 / 0.0035) ** 2))},
           "mirrored_games_per_independent_game": factor,
           "seconds": time.perf_counter() - t}
    print(f"greedy vs {opp:<14} independent {100 * p:5.2f} +-{100 * row['independent']['half_width']:.2f}"
          f"   mirrored {100 * pr['rate']:5.2f} +-{100 * row['mirrored']['half_width']:.2f}"
          f" ({pr['deals']} deals)   games needed: "
          + (f"x{factor:.2f}   (+-0.35 pt: {row['independent']['games_for_pm_0.35pt']:,} vs "
             f"{row['mirrored']['games_for_pm_0.35pt']:,} games)" if factor is not None else
             "- (one side won every game: no spread to compare)"), flush=True)
    return row


def write(args: Any, rows: list[dict]) -> None:
    """The rows as JSON at ``--out``, ``complete`` false where a Ctrl-C cut the run short."""
    with open(args.out, "w") as fh:
        # each value quoted as a shell reads it back (before: a path with a space was two words)
        json.dump({"command": "python benchmarks/bench_mirrored.py " + " ".join(
            f"--{k} {shlex.quote(str(v))}" if not isinstance(v, list)
            else f"--{k} " + " ".join(map(shlex.quote, v))
            for k, v in vars(args).items() if v is not None), "rows": rows,
            "complete": len(rows) == len(args.opponents)}, fh, indent=2)


if __name__ == "__main__":
    run_script("bench_mirrored", main)
