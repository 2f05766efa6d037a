"""PIMC: a search player (Perfect-Information Monte Carlo over sampled worlds) for the three games.

At each decision of seat ``p`` with more than one legal action:

1. draw ``worlds`` complete deals consistent with what ``p`` knows (``tarot_env.sampler``: uniform
   over the deals that agree with ``p``'s hand, the play so far, the shown voids, the declared and
   announced cards; RULES.md Part H) — the same worlds for every action;
2. for each legal action and each world: apply the action to a copy of the world and play the rest of
   the **deal** (hand) out with the rollout policy for all seats (``"random"``, ``"heuristic"`` of
   ``agents/players/baselines.py``, or a trained network: ``"ppo"`` or a checkpoint path), all the copies in
   lock-step so the rollout policy sees one batch per step;
3. the value of a (world, action) is the acting side's deal score minus the other side's, as the
   deal's history entry records it (PAR-6, C.9, D.5; a thrown-in Ottocento hand scores 0), for the deal
   under way at the decision (an action may end it: the dealer's *a monte* that throws the hand in,
   OTT-3.2, the last declaration that wins the game, OTT-6.1);
4. play the action with the best mean (ties: the lowest action id).

With a **prior** (``prior="ppo"``, a checkpoint path or a ``NetworkPolicy``) the search is
network-guided: only the ``top_k`` (default 4) legal actions the network finds most probable at the
real position are searched (step 2), and ties go to the more probable one. The budget per searched
action is unchanged (``worlds``), so a decision with many legal actions (Millone's discards, leading a
trick) costs a fraction of the plain search. ``ppo+pimc`` names that player with the shipped network
as both prior and rollout policy (``pimc:prior=ppo,rollout=ppo``).
With a network rollout policy, ``depth=K`` cuts every rollout after ``K`` steps and values a world whose deal goes on
by the network's critic (:meth:`EngineRollouts._leaf_values`).

Where the rollouts run (``engine``): ``engine="auto"`` (default) plays them in the game's compiled
batched engine (``tarot_env.make_vec``, :class:`EngineRollouts`), for any rollout policy that decides
from observations and masks (a network, the compiled heuristic, uniform play). The worlds are drawn
straight into rows of the game's declared state (``Determinizer.sample_rows``: one compiled walk of the
exact sampler per case), each world copied into one engine row per action (``VecEnv.load_rows``). Uniform
rollouts run all in compiled code in every game (``<Game>Rows.random_playouts``: the engine's own kernels,
a uniformly random legal action at each step, until the deal is scored), and so do the heuristic's
rollouts in every game (``agents.players.heuristic_playouts``: the same moves as the stepped rollouts); other policies'
rollouts are stepped: the first step plays the actions and the rows are stepped until each one's deal has
ended. With a deterministic rollout policy the values are exactly those
of the rules objects (the engine plays the same game, and the policy sees the same batches); uniform
rollouts draw their own random stream. ``engine="rules"`` plays them on the rules objects
(:func:`rollout_to_deal_end`), ``engine="vector"`` insists on the engine, ``engine="stepped"`` steps it from
Python for uniform and heuristic rollouts too (uniform moves drawn in compiled code, :func:`_uniform_moves`:
the search as it was before, kept to compare with).

Every decision kind goes through the same search: discards, *a monte*, declarations, signals, card
play. The budget is ``worlds`` (default 64) and optionally ``time_limit`` seconds per decision
(worlds are then searched in chunks of ``chunk`` until the time is spent; at least one chunk).
Seeded: the same seed gives the same decisions (with ``time_limit`` the number of worlds, hence the
decision, may depend on the machine's speed).

The player needs the rules object (a world is drawn from it), so it is a ``Policy`` with
``needs_game = True``: ``act_game(game)`` / ``act_games(games)`` decide for the seat to act; the
evaluation code (``agents.evaluation.evaluate``, the arena) and ``tarot-play`` pass the games; with an AEC env,
``act_game(env)`` reads ``env.unwrapped.game``. ``act(obs, mask)`` alone cannot search and raises.

``load_policy("pimc", game, worlds=16, rollout="random")`` (``agents.players.registry``) builds one; the
name ``pimc:worlds=16,rollout=random,time=0.5`` (and ``engine=rules``) does the same on the command
lines (tarot-arena, tarot-play); ``ppo+pimc`` (and ``ppo+pimc:worlds=16,top_k=3``) is the
network-guided search.
"""
from __future__ import annotations

import contextlib
import time

import numpy as np
from numba import njit

from tarot_env.engine import TrickGame
from tarot_env.sampler import Determinizer, game_of

from .baselines import HeuristicPolicy
from .heuristic_playouts import PLAYOUTS, heuristic_playouts
from .players import load_player
from .policy import Policy, RandomPolicy

__all__ = ["EngineRollouts", "PIMCPolicy", "deal_values", "parse_pimc_name", "rollout_to_deal_end"]

MAX_ROLLOUT_STEPS = 2000  # a deal is at most ~200 decisions; a guard against an endless loop


def deal_values(games: list[TrickGame], teams, h0) -> np.ndarray:
    """``teams[i]``'s score minus the other side's in the deal of ``games[i]`` that was under way when its
    history had ``h0[i]`` entries (that deal's entry, ``history[h0[i]]``: PAR-6, C.9, D.5; a deal not
    ended yet, or a thrown-in Ottocento hand, OTT-3.2, is 0)."""
    out = np.zeros(len(games))
    for i, g in enumerate(games):
        sc = g.history[h0[i]]["scores"] if len(g.history) > h0[i] else [0, 0]
        t = teams[i]
        out[i] = sc[t] - sc[1 - t]
    return out


def _reads_observations(policy: Policy) -> bool:
    """Whether a rollout must hand ``policy`` observations (uniform play reads only the masks)."""
    return type(policy) is not RandomPolicy


