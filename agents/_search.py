"""Compiled search support for :mod:`ono_env.agents.search`: the seat's view,
determinization, playouts, PIMC and ISMCTS.

The playout policies and the search's preferred action are the compiled baselines of
``ono_env.agents._baselines`` (``greedy``: ``_greedy_scores``, equal to the NumPy GreedyAgent's
scores; ``_policy_action``, ties broken by the playout generator); the policy codes
(POLICY_RANDOM, POLICY_GREEDY, ...) are defined there and re-exported here.

Written on the rules functions of :mod:`ono_env._engine` (imported from it, never changed
here). A module of its own so that its kernels are loaded (prebuilt or from numba's cache)
or compiled only when a search agent first plays: ``import ono_env`` and every other use of
the engine do not pay for them.
"""

from __future__ import annotations

import numba
import numpy as np

from ono_env import cards as C
from ono_env._compile import rules_function
from ono_env._engine import (
    Arrays,
    BROW,
    F32ROW,
    F32_2D,
    G_BLUFF,
    G_COLOR,
    G_CURRENT,
    G_DISCARD_LEN,
    G_DRAWN,
    G_EXPOSED,
    G_FRESH,
    G_PENDING,
    G_PHASE,
    G_PREVIOUS,
    G_ROUND,
    G_STOCK_LEN,
    G_TERMINATED,
    G_TRUNCATED,
    G_WINNER,
    I8ARR,
    I64ARR,
    NA,
    NC,
    NUM_G,
    NUM_S,
    PH_PENDING,
    PH_PLAY,
    PRM,
    P_CHALLENGE,
    P_DECK,
    P_PLAYERS,
    P_SCORING,
    P_TARGET,
    P_WD4_RESTRICTED,
    S,
    SCORING_NONE,
    SCORING_PENALTY,
    STATE,
    S_DREW,
    S_HAND_LEN,
    S_KNOWN,
    S_LACKS,
    S_LAST,
    S_NAMED,
    S_PREVIOUS,
    S_SCORE,
    S_SEEN,
    U64ARR,
    ZERO,
    _CARD_COLOR,
    _CARD_RANK,
    _advance,
    _apply,
    _bit,
    _helper,
    _holds_color,
    _inline,
    _kernel,
    _lacks_cards,
    _next_u53,
    _observe_row,
    _random_action,
    i8,
    legal_row,
    void,
)
from ono_env.agents._baselines import (  # noqa: F401 - the compiled baselines (greedy: the playouts')
    POLICY_CODES,
    POLICY_COLOR,
    POLICY_DEFENSIVE,
    POLICY_GREEDY,
    POLICY_RANDOM,
    _baseline_scores,
    _greedy_scores,
    _policy_action,
    baseline_scores,
)
from ono_env.observation import MAX_OPPONENTS, OBS2_OPPONENTS, OPPONENT_SIZE, OPP_PRESENT

VIEW_FAIR = 0     # the acting seat's knowledge: own hand, the public table, hand sizes
VIEW_HANDS = 1    # CHEATING: also every opponent's hand (the stock order stays unknown)
VIEW_ALL = 2      # CHEATING: the whole position, stock order included (not the generator)
VIEW_COLORS = 3   # CHEATING: how many cards of each colour (and of each wild) every hand holds
F64ROW = numba.float64[::1]


@_helper(void(S, i8, S, i8, i8))
def _copy_row(src, i, dst, j, mode):
    """dst row j = src row i; with mode VIEW_FAIR / VIEW_HANDS the hidden parts are blanked
    (see seat_view)."""
    me = src.g[i, G_CURRENT]
    P = src.hands.shape[1]
    for q in range(P):
        hide = mode == VIEW_FAIR and q != me
        for c in range(NC):
            dst.hands[j, q, c] = 0 if hide else src.hands[i, q, c]
        dst.held[j, q] = ZERO if hide else src.held[i, q]
        for k in range(NUM_S):
            dst.pl[j, q, k] = src.pl[i, q, k]
        for k in range(NUM_S, src.pl.shape[2]):   # what seat q privately knows (S_SEEN)
            dst.pl[j, q, k] = 0 if hide else src.pl[i, q, k]
    D = src.stock.shape[1]
    n_stock = src.g[i, G_STOCK_LEN]
    n_disc = src.g[i, G_DISCARD_LEN]
    for k in range(D):
        dst.stock[j, k] = src.stock[i, k] if (mode == VIEW_ALL and k < n_stock) else 0
        dst.discard[j, k] = src.discard[i, k] if k < n_disc else 0
    for k in range(NUM_G):
        dst.g[j, k] = src.g[i, k]
    if mode == VIEW_FAIR:
        dst.g[j, G_BLUFF] = 0
    dst.rng[j] = 0


@_kernel(void(*STATE, I64ARR, i8, *STATE))
def seat_view(hands, held, pl, stock, discard, g, rng, rows, mode,
              vhands, vheld, vpl, vstock, vdiscard, vg, vrng):
    """View row r = game rows[r] as its acting seat may know it (mode VIEW_FAIR): the other
    seats' hands are emptied (their sizes and calls kept), the stock is blanked (its size
    kept), the Wild Draw Four bluff flag (G_BLUFF) and the game's generator are zeroed, and
    the unused tails of the piles are cleared. The discard pile keeps its order: every
    player saw it played. VIEW_HANDS keeps the hands and the bluff flag (a cheat); VIEW_ALL
    also keeps the stock order (a cheat). Only the generator is never copied. The views'
    hand sets (held) are made again from their hand counts, so that a search never trusts
    the sets of the position it was given."""
    s = Arrays(hands, held, pl, stock, discard, g, rng)
    v = Arrays(vhands, vheld, vpl, vstock, vdiscard, vg, vrng)
    for r in range(rows.shape[0]):
        _copy_row(s, rows[r], v, r, mode)
        for q in range(hands.shape[1]):
            bits = ZERO
            for c in range(NC):
                if v.hands[r, q, c] > 0:
                    bits |= _bit(c)
            v.held[r, q] = bits


@_inline
def _shuffle_list(a, lo, hi, arng):
    """Fisher-Yates shuffle of a[lo:hi] with the generator arng[0]."""
    for k in range(hi - 1, lo, -1):
        t = lo + _next_u53(arng, 0) % (k - lo + 1)
        x = a[k]
        a[k] = a[t]
        a[t] = x


@_inline
def _named_before(v, r, prm, off, under):
    """The colour in force under a Wild Draw Four played on a wild of type ``under``, as the
    table saw it named: the colour its player named (``S_NAMED``), that player being a seat
    other than the Wild Draw Four's ``off`` whose last play (``S_LAST``) is that wild (the
    one who played the card under has not played since). -1 where no such seat or two that
    named other colours (the first card's wild, named by a seat that did not play it), or
    where the Wild Draw Four's player played that wild just before (it may be the card
    under, and its colour is gone from S_NAMED)."""
    if v.pl[r, off, S_PREVIOUS] == under + 1:
        return -1   # its own player may have played it, whose S_NAMED the Wild Draw Four took
    col = -1
    for q in range(prm[P_PLAYERS]):
        if q != off and v.pl[r, q, S_LAST] == under + 1 and v.pl[r, q, S_NAMED] > 0:
            c = v.pl[r, q, S_NAMED] - 1
            if col == -1:
                col = c
            elif col != c:
                return -1
    return col


