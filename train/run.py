"""What every ``ono-train`` trainer shares: the run folder, the league of opponents, the
learning-rate schedule, the torch thread count, the learning curve and the final evaluation.

The trainers (``algo`` in the config) are :mod:`ono_env.train.ppo` (``ppo``: the project's
own masked PPO), :mod:`ono_env.train.maskable_ppo` (``maskable_ppo``: sb3-contrib's
MaskablePPO, the reference) and :mod:`ono_env.train.rllib` (``rllib_ppo``: PPO on Ray RLlib).
"""

from __future__ import annotations

import csv
import datetime as _dt
import math
import os
import re
import sys
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ono_env.cards import A_CATCH, A_DRAW
from ono_env.checks import first_few, is_int, shown, write_whole
from ono_env.game import memory_limit, usable_cores
from ono_env.train.config import MAX_TORCH_THREADS, TrainConfig, dump_config, resolved


def rules_of(cfg: TrainConfig):
    from ono_env.rules import resolve_rules
    return resolve_rules(cfg.rules, num_players=cfg.num_players)


# ---- what "auto" means: opponents that finish games, evaluations that fit the rules --------
AUTO_WEIGHTS = {"random": 1.0, "greedy": 2.0, "color": 1.0, "defensive": 2.0}
"""The weights of the baselines in ``opponents: auto`` (those that finish games)."""
PROBE_GAMES = 256
"""Games of each baseline against copies of itself that tell whether it finishes games."""
MAX_CUT_SHARE = 0.01
"""A baseline finishes games when at most this share of its own games is cut at max_decisions..."""
MAX_LENGTH_RATIO = 4.0
"""...and they last at most this many times as long as the quickest baseline's."""
HAND_SHAPING = 0.1
"""``ppo.hand_shaping: auto`` for algo ppo: the shaping per card of the learner's hand."""
CUT_RATIO = 10
"""``max_decisions: auto``: training games are cut at this many times the baselines' game length..."""
MIN_CUT = 200
"""...and at no fewer decisions than this."""
EVAL_DECISIONS = 120_000
"""``eval.games: auto``: games per opponent worth about this many decisions (200 to 2,000)."""
FINAL_DECISIONS = 6_000_000
"""``final_eval.games: auto``: games per opponent worth this many decisions (2,000 to 100,000)."""
FINAL_MOST = 100_000
"""The most games against each opponent that ``final_eval.games: auto`` plays."""
STALL_RATIO = 3.0
"""An evaluation warns when the learner's games last this many times as long as the
opponent's own games..."""
STALL_CUT_SHARE = 0.01
"""...or when more than this share of them is cut with no winner..."""
STALL_CHOICE_SHARE = 0.4
"""...or when the learner chose a stalling move (a catch where it may and a false one costs,
a draw while holding a playable card: :func:`stall_choices`) at least this share of the
times it could..."""
STALL_WIN_FRACTION = 1 / 3
"""...and won less than this fraction of its fair share of the games. At a large table the
other seats finish a stalling learner's games nearly as quickly as their own, so the first
two signs fade with the table's size (at 8-10 players under ``ono`` a learner that catches
and draws whenever it may wins none of its games, and its games last 1.2 times the
opponents' own, almost none cut); what it chooses, and that it loses, do not."""


def baseline_games(rules: Any, games: int = PROBE_GAMES, seed: int = 0) -> dict[str, dict[str, float]]:
    """Each baseline (random and the rule-based agents) in ``games`` games against copies of
    itself under ``rules``: ``{name: {"mean_length", "cut_share", "finishes"}}``. A baseline
    *finishes* games when at most :data:`MAX_CUT_SHARE` of them are cut at ``max_decisions``
    and they last at most :data:`MAX_LENGTH_RATIO` times as long as the quickest baseline's.
    Under ``ono`` random play stalls (a false catch costs 4 cards and drawing is always
    allowed): its games are cut at 5,000 decisions, so it is no opponent to learn from."""
    from ono_env.arena import run_arena

    out: dict[str, dict[str, float]] = {}
    for name in AUTO_WEIGHTS:
        res = run_arena([name] * rules.num_players, rules, None, games, seed, rating=False,
                        batch_size=games)
        out[name] = {"mean_length": float(res.records.length.mean()),
                     "cut_share": float(res.records.truncated.mean())}
    quickest = min(v["mean_length"] for v in out.values())
    for v in out.values():
        v["finishes"] = bool(v["cut_share"] <= MAX_CUT_SHARE
                             and v["mean_length"] <= MAX_LENGTH_RATIO * quickest)
    return out


def hand_shaping(before: np.ndarray, after: np.ndarray, dones: np.ndarray, coef: float,
                 gamma: float = 1.0) -> np.ndarray:
    """Potential-based shaping (Ng, Harada and Russell 1999) by the learner's hand size: with
    the potential ``-coef * cards`` (0 once a game has ended) a step from ``before`` to
    ``after`` cards adds ``gamma * potential(after) - potential(before)``, that is ``coef *
    (before - gamma * after)``, and the step that ends a game (``dones``) ``coef * before``.
    A game's shaping, discounted by ``gamma`` as the returns are, sums to ``coef`` times the
    cards dealt, the same for every policy, so the best policy is unchanged; what changes is
    that a card played, or four drawn for a false catch, counts at once. (Before, ``gamma``
    was left out, which is potential-based only at ``gamma`` 1, the default run's.)"""
    return coef * (before - gamma * np.where(dones, 0.0, after))


def step_shaping(before: np.ndarray, step: Any, column: int, coef: float, gamma: float,
                 bootstrap: bool) -> np.ndarray:
    """:func:`hand_shaping` of one step of a learner's batch (``step``: a ``BatchStep``; the
    hand size is observation ``column``, ``before`` the hands at the step's start). A game
    cut at the decision limit ends its potential at 0 where the cut is scored as the game's
    end (``ppo.truncation: loss``); with ``bootstrap`` its return goes on in the value of
    its last observation, which holds the shaping of the rest, so its potential is that
    observation's hand: ending it at 0 too would count that hand twice."""
    after, ends = step.obs[:, column], step.dones
    if bootstrap and step.final_obs is not None and step.truncated.any():
        after = np.where(step.truncated, step.final_obs[:, column], after)
        ends = step.terminated
    return hand_shaping(before, after, ends, coef, gamma)


def games_for(decisions: int, mean_length: float, low: int, high: int) -> int:
    """Games worth ``decisions`` decisions at ``mean_length`` decisions a game, in [low, high]."""
    return int(min(high, max(low, round(decisions / max(1.0, mean_length)))))


def resolved_truncation(algo: str, truncation: Literal["auto", "loss", "bootstrap"]
                        ) -> Literal["loss", "bootstrap"]:
    """``ppo.truncation`` with ``auto`` resolved: ``loss`` for algo ppo, ``bootstrap`` for the
    others (as the config's field says)."""
    return ("loss" if algo == "ppo" else "bootstrap") if truncation == "auto" else truncation


def resolve_auto(cfg: TrainConfig, rules: Any, log: Any = None,
                 label: str = "") -> tuple[TrainConfig, dict[str, Any]]:
    """The config with every ``auto`` of the game's settings (``opponents``, ``eval``,
    ``final_eval``, ``max_decisions``, ``reward``, ``ppo.hand_shaping``, ``ppo.truncation``)
    replaced by what it means under ``rules`` and ``algo`` (so the run's config.yaml says
    what ran; ``torch_threads`` is the trainer's to resolve, ``device`` and ``precision``
    stay as asked), and the baselines' own games (:func:`baseline_games`) as
    ``{"baselines": ..., "length": L}``, ``L`` the mean of the finishing baselines' mean game
    lengths, which sizes the evaluations.
    ``label``: the table of a mixture the printed line is about (its prefix)."""
    import dataclasses
    import sys

    probe = baseline_games(rules)
    fin = [n for n, v in probe.items() if v["finishes"]]
    if not fin:   # nothing to size the games and evaluations by (before: ZeroDivisionError),
        # and no game to learn from: refused whether or not a setting is auto (before: the
        # message blamed the auto settings, though a config may have none)
        raise ValueError(f"{label + ': ' if label else ''}under these rules no baseline finishes "
                         f"its own games ("
                         + "; ".join(f"{n} {100 * v['cut_share']:.0f}% cut at the engine's "
                                     f"decision limit" for n, v in probe.items())
                         + f"): games here end at the cut with no winner too often (more "
                           f"than {100 * MAX_CUT_SHARE:g}% of even the quickest baseline's) to "
                           f"learn from or to measure the learner by, nor is there a game length "
                           f"for the auto settings to go by; allowed: rules whose games the "
                           f"baselines end")
    length = sum(probe[n]["mean_length"] for n in fin) / len(fin)
    dropped = [n for n in probe if n not in fin]
    played = [cfg.opponents, cfg.eval.opponents if cfg.eval.every else None,   # those that play
              cfg.final_eval.opponents if cfg.final_eval.games else None]
    if dropped and "auto" in played:
        print(f"{label + ': ' if label else ''}opponents: auto leaves out {', '.join(dropped)}: "
              f"under these rules "
              + "; ".join(f"its own games last {probe[n]['mean_length']:,.0f} decisions, "
                          f"{100 * probe[n]['cut_share']:.0f}% cut with no winner" for n in dropped),
              file=log or sys.stderr)
    ev, fe = cfg.eval, cfg.final_eval
    ev = dataclasses.replace(
        ev, opponents=list(fin) if ev.opponents == "auto" else ev.opponents,
        games=games_for(EVAL_DECISIONS, length, 200, 2_000) if ev.games == "auto" else ev.games)
    fe = dataclasses.replace(
        fe, opponents=list(fin) if fe.opponents == "auto" else fe.opponents,
        games=games_for(FINAL_DECISIONS, length, 2_000, FINAL_MOST) if fe.games == "auto" else fe.games)
    opponents = ({n: AUTO_WEIGHTS[n] for n in fin} if cfg.opponents == "auto"
                 else cfg.opponents)
    cut = cfg.max_decisions
    if cut != "auto":
        short = short_cut(cut, {n: probe[n] for n in fin})
        if short:
            print(f"{label + ': ' if label else ''}warning: {short}", file=log or sys.stderr)
    else:
        from ono_env.game import DEFAULT_MAX_DECISIONS_MATCH, DEFAULT_MAX_DECISIONS_ROUND
        ceiling = DEFAULT_MAX_DECISIONS_MATCH if rules.target_score else DEFAULT_MAX_DECISIONS_ROUND
        cut = int(min(ceiling, max(MIN_CUT, round(CUT_RATIO * length))))
    match = bool(rules.target_score) and rules.scoring != "none"
    reward = ("points" if match else "win") if cfg.reward == "auto" else cfg.reward
    ppo = cfg.ppo
    if ppo.hand_shaping == "auto":
        ppo = dataclasses.replace(ppo, hand_shaping=0.0 if match or cfg.algo != "ppo" else HAND_SHAPING)
    ppo = dataclasses.replace(ppo, truncation=resolved_truncation(cfg.algo, ppo.truncation))
    return (dataclasses.replace(cfg, opponents=opponents, eval=ev, final_eval=fe, max_decisions=cut,
                                reward=reward, ppo=ppo),
            {"baselines": probe, "length": length, "final_auto": cfg.final_eval.games == "auto",
             "eval_auto": cfg.eval.games == "auto", "cut_auto": cfg.max_decisions == "auto",
             "shaping_auto": cfg.ppo.hand_shaping == "auto"})


