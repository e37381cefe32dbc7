"""Paper Experiment 4 (section 5.7, Fig. 8): local memory of a window against its size.

A window ``Window(Sum(), MaxSize(n))`` gets n updates (timestamps 0..n-1, values
``i % 1000``; no eviction yet, the window ends exactly full). We measure the
process's local memory after the fill *above the same process right after it
created the empty window*. Competitors: AMTA and LogMTA with their levels in
Redis (a ``redis-server`` child per measurement, no persistence), AMTA in
memory, and TwoStacks (memory only). Sizes 2^16, 2^18, 2^20, 2^22, 2^24
(``--quick``: 2^12, 2^14).

Every measurement runs in a FRESH child process (this module with the hidden
``--child`` flag), so nothing of an earlier run stays in its heap or RSS. Two
children per point, because tracemalloc slows the fill 5-7x and its own tables
inflate the RSS:

* the *plain* run (no tracemalloc): RSS (``VmRSS`` of /proc/self/status), the
  heap in use (pymalloc's "bytes in allocated blocks" from
  ``sys._debugmallocstats`` + glibc ``mallinfo2`` in-use bytes, so memory that C
  code such as hiredis mallocs is counted too), and Redis's ``used_memory``
  (INFO memory: that memory is in the Redis server, not in this process);
* the *traced* run: tracemalloc current memory above the empty window and the
  peak during the fill (``reset_peak`` after the baseline); for the Redis
  variants also the top allocation sites (``snapshot.statistics("lineno")``).

In-memory windows at 2^24 take a lot of memory and time: they are measured up
to ``--memory-max-exp`` (22) and extrapolated linearly (least squares over the
measured sizes; such cells are marked "extrap."). LogMTA fills at ~5k updates/s
under tracemalloc, so its traced runs stop at ``--log-mta-trace-max-exp`` (20);
above that its plain run (RSS + heap) stands alone. "Largest window in 256 MiB":
for linear competitors 256 MiB / bytes-per-element (RSS slope); for the Redis
variants "> 2^24 (memory flat)" when growth from the smallest to the largest
size stays under 2 MiB. MB in this script = MiB = 2^20 bytes.

Children run ``--jobs`` (2) at a time, longest first; memory numbers do not
depend on it (each child is its own process with its own Redis).

    python -m benchmarks.exp4_memory            # full (~15-20 min)
    python -m benchmarks.exp4_memory --quick    # smoke run (~15 s)
"""

from __future__ import annotations

import ctypes
import gc
import hashlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from benchmarks import common
from benchmarks.common import pow2

NAME = "exp4_memory"
MiB = 1 << 20
BUDGET = 256 * MiB

#: key -> (label, algorithm, on Redis)
COMPETITORS: dict[str, tuple[str, str, bool]] = {
    "amta_redis": ("AMTA on Redis", "amta", True),
    "log_mta_redis": ("LogMTA on Redis", "log_mta", True),
    "amta_memory": ("AMTA in memory", "amta", False),
    "two_stacks": ("TwoStacks (memory)", "two_stacks", False),
}
#: rough fill rates (updates/s) on the reference VM, plain and traced: only to schedule the longest first
RATES = {"amta_redis": (250e3, 50e3), "log_mta_redis": (35e3, 5.4e3),
         "amta_memory": (400e3, 65e3), "two_stacks": (900e3, 100e3)}


# --------------------------------------------------------------------------- child side

class _MallInfo2(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
                 "fordblks", "keepcost")]


def _mallinfo() -> Any:
    try:
        libc = ctypes.CDLL(None)
        fn = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = _MallInfo2
    return fn


_MALLINFO = _mallinfo()
_PYMALLOC_RE = re.compile(rb"# bytes in allocated blocks\s*=\s*([\d,]+)")


