/* Optional compiled accelerator for row images: the values of one image and the
 * image loop (the RowPlan type and its methods are in rowplan.c). No I/O.
 *
 * RowPlan(specs, MISSING) compiles one table definition: specs holds one
 * (code, a, b, obj, fallback) tuple per column, built by
 * replica_client/binlog/row_plans.py, which documents the codes. The plan
 * decodes the row images of WRITE/UPDATE/DELETE rows events exactly as
 * replica_client/binlog/row_decoders.py does (same values, same types): whenever a
 * value is not one this file is sure to build identically (invalid dates,
 * DECIMAL groups out of range, a value running past the buffer, ...) it calls
 * the column's pure-Python reader, fallback(view, pos) -> (value, pos), which
 * builds that value or raises the error the pure path raises.
 *
 * Image layout: null bitmap (null_len bytes, one bit per *present* column) |
 * values of the present, non-NULL columns. Absent columns are MISSING.
 */

#include "rowplan.h"
#include <datetime.h>

static const int DIG2BYTES[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
static const uint32_t POW10[10] = {1, 10, 100, 1000, 10000, 100000, 1000000,
                                   10000000, 100000000, 1000000000};

/* -- small readers ---------------------------------------------------------- */

static inline uint32_t be16(const unsigned char *p) { return ((uint32_t)p[0] << 8) | p[1]; }
static inline uint32_t be24(const unsigned char *p) {
    return ((uint32_t)p[0] << 16) | ((uint32_t)p[1] << 8) | p[2];
}
static inline uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t le_n(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}
static inline uint64_t be_n(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

static int days_in_month(int y, int m) {
    static const int dim[13] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)) return 29;
    return dim[m];
}

static int valid_date(long y, long m, long d) {
    return y >= 1 && y <= 9999 && m >= 1 && m <= 12 && d >= 1 && d <= days_in_month((int)y, (int)m);
}

/* Fractional-second bytes of DATETIME2/TIMESTAMP2 (rows/columns.py _frac_reader). */
static inline int frac_bytes(int fsp) {
    if (fsp <= 0) return 0;
    if (fsp <= 2) return 1;
    if (fsp <= 4) return 2;
    return 3;
}

static inline long frac_value(const unsigned char *p, int nbytes) {
    switch (nbytes) {
    case 0: return 0;
    case 1: return (long)p[0] * 10000;
    case 2: return (long)be16(p) * 100;
    default: return (long)be24(p);
    }
}

/* Days since 1970-01-01 -> civil date (proleptic Gregorian). */
static void civil_from_days(int64_t z, int *y, int *m, int *d) {
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = yoe + era * 400;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yy + (*m <= 2));
}

/* -- one value ---------------------------------------------------------------- */

/* Hand the value to the pure-Python reader: new reference, *pos advanced. */
static PyObject *call_fallback(Column *c, Ctx *ctx, Py_ssize_t *pos) {
    PyObject *p = PyLong_FromSsize_t(*pos);
    if (p == NULL) return NULL;
    PyObject *res = PyObject_CallFunctionObjArgs(c->fallback, ctx->view, p, NULL);
    Py_DECREF(p);
    if (res == NULL) return NULL;
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2) {
        Py_DECREF(res);
        PyErr_SetString(PyExc_TypeError, "column reader must return (value, pos)");
        return NULL;
    }
    PyObject *value = PyTuple_GET_ITEM(res, 0);
    Py_ssize_t np = PyLong_AsSsize_t(PyTuple_GET_ITEM(res, 1));
    if (np == -1 && PyErr_Occurred()) {
        Py_DECREF(res);
        return NULL;
    }
    Py_INCREF(value);
    Py_DECREF(res);
    *pos = np;
    return value;
}

