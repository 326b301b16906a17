"""The benchmark suite: fixed tables, fixed deals and a fixed reference field per table, on a
published scale, versioned (``ono-bench``; docs/benchmark.md).

.. code-block:: python

    from ono_env.arena.suite import bench_agent, format_card
    card = bench_agent("greedy", tables=["basic-2p"], deals=200, slow_deals=4)
    print(format_card(card))

A suite version is one file, ``configs/bench/suite-<version>.yaml``: the tables (a preset
and a player count), the seed their deals come from, the batch size the deals are cut into,
the reference field and the deal counts. The published ladder of a version,
``configs/bench/ladder-<version>.json``, holds the reference field's ratings per table (from
the field's games against itself, :func:`play_ladder`) and the SHA-256 of every learned
reference agent's model file: under that version a changed file is refused, so a number
measured on version 1 always means the same opponents.

How an agent is measured
    At a table the agent meets each reference agent alone: the agent in one seat and the
    reference agent in every other seat, each deal of the table played once with the agent
    in each seat (2 players: twice, seats swapped; 4 players: four times; the other seats'
    cards are the same in every seating). The deals are the first ``deals`` of the table's
    stream, whatever the agent: deal ``k`` is dealt from the table's seed (the suite's seed
    and the table's name), cut in batches of ``batch_size``. The agent's share of a deal is
    its mean share of the wins over the deal's games (a game cut at the rules' decision limit
    is a tie, ``1 / players`` each); the win rate (2 players) or win share (4 players, fair
    share 25%) is the mean over deals with the arena's 95% interval over deals
    (:func:`ono_env.arena.stats.bounded_mean_interval`).

The scale
    Ratings are on the Elo scale of a Luce model of the winner: at a table of agents with
    strengths ``g``, agent ``i`` wins with probability ``g_i / sum(g)``, and a rating is
    ``400 log10 g`` (for two players, Bradley-Terry: 400 points is 10 to 1). The reference
    field's ratings are fitted to its own results and anchored at ``greedy`` = 1000 at every
    table of every version. A new agent is placed on that scale with the field held fixed
    (one maximum-likelihood parameter, :func:`place_agent`), so placing an agent never moves
    the published numbers. Its interval comes from the likelihood's curvature (the games
    taken as independent and the field's ratings as exact).
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import sys
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

import ono_env
from ono_env.agents.base import Agent, is_cheating, marked
from ono_env.agents.learned import model_label, model_sha256, played_models, shipped_models
from ono_env.agents.registry import (
    agent_from_class,
    agent_names,
    is_builtin_name,
    is_class_spec,
    is_model_path,
    make_agent,
)
from ono_env.arena import check_workers_memory
from ono_env.arena.distributed import check_ray_address, held_ray, play_on_ray
from ono_env.arena.play import _derive, _seating_seed, end_workers, games_bar, play_games, rotations
from ono_env.arena.stats import (
    ELO,
    Z95,
    bounded_interval_of,
    bounded_mean_interval,
    percent_interval,
    stalled,
)
from ono_env.checks import (
    JSONError,
    check_input_file,
    check_text,
    is_decimal,
    is_int,
    is_real,
    is_sha256,
    notes_text,
    parse_json,
    shown,
)
from ono_env.rules import MAX_PLAYERS, MIN_PLAYERS, PRESETS, RuleSet, check_rule_set, resolve_rules

CARD_FORMAT = "ono-bench-card"
"""The ``format`` of a result card that ``ono-bench`` writes and :func:`read_card` reads."""
CARD_FORMAT_VERSION = 1
"""The ``format_version`` of the result cards written today (:func:`read_card` reads it)."""
MAX_CARD_BYTES = 4_000_000
"""The largest result card :func:`read_card` reads (a whole suite's card is about 20 kB)."""
MAX_DEALS = 1_000_000
"""The most deals per pairing an ``ono-bench`` run may ask for."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


Count = Annotated[int, Field(ge=1, le=MAX_DEALS)]


class _TableSpec(_Strict):
    rules: str
    players: Annotated[int, Field(ge=2, le=10)]
    specialists: list[str]
    deals: Count
    slow_deals: Count
    ladder_deals: Count
    ladder_slow_deals: Count


class _Anchor(_Strict):
    agent: str
    rating: float


class _SuiteSpec(_Strict):
    version: Annotated[int, Field(ge=1)]
    seed: Annotated[int, Field(ge=0, lt=2 ** 63)]
    batch_size: Annotated[int, Field(ge=1, le=1_000_000)]
    anchor: _Anchor
    field: list[str]
    search: str
    ceilings: list[str]
    ladder_slow_anchors: list[str] = ["greedy", "ppo-any"]
    tables: dict[str, _TableSpec]


@dataclass(frozen=True)
class Reference:
    """One reference agent of a table: its name, whether it is slow (the search agent and the
    ceilings play fewer deals) and whether it cheats (sees hidden cards)."""
    name: str
    slow: bool
    cheating: bool


@dataclass(frozen=True)
class SuiteTable:
    """One table of a suite: a preset at a player count, its deals' seed and its field."""
    name: str
    preset: str
    players: int
    seed: int
    field: tuple[Reference, ...]
    deals: int
    slow_deals: int
    ladder_deals: int
    ladder_slow_deals: int

    @property
    def rules(self) -> RuleSet:
        return resolve_rules(self.preset, num_players=self.players)

    def names(self) -> list[str]:
        return [r.name for r in self.field]

    def reference(self, name: str) -> Reference:
        """The field's reference agent called ``name``; one ``ValueError`` naming the field
        for any other (before: a bare ``StopIteration``)."""
        for r in self.field:
            if r.name == name:
                return r
        raise ValueError(f"table {self.name} has no reference {shown(name, 60)}; its field: "
                         f"{', '.join(r.name for r in self.field)}")


@dataclass(frozen=True)
class Suite:
    """A suite version: its tables, the batch size of the deals and the anchor of the scale."""
    version: int
    seed: int
    batch_size: int
    anchor: str
    anchor_rating: float
    tables: dict[str, SuiteTable]
    path: Path
    ladder_slow_anchors: tuple[str, ...] = ("greedy", "ppo-any")
    """Whom the search agent and the ceilings play in the published ladder."""


def suite_versions() -> list[int]:
    """The suite versions shipped with the package (``configs/bench/suite-<n>.yaml``)."""
    from ono_env.configs import config_names

    out = []
    for name in config_names("bench"):
        stem, _, number = name.partition("-")
        if stem == "suite" and number.isascii() and number.isdigit():
            out.append(int(number))
    return sorted(out)


LATEST = "latest"
"""The suite version that names the newest one (``--suite latest``, ``version=LATEST``)."""


def load_suite(version: int | str = LATEST) -> Suite:
    """The suite ``version`` (an integer, or ``"latest"``); ``ValueError`` naming the versions
    there are when there is no such version."""
    from ono_env.configs import config_file

    versions = suite_versions()
    if version == LATEST:
        version = versions[-1]
    if is_decimal(version):   # ASCII digits, no leading zero ('01', '²' stay text: refused)
        version = int(version)
    if isinstance(version, bool) or not isinstance(version, int) or version not in versions:
        raise ValueError(f"unknown suite version {shown(version, 40)}; there are: "
                         f"{', '.join(map(str, versions))} (or {LATEST})")
    path = config_file("bench", f"suite-{version}")
    assert path is not None
    try:
        spec = _SuiteSpec.model_validate(yaml.safe_load(path.read_text()))
    except (ValidationError, yaml.YAMLError) as exc:   # a shipped file: a packaging fault
        raise ValueError(f"{path}: not a valid suite ({exc})") from None
    if spec.version != version:
        raise ValueError(f"{path} says version {spec.version}, its name {version}")
    tables = {}
    for name, t in spec.tables.items():
        if t.rules not in PRESETS:
            raise ValueError(f"{path}: table {name}: rules {t.rules!r} is not a preset")
        field = [Reference(n, False, False) for n in [*spec.field, *t.specialists]]
        field.append(Reference(spec.search, True, False))
        field += [Reference(n, True, True) for n in spec.ceilings]
        tables[name] = SuiteTable(name, t.rules, t.players,
                                  _derive(spec.seed, zlib.crc32(name.encode())), tuple(field),
                                  t.deals, t.slow_deals, t.ladder_deals, t.ladder_slow_deals)
    for name in spec.ladder_slow_anchors:
        if name not in spec.field:
            raise ValueError(f"{path}: ladder_slow_anchors: {name!r} is not in the field")
    return Suite(spec.version, spec.seed, spec.batch_size, spec.anchor.agent, spec.anchor.rating,
                 tables, path, tuple(spec.ladder_slow_anchors))


def select_tables(suite: Suite, names: Sequence[str] | None) -> list[SuiteTable]:
    """The suite's tables named (all when ``names`` is None or empty), in the suite's order;
    ``ValueError`` naming the tables there are for an unknown name, or for one name given
    as text (before, ``"basic-2p"`` was read letter by letter, and ``""`` as every table)."""
    if isinstance(names, str):
        raise ValueError(f"tables={shown(names, 60)} (str); allowed: a list or tuple of table names "
                         f"(tables=[{shown(names, 40)}]), or None for every table")
    if names is not None:   # read once: an iterator (before: used up by the first check)
        try:
            names = list(names)
        except TypeError:
            raise ValueError(f"tables={shown(names, 60)} ({type(names).__name__}); allowed: a "
                             f"list or tuple of table names, or None for every table") from None
    if not names:
        return list(suite.tables.values())
    # a name that is no text is unknown too (before: a list was "unhashable", a TypeError)
    unknown = [n for n in names if not isinstance(n, str) or n not in suite.tables]
    if unknown:
        raise ValueError(f"suite version {suite.version} has no table {shown(unknown[0], 60)}; its tables: "
                         f"{', '.join(suite.tables)}")
    twice = [n for k, n in enumerate(names) if n in names[:k]]
    if twice:
        raise ValueError(f"table {twice[0]!r} is named twice; allowed: each table once")
    return [t for n, t in suite.tables.items() if n in names]


# ---------------------------------------------------------------- the published ladder


def ladder_path(version: int) -> Path:
    from ono_env.configs import data_file

    return data_file("bench", f"ladder-{version}.json")


def read_ladder(suite: Suite) -> dict[str, Any]:
    """The published ladder of ``suite`` (``configs/bench/ladder-<version>.json``): per table
    the field's ratings, and the SHA-256 of each learned reference agent's model file."""
    import json

    if not isinstance(suite, Suite):   # before: "'str' object has no attribute 'version'"
        raise ValueError(f"read_ladder: suite={shown(suite, 40)} ({type(suite).__name__}); "
                         f"allowed: a Suite (load_suite(version))")
    path = ladder_path(suite.version)
    try:
        data = json.loads(path.read_text())
        data["tables"], data["models"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"suite version {suite.version} has no published ladder ({path}: "
                         f"{exc}); make it with benchmarks/bench_suite.py ladder") from None
    return data


def field_models(tables: Sequence[SuiteTable]) -> dict[str, str]:
    """The SHA-256 of the model file of every shipped policy in the tables' fields."""
    shipped = shipped_models()
    names = sorted({r.name for t in tables for r in t.field if r.name in shipped})
    return {n: model_sha256(shipped[n]) for n in names}


def check_field(suite: Suite, tables: Sequence[SuiteTable], ladder: dict[str, Any]) -> None:
    """``ValueError`` when a table has no published ratings, or a learned reference agent's
    model file is not the one the ladder of this version was measured with."""
    for t in tables:
        if t.name not in ladder["tables"]:
            raise ValueError(f"the published ladder of suite version {suite.version} has no "
                             f"table {t.name}")
    latest = max(suite_versions())
    later = ("" if suite.version >= latest else
             f"; version {latest} is measured with the shipped files (an earlier version needs "
             f"the release of the package that shipped its files)")
    for name, sha in field_models(tables).items():
        if ladder["models"].get(name) != sha:
            raise ValueError(f"reference agent {name}: its model file is not the one suite version "
                             f"{suite.version} was published with (SHA-256 "
                             f"{str(ladder['models'].get(name))[:12]}...): a changed reference "
                             f"field makes a new suite version" + later)


# ---------------------------------------------------------------- playing


def play_pairing(rules: RuleSet, agent: Agent, reference: Agent, deals: int, seed: int,
                 batch_size: int, *, ray_address: str | None = None,
                 progress: Any = None) -> dict[str, Any]:
    """The agent in one seat, ``reference`` in every other, each of ``deals`` deals played
    once with the agent in each seat. Returns the agent's mean share of the wins over deals
    with its 95% interval, the games, the games without a winner, and ``wins`` (the agent's
    total share of the wins, for the ratings)."""
    P = check_rule_set("play_pairing", rules).num_players
    orders = rotations(P)   # the agent (member 0) in seat (P - r) % P, the reference elsewhere
    member = (0,) + (1,) * (P - 1)
    if ray_address is not None:
        nodes: dict[str, int] = {}
        parts = play_on_ray(ray_address, rules, [agent, reference], [member], orders, deals,
                            seed, batch_size, None, progress, nodes, mirrored=True)
        outs = [(p[1], p[4]) for p in parts]
    else:
        outs = []
        for o, order in enumerate(orders):
            seated = [member[k] for k in order]
            w, _s, _len, trunc = play_games(rules, [agent if e == 0 else reference for e in seated],
                                            deals, _seating_seed(seed, 0, o, True),
                                            batch_size=batch_size, progress=progress)
            outs.append((w, trunc))
    share = np.zeros(deals)
    no_winner = 0
    for o, (w, trunc) in enumerate(outs):
        seat = (P - o) % P
        share += np.where(trunc, 1.0 / P, w[:, seat])
        no_winner += int(trunc.sum())
    share /= P
    mean, low, high = bounded_mean_interval(share, 0.0, 1.0, P)   # a deal: P games
    return {"deals": deals, "games": deals * P, "rate": mean, "low": low, "high": high,
            "wins": float(share.sum() * P), "no_winner": no_winner}


# ---------------------------------------------------------------- ratings


LADDER_INTERVAL = "add-two-games"
"""A ladder record's ``interval``: its ``low`` and ``high`` are
:func:`~ono_env.arena.stats.bounded_mean_interval`'s, two games added at each bound (since
2026-12-07). ``"add-two"`` (2026-12-02 to 12-06): two deals added at each bound. A record
without it (written before 2026-12-02) holds the plain normal interval over its deals,
clipped to [0, 1]."""
ADD_TWO_DEALS = "add-two"
"""The ``interval`` of a ladder record of 2026-12-02 to 12-06 (two deals added at each
bound)."""


def with_todays_interval(rec: dict[str, Any]) -> dict[str, Any]:
    """A ladder record (``rate``, ``low``, ``high``, ``deals``; ``games`` or ``players``,
    from which its games per deal) with today's interval: as it is where ``interval`` says
    :data:`LADDER_INTERVAL`, else computed again from the interval it holds, the plain normal
    one or (:data:`ADD_TWO_DEALS`) the one with two deals added at each bound. Either
    interval's half-width gives the deals' spread (the plain one's ``sd = half *
    sqrt(deals) / z``; the other's with its four deals taken out again by formula), and the
    spread, mean and count give :func:`~ono_env.arena.stats.bounded_mean_interval`'s result
    exactly (the same numbers as from the per-deal shares, which a record does not keep).
    ``ValueError`` where the interval was clipped at both ends (its half-width is then
    lost)."""
    if rec.get("interval") == LADDER_INTERVAL:
        return rec
    m, lo, hi, n = float(rec["rate"]), float(rec["low"]), float(rec["high"]), int(rec["deals"])
    deals_added = rec.get("interval") == ADD_TWO_DEALS
    # the centre the interval was taken around: the four deals' mean moved it
    centre = (n * m + 2.0) / (n + 4) if deals_added else m
    if lo > 0.0:
        half = centre - lo
    elif hi < 1.0:
        half = hi - centre
    elif m in (0.0, 1.0) and not deals_added:
        half = 0.0          # every deal at the bound: no spread
    else:
        raise ValueError(f"a pairing of {rec.get('agent')!r} against {rec.get('reference')!r}: "
                         f"its interval [{lo}, {hi}] is clipped at both ends")
    if deals_added:   # bounded_interval_of's sum with two deals at 0 and 1, taken out again
        ss = ((half / Z95) ** 2 * (n + 3) * (n + 4) - n * (m - centre) ** 2
              - 2 * centre ** 2 - 2 * (1.0 - centre) ** 2)
        ss = max(0.0, ss)   # a rounding error below 0 where every deal was alike
    else:
        ss = (half * math.sqrt(n) / Z95) ** 2 * (n - 1) if n > 1 else 0.0
    games: Any = rec.get("games")
    players: Any = rec.get("players")
    whole = is_int(games) or (is_real(games) and float(games).is_integer())
    if whole and n >= 1 and games >= n:   # 4000.0 too, as a hand may write it
        per_deal = games / n
    elif is_int(players) and players >= 2:
        per_deal = players   # the suite's pairings: a deal's rotations
    else:   # before: one game a deal taken, the interval of two deals at each end
        raise ValueError(f"a pairing of {rec.get('agent')!r} against {rec.get('reference')!r}: "
                         f"its games per deal are not known (games {shown(games, 40)}, deals "
                         f"{n}, players {shown(players, 40)}); allowed: a record with games of "
                         f"at least its deals (one or more), or its players")
    low, high = bounded_interval_of(m, ss, n, 0.0, 1.0, per_deal)
    return {**rec, "low": low, "high": high, "interval": LADDER_INTERVAL}


def _counts(records: Sequence[dict[str, Any]], names: Any,
            needs: tuple[str, ...] = ("reference",)) -> tuple[np.ndarray, np.ndarray]:
    """``(games, wins)`` of pairing ``records`` as floats, once every record is a mapping
    with the keys ``needs``, names agents of ``names`` and holds finite counts with ``0 <=
    wins <= games``; else one ``ValueError`` naming the pairing (before: NaN or too many
    wins were a ZeroDivisionError or "no convergence", negative wins a rating of -68,410, an
    unknown name or a missing key a bare KeyError)."""
    for r in records:
        if not isinstance(r, Mapping):
            raise ValueError(f"a pairing is {shown(r, 60)}; allowed: a mapping with "
                             f"{', '.join(needs)}, games and wins")
        who = f"pairing of {r.get('agent', 'the agent')!r} against {r.get('reference')!r}"
        missing = [k for k in needs if k not in r]
        if missing:
            raise ValueError(f"{who}: no {', '.join(missing)}; allowed: a pairing with "
                             f"{', '.join(needs)}, games and wins")
        if "players" in needs and not (is_int(r["players"])
                                       and MIN_PLAYERS <= r["players"] <= MAX_PLAYERS):
            raise ValueError(f"{who}: players {shown(r['players'], 40)}; allowed: "
                             f"{MIN_PLAYERS} to {MAX_PLAYERS}")
        for key in ("agent", "reference"):
            if key in r and r[key] not in names:
                raise ValueError(f"{who}: {key} {r[key]!r} is not in the field; allowed: "
                                 f"{', '.join(map(repr, names))}")
        games: Any = r.get("games")
        wins: Any = r.get("wins")
        if not (is_real(games) and is_real(wins) and math.isfinite(games)
                and math.isfinite(wins) and 0 <= wins <= games):
            raise ValueError(f"{who}: games {shown(games, 40)}, wins {shown(wins, 40)}; "
                             f"allowed: finite counts with 0 <= wins <= games")
    return (np.array([r["games"] for r in records], np.float64),
            np.array([r["wins"] for r in records], np.float64))


def _luce_terms(records: Sequence[dict[str, Any]], index: dict[str, int]):
    """Per record: the agent's index, the reference's index, its multiplicity (players - 1),
    the games and the agent's wins."""
    n, w = _counts(records, index, ("agent", "reference", "players"))
    a = np.array([index[r["agent"]] for r in records], np.int64)
    b = np.array([index[r["reference"]] for r in records], np.int64)
    m = np.array([r["players"] - 1 for r in records], np.float64)
    return a, b, m, n, w


def fit_ratings(names: Sequence[str], records: Sequence[dict[str, Any]], anchor: str,
                anchor_rating: float, iters: int = 200) -> dict[str, dict[str, float]]:
    """The reference field's ratings from its pairings: maximum likelihood of the Luce model
    of the winner with ``anchor`` held at ``anchor_rating``. A record is one pairing:
    ``agent`` in one seat, ``reference`` in the other ``players - 1``, ``games`` games and
    the agent's total share of the wins ``wins``. Every agent also gets one virtual game
    against the anchor, half won, so that an agent that never wins (``random`` in a
    500-point match) or always wins keeps a finite rating. Returns ``{name: {rating, low,
    high}}``, the interval from the inverse of the likelihood's curvature with the anchor
    fixed.

    The fit is Newton's method on the log strengths of every agent but the anchor (the
    log-likelihood is concave there, and strictly so with the virtual games), each step
    at most 2 (a factor of e**2) in any agent, until no agent moves by 1e-10 or the steps
    stall at the likelihood's rounding (:func:`~ono_env.arena.stats.stalled`, the
    likelihood's size taken as its games'); ``ValueError`` if ``iters`` steps do not get
    there. (Hunter's MM algorithm, used before, took thousands of steps for an agent that
    wins nearly every game and stopped short of the maximum there: 140 rating points for a
    cheating ceiling.)

    Written here rather than taken from a library (``choix`` fits Luce models): a record here
    is a count of games with fractional (shared) wins at tables of several copies of one
    agent, and :func:`place_agent` must place a new agent with the field held fixed."""
    index = {n: i for i, n in enumerate(names)}
    if anchor not in index:   # before: a bare KeyError
        raise ValueError(f"anchor {shown(anchor, 60)} is not in the field; allowed: one of "
                         f"{', '.join(map(repr, names))}")
    K = len(names)
    a, b, m, n, w = _luce_terms(records, index)
    k0 = index[anchor]
    keep = np.array([i for i in range(K) if i != k0], np.int64)
    theta = np.zeros(K)

    def info(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The log-likelihood's gradient and its Fisher information (the negative of its
        second derivatives, the same here) in the log strengths."""
        g = np.exp(theta)
        d = g[a] + m * g[b]
        qa, qb = g[a] / d, m * g[b] / d
        grad = np.bincount(a, w - n * qa, K) + np.bincount(b, (n - w) - n * qb, K)
        H = np.zeros((K, K))
        v = n * qa * qb
        np.add.at(H, (a, a), v)
        np.add.at(H, (b, b), v)
        np.add.at(H, (a, b), -v)
        np.add.at(H, (b, a), -v)
        x = g / (g + g[k0])          # the virtual games against the anchor
        grad += 0.5 - x
        H[np.arange(K), np.arange(K)] += x * (1 - x)
        return grad, H

    last = np.inf
    for _ in range(iters):
        grad, H = info(theta)
        step = np.linalg.solve(H[np.ix_(keep, keep)], grad[keep])
        theta[keep] += np.clip(step, -2.0, 2.0)
        if np.max(np.abs(step)) < 1e-10:
            break
        # as in rate_games: with millions of games rounding moves an agent by some 1e-10
        # back and forth for ever (before: "no convergence" for an agent that won all of
        # 2,000,000 games of one pairing); the likelihood's size taken as its games'
        move = stalled(step, step @ grad[keep] / 2, 1.0 + n.sum(), last)
        if move is None:
            break
        last = move
    else:
        raise ValueError(f"fit_ratings: no convergence in {iters} Newton steps")
    _grad, H = info(theta)
    se = np.zeros(K)
    cov = np.linalg.inv(H[np.ix_(keep, keep)])
    se[keep] = np.sqrt(np.maximum(np.diag(cov), 0.0))
    out = {}
    for i, name in enumerate(names):
        r = anchor_rating + ELO * (theta[i] - theta[k0])
        half = Z95 * ELO * se[i]
        out[name] = {"rating": float(r), "low": float(r - half), "high": float(r + half)}
    return out


def place_agent(ratings: dict[str, float], rows: Sequence[dict[str, Any]], players: int,
                anchor_rating: float) -> dict[str, float]:
    """The agent's rating on a table's published scale, the field's ``ratings`` held fixed:
    the one-parameter maximum likelihood of the Luce model over its pairings ``rows`` (each
    with ``reference``, ``games`` and the agent's ``wins``), with the same virtual half-won
    game against the anchor as the field's fit. Returns ``{rating, low, high}``;
    ``ValueError`` for a pairing of counts that are not finite with ``0 <= wins <=
    games``, a reference not in ``ratings``, a rating that is not finite, or a fit that
    does not converge."""
    n, w = _counts(rows, ratings)
    bad = [k for k, v in ratings.items() if not (is_real(v) and math.isfinite(v))]
    if bad:
        raise ValueError(f"the field's rating of {bad[0]!r} is {shown(ratings[bad[0]], 40)}; "
                         f"allowed: a finite number")
    gref = np.array([10 ** ((ratings[r["reference"]] - anchor_rating) / 400.0) for r in rows])
    R = np.append((players - 1) * gref, 1.0)    # the opposition's strength; last: the anchor
    n = np.append(n, 1.0)
    w = np.append(w, 0.5)
    theta = 0.0
    last = np.inf
    for _ in range(200):   # Newton on the log strength: the log-likelihood is concave
        q = np.exp(theta) / (np.exp(theta) + R)
        grad = float(np.sum(w - n * q))
        info = float(np.sum(n * q * (1 - q)))
        step = grad / info
        theta += max(-2.0, min(2.0, step))
        if abs(step) < 1e-12:
            break
        # with tens of thousands of games near a bound, rounding keeps the step at some
        # 1e-12 for ever: the stop fit_ratings makes (before this check's refusal: none)
        move = stalled(np.array([step]), step * grad / 2, float(n.sum()), last)
        if move is None:
            break
        last = move
    else:   # before: the 200th step's value, silently
        raise ValueError(f"placing the agent: no convergence in 200 Newton steps (last step "
                         f"{step:.3g})")
    q = np.exp(theta) / (np.exp(theta) + R)
    half = Z95 * ELO / math.sqrt(float(np.sum(n * q * (1 - q))))
    r = anchor_rating + ELO * theta
    return {"rating": float(r), "low": float(r - half), "high": float(r + half)}


# ---------------------------------------------------------------- an agent on the suite


def resolve_agent(spec: Any, rules: RuleSet) -> Agent:
    """The agent ``spec`` names for ``rules``: a registered name (search agents too), a model
    file, ``module:Class`` (the user's own class, imported: :func:`~ono_env.agents.registry.agent_from_class`) or an
    agent object. ``ValueError`` with the reason when it cannot play ``rules``."""
    if isinstance(spec, str) and is_class_spec(spec):
        return agent_from_class(spec, rules)
    return make_agent(spec, rules)


def describe_agent(spec: Any, agent: Agent) -> dict[str, Any]:
    """What a card says of the agent: the spec, its kind, its label, and where it plays from
    a model file (a model, a shipped policy, a search agent's guide) the SHA-256 of the model
    (:func:`~ono_env.agents.learned.played_models`: a card names the exact model it
    measured)."""
    if isinstance(spec, str):
        kind = _spec_kind(spec)
        label = model_label(spec) if kind == "model" else spec
    else:   # as the arena labels it: another package's object never under a built-in name
        from ono_env.arena import _object_label

        kind, label = "object", _object_label(agent)
    check_text("the agent's label (from its file name, spec or name)", label, MAX_CARD_TEXT)
    # what read_card takes back (before: a long model path was written, then refused)
    check_text("the agent's spec (a model's path: at most 200 characters)",
               spec if isinstance(spec, str) else label, MAX_CARD_TEXT)
    out: dict[str, Any] = {"spec": spec if isinstance(spec, str) else label, "kind": kind,
                           "label": label, "cheating": is_cheating(agent)}
    digest = played_models(agent)
    if digest is not None:
        out["sha256"] = digest
    return out


def _card_agent(spec: Any, first: Agent, digests: Sequence[str | None]) -> dict[str, Any]:
    """:func:`describe_agent` of the agent as made for the first table, its ``sha256`` kept
    only where every table's agent plays from that model (``digests``, one a table:
    ``pimc-ppo`` takes a specialist's guide where one exists, ``ppo-any`` elsewhere, and
    each table's entry names its own)."""
    out = describe_agent(spec, first)
    if len(set(digests)) > 1:
        out.pop("sha256", None)
    return out


def plan(tables: Sequence[SuiteTable], deals: int | None = None,
         slow_deals: int | None = None) -> list[tuple[SuiteTable, Reference, int]]:
    """Every pairing of an ``ono-bench`` run: (table, reference agent, deals)."""
    out = []
    for t in tables:
        for ref in t.field:
            n = (slow_deals or t.slow_deals) if ref.slow else (deals or t.deals)
            out.append((t, ref, n))
    return out


def bench_agent(spec: Any, version: int | str = LATEST, tables: Sequence[str] | None = None, *,
                deals: int | None = None, slow_deals: int | None = None,
                progress: bool = False, ray_address: str | None = None, workers: int = 1,
                on_pairing: Callable[[str, dict[str, Any]], None] | None = None,
                before_games: Callable[[], None] | None = None) -> dict[str, Any]:
    """Place an agent on the suite: play it against every reference agent of each table
    (``tables``: names such as ``basic-2p``; default every table) on the table's deals and
    return its result card (:data:`CARD_FORMAT`): per table the win rate or share against each
    reference agent with its interval, and the agent's rating on the table's published scale.

    ``spec``: a registered name, a model file, ``module:Class`` or an agent object.
    ``deals`` / ``slow_deals``: deals per pairing with a fast / slow (search, ceiling)
    reference agent instead of the suite's defaults (the first deals of the same stream).
    Everything is checked before anything is played: the suite version, the tables, the
    agent under every table's rules, the reference field's model files, whether the worker
    processes fit in memory (:func:`~ono_env.arena.check_workers_memory`). ``ray_address``
    plays the games as Ray tasks (the same games and card); ``workers`` > 1 plays that many
    pairings at once in separate processes (the agent is made again in each from ``spec``,
    which must then be a string; the same card). A string ``spec`` is made afresh for every
    pairing at one worker too, so that an agent that keeps state between decisions (a
    generator of its own) plays each pairing from the same start at any number of workers;
    an agent object plays every pairing as it is. ``on_pairing(table, row)`` is called as each
    pairing finishes. ``before_games()`` is called once everything is checked, before the
    first game (``ono-bench --ray`` connects to Ray there, so that an agent that cannot play
    is refused before Ray's seconds). The card is the same for the same agent, suite version
    and deal counts, but for its ``timing``."""
    suite = load_suite(version)
    chosen = select_tables(suite, tables)
    for what, value in (("deals", deals), ("slow_deals", slow_deals)):
        if value is not None and (not is_int(value) or not 1 <= value <= MAX_DEALS):
            raise ValueError(f"{what} = {value!r}; allowed: a whole number from 1 to {MAX_DEALS:,}")
    deals = None if deals is None else int(deals)   # a NumPy integer too (before: refused)
    slow_deals = None if slow_deals is None else int(slow_deals)
    if ray_address is not None:
        check_ray_address(ray_address)
    if not is_int(workers) or not 1 <= workers <= 256:
        raise ValueError(f"workers = {workers!r}; allowed: a whole number from 1 to 256")
    workers = int(workers)
    # before: both were played with one worker, silently
    if workers > 1 and ray_address is not None:
        raise ValueError(f"workers = {workers} and ray_address: Ray spreads the games over the "
                         f"cluster's CPUs and the pairings are played one at a time; allowed: "
                         f"one of them")
    if workers > 1 and not isinstance(spec, str):
        raise ValueError(f"workers = {workers} with an agent object: each worker process makes "
                         f"the agent again from its name; allowed: the agent as a string (a "
                         f"name, a model file or module:Class), or workers = 1")
    ladder = read_ladder(suite)
    check_field(suite, chosen, ladder)
    agents: dict[str, Agent] = {}
    for t in chosen:    # every table before any game: one clear error for a table it can't play
        try:
            agents[t.name] = resolve_agent(spec, t.rules)
        except ValueError as exc:
            can = [u.name for u in suite.tables.values() if _plays(spec, u)]
            if not can:      # no table at all: the agent itself is wrong
                raise
            raise ValueError(f"table {t.name}: {exc}; the tables it can play: "
                             f"{', '.join(can)} (pick them with --tables; tables= in Python)") from None
    todo = plan(chosen, deals, slow_deals)
    check_workers_memory(workers, len(todo))
    if before_games is not None:
        before_games()
    # the model each table's agent plays from (a search agent's guide may differ by table)
    digests = {t.name: played_models(agents[t.name]) for t in chosen}
    card: dict[str, Any] = {   # its agent's label checked as a card is read back: before a game
        "format": CARD_FORMAT, "format_version": CARD_FORMAT_VERSION,
        "suite_version": suite.version, "package_version": ono_env.__version__,
        "agent": _card_agent(spec, agents[chosen[0].name], list(digests.values())),
        "anchor": {"agent": suite.anchor, "rating": suite.anchor_rating},
        "tables": {}, "timing": {"seconds": 0.0, "tables": {}}}
    bar = None
    if progress:
        bar = games_bar(sum(n * t.players for t, _r, n in todo), "ono-bench", smoothing=0.05)
    t0 = time.perf_counter()
    done: dict[tuple[str, str], dict[str, Any]] = {}
    seconds: dict[str, float] = {t.name: 0.0 for t in chosen}

    def finished(t: SuiteTable, ref: Reference, r: dict[str, Any], took: float) -> None:
        row = {"reference": ref.name, "cheating": ref.cheating, "slow": ref.slow, **r}
        done[(t.name, ref.name)] = row
        seconds[t.name] += took
        if bar is not None and workers > 1:
            bar.update(r["games"])
        if on_pairing is not None:
            on_pairing(t.name, row)

    # one Ray for every pairing (before: a local Ray started and shut down for each)
    held = contextlib.nullcontext() if ray_address is None else held_ray(ray_address)
    try:
        with held:
            if workers > 1:
                _play_in_processes(spec, suite, todo, workers, finished, digests)
            else:
                for k, (t, ref, n) in enumerate(todo):
                    t1 = time.perf_counter()
                    try:   # an agent made afresh from a string for each pairing, as a worker
                        # process makes it (before: one object played every pairing, so an
                        # agent with a generator of its own gave another card at 2 workers)
                        agent = (_fresh_agent(spec, t.rules, digests[t.name])
                                 if isinstance(spec, str) and k else agents[t.name])
                        r = play_pairing(t.rules, agent, make_agent(ref.name, t.rules), n,
                                         t.seed, suite.batch_size, ray_address=ray_address,
                                         progress=bar)
                    except Exception as exc:  # noqa: BLE001 - one line naming where it failed
                        raise _failed(t, ref, exc) from None
                    finished(t, ref, r, time.perf_counter() - t1)
    finally:
        if bar is not None:
            bar.close()
    for t in chosen:
        rows = [done[(t.name, ref.name)] for ref in t.field]
        ratings = {n: v["rating"] for n, v in ladder["tables"][t.name]["ratings"].items()}
        card["tables"][t.name] = {
            "rules": t.preset, "players": t.players, "fair_share": 1.0 / t.players,
            "rating": place_agent(ratings, rows, t.players, suite.anchor_rating),
            "field": {n: round(v, 1) for n, v in ratings.items()}, "rows": rows}
        if digests[t.name] is not None:
            card["tables"][t.name]["sha256"] = digests[t.name]
        card["timing"]["tables"][t.name] = round(seconds[t.name], 2)
    # the processes that played (a pool starts no more than it has pairings for; before:
    # --workers 256 on nine pairings recorded 256)
    card["timing"]["workers"] = min(workers, max(1, len(todo)))
    card["timing"]["seconds"] = round(time.perf_counter() - t0, 2)
    return card


def _fresh_agent(spec: str, rules: RuleSet, digest: str | None) -> Agent:
    """The agent ``spec`` names, made again for a pairing, if it plays from the model the
    card names (``digest``, :func:`~ono_env.agents.learned.played_models`), else
    ``ValueError``: a model file replaced during the run (a training run writing to the same
    path) would mix two models in one card."""
    agent = resolve_agent(spec, rules)
    now = played_models(agent)
    if now != digest:
        raise ValueError(f"the agent's model changed during the run (SHA-256 {str(digest)[:12]} "
                         f"at the start, {str(now)[:12]} now): a card measures one model; "
                         f"allowed: a model file that stays as it is until the run ends")
    return agent


def _pairing_job(spec: str, version: int, table: str, reference: str, deals: int,
                 digest: str | None) -> tuple[dict[str, Any], float]:
    """One pairing in a worker process: the agent (checked to play the model the card names)
    and the reference agent made there."""
    t0 = time.perf_counter()
    suite = load_suite(version)
    t = suite.tables[table]
    rules = t.rules
    r = play_pairing(rules, _fresh_agent(spec, rules, digest), make_agent(reference, rules),
                     deals, t.seed, suite.batch_size)
    return r, time.perf_counter() - t0


def _play_in_processes(spec: str, suite: Suite, todo: list[tuple[SuiteTable, Reference, int]],
                       workers: int, finished: Callable[..., None],
                       digests: dict[str, str | None]) -> None:
    """The pairings of ``todo`` in ``workers`` processes (spawned: no fork of a process that
    may hold threads), the slow reference agents first so that no long pairing starts last."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    order = sorted(todo, key=lambda job: (not job[1].slow, -job[0].players))
    ctx = multiprocessing.get_context("spawn")
    ex = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
    failed: BaseException | None = None
    try:
        futures = {ex.submit(_pairing_job, spec, suite.version, t.name, ref.name, n,
                             digests[t.name]): (t, ref) for t, ref, n in order}
        for f in as_completed(futures):
            t, ref = futures[f]
            try:
                r, took = f.result()
            except Exception as exc:  # noqa: BLE001 - named, and the pairings not begun dropped
                failed = _failed(t, ref, exc)
                break
            finished(t, ref, r, took)
    except BaseException:   # a Ctrl-C, a SIGTERM (console.Stopped): the pairings under way are
        end_workers(ex)    # not waited for, and no worker runs on (before: SIGTERM left them)
        raise
    finally:
        # one shutdown that cancels what has not begun (the pairings under way end first):
        # a `with` block's own shutdown would run after ours and undo its cancelling
        ex.shutdown(wait=True, cancel_futures=failed is not None or sys.exc_info()[0] is not None)
    if failed is not None:
        raise failed


def _failed(table: SuiteTable, ref: Reference, exc: BaseException) -> ValueError:
    """The error of a pairing that failed (the agent, or the machinery: Ray, a worker
    process), naming the table and the reference."""
    return ValueError(f"the pairing at {table.name} against {ref.name} failed: "
                      f"{type(exc).__name__}: {exc}{notes_text(exc)}")   # which agent raised


def _plays(spec: Any, table: SuiteTable) -> bool:
    try:
        resolve_agent(spec, table.rules)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- the reference field's ladder


def ladder_plan(table: SuiteTable, anchors: Sequence[str] = ("greedy", "ppo-any"),
                deals: int | None = None, slow_deals: int | None = None
                ) -> list[tuple[str, str, int]]:
    """The pairings of a table's published ladder: (agent, reference agent, deals). The fast
    field plays every pairing (both ways round at more than two players: one seat against
    the other's copies); the search agent and each ceiling play the ``anchors`` (one seat
    against their copies)."""
    fast = [r.name for r in table.field if not r.slow]
    slow = [r.name for r in table.field if r.slow]
    n_fast, n_slow = deals or table.ladder_deals, slow_deals or table.ladder_slow_deals
    out = []
    for i, x in enumerate(fast):
        for y in fast if table.players > 2 else fast[i + 1:]:
            if x != y:
                out.append((x, y, n_fast))
    out += [(s, a, n_slow) for s in slow for a in anchors]
    return out


def pairing_key(suite: Suite, table: SuiteTable, agent: str, reference: str, deals: int,
                models: dict[str, str]) -> str:
    """What decides a ladder pairing's games, hashed (SHA-256 of canonical JSON): the rules,
    the player count, the table's seed and batch size, the two agents' names, the SHA-256 of
    their model files (``models``: name -> SHA-256, for the learned ones) and the deals. Two
    pairings with the same key play the same games under the same code (the arena is
    deterministic given its seed), so :func:`play_ladder` may carry a result over from another
    suite version's files instead of playing it again; the key does not cover the code, so
    ``benchmarks/bench_suite.py`` replays some carried-over pairings to check (``--verify``)."""
    import json

    what = {"rules": table.rules.to_dict(), "players": table.players, "seed": table.seed,
            "batch_size": suite.batch_size, "agent": agent, "reference": reference,
            "deals": deals, "models": {n: models[n] for n in (agent, reference) if n in models}}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def play_ladder(version: int | str, table_name: str, *, deals: int | None = None,
                slow_deals: int | None = None, progress: bool = False,
                on_pairing: Callable[[dict[str, Any]], None] | None = None,
                reuse: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The reference field of one table against itself (:func:`ladder_plan`) and its fitted
    ratings: what the published ladder of a suite version holds for the table. Every record
    carries its :func:`pairing_key`; a pairing whose key is in ``reuse`` (key -> an earlier
    record, from another version's files or an interrupted run) is taken from there, not
    played again."""
    suite = load_suite(version)
    t = select_tables(suite, [table_name])[0]
    rules = t.rules
    todo = ladder_plan(t, anchors=suite.ladder_slow_anchors, deals=deals, slow_deals=slow_deals)
    models = field_models([t])
    keys = [pairing_key(suite, t, x, y, n, models) for x, y, n in todo]
    reuse = reuse or {}
    built = {n: make_agent(n, rules) for n in t.names()}
    bar = None
    if progress:
        bar = games_bar(sum(n * t.players for (_a, _b, n), k in zip(todo, keys) if k not in reuse),
                        f"ladder {t.name}")
    records = []
    t0 = time.perf_counter()
    try:
        for (x, y, n), key in zip(todo, keys):
            if key in reuse:
                rec = with_todays_interval(dict(reuse[key]))
            else:
                t1 = time.perf_counter()
                r = play_pairing(rules, built[x], built[y], n, t.seed, suite.batch_size, progress=bar)
                rec = {"agent": x, "reference": y, "players": t.players, **r,
                       "seconds": round(time.perf_counter() - t1, 2), "key": key,
                       "interval": LADDER_INTERVAL}
            records.append(rec)
            if on_pairing is not None:
                on_pairing(rec)
    finally:
        if bar is not None:
            bar.close()
    ratings = fit_ratings(t.names(), records, suite.anchor, suite.anchor_rating)
    return {"suite_version": suite.version, "table": t.name, "rules": t.preset,
            "players": t.players, "cheating": [r.name for r in t.field if r.cheating],
            "ratings": ratings, "pairings": records, "models": models,
            "seconds": round(time.perf_counter() - t0, 2)}


# ---------------------------------------------------------------- cards


MAX_CARD_TEXT = 200
"""The longest label or name a result card holds (an agent's spec may be a model's path)."""


def read_card(path: str | Path) -> dict[str, Any]:
    """A result card written by ``ono-bench`` (JSON, read as data only); ``ValueError`` naming
    what is wrong when the file is not one."""
    p = check_input_file(path, "result card", MAX_CARD_BYTES)
    try:   # NaN, Infinity, 1e400: not numbers a card holds
        data = parse_json(p.read_bytes(), bom=True)
    except OSError as exc:
        raise ValueError(f"{path}: not a result card (cannot read it: {exc.strerror or exc})") from None
    except JSONError as exc:
        raise ValueError(f"{path}: not a result card (not JSON: {exc})") from None
    check_card(data, str(path))
    return data


MAX_CARD_RATING = 1e6
"""The largest rating (in size) a result card holds: the published scale's ratings are some
hundreds to a few thousand."""


CARD_KEYS = frozenset({"format", "format_version", "suite_version", "package_version", "agent",
                       "anchor", "tables", "timing"})
"""The keys of a result card (``package_version`` and ``timing`` where written)."""
CARD_PART_KEYS = {
    "the agent": {"spec", "kind", "label", "cheating", "sha256"},
    "the anchor": {"agent", "rating"},
    "a table": {"rules", "players", "fair_share", "rating", "field", "rows", "sha256"},
    "a table's rating": {"rating", "low", "high"},
    "a row": {"reference", "cheating", "slow", "deals", "games", "rate", "low", "high", "wins",
              "no_winner"},
    "timing": {"workers", "tables", "seconds"},
}
"""The keys each part of a result card may hold (what :func:`bench_agent` writes)."""
AGENT_KINDS = ("class", "model", "name", "object")
"""What a card may call its agent's kind (:func:`describe_agent`)."""
MAX_CARD_SECONDS = 1e9
"""The most seconds a card's timing may hold (about 30 years)."""


def check_card(data: Any, what: str = "card") -> None:
    """``ValueError`` unless ``data`` has a result card's format: the fields the tables and
    plots read, each of its type (an integer is not a bool or a float) and within what a card
    this package writes can hold (a suite version it knows, that suite's tables and their
    player counts and reference agents, one row for each with the suite's cheating flag and
    a rating in the field, rates and their bounds in [0, 1] and in order, counts of at least
    one deal, wins that are a row's rate times its games, ratings of at most
    :data:`MAX_CARD_RATING` in size, the field's those of the suite's published ladder and
    each table's the one its rows give on it (:func:`place_agent`) and within its interval,
    no key a card does not hold at any level, ``CARD_PART_KEYS``); the field and what is
    allowed named."""
    if not isinstance(data, dict) or data.get("format") != CARD_FORMAT:
        raise ValueError(f"{what}: not a result card (no \"format\": \"{CARD_FORMAT}\")")
    version = data.get("format_version")
    if type(version) is not int or version != CARD_FORMAT_VERSION:
        raise ValueError(f"{what}: card format version {version!r}; this package reads "
                         f"version {CARD_FORMAT_VERSION}")

    def integer(value: Any, field: str, low: int, high: int) -> int:
        if type(value) is not int or not low <= value <= high:
            raise ValueError(f"{field} = {shown(value, 40)}; allowed: an integer from {low:,} to "
                             f"{high:,}")
        return value

    def number(value: Any, field: str, low: float = -MAX_CARD_RATING,
               high: float = MAX_CARD_RATING) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or (isinstance(value, int) and not low <= value <= high) \
                or not (math.isfinite(value) and low <= value <= high):
            raise ValueError(f"{field} = {shown(value, 40)}; allowed: a number from {low:g} to "
                             f"{high:g}")
        return float(value)

    def digest(holder: dict[str, Any], field: str) -> None:
        value = holder.get("sha256")
        if "sha256" in holder and not is_sha256(value):
            raise ValueError(f"{field} = {shown(value, 40)}; allowed: a SHA-256 in 64 hex digits")

    def only_known(part: Any, kind: str, where: str) -> None:   # before: ignored below the top
        extra = sorted(set(part) - CARD_PART_KEYS[kind]) if isinstance(part, dict) else []
        if extra:
            raise ValueError(f"{where}: the key {shown(extra[0], 40)}, which no card holds there; "
                             f"allowed: {', '.join(sorted(CARD_PART_KEYS[kind]))}")

    from ono_env.arena import MAX_GAMES

    try:
        versions = suite_versions()
        if type(data["suite_version"]) is not int or data["suite_version"] not in versions:
            raise ValueError(f"suite_version = {shown(data['suite_version'], 40)}; allowed: "
                             f"{', '.join(map(str, versions))}")
        suite = load_suite(data["suite_version"])
        ladder = read_ladder(suite)   # the field's published ratings a card must show
        if "package_version" in data:
            check_text("package_version", data["package_version"], MAX_CARD_TEXT)
        only_known(data["agent"], "the agent", "the agent")
        only_known(data["anchor"], "the anchor", "the anchor")
        # the texts a card prints: printable (no terminal escapes), bounded
        check_text("the agent's label", data["agent"]["label"], MAX_CARD_TEXT)
        if "spec" in data["agent"]:   # before: any JSON value (a number, a terminal's escape)
            check_text("the agent's spec", data["agent"]["spec"], MAX_CARD_TEXT)
        digest(data["agent"], "the agent's sha256")
        if not isinstance(data["agent"].get("cheating", False), bool):
            raise ValueError(f"the agent's cheating = {shown(data['agent']['cheating'], 40)}; "
                             f"allowed: true or false")
        if data["agent"].get("kind", AGENT_KINDS[0]) not in AGENT_KINDS:   # before: any text
            raise ValueError(f"the agent's kind = {shown(data['agent']['kind'], 40)}; allowed: "
                             f"{', '.join(AGENT_KINDS)}")
        check_text("the anchor's agent", data["anchor"]["agent"], MAX_CARD_TEXT)
        number(data["anchor"]["rating"], "the anchor's rating")
        anchor = {"agent": suite.anchor, "rating": suite.anchor_rating}
        for key, value in anchor.items():   # before: any anchor was printed as the scale's
            if data["anchor"][key] != value:
                raise ValueError(f"the anchor's {key} = {shown(data['anchor'][key], 40)}; "
                                 f"allowed: {value!r} (suite version {suite.version}'s)")
        if not isinstance(data["tables"], dict) or not data["tables"]:
            raise ValueError("tables: allowed: a mapping of at least one of the suite's tables")
        for name, t in data["tables"].items():
            check_text("a table's name", name, MAX_CARD_TEXT)
            if name not in suite.tables:
                raise ValueError(f"table {name!r}; allowed: the tables of suite version "
                                 f"{suite.version} ({', '.join(suite.tables)})")
            table = suite.tables[name]
            only_known(t, "a table", f"table {name}")
            only_known(t["rating"], "a table's rating", f"table {name}: its rating")
            if t["rules"] != table.preset:   # before: printed as written
                raise ValueError(f"table {name}: rules = {shown(t['rules'], 40)}; allowed: "
                                 f"{table.preset!r} (the suite's)")
            players = integer(t["players"], f"table {name}: players", table.players,
                              table.players)
            number(t["fair_share"], f"table {name}: its fair share", 1 / players, 1 / players)
            digest(t, f"table {name}: sha256")
            rated = {k: number(t["rating"][k], f"table {name}: its rating's {k}")
                     for k in ("rating", "low", "high")}
            if not rated["low"] <= rated["rating"] <= rated["high"]:   # before: printed so
                raise ValueError(f"table {name}: its rating's interval [{rated['low']:g}, "
                                 f"{rated['high']:g}] does not hold its rating "
                                 f"{rated['rating']:g}; allowed: low <= rating <= high")
            if not isinstance(t.get("field", {}), dict):
                raise ValueError(f"table {name}: field = {shown(t['field'], 40)}; allowed: a mapping "
                                 f"of reference names to ratings")
            published = ladder["tables"][name]["ratings"]
            for ref, value in t.get("field", {}).items():
                check_text(f"table {name}: a reference's name", ref, MAX_CARD_TEXT)
                number(value, f"table {name}: the rating of {ref!r}")
                if ref not in published:
                    raise ValueError(f"table {name}: the field's {ref!r}; allowed: the table's "
                                     f"reference agents ({', '.join(published)})")
                if value != round(published[ref]["rating"], 1):   # before: printed as written
                    raise ValueError(f"table {name}: the rating of {ref!r} = {value:g}; "
                                     f"allowed: {round(published[ref]['rating'], 1):g} (suite "
                                     f"version {suite.version}'s published ladder; a card "
                                     f"written before that ladder was published again is not "
                                     f"read either)")
            if not isinstance(t["rows"], list) or not t["rows"]:
                raise ValueError(f"table {name}: rows: allowed: a list of at least one row")
            known = {r.name: r for r in table.field}
            listed: set[str] = set()
            counted = []   # each row with its games and wins (rate times games where not written)
            for r in t["rows"]:
                only_known(r, "a row", f"table {name}: a row")
                ref = r["reference"]
                check_text(f"table {name}: a reference's name", ref, MAX_CARD_TEXT)
                if ref not in known:
                    raise ValueError(f"table {name}: reference {ref!r}; allowed: the table's "
                                     f"reference agents ({', '.join(sorted(known))})")
                if ref in listed:   # before: printed twice
                    raise ValueError(f"table {name}: reference {ref!r} has two rows; allowed: "
                                     f"one each")
                listed.add(ref)
                if not isinstance(r["cheating"], bool):
                    raise ValueError(f"table {name}: cheating of {ref!r} = "
                                     f"{shown(r['cheating'], 40)}; allowed: true or false")
                if r["cheating"] is not known[ref].cheating:   # before: printed as written
                    raise ValueError(f"table {name}: cheating of {ref!r} = "
                                     f"{shown(r['cheating'], 40)}; allowed: "
                                     f"{str(known[ref].cheating).lower()} (the suite's)")
                if "slow" in r and r["slow"] is not known[ref].slow:
                    raise ValueError(f"table {name}: slow of {ref!r} = {shown(r['slow'], 40)}; "
                                     f"allowed: {str(known[ref].slow).lower()} (the suite's)")
                if ref not in t.get("field", {}):   # before: its rating printed blank
                    raise ValueError(f"table {name}: reference {ref!r} has a row and no rating "
                                     f"in the field; allowed: a rating of every reference")
                deals = integer(r["deals"], f"table {name}: deals of {ref!r}", 1, MAX_GAMES)
                rate = {k: number(r[k], f"table {name}: {k} of {ref!r}", 0.0, 1.0)
                        for k in ("rate", "low", "high")}
                if not rate["low"] <= rate["rate"] <= rate["high"]:
                    raise ValueError(f"table {name}: {ref!r}'s interval [{rate['low']:g}, "
                                     f"{rate['high']:g}] does not hold its rate "
                                     f"{rate['rate']:g}; allowed: low <= rate <= high")
                # every seating of each deal is played (before: any count was printed)
                games = (integer(r["games"], f"table {name}: games of {ref!r}",
                                 deals * players, deals * players)
                         if "games" in r else deals * players)
                wins = number(r.get("wins", 0), f"table {name}: wins of {ref!r}", 0, games)
                if "wins" in r and abs(wins - rate["rate"] * games) > 1e-6 * games:
                    raise ValueError(f"table {name}: wins of {ref!r} = {wins:g}; allowed: its "
                                     f"rate times its games, {rate['rate'] * games:g} (the "
                                     f"wins its rate was measured from)")
                if "no_winner" in r:
                    integer(r["no_winner"], f"table {name}: no_winner of {ref!r}", 0, games)
                counted.append({"reference": ref, "games": games,
                                "wins": wins if "wins" in r else rate["rate"] * games})
            missing = [ref for ref in known if ref not in listed]
            if missing:   # before: a card of one pairing in nine printed as a whole result
                raise ValueError(f"table {name}: no row for reference {missing[0]!r}; allowed: "
                                 f"a row for each of the table's reference agents "
                                 f"({', '.join(sorted(known))})")
            # the rating its rows give, wins written or not (before: a card whose rows had no
            # wins printed any rating)
            placed = place_agent({n: v["rating"] for n, v in published.items()}, counted,
                                 players, suite.anchor_rating)
            if any(abs(placed[k] - rated[k]) > 1e-6 * max(1.0, abs(placed[k])) for k in rated):
                raise ValueError(f"table {name}: its rating {rated['rating']:g} "
                                 f"[{rated['low']:g}, {rated['high']:g}]; allowed: the one "
                                 f"its rows give on the published scale, "
                                 f"{placed['rating']:g} [{placed['low']:g}, "
                                 f"{placed['high']:g}]")
        _check_cheating(data["agent"], suite.tables[next(iter(data["tables"]))].rules)
        timing = data.get("timing", {})
        if not isinstance(timing, dict):
            raise ValueError(f"timing = {shown(timing, 40)}; allowed: a mapping")
        only_known(timing, "timing", "timing")
        # before: any values (workers -1, seconds -5, tables [])
        if "workers" in timing:
            integer(timing["workers"], "timing: workers", 1, 256)
        if "seconds" in timing:
            number(timing["seconds"], "timing: seconds", 0.0, MAX_CARD_SECONDS)
        if not isinstance(timing.get("tables", {}), dict):
            raise ValueError(f"timing: tables = {shown(timing['tables'], 40)}; allowed: a "
                             f"mapping of the card's tables to seconds")
        for name, value in timing.get("tables", {}).items():
            if name not in data["tables"]:
                raise ValueError(f"timing: table {shown(name, 40)}; allowed: the card's tables "
                                 f"({', '.join(data['tables'])})")
            number(value, f"timing: seconds of table {name}", 0.0, MAX_CARD_SECONDS)
        extra = sorted(set(data) - CARD_KEYS)   # before: ignored
        if extra:
            raise ValueError(f"the key {shown(extra[0], 40)}, which no card holds; allowed: "
                             f"{', '.join(sorted(CARD_KEYS))}")
    except KeyError as exc:
        raise ValueError(f"{what}: not a result card (it has no {exc})") from None
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise ValueError(f"{what}: not a result card ({exc})") from None


def _spec_kind(spec: str) -> str:
    """The kind :func:`describe_agent` gives an agent named by the text ``spec``."""
    return "class" if is_class_spec(spec) else "model" if is_model_path(spec) else "name"


def _check_cheating(agent: dict[str, Any], rules: RuleSet) -> None:
    """A card's ``cheating`` of its agent, where it can be known without running a user's
    code: a model file plays its policy, which sees only its seat's view; a built-in or
    registered name cheats as the agent it makes does (``oracle:N``), whatever kind the card
    gives it (an object of ono_env's own is labelled by its name). A class's or another
    object's is as its card says (a class of one's own declares it). The kind must be the
    one its spec has (or ``object``), a missing one is the spec's, and the label the one its
    spec gives (a model's: no agent's name but a shipped policy's). Before: taken as
    written, so an edited card hid that ``oracle:2`` sees every hand, also with its kind
    removed or made ``object``, or under a label of its own."""
    claimed = agent.get("cheating", False)
    if not isinstance(agent.get("spec"), str):
        return
    spec = agent["spec"]
    kind = agent.get("kind", _spec_kind(spec))
    if kind not in ("object", _spec_kind(spec)):
        raise ValueError(f"the agent's kind = {kind!r} for the spec {shown(spec, 60)}; "
                         f"allowed: {_spec_kind(spec)!r} (what the spec names) or 'object'")
    label = agent.get("label")
    if kind != "model" and label != spec:
        raise ValueError(f"the agent's label = {shown(label, 60)}; allowed: its spec "
                         f"{shown(spec, 60)} (the label a {kind}'s card shows)")
    if kind == "model" and isinstance(label, str) and is_builtin_name(label) \
            and label not in shipped_models():
        raise ValueError(f"the agent's label = {shown(label, 60)}, the name of another agent; "
                         f"allowed: the label of a model file (its name)")
    if kind == "object" and is_builtin_name(spec):
        kind = "name"   # an ono_env object of that name: it plays as the agent the name makes
    if kind not in ("name", "model"):
        return
    cheats = False
    if kind == "name":
        try:
            cheats = is_cheating(make_agent(agent["spec"], rules))
        except ValueError as exc:
            if not is_builtin_name(spec) and spec not in agent_names():
                # a name this process does not know, registered in the one that wrote the
                # card: its flag is taken as a class's is (before: "not a result card" for a
                # card bench_agent wrote); a name known here is checked, refusal and all
                return
            raise ValueError(f"the agent's spec {agent['spec']!r} (kind name): {exc}") from None
    if claimed is not cheats:
        who = f"the agent {agent['spec']!r} is" if kind == "name" else "a model file is"
        raise ValueError(f"the agent's cheating = {str(claimed).lower()}; allowed: "
                         f"{str(cheats).lower()} ({who} {'CHEATING' if cheats else 'fair'})")


def card_agent_label(card: dict[str, Any]) -> str:
    """The card's agent as it is named, marked where it cheats (sees hidden cards)."""
    return marked(card["agent"]["label"], bool(card["agent"].get("cheating")))


def _ref_label(row: dict[str, Any]) -> str:
    return marked(row["reference"], row["cheating"])


EXTREME_NOTE = ("every game {}: a bound, not a measure; the scale's virtual game and the "
                "number of games played set the rating and its interval")
"""What a card and a ladder page add to a rating whose every game was won, or every game
lost: the maximum likelihood is then at infinity, and the finite number the scale gives
(:func:`place_agent`, :func:`fit_ratings`) is set by the one virtual half-won game against
the anchor and grows with the games played, about 400 log10(2 x games) above the field
(at 2 players: 2,561 for 4,000 games won against ``greedy``), its interval the virtual
game's curvature (+-481): the agent is stronger (weaker) than the field can tell, and by how much is not
measured."""


def extreme(shares: Sequence[float]) -> str | None:
    """``"won"`` where every one of an agent's ``shares`` (its share of the wins in each of
    its pairings) is 1, ``"lost"`` where every one is 0, else None: the ratings that
    :data:`EXTREME_NOTE` marks."""
    if shares and all(s == 1.0 for s in shares):
        return "won"
    if shares and all(s == 0.0 for s in shares):
        return "lost"
    return None


def _extreme_note(shares: Sequence[float]) -> str:
    """`` (every game won: ...)`` for :func:`extreme` shares, else ""."""
    e = extreme(shares)
    return "" if e is None else f" ({EXTREME_NOTE.format(e)})"


def format_card(card: dict[str, Any]) -> str:
    """A result card as text: per table the agent's rating on the published scale and its
    win rate (2 players) or win share (more: the fair share beside it) against each
    reference agent, with 95% intervals over deals."""
    lines = [f"{card_agent_label(card)} on benchmark suite version {card['suite_version']} "
             f"(ono_env {card.get('package_version', '?')}; ratings: {card['anchor']['agent']} = "
             f"{card['anchor']['rating']:g} at every table)"]
    for name, t in card["tables"].items():
        r = t["rating"]
        what = "win rate" if t["players"] == 2 else f"win share (fair {100 * t['fair_share']:.0f}%)"
        lines.append("")
        lines.append(f"{name}: rating {r['rating']:.0f} [{r['low']:.0f}, {r['high']:.0f}]"
                     + _extreme_note([row["rate"] for row in t["rows"]]))
        lines.append(f"  {'reference agent':<26} {'rating':>7} {'deals':>6} {what:>24}")
        for row in t["rows"]:
            rate, low, high = percent_interval(row["rate"], row["low"], row["high"], 1)
            field = t.get("field", {}).get(row["reference"])
            fr = "" if field is None else f"{field:.0f}"
            lines.append(f"  {_ref_label(row):<26} {fr:>7} {row['deals']:>6} "
                         f"{rate:>8}% {f'[{low}, {high}]':>15}")
    return "\n".join(lines)


def format_card_markdown(card: dict[str, Any]) -> str:
    """A result card as Markdown tables (one per table of the suite)."""
    out = [f"Agent `{card_agent_label(card)}`, benchmark suite version {card['suite_version']}, "
           f"ono_env {card.get('package_version', '?')}.", ""]
    for name, t in card["tables"].items():
        r = t["rating"]
        what = "win rate" if t["players"] == 2 else f"win share (fair {100 * t['fair_share']:.0f}%)"
        out += [f"**{name}**: rating {r['rating']:.0f} [{r['low']:.0f}, {r['high']:.0f}]"
                + _extreme_note([row["rate"] for row in t["rows"]]), "",
                f"| reference agent | its rating | deals | {what} [95%] |", "|---|---|---|---|"]
        for row in t["rows"]:
            field = t.get("field", {}).get(row["reference"])
            out.append(f"| {_ref_label(row)} | {'' if field is None else f'{field:.0f}'} | "
                       f"{row['deals']} | "
                       + "{} [{}, {}]".format(*percent_interval(row["rate"], row["low"],
                                                                row["high"], 1)) + " |")
        out.append("")
    return "\n".join(out)


def format_ladder_markdown(data: dict[str, Any], command: str) -> str:
    """One table's published ladder as a docs page: the ratings, then every pairing."""
    P = data["players"]
    what = ("win rate of the agent" if P == 2 else
            f"win share of the agent's seat (fair {100 / P:.3g}%)")
    lines = [f"# Ladder: {data['table']} (suite version {data['suite_version']})", "",
             f"`{data['rules']}` rules, {P} players. Ratings on the Elo scale of the Luce model "
             f"of the winner, `greedy` = 1000; 95% intervals. Regenerate with:", "", "```bash",
             command, "```", "",
             "| agent | rating | 95% interval |", "|---|---|---|"]
    for name, r in sorted(data["ratings"].items(), key=lambda kv: -kv[1]["rating"]):
        label = marked(name, name in data["cheating"])
        ci = "anchor" if name == "greedy" else f"[{r['low']:.0f}, {r['high']:.0f}]"
        # its share of the wins in each pairing, as the agent or as the reference
        shares = ([p["rate"] for p in data["pairings"] if p["agent"] == name]
                  + [1.0 - p["rate"] for p in data["pairings"] if p["reference"] == name])
        lines.append(f"| {label} | {r['rating']:.0f} | {ci}{_extreme_note(shares)} |")
    lines += ["", f"Pairings: the agent in one seat, the reference agent in every other; each "
                  f"deal played with the agent in each seat ({what}, 95% interval over deals).",
              "", "| agent | reference agent | deals | rate [95%] | seconds |",
              "|---|---|---|---|---|"]
    carried = sorted({p["from_version"] for p in data["pairings"] if "from_version" in p})
    for p in data["pairings"]:
        took = f"{p['seconds']:.0f}" + (f" (v{p['from_version']})" if "from_version" in p else "")
        agent, ref = (marked(n, n in data["cheating"]) for n in (p["agent"], p["reference"]))
        rate = "{} [{}, {}]".format(*percent_interval(p["rate"], p["low"], p["high"], 1))
        lines.append(f"| {agent} | {ref} | {p['deals']} | {rate} | {took} |")
    if carried:
        lines += ["", "A pairing marked (v*N*) was carried over from version *N*'s ladder: the same "
                      "rules, deals, seed, agents and model files (the same pairing key) play "
                      "the same games; its seconds are that run's."]
    return "\n".join(lines) + "\n"


__all__ = [
    "CARD_FORMAT", "CARD_FORMAT_VERSION", "LADDER_INTERVAL", "LATEST", "MAX_CARD_BYTES",
    "MAX_CARD_RATING", "MAX_DEALS", "Reference",
    "Suite", "SuiteTable", "bench_agent", "check_card", "check_field", "describe_agent",
    "field_models", "fit_ratings", "format_card", "format_card_markdown",
    "format_ladder_markdown", "ladder_plan", "load_suite", "pairing_key", "place_agent", "play_ladder",
    "play_pairing", "read_card", "read_ladder", "resolve_agent", "rotations", "select_tables",
    "suite_versions", "with_todays_interval",
]
