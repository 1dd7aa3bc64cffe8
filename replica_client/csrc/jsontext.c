/* Row images as compact JSON text (spark/changelog.py): what
 * ``json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=...)``
 * writes for a ``{name: value}`` dict, without building the dict.
 *
 * The rules stay in Python. Strings are quoted by the function the caller
 * passes (json's own ``encode_basestring``); every value that is not an exact
 * None, bool, int, float, str, dict or list goes through the caller's function
 * for its type (``forms``, a dict keyed by exact type) or else its
 * ``default``. Dicts (a JSON document's objects, keys exact str) and lists
 * are written item by item, whether in the row or given by a form (a SET's
 * sorted labels, GEOMETRY's object). An image holding anything else (a
 * subclass of those types, a key that is not a str, a result that is none of
 * those kinds, a str with a lone surrogate, which has no UTF-8), and every
 * image of a table naming a column twice, is not written here: its place in
 * the result is None and the caller writes it in Python.
 * tests/spark/test_changelog_json.py compares both writers.
 *
 * The text is written as UTF-8 into a C buffer, one image at a time: ints
 * and floats as int.__repr__ and float.__repr__ give them, str values by
 * their UTF-8; json_column appends each image's bytes to the Arrow column
 * without a str per image (json_images decodes them into one).
 *
 * Two shortcuts, each taken only where it gives what the call it saves gives:
 * - a string of one-byte characters none of which ``quote`` changes is written
 *   between quotes as it is. Which characters ``quote`` changes is asked of
 *   ``quote`` itself, once per quote function (it escapes character by
 *   character, as json's does);
 * - where the form of a naive ``datetime`` or of a ``date`` is that type's own
 *   ``isoformat``, its text is written here in the same layout. */
#include "speedups.h"
#include <datetime.h>
#include <math.h>

/* datetime.isoformat and date.isoformat, to recognise them among the forms. */
static PyObject *datetime_isoformat = NULL, *date_isoformat = NULL;

int jsontext_init(void) {
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL) return -1;
    datetime_isoformat =
        PyObject_GetAttrString((PyObject *)PyDateTimeAPI->DateTimeType, "isoformat");
    date_isoformat = PyObject_GetAttrString((PyObject *)PyDateTimeAPI->DateType, "isoformat");
    return datetime_isoformat == NULL || date_isoformat == NULL ? -1 : 0;
}

/* -- shortcuts ------------------------------------------------------------------------ */

/* The quote function `plain` was derived from (a strong reference), and per
 * one-byte character whether that function writes it as it is. */
static PyObject *plain_for = NULL;
static unsigned char plain[256];

static int derive_plain(PyObject *quote) {
    if (quote == plain_for) return 0;
    for (int c = 0; c < 256; c++) {
        PyObject *ch = PyUnicode_FromOrdinal(c);
        PyObject *q = ch ? PyObject_CallOneArg(quote, ch) : NULL;
        Py_XDECREF(ch);
        if (q == NULL) return -1;
        plain[c] = PyUnicode_Check(q) && PyUnicode_GET_LENGTH(q) == 3 &&
                   PyUnicode_READ_CHAR(q, 0) == '"' && PyUnicode_READ_CHAR(q, 1) == (Py_UCS4)c &&
                   PyUnicode_READ_CHAR(q, 2) == '"';
        Py_DECREF(q);
    }
    Py_XSETREF(plain_for, Py_NewRef(quote));
    return 0;
}

/* Whether quote(v) is v between quotes (`plain` derived from that quote). */
static int quotes_plainly(PyObject *v) {
#if PY_VERSION_HEX < 0x030C0000
    if (!PyUnicode_IS_READY(v)) return 0; /* a legacy string: quote() takes it */
#endif
    if (PyUnicode_KIND(v) != PyUnicode_1BYTE_KIND) return 0;
    const Py_UCS1 *d = PyUnicode_1BYTE_DATA(v);
    Py_ssize_t n = PyUnicode_GET_LENGTH(v);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!plain[d[i]]) return 0;
    return 1;
}

/* -- the text, as UTF-8 bytes in a growing buffer ------------------------------------- */

typedef struct {
    char *p;
    Py_ssize_t len, cap;
} Buf;

