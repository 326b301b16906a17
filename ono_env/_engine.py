"""The rules of ONO, written once per game and compiled with numba.

Every function here works on game ``i`` of a batched :class:`State` (a NamedTuple of NumPy
arrays with a leading batch axis) and reads the rule set from ``prm``, the int64 vector
made by :meth:`ono_env.rules.RuleSet.params`. The batch kernels at the bottom loop over
games. Nothing here imports gymnasium, pettingzoo or torch.

A hand is kept twice: card counts (``hands``) and the set of card types held (``held``, a
64-bit word per seat), so that the legal actions of a decision are a few bit operations
(``legal_actions`` returns them as a set of action ids in two words) and a random legal
choice picks a set bit; the 85 booleans of a legal row are written only where a caller asks
for them (``legal_row``).

With ``NUMBA_DISABLE_JIT=1`` the same functions run as plain Python and play identically
(the random generator and the bit counts have pure-Python twins that give the same numbers).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from llvmlite import ir
from numba import njit
from numba.extending import intrinsic

from ono_env import cards as C
from ono_env._compile import compiled, kernel, lazy_kernel, rules_function  # noqa: F401
from ono_env.observation import (
    NUM_OBSERVED_PHASES,
    OBS2_OPPONENTS,
    OBS2_OWN_SCORE,
    OBS2_PLAYERS,
    OBS2_RULES,
    OBS_COLOR,
    OBS_DIRECTION,
    OBS_DISCARD,
    OBS_DRAWN,
    OBS_HAND,
    OBS_MY_TURN,
    OBS_OPPONENTS,
    OBS_PENDING,
    OBS_PHASE,
    OBS_SELF,
    OBS_STOCK,
    OBS_TOP,
    OPPONENT_SIZE,
    OPP_CALLED,
    OPP_COVERED,
    OPP_DREW,
    OPP_KNOWN,
    OPP_LACKS,
    OPP_LAST,
    OPP_NAMED,
    OPP_PRESENT,
    OPP_PREVIOUS,
    OPP_SCORE,
    OPP_SIZE,
    OPP_UNKNOWN,
    PHASE_NAMES,
)
from ono_env.rules import (
    P_CHALLENGE,
    P_DEALER,
    P_DECK,
    P_DECK_SIZE,
    P_DRAW_UNTIL_PLAYABLE,
    P_FALSE_CATCH,
    P_FIRST_ACTION,
    P_FIRST_WD4,
    P_FIRST_WILD,
    P_HAND_SIZE,
    P_MAX_DECISIONS,
    P_MUST_PLAY_DRAWN,
    P_OBS_VERSION,
    P_ONO_PENALTY,
    P_ONO_PENALTY_CARDS,
    P_PLAYERS,
    P_REVERSE_SKIPS,
    P_REWARD_POINTS,
    P_SCORING,
    P_SKIP_FORCED,
    P_STACKING,
    P_TARGET,
    P_VOLUNTARY_DRAW,
    P_WC_SWAP,
    P_WD4_RESTRICTED,
    option_code,
)

# ---- phases: what the acting player is deciding (names in ono_env.observation) ---------
PH_PLAY = PHASE_NAMES.index("play")          # play a card or draw (may also call / catch)
PH_PENDING = PHASE_NAMES.index("pending")    # a Draw Two / Wild Draw Four is pending on this
                                             # player: accept, stack, challenge
PH_DRAWN = PHASE_NAMES.index("drawn")        # just drew: play the drawn card or keep it
PH_COLOR = PHASE_NAMES.index("color")        # name the colour (first-card wild, after a
                                             # shuffle or a swap)
PH_TARGET = PHASE_NAMES.index("target")      # choose the player to swap hands with
PH_ROUND_END = PHASE_NAMES.index("round_end")  # a round of a match is over; the next is
                                               # dealt before anyone acts

# option codes: each string option's value as the integer RuleSet.params() writes
DEALER_RANDOM = option_code("dealer", "random")
DEALER_HIGHEST_CARD = option_code("dealer", "highest_card")
DEALER_HIGHEST_NUMBER = option_code("dealer", "highest_number")
FIRST_DEALER_PLAYS = option_code("first_card_action", "dealer_plays")
FIRST_FLIP_AGAIN = option_code("first_card_action", "flip_again")
WILD_RETURN = option_code("first_card_wild", "return")
WILD_FIRST_PLAYER_NAMES = option_code("first_card_wild", "first_player_names")
WILD_DEALER_NAMES = option_code("first_card_wild", "dealer_names")
WILD_FLIP_AGAIN = option_code("first_card_wild", "flip_again")
WD4_RETURN = option_code("first_card_wild_draw_four", "return")
WD4_FLIP_AGAIN = option_code("first_card_wild_draw_four", "flip_again")
ONO_NONE = option_code("ono_penalty", "none")
ONO_DRAW = option_code("ono_penalty", "draw")
ONO_SWAP = option_code("ono_penalty", "swap_hands")
SCORING_NONE = option_code("scoring", "none")
SCORING_WINNER = option_code("scoring", "winner")
SCORING_PENALTY = option_code("scoring", "penalty")

POINTS_REWARD_SCALE = 0.01  # reward="points": one reward unit per 100 card points

# int8 tables: the kernels cast an entry with int() before adding an offset or shifting
# by it (NUMBA_DISABLE_JIT runs them as NumPy int8 arithmetic, which overflows)
_CARD_COLOR = C.CARD_COLOR
_CARD_RANK = C.CARD_RANK
_CARD_POINTS = C.CARD_POINTS
_ACTION_CARD = C.ACTION_CARD
_ACTION_COLOR = C.ACTION_COLOR
NC = C.NUM_CARD_TYPES
NA = C.NUM_ACTIONS


# ---- state layout ---------------------------------------------------------------------
# The compiled kernels take seven arrays (a tuple of many arrays makes numba compile slowly):
#   hands    (B, P, 56) uint8   copies of each card type in each hand
#   held     (B, P)     uint64  the same hands as sets: bit c set when the seat holds card
#                               type c (kept equal to hands > 0 wherever a hand changes;
#                               legal actions and random choices work on these bits)
#   pl       (B, P, 9 + 56 P) int32 per seat: columns S_HAND_LEN, S_CALLED, S_SCORE,
#                               S_LACKS, S_KNOWN, S_LAST, S_PREVIOUS, S_NAMED, S_DREW (public),
#                               then S_SEEN + 56 q + c: copies of card type c this seat knows
#                               seat q holds (its private knowledge; observation version 2)
#   stock    (B, D)     int8    stock card types, bottom first; top = stock[G_STOCK_LEN - 1]
#   discard  (B, D)     int8    discard pile, bottom first; top = discard[G_DISCARD_LEN - 1]
#   g        (B, 19)    int32   per game: one column per G_* field below
#   rng      (B,)       uint64  splitmix64 generator state of each game
# ``State`` gives every column a name (``state.current`` is ``g[:, G_CURRENT]``, a view).
S_HAND_LEN = 0   # cards in the hand
S_CALLED = 1     # 1: has called ONO and holds no more cards than when calling
S_SCORE = 2      # match score
S_LACKS = 3      # public knowledge: a lacks code (_lacks_cards) that S_KNOWN of the seat's
S_KNOWN = 4      # cards are none of; every player saw it happen (_note_forced_draw)
S_LAST = 5       # public history: 1 + the card type the seat last played (0: none this round)
S_PREVIOUS = 6   # 1 + the card type it played before that (0: none)
S_NAMED = 7      # 1 + the colour it last named after a wild (0: none this round)
S_DREW = 8       # 1 from its draw (or a pending draw taken) until it next plays a card
NUM_S = 9        # the per-seat fields; search copies these (not the private S_SEEN columns)
S_SEEN = NUM_S   # S_SEEN + NC * q + c: copies of card type c this seat knows seat q holds

G_CURRENT = 0      # seat of the acting player
G_DIRECTION = 1    # +1 clockwise (to the left), -1 counter-clockwise
G_COLOR = 2        # current colour 0-3 (R Y G B), -1 not yet named
G_PHASE = 3        # PH_PLAY / PH_PENDING / PH_DRAWN / PH_COLOR / PH_TARGET
G_PENDING = 4      # cards the acting player draws if they accept
G_DRAWN = 5        # card type just drawn (PH_DRAWN), else -1
G_EXPOSED = 6      # seat that played down to one card without calling (catchable), -1
G_PREVIOUS = 7     # seat that acted before the current turn began, -1
G_FRESH = 8        # 1: the acting player has taken no action this turn yet
G_BLUFF = 9        # 1: the pending Wild Draw Four was played holding the current colour
G_DEALER = 10      # seat of this round's dealer
G_ROUND = 11       # rounds finished in this episode
G_DECISIONS = 12   # decisions taken in this episode
G_WINNER = 13      # winner of the last finished round, -1
G_TERMINATED = 14  # 1: the episode is over by the rules
G_TRUNCATED = 15   # 1: the episode was cut at max_decisions
G_STOCK_LEN = 16   # cards in the stock
G_DISCARD_LEN = 17 # cards in the discard pile
G_COLOR_THEN_PLAY = 18  # 1: after naming the colour the same player plays (first-card wild
                        # named by the first player); 0: the turn then passes
NUM_G = 19
G_NAMES = ("current", "direction", "color", "phase", "pending", "drawn", "exposed",
           "previous", "fresh", "bluff", "dealer", "round", "decisions", "winner",
           "terminated", "truncated", "stock_len", "discard_len", "color_then_play")


class Arrays(NamedTuple):
    """The arrays the kernels take (layout above)."""

    hands: np.ndarray
    held: np.ndarray
    pl: np.ndarray
    stock: np.ndarray
    discard: np.ndarray
    g: np.ndarray
    rng: np.ndarray


# How the rules compile (ono_env._compile): kernels are called from Python; rules functions
# only from compiled code, compiled only when a kernel is not prebuilt or cached.
_kernel = kernel
_lazy_kernel = lazy_kernel


def _helper(sig):
    """A rules function called only from compiled code (``rules_function``). Called, not
    inlined: the rules of rare events (a deal, the end of a round, a reshuffle, a catch, a
    challenge)."""
    return rules_function(sig)


def _hot(sig):
    """A rules function on the path of every decision: declared like a ``_helper``, and
    inlined by LLVM into each caller (``forceinline``). A call that is not inlined passes
    the state arrays' ~65 words of shape, stride and pointer fields, which costs more than
    most of these functions do."""
    return rules_function(sig, forceinline=True)


_inline = njit(inline="always")
"""A small rules predicate used in hot loops: inlined into its callers by numba before
typing (cheap to compile only for small functions; ``_hot`` inlines larger ones)."""


# numba types of the kernel arguments (explicit signatures: each function compiles once)
S = numba.typeof(Arrays(
    hands=np.zeros((1, 1, NC), np.uint8), held=np.zeros((1, 1), np.uint64),
    pl=np.zeros((1, 1, NUM_S + NC), np.int32),
    stock=np.zeros((1, 1), np.int8), discard=np.zeros((1, 1), np.int8),
    g=np.zeros((1, NUM_G), np.int32), rng=np.zeros(1, np.uint64),
))
PRM = numba.int64[::1]
HANDS = numba.uint8[:, :, ::1]
HELD = numba.uint64[:, ::1]
PL = numba.int32[:, :, ::1]
STK = numba.int8[:, ::1]
GAME = numba.int32[:, ::1]
I8ARR = numba.int8[::1]
I64ARR = numba.int64[::1]
I32ARR = numba.int32[::1]
U64ARR = numba.uint64[::1]
BROW = numba.boolean[::1]
B2D = numba.boolean[:, ::1]
F32_2D = numba.float32[:, ::1]
F32ROW = numba.float32[::1]
i8 = numba.int64
u8 = numba.uint64
b1 = numba.boolean
void = numba.void
BITS = numba.types.UniTuple(u8, 2)
STATE = (HANDS, HELD, PL, STK, STK, GAME, U64ARR)
"""The kernels' leading arguments: the seven state arrays, in ``Arrays`` order."""


