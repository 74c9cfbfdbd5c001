"""The "you already know this" hints on save: how well they find the memory a new one updates,
and what they cost a save.

`python benchmarks/similar_hints.py pairs [--model all-MiniLM-L6-v2]` — a precision/recall
table on built pairs (a memory kept, a new one saved next to it among 60 unrelated memories):
exact duplicates, true paraphrases and updates of the same fact should be hinted; memories
that only share a name or a topic word, and unrelated ones, should not. Shown for several
thresholds of the score relative to the new memory's own (domain/similar.py uses 0.30), then
with hints by meaning too at several thresholds of the model's semantic relevance
(calibration.json's `similar`); on the pairs, on held-out pairs written after the choice by words,
and on paraphrased duplicates written before the choice by meaning.

`python benchmarks/similar_hints.py rate [--engines sqlite,pymysql] [--requests 600]
[--embeddings local]` — saves per second with MEMORY_BANK_SIMILAR_HINTS on and off: two servers
on this tree side by side, one client alternating varied saves between them (as write_ab.py
does for two commits); --embeddings sets both servers' MEMORY_BANK_EMBEDDINGS.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import tempfile
from pathlib import Path

import httpx

from common import alternating_saves, create_database, make_key, start_server, with_driver

# (kept, new, should it be hinted?)
PAIRS: list[tuple[str, str, bool]] = [
    # Exact duplicates, up to case and spacing.
    ("We signed Acme in March.", "we signed  Acme in march.", True),
    (
        "Alice prefers window seats on long flights.",
        "Alice prefers window seats on long flights",
        True,
    ),
    (
        "The staging database is backed up nightly at 02:00.",
        "The staging database is backed up nightly at 02:00.",
        True,
    ),
    (
        "Deploys are frozen during the last week of December.",
        "Deploys are frozen during the last week of December!",
        True,
    ),
    # True paraphrases: the same fact in other words.
    (
        "Alice prefers window seats on long flights.",
        "On long flights Alice likes a window seat.",
        True,
    ),
    ("The team lunch is on Fridays at noon.", "Team lunch happens every Friday at noon.", True),
    ("Bob is allergic to peanuts.", "Bob has a peanut allergy.", True),
    (
        "Our on-call rotation changes every Monday morning.",
        "The on-call rotation switches on Monday mornings.",
        True,
    ),
    (
        "The Q3 budget review is with finance on October 4.",
        "Finance holds the Q3 budget review on October 4.",
        True,
    ),
    (
        "Carol's favourite coffee is a flat white with oat milk.",
        "Carol likes her flat white made with oat milk.",
        True,
    ),
    # Updates of the same fact (what an agent should PATCH instead).
    ("We signed Acme in March.", "We re-signed Acme in January.", True),
    ("The team lunch is on Fridays at noon.", "The team lunch moved to Thursdays at noon.", True),
    ("Bob's manager is Dana.", "Bob's manager is now Erin.", True),
    (
        "The office wifi password rotates monthly.",
        "The office wifi password now rotates weekly.",
        True,
    ),
    ("Release 4.2 ships on June 12.", "Release 4.2 slipped to June 19.", True),
    ("Alice works from the Berlin office.", "Alice moved to the Lisbon office.", True),
    (
        "Our staging cluster runs Postgres 14.",
        "The staging cluster was upgraded to Postgres 16.",
        True,
    ),
    ("The standup is at 9:30 every weekday.", "Standup moved to 10:00 every weekday.", True),
    # Sharing only a name: a different fact about the same entity.
    ("We signed Acme in March.", "Acme's support line is slow in the mornings.", False),
    (
        "Alice prefers window seats on long flights.",
        "Alice's daughter starts school in September.",
        False,
    ),
    ("Bob is allergic to peanuts.", "Bob leads the payments migration.", False),
    (
        "Carol's favourite coffee is a flat white with oat milk.",
        "Carol owns the quarterly security audit.",
        False,
    ),
    ("Release 4.2 ships on June 12.", "Release 4.3 drops support for Python 3.9.", False),
    (
        "The Q3 budget review is with finance on October 4.",
        "Finance wants receipts within 30 days.",
        False,
    ),
    ("Our staging cluster runs Postgres 14.", "Staging has its own Slack alert channel.", False),
    (
        "Dana runs the design critique on Wednesdays.",
        "Dana prefers email over chat for approvals.",
        False,
    ),
    ("The Berlin office closes at 8 pm.", "The Berlin team uses Linear for tickets.", False),
    ("Globex pays its invoices in 60 days.", "Globex wants a demo of the mobile app.", False),
    # Unrelated.
    ("We signed Acme in March.", "The printer on floor 3 needs toner.", False),
    ("Bob is allergic to peanuts.", "Deploys need two approvals.", False),
    ("The team lunch is on Fridays at noon.", "Use UTC in every log line.", False),
    ("Alice prefers window seats on long flights.", "The VPN certificate expires in May.", False),
    ("Release 4.2 ships on June 12.", "Carol's cat is called Miso.", False),
    (
        "Our on-call rotation changes every Monday morning.",
        "The parking garage closes at midnight.",
        False,
    ),
]

# Written after the threshold was chosen on PAIRS, to check it on pairs it was not tuned on.
HOLDOUT: list[tuple[str, str, bool]] = [
    ("Erin takes her tea with lemon.", "erin takes her tea with lemon", True),
    (
        "The invoice run happens on the 1st of each month.",
        "Invoices go out on the first of every month.",
        True,
    ),
    (
        "Frank is the contact for the Initech account.",
        "The Initech account's contact is Frank.",
        True,
    ),
    ("Backups are kept for 30 days.", "Backups are now kept for 90 days.", True),
    ("The demo for Globex is on Tuesday.", "The Globex demo moved to Wednesday.", True),
    (
        "Our API rate limit is 600 requests a minute.",
        "The API rate limit was raised to 1200 requests a minute.",
        True,
    ),
    ("Grace prefers meetings after 10 am.", "Grace mentors two new engineers.", False),
    ("The Initech renewal is due in August.", "Initech asked for SSO support.", False),
    ("Backups are kept for 30 days.", "The kitchen is cleaned on Fridays.", False),
    ("The demo for Globex is on Tuesday.", "Globex's CFO is called Hank.", False),
    ("Frank is the contact for the Initech account.", "Frank is on holiday in July.", False),
    ("Our API rate limit is 600 requests a minute.", "Our API docs live on the wiki.", False),
]

# Paraphrased duplicates (the same fact about the user in other words, mostly no shared word)
# and same-subject memories that state another fact; written before the threshold by meaning
# was measured.
PARAPHRASED: list[tuple[str, str, bool]] = [
    ("I'm vegetarian.", "The user doesn't eat meat.", True),
    ("My daughter's name is Mia.", "The user has a daughter called Mia.", True),
    (
        "I work as a nurse at the city hospital.",
        "The user's job is nursing at the municipal hospital.",
        True,
    ),
    ("I'm allergic to cats.", "Cats give the user an allergic reaction.", True),
    ("We moved to Denver last spring.", "The user relocated to Denver in spring last year.", True),
    (
        "I prefer tea over coffee in the morning.",
        "In the mornings the user would rather drink tea than coffee.",
        True,
    ),
    ("My car is a blue Honda Civic.", "The user drives a blue Civic made by Honda.", True),
    ("I run a marathon every October.", "Each October the user takes part in a 42 km race.", True),
    ("I'm vegetarian.", "The user's sister is vegan.", False),
    ("My daughter's name is Mia.", "Mia starts piano lessons in May.", False),
    ("I work as a nurse at the city hospital.", "The city hospital is building a new wing.", False),
    ("I'm allergic to cats.", "The neighbour's cat is called Felix.", False),
    ("We moved to Denver last spring.", "Denver had a snowy winter this year.", False),
    ("I prefer tea over coffee in the morning.", "The office coffee machine is broken.", False),
    ("My car is a blue Honda Civic.", "The user's car needs new tyres in March.", False),
    ("I run a marathon every October.", "The user's knee hurt after Sunday's run.", False),
]

_TEAMS = ["platform", "mobile", "data", "growth", "infra", "support", "billing", "search"]
_THINGS = ["dashboard", "runbook", "roadmap", "dataset", "pipeline", "contract", "playbook"]
_WHEN = ["monthly", "weekly", "each sprint", "every quarter", "after each release"]


def fillers(n: int, seed: int = 7) -> list[str]:
    """Unrelated memories, so each pair is ranked inside a realistic index."""
    pick = random.Random(seed)
    return [
        f"The {pick.choice(_TEAMS)} team reviews its {pick.choice(_THINGS)} {pick.choice(_WHEN)} "
        f"(note {i})."
        for i in range(n)
    ]


def relative_scores(
    database_url: str, pairs: list[tuple[str, str, bool]]
) -> list[tuple[bool, float]]:
    """For each pair: whether it should be hinted, and the kept memory's score relative to the
    new one's own (0 when it is not among the candidates)."""
    from memory_bank.auth import Principal
    from memory_bank.domain import bodies, memories, similar
    from memory_bank.store.database import Database
    from memory_bank.store.engine import make_engine
    from memory_bank.store.migrate import migrate

    engine = make_engine(database_url)
    migrate(engine)
    db = Database(engine)
    found = []
    try:
        for n, (kept, new, wanted) in enumerate(pairs):
            who = Principal(f"pair-{n}", None, ("mcp:read", "mcp:write"), "bench", "key_x")
            for text in fillers(60, seed=n):
                memories.save(db, who, bodies.new_memory({"content": text}), hints=False)
            old = memories.save(db, who, bodies.new_memory({"content": kept}), hints=False).memory
            made = memories.save(db, who, bodies.new_memory({"content": new}), hints=False).memory
            with db.reading() as conn:
                ranked = dict(similar.ranked(conn, who.user_id, new, similar.CANDIDATES))
            top = ranked.get(made["id"]) or max(ranked.values(), default=0.0)
            score = ranked.get(old["id"], 0.0) / top if top else 0.0
            found.append((wanted, score))
    finally:
        db.dispose()
    return found


