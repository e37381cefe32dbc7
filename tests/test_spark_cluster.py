"""``mta pipeline`` on a real Spark standalone cluster: its output equals the ``local[*]`` run.

A master and two workers on 127.0.0.1 are started with the launcher the pyspark wheel ships
(``bin/spark-class``), and the job file is submitted to them with ``spark-submit``, unchanged,
three times at once (each run gets one core of each worker): with the executors on this
virtualenv's Python (the package installed: the shared-environment case); with driver and
executors on a virtualenv that has every dependency but not ``mta``, the package shipped as
``--py-files`` of a zip built from this checkout; and as the first with ``--stream``. The batch
outputs must equal, row for row, what ``mta pipeline`` writes on ``local[*]`` for the same
(seeded, generated) input; the streaming one must hold those of its windows that its
watermark closed. Each worker must have run tasks of each run, Python ones on the intended
interpreter.

Nothing is skipped: a missing ``java`` or launcher fails with a message naming it. The
cluster is torn down (process groups killed) even when a test fails; every log is under
pytest's tmp dirs and quoted in the failure message.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
import zipfile
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import pyarrow.parquet as pq
import pytest

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent
#: The job's input, the same in every run: generated, seeded telemetry (a few thousand events),
#: none of it late (a batch run drops no late event; a streaming run then drops none either).
JOB_ARGS = ["--hosts", "4", "--hours", "0.5", "--seed", "3", "--late-fraction", "0"]
#: The distribution's top-level packages (pyproject.toml: packages.find).
PACKAGES = ("mta", "kvs", "spark_integration")
JOB = "spark_integration/jobs/telemetry_pipeline.py"
STARTUP = 120  # seconds a master or worker may take to come up on a busy machine
RUN = 300  # seconds one run of the job may take


def _tail(path: Path, lines: int = 40) -> str:
    """The end of a log, without Java stack frames."""
    text = path.read_text(errors="replace").splitlines() if path.exists() else ["(no log)"]
    return "\n".join([line for line in text if not line.lstrip().startswith("at ")][-lines:])


def _spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    home = Path(_find_spark_home())
    for tool in ("spark-class", "spark-submit"):
        if not (home / "bin" / tool).is_file():
            pytest.fail(f"{home / 'bin' / tool} is missing: the pyspark wheel ships it (reinstall pyspark)")
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        pytest.fail("no `java` on PATH and no JAVA_HOME: the Spark cluster needs Java 17 "
                    "(Debian: apt-get install openjdk-17-jre-headless)")
    return home


def _env(**extra: str) -> dict[str, str]:
    """Every process's environment: loopback only, and no PYTHONPATH, SPARK_* or PYSPARK_*
    of the test process (an executor then sees only what its interpreter has installed)."""
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONPATH" and not k.startswith(("SPARK_", "PYSPARK_"))}
    # Every JVM here (daemons, drivers, executors) lives seconds: compiling with C1 only spares
    # ~40% of their CPU (measured: one run of the job 23.8 -> 14.2 s user); results are the same.
    return {**env, "SPARK_LOCAL_IP": "127.0.0.1", "JDK_JAVA_OPTIONS": "-XX:TieredStopAtLevel=1", **extra}


def _wait(what: str, ready: Callable[[], T | None], process: subprocess.Popen, log: Path) -> T:
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        found = ready()
        if found:
            return found
        if process.poll() is not None:
            pytest.fail(f"{what}: the process exited with {process.returncode}; {log}:\n{_tail(log)}")
        time.sleep(0.25)
    pytest.fail(f"{what}: not within {STARTUP} s; {log}:\n{_tail(log)}")


@dataclass
class Cluster:
    url: str  # spark://127.0.0.1:port
    home: Path  # the pyspark package folder (bin/spark-submit)
    work: list[Path]  # each worker's work dir: app-<id>/<executor>/stderr
    logs: Path


def _master_state(ui: int) -> dict[str, Any] | None:
    """The master's state from its UI's /json/ (None while it cannot say: a starting UI can
    answer /json/ with its HTML page, seen once in CI)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=5) as reply:
            return json.load(reply)
    except (OSError, ValueError):
        return None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    """A standalone master and two workers (three cores, 3 GiB each) on 127.0.0.1, on ports
    they choose themselves (read from the master's log), stopped at the end of the module."""
    home = _spark_home()
    root = tmp_path_factory.mktemp("spark-cluster")
    processes: list[subprocess.Popen] = []

    def start(name: str, cls: str, *args: str, **env: str) -> tuple[subprocess.Popen, Path]:
        log = root / f"{name}.log"
        with open(log, "wb") as out:  # each daemon leads its own process group (its executors join it)
            processes.append(subprocess.Popen([str(home / "bin" / "spark-class"), cls, *args], stdout=out,
                                              stderr=subprocess.STDOUT, env=_env(**env), start_new_session=True))
        return processes[-1], log

    try:
        master, log = start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                            "--port", "0", "--webui-port", "0",
                            SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")  # no fixed REST port 6066

        def announced() -> tuple[str, int] | None:
            text = log.read_text(errors="replace")
            url = re.search(r"Starting Spark master at (spark://\S+)", text)
            ui = re.search(r"Successfully started service 'MasterUI' on port (\d+)", text)
            return (url.group(1), int(ui.group(1))) if url and ui else None

        url, ui = _wait("the Spark master", announced, master, log)
        _wait("the Spark master's state ALIVE", lambda: (_master_state(ui) or {}).get("status") == "ALIVE",
              master, log)
        work = []
        for i in (1, 2):  # started once the master leads: a worker that registers earlier retries only after ~10 s
            work.append(root / f"worker{i}")
            (root / f"scratch{i}").mkdir()
            start(f"worker{i}", "org.apache.spark.deploy.worker.Worker", url, "--cores", "3", "--memory", "3g",
                  "--host", "127.0.0.1", "--webui-port", "0", "--work-dir", str(work[-1]),
                  SPARK_LOCAL_DIRS=str(root / f"scratch{i}"))
        _wait("two registered Spark workers", lambda: (_master_state(ui) or {}).get("aliveworkers") == 2,
              master, log)
        yield Cluster(url, home, work, root)
    finally:
        for process in processes:  # SIGTERM first: a worker kills its executors on the way out
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            with suppress(subprocess.TimeoutExpired):
                process.wait(15)
            with suppress(ProcessLookupError):  # whatever is left of the group (an executor, its Pythons)
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# --------------------------------------------------------------------------- the runs

