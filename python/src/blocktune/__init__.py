"""blocktune for Python: a client of the blocktuned HTTP API (Client, ApiError), the external
runner protocol as a library (blocktune.runner), lookups in the generated tables
(blocktune.tables), and the device this process runs on (device_key, device_identity; the key
derivation in blocktune.device). Standard library only."""

from ._host import host_cpu_key
from ._probe import device_identity, device_key
from .client import ApiError, Client, Lookup, Query
from .device import DeviceIdentity, InvalidIdentity, derive_key

__all__ = ["ApiError", "Client", "DeviceIdentity", "InvalidIdentity", "Lookup", "Query", "derive_key",
           "device_identity", "device_key", "host_cpu_key"]
__version__ = "0.1.0"