def _obs_format(policy: Policy) -> str:
    """The engine's observations for ``policy``'s rollouts: a network reads their nonzero features as the
    engine writes them (``make_vec(..., obs_format="sparse")``, ``Policy.reads_sparse``), the others dense rows."""
    return "sparse" if getattr(policy, "reads_sparse", False) else "dense"


def rollout_to_deal_end(games: list[TrickGame], policy: Policy, teams: list[int], h0=None) -> np.ndarray:
    """Play every game of ``games`` to the end of its current deal with ``policy`` (in lock-step,
    one ``act_batch`` per step); return ``teams[i]``'s deal score minus the other side's.

    ``h0[i]``: the length of ``games[i].history`` when the deal to score was under way (default: now).
    A search passes the length from before the action it tries: an action can end the deal itself
    (Ottocento: the dealer's *a monte* that throws the hand in, OTT-3.2; the last declaration that wins
    the game, OTT-6.1), and then that deal is scored, not the next one."""
    h0 = [len(g.history) for g in games] if h0 is None else list(h0)
    if not games:
        return np.zeros(0)
    live = list(range(len(games)))
    O, A = games[0].OBS.size, games[0].num_actions
    reads_obs = _reads_observations(policy)
    for _ in range(MAX_ROLLOUT_STEPS):
        live = [i for i in live if len(games[i].history) == h0[i] and not games[i].game_over]
        if not live:
            break
        choose = []
        for i in live:  # a forced move (one legal action) needs no policy call
            g = games[i]
            m = g.legal_mask()
            legal = np.flatnonzero(m)
            if len(legal) == 1:
                g.apply_unchecked(int(legal[0]))
            else:
                choose.append((i, m))
        if not choose:
            continue
        obs = np.empty((len(choose), O), dtype=np.float32) if reads_obs else np.zeros((len(choose), 1), np.float32)
        mask = np.empty((len(choose), A), dtype=bool)
        for k, (i, m) in enumerate(choose):
            if reads_obs:
                g = games[i]
                g.observation(g.current, out=obs[k])
            mask[k] = m
        acts = policy.act_batch(obs, mask)
        for k, (i, _) in enumerate(choose):
            games[i].apply_unchecked(int(acts[k]))
    else:  # pragma: no cover - guard
        raise RuntimeError("a rollout did not reach the end of the deal")
    return deal_values(games, teams, h0)


# the info array of a batched engine (episode="deal") holding, where ``done``, the scores of the deal that
# ended, as its history entry records them (Millone: the hand played out, also when a claim followed it)
_DEAL_SCORES = {"partita": "final_deal_scores", "millone": "final_deal_scores", "ottocento": "final_hand_scores"}
# where the rollouts run: "auto" (the batched engine where the game has one), "vector" (insists on it), "rules"
# (the rules objects), "stepped" (the batched engine stepped from Python also for uniform rollouts, which
# "auto" and "vector" play all in compiled code: the search as it was before, kept to compare with)
ENGINES = ("auto", "vector", "rules", "stepped")


