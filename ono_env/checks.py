"""Argument checks shared by every public constructor and step function.

Each refuses a value of the wrong type instead of coercing it (``True`` is not a count,
``"no"`` is not a flag, ``1.5`` is not a seed or an action) and raises one ``ValueError``
naming the argument, the value and what is allowed.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import json
import math
import os
import re
import secrets
import shutil
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np

MAX_SEED = 2**63 - 1
"""The largest seed every seeded call takes (a NumPy generator's seed fits 64 bits; the
project's seeds stay non-negative ``int64``)."""


class JSONError(ValueError):
    """A text that :func:`parse_json` refused; its message is what is wrong alone (``the key
    'k' is given twice``, ``nested too deeply``), for the caller to name the text."""


def parse_json(text: str | bytes | bytearray, *, finite: bool = True, bom: bool = False) -> Any:
    """The data of a JSON text, read as strictly as the project writes JSON: Python's
    ``json`` with its hooks, so that every reader of a file refuses the same things, each one
    :class:`JSONError` (never a ``JSONDecodeError``, ``RecursionError`` or
    ``UnicodeDecodeError``):

    - text that is not JSON: json's words and where (``Expecting value at line 1, column 1``);
    - a key given twice in one object (json keeps the last silently);
    - nesting deeper than Python's JSON reader goes, and an integer past Python's digits limit;
    - bytes that are not UTF-8 (json would guess UTF-16 or UTF-32 from them);
    - with ``finite``: NaN, Infinity and -Infinity, and a number beyond a float's range
      (``1e400``, read as an infinity), which Python's JSON reads and no JSON writer writes
      back. A reader of files that the project writes with ``allow_nan=False`` sets it.

    ``bom``: a leading byte order mark, as some editors write, is skipped (files a person
    may edit: positions, replays, arena.json, result cards); else it is refused, as JSON
    that a program wrote (a model's metadata) never starts with one."""
    def twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:
                raise JSONError(f"the key {shown(key, 60)} is given twice")
            seen[key] = value
        return seen

    def constant(name: str) -> Any:
        raise JSONError(f"{name}, which JSON has not; allowed: finite numbers")

    def finite_float(number: str) -> float:
        value = float(number)
        if not math.isfinite(value):   # a JSON number's text is digits, signs, '.' and 'e'
            raise JSONError(f"{cut(number, 40)}, beyond a float's range; allowed: finite numbers")
        return value

    try:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8-sig" if bom else "utf-8")
        elif bom and text.startswith("\ufeff"):
            text = text[1:]
        hooks: dict[str, Any] = {"parse_constant": constant, "parse_float": finite_float} if finite else {}
        return json.loads(text, object_pairs_hook=twice, **hooks)
    except json.JSONDecodeError as exc:
        # json's own words may end in "at" ("Unterminated string starting at")
        raise JSONError(f"{exc.msg.removesuffix(' at')} at line {exc.lineno}, column "
                        f"{exc.colno}") from None
    except UnicodeDecodeError as exc:
        raise JSONError(f"not UTF-8 text ({exc.reason} at byte {exc.start:,})") from None
    except RecursionError:
        raise JSONError("nested too deeply for Python's JSON reader") from None
    except JSONError:
        raise
    except ValueError as exc:   # int() past Python's digits limit (its words name a setting)
        if "integer string conversion" not in str(exc):
            raise
        raise JSONError(f"a number of more than {sys.get_int_max_str_digits():,} digits") from None


def is_int(value: Any) -> bool:
    """A Python or NumPy integer, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def is_real(value: Any) -> bool:
    """A Python or NumPy integer or float, not a bool (nan and inf are the caller's)."""
    return (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, (bool, np.bool_)))


def as_int(value: Any) -> int | None:
    """``value`` as an ``int`` when it is a Python or NumPy integer or a 0-d integer array
    (as the environments' steps take an action), not a bool; else None."""
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "iu":
        return int(value)
    return int(value) if is_int(value) else None


def check_int(name: str, value: Any, low: int, high: int | None = None) -> int:
    """``value`` as an ``int`` when it is an integer (not a bool) from ``low`` to ``high``."""
    allowed = f"an integer >= {low:,}" if high is None else f"an integer from {low:,} to {high:,}"
    if not is_int(value):
        raise ValueError(f"{name}={shown(value, 80)} ({type(value).__name__}); allowed: {allowed}")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name}={shown(value, 80)}; allowed: {allowed}")
    return int(value)


