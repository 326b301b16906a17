"""The rule options in words: what each option means (the one source of the options table in
docs/rules.md, the browser table's help and the terminal game's ``rules`` command), what each
preset is, and the rules in force of any rule set as sentences (:func:`describe_rules`).

Plain data and string formatting: no engine, no kernels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ono_env.checks import plural, shown
from ono_env.rules import FIELD_NAMES, PRESETS, RuleSet, resolve_rules

OPTION_HELP: dict[str, tuple[str, str]] = {
    "name": ('text of 1 to 80 printable characters, not blank, no space at either end',
        "the preset it was made from, or a name of your own; another preset's name only on rules "
        "that are that preset's (at any player count) or built from it (`preset: ono` with "
        "`name: classic` is refused; every option "
        "written out with no `preset`, as in a replay, counts as built from the preset named), "
        "and not a preset's "
        "name in other letter cases or forms (`Basic`, the full-width `ono`); informational"),
    "num_players": ('2 to 10',
        'players at the table'),
    "hand_size": ('1 to 100',
        'cards dealt to each player; the deck must hold `num_players * hand_size + 1` '
        'cards'),
    "wild_cards": ('0 to 40',
        'plain Wild cards in the deck'),
    "wild_draw_four_cards": ('0 to 40',
        'Wild Draw Four cards'),
    "wild_shuffle_hands_cards": ('0 to 40',
        'Wild Shuffle Hands cards (all hands are gathered and dealt again)'),
    "wild_customizable_cards": ('0 to 40',
        'Wild Customizable cards'),
    "short_deck": ('true, false',
        'remove the coloured 6, 7, 8 and 9 (a shorter game)'),
    "dealer": ('`random`, `highest_card`, `highest_number`',
        'how the first dealer is chosen: at random, by the highest card drawn (by points,'
        ' ties draw again) or the highest number card'),
    "first_card_action": ('`dealer_plays`, `flip_again`',
        'a first card Skip, Reverse or Draw Two acts as if the dealer played it, or is '
        'ignored and another card is turned onto it'),
    "first_card_wild": ('`return`, `first_player_names`, `dealer_names`, `flip_again`',
        'a first Wild (also Shuffle Hands and Customizable, which then act as a plain '
        'Wild): shuffled back and another turned; the first player names the colour and '
        'plays; the dealer names it; or another card is turned onto it'),
    "first_card_wild_draw_four": ('`return`, `flip_again`',
        'a first Wild Draw Four: shuffled back, or another card turned onto it'),
    "wild_draw_four_restricted": ('true, false',
        'Wild Draw Four only without a card of the current colour'),
    "challenge": ('true, false',
        'the victim of a Wild Draw Four may challenge it; needs '
        '`wild_draw_four_restricted` and no `stacking`; with it, an illegal Wild Draw '
        'Four may be played as a bluff'),
    "stacking": ('true, false',
        'Draw Two on Draw Two, Draw Four on Draw Two or Draw Four (never Draw Two on Draw'
        ' Four); the victim stacks or accepts the running total'),
    "reverse_skips_with_two_players": ('true, false',
        'with two players a Reverse acts as a Skip; false: it only turns the direction'),
    "voluntary_draw": ('true, false',
        'a player may draw while holding a playable card'),
    "must_play_drawn": ('true, false',
        'a playable drawn card must be played (no `keep`), except a Wild Draw Four that would '
        'be a bluff'),
    "draw_until_playable": ('true, false',
        'a player without a playable card draws until one is playable (a longer game)'),
    "ono_penalty": ('`none`, `draw`, `swap_hands`',
        'the last-card call ("ONO!"): `none` has no call at all; a player caught not '
        'calling draws `ono_penalty_cards` (`draw`) or swaps hands with the catcher '
        '(`swap_hands`)'),
    "ono_penalty_cards": ('0 to 20 (1 to 20 with `draw`)',
        'cards drawn by a player caught not calling'),
    "false_catch_penalty": ('0 to 20 (0 without a call)',
        'cards an accuser draws when the accused holds more than one card (a false '
        'accusation); 0: a catch is only legal when it succeeds'),
    "wild_customizable": ('`plain`, `swap_hands`',
        'a Wild Customizable plays as a plain Wild, or swaps hands with a chosen player '
        '(the `target` actions)'),
    "scoring": ('`none`, `winner`, `penalty`',
        'points at the end of a round: none; the winner scores the cards left in the '
        'other hands; or each player scores their own cards (lower is better)'),
    "target_score": ('0 to 1,000,000 (0 without scoring)',
        '0 plays a single round; above 0 an episode is a match of rounds (the dealer '
        'moves one seat left each round) until a score reaches it; with `penalty` scoring'
        ' the lowest total then wins'),
}
"""Per rule option: its allowed values and what it sets, in words (Markdown: values in
backticks). docs/rules.md's options table is made of these (a test compares them)."""

