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
 * those kinds), and every image of a table naming a column twice, is not
 * written here: its place in the result is None and the caller writes it in
 * Python.
 * tests/spark/test_changelog_json.py compares both writers.
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

/* '"' around strings, '{' '}' ':' '[' ']' ',' of objects and arrays: one object each */
static PyObject *dquote = NULL, *lbrace = NULL, *brace = NULL, *colon = NULL, *lbracket = NULL,
                *comma = NULL, *rbracket = NULL;
/* datetime.isoformat and date.isoformat, to recognise them among the forms. */
static PyObject *datetime_isoformat = NULL, *date_isoformat = NULL;

int jsontext_init(void) {
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL) return -1;
    dquote = PyUnicode_InternFromString("\"");
    brace = PyUnicode_InternFromString("}");
    lbrace = PyUnicode_InternFromString("{");
    colon = PyUnicode_InternFromString(":");
    lbracket = PyUnicode_InternFromString("[");
    comma = PyUnicode_InternFromString(",");
    rbracket = PyUnicode_InternFromString("]");
    if (dquote == NULL || lbrace == NULL || brace == NULL || colon == NULL || lbracket == NULL ||
        comma == NULL || rbracket == NULL)
        return -1;
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

/* `width` decimal digits of `value` (0 <= value < 10**width) at `p`; past them. */
static char *digits(char *p, int value, int width) {
    for (int i = width - 1; i >= 0; i--) {
        p[i] = (char)('0' + value % 10);
        value /= 10;
    }
    return p + width;
}

/* The quoted ISO text of `v` when `form` is its exact type's own isoformat (a naive
 * datetime, or a date): "YYYY-MM-DD", then for a datetime "THH:MM:SS" and
 * ".ffffff" unless the microseconds are 0. A new reference; NULL otherwise. */
static PyObject *iso_text(PyObject *v, PyObject *form) {
    char buf[32], *p = buf;
    int datetime = form == datetime_isoformat && PyDateTime_CheckExact(v) &&
                   PyDateTime_DATE_GET_TZINFO(v) == Py_None;
    if (!datetime && !(form == date_isoformat && PyDate_CheckExact(v))) return NULL;
    *p++ = '"';
    p = digits(p, PyDateTime_GET_YEAR(v), 4); /* 1..9999 */
    *p++ = '-';
    p = digits(p, PyDateTime_GET_MONTH(v), 2);
    *p++ = '-';
    p = digits(p, PyDateTime_GET_DAY(v), 2);
    if (datetime) {
        *p++ = 'T';
        p = digits(p, PyDateTime_DATE_GET_HOUR(v), 2);
        *p++ = ':';
        p = digits(p, PyDateTime_DATE_GET_MINUTE(v), 2);
        *p++ = ':';
        p = digits(p, PyDateTime_DATE_GET_SECOND(v), 2);
        int us = PyDateTime_DATE_GET_MICROSECOND(v);
        if (us) {
            *p++ = '.';
            p = digits(p, us, 6);
        }
    }
    *p++ = '"';
    return PyUnicode_FromStringAndSize(buf, p - buf);
}

/* Append `key` (unless NULL) and the JSON text of the exact str `s`: `s` between
 * quotes where quote(s) is that (`plain`, derived from `quote`), else quote(s).
 * -1 on error. */
static int append_string(PyObject *pieces, PyObject *key, PyObject *s, PyObject *quote) {
    if (key != NULL && PyList_Append(pieces, key) < 0) return -1;
    if (quotes_plainly(s))
        return PyList_Append(pieces, dquote) < 0 || PyList_Append(pieces, s) < 0 ||
                       PyList_Append(pieces, dquote) < 0
                   ? -1
                   : 0;
    PyObject *q = PyObject_CallOneArg(quote, s);
    if (q == NULL) return -1;
    int failed = PyList_Append(pieces, q) < 0;
    Py_DECREF(q);
    return failed ? -1 : 0;
}

/* The JSON text of a scalar other than a str that the caller's encoder writes
 * natively, a new reference; NULL with no exception set when `v` is not one. */
