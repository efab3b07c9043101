"""Rule-based entity mentions and the per-user alias table."""

from __future__ import annotations

import pytest

from memlane.enrich.aliases import EntityResolver, Relation, relation_of
from memlane.enrich.entities import AliasRow, EntityMention, canonical, extract_entities


def kinds(text: str, speaker: str | None = None) -> dict[str, str]:
    return {m.text: m.kind for m in extract_entities(text, speaker)}


def test_offsets_point_into_the_text() -> None:
    text = "My sister Anna moved to New York and works at Goldman Sachs."
    for mention in extract_entities(text):
        assert text[mention.start : mention.end] == mention.text


def test_people_places_organisations() -> None:
    found = kinds("My sister Anna just moved to New York and works at Goldman Sachs.")
    assert found["Anna"] == "person"
    assert found["New York"] == "place"
    assert found["Goldman Sachs"] == "organisation"
    assert found["My sister"] == "person"


def test_suffixes_and_honorifics() -> None:
    found = kinds("Went hiking with Dr. Smith at Yosemite National Park, then visited the University of Michigan.")
    assert found["Dr. Smith"] == "person"
    assert found["Yosemite National Park"] == "place"
    assert found["University of Michigan"] == "organisation"
    assert "Went" not in found


def test_products_quantities_dates() -> None:
    found = kinds("I bought a new iPhone for $999 last Saturday and ran 5 km.")
    assert found["iPhone"] == "product"
    assert found["$999"] == "quantity"
    assert found["5 km"] == "quantity"
    assert found["last Saturday"] == "date"


def test_sentence_openers_and_fillers_are_not_names() -> None:
    assert kinds("Thanks! Painting is my thing. Honestly, I love it.") == {}
    assert kinds("Hey Mel! Good to see you!") == {"Mel": "person"}


def test_sentence_opening_name_is_kept_when_it_is_a_name() -> None:
    assert kinds("Anna, my sister, is a nurse.")["Anna"] == "person"
    assert "Caroline" in kinds("Caroline's painting won a prize.")
    assert "Pepper" in {m.text for m in extract_entities("Pepper loves the park.", known={"pepper"})}


def test_notes_about_people_name_them_at_the_start() -> None:
    """Notes kept about others open with the person ("Mei's grandmother died ...", "Ahmed and Salma spent ..."):
    the owner of a relation and a word joined to a name are names (before, Mei and Ahmed were never entities).
    """
    text = "Mei's grandmother died in Taipei."
    mentions = extract_entities(text)
    assert [(m.text, m.kind) for m in mentions][:2] == [("Mei's grandmother", "person"), ("Mei", "person")]
    assert all(text[m.start : m.end] == m.text for m in mentions)
    assert kinds("Ahmed and Salma spent the holidays in Cairo.") == {
        "Ahmed": "person",
        "Salma": "person",
        "Cairo": "place",
    }
    # an opening word alone is still no name (it could be "Nature", "Dance", "Yoga" ...) until the user's notes show
    # it is one: then it is known, and found at the start of a sentence too
    assert "Mei" not in kinds("Mei visited her parents.")
    resolver = EntityResolver()
    resolver.observe("Mei's grandmother died in Taipei.")
    assert "Mei" in [m.text for m in resolver.observe("Mei visited her parents in Richmond.")]
    # what was not a name stays none
    assert "Thanks" not in kinds("Thanks and Merry Christmas!") and "My" not in kinds("My sister's dog barked.")


def test_a_contracted_verb_is_not_part_of_a_name() -> None:
    # "James’ll" was the entity "james ll", and the first name "james" became its alias: every question naming
    # James then looked for that entity instead of James's own turns
    assert kinds("I think James’ll love it.") == {"James": "person"}
    assert kinds("Tell her Maya'd come and Tom've seen it.") == {"Maya": "person", "Tom": "person"}
    assert canonical("James’ll") == canonical("James'd") == canonical("james") == "james"
    assert canonical("O'Neill") == "o neill"  # an apostrophe inside a name stays a word break
    resolver = EntityResolver()
    resolver.observe("I think James’ll love it.")
    assert resolver.resolve("James") == "james"
    assert "james ll" not in {row.alias for row in resolver.to_rows()}


def test_an_opening_word_before_a_known_name_is_not_part_of_it() -> None:
    # LoCoMo's "Woohoo Melanie!", "Go Jon!" and "Anytime Nate" were the entities "woohoo melanie", "go jon" and
    # "anytime nate", and "woohoo", "go", "anytime" aliases of them
    known = {"melanie", "jon"}
    assert [m.text for m in extract_entities("Woohoo Melanie! I passed.", known=known)] == ["Melanie"]
    assert [m.text for m in extract_entities("Go Jon! You can do it.", known=known)] == ["Jon"]
    # a full name that opens a sentence stays whole, and so does a known name whose last word is known too
    assert [m.text for m in extract_entities("Melanie Smith came by.", known=known)] == ["Melanie Smith"]
    assert [m.text for m in extract_entities("New York is big.", known={"york", "new york"})] == ["New York"]


