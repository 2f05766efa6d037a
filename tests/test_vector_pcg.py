"""The batched engines' random streams (``tarot_env.vector.pcg``): numpy's ``default_rng`` draw for draw.

Row ``i`` of a batched engine must play exactly the reference game of seed ``row_seeds[i]``; the
streams kept in arrays must therefore give the same permutations, the same next-game seeds and the
same generator states as ``np.random.default_rng(seed)``.
"""
from __future__ import annotations

import numpy as np

from tarot_env.vector.pcg import Streams, permutation, stream_arrays

SEEDS = ([int(s) for s in np.random.default_rng(5).integers(2**32, 2**63, 200)]
         + [0, 1, 7, 2**32 - 1, 2**32, 2**63 - 1, 2**64 - 1])


def same_stream(a: np.random.Generator, b: np.random.Generator) -> bool:
    sa, sb = a.bit_generator.state, b.bit_generator.state
    # numpy keeps a stale 32-bit half after using it (has_uint32 = 0): only a kept half matters
    return sa["state"] == sb["state"] and sa["has_uint32"] == sb["has_uint32"] and (
        not sa["has_uint32"] or sa["uinteger"] == sb["uinteger"])


def test_reseed_equals_default_rng_for_every_seed_size():
    st = Streams(*stream_arrays(len(SEEDS)))
    st.reseed(np.arange(len(SEEDS)), np.array(SEEDS, dtype=np.uint64))
    for r, s in enumerate(SEEDS):
        assert same_stream(st.generator(r), np.random.default_rng(s)), s


def test_permutations_and_next_game_seeds_are_numpys_draw_for_draw():
    st = Streams(*stream_arrays(len(SEEDS)))
    deck = np.zeros(54, dtype=np.int64)
    for r, s in enumerate(SEEDS):
        g = np.random.default_rng(s)
        g.integers(4)  # a first dealer: a 32-bit draw, whose other half numpy keeps for the next
        st.load([r], [g])
        for _ in range(6):  # one permutation per deal (TrickGame.shuffled_pack)
            permutation(st.state, st.inc, st.half, r, deck)
            assert np.array_equal(deck, g.permutation(54)), s
        assert same_stream(st.generator(r), g)
        assert int(st.next_game_seeds(np.array([r]))[0]) == int(g.integers(2**63)), s  # next_game()
        assert same_stream(st.generator(r), g)


def test_generator_is_a_copy_that_leaves_the_stream_alone():
    st = Streams(*stream_arrays(1))
    st.reseed(np.array([0]), np.array([2**40 + 3], dtype=np.uint64))
    before = st.state.copy()
    st.generator(0).permutation(54)
    assert np.array_equal(st.state, before)


def test_reseed_of_one_row_at_a_time_gives_the_same_streams():
    st = Streams(*stream_arrays(len(SEEDS)))
    for r, s in enumerate(SEEDS):  # one row at a time (a batched engine's new game of one row)
        st.reseed(np.array([r]), np.array([s], dtype=np.uint64))
        assert same_stream(st.generator(r), np.random.default_rng(s)), s


def test_seed_row_in_compiled_code_is_default_rng_of_the_seed():
    """``pcg._seed_row`` (a new game's stream seeded by the compiled SeedSequence hash, Ottocento's
    ``next_game``) equals ``default_rng`` on seeds of every size of two words."""
    from tarot_env.vector.pcg import _seed_row
    st = Streams(*stream_arrays(len(SEEDS)))
    for s in SEEDS:
        if s >= 2**32:
            _seed_row(st.state, st.inc, st.half, 0, np.uint64(s))
            assert same_stream(st.generator(0), np.random.default_rng(s)), s


def test_seed_words_are_seedsequences_generate_state():
    """``pcg._words`` (the compiled SeedSequence hash of ``Streams.reseed``) is
    ``SeedSequence(s).generate_state(4, np.uint64)`` for two-word seeds."""
    from tarot_env.vector.pcg import _words
    two = np.array([s for s in SEEDS if s >= 2**32], dtype=np.uint64)
    want = np.array([np.random.SeedSequence(int(s)).generate_state(4, np.uint64) for s in two])
    assert np.array_equal(np.array([_words(s) for s in two], dtype=np.uint64), want)
