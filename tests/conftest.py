"""Shared fixtures, oracles and instrumented monoids/stores for the test suite.

Test modules import helpers from here (``from conftest import ...``): pytest puts
``tests/`` on ``sys.path`` because the directory is not a package.

Hypothesis profiles: ``ci`` (the default: derandomized, no deadline, so every
run explores the same examples) and ``dev`` (random exploration). Choose one
with the environment variable ``HYPOTHESIS_PROFILE``. Test modules build their
settings with :func:`hsettings`, which takes the chosen profile as parent
explicitly: a module that calls ``settings.load_profile`` at import time (as
``test_monoid.py`` does) then cannot change how the other modules run.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections import Counter
from functools import reduce
from pathlib import Path
from typing import Any, Callable, Iterable

from hypothesis import settings

from kvs import MemoryStore
from kvs.base import Level, LevelStore
from mta.algorithms import ALGORITHMS, Aggregator, FiBA
from mta.counting import CountingMonoid  # noqa: F401  (test modules import it from here)
from mta.monoid import Count, First, Last, Max, Monoid, Record, Sum
from mta.policy import Agg

# --------------------------------------------------------------------------- hypothesis

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)


def hsettings(**overrides: Any) -> settings:
    """Settings for one test: the active profile plus ``overrides`` (e.g. max_examples)."""
    return settings(settings.get_profile(PROFILE), **overrides)


# --------------------------------------------------------------------------- algorithms

ALGORITHM_NAMES = list(ALGORITHMS)
TREE_ALGORITHMS = [name for name, cls in ALGORITHMS.items() if cls.uses_store]
BASELINES = [name for name, cls in ALGORITHMS.items() if not cls.uses_store]
#: Tree-algorithm options that force flushes, cache refills and cache misses all the time.
TINY_TREE_OPTIONS = [
    {"buffer_size": 1, "cache_size": 1},
    {"buffer_size": 2, "cache_size": 2},
    {"buffer_size": 3, "cache_size": 1},
    {"buffer_size": 1, "cache_size": 2},
]


def supports(name: str, monoid: Monoid) -> bool:
    """Whether algorithm ``name`` can serve ``monoid`` (subtract_on_evict needs an inverse)."""
    try:
        ALGORITHMS[name].check_monoid(monoid)
    except TypeError:
        return False
    return True


def make_aggregator(name: str, monoid: Monoid, **options: Any) -> Aggregator:
    return ALGORITHMS[name](monoid, **options)


def options_id(options: dict) -> str:
    if not options:
        return "default"
    return "".join(f"{key[0]}{value}" for key, value in options.items())


# --------------------------------------------------------------------------- monoids

def record_monoid() -> Record:
    """A product monoid with commutative (count, sum, max) and order-sensitive (first, last) fields."""
    return Record(n=Count(), sum=Sum(), max=Max(), first=First(), last=Last())


# --------------------------------------------------------------------------- oracles

def fold(monoid: Monoid, partials: Iterable[Any]) -> Any:
    """The aggregate of ``partials`` by plain left-to-right reduction."""
    return reduce(monoid.combine, partials, monoid.identity)


def oracle_prefix(monoid: Monoid, partials: list, wsp: Callable[[Any, Any], bool],
                  total: Any = None) -> int:
    """Length of the longest prefix P with ``wsp(total, aggregate(P))``, scanning prefixes.

    ``total`` defaults to the aggregate of all of ``partials``. The scan stops at
    the first prefix the policy keeps (policies are prefix-monotone).
    """
    if total is None:
        total = fold(monoid, partials)
    acc = monoid.identity
    n = 0
    for partial in partials:
        acc = monoid.combine(acc, partial)
        if not wsp(total, acc):
            break
        n += 1
    return n


def oracle_enforce(monoid: Monoid, partials: list, wsp: Callable[[Any, Any], bool]) -> int:
    """Apply enforcement to the list ``partials`` in place; return how many were evicted."""
    n = oracle_prefix(monoid, partials, wsp)
    del partials[:n]
    return n


class WindowOracle:
    """What ``mta.Window(monoid, policy)`` must hold, recomputed from a plain list.

    After each insertion the policy sees ``Agg(count, newest ts, value)``
    for the whole window and for each prefix (``value`` is a field view for a
    Record), and the longest condemned prefix is dropped.
    """

    def __init__(self, monoid: Monoid, policy: Callable[[Any, Any], bool] | None) -> None:
        self.monoid = monoid
        self.policy = policy
        self.items: list[tuple[Any, Any]] = []  # (timestamp, lifted partial)

    def _agg(self, items: list[tuple[Any, Any]]) -> Agg:
        value = fold(self.monoid, (p for _, p in items))
        if isinstance(self.monoid, Record):
            value = self.monoid.view(value)
        if not items:
            return Agg(0, None, value)
        return Agg(len(items), items[-1][0], value)

    def insert(self, timestamp: Any, value: Any) -> int:
        self.items.append((timestamp, self.monoid.lift(value)))
        if self.policy is None:
            return 0
        total = self._agg(self.items)
        n = 0
        while n < len(self.items) and self.policy(total, self._agg(self.items[:n + 1])):
            n += 1
        del self.items[:n]
        return n

    def partials(self) -> list[Any]:
        return [p for _, p in self.items]

    def timestamps(self) -> list[Any]:
        return [t for t, _ in self.items]

    def query(self) -> Any:
        return self.monoid.lower(fold(self.monoid, self.partials()))


# --------------------------------------------------------------------------- instrumentation

class CountingLevel(Level):
    """A MemoryLevel whose calls are tallied in a shared Counter as ``(method, level)``."""

    def __init__(self, inner: Level, number: int, counts: Counter) -> None:
        self._inner = inner
        self._number = number
        self._counts = counts

    @property
    def head(self) -> int:  # type: ignore[override]
        return self._inner.head

    @property
    def tail(self) -> int:  # type: ignore[override]
        return self._inner.tail

    def _count(self, method: str) -> None:
        self._counts[method] += 1
        self._counts[method, self._number] += 1

    def extend(self, values: list[Any]) -> None:
        self._count("extend")
        self._inner.extend(values)

    def read(self, start: int, stop: int) -> list[Any]:
        self._count("read")
        return self._inner.read(start, stop)

    def drop_until(self, index: int) -> None:
        self._count("drop_until")
        self._inner.drop_until(index)

    def reset(self, index: int) -> None:
        self._count("reset")
        self._inner.reset(index)


class CountingStore(LevelStore):
    """A MemoryStore that counts the level calls an algorithm makes (its round trips)."""

    def __init__(self) -> None:
        self._memory = MemoryStore()
        self._wrapped: dict[int, CountingLevel] = {}
        self.counts: Counter = Counter()

    def level(self, number: int) -> CountingLevel:
        if number not in self._wrapped:
            self._wrapped[number] = CountingLevel(self._memory.level(number), number, self.counts)
        return self._wrapped[number]

    def clear(self) -> None:
        self._memory.clear()
        self._wrapped.clear()

    @property
    def levels(self) -> int:
        """How many levels the algorithm has asked for."""
        return len(self._wrapped)

    def reset_counts(self) -> None:
        self.counts.clear()


# --------------------------------------------------------------------------- durable stores
#
# Integration tests run against real servers that the tests start themselves
# (tests/redis_servers.py): never skipped, a failure to start one is an error.

import uuid  # noqa: E402

import pytest  # noqa: E402

import kvs  # noqa: E402
from kvs.servers import RedisCluster, start_redis  # noqa: E402

#: Level-store options that put almost every node in its own block and delete in small batches.
TINY_STORE_OPTIONS = {"block_size": 4, "delete_batch": 3}


@pytest.fixture(scope="session")
def redis_url() -> Iterable[str]:
    url, cleanup = start_redis()
    yield url
    kvs.disconnect(url)
    cleanup()


@pytest.fixture(scope="session")
def cluster_url() -> Iterable[str]:
    with RedisCluster() as cluster:
        yield cluster.url
        kvs.disconnect(cluster.url)


@pytest.fixture(scope="session")
def file_url(tmp_path_factory) -> Iterable[str]:
    path = str(tmp_path_factory.mktemp("file-store") / "windows.db")
    yield path
    kvs.disconnect(path)


@pytest.fixture(params=["file", "redis", "cluster"])
def backend(request) -> kvs.Backend:
    """A durable backend: the sqlite file store, a real Redis server or a 3-master Redis Cluster."""
    return kvs.connect(request.getfixturevalue(f"{request.param}_url"))


def new_window_store(backend: kvs.Backend, **options: Any) -> tuple[str, LevelStore]:
    """A fresh, empty window in ``backend`` and its level store."""
    window_id = uuid.uuid4().hex
    lease = backend.create(window_id, {})
    return window_id, backend.store(window_id, lease, **{**TINY_STORE_OPTIONS, **options})


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for every test (the JVM takes seconds to start)."""
    from spark_integration.session import local_session

    session = local_session("mta-tests", cores=2)
    yield session
    session.stop()


