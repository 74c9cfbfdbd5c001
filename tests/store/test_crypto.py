"""The primitives: keys wrap for one owner, fields open only where they were sealed, terms hash
per owner, and damaged key material is a KeyProblem naming what is wrong."""

from __future__ import annotations

import pytest

from memory_bank.store.sealing import crypto


def test_a_data_key_unwraps_only_for_its_owner_and_master():
    master, other = crypto.new_master_key(), crypto.new_master_key()
    data_key = crypto.new_data_key()
    wrapped = crypto.wrap(master, "user:alice", data_key)
    assert crypto.unwrap(master, "user:alice", wrapped) == data_key
    assert data_key.hex() not in wrapped
    with pytest.raises(crypto.KeyProblem):
        crypto.unwrap(master, "user:bob", wrapped)
    with pytest.raises(crypto.KeyProblem):
        crypto.unwrap(other, "user:alice", wrapped)
    assert master.fingerprint != other.fingerprint and len(master.fingerprint) == 16
    assert crypto.encode_master_key(master) not in repr(master)


def test_a_sealed_field_opens_only_for_its_owner_column_and_row():
    raw = crypto.new_data_key()
    alice = crypto.DataKey("user:alice", raw)
    sealed = alice.seal("memory.content", "mem_1", "the secret plan")
    assert crypto.is_sealed(sealed) and "secret" not in sealed
    assert alice.open("memory.content", "mem_1", sealed) == "the secret plan"
    assert alice.seal("memory.content", "mem_1", "the secret plan") != sealed  # fresh nonce
    for owner, column, row in (
        ("user:alice", "memory.content", "mem_2"),
        ("user:alice", "memory.tags", "mem_1"),
        ("user:bob", "memory.content", "mem_1"),
    ):
        with pytest.raises(crypto.Unreadable):
            crypto.DataKey(owner, raw).open(column, row, sealed)
    tampered = sealed[:-2] + ("A" if sealed[-2] != "A" else "B") + sealed[-1]
    with pytest.raises(crypto.Unreadable):
        alice.open("memory.content", "mem_1", tampered)
    with pytest.raises(crypto.Unreadable):
        alice.open("memory.content", "mem_1", "plain text")


def test_terms_hash_the_same_for_one_owner_and_differently_for_another():
    alice = crypto.DataKey("user:alice", crypto.new_data_key())
    bob = crypto.DataKey("user:bob", crypto.new_data_key())
    assert alice.term("paris") == alice.term("paris")
    assert alice.term("paris") != alice.term("pari")
    assert alice.term("paris") != bob.term("paris")
    assert alice.term("paris").startswith(crypto.HASHED_TERM_PREFIX)
    assert len(alice.term("paris")) <= 64  # fits memory_term.term


@pytest.mark.parametrize(
    ("text", "says"),
    [("not base64!", "not valid base64"), ("c2hvcnQ=", "must be 32 bytes")],
)
def test_a_damaged_master_key_is_named(text, says):
    with pytest.raises(crypto.KeyProblem, match=says):
        crypto.parse_master_key(text)


def test_a_key_file_is_private_and_never_overwritten(tmp_path):
    path = tmp_path / "k"
    master = crypto.new_master_key()
    crypto.write_master_key_file(str(path), master)
    assert path.stat().st_mode & 0o777 == 0o600
    assert crypto.read_master_key_file(str(path)) == master
    with pytest.raises(FileExistsError):
        crypto.write_master_key_file(str(path), crypto.new_master_key())
    with pytest.raises(crypto.KeyProblem, match="cannot read"):
        crypto.read_master_key_file(str(tmp_path / "missing"))
