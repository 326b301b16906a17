"""Speed of the game core and the environments: decisions per second with random legal
actions, on one core.

    python benchmarks/bench_core.py            # full run (a few minutes)
    python benchmarks/bench_core.py --quick    # smaller budgets
    python benchmarks/bench_core.py --out docs/results/core   # also results.json, results.md

Rows:
- engine: ``VecGame.play_random`` (random legal actions chosen inside compiled code; every
  finished game is dealt again) — the speed of the rules themselves;
- python loop: ``legal_mask()`` + a NumPy random legal choice + ``step()`` from Python, with
  autoreset — what a Python agent loop over the public API costs.
- AEC env: one game through the PettingZoo API (``agent_iter`` / ``last`` / ``step`` with a
  random legal action from the mask), the bare ``raw_env`` and ``env()`` (with PettingZoo's
  order, bounds and illegal-move checks);
- the Gymnasium vector env (``make_vec(..., vectorization_mode="vector_entry_point")``) and
  OnoVecEnv: 4096 games, random learner actions from the masks, random opponents, counting
  every decision (learner's and opponents');
- import: ``import ono_env`` and a first random game in a fresh process, CPU seconds: with
  numba's cache empty (first import on a machine), with the prebuilt kernels and without
  them (``ONO_ENV_PREBUILT=0``), and with numba's cache filled (every later one);
- instructions per decision of compiled random play (``basic`` and ``classic``, 2 and 4
  players), counted by valgrind where it is installed (``--no-instructions`` skips them):
  a count that does not depend on the machine's load.
When rlcard is installed (``pip install -e .[bench]``), RLCard's UNO is timed in the same run:
its ``UnoGame.step`` loop (random legal action, no observation) and its ``env.step`` loop.
The rows that are compared with RLCard are timed in rounds (ours, then RLCard's, repeated)
and each rate is the median over the rounds, so a busy machine slows both sides alike.
Also prints the state bytes per game and how often random play is truncated per preset.
"""

from __future__ import annotations

import datetime
import json
import os
import random
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np
from bench_args import (
    checked_rounds,
    cpu_name,
    machine,
    optional_out,
    out_folder,
    parser,
    path_arg,
    run_script,
)

from ono_env import PRESETS, VecGame, random_legal
from ono_env._compile import prebuilt_status

OUT_FILES = ("results.json", "results.md")


def engine_rate(players: int, batch: int, decisions: int) -> float:
    g = VecGame("classic", batch, seed=0, num_players=players)
    g.play_random(2, seed=1)  # warm up
    steps = max(1, decisions // batch)
    t = time.perf_counter()
    n = g.play_random(steps, seed=2)
    return n / (time.perf_counter() - t)


def python_loop_rate(players: int, batch: int, decisions: int) -> float:
    g = VecGame("classic", batch, seed=0, num_players=players, autoreset=True)
    rng = np.random.default_rng(0)
    steps = max(1, decisions // batch)
    t = time.perf_counter()
    for _ in range(steps):
        g.step(random_legal(g.legal_mask(), rng))
    return steps * batch / (time.perf_counter() - t)


def aec_rate(wrapped: bool, decisions: int) -> float:
    from ono_env import ono_v0

    env = (ono_v0.env if wrapped else ono_v0.raw_env)(rules="classic", num_players=2)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    taken = 0
    t = time.perf_counter()
    while taken < decisions:
        for _agent in env.agent_iter():
            obs, _, term, trunc, _ = env.last()
            if term or trunc:
                env.step(None)
                continue
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[int(rng.random() * len(legal))]))
            taken += 1
            if taken >= decisions:
                break
        else:
            env.reset()
    return taken / (time.perf_counter() - t)


def vecenv_rate(players: int, steps: int) -> float:
    from ono_env.envs.sb3 import OnoVecEnv

    venv = OnoVecEnv("classic", num_envs=4096, opponents="random", seed=0, num_players=players)
    venv.reset()
    rng = np.random.default_rng(0)
    venv.step(random_legal(venv.action_masks(), rng))
    before = venv.decisions
    t = time.perf_counter()
    for _ in range(steps):
        venv.step(random_legal(venv.action_masks(), rng))
    return (venv.decisions - before) / (time.perf_counter() - t)