def meaning_scores(model: str, pairs: list[tuple[str, str, bool]]) -> list[float]:
    """For each pair: the kept memory's relevance by meaning to the new one, as a save's hint
    reads it (the model's semantic curve over the cosine of their vectors)."""
    from memory_bank.models.local_model import load
    from memory_bank.search import calibration

    provider = load(model)
    curve = calibration.for_model(f"local:{model}-int8").semantic
    out = []
    for kept, new, _ in pairs:
        a, b = provider.embed([kept, new])
        out.append(curve(float(a @ b)))
    return out


def pairs_table(model: str) -> None:
    """Print precision and recall per threshold, on the pairs, the held-out pairs and the
    paraphrased duplicates: by words alone, then by words or meaning."""
    sets = (("pairs", PAIRS), ("held-out pairs", HOLDOUT), ("paraphrased duplicates", PARAPHRASED))
    for label, pairs in sets:
        url = f"sqlite:///{Path(tempfile.mkdtemp()) / 'pairs.db'}"
        scores = relative_scores(url, pairs)
        meaning = meaning_scores(model, pairs)
        positives = sum(1 for wanted, _ in scores if wanted)
        print(f"{len(scores)} {label}: {positives} should be hinted, {len(scores) - positives} not")
        print("| by words at | by meaning at | hinted | precision | recall |")
        print("|---|---|---|---|---|")
        rows = [(t, None) for t in (0.2, 0.3, 0.4, 0.5, 0.6)]
        rows += [(0.3, t) for t in (0.85, 0.89, 0.9, 0.95, 0.96, 0.98, 0.99)]
        for words, by_meaning in rows:
            hinted = [
                wanted
                for (wanted, score), sense in zip(scores, meaning, strict=True)
                if score >= words or (by_meaning is not None and sense >= by_meaning)
            ]
            right = sum(hinted)
            precision = right / len(hinted) if hinted else 1.0
            print(
                f"| {words:.2f} | {'-' if by_meaning is None else by_meaning} | {len(hinted)} | "
                f"{precision:.2f} | {right / positives:.2f} |"
            )
        for (kept, new, wanted), (_, score), sense in zip(pairs, scores, meaning, strict=True):
            print(f"  {score:.2f} {sense:.4f} {'+' if wanted else '-'} {kept!r} -> {new!r}")


