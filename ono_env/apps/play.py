"""``ono-play``: play ONO in the terminal against any agents.

    ono-play greedy --rules basic                 # you and the greedy agent, one round
    ono-play greedy defensive random --rules classic --seed 3    # a match to 500, 4 players
    ono-play ppo-basic-2p --rules basic           # against the shipped learned policy

The table is printed after every move, from your seat (you see your hand, the others' hand
sizes). On your turn the legal actions are listed by number and name; type either (``3`` or
``play R5``; ``draw``, ``keep``, ``call``, ...). A wrong entry is refused with the reason and
asked again. ``quit`` (or the end of input) abandons the game. ``--replay FILE`` writes the
finished game as a replay (:mod:`ono_env.replay`), which the web table's viewer
(``ono-web``) plays back with every hand shown.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO, cast

import numpy as np

from ono_env import cards as C
from ono_env.agents import make_agent
from ono_env.agents.base import Agent
from ono_env.agents.driver import act_one
from ono_env.agents.learned import model_label
from ono_env.agents.registry import is_model_path
from ono_env.apps import console as cli
from ono_env.checks import check_int, check_output_dir, check_seed
from ono_env.game import VecGame, game_seeds
from ono_env.render import describe_action, render_text
from ono_env.replay import Replay
from ono_env.rules import resolve_rules


class Quit(Exception):
    """The human left the game."""


def parse_choice(text: str, legal: Sequence[int]) -> int:
    """The action a typed entry names: a number from the list or an action name. Raises
    ``ValueError`` with the reason when it names nothing legal."""
    t = " ".join(text.split())
    if not t:
        raise ValueError("empty entry: type a number from the list or an action name")
    if t.lstrip("-").isdigit():
        a = int(t)
        if a not in legal:
            raise ValueError(f"{a} is not one of the listed numbers ({', '.join(map(str, legal))})")
        return a
    try:
        a = C.action_id(t)
    except ValueError as exc:
        raise ValueError(str(exc)) from None
    if a not in legal:
        raise ValueError(f"{C.action_name(a)!r} is not legal now")
    return a


def ask_human(legal: Sequence[int], read: Callable[[str], str], out: TextIO) -> int:
    print("your options:", file=out)
    for a in legal:
        print(f"  {a:>2}  {C.action_name(a)}", file=out)
    while True:
        try:
            text = read("your move (number or name): ")
        except EOFError:
            raise Quit("input ended") from None
        if text.strip().lower() in ("quit", "exit", "q"):
            raise Quit("quit")
        try:
            return parse_choice(text, legal)
        except ValueError as exc:
            print(f"not accepted: {exc}; try again", file=out)


def play(agents: Sequence[str], rules="basic", num_players: int | None = None, seat: int = 0,
         seed: int | None = None, single_round: bool = False, ansi: bool = False,
         read: Callable[[str], str] = input, out: TextIO = sys.stdout,
         replay_path: str | None = None) -> int | None:
    """One game (a round, or a match when the rules play to a target score) between a
    human in ``seat`` and ``agents`` in the other seats (in order from seat 0, skipping the
    human's). Returns the winning seat (None for a truncated game); raises :class:`Quit`
    when the human leaves. ``replay_path``: write the finished game there as a replay."""
    overrides = {}
    if num_players is not None:
        overrides["num_players"] = num_players
    elif len(agents) + 1 != resolve_rules(rules).num_players:
        overrides["num_players"] = len(agents) + 1
    if single_round:
        overrides["target_score"] = 0
    rules = resolve_rules(rules, **overrides)
    n = rules.num_players
    if len(agents) != n - 1:
        raise ValueError(f"{len(agents)} agents for {n} players: give {n - 1} (one per other seat)")
    seat = check_int("seat", seat, 0, n - 1)
    seed = check_seed("seed", seed)
    if replay_path is not None:     # refuse a path it cannot write before the game, not after
        target = Path(replay_path)
        if target.is_dir():
            raise ValueError(f"--replay {str(target)!r}: it is a folder; give a file name")
        check_output_dir(target.parent, f"--replay {str(target)!r}")
    policies = [make_agent(a, rules) for a in agents]
    by_seat: dict[int, tuple[str, Agent]] = {}
    k = 0
    for s in range(n):
        if s != seat:
            spec = agents[k]   # a model file is shown by its name, not its local path
            label = model_label(spec) if isinstance(spec, str) and is_model_path(spec) else str(spec)
            by_seat[s] = (label, policies[k])
            k += 1
    seed = int(cast(int, np.random.SeedSequence().entropy) % 2**31) if seed is None else seed
    game = VecGame(rules, 1, seed=seed)
    rng = np.random.default_rng([seed, 99])
    names = {s: ("you" if s == seat else by_seat[s][0]) for s in range(n)}
    replay = Replay.start(game, 0, int(game_seeds(seed, 1)[0]), [names[s] for s in range(n)],
                          "ono-play")
    print(f"{rules.name} rules, {n} players, seed {seed}. You are P{seat}. "
          + ", ".join(f"P{s} {names[s]}" for s in range(n) if s != seat), file=out)
    history: list[str] = []
    print(render_text(game, 0, seat=seat, ansi=ansi), file=out)
    while not game.finished[0]:
        p = int(game.state.current[0])
        mask = game.legal_mask()
        legal = [int(a) for a in np.flatnonzero(mask[0])]
        thinking = None
        if p == seat:
            a = ask_human(legal, read, out)
        else:
            a, thinking = act_one(by_seat[p][1], names[p], game, rng)
        replay.add(a, thinking)
        round_before = int(game.state.round[0])
        game.step(np.array([a]))
        line = describe_action(p, a) + (" (you)" if p == seat else f" ({names[p]})")
        history = (history + [line])[-n:]
        print(line, file=out)
        if int(game.state.round[0]) != round_before and not game.finished[0]:
            print(f"--- round {round_before + 1} won by P{int(game.state.winner[0])}; scores "
                  + " ".join(f"P{q} {int(v)}" for q, v in enumerate(game.state.scores[0])), file=out)
        print(render_text(game, 0, seat=seat, ansi=ansi, history=history[-1:]), file=out)
    replay.finish(game, 0)
    if replay_path is not None:
        print(f"replay written to {replay.save(replay_path)}", file=out)
    if game.truncated[0] and not game.terminated[0]:
        print("the game was cut at the decision limit: no winner", file=out)
        return None
    w = int(game.state.winner[0])
    print("you win!" if w == seat else f"P{w} ({names[w]}) wins", file=out)
    return w


def main(argv: Sequence[str] | None = None) -> int:
    ap = cli.ArgumentParser(prog="ono-play", description="Play ONO in the terminal against agents.")
    ap.add_argument("agents", nargs="*", default=["greedy"],
                    help="the other players: agent names (random, greedy, color, defensive, "
                         "ppo-basic-2p, ...) or model files (.safetensors); default: greedy")
    ap.add_argument("--rules", default="basic", help="preset name or rules YAML (default basic)")
    ap.add_argument("--players", type=cli.bounded_int(2, 10), default=None,
                    help="number of players (default: one more than the agents given)")
    ap.add_argument("--seat", type=cli.bounded_int(0, 9), default=0, help="your seat (default 0)")
    ap.add_argument("--seed", type=cli.bounded_int(0, cli.MAX_SEED), default=None,
                    help="seed of the deal (default: random)")
    ap.add_argument("--round", action="store_true", help="play a single round even under match rules")
    ap.add_argument("--no-color", action="store_true", help="no ANSI colours")
    ap.add_argument("--replay", metavar="FILE", default=None,
                    help="write the finished game to FILE as a replay (JSON; ono-web shows it)")

    def body(args) -> int:
        try:
            play(args.agents or ["greedy"], args.rules, args.players, args.seat, args.seed,
                 args.round, ansi=not args.no_color and sys.stdout.isatty(),
                 replay_path=args.replay)
        except Quit as q:
            print(f"game abandoned ({q})")
            return 1
        return 0

    return cli.run(ap, argv, body)


if __name__ == "__main__":
    sys.exit(main())
