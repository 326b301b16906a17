"""Demo: a few seeded games between random players, rendered as text, and a summary line.

Each move is followed by what it did at the table, as ``ono-play`` says it (skips, draws and
their reason, swaps, challenges; each deal's first card; a round's end).

    python -m ono_env.apps.demo --rules classic --players 4 --games 3 --seed 0
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

import numpy as np

from ono_env.apps import console as cli
from ono_env.checks import MAX_SEED, check_int, check_seed
from ono_env.game import VecGame, random_legal
from ono_env.positions import game_winners
from ono_env.render import (
    deal_events,
    describe_action,
    plural,
    render_text,
    round_end_events,
    table_events,
)
from ono_env.rules import PRESETS, resolve_rules

MAX_DEMO_GAMES = 100_000
"""The most games one demo plays (each is played and printed one at a time)."""


def play_demo(rules: str, players: int | None, games: int, seed: int, verbose: bool,
              out=None) -> Counter:
    """Play ``games`` games between uniform-random players (game ``k`` seeded ``seed + k``);
    returns wins per seat ("P1+P2": a penalty-scored match those seats tied on the lowest
    total; "truncated" counts games cut at max_decisions, which the summary line calls "no
    winner (cut at the decision limit)": under ``ono`` nearly every game, as random players
    accuse falsely at most turns and their hands grow). ``players``:
    None for the rules' own count (a rules file's, or the preset's 4); a count given sets it
    whatever the file says, as ``--players`` does in ``ono-play`` and ``ono-arena``."""
    out = sys.stdout if out is None else out   # read at the call: a redirected stdout too
    games = check_int("games", games, 1, MAX_DEMO_GAMES)
    seed = check_seed("seed", seed, allow_none=False)
    if seed + games - 1 > MAX_SEED:   # checked before the first game, not at the one that passes
        raise ValueError(f"seed={seed:,} and games={games:,}: game k is seeded seed + k, so "
                         f"seed + games - 1 must be at most {MAX_SEED:,}")
    # read once (a rules file is not read again for each game), with the count given: an
    # error then names the file (before: the count was set per game, the file's name lost)
    rules_set = resolve_rules(rules, **({} if players is None else {"num_players": players}))
    players = rules_set.num_players
    wins: Counter = Counter()
    lengths = []
    for k in range(games):
        game = VecGame(rules_set, 1, seed=seed + k)
        rng = np.random.default_rng(seed + k)   # the whole game from its seed: "seed N" is --seed N
        after = game.to_dict(0) if verbose else {}
        if verbose:
            print(f"=== game {k + 1} ({game.rules.title}, {players} players, seed {seed + k})",
                  file=out)
            for event in deal_events(after):
                print(f"  {event}", file=out)
            print(render_text(game), file=out)
        while not game.finished[0]:
            mask = game.legal_mask()
            player = int(game.current_player[0])
            action = random_legal(mask, rng)
            before = after   # the last step's "after"
            game.step(action)
            if verbose:   # the move, then what it did (before: the move alone)
                after = game.to_dict(0)
                print(describe_action(player, int(action[0])), file=out)
                for event in table_events(before, after, player, int(action[0])):
                    print(f"  {event}", file=out)
                # the round's end, the game's last too (before: the last was left out),
                # and the next round's deal
                ended = round_end_events(before, after)
                if ended:
                    print(f"--- {ended[0]}", file=out)
                    for event in ended[1:]:
                        print(f"  {event}", file=out)
        d = game.to_dict(0)
        won = game_winners(d)   # several: tied on the lowest total of a penalty-scored match
        if verbose:
            print(render_text(game), file=out)
            if not won:   # as ono-play says it (before: "game over: truncated" alone)
                print(f"the game was cut at the decision limit ({game.max_decisions:,} "
                      f"decisions): no winner", file=out)
        wins["+".join(f"P{q}" for q in won) if won else "truncated"] += 1
        lengths.append(d["decisions"])
    # (before: "truncated 20" among the seats, as if it were one)
    summary = ", ".join(f"{k} {v}" if k != "truncated" else
                        f"no winner (cut at the decision limit) {v}" for k, v in sorted(wins.items()))
    print(f"summary: {plural(games, 'game')} of {game.rules.title} with {players} random "
          f"players; wins: {summary}; "
          f"mean length {np.mean(lengths):.1f} decisions", file=out)
    return wins


def main(argv: list[str] | None = None) -> int:
    ap = cli.ArgumentParser(prog="ono-demo", description=__doc__.splitlines()[0])
    ap.add_argument("--rules", default="basic",
                    help=f"preset ({', '.join(PRESETS)}) or a rules YAML path (default basic, "
                         f"as in every console script)")
    ap.add_argument("--players", type=cli.bounded_int(2, 10), default=None,
                    help="2 to 10 (default: the rules' own count, 4 for a preset; given, it "
                         "sets the count whatever a rules file says, as in ono-play and ono-arena)")
    ap.add_argument("--games", type=cli.bounded_int(1, MAX_DEMO_GAMES), default=3,
                    help=f"games to play, 1 to {MAX_DEMO_GAMES:,} (default 3)")
    ap.add_argument("--seed", type=cli.bounded_int(0, cli.MAX_SEED), default=0,
                    help="seed of the first game; game k is seeded seed + k (default 0)")
    ap.add_argument("--quiet", action="store_true", help="print only the summary line")
    def body(args: argparse.Namespace) -> None:
        play_demo(args.rules, args.players, args.games, args.seed, not args.quiet)
    return cli.run(ap, argv, body)


if __name__ == "__main__":
    raise SystemExit(main())
