/*
 * sstpipe_py.c: the Python module `sstpipe`, a CPython extension over
 * libsstpipe (sstpipe.h). A C extension rather than cffi: a lookup is a
 * few hundred nanoseconds in the library, and a direct C call keeps
 * Python's overhead per lookup near a dict's, where cffi's per-call
 * marshalling would cost more than the lookup; it needs nothing beyond
 * Debian's python3-dev to build.
 *
 *   t = sstpipe.open(path, decode=False, direct_io=False)
 *   a collections.abc.Mapping: t[key]  t.get(key, default)  key in t  len(t)
 *   iter(t) (keys)  t.keys()  t.values()  t.items() (views, in key order)
 *   t.get_many(keys)  -> [value or None, ...] in the keys' order
 *   t.lookup_many(titles, raw=False) -> [Lookup or None, ...] in the titles' order
 *   t.prefix(p)  t.range(lo, hi)   -> (key, value) in key order
 *   t.info (dict of the footer's counts)  t.close()  with sstpipe.open(...) as t:
 *   t.shards (a table set's shards: path, lo, hi, records, file_size each)
 *   t.lookup(title, raw=False) -> Lookup(value, title, redirect_from) or None
 *   t.suggest(text, limit=10)  -> [Suggestion(title, redirect), ...]
 *   t.has_titles (whether suggest can answer: the table has a title index)
 *
 * path may be a table set (its directory or tableset.json): the library
 * reads it as one table, so every call above works on it unchanged.
 * Keys are str (encoded as UTF-8) or any bytes-like object; keys and
 * values come back as bytes, or as str with decode=True. Errors raise
 * sstpipe.Error, an OSError whose str is the library's message; where that
 * message ends in a system error (": No such file or directory"), errno is
 * set and the error is also of Python's class for it (FileNotFoundError, so
 * `except FileNotFoundError` catches a missing table). A missing key raises
 * KeyError. repr(t) shows the path.
 *
 * Versions: sstpipe.__version__ is the version of the library this module
 * was built with (the module ships with libsstpipe and follows its ABI
 * version); sstpipe.library_version() is a function, as sstpipe_version() in
 * C, because it asks the libsstpipe.so.1 loaded at run time, which may be a
 * later 1.x. Neither is the sstpipe program's version (sstpipe --version).
 * The GIL is held during lookups (a warm lookup is shorter than releasing
 * it), except in get_many and lookup_many, whose batch may wait on the disk for all its
 * reads: the table counts as in use then, as while an iterator lives, so a
 * close() meanwhile waits for it. Values are copied into Python objects at once, so the library's
 * value lifetimes never reach Python code. An iterator keeps its table
 * alive: close() with iterators open makes them raise ValueError, and the
 * table is closed when the last one goes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "stages/sst/sstpipe.h"

#include <errno.h>
#include <string.h>

static PyObject *SstpipeError;

/* A method of any signature in a PyMethodDef (the cast through void (*)(void)
 * is the one -Wcast-function-type accepts). */
#define METH(f) ((PyCFunction)(void (*)(void))(f))

typedef struct {
    PyObject_HEAD sstpipe_table *t;
    int decode;
    int closed;
    Py_ssize_t live_iters; /* and get_many batches in flight */
} Table;

typedef struct {
    PyObject_HEAD Table *table;
    sstpipe_iter *it;
    int keys_only;
    PyObject *hi; /* range's upper bound (bytes), or NULL */
} Iter;

static PyTypeObject TableType, IterType;

/* The errno a library message carries: the library appends
 * ": strerror(errno)" to a message from a failed system call, so the errno
 * whose text ends the message is the one; 0 when none does. */
static int message_errno(const char *msg) {
    size_t n = strlen(msg);
    for (int e = 1; e < 256; e++) {
        const char *s = strerror(e);
        size_t sl = strlen(s);
        if (sl + 2 <= n && memcmp(msg + n - sl - 2, ": ", 2) == 0 &&
            memcmp(msg + n - sl, s, sl) == 0)
            return e;
    }
    return 0;
}

/* The class an error of errno e raises: sstpipe.Error, or for an errno that
 * Python maps to a subclass of OSError (FileNotFoundError for ENOENT, ...) a
 * class deriving from both, made once and kept in ErrorClasses, so that
 * both `except sstpipe.Error` and `except FileNotFoundError` catch it. */
static PyObject *ErrorClasses; /* the OSError subclass -> its sstpipe class */

