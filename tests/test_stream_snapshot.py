"""An unpickled (or deep-copied) Stream answers bit for bit as the stream it copies: the
final aggregation's trees, AMTAs and multi-query aggregators combine the slices in an order
of their own, and floats round by that order, so the pickle carries them
(mta.stream.final_state). Compared by ``float.hex`` on this path, and across paths: pickled
on one, unpickled in a subprocess on the other (MTA_NO_EXTENSIONS=1). ``snapshot()`` bytes
(which go to stores) carry no pickle: a stream restored from them rebuilds its final from
the slices. Also: loading from bare ``memory://``."""

from __future__ import annotations

import copy
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

import kvs
import mta
from conftest import hsettings
from kvs import codec
from mta import First, Max, Mean, Min, Monoid, Record, Stream, Sum, Variance
from mta.stream import final as final_module, final_state
from mta.windows import Session, Sliding, Tumbling

ROOT = Path(__file__).resolve().parent.parent
FINALS = ["auto", "lazy", "fiba", "amta", "eager", "shared"]
MONOIDS = {"sum": Sum(), "mean": Mean(), "variance": Variance(), "min": Min(), "first": First(),
           "record": Record(total=Sum(), avg=Mean(), top=Max())}
#: values whose sums round differently in another order (1e16 + 0.1 - 1e16 is 0.0 or 0.1...)
VALUES = [0.1, 1e16, -1e16, 0.3, 2.5, -7.0, 3.7e-5, 1.0]