def evaluation_line(step: int, minutes: float, rows: Sequence[dict[str, Any]]) -> str:
    """One console line per evaluation: the win rate (a share of the wins beside the fair
    share at more than two players) against each opponent, mean game length and cut games."""
    fair = rows[0]["fair_share"] if rows else 0.5
    games = sum(r["games"] for r in rows)
    cut = sum(r["no_winner"] for r in rows)
    length = sum(r["mean_length"] * r["games"] for r in rows) / max(1, games)
    what = "win rate" if fair == 0.5 else "win share"
    parts = ", ".join(f"{r['opponent']} {100 * r['win_rate']:.1f}%" for r in rows)
    return (f"eval at step {step:,} ({minutes:.1f} min): {what} vs {parts} (fair {100 * fair:.3g}%); "
            f"mean length {length:,.0f} decisions; no winner {100 * cut / max(1, games):.1f}%")


def evaluation_lines(step: int, minutes: float, rows: Sequence[dict[str, Any]],
                     cfg: TrainConfig, plan: dict[str, Any] | None, truncation: str,
                     choices: dict[str, float] | None = None) -> list[str]:
    """The console lines of a one-table run's in-training evaluation (``algo: maskable_ppo``
    and ``rllib_ppo``): its :func:`evaluation_line`, and :func:`stall_warning` against the
    baselines' own games of ``plan`` (:func:`resolve_auto`'s) where it fires, naming the cut
    where ``max_decisions`` was set (no ``plan``: no warning). ``truncation`` and
    ``choices``: as stall_warning's."""
    lines = [evaluation_line(step, minutes, rows)]
    if plan and plan["baselines"]:
        warning = stall_warning(rows, plan["baselines"], choices, cfg.ppo.gamma, truncation,
                                list(resolved(cfg.opponents, "opponents")),
                                max_decisions=None if plan["cut_auto"] else
                                resolved(cfg.max_decisions, "max_decisions"))
        if warning:
            lines.append(warning)
    return lines


def say(lines: Sequence[str], bar: Any = None) -> None:
    """Print console lines on stderr, through the tqdm progress bar ``bar`` when there is one
    (so the bar is drawn again below them)."""
    import sys

    for line in lines:
        try:
            if bar is not None:
                bar.write(line, file=sys.stderr)
            else:
                print(line, file=sys.stderr)
        except OSError as exc:   # its reader gone (| head, a closed terminal): while a trainer
            # runs, a stop it saves the model at (before: the run ended at once, no model
            # kept); another failure (a full disk behind 2>log) is one
            if StopOnInterrupt.active is None or not output_lost(exc):
                raise
            StopOnInterrupt.active.output_gone()
            return


def bar_do(bar: Any, method: str, *args: Any) -> None:
    """``bar.<method>(*args)`` on a tqdm progress bar (none: nothing). A bar that cannot be
    drawn (its terminal closed, a broken pipe) stops the training under way as :func:`say`
    does, the model saved (before: tqdm's error ended the run without it); any other
    failure to draw it, and any after training, is passed over: a bar is not the run's
    output."""
    if bar is None:
        return
    try:
        getattr(bar, method)(*args)
    except OSError as exc:
        if StopOnInterrupt.active is not None and output_lost(exc):
            StopOnInterrupt.active.output_gone()


def output_lost(exc: OSError) -> bool:
    """Is ``exc`` a write whose reader has gone: a broken pipe (``| head``), a terminal
    closed (EIO)?"""
    import errno

    return isinstance(exc, BrokenPipeError) or exc.errno == errno.EIO


def stall_counts(actions: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Each decision's four counts that :func:`stall_choices` reads, an int64 array ``(n,
    4)``: caught, catch legal, drew holding a playable card, draw legal holding one
    (``actions``: the ``n`` actions taken, ``masks``: their ``(n, NUM_ACTIONS)`` legal masks).
    Both trainers count their learner's choices with it."""
    playable = masks[:, A_DRAW] & masks[:, :A_DRAW].any(axis=1)
    return np.stack([actions == A_CATCH, masks[:, A_CATCH], playable & (actions == A_DRAW),
                     playable], axis=1).astype(np.int64)


def stall_choices(counts: Sequence[int], rules: Any) -> dict[str, float]:
    """The shares :func:`stall_warning` reads from a table's counts since the last evaluation,
    ``(catches, catches legal, draws holding a playable card, draws legal holding one)``:
    ``catch`` and ``draw holding a playable card``, each where it was legal at all. A catch
    counts only under rules where a false one costs (``false_catch_penalty``): elsewhere it is
    legal only where it succeeds, and taking it is the right play, not a stall."""
    shares = {}
    if counts[1] and rules.false_catch_penalty > 0:
        shares["catch"] = counts[0] / counts[1]
    if counts[3]:
        shares["draw holding a playable card"] = counts[2] / counts[3]
    return shares


def stall_warning(rows: Sequence[dict[str, Any]], baselines: dict[str, dict[str, float]],
                  choices: dict[str, float] | None = None, gamma: float = 1.0,
                  truncation: str = "loss", pool: Sequence[str] = (),
                  shaping: float | None = None, max_decisions: int | None = None) -> str | None:
    """A warning when the learner's evaluation games last far longer than the opponents'
    own games (:data:`STALL_RATIO`), or many are cut with no winner (:data:`STALL_CUT_SHARE`),
    or it mostly stalls where it may (:data:`STALL_CHOICE_SHARE`) and wins far less than its
    fair share (:data:`STALL_WIN_FRACTION`), naming the likely causes; None otherwise.
    ``choices``: shares of the learner's stalling moves since the last evaluation (``catch``
    when legal, ``draw`` while holding a playable card); ``truncation``: ``loss``,
    ``bootstrap`` (each ``ppo.truncation``), ``sb3`` (``algo: maskable_ppo``, which
    bootstraps) or ``rllib`` (``algo: rllib_ppo``, which does too); ``shaping``: the run's
    ``ppo.hand_shaping`` where it was set (0 is named as a cause; None: ``auto``, which is 0
    only where shaping does not apply); ``max_decisions``:
    the run's cut where it was set (not ``auto``), named as the cause instead of the learner
    where it comes within :data:`STALL_RATIO` times an opponent's own game length
    (:func:`short_cut`)."""
    long, cut = [], []
    for r in rows:
        own = baselines.get(r["opponent"], {}).get("mean_length")
        if own and r["mean_length"] > STALL_RATIO * own:
            long.append(f"{r['opponent']} {r['mean_length']:,.0f} decisions against its own "
                        f"{own:,.0f}")
        if r["games"] and r["no_winner"] / r["games"] > STALL_CUT_SHARE:
            cut.append(f"{r['opponent']} {100 * r['no_winner'] / r['games']:.0f}%")
    games = sum(r["games"] for r in rows)
    won = sum(r["win_rate"] * r["games"] for r in rows) / games if games else 0.0
    fair = float(rows[0]["fair_share"]) if rows else 0.0
    mostly = [f"{k} {100 * v:.0f}%" for k, v in (choices or {}).items() if v >= STALL_CHOICE_SHARE]
    losing = bool(mostly) and games > 0 and won < STALL_WIN_FRACTION * fair
    if not long and not cut and not losing:
        return None
    if long or cut:
        text = "warning: the learner's games "
        if long:
            text += "last far longer than the opponents' own (" + "; ".join(long) + ")"
        if cut:
            text += (" and " if long else "") + "are often cut with no winner (" + ", ".join(cut) + ")"
    else:
        text = (f"warning: the learner wins {100 * won:.1f}% of its games (fair share "
                f"{100 * fair:.3g}%) and mostly stalls where it may (" + ", ".join(mostly) + ")")
    if max_decisions is not None and (long or cut):
        short = short_cut(max_decisions, {r["opponent"]: baselines.get(r["opponent"], {})
                                          for r in rows})
        if short:
            return text + ": " + short + "."
    text += ": the learner is stalling."
    if choices and (long or cut):
        chosen = [f"{k} {100 * v:.0f}%" for k, v in choices.items() if v >= 0.2]
        if chosen:
            text += " Its choices since the last evaluation: " + ", ".join(chosen) + "."
    causes = []
    if gamma < 1:
        causes.append(f"ppo.gamma={gamma:g} discounts a loss many decisions away to almost "
                      f"nothing (try ppo.gamma=1)")
    if truncation == "bootstrap":
        causes.append("ppo.truncation=bootstrap makes a game cut with no winner worth no "
                      "less than playing on (try ppo.truncation=loss)")
    elif truncation in ("sb3", "rllib"):
        which = "maskable_ppo (SB3)" if truncation == "sb3" else "rllib_ppo (RLlib)"
        causes.append(f"algo {which} bootstraps a game cut with no winner, which makes it "
                      f"worth no less than playing on (try algo: ppo, with ppo.truncation=loss "
                      f"and ppo.hand_shaping)")
    if shaping == 0:
        causes.append("ppo.hand_shaping=0: a policy that never wins learns nothing until it does "
                      "(try ppo.hand_shaping=auto)")
    slow = [n for n, v in baselines.items() if not v.get("finishes", True) and n in pool]
    if slow:
        causes.append(f"opponents in the pool that cannot finish games under these rules "
                      f"({', '.join(slow)}; opponents: auto leaves them out)")
    if not causes:
        causes.append("the rules let a losing seat postpone the end (a voluntary draw, or a false "
                      "catch where the rules allow one); more training or self_play may help")
    return text + " Likely causes: " + "; ".join(causes) + "."




