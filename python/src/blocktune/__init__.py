"""blocktune for Python: a client of the blocktuned HTTP API (Client, ApiError), the external
runner protocol as a library (blocktune.runner) and lookups in the generated tables
(blocktune.tables). Standard library only."""

from .client import ApiError, Client, Lookup, Query

__all__ = ["ApiError", "Client", "Lookup", "Query"]
__version__ = "0.1.0"
