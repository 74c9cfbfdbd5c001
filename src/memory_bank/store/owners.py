"""Owner keys: the shard key of every owner row is a user id, or an organisation's own key.

An org memory is stored under the key `org:<org id>`, in the same `user_id` column a personal
memory uses. Its postings, statistics, contexts and tombstones then follow their org the way a
user's follow the user: one org's saves never move another owner's scores, and every statement
on an owner table still names exactly one owner. User ids may not start with `org:`
(store/api_keys.py refuses them), so no user can alias an org.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import String

from memory_bank.store.schema import memory

ORG_PREFIX = "org:"
# An owner key must fit the owner columns.
_OWNER_TYPE = memory.c.user_id.type
assert isinstance(_OWNER_TYPE, String) and _OWNER_TYPE.length is not None
MAX_ORG_ID = _OWNER_TYPE.length - len(ORG_PREFIX)


def org_owner(org_id: str) -> str:
    """The owner key of an organisation's memories."""
    return ORG_PREFIX + org_id


def is_org(owner: str) -> bool:
    """Whether an owner key is an organisation's."""
    return owner.startswith(ORG_PREFIX)


def org_of(owner: str) -> str | None:
    """The org id of an org owner key; None for a user."""
    return owner[len(ORG_PREFIX) :] if is_org(owner) else None


@dataclass(frozen=True)
class Owner:
    """Who a row belongs to and where it came from: user_id is the owner key (a user, or an
    org's key for an org memory) and created_by the user who saved it."""

    user_id: str
    org_id: str | None
    source: str
    created_by: str | None = None

    @property
    def scope(self) -> str:
        """The scope a row of this owner shows: "org" for an org's key, else "user"."""
        return "org" if is_org(self.user_id) else "user"
