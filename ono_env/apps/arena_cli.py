"""``ono-arena``: the arena's command line and its head-to-head plot.

    ono-arena greedy color defensive random --rules classic --games 20000 --out results/

The library (playing, statistics, ratings) is :mod:`ono_env.arena`; this module adds the
argument parsing and the PNG of the head-to-head matrix (matplotlib, from the ``[arena]``
extra, used through its object API: importing this module changes no global backend).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ono_env.apps import console as cli
from ono_env.arena import (
    ArenaResult,
    MAX_ARENA_JSON_BYTES,
    MAX_GAMES,
    MAX_RECORD,
    check_batch_memory,
    check_paired_plan,
    check_plan,
    check_records_memory,
    check_seats_filled,
    games_played,
    paired_difference,
    read_arena_json,
    run_arena,
    seatings,
)
from ono_env.arena.distributed import check_ray_address, check_ray_flag
from ono_env.arena.results import deals_words
from ono_env.checks import check_output_dir, printable, shown, write_whole
from ono_env.rules import PRESETS, resolve_rules

MATRIX_TEXT = 16
"""The most entrants whose head-to-head cells :func:`plot_matrix` writes its rates in."""


def plot_matrix(labels: Sequence[str], rate: np.ndarray, low: np.ndarray, high: np.ndarray,
                games: np.ndarray, title: str, path: str | Path, fair: float = 0.5) -> None:
    """Draw a head-to-head matrix (``ArenaResult.head_to_head()``, or the ``head_to_head``
    entry of arena.json turned into arrays) into a PNG, its colours centred on the fair share
    ``fair`` (1 / players: at 4 players a 33% share is drawn as a win, not a loss); each cell
    with its rate and interval up to :data:`MATRIX_TEXT` entrants, beyond them the colours
    alone, in a figure no larger than that many entrants'."""
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.figure import Figure

    rate = np.asarray(rate, dtype=float)
    K = len(labels)
    # each cell holds its rate and interval up to MATRIX_TEXT entrants; beyond, the colours
    # alone in a figure of at most the size of MATRIX_TEXT's (before: 100 entrants took 73 s
    # and 10 GB for an 18 MB image, 130 a MemoryError after the run's files were written)
    text = K <= MATRIX_TEXT
    cell = 1.0 if text else MATRIX_TEXT / K
    fig = Figure(figsize=(1.6 * K * cell + 2.5, 1.3 * K * cell + 1.8))
    ax = fig.subplots()
    im = ax.imshow(np.nan_to_num(rate, nan=fair), norm=TwoSlopeNorm(fair, 0.0, 1.0), cmap="RdBu")
    for i in range(K if text else 0):
        for j in range(K):
            if i != j and games[i][j]:
                far = rate[i, j] - fair > 0.6 * (1 - fair) or fair - rate[i, j] > 0.6 * fair
                ax.text(j, i, f"{100 * rate[i, j]:.1f}%\n[{100 * low[i][j]:.1f}, "
                        f"{100 * high[i][j]:.1f}]", ha="center", va="center", fontsize=8,
                        color="white" if far else "black")
    size = None if text else max(2.0, 10.0 * cell)   # None: matplotlib's own
    ax.set_xticks(range(K), labels, rotation=30 if text else 90, ha="right" if text else "center",
                  fontsize=size)
    ax.set_yticks(range(K), labels, fontsize=size)
    # (before: "opponent", at 3-10 players too, where the column is one of the others at
    # the row's tables)
    ax.set_xlabel("opponent" if fair == 0.5 else "in games with")
    ax.set_ylabel(f"agent (win share of the row; fair {100 * fair:.0f}%)")
    ax.set_title(title)
    fig.colorbar(im, ax=ax, fraction=0.046)
    _save_png(fig, path)