@_inline
def _empty_hand(w, j, q):
    """Hand q of world row j holds nothing (before it is dealt)."""
    for c in range(NC):
        w.hands[j, q, c] = 0
    w.held[j, q] = ZERO


@_inline
def _deal_unseen(unseen, x, at, w, j, q):
    """Deal the card unseen[x] to hand q of world row j, keeping the dealt cards in front:
    it trades places with unseen[at] (x >= at); returns at + 1."""
    c = unseen[x]
    unseen[x] = unseen[at]
    unseen[at] = c
    w.hands[j, q, c] += 1
    w.held[j, q] |= _bit(c)
    return at + 1


FAIR_TRIES = 64
"""How many more deals, each from a fresh shuffle with the constrained hands first, a fair
world is given where its first deal left a hand short of the cards it is known to hold
(should every one fall short too, the last is kept as it was dealt)."""


@_inline
def _deal_fair(v, r, w, j, me, n, unseen, m, arng, tight):
    """Deal the other hands of world row j from unseen[0:m] (shuffled) under VIEW_FAIR:
    first the cards this seat knows each hand holds (S_SEEN: a swap, a challenge), so that
    no other hand is dealt them; then each hand by its size, its publicly known part (S_KNOWN
    cards, none of the types in S_LACKS) from the other types. Returns where the stock's cards
    begin in ``unseen``, or -1 - that where a hand got fewer than its S_KNOWN such cards: a
    seat dealt before it took them. ``tight``: deal every hand's known part first, the hand
    with the fewest such cards to spare first, before any hand's other cards (the deal in
    seat order, ``tight`` False, is the first try: the worlds it deals are those of before,
    wherever it keeps to what is known and no hand's seen cards are of the types it is known
    to hold (:func:`_known_left`); in seat order alone, on random-play positions of `basic`
    with ten players, 1.4% to 1.8% of the worlds left a hand short of them)."""
    for q in range(n):
        if q != me:
            _empty_hand(w, j, q)
    at = 0
    for q in range(n):
        if q == me:
            continue
        size = v.pl[r, q, S_HAND_LEN]
        held = 0
        for c in range(NC):
            need = v.pl[r, me, S_SEEN + NC * q + c]
            x = at
            while need > 0 and x < m and held < size:
                if unseen[x] == c:
                    at = _deal_unseen(unseen, x, at, w, j, q)
                    held += 1
                    need -= 1
                x += 1
    if at > 0:   # the rest in a fresh order (the list was shuffled before any was taken)
        _shuffle_list(unseen, at, m, arng)
    ok = True
    done = 0   # tight: the seats whose known part is dealt (bits)
    while tight:
        best = -1
        least = m + 1
        for q in range(n):
            if q == me or (done & (1 << q)) != 0:
                continue
            known = _known_left(v, r, w, j, q)
            if known <= 0:
                continue
            lacked = _lacks_cards(v.pl[r, q, S_LACKS])
            free = 0
            for x in range(at, m):
                if lacked & _bit(unseen[x]) == ZERO:
                    free += 1
            if free - known < least:
                least = free - known
                best = q
        if best < 0:
            break
        done |= 1 << best
        known = _known_left(v, r, w, j, best)
        lacked = _lacks_cards(v.pl[r, best, S_LACKS])
        got = 0
        for x in range(at, m):   # the first `known` such cards: a uniform choice among them
            if got == known:
                break
            if lacked & _bit(unseen[x]) == ZERO:
                at = _deal_unseen(unseen, x, at, w, j, best)
                got += 1
        if got < known:
            ok = False
        _shuffle_list(unseen, at, m, arng)
    for q in range(n):
        if q == me:
            continue
        size = v.pl[r, q, S_HAND_LEN] - _hand_len(w, j, q)
        known = 0 if tight else _known_left(v, r, w, j, q)
        if known > 0:
            # public knowledge: `known` of q's cards are none of the lacked types. The
            # first `known` such cards of the shuffled list go first (a uniform choice
            # among them), and the rest of the list is shuffled again.
            lacked = _lacks_cards(v.pl[r, q, S_LACKS])
            got = 0
            for x in range(at, m):
                if got == known:
                    break
                if lacked & _bit(unseen[x]) == ZERO:
                    y = unseen[x]
                    unseen[x] = unseen[at + got]
                    unseen[at + got] = y
                    got += 1
            if got < known:
                ok = False
            _shuffle_list(unseen, at + got, m, arng)
        for _ in range(size):
            if at < m:
                at = _deal_unseen(unseen, at, at, w, j, q)
    return at if ok else -1 - at


@_inline
def _hand_len(w, j, q):
    """The cards hand q of world row j holds."""
    held = 0
    for c in range(NC):
        held += w.hands[j, q, c]
    return held


@_inline
def _known_left(v, r, w, j, q):
    """How many of the cards still to be dealt to hand q of world row j must be of the types
    it is not known to lack: its S_KNOWN, less those of its cards dealt so far (the cards
    this seat knows it holds) that are of such types, at most the cards still to be dealt
    (what the table knows holds of the whole hand: before, the known cards were asked of
    the rest alone, over and above the seen cards of those types)."""
    lacked = _lacks_cards(v.pl[r, q, S_LACKS])
    held = 0
    fits = 0
    for c in range(NC):
        held += w.hands[j, q, c]
        if lacked & _bit(c) == ZERO:
            fits += w.hands[j, q, c]
    return max(0, min(v.pl[r, q, S_KNOWN] - fits, v.pl[r, q, S_HAND_LEN] - held))