static PyObject *error_class(int e) {
    PyObject *probe = e ? PyObject_CallFunction(PyExc_OSError, "is", e, "") : NULL;
    if (!probe) {
        PyErr_Clear();
        return SstpipeError;
    }
    PyObject *base = (PyObject *)Py_TYPE(probe), *cls = SstpipeError;
    if (base != PyExc_OSError && !(cls = PyDict_GetItemWithError(ErrorClasses, base))) {
        PyObject *name = PyUnicode_FromFormat("sstpipe.%s", ((PyTypeObject *)base)->tp_name);
        PyObject *bases = PyTuple_Pack(2, SstpipeError, base);
        cls = name && bases ? PyErr_NewException(PyUnicode_AsUTF8(name), bases, NULL) : NULL;
        if (cls && PyDict_SetItem(ErrorClasses, base, cls) < 0)
            Py_CLEAR(cls);
        Py_XDECREF(cls); /* the dict holds it */
        Py_XDECREF(name);
        Py_XDECREF(bases);
        if (!cls) {
            PyErr_Clear();
            cls = SstpipeError;
        }
    }
    Py_DECREF(probe);
    return cls;
}

/* Raises the library's message msg (and frees it) as sstpipe.Error, an
 * OSError whose str is the message and whose errno is the message's, if any. */
static void raise_msg(char *msg) {
    const char *text = msg ? msg : "out of memory";
    int e = msg ? message_errno(msg) : ENOMEM;
    PyObject *exc = PyObject_CallFunction(error_class(e), "s", text);
    sstpipe_free(msg);
    if (!exc)
        return;
    /* errno alone: with strerror set too, str(exc) would be "[Errno N] ..." */
    PyObject *num = e ? PyLong_FromLong(e) : NULL;
    if (e && (!num || PyObject_SetAttrString(exc, "errno", num) < 0)) {
        Py_XDECREF(num);
        Py_DECREF(exc);
        return;
    }
    Py_XDECREF(num);
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
}

/* A key argument as bytes: str is encoded as UTF-8, bytes-like taken as is. */
static int key_buffer(PyObject *o, Py_buffer *view, PyObject **owned) {
    *owned = NULL;
    if (PyUnicode_Check(o)) {
        if (!(*owned = PyUnicode_AsUTF8String(o)))
            return -1;
        o = *owned;
    }
    if (PyObject_GetBuffer(o, view, PyBUF_SIMPLE) != 0) {
        Py_XDECREF(*owned);
        *owned = NULL;
        PyErr_Format(PyExc_TypeError, "a key is str or bytes-like, not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    return 0;
}

static void key_release(Py_buffer *view, PyObject *owned) {
    PyBuffer_Release(view);
    Py_XDECREF(owned);
}

static PyObject *out(const Table *t, const void *p, size_t n) {
    if (t->decode)
        return PyUnicode_DecodeUTF8(p, (Py_ssize_t)n, "strict");
    return PyBytes_FromStringAndSize(p, (Py_ssize_t)n);
}

static int check_open(const Table *t) {
    if (t->closed) {
        PyErr_SetString(PyExc_ValueError, "operation on a closed sstpipe table");
        return -1;
    }
    return 0;
}

/* The raw lookup: 1 found (*v, *vlen set), 0 absent, -1 error raised. */
static int find(Table *t, PyObject *key, const void **v, size_t *vlen) {
    if (check_open(t))
        return -1;
    Py_buffer view;
    PyObject *owned;
    if (key_buffer(key, &view, &owned))
        return -1;
    char *msg = NULL;
    int rc = sstpipe_get(t->t, view.buf, (size_t)view.len, v, vlen, &msg);
    key_release(&view, owned);
    if (rc < 0)
        raise_msg(msg);
    return rc;
}

/* 1 found (*value set, a new reference), 0 absent, -1 error raised. */
static int lookup(Table *t, PyObject *key, PyObject **value) {
    const void *v;
    size_t vlen;
    int rc = find(t, key, &v, &vlen);
    if (rc == 1 && !(*value = out(t, v, vlen)))
        return -1;
    return rc;
}

/* The named tuples of lookup and suggest (collections.namedtuple), made at
 * import. */
static PyObject *LookupType, *SuggestionType;

static PyObject *make_namedtuple(const char *name, const char *fields) {
    PyObject *collections = PyImport_ImportModule("collections");
    PyObject *type =
        collections ? PyObject_CallMethod(collections, "namedtuple", "ss", name, fields) : NULL;
    Py_XDECREF(collections);
    return type;
}

/* ------------------------------------------------------------------ Table */

static PyObject *sstpipe_open_py(PyObject *self, PyObject *args, PyObject *kw) {
    (void)self;
    static char *names[] = {"path", "decode", "direct_io", NULL};
    PyObject *path_obj;
    int decode = 0, direct = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|pp:open", names, PyUnicode_FSConverter,
                                     &path_obj, &decode, &direct))
        return NULL;
    sstpipe_options *o = sstpipe_options_new();
    if (!o) {
        Py_DECREF(path_obj);
        return PyErr_NoMemory();
    }
    sstpipe_options_set_direct_io(o, direct);
    char *msg = NULL;
    sstpipe_table *st;
    Py_BEGIN_ALLOW_THREADS st = sstpipe_open_with(PyBytes_AS_STRING(path_obj), o, &msg);
    Py_END_ALLOW_THREADS sstpipe_options_free(o);
    Py_DECREF(path_obj);
    if (!st) {
        raise_msg(msg);
        return NULL;
    }
    Table *t = PyObject_New(Table, &TableType);
    if (!t) {
        sstpipe_close(st);
        return NULL;
    }
    t->t = st;
    t->decode = decode;
    t->closed = 0;
    t->live_iters = 0;
    return (PyObject *)t;
}