class EngineRollouts:
    """The rollouts of :func:`rollout_to_deal_end` in a batched engine (``tarot_env.make_vec``), for a
    rollout policy that decides from observations and masks.

    ``values(starts, first, policy, teams)``: row ``i`` is loaded from rules object ``starts[i]``
    (``VecEnv.load_games``: the row then plays exactly as the object would, with the object's
    observations and masks; a search loads each sampled world into one row per action it tries, and
    the object is not changed), takes ``first[i]`` as its first action, and is played to the end of
    that deal with ``policy`` in lock-step: each step, the rows still in their deal with more than one
    legal action are one ``act_batch`` call and the forced ones take their move. The engine runs with
    ``episode="deal"``, so a row is ``done`` when its deal ends (the first action may end it: a thrown-in
    Ottocento hand, OTT-3.2, a game won at the declarations, OTT-6.1), and is scored from the engine's
    record of that deal (``_DEAL_SCORES``: the deal's history entry ``"scores"``); it then only keeps
    moving (its first legal action, outside the policy's batch) until the last row ends.

    The values are those of :func:`rollout_to_deal_end` on clones of ``starts`` with ``first`` applied,
    exactly: the policy sees the same batches in the same order (a network, greedy or sampling with its
    own generator, or uniform play draws the same); the rows' random streams only deal the next hands,
    after the values are fixed.

    Engines are kept by batch size (a search at a fixed budget meets few sizes) and reused across
    decisions; each is ``make_vec`` with the game's own options.
    """

    KEEP = 8  # engines kept (the most recently used)

    def __init__(self, game: str, stepped: bool = False):
        import tarot_env
        from tarot_env.config import EnvConfig

        self.game = game
        info = tarot_env.GAMES[game]
        self.team_of = np.asarray(info.rules_class().team_of, dtype=np.int64)  # (a cut rollout's leaf values)
        scale = info.env_class().default_reward_scale  # (None: the env options' own default)
        self.reward_scale = float(EnvConfig().reward_scale if scale is None else scale)
        self.stepped = stepped  # uniform and heuristic rollouts stepped from Python too (``engine="stepped"``)
        self._engines: dict = {}
        self._buffers: dict = {}  # Ottocento's network rollouts on the rows: their buffers by size (_actor_playouts)
        self._actor = None  # (policy, its compiled greedy actor): kept while the weights are those copied

    def engine(self, size: int, config, observe: bool = True, obs_format: str = "dense"):
        """A batched engine of ``size`` rows for games of ``config`` (``episode="deal"``), reused; with
        ``observe=False`` it builds no observations (``make_vec``'s option), for a rollout policy that
        reads only the masks; ``obs_format="sparse"``: their nonzero features, for a network's."""
        key = (size, config, observe, obs_format)
        venv = self._engines.pop(key, None)
        if venv is None:
            import tarot_env

            venv = tarot_env.make_vec(self.game, size, seed=0, episode="deal", observe=observe, obs_format=obs_format,
                                      **config.to_dict())
            while len(self._engines) >= self.KEEP:
                self._engines.pop(next(iter(self._engines)))
        self._engines[key] = venv  # (most recent last)
        return venv

    def values(self, starts: list[TrickGame], first, policy: Policy, teams) -> np.ndarray:
        """``teams[i]``'s deal score minus the other side's after ``first[i]`` in ``starts[i]`` and the
        rollout (the class docstring)."""
        n = len(starts)
        if n == 0:
            return np.zeros(0)
        venv = self.engine(n, starts[0].config, observe=_reads_observations(policy), obs_format=_obs_format(policy))
        venv.load_games(starts, check=False)  # sampled worlds: consistent by construction (sampler tests)
        return self._play_out(venv, first, policy, teams)

    def values_rows(self, rows, config, actions: list[int], policy: Policy, team: int, depth: int = 0) -> np.ndarray:
        """``float[worlds, actions]``: the values of every action in every world of ``rows`` (the worlds as
        rows of the game's declared state, ``Determinizer.sample_rows``): each world copied into one
        engine row per action (``VecEnv.load_rows``), played out as :meth:`values` does; in Ottocento a greedy
        network's rollouts run on copies of the rows themselves (:meth:`_actor_playouts`), with the same values.
        ``depth`` > 0 (a network's rollouts only): each rollout stops after ``depth`` steps, and a row whose deal is
        still under way takes the network's value there (:meth:`_leaf_values`)."""
        k, a = len(next(iter(rows.arrays().values()))), len(actions)
        if type(policy) is RandomPolicy and not self.stepped:  # all in compiled code (<Game>Rows.random_playouts)
            worlds = rows.take(np.repeat(np.arange(k), a))
            seed = int(policy.rng.integers(2**31))
            return worlds.random_playouts(np.tile(actions, k), np.full(k * a, team), config, seed).reshape(k, a)
        if type(policy) is HeuristicPolicy and not self.stepped and self.game in PLAYOUTS:  # heuristic_playouts
            worlds = rows.take(np.repeat(np.arange(k), a))
            return heuristic_playouts(self.game, worlds, np.tile(actions, k), np.full(k * a, team), config,
                                      policy.info.tables).reshape(k, a)
        actor = self._kept_actor(policy, None) if self.game == "ottocento" else None  # (a greedy network's)
        if actor is not None:
            worlds = rows.take(np.repeat(np.arange(k), a))
            return self._actor_playouts(worlds, np.tile(actions, k), actor, np.full(k * a, team), policy,
                                        depth).reshape(k, a)
        venv = self.engine(k * a, config, observe=_reads_observations(policy), obs_format=_obs_format(policy))
        venv.load_rows(rows, np.repeat(np.arange(k), a))
        return self._play_out(venv, np.tile(actions, k), policy, np.full(k * a, team), depth).reshape(k, a)

    def _play_out(self, venv, first, policy: Policy, teams, depth: int = 0) -> np.ndarray:
        """Every row takes ``first[i]`` and is played to the end of its deal (the class docstring), or with
        ``depth`` > 0 for ``depth`` steps, the rows still in their deal then valued by the network
        (:meth:`_leaf_values`). Uniform play draws in compiled code (:func:`_uniform_moves`, seeded from the
        policy's generator)."""
        n = venv.num_envs
        teams = np.asarray(teams, dtype=np.int64)
        if type(policy) is RandomPolicy:
            _seed_uniform(int(policy.rng.integers(2**31)))
        reads_obs = _reads_observations(policy)
        key = _DEAL_SCORES[self.game]
        value = np.zeros(n)
        live = np.ones(n, dtype=bool)
        acts = np.asarray(first, dtype=np.int64)
        ar = np.arange(n)
        actor = self._kept_actor(policy, venv)
        chosen = np.empty(n, dtype=np.int64)  # the actor's actions, written anew at each step
        with _weights_frozen(policy):  # a network's input layers transposed once for the whole rollout
            for steps in range(1, MAX_ROLLOUT_STEPS + 1):
                step = venv.step(acts, validate=False)
                ended = np.flatnonzero(step.done & live)
                if len(ended):
                    sc, t = step.info[key][ended], teams[ended]
                    value[ended] = sc[ar[:len(ended)], t] - sc[ar[:len(ended)], 1 - t]
                    live[ended] = False
                    if not live.any():
                        return value
                if steps == depth:  # the rollout cut: the rows still in their deal valued by the network
                    rest = np.flatnonzero(live)
                    if _central(policy):
                        obs, state = None, venv.state()[rest]
                    else:
                        obs, state = step.obs[rest], None
                    value[rest] = self._leaf_values(policy, obs, state, step.seat[rest], teams[rest])
                    return value
                if type(policy) is RandomPolicy:
                    _uniform_moves(step.mask, live, acts)
                    continue
                if actor is not None:  # a greedy network, compiled: forced moves and ended rows skipped inside
                    acts = chosen  # (the engine has read the last step's actions)
                    actor.act(step.obs, step.mask, live, acts)
                    continue
                acts = step.mask.argmax(1)  # the first legal action (forced moves, rows already scored)
                choose = np.flatnonzero(live & (np.count_nonzero(step.mask, axis=1) > 1))
                if len(choose) == n:  # every row chooses (the common case): the engine's own buffers, no copy
                    acts[:] = policy.act_batch(step.obs if reads_obs else np.zeros((n, 1), np.float32), step.mask)
                elif len(choose):
                    obs = step.obs[choose] if reads_obs else np.zeros((len(choose), 1), np.float32)
                    acts[choose] = policy.act_batch(obs, step.mask[choose])
        raise RuntimeError("a rollout did not reach the end of the deal")  # pragma: no cover - guard

    def _actor_playouts(self, worlds, first, actor, teams, policy=None, depth: int = 0) -> np.ndarray:
        """The values of :meth:`_play_out` for a greedy network's compiled actor in Ottocento, on the worlds' rows
        themselves (``OttocentoRows``, no engine): each step acts only in the rows whose hand is under way
        (``OttocentoRows.act``: a negative action leaves a row as it is; no next hand is dealt, ``COUNT_ONLY``)
        and observes only those of them with a choice (``OttocentoRows.encode``: a negative seat leaves a row
        out); a forced move is the row's one legal action. The actor sees the same rows with the same
        observations and masks as in the engine, so the values are the same; ``depth`` as in :meth:`_play_out`."""
        from tarot_env.rules.ottocento import _R_SCORES, COUNT_ONLY

        n = len(first)
        mask, obs, cc = self._row_buffers(n, worlds)
        teams = np.asarray(teams, dtype=np.int64)
        value, live, seats = np.zeros(n), np.ones(n, dtype=bool), np.empty(n, dtype=np.int64)
        acts = np.array(first, dtype=np.int64)
        empty = np.zeros((0, obs.size), dtype=np.float32)
        for steps in range(1, MAX_ROLLOUT_STEPS + 1):
            ended = worlds.act(acts, COUNT_ONLY, mask)
            if ended:
                out = worlds.step_out
                r, sc = out.rows[:ended], out.rec[:ended, _R_SCORES:_R_SCORES + 2]
                t = teams[r]
                value[r] = sc[np.arange(ended), t] - sc[np.arange(ended), 1 - t]
                live[r] = False
                if not live.any():
                    return value
            if steps == depth:  # the rollout cut (:meth:`_play_out`)
                rest = np.flatnonzero(live)
                return self._actor_leaf(worlds, rest, value, policy, teams, obs, cc)
            _choosing_seats(mask, live, worlds.current, seats)
            worlds.encode(seats, empty, False, mask, False, cc, (obs.cols, obs.vals, obs.counts))
            actor.act(obs, mask, live, acts)
            acts[~live] = -1
        raise RuntimeError("a rollout did not reach the end of the deal")  # pragma: no cover - guard

    def _leaf_values(self, policy, obs, state, seats, teams) -> np.ndarray:
        """The network's value of rows whose deal is under way, in the search's unit: ``teams[i]``'s deal score
        minus the other side's. The critic gives the expected deal reward of the seat to act,
        ``(its side's score − the other's) / reward_scale`` (the env's default scale, as the shipped networks were
        trained), so it is scaled back and its sign turned where that seat is on the other side."""
        v = policy.values(obs, state) * self.reward_scale
        return np.where(self.team_of[seats] == teams, v, -v)

    def _actor_leaf(self, worlds, rest, value, policy, teams, obs, cc) -> np.ndarray:
        """:meth:`_actor_playouts`' cut: the rows ``rest`` of ``worlds`` (Ottocento's rows) valued by the
        network, from their full state (a central critic) or their seat to act's observation."""
        from tarot_env.rules.ottocento import OttocentoGame as G

        seats = worlds.current[rest]
        if _central(policy):
            state = np.empty((len(worlds.current), G.STATE.size), dtype=np.float32)
            worlds.state_into(state)
            obs, state = None, state[rest]
        else:
            every = np.full(len(worlds.current), -1, dtype=np.int64)
            every[rest] = seats
            no_mask = np.zeros((len(every), G.num_actions), bool)
            worlds.encode(every, np.zeros((0, obs.size), np.float32), False, no_mask, False, cc,
                          (obs.cols, obs.vals, obs.counts))
            obs, state = obs[rest], None
        value[rest] = self._leaf_values(policy, obs, state, seats, teams[rest])
        return value

    def _row_buffers(self, n: int, worlds):
        """The mask, sparse observations and v2 features' cache of :meth:`_actor_playouts` for ``n`` rows, kept
        by size and options like the engines."""
        key = (n, worlds.config)
        kept = self._buffers.pop(key, None)
        if kept is None:
            from tarot_env.rules.ottocento import OttocentoGame as G
            from tarot_env.vector.combo_cache import ComboCache
            from tarot_env.vector.sparse import SparseObs, sparse_buffers

            sp = sparse_buffers(n, G.sparse_width(worlds.config), G.OBS.size)
            kept = (np.zeros((n, G.num_actions), dtype=bool), SparseObs(sp.cols, sp.vals, sp.counts, G.OBS.size),
                    ComboCache.empty(n, 2))
            while len(self._buffers) >= self.KEEP:
                self._buffers.pop(next(iter(self._buffers)))
        self._buffers[key] = kept
        return kept

    def _kept_actor(self, policy: Policy, venv):
        """A greedy network's actor compiled for the rollouts (:func:`_frozen_actor`), kept from the last rollout
        while ``policy`` is the same network with the same weights (``FrozenActor.copies``: copying them
        anew took 1-2 ms a decision), else ``None``."""
        kept, sparse = self._actor, venv is None  # (no engine: the caller writes sparse observations)
        if kept is not None and kept[0] is policy and _frozen_actor(policy, venv, make=False, sparse=sparse):
            if kept[1].copies(policy.model):
                return kept[1]
        actor = _frozen_actor(policy, venv, sparse=sparse)
        self._actor = None if actor is None else (policy, actor)
        return actor


