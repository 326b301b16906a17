"""An arena run's result (tables, files), saved runs read back, and paired comparisons of
two mirrored runs."""

from __future__ import annotations

import collections
import csv
import io
import itertools
import json
import math
import re
import reprlib
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from ono_env.agents.base import unmarked
from ono_env.arena.play import ALL_SEATINGS_UP_TO, GameRecords, SEATINGS_VERSION, seatings
from ono_env.arena.stats import bounded_mean_interval, percent_interval, wilson_interval
from ono_env.checks import (
    JSONError,
    as_path,
    check_input_file,
    check_output_dir,
    check_text,
    is_int,
    is_sha256,
    parse_json,
    path_text,
    shown,
    write_whole,
)
from ono_env.replay import Replay
from ono_env.rules import MAX_PLAYERS, MIN_PLAYERS, RuleSet

MAX_ARENA_JSON_BYTES = 256 << 20
"""The largest arena.json read (a mirrored run of 20,000 deals writes about 1 MB)."""


def _game_shares(r: GameRecords) -> np.ndarray:
    """Each seat's share of each game's win, ``(G, P)``: a game without a winner shares 1/N
    to every seat."""
    return np.where(r.wins.sum(axis=1, keepdims=True) > 0, r.wins, 1.0 / r.entrants.shape[1])


