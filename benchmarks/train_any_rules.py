"""``ono-train default`` under every preset and table size: does the default config learn?

    python benchmarks/train_any_rules.py --tables ono:4,basic:2 --parallel 2 \
        --out docs/results/train-any-rules
    python benchmarks/train_any_rules.py --tables ono:4 --variant old --minutes 1.5 ...

Each table (``preset:players``) is trained with ``ono-train default rules=<preset>
num_players=<players>`` and the variant's overrides (``--variant``: ``default`` = none; ``old``
= the settings before the fix: ``ppo.gamma=0.99 ppo.truncation=bootstrap`` and the old fixed
opponent pool with random and the rules' own decision limit; ``gamma1`` and ``loss`` = one of
the two changes alone; ``nocut`` = the default without its shorter cut of training games), in its own
process with ``torch_threads=1`` so that ``--parallel`` runs share the cores evenly. Its final
evaluation (the run's own ``final_eval.json``) is read back, and the final model then plays a
mirrored-deal arena against ``players - 1`` copies of the table's best baseline (the one it
scores lowest against in the final evaluation): ``--deals`` deals, every seating of each deal,
so the luck of the cards cancels; the interval is over deals. Writes ``results.json`` and
``results.md`` into ``--out`` (appending to an existing results.json) and prints each row;
``--render`` writes them again from results.json, with the arena's interval of today.
"""

from __future__ import annotations

import fcntl
import json
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_args import (
    at_least,
    checked_deals,
    checked_seed,
    distinct,
    out_folder,
    parser,
    path_arg,
    positive_finite,
    refuse_unused,
    run_script,
)

from ono_env.arena.suite import LADDER_INTERVAL, with_todays_interval
from ono_env.checks import is_decimal

VARIANTS = {
    "default": [],
    "old": ["ppo.gamma=0.99", "ppo.truncation=bootstrap", "max_decisions=5000", "ppo.hand_shaping=0",
            "opponents={random: 1, greedy: 2, color: 1, defensive: 2}",
            "eval.opponents=[random, greedy, color, defensive]"],
    "gamma1": ["ppo.truncation=bootstrap"],
    "loss": ["ppo.gamma=0.99"],
    "nocut": ["max_decisions=5000"],
    "noshaping": ["ppo.hand_shaping=0"],
    "shaping0.02": ["ppo.hand_shaping=0.02"],
}


def run_dir_of(preset: str, players: int, variant: str, minutes: float | None, out: Path,
               extra: list[str]) -> Path:
    """The run folder of one table's training: named by the table, variant, minutes and
    overrides (a rerun of the same ones is refused while it is there: it holds the model
    that an earlier row of results.json names)."""
    slug = "".join(c if c.isalnum() or c in "._" else "-" for c in "-".join(extra))
    return out / "runs" / (f"{preset}-{players}p-{variant}" + ("" if minutes is None else f"-{minutes:g}min")
                           + (f"-{slug}" if slug else ""))


def train_command(preset: str, players: int, variant: str, minutes: float | None, out: Path,
                  extra: list[str]) -> list[str]:
    """The ``ono-train`` command of one table (its overrides from the third word on)."""
    run_dir = run_dir_of(preset, players, variant, minutes, out, extra)
    return (["ono-train", "default", f"rules={preset}", f"num_players={players}",
             f"run_dir={run_dir}", "torch_threads=1", "progress=false", *VARIANTS[variant], *extra]
            + ([] if minutes is None else [f"time_limit_minutes={minutes}"]))


def train_one(preset: str, players: int, variant: str, minutes: float | None, out: Path,
              extra: list[str]) -> dict:
    run_dir = run_dir_of(preset, players, variant, minutes, out, extra)
    cmd = train_command(preset, players, variant, minutes, out, extra)
    t0 = time.perf_counter()
    log = run_dir.parent / (run_dir.name + ".log")
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as fh:
        rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT).returncode
    final = json.loads((run_dir / "final_eval.json").read_text()) if rc == 0 else None
    return {"preset": preset, "players": players, "variant": variant, "command": shlex.join(cmd),
            "rc": rc, "seconds": time.perf_counter() - t0, "run_dir": str(run_dir),
            "final_eval": final}