def _central(policy: Policy) -> bool:
    """Whether ``policy``'s network values positions from the full state (a central critic)."""
    return getattr(getattr(policy, "model", None), "critic_kind", None) == "central"


@njit(cache=True, nogil=True)
def _choosing_seats(mask: np.ndarray, live: np.ndarray, current: np.ndarray, seats: np.ndarray) -> None:
    """``seats[b]``: row ``b``'s seat to act where it is ``live`` with two legal actions or more, else -1 (the
    rows :meth:`EngineRollouts._actor_playouts` observes)."""
    for b in range(mask.shape[0]):
        seats[b] = -1
        if live[b]:
            legal = 0
            for a in range(mask.shape[1]):
                legal += mask[b, a]
            if legal > 1:
                seats[b] = current[b]


@njit(cache=True, nogil=True)
def _seed_uniform(seed: int) -> None:
    np.random.seed(seed)


@njit(cache=True, nogil=True)
def _uniform_moves(mask: np.ndarray, live: np.ndarray, out: np.ndarray) -> None:
    """``out[b]``: a uniformly random legal action of row ``b`` where it is live, else its first legal one."""
    for b in range(mask.shape[0]):
        n, first = 0, -1
        for a in range(mask.shape[1]):
            if mask[b, a]:
                n += 1
                if first < 0:
                    first = a
        k = np.random.randint(0, n) if live[b] and n > 1 else 0
        for a in range(first, mask.shape[1]):
            if mask[b, a]:
                if k == 0:
                    out[b] = a
                    break
                k -= 1


