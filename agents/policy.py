"""Policies that play a tarot env, and the checkpoint file format.

``Policy`` is the interface every player implements: ``act(obs, mask) -> action`` for one decision
(``obs`` may also be the env's observation dict, then ``mask`` is taken from it) and
``act_batch(obs[n, O], mask[n, A]) -> actions[n]``. ``RandomPolicy`` plays uniformly among the legal
actions; ``NetworkPolicy`` is a trained actor; ``load_policy(path)`` reads one from a checkpoint.

Checkpoint format (``torch.save`` of plain containers and tensors, so ``torch.load(...,
weights_only=True)`` reads it; written to ``<path>.tmp`` then ``os.replace``d, so a killed writer
never leaves a half-written file)::

    {"format": "tarocchini-ppo", "format_version": 1,
     "meta": {"game", "env_id", "env_version", "obs_size", "state_size", "num_actions",
              "config" (the training Args as a dict), "update", "step", "checksum"},
     "model": actor-critic state_dict, "optimizer", "rng", "pool", "collector", "value_norm",
     "stats"}

``meta["checksum"]`` is a SHA-256 of the model tensors; a file that does not load, lacks a part, or
whose tensors do not match the checksum is refused with ``ValueError`` before anything is used.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

FORMAT = "tarocchini-ppo"
FORMAT_VERSION = 1
REQUIRED = ("meta", "model")
META_KEYS = ("game", "env_id", "env_version", "obs_size", "state_size", "num_actions", "config",
             "update", "step", "checksum")


# --------------------------------------------------------------------------------------------------
# Policies
# --------------------------------------------------------------------------------------------------
class Policy:
    """Chooses actions from (observation, legal-action mask) pairs.

    A policy with ``needs_game = True`` (the search player, ``agents/pimc.py``) decides from the rules
    objects instead: ``act_games(games)`` gives the action of each game's seat to act; the drivers
    (``agents.evaluate``, the arena, ``tarot-play``) call it for such a policy.
    """

    needs_game = False

    def act_games(self, games) -> np.ndarray:
        """The action of the seat to act in each rules object of ``games`` (from its observation)."""
        obs = np.stack([g.observation(g.current) for g in games])
        mask = np.stack([g.legal_mask() for g in games])
        return self.act_batch(obs, mask)

    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def act(self, obs, mask=None) -> int:
        if isinstance(obs, dict):
            obs, mask = obs["observation"], obs["action_mask"] if mask is None else mask
        if mask is None:
            raise ValueError("act() needs the action mask (or the env's observation dict)")
        return int(self.act_batch(np.asarray(obs, dtype=np.float32)[None],
                                  np.asarray(mask).astype(bool)[None])[0])


class RandomPolicy(Policy):
    """Uniform among the legal actions (a seed reproduces its choices)."""

    def __init__(self, seed: int | None = None):
        self.rng = np.random.default_rng(seed)

    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        mask = np.asarray(mask, dtype=bool)
        if not mask.any(axis=1).all():
            raise ValueError("a mask row has no legal action")
        keys = self.rng.random(mask.shape)
        return np.where(mask, keys, -1.0).argmax(axis=1)


class NetworkPolicy(Policy):
    """A trained actor: greedy (most probable legal action) or sampled from the masked softmax."""

    def __init__(self, model, greedy: bool = True, seed: int | None = None, meta: dict | None = None):
        self.model = model.eval()
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(0 if seed is None else seed)
        self.meta = meta or {}

    @torch.no_grad()
    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        o = torch.as_tensor(np.asarray(obs, dtype=np.float32))
        m = torch.as_tensor(np.asarray(mask).astype(bool))
        if not bool(m.any(dim=1).all()):
            raise ValueError("a mask row has no legal action")
        logits = self.model.masked_logits(o, m)
        if self.greedy:
            a = logits.argmax(dim=1)
        else:
            a = torch.multinomial(torch.softmax(logits, dim=1), 1, generator=self.gen).squeeze(1)
        return a.numpy()


# --------------------------------------------------------------------------------------------------
# Checkpoints
# --------------------------------------------------------------------------------------------------
def model_checksum(state_dict: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for k in sorted(state_dict):
        t = state_dict[k].detach().cpu().contiguous()
        h.update(k.encode())
        h.update(str(t.dtype).encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def save_checkpoint(path: str | os.PathLike, payload: dict[str, Any]) -> None:
    """Write ``payload`` atomically (tmp file + ``os.replace``), adding format and checksum."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = dict(payload)
    payload["format"], payload["format_version"] = FORMAT, FORMAT_VERSION
    payload["meta"] = dict(payload["meta"], checksum=model_checksum(payload["model"]))
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        torch.save(payload, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_checkpoint(path: str | os.PathLike, game: str | None = None) -> dict[str, Any]:
    """Read and verify a checkpoint (``weights_only=True``); a bad file raises ``ValueError``."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"checkpoint {str(path)!r} does not exist")
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated / garbage / not a torch file
        raise ValueError(f"corrupt checkpoint {str(path)!r}: {type(e).__name__}: {e}") from None
    if not isinstance(ck, dict) or ck.get("format") != FORMAT:
        raise ValueError(f"corrupt checkpoint {str(path)!r}: not a {FORMAT} file")
    if ck.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"checkpoint {str(path)!r} has format version {ck.get('format_version')!r}; "
                         f"this version reads {FORMAT_VERSION}")
    missing = [k for k in REQUIRED if k not in ck]
    meta = ck.get("meta", {})
    missing += [f"meta.{k}" for k in META_KEYS if not isinstance(meta, dict) or k not in meta]
    if missing:
        raise ValueError(f"corrupt checkpoint {str(path)!r}: missing {missing}")
    if not isinstance(ck["model"], dict) or not all(isinstance(v, torch.Tensor) for v in ck["model"].values()):
        raise ValueError(f"corrupt checkpoint {str(path)!r}: model is not a dict of tensors")
    if model_checksum(ck["model"]) != meta["checksum"]:
        raise ValueError(f"corrupt checkpoint {str(path)!r}: model tensors do not match their checksum")
    if game is not None and meta["game"] != game:
        raise ValueError(f"checkpoint {str(path)!r} was trained for game {meta['game']!r}, not {game!r}")
    return ck


def build_model(meta: dict):
    """The ActorCritic network described by a checkpoint's meta (weights not loaded)."""
    from .ppo import ActorCritic

    cfg = meta["config"]
    return ActorCritic(meta["obs_size"], meta["num_actions"], list(cfg["hidden"]),
                       critic=cfg["critic"], state_size=meta["state_size"])


def load_policy(path: str | os.PathLike, game: str | None = None, *, greedy: bool = True,
                seed: int | None = None) -> NetworkPolicy:
    """A :class:`NetworkPolicy` from a checkpoint; checks the game and the obs/action sizes.

    ``game`` (optional) must be the game the checkpoint was trained for; the observation and action
    sizes stored in the file must match the current environment's.
    """
    from .rollout import make_spec

    ck = load_checkpoint(path, game)
    meta = ck["meta"]
    spec = make_spec(meta["game"], meta["config"].get("game_options", {}))
    for key, want in (("obs_size", spec.obs_size), ("num_actions", spec.num_actions)):
        if meta[key] != want:
            raise ValueError(f"checkpoint {str(path)!r} has {key}={meta[key]}, but {meta['game']} "
                             f"{spec.env_id} has {key}={want}")
    model = build_model(meta)
    try:
        model.load_state_dict(ck["model"])
    except RuntimeError as e:
        raise ValueError(f"checkpoint {str(path)!r} does not fit its network: {e}") from None
    return NetworkPolicy(model, greedy=greedy, seed=seed, meta=meta)


def export_policy(src: str | os.PathLike, dst: str | os.PathLike) -> dict[str, Any]:
    """Write a small policy-only copy of a training checkpoint (metadata + network weights).

    Training checkpoints also carry the optimizer, the random states, the opponent pool and the games
    in progress (for ``--resume``); a policy file keeps only what ``load_policy`` needs.
    """
    ck = load_checkpoint(src)
    meta = {k: v for k, v in ck["meta"].items() if k != "checksum"}
    meta["exported_from"] = str(src)
    save_checkpoint(dst, {"meta": meta, "model": ck["model"]})
    return meta
