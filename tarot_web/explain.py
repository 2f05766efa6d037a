"""Each phase and special action in plain words (from docs/rules/*.md), shown the first time it comes.

``explanations(game, legal)`` lists the texts that apply now: the phase of the game, and the special
actions among the legal ones (a signal, *a monte* / *play on*, the end of a declaration, the Matto or
the Fool). The page shows each key once (and again on request).
"""
from __future__ import annotations

from tarot_env.engine import NUM_SIGNALS

PHASES = {
    ("partita", "DISCARD"): (
        "The dealer's discard (PAR-4)",
        "Each player holds 13 cards and the dealer 15. The dealer lays 2 cards face down into his team's pile. "
        "Kings, trump I, trump XXI and the Fool may never be discarded; trumps II-XX only when there is no "
        "other choice, and a discarded trump is announced and shown to everyone."),
    ("partita", "PLAY"): (
        "Playing the tricks (PAR-5)",
        "The dealer leads the first trick; the winner of a trick leads the next. Follow suit; else play a "
        "trump; else any card, which cannot win. 13 tricks. A team scores its card points minus 40, so a "
        "deal is zero-sum."),
    ("millone", "DISCARD"): (
        "The discard (MIL-2.4)",
        "After the first phase of the deal the non-dealer holds 20 cards and the dealer 22. Each player "
        "discards 10 cards face down into his own pile, one at a time; Honours (Angel, World, Begato, "
        "Matto) and Kings may not be discarded. The discards are hidden from the opponent."),
    ("millone", "SECOND_DISCARD"): (
        "The dealer's two more (MIL-2.5, MIL-2.6)",
        "Two more rounds of five cards are dealt from the stock, so the non-dealer holds 20 and the dealer "
        "22. The dealer alone discards 2 more, under the same restriction; then both hold 20."),
    ("millone", "PLAY"): (
        "Playing the tricks (MIL-4)",
        "The non-dealer leads the first trick; the winner of each trick leads the next; 20 tricks of two "
        "cards. Follow suit; else play a trump; else any card (it cannot win). Combinations score from "
        "the won cards at the end of the hand; the first to 1000 wins."),
    ("ottocento", "A_MONTE"): (
        "A monte (OTT-3)",
        "With five cards each, eldest first and the dealer last, each player says whether he wants the "
        "hand thrown in (a monte) or played (play on). Only if all four say a monte is the hand thrown "
        "in, with no score; the asking stops at the first player who wants to play."),
    ("ottocento", "DISCARD"): (
        "The dealer's discard (OTT-4)",
        "The dealer lays 2 of his 17 cards face down; nobody else sees them, not even his partner. No "
        "5-point card (King, Angel, World, Begato, Matto) may be discarded. If the dealer's team wins no "
        "trick, the two discards go to the other team."),
    ("ottocento", "DECLARE"): (
        "Declarations (OTT-5)",
        "Eldest first and the dealer last, each player may lay face up cards of his hand that form "
        "scoring combinations, one card at a time, then says 'declare_done' (or declares nothing). "
        "Declared cards stay in the hand for play; their points go to the team at once, and a team "
        "that reaches 800 wins."),
    ("ottocento", "PLAY"): (
        "Playing the tricks (OTT-7)",
        "Eldest leads the first trick; the winner of a trick leads the next; 15 tricks. Follow suit; "
        "else play a trump; else any card. Among Moors the last played wins."),
}

SIGNALS = (
    "Signals (OTT-8, PAR-7)",
    "With a card, an eligible player may add one public signal: VOID (throwing the card up: 'I have no "
    "more of this suit'), LEAD_TRUMPS (drawing the card back: 'lead trumps'), WIN_AND_RETURN (knocking "
    "on the table: 'win with your highest card and lead this suit back'). Every player sees it; it "
    "binds nobody. Choose the signal first, then the card it goes with.")
EXCUSE = {
    "partita": ("The Fool (PAR-5.3)",
                "The Fool may be played at any time as an excuse. Its team takes it back into its own "
                "pile and gives nothing in exchange; it is worth 5 to the team that holds it."),
    "millone": ("The Matto (MIL-4.3)",
                "The Matto may be played to any trick as an excuse. If its player loses that trick, he "
                "takes it back and gives the opponent an empty card from his won cards, in the open."),
    "ottocento": ("The Matto (OTT-7.3)",
                  "The Matto is played to the trick and taken back into its owner's team pile; if an "
                  "opponent won that trick, the team gives them one card of value 1 at the end of the hand."),
}
DECLARE_DONE = ("Ending the declaration (OTT-5.5)",
                "'declare_done' ends your declaration: the cards you revealed score now (only cards that "
                "can still be part of a scoring combination are offered). Ending at once declares nothing.")


def explanations(game, legal: list[int]) -> list[dict]:
    """``[{key, title, text}]``: the current phase's explanation and those of the special actions in
    ``legal`` (the legal action ids of the seat that asks, ``[]`` when it is not its turn)."""
    out = []
    phase = PHASES.get((game.name, game.phase.name))
    if phase:
        out.append(_item(f"{game.name}:{game.phase.name}", phase))
    n = game.pack.size
    if any(n <= a < n + NUM_SIGNALS for a in legal):
        out.append(_item("signals", SIGNALS))
    if game.pack.excuse in legal and game.phase.name == "PLAY":
        out.append(_item(f"{game.name}:excuse", EXCUSE[game.name]))
    if any(game.action_name(a) == "declare_done" for a in legal):
        out.append(_item("declare_done", DECLARE_DONE))
    return out


def _item(key: str, title_text: tuple[str, str]) -> dict:
    return {"key": key, "title": title_text[0], "text": title_text[1]}
