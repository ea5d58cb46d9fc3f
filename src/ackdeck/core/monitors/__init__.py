"""Monitors and wakes: runs, supervisors, scanning, shown sets, the gate, wake records."""
