"""The closed-class words search_capabilities reads a phrase's shape with, in English, German,
French and Spanish: grammar, a few set phrases, and one class of verbs that says nothing about
which capability (those that ask to see something); no nouns.

What a phrase asks for is read from the capabilities' own text and the spec's example
phrasings (mcp/ranking/); these lists only say which words are grammar: which ones negate,
open a question or a polite request, introduce the content of a save ("that", "dass", "que"),
or say nothing at all. Words are written folded, as ranking.fold leaves them (lower case, no
accents), so "über" is "uber" and "qué" is "que".
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    """A set of words from a whitespace-separated list."""
    return frozenset(text.split())


# Words that negate the clause they are in ("don't", "vergiss nicht", "ne ... pas", "no lo").
NEGATIONS = _words(
    """not never no nothing nor neither
    nicht nie niemals kein keine keinen keinem keiner keines nichts
    ne n pas jamais rien aucun aucune
    nunca jamas nada ningun ninguna ninguno tampoco"""
)
# A negation followed by one of these (or a number) contrasts a value, it refuses no action:
# "the 19th, not the 18th", "der 19., nicht der 18.", "le 19, pas le 18", "el 19, no el 18".
ARTICLES = _words(
    """the a an der die das den dem des ein eine einen le la les l un une du el los las una"""
)
# ... or one of these, which place a value in time or space: "halb elf, nicht um zehn", "at
# noon, not at ten", "à midi, pas à dix heures", "en Sevilla, no en Madrid".
PLACING = _words("at on in um am im a en")
# A phrase opening with one of these asks (when it does not end with "?" it still asks).
QUESTION_LEADS = _words(
    """what which who whom whose when where why how did do does is are was were have has had
    any anything
    was welche welcher welches wer wen wem wann wo warum wie hast hab habe hatte gibt weisst
    qu quoi quel quelle quels quelles qui quand ou pourquoi comment est
    cual cuales quien quienes cuando donde como"""
)
# Subject pronouns a question or request may open with before its verb ("tu peux ...").
SUBJECTS = _words("you du ihr sie tu vous usted ustedes")
# ... unless it is a polite request for an action: "can you save that?", "kannst du ...".
REQUEST_LEADS = _words(
    """can could would will please
    kannst konntest wurdest konnen konnten wurden bitte
    peux pourrais pouvez pourriez
    puedes podrias puede podria
    waren auriez tendria merci veuillez"""
)
# What follows one of these after a verb is the content, not the request: "note that ...".
COMPLEMENTIZERS = _words("that dass que")
# Object pronouns a polite question may open with before its verb ("¿me puedes ...?").
OBJECT_LEADS = _words("me te nos os mir dir")
# Verbs of wanting or needing that take the request as their "that" clause, which is then
# no content to save but the request itself: "quiero que recuerdes ...", "il faut que tu
# retiennes ...", "ich möchte, dass du dir merkst ...", "no hace falta que lo guardes".
VOLITION = _words(
    """want wants need needs
    will willst mochte mochtest mochten wunsche
    veux veut voudrais voudrait voulais faut faudrait souhaite aimerais
    quiero quieres quisiera queria necesito hace falta gustaria ruego"""
)
# A later clause with one of these gives a new value for something the phrase drops: "scratch
# the old number, the new one is ...", "vergiss die alte Adresse, die neue ist ...": an edit.
REPLACEMENTS = _words(
    """new instead
    neu neue neuen neuer neues stattdessen
    nouveau nouvel nouvelle nouveaux nouvelles plutot
    nuevo nueva nuevos nuevas"""
)
# Set phrases read as the words they stand for: those that say "do not keep this" as a negated
# verb, so the ranking declines as for "don't record that" ("off the record: ...", "unter uns").
IDIOMS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("off", "the", "record"): ("not", "record"),
    # ... and set phrases that introduce something to keep: "for future reference, ...".
    ("for", "future", "reference"): ("note",),
    ("for", "the", "record"): ("note",),
    ("just", "so", "you", "know"): ("note",),
    ("fyi",): ("note",),
    ("mark", "down"): ("note",),
    # Asking whether something can be done asks for it: "is it possible to ...?", "se puede
    # ...?", "lässt sich ...?".
    ("is", "it", "possible", "to"): ("can",),
    ("is", "there", "a", "way", "to"): ("can",),
    ("lasst", "sich"): ("kannst",),
    ("est", "il", "possible", "de"): ("peux",),
    ("est", "ce", "que", "tu", "peux"): ("peux",),
    ("on", "peut"): ("peux",),
    ("es", "posible"): ("puedes",),
    ("se", "puede"): ("puedes",),
    # Not worth keeping is not to keep: "pas la peine de retenir ça".
    ("pas", "la", "peine"): ("pas",),
    # Discourse markers, which ask nothing: "on second thought, don't keep that", "en fait,
    # ...", "pensándolo bien, ...".
    ("on", "second", "thought"): (),
    ("en", "fait"): (),
    ("en", "realidad"): (),
    ("pensandolo", "bien"): (),
    ("zur", "info"): ("notiere",),
    ("pour", "info"): ("note",),
    ("pour", "memoire"): ("note",),
    ("para", "que", "conste"): ("anota",),
    ("between", "us"): ("not", "record"),
    ("unter", "uns"): ("nicht", "speichern"),
    ("entre", "nous"): ("ne", "retiens", "pas"),
    ("entre", "nosotros"): ("no", "guardes"),
    # A value given in place of another is a contrast, as "..., not ..." is: "make it say
    # 'quarterly' instead of 'monthly'", "'August' statt 'Juli'".
    ("instead", "of"): ("and", "not"),
    ("rather", "than"): ("and", "not"),
    ("statt",): ("und", "nicht"),
    ("anstatt",): ("und", "nicht"),
    ("au", "lieu", "de"): ("et", "pas"),
    ("plutot", "que"): ("et", "pas"),
    ("en", "lugar", "de"): ("y", "no"),
    ("en", "vez", "de"): ("y", "no"),
}
# Prepositions that name what something is about ("about the dentist", "sobre el dentista"):
# with the user's own word after one, a phrase names its subject, so it searches for it.
ABOUT = _words("about regarding concerning uber bezuglich sur concernant propos sobre acerca")
# Prepositions that name where something came from ("that came in from Slack", "die aus dem
# Kalender kamen"): a listing by source, not a subject.
ORIGINS = _words("from von aus desde del")
# Possessives, which may stand between one of those and the subject ("about my landlord").
POSSESSIVES = _words(
    """my our your his her their mein meine meinen meinem meiner unser unsere unseren dein
    deine mon ma mes notre nos ton ta tes son sa ses mi mis nuestro nuestra tu tus su sus"""
)
# English prepositions: "that" before one is a pronoun ("put that in memory"), no clause.
PREPOSITIONS = _words("in on at for to of from with about into onto by as over under")
# English auxiliaries written onto a word ("I'd", "we'll"), spelled out.
CLITICS = {"d": "would", "ll": "will", "re": "are", "ve": "have", "m": "am"}
# What an HTTP method does to what its path names, as the verb people use for it.
METHOD_VERBS = {"POST": "create", "PUT": "set", "PATCH": "update", "DELETE": "delete"}
# English subjects that, before an auxiliary, start a clause "that" was left out of: "tell
# the team we're moving", "note I'm away".
CLAUSE_SUBJECTS = _words("i we he she they")
AUXILIARIES = _words("am are is was were have has had will would")
# With a negation, these stop something that goes on ("not anymore", "nicht mehr", "ne ...
# plus"): not to remember any longer is to forget.
CESSATION = _words("anymore longer mehr plus")
# Clause boundaries besides punctuation: "denk dran und vergiss es nicht".
CONJUNCTIONS = _words("and but und aber et mais y pero")
# Words for "all of it": one word to the ranker, in every language ("alle", "todas").
ALL = _words("all everything every whole alle alles allen aller tous toutes tout todo todos todas")
# Grammar that says nothing about what to do.
STOP = _words(
    """a an the this that these those it its i me my mine we us our ours you your yours he him
    his she her they them their to of in on at for from by with about into as and or but if
    then so is are was were be been being am do does did done have has had having can could
    would will should shall may might must please just also yes ok okay there here some one
    each again than too very own i'm let's want like need now out
    ich mir mich mein dies diese diesen dieser dieses meine meinen meinem meiner du dir dich
    dein deine wir uns unser unsere
    ihr sie er es der die das den dem des ein eine einen einem einer und oder aber zu von mit
    fur auf in im an am aus bei uber um ist sind war waren bin bist hat haben habe hab hast
    wird werden kann kannst soll sollte muss musst bitte mal doch ja noch schon auch nur so
    dass da
    ca cela ceci je j me m moi mon ma mes tu t toi te ton ta tes il elle on nous vous ils
    elles le la les l
    un une des du de d et ou mais a au aux en dans sur pour par avec est sont etait ai as avons
    avez ont suis es ce c cet cette ces se s qu que y sil vous plait dois doit encore deja
    eso esto este esta ese esa yo mi mis me tu te ti tus el ella lo la los las le les un una
    unos unas y o pero de del a
    al en con por para sobre es son era esta estan he has ha hemos han se su sus que favor
    tengo tienes tiene hay todavia aun ya"""
)
# Formal politeness, which asks nothing itself: "kindly ...", "je vous prie de ...", "le ruego
# que ...", "wären Sie so freundlich, ...", "auriez-vous l'amabilité de ...".
STOP |= _words(
    "kindly freundlich prie ruego amabilite amabilidad auriez tendria merci veuillez proceda"
)
STOP |= _words("actually eigentlich")
# What an agent host calls an operation when it looks one up ("tool to persist a preference",
# "endpoint that reverts an edit", "outil pour ...", "herramienta para ..."): no action.
STOP |= _words(
    """tool tools capability capabilities endpoint endpoints function api operation
    werkzeug schnittstelle endpunkt funktion outil fonction herramienta funcion"""
)
# Question words: the question itself is a feature, the word is not ("who" is: it asks
# about people, as an audit log or a history answers).
STOP |= _words(
    """what which whom whose when where why how welche welcher welches was wann wo warum wie
    quoi quel quelle quels quelles quand ou pourquoi comment cual cuales cuando donde como"""
)
# Verbs that only ask to see something, one word in every language (by how they start), so
# that what is to be seen decides: "Enséñame el historial" is about the history.
VERB_CLASSES = {
    "show": ("show", "display", "zeig", "anzeig", "montre", "affich", "muestr", "ensen"),
}
# Words that point at one thing already in view ("that memory", "diesen Eintrag", "cette
# note", "esa nota"): with a noun the spec's examples use for an item, the phrase is about one.
DEMONSTRATIVES = _words(
    """this that these those dies diese diesen dieser dieses ce cet cette ces ese esa este esta
    esos esas estos estas"""
)
# The nouns for one stored thing (a memory, a draft): after a demonstrative they say the phrase
# is about one the agent has in view; which kind each names comes from the spec's examples.
ITEMS = _words(
    """memory note entry record draft
    erinnerung notiz eintrag entwurf
    souvenir memoire entree brouillon
    recuerdo nota memoria entrada borrador"""
)
# Relative pronouns: after a noun, what follows says which one ("the entry that you just
# created", "l'entrée que vous venez de créer", "la nota que guardaste").
RELATIVES = _words("that which que")
# The same nouns in the plural: a phrase about several is about a collection, not one item.
PLURAL_ITEMS = _words(
    """memories notes entries records drafts
    erinnerungen notizen eintrage entwurfe
    souvenirs memoires entrees brouillons
    recuerdos notas memorias entradas borradores"""
)
# Spanish pronouns written onto an imperative ("bórralo", "guárdalo", "muéstramelo"), longest
# first: the verb without them is what the examples spell.
ENCLITICS = tuple(
    sorted(
        _words(
            """selos selas melos melas telos telas noslo nosla selo sela melo mela telo tela
            nos los las les me te se lo la le"""
        ),
        key=lambda pronoun: (-len(pronoun), pronoun),
    )
)
# Endings that inflect a verb or a noun ("merken", "looked", "guardes"), longest first: a word
# the spec spells plus one of them is that word.
ENDINGS = tuple(
    sorted(
        _words("s es ed d ing e en n t st et te ten r er ez ent ons o a as an ar ir"),
        key=lambda ending: (-len(ending), ending),
    )
)
# The verb "to be" after a subject: a phrase that asks nothing and names no action but says
# what something is states a fact ("my sister's birthday is on March 3rd", "der Schlüssel ist
# beim Hausmeister").
COPULAS = _words(
    """is are was were am ist sind war waren bin est sont suis etait etaient es son esta estan
    soy estoy era eran estaba
    called named heisst lautet appelle llama"""
)
# With a stated fact, these say it replaces an older one: "my manager is now Tom", "ahora vivo
# en Sevilla".
NOW = _words("now jetzt nun maintenant desormais ahora")
# When something was saved or changed: a filter, never the user's own subject.
TIME = _words(
    """yesterday today tonight week weeks month months year ago since recently lately earlier
    gestern vorgestern heute woche wochen monat monaten jahr seit kurzlich neulich bisher
    hier aujourd aujourdhui semaine semaines mois annee depuis recemment jusqu ici
    ayer anteayer hoy semana semanas mes meses ano desde recientemente pasada pasado hasta
    ahora"""
)
# Words that point back in time: with an addition and nothing to add, they ask for what was
# added ("the latest ten things you noted", "seit Montag hinzugekommen").
RECENT = _words(
    """last latest recent recently lately ago since newest yesterday letzte letzten zuletzt
    neueste neuesten seit gestern kurzlich dernier derniere derniers dernieres recemment depuis
    hier ultimo ultima ultimos ultimas reciente recientes recientemente desde ayer"""
)
# The product's own name says nothing about what to do with it.
PRODUCT_NAMES = (("memory", "bank"), ("memory-bank",))
# English contractions, spelled out so "don't" negates and "what's" asks.
CONTRACTIONS = {
    "don't": "do not",
    "dont": "do not",
    "doesn't": "does not",
    "didn't": "did not",
    "shouldn't": "should not",
    "wouldn't": "would not",
    "couldn't": "could not",
    "can't": "can not",
    "cannot": "can not",
    "won't": "will not",
    "isn't": "is not",
    "aren't": "are not",
    "wasn't": "was not",
    "haven't": "have not",
    "hasn't": "has not",
    "what's": "what is",
    "that's": "that is",
    "it's": "it is",
    "where's": "where is",
    "who's": "who is",
    "when's": "when is",
    "how's": "how is",
    "i'm": "i am",
    "i've": "i have",
    "you've": "you have",
    "we've": "we have",
    "you're": "you are",
    "let's": "let us",
}
# Nouns a relative clause may follow: one stored thing or several, and "thing" itself.
PLURAL_NOUNS = PLURAL_ITEMS | _words("things ones trucs dinge sachen cosas")
NOUNS = ITEMS | PLURAL_NOUNS | _words("thing one truc cosa")
# What stands before such a noun: an article, a demonstrative, a possessive, "all", "last".
DETERMINERS = (
    ARTICLES
    | DEMONSTRATIVES
    | POSSESSIVES
    | ALL
    | _words("last latest letzte letzten dernier derniere derniers ultimo ultima ultimos ultimas")
)
