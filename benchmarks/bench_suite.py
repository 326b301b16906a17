"""The benchmark suite's published ladder, and the time ``ono-bench`` takes.

    python benchmarks/bench_suite.py ladder                 # every table (resumes: a table
                                                            # whose JSON exists is kept)
    python benchmarks/bench_suite.py ladder --tables basic-2p ono-4p --force
    python benchmarks/bench_suite.py ladder --reuse-from 1 --verify 5   # carry over version
                                          # 1's pairings with the same key, some replayed
    python benchmarks/bench_suite.py verify                 # replay carried-over pairings
    python benchmarks/bench_suite.py render                 # the tables' pages from their JSON
    python benchmarks/bench_suite.py publish                # configs/bench/ladder-<v>.json and
                                                            # the docs index from the JSONs
    python benchmarks/bench_suite.py time greedy ppo-any
    python benchmarks/bench_suite.py intervals docs/results/suite-1/timing/greedy/card.json

``ladder``: the reference field of each table against itself
(:func:`ono_env.arena.suite.play_ladder`), written to ``docs/results/suite-<v>/<table>.json``
and ``<table>.md``. ``publish``: collects those files into the ladder that ``ono-bench`` reads
(the field's ratings per table and the SHA-256 of each learned reference agent's model file)
and writes the docs index page. ``time``: runs ``ono-bench AGENT`` over the whole suite at its
default size for each agent named, one after another, and writes their cards and times to
``docs/results/suite-<v>/timing/``. ``intervals``: the half-widths a card at the default
deal counts gives, written to ``docs/results/suite-<v>/timing/intervals.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from bench_args import at_least, parser, run_script, sub_run, was_given

from ono_env.agents import make_agent
from ono_env.agents.base import marked
from ono_env.arena.suite import (
    field_models,
    fit_ratings,
    format_card_markdown,
    format_ladder_markdown,
    ladder_path,
    ladder_plan,
    load_suite,
    pairing_key,
    play_ladder,
    play_pairing,
    read_card,
    read_ladder,
    resolve_agent,
    select_tables,
    suite_versions,
    with_todays_interval,
)

ROOT = Path(__file__).resolve().parent.parent


def out_dir(version: int) -> Path:
    return ROOT / "docs" / "results" / f"suite-{version}"


def shown(path: Path) -> Path:
    """``path`` as a message names it: from the repository's root when it is inside it."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def carried_over(old_version: int, name: str) -> dict[str, dict]:
    """The pairings of table ``name`` in version ``old_version``'s ladder files, by their
    pairing key (computed from that version's suite and the models its file names)."""
    old = load_suite(old_version)
    path = out_dir(old.version) / f"{name}.json"
    if name not in old.tables or not path.exists():
        return {}
    data = json.loads(path.read_text())
    out = {}
    for rec in data["pairings"]:
        key = pairing_key(old, old.tables[name], rec["agent"], rec["reference"], rec["deals"],
                          data["models"])
        if rec.get("key", key) != key:
            sys.exit(f"bench_suite: {path}: a pairing's key does not match its inputs")
        out[key] = {**rec, "key": key, "from_version": rec.get("from_version", old.version)}
    return out


def replayed_alike(suite, name: str, records, n: int) -> bool:
    """Play again the ``n`` quickest carried-over pairings of table ``name`` (those with a
    ``from_version``), and the quickest one with a learned agent and the quickest with the
    search agent or a ceiling: do they give the same numbers as their records?"""
    t = suite.tables[name]
    slow = {r.name for r in t.field if r.slow}
    carried = sorted((r for r in records if "from_version" in r), key=lambda r: r["seconds"])
    learned = [r for r in carried if {r["agent"], r["reference"]} & {"ppo-any", *t.names()[5:]}
               - slow]
    searched = [r for r in carried if {r["agent"], r["reference"]} & slow]
    chosen = {r["key"]: r for r in [*carried[:n], *learned[:1], *searched[:1]]}
    if not chosen:
        print("  nothing to verify: " + (f"none of its {len(records)} pairings was" if records
                                          else "no pairing was")
              + " carried over from another version (--reuse-from)", flush=True)
    alike = True
    for r in chosen.values():
        built = [make_agent(x, t.rules) for x in (r["agent"], r["reference"])]
        again = play_pairing(t.rules, *built, r["deals"], t.seed, suite.batch_size)
        same = all(again[k] == r[k] for k in ("rate", "wins", "no_winner", "games"))
        alike &= same
        print(f"  verify {r['agent']} vs {r['reference']} (v{r['from_version']}): "
              f"{'the same' if same else 'DIFFERENT'}", flush=True)
    return alike


