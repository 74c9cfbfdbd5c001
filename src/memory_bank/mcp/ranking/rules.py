"""The rules: what a phrase's shape does to the capabilities' scores (negation, correction,
question, ids, the fallback), giving the answer of search_capabilities."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from memory_bank.mcp import language, lexicon
from memory_bank.mcp.manifest import Capability, Manifest
from memory_bank.mcp.ranking import learned, nearest, tuning
from memory_bank.mcp.ranking.blend import Embedder, closeness, scale_by_meaning
from memory_bank.mcp.ranking.capability_index import (
    Index,
    editor_of,
    id_prefixes,
    index_of,
    keeper_of,
    parent_path,
    phrase_bag,
    reader_of,
    respelled,
    saver_of,
    undoer_of,
)
from memory_bank.mcp.ranking.phrase import ID, PLACEHOLDER, Clause, Phrase, meaningful

# Tuned on the tune halves of the phrasing sets: tuning.json says what each does, and
# `python -m memory_bank.mcp.ranking.tune` measures a value.
ACTION_FLOOR = tuning.value("ACTION_FLOOR")
KEEP_BONUS = tuning.value("KEEP_BONUS")
CORRECTION_BONUS = tuning.value("CORRECTION_BONUS")
ID_BONUS = tuning.value("ID_BONUS")
TOPICAL = tuning.value("TOPICAL")
TOPICAL_MARGIN = tuning.value("TOPICAL_MARGIN")
KEEP_FLOOR = tuning.value("KEEP_FLOOR")
NEGATION_MATCH = tuning.value("NEGATION_MATCH")
NO_ID_FACTOR = tuning.value("NO_ID_FACTOR")
QUESTION_CHANGE_FACTOR = tuning.value("QUESTION_CHANGE_FACTOR")
TERSE_WORDS = tuning.value("TERSE_WORDS")
ASKS = tuning.value("ASKS")
REFUSAL_REST = tuning.value("REFUSAL_REST")


@dataclass(frozen=True)
class Answer:
    """The capabilities that fit a phrase, best first, and what the phrase declines."""

    ranked: tuple[tuple[Capability, float], ...]
    # The phrase says not to do this (and asks for nothing else): no capability fits.
    declined: Capability | None = None
    # A negated "forget" read as a save.
    kept: bool = False
    # The phrase's shape, not its words, chose the first capability (a correction, a question,
    # a negation...): the nearest examples do not move it.
    shaped: bool = False


def answer(
    manifest: Manifest, query: str, limit: int = 3, embedder: Embedder | None = None
) -> Answer:
    """What a phrase asks for among a manifest's capabilities and other operations; with an
    embedder, an English phrase is also ranked by meaning (module docstring); with
    NEAREST_WEIGHT above 0, the rules' scores then meet the phrase's nearest examples
    (nearest.py), and with LEARNED_WEIGHT above 0 the learned model's probabilities
    (learned.py)."""
    if not nearest.NEAREST_WEIGHT and not learned.LEARNED_WEIGHT:
        # The rules alone: both blends turned off (tuning.json).
        return _unframed(manifest, query, limit, embedder, FRAMES)[0]
    index = index_of(manifest)
    found = _unframed(manifest, query, len(index.capabilities), embedder, FRAMES)[0]
    scores = nearest.blended(manifest, query, {c.name: s for c, s in found.ranked})
    scores = learned.blended(manifest, query, scores)
    if found.shaped:
        # What the shape chose stays first: the examples are words, they read no negation,
        # correction or question.
        scores[found.ranked[0][0].name] = max(scores.values()) + SHAPE_LEAD
    by_name = {c.name: c for c in index.capabilities}
    order = {c.name: i for i, c in enumerate(index.capabilities)}
    names = sorted((n for n, s in scores.items() if s > 0), key=lambda n: (-scores[n], order[n]))
    ranked = tuple((by_name[n], round(scores[n], 3)) for n in names[:limit])
    return Answer(ranked, found.declined, found.kept, found.shaped)


# What the shape's choice leads the rest by after the blend (any lead: it only orders).
SHAPE_LEAD = 0.001
# How many frames may stand before a request ("Thought: user mentioned X -> update ...").
FRAMES = 3


def _unframed(
    manifest: Manifest, query: str, limit: int, embedder: Embedder | None, frames: int
) -> tuple[Answer, bool]:
    """_answer() of the request after any frames that name no action."""
    framed = _FRAMED.match(query)
    if frames and framed is not None and _frames(manifest, framed.group(1)):
        # A frame that names no action but the fallback before a colon reports the request
        # after it: "user said: remember I'm vegan", "quick one: what do I know about Acme?";
        # an agent's notes may stack them ("Thought: user mentioned X -> update ...").
        inner, named = _unframed(manifest, framed.group(2), limit, embedder, frames - 1)
        if named:
            return inner, named
    if framed is not None and _terse(manifest, framed.group(1)):
        # An agent's terse intent names its action before the colon and its subject after
        # it, like a person's request: "recall: the Q3 budget", "listar: todas as memórias
        # com a tag viagem", "lookup prior context re: X".
        # Read as the spec's examples are written, the subject a placeholder ("lookup: …").
        # The model reads it only when the whole phrase is English (blend.closeness).
        meant = embedder if language.is_english(query) else None
        intent, named = _answer(manifest, f"{framed.group(1)} {PLACEHOLDER}", limit, meant)
        if named and intent.ranked:
            return intent, named
    return _answer(manifest, query, limit, embedder)


def _terse(manifest: Manifest, head: str) -> bool:
    """Whether words before a colon are a terse intent: a few words, all of them the
    capabilities' own, none negated."""
    index = index_of(manifest)
    phrase = respelled(index.parse(head), index)
    words = [w for w in phrase.words if meaningful(w, phrase.lex)]
    return (
        0 < len(words) <= TERSE_WORDS
        and not any(c.negated for c in phrase.clauses)
        and all(index.known(w) for w in words)
    )


