/* The producer's hot loop in C: it records every write's invoke and completion (HISTORY_FORMAT.md
 * write events) at a cost well under the client's own.
 *
 * Why C: at saturation (acks=0) a bare confluent-kafka loop spends ~4-5 us of CPU per write; the
 * same loop recording in Python spent 2-3 us more (two clock reads, two line formats, a callback
 * object, the interpreter's dispatch), far above the 20% the recording may cost. Here a write's
 * invoke line, payload and delivery callback are built without the interpreter, and a completion is
 * formatted by a C callable that librdkafka's delivery report calls.
 *
 * Python keeps everything rare or slow: building the line parts (JSON-escaped once per process),
 * classifying errors (harness.outcomes) and formatting their lines, writing the history file,
 * rate limiting. See harness/producer.py for the contract and _recorder.pyi for the types.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define LATENCY_RING 10000 /* recent ack latencies kept for the live display */

typedef struct {
    PyObject_HEAD
    /* Parts encoded once (bytes objects owned here). */
    PyObject *fields;         /* '"process":"p","topic":"t",' */
    PyObject *value_prefix;   /* '"p:' : the JSON string of a value, minus sequence and quote */
    PyObject *payload_prefix; /* 'p:' : the message value, minus sequence and padding */
    PyObject *padding;        /* '|xxx' or '' */
    PyObject *topic;          /* str, passed to produce() */
    long partitions;
    int64_t clock_start_ns;   /* RunClock's origin on CLOCK_MONOTONIC (= time.monotonic_ns) */
    PyObject *sink;           /* callable(bytes): appends whole lines to the history file */
    PyObject *on_error;       /* callable(value_json, partition, error) -> (line, definite) */
    Py_ssize_t batch_events;
    int64_t delay_ns;
    /* Lines not yet in the history file. */
    char *buf;
    Py_ssize_t len, cap, events;
    int64_t written_ns;
    int stopping;
    /* Counters read by the live display. */
    long long attempted, acked, failed, indeterminate;
    long long latency_count;
    int64_t latencies[LATENCY_RING];
} Recorder;

typedef struct {
    PyObject_HEAD
    Recorder *rec;
    long long sequence;
    int64_t invoked_ns;
    long partition;
} Delivery;

static PyTypeObject RecorderType;
static PyTypeObject DeliveryType;
static PyObject *str_produce, *str_poll, *str_offset, *zero_timeout, *retry_timeout;

static int64_t
now_ns(const Recorder *rec)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - rec->clock_start_ns;
}

static int
reserve(Recorder *rec, Py_ssize_t extra)
{
    if (rec->len + extra <= rec->cap)
        return 0;
    Py_ssize_t cap = rec->cap ? rec->cap : 65536;
    while (cap < rec->len + extra)
        cap *= 2;
    char *grown = PyMem_Realloc(rec->buf, cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    rec->buf = grown;
    rec->cap = cap;
    return 0;
}

/* Appenders: callers reserve() enough room first. */
static inline void
put(Recorder *rec, const char *s, Py_ssize_t n)
{
    memcpy(rec->buf + rec->len, s, n);
    rec->len += n;
}

#define PUT_LITERAL(rec, s) put((rec), (s), (Py_ssize_t)(sizeof(s) - 1))

static inline void
put_bytes(Recorder *rec, PyObject *bytes)
{
    put(rec, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes));
}

