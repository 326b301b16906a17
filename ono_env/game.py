"""``VecGame``: a batch of B ONO games stepped together by the compiled engine.

>>> from ono_env.game import VecGame, first_legal
>>> g = VecGame("classic", num_games=64, seed=0, num_players=2)
>>> mask = g.legal_mask()                    # (64, 85) bool
>>> result = g.step(first_legal(mask))       # rewards (64, 2), terminated, truncated, current_player

A finished game (terminated or truncated) has an empty legal mask and ignores the action it
is given until it is reset: call ``reset(which=mask)`` for some games, ``reset()`` for all,
or construct with ``autoreset=True`` to have every game that finishes during ``step`` dealt
again at the end of that same step (``step`` still reports it as terminated / truncated,
with its rewards; the state is then the new episode's first position).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, cast

import numpy as np

from ono_env import _engine as E
from ono_env import cards as C
from ono_env import positions
from ono_env.checks import (
    as_array,
    check_bool,
    check_choice,
    check_int,
    check_rng,
    check_seed,
    is_int,
    shown,
)
from ono_env.observation import (
    OBS_VERSIONS,
    RulesSpec,
    _ruleset,
    check_observation_version,
    observation_size,
)
from ono_env.positions import POSITION_VERSION  # noqa: F401 (re-exported)
from ono_env.rules import (
    P_MAX_DECISIONS,
    P_OBS_VERSION,
    P_REWARD_POINTS,
    P_SKIP_FORCED,
    RuleSet,
    resolve_rules,
)


def kernel_entry(kernel):
    """The compiled entry point of a kernel compiled for one signature: calling it skips
    numba's per-call type matching (about half the cost of a small call)."""
    if not hasattr(kernel, "overloads") or len(kernel.signatures) != 1:
        return kernel  # NUMBA_DISABLE_JIT=1: plain Python
    return kernel.overloads[kernel.signatures[0]].entry_point


class _Entries:
    """The engine kernels' entry points, each made ready on first use (``E.compiled``:
    prebuilt, from numba's cache, or compiled): a program that only plays random games never
    loads ``step`` or ``observe``."""

    def __getattr__(self, name):
        entry = kernel_entry(E.compiled(getattr(E, name)))
        setattr(self, name, entry)  # later reads find it without __getattr__
        return entry


_K = _Entries()

REWARD_MODES = ("win", "points")
DEFAULT_MAX_DECISIONS_ROUND = 5_000
DEFAULT_MAX_DECISIONS_MATCH = 50_000
MAX_GAMES = 1_000_000
"""The most games one VecGame holds (their state is about 22 GiB at 10 players, 1.3 GiB at
2: :func:`state_bytes`; :func:`check_game_memory` refuses more than the machine has free)."""
MEMORY_CHECK_FROM = 256 << 20
"""Batches that hold less than this (256 MiB, :func:`game_bytes` each) are not checked
against the free memory."""
GAME_BYTES_BOUND = 64 << 10
"""More than :func:`game_bytes` at any table (about 30 KB at 10 players with version-2
observations): batches under ``MEMORY_CHECK_FROM / GAME_BYTES_BOUND`` games (4,096) skip the
count."""
MAX_DECISIONS = 10_000_000
"""The largest ``max_decisions`` (the decision counter is a 32-bit integer)."""
_RANDOM_PIECE = 1 << 22
"""Decisions :meth:`VecGame.play_random` takes in one compiled call (a few tenths of a
second at most), so that Ctrl-C stops a long call between two of them."""


@functools.cache
def state_bytes(num_players: int, deck_size: int) -> int:
    """The bytes of one game's state at ``num_players`` seats with a deck of ``deck_size``
    (the engine's arrays for one game; most of it is what each seat knows of every hand)."""
    return sum(a.nbytes for a in E.State(1, num_players, deck_size).arrays)


def game_bytes(rules: RulesSpec, observation_version: int = 1) -> int:
    """The bytes a VecGame holds per game: its state (:func:`state_bytes`), its per-game
    buffers (three of rewards, a legal mask, flags, a seat number for each seat that
    ``observe`` is asked for) and one observation of every game in the
    layout ``observation_version`` (what ``observe`` writes; every agent but the random one
    reads it). ``rules``: a RuleSet, a preset name, a YAML path or a mapping."""
    rules = _ruleset(rules)
    P = rules.num_players
    buffers = 3 * 4 * P + C.NUM_ACTIONS + 1 + 1 + 4 + 1 + 8 * P
    return (state_bytes(P, rules.deck_size) + buffers
            + 4 * observation_size(rules, observation_version))


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity; ``os.cpu_count()`` counts the
    machine's, where a container or ``taskset`` may allow fewer)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def available_memory(root: str = "/") -> int | None:
    """The memory a new allocation can take without swapping or being killed, in bytes: the
    system's free memory (Linux's ``MemAvailable``), or less where this process's control
    group (a container) has a lower limit (``_group_free``); None where neither can be
    read (then nothing is checked). ``root``: where ``/proc`` and ``/sys`` are (the tests')."""
    free = [m for m in [_meminfo(root, "MemAvailable")] if m is not None]
    group = _group_free(root)
    if group is not None:
        free.append(group)
    return min(free) if free else None


