"""DRF's plain-text keys become named, hashed tokens expiring in LEGACY_KEY_DAYS; the plain-text table is emptied."""

import hashlib
from datetime import timedelta

from django.db import migrations
from django.utils import timezone

from portal.tokens.legacy import LEGACY_KEY_DAYS, legacy_public_id


def migrate_legacy_keys(apps, schema_editor):
    Token = apps.get_model("authtoken", "Token")
    ApiToken = apps.get_model("tokens", "ApiToken")
    now = timezone.now()
    name = f"Legacy key (migrated {now:%Y-%m-%d})"
    for legacy in Token.objects.all().iterator():
        ApiToken.objects.create(
            user_id=legacy.user_id,
            name=name,
            public_id=legacy_public_id(legacy.key),
            digest=hashlib.sha256(legacy.key.encode()).hexdigest(),
            created_at=legacy.created,
            expires_at=now + timedelta(days=LEGACY_KEY_DAYS),
        )
    Token.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("tokens", "0001_initial"),
        ("authtoken", "0004_alter_tokenproxy_options"),
    ]

    # Not reversible in substance: the plain keys are gone; going back leaves the hashed tokens in place.
    operations = [migrations.RunPython(migrate_legacy_keys, migrations.RunPython.noop)]
