"""One writer per stored window (kvs.leases), and one backend per store (kvs.urls).

Writers are real processes (a small child program driven over stdin) on the sqlite
file store, a real Redis server and a 3-master Redis Cluster: a second opening is
refused while the first writer lives; a take-over fences the first writer (its
commits fail and nothing of them lands); a SIGKILLed writer blocks its window only
until its lease expires; a SIGSTOPped writer that resumes after a take-over lands
nothing. A property-based test checks the lease rules at the kvs level against a model.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest
import redis
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

import kvs
from conftest import hsettings
from kvs import codec
from mta import MaxSize, Window
from mta.monoid import Collect, Sum

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Lease ttl of the child writers: short, so that an expiry takes seconds.
TTL = 2.0

WRITER = r"""
import sys
sys.path.insert(0, {root!r})
import kvs
from mta import MaxSize, Window
from mta.monoid import Collect

url, wid, mode = sys.argv[1:4]
backend = kvs.connect(url, lease_ttl={ttl})
try:
    if mode == "create":
        w = Window(Collect(), MaxSize(10_000), store=backend, window_id=wid, buffer_size=4, block_size=4)
    else:
        w = Window.open(backend, wid, Collect(), MaxSize(10_000), take_over=mode == "take")
except kvs.WindowBusy as busy:
    print("busy", busy.expires_in, busy, flush=True)
    sys.exit(3)
print("open", flush=True)
for line in sys.stdin:  # "write v1 v2 ...": insert (timestamp = value) and flush; "close"
    command, *values = line.split()
    try:
        if command == "close":
            w.close()
        else:
            for v in values:
                w.insert(int(v), int(v))
            w.flush()
        print("ok", flush=True)
    except kvs.StoreError as error:
        print("error", type(error).__name__, error, flush=True)
