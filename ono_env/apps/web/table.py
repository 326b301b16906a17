"""The web table's games, without the web: a human seat against agents, seen from that seat.

:class:`Table` holds one game (a ``VecGame`` of one game), the agents of the other seats, the
history of decisions and the replay being recorded. The browser sees only
:meth:`Table.view`: the human's hand, the other hands as counts, the public state of the
table, the legal actions when it is the human's turn, and (when asked for) what the agents
reported of their decisions. It sends decisions, which :meth:`Table.act` checks as the engine
does: a stale decision (made on an older view) or an illegal one is refused with the reason
and changes nothing. The agents then play until the human is to act again or the game ends.

:class:`Tables` keeps several games at once, each under its own random id, and a bounded
number of them (the oldest are dropped first).
"""

from __future__ import annotations

import logging
import re
import secrets
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ono_env import cards as C
from ono_env.agents import make_agent
from ono_env.agents.base import is_cheating, marked
from ono_env.agents.driver import act_one
from ono_env.agents.search import SEARCH_AGENTS
from ono_env.checks import check_int, first_few, plural, shown
from ono_env.game import (
    DEFAULT_MAX_DECISIONS_MATCH,
    DEFAULT_MAX_DECISIONS_ROUND,
    FRESH_SEED_BITS,
    VecGame,
    fresh_seed,
    game_seeds,
)
from ono_env.positions import catch_succeeds, game_winners, won_on_lowest_total
from ono_env.render import (
    deal_events,
    option_hint,
    personal,
    round_end_events,
    seat_events,
    why_not_legal,
)
from ono_env.replay import Replay
from ono_env.rule_help import describe_rules, preset_summary
from ono_env.rules import PRESETS, RuleSet

_log = logging.getLogger("ono_env.apps.web")

HISTORY = 40
"""The most recent decisions a view lists (and the table keeps apart from its replay)."""
WEB_MAX_DECISIONS = 20_000
"""The most decisions of a game at the table: a single round is cut at the engine's 5,000
(``DEFAULT_MAX_DECISIONS_ROUND``), a match here rather than at 50,000, so that what one game can
hold is bounded by a size the server's replay viewer shows whole."""
MAX_TABLES = 200
"""The most games the server keeps at once (:class:`Tables`)."""
IDLE_SECONDS = 600.0
"""A game in play that no request has touched for this long may be dropped for a new one."""
FINISHED_SECONDS = 120.0
"""A finished game that no request has touched for this long may be dropped for a new one."""
HUNG_UP = "the client hung up before its request's turn came: nothing was done"
DEALT_GONE = "the client hung up while its game was dealt: the game was not kept"
STOPPING = ("the server is stopping: it starts no more work (its games end with it; start "
            "it again for a new game)")
"""The refusal (503) of work asked of a server that is stopping (:attr:`Tables.stopping`)."""