class _Job:
    """A command running in its own process group, its output in ``log``."""

    def __init__(self, cmd: list[str], log: Path, env: dict[str, str], cwd: Path) -> None:
        self.cmd, self.log = cmd, log
        with open(log, "wb") as out:
            self.process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                            start_new_session=True)

    def wait(self) -> None:
        """Until it ends (killed after RUN seconds); fail with its log unless it succeeded."""
        try:
            code = self.process.wait(RUN)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{' '.join(self.cmd)}: not done within {RUN} s; {self.log}:\n{_tail(self.log)}")
        if code != 0:
            pytest.fail(f"{' '.join(self.cmd)} exited with {code}; {self.log}:\n{_tail(self.log)}")

    def kill(self) -> None:
        with suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


@pytest.fixture(scope="module")
def local_output(tmp_path_factory) -> Iterator[Callable[[], Path]]:
    """``mta pipeline`` (the console script) on local[*], started at once so that it runs while
    the cluster comes up; call the fixture's value for its output directory."""
    mta = shutil.which("mta", path=str(Path(sys.executable).parent))
    if mta is None:
        pytest.fail(f"no `mta` script next to {sys.executable}: install the project (pip install -e .)")
    out = tmp_path_factory.mktemp("local")
    job = _Job([mta, "pipeline", *JOB_ARGS, "--output", str(out / "output")], out / "pipeline.log", _env(), out)
    done: list[Path] = []

    def output() -> Path:
        if not done:
            job.wait()
            done.append(out / "output")
        return done[0]

    try:
        yield output
    finally:
        job.kill()


def _recording_python(path: Path, python: Path, calls: Path) -> Path:
    """An interpreter for PYSPARK_PYTHON that notes the directory it is started in (an executor
    starts Python in its own work dir), then runs ``python``."""
    path.write_text(f'#!/bin/sh\npwd -P >> "{calls}"\nexec "{python}" "$@"\n')
    path.chmod(0o755)
    return path


