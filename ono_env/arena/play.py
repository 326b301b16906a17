"""The games of one seating: batches on the core, driven by the agents, and their seeds."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ono_env.agents.base import Agent
from ono_env.agents.driver import AgentDriver
from ono_env.checks import check_int, check_seed, shown
from ono_env.game import MAX_GAMES, VecGame, game_seeds
from ono_env.replay import Replay
from ono_env.rules import MAX_PLAYERS, MIN_PLAYERS, RuleSet

ALL_SEATINGS_UP_TO = 4
"""Up to this many players a table plays every seating (every permutation); beyond, the
``num_players`` rotations of the seats."""


def seatings(num_players: int) -> list[tuple[int, ...]]:
    """Seat orders of one table: ``order[s]`` is the table member in seat ``s``
    (:data:`ALL_SEATINGS_UP_TO`). ``ValueError`` unless ``num_players`` is a table size of
    the rules (2 to 10)."""
    num_players = check_int("num_players", num_players, MIN_PLAYERS, MAX_PLAYERS)
    if num_players <= ALL_SEATINGS_UP_TO:
        return list(itertools.permutations(range(num_players)))
    return rotations(num_players)


def rotations(num_players: int) -> list[tuple[int, ...]]:
    """The ``num_players`` rotations of the seats: in rotation ``r`` table member ``m`` sits
    in seat ``(m - r) % num_players`` (``order[s] = (s + r) % num_players``)."""
    return [tuple((s + r) % num_players for s in range(num_players)) for r in range(num_players)]


SEATINGS_VERSION = 2
"""How a run seats its tables past :data:`ALL_SEATINGS_UP_TO` players: 1, the rotations of the
order the entrants were given (before 2026-12-07; an arena.json without ``seating``); 2, the
rotations of an order drawn for each deal (:func:`arranges`). Two runs seated otherwise are
not paired deal by deal."""


def arranges(members: Sequence[Hashable]) -> bool:
    """Does a table of these members (equal keys: one agent given twice) have its order
    around the table drawn for each deal? Past :data:`ALL_SEATINGS_UP_TO` players its
    seatings are rotations, which keep the order around the table: played in the order
    given, every entrant would keep its neighbours, and its share would depend on where it
    was listed (before: by more than the interval, and two copies of one agent took shares
    whose intervals did not meet). Every table but one of copies of a single agent, whose
    every order is the same."""
    return len(members) > ALL_SEATINGS_UP_TO and len(set(members)) > 1


def arrangements(seed: int, table: int, deals: int, num_players: int) -> np.ndarray:
    """``(deals, num_players)`` int8: each deal's order of the table's members around the
    table, drawn uniformly from a generator seeded from ``(seed, table)`` alone, so that a
    deal keeps its order in every seating, and another run of the seed (a paired one) seats
    its deals alike."""
    rng = np.random.default_rng([seed, 8, table])
    return rng.permuted(np.tile(np.arange(num_players, dtype=np.int8), (deals, 1)), axis=1)


def seating_plan(tables: Sequence[tuple[int, ...]], orders: Sequence[tuple[int, ...]],
                 arranged: Sequence[np.ndarray | None] = ()) -> list[
                     tuple[int, int, list[int], np.ndarray | None]]:
    """The seatings of a run in the order they are played: ``(table, seating, entrants,
    seat_members)``. Without an arrangement for the table (``arranged[table]``, from
    :func:`arrangements`, or none), ``entrants`` are in seat order and ``seat_members`` is
    None; with one, ``entrants`` are the table's members and ``seat_members[k, s]`` the one
    in seat ``s`` of game ``k`` (:func:`play_games`): in seating ``order``, the deal's
    arrangement read in that order."""
    plan: list[tuple[int, int, list[int], np.ndarray | None]] = []
    for t, table in enumerate(tables):
        arr = arranged[t] if t < len(arranged) else None
        for o, order in enumerate(orders):
            if arr is None:
                plan.append((t, o, [table[k] for k in order], None))
            else:
                plan.append((t, o, list(table), np.ascontiguousarray(arr[:, list(order)])))
    return plan


def seated_entrants(entrants: Sequence[int], seat_members: np.ndarray | None,
                    games: int) -> np.ndarray:
    """``(games, P)``: the entrant in each seat of a seating's games (:func:`seating_plan`)."""
    if seat_members is None:
        return np.broadcast_to(np.array(entrants), (games, len(entrants)))
    return np.asarray(entrants)[seat_members[:games]]


@dataclass
class GameRecords:
    """One row per game played: who sat where and how it ended."""
    entrants: np.ndarray    # (G, P) entrant index per seat
    wins: np.ndarray        # (G, P) share of the win per seat (0, 1, or 1/k)
    scores: np.ndarray      # (G, P) final score per seat (0 when the rules keep none)
    length: np.ndarray      # (G,) decisions
    truncated: np.ndarray   # (G,) bool
    deal: np.ndarray | None = None   # (G,) deal number: games of one deal share their cards


