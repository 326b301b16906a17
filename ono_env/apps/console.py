"""What every console script shares: one-line errors and bounded numbers.

Every ``ono-<tool>`` turns a bad input (an argument, a rules file, a model file, a position)
into one line ``ono-<tool>: error: ...`` on stderr and exit status 2, never a traceback and
never a silent success: :func:`run` parses the arguments with :class:`ArgumentParser` and
runs the tool, turning every exception into that line.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any, NoReturn

# re-exported for the apps' argument parsers (cli.MAX_SEED, cli.MAX_BATCH)
from ono_env.checks import (
    MAX_SEED,  # noqa: F401
    notes_text,
    shown,
)
from ono_env.game import MAX_GAMES as MAX_BATCH  # noqa: F401 - --batch: VecGame's bound

EXTRAS = {"torch": "train", "stable_baselines3": "train", "sb3_contrib": "train",
          "tensorboard": "train", "matplotlib": "arena",
          "fastapi": "web", "starlette": "web", "uvicorn": "web", "ray": "ray", "grpc": "ray"}
"""The extra that installs each optional library (pyproject.toml)."""


class UsageError(ValueError):
    """A bad command-line argument."""


class Stopped(BaseException):
    """A SIGTERM or SIGHUP to a console script (``kill``, ``timeout``, a job scheduler, a
    closed terminal), raised in its main thread as a Ctrl-C raises ``KeyboardInterrupt``,
    so that the run ends as after one: its worker processes stopped, its empty output
    folders removed, what it kept said. Before, the signal's default ended the process at
    once, and ``ono-bench --workers``' worker processes ran on. ``signum``: the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


STOPPING_SIGNALS = ("SIGTERM", "SIGHUP")
"""The signals that stop a console script as :class:`Stopped` (where they are not ignored:
``nohup`` ignores SIGHUP)."""


@contextmanager
def stopped_by_signals() -> Iterator[None]:
    """:data:`STOPPING_SIGNALS` raise :class:`Stopped` in the main thread while the block
    runs (elsewhere, and for a signal whose handler is not the default, nothing changes).
    A process forked from this one takes the signal's default (the project's pools spawn
    theirs, which run no console script)."""
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pid = os.getpid()

    def stop(signum: int, frame: Any) -> None:
        if os.getpid() != pid:   # a forked child: the signal's own default
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        raise Stopped(signum)
    before = {}
    for name in STOPPING_SIGNALS:
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
            before[sig] = signal.signal(sig, stop)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


