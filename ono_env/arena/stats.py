"""The arena's statistics: intervals of win rates and of per-deal differences, and ratings."""

from __future__ import annotations

import math

import numpy as np

from ono_env.arena.play import GameRecords
from ono_env.checks import is_real

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


def bounded_mean_interval(x: np.ndarray, lo: float, hi: float) -> tuple[float, float, float]:
    """``(mean, low, high)`` of per-deal values ``x`` that lie in ``[lo, hi]`` (a share of
    the wins in [0, 1], a difference of two in [-1, 1]): the plain mean, and a normal 95%
    interval over the deals computed with two more deals at ``lo`` and two at ``hi``,
    clipped to ``[lo, hi]``: Agresti and Coull's "add two successes and two failures" for a
    proportion (z**2 / 2, about 2, at each end), carried to a bounded mean.

    Written here because the interval must hold where the plain normal one fails, and no
    library offers it for a bounded mean: with every deal scored alike (20 deals all won)
    the plain interval has no width, and near a bound it moves the wrong way (19 deals won
    and 1 lost would reach higher than 19 won and 1 shared). With the four deals added, 20
    of 20 won gives [80.4%, 100%], 19 won and 1 shared [77.8%, 100%], 19 won and 1 lost
    [74.0%, 100%] (Wilson's for 20 of 20: [83.9%, 100%]), one deal still has an interval,
    and deals won or lost outright at a rate of 0.9 to 0.99 are covered close to 95% of the
    time (at least 93.5% from 10 deals on, by the exact binomial sums); over thousands of
    deals the four added deals move the ends by a few hundredths of a point. (nan with no
    deal.) ``ValueError`` for bounds that are not finite with ``lo < hi``, and for values
    that are not a 1-d array of finite numbers in ``[lo, hi]``."""
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
    return (mean, *bounded_interval_of(mean, float(((v - mean) ** 2).sum()), n, lo, hi))


def bounded_interval_of(mean: float, ss: float, n: int, lo: float,
                        hi: float) -> tuple[float, float]:
    """:func:`bounded_mean_interval`'s ``(low, high)`` from ``n`` >= 1 per-deal values'
    ``mean`` and sum of squared deviations from it ``ss``: the two deals added at each bound
    move the mean and the sum by formula, so a record that keeps only these (a suite
    ladder's, :func:`ono_env.arena.suite.with_todays_interval`) gives the same interval."""
    m2 = (n * mean + 2 * lo + 2 * hi) / (n + 4)
    ss2 = ss + n * (mean - m2) ** 2 + 2 * (lo - m2) ** 2 + 2 * (hi - m2) ** 2
    half = Z95 * math.sqrt(ss2 / (n + 3) / (n + 4))
    return float(max(lo, m2 - half)), float(min(hi, m2 + half))


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
        ranks: list[float] = [0 if w > 0 else 1 for w in wins]
        new = model.rate(teams, ranks=ranks)
        for e, team in zip(seats, new):
            players[e] = team[0]
    return [{"mu": p.mu, "sigma": p.sigma, "ordinal": p.ordinal()} for p in players]