"""


class Writer:
    """A child process that writes one window when told to."""

    def __init__(self, url: str, wid: str, mode: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WRITER.format(root=ROOT, ttl=TTL), url, wid, mode],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.first = self.proc.stdout.readline().strip()

    def send(self, command: str) -> str:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def write(self, values: range) -> str:
        return self.send("write " + " ".join(map(str, values)))

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.proc.stdin.close()


@pytest.fixture(params=["file", "redis", "cluster"])
def url(request) -> str:
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture
def writers():
    started: list[Writer] = []

    def start(url: str, wid: str, mode: str) -> Writer:
        started.append(Writer(url, wid, mode))
        return started[-1]

    yield start
    for writer in started:
        writer.end()


def stored_values(url: str, wid: str) -> list[int]:
    """What the store holds, read by opening the window without take-over (its writer closed it)."""
    window = Window.open(url, wid, Collect(), MaxSize(10_000))
    try:
        return list(window.query())
    finally:
        window.close()


def test_a_second_writer_is_refused_and_a_take_over_fences_the_first(url, writers) -> None:
    wid = uuid.uuid4().hex
    first = writers(url, wid, "create")
    assert first.first == "open" and first.write(range(0, 10)) == "ok"
    second = writers(url, wid, "open")
    assert second.first.startswith("busy") and second.proc.wait() == 3
    assert f"window {wid!r}" in second.first and "take_over=True" in second.first
    assert 0 < float(second.first.split()[1]) <= TTL
    with pytest.raises(kvs.WindowBusy, match="has a live writer"):  # from this process too
        Window.open(url, wid, Collect(), MaxSize(10_000))
    assert kvs.connect(url).meta(wid)["algorithm"] == "amta" and wid in kvs.connect(url).windows()  # reads work
    taker = writers(url, wid, "take")
    assert taker.first == "open" and taker.write(range(100, 120)) == "ok"
    reply = first.write(range(10, 50))  # auto commits in the background, then a flush: all refused
    assert reply.startswith("error WindowFenced") and "another writer took it over" in reply
    assert first.write(range(50, 60)).startswith("error WindowFenced")  # and it stays fenced
    assert taker.send("close") == "ok"
    assert stored_values(url, wid) == [*range(0, 10), *range(100, 120)]


def test_a_killed_writer_blocks_its_window_only_until_its_lease_expires(url, writers) -> None:
    wid = uuid.uuid4().hex
    dead = writers(url, wid, "create")
    assert dead.write(range(0, 30)) == "ok"
    time.sleep(TTL)  # its lease lives on while it does (renewed in the background)
    with pytest.raises(kvs.WindowBusy):
        Window.open(url, wid, Collect(), MaxSize(10_000))
    dead.proc.send_signal(signal.SIGKILL)
    dead.proc.wait()
    deadline = time.monotonic() + 30  # generous: the lease expires within TTL of the kill
    while True:
        try:
            window = Window.open(url, wid, Collect(), MaxSize(10_000))  # no take-over needed
            break
        except kvs.WindowBusy as busy:
            assert busy.expires_in <= TTL and time.monotonic() < deadline
            time.sleep(busy.expires_in + 0.05)
    assert list(window.query()) == list(range(30))
    window.close()


def test_a_paused_writer_taken_over_lands_nothing_when_it_resumes(url, writers) -> None:
    wid = uuid.uuid4().hex
    paused = writers(url, wid, "create")
    assert paused.write(range(0, 10)) == "ok"
    paused.proc.send_signal(signal.SIGSTOP)
    try:
        taker = writers(url, wid, "take")
        assert taker.first == "open" and taker.write(range(100, 110)) == "ok"
    finally:
        paused.proc.send_signal(signal.SIGCONT)
    for values in (range(10, 14), range(14, 200), range(200, 201)):
        assert paused.write(values).startswith("error WindowFenced")
    assert taker.write(range(110, 115)) == "ok"
    assert taker.send("close") == "ok"
    assert stored_values(url, wid) == [*range(0, 10), *range(100, 115)]


def test_a_closed_window_reopens_at_once_in_another_process(url, writers) -> None:
    wid = uuid.uuid4().hex
    first = writers(url, wid, "create")
    assert first.write(range(5)) == "ok" and first.send("close") == "ok"
    second = writers(url, wid, "open")  # no wait for the lease: close() released it
    assert second.first == "open" and second.write(range(5, 8)) == "ok" and second.send("close") == "ok"
    assert stored_values(url, wid) == list(range(8))


def test_a_writer_that_exits_without_closing_releases_its_lease(url, writers) -> None:
    wid = uuid.uuid4().hex
    first = writers(url, wid, "create")
    assert first.write(range(5)) == "ok"
    first.proc.stdin.close()  # the program ends without close(): its leases go at exit
    assert first.proc.wait() == 0
    assert stored_values(url, wid) == list(range(5))  # no WindowBusy


def test_deleting_an_open_window_fences_its_writer_without_bringing_it_back(url, writers) -> None:
    wid = uuid.uuid4().hex
    writer = writers(url, wid, "create")
    assert writer.write(range(5)) == "ok"
    assert kvs.connect(url).delete(wid)
    reply = writer.write(range(5, 10))
    assert reply.startswith("error WindowDeleted") and "deleted while this writer had it open" in reply
    assert wid not in kvs.connect(url).windows()
    with pytest.raises(kvs.MissingWindow):
        kvs.connect(url).meta(wid)


# --------------------------------------------------------------------------- the rules, at the kvs level

OPS = st.lists(st.one_of(
    st.tuples(st.just("open"), st.booleans()),                  # take_over?
    st.tuples(st.just("commit"), st.integers(0, 5), st.integers()),  # writer (modulo how many), value
    st.tuples(st.just("release"), st.integers(0, 5)),
    st.tuples(st.just("delete")),
), max_size=25)


@pytest.fixture(params=["memory", "file", "redis", "cluster"])
def any_backend(request) -> kvs.Backend:
    if request.param == "memory":
        return kvs.connect("memory://")
    return kvs.connect(request.getfixturevalue(f"{request.param}_url"))


def stored_state(backend: kvs.Backend, wid: str) -> object:
    """The ``state`` of the window's last commit, as the store holds it."""
    if isinstance(backend, kvs.MemoryBackend):
        return backend._windows[wid].state
    blob = backend.load(wid)
    return codec.unpack(blob)["state"] if blob else None


