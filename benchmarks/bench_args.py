"""Argument checks that the benchmark scripts share: each bad value is one line naming the
script, the option and what is allowed (``sys.exit``), before any work and before any file
is written."""

from __future__ import annotations

import argparse
import math
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ono_env.apps.console import WHOLE_NUMBER, refuse_repeats
from ono_env.checks import check_output_dir, remove_made_dirs, shown


def whole_number(text: str) -> int:
    """The argparse ``type`` the scripts' ``type=int`` options get (:class:`_Parser`): ASCII
    digits with an optional sign and ``_`` only between digits, as the console scripts take
    (``int()`` alone takes " 7", "7_" and other scripts' digits, "٣" read as 3)."""
    if not WHOLE_NUMBER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{shown(text, 40)} is not a whole number")
    if len(text) > 100:   # int() refuses past 4,300 digits, and argparse would echo them all
        raise argparse.ArgumentTypeError(f"a number of {len(text):,} characters is out of range")
    return int(text, 10)


whole_number.__name__ = "whole number"   # argparse names the type in its own messages


class _Parser(argparse.ArgumentParser):
    """argparse as the console scripts parse (``ono_env.apps.console.ArgumentParser``): each
    option by its full name (``--play`` is not ``--plays``), an option that keeps one value
    given at most once (``refuse_repeats``), and ``type=int`` read
    as :func:`whole_number`; its subcommands' parsers are made of this class too, so they
    do."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        if kwargs.get("type") is int:
            kwargs["type"] = whole_number
        return super().add_argument(*args, **kwargs)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        words = sys.argv[1:] if args is None else list(args)
        refuse_repeats(self, words)
        return super().parse_known_args(words, namespace)


MAX_ROUNDS = 1_000
"""The most interleaved rounds a timing script takes (``--rounds``): each round times every
side once, so more is a run that does not end in a sitting (before, any count was taken)."""


def parser(doc: str | None) -> argparse.ArgumentParser:
    """The script's argument parser (:class:`_Parser`), whose ``--help`` description is its
    whole docstring ``doc`` as written (the examples' lines kept), not a first line cut
    mid-sentence."""
    return _Parser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def path_arg(text: str) -> Path:
    """The argparse ``type`` of a path option: ``text`` as a :class:`~pathlib.Path`, an empty or
    blank one refused by name (``Path('')`` is the current folder: before, ``--out ''`` wrote
    the results into whatever folder the script was started from)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r}; allowed: a path, not empty or blank (an "
                                         f"empty one is the current folder)")
    return Path(text)


def was_given(option: str, argv: list[str] | None = None) -> bool:
    """Whether the command line (``argv``, default ``sys.argv[1:]``) gives ``option``
    (``--x v`` or ``--x=v``), at its default value too."""
    argv = sys.argv[1:] if argv is None else argv
    return any(a == option or a.startswith(f"{option}=") for a in argv)


def refuse_unused(script: str, options: Iterable[str], because: str,
                  argv: list[str] | None = None) -> None:
    """Exit naming the ``options`` given on the command line (``argv``, default
    ``sys.argv[1:]``) that the run will not read, ``because`` (e.g. "--skip-strength plays
    no training"): an option taken and ignored reads as measured (before: bench_prebuilt
    and bench_ray took them, and bench_ray recorded them in its results). Given is given,
    at its default value too."""
    given = [o for o in options if was_given(o, argv)]
    if given:
        sys.exit(f"{script}: {because}: {', '.join(given)} {'is' if len(given) == 1 else 'are'} "
                 f"not used there; allowed: leave {'it' if len(given) == 1 else 'them'} out")


