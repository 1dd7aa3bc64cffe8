/* The compiled accelerator, replica_client._speedups: its module definition.
 * The parts, one file per job, are in csrc/: rows.c (value readers and the
 * row-image loop), rowplan.c (the RowPlan type), textrows.c (the rows of a text
 * result set, the TextRowPlan type), changes.c (the changes of a
 * rows event), jsontext.c (row images as JSON text), framing.c
 * (packets), header.c (event headers and their CRC32), maker.c (frozen
 * dataclasses without __init__). No I/O. */
#include "csrc/speedups.h"

static PyMethodDef module_methods[] = {
    {"event_head", (PyCFunction)(void (*)(void))event_head, METH_FASTCALL,
     "event_head(data, crc_mode) -> EventHeader or None (see binlog/decoder.py)"},
    {"event_head_setup", (PyCFunction)event_head_setup, METH_VARARGS,
     "event_head_setup(EventHeader, zlib.crc32): the types event_head builds and calls"},
    {"crc32", (PyCFunction)crc32_of, METH_O,
     "crc32(data) -> int: the CRC-32 event_head verifies (zlib.crc32's)"},
    {"frame_packet", (PyCFunction)frame_packet, METH_VARARGS,
     "frame_packet(buf, pos, seq, max_payload) -> payload or None (see wire/framing.py)"},
    {"row_changes", (PyCFunction)(void (*)(void))row_changes, METH_FASTCALL,
     "row_changes(make, names, rows, missing, fields, slots) -> list of changes"
     " (see changes.py)"},
    {"json_images", (PyCFunction)(void (*)(void))json_images, METH_FASTCALL,
     "json_images(names, rows, side, missing, forms, default, quote, columns)"
     " -> list of str or None"
     " (see spark/changelog.py)"},
    {"json_column", (PyCFunction)(void (*)(void))json_column, METH_FASTCALL,
     "json_column(data, ends, names, rows, side, missing, forms, default, quote, columns,"
     " fallback, full): the texts of json_images appended to a string column's buffers"
     " (see spark/changelog.py)"},
    {"frame_events", (PyCFunction)(void (*)(void))frame_events, METH_FASTCALL,
     "frame_events(buf, pos, seq, max_payload, semi_sync, limit) -> (payloads, pos, seq)"
     " (see wire/framing.py)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "replica_client._speedups",
    "Optional compiled accelerator for row images (see binlog/row_plans.py), text result "
    "rows (snapshot/textrows.py) and packet framing (wire/framing.py).", -1, module_methods, NULL,
    NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    crc_init();
    if (rows_init() < 0) return NULL;
    if (maker_init() < 0) return NULL;
    if (jsontext_init() < 0) return NULL;
    if (textrows_init() < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&RowPlanType);
    if (PyModule_AddObject(m, "RowPlan", (PyObject *)&RowPlanType) < 0) {
        Py_DECREF(&RowPlanType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&MakerType);
    if (PyModule_AddObject(m, "Maker", (PyObject *)&MakerType) < 0) {
        Py_DECREF(&MakerType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddObject(m, "CRC_FOLDS", PyBool_FromLong(crc_accelerated())) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    if (add_codes(m) < 0 || add_text_codes(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