/* An ASCII text as a str, without the UTF-8 decoder. */
static PyObject *ascii_str(const char *text, Py_ssize_t n) {
    PyObject *s = PyUnicode_New(n, 127);
    if (s != NULL) memcpy(PyUnicode_1BYTE_DATA(s), text, (size_t)n);
    return s;
}

static PyObject *decode_decimal(Column *c, const unsigned char *src, int size) {
    int precision = c->a, scale = c->b;
    int intg = precision - scale;
    int lead_digits = intg % 9, int_groups = intg / 9;
    int frac_groups = scale / 9, trail_digits = scale % 9;
    unsigned char tmp[48];
    int negative = !(src[0] & 0x80);
    memcpy(tmp, src, (size_t)size);
    tmp[0] ^= 0x80;
    if (negative)
        for (int i = 0; i < size; i++) tmp[i] = (unsigned char)~tmp[i];
    char text[128];
    char *out = text;
    const unsigned char *p = tmp;
    /* integer part: lead group, then 9-digit groups; leading zeros dropped */
    char digits[96];
    int nd = 0;
    if (lead_digits) {
        int nb = DIG2BYTES[lead_digits];
        uint32_t v = (uint32_t)be_n(p, nb);
        p += nb;
        if (v >= POW10[lead_digits]) return NULL;
        /* leading zeros dropped below */
        nd = (int)(put_digits(digits + nd, v, lead_digits) - digits);
    }
    for (int g = 0; g < int_groups; g++) {
        uint32_t v = be32(p);
        p += 4;
        if (v >= 1000000000u) return NULL;
        nd = (int)(put_digits(digits + nd, v, 9) - digits);
    }
    int first = 0;
    while (first < nd - 1 && digits[first] == '0') first++;
    int int_zero = (nd == 0) || (nd - first == 1 && digits[first] == '0');
    char frac[96];
    int nf = 0, frac_zero = 1;
    for (int g = 0; g < frac_groups; g++) {
        uint32_t v = be32(p);
        p += 4;
        if (v >= 1000000000u) return NULL;
        if (v) frac_zero = 0;
        nf = (int)(put_digits(frac + nf, v, 9) - frac);
    }
    if (trail_digits) {
        int nb = DIG2BYTES[trail_digits];
        uint32_t v = (uint32_t)be_n(p, nb);
        if (v >= POW10[trail_digits]) return NULL;
        if (v) frac_zero = 0;
        nf = (int)(put_digits(frac + nf, v, trail_digits) - frac);
    }
    if (int_zero && frac_zero) negative = 0;
    if (negative) *out++ = '-';
    if (nd == 0) {
        *out++ = '0';
    } else {
        memcpy(out, digits + first, (size_t)(nd - first));
        out += nd - first;
    }
    if (scale) {
        *out++ = '.';
        memcpy(out, frac, (size_t)nf);
        out += nf;
    }
    PyObject *s = ascii_str(text, out - text);
    if (s == NULL) return NULL;
    PyObject *value = PyObject_CallOneArg(c->obj, s);
    Py_DECREF(s);
    return value;
}

static int decimal_size(int precision, int scale) {
    int intg = precision - scale;
    return (intg / 9) * 4 + DIG2BYTES[intg % 9] + (scale / 9) * 4 + DIG2BYTES[scale % 9];
}

