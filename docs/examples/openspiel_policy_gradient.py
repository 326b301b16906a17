"""Train an agent with OpenSpiel's own learner on ONO, export it as a model file, and play
it in the project's arena.

    python docs/examples/openspiel_policy_gradient.py --minutes 3 --out runs/openspiel-pg
    ono-arena runs/openspiel-pg/model.safetensors greedy --rules basic --players 2 --mirrored

OpenSpiel's ``rl_environment`` over the ``python_ono`` game (``basic`` rules, 2 players),
two PyTorch ``PolicyGradient`` agents (advantage actor-critic) in self-play, for a number
of episodes or minutes; then seat 0's agent is written as a ``.safetensors`` model
(``ono_env.envs.openspiel.export_policy_gradient``) that every part of the project plays.
Needs the ``[openspiel]`` and ``[train]`` extras.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def train(episodes: int, minutes: float, out: Path, seed: int = 0, hidden: int = 128,
          batch_size: int = 16) -> tuple[Path, int, int, object]:
    """Train and export; returns (model path, episodes played, player decisions, the
    exported OpenSpiel agent)."""
    import numpy as np
    import pyspiel
    import torch
    from open_spiel.python import rl_environment
    from open_spiel.python.pytorch import policy_gradient

    from ono_env.envs import openspiel

    torch.manual_seed(seed)
    np.random.seed(seed)   # OpenSpiel's agents sample their actions from NumPy's global generator
    game = pyspiel.load_game(openspiel.GAME_NAME, {"preset": "basic", "players": 2,
                                                   "seed": seed})
    env = rl_environment.Environment(game)
    size = env.observation_spec()["info_state"][0]
    actions = env.action_spec()["num_actions"]
    # OpenSpiel's defaults (SGD, policy learning rate 0.001, 8 critic steps per policy step)
    # barely move the policy in minutes; Adam at the rates below does
    agents = [policy_gradient.PolicyGradient(p, size, actions, loss_str="a2c",
                                             hidden_layers_sizes=[hidden, hidden],
                                             batch_size=batch_size, optimizer_str="adam",
                                             pi_learning_rate=3e-4, critic_learning_rate=1e-3,
                                             num_critic_before_pi=1, entropy_cost=0.01)
              for p in range(2)]
    start, played, decisions = time.perf_counter(), 0, 0
    while played < episodes and time.perf_counter() - start < 60 * minutes:
        step = env.reset()
        while not step.last():
            player = step.observations["current_player"]
            step = env.step([agents[player].step(step).action])
            decisions += 1
        for agent in agents:
            agent.step(step)
        played += 1
    path = out / "model.safetensors"
    openspiel.export_policy_gradient(agents[0], game, str(path), training_steps=decisions,
                                     label="openspiel-pg")
    return path, played, decisions, agents[0]


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 10**6:   # NaN too
        raise argparse.ArgumentTypeError(f"{text!r}; allowed: a number of minutes above 0, "
                                         f"at most 1,000,000")
    return value


def main() -> None:
    from ono_env.apps.console import bounded_int
    from ono_env.checks import check_output_dir, check_output_file
    try:   # one line naming what to install (before: a traceback)
        from ono_env.envs.openspiel import MAX_PARAM_SEED
    except ImportError as exc:
        raise SystemExit(f"openspiel_policy_gradient.py: {exc}") from None

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=bounded_int(1, 10**9), default=10**9,
                    help="at most this many games")
    ap.add_argument("--minutes", type=_minutes, default=3.0, help="at most this long")
    ap.add_argument("--out", default="runs/openspiel-pg",
                    help="the folder of model.safetensors (an earlier model there is refused)")
    ap.add_argument("--seed", type=bounded_int(0, MAX_PARAM_SEED), default=0,
                    help="the game's seed parameter (OpenSpiel's are 32-bit)")
    args = ap.parse_args()
    try:   # before the training (before: checked after it, and an earlier model replaced)
        out = check_output_dir(args.out, "--out")
        if (out / "model.safetensors").exists():   # (--out is a folder: give a new one)
            raise ValueError(f"--out: {str(out)!r} already holds model.safetensors (an earlier "
                             f"model, never replaced); give a new or empty folder")
        check_output_file(out / "model.safetensors", "--out")
    except ValueError as exc:
        ap.error(str(exc))
    path, played, decisions, _ = train(args.episodes, args.minutes, out, args.seed)
    print(f"{played:,} games, {decisions:,} decisions; model: {path}")


if __name__ == "__main__":
    main()
