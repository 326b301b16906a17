"""Pool mirrored arena runs of one pairing played with different seeds (say, one process per
core; ``ono-arena --mirrored --ray`` is the other way to use every core): the first entrant's mean share
of the wins per deal, with the arena's 95% interval over all the runs' deals; with ``--minus``,
the paired difference against runs of another agent on the same deals, run by run
(``ono_env.arena.paired_difference``'s checks), pooled the same way.

    python benchmarks/pool_mirrored.py docs/results/ladder/pimc-ppo-playout32-vs-maskable-seed13 \\
        docs/results/ladder/pimc-ppo-playout32-vs-maskable-seed14 \\
        --minus docs/results/ladder/ppo-vs-maskable-seed13 docs/results/ladder/ppo-vs-maskable-seed14

Each run is an ``arena.json`` (or its folder) saved by ``ono-arena --mirrored --out``. The
runs must seat the same entrants under the same rules and have different seeds (the same
seed would deal the same cards twice)."""

from __future__ import annotations

import sys

import numpy as np
from bench_args import parser

from ono_env.arena import bounded_mean_interval, check_pairable, mirrored_record, read_arena_json
from ono_env.arena.play import seatings
from ono_env.arena.results import arena_json_path, seating_matters


def first_shares(runs: list[dict], what: str) -> tuple[str, np.ndarray]:
    """The first entrant's name and its per-deal shares of every run, concatenated;
    ``ValueError`` when the runs do not pool."""
    first = runs[0]
    name = first["agents"][0]
    seeds = [r["seed"] for r in runs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"{what}: two runs have the same seed ({seeds}); pooled runs need "
                         f"different deals")
    shares = []
    for r in runs:
        if r["agents"] != first["agents"] or r["rules"] != first["rules"]:
            raise ValueError(f"{what}: the runs seat other entrants or play other rules "
                             f"({r['agents']} against {first['agents']})")
        if r["seating"] != first["seating"] and seating_matters(r["agents"],
                                                               r["rules"]["num_players"]):
            # (before: pooled, the one run's neighbours the order given, the other's drawn)
            raise ValueError(f"{what}: the runs seated their tables otherwise (seating "
                             f"{r['seating']} against {first['seating']}: 1 is the order the "
                             f"agents were given, before 2026-12-07); play the older again")
        shares.append(np.asarray(r["per_deal"][name]["share"], np.float64))
    return name, np.concatenate(shares)


def main(argv: list[str] | None = None) -> int:
    # bench_args' parser: an option given twice is refused (before: --minus A --minus B ran
    # with B alone)
    ap = parser(__doc__)
    ap.add_argument("runs", nargs="+", help="mirrored arena.json files (or their folders)")
    ap.add_argument("--minus", nargs="+", default=None,
                    help="runs of another first entrant on the same deals, one per run, in order")
    args = ap.parse_args(argv)
    try:
        runs = [mirrored_record(read_arena_json(p), repr(p)) for p in args.runs]
        name, a = first_shares(runs, "runs")
        g = len(seatings(runs[0]["rules"]["num_players"]))   # the games of a deal
        lines = []
        m, lo, hi = bounded_mean_interval(a, 0.0, 1.0, g)
        lines.append(f"{name}: {100 * m:.2f}% [{100 * lo:.2f}, {100 * hi:.2f}] over {len(a)} "
                     f"deals ({len(runs)} runs)")
        if args.minus is not None:
            if len(args.minus) != len(runs):
                raise ValueError(f"--minus names {len(args.minus)} runs for {len(runs)}; "
                                 f"one per run, in the same order")
            others = [mirrored_record(read_arena_json(p), repr(p)) for p in args.minus]
            for p, q in zip(args.runs, args.minus):   # before: +0.00 points, as measured
                if arena_json_path(p).resolve() == arena_json_path(q).resolve():   # read above
                    raise ValueError(f"--minus {q!r} is the run {p!r} itself; allowed: runs of "
                                     f"another first entrant on the same deals")
            for r, o in zip(runs, others):
                check_pairable(r, o)
            other, b = first_shares(others, "--minus runs")
            m, lo, hi = bounded_mean_interval(b, 0.0, 1.0, g)
            lines.append(f"{other}: {100 * m:.2f}% [{100 * lo:.2f}, {100 * hi:.2f}] on the "
                         f"same deals")
            m, lo, hi = bounded_mean_interval(a - b, -1.0, 1.0, g)
            lines.append(f"{name} - {other}: {100 * m:+.2f} points [{100 * lo:+.2f}, "
                         f"{100 * hi:+.2f}] over {len(a)} deals")
    except ValueError as exc:
        print(f"pool_mirrored: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
