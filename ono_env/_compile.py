"""How the engine's rules are compiled: kernels, rules functions, and prebuilt kernels.

The rules (``ono_env._engine``, ``ono_env.agents._baselines`` and ``._search``) are numba functions of two kinds:

- **kernels**, called from Python (``kernel`` / ``lazy_kernel``): each compiled for one
  signature and closed to any other;
- **rules functions**, called only from compiled code (``rules_function``): declared with a
  signature, and compiled only when a kernel has to be compiled (``compile_rules``). A
  kernel that comes from a cache needs none of them: its cached code holds every rules
  function it calls.

A kernel is looked up, before anything is compiled, first among the **prebuilt kernels**
and then in numba's usual on-disk cache (``__pycache__``). The prebuilt kernels are numba's
own cache files, written when the package is built (``ono_env._prebuild``, run by
``pip install``) into ``ono_env/_prebuilt/`` for a CPU level that every machine of the
architecture runs (x86-64-v2: SSE4.2 and POPCNT, on x86-64). numba keys its own cache to
the exact CPU model, so a fresh machine would compile every kernel on first use (20 s of
CPU on the machine of the speed page's figures, docs/speed.md); with prebuilt kernels a first import that
plays random games compiles nothing.

The prebuilt kernels are used only where they fit: the same numba, NumPy and Python
versions, the same architecture, numba's default compile settings (no NUMBA_OPT,
NUMBA_BOUNDSCHECK or NUMBA_DEBUGINFO), a CPU with every instruction set they were built
for, and the same sources (a hash of every file their code comes from, so an edited
checkout never runs stale prebuilt code). Otherwise, or with ``ONO_ENV_PREBUILT=0``, the
kernels compile on first use as before and land in numba's usual cache.

numba's usual cache is kept valid the same way: its entries are stamped with that hash of
the rules sources, not with the time of the one file a function is in. A cached kernel holds
the rules functions it calls from other modules (the search's and the baselines' hold the
engine's), and a cache keyed to its own file alone would keep serving them after the engine
changed, and link them in place of the new code in kernels loaded after it.

numba offers no public hook to add a read-only cache of its own; this module subclasses its
cache classes (``numba.core.caching``) for the lookup, and gives up on the prebuilt kernels
(compiling instead) if those classes are not what it expects.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import logging
import os
import platform
import re
import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import numba
import numpy as np
from numba import njit

from ono_env._cpu import BUILD_ENV, portable_cpu

PREBUILT_DIR = Path(__file__).with_name("_prebuilt")
"""Where ``pip install`` puts the prebuilt kernels (``ono_env._prebuild``)."""
MANIFEST = "manifest.json"
DISABLE_ENV = "ONO_ENV_PREBUILT"
"""``ONO_ENV_PREBUILT=0``: never use the prebuilt kernels (compile on first use)."""

# Every source file whose code or constants the compiled kernels hold (the prebuilt kernels
# are stale when any of them changes).
RULES_SOURCES = ("cards.py", "rules.py", "observation.py", "_engine.py", "_compile.py",
                 "_cpu.py", "checks.py")
AGENT_SOURCES = ("_baselines.py", "_search.py", "rule_based.py")  # in ono_env.agents

_JIT = not numba.config.DISABLE_JIT


def _agents_dir() -> Path:
    spec = importlib.util.find_spec("ono_env.agents")
    assert spec is not None and spec.submodule_search_locations is not None  # a package
    return Path(next(iter(spec.submodule_search_locations)))


def source_hash() -> str:
    """sha256 of the rules sources (``RULES_SOURCES`` and ``AGENT_SOURCES``)."""
    h = hashlib.sha256()
    here = Path(__file__).parent
    for path in [here / n for n in RULES_SOURCES] + [_agents_dir() / n for n in AGENT_SOURCES]:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _numba_settings():
    """(variable, value, default) of the numba settings that change compiled code; the
    prebuilt kernels are built with the defaults (the build drops every NUMBA_ variable)."""
    c = numba.config
    return [("NUMBA_OPT", int(c.OPT), 3), ("NUMBA_BOUNDSCHECK", bool(c.BOUNDSCHECK), False),
            ("NUMBA_DEBUGINFO", bool(c.DEBUGINFO_DEFAULT), False)]


def manifest() -> dict:
    """What the prebuilt kernels were built for (written beside them by the build step)."""
    return {
        "numba": numba.__version__,
        "numpy": ".".join(np.__version__.split(".")[:2]),
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "machine": platform.machine().lower(),
        "cpu": portable_cpu()[0],
        "features": list(portable_cpu()[1]),
        "sources": _sources_stamp(),
    }


def _sources_stamp() -> str:
    """``source_hash()``, computed once per process (every kernel's cache is stamped with it)."""
    if "sources" not in _PREBUILT_STATE:
        _PREBUILT_STATE["sources"] = source_hash()
    return _PREBUILT_STATE["sources"]


def _building() -> Path | None:
    out = os.environ.get(BUILD_ENV)
    return Path(out) if out else None


_PREBUILT_STATE: dict = {}


def prebuilt_status() -> str:
    """``"used"`` when kernels are looked up among the prebuilt kernels, else why not (one
    line: not built, disabled, or which of version, machine, CPU or sources differs)."""
    if "status" not in _PREBUILT_STATE:
        _PREBUILT_STATE["status"] = status = _check_prebuilt()
        if status != "used":
            logging.getLogger("ono_env").info("prebuilt kernels %s; kernels compile on first use",
                                              status)
    return _PREBUILT_STATE["status"]


CHOSEN = ("not used: NUMBA_DISABLE_JIT", f"not used: {DISABLE_ENV}=0",
          "not used: numba is set to compile", "not used: the rules sources changed")
"""The starts of :func:`prebuilt_status` where compiling is expected and
:func:`_say_compiling` says nothing: a setting the user chose, or a checkout whose sources
were edited since its build (its developer's, whose ``pip install -e .`` builds them again)."""


def _say_compiling() -> None:
    """Warn once per process, as the first kernel starts to compile, where the prebuilt
    kernels were meant to be used but do not fit (another NumPy, numba, Python or CPU, or
    the build step skipped): the first use then takes about 20 s of CPU, which before came
    without a word (the reason went to an INFO log). Nothing where compiling is expected
    (``CHOSEN``); numba's cache keeps what compiles, so a later process is quick and
    silent."""
    status = prebuilt_status()
    if _PREBUILT_STATE.get("said") or status == "used" or status.startswith(CHOSEN):
        return
    _PREBUILT_STATE["said"] = True
    warnings.warn(f"ono_env: prebuilt kernels {status}: compiling the kernels this program "
                  f"uses, about 20 s of CPU once (numba's cache keeps them)", RuntimeWarning,
                  stacklevel=2)


def _no_cache_folder(exc: RuntimeError) -> bool:
    """Is ``exc`` numba's "no locator available" (it finds no folder it can write to cache a
    function in)? If so, warned once per process."""
    if "no locator available" not in str(exc):
        return False
    if not _PREBUILT_STATE.get("said_no_cache"):
        _PREBUILT_STATE["said_no_cache"] = True
        warnings.warn("ono_env: numba finds no folder it can write to cache compiled kernels "
                      "in (the package's __pycache__ nor its user cache folder): kernels "
                      "compiled now are compiled again in each process; set NUMBA_CACHE_DIR to "
                      "a writable folder to keep them", RuntimeWarning, stacklevel=2)
    return True


def _enable_caching(disp: Any) -> None:
    """numba's usual cache for ``disp``, or none where numba finds no folder it can write
    (:func:`_no_cache_folder`)."""
    try:
        disp.enable_caching()
    except RuntimeError as exc:
        if not _no_cache_folder(exc):
            raise


def _check_prebuilt() -> str:
    if not _JIT:
        return "not used: NUMBA_DISABLE_JIT is set"
    if _building() is not None:
        return "used"  # the build step writes them
    setting = os.environ.get(DISABLE_ENV, "1")
    if setting not in ("0", "1"):
        raise ValueError(f"{DISABLE_ENV} must be 0 (compile the kernels on first use) or 1 "
                         f"(use the prebuilt kernels where they fit, the default), got "
                         f"{setting!r}")
    if setting == "0":
        return f"not used: {DISABLE_ENV}=0"
    changed = [name for name, value, default in _numba_settings() if value != default]
    if changed:
        return f"not used: numba is set to compile differently ({', '.join(changed)})"
    try:
        built = json.loads((PREBUILT_DIR / MANIFEST).read_text())
    except (OSError, ValueError):
        return "not used: this install has no prebuilt kernels"
    try:
        here = manifest()
    except OSError as e:  # the sources cannot be read (a zipped install): do not guess
        return f"not used: the rules sources cannot be read ({e})"
    differ = [("the rules sources changed since the build" if key == "sources" else
               f"built for {key} {built.get(key)}, this is {here[key]}")
              for key in ("numba", "numpy", "python", "machine", "sources")
              if built.get(key) != here[key]]
    if differ:   # each difference (before: the first alone)
        return f"not used: {'; '.join(differ)}"
    needed = set(built.get("features", ()))
    have = set()
    if needed:
        try:
            from llvmlite import binding as ll
            have = {name for name, on in ll.get_host_cpu_features().items() if on}
        except Exception:  # noqa: BLE001 - no feature list: do not guess
            return "not used: this CPU's features cannot be read"
    missing = sorted(needed - have)
    if missing:
        return f"not used: this CPU lacks {', '.join(missing)}"
    try:
        _cache_classes()
    except Exception as e:  # noqa: BLE001 - numba's cache classes changed: compile instead
        return f"not used: numba's cache classes are not as expected ({e})"
    return "used"


def _portable_triple(triple: str) -> str:
    """An LLVM target triple without the OS release (macOS's names it: darwin23.1.0)."""
    return re.sub(r"(darwin|macosx|macos)[0-9.]*", r"\1", triple)


@functools.cache
def _cache_classes():
    """The KernelCache class, built on numba's cache classes (once)."""
    from numba.core import caching

    cpu = portable_cpu()[0]

    class PrebuiltLocator(caching._CacheLocator):
        """The prebuilt kernels' folder; stamped with the hash of the rules sources, not
        a file time (an installed file's time says nothing about its content)."""

        def __init__(self, py_func, py_file):
            self._lineno = py_func.__code__.co_firstlineno

        def ensure_cache_path(self):
            os.makedirs(self.get_cache_path(), exist_ok=True)

        def get_cache_path(self):
            return str(_building() or PREBUILT_DIR)

        def get_source_stamp(self):
            return _sources_stamp()

        def get_disambiguator(self):
            return str(self._lineno)

        @classmethod
        def from_function(cls, py_func, py_file):
            return cls(py_func, py_file)

    class PrebuiltImpl(caching.CompileResultCacheImpl):
        _locator_classes = [PrebuiltLocator]

    class PrebuiltCache(caching.FunctionCache):
        """numba's function cache, keyed by the portable CPU level instead of this
        machine's exact CPU model and features."""

        _impl_class = PrebuiltImpl

        def _index_key(self, sig, codegen):
            sig, magic, code = super()._index_key(sig, codegen)
            return sig, (_portable_triple(magic[0]), cpu), code

    def stamped(locator):
        """numba's cache locator ``locator``, stamped with the hash of the rules sources
        instead of its own file's time: a kernel's cached code holds the rules functions of
        other modules too (a search kernel the engine's), and numba would keep it after
        those change, and link it in place of the new code."""
        return type(locator.__name__, (locator,), {"get_source_stamp": lambda self: _sources_stamp()})

    class StampedImpl(caching.CompileResultCacheImpl):
        _locator_classes = [stamped(c) for c in caching.CompileResultCacheImpl._locator_classes]

    class UserCache(caching.FunctionCache):
        """numba's usual on-disk cache (``__pycache__``), valid for one content of the
        rules sources."""

        _impl_class = StampedImpl

    def user_cache(py_func):
        """``UserCache(py_func)``, or none (numba's ``NullCache``, after one warning) where
        numba finds no folder it can write: neither ``__pycache__`` beside the package (a
        read-only install) nor its user cache folder (no writable home). Before, numba's
        "no locator available" ``RuntimeError`` stopped the import there, even where the
        prebuilt kernels fit and no cache was needed."""
        try:
            return UserCache(py_func)
        except RuntimeError as exc:
            if not _no_cache_folder(exc):
                raise
            return caching.NullCache()

    class KernelCache(caching._Cache):
        """The prebuilt kernels, then numba's usual cache. A miss in both compiles the
        rules functions first (``compile_rules``), so that the kernel links them at their
        declared signatures."""

        compiles_rules_on_miss = True

        def __init__(self, py_func):
            self._py_func = py_func
            self._user_made: Any = None   # made when first needed: a kernel the prebuilt
            self._enabled = True          # ones hold needs none (nor a folder to write)
            self._prebuilt: Any = _UNSET

        @property
        def _user(self):
            if self._user_made is None:
                self._user_made = user_cache(self._py_func)
                if not self._enabled:
                    self._user_made.disable()
            return self._user_made

        @_user.setter
        def _user(self, cache):
            self._user_made = cache

        def _prebuilt_cache(self):
            # decided on first use, not at import: a bad ONO_ENV_PREBUILT is then refused
            # where the caller reports errors (a console script prints one line)
            if self._prebuilt is _UNSET:
                used = prebuilt_status() == "used"
                self._prebuilt = PrebuiltCache(self._py_func) if used else None
            return self._prebuilt

        @property
        def cache_path(self):
            return self._user.cache_path

        def load_overload(self, sig, target_context):
            if _building() is None:
                cres = None
                if self._prebuilt_cache() is not None:
                    try:
                        cres = self._prebuilt.load_overload(sig, target_context)
                    except Exception:  # noqa: BLE001 - an unreadable file: compile instead
                        cres = None
                if cres is None:
                    cres = self._user.load_overload(sig, target_context)
                if cres is not None:
                    return cres
                _say_compiling()
            compile_rules()
            return None

        def save_overload(self, sig, data):
            (self._prebuilt_cache() if _building() is not None else self._user).save_overload(
                sig, data)

        def enable(self):
            self._enabled = True
            if self._user_made is not None:
                self._user_made.enable()

        def disable(self):
            self._enabled = False
            if self._user_made is not None:
                self._user_made.disable()

        def flush(self):
            if self._user_made is not None:
                self._user_made.flush()

    KernelCache.user_cache = UserCache
    KernelCache.make_user_cache = staticmethod(user_cache)
    return KernelCache


_UNSET = object()


# ---- decorators ------------------------------------------------------------------------
# Every compiled function runs without numba's reference counting (``_nrt=False``): the
# state arrays belong to the VecGame for as long as any kernel runs, and counting
# references to them cost ~150 ns per call of a large function. In return nothing here
# allocates; scratch space comes from the caller. The kernels called from Python release the
# GIL while they run (``nogil``): a long search in one thread (a web table's agents) leaves
# the others running. Each kernel touches only the arrays it is given, and every caller holds
# its own (a VecGame's state, an agent's scratch), so nothing is shared between threads.
_KERNEL_OPTIONS = dict(_nrt=False, error_model="numpy", nogil=True)
_RULES_OPTIONS = dict(no_cpython_wrapper=True, no_cfunc_wrapper=True, _nrt=False,
                      error_model="numpy")

LAZY_SIGNATURES: dict[str, object] = {}
"""Kernel (``module.name``) -> its one signature."""
_COMPILE_LOCK = threading.Lock()


def lazy_kernel(sig):
    """A batch kernel called from Python, made ready for ``sig`` on first use
    (``compiled``): from the prebuilt kernels or numba's cache, else compiled. A program
    that only plays random games never loads ``step`` or ``observe``."""
    def wrap(func):
        LAZY_SIGNATURES[f"{func.__module__}.{func.__name__}"] = sig
        disp = njit(**_KERNEL_OPTIONS)(func)
        if _JIT:
            try:
                disp._cache = _cache_classes()(disp.py_func)
            except Exception:  # noqa: BLE001 - numba's cache classes are not as expected
                _enable_caching(disp)  # its usual cache alone (prebuilt_status() says why)
        return disp
    return wrap


def kernel(sig):
    """A batch kernel called from Python, made ready for ``sig`` when its module is
    imported (the search and compiled-baseline kernels, whose modules load on first use)."""
    def wrap(func):
        return compiled(lazy_kernel(sig)(func))
    return wrap


def signature(kernel):
    """The one signature of a kernel (None for any other function)."""
    func = kernel.py_func
    return LAZY_SIGNATURES.get(f"{func.__module__}.{func.__name__}")


def compiled(kernel):
    """``kernel`` ready for its one signature (prebuilt, cached or compiled now) and closed
    to any other, as an eagerly compiled kernel is."""
    if getattr(kernel, "signatures", None) is None:
        return kernel  # NUMBA_DISABLE_JIT=1: plain Python
    sig = signature(kernel)
    with _COMPILE_LOCK:  # two threads' first calls compile it once
        if sig is not None and not kernel.signatures:
            if not getattr(kernel._cache, "compiles_rules_on_miss", False):
                compile_rules()  # numba's usual cache alone: the rules first, hit or miss
            kernel.compile(sig)
            kernel.disable_compile()
    return kernel


_PENDING: list = []
_RULES_READY = [False]
_RULES_LOCK = threading.RLock()


def rules_function(sig, **options):
    """A rules function called only from compiled code, declared for ``sig``: no
    Python/C wrappers to build (they are most of the compile time of a small function),
    compiled only when some kernel must be compiled (``compile_rules``)."""
    def wrap(func):
        disp = njit(**_RULES_OPTIONS, **options)(func)
        if not _JIT:
            return disp
        with _RULES_LOCK:
            _PENDING.append((disp, sig))
        if _RULES_READY[0]:  # declared after the others were compiled: compile it now
            compile_rules()
        return disp
    return wrap


def compile_rules() -> None:
    """Compile every declared rules function for its signature, in the order they were
    declared (a function's callees come before it), and close each to other signatures.
    Each comes from numba's cache where it holds it."""
    from numba.core.compiler_lock import global_compiler_lock

    # numba's lock first, as when a kernel's cache lookup calls this: one order, no deadlock
    with global_compiler_lock, _RULES_LOCK:
        while _PENDING:
            disp, sig = _PENDING[0]
            try:
                disp._cache = _cache_classes().make_user_cache(disp.py_func)
            except Exception:  # noqa: BLE001 - numba's cache classes are not as expected
                _enable_caching(disp)
            disp.compile(sig)
            disp.disable_compile()
            _PENDING.pop(0)  # only once compiled: a failure is raised again, not lost
        _RULES_READY[0] = True
