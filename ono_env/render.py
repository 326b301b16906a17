"""Text rendering of a game, in the card names of ono_env.cards, optionally with ANSI colours."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ono_env import cards as C
from ono_env.checks import check_bool, is_int, plural, printable, shown
from ono_env.game import VecGame
from ono_env.positions import catch_succeeds, game_winners, need_position, won_on_lowest_total
from ono_env.rules import MAX_PLAYERS

_ANSI = {"R": "\x1b[31m", "Y": "\x1b[33m", "G": "\x1b[32m", "B": "\x1b[34m", "W": "\x1b[1m"}
_RESET = "\x1b[0m"


def color_card(name: str, ansi: bool) -> str:
    """A card name, wrapped in its ANSI colour when ``ansi``."""
    if not isinstance(name, str) or not name:   # before: an IndexError for ''
        raise ValueError(f"color_card: name={shown(name, 40)}; allowed: a card's name ('R5')")
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
    are appended under "last actions", on one line, each control character shown as ``?``.
    Each argument is checked (before: a text history was
    shown a character a line, ``ansi='no'`` coloured, and ``game=None`` an AttributeError)."""
    if not isinstance(game, VecGame):
        raise ValueError(f"game is a {type(game).__name__}; allowed: a VecGame")
    check_bool("ansi", ansi)
    if isinstance(history, (str, bytes)) or not isinstance(history, Sequence) \
            or not all(isinstance(line, str) for line in history):
        raise ValueError(f"history={shown(history, 40)}; allowed: a list of lines (text)")
    d = game.to_dict(i)
    n = len(d["hands"])
    if seat is not None and not (is_int(seat) and 0 <= seat < n):
        raise ValueError(f"seat={shown(seat, 40)} ({type(seat).__name__}); allowed: None (every hand "
                         f"shown) or a seat 0..{n - 1}")
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
        if (seat is None or q == seat) and hand:
            cards = " ".join(color_card(c, ansi) for c in hand)
            lines.append(f"{mark} P{q}{tag} [{len(hand)}]: {cards}")
        elif not hand:
            lines.append(f"{mark} P{q}{tag} [no cards]")
        else:
            lines.append(f"{mark} P{q}{tag} [{cards_text(len(hand))}]")
    if d["terminated"] or d["truncated"]:
        won = game_winners(d)
        lowest = won_on_lowest_total(d["rules"]["scoring"], d["rules"]["target_score"])
        end = ("truncated" if not won else f"winner P{won[0]}" + (
            " (the lowest total)" if lowest else "") if len(won) == 1 else
               f"winners {' '.join(f'P{q}' for q in won)} (tied on the lowest total)")
        lines.append(f"game over: {end}")
    else:
        lines.append(f"P{d['current_player']} to act ({d['phase']})"
                     + (f", drew {d['drawn_card']}" if d["drawn_card"] and
                        (seat is None or seat == d["current_player"]) else ""))
    if history:
        # a control character (a terminal's escape, a newline) shown as "?" (before: written)
        lines.append("last actions: " + " | ".join(printable(line) for line in history))
    return "\n".join(lines)


def _seat(player: Any, where: str, seats: int = MAX_PLAYERS) -> int:
    """``player`` when it is a seat of a table of ``seats`` players, else one ``ValueError``
    naming ``where`` (before: a seat of None or "a" was a TypeError inside, or written as
    "PNone", and seat 99 described events of no seat)."""
    if not is_int(player) or not 0 <= player < seats:
        raise ValueError(f"{where}: player={shown(player, 20)}; allowed: a seat, an integer "
                         f"from 0 to {seats - 1}")
    return int(player)


def describe_action(player: int, action: int) -> str:
    """``"P2: play W+4 G"``."""
    return f"P{_seat(player, 'describe_action')}: {C.action_name(action)}"


def cards_text(n: int) -> str:
    """``"1 card"``, ``"0 cards"``, ``"5 cards"``."""
    return plural(n, "card")