def _frames(manifest: Manifest, head: str) -> bool:
    """Whether words before a colon name no action of their own (or only the fallback's)."""
    found, named = _answer(manifest, head, 1, None)
    return not named or (bool(found.ranked) and found.ranked[0][0].fallback)


# Up to a colon (not one between digits, as in 10:30), a dash or an arrow, and what follows.
_FRAMED = re.compile(r"^([^:]{1,60}?)(?:\s*:|\s+[-\u2013\u2014]|\s*->)\s+(\S.*)$", re.DOTALL)


def _answer(
    manifest: Manifest, query: str, limit: int, embedder: Embedder | None
) -> tuple[Answer, bool]:
    """answer() of a whole phrase, and whether the phrase itself names an action (or declines
    or keeps one), not only the fallback's."""
    index = index_of(manifest)
    phrase = index.parse(query)
    if not any(meaningful(w, phrase.lex) or ID.match(w) for w in phrase.words):
        if not any(c.contrast for c in phrase.clauses):
            return Answer(()), False
        # A value corrected and nothing else ("no, 3 pm, not 2 pm"): a correction is an edit,
        # whatever words are around it.
        edits = [c for c in index_of(manifest).capabilities if c.method == "PATCH"]
        return Answer(tuple((c, CORRECTION_BONUS) for c in edits[:limit])), True
    phrase = _refusals_apart(respelled(phrase, index), index)
    lex = phrase.lex
    by_name = {c.name: c for c in index.capabilities}
    negated = frozenset(i for i, c in enumerate(phrase.clauses) if c.negated)
    scores = index.scores(phrase_bag(phrase, False, negated, index), phrase.languages)
    # A request in words no capability uses ("update a memory" with no edit tool) is no
    # confident match for whatever shares its other words.
    asked = [
        w
        for i, c in enumerate(phrase.clauses)
        if i not in negated and not c.content and not c.contrast and not c.relative
        for w in c.words
        if meaningful(w, lex)
    ]
    coverage = sum(index.known(w) for w in asked) / len(asked) if asked else 1.0
    # The user's subject after "about" ("delete the thing abt my old gym membership") costs
    # the request's own words nothing.
    request = [
        w
        for i, c in enumerate(phrase.clauses)
        if i not in negated and not c.content and not c.contrast and not c.relative
        for w in _unsubjected(c.words, lex, index)
        if meaningful(w, lex)
    ]
    covered = sum(index.known(w) for w in request) / len(request) if request else 1.0
    scores = {name: value * covered**0.75 for name, value in scores.items()}
    # The capability the words alone put first, before the shape's rules.
    worded = max(scores, key=lambda name: scores[name])
    # A question mostly in the user's own words asks what is known about them: "what time is
    # my dentist appointment?", "who owns the billing service?".
    # Not one about a memory in view: "what did that note say at first?".
    topical = (
        phrase.question and coverage < TOPICAL and not phrase.ids and not _referred(phrase, index)
    )
    declined: Capability | None = None
    kept = False
    # What the clauses that negate nothing ask for, clearly: a negated clause after it gives
    # a reason ("delete that memory, it's not true anymore"), it asks for nothing else.
    asked_for = max(scores.values(), default=0.0) >= KEEP_FLOOR
    meanings: list[tuple[Capability, float]] = []
    correction = _corrects(phrase)
    for position in sorted(negated):
        clause = phrase.clauses[position]
        if correction and not lex.COPULAS.isdisjoint(clause.words):
            continue  # "n'est plus la bonne": a fact no longer so, its new value follows
        meant, similarity = index.negation_meaning(clause, lex)
        if meant is not None and similarity >= NEGATION_MATCH:
            # The spec says what this negation means ("don't remember that" forgets).
            meanings.append((meant, similarity))
            continue
        alone = Phrase(
            (Clause(clause.words, False, False, False),), False, frozenset(), phrase.languages
        )
        clause_scores = index.scores(phrase_bag(alone, False, frozenset(), index), phrase.languages)
        # What a negation refuses is a change ("don't save", "vergiss nicht"): reads aside.
        changes = {n: s for n, s in clause_scores.items() if by_name[n].method != "GET"}
        top, value = max(changes.items(), key=lambda item: item[1])
        if value < ACTION_FLOOR:
            continue
        undo = undoer_of(by_name[top], index.capabilities)
        if undo is not None and value >= KEEP_FLOOR and not lex.CESSATION.isdisjoint(clause.words):
            # Not to keep something any longer is to forget it: "I don't want you to remember
            # my salary anymore", "ne retiens plus ça".
            scores[undo.name] += KEEP_BONUS + value
            kept = True
            continue
        keeper = keeper_of(by_name[top], index.capabilities)
        if _asks_after(phrase, position, index) - {top, keeper.name if keeper else top}:
            # A refusal followed by another request refuses only: "no wait, not delete it,
            # just tell me what you had about ...", "nicht speichern, eher nachschauen ob ...".
            continue
        if keeper is not None and value >= KEEP_FLOOR:
            # Not forgetting is remembering: "don't forget ...", "vergiss nicht, dass ...".
            scores[keeper.name] += KEEP_BONUS + value
            kept = True
        else:
            # A negated verb that is no clear "forget" refuses the change, and the safe
            # reading of a vague one ("no memorices esto") is not to save: nothing to do.
            refused = keeper or by_name[top]
            if phrase.question or refused.method != "POST" or "{" in refused.path:
                # Only a save is declined ("nah, don't save that"): a negative question asks
                # ("you don't remember my order, do you?"), and a phrase that names another
                # action negated ("não me deixa esquecer ...") asks for something.
                continue
            declined = refused
            scores[declined.name] = min(scores[declined.name], 0.0)
    for meant, similarity in meanings:
        # Declining a save and saying not to remember it ("between us, no need to remember
        # it") forgets nothing: nothing was saved.
        if declined is not None and keeper_of(meant, index.capabilities) is declined:
            continue
        if asked_for and scores[meant.name] < max(scores.values()):
            continue
        scores[meant.name] += KEEP_BONUS + similarity
        kept = True
    # Dropping something and giving a new value for it is a correction: "scratch the old
    # number, the new one is ...".
    replaced = (
        not phrase.question
        and by_name[max(scores, key=lambda name: scores[name])].method == "DELETE"
        and any(
            i > 0 and not c.content and not lex.REPLACEMENTS.isdisjoint(c.words)
            for i, c in enumerate(phrase.clauses)
        )
    )
    if replaced or any(c.contrast for c in phrase.clauses):
        for capability in index.capabilities:
            if capability.method == "PATCH":
                scores[capability.name] += CORRECTION_BONUS
    if phrase.question and not kept:
        # A question asks to be told something, not to change anything: a question about a
        # change to a collection ("what did I save last week?") asks to read that collection.
        for capability in index.capabilities:
            if capability.method == "GET":
                continue
            reader = reader_of(capability, index.capabilities)
            if reader is not None:
                scores[reader.name] = max(scores[reader.name], scores[capability.name])
            scores[capability.name] *= QUESTION_CHANGE_FACTOR
    elif _looks_back(phrase):
        # An addition to a collection since some time, with nothing to add, asks to read
        # what was added: "gimme the latest ten things you noted", "entries created this
        # week", "Lo último que has apuntado".
        leader = by_name[max(scores, key=lambda name: scores[name])]
        reader = reader_of(leader, index.capabilities) if leader.method == "POST" else None
        if reader is not None and "{" not in leader.path:
            scores[reader.name] = max(scores[reader.name], scores[leader.name] + TOPICAL_MARGIN)
    if phrase.ids:
        # An id says which kind of thing the phrase is about: a tool taking no such id is
        # unlikely.
        for capability in index.capabilities:
            if phrase.ids & id_prefixes(capability):
                scores[capability.name] += ID_BONUS
            else:
                scores[capability.name] *= NO_ID_FACTOR
    elif referred := _referred(phrase, index):
        # So does "that memory", "ce brouillon": one thing in view, not a collection.
        for capability in index.capabilities:
            if referred & id_prefixes(capability):
                scores[capability.name] += ID_BONUS
            elif "{" not in capability.path:
                scores[capability.name] *= NO_ID_FACTOR
    elif not lex.PLURAL_ITEMS.isdisjoint(phrase.words) and lex.ITEMS.isdisjoint(phrase.words):
        # Several items and no one of them ("list memories filtered by tag", "show the
        # drafts"): a collection, not one item.
        for capability in index.capabilities:
            if "{" in capability.path:
                scores[capability.name] *= NO_ID_FACTOR
    fallback = next((c for c in index.capabilities if c.fallback), None)
    saver = saver_of(fallback, index.capabilities) if fallback is not None else None
    editor = editor_of(saver, index.capabilities) if saver is not None else None
    if correction and editor is not None:
        # A new value for a stored one is an edit, whatever else the phrase names ("the
        # number you saved isn't that anymore, it's now ...").
        scores[editor.name] = max(scores[editor.name], max(scores.values()) + TOPICAL_MARGIN)
    meaning = closeness(manifest, index, query, embedder) if embedder is not None else None
    if meaning is not None:
        scale_by_meaning(scores, meaning)
    best = max(scores.values(), default=0.0)
    if declined is not None and not kept and (best < ACTION_FLOOR or not asked):
        # Declined, and nothing else asked but the content not to keep ("unter uns, nicht
        # speichern: ich suche einen neuen Job").
        return Answer((), declined), True
    named = kept or best >= ACTION_FLOOR
    fallback = next((c for c in index.capabilities if c.fallback), None)
    leader = by_name[max(scores, key=lambda name: scores[name])]
    if (
        fallback is not None
        and leader.method == "GET"
        and leader.path == parent_path(fallback.path)
    ):
        # A listing of the collection the fallback searches, of what is about the user's own
        # subject, is a search for it: "what have you saved about the dentist?" (but "...
        # about me?" lists).
        topical = topical or _about(phrase, index)
    if fallback is not None and not kept and (best < ACTION_FLOOR or topical):
        scores[fallback.name] = max(scores[fallback.name], ACTION_FLOOR, best + TOPICAL_MARGIN)
        saver = saver_of(fallback, index.capabilities)
        states = _states(phrase)
        if saver is not None and best < ACTION_FLOOR and (states or _gives_content(phrase)):
            # Content handed over, or a fact stated, with no action named and no question:
            # something to keep ("Für später: der Schlüssel hängt beim Hausmeister", "btw my
            # sister's birthday is on March 3rd"), with the search of what is kept next; a
            # fact that is so "now" replaces an older one ("my manager is now Tom").
            editor = editor_of(saver, index.capabilities)
            now = states and not (lex.NOW | lex.REPLACEMENTS).isdisjoint(phrase.words)
            keeper = editor if (now or correction) and editor is not None else saver
            scores[keeper.name] = scores[fallback.name] + TOPICAL_MARGIN
    ranked = [(by_name[n], round(s, 3)) for n, s in scores.items() if s > 0]
    order = {c.name: i for i, c in enumerate(index.capabilities)}
    ranked.sort(key=lambda pair: (-pair[1], order[pair[0].name]))
    shaped = kept or (bool(ranked) and ranked[0][0].name != worded)
    return Answer(tuple(ranked[:limit]), declined, kept, shaped), named


