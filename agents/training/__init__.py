"""Training: the PPO trainer (``ppo``), the experience collectors (``rollout``), the ``torch.distributed``
helpers (``distributed``), distillation (``distill``) and expert iteration (``iterate``). May import
``agents.players`` and ``agents.evaluation``; neither imports it (tests/test_imports.py)."""
