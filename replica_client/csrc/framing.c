/* Packet framing of the replication stream (wire/framing.py). No I/O. */
#include "speedups.h"

/* frame_packet(buf, pos, seq, max_payload) -> bytes | None
 *
 * The common case of wire/framing.py PacketFramer.next_packet: at ``pos`` a
 * whole packet of one chunk (payload_length u24 LE | sequence_id u8 | payload)
 * with sequence id ``seq`` and at most ``max_payload`` bytes. Returns a copy of
 * its payload; the packet ends at pos + 4 + len(payload). Returns None for
 * anything else (fewer bytes, a 0xFFFFFF chunk that continues, another id, too
 * large): the Python loop handles, and reports, those. */
PyObject *frame_packet(PyObject *Py_UNUSED(module), PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos, max_payload;
    int seq;
    if (!PyArg_ParseTuple(args, "y*nin", &view, &pos, &seq, &max_payload)) return NULL;
    PyObject *result = NULL;
    if (pos >= 0 && view.len - pos >= 4) {
        const unsigned char *p = (const unsigned char *)view.buf + pos;
        Py_ssize_t length = (Py_ssize_t)p[0] | ((Py_ssize_t)p[1] << 8) | ((Py_ssize_t)p[2] << 16);
        if (length < 0xFFFFFF && length <= max_payload && p[3] == seq &&
            view.len - pos - 4 >= length) {
            result = PyBytes_FromStringAndSize((const char *)p + 4, length);
        }
    }
    PyBuffer_Release(&view);
    if (result == NULL && !PyErr_Occurred()) Py_RETURN_NONE;
    return result;
}

/* frame_events(buf, pos, seq, max_payload, semi_sync, limit, rows) -> (payloads, pos, seq)
 *
 * frame_packet for a run of binlog-stream packets: from ``pos``, up to
 * ``limit`` whole single-chunk packets with the next sequence ids whose
 * payloads start with the 0x00 status byte of an event, in order, as copies
 * (wire/framing.py PacketFramer.next_events, which has the same loop in
 * Python). Stops before anything
 * else (an incomplete, split, too large or out-of-sequence packet, an EOF or
 * ERR packet: the Python loop handles, and reports, those) and, with
 * ``semi_sync``, right after an event whose semi-sync header asks for an ACK
 * (the primary may restart its sequence ids after it). With ``rows``, the run
 * is of a text result set's row packets instead (wire/framing.py
 * PacketFramer.next_rows): any payload but an EOF (0xFE, under 9 bytes) or
 * ERR (0xFF) packet. */
PyObject *frame_events(PyObject *Py_UNUSED(module), PyObject *const *args,
                              Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError,
                        "frame_events(buf, pos, seq, max_payload, semi_sync, limit, rows)");
        return NULL;
    }
    int rows = PyObject_IsTrue(args[6]);
    if (rows < 0) return NULL;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    long seq = PyLong_AsLong(args[2]);
    Py_ssize_t max_payload = PyLong_AsSsize_t(args[3]);
    int semi_sync = PyObject_IsTrue(args[4]);
    Py_ssize_t limit = PyLong_AsSsize_t(args[5]);
    if (PyErr_Occurred() || semi_sync < 0) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *list = PyList_New(0);
    if (list == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const unsigned char *base = (const unsigned char *)view.buf;
    while (pos >= 0 && view.len - pos >= 4 && PyList_GET_SIZE(list) < limit) {
        const unsigned char *p = base + pos;
        Py_ssize_t length = (Py_ssize_t)p[0] | ((Py_ssize_t)p[1] << 8) | ((Py_ssize_t)p[2] << 16);
        if (length >= 0xFFFFFF || length > max_payload || p[3] != (seq & 0xFF) ||
            view.len - pos - 4 < length || length == 0) {
            break;
        }
        if (rows ? (p[4] == 0xFF || (p[4] == 0xFE && length < 9)) : p[4] != 0x00) break;
        PyObject *payload = PyBytes_FromStringAndSize((const char *)p + 4, length);
        if (payload == NULL || PyList_Append(list, payload) < 0) {
            Py_XDECREF(payload);
            Py_DECREF(list);
            PyBuffer_Release(&view);
            return NULL;
        }
        Py_DECREF(payload);
        pos += 4 + length;
        seq = (seq + 1) & 0xFF;
        if (semi_sync && length >= 3 && p[5] == 0xEF && (p[6] & 0x01)) break;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(Nnl)", list, pos, seq);
}
