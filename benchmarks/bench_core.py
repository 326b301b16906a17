"""Speed of the game core: decisions per second with random legal actions, on one core.

    python benchmarks/bench_core.py            # full run (about 2 minutes)
    python benchmarks/bench_core.py --quick    # smaller budgets

Rows:
- engine: ``VecGame.play_random`` (random legal actions chosen inside compiled code; every
  finished game is dealt again) — the speed of the rules themselves;
- python loop: ``legal_mask()`` + a NumPy random legal choice + ``step()`` from Python, with
  autoreset — what a Python agent loop over the public API costs.
When rlcard is installed (``pip install -e .[bench]``), RLCard's UNO is timed in the same run:
its ``UnoGame.step`` loop (random legal action, no observation) and its ``env.step`` loop.
Also prints the state bytes per game and how often random play is truncated per preset.
"""

from __future__ import annotations

import argparse
import os
import random
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from ono_env import PRESETS, VecGame, random_legal  # noqa: E402


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


def truncation_table(episodes: int) -> list[tuple[str, int, int, int, float]]:
    rows = []
    for name in PRESETS:
        for players in (2, 4):
            g = VecGame(name, 256, seed=3, num_players=players, autoreset=True)
            rng = np.random.default_rng(0)
            ended = truncated = 0
            lengths = []
            while ended < episodes:
                before = g.state.decisions.copy()
                r = g.step(random_legal(g.legal_mask(), rng))
                done = r.terminated | r.truncated
                ended += int(done.sum())
                truncated += int(r.truncated.sum())
                lengths += (before[done] + 1).tolist()
            rows.append((name, players, ended, truncated, float(np.mean(lengths))))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    budget = 300_000 if args.quick else 2_000_000

    print("decisions per second, classic rules, random legal actions, one core")
    print(f"{'players':>7} {'B':>5} {'engine':>12} {'python loop':>12}")
    results = {}
    for players in (2, 4):
        for batch in (1, 64, 4096):
            e = engine_rate(players, batch, budget)
            p = python_loop_rate(players, batch, budget // (20 if batch == 1 else 4))
            results[(players, batch)] = (e, p)
            print(f"{players:>7} {batch:>5} {e:>12,.0f} {p:>12,.0f}")

    for players in (2, 4):
        g = VecGame("classic", 1, num_players=players)
        print(f"state bytes per game ({players} players): {g.state_bytes_per_game}")

    rl = rlcard_rates(budget // 10)
    if rl is None:
        print("rlcard not installed: pip install -e '.[bench]' to compare")
    else:
        game_rate, env_rate = rl
        print(f"RLCard 2 players: UnoGame.step loop {game_rate:,.0f}/s, env.step loop {env_rate:,.0f}/s")
        for batch in (1, 64, 4096):
            e, p = results[(2, batch)]
            print(f"  B={batch:>4}: engine {e / game_rate:6.1f}x, python loop {p / game_rate:6.1f}x "
                  "RLCard's UnoGame.step rate")

    episodes = 200 if args.quick else 1000
    print(f"\nrandom play, {episodes}+ episodes per row (default max_decisions):")
    print(f"{'preset':>10} {'players':>7} {'episodes':>8} {'truncated':>9} {'mean length':>11}")
    for name, players, ended, truncated, mean_len in truncation_table(episodes):
        print(f"{name:>10} {players:>7} {ended:>8} {truncated:>9} {mean_len:>11.1f}")


if __name__ == "__main__":
    main()
