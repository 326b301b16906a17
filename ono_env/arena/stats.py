"""The arena's statistics: intervals of win rates and of per-deal differences, and ratings
(the Luce model of the winner, fitted to all the games at once)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ono_env.arena.play import GameRecords
from ono_env.checks import check_int, is_real

Z95 = 1.959963984540054
"""The normal quantile of a two-sided 95% interval (every interval of the arena)."""
ROUNDING = 1e-9
"""How far past its bounds (a share of the range) a count or value may lie by rounding: a
sum of fractional shares can come out a few ulps over the number of games."""


def _real(name: str, value: object, allowed: str) -> float:
    """``value`` as a float when it is a finite number; else one ``ValueError`` naming it."""
    if not is_real(value) or not math.isfinite(value):   # type: ignore[arg-type]
        raise ValueError(f"{name}={value!r}; allowed: {allowed}")
    return float(value)   # type: ignore[arg-type]


def percent_interval(rate: float, low: float, high: float, digits: int) -> tuple[str, str, str]:
    """A share and its interval's ends as percentages printed with ``digits`` decimals, or
    with up to three more where the two ends, which differ, would print alike, so that no
    interval reads as having no width (before: ``100.0 [100.0, 100.0]`` for ends at 99.96
    and 100, and ``50.0 [50.0, 50.0]`` for a mirrored pairing of twins)."""
    for d in range(digits, digits + 4):
        r, lo, hi = (f"{100 * v:.{d}f}" for v in (rate, low, high))
        if lo != hi or low == high:
            break
    return r, lo, hi


def wilson_interval(wins: float, n: float, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval of a win rate (``wins`` may be fractional: shared wins);
    ``(0, 1)`` for no games. ``ValueError`` for a count that is not a finite number, ``n``
    below 0 or between 0 and 1, ``wins`` outside ``[0, n]`` or ``z`` not above 0."""
    n = _real("n", n, "a finite number of games: 0, or 1 or more")
    if n < 0 or 0 < n < 1:   # (before: 1e-320 games were a ZeroDivisionError)
        raise ValueError(f"n={n!r}; allowed: a finite number of games: 0, or 1 or more")
    wins = _real("wins", wins, f"a finite number from 0 to n={n:g}")
    if not -ROUNDING * max(1.0, n) <= wins <= n + ROUNDING * max(1.0, n):
        raise ValueError(f"wins={wins!r}; allowed: a finite number from 0 to n={n:g}")
    if not _real("z", z, "a finite number above 0") > 0:
        raise ValueError(f"z={z!r}; allowed: a finite number above 0")
    if n == 0:
        return (0.0, 1.0)
    p = wins / n
    den = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    # no wins (all wins): the end is exactly 0 (1); the subtraction leaves a rounding error
    low = 0.0 if wins <= 0 else max(0.0, centre - half)
    high = 1.0 if wins >= n else min(1.0, centre + half)
    return (low, high)


def _values(x: object, bounds: str) -> np.ndarray:
    """``x`` as a float64 array once it is a 1-d array of finite numbers; else one
    ``ValueError`` (``bounds``: the range allowed, said in it)."""
    v = np.asarray(x)
    if v.ndim != 1 or v.dtype.kind not in "iuf":
        raise ValueError(f"x is {v.dtype} {v.shape}; allowed: a 1-d array of numbers")
    v = v.astype(np.float64, copy=False)
    if len(v) and not np.isfinite(v).all():
        raise ValueError(f"x holds nan or inf; allowed: finite numbers{bounds}")
    return v


def mean_interval(x: np.ndarray) -> tuple[float, float, float]:
    """``(mean, low, high)`` of per-deal values ``x``: the mean with a normal 95% interval
    over the deals (nan where there are too few deals). ``ValueError`` for values that are
    not a 1-d array of finite numbers (before: a 2-d array was taken whole, text and a
    number failed inside NumPy)."""
    v = _values(x, "")
    n = len(v)
    mean = float(np.mean(v)) if n else float("nan")
    half = Z95 * float(np.std(v, ddof=1)) / math.sqrt(n) if n > 1 else float("nan")
    return mean, mean - half, mean + half


