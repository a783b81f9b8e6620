"""Exporter dialects: each module renders one exporter's exposition for one target."""
