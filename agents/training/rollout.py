"""Experience collection: N games of one tarot variant played side by side, per-seat trajectories.

The trainer talks to a game only through :class:`GameSpec` (what the rules object and the env
config are, and how a finished deal turns into team-shared rewards) and :class:`Collector` (which
steps ``num_envs`` rules objects in lock-step). Any game whose rules object follows the shared
driver API works unchanged: ``legal_mask()``, ``apply_unchecked(a)``, ``observation(seat)``,
``state_vector()``, ``current``, ``game_over``, ``history`` (each entry with a per-team
``"scores"`` list), ``team_of``, ``to_dict``/``from_dict``.

Trajectories are per seat. A stream is one ``(env, seat)`` pair; each of the learner's decisions
opens a transition, which is closed when the same seat decides again (its reward is everything
the seat's team received in between, its next value the value of that next decision) or when the
episode ends (``done``). Transitions still open when a rollout ends are carried into the next one,
so no reward is lost and nothing is truncated but the GAE chain (bootstrapped by the next value).
"""
from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np

from tarot_env.rewards import deal_rewards, game_rewards

from ..spec import GameSpec


# --------------------------------------------------------------------------------------------------
# The transition buffer
# --------------------------------------------------------------------------------------------------
class Buffer:
    """Flat arrays of transitions; a row is one learner decision (open or closed).

    The observations are dense float32 rows (``obs``) or, with ``sparse_width`` (an engine made with
    ``obs_format="sparse"``), each row's nonzero features as the engine gives them (``obs_cols``,
    ``obs_vals``, ``obs_counts``: ``tarot_env.vector.sparse.SparseObs``), read back by :meth:`obs_rows`."""

    FIELDS = ("action", "logp", "value", "reward", "next_value", "done", "next_idx", "closed", "phase")

    def __init__(self, capacity: int, obs_size: int, num_actions: int, state_size: int | None,
                 sparse_width: int = 0):
        self.capacity = capacity
        self.obs_size = obs_size
        self.sparse = sparse_width > 0
        self.obs = np.zeros((0 if self.sparse else capacity, obs_size), dtype=np.float32)
        self.obs_cols = np.zeros((capacity if self.sparse else 0, sparse_width), dtype=np.int32)
        self.obs_vals = np.zeros((capacity if self.sparse else 0, sparse_width), dtype=np.float32)
        self.obs_counts = np.zeros(capacity if self.sparse else 0, dtype=np.int32)
        self.mask = np.zeros((capacity, num_actions), dtype=bool)
        self.state = np.zeros((capacity, state_size), dtype=np.float32) if state_size else None
        self.action = np.zeros(capacity, dtype=np.int64)
        self.logp = np.zeros(capacity, dtype=np.float32)
        self.value = np.zeros(capacity, dtype=np.float32)
        self.reward = np.zeros(capacity, dtype=np.float32)
        self.next_value = np.zeros(capacity, dtype=np.float32)
        self.done = np.zeros(capacity, dtype=bool)
        self.next_idx = np.full(capacity, -1, dtype=np.int64)
        self.closed = np.zeros(capacity, dtype=bool)
        self.phase = np.zeros(capacity, dtype=np.int64)
        self.size = 0

    def put_obs(self, slots: np.ndarray, obs) -> None:
        """Rows ``slots`` := the observations ``obs`` (dense rows, or a ``SparseObs`` for a sparse buffer)."""
        if self.sparse:
            self.obs_cols[slots], self.obs_vals[slots], self.obs_counts[slots] = obs.cols, obs.vals, obs.counts
        else:
            self.obs[slots] = obs

    def obs_rows(self, idx: np.ndarray):
        """The observations of rows ``idx``: dense float32 rows, or a ``SparseObs`` for a sparse buffer."""
        if not self.sparse:
            return self.obs[idx]
        from tarot_env.vector.sparse import SparseObs

        return SparseObs(self.obs_cols[idx], self.obs_vals[idx], self.obs_counts[idx], self.obs_size)

    def _arrays(self):
        obs = ({"obs_cols": self.obs_cols, "obs_vals": self.obs_vals, "obs_counts": self.obs_counts} if self.sparse
               else {"obs": self.obs})
        out = {**obs, "mask": self.mask}
        if self.state is not None:
            out["state"] = self.state
        out.update({k: getattr(self, k) for k in self.FIELDS})
        return out

    def keep(self, rows: np.ndarray) -> np.ndarray:
        """Move ``rows`` (the open transitions) to the front; returns their new indices."""
        n = len(rows)
        for arr in self._arrays().values():
            arr[:n] = arr[rows]
        self.next_idx[:n] = -1
        self.closed[:n] = False
        self.size = n
        return np.arange(n)

    def export(self) -> dict[str, np.ndarray]:
        return {k: v[:self.size].copy() for k, v in self._arrays().items()}

    def load(self, data: dict[str, np.ndarray]) -> None:
        n = len(data["action"])
        data = dict(data)
        if self.sparse and "obs" in data:  # exported by a dense buffer: its rows' nonzero entries
            from tarot_env.vector.sparse import from_dense

            data["obs_cols"], data["obs_vals"] = (np.zeros((n, self.obs_cols.shape[1]), dtype=d)
                                                  for d in (np.int32, np.float32))
            data["obs_counts"] = np.zeros(n, dtype=np.int32)
            from_dense(np.ascontiguousarray(data.pop("obs")), data["obs_cols"], data["obs_vals"], data["obs_counts"])
        elif not self.sparse and "obs_cols" in data:  # exported by a sparse buffer: densified
            from tarot_env.vector.sparse import SparseObs

            data["obs"] = SparseObs(data.pop("obs_cols"), data.pop("obs_vals"), data.pop("obs_counts"),
                                    self.obs_size).dense()
        for k, arr in self._arrays().items():
            arr[:n] = data[k]
        self.size = n


