"""The arena on a Ray cluster: the games of :func:`ono_env.arena.run_arena` as Ray tasks."""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ono_env.agents.base import Agent, agent_label
from ono_env.arena.play import _seating_seed, play_games, seated_entrants, seating_plan
from ono_env.checks import cut, shown
from ono_env.rules import RuleSet

RAY_CONNECT_SECONDS = 5.0
"""How long a Ray address may take to accept a connection before it is refused."""
_RAY_ADDRESS = re.compile(r"(?:ray://)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]{1,253}):([0-9]{1,5})")


def _named(name: str, address: str) -> str:
    """How an error names the address: ``--ray ADDRESS`` for a console script's flag,
    ``ray_address=ADDRESS`` for the library's argument and the config's field, and after
    "which Ray reads as" a space (before: "which Ray reads as=...")."""
    return (f"{name} {address}" if name.startswith("-") or name.endswith(" as")
            else f"{name}={address}")


def check_ray_address(address: Any, reach: bool = False, name: str = "ray_address") -> str:
    """``address`` if it is a Ray address of an allowed form (``local``, ``auto``,
    ``host:port`` or ``ray://host:port``), else one ``ValueError`` naming it and the forms.
    With ``reach``, a ``host:port`` must also accept a TCP connection and then a gRPC
    handshake, each within :data:`RAY_CONNECT_SECONDS` (Ray itself would wait for minutes, or
    for ever). ``name``:
    what the errors call the address (a console script's ``--ray``)."""
    allowed = "local (a new local Ray), auto, host:port or ray://host:port"
    given = _named(name, f"{shown(address, 80)}")
    if not isinstance(address, str) or not address:
        raise ValueError(f"{given}; allowed: {allowed}")
    if address == "local":
        return address
    if address == "auto":
        env = os.environ.get("RAY_ADDRESS", "")
        if env not in ("", "auto", "local") and not _RAY_ADDRESS.fullmatch(env):
            # before: Ray's own "Invalid address format", or gRPC's resolver errors, naming
            # neither the variable nor the forms
            raise ValueError(f"{_named(name, address)} reads RAY_ADDRESS={shown(env, 80)}, "
                             f"which is no Ray address; allowed: host:port or ray://host:port "
                             f"there, or no RAY_ADDRESS")
        if reach:   # the address Ray reads auto as, checked as one given (before: a dead
            # cluster's left-over address was waited on for ever; a ray:// RAY_ADDRESS, which
            # Ray's reading refuses, went unchecked for 30 s of Ray's own retries)
            given_env = env not in ("", "auto", "local")
            resolved = env if given_env else _ray_reading(address)
            if resolved is not None:
                check_ray_address(resolved, True, f"{_named(name, address)}, which Ray reads as")
        return address
    m = _RAY_ADDRESS.fullmatch(address)
    if m is not None and not 0 < int(m.group(2)) <= 65535:   # the form is right: say what is
        # wrong (before: the forms again, and a word on a bare --ray)
        raise ValueError(f"{given}: port {int(m.group(2))} is out of range; allowed: a port "
                         f"from 1 to 65535")
    # a console script's bare --ray takes the next word (an agent's name) as its address
    bare = "a bare --ray took it as its address: write --ray local, or put --ray after the agents"
    if name == "--ray" and _is_search_agent(address.partition(":")[0]):
        # pimc:8 has a host:port's form (before: it was dialled, "Name or service not known"),
        # pimc:20ms none (before: the forms alone); a head of that name: ray:// or its address
        raise ValueError(f"{given} is a search agent, not a host: {bare} (a Ray head named so: "
                         f"ray://host:port, or its IP address)")
    if m is None:
        raise ValueError(f"{given}; allowed: {allowed}"
                         + (f"; if it is an agent's name, {bare}"
                            if name == "--ray" and not any(c in address for c in ":/") else ""))
    if reach:
        import socket

        host = m.group(1).strip("[]")
        try:
            socket.create_connection((host, int(m.group(2))), timeout=RAY_CONNECT_SECONDS).close()
        except OSError as exc:
            why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
            raise ValueError(f"{_named(name, address)}: cannot connect within "
                             f"{RAY_CONNECT_SECONDS:g} s ({why}); is a Ray cluster running there?") from None
        if not _speaks_grpc(f"{m.group(1)}:{m.group(2)}"):
            raise ValueError(f"{_named(name, address)}: a server answers there but not as a Ray "
                             f"cluster does (no gRPC handshake within {RAY_CONNECT_SECONDS:g} s); "
                             f"give the address of a Ray head (host:port of its GCS, or "
                             f"ray://host:port of its client server)")
        resolved = None if m.group(0).startswith("ray://") else _ray_reading(address)
        if resolved is not None and resolved != f"{m.group(1)}:{m.group(2)}":
            # Ray reads this machine's own name (localhost, 127.0.0.1, ::1) as its address on
            # the network: a server there on loopback alone was waited on for minutes
            check_ray_address(resolved, True, f"{_named(name, address)}, which Ray reads as")
    return address


