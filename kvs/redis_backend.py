"""Windows in Redis or Redis Cluster.

Keys of window ``w`` (all share the hash tag ``{w}``, so a window lives in one
cluster slot and a commit is one MULTI/EXEC):

- ``<ns>:{w}:meta``  hash: ``format``, ``meta`` (creation record), ``state`` (checkpoint)
- ``<ns>:{w}:nodes`` hash: one field per block, ``level:generation:block``

and ``<ns>:windows``, the set of window ids. Every call retries connection
errors and timeouts with exponential backoff and jitter, then raises StoreError;
a pipeline is rebuilt for every attempt (redis-py drops a failed pipeline's commands).
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar
from urllib.parse import urlsplit

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry

from kvs.base import MissingWindow, StoreError
from kvs.blocks import FORMAT, BlockBackend, check_window_id
from kvs.codec import pack, unpack

T = TypeVar("T")

_RETRYABLE = (redis.ConnectionError, redis.TimeoutError, TimeoutError, ConnectionError)


class RedisBackend(BlockBackend):
    """``redis://``, ``rediss://``, ``unix://`` or ``redis+cluster://host:port,host:port``.

    ``retries`` attempts after the first, backoff doubling from ``backoff`` seconds
    up to ``backoff_cap``; ``namespace`` prefixes every key.
    """

    def __init__(self, url: str, *, namespace: str = "mta", retries: int = 6, backoff: float = 0.05,
                 backoff_cap: float = 2.0, socket_timeout: float = 5.0, max_connections: int = 64) -> None:
        super().__init__()
        self.url = url
        self.namespace = namespace
        self._retry = Retry(ExponentialWithJitterBackoff(cap=backoff_cap, base=backoff), retries,
                            supported_errors=_RETRYABLE)
        options: dict[str, Any] = dict(socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout,
                                       decode_responses=False, protocol=2)
        scheme = urlsplit(url).scheme
        if scheme == "redis+cluster":
            hosts = urlsplit(url).netloc.split(",")
            nodes = [ClusterNode(h.rpartition(":")[0] or "127.0.0.1", int(h.rpartition(":")[2] or 6379))
                     for h in hosts]
            self.client: Any = RedisCluster(startup_nodes=nodes, max_connections=max_connections, **options)
        elif scheme in ("redis", "rediss", "unix"):
            pool = redis.BlockingConnectionPool.from_url(url, max_connections=max_connections, timeout=socket_timeout,
                                                         **options)
            self.client = redis.Redis(connection_pool=pool, retry=Retry(ExponentialWithJitterBackoff(), 0))
        else:
            raise ValueError(f"not a Redis URL: {url!r}")

    def _key(self, window_id: str, part: str) -> str:
        return f"{self.namespace}:{{{window_id}}}:{part}"

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        def fail(error: Exception) -> None:
            pass
        try:
            return self._retry.call_with_retry(fn, fail)
        except _RETRYABLE as error:
            raise StoreError(f"{self.url}: {what} failed after retries: {type(error).__name__}: {error}") from error
        except redis.ResponseError as error:
            raise StoreError(f"{self.url}: {what} was refused: {error} "
                             "(a key of the window holds something mta did not write?)") from error

    # -- windows -------------------------------------------------------------------

    def create(self, window_id: str, meta: dict[str, Any]) -> None:
        check_window_id(window_id)
        key = self._key(window_id, "meta")

        def do() -> list:
            pipe = self.client.pipeline(transaction=True)
            pipe.hsetnx(key, "format", FORMAT)
            pipe.hsetnx(key, "meta", pack(meta))
            return pipe.execute()

        if not self._call(f"create window {window_id!r}", do)[0]:
            raise StoreError(f"window {window_id!r} already exists in {self.url}; open it with Window.open")
        self._call("register window", lambda: self.client.sadd(f"{self.namespace}:windows", window_id))
        self.round_trips.writes += 2

    def _record(self, window_id: str) -> dict[bytes, bytes]:
        check_window_id(window_id)
        found = self._call(f"read window {window_id!r}", lambda: self.client.hgetall(self._key(window_id, "meta")))
        self.round_trips.reads += 1
        if not found:
            raise MissingWindow(f"no window {window_id!r} in {self.url}")
        if found.get(b"format") != FORMAT.encode() or b"meta" not in found:
            raise StoreError(f"key {self._key(window_id, 'meta')} in {self.url} is not an {FORMAT} window "
                             f"(format {found.get(b'format')!r})")
        return found

    def meta(self, window_id: str) -> dict[str, Any]:
        return unpack(self._record(window_id)[b"meta"])

    def load(self, window_id: str) -> bytes | None:
        return self._record(window_id).get(b"state")

    def windows(self) -> list[str]:
        members = self._call("list windows", lambda: self.client.smembers(f"{self.namespace}:windows"))
        return sorted(m.decode() for m in members)

    def delete(self, window_id: str) -> bool:
        check_window_id(window_id)
        keys = [self._key(window_id, "meta"), self._key(window_id, "nodes")]
        removed = self._call(f"delete window {window_id!r}", lambda: self.client.delete(*keys))
        self._call("unregister window", lambda: self.client.srem(f"{self.namespace}:windows", window_id))
        return bool(removed)

    # -- blocks --------------------------------------------------------------------

    def fetch(self, window_id: str, keys: list[bytes]) -> list[bytes | None]:
        nodes = self._key(window_id, "nodes")
        self.round_trips.reads += 1
        return self._call(f"read window {window_id!r}", lambda: self.client.hmget(nodes, keys))

    def commit(self, window_id: str, writes: dict[bytes, bytes], deletes: list[bytes], checkpoint: bytes) -> None:
        nodes, meta = self._key(window_id, "nodes"), self._key(window_id, "meta")

        def do() -> list:
            pipe = self.client.pipeline(transaction=True)
            if deletes:
                pipe.hdel(nodes, *deletes)
            if writes:
                pipe.hset(nodes, mapping=writes)
            pipe.hset(meta, "state", checkpoint)
            return pipe.execute()

        self.round_trips.writes += 1
        self._call(f"commit window {window_id!r}", do)

    def close(self) -> None:
        self.client.close()
