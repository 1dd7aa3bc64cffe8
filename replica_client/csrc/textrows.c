/* The TextRowPlan type (snapshot/textrows.py): the rows of a text result set
 * (COM_QUERY), one row packet's payload each, turned into tuples of values. No I/O.
 *
 * TextRowPlan(specs, error) compiles one table: specs holds one (code, convert)
 * pair per column, built by replica_client/snapshot/textrows.py, which documents
 * the codes (enum TextCode below; exported as TEXT_CODES); error is the exception
 * class of a malformed payload (ProtocolError). parse(payloads) does exactly what
 * textrows.parse_rows does (same values, same types, same errors): a value is
 * built here when its text is in the form the server writes and this file is sure
 * to build the very value convert(bytes) builds; any other value (zero or invalid
 * dates, FALLBACK columns, texts not in the usual form) is convert(bytes)'s.
 *
 * Payload: per column a length-encoded string (length < 0xfb in one byte, or
 * 0xfc + 2, 0xfd + 3, 0xfe + 8 bytes little-endian), or 0xfb alone for NULL. */

#include "speedups.h"
#include <datetime.h>
#include <math.h>

enum TextCode {
    TX_FALLBACK = 0, TX_INT, TX_BYTES, TX_UTF8, TX_UTF8MB3, TX_LATIN1, TX_DOUBLE, TX_FLOAT32,
    TX_DECIMAL, TX_DATE, TX_DATETIME, TX_TIMESTAMP, TX_TIME, TX_NCODES
};

typedef struct {
    int code;
    PyObject *convert; /* the Python conversion: bytes -> value */
} TextColumn;

typedef struct {
    PyObject_HEAD
    Py_ssize_t ncols;
    TextColumn *cols;
    PyObject *error; /* ProtocolError */
} TextRowPlan;

static PyObject *Decimal; /* decimal.Decimal */

/* What a reader returns for "not sure: ask the Python conversion" (never a real object). */
static char fallback_tag;
#define USE_FALLBACK ((PyObject *)&fallback_tag)

/* -- readers of one value's text ------------------------------------------------ */

static inline int is_digit(char ch) { return (unsigned char)(ch - '0') <= 9; }

/* `n` decimal digits at `s` into *out; 0 if one is not a digit. */
static inline int digits(const char *s, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit(s[i])) return 0;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 1;
}

static PyObject *int_value(const char *s, Py_ssize_t n) {
    Py_ssize_t i = (n > 0 && s[0] == '-') ? 1 : 0;
    Py_ssize_t nd = n - i;
    if (nd < 1 || nd > 40) return USE_FALLBACK;
    if (nd <= 18) {
        int64_t v = 0;
        for (; i < n; i++) {
            if (!is_digit(s[i])) return USE_FALLBACK;
            v = v * 10 + (s[i] - '0');
        }
        return PyLong_FromLongLong(s[0] == '-' ? -v : v);
    }
    char buf[48];
    for (Py_ssize_t j = i; j < n; j++)
        if (!is_digit(s[j])) return USE_FALLBACK;
    memcpy(buf, s, (size_t)n);
    buf[n] = '\0';
    return PyLong_FromString(buf, NULL, 10); /* BIGINT UNSIGNED past int64 */
}

/* A double in the form the server writes ([-]digits[.digits][e[+-]digits]) into *out:
 * 1, or 0 when float(bytes) is to decide (the text is another form), -1 on error. */
static int double_text(const char *s, Py_ssize_t n, double *out) {
    char buf[64];
    if (n < 1 || n >= (Py_ssize_t)sizeof(buf)) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!is_digit(ch) && ch != '.' && ch != 'e' && ch != 'E' && ch != '-' && ch != '+')
            return 0;
    }
    memcpy(buf, s, (size_t)n);
    buf[n] = '\0';
    char *end = NULL;
    double d = PyOS_string_to_double(buf, &end, NULL); /* what float() calls */
    if (d == -1.0 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) return -1;
        PyErr_Clear();
        return 0;
    }
    if (end != buf + n) return 0;
    *out = d;
    return 1;
}

static PyObject *double_value(const char *s, Py_ssize_t n, int float32) {
    double d;
    int ok = double_text(s, n, &d);
    if (ok <= 0) return ok < 0 ? NULL : USE_FALLBACK;
    if (float32) {
        float f = (float)d; /* struct.pack("<f"): too large for a float raises there */
        if (isinf(f) && !isinf(d)) return USE_FALLBACK;
        d = (double)f;
    }
    return PyFloat_FromDouble(d);
}

