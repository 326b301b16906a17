"""The RLlib trainer of ``ono-train`` (``algo: rllib_ppo``): PPO on Ray RLlib's current API
stack (RLModule / Learner / EnvRunner), with action masking and league self-play; needs the
``[ray]`` extra (``pip install 'ono-env[ray]'``).

    ono-train configs/train/rllib-basic.yaml                     # a local Ray
    ono-train configs/train/rllib-basic.yaml ray_address=auto    # the cluster this node is in

What runs where
    ``num_env_runners`` Ray actors (one CPU each) each step ``num_envs`` games on one batched
    :class:`~ono_env.envs.rllib_env.OnoRLlibVectorEnv` (the learner against the opponent pool, opponents
    stepped in batch); with ``num_env_runners: 0`` the driver samples itself. The learner (one,
    in the driver process, ``torch_threads`` threads) updates :class:`MaskedPPOModule`.

The masked module
    :class:`MaskedPPOModule` is RLlib's action-masking pattern (as in RLlib's example
    ``ActionMaskingTorchRLModule``, on its default PPO module: the observation is
    ``{"observations", "action_mask"}``, illegal logits are set to the minimum float) with
    the observation divided by
    :func:`~ono_env.observation.observation_scale` first, as ``ono-train``'s SB3 policies do. It
    acts in the env runners' rollouts, in the learner's loss and, exported, in evaluation.

The config
    The fields of :class:`~ono_env.train.config.TrainConfig` keep their meaning: ``num_envs``
    games per env runner; a rollout is ``ppo.n_steps`` steps of every game of every runner
    (``train_batch_size = num_envs * n_steps * max(1, num_env_runners)``), cut into minibatches
    of ``ppo.batch_size`` for ``ppo.n_epochs`` passes; ``learning_rate_end`` decays linearly
    over ``total_steps`` (not over ``time_limit_minutes``, which still stops the run); no KL
    penalty and no value clipping beyond RLlib's defaults, as in SB3. Seeds: ``seed`` seeds
    RLlib (``config.debugging(seed=...)``: every env runner's deals and opponents) and the
    network.

League self-play
    An ``RLlibCallback`` class made for each run (``LeagueCallback``, inside
    ``_league_callback_class``: it needs Ray imported): every ``self_play.snapshot_every`` steps a
    frozen copy of the learner's policy (a NumPy :class:`~ono_env.agents.learned.LearnedAgent`)
    joins every env runner's opponent pool; the latest ``max_snapshots`` share ``weight`` of
    the opponent seats, the configured opponents the rest by their weights, drawn per game
    and seat.

A run folder (``<out_dir>/<name>-<time>/`` or ``run_dir``) holds ``config.yaml``,
``progress.csv`` (one row per RLlib iteration), ``eval.csv`` (the learning curve),
``checkpoints/step_<n>.safetensors`` (the policy at each evaluation), ``model.safetensors``
(the final policy in the project's model format: it plays in ``ono-arena``, ``ono-play`` and
as an opponent, and is refused under other rules like any model), ``rllib_checkpoint/``
(RLlib's own checkpoint, ``Algorithm.from_checkpoint`` resumes from it: the learner and
its optimizer, not the self-play snapshots, which start afresh) and
``final_eval.json`` / ``final_eval.csv``.
"""

from __future__ import annotations

import csv
import re
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ono_env.checks import shown
from ono_env.train.config import TrainConfig, resolved

RAY_HINT = "pip install 'ono-env[ray]'"
MODULE_ID = "default_policy"


def require_ray(what: str = "algo: rllib_ppo") -> None:
    """Import Ray and RLlib (and torch), or raise one ``ValueError`` naming the extra."""
    try:
        import ray
        import ray.rllib  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        raise ValueError(f"{what} needs Ray RLlib and torch ({exc.name or exc} is not "
                         f"installed): {RAY_HINT}") from None


