"""The generalist's strength targets, on mirrored deals with 95% intervals over deals.

    python benchmarks/bench_generalist.py --deals-ten 10000 --out docs/results/generalist  # every part
    python benchmarks/bench_generalist.py --parts two --deals 10000 --out /tmp/g

Parts (``--parts``, comma-separated):

- ``two``: every preset at 2 players, the generalist against each rule-based baseline
  (``greedy``, ``color``, ``defensive``), ``--deals`` deals each (both seatings of a deal).
- ``many``: every preset at 3, 4 and 6 players, the generalist in one seat and the preset's
  best baseline in every other (the baseline it scored lowest against at 2 players),
  ``--deals-many`` deals each, every seating of a deal; its win share against the fair share.
- ``ten``: the same at 10 players, ``--deals-ten`` deals.
- ``specialists``: head to head with ``ppo-basic-2p`` and ``ppo-classic-2p`` (``--deals``),
  and at ``basic`` 4 players a table of the generalist, ``ppo-basic-4p`` and two copies of
  the best baseline (``--deals-many`` deals): both shares and their paired difference; and
  how often the generalist picks each specialist's action in games the specialist plays
  at every seat (``ono_env.arena.agreement``, 1,000 games, decisions with a choice).

A game with no winner shares 1/N to every seat. Results accumulate in ``results.json`` of
``--out`` (a part already there is skipped unless ``--again``, and refused when asked with
other deals, seed or presets than it was measured with); ``results.md`` is the table.
Both name the model file's SHA-256 and training steps, and the arguments of the call that
measured each part; when ``results.json`` holds another model file's rows, the run is
refused unless ``--parts`` asks for every part (then they are all measured again, for this
model, and the other model's rows go). ``--best-from`` takes the best baselines from another
folder's part ``two``, to measure part ``many`` or ``ten`` alone (another seed, more deals).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

# one thread a process: a second BLAS thread per process halves the speed of two
# processes side by side on two cores
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from bench_args import (
    checked_deals,
    checked_seed,
    distinct,
    out_folder,
    parser,
    path_arg,
    run_script,
)

from ono_env.agents import make_agent
from ono_env.agents.learned import read_metadata, shipped_models
from ono_env.arena import agreement, run_arena
from ono_env.arena.play import seatings
from ono_env.arena.stats import bounded_mean_interval
from ono_env.arena.suite import model_sha256
from ono_env.checks import is_decimal, remove_made_dirs, write_whole
from ono_env.rules import resolve_rules

BASELINES = ("greedy", "color", "defensive")
PARTS = ("two", "many", "ten", "specialists")
PART_OPTIONS = {"two": ("deals", "seed"), "many": ("deals_many", "seed"),
                "ten": ("deals_ten", "seed", "ten_presets"),
                "specialists": ("deals", "deals_many", "seed")}
"""The options each part's rows depend on (a part kept in results.json was measured with them)."""
GENERALIST_RESULTS = Path(__file__).resolve().parent.parent / "docs/results/generalist/results.json"
"""The shipped generalist's measurements (this script's ``--out docs/results/generalist``),
found from the script's own place so that the scripts that read it run from any directory."""
PRESET_NAMES = ("basic", "classic", "ono", "stacking", "uno2018", "wikipedia")
PROBE_FILES = ("results.json", "results.md")
"""What :func:`write_probe_results` writes into ``--out`` (its scripts refuse a folder that
holds them)."""


def _as_measured(option: str, value: object) -> object:
    """An option's value as a part's rows depend on it: ``--ten-presets``' presets in any
    order (before: ``ono,basic`` was refused for a part measured with ``basic,ono``)."""
    return frozenset(str(value).split(",")) if option == "ten_presets" else value


def _games(deals: int, players: int) -> int:
    """Games for ``deals`` mirrored deals: one per seating (every ordering of the seats up to
    four players, one rotation per seat above; ``ono_env.arena.play.seatings``)."""
    return deals * len(seatings(players))