def check_bool(name: str, value: Any) -> bool:
    """``value`` when it is a bool (Python or NumPy)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={shown(value, 80)} ({type(value).__name__}); allowed: True or False")
    return bool(value)


@overload
def check_seed(name: str, value: Any, allow_none: Literal[False]) -> int: ...
@overload
def check_seed(name: str, value: Any, allow_none: bool = True) -> int | None: ...
def check_seed(name: str, value: Any, allow_none: bool = True) -> int | None:
    """A seed: ``None`` (when allowed) or an integer from 0 to 2**63 - 1."""
    if value is None and allow_none:
        return None
    return check_int(name, value, 0, MAX_SEED)


def check_choice(name: str, value: Any, choices: Any) -> Any:
    """``value`` when it is one of ``choices``."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name}={shown(value, 60)}; allowed: {' | '.join(map(str, choices))}")
    return value


def check_action(name: str, value: Any) -> int:
    """An action id as an ``int``: a Python or NumPy integer (or a 0-d integer array), not a
    bool, float or string. (The range and legality are the caller's to check.)"""
    action = as_int(value)
    if action is None:
        raise ValueError(f"{name}={shown(value, 60)} ({type(value).__name__}); allowed: an integer action id")
    return action


def is_decimal(text: Any) -> bool:
    """Is ``text`` a whole number as the project writes one: ASCII digits without a leading
    zero (``str.isdigit`` also takes '²' and other scripts' digits, and ``int`` reads '01')?"""
    return isinstance(text, str) and text.isascii() and text.isdigit() \
        and (text == "0" or not text.startswith("0"))


def nearest(word: str, choices: Sequence[str]) -> str | None:
    """The one of ``choices`` closest to ``word`` (``difflib``'s ratio of at least 0.75), or
    None: what an error's "did you mean" names, alike wherever a name was mistyped."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.75)
    return close[0] if close else None


def add_note(exc: BaseException, note: str) -> None:
    """Add ``note`` to ``exc``'s notes as Python 3.11's ``add_note`` keeps them (``__notes__``,
    a list), on Python 3.10 too, whose exceptions have no ``add_note``: a console script's
    one line shows each in brackets (``ono_env.apps.console``)."""
    notes = getattr(exc, "__notes__", None)
    if not isinstance(notes, list):
        notes = []
        setattr(exc, "__notes__", notes)   # noqa: B010 (Python 3.10 has no add_note)
    notes.append(note)


def notes_text(exc: BaseException) -> str:
    """``exc``'s notes as a one-line message ends with them: each in brackets after a space,
    its unprintable characters (a newline) shown as ``?``; a ``__notes__`` that is no list
    of text is left out."""
    notes = getattr(exc, "__notes__", None)
    if not isinstance(notes, list):
        return ""
    return "".join(f" ({printable(n)})" for n in notes if isinstance(n, str))


def plural(n: int, word: str) -> str:
    """``n`` and ``word``, an s added but for one: "1 agent", "2 agents"."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def first_few(items: Sequence[str], few: int = 5) -> str:
    """The first ``few`` of ``items`` joined by commas, and how many more: a message that
    names what was wrong stays short however many things were (before: every unknown key of
    a position was listed, megabytes for a crafted one)."""
    more = f" and {len(items) - few:,} more" if len(items) > few else ""
    return ", ".join(items[:few]) + more


def shown(value: Any, limit: int = 20) -> str:
    """``repr(value)`` for a message, at most ``limit`` characters: a longer one is cut and
    ends in "..." (``f"{x!r:.20}"`` cuts without a mark, and a cut number reads as another
    number). An integer of more digits than fit is told by its sign and digit count (its
    ``repr`` would be thousands of characters, or Python's error past its digits limit); a
    value whose ``repr`` fails (an integer past that limit inside a list, nesting past the
    recursion limit, a class's own ``__repr__`` that raises) by its type."""
    if is_int(value):
        v = int(value)
        sign = "a negative" if v < 0 else "an"
        try:
            digits = len(str(abs(v)))
        except ValueError:   # past Python's digits limit (sys.get_int_max_str_digits)
            return f"<{sign} integer of over {sys.get_int_max_str_digits():,} digits>"
        if digits + (v < 0) > limit:
            return f"<{sign} integer of {digits:,} digits>"
        if not isinstance(value, int):   # a NumPy integer: its value (its repr's type cut it)
            return str(v)
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - any: the message names the value, not its repr's error
        return f"<a value of type {cut(type(value).__name__, limit)} that cannot be shown>"
    return cut(text, limit)


