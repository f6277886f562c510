"""Databases of the benchmarks' own, beside the one ``DATABASE_URL`` names (a helper, not a benchmark).

A benchmark never writes to the database ``DATABASE_URL`` names: it creates (and drops first) databases named after
it on the same server, so two checkouts sharing a server never clash.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


def postgres_url() -> str | None:
    """``DATABASE_URL`` when it names a PostgreSQL database, else None."""
    url = os.environ.get("DATABASE_URL", "")
    return url if url.startswith(("postgres://", "postgresql://")) else None


def _admin(url: str):  # a psycopg connection to the server's maintenance database
    import psycopg

    return psycopg.connect(urlunsplit(urlsplit(url)._replace(path="/postgres")), autocommit=True)


def create_database(url: str, suffix: str, *, template: str | None = None) -> tuple[str, str]:
    """``<DATABASE_URL's name>_<suffix>`` created afresh (a copy of database ``template`` when given): its URL and
    a description (server version and name)."""
    from psycopg import sql

    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/')}_{suffix}"
    with _admin(url) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if template:
            create = sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template))
        else:
            create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        conn.execute(create)
        version = conn.execute("SHOW server_version").fetchone()[0]
    return urlunsplit(parts._replace(path=f"/{name}")), f"PostgreSQL {version} ({name})"


def database_exists(url: str) -> bool:
    with _admin(url) as conn:
        name = urlsplit(url).path.lstrip("/")
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def bench_database_url(workdir: Path) -> tuple[str, str]:
    """PostgreSQL ``<name>_bench`` (created afresh) when DATABASE_URL names a PostgreSQL database, else SQLite."""
    url = postgres_url()
    if url is None:
        return f"sqlite:///{workdir / 'bench.sqlite3'}", "SQLite"
    return create_database(url, "bench")
