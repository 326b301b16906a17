"""A strength ladder: head to head with 95% intervals over mirrored deals, a Bradley-Terry
rating per agent (Elo scale, ``random`` = 0; ``greedy`` = 0 in ``classic``, where
``random`` never wins a match) and the time per decision of each agent on one
core, for ``basic`` 2 players (the default), ``classic`` 2 players and ``basic`` 4 players.

    python benchmarks/bench_ladder.py --out docs/results/ladder
    python benchmarks/bench_ladder.py --rules classic --games-cheap 1000 --games-search 40 \
        --out docs/results/ladder/classic-2p-ladder
    python benchmarks/bench_ladder.py --players 4 --games-cheap 12000 --games-search 4800 \
        --out docs/results/ladder/basic-4p-ladder

Two players: the baselines (``random``, ``greedy``, ``color``, ``defensive`` and the shipped
policy ``ppo-<rules>-2p``) play a full round robin with ``--games-cheap`` games per pairing;
each search agent and each CHEATING ceiling plays ``random``, ``greedy`` and the shipped
policy, and the search agents and ceilings play each other along the chain of the ladder's
``pairs``, with ``--games-search`` games per pairing (half as many deals: every deal is
played twice, seats swapped).

Four players: a seat's fair share of the wins is 25%. The five baselines play every table of
four of them (``--games-cheap`` games in all, every deal in all 24 seatings); each search
agent and ceiling plays one table with ``random``, ``greedy`` and ``ppo-basic-4p``
(``--games-search`` games). The table reports each agent's win share with its interval; the
rating is Bradley-Terry over pairs of seats at a table (the winner of a game beats each of the
other three).

Time per decision: the mean wall time of one call for one position with more than one legal
action (positions from greedy-against-greedy games), one thread (torch too). ``--retime
LADDER_JSON`` measures it again alone, for a run whose games shared the machine:

    python benchmarks/bench_ladder.py --retime docs/results/ladder/ladder.json

``--render LADDER_JSON`` plays nothing and rates and tabulates its results again. Both rewrite
LADDER_JSON and the ``.md`` beside it, or with ``--out`` write ``ladder.json`` and
``ladder.md`` into that folder instead (refused when it holds them).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from bench_args import checked_seed, out_folder, parser, path_arg, run_script, within

from ono_env import VecGame
from ono_env.agents import make_agent
from ono_env.agents.base import marked
from ono_env.arena import MAX_GAMES, run_arena

BASELINE_NAMES = ["random", "greedy", "color", "defensive"]
LADDERS = {
    ("basic", 2): {
        "search": ["pimc:32", "pimc:128", "pimc-ppo:128", "pimc-ppo-playout:32", "ismcts:500",
                   "oracle-hands:64", "oracle:16"],
        "pairs": [("pimc:128", "pimc:32"), ("pimc:128", "ismcts:500"),
                  ("pimc-ppo:128", "pimc:128"), ("pimc-ppo-playout:32", "pimc-ppo:128"),
                  ("oracle-hands:64", "pimc-ppo:128"),
                  ("oracle:16", "oracle-hands:64"), ("oracle:16", "pimc-ppo:128")]},
    ("classic", 2): {
        "search": ["pimc:8", "pimc:32", "pimc-ppo-playout:64", "oracle-hands:16", "oracle:8"],
        "pairs": [("pimc:32", "pimc:8"), ("pimc-ppo-playout:64", "pimc:32"),
                  ("oracle-hands:16", "pimc-ppo-playout:64"), ("oracle:8", "oracle-hands:16")],
        # random never wins a 500-point match: its distance to the others is the prior's
        "anchor": "greedy"},
    ("basic", 4): {
        "search": ["pimc:8", "pimc:32", "pimc-ppo-playout:16", "oracle-hands:16", "oracle:8"],
        "pairs": []},
}
"""The search agents (two budgets of ``pimc``, the strongest fair search, the ceilings) of
each ladder, the pairings along it (two players), and the agent rated 0 (``random`` unless
given)."""
CHEATING_PREFIX = "oracle"


def anchors(rules: str, players: int) -> list[str]:
    return ["random", "greedy", f"ppo-{rules}-{players}p"]


def bradley_terry(names: list[str], results: list[dict], anchor: str = "random",
                  iters: int = 2000) -> dict[str, float]:
    """Elo-scale ratings r (P(i beats j) = 1 / (1 + 10**((r_j - r_i) / 400))) maximising the
    likelihood of the pairings' win shares (MM algorithm), ``anchor`` at 0."""
    k = {n: i for i, n in enumerate(names)}
    K = len(names)
    wins = np.zeros((K, K))
    for r in results:
        i, j, g = k[r["a"]], k[r["b"]], r["games"]
        wins[i, j] += r["rate"] * g
        wins[j, i] += (1 - r["rate"]) * g
    games = wins + wins.T
    p = np.ones(K)
    for _ in range(iters):
        w = wins.sum(axis=1) + 0.5             # a tiny prior keeps an unbeaten agent finite
        den = (games / (p[:, None] + p[None, :])).sum(axis=1) + 1.0 / (p + 1.0)
        p = w / den
        p /= p[k[anchor]]
    return {n: float(400 * math.log10(p[k[n]])) for n in names}


