"""Small shared foundations: atomic files, locks, byte I/O, typed getters for the state
files' JSON, result structs, names, home."""
