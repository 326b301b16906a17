"""The web table's server: a FastAPI app over :mod:`ono_env.apps.web.table`, and ``ono-web``.

    ono-web                                   # http://127.0.0.1:8000/
    ono-web --port 8080 --model my.safetensors --replays runs/arena-replays

The server holds every game; the browser sends only decisions (an action id or name, with
the number of the view it was made on) and gets the table as its seat sees it. Every page
asset ships in the package (``ono_env/apps/web/static``); nothing is fetched from the internet.

Endpoints (JSON; every refusal is ``{"error": "..."}`` with a 4xx status, or 503 where the
server is full or stopping and 500 where an agent fails; docs/play.md)::

    GET  /api/options                 presets, their rule options, agents, player counts
    POST /api/agents                  {"rules", "options", "num_players"} -> {"agents": the
                                      agents that can sit at that table}
    POST /api/games                   a new game: {"rules", "options", "num_players", "seat",
                                      "opponents", "seed", "thinking"} -> the table (the
                                      player count in "options" or "num_players", not both;
                                      a key but "opponents" left out or null: its default)
    GET  /api/games/{id}              the table, from the human's seat
    POST /api/games/{id}/action       {"action": id or name, "move": view number} -> the table
    POST /api/games/{id}/thinking     {"show": bool}: show what the agents reported
    POST /api/games/{id}/replay       keep the finished game as a replay -> {"id", ...}
    GET  /api/replays                 the replays the server holds
    POST /api/replays                 a replay file's content (JSON) -> {"id", ...}
    GET  /api/replays/{id}            the replay, every position (all hands visible)
    GET  /api/replays/{id}/file       the replay file, to download

Model files are agents only when given on the server's command line (``--model``); the
browser names them by label. Replay folders likewise (``--replays``): the browser picks a
replay by id and never names a path. A replay upload over :data:`MAX_BODY` bytes, and any
other request over :data:`SMALL_BODY`, are refused.
"""

import argparse
import asyncio
import builtins
import contextlib
import hashlib
import itertools
import json
import math
import re
import secrets
import sys
import threading
import zlib
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ono_env.agents.base import unmarked
from ono_env.agents.learned import check_playable, model_label, read_metadata, shipped_models
from ono_env.agents.registry import agent_names, is_model_path
from ono_env.agents.search import SEARCH_AGENTS
from ono_env.apps import console as cli
from ono_env.apps.web.table import (
    DEALT_GONE,
    HUNG_UP,
    MAX_TABLES,
    Refused,
    STOPPING,
    Tables,
    WEB_MAX_BUDGET,
    WEB_MAX_DECISIONS,
    WEB_MAX_MS,
    agents_allowed,
    default_agent_factory,
    fitting_agents,
    json_bool,
    make_rules,
)
from ono_env.checks import check_int, check_text, cut, is_real, printable, shown
from ono_env.positions import game_winners, load_json, won_on_lowest_total
from ono_env.replay import MAX_LABEL, Replay, clean_label, replay_positions
from ono_env.rules import CHOICES, PRESETS, RuleSet