def gym_vector_rate(players: int, steps: int) -> float:
    import gymnasium as gym

    import ono_env  # noqa: F401 - registers the env id

    envs = gym.make_vec("ono_env/Ono-v0", num_envs=4096, vectorization_mode="vector_entry_point",
                        rules="classic", num_players=players, opponents="random")
    _, infos = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    _, _, _, _, infos = envs.step(random_legal(infos["action_mask"], rng))
    before = envs.batch.decisions
    t = time.perf_counter()
    for _ in range(steps):
        _, _, _, _, infos = envs.step(random_legal(infos["action_mask"], rng))
    return (envs.batch.decisions - before) / (time.perf_counter() - t)


IMPORT_PROBE = ("import ono_env; g = ono_env.VecGame('classic', 1, seed=0); "
                "g.play_random(100, seed=0)")

INSTRUCTION_PROBE = """
import sys
import ono_env
preset, players, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
g = ono_env.VecGame(preset, 1, seed=0, num_players=players)
g.play_random(100, seed=1)
print(g.play_random(steps, seed=2))
"""
INSTRUCTION_STEPS = (100_000, 1_100_000)
# The CPU level the kernels are compiled for when counting instructions: AVX2, BMI2 and
# POPCNT, which valgrind runs (it does not run AVX-512).
INSTRUCTION_CPU = "x86-64-v3"


def instructions_per_decision(cases: list[tuple[str, int]], probe: str = INSTRUCTION_PROBE,
                              env: dict[str, str] | None = None) -> dict[tuple[str, int], float] | None:
    """Instructions per decision of compiled random play (``VecGame.play_random``, one game)
    for each (preset, players), counted by valgrind (``--tool=callgrind``): two runs that
    differ only in the number of decisions, the difference in instructions divided by the
    difference in decisions, so that start-up, imports and loading cancel out. The count
    does not depend on the machine's load. The kernels are compiled once natively for the
    x86-64-v3 CPU level into a numba cache of their own (the prebuilt kernels turned off) and
    loaded from it under valgrind (numba would otherwise compile them again inside the
    simulator, for its CPU). ``probe`` (arguments: preset, players, decisions; prints the
    decisions taken last) and ``env`` (added to the environment instead of that CPU level)
    measure other code the same way. None when valgrind is not installed."""
    if shutil.which("valgrind") is None:
        return None
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        if env is None:
            env = dict(NUMBA_CPU_NAME=INSTRUCTION_CPU, NUMBA_CPU_FEATURES="", ONO_ENV_PREBUILT="0")
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONHASHSEED="0", **env)
        for preset, players in cases:
            args = [preset, str(players)]
            subprocess.run([sys.executable, "-c", probe, *args, "10"], env=env,
                           check=True, capture_output=True)   # compile into the cache
            counts = []
            for steps in INSTRUCTION_STEPS:
                run = subprocess.run(
                    ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                     sys.executable, "-c", probe, *args, str(steps)],
                    env=env, check=True, capture_output=True, text=True)
                decisions = int(run.stdout.split()[-1])
                total = re.search(r"Collected : (\d+)", run.stderr)
                if total is None:
                    raise RuntimeError("valgrind printed no instruction count:\n" + run.stderr)
                counts.append((decisions, int(total.group(1))))
            (d1, n1), (d2, n2) = counts
            out[(preset, players)] = (n2 - n1) / (d2 - d1)
    return out


def import_cpu_seconds(fresh_cache: bool, prebuilt: bool = True) -> float:
    """CPU seconds (user + system) of a fresh process that imports ono_env and plays random
    moves: with an empty numba cache (``NUMBA_CACHE_DIR`` a new folder) or the usual one;
    with the prebuilt kernels or without them (``ONO_ENV_PREBUILT=0``)."""
    env = dict(os.environ)
    if not prebuilt:
        env["ONO_ENV_PREBUILT"] = "0"
    with tempfile.TemporaryDirectory() as cache:
        if fresh_cache:
            env["NUMBA_CACHE_DIR"] = cache
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", IMPORT_PROBE], env=env, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def rlcard_rates(decisions: int) -> tuple[float, float] | None:
    try:
        import rlcard
        from rlcard.games.uno.game import UnoGame
    except ImportError:
        return None
    rnd = random.Random(0)
    game = UnoGame()
    np.random.seed(0)
    game.init_game()
    t = time.perf_counter()
    for _ in range(decisions):
        legal = game.get_legal_actions()
        game.step(rnd.choice(legal))
        if game.is_over():
            game.init_game()
    game_rate = decisions / (time.perf_counter() - t)
    env = rlcard.make("uno", config={"seed": 0})
    state, _ = env.reset()
    n = decisions // 2
    t = time.perf_counter()
    for _ in range(n):
        action = rnd.choice(list(state["legal_actions"].keys()))
        state, _ = env.step(action)
        if env.is_over():
            state, _ = env.reset()
    env_rate = n / (time.perf_counter() - t)
    return game_rate, env_rate