static int grow(Buf *b, Py_ssize_t more) {
    if (b->len + more <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 512;
    while (cap < b->len + more) cap *= 2;
    char *p = PyMem_Realloc(b->p, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static int put(Buf *b, const char *src, Py_ssize_t n) {
    if (grow(b, n) < 0) return -1;
    memcpy(b->p + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

/* `key` unless NULL: the bytes of `{"name":` or `,"name":`. 0, or -1 on error. */
static int put_key(Buf *b, PyObject *key) {
    return key == NULL ? 0 : put(b, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key));
}

/* A str's UTF-8: 1 written, 0 it has none (a lone surrogate: the caller's
 * writer), -1 error. */
static int put_utf8(Buf *b, PyObject *s) {
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return -1;
        PyErr_Clear();
        return 0;
    }
    return put(b, u, n) < 0 ? -1 : 1;
}

/* `key` and the quoted ISO text of `v` when `form` is its exact type's own
 * isoformat (a naive datetime, or a date): "YYYY-MM-DD", then for a datetime
 * "THH:MM:SS" and ".ffffff" unless the microseconds are 0. 1 written, 0 not such
 * a value (nothing written), -1 error. */
static int put_iso(Buf *b, PyObject *key, PyObject *v, PyObject *form) {
    char buf[32], *p = buf;
    int datetime = form == datetime_isoformat && PyDateTime_CheckExact(v) &&
                   PyDateTime_DATE_GET_TZINFO(v) == Py_None;
    if (!datetime && !(form == date_isoformat && PyDate_CheckExact(v))) return 0;
    if (put_key(b, key) < 0) return -1;
    *p++ = '"';
    p = put_digits(p, (uint32_t)PyDateTime_GET_YEAR(v), 4); /* 1..9999 */
    *p++ = '-';
    p = put_digits(p, (uint32_t)PyDateTime_GET_MONTH(v), 2);
    *p++ = '-';
    p = put_digits(p, (uint32_t)PyDateTime_GET_DAY(v), 2);
    if (datetime) {
        *p++ = 'T';
        p = put_digits(p, (uint32_t)PyDateTime_DATE_GET_HOUR(v), 2);
        *p++ = ':';
        p = put_digits(p, (uint32_t)PyDateTime_DATE_GET_MINUTE(v), 2);
        *p++ = ':';
        p = put_digits(p, (uint32_t)PyDateTime_DATE_GET_SECOND(v), 2);
        int us = PyDateTime_DATE_GET_MICROSECOND(v);
        if (us) {
            *p++ = '.';
            p = put_digits(p, (uint32_t)us, 6);
        }
    }
    *p++ = '"';
    return put(b, buf, p - buf) < 0 ? -1 : 1;
}

/* `key` (unless NULL: bytes of `{"name":` or `,"name":`) and the JSON text of the
 * exact str `s`: `s` between quotes where quote(s) is that (`plain`, derived from
 * `quote`), else quote(s). 1 written, 0 the caller's, -1 error. */
static int put_string(Buf *b, PyObject *key, PyObject *s, PyObject *quote) {
    if (put_key(b, key) < 0) return -1;
    if (quotes_plainly(s)) {
        if (put(b, "\"", 1) < 0) return -1;
        int done = put_utf8(b, s);
        return done <= 0 ? done : put(b, "\"", 1) < 0 ? -1 : 1;
    }
    PyObject *q = PyObject_CallOneArg(quote, s);
    if (q == NULL) return -1;
    int done = PyUnicode_Check(q) ? put_utf8(b, q) : 0;
    Py_DECREF(q);
    return done;
}

/* `key` and the JSON text of a scalar other than a str that the caller's encoder
 * writes natively (None, a bool, an exact int or float, as json writes them): 1
 * written, 0 `v` is not one (nothing written), -1 error. */
static int put_scalar(Buf *b, PyObject *key, PyObject *v) {
    PyTypeObject *t = Py_TYPE(v);
    if (v != Py_None && t != &PyBool_Type && t != &PyLong_Type && t != &PyFloat_Type) return 0;
    if (put_key(b, key) < 0) return -1;
    if (v == Py_None) return put(b, "null", 4) < 0 ? -1 : 1;
    if (v == Py_True) return put(b, "true", 4) < 0 ? -1 : 1;
    if (v == Py_False) return put(b, "false", 5) < 0 ? -1 : 1;
    if (t == &PyLong_Type) {
        int overflow;
        long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (n == -1 && PyErr_Occurred()) return -1;
        if (!overflow) {
            char buf[24], *end = buf + sizeof buf, *p = end;
            unsigned long long u = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
            do {
                *--p = (char)('0' + u % 10);
                u /= 10;
            } while (u);
            if (n < 0) *--p = '-';
            return put(b, p, end - p) < 0 ? -1 : 1;
        }
        PyObject *text = PyLong_Type.tp_repr(v);
        if (text == NULL) return -1;
        int done = put_utf8(b, text);
        Py_DECREF(text);
        return done;
    }
    if (t == &PyFloat_Type) {
        double d = PyFloat_AS_DOUBLE(v);
        if (isnan(d)) return put(b, "NaN", 3) < 0 ? -1 : 1;
        if (isinf(d)) return d > 0 ? put(b, "Infinity", 8) < 0 ? -1 : 1
                                   : put(b, "-Infinity", 9) < 0 ? -1 : 1;
        /* float.__repr__'s own conversion */
        char *text = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
        if (text == NULL) return -1;
        int failed = put(b, text, (Py_ssize_t)strlen(text));
        PyMem_Free(text);
        return failed ? -1 : 1;
    }
    return 0;
}

static int append_value(Buf *b, PyObject *key, PyObject *v, PyObject *forms, PyObject *dflt,
                        PyObject *quote);

/* `key` (unless NULL) and the JSON text of `v`, an exact dict (a JSON document's
 * object) or list: its items as append_value writes them, a dict's keys quoted.
 * 1 when done, 0 when something in it is for the caller's writer (a key that is
 * not an exact str, a value append_value leaves), -1 on error. */
static int append_container(Buf *b, PyObject *key, PyObject *v, PyObject *forms, PyObject *dflt,
                            PyObject *quote) {
    int is_dict = PyDict_CheckExact(v);
    if (put_key(b, key) < 0) return -1;
    if (put(b, is_dict ? "{" : "[", 1) < 0) return -1;
    if (Py_EnterRecursiveCall(" while writing a row image as JSON")) return -1;
    int done = 1;
    Py_ssize_t i = 0, pos = 0;
    PyObject *k = NULL, *item;
    while (done == 1) {
        if (is_dict) {
            if (!PyDict_Next(v, &pos, &k, &item)) break;
            if (!PyUnicode_CheckExact(k)) {
                done = 0; /* json_value writes str(key) */
                break;
            }
            Py_INCREF(k);
        } else {
            if (i >= PyList_GET_SIZE(v)) break;
            item = PyList_GET_ITEM(v, i);
        }
        Py_INCREF(item); /* a form's call may change the container */
        if (i && put(b, ",", 1) < 0)
            done = -1;
        else if (is_dict && (done = put_string(b, NULL, k, quote)) == 1 && put(b, ":", 1) < 0)
            done = -1;
        if (done == 1) done = append_value(b, NULL, item, forms, dflt, quote);
        Py_DECREF(item);
        if (is_dict) Py_DECREF(k);
        i++;
    }
    Py_LeaveRecursiveCall();
    if (done != 1) return done;
    return put(b, is_dict ? "}" : "]", 1) < 0 ? -1 : 1;
}

/* `key` (unless NULL) and the JSON text of `v`: 1 when done, 0 when `v` is for
 * the caller's writer (a subclass of a native type, a form or default giving
 * none of the kinds written here, a str without UTF-8), -1 on error. What was
 * written before a 0 is the caller's to drop. */
static int append_value(Buf *b, PyObject *key, PyObject *v, PyObject *forms, PyObject *dflt,
                        PyObject *quote) {
    if (PyUnicode_CheckExact(v)) return put_string(b, key, v, quote);
    int done = put_scalar(b, key, v);
    if (done != 0) return done;
    if (PyDict_CheckExact(v) || PyList_CheckExact(v))
        return append_container(b, key, v, forms, dflt, quote);
    /* the form of the value's exact type, else the default (tuples, sets,
     * GEOMETRY, zero dates: json_value's forms); subclasses of the native
     * types are the caller's */
    PyObject *form = PyDict_GetItemWithError(forms, (PyObject *)Py_TYPE(v));
    if (form == NULL) {
        if (PyErr_Occurred()) return -1;
        if (PyUnicode_Check(v) || PyLong_Check(v) || PyFloat_Check(v) || PyDict_Check(v) ||
            PyList_Check(v))
            return 0;
    }
    if (form != NULL && (done = put_iso(b, key, v, form)) != 0) return done;
    PyObject *r = PyObject_CallOneArg(form != NULL ? form : dflt, v);
    if (r == NULL) return -1;
    if (PyUnicode_CheckExact(r)) {
        done = put_string(b, key, r, quote);
    } else if (PyDict_CheckExact(r) || PyList_CheckExact(r)) {
        done = append_container(b, key, r, forms, dflt, quote);
    } else {
        done = put_scalar(b, key, r);
    }
    Py_DECREF(r);
    return done;
}

/* One image's text appended to `b`: 1 written, 0 the caller is to write it
 * (nothing appended), -1 on error. `keys` holds the bytes of `{"name":` and
 * `,"name":` per column written; `at[j]` is the index in the row of the j-th of
 * the `width` columns. */
static int image_text(Buf *b, PyObject *row, PyObject *keys, const Py_ssize_t *at,
                      Py_ssize_t width, PyObject *missing, PyObject *forms, PyObject *dflt,
                      PyObject *quote) {
    if (!PyTuple_Check(row)) {
        PyErr_SetString(PyExc_TypeError, "a row image must be a tuple");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(row), start = b->len;
    int written = 0;
    for (Py_ssize_t i = 0; i < width; i++) {
        if (at[i] >= n) continue; /* fewer values than names: as zip() stops */
        PyObject *v = PyTuple_GET_ITEM(row, at[i]);
        if (v == missing) continue;
        PyObject *key = PyTuple_GET_ITEM(keys, 2 * i + written);
        int done = append_value(b, key, v, forms, dflt, quote);
        if (done <= 0) {
            b->len = start;
            return done; /* 0: the caller's writer */
        }
        written = 1;
    }
    return put(b, written ? "}" : "{}", written ? 1 : 2) < 0 ? -1 : 1;
}

/* The UTF-8 of `{"name":` and `,"name":` of every column written, interleaved;
 * None when a quoted name has no UTF-8 (a lone surrogate). */
static PyObject *key_texts(PyObject *names, PyObject *quote) {
    Py_ssize_t width = PyTuple_GET_SIZE(names);
    PyObject *keys = PyTuple_New(2 * width);
    if (keys == NULL) return NULL;
    for (Py_ssize_t i = 0; i < width; i++) {
        PyObject *q = PyObject_CallOneArg(quote, PyTuple_GET_ITEM(names, i));
        if (q == NULL) {
            Py_DECREF(keys);
            return NULL;
        }
        if (!PyUnicode_Check(q)) {
            Py_DECREF(q);
            Py_DECREF(keys);
            PyErr_SetString(PyExc_TypeError, "quote() must return a str");
            return NULL;
        }
        PyObject *utf8 = PyUnicode_AsUTF8String(q);
        Py_DECREF(q);
        if (utf8 == NULL) {
            Py_DECREF(keys);
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return NULL;
            PyErr_Clear();
            return Py_NewRef(Py_None); /* a name without UTF-8: the caller's writer */
        }
        PyObject *first = PyBytes_FromFormat("{%s:", PyBytes_AS_STRING(utf8));
        PyObject *next = first ? PyBytes_FromFormat(",%s:", PyBytes_AS_STRING(utf8)) : NULL;
        Py_DECREF(utf8);
        if (next == NULL) {
            Py_XDECREF(first);
            Py_DECREF(keys);
            return NULL;
        }
        PyTuple_SET_ITEM(keys, 2 * i, first);
        PyTuple_SET_ITEM(keys, 2 * i + 1, next);
    }
    return keys;
}

/* What json_images needs of (names, columns, quote), built once per such triple:
 * (keys, at, unique): `keys` from key_texts (None when not unique), `at` the
 * row indexes of the columns written (a bytes object of Py_ssize_t), `unique`
 * whether no name is written twice. A table's rows events repeat the same
 * triple, and building it costs more than writing a one-row event's image. */
static PyObject *layouts = NULL; /* (names, columns, quote) -> (keys, at, unique) */
#define LAYOUTS_MAX 512 /* entries; the cache starts again empty when full */

static PyObject *new_layout(PyObject *names, PyObject *columns, PyObject *quote) {
    Py_ssize_t width = columns == Py_None ? PyTuple_GET_SIZE(names) : PyTuple_GET_SIZE(columns);
    PyObject *at = PyBytes_FromStringAndSize(NULL, (width > 0 ? width : 1) * sizeof(Py_ssize_t));
    PyObject *written = at ? PyTuple_New(width) : NULL; /* the names written, in order */
    PyObject *keys = NULL, *layout = NULL;
    if (written == NULL) goto done;
    Py_ssize_t *index = (Py_ssize_t *)PyBytes_AS_STRING(at);
    for (Py_ssize_t j = 0; j < width; j++) {
        Py_ssize_t i = j;
        if (columns != Py_None) {
            i = PyLong_AsSsize_t(PyTuple_GET_ITEM(columns, j));
            if (i == -1 && PyErr_Occurred()) goto done;
            if (i < 0 || i >= PyTuple_GET_SIZE(names)) {
                PyErr_SetString(PyExc_IndexError, "a column index is out of the names' range");
                goto done;
            }
        }
        index[j] = i;
        PyTuple_SET_ITEM(written, j, Py_NewRef(PyTuple_GET_ITEM(names, i)));
    }
    /* a name twice: a dict keeps one key (the last value), this writer would
     * write both; every image goes to the caller's writer */
    PyObject *distinct = PySet_New(written);
    if (distinct == NULL) goto done;
    int unique = PySet_GET_SIZE(distinct) == width;
    Py_DECREF(distinct);
    keys = unique ? key_texts(written, quote) : Py_NewRef(Py_None);
    unique = unique && keys != Py_None;
    if (keys != NULL) layout = PyTuple_Pack(3, keys, at, unique ? Py_True : Py_False);
done:
    Py_XDECREF(at);
    Py_XDECREF(written);
    Py_XDECREF(keys);
    return layout;
}

/* The cached layout of (names, columns, quote), a borrowed reference; NULL on error. */
static PyObject *layout_for(PyObject *names, PyObject *columns, PyObject *quote) {
    if (layouts == NULL && (layouts = PyDict_New()) == NULL) return NULL;
    PyObject *key = PyTuple_Pack(3, names, columns, quote);
    if (key == NULL) return NULL;
    PyObject *layout = PyDict_GetItemWithError(layouts, key);
    if (layout == NULL && !PyErr_Occurred()) {
        layout = new_layout(names, columns, quote);
        if (layout != NULL) {
            if (PyDict_GET_SIZE(layouts) >= LAYOUTS_MAX) PyDict_Clear(layouts);
            int failed = PyDict_SetItem(layouts, key, layout);
            Py_DECREF(layout); /* the dict holds it */
            if (failed) layout = NULL;
        }
    }
    Py_DECREF(key);
    return layout;
}

/* Takes each row's text, its UTF-8 bytes: NULL where the caller's writer is to
 * write it. `element` is the row's entry of `rows` (a pair for an update's side).
 * -1 on error. */
typedef int (*emit_fn)(void *ctx, PyObject *element, const Buf *text);

/* The part json_images and json_column share: args[0..7] are json_images'
 * (names, rows, side, missing, forms, default, quote, columns); every row's
 * text goes to emit(ctx, ...), in order. -1 on error. */
static int each_image(PyObject *const *args, emit_fn emit, void *ctx) {
    if (!PyTuple_Check(args[0]) || !PyTuple_Check(args[1]) || !PyLong_Check(args[2]) ||
        !PyDict_Check(args[4]) || (args[7] != Py_None && !PyTuple_Check(args[7]))) {
        PyErr_SetString(PyExc_TypeError, "(names: tuple, rows: tuple, side: int, missing, "
                                         "forms: dict, default, quote, columns: tuple | None)");
        return -1;
    }
    PyObject *names = args[0], *rows = args[1], *missing = args[3], *forms = args[4],
             *dflt = args[5], *quote = args[6], *columns = args[7];
    long side = PyLong_AsLong(args[2]);
    if (side == -1 && PyErr_Occurred()) return -1;
    if (side < -1 || side > 1) {
        PyErr_SetString(PyExc_ValueError, "side must be -1, 0 or 1");
        return -1;
    }
    PyObject *layout = layout_for(names, columns, quote);
    if (layout == NULL) return -1;
    Py_INCREF(layout); /* a form's call may clear the cache */
    PyObject *keys = PyTuple_GET_ITEM(layout, 0);
    Buf text = {NULL, 0, 0};
    const Py_ssize_t *at = (const Py_ssize_t *)PyBytes_AS_STRING(PyTuple_GET_ITEM(layout, 1));
    int unique = PyTuple_GET_ITEM(layout, 2) == Py_True, failed = 1;
    /* `{"name":` and `,"name":` of each column written */
    Py_ssize_t width = unique ? PyTuple_GET_SIZE(keys) / 2 : 0;
    if (unique && derive_plain(quote) < 0) goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(rows); i++) {
        PyObject *element = PyTuple_GET_ITEM(rows, i), *row = element;
        if (side >= 0) {
            if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 2) {
                PyErr_SetString(PyExc_TypeError, "an update row must be a (before, after) pair");
                goto done;
            }
            row = PyTuple_GET_ITEM(row, side);
        }
        text.len = 0;
        /* (a name twice: the caller's) */
        int done = unique ? image_text(&text, row, keys, at, width, missing, forms, dflt, quote)
                          : 0;
        if (done < 0 || emit(ctx, element, done ? &text : NULL) < 0) goto done;
    }
    failed = 0;
done:
    PyMem_Free(text.p);
    Py_DECREF(layout);
    return failed ? -1 : 0;
}

static int emit_to_list(void *ctx, PyObject *element, const Buf *text) {
    (void)element;
    PyObject *s = text != NULL ? PyUnicode_DecodeUTF8(text->p, text->len, NULL) : Py_NewRef(Py_None);
    if (s == NULL) return -1;
    int failed = PyList_Append((PyObject *)ctx, s);
    Py_DECREF(s);
    return failed;
}

/* json_images(names, rows, side, missing, forms, default, quote, columns) -> list: the
 * text of each row's image (side -1: the row is the image; 0 or 1: the image is
 * row[side], of a (before, after) pair), or None where the caller is to write it.
 * `columns`: None for every column in order, or the indexes of the columns to
 * write, in their order (a primary key). */
PyObject *json_images(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "json_images takes 8 arguments");
        return NULL;
    }
    PyObject *out = PyList_New(0);
    if (out != NULL && each_image(args, emit_to_list, out) < 0) Py_CLEAR(out);
    return out;
}

