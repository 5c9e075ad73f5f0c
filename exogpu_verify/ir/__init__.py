"""The GPU IR: value objects (types, memories, units, timelines) and immutable nodes."""

from .memories import *  # noqa: F401,F403
from .nodes import *  # noqa: F401,F403
from .srcinfo import NO_SRC, SrcInfo  # noqa: F401
from .timelines import *  # noqa: F401,F403
from .types import *  # noqa: F401,F403
from .units import *  # noqa: F401,F403
