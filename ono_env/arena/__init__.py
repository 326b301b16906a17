"""The arena: many games between any agents under any rules, with honest statistics.

.. code-block:: python

    from ono_env.arena import run_arena
    result = run_arena(["greedy", "random"], rules="basic", num_players=2, num_games=10_000, seed=0)
    print(result.format_table())
    result.save("results/")            # arena.json, arena.csv

How games are played
    The entrants (agent names, model files or agent objects; a name may repeat, and
    each entry is a separate entrant) are seated at tables of ``num_players``: every
    combination of ``num_players`` entrants when there are more entrants than seats. Each
    table is played in every seating order: all permutations of the seats for up to four
    players, so that no entrant keeps the first move or its neighbours, and the cyclic
    rotations above that, which move every entrant through every seat (and the first move)
    but keep the order around the table: that order is drawn for each deal (the same in
    every seating of the deal, from ``(seed, table)``), so that no entrant keeps its
    neighbours and no share depends on the order the entrants are given in (before: the
    order given, in every game; :func:`~ono_env.arena.play.arranges`). A table of copies of
    one agent keeps its order, every order being the same; a mirrored run's arena.json
    says how it seated its tables (``seating``, :data:`~ono_env.arena.play.SEATINGS_VERSION`),
    and a run seated otherwise past four players is not paired with it. The games of
    a table are split evenly over its seatings. Games run on the
    batched core, ``batch_size`` at a time; game ``k`` of a seating is dealt from a seed
    derived from ``(seed, table, seating, batch)`` and the agents of that batch draw from one
    generator derived the same way, so a run is reproducible from ``seed``.

What is counted
    A game is one episode of the rules: a round, or a whole match when the rules play to a
    target score. Its winner (or winners, sharing one win, in a penalty-scored match) is
    the seat with a positive final reward; a game cut at ``max_decisions`` has no winner.
    Per entrant: games, wins, win rate with a 95% Wilson interval, mean final score (when the
    rules keep scores) and mean game length in decisions. Head to head: for each pair, the
    first entrant's win rate in the games where both sat (for two players, simply its win
    rate against the other). Ratings (:func:`~ono_env.arena.stats.rate_games`): the Luce
    model of the winner (``ono-bench``'s) fitted to all the games at once by maximum
    likelihood, so the order of the games makes no difference; on the Elo scale (400 points
    apart: odds of 10 to 1 between two players), the entrants' mean at 0, each with a 95% interval
    (``rating``, ``rating_low``, ``rating_high`` in :meth:`ArenaResult.agent_rows`,
    arena.json and arena.csv; an arena.json written before 2026-12-06 holds OpenSkill's
    ``rating_mu``, ``rating_sigma`` and ``rating_ordinal`` instead, and is read as before).

Comparing two agents
    With ``mirrored=True`` (the duplicate format, :func:`run_arena`) the deals depend only on
    the rules, seed, number of games, batch size and number of entrants, not on the agents.
    Two such runs that differ only in one entrant are compared deal by deal by
    :func:`~ono_env.arena.results.paired_difference` (``ono-arena --paired-with``); a saved
    run's ``arena.json`` keeps each entrant's per-deal results (``per_deal``) and the batch
    size for this (:func:`~ono_env.arena.results.mirrored_record` reads them back;
    :func:`~ono_env.arena.stats.bounded_mean_interval` gives the arena's interval over deals
    of a share or a difference, :func:`~ono_env.arena.stats.mean_interval` the plain normal
    one, also of runs with different seeds pooled, ``benchmarks/pool_mirrored.py``).

Where it lives
    This package's face (``from ono_env.arena import run_arena``) holds the runs:
    :func:`run_arena`, :func:`evaluate` and their checks. Beneath it:
    ``ono_env.arena.play`` (the games of one seating, and their seeds),
    ``ono_env.arena.stats`` (intervals and ratings), ``ono_env.arena.results``
    (:class:`~ono_env.arena.results.ArenaResult`, saved runs and paired comparisons) and
    ``ono_env.arena.distributed`` (the same games as Ray tasks). The benchmark suite
    (``ono-bench``: fixed tables, deals and reference agents on a published scale) is
    ``ono_env.arena.suite``.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from ono_env import game as _game
from ono_env.agents.base import (
    Agent,
    CHEATING_MARK,
    agent_label,
    checked_actions,
    is_cheating,
    marked,
    observation_version,
    plays_from_game,
)
from ono_env.agents.learned import model_label, played_models
from ono_env.agents.registry import is_builtin_name, is_model_path, make_agent
from ono_env.arena.distributed import (
    RAY_CONNECT_SECONDS,
    TASKS_PER_CPU,
    check_ray_address,
    play_on_ray,
)
from ono_env.arena.play import (
    GameRecords,
    _derive,
    _seating_seed,
    arrangements,
    arranges,
    end_workers,
    games_bar,
    play_games,
    seated_entrants,
    seating_plan,
    seatings,
)
from ono_env.arena.results import (
    ArenaResult,
    MAX_ARENA_JSON_BYTES,
    MAX_ARENA_LABEL,
    check_pairable,
    mirrored_record,
    paired_difference,
    read_arena_json,
)
from ono_env.arena.stats import (
    Z95,
    bounded_mean_interval,
    mean_interval,
    rate_games,
    wilson_interval,
)
from ono_env.checks import check_bool, check_int, check_seed, printable, shown
from ono_env.game import MAX_DECISIONS, MEMORY_CHECK_FROM, VecGame, check_game_memory
from ono_env.game import MAX_GAMES as MAX_BATCH
from ono_env.observation import check_observation_version
from ono_env.positions import need_keys
from ono_env.render import plural
from ono_env.replay import Replay
from ono_env.rules import MAX_PLAYERS, MIN_PLAYERS, RuleSet, resolve_rules

MAX_GAMES = 100_000_000
"""The most games one arena run plays (about an hour of random play per core)."""
MAX_RECORD = 10_000
"""The most games one arena run keeps replays of."""


def _labels(specs: Sequence[Any]) -> list[str]:
    """The entrants' labels (:func:`run_arena`): a name's, a model file's
    (:func:`~ono_env.agents.learned.model_label`) or an object's (:func:`_object_label`).
    Model files of one label that are not one file (``d1/m.safetensors`` and
    ``d2/m.safetensors``) are labelled by their folder and file name, as a training run's
    ``r1/model.safetensors`` is (:func:`_files_apart`; before: ``m#1`` and ``m#2``, as if one
    agent were given twice), and objects of different classes that share a name by their
    class (``labs:DupA``); the labels still shared, a name or a file given twice, are
    numbered ``#1``, ``#2``, ..."""
    paths: list[str | None] = []
    base: list[str] = []
    for s in specs:
        spec = s if isinstance(s, str) else os.fspath(s) if isinstance(s, os.PathLike) else None
        if spec is not None and is_model_path(spec):
            paths.append(spec)
            label = model_label(spec)
            if _reserved(label):   # a run labelled random#1: its folder and file name
                label = _path_tail(spec, 2)
            base.append(label)
        else:
            paths.append(None)
            base.append(_object_label(s) if spec is None else spec)
    base = _files_apart(base, paths)
    # objects of different classes under one name: each by its class, as a spec names it
    # (before: dup#1 and dup#2, the arena's mark of one agent given twice, and with one of
    # them cheating "dup#1 (cheating)" beside "dup#2")
    # (kept numbered where the classes' labels would be alike, or another entrant's)
    for shared in sorted({b for b in base if base.count(b) > 1}):
        objects = [i for i, b in enumerate(base) if b == shared and paths[i] is None
                   and not isinstance(specs[i], str)]
        classes = {type(specs[i]) for i in objects}
        by_class = {cls: _class_label(cls) for cls in classes}
        others = {b for i, b in enumerate(base) if i not in objects}
        if len(classes) > 1 and len(set(by_class.values())) == len(classes) \
                and not set(by_class.values()) & others:
            for i in objects:
                base[i] = by_class[type(specs[i])]
    # what a paired comparison reads back (results.mirrored_record): 1 to MAX_ARENA_LABEL
    # printable characters (an agent named "" was written, then refused there)
    base = [b[:MAX_ARENA_LABEL] or "?" for b in base]
    used = {b for b in base if base.count(b) == 1}
    labels: list[str] = []
    seen: dict[str, int] = {}
    for b in base:
        if base.count(b) == 1:
            labels.append(b)
            continue
        k = seen.get(b, 0) + 1
        while f"{b}#{k}" in used:   # "m#1" given beside two "m": those are m#2 and m#3
            k += 1
        seen[b] = k
        used.add(f"{b}#{k}")
        labels.append(f"{b}#{k}")
    return labels


