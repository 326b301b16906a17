"""What every ``ono-train`` trainer shares: the run folder, the league of opponents, the
learning-rate schedule, the torch thread count, the learning curve and the final evaluation.

The trainers (``algo`` in the config) are :mod:`ono_env.train.ppo` (``ppo``: the project's
own masked PPO), :mod:`ono_env.train.maskable_ppo` (``maskable_ppo``: sb3-contrib's
MaskablePPO, the reference) and :mod:`ono_env.train.rllib` (``rllib_ppo``: PPO on Ray RLlib).
"""

from __future__ import annotations

import csv
import datetime as _dt
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ono_env.train.config import TrainConfig


def rules_of(cfg: TrainConfig):
    from ono_env.rules import resolve_rules
    return resolve_rules(cfg.rules, num_players=cfg.num_players)




def run_dir_of(cfg: TrainConfig) -> Path:
    if cfg.run_dir:
        return Path(cfg.run_dir)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(cfg.out_dir) / f"{cfg.name}-{stamp}"




class League:
    """The opponent pool of a run: the configured agents by weight, plus (self-play) the
    latest ``max_snapshots`` frozen copies of the learner, which share ``weight`` of the
    games equally once the first has joined."""

    def __init__(self, pool: Any, cfg: TrainConfig) -> None:
        self.pool = pool
        self.base = dict(cfg.opponents)
        self.sp = cfg.self_play
        self.snapshots: list[str] = []

    def add_snapshot(self, agent: Any, step: int) -> str:
        """Add ``agent`` (a frozen copy of the learner) as ``snapshot-<step>``."""
        name = f"snapshot-{step}"
        self.pool.add(agent, 1.0, name)
        self.snapshots.append(name)
        while len(self.snapshots) > self.sp.max_snapshots:
            self.pool.remove(self.snapshots.pop(0))
        self._reweight()
        return name

    def _reweight(self) -> None:
        total = sum(self.base.values())
        w_sp = float(self.sp.weight) if self.snapshots else 0.0
        for name, w in self.base.items():
            self.pool.set_weight(name, (1.0 - w_sp) * w / total)
        for name in self.snapshots:
            self.pool.set_weight(name, w_sp / len(self.snapshots))




def learning_rate_schedule(lr0: float, lr1: float, seconds: float | None = None,
                           clock: Callable[[], float] = time.perf_counter) -> Callable[[float], float]:
    """Linear decay from ``lr0`` to ``lr1`` as an SB3 schedule (called with the share of
    ``total_steps`` still to go). With ``seconds`` (the time limit), the share of that time
    still to go counts too, whichever is smaller: a run the clock stops still ends at ``lr1``."""
    start = clock()

    def schedule(remaining: float) -> float:
        if seconds is not None:
            remaining = min(remaining, max(0.0, 1.0 - (clock() - start) / seconds))
        return lr1 + (lr0 - lr1) * remaining

    return schedule


CURVE_FIELDS = ["step", "opponent", "games", "win_rate", "ci_low", "ci_high"]
"""The columns of a run's ``eval.csv``."""


