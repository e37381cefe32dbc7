"""A generated telemetry dataset for the example pipeline: hosts x metrics.

Each host reports every metric at its own rate (1, 2, 5 or 10 s); values follow a
daily cycle with noise and bursts (a few per host, 1-20 minutes at +30-80 %).
Some events arrive late: ``arrival`` is the event time plus a network delay
(usually under a second, for ``late_fraction`` of the events 30 s to 3 minutes),
which is the order the files of a streaming run are written in.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

METRICS = {"cpu": (25.0, 100.0), "memory": (4_000.0, 16_000.0)}  # base level, ceiling
RATES = (1, 2, 5, 10)
START = pd.Timestamp("2026-11-01T00:00:00Z").value // 1_000  # microseconds


def generate(hosts: int = 20, hours: float = 2.0, seed: int = 1, late_fraction: float = 0.01) -> pd.DataFrame:
    """Columns host, metric, ts (timestamp), value (double), arrival (timestamp)."""
    rng = np.random.default_rng(seed)
    seconds = int(hours * 3600)
    frames = []
    for h in range(hosts):
        rate = RATES[h % len(RATES)]
        t = np.arange(0, seconds, rate, dtype=np.int64)
        for metric, (base, ceiling) in METRICS.items():
            level = base * rng.uniform(0.6, 1.4)
            daily = 0.2 * level * np.sin(2 * np.pi * (t / 86_400 + rng.uniform()))
            value = level + daily + rng.normal(0, 0.03 * level, t.size)
            for _ in range(rng.poisson(hours * 1.5)):  # bursts
                start = rng.integers(0, seconds)
                value[(t >= start) & (t < start + rng.integers(60, 1200))] *= rng.uniform(1.3, 1.8)
            frames.append(pd.DataFrame({"host": f"host-{h:03d}", "metric": metric,
                                        "t": t, "value": np.clip(value, 0, ceiling)}))
    df = pd.concat(frames, ignore_index=True)
    delay = rng.exponential(0.3, len(df))
    late = rng.random(len(df)) < late_fraction
    delay[late] = rng.uniform(30, 180, late.sum())
    micros = START + df.pop("t").to_numpy() * 1_000_000
    df["ts"] = pd.to_datetime(micros, unit="us", utc=True)
    df["arrival"] = pd.to_datetime(micros + (delay * 1e6).astype(np.int64), unit="us", utc=True)
    return df.sort_values("arrival", kind="stable", ignore_index=True)