class Flaky(kvs.FileBackend):
    """A file store that fails every call while ``down``."""

    down = False

    def _gate(self) -> None:
        if self.down:
            raise kvs.StoreError("injected: the store is down")

    def fetch(self, window_id: str, keys: list[bytes]) -> list[bytes | None]:
        self._gate()
        return super().fetch(window_id, keys)

    def commit(self, window_id: str, writes: dict, deletes: list, checkpoint: bytes, lease: Any) -> None:
        self._gate()
        super().commit(window_id, writes, deletes, checkpoint, lease)

    def load(self, window_id: str, lease: Any = None) -> bytes | None:
        self._gate()
        return super().load(window_id, lease)


@pytest.fixture(scope="module")
def flaky(tmp_path_factory) -> Flaky:
    """A file store that tests take down (``flaky.down = True``) and bring back."""
    return Flaky(tmp_path_factory.mktemp("flaky") / "w.db")


def open_store(kind: str, request) -> tuple[LevelStore, Callable[[], LevelStore]]:
    """A fresh level store of ``kind`` ("memory", "file", "redis") with tiny blocks, and a
    function that opens it again (as a restarted process would: a durable store is taken over)."""
    if kind == "memory":
        store = MemoryStore()
        return store, lambda: store
    backend = kvs.connect(request.getfixturevalue(f"{kind}_url"))
    window_id, store = new_window_store(backend)
    return store, lambda: backend.store(window_id, take_over=True, **TINY_STORE_OPTIONS)


