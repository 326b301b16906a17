"""Compiled rule-based baselines: ``random``, ``greedy``, ``color`` and ``defensive`` as
decision rules over a batch of games.

The scores are those of agents/rule_based.py (the readable NumPy reference), computed from
what the acting seat may know (its hand, the public table, hand sizes and calls) with the
same float arithmetic, so that they are equal to ``agent.scores(obs)`` (tests/
test_baselines_compiled.py checks every preset). The best legal action is taken; ties are
broken uniformly by the game's own generator ``policy_rng[i]`` (a reservoir draw), where the
NumPy agents draw from the Python generator they are passed.

Written on the rules functions of :mod:`ono_env._engine` (imported from it, never changed
here). A module of its own, imported only when a baseline is first driven in compiled code
(:class:`ono_env.agents.driver.AgentDriver`) or a search agent plays (``ono_env.agents._search``), so
that ``import ono_env`` does not compile or load it.

Scratch ``tmp`` of the scores: (>= 16,) float64, of which only tmp[0:16] is used (the search
keeps its own values above).
"""

from __future__ import annotations

import numba
import numpy as np

from ono_env import cards as C
from ono_env._engine import (
    Arrays,
    BROW,
    F32_2D,
    G_COLOR,
    G_CURRENT,
    G_DIRECTION,
    G_DISCARD_LEN,
    G_TERMINATED,
    G_TRUNCATED,
    HI,
    I64ARR,
    NA,
    NC,
    ONE,
    ONO_NONE,
    PRM,
    P_CHALLENGE,
    P_DECK,
    P_ONO_PENALTY,
    P_PLAYERS,
    S,
    STATE,
    S_CALLED,
    S_HAND_LEN,
    U64ARR,
    _ACTION_CARD,
    _ACTION_COLOR,
    _CARD_COLOR,
    _CARD_POINTS,
    _CARD_RANK,
    _advance,
    _apply,
    _helper,
    _inline,
    _kernel,
    _lowest_bit,
    _next_u53,
    _pick_random,
    i8,
    legal_actions,
    void,
)

# ---- policy codes (the one place they are defined) --------------------------------------
POLICY_NONE = -1       # not a compiled policy: a Python agent (or a seat not driven)
POLICY_RANDOM = 0      # uniform over the legal actions (the engine's _random_action draws)
POLICY_GREEDY = 1      # agents/rule_based.py GreedyAgent
POLICY_COLOR = 2       # agents/rule_based.py ColorControlAgent
POLICY_DEFENSIVE = 3   # agents/rule_based.py DefensiveAgent
POLICY_CODES = {"random": POLICY_RANDOM, "greedy": POLICY_GREEDY, "color": POLICY_COLOR,
                "defensive": POLICY_DEFENSIVE}
"""Agent name -> policy code."""

F64ROW = numba.float64[::1]
F64_2D = numba.float64[:, ::1]
I64_2D = numba.int64[:, ::1]
F32 = np.float32

# RuleBasedAgent's shared scores, from their one home
from ono_env.agents.rule_based import (  # noqa: E402
    S_ACCEPT,
    S_BLUFF,
    S_CALL,
    S_CATCH,
    S_CHALLENGE,
    S_DRAW,
    S_KEEP,
    S_NO,
)


@_inline
def _greedy_play(c):
    """GreedyAgent.play_scores of a play of card c."""
    if c < 52:
        return 100.0 + _CARD_POINTS[c]
    return 11.0 if c == C.WILD_DRAW_FOUR else 10.0


@_inline
def _color_play(c, named, tmp, maxc):
    """ColorControlAgent.play_scores of a play of card c naming ``named`` (tmp[0:4]: the
    colour counts; maxc their largest), in the NumPy order of operations."""
    wild = c >= 52
    res = _CARD_COLOR[c] if c < 52 else named
    if res >= 0:
        after = tmp[res] - (0.0 if wild else 1.0)
    else:
        after = maxc                      # the colour is named later
    val = 200.0 + 10.0 * after + _CARD_POINTS[c] / 100.0
    val -= 30.0 if wild else 0.0
    return min(max(val, 0.0), 499.0)


@_inline
def _defensive_play(c, danger, n, my_size):
    """DefensiveAgent.play_scores of a play of card c (danger: the next player holds two
    cards or fewer; n players; my_size: own hand size)."""
    pts = float(_CARD_POINTS[c])
    rank = _CARD_RANK[c] if c < 52 else -1
    wd4 = c == C.WILD_DRAW_FOUR
    wild = c >= 52
    if danger:
        if wd4:
            return 400.0
        if rank == C.RANK_DRAW_TWO:
            return 350.0
        if rank == C.RANK_SKIP:
            return 300.0
        if rank == C.RANK_REVERSE:
            return 300.0 if n == 2 else 250.0
        if wild:
            return 50.0
        return 100.0 + pts
    if (n == 2 and (rank == C.RANK_SKIP or rank == C.RANK_REVERSE or rank == C.RANK_DRAW_TWO)
            and my_size >= 3):
        return 250.0 + pts
    if 0 <= rank <= 9:
        return 200.0 + pts
    if wild:
        return 11.0 if wd4 else 10.0
    return 100.0