def _not_open(d: Mapping[str, Any], q: int) -> str:
    """Why seat ``q``, holding one card, is not open to a catch in position ``d``."""
    if d["called"][q]:
        return "called ONO! in time"
    # (not "did not go down to one card": a seat may have, then been handed a hand by a swap)
    return "is not open to a catch (only a seat that plays down to one card without calling is)"


def option_hint(action: int, d: dict, legal: Sequence[int] = ()) -> str:
    """What an option does, in a few words, for the acting seat of position ``d``
    (:meth:`~ono_env.game.VecGame.to_dict`) whose legal actions are ``legal``."""
    need_position(d, "option_hint: the position")
    name = C.action_name(action)
    r = d["rules"]
    p, prev, n = d["current_player"], d.get("previous_player"), len(d["hands"])
    if isinstance(legal, (str, bytes)) or not isinstance(legal, (Sequence, np.ndarray)) \
            or not all(is_int(a) for a in legal):   # before: a TypeError for None
        raise ValueError(f"option_hint: legal={shown(legal, 40)}; allowed: a sequence of action "
                         f"ids (the position's legal actions)")
    if name in ("catch", "challenge") and prev is None:   # before: written "PNone"
        raise ValueError(f"option_hint: {name!r} is no option at this position (no seat has "
                         f"played before it); allowed: one of its legal actions")
    if name == "catch":   # what a catch does too (before: only what a false one costs)
        if prev is not None and len(d["hands"][prev]) == 1 and not catch_succeeds(d, prev):
            # the one outcome there is (before: "caught, ...; if P2 holds more than one
            # card ...", where a seat that called, holding one card, was neither)
            return f"accuse P{prev} of not calling ONO!: no effect, as P{prev} {_not_open(d, prev)}"
        caught = (f"P{prev} draws {r['ono_penalty_cards']}" if r["ono_penalty"] == "draw"
                  else f"you swap hands with P{prev}")
        if r["false_catch_penalty"]:
            return (f"accuse P{prev} of not calling ONO!: caught, {caught}; if P{prev} holds "
                    f"more than one card you draw {r['false_catch_penalty']}")
        return f"P{prev} did not call ONO!: catch them ({caught})"
    if name == "call":
        return "call ONO! before you play your second-to-last card"
    if name == "challenge":
        return (f"if the Wild Draw Four was a bluff, P{prev} draws {d['pending_draw']}; if not, "
                f"you draw {d['pending_draw'] + 2}")
    if name == "accept":
        return f"draw {d['pending_draw']} and lose your turn"
    if name == "keep":
        return "keep the drawn card; your turn ends"
    if name == "draw":   # the engine draws on only for a hand with no playable card
        hand_plays = any(C.action_name(a).startswith("play") for a in legal)
        return ("draw until you can play" if r["draw_until_playable"] and not hand_plays
                else "draw a card")
    if name.startswith("play W+4") and r["wild_draw_four_restricted"] and r["challenge"]:
        colour = d["color"]   # a bluff: the engine's test (before: listed with no word)
        if colour in C.COLORS and any(c[0] == colour and not c.startswith("W")
                                      for c in d["hands"][p]):
            word = C.COLOR_WORDS[C.COLORS.index(colour)]
            return f"a bluff: you hold a {word} card; if challenged you draw the 4 instead"
        return ""
    if name.startswith("target"):
        q = (p + int(name.split(" ")[1])) % n
        return f"swap hands with P{q} ({cards_text(len(d['hands'][q]))})"
    return ""


def why_not_legal(name: str, position: dict | None, legal: Sequence[int] = ()) -> str:
    """Why the action ``name`` (``play R5``, ``draw``, ``target 2``) is not legal at
    ``position`` (:meth:`~ono_env.game.VecGame.to_dict`; ``legal``: its legal actions), in
    a few words in brackets after a space, or "" where the position does not say it plainly:
    the terminal game's and the browser table's refusals (before: the terminal's alone, and
    for a card only)."""
    if position is None:
        return ""
    phase, n, verb = position.get("phase"), len(position["hands"]), name.split(" ")[0]
    # the decision the phase asks for first, a play's refusal too (before: a play while a
    # colour was to be named had no reason, and the terminal's colour entry read "no colour
    # is to be named" while a target was to be chosen)
    if phase == "target" and verb == "target":   # a seat past the table
        return f" (the other players are target 1 to {n - 1}, counted from your left)"
    if phase == "color" and verb != "color":
        return " (name a colour first: color R, Y, G or B)"
    if phase == "target":
        return f" (choose the player to swap hands with first: target 1 to {n - 1})"
    if name.startswith("play "):
        return _why_not_play(name.split(" ")[1], position, legal)
    return _why_not_action(name, position, legal)