/* Decode one non-NULL value at *pos; new reference, *pos advanced. */
static PyObject *read_value(Column *c, Ctx *ctx, Py_ssize_t *pos) {
    const Py_ssize_t at = *pos;
    const Py_ssize_t left = ctx->len - at;
    const unsigned char *p = ctx->buf + at;
    if (at < 0 || at > ctx->len) return call_fallback(c, ctx, pos);
    switch (c->code) {
    case C_I8:
        if (left < 1) break;
        *pos = at + 1;
        return PyLong_FromLong((signed char)p[0]);
    case C_U8:
        if (left < 1) break;
        *pos = at + 1;
        return PyLong_FromLong(p[0]);
    case C_I16:
        if (left < 2) break;
        *pos = at + 2;
        return PyLong_FromLong((int16_t)(p[0] | (p[1] << 8)));
    case C_U16:
        if (left < 2) break;
        *pos = at + 2;
        return PyLong_FromLong(p[0] | (p[1] << 8));
    case C_I24: {
        if (left < 3) break;
        int32_t v = (int32_t)(p[0] | (p[1] << 8) | ((uint32_t)p[2] << 16));
        if (v & 0x800000) v -= 0x1000000;
        *pos = at + 3;
        return PyLong_FromLong(v);
    }
    case C_U24:
        if (left < 3) break;
        *pos = at + 3;
        return PyLong_FromLong(p[0] | (p[1] << 8) | ((long)p[2] << 16));
    case C_I32:
        if (left < 4) break;
        *pos = at + 4;
        return PyLong_FromLong((int32_t)le_n(p, 4));
    case C_U32:
        if (left < 4) break;
        *pos = at + 4;
        return PyLong_FromUnsignedLong((uint32_t)le_n(p, 4));
    case C_I64:
        if (left < 8) break;
        *pos = at + 8;
        return PyLong_FromLongLong((int64_t)le_n(p, 8));
    case C_U64:
        if (left < 8) break;
        *pos = at + 8;
        return PyLong_FromUnsignedLongLong(le_n(p, 8));
    case C_FLOAT: {
        if (left < 4) break;
        double v = PyFloat_Unpack4((const char *)p, 1);
        if (v == -1.0 && PyErr_Occurred()) return NULL;
        *pos = at + 4;
        return PyFloat_FromDouble(v);
    }
    case C_DOUBLE: {
        if (left < 8) break;
        double v = PyFloat_Unpack8((const char *)p, 1);
        if (v == -1.0 && PyErr_Occurred()) return NULL;
        *pos = at + 8;
        return PyFloat_FromDouble(v);
    }
    case C_YEAR:
        if (left < 1) break;
        *pos = at + 1;
        return PyLong_FromLong(p[0] ? 1900 + p[0] : 0);
    case C_DATE: {
        if (left < 3) break;
        uint32_t v = p[0] | (p[1] << 8) | ((uint32_t)p[2] << 16);
        long y = v >> 9, m = (v >> 5) & 15, d = v & 31;
        if (!valid_date(y, m, d)) break;
        *pos = at + 3;
        return PyDate_FromDate((int)y, (int)m, (int)d);
    }
    case C_DATETIME2: {
        int nf = frac_bytes(c->a);
        if (left < 5 + nf) break;
        int64_t packed = (int64_t)be_n(p, 5) - 0x8000000000LL;
        if (packed < 0) break;
        long us = frac_value(p + 5, nf);
        int64_t ymd = packed >> 17, ym = ymd >> 5, hms = packed & 0x1FFFF;
        long y = (long)(ym / 13), mo = (long)(ym % 13), d = (long)(ymd & 31);
        long h = (long)(hms >> 12), mi = (long)((hms >> 6) & 63), s = (long)(hms & 63);
        if (!valid_date(y, mo, d) || h > 23 || mi > 59 || s > 59 || us > 999999) break;
        *pos = at + 5 + nf;
        return PyDateTime_FromDateAndTime((int)y, (int)mo, (int)d, (int)h, (int)mi, (int)s,
                                          (int)us);
    }
    case C_TIMESTAMP2: {
        int nf = frac_bytes(c->a);
        if (left < 4 + nf) break;
        int64_t secs = be32(p);
        long us = frac_value(p + 4, nf);
        if (secs == 0 && us == 0) break; /* zero timestamp: InvalidDatetime */
        int64_t total = secs * 1000000 + us;
        int64_t days = total / 86400000000LL;
        int64_t rem = total % 86400000000LL;
        int y, m, d;
        civil_from_days(days, &y, &m, &d);
        int64_t sod = rem / 1000000;
        *pos = at + 4 + nf;
        return PyDateTimeAPI->DateTime_FromDateAndTime(
            y, m, d, (int)(sod / 3600), (int)((sod / 60) % 60), (int)(sod % 60),
            (int)(rem % 1000000), c->obj, PyDateTimeAPI->DateTimeType);
    }
    case C_TIME2: {
        int nfrac = (c->a + 1) / 2;
        if (left < 3 + nfrac) break;
        int64_t intpart = (int64_t)be24(p) - 0x800000;
        int64_t packed;
        if (nfrac == 0) {
            packed = intpart * (1LL << 24);
        } else if (nfrac == 1) {
            int64_t f = p[3];
            if (intpart < 0 && f) {
                intpart += 1;
                f -= 0x100;
            }
            packed = intpart * (1LL << 24) + f * 10000;
        } else if (nfrac == 2) {
            int64_t f = be16(p + 3);
            if (intpart < 0 && f) {
                intpart += 1;
                f -= 0x10000;
            }
            packed = intpart * (1LL << 24) + f * 100;
        } else {
            packed = intpart * (1LL << 24) + (int64_t)be24(p + 3);
        }
        int neg = packed < 0;
        if (neg) packed = -packed;
        int64_t hms = packed >> 24, frac = packed & 0xFFFFFF;
        int64_t total = ((((hms >> 12) & 0x3FF) * 60 + ((hms >> 6) & 63)) * 60 + (hms & 63))
                            * 1000000LL + frac;
        if (neg) total = -total;
        int64_t day_us = 86400000000LL;
        int64_t days = total >= 0 ? total / day_us : -((-total + day_us - 1) / day_us);
        int64_t rem = total - days * day_us;
        *pos = at + 3 + nfrac;
        return PyDelta_FromDSU((int)days, (int)(rem / 1000000), (int)(rem % 1000000));
    }
    case C_BIT:
        if (left < c->a) break;
        *pos = at + c->a;
        return PyLong_FromUnsignedLongLong(be_n(p, c->a));
    case C_STRING: {
        int pl = c->a;
        if (left < pl) break;
        Py_ssize_t n = (Py_ssize_t)le_n(p, pl);
        if (n > left - pl) break; /* overrun: the reader raises */
        const char *s = (const char *)p + pl;
        if (c->b == AS_UTF8 || c->b == AS_UTF8MB3) {
            PyObject *v = PyUnicode_DecodeUTF8(s, n, NULL);
            if (v == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) return NULL;
                PyErr_Clear();
                v = PyBytes_FromStringAndSize(s, n);
            } else if (c->b == AS_UTF8MB3 && PyUnicode_KIND(v) == PyUnicode_4BYTE_KIND) {
                /* A character above U+FFFF: not utf8mb3, the value stays bytes. */
                Py_DECREF(v);
                v = PyBytes_FromStringAndSize(s, n);
            }
            *pos = at + pl + n;
            return v;
        }
        if (c->b == AS_LATIN1) {
            for (Py_ssize_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char)s[i];
                if (ch >= 0x80 && ch < 0xA0) return call_fallback(c, ctx, pos);
            }
            *pos = at + pl + n;
            return PyUnicode_DecodeLatin1(s, n, NULL);
        }
        *pos = at + pl + n;
        return PyBytes_FromStringAndSize(s, n);
    }
    case C_ENUM: {
        int pl = c->a;
        if (left < pl) break;
        uint64_t i = le_n(p, pl);
        *pos = at + pl;
        if (c->obj != Py_None && c->obj != NULL && i < (uint64_t)PyTuple_GET_SIZE(c->obj)) {
            PyObject *v = PyTuple_GET_ITEM(c->obj, (Py_ssize_t)i);
            Py_INCREF(v);
            return v;
        }
        return PyLong_FromUnsignedLongLong(i);
    }
    case C_SET: {
        int pl = c->a;
        if (left < pl) break;
        uint64_t mask = le_n(p, pl);
        *pos = at + pl;
        if (c->obj == Py_None || c->obj == NULL) return PyLong_FromUnsignedLongLong(mask);
        Py_ssize_t nl = PyTuple_GET_SIZE(c->obj);
        if (nl < 64 && (mask >> nl)) return PyLong_FromUnsignedLongLong(mask);
        PyObject *fs = PyFrozenSet_New(NULL);
        if (fs == NULL) return NULL;
        int cyclic = 0;
        for (Py_ssize_t i = 0; i < nl && i < 64; i++) {
            if ((mask >> i) & 1) {
                PyObject *label = PyTuple_GET_ITEM(c->obj, i);
                if (PySet_Add(fs, label) < 0) {
                    Py_DECREF(fs);
                    return NULL;
                }
                if (!cyclic) cyclic = may_be_tracked(label);
            }
        }
        untrack_unless(fs, cyclic); /* labels are strings: a frozenset of them holds no cycle */
        return fs;
    }
    case C_DECIMAL: {
        int size = decimal_size(c->a, c->b);
        if (left < size || size > 40) break;
        PyObject *v = decode_decimal(c, p, size);
        if (v == NULL) {
            if (PyErr_Occurred()) return NULL;
            break; /* digits out of range: the reader raises */
        }
        *pos = at + size;
        return v;
    }
    default:
        break;
    }
    return call_fallback(c, ctx, pos);
}