def cut(text: str, limit: int) -> str:
    """``text`` as it is, or cut to ``limit`` characters ending in "..." where it is longer."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def nesting(value: Any) -> int:
    """How deep lists and dicts nest in ``value`` (0 for anything else), level by level
    rather than by recursion, so that a value nested past Python's recursion limit (which
    ``json.loads`` reads, and ``copy.deepcopy`` then fails on) is measured too."""
    deepest, level = 0, [value]
    while True:
        inner = [x for x in level if isinstance(x, (dict, list))]
        if not inner:
            return deepest
        deepest += 1
        level = [v for x in inner for v in (x.values() if isinstance(x, dict) else x)]


MAX_PATH_SHOWN = 4_200
"""The most characters of a path a message shows: PATH_MAX (4,096) and room to spare; no
longer path is one the system takes."""


def path_text(path: Any) -> str:
    """A path as a message shows it: quoted, whole up to :data:`MAX_PATH_SHOWN` characters
    and cut with "..." past them (before: a 5,000-character argument made a 5,000-character
    line)."""
    return shown(str(path), MAX_PATH_SHOWN)


def printable(text: str) -> str:
    """``text`` with every character that is not printable (a newline, a tab, a control
    character a file name may hold) shown as ``?``: a label on one line of a table or CSV."""
    return "".join(c if c.isprintable() else "?" for c in text)


def check_rng(name: str, value: Any) -> np.random.Generator:
    """``value`` when it is a NumPy ``Generator`` (the project's one kind of randomness)."""
    if not isinstance(value, np.random.Generator):
        raise ValueError(f"{name} is a {type(value).__name__}; allowed: a numpy.random.Generator "
                         f"(np.random.default_rng(seed))")
    return value


def as_array(value: Any) -> np.ndarray:
    """``np.asarray(value)``, except that a list or tuple holding a bool among its integers
    comes back as a bool array, which the callers refuse as holding no integers:
    ``np.asarray([True, 0])`` is the integers ``[1, 0]``, so a bool was read as action, seat
    or game 1 (a bool array alone was refused)."""
    a = np.asarray(value)
    if isinstance(value, (list, tuple)) and a.dtype.kind in "iu" and any(
            isinstance(v, (bool, np.bool_)) for v in value):
        return a.astype(np.bool_)
    return a


def check_rows(name: str, rows: Any, num_games: int) -> np.ndarray:
    """Game indices ``rows`` as a contiguous ``(R,) int64`` array, when they are a 1-D array
    (or sequence) of integers, not bools, from 0 to ``num_games - 1``: compiled code reads
    the games at these indices unchecked."""
    a = as_array(rows)
    allowed = f"a 1-D integer array of game indices 0 to {num_games - 1}"
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise ValueError(f"{name} is {a.dtype} {a.shape}; allowed: {allowed}")
    if a.size and (a.min() < 0 or a.max() >= num_games):
        bad = a[(a < 0) | (a >= num_games)][:3].tolist()
        raise ValueError(f"{name} holds {bad}; allowed: {allowed}")
    return np.ascontiguousarray(a, dtype=np.int64)


def check_learner_seat(value: Any, num_players: int) -> int | str:
    """The learner's seat of an environment: ``"random"`` (a new seat every episode, drawn
    from the environment's seeded generator) or a seat number."""
    if isinstance(value, str) and value == "random":   # (an array's == is no bool)
        return value
    if not is_int(value) or not 0 <= value < num_players:
        raise ValueError(f"learner_seat={shown(value, 60)}; allowed: 'random' or a seat from 0 to "
                         f"{num_players - 1}")
    return int(value)


MAX_TEXT = 200
"""The longest text a client or a file may give for a label, name or source."""


def check_text(name: str, value: Any, max_len: int = MAX_TEXT) -> str:
    """``value`` if it is text of 1 to ``max_len`` characters that UTF-8 can encode (no lone
    surrogate such as JSON's ``"\\ud800"``), printable; else one ``ValueError`` naming
    ``name`` and what is allowed. The one check for every label, name and source a client
    or a file gives, so that whatever is stored can be written back out."""
    allowed = f"allowed: text of 1 to {max_len} printable characters"
    if not isinstance(value, str):
        raise ValueError(f"{name} = {shown(value, 60)} ({type(value).__name__}); {allowed}")
    if not value or len(value) > max_len:
        raise ValueError(f"{name} is {len(value):,} characters long; {allowed}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{name} = {shown(value, 60)} holds a character UTF-8 cannot encode (a lone "
                         f"surrogate); {allowed}") from None
    if not value.isprintable():   # named: a no-break or zero-width space is no control character
        import unicodedata

        bad = next(c for c in value if not c.isprintable())
        kind = unicodedata.category(bad)   # a character with no name says what kind it is
        what = unicodedata.name(bad, "").lower() or {
            "Cc": "a control character", "Co": "a private-use character",
            "Cn": "an unassigned code point", "Cs": "a surrogate"}.get(kind, f"category {kind}")
        raise ValueError(f"{name} = {shown(value, 60)} holds U+{ord(bad):04X} ({what}), which is "
                         f"not printable; {allowed}")
    return value


def is_name(value: Any) -> bool:
    """Is ``value`` a name an agent or a pool member may go by: text of 1 to
    :data:`MAX_TEXT` printable characters (no newline or terminal escape, which would break
    the one-line tables and messages that name it), without spaces at its ends?"""
    return (isinstance(value, str) and 0 < len(value) <= MAX_TEXT and value.isprintable()
            and value == value.strip())


def is_u64_text(value: Any) -> bool:
    """A decimal string of an integer 0 to 2**64 - 1 as the files write a 64-bit generator
    state or seed: ASCII digits only (``str.isdigit`` takes other scripts' digits and '²'),
    no sign, spaces or leading zeros."""
    return (isinstance(value, str) and re.fullmatch(r"0|[1-9][0-9]{0,19}", value) is not None
            and int(value) < 2**64)


def is_sha256(value: Any) -> bool:
    """Is ``value`` a SHA-256 digest as the project writes it: 64 lowercase hex digits?"""
    return (isinstance(value, str) and len(value) == 64
            and all(c in "0123456789abcdef" for c in value))


ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}"
                      r"(\.[0-9]{3}|\.[0-9]{6})?)?([+-][0-9]{2}:[0-9]{2})?)?")