static PyObject *scalar_text(PyObject *v) {
    if (v == Py_None) return PyUnicode_FromString("null");
    if (v == Py_True) return PyUnicode_FromString("true");
    if (v == Py_False) return PyUnicode_FromString("false");
    PyTypeObject *t = Py_TYPE(v);
    if (t == &PyLong_Type) return PyLong_Type.tp_repr(v);
    if (t == &PyFloat_Type) {
        double d = PyFloat_AS_DOUBLE(v);
        if (isnan(d)) return PyUnicode_FromString("NaN");
        if (isinf(d)) return PyUnicode_FromString(d > 0 ? "Infinity" : "-Infinity");
        return PyFloat_Type.tp_repr(v);
    }
    return NULL;
}

static int append_value(PyObject *pieces, PyObject *key, PyObject *v, PyObject *forms,
                        PyObject *dflt, PyObject *quote);

/* Append `key` (unless NULL) and the JSON text of `v`, an exact dict (a JSON
 * document's object) or list: its items as append_value writes them, a dict's
 * keys quoted. 1 when done, 0 when something in it is for the caller's writer
 * (a key that is not an exact str, a value append_value leaves), -1 on error. */
static int append_container(PyObject *pieces, PyObject *key, PyObject *v, PyObject *forms,
                            PyObject *dflt, PyObject *quote) {
    int is_dict = PyDict_CheckExact(v);
    if (key != NULL && PyList_Append(pieces, key) < 0) return -1;
    if (PyList_Append(pieces, is_dict ? lbrace : lbracket) < 0) return -1;
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
        if (i && PyList_Append(pieces, comma) < 0)
            done = -1;
        else if (is_dict &&
                 (append_string(pieces, NULL, k, quote) < 0 || PyList_Append(pieces, colon) < 0))
            done = -1;
        else
            done = append_value(pieces, NULL, item, forms, dflt, quote);
        Py_DECREF(item);
        if (is_dict) Py_DECREF(k);
        i++;
    }
    Py_LeaveRecursiveCall();
    if (done != 1) return done;
    return PyList_Append(pieces, is_dict ? brace : rbracket) < 0 ? -1 : 1;
}

/* Append `key` (unless NULL) and the JSON text of `v`: 1 when done, 0 when `v`
 * is for the caller's writer (a subclass of a native type, a form or default
 * giving none of the kinds written here), -1 on error. */
static int append_value(PyObject *pieces, PyObject *key, PyObject *v, PyObject *forms,
                        PyObject *dflt, PyObject *quote) {
    if (PyUnicode_CheckExact(v)) return append_string(pieces, key, v, quote) < 0 ? -1 : 1;
    PyObject *text = scalar_text(v);
    if (text == NULL) {
        if (PyErr_Occurred()) return -1;
        if (PyDict_CheckExact(v) || PyList_CheckExact(v))
            return append_container(pieces, key, v, forms, dflt, quote);
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
        text = form != NULL ? iso_text(v, form) : NULL;
        if (text == NULL) {
            if (PyErr_Occurred()) return -1;
            PyObject *r = PyObject_CallOneArg(form != NULL ? form : dflt, v);
            if (r == NULL) return -1;
            int done = -2;
            if (PyUnicode_CheckExact(r))
                done = append_string(pieces, key, r, quote) < 0 ? -1 : 1;
            else if (PyDict_CheckExact(r) || PyList_CheckExact(r))
                done = append_container(pieces, key, r, forms, dflt, quote);
            else
                text = scalar_text(r);
            Py_DECREF(r);
            if (done != -2) return done;
            if (text == NULL) return PyErr_Occurred() ? -1 : 0;
        }
    }
    int failed = (key != NULL && PyList_Append(pieces, key) < 0) || PyList_Append(pieces, text) < 0;
    Py_DECREF(text);
    return failed ? -1 : 1;
}

/* One image's text, a new reference; Py_None (new reference) when the caller is
 * to write it; NULL on error. `keys` holds `{"name":` and `,"name":` per column
 * written; `at[j]` is the index in the row of the j-th of the `width` columns. */