def _row(ar, e: int, what: str, preset: str, players: int, opponent: str) -> dict:
    pr = ar.paired(e)
    return {"what": what, "preset": preset, "players": players, "opponent": opponent,
            "share": pr["rate"], "low": pr["low"], "high": pr["high"], "deals": pr["deals"],
            "games": pr["games"], "fair": 1.0 / players,
            "no_winner": int(ar.records.truncated.sum()),
            "mean_length": float(ar.records.length.mean()), "seconds": ar.seconds}


def part_two(model: str, deals: int, seed: int) -> list[dict]:
    rows = []
    for preset in PRESET_NAMES:
        for b in BASELINES:
            ar = run_arena([model, b], preset, 2, _games(deals, 2), seed, mirrored=True,
                           rating=False)
            rows.append(_row(ar, 0, "two", preset, 2, b))
            print(_line(rows[-1]), file=sys.stderr)
    return rows


def parse_tables(text: str, best: dict[str, str], script: str) -> list[tuple[str, int]]:
    """``<preset>-<players>`` names, comma-separated, as ``(preset, players)``; a preset of
    ``best`` and 2-10 players, each table once, or the script exits with one line naming the
    table."""
    tables = []
    for name in text.split(","):
        preset, _, n = name.rpartition("-")   # ASCII digits, no leading zero (ono-02, ono-²)
        if preset not in best or not is_decimal(n) or not 2 <= int(n) <= 10:
            sys.exit(f"{script}: table {name!r}; allowed: <preset>-<players> with a preset "
                     f"of {', '.join(best)} and 2-10 players")
        tables.append((preset, int(n)))
    distinct(script, "--tables", [f"{preset}-{n}" for preset, n in tables])
    return tables


def best_baselines(rows: list[dict]) -> dict[str, str]:
    """Per preset, the baseline the generalist scored lowest against at 2 players."""
    out: dict[str, str] = {}
    for preset in PRESET_NAMES:
        mine = [r for r in rows if r["what"] == "two" and r["preset"] == preset]
        if mine:
            out[preset] = min(mine, key=lambda r: r["share"])["opponent"]
    return out


