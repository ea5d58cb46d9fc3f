"""Small shared foundations: atomic files, locks, byte I/O, typed records, names, home."""
