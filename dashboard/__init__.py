"""Pages, charts and JSON endpoints; reads ingest and alerts, owns no tables."""
