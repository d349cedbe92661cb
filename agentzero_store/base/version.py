"""The package version (``agentzero_store.__version__``), for surfaces that report it."""

__version__ = "0.1.0"
