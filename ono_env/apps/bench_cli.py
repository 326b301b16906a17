"""``ono-bench``: place an agent on the benchmark suite (:mod:`ono_env.arena.suite`).

    ono-bench greedy                                  # the whole suite, its default size
    ono-bench runs/my-run/model.safetensors --tables basic-2p ono-4p --out results/
    ono-bench my_agents:CleverAgent --tables basic-2p # your own class (imported: your choice)
    ono-bench --render results/card.json --plot results/card.png
    ono-bench --list                                  # the suite's tables and fields

The plot uses matplotlib's object API (the ``[arena]`` extra); importing this module changes
no global backend.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from ono_env.agents.base import marked
from ono_env.apps import console as cli
from ono_env.arena import workers_that_fit
from ono_env.arena.distributed import check_ray_address, check_ray_flag
from ono_env.arena.suite import (
    LATEST,
    MAX_DEALS,
    bench_agent,
    card_agent_label,
    format_card,
    format_card_markdown,
    load_suite,
    read_card,
    read_ladder,
    select_tables,
    suite_versions,
)
from ono_env.checks import check_output_dir, check_output_file, printable, shown, write_whole
from ono_env.game import usable_cores

PAIRINGS_FILE = "pairings.jsonl"
"""The file in ``--out`` that keeps each pairing as it finishes (one JSON object a line: the
card's row and its ``table``), removed once the card is written; a run that fails or is
stopped leaves it with the pairings that finished."""


LABEL_LEVELS = 5
"""How many rows of labels :func:`card_figure` stacks above a table's dots, and below."""


def _label_levels(xs: Sequence[float], widths: Sequence[float]) -> list[int]:
    """A level for each label centred at ``xs`` (sorted) of ``widths`` (data units): the first
    of +1, -1, +2, -2, ... (above, below, further above, ...) where it overlaps no label
    already placed at that level; where none is free, the level whose last label ends
    first. Written here: matplotlib places no labels apart (the ``adjustText`` package
    does, by moving them iteratively, which is more than a row of labels needs)."""
    order = [sign * k for k in range(1, LABEL_LEVELS + 1) for sign in (1, -1)]
    ends: dict[int, float] = {}
    levels = []
    for x, w in zip(xs, widths):
        free = [lv for lv in order if ends.get(lv, -math.inf) <= x - w / 2]
        level = free[0] if free else min(order, key=lambda lv: ends[lv])
        ends[level] = x + w / 2
        levels.append(level)
    return levels


def card_figure(card: dict[str, Any]) -> Any:
    """The card as a matplotlib ``Figure``: one row per table, the reference field's
    published ratings as labelled dots and the agent's rating with its 95% interval as a red
    bar. Every label is marked *(cheating)* where its agent sees hidden cards, as on the text
    card (before: the plot marked none); the field's labels are stacked in rows above and
    below their dots (:func:`_label_levels`), each joined to its dot by a thin line, so that
    close ratings do not print over each other (before: labels at 35 degrees, above and
    below by turns, which overlapped wherever three agents were close)."""
    from matplotlib.figure import Figure

    me = card_agent_label(card)
    tables = list(card["tables"].items())
    values = [v for _n, t in tables for v in (*t.get("field", {}).values(), t["rating"]["low"],
                                               t["rating"]["high"])]
    lo, hi = min(values), max(values)
    pad = 0.08 * (hi - lo or 1.0)
    lo, hi = lo - pad, hi + pad
    width_in, step = 11.0, 8.0   # the figure's width; points between two rows of labels
    # a label's width in rating points: 6-point text is about 3.4 points a character, over
    # the axes' width (the figure less about 1.6 inches of margins)
    per_char = 3.4 / ((width_in - 1.6) * 72.0) * (hi - lo)
    rows = []   # each table's field, sorted by rating, its labels and their levels
    for _name, t in tables:
        cheats = {r["reference"]: r["cheating"] for r in t["rows"]}
        field = sorted(t.get("field", {}).items(), key=lambda item: item[1])
        names = [marked(ref, cheats.get(ref, False)) for ref, _r in field]
        rows.append((field, names, _label_levels([r for _ref, r in field],
                                                 [(len(n) + 1) * per_char for n in names])))
    deepest = max((abs(lv) for _f, _n, levels in rows for lv in levels), default=1)
    row_in = 2 * (deepest * step + 8.0) / 72.0   # room for the deepest labels, both sides
    with cli.literal_text():   # labels as written: a '$' is not mathtext
        fig = Figure(figsize=(width_in, row_in * len(tables) + 1.2))
        ax = fig.subplots()
        for k, ((_name, t), (field, names, levels)) in enumerate(zip(tables, rows)):
            y = len(tables) - 1 - k
            for (_ref, rating), name, level in zip(field, names, levels):
                ax.plot(rating, y, "o", color="#888888", markersize=4)
                ax.annotate(name, (rating, y), textcoords="offset points",
                            xytext=(0, (abs(level) - 1) * step * (1 if level > 0 else -1)
                                    + (4 if level > 0 else -4)),
                            va="bottom" if level > 0 else "top", fontsize=6, ha="center",
                            color="#555555",
                            arrowprops=(dict(arrowstyle="-", color="#bbbbbb", linewidth=0.4)
                                        if abs(level) > 1 else None))
            r = t["rating"]
            ax.errorbar(r["rating"], y, xerr=[[r["rating"] - r["low"]], [r["high"] - r["rating"]]],
                        fmt="s", color="#b2182b", capsize=3, zorder=3)
        ax.set_xlim(lo, hi)
        ax.set_ylim(-0.5, len(tables) - 0.5)
        ax.set_yticks(range(len(tables)), [name for name, _t in reversed(tables)])
        ax.axvline(card["anchor"]["rating"], color="black", linewidth=0.8, linestyle="--")
        ax.set_xlabel(f"rating ({card['anchor']['agent']} = {card['anchor']['rating']:g}; grey: the "
                      f"reference field, red: {me} with its 95% interval)")
        ax.set_title(f"{me} on benchmark suite version {card['suite_version']}")
        fig.tight_layout()
    return fig


def plot_card(card: dict[str, Any], path: str | Path) -> Path:
    """The card as a PNG (:func:`card_figure`), written as a new file (one that appeared at
    ``path`` since the caller checked it is kept, never replaced)."""
    import io

    png = io.BytesIO()
    with cli.literal_text():   # labels as written: a '$' is not mathtext
        card_figure(card).savefig(png, format="png", dpi=110)
    return write_whole(Path(path), png.getvalue(), "--plot", new=True)


def format_suite(version: int | str) -> str:
    """The suite's tables: rules, players, default deals and reference field."""
    suite = load_suite(version)
    lines = [f"benchmark suite version {suite.version} ({suite.path.name}): "
             f"ratings with {suite.anchor} = {suite.anchor_rating:g}",
             f"{'table':<14} {'rules':<10} {'players':>7} {'deals':>6} {'slow':>5}  reference field"]
    for t in suite.tables.values():
        field = ", ".join(marked(r.name, r.cheating) for r in t.field)
        lines.append(f"{t.name:<14} {t.preset:<10} {t.players:>7} {t.deals:>6} {t.slow_deals:>5}  "
                     f"{field}")
    lines.append("deals: per pairing with a fast reference agent; slow: with the search agent "
                 "and the ceilings")
    return "\n".join(lines)


def build_parser() -> cli.ArgumentParser:
    p = cli.ArgumentParser(
        prog="ono-bench",
        description="Place an agent on the benchmark suite: play it against every table's "
                    "reference field on the suite's deals and print its win rates (win shares "
                    "at 4 players) and its rating on each table's published scale.")
    p.add_argument("agent", nargs="?", default=None,
                   help="a registered agent name (greedy, ppo-any, pimc:8, ...), a model file "
                        "(.safetensors, or a training checkpoint .zip), or module:Class, your "
                        "own agent class (imported from the current directory or the Python "
                        "path; called with the RuleSet if it takes one required positional "
                        "argument or has a parameter named rules)")
    p.add_argument("--suite", default=None, metavar="VERSION",
                   help=f"suite version ({', '.join(map(str, suite_versions()))}; default: the "
                        f"latest; an earlier version plays only with the reference files it "
                        f"was published with, so with the release that shipped them: --list "
                        f"and --render read every version)")
    p.add_argument("--tables", nargs="+", default=None, metavar="TABLE",
                   help="the tables to play (default: all; --list names them)")
    p.add_argument("--deals", type=cli.bounded_int(1, MAX_DEALS), default=None,
                   help="deals per pairing with a fast reference agent (default: the suite's "
                        "per table)")
    p.add_argument("--slow-deals", type=cli.bounded_int(1, MAX_DEALS), default=None,
                   help="deals per pairing with the search agent and the cheating ceilings "
                        "(default: the suite's per table)")
    p.add_argument("--out", default=None,
                   help="folder for the result card: card.json, card.md (and card.png with "
                        "--plot), and pairings.jsonl while the games are played (kept if the "
                        "run fails); files already there are not replaced: the run is refused")
    p.add_argument("--plot", nargs="?", const="", default=None, metavar="PNG",
                   help="draw the card as a PNG, a new file ending .png (default: card.png in "
                        "--out, or beside the --render card); needs matplotlib")
    p.add_argument("--render", default=None, metavar="CARD_JSON",
                   help="play nothing: print a saved result card (and --plot it); a folder "
                        "stands for its card.json (an --out folder)")
    p.add_argument("--list", action="store_true", help="print the suite's tables and exit")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar: one line per finished pairing on stderr instead")
    p.add_argument("--workers", type=cli.bounded_int(1, 256), default=None,
                   help="pairings played at once, each in its own process (default: the CPU "
                        "count, at most 4, and no more than fit in the memory free; the same card; not "
                        "with --ray; refused where they would not fit in the memory free, at least "
                        "160 MiB each); an agent given as "
                        "module:Class is imported in each")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="play the games as Ray tasks (the same card): on the cluster at ADDRESS "
                        "(auto, host:port, ray://host:port), or a new local Ray without one or "
                        "with local")
    return p