typedef struct {
    PyObject *data, *ends; /* the column's buffers */
    PyObject *const *args; /* json_column's: names, rows, side, ... full */
} Column;

/* Append `len` bytes at `src` to the bytearray `into`. */
static int append_bytes(PyObject *into, const char *src, Py_ssize_t len) {
    Py_ssize_t old = PyByteArray_GET_SIZE(into);
    if (PyByteArray_Resize(into, old + len) < 0) return -1;
    memcpy(PyByteArray_AS_STRING(into) + old, src, (size_t)len);
    return 0;
}

/* A text's bytes and end offset appended to the column. */
static int column_append(Column *col, const char *utf8, Py_ssize_t len) {
    Py_ssize_t end = PyByteArray_GET_SIZE(col->data) + len;
    if (end > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError,
                        "a string column's text passed 2 GiB in one record batch");
        return -1;
    }
    int32_t end32 = (int32_t)end;
    return append_bytes(col->data, utf8, len) < 0 ||
                   append_bytes(col->ends, (const char *)&end32, sizeof end32) < 0
               ? -1
               : 0;
}

static int emit_to_column(void *ctx, PyObject *element, const Buf *image) {
    Column *col = ctx;
    if (image != NULL) return column_append(col, image->p, image->len);
    /* fallback(names, element, side, full, columns) */
    PyObject *const *a = col->args;
    PyObject *call[5] = {a[2], element, a[4], a[11], a[9]};
    PyObject *text = PyObject_Vectorcall(a[10], call, 5, NULL);
    if (text == NULL) return -1;
    if (!PyUnicode_Check(text)) {
        Py_DECREF(text);
        PyErr_SetString(PyExc_TypeError, "the fallback writer must return a str");
        return -1;
    }
    Py_ssize_t len;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &len);
    int failed = utf8 == NULL || column_append(col, utf8, len) < 0;
    Py_DECREF(text);
    return failed ? -1 : 0;
}

/* json_column(data, ends, names, rows, side, missing, forms, default, quote, columns,
 * fallback, full) -> None: json_images' texts appended to a string column as Arrow
 * holds it: each text's UTF-8 bytes to the bytearray `data` and its end offset
 * (int32, native order) to the bytearray `ends`. Where json_images gives None,
 * the text is fallback(names, element, side, full, columns), `element` being the
 * row's entry of `rows`. */
PyObject *json_column(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 12 || !PyByteArray_CheckExact(args[0]) || !PyByteArray_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "json_column(data: bytearray, ends: bytearray, names, "
                                         "rows, side, missing, forms, default, quote, columns, "
                                         "fallback, full)");
        return NULL;
    }
    Column col = {args[0], args[1], args};
    if (each_image(args + 2, emit_to_column, &col) < 0) return NULL;
    Py_RETURN_NONE;
}
