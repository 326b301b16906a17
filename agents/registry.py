"""Agent names: the one table that turns a name (or a model file's path) into an agent.

``make_agent(spec, rules)`` builds an agent from a name (``random``, the rule-based
``greedy``, ``color``, ``defensive``, and one name per policy shipped in ``models/``:
``ppo-basic-2p``, ...; the search agents of :mod:`ono_env.agents.search`, ``pimc``,
``ismcts``, ``pimc-ppo`` and the others of ``SEARCH_AGENTS``, alone or as ``name:N`` or
``name:<T>ms``, and the CHEATING ceilings ``oracle-hands``, ``oracle`` and ``oracle-ppo``),
from the path of a saved model, or returns an object that already has ``act``.
``register_agent(name, factory)`` adds a name (one already taken only with
``replace=True``); a factory takes the rule set the agent will play (rule-based agents
read the observation layout from it, and a saved model is refused unless it was trained
for it).
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ono_env.agents.base import (
    Agent,
    RandomAgent,
    check_actions,
    observation_version,
    plays_from_game,
)
from ono_env.agents.learned import LearnedAgent, check_compatible, load_agent, shipped_models
from ono_env.agents.rule_based import RULE_BASED, RuleBasedAgent
from ono_env.agents.search import SEARCH_AGENTS, SearchAgent
from ono_env.checks import MAX_TEXT, add_note, check_bool, is_name, nearest, shown
from ono_env.observation import observation_size
from ono_env.rules import RuleSet, resolve_rules

Factory = Callable[[RuleSet], Agent]


def _shipped_factory(name: str, path) -> Factory:
    return lambda rules: load_agent(path, rules, name=name)   # a refusal names the policy


def _builtin() -> dict[str, Factory]:
    table: dict[str, Factory] = {"random": lambda rules: RandomAgent()}
    table.update(RULE_BASED)
    for name, path in shipped_models().items():
        table[name] = _shipped_factory(name, path)
    return table


_BUILTIN: dict[str, Factory] = _builtin()
_REGISTRY: dict[str, Factory] = dict(_BUILTIN)


def register_agent(name: str, factory: Factory, *, replace: bool = False) -> None:
    """Make ``make_agent(name, rules)`` build ``factory(rules)``.

    A name already in the table (a built-in agent's, or one registered before) is refused
    unless ``replace=True``: replacing ``greedy`` or a shipped policy changes what every
    later ``make_agent`` of that name plays, so it is never done by accident.
    :func:`unregister_agent` gives a built-in name its own agent back. The name is printable
    (no newline, which would break the one-line tables and messages that name it), has no
    ``:`` (which joins a search agent to its budget) unless it is ``module:Class`` (as the
    exploiter registers the class it trains against), is no built-in's or search agent's
    name in other letter cases or with ``_`` for ``-`` (``Random``), does not end as a model
    file's name in any case (``X.ZIP``) and holds no backslash; the factory must take the
    rules as its one argument, checked now rather than at the name's first use. An error a
    registered factory raises at ``make_agent`` carries a note naming the agent."""
    if not is_name(name) or is_model_path(name):
        raise ValueError(f"agent name {shown(name, 60)}; allowed: a name of 1 to {MAX_TEXT} "
                         f"printable characters that is not a path, without spaces at its ends")
    if not callable(factory):
        raise ValueError(f"register_agent({name!r}, ...): the factory must be callable")
    check_bool("replace", replace)
    if name in _REGISTRY and not replace:
        what = ("a built-in agent's" if _REGISTRY[name] is _BUILTIN.get(name)
                else "registered before")
        raise ValueError(f"agent name {name!r} is taken ({what}); allowed: a name that is not "
                         f"in agent_names(), or replace=True to replace it")
    if name.partition(":")[0] in SEARCH_AGENTS:
        raise ValueError(f"agent name {name!r} would hide the search agent "
                         f"{name.partition(':')[0]!r}; allowed: a name that is not a search "
                         f"agent's ({', '.join(SEARCH_AGENTS)}), with or without ':'")
    # a built-in's name in other letter cases or with '_' (Random, ppo_any, PIMC), a model
    # file's name in upper case (X.ZIP), or a backslash, a folder's separator elsewhere
    # (before: each taken, beside the built-in or the file it reads as, a path on Windows)
    key = name.lower().replace("_", "-")
    base = name.partition(":")[0]   # a search agent's name goes with a budget
    near = ([n for n in _BUILTIN if n == key and n != name]
            + [n for n in SEARCH_AGENTS if n == base.lower().replace("_", "-") and n != base])
    why = (f"it is the built-in {near[0]!r} in other letter cases or forms" if near
           else "it reads as a model file's name" if key.endswith((".zip", ".safetensors"))
           else "it holds '\\', which separates folders on some systems" if "\\" in name
           else None)
    if why:
        raise ValueError(f"agent name {name!r}: {why}; allowed: another name")
    if ":" in name and not CLASS_SPEC.match(name):   # greedy:2 would read as a budget
        raise ValueError(f"agent name {name!r}; allowed: a name without ':', which joins a "
                         f"search agent to its budget (pimc:8), or module:Class (the agent "
                         f"class that name imports)")
    why = _refuses_rules(factory)
    if why:   # make_agent would fail later, at the name's first use
        raise ValueError(f"register_agent({name!r}, ...): the factory cannot be called with "
                         f"the rules alone ({why}); allowed: a callable factory(rules)")
    _REGISTRY[name] = factory


def _refuses_rules(factory: Callable[..., Any]) -> str | None:
    """Why ``factory(rules)`` cannot be called, or None. The callable's own signature first
    (a decorator's wrapper may take what the function it wraps does not); where that is
    unreadable or only passes ``*args, **kwargs`` on (``functools.cache``, a plain
    ``functools.wraps`` wrapper), the wrapped function's. None where neither can be read."""
    for follow in (False, True):
        try:
            sig = inspect.signature(factory, follow_wrapped=follow)
        except (ValueError, TypeError):
            continue
        passes_on = all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                        for p in sig.parameters.values())
        if not follow and passes_on and hasattr(factory, "__wrapped__"):
            continue
        try:
            sig.bind(None)
        except TypeError as exc:
            return str(exc)
        return None
    return None


def agent_names() -> list[str]:
    """Every registered agent name, sorted. The search agents (``SEARCH_AGENTS``: ``pimc``,
    ``ismcts``, ..., also as ``name:N`` or ``name:<T>ms``) are not listed: they play only
    through the agent driver (see :mod:`ono_env.agents.search`); the web table adds the few
    it offers (``SEARCH_OFFERED`` in :mod:`ono_env.apps.web.server`) itself."""
    return sorted(_REGISTRY)


def is_builtin_name(label: str) -> bool:
    """Is ``label`` the name of a built-in agent (a baseline, a shipped policy) or a search
    agent's spec (``pimc:8``)? An object of another package that shows such a name is told
    apart in the arena's tables (:func:`ono_env.arena.run_arena`)."""
    from ono_env.agents.search import SEARCH_AGENTS

    return label in _BUILTIN or label.partition(":")[0] in SEARCH_AGENTS


def unregister_agent(name: str) -> None:
    """Take back what :func:`register_agent` did with ``name``: a name it added leaves the
    table, and a built-in name it replaced plays its built-in agent again. No error when
    there is nothing to take back; a built-in name never leaves. A name that is not a
    string is one ``ValueError`` (before: a list was Python's TypeError, unhashable)."""
    if not isinstance(name, str):
        raise ValueError(f"agent name {shown(name, 60)}; allowed: a name given to register_agent")
    if name in _BUILTIN:
        _REGISTRY[name] = _BUILTIN[name]
    else:
        _REGISTRY.pop(name, None)


def is_model_path(spec: str) -> bool:
    """Does an agent spec name a saved model file rather than a registered agent?"""
    return spec.endswith((".zip", ".safetensors")) or os.sep in spec or "/" in spec


def _hint(spec: str) -> str:
    """What an unknown agent name probably meant: a registered name with ``:N`` (which only
    the search agents take), or the closest name (:func:`~ono_env.checks.nearest`), case
    and ``_``/``-`` aside."""
    base, colon, arg = spec.partition(":")
    if colon and base in _REGISTRY:
        return f" ({shown(base, 80)} takes no ':'; only the search agents take name:N or name:<T>ms)"
    if os.path.lexists(spec):   # od2, a folder here (before: only "unknown agent")
        if os.path.isdir(spec):
            return " (a folder of that name is here: a model file is needed, not a folder)"
        return (f" (a file of that name is here: a model file is named by a path with a '/' "
                f"or by its extension, .safetensors or .zip, as {shown('./' + spec, 80)})")
    if spec.lower().endswith((".zip", ".safetensors")):   # X.SAFETENSORS: not read as a file
        return " (a model file's name ends in .safetensors or .zip, in lower case)"
    names = [*_REGISTRY, *SEARCH_AGENTS]
    key = base.lower().replace("_", "-")
    close = key if key in names else nearest(key, names)
    if close is None:
        return ""
    # a search agent's budget goes with its name: PIMC:8 meant pimc:8, not pimc
    meant = f"{close}:{arg}" if colon and close in SEARCH_AGENTS else close
    return f" (did you mean {meant!r}?)"


def _raised(exc: BaseException) -> str:
    """An exception as "raised ..." names it: its type and its text, the type alone where the
    text is empty (``sys.exit()``: before, "raised SystemExit: " ended on a colon)."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def make_agent(spec: Any, rules: Any = None) -> Agent:
    """An agent from a registered name, a saved model's path (text or a path object), or an
    object that has ``act``.

    ``rules`` (a RuleSet, preset name, ...; default classic) is the rule set it will play.
    An object is returned as it is; where ``rules`` is given, a learned agent (a model's
    metadata), and a search agent's learned prior or playout policy, is checked against it
    as a model file named by its path is, and a rule-based or search agent, made for some
    rules, must have been made for these."""
    given = rules is not None
    rules = resolve_rules(rules)
    if isinstance(spec, os.PathLike):   # a path object names a model file, as load_agent takes
        return load_agent(os.fspath(spec), rules)
    if isinstance(spec, type):   # it has act as a function: the class of an agent, not an agent
        raise ValueError(f"an agent must be an object with act(obs, mask, rng); got the class "
                         f"{spec.__name__} itself: allowed: an instance of it ({spec.__name__}"
                         f"(...)), or 'module:{spec.__name__}' where a name is taken")
    if isinstance(spec, str):
        if is_model_path(spec):
            try:
                return load_agent(spec, rules)
            except ValueError as exc:   # ./mine:Agent: a module:Class given as a path
                name = os.path.basename(spec)
                if CLASS_SPEC.match(name) and not os.path.lexists(spec):
                    raise ValueError(f"{exc} (a module:Class names a module on the Python "
                                     f"path, not a file: {name!r}, from the folder that "
                                     f"holds it)") from None
                stem = name.removesuffix(".safetensors").removesuffix(".zip")
                if stem in _REGISTRY and not os.path.lexists(spec):   # ppo-basic-2p.safetensors
                    raise ValueError(f"{exc} ({stem!r}, without the extension, is an agent's "
                                     f"name)") from None
                raise
        base, colon, arg = spec.partition(":")
        if base in SEARCH_AGENTS and spec not in _REGISTRY:   # name, name:N or name:<T>ms
            return SEARCH_AGENTS[base](rules, arg if colon else None)
        if spec not in _REGISTRY:
            raise ValueError(f"unknown agent {shown(spec, 80)}{_hint(spec)}: known agents are "
                             f"{', '.join(agent_names())}, "
                             f"the search agents {', '.join(SEARCH_AGENTS)} (also as name:N or "
                             f"name:<T>ms), "
                             f"or the path of a saved model (.safetensors or .zip); ono-arena, "
                             f"ono-bench and ono-exploit also take module:Class, an agent "
                             f"class of your own")
        factory = _REGISTRY[spec]
        try:
            agent = factory(rules)
        except SystemExit as exc:   # before: the program ended with its status, 0 too
            raise ValueError(f"the factory registered as agent {spec!r} called "
                             f"sys.exit({shown(exc.code, 40)}); allowed: a factory that "
                             f"returns an agent") from None
        except Exception as exc:
            if factory is not _BUILTIN.get(spec):   # a registered factory's own error
                add_note(exc, f"raised by the factory registered as agent {spec!r}")
            raise
        if isinstance(agent, type) or not isinstance(agent, Agent):   # a class has act too
            what = f"the class {agent.__name__}" if isinstance(agent, type) else \
                f"a {type(agent).__name__}"
            raise ValueError(f"agent {spec!r}: its registered factory returned {what}, not an "
                             f"agent (an object with act(obs, mask, rng))")
        # checked as an object is (before: a factory's learned agent for other rules played)
        spec = agent
    if isinstance(spec, Agent):
        if not callable(spec.act):   # the protocol's isinstance asks only that act exists
            raise ValueError(f"an agent's act must be a method act(obs, mask, rng); the "
                             f"{type(spec).__name__} given has act = "
                             f"{shown(spec.act, 40)} ({type(spec.act).__name__})")
        if given:   # before: an agent object loaded for one table played at another unchecked,
            # and a search agent's prior or learned playout policy (its guides) still does
            for a in getattr(spec, "guides", ()):
                check_made_for(a, rules, f"{spec!r}: its "
                               f"{'learned policy' if isinstance(a, LearnedAgent) else 'prior'} ")
            check_made_for(spec, rules)
        return spec
    raise ValueError(
        f"an agent must be a name ({', '.join(agent_names())}, or a search agent: "
        f"{', '.join(SEARCH_AGENTS)}), the path of a saved model, or an object with act(obs, "
        f"mask, rng); got {type(spec).__name__}"
    )


def check_made_for(agent: Any, rules: RuleSet, where: str = "") -> None:
    """One ``ValueError`` (``where`` before it) where ``agent``, made for some rules, cannot
    play ``rules``: a learned agent by its model's metadata (:func:`check_compatible`), or
    without metadata a version-1 network by the rules it was made for (a version-2 one plays
    every table); a rule-based or search agent by the rules it was made for. Other agents
    (the user's own) say nothing of their rules, and are taken. Before, a search agent's
    rule-based prior, and a learned agent without metadata, played any table."""
    if isinstance(agent, LearnedAgent):
        if agent.meta:
            check_compatible(agent.meta, rules, f"{where}{agent.name!r}")
            return
        if agent.observation_version == 2:
            return
    elif not isinstance(agent, (RuleBasedAgent, SearchAgent)):
        return
    mismatch = agent.rules.mismatch(rules)
    if mismatch:   # before: taken, and refused (or played wrongly) once games began
        raise ValueError(f"{where}{agent!r} was made for {mismatch}; allowed: an agent made "
                         f"for the table's rules (make_agent(name, rules))")


CLASS_SPEC = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:"
                        r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
"""``module:Class``: a dotted module path, a colon, a dotted attribute path."""


def is_class_spec(spec: Any) -> bool:
    """Does ``spec`` read as ``module:Class`` (and name no registered or search agent, nor a
    model file: a name ending ``.safetensors`` or ``.zip`` is a model's path, as
    :func:`make_agent` reads it; before, ``best:v1.safetensors`` imported ``best``)?"""
    if not isinstance(spec, str) or not CLASS_SPEC.match(spec) or spec in _REGISTRY \
            or is_model_path(spec):
        return False
    return spec.partition(":")[0] not in SEARCH_AGENTS


def agent_from_class(spec: str, rules: Any = None) -> Agent:
    """The user's own agent, named ``module:Class``: import ``module`` (with the current
    directory added to the path when it is not on it: first while the module is imported,
    then last, so that what the module imports later from beside it, in the class's
    constructor or its ``act``, is found too, and no file there shadows a library), take
    ``Class`` from it (a dotted path reaches a nested attribute), and call it with the
    RuleSet it will play when its constructor takes one required positional argument or has
    a parameter named ``rules`` (as the project's own agents have; for a constructor of
    ``*args, **kwargs`` alone, its base class's), else with none (``_rules_argument``). Only the
    console scripts that document a ``module:Class`` argument (``ono-arena``, ``ono-bench``,
    ``ono-exploit``) call this: importing the module is the user's explicit choice, and
    :func:`make_agent` never imports anything.

    The object must implement the agent protocol (:class:`~ono_env.agents.base.Agent`): it is
    asked for one batch of real positions of ``rules`` before it is used, and ``ValueError``
    names what is wrong (the module cannot be imported, the class is missing, it takes
    arguments it is not given, it has no ``act``, ``act`` raised or chose an illegal action)."""
    rules = resolve_rules(rules)
    if not isinstance(spec, str) or not CLASS_SPEC.match(spec):
        raise ValueError(f"agent {spec!r} is not module:Class (a dotted module path, a colon, "
                         f"a class name)")
    module_name, _, attr = spec.partition(":")
    try:
        cwd = os.getcwd()
    except FileNotFoundError:   # before: "[Errno 2] No such file or directory", nothing named
        raise ValueError(f"agent {spec!r}: the current folder, where its module is looked for "
                         f"first, no longer exists; allowed: run from a folder that does") from None
    added = cwd not in sys.path
    if added:   # first while importing the module, then last: it shadows no library
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        # a file's name given for its module's (before: no word on the .py)
        py = (f" (a module is named without .py: {module_name.removesuffix('.py')}:"
              f"{spec.partition(':')[2]})" if module_name.endswith(".py") else "")
        raise ValueError(f"agent {spec}: cannot import module {module_name!r} ({exc}); it must "
                         f"be importable from the current directory or the Python path{py}") \
            from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's module failed: one
        # line, its reason (a sys.exit too: before, the program ended with its status, silent)
        raise ValueError(f"agent {spec}: importing {module_name!r} raised "
                         f"{_raised(exc)}") from None
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)
            sys.path.append(cwd)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"agent {spec}: module {module_name!r} has no {attr!r}")
        obj = getattr(obj, part)
    if not inspect.isclass(obj):   # not any callable: sys:exit or os:abort would be called
        raise ValueError(f"agent {spec}: {attr!r} is a {type(obj).__name__}, not a class; "
                         f"allowed: module:Class, a class whose objects have act(obs, mask, rng)")
    cls: Any = obj   # the user's class, of any signature
    how = _rules_argument(cls, spec, attr)
    try:
        agent = (cls(rules) if how == "positional" else cls(rules=rules) if how == "keyword"
                 else cls())
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's constructor failed: one
        # line (a sys.exit too: before, the console script ended with its status, 0 too)
        raise ValueError(f"agent {spec}: {attr}() raised {_raised(exc)}") from None
    try:
        check_protocol(agent, rules, spec)
    except ValueError as exc:
        # the cause where the agent plays the default table (classic at 4 players, which a
        # class called with no argument was made for) and not this one; before, every
        # failure of act where the two tables' observations differ in length was given this
        # hint, an act that raised for a reason of its own too
        version = observation_version(agent)
        if how is None and isinstance(exc, ActRaised) and \
                observation_size(resolve_rules(None), version) != observation_size(rules, version) \
                and _plays(agent, spec):
            raise ValueError(f"{exc} ({attr} was called with no argument: a constructor "
                             f"parameter named rules is given the table's RuleSet)") from None
        raise
    return agent


def _plays(agent: Any, spec: str) -> bool:
    """Whether ``agent`` passes :func:`check_protocol` at the default table."""
    try:
        check_protocol(agent, resolve_rules(None), spec)
    except ValueError:
        return False
    return True


def _rules_argument(cls: Any, spec: str, attr: str) -> str | None:
    """How :func:`agent_from_class` hands ``cls`` the RuleSet: ``"positional"`` (its one
    required positional parameter), ``"keyword"`` (a parameter named ``rules``, as the
    project's own agents have; for a constructor of ``*args, **kwargs`` alone, as a subclass
    that passes them on has, the first base class whose ``__init__`` names its parameters
    decides), or None (called with none: a class whose signature cannot be read, too).
    Left out, an optional ``rules`` would mean the library's default rules, another table."""
    def named(sig: inspect.Signature) -> list[inspect.Parameter]:
        return [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL,
                                                                     p.VAR_KEYWORD)]
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return None
    required = [p for p in named(sig) if p.default is p.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(required) > 1:
        raise ValueError(f"agent {spec}: {attr}() takes {len(required)} arguments; allowed: "
                         f"none, or one (the RuleSet it will play)")
    if required:
        return "positional"
    params = {p.name: p for p in named(sig)}
    if "rules" in params:
        return "positional" if params["rules"].kind == inspect.Parameter.POSITIONAL_ONLY \
            else "keyword"
    if params or not any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
        return None
    for base in cls.__mro__[1:]:   # *args, **kwargs alone: the base class they go to
        init = base.__dict__.get("__init__")
        if init is None or base is object:
            continue
        try:
            base_params = named(inspect.signature(init))[1:]   # without self
        except (TypeError, ValueError):
            return None
        if base_params:
            return "keyword" if any(p.name == "rules" and p.kind != p.POSITIONAL_ONLY
                                    for p in base_params) else None
    return None


def check_protocol(agent: Any, rules: RuleSet, what: str) -> None:
    """``ValueError`` unless ``agent`` has ``act(obs, mask, rng)`` that returns a legal action
    for each of a few positions of ``rules`` (observed in its own ``observation_version``)."""
    from ono_env.game import VecGame

    if not isinstance(agent, Agent) or not callable(agent.act):   # (isinstance asks only
        # that act exists: before, act = 5 was "TypeError: 'int' object is not callable")
        raise ValueError(f"agent {what}: {type(agent).__name__} does not implement the agent "
                         f"protocol: it needs a method act(obs, mask, rng) -> actions")
    if plays_from_game(agent):
        return   # a search agent decides from the game through the driver, not from act
    failed = f"agent {what}: act(obs, mask, rng) failed on real positions of {rules.name}"
    version = observation_version(agent)
    game = VecGame(rules, 4, seed=0, observation_version=version)
    mask = game.legal_mask().copy()
    obs = game.observe(game.state.current.astype(np.int64), version=version)
    try:
        actions = agent.act(obs, mask.copy(), np.random.default_rng(0))   # checked against its own
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's act failed: one line,
        # its reason (a sys.exit too: before, the program ended with its status, silent)
        raise ActRaised(f"{failed}: {_raised(exc)}") from None
    try:
        check_actions(agent, actions, mask)
    except Exception as exc:  # noqa: BLE001 - it returned what no table takes: one line
        raise ValueError(f"{failed}: {type(exc).__name__}: {exc}") from None


class ActRaised(ValueError):
    """:func:`check_protocol`'s error where the agent's own ``act`` raised (rather than
    returned actions no table takes)."""
