"""provision: bring bare GPU servers to verified, production-ready nodes."""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

try:  # one source of truth: pyproject.toml's version, as the installed distribution carries it
    __version__ = _version("provision")
except PackageNotFoundError:  # a bare checkout on PYTHONPATH, never installed
    __version__ = "0+unknown"
