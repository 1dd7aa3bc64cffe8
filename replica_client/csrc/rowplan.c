/* The RowPlan type (binlog/row_plans.py): its constructor, its decode methods over the
 * row images of one rows event (each image by rows.c's decode_one), and the layout
 * codes by name. No I/O. */

#include "rowplan.h"

/* -- images -------------------------------------------------------------------- */

/* Bitmap bytes from an int (masked to the plan's columns). */
static int bitmap_bytes(RowPlan *self, PyObject *present, unsigned char *out, Py_ssize_t n) {
    PyObject *masked = PyNumber_And(present, self->all_mask);
    if (masked == NULL) return -1;
    PyObject *b = PyObject_CallMethod(masked, "to_bytes", "ns", n, "little");
    Py_DECREF(masked);
    if (b == NULL) return -1;
    memcpy(out, PyBytes_AS_STRING(b), (size_t)n);
    Py_DECREF(b);
    return 0;
}

typedef struct {
    int full;
    unsigned char *bits;
    Py_ssize_t null_len;
} Presence;

static int presence_init(RowPlan *self, PyObject *present, Py_ssize_t null_len, Presence *pr) {
    pr->null_len = null_len;
    pr->bits = NULL;
    int eq = PyObject_RichCompareBool(present, self->all_mask, Py_EQ);
    if (eq < 0) return -1;
    pr->full = eq;
    if (eq) return 0;
    Py_ssize_t n = (self->ncols + 7) >> 3;
    pr->bits = PyMem_Malloc((size_t)(n ? n : 1));
    if (pr->bits == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (n && bitmap_bytes(self, present, pr->bits, n) < 0) {
        PyMem_Free(pr->bits);
        pr->bits = NULL;
        return -1;
    }
    return 0;
}

static void presence_free(Presence *pr) {
    if (pr->bits != NULL) PyMem_Free(pr->bits);
}

static int ctx_open(Ctx *ctx, PyObject *view, Py_buffer *b) {
    if (PyObject_GetBuffer(view, b, PyBUF_SIMPLE) < 0) return -1;
    ctx->view = view;
    ctx->buf = b->buf;
    ctx->len = b->len;
    return 0;
}

static PyObject *RowPlan_decode_image(RowPlan *self, PyObject *args) {
    PyObject *view, *present;
    Py_ssize_t pos, null_len;
    if (!PyArg_ParseTuple(args, "OnOn", &view, &pos, &present, &null_len)) return NULL;
    Py_buffer b;
    Ctx ctx;
    if (ctx_open(&ctx, view, &b) < 0) return NULL;
    Presence pr;
    PyObject *result = NULL;
    if (presence_init(self, present, null_len, &pr) == 0) {
        PyObject *row = decode_one(self, &ctx, &pos, pr.full ? NULL : pr.bits, null_len);
        if (row != NULL) result = Py_BuildValue("(Nn)", row, pos);
        presence_free(&pr);
    }
    PyBuffer_Release(&b);
    return result;
}

static PyObject *rows_result(PyObject *list, Py_ssize_t pos) {
    PyObject *t = PyList_AsTuple(list);
    Py_DECREF(list);
    if (t == NULL) return NULL;
    int cyclic = 0;
    for (Py_ssize_t i = 0; !cyclic && i < PyTuple_GET_SIZE(t); i++)
        cyclic = may_be_tracked(PyTuple_GET_ITEM(t, i));
    untrack_unless(t, cyclic);
    return Py_BuildValue("(Nn)", t, pos);
}

static PyObject *RowPlan_decode_rows(RowPlan *self, PyObject *args) {
    PyObject *view, *present;
    Py_ssize_t pos, end, null_len;
    if (!PyArg_ParseTuple(args, "OnnOn", &view, &pos, &end, &present, &null_len)) return NULL;
    Py_buffer b;
    Ctx ctx;
    if (ctx_open(&ctx, view, &b) < 0) return NULL;
    Presence pr;
    PyObject *result = NULL;
    if (presence_init(self, present, null_len, &pr) == 0) {
        PyObject *list = PyList_New(0);
        while (list != NULL && pos < end) {
            PyObject *row = decode_one(self, &ctx, &pos, pr.full ? NULL : pr.bits, null_len);
            if (row == NULL || PyList_Append(list, row) < 0) {
                Py_XDECREF(row);
                Py_CLEAR(list);
                break;
            }
            Py_DECREF(row);
        }
        if (list != NULL) result = rows_result(list, pos);
        presence_free(&pr);
    }
    PyBuffer_Release(&b);
    return result;
}

static PyObject *RowPlan_decode_update_rows(RowPlan *self, PyObject *args) {
    PyObject *view, *present, *present_after;
    Py_ssize_t pos, end, null_len, null_len_after;
    if (!PyArg_ParseTuple(args, "OnnOnOn", &view, &pos, &end, &present, &null_len,
                          &present_after, &null_len_after))
        return NULL;
    Py_buffer b;
    Ctx ctx;
    if (ctx_open(&ctx, view, &b) < 0) return NULL;
    Presence before, after;
    PyObject *result = NULL;
    if (presence_init(self, present, null_len, &before) == 0) {
        if (presence_init(self, present_after, null_len_after, &after) == 0) {
            PyObject *list = PyList_New(0);
            while (list != NULL && pos < end) {
                PyObject *r1 = decode_one(self, &ctx, &pos, before.full ? NULL : before.bits,
                                          null_len);
                PyObject *r2 = r1 == NULL ? NULL
                                          : decode_one(self, &ctx, &pos,
                                                       after.full ? NULL : after.bits,
                                                       null_len_after);
                PyObject *pair = r2 == NULL ? NULL : PyTuple_Pack(2, r1, r2);
                if (pair != NULL) untrack_unless(pair, may_be_tracked(r1) || may_be_tracked(r2));
                Py_XDECREF(r1);
                Py_XDECREF(r2);
                if (pair == NULL || PyList_Append(list, pair) < 0) {
                    Py_XDECREF(pair);
                    Py_CLEAR(list);
                    break;
                }
                Py_DECREF(pair);
            }
            if (list != NULL) result = rows_result(list, pos);
            presence_free(&after);
        }
        presence_free(&before);
    }
    PyBuffer_Release(&b);
    return result;
}

/* -- type ------------------------------------------------------------------------ */

static void RowPlan_dealloc(RowPlan *self) {
    if (self->cols != NULL) {
        for (Py_ssize_t i = 0; i < self->ncols; i++) {
            Py_XDECREF(self->cols[i].obj);
            Py_XDECREF(self->cols[i].fallback);
        }
        PyMem_Free(self->cols);
    }
    Py_XDECREF(self->missing);
    Py_XDECREF(self->all_mask);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *RowPlan_new(PyTypeObject *type, PyObject *args, PyObject *Py_UNUSED(kwds)) {
    PyObject *specs, *missing;
    if (!PyArg_ParseTuple(args, "O!O", &PyTuple_Type, &specs, &missing)) return NULL;
    RowPlan *self = (RowPlan *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(specs);
    self->ncols = 0;
    self->cols = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Column));
    if (self->cols == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Column *c = &self->cols[i];
        PyObject *obj, *fallback;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(specs, i), "iiiOO", &c->code, &c->a, &c->b, &obj,
                              &fallback)) {
            Py_DECREF(self);
            return NULL;
        }
        if ((c->code == C_ENUM || c->code == C_SET) && obj != Py_None && !PyTuple_Check(obj)) {
            Py_DECREF(self);
            PyErr_SetString(PyExc_TypeError, "ENUM/SET labels must be a tuple");
            return NULL;
        }
        if ((c->code == C_BIT && (c->a < 0 || c->a > 8)) ||
            (c->code == C_STRING && (c->a < 1 || c->a > 4)) ||
            (c->code == C_ENUM && (c->a < 1 || c->a > 4)) ||
            (c->code == C_SET && (c->a < 1 || c->a > 8)) ||
            (c->code == C_DECIMAL && (c->b < 0 || c->a < c->b || c->a > 81 || c->a < 1))) {
            c->code = C_FALLBACK;
        }
        Py_INCREF(obj);
        c->obj = obj;
        Py_INCREF(fallback);
        c->fallback = fallback;
        self->ncols = i + 1;
    }
    Py_INCREF(missing);
    self->missing = missing;
    PyObject *one = PyLong_FromLong(1), *sh = PyLong_FromSsize_t(n);
    PyObject *big = (one && sh) ? PyNumber_Lshift(one, sh) : NULL;
    self->all_mask = big ? PyNumber_Subtract(big, one) : NULL;
    Py_XDECREF(one);
    Py_XDECREF(sh);
    Py_XDECREF(big);
    if (self->all_mask == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyMethodDef RowPlan_methods[] = {
    {"decode_image", (PyCFunction)RowPlan_decode_image, METH_VARARGS,
     "decode_image(view, pos, present, null_len) -> (row, pos)"},
    {"decode_rows", (PyCFunction)RowPlan_decode_rows, METH_VARARGS,
     "decode_rows(view, pos, end, present, null_len) -> (rows, pos)"},
    {"decode_update_rows", (PyCFunction)RowPlan_decode_update_rows, METH_VARARGS,
     "decode_update_rows(view, pos, end, present, null_len, present_after, null_len_after)"
     " -> (pairs, pos)"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject RowPlanType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "replica_client._speedups.RowPlan",
    .tp_basicsize = sizeof(RowPlan),
    .tp_dealloc = (destructor)RowPlan_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Compiled row-image decoder of one table definition.",
    .tp_methods = RowPlan_methods,
    .tp_new = RowPlan_new,
};

/* The layout codes and string conversions by name, for binlog/row_plans.py's table
 * (a test checks that both sides agree). */
int add_codes(PyObject *m) {
    static const struct { const char *name; int code; } layouts[] = {
        {"FALLBACK", C_FALLBACK}, {"I8", C_I8}, {"U8", C_U8}, {"I16", C_I16},
        {"U16", C_U16}, {"I24", C_I24}, {"U24", C_U24}, {"I32", C_I32}, {"U32", C_U32},
        {"I64", C_I64}, {"U64", C_U64}, {"FLOAT", C_FLOAT}, {"DOUBLE", C_DOUBLE},
        {"YEAR", C_YEAR}, {"DATE", C_DATE}, {"DATETIME2", C_DATETIME2},
        {"TIMESTAMP2", C_TIMESTAMP2}, {"TIME2", C_TIME2}, {"BIT", C_BIT},
        {"STRING", C_STRING}, {"ENUM", C_ENUM}, {"DECIMAL", C_DECIMAL}, {"SET", C_SET},
    };
    static const struct { const char *name; int code; } conversions[] = {
        {"AS_BYTES", AS_BYTES}, {"AS_UTF8", AS_UTF8}, {"AS_LATIN1", AS_LATIN1},
        {"AS_UTF8MB3", AS_UTF8MB3},
    };
    PyObject *codes = PyDict_New();
    PyObject *convs = PyDict_New();
    if (codes == NULL || convs == NULL) goto fail;
    for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
        PyObject *v = PyLong_FromLong(layouts[i].code);
        if (v == NULL || PyDict_SetItemString(codes, layouts[i].name, v) < 0) {
            Py_XDECREF(v);
            goto fail;
        }
        Py_DECREF(v);
    }
    for (size_t i = 0; i < sizeof(conversions) / sizeof(conversions[0]); i++) {
        PyObject *v = PyLong_FromLong(conversions[i].code);
        if (v == NULL || PyDict_SetItemString(convs, conversions[i].name, v) < 0) {
            Py_XDECREF(v);
            goto fail;
        }
        Py_DECREF(v);
    }
    if (PyModule_AddObject(m, "LAYOUT_CODES", codes) < 0) goto fail;
    codes = NULL;
    if (PyModule_AddObject(m, "STRING_CONVERSIONS", convs) < 0) goto fail;
    return 0;
fail:
    Py_XDECREF(codes);
    Py_XDECREF(convs);
    return -1;
}
