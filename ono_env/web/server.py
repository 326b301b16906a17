"""The web table's server: a FastAPI app over :mod:`ono_env.web.table`, and ``ono-web``.

    ono-web                                   # http://127.0.0.1:8000/
    ono-web --port 8080 --model my.safetensors --replays runs/arena-replays

The server holds every game; the browser sends only decisions (an action id or name, with
the number of the view it was made on) and gets the table as its seat sees it. Every page
asset ships in the package (``ono_env/web/static``); nothing is fetched from the internet.

Endpoints (JSON; every refusal is ``{"error": "..."}`` with a 4xx status)::

    GET  /api/options                 presets, their rule options, agents, player counts
    POST /api/games                   a new game: {"rules", "options", "num_players", "seat",
                                      "opponents", "seed", "thinking"} -> the table
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
replay by id and never names a path. Requests over :data:`MAX_BODY` bytes are refused.
"""

import argparse
import secrets
import sys
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

from ono_env import cli
from ono_env.agents.learned import read_metadata
from ono_env.agents.registry import agent_names
from ono_env.positions import load_json
from ono_env.replay import MAX_LABEL, Replay, replay_positions
from ono_env.rules import CHOICES, PRESETS, RuleSet
from ono_env.web.table import Refused, Tables, default_agent_factory, make_rules

STATIC = Path(__file__).parent / "static"
MAX_BODY = 4 << 20
"""The largest request body: 4 MiB (a replay upload is the largest request)."""
MAX_REPLAYS = 200
"""The most replays the server keeps (uploads and saved games; the oldest go first)."""
MAX_REPLAY_DECISIONS = 20_000
"""The longest replay the server takes or shows (every position is sent to the browser)."""
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
SEARCH_OFFERED = ("pimc", "pimc:128", "ismcts", "oracle-hands", "oracle")
"""Search agents the setup screen lists (any ``name:N`` or ``name:<T>ms`` is accepted); the
``oracle`` ones cheat (they see hidden cards) and are labelled so by the arena and the docs."""


class Replays:
    """The replays of one server, by id: files from ``--replays`` folders, saved games and
    uploads."""

    def __init__(self, limit: int = MAX_REPLAYS) -> None:
        self.limit = limit
        self._items: "OrderedDict[str, tuple[str, Replay]]" = OrderedDict()
        self._lock = threading.Lock()

    def add(self, replay: Replay, title: str) -> str:
        rid = secrets.token_hex(8)
        with self._lock:
            self._items[rid] = (title, replay)
            while len(self._items) > self.limit:
                self._items.popitem(last=False)
        return rid

    def get(self, rid: Any) -> Replay:
        with self._lock:
            item = self._items.get(rid) if isinstance(rid, str) else None
        if item is None:
            raise Refused(f"no replay {rid!r:.40}", 404)
        return item[1]

    def listing(self) -> list[dict[str, Any]]:
        with self._lock:
            items = list(self._items.items())
        return [summary(rid, title, r) for rid, (title, r) in reversed(items)]


def summary(rid: str, title: str, r: Replay) -> dict[str, Any]:
    winner = r.result["winner"] if r.result else None
    return {"id": rid, "title": title, "rules": r.rules.name, "players": r.players,
            "decisions": len(r.actions), "winner": winner, "source": r.source,
            "saved_at": r.saved_at}


def replay_view(r: Replay) -> dict[str, Any]:
    """Everything the viewer shows: the positions before and after each decision (every
    hand: a replay shows all), the decisions and what the agents reported."""
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
    decisions = [{"seat": positions[k]["current_player"], "text":
                  f"P{positions[k]['current_player']}: {C.action_name(a)}",
                  "thinking": r.thinking[k]} for k, a in enumerate(r.actions)]
    return {"rules": r.rules.to_dict(), "players": r.players, "steps": steps,
            "decisions": decisions, "result": r.result, "source": r.source,
            "saved_at": r.saved_at}


def rule_options() -> dict[str, Any]:
    """Each preset's rule options, and the allowed values of the text options."""
    return {"presets": {name: RuleSet.preset(name).to_dict() for name in PRESETS},
            "choices": {k: list(v) for k, v in CHOICES.items()}}