def _reserved(label: str) -> bool:
    """Does ``label`` read as the arena's own marks: a copy's number (``random#1``) or the
    cheating mark (``... (cheating)``)? Such a label is an agent's only where the arena
    gives it."""
    return re.search(r"#[0-9]+$", label) is not None or label.endswith(CHEATING_MARK)


def _path_tail(path: str, parts: int) -> str:
    """The last ``parts`` names of ``path`` made absolute (``d1/m.safetensors`` for 2), shown
    as :func:`~ono_env.agents.learned.model_label` shows a run's folder and file name."""
    names = [n.strip() for n in Path(os.path.abspath(path)).parts[1:]]
    return printable("/".join(names[-parts:]))


def _same_file(a: str, b: str) -> bool:
    """Do the paths ``a`` and ``b`` name one file (a link or another spelling of it too)?"""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):   # not there (yet): by the path alone
        return os.path.abspath(a) == os.path.abspath(b)


def _files_apart(base: list[str], paths: list[str | None]) -> list[str]:
    """``base`` with the model files (``paths``, None for other entrants) whose label is
    another entrant's and which are not that entrant's file labelled by their folder and
    file name, or by as many of the folders above as tell the files apart
    (``a/x/m.safetensors``, ``b/x/m.safetensors``). Every spelling of one file takes the
    label of its first; a file given twice keeps one label (numbered by :func:`_labels`)."""
    out = list(base)
    for label in {b for b in base if base.count(b) > 1}:
        here = [k for k, b in enumerate(base) if b == label]
        files = [k for k in here if paths[k] is not None]
        if not files:   # a name given twice: numbered
            continue
        first: list[int] = []       # one entrant per distinct file, the first given
        of: dict[int, int] = {}     # entrant -> the first entrant of its file
        for k in files:
            same = next((f for f in first if _same_file(cast(str, paths[f]),
                                                         cast(str, paths[k]))), None)
            if same is None:
                first.append(k)
            of[k] = k if same is None else same
        if len(first) < 2 and len(files) == len(here):   # one file, given again: copies
            continue
        most = max(len(Path(os.path.abspath(cast(str, paths[f]))).parts) - 1 for f in first)
        depth = 2
        while depth < most and len({_path_tail(cast(str, paths[f]), depth)
                                    for f in first}) < len(first):
            depth += 1
        for k in files:
            out[k] = _path_tail(cast(str, paths[of[k]]), depth)
    return out


