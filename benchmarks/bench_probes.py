"""Probes of a trained model at the generalist's tables: what its play leans on.

    python benchmarks/bench_probes.py --tables ono-6,basic-6 --out docs/results/generalist/probes/six
    python benchmarks/bench_probes.py --tables ono-3 --deals 100 --probes hide-history --out /tmp/p

Each probe is the model (``--model``, ``ppo-any`` by default) changed in one way, in one seat
against the preset's best baseline in every other (as in ``bench_generalist.py``), on the same
mirrored deals as the model itself; the script reports both win shares and their per-deal
difference with a 95% interval. The probes (``--probes``, comma-separated):

- ``hide-knowledge``, ``hide-history``, ``hide-public``: the model with a group of its
  version-2 opponent fields set to 0 at every decision: the public knowledge (known cards,
  lacks, the lacks covered, the unknown cards, whether it has drawn since it last played),
  the history (last and previous play, named colour), or both. The network never saw these zeroed in training, so the
  difference says how much its play leans on them, not what they are worth to a policy
  trained without them (``bench_observation_worth.py`` measures that);
- ``no-voluntary-draw``: the model may not draw while it may play a card;
- ``play-drawn``: the model must play a drawn card that may be played (it may not keep it);
- ``ensemble:<file>+<file>...``: the mean of the action probabilities (over the legal
  actions) of the model and the model files named, the largest played.

The probes are measurements, not agents to ship. Writes ``results.json`` and ``results.md``
into ``--out``.
"""

from __future__ import annotations

import os
import sys
import time

# one thread a process: a second BLAS thread per process halves the speed of two
# processes side by side on two cores
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from bench_args import distinct, out_folder, parser, run_script
from bench_generalist import (
    PROBE_FILES,
    _games,
    add_probe_arguments,
    difference_cell,
    probe_setup,
    share_cell,
    write_probe_results,
)

from ono_env import cards as C
from ono_env.agents.learned import LearnedAgent, load_agent
from ono_env.arena import run_arena
from ono_env.arena.play import seatings
from ono_env.arena.stats import bounded_mean_interval
from ono_env.observation import observation_view
from ono_env.rules import resolve_rules

HIDE = {
    "hide-knowledge": ("known_cards", "lacks", "lacks_covered", "unknown", "drew"),
    "hide-history": ("last_play", "previous_play", "named_color"),
}
HIDE["hide-public"] = HIDE["hide-knowledge"] + HIDE["hide-history"]
MASKS = ("no-voluntary-draw", "play-drawn")
PROBES = (*HIDE, *MASKS, "ensemble:<file>+<file>...")


class Probe(LearnedAgent):
    """``agent`` changed by the probe ``what`` (see the module docstring); ``others``: the
    further models (loaded agents) of an ensemble."""

    def __init__(self, agent: LearnedAgent, what: str, others: list[LearnedAgent] = ()) -> None:
        super().__init__(agent.net, agent.rules, f"{agent.name} ({what})", True, agent.meta)
        self.what = what
        self.members = [agent, *others]

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.what in HIDE:
            obs = obs.copy()
            opponents = observation_view(obs, self.rules, 2).opponents
            for field in HIDE[self.what]:
                getattr(opponents, field)[...] = 0.0
        elif self.what in MASKS:
            mask = mask.copy()
            may_play = mask[:, :C.A_DRAW].any(axis=1)
            mask[:, C.A_DRAW if self.what == "no-voluntary-draw" else C.A_KEEP] &= ~may_play
        else:                                              # an ensemble
            probs = sum(m.probabilities(obs, mask) for m in self.members)
            return np.where(mask, probs, -1.0).argmax(axis=1)
        return super().act(obs, mask, rng)


def parse_probes(text: str) -> list[str]:
    """The probes named in ``text``; exits with one error naming a probe that is not one."""
    probes = [p.strip() for p in text.split(",") if p.strip()]
    for p in probes:
        if p not in HIDE and p not in MASKS and not (p.startswith("ensemble:") and p[9:]):
            sys.exit(f"bench_probes: --probes {p!r}; allowed: {', '.join(PROBES)}")
    if not probes:
        sys.exit(f"bench_probes: --probes names none; allowed: {', '.join(PROBES)}")
    return distinct("bench_probes", "--probes", probes)