def read_rows(path: Path, script: str) -> list[dict]:
    """The measurement rows of a ``results.json`` this script wrote (``--best-from``), or one
    error naming the file and what is wrong with it (missing, not JSON, no part ``two``)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        sys.exit(f"{script}: --best-from {path}: cannot read the rows of a results.json of "
                 f"bench_generalist.py ({type(exc).__name__}: {exc})")
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        # before: Python's words for '[]' ("list indices must be integers or slices")
        sys.exit(f"{script}: --best-from {path}: not a results.json of bench_generalist.py "
                 f"(an object whose 'rows' are a list of measurements)")
    two = [r for r in rows if r.get("what") == "two"]
    if not two:
        sys.exit(f"{script}: --best-from {path}: no part 'two' (the 2-player pairings that "
                 f"name each preset's best baseline)")
    if not all(isinstance(r.get("preset"), str) and isinstance(r.get("opponent"), str)
               and isinstance(r.get("share"), (int, float)) for r in two):
        sys.exit(f"{script}: --best-from {path}: a row of part 'two' lacks its preset, "
                 f"opponent or share")
    other = sorted({r["opponent"] for r in two} - set(BASELINES))
    if other:   # before: a traceback, or an error naming an option not given, at its first use
        sys.exit(f"{script}: --best-from {path}: part 'two' names the opponent(s) "
                 f"{', '.join(map(repr, other))}; allowed: the baselines part two plays "
                 f"({', '.join(BASELINES)})")
    missing = [p for p in PRESET_NAMES if not any(r["preset"] == p for r in two)]
    if missing:
        sys.exit(f"{script}: --best-from {path}: part 'two' names no best baseline for "
                 f"{', '.join(missing)}; allowed: a results.json whose part two measured every "
                 f"preset ({', '.join(PRESET_NAMES)})")
    return rows


def part_many(model: str, counts: tuple[int, ...], deals: int, seed: int, best: dict[str, str],
              what: str, presets: tuple[str, ...] = PRESET_NAMES) -> list[dict]:
    rows = []
    for preset in presets:
        b = best[preset]
        for n in counts:
            ar = run_arena([model] + [b] * (n - 1), preset, n, _games(deals, n), seed,
                           mirrored=True, rating=False)
            rows.append(_row(ar, 0, what, preset, n, b))
            print(_line(rows[-1]), file=sys.stderr)
    return rows


def part_specialists(model: str, deals: int, deals_many: int, seed: int,
                     best: dict[str, str]) -> list[dict]:
    rows = []
    for name, preset in (("ppo-basic-2p", "basic"), ("ppo-classic-2p", "classic")):
        ar = run_arena([model, name], preset, 2, _games(deals, 2), seed, mirrored=True,
                       rating=False)
        rows.append(_row(ar, 0, "specialist", preset, 2, name))
        rows[-1]["agreement"] = agreement(model, name, {"preset": preset, "num_players": 2},
                                          1_000, seed)
        print(_line(rows[-1]), file=sys.stderr)
    b = best["basic"]
    ar = run_arena([model, "ppo-basic-4p", b, b], "basic", 4, _games(deals_many, 4), seed,
                   mirrored=True, rating=False)
    mine, theirs = _row(ar, 0, "specialist-table", "basic", 4, f"ppo-basic-4p + 2 x {b}"), \
        _row(ar, 1, "specialist-table", "basic", 4, "(ppo-basic-4p's own share)")
    deals_a, share_a, _ = ar.per_deal(0, 1)
    deals_b, share_b, _ = ar.per_deal(1, 0)
    assert np.array_equal(deals_a, deals_b)
    # the arena's interval for a bounded mean (before: a plain normal one, of no width where
    # every deal gave the same difference)
    mine["difference"] = list(bounded_mean_interval(share_a - share_b, -1.0, 1.0,
                                                    len(seatings(4))))
    rows += [mine, theirs]
    for r in rows[-2:]:
        print(_line(r), file=sys.stderr)
    return rows


def _line(r: dict) -> str:
    extra = ""
    if "difference" in r:
        d = r["difference"]
        extra = f"; paired difference {100 * d[0]:+.1f} [{100 * d[1]:+.1f}, {100 * d[2]:+.1f}]"
    return (f"{r['what']:<16} {r['preset']:<10} {r['players']:>2}p vs {r['opponent']:<28} "
            f"{100 * r['share']:5.1f}% [{100 * r['low']:.1f}, {100 * r['high']:.1f}] "
            f"(fair {100 * r['fair']:.0f}%, {r['deals']:,} deals, {r['games']:,} games, "
            f"{r['seconds']:.0f} s){extra}")


def model_file(model: str) -> dict:
    """The model's file: its SHA-256 and training steps (a registered name or a path)."""
    path = shipped_models().get(model, Path(model))
    return {"model_sha256": model_sha256(path),
            "training_steps": int(read_metadata(path)["training_steps"])}


MODEL_HELP = (f"a shipped model ({', '.join(shipped_models())}) or a model file "
              f"(.safetensors); not a baseline or search agent (default ppo-any)")
BEST_FROM_HELP = ("the results.json of bench_generalist.py whose part two names each preset's "
                  "best baseline (default: the published one)")
RESULTS_OUT_HELP = "folder of results.json and results.md (refused when it holds them)"


