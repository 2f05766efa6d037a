"""The determinisation sampler (tarot_env/sampler.py): worlds consistent with what one player knows
(RULES.md Part H), drawn uniformly, without reading the hidden truth."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pettingzoo
import pytest

import tarot_env
from aec_helpers import row_arrays, same_arrays
from tarot_env.rules.millone import MilloneGame
from tarot_env.rules.ottocento import OttocentoConfig
from tarot_env.rules.partita import PartitaConfig, PartitaGame
from tarot_env.sampler import Determinizer, sample_worlds

GAMES = {game: g.rules_class() for game, g in tarot_env.GAMES.items()}


def random_step(g, rng, log=None):
    legal = g.legal_actions()
    a = legal[rng.integers(len(legal))]
    if log is not None:
        log.append((g.current, a))
    g.apply(a)


def positions(G, seeds, p, rng, config=None):
    """Random positions of the first deal of seeded games (each position a live game object)."""
    for seed in seeds:
        g = G(config, seed=seed) if config is not None else G(seed=seed)
        while not g.game_over and not g.history:
            if rng.random() < p:
                yield g
            random_step(g, rng)


def hidden_key(w, seat):
    """The places a player cannot see, as a hashable value."""
    P = w.num_players
    parts = [tuple(np.flatnonzero(w.hands[s])) for s in range(P) if s != seat]
    parts += [tuple(np.flatnonzero(w.discards[s])) for s in range(P) if s != seat]
    if hasattr(w, "stock"):
        parts.append(tuple(np.flatnonzero(w.stock)))
    if hasattr(w, "deck") and w.name == "ottocento" and w.phase == 0:
        parts.append(tuple(sorted(w.deck[20:])))
    return tuple(parts)


# --- H.6: every world gives the player the same observation and legal moves -----------------------

@pytest.mark.parametrize("name,config", [
    ("partita", None), ("partita", PartitaConfig(partita_signals="bolognese3")),
    ("ottocento", None), ("ottocento", OttocentoConfig(ott_signal_players="all", a_monte="ask_all")),
    ("millone", None),
])
def test_H_6_every_world_gives_the_player_the_same_observation_and_mask(name, config):
    G = GAMES[name]
    rng = np.random.default_rng(7)
    checked, moved = 0, 0
    phases = set()
    for g in positions(G, range(12), 0.15, rng, config):
        phases.add(int(g.phase))
        for seat in range(g.num_players):
            worlds = sample_worlds(g, seat, 2, rng)
            for w in worlds:
                assert np.array_equal(w.observation(seat), g.observation(seat)), (name, seat, g.phase)
                if seat == g.current:
                    assert np.array_equal(w.legal_mask(), g.legal_mask())
                assert w.hand_sizes == g.hand_sizes
                # B.4.1/B.4.2: nobody holds a card of a suit he has shown void in
                voids = g.shown_void  # public (tests/test_table_memory.py checks it against the play)
                for s in range(g.num_players):
                    for u in np.flatnonzero(voids[s]):
                        assert not (w.hands[s] & g.tables.suit[u]).any()
                checked += 1
                moved += hidden_key(w, seat) != hidden_key(g, seat)
    assert checked > 100 and moved > checked // 2  # the worlds really differ from the truth
    assert len(phases) >= 2


# --- the hidden truth is never read ---------------------------------------------------------------

@pytest.mark.parametrize("name", list(GAMES))
def test_H_6_samples_do_not_depend_on_the_hidden_cards(name):
    """Re-deal the hidden cards consistently (a world is a consistent re-deal): the same seed then
    draws exactly the same worlds, deck order and random stream included."""
    G = GAMES[name]
    rng = np.random.default_rng(11)
    compared = 0
    for g in positions(G, range(6), 0.1, rng):
        seat = g.current
        other_truth = sample_worlds(g, seat, 1, np.random.default_rng(99))[0]
        if hidden_key(other_truth, seat) == hidden_key(g, seat):
            continue
        a = sample_worlds(g, seat, 3, np.random.default_rng(5))
        b = sample_worlds(other_truth, seat, 3, np.random.default_rng(5))
        for x, y in zip(a, b):
            assert same_arrays(row_arrays(x.row), row_arrays(y.row))  # the whole row
            assert np.array_equal(x.state_vector(), y.state_vector())
            if hasattr(x, "deck"):
                assert np.array_equal(x.deck, y.deck)
            assert x.rng.bit_generator.state == y.rng.bit_generator.state
            assert x.history == y.history
        compared += 1
    assert compared >= 5


def test_H_6_one_seed_reproduces_the_worlds_and_env_input_is_accepted():
    env = pettingzoo.make("aec", tarot_env.ENV_IDS["ottocento"])
    env.reset(seed=4)
    g = env.unwrapped.game
    a = sample_worlds(env, "player_1", 4, np.random.default_rng(1))
    b = sample_worlds(g, 1, 4, np.random.default_rng(1))
    assert all(same_arrays(row_arrays(x.row), row_arrays(y.row)) for x, y in zip(a, b))
    assert all(x is not g and not np.shares_memory(x.row.hbits, g.row.hbits) for x in a)
    before = g.state_vector().copy()
    sample_worlds(g, 0, 5, np.random.default_rng(2))
    assert np.array_equal(g.state_vector(), before)  # the real game is untouched


def test_bad_requests_raise_value_error():
    g = PartitaGame(seed=0)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown player"):
        sample_worlds(g, 4, 1, rng)
    with pytest.raises(ValueError, match="unknown player"):
        sample_worlds(g, "player_9", 1, rng)
    with pytest.raises(ValueError, match="n must be"):
        sample_worlds(g, 0, 0, rng)
    with pytest.raises(ValueError, match="n must be"):
        sample_worlds(g, 0, 2.0, rng)
    with pytest.raises(TypeError, match="numpy Generator"):
        sample_worlds(g, 0, 1, 3)
    with pytest.raises(ValueError, match="rules object"):
        sample_worlds("partita", 0, 1, rng)
    m = MilloneGame(seed=0)
    while not m.game_over:
        random_step(m, rng)
    with pytest.raises(ValueError, match="is over"):
        sample_worlds(m, 0, 1, rng)


# --- uniform over the consistent deals ------------------------------------------------------------

def replay_consistent(g0_args, log, w, seat) -> bool:
    """Is ``w`` a deal on which the recorded play of the first deal is legal? Replays the log from a
    fresh game dealt ``w``'s original hands; the other players' hidden discards are ``w``'s."""
    G, config, seed = g0_args
    fresh = G(config, seed=seed)
    d = w.dealer
    if w.name == "millone":
        fresh.set_deck(d, w.deck)
        q = 1 - seat
        hidden = list(w.discarded[q])
    else:
        hands = [list(np.flatnonzero(w.hands[s] | w.played[s] | w.discards[s])) for s in range(4)]
        fresh.set_hands(d, hands)
        q = d
        hidden = [c for c in np.flatnonzero(w.discards[d]) if not (w.name == "partita" and w.public_discards[c])]
    try:
        for actor, a in log:
            discarding = fresh.phase.name in ("DISCARD", "SECOND_DISCARD")
            if actor == q and actor != seat and discarding and not (
                    w.name == "partita" and fresh.pack.suit[a] == 4):  # PAR-4.5: a trump is public
                a = hidden.pop(0)
            fresh.apply(a)
    except ValueError:
        return False
    return np.array_equal(fresh.observation(seat), w.observation(seat))


