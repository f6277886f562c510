# Sessions go back to Django's own table (django.contrib.sessions, read through the cached_db engine). The live
# sessions of the portal's table move with their signed data unchanged, so nobody is signed out by the upgrade; a
# rollback moves them back, each naming the user its data signs in as the older code expects.

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore as DjangoSessionStore
from django.db import migrations
from django.utils import timezone

BATCH = 1000


def _user_id(session_data):
    # Every session store is named SessionStore, so they share the salt that signs the data: data that does not
    # verify decodes to nothing and names nobody, as it signs nobody in.
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
    _move(apps.get_model("portal", "UserSession"), apps.get_model("sessions", "Session"), with_user=False)


def backwards(apps, schema_editor):
    _move(apps.get_model("sessions", "Session"), apps.get_model("portal", "UserSession"), with_user=True)


class Migration(migrations.Migration):
    dependencies = [
        ("portal", "0002_user_session"),
        ("sessions", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
        migrations.DeleteModel(name="UserSession"),
    ]