STATIC = Path(__file__).parent / "static"
MAX_BODY = 4 << 20
"""The largest body of a replay upload: 4 MiB (every other request: :data:`SMALL_BODY`)."""
MAX_BODIES = 16 * MAX_BODY
"""The most bytes of large request bodies (over :data:`SMALL_BODY`, told or sent in chunks) the
server holds at once, counted as they arrive, over every request whose body is being read or
served: a request whose bytes would pass it is answered 503, so however many uploads clients
start and never finish, they hold at most this much memory. A request is charged only for
what it has sent, so connections that send headers and nothing more hold nothing."""
SMALL_BODY = 64 << 10
"""The largest body of every request but a replay upload (a game's moves, new games, options:
a few hundred bytes), so that no client keeps the event loop parsing megabytes of JSON; such
bodies are never refused by :data:`MAX_BODIES`, so a client that fills it cannot stop the
others' games; :data:`BODY_SECONDS` still bounds how long each is held."""
BODY_SECONDS = 30.0
"""The longest a request may take to send its whole body (4 MiB at about 1.1 Mbit/s); a
client that stalls is answered 408 and what it sent is let go."""
HEADER_SECONDS = 20.0
"""The longest a connection may take to send a request's headers, from when it opens or its
last answer was sent: past it, with no request under way, it is answered 408 and closed
(:func:`server_config`)."""
MAX_CONNECTIONS = 1000
"""The most connections the server holds open to serve, and requests it works on, at once
(uvicorn's ``limit_concurrency``): a request that arrives past it is answered by uvicorn's own
plain-text 503 and its connection closed, its body unread (:func:`server_config`). Each
connection costs some 45 KiB and a small body up to :data:`SMALL_BODY`, which
:data:`MAX_BODIES` does not count, so this bounds what connections that send small bodies
slowly can hold: before, 3,000 of them took the server from 127 MB to 437 MB."""
MAX_REPLAYS = 200
"""The most replays the server keeps of each kind (:data:`REPLAY_KINDS`): the ``--replays``
folders' files, the saved games and the uploads (of the last two, the oldest of the client
address that holds the most of the kind goes first)."""
REPLAY_KINDS = ("folder", "saved", "upload")
"""The kinds of replay the server keeps apart, each within its own room: uploads push out
only uploads, so that no client's uploads drop a game another client saved."""
MAX_REPLAY_BYTES = 256 << 20
"""The most bytes of replay JSON the server keeps of each kind (with :data:`MAX_REPLAYS`)."""
MAX_REPLAY_DECISIONS = WEB_MAX_DECISIONS
"""The longest replay the viewer shows (every position is sent to the browser), and the
longest upload or ``--replays`` file the server takes: 20,000 decisions, the most a game at
the table lasts, so that every game saved there can be shown."""
MAX_VIEW_BYTES = 64 << 20
"""The most bytes of the viewer's answers (:func:`replay_view` as JSON) the server keeps."""
WEB_WORKERS = 4
"""The most requests whose agents work at once (dealing, deciding); the others wait their
turn without holding a thread (every game's requests in order)."""
UPLOADS_PER_CLIENT = 2
"""The most replay uploads one client (by its address) may have at the server at once: one
checked and one waiting its turn. Another is answered 429 before its body is read, so that
one client's uploads hold at most 8 MiB of :data:`MAX_BODIES` (before, sixteen uploads sent
at once filled it, and the others' uploads were answered 503 until they were checked)."""
READS_PER_CLIENT = 2
"""The most replay views and replay files one client (by its address) may be fetching at
once, from the request until its answer is sent: one being built or sent and one waiting.
Another is answered 429. Before, a client that opened many views of a long replay and read
none held a copy of each answer (35 MB for 20,000 decisions at 10 players) in the server's
send buffers, and its views, built one after another in the replays' worker, held the
other clients' views and uploads behind them."""
SEND_CHUNK = 64 << 10
"""The bytes of a replay view or file handed to the connection at a time: the next waits until
the client has taken the last, so that a client that reads slowly fills no send buffer with a
copy of the answer. The answer itself is held until it is sent or the client is gone (there is
no send timeout): a view is the kept one, shared by every client; a file is unpacked for its
request, so one client holds at most :data:`READS_PER_CLIENT` copies of replay files."""
REPLAY_WORKERS = 1
"""The most requests that read, check or replay a replay at once (an upload's check and a
view replay every position: seconds for a long one), in threads of their own: however many
replays clients upload or open, the agents' workers stay the games'."""
SEARCH_WORKERS = WEB_WORKERS - 1
"""The most of those requests that games with a search agent make at once: a search may think
for seconds a decision, and the last worker stays for the games whose agents answer in
milliseconds (baselines, learned policies), so that however many
searching games one client starts, a new game of the others is dealt at once."""
STOP_SECONDS = 5
"""The longest ``ono-web``, told to stop (Ctrl-C, SIGTERM), waits for the requests under way
before it cancels them (uvicorn's ``timeout_graceful_shutdown``; before, none: a client that
did not read its answer held the server). Work in the agents' or the replays' threads cannot
be cancelled: the agents start no other decision once it is told (:attr:`Tables.stopping`),
so a game ends its stop with the decision under way, and a replay's check runs to its end."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
SEARCH_OFFERED = ("pimc", "pimc:128", "ismcts", "oracle-hands", "oracle")
"""Search agents the setup screen lists (any ``name:N`` or ``name:<T>ms`` is accepted); the
``oracle`` ones cheat (they see hidden cards) and are labelled so by the arena and the docs."""


class ClientTurns:
    """Per client address, on the event loop (no thread touches it): how many requests of one
    kind the client has at the server (:meth:`admit`, :meth:`leave`; ``most`` at once, None
    for no limit), and a queue that puts its requests in turn (:meth:`turn`), so that another
    client waits behind at most one of them. An address's entries are dropped once it has
    none under way. (``asyncio.Lock`` queues its waiters in order; the per-address queue is
    this project's own: anyio and Starlette limit all clients together, not each.)"""

    def __init__(self, most: int | None = None) -> None:
        self.most = most
        self._counts: dict[str | None, int] = {}
        self._locks: dict[str | None, tuple[asyncio.Lock, list[int]]] = {}

    def held(self, host: str | None) -> int:
        """The requests of ``host`` counted now."""
        return self._counts.get(host, 0)

    def admit(self, host: str | None) -> bool:
        """Count a request of ``host``; False (nothing counted) where it has ``most``."""
        held = self._counts.get(host, 0)
        if self.most is not None and held >= self.most:
            return False
        self._counts[host] = held + 1
        return True

    def leave(self, host: str | None) -> None:
        """A request of ``host`` that :meth:`admit` counted has ended."""
        left = self._counts[host] - 1
        if left:
            self._counts[host] = left
        else:
            del self._counts[host]

    @contextlib.asynccontextmanager
    async def turn(self, host: str | None) -> AsyncIterator[None]:
        """Held while this request of ``host`` works, after its earlier ones."""
        lock, users = self._locks.setdefault(host, (asyncio.Lock(), [0]))
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if not users[0]:
                del self._locks[host]


def _declares_cheating(name: str) -> bool:
    """Does the registered agent ``name`` read hidden cards (``cheating``)? Asked of the agent
    built for the first table it is made for (the default rules, then each preset at 2
    players); one made for none is asked at its table, whose label marks it as it deals."""
    from ono_env.agents import make_agent
    from ono_env.agents.base import is_cheating

    for rules in (None, *(RuleSet.preset(p, num_players=2) for p in PRESETS)):
        try:
            return is_cheating(make_agent(name, rules))
        except Exception:  # noqa: BLE001 - a registered factory refuses these rules (its
            continue   # sys.exit too, which make_agent makes a ValueError): the next
    return False


def searches(labels: Sequence[Any]) -> bool:
    """Does a game of these agent labels seat a search agent (``pimc``, ``pimc:128``,
    ``oracle (cheating)``, ...)? A model file's label (``pimc:8.safetensors``) is none."""
    return any(isinstance(x, str)
               and unmarked(x).partition(":")[0] in SEARCH_AGENTS
               and not is_model_path(unmarked(x))
               for x in labels)


class _Kept(NamedTuple):
    """A replay as :class:`Replays` keeps it."""

    packed: builtins.bytes   # its JSON text, UTF-8, compressed by zlib
    size: int                # the JSON text's bytes (what the limits count)
    kind: str                # one of REPLAY_KINDS
    digest: str              # the SHA-256 of its JSON text (an upload sent again is the same)
    entry: dict[str, Any]    # its line in the listing (:func:`summary`)
    client: str | None = None   # the address that uploaded or saved it


class Replays:
    """The replays of one server, by id, of three kinds (:data:`REPLAY_KINDS`): files from
    ``--replays`` folders (kept while the server runs), saved games and uploads (the oldest
    of the client that holds the most of its kind goes first: :meth:`add`); at most
    ``limit`` replays and ``max_bytes`` of JSON text of each kind. Each is kept as its JSON
    text, compressed (``zlib``), beside its listing entry, and read again when the viewer's
    answer is built: a replay read into Python objects takes three to five times its JSON
    text, so a count of JSON bytes said little of the memory kept (the standard library's
    ``zlib`` at its fastest level compresses 4 MB in milliseconds). The viewer's answer for a
    replay (its JSON) is kept too, within ``max_view_bytes``, the least recently shown going
    first."""

    def __init__(self, limit: int = MAX_REPLAYS, max_bytes: int = MAX_REPLAY_BYTES,
                 max_view_bytes: int = MAX_VIEW_BYTES) -> None:
        self.limit = limit
        self.max_bytes = max_bytes
        self.max_view_bytes = max_view_bytes
        self._items: OrderedDict[str, _Kept] = OrderedDict()
        self._bytes = 0
        self._views: OrderedDict[str, builtins.bytes] = OrderedDict()
        self._view_bytes = 0
        self._lock = threading.Lock()

    def add(self, replay: Replay, title: str, kind: str = "saved",
            text: bytes | None = None, client: str | None = None) -> str:
        """Keep ``replay`` under ``title`` (checked text) as a replay of ``kind`` (``text``: its
        JSON as UTF-8, where the caller has encoded it already), from ``client`` (its
        address). Each kind is kept within ``limit`` replays and ``max_bytes``: a folder's
        file past that is refused, and a saved game or an upload pushes out of its own kind
        the oldest of the client that holds the most of it, the new one counted: the most
        replays where the count is over, the most bytes where the bytes are (before: the
        oldest of any client, so that one client's 205 uploads pushed out everyone's). An
        upload of the very text of an upload kept is that replay (its id, now the newest),
        not another copy. Its summary is built before anything is stored or dropped, so a
        replay that could not be listed is never kept, and a refused one changes nothing."""
        if kind not in REPLAY_KINDS:
            raise ValueError(f"replay kind {kind!r}; allowed: {', '.join(REPLAY_KINDS)}")
        check_text("replay title", title, MAX_LABEL)
        text = replay.to_json().encode("utf-8") if text is None else text
        size = len(text)
        if size > self.max_bytes:
            raise Refused(f"the replay takes {size:,} bytes; the server keeps at most "
                          f"{self.max_bytes:,}", 413)
        digest = hashlib.sha256(text).hexdigest() if kind == "upload" else ""   # uploads only
        if kind == "upload":
            again = self._upload_of(digest)
            if again is not None:
                return again
        rid = secrets.token_hex(8)
        entry = summary(rid, title, replay)
        json.dumps(entry)   # can be answered: else refused here
        kept = _Kept(zlib.compress(text, 1), size, kind, digest, entry, client)
        with self._lock:
            same = [(r, item) for r, item in self._items.items() if item.kind == kind]
            count, total = len(same) + 1, sum(item.size for _, item in same) + size
            if kind == "folder" and (count > self.limit or total > self.max_bytes):
                raise Refused(f"the replay folders' files fill the room kept for them "
                              f"({self.limit} replays, {self.max_bytes:,} bytes)", 409)
            # what each client holds of the kind, the new replay counted: replays, and bytes
            held = Counter(item.client for _, item in same)
            held_bytes: Counter[str | None] = Counter()
            for _, item in same:
                held_bytes[item.client] += item.size
            held[client] += 1
            held_bytes[client] += size
            drop: list[str] = []
            while same and (count > self.limit or total > self.max_bytes):
                # over the count: the client that holds the most replays gives way; over the
                # bytes, the one that holds the most bytes (its oldest, either way)
                most_of = held if count > self.limit else held_bytes
                most = max(most_of[item.client] for _, item in same)
                at = next(k for k, (_, item) in enumerate(same) if most_of[item.client] == most)
                old, item = same.pop(at)   # that client's oldest
                drop.append(old)
                held[item.client] -= 1
                held_bytes[item.client] -= item.size
                count, total = count - 1, total - item.size
            for old in drop:
                self._bytes -= self._items.pop(old).size
                self._drop_view(old)
            self._items[rid] = kept
            self._bytes += size
        return rid

    def kept_upload(self, text: bytes) -> str | None:
        """The id of the upload kept of this very JSON ``text`` (now the newest), or None: an
        upload checks it before replaying every position, so that sending one long replay
        again and again costs the replays' worker no replay (before: seconds each time)."""
        return self._upload_of(hashlib.sha256(text).hexdigest())

    def _upload_of(self, digest: str) -> str | None:
        """The id of the upload kept whose JSON has this SHA-256 (now the newest), or None."""
        with self._lock:
            again = next((r for r, item in self._items.items()
                          if item.kind == "upload" and item.digest == digest), None)
            if again is not None:
                self._items.move_to_end(again)
            return again

    def has(self, rid: str) -> bool:
        """Is replay ``rid`` still kept?"""
        with self._lock:
            return rid in self._items

    def count(self, kind: str) -> int:
        """How many replays of ``kind`` (:data:`REPLAY_KINDS`) are kept."""
        with self._lock:
            return sum(1 for item in self._items.values() if item.kind == kind)

    @property
    def bytes(self) -> int:
        """The JSON bytes of the replays kept."""
        return self._bytes

    def _kept(self, rid: Any) -> _Kept:
        with self._lock:
            item = self._items.get(rid) if isinstance(rid, str) else None
        if item is None:
            raise Refused(f"no replay {shown(rid, 40)}", 404)
        return item

    def check(self, rid: Any) -> None:
        """``Refused`` (404) unless replay ``rid`` is kept."""
        self._kept(rid)

    def summary(self, rid: Any) -> dict[str, Any]:
        """Replay ``rid``'s line in the listing (:func:`summary`), as it was kept."""
        return self._kept(rid).entry

    def text(self, rid: Any) -> str:
        """Replay ``rid``'s JSON text, as it was kept."""
        return zlib.decompress(self._kept(rid).packed).decode("utf-8")

    def get(self, rid: Any) -> Replay:
        """Replay ``rid``, read again from its JSON text (a tenth of a second for 4 MB)."""
        return Replay.from_json(self.text(rid), f"replay {rid}")

    def cached(self, rid: str) -> builtins.bytes | None:
        """The viewer's answer for replay ``rid`` where it was built before, else None."""
        with self._lock:
            data = self._views.get(rid)
            if data is not None:
                self._views.move_to_end(rid)
            return data

    def view(self, rid: str) -> builtins.bytes:   # the property below shadows bytes
        """The viewer's answer for replay ``rid`` (:func:`replay_view` as JSON), built once and
        kept: a long replay takes seconds to replay and encode."""
        data = self.cached(rid)
        if data is not None:
            return data
        replay = self.get(rid)   # 404 when it is not kept
        data = view_json(replay_view(replay))
        with self._lock:
            if rid in self._items and rid not in self._views and len(data) <= self.max_view_bytes:
                self._views[rid] = data
                self._view_bytes += len(data)
                while self._view_bytes > self.max_view_bytes:
                    self._view_bytes -= len(self._views.popitem(last=False)[1])
        return data

    def _drop_view(self, rid: str) -> None:
        data = self._views.pop(rid, None)
        if data is not None:
            self._view_bytes -= len(data)

    def listing(self) -> list[dict[str, Any]]:
        with self._lock:
            items = list(self._items.items())
        return [item.entry for _rid, item in reversed(items)]


def view_json(view: dict[str, Any]) -> builtins.bytes:
    """``view`` (a dict, :func:`replay_view`) as compact JSON, UTF-8: the text of one
    ``json.dumps``, made a list item at a time, so that the thread that encodes it lets the
    event loop run between items. (One ``json.dumps`` of the view of a 20,000-decision replay
    at 10 players held Python's lock for 0.6 to 0.8 s, in which no client was answered;
    Python's own encoder, which yields, took several times as long.)"""
    def dumps(x: Any) -> str:
        return json.dumps(x, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return ("{" + ",".join(
        dumps(k) + ":" + ("[" + ",".join(dumps(x) for x in v) + "]" if isinstance(v, list)
                          else dumps(v))
        for k, v in view.items()) + "}").encode("utf-8")


def check_length(replay: Replay) -> None:
    """``Refused`` (413) for an upload or a ``--replays`` file longer than the viewer shows."""
    if len(replay.actions) > MAX_REPLAY_DECISIONS:
        raise Refused(f"the replay has {len(replay.actions)} decisions; the server takes at "
                      f"most {MAX_REPLAY_DECISIONS}", 413)


def summary(rid: str, title: str, r: Replay) -> dict[str, Any]:
    winners = game_winners(r.result, r.rules) if r.result else []
    # rules_title: how the list names them ("custom rules based on classic" for a game whose
    # options changed a preset; before, the list said "classic" where the view said so)
    return {"id": rid, "title": title, "rules": r.rules.name, "rules_title": r.rules.title,
            "players": r.players,
            "decisions": len(r.actions), "winners": winners, "source": r.source,
            "saved_at": r.saved_at}


def replay_view(r: Replay) -> dict[str, Any]:
    """Everything the viewer shows: the positions before and after each decision (every
    hand: a replay shows all), the decisions, what each changed at the table
    (:func:`~ono_env.render.table_events`) and whether it ended a round, and what the agents
    reported."""
    if len(r.actions) > MAX_REPLAY_DECISIONS:
        raise Refused(f"the replay has {len(r.actions)} decisions; the viewer shows at most "
                      f"{MAX_REPLAY_DECISIONS}", 413)
    try:
        positions = replay_positions(r)
    except ValueError as exc:
        raise Refused(str(exc)) from None
    steps = []
    for p in positions:
        steps.append({k: p[k] for k in ("hands", "color", "current_player", "direction",
                                         "phase", "pending_draw", "drawn_card", "called",
                                         "exposed", "scores", "round", "dealer", "winner",
                                         "terminated", "truncated")}
                     | {"top": p["discard"][-1], "stock": len(p["stock"]),
                        "discard": len(p["discard"])})
    from ono_env import cards as C
    from ono_env.render import deal_events, round_end_events, table_events

    decisions = [{"seat": positions[k]["current_player"], "text":
                  f"P{positions[k]['current_player']}: {C.action_name(a)}",
                  "events": table_events(positions[k], positions[k + 1],
                                         positions[k]["current_player"], a)
                  + round_end_events(positions[k], positions[k + 1]),
                  "round_end": positions[k + 1]["round"] != positions[k]["round"]
                  or bool(positions[k + 1]["terminated"]),
                  "thinking": r.thinking[k]} for k, a in enumerate(r.actions)]
    return {"rules": r.rules.to_dict(), "rules_title": r.rules.title, "players": r.players,
            "steps": steps,
            "decisions": decisions, "deal": deal_events(positions[0]), "result": r.result,
            "winners": game_winners(r.result, r.rules) if r.result else [],
            "lowest_total": won_on_lowest_total(r.rules.scoring, r.rules.target_score),
            "source": r.source, "saved_at": r.saved_at}


def rule_options() -> dict[str, Any]:
    """Each preset's rule options and its summary, the allowed values of the text options, and
    what each option means (:data:`ono_env.rule_help.OPTION_HELP`, the source of docs/rules.md's
    table too)."""
    from ono_env.rule_help import OPTION_HELP, PRESET_SUMMARY, plain

    return {"presets": {name: RuleSet.preset(name).to_dict() for name in PRESETS},
            "choices": {k: list(v) for k, v in CHOICES.items()},
            "summaries": dict(PRESET_SUMMARY),
            "help": {k: {"allowed": plain(a), "meaning": plain(m)}
                     for k, (a, m) in OPTION_HELP.items()}}


_HOST_HEADER = re.compile(r"(\[[0-9a-f:.]+\]|[^:\[\]@/]*)(?::[0-9]{1,5})?")
"""A Host header: a name (or a bracketed IPv6 address) and an optional port of digits."""


def create_app(models: Sequence[str] = (), replay_dirs: Sequence[str] = (),
               max_tables: int | None = None, allowed_hosts: Sequence[str] | None = None,
               log: Any = None, max_replays: int = MAX_REPLAYS, *,
               max_bodies: int = MAX_BODIES, body_seconds: float = BODY_SECONDS,
               max_tables_per_client: int | None = None) -> Any:
    """The FastAPI app. ``models``: model files the browser may pick as opponents (by their
    file name's stem); ``replay_dirs``: folders whose ``*.json`` replays are listed (a file
    that is not a replay is skipped with a note to ``log``, default stderr);
    ``allowed_hosts``: the Host headers served (``ono-web`` passes the loopback names and
    its ``--host``, so that another site's page cannot reach the server by DNS rebinding;
    None: any); ``max_bodies`` and ``body_seconds``: see :data:`MAX_BODIES` and
    :data:`BODY_SECONDS`; ``max_tables`` and ``max_tables_per_client``: the games kept, in
    all and of one client address (:class:`~ono_env.apps.web.table.Tables`)."""
    check_int("max_bodies", max_bodies, SMALL_BODY)
    if not is_real(body_seconds) or not 0 < body_seconds < math.inf:
        raise ValueError(f"body_seconds={body_seconds!r}; allowed: a number of seconds above 0")
    import anyio
    import anyio.to_thread
    from fastapi import Depends, FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import FileResponse, JSONResponse, Response
    from fastapi.staticfiles import StaticFiles
    from starlette.exceptions import HTTPException as StarletteHTTPException
    from starlette.requests import ClientDisconnect

    allowed: dict[str, str] = {name: name for name in agent_names()}
    # the rules each learned agent was trained for: the browser is offered only those that fit
    metas: dict[str, Any] = {name: read_metadata(path) for name, path in shipped_models().items()}
    offered: set[Path] = set()
    given: dict[str, Any] = {}   # label -> the --model that took it
    for m in models:
        if Path(m).resolve() in offered:   # before: refused as a label taken by an agent
            print(f"ono-web: note: --model {printable(str(m))} names a file given before; it "
                  f"is offered once", file=log or sys.stderr)
            continue
        offered.add(Path(m).resolve())
        meta = read_metadata(m)
        # one this ono_env can play under some rules (before: offered, then refused at every
        # table, "trained on observation layout v3")
        check_playable(meta, f"model {str(m)!r}")
        label = clean_label(model_label(m, meta))   # as replays write it (start and end kept)
        if label == "you":   # the human's seat: before, two players named you
            raise ValueError(f"model {m!r}: its label 'you' names the human's seat at the web "
                             f"table (rename the file, or train with another name)")
        # (a label that model_label gave a file named as a search agent, "pimc:8.safetensors",
        # names a file, not a search: offered)
        if label in metas and label in allowed and label not in given:
            # model_label gives a shipped policy's name only to its own file or a copy: that
            # agent, offered once (before: refused as a label taken by an agent of that name)
            print(f"ono-web: note: --model {printable(str(m))} is the shipped policy {label} "
                  f"(its file, or a copy); it is offered once, as {label}", file=log or sys.stderr)
            continue
        if label in given:   # before: "taken by an agent of that name"
            raise ValueError(f"model {m!r}: its label {label!r} is taken by the model "
                             f"{str(given[label])!r}, given before (a model's label is its "
                             f"file's name: rename one of the files)")
        if label in allowed or (label.partition(":")[0] in SEARCH_AGENTS
                                and not is_model_path(label)):
            raise ValueError(f"model {m!r}: its label {label!r} is taken by an agent of that "
                             f"name (rename the file, or train with another name)")
        given[label] = m
        # the file's whole path: a name with no folder and no model suffix ("best") would be
        # read by make_agent as an agent's name (before: offered, then refused at every table)
        allowed[label] = str(Path(m).resolve())
        metas[label] = meta

    def agents_for(rules: RuleSet) -> list[str]:
        """The agents that can sit at a table of ``rules`` (the search agents play any)."""
        return fitting_agents(rules, allowed, metas) + list(SEARCH_OFFERED)

    # the offered agents that read hidden cards, which the setup list marks (before: the
    # oracles alone, a registered agent that declares cheating offered unmarked)
    cheating = [a for a in allowed if a not in metas and _declares_cheating(a)]
    cheating += [a for a in SEARCH_OFFERED if a.startswith("oracle")]
    tables = Tables(MAX_TABLES if max_tables is None else check_int("max_tables", max_tables, 1),
                    per_client=None if max_tables_per_client is None else check_int(
                        "max_tables_per_client", max_tables_per_client, 1))
    replays = Replays(max_replays)
    full = False
    listed: set[Path] = set()
    several = len({Path(d).resolve() for d in replay_dirs}) > 1   # one folder given twice: one
    for d in replay_dirs:
        folder = Path(d)
        if not folder.is_dir():
            raise ValueError(f"--replays {str(folder)!r}: not a folder")
        if folder.resolve() in listed:   # before: its files listed once more, taking places
            print(f"ono-web: note: --replays {printable(str(folder))} names a folder given "
                  f"before; its files are listed once", file=log or sys.stderr)
            continue
        listed.add(folder.resolve())
        files = sorted(folder.glob("*.json"))
        if len(files) > replays.limit:
            print(f"ono-web: note: {printable(str(folder))} holds {len(files)} replay files; "
                  f"the server keeps {replays.limit}: the last {replays.limit} by name",
                  file=log or sys.stderr)
            files = files[-replays.limit:]
        for f in files:
            if full or replays.count("folder") >= replays.limit:
                if not full:
                    print(f"ono-web: note: the replay folders fill the {replays.limit} places "
                          f"kept for them; {printable(str(f))} and the files after it are "
                          f"not listed",
                          file=log or sys.stderr)
                full = True
                break
            try:
                replay = Replay.load(f)
                check_length(replay)   # before replaying it
                replay_positions(replay)   # every action legal, the result as recorded
                # titled by its folder's name too where there are several (before: three arena
                # folders listed three "replay-00001.json"); never by the path, which is private
                replays.add(replay, clean_label(f"{folder.name}/{f.name}" if several else f.name),
                            "folder")
            except (ValueError, Refused) as exc:
                # a name is shown printable (before: its escape codes reached the terminal)
                print(f"ono-web: note: {printable(str(f))} skipped: {exc}",
                      file=log or sys.stderr)

    # The agents' work (dealing, deciding) runs in threads, at most WEB_WORKERS at
    # once: a request waiting for a turn, or for its table, waits on the event loop and holds
    # no thread, so however many such requests one client sends, the other routes keep the
    # thread pool they run in (before, requests queued on one busy table's lock held a thread
    # each until the pool ran out, and every client waited).
    workers = anyio.CapacityLimiter(WEB_WORKERS)
    searching = anyio.CapacityLimiter(SEARCH_WORKERS)   # taken on the event loop, before a worker
    replaying = anyio.CapacityLimiter(REPLAY_WORKERS)   # the replays' own threads
    gates: dict[str, asyncio.Lock] = {}   # by table id; dropped after Tables drops the table
    uploads = ClientTurns(UPLOADS_PER_CLIENT)   # admitted by limit_body, before the body
    reads = ClientTurns(READS_PER_CLIENT)   # replay views and files, until sent
    search_turns = ClientTurns()   # a client's search games think one at a time
    stopping = tables.stopping   # set as ono-web stops: see unless_stopping and StopGate

    def unless_stopping(work: Callable[[], Any]) -> Callable[[], Any]:
        """``work``, for a thread: refused (503) where the server began to stop before its
        turn came, so that a request queued meanwhile starts nothing (before, uvicorn waited
        for every queued request's agents to play: four deals queued behind a searching one
        were all played after a SIGTERM)."""
        def guarded() -> Any:
            if stopping.is_set():
                raise Refused(STOPPING, 503)
            return work()
        return guarded

    async def for_client(request: Request, work: Callable[[], Awaitable[Any]],
                         gone: threading.Event | None = None) -> Any:
        """``await work()``, given up where the client of ``request`` hangs up meanwhile:
        refused then (499, which nobody reads), so that work waiting for its turn, its table
        or a worker starts nothing and leaves its place in the queue (before: a client's
        deals queued behind its searching one were dealt, searched and kept as tables after
        it had gone; 20 queued 10-player search deals held a thread for 13 minutes). Work
        already in its thread runs to its end (a thread cannot be stopped): only its answer
        is dropped, and ``gone`` is set as the hang-up is seen, for the work to check (a new
        game's deal keeps no table for a client that has gone). Written here because
        Starlette's ``is_disconnected`` reads without waiting, and so misses a hang-up that
        uvicorn has not read yet. The watch costs about 0.1 ms a request (an anyio task
        group; 15 us as a bare asyncio task, which would need the task's own cancel undone),
        so it is kept to the requests that can wait seconds: games with a search agent, and
        the replays' work; a game of other agents plays its moves in milliseconds."""
        done, result, failed = False, None, None
        async with anyio.create_task_group() as group:
            async def watch() -> None:   # until the client hangs up, or the work is done
                with contextlib.suppress(Exception):   # the watch, never the work, fails
                    while (await request.receive())["type"] != "http.disconnect":
                        pass
                    if gone is not None:
                        gone.set()
                    group.cancel_scope.cancel()
            group.start_soon(watch)
            try:
                result, done = await work(), True
            except Exception as exc:  # noqa: BLE001 - raised below as it is, not in a group
                failed = exc
            group.cancel_scope.cancel()
        if failed is not None:
            raise failed
        if not done:
            raise Refused(HUNG_UP, 499)
        return result

    async def replay_work(turns: ClientTurns, request: Request, work: Callable[[], Any]) -> Any:
        """``work()`` in the replays' thread after the earlier upload (or view, or file) of the
        same client (its address), so that one client's uploads and reads hold the replays'
        one worker, and its queue, for one of each at a time: another client's waits for at
        most those (before: behind all of them, seconds each for a long replay). A file's
        unpacking (milliseconds) waits its turn there too, behind other clients' checks and
        views under way. Given up should the client hang up (:func:`for_client`)."""
        async def in_turn() -> Any:
            async with turns.turn(client_of(request)):
                return await anyio.to_thread.run_sync(unless_stopping(work), limiter=replaying)
        return await for_client(request, in_turn)

    def sent_in_chunks(data: builtins.bytes, host: str | None, **headers: str) -> Response:
        """``data`` (JSON) sent :data:`SEND_CHUNK` bytes at a time, each when the client has
        taken the last, counted in ``reads`` for ``host`` until it is sent or the client
        is gone (the count is admitted by the caller)."""
        class Chunked(Response):
            async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
                try:
                    await send({"type": "http.response.start", "status": self.status_code,
                                "headers": self.raw_headers})
                    view, size = memoryview(self.body), len(self.body)
                    for at in range(0, max(size, 1), SEND_CHUNK):
                        await send({"type": "http.response.body",
                                    "body": bytes(view[at:at + SEND_CHUNK]),
                                    "more_body": at + SEND_CHUNK < size})
                finally:
                    self.body = b""   # the answer is let go now, whatever holds this object
                    reads.leave(host)
        return Chunked(data, media_type="application/json", headers=headers or None)

    def client_of(request: Request) -> str | None:
        return request.client.host if request.client else None

    async def agents_work(work: Callable[[], Any], search: bool, request: Request) -> Any:
        """``work()`` in one of the agents' workers, for ``request``; a game with a search
        agent (``search``) first waits for the client's (its address's) earlier search
        work, then for one of :data:`SEARCH_WORKERS` places, holding no thread: one
        client's searching games think one at a time (a search's worlds bound its time
        only for given rules: at 10 players with 40 of each wild, ``pimc:512`` took 20 s a
        decision), so that another client waits for a place behind at most one of them."""
        if not search:
            return await anyio.to_thread.run_sync(unless_stopping(work), limiter=workers)
        async with search_turns.turn(client_of(request)), searching:
            return await anyio.to_thread.run_sync(unless_stopping(work), limiter=workers)

    async def at_table(table: Any, work: Callable[[], Any],
                       agents: Request | None = None) -> Any:
        """``work()`` holding ``table.lock``, after the table's earlier requests, in a thread:
        one of the agents' workers when ``agents`` (their moves, asked by that request, and,
        at a table with a search agent, given up should its client hang up:
        :func:`for_client`), else the pool of the other routes (a view of the table)."""
        gate = gates.setdefault(table.id, asyncio.Lock())

        def locked() -> Any:
            with table.lock:
                return work()
        async def gated() -> Any:
            async with gate:
                if agents is not None:
                    return await agents_work(locked, searches(table.labels), agents)
                return await anyio.to_thread.run_sync(unless_stopping(locked))
        tables.hold(table.id)   # not dropped for a new game while this request waits or works
        try:
            return await (for_client(agents, gated) if agents is not None
                          and searches(table.labels) else gated())
        finally:
            tables.release(table.id)

    async def known_query(request: Request) -> None:
        """Every endpoint of the API: a query parameter it does not take is refused, naming
        it and those the endpoint takes (before: ignored, and ``/api/replays?limit=5``
        answered every replay). The page and its assets take any (a link may add some)."""
        route = request.scope.get("route")
        if route is None or not route.path.startswith("/api/"):   # (the app's own path)
            return
        takes = [q.alias for q in route.dependant.query_params]
        unknown = [k for k in request.query_params if k not in takes]
        if unknown:
            raise Refused(f"unknown query parameter {shown(unknown[0], 40)}; allowed: "
                          f"{', '.join(takes) or 'none (this endpoint takes no query parameters)'}")

    app = FastAPI(title="ono_env web table", docs_url=None, redoc_url=None, openapi_url=None,
                  dependencies=[Depends(known_query)])
    app.state.tables = tables
    app.state.stopping = stopping   # ono-web sets it on Ctrl-C or SIGTERM
    app.state.replays = replays
    app.state.reads = reads   # the replays each client is fetching (tests read it)
    held = 0   # bytes of the large bodies being read or served (on the event loop: no lock)

    def routed(request: Request) -> bool:
        """Whether a route takes this method at this path: else the router's 404 or 405 is
        the answer, not the body's size (before: a large PUT to /api/replays had a 413). The
        static files' mount matches any method, and takes GET and HEAD."""
        from starlette.routing import Match, Mount

        return any(route.matches(request.scope)[0] == Match.FULL
                   and (not isinstance(route, Mount) or request.method in ("GET", "HEAD"))
                   for route in app.routes)

    @app.middleware("http")
    async def limit_body(request: Request, call_next):
        nonlocal held
        length = request.headers.get("content-length")
        # a replay upload may be large; every other body is a few hundred bytes (before: each
        # took MAX_BODY, and parsing megabytes of JSON on the event loop held every client)
        path = request.url.path   # the app's own: under a mount (root_path) its prefix goes
        root = request.scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        limit = MAX_BODY if (request.method, path.rstrip("/")) \
            == ("POST", "/api/replays") else SMALL_BODY   # '/api/replays/' is redirected there

        def too_large(size: str) -> Response:   # one wording, told or counted (before: two)
            return JSONResponse({"error": f"request body of {size} bytes; allowed: at most "
                                          f"{limit}"}, status_code=413)
        if length is not None and (not (length.isascii() and length.isdigit())   # not '²'
                                   or int(length) > limit) and routed(request):
            return too_large(cut(length, 20))   # the header's text
        if request.method not in ("POST", "PUT", "PATCH") or not routed(request):
            return await call_next(request)
        large = length is not None and int(length) > SMALL_BODY   # told large
        charged = 0
        host = client_of(request)
        upload = limit == MAX_BODY   # counted before its body is read: see UPLOADS_PER_CLIENT
        if upload and not uploads.admit(host):
            return JSONResponse({"error": f"this client has {UPLOADS_PER_CLIENT} replay "
                                          f"uploads at the server already, the most "
                                          f"allowed; send another once one is answered"},
                                status_code=429,
                                headers={"Retry-After": "5", "Connection": "close"})
        try:
            chunks, size = [], 0   # joined once: adding each chunk to the body copied it all
            try:
                with anyio.fail_after(body_seconds):
                    async for chunk in request.stream():
                        chunks.append(chunk)
                        size += len(chunk)
                        if size > limit:
                            return too_large(f"more than {limit}")
                        # a body sent in chunks is charged once it is past SMALL_BODY, all
                        # of it then (before: from its first byte, so that a game's small
                        # request in chunks was answered 503 while uploads filled the budget)
                        if large or size > SMALL_BODY:
                            add = size - charged
                            if held + add > max_bodies:
                                return JSONResponse(
                                    {"error": f"the server holds at most {max_bodies:,} bytes "
                                              f"of uploads at once, and others fill it; try "
                                              f"again shortly"}, status_code=503,
                                    headers={"Retry-After": "5", "Connection": "close"})
                            held += add
                            charged += add
            except ClientDisconnect:   # the client hung up mid-body: nobody to answer
                return Response(status_code=400)
            except TimeoutError:
                return JSONResponse({"error": f"the request body did not arrive whole within "
                                              f"{body_seconds:g} s (the most allowed)"},
                                    status_code=408, headers={"Connection": "close"})
            request._body = b"".join(chunks)   # read once here; the endpoint reads it from memory
            return await call_next(request)
        finally:
            held -= charged
            if upload:
                uploads.leave(host)

    if allowed_hosts is not None:
        hosts = {h.lower() for h in allowed_hosts}

        @app.middleware("http")
        async def check_host(request: Request, call_next):   # added last: runs first
            host = request.headers.get("host", "").lower()
            # host[:port], the port digits alone (before: everything before the last colon
            # was the name, and "localhost:1@evil.example" passed as localhost)
            m = _HOST_HEADER.fullmatch(host)
            if host not in hosts and (m is None or m.group(1) not in hosts):
                return JSONResponse({"error": f"host {shown(host, 80)} is not served here; allowed: "
                                              f"{', '.join(sorted(hosts))}"}, status_code=400)
            return await call_next(request)

    class HttpMiddleware:
        """An ASGI middleware of HTTP requests (:meth:`http`); anything else (lifespan)
        passes through."""

        def __init__(self, app: Any) -> None:
            self.app = app

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await self.app(scope, receive, send)
                return
            await self.http(scope, receive, send)

        async def http(self, scope: Any, receive: Any, send: Any) -> None:
            raise NotImplementedError

    class WholeAnswers(HttpMiddleware):
        """A request's ``Range`` header is dropped, so that every answer is whole (RFC 9110
        lets a server ignore a range), and no answer offers ranges (``Accept-Ranges``): the
        page and its assets are a few KB, and the API answers no part of anything.
        Starlette's file answers took one, and answered a bad or unsatisfiable one in plain
        text (400, 416), where every error this server sends is JSON."""

        async def http(self, scope: Any, receive: Any, send: Any) -> None:
            if any(k == b"range" for k, _ in scope["headers"]):
                scope = dict(scope, headers=[(k, v) for k, v in scope["headers"]
                                             if k != b"range"])

            async def sending(message: Any) -> None:
                if message["type"] == "http.response.start":
                    message = dict(message, headers=[(k, v) for k, v in message["headers"]
                                                     if k.lower() != b"accept-ranges"])
                await send(message)
            await self.app(scope, receive, sending)

    app.add_middleware(WholeAnswers)

    class StopGate(HttpMiddleware):
        """Outermost (added last): once the server is stopping (``stopping``), a request that
        arrives is answered 503 at once, and one that uvicorn cancels (at its deadline,
        :data:`STOP_SECONDS`, or on a second Ctrl-C) is answered 503 where nothing was sent
        yet, or left: before, each cancelled request printed uvicorn's traceback and its
        client got a plain-text 500."""

        async def http(self, scope: Any, receive: Any, send: Any) -> None:
            stopped = JSONResponse({"error": STOPPING}, status_code=503,
                                   headers={"Connection": "close"})
            if stopping.is_set():
                await stopped(scope, receive, send)
                return
            started = False

            async def sending(message: Any) -> None:
                nonlocal started
                started = started or message["type"] == "http.response.start"
                await send(message)
            try:
                await self.app(scope, receive, sending)
            except asyncio.CancelledError:
                if not stopping.is_set():
                    raise
                if not started:
                    with contextlib.suppress(asyncio.CancelledError):
                        await stopped(scope, receive, send)

    app.add_middleware(StopGate)

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused):
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        """One JSON error. A 405 names the methods the path takes, in the message and in
        ``Allow``, over every route of the path (Starlette's ``Allow`` holds the first
        route's alone: "GET" for ``/api/replays``, which takes POST too; before, neither was
        said)."""
        headers = dict(exc.headers or {})
        what = {404: "no such page or endpoint"}.get(exc.status_code, str(exc.detail))
        if exc.status_code == 405:
            from starlette.routing import Match

            methods = sorted({m for route in request.app.routes
                              if route.matches(request.scope)[0] != Match.NONE
                              for m in getattr(route, "methods", None) or ()})
            if methods:   # (the static files' mount names none: Starlette's answer stands)
                headers["Allow"] = ", ".join(methods)
            allow = headers.get("Allow")
            what = "method not allowed here" + (f"; allowed: {allow}" if allow else "")
        return JSONResponse({"error": f"{request.method} {request.url.path[:200]}: {what}"},
                            status_code=exc.status_code, headers=headers or None)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        return JSONResponse({"error": f"bad request: {str(exc)[:300]}"}, status_code=400)

    def json_body(request: Request) -> None:
        """A body must say it is JSON: a page on another site cannot send that without the
        browser asking this server first (which it does not answer)."""
        kind, *params = request.headers.get("content-type", "").split(";")
        kind = kind.strip().lower()
        if kind != "application/json":
            raise Refused(f"the request body must be sent as application/json; got "
                          f"{kind or 'no content type'!r}", 415)
        for param in params:   # JSON is UTF-8 (RFC 8259): another charset is not read as one
            key, _, value = param.partition("=")
            if key.strip().lower() == "charset" and value.strip().strip('"').lower() != "utf-8":
                raise Refused(f"the request body's charset is {shown(value.strip(), 40)}; "
                              f"allowed: utf-8 (JSON is UTF-8 text)", 415)

    async def body_text(request: Request, what: str) -> str:
        """The request's body as UTF-8 text, a JSON body checked first (:func:`json_body`):
        the same rule for every endpoint (before: the game endpoints let ``json.loads``
        guess UTF-16 or UTF-32 from the bytes, and uploads refused them)."""
        json_body(request)
        try:
            return (await request.body()).decode("utf-8")
        except UnicodeDecodeError as exc:   # what is wrong, and where (before: the rule alone)
            raise Refused(f"{what} is UTF-8 JSON text, and this one is not ({exc.reason} at "
                          f"byte {exc.start:,})") from None

    async def body_object(request: Request, keys: dict[str, bool]) -> dict[str, Any]:
        """The JSON object of a request, with only ``keys`` (name -> required)."""
        text = await body_text(request, "a request body")
        try:
            d = load_json(text, "the request body")
        except ValueError as exc:
            raise Refused(f"{exc} (it must be JSON)") from None
        if not isinstance(d, dict):
            raise Refused(f"the request body must be a JSON object with the keys "
                          f"{', '.join(keys)}")
        unknown = [k for k in d if k not in keys]
        if unknown:
            raise Refused(f"unknown key {shown(unknown[0], 40)}; allowed: {', '.join(keys)}")
        missing = [k for k, req in keys.items() if req and k not in d]
        if missing:
            raise Refused(f"missing key {missing[0]!r}; give {', '.join(keys)}")
        return d

    def _head(response: Response) -> Response:
        """A HEAD's answer without a length: its GET's is not known without the work (a
        length of 0 would say the body is empty)."""
        del response.headers["content-length"]
        return response

    def get(path: str) -> Any:
        """A route of GET and HEAD (before: HEAD, which monitors and link checkers send, was
        405 on every API route but the page's own). A replay's two routes answer HEAD
        without building what GET sends."""
        return app.api_route(path, methods=["GET", "HEAD"])

    @get("/api/options")
    def options() -> dict[str, Any]:
        return {"agents": list(allowed) + list(SEARCH_OFFERED), "default_opponent": "greedy",
                "cheating": cheating,
                "search_limits": {"budget": WEB_MAX_BUDGET, "ms": WEB_MAX_MS},
                "min_players": 2, "max_players": 10, **rule_options()}

    @app.post("/api/agents")
    async def agents(request: Request) -> dict[str, Any]:
        d = await body_object(request, {"rules": False, "options": False, "num_players": False})
        rules = make_rules(d.get("rules"), d.get("options"), d.get("num_players"))
        return {"agents": agents_for(rules)}

    @app.post("/api/games")
    async def new_game(request: Request) -> dict[str, Any]:
        d = await body_object(request, {"rules": False, "options": False, "num_players": False,
                                        "seat": False, "opponents": True, "seed": False,
                                        "thinking": False})
        rules = make_rules(d.get("rules"), d.get("options"), d.get("num_players"))
        opponents = d["opponents"]
        if not isinstance(opponents, list):
            raise Refused(f"opponents must be a list of agent names; allowed: "
                          f"{agents_allowed(rules, allowed, metas)}")
        hung_up = threading.Event()   # its client hung up while the agents played

        def deal() -> dict[str, Any]:   # agents may think a while: off the event loop
            # a key given as null takes its default, as seed's and num_players' do (before:
            # "seat": null and "thinking": null were refused)
            seat, thinking = d.get("seat"), d.get("thinking")
            table = tables.new(rules, 0 if seat is None else seat, opponents, d.get("seed"),
                               default_agent_factory(rules, allowed, metas),
                               False if thinking is None else thinking,
                               client=client_of(request), gone=hung_up)
            with table.lock:
                view = table.view()
            if hung_up.is_set():   # a hang-up seen once the game was kept: not kept after all
                tables.discard(table.id)
                raise Refused(DEALT_GONE, 499)
            return view
        search = searches(opponents)

        def dealing() -> Awaitable[Any]:
            return agents_work(deal, search, request)
        view = await (for_client(request, dealing, hung_up) if search else dealing())
        live = tables.ids()
        for gone in [k for k in gates if k not in live]:   # the games Tables dropped
            del gates[gone]
        return view

    @get("/api/games/{table_id}")
    async def get_game(table_id: str) -> dict[str, Any]:
        table = tables.get(table_id)
        return await at_table(table, table.view)

    @app.post("/api/games/{table_id}/action")
    async def act(table_id: str, request: Request) -> dict[str, Any]:
        table = tables.get(table_id)
        d = await body_object(request, {"action": True, "move": True})

        def decide() -> dict[str, Any]:
            table.act(d["action"], d["move"])
            return table.view()
        return await at_table(table, decide, agents=request)

    @app.post("/api/games/{table_id}/thinking")
    async def thinking(table_id: str, request: Request) -> dict[str, Any]:
        table = tables.get(table_id)
        d = await body_object(request, {"show": True})
        json_bool("show", d["show"])

        def show() -> dict[str, Any]:
            table.set_thinking(d["show"])
            return table.view()
        return await at_table(table, show)

    saved_games = itertools.count(1)
    uploaded = itertools.count(1)

    @app.post("/api/games/{table_id}/replay")
    async def save_replay(table_id: str, request: Request) -> dict[str, Any]:
        table = tables.get(table_id)
        if await request.body():   # before: any body was taken and ignored
            raise Refused("saving a game's replay takes no request body")

        def save() -> dict[str, Any]:   # the table's requests in turn: one save at a time, off the loop
            if not table.game.finished[0]:
                raise Refused("the game is not over: a replay is saved at its end", 409)
            if table.saved_replay is None or not replays.has(table.saved_replay):
                # a title that is not the table's id: the list is public, and the id is the
                # only key to a table (before: any client could read it there and use it)
                title = f"web game {next(saved_games)}"
                table.saved_replay = replays.add(table.replay, title,   # once: then the same
                                                 client=client_of(request))
            return replays.summary(table.saved_replay)
        return await at_table(table, save)

    @get("/api/replays")
    def list_replays() -> list[dict[str, Any]]:
        return replays.listing()

    @app.post("/api/replays")
    async def upload_replay(request: Request) -> dict[str, Any]:
        text = await body_text(request, "a replay")

        def check() -> dict[str, Any]:   # read (megabytes of JSON), every action legal, the
            try:                 # result as recorded: off the event loop, in the replays' thread
                replay = Replay.from_json(text, "uploaded replay")
            except ValueError as exc:
                raise Refused(str(exc)) from None
            check_length(replay)   # before replaying it (413)
            encoded = replay.to_json().encode("utf-8")   # once: for the check and the keeping
            again = replays.kept_upload(encoded)   # checked when it was kept: not replayed again
            if again is not None:
                return replays.summary(again)
            try:   # named as its reading's errors name it (before: "replay: ...")
                replay_positions(replay, where="uploaded replay")
            except ValueError as exc:
                raise Refused(str(exc)) from None
            # numbered, as the saved games are (before: every upload was "uploaded", and the
            # list could not tell them apart)
            rid = replays.add(replay, f"upload {next(uploaded)}", "upload", text=encoded,
                              client=client_of(request))
            return replays.summary(rid)   # as listed (its title), read where it was kept
        return await replay_work(uploads, request, check)

    def too_many_reads() -> Response:
        return JSONResponse({"error": f"this client is fetching {READS_PER_CLIENT} replays "
                                      f"already, the most allowed; ask again once one has "
                                      f"arrived"}, status_code=429, headers={"Retry-After": "5"})

    @get("/api/replays/{rid}")
    async def get_replay(rid: str, request: Request) -> Response:
        replays.check(rid)   # a 404 before waiting for a worker
        if request.method == "HEAD":   # that it is there: no replay replayed, no read slot
            return _head(Response(media_type="application/json"))
        host = client_of(request)
        if not reads.admit(host):
            return too_many_reads()
        try:
            data = replays.cached(rid)   # built before: answered at once
            if data is None:   # every position replayed, once per replay (then kept)
                data = await replay_work(reads, request, lambda: replays.view(rid))
        except BaseException:
            reads.leave(host)
            raise
        return sent_in_chunks(data, host)   # counted until sent

    @get("/api/replays/{rid}/file")
    async def replay_file(rid: str, request: Request) -> Response:
        replays.check(rid)   # a 404 before counting
        if request.method == "HEAD":   # that it is there: nothing unpacked, no read slot
            return _head(Response(media_type="application/json", headers={
                "Content-Disposition": f'attachment; filename="ono-replay-{rid}.json"'}))
        host = client_of(request)
        if not reads.admit(host):   # before unpacking: a refused request costs nothing
            return too_many_reads()
        try:   # a few MB unpacked: off the event loop, in the replays' thread, in turn
            data = await replay_work(reads, request,
                                     lambda: (replays.text(rid) + "\n").encode("utf-8"))
        except BaseException:
            reads.leave(host)
            raise
        return sent_in_chunks(data, host, **{
            "Content-Disposition": f'attachment; filename="ono-replay-{rid}.json"'})

    @app.api_route("/", methods=["GET", "HEAD"])   # HEAD: as the static files answer it
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def build_parser() -> argparse.ArgumentParser:
    p = cli.ArgumentParser(prog="ono-web", description="Play ONO and watch replays in the browser.")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; requests "
                        "must name a loopback host or this one; 0.0.0.0 (IPv4) or :: (IPv6) "
                        "serves every address and any host name, and only they: an empty "
                        "host or 0 is refused)")
    p.add_argument("--port", type=cli.bounded_int(0, 65535), default=8000,
                   help="port (default 8000; 0: any free port)")
    p.add_argument("--model", action="append", default=[], metavar="FILE",
                   help="a model file (.safetensors, or a training checkpoint .zip) offered as an "
                        "opponent under its label (a run's model.safetensors: the run's name; "
                        "else its file name) (repeatable)")
    p.add_argument("--replays", action="append", default=[], metavar="DIR",
                   help="a folder of replay files (*.json) to list in the viewer (repeatable)")
    return p