class State:
    """Every game of a batch: the kernel arrays and a named view of each field.

    ``hands`` (B, P, 56) uint8 and ``held`` (B, P) uint64 (the same hands as bit sets),
    ``stock``/``discard`` (B, D) int8 card types, ``rng`` (B,) uint64; per seat
    ``hand_len``, ``called``, ``scores``, ``lacks``, ``known`` (B, P) int32 (meanings at
    S_*); per game (B,) int32 ``current``,
    ``direction``, ``color``, ``phase``, ``pending``, ``drawn``, ``exposed``, ``previous``,
    ``fresh``, ``bluff``, ``dealer``, ``round``, ``decisions``, ``winner``, ``terminated``,
    ``truncated``, ``stock_len``, ``discard_len`` (meanings at G_*)."""

    # the named views that _name_views sets, declared for type checkers: Arrays' fields,
    hands: np.ndarray
    held: np.ndarray
    pl: np.ndarray
    stock: np.ndarray
    discard: np.ndarray
    g: np.ndarray
    rng: np.ndarray
    # G_NAMES,
    current: np.ndarray
    direction: np.ndarray
    color: np.ndarray
    phase: np.ndarray
    pending: np.ndarray
    drawn: np.ndarray
    exposed: np.ndarray
    previous: np.ndarray
    fresh: np.ndarray
    bluff: np.ndarray
    dealer: np.ndarray
    round: np.ndarray
    decisions: np.ndarray
    winner: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    stock_len: np.ndarray
    discard_len: np.ndarray
    color_then_play: np.ndarray
    # and the per-seat fields
    hand_len: np.ndarray
    called: np.ndarray
    scores: np.ndarray
    lacks: np.ndarray
    known: np.ndarray
    last_play: np.ndarray
    previous_play: np.ndarray
    named_color: np.ndarray
    drew: np.ndarray

    def __init__(self, num_games: int, num_players: int, deck_size: int) -> None:
        B, P, D = num_games, num_players, deck_size
        self.arrays = Arrays(
            hands=np.zeros((B, P, NC), np.uint8),
            held=np.zeros((B, P), np.uint64),
            pl=np.zeros((B, P, NUM_S + NC * P), np.int32),
            stock=np.zeros((B, D), np.int8),
            discard=np.zeros((B, D), np.int8),
            g=np.zeros((B, NUM_G), np.int32),
            rng=np.zeros(B, np.uint64),
        )
        self.arrays.g[:, G_DIRECTION] = 1
        self.arrays.g[:, [G_COLOR, G_DRAWN, G_EXPOSED, G_PREVIOUS, G_WINNER]] = -1
        self._name_views()

    # a copy (copy.deepcopy, pickle) keeps the arrays and makes its views of them again
    def __getstate__(self) -> dict:
        return {"arrays": self.arrays}

    def __setstate__(self, state: dict) -> None:
        self.arrays = Arrays(*state["arrays"])
        self._name_views()

    def _name_views(self) -> None:
        # named views, made once: writing through them writes the kernel arrays
        for name in Arrays._fields:
            setattr(self, name, getattr(self.arrays, name))
        for k, name in enumerate(G_NAMES):
            setattr(self, name, self.arrays.g[:, k])
        for k, name in enumerate(("hand_len", "called", "scores", "lacks", "known", "last_play",
                                  "previous_play", "named_color", "drew")):
            setattr(self, name, self.arrays.pl[:, :, k])

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays)


# ======================================================================================
# Random numbers: splitmix64, one state word per game
# ======================================================================================
_GAMMA = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_M64 = (1 << 64) - 1