def _deal_means(deal: np.ndarray, mine: np.ndarray, sel: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """``(deals, share, games)`` of :meth:`ArenaResult.per_deal`: the deal numbers of the
    games ``sel`` in increasing order, the mean of ``mine`` over each deal's games, and the
    number of games. Counted by deal number with ``bincount``, in the games' order as before
    (the same sums to the last bit): before, ``np.unique`` sorted the games at every call,
    and a head-to-head of 20 entrants over 2,000,000 mirrored games took minutes."""
    d = deal[sel]
    count = np.bincount(d)
    deals = np.flatnonzero(count)
    return deals, np.bincount(d, weights=mine[sel])[deals] / count[deals], int(sel.sum())


def _paired_stats(deals: np.ndarray, per_deal: np.ndarray, games: int) -> dict[str, float]:
    """:meth:`ArenaResult.paired`'s statistics of per-deal shares."""
    n = len(deals)
    if n == 0:
        return {"rate": float("nan"), "low": 0.0, "high": 1.0, "deals": 0, "games": 0,
                "sd": float("nan")}
    # each deal's share the mean of its games: the interval adds two games at each bound
    mean, low, high = bounded_mean_interval(per_deal, 0.0, 1.0, games / n)
    sd = float(per_deal.std(ddof=1)) if n > 1 else 0.0
    return {"rate": mean, "low": low, "high": high, "deals": n, "games": games, "sd": sd}


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
    max_decisions: int | None = None   # the cut asked for (None: the game's own limit)
    models: dict[str, str] = field(default_factory=dict)   # label -> model file's SHA-256

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
        return None if self.records.deal is None else len(np.unique(self.records.deal))

    def paired(self, e: int, other: int | None = None) -> dict[str, float]:
        """Mirrored deals: entrant ``e``'s mean share of the wins per deal (a game without a
        winner shares 1/N to every seat), over the deals it played (with ``other``: the
        deals where both sat), with a 95% interval over deals
        (:func:`~ono_env.arena.stats.bounded_mean_interval`: a normal interval that keeps its
        width where every deal scored alike; 20 deals all won at 2 players, each played in
        both seats: [86.5%, 100%]). Keys:
        ``rate``, ``low``, ``high``, ``deals``, ``games``, ``sd`` (standard deviation of a
        deal's score)."""
        return _paired_stats(*self.per_deal(e, other))

    def per_deal(self, e: int, other: int | None = None) -> tuple[np.ndarray, np.ndarray, int]:
        """Mirrored deals: ``(deals, share, games)``, the deal numbers entrant ``e`` played
        (with ``other``: those where both sat), in increasing order, its mean share of the
        wins in each deal's games (a game without a winner shares 1/N to every seat), and the
        number of those games."""
        r = self.records
        deal = self._deals()
        last = len(self.labels) - 1
        if not is_int(e) or not 0 <= e <= last:
            raise ValueError(f"e={e!r} ({type(e).__name__}); allowed: an entrant's place, 0 to "
                             f"{last}")
        if other is not None and (not is_int(other) or not 0 <= other <= last or other == e):
            raise ValueError(f"other={other!r} ({type(other).__name__}); allowed: None or an "
                             f"entrant's place, 0 to {last}, other than e={e}")
        at = r.entrants == e
        sel = at.any(axis=1)
        if other is not None:
            sel &= (r.entrants == other).any(axis=1)
        return _deal_means(deal, (_game_shares(r) * at).sum(axis=1), sel)

    def _deals(self) -> np.ndarray:
        """The games' deal numbers; ``ValueError`` for a run that was not mirrored."""
        if self.records.deal is None:
            raise ValueError("paired statistics need a mirrored run (run_arena(mirrored=True))")
        return self.records.deal

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
                # the share of the wins, a game with no winner 1/N to every seat; rounded
                # off the float's last bits (before: 10.999999999999998 in arena.csv)
                wins, lo, hi = round(pr["rate"] * games, 9), pr["low"], pr["high"]
            row: dict[str, Any] = {
                "agent": label, "games": games, "wins": wins,
                "win_rate": wins / games if games else float("nan"),
                "ci_low": lo, "ci_high": hi, "fair_share": self.fair_share,
                "mean_length": float(r.length[at.any(axis=1)].mean()) if games else float("nan"),
            }
            if self.rules.scoring != "none":
                row["mean_score"] = float(r.scores[at].mean()) if games else float("nan")
            if self.ratings:   # rate_games: the rating with its 95% interval
                rating = self.ratings[e]
                row.update(rating=rating["rating"], rating_low=rating["low"],
                           rating_high=rating["high"])
            rows.append(row)
        return rows

    def head_to_head(self) -> dict[str, np.ndarray]:
        """``rate[i, j]``: i's win rate in the games where both i and j sat (nan on the
        diagonal), with its 95% interval ``low``/``high`` and ``games``."""
        r = self.records
        K = len(self.labels)
        deal = self._deals() if self.mirrored else None   # refused without deals, as per_deal
        present = np.stack([(r.entrants == e).any(axis=1) for e in range(K)])   # (K, G)
        share = _game_shares(r) if deal is not None else r.wins
        rate = np.full((K, K), np.nan)
        low, high, games = rate.copy(), rate.copy(), np.zeros((K, K), np.int64)
        for i in range(K):
            # i's share of each game, once for all its pairs (as per_deal's, or its wins),
            # one entrant's at a time: (K, G) arrays of them took 16 bytes a game per entrant
            mine = (share * (r.entrants == i)).sum(axis=1)
            for j in range(K):
                if i == j:
                    continue
                both = present[i] & present[j]
                n = int(both.sum())
                games[i, j] = n
                if n and deal is not None:
                    pr = _paired_stats(*_deal_means(deal, mine, both))
                    rate[i, j], low[i, j], high[i, j] = pr["rate"], pr["low"], pr["high"]
                elif n:
                    w = float(mine[both].sum())
                    rate[i, j] = w / n
                    low[i, j], high[i, j] = wilson_interval(w, n)
        return {"rate": rate, "low": low, "high": high, "games": games}

    # ---- output ---------------------------------------------------------------------
    def format_table(self) -> str:
        """The run as text: a title line (rules, players, games, the fair share, the games
        with no winner, a mirrored run's deals), one row per entrant (games, its share of the
        wins with the 95% interval beside the fair share, mean score and length, the rating
        with its 95% interval, :func:`~ono_env.arena.stats.rate_games`), and, where more than
        one table was played, the head-to-head matrix (with a single table every cell would
        repeat its row's rate)."""
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
            head += f" {'rating (95% interval)':>21}"
        lines = [f"{self.rules.title}, {self.rules.num_players} players, "
                 f"{len(self.records.length):,} games"
                 + (f" ({deals_words(self.deals or 0, self.rules.num_players)})"
                    if self.mirrored else "")
                 + f", seed {self.seed}, played in {self.seconds:.1f} s"
                 + (f" (+ {self.rating_seconds:.1f} s of ratings)" if self.ratings else ""),
                 f"fair share {100 * self.fair_share:.1f}% (1 / {self.rules.num_players} players); "
                 f"{self.no_winner:,} game{'s' if self.no_winner != 1 else ''} with no winner "
                 f"(cut at the decision limit)"
                 + ("; mirrored deals: rates are per-deal means (a game with no winner counts "
                    "1/players to every seat), intervals over deals" if self.mirrored else ""),
                 # which way the columns count (before: only in the docs; a penalty score
                 # read as the stronger agent's)
                 "mean length: decisions a game"
                 + ({"winner": "; mean score: the points a seat ends with (the winner's "
                               "scoring: more is better)",
                     "penalty": "; mean score: the penalty points a seat ends with (fewer is "
                                "better)"}.get(self.rules.scoring, ""))
                 + ("; rating: the Luce model of the winner fitted to all games, Elo scale "
                    "(400 points apart: 10 to 1 between two), the entrants' mean at 0, higher "
                    "is stronger" if self.ratings else ""),
                 head]
        for x in sorted(rows, key=lambda x: -x["win_rate"]):
            rate, low, high = percent_interval(x["win_rate"], x["ci_low"], x["ci_high"], 2)
            line = (f"{x['agent']:<{width}} {x['games']:>8} {rate:>9}% {f'[{low}, {high}]':>16} "
                    f"{100 * x['fair_share']:>9.1f}%")
            if scoring:
                line += f" {x['mean_score']:>10.1f}"
            line += f" {x['mean_length']:>11.1f}"
            if self.ratings:   # whole points; round() makes -0.4 read +0, as its twin does
                cell = (f"{round(x['rating']):+d} [{round(x['rating_low']):+d}, "
                        f"{round(x['rating_high']):+d}]")
                line += f" {cell:>21}"
            lines.append(line)
        h2h = self.head_to_head()
        K = len(self.labels)
        if self.tables > 1:
            lines.append("")
            lines.append("head to head: row's win rate in games with column (95% interval)"
                         if self.rules.num_players == 2 else
                         f"head to head: row's win share in games with column (95% interval; "
                         f"fair {100 * self.fair_share:.1f}%)")
            texts = [["-" if i == j or h2h["games"][i, j] == 0 else
                      "{} [{}, {}]".format(*percent_interval(h2h["rate"][i, j], h2h["low"][i, j],
                                                             h2h["high"][i, j], 1))
                      for j in range(K)] for i in range(K)]
            # as wide as the widest cell (before: 18, and a wider cell pushed its row out)
            cw = max(18, width, *(len(t) for row in texts for t in row))
            lines.append(" " * (width + 1) + " ".join(f"{lab:>{cw}}" for lab in self.labels))
            for i in range(K):
                lines.append(f"{self.labels[i]:<{width}} " + " ".join(f"{t:>{cw}}" for t in texts[i]))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        h2h = self.head_to_head()

        def clean(a: np.ndarray) -> list:
            return [[None if (isinstance(v, float) and math.isnan(v)) else v for v in row]
                    for row in a.tolist()]

        out = {
            "rules": self.rules.to_dict(), "seed": self.seed, "seconds": self.seconds,
            "rating_seconds": self.rating_seconds,
            "games": len(self.records.length),
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
            out["seating"] = SEATINGS_VERSION
            out["batch_size"] = self.batch_size
            out["max_decisions"] = self.max_decisions
            out["models"] = dict(self.models)
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

    def save(self, directory: str | Path, stem: str = "arena", *, new: bool = False,
             written: list[Path] | None = None) -> list[Path]:
        """Write ``<stem>.json`` (everything; a mirrored run also each entrant's per-deal
        results, ``per_deal``, and ``batch_size``) and ``<stem>.csv`` (the per-agent table) into
        ``directory``. Returns the paths. (``ono_env.apps.arena_cli.plot_head_to_head`` draws
        the head-to-head matrix.) ``stem``: a file name without a folder, letters, digits,
        '.', '_' and '-', the first a letter or digit. Files of those names already there are
        replaced (``ono-arena --out`` refuses such a folder before it plays); each is written
        whole, through a temporary file, so a run killed meanwhile leaves no part of one (the
        JSON is written first: a failure at the CSV leaves the new JSON beside the old CSV).
        ``new``: replace no file, even one written since the caller checked the folder (two
        runs into one folder at once: the second is refused, not mixed with the first).
        ``written``: a list each path is appended to as its file is written, so that a caller
        can name them where a later one fails."""
        if not isinstance(stem, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", stem):
            raise ValueError(f"stem={shown(stem, 60)}; allowed: a file name without a folder, 1-100 "
                             f"letters, digits, '.', '_' and '-', the first a letter or digit")
        d = check_output_dir(directory, "ArenaResult.save")
        paths = [d / f"{stem}.json", d / f"{stem}.csv"]
        data = self.to_dict()
        per_deal = data.pop("per_deal", None)
        text = json.dumps(data, indent=2)
        if per_deal is not None:   # one line per list: a 20,000-deal run stays small
            lists = ",\n".join(f'    {json.dumps(label)}: {json.dumps(v, separators=(",", ":"))}'
                                for label, v in per_deal.items())
            text = text[:-2] + ',\n  "per_deal": {\n' + lists + "\n  }\n}"
        rows = self.agent_rows()
        table = io.StringIO(newline="")
        w = csv.DictWriter(table, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
        done = [] if written is None else written
        done.append(write_whole(paths[0], (text + "\n").encode(), "arena result file", new=new))
        done.append(write_whole(paths[1], table.getvalue().encode(), "arena table file", new=new))
        return paths

def arena_json_path(path: str | Path) -> Path:
    """The ``arena.json`` that ``path`` names: the file, or the one in the folder ``path``
    (what :func:`read_arena_json` reads). ``ValueError`` naming it where the system cannot
    tell (a name too long)."""
    p = as_path(path, "arena.json", "file or folder")
    try:
        return p / "arena.json" if p.is_dir() else p
    except OSError as exc:   # a name too long for the system (before: its OSError, whole)
        raise ValueError(f"cannot read arena.json {path_text(p)}: {exc.strerror or exc}") from None


def read_arena_json(path: str | Path) -> dict[str, Any]:
    """A saved run: the ``arena.json`` at ``path``, or in the folder ``path``, as a dict
    (JSON only: nothing in it runs). ``ValueError`` naming the file when it is missing or
    not an arena.json."""
    p = arena_json_path(path)
    check_input_file(p, "arena.json", MAX_ARENA_JSON_BYTES)   # missing, a folder, too large
    try:   # NaN stays: a row of an agent with no games writes its rate as NaN
        data = parse_json(p.read_bytes(), finite=False, bom=True)
    except OSError as exc:
        raise ValueError(f"cannot read {path_text(p)}: {exc.strerror or exc}") from None
    except JSONError as exc:
        raise ValueError(f"{path_text(p)} is not an arena.json (not JSON: {exc})") from None
    if not isinstance(data, dict) or not {"rules", "seed", "games", "agents"} <= data.keys():
        raise ValueError(f"{path_text(p)} is not an arena.json (saved by ArenaResult.save, "
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
                "games": len(run.records.length), "batch_size": run.batch_size,
                "agents": list(run.labels), "per_deal": run.per_deal_table(),
                "max_decisions": run.max_decisions, "models": dict(run.models),
                "seating": SEATINGS_VERSION}
    if not isinstance(run, dict):
        raise ValueError(f"{name} is a {type(run).__name__}; allowed: an ArenaResult or the "
                         f"dict of a saved arena.json")
    if run.get("mirrored") is not True or not isinstance(run.get("per_deal"), dict):
        raise ValueError(f"{name} holds no per-deal results: it was not saved from a mirrored "
                         f"run of this version (ono-arena --mirrored --out DIR)")

    def whole(value: Any, field: str, low: int = 0) -> int:   # as the run wrote it: no "4", 4.0
        if type(value) is not int or value < low:
            raise ValueError(f"{field} = {shown(value, 40)}; allowed: an integer of at least {low}")
        return value

    try:
        missing = [k for k in ("rules", "seed", "games", "batch_size", "agents") if k not in run]
        if missing:   # before: "(KeyError: 'batch_size')"
            raise ValueError(f"it has no {missing[0]!r}")
        rows = run["agents"]
        if not isinstance(rows, list) or not rows or not all(
                isinstance(row, dict) and "agent" in row for row in rows):
            raise ValueError(f"agents = {shown(rows, 60)}; allowed: a list of one mapping per "
                             f"entrant, each with its label under 'agent'")
        # printable text (a label with a terminal's escape sequence was printed as it was)
        labels = [check_text("an agent's label", row["agent"], MAX_ARENA_LABEL) for row in rows]
        counts = collections.Counter(labels)
        twice = next((x for x in labels if counts[x] > 1), None)
        if twice is not None:   # the arena numbers copies (before: read, and the wrong one compared)
            raise ValueError(f"the label {twice!r} is given twice; the arena gives each entrant "
                             f"its own (random#1, random#2)")
        games = whole(run["games"], "games", 1)
        if not isinstance(run["rules"], dict):
            raise TypeError(f"rules must be a mapping; got {type(run['rules']).__name__}")
        players = run["rules"].get("num_players")
        if type(players) is not int or not MIN_PLAYERS <= players <= min(MAX_PLAYERS, len(labels)):
            raise ValueError(f"rules' num_players = {shown(players, 20)}; allowed: an integer from "
                             f"{MIN_PLAYERS} to {min(MAX_PLAYERS, len(labels))} (the entrants)")
        per: dict[str, dict[str, list[Any]]] = {}
        for lab in labels:   # a damaged file must not print nan% or 700%
            entry = run["per_deal"].get(lab)
            if not isinstance(entry, dict) or not {"deals", "share"} <= entry.keys():
                raise ValueError(f"per_deal of {lab!r} (an agent of the run) = {shown(entry, 40)}; "
                                 f"allowed: a mapping with the lists 'deals' and 'share'")
            deals, shares = entry["deals"], entry["share"]
            if not isinstance(deals, list) or not isinstance(shares, list):
                raise TypeError(f"per_deal of {lab!r}: deals and share must be lists")
            d = [whole(x, f"a deal number of {lab!r}") for x in deals]
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                       and 0.0 <= x <= 1.0 for x in shares) \
                    or len(d) != len(shares) or not d or any(b <= a for a, b in pairwise(d)) \
                    or d[-1] >= games:
                raise ValueError(f"per_deal of {lab!r}: a list of increasing deal numbers, each "
                                 f"below the run's {games:,} games, and as many shares from 0 "
                                 f"to 1 is needed")
            per[lab] = {"deals": d, "share": [float(x) for x in shares]}
        # the deals a mirrored run of this size seats each entrant at (before: a list cut
        # short or shifted was found only after the new run had played every game)
        _check_mirrored_deals([per[lab]["deals"] for lab in labels], labels, players, games)
        for row, lab in zip(rows, labels):   # the shares are the rate the run reported (before:
            # an edited share list was compared, beside the rate the file still gave)
            rate = row.get("win_rate")
            mean = sum(per[lab]["share"]) / len(per[lab]["share"])
            if isinstance(rate, (int, float)) and not isinstance(rate, bool) \
                    and not abs(rate - mean) <= 1e-9:
                raise ValueError(f"per_deal of {lab!r}: its shares' mean, {mean:.6f}, is not its "
                                 f"win_rate, {rate:.6f}; allowed: the per-deal shares the run "
                                 f"saved")
        # written since 2026-12-02 (an older file has neither: not compared)
        cut = run.get("max_decisions", UNRECORDED)
        if cut is not None and cut is not UNRECORDED:
            cut = whole(cut, "max_decisions", 1)
        models = run.get("models", UNRECORDED)
        if models is not UNRECORDED and not (isinstance(models, dict) and all(
                isinstance(k, str) and is_sha256(v) for k, v in models.items())):
            raise ValueError("models: a mapping of entrant labels to SHA-256 hex digests is needed")
        # written since 2026-12-07 (an older file seated its tables in the order given)
        seating = whole(run.get("seating", 1), "seating", 1)
        if seating > SEATINGS_VERSION:
            raise ValueError(f"seating = {seating}; allowed: 1 or {SEATINGS_VERSION} (this "
                             f"version of ono_env's)")
        return {"rules": dict(run["rules"]), "seed": whole(run["seed"], "seed"), "games": games,
                "batch_size": whole(run["batch_size"], "batch_size", 1), "agents": labels,
                "per_deal": per, "max_decisions": cut, "models": models, "seating": seating}
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} is not a complete arena.json of a mirrored run "
                         f"({type(exc).__name__}: {exc})") from None


def deals_words(deals: int, num_players: int) -> str:
    """How a mirrored run's deals are said: ``"51 deals, each played in every seating"``
    (or, past :data:`ALL_SEATINGS_UP_TO` players, ``"in 5 seatings, the seats rotated"``)."""
    return (f"{deals:,} deal{'s' if deals != 1 else ''}, each played in "
            + ("every seating" if num_players <= ALL_SEATINGS_UP_TO else
               f"{num_players} seatings, the seats rotated"))


def _check_mirrored_deals(deals: list[list[int]], labels: list[str], players: int,
                          games: int) -> None:
    """``ValueError`` naming the first entrant whose deal numbers are not those a mirrored
    run of ``len(labels)`` entrants at ``players`` and ``games`` games seats it at (run_arena:
    deal ``j`` of table ``t``, the ``t``-th combination of entrants, is ``t * per + j``, with
    ``per`` games per seating). The counts are compared first, so that a file's huge
    ``games`` or many entrants cost no more than its own lists; then one pass over the
    tables."""
    n = len(labels)
    rounds = math.comb(n, players) * len(seatings(players))
    per, left = divmod(games, rounds)
    tables_each = math.comb(n - 1, players - 1)

    def wrong(lab: str) -> ValueError:
        return ValueError(f"per_deal of {lab!r}: not the deals a mirrored run of {n} entrants "
                          f"at {players} players and {games:,} games seats it at")
    for lab, d in zip(labels, deals):
        if left or len(d) != tables_each * per:
            raise wrong(lab)
    tables_of: list[list[int]] = [[] for _ in labels]
    for t, table in enumerate(itertools.combinations(range(n), players)):
        for e in table:
            tables_of[e].append(t)
    for lab, d, tables in zip(labels, deals, tables_of):
        if d != [t * per + j for t in tables for j in range(per)]:
            raise wrong(lab)


MAX_ARENA_LABEL = 1000
"""The longest entrant label :func:`mirrored_record` reads (a model file's name makes one)."""

UNRECORDED: Any = object()
"""What :func:`mirrored_record` gives for ``max_decisions`` and ``models`` of an arena.json
written before they were recorded: nothing to compare."""


def seating_matters(labels: list[str], players: int, entrant: int = 0) -> bool:
    """Could the way a run seated its tables past four players (``seating``,
    :data:`~ono_env.arena.play.SEATINGS_VERSION`) change the per-deal shares of the entrant
    at ``entrant``? Not for a single table of copies of one agent, nor for the one agent at a
    table of copies of another, whose every order around the table is the same (its shares
    are those of either seating); else yes."""
    plain = _unnumbered([unmarked(str(x)) for x in labels])
    if players <= ALL_SEATINGS_UP_TO:
        return False
    if len(plain) != players:
        return True
    counts = collections.Counter(plain)
    return not (len(counts) == 1 or (len(counts) == 2 and counts[plain[entrant]] == 1))


def _unnumbered(labels: list[str]) -> list[str]:
    """The entrants' labels without the ``#k`` the arena adds to a name given more than once
    (only where the name without it is another label's too and no label is that name alone,
    as the arena numbers every copy: a name of its own that ends in ``#1`` keeps it)."""
    bases = [re.sub(r"#\d+$", "", x) for x in labels]
    return [b if x != b and bases.count(b) > 1 and b not in labels else x
            for x, b in zip(labels, bases)]


_PAIRING_FIELDS: dict[str, tuple[type, str]] = {
    "rules": (dict, "a rule set's dict"), "seed": (int, "an integer"),
    "games": (int, "an integer"), "batch_size": (int, "an integer"),
    "agents": (list, "a list of the entrants' labels"),
    "models": (dict, "a dict of label to SHA-256 or None")}
"""The fields of a run's record that :func:`check_pairable` reads, their kinds and words."""


def _check_pairing_record(p: Any, name: str) -> None:
    """``ValueError`` naming ``name`` where ``p`` is not a run's record as
    :func:`check_pairable` reads it (``models`` may be missing, or unrecorded)."""
    made = "mirrored_record makes one from an ArenaResult or an arena.json's dict"
    if not isinstance(p, dict):
        raise ValueError(f"{name} is a {type(p).__name__}; allowed: a run's record ({made})")
    for key, (kind, allowed) in _PAIRING_FIELDS.items():
        if key == "models" and p.get(key, UNRECORDED) is UNRECORDED:
            continue
        value = p.get(key)
        if (not isinstance(value, kind) or isinstance(value, bool)
                or (isinstance(value, list) and not all(isinstance(x, str) for x in value))):
            raise ValueError(f"{name}'s {key} = {shown(value, 40)}; allowed: {allowed} ({made})")


def check_pairable(pa: dict[str, Any], pb: dict[str, Any], entrant: int = 0) -> None:
    """``ValueError`` naming what differs unless two runs (dicts with ``rules`` (a RuleSet's
    dict), ``seed``, ``games``, ``batch_size``, ``agents`` (labels; a " (cheating)" mark is
    ignored) and, where recorded, ``max_decisions`` and ``models`` (label -> the SHA-256 of
    the model the entrant plays from, :func:`~ono_env.agents.learned.played_models`)) dealt
    the same cards, cut games alike and seated the same entrants but the one at
    ``entrant``: the same labels, and where both runs recorded models, the same model under
    each label, or none under it in either (a model's label is its file's name, which
    another file may share; a search agent's label does not name its guide). One model
    file labelled by its folder in one run (``d1/m.safetensors``: another entrant's file
    had its name) and by its name in the other (``m``) is the same entrant where both runs
    recorded its digest. The rules are compared without their name, which deals no card.
    Past four players, runs seated otherwise (``seating``: 1 in an arena.json written before
    2026-12-07, which played the order given; where a record has none, this version's) are
    refused where that could change the compared entrant's shares (:func:`seating_matters`).
    ``ValueError`` for a record whose fields are not of those kinds (before: Python's
    ``TypeError`` or ``AttributeError`` on an arena.json's dict given as it was read, which
    :func:`mirrored_record` turns into a record)."""
    for name, p in (("the first run", pa), ("the second run", pb)):
        _check_pairing_record(p, name)
    if len(pa["agents"]) != len(pb["agents"]):   # first: it changes the number of games too
        raise ValueError(f"the two runs have {len(pa['agents'])} and {len(pb['agents'])} "
                         f"entrants; a paired comparison needs the same tables (the same number "
                         f"of entrants)")
    for key, what in (("rules", "rules"), ("seed", "seed"), ("games", "number of games played")):
        va, vb = pa[key], pb[key]
        if key == "rules" and isinstance(va, dict) and isinstance(vb, dict):
            # a rule set's name deals no card (before: two files of one rule set under two
            # names were refused as dealing other cards)
            va, vb = ({k: v for k, v in r.items() if k != "name"} for r in (va, vb))
        if va != vb:
            shown = ((va, vb) if key != "rules" else
                     ({k: v for k, v in va.items() if vb.get(k) != v},
                      {k: v for k, v in vb.items() if va.get(k) != v}))
            rounded = "; a mirrored run plays the games asked rounded up to whole deals" if key == "games" else ""
            raise ValueError(f"the two runs differ in {what} ({shown[0]} against {shown[1]}{rounded}), "
                             f"so they did not deal the same cards; a paired comparison needs the "
                             f"same rules, seed, games and batch size")
    if pa["batch_size"] != pb["batch_size"]:
        # each batch of a seating deals from a seed of its own (play_games: the batch's
        # number; its games from the batch's seed and size): where a seating's games fill one
        # batch in both runs, both dealt them as batch 0 of the same size, the same cards
        players: Any = pa["rules"].get("num_players") if isinstance(pa["rules"], dict) else None
        per: int | None = None   # a seating's games (None: a plan without a player count)
        if is_int(players) and MIN_PLAYERS <= players <= min(MAX_PLAYERS, len(pa["agents"])):
            per = pa["games"] // (math.comb(len(pa["agents"]), players) * len(seatings(players)))
        small = min(pa["batch_size"], pb["batch_size"])
        if per is None or per > small:
            fill = ("" if per is None else
                    f": a seating's {per:,} games fill more than one batch of {small:,}, and "
                    f"each batch deals from a seed of its own")
            raise ValueError(f"the two runs differ in batch size ({pa['batch_size']} against "
                             f"{pb['batch_size']}){fill}, so they did not deal the same cards; "
                             f"a paired comparison needs the same batch size, or batches that "
                             f"each hold a seating's games in both runs")
    la = [unmarked(str(x)) for x in pa["agents"]]
    lb = [unmarked(str(x)) for x in pb["agents"]]
    if not (isinstance(entrant, (int, np.integer)) and not isinstance(entrant, bool)
            and 0 <= entrant < len(la)):
        raise ValueError(f"entrant = {entrant!r}; allowed: an entrant's place, 0 to {len(la) - 1}")
    others_a = la[:entrant] + la[entrant + 1:]
    others_b = lb[:entrant] + lb[entrant + 1:]
    # a name given twice is numbered by its place among all the entrants (random#1,
    # random#2): "random random" against "greedy random" seats one random as the other
    # entrant of both; the models recorded under the labels are compared below
    plain_a, plain_b = _unnumbered(la), _unnumbered(lb)
    ma, mb = pa.get("models", UNRECORDED), pb.get("models", UNRECORDED)
    raw_a = [str(x) for x in pa["agents"]]
    raw_b = [str(x) for x in pb["agents"]]

    def file_labels(x: str, y: str) -> bool:
        """Could ``x`` and ``y`` both label one model file: ``x`` its folder and file name
        (a label with a '/': no agent name or spec has one), ``y`` the same or its file's
        name (not a search agent, whose recorded digest is its guide's)."""
        tail = x.rsplit("/", 1)[-1]
        return "/" in x and ("/" in y or y in (tail, tail.rsplit(".", 1)[0]))

    def same_entrant(k: int) -> bool:
        if plain_a[k] == plain_b[k]:
            return True
        # one model file, labelled by its folder in a run where another entrant's file had
        # its name, and by its name in the other (before: refused as another entrant): the
        # same file by its digest
        return (UNRECORDED not in (ma, mb) and raw_a[k] == la[k] and raw_b[k] == lb[k]
                and (file_labels(la[k], lb[k]) or file_labels(lb[k], la[k]))
                and ma.get(raw_a[k]) is not None and ma.get(raw_a[k]) == mb.get(raw_b[k]))

    if not all(same_entrant(k) for k in range(len(la)) if k != entrant):
        raise ValueError(f"the other entrants differ ({', '.join(others_a)} against "
                         f"{', '.join(others_b)}); a paired comparison plays two agents "
                         f"against the same others")
    players = pa["rules"].get("num_players")
    seat_a, seat_b = pa.get("seating", SEATINGS_VERSION), pb.get("seating", SEATINGS_VERSION)
    for name, seat in (("the first run", seat_a), ("the second run", seat_b)):
        if type(seat) is not int or not 1 <= seat <= SEATINGS_VERSION:
            raise ValueError(f"{name}'s seating = {reprlib.repr(seat)}; allowed: 1 or "
                             f"{SEATINGS_VERSION} (where recorded; {SEATINGS_VERSION} where not)")
    if is_int(players) and seat_a != seat_b and (
            seating_matters(pa["agents"], players, entrant)
            or seating_matters(pb["agents"], players, entrant)):
        # (before: paired, and an agent against itself differed by a point, each run's
        # neighbours another's)
        old = "the first" if seat_a < seat_b else "the second"
        raise ValueError(f"{old} run seated its tables of {players} players in the order its "
                         f"agents were given (an arena.json written before 2026-12-07), the "
                         f"other in an order drawn for each deal, so the same deal sat other "
                         f"neighbours side by side; play {old} run again to pair them")
    cut_a, cut_b = pa.get("max_decisions", UNRECORDED), pb.get("max_decisions", UNRECORDED)
    if UNRECORDED not in (cut_a, cut_b) and cut_a != cut_b:
        raise ValueError(f"the two runs cut games at different decision limits (max_decisions "
                         f"{cut_a} against {cut_b}: None is the game's own limit); a paired "
                         f"comparison needs the same")
    if UNRECORDED not in (ma, mb):
        for k, (xa, xb) in enumerate(zip(raw_a, raw_b)):
            if k != entrant and ma.get(xa) != mb.get(xb):
                raise ValueError(f"the other entrant {la[k]!r} is not the same model in the two "
                                 f"runs (the SHA-256 of the model it plays from: "
                                 f"{str(ma.get(xa))[:12]} against {str(mb.get(xb))[:12]}; None: "
                                 f"none); a paired comparison plays two agents against the "
                                 f"same others")

def paired_difference(a: Any, b: Any, entrant: int = 0) -> dict[str, Any]:
    """A against B on the same deals: entrant ``entrant`` of run ``a`` and the entrant in the
    same place of run ``b`` (an ArenaResult, or the dict of a saved ``arena.json``), two
    mirrored runs that dealt the same cards (the same rules, seed, number of games, batch
    size and number of entrants) against the same other entrants. Returns ``rate_a``,
    ``rate_b`` (each one's mean share of the wins per deal), ``diff`` = rate_a - rate_b with
    a 95% interval over the deals (``low``, ``high``: :func:`~ono_env.arena.stats.bounded_mean_interval` in [-1,
    1]; the luck of the deal cancels twice, between seats and between the runs), ``deals``,
    ``agent_a``, ``agent_b``.
    ``ValueError`` naming what differs when the runs did not deal the same cards."""
    pa, pb = mirrored_record(a, "the first run"), mirrored_record(b, "the second run")
    check_pairable(pa, pb, entrant)
    la, lb = pa["agents"], pb["agents"]
    da, db = pa["per_deal"][la[entrant]], pb["per_deal"][lb[entrant]]
    if da["deals"] != db["deals"]:
        raise ValueError("the two runs' entrants played different deals")
    sa, sb = np.asarray(da["share"]), np.asarray(db["share"])
    # each deal's difference that of two means over the deal's seatings
    mean, low, high = bounded_mean_interval(sa - sb, -1.0, 1.0,
                                            len(seatings(pa["rules"]["num_players"])))
    return {"agent_a": la[entrant], "agent_b": lb[entrant], "rate_a": float(sa.mean()),
            "rate_b": float(sb.mean()), "diff": mean, "low": low, "high": high,
            "deals": len(sa)}
