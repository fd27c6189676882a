"""The loopback server's paged prefix cache: whole blocks of words, only behind an identical prefix, never the
prompt's last token, least recently used blocks evicted."""

from __future__ import annotations

from lits.testing.prefix_cache import PagedPrefixCache


def words(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def test_only_whole_blocks_of_a_shared_prefix_are_served():
    cache = PagedPrefixCache(block_size=16)
    assert cache.serve(words("a", 20) + words("x", 20)) == 0
    assert cache.serve(words("a", 20) + words("y", 20)) == 16  # 20 shared words: one whole block


def test_the_last_token_of_a_prompt_is_always_computed():
    cache = PagedPrefixCache(block_size=16)
    cache.serve(words("a", 32))
    assert cache.serve(words("a", 32)) == 16  # the second block holds the last token
    assert cache.serve(words("a", 33)) == 32


def test_a_block_is_found_only_behind_the_same_prefix():
    cache = PagedPrefixCache(block_size=16)
    cache.serve(words("a", 16) + words("b", 17))
    assert cache.serve(words("c", 16) + words("b", 17)) == 0


def test_the_least_recently_used_blocks_are_evicted_first():
    cache = PagedPrefixCache(block_size=16, capacity=2)
    cache.serve(words("a", 33))
    cache.serve(words("b", 33))  # fills the two blocks: a's are gone
    assert cache.serve(words("a", 33)) == 0
    assert (cache.prompt_tokens, cache.cached_tokens) == (99, 0)
