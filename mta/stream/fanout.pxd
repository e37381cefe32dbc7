# C declarations for fanout.py, compiled (Cython's augmenting .pxd): a Result's slots are
# written in place (see fanout._slot_offsets).
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF

cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        int type
        Py_ssize_t offset
        int flags
    int T_OBJECT_EX
    int READONLY

cdef extern from "Python.h":
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member
    object _alloc "PyType_GenericAlloc" (PyTypeObject *type, Py_ssize_t nitems)

cdef Py_ssize_t _OFFSETS[8]
