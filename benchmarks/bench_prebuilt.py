"""Prebuilt kernels against kernels compiled on this machine: first-import CPU time and the
speed of the code.

    python benchmarks/bench_prebuilt.py                 # both parts (about 3 minutes)
    python benchmarks/bench_prebuilt.py --instructions  # also valgrind's instruction counts

1. ``import ono_env`` and a first random game (the README's probe: ``VecGame('classic', 1)``,
   100 random moves) in a fresh process with an empty numba cache, CPU seconds (user +
   system), with the prebuilt kernels and without them (``ONO_ENV_PREBUILT=0``: what a
   machine they were not built for pays); the two alternate, medians of ``--rounds``.
2. Engine decisions/s of compiled random play (``random_moves``, one game) in one process:
   the prebuilt kernel (built for x86-64-v2) and the same function compiled here for this
   machine's CPU, called in alternation on two copies of one game; medians of
   ``--rounds``, and a check that both copies end in the same position.
3. ``--instructions``: instructions per decision of the same play under valgrind (a count
   that does not depend on the machine's load), prebuilt and compiled for this machine.

Needs an install whose build step wrote the prebuilt kernels (``pip install -e .``).
"""

from __future__ import annotations

import statistics
import sys
import time

import numba
import numpy as np
from bench_args import checked_rounds, parser, refuse_unused, run_script, within
from bench_core import INSTRUCTION_STEPS, import_cpu_seconds, instructions_per_decision

import ono_env
from ono_env import _compile
from ono_env import _engine as E
from ono_env.game import game_seeds, kernel_entry
from ono_env.train.config import MAX_STEPS

CASES = [("basic", 2), ("basic", 4), ("classic", 2), ("classic", 4)]

COUNT_PROBE = """
import os
import sys
import ono_env
from ono_env import _compile, _engine as E
from ono_env.game import kernel_entry, game_seeds
import numpy as np
preset, players, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
k = _compile.compiled(E.random_moves)
assert (_compile.prebuilt_status() == "used") == (os.environ.get("ONO_ENV_PREBUILT") != "0")
g = ono_env.VecGame(preset, 1, seed=0, num_players=players)
f = kernel_entry(k)
args = g.internals.state_args
tail = (np.zeros(1, np.int64), game_seeds(1, 1), np.zeros((1, players)), g.internals.scratch_rewards)
f(*args, 100, *tail)
print(f(*args, steps, *tail))
"""
"""The instruction-count probe: random_moves called directly (the prebuilt one, or with
ONO_ENV_PREBUILT=0 the one compiled for this machine)."""


def compiled_here():
    """random_moves compiled in this process for this machine's CPU (rules functions too)."""
    _compile.compile_rules()
    k = numba.njit(_nrt=False, error_model="numpy")(E.random_moves.py_func)
    k.compile(_compile.signature(E.random_moves))
    return kernel_entry(k)


def engine_rates(prebuilt, here, preset: str, players: int, steps: int, rounds: int):
    games = [ono_env.VecGame(preset, 1, seed=0, num_players=players) for _ in range(2)]
    rngs = [game_seeds(1, 1) for _ in range(2)]
    rates = ([], [])
    for _ in range(rounds):
        for side, kernel in enumerate((prebuilt, here)):
            g = games[side]
            t = time.perf_counter()
            n = kernel(*g.internals.state_args, steps, np.zeros(1, np.int64), rngs[side],
                       np.zeros((1, players)), g.internals.scratch_rewards)
            rates[side].append(n / (time.perf_counter() - t))
    same = all(np.array_equal(a, b) for a, b in zip(games[0].state.arrays, games[1].state.arrays))
    return statistics.median(rates[0]), statistics.median(rates[1]), same


def here_env() -> dict[str, str]:
    """The environment that compiles for this machine's CPU, named outright: under valgrind
    numba would read the simulated CPU's, miss the cache and compile inside the simulator."""
    from llvmlite import binding as ll
    from numba.core.codegen import get_host_cpu_features
    return dict(ONO_ENV_PREBUILT="0", NUMBA_CPU_NAME=ll.get_host_cpu_name(),
                NUMBA_CPU_FEATURES=get_host_cpu_features())


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--rounds", type=int, default=5,
                    help="alternating rounds of parts 1 and 2 (medians; default 5)")
    ap.add_argument("--steps", type=int, default=5_000_000,
                    help="decisions per call in the speed part")
    ap.add_argument("--instructions", action="store_true",
                    help="also part 3: valgrind's instruction counts")
    ap.add_argument("--instructions-only", action="store_true",
                    help="only the instruction counts (skip the timed parts)")
    args = ap.parse_args()
    if args.instructions_only:
        refuse_unused("bench_prebuilt", ("--rounds", "--steps"),
                      "--instructions-only times nothing")
    checked_rounds("bench_prebuilt", args.rounds)
    # the trainer's most decisions of a run (past int64 the kernel's argument raised an
    # OverflowError traceback)
    within("bench_prebuilt", "--steps", args.steps, 1, MAX_STEPS)
    status = _compile.prebuilt_status()
    print(f"prebuilt kernels: {status}")
    if status != "used":
        sys.exit("bench_prebuilt: needs the prebuilt kernels (pip install -e . builds them)")

    if args.instructions_only:
        args.instructions, args.rounds = True, 0
    times = ([], [])
    for _ in range(args.rounds):
        times[0].append(import_cpu_seconds(True, prebuilt=True))
        times[1].append(import_cpu_seconds(True, prebuilt=False))
    if args.rounds:
        timed_parts(args, times)
    if args.instructions:
        if instructions_per_decision([], COUNT_PROBE) is None:
            print("\ninstructions: valgrind not installed")
            return
        print(f"\ninstructions per decision (valgrind, decisions {INSTRUCTION_STEPS[0]:,} to "
              f"{INSTRUCTION_STEPS[1]:,}):")
        for case in CASES:
            p = instructions_per_decision([case], COUNT_PROBE, env={})[case]
            h = instructions_per_decision([case], COUNT_PROBE, env=here_env())[case]
            print(f"  {case[0]:>8} {case[1]}p: prebuilt {p:,.0f}, compiled here {h:,.0f}",
                  flush=True)


def timed_parts(args, times) -> None:
    a, b = statistics.median(times[0]), statistics.median(times[1])
    print(f"\nimport ono_env + a random game, fresh process, empty numba cache, CPU seconds "
          f"(medians of {args.rounds} alternating runs):")
    print(f"  prebuilt kernels {a:.2f} s (range {min(times[0]):.2f}-{max(times[0]):.2f}), "
          f"compiled on first use {b:.2f} s (range {min(times[1]):.2f}-{max(times[1]):.2f}): "
          f"{b / a:.1f}x less")

    prebuilt = kernel_entry(_compile.compiled(E.random_moves))
    t = time.process_time()
    here = compiled_here()
    print(f"\n(random_moves compiled here for {numba.core.codegen.ll.get_host_cpu_name()} in "
          f"{time.process_time() - t:.1f} s of CPU, its rules functions taken from numba's cache "
          f"where it held them)")
    print(f"engine decisions/s, random_moves, one game, {args.steps:,} decisions a call, "
          f"medians of {args.rounds} alternating calls:")
    for preset, players in CASES:
        p, h, same = engine_rates(prebuilt, here, preset, players, args.steps, args.rounds)
        print(f"  {preset:>8} {players}p: prebuilt {p / 1e6:5.2f}M/s, compiled here {h / 1e6:5.2f}M/s, "
              f"ratio {p / h:.3f}; same positions: {same}", flush=True)


if __name__ == "__main__":
    run_script("bench_prebuilt", main)
