"""The CRC tables behind the injection features give zlib's values: 4-grams of Latin-1 text from two pair tables, a character
beyond Latin-1 from its own table column, and whole batches of random text (every script width, empty texts, long
words, line breaks) equal to per-token zlib hashes.
"""

from __future__ import annotations

import random
import zlib

import numpy as np

from memlane.security.features import _SPAN_BYTES, _column, _latin_gram_tables, feature_runs, feature_sets
from tests.security_reference import reference_ids


def test_a_latin_gram_is_two_pair_lookups() -> None:
    high, low, tail = _latin_gram_tables()
    rng = random.Random(5)
    for top in (128, 256, 256, 256):  # ASCII only, then any Latin-1 character (one or two UTF-8 bytes)
        for _ in range(2000):
            a, b, c, d = (rng.randrange(top) for _ in range(4))
            crc = high[tail[c << 8 | d] | a << 8 | b] ^ low[c << 8 | d]
            assert int(crc) == zlib.crc32(bytes((a, b, c, d)).decode("latin-1").encode("utf-8")), (a, b, c, d)
    for a, b, c, d in ((0xB6, 32, 97, 98), (32, 0xB6, 32, 120), (120, 32, 0xB6, 32), (0xFF, 0xDF, 0xB6, 0xE9)):
        assert int(high[tail[c << 8 | d] | a << 8 | b] ^ low[c << 8 | d]) == zlib.crc32(
            bytes((a, b, c, d)).decode("latin-1").encode("utf-8")
        )
    assert not tail.reshape(256, 256)[:128, :128].any()  # an ASCII pair after: the first block


def test_a_character_column_is_what_its_bytes_add_to_a_crc() -> None:
    for point in (0x100, 0x3A3, 0x7FF, 0x800, 0x2014, 0x65E5, 0xFFFD, 0x10000, 0x1F600, 0x10FFFF):
        data = chr(point).encode("utf-8")
        column = _column(point)
        for k in (0, 1, 2, 3, 7, 40, _SPAN_BYTES - len(data)):
            # zero bytes add nothing: the CRC of the character and k zeros less that of as many zeros
            assert int(column[k]) == zlib.crc32(data + bytes(k)) ^ zlib.crc32(bytes(len(data) + k)), (point, k)


def _random_text(rng: random.Random) -> str:
    alphabet = "ab cd.\n\t|!?_1-" + "éßü¶\u00a0" + "\u2019\u201c\u2014\u03a3\u03c3\u041f\u65e5\u672c" + "\U0001f600"
    pool = rng.sample(alphabet, rng.randint(1, len(alphabet)))
    text = "".join(rng.choice(pool) for _ in range(rng.choice([0, 1, 3, 4, 5, 40, 400])))
    if rng.random() < 0.2:  # a word past the tables' 256 bytes, in 1-, 2- and 3-byte characters
        text = text.replace("a", "a" * 260).replace("\u03a3", "\u03a3" * 130).replace("\u65e5", "\u65e5" * 86)
    return text


def test_random_batches_equal_per_token_hashes() -> None:
    rng = random.Random(11)
    for _ in range(150):
        batch = [_random_text(rng) for _ in range(rng.choice([1, 2, 5]))]
        for text, ids in zip(batch, feature_sets(batch), strict=True):
            assert np.array_equal(ids, reference_ids(text)), text[:60]


def test_batch_runs_are_int64_with_one_bound_per_text() -> None:
    runs = feature_runs(["", "caf\u00e9 \u65e5\u672c", "plain ascii\nline"])
    assert runs.ids.dtype == np.int64 and runs.bounds.dtype == np.int64
    assert runs.bounds.tolist()[0] == 0 and len(runs.bounds) == 4 and runs.bounds[-1] == runs.ids.size


def test_tokens_at_the_tables_edge_equal_per_token_hashes() -> None:
    # pairs of 126- to 128-byte words straddle the 256 bytes of the tables (a pair is both words and three bytes),
    # a line's first word of 253 to 256 bytes its ``l WORD`` token; in ASCII, with a line break and in two-byte
    # characters
    texts = []
    for a, b in ((126, 127), (127, 127), (127, 128), (126, 126), (128, 128)):
        x, y, e = "x" * a, "y" * b, "\u00e9" * (a // 2)
        texts += [f"{x} {y}", f"pre\n{x} {y}.\nend", f"{e} {y} \u00b6"]
    for n in (252, 253, 254, 255, 256):
        texts += ["first line\n" + "z" * n + " tail", "a\n" + "\u00df" * (n // 2)]
    for batch in ([t] for t in texts):
        assert np.array_equal(feature_sets(batch)[0], reference_ids(batch[0])), batch[0][:20]
    for text, ids in zip(texts, feature_sets(texts), strict=True):
        assert np.array_equal(ids, reference_ids(text)), text[:20]