def least_cut(baselines: dict[str, dict[str, float]]) -> tuple[str, int] | None:
    """The quickest of ``baselines`` (:func:`baseline_games`' entries) in its own games, and
    the least ``max_decisions`` that leaves it room (:data:`STALL_RATIO` times its mean game
    length); None without a length."""
    own = {n: v["mean_length"] for n, v in baselines.items() if v.get("mean_length")}
    if not own:
        return None
    quickest = min(own, key=own.__getitem__)
    return quickest, math.ceil(STALL_RATIO * own[quickest])


def short_cut(max_decisions: int, baselines: dict[str, dict[str, float]]) -> str | None:
    """What to say when ``max_decisions`` comes within :data:`STALL_RATIO` times the length
    of the baselines' own games (``baselines``: :func:`baseline_games`' entries), where the
    cut, not the learner, ends games with no winner; None where it leaves room."""
    need = least_cut(baselines)
    if need is None or max_decisions >= need[1]:
        return None
    quickest, least = need
    return (f"max_decisions={max_decisions:,} cuts games that {quickest} plays against itself "
            f"in {baselines[quickest]['mean_length']:,.0f} decisions on average under these rules, so many end with "
            f"no winner whoever plays them; allowed: max_decisions: auto ({CUT_RATIO} times the "
            f"baselines' game length, at least {MIN_CUT}), or at least {least:,}")


def run_dir_of(cfg: TrainConfig) -> Path:
    if cfg.run_dir:
        return Path(cfg.run_dir)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(cfg.out_dir) / f"{cfg.name}-{stamp}"




class League:
    """The opponent pool of a run: the configured agents by weight, plus (self-play) the
    latest ``max_snapshots`` frozen copies of the learner, which share ``weight`` of the
    opponent seats equally once the first has joined (each seat of each game is drawn from
    the pool apart: at N players about 1 - (1 - weight)^(N - 1) of the games hold one)."""

    def __init__(self, pool: Any, cfg: TrainConfig) -> None:
        self.pool = pool
        self.base = dict(resolved(cfg.opponents, "opponents"))
        self.sp = cfg.self_play
        self.snapshots: list[str] = []

    def add_snapshot(self, agent: Any, step: int) -> str:
        """Add ``agent`` (a frozen copy of the learner) as ``snapshot-<step>``."""
        name = f"snapshot-{step}"
        self.pool.add(agent, 1.0, name)
        self.snapshots.append(name)
        while len(self.snapshots) > self.sp.max_snapshots:
            self.pool.remove(self.snapshots.pop(0))
        self._reweight()
        return name

    def _reweight(self) -> None:
        total = sum(self.base.values())
        w_sp = float(self.sp.weight) if self.snapshots else 0.0
        for name, w in self.base.items():
            self.pool.set_weight(name, (1.0 - w_sp) * w / total)
        for name in self.snapshots:
            self.pool.set_weight(name, w_sp / len(self.snapshots))




def learning_rate_schedule(lr0: float, lr1: float, seconds: float | None = None,
                           clock: Callable[[], float] = time.perf_counter) -> Callable[[float], float]:
    """Linear decay from ``lr0`` to ``lr1`` as an SB3 schedule (called with the share of
    ``total_steps`` still to go). With ``seconds`` (the time limit), the share of that time
    still to go counts too, whichever is smaller: a run the clock stops still ends at ``lr1``."""
    start = clock()

    def schedule(remaining: float) -> float:
        if seconds is not None:
            remaining = min(remaining, max(0.0, 1.0 - (clock() - start) / seconds))
        return lr1 + (lr0 - lr1) * remaining

    return schedule


CURVE_FIELDS = ["step", "opponent", "games", "win_rate", "ci_low", "ci_high", "fair_share",
                "mean_length", "no_winner"]
"""The columns of a run's ``eval.csv``."""


