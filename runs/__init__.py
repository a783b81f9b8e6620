"""Runs: training jobs, their pods and nodes over time, events, checkpoints and goodput."""