def play_games(rules: RuleSet, agents: Sequence[Agent], num_games: int, seed: int, *,
               batch_size: int = 4096, max_decisions: int | None = None,
               progress: Any = None, record: Sequence[int] = (),
               replays: list[Replay] | None = None,
               labels: Sequence[str] | None = None,
               batches: range | None = None,
               seat_members: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Play ``num_games`` games with ``agents[s]`` in seat ``s`` (the same object in several
    seats is asked once per step for all of them), or, given ``seat_members``
    (``(num_games, P)``), ``agents[seat_members[k, s]]`` in seat ``s`` of game ``k``.

    Returns per game: win share per seat ``(G, P)``, final scores ``(G, P)``, decisions
    ``(G,)`` and truncated ``(G,)``. ``seed`` fixes the deals and the agents' generator.
    ``progress`` (optional) has ``update(n)`` called as batches finish. The games numbered
    in ``record`` are appended to ``replays`` as :class:`~ono_env.replay.Replay` objects, the
    seats labelled by ``labels`` (one per agent); recording changes no result. ``ValueError`` for a count or
    seed that is not a whole number in its range, a game to record that is not played, or
    ``seat_members`` not of that shape and range."""
    num_games = check_int("num_games", num_games, 1)
    check_seed("seed", seed, allow_none=False)
    check_int("batch_size", batch_size, 1, MAX_GAMES)
    for j, k in enumerate(record):
        check_int(f"record[{j}]", k, 0, num_games - 1)
    if len(record) and not isinstance(replays, list):
        raise ValueError(f"record={shown(list(record), 60)} with replays={shown(replays, 40)}; allowed: "
                         f"a list for the recorded games' replays")
    P = rules.num_players
    if len(agents) != P:
        raise ValueError(f"{len(agents)} agents for {P} seats")
    if seat_members is not None and not (
            isinstance(seat_members, np.ndarray) and seat_members.dtype.kind in "iu"
            and seat_members.shape == (num_games, P) and seat_members.size
            and seat_members.min() >= 0 and seat_members.max() < P):
        x = seat_members
        what = (f"a {type(x).__name__}" if not isinstance(x, np.ndarray) else
                f"a {x.dtype} array of shape {x.shape}"
                + (f", {x.min()} to {x.max()}" if x.dtype.kind in "iu" and x.size else ""))
        raise ValueError(f"seat_members is {what}; allowed: None, or a NumPy integer array of "
                         f"shape ({num_games}, {P}) of places in agents, 0 to {P - 1}")
    distinct: list[Agent] = []
    seat_agent = np.zeros(P, np.int64)   # agents[i] is distinct[seat_agent[i]]
    for s, agent in enumerate(agents):
        if not any(agent is q for q in distinct):
            distinct.append(agent)
        seat_agent[s] = next(j for j, q in enumerate(distinct) if q is agent)
    agent_labels = list(labels) if labels is not None else [repr(a) for a in agents]
    out_w, out_s, out_len, out_tr = [], [], [], []
    for b, start in enumerate(range(0, num_games, batch_size)):
        if batches is not None and b not in batches:   # a part of the games (a Ray task)
            continue
        B = min(batch_size, num_games - start)
        game = VecGame(rules, B, seed=_derive(seed, b), max_decisions=max_decisions)
        rng = np.random.default_rng([seed, b, 1])
        driver = AgentDriver(game, distinct)
        rows = None if seat_members is None else seat_members[start:start + B]
        driver.seat_agent[:] = seat_agent if rows is None else seat_agent[rows]
        # the compiled random agent's generators (a stream apart from the Python agents')
        driver.seed_games(np.ones(B, np.bool_), np.random.default_rng([seed, b, 2]))
        here = [k - start for k in record if start <= k < start + B]
        if here:
            game_seed = game_seeds(_derive(seed, b), B)
            for i in here:
                seat_labels = (agent_labels if rows is None
                               else [agent_labels[m] for m in rows[i]])
                driver.recording[i] = Replay.start(game, i, int(game_seed[i]), seat_labels,
                                                   "ono-arena")
        rewards = np.zeros((B, P), np.float64)
        driver.play(rng, rewards)           # every seat is driven: plays every game to its end
        for i, replay in driver.recording.items():
            cast(list, replays).append(replay.finish(game, i))   # given where record is
        if progress is not None:
            progress.update(B)
        won = rewards > 1e-6
        k = won.sum(axis=1, keepdims=True)
        out_w.append(np.where(won, 1.0 / np.maximum(k, 1), 0.0))
        out_s.append(game.state.scores.astype(np.float64).copy())
        out_len.append(game.state.decisions.astype(np.int64).copy())
        out_tr.append(game.truncated & ~game.terminated)
        del driver, game   # freed before the next batch is dealt: one batch held at a time
    return (np.concatenate(out_w), np.concatenate(out_s), np.concatenate(out_len),
            np.concatenate(out_tr))

def games_bar(total: int, desc: str, smoothing: float = 0.1) -> Any:
    """The progress bar of a run's games (tqdm, on stderr); ``update(n)`` as batches end."""
    import sys

    from tqdm import tqdm
    return tqdm(total=total, unit="game", desc=desc, file=sys.stderr, smoothing=smoothing)


def _derive(seed: int, *keys: int) -> int:
    return int(np.random.SeedSequence([seed, *keys]).generate_state(1, dtype=np.uint64)[0] >> 1)


def _seating_seed(seed: int, table: int, order: int, mirrored: bool) -> int:
    """The seed of one seating's games (deals and the agents' generator): per table and
    seating, or for mirrored deals per table only (every seating replays the table's deals)."""
    return _derive(seed, table) if mirrored else _derive(seed, table, order)


def end_workers(ex: Any) -> None:
    """Terminate the worker processes of the ProcessPoolExecutor ``ex``: its own
    ``terminate_workers`` (Python 3.14), else each process of its (private) table, the only
    way before 3.14."""
    terminate = getattr(ex, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    for process in list(getattr(ex, "_processes", {}).values()):
        process.terminate()