_SINGLE = (argparse._StoreAction, argparse._StoreConstAction)
"""The actions whose option keeps one value (store; store_const, and so store_true and
store_false): given twice, argparse would keep the last silently."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with an argument error raised as :class:`UsageError` (which :func:`run`
    prints as one line, with a pointer to ``--help``) instead of usage text and an exit;
    an option is named in full (no prefix of it, argparse's ``allow_abbrev``), and an option
    that takes one value or is a flag is given at most once (argparse keeps the last of
    several silently; ``append`` options take several)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        required = "the following arguments are required: "
        if message.startswith(required):
            # intermixed parsing lists an optional positional (nargs '*' or '?') as required
            # too when a required one is missing: name only those a command needs
            optional = {a.dest for a in self._actions if a.nargs in ("*", "?")}
            names = [n for n in message[len(required):].split(", ") if n not in optional]
            message = required + ", ".join(names) if names else message
        unknown = "unrecognized arguments: "
        if message.startswith(unknown):   # an option mistyped: the nearest of this command's
            # named (before: none; abbreviations are refused)
            from ono_env.checks import nearest

            options = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
            for word in message[len(unknown):].split():
                near = nearest(word.split("=")[0], options)
                if word.startswith("--") and near:
                    message += f"; did you mean {near}?"
                    break
        raise UsageError(f"{message} (see {self.prog} --help)")

    def parse_args(self, args: Sequence[str] | None = None,   # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """Options may come before, between or after the positional words (``ono-arena
        random --mirrored greedy``, ``ono-train cfg --print-config total_steps=5``): argparse's
        own intermixed parsing. Plain parsing gives a ``nargs='*'`` or ``'+'`` positional only
        the words before the first option and refuses the rest as unrecognized. With ``--``
        among the words (how a word starting with ``-`` is passed), plain parsing: intermixed
        parsing loses the words after a ``--`` that comes before every positional word, at
        least in Python 3.11 (``ono-export -- -a.zip -b.safetensors``)."""
        words = sys.argv[1:] if args is None else list(args)
        refuse_repeats(self, words)
        for word in words[:words.index("--")] if "--" in words else words:
            # an option whose value may be left out (``--plot``), given an empty one: before,
            # ``--plot=`` was read as ``--plot`` alone
            action = self._option_string_actions.get(word[:-1]) if word.endswith("=") else None
            if action is not None and action.nargs == "?":
                self.error(f"argument {word[:-1]}: an empty value; allowed: a value, or "
                           f"{word[:-1]} alone")
        if "--" in words:
            return super().parse_args(words, namespace)
        return self.parse_intermixed_args(words, namespace)


def refuse_repeats(parser: argparse.ArgumentParser, words: Sequence[str]) -> None:
    """``parser.error`` for an option that takes one value or is a flag given twice (before a
    ``--``): ``--seed 1 --seed 2`` would otherwise run with seed 2 and say nothing. The
    options that collect (``append``, ``count``, ``extend``) may repeat, and with
    ``--help`` among the words the help is printed instead."""
    options = words[:words.index("--")] if "--" in words else words
    if "-h" in options or "--help" in options:   # after "--", a word is positional
        return
    seen: set[int] = set()
    for word in options:
        if not word.startswith("-"):
            continue
        name = word.split("=", 1)[0] if word.startswith("--") else word[:2]
        action = parser._option_string_actions.get(name)
        if action is None or not isinstance(action, _SINGLE):
            continue
        if id(action) in seen:
            parser.error(f"argument {'/'.join(action.option_strings)}: given more than "
                         f"once; allowed: once")
        seen.add(id(action))


WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*", re.ASCII)


def bounded_int(low: int, high: int, what: str = "a whole number") -> Callable[[str], int]:
    """An argparse ``type`` accepting whole numbers from ``low`` to ``high``; the message of
    a refusal names the range."""

    def parse(text: str) -> int:
        # ASCII digits, an optional sign, and "_" only between digits (1_000): int() alone
        # would also take " 5", "1__0", "5_" and other scripts' digits, silently
        allowed = f"allowed: {low:,} to {high:,}"
        if not WHOLE_NUMBER.fullmatch(text):
            raise argparse.ArgumentTypeError(f"{shown(text, 40)} is not {what}; {allowed}")
        digits = text.lstrip("+-").replace("_", "").lstrip("0")
        if len(digits) > max(len(str(max(abs(low), abs(high)))), 30):
            # past both bounds whatever its digits: told by their count (int() refuses more
            # than 4,300 of them with its own error, and thousands of them make no message);
            # one of a few digits is shown as it is (before: 100000 was "a number of 6 digits")
            raise argparse.ArgumentTypeError(
                f"{'a negative' if text.startswith('-') else 'a'} number of {len(digits):,} "
                f"digits is out of range; {allowed}")
        value = int(text, 10)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value:,} is out of range; {allowed}")
        return value

    parse.__name__ = what   # argparse names the type in its own messages
    return parse


ENVIRONMENT = {"ONO_ENV_PREBUILT": ("0", "1")}
"""The environment variables ono_env reads, with their allowed values (see ``_compile``)."""


def check_environment() -> None:
    """One ``ValueError`` for an environment variable of :data:`ENVIRONMENT` set to a value
    it does not take: every console script checks them at its start, before any work (a bad
    one would otherwise fail only when the compiled kernels first load)."""
    import os

    for name, allowed in ENVIRONMENT.items():
        value = os.environ.get(name)
        if value is not None and value not in allowed:
            raise ValueError(f"environment variable {name}={shown(value, 40)}; allowed: "
                             f"{' or '.join(allowed)}, or unset")


def ignore_sigint() -> None:
    """Ignore Ctrl-C from here on (in the main thread; elsewhere nothing changes)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def end_by_signal(prog: str, exc: Stopped, argv: Sequence[str] | None) -> int:
    """The end of a run :class:`Stopped` by a signal, its cleanup done: one line; then, run as
    the console script (``argv`` None), the process ends by the signal itself, as it would
    have without the handler (a parent sees it killed by SIGTERM: a service manager counts
    that a clean stop); called from Python, status 128 + the signal's number."""
    import os
    import signal

    print(f"{prog}: stopped by {signal.Signals(exc.signum).name}", file=sys.stderr)
    if argv is None:
        sys.stdout.flush()
        sys.stderr.flush()
        signal.signal(exc.signum, signal.SIG_DFL)   # a second signal ends it at once
        _shut_down_ray()
        os.kill(os.getpid(), exc.signum)
    return 128 + exc.signum