def truncation_table(episodes: int) -> list[tuple[str, int, int, int, float, int]]:
    """The first episode of ``episodes`` independent games per preset and player count
    (every game played to its end, so long episodes are not under-sampled)."""
    rows = []
    for name in PRESETS:
        for players in (2, 4):
            g = VecGame(name, episodes, seed=3, num_players=players)
            rng = np.random.default_rng(0)
            while not g.finished.all():
                g.step(random_legal(g.legal_mask(), rng))
            lengths = g.state.decisions
            rows.append((name, players, episodes, int(g.truncated.sum()),
                         float(lengths.mean()), int(np.median(lengths))))
    return rows


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--quick", action="store_true",
                    help="smaller budgets: fewer decisions, games and episodes per row")
    ap.add_argument("--no-instructions", action="store_true",
                    help="skip the instruction counts (valgrind: about 2 minutes per row)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="rounds of the rows compared with RLCard (median of the rounds)")
    ap.add_argument("--out", type=path_arg, default=None,
                    help=optional_out(" and ".join(OUT_FILES)))
    args = ap.parse_args()
    checked_rounds("bench_core", args.rounds)
    if args.out:
        out_folder(args.out, "bench_core", writes=OUT_FILES)
    res = measure(args.quick, args.rounds, not args.no_instructions)
    if args.out:
        res = {"command": shlex.join(["python", "benchmarks/bench_core.py", *sys.argv[1:]]),
               "date": datetime.date.today().isoformat(), "machine": machine(),
               "cpu": cpu_name(), "prebuilt": prebuilt_status(), "quick": args.quick,
               "rounds": args.rounds, **res}
        (args.out / "results.json").write_text(json.dumps(res, indent=2) + "\n")
        (args.out / "results.md").write_text(page(res))


def measure(quick: bool, rounds: int, instructions: bool) -> dict[str, Any]:
    """Every row of the report, printed as it is measured and returned as data (what
    ``--out`` writes into results.json)."""
    budget = 300_000 if quick else 2_000_000
    res: dict[str, Any] = {}

    print("decisions per second, classic rules, random legal actions, one core")
    print(f"{'players':>7} {'B':>5} {'engine':>12} {'python loop':>12}")
    res["batches"] = []
    for players in (2, 4):
        for batch in (1, 64, 4096):
            e = engine_rate(players, batch, budget)
            p = python_loop_rate(players, batch, budget // (20 if batch == 1 else 4))
            res["batches"].append({"players": players, "batch": batch, "engine": e,
                                   "python_loop": p})
            print(f"{players:>7} {batch:>5} {e:>12,.0f} {p:>12,.0f}")

    res["state_bytes_per_game"] = {}
    for players in (2, 4):
        g = VecGame("classic", 1, num_players=players)
        res["state_bytes_per_game"][str(players)] = g.state_bytes_per_game
        print(f"state bytes per game ({players} players): {g.state_bytes_per_game}")

    vec = {players: vecenv_rate(players, 20 if quick else 100) for players in (2, 4)}
    gvec = {players: gym_vector_rate(players, 20 if quick else 100) for players in (2, 4)}
    res["vector_envs"] = {str(players): {"gymnasium": gvec[players], "ono_vec_env": vec[players]}
                          for players in (2, 4)}
    print("\nenvironments, classic, random legal actions, 4096 games, random opponents, "
          "every decision counted:")
    for players in (2, 4):
        print(f"  {players} players: Gymnasium vector env {gvec[players]:,.0f}/s, "
              f"OnoVecEnv {vec[players]:,.0f}/s")

    # the rows compared with RLCard: interleaved rounds, medians
    have_rlcard = rlcard_rates(1000) is not None
    n = budget // 20
    rows: dict[str, list[float]] = {k: [] for k in ("loop1", "raw", "env", "game", "rlenv")}
    for _ in range(rounds):
        rows["loop1"].append(python_loop_rate(2, 1, n))
        rows["raw"].append(aec_rate(False, n // 2))
        rows["env"].append(aec_rate(True, n // 2))
        if have_rlcard:
            g, e = rlcard_rates(n // 2)
            rows["game"].append(g)
            rows["rlenv"].append(e)
    med = {k: statistics.median(v) for k, v in rows.items() if v}
    res["one_game"] = {"python_loop": med["loop1"], "raw_env": med["raw"], "env": med["env"],
                       "rlcard_game_step": med.get("game"), "rlcard_env_step": med.get("rlenv")}
    print(f"\none game, 2 players, medians of {rounds} interleaved rounds:")
    print(f"  Python loop (legal_mask + NumPy choice + step), B=1: {med['loop1']:,.0f}/s")
    print(f"  AEC env: raw_env {med['raw']:,.0f}/s, env() {med['env']:,.0f}/s")
    if not have_rlcard:
        print("rlcard not installed: pip install -e '.[bench]' to compare")
    else:
        game_rate, env_rate = med["game"], med["rlenv"]
        print(f"  RLCard: UnoGame.step loop {game_rate:,.0f}/s, env.step loop {env_rate:,.0f}/s")
        print(f"  B=1 Python loop {med['loop1'] / game_rate:.2f}x RLCard's UnoGame.step rate")
        print(f"  AEC env: raw_env {med['raw'] / env_rate:.2f}x, env() {med['env'] / env_rate:.2f}x "
              "RLCard's env.step rate")
        for row in res["batches"][:3]:
            print(f"  B={row['batch']:>4}: engine {row['engine'] / game_rate:6.1f}x, python loop "
                  f"{row['python_loop'] / game_rate:6.1f}x RLCard's UnoGame.step rate (engine "
                  "rows from the first table)")
        print(f"  Gymnasium vector env / OnoVecEnv (2 players, 4096 games): "
              f"{gvec[2] / env_rate:.1f}x / {vec[2] / env_rate:.1f}x RLCard's env.step rate")

    first, compiling = import_cpu_seconds(True), import_cpu_seconds(True, prebuilt=False)
    cached = import_cpu_seconds(False)
    res["import_cpu_seconds"] = {"first_prebuilt": first, "first_compiling": compiling,
                                 "cached": cached}
    print(f"\nimport ono_env + a random game, fresh process, CPU seconds: first (empty numba "
          f"cache) {first:.1f} s as this install loads its kernels (prebuilt kernels: "
          f"{prebuilt_status()}), {compiling:.1f} s with the prebuilt ones turned off; cached "
          f"{cached:.1f} s")

    res["instructions_per_decision"], res["instructions_not_counted"] = None, "--no-instructions"
    if instructions:
        counts = instructions_per_decision([(p, n) for p in ("basic", "classic") for n in (2, 4)])
        if counts is None:
            res["instructions_not_counted"] = "valgrind is not installed"
            print("\ninstructions per decision: valgrind not installed")
        else:
            res["instructions_not_counted"] = None
            res["instructions_per_decision"] = [
                {"rules": preset, "players": players, "instructions": n}
                for (preset, players), n in counts.items()]
            print(f"\ninstructions per decision, compiled random play (one game, kernels "
                  f"compiled for {INSTRUCTION_CPU}; valgrind, decisions "
                  f"{INSTRUCTION_STEPS[0]:,} to {INSTRUCTION_STEPS[1]:,}):")
            for (preset, players), n in counts.items():
                print(f"  {preset:>8} {players} players: {n:,.0f}")

    episodes = 100 if quick else 500
    print(f"\nrandom play, {episodes} episodes per row, default max_decisions "
          f"(5,000 a round, 50,000 a match); length in decisions:")
    print(f"{'preset':>10} {'players':>7} {'episodes':>8} {'truncated':>9} {'mean':>8} {'median':>7}")
    res["random_play"] = []
    for name, players, n, truncated, mean_len, median in truncation_table(episodes):
        res["random_play"].append({"rules": name, "players": players, "episodes": n,
                                   "truncated": truncated, "mean": mean_len, "median": median})
        print(f"{name:>10} {players:>7} {n:>8} {truncated:>9} {mean_len:>8.1f} {median:>7}")
    return res


def _rate(x: float | None) -> str:
    """A rate as the page writes it: 25.9M/s, 236k/s."""
    if x is None:
        return "not measured"
    x = float(f"{x:.3g}")
    if x < 1e3:
        return f"{x:g}/s"
    x, unit = (x / 1e6, "M") if x >= 1e6 else (x / 1e3, "k")
    return f"{x:.{max(0, 2 - len(str(int(x))) + 1)}f}{unit}/s"   # three digits: 19.0M, 236k


def page(res: dict[str, Any]) -> str:
    """results.md: the report's tables as docs/speed.md shows them, from ``res`` (results.json)."""
    b = {(r["players"], r["batch"]): r for r in res["batches"]}
    one, vec = res["one_game"], res["vector_envs"]
    game, rlenv = one["rlcard_game_step"], one["rlcard_env_step"]
    lines = [
        "# Speed of the game core and the environments", "",
        f"`{res['command']}`, {res['date']}; {res['machine']}; prebuilt kernels: {res['prebuilt']}. "
        f"Random legal actions, `classic` rules, one core. The one-game rows and RLCard's are "
        f"medians of {res['rounds']} interleaved rounds.", "",
        "| what | 2 players | 4 players |", "|---|---|---|",
        *[f"| engine, `VecGame.play_random`, B={batch} | {_rate(b[2, batch]['engine'])} | "
          f"{_rate(b[4, batch]['engine'])} |" for batch in (1, 64, 4096)],
        f"| Python loop: `legal_mask` + NumPy choice + `step`, B=1 (2 players: median of the "
        f"rounds) | {_rate(one['python_loop'])} | {_rate(b[4, 1]['python_loop'])} |",
        f"| Python loop, B=4096 | {_rate(b[2, 4096]['python_loop'])} | "
        f"{_rate(b[4, 4096]['python_loop'])} |",
        f"| PettingZoo `raw_env`, one game through the AEC API | {_rate(one['raw_env'])} | |",
        f"| PettingZoo `env()` | {_rate(one['env'])} | |",
        f"| Gymnasium vector env, 4096 games, random opponents, every decision counted | "
        f"{_rate(vec['2']['gymnasium'])} | {_rate(vec['4']['gymnasium'])} |",
        f"| `OnoVecEnv` (SB3), 4096 games, random opponents, every decision counted | "
        f"{_rate(vec['2']['ono_vec_env'])} | {_rate(vec['4']['ono_vec_env'])} |",
        f"| RLCard `UnoGame.step` loop / `env.step` loop (same rounds) | "
        f"{_rate(game)} / {_rate(rlenv)} | |", ""]
    if game is not None and rlenv is not None:
        engine = [b[2, batch]["engine"] / game for batch in (1, 64, 4096)]
        lines += [
            f"Ratios: the B=1 Python loop {one['python_loop'] / game:.2f}x RLCard's "
            f"`UnoGame.step` loop; `raw_env` {one['raw_env'] / rlenv:.2f}x and `env()` "
            f"{one['env'] / rlenv:.2f}x RLCard's `env.step` loop; the engine "
            f"{min(engine):.0f}-{max(engine):.0f}x RLCard's `UnoGame.step` rate (2 players); "
            f"the Gymnasium vector env {vec['2']['gymnasium'] / rlenv:.0f}x and `OnoVecEnv` "
            f"{vec['2']['ono_vec_env'] / rlenv:.0f}x RLCard's `env.step` rate.", ""]
    lines += [f"State of a game: {res['state_bytes_per_game']['2']:,} bytes (2 players), "
              f"{res['state_bytes_per_game']['4']:,} bytes (4 players).", ""]
    imp = res["import_cpu_seconds"]
    lines += [f"`import ono_env` and a first random game in a fresh process, empty numba cache: "
              f"{imp['first_prebuilt']:.1f} s of CPU as this install loads its kernels (prebuilt "
              f"kernels: {res['prebuilt']}), {imp['first_compiling']:.1f} s with the prebuilt "
              f"ones turned off (`ONO_ENV_PREBUILT=0`); with numba's cache filled "
              f"{imp['cached']:.1f} s.", ""]
    if res["instructions_per_decision"] is None:
        lines += [f"Instructions per decision: not counted ({res['instructions_not_counted']}).",
                  ""]
    else:
        lines += [f"Instructions per decision of compiled random play (one game; valgrind, "
                  f"kernels compiled for {INSTRUCTION_CPU}):", "",
                  "| rules | players | instructions |", "|---|---|---|",
                  *[f"| `{r['rules']}` | {r['players']} | {r['instructions']:,.0f} |"
                    for r in res["instructions_per_decision"]], ""]
    lines += ["Random play, default `max_decisions`; length in decisions:", "",
              "| rules | players | episodes | truncated | mean | median |",
              "|---|---|---|---|---|---|",
              *[f"| `{r['rules']}` | {r['players']} | {r['episodes']} | {r['truncated']} | "
                f"{r['mean']:,.1f} | {r['median']:,} |" for r in res["random_play"]], ""]
    return "\n".join(lines)


if __name__ == "__main__":
    run_script("bench_core", main)
