"""Who may do what to a memory: the one place the organisation rules live.

A memory's owner key (store/owners.py) is its user, or its organisation. Reading needs the
operation's scope (mcp:read) and the owner: yourself, or your key's org. Changing (delete, and
edit once it exists) a personal memory is its user's; an org memory is its creator's with
org:write, or any member's with org:admin. What a principal cannot read does not exist for
them (404, like a missing id); what they can read but not change is a 403 insufficient_scope.
Every operation that touches a memory or draft asks here, so edits and revisions can too.
"""

from __future__ import annotations

from typing import Literal

from memory_bank.auth import Principal
from memory_bank.errors import Forbidden, InsufficientScope, OrgScopeForbidden
from memory_bank.store import owners

READ = "mcp:read"
ORG_WRITE = "org:write"
ORG_ADMIN = "org:admin"
REVIEW = "memory:review"

Scope = Literal["user", "org"]


def readable_owners(principal: Principal, scope: str = "all") -> list[str]:
    """The owner keys whose memories the principal reads, narrowed by a scope filter."""
    found = []
    if scope in ("user", "all"):
        found.append(principal.user_id)
    if scope in ("org", "all") and principal.org_id is not None:
        found.append(owners.org_owner(principal.org_id))
    return found


def can_read(principal: Principal, owner: str) -> bool:
    """Whether the principal may read memories of this owner key."""
    return owner in readable_owners(principal)


def may_read(principal: Principal) -> bool:
    """Whether the principal reads memories at all (mcp:read); a write-only key does not."""
    return principal.has(READ)


def check_read(principal: Principal) -> None:
    """403 insufficient_scope (mcp:read) when a write asks for what reads memories back."""
    if not may_read(principal):
        raise InsufficientScope(READ)


def save_owner(principal: Principal, scope: str | None) -> str:
    """The owner key a save with this scope goes to; 403 org_scope_forbidden when not allowed."""
    if scope in (None, "user"):
        return principal.user_id
    if principal.org_id is None:
        raise OrgScopeForbidden("This credential belongs to no organisation; save without scope.")
    if not principal.has(ORG_WRITE):
        raise OrgScopeForbidden("Saving to the organisation needs the 'org:write' scope.")
    return owners.org_owner(principal.org_id)


def may_change(principal: Principal, owner: str, created_by: str | None) -> bool:
    """Whether the principal may delete (or edit) a memory it can read."""
    if not owners.is_org(owner):
        return owner == principal.user_id
    if not can_read(principal, owner):
        return False
    if principal.has(ORG_ADMIN):
        return True
    return principal.has(ORG_WRITE) and created_by == principal.user_id


def check_change(principal: Principal, owner: str, created_by: str | None) -> None:
    """403 insufficient_scope unless the principal may change this readable memory."""
    if may_change(principal, owner, created_by):
        return
    own = created_by == principal.user_id
    # Its creator lacks org:write; anyone else needs org:admin.
    raise InsufficientScope(ORG_WRITE if own and not principal.has(ORG_WRITE) else ORG_ADMIN)


def may_repeat_delete(principal: Principal, owner: str) -> bool:
    """Whether a repeated delete of this owner's memory (tombstoned) answers 204 again."""
    if not owners.is_org(owner):
        return owner == principal.user_id
    return can_read(principal, owner) and (principal.has(ORG_WRITE) or principal.has(ORG_ADMIN))


def draft_owners(principal: Principal) -> list[str]:
    """Owner keys whose drafts the principal reviews (memory:review): its own and its org's."""
    return readable_owners(principal)


def may_see_draft(principal: Principal, owner: str, created_by: str | None) -> bool:
    """A draft is seen by its owner user, or, for an org draft, its creator and org reviewers."""
    if not owners.is_org(owner):
        return owner == principal.user_id
    if not can_read(principal, owner):
        return False
    return created_by == principal.user_id or principal.has(REVIEW)


def check_audit(principal: Principal) -> str:
    """The org whose audit log the principal reads (org:admin is checked by the spec)."""
    if principal.org_id is None or not principal.has(ORG_ADMIN):
        raise Forbidden("Only an organisation's administrator (org:admin) reads its audit log.")
    return principal.org_id


def scope_of(owner: str) -> Scope:
    """The scope a memory of this owner key shows."""
    return "org" if owners.is_org(owner) else "user"