class Refused(ValueError):
    """A decision or request the table refuses; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def make_rules(preset: Any, options: Any, num_players: Any) -> RuleSet:
    """The rules of a new table: a preset by name (never a path), its options overridden by
    ``options`` (a mapping of rule fields) and the player count (given once: in ``options``
    or as ``num_players``); each None takes its default (``basic``, no options, the preset's
    count). ``Refused`` naming what is wrong."""
    preset = "basic" if preset is None else preset
    options = {} if options is None else options
    if not isinstance(preset, str) or preset not in PRESETS:
        raise Refused(f"rules {shown(preset, 60)}: not a preset; allowed: {', '.join(PRESETS)}")
    if not isinstance(options, Mapping):
        raise Refused(f"options must be an object of rule fields; got {type(options).__name__}")
    if num_players is not None and "num_players" in options:
        raise Refused(f"options sets num_players={shown(options['num_players'], 20)} and num_players is "
                      f"{shown(num_players, 20)}: give the player count once, as num_players")
    try:
        overrides = dict(options)
        if num_players is not None:
            overrides["num_players"] = num_players
        return RuleSet.preset(preset).replace(**overrides)
    except (ValueError, TypeError) as exc:
        raise Refused(str(exc)) from None


class NewGameRequest:
    """A request for a new game, checked, with its agents built: nothing dealt yet.
    ``Refused`` names what was wrong (the opponents' count, ``seat``, ``seed``, ``thinking``,
    an agent's label), so a full server refuses a bad request as bad input, not as full."""

    def __init__(self, rules: RuleSet, seat: int, agents: Sequence[str], seed: int | None,
                 agent_factory: Any, thinking: bool = False) -> None:
        n = rules.num_players
        if len(agents) != n - 1:
            raise Refused(f"{plural(len(agents), 'opponent')} for {n} players: give {n - 1} "
                          f"(one per other seat)")
        try:
            self.seat = check_int("seat", seat, 0, n - 1)
            # the whole numbers a browser holds exactly (before: up to 2**63 - 1, and the page
            # showed another seed than the one that dealt)
            self.seed = None if seed is None else check_int("seed", seed, 0, 2**FRESH_SEED_BITS - 1)
            self.show_thinking = json_bool("thinking", thinking)
        except ValueError as exc:
            raise Refused(str(exc)) from None
        self.labels: list[str] = []
        self.agents: dict[int, Any] = {}
        k = 0
        for s in range(n):
            if s == self.seat:
                self.labels.append("you")
            else:
                self.agents[s] = agent_factory(agents[k])
                self.labels.append(marked(agents[k], is_cheating(self.agents[s])))
                k += 1


class Table:
    """One game between a human in ``seat`` and ``agents`` (labels, one per other seat in
    seat order) under ``rules``. ``agent_factory(label)`` builds an agent from a label the
    server allows. ``seed`` fixes the deal and the agents' generator (None: fresh).
    ``request``: the same request already checked for these ``rules``
    (:class:`NewGameRequest`); ``seat``, ``agents``, ``seed``, ``agent_factory`` and
    ``thinking`` are then not read again. ``stopping``: set when the server stops (the
    agents then start no other decision: :meth:`_play_agents`)."""

    def __init__(self, table_id: str, rules: RuleSet, seat: int, agents: Sequence[str],
                 seed: int | None, agent_factory: Any, thinking: bool = False,
                 request: NewGameRequest | None = None,
                 stopping: threading.Event | None = None) -> None:
        if request is None:
            request = NewGameRequest(rules, seat, agents, seed, agent_factory, thinking)
        self.id = table_id
        self.rules = rules
        self.seat = request.seat
        self.show_thinking = request.show_thinking
        self.labels = request.labels
        self.agents = request.agents
        seed = request.seed
        self.seed_chosen = seed is not None
        """The browser chose the seed: it may see it. A seed the server drew is shown only
        once the game is over (the seed deals every hand)."""
        self.seed = fresh_seed() if seed is None else seed
        self.game = VecGame(rules, 1, seed=self.seed,
                            max_decisions=min(WEB_MAX_DECISIONS, DEFAULT_MAX_DECISIONS_MATCH
                                              if rules.target_score else DEFAULT_MAX_DECISIONS_ROUND))
        self.rng = np.random.default_rng([self.seed, 99])
        self.replay = Replay.start(self.game, 0, int(game_seeds(self.seed, 1)[0]),
                                   self.labels, "ono-web")
        self.thinking_from: int | None = None
        """The first decision played with the agents' reports shown (None: none yet); while
        the game is on, the view shows none of an earlier decision's."""
        if self.show_thinking:
            self._thinking_shown()
        self.saved_replay: str | None = None
        """The id the finished game was saved under (``POST .../replay``), once saved."""
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        """The last decisions, as a view lists them (the replay holds them all)."""
        self.position = self.game.to_dict(0)
        """The game's position now (``VecGame.to_dict``), kept as each step makes it."""
        self.deal = [personal(e, self.seat) for e in deal_events(self.position)]
        """What the first deal's first card did (the rounds after it: in the entry that ended
        the round before)."""
        self.events: list[str] = list(self.deal)
        """The table's last key event, whole: the first deal's lines, then each round's end
        (its result, the hands counted, the next deal). Before: the last five lines, which
        at five players and more lost the result to the hands counted."""
        self.events_decision: int | None = None
        """The decision whose entry in the log ended a round (``events`` its lines); None
        while ``events`` holds the deal's."""
        self.move = 0
        """Counts the human's decisions; a decision names the ``move`` of the view it was
        made on, so a decision made on an old view (another tab, a double click) is stale."""
        self.lock = threading.Lock()
        self.stopping = stopping
        self._play_agents()

    def set_thinking(self, show: bool) -> None:
        """Show or hide what the agents report; switched on while the game is on, the
        replay's source says from which decision the human saw it (it names cards of the
        agents' hidden hands, so a game played with it is not a fair game)."""
        self.show_thinking = show
        if show and not self.game.finished[0]:
            self._thinking_shown()

    def _thinking_shown(self) -> None:
        """The replay's source names the first decision played with the agents' reports
        shown (kept when they are switched off and on again)."""
        if self.thinking_from is None:
            self.thinking_from = len(self.replay.actions)
        if self.replay.source == "ono-web":
            self.replay.source = (f"ono-web, what the agents think shown from decision "
                                  f"{len(self.replay.actions)}")

    # ---- playing --------------------------------------------------------------------
    def _step(self, seat: int, action: int, thinking: dict[str, Any] | None) -> None:
        before = self.position
        self.replay.add(action, thinking)
        self.game.step(np.array([action]))
        self.position = self.game.to_dict(0)     # the next step's "before", and the view's
        # a hand shown to the human's challenge: for its eyes (its view)
        events = seat_events(before, self.position, seat, action, self.seat)
        ended = round_end_events(before, self.position)   # and the next round's deal
        events += ended
        entry: dict[str, Any] = {"seat": seat, "player": self.labels[seat],
                                 "text": f"P{seat}: {C.action_name(action)}",
                                 "thinking": thinking, "decision": len(self.replay.actions) - 1,
                                 "events": [personal(e, self.seat) for e in events]}
        self.history.append(entry)
        if ended:   # the entry's last lines, from the human's seat
            self.events = entry["events"][-len(ended):]
            self.events_decision = entry["decision"]
        if self.game.finished[0]:
            self.replay.finish(self.game, 0)

    def _play_agents(self) -> None:
        """The agents play until the human is to act or the game ends. An agent that fails
        (an internal error: the server offers only agents that can play these rules) is
        reported as a ``Refused`` with status 500 that names the agent and the kind of error,
        not its text, which may name the agent's legal actions and so cards of its hidden
        hand (the text goes to the server's log); the table then waits at its turn. Once
        the server is stopping (``stopping`` set) no agent starts another decision: a
        ``Refused`` 503 (a thread cannot be cancelled, and before, a stopped server ran on
        until every game's agents had played, 30 s for one 10-player deal of searches)."""
        while not self.game.finished[0]:
            p = int(self.game.state.current[0])
            if p == self.seat:
                return
            if self.stopping is not None and self.stopping.is_set():
                raise Refused(STOPPING, 503)
            try:
                a, thinking = act_one(self.agents[p], self.labels[p], self.game, self.rng)
            except Exception as exc:  # noqa: BLE001 - any agent failure is one message
                _log.error("table %s: agent %r (P%d) failed", self.id, self.labels[p], p,
                           exc_info=exc)
                raise Refused(f"agent {self.labels[p]!r} (P{p}) failed ({type(exc).__name__}; "
                              f"the server's log has its message)", 500) from None
            self._step(p, a, thinking)

    def act(self, action: Any, move: Any) -> None:
        """The human's decision: an action id or name, made on the view numbered ``move``."""
        if self.game.finished[0]:
            raise Refused("the game is over: no more decisions", 409)
        if int(self.game.state.current[0]) != self.seat:
            raise Refused(f"it is P{int(self.game.state.current[0])}'s turn, not yours", 409)
        if isinstance(move, bool) or not isinstance(move, int):
            raise Refused(f"move must be the integer number of the view the decision was made "
                          f"on; got {shown(move)}")
        if not 0 <= move <= self.move:   # a view the table never showed: not a stale one
            raise Refused(f"move {shown(move)}: no such view; allowed: the number of a view "
                          f"the table showed, 0 .. {self.move}")
        if move != self.move:
            raise Refused(f"stale decision: it was made on view {move}; the table is at "
                          f"view {self.move}: reload the table", 409)
        legal = [int(a) for a in np.flatnonzero(self.game.legal_mask()[0])]
        names = ", ".join(C.action_name(a) for a in legal)
        if isinstance(action, str):
            try:
                a = C.action_id(action)
            except ValueError as exc:
                raise Refused(f"{exc}; legal now: {names}") from None
        elif isinstance(action, int) and not isinstance(action, bool):
            if not 0 <= action < C.NUM_ACTIONS:
                raise Refused(f"action {shown(action, 40)} is out of range; allowed: 0 .. "
                              f"{C.NUM_ACTIONS - 1}; legal now: {names}")
            a = action
        else:
            raise Refused(f"action {shown(action, 40)}: give an action id or name; legal now: {names}")
        if a not in legal:   # with the reason the terminal gives (before: none)
            name = C.action_name(a)
            raise Refused(f"{name!r} is not legal now{why_not_legal(name, self.position, legal)}; "
                          f"legal now: {names}")
        self._step(self.seat, a, None)
        self.move += 1
        self._play_agents()

    # ---- what the browser sees ------------------------------------------------------
    def view(self) -> dict[str, Any]:
        """The table from the human's seat: nothing another seat hides."""
        d = self.position
        n = self.rules.num_players
        over = bool(self.game.finished[0])
        mine = d["current_player"] == self.seat and not over
        ids = [int(a) for a in np.flatnonzero(self.game.legal_mask()[0])] if mine else []
        # each with what it does where that needs saying, as the terminal game lists them
        legal = [{"id": a, "name": C.action_name(a), "hint": option_hint(a, d, ids)} for a in ids]
        players = [{"seat": q, "label": self.labels[q], "cards": len(d["hands"][q]),
                    "called": bool(d["called"][q]), "dealer": q == d["dealer"],
                    "catchable": catch_succeeds(d, q),
                    "you": q == self.seat}
                   for q in range(n)]
        history = list(self.history)
        if not self.show_thinking:
            history = [{**h, "thinking": None} for h in history]
        elif not over and self.thinking_from is not None:   # switched on during play: from
            # then on (before: the earlier decisions' too, which the replay's source left out)
            history = [h if h["decision"] >= self.thinking_from else {**h, "thinking": None}
                       for h in history]
        result = None
        if over:   # the game is over: every hand may be shown
            result = {"winners": game_winners(d), "truncated": bool(d["truncated"] and not d["terminated"]),
                      "scores": d["scores"], "hands": d["hands"],
                      # a penalty-scored match, won by the lowest total: the page says so
                      "lowest_total": won_on_lowest_total(self.rules.scoring,
                                                          self.rules.target_score)}
        return {
            "id": self.id, "move": self.move, "seat": self.seat,
            "seed": self.seed if self.seed_chosen or over else None,
            "rules": self.rules.to_dict(), "rules_title": self.rules.title, "players": players,
            "hand": d["hands"][self.seat],
            "top": d["discard"][-1], "color": d["color"], "direction": d["direction"],
            "phase": d["phase"], "pending_draw": d["pending_draw"],
            "drawn_card": d["drawn_card"] if d["current_player"] == self.seat else None,
            "current": d["current_player"], "stock": len(d["stock"]),
            "discard": len(d["discard"]), "round": d["round"], "scores": d["scores"],
            "match": bool(self.rules.target_score), "legal": legal, "history": history,
            "events": list(self.events), "events_decision": self.events_decision,
            "thinking": self.show_thinking, "finished": over,
            "deal": self.deal if len(self.replay.actions) <= HISTORY else [],   # the log's oldest
            "result": result, "decisions": len(self.replay.actions),
            "rules_text": describe_rules(self.rules),
            "rules_summary": preset_summary(self.rules),
        }


class Tables:
    """The games of one server, by id: at most ``limit``. A new game beyond that takes the
    place of a game no request is working on and none has touched for a while: a finished
    game after ``finished_seconds`` (time to look at the end and save its replay) first, the
    least recently used first, else a game in play after ``idle_seconds``. Where no game may
    go the new game is refused (503) before its deal, once the request is checked (bad input
    is refused as such first), and a refused request (bad input, a deal that fails) drops
    nothing: no client's new games drop another's game in play, but for a client that
    holds at least two more games than it (below) (before: the least recently used went,
    and 200 new games of one client dropped every other game). A client (its address, where
    a request gives one) holds at most ``per_client`` games (default a quarter of
    ``limit``, at least 1): its new game beyond that takes the place of its own least
    recently used game that no request is working on (before, one client's 200 games,
    kept alive by polling them, refused every other client's new game). Where no game
    rests, a client's new game takes the place of the least recently used game no request
    is working on of an address that holds at least two more games than this client, the
    one that holds the most first (see ``_fair``; before, four addresses that held
    their quarters refused every other client); a request without an address takes none
    so. ``clock``: seconds (``time.monotonic``)."""

    def __init__(self, limit: int = MAX_TABLES, idle_seconds: float = IDLE_SECONDS,
                 finished_seconds: float = FINISHED_SECONDS,
                 clock: Any = time.monotonic, per_client: int | None = None) -> None:
        self.limit = limit
        self.per_client = max(1, limit // 4) if per_client is None else per_client
        self._client: dict[str, str | None] = {}   # each game's client (its address)
        self.idle_seconds = idle_seconds
        self.finished_seconds = finished_seconds
        self.clock = clock
        self._tables: OrderedDict[str, Table] = OrderedDict()
        self._used: dict[str, float] = {}
        self._busy: dict[str, int] = {}   # requests at work on a game: it is not dropped
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        """Set when the server stops: its games' agents start no other decision."""

    def _victim(self) -> str | None:
        """A game that may make room (see the class), or None. Holds the lock."""
        now = self.clock()
        rest = [k for k in self._tables if not self._busy.get(k)]   # least recently used first
        return next((k for k in rest if self._tables[k].game.finished[0]
                     and now - self._used[k] >= self.finished_seconds),
                    next((k for k in rest if now - self._used[k] >= self.idle_seconds), None))

    def _fair(self, client: str | None, held: int) -> str | None:
        """Where no game rests (``_victim`` finds none), the least recently used game no
        request is working on of a client address that holds at least two more games than
        ``client`` (which holds ``held``), the address that holds the most first (the next
        where each of its games has a request at work on it; of equals, the one whose
        oldest game is oldest), or None (for a request without an address too): several
        addresses that fill the server by their quarters, polling their games, cannot
        refuse every other client (before: four did). Holds the lock."""
        if client is None:
            return None
        counts = Counter(c for c in self._client.values() if c is not None and c != client)
        for other, count in counts.most_common():
            if count < held + 2:
                return None
            free = [k for k in self._mine(other) if not self._busy.get(k)]
            if free:
                return free[0]
        return None

    def _refuse(self) -> Refused:
        return Refused(f"the server holds its {self.limit} games, each in use in the last "
                       f"{self.idle_seconds / 60:g} minutes or finished in the last "
                       f"{self.finished_seconds / 60:g}; allowed: a new game once one of them "
                       f"has rested that long", 503)

    def _mine(self, client: str | None) -> list[str]:
        """The games of ``client``, least recently used first (none for no address). Holds
        the lock."""
        return [] if client is None else [k for k in self._tables if self._client.get(k) == client]

    def _own(self, mine: list[str]) -> list[str]:
        """Of a client's games ``mine`` (:meth:`_mine`), those no request is working on,
        where it holds its ``per_client`` already (else none). Holds the lock."""
        if len(mine) < self.per_client:
            return []
        return [k for k in mine if not self._busy.get(k)]

    def _refuse_own(self) -> Refused:
        return Refused(f"this client holds its {self.per_client} games, each with a request at "
                       f"work on it; allowed: a new game once one of them is answered", 503)

    def new(self, rules: RuleSet, seat: int, agents: Sequence[str], seed: int | None,
            agent_factory: Any, thinking: bool = False, client: str | None = None,
            gone: threading.Event | None = None) -> Table:
        request = NewGameRequest(rules, seat, agents, seed, agent_factory, thinking)   # bad input first
        with self._lock:   # refused before the deal's work where no game may go; nothing dropped
            mine = self._mine(client)
            held = len(mine) >= self.per_client
            if held and not self._own(mine):
                raise self._refuse_own()
            if not held and len(self._tables) >= self.limit and self._victim() is None \
                    and self._fair(client, len(mine)) is None:
                raise self._refuse()
        table = Table(secrets.token_hex(8), rules, seat, agents, seed, agent_factory, thinking,
                      request, self.stopping)
        with self._lock:   # the table is dealt: now make room (others may have come meanwhile)
            if gone is not None and gone.is_set():   # its client hung up while its agents
                # played: nothing dropped for it, and not kept (before: kept, a game nobody
                # knows of, holding a place and one of its address's for IDLE_SECONDS)
                raise Refused(DEALT_GONE, 499)
            while True:
                mine = self._mine(client)
                own = self._own(mine)
                if own:   # the client's own least recently used game makes room
                    self._drop(own[0])
                    continue
                if len(mine) >= self.per_client:
                    raise self._refuse_own()
                if len(self._tables) < self.limit:
                    break
                victim = self._victim() or self._fair(client, len(mine))
                if victim is None:
                    raise self._refuse()
                self._drop(victim)
            self._tables[table.id] = table
            self._used[table.id] = self.clock()
            self._client[table.id] = client
        return table

    def discard(self, table_id: str) -> None:
        """Forget a game whose client hung up as it was dealt (:meth:`new` checks before it
        keeps the game; this, after), if it is still kept."""
        with self._lock:
            if table_id in self._tables:
                self._drop(table_id)

    def _drop(self, table_id: str) -> None:
        """Forget a game. Holds the lock."""
        del self._tables[table_id], self._used[table_id]
        self._client.pop(table_id, None)

    def get(self, table_id: Any) -> Table:
        with self._lock:
            table = self._tables.get(table_id) if isinstance(table_id, str) else None
            if table is None:
                raise Refused(f"no game {shown(table_id, 40)}: it never existed or was dropped "
                              f"(the server keeps {self.limit} games: a finished one after "
                              f"{self.finished_seconds / 60:g} minutes, or one untouched for "
                              f"{self.idle_seconds / 60:g}, makes room for a new one; and "
                              f"{self.per_client} of one client address, whose new game beyond "
                              f"them takes the place of its own least recently used; and where "
                              f"none has rested, a new game takes the place of the least "
                              f"recently used of an address that holds at least two more games "
                              f"than its client)", 404)
            self._touch(table_id)
            return table

    def _touch(self, table_id: str) -> None:
        """The game is used now (the least recently used order, and its time). Holds the lock."""
        self._tables.move_to_end(table_id)
        self._used[table_id] = self.clock()

    def hold(self, table_id: str) -> None:
        """A request starts work on the game: it is not dropped until :meth:`release`."""
        with self._lock:
            self._busy[table_id] = self._busy.get(table_id, 0) + 1

    def release(self, table_id: str) -> None:
        """A request's work on the game ended: it counts as used now."""
        with self._lock:
            left = self._busy.get(table_id, 0) - 1
            if left > 0:
                self._busy[table_id] = left
            else:
                self._busy.pop(table_id, None)
            if table_id in self._tables:
                self._touch(table_id)

    def ids(self) -> set[str]:
        """The ids of the games kept."""
        with self._lock:
            return set(self._tables)

    def __len__(self) -> int:
        return len(self._tables)


WEB_MAX_BUDGET = 512
"""The most worlds (pimc, oracle) or iterations (ismcts) per decision a browser may ask of a
search agent (``name:N``)."""
WEB_MAX_MS = 1000.0
"""The longest time budget per decision a browser may ask (``name:<T>ms``)."""
WEB_SEARCH_CAP_MS = 5000.0
"""The longest a budget of worlds (``name:N``) searches per decision at the web table: its
worlds run in batches until they are all run or this time is spent (at least one world)."""
_SEARCH_LABEL = re.compile(r"([a-z-]{1,40})(?::((?:0|[1-9][0-9]{0,8})(?:(?:\.[0-9]{1,6})?ms)?))?")
"""A search label: a name, and a budget of worlds or milliseconds written without a leading
zero (before, ``pimc:01`` passed here and was refused by the agent's own parser with a message
naming its limits, not the server's)."""


def json_bool(name: str, value: Any) -> bool:
    """``value`` when it is a JSON boolean, else one ``Refused`` in JSON's words (before:
    "allowed: True or False", Python's)."""
    if not isinstance(value, bool):
        raise Refused(f"{name}={shown(value, 80)} ({type(value).__name__}); allowed: true or false")
    return value


def _budget_fault(text: str) -> str:
    """What is wrong with a search label's budget that :data:`_SEARCH_LABEL` refused."""
    number = re.fullmatch(r"([0-9]+)(\.([0-9]+))?(ms)?", text)
    if number is None or (number.group(2) and not number.group(4)):
        return "is not a whole number of worlds or a time in ms"
    if len(number.group(1)) > 1 and number.group(1).startswith("0"):
        return "has a leading zero"
    if number.group(3) and len(number.group(3)) > 6:
        return "has more than 6 decimals"
    return "is past this server's limit"


def search_label(label: str) -> tuple[str, str | None]:
    """``(name, budget)`` of a search agent label from a browser: a search agent's name,
    alone or with a budget within the server's limits (:data:`WEB_MAX_BUDGET` worlds or
    iterations, :data:`WEB_MAX_MS` milliseconds per decision); anything else, a path
    included, is ``Refused``. A label is a name, never a path."""
    allowed = (f"a search agent ({', '.join(SEARCH_AGENTS)}), alone or as name:N (N from 1 to "
               f"{WEB_MAX_BUDGET}) or name:<T>ms (T above 0 and at most {WEB_MAX_MS:g}), "
               f"numbers written without a leading zero")
    m = _SEARCH_LABEL.fullmatch(label)
    name, _, text = label.partition(":")
    if m is None and name in SEARCH_AGENTS:   # before: "not a search agent label", for
        # pimc:1.5 or pimc:-1
        raise Refused(f"agent {shown(label, 60)}: the budget {_budget_fault(text)}; allowed: "
                      f"{allowed}")
    if m is None or m.group(1) not in SEARCH_AGENTS:
        raise Refused(f"agent {shown(label, 60)}: not a search agent label; allowed: {allowed}")
    budget = m.group(2)
    if budget is not None:
        value = float(budget[:-2]) if budget.endswith("ms") else int(budget)
        bound = WEB_MAX_MS if budget.endswith("ms") else WEB_MAX_BUDGET
        if not 0 < value <= bound:
            why = "is past this server's limit" if value > bound else "must be above 0"
            raise Refused(f"agent {shown(label, 60)}: the budget {why}; allowed: {allowed}")
    return m.group(1), budget


def fits(meta: Mapping[str, Any] | None, rules: RuleSet) -> str | None:
    """Why a model (its metadata; None: an agent that plays any rules) cannot play ``rules``,
    or None when it can. The reason names no file, and what to choose at the web table: a
    model trained for another player count is told in the table's own words, where
    ``check_compatible``'s name the terminal's (before: "num_players=4; ono-arena --players
    4; ono-play with 3 agents for the other seats")."""
    if meta is None:
        return None
    from ono_env.agents.learned import check_compatible, check_playable
    try:
        check_compatible(dict(meta), rules, "this model")
    except ValueError as exc:
        try:
            check_playable(dict(meta), "this model")   # under no rules: said as it is
        except ValueError:
            return str(exc)
        trained = RuleSet.from_dict(meta["rules"]) if meta.get("observation_version") == 1 \
            else None
        if trained is None or trained.num_players == rules.num_players:
            return str(exc)
        t = trained.num_players
        differ = trained.differing_fields(rules, skip=("name", "num_players"))
        named = first_few(differ, 4)
        too = f", and its rules differ from this table's ({named})" if differ else ""
        return (f"this model: trained for {t} players, asked to play {rules.num_players} (the "
                f"table's player count){too}; allowed: a table of {t} players under its "
                f"{trained.title} (choose {t} players{' and those rules' if differ else ''}); "
                f"or ppo-any, which plays every rule set at 2-10 players")
    return None


def fitting_agents(rules: RuleSet, allowed: Mapping[str, Any],
                   models: Mapping[str, Any] | None = None) -> list[str]:
    """The ``allowed`` labels that can sit at a table of ``rules`` (``models``: the metadata
    of those that are model files, :func:`fits`)."""
    return [a for a in allowed if fits((models or {}).get(a), rules) is None]


def agents_allowed(rules: RuleSet, allowed: Mapping[str, Any],
                   models: Mapping[str, Any] | None = None) -> str:
    """The agents that may sit at a table of ``rules``, as a refusal lists them: those that
    fit it, and every search agent (before: every allowed label, those trained for other
    tables too, and no search agent)."""
    return (f"{', '.join(fitting_agents(rules, allowed, models))}, or a search agent "
            f"({', '.join(SEARCH_AGENTS)}), alone or as name:N or name:<T>ms")


def default_agent_factory(rules: RuleSet, allowed: Mapping[str, Any],
                          models: Mapping[str, Any] | None = None) -> Any:
    """Builds agents only from ``allowed`` labels (registered names, and the model files the
    server was started with, by label) and search agent names (``pimc``, ``pimc:N``, ...): a
    label from the browser never opens a path. ``models``: the metadata of the labels that
    are model files; one that does not fit ``rules`` is refused with the reason, naming its
    label and no path. A model file's label that starts as a search agent's does
    (``pimc:8.safetensors``) names that file (before: refused as no search agent label)."""
    def build(label: Any) -> Any:
        if isinstance(label, str) and label.partition(":")[0] in SEARCH_AGENTS \
                and label not in (models or {}):
            base, arg = search_label(label)
            try:
                agent = SEARCH_AGENTS[base](rules, arg)
            except ValueError as exc:
                raise Refused(f"agent {shown(label, 60)}: {exc}") from None
            if agent.time_ms is None:   # a budget of worlds: cut at WEB_SEARCH_CAP_MS (before:
                # pimc-ppo-playout:512 took minutes a decision under 100-card hands)
                agent.time_cap_ms = WEB_SEARCH_CAP_MS
            return agent
        if isinstance(label, str) and models is not None and label in models:
            why = fits(models[label], rules)
            if why is not None:
                raise Refused(f"agent {label!r} cannot sit at this table: {why}")
        if not isinstance(label, str) or label not in allowed:
            raise Refused(f"unknown agent {shown(label, 60)}; allowed: "
                          f"{agents_allowed(rules, allowed, models)}")
        try:
            return make_agent(allowed[label], rules)
        except ValueError as exc:   # the message may name the file: the browser gets none
            text = str(exc).replace(repr(str(allowed[label])), repr(label)).replace(
                str(allowed[label]), label)
            raise Refused(f"agent {label!r}: {text}") from None
    return build