def exact(value):
    """``value`` with every float as its hex (equal iff bit for bit equal)."""
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, dict):
        return {k: exact(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [exact(v) for v in value]
    return value


def rows(results):
    return [[r.query, exact(r.start), exact(r.end), exact(r.value), r.count, r.final] for r in results]


def make(final: str, monoid: str, lateness: float) -> Stream:
    """A stream of windows of more than 16 slices (``auto`` hands those to its tree), sliding
    windows of few, tumbling ones, and sessions (which no shared group serves)."""
    s = Stream(MONOIDS[monoid], final=final, allowed_lateness=lateness)
    s.add("long", Sliding(40, 1))
    s.add("short", Sliding(6, 2))
    s.add("tumble", Tumbling(5))
    s.add("session", Session(gap=1.5))
    return s


def script(seed: int, n: int = 400, lateness: float = 0) -> list:
    """Inserts (some late, within ``lateness``) and advances, made from ``seed``."""
    import random
    rng = random.Random(seed)
    ops = []
    for t in range(n):
        ts = t * 0.25
        ops.append(["insert", ts, rng.choice(VALUES)])
        if lateness and rng.random() < 0.15:
            ops.append(["insert", ts - rng.random() * lateness, rng.choice(VALUES)])
        if rng.random() < 0.3:
            ops.append(["advance", ts - 0.125])
    ops.append(["advance", n * 0.25 + 25])
    return ops


def play(stream: Stream, ops: list) -> list:
    out = []
    for op in ops:
        if op[0] == "insert":
            stream.insert(op[1], op[2])
        else:
            out.append(rows(stream.advance(op[1])))
    return out


def uninterrupted_and_restored(final: str, monoid: str, lateness: float, ops: list, cut: int) -> tuple[list, list]:
    """The answers after ``ops[:cut]`` of one stream, and of its copy through pickle made there."""
    kept = make(final, monoid, lateness)
    play(kept, ops[:cut])
    restored = pickle.loads(pickle.dumps(kept))
    return play(kept, ops[cut:]), play(restored, ops[cut:])


# -- regressions: each failed before the pickle carried the final's structures -------------


@pytest.mark.parametrize("final", ["auto", "fiba", "amta", "eager", "shared"])
@pytest.mark.parametrize("monoid", ["sum", "mean"])
def test_a_restored_stream_answers_bit_for_bit(final, monoid):
    """The finals with a structure answered later windows in other last bits after a copy
    (a FiBA rebuilt by inserting the slices has another shape, a new AMTA other stacks, a new
    shared group other partials) than the stream never snapshotted."""
    ops = script(7)
    kept, restored = uninterrupted_and_restored(final, monoid, 0, ops, len(ops) // 2)
    assert restored == kept


@pytest.mark.parametrize("final", ["fiba", "eager", "shared"])
def test_a_restored_stream_with_late_tuples_answers_bit_for_bit(final):
    """As above, with late tuples changing slices the tree holds (stale entries at the snapshot)."""
    ops = script(11, lateness=3)
    kept, restored = uninterrupted_and_restored(final, "sum", 3, ops, len(ops) // 3)
    assert restored == kept


@given(st.data())
@hsettings(max_examples=100)
def test_a_pickle_at_any_point_is_invisible(data):
    """Copied at a random point of a random script, for every final and monoid: the same
    answers, floats bit for bit, as the stream never snapshotted."""
    final = data.draw(st.sampled_from(FINALS), label="final")
    monoid = data.draw(st.sampled_from(sorted(MONOIDS)), label="monoid")
    lateness = data.draw(st.sampled_from([0, 2]), label="lateness")
    n = data.draw(st.sampled_from([40, 160, 480]), label="tuples")
    ops = script(data.draw(st.integers(0, 2**32), label="seed"), n, lateness)
    cut = data.draw(st.integers(0, len(ops)), label="cut")
    kept, restored = uninterrupted_and_restored(final, monoid, lateness, ops, cut)
    assert restored == kept


@pytest.mark.parametrize("final", FINALS)
def test_a_snapshot_rebuilds_the_final_from_the_slices(final):
    """``restore(snapshot())`` rebuilds the final from the slices: the same answers wherever the
    combine order cannot show (ints: exactly; floats: ``lazy`` bit for bit, the others within
    rounding)."""
    ops = [op if op[0] != "insert" else [op[0], op[1], int(op[2] * 10) % 97] for op in script(3, lateness=2)]
    kept = make(final, "sum", 2)
    play(kept, ops[:100])
    restored = make(final, "sum", 2)
    restored.restore(kept.snapshot())
    assert play(restored, ops[100:]) == play(kept, ops[100:])
    # floats of one magnitude (1e16 beside 0.1 would cancel: another order, another answer)
    floats = [op if op[0] != "insert" or abs(op[2]) < 1e15 else [op[0], op[1], 0.7] for op in script(3)]
    kept, restored = make(final, "mean", 0), make(final, "mean", 0)
    play(kept, floats[:100])
    restored.restore(kept.snapshot())
    got, expected = play(restored, floats[100:]), play(kept, floats[100:])
    if final == "lazy":
        assert got == expected
    flat = lambda answers: [row[3] for rows_ in answers for row in rows_]  # noqa: E731
    assert [float.fromhex(v) if isinstance(v, str) else v for v in flat(got)] == pytest.approx(
        [float.fromhex(v) if isinstance(v, str) else v for v in flat(expected)], rel=1e-9, abs=1e-6)


def test_a_snapshot_with_a_pickle_in_it_is_refused_and_changes_nothing():
    """Snapshot bytes come from stores, which are not trusted with a pickle: a snapshot with a
    field more (a pickled final, as this format's draft had) is refused before the stream changes."""
    kept = make("fiba", "sum", 0)
    play(kept, script(5)[:80])
    state = list(codec.unpack(kept.snapshot()))
    target = make("fiba", "sum", 0)
    target.insert(0.5, 1.0)
    before = target.snapshot()
    with pytest.raises(ValueError, match="not a Stream snapshot"):
        target.restore(codec.pack(state + [pickle.dumps(os.system)]))
    with pytest.raises(ValueError, match="not a Stream snapshot"):
        target.restore(codec.pack([4] + state[1:]))
    assert target.snapshot() == before


@pytest.mark.parametrize("foreign", [os.system, final_module.call], ids=["os.system", "final.call"])
def test_a_pickled_final_that_names_other_code_is_refused_and_changes_nothing(foreign):
    """The pickled final loads through a restricted unpickler: a global other than the classes
    of the aggregators, finals and monoids and a few reconstructors (here os.system, or the
    finals' generic ``call``, whose getattr would reach anything) is refused before the stream
    changes; so is a pickle of something that is not a final aggregation."""
    kept = make("fiba", "sum", 0)
    play(kept, script(5)[:80])
    target = make("fiba", "sum", 0)
    target.insert(0.5, 1.0)
    before = target.snapshot()
    with pytest.raises(pickle.UnpicklingError, match="may not hold"):
        target._restore(kept.snapshot(), pickle.dumps(foreign))
    with pytest.raises(pickle.UnpicklingError, match="is a Tumbling"):
        target._restore(kept.snapshot(), pickle.dumps(Tumbling(5)))
    assert target.snapshot() == before


class Affine(Monoid):
    """A user's monoid (not commutative, float partials): x -> a*x + b, composed."""

    identity = (1.0, 0.0)
    commutative = False

    def lift(self, value):
        return (0.5, value)

    def combine(self, f, g):
        return (g[0] * f[0], g[0] * f[1] + g[1])

    def lower(self, partial):
        return partial[1]


@pytest.mark.parametrize("final", ["fiba", "amta", "shared"])
def test_a_users_monoid_restores_bit_for_bit(final):
    """The final names the stream's monoid (not its class, which the unpickler would refuse)."""
    ops = script(23)
    cut = len(ops) // 2
    streams = []
    for _ in range(2):
        s = Stream(Affine(), final=final)
        s.add("long", Sliding(40, 1))
        s.add("short", Sliding(6, 2))
        streams.append(s)
    kept, restored = streams
    play(kept, ops[:cut])
    restored._restore(kept.snapshot(), final_state.dump(kept))
    assert play(restored, ops[cut:]) == play(kept, ops[cut:])


# -- across paths: pickled compiled, unpickled pure, and back ---------------------------------

_OTHER_PATH = r"""
import json, pickle, sys
sys.path.insert(0, sys.argv[1])
import mta
from test_stream_snapshot import make, play
final, monoid, lateness, ops, cut, data = json.loads(sys.stdin.read())
if data is None:  # pickle it here
    s = make(final, monoid, lateness)
    play(s, ops[:cut])
    print(json.dumps({"compiled": mta.COMPILED, "snapshot": pickle.dumps(s).hex()}))
else:  # unpickle it here and go on
    s = pickle.loads(bytes.fromhex(data))
    print(json.dumps({"compiled": mta.COMPILED, "answers": play(s, ops[cut:])}))
"""


def other_path(final: str, monoid: str, lateness: float, ops: list, cut: int, data: str | None) -> dict:
    """Run :data:`_OTHER_PATH` on the path this process is not on (the pure one when it is)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), MTA_NO_EXTENSIONS="1" if mta.COMPILED else "")
    done = subprocess.run([sys.executable, "-c", _OTHER_PATH, str(ROOT / "tests")], env=env, cwd=ROOT,
                          input=json.dumps([final, monoid, lateness, ops, cut, data]),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("final", ["auto", "amta", "eager", "shared"])
@pytest.mark.parametrize("monoid", ["sum", "record"])
def test_a_pickle_on_one_path_goes_on_on_the_other_bit_for_bit(final, monoid):
    """Pickled here, unpickled on the other path (and the other way round): the answers of the
    stream never pickled, floats bit for bit (the typed twins combine as the object ones)."""
    ops = script(13, lateness=2)
    cut = len(ops) // 2
    kept = make(final, monoid, 2)
    play(kept, ops[:cut])
    data = pickle.dumps(kept)
    expected = play(kept, ops[cut:])
    there = other_path(final, monoid, 2, ops, cut, data.hex())
    assert there["answers"] == json.loads(json.dumps(expected))
    made = other_path(final, monoid, 2, ops, cut, None)
    here = pickle.loads(bytes.fromhex(made["snapshot"]))
    assert json.loads(json.dumps(play(here, ops[cut:]))) == there["answers"]
    if mta.COMPILED:
        assert made["compiled"] is False


# -- pickle ------------------------------------------------------------------------------------


@pytest.mark.parametrize("final", FINALS)
def test_a_stream_pickles_and_goes_on_bit_for_bit(final):
    """pickle.dumps(stream) raised on the compiled path ("no default __reduce__ due to
    non-trivial __cinit__": the typed ingest, compiled stores) and worked for some streams on the
    pure path; now it goes through the snapshot on both, and the copy answers as the original."""
    ops = script(17, lateness=2)
    cut = len(ops) // 2
    s = make(final, "mean", 2)
    play(s, ops[:cut])
    copied = pickle.loads(pickle.dumps(s))
    deep = copy.deepcopy(s)
    assert copied.queries == s.queries and copied.watermark == s.watermark
    expected = play(s, ops[cut:])
    assert play(copied, ops[cut:]) == expected
    assert play(deep, ops[cut:]) == expected


def test_a_pickled_stream_keeps_its_options_and_not_its_store():
    s = Stream(Sum(), allowed_lateness=3, final="lazy", ordered=True)
    s.add("t", Tumbling(10))
    s.insert(1, 2)
    backend = kvs.connect("memory://test-pickled-stream")
    s.save(backend, "p")
    copied = pickle.loads(pickle.dumps(s))
    assert (copied.allowed_lateness, copied._final_name, copied.ordered) == (3, "lazy", True)
    assert getattr(copied, "_store", None) is None
    with pytest.raises(ValueError, match="older"):
        copied.insert(0, 1)  # ordered=True: behind the newest tuple
    assert [(r.start, r.value) for r in copied.advance(10)] == [(0, 2)]
    s.close()


def test_pickled_stream_across_paths():
    """A stream pickled on one path unpickles on the other (the snapshot is the same bytes)."""
    ops = script(19)
    cut = len(ops) // 2
    s = make("eager", "sum", 0)
    play(s, ops[:cut])
    blob = pickle.dumps(s)
    expected = play(s, ops[cut:])
    code = ("import pickle, sys, json; sys.path.insert(0, sys.argv[1]); from test_stream_snapshot import play; "
            "ops = json.loads(sys.argv[2]); s = pickle.loads(sys.stdin.buffer.read()); print(json.dumps(play(s, ops)))")
    env = dict(os.environ, PYTHONPATH=str(ROOT), MTA_NO_EXTENSIONS="1" if mta.COMPILED else "")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "tests"), json.dumps(ops[cut:])], env=env,
                          cwd=ROOT, input=blob, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout) == json.loads(json.dumps(expected))


# -- memory:// ---------------------------------------------------------------------------------


def test_loading_from_bare_memory_url_says_it_is_a_new_store():
    """``save("memory://", id)`` then ``load("memory://", id)`` from another stream failed with
    "no window 'x' in memory://": bare memory:// is a new empty store each time."""
    a = Stream(Sum())
    a.add("t", Tumbling(10))
    a.insert(1, 5)
    a.save("memory://", "x")
    b = Stream(Sum())
    b.add("t", Tumbling(10))
    with pytest.raises(kvs.MissingWindow, match=r"bare memory:// is a new empty store each time; use memory://NAME"):
        b.load("memory://", "x")
    assert b.watermark == -float("inf") and b.advance(10) == []
    a.close()


def test_a_named_memory_store_shares_a_stream_within_the_process():
    a = Stream(Sum())
    a.add("t", Tumbling(10))
    a.insert(1, 5)
    a.save("memory://test-stream-snapshot", "x")
    a.close()
    b = Stream(Sum())
    b.add("t", Tumbling(10))
    b.load("memory://test-stream-snapshot", "x")
    b.insert(2, 6)
    assert [(r.start, r.value) for r in b.advance(10)] == [(0, 11)]
    b.close()
