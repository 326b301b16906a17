"""``ono-play``: play ONO in the terminal against any agents.

    ono-play greedy --rules basic                 # you and the greedy agent, one round
    ono-play greedy defensive random --rules classic --seed 3    # a match to 500, 4 players
    ono-play ppo-basic-2p --rules basic           # against the shipped learned policy

The table is printed after every move, from your seat (you see your hand, the others' hand
sizes), and what the move changed at the table is said in one line each (skips, reversals,
draws and why, swaps, challenges, round ends). On your turn the legal options are listed
numbered 1..n; type a number, an action's name (``play R5``, ``draw``, ``keep``, ``call``,
...) or a card's name when it names one legal play (``y3``). ``help`` lists the commands and
card codes, ``rules`` the rules in force. A single-option decision is taken for you
(``--ask-forced`` asks). A wrong entry is refused with the reason and asked again. ``quit``
(or the end of input) abandons the game. ``--replay FILE`` writes the finished game as a
replay (:mod:`ono_env.replay`), which the web table's viewer (``ono-web``) plays back with
every hand shown.
"""

from __future__ import annotations

import contextlib
import os
import re
import string
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

import numpy as np

from ono_env import cards as C
from ono_env import render
from ono_env.agents import make_agent
from ono_env.agents.base import Agent, is_cheating, marked, plays_from_game
from ono_env.agents.driver import act_one
from ono_env.agents.learned import model_label
from ono_env.agents.registry import is_model_path
from ono_env.apps import console as cli
from ono_env.checks import check_int, check_output_file, check_seed, cut, is_int, printable, shown
from ono_env.game import VecGame, fresh_seed, game_seeds
from ono_env.positions import game_winners, won_on_lowest_total
from ono_env.render import describe_action, option_hint, render_text, why_not_legal
from ono_env.replay import Replay
from ono_env.rule_help import describe_rules
from ono_env.rules import MAX_PLAYERS, RuleSet, given_player_count, resolve_rules


class Quit(Exception):
    """The human left the game."""


HELP = """commands:
  a number from the list      take that option (1, 2, ...)
  an action's name            play R5, play W+4 G, draw, keep, call, catch, challenge, accept,
                              color R (or R, red, colour R), target 1
  target P2 (or P2)           swap hands with P2; target 1 is the player one seat on from you
                              in seat order (P1 from P0), target 2 two seats on, ...
  a card's name               Y3 (or y3): plays it when that is one legal play
  help                        this text
  rules                       the rules in force
  quit                        leave the game
card codes:
  colours R Y G B             red, yellow, green, blue
  R0-R9 ... B9                number cards (colour, then number)
  RS, RR, R+2                 Skip, Reverse, Draw Two of a colour (here red)
  W, W+4                      Wild, Wild Draw Four ("play W+4 G" plays it naming green)
  WS, WC                      Wild Shuffle Hands, Wild Customizable
table:
  > marks whose turn it is; [n cards] the size of each other hand; ONO! the player has
  called ONO! (on their last card, or on the two before playing one)"""


def _entry(text: str) -> str:
    """A typed line with its spaces read as ASCII spaces only (split() and strip() also take
    U+3000 and U+00A0 for spaces), as every entry is read: moves, quit, help and rules."""
    return " ".join(text.split()) if text.isascii() else text.strip(string.whitespace)


MAX_ENTRY = 1_000
"""The most characters of one typed line read from a pipe or a file (every entry is a few)."""


def _line_editing() -> None:
    """Give ``input()`` line editing at a terminal (arrow keys, history): the standard
    library's ``readline``, which ``input()`` uses once it is imported (before: never
    imported, and an arrow key was read as an escape code, an "unknown entry"). None on a
    platform without it."""
    try:
        import readline  # noqa: F401 - imported for its effect on input()
    except ImportError:   # pragma: no cover - Windows
        pass


