"""Owner keys: the shard key of every owner row is a user id, or an organisation's own key.

An org memory is stored under the key `org:<org id>`, in the same `user_id` column a personal
memory uses. Its postings, statistics, contexts and tombstones then follow their org the way a
user's follow the user: one org's saves never move another owner's scores, and every statement
on an owner table still names exactly one owner. User ids may not start with `org:`
(store/keys.py refuses them), so no user can alias an org.
"""

from __future__ import annotations

ORG_PREFIX = "org:"
# An owner key must fit the 128-character owner columns.
MAX_ORG_ID = 128 - len(ORG_PREFIX)


def org_owner(org_id: str) -> str:
    """The owner key of an organisation's memories."""
    return ORG_PREFIX + org_id


def is_org(owner: str) -> bool:
    """Whether an owner key is an organisation's."""
    return owner.startswith(ORG_PREFIX)


def org_of(owner: str) -> str | None:
    """The org id of an org owner key; None for a user."""
    return owner[len(ORG_PREFIX) :] if is_org(owner) else None
