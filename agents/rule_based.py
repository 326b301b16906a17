"""Rule-based baselines: hand-written strategies that read only the observation and the mask.

Every agent scores all 85 actions of every row at once with NumPy and takes the best legal
one; ties are broken by a tiny uniform draw from the generator it is passed, so an agent is
deterministic given that generator.

These NumPy versions are the readable reference. The same agents also exist compiled,
in ``ono_env.agents._baselines``, with scores equal to ``scores(obs)`` here (tests/
test_baselines_compiled.py checks every preset); the one agent loop
(:class:`ono_env.agents.driver.AgentDriver`: the arena, the environments' opponents, training)
plays an agent of exactly these types, built for the game's rules, in compiled code, where
ties are broken per game by the driver's ``policy_rng`` instead of the Python generator.
A subclass is played through ``act`` here.

The decisions that are not about which card to play are shared (:class:`RuleBasedAgent`):

- **call** ONO whenever it is legal (before playing down to one card);
- **catch** the previous player when the observation shows them at one card without a call
  (never otherwise: under a false-catch penalty a wrong catch costs cards);
- **challenge** a Wild Draw Four when the estimated chance that its player held a card of
  the colour in play is at least one half. The estimate uses public information only: the
  offender's hand size after the play and the share of each colour among the cards this
  seat has not seen (deck minus discard pile minus own hand);
- **stack** a Draw Two / Wild Draw Four when the rules and the hand allow, else **accept**
  (a Wild Draw Four only as the rule below allows it);
- after drawing, **play** the drawn card when it may be played, else **keep** it;
- **name** the colour the strategy prefers (after a Wild Shuffle Hands, a swap, or a first
  card wild) and **swap** hands with the opponent who holds the fewest cards;
- never play a Wild Draw Four while holding the colour in play, unless no other action is
  legal (a bluff where ``wild_draw_four_restricted`` holds; kept to under every rule set);
  draw only when nothing else is worth playing (a voluntary draw never is).

The strategies differ in which card they play:

``greedy`` (:class:`GreedyAgent`)
    Sheds points: plays the legal card worth the most points (action cards 20, then the
    highest number) so that a lost round costs little, and holds its wilds for when nothing
    else matches. A wild names the colour it holds most cards of.

``color`` (:class:`ColorControlAgent`)
    Keeps the colour in play its own: it prefers the card that leaves it the most cards of
    the resulting colour, so it can keep matching on later turns, switches colour by rank
    toward its strongest colour, and spends a wild only when that switch pays or nothing else
    plays. A wild names its strongest colour.

``defensive`` (:class:`DefensiveAgent`)
    Watches the next player: while that player has more than two cards it plays numbers
    (highest first) and saves Skip, Reverse, Draw Two and wilds; once the next player is down
    to two cards or fewer it spends them (Wild Draw Four, then Draw Two, then Skip/Reverse)
    to keep that player from going out. Under two-player rules, where Skip and Reverse give
    another turn, it plays an action card early when it holds another card to follow with.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ono_env import cards as C
from ono_env.checks import check_act_mask, check_act_obs
from ono_env.observation import OBS_V2_SIZE, observation_size, observation_view
from ono_env.rules import RuleSet, resolve_rules

NA = C.NUM_ACTIONS
_PLAY = np.arange(NA) < C.A_DRAW                         # the 66 play actions
_CARD = C.ACTION_CARD.astype(np.int64)                    # card put down by action (-1: none)
_CARD_OR0 = np.where(_CARD >= 0, _CARD, 0)
_NAMED = C.ACTION_COLOR.astype(np.int64)                  # colour named by action (-1: none)
_CARD_COLOR = C.CARD_COLOR.astype(np.int64)
_CARD_RANK = C.CARD_RANK.astype(np.int64)
_POINTS = C.CARD_POINTS.astype(np.float64)
# colour the play leaves in force: the card's colour, or the colour the wild names (-1: later)
_RESULT_COLOR = np.where(_PLAY, np.where(_CARD_OR0 < 52, _CARD_COLOR[_CARD_OR0], _NAMED), -1)
_IS_WILD = _PLAY & (_CARD_OR0 >= 52)
_IS_WD4 = _PLAY & (_CARD == C.WILD_DRAW_FOUR)
_RANK = np.where(_PLAY & (_CARD_OR0 < 52), _CARD_RANK[_CARD_OR0], -1)
_IS_D2 = _RANK == C.RANK_DRAW_TWO
_IS_SKIP = _RANK == C.RANK_SKIP
_IS_REV = _RANK == C.RANK_REVERSE
_IS_NUMBER = (_RANK >= 0) & (_RANK <= 9)
_COLOR_ACTS = np.arange(C.A_COLOR, C.A_COLOR + 4)
_TARGET_ACTS = np.arange(C.A_TARGET, C.A_TARGET + C.MAX_TARGET)

# shared scores for the actions that are not a choice of card
S_CATCH, S_CALL, S_CHALLENGE = 1000.0, 900.0, 800.0
S_KEEP, S_ACCEPT, S_DRAW, S_NO = -100.0, -100.0, -200.0, -1000.0
S_BLUFF = -300.0  # a Wild Draw Four while holding the colour in play (below drawing)


class Features:
    """The parts of a batch of observations the rule-based agents read (all public to the seat)."""

    def __init__(self, obs: np.ndarray, rules: RuleSet) -> None:
        n = rules.num_players
        v = observation_view(obs, rules)
        self.hand = v.hand
        self.color_counts = self.hand[:, :52].reshape(-1, 4, 13).sum(axis=2)   # (B, 4)
        self.color = np.where(v.color.any(axis=1), v.color.argmax(axis=1), -1)  # (B,) -1: none
        self.phase = v.phase.argmax(axis=1)
        self.direction = v.direction
        self.discard = v.discard_pile
        self.my_size = v.self_size
        self.opp_size = v.opponent_sizes          # (B, N-1), from this seat's left
        self.opp_called = v.opponent_called > 0.5
        rows = np.arange(obs.shape[0])
        left = self.direction > 0
        nxt = np.where(left, 0, n - 2)           # block index of the next / previous player
        prv = np.where(left, n - 2, 0)
        self.next_size = self.opp_size[rows, nxt]
        self.prev_size = self.opp_size[rows, prv]
        self.prev_called = self.opp_called[rows, prv]

    def best_color(self) -> np.ndarray:
        """(B,) the colour with most cards in hand, ties to the one with more points."""
        pts = (self.hand[:, :52] * _POINTS[:52]).reshape(-1, 4, 13).sum(axis=2)
        return np.argmax(self.color_counts * 1000.0 + pts, axis=1)


class RuleBasedAgent:
    """Shared decisions (see the module docstring); subclasses score the plays.

    ``play_scores(f)`` returns ``(B, 85)`` scores for the play actions (0..65): higher is
    preferred; only their order within a row matters, and they should lie in ``[0, 500)``.
    ``color_pref(f)`` returns ``(B, 4)`` in ``[0, 1)``: how much the agent likes naming each
    colour."""

    name = "rule-based"
    uses_observation = True

    def __init__(self, rules: Any = None) -> None:
        self.rules = resolve_rules(rules)
        self.num_players = self.rules.num_players
        self.obs_size = observation_size(self.rules)
        deck = self.rules.deck_counts.astype(np.float64)
        self._deck_colors = deck[:52].reshape(4, 13).sum(axis=1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rules={self.rules.name!r}, num_players={self.num_players})"

    # ---- to override ---------------------------------------------------------------------
    def play_scores(self, f: Features) -> np.ndarray:
        raise NotImplementedError

    def color_pref(self, f: Features) -> np.ndarray:
        best = f.best_color()
        pref = f.color_counts / (f.color_counts.max(axis=1, keepdims=True) + 1.0) * 0.5
        pref[np.arange(len(best)), best] += 0.49
        return pref

    # ---- the policy ------------------------------------------------------------------------
    def act(self, obs: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        check_act_obs(self, obs, rng)
        if obs.ndim != 2 or obs.shape[1] != self.obs_size:
            # a version-2 observation's length: say which layout it reads (before: the shapes
            # alone, where ppo-any's refusal of the other layout names it)
            v2 = (" (that is a version-2 observation's length; this agent reads version 1, "
                  "observation_version=1: the drivers write each agent its own layout)"
                  if obs.ndim == 2 and obs.shape[1] == OBS_V2_SIZE else "")
            raise ValueError(f"{self!r}: observations of shape {obs.shape}; this agent reads "
                             f"(B, {self.obs_size}) for {self.num_players}-player "
                             f"{self.rules.name!r} rules{v2}")
        check_act_mask(self, obs, mask, NA)
        if len(obs) == 0:
            return np.zeros(0, np.int64)
        return self.choose(self.scores(obs), mask, rng)

    @staticmethod
    def choose(scores: np.ndarray, mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Best legal action per row; ties broken by a uniform draw (scores step by >= 0.01)."""
        noisy = scores + rng.random(scores.shape, dtype=np.float32) * 1e-3
        return np.where(mask, noisy, -np.inf).argmax(axis=1)

    def scores(self, obs: np.ndarray) -> np.ndarray:
        f = Features(obs, self.rules)
        B = obs.shape[0]
        s = np.full((B, NA), S_NO)
        plays = self.play_scores(f)
        pref = self.color_pref(f)                                     # (B, 4)
        named = _NAMED[:C.A_DRAW]
        plays[:, :C.A_DRAW] += np.where(named >= 0, pref[:, np.maximum(named, 0)] * 0.9, 0.0)
        s[:, :C.A_DRAW] = plays[:, :C.A_DRAW]
        # an honest agent: a Wild Draw Four while holding the colour in play is a bluff
        holds = (f.color >= 0) & (f.color_counts[np.arange(B), np.maximum(f.color, 0)] > 0)
        s[:, _IS_WD4] = np.where(holds[:, None], S_BLUFF, s[:, _IS_WD4])
        s[:, C.A_DRAW] = S_DRAW
        s[:, C.A_KEEP] = S_KEEP
        s[:, C.A_ACCEPT] = S_ACCEPT
        s[:, C.A_CALL] = S_CALL
        if self.rules.ono_penalty != "none":
            s[:, C.A_CATCH] = np.where((f.prev_size == 1) & ~f.prev_called, S_CATCH, S_NO)
        if self.rules.challenge:
            s[:, C.A_CHALLENGE] = np.where(self.bluff_chance(f) >= 0.5, S_CHALLENGE, S_NO)
        s[:, _COLOR_ACTS] = pref
        targets = np.full((B, C.MAX_TARGET), S_NO)
        targets[:, :self.num_players - 1] = -f.opp_size
        s[:, _TARGET_ACTS] = targets
        return s

    def bluff_chance(self, f: Features) -> np.ndarray:
        """Estimated chance that the player of a pending Wild Draw Four held a card of the
        colour in play before it: 1 - (1 - q)^h with h its hand size before the play and q
        the mean share of one colour among the cards unseen by this seat."""
        seen = (f.discard[:, :52] + f.hand[:, :52]).reshape(-1, 4, 13).sum(axis=2)
        unseen_colors = np.clip(self._deck_colors - seen, 0, None)     # (B, 4)
        unseen_total = np.clip(self.rules.deck_size - f.discard.sum(axis=1) - f.hand.sum(axis=1), 1, None)
        q = unseen_colors.mean(axis=1) / unseen_total
        h = f.prev_size + 1
        return 1.0 - (1.0 - q) ** h