def test_a_first_name_alias_is_never_a_function_word() -> None:
    resolver = EntityResolver()
    for text in (
        "I love The Witcher.",
        "Of Mice and Men is sad.",
        "Last Fri was fun.",
        "Our group, 'Connected LGBTQ Activists', meets weekly.",
        "Then Anna Smith called.",
    ):
        resolver.observe(text, "John")
    aliases = {row.alias: row.target for row in resolver.to_rows() if row.alias != row.target}
    assert "the" not in aliases and "of" not in aliases and "last" not in aliases and "lgbtq" not in aliases
    assert aliases["anna"] == "anna smith"


def test_a_quoted_title_is_no_person_and_gives_no_first_name() -> None:
    # LoCoMo and MemoryBank: "Little Women", "The Lean Startup", "Home Alone" were people, so "Home" or "Little"
    # opening any later sentence named them
    def kinds(text: str) -> dict[str, str]:
        return {m.text: m.kind for m in extract_entities(text)}

    assert kinds('I just watched "Little Women" again.') == {"Little Women": "product"}
    assert kinds("I'm reading “The Lean Startup”.") == {"Lean Startup": "product"}
    assert kinds('We saw "Home Alone."') == {"Home Alone": "product"}
    # only when the run is the whole quoted string, and not after a kin word: a nickname is still a person
    assert kinds('Yeah, "Harry Potter and the Goblet" is great.')["Harry Potter"] == "person"
    assert kinds('My friend "Jake Miller" called.')["Jake Miller"] == "person"
    resolver = EntityResolver()
    resolver.observe('We love "Home Alone" at Christmas.', "Tim")
    resolver.observe("Then Anna Smith called.", "Tim")
    aliases = {row.alias: row.target for row in resolver.to_rows() if row.alias != row.target}
    assert aliases == {"anna": "anna smith"}


def test_two_capitalised_words_after_an_article_are_no_person() -> None:
    # "The Minnesota Wolves", "a Financial Analyst", "the Pacific Northwest": no one is called "the X Y"
    assert extract_entities("The Minnesota Wolves won again.")[0].kind == "other"
    assert extract_entities("I started a new job as a Financial Analyst.")[0].kind == "other"
    assert extract_entities("We hiked the Pacific Northwest.")[0].kind == "other"
    assert extract_entities("I met Matt Patterson there.")[0].kind == "person"
    assert extract_entities("I went with the Smiths and Anna Lee.")[-1].kind == "person"


def test_a_day_or_an_adverb_before_my_kin_is_not_their_name() -> None:
    # LoCoMo: "Thankfully, my son's ok" made "thankfully" Melanie's son, "Last Tuesday, my gf, ..." a girlfriend
    resolver = EntityResolver()
    resolver.observe("Thankfully, my son's ok and home.", "Melanie")
    resolver.observe("Last Tuesday, my sister, Anna and I went out.", "Andrew")
    aliases = {row.alias: row.target for row in resolver.to_rows() if row.alias != row.target}
    assert "melanie son" not in aliases
    assert aliases.get("andrew sister") != "last tuesday"
    resolver.observe("Anna, my sister, is a nurse.", "Maya")
    assert resolver.resolve("my sister", "Maya") == "anna"


def test_a_negated_verb_is_never_part_of_a_name() -> None:
    # a photo caption run into the next turn: "... a desk with a lamp Don't worry." made "don t" a person
    assert kinds("a desk with a lamp Don't worry too much.") == {}
    assert kinds("I told Mel Can't wait!") == {"Mel": "person"}
    assert kinds("He said Won’t happen again.") == {}


def test_speaker_is_a_person_mention() -> None:
    mentions = extract_entities("I adopted a dog last week.", "Maya")
    assert EntityMention("Maya", "person", -1, -1) in mentions
    # named in the text: no extra mention
    assert [m.text for m in extract_entities("Maya here, hi!", "Maya")].count("Maya") == 1


@pytest.mark.parametrize(
    "text",
    [
        "Ich war gestern mit Anna in München. 😀",
        "我昨天去了北京。",
        "ذهبت إلى القاهرة أمس",
        "🎉🎂😀",
        "",
        "   ",
        "$$$ ??? ...",
    ],
)
def test_non_english_and_emoji_do_not_crash(text: str) -> None:
    mentions = extract_entities(text, "Ana")
    assert all(m.kind in {"person", "place", "organisation", "product", "date", "quantity", "other"} for m in mentions)


