"""A masked PPO on ONO with TorchRL's own components (an example, not the project's trainer).

    python docs/examples/torchrl_ppo.py --frames 200000

The Gymnasium env (``ono_env/Ono-v0``: the learner against opponents played inside
``step``) through TorchRL's ``GymWrapper``; the legal actions come from the env's
``info["action_mask"]`` through TorchRL's info reader, and the ``ActionMask`` transform
masks the action spec. The policy is a ``ProbabilisticActor`` with a ``MaskedCategorical``
(illegal actions get probability 0), the critic a ``ValueOperator``; a
``Collector`` gathers ``--batch`` frames, ``GAE`` and ``ClipPPOLoss`` update them.
It ends by playing the trained policy against the opponent and printing its win rate.
Needs the ``[train]`` extra and ``torchrl``.
"""

from __future__ import annotations

import argparse


def make_env(rules: str = "basic", players: int = 2, opponents: str = "random", seed: int = 0):
    """ONO's Gymnasium env as a TorchRL env whose tensordicts carry ``action_mask``."""
    import gymnasium
    import torch
    from torchrl.data import Binary
    from torchrl.envs import ActionMask, GymWrapper, TransformedEnv
    from torchrl.envs.gym_like import default_info_dict_reader

    import ono_env  # noqa: F401 - registers ono_env/Ono-v0

    class CheckedGymWrapper(GymWrapper):
        """GymWrapper refusing an action that is no integer id: its read_action casts with
        ``safe=False``, so 2.7 played action 2 and True action 1 (the env's own check of
        the action came after that cast), and one that is not one id (shape ``(1,)``: its
        ``int()`` raised a ``TypeError`` from inside TorchRL)."""

        def read_action(self, action):
            allowed = "one integer action id, as a 0-d tensor of an integer dtype"
            if action.dtype == torch.bool or action.dtype.is_floating_point \
                    or action.dtype.is_complex:
                raise ValueError(f"action={action!r} ({action.dtype}); allowed: {allowed}")
            if action.dim() != 0:
                raise ValueError(f"action={action!r} of shape {tuple(action.shape)}; "
                                 f"allowed: {allowed}")
            return super().read_action(action)

    gym_env = gymnasium.make("ono_env/Ono-v0", rules=rules, num_players=players,
                             opponents=opponents)
    base = CheckedGymWrapper(gym_env, categorical_action_encoding=True)
    n = base.action_spec.space.n
    base.set_info_dict_reader(default_info_dict_reader(
        ["action_mask"], spec={"action_mask": Binary(n, dtype=torch.bool)}))
    env = TransformedEnv(base, ActionMask())
    env.set_seed(seed)
    return env


