"""Cross-cutting pieces: login and API tokens, health, the app's own metrics, live push."""
