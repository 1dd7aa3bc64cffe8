/* The changes of a rows event (changes.py): one change object per row, its images
 * as {name: value} dicts. No I/O. */

#include "speedups.h"

/* {name: value} of one row image, leaving out the columns that are `missing`.
 *
 * `*shape` is a dict this call may copy: one with every name as its key, from an
 * earlier image of the same rows event. An image with every column is a copy of it
 * with the values replaced (its hash table is copied whole: no key inserted, no
 * resize); the first such image becomes `*shape` (borrowed: the caller holds
 * it). */
static PyObject *image_dict(PyObject *names, PyObject *row, PyObject *missing,
                            PyObject **shape) {
    if (!PyTuple_Check(row)) {
        PyErr_SetString(PyExc_TypeError, "a row image must be a tuple");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(row);
    int whole = n == PyTuple_GET_SIZE(names);
    if (n > PyTuple_GET_SIZE(names)) n = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; whole && i < n; i++) whole = PyTuple_GET_ITEM(row, i) != missing;
    PyObject *d = whole && *shape != NULL ? PyDict_Copy(*shape) : PyDict_New();
    if (d == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyTuple_GET_ITEM(row, i);
        if (v == missing) continue;
        if (PyDict_SetItem(d, PyTuple_GET_ITEM(names, i), v) < 0) {
            Py_DECREF(d);
            return NULL;
        }
    }
    if (whole && *shape == NULL && PyDict_GET_SIZE(d) == n) *shape = d;
    return d;
}

/* row_changes(make, names, rows, missing, fields, slots) -> list: make(*fields)
 * for each row, with the row's image as a dict in fields[first] and its index in
 * fields[index], where (first, second, index) = slots; with second >= 0 each row
 * is a (before, after) pair of images, the second going to fields[second]; with
 * index < 0 the fields hold no row index (a snapshot's read rows). */
#define MAX_FIELDS 32

PyObject *row_changes(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6 || !PyTuple_Check(args[1]) || !PyTuple_Check(args[2]) ||
        !PyTuple_Check(args[4]) || !PyTuple_Check(args[5]) || PyTuple_GET_SIZE(args[5]) != 3) {
        PyErr_SetString(PyExc_TypeError, "row_changes(make, names: tuple, rows: tuple, missing, "
                                         "fields: tuple, slots: (int, int, int))");
        return NULL;
    }
    Py_ssize_t first = PyLong_AsSsize_t(PyTuple_GET_ITEM(args[5], 0));
    Py_ssize_t second = PyLong_AsSsize_t(PyTuple_GET_ITEM(args[5], 1));
    Py_ssize_t index = PyLong_AsSsize_t(PyTuple_GET_ITEM(args[5], 2));
    if (PyErr_Occurred()) return NULL;
    PyObject *make = args[0], *names = args[1], *rows = args[2], *missing = args[3];
    Py_ssize_t nf = PyTuple_GET_SIZE(args[4]);
    if (nf > MAX_FIELDS || first < 0 || first >= nf || index >= nf || second >= nf ||
        second == first || (index >= 0 && (first == index || second == index))) {
        PyErr_SetString(PyExc_ValueError, "row_changes: slots out of the fields");
        return NULL;
    }
    PyObject *call[MAX_FIELDS];
    for (Py_ssize_t k = 0; k < nf; k++) call[k] = PyTuple_GET_ITEM(args[4], k);
    Py_ssize_t n = PyTuple_GET_SIZE(rows);
    PyObject *out = PyList_New(n);
    if (out == NULL) return NULL;
    PyObject *shape = NULL, *held = NULL; /* see image_dict; held: our reference to it */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyTuple_GET_ITEM(rows, i), *one, *two = NULL, *change = NULL;
        if (second >= 0) {
            if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 2) {
                PyErr_SetString(PyExc_TypeError, "an update row must be a (before, after) pair");
                goto fail;
            }
            one = image_dict(names, PyTuple_GET_ITEM(row, 0), missing, &shape);
            two = one ? image_dict(names, PyTuple_GET_ITEM(row, 1), missing, &shape) : NULL;
            if (two == NULL) {
                Py_XDECREF(one);
                goto fail;
            }
            call[second] = two;
        } else {
            one = image_dict(names, row, missing, &shape);
            if (one == NULL) goto fail;
        }
        if (held == NULL && shape != NULL) {
            held = shape; /* the change need not keep it */
            Py_INCREF(held);
        }
        call[first] = one;
        if (index < 0) {
            change = PyObject_Vectorcall(make, call, (size_t)nf, NULL);
        } else {
            PyObject *at = PyLong_FromSsize_t(i);
            if (at != NULL) {
                call[index] = at;
                change = PyObject_Vectorcall(make, call, (size_t)nf, NULL);
                Py_DECREF(at);
            }
        }
        Py_DECREF(one);
        Py_XDECREF(two);
        if (change == NULL) goto fail;
        PyList_SET_ITEM(out, i, change);
    }
    Py_XDECREF(held);
    return out;
fail:
    Py_XDECREF(held);
    Py_DECREF(out);
    return NULL;
}