def plot_shares(labels: Sequence[str], rate: Sequence[float], low: Sequence[float],
                high: Sequence[float], title: str, path: str | Path, fair: float) -> None:
    """Each entrant's share of the wins with its 95% interval as bars, measured from the fair
    share (the plot of a run with a single table, where a matrix would repeat each row)."""
    from matplotlib.figure import Figure

    K = len(labels)
    fig = Figure(figsize=(1.3 * K + 3.0, 3.8))
    ax = fig.subplots()
    r = np.asarray(rate, dtype=float)
    err = np.array([r - np.asarray(low, float), np.asarray(high, float) - r])
    ax.bar(range(K), r - fair, bottom=fair, yerr=err, capsize=4,
           color=["#2166ac" if x >= fair else "#b2182b" for x in r])
    ax.axhline(fair, color="black", linewidth=1, linestyle="--")
    ax.text(K - 0.5, fair, f" fair {100 * fair:.0f}%", va="bottom", ha="right", fontsize=8)
    above = r >= fair
    ends = np.where(above, np.asarray(high, float) + 0.01, np.asarray(low, float) - 0.01)
    for k, x in enumerate(r):   # beyond the interval's end, so the error bar stays readable
        ax.text(k, ends[k], f"{100 * x:.1f}%", ha="center", va="bottom" if above[k] else "top",
                fontsize=8)
    ax.set_xticks(range(K), labels, rotation=30, ha="right")
    ax.set_ylabel("share of the wins (95% interval)")
    top = min(1.0, max(2 * fair, float(np.nanmax(np.asarray(high, float))) + 0.05))
    pad = 0.08 * top   # a label's height (8 points in this figure's axes, about 6% of them)
    # the axis reaches past 0 or 1 where a label would fall off it; its ticks stay in [0, 1]
    bottom = min(0.0, float(np.min(ends[~above], initial=np.inf)) - pad)
    top = max(top, float(np.max(ends[above], initial=-np.inf)) + pad)
    ax.set_ylim(bottom, top)
    ax.set_yticks([t for t in ax.get_yticks() if -1e-9 <= t <= 1 + 1e-9])
    ax.set_title(title)
    _save_png(fig, path)


def _save_png(fig: Any, path: str | Path) -> None:
    """``fig`` as a PNG at exactly ``path``, written whole (:func:`write_whole`): a run stopped
    while it draws leaves no part of one (before: a 124-byte file that no viewer opens), and
    a path without ``.png`` is not given one (before: ``/tmp`` wrote ``/tmp.png``)."""
    import io
    import warnings

    png = io.BytesIO()
    # labels too long to lay out, drawn as they fall; a character the font lacks (a label in
    # Chinese), drawn as a box (before: matplotlib's two-line warning, one for each glyph)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()
        fig.savefig(png, format="png", dpi=110)
    write_whole(Path(path), png.getvalue(), "plot")


def plot_head_to_head(result: ArenaResult, path: str | Path) -> Path:
    """The run as a PNG: the head-to-head matrix of win shares (each cell with its 95%
    interval, colours centred on the fair share) where more than one table was played, else
    each entrant's share beside the fair share. Returns the path."""
    if not isinstance(result, ArenaResult):   # before: an AttributeError
        raise ValueError(f"plot_head_to_head: result is a {type(result).__name__}; allowed: an "
                         f"ArenaResult (run_arena's)")
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ValueError(f"plot_head_to_head: path={shown(path, 60)}; allowed: the path of the "
                         f"PNG file to write")
    title = (f"{result.rules.title}, {result.rules.num_players} players, "
             f"{len(result.records.length):,} games"
             + (f" ({result.deals:,} mirrored deals)" if result.mirrored else ""))
    with cli.literal_text():   # labels as written: a '$' is not mathtext
        if result.tables > 1:
            h = result.head_to_head()
            plot_matrix(result.labels, h["rate"], h["low"], h["high"], h["games"], title, path,
                        fair=result.fair_share)
        else:
            rows = result.agent_rows()
            plot_shares([r["agent"] for r in rows], [r["win_rate"] for r in rows],
                        [r["ci_low"] for r in rows], [r["ci_high"] for r in rows], title, path,
                        result.fair_share)
    return Path(path)


