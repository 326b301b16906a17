"""A search that knows its opponents' policy, at several margins, paired with its prior.

    python benchmarks/bench_search_margins.py --table ono-6 --worlds 16 --margins 0.3,0.2,0.1 \
        --deals 1000 --out docs/results/generalist/ono-6p-search/worlds-16
    python benchmarks/bench_search_margins.py --table basic-3 --worlds 2 --margins 0.5 --deals 4 --out /tmp/s

A policy (``--model``: ``ppo-any`` or a version-2 model file) is the prior of a fair pimc
search (:class:`~ono_env.agents.search.SearchAgent`): at each decision with more
than one legal action it samples ``--worlds`` worlds from what the seat may know, plays every
legal action out in each with the policy's network in the seat and the baseline that really
sits in the other seats (``--against``, the preset's best baseline by default) in the others
(``playout_opponents``), and keeps the policy's choice unless another action's mean result
beats it by more than the margin. So the search models its opponents exactly as they play,
and sees nothing hidden. Each margin of ``--margins`` is one agent, played in one seat
against ``--against`` in every other on ``--deals`` mirrored deals (every seating of each
deal), one process each (``--procs`` at once), and paired with the policy itself on the same
deals (95% interval of the per-deal difference). A margin of 0 keeps the choice only where
nothing beats it at all. The page also says in how many of the search's decisions with a
choice it played another action than the policy's.

``--view hands`` makes the search CHEAT: its worlds hold every opponent's real hand (the
stock order still sampled), as ``oracle-ppo`` does; its rows are marked (cheating). Played
beside the fair one at the same margins, it says how much of what the fair search loses or
gains comes from the hands it has to guess. ``--view colors`` CHEATS less: its worlds deal
each opponent its real count of each colour (and of each wild type), the ranks at random
from the unseen cards of that colour (and, unlike the fair worlds, without the cards a hand
is publicly known to hold or lack). Between the two, it says how much of what the hands are
worth is their colours, which is what a `color` opponent's plays and named colours show.

Writes ``results.json`` and ``results.md`` into ``--out``.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
import time

# one thread a process: the policy's network runs in each process beside the others
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from bench_args import (
    checked_seed,
    map_in_processes,
    out_folder,
    parser,
    path_arg,
    run_script,
    within,
)
from bench_generalist import (
    RESULTS_OUT_HELP,
    _games,
    difference_cell,
    one_table_args,
    one_table_setup,
)

from ono_env.agents.base import marked
from ono_env.agents.search import MAX_MODEL_DEALS, MAX_WORLDS, MODEL_POLICIES, SearchAgent
from ono_env.arena import run_arena
from ono_env.arena.play import seatings
from ono_env.arena.stats import bounded_mean_interval
from ono_env.rules import RuleSet

SCRIPT = "bench_search_margins"
MAX_PROCS = 64
"""The most processes of ``--procs``."""


class CountingSearch(SearchAgent):
    """The search, counting its decisions with a choice and those where it played another
    action than its prior's (``last_prior``)."""

    decisions = 0
    overrides = 0

    def _act_game(self, game, rows, rng):   # type: ignore[no-untyped-def]
        # a subclass's own search: since 7 December 2026 the drivers give it worlds dealt
        # from the seat's view, not the live game (ono_env.agents.search.game_actions), so
        # its draws differ from the pages made before; what it sees is the same
        out = super()._act_game(game, rows, rng)
        chose = self.last_worlds > 0 if len(out) else np.zeros(0, np.bool_)
        self.decisions += int(chose.sum())
        self.overrides += int((chose & (out != self.last_prior)).sum())
        return out


def play(job: tuple) -> dict:
    """One agent's games: (margin or None for the policy itself, model, rules dict, worlds,
    baseline, deals, seed, view). Per-deal shares of the agent's seat, and the search's
    counts."""
    margin, model, rules_dict, worlds, against, deals, seed, view, named = job
    from ono_env.agents.registry import make_agent
    rules = RuleSet.from_dict(rules_dict)
    policy = make_agent(model, rules)
    agent: object = policy
    if margin is not None:
        agent = CountingSearch(rules, worlds, policy=policy, prior=policy, margin=margin,
                               playout_opponents=against, view=view, model_deals=named,
                               name=f"search:{worlds}@{margin:g}")
    n = rules.num_players
    t = time.perf_counter()
    ar = run_arena([agent] + [against] * (n - 1), rules, n, _games(deals, n), seed,
                   mirrored=True, rating=False)
    at, shares, _ = ar.per_deal(0)
    assert np.array_equal(at, np.arange(deals))
    return {"margin": margin, "shares": shares.tolist(), "seconds": time.perf_counter() - t,
            "decisions": getattr(agent, "decisions", 0), "overrides": getattr(agent, "overrides", 0)}