@given(ops=OPS)
@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_leases_follow_the_model(any_backend, ops) -> None:
    """Writers open (or take over), commit, release; the window is deleted. Model: the
    newest opening is the writer; its commits land (they renew a released lease), every
    other writer's raise WindowFenced (WindowDeleted after a delete) and land nothing;
    an opening while the lease is live and not released is WindowBusy."""
    backend, wid = any_backend, uuid.uuid4().hex
    stores = [backend.store(wid, backend.create(wid, {}), block_size=4)]
    holder, live, deleted, stored = 0, True, False, None
    for op in ops:
        if op[0] == "open":
            if deleted:
                with pytest.raises(kvs.MissingWindow):
                    backend.store(wid, take_over=op[1])
            elif live and not op[1]:
                with pytest.raises(kvs.WindowBusy):
                    backend.store(wid)
            else:
                stores.append(backend.store(wid, take_over=op[1], block_size=4))
                holder, live = len(stores) - 1, True
        elif op[0] == "commit":
            i = op[1] % len(stores)
            stores[i].level(0).extend([op[2]])
            if i == holder and not deleted:
                stores[i].commit({"value": op[2]})
                stored, live = op[2], True
            else:
                # the holder learns of a delete; a writer fenced before keeps its first error
                with pytest.raises(kvs.WindowDeleted if i == holder else kvs.WindowFenced):
                    stores[i].commit({"value": op[2]})
        elif op[0] == "release":
            i = op[1] % len(stores)
            if i == holder and not deleted:
                stores[i].release()
                live = False
        else:
            backend.delete(wid)
            deleted = True
        if deleted:
            assert wid not in backend.windows()
        else:
            assert stored_state(backend, wid) == ({"value": stored} if stored is not None else None)
    for store in stores:
        backend.keeper.drop(store.lease)
    backend.delete(wid)


def test_lease_errors_survive_pickling() -> None:
    """They cross process boundaries (multiprocessing, Spark workers) with their fields."""
    import pickle

    for error in (kvs.WindowBusy("w", "redis://h:1/0", "me", 1.5, 10.0), kvs.WindowFenced("w", "x"),
                  kvs.WindowDeleted("w", "x")):
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and str(again) == str(error) and again.window_id == "w"
    assert pickle.loads(pickle.dumps(kvs.WindowBusy("w", "u", "me", 1.5, 10.0))).expires_in == 1.5


def test_a_commit_is_one_round_trip_with_its_fencing_check(redis_url, monkeypatch) -> None:
    """Redis sees one command per commit (EVALSHA of the cached script), as a MULTI/EXEC was."""
    backend = kvs.RedisBackend(redis_url, lease_ttl=3600)  # its own: no renewal of other windows' leases
    w = Window(Sum(), MaxSize(100), store=backend, buffer_size=8, block_size=4)
    w.insert(0, 1)
    w.flush()  # the script is loaded by now
    sent: list[int] = []
    send = redis.connection.Connection.send_packed_command
    monkeypatch.setattr(redis.connection.Connection, "send_packed_command",
                        lambda self, *args, **kwargs: (sent.append(1), send(self, *args, **kwargs))[1])
    before = backend.round_trips.writes
    for ts in range(1, 21):
        w.insert(ts, 1)
        w.flush()
    assert len(sent) == backend.round_trips.writes - before == 20
    monkeypatch.undo()
    w.close()
    backend.close()


# --------------------------------------------------------------------------- one backend per store

