"""One source tree's side of ``pages_vs_baseline.py``, in a fresh process (a helper, not a benchmark).

    python benchmarks/bench_tree.py seed <tree> [extra requests]   migrate, seed the demo, add requests; prints JSON
    python benchmarks/bench_tree.py migrate <tree>                  migrate (a copy of the seeded database)
    python benchmarks/bench_tree.py sessions <tree> <user>...       a signed-in browser's cookies per user, as JSON

``<tree>`` is the project's own root or the baseline commit's worktree: it goes first on ``sys.path``, so Django,
the models, the session engine and the settings (``DJANGO_SETTINGS_MODULE``, ``DATABASE_URL``) are that tree's, as
the server of that tree will run them. Only what both trees share is used here (the models' fields, ``seed_demo``,
the test client), so that the baseline's database is seeded by the baseline's own code.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time


def setup(tree: str) -> None:
    sys.path.insert(0, tree)
    os.chdir(tree)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.bench_settings")
    import django

    django.setup()


def vacuum_analyze() -> None:
    """As autovacuum leaves a table in production: statistics, and a visibility map so that counting the visible
    rows can read the index alone instead of every heap page a bulk load just wrote."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")


def seed(extra_requests: int) -> dict[str, object]:
    """The demo organisation and ``extra_requests`` copies of one of its requests; the ids and token the run asks
    for."""
    from django.core.management import call_command
    from django.test import override_settings

    from allocations.models import GpuRequest
    from portal.tokens.services import api_token_create

    call_command("migrate", verbosity=0)
    with override_settings(DEBUG=True):  # seed_demo's demo passwords are refused with DEBUG off
        call_command("seed_demo", verbosity=0)
    template = GpuRequest.objects.filter(team__slug="vision").order_by("pk").first()
    # The row's own columns: not the id, nor what the database generates.
    copied = [f.attname for f in GpuRequest._meta.concrete_fields if f.attname != "id" and not f.generated]
    columns = {name: getattr(template, name) for name in copied}
    copies = [GpuRequest(**{**columns, "name": f"bench-{n}"}) for n in range(extra_requests)]
    GpuRequest.objects.bulk_create(copies, batch_size=1000)
    vacuum_analyze()
    detail = GpuRequest.objects.filter(team__slug="vision").order_by("-pk").first()
    token = api_token_create(acting_user=detail.requester, name=f"bench {time.time_ns()}", expires_in_days=1)
    return {
        "token": token.key,
        "detail_id": detail.pk,
        "keyset_after": GpuRequest.objects.order_by("pk").values_list("pk", flat=True)[extra_requests // 2],
        "member": detail.requester.username,
        "team": "vision",
        "rows": GpuRequest.objects.count(),
    }


def session_cookie(username: str) -> str:
    """A ``Cookie`` header value of ``username``'s browser after its first page: the session (as the server's
    session engine stores it) and the CSRF cookie that page set; without it every page would make a new CSRF secret."""
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.test import Client

    client = Client()
    client.force_login(User.objects.get(username=username))
    client.get("/")
    names = [settings.SESSION_COOKIE_NAME, settings.CSRF_COOKIE_NAME]
    return "; ".join(f"{name}={client.cookies[name].value}" for name in names)


def main() -> None:
    mode, tree, *rest = sys.argv[1:]
    setup(tree)
    answer: object = None
    with contextlib.redirect_stdout(sys.stderr):  # what the commands print is not the answer
        if mode == "seed":
            answer = seed(int(rest[0]) if rest else 5000)
        elif mode == "migrate":
            from django.core.management import call_command

            call_command("migrate", verbosity=0)
            vacuum_analyze()
        elif mode == "sessions":
            answer = {username: session_cookie(username) for username in rest}
        else:
            sys.exit(f"unknown mode {mode!r}")
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
