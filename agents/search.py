"""Search agents: determinized search over the seat's view of the position.

``pimc`` (Perfect-Information Monte Carlo) plays every decision by sampling worlds
consistent with what the acting seat knows and playing each legal action out to the end of
the round in every world, in compiled code on the engine's own rules
(``ono_env.agents._search.pimc_search``). ``oracle-hands`` and ``oracle`` are the same search
given hidden information: they CHEAT and exist only as ceilings (how much of the game is
the deal, how much is play). Names (``make_agent``):

=========================  =================================================================
``pimc``, ``pimc:N``       N worlds per decision (default 64), greedy playouts, and greedy's
                           own choice kept unless clearly beaten (:func:`default_margin`)
``pimc-plain:N``           the same without that preference (the plain argmax)
``pimc-ppo:N``             the same search, keeping the choice of the shipped PPO policy for
                           the rules (``ppo-basic-2p``, ...) unless clearly beaten
                           (:func:`prior_margin`); where no specialist fits the rules and
                           the player count, the generalist ``ppo-any``
``pimc-ppo-playout:N``     ``pimc-ppo`` with the shipped policy also playing the playouts,
                           for every seat (a learned playout policy; 3 to 9 times slower
                           per world than greedy playouts under ``basic`` at 2-10 players,
                           about 30 times with ``ppo-any`` under ``ono`` at 6)
``pimc-random:N``          plain, with uniformly random playouts
``ismcts:N``               Information-Set MCTS, N iterations (default 500), greedy playouts
``ismcts-random:N``        the same with random playouts
``oracle-hands:N``         CHEATING: sees every opponent's hand; samples only the stock order
``oracle:N``               CHEATING: sees everything, the stock order included
``oracle-ppo:N``           CHEATING: ``pimc-ppo`` seeing every opponent's hand (the shipped
                           policy's choice kept unless the playouts clearly beat it)
=========================  =================================================================

``oracle-hands`` and ``oracle`` take the plain argmax, as ``pimc-plain``: where every legal
action's playouts end alike (all lost or all won), they pick any of them, a voluntary draw
or a false catch included. Under ``ono`` that takes ``oracle-hands:8`` from 47.9% (ties
broken by greedy's choice) to 21.7% against ``greedy`` (``benchmarks/bench_ceiling_ties.py``;
docs/benchmark.md).
``oracle-ppo`` breaks them, and every close call, as ``pimc-ppo`` does, so that it differs
from ``pimc-ppo`` only in what it sees: the hidden hands' worth to the same search.

The budget ``N`` counts worlds: in each world every legal action gets one playout (so a
decision costs N x (legal actions) playouts) for ``pimc`` and the ceilings, and iterations
(one playout each) for ``ismcts``; measured strength and times per decision are in the
ladder (docs/arena.md). A decision with one legal action is returned without search. Every name
also takes a time budget, ``name:<T>ms`` (``pimc:20ms``): worlds (iterations) are then
sampled for each decision until T milliseconds of wall time have passed
(``SearchAgent._act_timed``), so the decisions depend on the machine's speed.

A learned playout policy (``pimc-ppo-playout``, or ``SearchAgent(policy=<LearnedAgent>)``)
runs its network inside the compiled playouts (``ono_env.agents._search.pack_network``,
``_net_choice``): the NumPy network would cost a Python call per playout decision, and a
batched one would need the playouts of all worlds to advance in lockstep. With
``playout_opponents`` (``SearchAgent(policy=<LearnedAgent>, playout_opponents="color")``)
the network plays only the searching seat and a compiled baseline every other seat: a model
of the opponents the seat faces. The hidden
layers skip zero inputs (the observation is mostly zeros) and tanh is a rational
approximation within 1e-4 (``_squash``), so a decision of the shipped 128 x 128 networks
costs about 3 us.

ISMCTS is single-observer ISMCTS (Cowling, Powley and Whitehouse 2012): one tree of action
sequences for all seats, a world sampled from the view at every iteration, UCB1 with
availability counts (constant :data:`EXPLORE`), untried actions expanded in the greedy's
order. Playouts run to the end of the round: the value is a round win in single-round rules;
in a match, a logistic of the points the seat gained over its rivals in the round
(``ono_env.agents._search._round_values``; the match result when the round ends it); a cut
playout scores 1/N.

What the agent sees
    Search needs the position, not the 241-float observation, so a search agent has
    ``uses_game = True`` and ``act_game(game, rows, rng)``: :class:`~ono_env.agents.driver.AgentDriver`
    calls it with the live :class:`~ono_env.game.VecGame` and the rows the agent plays. Its
    FIRST step is ``ono_env.agents._search.seat_view``, a compiled copy of those rows that blanks
    everything hidden from the acting seat (the other hands except their sizes and calls, the
    stock order, the game's generator, the Wild Draw Four bluff flag); nothing else reads
    ``game`` but the policy of ``pimc-ppo`` (and ``oracle-ppo``), which is given the acting
    seat's observation and legal mask, as every learned agent is. The worlds are then sampled from the view only:
    the unseen cards (deck minus own hand minus discard pile) listed by card type, shuffled
    with the agent's generator and dealt by the known hand sizes, the rest as the stock; a
    pending Wild Draw Four's bluff flag is re-derived from its player's sampled hand. The
    one piece of public history the engine keeps is used: where the rules allow no
    voluntary draw (``basic``), a player who drew held nothing playable, and the part of
    its hand that it still holds from then (the state's ``lacks`` and ``known``, kept by
    the engine for every seat) is dealt only from card types that were not playable. Other
    history (what a player's choices of colour suggest, which cards a swap showed its
    taker) is not used, unless the search models its opponents by a baseline and deals its
    worlds to fit them (``model_deals``): each world is then dealt again, up to that many
    times, until every opponent's last play and the colour it named are what the baseline
    would have done with the hand the world gives it
    (``ono_env.agents._search._model_misses``, from the plays, the colours named and the
    discard pile: what every player saw).
    ``tests/test_search.py`` swaps cards between hidden places and checks the decisions do
    not change.

Where search agents play
    Everywhere the driver plays agents: ``ono-arena``/:func:`~ono_env.arena.run_arena`
    (including ``--mirrored``), the environments' ``opponents`` and training pools, and the
    terminal and web tables (``ono-play``, ``ono-web``), which ask every agent through
    :func:`ono_env.agents.driver.act_one`; there (and in recorded replays) a search agent reports the
    mean playout result of each legal action (``last_values``). Asked through ``act(obs,
    mask, rng)`` with only an observation, a search agent refuses with a clear error.

Deterministic given the generator passed to ``act_game``: one 64-bit seed is drawn per row.
"""

from __future__ import annotations

import math
import re
import threading
import time
import weakref
from typing import Any, cast

import numpy as np

from ono_env import _engine as E
from ono_env import cards as C
from ono_env.agents.base import (
    check_actions,
    checked_actions,
    is_cheating,
    named,
    observation_version,
    plays_from_game,
)
from ono_env.checks import (
    MAX_TEXT,
    check_int,
    check_rng,
    check_rows,
    is_name,
    is_real,
    shown,
)
from ono_env.game import VecGame, kernel_entry
from ono_env.observation import OBS_V2_SIZE, observation_size
from ono_env.rules import resolve_rules