PRESET_SUMMARY: dict[str, str] = {
    "basic": "the common core that most UNO engines play: no call, no challenge, one round",
    "classic": "the official rules: call ONO or draw 4, challengeable Wild Draw Four, match to 500",
    "ono": "\"ONO!\": 8 Wilds; a caught player swaps hands with the catcher; a false catch "
           "costs 4",
    "stacking": "Draw Two and Draw Four stack; penalty scoring (lower is better)",
    "uno2018": "the 2018 rules: Wild Shuffle Hands, Wild Customizable, first action cards "
               "ignored",
    "wikipedia": "the rules as Wikipedia states them: dealer by highest number, dealer names a "
                 "first Wild",
}
"""One line per preset: what it is (the README's presets table)."""


def options_table_markdown() -> str:
    """docs/rules.md's options table: option, allowed values, default (``classic``), meaning."""
    base = RuleSet()
    lines = ["| option | allowed values | default | what it sets |", "|---|---|---|---|"]
    for name in FIELD_NAMES:
        allowed, meaning = OPTION_HELP[name]
        lines.append(f"| `{name}` | {allowed} | {_value(getattr(base, name), code=True)} | "
                     f"{meaning} |")
    return "\n".join(lines)


def _value(v: Any, code: bool = False) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) and code:
        return f"`{v}`"
    return str(v)


def plain(text: str) -> str:
    """A help text without Markdown backticks (for the terminal and the browser)."""
    if not isinstance(text, str):   # before: an AttributeError for None
        raise ValueError(f"plain: text={shown(text, 40)} ({type(text).__name__}); allowed: text")
    return text.replace("`", "")


def preset_summary(rules: RuleSet | str | Mapping[str, Any]) -> str:
    """What the rule set is: its preset's summary when it is the preset (at any player count),
    else the preset's name and the options that differ from it. ``rules`` as everywhere (a
    RuleSet, a preset's name, a rules file or a mapping; before: only a RuleSet, and a name
    was an AttributeError)."""
    rules = resolve_rules(rules)
    if rules.name not in PRESETS:
        return f"a rule set named {rules.name!r}"
    base = RuleSet.preset(rules.name, num_players=rules.num_players)
    changed = [f"{k} {_value(getattr(rules, k))}"
               for k in rules.differing_fields(base, skip=("name",))]
    if not changed:
        return PRESET_SUMMARY[rules.name]
    return f"the {rules.name} preset with {', '.join(changed)}"