def _why_not_action(name: str, position: dict, legal: Sequence[int]) -> str:
    """Why an action other than a play is refused (before: "'draw' is not legal now", with
    no reason, where the rule set has no voluntary draw), once the phase's own decision is
    not what is missing (:func:`why_not_legal`): what the action needs under these rules.
    Else nothing."""
    phase, verb = position.get("phase"), name.split(" ")[0]
    if verb == "color":
        return " (no colour is to be named)"
    if verb == "target":
        return " (no player is to be chosen)"
    r, p = position.get("rules"), position["current_player"]
    if r is None:   # a part of a position: what its phase says, above
        return ""
    if verb in ("challenge", "accept") and phase != "pending":
        return " (no draw is pending)"
    if verb == "challenge":
        return (" (these rules have no challenge)" if not r["challenge"]
                else " (only a Wild Draw Four can be challenged)")
    if verb in ("call", "catch") and r["ono_penalty"] == "none":
        return " (these rules have no ONO! call)"
    if verb == "call":
        if position["called"][p]:
            return " (you have called already)"
        if len(position["hands"][p]) != 2:
            return " (only with two cards in hand, before you play one)"
        # two cards and no call yet: a call goes with a play, and none is legal (before: "only
        # with two cards in hand" to a player holding two)
        none = ("the drawn card cannot be played: keep it" if phase == "drawn" else
                f"{position['pending_draw']} cards to draw are pending: accept takes them"
                if phase == "pending" else "no card you hold can be played now")
        return f" (a call goes with the play of your second-to-last card, and {none})"
    if verb == "catch":
        who = "" if r["false_catch_penalty"] else ", who went down to one card without calling ONO!"
        return f" (only as the first decision of your turn, against the previous player{who})"
    if phase == "pending":
        return (f" ({position['pending_draw']} cards to draw are pending: accept takes "
                f"them)")
    must_play = phase == "drawn" and C.action_id("keep") not in legal   # must_play_drawn
    if verb == "keep":
        return (" (these rules make you play a drawn card you can play)" if must_play
                else " (only the card just drawn can be kept)")
    if verb == "draw" and phase == "drawn":
        return (" (you have drawn: these rules make you play the drawn card)" if must_play
                else " (you have drawn: play the drawn card or keep it)")
    if verb == "draw" and not r["voluntary_draw"]:
        return " (you hold a playable card, and these rules have no voluntary draw)"
    return ""


def _why_not_play(card: str, position: dict | None, legal: Sequence[int] = ()) -> str:
    """Why a play of ``card`` is refused, where the position says it plainly: ``" (you hold
    no R5)"``; after a draw, only the drawn card (where it may be played; else it is kept);
    a penalty pending (with the answers the ``legal`` actions give); a coloured card that
    matches neither the colour in play nor the top card (before: a card held was refused
    with no reason). Else nothing: a wild's refusal depends on the rule set's options, which
    the listed options show."""
    if not card or position is None:
        return ""
    if card not in position["hands"][position["current_player"]]:
        return f" (you hold no {card})"
    phase, top, drawn = position["phase"], position["discard"][-1], position["drawn_card"]
    plays = [C.action_name(a) for a in legal if C.action_name(a).startswith("play ")]
    if phase == "drawn" and card != drawn:
        if plays:
            return f" (after a draw only the drawn card, {drawn}, may be played)"
        return f" (after a draw only the drawn card may be played, and {drawn} may not: keep it)"
    if phase == "pending":
        if plays:
            return (f" ({position['pending_draw']} cards to draw are pending: take them, or "
                    f"answer with a card the options list)")
        return (f" ({position['pending_draw']} cards to draw are pending; your options: "
                f"{', '.join(C.action_name(a) for a in legal)})")
    if phase in ("play", "drawn") and not card.startswith("W") and card[0] != position["color"] \
            and (top.startswith("W") or card[1:] != top[1:]):
        value = {"S": "Skip", "R": "Reverse", "+2": "Draw Two"}.get(top[1:], top[1:])
        same = "" if top.startswith("W") else f", nor the top card's value, {value}"
        return f" (it matches neither the colour in play, {position['color']}{same})"
    return ""


