-- The unsharded keyspace memory_bank_main: the sequence that numbers embedding jobs across the
-- shards (Vitess hands out blocks of `cache` ids; vschema.json names it for embedding_job.id).
CREATE TABLE embedding_job_seq (
  id INT NOT NULL,
  next_id BIGINT NOT NULL,
  cache BIGINT NOT NULL,
  PRIMARY KEY (id)
) COMMENT 'vitess_sequence';
INSERT INTO embedding_job_seq (id, next_id, cache) VALUES (0, 1, 1000);
