"""Lint and type check: ruff (pyproject.toml [tool.ruff]) over the whole repository (the
package, tests, benchmarks, docs' examples, the notebook) and mypy through .ci/typecheck
([tool.mypy]) over the package, each with zero findings.

They run here, after the suite's install (pip install -e ".[test]", whose lint extra brings
ruff, mypy and the stubs), so that mypy sees the installed libraries. Where ruff or mypy is
missing they skip, unless ONO_REQUIRE_LINT=1 (CI: .ci/run), where they fail."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _need(tool: str, found: bool) -> None:
    if not found:
        if os.environ.get("ONO_REQUIRE_LINT") == "1":
            pytest.fail(f"{tool} is not installed (pip install -e '.[lint]')")
        pytest.skip(f"{tool} is not installed (pip install -e '.[lint]')")


def _run(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_ruff() -> None:
    ruff = shutil.which("ruff")
    _need("ruff", ruff is not None)
    r = _run([str(ruff), "check", "."], 300)   # the whole repository: package, tests, scripts
    assert r.returncode == 0, f"ruff check .:\n{r.stdout}{r.stderr}"


def test_mypy() -> None:
    _need("mypy", importlib.util.find_spec("mypy") is not None)
    env_python = os.path.dirname(sys.executable)
    r = subprocess.run(["bash", str(ROOT / ".ci" / "typecheck")], cwd=ROOT, capture_output=True,
                       text=True, timeout=900,
                       env={**os.environ, "PATH": env_python + os.pathsep + os.environ["PATH"]})
    assert r.returncode == 0, f"bash .ci/typecheck:\n{r.stdout}{r.stderr}"