def _frozen_actor(policy: Policy, venv, make: bool = True, sparse: bool = False):
    """A greedy network's actor compiled for the rollout (``NetworkPolicy.frozen_actor``) where the engine
    (or, ``sparse``, the caller) writes sparse observations, else ``None``; with ``make=False`` only whether
    there would be one."""
    from .policy import NetworkPolicy

    if isinstance(policy, NetworkPolicy) and (sparse or getattr(venv, "obs_format", None) == "sparse"):
        return policy.frozen_actor() if make else policy.greedy
    return None


def _weights_frozen(policy: Policy):
    """For a network's rollout: its input layers transposed once, not at every step (its weights do not
    change during a search; ``agents.players.sparse_input.weights_frozen``)."""
    from .policy import NetworkPolicy

    if isinstance(policy, NetworkPolicy):
        from .sparse_input import weights_frozen

        return weights_frozen()
    return contextlib.nullcontext()


def _rollout_policy(rollout, game: str, seed: int):
    if isinstance(rollout, Policy):
        return rollout
    if rollout == "random":
        return RandomPolicy(seed)
    if str(rollout).split(":")[0] in SEARCH_NAMES:
        raise ValueError("the rollout policy of PIMC cannot be PIMC itself; use random, heuristic or a network")
    return load_player(str(rollout), game, seed=seed)


def _prior_policy(prior, game: str, what: str = "prior"):
    """The network whose action probabilities choose the searched actions (``prior``), or with ``what="model"``
    the one that judges the opponents' plays for the worlds' weights (``model``)."""
    from .policy import NetworkPolicy

    if prior is None or isinstance(prior, NetworkPolicy):
        return prior
    if isinstance(prior, Policy):
        raise ValueError(f"the {what} of PIMC must be a trained network (\"ppo\", a checkpoint path or a "
                         f"NetworkPolicy), got {prior!r}")
    if str(prior).split(":")[0] in SEARCH_NAMES:
        raise ValueError(f"the {what} of PIMC must be a trained network, and {prior!r} is a search")
    net = load_player(str(prior), game)
    if not isinstance(net, NetworkPolicy):
        raise ValueError(f"the {what} of PIMC must be a trained network, and {prior!r} is not one")
    return net