def curve_rows(step: int, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The learning-curve rows of one evaluation (:func:`ono_env.arena.evaluate`'s rows)."""
    return [{"step": step, **{k: r[k] for k in CURVE_FIELDS[1:]}} for r in rows]


def write_curve(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CURVE_FIELDS)
        w.writeheader()
        w.writerows(rows)




def summary_line(rows: Sequence[dict[str, Any]]) -> str:
    """Win rate against random and against the best baseline: the opponent other than
    random that the agent scores lowest against."""
    parts = []
    for r in rows:
        if r["opponent"] == "random":
            parts.append(f"vs random {100 * r['win_rate']:.2f}% "
                         f"[{100 * r['ci_low']:.2f}, {100 * r['ci_high']:.2f}]")
    others = [r for r in rows if r["opponent"] != "random"]
    if others:
        b = min(others, key=lambda r: r["win_rate"])
        parts.append(f"vs best baseline ({b['opponent']}) {100 * b['win_rate']:.2f}% "
                     f"[{100 * b['ci_low']:.2f}, {100 * b['ci_high']:.2f}]")
    return "trained agent: " + "; ".join(parts)




def final_evaluation(cfg: TrainConfig, rules: Any, model_path: Path, run_dir: Path, steps: int,
                     train_seconds: float, algo: str) -> list[dict[str, Any]]:
    """The end of every run (every ``algo``): the saved model against
    ``cfg.final_eval.opponents`` (worker processes load it from its path), written to
    ``final_eval.json``/``.csv`` and printed with the summary line. ``[]`` when
    ``final_eval.games`` is 0."""
    from ono_env.agents.learned import load_agent
    from ono_env.arena import evaluate, format_evaluation

    if not cfg.final_eval.games:
        return []
    workers = cfg.final_eval.workers
    agent = str(model_path) if workers > 1 else load_agent(model_path, rules)
    final = evaluate(agent, cfg.final_eval.opponents, rules, cfg.final_eval.games,
                     seed=cfg.seed + 1_000_003, progress=bool(cfg.progress), workers=workers)
    write_final(run_dir, final, steps, train_seconds, model_path.name, algo)
    print(format_evaluation(final, f"{cfg.name} ({steps:,} steps, {train_seconds / 60:.1f} min "
                                   f"of training, {algo})"))
    print(summary_line(final))
    return final




def write_final(run_dir: Path, rows: Sequence[dict[str, Any]], steps: int, seconds: float,
                model: str, algo: str) -> None:
    import json

    (run_dir / "final_eval.json").write_text(json.dumps(
        {"model": model, "algo": algo, "training_steps": steps,
         "training_seconds": seconds, "results": list(rows)}, indent=2) + "\n")
    with open(run_dir / "final_eval.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def start_run(cfg: TrainConfig, agents: Sequence[str] = ()) -> tuple[Any, Path, int, str]:
    """The start of every run: the rules, every evaluation opponent (and ``agents``) made
    once so that a bad name fails before anything is written, torch's thread count chosen
    (:func:`choose_threads`), set and printed, and the run folder with ``config.yaml``.
    Returns ``(rules, run_dir, threads, why)``."""
    import sys

    import torch

    from ono_env.agents import make_agent
    from ono_env.train.config import dump_config

    rules = rules_of(cfg)
    for spec in [*cfg.eval.opponents, *cfg.final_eval.opponents, *agents]:
        make_agent(spec, rules)
    threads, why = choose_threads(cfg.torch_threads)
    torch.set_num_threads(threads)
    print(why, file=sys.stderr)
    run_dir = run_dir_of(cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(dump_config(cfg))
    return rules, run_dir, threads, why


# ---- torch threads ------------------------------------------------------------------------
def _cpu_times(stat_text: str) -> tuple[int, int]:
    """(idle, total) jiffies of the machine from the ``cpu`` line of /proc/stat."""
    for line in stat_text.splitlines():
        if line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]]
            return v[3] + (v[4] if len(v) > 4 else 0), sum(v[:8])
    raise ValueError("no 'cpu' line in /proc/stat")


def free_cores(seconds: float = 0.3, read: Callable[[], str] | None = None,
               sleep: Callable[[float], None] = time.sleep) -> float | None:
    """How many cores sat idle over the next ``seconds`` (from /proc/stat: idle + iowait
    time over all time, times the cores this process may use); None where /proc/stat cannot
    be read. ``read`` and ``sleep`` are for tests."""
    if read is None:
        def read() -> str:
            with open("/proc/stat") as fh:
                return fh.read()
    try:
        i0, t0 = _cpu_times(read())
        sleep(seconds)
        i1, t1 = _cpu_times(read())
    except (OSError, ValueError):
        return None
    if t1 <= t0:
        return None
    return usable_cores() * (i1 - i0) / (t1 - t0)


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def choose_threads(setting: int | str, free: float | None = None) -> tuple[int, str]:
    """The torch thread count for ``torch_threads`` (a number, or ``"auto"``) and why.

    ``auto`` counts the cores that were idle over a short sample at start (``free``; measured
    when None) and takes one thread per free core, at least one: torch's CPU threads
    spin-wait for each other, so a thread that shares its core with another busy process
    stalls every step of the others (measured: two threads beside one busy process train 4-5x
    slower than one thread)."""
    if setting != "auto":
        return int(setting), f"torch_threads: {setting} (set in the config)"
    cores = usable_cores()
    if free is None:
        free = free_cores()
    if free is None:
        return 1, "torch_threads: auto -> 1 (cannot read the machine's load)"
    n = max(1, min(cores, int(free + 0.25)))
    return n, f"torch_threads: auto -> {n} ({free:.1f} of {cores} cores free at start)"