static void table_release(Table *t) {
    if (t->t && t->live_iters == 0) {
        sstpipe_close(t->t);
        t->t = NULL;
    }
}

static PyObject *table_close(PyObject *self, PyObject *unused) {
    Table *t = (Table *)self;
    (void)unused;
    t->closed = 1;
    table_release(t);
    Py_RETURN_NONE;
}

static void table_dealloc(PyObject *self) {
    Table *t = (Table *)self;
    /* Iterators hold a reference, so none is left here. */
    if (t->t)
        sstpipe_close(t->t);
    PyObject_Free(t);
}

/* <sstpipe.Table 'path'>, or <sstpipe.Table 'path' (closed)>. */
static PyObject *table_repr(PyObject *self) {
    Table *t = (Table *)self;
    if (!t->t)
        return PyUnicode_FromFormat("<sstpipe.Table (closed)>");
    PyObject *path = PyUnicode_DecodeFSDefault(sstpipe_path(t->t));
    if (!path)
        return NULL;
    PyObject *r = PyUnicode_FromFormat("<sstpipe.Table %R%s>", path, t->closed ? " (closed)" : "");
    Py_DECREF(path);
    return r;
}

static PyObject *table_subscript(PyObject *self, PyObject *key) {
    Table *t = (Table *)self;
    PyObject *v = NULL;
    int rc = lookup(t, key, &v);
    if (rc == 0)
        PyErr_SetObject(PyExc_KeyError, key);
    return rc == 1 ? v : NULL;
}

static int table_contains(PyObject *self, PyObject *key) {
    const void *v;
    size_t vlen;
    return find((Table *)self, key, &v, &vlen);
}

static Py_ssize_t table_len(PyObject *self) {
    Table *t = (Table *)self;
    if (check_open(t))
        return -1;
    sstpipe_info info;
    sstpipe_info_get(t->t, &info);
    return (Py_ssize_t)info.records;
}

static PyObject *table_get(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Table *t = (Table *)self;
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "get(key, default=None)");
        return NULL;
    }
    PyObject *v = NULL;
    int rc = lookup(t, args[0], &v);
    if (rc < 0)
        return NULL;
    if (rc == 1)
        return v;
    PyObject *d = nargs == 2 ? args[1] : Py_None;
    Py_INCREF(d);
    return d;
}

/* The most keys one get_many or lookup_many takes: their buffers are all
 * held during the call. */
#define BATCH_MAX 65536
/* lookup_many's titles go to the library this many at a time, each with a
 * result of three titles' room: its memory stays small for any batch. */
#define LOOKUP_CHUNK 512
/* A number of the above in a docstring. */
#define TEXT_OF(x) #x
#define TEXT(x) TEXT_OF(x)

/* A batch's keys, as the library takes them, and what holds their bytes. */
typedef struct {
    PyObject *seq;
    size_t n, held;
    Py_buffer *views;
    PyObject **owned;
    const void **keys;
    size_t *klens;
} batch;

static void batch_release(batch *b) {
    for (size_t i = 0; i < b->held; i++)
        key_release(&b->views[i], b->owned[i]);
    PyMem_Free(b->views);
    PyMem_Free(b->owned);
    PyMem_Free(b->keys);
    PyMem_Free(b->klens);
    Py_XDECREF(b->seq);
}

/* The keys of the iterable arg for call (its name in messages): at most
 * BATCH_MAX, each str or bytes-like (TypeError) of at most
 * SSTPIPE_TITLE_MAX bytes (ValueError), as the library's batches and
 * sstpipe serve's take them. 0, or -1 with an exception set and b released. */
