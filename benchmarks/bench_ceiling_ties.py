"""Why the cheating ceilings lose under ``ono``: how they break ties.

    python benchmarks/bench_ceiling_ties.py                       # ono-2p and basic-2p, 500 deals
    python benchmarks/bench_ceiling_ties.py --tables ono-2p --deals 2000

The ceilings ``oracle-hands:N`` and ``oracle:N`` (:mod:`ono_env.agents.search`) take the
action with the best mean playout result and break ties uniformly at random; ``pimc`` keeps
greedy's choice unless it is beaten by a margin. When every action's playouts end the same way
(all lost, or all won: playouts of a single round score 1 or 0), a ceiling picks any legal
action, a voluntary draw or a false catch included. This plays each ceiling against
``greedy`` on the benchmark suite's deals twice: as shipped, and with ties (only ties) broken
by greedy's choice (``SearchAgent(margin=0)``), and writes
``docs/results/suite-<version>/ceiling-ties.md`` and ``.json`` (``--suite``; refused when the
files there hold more deals or other tables than this run would write).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from bench_args import out_folder, parser, run_script, within

from ono_env.agents import make_agent
from ono_env.agents.search import SearchAgent
from ono_env.arena.suite import MAX_DEALS, load_suite, play_pairing, select_tables

ROOT = Path(__file__).resolve().parent.parent
CEILINGS = {"oracle-hands:8": ("hands", 8), "oracle:4": ("all", 4)}


def kept_results(path: Path, tables: list[str], deals: int) -> None:
    """One error, before any game, when writing ``path`` (``ceiling-ties.json``, replaced by
    every run) would lose what it holds: rows measured with more deals than ``deals``, or at a
    table that is not in ``tables``; a run with as many deals or more at the same tables
    replaces it (the page's regeneration)."""
    if not path.exists():
        return
    try:
        rows = json.loads(path.read_text())["rows"]
        had = {(r["table"], int(r["deals"])) for r in rows}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        sys.exit(f"bench_ceiling_ties: {path}: cannot read the rows measured before "
                 f"({type(exc).__name__}: {exc}); allowed: remove it, or one this script wrote")
    more = sorted(f"{t} ({d:,} deals)" for t, d in had if d > deals)
    if more:
        sys.exit(f"bench_ceiling_ties: --deals {deals}: {path} holds rows measured with more "
                 f"deals: {', '.join(more)}; allowed: --deals {max(d for _, d in had)} or more, "
                 f"or remove it")
    gone = sorted({t for t, _ in had} - set(tables))
    if gone:
        sys.exit(f"bench_ceiling_ties: --tables {' '.join(tables)}: {path} also holds "
                 f"{', '.join(gone)}, which this run would drop; allowed: --tables with them, "
                 f"or remove it")


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--tables", nargs="*", default=["ono-2p", "basic-2p"],
                    help="the suite's tables (default ono-2p basic-2p; --tables with no names: "
                         "every table of the suite)")
    ap.add_argument("--deals", type=int, default=500,
                    help=f"deals per table, 2 to {MAX_DEALS:,} (default 500)")
    ap.add_argument("--suite", default="latest",
                    help="the suite version whose deals are played, and whose folder the page "
                         "is written to: docs/results/suite-<version>/ceiling-ties.md and .json "
                         "(default: the latest; there is no --out)")
    args = ap.parse_args()
    within("bench_ceiling_ties", "--deals", args.deals, 2, MAX_DEALS)
    try:
        suite = load_suite(args.suite)
    except ValueError as exc:
        sys.exit(f"bench_ceiling_ties: --suite {args.suite!r}: {exc}")
    try:
        tables = select_tables(suite, args.tables)
    except ValueError as exc:
        sys.exit(f"bench_ceiling_ties: --tables {' '.join(args.tables)}: {exc}")
    # the page's folder made and writable before any game (before: a missing one was a
    # traceback once every pairing had been played)
    out = out_folder(ROOT / "docs" / "results" / f"suite-{suite.version}", "bench_ceiling_ties",
                     option="--suite")
    kept_results(out / "ceiling-ties.json", [t.name for t in tables], args.deals)
    rows = []
    for t in tables:
        rules = t.rules
        greedy = make_agent("greedy", rules)
        for name, (view, worlds) in CEILINGS.items():
            variants = {"as shipped (ties at random)": make_agent(name, rules),
                        "ties broken by greedy's choice": SearchAgent(
                            rules, worlds, "greedy", view, name=f"{name} (ties to greedy)",
                            margin=0.0)}
            for how, agent in variants.items():
                t0 = time.perf_counter()
                r = play_pairing(rules, agent, greedy, args.deals, t.seed, suite.batch_size)
                row = {"table": t.name, "ceiling": name, "ties": how, **r,
                       "seconds": round(time.perf_counter() - t0, 1)}
                rows.append(row)
                print(f"{t.name} {name:>15} {how:<32} {100 * r['rate']:5.1f}% "
                      f"[{100 * r['low']:.1f}, {100 * r['high']:.1f}] {row['seconds']} s", flush=True)
    command = " ".join(["python benchmarks/bench_ceiling_ties.py --tables", *args.tables,
                        f"--deals {args.deals} --suite {suite.version}"])   # pinned, not 'latest'
    (out / "ceiling-ties.json").write_text(json.dumps({"command": command, "rows": rows},
                                                      indent=1) + "\n")
    lines = [f"Each cheating ceiling against `greedy` on suite version {suite.version}'s deals "
             f"({args.deals:,} per table, each played with the ceiling in both seats): as "
             "shipped, and with ties broken by greedy's choice. Regenerate with "
             f"`{command}`.", "",
             "| table | ceiling | ties | win rate [95%] |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['table']} | {r['ceiling']} (cheating) | {r['ties']} | "
                     f"{100 * r['rate']:.1f}% [{100 * r['low']:.1f}, {100 * r['high']:.1f}] |")
    (out / "ceiling-ties.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {(out / 'ceiling-ties.md').relative_to(ROOT)}")


if __name__ == "__main__":
    run_script("bench_ceiling_ties", main)