def _object_label(agent: Any) -> str:
    """An agent object's label: its name, but for an object of another package whose name is
    a built-in agent's (a class of one's own named ``greedy``) or reads as one of the arena's
    marks (``random#1``, the number of a name given twice; ``sneaky (cheating)``, the mark
    of a cheating agent: :func:`_reserved`), the class as a spec names it
    (``mine:Greedyish``), so that it is never taken for that agent or mark (before: greedy#1
    and greedy#2, as a model file named so was before
    :func:`~ono_env.agents.learned.model_label`; a fair class named ``sneaky (cheating)``
    was shown as cheating)."""
    label = agent_label(agent)
    cls = type(agent)
    if (is_builtin_name(label) or _reserved(label)) \
            and cls.__module__.partition(".")[0] != "ono_env":
        return _class_label(cls)
    return label


def _class_label(cls: type) -> str:
    """A class as a spec names it (``mine:Greedyish``), printable: the label of an object
    that its name would not tell apart."""
    return printable(f"{cls.__module__}:{cls.__qualname__}")


def check_seats_filled(n_agents: int, num_players: int, option: str | None = None) -> None:
    """One ``ValueError`` where ``n_agents`` entrants cannot fill ``num_players`` seats;
    ``option``: the option that sets the player count, named as the other way out where the
    rules' own count was taken (``ono-arena greedy random`` under 4-player rules)."""
    if n_agents < num_players:
        other = (f", or {option} {n_agents} for a table of {n_agents}"
                 if option is not None and n_agents >= MIN_PLAYERS else "")
        raise ValueError(f"{plural(n_agents, 'agent')} for {num_players} players: give at least "
                         f"{num_players} (repeat a name to seat it more than once){other}")


def _run_args(rules: Any, num_players: int | None, agents: Any, num_games: Any, seed: Any,
              batch_size: Any, max_decisions: Any) -> tuple[RuleSet, list[Any], int, int, int]:
    """The arguments of a run, checked (:func:`run_arena` and :func:`check_paired_plan` take
    the same): ``(rules, agents, num_games, seed, batch_size)``. A ``max_decisions`` is
    checked here too: the Ray tasks would each fail with it."""
    overrides = {} if num_players is None else {"num_players": num_players}
    rules = resolve_rules(rules, **overrides)
    agents = _agent_list("agents", agents)
    check_seats_filled(len(agents), rules.num_players)
    num_games = check_int("num_games", num_games, 1, MAX_GAMES)
    seed = check_seed("seed", seed, allow_none=False)
    batch_size = check_int("batch_size", batch_size, 1, MAX_BATCH)
    if max_decisions is not None:
        check_int("max_decisions", max_decisions, 1, MAX_DECISIONS)
    return rules, agents, num_games, seed, batch_size