def add_probe_arguments(ap: argparse.ArgumentParser) -> None:
    """The options that ``bench_color_symmetry.py`` and ``bench_probes.py`` share (after
    their ``--tables``)."""
    ap.add_argument("--deals", type=int, default=10_000, help="deals per table (default 10,000)")
    ap.add_argument("--seed", type=int, default=2026, help="the deals' seed (default 2026)")
    ap.add_argument("--model", default="ppo-any", help=MODEL_HELP)
    ap.add_argument("--best-from", type=path_arg, default=GENERALIST_RESULTS, help=BEST_FROM_HELP)
    ap.add_argument("--out", type=path_arg, required=True, help=RESULTS_OUT_HELP)


def probe_setup(args: argparse.Namespace, script: str
                ) -> tuple[dict[str, str], list[tuple[str, int]], Path]:
    """The preset's best baselines, the tables of ``--tables`` and the model's path, or one
    error (``script`` names the script) naming a bad table or ``--deals``."""
    best = best_baselines(read_rows(args.best_from, script))
    tables = parse_tables(args.tables, best, script)
    checked_deals(script, "--deals", args.deals, [n for _, n in tables])
    checked_seed(script, "--seed", args.seed)
    return best, tables, model_path(args.model, script)


def one_table_args(ap: argparse.ArgumentParser, against: str) -> None:
    """The options :func:`one_table_setup` reads: ``--table``, ``--model``, ``--against``
    (``against``: its help) and ``--best-from``."""
    ap.add_argument("--table", default="ono-6", help="<preset>-<players>, 2-10 players")
    ap.add_argument("--model", default="ppo-any", help="ppo-any or a version-2 model file")
    ap.add_argument("--against", default="best", help=against)
    ap.add_argument("--best-from", type=path_arg, default=GENERALIST_RESULTS, help=BEST_FROM_HELP)


def one_table_setup(args: argparse.Namespace, script: str) -> tuple[str, int, str, Any, Path, Any]:
    """The one table of ``--table``, against ``--against`` (``best``: the preset's best
    baseline; a compiled baseline), with the version-2 policy ``--model``: ``(preset, players,
    baseline, rules, the model's file, the policy)``, or one error (``script`` names the
    script) naming a bad table, ``--deals``, ``--against`` or ``--model`` (refused here, with
    the loader's reason, if it cannot play the table)."""
    from ono_env.agents.search import POLICIES

    best = best_baselines(read_rows(args.best_from, script))
    tables = parse_tables(args.table, best, script)
    if len(tables) != 1:
        sys.exit(f"{script}: --table {args.table!r}; allowed: one table, <preset>-<players>")
    (preset, players), = tables
    checked_deals(script, "--deals", args.deals, (players,))
    against = best[preset] if args.against == "best" else args.against
    if against not in POLICIES:
        sys.exit(f"{script}: --against {args.against!r}; allowed: best, {', '.join(POLICIES)}")
    path = model_path(args.model, script)   # a shipped name or a file
    rules = resolve_rules(preset, num_players=players)
    try:
        policy = make_agent(args.model, rules)
    except (OSError, ValueError) as exc:
        sys.exit(f"{script}: --model {args.model!r} at {args.table}: {exc}")
    if getattr(policy, "observation_version", None) != 2:
        sys.exit(f"{script}: --model {args.model!r}: observation version "
                 f"{getattr(policy, 'observation_version', None)}; allowed: a version-2 model "
                 f"(ppo-any or a model file trained with observation_version: 2)")
    return preset, players, against, rules, path, policy


def model_path(model: str, script: str) -> Path:
    """The file of ``--model`` ``model``: a shipped model's or a model file; one error naming
    what is allowed when it is neither (a baseline's name, say)."""
    shipped = shipped_models()
    path = shipped.get(model, Path(model))
    if not path.is_file():
        what = ("no such file" if not path.exists() and ("/" in model or path.suffix)
                else "a folder" if path.is_dir() else "neither a shipped model nor a model file")
        sys.exit(f"{script}: --model {model!r}: {what}; allowed: a shipped model "
                 f"({', '.join(shipped)}) or the path of a model file")
    return path