@_helper(void(S, i8, S, i8, PRM, i8, U64ARR, I64ARR, I8ARR))
def _determinize(v, r, w, j, prm, mode, arng, counts, unseen):
    """World row j of w = view row r of v with what the view lacks sampled from arng[0]:
    the unseen cards (deck - own hand - discard pile, and - the other hands under
    VIEW_HANDS), listed by card type (never in the order of any true position), are
    shuffled and dealt to the other seats by their known sizes (VIEW_FAIR), the rest form
    the stock; the cards the acting seat knows a hand holds (S_SEEN: its own old hand after a
    swap, a hand shown to it in a challenge) are dealt to that hand first; the part of a
    seat's hand that is publicly known to lack some card types
    (S_KNOWN cards, none in S_LACKS: it drew without a playable card) is dealt from the
    other types only. The world gets a fresh generator. Under VIEW_FAIR a pending Wild Draw Four's
    bluff flag is derived from the sampled hand of its player: did it hold the colour of the
    card under the Wild Draw Four (a colour drawn from arng when that card is a wild, whose
    named colour the state does not keep). VIEW_COLORS (CHEATING) deals each other hand
    exactly its true count of each colour and of each wild type, the cards of a colour drawn
    uniformly from the unseen ones of that colour (a probe of what knowing the opponents'
    colours is worth: the hands' ranks, the public knowledge of S_SEEN and S_LACKS aside)."""
    n = prm[P_PLAYERS]
    me = v.g[r, G_CURRENT]
    _copy_row(v, r, w, j, VIEW_ALL)
    w.rng[j] = np.uint64(_next_u53(arng, 0))
    if mode == VIEW_ALL:
        return
    for c in range(NC):
        counts[c] = prm[P_DECK + c]
    for q in range(n):
        if q == me or mode == VIEW_HANDS:
            for c in range(NC):
                counts[c] -= v.hands[r, q, c]
    for k in range(v.g[r, G_DISCARD_LEN]):
        counts[v.discard[r, k]] -= 1
    m = 0
    for c in range(NC):
        for _ in range(max(counts[c], 0)):
            unseen[m] = c
            m += 1
    _shuffle_list(unseen, 0, m, arng)
    at = 0
    if mode == VIEW_COLORS:
        for q in range(n):
            if q == me:
                continue
            for c in range(NC):   # counts, no longer needed: the colours q's hand holds
                counts[c] = 0
            for c in range(NC):
                counts[_CARD_COLOR[c] if c < 52 else c] += v.hands[r, q, c]
            _empty_hand(w, j, q)
            for x in range(at, m):
                k = _CARD_COLOR[unseen[x]] if unseen[x] < 52 else unseen[x]
                if counts[k] > 0:
                    counts[k] -= 1
                    at = _deal_unseen(unseen, x, at, w, j, q)
        _shuffle_list(unseen, at, m, arng)   # the stock: the rest in a fresh order
    if mode == VIEW_FAIR:
        at = _deal_fair(v, r, w, j, me, n, unseen, m, arng, False)
        tries = 0
        while at < 0 and tries < FAIR_TRIES:   # a hand could not keep what is known of it
            _shuffle_list(unseen, 0, m, arng)
            at = _deal_fair(v, r, w, j, me, n, unseen, m, arng, True)
            tries += 1
        if at < 0:   # the last try's world, as dealt
            at = -at - 1
    ns = v.g[r, G_STOCK_LEN]
    for k in range(ns):
        w.stock[j, k] = unseen[at] if at < m else 0
        at += 1
    if mode == VIEW_FAIR:
        w.g[j, G_BLUFF] = 0
        nd = v.g[r, G_DISCARD_LEN]
        if (v.g[r, G_PHASE] == PH_PENDING and nd >= 2 and prm[P_WD4_RESTRICTED] != 0
                and v.discard[r, nd - 1] == C.WILD_DRAW_FOUR):
            under = v.discard[r, nd - 2]
            off = v.g[r, G_PREVIOUS]
            col = _CARD_COLOR[under] if under < 52 else _named_before(v, r, prm, off, under)
            if col < 0:   # not to be read from the table: any colour
                col = _next_u53(arng, 0) % 4
            if off >= 0 and _holds_color(w, j, off, col):
                w.g[j, G_BLUFF] = 1


@_kernel(void(*STATE, PRM, U64ARR, i8, *STATE, I64ARR, I8ARR, U64ARR))
def sample_worlds(vhands, vheld, vpl, vstock, vdiscard, vg, vrng, prm, seeds, mode,
                  whands, wheld, wpl, wstock, wdiscard, wg, wrng, counts, unseen, arng):
    """World row j = view row j determinized (_determinize) from the generator state
    seeds[j], as the searches sample them (tests check the worlds against the view).
    Scratch: counts (56,), unseen (D,), arng (2,) uint64."""
    v = Arrays(vhands, vheld, vpl, vstock, vdiscard, vg, vrng)
    w = Arrays(whands, wheld, wpl, wstock, wdiscard, wg, wrng)
    for j in range(seeds.shape[0]):
        arng[0] = seeds[j]
        _determinize(v, j, w, j, prm, mode, arng, counts, unseen)


POLICY_NET = 100
"""Playout policy code of a learned network (packed by :func:`pack_network`): every seat
plays its most likely legal action from its own observation in the world."""
POLICY_NET_AGAINST = 200
"""Playout policy codes ``POLICY_NET_AGAINST + b``: the searching seat plays the network (as
POLICY_NET), every other seat the compiled baseline ``b`` (a model of the opponents)."""
ACT_TANH = 0
ACT_RELU = 1
NET_ACTIVATIONS = {"tanh": ACT_TANH, "relu": ACT_RELU}


