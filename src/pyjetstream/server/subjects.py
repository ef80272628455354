"""Moved: the subject grammar lives in :mod:`pyjetstream.protocol.subjects` (one copy for server,
stores, client and Spark). This name re-exports it for code written against the old path."""

from pyjetstream.protocol.subjects import *  # noqa: F403
from pyjetstream.protocol.subjects import __all__ as __all__