def share_cell(share: float, fair: float) -> str:
    """A share in a probe page's table: ``19.04% (1.143x)`` (the multiple of the fair share)."""
    return f"{100 * share:.2f}% ({share / fair:.3f}x)"


def difference_cell(d: list[float]) -> str:
    """A per-deal difference ``[mean, low, high]`` in points: ``+0.30 [-0.01, +0.61]``."""
    return f"{100 * d[0]:+.2f} [{100 * d[1]:+.2f}, {100 * d[2]:+.2f}]"


def write_probe_results(out: Path, script: str, model: str, rows: list[dict], title: str,
                        about: str, table: list[str]) -> None:
    """The pages of the scripts that play a changed model against the model itself
    (``bench_color_symmetry.py``, ``bench_probes.py``): ``results.json`` (the command,
    ``model`` and ``rows``) and ``results.md`` (``title``, the command, ``about`` and the
    ``table``'s lines) in ``out``, the page printed too."""
    command = f"python benchmarks/{script} " + shlex.join(sys.argv[1:])
    (out / "results.json").write_text(json.dumps(
        {"command": command, "model": model, "rows": rows}, indent=1) + "\n")
    lines = [f"# {title}", "", f"`{command}`", "",
             f"`{model}` in one seat, the preset's best baseline in every other; mirrored deals "
             f"(every seating of each deal), 95% interval over deals. {about}", "", *table]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def write_md(out: Path, rows: list[dict], model: str, commands: dict[str, str],
             info: dict) -> None:
    """results.md: ``commands`` maps each part to the arguments of the call that measured it."""
    parts = [p for p in ("two", "many", "ten", "specialists") if p in commands]
    by_args: dict[str, list[str]] = {}
    for p in parts:
        by_args.setdefault(commands[p], []).append(p)
    lines = ["# The generalist's targets", "",
             f"Model `{model}`: {info['training_steps']:,} learner steps, model file SHA-256 "
             f"{info['model_sha256'][:12]}...; measured with", ""]
    lines += [f"- `python benchmarks/bench_generalist.py {a}` ({', '.join(ps)})"
              for a, ps in by_args.items()]
    lines += ["",
             "Mirrored deals (every seating of each deal), 95% interval over deals; a game with "
             "no winner shares 1/N to every seat.", "",
             "| part | preset | players | against | share | 95% interval | fair | x fair | deals | "
             "mean length | no winner |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['what']} | {r['preset']} | {r['players']} | {r['opponent']} | "
            f"{100 * r['share']:.1f}% | [{100 * r['low']:.1f}, {100 * r['high']:.1f}] | "
            f"{100 * r['fair']:.0f}% | {r['share'] / r['fair']:.2f} | {r['deals']:,} | "
            f"{r['mean_length']:,.0f} | {r['no_winner']:,} |")
    diffs = [r for r in rows if "difference" in r]
    for r in diffs:
        d = r["difference"]
        lines += ["", f"Paired difference at basic 4 players (the generalist's share minus "
                      f"ppo-basic-4p's, same deals): {100 * d[0]:+.2f} points "
                      f"[{100 * d[1]:+.2f}, {100 * d[2]:+.2f}]."]
    for r in rows:
        if "agreement" in r:
            a = r["agreement"]
            lines += ["", f"How alike it plays {r['opponent']}: it picks that policy's action at "
                          f"{100 * a['agreement']:.1f}% [{100 * a['low']:.1f}, {100 * a['high']:.1f}] "
                          f"of {a['decisions']:,} decisions with a choice, in 1,000 games the "
                          f"specialist plays at both seats (`ono_env.arena.agreement`)."]
    (out / "results.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--model", default="ppo-any", help=MODEL_HELP)
    ap.add_argument("--parts", default="two,many,ten,specialists",
                    help=f"the parts to measure, comma-separated, of {', '.join(PARTS)} (default: "
                         f"all)")
    ap.add_argument("--deals", type=int, default=10_000, help="deals per 2-player pairing")
    ap.add_argument("--deals-many", type=int, default=2_000, help="deals per 3-6 player table")
    ap.add_argument("--deals-ten", type=int, default=300, help="deals per 10-player table")
    ap.add_argument("--ten-presets", default=",".join(PRESET_NAMES),
                    help="the presets of part ten, comma-separated (default: all)")
    ap.add_argument("--seed", type=int, default=2026, help="the deals' seed (default 2026)")
    ap.add_argument("--again", action="store_true", help="measure parts already in results.json")
    ap.add_argument("--best-from", type=path_arg, default=None,
                    help="take each preset's best baseline from part two of this results.json "
                         "(to measure part many or ten alone, in another folder)")
    ap.add_argument("--out", type=path_arg, required=True,
                    help="folder of results.json and results.md (adds to them: a part measured "
                         "is kept)")
    args = ap.parse_args()
    best_rows = read_rows(args.best_from, "bench_generalist") if args.best_from else None
    parts = distinct("bench_generalist", "--parts", args.parts.split(","))
    unknown = [p for p in parts if p not in PARTS]
    if unknown:
        sys.exit(f"bench_generalist: --parts {args.parts!r}: unknown part(s) "
                 f"{', '.join(repr(p) for p in unknown)}; allowed: {', '.join(PARTS)}")
    # each at the table sizes it is played at (part specialists: --deals at 2 players,
    # --deals-many at 4)
    for option, value, sizes in (("--deals", args.deals, (2,)),
                                 ("--deals-many", args.deals_many, (3, 4, 6)),
                                 ("--deals-ten", args.deals_ten, (10,))):
        checked_deals("bench_generalist", option, value, sizes)
    checked_seed("bench_generalist", "--seed", args.seed)
    ten = distinct("bench_generalist", "--ten-presets", args.ten_presets.split(","))
    if any(p not in PRESET_NAMES for p in ten):
        sys.exit(f"bench_generalist: --ten-presets {args.ten_presets!r}; allowed: presets of "
                 f"{', '.join(PRESET_NAMES)}, comma-separated")
    model_path(args.model, "bench_generalist")   # a baseline's name, say: what is allowed
    try:   # the model's file, and an agent of it at every table it will play
        info = model_file(args.model)
        for preset in PRESET_NAMES:
            for n in (2, 3, 4, 6, 10):
                make_agent(args.model, resolve_rules(preset, num_players=n))
    except (OSError, ValueError, KeyError) as exc:
        sys.exit(f"bench_generalist: --model {args.model!r}: {exc}; allowed: a shipped model "
                 f"({', '.join(shipped_models())}) or a model file that plays every preset at "
                 f"2-10 players")
    out_folder(args.out, "bench_generalist")
    path = args.out / "results.json"
    try:
        data = json.loads(path.read_text()) if path.is_file() else {"rows": []}
        if not isinstance(data, dict):
            raise TypeError("it is not an object with rows")
        rows: list[dict] = data["rows"]
        if not isinstance(rows, list) or not all(
                isinstance(r, dict) and isinstance(r.get("what"), str) for r in rows):
            raise TypeError("its rows are not a list of measurements, each with its part "
                            "('what')")
        commands: dict[str, str] = data.get("commands", {})   # part -> the arguments that measured it
        if not isinstance(commands, dict):
            raise TypeError("its commands are not an object")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        sys.exit(f"bench_generalist: --out: {path}: cannot read the rows measured before "
                 f"({type(exc).__name__}: {exc}); allowed: an --out without results.json, or "
                 f"with one this script wrote")
    if rows and data.get("model_sha256") != info["model_sha256"]:
        if set(parts) != set(PARTS):   # the other model's rows would be dropped, unmeasured
            sys.exit(f"bench_generalist: --out: {path} holds the rows of another model file "
                     f"({data.get('model')!r}, SHA-256 {str(data.get('model_sha256'))[:12]}...) "
                     f"than --model {args.model!r} (SHA-256 {info['model_sha256'][:12]}...); "
                     f"allowed: another --out, or --parts {','.join(PARTS)} to measure every "
                     f"part again for this model")
        print(f"{path}: its rows measured another model file; measuring every part again",
              file=sys.stderr)
        rows, commands = [], {}
    # each part's opponents are the presets' best baselines, from part two: known before any
    # game (before: a preset with none was played against greedy, without a word)
    known = set(best_baselines(rows if best_rows is None else best_rows))
    for part in parts:
        if part == "two":
            known |= set(PRESET_NAMES) if best_rows is None else set()
            continue
        needed = {"many": PRESET_NAMES, "ten": tuple(ten), "specialists": ("basic",)}[part]
        missing = [p for p in needed if p not in known]
        what = {"specialists": ("specialist", "specialist-table")}.get(part, (part,))
        if missing and (args.again or not any(r["what"] in what for r in rows)):
            remove_made_dirs()   # the --out folder made above goes again, where empty
            sys.exit(f"bench_generalist: --parts {part} plays each preset's best baseline, "
                     f"which part two finds, and {args.out} holds no part two for "
                     f"{', '.join(missing)}; allowed: --parts two,{part}, or --best-from a "
                     f"results.json with part two (as docs/results/generalist/results.json)")
    for part in parts:   # a part kept must have been measured as asked now
        what = {"specialists": ("specialist", "specialist-table")}.get(part, (part,))
        if args.again or not any(r["what"] in what for r in rows) or part not in commands:
            continue
        with contextlib.redirect_stderr(io.StringIO()):
            try:
                before = ap.parse_args(shlex.split(commands[part]))
            except (SystemExit, ValueError):   # written by another version of this script
                continue
        differ = [f"--{name.replace('_', '-')} {getattr(before, name)}"
                  for name in PART_OPTIONS[part]
                  if _as_measured(name, getattr(before, name)) != _as_measured(name, getattr(args, name))]
        if differ:   # before: "already measured", the rows of the other options kept
            remove_made_dirs()
            sys.exit(f"bench_generalist: --parts {part}: {path} holds it measured with "
                     f"{', '.join(differ)}, not as asked now; allowed: --again to measure it "
                     f"again, or the options it was measured with")
    for part in parts:
        what = {"specialists": ("specialist", "specialist-table")}.get(part, (part,))
        if any(r["what"] in what for r in rows) and not args.again:
            print(f"{part}: already measured (--again to measure it again)", file=sys.stderr)
            continue
        rows = [r for r in rows if r["what"] not in what]
        t = time.perf_counter()
        best = best_baselines(rows if best_rows is None else best_rows)
        if part == "two":
            rows += part_two(args.model, args.deals, args.seed)
        elif part == "many":
            rows += part_many(args.model, (3, 4, 6), args.deals_many, args.seed, best, "many")
        elif part == "ten":
            presets = tuple(ten)
            rows += part_many(args.model, (10,), args.deals_ten, args.seed, best, "ten", presets)
        else:
            rows += part_specialists(args.model, args.deals, args.deals_many, args.seed, best)
        print(f"{part}: {time.perf_counter() - t:.0f} s", file=sys.stderr)
        commands[part] = shlex.join(sys.argv[1:])
        data = {"model": args.model, **info, "commands": commands, "rows": rows}
        # whole or not at all: it holds the parts measured before (a kill mid-write lost them)
        write_whole(path, (json.dumps(data, indent=1) + "\n").encode(), "results.json")
        write_md(args.out, rows, args.model, commands, info)
    write_md(args.out, rows, args.model, commands, info)
    print((args.out / "results.md").read_text())


if __name__ == "__main__":
    run_script("bench_generalist", main)
