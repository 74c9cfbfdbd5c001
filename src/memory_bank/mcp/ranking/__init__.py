"""Rank capabilities for a plain-language phrase: deterministic, from the spec's own words.

Six jobs, one module each: phrase.py reads a phrase's shape, capability_index.py indexes the
capabilities' texts, rules.py turns the shape into scores and the answer, blend.py adds
meaning with an embedding model, learned.py adds a model fitted on the spec's texts alone
(learn.py fits it), nearest.py can add the closeness of the spec's nearest examples by
character n-grams (off: NEAREST_WEIGHT is 0, tuning.json says why; vocabulary.py tells it a
misspelt request word from the user's own subject); the constants they were tuned with are
data (tuning.json, tuned by tune.py).

Every capability has documents: its title, its summary, what its method and path say a change
does ("create memory"), and the example phrasings the spec gives it (`x-mcp-examples`, in
every language the spec has, with "…" where the user's own content goes). A phrase
is compared with each of them by words, word stems and character n-grams (so "Lösch",
"löschen" and "lösche" meet), weighted by how few capabilities use them; a capability scores
its best document's similarity, plus a little of all its text together.

Before that, the phrase's shape is read with closed-class words only, those of the language it
is in (mcp/lexicon.py, mcp/language.py; the index tells it from the examples too): its
clauses (an English one may start without its "that": "tell the team we're moving"), which
of them are negated, whether it asks, what part is the content to save, ids, and words no
capability uses (its topic). Negation and correction are then handled explicitly:

- a negated clause that matches a negated example means what that example's capability does
  ("don't remember that" is one of the delete's examples), unless the phrase also declines the
  save it would undo ("between us, no need to remember it");
- a negated "forget" is a save ("don't forget ...", "vergiss nicht, dass ..."), and a negated
  save that stops ("not ... anymore", "nicht mehr", "ne ... plus") forgets;
- any other negated action is declined ("never mind, don't save that"): no capability, unless
  another clause asks for a different one ("you shouldn't have kept that, delete it");
- a negated clause after a clear request gives a reason ("delete that memory, it's not true
  anymore"), it changes nothing the request asks;
- a contrast ("the 19th, not the 18th"), or a later clause giving a new value ("scratch the
  old number, the new one is ..."), is a correction: an edit;
- a listing of what is "about" the user's own words ("what have you saved about the
  dentist?", "¿qué tienes sobre el alquiler?") is a search;
- a question about adding to a collection ("what did I save last week?") reads it, one about
  editing an item or acting on one ("who changed this note last?") reads the nearest
  collection under or above it (its history), and one mostly in the user's own words ("what
  time is my dentist appointment?") is a search;
- a clause that only wants or needs ("quiero que ...", "il faut que ...", "ich möchte, dass
  ...") makes its "that" clause the request, not content to save, with its negation;
- an id, or "that memory" ("cette note", "diesen Eintrag"), favours the capabilities that take
  such an id; items in the plural and none alone favour those on a collection;
- a relative clause after a noun says which item, not what to do ("delete the entry that you
  just created"); with the user's own words in it, a listing is a search ("the memories that
  mention Berlin");
- a frame before a colon, a dash or an arrow that names no action reports the request after
  it ("user said: remember I'm vegan"); an agent's terse intent names its action before the
  colon and its subject after it ("recall: the Q3 budget");
- a refusal followed by another request refuses only ("no wait, not delete it, just tell me
  what you had about ..."), also when speech runs them together without punctuation;
- the user's own subject after "about" costs the request's words nothing ("delete the thing
  about my old gym membership");
- content handed over, or a fact stated ("my sister's birthday is on March 3rd"), with no
  action named and no question is something to keep, or an edit when it is so "now";
- an addition that points back in time with nothing to add reads what was added ("the latest
  ten things you noted").

Before comparing, a phrase's words are spelled as the capabilities' text spells them (a
Spanish imperative without its pronouns, a compound of two known words, a German imperative
with or without its "e", an inflection its stem does not find, the other English spelling, two
words written as one), so one example covers its inflected forms.

A phrase that names no action but has a topic goes to the capability the spec marks
`x-mcp-fallback` (search): "what did we decide last week", "zebra quantum".

With an embedding model (semantic search on and its model ready; mcp/server.py), an English
phrase (mcp/language.py) is also compared in meaning with each capability's texts: each
capability the words found keeps less of its score the further it is behind the closest one
(SEMANTIC_WEIGHT), before the fallback and the declined check; the model reorders, it adds
and removes nothing. The default model is English and ranks German, French and
Spanish phrases worse than the words do, so those are ranked by words alone. Without a model,
or when it fails, the ranking is the lexical one, unchanged (tests/mcp/lexical_ranking.json).
"""

from __future__ import annotations

from memory_bank.mcp.ranking.blend import VECTORS, Embedder, prepare, prepared
from memory_bank.mcp.ranking.phrase import PLACEHOLDER, Clause, Phrase, fold, parse
from memory_bank.mcp.ranking.rules import Answer, answer, rank

__all__ = [
    "PLACEHOLDER",
    "VECTORS",
    "Answer",
    "Clause",
    "Embedder",
    "Phrase",
    "answer",
    "fold",
    "parse",
    "prepare",
    "prepared",
    "rank",
]
