"""``ono-arena``: the arena's command line and its head-to-head plot.

    ono-arena greedy color defensive random --rules classic --games 20000 --out results/

The library (playing, statistics, ratings) is :mod:`ono_env.arena`; this module adds the
argument parsing and the PNG of the head-to-head matrix (matplotlib, from the ``[arena]``
extra, used through its object API: importing this module changes no global backend).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from ono_env import cli
from ono_env.arena import (MAX_GAMES, MAX_RECORD, ArenaResult, check_paired_plan,
                           paired_difference, read_arena_json, run_arena)
from ono_env.rules import PRESETS


def plot_matrix(labels: Sequence[str], rate: np.ndarray, low: np.ndarray, high: np.ndarray,
                games: np.ndarray, title: str, path: str | Path) -> None:
    """Draw a head-to-head matrix (``ArenaResult.head_to_head()``, or the ``head_to_head``
    entry of arena.json turned into arrays) into a PNG."""
    from matplotlib.figure import Figure

    rate = np.asarray(rate, dtype=float)
    K = len(labels)
    fig = Figure(figsize=(1.6 * K + 2.5, 1.3 * K + 1.8))
    ax = fig.subplots()
    im = ax.imshow(np.nan_to_num(rate, nan=0.5), vmin=0, vmax=1, cmap="RdBu")
    for i in range(K):
        for j in range(K):
            if i != j and games[i][j]:
                ink = "white" if abs(rate[i, j] - 0.5) > 0.3 else "black"
                ax.text(j, i, f"{100 * rate[i, j]:.1f}%\n[{100 * low[i][j]:.1f}, "
                        f"{100 * high[i][j]:.1f}]", ha="center", va="center", fontsize=8, color=ink)
    ax.set_xticks(range(K), labels, rotation=30, ha="right")
    ax.set_yticks(range(K), labels)
    ax.set_xlabel("opponent")
    ax.set_ylabel("agent (win rate of the row)")
    ax.set_title(title)
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def plot_head_to_head(result: ArenaResult, path: str | Path) -> Path:
    """The head-to-head win-rate matrix of an arena run as a PNG, each cell with its 95%
    interval. Returns the path."""
    h = result.head_to_head()
    plot_matrix(result.labels, h["rate"], h["low"], h["high"], h["games"],
                f"{result.rules.name}, {result.rules.num_players} players, "
                f"{len(result.records.length):,} games", path)
    return Path(path)


def build_parser() -> cli.ArgumentParser:
    p = cli.ArgumentParser(
        prog="ono-arena",
        description="Play many games between agents and report win rates with 95% intervals, "
                    "head-to-head rates and OpenSkill ratings.")
    p.add_argument("agents", nargs="+",
                   help="agent names (random, greedy, color, defensive, ppo-basic-2p, ...) or "
                        "model files (.safetensors, or a training checkpoint .zip); at least as "
                        "many as players")
    p.add_argument("--rules", default="classic",
                   help=f"preset ({', '.join(PRESETS)}) or rules YAML (default classic)")
    p.add_argument("--players", type=cli.bounded_int(2, 10), default=None,
                   help="number of players (default: the rules')")
    p.add_argument("--games", type=cli.bounded_int(1, MAX_GAMES), default=10_000,
                   help="games in all (default 10000)")
    p.add_argument("--seed", type=cli.bounded_int(0, cli.MAX_SEED), default=0)
    p.add_argument("--batch", type=cli.bounded_int(1, cli.MAX_BATCH), default=4096,
                   help="games stepped together (default 4096)")
    p.add_argument("--out", default=None,
                   help="folder for arena.json, arena.csv and arena.png (the plot needs matplotlib)")
    p.add_argument("--mirrored", action="store_true",
                   help="mirrored deals (duplicate format): every deal is played once per "
                        "seating, so the cards cancel; rates and intervals over deals")
    p.add_argument("--paired-with", default=None, metavar="ARENA_JSON",
                   help="with --mirrored: compare the first agent, deal by deal, with the first "
                        "agent of an earlier mirrored run saved with --out (its arena.json, or "
                        "the folder holding it) that dealt the same cards: the same rules, "
                        "players, --games, --seed, --batch and other agents")
    p.add_argument("--no-rating", action="store_true",
                   help="skip the OpenSkill ratings (which need the openskill library)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--record", nargs=2, metavar=("N", "DIR"), default=None,
                   help="write replays of N of the games (a seeded sample) into the folder DIR "
                        "(replay-00001.json, ...); recording changes no result; ono-web "
                        "--replays DIR shows them")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="play the games as Ray tasks (the same results): on the cluster at "
                        "ADDRESS (auto, host:port, ray://host:port), or a new local Ray without "
                        "one; needs pip install 'ono-env[ray]'")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    def body(args) -> None:
        record, record_dir = 0, None
        if args.record is not None:
            record = cli.bounded_int(1, MAX_RECORD)(args.record[0])
            record_dir = Path(args.record[1])
            if record_dir.exists() and not record_dir.is_dir():
                raise ValueError(f"--record: {str(record_dir)!r} is not a folder")
            if record_dir.is_dir() and any(record_dir.glob("replay-*.json")):
                raise ValueError(f"--record: {str(record_dir)!r} already holds replay files; "
                                 f"give a new or empty folder")
        earlier = None
        if args.paired_with is not None:
            if not args.mirrored:
                raise ValueError("--paired-with compares two mirrored runs: add --mirrored")
            earlier = read_arena_json(args.paired_with)
            check_paired_plan(earlier, args.agents, args.rules, args.players, args.games,
                              args.seed, args.batch)
        result = run_arena(args.agents, args.rules, args.players, args.games, args.seed,
                           batch_size=args.batch, rating=False if args.no_rating else None,
                           progress=not args.no_progress, ray_address=args.ray,
                           record=record, mirrored=args.mirrored)
        print(result.format_table())
        if earlier is not None:
            d = paired_difference(result, earlier)
            print(f"\npaired with {args.paired_with}: {d['agent_a']} {100 * d['rate_a']:.2f}% - "
                  f"{d['agent_b']} {100 * d['rate_b']:.2f}% = {100 * d['diff']:+.2f} points "
                  f"[{100 * d['low']:+.2f}, {100 * d['high']:+.2f}] over the same "
                  f"{d['deals']} deals")
        if record_dir is not None:
            for k, replay in enumerate(result.replays):
                replay.save(record_dir / f"replay-{k + 1:05d}.json")
            print(f"wrote {len(result.replays)} replays to {record_dir}")
        if not args.no_rating and not result.ratings:
            print("ono-arena: note: no ratings without the openskill library: "
                  "pip install 'ono-env[arena]'", file=sys.stderr)
        if args.out:
            paths = result.save(args.out)
            if importlib.util.find_spec("matplotlib") is None:
                print("ono-arena: note: arena.png not drawn without matplotlib: "
                      "pip install 'ono-env[arena]'", file=sys.stderr)
            else:
                paths.append(plot_head_to_head(result, Path(args.out) / "arena.png"))
            print("wrote " + ", ".join(str(p) for p in paths))

    return cli.run(build_parser(), argv, body)


if __name__ == "__main__":
    sys.exit(main())