/* An ASCII text as a str, without the UTF-8 decoder. */
static PyObject *ascii_text(const char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return NULL;
    PyObject *str = PyUnicode_New(n, 127);
    if (str != NULL) memcpy(PyUnicode_1BYTE_DATA(str), s, (size_t)n);
    return str;
}

static PyObject *decimal_value(const char *s, Py_ssize_t n) {
    PyObject *str = ascii_text(s, n);
    if (str == NULL) return PyErr_Occurred() ? NULL : USE_FALLBACK;
    PyObject *v = PyObject_CallOneArg(Decimal, str);
    Py_DECREF(str);
    return v;
}

static int days_in_month(int y, int m) {
    static const int dim[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
    return dim[m];
}

/* YYYY-MM-DD, a date Python's date holds, at s (10 bytes). */
static int date_parts(const char *s, int *y, int *m, int *d) {
    return s[4] == '-' && s[7] == '-' && digits(s, 4, y) && digits(s + 5, 2, m) &&
           digits(s + 8, 2, d) && *y >= 1 && *m >= 1 && *m <= 12 && *d >= 1 &&
           *d <= days_in_month(*y, *m);
}

/* .F to .FFFFFF (1 to 6 digits) at s, n bytes (n == 0: none) as microseconds. */
static int fraction(const char *s, Py_ssize_t n, int *us) {
    static const int scale[7] = {0, 100000, 10000, 1000, 100, 10, 1};
    if (n == 0) {
        *us = 0;
        return 1;
    }
    if (n < 2 || n > 7 || s[0] != '.' || !digits(s + 1, (int)n - 1, us)) return 0;
    *us *= scale[n - 1];
    return 1;
}

static PyObject *date_value(const char *s, Py_ssize_t n) {
    int y, m, d;
    if (n != 10 || !date_parts(s, &y, &m, &d)) return USE_FALLBACK;
    return PyDate_FromDate(y, m, d);
}

static PyObject *datetime_value(const char *s, Py_ssize_t n, int utc) {
    int y, mo, d, h, mi, sec, us;
    if (n < 19 || s[10] != ' ' || s[13] != ':' || s[16] != ':' || !date_parts(s, &y, &mo, &d) ||
        !digits(s + 11, 2, &h) || !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &sec) ||
        !fraction(s + 19, n - 19, &us) || h > 23 || mi > 59 || sec > 59)
        return USE_FALLBACK;
    return PyDateTimeAPI->DateTime_FromDateAndTime(y, mo, d, h, mi, sec, us,
                                                   utc ? PyDateTime_TimeZone_UTC : Py_None,
                                                   PyDateTimeAPI->DateTimeType);
}

/* [-]H:MM:SS[.F...] (1 to 5 hour digits) as a timedelta. */
static PyObject *time_value(const char *s, Py_ssize_t n) {
    int sign = 1;
    if (n > 0 && s[0] == '-') {
        sign = -1;
        s++;
        n--;
    }
    int hd = 0;
    while (hd < n && hd < 6 && is_digit(s[hd])) hd++;
    int h, m, sec, us;
    if (hd < 1 || hd > 5 || n < hd + 6 || s[hd] != ':' || s[hd + 3] != ':' ||
        !digits(s, hd, &h) || !digits(s + hd + 1, 2, &m) || !digits(s + hd + 4, 2, &sec) ||
        !fraction(s + hd + 6, n - hd - 6, &us))
        return USE_FALLBACK;
    return PyDelta_FromDSU(0, sign * (h * 3600 + m * 60 + sec), sign * us);
}

static PyObject *utf8_value(const char *s, Py_ssize_t n, int mb3) {
    PyObject *v = PyUnicode_DecodeUTF8(s, n, NULL);
    if (v == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return NULL;
        PyErr_Clear();
        return PyBytes_FromStringAndSize(s, n); /* not the server's text: kept as bytes */
    }
    if (mb3 && PyUnicode_KIND(v) == PyUnicode_4BYTE_KIND) {
        Py_DECREF(v); /* above U+FFFF: not utf8mb3, kept as bytes */
        return PyBytes_FromStringAndSize(s, n);
    }
    return v;
}

static PyObject *latin1_value(const char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x80 && ch < 0xA0) return USE_FALLBACK; /* the server's cp1252 part */
    }
    return PyUnicode_DecodeLatin1(s, n, NULL);
}

