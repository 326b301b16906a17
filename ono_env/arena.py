"""The arena: many games between any agents under any rules, with honest statistics.

```python
from ono_env.arena import run_arena
result = run_arena(["greedy", "random"], rules="basic", num_players=2, num_games=10_000, seed=0)
print(result.format_table())
result.save("results/")            # arena.json, arena.csv
```

How games are played
    The entrants (agent names, model files or agent objects; a name may repeat, and
    each entry is a separate entrant) are seated at tables of ``num_players``: every
    combination of ``num_players`` entrants when there are more entrants than seats. Each
    table is played in every seating order: all permutations of the seats for up to four
    players, the cyclic rotations above that, so no entrant keeps the first move or its
    neighbours. The games of a table are split evenly over its seatings. Games run on the
    batched core, ``batch_size`` at a time; game ``k`` of a seating is dealt from a seed
    derived from ``(seed, table, seating, batch)`` and the agents of that batch draw from one
    generator derived the same way, so a run is reproducible from ``seed``.

What is counted
    A game is one episode of the rules: a round, or a whole match when the rules play to a
    target score. Its winner (or winners, sharing one win, in a penalty-scored match) is
    the seat with a positive final reward; a game cut at ``max_decisions`` has no winner.
    Per entrant: games, wins, win rate with a 95% Wilson interval, mean final score (when the
    rules keep scores) and mean game length in decisions. Head to head: for each pair, the
    first entrant's win rate in the games where both sat (for two players, simply its win
    rate against the other). Ratings: OpenSkill's Plackett-Luce model (the ``openskill``
    library, dynamics factor ``tau=0`` since fixed agents do not drift), updated once per
    game, winner ranked first and the others tied, the games taken in a seeded shuffled
    order (so no table's games come last);
    ``ordinal`` is the conservative estimate mu - 3 sigma.

Comparing two agents
    With ``mirrored=True`` (the duplicate format, :func:`run_arena`) the deals depend only on
    the rules, seed, number of games, batch size and number of entrants, not on the agents.
    Two such runs that differ only in one entrant are compared deal by deal by
    :func:`paired_difference` (``ono-arena --paired-with``); a saved run's ``arena.json``
    keeps each entrant's per-deal results (``per_deal``) and the batch size for this
    (:func:`mirrored_record` reads them back; :func:`mean_interval` gives the interval over
    deals, also of runs with different seeds pooled, ``benchmarks/pool_mirrored.py``).
"""

from __future__ import annotations

import csv
import importlib.util
import itertools
import json
import math
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ono_env.game import VecGame, game_seeds
from ono_env.agents.base import Agent
from ono_env.agents.learned import model_label
from ono_env.agents.registry import is_model_path, make_agent
from ono_env.checks import check_bool, check_input_file, check_int, check_seed
from ono_env.driver import AgentDriver
from ono_env.game import MAX_GAMES as MAX_BATCH
from ono_env.replay import Replay
from ono_env.rules import RuleSet, resolve_rules

Z95 = 1.959963984540054
MAX_GAMES = 100_000_000
"""The most games one arena run plays (about an hour of random play per core)."""
MAX_ARENA_JSON_BYTES = 256 << 20
"""The largest arena.json read (a mirrored run of 20,000 deals writes about 1 MB)."""
MAX_RECORD = 10_000
"""The most games one arena run keeps replays of."""


