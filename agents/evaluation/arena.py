"""The arena: any set of policies (baselines, checkpoints, SB3 models, objects) play duplicate deals, pairwise.

Duplicate deals. A deal is a seed: ``Game(config, seed)`` deals the same cards to the same seats
whatever the players do. Each deal is played twice per pair: policy A on team 0 (seats 0 and 2; in
Millone seat 0) against B, then with the teams exchanged (A on seats 1 and 3 / seat 1), so each side
plays both sets of cards and the card luck cancels. The deal's **margin** is the mean over the two
plays of A's side's deal score minus B's (game points; Partita ±40 per deal, Ottocento and Millone
the hand scores). One deal = the first deal (hand) of a game: Partita's deal, Ottocento's and
Millone's first hand (a hand thrown in *a monte* counts as margin 0; a Millone game claimed
before the discard counts its claim score).

Per pair the arena reports the mean margin per deal with a **bootstrap 95% confidence interval**
(percentile method, ``bootstrap`` resamples of the deals), the share of deals won by A (margin > 0)
and tied. Every policy gets a **rating**: its expected margin per duplicate deal, in game points,
against ``random`` (anchored at 0; without ``random`` in the field, against the field's average),
with a 95% interval. It is the weighted least-squares fit of ``rating_A - rating_B`` to every pair's
mean margin, each pair weighted by ``deals / variance of its margins`` (:func:`margin_ratings`): a
weighted combination of the pair means, each an unbiased estimate for any number of deals, so more
deals shrink the interval (as ``1/sqrt(deals)``) without moving the rating systematically. A win-odds
(Bradley–Terry/Elo, or openskill's Weng–Lin) rating cannot do that: a pair won on every deal has
unbounded log-odds, so its estimate grows with the number of deals (``docs/arena.md``).

Parallel and reproducible. The deal seeds come from ``seed``; the deals are cut into fixed chunks of
``chunk`` deals, each chunk of each pair is one task with its own policy seeds (``SeedSequence([seed,
pair, chunk])``), and tasks run in ``workers`` processes. The result depends only on ``seed``, the
policies and the options — not on the number of workers.

Policies. :func:`tournament` takes player specs (``agents.players.registry.load_policy``: baseline names,
``ppo``, checkpoint paths, ``sb3:PATH.zip``) and policy objects alike (anything with ``act_batch(obs,
mask)``, or ``act(obs, mask)``, or a callable ``f(obs, mask)``). Every task gets its own copy of each
policy with its randomness reseeded (a numpy ``rng`` or torch ``gen`` attribute, as the project's
policies keep it), so a stochastic object gives the same result whatever the number of workers. The
worker processes are forked and inherit the objects (where ``fork`` is unavailable, a tournament with
objects plays in this process).

Interrupted matches go on. With ``journal`` (the command line: always ``<out>/journal.jsonl``) every
finished task's margins are appended to a JSON-lines file as it arrives: its first line names the
match (game, options, deals, seed, chunk, pairs, each player spec and the SHA-256 of every file a spec
reads, ``ppo`` included), each further line one task with its ``check`` (a hash chain: an edited, moved or
removed line is refused). ``resume=True`` (``--resume``) plays only the
tasks not in it, and the result is the one an uninterrupted run gives, because a task's result depends
only on its seeds. A journal of another match is refused (the error says what differs); a last line cut
short by a kill is dropped; nothing in it is unpickled. An unfinished journal is never replaced
silently, nor another match's results: without ``resume`` a match refuses to start over them unless
``restart=True`` (``--restart``).
Policy objects cannot be journalled (their content has no name to check).

Outputs (``write_outputs``): a terminal table, ``arena.md`` (Markdown), ``pairs.csv``,
``ratings.csv``, ``arena.json`` and ``arena.png`` (matplotlib, the ``arena`` extra). A progress bar
(tqdm, in the ``arena``/``train`` extras) shows on a terminal; ``--no-progress`` turns it off.
"""
from __future__ import annotations

import copy
import csv
import hashlib
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import tarot_env

from ..names import MIN_DEALS

__all__ = ["PairResult", "ArenaResult", "tournament", "run_arena", "bootstrap_ci", "margin_ratings",
           "write_outputs", "main"]

DEFAULT_OPTIONS: dict = {}  # per game; the arena plays only first deals, so none is needed