@_hot(i8(U64ARR, i8))
def _next_u53_jit(rng, i):
    x = rng[i] + np.uint64(_GAMMA)
    rng[i] = x
    z = (x ^ (x >> np.uint64(30))) * np.uint64(_MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
    z = z ^ (z >> np.uint64(31))
    return np.int64(z >> np.uint64(11))


def _next_u53_py(rng, i):
    # Python-int twin of _next_u53_jit for NUMBA_DISABLE_JIT=1 (no uint64 overflow warnings).
    x = (int(rng[i]) + _GAMMA) & _M64
    rng[i] = x
    z = ((x ^ (x >> 30)) * _MIX1) & _M64
    z = ((z ^ (z >> 27)) * _MIX2) & _M64
    z ^= z >> 31
    return z >> 11


_next_u53 = _next_u53_py if numba.config.DISABLE_JIT else _next_u53_jit


def mix_seed(seed: int, index: int) -> int:
    """Generator state of game ``index`` of a batch seeded ``seed`` (splitmix64 finaliser)."""
    z = (int(seed) * _GAMMA + (int(index) + 1) * _MIX2) & _M64
    z = ((z ^ (z >> 30)) * _MIX1) & _M64
    z = ((z ^ (z >> 27)) * _MIX2) & _M64
    return z ^ (z >> 31)


@_hot(i8(S, i8, i8))
def _rand_below(s, i, n):
    """Uniform integer in [0, n) from game i's generator."""
    return _next_u53(s.rng, i) % n


@_helper(void(S, i8, I8ARR, i8, i8))
def _shuffle(s, i, arr, start, n):
    """Fisher-Yates shuffle of arr[start:start+n] with game i's generator."""
    for k in range(n - 1, 0, -1):
        j = _rand_below(s, i, k + 1)
        t = arr[start + k]
        arr[start + k] = arr[start + j]
        arr[start + j] = t


# ======================================================================================
# Bit sets: a hand's card types and the legal actions
# ======================================================================================
# A hand is also kept as a set of card types (``held``: bit c when the seat holds a card of
# type c), and the legal actions of a decision are a set of action ids held in two words,
# ``(lo, hi)``: bit a of lo for actions 0-63, bit a - 64 of hi for actions 64-84. Card
# type c < 52 is played by action c, so the coloured cards a player may play are a mask of
# ``held`` (colour and rank masks below); the 85 booleans of a legal row are written only
# where a caller asks for them (legal_row).
ONE = np.uint64(1)
ZERO = np.uint64(0)
HI = 64   # action a >= HI is bit a - HI of the second word


def _mask_of(cards) -> np.uint64:
    return np.uint64(sum(1 << int(c) for c in cards))


_COLOR_BITS = np.array([_mask_of(range(13 * k, 13 * k + 13)) for k in range(4)], np.uint64)
"""_COLOR_BITS[k]: the card types of colour k."""
_RANK_BITS = np.array([_mask_of(range(r, 52, 13)) for r in range(13)], np.uint64)
"""_RANK_BITS[r]: the card types of rank r (one per colour)."""
_WILD_BITS = _mask_of(range(52, NC))
_COLORED_BITS = _mask_of(range(52))

# A lacks code (column S_LACKS): bit k (0-3) colour k, bit LACKS_RANK + r rank r, bit
# LACKS_WILD + w the wild type 52 + w. A card is lacked when its colour, its rank or (a
# wild) its type is: the sets a forced draw reveals (_note_forced_draw) and their unions.
LACKS_RANK = 4
LACKS_WILD = 4 + C.NUM_RANKS
_LACKS_BITS = np.array([_COLOR_BITS[k] for k in range(4)] + [_RANK_BITS[r] for r in range(13)]
                       + [_mask_of([52 + w]) for w in range(C.NUM_WILD_TYPES)], np.uint64)
"""_LACKS_BITS[b]: the card types that bit b of a lacks code stands for."""
_CARD_LACKS = np.array([(1 << (c // 13)) | (1 << (LACKS_RANK + c % 13)) for c in range(52)]
                       + [1 << (LACKS_WILD + w) for w in range(C.NUM_WILD_TYPES)], np.int32)
"""_CARD_LACKS[c]: the bits of a lacks code that hold card type c (its colour and rank, or
its wild type)."""


if numba.config.DISABLE_JIT:
    def _popcount(x):
        return int(x).bit_count()

    def _lowest_bit(x):
        x = int(x)
        return (x & -x).bit_length() - 1
else:
    @intrinsic
    def _popcount(typingctx, x):
        """The number of set bits of an integer (LLVM's ctpop: one instruction)."""
        def codegen(context, builder, sig, args):
            return builder.ctpop(args[0])
        return x(x), codegen

    @intrinsic
    def _lowest_bit(typingctx, x):
        """The index of the lowest set bit of a non-zero integer (LLVM's cttz)."""
        def codegen(context, builder, sig, args):
            return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))
        return x(x), codegen


@_inline
def _bit(k):
    return ONE << np.uint64(k)


@_inline
def _nth_bit(x, k):
    """The index of the k-th lowest set bit of x (k < the number of set bits)."""
    for _ in range(k):
        x &= x - ONE
    return np.int64(_lowest_bit(x))


@_inline
def _has_action(lo, hi, a):
    """Is action a in the set (lo, hi)?"""
    if a < HI:
        return (lo >> np.uint64(a)) & ONE != ZERO
    return (hi >> np.uint64(a - HI)) & ONE != ZERO


@_inline
def _action_count(lo, hi):
    return np.int64(_popcount(lo)) + np.int64(_popcount(hi))


@_inline
def _nth_legal(lo, hi, k):
    """The k-th action of the set (lo, hi) in id order (k < the number of actions)."""
    n_lo = np.int64(_popcount(lo))
    if k < n_lo:
        return _nth_bit(lo, k)
    return HI + _nth_bit(hi, k - n_lo)


def held_of(hands: np.ndarray) -> np.ndarray:
    """``held`` of hand counts ``(..., 56)``: bit c set where the count of card type c is
    positive (for code that writes hands outside the engine: positions)."""
    bits = np.left_shift(np.uint64(1), np.arange(NC, dtype=np.uint64))
    return np.bitwise_or.reduce(np.where(np.asarray(hands) > 0, bits, np.uint64(0)), axis=-1)


# ======================================================================================
# Small rules helpers
# ======================================================================================
@_inline
def _seat(prm, p, steps):
    """The seat ``steps`` places from ``p`` (positive: clockwise / to the left)."""
    n = prm[P_PLAYERS]
    return (p + steps) % n


@_inline
def _top(s, i):
    return int(s.discard[i, s.g[i, G_DISCARD_LEN] - 1])


@_inline
def _holds_color(s, i, p, col):
    if col < 0:
        return False
    return s.held[i, p] & _COLOR_BITS[col] != ZERO


@_inline
def _is_draw_two(c):
    return c < 52 and _CARD_RANK[c] == C.RANK_DRAW_TWO


@_inline
def _wd4_allowed(s, prm, i, p):
    """Wild Draw Four restriction: only without a card of the current colour. With challenge
    on, the restricted play is still possible (a bluff the victim may challenge)."""
    if prm[P_WD4_RESTRICTED] and not prm[P_CHALLENGE]:
        return not _holds_color(s, i, p, int(s.g[i, G_COLOR]))
    return True


@_inline
def _is_playable(s, prm, i, p, c):
    """May card type c be played on the top card in a normal (PH_PLAY / PH_DRAWN) turn?"""
    if c >= 52:
        if c == C.WILD_DRAW_FOUR:
            return _wd4_allowed(s, prm, i, p)
        return True
    if _CARD_COLOR[c] == s.g[i, G_COLOR]:
        return True
    top = _top(s, i)
    return top < 52 and _CARD_RANK[top] == _CARD_RANK[c]


@_inline
def _playable_cards(s, prm, i, p):
    """The card types p holds that may be played in a normal turn (_is_playable over the
    hand), as a set: a card of the current colour or of the top card's rank, or a wild
    (a Wild Draw Four only where _wd4_allowed)."""
    match = _WILD_BITS
    col = s.g[i, G_COLOR]
    if col >= 0:
        match |= _COLOR_BITS[col]
    top = _top(s, i)
    if top < 52:
        match |= _RANK_BITS[_CARD_RANK[top]]
    cards = s.held[i, p] & match
    if cards & _bit(C.WILD_DRAW_FOUR) and not _wd4_allowed(s, prm, i, p):
        cards &= ~_bit(C.WILD_DRAW_FOUR)
    return cards


@_inline
def _lacks(code, c):
    """Is card type c in the set of lacks code ``code``?"""
    return code & _CARD_LACKS[c] != 0


@_inline
def _lacks_cards(code):
    """The card types of lacks code ``code``, as a set."""
    out = ZERO
    for b in range(_LACKS_BITS.shape[0]):
        if (code >> b) & 1:
            out |= _LACKS_BITS[b]
    return out


@_inline
def _note_forced_draw(s, prm, i, p):
    """What every player learns when p draws where the rules allow no voluntary draw: p held
    no playable card, so no card of the current colour, none of the top card's rank and no
    wild (every wild is playable in a normal turn; a restricted Wild Draw Four too, as p
    holds no card of the current colour). It holds for p's whole hand before the draw:
    S_KNOWN becomes its size, S_LACKS that set, joined with the earlier one when that
    already covered the whole hand. Cards given to p later are not covered (S_KNOWN stays);
    _play lowers S_KNOWN unless the card played cannot be a covered one."""
    code = ((1 << C.NUM_WILD_TYPES) - 1) << LACKS_WILD
    col = s.g[i, G_COLOR]
    if col >= 0:
        code |= 1 << col
    top = _top(s, i)
    if top < 52:
        code |= 1 << (LACKS_RANK + int(_CARD_RANK[top]))
    n = s.pl[i, p, S_HAND_LEN]
    if s.pl[i, p, S_KNOWN] == n:
        code |= s.pl[i, p, S_LACKS]
    s.pl[i, p, S_LACKS] = code
    s.pl[i, p, S_KNOWN] = n


@_inline
def _stack_cards(s, prm, i, p):
    """Stacking: Draw Two on Draw Two, Draw Four on Draw Two or Draw Four, never Draw Two
    on Draw Four. The card types p holds that may stack on the top card, as a set."""
    top = _top(s, i)
    cards = ZERO
    if _is_draw_two(top):
        cards = s.held[i, p] & _RANK_BITS[C.RANK_DRAW_TWO]
    if ((top == C.WILD_DRAW_FOUR or _is_draw_two(top))
            and s.held[i, p] & _bit(C.WILD_DRAW_FOUR) and _wd4_allowed(s, prm, i, p)):
        cards |= _bit(C.WILD_DRAW_FOUR)
    return cards


@_inline
def _catch_succeeds(s, i):
    e = s.g[i, G_EXPOSED]
    return e >= 0 and e == s.g[i, G_PREVIOUS] and s.pl[i, e, S_HAND_LEN] == 1


@_inline
def _catch_allowed(s, prm, i):
    """catch: the first decision of a turn. With a false-catch penalty (000) it is legal at
    the start of any turn against the previous player; otherwise only when it succeeds."""
    if not s.g[i, G_FRESH] or prm[P_ONO_PENALTY] == ONO_NONE:
        return False
    if prm[P_FALSE_CATCH] > 0:
        prev = s.g[i, G_PREVIOUS]
        return prev >= 0 and prev != s.g[i, G_CURRENT]
    return _catch_succeeds(s, i)


@_inline
def _call_allowed(s, prm, i, p):
    """call (ONO): the player holds two cards, has not called, and is about to play one;
    each caller checks that a play is legal (the rules: "holds two cards and is about to
    play one")."""
    return prm[P_ONO_PENALTY] != ONO_NONE and s.pl[i, p, S_HAND_LEN] == 2 and not s.pl[i, p, S_CALLED]


@_inline
def _play_actions(prm, cards):
    """The play actions of a set of card types, as a set (lo, hi): a coloured card's own
    action, a wild's action for each colour it may name (Wild Shuffle Hands, and Wild
    Customizable with swap_hands, name it later: one action each)."""
    lo = cards & _COLORED_BITS
    hi = ZERO
    if cards & _bit(C.WILD):
        lo |= np.uint64(0xF) << np.uint64(C.A_PLAY_W)
    if cards & _bit(C.WILD_DRAW_FOUR):
        lo |= np.uint64(0xF) << np.uint64(C.A_PLAY_WD4)
    if cards & _bit(C.WILD_SHUFFLE_HANDS):
        hi |= _bit(C.A_PLAY_WS - HI)
    if cards & _bit(C.WILD_CUSTOMIZABLE):
        if prm[P_WC_SWAP]:
            hi |= _bit(C.A_PLAY_WC - HI)
        else:
            lo |= np.uint64(0xF) << np.uint64(C.A_PLAY_WC_COLOR)
    return lo, hi


@_hot(b1(S, PRM, i8, i8))
def _has_playable(s, prm, i, p):
    """Does p hold a card playable in a normal turn? (_is_playable over the hand)"""
    return _playable_cards(s, prm, i, p) != ZERO


# ======================================================================================
# Legal actions
# ======================================================================================
@_hot(BITS(S, PRM, i8))
def legal_actions(s, prm, i):
    """Game i's legal actions as a set ``(lo, hi)`` (bit a of lo: action a < 64; bit a - 64
    of hi: action a >= 64). A finished game has no legal action."""
    lo = ZERO
    hi = ZERO
    if s.g[i, G_TERMINATED] or s.g[i, G_TRUNCATED]:
        return lo, hi
    p = np.int64(s.g[i, G_CURRENT])
    ph = s.g[i, G_PHASE]
    if ph == PH_PLAY:
        lo, hi = _play_actions(prm, _playable_cards(s, prm, i, p))
        any_play = (lo | hi) != ZERO
        if not any_play or prm[P_VOLUNTARY_DRAW]:
            hi |= _bit(C.A_DRAW - HI)
        if any_play and _call_allowed(s, prm, i, p):
            hi |= _bit(C.A_CALL - HI)
        if _catch_allowed(s, prm, i):
            hi |= _bit(C.A_CATCH - HI)
    elif ph == PH_PENDING:
        if prm[P_STACKING]:
            lo, hi = _play_actions(prm, _stack_cards(s, prm, i, p))
            if (lo | hi) != ZERO and _call_allowed(s, prm, i, p):
                hi |= _bit(C.A_CALL - HI)
        hi |= _bit(C.A_ACCEPT - HI)
        if prm[P_CHALLENGE] and _top(s, i) == C.WILD_DRAW_FOUR:
            hi |= _bit(C.A_CHALLENGE - HI)
        if _catch_allowed(s, prm, i):
            hi |= _bit(C.A_CATCH - HI)
    elif ph == PH_DRAWN:
        c = int(s.g[i, G_DRAWN])
        playable = _is_playable(s, prm, i, p, c)
        if playable:
            lo, hi = _play_actions(prm, _bit(c))
            if _call_allowed(s, prm, i, p):
                hi |= _bit(C.A_CALL - HI)
        # the obligation to play it (001's "play it") holds for a card the player may play:
        # a Wild Draw Four drawn while holding the colour may be played only as a bluff,
        # never made one
        bluff = (c == C.WILD_DRAW_FOUR and prm[P_WD4_RESTRICTED]
                 and _holds_color(s, i, p, int(s.g[i, G_COLOR])))
        if not (playable and prm[P_MUST_PLAY_DRAWN] and not bluff):
            hi |= _bit(C.A_KEEP - HI)
    elif ph == PH_COLOR:
        hi = np.uint64(0xF) << np.uint64(C.A_COLOR - HI)
    elif ph == PH_TARGET:
        hi = ((ONE << np.uint64(prm[P_PLAYERS] - 1)) - ONE) << np.uint64(C.A_TARGET - HI)
    return lo, hi


@_inline
def _write_row(lo, hi, row):
    """row ((A,) bool) = the action set (lo, hi)."""
    for a in range(NA):
        row[a] = False
    while lo:
        row[np.int64(_lowest_bit(lo))] = True
        lo &= lo - ONE
    while hi:
        row[HI + np.int64(_lowest_bit(hi))] = True
        hi &= hi - ONE


@_helper(void(S, PRM, i8, BROW))
def legal_row(s, prm, i, row):
    """Write game i's legal actions (legal_actions) into ``row`` ((A,) bool)."""
    lo, hi = legal_actions(s, prm, i)
    _write_row(lo, hi, row)


# ======================================================================================
# Moving cards
# ======================================================================================
@_inline
def _give(s, i, p, c):
    s.hands[i, p, c] += 1
    s.held[i, p] |= _bit(c)
    s.pl[i, p, S_HAND_LEN] += 1
    s.pl[i, p, S_CALLED] = False  # a call covers the hand it was made with


@_helper(void(S, i8))
def _reshuffle(s, i):
    """Stock empty: the discard pile except its top card is shuffled into a new stock."""
    n = s.g[i, G_DISCARD_LEN] - 1
    if n <= 0:
        return
    for k in range(n):
        s.stock[i, k] = s.discard[i, k]
    s.g[i, G_STOCK_LEN] = n
    s.discard[i, 0] = s.discard[i, n]
    s.g[i, G_DISCARD_LEN] = 1
    _shuffle(s, i, s.stock[i], 0, int(n))


@_hot(i8(S, i8, i8))
def _draw_one(s, i, p):
    """Player p draws the top of the stock; -1 when stock and discard are both exhausted."""
    if s.g[i, G_STOCK_LEN] == 0:
        _reshuffle(s, i)
        if s.g[i, G_STOCK_LEN] == 0:
            return -1
    s.g[i, G_STOCK_LEN] -= 1
    c = int(s.stock[i, s.g[i, G_STOCK_LEN]])
    _give(s, i, p, c)
    return c


@_hot(void(S, i8, i8, i8))
def _draw_n(s, i, p, n):
    for _ in range(n):
        if _draw_one(s, i, p) < 0:
            return


@_helper(void(S, i8, i8, i8))
def _swap_hands(s, i, a, b):
    for c in range(NC):
        t = s.hands[i, a, c]
        s.hands[i, a, c] = s.hands[i, b, c]
        s.hands[i, b, c] = t
    h = s.held[i, a]
    s.held[i, a] = s.held[i, b]
    s.held[i, b] = h
    for k in (S_HAND_LEN, S_LACKS, S_KNOWN):   # what is known of a hand goes with it
        t2 = s.pl[i, a, k]
        s.pl[i, a, k] = s.pl[i, b, k]
        s.pl[i, b, k] = t2
    s.pl[i, a, S_CALLED] = False
    s.pl[i, b, S_CALLED] = False
    # what each seat knew of the two hands goes with them; a and b each know the other's
    # new hand card for card (it was their own)
    for o in range(s.pl.shape[1]):
        for c in range(NC):
            t3 = s.pl[i, o, S_SEEN + NC * a + c]
            s.pl[i, o, S_SEEN + NC * a + c] = s.pl[i, o, S_SEEN + NC * b + c]
            s.pl[i, o, S_SEEN + NC * b + c] = t3
    for c in range(NC):
        s.pl[i, a, S_SEEN + NC * b + c] = s.hands[i, b, c]
        s.pl[i, b, S_SEEN + NC * a + c] = s.hands[i, a, c]
        s.pl[i, a, S_SEEN + NC * a + c] = 0
        s.pl[i, b, S_SEEN + NC * b + c] = 0


@_inline
def _forget_hands(s, i):
    """Every seat's private knowledge of the other hands is void (a new deal, a Wild Shuffle
    Hands)."""
    for o in range(s.pl.shape[1]):
        for k in range(S_SEEN, s.pl.shape[2]):
            s.pl[i, o, k] = 0


@_helper(void(S, PRM, i8, i8))
def _shuffle_hands(s, prm, i, p):
    """Wild Shuffle Hands: gather every hand, shuffle, deal one at a time starting with the
    player on p's left and passing clockwise (the direction of play is kept)."""
    n = prm[P_PLAYERS]
    base = s.g[i, G_STOCK_LEN]  # the gathered cards wait in the free space above the stock
    total = 0
    for q in range(n):
        for c in range(NC):
            for _ in range(s.hands[i, q, c]):
                s.stock[i, base + total] = c
                total += 1
            s.hands[i, q, c] = 0
        s.held[i, q] = ZERO
        s.pl[i, q, S_HAND_LEN] = 0
        s.pl[i, q, S_CALLED] = False
        s.pl[i, q, S_LACKS] = 0
        s.pl[i, q, S_KNOWN] = 0
    _forget_hands(s, i)
    _shuffle(s, i, s.stock[i], base, total)
    for k in range(total):
        _give(s, i, (p + 1 + k) % n, s.stock[i, base + k])


@_helper(i8(S, i8, i8))
def _hand_points(s, i, q):
    t = 0
    for c in range(NC):
        t += int(s.hands[i, q, c]) * int(_CARD_POINTS[c])
    return t


# ======================================================================================
# Turns
# ======================================================================================
@_hot(void(S, i8, i8, i8, i8))
def _start_turn(s, i, q, phase, prev):
    s.g[i, G_CURRENT] = q
    s.g[i, G_PHASE] = phase
    s.g[i, G_FRESH] = True
    s.g[i, G_DRAWN] = -1
    s.g[i, G_PREVIOUS] = prev
    if s.g[i, G_EXPOSED] == q:
        # The offender is the next to begin a turn (2 players, Skip): the window has closed.
        s.g[i, G_EXPOSED] = -1


@_hot(void(S, PRM, i8, i8))
def _next_turn(s, prm, i, p):
    """p's turn is over; the next player in the direction of play begins theirs."""
    _start_turn(s, i, _seat(prm, p, int(s.g[i, G_DIRECTION])), PH_PLAY, p)


@_hot(void(S, PRM, i8, i8, i8))
def _card_effect(s, prm, i, p, c):
    """The effect of card c just put on the discard pile by p (also a first card that the
    dealer is treated as having played)."""
    n = prm[P_PLAYERS]
    d = int(s.g[i, G_DIRECTION])
    if c >= 52:
        if c == C.WILD_DRAW_FOUR:
            s.g[i, G_PENDING] += 4
            _start_turn(s, i, _seat(prm, p, d), PH_PENDING, p)
        elif c == C.WILD_CUSTOMIZABLE and prm[P_WC_SWAP]:
            s.g[i, G_PHASE] = PH_TARGET  # choose whom to swap with, then name the colour
        elif c == C.WILD_SHUFFLE_HANDS:
            _shuffle_hands(s, prm, i, p)
            s.g[i, G_PHASE] = PH_COLOR  # the colour is named after the deal
            s.g[i, G_COLOR_THEN_PLAY] = 0
        else:
            _next_turn(s, prm, i, p)
        return
    r = _CARD_RANK[c]
    if r == C.RANK_SKIP:
        _start_turn(s, i, _seat(prm, p, 2 * d), PH_PLAY, p)
    elif r == C.RANK_REVERSE:
        s.g[i, G_DIRECTION] = -d
        if n == 2 and prm[P_REVERSE_SKIPS]:
            _start_turn(s, i, p, PH_PLAY, p)
        else:
            _start_turn(s, i, _seat(prm, p, -d), PH_PLAY, p)
    elif r == C.RANK_DRAW_TWO:
        s.g[i, G_PENDING] += 2
        _start_turn(s, i, _seat(prm, p, d), PH_PENDING, p)
    else:
        _next_turn(s, prm, i, p)


# ======================================================================================
# Rounds
# ======================================================================================
@_helper(i8(S, PRM, i8))
def _choose_dealer(s, prm, i):
    """Each candidate draws a card; the highest (points, or number cards only) deals; ties
    draw again. The stock is shuffled again afterwards."""
    n = prm[P_PLAYERS]
    mode = prm[P_DEALER]
    if mode == DEALER_RANDOM:
        return _rand_below(s, i, n)
    size = s.g[i, G_STOCK_LEN]
    # No hand is dealt yet: the hand-size column holds each seat's drawn value and the
    # call column marks who is still in the draw (both are cleared again below).
    for q in range(n):
        s.pl[i, q, S_CALLED] = 1
    ptr = 0
    while True:
        best = -1
        for q in range(n):
            if not s.pl[i, q, S_CALLED]:
                continue
            while True:
                if ptr >= size:
                    _shuffle(s, i, s.stock[i], 0, int(size))
                    ptr = 0
                c = int(s.stock[i, ptr])
                ptr += 1
                if mode == DEALER_HIGHEST_NUMBER and (c >= 52 or _CARD_RANK[c] > 9):
                    continue  # only number cards count; others go back
                break
            v = _CARD_POINTS[c] if mode == DEALER_HIGHEST_CARD else _CARD_RANK[c]
            s.pl[i, q, S_HAND_LEN] = v
            best = max(best, v)
        count = 0
        last = 0
        for q in range(n):
            if s.pl[i, q, S_CALLED] and s.pl[i, q, S_HAND_LEN] == best:
                count += 1
                last = q
            else:
                s.pl[i, q, S_CALLED] = 0
        if count == 1:
            for q in range(n):
                s.pl[i, q, S_CALLED] = 0
                s.pl[i, q, S_HAND_LEN] = 0
            _shuffle(s, i, s.stock[i], 0, int(size))
            return last


@_helper(void(S, i8))
def _return_to_stock(s, i):
    """Take the top of the discard pile back into the stock and shuffle the stock."""
    s.g[i, G_DISCARD_LEN] -= 1
    s.stock[i, s.g[i, G_STOCK_LEN]] = s.discard[i, s.g[i, G_DISCARD_LEN]]
    s.g[i, G_STOCK_LEN] += 1
    _shuffle(s, i, s.stock[i], 0, int(s.g[i, G_STOCK_LEN]))


@_helper(b1(PRM, i8))
def _can_start(prm, c):
    """Can card type c become the first card of the discard pile under these rules? (A
    Wild Draw Four never can; a wild or an action card unless its option sets it aside.)"""
    if c == C.WILD_DRAW_FOUR:
        return False
    if c >= 52:
        return prm[P_FIRST_WILD] == WILD_FIRST_PLAYER_NAMES or prm[P_FIRST_WILD] == WILD_DEALER_NAMES
    return _CARD_RANK[c] <= 9 or prm[P_FIRST_ACTION] == FIRST_DEALER_PLAYS


@_helper(b1(S, PRM, i8, b1))
def _deal_once(s, prm, i, choose_dealer):
    """Shuffle the whole deck, deal, and turn the first card (the first-card options).
    False when the stock holds no card that can start (a misdeal: deal again)."""
    n = prm[P_PLAYERS]
    deck_size = 0
    for c in range(NC):
        for _ in range(prm[P_DECK + c]):
            s.stock[i, deck_size] = c
            deck_size += 1
    s.g[i, G_STOCK_LEN] = deck_size
    s.g[i, G_DISCARD_LEN] = 0
    for q in range(n):
        for c in range(NC):
            s.hands[i, q, c] = 0
        s.held[i, q] = ZERO
        s.pl[i, q, S_HAND_LEN] = 0
        s.pl[i, q, S_CALLED] = False
        s.pl[i, q, S_LACKS] = 0
        s.pl[i, q, S_KNOWN] = 0
        for k in range(S_LAST, NUM_S):
            s.pl[i, q, k] = 0
    _forget_hands(s, i)
    s.g[i, G_DIRECTION] = 1
    s.g[i, G_COLOR] = -1
    s.g[i, G_PENDING] = 0
    s.g[i, G_DRAWN] = -1
    s.g[i, G_EXPOSED] = -1
    s.g[i, G_PREVIOUS] = -1
    s.g[i, G_BLUFF] = False
    s.g[i, G_COLOR_THEN_PLAY] = 0
    _shuffle(s, i, s.stock[i], 0, deck_size)
    if choose_dealer:
        s.g[i, G_DEALER] = _choose_dealer(s, prm, i)
    dealer = int(s.g[i, G_DEALER])
    for _ in range(prm[P_HAND_SIZE]):
        for k in range(1, n + 1):
            _draw_one(s, i, (dealer + k) % n)
    startable = False
    for k in range(s.g[i, G_STOCK_LEN]):
        if _can_start(prm, s.stock[i, k]):
            startable = True
            break
    if not startable:
        return False
    first = _seat(prm, dealer, 1)
    while True:  # ends: the stock holds a card that can start
        s.g[i, G_STOCK_LEN] -= 1
        c = int(s.stock[i, s.g[i, G_STOCK_LEN]])
        s.discard[i, s.g[i, G_DISCARD_LEN]] = c
        s.g[i, G_DISCARD_LEN] += 1
        if c == C.WILD_DRAW_FOUR:
            if prm[P_FIRST_WD4] == WD4_RETURN:
                _return_to_stock(s, i)
            continue
        if c >= 52:
            fw = prm[P_FIRST_WILD]
            if fw == WILD_RETURN:
                _return_to_stock(s, i)
                continue
            if fw == WILD_FLIP_AGAIN:
                continue
            # The colour is named as the first decision of the round: by the first player,
            # who then plays, or by the dealer, after whom the first player begins.
            if fw == WILD_FIRST_PLAYER_NAMES:
                _start_turn(s, i, first, PH_COLOR, -1)
                s.g[i, G_COLOR_THEN_PLAY] = 1
            else:
                _start_turn(s, i, dealer, PH_COLOR, -1)
            return True
        if _CARD_RANK[c] >= 10 and prm[P_FIRST_ACTION] == FIRST_FLIP_AGAIN:
            continue
        s.g[i, G_COLOR] = _CARD_COLOR[c]
        if _CARD_RANK[c] >= 10:
            _card_effect(s, prm, i, dealer, c)  # as if the dealer had played it
            s.g[i, G_PREVIOUS] = -1  # ... but no player has taken a decision yet
            return True
        _start_turn(s, i, first, PH_PLAY, -1)
        return True


@_helper(void(S, PRM, i8, b1))
def _deal(s, prm, i, choose_dealer):
    """Deal a round; a deal whose stock holds no card that can start is dealt again."""
    for attempt in range(1_000_000):
        if _deal_once(s, prm, i, choose_dealer and attempt == 0):
            return
    raise RuntimeError("no deal could turn a first card")


@_helper(b1(S, PRM, i8, i8, i8, i8))
def _is_match_winner(s, prm, i, p, q, low):
    if prm[P_TARGET] > 0 and prm[P_SCORING] == SCORING_PENALTY:
        return s.pl[i, q, S_SCORE] == low
    return q == p


@_helper(void(S, PRM, i8, i8, i8, F32_2D))
def _round_over(s, prm, i, p, c, rewards):
    """p has played their last card c. A last Draw Two / Wild Draw Four is still drawn by the
    next player; then points are counted and the round (or match) ends."""
    n = prm[P_PLAYERS]
    if c == C.WILD_DRAW_FOUR or _is_draw_two(c):
        extra = 4 if c == C.WILD_DRAW_FOUR else 2
        _draw_n(s, i, _seat(prm, p, int(s.g[i, G_DIRECTION])), int(s.g[i, G_PENDING]) + extra)
    s.g[i, G_PENDING] = 0
    s.g[i, G_BLUFF] = False
    s.g[i, G_EXPOSED] = -1
    s.g[i, G_WINNER] = p
    s.g[i, G_ROUND] += 1
    scoring = prm[P_SCORING]
    total = 0
    for q in range(n):
        if q != p:
            pts = _hand_points(s, i, q)
            total += pts
            if scoring == SCORING_PENALTY:
                s.pl[i, q, S_SCORE] += pts
    if scoring == SCORING_WINNER:
        s.pl[i, p, S_SCORE] += total
    if prm[P_REWARD_POINTS]:
        # reward="points": each seat's score change this round (a gain for the winner, a
        # loss for penalty points), centred so that the rewards sum to zero
        winner_scores = scoring == SCORING_WINNER
        mean = (total if winner_scores else -total) / n
        for q in range(n):
            if winner_scores:
                gain = total if q == p else 0
            else:
                gain = 0 if q == p else -_hand_points(s, i, q)
            rewards[i, q] += POINTS_REWARD_SCALE * (gain - mean)

    # Is the episode over? Winners: the round winner, or in a penalty-scored match that
    # reached the target, every seat with the lowest score.
    target = prm[P_TARGET]
    low = 0
    over = target == 0 or (scoring == SCORING_WINNER and s.pl[i, p, S_SCORE] >= target)
    if target > 0 and scoring == SCORING_PENALTY:
        low = s.pl[i, 0, S_SCORE]
        for q in range(n):
            low = min(low, s.pl[i, q, S_SCORE])
            if s.pl[i, q, S_SCORE] >= target:
                over = True
    if over:
        s.g[i, G_TERMINATED] = True
        if not prm[P_REWARD_POINTS]:
            k = 0
            for q in range(n):
                k += _is_match_winner(s, prm, i, p, q, low)
            if k < n:
                for q in range(n):
                    if _is_match_winner(s, prm, i, p, q, low):
                        rewards[i, q] += 1.0 / k
                    else:
                        rewards[i, q] -= 1.0 / (n - k)
    else:
        s.g[i, G_DEALER] = _seat(prm, int(s.g[i, G_DEALER]), 1)
        s.g[i, G_PHASE] = PH_ROUND_END


@_hot(void(S, PRM, i8, i8, i8, i8, F32_2D))
def _play(s, prm, i, p, c, k, rewards):
    """p plays card type c (naming colour k if it is a wild; k = -1 for a wild whose colour
    is named later)."""
    old_color = int(s.g[i, G_COLOR])
    s.g[i, G_DRAWN] = -1  # a play ends any decision about a drawn card (played or not)
    s.hands[i, p, c] -= 1
    if s.hands[i, p, c] == 0:
        s.held[i, p] &= ~_bit(c)
    s.pl[i, p, S_HAND_LEN] -= 1
    s.pl[i, p, S_PREVIOUS] = s.pl[i, p, S_LAST]
    s.pl[i, p, S_LAST] = c + 1
    s.pl[i, p, S_DREW] = 0
    if k >= 0:
        s.pl[i, p, S_NAMED] = k + 1
    col = S_SEEN + NC * p + c
    for o in range(prm[P_PLAYERS]):   # a known copy may be the one played: one fewer known
        if s.pl[i, o, col] > 0:
            s.pl[i, o, col] -= 1
    known = s.pl[i, p, S_KNOWN]
    if known > 0:
        # the card was a covered one unless it is the card just drawn or a lacked card
        if s.g[i, G_PHASE] != PH_DRAWN and not _lacks(s.pl[i, p, S_LACKS], c):
            known -= 1
        s.pl[i, p, S_KNOWN] = min(known, s.pl[i, p, S_HAND_LEN])
    s.discard[i, s.g[i, G_DISCARD_LEN]] = c
    s.g[i, G_DISCARD_LEN] += 1
    s.g[i, G_COLOR] = k if c >= 52 else _CARD_COLOR[c]
    if c == C.WILD_DRAW_FOUR:
        s.g[i, G_BLUFF] = prm[P_WD4_RESTRICTED] != 0 and _holds_color(s, i, p, old_color)
    if s.pl[i, p, S_HAND_LEN] == 0:
        _round_over(s, prm, i, p, c, rewards)
        return
    if s.pl[i, p, S_HAND_LEN] == 1 and prm[P_ONO_PENALTY] != ONO_NONE and not s.pl[i, p, S_CALLED]:
        s.g[i, G_EXPOSED] = p
    _card_effect(s, prm, i, p, c)


@_hot(void(S, PRM, i8, i8))
def _draw_action(s, prm, i, p):
    """draw: take the top of the stock (with draw_until_playable and no playable card, keep
    drawing until a playable one). Then decide to play it or keep it. Nothing to draw:
    the turn passes."""
    had_playable = _has_playable(s, prm, i, p)
    s.pl[i, p, S_DREW] = 1
    if not prm[P_VOLUNTARY_DRAW]:
        _note_forced_draw(s, prm, i, p)
    c = _draw_one(s, i, p)
    if c < 0:
        _next_turn(s, prm, i, p)
        return
    if prm[P_DRAW_UNTIL_PLAYABLE] and not had_playable:
        while not _is_playable(s, prm, i, p, c):
            c2 = _draw_one(s, i, p)
            if c2 < 0:
                break
            c = c2
    s.g[i, G_DRAWN] = c
    s.g[i, G_PHASE] = PH_DRAWN


@_helper(void(S, PRM, i8, i8))
def _catch(s, prm, i, p):
    """catch: the previous player went down to one card without calling ONO."""
    prev = s.g[i, G_PREVIOUS]
    if _catch_succeeds(s, i):
        e = int(s.g[i, G_EXPOSED])
        if prm[P_ONO_PENALTY] == ONO_SWAP:
            _swap_hands(s, i, p, e)
        else:
            _draw_n(s, i, e, int(prm[P_ONO_PENALTY_CARDS]))
    elif s.pl[i, prev, S_HAND_LEN] > 1:
        _draw_n(s, i, p, int(prm[P_FALSE_CATCH]))  # false accusation: more than one card
    # else: one card, but called (or not played down to it): nothing happens
    s.g[i, G_EXPOSED] = -1


@_helper(void(S, PRM, i8, i8))
def _challenge(s, prm, i, p):
    """Wild Draw Four challenge. Guilty: the offender draws the pending cards and the victim
    plays normally. Innocent: the victim draws them plus 2 and loses the turn. The colour
    named with the Wild Draw Four stands either way."""
    offender = int(s.g[i, G_PREVIOUS])
    for c in range(NC):   # the offender shows its hand to the challenger (official rules)
        s.pl[i, p, S_SEEN + NC * offender + c] = s.hands[i, offender, c]
    if s.g[i, G_BLUFF]:
        _draw_n(s, i, offender, int(s.g[i, G_PENDING]))
        s.g[i, G_PENDING] = 0
        s.g[i, G_PHASE] = PH_PLAY
    else:
        _draw_n(s, i, p, int(s.g[i, G_PENDING]) + 2)
        s.g[i, G_PENDING] = 0
        # S_DREW is left as it was, though the turn ends without a play: the shipped
        # version-2 models were trained so, and the published suite's games depend on it
        _next_turn(s, prm, i, p)
    s.g[i, G_BLUFF] = False


# ======================================================================================
# One decision
# ======================================================================================
@_hot(void(S, PRM, i8, i8, F32_2D))
def _apply(s, prm, i, a, rewards):
    """The acting player of game i takes (legal) action a."""
    p = int(s.g[i, G_CURRENT])
    s.g[i, G_DECISIONS] += 1
    if a == C.A_CATCH:
        _catch(s, prm, i, p)
        s.g[i, G_FRESH] = False
    else:
        s.g[i, G_FRESH] = False
        if s.g[i, G_EXPOSED] != p:
            s.g[i, G_EXPOSED] = -1  # the catch window closes once the next player acts
        if a < C.A_DRAW:
            _play(s, prm, i, p, int(_ACTION_CARD[a]), int(_ACTION_COLOR[a]), rewards)
        elif a == C.A_DRAW:
            _draw_action(s, prm, i, p)
        elif a == C.A_KEEP:
            _next_turn(s, prm, i, p)
        elif a == C.A_CALL:
            s.pl[i, p, S_CALLED] = True
        elif a == C.A_CHALLENGE:
            _challenge(s, prm, i, p)
        elif a == C.A_ACCEPT:
            s.pl[i, p, S_DREW] = 1
            _draw_n(s, i, p, int(s.g[i, G_PENDING]))
            s.g[i, G_PENDING] = 0
            s.g[i, G_BLUFF] = False  # the Wild Draw Four is taken: nothing left to challenge
            _next_turn(s, prm, i, p)
        elif a < C.A_TARGET:
            s.g[i, G_COLOR] = a - C.A_COLOR
            s.pl[i, p, S_NAMED] = a - C.A_COLOR + 1
            if s.g[i, G_COLOR_THEN_PLAY]:
                s.g[i, G_COLOR_THEN_PLAY] = 0
                s.g[i, G_PHASE] = PH_PLAY  # the first player names the colour, then plays
            else:
                _next_turn(s, prm, i, p)
        else:
            _swap_hands(s, i, p, _seat(prm, p, int(a) - C.A_TARGET + 1))
            s.g[i, G_PHASE] = PH_COLOR  # the colour is named after the swap
            s.g[i, G_COLOR_THEN_PLAY] = 0
    if not s.g[i, G_TERMINATED] and s.g[i, G_DECISIONS] >= prm[P_MAX_DECISIONS]:
        s.g[i, G_TRUNCATED] = True


@_helper(void(S, PRM, i8, F32_2D))
def _advance_rounds_and_forced(s, prm, i, rewards):
    """_advance: deal the next round of a match if one just ended, then (skip_forced) take
    every decision that has exactly one legal action."""
    while not (s.g[i, G_TERMINATED] or s.g[i, G_TRUNCATED]):
        if s.g[i, G_PHASE] == PH_ROUND_END:
            _deal(s, prm, i, False)
            continue
        if not prm[P_SKIP_FORCED]:
            return
        lo, hi = legal_actions(s, prm, i)
        if _action_count(lo, hi) != 1:
            return
        _apply(s, prm, i, _nth_legal(lo, hi, 0), rewards)


@_inline
def _advance(s, prm, i, rewards):
    """After a decision: deal the next round of a match if one just ended, and with
    skip_forced on, take every decision that has exactly one legal action
    (_advance_rounds_and_forced; nothing to do after most decisions)."""
    if s.g[i, G_PHASE] == PH_ROUND_END or prm[P_SKIP_FORCED]:
        _advance_rounds_and_forced(s, prm, i, rewards)


# ======================================================================================
# Observations
# ======================================================================================
# The observation layout (offsets OBS_*) is defined in ono_env/observation.py. Everything
# written here is public or the observing seat's own.


@_inline
def _stack_bound(prm):
    """Every Draw Two and Wild Draw Four of the deck stacked once: the cards to draw that
    :func:`ono_env.observation.observation_high` bounds a stack by."""
    total = 4 * prm[P_DECK + C.WILD_DRAW_FOUR]
    for c in range(C.NUM_COLORS):
        total += 2 * prm[P_DECK + c * C.NUM_RANKS + C.RANK_DRAW_TWO]
    return total


@_inline
def _observe_common(s, prm, i, me, o):
    """The blocks both layouts share (hand .. self), on a zeroed row."""
    for c in range(NC):
        o[OBS_HAND + c] = s.hands[i, me, c]
    o[OBS_TOP + _top(s, i)] = 1.0
    if s.g[i, G_COLOR] >= 0:
        o[OBS_COLOR + s.g[i, G_COLOR]] = 1.0
    ph = s.g[i, G_PHASE]
    if ph < NUM_OBSERVED_PHASES:
        o[OBS_PHASE + ph] = 1.0
    mine = s.g[i, G_CURRENT] == me
    o[OBS_MY_TURN] = 1.0 if mine else 0.0
    pending = s.g[i, G_PENDING]
    if pending > prm[P_DECK_SIZE]:   # past the observation's bound (observation_high): read as it
        pending = min(pending, max(prm[P_DECK_SIZE], _stack_bound(prm)))
    o[OBS_PENDING] = pending
    if mine and ph == PH_DRAWN and s.g[i, G_DRAWN] >= 0:
        o[OBS_DRAWN + s.g[i, G_DRAWN]] = 1.0
    o[OBS_DIRECTION] = s.g[i, G_DIRECTION]
    o[OBS_STOCK] = s.g[i, G_STOCK_LEN]
    for k in range(s.g[i, G_DISCARD_LEN]):
        o[OBS_DISCARD + int(s.discard[i, k])] += 1.0
    o[OBS_SELF] = s.pl[i, me, S_HAND_LEN]
    o[OBS_SELF + 1] = s.pl[i, me, S_CALLED]


@_inline
def _card_code(c, o, at):
    """A card in version 2's history blocks: colour (4), then kind (13 ranks, 4 wild types);
    nothing for c < 0."""
    if c < 0:
        return
    if c < 52:
        o[at + int(_CARD_COLOR[c])] = 1.0
        o[at + C.NUM_COLORS + int(_CARD_RANK[c])] = 1.0
    else:
        o[at + C.NUM_COLORS + C.NUM_RANKS + c - 52] = 1.0


@_inline
def _rules_row(prm, o, at):
    """Version 2's rules block (ono_env.observation.rules_features computes the same)."""
    o[at + 0] = prm[P_WD4_RESTRICTED] != 0
    o[at + 1] = prm[P_CHALLENGE] != 0
    o[at + 2] = prm[P_STACKING] != 0
    o[at + 3] = prm[P_REVERSE_SKIPS] != 0
    o[at + 4] = prm[P_VOLUNTARY_DRAW] != 0
    o[at + 5] = prm[P_MUST_PLAY_DRAWN] != 0
    o[at + 6] = prm[P_DRAW_UNTIL_PLAYABLE] != 0
    o[at + 7 + prm[P_ONO_PENALTY]] = 1.0
    o[at + 10] = prm[P_ONO_PENALTY_CARDS] / 4.0
    o[at + 11] = prm[P_FALSE_CATCH] / 2.0
    o[at + 12] = prm[P_WC_SWAP] != 0
    o[at + 13 + prm[P_SCORING]] = 1.0
    o[at + 16] = prm[P_TARGET] / 500.0
    o[at + 17] = prm[P_HAND_SIZE] / 7.0
    o[at + 18] = prm[P_DECK_SIZE] / 108.0
    for w in range(C.NUM_WILD_TYPES):
        o[at + 19 + w] = prm[P_DECK + 52 + w] / 4.0


@_helper(void(S, PRM, i8, i8, F32ROW))
def _observe_row2(s, prm, i, me, o):
    """o = the version-2 observation of seat me in game i (ono_env.observation)."""
    n = prm[P_PLAYERS]
    o[:] = 0.0
    _observe_common(s, prm, i, me, o)
    scoring = prm[P_SCORING] != SCORING_NONE
    scale = 1.0 / prm[P_TARGET] if prm[P_TARGET] > 0 else 0.01
    if scoring:
        o[OBS2_OWN_SCORE] = s.pl[i, me, S_SCORE] * scale
    o[OBS2_PLAYERS + n - 2] = 1.0
    _rules_row(prm, o, OBS2_RULES)
    for k in range(1, n):
        q = (me + k) % n
        b = OBS2_OPPONENTS + (k - 1) * OPPONENT_SIZE
        size = s.pl[i, q, S_HAND_LEN]
        o[b + OPP_PRESENT] = 1.0
        o[b + OPP_SIZE] = size
        o[b + OPP_CALLED] = s.pl[i, q, S_CALLED]
        if scoring:
            o[b + OPP_SCORE] = s.pl[i, q, S_SCORE] * scale
        known = 0
        for c in range(NC):   # this seat's own knowledge of q's hand
            v = s.pl[i, me, S_SEEN + NC * q + c]
            o[b + OPP_KNOWN + c] = v
            known += v
        covered = min(s.pl[i, q, S_KNOWN], size)
        if covered > 0:
            code = s.pl[i, q, S_LACKS]
            for bit in range(LACKS_WILD):
                if (code >> bit) & 1:
                    o[b + OPP_LACKS + bit] = 1.0
            if code >> LACKS_WILD:
                o[b + OPP_LACKS + LACKS_WILD] = 1.0
        o[b + OPP_COVERED] = covered
        o[b + OPP_UNKNOWN] = max(size - known, 0)
        _card_code(s.pl[i, q, S_LAST] - 1, o, b + OPP_LAST)
        _card_code(s.pl[i, q, S_PREVIOUS] - 1, o, b + OPP_PREVIOUS)
        if s.pl[i, q, S_NAMED] > 0:
            o[b + OPP_NAMED + s.pl[i, q, S_NAMED] - 1] = 1.0
        o[b + OPP_DREW] = s.pl[i, q, S_DREW]


@_helper(void(S, PRM, i8, i8, F32ROW))
def _observe_row(s, prm, i, me, o):
    """o = the observation of seat me in game i, in the layout prm[P_OBS_VERSION] names."""
    if prm[P_OBS_VERSION] == 2:
        _observe_row2(s, prm, i, me, o)
        return
    n = prm[P_PLAYERS]
    o[:] = 0.0
    _observe_common(s, prm, i, me, o)
    for k in range(1, n):
        q = (me + k) % n
        o[OBS_OPPONENTS + 2 * (k - 1)] = s.pl[i, q, S_HAND_LEN]
        o[OBS_OPPONENTS + 2 * (k - 1) + 1] = s.pl[i, q, S_CALLED]
    if prm[P_SCORING] != SCORING_NONE:
        scale = 1.0 / prm[P_TARGET] if prm[P_TARGET] > 0 else 0.01
        base = OBS_OPPONENTS + 2 * (n - 1)
        for k in range(n):
            o[base + k] = s.pl[i, (me + k) % n, S_SCORE] * scale


# ======================================================================================
# Batch kernels
# ======================================================================================
# Called from Python with the seven state arrays one by one (numba types plain arrays
# quickly; typing a tuple argument costs microseconds per call). Each kernel links the
# whole engine, so there are few of them: that keeps the first compile short; the ones
# called from ono_env.game are made ready on first use (_lazy_kernel: prebuilt, cached or
# compiled; ono_env._compile).
@_lazy_kernel(void(*STATE, PRM, BROW, B2D))
def legal_mask(hands, held, pl, stock, discard, g, rng, prm, which, out):
    """out[i]: the legal actions of game i's acting player, for every i with which[i]."""
    s = Arrays(hands, held, pl, stock, discard, g, rng)
    for i in range(out.shape[0]):
        if which[i]:
            legal_row(s, prm, i, out[i])


CHECK_NONE = 0    # step's ``check``: no legality test (actions already checked by the caller)
CHECK_RULES = 1   # recompute each game's legal actions and test the action against them
CHECK_MASK = 2    # test against mask_out[i], the caller's legal mask of this very position


@_lazy_kernel(i8(*STATE, PRM, I64ARR, BROW, i8, F32_2D, b1, B2D, F32_2D, BROW, BROW, I32ARR))
def step(hands, held, pl, stock, discard, g, rng, prm, actions, active, check, rewards,
         observe_next, mask_out, obs_out, terminated_out, truncated_out, current_out):
    """Apply actions (B,) to every unfinished game with active[i]; rewards (B, P) is
    overwritten. Action ids are always range-checked; ``check``
    says how legality is tested: CHECK_RULES recomputes the legal actions, CHECK_MASK reads
    them from mask_out (which the caller computed for this position and nothing has changed
    since), CHECK_NONE skips the test for actions the caller has already checked (never
    reachable from user input). With ``observe_next``, then write every game's next acting
    seat's legal actions (mask_out) and observation (obs_out), saving single-game loops two
    calls. Finally every game's flags: terminated_out, truncated_out (B,) bool and
    current_out (B,) the acting seat.

    Returns the index of the first game whose action is illegal (then no game is changed),
    or -1 - (the number of finished games). Finished and inactive games ignore their
    action."""
    s = Arrays(hands, held, pl, stock, discard, g, rng)
    B = actions.shape[0]
    for i in range(B):
        if s.g[i, G_TERMINATED] or s.g[i, G_TRUNCATED] or not active[i]:
            continue
        a = actions[i]
        if a < 0 or a >= NA:
            return i
        if check == CHECK_MASK:
            if not mask_out[i, a]:
                return i
        elif check == CHECK_RULES:
            lo, hi = legal_actions(s, prm, i)
            if not _has_action(lo, hi, a):
                return i
    rewards[:] = 0.0
    for i in range(B):
        if s.g[i, G_TERMINATED] or s.g[i, G_TRUNCATED] or not active[i]:
            continue
        _apply(s, prm, i, actions[i], rewards)
        _advance(s, prm, i, rewards)
    if observe_next:
        for i in range(B):
            legal_row(s, prm, i, mask_out[i])
            _observe_row(s, prm, i, s.g[i, G_CURRENT], obs_out[i])
    finished = 0
    for i in range(B):
        terminated_out[i] = s.g[i, G_TERMINATED] != 0
        truncated_out[i] = s.g[i, G_TRUNCATED] != 0
        current_out[i] = s.g[i, G_CURRENT]
        finished += terminated_out[i] or truncated_out[i]
    return -1 - finished


@_helper(void(S, PRM, i8, F32_2D))
def _reset_game(s, prm, i, scratch_rewards):
    for q in range(prm[P_PLAYERS]):
        s.pl[i, q, S_SCORE] = 0
    s.g[i, G_ROUND] = 0
    s.g[i, G_DECISIONS] = 0
    s.g[i, G_WINNER] = -1
    s.g[i, G_TERMINATED] = False
    s.g[i, G_TRUNCATED] = False
    _deal(s, prm, i, True)
    _advance(s, prm, i, scratch_rewards)


@_lazy_kernel(void(*STATE, PRM, BROW, F32_2D))
def reset(hands, held, pl, stock, discard, g, rng, prm, which, scratch_rewards):
    """Start a new episode in every game i with which[i] (the generator state is kept).
    scratch_rewards (B, P) float32 is scratch space."""
    s = Arrays(hands, held, pl, stock, discard, g, rng)
    for i in range(which.shape[0]):
        if which[i]:
            _reset_game(s, prm, i, scratch_rewards)


@_inline
def _pick_random(lo, hi, policy_rng, i):
    """The uniformly random legal action of a legal set: the (next_u53 % count)-th legal
    action in id order, drawn from policy_rng[i]; -1 (and no draw) when none is legal."""
    count = _action_count(lo, hi)
    if count == 0:
        return -1
    return _nth_legal(lo, hi, _next_u53(policy_rng, i) % count)


@_inline
def _random_action(s, prm, i, policy_rng, rewards):
    """Game i's acting player takes a uniformly random legal action (from policy_rng[i]);
    the move's rewards are added to rewards[i]. False, and nothing done, when the game has
    no legal action (a finished game; checked positions never leave a live game without
    one, but a loop must not spin on it)."""
    lo, hi = legal_actions(s, prm, i)
    a = _pick_random(lo, hi, policy_rng, i)
    if a < 0:
        return False
    _apply(s, prm, i, a, rewards)
    _advance(s, prm, i, rewards)
    return True


@_lazy_kernel(i8(*STATE, PRM, i8, I64ARR, U64ARR, numba.float64[:, ::1], F32_2D))
def random_moves(hands, held, pl, stock, discard, g, rng, prm, steps, stop_seat, policy_rng,
                 seat_rewards, scratch_rewards):
    """Uniformly random legal actions, each game drawing from its policy_rng[i].

    ``steps >= 0``: every game takes ``steps`` actions, a finished game being dealt again
    first (benchmarks, rollouts). ``steps < 0``: every unfinished game plays until seat
    stop_seat[i] is to act (-1: to its end), adding every seat's rewards to seat_rewards.
    Returns the number of decisions taken (forced ones skipped by skip_forced included)."""
    s = Arrays(hands, held, pl, stock, discard, g, rng)
    B = g.shape[0]
    n = prm[P_PLAYERS]
    until = steps < 0
    taken = 0
    # game by game (the games are independent: the order changes nothing), in one loop
    # with one call of _random_action, which the compiler inlines (all of a decision's
    # rules): a second call would compile them twice
    for i in range(B):
        left = steps
        if not until:
            taken -= s.g[i, G_DECISIONS]
        while True:
            if until:
                if s.g[i, G_TERMINATED] or s.g[i, G_TRUNCATED] or s.g[i, G_CURRENT] == stop_seat[i]:
                    break
                for q in range(n):
                    scratch_rewards[i, q] = 0.0
            else:
                if left == 0:
                    break
                left -= 1
                if s.g[i, G_TERMINATED] or s.g[i, G_TRUNCATED]:
                    taken += s.g[i, G_DECISIONS]
                    _reset_game(s, prm, i, scratch_rewards)
            if not _random_action(s, prm, i, policy_rng, scratch_rewards):
                if until:
                    break  # no legal action: stop rather than spin
                continue
            if until:
                for q in range(n):
                    seat_rewards[i, q] += scratch_rewards[i, q]
                taken += 1
        if not until:
            taken += s.g[i, G_DECISIONS]
    return taken


@_lazy_kernel(void(*STATE, PRM, I64ARR, BROW, F32_2D))
def observe(hands, held, pl, stock, discard, g, rng, prm, seats, which, out):
    """out[i] = the observation of seat seats[i] in game i, for every i with which[i]."""
    s = Arrays(hands, held, pl, stock, discard, g, rng)
    for i in range(out.shape[0]):
        if which[i]:
            _observe_row(s, prm, i, seats[i], out[i])


@_lazy_kernel(void(B2D, numba.float64[::1], I64ARR))
def nth_legal(mask, u, out):
    """out[i] = the floor(u[i] * count)-th legal action of row i (u in [0, 1)): a uniform
    random legal action for uniform u. Rows with no legal action get 0."""
    for i in range(mask.shape[0]):
        count = 0
        for a in range(mask.shape[1]):
            count += mask[i, a]
        out[i] = 0
        if count == 0:
            continue
        k = int(u[i] * count)
        for a in range(mask.shape[1]):
            if mask[i, a]:
                if k == 0:
                    out[i] = a
                    break
                k -= 1
