"""Shared helpers of the benchmark scripts: arguments, timing, machine info, output, plots."""

from __future__ import annotations

import argparse
import contextlib
import csv
import gc
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from mta.algorithms import ALGORITHMS

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

#: display names, in the order tables and plots list them
LABELS = {
    "amta": "AMTA",
    "log_mta": "LogMTA",
    "two_stacks": "TwoStacks",
    "daba": "DABA",
    "flatfat": "FlatFAT",
    "subtract_on_evict": "SubtractOnEvict",
    "naive": "Naive",
}
ORDER = list(LABELS)
assert set(ORDER) == set(ALGORITHMS), "benchmarks.common.LABELS is out of date with ALGORITHMS"


def label(name: str) -> str:
    return LABELS.get(name, name)


# --------------------------------------------------------------------------- arguments

def parser(description: str) -> argparse.ArgumentParser:
    """An ArgumentParser with the options every script has."""
    p = argparse.ArgumentParser(description=description,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="tiny smoke run (a few seconds); results go to NAME_quick.*")
    p.add_argument("--out", type=Path, default=RESULTS, help="directory for the JSON, CSV and PNG")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG")
    p.add_argument("--algorithms", type=algorithm_list, default=None,
                   help=f"comma-separated subset of: {', '.join(ORDER)}")
    return p


def algorithm_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in ALGORITHMS]
    if bad or not names:
        raise argparse.ArgumentTypeError(
            f"unknown algorithm {', '.join(bad) or repr(text)}; choose from {', '.join(ORDER)}")
    return [n for n in ORDER if n in names]


def power_of_two(text: str) -> int:
    """An int given as 123, 2**20 or 2^20."""
    t = text.replace(" ", "").replace("^", "**")
    try:
        if "**" in t:
            base, exp = t.split("**")
            value = int(base) ** int(exp)
        else:
            value = int(t.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer like 1048576 or 2**20, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


# --------------------------------------------------------------------------- timing

now_ns = time.perf_counter_ns


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Collect, then keep the cyclic GC off (like ``timeit``) for the timed section."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


# --------------------------------------------------------------------------- machine info

def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def machine_info() -> dict[str, Any]:
    try:
        import mta
        version = mta.__version__
    except Exception:  # pragma: no cover
        version = None
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "mta_version": version,
        "git_commit": _git_commit(),
        "loadavg_start": _loadavg(),
        "timer": "time.perf_counter_ns; cyclic GC disabled inside timed sections",
    }


