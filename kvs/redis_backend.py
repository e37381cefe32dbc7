"""Windows in Redis or Redis Cluster.

Keys of window ``w`` (all share the hash tag ``{w}``, so a window lives in one
cluster slot and a commit is one Lua script, run atomically):

- ``<ns>:{w}:meta``  hash: ``format``, ``meta`` (creation record), ``state`` (checkpoint),
  ``writer`` (the fencing token of the lease holder, checked by every commit)
- ``<ns>:{w}:nodes`` hash: one field per block, ``level:generation:block``
- ``<ns>:{w}:lease`` string ``<ttl ms>:<owner>``, expiring with the writer's lease

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
from kvs.leases import Lease, WindowBusy, WindowDeleted, WindowFenced, parse_record

T = TypeVar("T")

_RETRYABLE = (redis.ConnectionError, redis.TimeoutError, TimeoutError, ConnectionError)


class RedisBackend(BlockBackend):
    """``redis://``, ``rediss://``, ``unix://`` or ``redis+cluster://host:port,host:port``.

    ``retries`` attempts after the first, backoff doubling from ``backoff`` seconds
    up to ``backoff_cap``; ``namespace`` prefixes every key.
    """

    def __init__(self, url: str, *, namespace: str = "mta", retries: int = 6, backoff: float = 0.05,
                 backoff_cap: float = 2.0, socket_timeout: float = 5.0, max_connections: int = 64,
                 **lease_options: Any) -> None:
        super().__init__(**lease_options)
        self.url = url
        self.namespace = namespace
        self._retry = Retry(ExponentialWithJitterBackoff(cap=backoff_cap, base=backoff), retries,
                            supported_errors=_RETRYABLE)
        options: dict[str, Any] = dict(socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout,
                                       decode_responses=False, protocol=2)
        scheme = urlsplit(url).scheme
        self.cluster = scheme == "redis+cluster"
        if self.cluster:
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
        self._create, self._acquire, self._renew, self._release, self._commit = (
            self.client.register_script(script) for script in (_CREATE, _ACQUIRE, _RENEW, _RELEASE, _COMMIT))

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

    # -- windows and leases ----------------------------------------------------------

    def _keys(self, window_id: str, *parts: str) -> list[str]:
        return [self._key(window_id, part) for part in parts]

    def _script(self, what: str, script: Any, keys: list[str], args: list[Any]) -> Any:
        return self._call(what, lambda: script(keys=keys, args=args))

    def create(self, window_id: str, meta: dict[str, Any], *, replace: bool = False) -> Lease:
        check_window_id(window_id)
        lease = self.new_lease(window_id)
        created = self._script(f"create window {window_id!r}", self._create,
                               self._keys(window_id, "meta", "nodes", "lease"),
                               [FORMAT, pack(meta), lease.token, lease.record, _ms(lease.ttl), int(replace)])
        if not created:
            raise StoreError(f"window {window_id!r} already exists in {self.url}; open it instead (Window.open for a "
                             "window, Stream.load for a stream)")
        self._call("register window", lambda: self.client.sadd(f"{self.namespace}:windows", window_id))
        self.round_trips.writes += 2
        return lease

    def acquire(self, window_id: str, *, take_over: bool = False) -> Lease:
        check_window_id(window_id)
        lease = self.new_lease(window_id)
        found = self._script(f"open window {window_id!r}", self._acquire, self._keys(window_id, "meta", "lease"),
                             [lease.token, lease.record, _ms(lease.ttl), lease.owner, int(take_over)])
        self.round_trips.writes += 1
        if found[0] == 0:
            raise MissingWindow(f"no window {window_id!r} in {self.url}")
        if found[0] == -1:
            owner, ttl = parse_record(found[1].decode())
            raise WindowBusy(window_id, self.url, owner, max(0, found[2]) / 1000, ttl)
        return lease

    def renew(self, leases: list[Lease]) -> list[StoreError | None]:
        if not leases:
            return []
        if self.cluster:  # a cluster pipeline refuses scripts: one call per lease
            found = [self._script(f"renew lease of window {lease.window_id!r}", self._renew,
                                  self._keys(lease.window_id, "meta", "lease"),
                                  [lease.token, lease.record, _ms(lease.ttl)]) for lease in leases]
        else:
            found = self._call(f"renew {len(leases)} leases", lambda: self._renew_pipelined(leases))
        self.round_trips.writes += 1
        return [self._lost(lease.window_id, f) for lease, f in zip(leases, found)]

    def _renew_pipelined(self, leases: list[Lease]) -> list[Any]:
        pipe = self.client.pipeline(transaction=False)
        for lease in leases:
            pipe.evalsha(self._renew.sha, 2, *self._keys(lease.window_id, "meta", "lease"),
                         lease.token, lease.record, _ms(lease.ttl))
        found = pipe.execute(raise_on_error=False)
        if any(isinstance(f, redis.exceptions.NoScriptError) for f in found):
            self.client.script_load(self._renew.script)  # a restarted server forgot it
            raise redis.ConnectionError("the lease script was reloaded: renew again")
        return found

    def _lost(self, window_id: str, found: Any) -> StoreError | None:
        """The error of a lease script's answer: 1 held, 0 taken over, -1 window deleted."""
        if isinstance(found, Exception):
            return StoreError(f"{self.url}: lease of window {window_id!r}: {found}")
        if found == 1:
            return None
        return WindowFenced(window_id, self.url) if found == 0 else WindowDeleted(window_id, self.url)

    def release(self, lease: Lease) -> None:
        """One attempt, no retries: a lease not released expires anyway (this runs at exit too)."""
        try:
            self._release(keys=self._keys(lease.window_id, "meta", "lease"), args=[lease.token])
        except redis.RedisError as error:
            raise StoreError(f"{self.url}: release of window {lease.window_id!r} failed: {error}") from error

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

    def load(self, window_id: str, lease: Lease | None = None) -> bytes | None:
        try:
            record = self._record(window_id)
        except MissingWindow:
            if lease is not None:
                raise WindowDeleted(window_id, self.url) from None
            raise
        if lease is not None and record.get(b"writer") != lease.token.encode():
            raise WindowFenced(window_id, self.url)
        return record.get(b"state")

    def windows(self) -> list[str]:
        members = self._call("list windows", lambda: self.client.smembers(f"{self.namespace}:windows"))
        return sorted(m.decode() for m in members)

    def delete(self, window_id: str) -> bool:
        check_window_id(window_id)
        keys = self._keys(window_id, "meta", "nodes", "lease")
        removed = self._call(f"delete window {window_id!r}", lambda: self.client.delete(*keys))
        self._call("unregister window", lambda: self.client.srem(f"{self.namespace}:windows", window_id))
        return bool(removed)

    # -- blocks --------------------------------------------------------------------

    def fetch(self, window_id: str, keys: list[bytes]) -> list[bytes | None]:
        if not keys:  # a checkpoint without levels (HMGET takes at least one field)
            return []
        nodes = self._key(window_id, "nodes")
        self.round_trips.reads += 1
        return self._call(f"read window {window_id!r}", lambda: self.client.hmget(nodes, keys))

    def commit(self, window_id: str, writes: dict[bytes, bytes], deletes: list[bytes], checkpoint: bytes,
               lease: Lease) -> None:
        args: list[Any] = [lease.token, lease.record, _ms(lease.ttl), checkpoint, len(deletes), *deletes]
        for key, value in writes.items():
            args += (key, value)
        self.round_trips.writes += 1
        done = self._script(f"commit window {window_id!r}", self._commit,
                            self._keys(window_id, "meta", "nodes", "lease"), args)
        error = self._lost(window_id, done)
        if error is not None:
            raise error

    def close(self) -> None:
        super().close()
        self.client.close()