"""The ISO dates a file's ``saved_at`` may be (a model's, a replay's; the writers'
``2026-11-22T10:00:00`` among them): the forms Python 3.10's ``datetime.fromisoformat``
reads, so that a file loads under every Python the project supports (3.11's reads more, ``Z``
among them)."""


def is_iso_date(value: Any) -> bool:
    """Is ``value`` text that reads as an ISO date (:data:`ISO_DATE`, a real day and time)?"""
    if not isinstance(value, str) or not ISO_DATE.fullmatch(value):
        return False
    try:
        _dt.datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def no_file(path: Path) -> str:
    """Why nothing can be read at ``path``, which does not exist: a symbolic link that leads
    to no file (a loop, or its target is gone), or no such file (before: "no such file" for a
    link in a loop too)."""
    return ("a symbolic link that leads to no file (a loop, or its target is gone)"
            if path.is_symlink() else "no such file")


def _unreachable(p: Path, exc: OSError) -> str:
    """Why ``p`` cannot be reached, from the ``OSError`` of looking at it: :func:`no_file`'s
    words where it does not exist or is itself a link in a loop, a link in a loop on its way
    there, else the system's words."""
    if isinstance(exc, FileNotFoundError) or (exc.errno == errno.ELOOP and p.is_symlink()):
        return no_file(p)
    if exc.errno == errno.ELOOP:   # a folder on its path: 'a/x' with a -> b -> a
        return "a symbolic link on its path leads round in a loop"
    if isinstance(exc, FileExistsError):   # a folder on its path a link to nothing
        gone = [q for q in (p, *p.parents) if q.is_symlink() and not q.exists()]
        if gone:   # (before: "File exists")
            return f"{str(gone[0])!r} on its path is {no_file(gone[0])}"
    return str(exc.strerror or exc)