def mirrored(row: dict, deals: int, seed: int) -> dict:
    from ono_env.arena import run_arena
    from ono_env.arena.play import seatings

    res = row["final_eval"]["results"]
    best = min(res, key=lambda r: r["win_rate"])["opponent"]
    P = row["players"]
    games = deals * len(seatings(P))   # every seating of each deal, as the arena plays them
    model = str(Path(row["run_dir"]) / "model.safetensors")
    ar = run_arena([model] + [best] * (P - 1), row["preset"], P, games, seed, mirrored=True,
                   rating=False)
    pr = ar.paired(0)
    return {"opponent": best, "deals": pr["deals"], "games": pr["games"], "share": pr["rate"],
            "low": pr["low"], "high": pr["high"], "interval": LADDER_INTERVAL, "fair": 1.0 / P,
            "no_winner": int(ar.records.truncated.sum()),
            "mean_length": float(ar.records.length.mean())}


def main() -> int | None:
    ap = parser(__doc__)
    ap.add_argument("--tables", help="preset:players,... (e.g. ono:4,basic:2)")
    ap.add_argument("--variant", default="default", choices=sorted(VARIANTS),
                    help="the training config's variant (default: default)")
    ap.add_argument("--minutes", type=float, default=None, help="time limit (default: the config's 7)")
    ap.add_argument("--parallel", type=int, default=2,
                    help="tables trained at a time (default 2)")
    ap.add_argument("--deals", type=int, default=2000, help="mirrored deals per table")
    ap.add_argument("--seed", type=int, default=12,
                    help="the mirrored arena's seed (default 12)")
    ap.add_argument("--extra", nargs="*", default=[], help="more key=value overrides")
    ap.add_argument("--out", type=path_arg, required=True,
                    help="folder of results.json, results.md and the tables' run folders "
                         "(runs/)")
    ap.add_argument("--only-mirror", action="store_true",
                    help="train nothing: play the mirrored arena again (--deals) for the rows of "
                         "results.json with these tables and --variant")
    ap.add_argument("--render", action="store_true",
                    help="train and play nothing: write results.md again from --out's "
                         "results.json, each mirrored interval as the arena gives it today")
    a = ap.parse_args()
    script = "train_any_rules"
    if a.render:   # it reads --out's results only (before: --tables was taken and ignored)
        if a.tables is not None:
            sys.exit(f"{script}: --render reads --out's results; --tables is not used there")
        # before: each of these was taken, and the run ended 0 as if it had been read
        refuse_unused(script, ("--variant", "--minutes", "--parallel", "--deals", "--seed",
                               "--extra", "--only-mirror"), "--render reads --out's results")
        return render(script, a.out)
    if a.tables is None:
        sys.exit(f"{script}: --tables is needed (preset:players,...), unless --render")
    tables = []
    for t in a.tables.split(","):
        preset, colon, players = t.partition(":")
        if not colon or not is_decimal(players):   # before: '٢' and '02' read as 2
            sys.exit(f"{script}: --tables {a.tables!r}: table {t!r}; allowed: preset:players "
                     f"(e.g. ono:4), comma-separated")
        tables.append((preset, int(players)))
    at_least(script, "--parallel", a.parallel, 1)
    if a.minutes is not None:
        positive_finite(script, "--minutes", a.minutes)
    from ono_env.train.config import check_override_keys, load_config
    for p, n in tables:   # every table's training config (rules, players, --extra) before any run
        overrides = train_command(p, n, a.variant, a.minutes, a.out, a.extra)[2:]
        try:   # ono-train refuses a key given twice (--extra's rules=, ppo.gamma= of a variant)
            check_override_keys(overrides)
            load_config("default", overrides)
        except ValueError as exc:
            sys.exit(f"{script}: --tables {p}:{n} with --variant {a.variant}"
                     + (f" --extra {' '.join(a.extra)}" if a.extra else "") + f": {exc}")
    checked_deals(script, "--deals", a.deals, [n for _, n in tables])
    checked_seed(script, "--seed", a.seed)
    path = a.out / "results.json"
    if a.only_mirror and not path.is_file():
        sys.exit(f"{script}: --only-mirror: no {path} to play again; allowed: an --out that "
                 f"holds the results.json of a run of this script")
    if a.only_mirror:   # rows this script wrote, and what playing them again needs, before any game
        try:
            rows = rows_of(path)
            for row in rows:
                row["preset"], row["players"], row["variant"], row["rc"], row["run_dir"]
        except (OSError, ValueError, TypeError, KeyError) as exc:
            sys.exit(f"{script}: --only-mirror: {path} is not the results.json of a run of this "
                     f"script ({type(exc).__name__}: {exc})")
        for p, n in tables:
            found = [r for r in rows if (r["preset"], r["players"], r["variant"]) == (p, n, a.variant)
                     and r["rc"] == 0]
            if not found:
                sys.exit(f"{script}: --only-mirror: {path} holds no finished run of {p}:{n} with "
                         f"--variant {a.variant}; allowed: the tables and variant of its rows")
            for r in found:
                model = Path(r["run_dir"]) / "model.safetensors"
                if not (isinstance(r.get("final_eval"), dict) and r["final_eval"].get("results")):
                    sys.exit(f"{script}: --only-mirror: the row of {r['run_dir']} in {path} has "
                             f"no final evaluation to choose the opponent from")
                if not model.is_file():
                    sys.exit(f"{script}: --only-mirror: {model} (the model of {p}:{n} in {path}) "
                             f"is not here; allowed: rows whose run folder holds its model")
    if not a.only_mirror:   # an earlier run of the same table and variant is kept
        distinct(script, "--tables", [f"{p}:{n}" for p, n in tables])
        if path.exists():   # the rows are added to it: read before any training, not after
            try:
                rows_of(path)
            except (OSError, ValueError) as exc:
                sys.exit(f"{script}: --out: {path} is not the results.json of a run of this "
                         f"script ({type(exc).__name__}: {exc}); allowed: an --out without one, "
                         f"or with one this script wrote")
        for p, n in tables:
            run_dir = run_dir_of(p, n, a.variant, a.minutes, a.out, a.extra)
            if not run_dir.exists():
                continue
            if finished_row(path, run_dir):
                sys.exit(f"{script}: --tables {p}:{n} --variant {a.variant}: {run_dir} holds an "
                         f"earlier run of them (a row of results.json names it); allowed: "
                         f"--only-mirror to play its model again, another --out, or remove "
                         f"the folder to train it again")
            # before: the advice above, which --only-mirror then refused (no row to play)
            sys.exit(f"{script}: --tables {p}:{n} --variant {a.variant}: {run_dir} holds an "
                     f"earlier run of them that did not finish (stopped or failed: no row of "
                     f"results.json names it as finished); allowed: another --out, or remove "
                     f"the folder to train it again")
    out_folder(a.out, script)
    if a.only_mirror:
        for p, n in tables:
            with open(a.out / "results.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                rows = json.loads(path.read_text())
            for row in rows:
                if (row["preset"], row["players"], row["variant"]) == (p, n, a.variant) and row["rc"] == 0:
                    row["mirrored"] = mirrored(row, a.deals, a.seed)
                    print(line(row), flush=True)
                    with open(a.out / "results.lock", "w") as lock:
                        fcntl.flock(lock, fcntl.LOCK_EX)
                        fresh = json.loads(path.read_text())
                        for k, r in enumerate(fresh):
                            if r["run_dir"] == row["run_dir"]:
                                fresh[k] = row
                        path.write_text(json.dumps(fresh, indent=1) + "\n")
                        write_md(a.out, fresh)
        return
    failed = []
    with ThreadPoolExecutor(a.parallel) as ex:
        futures = [ex.submit(train_one, p, n, a.variant, a.minutes, a.out, a.extra) for p, n in tables]
        for f in futures:
            row = f.result()
            if row["rc"] != 0:
                failed.append(f"{row['preset']}:{row['players']}")
            if row["rc"] == 0:
                row["mirrored"] = mirrored(row, a.deals, a.seed)
            print(line(row), flush=True)
            with open(a.out / "results.lock", "w") as lock:   # several scripts may share --out
                fcntl.flock(lock, fcntl.LOCK_EX)
                rows = json.loads(path.read_text()) if path.exists() else []
                rows.append(row)
                path.write_text(json.dumps(rows, indent=1) + "\n")
                write_md(a.out, rows)
    if failed:   # before: status 0, the failure only in a printed line
        print(f"{script}: the training of {', '.join(failed)} failed (its log is beside its run "
              f"folder under {a.out / 'runs'})", file=sys.stderr)
        return 1
    return None


def rows_of(path: Path) -> list[dict]:
    """The rows of a results.json this script wrote: a list of one object per table trained
    (a ``ValueError`` for anything else: ``{}`` and ``[]`` were read as no rows)."""
    rows = json.loads(path.read_text())
    if not (isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows)):
        raise ValueError("not a list of rows, one object per table trained")
    return rows