def wilson_interval(wins: float, n: float, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval of a win rate (``wins`` may be fractional: shared wins)."""
    if n <= 0:
        return (0.0, 1.0)
    p = wins / n
    den = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def seatings(num_players: int) -> list[tuple[int, ...]]:
    """Seat orders of one table: ``order[s]`` is the table member in seat ``s``."""
    if num_players <= 4:
        return list(itertools.permutations(range(num_players)))
    return [tuple((s + r) % num_players for s in range(num_players)) for r in range(num_players)]


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
               batches: range | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Play ``num_games`` games with ``agents[s]`` in seat ``s`` (the same object in several
    seats is asked once per step for all of them).

    Returns per game: win share per seat ``(G, P)``, final scores ``(G, P)``, decisions
    ``(G,)`` and truncated ``(G,)``. ``seed`` fixes the deals and the agents' generator.
    ``progress`` (optional) has ``update(n)`` called as batches finish. The games numbered
    in ``record`` are appended to ``replays`` as :class:`~ono_env.replay.Replay` objects, the
    seats labelled ``labels``; recording changes no result."""
    P = rules.num_players
    if len(agents) != P:
        raise ValueError(f"{len(agents)} agents for {P} seats")
    distinct: list[Agent] = []
    seat_agent = np.zeros(P, np.int64)
    for s, agent in enumerate(agents):
        if not any(agent is q for q in distinct):
            distinct.append(agent)
        seat_agent[s] = next(j for j, q in enumerate(distinct) if q is agent)
    out_w, out_s, out_len, out_tr = [], [], [], []
    for b, start in enumerate(range(0, num_games, batch_size)):
        if batches is not None and b not in batches:   # a part of the games (a Ray task)
            continue
        B = min(batch_size, num_games - start)
        game = VecGame(rules, B, seed=_derive(seed, b), max_decisions=max_decisions)
        rng = np.random.default_rng([seed, b, 1])
        driver = AgentDriver(game, distinct)
        driver.seat_agent[:] = seat_agent
        # the compiled random agent's generators (a stream apart from the Python agents')
        driver.seed_games(np.ones(B, np.bool_), np.random.default_rng([seed, b, 2]))
        here = [k - start for k in record if start <= k < start + B]
        if here:
            game_seed = game_seeds(_derive(seed, b), B)
            seat_labels = list(labels) if labels is not None else [repr(a) for a in agents]
            driver.labels = [seat_labels[int(np.flatnonzero(seat_agent == j)[0])]
                             for j in range(len(distinct))]
            for i in here:
                driver.recording[i] = Replay.start(game, i, int(game_seed[i]), seat_labels,
                                                   "ono-arena")
        rewards = np.zeros((B, P), np.float64)
        driver.play(rng, rewards)           # every seat is driven: plays every game to its end
        for i, replay in driver.recording.items():
            replays.append(replay.finish(game, i))
        if progress is not None:
            progress.update(B)
        won = rewards > 1e-6
        k = won.sum(axis=1, keepdims=True)
        out_w.append(np.where(won, 1.0 / np.maximum(k, 1), 0.0))
        out_s.append(game.state.scores.astype(np.float64).copy())
        out_len.append(game.state.decisions.astype(np.int64).copy())
        out_tr.append(game.truncated & ~game.terminated)
    return (np.concatenate(out_w), np.concatenate(out_s), np.concatenate(out_len),
            np.concatenate(out_tr))


def _derive(seed: int, *keys: int) -> int:
    return int(np.random.SeedSequence([seed, *keys]).generate_state(1, dtype=np.uint64)[0] >> 1)


def _seating_seed(seed: int, table: int, order: int, mirrored: bool) -> int:
    """The seed of one seating's games (deals and the agents' generator): per table and
    seating, or for mirrored deals per table only (every seating replays the table's deals)."""
    return _derive(seed, table) if mirrored else _derive(seed, table, order)


def mean_interval(x: np.ndarray) -> tuple[float, float, float]:
    """``(mean, low, high)`` of per-deal values ``x``: the mean with a normal 95% interval
    over the deals (nan where there are too few deals)."""
    n = len(x)
    mean = float(np.mean(x)) if n else float("nan")
    half = Z95 * float(np.std(x, ddof=1)) / math.sqrt(n) if n > 1 else float("nan")
    return mean, mean - half, mean + half


@dataclass
class ArenaResult:
    rules: RuleSet
    labels: list[str]
    records: GameRecords
    seed: int
    seconds: float                     # playing the games
    ratings: list[dict[str, float]] = field(default_factory=list)
    rating_seconds: float = 0.0        # computing the ratings
    replays: list[Replay] = field(default_factory=list)   # the recorded sample (``record``)
    replay_rows: list[int] = field(default_factory=list)  # each replay's row of ``records``
    nodes: dict[str, int] = field(default_factory=dict)   # Ray node id -> games played there
    mirrored: bool = False             # every deal played once per seating (paired statistics)
    batch_size: int = 4096             # games stepped together (the deals depend on it)

    # ---- statistics -------------------------------------------------------------------
    @property
    def fair_share(self) -> float:
        """The share of the wins each seat gets when all play alike: 1 / players."""
        return 1.0 / self.rules.num_players

    @property
    def tables(self) -> int:
        """How many different tables (sets of entrants) were played."""
        return math.comb(len(self.labels), self.rules.num_players)

    @property
    def no_winner(self) -> int:
        """Games that ended with no winner (cut at max_decisions)."""
        return int(self.records.truncated.sum())

    @property
    def deals(self) -> int | None:
        """Mirrored runs: the number of deals (each played once per seating); else None."""
        return None if self.records.deal is None else int(len(np.unique(self.records.deal)))

    def paired(self, e: int, other: int | None = None) -> dict[str, float]:
        """Mirrored deals: entrant ``e``'s mean share of the wins per deal (a game without a
        winner shares 1/N to every seat), over the deals it played (with ``other``: the
        deals where both sat), with a normal 95% interval over deals. Keys: ``rate``,
        ``low``, ``high``, ``deals``, ``games``, ``sd`` (standard deviation of a deal's
        score)."""
        deals, per_deal, games = self.per_deal(e, other)
        n = len(deals)
        if n == 0:
            return {"rate": float("nan"), "low": 0.0, "high": 1.0, "deals": 0, "games": 0,
                    "sd": float("nan")}
        mean = float(per_deal.mean())
        sd = float(per_deal.std(ddof=1)) if n > 1 else 0.0
        half = Z95 * sd / math.sqrt(n)
        return {"rate": mean, "low": max(0.0, mean - half), "high": min(1.0, mean + half),
                "deals": n, "games": games, "sd": sd}

    def per_deal(self, e: int, other: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
        """Mirrored deals: ``(deals, share, games)``, the deal numbers entrant ``e`` played
        (with ``other``: those where both sat), in increasing order, its mean share of the
        wins in each deal's games (a game without a winner shares 1/N to every seat), and the
        number of those games."""
        r = self.records
        if r.deal is None:
            raise ValueError("paired statistics need a mirrored run (run_arena(mirrored=True))")
        P = r.entrants.shape[1]
        at = r.entrants == e
        sel = at.any(axis=1)
        if other is not None:
            sel &= (r.entrants == other).any(axis=1)
        share = np.where(r.wins.sum(axis=1, keepdims=True) > 0, r.wins, 1.0 / P)
        mine = (share * at).sum(axis=1)[sel]
        deals, inv = np.unique(r.deal[sel], return_inverse=True)
        return deals, np.bincount(inv, weights=mine) / np.bincount(inv), int(sel.sum())

    def agent_rows(self) -> list[dict[str, Any]]:
        r = self.records
        rows = []
        for e, label in enumerate(self.labels):
            at = r.entrants == e                                  # (G, P)
            games = int(at.any(axis=1).sum())
            wins = float(r.wins[at].sum())
            lo, hi = wilson_interval(wins, games)
            if self.mirrored and games:
                pr = self.paired(e)
                wins, lo, hi = pr["rate"] * games, pr["low"], pr["high"]
            row: dict[str, Any] = {
                "agent": label, "games": games, "wins": wins,
                "win_rate": wins / games if games else float("nan"),
                "ci_low": lo, "ci_high": hi, "fair_share": self.fair_share,
                "mean_length": float(r.length[at.any(axis=1)].mean()) if games else float("nan"),
            }
            if self.rules.scoring != "none":
                row["mean_score"] = float(r.scores[at].mean()) if games else float("nan")
            if self.ratings:
                row.update({f"rating_{k}": v for k, v in self.ratings[e].items()})
            rows.append(row)
        return rows

    def head_to_head(self) -> dict[str, np.ndarray]:
        """``rate[i, j]``: i's win rate in the games where both i and j sat (nan on the
        diagonal), with its 95% interval ``low``/``high`` and ``games``."""
        r = self.records
        K = len(self.labels)
        present = np.stack([(r.entrants == e).any(axis=1) for e in range(K)])   # (K, G)
        win = np.stack([(r.wins * (r.entrants == e)).sum(axis=1) for e in range(K)])
        rate = np.full((K, K), np.nan)
        low, high, games = rate.copy(), rate.copy(), np.zeros((K, K), np.int64)
        for i in range(K):
            for j in range(K):
                if i == j:
                    continue
                both = present[i] & present[j]
                n = int(both.sum())
                games[i, j] = n
                if n and self.mirrored:
                    pr = self.paired(i, j)
                    rate[i, j], low[i, j], high[i, j] = pr["rate"], pr["low"], pr["high"]
                elif n:
                    w = float(win[i, both].sum())
                    rate[i, j] = w / n
                    low[i, j], high[i, j] = wilson_interval(w, n)
        return {"rate": rate, "low": low, "high": high, "games": games}

    # ---- output ---------------------------------------------------------------------
    def format_table(self) -> str:
        """The run as text: a title line (rules, players, games, the fair share, the games
        with no winner, a mirrored run's deals), one row per entrant (games, its share of the
        wins with the 95% interval beside the fair share, mean score and length, the
        OpenSkill rating mu - 3 sigma), and, where more than one table was played, the
        head-to-head matrix (with a single table every cell would repeat its row's rate)."""
        rows = self.agent_rows()
        scoring = self.rules.scoring != "none"
        width = max(8, *(len(x["agent"]) for x in rows))
        what = "win rate" if self.rules.num_players == 2 else "win share"
        head = (f"{'agent':<{width}} {'games':>8} {what:>10} {'95% interval':>16} "
                f"{'fair share':>10}")
        if scoring:
            head += f" {'mean score':>10}"
        head += f" {'mean length':>11}"
        if self.ratings:
            head += f" {'rating (mu-3sigma)':>18}"
        lines = [f"{self.rules.name} rules, {self.rules.num_players} players, "
                 f"{len(self.records.length):,} games"
                 + (f" ({self.deals:,} deals, each played in every seating)" if self.mirrored else "")
                 + f", seed {self.seed}, played in {self.seconds:.1f} s"
                 + (f" (+ {self.rating_seconds:.1f} s of ratings)" if self.ratings else ""),
                 f"fair share {100 * self.fair_share:.1f}% (1 / {self.rules.num_players} players); "
                 f"{self.no_winner:,} games with no winner (cut at the decision limit)"
                 + ("; mirrored deals: rates are per-deal means (a game with no winner counts "
                    "1/players to every seat), intervals over deals" if self.mirrored else ""),
                 head]
        for x in sorted(rows, key=lambda x: -x["win_rate"]):
            ci = f"[{100 * x['ci_low']:.2f}, {100 * x['ci_high']:.2f}]"
            line = (f"{x['agent']:<{width}} {x['games']:>8} {100 * x['win_rate']:>9.2f}% {ci:>16} "
                    f"{100 * x['fair_share']:>9.1f}%")
            if scoring:
                line += f" {x['mean_score']:>10.1f}"
            line += f" {x['mean_length']:>11.1f}"
            if self.ratings:
                line += f" {x['rating_ordinal']:>18.2f}"
            lines.append(line)
        h2h = self.head_to_head()
        K = len(self.labels)
        if self.tables > 1:
            lines.append("")
            lines.append("head to head: row's win rate in games with column (95% interval)")
            cw = max(18, width)
            lines.append(" " * (width + 1) + " ".join(f"{lab:>{cw}}" for lab in self.labels))
            for i in range(K):
                cells = []
                for j in range(K):
                    if i == j or h2h["games"][i, j] == 0:
                        cells.append(f"{'-':>{cw}}")
                    else:
                        cell = (f"{100 * h2h['rate'][i, j]:.1f} [{100 * h2h['low'][i, j]:.1f}, "
                                f"{100 * h2h['high'][i, j]:.1f}]")
                        cells.append(f"{cell:>{cw}}")
                lines.append(f"{self.labels[i]:<{width}} " + " ".join(cells))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        h2h = self.head_to_head()

        def clean(a: np.ndarray) -> list:
            return [[None if (isinstance(v, float) and math.isnan(v)) else v for v in row]
                    for row in a.tolist()]

        out = {
            "rules": self.rules.to_dict(), "seed": self.seed, "seconds": self.seconds,
            "rating_seconds": self.rating_seconds,
            "games": int(len(self.records.length)),
            "mirrored": self.mirrored,
            "fair_share": self.fair_share,
            "tables": self.tables,
            "no_winner": self.no_winner,
            "agents": self.agent_rows(),
            "head_to_head": {"agents": self.labels, "win_rate": clean(h2h["rate"]),
                             "ci_low": clean(h2h["low"]), "ci_high": clean(h2h["high"]),
                             "games": h2h["games"].tolist()},
        }
        if self.mirrored:   # what paired_difference needs to compare two runs deal by deal
            out["deals"] = self.deals
            out["batch_size"] = self.batch_size
            out["per_deal"] = self.per_deal_table()
        return out

    def per_deal_table(self) -> dict[str, dict[str, list]]:
        """Mirrored deals: ``{label: {"deals": [...], "share": [...]}}``, :meth:`per_deal` of
        every entrant as lists (arena.json's ``per_deal``)."""
        table = {}
        for e, label in enumerate(self.labels):
            deals, share, _ = self.per_deal(e)
            table[label] = {"deals": deals.tolist(), "share": share.tolist()}
        return table

    def save(self, directory: str | Path, stem: str = "arena") -> list[Path]:
        """Write ``<stem>.json`` (everything; a mirrored run also each entrant's per-deal
        results, ``per_deal``, and ``batch_size``) and ``<stem>.csv`` (the per-agent table) into
        ``directory``. Returns the paths. (``ono_env.arena_cli.plot_head_to_head`` draws
        the head-to-head matrix.)"""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        paths = [d / f"{stem}.json", d / f"{stem}.csv"]
        data = self.to_dict()
        per_deal = data.pop("per_deal", None)
        text = json.dumps(data, indent=2)
        if per_deal is not None:   # one line per list: a 20,000-deal run stays small
            lists = ",\n".join(f'    {json.dumps(label)}: {json.dumps(v, separators=(",", ":"))}'
                                for label, v in per_deal.items())
            text = text[:-2] + ',\n  "per_deal": {\n' + lists + "\n  }\n}"
        paths[0].write_text(text + "\n")
        rows = self.agent_rows()
        with open(paths[1], "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        return paths


def _labels(specs: Sequence[Any]) -> list[str]:
    base = [s if isinstance(s, str) else getattr(s, "name", type(s).__name__) for s in specs]
    base = [model_label(b) if is_model_path(b) else b for b in base]
    labels, seen = [], {}
    for b in base:
        seen[b] = seen.get(b, 0) + 1
        labels.append(b if base.count(b) == 1 else f"{b}#{seen[b]}")
    return labels


def rate_games(records: GameRecords, num_entrants: int, seed: int = 0) -> list[dict[str, float]]:
    """OpenSkill (Plackett-Luce) ratings: one update per game, winner ranked first and the
    others tied behind (all tied in a game without a winner). The dynamics factor ``tau``
    is 0: the agents do not change between games, so every game counts alike (with
    OpenSkill's default the last few thousand games would decide). The games are taken in an
    order shuffled by ``seed`` so that no table's games come last and weigh most."""
    from openskill.models import PlackettLuce

    model = PlackettLuce(tau=0.0)   # fixed agents: no skill drift between games
    players = [model.rating(name=str(e)) for e in range(num_entrants)]
    order = np.random.default_rng([seed, 2]).permutation(len(records.length))
    for seats, wins in zip(records.entrants[order].tolist(), records.wins[order].tolist()):
        teams = [[players[e]] for e in seats]
        ranks = [0 if w > 0 else 1 for w in wins]
        new = model.rate(teams, ranks=ranks)
        for e, team in zip(seats, new):
            players[e] = team[0]
    return [{"mu": p.mu, "sigma": p.sigma, "ordinal": p.ordinal()} for p in players]


def run_arena(agents: Sequence[Any], rules: Any = "classic", num_players: int | None = None,
              num_games: int = 10_000, seed: int = 0, *, batch_size: int = 4096,
              max_decisions: int | None = None, rating: bool | None = None,
              progress: bool = False, record: int = 0,
              ray_address: str | None = None, mirrored: bool = False) -> ArenaResult:
    """Play ``num_games`` games among ``agents`` and return their statistics.

    ``agents``: names (``random``, ``greedy``, ``color``, ``defensive``, ...), model
    files or agent objects; at least ``num_players`` of them (repeat a name to seat it
    more than once). ``rules``: a preset name, YAML path, RuleSet or dict; ``num_players``
    overrides its player count. ``num_games`` is split evenly over the tables and their
    seatings (rounded up so every seating plays the same number). ``rating``: compute
    OpenSkill ratings (one Python update per game; they need the ``openskill`` library of
    the ``[arena]`` extra): ``None`` (default) when it is installed, ``True`` always (an
    ``ImportError`` without it), ``False`` never. ``record``: keep a replay of that many
    games (a sample drawn with a generator seeded from ``seed``, in ``result.replays`` in the
    order played); recording changes no result. ``ray_address``: play the games as Ray
    tasks (``"local"`` starts a local Ray; ``"auto"``, ``"host:port"`` or ``"ray://..."``
    joins a cluster; an initialised Ray is used as it is): the same games and results as in
    one process, ``result.nodes`` says how many games each node played (:func:`play_on_ray`).
    It needs the ``[ray]`` extra.

    ``mirrored``: the duplicate format. Every deal of a table is played once per seating
    (2 players: twice, seats swapped; the deal and the agents' generator are seeded per
    table and game, not per seating), so each entrant holds every seat's cards once and the
    luck of the deal cancels. Win rates are then the mean over deals of an entrant's share
    of the wins in that deal's games (a game without a winner is a tie, 1/N to every seat),
    with a normal 95% interval over deals (:meth:`ArenaResult.paired`); with ``ray_address``
    the same deals are played as Ray tasks."""
    overrides = {} if num_players is None else {"num_players": num_players}
    rules = resolve_rules(rules, **overrides)
    P = rules.num_players
    agents = list(agents)
    if len(agents) < P:
        raise ValueError(f"{len(agents)} agents for {P} players: give at least {P} "
                         f"(repeat a name to seat it more than once)")
    num_games = check_int("num_games", num_games, 1, MAX_GAMES)
    seed = check_seed("seed", seed, allow_none=False)
    batch_size = check_int("batch_size", batch_size, 1, MAX_BATCH)
    if rating is None:
        rating = importlib.util.find_spec("openskill") is not None
    check_bool("rating", rating)
    check_bool("progress", progress)
    if ray_address is not None:
        check_ray_address(ray_address)
    record = check_int("record", record, 0, MAX_RECORD)
    built = [make_agent(a, rules) for a in agents]
    labels = [f"{lab} (cheating)" if getattr(b, "cheating", False) else lab
              for lab, b in zip(_labels(agents), built)]   # the search ceilings see hidden cards
    check_bool("mirrored", mirrored)
    check_plan(games_played(num_games, len(agents), P), num_games, len(agents), P)
    tables = list(itertools.combinations(range(len(agents)), P))
    orders = seatings(P)
    total = games_played(num_games, len(agents), P)
    per = total // (len(tables) * len(orders))
    sample = np.sort(np.random.default_rng([seed, 7]).choice(total, min(record, total), replace=False))
    replays: list[Replay] = []
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=per * len(tables) * len(orders), unit="game", desc="arena",
                   file=sys.stderr, smoothing=0.1)
    t0 = time.perf_counter()
    ent, win, sc, ln, tr = [], [], [], [], []
    nodes: dict[str, int] = {}
    try:
        if ray_address is not None:   # the same games, as Ray tasks (see play_on_ray)
            if record:
                raise ValueError("record is not available with ray_address (replays are kept "
                                 "by a one-process run)")
            for part in play_on_ray(ray_address, rules, built, tables, orders, per, seed,
                                    batch_size, max_decisions, bar, nodes, mirrored=mirrored):
                for out, x in zip((ent, win, sc, ln, tr), part):
                    out.append(x)
        for t, table in enumerate(tables if ray_address is None else []):
            for o, order in enumerate(orders):
                seated = [table[k] for k in order]
                first = (t * len(orders) + o) * per
                here = sample[(sample >= first) & (sample < first + per)] - first
                w, s, length, trunc = play_games(
                    rules, [built[e] for e in seated], per,
                    _seating_seed(seed, t, o, mirrored),
                    batch_size=batch_size, max_decisions=max_decisions, progress=bar,
                    record=[int(k) for k in here], replays=replays,
                    labels=[labels[e] for e in seated])
                ent.append(np.broadcast_to(np.array(seated), w.shape))
                win.append(w)
                sc.append(s)
                ln.append(length)
                tr.append(trunc)
    finally:
        if bar is not None:
            bar.close()
    records = GameRecords(np.concatenate(ent), np.concatenate(win), np.concatenate(sc),
                          np.concatenate(ln), np.concatenate(tr))
    if mirrored:   # the games come per (table, seating), per games each; deal k of table t
        n_seat = len(orders) * per
        records.deal = (np.repeat(np.arange(len(tables)), n_seat) * per
                        + np.tile(np.arange(per), len(tables) * len(orders)))
    seconds = time.perf_counter() - t0
    result = ArenaResult(rules, labels, records, seed, seconds, mirrored=mirrored, replays=replays,
                         replay_rows=sample.tolist(), nodes=nodes, batch_size=batch_size)
    if rating:
        t1 = time.perf_counter()
        result.ratings = rate_games(records, len(agents), seed)
        result.rating_seconds = time.perf_counter() - t1
    return result


MAX_ROUNDING = 10
"""How many times the games asked for a run may round up to (every seating of every table)."""


def check_plan(planned: int, num_games: int, num_entrants: int, num_players: int) -> None:
    """``ValueError`` when rounding ``num_games`` up to every seating of every table
    (:func:`games_played`) plans more than :data:`MAX_ROUNDING` times as many games (and more
    than 10,000), or more than :data:`MAX_GAMES`: 20 entrants at 10 players make 1,847,560
    games of ``--games 1``."""
    if planned > MAX_GAMES or (planned > MAX_ROUNDING * num_games and planned > 10_000):
        tables = math.comb(num_entrants, num_players)
        raise ValueError(f"{num_games:,} games would be {planned:,}: {tables:,} tables of "
                         f"{num_players} of the {num_entrants} entrants, each in "
                         f"{len(seatings(num_players))} seatings; ask for at least "
                         f"{planned // MAX_ROUNDING:,} games (at most {MAX_GAMES:,} in all), or "
                         f"seat fewer entrants")


def games_played(num_games: int, num_entrants: int, num_players: int) -> int:
    """How many games run_arena plays for ``num_games``: rounded up so that every table
    (every ``num_players`` of the ``num_entrants``) plays every seating equally often."""
    seats = math.comb(num_entrants, num_players) * len(seatings(num_players))
    return math.ceil(num_games / seats) * seats


def read_arena_json(path: str | Path) -> dict[str, Any]:
    """A saved run: the ``arena.json`` at ``path``, or in the folder ``path``, as a dict
    (JSON only: nothing in it runs). ``ValueError`` naming the file when it is missing or
    not an arena.json."""
    p = Path(path)
    if p.is_dir():
        p = p / "arena.json"
    try:
        check_input_file(p, "arena.json", MAX_ARENA_JSON_BYTES)
        data = json.loads(p.read_text())
    except OSError as exc:
        raise ValueError(f"cannot read {str(p)!r}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{str(p)!r} is not an arena.json (not JSON: {exc})") from None
    if not isinstance(data, dict) or not {"rules", "seed", "games", "agents"} <= data.keys():
        raise ValueError(f"{str(p)!r} is not an arena.json (saved by ArenaResult.save, "
                         f"ono-arena --out)")
    return data


def mirrored_record(run: Any, name: str) -> dict[str, Any]:
    """What paired comparisons read of a mirrored run (``rules``, ``seed``, ``games``,
    ``batch_size``, ``agents``: labels, ``per_deal``: ArenaResult.per_deal_table), from an
    ArenaResult or the dict of a saved ``arena.json`` (ArenaResult.to_dict); ``ValueError``
    calling the run ``name`` when it is not a complete mirrored run."""
    if isinstance(run, ArenaResult):
        if not run.mirrored:
            raise ValueError(f"{name} was not played with mirrored deals; paired comparisons "
                             f"need two mirrored runs (run_arena(mirrored=True), ono-arena --mirrored)")
        return {"rules": run.rules.to_dict(), "seed": run.seed,
                "games": int(len(run.records.length)), "batch_size": run.batch_size,
                "agents": list(run.labels), "per_deal": run.per_deal_table()}
    if not isinstance(run, dict):
        raise ValueError(f"{name} is a {type(run).__name__}; allowed: an ArenaResult or the "
                         f"dict of a saved arena.json")
    if not run.get("mirrored") or not isinstance(run.get("per_deal"), dict):
        raise ValueError(f"{name} holds no per-deal results: it was not saved from a mirrored "
                         f"run of this version (ono-arena --mirrored --out DIR)")
    try:
        labels = [str(row["agent"]) for row in run["agents"]]
        per = {lab: {"deals": [int(d) for d in run["per_deal"][lab]["deals"]],
                     "share": [float(x) for x in run["per_deal"][lab]["share"]]} for lab in labels}
        for lab, v in per.items():   # a damaged file must not print nan% or 700%
            d = np.asarray(v["deals"])
            if (len(v["deals"]) != len(v["share"]) or not v["deals"]
                    or not all(math.isfinite(x) and 0.0 <= x <= 1.0 for x in v["share"])
                    or (d < 0).any() or (np.diff(d) <= 0).any()):
                raise ValueError(f"per_deal of {lab!r}: a list of increasing deal numbers and as "
                                 f"many shares from 0 to 1 is needed")
        return {"rules": dict(run["rules"]), "seed": int(run["seed"]), "games": int(run["games"]),
                "batch_size": int(run["batch_size"]), "agents": labels, "per_deal": per}
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{name} is not a complete arena.json of a mirrored run "
                         f"({type(exc).__name__}: {exc})") from None


def check_pairable(pa: dict[str, Any], pb: dict[str, Any], entrant: int = 0) -> None:
    """``ValueError`` naming what differs unless two runs (dicts with ``rules`` (a RuleSet's
    dict), ``seed``, ``games``, ``batch_size`` and ``agents`` (labels; a " (cheating)" mark is
    ignored)) dealt the same cards and seated the same entrants but the one at ``entrant``."""
    for key, what in (("rules", "rules"), ("seed", "seed"), ("games", "number of games"),
                      ("batch_size", "batch size")):
        if pa[key] != pb[key]:
            shown = ((pa[key], pb[key]) if key != "rules" else
                     ({k: v for k, v in pa[key].items() if pb[key].get(k) != v},
                      {k: v for k, v in pb[key].items() if pa[key].get(k) != v}))
            raise ValueError(f"the two runs differ in {what} ({shown[0]} against {shown[1]}), so "
                             f"they did not deal the same cards; a paired comparison needs the "
                             f"same rules, seed, games and batch size")
    la = [str(x).removesuffix(" (cheating)") for x in pa["agents"]]
    lb = [str(x).removesuffix(" (cheating)") for x in pb["agents"]]
    if len(la) != len(lb):
        raise ValueError(f"the two runs have {len(la)} and {len(lb)} entrants; a paired "
                         f"comparison needs the same tables (the same number of entrants)")
    if not (isinstance(entrant, (int, np.integer)) and not isinstance(entrant, bool)
            and 0 <= entrant < len(la)):
        raise ValueError(f"entrant = {entrant!r}; allowed: an entrant's place, 0 to {len(la) - 1}")
    others_a = la[:entrant] + la[entrant + 1:]
    others_b = lb[:entrant] + lb[entrant + 1:]
    if others_a != others_b:
        raise ValueError(f"the other entrants differ ({', '.join(others_a)} against "
                         f"{', '.join(others_b)}); a paired comparison plays two agents "
                         f"against the same others")


def check_paired_plan(earlier: Any, agents: Sequence[Any], rules: Any = "classic",
                      num_players: int | None = None, num_games: int = 10_000, seed: int = 0,
                      batch_size: int = 4096) -> None:
    """Before playing: ``ValueError`` naming what differs unless run_arena with these
    arguments (mirrored) would deal the same cards as the saved run ``earlier`` (an
    ArenaResult or an arena.json's dict) and seat the same entrants but the first, so that
    paired_difference can compare the two first entrants."""
    overrides = {} if num_players is None else {"num_players": num_players}
    rules = resolve_rules(rules, **overrides)
    plan = {"rules": rules.to_dict(), "seed": seed, "batch_size": batch_size,
            "games": games_played(num_games, len(agents), rules.num_players),
            "agents": _labels(agents)}
    check_pairable(plan, mirrored_record(earlier, "the earlier run"))


def paired_difference(a: Any, b: Any, entrant: int = 0) -> dict[str, Any]:
    """A against B on the same deals: entrant ``entrant`` of run ``a`` and the entrant in the
    same place of run ``b`` (an ArenaResult, or the dict of a saved ``arena.json``), two
    mirrored runs that dealt the same cards (the same rules, seed, number of games, batch
    size and number of entrants) against the same other entrants. Returns ``rate_a``,
    ``rate_b`` (each one's mean share of the wins per deal), ``diff`` = rate_a - rate_b with
    a normal 95% interval over the deals (``low``, ``high``: the luck of the deal cancels
    twice, between seats and between the runs), ``deals``, ``agent_a``, ``agent_b``.
    ``ValueError`` naming what differs when the runs did not deal the same cards."""
    pa, pb = mirrored_record(a, "the first run"), mirrored_record(b, "the second run")
    check_pairable(pa, pb, entrant)
    la, lb = pa["agents"], pb["agents"]
    da, db = pa["per_deal"][la[entrant]], pb["per_deal"][lb[entrant]]
    if da["deals"] != db["deals"]:
        raise ValueError("the two runs' entrants played different deals")
    sa, sb = np.asarray(da["share"]), np.asarray(db["share"])
    mean, low, high = mean_interval(sa - sb)
    return {"agent_a": la[entrant], "agent_b": lb[entrant], "rate_a": float(sa.mean()),
            "rate_b": float(sb.mean()), "diff": mean, "low": low, "high": high,
            "deals": len(sa)}


def evaluate(agent: Any, opponents: Sequence[Any], rules: Any, num_games: int, seed: int = 0, *,
             batch_size: int = 4096, progress: bool = False, workers: int = 1,
             max_decisions: int | None = None) -> list[dict[str, Any]]:
    """``agent`` against each of ``opponents`` in turn (filling every other seat of the
    table), ``num_games`` games each, seats rotated. One row per opponent: games, win rate
    of ``agent`` and its 95% interval, mean game length.

    ``max_decisions``: cut each game there (None: the rules' own limit), a game with no
    winner. ``workers`` > 1 plays the opponents in that many processes at once, one opponent per
    process; every opponent keeps its own seed, so the rows are the same as with one
    worker. Agents then travel to the processes by pickling: pass names or model paths."""
    rules = resolve_rules(rules)
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise ValueError(f"workers = {workers!r}; allowed: an integer >= 1")
    jobs = [(agent, opp, rules, num_games, _derive(seed, 7, k), batch_size, max_decisions)
            for k, opp in enumerate(opponents)]
    if workers == 1 or len(jobs) == 1:
        return [_evaluate_one(*job, progress=progress) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("spawn")   # no fork of a process holding torch threads
    with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=ctx) as ex:
        futures = [ex.submit(_evaluate_one, *job) for job in jobs]
        if progress:
            from concurrent.futures import as_completed

            from tqdm import tqdm
            for _ in tqdm(as_completed(futures), total=len(futures), unit="opponent",
                          desc="evaluation", file=sys.stderr):
                pass
        return [f.result() for f in futures]


def _evaluate_one(agent: Any, opp: Any, rules: RuleSet, num_games: int, seed: int,
                  batch_size: int, max_decisions: int | None = None,
                  progress: bool = False) -> dict[str, Any]:
    label = _labels([opp])[0]
    res = run_arena([agent] + [opp] * (rules.num_players - 1), rules, None, num_games, seed,
                    batch_size=batch_size, rating=False, progress=progress,
                    max_decisions=max_decisions)
    me = res.agent_rows()[0]
    return {"opponent": label, "games": me["games"], "win_rate": me["win_rate"],
            "ci_low": me["ci_low"], "ci_high": me["ci_high"], "fair_share": 1.0 / rules.num_players,
            "mean_length": me["mean_length"], "no_winner": int(res.records.truncated.sum()),
            "seconds": res.seconds}


def format_evaluation(rows: Sequence[dict[str, Any]], name: str = "agent") -> str:
    """The rows of :func:`evaluate` as a table: games, win rate (the agent's share of the
    wins) with its 95% interval beside the fair share (1 / players), mean length and the
    games that ended with no winner (cut at max_decisions)."""
    what = "win rate" if not rows or rows[0].get("fair_share", 0.5) == 0.5 else "win share"
    lines = [f"{name} against each opponent ({what}, 95% interval; every other seat plays the "
             f"opponent)",
             f"{'opponent':<14} {'games':>8} {what:>10} {'95% interval':>16} {'fair share':>10} "
             f"{'mean length':>11} {'no winner':>9}"]
    for r in rows:
        ci = f"[{100 * r['ci_low']:.2f}, {100 * r['ci_high']:.2f}]"
        lines.append(f"{r['opponent']:<14} {r['games']:>8} {100 * r['win_rate']:>9.2f}% {ci:>16} "
                     f"{100 * r.get('fair_share', 0.5):>9.1f}% {r['mean_length']:>11.1f} "
                     f"{r.get('no_winner', 0):>9}")
    return "\n".join(lines)


# ---- the arena on a Ray cluster ---------------------------------------------------------
RAY_CONNECT_SECONDS = 5.0
"""How long a Ray address may take to accept a connection before it is refused."""
_RAY_ADDRESS = re.compile(r"(?:ray://)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]{1,253}):([0-9]{1,5})")


def check_ray_address(address: Any, reach: bool = False) -> str:
    """``address`` if it is a Ray address of an allowed form (``local``, ``auto``,
    ``host:port`` or ``ray://host:port``), else one ``ValueError`` naming it and the forms.
    With ``reach``, a ``host:port`` must also accept a TCP connection within
    :data:`RAY_CONNECT_SECONDS` (Ray itself would wait for minutes, or for ever)."""
    allowed = "local (a new local Ray), auto, host:port or ray://host:port"
    if not isinstance(address, str) or not address:
        raise ValueError(f"ray_address={address!r:.80}; allowed: {allowed}")
    if address in ("local", "auto"):
        return address
    m = _RAY_ADDRESS.fullmatch(address)
    if m is None or not 0 < int(m.group(2)) <= 65535:
        raise ValueError(f"ray_address={address!r:.80}; allowed: {allowed}")
    if reach:
        import socket

        host = m.group(1).strip("[]")
        try:
            socket.create_connection((host, int(m.group(2))), timeout=RAY_CONNECT_SECONDS).close()
        except OSError as exc:
            why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
            raise ValueError(f"ray_address={address}: cannot connect within "
                             f"{RAY_CONNECT_SECONDS:g} s ({why}); is a Ray cluster running there?") from None
    return address
TASKS_PER_CPU = 4
"""Ray tasks per CPU of the cluster the games are cut into (when there are enough batches)."""


def play_on_ray(address: str, rules: RuleSet, agents: Sequence[Agent],
                tables: Sequence[tuple[int, ...]], orders: Sequence[tuple[int, ...]], per: int,
                seed: int, batch_size: int, max_decisions: int | None, progress: Any,
                nodes: dict[str, int], mirrored: bool = False) -> list[tuple[np.ndarray, ...]]:
    """Play the games of :func:`run_arena` as Ray tasks: every seating's ``per`` games are cut
    on batch boundaries into tasks (about ``TASKS_PER_CPU`` per CPU of the cluster, spread
    over its nodes), each playing its batches on the batched core with the seeds the
    one-process run gives them (``_seating_seed``; ``mirrored`` as in run_arena), so the
    records are the same. Returns, per seating in the one-process order, ``(entrants, wins,
    scores, length, truncated)``; ``progress`` (optional) is updated as tasks finish;
    ``nodes`` counts the games each Ray node played. Connects to
    ``address`` (``"local"``: a new local Ray) unless Ray is initialised, and then leaves it
    as it was."""
    try:
        import ray
    except ImportError:
        raise ValueError("ray_address needs Ray, which is not installed: "
                         "pip install 'ono-env[ray]'") from None
    started = not ray.is_initialized()
    if started:
        check_ray_address(address, reach=True)
        kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": "warning"}
        if address == "local":
            ray.init(include_dashboard=False, **kwargs)
        else:
            ray.init(address=address, **kwargs)
    try:
        agents_ref = ray.put(list(agents))
        task = ray.remote(_play_task).options(num_cpus=1, scheduling_strategy="SPREAD")
        seatings_ = [(t, o, [table[k] for k in order]) for t, table in enumerate(tables)
                     for o, order in enumerate(orders)]
        n_batches = math.ceil(per / batch_size)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        step = max(1, math.ceil(n_batches * len(seatings_) / (TASKS_PER_CPU * cpus)))
        pending, parts = {}, {}
        for j, (t, o, seated) in enumerate(seatings_):
            seating_seed = _seating_seed(seed, t, o, mirrored)
            for c, b0 in enumerate(range(0, n_batches, step)):
                ref = task.remote(rules, agents_ref, seated, per, seating_seed, batch_size,
                                  max_decisions, range(b0, min(b0 + step, n_batches)))
                pending[ref] = (j, c)
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                key = pending.pop(ref)
                out = ray.get(ref)
                parts[key] = out
                nodes[out[4]] = nodes.get(out[4], 0) + len(out[2])
                if progress is not None:
                    progress.update(len(out[2]))
    finally:
        if started:
            ray.shutdown()
    results = []
    for j, (t, o, seated) in enumerate(seatings_):
        chunks = [parts[key] for key in sorted(k for k in parts if k[0] == j)]
        w, s, length, trunc = (np.concatenate([c[i] for c in chunks]) for i in range(4))
        results.append((np.broadcast_to(np.array(seated), w.shape), w, s, length, trunc))
    return results


def _play_task(rules: RuleSet, agents: Sequence[Agent], seated: Sequence[int], per: int,
               seed: int, batch_size: int, max_decisions: int | None,
               batches: range) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """One Ray task of :func:`play_on_ray`: ``batches`` of one seating, and the node id."""
    import ray

    w, s, length, trunc = play_games(rules, [agents[e] for e in seated], per, seed,
                                     batch_size=batch_size, max_decisions=max_decisions,
                                     batches=batches)
    return w, s, length, trunc, ray.get_runtime_context().get_node_id()