def decision_times(agents: list[str], positions: int = 200, seed: int = 0,
                   rules: str = "basic", players: int = 2) -> dict[str, float]:
    import torch
    torch.set_num_threads(1)
    game = VecGame(rules, 512, seed=seed, num_players=players)
    greedy = make_agent("greedy", game.rules)
    rng = np.random.default_rng(seed)
    for _ in range(int(rng.integers(5, 25))):      # some play so positions vary
        mask = game.legal_mask().copy()
        obs = game.observe(game.state.current.astype(np.int64))
        game.step(greedy.act(obs, mask, rng), active=~game.finished)
        game.reset(which=game.finished) if game.finished.any() else None
    mask = game.legal_mask().copy()
    rows = np.flatnonzero(~game.finished & (mask.sum(axis=1) > 1))[:positions]
    obs = game.observe(game.state.current.astype(np.int64))
    out = {}
    for spec in agents:
        agent = make_agent(spec, game.rules)
        def one(i, agent=agent):
            if getattr(agent, "uses_game", False):
                return agent.act_game(game, np.array([i]), rng)
            return agent.act(obs[i:i + 1], mask[i:i + 1], rng)
        one(rows[0])                                   # warm up (compile, load)
        t = time.perf_counter()
        for i in rows:
            one(i)
        out[spec] = 1000 * (time.perf_counter() - t) / len(rows)
        print(f"  {spec:<16} {out[spec]:8.3f} ms/decision", flush=True)
    return out


PLAY_DEFAULTS = {"rules": "basic", "players": 2, "games_cheap": 10000, "games_search": 1000,
                 "seed": 0}