def _is_search_agent(host: str) -> bool:
    """True where ``host`` is a search agent's name (``pimc``, ``ismcts``, ...)."""
    from ono_env.agents.search import SEARCH_AGENTS

    return host.lower() in SEARCH_AGENTS


def _ray_reading(address: str) -> str | None:
    """The ``host:port`` that Ray connects to for ``address``: for ``auto``, ``RAY_ADDRESS``
    or else the address the last ``ray start`` on this machine left in Ray's temporary
    folder; for a ``host:port``, this machine's address on the network where the host is
    this machine's own loopback name. None where Ray finds none (``ray.init`` then says so
    at once) or cannot be asked: the reading is Ray's own,
    ``ray._private.services.canonicalize_bootstrap_address``, as no public function gives
    it; where a Ray version lacks it, the address is left to ``ray.init``."""
    try:
        from ray._private.services import canonicalize_bootstrap_address
        resolved = canonicalize_bootstrap_address(address)
    except Exception:  # noqa: BLE001 - none found (ConnectionError), or another Ray: no check
        return None
    return resolved if isinstance(resolved, str) and _RAY_ADDRESS.fullmatch(resolved) else None


def _speaks_grpc(target: str) -> bool:
    """Whether ``target`` (host:port) completes a gRPC (HTTP/2) handshake within
    :data:`RAY_CONNECT_SECONDS`. Both a Ray head's GCS and its client server (``ray://``)
    speak gRPC; a port that accepts TCP but speaks something else made ``ray.init`` retry for
    about 12 minutes (before this check). True where ``grpcio`` (in the ``ray`` extra) is
    missing, or where ``RAY_USE_TLS`` asks Ray for TLS (a plain handshake would fail where Ray's
    succeeds): the TCP check above is then all there is. The channel goes through an
    ``http_proxy`` of the environment only where ``RAY_grpc_enable_http_proxy`` asks Ray's
    own channels to (Ray's default is straight to the address: a proxy would otherwise
    refuse a head that is there)."""
    try:
        import grpc
    except ImportError:
        return True
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        return True
    proxy = os.environ.get("RAY_grpc_enable_http_proxy", "0").lower() in ("1", "true")  # noqa: SIM112 (Ray's name)
    channel = grpc.insecure_channel(target, options=[("grpc.enable_http_proxy", int(proxy))])
    try:
        grpc.channel_ready_future(channel).result(timeout=RAY_CONNECT_SECONDS)
        return True
    except grpc.FutureTimeoutError:
        return False
    finally:
        channel.close()


def connect_ray(address: str, name: str = "ray_address", **kwargs: Any) -> None:
    """``ray.init(address=address, **kwargs)``; a cluster that cannot be found or joined there
    (``auto`` with none running, a dead one, or one that asks for a token this process does
    not send) is one ``ValueError`` naming ``name``, not Ray's own advice, which names Ray's
    flags."""
    try:
        _init_keeping_signal_handlers(address=address, **kwargs)
    except ConnectionError:
        env = os.environ.get("RAY_ADDRESS", "")
        if address == "auto" and env not in ("", "auto", "local"):
            where = f"{_named(name, address)} (RAY_ADDRESS={shown(env, 80)})"
        elif address == "auto" and _ray_reading(address) is None:
            raise ValueError(f"{_named(name, address)}: no running Ray cluster was found there; start "
                             f"one (ray start --head) or give its address (host:port)") from None
        else:   # a head answered where auto or the address led (before: for auto, "no
            where = _named(name, address)   # running Ray cluster", where one was found)
        # Ray's own error reads the same whether nothing runs there or the cluster refused
        # the token (token authentication: on by default in clusters of Ray 2.60)
        raise ValueError(f"{where}: no Ray cluster there accepted the "
                         f"connection; none runs there, or it asks for a token: set "
                         f"RAY_AUTH_MODE=token, with the cluster's token in ~/.ray/auth_token "
                         f"or RAY_AUTH_TOKEN") from None


