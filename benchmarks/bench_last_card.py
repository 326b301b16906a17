"""Does a policy go out with its last card when the opponents hold many cards?

    python benchmarks/bench_last_card.py --model ppo-any --opponent random --games 40 --seed 11

Plays ``--games`` games of ``--rules`` (default ``ono``) at ``--players`` (default 4): the
model in seat 0, ``--opponent`` in every other seat, every game recorded. Replaying each game
with the engine, it counts the model's decisions with one card in hand and a legal play, by
whether some opponent held more than 15 cards, whether the last card is a wild, and what the
model chose (play or draw). Prints those counts, the games cut at the rules' decision limit
and the model's share of the wins.

Written for the generalist's page (``docs/results/generalist/index.md``): against three
``random`` players under ``ono`` the first ``ppo-any`` kept a last wild card and drew, a
position it never met in training, and a third of its games never ended.
"""

from __future__ import annotations

import collections

import numpy as np
from bench_args import checked_agent, checked_seed, parser, rules_at, run_script, within

import ono_env.cards as C
from ono_env.arena import MAX_RECORD
from ono_env.arena.play import play_games
from ono_env.replay import Replay, new_game


def last_card_choices(replays: list[Replay], seat: int = 0, many: int = 15) -> collections.Counter:
    """``(opponent holds more than many cards, last card is a wild, play | draw | ...)`` ->
    decisions of ``seat`` with one card in hand and a legal play."""
    out: collections.Counter = collections.Counter()
    for rep in replays:
        game = new_game(rep.rules, rep.game_seed, rep.max_decisions)
        for action in rep.actions:
            d = game.to_dict(0)
            hand = d["hands"][seat]
            if d["current_player"] == seat and len(hand) == 1 and d["phase"] == "play":
                legal = [C.action_name(int(a)) for a in np.flatnonzero(game.legal_mask()[0])]
                if any(a.startswith("play") for a in legal):
                    big = max(len(h) for s, h in enumerate(d["hands"]) if s != seat) > many
                    out[(big, hand[0].startswith("W"), C.action_name(int(action)).split()[0])] += 1
            game.step(np.array([action]))
    return out


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--model", default="ppo-any", help="a registered name or a model file")
    ap.add_argument("--opponent", default="random",
                    help="the agent in every other seat (default random)")
    ap.add_argument("--rules", default="ono", help="the preset (default ono)")
    ap.add_argument("--players", type=int, default=None,
                    help="players (default: a rules file's own count, else 4)")
    ap.add_argument("--games", type=int, default=40, help="games, each recorded (default 40)")
    ap.add_argument("--seed", type=int, default=11, help="the games' seed (default 11)")
    args = ap.parse_args()
    # every game is kept as a replay in memory: at most as many as the arena keeps
    within("bench_last_card", "--games", args.games, 1, MAX_RECORD)
    checked_seed("bench_last_card", "--seed", args.seed)
    rules = rules_at("bench_last_card", "--rules", args.rules, args.players, 4)
    args.players = rules.num_players
    model, opponent = (checked_agent("bench_last_card", option, spec, rules)
                       for option, spec in (("--model", args.model), ("--opponent", args.opponent)))
    replays: list[Replay] = []
    wins, _, _, cut = play_games(rules, [model] + [opponent] * (args.players - 1), args.games,
                                 args.seed, record=range(args.games), replays=replays,
                                 labels=["model"] + ["opponent"] * (args.players - 1))
    print(f"{args.model} against {args.players - 1} x {args.opponent} under {args.rules}: "
          f"{args.games} games (seed {args.seed}), {int(cut.sum())} cut at the decision limit, "
          f"its share of the wins {wins[:, 0].mean():.3f}")
    print("| an opponent holds more than 15 cards | last card a wild | chose | decisions |")
    print("|---|---|---|---|")
    for (big, wild, chose), n in sorted(last_card_choices(replays).items()):
        print(f"| {'yes' if big else 'no'} | {'yes' if wild else 'no'} | {chose} | {n} |")


if __name__ == "__main__":
    run_script("bench_last_card", main)
