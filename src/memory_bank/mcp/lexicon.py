"""The words search_capabilities reads intent from: actions, objects and sentence shape.

General English for a memory bank, not phrase-to-tool rules: each tool's own summary says which
action and objects it is about (mcp/ranking.py reads them with this same lexicon), so a new
operation ranks well from its summary unless it brings a verb no entry knows.
"""

from __future__ import annotations

# concept -> "word word ... |multi-word phrase|another phrase" (lower case, matched whole).
ACTIONS: dict[str, str] = {
    "create": "save saving store remember note jot record memorize memorise add keep "
    "|keep in mind|make a note|don't forget|do not forget|never forget|write down|jot down",
    "find": "find search searching recall know lookup query retrieve relevant mention "
    "mentioned said tell told |look up|anything about|did i tell|have i told|did i say",
    "list": "list browse all everything page newest recent |next page|so far|all my",
    "fetch": "open fetch details detail full citation citations context contexts id "
    "|come from|by its id|with id",
    "read": "show see view display get give check status look |look at",
    "delete": "delete forget remove erase drop scrap |stop remembering|get rid of",
    "edit": "edit update change correct fix modify amend reword rewrite typo |change it",
    "restore": "restore undo revert rollback recover undelete |roll back|bring back",
    "export": "export download backup dump takeout |copy of|take out",
    "confirm": "approve confirm accept",
    "reject": "reject discard decline dismiss deny |throw away|throw that",
    "configure": "enable disable require |turn on|turn off|switch on|switch off|stop requiring",
    "signin": "signin login exchange trade |sign in|log in|sign-in",
}
OBJECTS: dict[str, str] = {
    "memory": "memory memories saved stored remembered notes",
    "draft": "draft drafts pending queue unconfirmed awaiting waiting suggested",
    "review": "review reviewed reviews reviewing approval",
    "history": "history revision revisions version versions original earlier edits changes "
    "|before the edit|said before|previous versions|previous version",
    "settings": "settings setting required requirement expire expires lifetime "
    "|how long|must be reviewed|need review|needs review",
    "audit": "audit log logs compliance admin admins organisation organization org team "
    "accessed |who accessed",
    "file": "file json data",
    "prompt": "prompt instructions snippet markdown |system prompt|without mcp|set up",
    "panel": "panel one-time code key session web",
    "health": "health alive running liveness up process",
    "ready": "ready readiness database db reachable migrated serve",
}
# "Show ..." or "Get ..." says to read, not how: a listing or one item, by the answer's shape.
GENERIC_ACTIONS = frozenset({"read"})
# Objects a tool is specifically about; a tool about one the phrase never names is unlikely.
SPECIFIC_OBJECTS = frozenset(
    {"draft", "settings", "audit", "prompt", "panel", "health", "ready", "file", "history"}
)
# What naming an object is worth when a tool is about it (any other object: SPECIFIC_WEIGHT).
OBJECT_WEIGHTS = {"memory": 1.0, "review": 2.0}
SPECIFIC_WEIGHT = 4.0

# Words that shape a sentence but carry no action, object or topic.
STOP = frozenset(
    """a an the this that these those it its it's i me my mine we us our you your yours he she
    they them their to of in on at for from by with about into as and or but if then so is are
    was were be been being am do does did done have has had having can could would will should
    shall may might must please just also yes no ok okay nope what which who whom when where why
    how there here some any one every each now again last first than too very not don't
    i'm i've you've we've you're let's want like need own""".split()  # noqa: SIM905
)
QUESTION_LEADS = frozenset(
    """what which who whom when where why how did do does is are was were have has had can
    could would will any anything""".split()  # noqa: SIM905
)
# Polite requests look like questions but ask for an action ("can you save that?").
REQUEST_LEADS = frozenset({"can", "could", "would", "will", "please"})
# Verbs that save in a command but ask in a question ("remember X" / "do you remember X?").
RECALL_IN_QUESTIONS = frozenset(
    {"remember", "know", "tell", "told", "said", "mention", "mentioned", "note"}
)
PLURALS = frozenset({"drafts", "memories", "versions", "revisions", "notes", "events", "logs"})
SINGULARS = frozenset({"draft", "memory", "version", "revision", "note"})
CONTRACTIONS = {
    "don't": "do not",
    "didn't": "did not",
    "doesn't": "does not",
    "what's": "what is",
    "it's": "it is",
    "i'm": "i am",
    "you've": "you have",
    "i've": "i have",
    "we've": "we have",
    "can't": "can not",
    "won't": "will not",
    "isn't": "is not",
    "that's": "that is",
}
# The product's own name says nothing about what to do with it.
PRODUCT_NAMES = (("memory", "bank"), ("memory-bank",))