static int batch_take(PyObject *arg, const char *call, batch *b) {
    memset(b, 0, sizeof *b);
    if (!(b->seq = PySequence_Fast(arg, "a batch of keys is an iterable of keys")))
        return -1;
    b->n = (size_t)PySequence_Fast_GET_SIZE(b->seq);
    if (b->n > BATCH_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: %zu keys, over the %d one call takes", call, b->n,
                     BATCH_MAX);
        batch_release(b);
        return -1;
    }
    b->views = PyMem_Calloc(b->n + 1, sizeof *b->views);
    b->owned = PyMem_Calloc(b->n + 1, sizeof *b->owned);
    b->keys = PyMem_Calloc(b->n + 1, sizeof *b->keys);
    b->klens = PyMem_Calloc(b->n + 1, sizeof *b->klens);
    if (!b->views || !b->owned || !b->keys || !b->klens) {
        PyErr_NoMemory();
        batch_release(b);
        return -1;
    }
    for (; b->held < b->n; b->held++) {
        size_t i = b->held;
        if (key_buffer(PySequence_Fast_GET_ITEM(b->seq, (Py_ssize_t)i), &b->views[i],
                       &b->owned[i])) {
            batch_release(b);
            return -1;
        }
        b->keys[i] = b->views[i].buf;
        b->klens[i] = (size_t)b->views[i].len;
        if (b->klens[i] > SSTPIPE_TITLE_MAX) {
            PyErr_Format(PyExc_ValueError, "%s: key %zu is %zu bytes, over the %d a key has", call,
                         i, b->klens[i], SSTPIPE_TITLE_MAX);
            b->held++;
            batch_release(b);
            return -1;
        }
    }
    return 0;
}

/* get_many(keys): one sstpipe_get_many over the keys (any iterable of
 * keys), the GIL released while the library reads. */
static PyObject *table_get_many(PyObject *self, PyObject *keys_arg) {
    Table *t = (Table *)self;
    batch b;
    if (check_open(t) || batch_take(keys_arg, "get_many(keys)", &b))
        return NULL;
    size_t n = b.n;
    PyObject *list = NULL;
    const void **values = PyMem_Calloc(n + 1, sizeof *values);
    size_t *vlens = PyMem_Calloc(n + 1, sizeof *vlens);
    if (!values || !vlens) {
        PyErr_NoMemory();
        goto out;
    }
    char *msg = NULL;
    t->live_iters++;
    PyThreadState *ts = PyEval_SaveThread();
    int rc = sstpipe_get_many(t->t, n, b.keys, b.klens, values, vlens, &msg);
    PyEval_RestoreThread(ts);
    if (rc < 0)
        raise_msg(msg);
    else if ((list = PyList_New((Py_ssize_t)n))) {
        for (size_t i = 0; i < n; i++) {
            PyObject *v = Py_None;
            if (values[i])
                v = out(t, values[i], vlens[i]);
            else
                Py_INCREF(v);
            if (!v) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, (Py_ssize_t)i, v);
        }
    }
    t->live_iters--;
    if (t->closed)
        table_release(t);
out:
    PyMem_Free(values);
    PyMem_Free(vlens);
    batch_release(&b);
    return list;
}

static PyObject *iter_make(Table *t, PyObject *from, PyObject *prefix, PyObject *hi,
                           int keys_only) {
    if (check_open(t))
        return NULL;
    Py_buffer fv = {0}, pv = {0}, hv = {0};
    PyObject *fo = NULL, *po = NULL, *ho = NULL, *hi_bytes = NULL;
    int have_f = from && from != Py_None, have_p = prefix && prefix != Py_None;
    int have_h = hi && hi != Py_None;
    if ((have_f && key_buffer(from, &fv, &fo)) || (have_p && key_buffer(prefix, &pv, &po)) ||
        (have_h && key_buffer(hi, &hv, &ho))) {
        if (have_f && fv.obj)
            key_release(&fv, fo);
        if (have_p && pv.obj)
            key_release(&pv, po);
        return NULL;
    }
    if (have_h) {
        hi_bytes = PyBytes_FromStringAndSize(hv.buf, hv.len);
        key_release(&hv, ho);
    }
    Iter *it = NULL;
    if (!have_h || hi_bytes) {
        sstpipe_iter *si = sstpipe_iter_new(t->t, have_f ? fv.buf : NULL, have_f ? fv.len : 0,
                                            have_p ? pv.buf : NULL, have_p ? pv.len : 0);
        if (!si)
            PyErr_NoMemory();
        else if (!(it = PyObject_New(Iter, &IterType)))
            sstpipe_iter_free(si);
        else {
            it->it = si;
            it->keys_only = keys_only;
            it->hi = hi_bytes;
            hi_bytes = NULL;
            Py_INCREF(t);
            it->table = t;
            t->live_iters++;
        }
    }
    Py_XDECREF(hi_bytes);
    if (have_f)
        key_release(&fv, fo);
    if (have_p)
        key_release(&pv, po);
    return (PyObject *)it;
}

