"""The agent memory in a backend-neutral, plain form (``plain``), and what each backend's
side of a move implements (``side``): what ``store migrate`` reads out of one backend and
writes into the other. The backends' halves live in ``sqlite.transfer`` and
``postgres.transfer``."""