def compute_gae(buf: Buffer, gamma: float, lam: float, win_bonus: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """GAE over the closed transitions of ``buf`` (per-seat chains linked by ``next_idx``).

    ``win_bonus`` shapes the rewards first: each nonzero reward ``r`` counts as ``r + win_bonus *
    sign(r)`` (a deal's reward is paid at the deal's end, so this pays for the deal won or lost).

    A chain ends at ``done`` (no bootstrap) or at a transition whose successor is still open (bootstrap
    with the successor's value, truncated GAE). Returns ``(advantages, returns)`` of all rows (zeros
    for open rows).
    """
    n = buf.size
    r, v, nv = buf.reward[:n].astype(np.float64), buf.value[:n], buf.next_value[:n]
    if win_bonus:
        r = r + win_bonus * np.sign(r)
    done, nxt, closed = buf.done[:n], buf.next_idx[:n], buf.closed[:n]
    delta = r + gamma * (~done) * nv - v
    adv = np.zeros(n, dtype=np.float64)
    gl = gamma * lam
    for t in range(n - 1, -1, -1):
        if not closed[t]:
            continue
        a = delta[t]
        j = nxt[t]
        if j >= 0 and not done[t] and closed[j]:
            a += gl * adv[j]
        adv[t] = a
    ret = adv + v
    return adv.astype(np.float32), ret.astype(np.float32)


# --------------------------------------------------------------------------------------------------
# The collector
# --------------------------------------------------------------------------------------------------
LearnerFn = Callable[[np.ndarray, np.ndarray, "np.ndarray | None"], tuple[np.ndarray, np.ndarray, np.ndarray]]
OpponentFn = Callable[[int, np.ndarray, np.ndarray], np.ndarray]
SampleFn = Callable[[], int]
SELF = -1  # opponent id of a pure self-play game: the learner holds every seat


class Collector:
    """Steps ``num_envs`` games in lock-step; the learner acts (batched) where it sits.

    Each game is either pure self-play (the learner at every seat, all seats' decisions recorded) or
    the learner's team against an opponent (``opponent id >= 0``: only the learner's seats are
    recorded). ``sample_opponent()`` picks the opponent at each game start; ``on_game_end(opp,
    learner_score_diff)`` reports each finished game against an opponent.
    """

    def __init__(self, spec: GameSpec, num_envs: int, capacity: int, seed: int,
                 use_state: bool = False):
        self.spec = spec
        self.num_envs = num_envs
        P = spec.num_players
        self.rng = np.random.default_rng(seed)
        self.buf = Buffer(capacity, spec.obs_size, spec.num_actions, spec.state_size if use_state else None)
        self.use_state = use_state
        self.games: list = [None] * num_envs
        self.opp = np.full(num_envs, SELF, dtype=np.int64)
        self.learner_team = np.zeros(num_envs, dtype=np.int64)
        self.open_slot = np.full((num_envs, P), -1, dtype=np.int64)
        self.pending = np.zeros((num_envs, P), dtype=np.float64)
        self.seen = np.zeros(num_envs, dtype=np.int64)  # history entries already paid
        self._obs = np.zeros((num_envs, spec.obs_size), dtype=np.float32)
        self._mask = np.zeros((num_envs, spec.num_actions), dtype=bool)
        self._state = np.zeros((num_envs, spec.state_size), dtype=np.float32) if use_state else None
        self.stats = _Stats(spec)
        self.team_of = spec.team_of
        self.episode_deal = spec.env_config.episode == "deal"
        self.game_reward = spec.env_config.reward == "game"

    # --- games ------------------------------------------------------------------------------------
    def start(self, sample_opponent: SampleFn) -> None:
        for i in range(self.num_envs):
            self._new_game(i, sample_opponent)

    def _new_game(self, i: int, sample_opponent: SampleFn) -> None:
        self.games[i] = self.spec.new_game(int(self.rng.integers(2**62)))
        self.opp[i] = sample_opponent()
        self.learner_team[i] = int(self.rng.integers(2))
        self.open_slot[i] = -1
        self.pending[i] = 0.0
        self.seen[i] = 0

    # --- one rollout --------------------------------------------------------------------------------
    def collect(self, num_steps: int, learner: LearnerFn, opponent: OpponentFn,
                sample_opponent: SampleFn, on_game_end: Callable[[int, float], None]) -> int:
        """Advance every game ``num_steps`` decisions. Returns the number of decisions made."""
        buf, games = self.buf, self.games
        N = self.num_envs
        seats = np.zeros(N, dtype=np.int64)
        is_learner = np.zeros(N, dtype=bool)
        actions = np.zeros(N, dtype=np.int64)
        first_row = buf.size
        for _ in range(num_steps):
            # 1. observe every game
            self._observe(seats, is_learner)
            # 2. act: the learner batched, each opponent on its own games
            self._learner_acts(learner, seats, is_learner, actions)
            others = np.flatnonzero(~is_learner)
            if len(others):
                for o in np.unique(self.opp[others]):
                    sel = others[self.opp[others] == o]
                    actions[sel] = opponent(int(o), self._obs[sel], self._mask[sel])
            # 3. apply, pay finished deals, end finished episodes
            for i, g in enumerate(games):
                g.apply_unchecked(int(actions[i]))
                if len(g.history) > self.seen[i]:
                    self._deals_done(i, g, sample_opponent, on_game_end)
        self.stats.decisions(buf.phase[first_row:buf.size], buf.action[first_row:buf.size])
        return num_steps * N

    def _observe(self, seats: np.ndarray, is_learner: np.ndarray) -> None:
        """Each game's seat to act, its observation, mask (and state) into the collector's arrays; whether
        the learner holds that seat."""
        obs, mask, state = self._obs, self._mask, self._state
        team_of = self.team_of
        for i, g in enumerate(self.games):
            s = g.current
            seats[i] = s
            g.observation(s, out=obs[i])
            mask[i] = g.legal_mask()
            if state is not None:
                g.state_vector(out=state[i])
            is_learner[i] = self.opp[i] == SELF or team_of[s] == self.learner_team[i]

    def _learner_acts(self, learner: LearnerFn, seats: np.ndarray, is_learner: np.ndarray,
                      actions: np.ndarray) -> None:
        """One batched call of the learner on its games: each decision becomes an open transition of the
        buffer, and closes the previous one of the same seat (its reward: what the seat got since)."""
        buf, games = self.buf, self.games
        obs, mask, state = self._obs, self._mask, self._state
        rows = np.flatnonzero(is_learner)
        if not len(rows):
            return
        slots = np.arange(buf.size, buf.size + len(rows))
        if slots[-1] >= buf.capacity:
            raise RuntimeError("rollout buffer overflow; raise the capacity")
        buf.size += len(rows)
        buf.obs[slots] = obs[rows]
        buf.mask[slots] = mask[rows]
        if state is not None:
            buf.state[slots] = state[rows]
        a, logp, v = learner(obs[rows], mask[rows], state[rows] if state is not None else None)
        actions[rows] = a
        buf.action[slots], buf.logp[slots], buf.value[slots] = a, logp, v
        buf.closed[slots] = False
        buf.next_idx[slots] = -1
        buf.reward[slots] = buf.next_value[slots] = 0.0
        buf.done[slots] = False
        for k, i in enumerate(rows):
            s = seats[i]
            prev = self.open_slot[i, s]
            slot = slots[k]
            if prev >= 0:  # the seat decides again: close its previous decision
                buf.reward[prev] = self.pending[i, s]
                buf.next_value[prev] = v[k]
                buf.done[prev] = False
                buf.next_idx[prev] = slot
                buf.closed[prev] = True
            self.pending[i, s] = 0.0
            self.open_slot[i, s] = slot
            buf.phase[slot] = int(games[i].phase)

    def _deals_done(self, i: int, g, sample_opponent: SampleFn, on_game_end: Callable[[int, float], None]) -> None:
        """Game ``i`` finished one or more deals: pay them, end the episode (a deal, or the game), and
        report a finished game and start a new one in its place."""
        team_of = self.team_of
        for result in g.history[self.seen[i]:]:
            if not self.game_reward:
                self.pending[i] += deal_rewards(result["scores"], team_of, self.spec.env_config.reward_scale)
            self.stats.deal(result)
        self.seen[i] = len(g.history)
        if g.game_over and self.game_reward:
            self.pending[i] += game_rewards(g.winner, team_of)
        if g.game_over or self.episode_deal:
            self._end_episode(i)
        if g.game_over:
            lt = self.learner_team[i]
            diff = float(g.scores[lt] - g.scores[1 - lt]) if len(g.scores) == 2 else 0.0
            if self.opp[i] != SELF:
                on_game_end(int(self.opp[i]), diff)
            self.stats.game(self.opp[i], g, lt)
            self._new_game(i, sample_opponent)

    def _end_episode(self, i: int) -> None:
        buf = self.buf
        for s in range(self.spec.num_players):
            prev = self.open_slot[i, s]
            if prev >= 0:
                buf.reward[prev] = self.pending[i, s]
                buf.next_value[prev] = 0.0
                buf.done[prev] = True
                buf.next_idx[prev] = -1
                buf.closed[prev] = True
            self.open_slot[i, s] = -1
            self.pending[i, s] = 0.0

    def after_update(self) -> None:
        """Drop the closed transitions; keep the open ones at the front of the buffer."""
        rows = []
        for i in range(self.num_envs):
            for s in range(self.spec.num_players):
                if self.open_slot[i, s] >= 0:
                    rows.append((self.open_slot[i, s], i, s))
        rows.sort()
        old = np.array([r[0] for r in rows], dtype=np.int64)
        new = self.buf.keep(old)
        for (_, i, s), n in zip(rows, new):
            self.open_slot[i, s] = n

    # --- checkpointing ----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Everything needed to continue exactly: games, open transitions, pending rewards, rng."""
        import torch

        return {
            "games": [json.dumps(g.to_dict()) for g in self.games],
            "pending": torch.from_numpy(self.pending.copy()),
            "seen": torch.from_numpy(self.seen.copy()),
            **_seats_state(self),
        }

    def load_state_dict(self, d: dict) -> None:
        games = [self.spec.Game.from_dict(json.loads(s)) for s in d["games"]]
        if len(games) != self.num_envs:
            raise ValueError(f"checkpoint holds {len(games)} games, the config asks for num_envs={self.num_envs}")
        self.games = games
        self.pending[:] = d["pending"].numpy()
        self.seen[:] = d["seen"].numpy()
        _load_seats_state(self, d)


def _seats_state(c) -> dict:
    """What both collectors keep besides the games: opponents, learner teams, open transitions, the
    random stream and the rollout buffer (tensors and JSON: loadable with ``weights_only=True``)."""
    import torch

    return {
        "opp": torch.from_numpy(c.opp.copy()),
        "learner_team": torch.from_numpy(c.learner_team.copy()),
        "open_slot": torch.from_numpy(c.open_slot.copy()),
        "rng": json.dumps(c.rng.bit_generator.state),
        "buffer": {k: torch.from_numpy(v) for k, v in c.buf.export().items()},
    }


def _load_seats_state(c, d: dict) -> None:
    c.opp[:] = d["opp"].numpy()
    c.learner_team[:] = d["learner_team"].numpy()
    c.open_slot[:] = d["open_slot"].numpy()
    c.rng.bit_generator.state = json.loads(d["rng"])
    c.buf.load({k: v.numpy() for k, v in d["buffer"].items()})


class _Stats:
    """Running per-rollout statistics: per-phase decisions, discarded card values, deal fields."""

    def __init__(self, spec: GameSpec):
        self.spec = spec
        self.phase_names = {int(p): p.name for p in spec.Game.Phase}
        self.values = np.asarray(spec.Game.pack.value, dtype=np.float64)
        self.n_cards = spec.Game.pack.size
        self.reset()

    def reset(self) -> None:
        self.phase_count: dict[str, int] = {}
        self.discard_value = []
        self.deal_fields: dict[str, list[float]] = {}
        self.game_diffs: dict[str, list[float]] = {"self": [], "opponent": []}

    def decisions(self, phases: np.ndarray, actions: np.ndarray) -> None:
        """The learner's decisions of one rollout: count them per phase, value the discarded cards."""
        for p in np.unique(phases):
            name = self.phase_names.get(int(p), str(p))
            sel = phases == p
            self.phase_count[name] = self.phase_count.get(name, 0) + int(sel.sum())
            if "DISCARD" in name:
                a = actions[sel]
                self.discard_value.extend(self.values[a[a < self.n_cards]].tolist())

    def deal(self, result: dict) -> None:
        for k, v in result.items():
            if k in ("deal", "hand", "dealer", "fool_team", "claimant", "last_trick"):
                continue
            if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
                self.deal_fields.setdefault(k, []).append(float(v))
            elif isinstance(v, bool):
                self.deal_fields.setdefault(f"{k}_share", []).append(float(v))
            elif isinstance(v, (list, tuple)) and 0 < len(v) <= 4 and all(
                    isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool) for x in v):
                self.deal_fields.setdefault(f"{k}_mean", []).append(float(np.mean(v)))

    def game(self, opp: int, g, learner_team: int) -> None:
        if len(g.scores) == 2:
            d = float(g.scores[learner_team] - g.scores[1 - learner_team])
            self.game_diffs["self" if opp == SELF else "opponent"].append(d)

    def summary(self) -> dict[str, float]:
        out: dict[str, float] = {}
        total = sum(self.phase_count.values()) or 1
        for k, n in self.phase_count.items():
            out[f"phase/{k}/share_of_decisions"] = n / total
        if self.discard_value:
            out["phase/DISCARD/card_points_kept"] = float(np.mean(self.discard_value))
        for k, v in self.deal_fields.items():
            out[f"deal/{k}"] = float(np.mean(v))
        if self.game_diffs["opponent"]:
            d = np.array(self.game_diffs["opponent"])
            out["pool/win_rate_vs_pool"] = float((d > 0).mean())
            out["pool/score_margin_vs_pool"] = float(d.mean())
        return out


