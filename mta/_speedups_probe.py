"""A probe of the optional compiled core (issue 20): one ``cython.cclass`` over a typed buffer.

``RunningSum(capacity)`` keeps the last values in a ring of C doubles and their running sum:
``insert(x)`` appends (``OverflowError`` when full), ``evict()`` removes the oldest and
returns it (``IndexError`` when empty), ``query()`` is the sum. The same file is the
pure-Python fallback: compiled, ``_buf`` is a ``double[:]`` memoryview and the attributes
are C fields; interpreted, ``_buf`` is an ``array('d')`` and the decorators do nothing.
"""

from __future__ import annotations

from array import array

try:
    import cython
except ModuleNotFoundError:  # Cython is needed to build, not to run
    from mta import _cython_shim as cython

COMPILED: bool = cython.compiled


@cython.cclass
class RunningSum:
    _buf: cython.double[:]
    _capacity: cython.Py_ssize_t
    _head: cython.Py_ssize_t
    _size: cython.Py_ssize_t
    _total: cython.double

    def __init__(self, capacity: cython.Py_ssize_t):
        if capacity <= 0:
            raise ValueError(f"capacity must be positive, not {capacity}")
        self._buf = array("d", bytes(8 * capacity))
        self._capacity = capacity
        self._head = 0
        self._size = 0
        self._total = 0.0

    def __len__(self) -> cython.Py_ssize_t:
        return self._size

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def insert(self, x: cython.double) -> None:
        i: cython.Py_ssize_t
        if self._size == self._capacity:
            raise OverflowError("RunningSum is full")
        i = self._head + self._size
        if i >= self._capacity:
            i -= self._capacity
        self._buf[i] = x
        self._size += 1
        self._total += x

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def evict(self) -> cython.double:
        x: cython.double
        if self._size == 0:
            raise IndexError("evict from an empty RunningSum")
        x = self._buf[self._head]
        self._head += 1
        if self._head == self._capacity:
            self._head = 0
        self._size -= 1
        self._total -= x
        return x

    def query(self) -> cython.double:
        return self._total