def init_ray(address: str | None) -> bool:
    """Connect to Ray: the cluster at ``address`` (``"auto"``, ``"host:port"``,
    ``"ray://..."``), or a new local Ray for ``None``/``"local"``. Nothing happens when Ray is
    already initialised in this process. Returns True when this call started the connection
    (the caller shuts it down)."""
    import ray

    if ray.is_initialized():
        return False
    from ono_env.arena.distributed import start_ray
    start_ray("local" if address is None else address, configure_logging=True)
    return True


def check_runner_cpus(runners: int, local: bool, sleep: Any = None) -> None:
    """Each env runner takes one CPU of the Ray cluster, and Ray waits for ever for a CPU that
    never comes: more runners than a new local Ray's CPUs is a ``ValueError`` naming
    ``num_env_runners``; on a cluster (which an autoscaler may grow, and whose CPUs other
    work may hold) it is a note, and then a wait here until the cluster has that many CPUs
    free, in Python (``sleep``: ``time.sleep``) so that a signal stops it at once (before:
    the wait was Ray's, inside building the algorithm, which runs no signal handler until it
    returns: SIGTERM did nothing; and a cluster's CPUs were counted in all, not free, so
    that one whose CPUs other work held was that wait again)."""
    import ray

    if local:
        cpus = int(ray.cluster_resources().get("CPU", 0))
        if runners > cpus:
            raise ValueError(f"num_env_runners={runners}: each env runner takes one CPU, and "
                             f"the local Ray has {cpus}; allowed: at most {cpus} here (0: the "
                             f"driver samples), or ray_address= a cluster with more CPUs")
        return

    def free() -> int:
        return int(ray.available_resources().get("CPU", 0))
    cpus = free()
    if runners <= cpus:
        return
    print(f"ono-train: note: num_env_runners={runners}: each env runner takes one CPU, and "
          f"the Ray cluster has {cpus} free now ({int(ray.cluster_resources().get('CPU', 0))} "
          f"in all): training starts when it has {runners} CPUs free", file=sys.stderr)
    sleep = time.sleep if sleep is None else sleep
    while free() < runners:
        sleep(1.0)


# ---- the masked module --------------------------------------------------------------------
def _module_class():
    import gymnasium as gym
    import torch
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
    from ray.rllib.core.columns import Columns
    from ray.rllib.utils.torch_utils import FLOAT_MIN

    from ono_env.envs.rllib_env import MASK_KEY, OBS_KEY

    class MaskedPPOModule(DefaultPPOTorchRLModule):
        """RLlib's action-masking pattern on its default PPO module: the observation space
        is ``Dict(observations=..., action_mask=...)``, the networks are built for
        ``observations`` (divided by ``model_config["obs_scale"]`` first), and the logits of
        the actions the mask forbids are set to the minimum float (``log(0)`` clamped), in
        inference, exploration and training alike."""

        def __init__(self, *, observation_space=None, action_space=None, inference_only=None,
                     learner_only=False, model_config=None, catalog_class=None, **kwargs):
            if not (isinstance(observation_space, gym.spaces.Dict)
                    and {OBS_KEY, MASK_KEY} <= set(observation_space.spaces)):
                raise ValueError(f"MaskedPPOModule needs a Dict observation space with keys "
                                 f"{OBS_KEY!r} and {MASK_KEY!r}; got {shown(observation_space, 120)}")
            self.observation_space_with_mask = observation_space
            super().__init__(observation_space=observation_space[OBS_KEY],
                             action_space=action_space, inference_only=inference_only,
                             learner_only=learner_only, model_config=model_config,
                             catalog_class=catalog_class, **kwargs)

        def setup(self):
            super().setup()
            self.observation_space = self.observation_space_with_mask
            scale = self.model_config.get("obs_scale") if isinstance(self.model_config, dict) else None
            if scale is None:
                raise ValueError("MaskedPPOModule needs model_config['obs_scale'] "
                                 "(observation_scale(rules) as a list)")
            self._obs_scale = torch.as_tensor(np.asarray(scale, np.float32))

        def _split(self, batch):
            """``(mask, batch with the scaled observations)``; ``batch`` is not changed."""
            obs = batch[Columns.OBS]
            if not isinstance(obs, dict):
                return batch[MASK_KEY], batch
            x = obs[OBS_KEY]
            return obs[MASK_KEY], {**batch, Columns.OBS: x / self._obs_scale.to(x.device)}

        @staticmethod
        def _mask(out, mask):
            out[Columns.ACTION_DIST_INPUTS] = (out[Columns.ACTION_DIST_INPUTS]
                                               + torch.clamp(torch.log(mask), min=FLOAT_MIN))
            return out

        def _forward(self, batch, **kwargs):
            mask, batch = self._split(batch)
            return self._mask(super()._forward(batch, **kwargs), mask)

        def _forward_train(self, batch, **kwargs):
            mask, batch = self._split(batch)
            return self._mask(super()._forward_train(batch, **kwargs), mask)

        def compute_values(self, batch, embeddings=None):
            _, batch = self._split(batch)
            return super().compute_values(batch, embeddings)

    MaskedPPOModule.__module__ = __name__
    MaskedPPOModule.__qualname__ = "MaskedPPOModule"
    return MaskedPPOModule