def curve_rows(step: int, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The learning-curve rows of one evaluation (:func:`ono_env.arena.evaluate`'s rows; a
    mixture's rows also name their ``table``)."""
    return [{"step": step, **({"table": r["table"]} if "table" in r else {}),
             **{k: r[k] for k in CURVE_FIELDS[1:]}} for r in rows]


PART_FIELDS = ("resume", "resume_grow", "resume_drop_value", "total_steps", "run_dir", "out_dir")
"""The config fields that name a part of a run rather than how it trains: a resumed part's
own, not compared with the checkpoint's (:func:`config_changes`)."""


_NONE = object()


def config_changes(before: Any, after: dict[str, Any], prefix: str = "") -> list[str]:
    """``"<field> <before> -> <after>"`` for each field (nested ones dotted) whose value in
    ``after``, a resumed part's config, differs from ``before``, the config its checkpoint
    recorded (read from a model file: any JSON value), but for :data:`PART_FIELDS`; a field
    that ``before`` lacks shows ``(none)``."""
    out = []
    old = before if isinstance(before, dict) else {}
    for key, value in after.items():
        if not prefix and key in PART_FIELDS:
            continue
        was = old.get(key, _NONE)
        if isinstance(value, dict) and isinstance(was, dict) and key not in ("opponents", "rules"):
            out += config_changes(was, value, f"{prefix}{key}.")
        elif was != value:
            out.append(f"{prefix}{key} {'(none)' if was is _NONE else shown(was, 30)} -> "
                       f"{shown(value, 30)}")
    return out


def curve_fields(mixture: bool) -> list[str]:
    """The header of a run's ``eval.csv``: a mixture of two or more tables names each row's
    ``table`` after its step."""
    return ["step", "table", *CURVE_FIELDS[1:]] if mixture else list(CURVE_FIELDS)


def write_curve(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """``eval.csv`` at ``path``, whole or not at all (:func:`~ono_env.checks.write_whole`):
    it holds every part's curve, which a run killed while it wrote would otherwise cut."""
    import io

    text = io.StringIO(newline="")
    w = csv.DictWriter(text, fieldnames=curve_fields(bool(rows) and "table" in rows[0]))
    w.writeheader()
    w.writerows(rows)
    write_whole(path, text.getvalue().encode(), "the learning curve")


_CURVE_TYPES: dict[str, Callable[[str], Any]] = {
    "step": int, "games": int, "no_winner": int, "win_rate": float, "ci_low": float,
    "ci_high": float, "fair_share": float, "mean_length": float}
"""The type of each number column of ``eval.csv`` (the others are text)."""


def curve_header(path: Path) -> list[str] | None:
    """The columns named by the first line of the ``eval.csv`` at ``path``; None where it
    cannot be read."""
    try:
        with open(path, newline="") as fh:
            return next(csv.reader([fh.readline()]), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return None


def read_curve(path: Path, up_to: int) -> list[dict[str, Any]]:
    """The rows of an ``eval.csv`` that :func:`write_curve` wrote, at steps up to ``up_to``,
    typed as the trainer keeps them (a part resumed in its run's own folder carries the
    earlier parts' curve on). ``ValueError`` naming the file and the line that is not such
    a row."""
    rows = []
    try:
        with open(path, newline="") as fh:
            for line, row in enumerate(csv.DictReader(fh), 2):
                if None in row or None in row.values():   # more or fewer values than columns
                    raise ValueError(f"line {line} does not hold one value per column")
                try:
                    typed = {k: _CURVE_TYPES.get(k, str)(v) for k, v in row.items()}
                except ValueError:
                    raise ValueError(f"line {line} holds a value that is not its column's "
                                     f"number") from None
                if typed["step"] <= up_to:
                    rows.append(typed)
    except (OSError, UnicodeDecodeError, csv.Error, ValueError) as exc:
        raise ValueError(f"{str(path)!r}: the learning curve this part would carry on cannot be "
                         f"read ({exc}); allowed: the eval.csv the run wrote, or none (remove "
                         f"it: the curve then starts at this part)") from None
    return rows




def summary_line(rows: Sequence[dict[str, Any]]) -> str:
    """Win rate against random and against the best baseline: the opponent other than
    random that the agent scores lowest against ("hardest opponent" where the opponents are
    not all baselines: a model file, a learned or a search agent among them is none)."""
    parts = []
    for r in rows:
        if r["opponent"] == "random":
            parts.append(f"vs random {100 * r['win_rate']:.2f}% "
                         f"[{100 * r['ci_low']:.2f}, {100 * r['ci_high']:.2f}]")
    others = [r for r in rows if r["opponent"] != "random"]
    if others:
        b = min(others, key=lambda r: r["win_rate"])
        which = ("best baseline" if all(r["opponent"] in AUTO_WEIGHTS for r in others)
                 else "hardest opponent")
        parts.append(f"vs {which} ({b['opponent']}) {100 * b['win_rate']:.2f}% "
                     f"[{100 * b['ci_low']:.2f}, {100 * b['ci_high']:.2f}]")
    return "trained agent: " + "; ".join(parts)




def carry_on_hint(program: str, resumable: bool, steps: int, total_steps: int) -> str:
    """" (resume=<it> carries on)" where a run's model can be carried on from ``ono-train``
    (``resumable``: ``algo: ppo``) and it stopped short of ``total_steps``, else ""."""
    return (" (resume=<it> carries on)"
            if resumable and program == "ono-train" and steps < total_steps else "")


def final_evaluation(cfg: TrainConfig, rules: Any, model_path: Path, run_dir: Path, steps: int,
                     train_seconds: float, algo: str, stop_signals: Sequence[str] = ("SIGINT",),
                     program: str = "ono-train", evaluated: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The end of every run (every ``algo``): the saved model against
    ``cfg.final_eval.opponents`` (worker processes load it from its path), written to
    ``final_eval.json``/``.csv`` and printed with the summary line. ``[]`` when
    ``final_eval.games`` is 0. A signal of ``stop_signals`` stops it at once
    (:class:`StopOnInterrupt` with ``at_once``), saying where the model is, that ``resume=``
    carries it on (:func:`carry_on_hint`: a run stopped short), and which of a mixture's tables were
    evaluated (``evaluated``: their labels; before: "no final evaluation" after some were, and
    no ``resume=``). Before, SIGTERM ended the process without a word and left the
    evaluation's worker processes running; Ctrl-C said only "interrupted"."""
    from ono_env.agents.learned import load_agent
    from ono_env.arena import evaluate, format_evaluation, games_played

    if not cfg.final_eval.games:
        return []
    workers = cfg.final_eval.workers
    import math
    import sys
    final_games = resolved(cfg.final_eval.games, "final_eval.games")
    played = games_played(final_games, rules.num_players, rules.num_players)
    half = 100 * 1.96 * math.sqrt(0.25 / played)
    rounded = ("" if played == final_games else f" ({final_games:,} asked, rounded up so that "
               f"the agent plays every seat equally often)")
    print(f"final evaluation: {played:,} games against each of "
          f"{', '.join(cfg.final_eval.opponents)}{rounded} (95% interval about +-{half:.1f} "
          f"points)", file=sys.stderr)
    load_agent(model_path, rules)   # refused here, before any game, where it cannot play
    # the file's path whatever the workers: an opponent that names the same file then plays
    # as its copy in both (before: an object with one worker, a path with more, so at 5-10
    # players such a table was arranged in one and not the other, and the numbers differed)
    agent = str(model_path)
    carry_on = carry_on_hint(program, algo == "ppo", steps, cfg.total_steps)
    kept = (f"the final evaluation of {', '.join(evaluated)} only (in tables/<label>/)"
            if evaluated else "no final evaluation")
    with stops_at_once(stop_signals, program,
                       f"interrupted during the final evaluation after {steps:,} steps: model "
                       f"saved to {model_path}{carry_on}; {kept}"):
        final = evaluate(agent, cfg.final_eval.opponents, rules, final_games,
                         seed=cfg.seed + 1_000_003, progress=bool(cfg.progress), workers=workers)
    write_final(run_dir, final, steps, train_seconds, model_path.name, algo)
    print(format_evaluation(final, f"{cfg.name} ({steps:,} steps, {train_seconds / 60:.1f} min "
                                   f"of training, {algo})"))
    print(summary_line(final))
    return final




def write_final(run_dir: Path, rows: Sequence[dict[str, Any]], steps: int, seconds: float,
                model: str, algo: str) -> None:
    """``final_eval.json`` and ``.csv`` into ``run_dir``, made here where missing (a mixture's
    ``tables/<label>``: before, made as its evaluation began, and left empty where a stop
    ended it)."""
    import json

    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "final_eval.json").write_text(json.dumps(
        {"model": model, "algo": algo, "training_steps": steps,
         "training_seconds": seconds, "results": list(rows)}, indent=2) + "\n")
    with open(run_dir / "final_eval.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _names(opponents: Any) -> list[str]:
    """The agents a resolved opponents field names (``auto`` is left to each table of a
    mixture, which checks its own)."""
    return [] if isinstance(opponents, str) else list(opponents)


def _checkpoint_step(path: Path) -> int | None:
    """N of a ``checkpoints/step_<N>.safetensors`` file (None for any other file)."""
    m = re.fullmatch(r"step_(\d+)\.safetensors", path.name)
    return int(m.group(1)) if m else None


def _model_steps(path: Path) -> int | None:
    """The training steps a model file records (None when it is missing or unreadable)."""
    from ono_env.agents.learned import read_metadata

    try:
        return int(read_metadata(path)["training_steps"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def run_label(run_dir: Path) -> str:
    """The name a run's models play under (their metadata's ``label``): its folder's name,
    the current folder's own for ``run_dir=.`` (:func:`check_run_dir` refuses one that
    cannot be a label)."""
    return Path(os.path.abspath(run_dir)).name


def check_run_label(run_dir: Path, field: str = "run_dir") -> None:
    """``ValueError`` naming ``field`` (``run_dir``, or ``ono-exploit``'s ``--out``) where the
    folder's name cannot be the label its models play under (before: refused only as the
    model was saved, after training; and a longer name was cut to the label's length without
    a word)."""
    from ono_env.agents.learned import MAX_MODEL_LABEL

    label = run_label(run_dir)
    if not label.isprintable() or not 0 < len(label) <= MAX_MODEL_LABEL:
        raise ValueError(f"{field} {shown(str(run_dir), 80)}: its folder's name is the label "
                         f"its models play under; allowed: a folder whose name is printable, "
                         f"of 1 to {MAX_MODEL_LABEL} characters (no control or formatting "
                         f"characters; the root folder has no name)")


def resumes_in(run_dir: Path, resume: str | None) -> bool:
    """Does ``resume`` name a model file of ``run_dir`` (in it, or in its checkpoints)?"""
    return resume is not None and Path(resume).resolve().parent in (
        run_dir.resolve(), (run_dir / "checkpoints").resolve())


def check_run_dir(run_dir: Path, resume: str | None) -> None:
    """``ValueError`` when ``run_dir`` already holds files, unless the run resumes the model
    file of that folder that is furthest along (its ``model.safetensors`` or another model
    file there, whose metadata records its training steps, or its newest
    ``checkpoints/step_<N>`` file, at N steps: the run carried on in its own folder, which
    holds the ``config.yaml`` every run writes first; an unreadable ``model.safetensors`` is
    left out of the comparison): another run there would
    overwrite some of the old run's files and leave the
    others beside its own, and a branch from an earlier point would leave the abandoned
    branch's later checkpoints, or overwrite a ``model.safetensors`` that a resumed part
    without checkpoints carried further. A run's folder that holds only its ``config.yaml``
    (and a mixture's ``tables.json``), a run stopped as it began, is taken as empty."""
    check_folder_path(run_dir, "run_dir")   # a file there, or a path the system refuses
    check_run_label(run_dir)
    held = sorted(p.name for p in run_dir.iterdir() if p.name != LOCK_FILE) if run_dir.is_dir() else []
    if not held:
        return
    own = (is_run_config(run_dir / "config.yaml")   # a run folder: every run writes it first,
           or is_run_config(run_dir / HELD_FOLDER / "config.yaml"))   # or a killed part held it
    if own and set(held) <= {"config.yaml", "tables.json"}:
        # a run stopped as it began, before it trained or logged anything (before: the folder
        # refused the same command): nothing there that the new run's files would not replace
        return
    if own and resume is not None and resumes_in(run_dir, resume):   # (narrows resume)
        zips = sorted(str(p.relative_to(run_dir)) for p in (run_dir / "model.zip",
                                                            *(run_dir / "checkpoints").glob("step_*.zip"))
                      if p.is_file())
        if zips:   # before: carried on in place, the ppo part's files beside the old run's
            raise ValueError(f"run_dir {str(run_dir)!r} holds an algo: maskable_ppo run "
                             f"({first_few(zips, 3)}), which resume= carries on as algo: ppo, "
                             f"whose files would mix with it; allowed: resume={str(resume)!r} "
                             f"with a new run_dir")
        model = run_dir / "model.safetensors"
        step = _checkpoint_step(Path(resume))
        is_model = Path(resume).resolve() == model.resolve()
        at = step if step is not None else _model_steps(Path(resume))
        if at is None:   # no steps to read: the resume itself reads the file, or refuses it
            return
        later = sorted((s, f"checkpoints/{p.name}")
                       for p in (run_dir / "checkpoints").glob("step_*.safetensors")
                       if (s := _checkpoint_step(p)) is not None and s > at)
        if not is_model and (m := _model_steps(model)) is not None and m > at:
            later.append((m, "model.safetensors"))
            later.sort()
        if later:   # a branch from an earlier point would leave or overwrite the further one
            s, name = later[-1]
            raise ValueError(f"resume={str(resume)!r} ({at:,} steps) is not the model file of "
                             f"run_dir {str(run_dir)!r} that is furthest along ({name}: {s:,} "
                             f"steps); allowed: resume={str(run_dir / name)!r} to carry the run "
                             f"on there, or a new run_dir to carry this one on")
        return
    listed = first_few(held, 4)
    if not own:
        raise ValueError(f"run_dir {str(run_dir)!r} already holds files and is not a run's "
                         f"folder (no config.yaml that a run wrote): {listed}; allowed: a new or "
                         f"empty folder")
    if not _model_files(run_dir):   # a run that saved nothing (it diverged at once, say)
        raise ValueError(f"run_dir {str(run_dir)!r} already holds the files of a run that saved "
                         f"no model ({listed}); allowed: a new or empty folder (remove these "
                         f"to reuse it)")
    raise ValueError(f"run_dir {str(run_dir)!r} already holds another run's files ({listed}); "
                     f"allowed: a new or empty folder, or resume= a model file in it to carry "
                     f"that run on")


RUN_CONFIG_KEYS = frozenset({"seed", "total_steps"})
"""Keys that every ``config.yaml`` a run writes holds, in every version of the trainer (it
writes every field; ``algo`` and ``run_dir`` came later)."""


def is_run_config(path: Path) -> bool:
    """Does ``path`` hold the ``config.yaml`` of a run: YAML (read as data only) whose mapping
    holds :data:`RUN_CONFIG_KEYS`? A folder that merely holds a file of that name is no run's,
    and a run must not overwrite or delete what is beside it."""
    from ono_env.rules import read_yaml

    if not path.is_file():
        return False
    try:
        data = read_yaml(path, "config.yaml")
    except ValueError:
        return False
    return isinstance(data, dict) and data.keys() >= RUN_CONFIG_KEYS


def check_folder_path(path: Path, field: str) -> None:
    """``ValueError`` naming ``field`` when ``path`` cannot become a folder because the
    nearest part of it that exists is a file (``a.json/sub``), or the path is a file, or the
    system cannot look it up (a name too long, ...)."""
    for at in (path, *path.parents):
        try:
            found = at.exists() or at.is_symlink()
        except OSError as exc:
            raise ValueError(f"{field} {shown(str(path), 80)}: {exc.strerror or exc}; allowed: a "
                             f"folder path") from None
        if found:
            if not at.exists():   # (before: called a file)
                raise ValueError(f"{field} {str(path)!r}: {str(at)!r} is a symbolic link that "
                                 f"leads to nothing (a loop, or its target is gone); allowed: "
                                 f"a folder path")
            if not at.is_dir():
                raise ValueError(f"{field} {str(path)!r}: {str(at)!r} is a file, not a folder; "
                                 f"allowed: a folder path")
            return


def rollout_bytes(cfg: TrainConfig, rules: Any) -> int:
    """The bytes of the arrays of one rollout that grow with the observation (algo ppo and
    maskable_ppo keep a rollout of ``num_envs x ppo.n_steps`` steps in memory): per step the
    observation, the legal mask (as float32, as SB3 keeps it), and where the config asks for
    them the opponents' hands (a privileged critic, hand prediction: once; oracle guiding:
    twice) and a teacher's action probabilities. The rest of a step is a few numbers."""
    from ono_env.cards import NUM_ACTIONS, NUM_CARD_TYPES
    from ono_env.observation import MAX_OPPONENTS, observation_size

    floats = observation_size(rules, cfg.observation_version) + NUM_ACTIONS
    pol = cfg.policy
    hands = MAX_OPPONENTS * NUM_CARD_TYPES
    if pol.privileged_critic or pol.hand_prediction > 0 or pol.oracle_guiding > 0:
        floats += hands
    if pol.oracle_guiding > 0:
        floats += hands
    if cfg.tables is not None and any(t.teacher is not None for t in cfg.tables):
        floats += NUM_ACTIONS
    return (cfg.ppo.n_steps + 1) * cfg.num_envs * 4 * floats


def check_rollout_memory(cfg: TrainConfig, rules: Any) -> None:
    """``ValueError`` naming the fields when one rollout (:func:`rollout_bytes`) would not fit
    in this machine's memory, before the run folder is written (numpy's own MemoryError came
    after it, naming no field). With algo rllib_ppo the learner gathers every env runner's
    rollout (before: not checked, and a rollout of hundreds of GiB was started). Skipped
    where the memory size cannot be read."""
    need = rollout_bytes(cfg, rules)
    steps = f"num_envs={cfg.num_envs:,} x ppo.n_steps={cfg.ppo.n_steps:,}"
    if cfg.algo == "rllib_ppo":
        need *= max(1, cfg.num_env_runners)
        steps += f" x num_env_runners={max(1, cfg.num_env_runners):,}"
    refuse_over_memory(need, f"a rollout of {steps} steps keeps {need / 2**30:,.1f} GiB of "
                             f"observations and masks", "a smaller num_envs or ppo.n_steps"
                       + (" or num_env_runners" if cfg.algo == "rllib_ppo" else ""))


def refuse_over_memory(need: int, what: str, allowed: str) -> None:
    """``ValueError`` "``what``, and this machine has N GiB; allowed: ``allowed``" when
    ``need`` bytes are more than this machine's memory, or its container's limit
    (:func:`~ono_env.game.memory_limit`); nothing where neither can be read. The memory
    checks of a run's config share it."""
    memory = memory_limit()
    if memory and need > memory:
        raise ValueError(f"{what}, and this process may hold {memory / 2**30:,.1f} GiB (the "
                         f"machine's memory, or its container's limit); allowed: {allowed}")


def network_bytes(cfg: TrainConfig, rules: Any) -> int:
    """A lower bound on the memory that training ``policy.net_arch`` takes: the hidden
    layers' and the policy head's weights (the first layer fed by the observation's length
    or 241 inputs, whichever is fewer: with an opponent encoder the seat's own part alone is
    longer), each held four times (the weights, their gradients and Adam's two moments),
    twice without a shared trunk (two networks), and one minibatch's activations and their
    gradients. What the network really holds is more (the value head, the encoder, biases,
    torch's own buffers), so a refusal is never wrong."""
    from ono_env.cards import NUM_ACTIONS

    arch = list(cfg.policy.net_arch)
    weights = _trunk_weights(cfg, rules) + arch[-1] * NUM_ACTIONS
    networks = 1 if cfg.policy.shared else 2
    return 4 * (4 * networks * weights + 2 * networks * cfg.ppo.batch_size * sum(arch))


def _trunk_weights(cfg: TrainConfig, rules: Any) -> int:
    """The weights of ``policy.net_arch``'s hidden layers, the first fed by the observation's
    length or 241 inputs, whichever is fewer (:func:`network_bytes`)."""
    from itertools import pairwise

    from ono_env.observation import observation_size

    arch = list(cfg.policy.net_arch)
    inputs = min(observation_size(rules, cfg.observation_version), 241)
    return inputs * arch[0] + sum(a * b for a, b in pairwise(arch))


def model_file_bytes(cfg: TrainConfig, rules: Any) -> int:
    """A lower bound on the bytes of the run's model file, and of each self-play snapshot
    held in memory: the float32 weights of the policy's and the value's networks, each with
    a trunk of its own (a shared trunk is written out once in front of each head), without
    biases, the encoder or the metadata."""
    from ono_env.cards import NUM_ACTIONS

    return 4 * (2 * _trunk_weights(cfg, rules) + cfg.policy.net_arch[-1] * (NUM_ACTIONS + 1))


def check_network_memory(cfg: TrainConfig, rules: Any) -> None:
    """``ValueError`` naming ``policy.net_arch`` when training it (:func:`network_bytes`, a
    lower bound) with its self-play snapshots (``self_play.max_snapshots`` copies of
    :func:`model_file_bytes`, where self-play is on) would not fit in this machine's memory,
    or when its model file would be larger than any model file is read
    (:data:`~ono_env.agents.learned.MAX_MODEL_BYTES`), before anything is built. Before,
    torch's own allocation error came after the run folder was written, naming no field, or
    the kernel ended the process without a word; 1,000 snapshots of a wide network ran out
    of memory hours in; and a network whose file the run's own final evaluation then
    refused trained to the end. ``algo: maskable_ppo`` writes a checkpoint zip with Adam's
    state in it, four times the model at least. The memory part is skipped where the memory
    size cannot be read."""
    from ono_env.agents.learned import MAX_MODEL_BYTES

    arch = list(cfg.policy.net_arch)
    file = model_file_bytes(cfg, rules)
    # maskable_ppo's model.zip holds SB3's weights and Adam's two moments besides the model
    written = 4 * file if cfg.algo == "maskable_ppo" else file
    if written > MAX_MODEL_BYTES:
        raise ValueError(f"policy.net_arch={arch}: its model file would take at least "
                         f"{written:,} bytes, and a model file is read up to "
                         f"{MAX_MODEL_BYTES:,} (by this run's final evaluation, resume, and "
                         f"every agent loader); allowed: narrower or fewer layers")
    snapshots = cfg.self_play.max_snapshots if cfg.self_play.enabled else 0
    need = network_bytes(cfg, rules) + snapshots * file
    kept = (f", and self_play.max_snapshots={snapshots:,} copies of the network"
            if snapshots else "")
    refuse_over_memory(need, f"policy.net_arch={arch}: training it takes at least "
                       f"{need / 2**30:,.1f} GiB (weights, gradients and Adam's state, a "
                       f"minibatch of ppo.batch_size={cfg.ppo.batch_size:,}{kept})",
                       "narrower or fewer layers, or a smaller ppo.batch_size"
                       + (" or self_play.max_snapshots" if snapshots else ""))


def check_evaluation_memory(cfg: TrainConfig, rules: Any) -> None:
    """``ValueError`` naming ``eval.games`` or ``final_eval.games`` when an evaluation's
    games would not fit in the memory free (:func:`~ono_env.arena.check_records_memory`, as
    the arena checks them), or ``final_eval.workers`` when the processes that play as many
    opponents at once would not, each with its games' records
    (:func:`~ono_env.arena.check_workers_memory`; ``final_eval.games: auto`` counted at its
    most, :data:`FINAL_MOST`), at every player count of the run's tables, before the run
    folder is written. Before, the check came in the evaluation itself: the final one failed
    after the whole training, and the first in-training one before any model was saved; and
    each worker of the final evaluation checked its own games alone, against memory that
    the others were about to take."""
    from ono_env.arena import check_records_memory, check_workers_memory, games_played, record_bytes

    players = sorted({t.num_players for t in cfg.tables} if cfg.tables else {rules.num_players})
    fe = cfg.final_eval
    jobs = len(AUTO_WEIGHTS) if fe.opponents == "auto" else len(fe.opponents)
    for field, games in (("eval.games", cfg.eval.games if cfg.eval.every else 0),
                         ("final_eval.games", fe.games)):
        if not games:
            continue
        for n in players:
            if field == "final_eval.games" and min(fe.workers, jobs) > 1:
                # processes, each with its games' records (auto: at most FINAL_MOST games)
                most = games_played(FINAL_MOST if games == "auto" else games, n, n)
                check_workers_memory(fe.workers, jobs, "final_eval.workers",
                                     most * record_bytes(n), ", or a smaller final_eval.games")
            elif games != "auto":   # auto: at most 100,000 games, one evaluation at a time
                check_records_memory(games_played(games, n, n), n, games, field,
                                     f"a smaller {field}", num_entrants=n)


def check_distinct_labels(specs: Sequence[str], what: str) -> None:
    """``ValueError`` where two of an evaluation's agents play under one name (case aside):
    their rows in eval.csv, final_eval.json and TensorBoard are keyed by it, so one would
    hide the other (a model file plays under its metadata's ``label`` or its file's or
    folder's name: a run folder named ``greedy``, two runs' ``model.safetensors`` in folders
    of one name). ``what``: the field, for the message."""
    from ono_env.agents.learned import model_label
    from ono_env.agents.registry import is_model_path

    seen: dict[str, str] = {}
    for spec in specs:
        label = model_label(spec) if is_model_path(spec) else spec
        first = seen.setdefault(label.lower(), spec)
        if first != spec:
            raise ValueError(f"{what}: {first!r} and {spec!r} both play under the name "
                             f"{label!r}, which keys their results; allowed: agents of "
                             f"distinct names (copy a model file to a name of its own)")


def check_start(cfg: TrainConfig, agents: Sequence[str] = ()) -> tuple[Any, Path]:
    """What a run checks before it writes anything (:func:`start_run` does it first; the RLlib
    trainer also before it starts Ray): every evaluation opponent and ``agents`` made once, so
    that a bad name is one error, a rollout that fits in memory, and the output folders.
    Returns ``(the config's rules, the run folder)``."""
    from ono_env.agents import make_agent

    rules = rules_of(cfg)
    for spec in [*_names(cfg.eval.opponents), *_names(cfg.final_eval.opponents), *agents]:
        make_agent(spec, rules)
    check_distinct_labels(_names(cfg.eval.opponents), "eval.opponents")
    check_distinct_labels(_names(cfg.final_eval.opponents), "final_eval.opponents")
    check_rollout_memory(cfg, rules)
    check_network_memory(cfg, rules)
    check_evaluation_memory(cfg, rules)
    check_config_size(cfg)
    if not cfg.run_dir:
        check_folder_path(Path(cfg.out_dir), "out_dir")
    run_dir = run_dir_of(cfg)
    if cfg.run_dir:   # a folder named by its time is claimed afresh by start_run
        check_named_run_dir(run_dir, cfg.resume)
    return rules, run_dir


def check_config_size(cfg: TrainConfig) -> None:
    """``ValueError`` when the ``config.yaml`` the run writes (every field, defaults included:
    :func:`~ono_env.train.config.dump_config`) would be longer than a training config is read
    up to (:data:`~ono_env.rules.MAX_YAML_BYTES`). Before, a mixture of 64 tables whose
    config was just under it trained and wrote a longer one, which then neither loaded as a
    config nor marked the folder as a run's: the run could not be carried on there."""
    from ono_env.rules import MAX_YAML_BYTES

    size = len(dump_config(cfg).encode())
    if size > MAX_YAML_BYTES:
        raise ValueError(f"the run's config.yaml (every field, defaults included) would take "
                         f"{size:,} bytes, and a training config is read up to {MAX_YAML_BYTES:,} "
                         f"(a run is carried on from it); allowed: a shorter config (fewer tables "
                         f"or opponents, shorter model file paths)")


def check_named_run_dir(run_dir: Path, resume: Any) -> None:
    """:func:`check_run_dir` of a config's ``run_dir``, a run training there now said first
    (before: its files, or its newest checkpoint, were named instead)."""
    try:
        locked = (run_dir / LOCK_FILE).is_file()
    except OSError:   # a path the system refuses: check_run_dir names it
        locked = False
    if locked:
        lock_run_dir(run_dir, warn=False).close()
    check_run_dir(run_dir, resume)


MAX_CLAIMS = 1000
"""How many names ``<name>-<time>``, ``<name>-<time>-2``, ... :func:`claim_run_dir` tries."""


def claim_run_dir(run_dir: Path, named: bool = False) -> Path:
    """The run's folder, made: ``run_dir`` as given (``named``: the config's ``run_dir``,
    which may be there already: a resume in its own folder), or for a run named by its time
    ``run_dir`` itself or, where another run made that folder first (two runs started in
    the same second), ``run_dir-2``, ``run_dir-3``, ...; each made with an exclusive
    ``mkdir``, so that two runs never share one. ``ValueError`` naming the field (run_dir or
    out_dir) where none can be made."""
    field = "run_dir" if named else "out_dir"
    try:
        if named:
            run_dir.mkdir(parents=True, exist_ok=True)
            return run_dir
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        for k in range(1, MAX_CLAIMS + 1):
            candidate = run_dir if k == 1 else run_dir.with_name(f"{run_dir.name}-{k}")
            try:
                candidate.mkdir()
                return candidate
            except FileExistsError:
                continue
    except OSError as exc:
        raise ValueError(f"{field}: cannot create the run's folder {str(run_dir)!r}: "
                         f"{exc.strerror or exc}; allowed: a folder that can be made and "
                         f"written") from None
    raise ValueError(f"out_dir: {MAX_CLAIMS} folders named {str(run_dir)!r}-<k> exist already; "
                     f"allowed: another out_dir or name, or run_dir")


EVALUATION_FILES = ("eval.csv", "final_eval.json", "final_eval.csv")
"""The files in a run folder that evaluate its model: a part resumed in the folder replaces
them (:class:`EarlierPart`), but for an ``eval.csv`` it carries on."""


HELD_FOLDER = ".earlier-part"
"""Where a part resumed in its run's own folder keeps the earlier part's files until it
saves a model (:class:`EarlierPart`)."""

HELD_RECORD = "models.json"
"""The file in :data:`HELD_FOLDER` that records the run folder's model files as the part
began: a folder left by a part that was killed is settled from it."""

LOCK_FILE = ".lock"
"""The file of a named run folder that a part under way holds locked (:func:`lock_run_dir`)."""


class _Part:
    """The part under way in this process: its run folder's lock and the earlier part's files
    it holds (:func:`start_run`)."""

    def __init__(self) -> None:
        self.lock: Any = None
        self.earlier: EarlierPart | None = None


_part: _Part | None = None
"""The part under way in this process (:func:`start_run`, :func:`settle_earlier_part`)."""


def _model_files(run_dir: Path) -> dict[str, int]:
    """Every model file of a run folder (its ``model.*`` and ``checkpoints/*``) and when it
    was last written: a part that saves one changes this."""
    found = [*run_dir.glob("model.*"), *run_dir.glob("checkpoints/*")]
    return {p.relative_to(run_dir).as_posix(): p.stat().st_mtime_ns for p in found if p.is_file()}


def holds_a_model(run_dir: Path) -> bool:
    """Does the run folder hold a model file (``model.*``, ``checkpoints/*``)?"""
    return bool(_model_files(run_dir))


def lock_run_dir(run_dir: Path, warn: bool = True) -> Any:
    """Lock a named run folder for the part about to train in it (an exclusive ``flock`` on
    its :data:`LOCK_FILE`, released when the file is closed or the process ends, killed
    too); returns the open file. ``ValueError`` naming ``run_dir`` where another process
    holds it: two parts in one folder would set aside and restore each other's files and
    overwrite each other's models. On a file system without locks (some network mounts
    answer ENOLCK or EOPNOTSUPP) one warning (none with ``warn`` False), and the run goes on
    unlocked."""
    import errno
    import fcntl

    try:
        lock = open(run_dir / LOCK_FILE, "a+")  # noqa: SIM115 (held open for the run)
    except OSError as exc:
        raise ValueError(f"run_dir: cannot lock the run's folder {str(run_dir)!r}: "
                         f"{exc.strerror or exc}; allowed: a folder that can be written") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):   # a file system without locks
            if warn:
                print(f"warning: run_dir {str(run_dir)!r} cannot be locked ({exc.strerror or exc}: "
                      f"its file system may not support locks); nothing stops a second run in "
                      f"it meanwhile", file=sys.stderr)
            return lock
        lock.close()
        raise ValueError(f"run_dir: a run is training in {str(run_dir)!r} now (its {LOCK_FILE} "
                         f"is locked by another process); allowed: resume it once that run "
                         f"has ended, or another run_dir") from None
    return lock


class EarlierPart:
    """The files of an earlier part of a run that a part resumed in the run's own folder
    replaces: its evaluations (:data:`EVALUATION_FILES`, in the folder and in each
    ``tables/<label>/``), a mixture's ``tables.json``, and ``config.yaml``. The learning
    curve, ``eval.csv``, is not replaced where its columns are ``curve``'s, those the part
    writes: the part carries it on (before: set aside as the rest, and gone once the part
    saved a model, so a run carried on over several sittings kept only its last one's
    curve; its rows evaluate the checkpoints, which stay). :meth:`hold`
    moves them into :data:`HELD_FOLDER`, with a record of the folder's model files
    (:data:`HELD_RECORD`), as the part starts; :meth:`settle` settles them as the part ends:
    removed where the part saved a model (they describe the model as it was), all put back
    where it saved nothing (it diverged, or was stopped or failed before its first save), the
    part's own ``config.yaml`` and evaluation files going instead, and ``final_eval.*`` put
    back where it saved checkpoints but no ``model.*`` (they evaluate that model, which is
    still there). Before, they were removed as the part started, and a part that then failed
    left the folder with the older model and the failed part's config. A part of less
    evaluation (``eval.every=0``, ``final_eval.games=0``) thus leaves none of the older
    model's beside its newer one. A :data:`HELD_FOLDER` left by a part that was killed is
    settled from its record as the next part starts (:meth:`hold`)."""

    def __init__(self, run_dir: Path, models: dict[str, int] | None = None,
                 names: list[str] | None = None, curve: list[str] | None = None) -> None:
        self.run_dir = run_dir
        self.curve = curve
        self.held = run_dir / HELD_FOLDER
        self.names: list[str] = [] if names is None else names
        self.models = _model_files(run_dir) if models is None else models

    def _found(self) -> list[Path]:
        run_dir = self.run_dir
        found = [run_dir / name for name in (*EVALUATION_FILES, "tables.json")]
        found += sorted(p for name in EVALUATION_FILES for p in run_dir.glob(f"tables/*/{name}"))
        if self.curve is not None and curve_header(run_dir / "eval.csv") == self.curve:
            found.remove(run_dir / "eval.csv")   # carried on
        return [p for p in found if p.is_file() and not p.is_symlink()]

    @classmethod
    def left(cls, run_dir: Path) -> EarlierPart:
        """The :data:`HELD_FOLDER` a part that was killed left, from its record. ``ValueError``
        naming the folder where the record cannot be read: its files are left as they are."""
        from ono_env.checks import parse_json

        held = run_dir / HELD_FOLDER
        try:   # parse_json: one error for any JSON (before: a deep nesting's RecursionError
            # escaped, and a key given twice was read as its last value)
            record = parse_json((held / HELD_RECORD).read_bytes())
            models = record["models"] if isinstance(record, dict) else None
            if not (isinstance(models, dict)
                    and all(isinstance(v, int) and not isinstance(v, bool) for v in models.values())):
                raise ValueError("not a mapping of file names to times")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"run_dir: {str(held)!r} was left by a part that ended without "
                             f"settling it, and its record {HELD_RECORD} cannot be read "
                             f"({exc}); allowed: move the files it holds back into the run's "
                             f"folder, or remove it, then resume") from None
        names = sorted(rel for p in held.rglob("*")
                       if p.is_file() and (rel := p.relative_to(held).as_posix()) != HELD_RECORD)
        return cls(run_dir, models, names)

    def hold(self) -> list[str]:
        """Move the earlier part's files aside; returns their paths within the folder (its
        ``config.yaml``, moved too, is not named). A :data:`HELD_FOLDER` left by a part that
        was killed is settled first (:meth:`left`, :meth:`settle`)."""
        import json

        if self.held.exists():
            EarlierPart.left(self.run_dir).settle()
        self.held.mkdir()
        (self.held / HELD_RECORD).write_text(json.dumps({"models": self.models}) + "\n")
        for path in [*self._found(), self.run_dir / "config.yaml"]:
            rel = path.relative_to(self.run_dir)
            (self.held / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, self.held / rel)
            self.names.append(rel.as_posix())
        self._drop_empty_tables()
        return [n for n in self.names if n != "config.yaml"]

    def _drop_empty_tables(self) -> None:
        tables = self.run_dir / "tables"
        if tables.is_dir() and not tables.is_symlink():
            for folder in sorted(tables.iterdir()):
                if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
                    folder.rmdir()
            if not any(tables.iterdir()):
                tables.rmdir()

    def _put_back(self, names: Sequence[str]) -> None:
        for name in names:
            (self.run_dir / name).unlink(missing_ok=True)
            (self.run_dir / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.held / name, self.run_dir / name)

    def settle(self) -> None:
        """Remove the held files where the part saved a model, else put them back (only
        ``final_eval.*`` where it saved checkpoints alone)."""
        import shutil

        if not self.held.is_dir():
            return
        now = _model_files(self.run_dir)
        if now == self.models:   # nothing saved: the earlier part stays
            for path in self._found():   # the part's own evaluations of the older model
                # (but the curve it carried on, held by no one: before, a part killed before
                # its first save took it with it as the next part settled it)
                if path != self.run_dir / "eval.csv" or "eval.csv" in self.names:
                    path.unlink()
            self._put_back(self.names)
            self._drop_empty_tables()
        elif {k: v for k, v in now.items() if k.startswith("model.")} == \
                {k: v for k, v in self.models.items() if k.startswith("model.")}:
            # checkpoints saved, the model not: its final evaluation still evaluates it
            self._put_back([n for n in self.names if n.rsplit("/", 1)[-1].startswith("final_eval.")])
        shutil.rmtree(self.held)


def settle_earlier_part() -> None:
    """The end of the part under way in this process, if one is: :meth:`EarlierPart.settle`
    of the earlier part it holds, and its run folder unlocked. The trainers call it as they
    end, whether they end well or not; a file it cannot move is one warning, so that the
    error that ended the part, if any, stays the one reported."""
    global _part
    part, _part = _part, None
    if part is None:
        return
    earlier = part.earlier
    try:
        if earlier is not None:
            earlier.settle()
    except OSError as exc:
        assert earlier is not None
        print(f"warning: the earlier part's files in {str(earlier.held)!r} could not be "
              f"settled ({exc.strerror or exc}); move them back into the run's folder by "
              f"hand", file=sys.stderr)
    finally:
        if part.lock is not None:
            part.lock.close()


def start_run(cfg: TrainConfig, agents: Sequence[str] = (),
              threads: tuple[int, str] | None = None) -> tuple[Any, Path, int, str]:
    """The start of every run: :func:`check_start`'s checks, torch's thread count chosen
    (:func:`choose_threads`; ``threads``: one chosen before, as ``(count, why)``), set and
    printed, the run folder made (a named one locked: :func:`lock_run_dir`), an earlier
    part's evaluation files set aside (:class:`EarlierPart`), and ``config.yaml`` written.
    Returns ``(rules, run_dir, threads, why)``."""
    import torch

    rules, run_dir = check_start(cfg, agents)
    count, why = choose_threads(cfg.torch_threads) if threads is None else threads
    torch.set_num_threads(count)
    global _part
    settle_earlier_part()   # one left by a part that ended without settling it (none, else)
    run_dir = claim_run_dir(run_dir, named=bool(cfg.run_dir))
    _part = _Part()
    if cfg.run_dir:
        _part.lock = lock_run_dir(run_dir)
        if not resumes_in(run_dir, cfg.resume):   # a run stopped as it began left these alone
            for name in ("config.yaml", "tables.json"):   # (check_run_dir took its folder as empty)
                (run_dir / name).unlink(missing_ok=True)
        if (run_dir / "config.yaml").is_file() or (run_dir / HELD_FOLDER).exists():
            # a resume in its own folder (a part killed as it set the earlier part aside left
            # its config.yaml in HELD_FOLDER alone: check_run_dir takes it)
            earlier = EarlierPart(run_dir, curve=curve_fields(len(cfg.tables or ()) > 1))
            held = earlier.hold()   # refused: what it would have held is left as it is
            _part.earlier = earlier   # only now: settled as the part ends
            said = [f"the earlier part's {', '.join(held)} set aside in {HELD_FOLDER}/ (they "
                    f"evaluated the model before this part: removed once this part saves a "
                    f"model, put back if it saves none)"] if held else []
            if (run_dir / "eval.csv").is_file():
                said.append("its learning curve, eval.csv, carried on")
            if said:
                print(f"resuming in its own folder: {'; '.join(said)}", file=sys.stderr)
    print(why, file=sys.stderr)   # once the folder is the run's (before: above its refusal)
    (run_dir / "config.yaml").write_text(dump_config(cfg))
    return rules, run_dir, count, why


# ---- torch threads ------------------------------------------------------------------------
def _cpu_times(stat_text: str) -> tuple[int, int]:
    """(idle, total) jiffies of the machine from the ``cpu`` line of /proc/stat."""
    for line in stat_text.splitlines():
        if line.startswith("cpu "):
            v = [int(x) for x in line.split()[1:]]
            return v[3] + (v[4] if len(v) > 4 else 0), sum(v[:8])
    raise ValueError("no 'cpu' line in /proc/stat")


def free_cores(seconds: float = 0.3, read: Callable[[], str] | None = None,
               sleep: Callable[[float], None] = time.sleep) -> float | None:
    """How many cores sat idle over the next ``seconds`` (from /proc/stat: idle + iowait
    time over all time, times the cores this process may use); None where /proc/stat cannot
    be read. ``read`` and ``sleep`` are for tests."""
    if read is None:
        def read() -> str:
            with open("/proc/stat") as fh:
                return fh.read()
    try:
        i0, t0 = _cpu_times(read())
        sleep(seconds)
        i1, t1 = _cpu_times(read())
    except (OSError, ValueError):
        return None
    if t1 <= t0:
        return None
    return usable_cores() * (i1 - i0) / (t1 - t0)


def choose_threads(setting: int | str, free: float | None = None) -> tuple[int, str]:
    """The torch thread count for ``torch_threads`` (a number, or ``"auto"``) and why.

    ``auto`` counts the cores that were idle over a short sample at start (``free``; measured
    when None) and takes one thread per free core, at least one: torch's CPU threads
    spin-wait for each other, so a thread that shares its core with another busy process
    stalls every step of the others (measured: two threads beside one busy process train 4-5x
    slower than one thread)."""
    if setting != "auto" and not (is_int(setting) and 1 <= int(setting) <= MAX_TORCH_THREADS):
        # before: "invalid literal for int()" for "x", and 0 taken
        raise ValueError(f"torch_threads={shown(setting, 40)}; allowed: auto or a whole number "
                         f"from 1 to {MAX_TORCH_THREADS:,}")
    cores = usable_cores()
    if setting != "auto":
        # more threads than cores spin-wait on each other (before: 1,024 on 2 cores trained
        # at 1% of the speed, without a word)
        more = (f"; more than the {cores} cores this process may use: the threads wait on "
                f"each other, and training slows (auto takes one per free core)"
                if int(setting) > cores else "")
        return int(setting), f"torch_threads: {setting} (as set, not auto){more}"
    if free is None:
        free = free_cores()
    if free is None:
        return 1, "torch_threads: auto -> 1 (cannot read the machine's load)"
    n = max(1, min(cores, int(free + 0.25)))
    return n, f"torch_threads: auto -> {n} ({free:.1f} of {cores} cores free at start)"


# ---- stopping on a signal, the model saved ----------------------------------------------------
STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
"""The signals a training may be asked to stop at, saving its model (:class:`StopOnInterrupt`)."""


def check_stop_signals(stop_signals: Any) -> tuple[str, ...]:
    """A trainer's ``stop_signals`` (a list, tuple or set) as a tuple of names from
    :data:`STOP_SIGNALS`."""
    if isinstance(stop_signals, (str, bytes)) or not isinstance(stop_signals, Collection) \
            or not all(isinstance(s, str) and s in STOP_SIGNALS for s in stop_signals):
        raise ValueError(f"stop_signals={shown(stop_signals, 60)}; allowed: a sequence of "
                         f"{', '.join(STOP_SIGNALS)} (names)")
    return tuple(stop_signals)


class StopNow(BaseException):
    """Raised by the handler of a :class:`StopOnInterrupt` made ``at_once``: a signal that
    ends what is under way now (a BaseException, as KeyboardInterrupt, so that no ``except
    Exception`` on the way takes it)."""


@contextmanager
def stops_at_once(signals: Sequence[str], program: str, said: str,
                  then: Callable[[], None] | None = None) -> Iterator[None]:
    """Work after the model is saved (a final evaluation, a measurement) under ``signals``:
    the first stops it at once, prints ``said`` (where the model is), calls ``then`` (what
    the caller keeps of the work), and ends the run as :meth:`StopOnInterrupt.stop` does
    (status 130 for Ctrl-C, 128 + the signal's number for another). Before, SIGTERM there
    ended the process without a word."""
    interrupt = StopOnInterrupt(signals, program=program, at_once=True)
    try:
        yield
    except StopNow:
        print(said, file=sys.stderr)
        if then is not None:
            then()
        interrupt.stop()
    finally:
        interrupt.restore()


NOT_DONE = {"ono-exploit": "not measured (ono-exploit measures the exploiter once it has "
                            "trained): no exploit.json"}
"""What a trainer's program leaves undone when it is interrupted while training, where that
is not the final evaluation (``ono-exploit`` has none)."""


class StopOnInterrupt:
    """A signal of ``signals`` during training (Ctrl-C's SIGINT; from ``ono-train`` SIGTERM
    and SIGHUP too, what ``kill``, ``timeout``, job schedulers and a closed terminal send):
    the first asks the trainer to
    stop at its next chance (``asked``; ``when`` says when, in the message it prints:
    ``algo: ppo`` after the rollout under way and one minibatch of its update, or the
    evaluation under way, at the table it is at; ``maskable_ppo`` at its rollout's next step; ``rllib_ppo`` after
    the training iteration under way), so that
    the model is saved (written with the training's steps, as any checkpoint, and
    resumable); a second stops at once, as Python does. Only in the main thread (where
    Python runs signal handlers), and for each signal only where it is not ignored (SIG_IGN:
    Ctrl-C in a run in the background of a shell); elsewhere it changes nothing. ``signum``:
    the signal that asked. SIGTERM and SIGHUP are the console script's alone: a process pool
    stops its workers with SIGTERM, and a training called there must stop at once."""

    def __init__(self, signals: Sequence[str] = ("SIGINT",),
                 when: str = ("after the rollout under way and one minibatch of its update "
                              "(or the evaluation under way, one table's)"),
                 program: str = "ono-train", at_once: bool = False) -> None:
        import signal
        import threading

        self.when = when
        self.program = program   # the console script its message names
        self.at_once = at_once   # the first signal raises StopNow (work that is not kept)
        self.asked = False
        self.signum = 0
        self.quiet = False   # the output is gone: nothing more is said
        self._previous: dict[int, Any] = {}
        if threading.current_thread() is not threading.main_thread():
            return
        if not at_once:   # a training under way (work after it, a final evaluation, is not
            StopOnInterrupt.active = self   # stopped by a lost output: it ends as before)
        for name in signals:
            sig = getattr(signal, name, None)
            if sig is not None and signal.getsignal(sig) is not signal.SIG_IGN:
                self._previous[sig] = signal.signal(sig, self._on_signal)

    active: StopOnInterrupt | None = None
    """The one that serves the training under way (None between trainings): :func:`say`
    asks it to stop where the output is gone."""

    def _say(self, text: str) -> None:
        """``text`` on stderr, where it can still be written: a message of a stop must not
        stop the stop (before: ``2>&1 | tee`` ended by the Ctrl-C, or a closed terminal, made
        the handler's own line raise, and the run ended without its model)."""
        if self.quiet:
            return
        try:
            print(text, file=sys.stderr, flush=True)
        except (OSError, ValueError):   # a broken pipe, a hung-up terminal, a closed stream
            self._silence()

    def _silence(self) -> None:
        """Say nothing more, and make ``sys.stderr`` the null device, so that no later
        message (the console's own, a warning) fails on the lost one again; the lost stream's
        unwritten text is dropped with it (Python reports that on the new one: nowhere)."""
        import os

        self.quiet = True
        if getattr(sys.stderr, "name", None) != os.devnull:
            sys.stderr = open(os.devnull, "w", encoding="utf-8")   # noqa: SIM115 - the process's

    def _on_signal(self, signum: int, frame: Any) -> None:
        import signal

        self.asked = True
        self.signum = signum
        self._restore_handlers()   # a second one: stop at once (KeyboardInterrupt, or the default)
        how = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        if self.at_once:
            self._say(f"\n{self.program}: {how}: stopping")
            raise StopNow
        self._say(f"\n{self.program}: {how}: stopping {self.when} to save the model ({how} "
                  f"again to stop at once, keeping only the checkpoints)")

    def output_gone(self) -> None:
        """The console output's reader is gone (``| head``, a closed terminal): stop as a
        signal would, saying nothing more, and end with SIGPIPE's status (141) once the
        model is saved."""
        import signal

        self._silence()
        if not self.asked:
            self.asked = True
            self.signum = signal.SIGPIPE

    def end(self, steps: int, total_steps: int, model_path: Any, resumable: bool = False) -> None:
        """Say where the model was saved, then :meth:`stop`: the trainers' one message
        (``resumable``: ``ono-train``'s ``resume=`` carries the model on)."""
        carry_on = carry_on_hint(self.program, resumable, steps, total_steps)
        self._say(f"interrupted after {steps:,} of {total_steps:,} steps: model saved to "
                  f"{model_path}{carry_on}; {NOT_DONE.get(self.program, 'no final evaluation')}")
        self.stop()

    def stop(self) -> None:
        """End the run after the model is saved: ``KeyboardInterrupt`` for Ctrl-C (status 130
        from the console script), ``SystemExit(128 + signum)`` for another signal, the status
        a shell reports for a process that signal ended."""
        import signal

        if self.signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + self.signum)

    def restore(self) -> None:
        """Put back the handlers that were there before (once): the training is over."""
        self._restore_handlers()
        if StopOnInterrupt.active is self:
            StopOnInterrupt.active = None

    def _restore_handlers(self) -> None:
        import signal

        for sig, previous in self._previous.items():   # None: a handler not set from Python
            signal.signal(sig, signal.SIG_DFL if previous is None else previous)
        self._previous = {}