def rank(
    manifest: Manifest, query: str, limit: int = 3, embedder: Embedder | None = None
) -> list[tuple[Capability, float]]:
    """Capabilities (and other operations) best matching a phrase, best first, with scores.

    Only those that score above zero are returned; a phrase of nothing but grammar, or one
    that declines an action and asks for nothing else, finds nothing."""
    return list(answer(manifest, query, limit, embedder).ranked)


def _refusals_apart(phrase: Phrase, index: Index) -> Phrase:
    """A phrase with what follows a refused verb in its clause as a clause of its own, as speech
    without punctuation runs them together ("not delete it um just tell me what you had
    about ..."): the refusal is the negation and the first word the capabilities use after it."""
    lex = phrase.lex
    clauses: list[Clause] = []
    for clause in phrase.clauses:
        negations = [i for i, w in enumerate(clause.words) if w in lex.NEGATIONS]
        start = negations[0] + 1 if negations and clause.negated else len(clause.words)
        verbs = [
            i
            for i in range(start, len(clause.words))
            if meaningful(clause.words[i], lex) and index.known(clause.words[i])
        ]
        rest = clause.words[verbs[0] + 1 :] if verbs else ()
        # Not when the rest states something: "don't let me forget the lease is due ...".
        if sum(meaningful(w, lex) for w in rest) < REFUSAL_REST or not lex.COPULAS.isdisjoint(rest):
            clauses.append(clause)
            continue
        clauses.append(Clause(clause.words[: verbs[0] + 1], True, False, clause.content))
        clauses.append(Clause(rest, False, False, clause.content))
    return Phrase(tuple(clauses), phrase.question, phrase.ids, phrase.languages)