"""The play flags' defaults, filled in after --render and --retime refuse any play flag given."""


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--rules", choices=["basic", "classic"], default=None,
                    help="the preset (default basic)")
    ap.add_argument("--players", type=int, choices=[2, 4], default=None,
                    help="players (default 2; 4 only with basic)")
    ap.add_argument("--games-cheap", type=int, default=None,
                    help="games per pairing (per table at 4 players) of the baselines "
                         "(default 10,000)")
    ap.add_argument("--games-search", type=int, default=None,
                    help="games per pairing (per table) of a search agent or ceiling "
                         "(default 1,000)")
    ap.add_argument("--seed", type=int, default=None, help="the deals' seed (default 0)")
    ap.add_argument("--out", type=path_arg, default=None,
                    help="the folder of ladder.json and ladder.md (default docs/results/ladder; "
                         "refused when it holds them); with --render or --retime: where their "
                         "ladder.json and ladder.md go instead of over LADDER_JSON and beside it")
    again = ap.add_mutually_exclusive_group()
    again.add_argument("--render", metavar="LADDER_JSON", type=path_arg,
                       help="play nothing: rate and tabulate the results of an earlier run again")
    again.add_argument("--retime", metavar="LADDER_JSON", type=path_arg,
                       help="play nothing: time every agent of an earlier run again (on a quiet "
                            "machine: the games of a run may share it) and tabulate")
    args = ap.parse_args()
    path = args.retime or args.render
    if path:
        flag = "--retime" if args.retime else "--render"
        given = [f"--{k.replace('_', '-')}" for k in PLAY_DEFAULTS if getattr(args, k) is not None]
        if given:   # before: taken and ignored (the file says what was played), and one given
            # at its default value passed
            sys.exit(f"bench_ladder: {flag} plays nothing: {', '.join(given)} "
                     f"{'is' if len(given) == 1 else 'are'} not used there (LADDER_JSON says "
                     f"what was played); allowed: --out")
        try:   # every key the rating and the table read, before anything is timed or written
            data = json.loads(path.read_text())
            data["results"], data["ms_per_decision"], data["ratings"]
            anchor = LADDERS[(data["rules"], data["players"])].get("anchor", "random")
            table(data | {"ratings": bradley_terry(list(data["ratings"]), data["results"],
                                                    anchor, iters=1)})
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError,
                StopIteration) as e:
            sys.exit(f"bench_ladder: {flag} {path}: not a ladder.json written by this script "
                     f"({type(e).__name__}: {e}); allowed: a ladder.json of bench_ladder.py")
        # with --out, the file and its page go there (refused when it holds them); without
        # it, over LADDER_JSON and beside it
        target = path if args.out is None else out_folder(
            args.out, "bench_ladder", writes=("ladder.json", "ladder.md")) / "ladder.json"
        if args.retime:
            data["ms_per_decision"] = decision_times(list(data["ms_per_decision"]),
                                                     rules=data["rules"], players=data["players"])
            data["retimed"] = True
        data["anchor"] = LADDERS[(data["rules"], data["players"])].get("anchor", "random")
        data["ratings"] = bradley_terry(list(data["ratings"]), data["results"], data["anchor"])
        write_ladder(data, target)
        return
    for k, default in PLAY_DEFAULTS.items():   # None above: given or not, at any value
        if getattr(args, k) is None:
            setattr(args, k, default)
    key = (args.rules, args.players)
    if key not in LADDERS:
        ap.error(f"no ladder for {args.players}-player {args.rules}; there are: "
                 + ", ".join(f"{r} {p}p" for r, p in LADDERS))
    deals2 = 2 * math.factorial(args.players)   # two mirrored deals: an interval over deals
    within("bench_ladder", "--games-cheap", args.games_cheap, deals2, MAX_GAMES)
    within("bench_ladder", "--games-search", args.games_search, deals2, MAX_GAMES)
    checked_seed("bench_ladder", "--seed", args.seed)
    if args.out is None:   # the repository's, from any working directory (before: a
        # docs/results/ladder made in the current one)
        args.out = "docs/results/ladder"
        out = out_folder(Path(__file__).resolve().parent.parent / args.out, "bench_ladder",
                         writes=("ladder.json", "ladder.md"))
    else:
        out = out_folder(args.out, "bench_ladder", writes=("ladder.json", "ladder.md"))
    t0 = time.perf_counter()
    search = LADDERS[key]["search"]
    baselines = BASELINE_NAMES + [f"ppo-{args.rules}-{args.players}p"]
    play = two_player if args.players == 2 else four_player
    results: list[dict] = []   # filled as each pairing (table) ends: kept on a Ctrl-C
    shares: list[dict] = []
    try:
        play(args, baselines, search, LADDERS[key]["pairs"], results, shares)
    except KeyboardInterrupt:   # before: a traceback, and every pairing played lost
        if results or shares:
            partial = out / "ladder.partial.json"
            # what played them too (before: the pairings alone, whichever run they were of)
            partial.write_text(json.dumps(
                {"complete": False, "rules": args.rules, "players": args.players,
                 "games_cheap": args.games_cheap, "games_search": args.games_search,
                 "seed": args.seed, "results": results, "shares": shares}, indent=1) + "\n")
            print(f"bench_ladder: the pairings that finished are in {partial}", file=sys.stderr)
        raise
    names = baselines + search
    anchor = LADDERS[key].get("anchor", "random")
    ratings = bradley_terry(names, results, anchor)
    print("time per decision (one position per call, one thread):")
    times = decision_times(names, rules=args.rules, players=args.players)
    flags = "" if key == ("basic", 2) else f"--rules {args.rules} --players {args.players} "
    data = {"command": f"python benchmarks/bench_ladder.py {flags}--games-cheap "
                       f"{args.games_cheap} --games-search {args.games_search} --seed {args.seed} "
                       f"--out {args.out}",
            "rules": args.rules, "players": args.players, "mirrored": True, "results": results,
            "ratings": ratings, "anchor": anchor, "ms_per_decision": times,
            "cheating": sorted(n for n in names if n.startswith(CHEATING_PREFIX)),
            "seconds": time.perf_counter() - t0}
    if shares:
        data["shares"] = shares
    write_ladder(data, out / "ladder.json")
    (out / "ladder.partial.json").unlink(missing_ok=True)   # an earlier stopped run's: done now


