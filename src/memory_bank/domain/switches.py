"""The operator's kill switches: memory off for everyone, or for one user."""

from __future__ import annotations

from memory_bank.errors import MemoryDisabledForUser, MemorySwitchedOff
from memory_bank.settings import Settings
from memory_bank.store.user_settings import UserSettings


def check(settings: Settings, user_settings: UserSettings) -> None:
    """Refuse memory work when it is switched off: server-wide (503), then for this user (403)."""
    if not settings.memory_enabled:
        raise MemorySwitchedOff(
            "Memory is switched off on this server by its operator; nothing can be saved or "
            "recalled until it is switched back on."
        )
    if user_settings.memory_disabled:
        raise MemoryDisabledForUser(
            "Memory is switched off for this user by the operator; nothing can be saved or "
            "recalled for this user until it is switched back on."
        )