def table_events(before: dict, after: dict, player: int, action: int) -> list[str]:
    """What ``player``'s ``action`` changed at the table, in words, one line per event, from
    two positions (:meth:`~ono_env.game.VecGame.to_dict` before and after the step): skips,
    reversals, draws and their reason (a draw, a Draw Two or Wild Draw Four, a penalty for
    not calling ONO!, a false accusation, a challenge and its outcome, a draw that finds
    nothing left), swapped or shuffled hands, a reshuffle of the discard pile, a pending draw
    that grows, and on a step that ends a round only the next player's draw of a last Draw
    Two or Wild Draw Four (the round's end itself: :func:`round_end_events`). Seats are
    written ``P<n>``; only what every seat sees is said (counts of cards, never which cards;
    a challenger's view of the accused hand is :func:`challenge_reveal`, for it alone)."""
    need_position(before, "table_events: the position before")
    need_position(after, "table_events: the position after")
    _seat(player, "table_events", len(before["hands"]))
    name = C.action_name(action)
    verb = name.split(" ")[0]
    n = len(before["hands"])
    rules = before["rules"]
    hb = [len(h) for h in before["hands"]]
    ha = [len(h) for h in after["hands"]]
    events: list[str] = []
    new_round = after["round"] != before["round"]
    played = verb == "play"
    if new_round or after["terminated"]:
        # the round's end is announced by its result (round_end_text); a last Draw Two or Wild
        # Draw Four is still drawn by the next player (with any pending draw). A game cut at
        # the decision limit mid-round says what its last step did, as any other step
        last = _last_draw(before, player, name.split(" ")[1]) if new_round and played else None
        if last is not None:
            q, want = last   # a match deals anew, direction and all
            # over: the round's last hands are there to count; else the next round is dealt,
            # and the stock and the discards under it held what could be drawn
            got = (ha[q] - hb[q] if after["terminated"]
                   else min(want, len(before["stock"]) + len(before["discard"])))
            if got > 0:
                events.append(f"P{q} draws {cards_text(got)} (the last card's draw)")
        return events
    # the cards each hand gained (the player's own play taken out)
    gain = [ha[q] - hb[q] + (1 if played and q == player else 0) for q in range(n)]
    previous = before.get("previous_player")

    def swap(a: int, b: int, why: str) -> None:
        a, b = sorted((a, b))
        events.append(f"{why}P{a} and P{b} swap hands (P{a} now holds {cards_text(ha[a])}, "
                      f"P{b} {cards_text(ha[b])})")

    # what changed hands is said from the action and the rules, never guessed from the cards
    swapped: set[int] = set()
    exposed = before.get("exposed")
    offender = exposed if isinstance(exposed, int) else -1
    caught = verb == "catch" and offender >= 0 and catch_succeeds(before, offender)
    if verb == "challenge" and isinstance(previous, int) and previous >= 0:
        # every seat is told a hand was shown (the challenger also what it held: seat_events)
        events.append(_shows(previous, player))
    if name == "play WS":
        events.append("Wild Shuffle Hands: every hand is gathered, shuffled and dealt out again")
        swapped = set(range(n))
    elif verb == "target":
        other = (player + int(name.split(" ")[1])) % n
        swapped = {player, other}
        swap(player, other, "Wild Customizable: ")
    elif caught and rules.get("ono_penalty") == "swap_hands":
        swapped = {player, offender}
        swap(player, offender, f"P{player} catches P{offender} without an ONO! call: ")
    if len(after["discard"]) < len(before["discard"]) + played:   # the stock ran out
        # said before the draws it served (before: after them)
        events.append("the discard pile, but for its top card, is shuffled into a new stock")
    # a draw that took the last cards there were, which says why it took fewer than were
    # owed where it did (before: "draws 1 card" for a penalty of 4, with no word why)
    exhausted = not after["stock"] and len(after["discard"]) <= 1
    for q in range(n):
        if q in swapped or gain[q] <= 0:
            continue
        k = cards_text(gain[q]) + (f" (the last there {'was' if gain[q] == 1 else 'were'})"
                                   if exhausted else "")
        if verb == "catch" and q == player:
            events.append(f"false accusation: P{q} draws {k}")
        elif verb == "catch":
            events.append(f"P{player} catches P{q} without an ONO! call: P{q} draws {k}")
        elif verb == "challenge" and q == player:
            events.append(f"challenge fails (the Wild Draw Four was legal): P{q} draws {k} "
                          f"and loses the turn")
        elif verb == "challenge" and q == previous:
            events.append(f"challenge succeeds (the Wild Draw Four was a bluff): P{q} draws {k}")
        elif verb == "accept":
            events.append(f"P{q} takes the penalty: draws {k} and loses the turn")
        else:
            events.append(f"P{q} draws {k}")
    if verb == "call":
        events.append(f"P{player} calls ONO!")
    empty = not before["stock"] and len(before["discard"]) <= 1   # nothing left to draw
    nothing = "draws nothing (no cards left to draw)"
    drew = any(g > 0 for g in gain)
    if verb == "catch" and not swapped and not drew:
        if caught and empty:
            events.append(f"P{player} catches P{offender} without an ONO! call: P{offender} "
                          f"{nothing}")
        elif previous is not None and previous >= 0 and hb[previous] > 1 and empty:
            events.append(f"false accusation: P{player} {nothing}")
        else:
            # why, where the accused holds one card (before: said only where it called)
            why = (f": P{previous} {_not_open(before, previous)}" if previous is not None
                   and previous >= 0 and hb[previous] == 1 else "")
            events.append(f"P{player}'s catch has no effect{why}")
    if verb == "draw" and gain[player] <= 0 and empty:
        events.append(f"P{player} {nothing}")
    if verb == "challenge" and not drew and empty:
        events.append(f"challenge succeeds (the Wild Draw Four was a bluff): P{previous} {nothing}"
                      if before["wild_draw_four_bluff"] else
                      f"challenge fails (the Wild Draw Four was legal): P{player} {nothing} "
                      f"and loses the turn")
    if verb == "accept" and not drew and empty:
        events.append(f"P{player} takes the penalty: {nothing} and loses the turn")
    if after["direction"] != before["direction"]:
        way = "clockwise" if after["direction"] == 1 else "counter-clockwise"
        events.append(f"direction reversed: play goes {way} now")
    if after["pending_draw"] > before["pending_draw"]:
        how = "stacked: " if before["pending_draw"] > 0 else ""
        options = (["stack"] if rules.get("stacking") else []) + (
            ["challenge"] if rules.get("challenge") and rules.get("wild_draw_four_restricted")
            and name.startswith("play W+4") else [])
        events.append(f"{how}P{after['current_player']} must draw {after['pending_draw']}"
                      + (f" (or {' or '.join(options)})" if options else ""))
    cur = after["current_player"]
    if cur != player and after["phase"] != "round_end":
        skipped: list[int] = []
        q = (player + after["direction"]) % n
        while q != cur and len(skipped) < n:
            skipped.append(q)
            q = (q + after["direction"]) % n
        if before["phase"] == "pending" and verb in ("accept", "challenge"):
            skipped = [s for s in skipped if s != player]
        for s in skipped:
            events.append(f"P{s} is skipped")
    elif cur == player and played and n == 2 and after["phase"] == "play":
        events.append(f"P{(player + 1) % 2} is skipped")   # a Skip (or a Reverse that skips)
    return events