@_helper(void(S, PRM, i8, i8, F64ROW, F64ROW))
def _baseline_scores(s, prm, i, code, sc, tmp):
    """sc = the scores of agents/rule_based.py's agent ``code`` (POLICY_GREEDY / _COLOR /
    _DEFENSIVE: RuleBasedAgent.scores with that agent's play_scores) for game i's acting
    seat, from what that seat may know (its hand, the public table, hand sizes and calls).

    The colour preference is computed in float32 as NumPy does on the float32 observation,
    so that the scores are equal, not only close. tmp: (>= 16,) scratch: tmp[0:4] colour
    counts, tmp[4:8] their points, tmp[8:12] the colour preference."""
    n = prm[P_PLAYERS]
    p = s.g[i, G_CURRENT]
    for k in range(12):
        tmp[k] = 0.0
    for c in range(52):
        h = s.hands[i, p, c]
        if h > 0:
            tmp[_CARD_COLOR[c]] += h
            tmp[4 + _CARD_COLOR[c]] += h * float(_CARD_POINTS[c])
    # Features.best_color: most cards, ties to more points, then to the first colour
    best = 0
    bv = tmp[0] * 1000.0 + tmp[4]
    maxc = tmp[0]
    for k in range(1, 4):
        val = tmp[k] * 1000.0 + tmp[4 + k]
        if val > bv:
            bv = val
            best = k
        maxc = max(maxc, tmp[k])
    # RuleBasedAgent.color_pref, in float32 (the observation's counts are float32)
    denom = F32(maxc + 1.0)
    for k in range(4):
        tmp[8 + k] = F32(F32(tmp[k]) / denom) * F32(0.5)
    tmp[8 + best] = F32(tmp[8 + best]) + F32(0.49)
    col = s.g[i, G_COLOR]
    holds = col >= 0 and tmp[col] > 0
    d = s.g[i, G_DIRECTION]
    nxt = (p + d + n) % n
    prev = (p - d + n) % n
    danger = s.pl[i, nxt, S_HAND_LEN] <= 2
    my_size = s.pl[i, p, S_HAND_LEN]
    for a in range(NA):
        sc[a] = S_NO
    for a in range(C.A_DRAW):
        c = _ACTION_CARD[a]
        named = _ACTION_COLOR[a]
        if code == POLICY_GREEDY:
            val = _greedy_play(c)
        elif code == POLICY_COLOR:
            val = _color_play(c, named, tmp, maxc)
        else:   # POLICY_DEFENSIVE
            val = _defensive_play(c, danger, n, my_size)
        if named >= 0:
            val += float(F32(tmp[8 + named]) * F32(0.9))
        if c == C.WILD_DRAW_FOUR and holds:
            val = S_BLUFF   # an honest agent: a Wild Draw Four holding the colour in play
        sc[a] = val
    sc[C.A_DRAW] = S_DRAW
    sc[C.A_KEEP] = S_KEEP
    sc[C.A_ACCEPT] = S_ACCEPT
    sc[C.A_CALL] = S_CALL
    prev_size = s.pl[i, prev, S_HAND_LEN]
    if prm[P_ONO_PENALTY] != ONO_NONE and prev_size == 1 and not s.pl[i, prev, S_CALLED]:
        sc[C.A_CATCH] = S_CATCH
    if prm[P_CHALLENGE]:
        # RuleBasedAgent.bluff_chance, from public information
        seen0 = 0.0
        seen1 = 0.0
        seen2 = 0.0
        seen3 = 0.0
        for k in range(s.g[i, G_DISCARD_LEN]):
            c = s.discard[i, k]
            if c < 52:
                cc = _CARD_COLOR[c]
                if cc == 0:
                    seen0 += 1
                elif cc == 1:
                    seen1 += 1
                elif cc == 2:
                    seen2 += 1
                else:
                    seen3 += 1
        seen0 += tmp[0]
        seen1 += tmp[1]
        seen2 += tmp[2]
        seen3 += tmp[3]
        deck0 = 0.0
        deck1 = 0.0
        deck2 = 0.0
        deck3 = 0.0
        total = 0
        for c in range(NC):
            total += prm[P_DECK + c]
            if c < 52:
                cc = _CARD_COLOR[c]
                if cc == 0:
                    deck0 += prm[P_DECK + c]
                elif cc == 1:
                    deck1 += prm[P_DECK + c]
                elif cc == 2:
                    deck2 += prm[P_DECK + c]
                else:
                    deck3 += prm[P_DECK + c]
        u = (max(deck0 - seen0, 0.0) + max(deck1 - seen1, 0.0)) + max(deck2 - seen2, 0.0)
        u = u + max(deck3 - seen3, 0.0)
        ut = max(float(total - s.g[i, G_DISCARD_LEN] - s.pl[i, p, S_HAND_LEN]), 1.0)
        q = (u / 4.0) / ut
        chance = 1.0 - (1.0 - q) ** float(prev_size + 1)
        if chance >= 0.5:
            sc[C.A_CHALLENGE] = S_CHALLENGE
    for k in range(4):
        sc[C.A_COLOR + k] = tmp[8 + k]
    for t in range(n - 1):   # swap with the opponent holding the fewest cards
        sc[C.A_TARGET + t] = -float(s.pl[i, (p + 1 + t) % n, S_HAND_LEN])


