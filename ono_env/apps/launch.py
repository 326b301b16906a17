"""The console scripts' entry points: each loads its script's module, then runs its ``main``.

A script's modules take a second or so to load (numpy and the numba kernels, torch for
training), and a Ctrl-C in that second used to print a traceback from the middle of an
import, before the script's own handling (:func:`ono_env.apps.console.run`) was in place.
This module loads nothing but the standard library, so an entry point here can catch that
Ctrl-C and end as the scripts do: one line, ``<script>: interrupted``, status 130.
``ono-train``, ``ono-export`` and ``ono-exploit`` start from :mod:`ono_env.train.launch`,
which uses :func:`start`.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys


def stderr_to_null_if_closed() -> None:
    """Where the standard error's descriptor (2) cannot be written (``2>&-``: closed, or
    taken by a file opened for reading before Python started), put the null device there:
    the script's messages go nowhere and its work goes on (before: its first message failed,
    status 1, a run folder left behind). Writable, it is left as it is."""
    import fcntl

    try:
        writable = fcntl.fcntl(2, fcntl.F_GETFL) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    except OSError:
        writable = False
    if not writable:
        null = os.open(os.devnull, os.O_WRONLY)
        if null != 2:
            os.dup2(null, 2)
            os.close(null)


def start(module: str, script: str) -> int:
    """Import ``module`` and return its ``main()``: the exit status of the console script
    ``script``. A Ctrl-C before ``main`` has its own handling in place (while the module
    loads) prints ``<script>: interrupted`` and returns 130, and a second Ctrl-C while the
    interpreter exits is ignored, as :func:`ono_env.apps.console.run` does; so does a failed
    import that a Ctrl-C caused (numba turns one that lands in its C extensions' loading into
    an ``ImportError``). Any other failure to load the module is one line,
    ``<script>: error: cannot load ...``, status 2 (before: a traceback). A SIGTERM or SIGHUP
    then, where its handler is the default, prints ``<script>: stopped by SIGTERM`` and ends
    the process by that signal, as the scripts' own handling does (before: silently). numba's
    coloured error messages are turned off (``NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING``,
    where not set), which wrote an escape code to the terminal at exit. A standard error
    closed by the caller (``2>&-``) is the null device (:func:`stderr_to_null_if_closed`)."""
    stderr_to_null_if_closed()
    # numba colours its error messages through colorama, whose exit handler then wrote a
    # stray "\x1b[0m" to the terminal after the script's last line; the scripts print their
    # own one-line errors
    os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")
    interrupted: list[int] = []

    def note(signum: int, frame: object) -> None:   # Python's own: a KeyboardInterrupt
        interrupted.append(signum)
        raise KeyboardInterrupt

    def stop(signum: int, frame: object) -> None:   # SIGTERM, SIGHUP: said, then their default
        print(f"{script}: stopped by {signal.Signals(signum).name}", file=sys.stderr)
        sys.stderr.flush()
        signal.signal(signum, signal.SIG_DFL)   # the process ends by the signal, as the
        os.kill(os.getpid(), signum)             # scripts' own handling ends it (before: silently)

    default = signal.getsignal(signal.SIGINT) is signal.default_int_handler
    before = signal.signal(signal.SIGINT, note) if default else None
    stops = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP)
             if signal.getsignal(s) == signal.SIG_DFL}
    try:
        try:
            main = importlib.import_module(module).main
        finally:
            if before is not None:
                signal.signal(signal.SIGINT, before)
            for s, handler in stops.items():
                signal.signal(s, handler)
    except KeyboardInterrupt:
        return _interrupted(script)
    except Exception as exc:  # noqa: BLE001 - a script's modules that do not load: one line
        if interrupted:
            return _interrupted(script)
        print(f"{script}: error: cannot load {module}: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return 2
    try:
        return int(main() or 0)
    except KeyboardInterrupt:   # between main's start and its own handling
        return _interrupted(script)


def _interrupted(script: str) -> int:
    print(f"{script}: interrupted", file=sys.stderr)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return 130


def demo() -> int:
    """``ono-demo``: :func:`ono_env.apps.demo.main`."""
    return start("ono_env.apps.demo", "ono-demo")


def arena() -> int:
    """``ono-arena``: :func:`ono_env.apps.arena_cli.main`."""
    return start("ono_env.apps.arena_cli", "ono-arena")


def play() -> int:
    """``ono-play``: :func:`ono_env.apps.play.main`."""
    return start("ono_env.apps.play", "ono-play")


def web() -> int:
    """``ono-web``: :func:`ono_env.apps.web.server.main`."""
    return start("ono_env.apps.web.server", "ono-web")


def bench() -> int:
    """``ono-bench``: :func:`ono_env.apps.bench_cli.main`."""
    return start("ono_env.apps.bench_cli", "ono-bench")
