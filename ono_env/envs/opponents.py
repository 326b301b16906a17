"""Playing the opponents of a learner, in batch: shared by the Gymnasium env and the SB3 VecEnv.

Opponents are given as

- one agent (a name, a saved model's path, or a policy object) for every opponent seat;
- a list of N-1 of them, one per seat to the learner's left;
- an :class:`OpponentPool` (or a dict ``{agent: weight}``): every opponent seat of every
  game draws one member by weight as each episode begins (a match's later rounds keep
  them). Members can be added and
  removed while training runs (league self-play adds frozen snapshots of the learner).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast

import numpy as np

from ono_env.agents.base import Agent, agent_label
from ono_env.agents.driver import AgentDriver
from ono_env.agents.registry import make_agent
from ono_env.checks import MAX_TEXT, check_rng, cut, first_few, is_name, is_real, nearest, shown
from ono_env.game import VecGame
from ono_env.rules import FIELD_NAMES, RuleSet, check_rule_set, resolve_rules


def _is_agent(spec: Any) -> bool:
    return isinstance(spec, (str, os.PathLike)) or hasattr(spec, "act")


MAX_REDEALS = 10_000
"""Deals in a row that may end before the learner's first decision before giving up."""


class OpponentPool:
    """Weighted opponents, drawn per game and seat when a game is dealt.

    ``OpponentPool({"greedy": 2, "random": 1}, rules)``; ``add(agent, weight, name)``,
    ``remove(name)``, ``set_weight(name, weight)`` and ``reweight({name: weight})`` change it
    while environments use it: the games already dealt keep the opponents they were dealt (a
    removed member finishes those games), and the next deals draw from the new members and
    weights. A change that would leave no member of positive weight, or weights whose sum is
    infinite, is refused, the pool unchanged. A weight is a finite number >= 0 (not a bool);
    a name is a non-empty string, unique in the pool.
    ``rules`` (a RuleSet, preset name, ...) is the rule set the members play: an environment
    refuses a pool made for other rules."""

    def __init__(self, members: Mapping[Any, float] | None, rules: Any) -> None:
        self.rules = resolve_rules(rules)
        self.agents: list[Agent] = []
        self.names: list[str] = []
        self.weights: list[float] = []
        self._cdf: tuple[tuple[float, ...], np.ndarray] | None = None
        if members is not None and not isinstance(members, Mapping):
            raise ValueError(f"opponent pool members={shown(members, 80)} ({type(members).__name__}); "
                             f"allowed: a dict {{agent: weight}} or None")
        for spec, w in (members or {}).items():
            self.add(spec, w)

    def add(self, agent: Any, weight: float, name: str | None = None) -> None:
        """Add ``agent`` (a name, a saved model's path or an object with ``act``) with
        ``weight``, under ``name`` (default: the agent's name)."""
        weight = _check_weight(weight, agent)
        if name is not None and not is_name(name):
            # before: a control character or a blank name was taken into the pool's tables
            raise ValueError(f"opponent name={shown(name, 60)} ({type(name).__name__}); allowed: "
                             f"None (the agent's own name) or 1 to {MAX_TEXT} printable "
                             f"characters without spaces at its ends")
        # an object goes by its label (agent_label: its name where that is text, else its class
        # name; before, any name, or a repr that may hold a newline)
        name = name or (agent if isinstance(agent, str) else os.fspath(agent)
                        if isinstance(agent, os.PathLike) else agent_label(agent))
        if name in self.names:
            raise ValueError(f"opponent pool already has {name!r}; members: "
                             f"{', '.join(map(repr, self.names))}; give another name")
        self._check_change(self.weights + [weight], f"adding {name!r}")
        self.agents.append(make_agent(agent, self.rules))
        self.names.append(cast(str, name))
        self.weights.append(weight)

    def _index(self, name: Any) -> int:
        if not isinstance(name, str) or name not in self.names:
            raise ValueError(f"opponent pool has no member {name!r}; members: "
                             f"{', '.join(map(repr, self.names)) or 'none'}")
        return self.names.index(name)

    def remove(self, name: str) -> None:
        """Remove the member ``name`` from the next deals; refused (the pool unchanged) where
        it would leave a pool that has a member of positive weight without one."""
        k = self._index(name)
        self._check_change(self.weights[:k] + self.weights[k + 1:], f"removing {name!r}")
        del self.agents[k], self.names[k], self.weights[k]

    def set_weight(self, name: str, weight: float) -> None:
        """Set the weight of the member ``name`` for the next deals; refused (the pool
        unchanged) where it would leave no member of positive weight, or weights whose sum is
        not finite."""
        k = self._index(name)
        weight = _check_weight(weight, name)
        self._check_change(self.weights[:k] + [weight] + self.weights[k + 1:],
                           f"weight {weight:g} for {name!r}")
        self.weights[k] = weight

    def reweight(self, weights: Mapping[str, float]) -> None:
        """Every member's weight at once: the members named in ``weights`` take theirs, the
        others leave the pool (finishing the games they were dealt); refused, the pool
        unchanged, where a name is no member, a weight is not one, or the new weights leave
        no member of positive weight or sum to infinity."""
        if not isinstance(weights, Mapping):
            raise ValueError(f"opponent pool weights={shown(weights, 60)} ({type(weights).__name__}); "
                             f"allowed: a dict of member name -> weight")
        checked = {self.names[self._index(n)]: _check_weight(w, n) for n, w in weights.items()}
        keep = [k for k, n in enumerate(self.names) if n in checked]
        new = [checked[self.names[k]] for k in keep]
        self._check_change(new, "the new weights")
        self.agents = [self.agents[k] for k in keep]
        self.names = [self.names[k] for k in keep]
        self.weights = new

    def _check_change(self, weights: list[float], what: str) -> None:
        """Refuse a change to ``weights`` that a game being dealt could not draw from: an
        environment draws at its next deal, in the middle of a step, where a refusal would
        lose that step's results."""
        if sum(self.weights) > 0 and not sum(weights) > 0:
            raise ValueError(f"opponent pool: {what} would leave no member of positive weight; "
                             f"allowed: add a member or give one a positive weight first")
        if not math.isfinite(sum(weights)):
            raise ValueError(f"opponent pool: {what} would make the weights' sum infinite; "
                             f"allowed: weights whose sum is a finite number")

    def probabilities(self) -> np.ndarray:
        total = sum(self.weights)   # Python floats: inf past the largest, no NumPy warning
        if not self.weights or total <= 0:
            raise ValueError("the opponent pool is empty (no member with a positive weight)")
        if not math.isfinite(total):
            raise ValueError(f"the opponent pool's weights sum to {total}; allowed: weights "
                             f"whose sum is a finite number")
        w = np.asarray(self.weights, np.float64)
        return w / w.sum()

    def draw(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        """Members drawn by weight, an int64 array of ``shape``: the same draws as
        ``rng.choice(len(pool), size=shape, p=pool.probabilities())``, which inverts the
        normalised cumulative weights at ``rng.random(shape)`` (tests compare the two).
        Written out because ``choice`` checks ``p`` again at every call: about 20 us where
        this takes under 2, and a learner's table deals a game or two at nearly every step.
        The cumulative weights are kept until the weights change. ``rng`` not a NumPy
        ``Generator`` is one ``ValueError`` (before: an ``AttributeError`` from ``None``)."""
        check_rng("rng", rng)
        key = tuple(self.weights)
        if self._cdf is None or self._cdf[0] != key:
            cdf = self.probabilities().cumsum()
            cdf /= cdf[-1]
            self._cdf = (key, cdf)
        return self._cdf[1].searchsorted(rng.random(shape), side="right")

    def __repr__(self) -> str:
        return "OpponentPool(" + ", ".join(f"{n}: {w:g}" for n, w in zip(self.names, self.weights)) + ")"


def _check_weight(weight: Any, agent: Any) -> float:
    """``weight`` as a float, or one ``ValueError``: a whole number past the largest float
    is refused as infinity is (before: Python's ``OverflowError`` from ``math.isfinite``), and
    -0.0 is kept as 0.0 (before: shown "-0", its probability -0.0)."""
    try:
        ok = is_real(weight) and math.isfinite(weight) and weight >= 0
    except OverflowError:   # an int too large for a float
        ok = False
    if not ok:
        raise ValueError(f"opponent weight {shown(weight, 40)} ({type(weight).__name__}) for "
                         f"{agent!r}; allowed: a finite number >= 0 (not a bool)")
    return float(weight) + 0.0


_SPECS = ("an agent (a name, a saved model's path or an object with act) for every seat, a "
          "list or tuple of {k} agents (one per opponent seat, from the learner's left), or "
          "a dict / OpponentPool of agents and weights (drawn per game)")


def check_rule_overrides(overrides: Mapping[str, Any], env: str, init: Callable[..., Any],
                         learner: bool = True) -> None:
    """The keyword arguments an environment passes on to the rules as options: one that names
    an environment's setting rather than a rule option (``seed``; ``seat`` where the env has
    a ``learner``; ``max_episode_steps``, which ``gymnasium.make_vec`` hands to the vector
    entry point) is refused with where that setting goes, and any other that is no rule
    option with the names the environment takes: its own (``init``'s parameters) and the
    rule options (before: the rule options alone, as if ``opponent=`` had been meant as
    one)."""
    if "seed" in overrides:
        raise ValueError(f"seed={shown(overrides['seed'], 40)}: {env} takes its seed in "
                         f"reset(seed=...), as Gymnasium's and PettingZoo's environments do")
    if learner and "seat" in overrides:
        raise ValueError(f"seat={shown(overrides['seat'], 40)}: the learner's seat is learner_seat "
                         f"(0..N-1 or 'random', the default)")
    if "max_episode_steps" in overrides:
        raise ValueError(f"max_episode_steps={shown(overrides['max_episode_steps'], 40)}: {env} "
                         f"ends a game that reaches max_decisions decisions (truncated); give "
                         f"max_decisions")
    if "preset" in overrides:   # before: refused as a rule option, without this hint
        raise ValueError(f"preset={shown(overrides['preset'], 40)}: {env} takes the preset as "
                         f"rules (rules='ono', or a mapping rules={{'preset': 'ono', ...}})")
    unknown = sorted(str(k) for k in overrides if k not in FIELD_NAMES)
    if unknown:
        import inspect

        own = [name for name, p in inspect.signature(init).parameters.items()
               if name != "self" and p.kind is not p.VAR_KEYWORD]
        options = [name for name in FIELD_NAMES if name not in own]
        close = nearest(unknown[0], own + options)
        meant = f" (did you mean {close!r}?)" if close else ""
        raise ValueError(f"{env}: unknown argument(s) "
                         f"{first_few([shown(k, 40) for k in unknown])}{meant}; allowed: "
                         f"its own ({', '.join(own)}) and the rule options ({', '.join(options)})")


def make_opponents(spec: Any, rules: RuleSet) -> list[Agent] | OpponentPool:
    """Opponents from a spec (see the module docstring): a list with one policy per seat
    to the learner's left, or an :class:`OpponentPool` (made for ``rules``)."""
    num_players = check_rule_set("make_opponents", rules).num_players
    if isinstance(spec, OpponentPool):
        if spec.rules != rules:
            raise ValueError(f"opponents: an OpponentPool made for the rules {spec.rules!r}; "
                             f"this environment plays {rules!r}")
        return spec
    if isinstance(spec, Mapping):
        pool = OpponentPool(spec, rules)
        pool.probabilities()  # refuses an empty pool now rather than at the first deal
        return pool
    if _is_agent(spec):
        spec = [spec] * (num_players - 1)
    if not isinstance(spec, (list, tuple)):
        raise ValueError(f"opponents={shown(spec, 80)} ({type(spec).__name__}); allowed: "
                         + _SPECS.format(k=num_players - 1))
    spec = list(spec)
    if len(spec) != num_players - 1:
        raise ValueError(f"opponents: {len(spec)} given for {num_players} players; allowed: "
                         + _SPECS.format(k=num_players - 1))
    built: dict[Any, Agent] = {}
    out = []
    for s in spec:
        key = s if isinstance(s, str) else id(s)
        if key not in built:  # one object per name, so its rows are batched together
            built[key] = make_agent(s, rules)
        out.append(built[key])
    return out


class OpponentDriver:
    """Plays a learner's opponents (through the one :class:`~ono_env.agents.driver.AgentDriver`
    loop) until every unfinished game waits for its learner.

    ``start`` begins episodes (learner seats, opponents, the compiled random opponents'
    generators, the opponents' opening moves, deals again when needed); ``advance`` plays
    the opponents after each learner move. ``member[i, k-1]`` is the index into ``agents``
    of the opponent ``k`` seats to the learner's left in game ``i``. With a pool, ``agents``
    holds the members dealt into some game: a member removed from the pool stays until its
    games are dealt again."""

    short_paths = True
    """False: :meth:`assign` always renumbers the members and :meth:`advance` sets the seats
    at every call, the long ways the short ones must match (tests compare them)."""

    def __init__(self, game: VecGame, opponents: Sequence[Agent] | OpponentPool) -> None:
        self.game = game
        n = game.num_players
        B = game.num_games
        self.pool = opponents if isinstance(opponents, OpponentPool) else None
        self.member = np.zeros((B, n - 1), np.int64)
        self.agents: list[Agent] = []
        if not isinstance(opponents, OpponentPool):   # (self.pool is None)
            for k, agent in enumerate(opponents):
                self.member[:, k] = self._slot(agent)
        self.driver = AgentDriver(game, self.agents)
        self._rows = np.arange(B)
        self._offsets = np.arange(1, n)
        self._dealt = np.zeros(B, np.bool_)
        self._rewards = np.zeros((B, n), np.float64)
        self.pending = np.zeros(B, np.float64)
        """(B,) the learner's rewards from the opponents' moves before its first decision
        of the episode (non-zero only with per-round rewards in a match); the adapters add
        them to the episode's first step (:meth:`take_pending`)."""
        self.redeals = 0
        """Deals that ended before the learner's first decision and were dealt again."""
        self._seated: np.ndarray | None = None
        """The learner array the driver's seats were last set from (None: set them again)."""

    def _slot(self, agent: Agent) -> int:
        """The index of ``agent`` in ``self.agents`` (appended when absent)."""
        for j, q in enumerate(self.agents):
            if q is agent:
                return j
        self.agents.append(agent)
        return len(self.agents) - 1

    def assign(self, which: np.ndarray, rng: np.random.Generator) -> None:
        """Draw the opponents of the games in ``which`` (pool only; fixed opponents stay).
        The other games keep theirs, even members since removed from the pool.

        ``agents`` is rebuilt in a canonical order (the pool's members in pool order, then
        removed members still seated), keeping only the agents some dealt game uses: the
        order the Python agents draw from the shared generator then depends only on the
        pool and the deals, not on what the environment did before a seeded reset."""
        self._seated = None
        if self.pool is None:
            return
        k = int(np.count_nonzero(which))
        drawn = self.pool.draw(rng, (k, self.member.shape[1]))
        members = self.pool.agents
        if self.short_paths and self._fast_assign(which, drawn, members):
            return
        # one id per distinct object: a pool member's first index, then extras after them
        # (found by id(): the objects are alive in these lists meanwhile)
        at: dict[int, int] = {}
        for q, a in enumerate(members):
            at.setdefault(id(a), q)
        first = np.array([at[id(a)] for a in members], np.int64)
        extras = [a for a in self.agents if id(a) not in at]
        everyone = list(members) + extras
        for q, a in enumerate(extras, len(members)):
            at.setdefault(id(a), q)
        old_ids = np.array([at[id(a)] for a in self.agents], np.int64)
        keep = self._dealt & ~which
        ids = np.zeros_like(self.member)
        if len(old_ids):
            ids[keep] = old_ids[self.member[keep]]
        ids[which] = first[drawn]
        self._dealt |= which
        used = np.bincount(ids[self._dealt].ravel(), minlength=len(everyone)) > 0
        remap = np.cumsum(used) - 1
        self.member[:] = np.where(self._dealt[:, None], remap[ids], 0)
        self.agents[:] = [a for a, u in zip(everyone, used) if u]

    def _fast_assign(self, which: np.ndarray, drawn: np.ndarray, members: list[Agent]) -> bool:
        """:meth:`assign`'s result the short way, in its common case: ``agents`` is the
        pool's members, in pool order, each a distinct object, and every one of them still
        plays in some dealt game after the draw. Then a member's index is its pool index and
        nothing is renumbered. Returns False (nothing changed) where that does not hold."""
        agents = self.agents
        if len(agents) != len(members) or any(a is not b for a, b in zip(agents, members)) \
                or len({id(a) for a in members}) != len(members):
            return False
        member = self.member.copy()
        member[which] = drawn
        dealt = self._dealt | which
        if np.bincount(member[dealt].ravel(), minlength=len(members)).min() == 0:
            return False
        self._dealt = dealt
        self.member[:] = np.where(dealt[:, None], member, 0)
        return True

    def start(self, which: np.ndarray, learner: np.ndarray, learner_seat: int | str,
              rng: np.random.Generator) -> int:
        """Begin the episodes of the games in ``which`` (just dealt): choose each learner's
        seat (``learner_seat``: a seat, or ``"random"``), draw the opponents, reseed the
        compiled random opponents, and play up to each learner's first turn, everything
        drawn from ``rng`` (so a seeded generator fixes the episodes). A game that ends before
        its learner's first decision (possible with tiny hands) is dealt again: a learner is
        never handed a finished game. Returns the opponent decisions taken."""
        game = self.game
        n = game.num_players
        taken = 0
        todo = np.array(which, np.bool_, copy=True)
        self._dealt |= todo
        for _ in range(MAX_REDEALS):
            k = int(todo.sum())
            if k == 0:
                return taken
            learner[todo] = (rng.integers(n, size=k) if learner_seat == "random"
                             else learner_seat)
            self.assign(todo, rng)   # (marks the seats to be set again)
            self.driver.seed_games(todo, rng)
            taken += self.advance(learner, rng)
            self.pending[todo] = self._rewards[todo, learner[todo]]
            todo &= game.finished
            self.redeals += int(todo.sum())
            if todo.any():
                game.reset(which=todo)
        raise RuntimeError(f"{MAX_REDEALS} deals in a row ended before the learner's first "
                           f"decision: these rules leave the learner no game to play")

    def take_pending(self) -> np.ndarray:
        """The learner's rewards from the opening moves not yet reported (see ``pending``),
        then zero."""
        out = self.pending.copy()
        self.pending[:] = 0.0
        return out

    def advance(self, learner: np.ndarray, rng: np.random.Generator,
                learner_rewards: np.ndarray | None = None) -> int:
        """Play opponent decisions until each unfinished game is at its learner's turn.
        Adds the learner's rewards from these steps to ``learner_rewards`` ((B,) float).
        Returns the number of opponent decisions taken."""
        game, driver = self.game, self.driver
        n = game.num_players
        # who sits where changes only at a deal (start and assign mark it): between deals the
        # seats are those of the last call with the same learner array
        if self._seated is not learner or not self.short_paths:
            if not self._dealt.all():
                raise RuntimeError("OpponentDriver.advance before start() dealt every game")
            driver.agents = self.agents
            seats = (learner[:, None] + self._offsets[None, :]) % n
            driver.seat_agent[self._rows[:, None], seats] = self.member
            driver.seat_agent[self._rows, learner] = -1
            self._seated = learner
        self._rewards[:] = 0.0
        taken = driver.play(rng, self._rewards)
        if learner_rewards is not None:
            learner_rewards += self._rewards[self._rows, learner]
        return taken


@contextmanager
def midway(call: str, stop: Callable[[str], None]) -> Iterator[None]:
    """Around the part of a learner environment's ``step()`` or ``reset()`` after which the
    games may be left between turns: when it raises (an opponent's error, an interrupt), the
    learner's move was made and the opponents' were not, so the games wait at an opponent's
    turn, where a learner's action must not be played. ``stop`` is given the message that
    every ``step()`` then raises until a reset deals the games again; the error goes on."""
    try:
        yield
    except BaseException as exc:
        stop(f"step() after {call} failed midway ({type(exc).__name__}: {cut(str(exc), 200)}): the "
             f"games stopped between turns; call reset()")
        raise
