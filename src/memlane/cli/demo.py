"""The demo: a short multi-session conversation written for memlane, and the queries run against it."""

from __future__ import annotations

from typing import Final

# Three sessions between Maya and her assistant, a few weeks apart. Written for this project.
DEMO_SESSIONS: Final[tuple[tuple[str, tuple[tuple[str, str], ...]], ...]] = (
    (
        "2025-03-02T09:15:00+00:00",
        (
            ("Maya", "Morning! I finally adopted the rescue dog I told my sister about. Her name is Pepper."),
            ("assistant", "Congratulations! What kind of dog is Pepper?"),
            ("Maya", "A three-year-old border collie mix. She has way more energy than me."),
            ("assistant", "Border collies love having a job. Are you planning any training?"),
            ("Maya", "Yes, agility classes on Thursday evenings at the Riverside club, starting next week."),
            ("Maya", "Also, remind me that I'm allergic to penicillin if we ever talk about doctors."),
            ("assistant", "Noted: penicillin allergy. Anything else going on?"),
            ("Maya", "Work is hectic. We're migrating the billing service from Python 3.9 to 3.12 this quarter."),
        ),
    ),
    (
        "2025-03-20T18:40:00+00:00",
        (
            (
                "Maya",
                "The migration broke our nightly job: it fails with ERR_CONN_RESET_42 when it calls the ledger API.",
            ),
            ("assistant", "Does it fail on every run, or only under load?"),
            ("Maya", "Only when more than 50 invoices are batched. The retry logic lives in retry_policy.py."),
            ("assistant", "Then the batch size is the first thing to look at. How is Pepper doing?"),
            (
                "Maya",
                "Pepper aced her first agility class! The trainer, Luis, says she is a natural at the weave poles.",
            ),
            ("Maya", "I'm thinking of a trip to Lisbon in June with my partner Sam, maybe five days."),
            ("assistant", "Lisbon in June is lovely. Will Pepper come along?"),
            ("Maya", "No, my sister Ines will look after her. Ines lives in Porto, so maybe we visit her too."),
        ),
    ),
    (
        "2025-04-11T12:05:00+00:00",
        (
            ("Maya", "Big news: I got promoted to engineering manager of the payments team."),
            ("assistant", "That's wonderful! How do you feel about it?"),
            ("Maya", "Excited and nervous. I'll have six reports, and I've never managed people before."),
            ("Maya", "I switched from coffee to green tea, by the way. Coffee was wrecking my sleep."),
            ("assistant", "Good call. Is the Lisbon trip still on?"),
            ("Maya", "Yes! Flights are booked for June 14. Sam wants to try every pastel de nata in town."),
            ("Maya", "And the ERR_CONN_RESET_42 bug is fixed: we cut batches to 25 invoices."),
        ),
    ),
)

DEMO_QUERIES: Final = (
    "What is the name of my dog?",
    "Which medicine am I allergic to?",
    "ERR_CONN_RESET_42",
    "When am I travelling to Portugal?",
    "What do I drink now instead of coffee?",
    "Who looks after the dog while I'm away?",
)