def two_player(args, baselines, search, pairs, results: list[dict], shares: list[dict]) -> None:
    """Head to head: the baselines' round robin, each search agent against the anchors, the
    pairs along the ladder; each pairing's row added to ``results`` as it ends."""
    todo = [(a, b, args.games_cheap) for i, a in enumerate(baselines) for b in baselines[i + 1:]]
    todo += [(s, a, args.games_search) for s in search for a in anchors(args.rules, 2)]
    todo += [(a, b, args.games_search) for a, b in pairs]
    for a, b, n in todo:
        t = time.perf_counter()
        res = run_arena([a, b], args.rules, 2, n, args.seed, rating=False, mirrored=True)
        pr = res.paired(0)
        results.append({"a": a, "b": b, "games": pr["games"], "deals": pr["deals"],
                        "rate": pr["rate"], "low": pr["low"], "high": pr["high"],
                        "seconds": time.perf_counter() - t})
        print(f"{a:>16} vs {b:<16} {100 * pr['rate']:5.1f} [{100 * pr['low']:.1f}, "
              f"{100 * pr['high']:.1f}]  {pr['deals']} deals  {time.perf_counter() - t:6.1f} s",
              flush=True)


def four_player(args, baselines, search, pairs, results: list[dict], shares: list[dict]) -> None:
    """Tables of four: the baselines' every table, then each search agent with the anchors.
    Adds to ``results`` the pairs of seats (winner beats the others) for the rating, and to
    ``shares`` every agent's win share at each of its tables, as each table ends."""
    tables = [baselines] + [[s] + anchors(args.rules, 4) for s in search]
    for k, agents in enumerate(tables):
        t = time.perf_counter()
        n = args.games_cheap if k == 0 else args.games_search
        res = run_arena(agents, args.rules, 4, n, args.seed, rating=False, mirrored=True)
        r = res.records
        for e, name in enumerate(agents):
            pr = res.paired(e)
            shares.append({"agent": name, "table": list(agents), "games": pr["games"],
                           "deals": pr["deals"], "rate": pr["rate"], "low": pr["low"],
                           "high": pr["high"]})
            print(f"{name:>20} at [{', '.join(agents)}] {100 * pr['rate']:5.1f} "
                  f"[{100 * pr['low']:.1f}, {100 * pr['high']:.1f}]  {pr['deals']} deals",
                  flush=True)
        for i in range(len(agents)):
            for j in range(i + 1, len(agents)):
                both = (r.entrants == i).any(axis=1) & (r.entrants == j).any(axis=1)
                wi = (r.wins * (r.entrants == i))[both].sum()
                wj = (r.wins * (r.entrants == j))[both].sum()
                if wi + wj > 0:   # games: the pair's comparisons (the wins of either)
                    results.append({"a": agents[i], "b": agents[j], "games": float(wi + wj),
                                    "deals": int(np.unique(r.deal[both]).size),
                                    "rate": float(wi / (wi + wj)),
                                    "low": None, "high": None,
                                    "seconds": 0.0})
        print(f"  table {k} played in {time.perf_counter() - t:.0f} s", flush=True)


