"""``algo: ppo``: ono_env's own masked PPO, the default trainer of ``ono-train``.

    ono-train default                                   # the README's run
    ono-train default total_steps=2000000 ppo.ent_coef=0.005
    ono-train default resume=runs/default-.../checkpoints/step_1000000.safetensors

One readable file in the spirit of CleanRL's ``ppo.py``: a typed config
(:class:`~ono_env.train.config.TrainConfig`), an actor-critic, a rollout loop, GAE and the
clipped PPO update. It is written here rather than taken from a library because the parts
that make training slow are the ones a library adds around the loss: Stable-Baselines3 steps
through a ``VecEnv`` (per-step lists of info dicts, ``env_method`` for the masks) and keeps
every matrix product in fp32; TorchRL's PPO loss would read as well but brings TensorDict
plumbing around a loss that is twenty lines here. The reference stays available as
``algo: maskable_ppo`` (sb3-contrib), with the same config fields meaning the same things.

What it does
    Rollouts come straight from the batched core: a
    :class:`~ono_env.envs.learner_batch.LearnerBatch` holds ``num_envs`` games, the learner's seat in
    each, and the opponents, which the one agent loop (:mod:`ono_env.agents.driver`) steps in compiled
    code when they are baselines. Per step the policy sees the observations ``(N, D)`` and the
    legal-action masks ``(N, 85)`` as arrays, with no per-game Python objects.

    The policy is a masked categorical: illegal logits are set to -1e9 before the softmax, so
    an illegal action has probability 0 (sampled by Gumbel-max from an explicit
    ``torch.Generator``, never chosen). The update is SB3's PPO loss term for term (clipped
    ratio, advantages normalised per minibatch (``ppo.advantage_norm: table``: first per table
    of a mixture), MSE value loss weighted ``vf_coef``, entropy
    bonus ``ent_coef``, global gradient clipping, Adam (fused) with eps 1e-5, a learning rate
    decaying linearly to ``learning_rate_end`` over ``total_steps`` or
    ``time_limit_minutes``), so the two trainers learn alike per step. An episode cut at
    ``max_decisions`` (no winner) ends there as a loss (``ppo.truncation: loss``, what
    ``auto`` means here: stalling until the cut never pays), or is bootstrapped from the value
    of its last observation (``bootstrap``).

    Every evaluation prints one line (win rate or share against each opponent beside the fair
    share, mean game length, games with no winner) and a warning when the learner stalls
    (:func:`~ono_env.train.run.stall_warning`): its games far longer than the opponents' own,
    or often cut, or its stalling choices since the last evaluation (``catch`` where legal
    and a false one costs, ``draw`` while holding a playable card) mostly taken while it wins
    under a third of its fair share; with those choices and the likely causes.

    A mixture (``tables``, observation version 2) runs every table's games side by side:
    each :class:`_Table` holds its own :class:`~ono_env.envs.learner_batch.LearnerBatch`,
    opponent pool and resolved settings, its games fill a slice of the rollout's game slots,
    and one update learns from all of them. Evaluations, stall warnings and the final
    evaluation run per table. The games write their observations straight into the rollout
    buffer. With an opponent encoder the network encodes only the blocks of the seats that
    are present (the others encode to 0 in the model format), and the update scales the
    rollout's observations once, stores them in the autocast's dtype and gathers only the
    present blocks for each minibatch (:meth:`ActorCritic.prepare`); on the CPU it runs the
    first layer by groups of rows with as many seats present
    (:meth:`ActorCritic.run_prepared`). A table with a ``teacher`` (a learned policy)
    records the teacher's masked softmax at each of its learner's steps, observed in the
    teacher's own layout, and the update adds ``teacher_coef`` times the KL divergence from it
    to the learner's policy on those rows, averaged over the minibatch (distillation, as
    kickstarting does it); TensorBoard's ``train/teacher_kl`` is its mean over the taught
    rows.
    ``ppo.color_consistency`` (a weight) adds DrAC's regularisation under the colours'
    renaming: each epoch draws one of the 24 namings (:func:`~ono_env.observation.color_permutation`),
    every minibatch is read again renamed, and the loss adds the weight times the KL divergence
    from the policy on the rows (held fixed) to the policy on the renamed rows, read back in
    the rows' actions, plus the squared difference of their values (``train/color_kl``,
    ``train/color_value_sq``).

    ``policy.shared: true`` feeds both heads from one trunk (``net_arch``); false keeps two
    networks, as SB3 does. ``precision: auto`` runs the matrix products under bf16 autocast
    where the CPU (AVX-512 BF16 / AMX) or GPU supports it, the loss in fp32; ``device: auto``
    trains on CUDA when a GPU is present. ``torch_threads: auto`` takes one thread per core idle
    at start (:func:`~ono_env.train.run.choose_threads`).

A run folder (``<out_dir>/<name>-<time>/`` or ``run_dir``) holds ``config.yaml``, ``tb/``
(TensorBoard: losses, entropy, KL, clip fraction, learning rate, steps/s, the learner's
episode win rate, ``eval/win_rate/<opponent>``, ``league/snapshots``), ``eval.csv`` (the
learning curve), ``checkpoints/step_<n>.safetensors`` at every evaluation and
``model.safetensors`` at the end (the project's model format, :mod:`ono_env.agents.learned`:
they play in ``ono-arena``, ``ono-play``, ``ono-web`` and as opponents), each with a
``.optimizer.safetensors`` beside it (Adam's state, read by ``resume``, with the step count
and SHA-256 of the model file it was written with), and
``final_eval.json`` / ``.csv``. Every file is safetensors, YAML, CSV or JSON: resuming
unpickles nothing.

``resume`` continues from a checkpoint of a run with the same network: its weights, Adam's
state, its step count (``total_steps`` counts from the start of the first run) and each
table's last evaluation length and stall counts (:class:`TableState`). A decaying learning
rate is set afresh: by steps it reads ``1 - steps / total_steps`` (so without a time limit and
with ``total_steps`` unchanged it goes on from where it was), and a ``time_limit_minutes``
counts from the resumed part's start, so a part that the clock stopped begins again at the
rate its step count gives and decays over its own limit (the generalist's runs were carried on
so). The deals after a resume follow ``seed`` and the step count, not the first run's
generator state.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, cast

import numpy as np
import torch
from torch import nn

from ono_env.agents.learned import (
    LearnedAgent,
    PolicyNet,
    model_bytes,
    model_sha256,
    net_metadata,
    read_metadata,
    read_model,
)
from ono_env.cards import NUM_ACTIONS, NUM_CARD_TYPES
from ono_env.checks import (
    JSONError,
    MAX_SEED,
    check_write_path,
    first_few,
    no_file,
    parse_json,
    shown,
    write_whole,
)
from ono_env.observation import (
    MAX_OPPONENTS,
    OBS2_OPPONENTS,
    OBS_SELF,
    OBS_V2_SIZE,
    OPPONENT_SIZE,
    OPP_PRESENT,
    color_permutation,
)
from ono_env.train.config import (
    HIDEABLE,
    MAX_STEPS,
    TrainConfig,
    resolved,
    table_label,
    table_slots,
)
from ono_env.train.run import (
    EVAL_DECISIONS,
    FINAL_DECISIONS,
    League,
    StopOnInterrupt,
    bar_do,
    check_folder_path,
    check_named_run_dir,
    check_network_memory,
    check_stop_signals,
    choose_threads,
    config_changes,
    curve_rows,
    evaluation_line,
    final_evaluation,
    games_for,
    holds_a_model,
    learning_rate_schedule,
    least_cut,
    read_curve,
    resolve_auto,
    resolved_truncation,
    rules_of,
    run_label,
    say,
    settle_earlier_part,
    stall_choices,
    stall_counts,
    stall_warning,
    start_run,
    step_shaping,
    write_curve,
)

MASKED = -1e9
"""The logit given to an illegal action (its probability is exactly 0 in float32)."""
PAD = 64
"""The update's matrix products over a varying number of rows (the encoder's blocks, a group
of rows with as many seats present) run on a multiple of this many rows: oneDNN, which runs
the CPU's bf16 products, builds a kernel for every new shape, which made such products about
three times slower than at a shape it has seen (373 against 1,042 us for 400 rows of 160)."""
HIDDEN_SCALE = 1e30
"""``observation_hide``: the divisor of a hidden entry (what reaches the network is ~0)."""
HANDS_WIDTH = 16
"""A privileged critic: the width of the layer each opponent's hand passes through."""
HANDS_HIDDEN = 64
"""A privileged critic: the width of its hidden layer (the trunk's output and the hands)."""


def hidden_hands(game: Any, seats: np.ndarray) -> np.ndarray:
    """CHEATING, for a privileged critic and hand prediction in training only:
    ``(B, 9 * NUM_CARD_TYPES)`` float32, the copies of each card type in every opponent's
    hand, the opponents from the left of ``seats`` ``(B,)`` as in the observation's blocks
    (zeros for absent seats), halved (a card type has at most four copies in a deck)."""
    B, P = len(seats), game.num_players
    out = np.zeros((B, MAX_OPPONENTS, NUM_CARD_TYPES), np.float32)
    others = (np.asarray(seats)[:, None] + np.arange(1, P)) % P                   # (B, P - 1)
    out[:, :P - 1] = game.state.hands[np.arange(B)[:, None], others] * np.float32(0.5)
    return out.reshape(B, MAX_OPPONENTS * NUM_CARD_TYPES)


# ---- the network ----------------------------------------------------------------------------
class Prepared(NamedTuple):
    """A rollout's observations as the update reads them (:meth:`ActorCritic.prepare`): the
    scaled own parts ``(M, OBS2_OPPONENTS)``, the scaled blocks of the seats that are present
    ``(P, OPPONENT_SIZE)``, which of the ``(M, 9)`` blocks belong to a seat at the table, and
    ``row`` ``(M, 9)``: where each present block is in ``blocks`` (-1 for an absent seat);
    then how many seats each row has and whether they are its first blocks, which
    :meth:`ActorCritic.run_prepared` sorts and groups the rows by."""

    own: torch.Tensor
    blocks: torch.Tensor
    present: torch.Tensor
    row: torch.Tensor
    seats: torch.Tensor
    """``(M,)``: how many blocks of each row are present."""
    prefix: bool
    """Whether every row's present blocks are its first ``seats`` (as the observation lays
    them out: the seats from the left, then absent ones); :meth:`ActorCritic.run_prepared`
    then skips the absent seats' part of the first layer too."""