def __getattr__(name: str):
    # the module class is built on first use, so importing this module needs no Ray
    if name == "MaskedPPOModule":
        require_ray("MaskedPPOModule")   # before: a bare ModuleNotFoundError without Ray
        cls = _module_class()
        globals()["MaskedPPOModule"] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def module_spec(rules: Any, net_arch: list[int], activation: str):
    """The ``RLModuleSpec`` of :class:`MaskedPPOModule` for ``rules``."""
    from gymnasium import spaces
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from ono_env.cards import NUM_ACTIONS
    from ono_env.envs.rllib_env import observation_space
    from ono_env.observation import observation_scale

    return RLModuleSpec(
        module_class=__getattr__("MaskedPPOModule"),
        observation_space=observation_space(rules), action_space=spaces.Discrete(NUM_ACTIONS),
        model_config={"fcnet_hiddens": list(net_arch), "fcnet_activation": activation,
                      "head_fcnet_hiddens": [], "vf_share_layers": False,
                      "obs_scale": observation_scale(rules).astype(float).tolist()})


# ---- export: the module's actor as the project's model -----------------------------------
_LAYER = re.compile(r"^(encoder\.actor_encoder|pi|encoder\.critic_encoder|vf)\..*?(\d+)\.(weight|bias)$")
_BLOCKS = {"encoder.actor_encoder": 0, "pi": 1, "encoder.critic_encoder": 2, "vf": 3}


def policy_net_from_state(state: Mapping[str, Any], rules: Any, activation: str):
    """The actor of a :class:`MaskedPPOModule` state dict (``encoder.actor_encoder...`` hidden
    layers, then the ``pi`` head) as a NumPy :class:`~ono_env.agents.learned.PolicyNet`:
    ``obs / observation_scale(rules)``, the hidden layers, the logits; what the module computes
    before masking. The critic (``encoder.critic_encoder``, ``vf``), when in the state, becomes
    the model's value network."""
    from ono_env.agents.learned import PolicyNet
    from ono_env.observation import observation_scale

    parts: dict[tuple[int, int], dict[str, np.ndarray]] = {}
    for key, value in state.items():
        m = _LAYER.match(key)
        if m is None:
            continue
        block = _BLOCKS[m.group(1)]
        arr = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
        parts.setdefault((block, int(m.group(2))), {})[m.group(3)] = np.array(arr, np.float32)
    layers = [(p["weight"], p["bias"]) for k, p in sorted(parts.items()) if k[0] < 2]
    value = [(p["weight"], p["bias"]) for k, p in sorted(parts.items()) if k[0] >= 2]
    if not any(k[0] == 1 for k in parts) or any(len(p) != 2 for p in parts.values()):
        raise ValueError(f"not a MaskedPPOModule state (no actor layers among "
                         f"{', '.join(list(state)[:6])} ...)")
    has_value = any(k[0] == 3 for k in parts)
    return PolicyNet(observation_scale(rules).astype(np.float32), layers, activation,
                     value if has_value else None)