class Run:
    """One benchmark run: its parameters, machine info, results, and output files."""

    def __init__(self, name: str, args: argparse.Namespace, params: dict[str, Any]) -> None:
        self.name = name + ("_quick" if args.quick else "")
        self.args = args
        self.out: Path = args.out
        self.started = time.time()
        self.data: dict[str, Any] = {
            "benchmark": name,
            "quick": bool(args.quick),
            "command": " ".join([Path(sys.executable).name, "-m", f"benchmarks.{name}"] + sys.argv[1:]),
            "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started)),
            "machine": machine_info(),
            "params": params,
        }
        self.markdown: list[str] = []
        print(f"# {name}{' (quick)' if args.quick else ''}", flush=True)
        m = self.data["machine"]
        print(f"machine: {m['cpu_model']} x{m['cpu_count']}, {m['platform']}, Python {m['python']}, "
              f"load {m['loadavg_start']}", flush=True)

    def path(self, suffix: str) -> Path:
        return self.out / f"{self.name}{suffix}"

    def table(self, title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]], note: str = "") -> str:
        """Print a markdown table (and keep it for the JSON)."""
        text = f"### {title}\n\n{markdown_table(headers, rows)}\n"
        if note:
            text += f"\n{note}\n"
        self.markdown.append(text)
        print("\n" + text, flush=True)
        return text

    def log(self, message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    def experiment(self, name: str, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Run one experiment of a multi-experiment driver; return its result with the
        command, start time, machine, elapsed time and the tables it printed."""
        started = time.perf_counter_ns()
        first_table = len(self.markdown)
        out = run()
        elapsed = (time.perf_counter_ns() - started) / 1e9
        out["command"] = self.data["command"]
        out["started_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - elapsed))
        out["machine"] = dict(self.data["machine"], loadavg_end=_loadavg())
        out["elapsed_s"] = round(elapsed, 1)
        out["markdown"] = "\n".join(self.markdown[first_table:])
        self.log(f"{name}: {out['elapsed_s']} s")
        return out

    def keep_experiments(self, done: dict[str, Any], order: Sequence[str] | None = None) -> dict[str, Any]:
        """``done`` merged into the experiments of this benchmark's earlier runs (NAME.json), in
        ``order`` if given (else earlier ones first), as ``data["experiments"]``: running one
        experiment keeps the others' results."""
        previous: dict[str, Any] = {}
        if self.path(".json").exists():
            previous = json.loads(self.path(".json").read_text()).get("experiments", {})
        if order is None:
            experiments = {**previous, **done}
        else:
            experiments = {e: done.get(e, previous.get(e)) for e in order if e in done or e in previous}
        self.data["experiments"] = experiments
        return experiments

    def finish(self, csv_headers: Sequence[str], csv_rows: Iterable[Sequence[Any]]) -> None:
        """Write NAME.json and NAME.csv; the plot is the script's (see :func:`plot_lines`)."""
        self.out.mkdir(parents=True, exist_ok=True)
        self.data["machine"]["loadavg_end"] = _loadavg()
        self.data["elapsed_s"] = round(time.time() - self.started, 1)
        self.data["markdown"] = "\n".join(self.markdown)
        tmp = self.path(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=1, default=_json_default) + "\n")
        tmp.replace(self.path(".json"))
        with open(self.path(".csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(csv_headers)
            w.writerows(csv_rows)
        print(f"\nload at end: {self.data['machine']['loadavg_end']}; elapsed {self.data['elapsed_s']} s; "
              f"wrote {self.path('.json')}, {self.path('.csv')}", flush=True)


    def write_markdown(self, note: str = "") -> Path:
        """NAME.md, after :meth:`finish`: the command, commit, machine, parameters, ``note``
        and every table printed (the snippet the lead merges into BENCHMARKS.md)."""
        d, m = self.data, self.data["machine"]
        text = (f"# {d['benchmark']}{' (quick)' if d['quick'] else ''}\n\n"
                f"- command: `{d['command']}`\n- commit: {m['git_commit']}\n"
                f"- started: {d['started_utc']}, {d.get('elapsed_s')} s\n"
                f"- machine: {m['cpu_model']} x{m['cpu_count']}, {m['platform']}, "
                f"{m['python_implementation']} {m['python']}, load {m['loadavg_start']} at start, "
                f"{m.get('loadavg_end')} at end\n"
                f"- parameters: {d['params']}\n\n" + (f"{note}\n\n" if note else "") + "\n".join(self.markdown))
        path = self.path(".md")
        path.write_text(text)
        print(f"wrote {path}", flush=True)
        return path


def cachegrind_instructions(module: str, args: Sequence[str]) -> int:
    """Instructions a child ``python -m <module> <args>`` executes, counted by valgrind's
    cachegrind (``I refs``): what a benchmark counts where this VM's clock swings. The children
    get one hash seed and one BLAS thread: random seeds change dict and set work, and idle
    OpenBLAS threads spin, by millions of instructions from run to run."""
    out = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, "-m", module, *args],
        capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"}).stderr
    found = re.search(r"I\s+refs:\s+([\d,]+)", out)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output:\n{out[-2000:]}")
    return int(found.group(1).replace(",", ""))


def _json_default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


# --------------------------------------------------------------------------- formatting

def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    rows = [[cell(c) for c in r] for r in rows]
    head = "| " + " | ".join(headers) + " |"
    sep = "|" + "|".join("---:" if i else "---" for i in range(len(headers))) + "|"
    return "\n".join([head, sep] + ["| " + " | ".join(r) + " |" for r in rows])


def cell(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return num(value)
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def num(x: float | None, digits: int = 3) -> str:
    """A number with about ``digits`` significant digits and thousands separators."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x == 0:
        return "0"
    mag = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - mag)
    return f"{x:,.{decimals}f}"


def pow2(n: int) -> str:
    """2^k, 2^k-1 or the plain number."""
    if n > 0 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    if n > 2 and (n + 1) & n == 0:
        return f"2^{n.bit_length()}-1"
    return f"{n:,}"


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


# --------------------------------------------------------------------------- plots

def plot_lines(path: Path, series: dict[str, tuple[Sequence[float], Sequence[float]]], *, title: str,
               xlabel: str, ylabel: str, logx: int | None = 2, logy: bool = True,
               hlines: dict[str, float] | None = None) -> bool:
    """One line per series (label -> (xs, ys)). Returns False when matplotlib is missing."""
    plt = _pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    for name, (xs, ys) in series.items():
        pts = [(x, y) for x, y in zip(xs, ys) if y is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=name)
    if logx:
        ax.set_xscale("log", base=logx)
    if logy:
        ax.set_yscale("log")
    for name, y in (hlines or {}).items():
        ax.axhline(y, linestyle=":", color="grey", linewidth=1)
        ax.annotate(name, (0.01, y), xycoords=("axes fraction", "data"), fontsize=8, color="grey")
    ax.set_xlabel(xlabel)
    ax.grid(True, which="major", alpha=0.3)
    return _finish(plt, fig, ax, path, title, ylabel)


def plot_bars(path: Path, groups: Sequence[str], series: dict[str, Sequence[float | None]], *, title: str,
              ylabel: str, logy: bool = True) -> bool:
    """Grouped bars: one group per entry of ``groups``, one bar per series."""
    plt = _pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(9, 5), dpi=110)
    width = 0.8 / max(1, len(series))
    for i, (name, ys) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        pts = [(x, y) for x, y in zip(xs, ys) if y]
        if pts:
            ax.bar([p[0] for p in pts], [p[1] for p in pts], width=width, label=name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    if logy:
        ax.set_yscale("log")
    ax.grid(True, axis="y", alpha=0.3)
    return _finish(plt, fig, ax, path, title, ylabel)


def _finish(plt: Any, fig: Any, ax: Any, path: Path, title: str, ylabel: str) -> bool:
    """Title, y label and legend, then write the PNG."""
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    print(f"wrote {path}", flush=True)
    return True


def _pyplot() -> Any:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'mta[bench]')", file=sys.stderr)
        return None
    return plt