def _meminfo(root: str, key: str) -> int | None:
    """Linux's ``/proc/meminfo`` entry ``key`` in bytes; None where it cannot be read."""
    try:
        with open(os.path.join(root, "proc/meminfo"), encoding="ascii") as f:
            for line in f:
                if line.startswith(f"{key}:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _read(path: str) -> str:
    with open(path, encoding="ascii") as f:
        return f.read()


def memory_limit(root: str = "/") -> int | None:
    """The most memory this process can ever hold, in bytes: the machine's, or less where its
    control group (a container) has a lower limit; None where neither can be read. What a
    training run checks a rollout against (the free memory, :func:`available_memory`,
    changes as other programs run; before, a container's limit was not seen, and a rollout
    over it was killed with no word). ``root``: as :func:`available_memory`'s."""
    sizes = [m for m in [_meminfo(root, "MemTotal")] if m is not None]
    if not sizes and root == "/":   # no /proc (not Linux): the system's count of its pages
        with contextlib.suppress(AttributeError, ValueError, OSError):
            sizes += [n for n in [os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")]
                      if n > 0]
    group = _group_memory(root)
    if group is not None:
        sizes.append(group[0])
    return min(sizes) if sizes else None


def _group_free(root: str) -> int | None:
    """What this process's memory control group lets it add (:func:`_group_memory`)."""
    group = _group_memory(root)
    return None if group is None else group[1]


def _group_memory(root: str) -> tuple[int, int] | None:
    """This process's memory control group (cgroup v2, else v1): its limit, and what it lets
    the process add, its limit less its use, the page cache it can drop (``inactive_file``)
    counted as free, as container runtimes count it; None without a limit or where none can
    be read. The group is the one ``/proc/self/cgroup`` names, else the mount's root (a
    namespaced group)."""
    own = {"v2": "", "v1": ""}
    try:
        for line in _read(os.path.join(root, "proc/self/cgroup")).splitlines():
            number, controllers, path = line.split(":", 2)
            if number == "0" and not controllers:
                own["v2"] = path
            elif "memory" in controllers.split(","):
                own["v1"] = path
    except (OSError, ValueError):
        pass
    for mount, limit, usage, cache, version in (
            ("sys/fs/cgroup", "memory.max", "memory.current", "inactive_file", "v2"),
            ("sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes",
             "total_inactive_file", "v1")):
        base = os.path.join(root, mount)
        for folder in dict.fromkeys((os.path.join(base, own[version].lstrip("/")), base)):
            try:
                cap = _read(os.path.join(folder, limit)).strip()
                used = int(_read(os.path.join(folder, usage)))
            except (OSError, ValueError):
                continue
            if not cap.isdigit() or int(cap) >= 1 << 60:   # "max" or v1's huge number
                return None
            dropped = 0
            try:
                for line in _read(os.path.join(folder, "memory.stat")).splitlines():
                    key, _, value = line.partition(" ")
                    if key == cache:
                        dropped = int(value)
            except (OSError, ValueError):
                pass
            return int(cap), max(0, int(cap) - used + dropped)
    return None


SPACE_VALUE_BYTES = 10
"""What Gymnasium's ``batch_space`` holds per value of a batched ``Box``: its bounds (low
and high, float32) and two bool arrays that say where each is finite."""


def check_game_memory(rules: RulesSpec, num_games: int, observation_version: int = 1,
                      what: str | None = None, agents_copy: bool = False,
                      space_values: int = 0) -> None:
    """``ValueError`` naming ``what`` (default ``num_games=N``: the argument that asked for
    the games) when ``num_games`` games of ``rules`` would not fit in
    the memory free now: what the games hold (:func:`game_bytes`, a lower bound of what
    playing them takes) is over it. ``agents_copy``: count a second observation of each
    game, the copy of its row that an agent is handed (the arena's agents; before, a batch
    of ``ppo-any`` games took twice what was counted). ``space_values``: the values of one
    game's observation space that a vector environment batches (:data:`SPACE_VALUE_BYTES`
    each; before, ``OnoVectorEnv(1_000_000)`` passed the check and then failed inside
    Gymnasium, its bounds half of what it needed). Without the check a batch too large
    for the memory is killed by the system with no word, or swaps the machine to a halt.
    Written here because the engine's arrays are the project's own; batches under
    :data:`MEMORY_CHECK_FROM` are not checked."""
    rules = _ruleset(rules)
    spaces = SPACE_VALUE_BYTES * space_values
    if num_games * (GAME_BYTES_BOUND + spaces) < MEMORY_CHECK_FROM:   # small: nothing to count
        return
    each = game_bytes(rules, observation_version) + spaces + (
        4 * observation_size(rules, observation_version) if agents_copy else 0)
    need = num_games * each
    if need < MEMORY_CHECK_FROM:
        return
    free = available_memory()
    if free is not None and need > free:
        what = f"num_games={num_games:,}" if what is None else what
        obs = f"{'two observations' if agents_copy else 'an observation'} of each"
        held = (f"their state, {obs} and the bounds of their batched observation space"
                if space_values else f"their state and {obs}")
        raise ValueError(f"{what}: {num_games:,} games of {rules.num_players} "
                         f"players hold {need / 2**30:,.1f} GiB ({held}), "
                         f"and this machine has {free / 2**30:,.1f} GiB of memory "
                         f"free; allowed: fewer games at once (at most {free // each:,} here)")


class StepResult(NamedTuple):
    """What ``VecGame.step`` returns: read-only views of buffers the game reuses (the next
    ``step`` overwrites them; copy what you keep)."""

    rewards: np.ndarray         # (B, P) float32  reward of every seat for this step
    terminated: np.ndarray      # (B,) bool       the episode has ended by the rules (from the
                                #                 step that ended it until the game is reset;
                                #                 count episodes where it turns True)
    truncated: np.ndarray       # (B,) bool       the episode was cut at max_decisions (likewise)
    current_player: np.ndarray  # (B,) int32      seat to act next


def game_seeds(seed: int, num_games: int) -> np.ndarray:
    """``(num_games,) uint64``: the generator state game ``i`` of a batch seeded ``seed`` starts
    from. ``VecGame(rules, 1).reset(seeds=game_seeds(s, B)[i:i+1])`` plays exactly like game
    ``i`` of ``VecGame(rules, B, seed=s)``. ``seed`` as ``VecGame`` takes it (a whole number
    0 to 2**63 - 1), ``num_games`` 0 to ``MAX_GAMES``."""
    seed = check_seed("seed", seed, allow_none=False)
    num_games = check_int("num_games", num_games, 0, MAX_GAMES)
    return np.array([E.mix_seed(seed, i) for i in range(num_games)], dtype=np.uint64)


FRESH_SEED_BITS = 53
"""The bits of :func:`fresh_seed`'s seeds."""


def fresh_seed() -> int:
    """A seed for a deal whose hidden cards a player must not learn (``ono-play`` and the web
    table draw one when none is given): from the operating system's entropy, uniform over 0
    to ``2**FRESH_SEED_BITS - 1``. Not fewer bits: a seed deals every hand and the stock, so a
    player who can search the seeds keeps those whose deal holds their own hand, and 2**31
    seeds take minutes to deal on a few cores; 2**53 take thousands of core-years. Not more:
    the browser reads a seed as a JavaScript number, exact up to 2**53."""
    return int(cast(int, np.random.SeedSequence().entropy) % 2**FRESH_SEED_BITS)


class _Release:
    """What :meth:`VecGame._changing` returns, the lock taken: a context whose end releases
    it (the methods' one ``with`` in place of a try/finally each)."""

    __slots__ = ("lock",)

    def __init__(self, lock: Any) -> None:
        self.lock = lock

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        self.lock.release()


class CopiedWhole:
    """``copy.copy`` of this object gives one of its own, as ``copy.deepcopy`` makes: for the
    game and the environments over it, whose shallow copies shared the state arrays but not
    what is kept beside them (a VecGame's legal mask: stepping both corrupted the games, a
    hand of 262 cards; an env's history and mask: stepping both ended one's episode on an
    "illegal" action)."""

    def __copy__(self) -> Any:
        return copy.deepcopy(self)


class VecGame(CopiedWhole):
    """B games of one rule set, stepped together.

    Args:
        rules: a :class:`~ono_env.rules.RuleSet`, a preset name, a rules YAML path or a mapping;
            None: the ``classic`` preset (4 players).
        num_games: B, the batch size.
        seed: seeds game ``i`` with ``game_seeds(seed, B)[i]``; ``None`` draws fresh entropy.
        autoreset: deal finished games again at the end of the step they finish in.
        skip_forced: take decisions that have exactly one legal action automatically
            (inside ``reset``/``step``) instead of offering them as a step. What those taken
            inside ``reset`` score (with small hands a round can end there, even the game)
            is added to the next step's rewards, where a game that ended inside the reset
            reports its end.
        max_decisions: truncate an episode after this many decisions (counting skipped
            forced ones). Default 5,000 for a single round, 50,000 for a match.
        reward: ``"win"`` (at the end of the episode: winner +1, the others -1/(N-1); with
            several winners of a penalty-scored match, +1/k and -1/(N-k)) or ``"points"``
            (at the end of every round: the round's score change times 0.01, centred to sum to
            zero; needs scoring).
        observation_version: the layout :meth:`observe` writes by default (1, the default,
            or 2: one length for every table; ``ono_env.observation``).
        **overrides: rule options applied to ``rules`` (``num_players=2``, ...).

    ``state`` (``ono_env._engine.State``) holds the games: read it freely, but change a
    game only through the methods (``reset``, ``step``, ``set_position``, ...): the legal
    mask that ``legal_mask`` computed is kept, and ``step`` tests actions against it, until
    one of them changes the games, and the engine keeps each hand both as card counts
    (``hands``) and as the set of card types held (``held``), which a direct write to one
    of them would leave out of step. ``legal_mask`` and ``step`` return read-only views of
    buffers that their next call overwrites, so a loop allocates nothing per step.
    """

    def __init__(
        self,
        rules: RuleSet | str | Path | Mapping[str, Any] | None = None,
        num_games: int = 1,
        seed: int | None = None,
        *,
        autoreset: bool = False,
        skip_forced: bool = False,
        max_decisions: int | None = None,
        reward: str = "win",
        observation_version: int = 1,
        **overrides: Any,
    ) -> None:
        self.rules = resolve_rules(rules, **overrides)
        self.observation_version = check_observation_version(observation_version)
        """The observation layout ``observe`` writes by default (1 or 2;
        :mod:`ono_env.observation`)."""
        num_games = check_int("num_games", num_games, 1, MAX_GAMES)
        check_game_memory(self.rules, num_games, self.observation_version)
        check_choice("reward", reward, REWARD_MODES)
        if reward == "points" and self.rules.scoring == "none":
            raise ValueError("reward='points' needs a rule set with scoring 'winner' or 'penalty'")
        if max_decisions is None:
            max_decisions = (DEFAULT_MAX_DECISIONS_MATCH if self.rules.target_score
                             else DEFAULT_MAX_DECISIONS_ROUND)
        check_int("max_decisions", max_decisions, 1, MAX_DECISIONS)
        check_bool("autoreset", autoreset)
        check_bool("skip_forced", skip_forced)
        check_seed("seed", seed)
        self.num_games = int(num_games)
        self.num_players = self.rules.num_players
        self.autoreset = bool(autoreset)
        self.skip_forced = bool(skip_forced)
        self.max_decisions = int(max_decisions)
        self.reward = reward
        self._params = self.rules.params()
        self._params[P_SKIP_FORCED] = self.skip_forced
        self._params[P_MAX_DECISIONS] = self.max_decisions
        self._params[P_REWARD_POINTS] = reward == "points"
        self._params[P_OBS_VERSION] = self.observation_version
        self._version_params = {}
        self._sizes: dict[int, int] = {}   # observation_size by version, as first asked
        for v in OBS_VERSIONS:   # the same parameters for observing in another layout
            self._version_params[v] = self._params.copy()
            self._version_params[v][P_OBS_VERSION] = v
        self.state = E.State(self.num_games, self.num_players, self.rules.deck_size)
        self._arrays = self.state.arrays
        B = self.num_games
        self._rewards = np.zeros((B, self.num_players), np.float32)   # step's, for StepResult
        self._scratch_rewards = np.zeros((B, self.num_players), np.float32)  # reset, play_random
        self._pending = np.zeros((B, self.num_players), np.float32)
        """Rewards earned inside ``reset`` (with ``skip_forced``, forced plays can end a round
        there), added to the next step's rewards."""
        self._pending_any = False
        self._terminated = np.zeros(B, np.bool_)
        self._truncated = np.zeros(B, np.bool_)
        self._current = np.zeros(B, np.int32)
        self._mask = np.zeros((B, C.NUM_ACTIONS), np.bool_)
        self._mask_valid = False
        """``_mask`` holds every game's legal actions of the current position: ``step`` tests
        actions against it instead of recomputing them; anything that changes a game clears it."""
        self._all = np.ones(self.num_games, np.bool_)
        self.observation_size = observation_size(self.rules, self.observation_version)
        """Length D of an observation vector under these rules (in ``observation_version``)."""
        self._next_obs = np.zeros((0, self.observation_size), np.float32)  # step_and_observe
        self._batch_shape = (B,)
        self._make_views()
        self.reset(seed=seed)

    _VIEWS = ("_result", "_mask_view", "_state_args", "_step_outputs", "_arrays", "_lock",
              "_release", "_seat_rows")

    def _make_views(self) -> None:
        """The read-only views handed out and the kernels' argument tuples (made again by a
        copy, whose buffers are new)."""
        self._arrays = self.state.arrays
        self._result = StepResult(*(_read_only(a) for a in (
            self._rewards, self._terminated, self._truncated, self._current)))
        self._mask_view = _read_only(self._mask)
        self._state_args = (*self._arrays, self._params)   # the kernels' leading arguments
        self._step_outputs = (self._rewards, False, self._mask, self._next_obs,
                              self._terminated, self._truncated, self._current)
        self._lock = threading.RLock()   # held while the game changes (_changing); its own
        # thread takes it again inside (a step's autoreset), another thread is refused
        self._release = _Release(self._lock)
        self._seat_rows: dict[int, np.ndarray] = {}   # _seat_row's arrays

    def _seat_row(self, seat: int) -> np.ndarray:
        """``(B,) int64``, every entry ``seat``: made once per seat and never written again, so
        that :meth:`observe`, which takes no lock, is safe from two threads at once (before,
        one buffer was filled with the seat at each call, and a second thread's call could
        refill it while the first one's kernel read it: each got the other seat's hand)."""
        row = self._seat_rows.get(seat)
        if row is None:
            row = self._seat_rows[seat] = np.full(self.num_games, seat, np.int64)
        return row

    def _changing(self) -> _Release:
        """Take the game's lock for a call that changes it (``with self._changing():``, whose
        end releases it), or one ``RuntimeError`` where another thread holds it: the compiled
        kernels run without Python's lock, and two threads that stepped one game at once
        corrupted it silently (a deck count past the deck, games that went on and were
        won)."""
        if not self._lock.acquire(False):
            raise RuntimeError("this VecGame is being changed by another thread at this moment; "
                               "allowed: one thread at a time changes a VecGame (give each "
                               "thread its own game, or hold a lock of yours around its calls)")
        return self._release

    @property
    def internals(self) -> GameInternals:
        """The project's own loops' entry into this game (:class:`GameInternals`; not
        public API), made at each call: a loop keeps the one it takes. Not kept by the game,
        whose arrays would then be held in a reference cycle (the entry holds the game's
        bound methods), freed only when Python's cycle collector ran: the arena's batches of
        games piled up (7 GB for a million 10-player games, where each batch takes 97 MiB)."""
        return GameInternals(self)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in self._VIEWS}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if "_pending" not in state:   # pickled before rewards inside a reset were kept
            self._pending = np.zeros_like(self._rewards)
            self._pending_any = False
        self._make_views()

    # ---- episodes -------------------------------------------------------------------
    def reset(
        self,
        seed: int | None = None,
        *,
        seeds: Sequence[int] | np.ndarray | None = None,
        which: np.ndarray | None = None,
    ) -> None:
        """Deal new episodes.

        ``seed`` reseeds every game (game ``i`` from ``game_seeds(seed, B)[i]``), ``seeds``
        gives each game's generator state directly; with neither, games continue from their
        own generators. ``which`` ((B,) bool) limits the reset to some games (a seed then
        applies to those games only)."""
        B = self.num_games
        which = self._all if which is None else self._games_mask(which, "which")
        check_seed("seed", seed)
        if seed is not None and seeds is not None:
            raise ValueError("give seed or seeds, not both")
        states = _seed_states(seeds, B) if seeds is not None else None
        with self._changing():
            if states is not None:
                self.state.rng[which] = states[which]
            elif seed is not None:
                self.state.rng[which] = game_seeds(seed, B)[which]
            elif not hasattr(self, "_seeded"):
                fresh = np.random.SeedSequence().generate_state(B, dtype=np.uint64)
                self.state.rng[which] = fresh[which]
            self._seeded = True
            self._mask_valid = False
            if not self.skip_forced:   # a deal takes no decision: nothing scores inside it
                _K.reset(*self._arrays, self._params, which, self._scratch_rewards)
                return
            # what the deal's forced plays score (a round can end inside the reset, with small
            # hands) is added by the kernel to the games' rows of _pending (it writes no other
            # row), which the next step reports; a game dealt again drops its earlier deal's.
            # Written there directly: clearing a scratch buffer and copying it cost 4 us a call
            if self._pending_any:
                self._pending[which] = 0.0
            _K.reset(*self._arrays, self._params, which, self._pending)
            self._pending_any = bool(self._pending.any())

    # ---- decisions ------------------------------------------------------------------
    def legal_mask(self, which: np.ndarray | None = None) -> np.ndarray:
        """``(B, A) bool``: legal actions of each game's acting player (all False when finished).

        With ``which`` ((B,) bool) only those rows are computed (the others keep stale
        values). The returned array is a read-only view of a buffer that the next call (and
        ``step``) overwrites; copy it to keep it. Until the games change, ``step`` tests
        actions against it rather than computing the legal actions again."""
        if which is None and self._mask_valid:
            return self._mask_view
        which = self._all if which is None else self._games_mask(which, "which")
        lock = self._lock   # the kept mask is written under the lock, as the game is changed
        if not lock.acquire(False):
            self._changing()
        try:
            _K.legal_mask(*self._state_args, which, self._mask)
            self._mask_valid = which is self._all
        finally:
            lock.release()
        return self._mask_view

    def observe(self, seats: np.ndarray | int, which: np.ndarray | None = None,
                out: np.ndarray | None = None, version: int | None = None) -> np.ndarray:
        """``(B, D) float32``: the observation of seat ``seats[i]`` (or one seat for all
        games) in each game; layout in :mod:`ono_env.observation`, version ``version``
        (default: the game's ``observation_version``). With ``which`` only those rows are
        written. Holds only what that seat may know."""
        version = self.observation_version if version is None else check_observation_version(version)
        out = self.check_observation_out(out, version)
        if np.ndim(seats) == 0:
            seats = self._seat_row(check_int("seat", seats, 0, self.num_players - 1))
        else:
            arr = as_array(seats)
            # min and max: two reductions, where a combined comparison builds two arrays
            if (arr.shape != (self.num_games,) or arr.dtype.kind not in "iu"
                    or (arr.size and (arr.min() < 0 or arr.max() >= self.num_players))):
                raise ValueError(f"seats must be an integer array of shape ({self.num_games},) "
                                 f"with seats 0..{self.num_players - 1}; got {arr.dtype} {arr.shape}")
            seats = np.ascontiguousarray(arr, dtype=np.int64)
        _K.observe(*self._arrays, self._version_params[version], seats,
                   self._all if which is None else self._games_mask(which, "which"), out)
        return out

    def check_observation_out(self, out: Any, version: int | None = None) -> np.ndarray:
        """``out`` for :meth:`observe`: a new ``(B, D) float32`` array when None, else ``out``
        once it is a C-contiguous array of that shape and type (``ValueError`` otherwise)."""
        version = self.observation_version if version is None else check_observation_version(version)
        size = self._sizes.get(version)
        if size is None:
            size = self._sizes[version] = observation_size(self.rules, version)
        if out is None:
            return np.zeros((self.num_games, size), np.float32)
        if not isinstance(out, np.ndarray) or out.shape != (self.num_games, size) \
                or out.dtype != np.float32 or not out.flags.c_contiguous \
                or not out.flags.writeable:
            raise ValueError(f"out must be a writable C-contiguous ({self.num_games}, {size}) "
                             f"float32 array; got {_described(out)}")
        return out

    def step(self, actions: np.ndarray | Sequence[int],
             active: np.ndarray | None = None) -> StepResult:
        """Every unfinished game's acting player takes ``actions[i]``; with ``active``
        ((B,) bool) only the games where it is True move, the others ignore their action.

        Raises ``ValueError`` naming the game and its legal actions if any action is
        illegal; then no game has changed. The :class:`StepResult`'s arrays are read-only
        views that the next ``step`` overwrites (copy what you keep)."""
        return self._step(actions, active, True)

    def _step(self, actions, active, check: bool) -> StepResult:
        if (active is None and type(actions) is np.ndarray and actions.dtype == np.int64
                and actions.shape == self._batch_shape and actions.flags.c_contiguous):
            active = self._all            # the common call: no conversion needed
        else:
            actions, active = self._step_args(actions, active)
        lock = self._lock
        if not lock.acquire(False):   # _changing, inlined: this is the hot path
            self._changing()
        try:
            mode = (E.CHECK_MASK if self._mask_valid else E.CHECK_RULES) if check else E.CHECK_NONE
            self._mask_valid = False
            bad = _K.step(*self._state_args, actions, active, mode, *self._step_outputs)
            if self._pending_any and bad < 0:
                self._deliver_pending()
            return self._step_result(bad, actions)   # its autoreset inside the lock
        finally:
            lock.release()

    def _deliver_pending(self) -> None:
        """Add the rewards earned inside the last ``reset`` to this step's (before an
        autoreset deals again), once."""
        self._rewards += self._pending
        self._pending[:] = 0.0
        self._pending_any = False

    def step_and_observe(self, actions: np.ndarray | Sequence[int],
                         active: np.ndarray | None = None,
                         ) -> tuple[StepResult, np.ndarray, np.ndarray]:
        """``step``, then the legal mask ``(B, A) bool`` and the observation ``(B, D)
        float32`` of each game's next acting seat, computed in the same compiled call (what
        a single-game loop needs; the arrays are reused by the next call). Not available
        with ``autoreset`` (the reset would come after the observation)."""
        return self._step_and_observe(actions, True, active)

    def _step_and_observe(self, actions: np.ndarray | Sequence[int], check: bool,
                          active: np.ndarray | None = None,
                          ) -> tuple[StepResult, np.ndarray, np.ndarray]:
        """``step_and_observe``; ``check=False`` skips the legality test, for actions already
        checked against this position's legal mask (as ``GameInternals.step_unchecked``)."""
        if self.autoreset:
            raise ValueError("step_and_observe is not available with autoreset=True")
        actions, active = self._step_args(actions, active)
        if self._next_obs.shape[0] != self.num_games:
            self._next_obs = np.zeros((self.num_games, self.observation_size), np.float32)
        with self._changing():
            mode = (E.CHECK_MASK if self._mask_valid else E.CHECK_RULES) if check else E.CHECK_NONE
            self._mask_valid = False
            bad = _K.step(*self._arrays, self._params, actions, active, mode,
                          self._rewards, True, self._mask, self._next_obs,
                          self._terminated, self._truncated, self._current)
            if self._pending_any and bad < 0:
                self._deliver_pending()
            result = self._step_result(bad, actions)
            self._mask_valid = not self.autoreset
        return result, self._mask_view, self._next_obs

    def _step_observed(self, actions: np.ndarray, check: bool) -> int:
        """The lean step of one-game loops (the PettingZoo env): ``actions`` is a (B,) int64
        C-contiguous array the caller owns; every game steps, then the next acting seats'
        legal masks and observations are written to ``self._mask`` and ``self._next_obs``.
        Returns the first game whose action is illegal (then nothing changed: pass it to
        ``_step_result`` for the error), or a negative number. Rewards are in
        ``self._rewards``, the flags in ``_terminated``/``_truncated``/``_current``; nothing
        is allocated. Single-threaded loops only: unlike ``step`` it takes no lock (a
        microsecond a decision matters here)."""
        if self.autoreset:
            raise ValueError("_step_observed is not available with autoreset=True")
        if self._next_obs.shape[0] != self.num_games:
            self._next_obs = np.zeros((self.num_games, self.observation_size), np.float32)
        mode = (E.CHECK_MASK if self._mask_valid else E.CHECK_RULES) if check else E.CHECK_NONE
        bad = _K.step(*self._arrays, self._params, actions, self._all, mode,
                      self._rewards, True, self._mask, self._next_obs,
                      self._terminated, self._truncated, self._current)
        if bad < 0:
            self._mask_valid = True   # the kernel wrote the new positions' legal masks
            if self._pending_any:
                self._deliver_pending()
        return bad

    def _step_args(self, actions, active) -> tuple[np.ndarray, np.ndarray]:
        actions = as_array(actions)
        if actions.shape != (self.num_games,) or actions.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be an integer array of shape ({self.num_games},); "
                f"got {actions.dtype} {actions.shape}"
            )
        active = self._all if active is None else self._games_mask(active, "active")
        if actions.dtype == np.uint64 and actions.size:   # would wrap to negative ids as int64
            over = active & (actions > np.iinfo(np.int64).max)
            if over.any():
                bad = int(np.flatnonzero(over)[0])
                raise self._illegal(bad, int(actions[bad]))
        return np.ascontiguousarray(actions, dtype=np.int64), active

    def _games_mask(self, x: Any, name: str) -> np.ndarray:
        """A (B,) bool argument as the C-contiguous array the compiled code expects."""
        x = np.asarray(x)
        if x.shape != (self.num_games,) or x.dtype != np.bool_:
            raise ValueError(f"{name} must be a bool array of shape ({self.num_games},); "
                             f"got {x.dtype} {x.shape}")
        return np.ascontiguousarray(x)

    def _step_result(self, bad: int, actions: np.ndarray) -> StepResult:
        """The StepResult of a step whose kernel returned ``bad`` (``ValueError`` for an
        illegal action; with autoreset, the finished games are dealt again)."""
        if bad >= 0:
            raise self._illegal(bad, int(actions[bad]))
        if self.autoreset and bad < -1:     # -1 - (the number of finished games)
            self.reset(which=self._terminated | self._truncated)
        return self._result

    def _illegal(self, bad: int, a: int) -> ValueError:
        """The error for action id ``a`` in game ``bad``: the action and the legal ones (an id
        outside 0 to NUM_ACTIONS - 1 is named as out of range; before: "illegal action
        'id -1'")."""
        what = (f"illegal action {C.ACTION_NAMES[a]!r} ({a})" if 0 <= a < C.NUM_ACTIONS
                else f"action {a} is out of range (action ids are 0 to {C.NUM_ACTIONS - 1})")
        return ValueError(f"{what} in game {bad} for player "
                          f"{int(self.state.current[bad])}; legal actions: "
                          f"{', '.join(self.legal_action_names(bad))}")

    def play_random(self, steps: int, seed: int = 0) -> int:
        """Every game takes ``steps`` uniformly random legal actions inside compiled code
        (finished games are dealt again first); returns the number of decisions taken.

        For benchmarks and fast random rollouts; the action choices come from a generator
        per game seeded from ``seed``, separate from the games' own generators."""
        steps = check_int("steps", steps, 0, 2**63 - 1)   # the compiled loop's int64 count
        seed = check_seed("seed", seed, allow_none=False)
        policy_rng = game_seeds(seed ^ 0x5EED, self.num_games)
        # in pieces of about _RANDOM_PIECE decisions: the compiled loop does not see Ctrl-C,
        # and between pieces Python does (the games are independent and each piece goes on
        # where the last stopped, so the result is the same as one call's)
        piece = max(1, _RANDOM_PIECE // max(1, self.num_games))
        unused_rewards = np.zeros((self.num_games, self.num_players))
        with self._changing():
            self._mask_valid = False
            if steps:   # its finished games are dealt again: no earlier deal's rewards to report
                self._pending[:] = 0.0
                self._pending_any = False
            taken, left = 0, steps
            while left:
                n = min(left, piece)
                taken += int(_K.random_moves(*self._arrays, self._params, n, self._seat_row(0),
                                             policy_rng, unused_rewards, self._scratch_rewards))
                left -= n
            return taken

    def play_random_until(self, seats: np.ndarray, policy_rng: np.ndarray,
                          rewards: np.ndarray) -> int:
        """Uniformly random legal actions in every unfinished game until seat ``seats[i]``
        ((B,) int64; -1: until the game ends) is to act; game i draws from ``policy_rng[i]``
        ((B,) uint64 generator states, advanced in place) and every seat's rewards are added
        to ``rewards`` ((B, P) float64). Returns the decisions taken. (Random opponents,
        all-random arena games.)"""
        B, P = self.num_games, self.num_players
        for name, arr, shape, dtype in (("seats", seats, (B,), np.int64),
                                        ("policy_rng", policy_rng, (B,), np.uint64),
                                        ("rewards", rewards, (B, P), np.float64)):
            if (not isinstance(arr, np.ndarray) or arr.shape != shape or arr.dtype != dtype
                    or not arr.flags.c_contiguous
                    or (name != "seats" and not arr.flags.writeable)):
                kind = "C-contiguous" if name == "seats" else "writable C-contiguous"
                raise ValueError(f"{name} must be a {kind} {shape} {dtype.__name__} array; "
                                 f"got {_described(arr)}")
        if B and (seats.min() < -1 or seats.max() >= P):   # before: 99 played to the end
            bad = seats[(seats < -1) | (seats >= P)][:3].tolist()
            raise ValueError(f"seats holds {bad}; allowed: a seat 0..{P - 1}, or -1 (until the "
                             f"game ends)")
        with self._changing():
            self._mask_valid = False
            return int(_K.random_moves(*self._arrays, self._params, -1, seats, policy_rng,
                                       rewards, self._scratch_rewards))

    def legal_action_names(self, i: int = 0) -> list[str]:
        """Names of game ``i``'s legal actions."""
        i = self._game_index(i)
        which = np.zeros(self.num_games, np.bool_)
        which[i] = True
        rows = np.zeros((self.num_games, C.NUM_ACTIONS), np.bool_)
        _K.legal_mask(*self._arrays, self._params, which, rows)
        return [C.ACTION_NAMES[a] for a in np.flatnonzero(rows[i])]

    # ---- views ----------------------------------------------------------------------
    @property
    def current_player(self) -> np.ndarray:
        """``(B,) int32``: seat of each game's acting player (a copy)."""
        return self.state.current.copy()

    @property
    def terminated(self) -> np.ndarray:
        """``(B,) bool``: the episode ended by the rules."""
        return self.state.terminated != 0

    @property
    def truncated(self) -> np.ndarray:
        """``(B,) bool``: the episode was cut at ``max_decisions``."""
        return self.state.truncated != 0

    @property
    def finished(self) -> np.ndarray:
        """``(B,) bool``: terminated or truncated."""
        return (self.state.terminated | self.state.truncated) != 0

    @property
    def state_bytes_per_game(self) -> int:
        """Bytes of state arrays per game."""
        return self.state.nbytes // self.num_games

    # ---- positions ------------------------------------------------------------------
    def _game_index(self, i: Any) -> int:
        """``i`` when it is the index of a game of this batch (an integer, not a bool)."""
        B = self.num_games
        if not is_int(i) or not 0 <= i < B:
            raise ValueError(f"game index {shown(i, 40)} ({type(i).__name__}); allowed: an integer "
                             f"from 0 to {B - 1}")
        return int(i)

    def to_dict(self, i: int = 0) -> dict[str, Any]:
        """Game ``i`` as a JSON-serialisable position dict (schema in docs/positions.md)."""
        return positions.position_dict(self.state, self._game_index(i), self.rules)

    def to_json(self, i: int = 0) -> str:
        """``to_dict(i)`` as JSON text."""
        return json.dumps(self.to_dict(i))

    def set_position(self, i: int, d: Mapping[str, Any]) -> None:
        """Overwrite game ``i`` with the position ``d`` (a ``to_dict`` dict under these rules).

        The whole position is checked first (every key's type and range, then the
        invariants of a reachable position, docs/positions.md); a refusal raises one
        ``ValueError`` naming the key(s) and what is allowed, and changes nothing. The position
        is kept as given: with ``skip_forced`` a decision of one legal action there is still
        asked (forced decisions are taken inside ``step`` and ``reset``)."""
        i = self._game_index(i)
        checked = positions.read_position(d, self.rules)
        if not (checked["terminated"] or checked["truncated"]) \
                and checked["decisions"] >= self.max_decisions:
            raise ValueError(f"position: decisions={checked['decisions']} in a game not finished; "
                             f"allowed: below this game's max_decisions={self.max_decisions} "
                             f"(a game is cut when its decisions reach it)")
        with self._changing():
            self._mask_valid = False
            positions.write_position(self.state, i, checked)
            self._pending[i] = 0.0   # nothing of an earlier deal's is reported for this position
            self._pending_any = bool(self._pending.any())

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], **kwargs: Any) -> VecGame:
        """A one-game ``VecGame`` at position ``d`` (under the position's ``rules``);
        ``kwargs``: the constructor's keyword-only arguments (``autoreset``,
        ``max_decisions``, ...), not ``rules``, ``num_games``, ``seed`` or rule options, even
        one equal to the position's (the position sets them: one game, its rules and
        generator in the position). Refusals
        as for ``set_position``."""
        fixed = sorted(set(kwargs) & {"rules", "num_games", "seed"})
        if fixed:
            raise ValueError(f"from_dict sets {', '.join(fixed)} itself (one game, the "
                             f"position's rules and generator); allowed keyword arguments: "
                             f"those of VecGame but rules, num_games and seed")
        options = [k for k, p in inspect.signature(cls.__init__).parameters.items()
                   if p.kind is inspect.Parameter.KEYWORD_ONLY]
        other = sorted(set(kwargs) - set(options))
        if other:   # before: a rule option, refused as the position's rules differing from it
            raise ValueError(f"from_dict: {', '.join(other)} (rule options, or unknown): the "
                             f"position's rules are the game's; allowed keyword arguments: "
                             f"{', '.join(options)}")
        rules = positions.read_rules(positions.check_keys(d)["rules"])
        game = cls(rules, 1, seed=0, **kwargs)
        game.set_position(0, d)
        return game

    @classmethod
    def from_json(cls, text: str, **kwargs: Any) -> VecGame:
        """``from_dict`` of JSON text; malformed JSON, or text longer than
        :data:`~ono_env.positions.MAX_POSITION_TEXT`, raises ``ValueError``."""
        return cls.from_dict(positions.load_json(text, most=positions.MAX_POSITION_TEXT),
                             **kwargs)