def read_line(prompt: str) -> str:
    """``input(prompt)``, bounded where the input is not a terminal: a line of more than
    :data:`MAX_ENTRY` characters is a ``ValueError`` (before: ``input()`` read a stream with
    no newline, ``< /dev/zero``, until memory ran out); where the input ends or such a line
    ends the game, or a Ctrl-C or SIGTERM comes while it waits, the prompt's line is ended
    first. A terminal bounds its lines itself and
    keeps ``input()``'s line editing. Bytes that are not UTF-8 come in as surrogates
    (``surrogateescape``, whatever the locale's strict decoding: before, such a line ended
    the game with the codec's error), which :func:`parse_choice` names."""
    if getattr(sys.stdin, "errors", None) == "strict" and hasattr(sys.stdin, "reconfigure"):
        sys.stdin.reconfigure(errors="surrogateescape")
    try:
        if sys.stdin.isatty():
            _line_editing()
            try:
                return input(prompt)
            except EOFError:   # Ctrl-D: as the end of piped input (before: the last words
                print()        # followed the prompt)
                raise
        print(prompt, end="", flush=True)
        line = sys.stdin.readline(MAX_ENTRY + 1)
    except (KeyboardInterrupt, cli.Stopped):   # before: "interrupted" followed the prompt
        print()
        raise
    # where the game ends here, the prompt's line is ended first (before: the last words
    # followed it)
    if not line:
        print()
        raise EOFError
    if len(line) > MAX_ENTRY and not line.endswith("\n"):
        print()
        raise ValueError(f"an input line of more than {MAX_ENTRY:,} characters "
                         f"({shown(line, 20)}); allowed: at most {MAX_ENTRY:,} per entry")
    return line.removesuffix("\n")


_COLOUR_ENTRY = re.compile(r"(?:colou?r )?(r|y|g|b|red|yellow|green|blue)", re.I)
_TARGET_ENTRY = re.compile(r"(?:target )?p([0-9])", re.I)


def parse_choice(text: str, legal: Sequence[int], position: dict | None = None) -> int:
    """The action a typed entry names: a number from the list (1 to n, in the order listed),
    an action name (``play R5``, ``draw``), or a bare card name (``Y3``, ``y3``) when it names
    exactly one legal play; a colour to name as ``R``, ``red`` or ``colour R`` too, and with
    the ``position`` (:meth:`~ono_env.game.VecGame.to_dict`) a player to swap hands with by
    seat, ``target P2`` or ``P2`` (``target 2`` counts seats on from the acting player, which
    a player took for seat 2). Raises ``ValueError`` with the reason when it names nothing
    legal."""
    if not isinstance(text, str):   # before: an AttributeError
        raise ValueError(f"parse_choice: text is a {type(text).__name__}; allowed: the text typed")
    t = _entry(text)
    if not t:
        raise ValueError("empty entry: type a number from the list, an action or a card name "
                         "(help lists them)")
    colour = _COLOUR_ENTRY.fullmatch(t)
    if colour:   # the game says "colour"; the action's name is "color R"
        a = C.action_id(f"color {colour.group(1)[0].upper()}")
        if a not in legal:   # the reason the other entries give (before: its own, which
            # said no colour was to be named where a player was to be chosen first)
            name = C.action_name(a)   # no position: the legal actions name no colour
            why = why_not_legal(name, position, legal) or " (no colour is to be named)"
            raise ValueError(f"{name!r} is not legal now{why}")
        return a
    seat = _TARGET_ENTRY.fullmatch(t)
    if seat and position is not None:
        q, p, n = int(seat.group(1)), int(position["current_player"]), len(position["hands"])
        if not any(C.A_TARGET <= x < C.A_TARGET + C.MAX_TARGET for x in legal):
            # no seat is to be chosen, any (before: P0, your own, was "no player to swap
            # hands with", where P1 said why)
            raise ValueError(f"'target P{q}' is not legal now"
                             f"{why_not_legal('target 1', position, legal)}")
        if not 0 <= q < n or q == p:
            raise ValueError(f"P{q} is no player to swap hands with (you are P{p}; the players: "
                             f"P0 to P{n - 1})")
        a = C.action_id(f"target {(q - p) % n}")
        if a not in legal:
            raise ValueError(f"'target P{q}' is not legal now"
                             f"{why_not_legal(C.action_name(a), position, legal)}")
        return a
    offset = re.fullmatch(r"target (-?[0-9]{1,6})", t, re.I)
    if offset and not 1 <= int(offset.group(1)) <= C.MAX_TARGET:
        # before: "unknown entry 'target 0'", where "target 9" got its reason
        raise ValueError(f"'{t}' names no player; allowed: target N, the player N seats on "
                         f"from you (N from 1 to one less than the players), or target P<seat>")
    if re.fullmatch(r"-?[0-9]+", t):   # ASCII digits: isdigit() also takes '²' and '①'
        # at most 6 digits read as a number (int() of a page of digits is slow or refused);
        # a longer one is named cut, and out of the list all the same (before: 7 digits or
        # more were an "unknown entry")
        digits = t.lstrip("-").lstrip("0") or "0"   # int() of the whole: Python's digit limit
        k = (-1 if t.startswith("-") else 1) * int(digits) if len(digits) <= 6 else None
        if k is None or not 1 <= k <= len(legal):
            said = str(k) if k is not None else cut(t, 20)
            raise ValueError(f"{said} is not one of the listed numbers (1 to {len(legal)})")
        return legal[k - 1]
    a = -1
    for form in (t, f"play {t}"):     # "W+4 G" is "play W+4 G"
        try:
            a = C.action_id(form)
            break
        except ValueError:
            pass
    if a < 0 and t.isascii():   # a bare card name: "Y3" -> "play Y3", "W+4" -> the one legal
        card = t.upper().removeprefix("PLAY ")   # "play W+4 <c>" (U+017F, long s, upper-cases to S: ASCII only)
        plays = [x for x in legal if C.action_name(x).split(" ")[:2] == ["play", card]]
        if len(plays) == 1:
            return plays[0]
        if plays:
            raise ValueError(f"{card} is {len(plays)} options: "
                             + ", ".join(C.action_name(x) for x in plays)
                             + " (type one, or its number)")
        if card in C.CARD_NAMES or card in C.WILD_NAMES:
            raise ValueError(f"{card} is not a legal play now"
                             f"{why_not_legal(f'play {card}', position, legal)}")
    if a < 0:   # bytes that are no UTF-8 come in as surrogates (Python's surrogateescape);
        # before: such an entry was named an "unknown entry" by its escapes alone
        what = ("an entry that is not UTF-8 text" if any("\udc80" <= c <= "\udcff" for c in t)
                else "unknown entry")
        raise ValueError(f"{what} {shown(t, 80)}: type a number from the list, an action "
                         f"(play R5, draw, ...) or a card name (R5); help lists them")
    if a not in legal:
        name = C.action_name(a)
        raise ValueError(f"{name!r} is not legal now{why_not_legal(name, position, legal)}")
    return a


