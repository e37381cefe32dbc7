"""One writer per stored window: leases and fencing tokens.

Opening (or creating) a window takes its *lease*: the store records a fencing
token unique to that opening, the writer's owner id, and an expiry ``ttl``
seconds ahead. Every commit carries the token and is refused, inside the same
atomic store operation, unless it is still the window's token: a writer that
was taken over (``take_over=True``), whose lease expired and was taken by
another, or whose window was deleted, gets :class:`WindowFenced` and nothing
it sends lands. Commits renew the lease; a :class:`Keeper` thread per backend
renews the leases of open windows that did not commit lately, and releases
them when the backend closes or the interpreter exits.

A second opening of a window whose lease is live raises :class:`WindowBusy`,
unless the opener has the same owner id (a restarted writer with a stable
name takes its windows back at once; its earlier incarnation is fenced).
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import threading
import time
import uuid
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kvs.base import MissingWindow, StoreError

if TYPE_CHECKING:
    from kvs.blocks import Backend

log = logging.getLogger("kvs")

#: Seconds a lease lasts without a renewal (a dead writer blocks its windows this long at most).
LEASE_TTL = 10.0


@dataclass(frozen=True)
class Lease:
    """The right to write one window: ``token`` is the fencing token every commit carries."""

    window_id: str
    token: str
    owner: str
    ttl: float

    @property
    def record(self) -> str:
        """How the store records the holder: ``<ttl ms>:<owner>``."""
        return f"{round(self.ttl * 1000)}:{self.owner}"


def new_lease(window_id: str, owner: str | None, ttl: float) -> Lease:
    """A lease with a fresh token; without ``owner``, one unique to this lease that says
    where the writer runs (host and process), for WindowBusy messages."""
    token = uuid.uuid4().hex
    return Lease(window_id, token, owner or f"{socket.gethostname()}:pid{os.getpid()}:{token[:8]}", ttl)


def parse_record(record: str) -> tuple[str, float]:
    """The owner and ttl (seconds) of a stored holder record (see :attr:`Lease.record`)."""
    ttl, _, owner = record.partition(":")
    return owner, int(ttl) / 1000


class WindowBusy(StoreError):
    """The window has a live writer: open it with ``take_over=True``, or wait until its
    lease expires (``expires_in`` seconds, unless renewed; a lease lasts ``ttl``)."""

    def __init__(self, window_id: str, url: str, owner: str, expires_in: float, ttl: float) -> None:
        super().__init__(
            f"window {window_id!r} in {url} has a live writer ({owner}); its lease expires in "
            f"{expires_in:.1f} s unless that writer renews it (it does while the window is open): "
            "close it there, or open with take_over=True (its commits then fail)")
        self.window_id, self.owner, self.expires_in, self.ttl = window_id, owner, expires_in, ttl
        self._made = (window_id, url, owner, expires_in, ttl)

    def __reduce__(self) -> tuple:  # picklable (multiprocessing, Spark) with its fields
        return type(self), self._made


_TAKEN = "another writer took it over (or opened it after this writer's lease expired)"


class WindowFenced(StoreError):
    """This writer lost its window (taken over, or its lease lapsed and another writer
    opened it): its commit was refused and nothing of it was stored."""

    def __init__(self, window_id: str, url: str, why: str | None = None) -> None:
        super().__init__(
            f"window {window_id!r} in {url}: "
            f"{why or _TAKEN}; "
            "this writer's commits are refused and nothing it sends lands: reopen the window "
            "(Window.open) to continue from what the store holds")
        self.window_id = window_id
        self._made: tuple = (window_id, url, why)

    def __reduce__(self) -> tuple:
        return type(self), self._made


class WindowDeleted(WindowFenced, MissingWindow):
    """The window was deleted while this writer had it open: its commits are refused
    (the window is not brought back)."""

    def __init__(self, window_id: str, url: str) -> None:
        super().__init__(window_id, url, "it was deleted while this writer had it open")
        self._made = (window_id, url)


class Keeper:
    """Renews the leases of one backend's open windows in a background thread.

    A lease is renewed when it was not renewed (by a commit, or here) for ``ttl / 3``;
    a holder that lost its lease is told (``holder.fence(error)``); a holder that was
    garbage-collected without closing gets its lease released."""

    def __init__(self, backend: Backend) -> None:
        self._backend = weakref.ref(backend)
        self._lock = threading.Lock()
        # Held from choosing the leases due through renewing them, and by drop(): a lease
        # released (close) while a renewal is under way is not renewed after its release.
        self._renewing = threading.RLock()
        self._held: dict[str, tuple[Lease, Any]] = {}   # token -> (lease, weakref to the holder)
        self._renewed: dict[str, float] = {}            # token -> time.monotonic() of the last renewal
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False

    def hold(self, lease: Lease, holder: Any) -> None:
        """Keep ``lease`` alive while ``holder`` (a level store) exists."""
        with self._lock:
            self._held[lease.token] = (lease, weakref.ref(holder))
            self._renewed[lease.token] = time.monotonic()
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="kvs-leases", daemon=True)
                self._thread.start()
                atexit.register(self.close)

    def renewed(self, lease: Lease) -> None:
        """A commit renewed ``lease`` just now."""
        if lease.token in self._renewed:
            self._renewed[lease.token] = time.monotonic()

    def drop(self, lease: Lease) -> None:
        with self._renewing, self._lock:
            self._held.pop(lease.token, None)
            self._renewed.pop(lease.token, None)

    def close(self) -> None:
        """Stop renewing; release every lease still held (at backend close or interpreter exit)."""
        atexit.unregister(self.close)  # a closed backend is not kept alive until exit
        with self._lock:
            self._closed = True
            held = [lease for lease, _ in self._held.values()]
            self._held.clear()
        self._wake.set()
        backend = self._backend()
        if backend is None:
            return
        if held:
            backend.finish()  # what is queued goes first: a released window may be opened at once
        failed: list[StoreError] = []
        for lease in held:
            try:
                backend.release(lease)
            except StoreError as error:  # the lease will expire instead
                failed.append(error)
        if failed:
            log.warning("%d window leases not released (they expire within %s s): %s", len(failed),
                        backend.lease_ttl, failed[0])

    def _run(self) -> None:
        while not self._closed:
            backend = self._backend()
            if backend is None:
                return
            period = backend.lease_ttl / 3
            del backend  # no strong reference while sleeping
            self._wake.wait(period)
            if not self._closed:
                try:
                    self._tick(period)
                except Exception as error:  # noqa: BLE001 - the keeper must outlive any one failure
                    log.warning("lease renewal failed: %s: %s", type(error).__name__, error)

    def _tick(self, period: float) -> None:
        backend = self._backend()
        if backend is None:
            return
        with self._renewing:
            self._renew_due(backend, period)

    def _renew_due(self, backend: Backend, period: float) -> None:
        now = time.monotonic()
        with self._lock:
            due = [(lease, ref) for token, (lease, ref) in self._held.items()
                   if now - self._renewed.get(token, 0.0) >= period * 0.9]
        gone = [lease for lease, ref in due if ref() is None]
        live = [(lease, ref) for lease, ref in due if ref() is not None]
        for lease in gone:  # abandoned without close(): let the next writer in at once
            self.drop(lease)
            try:
                backend.release(lease)
            except StoreError:
                pass
        if not live:
            return
        try:
            lost = backend.renew([lease for lease, _ in live])
        except StoreError as error:  # the store is down: the leases may lapse; fencing keeps them safe
            log.warning("could not renew %d window leases: %s", len(live), error)
            return
        for (lease, ref), error in zip(live, lost):
            if error is None:
                self.renewed(lease)
                continue
            self.drop(lease)
            holder = ref()
            if holder is not None:
                holder.fence(error)
