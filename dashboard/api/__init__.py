"""The dashboard's JSON API under /api/v1/: one endpoint per chart, described in OpenAPI."""