def run_arena(agents: Sequence[Any], rules: Any = "classic", num_players: int | None = None,
              num_games: int = 10_000, seed: int = 0, *, batch_size: int = 4096,
              max_decisions: int | None = None, rating: bool | None = True,
              progress: bool = False, record: int = 0,
              ray_address: str | None = None, mirrored: bool = False) -> ArenaResult:
    """Play ``num_games`` games among ``agents`` and return their statistics.

    ``num_games``: the games in all; ``batch_size``: the games stepped together (ono-arena's
    ``--batch``; the environments call it ``num_envs``, :class:`~ono_env.game.VecGame`
    ``num_games``; not a trainer's ``ppo.batch_size``, its minibatch).

    ``agents``: a list or tuple of names (``random``, ``greedy``, ``color``, ``defensive``,
    ...), model files or agent objects; at least ``num_players`` of them (repeat a name to seat it
    more than once). ``rules``: a preset name, YAML path, RuleSet or dict; ``num_players``
    overrides its player count. ``num_games`` is split evenly over the tables and their
    seatings (rounded up so every seating plays the same number). ``rating``: compute the
    ratings (:func:`~ono_env.arena.stats.rate_games`, NumPy only): ``True`` (default; ``None``,
    which meant "when the openskill library is installed", is taken as ``True``) or
    ``False``. ``record``: keep a replay of that many
    games (all of them where the run plays fewer; a sample drawn with a generator seeded
    from ``seed``, in ``result.replays`` in the order played); recording changes no result.
    ``ray_address``: play the games as Ray
    tasks (``"local"`` starts a local Ray; ``"auto"``, ``"host:port"`` or ``"ray://..."``
    joins a cluster; an initialised Ray is used as it is): the same games and results as in
    one process, ``result.nodes`` says how many games each node played
    (:func:`~ono_env.arena.distributed.play_on_ray`). It needs the ``[ray]`` extra. Ray
    started or joined here leaves this process's signal handlers as they were (``ray.init``
    would set its own: a default SIGTERM then still ends the process at once).

    ``mirrored``: the duplicate format. Every deal of a table is played once per seating
    (2 players: twice, seats swapped; the deal and the agents' generator are seeded per
    table and game, not per seating), so each entrant holds every seat's cards once and the
    luck of the deal cancels. Win rates are then the mean over deals of an entrant's share
    of the wins in that deal's games (a game without a winner is a tie, 1/N to every seat),
    with a 95% interval over deals (:meth:`~ono_env.arena.results.ArenaResult.paired`); with ``ray_address``
    the same deals are played as Ray tasks."""
    rules, agents, num_games, seed, batch_size = _run_args(
        rules, num_players, agents, num_games, seed, batch_size, max_decisions)
    P = rules.num_players
    if rating is None:   # before: "when openskill is installed"; the fit needs only NumPy
        rating = True
    check_bool("rating", rating)
    check_bool("progress", progress)
    if ray_address is not None:
        check_ray_address(ray_address)
    record = check_int("record", record, 0, MAX_RECORD)
    built = [make_agent(a, rules) for a in agents]
    labels = [marked(lab, is_cheating(b))
              for lab, b in zip(_labels(agents), built)]   # the search ceilings see hidden cards
    check_bool("mirrored", mirrored)
    # the models as the agents read them; for the pairings of a mirrored run
    models = _model_files(built, labels) if mirrored else {}
    check_plan(games_played(num_games, len(agents), P), num_games, len(agents), P)
    check_records_memory(games_played(num_games, len(agents), P), P, num_games,
                         num_entrants=len(agents))
    tables = list(itertools.combinations(range(len(agents)), P))
    orders = seatings(P)
    total = games_played(num_games, len(agents), P)
    per = total // (len(tables) * len(orders))
    keys = [a if isinstance(a, str) else os.fspath(a) if isinstance(a, os.PathLike) else id(a)
            for a in agents]   # one name, file or object given twice
    arranged = [arrangements(seed, t, per, P) if arranges([keys[e] for e in table]) else None
                for t, table in enumerate(tables)]
    if ray_address in (None, "local"):   # a cluster's nodes hold their own batches
        check_batch_memory(rules, len(agents), num_games, batch_size,
                           observation_version=max(observation_version(b) for b in built))
    sample = np.sort(np.random.default_rng([seed, 7]).choice(total, min(record, total), replace=False))
    replays: list[Replay] = []
    bar = None
    if progress:
        bar = games_bar(per * len(tables) * len(orders), "arena")
    t0 = time.perf_counter()
    ent: list[np.ndarray]
    win: list[np.ndarray]
    sc: list[np.ndarray]
    ln: list[np.ndarray]
    tr: list[np.ndarray]
    ent, win, sc, ln, tr = [], [], [], [], []
    nodes: dict[str, int] = {}
    try:
        if ray_address is not None:   # the same games, as Ray tasks (see play_on_ray)
            if record:
                raise ValueError("record is not available with ray_address (replays are kept "
                                 "by a one-process run)")
            for part in play_on_ray(ray_address, rules, built, tables, orders, per, seed,
                                    batch_size, max_decisions, bar, nodes, mirrored=mirrored,
                                    arranged=arranged):
                for out, x in zip((ent, win, sc, ln, tr), part):
                    out.append(x)
        plan = seating_plan(tables, orders, arranged) if ray_address is None else []
        for j, (t, o, seated, seat_members) in enumerate(plan):
            first = j * per
            here = sample[(sample >= first) & (sample < first + per)] - first
            w, s, length, trunc = play_games(
                rules, [built[e] for e in seated], per,
                _seating_seed(seed, t, o, mirrored),
                batch_size=batch_size, max_decisions=max_decisions, progress=bar,
                record=[int(k) for k in here], replays=replays,
                labels=[labels[e] for e in seated], seat_members=seat_members)
            ent.append(seated_entrants(seated, seat_members, len(w)))
            win.append(w)
            sc.append(s)
            ln.append(length)
            tr.append(trunc)
    finally:
        if bar is not None:
            bar.close()
    records = GameRecords(np.concatenate(ent), np.concatenate(win), np.concatenate(sc),
                          np.concatenate(ln), np.concatenate(tr))
    if mirrored:   # the games come per (table, seating), per games each; deal k of table t
        n_seat = len(orders) * per
        records.deal = (np.repeat(np.arange(len(tables)), n_seat) * per
                        + np.tile(np.arange(per), len(tables) * len(orders)))
    seconds = time.perf_counter() - t0
    result = ArenaResult(rules, labels, records, seed, seconds, mirrored=mirrored, replays=replays,
                         replay_rows=sample.tolist(), nodes=nodes, batch_size=batch_size,
                         max_decisions=max_decisions, models=models)
    if rating:
        t1 = time.perf_counter()
        result.ratings = rate_games(records, len(agents))
        result.rating_seconds = time.perf_counter() - t1
    return result


