"""Job, Pod, PodAssignment, RunEvent and Checkpoint leave ingest's state for the runs app.

State only: the tables are not touched here. ``runs.0001`` (a dependency) took the models over
on their old tables and renamed those to ``runs_*``, keeping every row.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("ingest", "0015_node_tiles"),
        ("runs", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(model_name="job", name="cluster_queue"),
                migrations.RemoveField(model_name="runevent", name="job"),
                migrations.RemoveField(model_name="checkpoint", name="job"),
                migrations.RemoveField(model_name="pod", name="job"),
                migrations.RemoveField(model_name="podassignment", name="pod"),
                migrations.RemoveField(model_name="podassignment", name="node"),
                migrations.DeleteModel(name="Checkpoint"),
                migrations.DeleteModel(name="RunEvent"),
                migrations.DeleteModel(name="PodAssignment"),
                migrations.DeleteModel(name="Pod"),
                migrations.DeleteModel(name="Job"),
            ],
        ),
    ]
