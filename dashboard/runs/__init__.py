"""Runs and queues pages: timelines, goodput, the checkpoint advisor, Kueue history.

Pages, Plotly charts and JSON views only; the data comes from ``runs.selectors``.
"""