def verify(args: argparse.Namespace) -> None:
    """Replay carried-over pairings of this version's ladder files (no file is written)."""
    suite = load_suite(args.suite)
    select_tables(suite, args.tables)
    bad = []
    for name in args.tables or list(suite.tables):
        path = out_dir(suite.version) / f"{name}.json"
        print(f"{name}:", flush=True)
        if not path.exists():
            print(f"  nothing to verify: no ladder file yet ({shown(path)}; the "
                  f"ladder command plays it)", flush=True)
            continue
        if not replayed_alike(suite, name, json.loads(path.read_text())["pairings"], args.n):
            bad.append(name)
    if bad:
        sys.exit(f"bench_suite: verify: carried-over pairings play differently now at "
                 f"{', '.join(bad)}")


def with_ladder_files(version: int) -> bool:
    """Whether suite version ``version`` has a table's ladder file to carry pairings over from."""
    return any((out_dir(version) / f"{n}.json").exists() for n in load_suite(version).tables)


def ladder(args: argparse.Namespace) -> None:
    suite = load_suite(args.suite)
    select_tables(suite, args.tables)
    for v in args.reuse_from:   # every version before any table: none is ignored silently
        try:
            load_suite(v)
        except ValueError as exc:
            raise ValueError(f"--reuse-from {v}: {exc}") from None
        if not with_ladder_files(v):
            have = [str(w) for w in suite_versions() if with_ladder_files(w)]
            raise ValueError(f"--reuse-from {v}: suite version {v} has no ladder file "
                             f"({shown(out_dir(v))}/<table>.json) to carry pairings over "
                             f"from; allowed: a version with them ("
                             + (", ".join(have) if have else "none has any yet") + ")")
    out = out_dir(suite.version)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.tables or list(suite.tables):
        path = out / f"{name}.json"
        if path.exists() and not args.force:
            print(f"{name}: kept ({path.relative_to(ROOT)})", flush=True)
            continue
        # pairings already played: another version's (the same key: the same games) and
        # this table's interrupted run (kept after every pairing in <table>.partial.json)
        reuse: dict[str, dict] = {}
        for v in args.reuse_from:
            reuse.update(carried_over(v, name))
        partial = out / f"{name}.partial.json"
        done: list[dict] = json.loads(partial.read_text()) if partial.exists() else []
        reuse.update({r["key"]: r for r in done})
        t = suite.tables[name]
        models = field_models([t])
        needed = {pairing_key(suite, t, x, y, n, models)
                  for x, y, n in ladder_plan(t, anchors=suite.ladder_slow_anchors)}
        print(f"{name}:", flush=True)
        if args.verify and not replayed_alike(
                suite, name, [r for k, r in reuse.items() if k in needed], args.verify):
            sys.exit(f"bench_suite: ladder: {name}: a carried-over pairing plays differently now; "
                     f"play the table without --reuse-from")

        def show(r: dict, reuse: dict = reuse, done: list = done, partial: Path = partial) -> None:
            if r["key"] not in reuse:
                done.append(r)
                partial.write_text(json.dumps(done, indent=1) + "\n")
            where = f"(v{r['from_version']})" if "from_version" in r else (
                "(kept)" if r["key"] in reuse else "")
            print(f"  {r['agent']:>16} vs {r['reference']:<16} {100 * r['rate']:5.1f} "
                  f"[{100 * r['low']:.1f}, {100 * r['high']:.1f}] {r['deals']} deals "
                  f"{r['seconds']:7.1f} s {where}", flush=True)

        data = play_ladder(suite.version, name, on_pairing=show, reuse=reuse)
        data["command"] = (f"python benchmarks/bench_suite.py --suite {suite.version} ladder "
                           f"--tables {name} --force"
                           + "".join(f" --reuse-from {v}" for v in args.reuse_from))
        path.write_text(json.dumps(data, indent=1) + "\n")
        (out / f"{name}.md").write_text(format_ladder_markdown(data, data["command"]))
        partial.unlink(missing_ok=True)
        print(f"{name}: {data['seconds']:.0f} s", flush=True)


