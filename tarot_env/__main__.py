"""``python -m tarot_env``: the package's commands, one a line (tarot_env/commands.py)."""
from tarot_env.commands import main

raise SystemExit(main())
