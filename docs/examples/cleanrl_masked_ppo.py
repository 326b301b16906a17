"""Masked PPO in the CleanRL style, on ono_env's native Gymnasium vector env.

    python docs/examples/cleanrl_masked_ppo.py --total-timesteps 200000 --opponents greedy

One file, every step of the algorithm in view (after CleanRL's ``ppo.py``, with invalid
action masking: illegal logits set to a large negative number before the softmax). The
environment is ``gymnasium.make_vec("ono_env/Ono-v0", vectorization_mode="vector_entry_point")``:
all games in one batched ``VecGame``, masks in ``infos["action_mask"]``, same-step
autoreset (so the observation after a finished episode is already the next episode's, and
its mask comes with it). Needs torch (the ``[train]`` extra). An example to read and change,
not the project's trainer (that is ``ono-train``).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn

import ono_env  # noqa: F401 - registers ono_env/Ono-v0
from ono_env.checks import MAX_SEED
from ono_env.observation import observation_scale
from ono_env.rules import MAX_PLAYERS, MIN_PLAYERS, resolve_rules


@dataclass
class Args:
    rules: str = "basic"
    players: int = 2   # --players, as ono-arena and ono-play name it
    opponents: str = "greedy"
    seed: int = 1
    total_timesteps: int = 200_000
    num_envs: int = 128
    num_steps: int = 32
    learning_rate: float = 3e-4
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    clip_coef: float = 0.2
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    hidden: int = 256
    torch_threads: int = 1


BOUNDS = {"players": (MIN_PLAYERS, MAX_PLAYERS), "seed": (0, MAX_SEED), "total_timesteps": (1, 10**10),
          "num_envs": (1, 100_000), "num_steps": (1, 100_000), "learning_rate": (0, 1),
          "gamma": (0, 1), "gae_lambda": (0, 1), "num_minibatches": (1, 10**6),
          "update_epochs": (0, 1000), "clip_coef": (0, 10), "ent_coef": (0, 10),
          "vf_coef": (0, 100), "max_grad_norm": (0, 10**6), "hidden": (1, 65_536),
          "torch_threads": (1, 1024)}   # as ono-train's torch_threads
"""Each number's range (ends included; a learning rate, clip and gradient norm above 0)."""


def check_args(args: Args) -> None:
    """One ``ValueError`` for a value the algorithm cannot use (before: a ZeroDivisionError,
    NaN logits or torch's own errors after the environment was made, and ``--gamma 2`` or
    ``--total-timesteps 0``, which still trained a batch, taken silently)."""
    for name, (low, high) in BOUNDS.items():
        v = getattr(args, name)
        positive = name in ("learning_rate", "clip_coef", "max_grad_norm")
        if not low <= v <= high or (positive and v <= 0):   # NaN fails both
            what = f"above {low}" if positive else f"from {low}"
            raise ValueError(f"--{name.replace('_', '-')} {v}; allowed: {what} to {high}")
    batch = args.num_envs * args.num_steps
    if args.total_timesteps < batch:
        raise ValueError(f"--total-timesteps {args.total_timesteps:,}; allowed: at least one batch, "
                         f"--num-envs x --num-steps = {batch:,} (it trains whole batches)")
    # a short last minibatch, or minibatches of one row: the advantages' std() is NaN there
    if batch % args.num_minibatches or batch // args.num_minibatches < 2:
        raise ValueError(f"--num-minibatches {args.num_minibatches}; allowed: a divisor of the "
                         f"batch, --num-envs x --num-steps = {batch:,}, that leaves minibatches "
                         f"of at least 2 steps (at most {batch // 2:,})")


def parse_args() -> Args:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Args()).items():
        p.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    args = Args(**vars(p.parse_args()))
    try:
        check_args(args)
    except ValueError as exc:
        p.error(str(exc))
    return args


class Agent(nn.Module):
    def __init__(self, obs_size: int, scale: np.ndarray, hidden: int) -> None:
        super().__init__()
        self.register_buffer("scale", torch.as_tensor(scale, dtype=torch.float32))

        def mlp(out: int, std: float) -> nn.Sequential:
            last = nn.Linear(hidden, out)
            nn.init.orthogonal_(last.weight, std)
            nn.init.zeros_(last.bias)
            return nn.Sequential(nn.Linear(obs_size, hidden), nn.Tanh(),
                                 nn.Linear(hidden, hidden), nn.Tanh(), last)
        self.actor = mlp(85, 0.01)
        self.critic = mlp(1, 1.0)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic(obs / self.scale).squeeze(-1)

    def act(self, obs: torch.Tensor, mask: torch.Tensor, action: torch.Tensor | None = None):
        logits = self.actor(obs / self.scale).masked_fill(~mask, -1e8)   # illegal: never drawn
        dist = torch.distributions.Categorical(logits=logits)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action), dist.entropy(), self.value(obs)


