"""Plain-words explanations of each phase and special move, for ``tarot-play`` (from docs/rules/*.md).

``tarot-play`` shows a phase's or a special move's explanation the first time it comes to the person
(:class:`Explainer`), and ``help <topic>`` shows it on demand (:func:`explain`): a phase (``discard``,
``second_discard``, ``a_monte``, ``declare``, ``play``) or a move (``a_monte``, ``play_on``, ``done`` /
``declare_done``, ``signal`` and each signal by name). The rule numbers point into docs/rules/.
"""
from __future__ import annotations

_SIGNALS = ("Signals (OTT-8): with a card you may add one public signal, chosen just before the card it goes "
            "with: 'void' (VOID, throwing the card up): I have no more of this suit; 'lead_trumps' "
            "(LEAD_TRUMPS, drawing the card back): lead trumps; 'win_and_return' (WIN_AND_RETURN, knocking on "
            "the table): win with your highest card and lead this suit back. Everyone sees a signal; it "
            "binds nobody. Type the signal's name, then the card.")

_BOLOGNESE_PLAY = ("Play (B.4): follow the suit led if you can; if you cannot, play a trump if you can; "
                   "otherwise any card. The Matto may be played to any trick instead. The highest trump wins, "
                   "else the highest card of the suit led; the last trick scores 6 more.")

TOPICS: dict[str, dict[str, str]] = {
    "partita": {
        "DISCARD": ("The dealer's discard (PAR-4.2 to 4.5): the dealer lays 2 cards face down into the team's "
                    "pile, one at a time. Kings, trump I, trump XXI and the Fool may never be discarded; trumps "
                    "II-XX only when there is no other choice, and a discarded trump is shown to everyone."),
        "PLAY": ("Play (PAR-5): the dealer leads the first trick, the winner of a trick leads the next. Follow "
                 "suit; else play a trump; else any card, which cannot win. The Fool may be played at any time "
                 "as an excuse and goes back to its team's pile. 13 tricks."),
        "signal": ("Signals (PAR-7, option partita_signals=bolognese3): with a card you may add one public "
                   "signal: 'void' (no more of this suit), 'lead_trumps', 'win_and_return' (win and lead this "
                   "suit back). Everyone sees it; it binds nobody."),
    },
    "millone": {
        "DISCARD": ("The discards (MIL-2.4): each player discards 10 cards face down into his own pile, one at "
                    "a time, the non-dealer first; Honours and Kings may not be discarded. The discards stay "
                    "hidden from the opponent and count for their owner. Then (MIL-2.5) two more rounds of five "
                    "cards each are dealt: the non-dealer is back to 20 cards, the dealer has 22."),
        "SECOND_DISCARD": ("The dealer's two more (MIL-2.6): the dealer alone discards 2 more cards, under the "
                           "same restriction (no Honour, no King), so that both players hold 20 for the 20 "
                           "tricks."),
        "PLAY": _BOLOGNESE_PLAY + " Millone: 20 tricks of 2 cards; the game is to 1000 points (MIL-6).",
        "signal": _SIGNALS,
    },
    "ottocento": {
        "A_MONTE": ("A monte (OTT-3): with five cards each, eldest first and the dealer last, each player says "
                    "whether he wants the hand thrown in ('a_monte') or played ('play_on'). Only if all four "
                    "say a_monte is the hand thrown in: no score, and the deal passes. By default the asking "
                    "stops at the first player who wants to play."),
        "DISCARD": ("The dealer's discard (OTT-4): the dealer lays 2 of his 17 cards face down; they belong to "
                    "his team's won cards and nobody sees them, not even his partner. No 5-point card may be "
                    "discarded (a King, the Angel, the World, the Begato, the Matto). If the dealer's team "
                    "wins no trick, the two go to the other team."),
        "DECLARE": ("Declarations (OTT-5): before the first lead, eldest first, each player may lay face up "
                    "cards of his hand that form scoring combinations, or nothing. The cards are revealed one "
                    "at a time; 'done' (declare_done) ends your declaration. The points go to your team at "
                    "once and stay whatever happens; the cards stay in your hand for play. A team at 800 or "
                    "more now wins at once."),
        "PLAY": _BOLOGNESE_PLAY + " Ottocento: 15 tricks of 4 cards; the game is to 800 points (OTT-10).",
        "signal": _SIGNALS,
    },
}

# what a person may type after "help", for the phases and moves that have a topic
ALIASES = {"discard": "DISCARD", "discards": "DISCARD", "second_discard": "SECOND_DISCARD",
           "a_monte": "A_MONTE", "monte": "A_MONTE", "play_on": "A_MONTE", "declare": "DECLARE",
           "declare_done": "DECLARE", "done": "DECLARE", "play": "PLAY", "signal": "signal", "signals": "signal",
           "void": "signal", "lead_trumps": "signal", "win_and_return": "signal", "signal:void": "signal",
           "signal:lead_trumps": "signal", "signal:win_and_return": "signal", "draw": "DISCARD"}


def topics(game: str) -> list[str]:
    """The words ``help <word>`` explains in ``game``."""
    return sorted(w for w, t in ALIASES.items() if t in TOPICS.get(game, {}))


def explain(game: str, word: str) -> str | None:
    """The explanation of a phase or move of ``game`` named by ``word`` (any case), or None."""
    key = ALIASES.get(word.strip().lower())
    return TOPICS.get(game, {}).get(key) if key else None


def help_text(game: str, word: str) -> str:
    """The answer to ``help <word>``: its explanation, or what can be asked."""
    text = explain(game, word)
    if text is not None:
        return "  " + text
    return f"  no explanation of {word!r} in {game}; 'help' followed by one of: {', '.join(topics(game))}"


class Explainer:
    """What has been explained to the person in this session: each phase and special move once, the first
    time it comes to them."""

    def __init__(self, game: str):
        self.game = game
        self.told: set[str] = set()

    def first_time(self, phase: str, legal_names: list[str]) -> list[str]:
        """The explanations not given yet for the current phase and the legal special moves (marked given)."""
        keys = [phase] + (["signal"] if any(n.startswith("signal:") for n in legal_names) else [])
        out = []
        for key in keys:
            text = TOPICS.get(self.game, {}).get(key)
            if text is not None and key not in self.told:
                self.told.add(key)
                out.append("  about this: " + text)
        return out