def _shut_down_ray() -> None:
    """``ray.shutdown()`` where this process holds Ray: an exit runs it from ``atexit``, but a
    process that ends by its signal runs no ``atexit`` (before: the dashboard and runtime-env
    agents of a local Ray that ``--ray`` started ran on about 60 s after the script had
    ended). A shutdown that fails changes nothing: the process ends by its signal as before."""
    ray = sys.modules.get("ray")
    if ray is None:
        return
    try:
        if ray.is_initialized():
            ray.shutdown()
    except Exception:  # noqa: BLE001 - ending anyway; Ray's own failure is not the stop's news
        pass


class StdoutError(OSError):
    """A write to the standard output failed (a full disk, a device error)."""


class _NamedStdout:
    """The standard output, whose failed writes say that it was the standard output.

    Before, ``> /dev/full`` ended ``ono-arena`` with "error: [Errno 28] No space left on
    device", as a failed write to any file the tool writes would. A broken pipe passes as it
    is: :func:`run` ends quietly where the reader has gone. Every other attribute is the
    stream's own."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def _call(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self._stream, name)(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise StdoutError(f"cannot write the standard output: {_message(exc)}") from exc

    def write(self, text: str) -> Any:   # the stream's own answer (a count, or None)
        return self._call("write", text)

    def writelines(self, lines: Any) -> None:
        self._call("writelines", lines)

    def flush(self) -> None:
        self._call("flush")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def named_stdout() -> Iterator[None]:
    """Within it, an ``OSError`` from writing the standard output names it
    (:class:`_NamedStdout`); a terminal is left as it is (``input()`` reads its lines with
    line editing only from the interpreter's own streams)."""
    stream = sys.stdout
    try:
        tty = stream.isatty()   # (a closed stdout, None, was refused before)
    except (AttributeError, OSError, ValueError):
        tty = False
    if tty:
        yield
        return
    sys.stdout = _NamedStdout(stream)
    try:
        yield
        # what is still buffered, written here, where a failure is the one error line
        # (before: at the interpreter's exit, where a buffered stdout - any but Python's
        # unbuffered mode - failed as "Exception ignored ..." with status 120)
        sys.stdout.flush()
    finally:
        if isinstance(sys.stdout, _NamedStdout):
            sys.stdout = stream


class _SwallowedStops:
    """A ``sys.unraisablehook`` that keeps a stop (Ctrl-C's ``KeyboardInterrupt``, a
    :class:`Stopped`) raised where Python can only print it and go on: in a ctypes callback
    or a ``__del__``. numba compiles the kernels through such callbacks, so a Ctrl-C while a
    kernel compiles (about 20 s on first use where no prebuilt kernel fits) printed
    "Exception ignored on calling ctypes callback function" with a traceback, and the
    compile then failed with numba's own error ("no compiled object yet"), which
    :func:`run` printed as an error with status 2. Kept here, :func:`run` ends the run as
    that stop instead, with its one line. Anything else goes to the hook it replaced."""

    def __init__(self, before: Callable[[Any], Any]) -> None:
        self.before = before
        self.stop: BaseException | None = None

    def __call__(self, unraisable: Any) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, (KeyboardInterrupt, Stopped)):
            self.stop = self.stop or exc
            return
        self.before(unraisable)


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
        body: Callable[[argparse.Namespace], int | None], signals: bool = True) -> int:
    """Parse ``argv`` with ``parser`` and run ``body(args)``: the exit status of a console
    script. Any exception becomes one line ``<prog>: error: ...`` on stderr and status 2
    (Ctrl-C: status 130; SIGTERM or SIGHUP: :class:`Stopped`, :func:`end_by_signal`), and
    the output folders the run had made (:func:`ono_env.checks.check_output_dir`) are removed
    again where they are still empty: a refused run leaves nothing behind. ``signals``:
    False for a tool that serves its own (``ono-web``: uvicorn stops on SIGTERM; an
    exception raised in its event loop would stop one request, not the server). A closed
    standard output is refused before ``body`` runs, except for ``ono-web`` (``signals``
    False), whose log goes to stderr: Python makes it ``None`` and ``print`` then writes
    nothing (before: a results table lost, and status 0)."""
    from ono_env.checks import MADE_DIRS

    prog = parser.prog
    MADE_DIRS.clear()
    hook = _SwallowedStops(sys.unraisablehook)
    sys.unraisablehook = hook   # a console script's for good: its exit may meet one too
    try:
        status = _run(parser, argv, body, signals, prog, hook)
    finally:
        if argv is not None:   # called from Python (tests): the caller's hook again
            sys.unraisablehook = hook.before
    if argv is None:   # the console script is about to end
        say_threads_left(prog)
    return status


