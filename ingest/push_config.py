"""The ``remote_write`` block of the sending Prometheus for push mode (docs/push.md).

One receiver: a ``keep`` on the metric names ingest reads. Several: one ``remote_write`` per
receiver, each keeping the series whose ``shard_label`` Prometheus' ``hashmod`` puts in its
shard (the receiver checks the same hash: ``push_store.hashmod``); the temporary label is
dropped before sending. tests/ingest/test_push_shards.py runs this block in a real Prometheus
and docs/push.md shows it for two receivers (a test keeps the two the same).
"""

from __future__ import annotations

from collections.abc import Sequence

#: The label ``hashmod`` writes; dropped again before the series leave Prometheus.
SHARD_LABEL = "__tmp_clusterwatch_shard"


def remote_write_block(
    urls: Sequence[str], keep: str, credentials_file: str, shard_label: str = "instance"
) -> str:
    """prometheus.yml's ``remote_write:`` section for receivers at ``urls`` (base URLs, in
    shard order: the i-th runs with ``--shard i/len(urls)``)."""
    lines = ["remote_write:"]
    count = len(urls)
    for index, url in enumerate(urls):
        lines += [
            f"  - url: {url.rstrip('/')}/api/v1/write",
            "    authorization:",
            f"      credentials_file: {credentials_file}   # Bearer by default",
            "    write_relabel_configs:",
            "      - source_labels: [__name__]",
            f'        regex: "{keep}"',
            "        action: keep",
        ]
        if count > 1:
            lines += [
                f"      - source_labels: [{shard_label}]",
                f"        modulus: {count}",
                f"        target_label: {SHARD_LABEL}",
                "        action: hashmod",
                f"      - source_labels: [{SHARD_LABEL}]",
                f'        regex: "{index}"',
                "        action: keep",
                f"      - regex: {SHARD_LABEL}",
                "        action: labeldrop",
            ]
    return "\n".join(lines) + "\n"
