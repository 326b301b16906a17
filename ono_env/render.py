"""Text rendering of a game, in the card names of ono_env.cards, optionally with ANSI colours."""

from __future__ import annotations

from collections.abc import Sequence

from ono_env import cards as C
from ono_env.game import VecGame

_ANSI = {"R": "\x1b[31m", "Y": "\x1b[33m", "G": "\x1b[32m", "B": "\x1b[34m", "W": "\x1b[1m"}
_RESET = "\x1b[0m"


def color_card(name: str, ansi: bool) -> str:
    """A card name, wrapped in its ANSI colour when ``ansi``."""
    if not ansi:
        return name
    return f"{_ANSI.get(name[0], '')}{name}{_RESET}"


def render_text(
    game: VecGame,
    i: int = 0,
    *,
    seat: int | None = None,
    ansi: bool = False,
    history: Sequence[str] = (),
) -> str:
    """Game ``i`` as a small table.

    ``seat=None`` shows every hand (a spectator who sees all); a seat number shows that
    seat's hand and only the sizes of the others. ``history`` lines (e.g. "P1: play R5")
    are appended under "last actions"."""
    d = game.to_dict(i)
    n = len(d["hands"])
    top = d["discard"][-1]
    color = d["color"] or "-"
    arrow = "clockwise" if d["direction"] == 1 else "counter-clockwise"
    lines = [
        f"top {color_card(top, ansi)}  colour {color_card(color, ansi) if color != '-' else '-'}"
        f"  direction {arrow}  stock {len(d['stock'])}  discard {len(d['discard'])}",
    ]
    if d["pending_draw"]:
        lines.append(f"pending draw: {d['pending_draw']}")
    if d["rules"]["target_score"]:
        lines.append("scores: " + "  ".join(f"P{q} {sc}" for q, sc in enumerate(d["scores"])))
    for q in range(n):
        mark = ">" if q == d["current_player"] and not (d["terminated"] or d["truncated"]) else " "
        tags = []
        if q == d["dealer"]:
            tags.append("dealer")
        if d["called"][q]:
            tags.append("ONO!")
        tag = f" ({', '.join(tags)})" if tags else ""
        hand = d["hands"][q]
        if seat is None or q == seat:
            cards = " ".join(color_card(c, ansi) for c in hand)
            lines.append(f"{mark} P{q}{tag} [{len(hand)}]: {cards}")
        else:
            lines.append(f"{mark} P{q}{tag} [{len(hand)} cards]")
    if d["terminated"] or d["truncated"]:
        end = "truncated" if d["truncated"] else f"winner P{d['winner']}"
        lines.append(f"game over: {end}")
    else:
        lines.append(f"P{d['current_player']} to act ({d['phase']})"
                     + (f", drew {d['drawn_card']}" if d["drawn_card"] and
                        (seat is None or seat == d["current_player"]) else ""))
    if history:
        lines.append("last actions: " + " | ".join(history))
    return "\n".join(lines)


def describe_action(player: int, action: int) -> str:
    """``"P2: play W+4 G"``."""
    return f"P{player}: {C.action_name(action)}"
