"""The abstract machine (paper 5): AMIR, its conversion from GPU IR, the concrete checker."""

from .check import check_sync_concrete  # noqa: F401
from .convert import lower_to_amir, param_modes  # noqa: F401