def bounded_mean_interval(x: np.ndarray, lo: float, hi: float,
                          games_per_deal: float = 1.0) -> tuple[float, float, float]:
    """``(mean, low, high)`` of per-deal values ``x`` that lie in ``[lo, hi]`` (a share of
    the wins in [0, 1], a difference of two in [-1, 1]): the plain mean, and a normal 95%
    interval over the deals computed with two more games at ``lo`` and two at ``hi``,
    clipped to ``[lo, hi]``: Agresti and Coull's "add two successes and two failures" for a
    proportion (z**2 / 2, about 2, at each end), carried to a bounded mean. Each value is
    the mean of ``games_per_deal`` games (a mirrored deal's seatings: 2 at 2 players, 24 at
    4, the player count above), so the games added weigh ``2 / games_per_deal`` deals at
    each end; with 1 (the default), two deals.

    In games, not deals, since 7 December 2026: at 3 to 10 players a deal's share is the
    mean of 5 to 24 games, far steadier than one game, and two whole deals at each end ruled
    the interval on few deals (25 deals at 4 players: random's 16.5% read [12.7, 29.6], the
    plain interval [13.6, 19.4]) and pulled it towards the middle on many (10 players, 400
    deals: as few as 93.6% of such intervals held the mean, where 95% should; 93.2% under
    ``ono``). Resampled from the deals of real tables at 2, 4, 6 and 10 players (the
    baselines together, and ``greedy`` against ``random``, under ``ono`` near the bound), 5
    to 400 deals, 20,000 times each, the interval in games held the true mean at least 94.4%
    of the time from 25 deals on, at every table; on 5 and 10 deals at least 92.1% and
    93.4% (``greedy`` against three ``random`` at 4 players, where two deals added held it
    99.9% and 99.3% of the time, twice as wide, and the plain interval 89.2% and 91.4%: a
    deal's 24 games that end alike are where it holds least), and on 25 deals at 4 and 10
    players it is about half as wide as with two deals added (8.5 and 10.0 points against
    18.8 and 19.2; ``benchmarks/bench_interval_coverage.py``, docs/results/interval-coverage).

    Written here because the interval must hold where the plain normal one fails, and no
    library offers it for a bounded mean: with every deal scored alike (20 deals all won)
    the plain interval has no width, and near a bound it moves the wrong way (19 deals won
    and 1 lost would reach higher than 19 won and 1 shared). With four deals of one game
    added, 20 of 20 won gives [80.4%, 100%], 19 won and 1 shared [77.8%, 100%], 19 won and 1
    lost [74.0%, 100%] (Wilson's for 20 of 20: [83.9%, 100%]), one deal still has an
    interval (at 3 to 10 players, where the games added weigh less than a deal, the whole
    range: one deal says nothing of how deals spread), and deals won or lost outright at a
    rate of 0.9 to 0.99 are covered close to 95% of the time (at least 93.5% from 10 deals
    on, by the exact binomial sums); over thousands of deals the games added move the ends
    by a few hundredths of a point or less.
    (nan with no deal.) ``ValueError`` for bounds that are not finite with ``lo < hi``, for values
    that are not a 1-d array of finite numbers in ``[lo, hi]``, and for ``games_per_deal``
    not a finite number of at least 1."""
    games_per_deal = _games_per_deal(games_per_deal)
    lo = _real("lo", lo, "a finite number below hi")
    hi = _real("hi", hi, "a finite number above lo")
    if not lo < hi:
        raise ValueError(f"lo={lo!r}, hi={hi!r}; allowed: finite bounds with lo < hi")
    v = _values(x, f" from lo={lo:g} to hi={hi:g}")
    n = len(v)
    tol = ROUNDING * (hi - lo)
    if n and not (v.min() >= lo - tol and v.max() <= hi + tol):
        raise ValueError(f"x holds values from {float(v.min())!r} to {float(v.max())!r}; "
                         f"allowed: finite numbers from lo={lo:g} to hi={hi:g}")
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(v.mean())
    return (mean, *bounded_interval_of(mean, float(((v - mean) ** 2).sum()), n, lo, hi,
                                       games_per_deal))


