"""Policies that play a tarot env, and the checkpoint file format.

``Policy`` is the interface every player implements: ``act(obs, mask) -> action`` for one decision
(``obs`` may also be the env's observation dict, then ``mask`` is taken from it) and
``act_batch(obs[n, O], mask[n, A]) -> actions[n]``. ``RandomPolicy`` plays uniformly among the legal
actions; ``NetworkPolicy`` is a trained actor; ``load_network_policy(path)`` reads one from a checkpoint.

Checkpoint format (``torch.save`` of plain containers and tensors, so ``torch.load(...,
weights_only=True)`` reads it: nothing in the file is ever unpickled as code; written to ``<path>.tmp``
then ``os.replace``d, so a killed writer never leaves a half-written file)::

    {"format": "tarocchini-ppo", "format_version": 2,
     "meta": {"game", "env_id", "env_version", "obs_size", "state_size", "num_actions",
              "config" (the training Args as a dict), "update", "step", "checksum", ...},
     "model": actor-critic state_dict, and in a training checkpoint "optimizer", "value_norm",
     "pool", "ranks" (each rank's random states, pool streams and games in progress), "stats"}

``meta["checksum"]`` is a SHA-256 of the WHOLE content (:func:`content_checksum`: every tensor's
bytes, dtype and shape, every key, number and string of every part: weights, optimizer state, meta and
config, random states, engine state, pool), so a file with any byte of any part changed is refused with
``ValueError`` before anything is used, as is a file that does not load or lacks a part. A checkpoint
written for another version of the environment (``meta["env_id"]`` is not
``tarot_env.ENV_IDS[game]``) is refused by both ids. Format 1 files (written before; their checksum
covers only the weights) are still read for play (``load_network_policy``), never for ``--resume``.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .sparse_input import SparseRows

FORMAT = "tarocchini-ppo"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)  # 1: the checksum covers the weights only (old policy files; play only)
REQUIRED = ("meta", "model")
META_KEYS = ("game", "env_id", "env_version", "obs_size", "state_size", "num_actions", "config",
             "update", "step", "checksum")


# --------------------------------------------------------------------------------------------------
# Policies
# --------------------------------------------------------------------------------------------------
class Policy:
    """Chooses actions from (observation, legal-action mask) pairs.

    A policy with ``needs_game = True`` (the search player, ``agents/players/pimc.py``) decides from the rules
    objects instead: ``act_games(games)`` gives the action of each game's seat to act; the drivers
    (``agents.evaluation.evaluate``, the arena, ``tarot-play``) call it for such a policy.
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
    """A trained actor: greedy (most probable legal action) or sampled from the masked softmax. Its
    ``act_batch`` also takes a batched engine's sparse observations (``reads_sparse``: the search's
    rollouts ask the engine for them, ``agents/players/pimc.py``)."""

    reads_sparse = True

    def __init__(self, model, greedy: bool = True, seed: int | None = None, meta: dict | None = None):
        self.model = model.eval()
        self.greedy = greedy
        self.gen = torch.Generator().manual_seed(0 if seed is None else seed)
        self.meta = meta or {}

    def _logits(self, obs, mask: np.ndarray) -> torch.Tensor:
        """The masked logits of a batch (a mask row without a legal action: ``ValueError``); ``obs`` dense
        rows or a batched engine's sparse ones (``obs_format="sparse"``, read as they are)."""
        o = (torch.as_tensor(np.asarray(obs, dtype=np.float32)) if isinstance(obs, (np.ndarray, list))
             else SparseRows.from_obs(obs))
        m = torch.as_tensor(np.asarray(mask).astype(bool))
        if not bool(m.any(dim=1).all()):
            raise ValueError("a mask row has no legal action")
        return self.model.masked_logits(o, m)

    def frozen_actor(self):
        """For a rollout (weights unchanged throughout): a greedy policy's actor compiled over the engine's
        sparse observations (``agents.players.network.FrozenActor``), or ``None`` (sampled play, another network,
        weights off the CPU or not float32): then ``act_batch``."""
        from .network import ActorCritic, FrozenActor

        p = next(self.model.parameters())
        on_cpu = p.device.type == "cpu" and p.dtype == torch.float32
        if not self.greedy or not isinstance(self.model, ActorCritic) or not on_cpu:
            return None
        return FrozenActor(self.model)

    @torch.no_grad()
    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        logits = self._logits(obs, mask)
        if self.greedy:
            a = logits.argmax(dim=1)
        else:
            a = torch.multinomial(torch.softmax(logits, dim=1), 1, generator=self.gen).squeeze(1)
        return a.numpy()

    @torch.no_grad()
    def values(self, obs, state: np.ndarray | None = None) -> np.ndarray:
        """float64[B]: the network's critic at each row, the expected return of the row's seat to act in reward
        units (the env's ``(own side's score − other's) / reward_scale`` per deal); ``obs`` dense or sparse rows as
        for :meth:`act_batch` (``None`` for a central critic), ``state`` (``env.state()`` rows) for a central critic.
        ``ValueError`` for a model without a critic or a central critic without ``state``."""
        if not hasattr(self.model, "value"):
            raise ValueError(f"{type(self.model).__name__} has no value head (an ActorCritic has)")
        if obs is None:
            o = None
        elif isinstance(obs, (np.ndarray, list)):
            o = torch.as_tensor(np.asarray(obs, dtype=np.float32))
        else:
            o = SparseRows.from_obs(obs)
        s = None if state is None else torch.as_tensor(np.asarray(state, dtype=np.float32))
        return self.model.value(o, s).double().numpy()

    @torch.no_grad()
    def probs(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """float64[B, A]: the network's action probabilities (the masked softmax; 0 where illegal)."""
        return torch.softmax(self._logits(obs, mask).double(), dim=1).numpy()


# --------------------------------------------------------------------------------------------------
# Checkpoints
# --------------------------------------------------------------------------------------------------
def model_checksum(state_dict: dict[str, torch.Tensor]) -> str:
    """SHA-256 of the model tensors alone (format 1 files)."""
    h = hashlib.sha256()
    for k in sorted(state_dict):
        t = state_dict[k].detach().cpu().contiguous()
        h.update(k.encode())
        h.update(str(t.dtype).encode())
        h.update(str(tuple(t.shape)).encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()


def content_checksum(payload: Any) -> str:
    """SHA-256 of everything in ``payload`` except ``meta["checksum"]`` (format 2).

    A canonical walk: each value is fed with a type tag, dicts in sorted key order (keys tagged by
    type, so ``1`` and ``"1"`` differ), lists in order, tensors as dtype, shape and raw bytes, floats
    by ``repr`` (exact), so any change of any part changes the digest.
    """
    h = hashlib.sha256()

    def feed(x: Any) -> None:
        if isinstance(x, torch.Tensor):
            t = x.detach().cpu().reshape(-1).contiguous()
            h.update(b"T" + str(x.dtype).encode() + str(tuple(x.shape)).encode())
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        elif isinstance(x, dict):
            h.update(b"D%d" % len(x))
            for k in sorted(x, key=lambda k: (type(k).__name__, str(k))):
                if x is payload.get("meta") and k == "checksum":
                    continue
                h.update(f"K{type(k).__name__}:{k}".encode() + b"\0")
                feed(x[k])
        elif isinstance(x, (list, tuple)):
            h.update(b"L%d" % len(x))
            for v in x:
                feed(v)
        elif isinstance(x, (bool, int, float, str, type(None))):
            h.update(f"{type(x).__name__}:{x!r}".encode() + b"\0")
        else:
            raise TypeError(f"a checkpoint may hold tensors, containers, numbers and strings, not {type(x).__name__}")

    feed(payload)
    return h.hexdigest()


def save_checkpoint(path: str | os.PathLike, payload: dict[str, Any]) -> None:
    """Write ``payload`` atomically (tmp file + ``os.replace``), adding format and the whole-content
    checksum. Tensors are written on the CPU (a checkpoint written on any device loads on any other)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = _on_cpu(dict(payload))
    payload["format"], payload["format_version"] = FORMAT, FORMAT_VERSION
    payload["meta"] = dict(payload["meta"], checksum="")
    payload["meta"]["checksum"] = content_checksum(payload)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        torch.save(payload, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _on_cpu(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu()
    if isinstance(x, dict):
        return {k: _on_cpu(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_on_cpu(v) for v in x)
    return x


def unreadable_reason(path: Path, error: Exception) -> str:
    """Why ``torch.load(path, weights_only=True)`` failed, in plain words (torch's own messages are pages of
    advice about ``weights_only``, which is never turned off here)."""
    import pickle
    import zipfile

    if not zipfile.is_zipfile(path):
        return ("it is not a checkpoint file (a checkpoint is a PyTorch zip archive; this is another kind of "
                "file, or one damaged or cut short)")
    if isinstance(error, pickle.UnpicklingError):
        return ("it holds Python objects other than tensors and plain data, which are never loaded (only "
                "weights and plain values are read from a checkpoint, never code)")
    return "it is damaged: the PyTorch archive cannot be read through (a part is missing or changed)"


def load_checkpoint(path: str | os.PathLike, game: str | None = None, *,
                    any_env_version: bool = False) -> dict[str, Any]:
    """Read and verify a checkpoint (``weights_only=True``, onto the CPU); a bad file raises ``ValueError``.

    Checks, before anything is used: the format, every required part, the checksum of the whole content
    (format 2; format 1: the weights), the game (when ``game`` is given) and the environment id (that
    it is the current one, ``tarot_env.ENV_IDS``; ``any_env_version=True`` skips only this check, for a
    migration script that reads an older version on purpose).
    """
    import tarot_env

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"checkpoint {str(path)!r} does not exist")
    try:
        ck = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated / garbage / not a torch file / not plain data
        raise ValueError(f"corrupt checkpoint {str(path)!r}: {unreadable_reason(path, e)}") from None
    if not isinstance(ck, dict) or ck.get("format") != FORMAT:
        raise ValueError(f"corrupt checkpoint {str(path)!r}: not a {FORMAT} file")
    if ck.get("format_version") not in READABLE_VERSIONS:
        raise ValueError(f"checkpoint {str(path)!r} has format version {ck.get('format_version')!r}; "
                         f"this version reads {list(READABLE_VERSIONS)}")
    missing = [k for k in REQUIRED if k not in ck]
    meta = ck.get("meta", {})
    missing += [f"meta.{k}" for k in META_KEYS if not isinstance(meta, dict) or k not in meta]
    if missing:
        raise ValueError(f"corrupt checkpoint {str(path)!r}: missing {missing}")
    if not isinstance(ck["model"], dict) or not all(isinstance(v, torch.Tensor) for v in ck["model"].values()):
        raise ValueError(f"corrupt checkpoint {str(path)!r}: model is not a dict of tensors")
    if ck["format_version"] == 1:
        if model_checksum(ck["model"]) != meta["checksum"]:
            raise ValueError(f"corrupt checkpoint {str(path)!r}: model tensors do not match their checksum")
    elif content_checksum(ck) != meta["checksum"]:
        raise ValueError(f"corrupt checkpoint {str(path)!r}: its content does not match its checksum "
                         "(a part was changed or damaged after it was written)")
    if game is not None and meta["game"] != game:
        raise ValueError(f"checkpoint {str(path)!r} was trained for game {meta['game']!r}, not {game!r}")
    want = tarot_env.ENV_IDS.get(meta["game"])
    if want is None:
        raise ValueError(f"checkpoint {str(path)!r} is for game {meta['game']!r}, which this tarot_env "
                         f"does not have (games: {sorted(tarot_env.ENV_IDS)})")
    if meta["env_id"] != want and not any_env_version:
        raise ValueError(f"checkpoint {str(path)!r} was written for environment {meta['env_id']}, but this "
                         f"tarot_env serves {want}: train a new policy for {want}")
    return ck


def build_model(meta: dict):
    """The ActorCritic network described by a checkpoint's meta (weights not loaded)."""
    from .network import ActorCritic

    cfg = meta["config"]
    return ActorCritic(meta["obs_size"], meta["num_actions"], list(cfg["hidden"]),
                       critic=cfg["critic"], state_size=meta["state_size"])


def load_network_policy(path: str | os.PathLike, game: str | None = None, *, greedy: bool = True,
                        seed: int | None = None) -> NetworkPolicy:
    """A :class:`NetworkPolicy` from a checkpoint; checks the game and the obs/action sizes.

    (The network of a checkpoint file only; ``agents.players.registry.load_policy(spec, game)`` is the public way
    to get any player, checkpoints included.)

    ``game`` (optional) must be the game the checkpoint was trained for; the observation and action
    sizes stored in the file must match the current environment's.
    """
    from ..spec import make_spec

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
    in progress (for ``--resume``); a policy file keeps only what ``load_network_policy`` needs.
    """
    ck = load_checkpoint(src)
    meta = {k: v for k, v in ck["meta"].items() if k != "checksum"}
    meta["exported_from"] = str(src)
    save_checkpoint(dst, {"meta": meta, "model": ck["model"]})
    return meta