def as_path(path: Any, what: str, kind: str = "file") -> Path:
    """``path`` as a ``Path`` when it is text or a path object, neither empty nor only
    spaces, with no NUL character (no system's path holds one); else one ``ValueError``
    naming ``what`` (before, a NUL gave Python's bare "embedded null byte", naming no file).
    ``kind``: what the path should name, for the message ("file", "folder", "file or
    folder")."""
    # spaces alone (before: --out ' ' made a folder named " ")
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ValueError(f"{what}: a {kind} path is needed; got {shown(path, 60)}")
    if "\x00" in str(path):
        raise ValueError(f"{what}: the path {path_text(path)} holds a NUL character; "
                         f"allowed: a {kind} path without one")
    return Path(path)


def check_input_file(path: Any, what: str, max_bytes: int) -> Path:
    """``path`` as a ``Path`` if it names a regular file of at most ``max_bytes`` bytes; else
    one ``ValueError`` naming the file and what is wrong. A folder, FIFO, device or socket is
    never opened (reading one could block for ever or never end)."""
    p = as_path(path, what)
    try:
        st = p.stat()
    except OSError as exc:   # a link in a loop too (before: "Too many levels of symbolic links")
        raise ValueError(f"cannot read {what} {path_text(p)}: {_unreachable(p, exc)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValueError(f"cannot read {what} {path_text(p)}: it is a folder")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"cannot read {what} {path_text(p)}: not a regular file (a FIFO, device or "
                         f"socket is never read)")
    if st.st_size > max_bytes:
        raise ValueError(f"cannot read {what} {path_text(p)}: {st.st_size:,} bytes; at most "
                         f"{max_bytes:,}")
    return p


def check_write_path(path: Any, what: str) -> Path:
    """``path`` as a ``Path`` where a file may be written, an existing one replaced (a
    replay's or a model's :func:`write_whole`): text naming no folder, in a folder that
    exists or was just made (:func:`check_output_dir`); else one ``ValueError`` naming
    ``what`` (a name too long for the system included)."""
    p = as_path(path, what)
    text = str(path)
    if text.endswith((os.sep, os.altsep or os.sep)):   # before: "y/" wrote a file named "y"
        raise ValueError(f"{what}: {shown(text, 200)} names a folder (it ends with "
                         f"{text[-1]!r}); give a file name")
    try:
        folder = p.is_dir()
    except OSError as exc:   # a name too long, ...
        raise ValueError(f"{what}: cannot write the file {path_text(p)}: "
                         f"{exc.strerror or exc}") from None
    if folder:
        raise ValueError(f"{what}: {path_text(p)} is a folder; give a file name")
    check_output_dir(p.parent, what)
    return p


def check_output_file(path: Any, what: str) -> Path:
    """``path`` as a ``Path`` once a new file can be written there: its folder exists or was
    just made (:func:`check_output_dir`), nothing is at the path yet, and a file of that name
    could be created (one is made and removed again: a name too long, a read-only place are
    found now, not after the work); else one ``ValueError`` naming ``what`` and the reason.
    An existing file is refused rather than replaced, so no earlier result is lost."""
    p = check_write_path(path, what)   # text, no folder; its folder made where missing
    if p.exists() or p.is_symlink():
        raise ValueError(f"{what}: {path_text(p)} already exists; give a new file name")
    try:
        with open(p, "x"):
            pass
        p.unlink()
    except OSError as exc:
        raise ValueError(f"{what}: cannot write the file {path_text(p)}: "
                         f"{exc.strerror or exc}") from None
    return p


MADE_DIRS: list[Path] = []
"""The folders :func:`check_output_dir` created in this process, in the order made: a console
script whose run is refused after that check removes those still empty
(:func:`remove_made_dirs`), so that a refused run leaves no folder behind."""


def remove_made_dirs(since: int = 0) -> None:
    """Remove the folders :func:`check_output_dir` made that are still empty, deepest first
    (a folder that holds anything is kept), and forget them all; ``since``: only those made
    after the first ``since`` of :data:`MADE_DIRS` (a library call's own, :func:`made_dirs_kept_on_success`)."""
    for p in reversed(MADE_DIRS[since:]):
        try:
            p.rmdir()
        except OSError:
            pass
    del MADE_DIRS[since:]


@contextlib.contextmanager
def made_dirs_kept_on_success() -> Any:
    """A library call's refusal leaves no folder behind, as a console script's does: the
    folders made inside the block are removed again (those still empty) when it raises."""
    since = len(MADE_DIRS)
    try:
        yield
    except BaseException:
        remove_made_dirs(since)
        raise


def check_output_dir(path: Any, what: str) -> Path:
    """``path`` as a ``Path`` once it is a folder that exists or was just created (with its
    parents) and takes a file (one is made and removed there, once per folder in a process),
    so that work is never done before its output has somewhere to go; else one
    ``ValueError`` naming ``what`` and the reason, and the folders it made removed again.
    The folders it creates are listed in :data:`MADE_DIRS`."""
    p = as_path(path, what, "folder")
    missing = []
    try:   # a name too long for the system: its OSError from exists() too (before: raw)
        if p.is_symlink() and not p.exists():   # before: "cannot create the folder: File exists"
            raise ValueError(f"{what}: {path_text(p)} is a symbolic link that leads to no folder (a "
                             f"loop, or its target is gone); allowed: a folder, or a new name")
        if p.exists() and not p.is_dir():
            raise ValueError(f"{what}: {path_text(p)} exists and is not a folder")
        at = p.absolute()
        while not at.exists() and at != at.parent:
            missing.append(at)
            at = at.parent
        p.mkdir(parents=True, exist_ok=True)
        MADE_DIRS.extend(reversed(missing))
    except OSError as exc:
        for made in missing:   # the parents made before the failure go again, deepest first
            try:
                made.rmdir()
            except OSError:
                pass
        raise ValueError(f"{what}: cannot create the folder {shown(str(p), 200)}: "
                         f"{_unreachable(p, exc)}") from None
    if p.absolute() in _WRITABLE:
        return p
    try:   # a file made and removed: os.access says yes to folders of /sys and /proc, and
        # knows nothing of quotas or ACLs (before: refused only after the work, at its end)
        import tempfile

        fd, probe = tempfile.mkstemp(dir=p, prefix=".ono-write-check-")
    except OSError as exc:
        remove_made_dirs(len(MADE_DIRS) - len(missing))   # the folders made for it go again
        raise ValueError(f"{what}: cannot write into the folder {path_text(p)} "
                         f"({exc.strerror or exc})") from None
    os.close(fd)
    with contextlib.suppress(OSError):   # made, so the folder is writable
        os.unlink(probe)
    _WRITABLE.add(p.absolute())
    return p


_WRITABLE: set[Path] = set()
"""The folders :func:`check_output_dir` has written a file into in this process: each is
tried once (a replay a file, up to 10,000 of them, into one folder), not at every write."""


def check_act_obs(agent: Any, obs: Any, rng: Any, *, needs_rng: bool = True) -> None:
    """``ValueError`` unless ``obs`` is a NumPy array of finite floats and ``rng`` a NumPy
    ``Generator``, as ``act`` takes them (its shape is the agent's own check; ``needs_rng``
    False: a method that draws nothing, ``rng`` unread). Before, an agent's ``act`` read bool
    observations as numbers, played on through NaN, and gave an ``AttributeError`` for a
    list or a missing generator."""
    if type(obs) is not np.ndarray or obs.dtype.kind != "f":
        # (a subclass too: a masked array's sum leaves out its masked NaN, a matrix is 2-D)
        what = (f"{obs.dtype} {obs.shape}" if type(obs) is np.ndarray
                else type(obs).__name__)
        raise ValueError(f"{agent!r}: observations are {what}; allowed: a (B, D) NumPy array of "
                         f"floats (float32, as the environments give them; not a masked array "
                         f"or a matrix)")
    # the sum first: one pass and no array made (act runs at every opponent step); a NaN or
    # an inf makes it non-finite, and float32 values cannot overflow a float64 sum
    if not np.isfinite(obs.sum(dtype=np.float64)):
        raise ValueError(f"{agent!r}: observations hold values that are not finite (NaN or "
                         f"inf); allowed: finite numbers")
    if needs_rng:
        check_rng(f"{agent!r}: rng", rng)


def check_act_mask(agent: Any, obs: np.ndarray, mask: np.ndarray, num_actions: int) -> None:
    """``ValueError`` unless ``mask`` fits ``obs``: a ``(B, num_actions)`` array of bools or
    integers 0/1, one row for each of the ``B`` observations. The project's agents check this in
    ``act``: the driver always passes such masks, but a call of ``act`` by hand may not, and
    a mask of one row would otherwise be broadcast over every observation. (A row with
    nothing legal, a finished game's, is not refused: its action is not played.)"""
    if (type(mask) is not np.ndarray or mask.shape != (len(obs), num_actions)
            or mask.dtype.kind not in "biu"):
        what = f"{mask.dtype} {mask.shape}" if type(mask) is np.ndarray else type(mask).__name__
        raise ValueError(f"{agent!r}: mask is {what}; allowed: a ({len(obs)}, {num_actions}) "
                         f"array of bools or integers 0/1, a row for each observation")
    if mask.dtype.kind != "b" and mask.size and (mask.min() < 0 or mask.max() > 1):
        raise ValueError(f"{agent!r}: mask holds values from {mask.min()} to {mask.max()}; "
                         f"allowed: bools or integers 0/1")


def write_whole(path: Path, data: bytes, what: str, *, new: bool = False) -> Path:
    """Write ``data`` to ``path`` through a temporary file, then renamed (or, ``new``,
    linked): a reader (or a run killed while it writes) sees the old file or the new one,
    never a part (but for ``new`` on a file system without hard links, below). A file replaced
    keeps its permissions, and a symbolic link at ``path`` keeps pointing at the file, which
    is the one written (as a plain write would do); a folder, FIFO, device or socket at
    ``path`` (or where its link leads) is refused, never replaced. ``what`` names the file in
    the error (``ValueError``) a failed write gives.

    ``new``: ``path`` must still be free, as the run's checks found it (an output that is
    never replaced): the temporary file is linked there (``os.link`` fails where anything
    is at the path), so a file that appeared since, another run writing into the same
    folder, is kept and this write refused (before: the later run replaced it)."""
    target = (Path(path) if new or not os.path.islink(path)
              else Path(os.path.realpath(path)))
    # a temporary name of its own (a user's "<name>.tmp" beside it is never touched), made
    # new (O_EXCL) with the mode a plain write gives (0666 less the umask; tempfile's 0600
    # would hide the file from the other users of a shared folder), or the replaced file's
    tmp = target.with_name(f".ono-{secrets.token_hex(6)}.tmp")   # short: any name fits
    try:
        try:
            st = target.stat()
        except FileNotFoundError:
            mode: int | None = None
        else:   # only a regular file is replaced (before: a FIFO or a device, /dev/null
            # as root, became a regular file, for every user of the system)
            if stat.S_ISDIR(st.st_mode):
                raise ValueError(f"cannot write {what} {path_text(path)}: it is a folder")
            if not stat.S_ISREG(st.st_mode):
                raise ValueError(f"cannot write {what} {path_text(path)}: not a regular file (a "
                                 f"FIFO, device or socket is never replaced); allowed: a "
                                 f"regular file's path, or a new one")
            mode = stat.S_IMODE(st.st_mode)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
        if new:
            _link_new(tmp, target, what)
            with contextlib.suppress(OSError):   # written: a stray name is no failed write
                tmp.unlink()
        else:
            os.replace(tmp, target)
    except BaseException as exc:   # a Ctrl-C mid-write too
        tmp.unlink(missing_ok=True)   # no stray temporary file is left behind
        if not isinstance(exc, OSError):
            raise
        raise ValueError(f"cannot write {what} {path_text(path)}: {exc.strerror or exc}") from None
    return path


def _link_new(tmp: Path, target: Path, what: str) -> None:
    """``tmp``'s file also at ``target``, which must be free: ``os.link``, or where the file
    system has no links an exclusive create and a copy (not atomic for readers; still never
    a replacement)."""
    try:
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise
        except OSError:   # no hard links here (some network and FAT file systems)
            with open(target, "xb") as out:
                try:
                    with open(tmp, "rb") as src:
                        shutil.copyfileobj(src, out)
                except BaseException:   # no part of a file is left at target
                    out.close()
                    target.unlink(missing_ok=True)
                    raise
    except FileExistsError:
        raise ValueError(f"cannot write {what} {str(target)!r}: a file appeared there during "
                         f"the run (another run writing into the same place?); it is kept, "
                         f"never replaced") from None


def missing_extra(exc: ImportError, module: str, library: str, extra: str) -> ModuleNotFoundError:
    """The error of ``module`` (an adapter) imported without ``library``, which the package's
    ``extra`` installs: it names the extra, and keeps the missing top-level module's name
    (the console scripts name the extra by it). Before, Python's "No module named ..." alone."""
    missing = (exc.name or library).split(".")[0]
    return ModuleNotFoundError(f"{module} needs {missing}, which is not installed: pip install "
                               f"'ono-env[{extra}]'", name=missing)