def _model_files(built: Sequence[Any], labels: Sequence[str]) -> dict[str, str]:
    """Label -> the SHA-256 of the model each entrant plays from
    (:func:`~ono_env.agents.learned.played_models`: a model file's or a shipped policy's, a
    search agent's guide): a paired comparison checks that the other entrants play the same
    models, not only under the same labels (a model's label is its file's name)."""
    return {label: d for agent, label in zip(built, labels)
            if (d := played_models(agent)) is not None}


MAX_ROUNDING = 10
"""How many times the games asked for a run may round up to (every seating of every table)."""


def check_plan(planned: int, num_games: int, num_entrants: int, num_players: int) -> None:
    """``ValueError`` when rounding ``num_games`` up to every seating of every table
    (:func:`games_played`) plans more than :data:`MAX_ROUNDING` times as many games (and more
    than 10,000), or more than :data:`MAX_GAMES`: 20 entrants at 10 players make 1,847,560
    games of ``--games 1``."""
    if planned > MAX_GAMES or (planned > MAX_ROUNDING * num_games and planned > 10_000):
        tables = math.comb(num_entrants, num_players)
        unit = tables * len(seatings(num_players))   # the fewest games a plan can hold
        if unit > MAX_GAMES:
            advice = (f"every seating of every table alone is over {MAX_GAMES:,} games: seat "
                      f"fewer entrants, or play fewer players a table")
        elif planned > MAX_GAMES:   # past the cap: the largest whole plan under it (before:
            # "ask for at least" a number already passed), and within the memory free where a
            # round fits there (before: the count advised was then refused for memory)
            most = MAX_GAMES // unit * unit
            free = _game.available_memory()
            fits = 0 if free is None else games_held(free, num_players, unit)
            held = ", the most this machine's free memory holds" if 0 < fits < most else ""
            advice = (f"ask for at most {min(most, fits or most):,} games ({MAX_GAMES:,} in "
                      f"all at most{held}), or seat fewer entrants")
        else:
            advice = (f"ask for at least {planned // MAX_ROUNDING:,} games (at most "
                      f"{MAX_GAMES:,} in all), or seat fewer entrants")
        raise ValueError(f"{num_games:,} game{'s' * (num_games != 1)} would be {planned:,}: "
                         f"{tables:,} tables of "
                         f"{num_players} of the {num_entrants} entrants, each in "
                         f"{len(seatings(num_players))} seatings; {advice}")


def record_bytes(num_players: int) -> int:
    """The bytes a run needs for each game it plays: four times its record
    (:class:`GameRecords`: the entrants, win shares and scores of every seat, the length,
    the cut flag and the deal). The batches' parts are held while they are joined (twice the
    record), and after the games the ratings and the tables' working arrays come on top:
    measured, a run's peak was 2.5 to 3.3 times the records at 2 and 10 players (2,000,000
    and 200,000 games, mirrored or not, 2 to 20 entrants, ratings, arena.json and the table).
    Before, twice the record was counted, and a run sized to that played every game and
    then failed with a MemoryError in the ratings or the table."""
    return 4 * (24 * num_players + 8 + 1 + 8)


def games_held(free: int, num_players: int, unit: int = 1) -> int:
    """The most games whose records (:func:`record_bytes`) ``free`` bytes hold, in whole
    rounds of ``unit`` games."""
    return free // record_bytes(num_players) // unit * unit


def check_records_memory(games: int, num_players: int, num_games: int,
                         name: str = "num_games", several: str = "in several runs",
                         num_entrants: int | None = None) -> None:
    """``ValueError`` naming ``name`` (``num_games``, or a console script's ``--games``) when
    what a run needs for the ``games`` it plays for it (:func:`record_bytes` each: their
    records, and the ratings and tables made from them) would not fit in the memory free
    now, before any game (before: 100,000,000 games at 10 players, about 24 GiB of records,
    played for hours and then failed). ``several``: how the refusal ends its advice (a
    training evaluation cannot be split into several runs). ``num_entrants``: the plan's
    entrants; the most games the advice names is then a whole number of the plan's rounds
    (:func:`games_played` of one game: every seating of every table), so that asking for it
    plays exactly that many (before: a count that the plan rounded up, past the memory
    again), and a plan of which not one round fits is refused as such; None: no rounds."""
    need = games * record_bytes(num_players)
    if need < MEMORY_CHECK_FROM:
        return
    free = _game.available_memory()   # (read through the module: tests set it there)
    if free is not None and need > free:
        unit = 1 if num_entrants is None else games_played(1, num_entrants, num_players)
        most = games_held(free, num_players, unit)
        asked = f"{name} {num_games:,}" if name.startswith("--") else f"{name}={num_games:,}"
        if most == 0:   # not one round fits (before: "at most 0 games played here")
            raise ValueError(f"{asked}: one round of the plan, every seating of every table, "
                             f"is {unit:,} games, which need "
                             f"{unit * record_bytes(num_players) / 2**30:,.1f} GiB (their "
                             f"records, and room for the ratings and tables made from them), "
                             f"and this machine has {free / 2**30:,.1f} GiB of memory free; "
                             f"allowed: fewer entrants (fewer tables to seat)")
        raise ValueError(f"{asked}: the {games:,} games played need {need / 2**30:,.1f} "
                         f"GiB (their records, and room for the ratings and tables made from "
                         f"them), and this machine has {free / 2**30:,.1f} GiB of memory free; "
                         f"allowed: fewer games (at most {most:,} played here), {several}")