def ask_human(legal: Sequence[int], read: Callable[[str], str], out: TextIO,
              position: dict | None = None) -> int:
    """List the options numbered 1..n (with what each does, where it needs saying) and read
    entries until one names a legal action; ``help`` and ``rules`` answer and ask again."""
    print("your options:", file=out)
    for k, a in enumerate(legal, 1):
        hint = option_hint(a, position, legal) if position is not None else ""
        print(f"  {k:>2}  {C.action_name(a)}" + (f"   ({hint})" if hint else ""), file=out)
    while True:
        try:
            text = read("your move (number, action or card; help): ")
        except EOFError:
            raise Quit("input ended") from None
        # spaces read as a move's are (before: "\u3000quit" quit while "\u3000draw" was
        # refused)
        word = _entry(text).lower()
        if word in ("quit", "exit", "q"):
            raise Quit("quit")
        if word in ("help", "h", "?"):
            print(HELP, file=out)
            continue
        if word == "rules" and position is not None:
            print("\n".join(describe_rules(RuleSet.from_dict(position["rules"]))), file=out)
            continue
        try:
            return parse_choice(text, legal, position)
        except ValueError as exc:
            print(f"not accepted: {exc}; try again", file=out)


def play(agents: Sequence[str] | None, rules="basic", num_players: int | None = None,
         seat: int = 0, seed: int | None = None, single_round: bool = False, ansi: bool = False,
         read: Callable[[str], str] = read_line, out: TextIO | None = None,
         replay_path: str | None = None, auto_forced: bool = True) -> list[int]:
    """One game (a round, or a match when the rules play to a target score) between a
    human in ``seat`` and ``agents`` in the other seats (in order from seat 0, skipping the
    human's; None: ``greedy`` in every other seat, one for two players unless
    ``num_players`` or a rules file sets the count). ``out``: where the game is written
    (None: the standard output at the call, so that a console script's failed write is named
    as one). Returns the winning seats (:func:`~ono_env.positions.game_winners`: one, or
    those tied on the lowest total of a penalty-scored match; none for a truncated game);
    raises :class:`Quit` when the human leaves. ``replay_path``: write the finished game
    there as a replay. ``auto_forced``: take a decision with a single legal option (``keep``
    after drawing an unplayable card) without asking, and say so. Every move is followed by
    what it changed at the table (:func:`~ono_env.render.table_events`: skips, reversals,
    draws and their reason, swaps, challenges; a round's end and the next deal's first card:
    :func:`~ono_env.render.round_end_events`); a human challenger is shown the accused hand."""
    out = sys.stdout if out is None else out
    if isinstance(agents, str):   # before: read letter by letter ("unknown agent 'g'")
        raise ValueError(f"agents={shown(agents, 60)} (str); allowed: a list of agent names "
                         f"(agents=[{shown(agents, 40)}]), or None for greedy at every other seat")
    if agents is None:   # none given: greedy at every other seat (before: one, counted as given)
        if num_players is None:   # a file's count, checked (and named) as the file's
            count = resolve_rules(rules).num_players if given_player_count(rules) else 2
        else:
            count = check_int("num_players", num_players, 2, MAX_PLAYERS)
        agents = ["greedy"] * (count - 1)
    overrides = {}
    if num_players is not None:
        overrides["num_players"] = num_players
    elif len(agents) + 1 != resolve_rules(rules).num_players:
        given = given_player_count(rules)   # a file's own count is not dropped silently
        if given is not None:
            # resolve_rules above has checked the file's count (2 to 10)
            raise ValueError(f"{given[1]} sets num_players={given[0]!r} and {len(agents)} "
                             f"{'agents make' if len(agents) != 1 else 'agent makes'} {len(agents) + 1} "
                             f"players: give {given[0] - 1} (one per other seat), or --players "
                             f"to play another count")
        if not 1 <= len(agents) <= MAX_PLAYERS - 1:
            raise ValueError(f"{len(agents)} agents make {len(agents) + 1} "
                             f"player{'s' if agents else ''}; allowed: 1 "
                             f"to {MAX_PLAYERS - 1} agents (one per other seat, 2 to "
                             f"{MAX_PLAYERS} players)")
        overrides["num_players"] = len(agents) + 1
    if single_round:
        overrides["target_score"] = 0
    rules = resolve_rules(rules, **overrides)
    n = rules.num_players
    if len(agents) != n - 1:
        raise ValueError(f"{render.plural(len(agents), 'agent')} for {n} players: give {n - 1} "
                         f"(one per other seat)")
    if is_int(seat) and not 0 <= seat < n:
        # the table's size, not only the range (before: "seat=5; allowed: an integer from 0
        # to 1", where the option's help says 0 to 9)
        raise ValueError(f"seat={seat}: this table has {n} players; allowed: a seat from 0 "
                         f"to {n - 1}")
    seat = check_int("seat", seat, 0, n - 1)
    seed = check_seed("seed", seed)
    if replay_path is not None:     # refuse a path it cannot write before the game, not after
        check_output_file(replay_path, "--replay")
    policies = [make_agent(a, rules) for a in agents]
    by_seat: dict[int, tuple[str, Agent]] = {}
    k = 0
    for s in range(n):
        if s != seat:
            spec = agents[k]   # a model file is shown by its name, not its local path
            label = model_label(spec) if isinstance(spec, str) and is_model_path(spec) else str(spec)
            by_seat[s] = (marked(label, is_cheating(policies[k])), policies[k])
            k += 1
    seed_chosen = seed is not None   # a seed drawn here deals every hand: shown at the end
    seed = fresh_seed() if seed is None else seed
    game = VecGame(rules, 1, seed=seed)
    rng = np.random.default_rng([seed, 99])
    names = {s: ("you" if s == seat else by_seat[s][0]) for s in range(n)}
    replay = Replay.start(game, 0, int(game_seeds(seed, 1)[0]), [names[s] for s in range(n)],
                          "ono-play")
    print(f"{rules.title}, {n} players, "
          + (f"seed {seed}" if seed_chosen else "a fresh seed (shown at the end)")
          + f". You are P{seat}. "
          + ", ".join(f"P{s} {names[s]}" for s in range(n) if s != seat)
          + ". Type help for the commands and card codes, rules for the rules in force.",
          file=out)
    history: list[str] = []
    terminal = getattr(out, "isatty", lambda: False)()   # "is thinking": not in a log
    position = game.to_dict(0)
    for event in render.deal_events(position):
        print(f"  {render.personal(event, seat)}", file=out)
    print(render_text(game, 0, seat=seat, ansi=ansi), file=out)
    # a drawn seed, shown as the game ends or is left
    seed_line = None if seed_chosen else f"seed {seed} (--seed {seed} deals this game again)"
    try:
        while not game.finished[0]:
            p = int(game.state.current[0])
            mask = game.legal_mask()
            legal = [int(a) for a in np.flatnonzero(mask[0])]
            thinking = None
            before = position
            forced = False
            if p == seat and len(legal) == 1 and auto_forced:
                a, forced = legal[0], True
            elif p == seat:
                a = ask_human(legal, read, out, before)
            else:
                if terminal and plays_from_game(by_seat[p][1]):
                    # a search may take seconds: say whose turn it is (before: a silent terminal)
                    print(f"  P{p} ({names[p]}) is thinking...", file=out, flush=True)
                a, thinking = act_one(by_seat[p][1], names[p], game, rng)
            replay.add(a, thinking)
            game.step(np.array([a]))
            line = describe_action(p, a) + (" (you" + (", your only option)" if forced else ")")
                                             if p == seat else f" ({names[p]})")
            history = (history + [line])[-n:]
            print(line, file=out)
            position = game.to_dict(0)          # this step's "after", the next one's "before"
            for event in render.seat_events(before, position, p, a, seat):   # yours: a hand shown
                print(f"  {render.personal(event, seat)}", file=out)
            ended = render.round_end_events(before, position)   # and the next round's deal
            if ended:
                print(f"--- {render.personal(ended[0], seat)}", file=out)
                for event in ended[1:]:
                    print(f"  {render.personal(event, seat)}", file=out)
            if not game.finished[0]:
                print(render_text(game, 0, seat=seat, ansi=ansi, history=history[-1:]), file=out)
    except BaseException:
        # the game is left before its end (quit, end of input, Ctrl-C, a signal, an input
        # refused): a drawn seed is shown now (before: after quit only, and lost otherwise)
        if seed_line is not None:
            with contextlib.suppress(OSError, ValueError):   # an output that is gone: nothing
                print(seed_line, file=out)
        raise
    print(render_text(game, 0, seat=None, ansi=ansi), file=out)   # the end: every hand shown
    if seed_line is not None:
        print(seed_line, file=out)
    replay.finish(game, 0)
    end = game.to_dict(0)
    won = game_winners(end)
    # a penalty match is won on the lowest total, not by its last round's winner: said so
    # (before: "P3 (greedy) wins" under a round won by another)
    lowest = (" on the lowest total" if won_on_lowest_total(end["rules"]["scoring"],
                                                           end["rules"]["target_score"]) else "")
    if not won:
        print("the game was cut at the decision limit: no winner", file=out)
    elif len(won) == 1:
        print(f"you win{lowest}!" if won[0] == seat else f"P{won[0]} ({names[won[0]]}) wins{lowest}",
              file=out)
    else:
        tied = ", ".join("you" if q == seat else f"P{q} ({names[q]})" for q in won)
        print(f"{tied} tie for the win on the lowest total", file=out)
    if replay_path is not None:   # after the result, which a failed write no longer hides
        print(save_replay(replay, replay_path), file=out)
    return won