def _database(engine: str, name: str) -> str:
    """A fresh database for one side."""
    if engine == "sqlite":
        return f"sqlite:///{Path(tempfile.mkdtemp()) / f'{name}.db'}"
    return with_driver(create_database(f"mb_bench_hints_{name}", drop=True), engine)


def rate(engine: str, requests: int, embeddings: str | None = None) -> dict[str, list[float]]:
    """Seconds per save with hints on and off, alternating request by request (embeddings:
    MEMORY_BANK_EMBEDDINGS of both servers, None: as the environment says; with a model, hints
    come by meaning too)."""
    clients: dict[str, httpx.Client] = {}
    texts = fillers(requests + 100, seed=11)
    with contextlib.ExitStack() as stack:
        for name, on in (("on", "true"), ("off", "false")):
            url = _database(engine, name)
            key = make_key(url, "hints")
            server = start_server(
                url,
                env={
                    "MEMORY_BANK_SIMILAR_HINTS": on,
                    "MEMORY_BANK_VALIDATE_RESPONSES": "false",
                    **({"MEMORY_BANK_EMBEDDINGS": embeddings} if embeddings else {}),
                },
            )
            stack.callback(server.stop)
            client = httpx.Client(
                base_url=server.base_url, headers={"Authorization": f"Bearer {key}"}
            )
            stack.enter_context(client)
            clients[name] = client
        for client in clients.values():
            for text in texts[:100]:
                client.post("/v1/memory", json={"content": text}).raise_for_status()
        bodies = [{"content": text, "tags": ["bench"]} for text in texts[100 : 100 + requests]]
        return alternating_saves(clients, bodies)


def main() -> None:
    """Run the pairs table or the rate comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["pairs", "rate"])
    parser.add_argument("--engines", default="sqlite,pymysql")
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--model", default="all-mpnet-base-v2", help="local model, for meaning")
    parser.add_argument("--embeddings", help="rate: MEMORY_BANK_EMBEDDINGS of both servers")
    args = parser.parse_args()
    if args.what == "pairs":
        pairs_table(args.model)
        return
    print(
        f"{args.requests} saves per side, 1 worker, 100 memories kept before, "
        f"embeddings {args.embeddings or 'as set'}"
    )
    for engine in args.engines.split(","):
        times = rate(engine, args.requests, args.embeddings)
        cells = []
        for name in times:
            mean, median = statistics.mean(times[name]), statistics.median(times[name])
            cells.append(f"hints {name} {1 / mean:4.0f}/s (median {median * 1e3:.2f} ms)")
        ratio = statistics.mean(times["off"]) / statistics.mean(times["on"])
        print(f"  {engine:8} " + "  ".join(cells) + f"  on/off {ratio:.2f}x")


if __name__ == "__main__":
    main()