@dataclass
class _Submission:
    """One spark-submit of the job, running."""

    job: _Job
    work: list[Path]  # the workers' work dirs
    python: Path  # the executors' interpreter
    calls: Path  # where the recording interpreter notes each start
    output: Path

    def result(self) -> Path:
        """Its output once it ended, checked to come from an executor on each worker, on ``python``,
        that ran tasks."""
        self.job.wait()
        app = re.search(r"app ID (app-\S+)", self.job.log.read_text(errors="replace"))
        assert app, f"no application ID in {self.job.log}"
        started = set(self.calls.read_text().split()) if self.calls.exists() else set()
        for work in self.work:
            executors = list((work / app.group(1)).glob("*/stderr"))
            assert executors, f"no executor of {app.group(1)} in {work}"
            assert all("Running task" in e.read_text(errors="replace") for e in executors), \
                f"{work / app.group(1)}: an executor that ran no task"
            assert {str(e.parent.resolve()) for e in executors} <= started, \
                f"an executor in {work / app.group(1)} did not start PYSPARK_PYTHON ({self.python}); " \
                f"started: {sorted(started)}"
        return self.output


def _submit(cluster: Cluster, job: Path, out: Path, python: Path, *options: str,
            job_args: tuple[str, ...] = ()) -> _Submission:
    """Start spark-submit (with ``options``) of the job file (with JOB_ARGS and ``job_args``) on the
    cluster, driver and executors on ``python``."""
    calls = out / "python-calls.txt"
    executor_python = _recording_python(out / "python", python, calls)
    cmd = [str(cluster.home / "bin" / "spark-submit"), "--master", cluster.url,
           # one one-core executor on each worker (the runs share the cluster)
           "--total-executor-cores", "2", "--executor-cores", "1", "--executor-memory", "1g",
           "--conf", "spark.ui.enabled=false",
           # no task before both executors are up, so that each worker gets some
           "--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0",
           "--conf", "spark.scheduler.maxRegisteredResourcesWaitingTime=120s",
           # and each of them Python tasks: two shuffle partitions, not coalesced into one, no
           # waiting for the executor that holds a partition's map output
           "--conf", "spark.sql.shuffle.partitions=2", "--conf", "spark.sql.adaptive.coalescePartitions.enabled=false",
           "--conf", "spark.locality.wait=0",
           *options, str(job), *JOB_ARGS, *job_args, "--output", str(out / "output")]
    env = _env(PYSPARK_PYTHON=str(executor_python), PYSPARK_DRIVER_PYTHON=str(python))
    return _Submission(_Job(cmd, out / "spark-submit.log", env, out), cluster.work, python, calls, out / "output")


def _key(row: dict[str, Any]) -> tuple:
    """What identifies a row of either result: its key and window."""
    return row["host"], row["metric"], row["window"]["start"], row["window"]["end"]


def _rows(output: Path, name: str) -> tuple[Any, list[dict[str, Any]]]:
    """The schema and the rows of one result, sorted by key and window."""
    table = pq.read_table(output / name)
    rows = sorted(table.to_pylist(), key=_key)
    assert len({_key(row) for row in rows}) == len(rows), f"{output / name}: two rows of one key and window"
    return table.schema, rows


def _same(a: Any, b: Any) -> bool:
    """Equal values; floats to 1e-9 (sums of partial aggregates may be merged in another order)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _assert_same_output(cluster_output: Path, local_output: Path) -> None:
    for name in ("windows", "peaks"):
        schema, rows = _rows(cluster_output, name)
        local_schema, local_rows = _rows(local_output, name)
        assert schema == local_schema, name
        assert len(rows) == len(local_rows) and len(local_rows) > (1000 if name == "windows" else 50), name
        for row, local in zip(rows, local_rows):
            assert _same(row, local), (name, row, local)


def _assert_closed_windows_of(stream_output: Path, local_output: Path) -> None:
    """A streaming run's rows are the windows its watermark closed, each as the batch run has it;
    the same columns and types (nullability aside: Spark's streaming aggregation makes its
    results nullable where its batch one does not, and the operator follows each)."""
    for name in ("windows", "peaks"):
        schema, rows = _rows(stream_output, name)
        local_schema, local_rows = _rows(local_output, name)
        assert [(f.name, f.type) for f in schema] == [(f.name, f.type) for f in local_schema], name
        batch = {_key(row): row for row in local_rows}
        assert 0 < len(rows) < len(local_rows), name  # the last windows wait for a later watermark
        for row in rows:
            assert _key(row) in batch and _same(row, batch[_key(row)]), (name, row, batch.get(_key(row)))


def _package_zip(path: Path) -> Path:
    """The package's Python files from this checkout, as ``--py-files`` takes them."""
    with zipfile.ZipFile(path, "w") as archive:
        for package in PACKAGES:
            for source in sorted((ROOT / package).rglob("*.py")):
                archive.write(source, source.relative_to(ROOT).as_posix())
    return path


