"""How colour-blind ``ppo-any`` is, and what averaging it over the colours' names is worth.

    python benchmarks/bench_color_symmetry.py --out docs/results/color-symmetry
    python benchmarks/bench_color_symmetry.py --tables basic-2 --deals 100 --out /tmp/cs

No rule tells the four colours apart, so a position with its colours renamed is the same
position (:func:`ono_env.observation.color_permutation`). A policy network is not colour-blind
by construction; this script measures how far the generalist is, at the tables given
(``<preset>-<players>``, the generalist's own seat against the preset's best baseline in every
other, as in ``bench_generalist.py``), on the same mirrored deals:

- **agreement**: over every decision of ``ppo-any``'s seat in the plain games, the share of
  the 23 other namings whose observation (renamed) gives the same move (renamed back);
- **averaged play**: the agent that plays the largest mean of the 24 namings' logits (each
  naming's logits of the position's actions), 24 network passes a decision, against plain
  ``ppo-any``: both win shares and their per-deal difference with a 95% interval.

The averaged agent is a measurement, not a shipped agent. Writes ``results.json`` and
``results.md`` into ``--out``.
"""

from __future__ import annotations

import itertools
import os
import sys
import time

# one thread a process: a second BLAS thread per process halves the speed of two
# processes side by side on two cores
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from bench_args import out_folder, parser, run_script
from bench_generalist import (
    PROBE_FILES,
    _games,
    add_probe_arguments,
    difference_cell,
    probe_setup,
    share_cell,
    write_probe_results,
)

from ono_env.agents.learned import LearnedAgent, load_agent
from ono_env.arena import run_arena
from ono_env.arena.play import seatings
from ono_env.arena.stats import bounded_mean_interval
from ono_env.observation import color_permutation
from ono_env.rules import resolve_rules

NAMINGS = list(itertools.permutations(range(4)))
"""The 24 ways to name the four colours; the first is the identity."""


class ColorAveraged(LearnedAgent):
    """``agent``'s network averaged over the 24 namings: the mean over them of the logits of
    the renamed observation, read back in the position's actions. With ``agreement`` (a
    list), the plain agent's moves instead, and for each decision the share of the 23 other
    namings whose largest legal logit is the plain move."""

    def __init__(self, agent: LearnedAgent, agreement: list | None = None) -> None:
        super().__init__(agent.net, agent.rules, f"{agent.name} (24 colour namings)", True,
                         agent.meta)
        v = agent.observation_version
        self.maps = [color_permutation(p, agent.rules, v) for p in NAMINGS]
        self.agreement = agreement

    def logits(self, obs: np.ndarray) -> np.ndarray:
        total = np.zeros((len(obs), 85))
        for oi, ai in self.maps:
            total += self.net(obs[:, oi])[:, ai]
        return (total / len(self.maps)).astype(np.float32)

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.agreement is None:
            return super().act(obs, mask, rng)
        plain = np.where(mask, self.net(obs), -np.inf).argmax(axis=1)
        same = np.zeros(len(obs))
        for oi, ai in self.maps[1:]:
            same += np.where(mask, self.net(obs[:, oi])[:, ai], -np.inf).argmax(axis=1) == plain
        self.agreement.extend((same / (len(self.maps) - 1)).tolist())
        return plain


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--tables", default="basic-2,ono-2,basic-6,ono-6",
                    help="<preset>-<players>, comma-separated (default "
                         "basic-2,ono-2,basic-6,ono-6)")
    add_probe_arguments(ap)
    args = ap.parse_args()
    best, tables, path = probe_setup(args, "bench_color_symmetry")
    models = {}
    for preset, n in tables:                     # every table's model before any game
        try:
            models[preset, n] = load_agent(path, resolve_rules(preset, num_players=n))
        except (OSError, ValueError) as exc:
            sys.exit(f"bench_color_symmetry: --model {args.model!r} at {preset}-{n}: {exc}")
    out_folder(args.out, "bench_color_symmetry", writes=PROBE_FILES)
    rows = []
    for preset, n in tables:
        rules = resolve_rules(preset, num_players=n)
        plain = models[preset, n]
        seats = [best[preset]] * (n - 1)
        games = _games(args.deals, n)
        agreement: list[float] = []
        shares, seconds = {}, {}
        for what, agent in (("plain", ColorAveraged(plain, agreement)),
                            ("averaged", ColorAveraged(plain))):
            t = time.perf_counter()
            ar = run_arena([agent] + seats, rules, n, games, args.seed, mirrored=True,
                           rating=False)
            deals, shares[what], _ = ar.per_deal(0)
            assert np.array_equal(deals, np.arange(args.deals))
            seconds[what] = time.perf_counter() - t
        diff = bounded_mean_interval(shares["averaged"] - shares["plain"], -1.0, 1.0,
                                     len(seatings(n)))
        row = {"preset": preset, "players": n, "opponent": best[preset], "deals": args.deals,
               "fair": 1 / n, "decisions": len(agreement),
               "agreement": float(np.mean(agreement)),
               "all_agree": float(np.mean(np.asarray(agreement) == 1.0)),
               "plain": float(shares["plain"].mean()),
               "averaged": float(shares["averaged"].mean()),
               "difference": list(diff), "seconds": seconds}
        rows.append(row)
        print(f"{preset}-{n}: agreement {100 * row['agreement']:.1f}%, plain "
              f"{100 * row['plain']:.2f}%, averaged {100 * row['averaged']:.2f}%, difference "
              f"{difference_cell(diff)}", file=sys.stderr)
    table = ["| preset | players | against | decisions | agreement | all agree | plain share "
             "| averaged share | averaged minus plain [95%] | deals | seconds (plain with agreement, averaged) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        table.append(
            f"| {r['preset']} | {r['players']} | {r['opponent']} | {r['decisions']:,} | "
            f"{100 * r['agreement']:.1f}% | {100 * r['all_agree']:.1f}% | "
            f"{share_cell(r['plain'], r['fair'])} | {share_cell(r['averaged'], r['fair'])} | "
            f"{difference_cell(r['difference'])} | {r['deals']:,} | "
            f"{r['seconds']['plain']:.0f}, {r['seconds']['averaged']:.0f} |")
    write_probe_results(args.out, "bench_color_symmetry.py", args.model, rows,
                        "Colour symmetry of the generalist",
                        "Agreement: the mean share of the 23 other colour namings that give the "
                        "plain move; all agree: the decisions where all 23 do. Averaged: the mean "
                        "of the 24 namings' logits.", table)


if __name__ == "__main__":
    run_script("bench_color_symmetry", main)