def ensemble_member(path: str, rules) -> LearnedAgent:
    """The model file ``path`` of an ensemble, loaded for ``rules``: it reads the observations
    the probed model reads (version 2), or a ``ValueError`` now, before any game (else its
    first forward pass fails mid-game)."""
    member = load_agent(path, rules)
    if member.observation_version != 2:
        raise ValueError(f"ensemble member {path!r}: observation version "
                         f"{member.observation_version}; the probes read version-2 "
                         f"observations")
    return member


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--tables", default="ono-6,ono-2", help="<preset>-<players>, comma-separated (default ono-6,ono-2)")
    ap.add_argument("--probes", default=",".join((*HIDE, *MASKS)),
                    help=f"comma-separated, each once, of: {', '.join(PROBES)} (default: all "
                         f"but the ensemble)")
    add_probe_arguments(ap)
    args = ap.parse_args()
    best, tables, path = probe_setup(args, "bench_probes")
    probes = parse_probes(args.probes)
    agents = {}
    for preset, n in tables:                     # every file loads before anything is played
        rules = resolve_rules(preset, num_players=n)
        # each refusal names its option (before: "at ono-6: ...", for the model and the
        # probes' files alike)
        try:
            model = load_agent(path, rules)
        except (OSError, ValueError) as exc:
            sys.exit(f"bench_probes: --model {args.model!r} at {preset}-{n}: {exc}")
        if model.observation_version != 2:
            sys.exit(f"bench_probes: --model {args.model!r}: observation version "
                     f"{model.observation_version}; allowed: a version-2 model (the probes read "
                     f"version-2 observations)")
        try:
            agents[preset, n] = [
                Probe(model, p, [ensemble_member(f, rules) for f in p[9:].split("+")]
                      if p.startswith("ensemble:") else []) for p in probes]
        except (OSError, ValueError) as exc:
            sys.exit(f"bench_probes: --probes at {preset}-{n}: {exc}")
        agents[preset, n].insert(0, model)
    out_folder(args.out, "bench_probes", writes=PROBE_FILES)
    rows = []
    for preset, n in tables:
        rules = resolve_rules(preset, num_players=n)
        seats = [best[preset]] * (n - 1)
        games = _games(args.deals, n)
        shares = []
        for agent in agents[preset, n]:
            t = time.perf_counter()
            ar = run_arena([agent] + seats, rules, n, games, args.seed, mirrored=True,
                           rating=False)
            deals, share, _ = ar.per_deal(0)
            assert np.array_equal(deals, np.arange(args.deals))
            shares.append(share)
            if agent is agents[preset, n][0]:
                continue
            what = agent.what
            diff = bounded_mean_interval(share - shares[0], -1.0, 1.0, len(seatings(n)))
            rows.append({"preset": preset, "players": n, "opponent": best[preset],
                         "probe": what, "deals": args.deals, "fair": 1 / n,
                         "plain": float(shares[0].mean()), "probed": float(share.mean()),
                         "difference": list(diff), "seconds": time.perf_counter() - t})
            print(f"{preset}-{n} {what}: {100 * share.mean():.2f}% against "
                  f"{100 * shares[0].mean():.2f}%, difference {difference_cell(diff)}",
                  file=sys.stderr)
    table = ["| preset | players | against | probe | model's share | probe's share "
             "| probe minus model [95%] | deals | seconds |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        table.append(
            f"| {r['preset']} | {r['players']} | {r['opponent']} | {r['probe']} | "
            f"{share_cell(r['plain'], r['fair'])} | {share_cell(r['probed'], r['fair'])} | "
            f"{difference_cell(r['difference'])} | {r['deals']:,} | "
            f"{r['seconds']:.0f} |")
    write_probe_results(args.out, "bench_probes.py", args.model, rows, "Probes of the generalist",
                        "Each probe changes the model in one way (the script's docstring says "
                        "how) and plays the same deals.", table)


if __name__ == "__main__":
    run_script("bench_probes", main)
