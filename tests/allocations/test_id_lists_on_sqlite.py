"""``id_in`` and ``text_in`` (a list as one parameter) on SQLite, where the rest of the suite never runs: compiled once
with their stand-ins, they answer what ``__in`` answers, as ``make run`` reads them (the home, the approval queue)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, django
django.setup()
from django.core.management import call_command
from django.contrib.auth.models import User
from allocations.compiled_reads import (
    IDS_STAND_IN, OTHER_TEXTS_STAND_IN, TEXTS_STAND_IN, CompiledRead, id_in, text_in,
)

call_command("migrate", "auth", verbosity=0)
users = [User.objects.create(username=name, first_name=first) for name, first in
         [("ann", "A"), ("bob", "B"), ("o'neil", "C"), ("zoë", "A"), ("x%s", "B")]]
read = CompiledRead(
    User,
    lambda ids, names, firsts: User.objects.filter(id_in("id", ids), text_in("username", names))
    .filter(text_in("first_name", firsts)).order_by("id"),
    stand_ins={"ids": IDS_STAND_IN, "names": TEXTS_STAND_IN, "firsts": OTHER_TEXTS_STAND_IN},
)
answers = []
for ids, names, firsts in [
    ([u.pk for u in users], ["ann", "o'neil", "zoë", "x%s", "nobody"], ["A", "C", "B"]),
    ([users[0].pk, users[3].pk, 999], ["ann", "zoë"], ["A"]),
    ([], ["ann"], ["A"]),
    ([users[1].pk], [], ["B"]),
]:
    compiled = [u.username for u in read.instances(ids=ids, names=names, firsts=firsts)]
    orm = list(User.objects.filter(id__in=ids, username__in=names, first_name__in=firsts)
               .order_by("id").values_list("username", flat=True))
    answers.append([compiled, orm])
print(json.dumps(answers))
"""


def test_id_and_text_lists_answer_as_in_on_sqlite(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings.base",
        "DEBUG": "1",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'lists.sqlite3'}",
        "PORTAL_VAR_DIR": str(tmp_path),
    }
    for name in ("CELERY_BROKER_URL", "CACHE_URL"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    assert [compiled for compiled, _ in answers] == [["ann", "o'neil", "zoë", "x%s"], ["ann", "zoë"], [], []]
    assert all(compiled == orm for compiled, orm in answers)