def render(args: argparse.Namespace) -> None:
    """The pages of the tables played, again from their JSON (no game played)."""
    suite = load_suite(args.suite)
    out = out_dir(suite.version)
    for name in suite.tables:
        path = out / f"{name}.json"
        if path.exists():
            data = json.loads(path.read_text())
            # files written before today's interval over deals: each pairing's interval
            # computed again from the plain one it holds (with_todays_interval)
            data["pairings"] = [with_todays_interval(p) for p in data["pairings"]]
            # the ratings fitted again from the same pairings (files written before the fit
            # reached the maximum for an agent that wins nearly every game)
            data["ratings"] = fit_ratings(list(data["ratings"]), data["pairings"],
                                          suite.anchor, suite.anchor_rating)
            path.write_text(json.dumps(data, indent=1) + "\n")
            (out / f"{name}.md").write_text(format_ladder_markdown(data, data["command"]))


def publish(args: argparse.Namespace) -> None:
    suite = load_suite(args.suite)
    out = out_dir(suite.version)
    tables, missing = {}, []
    for name in suite.tables:
        path = out / f"{name}.json"
        if not path.exists():
            missing.append(name)
            continue
        data = json.loads(path.read_text())
        tables[name] = {"ratings": data["ratings"], "cheating": data["cheating"],
                        "pairings": len(data["pairings"]),
                        "min_deals": min(p["deals"] for p in data["pairings"])}
        if data["models"] != field_models([suite.tables[name]]):
            sys.exit(f"bench_suite: publish: {name}: its ladder was played with other model "
                     f"files; play it again")
    if missing:
        sys.exit(f"bench_suite: publish: no ladder yet for {', '.join(missing)}: run the ladder "
                 f"command first")
    published = {"suite_version": suite.version, "anchor": {"agent": suite.anchor,
                                                            "rating": suite.anchor_rating},
                 "models": field_models(list(suite.tables.values())), "tables": tables}
    ladder_path(suite.version).write_text(json.dumps(published, indent=1) + "\n")
    lines = [f"# Benchmark suite version {suite.version}: the published ladder", "",
             "The reference field of each table against itself; each page says how it was made. "
             "`ono-bench` places an agent on these scales (`greedy` = 1000 at every table).", "",
             "| table | ratings (best first) | fewest deals in a pairing |", "|---|---|---|"]
    for name, t in tables.items():
        best = sorted(t["ratings"].items(), key=lambda kv: -kv[1]["rating"])
        cells = ", ".join(f"{marked(n, n in t['cheating'])} "
                          f"{r['rating']:.0f}" for n, r in best)
        lines.append(f"| [{name}]({name}.md) | {cells} | {t['min_deals']} |")
    timing = out / "timing" / "timing.md"
    if timing.exists():
        lines += ["", "## How long ono-bench takes", "", "```{include} timing/timing.md", "```"]
    lines += ["", "```{toctree}", ":hidden:", "", *[f"{n}.md" for n in tables], "```", ""]
    (out / "index.md").write_text("\n".join(lines))
    print(f"wrote {ladder_path(suite.version)} and {(out / 'index.md').relative_to(ROOT)}")


def name_part(agent: str, colon: str = "-") -> str:
    """``agent`` (a name, a spec or a model file's path) as one part of a file name under
    ``timing/``: ``:`` as ``colon``, and any other character but letters, digits, ``.``,
    ``_`` and ``-`` (a path's ``/``) as ``-`` (before: a model file's path made folders
    inside ``timing/``, and the table's file could not be written after every agent was
    timed)."""
    text = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else colon if c == ":" else "-"
                   for c in agent)
    return text.lstrip("-.") or "agent"


