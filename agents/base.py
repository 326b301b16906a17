"""The agent interface: what plays a seat, wherever one is needed.

An agent is any object with ``act(obs, mask, rng) -> actions``: ``obs`` is ``(B, D) float32``
(the observations of :mod:`ono_env.observation`), ``mask`` is ``(B, A) bool`` (the legal
actions; every row has at least one), ``rng`` a ``numpy.random.Generator``; it returns ``(B,)``
integer actions, each legal in its row. Agents see nothing but these inputs
(a game agent, below, sees games its seat cannot tell from the real one).

Beyond ``act``, an agent may offer optional abilities, declared by :class:`Agent` and read
only through the functions of this module (:func:`agent_label`, :func:`uses_observation`,
:func:`observation_version`, :func:`is_cheating`, :func:`explainer`, :func:`plays_from_game`):

- ``name`` (str): its label in tables and replays;
- ``uses_observation = False``: it never reads ``obs``; the batch driver
  (:class:`~ono_env.agents.driver.AgentDriver`) then skips encoding observations for it and
  passes an array of the right shape whose contents say nothing (zeros; never another
  seat's observation);
- ``observation_version = 2``: it reads version-2 observations (:mod:`ono_env.observation`;
  default 1), which the drivers then write for it;
- ``cheating = True``: it reads hidden cards (the research ceilings; tables label it);
- ``explain(obs, mask) -> (probs, value)``: what it would do and how it rates the position
  (learned agents; :class:`ExplainingAgent`);
- ``uses_game = True`` with ``act_game(game, rows, rng)`` and ``last_values``: it decides
  from the seat's view of the game instead of the observation (the search agents;
  :class:`GameAgent`). An agent that does not declare ``cheating`` is given worlds its seat
  cannot tell from the game, not the game itself
  (:func:`ono_env.agents.search.game_actions`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TYPE_CHECKING, runtime_checkable

import numpy as np

from ono_env import cards as C
from ono_env.checks import as_array, check_rng, first_few, printable, shown
from ono_env.game import random_legal
from ono_env.observation import OBS_VERSIONS

if TYPE_CHECKING:
    from ono_env.game import VecGame


@runtime_checkable
class Agent(Protocol):
    """``act(obs (B, D) float32, mask (B, A) bool, rng) -> (B,) int``, legal in every row.

    Optional abilities (not required by ``isinstance``; see the module's docstring):
    ``name: str``, ``uses_observation: bool`` (default True), ``cheating: bool`` (default
    False), ``explain`` (:class:`ExplainingAgent`), ``uses_game`` with ``act_game`` and
    ``last_values`` (:class:`GameAgent`)."""

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        ...


@runtime_checkable
class ExplainingAgent(Agent, Protocol):
    """An agent that also says what it would do: ``explain(obs, mask)`` returns the action
    probabilities ``(B, A)`` and its value estimate ``(B,)`` (or None). A replay records them
    and refuses other numbers: each 0 .. 1, a row's legal actions' summing to at most 1 (not
    scores of each action: a recording stops at the first decision whose scores break
    those bounds)."""

    def explain(self, obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        ...


@runtime_checkable
class GameAgent(Agent, Protocol):
    """An agent that decides from the seat's view of the game (``uses_game = True``): the
    drivers call ``act_game(game, rows, rng)`` for the acting seats of games ``rows`` and
    then read its value per legal action for those rows in ``last_values``. The game it is
    given (:func:`ono_env.agents.search.game_actions`): for an agent that declares
    ``cheating`` (and a :class:`~ono_env.agents.search.SearchAgent` itself, not a subclass,
    whose methods are the class's own: it copies the seat's view first), the live game,
    which it must leave as it found it (it searches a copy: a call that changed it is
    refused); for any other, new games, one per row, whose hidden cards are dealt afresh
    from what the acting seat knows, its own to step
    (:func:`ono_env.agents.search.seat_world`)."""

    uses_game: bool
    last_values: np.ndarray | None

    def act_game(self, game: VecGame, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        ...


def agent_label(agent: Any) -> str:
    """The agent's ``name`` where it is text that is not blank, else its class name (before:
    ``str()`` of any name, 'None' for None, and a blank label); a character that is not
    printable, a newline or a tab, shown as ``?``: the label is one line of a table."""
    name = getattr(agent, "name", None)
    return printable(name if isinstance(name, str) and name.strip() else type(agent).__name__)


def _flag(agent: Any, name: str, default: bool) -> bool:
    """An agent's declared flag ``name`` (``default`` where it declares none): True or False,
    a NumPy bool too; anything else one ``ValueError`` (before: ``bool()`` read "no" as
    True)."""
    v = getattr(agent, name, default)
    if v is True or v is False:
        return v
    if not isinstance(v, np.bool_):
        raise ValueError(f"agent {agent_label(agent)!r}: {name} = {shown(v, 40)} "
                         f"({type(v).__name__}); allowed: True or False")
    return bool(v)


def uses_observation(agent: Any) -> bool:
    """False when the agent declares that it never reads ``obs`` (default True)."""
    return _flag(agent, "uses_observation", True)


def observation_version(agent: Any) -> int:
    """The observation layout the agent reads (``observation_version``, default 1; a
    version-2 learned model says 2): drivers observe each agent in its own layout."""
    v = getattr(agent, "observation_version", 1)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) \
            or v not in OBS_VERSIONS:   # before: int() read "2" and 2.9 as 2, True as 1
        raise ValueError(f"agent {agent_label(agent)!r}: observation_version = {shown(v, 40)} "
                         f"({type(v).__name__}); allowed: "
                         f"{' or '.join(map(str, OBS_VERSIONS))} (an integer)")
    return int(v)


def is_cheating(agent: Any) -> bool:
    """True for an agent that declares it reads hidden cards (default False)."""
    return _flag(agent, "cheating", False)


CHEATING_MARK = " (cheating)"
"""What every table, card, page and game adds to a cheating agent's label."""