def server_config(app: Any, **kwargs: Any) -> Any:
    """The ``uvicorn.Config`` that serves ``app`` (``kwargs``: the rest of its settings):
    uvicorn's h11 protocol, with a deadline for each request's headers
    (:data:`HEADER_SECONDS`). uvicorn times only the wait between a connection's requests, and
    stops that clock at the first byte: a connection that sent nothing, or part of its
    headers, was held for as long as its client kept it open, and some hundreds of them used
    up the process's file descriptors, so that no client was answered. Written here because
    uvicorn has no such setting; it reads the protocol's ``cycle``, ``loop`` and
    ``transport``, which uvicorn 0.29 to 0.55 keep alike (a test serves a live server
    through it). The h11 protocol is used also where ``httptools`` is installed. uvicorn
    answers a request past :data:`MAX_CONNECTIONS` connections 503 (a ``kwargs``'
    ``limit_concurrency`` replaces it)."""
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeadersInTime(H11Protocol):
        _headers_due: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._headers_due is not None:
                self._headers_due.cancel()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._headers_due is not None:
                self._headers_due.cancel()
            self._headers_due = self.loop.call_later(HEADER_SECONDS, self._late, self.cycle)

        def _late(self, cycle: Any) -> None:
            """No request began since the clock started (the same ``cycle``, none or one
            answered), and none is under way: answer 408 and close."""
            if self.cycle is cycle and (cycle is None or cycle.response_complete) \
                    and not self.transport.is_closing():
                body = json.dumps({"error": f"no whole request's headers within "
                                            f"{HEADER_SECONDS:g} s (the most allowed)"}).encode()
                self.transport.write(b"HTTP/1.1 408 Request Timeout\r\n"   # before: no body
                                     b"Content-Type: application/json\r\n"
                                     b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                                     % (len(body), body))
                self.transport.close()

    return uvicorn.Config(app, http=HeadersInTime,
                          **{"limit_concurrency": MAX_CONNECTIONS, **kwargs})


