"""Helpers that build positions the way a rules test reads: hands, the discard pile, and the
cards on top of the stock; every other card of the deck goes under them in the stock.

Property tests draw the same examples on every run (``derandomize``) and keep no example
database in the working tree: the suite is as reproducible as the rest of the project."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import settings

from ono_env import VecGame, action_id
from ono_env.cards import CARD_IDS, CARD_NAMES, COLORS
from ono_env.rules import RuleSet

settings.register_profile("ono", derandomize=True, database=None)
settings.load_profile("ono")


@pytest.fixture(autouse=True, scope="session")
def _sb3_logs_in_a_temporary_folder(tmp_path_factory):
    """Stable-Baselines3's ``learn`` without a logger makes a folder ``SB3-<date>`` in the
    system's temporary folder (or ``$SB3_LOGDIR``): the suite's go to pytest's own, which
    pytest cleans up, instead of one left in /tmp by every run."""
    import os
    before = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3-logs"))
    yield
    if before is None:
        os.environ.pop("SB3_LOGDIR", None)
    else:
        os.environ["SB3_LOGDIR"] = before


def make_position(
    rules: RuleSet,
    hands: Sequence[Sequence[str]],
    discard: Sequence[str],
    *,
    color: str | None = None,
    current: int = 0,
    stock_top: Sequence[str] = (),
    stock_rest: bool = True,
    **fields: Any,
) -> dict[str, Any]:
    """A position dict with every key: a fresh turn of ``current`` unless ``fields`` say
    otherwise (they overwrite keys). ``stock_top[0]`` is the next card drawn; with
    ``stock_rest`` the rest of the deck lies under it (in card-id order), otherwise the rest
    must be in the hands."""
    deck = Counter({CARD_NAMES[c]: int(n) for c, n in enumerate(rules.deck_counts) if n})
    used = Counter([c for h in hands for c in h]) + Counter(discard) + Counter(stock_top)
    over = used - deck
    assert not over, f"more copies than the deck has: {dict(over)}"
    rest = sorted((deck - used).elements(), key=lambda n: CARD_IDS[n])
    if not stock_rest:
        assert not rest, f"cards left over: {rest}"
    stock = (rest if stock_rest else []) + list(reversed(stock_top))
    if color is None:
        top = discard[-1]
        color = top[0] if top[0] in COLORS and not top.startswith("W") else None
    phase = fields.get("phase", "play")
    P = rules.num_players
    pos = {  # every key of a position (ono_env.positions.POSITION_KEYS)
        "version": 1,
        "rules": rules.to_dict(),
        "hands": [list(h) for h in hands],
        "stock": stock,
        "discard": list(discard),
        "color": color,
        "current_player": current,
        "direction": 1,
        "phase": phase,
        "pending_draw": 0,
        "drawn_card": None,
        "called": [False] * P,
        "exposed": None,
        "previous_player": None,
        # a turn begins fresh in phase play or pending; a colour or target is chosen after a
        # play (a first-card wild's colour at the fresh start: pass turn_fresh=True)
        "turn_fresh": phase in ("play", "pending") or bool(fields.get("color_then_play")),
        "wild_draw_four_bluff": False,
        "color_then_play": False,
        "scores": [0] * P,
        "dealer": 0,
        "round": 0,
        "decisions": 0,
        "winner": None,
        "terminated": False,
        "truncated": False,
        "rng": "12345",
    }
    pos.update(fields)
    return pos


def game_at(rules: RuleSet, hands, discard, **kw) -> VecGame:
    opts = {k: kw.pop(k) for k in ("skip_forced", "max_decisions", "reward") if k in kw}
    return VecGame.from_dict(make_position(rules, hands, discard, **kw), **opts)


def act(game: VecGame, *names: str):
    """Game 0's acting player takes each named action in turn; returns the last StepResult."""
    result = None
    for name in names:
        result = game.step(np.array([action_id(name)]))
    return result


def legal(game: VecGame) -> list[str]:
    return game.legal_action_names(0)


def hand(game: VecGame, seat: int) -> list[str]:
    return game.to_dict(0)["hands"][seat]


def random_playout(game: VecGame, steps: int, seed: int, record: bool = False):
    """Random legal play of every game for ``steps`` steps (finished games reset); returns the
    list of to_dict(0) snapshots when ``record``."""
    rng = np.random.default_rng(seed)
    snaps = []
    for _ in range(steps):
        mask = game.legal_mask()
        u = rng.random(mask.shape)
        u[~mask] = -1
        game.step(np.argmax(u, 1))
        if record:
            snaps.append(game.to_dict(0))
        if game.finished.any():
            game.reset(which=game.finished)
    return snaps


@pytest.fixture
def classic3() -> RuleSet:
    return RuleSet.preset("classic", num_players=3)


@pytest.fixture
def search_turns(monkeypatch) -> list[str | None]:
    """The client address of every request of the browser table that reaches a client's
    search queue (``ClientTurns.turn``), in order."""
    from ono_env.apps.web import server

    turns: list[str | None] = []
    turn = server.ClientTurns.turn
    monkeypatch.setattr(server.ClientTurns, "turn",
                        lambda self, host: turns.append(host) or turn(self, host))
    return turns


@pytest.fixture
def resume_loads(monkeypatch) -> list[int]:
    """Checks every checkpoint the trainer resumes from: after its ``load_checkpoint`` the
    model holds the file's weights (both networks, and the opponent encoder where there is
    one) and Adam the state of the optimizer file beside it, one step count for every
    parameter. Returns the list of step counts loaded."""
    from ono_env.agents.learned import read_model
    from ono_env.train import ppo

    loaded: list[int] = []
    load = ppo.load_checkpoint

    def checked(model, opt, path, *args, **kwargs):
        steps = load(model, opt, path, *args, **kwargs)
        ours, theirs = model.policy_net(), read_model(path)[1]
        pairs = list(zip(ours.layers + (ours.value_layers or []),
                         theirs.layers + (theirs.value_layers or []), strict=True))
        assert (ours.encoder is None) == (theirs.encoder is None)
        if ours.encoder is not None:
            pairs.append((ours.encoder, theirs.encoder))
        for (w, b), (w2, b2) in pairs:
            np.testing.assert_array_equal(w, w2)
            np.testing.assert_array_equal(b, b2)
        assert ppo.optimizer_path(Path(path)).is_file()
        assert len(opt.state) == len(list(model.parameters()))
        (adam_steps,) = {int(v["step"]) for v in opt.state.values()}
        assert adam_steps > 0
        loaded.append(steps)
        return steps

    monkeypatch.setattr(ppo, "load_checkpoint", checked)
    return loaded


@pytest.fixture
def nan_loss(monkeypatch):
    """Every PPO update's loss is NaN (its entropy term): a run that diverges at its first
    update. (Before the loss weights were bounded at 100, a weight of 1e300 did it.)"""
    import torch

    from ono_env.train import ppo

    monkeypatch.setattr(ppo, "masked_entropy",
                        lambda logp_all, mask: torch.full((), float("nan")))