class PIMCPolicy(Policy):
    """Perfect-Information Monte Carlo search (see the module docstring)."""

    needs_game = True

    def __init__(self, game: str, worlds: int = 64, rollout="heuristic", time_limit: float | None = None,
                 seed: int | None = None, chunk: int = 16, engine: str = "auto", prior=None, top_k: int = 4,
                 weights: str = "uniform", temper: float = 1.0, depth: int = 0, mix: float = 0.0, model=None):
        import tarot_env

        if game not in tarot_env.ENV_IDS:
            raise ValueError(f"unknown game {game!r}; games are {sorted(tarot_env.ENV_IDS)}")
        if isinstance(worlds, bool) or not isinstance(worlds, (int, np.integer)) or worlds < 1:
            raise ValueError(f"worlds must be an int >= 1 (worlds sampled per decision), got {worlds!r}")
        if time_limit is not None and not (isinstance(time_limit, (int, float)) and time_limit > 0):
            raise ValueError(f"time_limit must be a number of seconds > 0 or None, got {time_limit!r}")
        if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
            raise ValueError(f"chunk must be an int >= 1, got {chunk!r}")
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES} (where the rollouts run), got {engine!r}")
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
            raise ValueError(f"top_k must be an int >= 1 (actions searched when a prior is given), got {top_k!r}")
        self.game = game
        self.worlds, self.time_limit, self.chunk = int(worlds), time_limit, int(chunk)
        self.rng = np.random.default_rng(seed)
        self.rollout_name = rollout if isinstance(rollout, str) else type(rollout).__name__
        self.rollout = _rollout_policy(rollout, game, int(self.rng.integers(2**31)))
        has_engine = "vector" in tarot_env.GAMES[game].engines
        if engine == "vector" and not has_engine:
            raise ValueError(f"engine='vector': {game} has no batched engine; use engine='rules' (or 'auto')")
        if engine == "stepped" and not has_engine:
            raise ValueError(f"engine='stepped': {game} has no batched engine; use engine='rules' (or 'auto')")
        self.engine = "vector" if engine in ("vector", "stepped") or (engine == "auto" and has_engine) else "rules"
        self._engine_rollouts = EngineRollouts(game, engine == "stepped") if self.engine == "vector" else None
        self.prior = _prior_policy(prior, game)
        self.top_k = int(top_k)
        self.name = f"pimc:worlds={self.worlds},rollout={self.rollout_name}"
        if self.prior is not None:
            self.name += f",prior={prior if isinstance(prior, str) else type(prior).__name__},top_k={self.top_k}"
        if engine != "auto":
            self.name += f",engine={engine}"
        self.depth = _rollout_depth(depth, self.rollout, self._engine_rollouts)
        if self.depth:
            self.name += f",depth={self.depth}"
        model_net = _prior_policy(model, game, "model")
        self.weights, self.temper, self._weigher = world_weighting(
            weights, temper, self.prior, self.rollout, self._engine_rollouts or EngineRollouts(game), mix, model_net)
        self.mix = float(mix)
        if self.weights != "uniform":
            model_name = model if isinstance(model, str) else type(model).__name__
            self.name += (f",weights={self.weights}" + (f",temper={self.temper:g}" if self.temper != 1 else "")
                          + (f",mix={self.mix:g}" if self.mix else "")
                          + (f",model={model_name}" if model is not None else ""))
        self.last = None  # the last search: {"actions", "values", "per_world", "worlds", "weights"} (distill, iterate)

    # --- the search -----------------------------------------------------------------------------
    def candidates(self, g: TrickGame) -> tuple[list[int], np.ndarray | None]:
        """The actions searched at ``g`` (every legal one; with a prior, its ``top_k`` most probable,
        most probable first, ties by the lowest id) and their prior probabilities (``None`` without)."""
        legal = g.legal_actions()
        if self.prior is None:
            return legal, None
        mask = g.legal_mask()
        p = self.prior.probs(g.observation(g.current)[None], mask[None])[0]
        order = sorted(legal, key=lambda a: (-p[a], a))[:self.top_k]
        return order, p[order]

    def evaluate(self, game_or_env) -> dict[int, float]:
        """Mean rollout value of every searched action of the seat to act (every legal one, or with a
        prior its ``top_k`` most probable, most probable first): the search, without choosing."""
        g = game_of(game_or_env)
        if g.game_over:
            raise ValueError(f"the {g.name} game is over: no decision to search")
        if g.name != self.game:
            raise ValueError(f"this PIMC player plays {self.game}, not {g.name}")
        seat = g.current
        legal, prior = self.candidates(g)
        team = g.team_of[seat]
        det = Determinizer(g, seat)
        start = time.perf_counter()
        chunks, weights = [], []
        done = 0
        while done < self.worlds:
            k = min(self.chunk, self.worlds - done) if self.time_limit is not None else self.worlds - done
            if self._engine_rollouts is not None:  # the worlds as rows of the game's state, one per action
                rows = det.sample_rows(k, self.rng)
                values = self._engine_rollouts.values_rows(rows, g.config, legal, self.rollout, team,
                                                           self.depth).ravel()
                if self._weigher is not None:
                    weights.append(self._weigher([det.view.world(rows, i) for i in range(k)], seat))
            else:
                worlds = det.sample(k, self.rng)
                if self._weigher is not None:
                    weights.append(self._weigher(worlds, seat))
                games, h0 = [], []
                for w in worlds:
                    for a in legal:
                        c = w.clone()
                        c.apply_unchecked(a)
                        games.append(c)
                        h0.append(len(w.history))  # (the action itself may end the deal)
                values = rollout_to_deal_end(games, self.rollout, [team] * len(games), h0)
            chunks.append(values.reshape(k, len(legal)))
            done += k
            if self.time_limit is not None and time.perf_counter() - start >= self.time_limit:
                break
        per_world = np.concatenate(chunks)  # [worlds, actions]: each action's rollout value in each world
        w = np.concatenate(weights) if weights else None
        means = per_world.sum(axis=0) / done if w is None else weighted_means(per_world, w)
        self.last = {"actions": legal, "values": means.tolist(), "per_world": per_world, "worlds": done,
                     "seconds": time.perf_counter() - start}
        if w is not None:
            self.last["weights"] = w
        if prior is not None:
            self.last["prior"] = prior.tolist()
        return {a: float(v) for a, v in zip(legal, means)}

    def act_game(self, game_or_env) -> int:
        """The action of the seat to act in ``game_or_env`` (a rules object or a tarot AEC env)."""
        g = game_of(game_or_env)
        mask = g.legal_mask()
        legal = np.flatnonzero(mask)
        if len(legal) == 0:
            raise ValueError(f"no legal action in this {g.name} game (is it over?)")
        if len(legal) == 1 or (self.prior is not None and self.top_k == 1):  # nothing to search
            a = int(legal[0]) if len(legal) == 1 else self.candidates(g)[0][0]
            self.last = {"actions": [a], "values": [0.0], "worlds": 0, "seconds": 0.0}
            return a
        values = self.evaluate(g)
        acts = list(values)  # (ties: the first, i.e. the lowest id, or with a prior the most probable)
        return int(acts[int(np.argmax([values[a] for a in acts]))])

    def act_games(self, games: list[TrickGame]) -> np.ndarray:
        return np.array([self.act_game(g) for g in games], dtype=np.int64)

    # --- the plain Policy interface -------------------------------------------------------------
    def act(self, obs, mask=None, *, game=None) -> int:
        if game is None:
            raise ValueError("PIMC searches sampled deals, so it needs the rules object: call "
                             "act_game(game_or_env) or act(obs, mask, game=game)")
        return self.act_game(game)

    def act_batch(self, obs, mask) -> np.ndarray:
        raise ValueError("PIMC needs the rules objects, not only observations: call act_games(games) "
                         "(agents.evaluation.evaluate and the arena do so for a policy with needs_game = True)")


SEARCH_NAMES = ("pimc", "ppo+pimc")  # ppo+pimc: the network-guided search (prior and rollouts: the shipped network)


