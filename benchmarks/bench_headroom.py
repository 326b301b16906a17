"""How far above the best baseline any agent gets at the generalist's tables (2-10 players).

    python benchmarks/bench_headroom.py --out docs/results/generalist/headroom
    python benchmarks/bench_headroom.py --tables basic-4 --agents greedy,oracle-hands:16 --deals 50 --out /tmp/h

The generalist's target at 3, 4 and 6 players is a win share of 1.2 times the fair share in a
table where every other seat plays the preset's best baseline (``bench_generalist.py``, part
``many``). This script seats other agents in the same place, on the same mirrored deals, to
say how much room there is above the baseline at those tables:

- the best baseline itself (its share should be the fair one: a check of the table);
- ``ppo-any`` (the generalist, as in ``bench_generalist.py``);
- a search agent that plays fair (``pimc-ppo:16``: ``ppo-any``'s choice kept unless the
  search over sampled worlds clearly beats it; the specialist's where one fits);
- the CHEATING ceiling ``oracle-hands:16``, the same search seeing every opponent's hand: not
  a bound on what a fair agent can reach, but a measure of how much the hidden cards are
  worth at these tables (its plain argmax plays badly under ``ono``, see
  :mod:`ono_env.agents.search`; ``oracle-ppo:16``, ``pimc-ppo:16`` seeing every hand, is the
  same measure there).

When the agent named by ``--pair-with`` (default ``ppo-any``) is among the agents, every other
agent's share is also compared with its share on the same deals (the per-deal difference,
95% interval over deals; ``results.json`` names it ``paired_with`` and the difference
``minus_paired``; pages written before ``--pair-with`` existed always paired with
``ppo-any`` and call the difference ``vs_ppo_any``).

``--against``: the agents in every other seat, comma-separated (default ``best``, the
preset's best baseline); each table is played against each of them, and the pairing is within
one table and one opponent. ``--set FIELD=VALUE`` (repeatable) changes a rule of every table
(a field of :class:`ono_env.rules.RuleSet`, the value read as YAML: ``--set wild_cards=4``);
the page names the changes beside the preset.

``--tables``: ``<preset>-<players>`` names, 2-10 players (default: the five tables where
``ppo-any`` was short of 1.2x; at 2 players the table is the head to head with the best
baseline, as in part ``two``). ``--best-from``: the ``results.json`` of ``bench_generalist.py`` whose part
``two`` names each preset's best baseline. Mirrored deals, every seating of each deal, 95%
interval over deals, a game with no winner shared 1/N. Writes ``results.json`` and
``results.md`` into ``--out``; both name the SHA-256 of every model file played (a row's
``models``), so that a page made with an earlier ``ppo-any`` says which file it was.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time

# one thread a process: a second BLAS thread per process halves the speed of two
# processes side by side on two cores
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
import yaml
from bench_args import (
    checked_agent,
    checked_deals,
    checked_seed,
    distinct,
    out_folder,
    parser,
    path_arg,
    run_script,
)
from bench_generalist import (
    BEST_FROM_HELP,
    GENERALIST_RESULTS,
    RESULTS_OUT_HELP,
    _games,
    _line,
    _row,
    best_baselines,
    parse_tables,
    read_rows,
)

from ono_env.agents.base import CHEATING_MARK, marked
from ono_env.arena import run_arena
from ono_env.arena.play import seatings
from ono_env.arena.stats import bounded_mean_interval
from ono_env.rules import YamlLoader, resolve_rules

SHORT_TABLES = "basic-3,basic-4,basic-6,ono-4,ono-6"


AGENTS = "best,ppo-any,pimc-ppo:16,oracle-hands:16"


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--tables", default=SHORT_TABLES, help="<preset>-<players>, comma-separated")
    ap.add_argument("--agents", default=AGENTS,
                    help="agents for the first seat, comma-separated (best: the best baseline)")
    ap.add_argument("--against", default="best",
                    help="agents for every other seat, comma-separated (best: the best baseline)")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="a rule of every table changed (repeatable)")
    ap.add_argument("--deals", type=int, default=200, help="deals per table and agent")
    ap.add_argument("--seed", type=int, default=2026, help="the deals' seed (default 2026)")
    ap.add_argument("--best-from", type=path_arg, default=GENERALIST_RESULTS, help=BEST_FROM_HELP)
    ap.add_argument("--pair-with", default=None,
                    help="compare every other agent with this one of --agents on the same deals "
                         "(default: ppo-any, when it is among them)")
    ap.add_argument("--out", type=path_arg, required=True, help=RESULTS_OUT_HELP)
    args = ap.parse_args()
    best = best_baselines(read_rows(args.best_from, "bench_headroom"))
    tables = parse_tables(args.tables, best, "bench_headroom")
    checked_deals("bench_headroom", "--deals", args.deals, [n for _, n in tables])
    checked_seed("bench_headroom", "--seed", args.seed)
    overrides = {}
    for item in args.set:
        field, eq, value = item.partition("=")
        if not eq or not field:
            sys.exit(f"bench_headroom: --set {item!r}; allowed: FIELD=VALUE (a rule field)")
        if field == "num_players":
            sys.exit("bench_headroom: --set num_players: the player count comes from --tables "
                     "(<preset>-<players>)")
        if field in overrides:   # before: the last one was kept silently
            sys.exit(f"bench_headroom: --set {field}: given twice; allowed: each field once")
        try:   # as a rules file reads it (yes, 010 and the other YAML 1.1 forms refused)
            overrides[field] = yaml.load(value, Loader=YamlLoader)
        except yaml.YAMLError as exc:
            problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
            sys.exit(f"bench_headroom: --set {item!r}: the value cannot be read as YAML plain "
                     f"data ({problem}); allowed: FIELD=VALUE, VALUE in YAML")
    rules_of = {}
    for preset, n in tables:
        try:
            rules_of[preset, n] = resolve_rules(preset, num_players=n, **overrides)
        except (TypeError, ValueError) as exc:
            sys.exit(f"bench_headroom: --set at {preset}-{n}: {exc}")
    changed = ", ".join(f"{k}={v}" for k, v in overrides.items())
    against = distinct("bench_headroom", "--against", args.against.split(","))
    agents = distinct("bench_headroom", "--agents", args.agents.split(","))
    for option, names in (("--against", against), ("--agents", agents)):   # before any game
        for (preset, n), name in ((tn, a) for tn in tables for a in names):
            checked_agent("bench_headroom", option, best[preset] if name == "best" else name,
                          rules_of[preset, n], f"{preset}-{n}")
        for preset, n in tables:   # best is an agent of the list at some tables
            distinct("bench_headroom", f"{option} at {preset}-{n} (best: {best[preset]})",
                     [best[preset] if name == "best" else name for name in names])
    if args.pair_with is not None and args.pair_with not in agents:
        sys.exit(f"bench_headroom: --pair-with {args.pair_with!r}; allowed: one of --agents "
                 f"({', '.join(agents)})")
    pair_with = args.pair_with or "ppo-any"
    out_folder(args.out, "bench_headroom", writes=("results.json", "results.md"))
    rows = []
    for (preset, n), opp in ((tn, o) for tn in tables for o in against):
        b = best[preset]
        opp = b if opp == "best" else opp
        shares: dict[str, np.ndarray] = {}
        for agent in agents:
            who = b if agent == "best" else agent
            t = time.perf_counter()
            ar = run_arena([who] + [opp] * (n - 1), rules_of[preset, n], n, _games(args.deals, n),
                           args.seed, mirrored=True, rating=False)
            row = _row(ar, 0, "headroom", preset, n, f"{n - 1} x {opp}")
            row["agent"] = who
            if overrides:
                row["rules_changed"] = overrides
            row["cheating"] = ar.labels[0].endswith(CHEATING_MARK)   # as the arena marks it
            # the model files played, by their SHA-256: a registered name such as ppo-any
            # names another file once a new model ships (before: a page made with an earlier
            # ppo-any did not say which, and its command played the new one)
            row["models"] = dict(ar.models)
            row["seconds"] = time.perf_counter() - t
            deals, shares[who], _ = ar.per_deal(0)
            assert np.array_equal(deals, np.arange(args.deals))
            rows.append(row)
            print(f"{who:<16} {_line(row)}", file=sys.stderr)
        pair = b if pair_with == "best" else pair_with
        if pair in shares:   # each agent against --pair-with on the same deals
            base = shares[pair]
            for row in rows[-len(shares):]:
                if row["agent"] != pair:
                    # per-deal shares of two agents in the same seat of the same deals (one
                    # seed): their difference with the arena's 95% interval over the deals
                    row["paired_with"] = pair
                    row["minus_paired"] = list(bounded_mean_interval(
                        shares[row["agent"]] - base, -1.0, 1.0, len(seatings(n))))
    command = "python benchmarks/bench_headroom.py " + shlex.join(sys.argv[1:])
    (args.out / "results.json").write_text(json.dumps({"command": command, "rows": rows},
                                                      indent=1) + "\n")
    lines = ["# Headroom at the generalist's tables", "", f"`{command}`", "",
             "Each agent in one seat, " + ("the preset's best baseline" if against == ["best"]
                                           else "the agent named under 'against'")
             + " in every other" + (f"; every table's rules changed: {changed}" if changed else "")
             + "; mirrored deals "
             "(every seating of each deal), 95% interval over deals. An agent marked "
             "(cheating) sees every hand.", "",
             "| preset | players | agent | against | share | 95% interval | x fair | "
             f"minus {pair_with}'s share, same deals [95%] | deals | seconds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        d = r.get("minus_paired")
        vs = "" if d is None else f"{100 * d[0]:+.1f} [{100 * d[1]:+.1f}, {100 * d[2]:+.1f}]"
        who = marked(r["agent"], r["cheating"])
        preset = f"{r['preset']} ({changed})" if changed else r["preset"]
        lines.append(f"| {preset} | {r['players']} | {who} | {r['opponent']} | "
                     f"{100 * r['share']:.1f}% | [{100 * r['low']:.1f}, {100 * r['high']:.1f}] | "
                     f"{r['share'] / r['fair']:.2f} | {vs} | {r['deals']:,} | {r['seconds']:.0f} |")
    models = {label: sha for r in rows for label, sha in r["models"].items()}
    if models:
        lines += ["", "Model files played (SHA-256): " + "; ".join(
            f"`{label}` {sha}" for label, sha in sorted(models.items())) + "."]
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    run_script("bench_headroom", main)
