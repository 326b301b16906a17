"""``algo: maskable_ppo``: sb3-contrib's MaskablePPO on the batched ``OnoVecEnv`` (the
reference trainer; ``algo: ppo`` is the project's own, :mod:`ono_env.train.ppo`), against a
weighted pool of agents, optionally with league self-play; masked evaluation, TensorBoard, checkpoints with metadata.

    ono-train default algo=maskable_ppo policy.shared=false
    ono-train default algo=maskable_ppo policy.shared=false total_steps=200000 ppo.learning_rate=1e-4

(the command line is :mod:`ono_env.train.cli`; the config :mod:`ono_env.train.config`).

A run writes into ``<out_dir>/<name>-<time>/`` (or ``run_dir``):

- ``config.yaml``: the resolved config (defaults + file + overrides);
- ``tb/``: TensorBoard logs (SB3's rollout/train scalars, ``eval/win_rate/<opponent>``,
  ``league/snapshots``);
- ``checkpoints/step_<n>.zip`` at every evaluation, and ``model.zip`` at the end: each a
  MaskablePPO zip carrying the model file as its member ``ono_policy.safetensors``
  (:mod:`ono_env.agents.learned`; the only part read when it plays as an agent), playable with
  ``ono-arena`` / ``ono-play`` and loadable by ``MaskablePPO.load``;
- ``eval.csv``: the learning curve (step, opponent, win rate, interval);
- ``final_eval.json`` / ``final_eval.csv``: the model against each ``final_eval`` opponent
  (``final_eval.workers`` processes, one opponent each at a time; the same numbers).

With ``time_limit_minutes`` training stops after that long and a decaying learning rate
reaches ``ppo.learning_rate_end`` at the time limit or at ``total_steps``, whichever is first.

Evaluation plays the current policy with the legal-action mask applied (greedy in the masked
logits) through the arena, seats rotated; sb3-contrib's plain ``EvalCallback`` would ignore
the masks, so it is not used.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ono_env.train.config import TrainConfig, resolved
from ono_env.train.run import (
    League,
    StopOnInterrupt,
    bar_do,
    check_stop_signals,
    curve_rows,
    evaluation_lines,
    final_evaluation,
    learning_rate_schedule,
    resolve_auto,
    rules_of,
    say,
    settle_earlier_part,
    stall_choices,
    stall_counts,
    start_run,
    write_curve,
)


def make_callback(cfg: TrainConfig, rules: Any, run_dir: Path, league: League, progress: bool,
                  deadline: float | None = None, plan: dict[str, Any] | None = None,
                  interrupt: StopOnInterrupt | None = None):
    from stable_baselines3.common.callbacks import BaseCallback

    from ono_env.arena import evaluate
    from ono_env.train.nets import agent_from_model, save_model

    class TrainingCallback(BaseCallback):
        """Masked evaluation + checkpoints every ``eval.every`` steps (a console line each, and
        the stall warning of :func:`~ono_env.train.run.evaluation_lines` against ``plan``'s
        baselines, :func:`~ono_env.train.run.resolve_auto`'s), league snapshots every
        ``self_play.snapshot_every`` steps,
        and a tqdm progress bar."""

        def __init__(self) -> None:
            super().__init__()
            self.next_eval = cfg.eval.every or None
            sp = cfg.self_play
            self.next_snap = sp.snapshot_every if sp.enabled else None
            self.curve: list[dict[str, Any]] = []
            self.bar = None
            self.deadline = deadline
            self.stopped_early = False
            self.t0 = time.perf_counter()   # set again as training starts
            # the learner's stalling choices since the last evaluation (stall_choices), as
            # algo ppo counts them (before: none, so a learner that accused and drew whenever
            # it might, finishing its games in time at 8-10 players, was never warned of)
            self.chosen = np.zeros(4, np.int64)
            self.counts = bool(plan and plan["baselines"]) and self.next_eval is not None   # read by a warning

        def _on_training_start(self) -> None:
            self.t0 = time.perf_counter()
            if progress:
                from tqdm import tqdm
                self.bar = tqdm(total=cfg.total_steps, unit="step", desc="training",
                                file=sys.stderr, smoothing=0.05)

        def _on_step(self) -> bool:
            n = self.num_timesteps
            masks = self.locals.get("action_masks")   # MaskablePPO's rollout: the learner's
            if masks is not None and self.counts:
                self.chosen += stall_counts(np.asarray(self.locals["actions"]).reshape(-1),
                                            np.asarray(masks, bool)).sum(axis=0)
            if self.bar is not None:   # a closed terminal: stop, the model saved (bar_do)
                bar_do(self.bar, "update", n - self.bar.n)
            if self.next_snap is not None and n >= self.next_snap:
                league.add_snapshot(agent_from_model(self.model, rules, f"snapshot-{n}", copy=True), n)
                self.logger.record("league/snapshots", len(league.snapshots))
                self.next_snap += cfg.self_play.snapshot_every
            if self.next_eval is not None and n >= self.next_eval:
                self.evaluate(n)
                self.next_eval += cfg.eval.every
            if self.deadline is not None and time.perf_counter() > self.deadline:
                # (as algo ppo: before, a run past its steps said the time limit ended it)
                self.stopped_early = n < cfg.total_steps
                return False
            return interrupt is None or not interrupt.asked   # Ctrl-C, SIGTERM: save and stop

        def evaluate(self, n: int) -> None:
            policy = agent_from_model(self.model, rules, "learner")
            rows = evaluate(policy, cfg.eval.opponents, rules, resolved(cfg.eval.games, "eval.games"),
                            seed=cfg.seed + n,   # the training games' cut, as algo ppo's
                            max_decisions=resolved(cfg.max_decisions, "max_decisions"))
            for r in rows:
                self.logger.record(f"eval/win_rate/{r['opponent']}", r["win_rate"])
            self.curve += curve_rows(n, rows)
            self.logger.dump(n)
            write_curve(run_dir / "eval.csv", self.curve)
            save_model(self.model, run_dir / "checkpoints" / f"step_{n}.zip", rules, n, cfg.to_dict())
            if self.bar is not None:
                bar_do(self.bar, "set_postfix",
                       {r["opponent"]: f"{100 * r['win_rate']:.1f}%" for r in rows})
            # SB3 bootstraps a cut game; ppo.hand_shaping is algo ppo's only
            lines = evaluation_lines(n, (time.perf_counter() - self.t0) / 60, rows, cfg, plan,
                                     "sb3", stall_choices(self.chosen.tolist(), rules))
            self.chosen[:] = 0
            say(lines, self.bar)

        def _on_training_end(self) -> None:
            if self.bar is not None:
                bar_do(self.bar, "update", self.num_timesteps - self.bar.n)
                bar_do(self.bar, "close")

    return TrainingCallback()


def train(cfg: TrainConfig, stop_signals: Sequence[str] = ("SIGINT",)) -> dict[str, Any]:
    """Run one training from a resolved config (see :func:`ono_env.train.config.load_config`).
    Returns ``{"run_dir", "model", "final_eval", "seconds", "train_seconds",
    "curve"}``. Needs the ``[train]`` extra
    (imported first, before anything is written). ``stop_signals``: the signals that stop it
    at its rollout's next step, saving ``model.zip`` without a final evaluation
    (:class:`~ono_env.train.run.StopOnInterrupt`; ``ono-train`` adds SIGTERM and SIGHUP).

    SB3 seeds Python's ``random``, NumPy's global generator and torch's with ``cfg.seed`` and
    draws from them while it trains: all three are the caller's again afterwards, so a
    training called in a process leaves its global random state as it was."""
    import random

    import numpy as np
    import torch as th

    stop_signals = check_stop_signals(stop_signals)
    saved = random.getstate(), np.random.get_state()
    try:
        with th.random.fork_rng(devices=[]):   # the CPU's: forking a GPU's would start CUDA
            return _train(cfg, stop_signals)
    finally:
        settle_earlier_part()   # an earlier part set aside goes, or comes back if none saved
        random.setstate(saved[0])
        np.random.set_state(saved[1])


def _train(cfg: TrainConfig, stop_signals: tuple[str, ...]) -> dict[str, Any]:
    import torch as th
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecMonitor

    from ono_env.envs.opponents import OpponentPool
    from ono_env.envs.sb3 import OnoVecEnv
    from ono_env.observation import observation_scale
    from ono_env.train.nets import ScaledObservation, save_model
    from ono_env.train.ppo import make_named_agents

    t0 = time.perf_counter()
    # every agent named, made once and refused by its field before the probe games and before
    # the run's folder (before: an unknown opponent failed after config.yaml was written)
    make_named_agents(None, cfg.name, rules_of(cfg), cfg.opponents, cfg.eval.opponents,
                      cfg.final_eval.opponents, None)
    cfg, plan = resolve_auto(cfg, rules_of(cfg))
    rules, run_dir, _, _ = start_run(cfg, list(cfg.opponents))

    pool = OpponentPool(resolved(cfg.opponents, "opponents"), rules)
    league = League(pool, cfg)
    venv = OnoVecEnv(rules, num_envs=cfg.num_envs, opponents=pool, seed=cfg.seed,
                     reward=cfg.reward,
                     max_decisions=resolved(cfg.max_decisions, "max_decisions"))
    env = VecMonitor(venv)
    ppo = dataclasses.asdict(cfg.ppo)
    lr0, lr1 = ppo.pop("learning_rate"), ppo.pop("learning_rate_end")
    ppo.pop("truncation")   # SB3 bootstraps a cut game (TimeLimit.truncated)
    ppo.pop("hand_shaping")   # algo ppo only
    ppo.pop("advantage_norm")   # algo ppo only (SB3 normalises each minibatch)
    ppo.pop("color_consistency")   # algo ppo only
    limit = cfg.time_limit_minutes
    deadline = None if limit is None else time.perf_counter() + 60.0 * limit
    lr = lr0 if lr1 is None else learning_rate_schedule(lr0, lr1, None if limit is None else 60.0 * limit)
    activation = {"tanh": th.nn.Tanh, "relu": th.nn.ReLU}[cfg.policy.activation]
    arch = list(cfg.policy.net_arch)
    model = MaskablePPO(
        "MlpPolicy", env, learning_rate=lr, seed=cfg.seed, device="cpu", verbose=0,
        tensorboard_log=str(run_dir / "tb"),
        policy_kwargs={"net_arch": {"pi": arch, "vf": arch}, "activation_fn": activation,
                       "features_extractor_class": ScaledObservation,
                       "features_extractor_kwargs": {"scale": observation_scale(rules).tolist()}},
        **ppo,
    )
    interrupt = StopOnInterrupt(stop_signals, "at the rollout's next step")
    try:
        callback = make_callback(cfg, rules, run_dir, league, bool(cfg.progress), deadline,
                                 plan, interrupt)
        model.learn(total_timesteps=cfg.total_steps, callback=callback, tb_log_name="ppo")
    finally:
        interrupt.restore()
    model_path = save_model(model, run_dir / "model.zip", rules, model.num_timesteps, cfg.to_dict())
    train_seconds = time.perf_counter() - t0
    if interrupt.asked:
        interrupt.end(model.num_timesteps, cfg.total_steps, model_path)
    if callback.stopped_early:
        print(f"time limit of {cfg.time_limit_minutes} min reached after "
              f"{model.num_timesteps:,} of {cfg.total_steps:,} steps")

    final = final_evaluation(cfg, rules, model_path, run_dir, model.num_timesteps, train_seconds,
                             "maskable_ppo", stop_signals)
    print(f"run: {run_dir}  model: {model_path}")
    return {"run_dir": run_dir, "model": model_path, "final_eval": final,
            "seconds": time.perf_counter() - t0, "train_seconds": train_seconds,
            "curve": callback.curve}


