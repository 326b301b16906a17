"""The quickstart notebook runs from top to bottom as it is shipped, so it never rots, and what
it shows is right: the final rewards of its game, a model file from its training run, the
arena's games, no warning and no file written into the repository."""

from __future__ import annotations

import ast
import json
import re
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "quickstart.ipynb"
ANSI = re.compile(r"\x1b\[[0-9;]*m")

# Run in the notebook's kernel after its last cell: the facts the assertions below check, read
# from the notebook's own variables, then its temporary run folder removed.
CHECK = r'''
import json, shutil, sys
from ono_env import _moved
from ono_env.agents import load_agent
facts = {
    "final_rewards": final_rewards,
    "num_players": rules.num_players,
    "rules": rules.name,
    "model": str(model),
    "model_bytes": model.stat().st_size if model.is_file() else 0,
    "model_in_run_dir": model.parent == run_dir,
    "model_loads": type(load_agent(model, rules)).__name__,
    "steps": result["steps"],
    "time_limit": cfg.time_limit_minutes,
    "deals": DEALS,
    "seatings": SEATINGS,
    "shares": shares,
    "table_games": len(table.records.length),
    "table_deals": table.deals,
    "table_mirrored": table.mirrored,
    "table_labels": table.labels,
    "old_modules": sorted(m for m in sys.modules if _moved.new_name(m)),
}
shutil.rmtree(run_dir.parent)
print("CHECK " + json.dumps(facts))
'''


def _text(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    saved = nbformat.read(NOTEBOOK, as_version=4)
    nb = nbformat.from_dict(json.loads(json.dumps(saved)))   # a copy to execute
    # a use of a module path that moved (ono_env.gym_env, ...) fails its cell
    nb.cells.insert(0, nbformat.v4.new_code_cell(
        "import warnings\nwarnings.filterwarnings('error', message=r'ono_env\\.\\S+ moved to ',"
        " category=DeprecationWarning)"))
    nb.cells.append(nbformat.v4.new_code_cell(CHECK))
    before = sorted(p.name for p in NOTEBOOK.parent.iterdir())
    tmp = tmp_path_factory.mktemp("kernel-tmp")   # the kernel's tempfile folder: no leftovers
    t0 = time.perf_counter()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(tmp))
        NotebookClient(nb, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    seconds = time.perf_counter() - t0
    after = sorted(p.name for p in NOTEBOOK.parent.iterdir())
    line = next(x for x in _text(nb.cells[-1]).splitlines() if x.startswith("CHECK "))
    return {"saved": saved, "nb": nb, "facts": json.loads(line[len("CHECK "):]),
            "seconds": seconds, "before": before, "after": after, "tmp": tmp}


def test_saved_without_outputs(executed):
    for cell in executed["saved"].cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]
            # public API only: no private attribute (env._cumulative_rewards, ...)
            assert not re.search(r"\._\w", cell.source), cell.source


def test_final_rewards(executed):
    facts = executed["facts"]
    n = facts["num_players"]
    assert facts["rules"] == "uno2018" and n == 4           # another rule set, four players
    rewards = facts["final_rewards"]
    assert sorted(rewards) == [f"player_{k}" for k in range(n)]
    # win reward: the winner +1, every other player -1/(N-1); they sum to 0
    assert sorted(round(r, 6) for r in rewards.values()) == [round(-1 / (n - 1), 6)] * (n - 1) + [1.0]
    assert abs(sum(rewards.values())) < 1e-6
    # what the reader sees: the printed line holds the same rewards, not {} or zeros
    printed = "\n".join(_text(c) for c in executed["nb"].cells)
    shown = ast.literal_eval(re.search(r"^final rewards: (\{.*\})$", printed, re.M).group(1))
    assert shown == {a: round(r, 4) for a, r in rewards.items()}
    assert "the rewards sum to 0: True" in printed
    assert "agents left in the env: []" in printed


def test_training_made_a_model(executed):
    facts = executed["facts"]
    assert facts["model_bytes"] > 10_000 and facts["model_in_run_dir"]
    assert facts["model_loads"] == "LearnedAgent"            # loads under uno2018 at 4 players
    # no time limit: the learning rate decays by steps alone, so the seed fixes the weights
    # (before: a 0.75-minute limit decayed it by the clock too, and two runs differed)
    assert facts["time_limit"] is None and facts["steps"] == 491_520
    assert Path(facts["model"]).is_relative_to(executed["tmp"])   # under the temporary folder
    assert not Path(facts["model"]).is_relative_to(NOTEBOOK.parent.parent)   # never in the repo


def test_arena_played_the_mirrored_games(executed):
    facts = executed["facts"]
    games = facts["deals"] * facts["seatings"]
    assert facts["seatings"] == 24
    assert set(facts["shares"]) == {"random", "greedy", "color", "defensive"}
    for opponent, share in facts["shares"].items():
        assert share["deals"] == facts["deals"] and share["games"] == games, opponent
        assert 0.0 <= share["low"] <= share["rate"] <= share["high"] <= 1.0, opponent
    # even a run of 131,072 steps wins about 90% against three random players
    assert facts["shares"]["random"]["low"] > 0.5
    assert facts["table_mirrored"] and facts["table_games"] == games
    assert facts["table_deals"] == facts["deals"]
    assert facts["table_labels"] == ["uno2018-4p", "greedy", "color", "defensive"]


def test_no_warnings_no_old_paths_no_files(executed):
    assert executed["facts"]["old_modules"] == []
    for cell in executed["nb"].cells:
        for out in cell.get("outputs", []):
            text = ANSI.sub("", out.get("text", ""))
            assert "warning" not in text.lower(), text
            assert out.output_type != "error"
    assert executed["after"] == executed["before"]            # nothing written next to it
    print(f"quickstart notebook executed in {executed['seconds']:.1f} s")