def finished_row(path: Path, run_dir: Path) -> bool:
    """Does a row of ``path`` (the results.json, where there is one) name ``run_dir`` as a
    run that finished (``rc`` 0)?"""
    try:
        rows = rows_of(path)
    except (OSError, ValueError):
        return False
    here = run_dir.resolve()   # --out spelled otherwise (relative, absolute) is the same folder
    return any(isinstance(r.get("run_dir"), str) and Path(r["run_dir"]).resolve() == here
               and r.get("rc") == 0 for r in rows)


def todays_interval(m: dict) -> dict:
    """A row's mirrored result with the arena's interval of today: as it is where it says
    so, else computed again from the interval it holds, the plain normal one (rows written
    before 2026-12-02) or the one of two deals added at each end (``add-two``, 2 to 6
    December), exactly as the suite's ladder records are
    (:func:`~ono_env.arena.suite.with_todays_interval`)."""
    rec = with_todays_interval({"rate": m["share"], "low": m["low"], "high": m["high"],
                                "deals": m["deals"], "games": m.get("games"),
                                "interval": m.get("interval"),
                                "agent": "the model", "reference": m.get("opponent")})
    return {**m, "low": rec["low"], "high": rec["high"], "interval": rec["interval"]}


def render(script: str, out: Path) -> None:
    path = out / "results.json"

    def converted() -> list[dict]:
        try:
            rows = rows_of(path)
            mirrored = [row["mirrored"] for row in rows if row["rc"] == 0]
            for m in mirrored:
                m["share"], m["low"], m["high"], m["deals"]
        except (OSError, ValueError, TypeError, KeyError) as exc:
            sys.exit(f"{script}: --render: {path} is not the results.json of a run of this "
                     f"script ({type(exc).__name__}: {exc})")
        try:
            for row in rows:
                if row["rc"] == 0:
                    row["mirrored"] = todays_interval(row["mirrored"])
        except ValueError as exc:   # an interval clipped at both ends: its width is lost
            sys.exit(f"{script}: --render: {path}: {exc}")
        return rows

    converted()   # a file it cannot render is refused before the lock file is made
    with open(out / "results.lock", "w") as lock:   # several scripts may share --out
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = converted()
        path.write_text(json.dumps(rows, indent=1) + "\n")
        write_md(out, rows)
    for row in rows:
        print(line(row))


def line(row: dict) -> str:
    if row["rc"] != 0:
        return f"{row['preset']} {row['players']}p {row['variant']}: failed (rc {row['rc']}), see its log"
    m = row["mirrored"]
    steps = row["final_eval"]["training_steps"]
    return (f"| {row['preset']} | {row['players']} | {row['variant']} | {steps / 1e6:.1f}M | "
            f"{m['opponent']} | {100 * m['share']:.1f}% [{100 * m['low']:.1f}, {100 * m['high']:.1f}] | "
            f"{100 * m['fair']:.0f}% | {m['deals']:,} | {m['mean_length']:.0f} | {m['no_winner']} |")


def write_md(out: Path, rows: list[dict]) -> None:
    head = ("| rules | players | variant | steps | best baseline | share vs it (mirrored, 95%) | "
            "fair | deals | mean length | no winner |\n|---|---|---|---|---|---|---|---|---|---|")
    body = "\n".join(line(r) for r in rows)
    cmds = "\n".join(f"- `{r['command']}`" for r in rows)
    (out / "results.md").write_text(f"{head}\n{body}\n\nCommands:\n{cmds}\n")


if __name__ == "__main__":
    run_script("train_any_rules", main)
