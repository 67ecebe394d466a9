/*
 * serve_holder.c: the served table, reference-counted, and the watcher that
 * swaps it after a publish; see serve_holder.h.
 *
 * Noticing a publish. The nightly publishes by renaming a new `current`
 * symlink over the old one, and a rebuild renames a new file over the old
 * path, so both show up as an inotify IN_MOVED_TO (or IN_CREATE) for one
 * name in one directory. A watcher thread waits for those events; on one it
 * resolves the path (realpath through `current`) and compares the file's
 * device and inode with the served table's, and on a difference opens the
 * new table, swaps it in under a mutex, and drops the holder's reference to
 * the old one. It also checks every poll_seconds without an event (by
 * default once a second), because inotify says nothing about changes made
 * on another NFS client; that costs one realpath and one stat a check and
 * nothing per request. A user whose file system inotify covers may turn
 * the checks off (0): publishes are then seen by their event alone.
 * Requests pay a mutex and an atomic increment to take a reference: no
 * stat per request, and no window where a request can see a half-made
 * swap. A new table that cannot be opened (a corrupt file copied in by
 * hand) is reported once and the old one keeps being served.
 */
#include "stages/serve/serve_holder.h"

#include "stages/common/path.h"
#include "stages/sst/table_set.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct holder_table {
    served_table pub; /* first: a served_table * is a holder_table * */
    atomic_uint refs;
    char *path;
    dev_t dev;
    ino_t ino;
} holder_table;

struct serve_holder {
    bool direct_io;
    size_t block_cache;
    int poll_ms;      /* poll's timeout between checks without an event; -1: none */
    char *follow;     /* the path to resolve: DIR/current/NAME, or the table file */
    char *watch_dir;  /* where the renames happen */
    char *watch_name; /* the name they replace: "current", or the file's name */
    void (*on_change)(void *ctx, const served_table *now, const sp_error *err);
    void *ctx;

    pthread_mutex_t mu; /* guards cur */
    holder_table *cur;

    pthread_mutex_t check_mu; /* one check at a time (watcher, SIGHUP) */
    bool failed_valid;        /* a target that failed to open, not tried again */
    dev_t failed_dev;
    ino_t failed_ino;
    char failed_msg[sizeof((sp_error *)0)->msg]; /* why it failed */

    int inotify_fd, stop_fd;
    pthread_t watcher;
    bool watching;
};

static void table_free(holder_table *t) {
    sstpipe_close(t->pub.table);
    free(t->path);
    free(t);
}

void served_table_release(served_table *pub) {
    holder_table *t = (holder_table *)pub;
    if (t && atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1)
        table_free(t);
}

served_table *serve_holder_acquire(serve_holder *h) {
    pthread_mutex_lock(&h->mu);
    holder_table *t = h->cur;
    atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&h->mu);
    return &t->pub;
}

/* The file the target names now: its real path and identity. A table
 * set's identity is its manifest's, which every rewrite of the set
 * replaces by rename, whether the set is published as a new directory or
 * rewritten in place. */
static int resolve(const serve_holder *h, char real[PATH_MAX], struct stat *st, sp_error *err) {
    if (!realpath(h->follow, real))
        return sp_errorf_errno(err, "%s: cannot resolve", h->follow);
    if (stat(real, st))
        return sp_errorf_errno(err, "%s: cannot stat", real);
    if (S_ISDIR(st->st_mode)) {
        char manifest[PATH_MAX + sizeof TABLE_SET_MANIFEST + 1];
        snprintf(manifest, sizeof manifest, "%s/%s", real, TABLE_SET_MANIFEST);
        if (stat(manifest, st))
            return sp_errorf_errno(err, "%s: a directory but not a table set (%s)", real,
                                   TABLE_SET_MANIFEST);
        return 0;
    }
    if (!S_ISREG(st->st_mode))
        return sp_errorf(err, "%s: not a regular file", real);
    return 0;
}

static holder_table *open_table(const serve_holder *h, const char *real, const struct stat *st,
                                uint64_t generation, sp_error *err) {
    holder_table *t = calloc(1, sizeof *t);
    sstpipe_options *opt = sstpipe_options_new();
    if (!t || !opt || !(t->path = strdup(real))) {
        sstpipe_options_free(opt);
        free(t);
        sp_errorf(err, "%s: out of memory", real);
        return NULL;
    }
    sstpipe_options_set_direct_io(opt, h->direct_io);
    sstpipe_options_set_block_cache(opt, h->block_cache);
    char *msg = NULL;
    t->pub.table = sstpipe_open_with(real, opt, &msg);
    sstpipe_options_free(opt);
    if (!t->pub.table) {
        sp_errorf(err, "%s", msg ? msg : "cannot open the table");
        sstpipe_free(msg);
        free(t->path);
        free(t);
        return NULL;
    }
    t->pub.path = t->path;
    /* A client is shown the path without the directory holding the table:
     * what is left names the table ("table.sst"), or a table set ("set"). */
    const char *slash = strrchr(t->path, '/');
    t->pub.name = slash && slash[1] ? slash + 1 : t->path;
    t->pub.build_time = (int64_t)st->st_mtim.tv_sec;
    t->pub.generation = generation;
    sstpipe_compression c;
    sstpipe_compression_get(t->pub.table, &c);
    t->pub.values_borrowed = strcmp(c.method, "none") != 0;
    t->dev = st->st_dev;
    t->ino = st->st_ino;
    atomic_init(&t->refs, 1); /* the holder's own */
    return t;
}