def test_german_capitalised_names_are_found() -> None:
    found = kinds("Ich war gestern mit Anna in München.")
    assert found.get("Anna") == "person"
    assert found.get("München") == "place"


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("José's", "jose"),
        ("  Anna   SMITH ", "anna smith"),
        ("Caroline’s", "caroline"),
        ("Zoë", "zoe"),
        ("北京", "北京"),
    ],
)
def test_canonical(name: str, key: str) -> None:
    assert canonical(name) == key


def test_resolver_learns_kinship_aliases_per_speaker() -> None:
    resolver = EntityResolver()
    resolver.observe("My sister Anna just moved to Berlin.", "Maya")
    resolver.observe("Anna, my sister, is a nurse.", "Tom")
    resolver.observe("I adopted a dog named Pepper.", "Maya")
    assert resolver.resolve("my sister", speaker="Maya") == "anna"
    assert resolver.resolve("Maya's sister") == "anna"
    assert resolver.resolve("Tom's sister") == "anna"
    assert resolver.resolve("my dog", speaker="Maya") == "pepper"
    assert resolver.resolve("my dog", speaker="Tom") == "tom dog"  # Tom never named a dog: kept as his, unnamed


def test_first_name_resolves_to_the_full_name_unless_ambiguous() -> None:
    resolver = EntityResolver()
    resolver.observe("My sister Anna called.", "Maya")
    resolver.observe("Anna Schmidt sent me flowers.", "Maya")
    assert resolver.resolve("Anna") == "anna schmidt"
    assert resolver.resolve("my sister", speaker="Maya") == "anna schmidt"
    resolver.observe("I met Anna Lee at work.", "Maya")
    assert resolver.resolve("Anna") == "anna"  # two full names share it: no guess
    assert resolver.resolve("Anna Lee") == "anna lee"


def test_a_first_name_found_ambiguous_in_a_later_write_leaves_the_stored_table() -> None:
    # each write rebuilds the resolver from the stored rows: the removal must be written, and the ambiguity
    # must survive the rebuild, or the first full name keeps "Anna" for ever
    first = EntityResolver()
    first.observe("I had lunch with Anna Lee.", "Maya")
    stored = first.changes([])
    assert ("anna", "anna lee") in {(r.alias, r.target) for r in stored}
    second = EntityResolver.from_rows(stored)
    second.observe("I met Anna Smith at work.", "Maya")
    change = second.changes(stored)
    assert AliasRow.removal("anna") in change
    table = [r for r in stored if r.alias != "anna"] + [r for r in change if not r.removes]
    third = EntityResolver.from_rows(table)
    assert third.resolve("Anna") == "anna"
    third.observe("Anna Lee sent a card.", "Maya")  # naming one of them again does not choose her
    assert third.resolve("Anna") == "anna" and not any(r.alias == "anna" for r in third.changes(table))
    # a removal among the rows a resolver is built from (the stored table, then a write's changes) applies
    rebuilt = EntityResolver.from_rows([*stored, AliasRow.removal("anna")]).to_rows()
    assert "anna" not in {r.alias for r in rebuilt} and ("anna lee", "anna lee") in {
        (r.alias, r.target) for r in rebuilt
    }


def test_short_form_of_a_unique_first_name() -> None:
    resolver = EntityResolver()
    resolver.observe("Hey Mel!", "Caroline")
    resolver.observe("Thanks, Melanie!", "Caroline")
    assert resolver.resolve("Mel") == "melanie"
    assert resolver.resolve("Me") == "me"  # too short to guess


def test_short_forms_follow_names_learnt_between_look_ups() -> None:
    # the sorted person names are kept in step with each new name, not rebuilt: every answer must be the one a
    # resolver built from scratch over the same table gives
    resolver = EntityResolver()
    steps = [
        ("Hey Mel!", "Mel", "mel"),
        ("Thanks, Melanie!", "Mel", "melanie"),
        ("Melvin Jones said hi.", "Mel", "mel"),  # two people it could be: no guess
        ("I saw Dora at the market.", "Dor", "dora"),
        ("Dora Diaz brought cake.", "Dor", "dora diaz"),  # the first name seen alone was her all along
        ("Doris Day sang.", "Dor", "dor"),
    ]
    for text, short, expected in steps:
        resolver.observe(text, "Caroline")
        assert resolver.resolve(short) == expected, text
        assert EntityResolver.from_rows(resolver.to_rows()).resolve(short) == expected, text


def test_rows_round_trip() -> None:
    resolver = EntityResolver()
    resolver.observe("My sister Anna moved to New York.", "Maya")
    resolver.observe("Anna Schmidt works at Goldman Sachs.", "Maya")
    rows = resolver.to_rows()
    assert all(isinstance(row, AliasRow) for row in rows)
    assert len({row.alias for row in rows}) == len(rows)  # one row per alias: a primary key
    assert AliasRow("maya sister", "anna schmidt", "person", "Anna Schmidt") in rows
    copy = EntityResolver.from_rows(rows)
    assert copy.to_rows() == rows
    assert copy.resolve("my sister", speaker="Maya") == "anna schmidt"
    assert copy.names == resolver.names