def timing(args: argparse.Namespace) -> None:
    suite = load_suite(args.suite)
    chosen = select_tables(suite, args.tables)
    if not 1 <= args.workers <= 256:
        raise ValueError(f"--workers {args.workers}; allowed: a whole number from 1 to 256")
    out = out_dir(suite.version) / "timing"
    folders = {agent: out / name_part(agent) for agent in args.agents}
    read_ladder(suite)   # ono-bench's own checks, for every agent before the first is timed
    for k, agent in enumerate(args.agents):
        twin = next((a for a in args.agents[:k] if folders[a] == folders[agent]), None)
        if twin is not None:
            raise ValueError(f"agent {agent!r}: " + (
                "given twice" if twin == agent else
                f"its card's folder {folders[agent].name} is {twin!r}'s too")
                + "; allowed: each agent once")
        for t in chosen:
            try:
                resolve_agent(agent, t.rules)
            except (OSError, TypeError, ValueError) as exc:
                raise ValueError(f"agent {agent!r} at {t.name}: {exc}") from None
        held = [n for n in ("card.json", "card.md", "pairings.jsonl")
                if (folders[agent] / n).exists()]
        if held:   # ono-bench would refuse it after the agents before it were timed
            raise ValueError(f"agent {agent!r}: {folders[agent]} already holds "
                             f"{', '.join(held)} (an earlier run's card); allowed: remove them")
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for agent in args.agents:
        folder = folders[agent]
        t = time.perf_counter()
        sub_run("bench_suite: time", [sys.executable, "-m", "ono_env.apps.bench_cli", agent, "--suite",
                                str(suite.version), "--out", str(folder), "--no-progress",
                                "--workers", str(args.workers),
                                *(["--tables", *args.tables] if args.tables else [])],
                stdout=subprocess.DEVNULL)   # ono-bench prints its own one line on failure
        seconds = time.perf_counter() - t
        card = read_card(folder / "card.json")
        (folder / "card.md").write_text(format_card_markdown(card))
        rows.append((agent, seconds, card))
        print(f"{agent}: {seconds:.0f} s", flush=True)
    where = "whole suite" if not args.tables else ", ".join(args.tables)
    lines = [f"| agent | wall time, {where} (s) | slowest table (s of pairings) | "
             "deals per pairing (fast / slow reference agents) |", "|---|---|---|---|"]
    for agent, seconds, card in rows:
        slowest = max(card["timing"]["tables"].items(), key=lambda kv: kv[1])
        deals = sorted({(r["deals"], r["slow"]) for t in card["tables"].values() for r in t["rows"]})
        fast = sorted({d for d, s in deals if not s})
        slow = sorted({d for d, s in deals if s})
        lines.append(f"| {agent} | {seconds:.0f} | {slowest[0]} {slowest[1]:.0f} | "
                     f"{'-'.join(map(str, (fast[0], fast[-1])))} / "
                     f"{'-'.join(map(str, (slow[0], slow[-1])))} |")
    flags = f" --tables {' '.join(args.tables)}" if args.tables else ""
    # the agents before --tables: after it, --tables would take them as tables
    lines += ["", f"Measured with `python benchmarks/bench_suite.py --suite {suite.version} time "
                  f"--workers {args.workers} {' '.join(args.agents)}{flags}` ({args.workers} worker process"
                  f"{'es' if args.workers > 1 else ''}, one torch thread each; {args.note})."]
    name = ("timing.md" if not args.tables
            else f"timing-{'-'.join(name_part(a, colon='') for a in args.agents)}.md")
    (out / name).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def intervals(args: argparse.Namespace) -> None:
    """What the default deal counts give: per table, the deals and the median half-width of
    the 95% intervals of a card (fast and slow reference agents apart), written to
    ``docs/results/suite-<v>/timing/intervals.md`` (replacing it) and printed. The card must
    cover every table of its suite at the suite's default deal counts, the page's subject
    (before: any card was taken, one of ``--deals 2`` too, and replaced the page)."""
    import statistics

    card = read_card(args.card)
    suite = load_suite(card["suite_version"])
    if was_given("--suite") and load_suite(args.suite).version != suite.version:
        # before: --suite was taken and the page written under the card's own version
        sys.exit(f"bench_suite: intervals: --suite {args.suite} and {args.card}, a card of suite "
                 f"version {suite.version}; allowed: the card's version, or no --suite (the "
                 f"card says its version)")
    if set(card["tables"]) != set(suite.tables):
        sys.exit(f"bench_suite: intervals: {args.card} covers {len(card['tables'])} of suite "
                 f"version {suite.version}'s {len(suite.tables)} tables; allowed: a card of "
                 f"the whole suite (ono-bench AGENT, no --tables)")
    for name, t in card["tables"].items():
        table = suite.tables[name]
        for r in t["rows"]:
            default = table.slow_deals if r["slow"] else table.deals
            if r["deals"] != default:
                sys.exit(f"bench_suite: intervals: {args.card} played {r['reference']} at "
                         f"{name} on {r['deals']} deals, where the suite's default is "
                         f"{default}; allowed: a card at the default deal counts (ono-bench "
                         f"AGENT, no --deals or --slow-deals)")
    lines = [f"Intervals at the default deal counts (`{card['agent']['label']}`'s card): the "
             f"median half-width of the 95% interval per pairing, in points.", "",
             "| table | deals (fast) | half-width | deals (slow) | half-width |",
             "|---|---|---|---|---|"]
    for name, t in card["tables"].items():
        cells = []
        for slow in (False, True):
            rows = [r for r in t["rows"] if r["slow"] == slow and r["high"] > r["low"]]
            deals = sorted({r["deals"] for r in t["rows"] if r["slow"] == slow})
            half = statistics.median(100 * (r["high"] - r["low"]) / 2 for r in rows) if rows else 0
            cells += [", ".join(map(str, deals)), f"{half:.1f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", f"Made with `python benchmarks/bench_suite.py intervals {args.card}`."]
    path = out_dir(card["suite_version"]) / "timing" / "intervals.md"
    path.parent.mkdir(parents=True, exist_ok=True)   # a suite not yet timed has no folder
    path.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"written to {shown(path)}", file=sys.stderr)


