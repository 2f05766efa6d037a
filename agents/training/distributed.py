"""torch.distributed for the trainer: this process's place in the run (``Ranks``), joining and leaving
the process group, and the small collectives the PPO loop uses. Every helper is a no-op for one
process (``world == 1``), so a plain ``tarot-train`` never touches ``torch.distributed``.

* joining: ``init_ranks`` (reads torchrun's ``WORLD_SIZE``/``RANK``/``LOCAL_RANK``/``LOCAL_WORLD_SIZE``,
  picks the device, gloo on the CPU, NCCL on CUDA plus a gloo group for the CPU exchanges),
  ``close_ranks``, ``barrier``;
* splitting a run: ``rank_seed`` (rank 0 keeps the run's seed), ``rank_share`` (the games of a rank);
* the model: ``wrap_ddp`` (``DistributedDataParallel`` averages the gradients), ``weights_digest`` and
  ``check_in_sync`` (``check_sync: true``);
* small exchanges of Python objects and numpy arrays over the gloo group: ``broadcast``, ``all_gather``,
  ``gather_to_main``, ``all_sum``.

The trainer (``agents.training.ppo``) re-exports these names; this module imports no other part of ``agents``.
More: docs/training-distributed.md.
"""
from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn


@dataclass
class Ranks:
    """This process's place in the run: ``rank`` of ``world`` (``local_rank`` of ``local_world`` on its
    machine); ``group`` is the gloo group of the small CPU exchanges (None for one process)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    local_world: int = 1
    group: Any = None
    owns_group: bool = False

    @property
    def main(self) -> bool:
        return self.rank == 0


def resolve_device(name: str, local_rank: int = 0, local_world: int = 1) -> torch.device:
    """``auto`` | ``cpu`` | ``cuda`` | ``cuda:N`` -> a device (``cuda`` with several ranks per machine:
    the rank's own GPU ``cuda:<local_rank>``); CUDA asked for where there is none is a ``ValueError``."""
    if name == "cpu" or (name == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError(f"device {name!r}: this torch ({torch.__version__}) sees no CUDA device; "
                         "use device=cpu or device=auto")
    if name in ("auto", "cuda"):
        index = local_rank
    elif local_world > 1:
        raise ValueError(f"device {name!r} names one GPU but {local_world} ranks run on this machine; "
                         "use device=cuda (each rank takes cuda:<local rank>)")
    else:
        index = int(name.split(":")[1])
    if index >= torch.cuda.device_count():
        raise ValueError(f"device 'cuda:{index}' does not exist: this machine has "
                         f"{torch.cuda.device_count()} CUDA device(s)")
    return torch.device("cuda", index)


def default_threads(local_world: int) -> int:
    """``threads: 0``: the cores this process may use, shared evenly by the ranks on this machine."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, local_world))


def init_ranks(args: Any) -> tuple[Ranks, torch.device]:
    """Join the process group when started by torchrun (``WORLD_SIZE`` > 1), else one process.
    ``args`` is the trainer's ``Args`` (``device``, ``amp``, ``num_envs`` and ``dist_timeout_s`` are read).

    gloo on the CPU, NCCL on CUDA (plus a gloo group for the small CPU exchanges). A rank that cannot
    reach the rendezvous within ``dist_timeout_s`` raises a one-line ``ValueError``.
    """
    env = os.environ
    world = int(env.get("WORLD_SIZE", "1"))
    r = Ranks(rank=int(env.get("RANK", "0")), world=world, local_rank=int(env.get("LOCAL_RANK", "0")),
              local_world=int(env.get("LOCAL_WORLD_SIZE", "1")))
    device = resolve_device(args.device, r.local_rank, r.local_world)
    if args.amp and device.type != "cuda":
        raise ValueError(f"amp: true needs a CUDA device (this run trains on {device})")
    if world == 1:
        return r, device
    if args.num_envs < world:
        raise ValueError(f"num_envs={args.num_envs} games cannot be split between {world} ranks; "
                         f"use num_envs >= {world}")
    if not dist.is_initialized():
        backend = "nccl" if device.type == "cuda" else "gloo"
        if device.type == "cuda":
            torch.cuda.set_device(device)
        try:
            with _cpp_stderr_held() as held:  # c10d's own retry logs: shown only if the join succeeds
                dist.init_process_group(backend, rank=r.rank, world_size=world,
                                        timeout=datetime.timedelta(seconds=args.dist_timeout_s))
                held.keep = True
        except Exception as e:  # noqa: BLE001  (store or peers unreachable: one line, not a traceback)
            where = f"{env.get('MASTER_ADDR', '?')}:{env.get('MASTER_PORT', '?')}"
            first = (str(e).strip().splitlines() or [""])[0][:200]
            raise ValueError(f"could not join the other ranks at {where} within {args.dist_timeout_s:g} s "
                             f"({type(e).__name__}: {first})") from None
        r.owns_group = True
    r.group = dist.new_group(backend="gloo") if dist.get_backend() == "nccl" else dist.group.WORLD
    return r, device


@contextlib.contextmanager
def _cpp_stderr_held():
    """Hold what C++ code writes to file descriptor 2 meanwhile; write it out only if ``keep`` is set."""
    import sys
    import tempfile

    class Held:
        keep = False

    held = Held()
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield held
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            if held.keep:
                tmp.seek(0)
                sys.stderr.write(tmp.read().decode(errors="replace"))


def close_ranks(r: Ranks) -> None:
    if r.owns_group and dist.is_initialized():
        dist.destroy_process_group()


def rank_seed(seed: int, rank: int) -> int:
    """Rank 0 uses the run's seed (one process is unchanged); rank r > 0 a seed derived from (seed, r)."""
    return seed if rank == 0 else int(np.random.SeedSequence([seed, rank]).generate_state(1)[0])


def rank_share(num_envs: int, r: Ranks) -> int:
    """The games of rank r: an even split of ``num_envs`` (the first ranks take the remainder)."""
    return num_envs // r.world + (r.rank < num_envs % r.world)


def broadcast(r: Ranks, obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank."""
    if r.world == 1:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0, group=r.group)
    return box[0]


def all_gather(r: Ranks, obj: Any) -> list:
    if r.world == 1:
        return [obj]
    out: list = [None] * r.world
    dist.all_gather_object(out, obj, group=r.group)
    return out


def gather_to_main(r: Ranks, obj: Any) -> list | None:
    """Every rank's ``obj`` on rank 0 (in rank order), None elsewhere."""
    if r.world == 1:
        return [obj]
    out: list | None = [None] * r.world if r.main else None
    dist.gather_object(obj, out, dst=0, group=r.group)
    return out


def all_sum(r: Ranks, x: np.ndarray) -> np.ndarray:
    """The element-wise sum over the ranks (float64; exact for counts)."""
    if r.world == 1:
        return x
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
    dist.all_reduce(t, group=r.group)
    return t.numpy()


def weights_digest(model: nn.Module) -> int:
    """A 63-bit digest of every parameter's bytes (equal on every rank while the ranks agree)."""
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return int.from_bytes(h.digest()[:8], "little") >> 1


def check_in_sync(r: Ranks, model: nn.Module, update: int) -> None:
    """``check_sync``: every rank's weights must be bit for bit rank 0's."""
    digests = all_gather(r, weights_digest(model))
    if len(set(digests)) > 1:
        raise RuntimeError(f"the ranks' weights differ after update {update}: digests {digests}")


def barrier(r: Ranks) -> None:
    """Wait until every rank gets here (on the gloo group of the small exchanges)."""
    if r.world > 1:
        dist.barrier(group=r.group)


def wrap_ddp(model: nn.Module, r: Ranks, device: torch.device) -> nn.Module:
    """What the updates call: ``model`` itself for one process, else its ``DistributedDataParallel``
    wrapper (which averages the gradients over the ranks in ``backward``)."""
    if r.world == 1:
        return model
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