class ActorCritic(nn.Module):
    """``obs / scale`` -> MLP -> logits (85) and value; one trunk for both heads
    (``shared``) or two networks of the same shape. With ``opponent_encoder`` E > 0
    (version-2 observations) each of the nine opponent blocks first passes through one
    shared layer of width E (:func:`ono_env.agents.learned.encode_opponents`), which both
    heads read.

    ``privileged`` (a shared trunk with an encoder; ``policy.privileged_critic``): a second
    value, :meth:`privileged_value`, that also reads every opponent's hand
    (:func:`hidden_hands`). It CHEATS and exists for training only: the advantages come from
    it, so that what the hidden cards decide is not counted as the luck of the learner's
    moves, while the policy and the value head ``v`` (the model file's) read the seat's view
    alone. Its last layer starts at zero, so it starts as ``v``'s value (a resumed model's
    advantages do not start from an untrained value).

    ``hand_prediction`` (a shared trunk with an encoder; ``policy.hand_prediction``): a head
    ``hands_predict`` on the trunk's output that predicts every opponent's hand (the rows of
    :func:`hidden_hands`), an auxiliary task fitted beside the policy and value; it trains
    the trunk to carry what the seat's view says of the hidden hands. Its targets CHEAT,
    its input does not, and neither the policy nor the model file reads it. Its weights
    start at zero, so at first it moves nothing but itself.

    ``oracle`` (a shared trunk with an encoder; ``policy.oracle_guiding``): the trunk's first
    layer also reads every opponent's hand (:func:`hidden_hands`, each hand through one
    shared layer, then one more layer into the first layer's units; neither has a bias), as
    the oracle agent of Suphx (Li et al. 2020, "oracle guiding"). It CHEATS and exists for
    training only: the trainer hands it the hands with each count kept with a probability that
    falls to 0 over the run, so that the policy learns with them first and without them
    last. A hand of zeros adds nothing (no bias), so with nothing kept the network computes
    what the model file does; the model file holds neither layer. The last layer starts at
    zero, so a resumed model starts as it was."""

    scale: torch.Tensor   # a buffer (register_buffer): saved and moved with the module

    def __init__(self, scale: np.ndarray, net_arch: list[int], activation: str,
                 shared: bool, opponent_encoder: int = 0, privileged: bool = False,
                 hand_prediction: bool = False, oracle: bool = False) -> None:
        super().__init__()
        # a copy: a loaded agent's arrays are shared with the other agents of its file, read-only
        self.register_buffer("scale", torch.as_tensor(np.array(scale, np.float32)))
        self.activation = activation
        self.shared = shared
        act = {"tanh": nn.Tanh, "relu": nn.ReLU}[activation]
        self._act = torch.tanh if activation == "tanh" else torch.relu
        D = int(self.scale.shape[0])
        self.observation_version = 2 if D == OBS_V2_SIZE else 1
        if opponent_encoder and self.observation_version != 2:
            raise ValueError("an opponent encoder reads version-2 observations")
        self.encoder = nn.Linear(OPPONENT_SIZE, opponent_encoder) if opponent_encoder else None
        trunk_in = OBS2_OPPONENTS + MAX_OPPONENTS * opponent_encoder if opponent_encoder else D

        def mlp() -> nn.Sequential:
            layers: list[nn.Module] = []
            width = trunk_in
            for h in net_arch:
                layers += [nn.Linear(width, h), act()]
                width = h
            return nn.Sequential(*layers)

        self.pi_body = mlp()
        self.v_body = self.pi_body if shared else mlp()
        self.pi = nn.Linear(net_arch[-1], NUM_ACTIONS)
        self.v = nn.Linear(net_arch[-1], 1)
        # orthogonal initialisation, as SB3 and CleanRL: sqrt(2) hidden, 0.01 policy, 1 value
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.orthogonal_(m.weight, math.sqrt(2))
                nn.init.zeros_(m.bias)
        nn.init.orthogonal_(self.pi.weight, 0.01)
        nn.init.orthogonal_(self.v.weight, 1.0)
        self.privileged = privileged
        if privileged:
            if not shared or self.encoder is None:
                raise ValueError("a privileged critic reads a shared trunk with an opponent encoder")
            self.hands_encoder = nn.Linear(NUM_CARD_TYPES, HANDS_WIDTH)
            self.hands_hidden = nn.Linear(net_arch[-1] + MAX_OPPONENTS * HANDS_WIDTH, HANDS_HIDDEN)
            self.hands_value = nn.Linear(HANDS_HIDDEN, 1)
            for m in (self.hands_encoder, self.hands_hidden):
                nn.init.orthogonal_(m.weight, math.sqrt(2))
                nn.init.zeros_(m.bias)
            nn.init.zeros_(self.hands_value.weight)
            nn.init.zeros_(self.hands_value.bias)
        self.hand_prediction = hand_prediction
        if hand_prediction:
            if not shared or self.encoder is None:
                raise ValueError("hand prediction reads a shared trunk with an opponent encoder")
            self.hands_predict = nn.Linear(net_arch[-1], MAX_OPPONENTS * NUM_CARD_TYPES)
            nn.init.zeros_(self.hands_predict.weight)
            nn.init.zeros_(self.hands_predict.bias)
        self.oracle = oracle
        if oracle:
            if not shared or self.encoder is None:
                raise ValueError("oracle guiding reads a shared trunk with an opponent encoder")
            self.hands_oracle_encoder = nn.Linear(NUM_CARD_TYPES, HANDS_WIDTH, bias=False)
            self.hands_oracle_in = nn.Linear(MAX_OPPONENTS * HANDS_WIDTH, net_arch[0], bias=False)
            nn.init.orthogonal_(self.hands_oracle_encoder.weight, math.sqrt(2))
            nn.init.zeros_(self.hands_oracle_in.weight)

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        """What the trunk reads: ``obs / scale``, with the opponent blocks encoded."""
        if self.encoder is None:
            return obs / self.scale
        own, blocks, at = self._split(obs)
        return self._encoded(own, blocks, at, len(obs))

    def _split(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``obs`` ``(B, D)`` apart, scaled: the own part ``(B, OBS2_OPPONENTS)``, the blocks
        of the seats that are present ``(P, OPPONENT_SIZE)``, and their places ``at`` in the
        ``B * MAX_OPPONENTS`` blocks (row-major: game, then seat from the left). Only the
        present blocks are read and divided by the scale (the values are those of
        ``obs / scale``): at the tables of a 2-6 player mixture six of the nine blocks are
        absent on average.

        The blocks are gathered with one ``index_select`` from a read-only view of ``obs``
        whose row ``k`` is the ``OPPONENT_SIZE`` values from flat position ``k`` on (an
        overlapping ``as_strided`` window): a block is then one row, found by its flat
        offset. This reads only the present blocks; slicing the opponent part out and
        reshaping it first copies all nine blocks of every row, and advanced indexing of a
        strided view is several times slower than ``index_select``."""
        obs = obs.contiguous()
        D = obs.shape[1]
        present = obs[:, OBS2_OPPONENTS + OPP_PRESENT::OPPONENT_SIZE] != 0   # (B, 9)
        game, seat = present.nonzero(as_tuple=True)
        at = game * MAX_OPPONENTS + seat
        flat = obs.reshape(-1)[OBS2_OPPONENTS:]
        windows = flat.as_strided((max(flat.numel() - OPPONENT_SIZE + 1, 0), OPPONENT_SIZE), (1, 1))
        block_scale = self.scale[OBS2_OPPONENTS:].reshape(MAX_OPPONENTS, OPPONENT_SIZE)
        blocks = (windows.index_select(0, game * D + seat * OPPONENT_SIZE)
                  / block_scale.index_select(0, seat))
        return obs[:, :OBS2_OPPONENTS] / self.scale[:OBS2_OPPONENTS], blocks, at

    def _encoded(self, own: torch.Tensor, blocks: torch.Tensor, at: torch.Tensor,
                 B: int) -> torch.Tensor:
        """The trunk's input from the scaled own part ``(B, OBS2_OPPONENTS)``, the scaled
        blocks of the seats that are present ``(P, OPPONENT_SIZE)`` and their places ``at``
        in the ``B * MAX_OPPONENTS`` blocks. The encoder runs on the present blocks only;
        an absent seat's encoding is 0, as in the model format (the encoding is multiplied
        by the block's presence flag), so this is the same function with less work: the
        tables of a 2-6 player mixture fill three of the nine blocks on average."""
        assert self.encoder is not None
        e = self._act(self.encoder(blocks))
        full = e.new_zeros(B * MAX_OPPONENTS, e.shape[1]).index_copy(0, at, e)
        return torch.cat([own, full.reshape(B, MAX_OPPONENTS * e.shape[1]).to(own.dtype)], dim=1)

    def heads(self, x: torch.Tensor, hands: torch.Tensor | None = None,
              predict: bool = False, oracle: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        """Logits and value from the trunk's input (:meth:`features`); with ``hands`` (rows
        of :func:`hidden_hands`, a privileged critic), the privileged value after them; with
        ``predict`` (hand prediction), the predicted hands ``(B, 9 * NUM_CARD_TYPES)`` last.
        ``oracle`` (oracle guiding): :meth:`oracle_input`, added to the first layer's."""
        h = self.pi_body(x) if oracle is None else self.pi_body[1:](self.pi_body[0](x) + oracle)
        hv = h if self.shared else self.v_body(x)
        return self._outputs(h, self.v(hv)[:, 0], hands, predict)

    def _outputs(self, h: torch.Tensor, value: torch.Tensor, hands: torch.Tensor | None,
                 predict: bool) -> tuple[torch.Tensor, ...]:
        out = [self.pi(h), value]
        if hands is not None:
            out.append(self.privileged_value(h, value, hands))
        if predict:
            out.append(self.hands_predict(h))
        return tuple(out)

    def oracle_input(self, hands: torch.Tensor) -> torch.Tensor:
        """CHEATING, training only (oracle guiding): what every opponent's hand ``hands``
        ``(B, 9 * NUM_CARD_TYPES)`` (the trainer's kept counts) adds to the trunk's first
        layer, ``(B, net_arch[0])``; 0 for hands of zeros."""
        return self.hands_oracle_in(self._each_hand(self.hands_oracle_encoder, hands))

    def _each_hand(self, layer: nn.Linear, hands: torch.Tensor) -> torch.Tensor:
        """Every opponent's hand of ``hands`` ``(B, 9 * NUM_CARD_TYPES)`` through the shared
        ``layer`` and the activation, side by side: ``(B, 9 * HANDS_WIDTH)``."""
        B = len(hands)
        e = self._act(layer(hands.reshape(B * MAX_OPPONENTS, NUM_CARD_TYPES)))
        return e.reshape(B, MAX_OPPONENTS * HANDS_WIDTH)

    def privileged_value(self, h: torch.Tensor, value: torch.Tensor,
                         hands: torch.Tensor) -> torch.Tensor:
        """CHEATING, training only: the value ``value`` (``v`` on the trunk's output ``h``)
        plus a correction read from ``h`` and every opponent's hand ``hands`` ``(B, 9 *
        NUM_CARD_TYPES)``, each hand through one shared layer."""
        z = torch.cat([h, self._each_hand(self.hands_encoder, hands).to(h.dtype)], dim=1)
        return value + self.hands_value(self._act(self.hands_hidden(z)))[:, 0]

    def forward(self, obs: torch.Tensor, hands: torch.Tensor | None = None,
                predict: bool = False,
                oracle_hands: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        # the rollouts' way: run_prepared's sorting and grouping cost more than they save for
        # one forward pass without gradients (1.22 against 0.91 ms for 1,024 rows)
        return self.heads(self.features(obs), hands, predict,
                          None if oracle_hands is None else self.oracle_input(oracle_hands))

    def prepare(self, obs: torch.Tensor, dtype: torch.dtype) -> Prepared:
        """A rollout's observations ``(M, D)`` made ready for the update's minibatches
        (:meth:`run_prepared`, :meth:`minibatch`; a network with an opponent encoder):
        scaled once and stored as ``dtype`` (bf16 under the bf16 autocast, where the matrix
        products cast to it anyway), the own part and the blocks of the seats that are
        present apart (absent blocks are neither scaled nor kept), so that a minibatch
        gathers only those."""
        if self.encoder is None:
            raise ValueError("prepare: this network has no opponent encoder")
        M = len(obs)
        own, blocks, at = self._split(obs)
        row = torch.full((M * MAX_OPPONENTS,), -1, dtype=torch.int64, device=obs.device)
        row[at] = torch.arange(len(at), device=obs.device)
        row = row.reshape(M, MAX_OPPONENTS)
        present = row >= 0
        seats = present.sum(dim=1)
        prefix = bool(torch.equal(present, torch.arange(MAX_OPPONENTS, device=obs.device)
                                  < seats[:, None]))
        return Prepared(own.to(dtype).contiguous(), blocks.to(dtype), present, row, seats, prefix)

    def run_prepared(self, prep: Prepared, idx: torch.Tensor, hands: torch.Tensor | None = None,
                     predict: bool = False,
                     oracle_hands: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        """Logits and values of the rows ``idx`` of a :meth:`prepare`-d rollout, and the
        rows they belong to: ``idx`` reordered (the caller reads every other per-row tensor
        in that order; a minibatch's loss is a mean over its rows, which the order does not
        change). The values of ``heads(minibatch(prep, idx))`` with less work: the rows are
        sorted by how many seats are present, and the first layer is the own part's product
        plus, for each group of rows with ``c`` seats present, their ``c`` encodings times
        the first ``c`` seats' columns (``_first_layer``). The concatenated trunk input
        (zeros for the absent seats) is never built, and no gradient is computed for the own
        part of it (data, not a parameter's output): with three of nine seats present on
        average, a third less arithmetic in the update at the default width. Rows whose
        present blocks are not their first ones (no observation does that), and every row
        on a GPU, take :meth:`minibatch`'s way: on an NVIDIA H200 the grouped products and
        the group sizes read back for each minibatch made the update slower (1.25 against
        1.01 s per 100,000 steps at the default width). With ``hands`` (every row's
        :func:`hidden_hands`, a privileged critic) the privileged value comes before the rows,
        and with ``predict`` the predicted hands before them (after it). ``oracle_hands``
        (every row's kept hands, oracle guiding) feed the first layer (:meth:`heads`).
        """
        if not prep.prefix or len(prep.blocks) == 0 or idx.device.type != "cpu":
            return *self.heads(self.minibatch(prep, idx),
                               None if hands is None else hands.index_select(0, idx), predict,
                               None if oracle_hands is None
                               else self.oracle_input(oracle_hands.index_select(0, idx))), idx
        count = prep.seats.index_select(0, idx)
        order = torch.argsort(count, descending=True, stable=True)
        idx, count = idx.index_select(0, order), count.index_select(0, order)
        rows = prep.row.index_select(0, idx)
        src = rows[rows >= 0]            # each row's present blocks in turn, seat by seat
        # padded to a multiple of PAD rows, and by enough for _first_layer's padded views
        # (repeats of block 0, whose encodings nothing reads)
        n_pad = -(-(len(src) + PAD * MAX_OPPONENTS) // PAD) * PAD
        src = torch.cat([src, src.new_zeros(n_pad - len(src))])
        e = self._act(self.encoder(prep.blocks.index_select(0, src)))    # type: ignore[misc]
        groups = torch.bincount(count, minlength=MAX_OPPONENTS + 1).tolist()
        own = prep.own.index_select(0, idx)
        extra = (None if oracle_hands is None
                 else self.oracle_input(oracle_hands.index_select(0, idx)))
        h = self._first_layer(self.pi_body, own, e, groups, extra)
        hv = h if self.shared else self._first_layer(self.v_body, own, e, groups)
        return *self._outputs(h, self.v(hv)[:, 0],
                              None if hands is None else hands.index_select(0, idx), predict), idx

    def _first_layer(self, body: nn.Sequential, own: torch.Tensor, e: torch.Tensor,
                     groups: list[int], extra: torch.Tensor | None = None) -> torch.Tensor:
        """``body`` on rows sorted as in :meth:`run_prepared` (``groups[c]`` rows with ``c``
        seats present, the most first; ``e`` their encodings, row by row): its first layer
        is the own part's product plus, for each group, its encodings ``(rows, c * E)``
        times the first ``c`` seats' columns (plus ``extra``, oracle guiding's input, when
        given); then the rest of ``body``."""
        lin = cast(nn.Linear, body[0])
        width = self.opponent_width
        w = lin.weight
        y = torch.addmm(lin.bias, own, w[:, :OBS2_OPPONENTS].t())
        if extra is not None:
            y = y + extra.to(y.dtype)
        parts, at = [], 0
        for c in range(MAX_OPPONENTS, 0, -1):
            n = groups[c]
            if n:   # the group's rows padded to a multiple of PAD (the next rows' encodings)
                rows = -(-n // PAD) * PAD
                block = e[at:at + rows * c].reshape(rows, c * width)
                parts.append((block @ w[:, OBS2_OPPONENTS:OBS2_OPPONENTS + c * width].t())[:n])
                at += n * c
        if groups[0]:
            parts.append(y.new_zeros(groups[0], y.shape[1]))
        return body[1:](y + torch.cat(parts) if parts else y)

    def minibatch(self, prep: Prepared, idx: torch.Tensor) -> torch.Tensor:
        """The trunk's input for the rows ``idx`` of a :meth:`prepare`-d rollout: the values
        of ``features(obs[idx])``, in the prepared dtype. Every gather is an
        ``index_select`` (several times faster on the CPU than indexing with ``[]``)."""
        B = len(idx)
        rows = prep.row.index_select(0, idx)                              # (B, 9)
        game, seat = (rows >= 0).nonzero(as_tuple=True)
        src = rows[game, seat]
        return self._encoded(prep.own.index_select(0, idx), prep.blocks.index_select(0, src),
                             game * MAX_OPPONENTS + seat, B)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.v(self.v_body(self.features(obs)))[:, 0]

    @property
    def opponent_width(self) -> int:
        return 0 if self.encoder is None else int(self.encoder.out_features)

    def policy_net(self) -> PolicyNet:
        """A frozen NumPy copy in the model format (a shared trunk is written out twice, once
        in front of each head)."""
        def layers(body: nn.Sequential, head: nn.Linear) -> list[tuple[np.ndarray, np.ndarray]]:
            out = [(m.weight, m.bias) for m in body if isinstance(m, nn.Linear)] + [(head.weight, head.bias)]
            return [(w.detach().to("cpu", torch.float32).numpy().copy(),
                     b.detach().to("cpu", torch.float32).numpy().copy()) for w, b in out]
        encoder = None
        if self.encoder is not None:
            (w, b), = layers(nn.Sequential(), self.encoder)
            encoder = (w, b)
        return PolicyNet(self.scale.detach().cpu().numpy().copy(), layers(self.pi_body, self.pi),
                         self.activation, layers(self.v_body, self.v), encoder)

    def load_policy_net(self, net: PolicyNet, grow: bool = False, drop_value: bool = False) -> bool:
        """Copy the weights of a model file's network into this one (``resume``); returns
        whether it was grown. ``ValueError`` when the shapes differ, unless ``grow`` and the
        checkpoint's network is as deep and no layer of it is wider than this one's: then it
        is embedded (:func:`embed_linear`), so that this wider network computes exactly the
        checkpoint's logits and values until training moves it; a narrower opponent encoder
        grows the same way (its new units' columns in each trunk's first layer are 0,
        ``_wider_encodings``). A checkpoint whose value has a
        network of its own loads into a shared trunk only with ``drop_value`` (its value head
        then reads the policy's trunk); ``drop_value`` with a shared checkpoint is an error."""
        if net.activation != self.activation:
            raise ValueError(f"resume: the checkpoint's activation is {net.activation}, this "
                             f"config's policy.activation is {self.activation}: allowed: "
                             f"policy.activation={net.activation}")
        grown = False

        def sizes(layers) -> str:
            return "x".join(str(w.shape[0]) for w, _ in layers[:-1]) or "no hidden layer"

        def put(body: nn.Sequential, head: nn.Linear, layers, what: str) -> None:
            nonlocal grown
            mine = [m for m in body if isinstance(m, nn.Linear)] + [head]
            deep = layers is not None and len(layers) == len(mine)
            same = deep and all(tuple(m.weight.shape) == w.shape for m, (w, _) in zip(mine, layers))
            # growing: no layer narrower, and the trunk's first layer reads the same input
            fits = grow and deep and all(m.weight.shape[0] >= w.shape[0] and m.weight.shape[1] >= w.shape[1]
                                         for m, (w, _) in zip(mine, layers)) and (
                len(mine) == 1 or mine[0].weight.shape[1] == layers[0][0].shape[1])
            if not (same or fits):
                if not layers:
                    raise ValueError(f"resume: the checkpoint has no {what} network")
                have = [m.out_features for m in mine[:-1]]
                raise ValueError(f"resume: the checkpoint's {what} network is {sizes(layers)}, "
                                 f"this config's policy.net_arch is {have}: allowed: "
                                 f"policy.net_arch={[w.shape[0] for w, _ in layers[:-1]]}"
                                 + ("" if grow else " (or resume_grow=true to grow a narrower "
                                    "checkpoint of the same depth to this config's widths)"))
            grown = grown or not same
            for m, (w, b) in zip(mine, layers):
                embed_linear(m, w, b)
        theirs, mine = net.opponent_width, self.opponent_width
        if (theirs == 0) != (mine == 0) or theirs > mine or (theirs < mine and not grow):
            def enc(width: int) -> str:
                return f"a {width}-wide opponent encoder" if width else "no opponent encoder"
            raise ValueError(f"resume: the checkpoint has {enc(theirs)}, this config "
                             f"{enc(mine)}: allowed: policy.opponent_encoder={theirs}"
                             + (" (or resume_grow=true to grow it to this config's width)"
                                if 0 < theirs < mine else ""))
        if theirs < mine:   # each trunk's first layer reads the wider encodings' columns
            grown = True
            net = PolicyNet(net.scale, _wider_encodings(net.layers, theirs, mine),
                            net.activation,
                            None if net.value_layers is None
                            else _wider_encodings(net.value_layers, theirs, mine), net.encoder)
        # a shared trunk is written out twice (policy_net): the same weights and biases
        own_value = net.value_layers is not None and not all(
            np.array_equal(a, b, equal_nan=True) and np.array_equal(c, d, equal_nan=True)
            for (a, c), (b, d) in zip(net.layers[:-1], net.value_layers[:-1]))
        if self.shared and own_value and not drop_value:
            raise ValueError("resume: the checkpoint's value has a network of its own "
                             "(policy.shared: false when it was trained), this config shares "
                             "one trunk between the policy and the value: allowed: "
                             "policy.shared=false, or resume_drop_value=true to drop that "
                             "network (the value head then reads the policy's trunk)")
        if drop_value and not own_value:
            raise ValueError("resume_drop_value=true: the checkpoint's value shares the policy's "
                             "trunk; there is no value network of its own to drop")
        if self.encoder is not None and net.encoder is not None:
            put(nn.Sequential(), self.encoder, [net.encoder], "opponent encoder")
        put(self.pi_body, self.pi, net.layers, "policy")
        if not self.shared:
            put(self.v_body, self.v, net.value_layers, "value")
        else:
            put(nn.Sequential(), self.v, (net.value_layers or [])[-1:], "value")
        return grown


def _wider_encodings(layers: list[tuple[np.ndarray, np.ndarray]], old: int,
                     new: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """A network's ``layers`` with the first layer's opponent columns laid out for an
    opponent encoder of width ``new`` instead of ``old``: seat ``k``'s ``old`` columns move to
    ``k * new`` past the own part, and the ``new - old`` columns after them, which read the
    new encoder units, are 0 (so the grown network computes what the checkpoint did; growing
    the encoder's own rows is :func:`embed_linear`'s work)."""
    (w, b), *rest = layers
    out = np.zeros((w.shape[0], OBS2_OPPONENTS + MAX_OPPONENTS * new), np.float32)
    out[:, :OBS2_OPPONENTS] = w[:, :OBS2_OPPONENTS]
    for k in range(MAX_OPPONENTS):
        out[:, OBS2_OPPONENTS + k * new:OBS2_OPPONENTS + k * new + old] = \
            w[:, OBS2_OPPONENTS + k * old:OBS2_OPPONENTS + (k + 1) * old]
    return [(out, b), *rest]


def embed_linear(m: nn.Linear, w: np.ndarray, b: np.ndarray) -> None:
    """Put a checkpoint's layer ``(w, b)`` into ``m``, which may be wider (function-preserving
    growth, as Net2Net's "new units with zero outgoing weights"; written here because it is
    three slice assignments). The old units come first and read only the old inputs (their
    weights from new inputs are 0); new units keep ``m``'s fresh initialisation. The new
    units' outgoing weights are those of the next layer's columns past the old width, set to
    0 by that layer's own call, so they change nothing until training moves them."""
    o, i = w.shape
    with torch.no_grad():
        # torch.tensor copies: a loaded agent's arrays are read-only (shared by its file's agents)
        m.weight[:o, :i].copy_(torch.tensor(w))
        m.weight[:o, i:].zero_()
        m.bias[:o].copy_(torch.tensor(b))


def masked_logits(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``logits`` in float32 with the illegal actions at :data:`MASKED`."""
    return logits.float().masked_fill(~mask, MASKED)


def masked_entropy(logp_all: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The mean entropy of the rows of ``log_softmax(masked_logits(...))``. An illegal
    action's log-probability is about :data:`MASKED`, and ``exp()`` of such values takes a
    CPU path about 10 times slower than of ordinary ones; so they are set to 0 before
    ``exp()`` and their probability to exactly 0 after: the values and gradients of
    ``-(exp(logp) * logp).sum(1).mean()``, where ``exp(MASKED)`` is 0 too."""
    p = logp_all.masked_fill(~mask, 0.0).exp().masked_fill(~mask, 0.0)
    return -(p * logp_all).sum(dim=1).mean()


def normalise_by_table(adv: torch.Tensor, slots: Sequence[slice]) -> None:
    """``ppo.advantage_norm: table``: each table's advantages of a rollout (``adv`` is
    ``(n_steps, game slots)``; ``slots``, each table's columns) in place to mean 0 and standard
    deviation 1, so that in a mixture a table whose advantages are small pulls as hard as one
    whose advantages are large (TensorBoard's ``advantage_std/<table>`` shows them before).
    The minibatches are normalised again as ever."""
    for sl in slots:
        a = adv[:, sl]
        if a.numel() > 1:
            adv[:, sl] = (a - a.mean()) / (a.std() + 1e-8)


def renamed_prepared(prep: Prepared, obs_index: torch.Tensor) -> Prepared:
    """A :meth:`ActorCritic.prepare`-d rollout with the colours renamed (``obs_index`` of
    :func:`~ono_env.observation.color_permutation`, version 2): the own part's and every
    opponent block's entries moved alike (the scale is the same under any naming)."""
    block = obs_index[OBS2_OPPONENTS:OBS2_OPPONENTS + OPPONENT_SIZE] - OBS2_OPPONENTS
    return prep._replace(own=prep.own.index_select(1, obs_index[:OBS2_OPPONENTS]),
                         blocks=prep.blocks.index_select(1, block))


def color_consistency(logp_all: torch.Tensor, value: torch.Tensor, logits_c: torch.Tensor,
                      value_c: torch.Tensor, action_index: torch.Tensor,
                      legal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``ppo.color_consistency``'s two terms for a minibatch: the mean KL divergence from the
    policy on the rows (``logp_all``, held fixed) to the policy on the renamed rows
    (``logits_c``, read back in the rows' actions through ``action_index``), and the mean
    squared difference of the renamed rows' values ``value_c`` from the rows' (held
    fixed)."""
    logp_c = torch.log_softmax(masked_logits(logits_c.index_select(1, action_index), legal), dim=1)
    mine = logp_all.detach()
    p = mine.masked_fill(~legal, 0.0).exp().masked_fill(~legal, 0.0)
    kl = (p * (mine - logp_c).masked_fill(~legal, 0.0)).sum(dim=1).mean()
    return kl, ((value_c.float() - value.detach().float()) ** 2).mean()


def sample(logits: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """One action per row of masked logits by Gumbel-max (a draw from the softmax)."""
    u = torch.rand(logits.shape, generator=gen, device=logits.device).clamp_(1e-12, 1.0 - 1e-7)
    return (logits - torch.log(-torch.log(u))).argmax(dim=1)


def bf16_supported(device: torch.device, capabilities: Mapping[str, Any] | None = None) -> bool:
    """Whether bf16 matrix products are native here: CUDA with bf16, or a CPU whose
    instruction set has them (AVX-512 BF16 or AMX BF16, from ``torch.cpu.get_capabilities()``
    unless ``capabilities`` is given). oneDNN also accepts a plain AVX-512 CPU, where it
    emulates bf16: there the default config trained 1.8x slower under bf16 autocast than in
    fp32 (21,500-22,800 against 35,900-42,800 steps/s)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if capabilities is None:
        try:
            capabilities = torch.cpu.get_capabilities()
        except (AttributeError, RuntimeError):
            return False
    return bool(capabilities.get("avx512_bf16") or capabilities.get("amx_bf16"))


def resolve_device(cfg: TrainConfig) -> tuple[torch.device, bool]:
    """The device and whether bf16 autocast is used; ``ValueError`` for ``device: cuda`` on
    a machine without one, or ``precision: bf16`` where bf16 is not native."""
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device=cuda: torch sees no CUDA GPU here; allowed: auto or cpu")
    dev = torch.device("cuda" if cfg.device == "cuda" or (cfg.device == "auto" and torch.cuda.is_available())
                       else "cpu")
    native = bf16_supported(dev)
    if cfg.precision == "bf16" and not native:
        raise ValueError(f"precision=bf16: this {dev.type} has no native bf16 matrix products; "
                         f"allowed here: auto or fp32")
    return dev, cfg.precision == "bf16" or (cfg.precision == "auto" and native)


# ---- checkpoints ----------------------------------------------------------------------------
def optimizer_path(model_path: Path) -> Path:
    """The optimizer state file beside a model file: ``X.safetensors`` has
    ``X.optimizer.safetensors``; a file of another name (which training never writes, but
    ``resume`` reads: ``model.bin``, a ``.zip``) has its whole name followed by
    ``.optimizer.safetensors``, never the model file itself."""
    name = model_path.name
    stem = name[:-len(".safetensors")] if name.endswith(".safetensors") else name
    return model_path.with_name(stem + ".optimizer.safetensors")


def diverged(steps: int, config: Mapping[str, Any], why: str) -> ValueError:
    """The error of a training whose weights or losses are no longer finite: what to change,
    with this run's values (``config``: the run's config as a dict)."""
    ppo, policy = config.get("ppo", {}), config.get("policy", {})
    weights = [f"ppo.vf_coef: {ppo.get('vf_coef')}", f"ppo.ent_coef: {ppo.get('ent_coef')}"]
    # the weights of the terms this run adds (before: a teacher_coef of 1e308 diverged and
    # the error named only the two above)
    weights += [f"{k}: {v}" for k, v in (("ppo.color_consistency", ppo.get("color_consistency")),
                                          ("policy.hand_prediction", policy.get("hand_prediction")))
                if v]
    weights += [f"tables[{k}].teacher_coef: {tab.get('teacher_coef')}"
                for k, tab in enumerate(config.get("tables") or ()) if tab.get("teacher")]
    return ValueError(f"training diverged by {steps:,} steps, nothing saved then ({why}); "
                      f"allowed: a smaller ppo.learning_rate (this run's: "
                      f"{ppo.get('learning_rate')}) or smaller loss weights "
                      f"({', '.join(weights)}), or a resume from an earlier checkpoint")


def save_checkpoint(model: ActorCritic, opt: torch.optim.Adam, path: Path, rules: Any,
                    steps: int, config: dict[str, Any], label: str | None = None,
                    tables_state: Mapping[str, TableState] | None = None) -> Path:
    """The model file (playable) and Adam's state beside it (for ``resume``); ``label``: the
    name the model plays under when its file is called ``model.safetensors`` (the run's).
    ``tables_state``: what each table (by its label) carries into a resumed part, kept in the
    optimizer file's metadata (:func:`read_tables_state`)."""
    from safetensors.numpy import save

    net = model.policy_net()
    meta = net_metadata(net, rules, steps, config, label=label,
                        observation_version=model.observation_version)
    try:   # the model file's own check (finite weights and logits), before any write
        PolicyNet.from_tensors(net.tensors(), meta, "model to save")
    except ValueError as exc:   # weights that blew up: say what to change (a write error
        raise diverged(steps, config, str(exc)) from None   # below says itself)
    data = model_bytes(net, meta)
    path = check_write_path(path, "model file")
    tensors: dict[str, np.ndarray] = {}
    names = {id(p): n for n, p in model.named_parameters()}
    for group in opt.param_groups:
        for p in group["params"]:
            st = opt.state.get(p)
            if st:
                for k in ("exp_avg", "exp_avg_sq"):
                    tensors[f"{names[id(p)]}.{k}"] = st[k].detach().cpu().float().numpy()
                tensors[f"{names[id(p)]}.step"] = np.array([float(st["step"])], np.float32)
    for n, p in model.named_parameters():   # a privileged critic, hand prediction: not in the model file
        if n.startswith("hands_"):
            tensors[f"weights.{n}"] = p.detach().cpu().float().numpy()
    meta_opt = {"training_steps": str(steps), "model_sha256": hashlib.sha256(data).hexdigest()}
    if tables_state:
        meta_opt["tables_state"] = json.dumps({k: dataclasses.asdict(v) for k, v in tables_state.items()})
    # each whole or not at all: a run killed while it wrote left a part. Adam's state first,
    # the model last: a run stopped between the two (a second Ctrl-C) leaves no model without
    # its Adam's state; an Adam's state beside an earlier model is refused by resume, as the
    # SHA-256 it records differs
    write_whole(optimizer_path(path), save(tensors, metadata=meta_opt), "optimizer state file")
    return write_whole(path, data, "model file")


@dataclasses.dataclass(frozen=True)
class TableState:
    """What a table's part of a run carries into a resumed part, beside Adam's state: the
    learner's mean game length at the last evaluation (``eval.games`` and ``final_eval.games``
    of ``auto`` size their games by it) and the stall warning's counts since then (catches,
    catches legal, draws holding a playable card, such draws legal; not zero only in a model
    saved between evaluations, at the end or on Ctrl-C)."""

    eval_length: float = 0.0
    stall_counts: tuple[int, ...] = (0, 0, 0, 0)


def read_tables_state(model_path: str | Path) -> dict[str, TableState]:
    """The tables' state saved beside a checkpoint (:class:`TableState`, by table label):
    empty where the file has no optimizer state beside it or was written before it was kept
    (a resumed part then sizes its first evaluation as a new run does). A malformed entry is
    one ``ValueError`` naming the file."""
    opath = optimizer_path(Path(model_path))
    if not opath.is_file():
        return {}
    return _tables_state(_optimizer_file(opath).get("tables_state"),
                         repr(str(opath)))


def _optimizer_file(opath: Path) -> dict[str, str]:
    """An optimizer state file's metadata (its header alone: no tensor is read);
    ``ValueError`` naming the file where it is not a safetensors file."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(opath), "np") as f:
            return f.metadata() or {}
    except (SafetensorError, OSError) as exc:
        raise _not_an_optimizer_file(opath, exc) from None


def _not_an_optimizer_file(opath: Path, exc: Exception) -> ValueError:
    """The one error for a file, beside a checkpoint, that safetensors cannot read."""
    return ValueError(f"resume: {str(opath)!r} is not an optimizer state file ({exc}); allowed: "
                      f"the .optimizer.safetensors file training writes beside a checkpoint, "
                      f"or none (Adam starts afresh)")


def _check_pair(opath: Path, opt_meta: dict[str, str], path: Path) -> None:
    """``ValueError`` where the optimizer file ``opath`` (its metadata ``opt_meta``) was
    written with another model file than ``path``: the model's SHA-256 kept beside Adam's
    state differs (files written before it was kept have none: not checked)."""
    written_with = opt_meta.get("model_sha256")
    if written_with is not None and written_with != model_sha256(path):
        raise ValueError(f"resume: {str(opath)!r} holds Adam's state of another model file "
                         f"than {str(path)!r} (its SHA-256 differs: another run's, or the "
                         f"model file was changed since it was written, or damaged); allowed: "
                         f"the optimizer file written with that model file (a checkpoint's "
                         f"pair), or none beside it (Adam starts afresh)")


def _tables_state(text: str | None, where: str) -> dict[str, TableState]:
    """An optimizer file's ``tables_state`` metadata (``where``: the file, for the error) as
    :class:`TableState` by table label; empty for none."""
    if text is None:
        return {}

    def entry_state(entry: Any) -> TableState | None:
        if not isinstance(entry, dict) or set(entry) != {"eval_length", "stall_counts"}:
            return None
        length, counts = entry["eval_length"], entry["stall_counts"]
        if (isinstance(length, bool) or not isinstance(length, (int, float))
                or (isinstance(length, int) and not 0 <= length < 2**63)   # no float of 10**400
                or not math.isfinite(length) or length < 0):
            return None
        if (not isinstance(counts, list) or len(counts) != 4
                or not all(type(c) is int and 0 <= c < 2**63 for c in counts)):
            return None
        return TableState(float(length), tuple(counts))

    why = ""
    try:   # a table given twice: refused, not the last kept
        raw = parse_json(text, finite=False)   # a length's NaN: entry_state names it
    except JSONError as exc:
        raw, why = None, f" ({exc})"
    states = {k: entry_state(v) for k, v in raw.items()} if isinstance(raw, dict) else {"": None}
    if any(v is None for v in states.values()):
        raise ValueError(f"resume: {where} holds a tables_state that is not one{why}; allowed: a "
                         f"JSON object of table labels, each {{\"eval_length\": a finite number "
                         f">= 0, \"stall_counts\": four whole numbers from 0 to 2**63 - 1}}, as training writes it")
    return {k: v for k, v in states.items() if v is not None}


def hidden_fields(scale: np.ndarray, rules: Any) -> list[str]:
    """The opponent fields that a version-2 observation scale hides (``observation_hide``:
    every entry of the field divided by :data:`HIDDEN_SCALE`), in the order of
    :data:`~ono_env.train.config.HIDEABLE` (whatever order a config lists them in)."""
    from ono_env.observation import observation_view

    view = observation_view(np.asarray(scale)[None, :], rules, 2).opponents
    return [f for f in HIDEABLE if (getattr(view, f) >= HIDDEN_SCALE).all()]


def load_checkpoint(model: ActorCritic, opt: torch.optim.Adam, path: str | Path,
                    rules: Any, grow: bool = False, drop_value: bool = False,
                    quiet: bool = False, tables_state: dict[str, TableState] | None = None,
                    said: list[str] | None = None) -> int:
    """Load a checkpoint written by :func:`save_checkpoint` into ``model`` and ``opt``;
    returns its step count. ``ValueError`` naming the file for anything else, and for Adam's
    state of another model file (its step count or SHA-256 differs). ``tables_state``:
    filled with the tables' state kept beside Adam's (:func:`read_tables_state`) where
    Adam's state is read. ``grow``: a narrower network is grown
    (:meth:`ActorCritic.load_policy_net`), and then Adam starts afresh (its state has the old
    shapes), which is printed unless ``quiet``, as are the file, its steps and whether Adam's
    state was read; where ``said`` is given, those lines go into it instead, for the caller
    to print once the run has started (before: printed above a later refusal of the run)."""
    from ono_env.agents.learned import check_compatible, check_playable

    lines: list[str] = []

    path = Path(path)
    meta, net = read_model(path)
    # one this ono_env plays at all first (before: a version-3 file was told to set
    # observation_version=3, which the config refuses)
    check_playable(meta, f"resume: {str(path)!r}")
    if meta["observation_version"] != model.observation_version:
        raise ValueError(f"resume: {str(path)!r} reads observation version "
                         f"{meta['observation_version']}, this config's observation_version is "
                         f"{model.observation_version}: allowed: "
                         f"observation_version={meta['observation_version']}")
    check_compatible(meta, rules, f"resume: {str(path)!r}")   # the error names the option too
    if meta["observation_version"] == 2:
        theirs, mine = (hidden_fields(scale, rules) for scale in (net.scale, model.scale.detach().cpu().numpy()))
        if theirs != mine:
            raise ValueError(f"resume: {str(path)!r} was trained with observation_hide="
                             f"[{', '.join(theirs)}], this config's observation_hide is "
                             f"[{', '.join(mine)}]: allowed: observation_hide=[{', '.join(theirs)}]")
    opath = optimizer_path(path)
    opt_meta = None   # the optimizer file's header, read once
    if not grow and opath.is_file():   # the pair first: a model file changed since it was
        # written (a damaged byte) is named so, not by what its weights then look like
        # (before: a byte of a shared trunk's value layers read as policy.shared: false)
        opt_meta = _optimizer_file(opath)
        _check_pair(opath, opt_meta, path)
    grown = model.load_policy_net(net, grow, drop_value)
    if grown and not quiet:
        encoders = ("" if net.opponent_width == model.opponent_width else
                    f", its opponent encoder from {net.opponent_width} to {model.opponent_width}")
        widths = "x".join(str(m.out_features) for m in model.pi_body if isinstance(m, nn.Linear))
        lines.append(f"resume: the checkpoint's network ({'x'.join(map(str, net.hidden_sizes))}) "
                     f"grown to {widths}{encoders}: it plays as the checkpoint at the start; Adam "
                     f"starts afresh")
    if (opath.exists() or opath.is_symlink()) and not opath.is_file():
        # before: "no Adam state beside it", and Adam started afresh
        raise ValueError(f"resume: {str(opath)!r}, the name of the checkpoint's Adam state, is "
                         f"not a file (a folder, a broken link, a device); allowed: the "
                         f"optimizer file written with {str(path)!r}, or nothing of that name "
                         f"(Adam starts afresh)")
    summary = None
    if not quiet:   # a grown network's Adam starts afresh, as printed above
        state_line = ("" if grown else f"; Adam's state from {opath.name!r}" if opath.is_file()
                      else f"; no Adam state beside it ({opath.name!r}): Adam starts afresh")
        heads = sorted({n.split(".")[0] for n, _ in model.named_parameters()
                        if n.startswith("hands_")})
        if heads and (grown or not opath.is_file()):   # kept beside Adam's state: not read
            state_line += f"; the training-only layers ({', '.join(heads)}) start afresh"
        if grown and opath.is_file():   # not read, as Adam's state: those of the checkpoint's
            # that this config trains without are said too (the file's keys alone are read)
            from safetensors import SafetensorError, safe_open

            try:
                with safe_open(str(opath), "np") as fh:
                    keys = set(fh.keys())
            except (OSError, SafetensorError):   # unread, as before: the resume does not need it
                keys = set()
            dropped = sorted({k.split(".")[1] for k in keys if k.startswith("weights.hands_")}
                             - set(heads))
            if dropped:
                state_line += (f"; its training-only layers {', '.join(dropped)}, which this "
                               f"config trains without, are left out")
        # said once the optimizer file has been read and checked (before: above its refusal)
        summary = f"resume: {str(path)!r} at {int(meta['training_steps']):,} steps{state_line}"
    notes: list[str] = []   # said after the summary
    if opath.is_file() and not grown:
        if opt_meta is None:
            opt_meta = _optimizer_file(opath)
        opt_steps = opt_meta.get("training_steps")
        if opt_steps != str(meta["training_steps"]):   # another checkpoint's, or half written
            raise ValueError(f"resume: {str(opath)!r} holds Adam's state at "
                             f"{'no step count' if opt_steps is None else opt_steps[:20] + ' steps'}"
                             f", its model file {str(path)!r} is at {int(meta['training_steps']):,} "
                             f"steps; allowed: the optimizer file written with that model file "
                             f"(a checkpoint's pair), or none beside it (Adam starts afresh)")
        if grow:   # checked above otherwise
            _check_pair(opath, opt_meta, path)
        if tables_state is not None:
            tables_state.update(_tables_state(opt_meta.get("tables_state"), repr(str(opath))))
        adam, weights, names = _checked_optimizer_state(opath, model)
        dev = next(model.parameters()).device
        params = dict(model.named_parameters())
        if not adam and any(k.endswith(_ADAM_KEYS) for k in names):
            # state of other parameters only (before: read as Adam's state, all of it afresh)
            raise ValueError(f"resume: {str(opath)!r} holds Adam's state of no parameter of "
                             f"this network; allowed: the optimizer file written with "
                             f"{str(path)!r} (a checkpoint's pair), or none beside it (Adam "
                             f"starts afresh)")
        afresh = sorted({n.rsplit(".", 1)[0] for n in params
                         if n not in adam and not n.startswith("hands_")})
        if not adam:   # saved before any update (save_checkpoint of a fresh optimizer)
            notes.append(f"resume: {opath.name!r} holds no Adam state (saved before any "
                         f"update): Adam starts afresh")
        elif afresh:   # a shared trunk's checkpoint under two networks, say (before: not a
            # word, and the summary said Adam's state was read)
            notes.append(f"resume: {opath.name!r} holds no Adam state of {', '.join(afresh)}: "
                         f"theirs starts afresh")
        for n, (step, exp_avg, exp_avg_sq) in adam.items():
            opt.state[params[n]] = {"step": torch.tensor(step, device=dev),
                                    "exp_avg": torch.from_numpy(exp_avg).to(dev),
                                    "exp_avg_sq": torch.from_numpy(exp_avg_sq).to(dev)}
        with torch.no_grad():   # a privileged critic's, hand prediction's weights (beside Adam's state)
            for n, w in weights.items():
                params[n].copy_(torch.from_numpy(w))
        fresh = sorted({n.split(".")[0] for n in params
                        if n.startswith("hands_") and n not in weights})
        if fresh:   # a checkpoint of a run without them (before: not a word)
            notes.append(f"resume: {opath.name!r} holds no weights of {', '.join(fresh)} (its "
                         f"run trained without them): those training-only layers start afresh")
        dropped = sorted({k.split(".")[1] for k in names if k.startswith("weights.hands_")
                          and k.removeprefix("weights.") not in params})
        if dropped:   # the other way (before: dropped without a word)
            notes.append(f"resume: {opath.name!r} holds the trained weights of "
                         f"{', '.join(dropped)}, training-only layers that this config trains "
                         f"without: they are left out (the model file never holds them)")
    if summary is not None:
        lines += [summary, *notes]
    if said is not None:
        said += lines
    elif lines:
        print("\n".join(lines), file=sys.stderr)
    return int(meta["training_steps"])


_ADAM_KEYS = (".exp_avg", ".exp_avg_sq", ".step")
"""How the names of an optimizer state file's Adam tensors end (``<parameter>.exp_avg``)."""

_NUMPY_NAMES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
                "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8",
                "BOOL": "bool"}
"""safetensors' names of its tensor types, as NumPy calls them (the errors say these)."""


def _checked_optimizer_state(opath: Path, model: ActorCritic
                             ) -> tuple[dict[str, tuple[float, np.ndarray, np.ndarray]],
                                        dict[str, np.ndarray], set[str]]:
    """The parts of an optimizer state file (:func:`save_checkpoint`) that ``model`` reads,
    and the names of all its tensors. Each part is checked as the writer writes it: per
    parameter with state, ``exp_avg`` and ``exp_avg_sq`` float32 of the parameter's shape,
    finite (``exp_avg_sq`` not negative), and ``step`` one finite count; the extra weights
    float32 of their parameter's shape and finite. Anything else is one ``ValueError``
    naming the file and the tensor (a wrong shape or type reached Adam's fused kernel
    unchecked and could crash the process). A tensor's type and shape are read from the
    file's header before the tensor itself, and tensors of no parameter of ``model`` are
    never read (before: every tensor was read whole first, so that a crafted file of a few
    GB filled the memory before any check)."""
    from safetensors import SafetensorError, safe_open

    where = repr(str(opath))
    adam: dict[str, tuple[float, np.ndarray, np.ndarray]] = {}
    weights: dict[str, np.ndarray] = {}
    try:
        with safe_open(str(opath), "np") as f:
            names = set(f.keys())   # looked up per parameter
            odd = sorted(k for k in names if not k.startswith("weights.")
                         and not k.endswith(_ADAM_KEYS))
            if odd:
                raise ValueError(f"resume: {where} holds {odd[0]!r}, which training does not "
                                 f"write; allowed: an optimizer state file as training writes "
                                 f"it (<parameter>.exp_avg, .exp_avg_sq and .step, and "
                                 f"weights.<parameter>)")

            def tensor(key: str, shape: tuple[int, ...]) -> np.ndarray:
                if key not in names:
                    raise ValueError(f"resume: {where} has no tensor {key!r}; allowed: an "
                                     f"optimizer state file as training writes it beside its "
                                     f"model file")
                head = f.get_slice(key)
                dtype, got = head.get_dtype(), tuple(head.get_shape())
                finite = True
                if dtype == "F32" and got == shape:   # only then read
                    x = f.get_tensor(key)
                    finite = bool(np.isfinite(x).all())
                    if finite:
                        return x
                raise ValueError(f"resume: {where} holds {key!r} as "
                                 f"{_NUMPY_NAMES.get(dtype, dtype)} {list(got)}"
                                 f"{'' if finite else ' with values not finite'}; allowed: "
                                 f"float32 {list(shape)}, every value finite")

            for n, p in model.named_parameters():
                shape = tuple(p.shape)
                if any(f"{n}.{k}" in names for k in ("exp_avg", "exp_avg_sq", "step")):
                    step = tensor(f"{n}.step", (1,))   # each of the three, or a clear error
                    if step[0] < 0 or step[0] != np.floor(step[0]):
                        raise ValueError(f"resume: {where} holds {n}.step={float(step[0])!r}; "
                                         f"allowed: a whole number of steps, 0 or more")
                    exp_avg_sq = tensor(f"{n}.exp_avg_sq", shape)
                    if (exp_avg_sq < 0).any():
                        raise ValueError(f"resume: {where} holds {n}.exp_avg_sq with values "
                                         f"below 0; allowed: a mean of squares, 0 or more")
                    adam[n] = (float(step[0]), tensor(f"{n}.exp_avg", shape), exp_avg_sq)
                if f"weights.{n}" in names:
                    weights[n] = tensor(f"weights.{n}", shape)
    except (SafetensorError, OSError) as exc:
        raise _not_an_optimizer_file(opath, exc) from None
    return adam, weights, names


# ---- training -------------------------------------------------------------------------------


class _Table:
    """One table of a run at training time: its rules, its resolved settings (``cfg``, a
    single-table config), the baselines' probe (``plan``), its opponent pool and league, its
    batched games and its slice of the rollout's game slots."""

    def __init__(self, label: str, rules: Any, cfg: TrainConfig, plan: dict[str, Any],
                 start: int, stop: int) -> None:
        self.label, self.rules, self.cfg, self.plan = label, rules, cfg, plan
        self.slots = slice(start, stop)
        self.n = stop - start
        p = cfg.ppo
        self.cut_is_loss = p.truncation in ("auto", "loss")
        self.shaping = float(p.hand_shaping)   # resolved from auto by resolve_auto
        # a game cut with no winner ends as a loss: a losing seat's reward (win: -1/(N-1));
        # under points the round cut scores nothing (docs/training.md says so)
        self.cut_reward = -1.0 / (rules.num_players - 1) if cfg.reward == "win" else 0.0
        self.max_decisions = resolved(cfg.max_decisions, "max_decisions")
        self.last_length = 0.0
        self.pool: Any = None
        self.league: League | None = None
        self.batch: Any = None
        self.obs: np.ndarray | None = None
        self.teacher: LearnedAgent | None = None   # the policy the learner is pulled toward (tables[k].teacher)
        self.teacher_coef = 0.0
        self.teacher_name: str | None = None   # as the config names it (tables.json, the log)


def league_of(tab: _Table) -> League:
    """The league of a table whose run has started (set once, before the first rollout)."""
    if tab.league is None:
        raise RuntimeError(f"table {tab.label}: no league before the run starts")
    return tab.league


def table_labels(all_rules: Sequence[Any], names: Sequence[str | None] | None = None) -> list[str]:
    """Each table's name: the one its config gives (``tables[k].name``, unique: the config
    checks), else its :func:`~ono_env.train.config.table_label`, a ``+`` added while that is taken, in upper or
    lower case (they name folders), by an earlier table or by a name given to any
    (``basic-2p+``)."""
    given = list(names) if names is not None else [None] * len(all_rules)
    taken = {n.casefold() for n in given if n is not None}
    out: list[str] = []
    for rules, name in zip(all_rules, given):
        label = name if name is not None else table_label(rules)
        while name is None and label.casefold() in taken:
            label += "+"
        taken.add(label.casefold())
        out.append(label)
    return out


def make_named_agents(k: int | None, label: str, rules: Any, opponents: Any,
                      eval_opponents: Any, final_opponents: Any,
                      teacher_spec: str | None, runs: bool = False) -> LearnedAgent | None:
    """Every agent a table names (``k``: its index in ``tables``, None for a single-table
    run) made once for its rules, an ``auto`` skipped; one ``ValueError`` naming the table
    and the field for the first that cannot be (``runs``: ``opponents`` are the run's, which
    the table leaves unset). Returns the teacher (None without one), or refuses one that is
    not a learned policy."""
    from ono_env.agents import make_agent

    named_at = "" if k is None else f"tables[{k}] ({label}) "
    made = {}
    ours = "opponents" if k is None or not runs else "opponents (the run's, which it plays)"
    for what, names in ((ours, opponents), ("eval.opponents", eval_opponents),
                        ("final_eval.opponents", final_opponents),
                        ("teacher", [] if teacher_spec is None else [teacher_spec])):
        if isinstance(names, str) and names == "auto":
            continue
        for spec in list(names):
            try:
                made[what] = make_agent(spec, rules)
            except ValueError as exc:   # which table, which field
                raise ValueError(f"{named_at}{what}: {exc}") from None
    if teacher_spec is None:
        return None
    teacher = made["teacher"]
    if not isinstance(teacher, LearnedAgent):
        raise ValueError(f"tables[{k}].teacher={teacher_spec!r} is not a learned policy; "
                         f"a teacher is a shipped policy name or a model file whose "
                         f"action probabilities the learner can follow")
    return teacher


def plan_tables(cfg: TrainConfig) -> list[tuple[str, Any, TrainConfig, dict[str, Any], int, int]]:
    """The tables of a run, each as ``(label, rules, its resolved single-table config, its
    plan, first slot, end slot)``: the config's ``tables`` (num_envs split by weight, at
    least one slot each), or the config's own rules as the one table."""
    from ono_env.rules import resolve_rules

    if cfg.tables is None:
        rules = rules_of(cfg)
        one, plan = resolve_auto(cfg, rules)
        return [(table_label(rules), rules, one, plan, 0, cfg.num_envs)]
    shares = table_slots(cfg.num_envs, [t.weight for t in cfg.tables])
    out: list[tuple[str, Any, TrainConfig, dict[str, Any], int, int]] = []
    at = 0
    all_rules = [resolve_rules(t.rules, num_players=t.num_players) for t in cfg.tables]
    for t, n, rules, label in zip(cfg.tables, shares, all_rules,
                                  table_labels(all_rules, [t.name for t in cfg.tables])):
        opponents = cfg.opponents if t.opponents is None else t.opponents
        sub = dataclasses.replace(cfg, tables=None, rules=t.rules, num_players=t.num_players,
                                  opponents=opponents)
        one, plan = resolve_auto(sub, rules, label=label)
        if opponents == "auto":   # the shipped policies that fit the table join the baselines
            one = dataclasses.replace(one, opponents={**resolved(one.opponents, "opponents"),
                                                      **fitting_policies(rules)})
        out.append((label, rules, one, plan, at, at + n))
        at += n
    if cfg.max_decisions != "auto":   # one cut for every table: each table's warning names
        # its own least, which may still cut another's (before: only those)
        fin = {label: least_cut({k: v for k, v in plan["baselines"].items() if v["finishes"]})
               for label, _, _, plan, _, _ in out}
        need = {label: x[1] for label, x in fin.items() if x is not None}
        worst = max(need, key=need.__getitem__, default=None)
        if worst is not None and cfg.max_decisions < need[worst]:
            print(f"warning: max_decisions={cfg.max_decisions:,} is every table's cut; allowed: "
                  f"auto (each table's own), or at least {need[worst]:,}, the most any table "
                  f"needs ({worst})", file=sys.stderr)
    return out


def fitting_policies(rules: Any, weight: float = 1.0) -> dict[str, float]:
    """The shipped version-1 policies (the specialists) that play ``rules``, by name."""
    from ono_env.agents.learned import shipped_specialists

    return dict.fromkeys(shipped_specialists(rules), weight)


def shipped_resume(cfg: TrainConfig) -> TrainConfig:
    """The config with ``resume`` naming a shipped policy (``ppo-any``, ``ppo-basic-2p``, ...)
    replaced by its file's path, so that the run's config.yaml says which file it carried on;
    a path that exists is kept, even one spelled as a shipped name."""
    import dataclasses

    from ono_env.agents.learned import shipped_models

    shipped = shipped_models()
    allowed = f"allowed: a model or checkpoint file, or one of {', '.join(sorted(shipped))}"
    if cfg.resume is None:
        return cfg
    if Path(cfg.resume).is_dir() and (Path(cfg.resume) / "model.safetensors").is_file():
        # a run's folder: its model file named (before: "it is a folder" alone)
        raise ValueError(f"resume={shown(cfg.resume, 200)}: a folder (a run's: "
                         f"resume={shown(str(Path(cfg.resume) / 'model.safetensors'), 200)} "
                         f"carries it on); {allowed}")
    if Path(cfg.resume).exists():
        try:   # before: a folder or a file of another kind was named without resume=
            read_metadata(cfg.resume)
        except ValueError as exc:
            # the file named once, and what is allowed where the error does not say it
            # (before: a damaged model's path twice, then "allowed: a model file" after its own)
            text = str(exc).removeprefix(f"{str(cfg.resume)!r}: ")
            raise ValueError(f"resume={shown(cfg.resume, 200)}: {text}"
                             + ("" if "allowed:" in text else f"; {allowed}")) from None
        return cfg
    if cfg.resume in shipped:
        return dataclasses.replace(cfg, resume=str(shipped[cfg.resume]))
    raise ValueError(f"resume={shown(cfg.resume, 200)}: {no_file(Path(cfg.resume))}, and no "
                     f"shipped policy has that name; {allowed}")


def _stopped_unsaved(exc: BaseException, run_dir: Path) -> bool:
    """Was the run stopped at once (``exc`` a Ctrl-C or a signal's stop, not an error) before
    it saved any model?"""
    return not isinstance(exc, Exception) and not holds_a_model(run_dir)


def _drop_logs(run_dir: Path) -> None:
    """A run stopped before it saved any model: its logs and evaluations go too, so that the
    same command takes the folder again (before: refused as "a run that saved no model"); a
    run that failed otherwise (it diverged, say) keeps them."""
    shutil.rmtree(run_dir / "tb", ignore_errors=True)
    (run_dir / "eval.csv").unlink(missing_ok=True)


def train(cfg: TrainConfig, stop_signals: Sequence[str] = ("SIGINT",),
          program: str = "ono-train") -> dict[str, Any]:
    """Run one training from a resolved config (:func:`ono_env.train.config.load_config`):
    one table, or a mixture (``tables``) whose rollouts all go into one update.
    ``stop_signals``: the signals that stop it after the rollout under way and one minibatch
    of its update, saving the model (:class:`StopOnInterrupt`; ``ono-train`` adds SIGTERM and SIGHUP).
    ``program``: the console script that messages name (``ono-exploit`` trains through here
    too, and has no ``resume=``).
    Returns ``{"run_dir", "model", "final_eval", "seconds", "train_seconds", "curve",
    "steps", "steps_per_second", "rollout_seconds", "games_seconds", "update_seconds",
    "torch_threads", "device", "bf16"}`` (``final_eval``: the rows of every table, each with its
    ``table`` where the run trains a mixture; ``curve``: the rows of ``eval.csv``, the
    earlier parts' too where the part resumed in its run's own folder;
    ``games_seconds``: the part of the rollouts spent stepping the games, the
    opponents' moves and new deals included).

    The weights' initialisation draws from torch's global CPU generator, seeded with
    ``cfg.seed`` (every other draw has a generator of its own; a resumed part's is seeded with
    ``cfg.seed`` plus its start step, as its deals are), and the run sets torch's thread
    count: both are the caller's again afterwards (``torch.random.fork_rng``), so a training
    called in a process leaves its global random state and threads as they were."""
    stop_signals = check_stop_signals(stop_signals)
    threads = torch.get_num_threads()
    try:
        # the CPU generator only: the weights are drawn on the CPU (then moved to the device),
        # and forking a GPU's generator would start CUDA on every GPU, for a CPU run too
        with torch.random.fork_rng(devices=[]):
            return _train(cfg, stop_signals, program)
    finally:
        settle_earlier_part()   # an earlier part set aside goes, or comes back if none saved
        torch.set_num_threads(threads)


def _train(cfg: TrainConfig, stop_signals: tuple[str, ...], program: str) -> dict[str, Any]:
    """:func:`train`'s work."""
    from torch.utils.tensorboard import SummaryWriter

    from ono_env.arena import evaluate, games_played
    from ono_env.envs.learner_batch import LearnerBatch
    from ono_env.envs.opponents import OpponentPool
    from ono_env.observation import observation_scale

    t0 = time.perf_counter()
    cfg = shipped_resume(cfg)
    if cfg.run_dir:   # before the tables are planned and the checkpoint read (start_run checks again)
        check_named_run_dir(Path(cfg.run_dir), cfg.resume)
    else:
        check_folder_path(Path(cfg.out_dir), "out_dir")
    device, bf16 = resolve_device(cfg)
    # torch's thread count before the first weights: their orthogonal initialisation (a QR
    # decomposition) comes out otherwise at another thread count, and the count would be the
    # process's (the machine's cores, or the last run's setting), not the config's
    thread_choice = choose_threads(cfg.torch_threads)
    torch.set_num_threads(thread_choice[0])
    torch.default_generator.manual_seed(cfg.seed)   # the CPU's, for the first weights
    gen = torch.Generator(device=device)
    gen.manual_seed(cfg.seed)

    version = cfg.observation_version
    # each table's rules, cheap to resolve: the checkpoint is checked against them before the
    # tables are planned (which plays the baselines' probe games at every table)
    from ono_env.rules import resolve_rules
    all_rules = ([rules_of(cfg)] if cfg.tables is None else
                 [resolve_rules(t.rules, num_players=t.num_players) for t in cfg.tables])
    first_rules = all_rules[0]
    check_network_memory(cfg, first_rules)   # before any network is built (start_run again)
    enc = cfg.policy.opponent_encoder
    width = (32 if version == 2 else 0) if enc == "auto" else int(enc)
    p = cfg.ppo
    scale = observation_scale(first_rules, version)
    if cfg.observation_hide:   # an ablation: the network never sees these opponent fields
        from ono_env.observation import observation_view
        view = observation_view(scale[None, :], first_rules, 2).opponents
        for field in cfg.observation_hide:
            getattr(view, field)[...] = HIDDEN_SCALE

    # each table's evaluation length and stall counts as the resumed part left them (read
    # beside Adam's state, where build's load_checkpoint reads that)
    carried: dict[str, TableState] = {}

    resumed: list[str] = []   # what the resume says, printed once the run has started

    def build(quiet: bool = False) -> tuple[ActorCritic, torch.optim.Adam, int]:
        """The run's network and Adam, from the checkpoint when resuming (refused with the
        reason when the config cannot resume it); and the step count to start from."""
        model = ActorCritic(scale, list(cfg.policy.net_arch),
                            cfg.policy.activation, cfg.policy.shared, width,
                            cfg.policy.privileged_critic, cfg.policy.hand_prediction > 0,
                            cfg.policy.oracle_guiding > 0).to(device)
        # fused: one kernel for every parameter's step (torch >= 2.4, CPU and CUDA); the same
        # Adam, 3-7% less time per minibatch in the update of a mixture
        opt = torch.optim.Adam(model.parameters(), lr=p.learning_rate, eps=1e-5, fused=True)
        start = 0
        if cfg.resume:
            start = load_checkpoint(model, opt, cfg.resume, first_rules, cfg.resume_grow,
                                    cfg.resume_drop_value, quiet, carried, resumed)
            if len(all_rules) > 1:   # the checkpoint must play every table of the mixture
                from ono_env.agents.learned import check_compatible
                meta = read_metadata(cfg.resume)
                for rules_k in all_rules[1:]:
                    check_compatible(meta, rules_k, f"resume: {str(cfg.resume)!r}")
            if start >= cfg.total_steps:
                allowed = (f"total_steps above {start:,} (the count includes the checkpoint's "
                           f"steps)" if start < MAX_STEPS else
                           f"a checkpoint of fewer steps (total_steps is at most {MAX_STEPS:,})")
                raise ValueError(f"resume: the checkpoint has {start:,} steps; total_steps="
                                 f"{cfg.total_steps:,} leaves nothing to train; allowed: {allowed}")
        return model, opt, start

    if cfg.resume:   # a checkpoint the config cannot resume is refused before the probe games;
        # this network is thrown away, and its draws leave the seed's stream as it was, so the
        # run's network is built after the tables are planned, from the same draws as ever
        with torch.random.fork_rng(devices=[]):
            build(quiet=True)
    # every agent the config names itself, made once before the probe games print anything
    # (a bad name is one error), and each table's teacher; what an auto resolves to below
    # (baselines that finish the table's games, the specialists that fit it) plays there
    named_tables = [None] if cfg.tables is None else list(cfg.tables)
    named_teachers = [make_named_agents(None if named is None else k, label, rules_k,
                                  cfg.opponents if named is None or named.opponents is None
                                  else named.opponents,
                                  cfg.eval.opponents, cfg.final_eval.opponents,
                                  None if named is None else named.teacher,
                                  named is not None and named.opponents is None)
                for k, (named, rules_k, label) in enumerate(zip(
                    named_tables, all_rules,
                    table_labels(all_rules, [None if t is None else t.name for t in named_tables])))]
    specs = plan_tables(cfg)
    model, opt, start_steps = build()
    if start_steps:   # a resumed part samples and shuffles from a stream of its own, as its
        gen.manual_seed((cfg.seed + start_steps) % (MAX_SEED + 1))   # deals do (seed below)
    tables = [_Table(*spec) for spec in specs]
    for tab in tables:
        tab.last_length = carried.get(tab.label, TableState()).eval_length
    if cfg.tables is None:
        cfg = tables[0].cfg   # the run's config says what ran (every auto resolved)
    # and so do the thread count chosen and a cut game's end, in config.yaml and the model's
    # metadata (before: auto, so the config of a run that chose 1 thread ran again with 2 on
    # an idler machine, and trained other weights); the device and precision stay as asked,
    # so that the config runs on another machine (the run prints what they chose)
    ends = resolved_truncation(cfg.algo, cfg.ppo.truncation)   # a mixture's (a table's: resolved)
    cfg = dataclasses.replace(cfg, policy=dataclasses.replace(cfg.policy, opponent_encoder=width),
                              torch_threads=thread_choice[0],
                              ppo=dataclasses.replace(cfg.ppo, truncation=ends))
    p = cfg.ppo
    for tab, named, teacher in zip(tables, named_tables, named_teachers):
        if named is not None and teacher is not None:
            tab.teacher, tab.teacher_coef = teacher, float(named.teacher_coef)
            tab.teacher_name = str(named.teacher)
    run_rules, run_dir, threads, why = start_run(cfg, threads=thread_choice)
    if resumed and cfg.resume:   # the run's folder and memory checks passed (before: said
        # above their refusal); what this part changed is said too (before: taken without a
        # word, and the earlier part's config.yaml replaced; its checkpoints hold it still)
        changed = config_changes(read_metadata(cfg.resume)["config"], cfg.to_dict())
        if changed:
            resumed.append(f"resume: this part's config differs from the checkpoint's in "
                           f"{first_few(changed, 8)}")
        print("\n".join(resumed), file=sys.stderr)
    if cfg.tables is None:
        tables[0].rules = run_rules
    else:
        (run_dir / "tables.json").write_text(json.dumps(
            [{"table": tab.label, "rules": tab.rules.to_dict(),
              "num_players": tab.rules.num_players, "game_slots": tab.n,
              "opponents": tab.cfg.opponents, "max_decisions": tab.max_decisions,
              "reward": tab.cfg.reward, "hand_shaping": tab.shaping,
              "teacher": tab.teacher_name,
              "teacher_coef": tab.teacher_coef if tab.teacher is not None else None,
              "eval_opponents": tab.cfg.eval.opponents, "eval_games": tab.cfg.eval.games,
              "final_eval_opponents": tab.cfg.final_eval.opponents,
              "final_eval_games": tab.cfg.final_eval.games} for tab in tables], indent=2) + "\n")
        for tab in tables:
            print(f"table {tab.label}: {tab.n} game slots; opponents "
                  + ", ".join(f"{k} {v:g}" for k, v in resolved(tab.cfg.opponents, "opponents").items())
                  + f"; games cut at {tab.max_decisions:,} decisions; reward {tab.cfg.reward}"
                  + (f"; teacher {tab.teacher_name} (coef {tab.teacher_coef:g})"
                     if tab.teacher is not None else ""),
                  file=sys.stderr)
    print(f"device: {device.type}; precision: {'bf16 autocast' if bf16 else 'fp32'}", file=sys.stderr)
    N, T = cfg.num_envs, p.n_steps
    for k, tab in enumerate(tables):
        tab.pool = OpponentPool(resolved(tab.cfg.opponents, "opponents"), tab.rules)
        tab.league = League(tab.pool, tab.cfg)
        seed = (cfg.seed + start_steps + 1_000_003 * k) % (MAX_SEED + 1)
        tab.batch = LearnerBatch(tab.rules, tab.n, tab.pool, seed=seed, reward=tab.cfg.reward,
                                 max_decisions=tab.max_decisions, observation_version=version)
    D = tables[0].batch.game.observation_size
    # row t: the observations of step t; the games write row t + 1 themselves, and row T
    # (the next rollout's first) moves to row 0
    obs_buf = np.zeros((T + 1, N, D), np.float32)
    mask_buf = np.zeros((T, N, NUM_ACTIONS), np.bool_)
    act_buf = torch.zeros((T, N), dtype=torch.int64, device=device)
    logp_buf = torch.zeros((T, N), device=device)
    val_buf = torch.zeros((T, N), device=device)
    rew_buf = np.zeros((T, N), np.float32)
    done_buf = np.zeros((T, N), np.float32)
    # a privileged critic and hand prediction (CHEATING, training only): every opponent's
    # hand at each step
    priv, aux, orc = model.privileged, model.hand_prediction, model.oracle
    need_hands = priv or aux or orc
    hands_buf = np.zeros((T + 1, N if need_hands else 0, MAX_OPPONENTS * NUM_CARD_TYPES), np.float32)
    # oracle guiding (CHEATING, training only): the hands the policy reads, each count kept
    # with probability ``keep``, which falls from 1 to 0 over the first oracle_guiding of this
    # call's steps (from start_steps to total_steps) or of its time limit, whichever is
    # further along: a resumed run fades afresh
    oracle_buf = np.zeros((T + 1, N if orc else 0, MAX_OPPONENTS * NUM_CARD_TYPES), np.float32)
    oracle_rng = np.random.default_rng([cfg.seed, start_steps, 0x0AC1E])
    progress_left = learning_rate_schedule(1.0, 0.0, None if cfg.time_limit_minutes is None
                                           else 60.0 * cfg.time_limit_minutes)
    # distillation (tables[k].teacher): the teachers' masked softmax at each of their tables'
    # steps, and each game slot's weight of the KL term (0 where its table has no teacher)
    teachers = [(tab, tab.teacher) for tab in tables if tab.teacher is not None]
    teach_buf = np.zeros((T, N if teachers else 0, NUM_ACTIONS), np.float32)
    teach_coef = np.zeros(N, np.float32)
    for tab, _ in teachers:
        teach_coef[tab.slots] = tab.teacher_coef
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)
    # ppo.color_consistency: the 24 colour namings' index arrays (every table's observation
    # has the same layout: version 2, or one table's version 1)
    namings = [tuple(torch.as_tensor(x, device=device) for x in color_permutation(
                   order, tables[0].rules, cfg.observation_version))
               for order in itertools.permutations(range(4))] if p.color_consistency else []

    for tab in tables:
        obs_buf[T, tab.slots] = tab.batch.reset()
        if need_hands:
            hands_buf[T, tab.slots] = hidden_hands(tab.batch.game, tab.batch.learner)
    ep_return = np.zeros(N, np.float64)
    finished_returns: list[float] = []
    steps = start_steps
    limit = None if cfg.time_limit_minutes is None else 60.0 * cfg.time_limit_minutes
    t_train = time.perf_counter()
    # linear decay by steps (from the first run's start) or by this part's time limit, whichever
    # is further along: a resumed part's clock starts again (the module's docstring)
    schedule = None if p.learning_rate_end is None else learning_rate_schedule(
        p.learning_rate, p.learning_rate_end, limit)
    next_eval = ((steps // cfg.eval.every) + 1) * cfg.eval.every if cfg.eval.every else None
    sp = cfg.self_play
    next_snap = ((steps // sp.snapshot_every) + 1) * sp.snapshot_every if sp.enabled else None
    # a part resumed in its run's own folder carries the learning curve on (start_run left
    # eval.csv there only then, and only where its columns are this part's)
    curve = read_curve(run_dir / "eval.csv", steps) if (run_dir / "eval.csv").is_file() else []
    # the learner's stalling choices since the last evaluation, per table (stall warnings):
    # catches, catches legal, draws holding a playable card, such draws legal
    chosen = np.array([carried.get(tab.label, TableState()).stall_counts for tab in tables], np.int64)
    starts = np.array([tab.slots.start for tab in tables])   # the tables' slots, in order

    def tables_state() -> dict[str, TableState]:   # what a resumed part carries on (checkpoints)
        return {tab.label: TableState(tab.last_length, tuple(counts))
                for tab, counts in zip(tables, chosen.tolist())}
    if cfg.tables is None:
        cut = tables[0].max_decisions
        # the evaluations named only where there are some (before: also with eval.every=0)
        evals = "; so are the in-training evaluations" if cfg.eval.every else ""
        print(f"training games are cut at {cut:,} decision{'s' * (cut != 1)} (no winner: "
              f"{'a loss' if tables[0].cut_is_loss else 'bootstrapped'}){evals}",
              file=sys.stderr)
    fe = tables[0].cfg.final_eval
    final_games = games_played(resolved(fe.games, "final_eval.games"),
                               tables[0].rules.num_players, tables[0].rules.num_players)
    rollout = cfg.num_envs * p.n_steps   # training runs in whole rollouts
    planned = start_steps + math.ceil((cfg.total_steps - start_steps) / rollout) * rollout
    # a resumed part trains to total_steps from its checkpoint's (before: "for" that total);
    # the steps "more" are the rounded target's, said after it (before: beside total_steps)
    asides = ([f"in whole rollouts of {rollout:,} steps: {planned:,}"] * (planned != cfg.total_steps)
              + [f"{planned - start_steps:,} more"] * bool(start_steps))
    span = (f"{'to ' if start_steps else ''}{cfg.total_steps:,} steps"
            + (f" ({'; '.join(asides)})" if asides else ""))
    print(("training " + (f"for {cfg.time_limit_minutes:g} min (in-training evaluations included) "
                          f"or {span}, whichever comes first" if limit is not None
                          else span if start_steps else f"for {span}"))
          + ((f"; then the final evaluation: {final_games:,} games "
              f"against each of {', '.join(fe.opponents)}" if len(tables) == 1 else
              "; then the final evaluation at every table, against its own opponents "
              "(tables.json)") if fe.games else "; no final evaluation"),
          file=sys.stderr)
    bar = None
    if cfg.progress:
        from tqdm import tqdm
        if limit is None:
            bar = tqdm(total=cfg.total_steps, initial=steps, unit="step", desc="training",
                       file=sys.stderr, smoothing=0.05)
        else:   # the clock ends the run: the bar (and its ETA) follows the time limit
            bar = tqdm(total=round(limit), unit="s", desc="training", file=sys.stderr,
                       bar_format="{l_bar}{bar}| {n:.0f}/{total_fmt} s [{elapsed}<{remaining}{postfix}]")
    stopped_early = False
    # "games": the part of the rollouts spent in the games (the learner's moves applied, the
    # opponents' moves, new deals); the rest of a rollout is the policy and the bookkeeping
    seconds = {"rollout": 0.0, "update": 0.0, "games": 0.0}

    def to_dev(a: np.ndarray) -> torch.Tensor:
        t = torch.from_numpy(a)
        return t.to(device, non_blocking=True) if device.type != "cpu" else t

    # the rollout, a minibatch, stop (and an evaluation only where the run makes them: before,
    # ono-exploit's message named one)
    interrupt = (StopOnInterrupt(stop_signals, program=program) if cfg.eval.every else
                 StopOnInterrupt(stop_signals, "after the rollout under way and one minibatch "
                                               "of its update", program=program))
    writer = None
    stopped_unsaved = False   # stopped at once (a second Ctrl-C, a signal) with no model saved
    try:
        writer = SummaryWriter(str(run_dir / "tb"))   # closed in the finally: its thread too
        writer.add_text("torch_threads", why)
        while steps < cfg.total_steps:
            lr = p.learning_rate if schedule is None else schedule(1.0 - steps / cfg.total_steps)
            for g in opt.param_groups:
                g["lr"] = lr
            keep = 0.0
            if orc:   # 1 at this call's start, 0 from oracle_guiding of it on
                done_share = 1.0 - progress_left(
                    1.0 - (steps - start_steps) / max(1, cfg.total_steps - start_steps))
                keep = max(0.0, 1.0 - done_share / cfg.policy.oracle_guiding)
            seen_hands = keep > 0   # with nothing kept the network is the model file's
            # ---- rollout: T steps of the N games (every table's slots) -------------------------------
            t_roll = time.perf_counter()
            model.eval()
            with torch.no_grad():
                obs_buf[0] = obs_buf[T]
                if need_hands:
                    hands_buf[0] = hands_buf[T]
                for t in range(T):
                    for tab in tables:
                        np.copyto(mask_buf[t, tab.slots], tab.batch.game.legal_mask())
                    for tab, teacher in teachers:   # each sees the learner's seat in its own layout:
                        # the run's is row t already (before: observed again each step)
                        seen = (obs_buf[t, tab.slots]
                                if teacher.observation_version == cfg.observation_version
                                else tab.batch.game.observe(tab.batch.learner,
                                                            version=teacher.observation_version))
                        teach_buf[t, tab.slots] = teacher.probabilities(seen, mask_buf[t, tab.slots])
                    o, m = to_dev(obs_buf[t]), to_dev(mask_buf[t])
                    if seen_hands:
                        np.multiply(hands_buf[t], oracle_rng.random(hands_buf[t].shape) < keep,
                                    out=oracle_buf[t])
                    with autocast:   # the value the advantages read: the privileged one if any
                        logits, *_, value = model(o, to_dev(hands_buf[t]) if priv else None, False,
                                                  to_dev(oracle_buf[t]) if seen_hands else None)
                    z = masked_logits(logits, m)
                    a = sample(z, gen)
                    act_buf[t] = a
                    logp_buf[t] = torch.log_softmax(z, dim=1).gather(1, a[:, None])[:, 0]
                    val_buf[t] = value.float()
                    a_np = a.cpu().numpy()
                    m_np = mask_buf[t]
                    chosen += np.add.reduceat(   # (tables, 4): each table's slots summed
                        stall_counts(a_np, m_np), starts, axis=0)
                    for tab in tables:
                        sl = tab.slots
                        t_games = time.perf_counter()
                        r = tab.batch.step(a_np[sl], out=obs_buf[t + 1, sl])
                        seconds["games"] += time.perf_counter() - t_games
                        if need_hands:
                            hands_buf[t + 1, sl] = hidden_hands(tab.batch.game, tab.batch.learner)
                        rew = r.rewards
                        if tab.shaping:   # potential -c * hand size; 0 at a game's end (ppo.hand_shaping)
                            rew = rew + step_shaping(obs_buf[t, sl][:, OBS_SELF], r, OBS_SELF,
                                                     tab.shaping, p.gamma, not tab.cut_is_loss)
                        if r.final_obs is not None and r.truncated.any():
                            tr = np.flatnonzero(r.truncated)
                            rew = np.array(rew, copy=True)
                            if tab.cut_is_loss:   # no winner: a loss, so stalling to the cut never pays
                                rew[tr] += tab.cut_reward
                            else:                 # bootstrap from the value of the last observation
                                # (without oracle guiding's hands: the cut game is dealt again)
                                with autocast:
                                    v_last = model.value(to_dev(np.ascontiguousarray(r.final_obs[tr])))
                                rew[tr] += p.gamma * v_last.float().cpu().numpy()
                        rew_buf[t, sl] = rew
                        done_buf[t, sl] = r.dones
                        ep_return[sl] += r.rewards
                        if r.dones.any():
                            finished = ep_return[sl][r.dones]
                            finished_returns.extend(finished.tolist())
                            ep_return[sl][r.dones] = 0.0
                if seen_hands:
                    np.multiply(hands_buf[T], oracle_rng.random(hands_buf[T].shape) < keep,
                                out=oracle_buf[T])
                with autocast:
                    if priv or seen_hands:
                        next_value = model(to_dev(obs_buf[T]), to_dev(hands_buf[T]) if priv else None,
                                           False, to_dev(oracle_buf[T]) if seen_hands else None
                                           )[-1].float()
                    else:
                        next_value = model.value(to_dev(obs_buf[T])).float()
            steps += N * T
            t_upd = time.perf_counter()
            seconds["rollout"] += t_upd - t_roll
            # ---- advantages (GAE) -----------------------------------------------------------------
            rew_t, done_t = to_dev(rew_buf), to_dev(done_buf)
            adv = torch.zeros((T, N), device=device)
            last = torch.zeros(N, device=device)
            for t in reversed(range(T)):
                nxt = next_value if t == T - 1 else val_buf[t + 1]
                live = 1.0 - done_t[t]
                delta = rew_t[t] + p.gamma * nxt * live - val_buf[t]
                last = delta + p.gamma * p.gae_lambda * live * last
                adv[t] = last
            ret = adv + val_buf
            # in a mixture, each table's advantages' spread before any normalising (TensorBoard;
            # not of a table with one advantage in the rollout: before, NaN)
            adv_std = ({tab.label: float(adv[:, tab.slots].std()) for tab in tables
                        if adv[:, tab.slots].numel() > 1} if len(tables) > 1 else {})
            if p.advantage_norm == "table":   # the returns keep the raw advantages
                normalise_by_table(adv, [tab.slots for tab in tables])

            # ---- PPO update ---------------------------------------------------------------------------
            model.train()
            b_obs = to_dev(obs_buf[:T].reshape(T * N, D))
            # with an opponent encoder, the minibatches read the observations scaled once and
            # split, and encode only the seats that are present (ActorCritic.prepare)
            prep = (model.prepare(b_obs, torch.bfloat16 if bf16 else torch.float32)
                    if model.encoder is not None else None)
            b_mask = to_dev(mask_buf.reshape(T * N, NUM_ACTIONS))
            b_hands = to_dev(hands_buf[:T].reshape(T * N, -1)) if need_hands else None
            b_oracle = to_dev(oracle_buf[:T].reshape(T * N, -1)) if seen_hands else None
            b_act, b_logp = act_buf.reshape(-1), logp_buf.reshape(-1)
            b_adv, b_ret = adv.reshape(-1), ret.reshape(-1)
            if teachers:
                b_teach = to_dev(teach_buf.reshape(T * N, NUM_ACTIONS))
                b_tcoef = to_dev(np.tile(teach_coef, T))
                taught = float((teach_coef > 0).mean())
            stats = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0, "approx_kl": 0.0,
                     "clip_fraction": 0.0}
            if priv:
                stats["privileged_value_loss"] = 0.0
            if aux:
                stats["hand_prediction_loss"] = 0.0
            if teachers:
                stats["teacher_kl"] = 0.0
            if namings:
                stats["color_kl"] = stats["color_value_sq"] = 0.0
            n_mb = 0
            cut = False   # Ctrl-C, SIGTERM or the time limit: the update ends after a minibatch
            for _ in range(p.n_epochs):
                if cut:
                    break
                perm = torch.randperm(T * N, generator=gen, device=device)
                if namings:   # this epoch's colour naming, the rows read under it
                    obs_at, act_at = namings[int(torch.randint(len(namings), (1,), generator=gen,
                                                               device=device))]
                    renamed_obs = b_obs.index_select(1, obs_at) if prep is None else None
                    renamed_prep = None if prep is None else renamed_prepared(prep, obs_at)
                for k in range(0, T * N, p.batch_size):
                    idx = mb = perm[k:k + p.batch_size]
                    with autocast:   # index_select: the CPU's fast gather (see minibatch)
                        if prep is None:   # no encoder: no privileged critic, no hand prediction
                            logits, value, *pvalue = model(b_obs.index_select(0, idx))
                        else:   # idx comes back in the order of the rows (run_prepared)
                            logits, value, *pvalue, idx = model.run_prepared(
                                prep, idx, b_hands if priv else None, aux, b_oracle)
                        if aux:   # the predicted hands come last
                            predicted = pvalue.pop()
                    legal = b_mask.index_select(0, idx)
                    z = masked_logits(logits, legal)
                    logp_all = torch.log_softmax(z, dim=1)
                    logp = logp_all.gather(1, b_act.index_select(0, idx)[:, None])[:, 0]
                    entropy = masked_entropy(logp_all, legal)
                    mb_adv = b_adv.index_select(0, idx)
                    if len(idx) > 1:
                        mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                    log_ratio = logp - b_logp.index_select(0, idx)
                    ratio = log_ratio.exp()
                    pg_loss = -torch.min(mb_adv * ratio,
                                         mb_adv * ratio.clamp(1 - p.clip_range, 1 + p.clip_range)).mean()
                    mb_ret = b_ret.index_select(0, idx)
                    v_loss = ((value.float() - mb_ret) ** 2).mean()
                    # a privileged critic: its value is fitted too (the model file's value still is)
                    pv_loss = ((pvalue[0].float() - mb_ret) ** 2).mean() if pvalue else None
                    loss = pg_loss - p.ent_coef * entropy + p.vf_coef * (
                        v_loss if pv_loss is None else v_loss + pv_loss)
                    if aux:   # hand prediction: per opponent at the table, the squared error summed
                        # over card types; the mean over those opponents
                        assert prep is not None and b_hands is not None   # the config's check
                        at_table = prep.present.index_select(0, idx)[:, :, None]
                        err = (predicted.float().reshape(len(idx), MAX_OPPONENTS, NUM_CARD_TYPES)
                               - b_hands.index_select(0, idx).reshape(len(idx), MAX_OPPONENTS, NUM_CARD_TYPES))
                        hp_loss = (err.square() * at_table).sum() / at_table.sum().clamp_min(1)
                        loss = loss + cfg.policy.hand_prediction * hp_loss
                    if namings:   # the renamed rows' policy and value pulled to the rows' own
                        with autocast:
                            if renamed_prep is None:
                                assert renamed_obs is not None
                                logits_c, value_c = model(renamed_obs.index_select(0, idx))[:2]
                            else:   # the same rows in the same order (the same seat counts)
                                logits_c, value_c, order = model.run_prepared(renamed_prep, mb)
                                assert torch.equal(order, idx)
                        cc_kl, cc_v = color_consistency(logp_all, value, logits_c, value_c, act_at,
                                                        legal)
                        loss = loss + p.color_consistency * (cc_kl + cc_v)
                    if teachers:   # KL(teacher || learner) on the taught tables' rows
                        pt = b_teach.index_select(0, idx)
                        kl = torch.where(pt > 0, pt * (pt.clamp_min(1e-30).log() - logp_all),
                                         torch.zeros_like(pt)).sum(1)
                        coef = b_tcoef.index_select(0, idx)
                        loss = loss + (coef * kl).mean()
                    if not math.isfinite(float(loss.detach())):   # the weights are still finite
                        raise diverged(steps, cfg.to_dict(), "the update's loss is not finite")
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    nn.utils.clip_grad_norm_(model.parameters(), p.max_grad_norm)
                    opt.step()
                    with torch.no_grad():
                        stats["policy_loss"] += float(pg_loss)
                        stats["value_loss"] += float(v_loss)
                        if pv_loss is not None:
                            stats["privileged_value_loss"] += float(pv_loss)
                        if aux:
                            stats["hand_prediction_loss"] += float(hp_loss)
                        stats["entropy"] += float(entropy)
                        stats["approx_kl"] += float(((ratio - 1) - log_ratio).mean())
                        stats["clip_fraction"] += float(((ratio - 1).abs() > p.clip_range).float().mean())
                        if teachers:   # the mean over the taught rows
                            stats["teacher_kl"] += float((kl * (coef > 0)).mean()) / taught
                        if namings:
                            stats["color_kl"] += float(cc_kl)
                            stats["color_value_sq"] += float(cc_v)
                    n_mb += 1
                    # checked at every minibatch, not only after the update: a long update
                    # (a large ppo.n_epochs) would otherwise outlast the time limit and Ctrl-C
                    cut = interrupt.asked or (limit is not None
                                              and time.perf_counter() - t_train > limit)
                    if cut:
                        break
            seconds["update"] += time.perf_counter() - t_upd

            # ---- logging, league, evaluation, time limit --------------------------------------------
            elapsed = time.perf_counter() - t_train
            for stat, total in stats.items():
                writer.add_scalar(f"train/{stat}", total / max(1, n_mb), steps)
            writer.add_scalar("train/learning_rate", lr, steps)
            if orc:   # the share of the hands' counts the policy read in this rollout
                writer.add_scalar("train/oracle_keep", keep, steps)
            writer.add_scalar("time/steps_per_second", (steps - start_steps) / elapsed, steps)
            writer.add_scalar("time/rollout_share", seconds["rollout"] / elapsed, steps)
            for label, spread in adv_std.items():
                writer.add_scalar(f"advantage_std/{label}", spread, steps)
            if finished_returns:
                rets = np.asarray(finished_returns)
                writer.add_scalar("rollout/episode_return", float(rets.mean()), steps)
                writer.add_scalar("rollout/episode_win_rate", float((rets > 0).mean()), steps)
                finished_returns.clear()
            if bar is not None:   # a closed terminal: stop, the model saved (bar_do)
                bar_do(bar, "update", (min(steps, cfg.total_steps) if limit is None
                                       else min(round(limit), int(elapsed))) - bar.n)
                bar_do(bar, "set_postfix_str",
                       f"{steps:,} steps, {(steps - start_steps) / elapsed:,.0f}/s")
            if next_snap is not None and steps >= next_snap:
                frozen = model.policy_net()
                for tab in tables:   # a snapshot plays at every table
                    league_of(tab).add_snapshot(LearnedAgent(frozen, tab.rules, f"snapshot-{steps}"), steps)
                writer.add_scalar("league/snapshots", len(league_of(tables[0]).snapshots), steps)
                while next_snap <= steps:
                    next_snap += sp.snapshot_every
            if (next_eval is not None and steps >= next_eval and not interrupt.asked
                    and (limit is None or time.perf_counter() - t_train < limit)):
                frozen = model.policy_net()
                choices_of = {tab.label: stall_choices(c, tab.rules)
                              for tab, c in zip(tables, chosen.tolist())}
                chosen[:] = 0
                lines = []
                for tab in tables:
                    if interrupt.asked:   # a mixture's next table waits for no stop (before:
                        break             # every table evaluated after a Ctrl-C)
                    tc = tab.cfg
                    learner = LearnedAgent(frozen, tab.rules, "learner")
                    games = resolved(tc.eval.games, "eval.games")
                    if tab.plan["eval_auto"] and tab.last_length > tab.plan["length"]:
                        games = games_for(EVAL_DECISIONS, tab.last_length, 200, games)   # longer games
                    rows = evaluate(learner, tc.eval.opponents, tab.rules, games, seed=cfg.seed + steps,
                                    max_decisions=tab.max_decisions)
                    prefix = "" if len(tables) == 1 else f"{tab.label}/"
                    for row in rows:
                        if len(tables) > 1:
                            row["table"] = tab.label
                        writer.add_scalar(f"eval/win_rate/{prefix}{row['opponent']}", row["win_rate"], steps)
                        writer.add_scalar(f"eval/mean_length/{prefix}{row['opponent']}",
                                          row["mean_length"], steps)
                        # a share (eval.csv's no_winner is the count of games)
                        writer.add_scalar(f"eval/no_winner_share/{prefix}{row['opponent']}",
                                          row["no_winner"] / max(1, row["games"]), steps)
                    curve += curve_rows(steps, rows)
                    line = evaluation_line(steps, (time.perf_counter() - t_train) / 60, rows)
                    lines.append(line if len(tables) == 1 else f"{tab.label}: {line}")
                    warning = stall_warning(rows, tab.plan["baselines"], choices_of[tab.label], p.gamma,
                                            "loss" if tab.cut_is_loss else "bootstrap",
                                            list(resolved(tc.opponents, "opponents")),
                                            None if tab.plan["shaping_auto"] else tab.shaping,
                                            None if tab.plan["cut_auto"] else
                                            resolved(tc.max_decisions, "max_decisions"))
                    if warning:
                        warning = warning if len(tables) == 1 else f"{tab.label}: {warning}"
                        lines.append(warning)
                        writer.add_text("warnings", warning, steps)
                    tab.last_length = max(r["mean_length"] for r in rows)
                write_curve(run_dir / "eval.csv", curve)
                save_checkpoint(model, opt, run_dir / "checkpoints" / f"step_{steps}.safetensors",
                                tables[0].rules, steps, cfg.to_dict(), label=run_label(run_dir),
                                tables_state=tables_state())
                say(lines, bar)
                while next_eval <= steps:
                    next_eval += cfg.eval.every
            if limit is not None and time.perf_counter() - t_train > limit:
                stopped_early = steps < cfg.total_steps
                break
            if interrupt.asked:   # Ctrl-C or SIGTERM: stop here, save the model, skip the final evaluation
                break
    except BaseException as exc:
        stopped_unsaved = _stopped_unsaved(exc, run_dir)
        raise
    finally:
        interrupt.restore()
        if writer is not None:   # a run that fails leaves no writer thread behind (nor unwritten events)
            writer.close()
        if stopped_unsaved:
            _drop_logs(run_dir)
    bar_do(bar, "close")
    train_elapsed = time.perf_counter() - t_train
    try:
        model_path = save_checkpoint(model, opt, run_dir / "model.safetensors", tables[0].rules,
                                     steps, cfg.to_dict(), label=run_label(run_dir),
                                     tables_state=tables_state())
    except BaseException as exc:   # a second Ctrl-C or SIGTERM during the save (the first
        # stopped the training; the console's handler is back): as in the training (before:
        # its folder kept tb/ and was refused to the same command)
        model_file = run_dir / "model.safetensors"
        if not isinstance(exc, Exception) and not model_file.exists():
            # stopped after Adam's state and before the model: that state alone is no model
            optimizer_path(model_file).unlink(missing_ok=True)
        if _stopped_unsaved(exc, run_dir):
            _drop_logs(run_dir)
        raise
    for tab in tables:
        tc = tab.cfg
        if tab.plan["final_auto"] and tab.last_length > tab.plan["length"] and tc.final_eval.games:
            # the learner's games are longer than the baselines': fewer games, the same budget
            games = games_for(FINAL_DECISIONS, tab.last_length, 2_000, 100_000)
            if games < resolved(tc.final_eval.games, "final_eval.games"):
                print(f"final evaluation{'' if len(tables) == 1 else ' at ' + tab.label}: "
                      f"{games:,} games per opponent (the learner's games last "
                      f"{tab.last_length:,.0f} decisions)", file=sys.stderr)
                tab.cfg = dataclasses.replace(tc, final_eval=dataclasses.replace(tc.final_eval,
                                                                                 games=games))
    train_seconds = time.perf_counter() - t0
    rate = (steps - start_steps) / train_elapsed
    if interrupt.asked:
        interrupt.end(steps, cfg.total_steps, model_path, resumable=True)
    if stopped_early:
        print(f"time limit of {cfg.time_limit_minutes} min reached after {steps:,} of "
              f"{cfg.total_steps:,} steps")
    print(f"trained {steps - start_steps:,} steps in {train_elapsed:.1f} s ({rate:,.0f} steps/s; "
          f"rollouts {seconds['rollout']:.1f} s, of which the games {seconds['games']:.1f} s; "
          f"updates {seconds['update']:.1f} s)", file=sys.stderr)
    final: list[dict[str, Any]] = []
    for tab in tables:
        if not tab.cfg.final_eval.games:   # no final evaluation: no line and no folder for it
            continue
        where = run_dir
        if len(tables) > 1:
            where = run_dir / "tables" / tab.label   # made as its results are written
            print(f"table {tab.label}:", file=sys.stderr)
        rows = final_evaluation(dataclasses.replace(tab.cfg, name=cfg.name), tab.rules, model_path,
                                where, steps, train_seconds, "ppo", stop_signals, program,
                                evaluated=list(dict.fromkeys(r["table"] for r in final)))
        final += [{"table": tab.label, **r} if len(tables) > 1 else r for r in rows]
    print(f"run: {run_dir}  model: {model_path}")
    return {"run_dir": run_dir, "model": model_path, "final_eval": final, "steps": steps,
            "seconds": time.perf_counter() - t0, "train_seconds": train_seconds, "curve": curve,
            "steps_per_second": rate, "rollout_seconds": seconds["rollout"],
            "games_seconds": seconds["games"], "update_seconds": seconds["update"],
            "torch_threads": threads, "device": device.type, "bf16": bf16}