int serve_holder_check(serve_holder *h, sp_error *err) {
    pthread_mutex_lock(&h->check_mu);
    char real[PATH_MAX];
    struct stat st;
    int rc = 0;
    if (resolve(h, real, &st, err)) {
        /* Between a nightly's renames, or a file being copied in: the old
         * table stays; the next event or check tries again. */
        rc = -1;
        goto out;
    }
    if (st.st_dev == h->cur->dev && st.st_ino == h->cur->ino)
        goto out;
    if (h->failed_valid && st.st_dev == h->failed_dev && st.st_ino == h->failed_ino) {
        sp_errorf(err, "%s", h->failed_msg);
        rc = -1;
        goto out;
    }
    holder_table *t = open_table(h, real, &st, h->cur->pub.generation + 1, err);
    if (!t) {
        h->failed_valid = true;
        h->failed_dev = st.st_dev;
        h->failed_ino = st.st_ino;
        snprintf(h->failed_msg, sizeof h->failed_msg, "%s", err->msg);
        if (h->on_change)
            h->on_change(h->ctx, &h->cur->pub, err);
        rc = -1;
        goto out;
    }
    h->failed_valid = false;
    pthread_mutex_lock(&h->mu);
    holder_table *old = h->cur;
    h->cur = t;
    pthread_mutex_unlock(&h->mu);
    if (h->on_change)
        h->on_change(h->ctx, &t->pub, NULL);
    served_table_release(&old->pub);
    rc = 1;
out:
    pthread_mutex_unlock(&h->check_mu);
    return rc;
}

/* Reads every pending event; true when one names the followed entry. */
static bool drain_events(serve_holder *h) {
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    bool hit = false;
    for (;;) {
        ssize_t n = read(h->inotify_fd, buf, sizeof buf);
        if (n <= 0)
            return hit;
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            if ((ev->len && !strcmp(ev->name, h->watch_name)) || (ev->mask & IN_Q_OVERFLOW))
                hit = true;
            p += sizeof *ev + ev->len;
        }
    }
}

static void *watch_main(void *arg) {
    serve_holder *h = arg;
    struct pollfd fds[2] = {{.fd = h->stop_fd, .events = POLLIN},
                            {.fd = h->inotify_fd, .events = POLLIN}};
    for (;;) {
        int n = poll(fds, h->inotify_fd >= 0 ? 2 : 1, h->poll_ms);
        if (n < 0 && errno != EINTR)
            break;
        if (fds[0].revents)
            break;
        if (n > 0 && fds[1].revents)
            drain_events(h);
        /* On an event and on the timeout alike (see the file comment); a
         * failure is reported through on_change and retried later. */
        sp_error err = {0};
        serve_holder_check(h, &err);
    }
    return NULL;
}

/* The name of the table in a nightly's published build (DIR/current/NAME),
 * when the configuration did not give it: the one the build's
 * manifest.json records ("sstable": {"file": NAME}), or else the one
 * table there (a *.sst file or a table set's directory). No published
 * build, or several tables and no manifest naming one, is an error that
 * says what to pass. Returns a string to free, NULL on error. */
static char *published_name(const char *dir, sp_error *err) {
    char *cur = sp_path_join(dir, "current");
    char *manifest = cur ? sp_path_join(cur, "manifest.json") : NULL;
    char *name = NULL;
    DIR *d = NULL;
    if (!manifest) {
        sp_errorf(err, "%s: out of memory", dir);
        goto out;
    }
    json_t *m = json_load_file(manifest, 0, NULL);
    const char *file = json_string_value(json_object_get(json_object_get(m, "sstable"), "file"));
    if (file && *file && !strchr(file, '/'))
        name = strdup(file);
    else if (file)
        sp_errorf(err, "%s: the table \"%s\" is not a file name", manifest, file);
    json_decref(m);
    if (file)
        goto out;
    if (!(d = opendir(cur))) {
        sp_errorf_errno(err, "%s: no build published yet (%s)", dir, cur);
        goto out;
    }
    char found[2][NAME_MAX + 1];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        char *entry = sp_path_join(cur, e->d_name);
        char *set = entry ? sp_path_join(entry, TABLE_SET_MANIFEST) : NULL;
        bool table = e->d_name[0] != '.' && ((len > 4 && !strcmp(e->d_name + len - 4, ".sst")) ||
                                             (set && access(set, F_OK) == 0));
        free(set);
        free(entry);
        if (table && n++ < 2)
            snprintf(found[n - 1], sizeof found[0], "%s", e->d_name);
    }
    if (n == 1)
        name = strdup(found[0]);
    else if (n == 0)
        sp_errorf(err,
                  "%s: no table in the published build %s: pass its name (--set "
                  "output.name=NAME, or -c the nightly's configuration)",
                  dir, cur);
    else
        sp_errorf(err,
                  "%s: %zu tables in the published build %s (%s, %s%s) and no "
                  "manifest.json naming one: pass which (--set output.name=%s, or -c the "
                  "nightly's configuration)",
                  dir, n, cur, found[0], found[1], n > 2 ? ", ..." : "", found[0]);