def learner_policy_net(algo: Any, rules: Any, activation: str):
    """The learner's current policy as a frozen NumPy network."""
    weights = algo.learner_group.get_weights([MODULE_ID])[MODULE_ID]
    return policy_net_from_state(weights, rules, activation)


def export_policy(net: Any, path: str | Path, rules: Any, steps: int,
                  config: Mapping[str, Any] | None = None) -> Path:
    """Write ``net`` as a ``.safetensors`` model file (:mod:`ono_env.agents.learned`)."""
    from ono_env.agents.learned import net_metadata, write_model

    return write_model(path, net, net_metadata(net, rules, steps, config))


# ---- league self-play -------------------------------------------------------------------
def league_weights(base: Mapping[str, float], snapshots: list[str], weight: float) -> dict[str, float]:
    """The pool's weights: the configured opponents share ``1 - weight`` by their weights and
    the snapshots ``weight`` equally (all of it to the opponents before the first snapshot)."""
    total = sum(base.values())
    w_sp = float(weight) if snapshots else 0.0
    out = {name: (1.0 - w_sp) * w / total for name, w in base.items()}
    out.update({name: w_sp / len(snapshots) for name in snapshots})
    return out


def _league_callback_class(settings: dict[str, Any]):
    from ray.rllib.callbacks.callbacks import RLlibCallback

    class LeagueCallback(RLlibCallback):
        """Adds a frozen snapshot of the learner to every env runner's opponent pool every
        ``snapshot_every`` env steps (see the module docstring)."""

        def __init__(self) -> None:
            super().__init__()
            self.settings = settings
            self.next_snap = settings["snapshot_every"] if settings["enabled"] else None
            self.snapshots: list[str] = []

        def on_train_result(self, *, algorithm, metrics_logger=None, result, **kwargs) -> None:
            steps = env_steps(result)
            if self.next_snap is None or steps < self.next_snap:
                return
            from ono_env.agents.learned import LearnedAgent

            s = self.settings
            rules = s["rules"]
            name = f"snapshot-{steps}"
            agent = LearnedAgent(learner_policy_net(algorithm, rules, s["activation"]), rules, name)
            self.snapshots.append(name)
            del self.snapshots[:-s["max_snapshots"]]
            weights = league_weights(s["base"], self.snapshots, s["weight"])
            new = {name: agent}

            def update(er):
                env = getattr(er, "env", None)
                if env is not None:
                    env.unwrapped.update_pool(weights, new)

            algorithm.env_runner_group.foreach_env_runner(update, local_env_runner=True)
            self.next_snap += s["snapshot_every"]
            result["league_snapshots"] = list(self.snapshots)

    return LeagueCallback


def env_steps(result: Mapping[str, Any]) -> int:
    """Env steps (learner decisions) sampled so far, from an RLlib result dict."""
    runners = result.get("env_runners", {})
    for key in ("num_env_steps_sampled_lifetime",):
        if key in result:
            return int(result[key])
        if key in runners:
            return int(runners[key])
    raise KeyError(f"no sampled-steps count in the RLlib result (keys: {sorted(result)[:12]})")