MAX_OTHER_NAMES = 99
"""How many other names ``<name>-2.json`` ... a replay tries where its own was taken."""


def save_replay(replay: Replay, path: str) -> str:
    """Write a finished game's replay to ``path``, checked free before the game, as a new
    file: a file that appeared there meanwhile (another game given the same ``--replay``)
    is kept, never replaced (before: replaced without a word), and the replay goes to the
    first free name of ``<name>-2.json`` to ``<name>-100.json`` beside it. Returns the line
    that says where it went; a replay that cannot be written is one ``ValueError``."""
    first = Path(path)
    try:
        return f"replay written to {printable(str(replay.save(first, new=True)))}"
    except ValueError:
        if not os.path.lexists(first):   # not taken: a write that failed for another reason
            raise
    for k in range(2, MAX_OTHER_NAMES + 2):
        other = first.with_name(f"{first.stem}-{k}{first.suffix}")
        if os.path.lexists(other):
            continue
        try:
            saved = replay.save(other, new=True)
        except ValueError as exc:
            if os.path.lexists(other):   # taken meanwhile too: the next name
                continue
            raise ValueError(f"--replay {printable(str(first))} appeared during the game, and "
                             f"the replay could not be written beside it: {exc}") from None
        return (f"replay written to {printable(str(saved))} ({printable(str(first))} appeared "
                f"during the game and is kept)")
    raise ValueError(f"--replay {printable(str(first))} appeared during the game, and so had "
                     f"every name {first.stem}-2{first.suffix} to "
                     f"{first.stem}-{MAX_OTHER_NAMES + 1}{first.suffix}: the replay was not "
                     f"written")


