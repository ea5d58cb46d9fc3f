from core.cli import run

run()