# ---- the algorithm ----------------------------------------------------------------------
def algorithm_config(cfg: TrainConfig, rules: Any):
    """The ``PPOConfig`` of a training config (see the module docstring)."""
    from ray.rllib.algorithms.ppo import PPOConfig

    from ono_env.envs.rllib_env import OnoRLlibVectorEnv

    runners = int(cfg.num_env_runners)
    ppo = cfg.ppo
    batch = int(cfg.num_envs) * int(ppo.n_steps) * max(1, runners)
    lr: Any = ppo.learning_rate
    if ppo.learning_rate_end is not None:
        lr = [[0, ppo.learning_rate], [int(cfg.total_steps), ppo.learning_rate_end]]
    settings = {"enabled": cfg.self_play.enabled, "snapshot_every": cfg.self_play.snapshot_every,
                "max_snapshots": cfg.self_play.max_snapshots, "weight": cfg.self_play.weight,
                "base": dict(resolved(cfg.opponents, "opponents")), "rules": rules, "activation": cfg.policy.activation}
    return (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .environment(env=OnoRLlibVectorEnv, disable_env_checking=True,
                     env_config={"rules": rules.to_dict(), "opponents": dict(resolved(cfg.opponents, "opponents")),
                                 "learner_seat": "random", "reward": cfg.reward,
                                 "max_decisions": resolved(cfg.max_decisions, "max_decisions")})
        .env_runners(num_env_runners=runners, num_envs_per_env_runner=int(cfg.num_envs),
                     gym_env_vectorize_mode="vector_entry_point",
                     rollout_fragment_length=int(ppo.n_steps), num_cpus_per_env_runner=1,
                     sample_timeout_s=600.0)
        .learners(num_learners=0)
        .rl_module(rl_module_spec=module_spec(rules, cfg.policy.net_arch, cfg.policy.activation))
        .training(lr=lr, gamma=ppo.gamma, lambda_=ppo.gae_lambda, clip_param=ppo.clip_range,
                  entropy_coeff=ppo.ent_coef, vf_loss_coeff=ppo.vf_coef,
                  grad_clip=ppo.max_grad_norm, grad_clip_by="global_norm", use_kl_loss=False,
                  num_epochs=int(ppo.n_epochs), train_batch_size_per_learner=batch,
                  minibatch_size=min(int(ppo.batch_size), batch))
        .callbacks(_league_callback_class(settings))
        .reporting(metrics_num_episodes_for_smoothing=100)
        .debugging(seed=int(cfg.seed), log_level="ERROR")
    )


def self_play_config(rules: Any, *, net_arch: Sequence[int] = (256, 256), activation: str = "tanh",
                     num_env_runners: int = 0, num_envs_per_env_runner: int = 8,
                     seed: int = 0, module_id: str = "learner"):
    """A ``PPOConfig`` for turn-based self-play on :class:`~ono_env.envs.rllib_env.OnoMultiAgentEnv`:
    every seat is an agent mapped to one shared :class:`MaskedPPOModule` (``module_id``).
    For mixed tables, add modules with ``config.multi_agent(policies=..., policy_mapping_fn=...)``
    and their specs to the ``MultiRLModuleSpec``; only the acting seat is in each observation
    dict, so each module learns from its own seats' turns. ``rules``: a RuleSet, a preset's
    name or a rules file; every argument is checked (``ValueError`` naming it)."""
    from ono_env.checks import check_choice, check_int, check_seed, check_text
    from ono_env.rules import resolve_rules

    rules = resolve_rules(rules)   # a RuleSet, a preset's name or a rules file
    if isinstance(net_arch, (str, bytes)) or not isinstance(net_arch, Sequence) \
            or not 1 <= len(net_arch) <= 16:
        raise ValueError(f"net_arch={shown(net_arch, 60)}; allowed: a list of 1 to 16 layer widths")
    widths = [check_int(f"net_arch[{k}]", w, 1, 65_536) for k, w in enumerate(net_arch)]
    check_choice("activation", activation, ("tanh", "relu"))
    runners = check_int("num_env_runners", num_env_runners, 0, 10_000)
    per_runner = check_int("num_envs_per_env_runner", num_envs_per_env_runner, 1, 1_000_000)
    seed = check_seed("seed", seed, allow_none=False)
    check_text("module_id", module_id)
    require_ray("self_play_config")
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec

    from ono_env.envs.rllib_env import OnoMultiAgentEnv

    return (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .environment(env=OnoMultiAgentEnv, disable_env_checking=True,
                     env_config={"rules": rules.to_dict()})
        .env_runners(num_env_runners=runners, num_envs_per_env_runner=per_runner)
        .multi_agent(policies={module_id},
                     policy_mapping_fn=lambda agent_id, episode, **kw: module_id)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={
            module_id: module_spec(rules, widths, activation)}))
        .training(use_kl_loss=False)
        .debugging(seed=seed, log_level="ERROR")
    )


