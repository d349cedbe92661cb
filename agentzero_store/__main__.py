"""Run the CLI with `python -m agentzero_store`."""

from .cli import main

main()