def pack_network(scale: np.ndarray, layers: list, activation: str,
                 encoder: tuple[np.ndarray, np.ndarray] | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """A policy network (``obs / scale``, hidden layers ``[(weight (out, in), bias), ...]``
    with ``activation``, the logits head last; the format of :mod:`ono_env.agents.learned`)
    as the two arrays the compiled playouts read: ``weights`` (float32: the scale, then with
    an opponent ``encoder`` its weight transposed to (127, E) and its bias, then each hidden
    layer's weight transposed to (in, out) and its bias, then the head's weight as (A, in)
    and its bias) and ``shape`` (int64: number of hidden layers, activation code,
    observation size, each hidden size, number of actions, then E, 0 without an encoder)."""
    *hidden, (w_out, b_out) = layers
    parts = [np.asarray(scale, np.float32).ravel()]
    width = 0
    if encoder is not None:
        parts += [np.asarray(encoder[0], np.float32).T.ravel(),
                  np.asarray(encoder[1], np.float32).ravel()]
        width = int(np.asarray(encoder[0]).shape[0])
    for w, b in hidden:
        parts += [np.asarray(w, np.float32).T.ravel(), np.asarray(b, np.float32).ravel()]
    parts += [np.asarray(w_out, np.float32).ravel(), np.asarray(b_out, np.float32).ravel()]
    shape = [len(hidden), NET_ACTIVATIONS[activation], int(np.asarray(scale).size)]
    shape += [int(np.asarray(w).shape[0]) for w, _ in hidden] + [int(np.asarray(w_out).shape[0])]
    shape += [width]
    return np.ascontiguousarray(np.concatenate(parts), np.float32), np.asarray(shape, np.int64)


def network_scratch(shape: np.ndarray) -> np.ndarray:
    """The ``(2, width)`` float32 scratch that the compiled network code writes its layers
    into, for a network packed by :func:`pack_network`: wide enough for the scaled
    observation, each hidden layer, and (with an opponent encoder of width E) the encoded
    features ``OBS2_OPPONENTS + MAX_OPPONENTS * E`` that the first layer reads."""
    n = int(shape[0])
    E = int(shape[4 + n])
    width = max([int(shape[2])] + [int(h) for h in shape[3:3 + n]]
                + [OBS2_OPPONENTS + MAX_OPPONENTS * E if E else 0])
    return np.zeros((2, width), np.float32)


@_inline
def _net_inputs(shape):
    """(offset of the first hidden layer's weights, its input size) in a packed network."""
    n = shape[0]
    E = shape[4 + n]
    if E == 0:
        return shape[2], shape[2]
    return shape[2] + OPPONENT_SIZE * E + E, OBS2_OPPONENTS + MAX_OPPONENTS * E


@_inline
def _squash(x, act):
    """The hidden activation: tanh as a rational function (Lambert's continued fraction,
    clamped; within 1e-4 of tanh, and several times cheaper than the libm call in the
    playouts' innermost loop), or relu."""
    if act == ACT_RELU:
        return max(x, np.float32(0.0))
    x = min(max(x, np.float32(-4.97)), np.float32(4.97))
    x2 = x * x
    return x * (np.float32(135135.0) + x2 * (np.float32(17325.0) + x2 * (np.float32(378.0) + x2))) / (
        np.float32(135135.0) + x2 * (np.float32(62370.0) + x2 * (np.float32(3150.0) + x2 * np.float32(28.0))))


def _net_function(sig):
    """A rules function of the network's arithmetic: like ``_helper``, with fast-math, so
    that LLVM may reorder the float32 sums of the dot products and vectorise them (the
    results differ from the NumPy network's in the last bits)."""
    return rules_function(sig, fastmath=True)


@_net_function(numba.float32(i8, F32ROW, I64ARR, F32_2D))
def _net_logit(a, weights, shape, hid):
    """Logit a of the network (weights, shape: pack_network) at the observation whose
    hidden layers _net_hidden last wrote into hid."""
    n = shape[0]
    off, size = _net_inputs(shape)
    for layer in range(n):
        h = shape[3 + layer]
        off += size * h + h
        size = h
    A = shape[3 + n]
    x = hid[(n - 1) % 2]
    s = weights[off + A * size + a]
    row = weights[off + a * size:off + (a + 1) * size]   # views: LLVM vectorises these loops
    for m in range(size):
        s += row[m] * x[m]
    return s


@_net_function(void(F32ROW, F32ROW, I64ARR, F32_2D))
def _net_hidden(obs, weights, shape, hid):
    """The hidden layers of the network at observation obs: the last one's output lands in
    hid[(n - 1) % 2] (for no hidden layer, the scaled observation in hid[1], or with an
    opponent encoder its encoded features). Zero inputs are skipped (the observation is
    mostly zeros)."""
    n = shape[0]
    act = shape[1]
    size = shape[2]
    E = shape[4 + n]
    if n == 0 and E == 0:   # (before: with an encoder too, which _net_logit then read
        # as the encoded features)
        for d in range(size):
            hid[1, d] = obs[d] / weights[d]
        return
    off, size = _net_inputs(shape)
    if E > 0:
        # version 2: the fixed part scaled, then each opponent block through the encoder,
        # into hid[1], which the first layer then reads like a hidden layer's output
        feat = hid[1]
        for d in range(OBS2_OPPONENTS):
            feat[d] = obs[d] / weights[d]
        w_enc = shape[2]
        b_enc = shape[2] + OPPONENT_SIZE * E
        for k in range(MAX_OPPONENTS):
            base = OBS2_OPPONENTS + k * OPPONENT_SIZE
            out_at = OBS2_OPPONENTS + k * E
            for e in range(E):
                feat[out_at + e] = 0.0
            if obs[base + OPP_PRESENT] == 0.0:
                continue
            for e in range(E):
                feat[out_at + e] = weights[b_enc + e]
            for d in range(OPPONENT_SIZE):
                x = obs[base + d]
                if x == 0.0:
                    continue
                x = x / weights[base + d]
                row = weights[w_enc + d * E:w_enc + (d + 1) * E]
                for e in range(E):
                    feat[out_at + e] += x * row[e]
            for e in range(E):
                feat[out_at + e] = _squash(feat[out_at + e], act)
    for layer in range(n):
        h = shape[3 + layer]
        out = hid[layer % 2]
        src = hid[(layer + 1) % 2]
        bias = weights[off + size * h:off + size * h + h]
        for k in range(h):
            out[k] = bias[k]
        for d in range(size):
            if layer == 0 and E == 0:
                x = obs[d]
                if x == 0.0:
                    continue
                x = x / weights[d]
            else:
                x = src[d]
                if x == 0.0:
                    continue
            row = weights[off + d * h:off + (d + 1) * h]
            for k in range(h):
                out[k] += x * row[k]
        for k in range(h):
            out[k] = _squash(out[k], act)
        off += size * h + h
        size = h


@_inline
def _count_legal(legal):
    """(how many actions ``legal`` marks, the last of them or -1)."""
    count = 0
    last = -1
    for a in range(NA):
        if legal[a]:
            count += 1
            last = a
    return count, last


@_helper(i8(S, PRM, i8, F32ROW, I64ARR, F32ROW, F32_2D, BROW))
def _net_choice(w, prm, j, weights, shape, obs, hid, legal):
    """The network's most likely legal action for world row j's acting seat, from that
    seat's observation (the first of equal logits); -1 when none is legal. A lone legal
    action is returned without running the network (over half of the decisions of the
    shipped basic 2-player policy's self-play)."""
    legal_row(w, prm, j, legal)
    count, pick = _count_legal(legal)
    if count <= 1:
        return pick
    _observe_row(w, prm, j, w.g[j, G_CURRENT], obs)
    _net_hidden(obs, weights, shape, hid)
    pick = -1
    best = np.float32(0.0)
    for a in range(NA):
        if legal[a]:
            s = _net_logit(a, weights, shape, hid)
            if pick < 0 or s > best:
                best = s
                pick = a
    return pick


@_kernel(void(F32_2D, numba.boolean[:, ::1], F32ROW, I64ARR, F32_2D, F32_2D, I64ARR))
def network_logits(obs, legal, weights, shape, hid, out, choice):
    """out[i, a] = the packed network's logit of every legal action a at observation row i
    (-inf elsewhere) and choice[i] its pick (_net_choice's rule), as the playouts compute
    them (tests compare them with the NumPy network)."""
    for i in range(obs.shape[0]):
        _net_hidden(obs[i], weights, shape, hid)
        choice[i] = -1
        for a in range(out.shape[1]):
            out[i, a] = -np.inf
            if legal[i, a]:
                out[i, a] = _net_logit(a, weights, shape, hid)
                if choice[i] < 0 or out[i, a] > out[i, choice[i]]:
                    choice[i] = a


ROUND_POINTS_SCALE = 50.0
"""A round of a match is valued 1 / (1 + exp(-d / 50)) for a seat whose score moved d points
better than its rivals' (about a typical round's points)."""


@_helper(void(S, PRM, i8, i8, F64ROW))
def _round_values(w, prm, j, start_round, tmp):
    """tmp[32 + q] = the value of world row j's playout for seat q, given the scores before
    it in tmp[16 + q]: a round that did not finish 1/N; a single round (or a match that
    ended) 1 for its winner, else 0, and in a penalty-scored match the engine's reward r
    mapped linearly onto that scale, ((N-1) r + 1) / N (k seats tied on the lowest total:
    r = +1/k each, the others -1/(N-k), under 0, down to (2 - N) / N); a round of a match
    that goes on a logistic of the points the seat gained over its rivals (winner scoring: its gain minus the best other
    gain; penalty scoring: the others' mean penalty minus its own)."""
    n = prm[P_PLAYERS]
    finished = w.g[j, G_ROUND] != start_round
    winner = w.g[j, G_WINNER]
    if not finished:
        for q in range(n):
            tmp[32 + q] = 1.0 / n
        return
    if prm[P_TARGET] == 0 or prm[P_SCORING] == SCORING_NONE:
        for q in range(n):
            tmp[32 + q] = 1.0 if q == winner else 0.0
        return
    penalty = prm[P_SCORING] == SCORING_PENALTY
    if w.g[j, G_TERMINATED]:
        low = w.pl[j, 0, S_SCORE]
        for q in range(n):
            low = min(low, w.pl[j, q, S_SCORE])
        tied = 0   # a penalty-scored match: the k seats on the lowest total share the win
        for q in range(n):
            tied += w.pl[j, q, S_SCORE] == low
        for q in range(n):
            if penalty and tied < n:
                # the engine's reward r (+1/k, the others -1/(N-k)) on this scale, where a
                # sole win is 1, a loss to one winner 0 and a game cut unfinished 1/N (r = 0)
                r = 1.0 / tied if w.pl[j, q, S_SCORE] == low else -1.0 / (n - tied)
                tmp[32 + q] = ((n - 1) * r + 1.0) / n
            elif penalty:
                tmp[32 + q] = 1.0 / n
            else:
                tmp[32 + q] = 1.0 if q == winner else 0.0
        return
    for q in range(n):
        gain = w.pl[j, q, S_SCORE] - tmp[16 + q]
        if penalty:
            others = 0.0
            for t in range(n):
                if t != q:
                    others += w.pl[j, t, S_SCORE] - tmp[16 + t]
            d = others / (n - 1) - gain
        else:
            best = -1e300
            for t in range(n):
                if t != q:
                    best = max(best, w.pl[j, t, S_SCORE] - tmp[16 + t])
            d = gain - best
        tmp[32 + q] = 1.0 / (1.0 + np.exp(-d / ROUND_POINTS_SCALE))


@_helper(numba.float64(S, PRM, i8, i8, i8, i8, i8, U64ARR, F32_2D, F64ROW, F64ROW, F32ROW,
                       I64ARR, F32ROW, F32_2D, BROW))
def _playout(w, prm, j, me, start_round, policy, max_len, policy_rng, rewards, sc, tmp,
             weights, shape, obs, hid, row):
    """Play world row j (the policy drawing from policy_rng[j]) to the end of the round
    begun as round start_round with the playout policy (at most max_len decisions, and the
    game's max_decisions): a compiled baseline, POLICY_NET, the network (weights, shape;
    scratch obs, hid, row) for every seat, or POLICY_NET_AGAINST + b, the network for seat
    me and the baseline b for every other seat. Returns seat me's value (_round_values;
    tmp[16:16+N] must hold the scores before the playout's first action) and leaves every
    seat's in tmp[32:32+N]."""
    steps = 0
    while (not (w.g[j, G_TERMINATED] or w.g[j, G_TRUNCATED]) and w.g[j, G_ROUND] == start_round
           and steps < max_len):
        if policy == POLICY_RANDOM:
            ok = _random_action(w, prm, j, policy_rng, rewards)
        elif policy == POLICY_NET or (policy >= POLICY_NET_AGAINST
                                      and w.g[j, G_CURRENT] == me):
            a = _net_choice(w, prm, j, weights, shape, obs, hid, row)
            ok = a >= 0
            if ok:
                for q in range(prm[P_PLAYERS]):
                    rewards[j, q] = 0.0
                _apply(w, prm, j, a, rewards)
                _advance(w, prm, j, rewards)
        else:   # a compiled baseline (ono_env.agents._baselines), ties broken by policy_rng[j]
            b = policy - POLICY_NET_AGAINST if policy >= POLICY_NET_AGAINST else policy
            ok = _policy_action(w, prm, j, b, policy_rng, rewards, sc, tmp) >= 0
        if not ok:
            break
        steps += 1
    _round_values(w, prm, j, start_round, tmp)
    return tmp[32 + me]


@_helper(i8(S, i8, S, i8, PRM, i8, F64ROW, F64ROW, BROW))
def _model_misses(v, r, w, j, prm, code, sc, tmp, row):
    """How many of the acting seat's opponents in world row j of w did not play as the
    compiled baseline ``code`` (``greedy``, ``color`` or ``defensive``) would have with the
    hand the world gives them: the search's model of its opponents. Each opponent of view row
    r whose last turn ended with a play (S_LAST, S_DREW 0) is checked, from what every player
    saw:

    - a wild whose colour it named (S_NAMED): such a baseline names the colour it holds most
      of (most cards, ties to more points, then to the first colour), and its hand has not
      changed at its own turns since; the world's hand must hold most of that colour;
    - its last card, found in the top ``players`` cards of the discard pile (the one copy of
      that card type there, and no other seat's last play) on a card that is neither a wild
      nor a Draw Two: its decision is
      rebuilt in world row 2 (its hand the world's plus that card, that card's colour in
      play, the table as now otherwise), and no legal play may score more than the one it
      made (_baseline_scores; ties count as agreeing).

    A hand changed outside its turns since (a swap, a penalty) or a table changed in other
    ways (a direction, other hands' sizes, which only ``defensive`` reads) may count
    wrongly: the count only ranks the worlds dealt (pimc_search's ``tries``). Scratch: world
    row 2, sc and tmp (_baseline_scores), row (A,)."""
    me = v.g[r, G_CURRENT]
    n = prm[P_PLAYERS]
    nd = v.g[r, G_DISCARD_LEN]
    # a Wild Draw Four challenged since (its own, or one played on it) moves cards to or from
    # a hand outside a play, a Wild Shuffle Hands or a Wild Customizable's swap gives it
    # another hand: where the deck has such cards, a seat is checked only if none has been
    # played since its card
    movers = prm[P_CHALLENGE] or prm[P_DECK + C.WILD_SHUFFLE_HANDS] > 0 \
        or prm[P_DECK + C.WILD_CUSTOMIZABLE] > 0
    _copy_row(w, j, w, 2, VIEW_ALL)
    misses = 0
    for q in range(n):
        last = v.pl[r, q, S_LAST] - 1
        named = v.pl[r, q, S_NAMED] - 1
        if q == me or last < 0 or v.pl[r, q, S_DREW] != 0:
            continue
        at = -1
        for o in range(n):   # another seat's last play of the same type: whose is unknown
            if o != q and v.pl[r, o, S_LAST] - 1 == last:
                at = -2
        for x in range(nd - 1, max(0, nd - n) - 1, -1):
            if at != -2 and w.discard[j, x] == last:
                at = x if at < 0 else -2   # -2: two copies, whose is unknown
        if movers:
            if at < 0:
                continue
            moved = False
            for x in range(at, nd):
                c = w.discard[j, x]
                moved |= ((c == C.WILD_DRAW_FOUR and prm[P_CHALLENGE])
                          or c >= C.WILD_SHUFFLE_HANDS)
            if moved:
                continue
        miss = False
        if last >= 52 and named >= 0:
            # the colour the baseline names with the world's hand: the largest of its colour
            # preference (tmp[8:12], _baseline_scores; the colour held most, by 0.49 or more)
            w.g[2, G_CURRENT] = q
            _baseline_scores(w, prm, 2, code, sc, tmp)
            for k in range(4):
                miss |= tmp[8 + k] > tmp[8 + named]
        a = -1
        if last < 52:
            a = last
        elif last == C.WILD and named >= 0:
            a = C.A_PLAY_W + named
        elif last == C.WILD_DRAW_FOUR and named >= 0:
            a = C.A_PLAY_WD4 + named
        if miss or a < 0 or at < 1:
            misses += miss
            continue
        below = w.discard[j, at - 1]
        if below >= 52 or _CARD_RANK[below] == C.RANK_DRAW_TWO:
            continue
        w.hands[2, q, last] += 1
        w.held[2, q] |= _bit(last)
        w.pl[2, q, S_HAND_LEN] += 1
        w.g[2, G_CURRENT] = q
        w.g[2, G_PHASE] = PH_PLAY
        w.g[2, G_PENDING] = 0
        w.g[2, G_DRAWN] = -1
        w.g[2, G_FRESH] = 1
        w.g[2, G_EXPOSED] = -1
        w.g[2, G_COLOR] = _CARD_COLOR[below]
        w.g[2, G_DISCARD_LEN] = at
        legal_row(w, prm, 2, row)
        if row[a]:
            _baseline_scores(w, prm, 2, code, sc, tmp)
            for x in range(C.A_DRAW):
                if row[x] and sc[x] > sc[a] + 1e-6:
                    misses += 1
                    break
        w.hands[2, q, last] -= 1
        if w.hands[2, q, last] == 0:
            w.held[2, q] &= ~_bit(last)
        w.pl[2, q, S_HAND_LEN] -= 1
    return misses


@_helper(numba.float64(S, i8, S, PRM, i8, numba.float64, F32ROW, I64ARR, F32ROW, F32_2D, BROW,
                       F32_2D))
def _belief_weight(b, r, w, prm, act, temp, weights, shape, obs, hid, legal, rewards):
    """How likely the blueprint network (weights, shape) makes what the opponent just did,
    if it holds world row 0's hand: a 2-player game whose acting seat took action ``act`` in
    its earlier view b row r (its decision before this one), after which the opponent played
    the card now on top of the discard pile from its hand, in one decision. World row 2 is
    that earlier view with the opponent's hand = its hand in world row 0 plus that card, and
    ``act`` applied (the opponent's decision); row 3 is row 2 after the opponent's play,
    which must give the public position of world row 0 (acting seat, its hand, the
    opponent's hand size, discard pile, colour), else the record does not describe how this
    position came about and the weight is 1. The weight is the network's probability of the
    play among the legal actions (softmax of the logits / temp, at least 1e-300); 1 when the
    opponent had no choice. Scratch: rewards (4, P)."""
    if prm[P_PLAYERS] != 2:
        return 1.0
    me = w.g[0, G_CURRENT]
    opp = 1 - me
    nd = w.g[0, G_DISCARD_LEN]
    if nd < 1 or b.g[r, G_CURRENT] != me:
        return 1.0
    card = w.discard[0, nd - 1]
    _copy_row(b, r, w, 2, VIEW_ALL)
    size = 0
    held = ZERO
    for c in range(NC):
        k = w.hands[0, opp, c] + (1 if c == card else 0)
        w.hands[2, opp, c] = k
        size += k
        if k > 0:
            held |= _bit(c)
    w.held[2, opp] = held
    if size != w.pl[2, opp, S_HAND_LEN]:
        return 1.0
    for q in range(2):
        rewards[2, q] = 0.0
    _apply(w, prm, 2, act, rewards)
    _advance(w, prm, 2, rewards)
    if (w.g[2, G_TERMINATED] or w.g[2, G_TRUNCATED] or w.g[2, G_CURRENT] != opp
            or w.g[2, G_PHASE] != PH_PLAY):
        return 1.0
    col = w.g[0, G_COLOR]
    if card < C.WILD:
        a = card
    elif card == C.WILD and col >= 0:
        a = C.A_PLAY_W + col
    elif card == C.WILD_DRAW_FOUR and col >= 0:
        a = C.A_PLAY_WD4 + col
    else:
        return 1.0
    legal_row(w, prm, 2, legal)
    count, _ = _count_legal(legal)
    if not legal[a] or count <= 1:
        return 1.0
    _copy_row(w, 2, w, 3, VIEW_ALL)
    for q in range(2):
        rewards[3, q] = 0.0
    _apply(w, prm, 3, a, rewards)
    _advance(w, prm, 3, rewards)
    if (w.g[3, G_CURRENT] != me or w.g[3, G_DISCARD_LEN] != nd or w.g[3, G_COLOR] != col
            or w.pl[3, opp, S_HAND_LEN] != w.pl[0, opp, S_HAND_LEN]):
        return 1.0
    for k in range(nd):
        if w.discard[3, k] != w.discard[0, k]:
            return 1.0
    for c in range(NC):
        if w.hands[3, me, c] != w.hands[0, me, c]:
            return 1.0
    _observe_row(w, prm, 2, opp, obs)
    _net_hidden(obs, weights, shape, hid)
    top = -1e300
    for x in range(NA):
        if legal[x]:
            top = max(top, np.float64(_net_logit(x, weights, shape, hid)))
    total = 0.0
    mine = 0.0
    for x in range(NA):
        if legal[x]:
            e = np.exp((np.float64(_net_logit(x, weights, shape, hid)) - top) / temp)
            total += e
            if x == a:
                mine = e
    return max(mine / total, 1e-300)   # never 0 (exp underflows at a low temp): wsum > 0


@_kernel(void(*STATE, *STATE, PRM, I64ARR, numba.float64, F32ROW, I64ARR, F32ROW, F32_2D, BROW,
              F32_2D, *STATE, F64ROW))
def belief_weights(bhands, bheld, bpl, bstock, bdiscard, bg, brng, whands, wheld, wpl, wstock,
                   wdiscard, wg, wrng, prm, acts, temp, weights, shape, obs, hid, legal, rewards,
                   shands, sheld, spl, sstock, sdiscard, sg, srng, out):
    """out[j] = the belief weight (_belief_weight) of world row j of w* given the earlier
    view row j of b* and the action acts[j] taken there, as the search computes it (tests
    compare it with the NumPy network). Scratch: s* four rows, rewards (4, P)."""
    b = Arrays(bhands, bheld, bpl, bstock, bdiscard, bg, brng)
    w = Arrays(whands, wheld, wpl, wstock, wdiscard, wg, wrng)
    sc = Arrays(shands, sheld, spl, sstock, sdiscard, sg, srng)
    for j in range(wg.shape[0]):
        _copy_row(w, j, sc, 0, VIEW_ALL)
        out[j] = _belief_weight(b, j, sc, prm, acts[j], temp, weights, shape, obs, hid, legal,
                                rewards)


@_kernel(void(*STATE, *STATE, PRM, i8, *STATE, F64ROW, F64ROW, BROW, I64ARR))
def model_misses(vhands, vheld, vpl, vstock, vdiscard, vg, vrng, whands, wheld, wpl, wstock,
                 wdiscard, wg, wrng, prm, code, shands, sheld, spl, sstock, sdiscard, sg, srng,
                 scores, tmp, row, out):
    """out[r] = _model_misses of world row r of w* for view row r of v* with the baseline
    ``code`` (tests: the true position of a table of that baseline misses few). Scratch: s*
    three rows, scores (A,), tmp (>= 16,), row (A,)."""
    v = Arrays(vhands, vheld, vpl, vstock, vdiscard, vg, vrng)
    w = Arrays(whands, wheld, wpl, wstock, wdiscard, wg, wrng)
    sc = Arrays(shands, sheld, spl, sstock, sdiscard, sg, srng)
    for r in range(vg.shape[0]):
        _copy_row(w, r, sc, 0, VIEW_ALL)
        out[r] = _model_misses(v, r, sc, 0, prm, code, scores, tmp, row)


@_inline
def _legal_count(v, prm, r, legal, values, out):
    """Row r's legal actions into ``legal``; values[r] = -1 everywhere; out[r] = the last
    legal action (the answer when it is the only one). Returns how many are legal."""
    legal_row(v, prm, r, legal)
    for a in range(NA):
        values[r, a] = -1.0
    count, last = _count_legal(legal)
    out[r] = last
    return count


@_kernel(void(*STATE, PRM, U64ARR, i8, i8, i8, i8, numba.float64, I64ARR, *STATE, I64ARR,
              numba.float64, i8, *STATE, I64ARR,
              I8ARR, U64ARR, numba.float64[:, ::1], F32_2D, BROW, F64ROW, F64ROW, F32ROW, I64ARR,
              F32ROW, F32_2D, BROW, I64ARR))
def pimc_search(vhands, vheld, vpl, vstock, vdiscard, vg, vrng, prm, seeds, n_worlds, mode,
                policy, max_len, margin, prior, bhands, bheld, bpl, bstock, bdiscard, bg, brng,
                bact, temp, tries, whands, wheld, wpl, wstock, wdiscard, wg, wrng,
                counts, unseen, arng, values, rewards, legal, sc, tmp, weights, shape, obs, hid,
                row, out):
    """Perfect-information Monte Carlo for every view row r (seat_view output): n_worlds
    worlds are sampled (_determinize, from the generator state seeds[r]); in each, every
    legal action is applied to a copy and played out to the end of the round with the
    playout policy, the same playout generator for every action of a world (common random
    numbers). out[r] = the action with the most round wins, except that a prior choice is
    kept unless the best action beats it by more than ``margin`` (margin < 0: no
    preference; ties then broken by the generator): prior[r] where it is >= 0 (the
    caller's, e.g. a learned policy's from the seat's observation), else the compiled
    greedy's (from the view: own hand and public table); a decision with one legal action
    is returned without search. values (R, A) receives the mean playout value of each legal action (-1 elsewhere).

    Belief (temp > 0, 2 players): b* holds, for each view row r with bact[r] >= 0, the acting
    seat's view at its previous decision in the same game, where it took action bact[r]; the
    network (weights, shape) is then the opponent's model (the blueprint it is assumed to
    play), and each world counts with the weight _belief_weight gives it (how likely the
    opponent's play since then is with that world's hand): values are weighted means.

    The opponents' model (tries > 1; the playouts' opponents, a baseline ``b`` of
    POLICY_NET_AGAINST + b or the baseline ``policy``): each world is dealt up to ``tries``
    times, until every opponent's last play is what that baseline would have played with the
    hand the world gives it (_model_misses), else the deal with the fewest misses is played
    (the first of them): the worlds follow what the opponents' plays and named colours say
    of their hands.

    Scratch: w* four rows (world, playout, and the belief's two), counts (56,), unseen (D,),
    arng (2,) uint64 (agent, playout policy), rewards (4, P), legal (A,), sc (A,),
    tmp (>= 32 + N,); for POLICY_NET playouts or a belief the network (weights, shape:
    pack_network) and obs (observation size,), hid (2, the largest hidden layer or the
    observation size), row (A,).

    The value of a playout is a round win (single rounds), or in a match a logistic of
    the points gained over the rivals in the round (_round_values)."""
    v = Arrays(vhands, vheld, vpl, vstock, vdiscard, vg, vrng)
    b = Arrays(bhands, bheld, bpl, bstock, bdiscard, bg, brng)
    w = Arrays(whands, wheld, wpl, wstock, wdiscard, wg, wrng)
    for r in range(vg.shape[0]):
        if _legal_count(v, prm, r, legal, values, out) <= 1:
            continue
        for a in range(NA):
            if legal[a]:
                values[r, a] = 0.0
        wsum = 0.0
        arng[0] = seeds[r]
        me = v.g[r, G_CURRENT]
        start_round = v.g[r, G_ROUND]
        for q in range(prm[P_PLAYERS]):
            tmp[16 + q] = v.pl[r, q, S_SCORE]   # scores before: round values in a match
        model = policy - POLICY_NET_AGAINST if policy >= POLICY_NET_AGAINST else policy
        for _ in range(n_worlds):
            _determinize(v, r, w, 0, prm, mode, arng, counts, unseen)
            if tries > 1:
                fewest = _model_misses(v, r, w, 0, prm, model, sc, tmp, row)
                t = 1
                while fewest > 0 and t < tries:   # row 1, the playouts' row, as scratch
                    _determinize(v, r, w, 1, prm, mode, arng, counts, unseen)
                    misses = _model_misses(v, r, w, 1, prm, model, sc, tmp, row)
                    if misses < fewest:
                        fewest = misses
                        _copy_row(w, 1, w, 0, VIEW_ALL)
                        w.rng[0] = w.rng[1]
                    t += 1
            play_seed = _next_u53(arng, 0)
            weight = 1.0
            if temp > 0.0 and bact[r] >= 0:
                weight = _belief_weight(b, r, w, prm, bact[r], temp, weights, shape, obs, hid,
                                        row, rewards)
            wsum += weight
            for a in range(NA):
                if not legal[a]:
                    continue
                _copy_row(w, 0, w, 1, VIEW_ALL)
                w.rng[1] = w.rng[0]
                arng[1] = np.uint64(play_seed)
                for q in range(prm[P_PLAYERS]):
                    rewards[1, q] = 0.0
                _apply(w, prm, 1, a, rewards)
                _advance(w, prm, 1, rewards)
                values[r, a] += weight * _playout(w, prm, 1, me, start_round, policy, max_len,
                                                  arng, rewards, sc, tmp, weights, shape, obs,
                                                  hid, row)
        best = -1.0
        ties = 0
        for a in range(NA):
            if not legal[a]:
                continue
            values[r, a] /= wsum
            if values[r, a] > best + 1e-9:
                best = values[r, a]
                ties = 1
                out[r] = a
            elif values[r, a] > best - 1e-9:
                ties += 1
                if _next_u53(arng, 0) % ties == 0:
                    out[r] = a
        if margin >= 0.0:
            gb = prior[r]
            if gb < 0:
                _greedy_scores(v, prm, r, sc, tmp)
                gs = -1e300
                for a in range(NA):
                    if legal[a] and sc[a] > gs + 1e-6:
                        gs = sc[a]
                        gb = a
            if gb >= 0 and values[r, out[r]] - values[r, gb] <= margin + 1e-9:
                out[r] = gb


I32_2D = numba.int32[:, ::1]


@_kernel(void(*STATE, PRM, U64ARR, i8, i8, i8, i8, numba.float64, *STATE, I64ARR, I8ARR,
              U64ARR, I32_2D, F64ROW, F64ROW, F64ROW, I64ARR, I64ARR,
              numba.float64[:, ::1], F32_2D, BROW, BROW, F64ROW, F64ROW, F32ROW, I64ARR, F32ROW,
              F32_2D, i8, I64ARR, I64ARR))
def ismcts_search(vhands, vheld, vpl, vstock, vdiscard, vg, vrng, prm, seeds, n_iter, mode,
                  policy, max_len, explore, whands, wheld, wpl, wstock, wdiscard, wg, wrng,
                  counts, unseen, arng, child, visits, total, avail, path, movers, values,
                  rewards, row, legal, sc, tmp, weights, shape, obs, hid, resume, nodes, out):
    """Single-observer Information-Set MCTS (Cowling, Powley and Whitehouse 2012) for every
    view row r: each of n_iter iterations samples a world from the view (_determinize),
    descends the tree of action sequences choosing among the actions legal in that world by
    UCB1 with availability counts (explore: the constant), expands one untried action (the
    compiled greedy's favourite first), plays out to the end of the round with the playout
    policy and credits every node with the playout's value for its mover (_round_values). out[r] = the most visited root
    action; values[r, a] = the mean result of root action a (-1 where not legal). A decision
    with one legal action is returned without search.

    resume = 1 (one view row only): go on with the tree and the generator arng that an
    earlier call for the same row left (n_iter more iterations; a time budget calls in
    batches); nodes[0] = the tree's nodes in use, read when resuming and written always.

    Scratch: child (>= nodes in use + n_iter + 1, A) int32, visits/total/avail (as many),
    path and movers (one more), the rest as pimc_search (tmp: >= 32 + N; the playouts reuse
    row)."""
    v = Arrays(vhands, vheld, vpl, vstock, vdiscard, vg, vrng)
    w = Arrays(whands, wheld, wpl, wstock, wdiscard, wg, wrng)
    n = prm[P_PLAYERS]
    for r in range(vg.shape[0]):
        if _legal_count(v, prm, r, legal, values, out) <= 1:
            continue
        me = v.g[r, G_CURRENT]
        start_round = v.g[r, G_ROUND]
        used = nodes[0]
        if resume == 0:
            arng[0] = seeds[r]
            for a in range(NA):
                child[0, a] = -1
            visits[0] = 0.0
            total[0] = 0.0
            avail[0] = 0.0
            used = 1
        for q in range(n):
            tmp[16 + q] = v.pl[r, q, S_SCORE]   # scores before: round values in a match
        for _ in range(n_iter):
            _determinize(v, r, w, 1, prm, mode, arng, counts, unseen)
            arng[1] = np.uint64(_next_u53(arng, 0))
            node = 0
            depth = 0
            path[0] = 0
            movers[0] = -1
            while (not (w.g[1, G_TERMINATED] or w.g[1, G_TRUNCATED])
                   and w.g[1, G_ROUND] == start_round):
                legal_row(w, prm, 1, row)
                mover = w.g[1, G_CURRENT]
                # an untried action? expand the greedy's favourite among them
                _greedy_scores(w, prm, 1, sc, tmp)
                pick = -1
                best = -1e300
                for a in range(NA):
                    if row[a] and child[node, a] < 0 and sc[a] > best:
                        best = sc[a]
                        pick = a
                if pick >= 0 and used < child.shape[0]:
                    c = used
                    used += 1
                    child[node, pick] = c
                    for a in range(NA):
                        child[c, a] = -1
                    visits[c] = 0.0
                    total[c] = 0.0
                    avail[c] = 1.0
                    for q in range(n):
                        rewards[1, q] = 0.0
                    _apply(w, prm, 1, pick, rewards)
                    _advance(w, prm, 1, rewards)
                    depth += 1
                    path[depth] = c
                    movers[depth] = mover
                    break
                # every legal action tried: UCB1 with availability counts
                pick = -1
                best = -1e300
                for a in range(NA):
                    if not row[a]:
                        continue
                    c = child[node, a]
                    if c < 0:   # the tree is full: no more nodes
                        continue
                    avail[c] += 1.0
                    ucb = total[c] / visits[c] + explore * np.sqrt(np.log(avail[c]) / visits[c])
                    if ucb > best:
                        best = ucb
                        pick = a
                if pick < 0:
                    break
                for q in range(n):
                    rewards[1, q] = 0.0
                _apply(w, prm, 1, pick, rewards)
                _advance(w, prm, 1, rewards)
                node = child[node, pick]
                depth += 1
                path[depth] = node
                movers[depth] = mover
            # simulation: the playout returns 1 if `me` won; we need the winner's seat
            won = _playout(w, prm, 1, me, start_round, policy, max_len, arng, rewards, sc, tmp,
                           weights, shape, obs, hid, row)
            for k in range(depth + 1):   # every node: the value for the seat that moved
                nd = path[k]
                visits[nd] += 1.0
                total[nd] += won if k == 0 else tmp[32 + movers[k]]
        nodes[0] = used
        most = -1.0
        for a in range(NA):
            if not legal[a]:
                continue
            c = child[0, a]
            if c < 0 or visits[c] == 0:
                continue
            values[r, a] = total[c] / visits[c]
            if visits[c] > most or (visits[c] == most and values[r, a] > values[r, out[r]]):
                most = visits[c]
                out[r] = a
