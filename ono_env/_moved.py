"""The module paths of ono_env 0.2, which moved in 0.3 when the package was grouped by layer.

Each old path keeps working until 0.4: importing it warns once with a
``DeprecationWarning`` naming the new path and gives the module at the new path (the same
module object, so classes compare equal and pickles that name an old path, such as an RLlib
checkpoint's env class, still load).

Written as an import hook rather than a file per old path so that the package's folders show
only today's layout; the hook is ``importlib``'s documented finder/loader protocol.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType

MOVED = {
    "ono_env.ono_v0": "ono_env.envs.ono_v0",
    "ono_env.gym_env": "ono_env.envs.gym_env",
    "ono_env.gym_vector": "ono_env.envs.gym_vector",
    "ono_env.sb3": "ono_env.envs.sb3",
    "ono_env.rllib_env": "ono_env.envs.rllib_env",
    "ono_env.learner_batch": "ono_env.envs.learner_batch",
    "ono_env.opponents": "ono_env.envs.opponents",
    "ono_env.driver": "ono_env.agents.driver",
    "ono_env._baselines": "ono_env.agents._baselines",
    "ono_env._search": "ono_env.agents._search",
    "ono_env.cli": "ono_env.apps.console",
    "ono_env.demo": "ono_env.apps.demo",
    "ono_env.play": "ono_env.apps.play",
    "ono_env.arena_cli": "ono_env.apps.arena_cli",
    "ono_env.web": "ono_env.apps.web",
}
"""Old module path -> new module path (a moved package's submodules move with it)."""

REMOVED_IN = "0.4"


def new_name(old: str) -> str | None:
    """The new path of the old module path ``old`` (or of a submodule of a moved package);
    None when it did not move."""
    for before, after in MOVED.items():
        if old == before or old.startswith(before + "."):
            return after + old[len(before):]
    return None


class _Loader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None   # a placeholder; exec_module puts the real module in its place

    def exec_module(self, module: ModuleType) -> None:
        warnings.warn(f"{module.__name__} moved to {self.new}; the old path is removed in "
                      f"ono_env {REMOVED_IN}", DeprecationWarning, stacklevel=2)
        # the import statement returns what sys.modules holds under the old name
        sys.modules[module.__name__] = importlib.import_module(self.new)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: object = None,
                  target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(new))


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