static PyObject *table_iter(PyObject *self) {
    Table *t = (Table *)self;
    return iter_make(t, NULL, NULL, NULL, 1);
}

/* prefix(p): p is a key as get takes one (str as UTF-8, or bytes-like; not
 * None), and what comes back is bytes or str by decode, as get's values. */
static PyObject *table_prefix(PyObject *self, PyObject *p) {
    Table *t = (Table *)self;
    if (p == Py_None) {
        PyErr_SetString(PyExc_TypeError, "prefix(p): p is str or bytes-like, not None");
        return NULL;
    }
    return iter_make(t, NULL, p, NULL, 0);
}

/* The views keys(), values() and items() return, as a collections.abc.Mapping's
 * (set by PyInit_sstpipe). */
static PyObject *KeysView, *ValuesView, *ItemsView;

static PyObject *table_keys(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyObject_CallOneArg(KeysView, self);
}

static PyObject *table_values(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyObject_CallOneArg(ValuesView, self);
}

static PyObject *table_items(PyObject *self, PyObject *unused) {
    (void)unused;
    return PyObject_CallOneArg(ItemsView, self);
}

static PyObject *table_range(PyObject *self, PyObject *args) {
    Table *t = (Table *)self;
    PyObject *lo = Py_None, *hi = Py_None;
    if (!PyArg_ParseTuple(args, "|OO:range", &lo, &hi))
        return NULL;
    return iter_make(t, lo, NULL, hi, 0);
}

static PyObject *table_info(PyObject *self, void *unused) {
    Table *t = (Table *)self;
    (void)unused;
    if (check_open(t))
        return NULL;
    sstpipe_info i;
    sstpipe_info_get(t->t, &i);
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:I,s:I,s:I,s:I,s:s,s:O,s:n}", "records",
        (unsigned long long)i.records, "data_blocks", (unsigned long long)i.data_blocks,
        "key_bytes", (unsigned long long)i.key_bytes, "value_bytes",
        (unsigned long long)i.value_bytes, "file_size", (unsigned long long)i.file_size,
        "block_size", i.block_size, "cluster_size", i.cluster_size, "max_value_bytes",
        i.max_value_bytes, "format_version", i.format_version, "path", sstpipe_path(t->t), "is_set",
        sstpipe_is_set(t->t) ? Py_True : Py_False, "shards", (Py_ssize_t)sstpipe_shard_count(t->t));
}

/* A bound as bytes, or None when unbounded. */
static PyObject *bound(const void *b, size_t n) {
    if (!b)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(b, (Py_ssize_t)n);
}

static PyObject *table_shards(PyObject *self, void *unused) {
    Table *t = (Table *)self;
    (void)unused;
    if (check_open(t))
        return NULL;
    size_t n = sstpipe_shard_count(t->t);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        sstpipe_table *s = sstpipe_shard(t->t, i);
        sstpipe_info f;
        sstpipe_info_get(s, &f);
        const void *lo, *hi;
        size_t lol, hil;
        sstpipe_shard_range(t->t, i, &lo, &lol, &hi, &hil);
        PyObject *d =
            Py_BuildValue("{s:s,s:N,s:N,s:K,s:K}", "path", sstpipe_path(s), "lo", bound(lo, lol),
                          "hi", bound(hi, hil), "records", (unsigned long long)f.records,
                          "file_size", (unsigned long long)f.file_size);
        if (!d) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, d);
    }
    return list;
}

static PyObject *table_has_titles(PyObject *self, void *unused) {
    Table *t = (Table *)self;
    (void)unused;
    if (check_open(t))
        return NULL;
    return PyBool_FromLong(sstpipe_has_titles(t->t));
}

static PyObject *table_enter(PyObject *self, PyObject *unused) {
    Table *t = (Table *)self;
    (void)unused;
    if (check_open(t))
        return NULL;
    Py_INCREF(t);
    return (PyObject *)t;
}

static PyObject *table_exit(PyObject *self, PyObject *args) {
    Table *t = (Table *)self;
    (void)args;
    return table_close((PyObject *)t, NULL);
}

/* A found title's Lookup(value, title, redirect_from), or NULL with an
 * exception set. */
static PyObject *lookup_result(const Table *t, const sstpipe_lookup_result *res) {
    PyObject *v = out(t, res->value, res->vlen), *k = out(t, res->title, res->title_len);
    PyObject *from = res->redirect_from_len ? out(t, res->redirect_from, res->redirect_from_len)
                                            : (Py_INCREF(Py_None), Py_None);
    PyObject *result =
        v && k && from ? PyObject_CallFunctionObjArgs(LookupType, v, k, from, NULL) : NULL;
    Py_XDECREF(v);
    Py_XDECREF(k);
    Py_XDECREF(from);
    return result;
}