class GameInternals:
    """The one entry the project's own loops take into a :class:`VecGame` (the agent driver,
    the search agents, the PettingZoo and Gymnasium envs): the kernels' arguments and the
    unchecked steps, named here instead of read from the game's private attributes. Not part
    of the public API: a caller must keep the contracts each member states.

    Get it as ``game.internals`` (made at each call; a loop keeps the one it takes). Its
    members:

    - ``params``: the rules' parameter array (``RuleSet.params()``), the kernels' rules
      argument;
    - ``version_params``: ``{version: params}``, the same parameters for observing in each
      observation layout (what ``observe(version=...)`` passes the kernels);
    - ``state_args``: the kernels' leading arguments, every state array, then ``params``;
    - ``scratch_rewards``: a (B, P) float32 buffer a kernel may write rewards to;
    - ``mask``, ``rewards``: the game's own (B, A) legal-mask and (B, P) step-reward
      buffers, which ``step_observed`` writes; ``next_obs`` (B, D) likewise;
    - ``step_observed(actions, check) -> int``: the lean step of one-game loops:
      ``actions`` a (B,) int64 C-contiguous array the caller owns; every game steps, then
      the next acting seats' legal masks and observations are written to ``mask`` and
      ``next_obs``. Returns the first game whose action is illegal (then nothing changed:
      pass it to ``raise_illegal``), or a negative number. Nothing is allocated;
    - ``changing``, ``step_unchecked``, ``raise_illegal``, ``mask_changed``: below.

    The members that are the game's own objects are plain attributes (no call between the
    loop and the game: the PettingZoo env steps through them at every decision).
    """

    __slots__ = ("_game", "mask", "params", "rewards", "scratch_rewards", "state_args",
                 "step_observed", "version_params")

    def __init__(self, game: VecGame) -> None:
        self._game = game
        self.params: np.ndarray = game._params
        self.version_params: dict[int, np.ndarray] = game._version_params
        self.state_args: tuple[np.ndarray, ...] = game._state_args
        self.scratch_rewards: np.ndarray = game._scratch_rewards
        self.mask: np.ndarray = game._mask
        self.rewards: np.ndarray = game._rewards
        self.step_observed = game._step_observed

    @property
    def next_obs(self) -> np.ndarray:
        """The (B, D) observation buffer ``step_observed`` writes (made on its first call)."""
        return self._game._next_obs

    def changing(self) -> Any:
        """The game's lock for a loop that moves it in compiled code (``with
        internals.changing():``), as the game's own changing calls take it: while it is held,
        another thread's change is one ``RuntimeError``; the thread that holds it takes it
        again in the game's own calls inside the loop."""
        return self._game._changing()

    def step_unchecked(self, actions: np.ndarray, active: np.ndarray | None = None,
                       ) -> StepResult:
        """``step`` without the legality test, for actions already checked against this
        position's ``legal_mask()`` (an illegal action would corrupt the game; action ids
        are still range-checked in compiled code, so nothing is written outside the
        arrays)."""
        return self._game._step(actions, active, False)

    def raise_illegal(self, bad: int, actions: np.ndarray) -> None:
        """``ValueError`` naming game ``bad``'s illegal action and its legal actions."""
        self._game._step_result(bad, actions)

    def mask_changed(self) -> None:
        """Say that compiled code outside the game moved it (its cached legal masks are
        stale)."""
        self._game._mask_valid = False