def start_local_ray(**kwargs: Any) -> None:
    """``ray.init`` of a new local Ray (no dashboard): ``address="local"``, so that a
    ``RAY_ADDRESS`` in the environment (which Ray's job submission sets) is not read instead
    (before: ``--ray`` with no address tried to reach it, and waited for ever on a dead one)."""
    _init_keeping_signal_handlers(address="local", include_dashboard=False, **kwargs)


def _init_keeping_signal_handlers(**kwargs: Any) -> None:
    """``ray.init(**kwargs)`` with this process's handlers of SIGTERM, SIGINT and SIGHUP put
    back after it (those Python can read back: one set from C, which ``signal.getsignal``
    answers None for, is left as Ray sets it): ``ray.init`` sets its own SIGTERM handler
    (``sys.exit``), and its core worker a C++ one that prints a stack dump, which passed over the console scripts' own
    (say "stopped by SIGTERM", keep what the docs say is kept, end by the signal) and stayed
    after ``ray.shutdown()`` in a library caller's process (before: SIGTERM under ``--ray``
    ended with exit status 1, 15 or a SIGABRT, and Ray's dump instead of the message).
    Handlers are set only from the main thread, so another thread's call keeps Ray's."""
    import signal
    import threading

    import ray

    saved = {}
    if threading.current_thread() is threading.main_thread():
        for name in ("SIGTERM", "SIGINT", "SIGHUP"):
            sig = getattr(signal, name, None)
            if sig is not None and signal.getsignal(sig) is not None:
                saved[sig] = signal.getsignal(sig)
    try:
        ray.init(**kwargs)
    except SystemExit as exc:
        # Ray's SIGTERM handler, set first thing in ray.init, took a SIGTERM that came while
        # Ray started (before: exit status 15 with no word, and an --out folder left): the
        # process's own handler is given it instead, Ray shut down first
        if exc.code != signal.SIGTERM or signal.SIGTERM not in saved:
            raise
        with contextlib.suppress(Exception):
            ray.shutdown()
        signal.signal(signal.SIGTERM, saved[signal.SIGTERM])
        signal.raise_signal(signal.SIGTERM)
        raise   # a handler that let it pass (SIG_IGN): Ray did not start all the same
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def held_ray(address: str) -> Iterator[None]:
    """Ray for the block: connected to ``address`` (``"local"``: a new local Ray) after
    :func:`check_ray_address`'s reach check, and shut down at the end, unless Ray is already
    initialised in this process, which is then used and left as it was."""
    try:
        import ray
    except ImportError:
        raise ValueError("ray_address needs Ray, which is not installed: "
                         "pip install 'ono-env[ray]'") from None
    started = not ray.is_initialized()
    if started:
        start_ray(address)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def check_ray_flag(address: str) -> None:
    """A console script's ``--ray ADDRESS``, checked before any game is played: an allowed
    form, Ray installed, a ``host:port`` that answers (:func:`check_ray_address`), and a
    cluster there (connected to now, for the games), each refusal naming ``--ray``."""
    check_ray_address(address, name="--ray")
    try:   # Ray missing is said before an address is reached (before: after, as if no cluster)
        import ray
    except ImportError:
        raise ValueError("--ray needs Ray, which is not installed: pip install 'ono-env[ray]'") from None
    if not ray.is_initialized():   # play_on_ray keeps this one Ray for the whole run
        # (before: a local Ray was started and shut down for every run_arena call, which
        # ono-bench makes once a pairing: about 5 s each)
        start_ray(address, "--ray")
    else:
        check_ray_address(address, reach=True, name="--ray")


def start_ray(address: str, name: str = "ray_address", **kwargs: Any) -> None:
    """Ray for this process at ``address``, checked first (:func:`check_ray_address` with its
    reach check, errors naming ``name``): a new local Ray for ``"local"``
    (:func:`start_local_ray`), else a connection (:func:`connect_ray`); Ray's logs kept from
    the driver's output and at warning level unless ``kwargs`` say otherwise."""
    check_ray_address(address, reach=True, name=name)
    kwargs = {"log_to_driver": False, "logging_level": "warning", **kwargs}
    if address == "local":
        start_local_ray(**kwargs)
    else:
        connect_ray(address, name, **kwargs)


WAIT_SECONDS = 0.5
"""How long :func:`play_on_ray` waits on Ray for a finished task before it lets this
process's signal handlers run (and waits again)."""

TASKS_PER_CPU = 4
"""Ray tasks per CPU of the cluster the games are cut into (when there are enough batches)."""