static PyObject *image_text(PyObject *row, PyObject *keys, const Py_ssize_t *at,
                            Py_ssize_t width, PyObject *missing, PyObject *forms,
                            PyObject *dflt, PyObject *quote, PyObject *pieces) {
    if (!PyTuple_Check(row)) {
        PyErr_SetString(PyExc_TypeError, "a row image must be a tuple");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(row);
    if (PyList_SetSlice(pieces, 0, PyList_GET_SIZE(pieces), NULL) < 0) return NULL;
    for (Py_ssize_t i = 0; i < width; i++) {
        if (at[i] >= n) continue; /* fewer values than names: as zip() stops */
        PyObject *v = PyTuple_GET_ITEM(row, at[i]);
        if (v == missing) continue;
        PyObject *key = PyTuple_GET_ITEM(keys, 2 * i + (PyList_GET_SIZE(pieces) != 0));
        int done = append_value(pieces, key, v, forms, dflt, quote);
        if (done < 0) return NULL;
        if (done == 0) Py_RETURN_NONE; /* the caller's writer */
    }
    if (PyList_GET_SIZE(pieces) == 0) return PyUnicode_FromString("{}");
    if (PyList_Append(pieces, brace) < 0) return NULL;
    PyObject *empty = PyUnicode_New(0, 0);
    if (empty == NULL) return NULL;
    PyObject *out = PyUnicode_Join(empty, pieces);
    Py_DECREF(empty);
    return out;
}

/* The `{"name":` and `,"name":` of every column written, interleaved. */
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
        PyObject *first = PyUnicode_FromFormat("{%U:", q);
        PyObject *next = first ? PyUnicode_FromFormat(",%U:", q) : NULL;
        Py_DECREF(q);
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

/* Takes each row's text, a new reference: Py_None where the caller's writer is to
 * write it. `element` is the row's entry of `rows` (a pair for an update's side).
 * -1 on error. */
typedef int (*emit_fn)(void *ctx, PyObject *element, PyObject *text);

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
    PyObject *keys = PyTuple_GET_ITEM(layout, 0), *pieces = NULL;
    const Py_ssize_t *at = (const Py_ssize_t *)PyBytes_AS_STRING(PyTuple_GET_ITEM(layout, 1));
    int unique = PyTuple_GET_ITEM(layout, 2) == Py_True, failed = 1;
    /* `{"name":` and `,"name":` of each column written */
    Py_ssize_t width = unique ? PyTuple_GET_SIZE(keys) / 2 : 0;
    if (unique && (derive_plain(quote) < 0 || (pieces = PyList_New(0)) == NULL)) goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(rows); i++) {
        PyObject *element = PyTuple_GET_ITEM(rows, i), *row = element;
        if (side >= 0) {
            if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 2) {
                PyErr_SetString(PyExc_TypeError, "an update row must be a (before, after) pair");
                goto done;
            }
            row = PyTuple_GET_ITEM(row, side);
        }
        PyObject *text = unique
                             ? image_text(row, keys, at, width, missing, forms, dflt, quote, pieces)
                             : Py_NewRef(Py_None); /* a name twice: the caller's */
        if (text == NULL || emit(ctx, element, text) < 0) goto done;
    }
    failed = 0;
done:
    Py_XDECREF(pieces);
    Py_DECREF(layout);
    return failed ? -1 : 0;
}

static int emit_to_list(void *ctx, PyObject *element, PyObject *text) {
    (void)element;
    int failed = PyList_Append((PyObject *)ctx, text);
    Py_DECREF(text);
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

static int emit_to_column(void *ctx, PyObject *element, PyObject *text) {
    Column *col = ctx;
    if (text == Py_None) { /* fallback(names, element, side, full, columns) */
        Py_DECREF(text);
        PyObject *const *a = col->args;
        PyObject *call[5] = {a[2], element, a[4], a[11], a[9]};
        text = PyObject_Vectorcall(a[10], call, 5, NULL);
        if (text == NULL) return -1;
        if (!PyUnicode_Check(text)) {
            Py_DECREF(text);
            PyErr_SetString(PyExc_TypeError, "the fallback writer must return a str");
            return -1;
        }
    }
    Py_ssize_t len;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &len);
    int failed = utf8 == NULL;
    if (!failed) {
        Py_ssize_t end = PyByteArray_GET_SIZE(col->data) + len;
        if (end > INT32_MAX) {
            PyErr_SetString(PyExc_OverflowError,
                            "a string column's text passed 2 GiB in one record batch");
            failed = 1;
        } else {
            int32_t end32 = (int32_t)end;
            failed = append_bytes(col->data, utf8, len) < 0 ||
                     append_bytes(col->ends, (const char *)&end32, sizeof end32) < 0;
        }
    }
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
