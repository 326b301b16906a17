"""A strength ladder: basic, 2 players, mirrored deals; head to head with 95% intervals over
deals, a Bradley-Terry rating per agent (Elo scale, ``random`` = 0) and the time per
decision of each agent on one core.

    python benchmarks/bench_ladder.py --out docs/results/ladder

The baselines (``random``, ``greedy``, ``color``, ``defensive``, ``ppo-basic-2p``) play a
full round robin with ``--games-cheap`` games per pairing; each search agent and each
CHEATING ceiling plays ``random``, ``greedy`` and ``ppo-basic-2p``, and the search agents
and ceilings play each other along the chain in ``SEARCH_PAIRS``, with ``--games-search``
games per pairing (half as many deals: every deal is played twice, seats swapped).

Time per decision: the mean wall time of one call for one position with more than one legal
action (positions from greedy-against-greedy games), one thread (torch too).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from ono_env import VecGame
from ono_env.agents import make_agent
from ono_env.arena import run_arena

BASELINES = ["random", "greedy", "color", "defensive", "ppo-basic-2p"]
SEARCH = ["pimc:32", "pimc:128", "pimc-ppo:128", "ismcts:500", "oracle-hands:64", "oracle:16"]
ANCHORS = ["random", "greedy", "ppo-basic-2p"]
SEARCH_PAIRS = [("pimc:128", "pimc:32"), ("pimc:128", "ismcts:500"),
                ("pimc-ppo:128", "pimc:128"), ("oracle-hands:64", "pimc-ppo:128"),
                ("oracle:16", "oracle-hands:64"), ("oracle:16", "pimc-ppo:128")]
CHEATING = {"oracle-hands:64", "oracle:16"}


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


def decision_times(agents: list[str], positions: int = 200, seed: int = 0) -> dict[str, float]:
    import torch
    torch.set_num_threads(1)
    game = VecGame("basic", 512, seed=seed, num_players=2)
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
        one = lambda i: (agent.act_game(game, np.array([i]), rng) if getattr(agent, "uses_game", False)
                         else agent.act(obs[i:i + 1], mask[i:i + 1], rng))
        one(rows[0])                                   # warm up (compile, load)
        t = time.perf_counter()
        for i in rows:
            one(i)
        out[spec] = 1000 * (time.perf_counter() - t) / len(rows)
        print(f"  {spec:<16} {out[spec]:8.3f} ms/decision", flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--games-cheap", type=int, default=10000)
    ap.add_argument("--games-search", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="docs/results/ladder")
    args = ap.parse_args()
    t0 = time.perf_counter()
    pairs = [(a, b, args.games_cheap) for i, a in enumerate(BASELINES) for b in BASELINES[i + 1:]]
    pairs += [(s, a, args.games_search) for s in SEARCH for a in ANCHORS]
    pairs += [(a, b, args.games_search) for a, b in SEARCH_PAIRS]
    results = []
    for a, b, n in pairs:
        t = time.perf_counter()
        res = run_arena([a, b], "basic", 2, n, args.seed, rating=False, mirrored=True)
        pr = res.paired(0)
        results.append({"a": a, "b": b, "games": pr["games"], "deals": pr["deals"],
                        "rate": pr["rate"], "low": pr["low"], "high": pr["high"],
                        "seconds": time.perf_counter() - t})
        print(f"{a:>16} vs {b:<16} {100 * pr['rate']:5.1f} [{100 * pr['low']:.1f}, "
              f"{100 * pr['high']:.1f}]  {pr['deals']} deals  {time.perf_counter() - t:6.1f} s",
              flush=True)
    names = BASELINES + SEARCH
    ratings = bradley_terry(names, results)
    print("time per decision (one position per call, one thread):")
    times = decision_times(names)
    data = {"command": f"python benchmarks/bench_ladder.py --games-cheap {args.games_cheap} "
                       f"--games-search {args.games_search} --seed {args.seed} --out {args.out}",
            "rules": "basic", "players": 2, "mirrored": True, "results": results,
            "ratings": ratings, "ms_per_decision": times, "cheating": sorted(CHEATING),
            "seconds": time.perf_counter() - t0}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ladder.json").write_text(json.dumps(data, indent=2) + "\n")
    (out / "ladder.md").write_text(table(data) + "\n")
    print(table(data))


def label(n: str) -> str:
    return f"{n} (cheating)" if n in CHEATING else n


def table(data: dict) -> str:
    """The ladder as a Markdown table: rating, time, then the win rate against the
    anchors (row's win rate, 95% interval over deals)."""
    res = {(r["a"], r["b"]): r for r in data["results"]}
    for (a, b), r in list(res.items()):
        res[(b, a)] = {**r, "rate": 1 - r["rate"], "low": 1 - r["high"], "high": 1 - r["low"]}
    cols = ANCHORS
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


if __name__ == "__main__":
    main()
