"""Envelope encryption primitives: the master key, owners' data keys, sealed fields, term hashes.

The one place that touches key material. A master key (from a file or a setting) wraps one
random data key per owner; from a data key come two sub-keys (HKDF): one seals text fields with
AES-256-GCM, binding the owner, the column and the row id as associated data (a ciphertext
moved to another row, column or owner fails to open), the other hashes index terms (HMAC-SHA256),
so postings hold no words. Storage (store/sealing/data_keys.py) decides when these are used; later
tables call the same functions (docs/security.md, "Rules for new tables").
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

# Every sealed value starts with this, so a reader can tell sealed text from plain text (the
# state of each owner still decides which is acceptable: see data_keys.Sealer.open).
SEALED_PREFIX = "mbe1:"
# Hashed index terms start with a character the analyzer never puts in a term.
HASHED_TERM_PREFIX = "#"
KEY_BYTES = 32
_NONCE_BYTES = 12
_TERM_BYTES = 16


class KeyProblem(Exception):
    """A master or data key that cannot be used (wrong, damaged, missing)."""


class Unreadable(Exception):
    """A sealed value that does not open for this owner, column and row (fails closed)."""


@dataclass(frozen=True)
class MasterKey:
    """The deployment's key-encryption key, and its public fingerprint."""

    key: bytes

    @property
    def fingerprint(self) -> str:
        """A short public id of this key (stored next to what it wrapped; reveals nothing)."""
        return hmac.new(self.key, b"memory-bank master key id", hashlib.sha256).hexdigest()[:16]

    def __repr__(self) -> str:
        return f"MasterKey(fingerprint={self.fingerprint})"


def new_master_key() -> MasterKey:
    """A fresh random master key."""
    return MasterKey(secrets.token_bytes(KEY_BYTES))


def encode_master_key(master: MasterKey) -> str:
    """The text form written to a key file (base64, one line)."""
    return base64.b64encode(master.key).decode("ascii")


def parse_master_key(text: str) -> MasterKey:
    """A master key from its base64 text; KeyProblem naming what is wrong."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise KeyProblem("the master key is not valid base64") from None
    if len(raw) != KEY_BYTES:
        raise KeyProblem(f"the master key must be {KEY_BYTES} bytes, found {len(raw)}")
    return MasterKey(raw)


def read_master_key_file(path: str) -> MasterKey:
    """A master key from its file; KeyProblem when it is missing or damaged."""
    try:
        text = Path(path).expanduser().read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise KeyProblem(f"cannot read the master key file {path}: {exc}") from None
    return parse_master_key(text)


def write_master_key_file(path: str, master: MasterKey) -> Path:
    """Write a new key file readable by its owner only (0600); refuse to overwrite one."""
    target = Path(path).expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(encode_master_key(master) + "\n")
    os.chmod(target, 0o600)
    return target


def new_data_key() -> bytes:
    """A fresh random data key for one owner."""
    return secrets.token_bytes(KEY_BYTES)


def _b64(raw: bytes) -> str:
    """URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    """The inverse of _b64."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _wrap_aad(owner: str) -> bytes:
    """What a wrapped data key is bound to: its owner."""
    return b"memory-bank/data-key/v1|" + owner.encode("utf-8")


def wrap(master: MasterKey, owner: str, data_key: bytes) -> str:
    """A data key sealed by the master key for this owner, as text."""
    nonce = secrets.token_bytes(_NONCE_BYTES)
    return _b64(nonce + AESGCM(master.key).encrypt(nonce, data_key, _wrap_aad(owner)))


def unwrap(master: MasterKey, owner: str, wrapped: str) -> bytes:
    """The data key of this owner; KeyProblem when the master key or the owner is wrong."""
    try:
        raw = _unb64(wrapped)
        return AESGCM(master.key).decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], _wrap_aad(owner))
    except (InvalidTag, ValueError, binascii.Error):
        raise KeyProblem(f"the data key of {owner} does not open with this master key") from None


def _subkey(data_key: bytes, purpose: bytes) -> bytes:
    """A key for one purpose, derived from an owner's data key."""
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=purpose).derive(
        data_key
    )


class DataKey:
    """One owner's unwrapped data key: seals and opens fields, hashes terms."""

    __slots__ = ("_aead", "_owner", "_term_key")

    def __init__(self, owner: str, data_key: bytes) -> None:
        self._owner = owner
        self._aead = AESGCM(_subkey(data_key, b"memory-bank/fields/v1"))
        self._term_key = _subkey(data_key, b"memory-bank/terms/v1")

    def __repr__(self) -> str:
        return f"DataKey(owner={self._owner!r})"

    def _aad(self, column: str, row_id: str) -> bytes:
        """Owner, column ("table.column") and row id: where this ciphertext belongs."""
        return f"memory-bank/field/v1|{self._owner}|{column}|{row_id}".encode()

    def seal(self, column: str, row_id: str, text: str) -> str:
        """Encrypt a field's text for this owner, column and row."""
        nonce = secrets.token_bytes(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, text.encode("utf-8"), self._aad(column, row_id))
        return SEALED_PREFIX + _b64(nonce + sealed)

    def open(self, column: str, row_id: str, value: str) -> str:
        """Decrypt a sealed field; Unreadable when it was sealed for anything else."""
        if not value.startswith(SEALED_PREFIX):
            raise Unreadable(f"{column} of {row_id} is not sealed")
        try:
            raw = _unb64(value[len(SEALED_PREFIX) :])
            plain = self._aead.decrypt(
                raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], self._aad(column, row_id)
            )
        except (InvalidTag, ValueError, binascii.Error):
            raise Unreadable(f"{column} of {row_id} does not open for its owner") from None
        return plain.decode("utf-8")

    def term(self, term: str) -> str:
        """The keyed hash an index term is stored and looked up as."""
        digest = hmac.new(self._term_key, term.encode("utf-8"), hashlib.sha256).digest()
        return HASHED_TERM_PREFIX + _b64(digest[:_TERM_BYTES])


def is_sealed(value: str | None) -> bool:
    """Whether a stored value is sealed text."""
    return value is not None and value.startswith(SEALED_PREFIX)
