"""What one update minibatch costs, in arithmetic and in time: the default run's network
against the mixture's, on real observations.

    python benchmarks/bench_update_cost.py --out docs/results/update-cost
    python benchmarks/bench_update_cost.py --rounds 9 --threads 2

``bench_train.py --mixture`` measures how fast the 30-table mixture trains beside the default
run, and splits the time into the games, the policy and the update. This script looks into
the update alone, for the same three settings: the default run (``basic``, 2 players,
observation version 1, a 128-128 trunk), the mixture at the default width (version 2, the
128-128 trunk with the opponent encoder of 32 units that ``opponent_encoder: auto`` gives
version 2) and the mixture with the generalist's network (256-256, encoder 32).

The rows are a rollout's worth of real observations: the tables of ``bench_table_steps.py``
(the 30 of the mixture with ``--games`` games each, and the default run's 1,024 games) each
stepped ``n_steps`` times (16, as the trainer's rollouts) with uniformly random legal learner
moves, the observation and the legal actions kept at every step. Each round runs one epoch
of minibatches of 2,048 rows over every setting's rows in turn (a fresh random order each
time): the trainer's own forward pass (``ActorCritic.run_prepared`` on a prepared rollout
where there is an encoder, the network on the gathered rows otherwise), the clipped PPO loss
with the entropy and the value terms as the trainer computes them (none of its options:
teachers, colour term, privileged critic), the backward pass, the gradient clipping and
fused Adam. Advantages, returns and old log-probabilities are random numbers: they change no
product's shape.

The arithmetic is counted by ``torch.utils.flop_counter.FlopCounterMode`` over one
minibatch's forward and backward passes of each setting: the matrix products torch runs,
padding rows included, two floating-point operations per multiply-add. The report gives each
setting's operations and milliseconds per minibatch (medians over ``--rounds`` rounds), both
against the default run's, and the update's seconds per 100,000 learner steps (4 epochs of
every row, as the trainer's ``n_epochs``). Writes ``update_cost.md`` and ``update_cost.json``
into ``--out`` (when given) and prints the table. Nothing else should run meanwhile.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import time
from typing import Any

import numpy as np
from bench_args import (
    checked_rounds,
    cpu_name,
    machine,
    optional_out,
    out_folder,
    parser,
    path_arg,
    run_script,
    within,
)
from bench_table_steps import DEFAULT, tables

MINIBATCH = 2048
"""Rows per minibatch, as the default config's ``ppo.batch_size``."""
N_STEPS = 16
"""Rollout steps per table, as the default config's ``ppo.n_steps``."""
N_EPOCHS = 4
"""Epochs over a rollout, as the default config's ``ppo.n_epochs``."""
SETTINGS = (("default (basic, 2 players, v1)", 1, [128, 128], 0),
            ("mixture (6 presets x 2-6 players, v2), default width", 2, [128, 128], 32),
            ("mixture, the generalist's network", 2, [256, 256], 32))
"""Each setting: its name (as ``bench_train.py --mixture`` reports it), the observation
version, the trunk and the opponent encoder's width (0: none)."""


def rollouts(games: int, seed: int) -> dict[int, tuple[Any, Any]]:
    """Observation version -> (observations, legal actions) of ``N_STEPS`` steps of its
    tables (version 2: the mixture's 30, version 1: the default run's), as torch tensors."""
    import torch

    made = tables(games, seed)
    rng = np.random.default_rng(seed)
    out = {}
    for version, labels in ((2, [k for k in made if k != DEFAULT]), (1, [DEFAULT])):
        obs, legal = [], []
        for _ in range(N_STEPS):
            for label in labels:
                batch, buf = made[label]
                mask = batch.game.legal_mask().copy()
                obs.append(batch.game.observe(batch.learner))
                legal.append(mask)
                batch.step((rng.random(mask.shape) * mask).argmax(axis=1), out=buf)
        out[version] = (torch.from_numpy(np.concatenate(obs)), torch.from_numpy(np.concatenate(legal)))
    return out


class Setting:
    """One setting's network, Adam and rows, and one minibatch's update."""

    def __init__(self, version: int, net_arch: list[int], encoder: int, rows: tuple[Any, Any],
                 seed: int) -> None:
        import torch

        from ono_env.observation import observation_scale
        from ono_env.rules import resolve_rules
        from ono_env.train.ppo import ActorCritic

        torch.manual_seed(seed)
        scale = observation_scale(resolve_rules("basic", num_players=2), version)
        self.model = ActorCritic(scale, net_arch, "tanh", True, encoder)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-4, eps=1e-5, fused=True)
        self.obs, self.legal = rows
        self.prep = self.model.prepare(self.obs, torch.float32) if encoder else None
        gen = torch.Generator().manual_seed(seed)
        M = len(self.obs)
        self.act = torch.multinomial(self.legal.float(), 1, generator=gen)[:, 0]
        self.adv = torch.randn(M, generator=gen)
        self.ret = torch.randn(M, generator=gen)
        self.logp_old = -torch.rand(M, generator=gen) * 3

    def loss(self, idx: Any) -> Any:
        """The trainer's loss on the rows ``idx`` (its forward pass first)."""
        import torch

        from ono_env.train.ppo import masked_entropy, masked_logits

        if self.prep is None:
            logits, value = self.model(self.obs.index_select(0, idx))
        else:   # idx comes back in the order of the rows
            logits, value, idx = self.model.run_prepared(self.prep, idx)
        legal = self.legal.index_select(0, idx)
        logp_all = torch.log_softmax(masked_logits(logits, legal), dim=1)
        logp = logp_all.gather(1, self.act.index_select(0, idx)[:, None])[:, 0]
        adv = self.adv.index_select(0, idx)
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        ratio = (logp - self.logp_old.index_select(0, idx)).exp()
        pg = -torch.min(adv * ratio, adv * ratio.clamp(0.8, 1.2)).mean()
        v = ((value.float() - self.ret.index_select(0, idx)) ** 2).mean()
        return pg - 0.01 * masked_entropy(logp_all, legal) + 0.5 * v

    def step(self, idx: Any) -> None:
        """One minibatch: forward, loss, backward, clipping, Adam."""
        import torch

        loss = self.loss(idx)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 0.5)
        self.opt.step()

    def flops(self, idx: Any) -> int:
        """The floating-point operations of one minibatch's forward and backward passes."""
        from torch.utils.flop_counter import FlopCounterMode

        with FlopCounterMode(display=False) as counter:
            self.loss(idx).backward()
        self.opt.zero_grad(set_to_none=True)
        return int(counter.get_total_flops())


