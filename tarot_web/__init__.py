"""``tarot-web``: play Partita, Millone and Ottocento in the browser against any players, or watch them.

A local web app (Starlette + uvicorn, the ``web`` extra):

* :mod:`tarot_web.app` the routes; :mod:`tarot_web.cli` the command line;
* :mod:`tarot_web.session` one game at the table (a player per seat, the log, undo, the bots' turns);
* :mod:`tarot_web.view` what is sent to a seat (never another seat's hidden cards);
* :mod:`tarot_web.requests` the checks of every request; :mod:`tarot_web.players` the player specs a
  page may ask for; :mod:`tarot_web.logs` the JSONL game log that ``tarot-play --replay`` reads;
* :mod:`tarot_web.explain` the rules in plain words; :mod:`tarot_web.bench` the scripted clients of the
  load test.

See docs/web.md.
"""