def reopen(tree: FiBA, again: Callable[[], LevelStore], **options: Any) -> FiBA:
    """Flush a stored FiBA and open it again from its checkpoint (the store's, when durable)."""
    tree.flush()
    store = again()
    return FiBA(tree.monoid, store=store, state=store.load() if store.durable else tree.checkpoint(),
                min_arity=tree.min_arity, **options)


#: The benchmarks' --quick runs take seconds each; MTA_SKIP_BENCH_SMOKE=1 skips them locally (CI sets nothing).
bench_smoke = pytest.mark.skipif(bool(os.environ.get("MTA_SKIP_BENCH_SMOKE")), reason="MTA_SKIP_BENCH_SMOKE is set")


def run_quick(script: str, out: Any, timeout: int = 300, args: tuple = ()) -> Any:
    """``python -m benchmarks.<script> --quick --out <out>`` from the checkout, in a subprocess;
    asserts that it succeeded and returns the completed process."""
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", f"benchmarks.{script}", "--quick", "--out", str(out), *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def assert_continues_on_pure_path(windows: list, tmp_path: Path) -> None:
    """Pickle ``windows`` here (compiled when built), load them in a subprocess under
    ``MTA_NO_EXTENSIONS=1``, insert ``(1000, 3.0)`` into each on both sides, and assert both
    give the same algorithm types and results (by ``repr``)."""
    (tmp_path / "w.pkl").write_bytes(pickle.dumps(windows))
    script = ("import pickle, sys, json; ws = pickle.load(open(sys.argv[1], 'rb'))\n"
              "for w in ws: w.insert(1000, 3.0)\n"
              "print(json.dumps([[type(w._algorithm).__name__, repr(w.query())] for w in ws]))")
    env = {**os.environ, "MTA_NO_EXTENSIONS": "1"}
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "w.pkl")], env=env, check=True,
                         capture_output=True, text=True).stdout
    for window in windows:
        window.insert(1000, 3.0)
    assert json.loads(out) == [[type(w._algorithm).__name__, repr(w.query())] for w in windows]