def main(args: Args) -> dict:
    check_args(args)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.torch_threads)
    try:   # the environment checks the rules, players and opponents given on the command line
        envs = gym.make_vec("ono_env/Ono-v0", num_envs=args.num_envs,
                            vectorization_mode="vector_entry_point", rules=args.rules,
                            num_players=args.players, opponents=args.opponents)
    except ValueError as exc:
        raise SystemExit(f"cleanrl_masked_ppo: {exc}") from None
    # a preset or a rules YAML, as the environment took it (before: a YAML path failed here)
    rules = resolve_rules(args.rules, num_players=args.players)
    obs_size = envs.single_observation_space.shape[0]
    agent = Agent(obs_size, observation_scale(rules), args.hidden)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    N, T = args.num_envs, args.num_steps
    batch_size = N * T
    minibatch = batch_size // args.num_minibatches
    obs_buf = torch.zeros((T, N, obs_size))
    mask_buf = torch.zeros((T, N, 85), dtype=torch.bool)
    act_buf = torch.zeros((T, N), dtype=torch.long)
    logp_buf, rew_buf, done_buf, val_buf = (torch.zeros((T, N)) for _ in range(4))

    obs, infos = envs.reset(seed=args.seed)
    next_obs = torch.as_tensor(obs)
    next_mask = torch.as_tensor(infos["action_mask"])
    next_done = torch.zeros(N)
    wins = episodes = 0
    steps = 0
    start = time.time()
    for _ in range(max(1, args.total_timesteps // batch_size)):
        for t in range(T):
            obs_buf[t], mask_buf[t], done_buf[t] = next_obs, next_mask, next_done
            with torch.no_grad():
                action, logp, _, value = agent.act(next_obs, next_mask)
            act_buf[t], logp_buf[t], val_buf[t] = action, logp, value
            obs, reward, terminated, truncated, infos = envs.step(action.numpy())
            done = terminated | truncated
            rew_buf[t] = torch.as_tensor(reward)
            next_obs = torch.as_tensor(obs)
            next_mask = torch.as_tensor(infos["action_mask"])
            next_done = torch.as_tensor(done, dtype=torch.float32)
            episodes += int(done.sum())
            wins += int((reward[done] > 0).sum())
            steps += N
        # generalised advantage estimation (same-step autoreset: a done step has no successor
        # in its episode, so its bootstrap value is cut)
        with torch.no_grad():
            next_value = agent.value(next_obs)
            adv = torch.zeros((T, N))
            last = torch.zeros(N)
            for t in reversed(range(T)):
                nonterminal = 1.0 - (next_done if t == T - 1 else done_buf[t + 1])
                nv = next_value if t == T - 1 else val_buf[t + 1]
                delta = rew_buf[t] + args.gamma * nv * nonterminal - val_buf[t]
                last = delta + args.gamma * args.gae_lambda * nonterminal * last
                adv[t] = last
            ret = adv + val_buf
        b_obs, b_mask = obs_buf.reshape(batch_size, -1), mask_buf.reshape(batch_size, -1)
        b_act, b_logp = act_buf.reshape(-1), logp_buf.reshape(-1)
        b_adv, b_ret = adv.reshape(-1), ret.reshape(-1)
        for _ in range(args.update_epochs):
            for idx in torch.randperm(batch_size).split(minibatch):
                _, logp, entropy, value = agent.act(b_obs[idx], b_mask[idx], b_act[idx])
                ratio = (logp - b_logp[idx]).exp()
                a = b_adv[idx]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg_loss = torch.max(-a * ratio, -a * ratio.clamp(1 - args.clip_coef,
                                                                 1 + args.clip_coef)).mean()
                v_loss = 0.5 * ((value - b_ret[idx]) ** 2).mean()
                loss = pg_loss + args.vf_coef * v_loss - args.ent_coef * entropy.mean()
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        sps = steps / (time.time() - start)
        print(f"steps {steps:>9,}  episodes {episodes:>7,}  win rate {wins / max(episodes, 1):.3f}"
              f"  {sps:,.0f} steps/s", flush=True)
    return {"steps": steps, "episodes": episodes, "win_rate": wins / max(episodes, 1)}


if __name__ == "__main__":
    main(parse_args())