/* lookup(title, raw=False): sstpipe_lookup, the title as people type it,
 * redirects followed. */
static PyObject *table_lookup(PyObject *self, PyObject *args, PyObject *kw) {
    Table *t = (Table *)self;
    static char *names[] = {"title", "raw", NULL};
    PyObject *title;
    int raw = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p", names, &title, &raw) || check_open(t))
        return NULL;
    Py_buffer view;
    PyObject *owned;
    if (key_buffer(title, &view, &owned))
        return NULL;
    sstpipe_lookup_result *res = PyMem_Malloc(sizeof *res);
    if (!res) {
        key_release(&view, owned);
        return PyErr_NoMemory();
    }
    char *msg = NULL;
    int rc =
        sstpipe_lookup(t->t, view.buf, (size_t)view.len, raw ? SSTPIPE_LOOKUP_RAW : 0, res, &msg);
    key_release(&view, owned);
    PyObject *result = NULL;
    if (rc < 0) {
        raise_msg(msg);
    } else if (rc == 0) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        result = lookup_result(t, res);
    }
    PyMem_Free(res);
    return result;
}

/* lookup_many(titles, raw=False): sstpipe_lookup_many, LOOKUP_CHUNK titles
 * at a time, the GIL released while the library reads; each chunk's values
 * are copied before the next (under direct I/O it ends them). */
static PyObject *table_lookup_many(PyObject *self, PyObject *args, PyObject *kw) {
    Table *t = (Table *)self;
    static char *names[] = {"titles", "raw", NULL};
    PyObject *titles;
    int raw = 0;
    batch b;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:lookup_many", names, &titles, &raw) ||
        check_open(t) || batch_take(titles, "lookup_many(titles)", &b))
        return NULL;
    sstpipe_lookup_result *res = PyMem_Calloc(LOOKUP_CHUNK, sizeof *res);
    PyObject *list = res ? PyList_New((Py_ssize_t)b.n) : PyErr_NoMemory();
    t->live_iters++;
    for (size_t at = 0; list && at < b.n; at += LOOKUP_CHUNK) {
        size_t m = b.n - at < LOOKUP_CHUNK ? b.n - at : LOOKUP_CHUNK;
        char *msg = NULL;
        PyThreadState *ts = PyEval_SaveThread();
        int rc = sstpipe_lookup_many(t->t, m, b.keys + at, b.klens + at,
                                     raw ? SSTPIPE_LOOKUP_RAW : 0, res, &msg);
        PyEval_RestoreThread(ts);
        if (rc < 0) {
            raise_msg(msg);
            Py_CLEAR(list);
        }
        for (size_t i = 0; list && i < m; i++) {
            PyObject *r = res[i].value ? lookup_result(t, &res[i]) : (Py_INCREF(Py_None), Py_None);
            if (!r)
                Py_CLEAR(list);
            else
                PyList_SET_ITEM(list, (Py_ssize_t)(at + i), r);
        }
    }
    t->live_iters--;
    if (t->closed)
        table_release(t);
    PyMem_Free(res);
    batch_release(&b);
    return list;
}

/* suggest(text, limit=10): sstpipe_suggest. */
static PyObject *table_suggest(PyObject *self, PyObject *args, PyObject *kw) {
    Table *t = (Table *)self;
    static char *names[] = {"text", "limit", NULL};
    PyObject *text;
    Py_ssize_t limit = 10;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|n", names, &text, &limit) || check_open(t))
        return NULL;
    if (limit < 1 || limit > SSTPIPE_SUGGEST_MAX) {
        PyErr_Format(PyExc_ValueError, "a limit is 1 to %d", SSTPIPE_SUGGEST_MAX);
        return NULL;
    }
    Py_buffer view;
    PyObject *owned;
    if (key_buffer(text, &view, &owned))
        return NULL;
    sstpipe_suggestion *s = PyMem_Calloc((size_t)limit, sizeof *s);
    char *msg = NULL;
    int n = s ? sstpipe_suggest(t->t, view.buf, (size_t)view.len, (size_t)limit, s, &msg) : -1;
    key_release(&view, owned);
    PyObject *list = NULL;
    if (!s)
        PyErr_NoMemory();
    else if (n < 0)
        raise_msg(msg);
    else if ((list = PyList_New(n)))
        for (int i = 0; i < n; i++) {
            PyObject *title = out(t, s[i].title, s[i].title_len);
            PyObject *item = title ? PyObject_CallFunction(SuggestionType, "OO", title,
                                                           s[i].redirect ? Py_True : Py_False)
                                   : NULL;
            Py_XDECREF(title);
            if (!item) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, i, item);
        }
    PyMem_Free(s);
    return list;
}