@dataclass
class PairResult:
    a: str
    b: str
    deals: int
    mean_margin: float
    ci_low: float
    ci_high: float
    win_share: float
    tie_share: float
    margins: np.ndarray = field(repr=False)

    @property
    def win_ci95(self) -> tuple[float, float]:
        """The 95% Wilson interval of ``win_share`` (``agents.evaluation.evaluate.wilson_interval``)."""
        from .evaluate import wilson_interval

        return wilson_interval(int((self.margins > 0).sum()), self.deals)

    def as_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "deals": self.deals, "mean_margin": self.mean_margin,
                "ci_low": self.ci_low, "ci_high": self.ci_high, "win_share": self.win_share,
                "win_ci95": list(self.win_ci95), "tie_share": self.tie_share}


@dataclass
class ArenaResult:
    game: str
    policies: list[str]        # display names (unique)
    sources: list[str]         # what was played: player specs, or "<object TypeName>"
    deals: int
    seed: int
    options: dict
    pairs: list[PairResult]
    ratings: dict[str, float]      # expected margin per deal against the anchor (game points)
    rating_sd: dict[str, float]    # its standard error; 95% interval: rating ± 1.96 · sd
    anchor: str | None = None      # the policy rated 0 (None: the field's average is 0)

    def as_dict(self) -> dict:
        return {"game": self.game, "policies": self.policies, "sources": self.sources, "deals": self.deals,
                "seed": self.seed, "options": self.options, "pairs": [p.as_dict() for p in self.pairs],
                "ratings": self.ratings, "rating_sd": self.rating_sd, "anchor": self.anchor}


