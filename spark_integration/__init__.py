"""MTA windows as a PySpark operator: keyed event-time windows over any monoid and
slide policy, on batch and streaming DataFrames (see :func:`window_aggregate`)."""

from mta.watermarked import KeyWindow, Windowing
# The submodule spark_integration.session (local_session) is imported before the name
# `session` is bound to the window helper: importing a submodule binds its name on the
# package, but only the first time, so a user's later `from spark_integration.session
# import local_session` leaves `spark_integration.session` the helper.
from spark_integration import session as _session_module  # noqa: F401
from spark_integration.windows import micros, session, window_aggregate

__all__ = ["KeyWindow", "Windowing", "micros", "session", "window_aggregate"]
