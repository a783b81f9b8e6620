"""Alert.started_at (the time it fired) is renamed firing_at: "started" is when the condition began
(pending_since, Prometheus' activeAt), which the API and pages now call started_at."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("alerts", "0002_notifications")]

    operations = [
        migrations.RenameField("alert", "started_at", "firing_at"),
        migrations.AlterField(
            model_name="alert",
            name="firing_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When it started firing (pending_since + for); pending_since is when it began.",
                null=True,
            ),
        ),
    ]
