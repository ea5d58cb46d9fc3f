"""Stand-ins for the outside world the tests talk to (never for ackdeck's own side)."""