def marked(label: str, cheating: bool) -> str:
    """``label`` as an agent is shown: with :data:`CHEATING_MARK` where it cheats."""
    return label + CHEATING_MARK if cheating else label


def unmarked(label: str) -> str:
    """A shown label without :data:`CHEATING_MARK`: the name the agent was given."""
    return label.removesuffix(CHEATING_MARK)


def plays_from_game(agent: Any) -> bool:
    """True for a :class:`GameAgent` (``uses_game = True``)."""
    return _flag(agent, "uses_game", False)


def explainer(agent: Any) -> Callable[[np.ndarray, np.ndarray],
                                      tuple[np.ndarray, np.ndarray | None]] | None:
    """The agent's ``explain`` method, or None when it has none."""
    return getattr(agent, "explain", None)


class RandomAgent:
    """Uniform over the legal actions of each row (one uniform draw of ``rng`` per row).
    ``obs`` is not read (its contents may be anything, as drivers pass them), but it must be a
    ``(B, D)`` array with a row for each of the mask's rows."""

    name = "random"
    uses_observation = False

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        check_rng(f"{self!r}: rng", rng)   # named as the other agents name it
        # the observations first, as the other agents check them (before: a 1-d obs beside a
        # 1-d mask blamed the mask)
        if not (isinstance(obs, np.ndarray) and obs.ndim == 2):
            what = (f"{obs.dtype} {obs.shape}" if isinstance(obs, np.ndarray)
                    else type(obs).__name__)
            raise ValueError(f"{self!r}: observations are {what}; allowed: a (B, D) array")
        if isinstance(mask, np.ndarray) and mask.ndim == 2 and len(obs) != len(mask):
            # the mask blamed, as the other agents blame it (before: one action for a mask of
            # one row beside three observations)
            raise ValueError(f"{self!r}: mask is {mask.dtype} {mask.shape}; allowed: a "
                             f"({len(obs)}, {C.NUM_ACTIONS}) array of bools or integers "
                             f"0/1, a row for each observation")
        try:
            return random_legal(mask, rng)
        except ValueError as exc:   # named as this agent's, as every other agent's refusal
            raise ValueError(f"{self!r}: {exc}") from None

    def __repr__(self) -> str:
        return "RandomAgent()"


def checked_actions(agent: Agent, obs: np.ndarray, mask: np.ndarray,
                    rng: np.random.Generator, legal: np.ndarray | None = None) -> np.ndarray:
    """``agent.act`` with its output checked: shape (B,), integers, and legal in every row of
    ``legal`` (default: ``mask``). The agent is given a copy of ``mask``, so that what it
    writes into it is its own (before: an agent that set its mask's every entry had the
    illegal actions it then returned checked against that mask, and played)."""
    return check_actions(agent, agent.act(obs, mask.copy(), rng), mask if legal is None else legal)


def named(agent: Any) -> str:
    """An agent as a message names it: its ``repr``, unless that is Python's default
    (``<mine.Agent object at 0x...>``, an address that says nothing), then its label and
    class (``'mine' (mine.Agent)``)."""
    text = repr(agent)
    if text.startswith("<") and " object at 0x" in text:
        cls = type(agent)
        return f"{agent_label(agent)!r} ({cls.__module__}.{cls.__qualname__})"
    return text


def check_actions(agent: Agent, actions: Any, mask: np.ndarray, method: str = "act",
                  rows: np.ndarray | None = None) -> np.ndarray:
    """What ``agent.act`` (or its ``method``) returned for ``mask``, as int64, once it is of
    shape (B,), integers (not booleans) and legal in every row; else one ``ValueError``
    naming the agent and the fault, and the row, or the game of ``rows`` where given (a
    game agent's rows of a batch)."""
    who = named(agent)
    if isinstance(actions, np.ma.MaskedArray):   # before: its masked entries were played
        raise ValueError(f"{who}.{method} returned a masked array; expected "
                         f"({mask.shape[0]},) integers in a plain array (no entry masked out)")
    actions = as_array(actions)
    if actions.shape != (mask.shape[0],) or not np.issubdtype(actions.dtype, np.integer):
        raise ValueError(f"{who}.{method} returned {actions.dtype} {actions.shape}; "
                         f"expected ({mask.shape[0]},) integers")
    ok = (actions >= 0) & (actions < mask.shape[1])
    ok[ok] &= mask[np.flatnonzero(ok), actions[ok]]
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        where = f"row {k}" if rows is None else f"game {int(rows[k])}"
        a = int(actions[k])   # named, with the row's legal actions (before: the id alone)
        name = (f" ({C.action_name(a)!r})" if 0 <= a < C.NUM_ACTIONS else
                f" (no action has that id: 0 to {C.NUM_ACTIONS - 1})")
        legal = [C.action_name(int(x)) for x in np.flatnonzero(mask[k])]
        raise ValueError(f"{who} chose illegal action {a}{name} in {where}; legal there: "
                         f"{first_few(legal, 8) or 'none'}")
    return actions.astype(np.int64, copy=False)
