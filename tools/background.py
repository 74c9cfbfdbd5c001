"""Write the search background (search/background.py): background.json, the fixed reference
sentences a query is measured against, composed here from hand-written sentences and templates,
in English mostly, with some German, French and Spanish; and with --vectors, each calibrated
model's vectors of them (float16, background-<model>.npy), made by the server's own int8 model.

None of them comes from the evaluation data (benchmarks/data/, the shared datasets): they are
the kind of thing an agent saves about anyone, so that a query's closeness to them says how
generic the query is, not whether this owner saved its answer.

    PYTHONPATH=src python tools/background.py [--vectors]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "src" / "memory_bank" / "search" / "background.json"
SEED = 41

WRITTEN = [
    # preferences
    "I prefer tea over coffee in the morning.",
    "I like my steak medium rare.",
    "I can't stand cilantro; it tastes like soap to me.",
    "My favourite band is still the one I saw live in 2009.",
    "I listen to podcasts about history while I cook.",
    "I sleep better with the window open, even in winter.",
    "I would rather take the train than fly for anything under six hours.",
    "I prefer paper books to e-readers.",
    "I like quiet restaurants where you can talk.",
    "Dark chocolate, never milk chocolate.",
    "I don't like surprise parties.",
    "I prefer aisle seats on planes.",
    "I'm a morning person; I do my best work before ten.",
    "I hate being on the phone; send me a message instead.",
    "I like hiking more than beach holidays.",
    "My comfort food is my grandmother's lentil soup.",
    "I try to avoid sugar during the week.",
    "Jazz on Sunday mornings is a ritual for me.",
    "I find open-plan offices exhausting.",
    "I want answers short and to the point, no long introductions.",
    "Please write to me in a casual tone.",
    "Use metric units when you talk to me.",
    "Always show prices in euros.",
    "Reply in German when I write in German.",
    "Don't suggest meat dishes when I ask for recipes.",
    "I like recommendations for science fiction with strong characters.",
    # people
    "My sister lives in Toronto with her two kids.",
    "My brother works as a nurse in a hospital downtown.",
    "My best friend from university is getting married next spring.",
    "My father retired last year and took up woodworking.",
    "My mother calls every Sunday evening.",
    "My partner is allergic to cats.",
    "Our neighbour waters the plants when we are away.",
    "My manager prefers updates in writing rather than in meetings.",
    "My grandfather turned ninety this summer.",
    "My cousin just started a bakery in the old town.",
    "The kids' babysitter is available on Tuesdays and Thursdays.",
    "My son is learning the violin.",
    "My daughter wants to study marine biology.",
    "My wife and I met at a concert.",
    "My husband does the cooking on weekends.",
    "My flatmate moves out at the end of the month.",
    "An old colleague of mine now runs a design studio.",
    "My mentor advised me to specialise in data engineering.",
    "My aunt is visiting us over the holidays.",
    "The landlord promised to fix the heating before October.",
    # work
    "We decided to move the backend to PostgreSQL.",
    "The team agreed to ship the release every two weeks.",
    "We dropped the mobile app to focus on the web version.",
    "The quarterly review is in the second week of the month.",
    "I'm responsible for onboarding the new hires this quarter.",
    "The client wants the report by Friday noon.",
    "We use Jira for tickets and Confluence for documentation.",
    "The budget for the project was cut by fifteen percent.",
    "I asked for a raise in my last performance review.",
    "Our team's stand-up is at 9:30 every weekday.",
    "I'm thinking about leaving my job for a startup.",
    "The company offers two days of remote work per week.",
    "I'm preparing a talk for the internal engineering day.",
    "We chose React for the new dashboard.",
    "Code reviews need two approvals before merging.",
    "The contract with the supplier ends in June.",
    "I lead a team of five engineers.",
    "I work as a freelance translator.",
    "I'm a high-school chemistry teacher.",
    "I started a new job as a product manager in March.",
    "My office is on the fourth floor, next to the kitchen.",
    "The deadline for the grant application was extended.",
    "We hired a second designer.",
    "The migration to the cloud is planned for next quarter.",
    "I should not schedule meetings on Friday afternoons.",
    # schedules
    "Dentist appointment on Thursday at 3 pm.",
    "Yoga class every Monday and Wednesday evening.",
    "The car is due for its service in November.",
    "I pick the kids up from school at four on Fridays.",
    "Rent is due on the first of every month.",
    "Book club meets on the last Thursday of the month.",
    "The flight to Lisbon leaves at 7:10 on Saturday.",
    "Parents' evening at school is next Tuesday.",
    "I have a haircut booked for the 12th.",
    "The recycling is collected every other Wednesday.",
    "Piano lessons moved to Saturday mornings.",
    "The team offsite is planned for the end of September.",
    "I want to be reminded to water the plants twice a week.",
    "My passport needs renewing before next summer.",
    "Football practice for my son is on Tuesday at six.",
    # health
    "I'm allergic to penicillin.",
    "I take vitamin D in the winter months.",
    "I have mild asthma and carry an inhaler.",
    "I'm lactose intolerant.",
    "My doctor told me to cut down on salt.",
    "I twisted my ankle running last month.",
    "I try to walk ten thousand steps a day.",
    "I have been sleeping badly since the move.",
    "I'm training for a half marathon.",
    "I get migraines when I skip meals.",
    "I had knee surgery two years ago.",
    "I see a physiotherapist for my back.",
    "I stopped drinking alcohol in January.",
    "I wear glasses for reading.",
    "My blood pressure was a bit high at the last check-up.",
    "I'm vegetarian, but I eat fish occasionally.",
    "I've been meditating for ten minutes each morning.",
    # travel
    "We spent our honeymoon in Japan.",
    "I'd love to see the northern lights one day.",
    "Next summer we want to drive along the coast of Portugal.",
    "I always get seasick on ferries.",
    "I have a frequent flyer card with the national airline.",
    "We rented a cabin in the mountains for New Year.",
    "I lived in Madrid for a year as a student.",
    "I'm planning a weekend in Amsterdam with friends.",
    "I prefer small hotels to big chains.",
    "Last year's trip to Iceland was the best holiday we've had.",
    "I need a visa for the conference in India.",
    "We go camping in the same valley every August.",
    "I lost my luggage on the way back from Rome.",
    # finance
    "I put a fixed amount into savings every payday.",
    "I'm saving for a deposit on a flat.",
    "I switched to a bank without account fees.",
    "I cancelled the streaming subscription I never used.",
    "My tax return is due at the end of July.",
    "I invest in a broad index fund every month.",
    "We split household costs fifty-fifty.",
    "The car loan will be paid off next year.",
    "I keep receipts for work expenses in a folder.",
    "I'm trying to spend less on eating out.",
    "Home insurance renews in February.",
    "I paid the electricity bill late last month.",
    # tech setup
    "My laptop runs Ubuntu and I use Vim for editing.",
    "I switched from Chrome to Firefox.",
    "I use a split mechanical keyboard.",
    "The home server is a small box in the cupboard running backups.",
    "I keep my notes in plain Markdown files synced across devices.",
    "My phone is an Android; my partner has an iPhone.",
    "I use a password manager for everything.",
    "The router's admin page is on the usual local address.",
    "I back up my photos to an external drive every month.",
    "I prefer dark mode in every app.",
    "My terminal font is a monospaced font with ligatures.",
    "I use Python for most scripts and Go for services.",
    "The printer at home only works over USB.",
    "I set up two-factor authentication on my email.",
    "Our Wi-Fi is slow in the bedroom; I ordered a mesh system.",
    "I host my blog on a cheap virtual server.",
    # hobbies
    "I've been learning to play the guitar for a year.",
    "I paint watercolours on weekends.",
    "I grow tomatoes and basil on the balcony.",
    "I play chess online most evenings.",
    "I climb at the bouldering gym twice a week.",
    "I collect old vinyl records.",
    "I started knitting during the winter.",
    "I go birdwatching by the lake in spring.",
    "I build small furniture in the garage.",
    "I'm learning Italian with an app.",
    "I run a tabletop role-playing game for friends.",
    "I take photos of old buildings in the city.",
    "I swim in the sea whenever I can.",
    "I bake sourdough bread every weekend.",
    "I'm restoring an old bicycle.",
    # home and pets
    "We have a cat called Pixel.",
    "Our dog needs a walk first thing in the morning.",
    "We moved into a new flat in April.",
    "The kitchen tap has been leaking for a week.",
    "The spare key is with the neighbour across the hall.",
    "We are repainting the living room in a light green.",
    "The garden needs a new fence.",
    "I keep my bike in the basement.",
    "Our house has solar panels on the roof.",
    "The washing machine makes a noise on the spin cycle.",
    # third person, agent notes
    "The user prefers concise answers with code examples.",
    "The user is based in Berlin and works in the CET time zone.",
    "The user is learning Spanish and wants occasional practice.",
    "The user's daughter has a peanut allergy.",
    "The user asked not to be contacted on weekends.",
    "The user is writing a novel about a lighthouse keeper.",
    "The user drives an electric car.",
    "The user runs a small online shop selling ceramics.",
    "The user wants to be reminded about medication at 8 am.",
    "The user plays in a local football team on Sundays.",
    "Anna is the user's sister and lives in Vienna.",
    "Tom from accounting handles the invoices.",
    "Priya is the team lead for the payments service.",
    "Carlos prefers meetings in the morning.",
    "Mei is organising the summer party.",
    "Jonas has a new job at a logistics company.",
    "Sophie's birthday is in early May.",
    "David is training his new puppy.",
    "Fatima recommended a good dentist nearby.",
    "Lukas is moving to Hamburg in the autumn.",
    # German
    "Ich trinke morgens lieber Tee als Kaffee.",
    "Meine Schwester wohnt in München.",
    "Wir fahren im Sommer an die Ostsee.",
    "Ich bin allergisch gegen Nüsse.",
    "Der Zahnarzttermin ist am Dienstag um zehn Uhr.",
    "Ich arbeite als Ingenieur bei einem Autozulieferer.",
    "Unser Hund heißt Bruno.",
    "Ich lerne seit einem Jahr Klavier.",
    "Die Miete wird am Monatsanfang abgebucht.",
    "Mein Laptop läuft mit Linux.",
    "Wir haben beschlossen, das Projekt auf nächstes Jahr zu verschieben.",
    "Ich gehe zweimal pro Woche schwimmen.",
    "Mein Vater hat im Herbst Geburtstag.",
    "Ich mag keine scharfen Gerichte.",
    "Der Nutzer möchte Antworten auf Deutsch.",
    "Meine Frau arbeitet als Lehrerin.",
    "Ich spare für ein neues Fahrrad.",
    "Am Wochenende backe ich gerne Brot.",
    # French
    "Je préfère le thé au café le matin.",
    "Ma sœur habite à Lyon.",
    "Nous partons en vacances en Bretagne en août.",
    "Je suis allergique aux fruits de mer.",
    "J'ai rendez-vous chez le médecin jeudi.",
    "Je travaille comme comptable dans une petite entreprise.",
    "Notre chat s'appelle Minou.",
    "J'apprends la guitare depuis six mois.",
    "Le loyer est payé le premier du mois.",
    "Je fais du vélo pour aller au travail.",
    "Mon fils commence l'école primaire en septembre.",
    "J'aime les films anciens en noir et blanc.",
    "L'utilisateur préfère des réponses courtes.",
    "Nous avons choisi de refaire la cuisine au printemps.",
    "Je cours le dimanche matin au parc.",
    "Mon mari est végétarien.",
    # Spanish
    "Prefiero el té al café por la mañana.",
    "Mi hermano vive en Sevilla.",
    "Este verano vamos a la playa en Valencia.",
    "Soy alérgica al polen.",
    "Tengo cita con el dentista el lunes.",
    "Trabajo como enfermera en el hospital.",
    "Nuestro perro se llama Toby.",
    "Estoy aprendiendo a tocar el piano.",
    "Pago el alquiler a principios de mes.",
    "Mi portátil tiene Windows y uso Visual Studio Code.",
    "Mi madre cumple años en diciembre.",
    "Los martes juego al pádel con amigos.",
    "El usuario quiere respuestas en español.",
    "Decidimos cambiar de proveedor de internet.",
    "Me encanta la comida mexicana.",
    "Mi hija estudia medicina en Madrid.",
]

# Templates: {name} a first name, {who} a relation, and the slots each list fills.
NAMES = [
    "Emma", "Liam", "Olivia", "Noah", "Ava", "Mateo", "Sofia", "Elias", "Chloe", "Hugo",
    "Amara", "Kenji", "Nadia", "Oscar", "Leila", "Ravi", "Ines", "Marta", "Felix", "Zoe",
    "Samir", "Greta", "Pablo", "Yuki", "Hannah", "Ben", "Clara", "Omar", "Lucia", "Theo",
]  # fmt: skip
RELATIONS = [
    "my sister", "my brother", "my mother", "my father", "my wife", "my husband", "my partner",
    "my son", "my daughter", "my best friend", "my boss", "a colleague", "my neighbour",
    "my uncle", "my aunt", "my grandmother", "my roommate", "my cousin", "my coach",
]  # fmt: skip
JOBS = [
    "an architect", "a nurse", "a software developer", "a lawyer", "a teacher", "a chef",
    "a pharmacist", "an electrician", "a journalist", "a physiotherapist", "an accountant",
    "a pilot", "a graphic designer", "a firefighter", "a vet", "a data analyst",
]  # fmt: skip
CITIES = [
    "Berlin", "Paris", "Madrid", "Lisbon", "Vienna", "Oslo", "Prague", "Dublin", "Chicago",
    "Melbourne", "Montreal", "Kyoto", "Edinburgh", "Zurich", "Barcelona", "Warsaw", "Seattle",
]  # fmt: skip
FOODS = [
    "sushi", "pasta with pesto", "spicy curry", "pancakes", "Greek salad", "ramen", "tacos",
    "roast chicken", "falafel", "mushroom risotto", "apple pie", "dumplings", "paella",
]  # fmt: skip
HOBBIES = [
    "pottery", "rock climbing", "sailing", "photography", "woodworking", "salsa dancing",
    "gardening", "running", "cycling", "crosswords", "board games", "fishing", "calligraphy",
    "skiing", "playing the drums", "astronomy", "scuba diving", "cooking Thai food",
]  # fmt: skip
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
TIMES = ["8 am", "9:30", "noon", "2 pm", "4:15", "6 pm", "7:30 in the evening"]
EVENTS = [
    "a dentist appointment", "a meeting with the accountant", "a parent-teacher meeting",
    "a job interview", "a call with the bank", "a vet appointment for the dog",
    "a driving lesson", "a team retrospective", "a blood test", "a dinner reservation",
    "a haircut", "a video call with the client", "a tennis match", "a flight home",
]  # fmt: skip
TOOLS = [
    "VS Code", "Emacs", "PyCharm", "Docker", "Kubernetes", "Terraform", "Notion", "Obsidian",
    "Slack", "Git", "PostgreSQL", "Redis", "a Raspberry Pi", "a standing desk",
    "noise-cancelling headphones", "a Kindle", "a MacBook", "a ThinkPad",
]  # fmt: skip
THINGS = [
    "a new sofa", "a second-hand car", "concert tickets", "a road bike", "a coffee machine",
    "winter tyres", "a new phone", "a tent", "running shoes", "a birthday present for Mum",
    "flights to visit family", "a gym membership", "a language course",
]  # fmt: skip
GENRES = [
    "crime novels", "fantasy", "biographies", "poetry", "horror films", "documentaries",
    "indie rock", "classical music", "hip hop", "country music", "anime", "stand-up comedy",
]  # fmt: skip
CONDITIONS = [
    "hay fever", "back pain", "insomnia", "high cholesterol", "a gluten intolerance",
    "a bee sting allergy", "tennis elbow", "low iron", "eczema", "a bad knee",
]  # fmt: skip
DECISIONS = [
    "switch to a four-day week", "postpone the launch", "hire a contractor",
    "rewrite the billing module", "move the office", "drop support for the old API",
    "adopt trunk-based development", "outsource the support line", "raise our prices",
    "run a user survey", "freeze new features until the audit",
]  # fmt: skip

TEMPLATES = [
    "{Name} is {job} in {city}.",
    "{Relation} works as {job}.",
    "{Relation} lives in {city}.",
    "{Relation}'s name is {name}.",
    "{Name}'s birthday is on {day_of_month} {month}.",
    "{Relation} loves {food}.",
    "I really enjoy {food}.",
    "I don't eat {food} anymore.",
    "I have been getting into {hobby}.",
    "{Name} and I go {hobby_short} together.",
    "I have {event} on {day} at {time}.",
    "Remind me about {event} next {day}.",
    "Every {day} at {time} I have {event_regular}.",
    "I use {tool} every day at work.",
    "We set up {tool} for the whole team.",
    "I'm saving up for {thing}.",
    "I bought {thing} last week.",
    "I mostly read {genre}.",
    "{Relation} got me into {genre}.",
    "I have {condition}.",
    "{Relation} has {condition}.",
    "We decided to {decision}.",
    "The team voted to {decision}.",
    "I visited {city} in {month}.",
    "We're thinking of moving to {city}.",
    "{Name} recommended a restaurant in {city}.",
    "{Name} from work is moving to {city}.",
    "The user's {relation_noun} is called {name}.",
    "{Name} owes me money for the concert tickets.",
    "I met {name} at a conference in {city}.",
]
MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
]  # fmt: skip
REGULAR = [
    "a piano lesson", "the weekly planning meeting", "a language class", "a run with friends",
    "choir practice", "a therapy session", "the farmers' market", "a call with my parents",
]  # fmt: skip
HOBBY_SHORT = ["climbing", "running", "fishing", "cycling", "swimming", "skiing", "sailing"]
RELATION_NOUNS = ["wife", "husband", "son", "daughter", "dog", "cat", "manager", "dentist"]


def _fill(template: str, rng: random.Random) -> str:
    """One sentence from a template, each slot drawn from its list."""
    relation = rng.choice(RELATIONS)
    slots = {
        "name": rng.choice(NAMES),
        "relation": relation,
        "job": rng.choice(JOBS),
        "city": rng.choice(CITIES),
        "food": rng.choice(FOODS),
        "hobby": rng.choice(HOBBIES),
        "hobby_short": rng.choice(HOBBY_SHORT),
        "event": rng.choice(EVENTS),
        "event_regular": rng.choice(REGULAR),
        "day": rng.choice(DAYS),
        "time": rng.choice(TIMES),
        "tool": rng.choice(TOOLS),
        "thing": rng.choice(THINGS),
        "genre": rng.choice(GENRES),
        "condition": rng.choice(CONDITIONS),
        "decision": rng.choice(DECISIONS),
        "month": rng.choice(MONTHS),
        "day_of_month": str(rng.randint(1, 28)),
        "relation_noun": rng.choice(RELATION_NOUNS),
    }
    slots["Name"] = slots["name"]
    slots["Relation"] = relation[0].upper() + relation[1:]
    return template.format(**slots)


def texts(templated: int = 560) -> list[str]:
    """The written sentences, then `templated` distinct ones from the templates."""
    rng = random.Random(SEED)
    out = list(dict.fromkeys(WRITTEN))
    seen = set(out)
    made = 0
    # Round-robin over the templates, a bounded number of tries each, so a template with few
    # fillings cannot stall the loop or crowd out the others.
    for turn in range(templated * 20):
        if made == templated:
            break
        sentence = _fill(TEMPLATES[turn % len(TEMPLATES)], rng)
        if sentence not in seen:
            seen.add(sentence)
            out.append(sentence)
            made += 1
    return out


def vectors(made: list[str]) -> None:
    """Embed the sentences with each calibrated local model and write its vectors."""
    from memory_bank.models.local_model import load
    from memory_bank.search import background, calibration

    models = json.loads(calibration.DATA.read_text())["models"]
    for model in [m for m in models if m.startswith("local:")]:
        provider = load(model.removeprefix("local:").removesuffix("-int8"))
        rows = provider.embed(made).astype(np.float16)
        path = background.vectors_file(provider.model)
        np.save(path, rows)
        print(f"{provider.model}: {rows.shape[0]} vectors written to {path}")


def main() -> None:
    """Write background.json, and with --vectors each calibrated model's vectors."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", action="store_true", help="embed with the models too")
    args = parser.parse_args()
    made = texts()
    OUT.write_text(
        json.dumps(
            {
                "about": "Reference sentences for search/background.py, written by "
                "tools/background_texts.py; not drawn from any evaluation data.",
                "texts": made,
            },
            indent=0,
            ensure_ascii=False,
        )
        + "\n"
    )
    print(f"{len(made)} sentences written to {OUT}")
    if args.vectors:
        vectors(made)


if __name__ == "__main__":
    main()