def build_parser() -> cli.ArgumentParser:
    p = cli.ArgumentParser(
        prog="ono-arena",
        description="Play many games between agents and report win rates with 95% intervals, "
                    "head-to-head rates and ratings.")
    p.add_argument("agents", nargs="+",
                   help="agent names (random, greedy, color, defensive, ppo-basic-2p, ...; a "
                        "search agent such as pimc or ismcts, alone or as name:N, N up to "
                        "1,000,000, or name:<T>ms, T up to 60000), "
                        "model files (.safetensors, or a training checkpoint .zip) or "
                        "module:Class, your own agent class (imported from the current directory "
                        "or the Python path; called with the RuleSet if it takes one required "
                        "positional argument or has a parameter named rules; "
                        "labelled by its name attribute, else its class name); at least as many "
                        "as players")
    p.add_argument("--rules", default="basic",
                   help=f"preset ({', '.join(PRESETS)}) or rules YAML (default basic, as in "
                        f"every console script)")
    p.add_argument("--players", type=cli.bounded_int(2, 10), default=None,
                   help="number of players (default: the rules')")
    p.add_argument("--games", type=cli.bounded_int(1, MAX_GAMES), default=10_000,
                   help="games in all (default 10000)")
    p.add_argument("--seed", type=cli.bounded_int(0, cli.MAX_SEED), default=0,
                   help=f"seed of the deals and of the agents' generators, 0 to "
                        f"{cli.MAX_SEED:,} (default 0; with --batch, it fixes the deals)")
    p.add_argument("--batch", type=cli.bounded_int(1, cli.MAX_BATCH), default=4096,
                   help="games stepped together, run_arena's batch_size (default 4096; not "
                        "a trainer's ppo.batch_size, its minibatch); each batch deals from a "
                        "seed of its own, so another --batch plays other deals when the games "
                        "of one seating do not fit in one batch")
    p.add_argument("--out", default=None,
                   help="folder for arena.json, arena.csv and arena.png (the plot needs matplotlib)")
    p.add_argument("--mirrored", action="store_true",
                   help="mirrored deals (duplicate format): every deal is played once per "
                        "seating, so the cards cancel; rates and intervals over deals")
    p.add_argument("--paired-with", default=None, metavar="ARENA_JSON",
                   help="with --mirrored: compare the first agent, deal by deal, with the first "
                        "agent of an earlier mirrored run saved with --out (its arena.json, or "
                        "the folder holding it) that dealt the same cards: the same rules, "
                        "players, --games, --seed and other agents, and the same --batch (or "
                        "in both runs a --batch that holds a seating's games)")
    p.add_argument("--no-rating", action="store_true",
                   help="skip the ratings (the Luce model of the winner fitted to all the "
                        "games, on the Elo scale, the entrants' mean at 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--record", nargs=2, metavar=("N", "DIR"), default=None,
                   help="write replays of N of the games (a seeded sample; all of them where "
                        "the run plays fewer) into the folder DIR (replay-00001.json, ...); "
                        "recording changes no result; ono-web --replays DIR shows those of at most "
                        "20,000 decisions")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="play the games as Ray tasks (the same results): on the cluster at "
                        "ADDRESS (auto, host:port, ray://host:port), or a new local Ray without "
                        "one or with local; a module:Class entrant must import on every Ray "
                        "node; needs pip install 'ono-env[ray]'")
    return p


def own_agents(specs: Sequence[str], rules: Any) -> list[Any]:
    """The entrants as run_arena takes them: a ``module:Class`` spec made into the user's
    agent (:func:`~ono_env.agents.registry.agent_from_class`, one object per entrant, as
    every name makes its own), every other spec as given. With ``--ray`` such objects go to
    the Ray workers, which must import the class's module (as with ``ono-bench --ray``; one
    that cannot is one line naming the module)."""
    from ono_env.agents.registry import agent_from_class, is_class_spec

    # one object per entrant, as every name makes its own agent
    return [agent_from_class(s, rules) if is_class_spec(s) else s for s in specs]


OUT_FILES = ("arena.json", "arena.csv", "arena.png")
"""What ``--out`` writes; a folder that holds any of them is refused before any game."""


