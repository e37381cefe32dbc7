"""Keys whose window levels live in a store (Redis), for windows too large for an
executor's memory, counted exactly once across replayed micro-batches.

Each key's window is an :class:`mta.Window` on the store, ``<name>:<blake2b of the
key>``, labelled with the query name and the key. Its checkpoint (levels and local
part, written all or nothing) also holds the key's small state (pending events,
next report, late count), a *step* (how many calls for the key it has seen) and
what the last call emitted. Spark's state keeps only the step it has committed.

A call at Spark step ``s`` finds the store at ``s`` (go on: apply, commit the store at
``s + 1``, then emit) or at ``s + 1``: the micro-batch is a replay of a call whose
store commit landed before its Spark commit did, so its output is emitted again
and nothing is applied twice. Anything else means the two disagree (a wiped Redis,
or Redis data of another run of the query) and stops the query with that message.

A key's window has one writer: the task attempt that opened it last. A retried or
speculative attempt takes the window over (``take_over=True``) from an attempt that
died or is slower; that attempt's next commit raises :class:`kvs.WindowFenced` and
it fails without writing anything, so the call at a step lands once, from one attempt.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import kvs
from kvs import codec
from mta.monoid import Monoid
from mta.watermarked import KeyWindow, Windowing
from mta.watermarked.held import window_policy
from mta.window import Window


@dataclass
class Output:
    """What one call emits for a key: its rows ``(start, end, partial)``, the key's late
    count, and the late events it dropped (their input columns)."""

    rows: list[tuple[int, int, Any]]
    late: int
    late_events: list[tuple] | None = None


def plain_key(key: tuple) -> list[Any]:
    """The key's values as plain Python values (pandas hands numpy scalars)."""
    return [k.item() if hasattr(k, "item") else k for k in key]


def delete_windows(url: str, name: str) -> int:
    """Delete every stored window of query ``name`` (to start the query afresh, with a
    new checkpoint); return how many there were."""
    backend = kvs.connect(url)
    doomed = [w for w in backend.windows() if w.startswith(f"{name}:")]
    for window_id in doomed:
        backend.delete(window_id)
    return len(doomed)


class StoredKeys:
    """The stored windows of one query (``name``) at ``url``."""

    def __init__(self, url: str, name: str, monoid: Monoid, windowing: Windowing) -> None:
        kvs.blocks.check_window_id(f"{name}:{'0' * 32}")
        self.url, self.name, self.monoid, self.windowing = url, name, monoid, windowing
        self.policy = window_policy(windowing, stored=True)

    def window_id(self, key: tuple) -> str:
        digest = hashlib.blake2b(codec.pack(plain_key(key)), digest_size=16).hexdigest()
        return f"{self.name}:{digest}"

    @property
    def backend(self) -> kvs.Backend:
        return kvs.connect(self.url)  # one shared backend (connection pool) per URL and process

    def open(self, key: tuple, step: int) -> tuple[KeyWindow, Output | None]:
        """The key's window after ``step`` calls; with the output to emit again when the
        store is one call ahead (then the window must not be changed)."""
        window_id = self.window_id(key)
        try:
            window = Window.open(self.backend, window_id, self.monoid, self.policy, take_over=True)
        except kvs.MissingWindow:
            if step:
                raise kvs.StoreError(f"{self.url}: the window of key {plain_key(key)!r} ({window_id}) is gone, "
                                     f"but Spark's checkpoint has {step} steps of it: was the store wiped?") from None
            window = Window(self.monoid, self.policy, store=self.backend, window_id=window_id,
                            labels={"query": self.name, "key": repr(plain_key(key))})
        notes = window.notes.get("spark", {"step": 0})
        stored = notes["step"]
        if stored not in (step, step + 1):
            raise kvs.StoreError(
                f"{self.url}: the window of key {plain_key(key)!r} ({window_id}) is at step {stored} but Spark's "
                f"checkpoint at step {step}: the store holds another run of query {self.name!r} (delete its "
                f"windows with spark_integration.stored.delete_windows, or choose another name) or lost writes")
        key_window = KeyWindow(self.monoid, self.windowing, notes.get("state"), stored=window)
        if stored == step + 1:
            rows, late, late_events = notes["output"]
            return key_window, Output(list(rows), late, list(late_events))
        return key_window, None

    def commit(self, window: KeyWindow, step: int, output: Output) -> None:
        """Make the call durable in the store (levels, state and output at once) before
        Spark commits ``step``."""
        window.window.notes["spark"] = {"step": step, "state": window.state(),
                                        "output": [output.rows, output.late, output.late_events or []]}
        window.window.flush()

    def scratch(self, key: tuple) -> KeyWindow:
        """A new empty window for a batch run (replacing what an earlier attempt left)."""
        window = Window(self.monoid, self.policy, store=self.backend, window_id=self.window_id(key),
                        labels={"query": self.name, "key": repr(plain_key(key))}, take_over=True)
        return KeyWindow(self.monoid, self.windowing, stored=window)

    def drop(self, window: KeyWindow) -> None:
        self.backend.delete(window.window.id)
