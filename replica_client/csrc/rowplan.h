/* What the parts of the row-image decoder share: rows.c (the values of an image
 * and the image loop) and rowplan.c (the RowPlan type, its methods, the layout
 * codes). */
#ifndef REPLICA_CLIENT_ROWPLAN_H
#define REPLICA_CLIENT_ROWPLAN_H

#include "speedups.h"

enum Code {
    C_FALLBACK = 0,
    C_I8 = 1, C_U8, C_I16, C_U16, C_I24, C_U24, C_I32, C_U32, C_I64, C_U64,
    C_FLOAT = 11, C_DOUBLE, C_YEAR, C_DATE, C_DATETIME2, C_TIMESTAMP2, C_TIME2,
    C_BIT, C_STRING, C_ENUM, C_DECIMAL, C_SET
};

enum { AS_BYTES = 0, AS_UTF8 = 1, AS_LATIN1 = 2, AS_UTF8MB3 = 3 };

typedef struct {
    int code;
    int a;
    int b;
    PyObject *obj;      /* labels, Decimal type, tzinfo, or NULL */
    PyObject *fallback; /* the pure-Python reader */
} Column;

typedef struct {
    PyObject_HEAD
    Py_ssize_t ncols;
    Column *cols;
    PyObject *missing;
    PyObject *all_mask; /* int (1 << ncols) - 1 */
} RowPlan;

/* Decoding context of one call. */
typedef struct {
    PyObject *view;          /* the memoryview handed to fallbacks */
    const unsigned char *buf;
    Py_ssize_t len;
} Ctx;

/* A tuple (or frozenset) of values none of which can lead back to it is left to
 * reference counting now, not when a collection gets to it (CPython's own rule
 * for tuples): rows buffered ahead of the consumer, and the events that hold
 * them, are then not scanned by every collection they live through. */
static inline void untrack_unless(PyObject *t, int cyclic) {
    if (!cyclic) PyObject_GC_UnTrack(t); /* (a no-op on an untracked one) */
}

/* rows.c: one image at *pos, full when present_bits is NULL (every column present). */
PyObject *decode_one(RowPlan *self, Ctx *ctx, Py_ssize_t *pos,
                     const unsigned char *present_bits, Py_ssize_t null_len);

#endif
