"""provision: bring bare GPU servers to verified, production-ready nodes."""

__version__ = "0.1.0"
