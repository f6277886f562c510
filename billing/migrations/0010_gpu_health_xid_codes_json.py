"""``GpuHealthHour.xid_codes`` becomes a JSON list instead of a PostgreSQL ``integer[]``, so it works on SQLite too."""

from django.db import migrations, models

TABLE = "billing_gpuhealthhour"


class AlterIntegerArrayToJSONField(migrations.AlterField):
    """``AlterField`` that first converts PostgreSQL's column in place, either way: ``AlterField`` alone writes a
    plain cast, and PostgreSQL casts neither ``integer[]`` to ``jsonb`` nor back. Its cast then finds the column
    already of the target type. Other databases need nothing more (SQLite rebuilds the table)."""

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(
                f"ALTER TABLE {TABLE} ALTER COLUMN {self.name} TYPE jsonb USING to_jsonb({self.name})"
            )
        super().database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        if schema_editor.connection.vendor == "postgresql":
            # '[79, 31]' -> '{79, 31}', an integer[] literal: a USING clause may not hold a subquery.
            schema_editor.execute(
                f"ALTER TABLE {TABLE} ALTER COLUMN {self.name} TYPE integer[] "
                f"USING translate({self.name}::text, '[]', '{{}}')::integer[]"
            )
        # AlterField's backwards is its forwards between the states given: not this class's forwards.
        super().database_forwards(app_label, schema_editor, from_state, to_state)


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0009_budget_notice_expired_at"),
    ]

    operations = [
        AlterIntegerArrayToJSONField(
            model_name="gpuhealthhour",
            name="xid_codes",
            field=models.JSONField(blank=True, default=list, help_text="Codes (integers), first seen first."),
        ),
    ]