def train(cfg: TrainConfig, stop_signals: Sequence[str] = ("SIGINT",)) -> dict[str, Any]:
    """Run one RLlib training from a resolved config (on the Ray this process is connected
    to, else on ``cfg.ray_address``, else on a new local Ray, shut down at the end). Returns
    ``{"run_dir", "model", "final_eval", "seconds", "train_seconds", "curve", "steps",
    "progress", "env_runner_nodes", "opponent_pools"}`` (the Ray node id and the opponent
    pool's member names of each env runner at the end). ``stop_signals``: the signals that
    stop it after the training iteration under way, saving the model and the RLlib
    checkpoint without a final evaluation (:class:`~ono_env.train.run.StopOnInterrupt`;
    ``ono-train`` adds SIGTERM and SIGHUP)."""
    from ono_env.train.run import check_stop_signals, settle_earlier_part

    signals = check_stop_signals(stop_signals)
    try:
        return _train(cfg, signals)
    finally:   # after the final evaluation: the run folder stays locked until then
        settle_earlier_part()   # an earlier part set aside goes, or comes back if none saved


def _train(cfg: TrainConfig, stop_signals: tuple[str, ...]) -> dict[str, Any]:
    """:func:`train`'s work."""
    from ono_env.train.run import StopOnInterrupt

    require_ray()
    from ono_env.agents.learned import LearnedAgent
    from ono_env.arena import evaluate
    from ono_env.train.run import (
        bar_do,
        check_start,
        curve_rows,
        evaluation_lines,
        final_evaluation,
        resolve_auto,
        rules_of,
        say,
        start_run,
        write_curve,
    )

    t0 = time.perf_counter()
    cfg, plan = resolve_auto(cfg, rules_of(cfg))
    rules, _ = check_start(cfg, list(cfg.opponents))   # a bad name or folder fails before Ray
    started = init_ray(cfg.ray_address)
    algo = None
    interrupt: StopOnInterrupt | None = None
    try:
        check_runner_cpus(cfg.num_env_runners, local=started and cfg.ray_address in (None, "local"))
        algo = algorithm_config(cfg, rules).build_algo()
        runner_nodes = sorted(algo.env_runner_group.foreach_env_runner(
            lambda er: on_node(), local_env_runner=int(cfg.num_env_runners) == 0))
        # the run folder only once the runners are up: a Ctrl-C while Ray builds them (for
        # ever on a cluster short of CPUs) leaves none (before: a folder holding config.yaml
        # alone, and a named run_dir then refused as another run's)
        rules, run_dir, _, _ = start_run(cfg, list(cfg.opponents))
        # from here on a signal saves the model; before, while Ray waits for the runners'
        # CPUs (for ever on a full cluster), it stops at once: nothing is trained to save
        # (before: the first Ctrl-C said it would save, and the wait went on)
        interrupt = StopOnInterrupt(stop_signals, "after the training iteration under way")
        limit = cfg.time_limit_minutes
        deadline = None if limit is None else time.perf_counter() + 60.0 * limit
        bar = None
        if cfg.progress:
            from tqdm import tqdm
            bar = tqdm(total=cfg.total_steps, unit="step", desc="training (rllib)",
                       file=sys.stderr, smoothing=0.05)
        curve: list[dict[str, Any]] = []
        rows: list[dict[str, Any]] = []
        next_eval = cfg.eval.every or None
        steps, stopped_early = 0, False
        t_train = time.perf_counter()
        while steps < cfg.total_steps:
            result = algo.train()
            steps = env_steps(result)
            rows.append(progress_row(result, steps, time.perf_counter() - t_train))
            if bar is not None:   # a closed terminal: stop, the model saved (bar_do)
                bar_do(bar, "update", min(steps, cfg.total_steps) - bar.n)
            if next_eval is not None and steps >= next_eval:
                net = learner_policy_net(algo, rules, cfg.policy.activation)
                res = evaluate(LearnedAgent(net, rules, "learner"), cfg.eval.opponents, rules,
                               resolved(cfg.eval.games, "eval.games"), seed=cfg.seed + steps,
                               max_decisions=resolved(cfg.max_decisions, "max_decisions"))
                curve += curve_rows(steps, res)
                write_curve(run_dir / "eval.csv", curve)
                export_policy(net, run_dir / "checkpoints" / f"step_{steps}.safetensors", rules,
                              steps, cfg.to_dict())
                if bar is not None:
                    bar_do(bar, "set_postfix",
                           {r["opponent"]: f"{100 * r['win_rate']:.1f}%" for r in res})
                # the stall warning too, by game lengths and cut games (RLlib's runners count
                # no choices; before: no warning at all)
                say(evaluation_lines(steps, (time.perf_counter() - t_train) / 60, res, cfg, plan,
                                     "rllib"), bar)
                while next_eval <= steps:
                    next_eval += cfg.eval.every
            if deadline is not None and time.perf_counter() > deadline:
                stopped_early = True
                break
            if interrupt.asked:   # Ctrl-C or SIGTERM: save, skip the final evaluation
                break
        interrupt.restore()
        bar_do(bar, "close")
        write_progress(run_dir / "progress.csv", rows)
        pools = algo.env_runner_group.foreach_env_runner(
            _pool_names, local_env_runner=int(cfg.num_env_runners) == 0)
        net = learner_policy_net(algo, rules, cfg.policy.activation)
        model_path = export_policy(net, run_dir / "model.safetensors", rules, steps, cfg.to_dict())
        algo.save_to_path(str((run_dir / "rllib_checkpoint").resolve()))
    finally:
        if interrupt is not None:
            interrupt.restore()
        if algo is not None:
            algo.stop()
        if started:
            import ray
            ray.shutdown()
    train_seconds = time.perf_counter() - t0
    if interrupt is not None and interrupt.asked:
        interrupt.end(steps, cfg.total_steps, model_path)
    if stopped_early:
        print(f"time limit of {cfg.time_limit_minutes} min reached after {steps:,} of "
              f"{cfg.total_steps:,} steps")
    final = final_evaluation(cfg, rules, model_path, run_dir, steps, train_seconds, "rllib_ppo",
                             stop_signals)
    print(f"run: {run_dir}  model: {model_path}")
    return {"run_dir": run_dir, "model": model_path, "final_eval": final, "steps": steps,
            "seconds": time.perf_counter() - t0, "train_seconds": train_seconds,
            "curve": curve, "progress": rows, "env_runner_nodes": runner_nodes,
            "opponent_pools": pools}


def progress_row(result: Mapping[str, Any], steps: int, seconds: float) -> dict[str, Any]:
    """One iteration's numbers: steps, wall time, the mean episode return of the last 100
    episodes, and the env runners' sampling time."""
    runners = result.get("env_runners", {})
    timers = result.get("timers", {})
    return {"iteration": int(result.get("training_iteration", 0)), "steps": steps,
            "seconds": round(seconds, 3),
            "episode_return_mean": _num(runners.get("episode_return_mean")),
            "sample_seconds": _num(runners.get("sample", timers.get("env_runner_sampling_timer"))),
            "env_step_seconds": _num(runners.get("env_step_timer")),
            "iteration_seconds": _num(result.get("time_this_iter_s"))}


def _num(x: Any) -> float | None:
    try:
        return None if x is None else float(x)
    except (TypeError, ValueError):
        return None


def write_progress(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _pool_names(er: Any) -> list[str]:
    env = getattr(er, "env", None)
    pool = None if env is None else env.unwrapped.pool
    return [] if pool is None else list(pool.names)


def on_node() -> str:
    """The Ray node id of the calling process (for checking where work ran)."""
    import ray
    return ray.get_runtime_context().get_node_id()

