"""A generated memory-usage telemetry stream, like the one of the MTA paper's Experiment 3.

The paper aggregates "one reading per second for two years" of a computer's
memory usage. This module makes a stream of the same shape, deterministically
from a seed, with the standard library only::

    from mta.telemetry import readings
    for timestamp, megabytes in readings(10_000_000, seed=1):
        ...

Each host's reading at second ``t`` is::

    base + daily(t) + drift(hour) + noise(t) + bursts(t) + spikes(t)

- ``daily``: a sinusoid over 86 400 s, peaking in the afternoon (about 14:00)
  with an amplitude of about a fifth of ``base``, a little lower on weekends;
- ``drift``: slow, mean-reverting random walk, one step per hour (leaks that
  grow and restarts that reset them);
- ``noise``: Gaussian jitter of about 2 % of ``base``;
- ``bursts``: now and then (a few per day) a batch job holds an extra 10-40 %
  of ``base`` for 30 s to 30 min;
- ``spikes``: single-second readings 5-50 % above the rest (about one an hour).

Every term is bounded so that values stay positive (well above 20 % of
``base``); they are floats in megabytes. Timestamps are integer seconds from
``start``; with ``hosts > 1`` every second yields one reading per host (all
with the same timestamp, hosts in a fixed order), each host with its own base,
phase and random terms, and ``n`` counts readings, not seconds.

Speed: the stream is built an hour at a time from precomputed tables (the daily
cycle, a pool of Gaussian samples read at a random offset and stride), so the
per-reading work is done by C-level ``map``/``zip``/slicing. Ten million
readings take a few seconds on a slow machine. The stream for a given
``(seed, start, hosts)`` is the same on every run and platform (``random.Random``
is portable), and ``readings(m, ...)`` is a prefix of ``readings(n, ...)`` for
``m <= n``.
"""

from __future__ import annotations

import math
import random
from itertools import chain, islice, repeat
from operator import add
from typing import Iterator

__all__ = ["readings", "DAY", "HOUR", "PEAK_HOUR"]

DAY = 86_400
HOUR = 3_600
#: hour of the day (local to the stream) at which the daily cycle peaks
PEAK_HOUR = 14

_POOL_BITS = 16
_POOL = 1 << _POOL_BITS
# A random odd stride into the doubled pool gives each hour its own noise sequence.
_MAX_STRIDE = 7


class _Host:
    """The parameters and the evolving state (drift) of one host."""

    __slots__ = ("base", "cycle", "drift", "drift_sigma", "drift_limit", "noise_pool", "rng",
                 "weekend_drop")

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.base = base = rng.uniform(2048.0, 8192.0)
        amplitude = base * rng.uniform(0.15, 0.25)
        phase = PEAK_HOUR * HOUR + rng.uniform(-1800.0, 1800.0)
        two_pi_over_day = 2.0 * math.pi / DAY
        # base + amplitude * cos(2 pi (t - phase) / day): the peak is at `phase`.
        self.cycle = [base + amplitude * math.cos(two_pi_over_day * (s - phase)) for s in range(DAY)]
        self.weekend_drop = amplitude * 0.3
        sigma = base * 0.02
        gauss = rng.gauss
        pool = [max(-4.0, min(4.0, gauss(0.0, 1.0))) * sigma for _ in range(_POOL)]
        self.noise_pool = pool + pool  # slices may run past the end
        self.drift = 0.0
        self.drift_sigma = base * 0.01
        self.drift_limit = base * 0.25

    def hour(self, t0: int, length: int) -> list[float]:
        """The readings of seconds ``t0 .. t0 + length - 1`` (all inside one hour)."""
        rng = self.rng
        # drift: Ornstein-Uhlenbeck step, clamped
        drift = self.drift * 0.995 + rng.gauss(0.0, self.drift_sigma)
        limit = self.drift_limit
        self.drift = drift = max(-limit, min(limit, drift))
        day_index = t0 // DAY
        if day_index % 7 in (5, 6):
            drift -= self.weekend_drop
        second = t0 % DAY
        stride = rng.randrange(1, _MAX_STRIDE + 1, 2)
        offset = rng.randrange(_POOL)
        # the doubled pool is long enough: offset + 3600 * 7 < 2 * 65536
        noise = self.noise_pool[offset:offset + length * stride:stride]
        values = list(map(add, map(add, self.cycle[second:second + length], noise), repeat(drift)))
        base = self.base
        # bursts: a few per day, each a plateau of 30 s .. 30 min
        into_hour = t0 % HOUR  # > 0 only for a first, partial hour
        if rng.random() < 0.12:
            first = rng.randrange(HOUR) - into_hour
            end = first + rng.randrange(30, 1801)  # cut at the end of the hour
            size = base * rng.uniform(0.10, 0.40)
            for i in range(max(0, first), min(length, end)):
                values[i] += size
        # spikes: about one an hour
        while rng.random() < 0.5:
            i = rng.randrange(HOUR) - into_hour
            size = base * rng.uniform(0.05, 0.50)
            if 0 <= i < length:
                values[i] += size
        return values


def readings(n: int | None, seed: int = 0, start: int = 0, hosts: int = 1) -> Iterator[tuple[int, float]]:
    """Yield ``n`` readings ``(timestamp_seconds, megabytes)`` (``n=None``: forever).

    Deterministic for a given ``seed``, ``start`` (first timestamp, integer seconds,
    second 0 of the stream is midnight of a Monday) and ``hosts`` (readings per second).
    Timestamps are non-decreasing; values are positive floats.
    """
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
        raise ValueError(f"n must be an int >= 0 or None, got {n!r}")
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ValueError(f"start must be an int >= 0 (seconds), got {start!r}")
    if isinstance(hosts, bool) or not isinstance(hosts, int) or hosts < 1:
        raise ValueError(f"hosts must be an int >= 1, got {hosts!r}")
    stream = _stream(seed, start, hosts)
    return stream if n is None else islice(stream, n)


def _stream(seed: int, start: int, hosts: int) -> Iterator[tuple[int, float]]:
    master = random.Random(seed)
    machines = [_Host(random.Random(master.getrandbits(64))) for _ in range(hosts)]
    t = start
    while True:
        length = HOUR - t % HOUR
        if hosts == 1:
            yield from zip(range(t, t + length), machines[0].hour(t, length))
        else:
            columns = [m.hour(t, length) for m in machines]
            stamps = chain.from_iterable(zip(*repeat(range(t, t + length), hosts)))
            yield from zip(stamps, chain.from_iterable(zip(*columns)))
        t += length