/* Writes the decimal digits of v (>= 0) at out; returns how many. */
static inline Py_ssize_t
digits(char *out, unsigned long long v)
{
    char tmp[20];
    Py_ssize_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

static inline void
put_int(Recorder *rec, long long v)
{
    if (v < 0) {
        rec->buf[rec->len++] = '-';
        v = -v;
    }
    rec->len += digits(rec->buf + rec->len, (unsigned long long)v);
}

/* Room for everything in a line but its parts: the literals and four numbers. */
#define LINE_SLACK 160

static inline Py_ssize_t
line_room(const Recorder *rec)
{
    return LINE_SLACK + PyBytes_GET_SIZE(rec->fields) + PyBytes_GET_SIZE(rec->value_prefix);
}

static int
flush(Recorder *rec)
{
    if (rec->len) {
        PyObject *data = PyBytes_FromStringAndSize(rec->buf, rec->len);
        if (data == NULL)
            return -1;
        rec->len = 0;
        rec->events = 0;
        PyObject *r = PyObject_CallOneArg(rec->sink, data);
        Py_DECREF(data);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    rec->written_ns = now_ns(rec);
    return 0;
}

/* No line waits in memory longer than about delay_ns, nor more than batch_events of them. */
static int
flush_if_due(Recorder *rec)
{
    if (rec->events >= rec->batch_events || now_ns(rec) - rec->written_ns >= rec->delay_ns)
        return flush(rec);
    return 0;
}

static PyObject *
value_json(Recorder *rec, long long sequence)
{
    char tail[24];
    Py_ssize_t n = digits(tail, (unsigned long long)sequence);
    tail[n++] = '"';
    Py_ssize_t prefix = PyBytes_GET_SIZE(rec->value_prefix);
    PyObject *out = PyBytes_FromStringAndSize(NULL, prefix + n);
    if (out == NULL)
        return NULL;
    memcpy(PyBytes_AS_STRING(out), PyBytes_AS_STRING(rec->value_prefix), prefix);
    memcpy(PyBytes_AS_STRING(out) + prefix, tail, n);
    PyObject *text = PyUnicode_FromEncodedObject(out, "utf-8", "strict");
    Py_DECREF(out);
    return text;
}

/* A failed write: Python classifies the error and formats its line (rare, and error names need
 * escaping); the line is appended here so that it keeps its place among the others. */
static int
complete_with_error(Recorder *rec, long long sequence, long partition, PyObject *error)
{
    PyObject *value = value_json(rec, sequence);
    if (value == NULL)
        return -1;
    PyObject *result = PyObject_CallFunction(rec->on_error, "NlO", value, partition, error);
    if (result == NULL)
        return -1;
    const char *line;
    Py_ssize_t n;
    int definite;
    if (!PyArg_ParseTuple(result, "s#p;on_error must return (line, definite)", &line, &n, &definite)
        || reserve(rec, n) < 0) {
        Py_DECREF(result);
        return -1;
    }
    put(rec, line, n);
    Py_DECREF(result);
    rec->events++;
    if (definite)
        rec->failed++;
    else
        rec->indeterminate++;
    return 0;
}

/* ---- Delivery: the per-write callback librdkafka's delivery report calls with (err, msg). ---- */

static PyObject *
Delivery_call(Delivery *self, PyObject *args, PyObject *kwargs)
{
    PyObject *err, *msg;
    if (!PyArg_UnpackTuple(args, "delivery", 2, 2, &err, &msg))
        return NULL;
    Recorder *rec = self->rec;
    if (err != Py_None) {
        if (complete_with_error(rec, self->sequence, self->partition, err) < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    int64_t t = now_ns(rec);
    PyObject *offset_obj = PyObject_CallMethodNoArgs(msg, str_offset);
    if (offset_obj == NULL)
        return NULL;
    long long offset = -1; /* acks=0 is told no offset: null in the history */
    if (offset_obj != Py_None) {
        offset = PyLong_AsLongLong(offset_obj);
        if (offset == -1 && PyErr_Occurred()) {
            Py_DECREF(offset_obj);
            return NULL;
        }
    }
    Py_DECREF(offset_obj);
    if (reserve(rec, line_room(rec)) < 0)
        return NULL;
    PUT_LITERAL(rec, "{\"type\":\"ok\",\"time_ns\":");
    put_int(rec, t);
    PUT_LITERAL(rec, ",");
    put_bytes(rec, rec->fields);
    PUT_LITERAL(rec, "\"partition\":");
    put_int(rec, self->partition);
    PUT_LITERAL(rec, ",\"offset\":");
    if (offset >= 0)
        put_int(rec, offset);
    else
        PUT_LITERAL(rec, "null");
    PUT_LITERAL(rec, ",\"value\":");
    put_bytes(rec, rec->value_prefix);
    put_int(rec, self->sequence);
    PUT_LITERAL(rec, "\"}\n");
    rec->events++;
    rec->acked++;
    rec->latencies[rec->latency_count++ % LATENCY_RING] = t - self->invoked_ns;
    Py_RETURN_NONE;
}

static void
Delivery_dealloc(Delivery *self)
{
    Py_DECREF(self->rec);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject DeliveryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "harness._recorder.Delivery",
    .tp_doc = "Records one write's completion when its delivery report arrives.",
    .tp_basicsize = sizeof(Delivery),
    .tp_flags = Py_TPFLAGS_DEFAULT, /* holds no container: not tracked by the cyclic collector */
    .tp_call = (ternaryfunc)Delivery_call,
    .tp_dealloc = (destructor)Delivery_dealloc,
};

/* ---- Recorder ---- */

/* One write: its invoke line, then produce(); a full local queue is drained and the same write
 * offered again; a synchronous refusal is completed at once through on_error. */
static int
send_one(Recorder *rec, PyObject *produce, PyObject *poll)
{
    long long sequence = rec->attempted;
    long partition = (long)(sequence % rec->partitions);
    int64_t invoked = now_ns(rec);
    if (reserve(rec, line_room(rec)) < 0)
        return -1;
    PUT_LITERAL(rec, "{\"type\":\"invoke\",\"time_ns\":");
    put_int(rec, invoked);
    PUT_LITERAL(rec, ",");
    put_bytes(rec, rec->fields);
    PUT_LITERAL(rec, "\"partition\":");
    put_int(rec, partition);
    PUT_LITERAL(rec, ",\"value\":");
    put_bytes(rec, rec->value_prefix);
    put_int(rec, sequence);
    PUT_LITERAL(rec, "\"}\n");
    rec->events++;
    rec->attempted++;

    char seq[24];
    Py_ssize_t seq_len = digits(seq, (unsigned long long)sequence);
    Py_ssize_t head = PyBytes_GET_SIZE(rec->payload_prefix), pad = PyBytes_GET_SIZE(rec->padding);
    PyObject *payload = PyBytes_FromStringAndSize(NULL, head + seq_len + pad);
    if (payload == NULL)
        return -1;
    char *p = PyBytes_AS_STRING(payload);
    memcpy(p, PyBytes_AS_STRING(rec->payload_prefix), head);
    memcpy(p + head, seq, seq_len);
    memcpy(p + head + seq_len, PyBytes_AS_STRING(rec->padding), pad);

    Delivery *delivery = PyObject_New(Delivery, &DeliveryType);
    if (delivery == NULL) {
        Py_DECREF(payload);
        return -1;
    }
    Py_INCREF(rec);
    delivery->rec = rec;
    delivery->sequence = sequence;
    delivery->invoked_ns = invoked;
    delivery->partition = partition;
    PyObject *part = PyLong_FromLong(partition);
    if (part == NULL) {
        Py_DECREF(delivery);
        Py_DECREF(payload);
        return -1;
    }

    int status = 0;
    /* produce(topic, value, key, partition, on_delivery): positional, as keywords would be looked up
     * by name on every call. */
    PyObject *args[] = {NULL, rec->topic, payload, Py_None, part, (PyObject *)delivery};
    for (;;) {
        PyObject *r = PyObject_Vectorcall(produce, args + 1, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        if (r != NULL) {
            Py_DECREF(r);
            break;
        }
        if (PyErr_ExceptionMatches(PyExc_BufferError)) { /* local queue full */
            PyErr_Clear();
            r = PyObject_CallOneArg(poll, retry_timeout);
            if (r == NULL || flush_if_due(rec) < 0) {
                Py_XDECREF(r);
                status = -1;
                break;
            }
            Py_DECREF(r);
            continue;
        }
        PyObject *type, *value, *tb; /* refused synchronously: never sent */
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        status = complete_with_error(rec, sequence, partition, value);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        break;
    }
    Py_DECREF(payload);
    Py_DECREF(part);
    Py_DECREF(delivery);
    return status;
}

static int
turn(Recorder *rec, PyObject *produce, PyObject *poll)
{
    if (send_one(rec, produce, poll) < 0)
        return -1;
    PyObject *r = PyObject_CallOneArg(poll, zero_timeout);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return flush_if_due(rec);
}

static int
client_methods(PyObject *producer, PyObject **produce, PyObject **poll)
{
    *produce = PyObject_GetAttr(producer, str_produce);
    *poll = *produce ? PyObject_GetAttr(producer, str_poll) : NULL;
    if (*poll == NULL) {
        Py_CLEAR(*produce);
        return -1;
    }
    return 0;
}

/* Writes until stop() or until `limit` writes were attempted in all, in turns. */
static PyObject *
run_until(Recorder *self, PyObject *producer, long long limit)
{
    PyObject *produce, *poll;
    if (client_methods(producer, &produce, &poll) < 0)
        return NULL;
    int status = 0;
    /* poll() releases the GIL each turn, so stop() from another thread is seen at the next one. */
    while (status == 0 && !self->stopping && (limit < 0 || self->attempted < limit))
        status = turn(self, produce, poll);
    Py_DECREF(produce);
    Py_DECREF(poll);
    if (status < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Recorder_turn(Recorder *self, PyObject *producer)
{
    return run_until(self, producer, self->attempted + 1);
}

static PyObject *
Recorder_run(Recorder *self, PyObject *args)
{
    PyObject *producer;
    long long limit;
    if (!PyArg_ParseTuple(args, "OL:run", &producer, &limit))
        return NULL;
    return run_until(self, producer, limit);
}

static PyObject *
Recorder_flush(Recorder *self, PyObject *Py_UNUSED(ignored))
{
    if (flush(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
Recorder_stop(Recorder *self, PyObject *Py_UNUSED(ignored))
{
    self->stopping = 1;
    Py_RETURN_NONE;
}

static PyObject *
Recorder_latencies(Recorder *self, PyObject *Py_UNUSED(ignored))
{
    long long n = self->latency_count < LATENCY_RING ? self->latency_count : LATENCY_RING;
    PyObject *out = PyList_New((Py_ssize_t)n);
    if (out == NULL)
        return NULL;
    for (long long i = 0; i < n; i++) {
        PyObject *v = PyLong_FromLongLong(self->latencies[i]);
        if (v == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, v);
    }
    return out;
}

static int
Recorder_init(Recorder *self, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = {"fields", "value_prefix", "payload_prefix", "padding", "topic", "partitions",
                         "clock_start_ns", "sink", "on_error", "batch_events", "delay_ns", NULL};
    PyObject *fields, *value_prefix, *payload_prefix, *padding, *topic, *sink, *on_error;
    long partitions;
    long long clock_start, delay;
    Py_ssize_t batch;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!O!O!UlLOOnL:Recorder", kw, &PyBytes_Type, &fields,
                                     &PyBytes_Type, &value_prefix, &PyBytes_Type, &payload_prefix,
                                     &PyBytes_Type, &padding, &topic, &partitions, &clock_start, &sink,
                                     &on_error, &batch, &delay))
        return -1;
    if (partitions < 1 || batch < 1) {
        PyErr_SetString(PyExc_ValueError, "partitions and batch_events must be at least 1");
        return -1;
    }
    if (!PyCallable_Check(sink) || !PyCallable_Check(on_error)) {
        PyErr_SetString(PyExc_TypeError, "sink and on_error must be callable");
        return -1;
    }
    Py_INCREF(fields);
    Py_XSETREF(self->fields, fields);
    Py_INCREF(value_prefix);
    Py_XSETREF(self->value_prefix, value_prefix);
    Py_INCREF(payload_prefix);
    Py_XSETREF(self->payload_prefix, payload_prefix);
    Py_INCREF(padding);
    Py_XSETREF(self->padding, padding);
    Py_INCREF(topic);
    Py_XSETREF(self->topic, topic);
    Py_INCREF(sink);
    Py_XSETREF(self->sink, sink);
    Py_INCREF(on_error);
    Py_XSETREF(self->on_error, on_error);
    self->partitions = partitions;
    self->clock_start_ns = clock_start;
    self->batch_events = batch;
    self->delay_ns = delay;
    self->written_ns = now_ns(self);
    return 0;
}

static int
Recorder_traverse(Recorder *self, visitproc visit, void *arg)
{
    Py_VISIT(self->sink);
    Py_VISIT(self->on_error);
    return 0;
}

static int
Recorder_clear(Recorder *self)
{
    Py_CLEAR(self->sink);
    Py_CLEAR(self->on_error);
    return 0;
}

static void
Recorder_dealloc(Recorder *self)
{
    PyObject_GC_UnTrack(self);
    Recorder_clear(self);
    Py_CLEAR(self->fields);
    Py_CLEAR(self->value_prefix);
    Py_CLEAR(self->payload_prefix);
    Py_CLEAR(self->padding);
    Py_CLEAR(self->topic);
    PyMem_Free(self->buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Recorder_methods[] = {
    {"run", (PyCFunction)Recorder_run, METH_VARARGS,
     "run(producer, limit): write until stop() or `limit` writes in all (-1: no limit)."},
    {"turn", (PyCFunction)Recorder_turn, METH_O,
     "turn(producer): one write, poll(0), flush if due (nothing once stopped)."},
    {"flush", (PyCFunction)Recorder_flush, METH_NOARGS, "Hand every buffered line to the sink now."},
    {"stop", (PyCFunction)Recorder_stop, METH_NOARGS, "Make run() return after its current write."},
    {"latencies", (PyCFunction)Recorder_latencies, METH_NOARGS,
     "Recent ack latencies in ns (up to 10000, unordered)."},
    {NULL},
};

static PyMemberDef Recorder_members[] = {
    {"attempted", T_LONGLONG, offsetof(Recorder, attempted), READONLY, "writes invoked"},
    {"acked", T_LONGLONG, offsetof(Recorder, acked), READONLY, "writes completed ok"},
    {"failed", T_LONGLONG, offsetof(Recorder, failed), READONLY, "writes completed fail"},
    {"indeterminate", T_LONGLONG, offsetof(Recorder, indeterminate), READONLY, "writes completed info"},
    {NULL},
};

static PyTypeObject RecorderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "harness._recorder.Recorder",
    .tp_doc = "Writes and records one producer process's writes (see harness/producer.py).",
    .tp_basicsize = sizeof(Recorder),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Recorder_init,
    .tp_dealloc = (destructor)Recorder_dealloc,
    .tp_traverse = (traverseproc)Recorder_traverse,
    .tp_clear = (inquiry)Recorder_clear,
    .tp_methods = Recorder_methods,
    .tp_members = Recorder_members,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "harness._recorder", "The producer's recording hot loop.", -1, NULL,
};

PyMODINIT_FUNC
PyInit__recorder(void)
{
    if (PyType_Ready(&RecorderType) < 0 || PyType_Ready(&DeliveryType) < 0)
        return NULL;
    str_produce = PyUnicode_InternFromString("produce");
    str_poll = PyUnicode_InternFromString("poll");
    str_offset = PyUnicode_InternFromString("offset");
    zero_timeout = PyFloat_FromDouble(0.0);
    retry_timeout = PyFloat_FromDouble(0.1);
    if (!str_produce || !str_poll || !str_offset || !zero_timeout || !retry_timeout)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&RecorderType);
    if (PyModule_AddObject(m, "Recorder", (PyObject *)&RecorderType) < 0) {
        Py_DECREF(&RecorderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