def _described(a: Any, layout: bool = True) -> str:
    """An array's kind for an error message (dtype, shape, and with ``layout`` whether
    C-contiguous and writable: said where the caller needs them, not where it copies)."""
    if isinstance(a, np.ndarray):
        return (f"{a.dtype} {a.shape}" if not layout else
                f"{a.dtype} {a.shape}" + ("" if a.flags.c_contiguous else " (not C-contiguous)")
                + ("" if a.flags.writeable else " (read-only)"))
    return type(a).__name__


def _read_only(a: np.ndarray) -> np.ndarray:
    """A view of ``a`` that its reader cannot write (the game still writes ``a``)."""
    v = a.view()
    v.flags.writeable = False
    return v


def _seed_states(seeds: Any, B: int) -> np.ndarray:
    """``reset(seeds=...)``: B generator states, integers from 0 to 2**64 - 1, as uint64."""
    allowed = (f"{B} integer{'s' * (B != 1)} from 0 to 2**64 - 1 (generator states, e.g. "
               f"game_seeds(seed, {B}))")
    if isinstance(seeds, np.ndarray):
        if seeds.dtype.kind not in "iu" or seeds.shape != (B,):
            raise ValueError(f"seeds is a {seeds.dtype} array of shape {seeds.shape}; "
                             f"allowed: {allowed}")
        if seeds.dtype.kind == "i" and (seeds < 0).any():
            k = int(np.flatnonzero(seeds < 0)[0])
            raise ValueError(f"seeds[{k}]={int(seeds[k])}; allowed: {allowed}")
        return seeds.astype(np.uint64)
    if not isinstance(seeds, (list, tuple)) or len(seeds) != B:
        raise ValueError(f"seeds={shown(seeds, 80)} ({type(seeds).__name__}); allowed: {allowed}")
    for k, v in enumerate(seeds):
        if not is_int(v) or not 0 <= v < 2**64:
            raise ValueError(f"seeds[{k}]={shown(v, 40)} ({type(v).__name__}); allowed: {allowed}")
    return np.array([int(v) for v in seeds], dtype=np.uint64)