def create_app(models: Sequence[str] = (), replay_dirs: Sequence[str] = (),
               max_tables: int | None = None, allowed_hosts: Sequence[str] | None = None,
               log: Any = None) -> Any:
    """The FastAPI app. ``models``: model files the browser may pick as opponents (by their
    file name's stem); ``replay_dirs``: folders whose ``*.json`` replays are listed (a file
    that is not a replay is skipped with a note to ``log``, default stderr);
    ``allowed_hosts``: the Host headers served (``ono-web`` passes the loopback names and
    its ``--host``, so that another site's page cannot reach the server by DNS rebinding;
    None: any)."""
    from fastapi import FastAPI, Request
    from fastapi.responses import FileResponse, JSONResponse, Response
    from fastapi.staticfiles import StaticFiles
    from starlette.concurrency import run_in_threadpool
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    allowed: dict[str, str] = {name: name for name in agent_names()}
    for m in models:
        label = Path(m).name.rsplit(".", 1)[0][:MAX_LABEL]
        if label in allowed:
            raise ValueError(f"model {m!r}: its label {label!r} is taken (rename the file)")
        allowed[label] = str(m)
    tables = Tables() if max_tables is None else Tables(max_tables)
    replays = Replays()
    for folder in replay_dirs:
        folder = Path(folder)
        if not folder.is_dir():
            raise ValueError(f"--replays {str(folder)!r}: not a folder")
        for f in sorted(folder.glob("*.json")):
            try:
                replays.add(Replay.load(f), f.name[:MAX_LABEL])
            except ValueError as exc:
                print(f"ono-web: note: {f} skipped: {exc}", file=log or sys.stderr)

    app = FastAPI(title="ono_env web table", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.tables = tables
    app.state.replays = replays
    if allowed_hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))

    @app.middleware("http")
    async def limit_body(request: Request, call_next):
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            return JSONResponse({"error": f"request body of {length} bytes; at most {MAX_BODY}"},
                                status_code=413)
        if request.method in ("POST", "PUT", "PATCH"):
            body = b""
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_BODY:
                    return JSONResponse({"error": f"request body over {MAX_BODY} bytes"},
                                        status_code=413)
            request._body = body   # read once here; the endpoint reads it again from memory
        return await call_next(request)

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Refused):
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    def json_body(request: Request) -> None:
        """A body must say it is JSON: a page on another site cannot send that without the
        browser asking this server first (which it does not answer)."""
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise Refused(f"the request body must be sent as application/json; got "
                          f"{kind or 'no content type'!r}", 415)

    async def body_object(request: Request, keys: dict[str, bool]) -> dict[str, Any]:
        """The JSON object of a request, with only ``keys`` (name -> required)."""
        json_body(request)
        try:
            d = load_json(await request.body(), "the request body")
        except ValueError as exc:
            raise Refused(f"{exc} (it must be JSON)") from None
        if not isinstance(d, dict):
            raise Refused(f"the request body must be a JSON object with the keys "
                          f"{', '.join(keys)}")
        unknown = [k for k in d if k not in keys]
        if unknown:
            raise Refused(f"unknown key {unknown[0]!r:.40}; allowed: {', '.join(keys)}")
        missing = [k for k, req in keys.items() if req and k not in d]
        if missing:
            raise Refused(f"missing key {missing[0]!r}; give {', '.join(keys)}")
        return d

    @app.get("/api/options")
    def options() -> dict[str, Any]:
        return {"agents": list(allowed) + list(SEARCH_OFFERED), "default_opponent": "greedy",
                "min_players": 2, "max_players": 10, **rule_options()}

    @app.post("/api/games")
    async def new_game(request: Request) -> dict[str, Any]:
        d = await body_object(request, {"rules": False, "options": False, "num_players": False,
                                        "seat": False, "opponents": True, "seed": False,
                                        "thinking": False})
        rules = make_rules(d.get("rules", "basic"), d.get("options", {}), d.get("num_players"))
        opponents = d["opponents"]
        if not isinstance(opponents, list):
            raise Refused(f"opponents must be a list of agent names; allowed names: "
                          f"{', '.join(allowed)}")
        def deal() -> dict[str, Any]:   # agents may think a while: off the event loop
            table = tables.new(rules, d.get("seat", 0), opponents, d.get("seed"),
                               default_agent_factory(rules, allowed), d.get("thinking", False))
            with table.lock:
                return table.view()
        return await run_in_threadpool(deal)

    @app.get("/api/games/{table_id}")
    def get_game(table_id: str) -> dict[str, Any]:
        table = tables.get(table_id)
        with table.lock:
            return table.view()

    @app.post("/api/games/{table_id}/action")
    async def act(table_id: str, request: Request) -> dict[str, Any]:
        table = tables.get(table_id)
        d = await body_object(request, {"action": True, "move": True})

        def decide() -> dict[str, Any]:
            with table.lock:
                table.act(d["action"], d["move"])
                return table.view()
        return await run_in_threadpool(decide)

    @app.post("/api/games/{table_id}/thinking")
    async def thinking(table_id: str, request: Request) -> dict[str, Any]:
        table = tables.get(table_id)
        d = await body_object(request, {"show": True})
        if not isinstance(d["show"], bool):
            raise Refused(f"show must be true or false; got {d['show']!r:.20}")
        with table.lock:
            table.show_thinking = d["show"]
            return table.view()

    @app.post("/api/games/{table_id}/replay")
    def save_replay(table_id: str) -> dict[str, Any]:
        table = tables.get(table_id)
        with table.lock:
            if not table.game.finished[0]:
                raise Refused("the game is not over: a replay is saved at its end", 409)
            replay = table.replay
        rid = replays.add(replay, f"web game {table.id}")
        return summary(rid, f"web game {table.id}", replay)

    @app.get("/api/replays")
    def list_replays() -> list[dict[str, Any]]:
        return replays.listing()

    @app.post("/api/replays")
    async def upload_replay(request: Request) -> dict[str, Any]:
        json_body(request)
        try:
            text = (await request.body()).decode("utf-8")
        except UnicodeDecodeError:
            raise Refused("a replay is UTF-8 JSON text") from None
        try:
            replay = Replay.from_json(text, "uploaded replay")
        except ValueError as exc:
            raise Refused(str(exc)) from None
        if len(replay.actions) > MAX_REPLAY_DECISIONS:
            raise Refused(f"the replay has {len(replay.actions)} decisions; the server takes "
                          f"at most {MAX_REPLAY_DECISIONS}", 413)

        def check() -> None:     # every action legal, the result as recorded
            try:
                replay_positions(replay)
            except ValueError as exc:
                raise Refused(str(exc)) from None
        await run_in_threadpool(check)
        rid = replays.add(replay, "uploaded")
        return summary(rid, "uploaded", replay)

    @app.get("/api/replays/{rid}")
    def get_replay(rid: str) -> dict[str, Any]:
        return replay_view(replays.get(rid))

    @app.get("/api/replays/{rid}/file")
    def replay_file(rid: str) -> Response:
        replay = replays.get(rid)
        return Response(replay.to_json() + "\n", media_type="application/json", headers={
            "Content-Disposition": f'attachment; filename="ono-replay-{rid}.json"'})

    @app.get("/")
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def build_parser() -> argparse.ArgumentParser:
    p = cli.ArgumentParser(prog="ono-web", description="Play ONO and watch replays in the browser.")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; requests "
                        "must name a loopback host or this one; 0.0.0.0 serves every address "
                        "and any host name)")
    p.add_argument("--port", type=cli.bounded_int(0, 65535), default=8000,
                   help="port (default 8000; 0: any free port)")
    p.add_argument("--model", action="append", default=[], metavar="FILE",
                   help="a model file (.safetensors) offered as an opponent, by its file name "
                        "(repeatable)")
    p.add_argument("--replays", action="append", default=[], metavar="DIR",
                   help="a folder of replay files (*.json) to list in the viewer (repeatable)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    def body(args) -> int:
        import socket

        import uvicorn

        for m in args.model:
            read_metadata(m)   # a clear refusal now rather than when a game starts
        hosts = None if args.host in ("0.0.0.0", "::") else sorted({*LOOPBACK_HOSTS, args.host})
        app = create_app(args.model, args.replays, allowed_hosts=hosts)
        sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((args.host, args.port))
        except OSError as exc:
            raise ValueError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        print(f"ono-web: open http://{shown}:{port}/ (Ctrl-C stops the server)", flush=True)
        config = uvicorn.Config(app, log_level="warning")
        server = uvicorn.Server(config)
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:
            pass
        return 0

    return cli.run(build_parser(), argv, body)


if __name__ == "__main__":
    sys.exit(main())