def parse_pimc_name(name: str) -> dict:
    """``"pimc"`` or ``"pimc:worlds=16,rollout=random,time=0.5,chunk=8,engine=rules,prior=ppo,top_k=3"``
    (and ``weights=uniform|policy``, ``temper=T``, ``mix=M``, ``model=P``: :func:`world_weighting`; ``depth=K``:
    :func:`_rollout_depth`)
    → keyword arguments;
    ``"ppo+pimc[:...]"`` starts from ``rollout="ppo", prior="ppo"``."""
    head, _, tail = str(name).partition(":")
    if head not in SEARCH_NAMES:
        raise ValueError(f"not a PIMC name: {name!r}")
    out: dict = {"rollout": "ppo", "prior": "ppo"} if head == "ppo+pimc" else {}
    keys = {"worlds": int, "rollout": str, "time": float, "chunk": int, "engine": str, "prior": str, "top_k": int,
            "weights": str, "temper": float, "depth": int, "mix": float, "model": str}
    for item in filter(None, tail.split(",")):
        k, eq, v = item.partition("=")
        if not eq or k not in keys:
            raise ValueError(f"bad PIMC option {item!r} in {name!r}; options are "
                             f"worlds=INT, rollout=random|heuristic|ppo|PATH, time=SECONDS, chunk=INT, "
                             f"engine=auto|vector|rules|stepped, prior=ppo|PATH, top_k=INT, "
                             f"weights=uniform|policy, temper=NUMBER in (0, 1], mix=NUMBER in [0, 1), model=ppo|PATH, "
                             f"depth=INT (0: to the deal's end)")
        try:
            out["time_limit" if k == "time" else k] = keys[k](v)
        except ValueError:
            raise ValueError(f"bad value {v!r} for PIMC option {k!r} in {name!r}") from None
        if k == "weights" and v not in WEIGHTS:
            raise ValueError(f"bad value {v!r} for PIMC option 'weights' in {name!r}: weights=uniform (every "
                             f"sampled world counts alike) or weights=policy (each world weighted by the "
                             f"network's likelihood of the opponents' plays)")
    return out


def _rollout_depth(depth, rollout, engine_rollouts) -> int:
    """``depth`` checked: 0 (the rollouts play to the deal's end), or K > 0, the rollouts cut after K steps and the
    rows still in their deal valued by the rollout network's critic (:meth:`EngineRollouts._leaf_values`), which
    needs a network rollout policy (``rollout=ppo|PATH``) in the batched engine."""
    from .policy import NetworkPolicy

    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 0:
        raise ValueError(f"depth must be an int >= 0 (rollout steps before the network's value; 0: to the deal's "
                         f"end), got {depth!r}")
    if depth and not isinstance(rollout, NetworkPolicy):
        raise ValueError(f"depth={depth} values the cut rollouts with a network's critic: use rollout=ppo or a "
                         f"checkpoint path (got rollout={type(rollout).__name__}), or depth=0")
    if depth and engine_rollouts is None:
        raise ValueError(f"depth={depth} cuts the rollouts in the batched engine: use engine=auto or vector, not rules")
    return int(depth)


# --- policy-weighted worlds (Rebstock et al. 2019) -------------------------------------------------
WEIGHTS = ("uniform", "policy")


def world_weighting(weights: str, temper, prior, rollout, engines: EngineRollouts | None = None, mix=0.0,
                    model=None):
    """``(weights, temper, weigher)`` of a search player: ``weigher(worlds, seat)`` gives each sampled world's
    weight (:func:`policy_weights` with the network: ``model``, else the prior, else a network rollout policy;
    the worlds replayed in ``engines``' batched engines; ``mix`` its share of uniform play in the opponents'
    model), or None for uniform worlds. ``ValueError`` for an unknown ``weights``, a ``temper`` outside (0, 1], a
    ``mix`` outside [0, 1), a ``model`` with uniform worlds, or ``weights="policy"`` without a network."""
    from .policy import NetworkPolicy

    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS} (uniform worlds, or weighted by the network's "
                         f"likelihood of the opponents' plays), got {weights!r}")
    if isinstance(temper, bool) or not isinstance(temper, (int, float)) or not 0 < temper <= 1:
        raise ValueError(f"temper must be a number in (0, 1] (the power of each world's likelihood), got {temper!r}")
    if isinstance(mix, bool) or not isinstance(mix, (int, float)) or not 0 <= mix < 1:
        raise ValueError(f"mix must be a number in [0, 1) (the share of uniform play in the model of the opponents' "
                         f"plays; 0: the network alone), got {mix!r}")
    if weights == "uniform":
        if model is not None:
            raise ValueError("model= is the network that weighs the worlds: use it with weights=policy")
        return weights, float(temper), None
    net = (model if model is not None else prior if prior is not None
           else rollout if isinstance(rollout, NetworkPolicy) else None)
    if net is None:
        raise ValueError("weights=policy weighs each world by a network's probabilities of the opponents' "
                         "plays: give a network as prior= (or rollout=ppo|PATH)")
    return weights, float(temper), lambda worlds, seat: policy_weights(worlds, seat, net, temper, engines, mix)