/* One column's value (new reference), or NULL on error. */
static PyObject *text_value(TextColumn *c, const char *s, Py_ssize_t n) {
    PyObject *v;
    switch (c->code) {
    case TX_INT: v = int_value(s, n); break;
    case TX_BYTES: return PyBytes_FromStringAndSize(s, n);
    case TX_UTF8: return utf8_value(s, n, 0);
    case TX_UTF8MB3: return utf8_value(s, n, 1);
    case TX_LATIN1: v = latin1_value(s, n); break;
    case TX_DOUBLE: v = double_value(s, n, 0); break;
    case TX_FLOAT32: v = double_value(s, n, 1); break;
    case TX_DECIMAL: v = decimal_value(s, n); break;
    case TX_DATE: v = date_value(s, n); break;
    case TX_DATETIME: v = datetime_value(s, n, 0); break;
    case TX_TIMESTAMP: v = datetime_value(s, n, 1); break;
    case TX_TIME: v = time_value(s, n); break;
    default: v = USE_FALLBACK;
    }
    if (v != USE_FALLBACK) return v;
    PyObject *raw = PyBytes_FromStringAndSize(s, n);
    if (raw == NULL) return NULL;
    v = PyObject_CallOneArg(c->convert, raw);
    Py_DECREF(raw);
    return v;
}

/* -- rows ----------------------------------------------------------------------- */

static PyObject *past_end(TextRowPlan *self, Py_ssize_t row, Py_ssize_t col, Py_ssize_t size) {
    PyErr_Format(self->error, "text row %zd: column %zd runs past the end of its %zd bytes", row,
                 col, size);
    return NULL;
}

/* The row of one payload (a new tuple), or NULL on error. */
static PyObject *parse_row(TextRowPlan *self, Py_ssize_t row, const unsigned char *p,
                           Py_ssize_t size) {
    PyObject *t = PyTuple_New(self->ncols);
    if (t == NULL) return NULL;
    Py_ssize_t pos = 0;
    int cyclic = 0;
    for (Py_ssize_t i = 0; i < self->ncols; i++) {
        if (pos >= size) goto truncated;
        uint64_t n = p[pos];
        Py_ssize_t start = pos + 1;
        if (n == 0xfb) {
            Py_INCREF(Py_None);
            PyTuple_SET_ITEM(t, i, Py_None);
            pos++;
            continue;
        }
        if (n > 0xfb) {
            int width = n == 0xfc ? 2 : n == 0xfd ? 3 : n == 0xfe ? 8 : 0;
            if (width == 0) {
                PyErr_Format(self->error,
                             "text row %zd: column %zd has no length (first byte 0xff)", row, i);
                goto fail;
            }
            if (size - start < width) goto truncated;
            n = 0;
            for (int k = width - 1; k >= 0; k--) n = (n << 8) | p[start + k];
            start += width;
        }
        if (n > (uint64_t)(size - start)) goto truncated;
        pos = start + (Py_ssize_t)n;
        PyObject *v = text_value(&self->cols[i], (const char *)p + start, (Py_ssize_t)n);
        if (v == NULL) goto fail;
        if (!cyclic) cyclic = may_be_tracked(v);
        PyTuple_SET_ITEM(t, i, v);
        continue;
    truncated:
        past_end(self, row, i, size);
        goto fail;
    }
    if (pos != size) {
        PyErr_Format(self->error, "text row %zd: %zd byte(s) after its last column", row,
                     size - pos);
        goto fail;
    }
    /* nothing in it can lead back to it: left to reference counting (as CPython's tuples) */
    if (!cyclic) PyObject_GC_UnTrack(t);
    return t;
fail:
    Py_DECREF(t);
    return NULL;
}