def round_end_text(before: dict, after: dict) -> str | None:
    """The end of a round between two positions: who won it, the points it scored and the
    scores (None where the step ended no round; a game cut at the decision limit ends none)."""
    need_position(before, "round_end_text: the position before")
    need_position(after, "round_end_text: the position after")
    if after["round"] == before["round"]:
        return None
    text = f"round {after['round']} won by P{after['winner']}"
    if after["rules"]["scoring"] != "none":
        points = ", ".join(f"P{q} +{a - b}" for q, (a, b) in
                           enumerate(zip(after["scores"], before["scores"])) if a != b)
        text += (f" ({points})" if points else "") + "; scores " + " ".join(
            f"P{q} {v}" for q, v in enumerate(after["scores"]))
    return text


def round_end_events(before: dict, after: dict) -> list[str]:
    """A round's end between two positions (:func:`round_end_text`) and, where the game goes
    on, the hands it was counted from (:func:`round_hands`) and the next deal's first card
    (:func:`deal_events`); empty where the step ended no round."""
    text = round_end_text(before, after)
    if text is None:
        return []
    if after["terminated"] or after["truncated"]:   # the final table shows every hand
        return [text]
    return [text] + round_hands(before, after) + deal_events(after)


def _points(cards: Sequence[str]) -> int:
    return int(sum(C.CARD_POINTS[C.CARD_IDS[c]] for c in cards))


