"""Reading a phrase's shape with closed-class words only (mcp/lexicon.py): its clauses, which
of them are negated, contrasting, content to save or relative, whether it asks, and its ids."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from memory_bank.mcp import language, lexicon

# The stand-in for the user's own content in an example ("remember that …").
PLACEHOLDER = "\u2026"

SLOT = "zzslot"

# Punctuation, and that of the scripts written without spaces ("、", "。", "「」"; their
# full-width question mark and colon are folded to ASCII).
_BOUNDARY = re.compile(
    r"([,;:.!?\u00bf\u00a1()\[\]\"\u3001\u3002\u300c-\u3011\u3014-\u301b\u30fb]"
    r"|\s[-\u2013\u2014]+\s|\s*[-=]>\s*)"
)

# Letters of the scripts written without spaces between words: kana and CJK ideographs.
_UNSPACED = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(rf"[a-z0-9_]+(?:'[a-z]+)?|[{_UNSPACED}]+")
_RUN = re.compile(rf"[{_UNSPACED}]+")

ID = re.compile(r"^([a-z][a-z0-9]*)_[a-z0-9]+$")

ID_HINT = re.compile(r"\b([a-z][a-z0-9]*)_\.\.\.")

# A question's last words after a comma, which may be its tag ("..., n'est-ce pas ?").
_TAG = re.compile(r"[,;]\s*\u00bf?\s*([a-z' -]{1,30}?)\s*\?\s*$")


def fold(text: str) -> str:
    """Lower case without accents (ß is ss), curly apostrophes straight, full-width forms as
    ASCII; marks that are part of a letter elsewhere (kana's voicing: "で" is not "て") kept."""
    text = text.replace("\u2019", "'").replace("\u00b4", "'")
    decomposed = unicodedata.normalize("NFKD", text.replace(PLACEHOLDER, f" {SLOT} "))
    kept = "".join(c for c in decomposed if not _ACCENT.match(c))
    return unicodedata.normalize("NFC", kept).casefold()


# The combining accents of the Latin, Greek and Cyrillic alphabets.
_ACCENT = re.compile("[\u0300-\u036f]")


def _segmented(text: str) -> list[str]:
    """A text's words: a run of a script written without spaces is read as its overlapping
    pairs of characters ("保存しないで": "保存", "存し", "しな", "ない", "いで"), so that a word
    of two characters or more is found wherever it stands, with no dictionary."""
    out: list[str] = []
    for token in _WORD.findall(text):
        if _RUN.fullmatch(token) and len(token) > 1:
            out.extend(token[i : i + 2] for i in range(len(token) - 1))
        else:
            out.append(token)
    return out


@lru_cache(maxsize=64)
def _apostrophes(lex: lexicon.Words) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """A language's clitics ("I'd") and elisions ("l'entrée") as patterns (None: it has none);
    the longest first, so that an alternation of them finds the whole one."""
    clitics = "|".join(sorted(lex.CLITICS, key=lambda w: (-len(w), w)))
    elided = "|".join(sorted(lex.ELISIONS, key=lambda w: (-len(w), w)))
    return (
        re.compile(r"^([a-z]+)'(" + clitics + r")$") if clitics else None,
        re.compile(r"^(" + elided + r")'(.+)$") if elided else None,
    )


def _split_words(segment: str, lex: lexicon.Words) -> list[str]:
    """The words of a piece of text: contractions spelled out, elisions ("l'", "qu'") and a
    possessive 's split off."""
    out: list[str] = []
    clitic_form, elision_form = _apostrophes(lex)
    for token in _segmented(segment):
        if token in lex.CONTRACTIONS:
            out.extend(lex.CONTRACTIONS[token].split())
            continue
        clitic = clitic_form.match(token) if clitic_form else None
        if clitic:
            # "I'd", "we'll", "they're": the word and the auxiliary, not the word "id".
            out.extend((clitic.group(1), lex.CLITICS[clitic.group(2)]))
            continue
        elided = elision_form.match(token) if elision_form else None
        if elided:
            out.extend(elided.groups())
        elif token.endswith("'s"):
            out.append(token[:-2])
        else:
            out.append(token.replace("'", ""))
    return [_canonical(word, lex) for word in out]


def _canonical(word: str, lex: lexicon.Words) -> str:
    """One word for a class of words that says the same in every language ("all", "show")."""
    if word in lex.ALL:
        return "all"
    for canonical, prefixes in lex.VERB_CLASSES.items():
        if word.startswith(prefixes):
            return canonical
    return word


@dataclass(frozen=True)
class Clause:
    """A stretch of a phrase between punctuation, conjunctions and complementizers."""

    words: tuple[str, ...]
    negated: bool  # "don't save that"
    contrast: bool  # "not the 18th": a value corrected, no action refused
    content: bool  # after "that" or ":": what to save, not what to do
    # "(the entry) that you just created": which one, neither content nor the request
    relative: bool = False


@dataclass(frozen=True)
class Phrase:
    """A phrase read with closed-class words only."""

    clauses: tuple[Clause, ...]
    question: bool
    ids: frozenset[str]  # the prefixes of the ids it carries (mem, mdr)
    # The languages it may be in (mcp/language.py): whose closed-class words read it.
    languages: tuple[str, ...] = lexicon.CODES

    @property
    def lex(self) -> lexicon.Words:
        """The closed-class words of its languages."""
        return lexicon.of(self.languages)

    @property
    def words(self) -> tuple[str, ...]:
        """Every word, in order."""
        return tuple(w for clause in self.clauses for w in clause.words)


def tokens(text: str) -> list[str]:
    """A text's words as written, folded (what tells its language)."""
    return _segmented(fold(text))


@lru_cache(maxsize=1024)
def parse(text: str, languages: tuple[str, ...] | None = None) -> Phrase:
    """The shape of a phrase: clauses (negated, contrasting, content), question, ids; read
    with the closed-class words of the languages given, or of those it is in by them."""
    folded = fold(text)
    if languages is None:
        languages = language.detect(_segmented(folded), text)
    lex = lexicon.of(languages)
    # Pieces of text at even positions, the punctuation between them at odd ones.
    pieces = _BOUNDARY.split(folded)
    flat = [w for piece in pieces[::2] for w in _without_names(_split_words(piece, lex), lex)]
    # "Tu peux noter ...", "du kannst ...": the verb after a subject pronoun leads.
    # "¿Me puedes apuntar ...?", "te importa ...": and so does one after an object pronoun.
    # Fillers say nothing ("ähm, merk dir ...", "um so like ..."): the word after them leads.
    while flat[1:] and flat[0] in lex.FILLERS:
        flat = flat[1:]
    lead = flat
    while lead[1:] and (lead[0] in lex.SUBJECTS or lead[0] in lex.OBJECT_LEADS):
        lead = lead[1:]
    first = lead[0] if lead else ""
    untagged = _untagged(folded, lex)
    if untagged is not None:
        # A tag ("..., ja?", "..., do you?", "¿verdad?") asks of a statement, not of a request:
        # "you don't remember my order, do you?" asks; "merk dir das, ja?" asks for a save.
        asks = bool(flat) and (flat[0] in lex.SUBJECTS or flat[0] in lex.NEGATIONS)
        pieces = _BOUNDARY.split(untagged)
    else:
        asks = folded.strip().endswith("?") or "\u00bf" in text
    # A question opens with its word ("what ...", "¿qué ...") or, where the verb comes last,
    # ends with one ("...ますか").
    asks = asks or first in lex.QUESTION_LEADS or (bool(flat) and flat[-1] in lex.QUESTION_ENDS)
    polite = first in lex.REQUEST_LEADS and untagged is None
    question = asks and not polite and not _commands(flat, lex)
    clauses: list[Clause] = []
    content = acted = relative = False
    for number, piece in enumerate(pieces):
        if number % 2:
            # What follows a colon or a dash is the content: "save a memory: ...".
            content = content or piece.strip()[:1] in {":", "-", "=", "\u2013", "\u2014"}
            continue
        current: list[str] = []
        words = _without_names(_split_words(piece, lex), lex)
        for position, word in enumerate(words):
            rest = words[position + 1 :]
            if acted and not question and _opens_clause(word, rest, lex) and current:
                # "tell the org we're switching ...": the "that" English may leave out.
                clauses.append(_clause(current, content, lex))
                current, content = [], True
            if word in lex.RELATIVES and _names_one(current, lex):
                # "delete the entry that you just created", "l'entrée que vous venez de
                # créer": says which one; its verb is not what the phrase asks.
                clauses.append(_clause(current, content, lex))
                current, relative = [], True
                continue
            complementizer = acted and _introduces(word, rest, lex)
            wish = current or (list(clauses[-1].words) if clauses and not content else [])
            if complementizer and _wishes(wish, lex):
                # "quiero que recuerdes ...": the wanted clause is the request, not content;
                # a negation of the wanting negates it ("ya no quiero que lo recuerdes").
                if not current:
                    clauses.pop()
                current = [w for w in wish if w not in lex.VOLITION]
                continue
            if word in lex.CONJUNCTIONS or complementizer:
                if current:
                    clauses.append(_clause(current, content, lex, relative))
                current, relative = [], False
                content = content or complementizer
                continue
            acted = acted or (word not in lex.STOP and word not in lex.NEGATIONS)
            current.append(word)
        if current:
            clauses.append(_clause(current, content, lex, relative))
        relative = False
    ids = frozenset(m.group(1) for w in flat if (m := ID.match(w)))
    return Phrase(tuple(clauses), question, ids, languages)


def _untagged(folded: str, lex: lexicon.Words) -> str | None:
    """A question without its tag ("..., oder?", "..., do you?", ", ¿verdad?"), or None when it
    ends in no tag after a statement."""
    found = _TAG.search(folded)
    if found is None or not found.start():
        return None
    words = _split_words(found.group(1), lex)
    return folded[: found.start()] if all(w in lex.TAGS for w in words) else None


def _names_one(words: list[str], lex: lexicon.Words) -> bool:
    """Whether words end in a noun with its article or demonstrative ("the entry", "l'entrée",
    "esa nota"): a relative clause may follow ("commit to memory that ..." is no such noun)."""
    if words and words[-1] in lex.PLURAL_NOUNS:
        return True  # "delete things that I told you", "borrar cosas que te he contado"
    return (
        len(words) >= 2
        and words[-1] in lex.NOUNS
        and (words[-2] in lex.DETERMINERS or words[-2].isdigit())
    )


def _introduces(word: str, rest: list[str], lex: lexicon.Words) -> bool:
    """Whether a word introduces a clause ("note that we ...") rather than pointing at
    something ("delete that memory"): English "that" needs a clause after it."""
    if word not in lex.COMPLEMENTIZERS:
        return False
    if word not in lex.BARE_COMPLEMENTIZERS:
        return True
    # Not before a preposition or an item's noun: "put that in memory", "make that memory".
    if not rest or rest[0] in lex.PREPOSITIONS or rest[0] in lex.ITEMS:
        return False
    # Nor before its verb: "that's private, don't store it" ("that is").
    if rest[0] in lex.AUXILIARIES:
        return False
    return rest[0] in lex.STOP or len(rest) >= 3


def _wishes(words: list[str], lex: lexicon.Words) -> bool:
    """Whether a clause only wants or needs something ("je voudrais", "no hace falta")."""
    return not lex.VOLITION.isdisjoint(words) and all(
        w in lex.VOLITION
        or w in lex.STOP
        or w in lex.NEGATIONS
        or w in lex.SUBJECTS
        or w in lex.CESSATION
        for w in words
    )


def _opens_clause(word: str, rest: list[str], lex: lexicon.Words) -> bool:
    """Whether a subject and its auxiliary start a clause of their own ("... we are moving")."""
    return word in lex.CLAUSE_SUBJECTS and bool(rest) and rest[0] in lex.AUXILIARIES


def _commands(words: list[str], lex: lexicon.Words) -> bool:
    """Whether a phrase that looks like a question is an instruction ("don't forget ...")."""
    return any(tuple(words[: len(opening)]) == opening for opening in lex.COMMAND_OPENINGS)


def _without_names(words: list[str], lex: lexicon.Words) -> list[str]:
    """The words with the product's own name read as what it holds ("my memory bank") and set
    phrases read as what they say ("off the record" is "not record")."""
    out: list[str] = []
    i = 0
    replacements: list[tuple[tuple[str, ...], tuple[str, ...]]] = [
        (name, ("memory",)) for name in lexicon.PRODUCT_NAMES
    ]
    replacements += list(lex.IDIOMS.items())
    while i < len(words):
        for name, meaning in replacements:
            if tuple(words[i : i + len(name)]) == name:
                out.extend(meaning)
                i += len(name)
                break
        else:
            out.append(words[i])
            i += 1
    return out


def _clause(words: list[str], content: bool, lex: lexicon.Words, relative: bool = False) -> Clause:
    """A clause, with what its negations do."""
    negated = contrast = False
    for i, word in enumerate(words):
        if word not in lex.NEGATIONS:
            continue
        after = words[i + 1] if i + 1 < len(words) else ""
        contrasts = word not in lex.PREVERBAL_NEGATIONS  # French "ne" stands before a verb
        valued = after in lex.ARTICLES or after in lex.PLACING or after[:1].isdigit()
        if i == 0 and contrasts and valued:
            contrast = True
        elif after or i > 0:
            negated = True
    # A negation inside the content is part of what to save: "note that I don't eat pork".
    if relative:
        return Clause(tuple(words), False, False, False, True)
    return Clause(tuple(words), negated and not contrast and not content, contrast, content)


def meaningful(word: str, lex: lexicon.Words) -> bool:
    """Whether a word can say what to do (no grammar, no number, no id, no placeholder)."""
    return (
        word not in lex.STOP
        and word not in lex.NEGATIONS
        and word not in lex.TIME
        and word != SLOT
        and word not in lex.FILLERS
        and not word.isdigit()
        and ID.match(word) is None
        and len(word) > 1
    )