def weighted_means(per_world: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each action's mean over the worlds (rows of ``per_world``) weighted by ``w`` (the uniform mean where
    every weight is 0)."""
    total = float(w.sum())
    return per_world.mean(axis=0) if total <= 0 else (w[:, None] * per_world).sum(axis=0) / total


def policy_weights(worlds: list[TrickGame], seat: int, net, temper: float = 1.0,
                   engines: EngineRollouts | None = None, mix: float = 0.0) -> np.ndarray:
    """float64[k]: the weight of each sampled world (Rebstock et al. 2019): the product, over the card plays
    of ``seat``'s opponents (the other team) in the deal under way, of the probability of that play in that
    world, raised to ``temper`` (< 1 flattens the weights so that no world takes them all). The probability is
    the network's, or with ``mix`` > 0 the opponent model ``(1 - mix)·net + mix·uniform`` over the cards legal
    there: an opponent who is not the network (a search) may play a card the network all but never plays, and
    one such play no longer sends a world's weight to nothing. The
    partner's plays are not judged: the partner is this same search, whose plays the network does not model
    (judging them, Partita's weighted search fell from +4.1 to +0.6 points a deal against the network).

    Each world is replayed from the start of its deal (:func:`deal_replays`: its own deck, its own hidden
    discards, the public plays in their order), the worlds as the rows of one batched engine (``engines``'),
    so a play is judged from what the seat that made it saw in that world; the network is called once, on
    every judged play of every world. Only the world is read, never the real game's hidden cards."""
    if not worlds:
        return np.zeros(0)
    obs, masks, actions = [], [], []  # each judged play: the rows' observations, masks and actions
    for r0, step, acts in deal_replays(worlds, _obs_format(net), engines):
        if r0.phase.name == "PLAY" and r0.team_of[r0.current] != r0.team_of[seat]:  # an opponent's public play
            obs.append(step.obs.copy())
            masks.append(step.mask.copy())
            actions.append(acts)
    logl = np.zeros(len(worlds))
    if actions:
        acts = np.concatenate(actions)
        mask = np.concatenate(masks)
        p = net.probs(_stacked(obs), mask)[np.arange(len(acts)), acts]
        if mix:
            p = (1.0 - mix) * p + mix / mask.sum(axis=1)
        logl = np.log(np.maximum(p, 1e-300)).reshape(len(actions), len(worlds)).sum(0)
    return np.exp(temper * (logl - logl.max())) if temper != 1 else np.exp(logl)


def _stacked(obs: list):
    """One batch of the observations in ``obs`` (dense rows, or a batched engine's sparse ones)."""
    if isinstance(obs[0], np.ndarray):
        return np.concatenate(obs)
    from tarot_env.vector.sparse import SparseObs

    return SparseObs(*(np.concatenate([getattr(o, f) for o in obs]) for f in ("cols", "vals", "counts")),
                     obs[0].size)


def deal_replays(worlds: list[TrickGame], obs_format: str = "dense", engines: EngineRollouts | None = None):
    """Replay each world's deal from its start, in lock-step, as the rows of a batched engine (``engines``'
    engine of ``len(worlds)`` rows, ``obs_format`` its observations): yields ``(r0, step, actions)`` before
    each action is applied, ``r0`` the first world's replay as a one-row game (the seat to act and the phase:
    the public order of the deal, the same in every world), ``step`` the rows' outputs (each row's observation
    of the seat to act and its mask) and ``actions`` each row's action. The start is the world's own deal
    (``start_hand``/``start_deal`` from its deck, scores and earlier deals kept); the actions are each seat's
    discards in the world (hidden: the sampled ones) and the public plays. At the end each row must be its
    world (the seat to act's observation); a deal this cannot rebuild (a phase other than the discards and
    the card play: declarations, signals, *a monte*) raises ``ValueError``."""
    starts = [_deal_start(w) for w in worlds]
    engines = engines if engines is not None else EngineRollouts(worlds[0].name)
    venv = engines.engine(len(worlds), worlds[0].config, obs_format=obs_format)
    step = venv.load_games(starts, check=False)  # (the rows are copies: starts[0] then steps as row 0's guide)
    r0 = starts[0]
    plays = [card for t, _ in worlds[0].tricks for _, card in t] + [card for _, card in worlds[0].trick]
    discards = [_discard_orders(w) for w in worlds]
    used = [0] * worlds[0].num_players
    played = 0
    rows = np.arange(len(worlds))
    for _ in range(len(plays) + sum(len(d) for d in discards[0])):
        s, phase = r0.current, r0.phase.name
        if phase == "PLAY":
            actions = np.full(len(worlds), plays[played], dtype=np.int64)
            played += 1
        elif "DISCARD" in phase and used[s] < len(discards[0][s]):
            actions = np.array([d[s][used[s]] for d in discards], dtype=np.int64)
            used[s] += 1
        else:
            raise ValueError(f"weights=policy replays the discards and the card play of a deal; this {r0.name} "
                             f"deal has a {phase} decision: use weights=uniform")
        yield r0, step, actions
        if not step.mask[rows, actions].all():
            raise ValueError(f"weights=policy cannot replay this {r0.name} deal ({phase} of seat {s}): "
                             f"use weights=uniform")
        r0.apply_unchecked(int(actions[0]))
        step = venv.step(actions, validate=False)
    obs = step.obs.dense() if obs_format == "sparse" else step.obs
    for i, w in enumerate(worlds):
        if step.seat[i] != w.current or not np.array_equal(obs[i], w.observation(w.current)):
            raise ValueError(f"weights=policy cannot rebuild this {w.name} deal from its public actions "
                             f"(phase {w.phase.name}): use weights=uniform")


def _deal_start(world: TrickGame) -> TrickGame:
    """A copy of ``world`` at the start of its deal under way: dealt again from the world's own deck by the
    same dealer (the game's ``start_hand`` or ``start_deal``), or, in a game without a deck (Partita), from
    the hands as dealt (``set_hands``: each seat's cards held, played and discarded in the world); the scores
    and earlier deals are kept."""
    r = world.clone()
    start = getattr(r, "start_hand", None) or getattr(r, "start_deal", None)
    if start is not None and hasattr(world, "deck"):
        start(int(world.dealer), np.array(world.deck, dtype=np.int64))
    elif hasattr(r, "set_hands"):  # a game without a deck: the hands as dealt are the cards held, played, discarded
        dealt = world.hands | world.played | world.discards
        r.set_hands(int(world.dealer), [np.flatnonzero(h).tolist() for h in dealt])
    else:
        raise ValueError(f"weights=policy: {world.name} cannot deal a world again")
    return r


def _discard_orders(world: TrickGame) -> list[list[int]]:
    """Each seat's discards of the deal under way in ``world``, in order (``discarded``; a game that keeps
    only the set: in card order)."""
    if hasattr(world, "discarded"):
        return [list(d) for d in world.discarded]
    return [np.flatnonzero(d).tolist() for d in world.discards]