_KERNELS: tuple | None = None


def _kernels() -> tuple:
    """``(seat_view, pimc_search, ismcts_search, views, policies)`` of
    ``ono_env.agents._search``, imported (so its kernels loaded, prebuilt or from numba's cache,
    or compiled) on the first search: importing ono_env and its agents does not pay for
    them. ``policies`` maps the playout policy names to their codes, ``"learned"`` to the
    network's, ``"learned_against"`` to the first of the network-against-a-baseline codes."""
    global _KERNELS
    if _KERNELS is None:
        from ono_env.agents import _search as K
        _KERNELS = (kernel_entry(K.seat_view), kernel_entry(K.pimc_search), kernel_entry(K.ismcts_search),
                    {"fair": K.VIEW_FAIR, "hands": K.VIEW_HANDS, "all": K.VIEW_ALL,
                     "colors": K.VIEW_COLORS},
                    dict(K.POLICY_CODES, learned=K.POLICY_NET,
                         learned_against=K.POLICY_NET_AGAINST))
    return _KERNELS

DEFAULT_WORLDS = 64
"""Worlds per decision of a PIMC search named without a budget (``pimc``)."""
DEFAULT_ITERATIONS = 500
"""Iterations per decision of an ISMCTS search named without a budget (``ismcts``)."""
EXPLORE = 0.7
"""UCB1 exploration constant of ISMCTS (rewards in [0, 1]; Cowling et al. use 0.7)."""
MAX_WORLDS = 1_000_000
"""The largest world or iteration budget per decision (``name:<N>``)."""
MAX_TIME_MS = 60_000.0
"""The largest time budget per decision (``name:<T>ms``): one minute."""
MIN_TIME_MS = 1e-6
"""The smallest time budget per decision: a nanosecond (``0.000001``; a budget shorter than
one world's playouts searches one world, and a smaller number would only make the search's
name long: 5e-324 wrote 324 digits into it)."""
SEARCH_PIECE = 4096
"""About how many worlds one compiled search call of a fixed budget takes on (rows of at most
``SEARCH_PIECE // worlds`` games, at least one): between calls Python sees a Ctrl-C."""
MAX_PLAYOUT = 5_000
"""Decisions after which a playout is cut and scored 1/N (a random playout in ``ono`` can
run on and on)."""

VIEWS = ("fair", "hands", "all", "colors")
"""What a search agent sees: its seat's view, or (CHEATING) also the hands, or everything, or
how many cards of each colour every hand holds."""
POLICIES = ("random", "greedy", "color", "defensive")
"""Playout policies by name: the baselines, compiled (ono_env.agents._baselines, equal to
agents/rule_based.py). A learned policy (a :class:`~ono_env.agents.learned.LearnedAgent`
for the rules) is the other kind of playout policy: its network runs in the compiled
playouts (``ono_env.agents._search.pack_network``)."""
MODEL_POLICIES = ("greedy", "color", "defensive")
"""The baselines a search may deal its worlds to fit (``model_deals``): deterministic but
for ties, and each names the colour it holds most of after a wild."""
MAX_MODEL_DEALS = 4096
"""The most deals per world of ``model_deals``."""


def _check_budget(worlds: Any, time_ms: Any, time_cap_ms: Any, margin: Any,
                  whose: str = "") -> None:
    """One ``ValueError`` naming the first of a search's budget settings out of its range:
    ``worlds`` (iterations, at most :data:`MAX_WORLDS` as read now, but under a time budget,
    whose worlds only scale its margin and are capped as it samples them), ``time_ms``,
    ``time_cap_ms`` and ``margin``; ``whose`` leads each name ("the search's ": attributes
    set after construction)."""
    most = MAX_WORLDS if time_ms is None else math.inf
    if not isinstance(worlds, (int, np.integer)) or isinstance(worlds, bool) \
            or not 1 <= worlds <= most:
        allowed = "of at least 1" if most == math.inf else f"from 1 to {int(most)}"   # as checked
        raise ValueError(f"{whose}worlds = {worlds!r}; allowed: an integer {allowed}")
    for key, value in (("time_ms", time_ms), ("time_cap_ms", time_cap_ms)):
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, (int, float, np.number))
                                  or not MIN_TIME_MS <= value <= MAX_TIME_MS):
            raise ValueError(f"{whose}{key} = {value!r}; allowed: None, or a number of "
                             f"milliseconds from {MIN_TIME_MS:f} to {MAX_TIME_MS:g}")
    if not is_real(margin) or math.isnan(margin):
        raise ValueError(f"{whose}margin={margin!r} ({type(margin).__name__}); allowed: a number "
                         f"(negative: no prior, the plain argmax)")