def _base_plays(f: Features) -> np.ndarray:
    return np.zeros((f.hand.shape[0], NA))


class GreedyAgent(RuleBasedAgent):
    __doc__ = "Sheds the legal card worth most points; holds wilds (``greedy``)."
    name = "greedy"

    def play_scores(self, f: Features) -> np.ndarray:
        s = _base_plays(f)
        s[:, _PLAY] = 100.0 + _POINTS[_CARD_OR0[_PLAY]]              # 100..120 coloured
        s[:, _IS_WILD] = 10.0 + np.where(_IS_WD4[_IS_WILD], 1.0, 0.0)  # wilds last, W+4 first
        return s


class ColorControlAgent(RuleBasedAgent):
    __doc__ = "Plays to keep the colour in play its strongest one (``color``)."
    name = "color"

    def play_scores(self, f: Features) -> np.ndarray:
        s = _base_plays(f)
        counts = f.color_counts                                       # (B, 4)
        res = _RESULT_COLOR[:C.A_DRAW]
        after = counts[:, np.maximum(res, 0)] - np.where(_IS_WILD[:C.A_DRAW], 0.0, 1.0)
        after = np.where(res >= 0, after, counts.max(axis=1, keepdims=True))  # colour named later
        pts = _POINTS[_CARD_OR0[:C.A_DRAW]] / 100.0                  # tie-break: more points
        s[:, :C.A_DRAW] = 200.0 + 10.0 * after + pts
        # a wild costs a flexible card: spend one only when the colour it names leaves three
        # or more cards more in that colour than the best coloured play
        s[:, :C.A_DRAW] -= np.where(_IS_WILD[:C.A_DRAW], 30.0, 0.0)
        return np.clip(s, 0.0, 499.0)


