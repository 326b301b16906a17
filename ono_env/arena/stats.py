"""The arena's statistics: intervals of win rates and of per-deal differences, and ratings."""

from __future__ import annotations

import math

import numpy as np

from ono_env.arena.play import GameRecords

Z95 = 1.959963984540054


def wilson_interval(wins: float, n: float, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval of a win rate (``wins`` may be fractional: shared wins)."""
    if n <= 0:
        return (0.0, 1.0)
    p = wins / n
    den = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    # no wins (all wins): the end is exactly 0 (1); the subtraction leaves a rounding error
    low = 0.0 if wins <= 0 else max(0.0, centre - half)
    high = 1.0 if wins >= n else min(1.0, centre + half)
    return (low, high)


def mean_interval(x: np.ndarray) -> tuple[float, float, float]:
    """``(mean, low, high)`` of per-deal values ``x``: the mean with a normal 95% interval
    over the deals (nan where there are too few deals)."""
    n = len(x)
    mean = float(np.mean(x)) if n else float("nan")
    half = Z95 * float(np.std(x, ddof=1)) / math.sqrt(n) if n > 1 else float("nan")
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
    deal.)"""
    v = np.asarray(x, dtype=np.float64)
    n = len(v)
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