def _games_per_deal(g: object) -> float:
    """``games_per_deal`` checked: a finite number of at least 1."""
    g = _real("games_per_deal", g, "a finite number of at least 1 (the games a deal's value "
                                   "is the mean of)")
    if g < 1:
        raise ValueError(f"games_per_deal={g!r}; allowed: a finite number of at least 1 (the "
                         f"games a deal's value is the mean of)")
    return g


def bounded_interval_of(mean: float, ss: float, n: int, lo: float, hi: float,
                        games_per_deal: float = 1.0) -> tuple[float, float]:
    """:func:`bounded_mean_interval`'s ``(low, high)`` from ``n`` >= 1 per-deal values'
    ``mean`` and sum of squared deviations from it ``ss``: the two games added at each bound
    (``2 / games_per_deal`` deals) move the mean and the sum by formula, so a record that
    keeps only these (a suite ladder's, :func:`ono_env.arena.suite.with_todays_interval`)
    gives the same interval."""
    low, high = bounded_intervals(np.float64(mean), np.float64(ss), n, lo, hi, games_per_deal)
    return float(low), float(high)


def bounded_intervals(mean: np.ndarray, ss: np.ndarray, n: int, lo: float, hi: float,
                      games_per_deal: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bounded_interval_of` for arrays of ``mean`` and ``ss`` (each entry a series of
    ``n`` per-deal values) at once, by the same arithmetic (a benchmark's many resamples)."""
    k = 2.0 / _games_per_deal(games_per_deal)   # deals added at each bound
    m2 = (n * mean + k * lo + k * hi) / (n + 2 * k)
    ss2 = ss + n * (mean - m2) ** 2 + k * (lo - m2) ** 2 + k * (hi - m2) ** 2
    half = Z95 * np.sqrt(ss2 / (n + 2 * k - 1) / (n + 2 * k))
    return np.fmax(lo, m2 - half), np.fmin(hi, m2 + half)   # nan -> the bound, as max/min did


ELO = 400.0 / math.log(10.0)
"""Rating points per unit of log strength, the arena's and ``ono-bench``'s scale: 400
points apart are odds of 10 to 1 between two players."""


def _check_records(records: Any, num_entrants: int) -> tuple[np.ndarray, np.ndarray]:
    """``(entrants, wins)`` of ``records`` as int64 and float64 ``(G, P)`` arrays; one
    ``ValueError`` naming what is wrong (not a GameRecords, other shapes, an entrant outside
    0 to ``num_entrants - 1``, a share that is not a finite number of at least 0)."""
    if not isinstance(records, GameRecords):
        raise ValueError(f"records is a {type(records).__name__}; allowed: the GameRecords of "
                         f"a run (ArenaResult.records)")
    ent, wins = np.asarray(records.entrants), np.asarray(records.wins)
    if ent.ndim != 2 or ent.dtype.kind not in "iu" or wins.shape != ent.shape \
            or wins.dtype.kind not in "iuf":
        raise ValueError(f"records: entrants {ent.dtype} {ent.shape} and wins {wins.dtype} "
                         f"{wins.shape}; allowed: integer entrants and numeric wins, both of one "
                         f"(games, players) shape")
    if ent.size and not (ent.min() >= 0 and ent.max() < num_entrants):
        raise ValueError(f"records: entrants from {int(ent.min())} to {int(ent.max())}; allowed: "
                         f"0 to {num_entrants - 1} (num_entrants={num_entrants})")
    # a run's own arrays, not copied (before: two more copies of every game's seats, at the
    # peak of a run's memory)
    w = wins.astype(np.float64, copy=False)
    if w.size and not (np.isfinite(w).all() and w.min() >= 0):
        raise ValueError("records: wins hold a negative number, nan or inf; allowed: each seat's "
                         "share of the win, from 0 to 1")
    return ent.astype(np.int64, copy=False), w


def _tables(ent: np.ndarray, wins: np.ndarray, num_entrants: int) -> tuple[np.ndarray, np.ndarray]:
    """The games grouped by the set of entrants seated: ``(S, W)``, each ``(T, P)``, one row
    per set, its entrants in increasing order and each one's total share of the wins there."""
    G, P = ent.shape
    if G == 0:
        return np.zeros((0, P), np.int64), np.zeros((0, P))
    order = np.argsort(ent, axis=1, kind="stable")
    seated = np.take_along_axis(ent, order, axis=1)
    won = np.take_along_axis(wins, order, axis=1)
    if num_entrants ** P < 2 ** 62:   # one integer per set: a 1-d unique, the fastest
        key = seated @ (num_entrants ** np.arange(P - 1, -1, -1, dtype=np.int64))
        _keys, first, inv = np.unique(key, return_index=True, return_inverse=True)
        S = seated[first]
    else:
        S, inv = np.unique(seated, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    W = np.stack([np.bincount(inv, weights=won[:, p], minlength=len(S)) for p in range(P)],
                 axis=1)
    return S, W


def stalled(step: np.ndarray, gain: float, size: float, last: float) -> float | None:
    """The stop of Newton's method on a likelihood at its rounding: ``None`` (stalled: stop)
    where the step just taken (``step``, the Newton step before any clipping, which promised
    ``gain``: half the step times the gradient) promised less than the likelihood's
    rounding, 5e-16 of its ``size``, and did not shrink to under half of the step before
    (``last``: that step's largest move; ``inf`` at the first); else this step's largest
    move, the next call's ``last``.

    Near the maximum a Newton step shrinks to about its square, so a fit still converging
    goes on, step for step, as it would without this test (the ratings of fits that end
    by their step bound are unchanged to the last bit); what it ends is a fit whose steps
    are the gradient's own rounding, which with millions of games stays above any fixed
    bound on the step."""
    move = float(np.max(np.abs(step)))
    return None if gain < 5e-16 * size and move >= last / 2 else move


def rate_games(records: GameRecords, num_entrants: int,
               iters: int = 100) -> list[dict[str, float]]:
    """Each entrant's rating: the maximum-likelihood fit of the Luce model of the winner to
    all the games at once, ``ono-bench``'s model (:func:`ono_env.arena.suite.fit_ratings`).
    Entrant ``i`` has a strength ``exp(theta_i)``, and the seat that wins a game is drawn in
    proportion to the strengths at the table: a game won by ``i`` among the entrants ``S``
    has the likelihood ``exp(theta_i) / sum(exp(theta_j) for j in S)``. A win shared by
    ``k`` seats (a penalty-scored match) counts ``1/k`` of such a game to each, and a game
    with no winner (cut at the decision limit) counts nothing. Every entrant also gets one
    virtual game against a reference of strength ``exp(0)``, half won, as in ``ono-bench``,
    so that an entrant that never wins, or always wins, keeps a finite rating.

    Returns one ``{"rating", "low", "high"}`` per entrant, on the Elo scale
    (:data:`ELO` ``* theta``: 400 points apart are odds of 10 to 1 between two players),
    centred so that the entrants' mean rating is 0; ``low`` and ``high`` are the 95% interval
    of that rating, the entrant's distance from the entrants' mean, from the inverse of the
    Fisher information (the likelihood's curvature, the virtual games included) at the fit.
    The games enter only through their sums per set of entrants seated, so their order
    makes no difference, two entrants with identical records get one rating, and the cost
    after grouping the games (one sort) does not grow with their number.

    The fit is Newton's method on the log strengths (the log-likelihood is strictly concave
    with the virtual games), each step at most 2 in any entrant and halved while it would
    lower the likelihood, until no entrant moves by 1e-10 or the steps stall at the
    likelihood's rounding (:func:`stalled`); ``ValueError`` if ``iters`` steps do not get
    there. Written here rather than taken from a library (``choix`` fits Luce models,
    OpenSkill updates one game at a time): the games here are counts with fractional
    (shared) wins, grouped by table, with the virtual games of ``ono-bench``'s scale.
    (Before: OpenSkill's online updates, one game at a time in a seeded order; their result
    depended on that order and could rate the weaker entrant higher.)
    ``ValueError`` for records that are not a run's, or entrants outside ``num_entrants``."""
    K = check_int("num_entrants", num_entrants, 1)
    iters = check_int("iters", iters, 1)
    ent, wins = _check_records(records, K)
    S, W = _tables(ent, wins, K)
    N = W.sum(axis=1)                              # the wins counted at each set
    flat = S.reshape(-1)
    pairs = (S[:, :, None] * K + S[:, None, :]).reshape(-1)

    def loglik(theta: np.ndarray) -> float:
        x = theta[S]
        top = x.max(axis=1) if len(S) else np.zeros(0)
        lse = top + np.log(np.exp(x - top[:, None]).sum(axis=1))
        return float((W * x).sum() - (N * lse).sum()
                     + (0.5 * theta - np.logaddexp(0.0, theta)).sum())

    def info(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The log-likelihood's gradient and its Fisher information (the negative of its
        second derivatives, the same here) in the log strengths."""
        x = theta[S]
        e = np.exp(x - (x.max(axis=1, keepdims=True) if len(S) else 0.0))
        p = e / e.sum(axis=1, keepdims=True)      # each seat's chance of the win
        grad = np.bincount(flat, (W - N[:, None] * p).reshape(-1), K)
        H = np.diag(np.bincount(flat, (N[:, None] * p).reshape(-1), K))
        H -= np.bincount(pairs, (N[:, None, None] * p[:, :, None] * p[:, None, :]).reshape(-1),
                         K * K).reshape(K, K)
        q = 1.0 / (1.0 + np.exp(-theta))           # the virtual games
        grad += 0.5 - q
        H[np.diag_indices(K)] += q * (1.0 - q)
        return grad, H

    theta = np.zeros(K)
    now, last = loglik(theta), np.inf
    for _ in range(iters):
        grad, H = info(theta)
        newton = np.linalg.solve(H, grad)
        step = np.clip(newton, -2.0, 2.0)
        if np.max(np.abs(step)) < 1e-10:
            break
        gain = newton @ grad / 2                  # what the Newton step promises
        for _halving in range(30):   # the likelihood must not fall (rounding aside)
            trial = theta + step
            then = loglik(trial)
            if then >= now - 1e-12 * (1.0 + abs(now)):
                break
            step = step / 2
        theta, now = trial, then
        # with millions of games the gradient's own rounding (about 1e-16 of the win counts)
        # moves the entrants' common level, which only the virtual games hold, by some 1e-9
        # back and forth for ever (before: "no convergence" after 5,000,000 games of greedy
        # and random, the whole run's table lost)
        move = stalled(newton, gain, 1.0 + abs(now), last)
        if move is None:
            break
        last = move
    else:
        raise ValueError(f"rate_games: no convergence in {iters} Newton steps")
    _grad, H = info(theta)
    centre = np.eye(K) - 1.0 / K                  # theta_i - mean(theta)
    cov = centre @ np.linalg.inv(H) @ centre.T
    half = Z95 * ELO * np.sqrt(np.maximum(np.diag(cov), 0.0))
    rating = ELO * (theta - theta.mean())
    return [{"rating": float(r), "low": float(r - h), "high": float(r + h)}
            for r, h in zip(rating, half)]