def main(argv: Sequence[str] | None = None) -> int:
    def body(args) -> int:
        import socket

        import uvicorn

        if not args.host.strip():   # the socket would listen on every address
            raise ValueError(f"--host {args.host!r}: no address; allowed: an address or host "
                             f"name of this machine (127.0.0.1 by default), or 0.0.0.0 or :: "
                             f"to serve every address")
        for flag, given in (("--model", args.model), ("--replays", args.replays)):
            if any(not g.strip() for g in given):   # Path('') is the current folder
                raise ValueError(f"{flag} ''; allowed: a "
                                 f"{'model file' if flag == '--model' else 'folder'}'s path")
        hosts = None if args.host in ("0.0.0.0", "::") else sorted({*LOOPBACK_HOSTS, args.host})
        app = create_app(args.model, args.replays, allowed_hosts=hosts)
        sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((args.host, args.port))
        except OSError as exc:
            raise ValueError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
        host, port = sock.getsockname()[:2]
        if host in ("0.0.0.0", "::") and args.host not in ("0.0.0.0", "::"):
            sock.close()   # '0' and such name every address without saying so
            raise ValueError(f"--host {args.host!r} listens on every address ({host}); allowed: "
                             f"an address or host name of this machine, or {host} itself to "
                             f"serve every address")
        # every address: this machine's loopback shown, one a browser opens (before: 0.0.0.0)
        shown = {"0.0.0.0": "127.0.0.1", "::": "[::1]"}.get(host, f"[{host}]" if ":" in host
                                                             else host)
        every = f"serving every address, port {port}; " if host in ("0.0.0.0", "::") else ""
        sock.listen(2048)   # uvicorn's backlog: the address printed takes connections at once
        print(f"ono-web: open http://{shown}:{port}/ ({every}Ctrl-C stops the server)",
              flush=True)

        class Server(uvicorn.Server):
            def handle_exit(self, sig: int, frame: Any) -> None:   # in the signal handler
                app.state.stopping.set()   # first: no agent starts another decision
                super().handle_exit(sig, frame)

            async def shutdown(self, sockets: Any = None) -> None:
                print(f"ono-web: stopping (new requests are answered 503; the agents end "
                      f"with the decision under way, other requests get at most "
                      f"{STOP_SECONDS} s)", file=sys.stderr, flush=True)
                await super().shutdown(sockets=sockets)

        # lifespan off: the app has no startup or shutdown work, and the lifespan task that a
        # second Ctrl-C cancels printed uvicorn's traceback
        server = Server(server_config(app, log_level="warning", lifespan="off",
                                      timeout_graceful_shutdown=STOP_SECONDS))
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:
            if argv is None:   # the console script ends: a Ctrl-C while Python waits for the
                cli.ignore_sigint()   # agents' decision under way would print a traceback
        return 0

    return cli.run(build_parser(), argv, body, signals=False)   # uvicorn serves SIGTERM


if __name__ == "__main__":
    sys.exit(main())