def pymalloc_bytes() -> int | None:
    """Bytes in allocated pymalloc blocks (objects <= 512 bytes), read from ``sys._debugmallocstats``."""
    with tempfile.TemporaryFile() as f:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(f.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        m = _PYMALLOC_RE.search(f.read())
    return int(m.group(1).replace(b",", b"")) if m else None


def malloc_bytes() -> int | None:
    """glibc heap in use: small chunks (uordblks) + mmapped chunks (hblkhd)."""
    if _MALLINFO is None:
        return None
    mi = _MALLINFO()
    return mi.uordblks + mi.hblkhd


def proc_status() -> dict[str, int]:
    """VmRSS and VmHWM of this process, in bytes."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                key, value = line.split(":", 1)
                out[key] = int(value.split()[0]) * 1024
    return out


def memory_now(traced: bool) -> dict[str, Any]:
    gc.collect()
    st = proc_status()
    py, ml = pymalloc_bytes(), malloc_bytes()
    m: dict[str, Any] = {"rss": st.get("VmRSS"), "hwm": st.get("VmHWM"), "pymalloc": py, "malloc": ml,
                         "heap": py + ml if py is not None and ml is not None else None}
    if traced:
        m["traced"], m["traced_peak"] = tracemalloc.get_traced_memory()
        m["tracemalloc_own"] = tracemalloc.get_tracemalloc_memory()
    return m


def redis_memory(client: Any) -> dict[str, int]:
    info = client.info("memory")
    return {k: info[k] for k in ("used_memory", "used_memory_rss", "used_memory_dataset") if k in info}


def code_fingerprint() -> str:
    """A short hash of the mta/ and kvs/ sources: every child must have run the same code."""
    h = hashlib.sha256()
    for package in ("mta", "kvs"):
        for path in sorted((common.ROOT / package).rglob("*.py")):
            h.update(str(path.relative_to(common.ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


def expected_sum(n: int) -> int:
    q, r = divmod(n, 1000)
    return q * 499_500 + r * (r - 1) // 2


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """One measurement in this (fresh) process: empty window, baseline, fill n, measure again."""
    import redis as redis_py

    from kvs.servers import RedisProcess
    from mta import Window
    from mta.monoid import Sum
    from mta.policy import MaxSize

    key, n, traced = spec["competitor"], spec["n"], spec["traced"]
    _, algorithm, on_redis = COMPETITORS[key]
    server = RedisProcess() if on_redis else None
    out: dict[str, Any] = {**spec, "code": code_fingerprint()}
    try:
        client = None
        if server is not None:
            server.start()
            client = redis_py.Redis(host="127.0.0.1", port=server.port)
        gc.collect()
        if traced:
            tracemalloc.start()
        store = server.url if server is not None else None
        w = Window(Sum(), MaxSize(n), algorithm=algorithm, store=store,
                   window_id=f"exp4-{key}-{n}" if store else None)
        if client is not None:
            out["redis_before"] = redis_memory(client)
        before = memory_now(traced)
        if traced:
            tracemalloc.reset_peak()
        ins = w.insert
        t0 = time.perf_counter()
        for i in range(n):
            ins(i, i % 1000)
        w.flush()
        out["fill_s"] = time.perf_counter() - t0
        after = memory_now(traced)
        if traced and server is not None:
            top = tracemalloc.take_snapshot().statistics("lineno")[:12]
            out["top_sites"] = [{"site": f"{s.traceback[0].filename}:{s.traceback[0].lineno}",
                                 "bytes": s.size, "blocks": s.count} for s in top]
        if traced:
            tracemalloc.stop()
        if len(w) != n or w.query() != expected_sum(n):
            raise AssertionError(f"{key} n={n}: len {len(w)}, query {w.query()} != {expected_sum(n)}")
        if client is not None:
            out["redis_after"] = redis_memory(client)
            out["redis_dbsize"] = client.dbsize()
            out["redis_blocks"] = client.hlen(f"mta:{{{w.id}}}:nodes")
        out["before"], out["after"] = before, after
        out["delta"] = {k: after[k] - before[k] for k in after
                        if k in before and after[k] is not None and before[k] is not None}
        if traced:
            out["delta"]["traced_peak"] = after["traced_peak"]  # peak since reset_peak, above nothing
        return out
    finally:
        if server is not None:
            server.close()


# --------------------------------------------------------------------------- parent side

def run_child(spec: dict[str, Any], log: Any) -> dict[str, Any]:
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-m", "benchmarks.exp4_memory", "--child", json.dumps(spec)],
                          cwd=common.ROOT, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        log(f"!! {spec}: child exited {proc.returncode}")
        return {**spec, "error": f"exit {proc.returncode}"}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    d = result["delta"]
    what = (f"traced {d['traced'] / MiB:9.3f} MiB, peak {d['traced_peak'] / MiB:9.3f}" if spec["traced"]
            else f"RSS {d['rss'] / MiB:9.3f} MiB, heap {d['heap'] / MiB:9.3f}")
    log(f"{spec['competitor']:>14} n={pow2(spec['n']):>5} {'traced' if spec['traced'] else 'plain ':6}: {what}; "
        f"fill {result['fill_s']:7.1f} s ({spec['n'] / result['fill_s']:>9,.0f}/s), wall {time.time() - t0:6.1f} s")
    return result


def fit_line(points: dict[int, float]) -> tuple[float, float] | None:
    """Least squares y = a + b * n: (a, b); None with fewer than two sizes."""
    if len(points) < 2:
        return None
    slope, intercept = statistics.linear_regression(list(points), list(points.values()))
    return intercept, slope

def short_site(site: str) -> str:
    """A file:line relative to the repository or to site-packages."""
    site = site.replace(str(common.ROOT) + "/", "")
    return site.split("site-packages/", 1)[-1]


def mib(x: float | None) -> float | None:
    return None if x is None else x / MiB


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        print(json.dumps(child(json.loads(argv[1]))), flush=True)
        return 0
    p = common.parser(__doc__.split("\n\n")[0])
    p.add_argument("--exps", type=str, default=None, help="window sizes as exponents of 2 (full: 16,18,20,22,24; "
                                                          "quick: 12,14)")
    p.add_argument("--competitors", type=str, default=",".join(COMPETITORS),
                   help=f"comma-separated subset of: {', '.join(COMPETITORS)}")
    p.add_argument("--memory-max-exp", type=int, default=22,
                   help="largest size measured for the in-memory competitors (larger: extrapolated)")
    p.add_argument("--trace-max-exp", type=int, default=24, help="largest size with a tracemalloc run")
    p.add_argument("--log-mta-trace-max-exp", type=int, default=20,
                   help="largest size with a tracemalloc run for LogMTA on Redis (~5k updates/s traced)")
    p.add_argument("--jobs", type=int, default=2, help="child processes at a time")
    args = p.parse_args(argv)
    exps = [int(x) for x in (args.exps or ("12,14" if args.quick else "16,18,20,22,24")).split(",")]
    sizes = [2 ** e for e in sorted(exps)]
    competitors = [c.strip() for c in args.competitors.split(",") if c.strip()]
    bad = [c for c in competitors if c not in COMPETITORS]
    if bad:
        p.error(f"unknown competitor {', '.join(bad)}; choose from {', '.join(COMPETITORS)}")

    def measured_sizes(c: str) -> list[int]:
        return [n for n in sizes if COMPETITORS[c][2] or n <= 2 ** args.memory_max_exp]

    def trace_max(c: str) -> int:
        return 2 ** (args.log_mta_trace_max_exp if c == "log_mta_redis" else args.trace_max_exp)

    specs = [{"competitor": c, "n": n, "traced": t} for c in competitors for n in measured_sizes(c)
             for t in (False, True) if not t or n <= trace_max(c)]
    specs.sort(key=lambda s: -s["n"] / RATES[s["competitor"]][s["traced"]])  # longest first
    estimate = sum(s["n"] / RATES[s["competitor"]][s["traced"]] for s in specs)

    run = common.Run(NAME, args, {
        "sizes": sizes, "competitors": {c: COMPETITORS[c][0] for c in competitors},
        "monoid": "Sum", "policy": "MaxSize(n)", "updates": "timestamps 0..n-1, values i % 1000",
        "memory_max_size": 2 ** args.memory_max_exp,
        "trace_max_size": {c: trace_max(c) for c in competitors},
        "jobs": args.jobs, "children": len(specs),
        "measure": "after - before in a fresh child; before = right after creating the empty window; "
                   "gc.collect() before each reading; plain runs: RSS + heap, traced runs: tracemalloc",
        "block_size": 512, "buffer_size": 512, "cache_size": 512,
    })
    code = code_fingerprint()
    run.data["params"]["code_fingerprint"] = code
    run.log(f"{len(specs)} child processes, {args.jobs} at a time; estimated "
            f"{estimate / max(1, args.jobs) / 60:.1f} min")
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        raw = list(pool.map(lambda s: run_child(s, run.log), specs))

    codes = sorted({r["code"] for r in raw if "code" in r} | {code})
    if len(codes) > 1:
        run.log(f"WARNING: mta/ or kvs/ changed during the run: code fingerprints {codes}")
    run.data["code_fingerprints"] = codes

    # results[c][n] = {"plain": child result, "traced": child result}
    results: dict[str, dict[int, dict[str, Any]]] = {c: {} for c in competitors}
    for r in raw:
        results[r["competitor"]].setdefault(r["n"], {})["traced" if r["traced"] else "plain"] = r

    def value(c: str, n: int, kind: str, field: str) -> float | None:
        r = results[c].get(n, {}).get(kind)
        if r is None or "error" in r:
            return None
        return r["delta"].get(field)

    # ---- linear fits (bytes per element) for the in-memory competitors, extrapolation above the cap
    fits: dict[str, dict[str, Any]] = {}
    for c in competitors:
        fits[c] = {}
        for kind, field in (("plain", "rss"), ("plain", "heap"), ("plain", "hwm"), ("traced", "traced"),
                            ("traced", "traced_peak")):
            pts = {n: value(c, n, kind, field) for n in sizes}
            pts = {n: v for n, v in pts.items() if v is not None}
            line = fit_line(pts)
            fits[c][field] = {"intercept": round(line[0]), "bytes_per_element": round(line[1], 2)} if line else None

    def cell(c: str, n: int, kind: str, field: str) -> Any:
        v = value(c, n, kind, field)
        if v is not None:
            return mib(v)
        f = fits[c].get(field)
        if not COMPETITORS[c][2] and n > 2 ** args.memory_max_exp and f:
            return f"~{common.num(mib(f['intercept'] + f['bytes_per_element'] * n))} (extrap.)"
        return None

    labels = [COMPETITORS[c][0] for c in competitors]
    extrap_note = (f"In-memory competitors measured up to 2^{args.memory_max_exp} (--memory-max-exp); "
                   "'extrap.' = linear least-squares extrapolation from the measured sizes.")
    for title, kind, field, note in (
            ("tracemalloc: traced memory above the empty window after n inserts (MiB)", "traced", "traced",
             f"Traced runs only (a separate child). LogMTA on Redis traced up to "
             f"{pow2(trace_max('log_mta_redis'))}: '–' above (see the heap table). {extrap_note}"),
            ("RSS above the empty window after n inserts (MiB)", "plain", "rss",
             f"VmRSS after - VmRSS before, plain run (no tracemalloc). {extrap_note}"),
            ("Heap in use above the empty window after n inserts (MiB): pymalloc blocks + glibc malloc",
             "plain", "heap", "Plain run; counts what C extensions malloc too (not just Python objects). "
                              + extrap_note),
            ("peak RSS (VmHWM) during the fill, above the peak before it (MiB)", "plain", "hwm",
             "Plain run; VmHWM after - VmHWM before (the empty window's process peak): a rise means the fill "
             "needed more memory at some moment than at its end (e.g. commits queued for the writer). "
             + extrap_note),
            ("tracemalloc: peak traced memory during the fill, above the empty window (MiB)", "traced",
             "traced_peak", "Peak since tracemalloc.reset_peak() right after the baseline: includes "
                            "transient objects (e.g. a packed block on its way to Redis).")):
        rows = [[pow2(n)] + [cell(c, n, kind, field) for c in competitors] for n in sizes]
        run.table(f"Experiment 4: {title}", ["n"] + labels, rows, note=note)

    # ---- Redis server memory
    redis_cs = [c for c in competitors if COMPETITORS[c][2]]
    redis_mem: dict[str, dict[int, Any]] = {c: {} for c in redis_cs}
    if redis_cs:
        headers = ["n"]
        for c in redis_cs:
            headers += [f"{COMPETITORS[c][0]}: used_memory (MiB)", "bytes/element", "blocks"]
        rows = []
        for n in sizes:
            row: list[Any] = [pow2(n)]
            for c in redis_cs:
                r = results[c].get(n, {}).get("plain")
                if r is None or "error" in r:
                    row += [None, None, None]
                    continue
                used = r["redis_after"]["used_memory"] - r["redis_before"]["used_memory"]
                redis_mem[c][n] = {"used_memory_delta": used, "used_memory": r["redis_after"]["used_memory"],
                                   "used_memory_rss": r["redis_after"]["used_memory_rss"],
                                   "blocks": r["redis_blocks"], "keys": r["redis_dbsize"]}
                row += [mib(used), used / n, r["redis_blocks"]]
            rows.append(row)
        run.table("Experiment 4: memory in the Redis server (INFO memory used_memory above the empty window)",
                  headers, rows, note="That memory is in the redis-server process, not in the Python process; "
                                      "'blocks' = fields of the window's nodes hash (512 nodes each, msgpack).")

    # ---- summary: bytes per element and the largest window in 256 MiB
    summary: dict[str, Any] = {"fits": fits, "redis_server": redis_mem}
    srows = []
    lo, hi = sizes[0], sizes[-1]
    flat_growth: dict[str, dict[str, float | None]] = {}
    for c in competitors:
        lab, _, on_redis = COMPETITORS[c]
        if on_redis:
            growth = {}
            for kind, field in (("traced", "traced"), ("plain", "rss"), ("plain", "heap")):
                pts = [n for n in sizes if value(c, n, kind, field) is not None]
                growth[field] = (value(c, pts[-1], kind, field) - value(c, pts[0], kind, field)
                                 if len(pts) >= 2 else None)
                growth[field + "_span"] = f"{pow2(pts[0])}..{pow2(pts[-1])}" if pts else None
            flat_growth[c] = growth
            worst = max((g for k, g in growth.items() if not k.endswith("_span") and g is not None), default=None)
            flat = worst is not None and worst < 2 * MiB
            fits_in = f"> {pow2(hi)} (memory flat)" if flat else "–"
            if not flat:
                f = fits[c]["rss"]
                if f and f["bytes_per_element"] > 0:
                    fits_in = f"~{pow2(1 << int(math.log2(BUDGET / f['bytes_per_element'])))} (RSS slope)"
            srows.append([lab, "flat" if flat else "grows", None, None, fits_in])
        else:
            bpe_rss = fits[c]["rss"]["bytes_per_element"] if fits[c]["rss"] else None
            bpe_tm = fits[c]["traced"]["bytes_per_element"] if fits[c]["traced"] else None
            largest = int(BUDGET / bpe_rss) if bpe_rss and bpe_rss > 0 else None
            srows.append([lab, "linear", bpe_rss, bpe_tm,
                          f"{largest:,} (~2^{math.log2(largest):.1f})" if largest else "–"])
            summary[f"{c}_largest_in_256MiB"] = largest
    summary["growth"] = flat_growth
    run.table("Bytes per element and the largest window in 256 MiB of local memory",
              ["competitor", "memory vs n", "bytes/element (RSS slope)", "bytes/element (tracemalloc slope)",
               "largest window in 256 MiB"], srows,
              note="Slopes: least squares of the memory above the empty window against n over the measured sizes. "
                   "Largest window = 256 MiB / RSS bytes per element. 'flat' = growth from the smallest to the "
                   "largest size under 2 MiB in every measure (tracemalloc, RSS, heap). The windows end the fill "
                   "full but never evicted: TwoStacks holds one list (its back stack); in a steady state it "
                   "also holds the suffix aggregates of its front stack.")

    # ---- targets
    targets = []
    for c in redis_cs:
        lab = COMPETITORS[c][0]
        tm = [value(c, n, "traced", "traced") for n in sizes]
        rss = [value(c, n, "plain", "rss") for n in sizes]
        heap = [value(c, n, "plain", "heap") for n in sizes]
        tm_sizes = [n for n, v in zip(sizes, tm) if v is not None]
        tm, rss, heap = ([v for v in xs if v is not None] for xs in (tm, rss, heap))
        complete = len(rss) == len(sizes) and bool(tm)
        worst_tm, worst_rss, worst_heap = (max(xs) if xs else None for xs in (tm, rss, heap))
        ok = complete and max(worst_tm, worst_rss) < 5 * MiB
        span = f"{pow2(tm_sizes[0])}..{pow2(tm_sizes[-1])}" if tm_sizes else "–"
        targets.append([f"{lab}: under 5 MB above an empty window at every size (tracemalloc and RSS)",
                        f"max tracemalloc {common.num(mib(worst_tm))} MiB ({span}), max RSS "
                        f"{common.num(mib(worst_rss))} MiB, max heap {common.num(mib(worst_heap))} MiB "
                        f"({pow2(lo)}..{pow2(hi)})", ok])
        g = flat_growth[c]
        gs = [g["traced"], g["rss"]]
        ok = all(x is not None and x < 2 * MiB for x in gs)
        targets.append([f"{lab}: flat, growth from {pow2(lo)} to {pow2(hi)} under 2 MB",
                        f"tracemalloc {common.num(mib(g['traced']))} MiB ({g['traced_span']}), RSS "
                        f"{common.num(mib(g['rss']))} MiB, heap {common.num(mib(g['heap']))} MiB", ok])
    run.table("Targets", ["target", "measured", "met"], [[t, m, "yes" if ok else "NO"] for t, m, ok in targets],
              note=f"tracemalloc for LogMTA on Redis covers sizes up to {pow2(trace_max('log_mta_redis'))} "
                   f"(--log-mta-trace-max-exp); RSS and heap cover every size.")
    summary["targets"] = [{"target": t, "measured": m, "met": ok} for t, m, ok in targets]

    # ---- where the traced memory of the Redis variants sits, at their largest traced size
    for c in redis_cs:
        traced_ns = [n for n in sizes if value(c, n, "traced", "traced") is not None]
        if not traced_ns:
            continue
        r = results[c][traced_ns[-1]]["traced"]
        rows = [[short_site(s["site"]), s["bytes"] / 1024, s["blocks"]]
                for s in r.get("top_sites", [])[:8]]
        run.table(f"{COMPETITORS[c][0]}: top allocation sites alive after the fill at n={pow2(traced_ns[-1])} "
                  f"(tracemalloc, by line)", ["site", "KiB", "blocks"], rows,
                  note="Everything traced since tracemalloc.start() (before the window was created), "
                       "so the empty window's own allocations are included.")

    if len(codes) > 1:
        print(f"\nWARNING: the mta/ and kvs/ sources changed while the children ran (fingerprints "
              f"{', '.join(codes)}): the sizes were not all measured on the same code. Rerun.", flush=True)
    else:
        print(f"\nAll children ran the same mta/ + kvs/ sources (fingerprint {codes[0]}).", flush=True)
    run.data["results"] = raw
    run.data["summary"] = summary
    csv_rows = []
    for r in sorted(raw, key=lambda r: (competitors.index(r["competitor"]), r["n"], r["traced"])):
        d = r.get("delta", {})
        csv_rows.append([r["competitor"], r["n"], "traced" if r["traced"] else "plain", d.get("traced"),
                         d.get("traced_peak"), d.get("rss"), d.get("hwm"), d.get("heap"), d.get("pymalloc"),
                         d.get("malloc"),
                         round(r["fill_s"], 2) if "fill_s" in r else None,
                         (r["redis_after"]["used_memory"] - r["redis_before"]["used_memory"])
                         if "redis_after" in r else None])
    run.finish(["competitor", "n", "run", "traced_bytes", "traced_peak_bytes", "rss_bytes", "hwm_bytes",
                "heap_bytes", "pymalloc_bytes", "malloc_bytes", "fill_s", "redis_used_memory_bytes"], csv_rows)
    if not args.no_plot:
        floor = 1 / 1024  # 1 KiB: a log axis cannot show 0 or a negative difference
        series = {}
        for c in competitors:
            for kind, field, what in (("plain", "rss", "RSS"), ("traced", "traced", "tracemalloc")):
                pts = [(n, value(c, n, kind, field)) for n in sizes]
                pts = [(n, max(mib(v), floor)) for n, v in pts if v is not None]
                if pts:
                    series[f"{COMPETITORS[c][0]} ({what})"] = ([x for x, _ in pts], [y for _, y in pts])
        common.plot_lines(run.path(".png"), series, title="Experiment 4: local memory above an empty window",
                          xlabel="window size n (updates)", ylabel="MiB (log; floor 1 KiB)",
                          hlines={"256 MiB": 256.0, "5 MiB": 5.0})
    return 0


if __name__ == "__main__":
    sys.exit(main())