static PyMethodDef table_methods[] = {
    {"lookup", METH(table_lookup), METH_VARARGS | METH_KEYWORDS,
     "lookup(title, raw=False): the record of title as people type it (exactly, else as "
     "MediaWiki stores it, by the rules in the table's title index), a redirect followed unless "
     "raw: Lookup(value, title, redirect_from), title the record's key and redirect_from the "
     "title that redirected (None when none); None when absent"},
    {"lookup_many", METH(table_lookup_many), METH_VARARGS | METH_KEYWORDS,
     "lookup_many(titles, raw=False): lookup of each title (any iterable of them, at most " TEXT(
         BATCH_MAX) " of at most " TEXT(SSTPIPE_TITLE_MAX) " bytes each), the exact keys read "
                                                           "together: [Lookup(value, title, "
                                                           "redirect_from) or None, ...] in the "
                                                           "titles' order"},
    {"suggest", METH(table_suggest), METH_VARARGS | METH_KEYWORDS,
     "suggest(text, limit=10): up to limit (1 to 100) titles starting with text, case and "
     "accents ignored, ranked: [Suggestion(title, redirect), ...]; sstpipe.Error without a "
     "title index or for text empty, over 320 bytes or not UTF-8"},
    {"get", METH(table_get), METH_FASTCALL,
     "get(key, default=None): the value, or default when key is absent"},
    {"get_many", METH(table_get_many), METH_O,
     "get_many(keys): the values of the keys (any iterable of them, at most " TEXT(
         BATCH_MAX) " of at most " TEXT(SSTPIPE_TITLE_MAX) " bytes each) in their order, None for "
                                                           "an absent one; their blocks are read "
                                                           "together "
                                                           "(sstpipe_get_many)"},
    {"keys", METH(table_keys), METH_NOARGS, "a view of the keys, in key order"},
    {"values", METH(table_values), METH_NOARGS, "a view of the values, in their keys' order"},
    {"items", METH(table_items), METH_NOARGS, "a view of the (key, value) pairs, in key order"},
    {"prefix", METH(table_prefix), METH_O,
     "prefix(p): the (key, value) pairs whose key starts with p, in key order; p is str "
     "(UTF-8) or bytes, as get's key, and the pairs are bytes, or str with decode=True, as "
     "get's values"},
    {"range", METH(table_range), METH_VARARGS,
     "range(lo=None, hi=None): the (key, value) pairs with lo <= key < hi, in key order"},
    {"close", METH(table_close), METH_NOARGS, "close the table (idempotent)"},
    {"__enter__", METH(table_enter), METH_NOARGS, NULL},
    {"__exit__", METH(table_exit), METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef table_getset[] = {
    {"info", table_info, NULL, "the footer's counts and options (of a set: the sums)", NULL},
    {"shards", table_shards, NULL,
     "the shards of a table set in key order, as dicts (path, lo, hi: bytes or None, records, "
     "file_size); a plain table is one shard",
     NULL},
    {"has_titles", table_has_titles, NULL,
     "whether the table has a title index (a set: beside every shard), which suggest needs", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMappingMethods table_mapping = {
    .mp_length = table_len,
    .mp_subscript = table_subscript,
};

static PySequenceMethods table_sequence = {
    .sq_contains = table_contains,
};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sstpipe.Table",
    .tp_basicsize = sizeof(Table),
    .tp_dealloc = table_dealloc,
    .tp_repr = table_repr,
    .tp_as_mapping = &table_mapping,
    .tp_as_sequence = &table_sequence,
    .tp_iter = table_iter,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An open sstpipe SSTable (sstpipe.open). Read-only.",
    .tp_methods = table_methods,
    .tp_getset = table_getset,
};

/* ------------------------------------------------------------------- Iter */

static void iter_dealloc(PyObject *self) {
    Iter *it = (Iter *)self;
    sstpipe_iter_free(it->it);
    Py_XDECREF(it->hi);
    Table *t = it->table;
    t->live_iters--;
    if (t->closed)
        table_release(t);
    Py_DECREF(t);
    PyObject_Free(it);
}

static PyObject *iter_next(PyObject *self) {
    Iter *it = (Iter *)self;
    if (!it->it)
        return NULL;
    if (check_open(it->table))
        return NULL;
    const void *k, *v;
    size_t kl, vl;
    char *msg = NULL;
    int rc = sstpipe_iter_next(it->it, &k, &kl, &v, &vl, &msg);
    if (rc < 0) {
        raise_msg(msg);
        return NULL;
    }
    if (rc == 1 && it->hi) {
        size_t hl = (size_t)PyBytes_GET_SIZE(it->hi), n = kl < hl ? kl : hl;
        int c = memcmp(k, PyBytes_AS_STRING(it->hi), n);
        if (c > 0 || (c == 0 && kl >= hl))
            rc = 0;
    }
    if (rc == 0) {
        /* Done: the library's iterator goes at once (StopIteration). */
        sstpipe_iter_free(it->it);
        it->it = NULL;
        return NULL;
    }
    PyObject *key = out(it->table, k, kl);
    if (!key || it->keys_only)
        return key;
    PyObject *val = out(it->table, v, vl);
    if (!val) {
        Py_DECREF(key);
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, key, val);
    Py_DECREF(key);
    Py_DECREF(val);
    return pair;
}

static PyTypeObject IterType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sstpipe.Iterator",
    .tp_basicsize = sizeof(Iter),
    .tp_dealloc = iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Keys or (key, value) pairs of an sstpipe table in key order.",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = iter_next,
};

/* ----------------------------------------------------------------- module */

/* Table as a collections.abc.Mapping: registered, with the standard views;
 * values and items iterate by one ordered scan (prefix b"") rather than the
 * base views' lookup per key. */
static const char mapping_src[] = "import collections.abc as abc\n"
                                  "abc.Mapping.register(Table)\n"
                                  "KeysView = abc.KeysView\n"
                                  "class ValuesView(abc.ValuesView):\n"
                                  "    __slots__ = ()\n"
                                  "    def __iter__(self):\n"
                                  "        return (v for _, v in self._mapping.prefix(b''))\n"
                                  "class ItemsView(abc.ItemsView):\n"
                                  "    __slots__ = ()\n"
                                  "    def __iter__(self):\n"
                                  "        return self._mapping.prefix(b'')\n";

static int mapping_init(void) {
    PyObject *g = Py_BuildValue("{s:O,s:s,s:O}", "__builtins__", PyEval_GetBuiltins(), "__name__",
                                "sstpipe", "Table", (PyObject *)&TableType);
    PyObject *r = g ? PyRun_String(mapping_src, Py_file_input, g, g) : NULL;
    if (r) {
        KeysView = PyDict_GetItemString(g, "KeysView");
        ValuesView = PyDict_GetItemString(g, "ValuesView");
        ItemsView = PyDict_GetItemString(g, "ItemsView");
        Py_XINCREF(KeysView);
        Py_XINCREF(ValuesView);
        Py_XINCREF(ItemsView);
    }
    Py_XDECREF(r);
    Py_XDECREF(g);
    return KeysView && ValuesView && ItemsView ? 0 : -1;
}

static PyObject *library_version(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyUnicode_FromString(sstpipe_version());
}

static PyMethodDef module_methods[] = {
    {"library_version", METH(library_version), METH_NOARGS,
     "library_version(): the version of the libsstpipe this module runs with, as "
     "sstpipe_version() in C: the library's ABI version (MAJOR.MINOR.PATCH, SONAME "
     "libsstpipe.so.MAJOR), not the sstpipe program's (sstpipe --version)"},
    {"open", METH(sstpipe_open_py), METH_VARARGS | METH_KEYWORDS,
     "open(path, decode=False, direct_io=False): an open Table"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "sstpipe",
    .m_doc = "Read sstpipe SSTables (libsstpipe): lookups and ordered scans.\n\n"
             "__version__ is the library's version, its ABI's (as sstpipe_version() in C and\n"
             "pkg-config --modversion sstpipe), which the module follows; library_version()\n"
             "gives that of the libsstpipe loaded. Neither is the sstpipe program's version\n"
             "(the first line of sstpipe --version).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit_sstpipe(void) {
    if (PyType_Ready(&TableType) < 0 || PyType_Ready(&IterType) < 0 || mapping_init() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    SstpipeError = PyErr_NewException("sstpipe.Error", PyExc_OSError, NULL);
    ErrorClasses = PyDict_New();
    if (!SstpipeError || !ErrorClasses || PyModule_AddObject(m, "Error", SstpipeError) < 0 ||
        PyModule_AddStringConstant(m, "__version__", SSTPIPE_PY_VERSION) < 0) {
        Py_XDECREF(SstpipeError);
        Py_XDECREF(ErrorClasses);
        Py_DECREF(m);
        return NULL;
    }
    LookupType = make_namedtuple("Lookup", "value title redirect_from");
    SuggestionType = make_namedtuple("Suggestion", "title redirect");
    if (!LookupType || !SuggestionType) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(SstpipeError);
    Py_INCREF(&TableType);
    PyModule_AddObject(m, "Table", (PyObject *)&TableType);
    return m;
}