def play_on_ray(address: str, rules: RuleSet, agents: Sequence[Agent],
                tables: Sequence[tuple[int, ...]], orders: Sequence[tuple[int, ...]], per: int,
                seed: int, batch_size: int, max_decisions: int | None, progress: Any,
                nodes: dict[str, int], mirrored: bool = False,
                arranged: Sequence[np.ndarray | None] = ()) -> list[tuple[np.ndarray, ...]]:
    """Play the games of :func:`~ono_env.arena.run_arena` as Ray tasks: every seating's ``per`` games are cut
    on batch boundaries into tasks (about ``TASKS_PER_CPU`` per CPU of the cluster, spread
    over its nodes), each playing its batches on the batched core with the seeds the
    one-process run gives them (``_seating_seed``; ``mirrored`` as in run_arena), so the
    records are the same (``arranged``: each table's order of its members per deal, or none,
    :func:`~ono_env.arena.play.seating_plan`). Returns, per seating in the one-process order, ``(entrants, wins,
    scores, length, truncated)``; ``progress`` (optional) is updated as tasks finish;
    ``nodes`` counts the games each Ray node played. Connects to
    ``address`` (``"local"``: a new local Ray) unless Ray is initialised, and then leaves it
    as it was."""
    seatings_ = seating_plan(tables, orders, arranged)
    pending: dict[Any, tuple[int, int]] = {}
    parts: dict[tuple[int, int], Any] = {}
    with held_ray(address):
        import ray
        try:
            _play_tasks(ray, rules, agents, seatings_, per, seed, batch_size, max_decisions,
                        progress, nodes, mirrored, pending, parts)
        finally:   # what has not finished need not run on (before: a Ctrl-C in a library
            for ref in pending:   # call left the cluster's CPUs busy with its tasks)
                try:
                    ray.cancel(ref)
                except Exception:  # noqa: BLE001 - a lost cluster: the error that ended it stands
                    continue
            _drop_results(ray, list(pending))
    results: list[tuple[np.ndarray, ...]] = []
    for j, (_t, _o, seated, seat_members) in enumerate(seatings_):
        chunks = [parts[key] for key in sorted(k for k in parts if k[0] == j)]
        w, s, length, trunc = (np.concatenate([c[i] for c in chunks]) for i in range(4))
        results.append((seated_entrants(seated, seat_members, len(w)), w, s, length, trunc))
    return results


TASK_RETRIES = 1
"""How many times a game task whose worker process died is run again (:func:`_play_tasks`)."""


def _play_tasks(ray: Any, rules: RuleSet, agents: Sequence[Agent],
                seatings_: Sequence[tuple[int, int, list[int], np.ndarray | None]], per: int, seed: int,
                batch_size: int, max_decisions: int | None, progress: Any,
                nodes: dict[str, int], mirrored: bool, pending: dict[Any, tuple[int, int]],
                parts: dict[tuple[int, int], Any]) -> None:
    """:func:`play_on_ray`'s tasks, one seating's batches each, submitted and gathered into
    ``parts``; ``pending`` holds those not yet gathered (the caller cancels them where this
    ends early)."""
    _check_picklable(agents)   # before: Ray's report of twenty lines, then a TypeError
    agents_ref: ray.ObjectRef[Sequence[Agent]] = ray.put(list(agents))
    # one retry: a node lost meanwhile is survived (a task's games are the same wherever it
    # runs), and an agent that kills its worker process ends the run at its second death
    # (before: Ray's default of three retries, 46 s and some twenty of Ray's lines for one
    # agent that crashed its process)
    task = ray.remote(_play_task).options(num_cpus=1, scheduling_strategy="SPREAD",
                                          max_retries=TASK_RETRIES)
    n_batches = math.ceil(per / batch_size)
    total = int(ray.cluster_resources().get("CPU", 0))
    if total == 0:   # a head started with no CPUs (before: 0% for ever, without a word)
        print("note: the Ray cluster has no CPUs now: the games start when a node with CPUs "
              "joins (Ctrl-C stops)", file=sys.stderr)
    cpus = max(1, total)
    step = max(1, math.ceil(n_batches * len(seatings_) / (TASKS_PER_CPU * cpus)))
    for j, (t, o, seated, seat_members) in enumerate(seatings_):
        seating_seed = _seating_seed(seed, t, o, mirrored)
        members_ref = None if seat_members is None else ray.put(seat_members)
        for c, b0 in enumerate(range(0, n_batches, step)):
            ref = task.remote(rules, agents_ref, seated, per, seating_seed, batch_size,
                              max_decisions, range(b0, min(b0 + step, n_batches)), members_ref)
            pending[ref] = (j, c)
    while pending:
        try:   # a short timeout: Ray's wait runs no signal handler until it returns (before:
            # a SIGTERM or Ctrl-C waited for the next task to finish, minutes in a long run)
            done, _ = ray.wait(list(pending), num_returns=1, timeout=WAIT_SECONDS)
        except SystemError as exc:
            # a signal handler's exception raised inside Ray's compiled wait (a console
            # script's "stopped by SIGTERM") comes out as a SystemError caused by it (before:
            # "ono-arena: error: SystemError: <cyfunction CoreWorker.wait ...>")
            if isinstance(exc.__cause__, BaseException) and not isinstance(exc.__cause__, Exception):
                raise exc.__cause__ from None
            raise
        for ref in done:
            key = pending.pop(ref)
            try:
                out = ray.get(ref)
            except ray.exceptions.RayError as exc:
                raise ValueError(_task_failure(exc)) from None
            parts[key] = out
            nodes[out[4]] = nodes.get(out[4], 0) + len(out[2])
            if progress is not None:
                progress.update(len(out[2]))