def main(argv: Sequence[str] | None = None) -> int:
    def body(args) -> None:
        if args.ray is not None:   # its form first: a bare --ray takes the next agent's name
            check_ray_address(args.ray, name="--ray")
        if args.ray is not None and args.record is not None:
            raise ValueError("--record is not available with --ray (replays are kept by a "
                             "one-process run)")
        record, record_dir = 0, None
        if args.record is not None:
            try:
                record = cli.bounded_int(1, MAX_RECORD)(args.record[0])
            except argparse.ArgumentTypeError as exc:
                raise ValueError(f"--record N DIR: N {exc}") from None
            if not args.record[1].strip():   # Path('') is the current folder
                raise ValueError("--record N DIR: DIR is empty; allowed: a folder path")
            record_dir = check_output_dir(args.record[1], "--record")   # before any game
            if any(record_dir.glob("replay-*.json")):
                raise ValueError(f"--record: {str(record_dir)!r} already holds replay files; "
                                 f"give a new or empty folder")
        if args.out is not None:   # '' too: refused by name, never taken as "no --out"
            out = check_output_dir(args.out, "--out")
            held = [name for name in OUT_FILES if (out / name).exists() or (out / name).is_symlink()]
            if held:
                raise ValueError(f"--out: {str(out)!r} already holds {', '.join(held)} (an earlier "
                                 f"run's results); give a new or empty folder")
        earlier = None
        if args.paired_with is not None:
            if not args.mirrored:
                raise ValueError("--paired-with compares two mirrored runs: add --mirrored")
            if not args.paired_with:
                raise ValueError("--paired-with: an arena.json or the folder holding it is "
                                 "needed; got ''")
            earlier = read_arena_json(args.paired_with)
            from ono_env.agents.registry import is_class_spec
            other = [s for s in args.agents[1:] if is_class_spec(s)]
            if other:   # a class is labelled by its name: another class may share it
                raise ValueError(f"--paired-with: {other[0]} is one of the other entrants; a "
                                 f"paired comparison needs the same others, which a label "
                                 f"cannot show for an agent class: seat it first, or compare "
                                 f"in Python")
        rules = resolve_rules(args.rules, **({} if args.players is None else
                                             {"num_players": args.players}))
        agents = own_agents(args.agents, rules)
        if earlier is not None:
            check_paired_plan(earlier, agents, args.rules, args.players, args.games,
                              args.seed, args.batch)
        players = rules.num_players
        from ono_env.agents import make_agent
        from ono_env.agents.base import observation_version
        from ono_env.agents.search import thinks_by_the_clock
        built = None   # the agents, made once for the checks below
        # before Ray's seconds; the rules' own player count taken: --players named too
        check_seats_filled(len(args.agents), players, "--players" if args.players is None else None)
        if len(args.agents) >= players:   # before any game and before Ray starts (before: a
            # bad agent was named after Ray's seconds of start-up)
            built = [make_agent(spec, rules) for spec in agents]
            if args.ray in (None, "local"):   # the batch held here (a cluster's nodes hold
                # theirs: before, a local Ray's tasks failed late, naming num_games)
                check_batch_memory(rules, len(args.agents), args.games, args.batch,
                                   name="--batch",
                                   observation_version=max(map(observation_version, built)))
        if args.ray is not None:   # after the cheap checks, before any game: names --ray
            check_ray_flag(args.ray)
        planned = (games_played(args.games, len(args.agents), players)
                   if len(args.agents) >= players else args.games)   # too few: run_arena says so
        if planned != args.games:
            check_plan(planned, args.games, len(args.agents), players)
            if built is None:   # an agent that cannot play is the one line, not after this note
                built = [make_agent(spec, rules) for spec in agents]
        if len(args.agents) >= players:   # named --games (run_arena checks it again); before
            # the note below, which a refused run printed above its error
            check_records_memory(planned, players, args.games, "--games",
                                 num_entrants=len(args.agents))
        if planned != args.games:
            deals = (f": {deals_words(planned // len(seatings(players)), players)}"
                     if args.mirrored else "")
            print(f"ono-arena: note: playing {planned:,} games (--games {args.games:,} rounded up "
                  f"so that every table plays every seating equally{deals})", file=sys.stderr)
        timed = [spec for spec in args.agents if thinks_by_the_clock(spec)]
        if timed and len(args.agents) >= players:   # before: the seed's title promised a
            # repeatable run (too few agents: run_arena's one error line)
            print(f"ono-arena: note: {', '.join(timed)} think(s) for a time per decision: their "
                  f"moves depend on the machine's speed and load, so another run of this seed "
                  f"can give other results (a number of worlds, as pimc:64, repeats)",
                  file=sys.stderr)
        try:
            result = run_arena(agents, args.rules, args.players, args.games, args.seed,
                               batch_size=args.batch, rating=not args.no_rating,
                               progress=not args.no_progress, ray_address=args.ray,
                               record=record, mirrored=args.mirrored)
        except (KeyboardInterrupt, cli.Stopped):   # before: "interrupted" alone
            print("ono-arena: no results kept: they are counted once every game is played",
                  file=sys.stderr)
            raise
        # the files first, then the printing: a reader that stops reading (| head), or a
        # failed comparison, leaves them written (before: the table was printed first, and
        # a closed pipe lost the run's files and replays)
        written: list[str] = []
        paths: list[Path] = []   # --out's files, each as it is written
        saved = 0   # replays written

        def wrote(files: list[Path]) -> str:
            # a control character of a path shown as '?' (before: sent to the terminal)
            return "wrote " + ", ".join(printable(str(p)) for p in files)
        try:
            if args.out is not None:   # new: a run started into the folder meanwhile is not mixed in
                result.save(args.out, new=True, written=paths)
                if args.mirrored and (size := (Path(args.out) / "arena.json").stat().st_size) \
                        > MAX_ARENA_JSON_BYTES:   # before: found by the next run
                    print(f"ono-arena: note: arena.json is {size:,} bytes, over the "
                          f"{MAX_ARENA_JSON_BYTES:,} that --paired-with reads, which holds a "
                          f"mirrored run of up to about {MAX_ARENA_JSON_BYTES // 12:,} games "
                          f"(about 12 bytes a game)", file=sys.stderr)
                if importlib.util.find_spec("matplotlib") is None:
                    print("ono-arena: note: arena.png not drawn without matplotlib: "
                          "pip install 'ono-env[arena]'", file=sys.stderr)
                else:
                    paths.append(plot_head_to_head(result, Path(args.out) / "arena.png"))
                written.append(wrote(paths))
                paths = []   # said
            if record_dir is not None:
                for k, replay in enumerate(result.replays):
                    replay.save(record_dir / f"replay-{k + 1:05d}.json", new=True)
                    saved = k + 1
                short = (f" (--record {record:,}: the run played {len(result.records.length):,} "
                         f"games)" if len(result.replays) < record else "")
                written.append(f"wrote {len(result.replays)} replays to "
                               f"{printable(str(record_dir))}{short}")
        except (KeyboardInterrupt, cli.Stopped, ValueError, OSError, MemoryError):
            # the games were played: their table and what was written, then the error (before:
            # a full disk at the replays, or a stop there, lost the run's results unsaid)
            if paths:   # --out's files written before the failure
                written.append(wrote(paths))
            if saved:
                written.append(f"wrote {saved:,} of {len(result.replays):,} replays to "
                               f"{printable(str(record_dir))}")
            with contextlib.suppress(OSError):   # a closed pipe: the error says itself
                print(result.format_table())
                for line in written:
                    print(line)
            raise
        print(result.format_table())
        if earlier is not None:
            try:
                d = paired_difference(result, earlier)
            except ValueError as exc:   # what the run wrote is named, as it would have been
                kept = "; ".join(line.removeprefix("wrote ") for line in written)
                raise ValueError(f"{exc}" + (f" (this run wrote {kept})" if kept else "")) \
                    from None
            print(f"\npaired with {printable(args.paired_with)}: {d['agent_a']} {100 * d['rate_a']:.2f}% - "
                  f"{d['agent_b']} {100 * d['rate_b']:.2f}% = {100 * d['diff']:+.2f} points "
                  f"[{100 * d['low']:+.2f}, {100 * d['high']:+.2f}] over the same "
                  f"{d['deals']:,} deals")
        for line in written:
            print(line)

    return cli.run(build_parser(), argv, body)


if __name__ == "__main__":
    sys.exit(main())