def _python_without_the_package(where: Path) -> Path:
    """A virtualenv holding every distribution this one has (linked) except mta itself: a node
    with the dependencies installed and not the package."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    ours = {Path(sysconfig.get_path(kind)) for kind in ("purelib", "platlib")}
    theirs = Path(sysconfig.get_path("purelib", vars={"base": str(where), "platbase": str(where)}))
    for site in ours:
        for entry in site.iterdir():
            mine = entry.name in PACKAGES or entry.name.startswith(("mta-", "__editable__.mta-", "__editable___mta_"))
            if not mine and not (theirs / entry.name).exists():
                (theirs / entry.name).symlink_to(entry)
    python = where / "bin" / "python"
    probe = "import importlib.util as u; print(*(bool(u.find_spec(m)) for m in ('pyspark', 'pyarrow', 'mta')))"
    found = subprocess.run([str(python), "-c", probe], cwd=where, env=_env(), capture_output=True, text=True)
    if found.stdout.split() != ["True", "True", "False"]:
        pytest.fail(f"{python} (linked to {sorted(map(str, ours))}) should find pyspark and pyarrow and not mta; "
                    f"found (pyspark, pyarrow, mta): {found.stdout.strip() or found.stderr}")
    return python


# --------------------------------------------------------------------------- the tests

@pytest.fixture(scope="module")
def submissions(local_output, cluster, tmp_path_factory) -> Iterator[dict[str, _Submission]]:
    """The runs of the job, started together (each has one core of each worker):

    - ``shared``: driver and executors on this virtualenv's Python, which has the package;
    - ``py-files``: driver and executors on a Python with every dependency but not mta; the
      package comes as ``--py-files`` of a zip built from this checkout, the job file is the
      one inside the zip;
    - ``stream``: as ``shared``, with ``--stream`` (three micro-batches)."""
    shared, bare, stream = (tmp_path_factory.mktemp(name) for name in ("shared-venv", "py-files", "stream"))
    archive = _package_zip(bare / "mta.zip")
    job = bare / "telemetry_pipeline.py"
    job.write_bytes(zipfile.ZipFile(archive).read(JOB))
    bare_python = _python_without_the_package(bare / "bare-env")
    runs = {"shared": _submit(cluster, ROOT / JOB, shared, Path(sys.executable))}
    try:
        runs["py-files"] = _submit(cluster, job, bare, bare_python, "--py-files", str(archive))
        runs["stream"] = _submit(cluster, ROOT / JOB, stream, Path(sys.executable), job_args=("--stream", "--files", "3"))
        yield runs
    finally:
        for run in runs.values():
            run.job.kill()


def test_spark_submit_on_a_standalone_cluster_writes_the_local_rows(submissions, local_output) -> None:
    _assert_same_output(submissions["shared"].result(), local_output())


def test_py_files_ship_the_package_to_executors_that_have_only_its_dependencies(submissions,
                                                                                local_output) -> None:
    _assert_same_output(submissions["py-files"].result(), local_output())


def test_the_streaming_job_on_the_cluster_closes_the_windows_of_the_batch_run(submissions, local_output) -> None:
    """Under spark-submit the job adds the RocksDB state store its streaming windows need (the
    cluster's default store refuses them: STORE_BACKEND_NOT_SUPPORTED_FOR_TWS)."""
    _assert_closed_windows_of(submissions["stream"].result(), local_output())