class DefensiveAgent(RuleBasedAgent):
    __doc__ = "Saves Skip/Reverse/Draw Two/wilds for when the next player is close to out (``defensive``)."
    name = "defensive"

    def play_scores(self, f: Features) -> np.ndarray:
        s = _base_plays(f)
        danger = (f.next_size <= 2)[:, None]
        pts = _POINTS[_CARD_OR0]
        rev_attack = 300.0 if self.num_players == 2 else 250.0        # 2 players: a Skip
        attack = np.select([_IS_WD4, _IS_D2, _IS_SKIP, _IS_REV, _IS_WILD],
                           [400.0, 350.0, 300.0, rev_attack, 50.0], 100.0 + pts)
        # calm: numbers first (highest), then action cards, wilds last
        calm = np.select([_IS_NUMBER, _IS_WILD], [200.0 + pts, 10.0 + _IS_WD4], 100.0)
        if self.num_players == 2:
            # Skip / Reverse / Draw Two give another turn: lead with one while holding a
            # second card to follow it with
            again = _IS_SKIP | _IS_REV | _IS_D2
            follow = (f.my_size >= 3)[:, None]
            calm = np.where(again & follow, 250.0 + pts, calm)
        s[:, :] = np.where(danger, attack, calm)
        s[:, ~_PLAY] = 0.0
        return s


RULE_BASED: dict[str, type[RuleBasedAgent]] = {
    "greedy": GreedyAgent,
    "color": ColorControlAgent,
    "defensive": DefensiveAgent,
}
"""The rule-based baselines by registered name (``random`` is not among them: it has no
rules)."""