# --------------------------------------------------------------------------------------------------
# The batched-engine collector (tarot_env.make_vec), same interface as Collector
# --------------------------------------------------------------------------------------------------
def vec_available(game: str) -> bool:
    """Whether ``tarot_env.vector`` has a vectorised engine for ``game`` that the trainer can use.

    Games served only by the reference loop engine (one AEC env per row) do not count: the rules
    backend is faster than that, and its state is checkpointed exactly. Nor do engines whose state
    ``VecEnv.get_state``/``set_state`` do not capture (``checkpointable = False``), since ``--resume``
    must be exact.
    """
    try:
        from tarot_env import vector
    except ImportError:
        return False
    entry = getattr(vector, "_ENGINES", {}).get(game)
    if not (isinstance(entry, dict) and "vector" in entry):
        return False
    from tarot_env.games import load

    return bool(getattr(load(entry["vector"]), "checkpointable", True))


class VecCollector:
    """Like :class:`Collector`, over ``tarot_env.make_vec(game, num_envs, seed, **options)``.

    The engine returns, per step, the acting seat, its observation and mask, and the rewards each seat
    received since its own last decision, with automatic resets; a seat's previous transition is
    closed with that reward when it decides again, every seat's when the row's episode ends.
    """

    def __init__(self, spec: GameSpec, num_envs: int, capacity: int, seed: int, use_state: bool = False,
                 obs_format: str = "dense"):
        from tarot_env.vector import make_vec

        self.spec = spec
        self.num_envs = num_envs
        P = spec.num_players
        self.rng = np.random.default_rng(seed)
        # obs_format="sparse": the engine writes each observation's nonzero features, kept so in the buffer
        # and handed to the learner as they are (the trainer's CPU input layers, agents/players/sparse_input.py)
        self.venv = make_vec(spec.name, num_envs, int(self.rng.integers(2**62)), obs_format=obs_format, **spec.options)
        self.buf = Buffer(capacity, spec.obs_size, spec.num_actions, spec.state_size if use_state else None,
                          self.venv.sparse_width)
        self.use_state = use_state
        self.opp = np.full(num_envs, SELF, dtype=np.int64)
        self.learner_team = np.zeros(num_envs, dtype=np.int64)
        self.open_slot = np.full((num_envs, P), -1, dtype=np.int64)
        self.stats = _Stats(spec)
        self.team_of = spec.team_of
        phase = getattr(spec.Game.OBS, "phase", None)
        self._phase_slice = phase if isinstance(phase, slice) else None
        self.out = None

    @property
    def games(self):  # pragma: no cover - for symmetry with Collector in debugging
        return self.venv

    def start(self, sample_opponent: SampleFn) -> None:
        out = self.venv.reset()
        self.out = _kept(out.seat, out.obs, out.mask, out.rewards)
        for i in range(self.num_envs):
            self.opp[i] = sample_opponent()
            self.learner_team[i] = int(self.rng.integers(2))

    def collect(self, num_steps: int, learner: LearnerFn, opponent: OpponentFn,
                sample_opponent: SampleFn, on_game_end: Callable[[int, float], None]) -> int:
        buf, venv, N = self.buf, self.venv, self.num_envs
        team_of = self.team_of
        actions = np.zeros(N, dtype=np.int64)
        first_row = buf.size
        seat, obs, mask, rew = self.out["seat"], self.out["obs"], self.out["mask"], self.out["rewards"]
        for _ in range(num_steps):
            is_learner = (self.opp == SELF) | (team_of[seat] == self.learner_team)
            rows = np.flatnonzero(is_learner)
            if len(rows):
                slots = np.arange(buf.size, buf.size + len(rows))
                if slots[-1] >= buf.capacity:
                    raise RuntimeError("rollout buffer overflow; raise the capacity")
                buf.size += len(rows)
                o, m = obs[rows], mask[rows]
                st = venv.state()[rows] if self.use_state else None
                buf.put_obs(slots, o)
                buf.mask[slots] = m
                if st is not None:
                    buf.state[slots] = st
                a, logp, v = learner(o, m, st)
                actions[rows] = a
                buf.action[slots], buf.logp[slots], buf.value[slots] = a, logp, v
                buf.closed[slots] = False
                buf.next_idx[slots] = -1
                buf.reward[slots] = buf.next_value[slots] = 0.0
                buf.done[slots] = False
                buf.phase[slots] = self._phase(o)
                s = seat[rows]
                prev = self.open_slot[rows, s]
                has = prev >= 0
                p = prev[has]
                buf.reward[p] = rew[rows[has], s[has]]  # everything since that seat's last decision
                buf.next_value[p] = v[has]
                buf.next_idx[p] = slots[has]
                buf.closed[p] = True
                self.open_slot[rows, s] = slots
            others = np.flatnonzero(~is_learner)
            if len(others):
                for o_id in np.unique(self.opp[others]):
                    sel = others[self.opp[others] == o_id]
                    actions[sel] = opponent(int(o_id), _dense(obs[sel]), mask[sel])  # players read dense rows
            out = venv.step(actions, validate=False)
            seat, obs, mask, rew = out.seat, out.obs, out.mask, out.rewards
            for _, result in venv.deal_results:  # per-deal statistics, where the engine keeps them
                self.stats.deal(result)
            for b in np.flatnonzero(out.done):
                b = int(b)
                for s_ in range(self.spec.num_players):
                    p = self.open_slot[b, s_]
                    if p >= 0:
                        buf.reward[p] = rew[b, s_]
                        buf.next_value[p] = 0.0
                        buf.done[p] = True
                        buf.next_idx[p] = -1
                        buf.closed[p] = True
                    self.open_slot[b, s_] = -1
                fs = out.info.get("final_scores") if out.info else None
                if fs is not None and len(fs[b]) == 2:
                    lt = self.learner_team[b]
                    diff = float(fs[b][lt] - fs[b][1 - lt])
                    if self.opp[b] != SELF:
                        on_game_end(int(self.opp[b]), diff)
                    self.stats.game_diffs["self" if self.opp[b] == SELF else "opponent"].append(diff)
                self.opp[b] = sample_opponent()
                self.learner_team[b] = int(self.rng.integers(2))
        self.out = _kept(seat, obs, mask, rew)
        self.stats.decisions(buf.phase[first_row:buf.size], buf.action[first_row:buf.size])
        return num_steps * N

    after_update = Collector.after_update

    def _phase(self, obs) -> np.ndarray:
        """Each row's phase, the argmax of the observation's one-hot ``phase`` section (0 without one)."""
        sl = self._phase_slice
        if sl is None:
            return 0
        return (obs[:, sl] if isinstance(obs, np.ndarray) else obs.section(sl.start, sl.stop)).argmax(1)

    def state_dict(self) -> dict:
        import torch

        out = {k: v for k, v in self.out.items() if k != "obs"}  # the observations are encoded again on loading
        return {
            "venv": _object_state(self.venv),
            "out": {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in out.items()},
            **_seats_state(self),
        }

    def load_state_dict(self, d: dict) -> None:
        _load_object_state(self.venv, d["venv"])
        out = {k: v.numpy().copy() for k, v in d["out"].items() if k != "obs"}
        self.venv._encode()  # the restored games' observations, in this collector's format
        out["obs"] = self.venv._result().obs
        self.out = _kept(out["seat"], out["obs"], out["mask"], out["rewards"])
        _load_seats_state(self, d)


