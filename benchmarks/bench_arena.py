"""Arena speed: 100,000 two-player games of each baseline against random, on one core.

    python benchmarks/bench_arena.py            # 100,000 games per baseline, basic rules
    python benchmarks/bench_arena.py --games 20000 --rules classic

Prints the seconds spent playing and rating (the Luce model fitted to all the games) per
baseline.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")

from bench_args import at_least, at_most, checked_agent, distinct, parser, run_script

from ono_env.arena import MAX_GAMES, run_arena
from ono_env.rules import given_player_count, resolve_rules


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--games", type=int, default=100_000,
                    help="games per agent against random (default 100,000; the arena rounds up "
                         "to whole seatings)")
    ap.add_argument("--rules", default="basic", help="the preset played (default basic)")
    ap.add_argument("--agents", nargs="+", default=["greedy", "color", "defensive"],
                    help="the agents timed against random, each a registered name or a model "
                         "file (default: greedy color defensive)")
    args = ap.parse_args()
    at_least("bench_arena", "--games", args.games, 1)
    at_most("bench_arena", "--games", args.games, MAX_GAMES)
    try:
        rules = resolve_rules(args.rules, num_players=2)
    except (TypeError, ValueError) as exc:
        sys.exit(f"bench_arena: --rules {args.rules!r}: {exc}")
    given = given_player_count(args.rules)   # before: its count dropped for 2, silently
    if given is not None and given[0] != 2:
        sys.exit(f"bench_arena: --rules {args.rules!r}: its {given[1]} sets num_players="
                 f"{given[0]!r}; allowed: rules of 2 players (this benchmark plays 2)")
    distinct("bench_arena", "--agents", args.agents)   # before: the same row twice
    for name in args.agents:   # every agent before any game
        checked_agent("bench_arena", "--agents", name, rules)
    run_arena(["greedy", "random"], args.rules, 2, 64, seed=0)  # compile / warm up
    print(f"{args.rules} rules, 2 players, --games {args.games:,} per row (the arena rounds up "
          f"to whole seatings: the games column is what it played)")
    print(f"{'baseline':<10} {'games':>9} {'play s':>7} {'rating s':>8} {'games/s':>8} "
          f"{'win rate vs random':>20}")
    for name in args.agents:
        res = run_arena([name, "random"], args.rules, 2, args.games, seed=1)
        row = res.agent_rows()[0]
        played = row["games"]   # both entrants sit at every game: the games played
        print(f"{name:<10} {played:>9,} {res.seconds:>7.1f} {res.rating_seconds:>8.1f} "
              f"{played / res.seconds:>8.0f} {100 * row['win_rate']:>7.2f}% "
              f"[{100 * row['ci_low']:.2f}, {100 * row['ci_high']:.2f}]")


if __name__ == "__main__":
    run_script("bench_arena", main)
