"""The fleet: every host's agents, runs and wakes on one Redis (docs/how-to/fleet.md)."""
