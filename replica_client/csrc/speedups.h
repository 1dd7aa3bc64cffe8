/* Declarations shared by the parts of the compiled accelerator
 * (replica_client._speedups): one extension module, one file per job. */
#ifndef REPLICA_CLIENT_SPEEDUPS_H
#define REPLICA_CLIENT_SPEEDUPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <structmember.h>

/* `width` decimal digits of `value` (value < 10**width), zero-padded, at `p`;
 * returns the end of them (rows.c's DECIMAL text, jsontext.c's ISO dates). */
static inline char *put_digits(char *p, uint32_t value, int width) {
    for (int i = width - 1; i >= 0; i--) {
        p[i] = (char)('0' + value % 10);
        value /= 10;
    }
    return p + width;
}

/* rows.c, rowplan.c (sharing rowplan.h): row images (binlog/row_plans.py) */
extern PyTypeObject RowPlanType;
int rows_init(void); /* the datetime C API (one per file that uses it), RowPlanType */
int add_codes(PyObject *m);

/* textrows.c: the rows of a text result set (snapshot/textrows.py) */
extern PyTypeObject TextRowPlanType;
int textrows_init(void); /* the datetime C API, decimal.Decimal, TextRowPlanType */
int add_text_codes(PyObject *m); /* TextRowPlan and TEXT_CODES */

/* changes.c: the changes of a rows event (changes.py) */
PyObject *row_changes(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* jsontext.c: row images as compact JSON text (spark/changelog.py) */
int jsontext_init(void); /* the datetime C API, the quote character */
PyObject *json_images(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *json_column(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* framing.c: packets of the replication stream (wire/framing.py) */
PyObject *frame_packet(PyObject *module, PyObject *args);
PyObject *frame_events(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* header.c: the common event header, checksum verified (binlog/decoder.py) */
void crc_init(void);
int crc_accelerated(void); /* 1: CRC-32 by carry-less multiplication on this CPU */
PyObject *crc32_of(PyObject *module, PyObject *data);
PyObject *event_head(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *event_head_setup(PyObject *module, PyObject *args);

/* maker.c: frozen, slotted dataclasses without their __init__ (accel.py) */
extern PyTypeObject MakerType;
int maker_init(void);
/* Could ``v`` be part of a reference cycle? (A container holding no such value
 * can be left to reference counting, as CPython untracks such tuples.) The
 * type's flag answers for most values (ints, strings, ...) without a call. */
int may_be_tracked_gc(PyObject *v);
static inline int may_be_tracked(PyObject *v) {
    return PyType_IS_GC(Py_TYPE(v)) && may_be_tracked_gc(v);
}

#endif