out:
    if (d)
        closedir(d);
    if (!name && !err->set)
        sp_errorf(err, "%s: out of memory", dir);
    free(manifest);
    free(cur);
    return name;
}

/* follow, watch_dir and watch_name from the target. */
static int set_paths(serve_holder *h, const serve_holder_options *o, sp_error *err) {
    struct stat st;
    if (stat(o->target, &st))
        return sp_errorf_errno(err, "%s: cannot open", o->target);
    char *manifest = sp_path_join(o->target, TABLE_SET_MANIFEST);
    if (!manifest)
        return sp_errorf(err, "%s: out of memory", o->target);
    /* A directory holding a manifest is a table set, followed like a table
     * file (the name in its parent); any other directory a nightly's. */
    bool is_set = S_ISDIR(st.st_mode) && access(manifest, F_OK) == 0;
    free(manifest);
    if (S_ISDIR(st.st_mode) && !is_set) {
        char *found = o->table_name ? NULL : published_name(o->target, err);
        if (!o->table_name && !found)
            return -1;
        char *cur = sp_path_join(o->target, "current");
        h->follow = cur ? sp_path_join(cur, o->table_name ? o->table_name : found) : NULL;
        free(cur);
        free(found);
        h->watch_dir = strdup(o->target);
        h->watch_name = strdup("current");
    } else {
        /* "set/" names the set "set" in ".". */
        size_t len = strlen(o->target);
        while (len > 1 && o->target[len - 1] == '/')
            len--;
        h->follow = strndup(o->target, len);
        const char *slash = h->follow ? strrchr(h->follow, '/') : NULL;
        h->watch_dir = slash
                           ? strndup(h->follow, (size_t)(slash - h->follow) + (slash == h->follow))
                           : strdup(".");
        h->watch_name = strdup(slash ? slash + 1 : h->follow ? h->follow : "");
    }
    if (!h->follow || !h->watch_dir || !h->watch_name)
        return sp_errorf(err, "%s: out of memory", o->target);
    return 0;
}

serve_holder *serve_holder_init(const serve_holder_options *o, sp_error *err) {
    serve_holder *h = calloc(1, sizeof *h);
    if (!h) {
        sp_errorf(err, "%s: out of memory", o->target);
        return NULL;
    }
    h->direct_io = o->direct_io;
    h->block_cache = o->block_cache;
    h->poll_ms = o->poll_seconds ? (int)o->poll_seconds * 1000 : -1;
    h->on_change = o->on_change;
    h->ctx = o->ctx;
    h->inotify_fd = h->stop_fd = -1;
    pthread_mutex_init(&h->mu, NULL);
    pthread_mutex_init(&h->check_mu, NULL);
    char real[PATH_MAX];
    struct stat st;
    if (set_paths(h, o, err) || resolve(h, real, &st, err) ||
        !(h->cur = open_table(h, real, &st, 1, err)))
        goto fail;
    h->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (h->stop_fd < 0) {
        sp_errorf_errno(err, "eventfd");
        goto fail;
    }
    /* Without inotify (none left: fs.inotify.max_user_instances) the
     * checks every poll_seconds still follow publishes (with none, SIGHUP). */
    h->inotify_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (h->inotify_fd >= 0 && inotify_add_watch(h->inotify_fd, h->watch_dir,
                                                IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
        close(h->inotify_fd);
        h->inotify_fd = -1;
    }
    int e = pthread_create(&h->watcher, NULL, watch_main, h);
    if (e) {
        errno = e;
        sp_errorf_errno(err, "cannot start the table watcher thread");
        goto fail;
    }
    h->watching = true;
    return h;
fail:
    serve_holder_destroy(h);
    return NULL;
}

void serve_holder_destroy(serve_holder *h) {
    if (!h)
        return;
    if (h->watching) {
        uint64_t one = 1;
        if (write(h->stop_fd, &one, sizeof one) != sizeof one)
            abort(); /* an eventfd write of 1 cannot fail; joining would hang */
        pthread_join(h->watcher, NULL);
    }
    if (h->inotify_fd >= 0)
        close(h->inotify_fd);
    if (h->stop_fd >= 0)
        close(h->stop_fd);
    if (h->cur)
        served_table_release(&h->cur->pub);
    pthread_mutex_destroy(&h->mu);
    pthread_mutex_destroy(&h->check_mu);
    free(h->follow);
    free(h->watch_dir);
    free(h->watch_name);
    free(h);
}