static PyObject *TextRowPlan_parse(TextRowPlan *self, PyObject *payloads) {
    PyObject *seq = PySequence_Tuple(payloads); /* (a conversion cannot change it) */
    if (seq == NULL) return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(seq);
    PyObject *rows = PyList_New(count);
    if (rows == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    for (Py_ssize_t r = 0; r < count; r++) {
        PyObject *item = PyTuple_GET_ITEM(seq, r);
        PyObject *row;
        if (PyBytes_Check(item)) {
            row = parse_row(self, r, (const unsigned char *)PyBytes_AS_STRING(item),
                            PyBytes_GET_SIZE(item));
        } else {
            Py_buffer b;
            if (PyObject_GetBuffer(item, &b, PyBUF_SIMPLE) < 0) goto fail;
            row = parse_row(self, r, b.buf, b.len);
            PyBuffer_Release(&b);
        }
        if (row == NULL) goto fail;
        PyList_SET_ITEM(rows, r, row);
    }
    Py_DECREF(seq);
    return rows;
fail:
    Py_DECREF(seq);
    Py_DECREF(rows);
    return NULL;
}

/* -- type ----------------------------------------------------------------------- */

static void TextRowPlan_dealloc(TextRowPlan *self) {
    if (self->cols != NULL) {
        for (Py_ssize_t i = 0; i < self->ncols; i++) Py_XDECREF(self->cols[i].convert);
        PyMem_Free(self->cols);
    }
    Py_XDECREF(self->error);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *TextRowPlan_new(PyTypeObject *type, PyObject *args,
                                 PyObject *Py_UNUSED(kwds)) {
    PyObject *specs, *error;
    if (!PyArg_ParseTuple(args, "O!O", &PyTuple_Type, &specs, &error)) return NULL;
    if (!PyType_Check(error) || !PyType_IsSubtype((PyTypeObject *)error,
                                                  (PyTypeObject *)PyExc_Exception)) {
        PyErr_SetString(PyExc_TypeError, "error must be an exception class");
        return NULL;
    }
    TextRowPlan *self = (TextRowPlan *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    Py_INCREF(error);
    self->error = error;
    Py_ssize_t n = PyTuple_GET_SIZE(specs);
    self->cols = PyMem_Calloc((size_t)(n ? n : 1), sizeof(TextColumn));
    if (self->cols == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        TextColumn *c = &self->cols[i];
        PyObject *convert;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(specs, i), "iO", &c->code, &convert)) {
            Py_DECREF(self);
            return NULL;
        }
        if (!PyCallable_Check(convert)) {
            Py_DECREF(self);
            PyErr_SetString(PyExc_TypeError, "a column's conversion must be callable");
            return NULL;
        }
        if (c->code < 0 || c->code >= TX_NCODES) c->code = TX_FALLBACK;
        Py_INCREF(convert);
        c->convert = convert;
        self->ncols = i + 1;
    }
    return (PyObject *)self;
}

static PyObject *TextRowPlan_columns(TextRowPlan *self, void *Py_UNUSED(closure)) {
    return PyLong_FromSsize_t(self->ncols);
}

static PyMethodDef TextRowPlan_methods[] = {
    {"parse", (PyCFunction)TextRowPlan_parse, METH_O,
     "parse(payloads) -> list of row tuples (see snapshot/textrows.py)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef TextRowPlan_getset[] = {
    {"ncols", (getter)TextRowPlan_columns, NULL, "the number of columns", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject TextRowPlanType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "replica_client._speedups.TextRowPlan",
    .tp_basicsize = sizeof(TextRowPlan),
    .tp_dealloc = (destructor)TextRowPlan_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Compiled parser of one table's text result rows.",
    .tp_methods = TextRowPlan_methods,
    .tp_getset = TextRowPlan_getset,
    .tp_new = TextRowPlan_new,
};

int textrows_init(void) {
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL) return -1;
    PyObject *decimal = PyImport_ImportModule("decimal");
    if (decimal == NULL) return -1;
    Decimal = PyObject_GetAttrString(decimal, "Decimal");
    Py_DECREF(decimal);
    if (Decimal == NULL) return -1;
    return PyType_Ready(&TextRowPlanType);
}

/* The codes by name, for snapshot/textrows.py's TextCode (a test checks that both agree). */
int add_text_codes(PyObject *m) {
    static const char *const names[TX_NCODES] = {
        "FALLBACK", "INT", "BYTES", "UTF8", "UTF8MB3", "LATIN1", "DOUBLE",
        "FLOAT32", "DECIMAL", "DATE", "DATETIME", "TIMESTAMP", "TIME",
    };
    PyObject *codes = PyDict_New();
    if (codes == NULL) return -1;
    for (int i = 0; i < TX_NCODES; i++) {
        PyObject *v = PyLong_FromLong(i);
        if (v == NULL || PyDict_SetItemString(codes, names[i], v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(codes);
            return -1;
        }
        Py_DECREF(v);
    }
    if (PyModule_AddObject(m, "TEXT_CODES", codes) < 0) {
        Py_DECREF(codes);
        return -1;
    }
    Py_INCREF(&TextRowPlanType);
    if (PyModule_AddObject(m, "TextRowPlan", (PyObject *)&TextRowPlanType) < 0) {
        Py_DECREF(&TextRowPlanType);
        return -1;
    }
    return 0;
}