def describe_rules(rules: RuleSet | str | Mapping[str, Any]) -> list[str]:
    """The rules in force, in words, one sentence per line: right for any options (every
    sentence is chosen by the option values, none is written per preset). ``rules`` as in
    :func:`preset_summary`."""
    r = rules = resolve_rules(rules)
    out = []
    out.append(f"Rules: {r.name} ({preset_summary(r)}). {r.num_players} players, "
               f"{plural(r.hand_size, 'card')} each.")
    numbers = "0-5" if r.short_deck else "0-9"
    # the kinds the deck holds (before: "0 Wild" in a deck without plain Wilds)
    wilds = [f"{r.wild_cards} Wild"] if r.wild_cards else []
    if r.wild_draw_four_cards:
        wilds.append(f"{r.wild_draw_four_cards} Wild Draw Four")
    if r.wild_shuffle_hands_cards:
        wilds.append(f"{r.wild_shuffle_hands_cards} Wild Shuffle Hands")
    if r.wild_customizable_cards:
        wilds.append(f"{r.wild_customizable_cards} Wild Customizable")
    out.append(f"The deck: {r.deck_size} cards; numbers {numbers}, Skip, Reverse and Draw Two in "
               f"red, yellow, green and blue; {', '.join(wilds) or 'no Wild cards'}.")
    out.append("On your turn play a card that matches the top card's colour, number or symbol"
               + (", or a Wild (it names the colour)" if wilds else "")
               + ". The first to empty their hand wins the round.")
    if r.voluntary_draw:
        draw = "You may draw instead of playing, even when you could play."
    else:
        draw = "You draw only when you cannot play."
    if r.draw_until_playable and r.voluntary_draw:
        draw += (" Holding no playable card you draw until you get one; holding one, you draw"
                 " one card.")
    elif r.draw_until_playable:
        draw += " You draw until you get a playable card."
    else:
        draw += " You draw one card."
    if r.must_play_drawn:
        draw += " A playable drawn card must be played at once"
        # only where a Wild Draw Four can be a bluff (before: also in decks without one)
        draw += (" (a Wild Draw Four that would be a bluff may be kept)."
                 if r.wild_draw_four_cards and r.wild_draw_four_restricted else ".")
    else:
        draw += " A playable drawn card may be played at once, or kept (keep)."
    out.append(draw)
    out.append("Skip: the next player loses their turn. Reverse: the direction of play turns.")
    if r.num_players == 2:
        out.append("With two players a Reverse acts as a Skip." if r.reverse_skips_with_two_players
                   else "With two players a Reverse only turns the direction (no skip).")
    # Wild Draw Four named only where the deck holds it (before: in every deck)
    if r.stacking and r.wild_draw_four_cards:
        out.append("Draw Two and Wild Draw Four stack: the player who must draw may add a Draw "
                   "Two on a Draw Two, or a Wild Draw Four on either (never a Draw Two on a Wild "
                   "Draw Four), passing the running total on; or accept it: draw it all and lose "
                   "the turn.")
    elif r.stacking:
        out.append("Draw Twos stack: the player who must draw may add a Draw Two, passing the "
                   "running total on; or accept it: draw it all and lose the turn.")
    else:
        out.append("Draw Two: the next player draws 2 and loses the turn."
                   + (" Wild Draw Four: the next player draws 4 and loses the turn."
                      if r.wild_draw_four_cards else ""))
    if r.wild_draw_four_cards:
        if r.wild_draw_four_restricted:
            w4 = "A Wild Draw Four may only be played without a card of the current colour."
            if r.challenge:
                w4 += (" Its victim may challenge it: if it was played against that rule, the "
                       "player who played it draws the 4 instead and the challenger plays on "
                       "as usual; if it was legal, the "
                       "challenger draws 6 and loses the turn. The challenger is shown the "
                       "accused hand.")
        else:
            w4 = "A Wild Draw Four may be played at any time."
        out.append(w4)
    if r.ono_penalty == "none":
        out.append("There is no ONO! call.")
    else:
        penalty = (f"draws {plural(r.ono_penalty_cards, 'card')}" if r.ono_penalty == "draw"
                   else "swaps hands with the catcher (who gets the single card)")
        out.append(f"Call ONO! (call) when you hold two cards and are about to play one. The next "
                   f"player may catch a player who went down to one card without calling "
                   f"(catch, at the start of their turn): the caught player {penalty}.")
        if r.false_catch_penalty:
            out.append(f"A false accusation (catch when the previous player holds more than one "
                       f"card) costs the accuser {plural(r.false_catch_penalty, 'card')}.")
        else:
            out.append("A catch is offered only when it succeeds.")
    if r.wild_shuffle_hands_cards:
        out.append("Wild Shuffle Hands: every hand is gathered, shuffled and dealt out again, "
                   "then its player names the colour.")
    if r.wild_customizable_cards:
        out.append("Wild Customizable: swap hands with a player you choose (target), then name "
                   "the colour." if r.wild_customizable == "swap_hands"
                   else "Wild Customizable plays as a plain Wild.")
    if r.scoring != "none":   # the points are counted from the hands after that draw
        out.append("A round's last card, if a Draw Two"
                   + (" or Wild Draw Four" if r.wild_draw_four_cards else "")
                   + ", still makes the next player draw before the points are counted.")
    if r.scoring == "winner":
        out.append("Scoring: the round's winner scores the points of the cards left in the other "
                   "hands (numbers their value, Skip/Reverse/Draw Two 20, Wilds 50).")
    elif r.scoring == "penalty":
        out.append("Scoring: everyone scores the points of their own cards left (numbers their "
                   "value, Skip/Reverse/Draw Two 20, Wilds 50); lower is better.")
    if r.target_score:
        end = "; then the lowest total wins" if r.scoring == "penalty" else " wins"
        out.append(f"A match: rounds are played until a score reaches {r.target_score}"
                   + ("; then the lowest total wins." if r.scoring == "penalty"
                      else f" (that player{end}).")
                   + " The dealer moves one seat to the left each round.")
    else:
        out.append("One round: its winner wins the game.")
    dealer = {"random": "at random", "highest_card": "by the highest card drawn",
              "highest_number": "by the highest number card drawn"}[r.dealer]
    out.append(f"The first dealer is chosen {dealer}; play starts on the dealer's left.")
    first = {"dealer_plays": "acts as if the dealer played it",
             "flip_again": "is ignored: another card is turned onto it"}[r.first_card_action]
    wild = {"return": "is shuffled back and another card turned",
            "first_player_names": "has its colour named by the first player, who then plays",
            "dealer_names": "has its colour named by the dealer",
            "flip_again": "is ignored: another card is turned onto it"}[r.first_card_wild]
    four = {"return": "is shuffled back and another card turned",
            "flip_again": "is ignored: another card is turned onto it"}[
        r.first_card_wild_draw_four]
    kinds = [f"a Skip, Reverse or Draw Two {first}"]
    if r.wild_cards or r.wild_shuffle_hands_cards or r.wild_customizable_cards:
        kinds.append(f"a Wild {wild}")
    if r.wild_draw_four_cards:
        kinds.append(f"a Wild Draw Four {four}")
    out.append(f"The first card turned up: {'; '.join(kinds)}.")
    return out