class SearchAgent:
    """Perfect-information Monte Carlo from the acting seat's view (module docstring).

    Args:
        rules: the rule set it plays.
        worlds: worlds sampled per decision (every legal action gets one playout in each).
        policy: playout policy, a baseline played in compiled code: ``"greedy"`` (the
            default), ``"color"``, ``"defensive"`` or ``"random"``; or a learned policy (a
            :class:`~ono_env.agents.learned.LearnedAgent` made for these rules), whose
            network then plays every seat in the playouts, each from its own observation in
            the world, taking its most likely legal action.
        view: ``"fair"``; ``"hands"``, ``"all"`` and ``"colors"`` CHEAT (opponents' hands;
            also the stock order; how many cards of each colour and each wild type each hand
            holds, its ranks dealt at random) and are for ceilings and probes only.
        margin: pimc keeps a prior's choice unless the best action's mean playout result
            beats it by more than ``margin``; negative: no prior, the plain argmax (an ismcts
            search reads none: a margin of 0 or more is refused there).
        prior: the agent whose choice ``margin`` keeps: None for the compiled ``greedy``, or
            an agent that plays from the acting seat's observation (a learned policy, asked
            with ``act(obs, mask, rng)``: it sees only what the seat may know), read with a
            margin of 0 or more or as a ``belief``'s model (refused otherwise, and when it is
            a search agent itself).
        time_ms: instead of ``worlds`` worlds (iterations), sample worlds for each decision
            until this many milliseconds (0.000001 to 60,000) of wall time have passed (at
            least one world, at most ``MAX_WORLDS``;
            worlds are added in batches sized from the time the earlier ones took, and no
            batch is started that would not end in time). pimc's ``margin`` is then the
            margin at ``worlds`` worlds and scales as 1 / sqrt(worlds sampled). Decisions
            then depend on the machine's speed and load: for reproducible runs give a
            number of worlds (and leave the attribute ``time_cap_ms`` None; the web table
            sets it).
        name: the name it plays under (None: what the search is, the registry's spec where
            it is one of its agents, ``pimc-plain:8``, ``ismcts:8``, ``oracle:8``, else a
            description, ``pimc search (8 worlds, color playouts, view colors)``).
        method: ``"pimc"`` (the default: every legal action played out in each world) or
            ``"ismcts"`` (information-set Monte Carlo tree search, ``worlds`` iterations).
        playout_opponents: with a learned ``policy``, a baseline that every other seat plays
            in the playouts (``"color"``, ...; compiled), while the searching seat plays the
            network: the search's model of its opponents. None: the network plays every seat.
        belief: (2 players, a fixed number of worlds, a learned ``prior``) a temperature:
            the search assumes the opponent plays like ``prior`` and weighs each world by
            how likely the prior's network (softmax of its logits / belief) makes the
            opponent's last play with that world's hand. It keeps the seat's own view and
            action at each decision, per game of the VecGame it plays in, and rebuilds the
            opponent's decision from them; where the opponent did not play a card from its
            hand right after the seat's action (or that action drew cards, or the game object
            changed), every world counts alike. None: no belief.
        model_deals: (pimc, the seat's fair view, opponents modelled by a rule-based
            baseline: ``playout_opponents``, or else the playout ``policy``, one of
            :data:`MODEL_POLICIES`) deal each world up to this many times (at most
            :data:`MAX_MODEL_DEALS`), until every opponent's last play, and the colour it
            named after a wild, is what that baseline would have played with the hand the
            world gives it; else play the deal that agrees with the most opponents
            (``ono_env.agents._search._model_misses`` says what is checked). It reads only
            what every player saw: the plays, the colours named, the discard pile. 1 (the
            default): every world as dealt.
    """

    uses_game = True
    uses_observation = False
    model_deals = 1   # a pickle of before model_deals reads this

    def __init__(self, rules: Any = None, worlds: int = DEFAULT_WORLDS, policy: str = "greedy",
                 view: str = "fair", name: str | None = None, method: str = "pimc",
                 margin: float = -1.0, prior: Any = None,
                 time_ms: float | None = None, belief: float | None = None,
                 playout_opponents: str | None = None, model_deals: int = 1) -> None:
        self.rules = resolve_rules(rules)
        _check_budget(worlds, time_ms, None, margin)
        self._net: tuple[np.ndarray, np.ndarray] | None = None
        self._playout_agent = None if isinstance(policy, str) else policy
        if isinstance(policy, str):
            if policy not in POLICIES:
                raise ValueError(f"policy = {policy!r}; allowed: {', '.join(POLICIES)}, or a "
                                 f"learned policy (LearnedAgent) for these rules")
        else:
            self._net = _playout_network(policy, self.rules)
            policy = f"learned:{getattr(policy, 'name', 'policy')}"
        if playout_opponents is not None and (self._net is None or playout_opponents not in POLICIES):
            raise ValueError(f"playout_opponents = {playout_opponents!r}; allowed: None, or with a "
                             f"learned playout policy one of {', '.join(POLICIES)}")
        self.playout_opponents = playout_opponents
        """The baseline every other seat plays in the playouts (None: the playout policy)."""
        if view not in VIEWS:
            raise ValueError(f"view = {view!r}; allowed: {', '.join(VIEWS)}")
        if method not in ("pimc", "ismcts"):
            raise ValueError(f"method = {method!r}; allowed: pimc, ismcts")
        if prior is not None and (method != "pimc" or not callable(getattr(prior, "act", None))):
            raise ValueError(f"prior = {prior!r}; allowed: None, or for a pimc search an "
                             f"agent with act(obs, mask, rng)")
        if prior is not None and plays_from_game(prior):   # before: taken, and refused at
            # its first decision
            raise ValueError(f"prior = {prior!r}: a search agent; allowed: an agent that "
                             f"chooses from the observation (a learned or rule-based agent)")
        if prior is not None:   # before: a prior made for other rules was taken, and played
            from ono_env.agents.registry import check_made_for
            check_made_for(prior, self.rules, "the prior ")
        self._net_belief: tuple[np.ndarray, np.ndarray] | None = None
        if belief is not None:
            if (isinstance(belief, bool) or not isinstance(belief, (int, float, np.number))
                    or not 0 < belief <= 100):
                raise ValueError(f"belief = {belief!r}; allowed: None, or a temperature above 0 "
                                 f"and at most 100")
            if self.rules.num_players != 2 or method != "pimc" or view != "fair" \
                    or time_ms is not None or not hasattr(prior, "net"):
                raise ValueError("belief: a fair 2-player pimc search with a fixed number of "
                                 "worlds and a learned prior (its network models the opponent)")
            # the opponent's model: the prior's, checked against the rules as a playout
            # policy is (before: a prior for other rules was taken, and its network read
            # another layout's observations in the compiled search: the process crashed)
            from ono_env.agents.learned import LearnedAgent
            if not isinstance(prior, LearnedAgent):
                raise ValueError(f"the prior {prior!r}: a belief reads its network; allowed: a "
                                 f"learned policy (LearnedAgent) for these rules")
            self._net_belief = _playout_network(prior, self.rules, "the prior")
            if self._net is not None and not all(
                    np.array_equal(x, y) for x, y in zip(self._net, self._net_belief)):
                raise ValueError("belief: the playouts' network must be the prior's (the one "
                                 "network of the search's kernels), or use baseline playouts")
        if (isinstance(model_deals, bool) or not isinstance(model_deals, (int, np.integer))
                or not 1 <= model_deals <= MAX_MODEL_DEALS):
            raise ValueError(f"model_deals = {model_deals!r}; allowed: an integer from 1 (every "
                             f"world as dealt) to {MAX_MODEL_DEALS}")
        model = playout_opponents if playout_opponents is not None else policy
        if model_deals > 1 and (method != "pimc" or view != "fair"
                                or model not in MODEL_POLICIES):
            raise ValueError(f"model_deals = {model_deals}: a fair pimc search whose opponents "
                             f"are modelled by a baseline (playout_opponents, or else the "
                             f"playout policy: {', '.join(MODEL_POLICIES)}); this one: method "
                             f"{method!r}, view {view!r}, opponents {model!r}")
        self.model_deals = int(model_deals)
        """Deals per world until the opponents' last plays are their model's (1: every world
        as dealt)."""
        self.belief = None if belief is None else float(belief)
        """Weigh each world by the prior network's probability (softmax at this temperature)
        of the opponent's last play with that world's hand (None: every world alike)."""
        self._memory: tuple | None = None
        self._busy = threading.Lock()   # act_game's, one thread at a time
        self.time_ms = None if time_ms is None else float(time_ms)
        """The wall time per decision (ms) that replaces the fixed number of worlds
        (iterations)."""
        self.last_worlds: np.ndarray | None = None
        """(R,) worlds (ismcts: iterations) sampled for each row at the last call (0 where
        one action was legal)."""
        self.last_prior: np.ndarray | None = None
        """(R,) the prior's choice for each row at the last call, the action the search kept
        unless beaten by more than ``margin`` (pimc with a ``prior`` agent and a margin of 0
        or more; -1 elsewhere: no prior agent, or no margin)."""
        self.clock = time.perf_counter
        """The clock of time budgets (seconds; tests replace it)."""
        self.time_cap_ms: float | None = None
        """A fixed budget's wall-time cap per decision (ms; None: none, the default): its
        worlds (iterations) then run in batches, as a time budget's do (a seed a batch, the
        batches' values pooled: not the compiled search's one call, so not the arena's
        ``pimc:N`` move for move), until they are all run or the time is spent, whichever
        comes first. Not read by a search with a belief, which needs its fixed worlds. The
        web table sets it, so that a budget of worlds within its limits cannot hold a worker
        for minutes under rules whose playouts are long."""
        self.method = method
        if name is not None and not is_name(name):
            # before: a control character (a newline, a terminal's escape) was taken
            raise ValueError(f"name={shown(name, 60)} ({type(name).__name__}); allowed: None (the "
                             f"default, what the search is: 'pimc:<worlds>', 'ismcts:20ms', "
                             f"...) or 1 to {MAX_TEXT} printable "
                             f"characters without spaces at its ends")
        if method != "pimc" and margin >= 0:   # before: taken, and named, and never read
            raise ValueError(f"margin = {margin!r}: an ismcts search keeps no prior's choice; "
                             f"allowed: a negative margin (the default) for method ismcts")
        if prior is not None and margin < 0 and belief is None:   # likewise
            raise ValueError(f"prior = {prior!r} with margin {margin:g}: the prior is read only "
                             f"with a margin of 0 or more (or as a belief's model); allowed: a "
                             f"margin of 0 or more, or no prior (the plain argmax)")
        self.margin = float(margin)
        """pimc: keep the prior's choice (``prior``'s, else the compiled greedy's) unless an
        action's mean result beats it by more than this (negative: no preference)."""
        self.prior = prior
        self._obs: np.ndarray | None = None
        self.explore = EXPLORE
        """ismcts: the UCB1 exploration constant."""
        self.worlds = int(worlds)
        """The budget: worlds per decision (pimc) or iterations per decision (ismcts)."""
        self.policy = policy
        self.view = view
        self.name = name or self._default_name()
        self.last_values: np.ndarray | None = None
        """(R, A) mean playout value (round wins) of each legal action at the last call."""

    def _default_name(self) -> str:
        """What the search is (before: ``pimc:<worlds>`` for every search, an ismcts, a time
        budget or a CHEATING view alike): the registry's spec where it is one of its agents
        (``pimc-plain:8``, ``ismcts:8``, ``pimc-random:20ms``, ``oracle:8``, and ``pimc:8``
        with the greedy prior's margin), else a description that no spec reads as
        (``pimc search (8 worlds, color playouts, view colors)``)."""
        budget = _budget_text(self.worlds, self.time_ms)
        if (self.prior is None and isinstance(self.policy, str) and self.belief is None
                and self.playout_opponents is None and self.model_deals == 1):   # perhaps one of the registry's
            for name, (policy, view, method, prior) in _SPECS.items():
                margin_of = {None: self.margin < 0,   # no prior; the compiled greedy's
                             "greedy": self.margin == default_margin(self.worlds)}
                if (method, policy, view) == (self.method, self.policy, self.view) \
                        and margin_of.get(prior, False):
                    return f"{name}:{budget}"
        policy = self.policy if isinstance(self.policy, str) else "learned"
        parts = [f"{self.worlds} {'iterations' if self.method == 'ismcts' else 'worlds'}"
                 if self.time_ms is None else f"{budget[:-2]} ms", f"{policy} playouts"]
        if self.playout_opponents is not None:
            parts.append(f"{self.playout_opponents} opponents")
        if self.view != "fair":
            parts.append(f"view {self.view}")
        if self.margin >= 0:
            parts.append(f"prior at margin {self.margin:g}")
        if self.belief is not None:
            parts.append(f"belief {self.belief:g}")
        if self.model_deals > 1:
            parts.append(f"{self.model_deals} deals a world to fit the opponents")
        return f"{self.method} search ({', '.join(parts)})"

    @property
    def cheating(self) -> bool:
        """True for a search whose view is not ``"fair"``: it reads hidden cards. Read from
        ``view`` at every call (before: set once, so an agent whose ``view`` was changed to
        ``"all"`` afterwards searched every hand unmarked)."""
        return self.view != "fair"

    @property
    def guides(self) -> tuple[Any, ...]:
        """The agents whose policy the search plays from: its prior and its learned playout
        policy, where given (:func:`~ono_env.agents.learned.played_models` reads their
        models)."""
        playout = getattr(self, "_playout_agent", None)   # not in a pickle of before 2026-12-02
        return tuple(a for a in (self.prior, playout) if a is not None)

    def __getstate__(self) -> dict:
        """Pickled (Ray tasks, worker processes) without the belief's memory of past views:
        it belongs to a game object of this process; nor with its lock and scratch buffer,
        which a copy makes afresh."""
        state = self.__dict__.copy()
        state["_memory"] = None
        state["_obs"] = None   # a scratch buffer: a copy's own (before: copy.copy shared it)
        state.pop("_busy", None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._busy = threading.Lock()

    def __repr__(self) -> str:
        cheat = ", CHEATING" if self.cheating else ""
        prior = f", prior={getattr(self.prior, 'name', self.prior)!r}" if self.prior is not None else ""
        budget = f"{self.time_ms:g} ms" if self.time_ms is not None else self.worlds
        against = (f", playout_opponents={self.playout_opponents!r}"
                   if self.playout_opponents is not None else "")
        return (f"SearchAgent({self.name!r}, method={self.method!r}, budget={budget}, "
                f"policy={self.policy!r}{against}, view={self.view!r}{prior}{cheat})")

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        raise ValueError(f"{self.name} is a search agent: it needs the position, not an "
                         f"observation, and plays only through ono_env.agents.driver.AgentDriver "
                         f"(ono-arena, run_arena, the environments' opponents) and "
                         f"ono_env.agents.driver.act_one (ono-play, ono-web)")

    def act_game(self, game: VecGame, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Actions ``(len(rows),) int64`` for the acting seats of ``game``'s games ``rows``.

        One thread at a time: a call while another thread's call runs is one
        ``RuntimeError``. Its scratch buffers and its ``last_values``, ``last_prior`` and
        ``last_worlds`` are the object's (before: threads sharing one agent made other moves
        than each alone, and read each other's values, silently)."""
        busy = self._busy
        if not busy.acquire(False):
            raise RuntimeError(f"{self!r} is deciding in another thread at this moment; "
                               f"allowed: one thread at a time asks a search agent, whose "
                               f"last_values are its last call's (give each thread its own: "
                               f"make_agent again)")
        try:
            return self._act_game(game, rows, rng)
        finally:
            busy.release()

    def _act_game(self, game: VecGame, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        # the budget as it is now: set after construction too (the web table sets
        # time_cap_ms; before: worlds = 0 was a ZeroDivisionError, -3 searched nothing)
        _check_budget(self.worlds, self.time_ms, self.time_cap_ms, self.margin, "the search's ")
        if self.method != "pimc" and self.margin >= 0:   # as the constructor refuses it
            raise ValueError(f"the search's margin = {self.margin!r}: an ismcts search keeps no "
                             f"prior's choice; allowed: a negative margin")
        if not isinstance(game, VecGame):
            raise ValueError(f"act_game: game is a {type(game).__name__}; allowed: a VecGame")
        rows = check_rows("act_game: rows", rows, game.num_games)
        check_rng("act_game: rng", rng)
        mismatch = self.rules.mismatch(game.rules)
        if mismatch:   # before: any rules of its player count and deck were searched
            raise ValueError(f"{self!r} plays {mismatch}; allowed: a game of the rules it was "
                             f"made for (make_agent(name, the game's rules))")
        R, P, D = len(rows), game.num_players, game.rules.deck_size
        if R == 0:   # before: last_* kept the previous call's rows
            self.last_values = np.zeros((0, C.NUM_ACTIONS))
            self.last_worlds = np.zeros(0, np.int64)
            self.last_prior = np.zeros(0, np.int64)
            return np.zeros(0, np.int64)
        over = rows[game.finished[rows]]
        if over.size:   # before: action -1, or the prior's "illegal action" (pimc-ppo)
            raise ValueError(f"act_game: game {int(over[0])} is over; allowed: rows of games "
                             f"under way")
        # 1. the seat's view: nothing hidden from the acting seat is copied past this line
        seat_view, pimc, ismcts, views, policies = _kernels()
        view = E.State(R, P, D).arrays
        seat_view(*game.state.arrays, rows, views[self.view], *view)
        # 2. search in worlds sampled from the view
        seeds = rng.integers(0, 2**63, size=R, dtype=np.uint64)
        world = E.State(4, P, D).arrays
        values = np.zeros((R, C.NUM_ACTIONS))
        out = np.zeros(R, np.int64)
        code, net = self._playout_args(game, policies)
        if self.time_ms is not None or (self.time_cap_ms is not None and self.belief is None):
            prior = (self._prior_choices(game, rows, rng) if self.method == "pimc"
                     else np.full(R, -1, np.int64))
            self.last_prior = prior
            return self._act_timed(game, view, world, prior, code, net, rng)
        # in pieces of about SEARCH_PIECE worlds: the compiled search does not see Ctrl-C, and
        # between pieces Python does (before: pimc:1024 at 4,096 games ran minutes past it);
        # each row searches from its own seed, so the pieces decide as one call would
        piece = max(1, SEARCH_PIECE // self.worlds)
        if self.method == "ismcts":
            self.last_prior = np.full(R, -1, np.int64)
            N = self.worlds + 1
            scratch = (np.zeros(C.NUM_CARD_TYPES, np.int64), np.zeros(D, np.int8),
                       np.zeros(2, np.uint64), np.zeros((N, C.NUM_ACTIONS), np.int32),
                       np.zeros(N), np.zeros(N), np.zeros(N), np.zeros(N + 1, np.int64),
                       np.zeros(N + 1, np.int64))
            for a in range(0, R, piece):
                s = slice(a, a + piece)
                ismcts(*(x[s] for x in view), self._params(game), seeds[s], self.worlds,
                       views[self.view], code, MAX_PLAYOUT, self.explore, *world, *scratch,
                       values[s], np.zeros((2, P), np.float32),
                       np.zeros(C.NUM_ACTIONS, np.bool_), np.zeros(C.NUM_ACTIONS, np.bool_),
                       np.zeros(C.NUM_ACTIONS), np.zeros(32 + P), *net, 0,
                       np.zeros(1, np.int64), out[s])
        else:
            prior = self.last_prior = self._prior_choices(game, rows, rng)
            before, acted, temp, at = self._recall(game, rows, view)
            common = (np.zeros(C.NUM_CARD_TYPES, np.int64), np.zeros(D, np.int8),
                      np.zeros(2, np.uint64))
            work = (np.zeros((4, P), np.float32), np.zeros(C.NUM_ACTIONS, np.bool_),
                    np.zeros(C.NUM_ACTIONS), np.zeros(32 + P))
            row = np.zeros(C.NUM_ACTIONS, np.bool_)
            for a in range(0, R, piece):
                s = slice(a, a + piece)
                record = before if at is None else tuple(x[s] for x in before)  # (no belief:
                # one unread row)
                pimc(*(x[s] for x in view), self._params(game), seeds[s], self.worlds,
                     views[self.view], code, MAX_PLAYOUT, self.margin, prior[s], *record,
                     acted[s], temp, self.model_deals, *world, *common, values[s], *work, *net, row, out[s])
            self._remember(at, view, out)
        self.last_values = values
        # -1 marks the illegal actions; a legal one's value is above it (a penalty match
        # lost to tied winners is under 0, at least (2 - players) / players)
        self.last_worlds = np.where((values > -1.0).any(axis=1), self.worlds, 0)
        return out

    def _recall(self, game: VecGame, rows: np.ndarray,
                view: tuple) -> tuple[tuple, np.ndarray, float, np.ndarray | None]:
        """The belief's record for these rows: each acting seat's view at its previous decision
        in the same game object and the action it took there (-1: none), the temperature
        (0: no belief) and where the rows' seats are kept (None: no belief). Only the seat's
        own views are kept: nothing it may not know."""
        R = len(rows)
        if self.belief is None:
            return tuple(x[:1] for x in view), np.full(R, -1, np.int64), 0.0, None
        B, P = game.num_games, game.num_players
        mem = self._memory
        if mem is None or mem[0]() is not game or len(mem[2]) != B * P:
            mem = self._memory = (weakref.ref(game), E.State(B * P, P, game.rules.deck_size).arrays,
                                  np.full(B * P, -1, np.int64))
        at = rows * P + game.state.current[rows].astype(np.int64)
        return tuple(x[at] for x in mem[1]), mem[2][at], self.belief, at

    def _remember(self, at: np.ndarray | None, view: tuple, out: np.ndarray) -> None:
        """Keep each row's view and chosen action at ``at`` (``_recall``'s) for the belief at
        the seat's next decision."""
        if at is None:
            return
        mem = cast(tuple, self._memory)   # set by _recall, which returned this ``at``
        for x, m in zip(view, mem[1]):
            m[at] = x
        mem[2][at] = out

    def _act_timed(self, game: VecGame, view: tuple, world: tuple, prior: np.ndarray, code: int,
                   net: tuple, rng: np.random.Generator) -> np.ndarray:
        """A time budget per decision (``time_ms``), or a budget of worlds capped in time
        (``time_cap_ms``: at most ``worlds`` of them): the compiled search of one view row is
        called for batches of worlds until the time is spent (or the worlds are all run) (a batch sized from the time
        the earlier ones took, none started that would not end in time). pimc: the batches
        are plain (no prior) and their values pooled, then the choice is made as the
        compiled search makes it (:meth:`_choose`); ismcts: each batch goes on growing the
        same tree (the compiled search's ``resume``)."""
        _, pimc, ismcts, views, _ = _kernels()
        R, P, D = view[0].shape[0], game.num_players, game.rules.deck_size
        A = C.NUM_ACTIONS
        values = np.full((R, A), -1.0)
        out = np.zeros(R, np.int64)
        self.last_worlds = np.zeros(R, np.int64)
        timed = self.time_ms is not None
        budget = cast(float, self.time_ms if timed else self.time_cap_ms) / 1000.0
        # a capped fixed budget: its worlds at most; a time budget: the most a budget of
        # worlds may name (before: none, and an ismcts tree of a minute grew past 1.7 GB)
        most = MAX_WORLDS if timed else self.worlds
        batch_values = np.zeros((1, A))
        batch_out = np.zeros(1, np.int64)
        tmp = np.zeros(32 + P)
        legal = np.zeros(A, np.bool_)
        common = (np.zeros(C.NUM_CARD_TYPES, np.int64), np.zeros(D, np.int8))
        rewards, sc, row = np.zeros((4, P), np.float32), np.zeros(A), np.zeros(A, np.bool_)
        no_prior = np.full(1, -1, np.int64)
        no_record = tuple(x[:1] for x in view)
        for r in range(R):
            one = tuple(x[r:r + 1] for x in view)
            arng = np.zeros(2, np.uint64)
            tree = _Tree() if self.method == "ismcts" else None
            start = self.clock()
            total = np.zeros(A)
            n, batch = 0, 1
            while True:
                seed = rng.integers(0, 2**63, size=1, dtype=np.uint64)
                if tree is None:
                    pimc(*one, self._params(game), seed, batch, views[self.view], code, MAX_PLAYOUT,
                         -1.0, no_prior, *no_record, no_prior, 0.0, self.model_deals, *world, *common, arng,
                         batch_values, rewards, legal,
                         sc, tmp, *net, row, batch_out)
                else:
                    tree.reserve(batch)
                    ismcts(*one, self._params(game), seed, batch, views[self.view], code, MAX_PLAYOUT,
                           self.explore, *world, *common, arng, tree.child, tree.visits,
                           tree.total, tree.avail, tree.path, tree.movers, batch_values,
                           rewards, row, legal, sc, tmp, *net, int(n > 0), tree.nodes,
                           batch_out)
                if legal.sum() <= 1:   # forced: no search (nor time) spent
                    out[r] = batch_out[0]
                    break
                if tree is None:
                    total[legal] += batch_values[0, legal] * batch
                n += batch
                elapsed = self.clock() - start
                per_world = elapsed / n
                if elapsed + per_world > budget or n >= most:
                    break
                batch = min(max(1, min(2 * n, int((budget - elapsed) / per_world))), most - n)
            self.last_worlds[r] = n
            if n == 0:
                continue
            if tree is not None:   # the tree's own values and its most visited action
                values[r], out[r] = batch_values[0], batch_out[0]
                continue
            mean = np.where(legal, total / n, -1.0)
            values[r] = mean
            out[r] = self._choose(mean, legal, prior[r], n, one, game, rng, tmp)
        self.last_values = values
        return out

    def _choose(self, mean: np.ndarray, legal: np.ndarray, prior: int, n: int, one: tuple,
                game: VecGame, rng: np.random.Generator, tmp: np.ndarray) -> int:
        """The compiled search's rule for one row: the best mean (ties within 1e-9 broken
        uniformly by ``rng``); with a margin, the prior's choice (``prior`` >= 0, else the
        compiled greedy's from the seat's view) unless beaten by more than the margin at
        ``n`` worlds."""
        best = mean[legal].max()
        ties = np.flatnonzero(legal & (mean > best - 1e-9))
        pick = int(ties[rng.integers(len(ties))]) if len(ties) > 1 else int(ties[0])
        if self.margin < 0:
            return pick
        if prior < 0:   # greedy's favourite: the first legal action of the highest score
            from ono_env.agents._baselines import POLICY_GREEDY, baseline_scores
            sc = np.zeros((1, C.NUM_ACTIONS))
            baseline_scores(*one, game.internals.params, POLICY_GREEDY, np.ones(1, np.bool_), sc, tmp)
            gs = -1e300
            for a in np.flatnonzero(legal):
                if sc[0, a] > gs + 1e-6:
                    gs, prior = sc[0, a], int(a)
        margin = self.margin * math.sqrt(self.worlds / n)
        return prior if mean[pick] - mean[prior] <= margin + 1e-9 else pick

    def _playout_args(self, game: VecGame, policies: dict) -> tuple[int, tuple]:
        """The playout policy's code and the kernels' network arguments (weights, shape,
        observation and hidden-layer scratch): the learned playout policy's network, else
        (baseline playouts) the belief's network, else placeholders. With
        ``playout_opponents`` the code is the network's for the searching seat and that
        baseline's for every other seat."""
        code = policies["learned"] if self._net is not None else policies[self.policy]
        if self.playout_opponents is not None:
            code = policies["learned_against"] + policies[self.playout_opponents]
        packed = self._net if self._net is not None else self._net_belief
        if packed is None:
            return code, (np.zeros(1, np.float32), np.zeros(4, np.int64),
                          np.zeros(1, np.float32), np.zeros((2, 1), np.float32))
        from ono_env.agents._search import network_scratch
        weights, shape = packed
        return code, (weights, shape, np.zeros(int(shape[2]), np.float32),
                      network_scratch(shape))

    def _params(self, game: VecGame) -> np.ndarray:
        """The game's parameters for the search kernels, with the observation layout of the
        search's network (its playouts and belief observe each seat in that layout)."""
        packed = self._net if self._net is not None else self._net_belief
        if packed is None:
            return game.internals.params
        return game.internals.version_params[2 if int(packed[1][2]) == OBS_V2_SIZE else 1]

    def _prior_choices(self, game: VecGame, rows: np.ndarray,
                       rng: np.random.Generator) -> np.ndarray:
        """``(len(rows),)``: the prior's choice from each acting seat's observation, or -1
        where the search keeps the compiled greedy's (no prior agent) or keeps none."""
        if self.prior is None or self.margin < 0:
            return np.full(len(rows), -1, np.int64)
        B = game.num_games
        version = observation_version(self.prior)
        size = observation_size(game.rules, version)
        if self._obs is None or self._obs.shape != (B, size):
            self._obs = np.zeros((B, size), np.float32)
        which = np.zeros(B, np.bool_)
        which[rows] = True
        obs = game.observe(game.state.current.astype(np.int64), which, out=self._obs,
                           version=version)[rows]
        mask = game.legal_mask()[rows]
        # its answer checked as every agent's is (before: floats were cut to integers, an
        # id past the actions was an IndexError, None a TypeError)
        try:
            return checked_actions(self.prior, obs, mask, rng)
        except ValueError as exc:
            raise ValueError(f"{self!r}: the prior: {exc}") from None


class _Tree:
    """The ISMCTS tree of one decision under a time budget: the compiled search's node
    arrays, grown (copied into arrays twice as large) before a batch could overflow them."""

    def __init__(self, capacity: int = 256) -> None:
        self.nodes = np.zeros(1, np.int64)
        self._alloc(capacity)

    def _alloc(self, cap: int) -> None:
        self.child: np.ndarray = np.full((cap, C.NUM_ACTIONS), -1, np.int32)
        self.visits, self.total, self.avail = np.zeros(cap), np.zeros(cap), np.zeros(cap)
        self.path, self.movers = np.zeros(cap + 1, np.int64), np.zeros(cap + 1, np.int64)

    def reserve(self, iterations: int) -> None:
        """Room for ``iterations`` more (each adds at most one node)."""
        used = int(self.nodes[0])
        need = used + iterations + 1
        if need <= len(self.visits):
            return
        old = (self.child, self.visits, self.total, self.avail)
        self._alloc(max(2 * len(self.visits), need))
        for new, was in zip((self.child, self.visits, self.total, self.avail), old):
            new[:used] = was[:used]


def _playout_network(policy: Any, rules: Any,
                     what: str = "the playout policy") -> tuple[np.ndarray, np.ndarray]:
    """A learned policy for ``rules`` as the packed network of the compiled search (its
    playouts, or ``what`` names another use: the belief's prior); ``ValueError`` for
    anything else, or for a policy made for other rules."""
    from ono_env.agents.learned import LearnedAgent, check_compatible
    if not isinstance(policy, LearnedAgent):
        raise ValueError(f"policy = {policy!r}; allowed: {', '.join(POLICIES)}, or a learned "
                         f"policy (LearnedAgent) for these rules")
    meta = dict(policy.meta) if policy.meta else {}
    if {"observation_version", "action_names", "rules", "observation_size"} <= meta.keys():
        check_compatible(meta, rules, f"{what} {policy.name!r}")
    elif policy.rules.to_dict() != rules.to_dict():
        raise ValueError(f"{what} {policy!r} was made for "
                         f"{policy.rules.num_players}-player {policy.rules.name!r} rules; this "
                         f"search plays {rules.num_players}-player {rules.name!r}")
    return packed_network(policy.net)


_PACKED: weakref.WeakKeyDictionary[Any, tuple[np.ndarray, np.ndarray]] = weakref.WeakKeyDictionary()
_PACKED_LOCK = threading.Lock()   # the web table's workers search in threads


def packed_network(net: Any) -> tuple[np.ndarray, np.ndarray]:
    """``net`` (a :class:`~ono_env.agents.learned.PolicyNet`) packed for the compiled
    playouts (``ono_env.agents._search.pack_network``). A network whose arrays are all
    read-only (the network that ``load_agent`` shares between the agents of one file) is
    packed once and its packing shared, as long as the network lives: nine searches over
    ``ppo-any`` at a table hold one packing (0.9 MB), not nine. A network that may change (a
    live view of a model in training) is packed anew each time."""
    from ono_env.agents._search import pack_network

    frozen = all(not a.flags.writeable for a in net.arrays()) if hasattr(net, "arrays") else False
    if frozen:
        with _PACKED_LOCK:
            hit = _PACKED.get(net)
        if hit is not None:
            return hit
    out = pack_network(net.scale, net.layers, net.activation, net.encoder)
    if frozen:
        with _PACKED_LOCK:   # another thread packed it meanwhile: its packing is the one shared
            out = _PACKED.setdefault(net, out)
    return out


def _fingerprint(state: Any) -> tuple[np.ndarray, ...]:
    """The arrays of a game's state that :func:`game_actions` compares before and after an
    agent's call: every per-game field, the hands, the generators and both piles (not the
    per-seat fields, 23 KB a game at 10 players: a step or a reset moves the per-game fields
    too)."""
    return state.g, state.hands, state.held, state.rng, state.stock, state.discard


def _searches_as_written(agent: Any) -> bool:
    """True for a :class:`SearchAgent` itself (not a subclass) whose instance overrides none
    of the class's methods: its first step copies the seat's view, and what it calls with
    the live game (``_prior_choices``, ``_params``, ...) is the class's own. A subclass or an
    instance with a method of its own may read the game (before: a subclass that kept
    ``act_game`` and ``_act_game`` but overrode ``_prior_choices`` was given the live game,
    and any SearchAgent before that)."""
    return type(agent) is SearchAgent and not any(
        callable(getattr(SearchAgent, name, None)) for name in vars(agent))


def seat_world(game: VecGame, rows: np.ndarray, rng: np.random.Generator,
               version: int | None = None) -> VecGame:
    """A new :class:`VecGame` of ``len(rows)`` games, game ``r`` a world that the acting seat
    of ``game``'s game ``rows[r]`` cannot tell from the real one: its own hand, the public
    table and what it knows kept, everything hidden from it (the other hands, the stock
    order, the Wild Draw Four bluff flag, the game's generator) dealt afresh from one seed
    per row drawn from ``rng``, as the searches sample their worlds
    (``ono_env.agents._search.sample_worlds``). What :func:`game_actions` gives a game agent
    that does not declare ``cheating``: it may step and search it as it likes. ``version``:
    the observation version of the worlds' ``observe`` (default: the game's), the agent's
    own."""
    if not isinstance(game, VecGame):
        raise ValueError(f"seat_world: game is a {type(game).__name__}; allowed: a VecGame")
    # the kernels read the games at these indices unchecked (before: a row past the batch
    # was a segmentation fault, or a world dealt from memory past the arrays)
    rows = check_rows("seat_world: rows", rows, game.num_games)
    check_rng("seat_world: rng", rng)
    return _seat_world(game, rows, rng, version)


def _seat_world(game: VecGame, rows: np.ndarray, rng: np.random.Generator,
                version: int | None) -> VecGame:
    """:func:`seat_world` of arguments already checked (:func:`game_actions` checks its own,
    once a call)."""
    from ono_env.agents import _search as K

    seat_view = _kernels()[0]
    R, P, D = len(rows), game.num_players, game.rules.deck_size
    view = E.State(R, P, D).arrays
    seat_view(*game.state.arrays, rows, K.VIEW_FAIR, *view)
    seeds = rng.integers(0, 2**63, size=R, dtype=np.uint64)
    world = VecGame(game.rules, num_games=R, seed=0, autoreset=game.autoreset,
                    skip_forced=game.skip_forced, max_decisions=game.max_decisions,
                    reward=game.reward,
                    observation_version=game.observation_version if version is None else version)
    internals = world.internals
    with internals.changing():
        kernel_entry(K.sample_worlds)(*view, internals.params, seeds, K.VIEW_FAIR,
                                      *world.state.arrays,
                                      np.zeros(C.NUM_CARD_TYPES, np.int64),
                                      np.zeros(D, np.int8), np.zeros(2, np.uint64))
        internals.mask_changed()
    return world


def game_actions(agent: Any, game: VecGame, rows: np.ndarray, mask: np.ndarray,
                 rng: np.random.Generator) -> np.ndarray:
    """``agent.act_game(game, rows, rng)`` checked like :func:`~ono_env.agents.base.checked_actions`:
    ``(len(rows),)`` integers, each legal in its row of ``mask`` (the rows' legal masks).

    The game it is given: the live one for an agent that declares ``cheating`` (labelled so
    everywhere) and for a :class:`SearchAgent` itself whose methods are the class's own
    (:func:`_searches_as_written`), whose first step copies the seat's view (module
    docstring), each of which must leave it as it found it (its per-game fields, hands,
    stock, discard pile and generators, copied before the call: about 3 MB at 4,096 games of
    10 players, small beside a search's decision). Any other game agent gets
    :func:`seat_world`'s worlds of the rows instead, its own to step, game ``r`` for
    ``rows[r]``, so that it sees no more than its seat may know (before: the live game,
    every hand and the stock order, and its tables did not say it cheated)."""
    if not callable(getattr(agent, "act_game", None)):   # before: an AttributeError
        raise ValueError(f"{named(agent)} declares uses_game but has no act_game method; allowed: a "
                         f"GameAgent (act_game(game, rows, rng)), or uses_game False")
    if not isinstance(game, VecGame):
        raise ValueError(f"game_actions: game is a {type(game).__name__}; allowed: a VecGame")
    rows = check_rows("game_actions: rows", rows, game.num_games)
    if not (is_cheating(agent) or _searches_as_written(agent)):   # worlds of its own
        # worlds that observe in the agent's own version (before: the game's, version 1 to an
        # agent that declared version 2)
        check_rng("seat_world: rng", rng)
        world = _seat_world(game, rows, rng, observation_version(agent))
        actions = agent.act_game(world, np.arange(len(rows)), rng)
        return check_actions(agent, actions, mask, "act_game", rows)
    before = [a.copy() for a in _fingerprint(game.state)]
    actions = agent.act_game(game, rows, rng)
    if any(not np.array_equal(a, b) for a, b in zip(before, _fingerprint(game.state))):
        # its actions were chosen for a position that is no longer there (before: they were
        # played unchecked in the changed games, held counts wrapped to 255)
        raise ValueError(f"{named(agent)}.act_game changed the game it was given (stepped, "
                         f"reset, or wrote its cards or piles); allowed: an agent that reads the "
                         f"live game and searches a copy of it (as "
                         f"ono_env.agents._search.seat_view makes)")
    # the same check (before: a copy of it, which took [1, True] for [1, 1])
    return check_actions(agent, actions, mask, "act_game", rows)


def _budget(name: str, arg: str | None) -> tuple[int, float | None]:
    """``(worlds, time_ms)`` of ``name:arg``: ``N`` worlds (pimc, oracle) or iterations
    (ismcts), or ``<T>ms``, a time budget per decision (``time_ms``; pimc keeps the margin
    of its default worlds, scaled to the worlds sampled)."""
    if arg is None:
        return (DEFAULT_ITERATIONS if name.startswith("ismcts") else DEFAULT_WORLDS), None
    spec = shown(f"{name}:{arg}", 80)
    if arg.endswith("ms"):
        # ASCII digits only, as written in the docs: float() would also take "1e1", " 20 ",
        # "1_0" and other scripts' digits
        ms = float(arg[:-2]) if re.fullmatch(r"(0|[1-9][0-9]*)(\.[0-9]+)?ms", arg) else 0.0
        if not MIN_TIME_MS <= ms <= MAX_TIME_MS:
            raise ValueError(f"agent {spec}: a time budget is <T>ms, T milliseconds per "
                             f"decision from {MIN_TIME_MS:f} to {MAX_TIME_MS:g} (e.g. "
                             f"{name}:20ms)")
        return (DEFAULT_ITERATIONS if name.startswith("ismcts") else DEFAULT_WORLDS), ms
    n = int(arg) if re.fullmatch(r"[1-9][0-9]{0,8}", arg) else 0   # int() takes "+1", "1_6"
    if not 1 <= n <= MAX_WORLDS:
        what = ("the number of worlds (pimc, oracle) or iterations (ismcts), an integer from 1 "
                f"to {MAX_WORLDS}, or <T>ms: T milliseconds per decision (e.g. {name}:20ms)")
        raise ValueError(f"agent {spec}: the budget after ':' is {what}")
    return n, None


def default_margin(worlds: int) -> float:
    """``pimc``'s margin: keep the greedy's choice unless beaten by more than
    0.6 / sqrt(worlds) in mean round wins (about one standard error of the difference of two
    actions' means with shared worlds). Measured, basic 2 players against greedy, mirrored:
    32 worlds 49.2% -> 52.9% (margin 0.1), 128 worlds 53.7% -> 54.9% (0.053)."""
    check_int("default_margin: worlds", worlds, 1)   # before: ZeroDivisionError, math domain error
    return 0.6 / math.sqrt(worlds)


def prior_margin(worlds: int) -> float:
    """``pimc-ppo``'s margin: keep the policy's choice unless beaten by more than
    1.2 / sqrt(worlds) in mean round wins (0.106 at 128 worlds). Measured at 128 worlds,
    basic 2 players, mirrored, 1,000 deals each, against ppo-basic-2p: margin 0.02 50.2%,
    0.053 50.2%, 0.1 52.3% [51.0, 53.5], 0.15 50.6% (the policy alone: exactly 50%)."""
    check_int("prior_margin: worlds", worlds, 1)   # before: ZeroDivisionError, math domain error
    return 1.2 / math.sqrt(worlds)


GENERALIST = "ppo-any"
"""The shipped generalist (version-2 observations, any rules at 2-10 players)."""


def shipped_policy(rules: Any) -> Any:
    """The shipped learned policy for ``rules``, as an agent: a specialist
    (``ppo-<preset>-<N>p``) that plays them where one exists, by the rules' options whatever
    their name, else the generalist ``ppo-any``; ``ValueError`` naming what there is when
    neither is shipped."""
    from ono_env.agents.learned import load_agent, shipped_models, shipped_specialists
    rules = resolve_rules(rules)
    models = shipped_models()
    fitting = shipped_specialists(rules)
    if fitting:
        return load_agent(models[fitting[0]], rules)
    if GENERALIST in models:
        return load_agent(models[GENERALIST], rules)
    raise ValueError(f"pimc-ppo needs a shipped policy for {rules.num_players}-player "
                     f"{rules.name!r} rules; there are: {', '.join(models)}")


def _budget_text(worlds: int, time_ms: float | None) -> str:
    """A search's budget as its name writes it, ``8`` or ``20ms``: a time exactly as given
    (":g" rounded 12345.678 and wrote 1e-07, a name refused)."""
    if time_ms is None:
        return str(worlds)
    return f"{np.format_float_positional(time_ms, trim='-')}ms"


def _factory(base: str, policy: str, view: str, method: str = "pimc", prior: str | None = None):
    def make(rules: Any, arg: str | None = None) -> SearchAgent:
        n, time_ms = _budget(base, arg)
        margin, agent = -1.0, None
        if prior == "greedy":
            margin = default_margin(n)
        elif prior == "ppo":
            margin, agent = prior_margin(n), shipped_policy(rules)
        playout: Any = policy
        if policy == "ppo":
            playout = agent if agent is not None else shipped_policy(rules)
        name = f"{base}:{_budget_text(n, time_ms)}"
        return SearchAgent(rules, n, playout, view, name=name, method=method,
                           margin=margin, prior=agent, time_ms=time_ms)
    return make


_SPECS: dict[str, tuple[str, str, str, str | None]] = {
    # name: (playout policy, view, method, prior); a SearchAgent made by hand as one of
    # them is named so (SearchAgent._default_name)
    "pimc": ("greedy", "fair", "pimc", "greedy"),
    "pimc-plain": ("greedy", "fair", "pimc", None),
    "pimc-ppo": ("greedy", "fair", "pimc", "ppo"),
    "pimc-ppo-playout": ("ppo", "fair", "pimc", "ppo"),
    "pimc-random": ("random", "fair", "pimc", None),
    "ismcts": ("greedy", "fair", "ismcts", None),
    "ismcts-random": ("random", "fair", "ismcts", None),
    "oracle-hands": ("greedy", "hands", "pimc", None),   # CHEATING ceiling
    "oracle": ("greedy", "all", "pimc", None),           # CHEATING ceiling
    "oracle-ppo": ("greedy", "hands", "pimc", "ppo"),    # CHEATING ceiling
}
SEARCH_AGENTS = {name: _factory(name, *spec) for name, spec in _SPECS.items()}
"""Search agent names; each also takes a budget, ``name:N`` (N worlds per decision)."""


def thinks_by_the_clock(spec: Any) -> bool:
    """Is ``spec`` a search agent with a time budget (``pimc:20ms``)? Its moves depend on the
    machine's speed and load, so a seeded run of it is not repeatable."""
    if not isinstance(spec, str):
        return False
    name, _, arg = spec.partition(":")
    return name in SEARCH_AGENTS and arg.endswith("ms")
