"""rdev — a remote Ascend device as a local array library (docs/python.md).

The package's rooms: _rdev (the C extension over rdev.h and rdev/job.h:
every call to rdevd), _common.py (errors, the current and default session
and the current stream, interruptible waits), _progress.py (progress bars
where people look), session.py, stream.py (streams, events, futures),
array.py (device arrays and transfers), ops.py (CANN's operators on
device arrays: rdev.ops), kernels.py (kernels by name),
jobs.py (detached jobs: rdev.jobs). rdev.acl, the pyACL-compatible
module, stands apart on rdev's ACL library.
"""
from . import jobs, ops
from ._common import Error, current_session, strerror
from ._progress import set_progress, track
from .array import DeviceArray, asarray, copyto, empty, empty_like, set_preview, zeros, zeros_like
from .kernels import Kernel
from .session import Device, Session, connect, info
from .stream import Event, Future, Stream, elapsed_time

__all__ = ["Error", "strerror", "connect", "current_session", "Session", "Device", "DeviceArray", "Stream",
           "Event", "Future", "Kernel", "asarray", "empty", "zeros", "empty_like", "zeros_like", "copyto",
           "elapsed_time", "set_progress", "track", "set_preview", "info", "jobs", "ops"]
