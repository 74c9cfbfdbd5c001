"""The Spider layout's pieces that need no cluster: which table a migration statement changes,
the head's definition of an owner table, the statement filter, and a single server's layout."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlalchemy as sa

from memory_bank.store import shards
from memory_bank.store.engine import make_engine
from memory_bank.store.migrate import migrate
from memory_bank.store.schema import metadata, owner_tables


@pytest.mark.parametrize(
    ("statement", "table"),
    [
        ("ALTER TABLE memory ADD COLUMN x INT", "memory"),
        ("ALTER TABLE `memory_term` DROP FOREIGN KEY f", "memory_term"),
        ("CREATE TABLE api_key (id INT)", "api_key"),
        ("CREATE TABLE IF NOT EXISTS `org_audit` (id INT)", "org_audit"),
        ("DROP TABLE IF EXISTS vector_version", "vector_version"),
        ("CREATE INDEX ix_memory_id ON memory (id)", "memory"),
        ("CREATE UNIQUE INDEX `ix` ON `api_key` (prefix)", "api_key"),
        ("DROP INDEX ix_memory_id ON memory", "memory"),
        ("INSERT INTO alembic_version (version_num) VALUES ('0010')", "alembic_version"),
        ("  update memory SET revision = revision + 1", "memory"),
        ("DELETE FROM memory_draft WHERE user_id = %s", "memory_draft"),
        ("SELECT * FROM memory", None),
        ("SHOW CREATE TABLE memory", None),
    ],
)
def test_a_statement_names_the_table_it_changes(statement, table):
    assert shards.changed_table(statement) == table


def test_the_owner_tables_and_the_head_tables_split_every_table():
    owners = {t.name for t in owner_tables()}
    assert {"memory", "memory_context", "memory_term", "org_audit", "embedding_job"} <= owners
    assert shards.head_tables() == set(metadata.tables) - owners
    assert {"api_key", "service_state", "owner_key", "user_settings"} <= shards.head_tables()
    for table in owner_tables():
        assert table.primary_key.columns.values()[0].name == "user_id", table.name
        assert not table.foreign_keys, table.name


BACKEND_DDL = """CREATE TABLE `embedding_job` (
  `id` bigint(20) NOT NULL AUTO_INCREMENT,
  `user_id` varchar(128) NOT NULL,
  PRIMARY KEY (`user_id`,`id`),
  KEY `ix_embedding_job_id` (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=7 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"""


def test_the_heads_definition_keeps_the_columns_and_keys_and_partitions_by_owner():
    found = shards.name_backends("memory_bank", ["mysql+pymysql://a/x", "mysql+pymysql://b/x"])
    assert [b.server for b in found] == ["mb_memory_bank_shard0", "mb_memory_bank_shard1"]
    ddl = shards.spider_definition("embedding_job", BACKEND_DDL, found, "embedding_job__new")
    assert ddl.startswith("CREATE TABLE `embedding_job__new` (\n  `id` bigint(20)")
    assert "KEY `ix_embedding_job_id` (`id`)\n)" in ddl
    assert "ENGINE=SPIDER" in ddl and "AUTO_INCREMENT=" not in ddl and "InnoDB" not in ddl
    assert 'COMMENT=\'wrapper "mysql", table "embedding_job", aim "2"\'' in ddl
    assert ddl.endswith(
        "PARTITION BY KEY (user_id) (PARTITION p0 COMMENT = 'srv \"mb_memory_bank_shard0\"', "
        "PARTITION p1 COMMENT = 'srv \"mb_memory_bank_shard1\"')"
    )
    with pytest.raises(ValueError):
        shards.name_backends("bad-name;", ["mysql+pymysql://a/x"])


def test_the_filter_sends_no_change_to_skipped_tables_and_still_reads(mariadb_url):
    engine = make_engine(mariadb_url, 1)
    try:
        with engine.begin() as conn:
            for name in ("kept_here", "kept_elsewhere"):
                conn.exec_driver_sql(f"CREATE TABLE IF NOT EXISTS {name} (n INT)")
            restore = shards.only_changes(conn, {"kept_elsewhere"})
            conn.exec_driver_sql("INSERT INTO kept_here VALUES (1)")
            conn.execute(sa.text("INSERT INTO kept_elsewhere VALUES (:n)"), [{"n": 1}, {"n": 2}])
            conn.exec_driver_sql("INSERT INTO kept_elsewhere VALUES (3)")
            assert conn.exec_driver_sql("SELECT COUNT(*) FROM kept_elsewhere").scalar() == 0
            restore()
            conn.exec_driver_sql("INSERT INTO kept_elsewhere VALUES (4)")
            counts = [
                conn.exec_driver_sql(f"SELECT COUNT(*) FROM {name}").scalar()
                for name in ("kept_here", "kept_elsewhere")
            ]
            for name in ("kept_here", "kept_elsewhere"):
                conn.exec_driver_sql(f"DROP TABLE {name}")
        assert counts == [1, 1]
    finally:
        engine.dispose()


def test_a_single_server_has_no_backends(database_url):
    engine = make_engine(database_url, 1)
    try:
        with engine.connect() as conn:
            assert shards.backends(conn) == []
        migrate(engine)
        with engine.connect() as conn:
            assert shards.backends(conn) == []
            if engine.dialect.name != "sqlite":
                assert shards.unreachable(conn, []) == []
    finally:
        engine.dispose()


def test_the_vitess_vschema_shards_every_owner_table_by_owner_and_keeps_the_rest_unsharded():
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    keyspaces = json.loads((root / "docker" / "vitess" / "vschema.json").read_text())["keyspaces"]
    sharded, main = keyspaces["memory_bank"], keyspaces["memory_bank_main"]
    assert sharded["sharded"] and not main["sharded"]
    assert sharded["vindexes"] == {"xxhash": {"type": "xxhash"}}
    assert set(sharded["tables"]) == {t.name for t in owner_tables()}
    for name, table in sharded["tables"].items():
        assert table["column_vindexes"] == [{"column": "user_id", "name": "xxhash"}], name
    assert set(main["tables"]) == shards.head_tables() | {"alembic_version", "embedding_job_seq"}
    # The one column the database numbers: from a sequence in the unsharded keyspace.
    sequence = sharded["tables"]["embedding_job"]["auto_increment"]
    assert sequence == {"column": "id", "sequence": "memory_bank_main.embedding_job_seq"}
    assert main["tables"]["embedding_job_seq"] == {"type": "sequence"}
    assert "vitess_sequence" in (root / "docker" / "vitess" / "sequences.sql").read_text()


def test_the_docs_name_the_tables_heads_replicate():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "scale-out.md").read_text()
    named = re.findall(r"^replicate-do-table = memory_bank\.(\w+)$", docs, re.MULTILINE)
    assert named == shards.replicated_tables()
    assert "alembic_version" in named and "memory" not in named


def test_an_even_number_of_servers_gets_an_odd_number_of_partitions_dealt_out():
    assert [shards.partition_count(n) for n in (1, 2, 3, 4, 5, 6)] == [1, 17, 3, 33, 5, 49]
    servers = ["mysql+pymysql://app:pw@db0:3306/mb", "mysql+pymysql://app:pw@db1:3307/mb"]
    assert shards.partition_urls(servers, 2) == servers
    dealt = shards.partition_urls(servers, 5)
    assert [sa.make_url(u).host for u in dealt] == ["db0", "db1", "db0", "db1", "db0"]
    assert [sa.make_url(u).database for u in dealt] == [f"mb_p{k}" for k in range(5)]
    assert all(sa.make_url(u).password == "pw" for u in dealt)