def _last_draw(before: dict, winner: int, card: str) -> tuple[int, int] | None:
    """``(seat, cards)``: who draws a round's last card, when ``winner`` went out on a Draw
    Two or Wild Draw Four (``card``), and how many with the draw pending before it (the next
    seat, before the count); None for another card."""
    if card != "W+4" and not card.endswith("+2"):
        return None
    return ((winner + before["direction"]) % len(before["hands"]),
            before["pending_draw"] + (4 if card == "W+4" else 2))


def round_hands(before: dict, after: dict) -> list[str]:
    """The hands that a round of a match ended with, each with its points, as the players lay
    them down to be counted (the position ``after`` the step holds the next deal already;
    before, a player saw the points and never the cards): one line per seat but the round's
    winner. A last Draw Two or Wild Draw Four is drawn by the next seat before the count;
    the cards it drew are the top of the stock ``before`` the step (named), or, where the
    stock ran out and the discard pile was shuffled into it, said to come after a reshuffle
    and counted from the scores. Empty where the step ended no round."""
    need_position(before, "round_hands: the position before")
    need_position(after, "round_hands: the position after")
    if after["round"] == before["round"] or after["winner"] is None:
        return []
    winner, n = after["winner"], len(before["hands"])
    last = before["hands"][winner][-1]     # a round is won from a hand of one card
    drawer, taken = _last_draw(before, winner, last) or (None, 0)
    stock = before["stock"]
    drawn = stock[::-1][:taken] if drawer is not None and len(stock) >= taken else None
    lines: dict[int, tuple[str, int]] = {}
    for q in range(n):
        if q in (winner, drawer):
            continue
        hand = before["hands"][q]
        lines[q] = (" ".join(hand), _points(hand))
    if drawer is not None:
        hand = " ".join(before["hands"][drawer])
        card = "Wild Draw Four" if last == "W+4" else "Draw Two"
        if drawn is not None:
            lines[drawer] = (f"{hand} and the {plural(taken, 'card')} drawn for the last "
                             f"{card}, {' '.join(drawn)}",
                             _points(before["hands"][drawer]) + _points(drawn))
        else:   # the drawn cards came from a reshuffled pile: their points from the scores
            gain = [a - b for a, b in zip(after["scores"], before["scores"])]
            pts = (gain[drawer] if after["rules"]["scoring"] == "penalty"
                   else gain[winner] - sum(v for _, v in lines.values()))
            lines[drawer] = (f"{hand} and the cards drawn for the last {card} (after a "
                             f"reshuffle)", pts)
    return [f"P{q} shows {cards}: {plural(pts, 'point')}"
            for q, (cards, pts) in sorted(lines.items())]