# --- a batched engine's state as weights_only-safe values (arrays as bytes, generators as JSON) ------
_SCALARS = (bool, int, float, str, type(None))


def _state_items(obj) -> dict:
    """An engine's state by attribute (``VecEnv.get_state``), else an object's ``vars``."""
    get = getattr(obj, "get_state", None)
    return get() if callable(get) and not isinstance(obj, type) else vars(obj)


def _kept(seat, obs, mask, rewards) -> dict:
    """A batched step's outputs copied (the engine's buffers are overwritten by its next step)."""
    return {"seat": np.array(seat), "obs": obs.copy(), "mask": np.array(mask), "rewards": np.array(rewards)}


def _dense(obs) -> np.ndarray:
    """Dense float32 observation rows, from either form (``SparseObs.dense``)."""
    return obs if isinstance(obs, np.ndarray) else obs.dense()


def _object_state(obj, depth: int = 0) -> dict:
    """The mutable state of an engine object: its numpy arrays, generators, scalars and sub-objects
    (``VecEnv.get_state``: an engine holding other objects replaces them by such values)."""
    import torch

    def enc(v, depth):
        if isinstance(v, np.ndarray):
            a = np.ascontiguousarray(v)
            return {"__nd__": torch.from_numpy(a.view(np.uint8).reshape(-1).copy()),
                    "dtype": a.dtype.str, "shape": list(a.shape)}
        if isinstance(v, np.random.Generator):
            return {"__rng__": json.dumps(v.bit_generator.state)}
        if isinstance(v, np.generic):
            return {"__np__": v.item(), "dtype": v.dtype.str}
        if isinstance(v, _SCALARS):
            return v
        if isinstance(v, (list, tuple)):
            return {"__seq__": [enc(x, depth) for x in v]}
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            return {"__dict__": {k: enc(x, depth) for k, x in v.items()}}
        if hasattr(v, "__dict__") and type(v).__module__.startswith("tarot_env.vector") and depth < 4:
            return {"__obj__": _object_state(v, depth + 1)}
        return {"__skip__": True}  # configs, classes, functions: rebuilt by the constructor

    return {k: enc(v, depth) for k, v in _state_items(obj).items()}