def say_threads_left(prog: str, grace: float = 2.0) -> list[str]:
    """The names of the threads that would keep the program from ending (alive, not daemon
    threads, not the main one) once ``grace`` seconds have let them end, said in one line:
    Python's exit waits for them, so a console script whose agent left one running printed
    its results and then hung without a word. The workers of a ``concurrent.futures``
    executor are none: Python's exit shuts those down itself (their module's registries,
    ``_threads_queues`` and ``_threads_wakeups``, name them; read where the module is
    loaded, as nothing public lists them)."""
    import threading
    import time

    ended_at_exit: set[Any] = set()
    for module, registry in (("concurrent.futures.thread", "_threads_queues"),
                             ("concurrent.futures.process", "_threads_wakeups")):
        ended_at_exit.update(getattr(sys.modules.get(module), registry, None) or ())

    def alive() -> list[threading.Thread]:
        return [t for t in threading.enumerate()
                if t is not threading.main_thread() and not t.daemon and t.is_alive()
                and t not in ended_at_exit]

    end = time.monotonic() + grace
    for t in alive():
        t.join(max(0.0, end - time.monotonic()))
    names = [t.name for t in alive()]
    if names:
        print(f"{prog}: done, but Python waits for {len(names)} thread{'s' * (len(names) > 1)} "
              f"still running before it ends ({', '.join(names[:5])}"
              f"{', ...' if len(names) > 5 else ''}): an agent's threads must end, or be "
              f"daemon threads", file=sys.stderr)
    return names


def _escape_what_the_streams_cannot_encode() -> None:
    """The process's standard output and error write a character their encoding lacks
    escaped (``\\xe8``), as Python's own standard error does, rather than fail (before, under
    ``PYTHONIOENCODING=ascii`` or a C locale, a finished run ended "error: 'ascii' codec
    can't encode character" with status 2, after its files were written, at the first path
    with an accent it printed). A stream that is not the process's own (a test's capture)
    is left as it is."""
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        try:
            if isinstance(stream, io.TextIOWrapper) and stream.fileno() == fd \
                    and stream.errors == "strict":
                stream.reconfigure(errors="backslashreplace")
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            pass