WORKER_BYTES = 160 << 20
"""What one worker process takes at the least (160 MiB: Python, NumPy, the compiled engine
and the agents), for ``ono-bench --workers`` and :func:`evaluate`'s ``workers``. Measured,
a worker playing ``ppo-any`` against the suite's reference field held 122 MB of its own
memory (221 MB resident, the libraries' pages shared with the others)."""


def workers_that_fit() -> int | None:
    """How many worker processes of :data:`WORKER_BYTES` fit in the memory free now (at
    least 1; None where it cannot be read)."""
    free = _game.available_memory()   # (read through the module: tests set it there)
    return None if free is None else max(1, free // WORKER_BYTES)


def check_workers_memory(workers: int, jobs: int, name: str = "workers", records: int = 0,
                         advice: str = "") -> None:
    """``ValueError`` naming ``name`` (``workers``, a console script's ``--workers`` or a
    config field) when the processes that play ``jobs`` jobs at once (at most ``workers``,
    :data:`WORKER_BYTES` each, and ``records`` bytes of games' records each) would not fit in
    the memory free, before any is started; ``advice`` is added to what is allowed. Before,
    ``ono-bench --workers 99`` on a machine with 4 GiB free started them all, and the system
    killed some (a pool broken mid-run) or swapped the machine to a halt."""
    at_once = min(workers, jobs)
    each = WORKER_BYTES + records
    need = at_once * each
    if at_once < 2 or need < MEMORY_CHECK_FROM:
        return
    free = _game.available_memory()
    if free is not None and need > free:
        asked = f"{name} {workers:,}" if name.startswith("--") else f"{name}={workers:,}"
        held = " and its games' records" if records else ""
        raise ValueError(f"{asked}: {at_once:,} processes at once, each of at least "
                         f"{WORKER_BYTES >> 20} MiB (Python, NumPy, the compiled engine and the "
                         f"agents){held}, need {need / 2**30:,.1f} GiB, and this machine has "
                         f"{free / 2**30:,.1f} GiB of memory free; allowed: fewer workers (at "
                         f"most {max(1, free // each):,} here){advice}")


def check_batch_memory(rules: RuleSet, num_entrants: int, num_games: int, batch_size: int,
                       name: str = "batch_size", observation_version: int = 1) -> None:
    """``ValueError`` naming ``name`` (``batch_size``, or a console script's ``--batch``)
    when the games :func:`run_arena` holds at once, a batch of at most one seating's games
    with two observations of each (the game's and the rows an agent is handed) in the
    largest layout its agents read
    (``observation_version``), would not fit in the memory free
    (:func:`~ono_env.game.check_game_memory`), before any game. ``ValueError`` for a
    ``batch_size`` outside 1 to ``MAX_BATCH`` or an observation version that is not one."""
    rules = resolve_rules(rules)
    batch_size = check_int("batch_size", batch_size, 1, MAX_BATCH)
    check_observation_version(observation_version)   # before: True and 2.0 were taken for 1 and 2
    P = rules.num_players
    per = games_played(num_games, num_entrants, P) // (math.comb(num_entrants, P)
                                                       * len(seatings(P)))
    at_once = min(batch_size, per)
    asked = f"{name} {batch_size:,}" if name.startswith("--") else f"{name}={batch_size:,}"
    check_game_memory(rules, at_once, observation_version, agents_copy=True, what=asked + (
        f" ({at_once:,} games at once: a seating's)" if at_once < batch_size else ""))


def games_played(num_games: int, num_entrants: int, num_players: int) -> int:
    """How many games run_arena plays for ``num_games``: rounded up so that every table
    (every ``num_players`` of the ``num_entrants``) plays every seating equally often.
    ``ValueError`` for a count that is not a whole number, ``num_players`` outside 2 to 10
    or fewer entrants than seats."""
    num_players = check_int("num_players", num_players, MIN_PLAYERS, MAX_PLAYERS)
    check_int("num_entrants", num_entrants, num_players)
    check_int("num_games", num_games, 0)
    seats = math.comb(num_entrants, num_players) * len(seatings(num_players))
    return math.ceil(num_games / seats) * seats

def check_paired_plan(earlier: Any, agents: Sequence[Any], rules: Any = "classic",
                      num_players: int | None = None, num_games: int = 10_000, seed: int = 0,
                      batch_size: int = 4096, max_decisions: int | None = None) -> None:
    """Before playing: ``ValueError`` naming what differs unless run_arena with these
    arguments (mirrored) would deal the same cards as the saved run ``earlier`` (an
    ArenaResult or an arena.json's dict), cut its games alike and seat the same entrants
    (the same model files) but the first, so that paired_difference can compare the two
    first entrants. Each argument is checked as :func:`run_arena` checks it (before: a
    string of agents was read letter by letter, and a seed of "0" was said to differ from
    0)."""
    rules, agents, num_games, seed, batch_size = _run_args(
        rules, num_players, agents, num_games, seed, batch_size, max_decisions)
    plan = {"rules": rules.to_dict(), "seed": seed, "batch_size": batch_size,
            "games": games_played(num_games, len(agents), rules.num_players),
            "agents": _labels(agents), "max_decisions": max_decisions,
            "models": _model_files([make_agent(a, rules) for a in agents], _labels(agents))}
    check_pairable(plan, mirrored_record(earlier, "the earlier run"))