def train(frames: int = 200_000, batch: int = 2_048, epochs: int = 4, minibatch: int = 256,
          lr: float = 3e-4, seed: int = 0, hidden: int = 128, opponents: str = "random"):
    """Train; returns (policy, env, frames collected). The collector gathers whole batches,
    so ``frames`` is rounded up to a multiple of ``batch`` (200,000 frames of 2,048: 200,704);
    each epoch samples the batch in ``batch // minibatch`` minibatches, so ``batch`` is a
    multiple of ``minibatch``; ``epochs=0`` collects without updating."""
    import torch
    from tensordict.nn import TensorDictModule
    from torch import nn
    from torchrl.collectors import Collector
    from torchrl.data import LazyTensorStorage, ReplayBuffer
    from torchrl.data.replay_buffers.samplers import SamplerWithoutReplacement
    from torchrl.modules import MaskedCategorical, ProbabilisticActor, ValueOperator
    from torchrl.objectives import ClipPPOLoss
    from torchrl.objectives.value import GAE

    counts = {"frames": frames, "batch": batch, "epochs": epochs, "minibatch": minibatch}
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name}={value!r}; allowed: a whole number")
    if not 1 <= minibatch <= batch <= frames:   # TorchRL runs for ever on total_frames < 0,
        # and a batch under one minibatch would make no gradient step
        raise ValueError(f"frames={frames}, batch={batch}, minibatch={minibatch}; allowed: "
                         f"1 <= minibatch <= batch <= frames")
    if batch % minibatch:   # before: the remainder of every batch sat out each epoch, silently
        raise ValueError(f"batch={batch}, minibatch={minibatch}; allowed: a batch that is a "
                         f"multiple of minibatch")
    if epochs < 0:   # before: read as 0
        raise ValueError(f"epochs={epochs}; allowed: 0 (collect only) or more")
    torch.manual_seed(seed)
    env = make_env(opponents=opponents, seed=seed)
    size = env.observation_spec["observation"].shape[-1]
    n = env.action_spec.space.n

    def mlp(out: int) -> nn.Sequential:
        return nn.Sequential(nn.Linear(size, hidden), nn.Tanh(), nn.Linear(hidden, hidden),
                             nn.Tanh(), nn.Linear(hidden, out))

    actor = ProbabilisticActor(
        TensorDictModule(mlp(n), in_keys=["observation"], out_keys=["logits"]),
        in_keys={"logits": "logits", "mask": "action_mask"}, out_keys=["action"],
        spec=env.action_spec, distribution_class=MaskedCategorical, return_log_prob=True)
    critic = ValueOperator(mlp(1), in_keys=["observation"])
    # whole batches, rounded up here (before: left to TorchRL, which warned each run)
    whole = -(-frames // batch) * batch
    collector = Collector(env, actor, frames_per_batch=batch, total_frames=whole,
                                  split_trajs=False, auto_register_policy_transforms=False)
    buffer = ReplayBuffer(storage=LazyTensorStorage(batch),
                          sampler=SamplerWithoutReplacement(), batch_size=minibatch)
    advantage = GAE(gamma=1.0, lmbda=0.95, value_network=critic)
    loss = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=0.01)
    optim = torch.optim.Adam(loss.parameters(), lr)
    collected = 0
    for data in collector:
        collected += data.numel()
        with torch.no_grad():
            advantage(data)
        buffer.extend(data.reshape(-1))
        for _ in range(epochs):
            for _ in range(batch // minibatch):
                parts = loss(buffer.sample())
                total = parts["loss_objective"] + parts["loss_critic"] + parts["loss_entropy"]
                optim.zero_grad()
                total.backward()
                nn.utils.clip_grad_norm_(loss.parameters(), 1.0)
                optim.step()
    collector.shutdown()
    return actor, env, collected


def win_rate(actor, env, episodes: int = 200) -> float:
    """The policy's share of wins over ``episodes`` games (its most likely legal action)."""
    import torch
    from torchrl.envs.utils import ExplorationType, set_exploration_type

    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes={episodes!r}; allowed: a whole number, 1 or more")
    wins = 0.0
    with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
        for _ in range(episodes):
            rollout = env.rollout(10_000, actor)
            wins += float(rollout["next", "reward"].sum() > 0)
    return wins / episodes


def main() -> None:
    from ono_env.apps.console import bounded_int
    from ono_env.checks import MAX_SEED, missing_extra

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=bounded_int(256, 10**10), default=200_000,
                    help="frames to train on (at least --batch; rounded up to whole batches)")
    ap.add_argument("--batch", type=bounded_int(256, 10**7), default=2_048,
                    help="frames per update (a multiple of the minibatch, 256)")
    ap.add_argument("--episodes", type=bounded_int(1, 10**6), default=200,
                    help="games of the final evaluation")
    ap.add_argument("--opponents", default="random")
    ap.add_argument("--seed", type=bounded_int(0, MAX_SEED), default=0)
    args = ap.parse_args()
    if args.batch % 256:
        ap.error(f"--batch {args.batch:,}; allowed: a multiple of the minibatch, 256")
    if args.batch > args.frames:
        ap.error(f"--batch {args.batch:,} is more than --frames {args.frames:,}; allowed: at "
                 f"most --frames")
    try:   # one line naming what to install (before: a traceback from inside make_env)
        import torchrl  # noqa: F401
    except ImportError as exc:
        ap.error(str(missing_extra(exc, "torchrl_ppo.py", "torchrl", "torchrl")))
    try:   # the environment checks the opponents before any training
        make_env(opponents=args.opponents, seed=args.seed).close()
    except ValueError as exc:
        ap.error(f"--opponents {args.opponents}: {exc}")
    actor, env, collected = train(args.frames, args.batch, seed=args.seed,
                                  opponents=args.opponents)
    print(f"{collected:,} frames; win rate against {args.opponents}: "
          f"{100 * win_rate(actor, env, args.episodes):.1f}% of {args.episodes} games")


if __name__ == "__main__":
    main()