@_helper(void(S, PRM, i8, F64ROW, F64ROW))
def _greedy_scores(s, prm, i, sc, tmp):
    """The scores of GreedyAgent for game i's acting seat (see _baseline_scores); the
    search's playout policy and its preferred action."""
    _baseline_scores(s, prm, i, POLICY_GREEDY, sc, tmp)


@_inline
def _pick_best(lo, hi, sc, policy_rng, i):
    """The legal action (of the set lo, hi) with the highest score; ties (within 1e-6: the
    scores of different actions differ by much more) broken uniformly by policy_rng[i] (a
    reservoir draw in id order, one draw per tie after the first). -1 when none is legal."""
    best = -1e300
    ties = 0
    pick = -1
    while lo or hi:
        if lo:
            a = np.int64(_lowest_bit(lo))
            lo &= lo - ONE
        else:
            a = HI + np.int64(_lowest_bit(hi))
            hi &= hi - ONE
        if sc[a] > best + 1e-6:
            best = sc[a]
            ties = 1
            pick = a
        elif sc[a] > best - 1e-6:
            ties += 1
            if _next_u53(policy_rng, i) % ties == 0:
                pick = a
    return pick


@_helper(i8(S, PRM, i8, i8, U64ARR, F32_2D, F64ROW, F64ROW))
def _policy_action(s, prm, i, code, policy_rng, scratch_rewards, sc, tmp):
    """Game i's acting seat plays policy ``code``: POLICY_RANDOM a uniform legal action (the
    same draw and action as the engine's _random_action), else the best legal action by
    _baseline_scores with ties broken by policy_rng[i]. scratch_rewards[i] receives the
    rewards of the move. Returns the action, or -1 (nothing done) when none is legal."""
    lo, hi = legal_actions(s, prm, i)
    if code == POLICY_RANDOM:
        pick = _pick_random(lo, hi, policy_rng, i)
    else:
        _baseline_scores(s, prm, i, code, sc, tmp)
        pick = _pick_best(lo, hi, sc, policy_rng, i)
    if pick < 0:
        return -1
    for q in range(prm[P_PLAYERS]):
        scratch_rewards[i, q] = 0.0
    _apply(s, prm, i, pick, scratch_rewards)
    _advance(s, prm, i, scratch_rewards)
    return pick


@_kernel(void(*STATE, PRM, i8, BROW, F64_2D, F64ROW))
def baseline_scores(hands, held, pl, stock, discard, g, rng, prm, code, which, out, tmp):
    """out[i] = the scores of baseline ``code`` for game i's acting seat, for every i with
    which[i] (tests compare them with the NumPy agents)."""
    s = Arrays(hands, held, pl, stock, discard, g, rng)
    for i in range(out.shape[0]):
        if which[i]:
            _baseline_scores(s, prm, i, code, out[i], tmp)


@_kernel(i8(*STATE, PRM, I64_2D, U64ARR, BROW, i8, F64_2D, F32_2D, F64ROW, F64ROW, I64ARR))
def policy_moves(hands, held, pl, stock, discard, g, rng, prm, seat_policy, policy_rng, which,
                 max_steps, seat_rewards, scratch_rewards, sc, tmp, last_action):
    """Every game i with which[i] plays while it is not finished and its acting seat has a
    compiled policy (seat_policy[i, seat] >= 0, a POLICY_* code; -1: stop there), at most
    max_steps decisions (< 0: no limit). Game i draws from policy_rng[i]; every seat's
    rewards are added to seat_rewards (B, P) float64; last_action[i] = the last action game
    i played (unchanged when none). Returns the number of decisions taken (forced ones
    skipped by skip_forced not counted). Scratch: scratch_rewards (B, P), sc (A,),
    tmp (>= 16,)."""
    s = Arrays(hands, held, pl, stock, discard, g, rng)
    n = prm[P_PLAYERS]
    taken = 0
    for i in range(g.shape[0]):
        if not which[i]:
            continue
        steps = 0
        while (not (s.g[i, G_TERMINATED] or s.g[i, G_TRUNCATED])
               and (max_steps < 0 or steps < max_steps)):
            code = seat_policy[i, s.g[i, G_CURRENT]]
            if code < 0:
                break
            a = _policy_action(s, prm, i, code, policy_rng, scratch_rewards, sc, tmp)
            if a < 0:
                break   # no legal action: stop rather than spin
            for q in range(n):
                seat_rewards[i, q] += scratch_rewards[i, q]
            last_action[i] = a
            steps += 1
        taken += steps
    return taken