def _agent_list(name: str, agents: Any) -> list[Any]:
    """``agents`` as a list when it is a list or tuple: a set's order (and so the seating, and
    the results of a seed) changes from run to run, a dict's weights would be dropped, and a
    string is one name, not a list of letters."""
    if not isinstance(agents, (list, tuple)):
        raise ValueError(f"{name}={shown(agents, 80)} ({type(agents).__name__}); allowed: a list or "
                         f"tuple of agents (names, model paths or objects with act)")
    return list(agents)


def evaluate(agent: Any, opponents: Sequence[Any], rules: Any, num_games: int, seed: int = 0, *,
             batch_size: int = 4096, progress: bool = False, workers: int = 1,
             max_decisions: int | None = None) -> list[dict[str, Any]]:
    """``agent`` against each of ``opponents`` (a list or tuple) in turn (filling every other
    seat of the table), ``num_games`` games each (rounded up, as :func:`games_played`
    rounds, so that every seating plays as many), seats rotated. One row per opponent: ``opponent``,
    ``games``, ``win_rate`` of ``agent`` and its 95% interval (``ci_low``, ``ci_high``),
    ``fair_share``, ``mean_length``, ``no_winner`` and ``seconds``.

    ``max_decisions``: cut each game there, a game with no winner (None: the game's own
    limit, 5,000 decisions a round, 50,000 a match). ``workers`` > 1 plays the opponents in
    that many processes at once, one opponent per process; every opponent keeps its own
    seed, so the rows are the same as with one worker for agents that keep nothing from one
    call to the next (every agent of the project's, by name or model path). Agents then
    travel to the processes by pickling: pass names or model paths. An agent object of yours
    that keeps state between calls carries it from one opponent to the next with one worker,
    and starts each opponent from its pickled copy with several: its rows then differ. The
    processes that would play at once, each with its games' records, are checked against the
    memory free before any starts (:func:`check_workers_memory`)."""
    rules = resolve_rules(rules)
    workers = check_int("workers", workers, 1)
    seed = check_int("seed", seed, 0)   # any size: the trainers add their step count to theirs
    opponents = _agent_list("opponents", opponents)
    if not opponents:
        raise ValueError("opponents=[]; allowed: a list or tuple of one or more agents")
    num_games = check_int("num_games", num_games, 1, MAX_GAMES)   # as run_arena checks it
    jobs = [(agent, opp, rules, num_games, _derive(seed, 7, k), batch_size, max_decisions)
            for k, opp in enumerate(opponents)]
    P = rules.num_players   # each process's games' records, checked in it alone: all at once here
    check_workers_memory(workers, len(jobs), records=games_played(num_games, P, P) * record_bytes(P))
    if workers == 1 or len(jobs) == 1:
        return [_evaluate_one(*job, progress=progress) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("spawn")   # no fork of a process holding torch threads
    ex = ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=ctx)
    try:
        futures = [ex.submit(_evaluate_one, *job) for job in jobs]
        if progress:
            from concurrent.futures import as_completed

            from tqdm import tqdm
            for _ in tqdm(as_completed(futures), total=len(futures), unit="opponent",
                          desc="evaluation", file=sys.stderr):
                pass
        return [f.result() for f in futures]
    except BaseException:   # an error, or a signal that stops the caller: the games under
        # way are not waited for, and no worker is left running (before: a `with` block
        # waited for them, and a SIGTERM to this process left them running for minutes)
        end_workers(ex)
        raise
    finally:
        ex.shutdown(wait=True, cancel_futures=True)


def _evaluate_one(agent: Any, opp: Any, rules: RuleSet, num_games: int, seed: int,
                  batch_size: int, max_decisions: int | None = None,
                  progress: bool = False) -> dict[str, Any]:
    label = _labels([opp])[0]
    res = run_arena([agent] + [opp] * (rules.num_players - 1), rules, None, num_games, seed,
                    batch_size=batch_size, rating=False, progress=progress,
                    max_decisions=max_decisions)
    me = res.agent_rows()[0]
    return {"opponent": label, "games": me["games"], "win_rate": me["win_rate"],
            "ci_low": me["ci_low"], "ci_high": me["ci_high"], "fair_share": 1.0 / rules.num_players,
            "mean_length": me["mean_length"], "no_winner": int(res.records.truncated.sum()),
            "seconds": res.seconds}


