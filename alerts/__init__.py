"""Rules over stored data, alert lifecycle, notifications and silences."""