def write_ladder(data: dict, path: Path) -> None:
    """The ladder as JSON at ``path`` (strict: :func:`strict_json`) and as its table beside
    it (``.md``), the table built before either file is written; the table printed."""
    strict_json(data)
    text = table(data)
    path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n")
    path.with_suffix(".md").write_text(text + "\n")
    print(text)


def strict_json(data: dict) -> None:
    """Turn the NaN that this script once wrote for the bounds of a four-player ladder's
    pairs (they have no interval), and any other non-finite number of a result, rating, share
    or time, into null, in place: JSON has no NaN, and strict readers (JavaScript's
    ``JSON.parse``, ``jq``) refuse a file that holds one."""
    def finite(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: finite(v) for k, v in x.items()}
        if isinstance(x, list):
            return [finite(v) for v in x]
        return x

    data.update(finite(data))


def label(n: str) -> str:
    return marked(n, n.startswith(CHEATING_PREFIX))


def table(data: dict) -> str:
    """The ladder as a Markdown table: rating, time, then (two players) the win rate against
    the anchors (row's win rate, 95% interval over deals) or (four players) the win share at
    each of the agent's tables."""
    if data["players"] == 4:
        return table_4p(data)
    res = {(r["a"], r["b"]): r for r in data["results"]}
    for (a, b), r in list(res.items()):
        res[(b, a)] = {**r, "rate": 1 - r["rate"], "low": 1 - r["high"], "high": 1 - r["low"]}
    cols = anchors(data["rules"], 2)
    lines = ["| agent | rating | ms/decision | " + " | ".join(f"vs {c}" for c in cols) + " |",
             "|---|---|---|" + "---|" * len(cols)]
    for n in sorted(data["ratings"], key=lambda n: -data["ratings"][n]):
        cells = []
        for c in cols:
            r = res.get((n, c))
            cells.append("" if r is None else f"{100 * r['rate']:.1f} [{100 * r['low']:.1f}, "
                                              f"{100 * r['high']:.1f}]")
        lines.append(f"| {label(n)} | {data['ratings'][n]:.0f} | "
                     f"{data['ms_per_decision'][n]:.2f} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| pairing | win % of the first [95%] | deals |")
    lines.append("|---|---|---|")
    for r in data["results"]:
        lines.append(f"| {label(r['a'])} vs {label(r['b'])} | {100 * r['rate']:.1f} "
                     f"[{100 * r['low']:.1f}, {100 * r['high']:.1f}] | {r['deals']} |")
    return "\n".join(lines)


def table_4p(data: dict) -> str:
    """One row per agent: a baseline's win share over every table of four baselines, a
    search agent's at its table with the anchors (the anchors' shares there are in the
    JSON)."""
    lines = ["| agent | rating | ms/decision | win share [95%] (fair share 25%) | where |",
             "|---|---|---|---|---|"]
    for n in sorted(data["ratings"], key=lambda n: -data["ratings"][n]):
        sh = next(x for x in data["shares"] if x["agent"] == n)
        where = ("every table of four baselines" if len(sh["table"]) > 4 else
                 "with " + ", ".join(a for a in sh["table"] if a != n))
        lines.append(f"| {label(n)} | {data['ratings'][n]:.0f} | "
                     f"{data['ms_per_decision'][n]:.2f} | {100 * sh['rate']:.1f} "
                     f"[{100 * sh['low']:.1f}, {100 * sh['high']:.1f}] | {where} |")
    return "\n".join(lines)


if __name__ == "__main__":
    run_script("bench_ladder", main)