def _png(path: str) -> str:
    """``--plot``'s file: a name ending ``.png`` (the plot is a PNG; another suffix would
    change its format, and none would have one added)."""
    if Path(path).suffix.lower() != ".png":
        raise cli.UsageError(f"--plot {path!r}: allowed: a file name ending .png")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    def body(args) -> None:
        playing = {"agent": args.agent, "--tables": args.tables, "--deals": args.deals,
                   "--slow-deals": args.slow_deals, "--out": args.out,
                   "--workers": args.workers, "--ray": args.ray}
        if args.plot is not None and importlib.util.find_spec("matplotlib") is None:
            # before: every game played, then a note and no plot
            raise cli.UsageError("--plot needs matplotlib: pip install 'ono-env[arena]'")
        if args.list:
            given = [k for k, v in {**playing, "--render": args.render, "--plot": args.plot,
                                    "--no-progress": args.no_progress or None}.items()
                     if v is not None]   # before: --no-progress was taken, unread
            if given:
                raise cli.UsageError(f"--list prints the suite's tables and takes only --suite; "
                                     f"got {', '.join(given)}")
            print(format_suite(LATEST if args.suite is None else args.suite))
            return
        if args.render is not None and args.agent is not None:
            raise cli.UsageError(f"--render prints a saved card and takes no AGENT; got "
                                 f"{shown(args.agent, 60)} too (benchmark it without --render)")
        if args.ray is not None:   # its form first: a bare --ray takes the agent's name
            check_ray_address(args.ray, name="--ray")
        if args.render is None and args.agent is None:
            raise cli.UsageError("give an AGENT to benchmark, or --render CARD_JSON (see "
                                 "ono-bench --help)")
        if args.workers is not None and args.ray is not None:   # before: --workers was dropped
            raise cli.UsageError("--workers and --ray: with --ray, Ray spreads the games over "
                                 "the cluster's CPUs and the pairings are played one at a time; "
                                 "give one of them")
        if args.render is not None:
            given = [k for k, v in {**playing, "--suite": args.suite,
                                    "--no-progress": args.no_progress or None}.items()
                     if v is not None]
            if given:   # a saved card names its own suite version
                raise cli.UsageError(f"--render plays nothing and takes only --plot; got "
                                     f"{', '.join(given)}")
            # an --out folder stands for its card (as ono-arena's --paired-with takes its
            # folder; before: "it is a folder")
            if not args.render:   # before: '' read ./card.json, the current folder's
                raise cli.UsageError("--render: a card file or an --out folder is needed; got ''")
            try:
                folder = Path(args.render).is_dir()
            except OSError:   # a name too long: read_card names it
                folder = False
            render = Path(args.render) / "card.json" if folder else args.render
            card = read_card(render)
            png = None
            if args.plot is not None:   # checked before the card is printed; never replaces
                png = check_output_file(_png(args.plot or str(Path(render).with_suffix(
                    ".png"))), "--plot")
            print(format_card(card))
            if png is not None:   # said as a run's files are (before: written in silence)
                print(f"wrote {printable(str(plot_card(card, str(png))))}")
            return
        if args.plot == "" and args.out is None:
            raise cli.UsageError("--plot without a file name draws into --out: give --out DIR "
                                 "or --plot PNG")
        # every file the run will write, checked (and none replaced) before a game is played
        targets = []
        pairings = None   # each finished pairing, written as it finishes: a late failure keeps them
        if args.out is not None:
            out = check_output_dir(args.out, "--out")
            pairings = out / PAIRINGS_FILE
            targets += [out / "card.json", out / "card.md", pairings]
            if args.plot == "":
                targets.append(out / "card.png")
            held = [t.name for t in targets if t.exists() or t.is_symlink()]
            if held:   # before: "'.../card.json' already exists; give a new file name"
                raise ValueError(f"--out: {str(out)!r} already holds {', '.join(held)} "
                                 f"(another run's: a card, or the pairings of a run that plays "
                                 f"or failed); give a new or empty folder")
        if args.plot:
            targets.append(Path(_png(args.plot)))
        for target in targets:
            check_output_file(target, "--plot" if target.suffix == ".png" else "--out")
        suite = load_suite(LATEST if args.suite is None else args.suite)   # checked before a game
        select_tables(suite, args.tables)
        read_ladder(suite)

        kept = 0

        def show(table: str, row: dict[str, Any]) -> None:
            nonlocal kept
            if args.no_progress:
                # marked as everywhere, and a share said to be one (before: "oracle:4: 0.0%"
                # and "basic-4p greedy: 12.5%")
                players = suite.tables[table].players
                what = (f" (win share; fair {100 / players:.3g}%)" if players > 2 else "")
                print(f"  {table} {marked(row['reference'], row['cheating'])}: "
                      f"{100 * row['rate']:.1f}%{what}", file=sys.stderr)
            if pairings is not None:
                with open(pairings, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps({"table": table, **row}) + "\n")
                kept += 1

        from ono_env.agents.search import thinks_by_the_clock

        made = False   # the pairings file, this run's own

        def start() -> None:   # once the agent and every table are checked, before a game
            nonlocal made
            if thinks_by_the_clock(args.agent):   # before: the card was said to repeat; and
                # this note came before the refusal of a bad budget (pimc:0ms)
                print(f"ono-bench: note: {args.agent} thinks for a time per decision: its "
                      f"moves depend on the machine's speed and load, so another run can give "
                      f"another card (a number of worlds, as pimc:64, repeats)", file=sys.stderr)
            if pairings is not None:   # made now and new: another run into --out is refused
                write_whole(pairings, b"", "--out's pairings file", new=True)
                made = True
            if args.ray is not None:
                check_ray_flag(args.ray)

        # the default: no more than fit in the memory free (before: a default of 4 could be
        # refused, naming a number the user never gave)
        workers = (args.workers if args.workers is not None
                   else 1 if args.ray is not None
                   else min(4, usable_cores(), workers_that_fit() or 4))
        try:
            card = bench_agent(args.agent, suite.version, args.tables, deals=args.deals,
                               slow_deals=args.slow_deals, progress=not args.no_progress,
                               ray_address=args.ray, workers=workers, on_pairing=show,
                               before_games=start)
        except ValueError as exc:
            if kept:
                raise ValueError(f"{exc}; the {kept} pairing(s) that finished before it are in "
                                 f"{pairings} (one JSON object a line)") from None
            raise
        except (KeyboardInterrupt, cli.Stopped):   # before: "interrupted" alone
            if kept:
                print(f"ono-bench: the {kept} pairing(s) that finished are in {pairings} (one "
                      f"JSON object a line)", file=sys.stderr)
            raise
        finally:
            if made and not kept:
                cast(Path, pairings).unlink(missing_ok=True)
        if args.out is not None:   # the card written before it is printed (before: a standard
            # output that failed lost it, and the pairings file went with it)
            out = Path(args.out)
            try:   # new files: one that appeared during the run is kept, and so are the pairings
                write_whole(out / "card.json", (json.dumps(card, indent=1) + "\n").encode(),
                            "--out's card", new=True)
                try:
                    write_whole(out / "card.md", format_card_markdown(card).encode(),
                                "--out's card", new=True)
                except ValueError:   # no half card beside another's (before: this run's
                    (out / "card.json").unlink(missing_ok=True)   # card.json stayed by it)
                    raise
            except ValueError as exc:
                raise ValueError(f"{exc}; the pairings played are in {pairings} (one JSON "
                                 f"object a line)") from None
            if pairings is not None:
                pairings.unlink(missing_ok=True)   # the card holds every one of them
        print(format_card(card))
        print(f"\n{card['timing']['seconds']:.0f} s")
        if args.out is not None:
            written = [out / "card.json", out / "card.md"]
            if args.plot is not None:   # its path was checked before the run
                written.append(plot_card(card, args.plot or str(out / "card.png")))
            # a control character of a path shown as '?' (before: sent to the terminal)
            print("wrote " + ", ".join(printable(str(p)) for p in written))
        elif args.plot:
            print(f"wrote {printable(str(plot_card(card, args.plot)))}")

    return cli.run(build_parser(), argv, body)


if __name__ == "__main__":
    sys.exit(main())