def measure(games: int, rounds: int, threads: int, seed: int) -> dict[str, dict[str, Any]]:
    """Each setting's rows, operations and milliseconds per minibatch (medians over rounds)."""
    import torch

    torch.set_num_threads(threads)
    data = rollouts(games, seed)
    settings = {name: Setting(v, arch, enc, data[v], seed) for name, v, arch, enc in SETTINGS}
    gen = torch.Generator().manual_seed(seed)
    seconds: dict[str, list[float]] = {name: [] for name in settings}
    flops: dict[str, list[int]] = {name: [] for name in settings}
    seats = {}
    for name, s in settings.items():
        s.step(torch.randperm(len(s.obs), generator=gen)[:MINIBATCH])   # warm-up
        if s.prep is not None:
            seats[name] = float(s.prep.seats.float().mean())
    for _ in range(rounds):
        for name, s in settings.items():
            perm = torch.randperm(len(s.obs), generator=gen)
            batches = [perm[k:k + MINIBATCH] for k in range(0, len(perm) - MINIBATCH + 1, MINIBATCH)]
            flops[name].append(s.flops(batches[0]))
            t = time.perf_counter()
            for idx in batches:
                s.step(idx)
            seconds[name].append((time.perf_counter() - t) / len(batches))
    out = {}
    for name, s in settings.items():
        ms = 1000 * statistics.median(seconds[name])
        out[name] = {"rows": len(s.obs), "opponents_present_mean": seats.get(name),
                     "gflop_per_minibatch": statistics.median(flops[name]) / 1e9,
                     "ms_per_minibatch": ms, "ms_rounds": [1000 * x for x in seconds[name]],
                     "update_seconds_per_100k_steps": ms / 1000 * 100_000 * N_EPOCHS / MINIBATCH}
    return out


def report(res: dict[str, dict[str, Any]], args: argparse.Namespace) -> str:
    base = next(iter(res.values()))
    lines = [f"Minibatches of {MINIBATCH:,} rows from {N_STEPS} rollout steps of each setting's "
             f"tables ({args.games} games at each of the mixture's 30, 1,024 at the default "
             f"run's); medians of {args.rounds} rounds of one epoch each, torch_threads="
             f"{args.threads}, fp32; {machine()}.", "",
             "| setting | opponents present (mean) | GFLOP per minibatch | / default | "
             "ms per minibatch | / default | GFLOP/s | update, s per 100,000 learner steps |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in res.items():
        seats = "" if r["opponents_present_mean"] is None else f"{r['opponents_present_mean']:.2f}"
        lines.append(f"| {name} | {seats} | {r['gflop_per_minibatch']:.3f} | "
                     f"{r['gflop_per_minibatch'] / base['gflop_per_minibatch']:.2f} | "
                     f"{r['ms_per_minibatch']:.2f} | "
                     f"{r['ms_per_minibatch'] / base['ms_per_minibatch']:.2f} | "
                     f"{r['gflop_per_minibatch'] / r['ms_per_minibatch'] * 1000:.1f} | "
                     f"{r['update_seconds_per_100k_steps']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--games", type=int, default=34, help="games at each of the mixture's 30 tables")
    ap.add_argument("--rounds", type=int, default=7, help="rounds (the report gives medians)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    ap.add_argument("--seed", type=int, default=0,
                    help="seed of the games, the rows' order and the networks (default 0)")
    ap.add_argument("--out", type=path_arg, default=None,
                    help=optional_out("update_cost.md and update_cost.json"))
    args = ap.parse_args()
    # the mixture's rows must fill one minibatch: 30 tables x 16 steps x games
    within("bench_update_cost", "--games", args.games, -(-MINIBATCH // (30 * N_STEPS)), 1024)
    checked_rounds("bench_update_cost", args.rounds)
    within("bench_update_cost", "--threads", args.threads, 1, 256)
    within("bench_update_cost", "--seed", args.seed, 0, 2**31)
    if args.out:
        out_folder(args.out, "bench_update_cost", writes=("update_cost.md", "update_cost.json"))
    res = measure(args.games, args.rounds, args.threads, args.seed)
    text = report(res, args)
    print(text)
    if args.out:
        (args.out / "update_cost.md").write_text(
            "# What one update minibatch costs\n\n`python benchmarks/bench_update_cost.py "
            + shlex.join(sys.argv[1:]) + "`\n\n" + text)
        (args.out / "update_cost.json").write_text(json.dumps(
            {"games": args.games, "rounds": args.rounds, "threads": args.threads,
             "seed": args.seed, "cpu": cpu_name(), "minibatch": MINIBATCH, "n_steps": N_STEPS,
             "n_epochs": N_EPOCHS, "results": res}, indent=2) + "\n")


if __name__ == "__main__":
    run_script("bench_update_cost", main)