def _colours(no_color: bool) -> bool:
    """ANSI colours: on a terminal, unless ``--no-color``, ``NO_COLOR`` (set and not empty,
    the no-color.org convention) or ``TERM=dumb`` says no (before: only ``--no-color``)."""
    return (not no_color and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
            and os.environ.get("TERM") != "dumb")


def main(argv: Sequence[str] | None = None) -> int:
    ap = cli.ArgumentParser(prog="ono-play", description="Play ONO in the terminal against agents.")
    ap.add_argument("agents", nargs="*", default=None,
                    help="the other players: agent names (random, greedy, color, defensive, "
                         "ppo-basic-2p, ...; a search agent such as pimc or ismcts, alone or "
                         "as name:N, N up to 1,000,000, or name:<T>ms, T up to 60000) or model "
                         "files (.safetensors, or training checkpoints .zip); default: greedy "
                         "at every other seat (one, unless --players or a rules file sets the "
                         "count)")
    ap.add_argument("--rules", default="basic",
                    help="preset name or rules YAML (default basic, as in every console script)")
    ap.add_argument("--players", type=cli.bounded_int(2, 10), default=None,
                    help="number of players (default: one more than the agents given, which must "
                         "then agree with a rules file that sets num_players; --players sets "
                         "the count whatever the file says)")
    ap.add_argument("--seat", type=cli.bounded_int(0, 9), default=0, help="your seat (default 0)")
    ap.add_argument("--seed", type=cli.bounded_int(0, cli.MAX_SEED), default=None,
                    help="seed of the deal (default: random)")
    ap.add_argument("--round", action="store_true", help="play a single round even under match rules")
    ap.add_argument("--no-color", action="store_true",
                    help="no ANSI colours (also NO_COLOR set and not empty, or TERM=dumb)")
    ap.add_argument("--ask-forced", action="store_true",
                    help="ask even when you have a single option (by default it is taken for "
                         "you, and said)")
    ap.add_argument("--replay", metavar="FILE", default=None,
                    help="write the finished game to FILE as a replay (JSON; ono-web shows one of at "
                         "most 20,000 decisions)")

    def body(args) -> int:
        # a closed stream is None in Python (before: a game dealt and played up to the first
        # question; a closed stdout is refused by cli.run)
        if sys.stdin is None:
            raise ValueError("standard input is closed (your moves are read from it); "
                             "allowed: a terminal, a file or a pipe")
        try:
            play(args.agents or None, args.rules, args.players, args.seat, args.seed,
                 args.round, ansi=_colours(args.no_color),
                 replay_path=args.replay, auto_forced=not args.ask_forced)
        except Quit as q:
            from ono_env.checks import remove_made_dirs

            remove_made_dirs()   # no replay: the folders made for it go again, if still empty
            print(f"game abandoned ({q})")
            return 1
        return 0

    return cli.run(ap, argv, body)


if __name__ == "__main__":
    sys.exit(main())