def run_script(script: str, main: Callable[[], Any]) -> None:
    """Run a benchmark script's ``main()`` and exit with its status (None: 0), as the console
    scripts end (``ono_env.apps.console``): a Ctrl-C is one line ``<script>: interrupted``
    and status 130, a SIGTERM or SIGHUP one line and the signal's own end, the output
    folders it made removed again where still empty (before: a traceback, and the empty
    folder left); what it printed, and any file it kept, stays. A refusal of its arguments
    (``sys.exit(message)``) is its message and status 2. An error of the script's own
    (a bug, ``MemoryError``) keeps its traceback, and the empty folders go too; but an error
    raised after a Ctrl-C is the interruption (llvmlite's callbacks swallow the
    ``KeyboardInterrupt`` while numba compiles, and numba then fails with an error of its own:
    before, its traceback)."""
    import signal
    import threading

    from ono_env.apps.console import Stopped, end_by_signal, ignore_sigint, stopped_by_signals

    asked: list[int] = []

    def interrupt(signum: int, frame: Any) -> None:
        asked.append(signum)
        raise KeyboardInterrupt
    own = (threading.current_thread() is threading.main_thread()
           and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    if own:
        signal.signal(signal.SIGINT, interrupt)

    def interrupted() -> None:
        remove_made_dirs()
        print(f"{script}: interrupted", file=sys.stderr)
        ignore_sigint()   # a second Ctrl-C as the interpreter exits: no traceback
        sys.exit(130)
    try:
        with stopped_by_signals():
            status = main()
    except KeyboardInterrupt:
        interrupted()
    except Stopped as exc:
        remove_made_dirs()
        sys.exit(end_by_signal(script, exc, None))
    except SystemExit as exc:
        if not isinstance(exc.code, str):
            raise
        # a refusal, sys.exit(message): the status of argparse's refusals and the console
        # scripts', 2 (before: Python's 1, as for a run that failed)
        remove_made_dirs()
        print(exc.code, file=sys.stderr)
        sys.exit(2)
    except Exception:
        if asked:
            interrupted()
        remove_made_dirs()
        raise
    finally:
        if own and signal.getsignal(signal.SIGINT) is interrupt:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(status)


def map_in_processes(fn: Callable[[Any], Any], jobs: list[Any], procs: int) -> list[Any]:
    """``[fn(job) for job in jobs]``, in up to ``procs`` processes where ``procs`` > 1: spawned,
    as the arena's workers are (``ono_env.arena.evaluate``), with Ctrl-C left to this process,
    and every worker ended when this one is stopped (a signal, an error). Before, a fork
    pool's workers inherited the script's signal handler and died raising it, and the pool
    then waited on them forever: a SIGTERM never ended the script."""
    if procs == 1 or len(jobs) <= 1:
        return [fn(job) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from ono_env.arena.play import end_workers

    ex = ProcessPoolExecutor(max_workers=min(procs, len(jobs)),
                             mp_context=multiprocessing.get_context("spawn"),
                             initializer=_ignore_ctrl_c)
    try:
        return list(ex.map(fn, jobs))
    except BaseException:
        end_workers(ex)
        raise
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _ignore_ctrl_c() -> None:
    """A worker's Ctrl-C (the terminal sends it to the whole process group) is the parent's
    to handle: it ends the workers."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def out_folder(path: Path | str, script: str, option: str = "--out",
               writes: Iterable[str] = ()) -> Path:
    """``path`` made as a folder now, once every other argument has been checked and before
    any work, so that a run never ends without a place for its results; one error naming
    ``option`` when it cannot be (a file of that name, a parent that is no folder, no right
    to write), or when it already holds one of the files ``writes`` (names inside the folder
    that the script will write): an earlier run's results are never replaced silently."""
    p = Path(path)
    if p.is_dir():
        held = [name for name in writes if (p / name).exists()]
        if held:
            remove_made_dirs()
            sys.exit(f"{script}: {option}: the folder {str(p)!r} already holds "
                     f"{', '.join(held)} (an earlier run's results); allowed: a new or empty "
                     f"folder, or remove them")
    try:
        return check_output_dir(path, option)
    except ValueError as exc:
        remove_made_dirs()   # a folder made for an earlier option goes again, where empty
        sys.exit(f"{script}: {exc}")


def out_file(path: Path | str, script: str, option: str = "--out") -> Path:
    """``path`` as a file to write when the work is done: its folder made now (as
    :func:`out_folder`, once every other argument has been checked); one error naming
    ``option`` when ``path`` is a folder, already exists (an earlier run's results are never
    replaced silently) or its folder cannot be made, or is empty (``Path('')`` is the current
    folder)."""
    if not str(path).strip():
        sys.exit(f"{script}: {option}: {str(path)!r}; allowed: the path of a file")
    if str(path).endswith(("/", os.sep)):   # Path() drops the '/': a file named as the folder
        sys.exit(f"{script}: {option}: {str(path)!r} ends with '/', as a folder's name; "
                 f"allowed: the path of a file")
    p = Path(path)
    if p.is_dir():
        sys.exit(f"{script}: {option}: {str(p)!r} is a folder; allowed: the path of a file")
    if p.exists():
        remove_made_dirs()
        sys.exit(f"{script}: {option}: {str(p)!r} already exists (an earlier run's results); "
                 f"allowed: a new file, or remove it")
    out_folder(p.parent, script, option)
    return p


def checked_agent(script: str, option: str, spec: str, rules: Any, where: str = "") -> Any:
    """The agent ``spec`` (a name or a model file) made for ``rules``; one error naming
    ``option`` (and ``where``, a table, when given) when it cannot be."""
    from ono_env.agents import make_agent

    try:
        return make_agent(spec, rules)
    except (OSError, TypeError, ValueError) as exc:
        sys.exit(f"{script}: {option} {spec!r}{f' at {where}' if where else ''}: {exc}")


def rules_at(script: str, option: str, rules: str, players: int | None, default: int) -> Any:
    """The ``RuleSet`` of ``rules`` (a preset or a rules file, given as ``option``) at
    ``players``: ``None`` takes a rules file's own count, else ``default``. A file whose own
    count is not the ``--players`` given is one error (before: the file's count was dropped
    silently), as is a count the rules cannot have."""
    from ono_env.rules import given_player_count, resolve_rules

    given = given_player_count(rules)
    if players is None:
        players = given[0] if given is not None else default
    elif given is not None and given[0] != players:
        sys.exit(f"{script}: {option} {rules!r}: its {given[1]} sets num_players={given[0]!r} "
                 f"and --players is {players}; allowed: the same count, or no --players")
    try:
        return resolve_rules(rules, num_players=players)
    except (TypeError, ValueError) as exc:
        sys.exit(f"{script}: {option} {rules!r} --players {players}: {exc}")


def at_least(script: str, option: str, value: int, low: int) -> None:
    """One error unless the count ``value`` of ``option`` is at least ``low``."""
    if value < low:
        sys.exit(f"{script}: {option} {value}; allowed: {low} or more")


def at_most(script: str, option: str, value: int, high: int) -> None:
    """One error unless the count ``value`` of ``option`` is at most ``high`` (the library's own
    limit, checked here before any work rather than by the library once the work has begun)."""
    if value > high:
        sys.exit(f"{script}: {option} {value}; allowed: at most {high:,}")


def positive_finite(script: str, option: str, value: float) -> None:
    """One error unless ``value`` is a finite number above 0."""
    if not (math.isfinite(value) and value > 0):
        sys.exit(f"{script}: {option} {value}; allowed: a finite number above 0")


def within(script: str, option: str, value: int, low: int, high: int) -> None:
    """One error unless the count ``value`` of ``option`` is from ``low`` to ``high``: the
    messages of :func:`at_least`, then :func:`at_most`."""
    at_least(script, option, value, low)
    at_most(script, option, value, high)


def checked_rounds(script: str, value: int) -> None:
    """One error unless ``value`` interleaved rounds (``--rounds``) are 1 to :data:`MAX_ROUNDS`."""
    within(script, "--rounds", value, 1, MAX_ROUNDS)


def distinct(script: str, option: str, names: list[str]) -> list[str]:
    """``names`` (the comma-separated items of ``option``); one error when one is given twice
    (it would be measured twice and its rows would be counted twice)."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            sys.exit(f"{script}: {option}: {name!r} is given twice; allowed: each at most once")
        seen.add(name)
    return names


def checked_deals(script: str, option: str, value: int, players: Iterable[int]) -> None:
    """One error unless ``value`` mirrored deals at every table size of ``players`` make games
    the arena plays in one run: at least 2 deals (an interval over deals needs two), and every
    seating of each deal (``ono_env.arena.play.seatings``) within ``MAX_GAMES``, checked before
    any work rather than by the arena at the table that first goes over it."""
    from ono_env.arena import MAX_GAMES
    from ono_env.arena.play import seatings

    most = min(MAX_GAMES // len(seatings(n)) for n in players)
    within(script, option, value, 2, most)


def checked_seed(script: str, option: str, value: int) -> None:
    """One error unless the seed ``value`` is one the library takes (0 to ``MAX_SEED``),
    checked before any work rather than by the library once the work has begun."""
    from ono_env.checks import MAX_SEED

    within(script, option, value, 0, MAX_SEED)


def whole_rollouts(script: str, option: str, value: int, rollout: int,
                   most: int | None = None) -> None:
    """One error unless the learner steps ``value`` of ``option`` make at least one rollout of
    ``rollout`` steps (the trainer trains in whole rollouts: fewer would train a whole one
    while the records said ``value``), and at most ``most`` (default: the trainer's limit)."""
    from ono_env.train.config import MAX_STEPS

    if value < rollout:
        sys.exit(f"{script}: {option} {value}; allowed: {rollout:,} or more (one rollout: "
                 f"training runs in whole rollouts of {rollout:,} steps)")
    at_most(script, option, value, MAX_STEPS if most is None else most)


def optional_out(files: str) -> str:
    """The help of an ``--out`` folder that a script writes ``files`` into only when given."""
    return (f"folder of {files} (default: none, printed only; a folder holding an earlier "
            f"run's is refused)")


def steps_help(what: str, default: int) -> str:
    """The help of a ``--steps`` of training runs (:func:`whole_rollouts` checks it)."""
    return (f"{what}, at least one rollout of the trainer (default {default:,}); the trainer "
            f"rounds them up to whole rollouts, and the page says the steps trained")


def sub_run(script: str, cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, **kwargs)``; when it fails, one error naming the sub-run's command
    and its exit status (its own error is above it, on stderr), not a traceback."""
    done = subprocess.run(cmd, **kwargs)
    if done.returncode != 0:
        sys.exit(f"{script}: the sub-run `{shlex.join(cmd)}` stopped with exit status "
                 f"{done.returncode} (its error is above)")
    return done


def cpu_name() -> str:
    """The processor's model name (``/proc/cpuinfo``), else what ``platform`` says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    """The cores this process may use, the processor and Python, as the reports say them."""
    return (f"{len(os.sched_getaffinity(0))} cores, {platform.machine()} ({cpu_name()}), "
            f"Python {platform.python_version()}")
