"""Training configuration: typed dataclasses, one line of documentation per field.

A run is described by a :class:`TrainConfig` (in the style of CleanRL's ``Args``: every field
typed, with its default and a one-line docstring). ``load_config(spec, overrides)`` starts
from the defaults, applies a YAML file (a path, or the name of a config shipped with the
package: ``default``, ``basic-60min``, ``classic-60min``, ``basic-4p``, ``rllib-basic``, ``generalist``), then
``key=value`` overrides (dotted keys reach nested fields: ``ppo.learning_rate=1e-4``; values
are read as YAML: ``opponents={greedy: 1, random: 1}``). pydantic checks every field: an unknown key, a value
of the wrong type (``true`` is not a count, ``"5"`` is not a number) or out of range raises
one ``ValueError`` naming the field and what is allowed.

This module needs only the base install (pydantic, PyYAML): ``ono-train default
--print-config`` works without the ``[train]`` extra.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import os
import re
import reprlib
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, cast

import yaml
from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic.dataclasses import dataclass

from ono_env.arena import MAX_GAMES
from ono_env.checks import MAX_SEED, cut, no_file, shown
from ono_env.game import MAX_DECISIONS
from ono_env.rules import RuleSet

MAX_TORCH_THREADS = 1024
"""The most torch threads a run may ask for (``torch_threads``)."""

_CONFIG = ConfigDict(extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False)

def _integer_only(value: Any) -> Any:
    """``value`` unless it is a bool or a float, which a ``Literal`` of integers takes (true
    as 1, 2.0 as 2; before, ``observation_version=true`` trained version 1): a strict
    ``Literal``, as every other number here is strict."""
    if isinstance(value, (bool, float)):
        raise ValueError(f"Input should be 1 or 2 as a whole number, not {value!r}")
    if isinstance(value, int) and value not in (1, 2):   # before: pydantic's words for a
        raise ValueError("Input should be 1 or 2")        # number of 20 digits, no 1 or 2
    return value


Count = Annotated[int, Field(strict=True, ge=1)]
Count0 = Annotated[int, Field(strict=True, ge=0)]
Number = Annotated[float, Field(strict=True, ge=0)]
LossWeight = Annotated[float, Field(strict=True, ge=0, le=100.0, allow_inf_nan=False)]
"""A weight of a loss term, 0 to 100 (before: any finite number, and one past float32's range
failed mid-run, or turned to inf and diverged, with the run folder made)."""
Fraction = Annotated[float, Field(strict=True, ge=0, le=1)]
Name = Annotated[str, Field(strict=True, min_length=1)]


def _home(path: str) -> str:
    """A leading ``~`` or ``~user`` as the home folder, as a shell expands it (a config file
    and a quoted override are not expanded by the shell: before, ``run_dir: ~/x`` made a
    folder named ``~`` in the current one, and the run said ``~/x``)."""
    return os.path.expanduser(path)


PathName = Annotated[str, Field(strict=True, min_length=1), AfterValidator(_home)]
"""A path of a file or folder the run writes or reads; ``~`` is the home folder."""


def _folder_name(folder: str) -> Any:
    """A config field whose text names a folder ``folder``: the validator of a pydantic
    ``Annotated`` type (letters, digits, '.', '_' and '-', 1-64, the first a letter or digit)."""
    def check(name: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", name):
            raise ValueError("allowed: 1-64 letters, digits, '.', '_' and '-', the first a "
                             f"letter or digit (it names {folder})")
        return name
    return AfterValidator(check)


def _distinct(names: list[str]) -> list[str]:
    """Each agent once in a list of evaluation opponents: a second row of the same agent
    could not be told from the first in eval.csv."""
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{', '.join(map(repr, twice))} named more than once; allowed: each "
                         f"agent once (raise games for more games against it)")
    return names


Opponents = Annotated[list[Name], Field(min_length=1), AfterValidator(_distinct)]
"""Evaluation opponents: a list of agent names or model files, each once."""

TableName = Annotated[str, Field(strict=True), _folder_name("the folder tables/<name>/")]
RunName = Annotated[str, Field(strict=True),
                    _folder_name("the run's folder, <out_dir>/<name>-<time>")]


def table_label(rules: RuleSet) -> str:
    """``<rules name>-<N>p`` of a :class:`~ono_env.rules.RuleSet` (a table's resolved rules):
    how a table of a mixture without a name is called in logs and folders
    (``tables/<label>/``)."""
    return f"{rules.name}-{rules.num_players}p"


def _check_weight_sum(weights: dict[str, float], field: str) -> None:
    """Refuse weights whose sum overflows a float (each is finite: the config allows no inf):
    the pool draws by their shares of the sum."""
    if not math.isfinite(sum(weights.values())):
        raise ValueError(f"{field}: the weights sum to more than a float holds; allowed: "
                         f"weights whose sum is a finite number (only their ratios count)")


MAX_EPOCHS = 1_000
"""The most passes over one rollout (``ppo.n_epochs``): past a few dozen the policy only
overfits its rollout, and a count such as 10**12 kept one update running for ever."""
MAX_SNAPSHOTS = 1_000
"""The most self-play snapshots kept (``self_play.max_snapshots``): each is a copy of the
network held in memory and playing its share of the games."""
MAX_STEPS = 10**12
"""The most learner decisions one run may ask for."""
MAX_MINUTES = 1_000_000
"""The largest ``time_limit_minutes`` (about two years)."""
DEFAULT_ENV_RUNNERS = 2
"""``num_env_runners``' default, the one value a config of another algo than rllib_ppo may hold."""
Hideable = Literal["known_cards", "lacks", "lacks_covered", "unknown", "last_play",
                   "previous_play", "named_color", "drew"]
"""The opponent fields that ``observation_hide`` may hide."""
HIDEABLE: tuple[str, ...] = typing.get_args(Hideable)
"""The names of :data:`Hideable`, in its order."""


@dataclass(config=_CONFIG)
class SelfPlay:
    """League self-play: frozen snapshots of the learner join the opponent pool."""

    enabled: Annotated[bool, Field(strict=True)] = False
    """Add snapshots of the learner to the opponent pool while training."""
    snapshot_every: Count = 500_000
    """Learner steps between two snapshots."""
    max_snapshots: Annotated[int, Field(strict=True, ge=1, le=MAX_SNAPSHOTS)] = 5
    """Snapshots kept in the pool, 1 to 1,000; the oldest leaves when a new one would exceed this."""
    weight: Annotated[float, Field(strict=True, ge=0, lt=1)] = 0.5
    """Share of the opponent seats the snapshots take (once there is one; seats drawn apart), 0 <= weight < 1."""


@dataclass(config=_CONFIG)
class PolicyNet:
    """The policy and value networks."""

    net_arch: Annotated[list[Annotated[int, Field(strict=True, ge=1, le=65_536)]],
                        Field(min_length=1, max_length=16)] = dataclasses.field(
        default_factory=lambda: [256, 256])
    """Hidden layer sizes, shared by the policy and the value network."""
    activation: Literal["tanh", "relu"] = "tanh"
    """Activation between the hidden layers: tanh | relu."""
    shared: Annotated[bool, Field(strict=True)] = False
    """algo ppo: one trunk of net_arch feeds both heads (false: two networks, as SB3)."""
    opponent_encoder: Literal["auto"] | Annotated[int, Field(strict=True, ge=0, le=4096)] = "auto"
    """algo ppo, observation_version 2: width of the one layer that every opponent block passes through before net_arch, shared by the nine seats and both heads (0: none, the whole vector into net_arch; auto: 32 for version 2, 0 for version 1)."""
    privileged_critic: Annotated[bool, Field(strict=True)] = False
    """algo ppo, a shared trunk with an opponent encoder: the advantages come from a value that also reads every opponent's hand (an asymmetric actor-critic; it CHEATS in training only: the policy and the model file's value head see the seat's view alone, and the model file plays as any other)."""
    hand_prediction: Annotated[float, Field(strict=True, ge=0.0, le=100.0, allow_inf_nan=False)] = 0.0
    """algo ppo, a shared trunk with an opponent encoder: the weight of an auxiliary loss, a head on the trunk that predicts every opponent's hand from the seat's view (its targets CHEAT, in training only; the model file holds neither the head nor anything it reads); 0: none."""
    oracle_guiding: Annotated[float, Field(strict=True, ge=0.0, le=1.0, allow_inf_nan=False)] = 0.0
    """algo ppo, a shared trunk with an opponent encoder: the share of this training call (its steps from where it starts to total_steps, or its time limit, whichever is further along; a resumed run fades afresh) over which the policy's view of every opponent's hand fades out (oracle guiding, as Suphx: the trunk's first layer also reads the hands, each card count kept with a probability that falls linearly from 1 to 0; it CHEATS in training only, and the model file holds none of it); 0: none."""


@dataclass(config=_CONFIG)
class Table:
    """One table of a training mixture (``tables``)."""

    rules: Name | dict[str, Any] = "basic"
    """A preset name, a rules YAML path, or a mapping with "preset" and overrides."""
    num_players: Annotated[int, Field(strict=True, ge=2, le=10)] = 2
    """Players at this table."""
    weight: Annotated[float, Field(strict=True, gt=0)] = 1.0
    """Its share of the game slots (num_envs), relative to the other tables' weights (> 0)."""
    opponents: Literal["auto"] | dict[Name, Number] | None = None
    """This table's opponent pool (unset: the run's opponents; auto: the baselines that finish games under these rules, and the shipped policies that fit them)."""
    teacher: Name | None = None
    """A learned policy (a shipped name or a model file that plays this table) whose choices the learner is pulled toward here (distillation): the update adds teacher_coef times the KL divergence from the teacher's masked softmax to the learner's on this table's steps (unset: none)."""
    teacher_coef: Annotated[float, Field(strict=True, gt=0, le=100.0, allow_inf_nan=False)] = 1.0
    """Weight of that KL term, per step of this table in a minibatch (above 0, at most 100; read only with a teacher)."""
    name: TableName | None = None
    """What the log, TensorBoard, tables.json and the folder tables/<name>/ call this table in a mixture of two or more (1-64 letters, digits, '.', '_', '-', the first a letter or digit; unique in the mixture, in upper or lower case; unset: <rules name>-<N>p, with a '+' added where that is taken); the folder holds the table's final evaluation, so none is written with final_eval.games 0."""


@dataclass(config=_CONFIG)
class PPO:
    """PPO's hyperparameters (the same meaning for every algo)."""

    learning_rate: Fraction = 3.0e-4
    """Adam's learning rate (at the start, when it decays; 0 without learning_rate_end: the weights stay as they are)."""
    learning_rate_end: Fraction | None = None
    """When set: a linear decay to this value over total_steps (or time_limit_minutes, whichever ends first; rllib_ppo: over total_steps only); a value above learning_rate makes it a rise."""
    n_steps: Annotated[int, Field(strict=True, ge=1, le=MAX_STEPS)] = 128
    """Steps per game slot in a rollout: a rollout is num_envs * n_steps learner steps (1 to 10^12, total_steps' bound)."""
    batch_size: Count = 2048
    """Minibatch size of the gradient steps: at most a rollout (num_envs x n_steps; algo rllib_ppo: times num_env_runners)."""
    n_epochs: Annotated[int, Field(strict=True, ge=1, le=MAX_EPOCHS)] = 4
    """Passes over each rollout (1 to 1,000)."""
    gamma: Fraction = 1.0
    """Discount factor (1: a win or loss counts the same however many decisions away; below 1, a far-off loss is worth little and stalling can pay)."""
    gae_lambda: Fraction = 0.95
    """GAE's lambda."""
    clip_range: Annotated[float, Field(strict=True, gt=0, le=100.0, allow_inf_nan=False)] = 0.2
    """PPO's clipping of the policy ratio (above 0, at most 100)."""
    ent_coef: LossWeight = 0.01
    """Weight of the entropy bonus (0 to 100)."""
    vf_coef: LossWeight = 0.5
    """Weight of the value loss (0 to 100)."""
    max_grad_norm: Annotated[float, Field(strict=True, gt=0)] = 0.5
    """Gradient clipping (global norm; above 0: a large value such as 1e9 clips nothing)."""
    hand_shaping: Literal["auto"] | Fraction = "auto"
    """Potential-based shaping by the learner's own hand size: each step adds c * (cards before - cards after), and the end of a game c * its cards, so a game's shaping sums to c * the cards dealt (a constant: the best policy is unchanged) while every card played or drawn counts at once (auto: 0.1 for algo ppo in a single round, 0 in a match, where every round deals a new hand, and for the other trainers; 0: none)."""
    truncation: Literal["auto", "loss", "bootstrap"] = "auto"
    """A game cut at max_decisions (no winner): loss (it ends there, with a losing seat's reward: stalling to the cut never pays) | bootstrap (from the value of its last observation, as SB3 and RLlib do) | auto (loss for algo ppo, bootstrap for the others)."""
    advantage_norm: Literal["minibatch", "table"] = "minibatch"
    """How the advantages are normalised (algo ppo): minibatch (each minibatch's to mean 0 and standard deviation 1, as SB3 does) | table (first each table's advantages of a rollout apart, then each minibatch's as before: in a mixture, a table whose advantages are small (in the generalist's, a points reward at 2 players or a win reward at 10) then pulls as hard as one whose advantages are large (a points reward at 10 players), as multi-task PopArt does for its value targets; with one table the same as minibatch but for the rollout-wide step)."""
    color_consistency: Annotated[float, Field(strict=True, ge=0.0, le=100.0, allow_inf_nan=False)] = 0.0
    """Weight of a colour-consistency term (algo ppo; 0: none). No rule tells the colours apart, so in each epoch the update also reads every row with the colours renamed (one naming of the 24 drawn per epoch, ono_env.observation.color_permutation) and adds this weight times the KL divergence from the policy on the row as it is to the policy on the renamed row, read back in the row's actions, plus the squared difference of the two values, the row as it is held fixed (DrAC's regularisation, Raileanu et al. 2021). It costs a second forward and backward pass per minibatch."""


@dataclass(config=_CONFIG)
class Eval:
    """Evaluation during training (the learning curve)."""

    every: Count0 = 250_000
    """Learner steps between evaluations (0: none)."""
    games: Literal["auto"] | Annotated[int, Field(strict=True, ge=1, le=MAX_GAMES)] = "auto"
    """Games per opponent (1 to 100,000,000, as ono-arena; auto: 120,000 decisions' worth of the baselines' own games, 200 to 2,000)."""
    opponents: Literal["auto"] | Opponents = "auto"
    """Agents (names or model files) the learner is evaluated against, one at a time, no two under one name (a model file plays under its file name, or for model.safetensors its run's; auto: the baselines that finish games under the rules)."""


@dataclass(config=_CONFIG)
class FinalEval:
    """The evaluation of the final model."""

    games: Literal["auto"] | Annotated[int, Field(strict=True, ge=0, le=MAX_GAMES)] = "auto"
    """Games per opponent (at most 100,000,000, as ono-arena; 0: no final evaluation; auto: 6,000,000 decisions' worth of games, 2,000 to 100,000)."""
    opponents: Literal["auto"] | Opponents = "auto"
    """Agents (names or model files) the final model is evaluated against, one at a time, no two under one name (as eval.opponents; auto: the baselines that finish games under the rules)."""
    workers: Annotated[int, Field(strict=True, ge=1, le=256)] = 1
    """Processes playing the opponents, one opponent each at a time (the results are the same)."""


@dataclass(config=_CONFIG)
class TrainConfig:
    """Everything a training run reads (``ono-train <config> --print-config`` shows it)."""

    name: RunName = "run"
    """Name of the run: 1-64 letters, digits, '.', '_' and '-', the first a letter or digit (its folder is <out_dir>/<name>-<time>)."""
    seed: Annotated[int, Field(strict=True, ge=0, le=MAX_SEED)] = 0
    """Seed of the deals, the opponents' choices and the network's initialisation."""
    rules: Name | dict[str, Any] = "basic"
    """Rules: a preset name, a rules YAML path, or a mapping with "preset" and overrides."""
    num_players: Annotated[int, Field(strict=True, ge=2, le=10)] = 2
    """Players per game."""
    tables: Annotated[list[Table], Field(min_length=1, max_length=64)] | None = None
    """algo ppo: a mixture of 1-64 tables trained at once (each: rules (default basic), num_players (default 2), weight (default 1), opponents, teacher, teacher_coef, name); every table steps its own games and all their rollouts go into one update; needs observation_version 2 (rules and num_players above are then not read: leave them unset)."""
    observation_version: Annotated[Literal[1, 2], BeforeValidator(_integer_only)] = 1
    """Observation layout the learner reads: 1 (the environments' default; its length depends on the table) | 2 (algo ppo only: one length for every table; tables need it)."""
    observation_hide: list[Hideable] = dataclasses.field(default_factory=list)
    """observation_version 2, for measuring what a part is worth: these fields (each at most once) of every opponent block are hidden from the network (the model's obs_scale divides them by 1e30, so the saved model never sees them either)."""
    reward: Literal["auto", "win", "points"] = "auto"
    """Reward: win (+1 / -1 at the end) | points (score changes; needs a scoring rule set) | auto (points for a match to a target score, whose win comes only after many rounds; win otherwise)."""
    opponents: Literal["auto"] | dict[Name, Number] = "auto"
    """Opponent pool: agent names or model files with weights, drawn per game and seat (auto: the baselines that finish games under the rules, weighted random 1, greedy 2, color 1, defensive 2; in a mixture also the shipped specialists that fit each table, weight 1)."""
    self_play: SelfPlay = dataclasses.field(default_factory=SelfPlay)
    """League self-play."""
    max_decisions: Literal["auto"] | Annotated[int, Field(strict=True, ge=1, le=MAX_DECISIONS)] = "auto"
    """Training games (and in-training evaluations) are cut after this many decisions, with no winner (see ppo.truncation); auto: 10 times the mean length of the baselines' own games, at least 200 and at most the game's own limit (5,000 decisions a round, 50,000 a match)."""
    num_envs: Annotated[int, Field(strict=True, ge=1, le=1_000_000)] = 64
    """Games stepped together (game slots of the vectorized environment)."""
    policy: PolicyNet = dataclasses.field(default_factory=PolicyNet)
    """The networks."""
    ppo: PPO = dataclasses.field(default_factory=PPO)
    """PPO's hyperparameters."""
    total_steps: Annotated[int, Field(strict=True, ge=1, le=MAX_STEPS)] = 1_000_000
    """Learner decisions to train for."""
    time_limit_minutes: Annotated[float, Field(strict=True, gt=0, le=MAX_MINUTES)] | None = None
    """When set: stop training after this many minutes (then save and evaluate)."""
    eval: Eval = dataclasses.field(default_factory=Eval)
    """Evaluation during training."""
    final_eval: FinalEval = dataclasses.field(default_factory=FinalEval)
    """Evaluation of the final model."""
    out_dir: PathName = "runs"
    """Folder that receives the run folders."""
    run_dir: PathName | None = None
    """When set: write the run here instead of <out_dir>/<name>-<time>."""
    progress: Annotated[bool, Field(strict=True)] = True
    """Show progress bars."""
    torch_threads: Literal["auto"] | Annotated[int, Field(strict=True, ge=1, le=MAX_TORCH_THREADS)] = "auto"
    """Threads torch may use: a number, or auto (one per core idle at start, at least 1)."""
    algo: Literal["ppo", "maskable_ppo", "rllib_ppo"] = "ppo"
    """Trainer: ppo (ono_env's masked PPO) | maskable_ppo (sb3-contrib) | rllib_ppo (Ray RLlib; the [ray] extra)."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """algo ppo: where the networks run (auto: cuda when a GPU is present, else cpu)."""
    precision: Literal["auto", "bf16", "fp32"] = "auto"
    """algo ppo: bf16 autocast of the matrix products (auto: where the CPU or GPU supports it) | fp32."""
    resume: PathName | None = None
    """algo ppo: a checkpoint to continue from: checkpoints/step_<n>.safetensors of a run, or its model.safetensors (Adam's state beside it, <name>.optimizer.safetensors, is read when there), or the name of a shipped policy (ppo-any, ppo-basic-2p, ...: its file; Adam starts afresh)."""
    resume_grow: Annotated[bool, Field(strict=True)] = False
    """algo ppo, with resume: grow a checkpoint of the same depth, no layer of it wider, to policy.net_arch, and a narrower opponent encoder to policy.opponent_encoder (it plays as before at the start; Adam starts afresh; a checkpoint of the same shape loads as without it)."""
    resume_drop_value: Annotated[bool, Field(strict=True)] = False
    """algo ppo, with resume and policy.shared: true: load a checkpoint whose value has a network of its own (policy.shared: false when it was trained, as ppo-any) by dropping that network: the policy's trunk is kept and the value head reads it (the one-table fine-tunes of ppo-any in docs/results/generalist ran so)."""
    num_env_runners: Annotated[int, Field(strict=True, ge=0, le=10_000)] = DEFAULT_ENV_RUNNERS
    """algo rllib_ppo: Ray actors sampling games, num_envs games each (0: the driver samples)."""
    ray_address: Name | None = None
    """algo rllib_ppo: the Ray cluster (auto, host:port, ray://...); unset or local: a new local Ray."""

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        rollout = self.num_envs * self.ppo.n_steps * (max(1, self.num_env_runners)
                                                      if self.algo == "rllib_ppo" else 1)
        if self.ppo.batch_size > rollout:
            what = ("num_envs x ppo.n_steps x num_env_runners" if self.algo == "rllib_ppo"
                    else "num_envs x ppo.n_steps")
            raise ValueError(f"ppo.batch_size={self.ppo.batch_size:,} is more than a rollout "
                             f"({what} = {rollout:,} steps), which would be cut to it; "
                             f"allowed: at most {rollout:,}")
        if self.algo == "maskable_ppo" and (self.ppo.batch_size == 1
                                            or rollout % self.ppo.batch_size == 1):
            # before: the first update's logits were NaN, the run folder made
            raise ValueError(f"ppo.batch_size={self.ppo.batch_size:,} leaves a minibatch of one "
                             f"step in each rollout (num_envs x ppo.n_steps = {rollout:,} "
                             f"steps), whose advantages MaskablePPO normalises to NaN; allowed "
                             f"with algo maskable_ppo: a batch size of at least 2 that leaves "
                             f"no single step over")
        if self.algo != "ppo":   # NumPy's global generator, which SB3 and RLlib seed, takes
            # at most 2**32 - 1, and RLlib seeds each env runner with seed + its index (before:
            # "Seed must be between 0 and 2**32 - 1" after the run folder was made)
            most = 2**32 - 1 - (self.num_env_runners if self.algo == "rllib_ppo" else 0)
            if self.seed > most:
                runners = (f" less num_env_runners ({self.num_env_runners:,}: RLlib seeds each "
                           f"env runner with seed + its index)"
                           if self.algo == "rllib_ppo" and self.num_env_runners else "")
                raise ValueError(f"seed={self.seed:,}: algo {self.algo} seeds NumPy's global "
                                 f"generator, which takes at most 2**32 - 1{runners}; allowed "
                                 f"with algo {self.algo}: 0 to {most:,}")
        if self.opponents != "auto" and (not self.opponents or sum(self.opponents.values()) <= 0):
            raise ValueError("opponents needs at least one agent with a weight > 0")
        if self.opponents != "auto":
            _check_weight_sum(self.opponents, "opponents")
        from ono_env.rules import resolve_rules

        if self.tables is None:
            _check_player_count(self.rules, self.num_players, "")
        try:
            rules = resolve_rules(self.rules, num_players=self.num_players)
        except ValueError as exc:
            raise ValueError(f"rules: {exc}") from None
        if self.algo != "rllib_ppo" and self.num_env_runners != DEFAULT_ENV_RUNNERS:
            raise ValueError(f"num_env_runners={self.num_env_runners!r} is read only by algo: "
                             f"rllib_ppo (allowed with algo {self.algo}: "
                             f"{DEFAULT_ENV_RUNNERS}, its default)")
        if self.algo != "rllib_ppo" and self.ray_address is not None:
            raise ValueError(f"ray_address={self.ray_address!r} is read only by algo: rllib_ppo "
                             f"(this config has algo: {self.algo})")
        if self.ray_address is not None:   # its form; whether it answers, when a run starts
            from ono_env.arena.distributed import check_ray_address
            check_ray_address(self.ray_address)
        if self.algo != "ppo" and self.ppo.hand_shaping not in ("auto", 0, 0.0):
            raise ValueError(f"ppo.hand_shaping={self.ppo.hand_shaping!r} is read only by algo: "
                             f"ppo (allowed with algo {self.algo}: auto or 0)")
        if self.algo != "ppo" and self.ppo.color_consistency:
            raise ValueError(f"ppo.color_consistency={self.ppo.color_consistency!r} is read only "
                             f"by algo: ppo (allowed with algo {self.algo}: 0)")
        if self.algo != "ppo" and self.ppo.advantage_norm != "minibatch":
            raise ValueError(f"ppo.advantage_norm={self.ppo.advantage_norm!r} is read only by "
                             f"algo: ppo (allowed with algo {self.algo}: minibatch)")
        if self.algo != "ppo" and self.ppo.truncation == "loss":
            raise ValueError(f"ppo.truncation='loss' is read only by algo: ppo; algo {self.algo} "
                             f"bootstraps a cut game (allowed here: auto or bootstrap)")
        if self.resume_drop_value and (self.resume is None or not self.policy.shared):
            raise ValueError("resume_drop_value=true drops the value network of a checkpoint "
                             "resumed into one shared trunk: it needs resume=<model file> and "
                             "policy.shared: true")
        if self.resume_grow and self.resume is None:
            raise ValueError("resume_grow=true grows the network of a checkpoint: name it with "
                             "resume=<model file>")
        if self.algo != "ppo":
            for field, default in (("device", "auto"), ("precision", "auto"), ("resume", None)):
                if getattr(self, field) != default:
                    raise ValueError(f"{field}={getattr(self, field)!r} is read only by algo: ppo "
                                     f"(this config has algo: {self.algo})")
            if self.policy.shared:
                raise ValueError(f"policy.shared=true (one trunk for both heads) is read only by "
                                 f"algo: ppo; with algo: {self.algo} set policy.shared=false "
                                 f"(two networks of policy.net_arch)")
        if self.tables is not None:
            if self.algo != "ppo":
                raise ValueError(f"tables (a mixture) is read only by algo: ppo (this config has "
                                 f"algo: {self.algo})")
            if self.observation_version != 2:
                raise ValueError("tables (a mixture) needs observation_version: 2, the layout "
                                 "with one length for every table")
            if self.rules != "basic" or self.num_players != 2:
                given = [f"{f}={v!r}" for f, v, unset in (("rules", self.rules, "basic"),
                                                         ("num_players", self.num_players, 2))
                         if v != unset]
                raise ValueError(f"with tables, rules and num_players are not read, and this "
                                 f"config sets {' and '.join(given)} (a shipped config's or an "
                                 f"override's); allowed: rules=basic and num_players=2, their "
                                 f"defaults, with the rules and player count of each table "
                                 f"in tables")
            _check_weight_sum({str(k): t.weight for k, t in enumerate(self.tables)}, "tables")
            if self.opponents != "auto" and all(t.opponents is not None for t in self.tables):
                shown = reprlib.repr(dict(self.opponents))
                raise ValueError(f"opponents={shown} is not read: every table names its own "
                                 f"(tables[k].opponents); allowed: opponents: auto, its "
                                 f"default, or a table that leaves its opponents unset to play "
                                 f"these")
            table_slots(self.num_envs, [t.weight for t in self.tables])
            named: dict[str, int] = {}   # a given name, in lower case: its first table
            for k, t in enumerate(self.tables):
                _check_player_count(t.rules, t.num_players, f"tables[{k}]")
                first = k if t.name is None else named.setdefault(t.name.casefold(), k)
                if first < k:
                    raise ValueError(f"tables[{k}].name={t.name!r} is taken by tables[{first}] "
                                     f"({self.tables[first].name!r}); allowed: a name no other "
                                     f"table has, in upper or lower case (the names are folders)")
                try:
                    table_rules = resolve_rules(t.rules, num_players=t.num_players)
                except ValueError as exc:
                    raise ValueError(f"tables[{k}].rules: {exc}") from None
                label = table_label(table_rules)
                if t.name is None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", label):
                    raise ValueError(f"tables[{k}]: a table without a name is called "
                                     f"<rules name>-<N>p, which names its folder tables/<name>/, "
                                     f"and the rules' name {table_rules.name!r} makes that "
                                     f"{label!r}; allowed: rules named with letters, digits, "
                                     f"'.', '_' and '-' only (the first a letter or digit), or "
                                     f"a name for the table (tables[{k}].name)")
                if isinstance(t.opponents, dict) and (not t.opponents
                                                      or sum(t.opponents.values()) <= 0):
                    raise ValueError(f"tables[{k}].opponents needs at least one agent with a "
                                     f"weight > 0 (or auto, or unset for the run's opponents)")
                if isinstance(t.opponents, dict):
                    _check_weight_sum(t.opponents, f"tables[{k}].opponents")
                if self.reward == "points" and table_rules.scoring == "none":
                    raise ValueError(f"tables[{k}]: reward 'points' needs a rule set with "
                                     f"scoring; the {table_rules.name!r} rules keep no score "
                                     f"(allowed: reward win or auto, or rules that keep a score)")
                if t.teacher is None and t.teacher_coef != 1.0:
                    raise ValueError(f"tables[{k}].teacher_coef={t.teacher_coef!r} weighs the "
                                     f"pull toward a teacher: name one with tables[{k}].teacher")
        # the training-only parts that read (or feed) the shared trunk's opponent encoding
        trunk_parts = [
            (self.policy.privileged_critic,
             "policy.privileged_critic=true adds a value head beside the shared trunk's"),
            (self.policy.hand_prediction > 0, f"policy.hand_prediction="
             f"{self.policy.hand_prediction!r} adds a head to the shared trunk"),
            (self.policy.oracle_guiding > 0, f"policy.oracle_guiding="
             f"{self.policy.oracle_guiding!r} feeds the hidden hands into the shared trunk")]
        if self.algo != "ppo" or not self.policy.shared or self.observation_version != 2 \
                or self.policy.opponent_encoder == 0:
            for on, what in trunk_parts:
                if on:
                    raise ValueError(f"{what}: it needs algo: ppo, policy.shared: true, "
                                     "observation_version: 2 and an opponent encoder "
                                     "(policy.opponent_encoder auto or above 0)")
        if self.policy.oracle_guiding > 0 and self.ppo.color_consistency > 0:
            raise ValueError(f"policy.oracle_guiding={self.policy.oracle_guiding!r} and "
                             f"ppo.color_consistency={self.ppo.color_consistency!r}: the colour "
                             "term compares renamed observations without the hands the policy "
                             "reads; allowed: one of them at 0")
        twice = sorted({f for f in self.observation_hide if self.observation_hide.count(f) > 1})
        if twice:
            raise ValueError(f"observation_hide names {', '.join(twice)} more than once; allowed: "
                             f"each of {', '.join(HIDEABLE)} at most once")
        if self.observation_hide and self.observation_version != 2:
            raise ValueError(f"observation_hide={self.observation_hide!r} hides fields of "
                             f"observation_version 2; this config has version 1")
        enc = self.policy.opponent_encoder
        if self.observation_version == 1 and enc not in ("auto", 0):
            raise ValueError(f"policy.opponent_encoder={enc!r} reads the opponent blocks of "
                             f"observation_version 2; this config has version 1 (allowed: auto "
                             f"or 0)")
        if self.algo != "ppo" and self.observation_version != 1:
            raise ValueError(f"observation_version=2 is read only by algo: ppo (this config has "
                             f"algo: {self.algo})")
        if self.reward == "points" and rules.scoring == "none" and self.tables is None:
            raise ValueError(f"reward 'points' needs a rule set with scoring; the "
                             f"{rules.name!r} rules keep no score")
        return self

    def to_dict(self) -> dict[str, Any]:
        """The config as plain data (what ``config.yaml`` of a run holds)."""
        return dataclasses.asdict(self)


_ADAPTER = TypeAdapter(TrainConfig)
_SHORT = reprlib.Repr()   # a value in an error: cut, as the rest of the project cuts at 80
_SHORT.maxstring = _SHORT.maxother = 80


def table_slots(num_envs: int, weights: Sequence[float]) -> list[int]:
    """The game slots of each table of a mixture: ``num_envs`` split by the tables' weights
    by the largest remainders (Hamilton's method: each table its share rounded down, then one
    more to each of the tables whose shares lost most to the rounding), then at least one
    each (a table left with none takes one from the table furthest above its share).
    ``ValueError`` naming ``num_envs`` when there are fewer slots than tables.

    Before, each share was rounded and the largest table took whatever the rounding left:
    30 equal tables in 100 slots gave one table 13 and the others 3."""
    if num_envs < len(weights):
        raise ValueError(f"num_envs={num_envs}: a mixture of {len(weights)} tables needs at "
                         f"least one game slot per table; allowed: num_envs >= {len(weights)}")
    total = sum(weights)
    # each weight's share of the sum first: num_envs * weight may overflow where the sum does not
    quota = [num_envs * (w / total) for w in weights]
    slots = [math.floor(q) for q in quota]
    by_remainder = sorted(range(len(quota)), key=lambda i: quota[i] - slots[i], reverse=True)
    for i in by_remainder[:num_envs - sum(slots)]:
        slots[i] += 1
    while 0 in slots:   # num_envs >= tables: some table holds two or more
        j = max((k for k in range(len(slots)) if slots[k] > 1), key=lambda k: slots[k] - quota[k])
        slots[j] -= 1
        slots[slots.index(0)] += 1
    return slots


def _check_player_count(rules: Any, num_players: int, where: str) -> None:
    """A rules mapping or rules file that sets ``num_players`` too must agree with the
    config's own (the config's count is the one played; a second, different one would be
    dropped silently)."""
    from ono_env.rules import given_player_count, resolve_rules

    given = given_player_count(rules)
    at = f"{where}." if where else ""
    if given is not None and type(given[0]) is not int:   # 2.0 == 2: the rules' own message
        try:
            resolve_rules(rules)
        except ValueError as exc:
            raise ValueError(f"{at}rules: {exc}") from None
    if given is not None and given[0] != num_players:
        default = " (also its default when not given)" if num_players == 2 else ""
        raise ValueError(f"{at}{given[1]} sets num_players={given[0]!r} and "
                         f"{at}num_players is {num_players}{default}: give the player count "
                         f"once, as {at}num_players")


def validate(data: Any) -> TrainConfig:
    """A :class:`TrainConfig` from a mapping of fields; one ``ValueError`` naming every bad
    field otherwise."""
    if not isinstance(data, dict):
        raise ValueError(f"a training config is a mapping of fields; got {type(data).__name__}")
    try:
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise ValueError("; ".join(_describe_all(exc.errors()))) from None


_UNION_TAG = re.compile(r"^(constrained-|literal\[|dict\[|list\[|function-|nullable\[)|^(str|int|"
                        r"float|bool|none)$")
"""How pydantic names the branch of a union field in an error's location."""


def _describe_all(errors: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per bad field. A union field (``rules``: a name or a mapping; ``opponents``:
    auto or a mapping) fails once per branch, each error's location naming the branch: where
    one branch got inside the value (a bad weight in a mapping) or its own check refused the
    value (an agent named twice), its errors say what is wrong; otherwise the branches'
    expectations are joined into one line."""
    lines: list[str] = []
    unions: dict[tuple[Any, ...], list[tuple[tuple[Any, ...], Mapping[str, Any]]]] = {}
    for err in errors:
        loc = tuple(err["loc"])
        tags = [i for i, part in enumerate(loc) if isinstance(part, str) and _UNION_TAG.match(part)]
        if not tags:
            lines.append(_describe(err))
            continue
        field = loc[:tags[0]]
        inner = loc[:tags[0]] + loc[tags[0] + 1:]   # the branch named once, after the field
        unions.setdefault(field, []).append((inner, err))
    for field, errs in unions.items():
        deeper = [(inner, e) for inner, e in errs if len(inner) > len(field)]
        if deeper:
            lines.extend(_describe({**e, "loc": inner}) for inner, e in deeper)
            continue
        checked = [(inner, e) for inner, e in errs if e["type"] == "value_error"]
        value = errs[0][1].get("input")
        name = f"config field {'.'.join(map(str, field))!r} = {_SHORT.repr(value)}"
        allowed = None if checked else _field_allows(field)
        if allowed is not None:   # 'auto' or a number: said whole, its range too (before:
            # "Input should be 'auto', or a valid integer", and no range, nor the float's hint)
            hint = _whole_number_hint(field, value) if any(
                e["type"] in ("int_type", "int_from_float") for _, e in errs) else ""
            lines.append(f"{name}{hint}; allowed: {allowed}")
            continue
        errs = checked or errs   # a branch whose own check read the value says what is wrong
        wants = [e["msg"].removeprefix("Value error, ") for _, e in errs]
        wants = [wants[0]] + [w.removeprefix("Input should be ") for w in wants[1:]]
        lines.append(f"{name}: " + ", or ".join(dict.fromkeys(wants)))
    return lines


def _describe(err: Mapping[str, Any]) -> str:
    loc = ".".join(str(x) for x in err["loc"])
    kind = err["type"]
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        parent = _fields_at(err["loc"][:-1])
        return (f"unknown config field {_SHORT.repr(loc)}; allowed: "
                + ", ".join(".".join([*map(str, err["loc"][:-1]), f]) for f in parent))
    if not loc:
        return err["msg"].removeprefix("Value error, ")
    value = err.get("input")
    if err["loc"][-1] == "[key]":   # pydantic's loc of a mapping's key: (..., key, "[key]")
        field = ".".join(str(x) for x in err["loc"][:-2])
        return (f"config field {field!r} has the key {_SHORT.repr(value)}: "
                f"{err['msg'].removeprefix('Value error, ')}")
    msg = err["msg"].removeprefix("Value error, ")
    if kind == "dataclass_type":   # names the config's class: say what a user writes instead
        msg = "Input should be a mapping of its fields (--print-config shows them)"
    elif kind == "string_type" and isinstance(value, (int, float, bool)):   # name=2024
        # not echoed as YAML read it: a flag, a float and an integer may not read back as
        # written (True, 2024.10, 1e3; 1_0 is 10 and 0x10 16, so '10' advised another name)
        text = "<as written>"
        # an item of a list or mapping given whole is set with the whole of it on a command
        # line (no dotted key reaches into it: before, the advice was an override that is
        # refused, for tables and then for eval.opponents=[1])
        parts = [str(x) for x in err["loc"]]
        whole = next((k for k in range(1, len(parts)) if _whole_kind(parts[:k])), None)
        line = (f"{loc}=\"'{text}'\" on a command line" if whole is None else
                f"inside {'.'.join(parts[:whole])}="
                f"{'[...]' if _whole_kind(parts[:whole]) == 'list' else '{...}'} on a command line")
        msg += (f" (YAML reads it as {'true or false' if isinstance(value, bool) else 'a number'}"
                f": quote it, '{text}' in a file or {line})")
    elif kind in ("int_type", "int_from_float"):   # total_steps=1e6
        msg += _whole_number_hint(err["loc"], value)
    if kind in _WRONG_KIND and (allowed := _field_allows(err["loc"])) is not None:
        msg += f"; allowed: {allowed}"   # before: the kind alone ("a valid integer")
    return f"config field {loc!r} = {_SHORT.repr(value)}: {msg}"


_WRONG_KIND = ("int_type", "int_parsing", "int_parsing_size", "int_from_float", "float_type",
               "float_parsing", "bool_type", "bool_parsing")
"""pydantic's errors of a value of the wrong kind, which name the kind and not the range."""


def _field_allows(loc: Sequence[Any]) -> str | None:
    """What the field at ``loc`` takes where it is made of numbers, flags, ``auto`` and null,
    from its constraints ("an integer at least 1 and at most 1,000", "true or false", "'auto',
    or an integer at least 1"); None for a field of another kind (:func:`_allows`)."""
    info = _field_info(loc)
    return None if info is None else _allows(info.annotation, info.metadata)


def _whole_number_hint(loc: Sequence[Any], value: Any) -> str:
    """The hint for a float that YAML read where the field at ``loc`` takes an integer
    (``1e6``): the whole number to write, where the field takes it (before: 1e9 was advised
    as 1000000000 for a field of at most 10,000,000); else nothing."""
    if not (isinstance(value, float) and value.is_integer() and abs(value) < 1e18):
        return ""
    info = _field_info(loc)
    if info is None or not _takes_integer(info.annotation, info.metadata, int(value)):
        return ""
    return f" (YAML reads it as a float: write the whole number, {int(value)})"


def _takes_integer(annotation: Any, metadata: Sequence[Any], n: int) -> bool:
    """Does a field of ``annotation`` (with ``metadata``) take the integer ``n``, through
    ``Annotated`` and unions (:func:`_leaves`)?"""
    checks = (("ge", operator.ge), ("gt", operator.gt), ("le", operator.le), ("lt", operator.lt))
    return any(kind is int and all(op(n, getattr(m, attr)) for m in meta
                                   for attr, op in checks if hasattr(m, attr))
               for kind, meta in _leaves(annotation, metadata))


def _field_info(loc: Sequence[Any]) -> Any:
    """The pydantic field info of the config field at ``loc`` (``tables.<k>.<field>``: a
    table's), or None where ``loc`` names none."""
    cls: Any = TrainConfig
    if len(loc) >= 3 and loc[0] == "tables":   # tables.<k>.<field>: a Table's fields
        cls, loc = Table, loc[2:]
    for part in loc[:-1]:
        info = cls.__pydantic_fields__.get(part)
        if info is None or not dataclasses.is_dataclass(info.annotation):
            return None
        cls = info.annotation
    return cls.__pydantic_fields__.get(loc[-1]) if loc and isinstance(loc[-1], str) else None


def _allows(annotation: Any, metadata: Sequence[Any] = ()) -> str | None:
    """``annotation`` (with ``metadata``, its constraints) in words, through ``Annotated``
    and unions (:func:`_leaves`), where every part of it is a number, a flag, a literal or
    null; else None."""
    parts = [_leaf_allows(kind, meta) for kind, meta in _leaves(annotation, metadata)]
    return None if None in parts else ", or ".join(p for p in parts if p is not None)


def _leaf_allows(annotation: Any, metadata: Sequence[Any]) -> str | None:
    """One of :func:`_leaves`' types in words (:func:`_allows`), or None."""
    if typing.get_origin(annotation) is typing.Literal:
        return " or ".join(repr(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "null"
    if annotation is bool:
        return "true or false"
    if annotation not in (int, float):
        return None

    def number(x: Any) -> str:
        return f"{x:,}" if isinstance(x, int) else f"{x:g}"
    bounds = [f"{words} {number(getattr(m, attr))}" for m in metadata
              for attr, words in (("ge", "at least"), ("gt", "above"), ("le", "at most"),
                                  ("lt", "below")) if hasattr(m, attr)]
    kind = "an integer" if annotation is int else "a number"
    return kind + (" " + " and ".join(bounds) if bounds else "")


def _fields_at(loc: Sequence[Any]) -> list[str]:
    """The field names of the (nested) dataclass at ``loc``."""
    cls: Any = TrainConfig
    if len(loc) >= 2 and loc[0] == "tables":   # tables.<k>.<field>: a Table's fields
        cls, loc = Table, loc[2:]
    for part in loc:
        info = cls.__pydantic_fields__.get(part)
        if info is None or not dataclasses.is_dataclass(info.annotation):
            return []
        cls = info.annotation
    return [f.name for f in dataclasses.fields(cls)]


def parse_override(text: str) -> dict[str, Any]:
    """``"ppo.learning_rate=1e-4"`` -> ``{"ppo": {"learning_rate": 0.0001}}``."""
    said = f"override {_SHORT.repr(text)}"   # cut: an override may be thousands of characters
    if not isinstance(text, str) or "=" not in text:
        raise ValueError(f"{said}: write key=value (e.g. total_steps=200000)")
    key, raw = text.split("=", 1)
    if not key.strip() or any(not p for p in key.strip().split(".")):
        raise ValueError(f"{said}: the key before '=' names a field (e.g. ppo.n_steps)")
    if not raw.strip():    # an unset shell variable (resume=$CKPT) must not mean null
        raise ValueError(f"{said}: no value after '='; allowed: a value, or null "
                         f"for none")
    from ono_env.rules import YamlLoader

    text = raw.strip()
    try:
        if key.strip() in _path_fields() and text != "null" and text[:1] not in ("'", '"'):
            # a path as written (before: read as YAML, " #2" was a comment and cut off, a
            # newline became a space, and a bare ~ was null); quoted, it is YAML's string
            value: Any = text
        else:
            value = yaml.load(raw, Loader=YamlLoader)
    except yaml.YAMLError as exc:   # not YAML, or a form refused (an alias, 010, yes, ...)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"{said}: the value cannot be read as YAML plain data "
                         f"({problem})") from None
    out: dict[str, Any] = {}
    node = out
    parts = key.strip().split(".")
    cut = next((i for i in range(1, len(parts)) if _whole_kind(parts[:i])), None)
    if cut is not None:
        field = ".".join(parts[:cut])
        kind = _whole_kind(parts[:cut])
        form = "[...]" if kind == "list" else "{...}"
        raise ValueError(f"{said}: {field} is a {kind}, given whole ({field}={form}; "
                         f"--print-config shows the current one); one "
                         f"{'item' if kind == 'list' else 'key'} of it is not set by a dotted key")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
    node[parts[-1]] = value
    return out


@functools.cache
def _path_fields() -> frozenset[str]:
    """The fields of :class:`TrainConfig` that name a path (:data:`PathName`)."""
    hints = typing.get_type_hints(TrainConfig, include_extras=True)
    return frozenset(name for name, hint in hints.items()
                     if hint == PathName or PathName in typing.get_args(hint))


def _leaves(annotation: Any, metadata: Sequence[Any] = ()) -> list[tuple[Any, list[Any]]]:
    """The types an annotation allows, through ``Optional``/``|`` and ``Annotated``, each with
    its constraints (``Field(ge=1)``'s, and those of an ``Annotated`` around it)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        base, *extra = typing.get_args(annotation)
        return _leaves(base, [*metadata, *(m for x in extra for m in getattr(x, "metadata", [x]))])
    if origin in (typing.Union, types.UnionType):
        return [leaf for a in typing.get_args(annotation) for leaf in _leaves(a)]
    return [(annotation, list(metadata))]


def _whole_kind(parts: Sequence[str]) -> str | None:
    """``"list"`` or ``"mapping"`` where the dotted field ``parts`` of a config is given whole
    (a list: ``tables``, ``policy.net_arch``; a mapping: ``rules``, ``opponents``, which a
    config replaces rather than merges), else None."""
    cls: Any = TrainConfig
    for k, part in enumerate(parts):
        info = getattr(cls, "__pydantic_fields__", {}).get(part)
        if info is None:
            return None
        if k == len(parts) - 1:
            kinds = [typing.get_origin(a) or a for a, _ in _leaves(info.annotation)]
            return "list" if list in kinds else "mapping" if dict in kinds else None
        cls = info.annotation
    return None


def _merge(base: dict[str, Any], new: dict[str, Any]) -> None:
    for k, v in new.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict) and k not in ("opponents", "rules"):
            _merge(base[k], v)
        else:
            base[k] = v


def config_path(spec: str | Path) -> Path:
    """A config file: the config shipped under that name, or else the path itself where it
    is a regular file; one ``ValueError`` naming both for anything else."""
    from ono_env.configs import config_file, config_names

    if not isinstance(spec, (str, Path)) or not str(spec):
        raise ValueError(f"training config {spec!r}; allowed: a YAML path or one of "
                         f"{', '.join(config_names('train'))}")
    # a shipped config's name is that config, as a preset's name is that preset, even
    # beside a file of that name (before: a file named "default" in the current folder was
    # read instead, without a word); ./default names the file
    if isinstance(spec, str) and spec in config_names("train"):
        return cast(Path, config_file("train", spec))   # a shipped name: never None
    p = Path(spec)
    try:
        if p.is_file():
            return p
    except OSError as exc:   # a name too long for the system (before: its OSError, whole)
        raise ValueError(f"cannot read training config {str(spec)!r}: {exc.strerror or exc}") from None
    what = ("a folder" if p.is_dir() else "not a regular file" if p.exists()
            else no_file(p))   # a folder, a device or a pipe: there, but not a config
    raise ValueError(f"cannot read training config {str(spec)!r}: {what}, and no shipped "
                     f"config has that name (allowed: a YAML file, or one of "
                     f"{', '.join(config_names('train'))})")


def check_override_keys(overrides: Sequence[str]) -> None:
    """One ``ValueError`` when a key of ``overrides`` (``key=value`` strings) is given twice or
    overlaps another (``ppo`` and ``ppo.gamma``): :func:`load_config` keeps the last of a key,
    so a command line (``ono-train``, a script that runs it) checks here that each field is
    given once. Items without ``=`` are left to :func:`load_config` to name."""
    given: dict[str, str] = {}
    for o in overrides:
        if "=" not in o:
            continue
        key = o.split("=", 1)[0].strip()
        for k, earlier in given.items():   # the key, or a field inside or around it
            if key == k or key.startswith(k + ".") or k.startswith(key + "."):
                what = "is given twice" if key == k else f"overlaps {shown(k, 60)}"
                raise ValueError(f"override key {shown(key, 60)} {what} ({cut(earlier, 80)}, "
                                 f"{cut(o, 80)}); allowed: each field once")
        given[key] = o


def load_config(spec: str | Path | None = None, overrides: Sequence[str] = ()) -> TrainConfig:
    """The resolved config: defaults, then the YAML file (a path or a shipped name), then
    the ``key=value`` overrides."""
    from ono_env.rules import read_yaml

    data: dict[str, Any] = {}
    if spec is not None:
        path = config_path(spec)
        raw = read_yaml(path, "training config")
        if not isinstance(raw, dict):   # an empty file too, as a rules file: {} is every default
            said = [t for t in (x.strip() for x in path.read_text().splitlines())
                    if t and not t.startswith(("#", "---", "..."))]   # more than comments
            got = ("null" if said else "nothing (an empty file)") if raw is None \
                else type(raw).__name__   # (before: null, ~, called an empty file)
            raise ValueError(f"training config {str(path)!r}: a mapping of fields is needed "
                             f"({{}} for every default); got {got}")
        data = raw
    if isinstance(overrides, str) or not isinstance(overrides, (list, tuple)):
        raise ValueError(f"overrides={shown(overrides, 60)} ({type(overrides).__name__}); allowed: a "
                         f"list of key=value strings")
    for o in overrides:   # in order: of a key given twice the last stands (ono-train refuses it)
        _merge(data, parse_override(o))
    try:
        return validate(data)
    except ValueError as exc:
        where = f"training config {str(spec)!r}: " if spec is not None else ""
        raise ValueError(f"{where}{exc}") from None


def dump_config(cfg: TrainConfig) -> str:
    """The config as YAML (every field, defaults included). A mixture (``tables``) leaves
    out the top-level ``rules`` and ``num_players``: it reads each table's instead, and
    printing the unread defaults there would say it trains under them. The YAML loads back
    to the same config either way."""
    data = cfg.to_dict()
    if cfg.tables is not None:
        del data["rules"], data["num_players"]
    from ono_env.rules import YamlDumper

    return yaml.dump(data, Dumper=YamlDumper, sort_keys=False)


def describe_fields(cls: Any = TrainConfig, prefix: str = "") -> list[tuple[str, str, str]]:
    """``(field, default, docstring)`` for every field, nested ones dotted (for ``--help``)."""
    rows = []
    for f in dataclasses.fields(cls):
        info = cls.__pydantic_fields__[f.name]
        if dataclasses.is_dataclass(info.annotation):
            rows.extend(describe_fields(info.annotation, f"{prefix}{f.name}."))
            continue
        default = (f.default if f.default is not dataclasses.MISSING
                   else f.default_factory())  # type: ignore[operator]  # one of the two is set
        rows.append((prefix + f.name, yaml.safe_dump(default, default_flow_style=True).strip()
                     .removesuffix("...").strip(), info.description or ""))
    return rows


_T = TypeVar("_T")


def resolved(value: _T | Literal["auto"], field: str) -> _T:
    """The value of a config field that may be ``auto``, once ``resolve_auto``
    (:mod:`ono_env.train.run`) has replaced it: every trainer resolves its config before it
    reads one. ``ValueError`` naming the field if it is still ``auto``."""
    if isinstance(value, str) and value == "auto":
        raise ValueError(f"{field} is still 'auto': resolve the config first "
                         f"(ono_env.train.run.resolve_auto)")
    return value
