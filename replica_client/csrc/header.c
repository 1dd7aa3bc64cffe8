#include "speedups.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CRC_FOLD 1
static int crc_folds = 0; /* the CPU has PCLMULQDQ and SSE4.1 (crc_init) */
#endif

/* -- event_head: the common header of a whole v4 event, checksum verified ----
 *
 * event_head(data, crc_mode) -> EventHeader | None, the common case of
 * EventDecoder.decode (replica_client/binlog/decoder.py): ``data`` is one
 * whole event (19-byte header first); crc_mode 0: no checksum trailer, 1: a
 * CRC32 trailer not verified, 2: a CRC32 trailer verified. Returns None for
 * anything else (shorter than a header or its trailer, a size field that
 * disagrees with the length, a FORMAT_DESCRIPTION_EVENT, a CRC mismatch): the
 * Python path decodes, and reports, those. event_head_setup(EventHeader,
 * zlib.crc32) must be called once first; large events are checksummed by
 * zlib, small ones here (same polynomial, slicing-by-8). */
static PyTypeObject *header_type = NULL;
static PyObject *zlib_crc32 = NULL;
static uint32_t crc_table[8][256];

void crc_init(void) {
#ifdef CRC_FOLD
    __builtin_cpu_init();
    crc_folds = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = crc_table[0][i];
        for (int t = 1; t < 8; t++) {
            c = crc_table[0][c & 0xFF] ^ (c >> 8);
            crc_table[t][i] = c;
        }
    }
}

/* The table-driven CRC-32 state update over n bytes (state: the running value
 * before the final inversion). */
static uint32_t crc_update(uint32_t c, const unsigned char *p, size_t n) {
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
                      (uint32_t)p[7] << 24;
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^
            crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^
            crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
            crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c;
}

#ifdef CRC_FOLD
/* Carry-less multiplication folding (PCLMULQDQ) of the same bit-reflected CRC-32:
 * four 128-bit lanes folded 512 bits at a time, then into one lane, 128 bits at
 * a time, then reduced to 32 bits (Barrett). The constants are x^k mod P(x) for
 * the fold distances, and P(x) and its Barrett quotient, bit-reflected.
 * n >= 64 and a multiple of 16; returns the updated state. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t crc_fold(uint32_t state,
                                                                 const unsigned char *p,
                                                                 size_t n) {
    const __m128i by512 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
    const __m128i by128 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
    const __m128i to32 = _mm_set_epi64x(0, 0x163cd6124LL);
    const __m128i barrett = _mm_set_epi64x(0x1f7011641LL, 0x1db710641LL);
    const __m128i low32 = _mm_setr_epi32(-1, 0, -1, 0);
    __m128i lane[4];
    for (int i = 0; i < 4; i++) lane[i] = _mm_loadu_si128((const __m128i *)(p + 16 * i));
    lane[0] = _mm_xor_si128(lane[0], _mm_cvtsi32_si128((int)state));
    p += 64;
    n -= 64;
    for (; n >= 64; p += 64, n -= 64) {
        for (int i = 0; i < 4; i++) {
            __m128i lo = _mm_clmulepi64_si128(lane[i], by512, 0x00);
            __m128i hi = _mm_clmulepi64_si128(lane[i], by512, 0x11);
            __m128i next = _mm_loadu_si128((const __m128i *)(p + 16 * i));
            lane[i] = _mm_xor_si128(_mm_xor_si128(lo, hi), next);
        }
    }
    __m128i x = lane[0];
    for (int i = 1; i < 4; i++) {
        __m128i lo = _mm_clmulepi64_si128(x, by128, 0x00);
        __m128i hi = _mm_clmulepi64_si128(x, by128, 0x11);
        x = _mm_xor_si128(_mm_xor_si128(lo, hi), lane[i]);
    }
    for (; n >= 16; p += 16, n -= 16) {
        __m128i lo = _mm_clmulepi64_si128(x, by128, 0x00);
        __m128i hi = _mm_clmulepi64_si128(x, by128, 0x11);
        x = _mm_xor_si128(_mm_xor_si128(lo, hi), _mm_loadu_si128((const __m128i *)p));
    }
    /* 128 -> 64 bits */
    x = _mm_xor_si128(_mm_srli_si128(x, 8), _mm_clmulepi64_si128(x, by128, 0x10));
    /* 64 -> 32 bits */
    x = _mm_xor_si128(_mm_srli_si128(x, 4),
                      _mm_clmulepi64_si128(_mm_and_si128(x, low32), to32, 0x00));
    /* Barrett reduction */
    __m128i q = _mm_clmulepi64_si128(_mm_and_si128(x, low32), barrett, 0x10);
    q = _mm_clmulepi64_si128(_mm_and_si128(q, low32), barrett, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(x, q), 1);
}
#endif