def _asks_after(phrase: Phrase, position: int, index: Index) -> set[str]:
    """What the clauses after this one ask for on their own (the capability their words alone
    name clearly; none for one that states something: "I was only thinking aloud")."""
    found: set[str] = set()
    for clause in phrase.clauses[position + 1 :]:
        if clause.negated or clause.content or clause.relative or clause.contrast:
            continue
        if not phrase.lex.COPULAS.isdisjoint(clause.words[1:]):
            continue
        alone = Phrase(
            (Clause(clause.words, False, False, False),), False, frozenset(), phrase.languages
        )
        scores = index.scores(phrase_bag(alone, False, frozenset(), index), phrase.languages)
        name = max(scores, key=lambda n: scores[n])
        if scores[name] >= ASKS:
            found.add(name)
    return found


def _unsubjected(words: tuple[str, ...], lex: lexicon.Words, index: Index) -> list[str]:
    """A clause's words without the user's own subject after a preposition that names what it
    is about: the words no capability uses that follow it ("delete the thing about my old gym
    membership", "Sachen über mehrere Gespräche hinweg merken"; not "about me")."""
    out: list[str] = []
    subject = False
    for word in words:
        if subject and (word in lex.ARTICLES or word in lex.POSSESSIVES):
            continue
        if subject and meaningful(word, lex) and not index.known(word):
            continue
        subject = word in lex.ABOUT
        out.append(word)
    return out


