"""Demo: a few seeded games between random players, rendered as text, and a summary line.

    python -m ono_env.apps.demo --rules classic --players 4 --games 3 --seed 0
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

import numpy as np

from ono_env.apps import console as cli
from ono_env.checks import check_int, check_seed
from ono_env.game import VecGame, random_legal
from ono_env.render import describe_action, render_text
from ono_env.rules import PRESETS

MAX_DEMO_GAMES = 100_000
"""The most games one demo plays (each is played and printed one at a time)."""


def play_demo(rules: str, players: int, games: int, seed: int, verbose: bool,
              out=sys.stdout) -> Counter:
    """Play ``games`` games between uniform-random players; returns wins per seat
    ("truncated" counts games cut at max_decisions)."""
    games = check_int("games", games, 1, MAX_DEMO_GAMES)
    seed = check_seed("seed", seed, allow_none=False)
    wins: Counter = Counter()
    lengths = []
    for k in range(games):
        game = VecGame(rules, 1, seed=seed + k, num_players=players)
        rng = np.random.default_rng([seed, k])
        if verbose:
            print(f"=== game {k + 1} ({game.rules.name}, {players} players, seed {seed + k})",
                  file=out)
            print(render_text(game), file=out)
        while not game.finished[0]:
            mask = game.legal_mask()
            player = int(game.current_player[0])
            action = random_legal(mask, rng)
            round_before = int(game.state.round[0])
            game.step(action)
            if verbose:
                print(describe_action(player, int(action[0])), file=out)
                if int(game.state.round[0]) != round_before and not game.finished[0]:
                    print(f"--- round {round_before + 1} won by P{int(game.state.winner[0])}; "
                          f"scores {game.state.scores[0].tolist()}", file=out)
        if verbose:
            print(render_text(game), file=out)
        d = game.to_dict(0)
        wins["truncated" if d["truncated"] else f"P{d['winner']}"] += 1
        lengths.append(d["decisions"])
    summary = ", ".join(f"{k} {v}" for k, v in sorted(wins.items()))
    print(f"summary: {games} games of {rules} with {players} random players; wins: {summary}; "
          f"mean length {np.mean(lengths):.1f} decisions", file=out)
    return wins


def main(argv: list[str] | None = None) -> int:
    ap = cli.ArgumentParser(prog="ono-demo", description=__doc__.splitlines()[0])
    ap.add_argument("--rules", default="basic",
                    help=f"preset ({', '.join(PRESETS)}) or a rules YAML path (default basic, "
                         f"as in every console script)")
    ap.add_argument("--players", type=cli.bounded_int(2, 10), default=4)
    ap.add_argument("--games", type=cli.bounded_int(1, MAX_DEMO_GAMES), default=3)
    ap.add_argument("--seed", type=cli.bounded_int(0, cli.MAX_SEED), default=0)
    ap.add_argument("--quiet", action="store_true", help="print only the summary line")
    def body(args: argparse.Namespace) -> None:
        play_demo(args.rules, args.players, args.games, args.seed, not args.quiet)
    return cli.run(ap, argv, body)


if __name__ == "__main__":
    raise SystemExit(main())
