#include "speedups.h"

/* -- Maker: build a frozen, slotted dataclass without running its __init__ --
 *
 * Maker(cls, names) -> a callable: maker(v0, v1, ...) returns a new ``cls``
 * whose slots ``names[i]`` hold ``vi``, which is what the dataclass __init__
 * of a class without __post_init__ does, minus one object.__setattr__ call
 * per field (replica_client/accel.py checks that the class qualifies: every
 * slot is a field, no __post_init__). Any other call (keywords, defaults left
 * out) goes to ``cls`` itself, so errors and defaults are the class's own. */
#ifndef T_OBJECT_EX
#define T_OBJECT_EX 16
#endif

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *cls;
    Py_ssize_t n;
    Py_ssize_t *offsets;
} Maker;

/* Types built by a Maker: frozen, so an untracked instance stays free of cycles. */
static PyObject *maker_types = NULL;

/* Could ``v`` be part of a reference cycle? (CPython's rule for tuples, which
 * untracks a tuple holding none: only GC objects can, except untracked exact
 * tuples, and here also untracked tuple subclasses without a __dict__, such as
 * EventHeader, untracked frozensets (rows.c untracks a SET value's) and
 * untracked instances of the frozen Maker-built types.) */
int may_be_tracked_gc(PyObject *v) {
    if (!PyObject_IS_GC(v)) return 0;
    if (PyObject_GC_IsTracked(v)) return 1;
    if (PyTuple_Check(v) && Py_TYPE(v)->tp_dictoffset == 0) return 0; /* e.g. EventHeader */
    if (PyFrozenSet_CheckExact(v)) return 0; /* immutable: untracked when it held no such value */
    return PySet_Contains(maker_types, (PyObject *)Py_TYPE(v)) != 1;
}

static PyObject *Maker_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames) {
    Maker *self = (Maker *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL || nargs != self->n) {
        return PyObject_Vectorcall((PyObject *)self->cls, args, nargsf, kwnames);
    }
    PyObject *obj = self->cls->tp_alloc(self->cls, 0);
    if (obj == NULL) return NULL;
    int cyclic = 0;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        *(PyObject **)((char *)obj + self->offsets[i]) = args[i];
        if (!cyclic) cyclic = may_be_tracked(args[i]);
    }
    /* Frozen, holding nothing that can reach back to it: leave it to refcounting
     * (what CPython does for such tuples), so the collector does not scan it. */
    if (!cyclic && PyObject_GC_IsTracked(obj)) PyObject_GC_UnTrack(obj);
    return obj;
}

static void Maker_dealloc(Maker *self) {
    Py_XDECREF(self->cls);
    PyMem_Free(self->offsets);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Maker_new(PyTypeObject *type, PyObject *args, PyObject *Py_UNUSED(kwds)) {
    PyObject *cls, *names;
    if (!PyArg_ParseTuple(args, "O!O!", &PyType_Type, &cls, &PyTuple_Type, &names)) return NULL;
    PyTypeObject *tp = (PyTypeObject *)cls;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    Py_ssize_t *offsets = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Py_ssize_t));
    if (offsets == NULL) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *descr = PyObject_GetAttr(cls, PyTuple_GET_ITEM(names, i));
        if (descr == NULL) {
            PyMem_Free(offsets);
            return NULL;
        }
        int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type);
        if (ok) {
            PyMemberDescrObject *md = (PyMemberDescrObject *)descr;
            ok = md->d_member->type == T_OBJECT_EX && !(md->d_member->flags & READONLY) &&
                 PyType_IsSubtype(tp, md->d_common.d_type) && md->d_member->offset > 0 &&
                 md->d_member->offset + (Py_ssize_t)sizeof(PyObject *) <= tp->tp_basicsize;
            offsets[i] = md->d_member->offset;
        }
        Py_DECREF(descr);
        if (!ok) {
            PyMem_Free(offsets);
            PyErr_Format(PyExc_TypeError, "%R is not an object slot of %R",
                         PyTuple_GET_ITEM(names, i), cls);
            return NULL;
        }
    }
    Maker *self = (Maker *)type->tp_alloc(type, 0);
    if (self == NULL) {
        PyMem_Free(offsets);
        return NULL;
    }
    if (PySet_Add(maker_types, cls) < 0) {
        PyMem_Free(offsets);
        Py_DECREF(self);
        return NULL;
    }
    self->vectorcall = Maker_vectorcall;
    Py_INCREF(cls);
    self->cls = tp;
    self->n = n;
    self->offsets = offsets;
    return (PyObject *)self;
}

static PyObject *Maker_repr(Maker *self) {
    return PyUnicode_FromFormat("<Maker of %s>", self->cls->tp_name);
}

PyTypeObject MakerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "replica_client._speedups.Maker",
    .tp_basicsize = sizeof(Maker),
    .tp_dealloc = (destructor)Maker_dealloc,
    .tp_repr = (reprfunc)Maker_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Maker, vectorcall),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Fast constructor of a frozen, slotted dataclass (see accel.constructor).",
    .tp_new = Maker_new,
};

int maker_init(void) {
    if (PyType_Ready(&MakerType) < 0) return -1;
    maker_types = PySet_New(NULL);
    return maker_types == NULL ? -1 : 0;
}