def all_assignments(cards, sizes):
    """Every way to put ``cards`` in places of ``sizes`` (sets, not orders)."""
    if not sizes:
        yield []
        return
    for first in itertools.combinations(cards, sizes[0]):
        rest = [c for c in cards if c not in first]
        for tail in all_assignments(rest, sizes[1:]):
            yield [np.array(first, dtype=np.int64)] + tail


def chi_square_p(observed: np.ndarray) -> float:
    """Upper tail of the chi-square test of equal cells (Wilson–Hilferty approximation)."""
    k = len(observed) - 1
    e = observed.sum() / len(observed)
    x = float(((observed - e) ** 2 / e).sum())
    z = ((x / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


@pytest.mark.parametrize("name", list(GAMES))
def test_samples_are_uniform_over_the_consistent_deals(name):
    """Late in a deal, few unknown cards and shown voids: enumerate every assignment of the unknown
    cards to the hidden places, keep those on which the recorded play is legal (an independent
    replay), and check that the sampler draws exactly those, uniformly (chi-square, fixed seed)."""
    G = GAMES[name]
    rng = np.random.default_rng(2024)
    tested, rejected_total = 0, 0
    for seed in range(200):
        log: list = []
        g = G(None, seed=seed)
        found = None
        while not g.game_over and not g.history:
            det = None
            if g.phase.name == "PLAY":
                det = Determinizer(g, g.current)
                places, names = det.cases[0]
                total = math.factorial(len(places.cards))
                for s in places.sizes:
                    total //= math.factorial(s)
                if 8 <= total <= 300 and len(det.cases) == 1:
                    found = (det, places, names)
                    break
            random_step(g, rng, log)
        if found is None:
            continue
        det, places, names = found
        seat = g.current
        consistent = set()
        rejected = 0
        for assignment in all_assignments(list(places.cards), list(places.sizes)):
            a = {}
            for nm, cards in zip(names, assignment):
                a[nm] = cards
            w = det.view.build(a, np.random.default_rng(0))
            if replay_consistent((G, None, seed), log, w, seat):
                consistent.add(hidden_key(w, seat))
            else:
                rejected += 1
        if len(consistent) < 3:
            continue
        assert det.count() == len(consistent) or name == "millone"  # Millone: claim/payment predicates
        m = 40 * len(consistent)
        worlds = det.sample(m, np.random.default_rng(seed))
        counts = {k: 0 for k in consistent}
        for w in worlds:
            k = hidden_key(w, seat)
            assert k in counts, "a sampled world the recorded play rules out"
            counts[k] += 1
        p = chi_square_p(np.array(list(counts.values()), dtype=float))
        assert p > 1e-4, (name, seed, len(consistent), p)
        assert min(counts.values()) > 0
        assert det.stats["fallback"] == 0
        tested += 1
        rejected_total += rejected
        if tested == 3:
            break
    assert tested == 3
    assert rejected_total > 0  # the voids (and discard rules) really ruled deals out


def test_PAR_4_4_a_trump_discard_shows_the_dealer_had_at_most_one_plain_discardable_card():
    """The dealer holds one plain discardable card (7S) and discards a trump first (announced, PAR-4.5):
    for the others, his hand may hold at most one such card (PAR-4.4), both cases occur, and the rest
    of the discard stays possible; after the second (hidden) discard he holds none."""
    from tarot_env.rules.partita import FRENCH54, PLAIN_DISCARDABLE

    names = "XXI I Fool KS KC KD KH XX XIX XVIII XVII XVI XV XIV 7S".split()
    dealer_hand = [FRENCH54.parse(n) for n in names]
    rest = [c for c in range(FRENCH54.size) if c not in dealer_hand]
    rng = np.random.default_rng(0)
    rest = list(rng.permutation(rest))
    hands = [rest[0:13], rest[13:26], rest[26:39], dealer_hand]
    g = PartitaGame(seed=0)
    g.set_hands(3, hands)
    assert g.discard_trumps_needed == 1
    g.apply(FRENCH54.parse("XX"))  # the trump first: public
    seen, ones = set(), 0
    # exact share of "one plain card" among the consistent deals: the dealer's 14 cards come from the
    # 40 unknown ones, of which u are plain discardable
    u = int((PLAIN_DISCARDABLE & ~g.hands[0]).sum())
    other = 40 - u
    one, none = u * math.comb(other, 13), math.comb(other, 14)
    share = one / (one + none)
    for w in sample_worlds(g, 0, 300, np.random.default_rng(1)):
        assert np.array_equal(w.observation(0), g.observation(0))
        plain = int((w.hands[3] & PLAIN_DISCARDABLE).sum())
        assert plain <= 1
        seen.add(plain)
        ones += plain
        assert w.discard_trumps_needed == 2 - plain
        w.apply(w.legal_actions()[0])  # the discard can be completed
        assert w.phase.name == "PLAY"
    assert seen == {0, 1}
    assert abs(ones / 300 - share) < 4 * math.sqrt(share * (1 - share) / 300), (ones, share)
    g.apply(FRENCH54.parse("7S"))  # the hidden plain discard
    for w in sample_worlds(g, 1, 50, np.random.default_rng(2)):
        assert not (w.hands[3] & PLAIN_DISCARDABLE).any()
        assert (w.discards[3] & PLAIN_DISCARDABLE).sum() == 1 and w.discards[3, FRENCH54.parse("XX")]


# --- the conditions that are not rectangular: drawn rows that fail them are drawn again ------------

def test_OTT_5_5_every_world_lets_the_seat_declaring_now_complete_what_it_has_revealed():
    """While another seat is part-way through its declarations, a world must give it a hand in which the
    cards it has revealed can still be completed (M(hand) holds them): rows that fail are drawn again."""
    from tarot_env.rules.ottocento import OttocentoGame, Phase

    rng = np.random.default_rng(5)
    checked = 0
    for seed in range(60):
        g = OttocentoGame(seed=seed)
        while not g.game_over and not g.history:
            c = g.current
            if g.phase == Phase.DECLARE and g.declared[c].any():
                seat = (c + 1) % 4
                det = Determinizer(g, seat)
                worlds = det.sample(32, rng)
                for w in worlds:
                    w.check_state()
                    assert not (w.declared[c] & ~w.declarable).any(), "the declarer could not complete"
                    assert np.array_equal(w.hands[seat], g.hands[seat])
                assert len({hidden_key(w, seat) for w in worlds}) > 1
                assert det.stats["fallback"] == 0
                checked += 1
                break
            random_step(g, rng)
        if checked == 5:
            break
    assert checked == 5


def test_MIL_3_no_world_has_a_first_phase_hand_that_would_have_claimed():
    """The hand goes on, so neither first-phase hand claimed (MIL-3): with the opponent's score just below
    the claim his real first packets allow, worlds whose first packets would have claimed are drawn again."""
    from tarot_env.rules.combos import combo_points
    from tarot_env.rules.millone import TARGET, Phase, claimants

    rng = np.random.default_rng(3)
    for seed in range(40):
        g = MilloneGame(seed=seed)
        while g.phase != Phase.PLAY:
            random_step(g, rng)
        seat = g.current
        det = Determinizer(g, seat)
        first = det.view.first
        real = [combo_points(g.deck[first[p]]) for p in range(2)]
        if real[seat] >= TARGET // 2:  # (the player's own packets must not claim at the raised score either)
            continue
        g.row.scores[0] = [TARGET - 1 - real[0], TARGET - 1 - real[1]]  # the real hands stay short of 1000
        det = Determinizer(g, seat)
        worlds = det.sample(64, rng)
        for w in worlds:
            claims = [int(g.scores[p]) + combo_points(w.deck[first[p]]) for p in range(2)]
            assert claimants(np.array(claims)) < 0, claims
        if det.stats["rejected"] > 0:
            assert det.stats["fallback"] == 0
            return
    pytest.fail("no position where a world was drawn again")


def brute_force_count(cards, sizes, allowed) -> int:
    """Assignments of ``cards`` to places of ``sizes`` with card ``c`` in place ``l`` only if ``allowed[l, c]``,
    counted one by one (the independent check of the compiled counting recursion)."""
    return sum(all(allowed[l, c] for c, l in zip(cards, assign)) and
               all(assign.count(l) == k for l, k in enumerate(sizes))
               for assign in itertools.product(range(len(sizes)), repeat=len(cards)))


def test_the_compiled_count_is_the_number_of_assignments_and_its_draws_are_all_of_them():
    """H.6 (exactness): random small rectangular problems: ``Places.count`` (the compiled recursion,
    ``_count_table``) equals a brute-force count, and 200 draws per assignment hit only allowed assignments."""
    from tarot_env.sampler import _BINOMIALS, Places, _count_table

    rng = np.random.default_rng(5)
    for _ in range(12):
        L, n = int(rng.integers(2, 5)), int(rng.integers(3, 8))
        cards = np.sort(rng.choice(20, size=n, replace=False)).astype(np.int64)
        sizes = list(np.bincount(rng.integers(L, size=n), minlength=L))
        allowed = rng.random((L, 20)) < 0.7
        p = Places(cards, sizes, allowed)
        want = brute_force_count(cards.tolist(), sizes, allowed)
        assert p.count() == want
        if want:
            bits = p.sample_bits(200, np.random.default_rng(1))
            for row in bits:
                for l, b in enumerate(row):
                    got = [c for c in cards.tolist() if int(b) >> c & 1]
                    assert len(got) == sizes[l] and all(allowed[l, c] for c in got)
    # arrays too small for the states: the kernel says so (total -1) and _table asks again with more room
    p = Places(np.arange(12, dtype=np.int64), [4, 4, 4], np.ones((3, 20), dtype=bool))
    classes = np.array([[0, 1, 2]], dtype=np.int64)
    assert _count_table(np.array([4, 4, 4]), classes, np.array([12]), _BINOMIALS, 1, 1)[-1] == -1
    assert p.count() == math.factorial(12) // math.factorial(4) ** 3
