# Sessions whose row names the user they sign in (an engine since removed: 0003 moves them back to Django's table).
# The live sessions of Django's table move into the new one with their user, so nobody is signed out by the upgrade
# (and back again on a rollback).

import django.db.models.deletion
from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore as DjangoSessionStore
from django.db import migrations, models
from django.utils import timezone

BATCH = 1000


def _user_id(session_data):
    # The store's data is signed with the session engine's salt, which both stores share (their class is named
    # SessionStore); data that does not verify names nobody, as it signs nobody in.
    value = DjangoSessionStore().decode(session_data).get(SESSION_KEY)
    try:
        user_id = int(value)
    except (TypeError, ValueError):
        return None
    return user_id if 0 < user_id < 2**63 else None


def _move(source, target, *, with_user):
    live = source.objects.filter(expire_date__gt=timezone.now()).order_by("session_key")
    for start in range(0, live.count(), BATCH):
        rows = [
            target(
                session_key=row.session_key,
                session_data=row.session_data,
                expire_date=row.expire_date,
                **({"user_id": _user_id(row.session_data)} if with_user else {}),
            )
            for row in live[start : start + BATCH]
        ]
        target.objects.bulk_create(rows, ignore_conflicts=True)
    source.objects.all().delete()


def forwards(apps, schema_editor):
    _move(apps.get_model("sessions", "Session"), apps.get_model("portal", "UserSession"), with_user=True)


def backwards(apps, schema_editor):
    _move(apps.get_model("portal", "UserSession"), apps.get_model("sessions", "Session"), with_user=False)


class Migration(migrations.Migration):
    dependencies = [
        ("portal", "0001_initial"),
        ("sessions", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="UserSession",
            fields=[
                (
                    "session_key",
                    models.CharField(max_length=40, primary_key=True, serialize=False, verbose_name="session key"),
                ),
                ("session_data", models.TextField(verbose_name="session data")),
                ("expire_date", models.DateTimeField(db_index=True, verbose_name="expire date")),
                (
                    "user",
                    models.ForeignKey(
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={"verbose_name": "session", "verbose_name_plural": "sessions", "abstract": False},
        ),
        migrations.RunPython(forwards, backwards),
    ]