ALL_TABLES = "the tables (default, or --tables with no names: every table of the suite)"


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--suite", default="latest", help="suite version (default: the latest)")
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("ladder", help="play the reference field's ladder, table by table")
    p.add_argument("--tables", nargs="*", help=ALL_TABLES)
    p.add_argument("--force", action="store_true", help="play tables whose JSON exists again")
    p.add_argument("--reuse-from", type=int, nargs="*", default=[], metavar="VERSION",
                   help="carry over the pairings of these versions' ladders that have the same "
                        "pairing key (the same games)")
    p.add_argument("--verify", type=int, default=0, metavar="N",
                   help="first play the N quickest carried-over pairings of each table again "
                        "and stop if one differs")
    p.set_defaults(run=ladder)
    p = sub.add_parser("verify", help="play carried-over pairings of the ladder files again")
    p.add_argument("--tables", nargs="*", help=ALL_TABLES)
    p.add_argument("-n", type=int, default=5, help="the N quickest of each table (default 5)")
    p.set_defaults(run=verify)
    p = sub.add_parser("render", help="write the tables' pages again from their JSON")
    p.set_defaults(run=render)
    p = sub.add_parser("publish", help="write the published ladder and the docs index")
    p.set_defaults(run=publish)
    p = sub.add_parser("time", help="time ono-bench over the whole suite for each agent")
    p.add_argument("agents", nargs="+",
                   help="the agents, each as ono-bench takes it (a registered name, a model "
                        "file, module:Class); each is checked at every table before any is timed")
    p.add_argument("--workers", type=int, default=2, help="ono-bench --workers (default 2)")
    p.add_argument("--tables", nargs="*",
                   help="ono-bench --tables (default, or --tables with no names: the whole "
                        "suite)")
    p.add_argument("--note", default="nothing else running",
                   help="what else the machine ran, for the table's caption")
    p.set_defaults(run=timing)
    p = sub.add_parser("intervals", help="the intervals a card's deal counts give: printed, "
                                         "and written to docs/results/suite-<v>/timing/"
                                         "intervals.md (a card of the whole suite at its "
                                         "default deal counts)")
    p.add_argument("card", help="a card.json of ono-bench")
    p.set_defaults(run=intervals)
    args = ap.parse_args()
    if args.what == "verify":
        at_least("bench_suite", "verify -n", args.n, 1)
    if args.what == "ladder":
        at_least("bench_suite", "ladder --verify", args.verify, 0)
    try:
        args.run(args)
    except (ValueError, OSError, KeyError) as exc:
        sys.exit(f"bench_suite: {args.what}: "
                 + (str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)))


if __name__ == "__main__":
    run_script("bench_suite", main)