def agreement(agent: Any, reference: Any, rules: Any, num_games: int = 1_000, seed: int = 0,
              max_decisions: int | None = None, *,
              max_moves: int | None = None) -> dict[str, Any]:
    """How often ``agent`` picks the action that ``reference`` picks, over the decisions of
    ``num_games`` games that ``reference`` plays at every seat (dealt from ``seed``; each
    game until it ends or for ``max_decisions`` decisions, the name the arena and the
    environments give it; ``max_moves``, its name before 0.3, still works until 0.4 and
    warns). Only decisions with two or more legal
    actions count. Both are asked ``act`` on the acting seat's observation, each in its own
    layout (learned policies, the rule-based agents; not the search agents); a sampling
    agent draws from a generator seeded by ``seed``. Returns ``{"agreement", "low", "high"``
    (95% Wilson interval over decisions), ``"decisions"}``: how alike two policies play (a
    distilled policy and its teacher, say), not which is stronger."""
    rules = resolve_rules(rules)
    num_games = check_int("num_games", num_games, 1, MAX_BATCH)
    given, name = max_decisions, "max_decisions"
    if max_moves is not None:
        if max_decisions is not None:
            raise ValueError("agreement: give max_decisions, not also max_moves (its old name)")
        warnings.warn("agreement(max_moves=...) is max_decisions=... since ono_env 0.3; "
                      "max_moves goes in 0.4", DeprecationWarning, stacklevel=2)
        given, name = max_moves, "max_moves"   # an error names what the caller wrote
    max_decisions = check_int(name, 1_000 if given is None else given, 1, 10**6)
    seed = check_seed("seed", seed, allow_none=False)
    a, ref = make_agent(agent, rules), make_agent(reference, rules)
    for who in (a, ref):
        if plays_from_game(who):
            raise ValueError(f"agreement: {agent_label(who)} plays from the game (a search "
                             f"agent, or another game agent); allowed: agents that choose from "
                             f"an observation")
    game = VecGame(rules, num_games, seed=seed)
    rng = np.random.default_rng(seed)
    same = total = 0
    for _ in range(max_decisions):
        live = ~game.finished
        if not live.any():
            break
        seat = game.current_player.astype(np.int64)
        mask = game.legal_mask().copy()
        # each answer checked as the drivers check it, in the games under way (before: None,
        # a scalar, floats or an illegal action were compared as they came)
        checked = np.where(live[:, None], mask, True)   # a finished game's row: any action
        ours = checked_actions(a, game.observe(seat, version=observation_version(a)), mask, rng,
                               checked)
        theirs = checked_actions(ref, game.observe(seat, version=observation_version(ref)), mask,
                                 rng, checked)
        choice = live & (mask.sum(axis=1) > 1)
        same += int((ours == theirs)[choice].sum())
        total += int(choice.sum())
        game.step(np.where(live, theirs, 0), active=live)
    if total == 0:
        raise ValueError("agreement: no decision with a choice in these games; raise num_games "
                         "or max_decisions")
    low, high = wilson_interval(same, total)
    return {"agreement": same / total, "low": low, "high": high, "decisions": total}


def format_evaluation(rows: Sequence[dict[str, Any]], name: str = "agent") -> str:
    """The rows of :func:`evaluate` as a table: games, win rate (the agent's share of the
    wins) with its 95% interval beside the fair share (1 / players), mean length and the
    games that ended with no winner (cut at max_decisions). Rows that are not such mappings
    are one ``ValueError`` naming the keys they lack (before: a ``KeyError`` or ``TypeError``)."""
    need = ("opponent", "games", "win_rate", "ci_low", "ci_high", "mean_length")
    if not isinstance(rows, (list, tuple)):
        raise ValueError(f"rows = {shown(rows, 40)} ({type(rows).__name__}); allowed: the list "
                         f"evaluate returns")
    for k, r in enumerate(rows):
        need_keys(r, need, f"rows[{k}] =", "a row of the list evaluate returns")
    what = "win rate" if not rows or rows[0].get("fair_share", 0.5) == 0.5 else "win share"
    lines = [f"{name} against each opponent ({what}, 95% interval; every other seat plays the "
             f"opponent)",
             f"{'opponent':<14} {'games':>8} {what:>10} {'95% interval':>16} {'fair share':>10} "
             f"{'mean length':>11} {'no winner':>9}"]
    for r in rows:
        ci = f"[{100 * r['ci_low']:.2f}, {100 * r['ci_high']:.2f}]"
        lines.append(f"{r['opponent']:<14} {r['games']:>8} {100 * r['win_rate']:>9.2f}% {ci:>16} "
                     f"{100 * r.get('fair_share', 0.5):>9.1f}% {r['mean_length']:>11.1f} "
                     f"{r.get('no_winner', 0):>9}")
    return "\n".join(lines)


__all__ = [
    "MAX_ARENA_JSON_BYTES", "MAX_GAMES", "MAX_RECORD", "MAX_ROUNDING", "RAY_CONNECT_SECONDS",
    "TASKS_PER_CPU", "WORKER_BYTES", "Z95", "Agent", "ArenaResult", "GameRecords", "agreement",
    "bounded_mean_interval", "check_batch_memory", "check_pairable", "check_paired_plan",
    "check_plan", "check_ray_address", "check_seats_filled", "check_workers_memory", "evaluate",
    "format_evaluation", "games_played", "mean_interval", "mirrored_record", "paired_difference",
    "play_games", "play_on_ray", "rate_games", "read_arena_json", "run_arena", "seatings",
    "wilson_interval", "workers_that_fit",
]
