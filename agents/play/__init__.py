"""Play in the terminal (``tarot-play``): a person against the players (``human``) and the explanations
of a position (``explain``). Sits on top of ``agents.players`` and ``agents.evaluation``."""