def main() -> None:
    ap = parser(__doc__)
    one_table_args(ap, "the baseline in every other seat, and in the playouts (best: the "
                       "preset's best baseline)")
    ap.add_argument("--worlds", type=int, default=16, help="worlds per decision (default 16)")
    ap.add_argument("--margins", default="0.3,0.2,0.1",
                    help="the margins, comma-separated, each once and 0 or more: one agent each "
                         "(default 0.3,0.2,0.1)")
    ap.add_argument("--view", choices=("fair", "hands", "colors"), default="fair",
                    help="what the search sees: fair (the seat's view; the default), hands "
                         "(CHEATING: every opponent's hand) or colors (CHEATING: how many cards "
                         "of each colour each hand holds)")
    ap.add_argument("--model-deals", type=int, default=1,
                    help="with a fair view: deal each world up to this many times until every "
                         "opponent's last play is what --against would have played with its "
                         "hand there (SearchAgent's model_deals; default 1: every world as dealt)")
    ap.add_argument("--deals", type=int, default=1000, help="mirrored deals (default 1,000)")
    ap.add_argument("--seed", type=int, default=2026, help="the deals' seed (default 2026)")
    ap.add_argument("--procs", type=int, default=2,
                    help=f"processes at once, one agent each (default 2, at most {MAX_PROCS})")
    ap.add_argument("--out", type=path_arg, required=True, help=RESULTS_OUT_HELP)
    args = ap.parse_args()
    within(SCRIPT, "--worlds", args.worlds, 1, MAX_WORLDS)
    within(SCRIPT, "--procs", args.procs, 1, MAX_PROCS)
    within(SCRIPT, "--model-deals", args.model_deals, 1, MAX_MODEL_DEALS)
    if args.model_deals > 1 and args.view != "fair":
        sys.exit(f"{SCRIPT}: --model-deals {args.model_deals} with --view {args.view}; allowed: "
                 f"--model-deals above 1 only with --view fair (the cheating views deal what "
                 f"they see)")
    checked_seed(SCRIPT, "--seed", args.seed)
    try:
        margins = [float(m) for m in args.margins.split(",")]
    except ValueError:
        margins = []
    if not margins or not all(math.isfinite(m) and m >= 0 for m in margins):
        sys.exit(f"{SCRIPT}: --margins {args.margins!r}; allowed: finite numbers of 0 or more, "
                 f"comma-separated")
    if len({f"{m:g}" for m in margins}) != len(margins):   # each names an agent of the page
        sys.exit(f"{SCRIPT}: --margins {args.margins!r}: a margin given twice (to 6 significant "
                 f"digits); allowed: each margin once")
    preset, players, against, rules, _, _ = one_table_setup(args, SCRIPT)
    if args.model_deals > 1 and against not in MODEL_POLICIES:
        sys.exit(f"{SCRIPT}: --model-deals {args.model_deals} with --against {against}; allowed: "
                 f"--model-deals above 1 only against a baseline the worlds can fit "
                 f"({', '.join(MODEL_POLICIES)})")
    out_folder(args.out, SCRIPT, writes=("results.json", "results.md"))
    jobs = [(m, args.model, rules.to_dict(), args.worlds, against, args.deals, args.seed,
             args.view, args.model_deals) for m in [None] + margins]
    made = map_in_processes(play, jobs, args.procs)
    base = np.asarray(made[0]["shares"])
    rows = []
    for m in made:
        shares = np.asarray(m["shares"])
        share, low, high = bounded_mean_interval(shares, 0.0, 1.0, len(seatings(players)))
        searched = m["margin"] is not None
        row = {"agent": f"search:{args.worlds}@{m['margin']:g}" if searched else args.model,
               "margin": m["margin"], "cheating": searched and args.view != "fair",
               "share": share, "low": low, "high": high,
               "fair": 1.0 / players, "deals": args.deals, "seconds": m["seconds"],
               "decisions": m["decisions"], "overrides": m["overrides"]}
        if searched:
            row["minus_model"] = list(bounded_mean_interval(shares - base, -1.0, 1.0,
                                                            len(seatings(players))))
        rows.append(row)
        print(f"{marked(row['agent'], row['cheating']):<32} {100 * share:.2f}% [{100 * low:.2f}, {100 * high:.2f}] "
              f"{m['seconds']:.0f} s", file=sys.stderr)
    command = f"python benchmarks/{SCRIPT}.py " + shlex.join(sys.argv[1:])
    result = {"command": command, "table": f"{preset}-{players}", "model": args.model,
              "against": against, "worlds": args.worlds, "view": args.view,
              "model_deals": args.model_deals, "seed": args.seed, "rows": rows}
    (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    seen = {"fair": "fair",
            "hands": "CHEATING (its worlds hold every opponent's real hand, the stock order "
                     "sampled)",
            "colors": "CHEATING (its worlds deal each opponent its real count of each colour and "
                      "of each wild type, the ranks at random from the unseen cards of that "
                      "colour)"}[args.view]
    named = ("" if args.model_deals == 1 else
             f" (each world dealt up to {args.model_deals} times until every opponent's last "
             f"play, and the colour it named after a wild, is what `{against}` would have "
             f"played with the hand the world gives it: SearchAgent's `model_deals`)")
    lines = [f"# A search that knows its opponents' policy: {preset} at {players} players",
             "", f"`{command}`", "",
             f"`{args.model}` as the prior of a {seen} pimc search with {args.worlds} worlds a "
             f"decision{named}, its playouts played by the policy's network in its seat and `{against}` "
             f"in the others, as at the table; each in one seat, `{against}` in every other; "
             f"{args.deals:,} mirrored deals (every seating of each deal), 95% intervals over "
             f"deals. 'Overridden': of the search's decisions with a choice, those where it "
             f"played another action than `{args.model}`'s.", "",
             f"| agent | margin | share | 95% interval | x fair | minus {args.model}'s share, "
             f"same deals [95%] | overridden | seconds |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        d = r.get("minus_model")
        vs = "" if d is None else difference_cell(d)
        over = (f"{r['overrides']:,} of {r['decisions']:,} ({r['overrides'] / r['decisions']:.1%})"
                if r["decisions"] else "")
        margin = "" if r["margin"] is None else f"{r['margin']:g}"
        lines.append(f"| {marked(r['agent'], r['cheating'])} | {margin} | {100 * r['share']:.2f}% | "
                     f"[{100 * r['low']:.2f}, {100 * r['high']:.2f}] | {r['share'] / r['fair']:.2f} "
                     f"| {vs} | {over} | {r['seconds']:.0f} |")
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    run_script(SCRIPT, main)