def _corrects(phrase: Phrase) -> bool:
    """Whether a statement gives a value "now" after denying or changing an older one ("ya no
    es ese, ahora es ...", "n'est plus la bonne, c'est ... maintenant", "mudou, agora é ...")."""
    if phrase.question:
        return False
    lex = phrase.lex
    for position, clause in enumerate(phrase.clauses):
        if lex.NOW.isdisjoint(clause.words) or lex.COPULAS.isdisjoint(clause.words):
            continue
        for before in phrase.clauses[:position]:
            denied = not lex.NEGATIONS.isdisjoint(before.words) and not (
                lex.COPULAS.isdisjoint(before.words)
            )
            if denied or not lex.CHANGED.isdisjoint(before.words):
                return True
    return False


def _looks_back(phrase: Phrase) -> bool:
    """Whether a phrase that asks no question and hands over nothing points back in time
    ("latest", "since Monday", "dernier", "último")."""
    lex = phrase.lex
    return (
        not lex.RECENT.isdisjoint(phrase.words)
        and not any(c.content for c in phrase.clauses)
        and not _states(phrase)
    )


def _states(phrase: Phrase) -> bool:
    """Whether a phrase that asks nothing states a fact: a subject, then the verb "to be"."""
    lex = phrase.lex
    return not phrase.question and any(
        not lex.COPULAS.isdisjoint(c.words[1:]) for c in phrase.clauses if not c.content
    )