/* -- images -------------------------------------------------------------------- */

static inline int bit(const unsigned char *bits, Py_ssize_t i) { return (bits[i >> 3] >> (i & 7)) & 1; }

/* One image: full when present_bits is NULL (every column present). */
PyObject *decode_one(RowPlan *self, Ctx *ctx, Py_ssize_t *pos,
                     const unsigned char *present_bits, Py_ssize_t null_len) {
    Py_ssize_t ncols = self->ncols;
    unsigned char stack_nulls[64];
    unsigned char *nulls = stack_nulls;
    if (null_len > (Py_ssize_t)sizeof(stack_nulls)) {
        nulls = PyMem_Malloc((size_t)null_len);
        if (nulls == NULL) return PyErr_NoMemory();
    }
    /* As int.from_bytes(view[pos:pos + null_len]): bytes past the end are zeros. */
    Py_ssize_t at = *pos;
    for (Py_ssize_t i = 0; i < null_len; i++) {
        Py_ssize_t j = at + i;
        nulls[i] = (j >= 0 && j < ctx->len) ? ctx->buf[j] : 0;
    }
    *pos = at + null_len;
    PyObject *row = PyTuple_New(ncols);
    if (row == NULL) goto fail;
    Py_ssize_t nbit = 0; /* index into the null bitmap (present columns only) */
    int cyclic = 0;      /* a value that could lead back to the row */
    for (Py_ssize_t i = 0; i < ncols; i++) {
        PyObject *v;
        if (present_bits != NULL && !bit(present_bits, i)) {
            v = self->missing;
            Py_INCREF(v);
        } else {
            int is_null = nbit < null_len * 8 ? bit(nulls, nbit) : 0;
            nbit++;
            if (is_null) {
                v = Py_None;
                Py_INCREF(v);
            } else {
                v = read_value(&self->cols[i], ctx, pos);
                if (v == NULL) {
                    Py_DECREF(row);
                    goto fail;
                }
            }
        }
        PyTuple_SET_ITEM(row, i, v);
        if (!cyclic) cyclic = may_be_tracked(v);
    }
    if (nulls != stack_nulls) PyMem_Free(nulls);
    untrack_unless(row, cyclic);
    return row;
fail:
    if (nulls != stack_nulls) PyMem_Free(nulls);
    return NULL;
}

int rows_init(void) {
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL) return -1;
    return PyType_Ready(&RowPlanType);
}