def _load_object_state(obj, state: dict) -> None:
    def dec_into(cur, v):
        """Decode ``v``; arrays are written into ``cur`` in place when they fit (keeps views valid)."""
        if isinstance(v, dict):
            if "__nd__" in v:
                a = v["__nd__"].numpy().view(np.dtype(v["dtype"])).reshape(v["shape"])
                if isinstance(cur, np.ndarray) and cur.shape == a.shape and cur.dtype == a.dtype:
                    cur[...] = a
                    return cur
                return a.copy()
            if "__rng__" in v:
                g = np.random.default_rng()
                g.bit_generator.state = json.loads(v["__rng__"])
                return g
            if "__np__" in v:
                return np.dtype(v["dtype"]).type(v["__np__"])
            if "__seq__" in v:
                seq = v["__seq__"]
                curs = cur if isinstance(cur, (list, tuple)) and len(cur) == len(seq) else [None] * len(seq)
                items = [dec_into(c, x) for c, x in zip(curs, v["__seq__"])]
                return tuple(items) if isinstance(cur, tuple) else items
            if "__dict__" in v:
                base = cur if isinstance(cur, dict) else {}
                return {k: dec_into(base.get(k), x) for k, x in v["__dict__"].items()}
            if "__obj__" in v:
                _load_object_state(cur, v["__obj__"])
                return cur
            if "__skip__" in v:
                return cur
        return v

    setter = getattr(obj, "set_state", None)
    if callable(setter):  # a VecEnv: decode against its get_state() values, then hand them over
        current = obj.get_state()
        missing, unknown = sorted(current.keys() - state.keys()), sorted(state.keys() - current.keys())
        if missing or unknown:  # another version of the engine wrote it: refuse before changing anything
            raise ValueError(
                f"the checkpoint's {type(obj).__name__} state was written by another version of the batched "
                f"engine (missing {missing[:6]}, unknown {unknown[:6]}); resume it with the tarot_env version "
                "that wrote it (meta['tarot_env_version']) or start a new run")
        setter({k: dec_into(current.get(k), v) for k, v in state.items()})
        return
    for k, v in state.items():
        cur = getattr(obj, k, None)
        new = dec_into(cur, v)
        if new is not cur:
            setattr(obj, k, new)