def test_resolve_all_skips_dates_and_quantities() -> None:
    resolver = EntityResolver()
    mentions = resolver.observe("My sister Anna ran 5 km in New York yesterday.", "Maya")
    assert resolver.resolve_all(mentions, "Maya") == ["anna", "new york", "maya"]


# -- relations read from the speaker's side ------------------------------------------------------------------------
def test_relation_of_reads_owner_and_kin() -> None:
    assert relation_of("my little sister") == Relation("my", "sister")
    assert relation_of("The user's boss") == Relation("the user", "boss")
    assert relation_of("your best friend") == Relation("your", "friend")  # as the alias table keys it
    assert relation_of("Anna") is None and relation_of("Caroline's sister") is None


def test_the_assistants_your_is_the_users_and_its_my_is_its_own() -> None:
    resolver = EntityResolver()
    resolver.observe("My sister Anna is a nurse.", "Maya", "user")
    assert resolver.resolve("your sister", None, "assistant") == "anna"  # Maya is the only one with a sister
    assert resolver.resolve("my sister", None, "assistant") == "my sister"  # the assistant's own: unresolved
    assert resolver.resolve("my sister", None, "user") == "anna"  # an unnamed user's query: the user's sister
    resolver.observe("Your brother Tom called.", None, "assistant")  # the assistant names the user's brother
    assert resolver.resolve("my brother", None, "user") == "tom"
    resolver.observe("My brother Sam is visiting.", None, "assistant")  # its own brother teaches nothing
    assert resolver.resolve("my brother", None, "user") == "tom"


def test_a_relation_two_people_have_is_not_guessed_for_the_user() -> None:
    resolver = EntityResolver()
    resolver.observe("My sister Anna is a nurse.", "Caroline", "user")
    resolver.observe("My sister Beth is a pilot.", "Melanie", "user")
    assert resolver.resolve("my sister", None, "user") == "my sister"
    assert resolver.resolve("your sister", "Caroline", "user") == "beth"  # Caroline to Melanie
    assert resolver.resolve("her sister", about="Melanie") == "beth"


def test_unresolved_relations_are_kept_under_the_users_key_whoever_says_them() -> None:
    resolver = EntityResolver()
    said = resolver.resolve_all(resolver.observe("My boss is strict.", "Maya", "user"), "Maya", "user")
    heard = resolver.resolve_all(resolver.observe("Is your boss fair?", None, "assistant"), None, "assistant")
    assert "my boss" in said and "maya boss" in said and heard == ["my boss"]
    kids = resolver.resolve_all(resolver.observe("I saw Melanie with her kids.", "Caroline", "user"), "Caroline")
    assert "melanie kids" in kids


# Documents: manuals and help pages are laid out with titles, blank lines, tabs and indents that chat turns lack.


def test_a_name_does_not_cross_a_blank_line_or_a_tab() -> None:
    found = kinds("Vim FAQ\n\nYou can prefix the lines with the line number.")
    assert "Vim FAQ" in found
    assert not any("\n" in name or name.startswith("You") for name in found)
    found = kinds("balloon_gettext()\t\tString\tcurrent text\nbufname()\tName\tNormal buffer")
    assert not any("\t" in name for name in found)
    assert "Name Normal" not in found


def test_a_name_wrapped_over_one_line_is_still_one_name() -> None:
    found = {canonical(m.text): m.kind for m in extract_entities("Yesterday I met Bram\nMoolenaar at the conference.")}
    assert found["bram moolenaar"] == "person"


def test_an_indented_line_opens_a_sentence_however_deep_the_indent() -> None:
    text = "Options:\n\t\t\t\tNote the value of 'foldmethod'.\n\t\t\t\tFor example, set it with\tNote that"
    found = kinds(text)
    assert "Note" not in found
    assert "For" not in found


def test_function_words_are_never_names_nor_the_edge_of_one() -> None:
    found = kinds("Besides Italy, I was also in Turkey and Mexico.")
    assert found.get("Italy") == "place"
    assert "Besides Italy" not in found
    found = kinds("Using Git\n\nChapter 3 covers this. On Unix, read it first, then Vim\nTo learn more.")
    assert "Using Git" not in found and "Git" in found
    assert "On Unix" not in found and "Unix" in found
    assert "Vim To" not in found and "Vim\nTo" not in found
    for word in ("In", "For", "With", "However", "Otherwise", "Using"):
        assert word not in kinds(f"See the manual. {word} this case, Vim and\t{word} the other use {word} again.")
    # ... but a name may hold one inside it
    assert kinds("I've always liked Under Armour and Nike.")["Under Armour"] == "person"
