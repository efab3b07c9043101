"""Names learnt late (``memlane.enrich.backlink``): which names, which texts, what is added."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from memlane.enrich.aliases import EntityResolver
from memlane.enrich.backlink import NamingRow, earlier_links, learnt_names, relink_batch
from memlane.enrich.entities import AliasRow
from memlane.models import MemoryItem, MemoryKind

T0 = datetime(2024, 5, 10, tzinfo=UTC)


def item(i: int, text: str) -> MemoryItem:
    return MemoryItem(
        id=f"m{i}",
        user_id="u",
        kind=MemoryKind.MESSAGE,
        text=text,
        timestamp=T0,
        created_at=T0,
        updated_at=T0,
        content_hash=f"m{i}",
    )


def test_learnt_names_are_new_entities_of_the_linked_kinds() -> None:
    before = [AliasRow("anna", "anna", "person", "Anna")]
    changed = [
        AliasRow("anna", "anna", "person", "Anna"),  # known before: not learnt
        AliasRow("priya", "priya", "person", "Priya"),
        AliasRow("leeds", "leeds", "place", "Leeds"),
        AliasRow("iphone", "iphone", "product", "iPhone"),  # not a kind looked for
        AliasRow("my sister", "priya", "person", "Priya"),  # an alias, not an entity
    ]
    assert learnt_names(before, changed) == {"priya": "Priya", "leeds": "Leeds"}


def test_only_texts_where_the_name_opens_a_sentence_are_read_again() -> None:
    resolver = EntityResolver()
    resolver.observe("I had lunch with Priya.")
    learnt = {"priya": "Priya"}
    items = [
        item(1, "Priya moved to Leeds. She loves it."),
        item(2, "Great news! Priya got the job."),
        item(3, "Priyanka called."),  # another name that starts the same
        item(4, "the priya festival."),  # not capitalised
    ]
    relink_batch(items, resolver, learnt)
    assert [("priya" in it.entities) for it in items] == [True, True, False, False]
    before = list(items[0].entities)
    relink_batch(items, resolver, learnt)  # nothing twice
    assert items[0].entities == before


class FakeNaming:
    def __init__(self, rows: Sequence[NamingRow]) -> None:
        self.rows = list(rows)
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    def naming(self, user_id: str, words: Sequence[str], limit: int) -> list[NamingRow]:
        self.asked.append((user_id, tuple(words)))
        return [r for r in self.rows if all(w in r.text.lower() for w in words)][:limit]


def test_earlier_links_name_only_what_is_missing() -> None:
    resolver = EntityResolver()
    resolver.observe("I had lunch with Priya.")
    store = FakeNaming(
        [
            NamingRow("m1", "Priya moved to Leeds.", None, "user", ()),
            NamingRow("m2", "Priya moved to Leeds.", None, "user", ("priya",)),  # already linked
            NamingRow("m3", "Lunch with Priya today.", None, "user", ("priya",)),
            NamingRow("m4", "Priya and Anna left.", None, "user", ()),
        ]
    )
    found = earlier_links(store, "u", resolver, {"priya": "Priya"}, exclude=["m4"])
    assert found == {"m1": ["priya"]}
    assert store.asked == [("u", ("priya",))]
