"""Presence: what each agent session is doing (working, waiting, idle, stalled, gone), decided
from the events its doors record (core/presence/model.py, pure) and the log they record them in
(core/presence/log.py)."""
