"""``GpuHealthHour.xid_codes`` becomes a JSON list instead of a PostgreSQL ``integer[]``, so it works on SQLite too.

PostgreSQL has no cast from ``integer[]`` to ``jsonb``, nor back: the column is converted in place with
``to_jsonb`` first (and back through the array literal's text), so that the ``AlterField`` between them only
changes the model state and casts a column already of the target type. Other databases get the ``AlterField``
alone (SQLite rebuilds the table).
"""

from django.db import migrations, models

TABLE = "billing_gpuhealthhour"


def codes_to_jsonb(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {TABLE} ALTER COLUMN xid_codes TYPE jsonb USING to_jsonb(xid_codes)")


def codes_to_integer_array(apps, schema_editor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        # '[79, 31]' -> '{79, 31}', an integer[] literal: a USING clause may not hold a subquery.
        schema_editor.execute(
            f"ALTER TABLE {TABLE} ALTER COLUMN xid_codes TYPE integer[] "
            "USING translate(xid_codes::text, '[]', '{}')::integer[]"
        )


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0009_budget_notice_expired_at"),
    ]

    operations = [
        migrations.RunPython(codes_to_jsonb, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="gpuhealthhour",
            name="xid_codes",
            field=models.JSONField(blank=True, default=list, help_text="Codes (integers), first seen first."),
        ),
        migrations.RunPython(migrations.RunPython.noop, codes_to_integer_array),
    ]