def _ms(seconds: float) -> int:
    return max(1, round(seconds * 1000))


# The scripts below run atomically in Redis, on the keys of one window (one hash tag,
# so one Redis Cluster slot). Keys: meta (hash: format, meta, state, writer = the
# fencing token of the lease holder), nodes (hash of blocks), lease (string
# "<ttl ms>:<owner>" that expires with the lease).

_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  if ARGV[6] ~= '1' then return 0 end
  redis.call('DEL', KEYS[1], KEYS[2])
end
redis.call('HSET', KEYS[1], 'format', ARGV[1], 'meta', ARGV[2], 'writer', ARGV[3])
redis.call('SET', KEYS[3], ARGV[4], 'PX', ARGV[5])
return 1
"""

_ACQUIRE = """
if redis.call('HEXISTS', KEYS[1], 'meta') == 0 then return {0} end
local held = redis.call('GET', KEYS[2])
if held and ARGV[5] ~= '1' then
  local owner = string.sub(held, string.find(held, ':', 1, true) + 1)
  if owner ~= ARGV[4] then return {-1, held, redis.call('PTTL', KEYS[2])} end
end
redis.call('HSET', KEYS[1], 'writer', ARGV[1])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return {1}
"""

# 1: renewed; 0: another writer has the window; -1: it is gone (as _COMMIT).
_RENEW = """
if redis.call('HGET', KEYS[1], 'writer') == ARGV[1] then
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
  return 1
end
return redis.call('EXISTS', KEYS[1]) - 1
"""

_RELEASE = """
if redis.call('HGET', KEYS[1], 'writer') == ARGV[1] then return redis.call('DEL', KEYS[2]) end
return 0
"""

# ARGV: token, lease record, ttl ms, checkpoint, number of deletes, the deleted fields,
# then field, value pairs to write. Chunked: Lua's unpack takes at most ~8000 values.
_COMMIT = """
if redis.call('HGET', KEYS[1], 'writer') ~= ARGV[1] then
  return redis.call('EXISTS', KEYS[1]) - 1
end
local i, n = 6, #ARGV
local last = 5 + tonumber(ARGV[5])
while i <= last do
  local j = math.min(i + 999, last)
  redis.call('HDEL', KEYS[2], unpack(ARGV, i, j))
  i = j + 1
end
while i <= n do
  local j = math.min(i + 1999, n)
  redis.call('HSET', KEYS[2], unpack(ARGV, i, j))
  i = j + 1
end
redis.call('HSET', KEYS[1], 'state', ARGV[4])
redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[3])
return 1
"""