def _gives_content(phrase: Phrase) -> bool:
    """Whether a phrase that asks nothing hands over content: after a colon or a "that"."""
    return not phrase.question and any(c.content and c.words for c in phrase.clauses)


def _about(phrase: Phrase, index: Index) -> bool:
    """Whether a phrase says what it is about in the user's own words ("about the dentist",
    "the memories that mention Berlin")."""
    lex = phrase.lex
    for clause in phrase.clauses:
        if (
            clause.relative
            and lex.ORIGINS.isdisjoint(clause.words)
            and any(meaningful(w, lex) and not index.known(w) for w in clause.words)
        ):
            # Not "... that came in from Slack": where a memory came from lists (by source).
            return True
        words = [w for w in clause.words if w not in lex.ARTICLES and w not in lex.POSSESSIVES]
        for word, after in itertools.pairwise(words):
            if word in lex.ABOUT and meaningful(after, lex) and not index.known(after):
                return True
    return False


def _referred(phrase: Phrase, index: Index) -> frozenset[str]:
    """The kinds of id a phrase points at with a demonstrative ("that memory", "ce brouillon")."""
    found: set[str] = set()
    lex = phrase.lex
    for clause in phrase.clauses:
        if clause.content:
            continue
        for word, after in zip(clause.words, clause.words[1:], strict=False):
            if word in lex.DEMONSTRATIVES:
                found.update(index.items.get(after, ()))
    return frozenset(found)
