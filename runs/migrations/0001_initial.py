"""The runs app takes over ingest's run tables, keeping every row.

Until ``ingest.0016`` the models Job, Pod, PodAssignment, RunEvent and Checkpoint were ingest's
(tables ``ingest_job`` …). Here they enter the runs app's state on their old tables (no SQL),
then the tables, their identity sequences, constraints and indexes are renamed to ``runs_*``
(foreign keys follow a renamed table by themselves; no trigger, function or partition names
them). ``ingest.0016`` then drops the models from ingest's state
only. A fresh database goes through the same steps (ingest 0001 creates the tables, this renames
them), so fresh and upgraded databases end with identical names.
"""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

MODELS = ("job", "checkpoint", "pod", "podassignment", "runevent")


def _renames(old: str, new: str) -> str:
    """Rename the run tables' sequences, constraints and indexes from the ``old`` prefix to ``new``.

    Django named them after the tables (``ingest_job_pkey``, ``ingest_pod_job_id_…_fk_ingest_job_id``);
    the prefix and a foreign key's run-table target are renamed, a target in ingest is kept. Runs
    while the tables are called ``runs_*`` (after the renames going forward, before them back).
    """
    tables = ", ".join(f"'runs_{m}'" for m in MODELS)
    rename = (
        f"regexp_replace(regexp_replace(%s, '^{old}_', '{new}_'), "
        f"'_fk_{old}_(job|pod)_id$', '_fk_{new}_\\1_id')"
    )
    return (
        "".join(
            f"ALTER SEQUENCE IF EXISTS {old}_{m}_id_seq RENAME TO {new}_{m}_id_seq;" for m in MODELS
        )
        + f"""
DO $$
DECLARE r record;
BEGIN
    FOR r IN SELECT t.relname AS tab, c.conname AS name FROM pg_constraint c
        JOIN pg_class t ON t.oid = c.conrelid
        WHERE t.relname IN ({tables}) AND c.conname LIKE '{old}\\_%' LOOP
        EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', r.tab, r.name, {rename % "r.name"});
    END LOOP;
    FOR r IN SELECT i.indexname AS name FROM pg_indexes i
        WHERE i.tablename IN ({tables}) AND i.indexname LIKE '{old}\\_%' LOOP
        EXECUTE format('ALTER INDEX %I RENAME TO %I', r.name, {rename % "r.name"});
    END LOOP;
END $$;
"""
    )


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("ingest", "0015_node_tiles"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Job",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("namespace", models.CharField(max_length=253)),
                        ("name", models.CharField(max_length=253)),
                        (
                            "kind",
                            models.CharField(
                                db_default="Job",
                                default="Job",
                                help_text="The top-level workload's kind (Job, JobSet, …).",
                                max_length=64,
                            ),
                        ),
                        ("local_queue", models.CharField(blank=True, max_length=253)),
                        (
                            "state",
                            models.CharField(
                                choices=[
                                    ("pending", "Pending"),
                                    ("running", "Running"),
                                    ("succeeded", "Succeeded"),
                                    ("failed", "Failed"),
                                    ("unknown", "Unknown"),
                                ],
                                default="unknown",
                                max_length=16,
                            ),
                        ),
                        ("first_seen", models.DateTimeField(default=django.utils.timezone.now)),
                        ("last_seen", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "cluster_queue",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to="ingest.clusterqueue",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_job",
                        "ordering": ["-first_seen"],
                    },
                ),
                migrations.CreateModel(
                    name="Checkpoint",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("step", models.BigIntegerField()),
                        ("ts", models.DateTimeField()),
                        ("duration_seconds", models.FloatField(blank=True, null=True)),
                        ("bytes", models.BigIntegerField(blank=True, null=True)),
                        ("path", models.CharField(blank=True, max_length=1000)),
                        (
                            "source",
                            models.CharField(
                                choices=[
                                    ("prometheus", "Prometheus gauges"),
                                    ("api", "Pushed over the API"),
                                ],
                                max_length=16,
                            ),
                        ),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="checkpoints",
                                to="runs.job",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_checkpoint",
                        "ordering": ["ts"],
                    },
                ),
                migrations.CreateModel(
                    name="Pod",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("namespace", models.CharField(max_length=253)),
                        ("name", models.CharField(max_length=253)),
                        ("phase", models.CharField(blank=True, max_length=32)),
                        ("restarts", models.IntegerField(default=0)),
                        ("first_seen", models.DateTimeField(default=django.utils.timezone.now)),
                        ("last_seen", models.DateTimeField(default=django.utils.timezone.now)),
                        (
                            "job",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="pods",
                                to="runs.job",
                            ),
                        ),
                    ],
                    options={"db_table": "ingest_pod"},
                ),
                migrations.CreateModel(
                    name="PodAssignment",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("first_seen", models.DateTimeField()),
                        ("last_seen", models.DateTimeField()),
                        (
                            "node",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="pod_assignments",
                                to="ingest.node",
                            ),
                        ),
                        (
                            "pod",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="assignments",
                                to="runs.pod",
                            ),
                        ),
                    ],
                    options={"db_table": "ingest_podassignment"},
                ),
                migrations.CreateModel(
                    name="RunEvent",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("ts", models.DateTimeField()),
                        (
                            "kind",
                            models.CharField(
                                choices=[
                                    ("started", "Started"),
                                    ("restart", "Pod restart (crash)"),
                                    ("failed", "Failed"),
                                    ("succeeded", "Succeeded"),
                                    ("evicted", "Evicted"),
                                    ("preempted", "Preempted"),
                                    ("node_lost", "Node lost"),
                                    ("node_shutdown", "Node shutdown"),
                                    ("rejected", "Rejected by the kubelet"),
                                    ("gated", "Scheduling gated"),
                                    ("pod_reason", "Other pod status reason"),
                                ],
                                max_length=16,
                            ),
                        ),
                        ("pod", models.CharField(blank=True, max_length=253)),
                        ("detail", models.CharField(blank=True, max_length=500)),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="events",
                                to="runs.job",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "ingest_runevent",
                        "ordering": ["ts"],
                    },
                ),
                migrations.AddConstraint(
                    model_name="job",
                    constraint=models.UniqueConstraint(
                        fields=("namespace", "name"), name="uniq_job"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="checkpoint",
                    constraint=models.UniqueConstraint(
                        fields=("job", "step"), name="uniq_checkpoint_step"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="pod",
                    constraint=models.UniqueConstraint(
                        fields=("namespace", "name"), name="uniq_pod"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="podassignment",
                    constraint=models.UniqueConstraint(
                        fields=("pod", "node", "first_seen"), name="uniq_assignment"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="runevent",
                    constraint=models.UniqueConstraint(
                        fields=("job", "ts", "kind", "pod"), name="uniq_run_event"
                    ),
                ),
            ],
        ),
        migrations.AlterModelTable(name="job", table=None),
        migrations.AlterModelTable(name="checkpoint", table=None),
        migrations.AlterModelTable(name="pod", table=None),
        migrations.AlterModelTable(name="podassignment", table=None),
        migrations.AlterModelTable(name="runevent", table=None),
        migrations.RunSQL(sql=_renames("ingest", "runs"), reverse_sql=_renames("runs", "ingest")),
    ]
