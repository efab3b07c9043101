"""The PostgreSQL backend (``memlane[postgres]``): psycopg 3 with a pool, pgvector HNSW, tsvector BM25."""

from memlane.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