def _check_picklable(agents: Sequence[Agent]) -> None:
    """One ``ValueError`` naming the first agent that cannot travel to Ray's workers (they
    receive the agents pickled, as Ray pickles them)."""
    from ray import cloudpickle

    for agent in agents:
        try:
            cloudpickle.dumps(agent)
        except Exception as exc:  # noqa: BLE001 - whatever pickling raises, named
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(f"agent {agent_label(agent)!r} cannot be sent to Ray's workers "
                             f"(pickling it: {type(exc).__name__}: {cut(why, 200)}); allowed: "
                             f"an agent that pickles (a name, a model file, a module:Class "
                             f"that every node imports), or play it without Ray") from None


def _drop_results(ray: Any, refs: list[Any]) -> None:
    """Read the outcome of tasks that were cancelled, or failed beside the one that ended
    the run, so that Ray does not print each one later as an "Unhandled error" with its
    traceback (before: after the run's one error line). Waits at most a second or two."""
    try:
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=2)
    except Exception:  # noqa: BLE001 - a lost cluster: nothing to read
        return
    for ref in ready:
        try:
            ray.get(ref)
        except Exception:  # noqa: BLE001 - the outcome is read, not used
            pass


def _task_failure(exc: BaseException) -> str:
    """One line for a Ray task that failed: the worker's error, as ``Type: message`` with its
    notes (the agent that raised it, :mod:`ono_env.agents.driver`), from the error Ray
    carried back (``cause``), on one line; else from Ray's own text, which holds the worker's
    whole traceback over many lines, the last line naming the error where no note follows it
    (before: that last line alone, the note "raised by the agent ..." without the error). An
    agent class whose module the worker cannot import comes out as ``ModuleNotFoundError: No
    module named ...``."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException) and not type(cause).__module__.startswith("ray."):
        # (a Ray error of its own, one that could not bring the worker's back, is read from
        # its text below); the standard library's text copes with a message that cannot be
        # made and notes that are not a list
        import traceback

        text = "".join(traceback.format_exception_only(type(cause), cause))
        last = cut(" ".join(text.split()), 400)
    else:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        last = lines[-1] if lines else type(exc).__name__
    line = f"a Ray task failed on a worker: {last}"
    if type(exc).__name__ == "WorkerCrashedError":   # no Python error to name
        line += (f"; its worker process died {TASK_RETRIES + 1} times running the same games "
                 f"(an agent that crashed it, or ran it out of memory?)")
    if "ModuleNotFoundError" in last:
        line += ("; an agent given as module:Class must import on every Ray node (the same "
                 "module on the Python path of each)")
    return line


def _play_task(rules: RuleSet, agents: Sequence[Agent], seated: Sequence[int], per: int,
               seed: int, batch_size: int, max_decisions: int | None,
               batches: range, seat_members: np.ndarray | None = None,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """One Ray task of :func:`play_on_ray`: ``batches`` of one seating, and the node id."""
    import ray

    w, s, length, trunc = play_games(rules, [agents[e] for e in seated], per, seed,
                                     batch_size=batch_size, max_decisions=max_decisions,
                                     batches=batches, seat_members=seat_members)
    return w, s, length, trunc, ray.get_runtime_context().get_node_id()
