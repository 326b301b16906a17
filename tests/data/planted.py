"""Agents with a planted weakness, for the benchmark suite's tests (loaded as module:Class)."""

from __future__ import annotations

import numpy as np

from ono_env.agents.rule_based import GreedyAgent
from ono_env.cards import ACTION_COLOR


class NamesRed:
    """``greedy``, except that every colour it names is red (a wild, a colour choice)."""

    name = "names-red"

    def __init__(self, rules) -> None:
        self.greedy = GreedyAgent(rules)

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        a = np.asarray(self.greedy.act(obs, mask, rng), np.int64)
        red = a - np.maximum(ACTION_COLOR[a], 0)          # the same play naming red
        ok = mask[np.arange(len(a)), red]
        return np.where(ok, red, a)


class NoAct:
    """Not an agent: it has no act method."""

    def __init__(self) -> None:
        pass


class Illegal:
    """Implements act, but plays action 0 whether or not it is legal."""

    def act(self, obs, mask, rng):
        return np.zeros(len(mask), np.int64)


class NeedsTwo:
    def __init__(self, a, b) -> None:
        pass


class FailsAtFour:
    """``greedy``, but it fails after three decisions at a table of four or more."""

    name = "fails-at-four"

    def __init__(self, rules) -> None:
        import os
        self.greedy = GreedyAgent(rules)
        self.players = rules.num_players
        self.calls = 0
        mark = os.environ.get("ONO_TEST_MARK")
        if mark:   # one line per agent made (per pairing), for the tests that count them
            with open(mark, "a") as fh:
                fh.write(f"{self.players}\n")

    def act(self, obs, mask, rng):
        self.calls += 1
        if self.players >= 4 and self.calls > 3:
            raise RuntimeError("planted failure")
        return self.greedy.act(obs, mask, rng)


def act_first(rules=None):
    """Not a class: ``module:Class`` refuses it rather than calling it."""
    raise AssertionError("a function named as an agent was called")


class MyGreedy(GreedyAgent):
    """A class made from a shipped agent: its optional ``rules`` is given the table's rules."""


class Tuned:
    """An optional first parameter not named ``rules``: called with none."""

    def __init__(self, depth: int = 3) -> None:
        if depth != 3:
            raise AssertionError(f"called with {depth!r}")

    def act(self, obs, mask, rng):
        return mask.argmax(axis=1)


class PassesOn(GreedyAgent):
    """A subclass that passes everything on: its base class's ``rules`` is given the rules."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)


class KeywordRules(GreedyAgent):
    """``rules`` as a keyword-only parameter: given by name."""

    def __init__(self, *, rules=None):
        super().__init__(rules)


class NoRules(GreedyAgent):
    """A subclass whose constructor takes nothing: called with none, it plays the library's
    default table, and the refusal says it was called with no argument."""

    def __init__(self):
        super().__init__()


class OwnSeeded:
    """A random player with a generator of its own, seeded once as it is made: its play
    depends on how many decisions it has taken since, so a card is the same at any number of
    workers only where each pairing gets an agent made afresh."""

    name = "own-seeded"

    def __init__(self, rules) -> None:
        self.rng = np.random.default_rng(0)

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.array([self.rng.choice(np.flatnonzero(m)) for m in np.atleast_2d(mask)],
                        np.int64)


class MaskWriter:
    """Sets every entry of the mask it is given, then returns an illegal action in each row:
    refused for that action (before: checked against the mask it had written, and played)."""

    name = "mask-writer"

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        actions = (~mask.astype(bool)).argmax(axis=1)
        mask[:] = True
        return actions


class GameStepper:
    """A game agent that steps the game it is given, as a careless look-ahead would, and
    then answers for the position it saw: given worlds of its own, it may; declaring
    ``cheating``, given the live game, refused (before: its stale actions were played
    unchecked)."""

    name = "game-stepper"
    uses_game = True
    last_values = None

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return mask.argmax(axis=1)

    def act_game(self, game, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        actions = game.legal_mask()[rows].argmax(axis=1)
        live = game.legal_mask().copy()
        game.step(np.where(live.any(axis=1), live.argmax(axis=1), 0), active=live.any(axis=1))
        return actions


class ExplainRaises:
    """Plays, and its explain raises: the error is named as this agent's."""

    name = "explain-raises"

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return mask.argmax(axis=1)

    def explain(self, obs: np.ndarray, mask: np.ndarray):
        raise RuntimeError("explode")


class ExplainNotCallable:
    """Plays, and its explain is a number."""

    name = "explain-number"
    explain = 3

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return mask.argmax(axis=1)


class ActNotCallable:
    """Its act is a number: not an agent."""

    act = 5


class RaisesOwn:
    """A constructor of no argument and an act that raises for a reason of its own, at any
    table: no hint about the constructor's rules."""

    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        raise RuntimeError("boom")


class StockShuffler(GameStepper):
    """A game agent that shuffles the stock it is given, as a careless determinisation would,
    and answers legally: refused where that is the live game's (before: the real game's
    future draws changed, silently)."""

    name = "stock-shuffler"

    def act_game(self, game, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        state = game.state
        for i in rows:
            rng.shuffle(state.stock[i, :state.stock_len[i]])
        return game.legal_mask()[rows].argmax(axis=1)