# --------------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------------
def bootstrap_ci(x: np.ndarray, resamples: int = 2000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of ``x`` (deterministic for a given ``seed``)."""
    x = np.asarray(x, dtype=np.float64)
    if len(x) == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    step = max(1, 2_000_000 // max(len(x), 1))
    for i in range(0, resamples, step):
        k = min(step, resamples - i)
        means[i:i + k] = x[rng.integers(len(x), size=(k, len(x)))].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def margin_ratings(names: list[str], pairs: list[tuple[int, int, np.ndarray]], anchor: str | None = "random"
                   ) -> tuple[dict[str, float], dict[str, float]]:
    """Ratings from per-deal margins: weighted least squares of ``r_i - r_j`` on each pair's mean margin.

    ``pairs``: ``(i, j, margins)``, the margins of ``i`` against ``j`` per duplicate deal. A pair's mean
    has variance ``s² / n`` (``s``: the sample sd of its margins; a pair whose margins are all equal
    gets a variance floor of 1e-9 times the pooled variance); its weight is the inverse. ``anchor`` (when
    among ``names``) is rated 0, else the ratings average 0. Returns ``(ratings, sd)``, the standard
    errors from the fit's covariance ``(AᵀWA)⁻¹`` (0 for the anchor). Raises ``ValueError`` when the
    pairs do not connect every policy.
    """
    k = len(names)
    if not pairs:
        raise ValueError("margin_ratings needs at least one pair")
    means = np.array([float(np.mean(m)) for _, _, m in pairs])
    var = np.array([float(np.var(m, ddof=1)) / len(m) if len(m) > 1 else np.nan for _, _, m in pairs])
    pooled = float(np.nanmean(var)) if np.isfinite(var).any() and np.nanmean(var) > 0 else 1.0
    var = np.where(np.isfinite(var), np.maximum(var, 1e-9 * pooled), pooled)
    A = np.zeros((len(pairs), k))
    for row, (i, j, _) in enumerate(pairs):
        A[row, i], A[row, j] = 1.0, -1.0
    ref = names.index(anchor) if anchor in names else 0
    keep = [c for c in range(k) if c != ref]  # the reference is fixed at 0
    M = (A[:, keep] / var[:, None]).T @ A[:, keep]
    if k > 1 and np.linalg.matrix_rank(M) < k - 1:
        raise ValueError("the pairs played do not connect every policy: no common rating scale")
    cov_free = np.linalg.inv(M) if k > 1 else np.zeros((0, 0))
    r = np.zeros(k)
    r[keep] = cov_free @ ((A[:, keep] / var[:, None]).T @ means)
    cov = np.zeros((k, k))
    cov[np.ix_(keep, keep)] = cov_free
    if anchor not in names:  # centre: the field's average is 0
        C = np.eye(k) - 1.0 / k
        r, cov = C @ r, C @ cov @ C.T
    sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return ({n: float(v) for n, v in zip(names, r)}, {n: float(v) for n, v in zip(names, sd)})


# --------------------------------------------------------------------------------------------------
# playing
# --------------------------------------------------------------------------------------------------
_CACHE: dict = {}   # policies loaded from specs, once per process
_LIVE: dict = {}    # policy objects of the running tournament, by index (inherited by forked workers)


class _BatchOf:
    """``act_batch`` for an object with only ``act(obs, mask)`` or a plain callable ``f(obs, mask)``."""

    def __init__(self, obj):
        self.obj = obj
        self._act = obj.act if hasattr(obj, "act") else obj

    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.array([int(self._act(o, m)) for o, m in zip(obs, mask)], dtype=np.int64)


def _as_player(p, k: int):
    """A policy object as the arena plays it (``act_batch``), or a ``TypeError`` naming entry ``k``."""
    if hasattr(p, "act_batch"):
        return p
    if hasattr(p, "act") or callable(p):
        return _BatchOf(p)
    raise TypeError(f"policy {k} is a {type(p).__name__}: give a player spec (str or path) or an object with "
                    f"act_batch(obs, mask), act(obs, mask), or a callable f(obs, mask)")


def _reseeded(pol, seed: int):
    """A shallow copy of ``pol`` whose random generator (numpy ``rng`` / torch ``gen``) is seeded ``seed``."""
    if isinstance(pol, _BatchOf):
        return _BatchOf(_reseeded(pol.obj, seed))
    pol = copy.copy(pol)
    if isinstance(getattr(pol, "rng", None), np.random.Generator):
        pol.rng = np.random.default_rng(seed)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(getattr(pol, "gen", None), torch.Generator):
        pol.gen = torch.Generator().manual_seed(seed)
    return pol


def _cache_key(spec: str, game: str, options: dict) -> tuple:
    return spec, game, json.dumps(options, sort_keys=True)


def _policy(entry, game: str, options: dict, seed: int):
    """The policy of one task: a spec loaded (once per process) or a tournament object, reseeded."""
    if isinstance(entry, int):
        return _reseeded(_LIVE[entry], seed)
    from ..players.registry import is_search_name, load_policy

    if is_search_name(entry):  # a new, seeded search player per task, like the baselines (no weights to cache)
        return load_policy(entry, game, options=options, seed=seed)
    key = _cache_key(entry, game, options)
    if key not in _CACHE:
        _CACHE[key] = load_policy(entry, game, options=options, seed=seed)
    return _reseeded(_CACHE[key], seed)


def _one_torch_thread() -> None:
    """One torch thread per worker process: the workers are the parallelism."""
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _task(args) -> tuple[int, int, np.ndarray]:
    """One chunk of one pair: returns (pair index, chunk index, margins)."""
    game, options, pair_idx, chunk_idx, src_a, src_b, seeds, root = args
    _one_torch_thread()  # first: a forked worker must not start the thread pool it inherited
    from ..spec import make_spec
    from .evaluate import play_first_deals

    spec = make_spec(game, options)
    ss = np.random.SeedSequence([root, pair_idx, chunk_idx]).generate_state(2)
    a = _policy(src_a, game, options, int(ss[0]))
    b = _policy(src_b, game, options, int(ss[1]))
    _one_torch_thread()  # again, in case loading the players imported torch
    d0 = play_first_deals(spec, seeds, [(a, b)] * len(seeds))   # A holds team 0
    d1 = -play_first_deals(spec, seeds, [(b, a)] * len(seeds))  # A holds team 1: the cards exchanged
    return pair_idx, chunk_idx, (d0 + d1) / 2.0


# --------------------------------------------------------------------------------------------------
# the journal: finished tasks kept as they arrive, so that an interrupted match can go on
# --------------------------------------------------------------------------------------------------
JOURNAL_FORMAT = "tarocchini-arena-journal"
JOURNAL_VERSION = 2  # 2: every task line carries the hash chain ("check")
TASK_KEYS = {"pair", "chunk", "margins", "check"}


def chain(previous: str, row: dict) -> str:
    """The check of a task line: SHA-256 over the previous line's check (for the first task, over the
    header line) and this line's task. Editing, dropping or reordering a line breaks every check after it;
    it guards against hand edits and damage, not against someone who recomputes the chain."""
    task = json.dumps({k: row[k] for k in ("pair", "chunk", "margins")}, sort_keys=True)
    return hashlib.sha256(f"{previous}\n{task}".encode()).hexdigest()


def header_check(header_line: str) -> str:
    """Where the chain starts: SHA-256 of the header line as written."""
    return hashlib.sha256(header_line.rstrip("\n").encode()).hexdigest()


class _Journal:
    """The journal file being appended to, and the check of its last line (the chain goes on from it)."""

    def __init__(self, f, last: str):
        self.f, self.last = f, last

    def write(self, pair: int, chunk: int, margins) -> None:
        row = {"pair": pair, "chunk": chunk, "margins": [float(x) for x in margins]}
        row["check"] = self.last = chain(self.last, row)
        self.f.write(json.dumps(row) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _spec_files(spec: str, game: str) -> dict[str, str]:
    """The SHA-256 of every file that player ``spec`` reads: ``ppo`` (alone, in ``ppo+pimc`` or as a
    search option) is the shipped ``agents/pretrained/<game>.pt``, any other token naming a file is that
    file. A journal made with other weights is then not taken for this match."""
    from ..players.registry import PRETRAINED, SB3_PREFIX

    files: dict[str, str] = {}
    s = spec[len(SB3_PREFIX):] if spec.startswith(SB3_PREFIX) else spec
    tokens = [s] + [t for part in s.replace("+", ",").replace(":", ",").split(",") for t in part.split("=")]
    for t in tokens:
        path = PRETRAINED / f"{game}.pt" if t == "ppo" else Path(t)
        if t and path.is_file():
            files[t] = _file_digest(path)
    return files


def _journal_header(game: str, opts: dict, deals: int, seed: int, chunk: int, specs: list[str],
                    pairs: list[tuple[int, int]]) -> dict:
    header = {"format": JOURNAL_FORMAT, "version": JOURNAL_VERSION, "tarot_env": tarot_env.__version__,
              "game": game, "options": opts, "deals": deals, "seed": seed, "chunk": chunk, "players": specs,
              "files": {s: _spec_files(s, game) for s in specs}, "pairs": [list(p) for p in pairs]}
    return json.loads(json.dumps(header))  # as it reads back from the file (tuples become lists)


def _journal_rows(path: Path) -> tuple[dict | None, list]:
    """The journal at ``path`` as (its header, or None when the file is not an arena journal; each further
    line parsed from JSON, or None where it is not JSON)."""
    rows: list = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            rows.append(None)
    head = rows[0] if rows else None
    if not isinstance(head, dict) or head.get("format") != JOURNAL_FORMAT:
        return None, rows[1:]
    return head, rows[1:]


def _read_journal(path: Path, header: dict, sizes: dict[tuple[int, int], int]) -> dict[tuple[int, int], np.ndarray]:
    """The finished tasks ``{(pair, chunk): margins}`` of journal ``path`` for the match ``header``
    (``sizes``: each task's number of deals). A ``ValueError`` when the file is not a journal of this
    match or a line (other than a last line cut short) is malformed; nothing is changed then."""
    head, rows = _journal_rows(path)
    if head is None:
        raise ValueError(f"{str(path)!r} is not an arena journal (its first line should be a {JOURNAL_FORMAT!r} "
                         "header): give another --out, or --restart to start a new one")
    if head.get("version") != JOURNAL_VERSION:
        raise ValueError(f"journal {str(path)!r} has version {head.get('version')!r}; this arena reads version "
                         f"{JOURNAL_VERSION}: --restart starts a new one")
    what = _differences(head, header)
    if what:
        raise ValueError(f"journal {str(path)!r} is of another match ({what}): give another --out, or "
                         "--restart to start a new one there (its finished chunks are lost)")
    done: dict[tuple[int, int], np.ndarray] = {}
    last = header_check(path.read_text().split("\n", 1)[0])
    for n, row in enumerate(rows, start=2):
        if row is None:
            if n == len(rows) + 1:  # the last line, cut short when the run was killed: that task is played again
                break
            raise ValueError(f"journal {str(path)!r}, line {n}: not JSON")
        _check_task_line(path, n, row, sizes)
        if row["check"] != chain(last, row):
            raise ValueError(f"journal {str(path)!r}, line {n}: its check does not match (the line, or one "
                             "before it, was edited, moved or removed after it was written): --restart plays "
                             "the match again")
        last = row["check"]
        done[(row["pair"], row["chunk"])] = np.asarray(row["margins"], dtype=np.float64)
    return done


def _check_task_line(path: Path, n: int, row: Any, sizes: dict[tuple[int, int], int]) -> None:
    """A ``ValueError`` unless line ``n`` is a task of this match: its keys, types and number of margins."""
    ok = (isinstance(row, dict) and set(row) == TASK_KEYS and isinstance(row["check"], str)
          and all(type(row[k]) is int for k in ("pair", "chunk")) and (row["pair"], row["chunk"]) in sizes
          and isinstance(row["margins"], list) and len(row["margins"]) == sizes.get((row["pair"], row["chunk"]))
          and all(type(x) in (int, float) and math.isfinite(x) for x in row["margins"]))
    if not ok:
        raise ValueError(f"journal {str(path)!r}, line {n}: not a task of this match (want "
                         "{\"pair\": int, \"chunk\": int, \"margins\": [one finite number per deal of the chunk], "
                         "\"check\": the hash chain})")


def _differences(head: dict, header: dict) -> str:
    """What differs between a journal's header and this match's (empty when it is this match)."""
    differ = [k for k in header if head.get(k) != header[k]]
    return "; ".join(f"{k}: journal {head.get(k)!r}, this match {header[k]!r}" for k in differ)


def _unfinished(path: Path) -> tuple[int, int] | None:
    """(finished tasks, tasks) of the arena journal at ``path`` when it is one and unfinished, else None."""
    try:
        head, rows = _journal_rows(path)
        tasks = len(head["pairs"]) * -(-int(head["deals"]) // int(head["chunk"]))
    except (OSError, UnicodeDecodeError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    done = sum(row is not None for row in rows)  # a line cut short by a kill is not a finished chunk
    return (done, tasks) if done < tasks else None


def _unique(labels: list[str]) -> list[str]:
    out: list[str] = []
    for base in labels:
        name, k = base, 2
        while name in out:
            name, k = f"{base}#{k}", k + 1
        out.append(name)
    return out


def _progress(total: int, enabled: bool | None, desc: str):
    """A tqdm bar over ``total`` deals, or None (off, not a terminal, or tqdm not installed)."""
    if enabled is None:
        enabled = sys.stderr.isatty()
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit="deal", file=sys.stderr)


def tournament(policies: list, game: str, deals: int = 200, *, seed: int = 0, workers: int = 1,
               options: dict | None = None, chunk: int = 25, bootstrap: int = 2000,
               pairs: list[tuple[int, int]] | None = None, names: list[str] | None = None,
               progress: bool | None = False, journal: str | os.PathLike | None = None,
               resume: bool = False, restart: bool = False) -> ArenaResult:
    """Every pair of ``policies`` on ``deals`` duplicate deals of ``game`` (see the module docstring).

    ``policies``: player specs (``"random"``, ``"heuristic"``, ``"ppo"``, a checkpoint path,
    ``"sb3:PATH.zip"`` …) and/or policy objects. ``names``: display names (default: the spec's label,
    an object's ``name`` attribute, a function's ``__name__`` or the type name; made unique with
    ``#2`` …). ``pairs``: the index pairs to play (default: all). ``progress``: a tqdm bar (``None``:
    only when stderr is a terminal). ``journal``: a JSON-lines file where each finished task is kept as
    it arrives (a new file, or with ``resume`` the one of an interrupted run of this match, whose tasks
    are not played again; module docstring). An unfinished journal at ``journal`` is refused without
    ``resume`` unless ``restart`` (start a new one, losing its chunks).
    """
    if game not in tarot_env.ENV_IDS:
        raise ValueError(f"unknown game {game!r}; games are {sorted(tarot_env.ENV_IDS)}")
    policies = list(policies)
    _check_tournament(policies, deals, chunk, names, journal, resume, restart)
    opts = dict(DEFAULT_OPTIONS.get(game, {}))
    opts.update(options or {})
    entries, sources, labels, live = _load_players(policies, game, opts)
    names = _unique(list(names) if names is not None else labels)
    if pairs is None:
        pairs = [(i, j) for i in range(len(policies)) for j in range(i + 1, len(policies))]
    for i, j in pairs:
        if not (0 <= i < len(policies) and 0 <= j < len(policies)) or i == j:
            raise ValueError(f"pair {(i, j)} must be two different indices in 0..{len(policies) - 1}")
    deal_seeds = [int(s) for s in np.random.default_rng(seed).integers(2**62, size=deals)]
    chunks = [deal_seeds[i:i + chunk] for i in range(0, deals, chunk)]
    tasks = [(game, opts, p, c, entries[i], entries[j], chunks[c], seed)
             for p, (i, j) in enumerate(pairs) for c in range(len(chunks))]
    margins: dict[int, list] = {p: [None] * len(chunks) for p in range(len(pairs))}
    log = None
    if journal is not None:
        if live:
            raise ValueError(f"a journal needs every player as a spec (a name or a file); policies "
                             f"{sorted(live)} are objects")
        header = _journal_header(game, opts, deals, seed, chunk, sources, pairs)
        log, tasks = _open_journal(Path(journal), header, tasks, margins, resume, restart)
    bar = _progress(sum(len(t[6]) for t in tasks), progress, f"{game} arena")
    _LIVE.clear()
    _LIVE.update(live)
    try:
        _play_tasks(tasks, workers, bool(live), margins, log, bar)
    finally:
        _LIVE.clear()
        if bar is not None:
            bar.close()
        if log is not None:
            log.close()
    out, fit = _pair_results(pairs, margins, names, seed, bootstrap)
    anchor = "random" if "random" in names else None
    ratings, sd = margin_ratings(names, fit, anchor)
    return ArenaResult(game, names, sources, deals, seed, opts, out, ratings, sd, anchor)


def _check_tournament(policies: list, deals: int, chunk: int, names: list[str] | None,
                      journal: str | os.PathLike | None, resume: bool, restart: bool) -> None:
    """:func:`tournament`'s arguments that need no player loaded: a ``ValueError`` naming the first wrong one."""
    if len(policies) < 2:
        raise ValueError(f"the arena needs at least two policies (got {len(policies)})")
    if deals < MIN_DEALS:
        raise ValueError(f"deals must be at least {MIN_DEALS} (got {deals})")
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1 (got {chunk})")
    if resume and journal is None:
        raise ValueError("resume needs the journal of the interrupted run (journal=PATH; tarot-arena: --out)")
    if resume and restart:
        raise ValueError("resume goes on with a journal and restart replaces it: ask for one of them")
    if names is not None and len(names) != len(policies):
        raise ValueError(f"names must have one entry per policy ({len(policies)}); got {len(names)}")


def _load_players(policies: list, game: str, opts: dict) -> tuple[list, list[str], list[str], dict[int, Any]]:
    """Each policy as a task entry (a spec string, loaded here into the cache, or the index of a live
    object), its source (for the journal) and its display label; ``live``: the objects by index."""
    from ..players.registry import load_policy, policy_label

    entries: list = []
    sources: list[str] = []
    labels: list[str] = []
    live: dict[int, Any] = {}
    for k, p in enumerate(policies):
        if isinstance(p, (str, os.PathLike)):
            # loaded here: a bad spec fails early with the loader's message; forked workers inherit it
            _CACHE[_cache_key(str(p), game, opts)] = load_policy(str(p), game, options=opts)
            entries.append(str(p))
            sources.append(str(p))
            labels.append(policy_label(str(p)))
        else:
            live[k] = _as_player(p, k)
            entries.append(k)
            sources.append(f"<object {type(p).__name__}>")
            labels.append(str(getattr(p, "name", None) or getattr(p, "__name__", None) or type(p).__name__))
    return entries, sources, labels, live


def _open_journal(path: Path, header: dict, tasks: list, margins: dict[int, list], resume: bool,
                  restart: bool) -> tuple[Any, list]:
    """The journal file to append finished tasks to, and the tasks still to play: with ``resume`` the
    chunks already in the file are put into ``margins`` and not played again; else a new file (an
    unfinished one is refused unless ``restart``)."""
    if resume and path.is_file():
        done = _read_journal(path, header, {(t[2], t[3]): len(t[6]) for t in tasks})
        for (p, c), m in done.items():
            margins[p][c] = m
        tasks = [t for t in tasks if (t[2], t[3]) not in done]
        data = path.read_bytes()
        if not data.endswith(b"\n"):  # drop the line cut short by the kill before appending after it
            with open(path, "r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)
        return _Journal(open(path, "a"), _last_check(path)), tasks
    if not restart:
        _refuse_to_replace(path, header)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(header)
    log = open(path, "w")
    log.write(line + "\n")
    log.flush()
    return _Journal(log, header_check(line)), tasks


def _last_check(path: Path) -> str:
    """The check the chain goes on from: the last task line's, or the header's (a journal just verified)."""
    lines = path.read_text().splitlines()
    return json.loads(lines[-1])["check"] if len(lines) > 1 else header_check(lines[0])


def _refuse_to_replace(path: Path, header: dict) -> None:
    """A ``ValueError`` (nothing changed) when starting this match at journal ``path`` would replace an
    unfinished match, another match's results, or results in its folder that no journal names."""
    if not path.is_file():
        if (path.parent / "arena.json").is_file():
            raise ValueError(f"{str(path.parent)!r} holds arena results without a journal to tell which match "
                             "they are: --restart replaces them (restart=True), or give another --out")
        return
    left = _unfinished(path)
    if left is not None:
        raise ValueError(f"{str(path)!r} is the journal of an unfinished match ({left[0]} of its {left[1]} "
                         "chunks finished): --resume goes on with it (resume=True), --restart starts a new "
                         "one and loses them (restart=True), or give another --out")
    try:
        head, _ = _journal_rows(path)
    except (OSError, UnicodeDecodeError):
        head = None
    what = "it is not an arena journal" if head is None else _differences(head, header)
    if what:
        raise ValueError(f"{str(path.parent)!r} holds the results of another match ({what}): --restart "
                         "replaces them (restart=True), or give another --out")


def _ignore_ctrl_c() -> None:
    """In a worker: Ctrl-C is the main process's to handle (it stops the pool), so no worker prints a traceback."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _play_tasks(tasks: list, workers: int, live: bool, margins: dict[int, list], log, bar) -> None:
    """Play the tasks (in this process, or on a pool of ``workers`` forked where live objects play),
    each result into ``margins``, the journal and the bar as it arrives."""
    import multiprocessing as mp

    fork = "fork" in mp.get_all_start_methods()
    if workers <= 1 or (live and not fork):
        results = map(_task, tasks)
        pool = None
    else:
        pool = (mp.get_context("fork") if fork else mp.get_context()).Pool(workers, initializer=_ignore_ctrl_c)
        results = pool.imap_unordered(_task, tasks)
    try:
        for p, c, m in results:
            margins[p][c] = m
            if log is not None:
                log.write(p, c, m)
            if bar is not None:
                bar.update(len(m))
    except BaseException:  # Ctrl-C included: the workers stop now, the finished chunks stay in the journal
        if pool is not None:
            pool.terminate()
        raise
    finally:
        if pool is not None:
            pool.close()
            pool.join()


def _pair_results(pairs: list[tuple[int, int]], margins: dict[int, list], names: list[str], seed: int,
                  bootstrap: int) -> tuple[list[PairResult], list]:
    """Each pair's margins joined, with its bootstrap interval and shares; ``fit``: the rating fit's input."""
    out: list[PairResult] = []
    fit = []
    for p, (i, j) in enumerate(pairs):
        m = np.concatenate(margins[p])
        lo, hi = bootstrap_ci(m, bootstrap, seed=int(np.random.SeedSequence([seed, p, 10**6]).generate_state(1)[0]))
        win, tie = float((m > 0).mean()), float((m == 0).mean())
        out.append(PairResult(names[i], names[j], len(m), float(m.mean()), lo, hi, win, tie, m))
        fit.append((i, j, m))
    return out, fit


def run_arena(game: str, sources: list, deals: int = 200, seed: int = 0, workers: int = 1,
              options: dict | None = None, chunk: int = 25, bootstrap: int = 2000,
              pairs: list[tuple[int, int]] | None = None) -> ArenaResult:
    """:func:`tournament` with the game first (the earlier signature)."""
    return tournament(sources, game, deals, seed=seed, workers=workers, options=options, chunk=chunk,
                      bootstrap=bootstrap, pairs=pairs)


# --------------------------------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------------------------------
def _pair_rows(res: ArenaResult) -> list[list[str]]:
    return [[p.a, p.b, str(p.deals), f"{p.mean_margin:+.2f}", f"[{p.ci_low:+.2f}, {p.ci_high:+.2f}]",
             f"{100 * p.win_share:.1f}% [{100 * p.win_ci95[0]:.1f}, {100 * p.win_ci95[1]:.1f}]",
             f"{100 * p.tie_share:.1f}%"] for p in res.pairs]


def _rating_rows(res: ArenaResult) -> list[list[str]]:
    order = sorted(res.policies, key=lambda n: -res.ratings[n])
    return [[n, f"{res.ratings[n]:+.2f}", f"± {1.96 * res.rating_sd[n]:.2f}"] for n in order]


def _rating_head(res: ArenaResult) -> list[str]:
    vs = f"vs {res.anchor}" if res.anchor else "vs the field's average"
    return ["policy", f"rating (margin / deal {vs})", "95% CI"]


PAIR_HEAD = ["A", "B", "deals", "margin A−B / deal", "95% CI (bootstrap)", "A won [95% CI]", "tied"]


def format_table(head: list[str], rows: list[list[str]]) -> str:
    w = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(head)]
    line = lambda r: "  ".join(c.rjust(w[k]) if k else c.ljust(w[k]) for k, c in enumerate(r))  # noqa: E731
    return "\n".join([line(head), "  ".join("-" * x for x in w)] + [line(r) for r in rows])


def markdown_table(head: list[str], rows: list[list[str]]) -> str:
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
                     + ["| " + " | ".join(r) + " |" for r in rows])


def format_terminal(res: ArenaResult) -> str:
    return (f"{res.game}: {res.deals} duplicate deals per pair (each played twice, teams exchanged), "
            f"seed {res.seed}\n\n" + format_table(PAIR_HEAD, _pair_rows(res)) + "\n\n"
            + format_table(_rating_head(res), _rating_rows(res)))


def format_markdown(res: ArenaResult, command: str | None = None) -> str:
    parts = [f"### {res.game}: {res.deals} duplicate deals per pair, seed {res.seed}", ""]
    if command:
        parts += [f"`{command}`", ""]
    parts += [markdown_table(PAIR_HEAD, _pair_rows(res)), "", markdown_table(_rating_head(res), _rating_rows(res)), ""]
    return "\n".join(parts)


def write_outputs(res: ArenaResult, out_dir: str | os.PathLike, command: str | None = None) -> list[Path]:
    """``arena.md``, ``pairs.csv``, ``ratings.csv``, ``arena.json`` and (with matplotlib) ``arena.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    (out / "arena.md").write_text(format_markdown(res, command))
    with open(out / "pairs.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["game", "a", "b", "deals", "mean_margin", "ci_low", "ci_high", "win_share", "win_ci_low",
                     "win_ci_high", "tie_share"])
        for p in res.pairs:
            wr.writerow([res.game, p.a, p.b, p.deals, f"{p.mean_margin:.6f}", f"{p.ci_low:.6f}",
                         f"{p.ci_high:.6f}", f"{p.win_share:.6f}", f"{p.win_ci95[0]:.6f}", f"{p.win_ci95[1]:.6f}",
                         f"{p.tie_share:.6f}"])
    with open(out / "ratings.csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["game", "policy", "source", "rating", "rating_sd", "anchor"])
        for n, s in zip(res.policies, res.sources):
            wr.writerow([res.game, n, s, f"{res.ratings[n]:.6f}", f"{res.rating_sd[n]:.6f}", res.anchor or ""])
    (out / "arena.json").write_text(json.dumps(res.as_dict(), indent=1))
    written += [out / "arena.md", out / "pairs.csv", out / "ratings.csv", out / "arena.json"]
    png = plot(res, out / "arena.png")
    if png is not None:
        written.append(png)
    return written


def plot(res: ArenaResult, path: Path) -> Path | None:
    """Ratings as bars and each pair's margin with its CI; None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[arena]'): no PNG chart written")
        return None
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 0.6 * max(len(res.pairs), len(res.policies)) + 2.5))
    order = sorted(res.policies, key=lambda n: res.ratings[n])
    ax1.barh(order, [res.ratings[n] for n in order], xerr=[1.96 * res.rating_sd[n] for n in order],
             color="tab:blue", capsize=4)
    ax1.axvline(0, color="grey", lw=0.8)
    ax1.set_xlabel(_rating_head(res)[1] + ", 95% CI")
    ax1.set_title(f"{res.game}: ratings")
    labels = [f"{p.a} vs {p.b}" for p in res.pairs]
    y = np.arange(len(res.pairs))
    means = np.array([p.mean_margin for p in res.pairs])
    err = np.array([[p.mean_margin - p.ci_low for p in res.pairs], [p.ci_high - p.mean_margin for p in res.pairs]])
    ax2.errorbar(means, y, xerr=err, fmt="o", color="tab:red", capsize=4)
    ax2.axvline(0, color="grey", lw=0.8)
    ax2.set_yticks(y, labels)
    ax2.set_xlabel("margin A − B per deal (95% bootstrap CI)")
    ax2.set_title(f"{res.deals} duplicate deals per pair")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------------
def _parse_options(items: list[str]) -> dict:
    opts: dict = {}
    for it in items or []:
        if "=" not in it:
            raise ValueError(f"option {it!r} must be KEY=VALUE, e.g. -o deals_per_game=1")
        k, v = it.split("=", 1)
        try:
            opts[k] = json.loads(v)
        except json.JSONDecodeError:
            opts[k] = v
    return opts


def main(argv: list[str] | None = None) -> int:
    """``tarot-arena --game partita random heuristic checkpoints/x/final.pt --deals 500 --workers 2``
    (``agents.cli.arena_parser``)."""
    from ..parsers import arena_parser

    return run_cli(arena_parser().parse_args(argv), argv)


def run_cli(ns, argv: list[str] | None = None) -> int:
    """Play the match the parsed command line ``ns`` names, print the table and write the outputs (0), or
    print one error line (2)."""
    import shlex
    import time

    t = time.time()
    out = ns.out or os.path.join("arena", ns.game)
    try:
        res = tournament(ns.policies, ns.game, ns.deals, seed=ns.seed, workers=ns.workers,
                         options=_parse_options(ns.option), chunk=ns.chunk, bootstrap=ns.bootstrap,
                         progress=False if ns.no_progress else None, journal=os.path.join(out, "journal.jsonl"),
                         resume=ns.resume, restart=ns.restart)
    except ValueError as e:
        print(f"tarot-arena: error: {e}", file=sys.stderr)
        return 2
    print(format_terminal(res))
    cmd = "tarot-arena " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    files = write_outputs(res, out, cmd)
    print(f"\nwritten: {', '.join(str(f) for f in files)}  ({time.time() - t:.1f} s)")
    return 0


if __name__ == "__main__":
    from tarot_env.commands import run_command

    raise SystemExit(run_command("tarot-arena", main))
