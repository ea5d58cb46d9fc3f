from ackdeck.core.cli import run

run()