def _run(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
         body: Callable[[argparse.Namespace], int | None], signals: bool, prog: str,
         hook: _SwallowedStops) -> int:
    """:func:`run`'s work, with ``hook`` keeping the stops Python could not raise."""
    from ono_env.checks import MADE_DIRS, remove_made_dirs

    try:   # 2>&-: the null device, as the launchers make it (a test's capture: left alone)
        if sys.stderr is not None and sys.stderr.fileno() == 2:
            from ono_env.apps.launch import stderr_to_null_if_closed
            stderr_to_null_if_closed()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        pass
    _escape_what_the_streams_cannot_encode()
    if sys.stderr is None:   # Python found none: its messages go nowhere, the run goes on
        import os

        sys.stderr = open(os.devnull, "w", encoding="utf-8")   # noqa: SIM115 - for the process
    try:
        with stopped_by_signals() if signals else nullcontext():
            check_environment()
            args = _parse(parser, argv, prog)
            if signals and sys.stdout is None:
                raise ValueError(f"standard output is closed ({prog} prints its results "
                                 f"there); allowed: a terminal, a file or a pipe (>/dev/null "
                                 f"to discard them)")
            with named_stdout() if signals else nullcontext():
                status = int(body(args) or 0)
        MADE_DIRS.clear()
        return status
    except Stopped as exc:
        remove_made_dirs()
        return end_by_signal(prog, exc, argv)
    except KeyboardInterrupt:
        remove_made_dirs()
        print(f"{prog}: interrupted", file=sys.stderr)
        if argv is None:   # the console script ends: a second Ctrl-C in the interpreter's
            # exit would print a traceback from an atexit callback (torch registers some)
            ignore_sigint()
        return 130
    except BrokenPipeError as exc:
        remove_made_dirs()
        if not _stdout_gone():   # another pipe broke (a file the tool writes): say so
            print(f"{prog}: error: {_message(exc)}", file=sys.stderr)
            return 2
        # whoever read the output stopped (``| head``): end quietly, as Unix tools do, with
        # the status of a SIGPIPE
        _stdout_to_null()
        return 141
    except ImportError as exc:
        remove_made_dirs()
        missing = (getattr(exc, "name", None) or "").split(".")[0]
        if missing not in EXTRAS:   # a module no extra installs (a user's agent's import, say):
            # its own message and where it came from (before: an extra named for it)
            print(f"{prog}: error: {_message(exc)}", file=sys.stderr)
            return 2
        print(f"{prog}: error: this needs {missing}, which is not installed: "
              f"pip install 'ono-env[{EXTRAS[missing]}]'", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - a console script prints one line, never a traceback
        remove_made_dirs()
        # a stop raised inside compiled code that returned (Ray's wait: a SystemError caused by
        # it) ends the run as that stop (before: "error: SystemError: <cyfunction ...>")
        stop = exc.__cause__ if isinstance(exc, SystemError) else None
        if isinstance(hook.stop, Stopped):   # the failure followed a stop Python swallowed
            return end_by_signal(prog, hook.stop, argv)
        if isinstance(stop, Stopped):
            return end_by_signal(prog, stop, argv)
        if isinstance(hook.stop, KeyboardInterrupt) or isinstance(stop, KeyboardInterrupt):
            print(f"{prog}: interrupted", file=sys.stderr)
            if argv is None:
                ignore_sigint()
            return 130
        print(f"{prog}: error: {_message(exc)}", file=sys.stderr)
        if isinstance(exc, StdoutError) and argv is None:   # the console script ends: what
            # its buffer holds is not tried again (before: "Exception ignored", status 120)
            _stdout_to_null()
        return 2


def _stdout_to_null() -> None:
    """Point the standard output's file descriptor at the null device, so that the
    interpreter's own flush at exit of what a failed write left in its buffer does not fail
    again (Python's documented recipe, "Note on SIGPIPE")."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        pass   # no descriptor of its own (a test's capture): nothing is flushed to it


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
           prog: str) -> argparse.Namespace:
    """``parser.parse_args(argv)``, what it prints to standard output (``--help``,
    ``--version``) written here: argparse drops a failed write without a word, so that
    ``--help > /dev/full`` lost the help and ended with status 0. Now such a failure is one
    line and status 2 (:class:`StdoutError`); a reader that stopped (``| head``) ends
    quietly, as any output does."""
    real, printed = sys.stdout, io.StringIO()
    sys.stdout = printed
    try:
        return parser.parse_args(argv)
    finally:   # (an exit, --help's, or a parse that printed and went on)
        sys.stdout = real
        text = printed.getvalue()
        if text and real is not None:
            try:
                real.write(text)
                real.flush()
            except BrokenPipeError:
                raise
            except OSError as exc:
                raise StdoutError(f"cannot write the standard output: {_message(exc)}") from exc


def _stdout_gone() -> bool:
    """Whether stdout is a pipe whose reader has gone (``poll`` reports an error on its
    writing end); False where stdout is no pipe, has no file descriptor (a test's capture,
    a StringIO) or ``poll`` is missing."""
    import os
    import select
    import stat

    try:
        fd = sys.stdout.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _message(exc: BaseException) -> str:
    """The one line of an error: its text (its type's name too, but for a ValueError, an
    OSError or a KeyError), and its notes (``add_note``: the agent that raised it) after."""
    notes = notes_text(exc)
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0]) + notes
    if isinstance(exc, (ValueError, OSError)):
        return (str(exc) or type(exc).__name__) + notes
    return f"{type(exc).__name__}: {exc}{notes}"


def literal_text() -> Any:
    """A context in which matplotlib draws every text as written: labels come from users
    and model files, and a ``$`` in one was read as mathtext (``$\\bad$`` failed the plot
    after the other outputs were written)."""
    from matplotlib import rc_context

    return rc_context({"text.parse_math": False})