def first_legal(mask: np.ndarray) -> np.ndarray:
    """``(B,) int64``: the lowest legal action of each row (0 where none), for examples/tests."""
    return np.argmax(mask, axis=1).astype(np.int64)


def random_legal(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(B,) int64``: a uniformly random legal action per row (0 where none is legal), one
    uniform draw of ``rng`` per row. ``mask``: a ``(B, 85)`` array of bools or of integers
    0/1 (as the environments give); ``rng``: a NumPy ``Generator``."""
    check_rng("rng", rng)
    if (not isinstance(mask, np.ndarray) or mask.ndim != 2 or mask.shape[1] != C.NUM_ACTIONS
            or mask.dtype.kind not in "biu"):
        # its kind and shape (not its layout or writability, which a copy below takes as any)
        raise ValueError(f"mask is {_described(mask, layout=False)}; allowed: a "
                         f"(B, {C.NUM_ACTIONS}) array of bools or integers 0/1")
    if mask.dtype.kind != "b" and mask.size and (mask.min() < 0 or mask.max() > 1):
        raise ValueError(f"mask holds values other than 0 and 1 (from {mask.min()} to "
                         f"{mask.max()}); allowed: bools or integers 0/1")
    mask = np.ascontiguousarray(mask, dtype=np.bool_)
    out = np.empty(mask.shape[0], np.int64)
    _K.nth_legal(mask, rng.random(mask.shape[0]), out)
    return out
