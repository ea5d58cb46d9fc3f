"""The redis room: a Redis stream with the file room's contract across hosts."""
