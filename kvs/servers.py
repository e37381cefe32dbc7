"""Local Redis servers for tests, benchmarks and demos (no server to start by hand).

* :class:`RedisProcess` -- a local ``redis-server`` child process (standalone).
* :class:`RedisCluster` -- three local ``redis-server`` masters joined into a cluster.
* :func:`start_redis` -- a standalone Redis from testcontainers (Docker) when an
  engine is available, otherwise a :class:`RedisProcess`.

Every server binds to 127.0.0.1 on a free port and lives in its own temp directory.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

import redis

HOST = "127.0.0.1"
START_TIMEOUT = 10.0
CLUSTER_TIMEOUT = 20.0
INSTALL_HINT = "run the tests with `bash scripts/test.sh`, which installs redis-server"


def _require(binary: str) -> None:
    if shutil.which(binary) is None:
        raise RuntimeError(f"`{binary}` not found on PATH; {INSTALL_HINT}")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


class RedisProcess:
    """A ``redis-server`` child process on ``port`` with its own temp directory.

    ``appendonly=True`` enables an fsync-always AOF, so data survives :meth:`restart`.
    ``extra_args`` are appended to the command line (e.g. cluster options).
    """

    def __init__(
        self, appendonly: bool = False, port: int | None = None, extra_args: Sequence[str] = ()
    ) -> None:
        self.port = port or free_port()
        self.dir = Path(tempfile.mkdtemp(prefix=f"redis-{self.port}-"))
        self.logfile = self.dir / "redis.log"
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if appendonly else ["--save", "", "--appendonly", "no"]
        self.args = [
            "redis-server", "--port", str(self.port), "--bind", HOST, "--dir", str(self.dir),
            "--daemonize", "no", "--logfile", str(self.logfile), *persistence, *extra_args,
        ]  # fmt: skip
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def client(self, **kwargs: object) -> redis.Redis:
        """A redis-py client for this server."""
        return redis.Redis(host=HOST, port=self.port, **kwargs)

    def log(self) -> str:
        """The server's log file plus anything it wrote to stdout/stderr."""
        parts = [p.read_text(errors="replace") for p in (self.logfile, self.dir / "stdout.log") if p.exists()]
        return "\n".join(parts).strip() or "(empty)"

    def start(self) -> None:
        """Spawn the server and wait until it answers PING."""
        if self.running:
            return
        _require("redis-server")
        with open(self.dir / "stdout.log", "ab") as out:
            self.proc = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, cwd=self.dir)
        deadline = time.monotonic() + START_TIMEOUT
        with self.client(socket_timeout=1, socket_connect_timeout=1) as client:
            while True:
                try:
                    if client.ping():
                        return
                except redis.exceptions.RedisError:
                    pass
                exited = self.proc.poll() is not None
                if exited or time.monotonic() > deadline:
                    self.kill()
                    why = "exited" if exited else f"did not answer PING within {START_TIMEOUT:g} s"
                    raise RuntimeError(f"redis-server on port {self.port} {why}; log {self.logfile}:\n{self.log()}")
                time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM (redis flushes the AOF) and wait; SIGKILL if it hangs."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL, no flushing."""
        if self.proc is None:
            return
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        """Stop and start again on the same port and directory."""
        self.stop()
        self.start()

    def close(self) -> None:
        """Stop the server and remove its directory."""
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RedisCluster:
    """Three local masters (no replicas) joined with ``redis-cli --cluster create``."""

    def __init__(self, size: int = 3) -> None:
        self.servers = [
            RedisProcess(extra_args=[
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", "5000",
                # Explicit bus port: the default port+10000 can exceed 65535.
                "--cluster-port", str(free_port()),
            ])
            for _ in range(size)
        ]  # fmt: skip

    @property
    def nodes(self) -> list[tuple[str, int]]:
        return [(HOST, s.port) for s in self.servers]

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"{h}:{p}" for h, p in self.nodes)

    def start(self) -> None:
        """Start the nodes, create the cluster and wait until every node reports ``cluster_state:ok``."""
        try:
            _require("redis-cli")
            for server in self.servers:
                server.start()
            addresses = [f"{h}:{p}" for h, p in self.nodes]
            cmd = ["redis-cli", "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=CLUSTER_TIMEOUT)
            if done.returncode != 0:
                raise RuntimeError(f"`{' '.join(cmd)}` failed ({done.returncode}):\n{done.stdout}{done.stderr}")
            self._wait_ok()
        except BaseException:
            self.close()
            raise

    def _wait_ok(self) -> None:
        deadline = time.monotonic() + CLUSTER_TIMEOUT
        states: dict[int, str] = {}
        while time.monotonic() < deadline:
            for server in self.servers:
                try:
                    with server.client(socket_timeout=1) as client:
                        states[server.port] = str(client.cluster("INFO").get("cluster_state"))
                except redis.exceptions.RedisError as error:
                    states[server.port] = repr(error)
            if all(state == "ok" for state in states.values()):
                return
            time.sleep(0.1)
        logs = "\n".join(f"--- node {s.port}:\n{s.log()}" for s in self.servers)
        raise RuntimeError(f"cluster not ok within {CLUSTER_TIMEOUT:g} s, cluster_state by port: {states}\n{logs}")

    def close(self) -> None:
        """Stop every node and remove their directories."""
        for server in self.servers:
            server.close()

    def __enter__(self) -> RedisCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_redis() -> tuple[str, Callable[[], None]]:
    """A standalone Redis: ``(url, cleanup)``.

    Uses testcontainers (image ``redis:7``) when a Docker engine is reachable,
    otherwise a local :class:`RedisProcess`. Raises RuntimeError if neither works.
    """
    container = None
    try:
        from testcontainers.community.redis import RedisContainer

        container = RedisContainer("redis:7")
        container.start()
        host, port = container.get_container_host_ip(), container.get_exposed_port(container.port)
        return f"redis://{host}:{port}/0", container.stop
    except Exception as error:
        docker_error = error
        if container is not None:  # created but not usable: remove it if it exists
            try:
                container.stop()
            except Exception:
                pass

    server = RedisProcess()
    try:
        server.start()
    except Exception as error:
        server.close()
        raise RuntimeError(
            f"no Redis server for the integration tests: Docker/testcontainers failed ({docker_error!r}) "
            f"and the local redis-server fallback failed ({error})"
        ) from error
    return server.url, server.close