def deal_events(d: dict) -> list[str]:
    """What a new deal's first card did, from the position ``d`` at the start of a round
    (:meth:`~ono_env.game.VecGame.to_dict`): the dealer and the first card, then its effect
    as if the dealer had played it (a skip, a reversal, a draw to take, a colour to name);
    nothing more where the rules ignore a first action card. Cards turned face up and passed
    over first (``uno2018``: flip until a number card) stay under it, seen by every seat,
    and are named."""
    need_position(d, "deal_events: the position")
    n = len(d["hands"])
    dealer, cur = d["dealer"], d["current_player"]
    under = d["discard"][:-1]
    events = [f"P{dealer} deals; the first card is {d['discard'][-1]}"
              + (f" (turned before it and passed over: {' '.join(under)})" if under else "")]
    if d["direction"] == -1:
        events.append("direction reversed: play goes counter-clockwise")
        if n == 2 and cur == dealer:   # a Reverse that skips at two players
            events.append(f"P{1 - dealer} is skipped")
    if d["phase"] == "color":
        events.append(f"P{cur} names the colour of the first Wild")
    elif d["pending_draw"]:
        stack = " (or stack)" if d["rules"].get("stacking") else ""
        events.append(f"P{cur} must draw {d['pending_draw']}{stack}")
    elif d["direction"] == 1:
        q = (dealer + 1) % n
        while q != cur:
            events.append(f"P{q} is skipped")
            q = (q + 1) % n
    return events


def challenge_reveal(before: dict, player: int, action: int) -> str | None:
    """What a challenger of a Wild Draw Four is shown (by ``player``'s ``action`` from position
    ``before``): the accused hand, for the challenger's eyes only (None for any other action).
    The official rules have the accused show it to the challenger, and the engine records it
    as seen by that seat."""
    need_position(before, "challenge_reveal: the position")
    _seat(player, "challenge_reveal", len(before["hands"]))
    if C.action_name(action) != "challenge":
        return None
    accused = before["previous_player"]
    if accused is None:   # before: a TypeError
        raise ValueError("challenge_reveal: 'challenge' is no option at this position (no seat "
                         "has played before it); allowed: one of its legal actions")
    return f"{_shows(accused, player)}: {' '.join(before['hands'][accused])}"


def _shows(accused: int, challenger: int) -> str:
    return f"P{accused} shows P{challenger} their hand"


def seat_events(before: dict, after: dict, player: int, action: int, seat: int) -> list[str]:
    """:func:`table_events` as the player in ``seat`` is told them: where that seat made the
    challenge, the line that says a hand was shown names its cards (:func:`challenge_reveal`,
    for that seat alone; before, only the challenger was told a hand was shown)."""
    events = table_events(before, after, player, action)
    shown = challenge_reveal(before, player, action) if player == seat else None
    if shown is not None:
        generic = _shows(before["previous_player"], player)
        events = [shown if e == generic else e for e in events]
    return events


_VERBS = {"draws": "draw", "is": "are", "catches": "catch", "calls": "call", "deals": "deal",
          "names": "name", "shows": "show"}


def personal(line: str, seat: int) -> str:
    """An event line (:func:`table_events`) as the player in ``seat`` reads it: ``P<seat>``
    becomes "you", and its verbs agree ("false accusation: you draw 4 cards", "you are
    skipped", "you take the penalty: draw 4 cards and lose the turn")."""
    if not isinstance(line, str) or not is_int(seat):   # before: re's TypeError for None
        raise ValueError(f"personal: line={shown(line, 40)}, seat={shown(seat, 20)}; allowed: "
                         f"an event line (text) and a seat (an integer)")
    me = rf"\bP{seat}\b"
    out = re.sub(rf"{me}'s\b", "your", line)
    out = re.sub(rf"{me} takes the penalty: draws (.*) and loses the turn",
                 r"you take the penalty: draw \1 and lose the turn", out)
    out = re.sub(rf"{me} now holds", "you now hold", out)
    out = re.sub(rf"{me} shows (P\d+) their hand", r"you show \1 your hand", out)
    out = re.sub(rf"{me} draws (.*) and loses the turn", r"you draw \1 and lose the turn", out)
    out = re.sub(rf"{me} ({'|'.join(_VERBS)})\b",
                 lambda m: f"you {_VERBS[m.group(1)]}", out)
    return re.sub(me, "you", out)