static uint32_t crc32_bytes(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
#ifdef CRC_FOLD
    if (crc_folds && n >= 64) {
        size_t whole = n & ~(size_t)15;
        c = crc_fold(c, p, whole);
        p += whole;
        n -= whole;
    }
#endif
    return crc_update(c, p, n) ^ 0xFFFFFFFFu;
}

/* 1 when the carry-less multiplication path is used (for the tests). */
int crc_accelerated(void) {
#ifdef CRC_FOLD
    return crc_folds;
#else
    return 0;
#endif
}

/* crc32(data) -> int: the CRC-32 event_head verifies (for the tests: zlib.crc32's). */
PyObject *crc32_of(PyObject *Py_UNUSED(module), PyObject *data) {
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    uint32_t crc = crc32_bytes((const unsigned char *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

static inline uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* 1: matches, 0: does not, -1: error raised. */
static int crc_matches(const unsigned char *p, Py_ssize_t n, uint32_t stored) {
    if (n <= 4096 || crc_accelerated()) return crc32_bytes(p, (size_t)n) == stored;
    PyObject *mv = PyMemoryView_FromMemory((char *)p, n, PyBUF_READ);
    if (mv == NULL) return -1;
    PyObject *r = PyObject_CallOneArg(zlib_crc32, mv);
    Py_DECREF(mv);
    if (r == NULL) return -1;
    unsigned long crc = PyLong_AsUnsignedLong(r);
    Py_DECREF(r);
    if (crc == (unsigned long)-1 && PyErr_Occurred()) return -1;
    return (uint32_t)crc == stored;
}

PyObject *event_head(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || header_type == NULL) {
        PyErr_SetString(PyExc_TypeError, "event_head(data, crc_mode) after event_head_setup()");
        return NULL;
    }
    long mode = PyLong_AsLong(args[1]);
    if (mode == -1 && PyErr_Occurred()) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    Py_ssize_t len = view.len;
    PyObject *result = NULL;
    int ok = len >= 19 && p[4] != 15 && (Py_ssize_t)rd32(p + 9) == len &&
             (mode == 0 || len >= 23);
    if (ok && mode == 2) {
        ok = crc_matches(p, len - 4, rd32(p + len - 4));
        if (ok < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    if (ok) {
        result = header_type->tp_alloc(header_type, 6);
        if (result != NULL) {
            PyObject *v[6] = {
                PyLong_FromUnsignedLong(rd32(p)),
                PyLong_FromLong(p[4]),
                PyLong_FromUnsignedLong(rd32(p + 5)),
                PyLong_FromUnsignedLong(rd32(p + 9)),
                PyLong_FromUnsignedLong(rd32(p + 13)),
                PyLong_FromLong((long)p[17] | (long)p[18] << 8),
            };
            for (int i = 0; i < 6; i++) {
                if (v[i] == NULL) {
                    for (int k = 0; k < 6; k++) Py_XDECREF(v[k]);
                    Py_CLEAR(result);
                    break;
                }
            }
            if (result != NULL) {
                for (int i = 0; i < 6; i++) PyTuple_SET_ITEM(result, i, v[i]);
                PyObject_GC_UnTrack(result); /* six ints: never part of a cycle */
            }
        }
    } else {
        result = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&view);
    return result;
}

PyObject *event_head_setup(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *cls, *crc;
    if (!PyArg_ParseTuple(args, "O!O", &PyType_Type, &cls, &crc)) return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)cls, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "the header type must be a tuple subclass");
        return NULL;
    }
    Py_INCREF(cls);
    Py_XSETREF(header_type, (PyTypeObject *)cls);
    Py_INCREF(crc);
    Py_XSETREF(zlib_crc32, crc);
    Py_RETURN_NONE;
}
