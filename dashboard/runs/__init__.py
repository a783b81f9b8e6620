"""Runs and queues: timelines, goodput, the checkpoint advisor, Kueue history."""