def test_memory_names_are_one_store_per_process() -> None:
    w = Window(Sum(), MaxSize(10), store="memory://shared", window_id="m")
    for ts in range(100):
        w.insert(ts, ts)
    w.close()
    assert Window.open("memory://shared", "m", Sum(), MaxSize(10)).query() == sum(range(90, 100))
    assert kvs.connect("memory://shared") is kvs.connect("memory://shared")
    assert kvs.connect("memory://other").windows() == []
    private = kvs.connect("memory://")
    assert private is not kvs.connect("memory://")  # bare memory://: keep the object to reopen
    Window(Sum(), store=private, window_id="p").close()
    assert Window.open(private, "p", Sum()).query() == 0
    kvs.disconnect("memory://shared")


def test_spellings_of_one_redis_share_one_backend(redis_url) -> None:
    port = redis_url.split(":")[2].split("/")[0]
    spellings = [f"redis://127.0.0.1:{port}", f"redis://127.0.0.1:{port}/", f"redis://127.0.0.1:{port}/0",
                 f"REDIS://127.0.0.1:{port}/0", f"redis://127.0.0.1:{port}/5?db=0"]
    backends = {id(kvs.connect(s)) for s in spellings}
    assert backends == {id(kvs.connect(redis_url))}
    others = [f"redis://localhost:{port}/0", f"redis://127.0.0.1:{port}/1"]  # maybe the same server: not provably
    assert len({id(kvs.connect(s)) for s in others} | backends) == 3
    for other in others:
        kvs.disconnect(other)
    assert kvs.urls.normalise("redis://Host") == "redis://host:6379/0"
    assert (kvs.urls.normalise("redis+cluster://b:7001,a,b:7001/") ==
            kvs.urls.normalise("redis+cluster://a:6379,b:7001") == "redis+cluster://a:6379,b:7001")


def test_a_memory_url_in_capitals_is_a_memory_store(tmp_path, monkeypatch) -> None:
    """``MEMORY://`` made a sqlite file named ``MEMORY:`` in the working directory (outside tester)."""
    monkeypatch.chdir(tmp_path)
    named = kvs.connect("MEMORY://Caps")
    assert isinstance(named, kvs.MemoryBackend) and named is kvs.connect("memory://Caps")
    assert kvs.connect("Memory://") is not kvs.connect("Memory://")  # bare: a new one each time
    assert kvs.urls.normalise("MEMORY://Caps") == "memory://Caps"
    assert list(tmp_path.iterdir()) == []
    kvs.disconnect("memory://Caps")


def test_spellings_of_one_file_share_one_backend(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    backend = kvs.connect("w.db")
    try:
        assert kvs.connect(str(tmp_path / "w.db")) is backend is kvs.connect(f"file://{tmp_path}/w.db")
        (tmp_path / "sub").mkdir()
        monkeypatch.chdir(tmp_path / "sub")
        elsewhere = kvs.connect("w.db")  # the same text, another file
        assert elsewhere is not backend and elsewhere.url == str(tmp_path / "sub" / "w.db")
        kvs.disconnect("w.db")
    finally:
        kvs.disconnect(tmp_path / "w.db")


def test_a_file_store_from_before_leases_gets_them(tmp_path) -> None:
    """A file written by a version without leases (no lease columns) is opened and used."""
    import sqlite3

    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE mta_store (format TEXT NOT NULL);
        CREATE TABLE windows (id TEXT PRIMARY KEY, meta BLOB NOT NULL, state BLOB) WITHOUT ROWID;
        CREATE TABLE blocks (window TEXT NOT NULL, key BLOB NOT NULL, data BLOB NOT NULL,
                             PRIMARY KEY (window, key)) WITHOUT ROWID;
    """)
    db.execute("INSERT INTO mta_store VALUES (?)", (kvs.blocks.FORMAT,))
    db.commit()
    db.close()
    try:
        with Window(Sum(), MaxSize(10), store=path, window_id="w") as w:
            w.insert(1, 5)
        again = Window.open(path, "w", Sum(), MaxSize(10))
        with pytest.raises(kvs.WindowBusy):
            Window.open(path, "w", Sum(), MaxSize(10))
        assert again.query() == 5
        again.close()
    finally:
        kvs.disconnect(path)
