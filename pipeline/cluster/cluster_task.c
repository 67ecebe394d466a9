/*
 * cluster_task.c: map, reduce and finish of a cluster build; see
 * cluster_task.h.
 *
 * A map task's records come out of the sort in key order, so the shard a
 * record belongs to only ever grows: the partitioning sink moves from one
 * shard's table writer to the next, and every shard gets a table (an
 * empty one when the range holds none of the task's keys), so a reduce
 * task never has to tell "no keys" from "not done".
 */
#include "pipeline/cluster/cluster_task.h"

#include "pipeline/build/build.h"
#include "stages/common/cleanup.h"
#include "stages/common/clock.h"
#include "stages/common/fileio.h"
#include "stages/common/publish.h"
#include "stages/common/scratch.h"
#include "stages/common/title_rules.h"
#include "stages/common/usage.h"
#include "stages/extract/extract.h"
#include "stages/extract/site_rules.h"
#include "stages/extract/source.h"
#include "stages/merge/table_merge.h"
#include "stages/sst/format.h"
#include "stages/sst/sstpipe.h"
#include "stages/sst/table_set.h"
#include "stages/sst/table_writer.h"
#include "stages/sst/title_index.h"
#include "stages/verify/verify.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The dump's header read before a later task's streams: at most this much
 * XML of its first stream. */
#define HEAD_MAX ((size_t)4 << 20)
static const char closing_tag[] = "</mediawiki>\n";

/* snprintf for paths (vsnprintf: a path is at most PATH_MAX, whatever the
 * compiler can prove about its parts); a longer one is cut, and then
 * fails to open, named in the error. */
static void pathf(char *buf, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void pathf(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

static int make_dir(const char *path, sp_error *err) {
    if (mkdir(path, 0777) && errno != EEXIST)
        return sp_errorf_errno(err, "%s: cannot create the directory", path);
    return 0;
}

static void map_dir(const cluster_plan *p, size_t task, char *buf, size_t cap) {
    pathf(buf, cap, "%s/map/%05zu", p->dir, task);
}

static void shard_name(unsigned shard, char *buf, size_t cap) {
    snprintf(buf, cap, "shard-%04u.sst", shard);
}

bool cluster_map_done(const cluster_plan *p, size_t task) {
    char path[PATH_MAX];
    map_dir(p, task, path, sizeof path);
    return access(path, F_OK) == 0;
}

/* ------------------------------------------------------------ map */

/* The XML before the first <page> of the dump's first stream: the
 * <mediawiki> start tag and <siteinfo>, which a later task's streams need
 * in front of them to be a document. */
static int read_head(const cluster_plan *p, const cluster_input *in, char **head, size_t *len,
                     sp_error *err) {
    source_slice slice = {.start = 0, .length = in->head_end};
    source *src = source_open_with(in->path, &(source_options){.threads = 1, .slice = &slice}, err);
    if (!src)
        return -1;
    (void)p;
    char *buf = malloc(HEAD_MAX + 1);
    size_t got = 0;
    int rc = buf ? 0 : sp_errorf(err, "out of memory");
    while (rc == 0 && got < HEAD_MAX) {
        ssize_t r = source_read(src, buf + got, HEAD_MAX - got, err);
        if (r < 0)
            rc = -1;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    source_close(src);
    if (rc) {
        free(buf);
        return -1;
    }
    buf[got] = '\0';
    char *page = NULL;
    for (char *s = buf; (s = memmem(s, got - (size_t)(s - buf), "<page", 5)); s += 5)
        if (s + 5 < buf + got && (s[5] == '>' || s[5] == ' ' || s[5] == '\t' || s[5] == '\n')) {
            page = s;
            break;
        }
    if (!page && got == HEAD_MAX) {
        free(buf);
        return sp_errorf(err, "%s: the first stream holds more than %zu MiB of XML before a page",
                         in->path, HEAD_MAX >> 20);
    }
    *len = page ? (size_t)(page - buf) : got;
    *head = buf;
    return 0;
}

typedef struct partition {
    const cluster_plan *plan;
    sp_sink *sinks; /* each shard's: its title index's tee to its table */
    unsigned cur;
    uint64_t records;
} partition;

static int partition_put(void *ctx, const sp_record *rec, sp_error *err) {
    partition *pt = ctx;
    /* Keys arrive in order: the shard only moves up. */
    while (pt->cur + 1 < pt->plan->shards &&
           cluster_plan_shard_of(pt->plan, rec->key, rec->key_len) > pt->cur)
        pt->cur++;
    pt->records++;
    return sp_sink_put(&pt->sinks[pt->cur], rec, err);
}

static int map_run(const cluster_plan *p, size_t task, const build_options *plan_opts,
                   unsigned threads, uint64_t memory, cluster_task_stats *st, sp_error *err) {
    const cluster_map_task *t = &p->maps[task];
    const cluster_input *in = &p->inputs[t->input];
    char maps[PATH_MAX], final[PATH_MAX], tmp[PATH_MAX], owner[SP_PUBLISH_OWNER_MAX], prefix[64];
    pathf(maps, sizeof maps, "%s/map", p->dir);
    map_dir(p, task, final, sizeof final);
    if (access(final, F_OK) == 0) {
        st->skipped = true;
        return 0;
    }
    if (make_dir(maps, err))
        return -1;
    /* Dead attempts' leftovers (a live one, or another host's, may still
     * be running). */
    snprintf(prefix, sizeof prefix, ".tmp-%05zu-", task);
    sp_publish_sweep(maps, prefix);
    sp_publish_owner(owner, sizeof owner);
    pathf(tmp, sizeof tmp, "%s/%s%s", maps, prefix, owner);
    /* Registered before it exists (the name is this process's own), so no
     * signal between the two can leave it behind. */
    int slot = sp_cleanup_add(tmp);
    if (make_dir(tmp, err)) {
        sp_cleanup_remove(slot);
        return -1;
    }

    build_options opts = *plan_opts;
    char *head = NULL;
    size_t head_len = 0;
    table_writer **writers = calloc(p->shards, sizeof *writers);
    title_index **titles = calloc(p->shards, sizeof *titles);
    sp_sink *to_writers = calloc(p->shards, sizeof *to_writers);
    sp_sink *sinks = calloc(p->shards, sizeof *sinks);
    int rc = -1;
    if (opts.extract.threads == 0)
        opts.extract.threads = threads;
    if (memory)
        opts.sort.memory = memory < SORT_MIN_MEMORY ? SORT_MIN_MEMORY : memory;
    st->memory = opts.sort.memory;
    st->threads = extract_threads(&opts.extract);
    /* A task's slice: the whole file, or its streams framed as a document. */
    bool whole = t->start == 0 && t->end == in->size;
    source_slice slice = {.start = t->start, .length = t->end - t->start};
    if (!whole) {
        if (t->start > 0 && read_head(p, in, &head, &head_len, err))
            goto out;
        slice.head = head;
        slice.head_len = head_len;
        if (t->end < in->size) {
            slice.tail = closing_tag;
            slice.tail_len = sizeof closing_tag - 1;
        }
        opts.extract.slice = &slice;
    }
    table_options topts = opts.table;
    topts.max_value_bytes = (uint32_t)opts.max_bytes;
    if (!writers || !titles || !to_writers || !sinks) {
        sp_errorf(err, "out of memory");
        goto out;
    }
    /* Each shard's title index, as build writes a table's (build.c): the
     * dump's rules, every title on its way to the shard, a sort of a
     * quarter of the task's budget shared by the shards' indexes. */
    sp_title_rules rules;
    sort_options xsort = opts.sort;
    xsort.memory /= 4 * (uint64_t)p->shards;
    if (xsort.memory < SORT_MIN_MEMORY)
        xsort.memory = SORT_MIN_MEMORY;
    if (site_rules_read(in->path, &rules, err))
        goto out;
    for (unsigned r = 0; r < p->shards; r++) {
        char name[32], path[PATH_MAX];
        shard_name(r, name, sizeof name);
        pathf(path, sizeof path, "%s/%s", tmp, name);
        if (!(writers[r] = table_writer_init(path, &topts, err)) ||
            !(titles[r] = title_index_init(path, &rules, &xsort, &topts, err)))
            goto out;
        to_writers[r] = table_writer_sink(writers[r]);
        sinks[r] = title_index_tee(titles[r], &to_writers[r]);
    }
    partition pt = {.plan = p, .sinks = sinks};
    sp_sink sink = {.put = partition_put, .ctx = &pt};
    build_stats bs;
    if (build_sorted(in->path, &opts, &sink, &bs, err))
        goto out;
    st->input_bytes = bs.extract.input_bytes - (whole ? 0 : t->start);
    st->xml_bytes = bs.extract.xml_bytes;
    st->records = pt.records;
    /* Each shard with its index, both or neither (a failure removes the
     * task's directory whole). */
    for (unsigned r = 0; r < p->shards; r++) {
        char path[PATH_MAX], name[32];
        shard_name(r, name, sizeof name);
        pathf(path, sizeof path, "%s/%s", tmp, name);
        if (title_index_publish(titles[r], writers[r], path, err))
            goto out;
        st->output_bytes += table_writer_stats(writers[r])->file_size;
    }
    /* Another attempt committed first (1): its output is the same. */
    int pub = sp_publish(tmp, final, SP_PUBLISH_SYNC | SP_PUBLISH_KEEP, NULL, err);
    if (pub == 1)
        sp_remove_tree(tmp, NULL);
    rc = pub < 0 ? -1 : 0;
out:
    for (unsigned r = 0; writers && r < p->shards; r++)
        table_writer_destroy(writers[r]);
    for (unsigned r = 0; titles && r < p->shards; r++)
        title_index_destroy(titles[r]);
    free(writers);
    free(titles);
    free(to_writers);
    free(sinks);
    free(head);
    if (rc)
        sp_remove_tree(tmp, NULL);
    sp_cleanup_remove(slot);
    return rc;
}

int cluster_map(const cluster_plan *p, size_t task, const build_options *opts, unsigned threads,
                uint64_t memory, cluster_task_stats *st, sp_error *err) {
    cluster_task_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    char what[PATH_MAX + 128];
    if (task >= p->n_maps)
        return sp_errorf(err, "%s: no map task %zu (the plan has %zu)", p->path, task, p->n_maps);
    cluster_plan_describe_map(p, task, what, sizeof what);
    sp_error e = {0};
    double cpu0 = sp_process_cpu_seconds(), wall0 = sp_clock_seconds();
    int rc = map_run(p, task, opts, threads, memory, st, &e);
    st->cpu_seconds = sp_process_cpu_seconds() - cpu0;
    st->wall_seconds = sp_clock_seconds() - wall0;
    st->peak_rss_kib = sp_usage_image_peak_rss() / 1024;
    return rc ? sp_errorf(err, "%s: %s", what, e.msg) : 0;
}

/* ------------------------------------------------------------ reduce */

static void reduce_path(const cluster_plan *p, unsigned shard, char *buf, size_t cap) {
    char name[32];
    shard_name(shard, name, sizeof name);
    pathf(buf, cap, "%s/reduce/%s", p->dir, name);
}

static int reduce_run(const cluster_plan *p, unsigned shard, const table_options *topts,
                      cluster_task_stats *st, sp_error *err) {
    char dir[PATH_MAX], out[PATH_MAX], name[32];
    pathf(dir, sizeof dir, "%s/reduce", p->dir);
    reduce_path(p, shard, out, sizeof out);
    /* A killed attempt's table and title index under their temporary names
     * (fileio.h: killed between naming one and its rename), when it ran on
     * this host; another host's go with the build's directory once it is
     * finished. Swept also when the task is done: an attempt killed after
     * its table's rename leaves the title index it replaced. */
    char *out_titles = sp_titles_path(out);
    if (!out_titles)
        return sp_errorf(err, "out of memory");
    sp_publish_sweep_beside(out);
    sp_publish_sweep_beside(out_titles);
    free(out_titles);
    if (access(out, F_OK) == 0) {
        st->skipped = true;
        return 0;
    }
    if (make_dir(dir, err))
        return -1;
    shard_name(shard, name, sizeof name);
    char **inputs = calloc(p->n_maps, sizeof *inputs);
    int rc = inputs ? 0 : sp_errorf(err, "out of memory");
    for (size_t i = 0; rc == 0 && i < p->n_maps; i++) {
        struct stat sb;
        if (!(inputs[i] = malloc(PATH_MAX))) {
            rc = sp_errorf(err, "out of memory");
            break;
        }
        map_dir(p, i, inputs[i], PATH_MAX);
        size_t n = strlen(inputs[i]);
        pathf(inputs[i] + n, PATH_MAX - n, "/%s", name);
        if (stat(inputs[i], &sb))
            rc = sp_errorf(err, "map task %zu is not done (%s missing)", i, inputs[i]);
        else
            st->input_bytes += (uint64_t)sb.st_size;
    }
    if (rc == 0) {
        table_merge_options mo;
        table_merge_options_init(&mo);
        /* build's bytes: every record re-encoded, blocks filled as build does. */
        mo.canonical = true;
        mo.format_version = topts->compress ? SST_FORMAT_VERSION_PACKED : SST_FORMAT_VERSION;
        mo.compression_level = topts->compression_level;
        mo.dictionary_size = topts->dictionary_size;
        table_merge_stats ms;
        rc = table_merge(out, (const char *const *)inputs, (unsigned)p->n_maps, &mo, &ms, err);
        st->records = ms.records;
        st->output_bytes = ms.file_size;
    }
    for (size_t i = 0; inputs && i < p->n_maps; i++)
        free(inputs[i]);
    free(inputs);
    return rc;
}

int cluster_reduce(const cluster_plan *p, unsigned shard, const table_options *topts,
                   cluster_task_stats *st, sp_error *err) {
    cluster_task_stats local;
    if (!st)
        st = &local;
    memset(st, 0, sizeof *st);
    if (shard >= p->shards)
        return sp_errorf(err, "%s: no reduce task %u (the plan has %u)", p->path, shard, p->shards);
    char what[4096];
    cluster_plan_describe_reduce(p, shard, what, sizeof what);
    sp_error e = {0};
    double cpu0 = sp_process_cpu_seconds(), wall0 = sp_clock_seconds();
    int rc = reduce_run(p, shard, topts, st, &e);
    st->cpu_seconds = sp_process_cpu_seconds() - cpu0;
    st->wall_seconds = sp_clock_seconds() - wall0;
    st->peak_rss_kib = sp_usage_image_peak_rss() / 1024;
    return rc ? sp_errorf(err, "%s: %s", what, e.msg) : 0;
}

/* ------------------------------------------------------------ finish */

static int verify_shard(const char *path, unsigned shard, uint64_t *records, sp_error *err) {
    verify_report rep;
    verify_report_init(&rep, NULL);
    int rc = verify_file(path, &rep, err);
    *records = rep.records;
    if (rc == 0 && rep.problem_count)
        rc = sp_errorf(err, "shard %u (%s): verify found %llu problems, the first: %s at byte %llu",
                       shard, path, (unsigned long long)rep.problem_count,
                       rep.n_problems ? rep.problems[0].what : "?",
                       (unsigned long long)(rep.n_problems ? rep.problems[0].offset : 0));
    verify_report_destroy(&rep);
    return rc;
}

/* Copies from into a new file at to (which must not exist), synced
 * (another file system than the shared directory's). The caller names to
 * so that a kill's leftover is found again: a temporary name beside OUT,
 * or a file of the set's temporary directory. */
static int copy_file(const char *from, const char *to, sp_error *err) {
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return sp_errorf_errno(err, "%s: cannot open", from);
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        close(in);
        return sp_errorf_errno(err, "%s: cannot create", to);
    }
    char *buf = malloc(1 << 20);
    int rc = buf ? 0 : sp_errorf(err, "out of memory");
    while (rc == 0) {
        ssize_t n = sp_read_full(in, buf, 1 << 20, from, err);
        if (n < 0)
            rc = -1;
        if (n <= 0)
            break;
        rc = sp_write_all(out, buf, (size_t)n, to, err);
    }
    free(buf);
    close(in);
    if (rc == 0 && fsync(out))
        rc = sp_errorf_errno(err, "%s: fsync failed", to);
    if (close(out) && rc == 0)
        rc = sp_errorf_errno(err, "%s: close failed", to);
    if (rc)
        unlink(to);
    return rc;
}

/* The names a publish may leave when it is killed, made of this host and
 * pid so that the next publish on this host removes a dead one's (and
 * never a live one's): OUT.tmp.HOST-PID beside OUT (a set's directory
 * under construction, a copied table before its rename, or, after an
 * exchange, the OUT it replaced) and the shard's second name in the
 * build's own directory, reduce/.publish-HOST-PID. */
#define PUBLISH_LINK_PREFIX ".publish-"

static void remove_dead_publishes(const cluster_plan *p, const char *output) {
    char dir[PATH_MAX];
    sp_publish_sweep_beside(output);
    pathf(dir, sizeof dir, "%s/reduce", p->dir);
    sp_publish_sweep(dir, PUBLISH_LINK_PREFIX);
}

/* Gives the file at from a second name in the build's directory, this
 * process's reduce/.publish-HOST-PID followed by suffix, into second (cap
 * bytes), swept with the publish's other second names when its process
 * dies: a link, or where there can be none (another file system, or none
 * on it) a copy when copy is set. 1 when it has the name, 0 when it could
 * not be linked and copy is not set, -1 on error. */
static int second_name(const cluster_plan *p, const char *from, const char *suffix, bool copy,
                       char *second, size_t cap, sp_error *err) {
    char owner[SP_PUBLISH_OWNER_MAX];
    sp_publish_owner(owner, sizeof owner);
    pathf(second, cap, "%s/reduce/" PUBLISH_LINK_PREFIX "%s%s", p->dir, owner, suffix);
    unlink(second);
    if (link(from, second) == 0)
        return 1;
    if (errno != EXDEV && errno != EPERM)
        return sp_errorf_errno(err, "%s: cannot link as %s", from, second);
    if (!copy)
        return 0;
    return copy_file(from, second, err) ? -1 : 1;
}

/* The file from (a shard or its title index) at to, without a temporary
 * name beside to: a second name for it in the build's directory, renamed
 * onto to (or, on another file system, a copy beside to, then renamed). It
 * keeps its name, so a finish run again (a Slurm finishing job retried
 * after it published) publishes the same file again rather than find it
 * gone. */
static int publish_file(const cluster_plan *p, const char *from, const char *to, sp_error *err) {
    char second[PATH_MAX], tmp[PATH_MAX];
    int named = second_name(p, from, "", false, second, sizeof second, err);
    if (named < 0)
        return -1;
    int rc = 0;
    bool copy = named == 0; /* no hard links on the shared directory */
    if (named == 1) {
        int slot = sp_cleanup_add(second);
        sp_error e = {0};
        rc = sp_publish(second, to, 0, NULL, &e);
        copy = rc == -1 && errno == EXDEV;
        /* When to already is the shard (a finish run again), rename does
         * nothing and the second name stays. */
        unlink(second);
        sp_cleanup_remove(slot);
        if (copy)
            rc = 0;
        else if (rc)
            rc = sp_errorf(err, "%s", e.msg);
    }
    if (rc == 0 && copy) {
        if (sp_publish_temp(to, tmp, sizeof tmp, err))
            return -1;
        unlink(tmp);
        int slot = sp_cleanup_add(tmp);
        rc = copy_file(from, tmp, err);
        if (rc == 0 && sp_publish(tmp, to, 0, NULL, err))
            rc = -1;
        if (rc)
            unlink(tmp);
        sp_cleanup_remove(slot);
    }
    return rc;
}

/* A second name in the build's directory for the index at titles that a
 * publish is about to replace, so that it can be put back (publish_file)
 * when the table's publish fails (second_name, a copy where there can be
 * no link). Returns 1 when kept, 0 when there is no index at titles, -1
 * on error. */
static int keep_earlier_index(const cluster_plan *p, const char *titles, char *keep, size_t cap,
                              sp_error *err) {
    if (access(titles, F_OK) != 0)
        return errno == ENOENT ? 0 : sp_errorf_errno(err, "%s: cannot see it", titles);
    return second_name(p, titles, ".titles", true, keep, cap, err);
}

/* The shard as the table at to, with its title index when the reduce
 * wrote one, in build's order (title_index.h): the index first, so that a
 * reader of the new table finds it; when the table's publish fails, the
 * index of the table it replaces is put back (or, if it had none, the new
 * one goes). Killed between the two, the new index stays beside the old
 * table, which readers ignore (it names another table). Without an index,
 * one left at to for the table replaced goes once the table is in place. */
static int publish_table(const cluster_plan *p, const char *from, const char *to, sp_error *err) {
    char *from_titles = sp_titles_path(from), *to_titles = sp_titles_path(to);
    char keep[PATH_MAX];
    int rc = from_titles && to_titles ? 0 : sp_errorf(err, "out of memory");
    bool titled = rc == 0 && access(from_titles, F_OK) == 0;
    int kept = titled ? keep_earlier_index(p, to_titles, keep, sizeof keep, err) : 0;
    int keep_slot = kept == 1 ? sp_cleanup_add(keep) : -1;
    if (kept < 0)
        rc = -1;
    if (rc == 0 && titled)
        rc = publish_file(p, from_titles, to_titles, err);
    if (rc == 0 && publish_file(p, from, to, err)) {
        rc = -1;
        sp_error put_back = {0};
        if (kept == 1 && publish_file(p, keep, to_titles, &put_back)) {
            sp_error first = *err;
            sp_errorf(err, "%s; and the earlier title index: %s", first.msg, put_back.msg);
        } else if (kept == 0 && titled) {
            unlink(to_titles);
        }
    }
    if (kept == 1) {
        unlink(keep);
        sp_cleanup_remove(keep_slot);
    }
    if (rc == 0 && !titled && unlink(to_titles) && errno != ENOENT)
        rc = sp_errorf_errno(err, "%s: cannot remove the title index of the table it replaced",
                             to_titles);
    free(from_titles);
    free(to_titles);
    return rc;
}

/* The shards' common table options as `info --json` names them, from
 * shard 0's footer (every shard is built with the same options). */
static char *set_options_json(const char *shard0, sp_error *err) {
    char *msg = NULL;
    sstpipe_table *t = sstpipe_open(shard0, &msg);
    if (!t) {
        sp_errorf(err, "%s", msg ? msg : "cannot open the shard");
        sstpipe_free(msg);
        return NULL;
    }
    sstpipe_info f;
    sstpipe_info_get(t, &f);
    sstpipe_close(t);
    json_t *o =
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:s}", "format_version", (json_int_t)f.format_version,
                  "block_size", (json_int_t)f.block_size, "cluster_size",
                  (json_int_t)f.cluster_size, "max_value_bytes", (json_int_t)f.max_value_bytes,
                  "restart_interval", (json_int_t)f.restart_interval, "checksum", "xxh3-64");
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text)
        sp_errorf(err, "out of memory");
    return text;
}

static char *set_inputs_json(const cluster_plan *p, sp_error *err) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < p->n_inputs; i++)
        json_array_append_new(a, json_pack("{s:s, s:I}", "path", p->inputs[i].path, "size",
                                           (json_int_t)p->inputs[i].size));
    char *text = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    if (!text)
        sp_errorf(err, "out of memory");
    return text;
}

/* A shard's table into the set's directory: a second name for the same
 * file (the build's copy stays until the set is published), or a copy on
 * another file system. */
static int place_shard(const char *from, const char *to, sp_error *err) {
    if (link(from, to) == 0)
        return 0;
    if (errno != EXDEV && errno != EPERM)
        return sp_errorf_errno(err, "%s: cannot link into the table set as %s", from, to);
    return copy_file(from, to, err);
}

/* A shard's title index beside it in the set's directory, when the reduce
 * wrote one (placed as the shard is). */
static int place_titles(const char *from, const char *to, sp_error *err) {
    char *from_titles = sp_titles_path(from), *to_titles = sp_titles_path(to);
    int rc = from_titles && to_titles ? 0 : sp_errorf(err, "out of memory");
    if (rc == 0 && access(from_titles, F_OK) == 0)
        rc = place_shard(from_titles, to_titles, err);
    free(from_titles);
    free(to_titles);
    return rc;
}

/* OUT as a table set: the shards (each with its title index) and the
 * manifest in a directory beside it, fsynced, then renamed onto OUT
 * (exchanged with what was there, which is then removed). */
static int publish_set(const cluster_plan *p, const char *output, const uint64_t *records,
                       sp_error *err) {
    char tmp[PATH_MAX];
    if (sp_publish_temp(output, tmp, sizeof tmp, err))
        return -1;
    sp_remove_tree(tmp, NULL);
    /* Registered before it exists, as map_run's. */
    int slot = sp_cleanup_add(tmp);
    if (mkdir(tmp, 0777)) {
        sp_cleanup_remove(slot);
        return sp_errorf_errno(err, "%s: cannot create the directory", tmp);
    }
    table_set_shard *shards = calloc(p->shards, sizeof *shards);
    char(*names)[32] = calloc(p->shards, sizeof *names);
    char(*sums)[TABLE_SET_CHECKSUM_HEX] = calloc(p->shards, sizeof *sums);
    char *options = NULL, *inputs = NULL;
    int rc = shards && names && sums ? 0 : sp_errorf(err, "out of memory");
    for (unsigned r = 0; rc == 0 && r < p->shards; r++) {
        char from[PATH_MAX], to[PATH_MAX];
        struct stat st;
        reduce_path(p, r, from, sizeof from);
        shard_name(r, names[r], sizeof names[r]);
        pathf(to, sizeof to, "%s/%s", tmp, names[r]);
        if (place_shard(from, to, err) || place_titles(from, to, err) ||
            table_set_file_checksum(to, sums[r], err)) {
            rc = -1;
            break;
        }
        if (stat(to, &st)) {
            rc = sp_errorf_errno(err, "%s: cannot stat", to);
            break;
        }
        shards[r] = (table_set_shard){.file = names[r],
                                      .has_lo = r > 0,
                                      .has_hi = r + 1 < p->shards,
                                      .records = records[r],
                                      .bytes = (uint64_t)st.st_size,
                                      .checksum = sums[r]};
        if (r > 0) {
            shards[r].lo = p->splits[r - 1].bytes;
            shards[r].lo_len = p->splits[r - 1].len;
        }
        if (r + 1 < p->shards) {
            shards[r].hi = p->splits[r].bytes;
            shards[r].hi_len = p->splits[r].len;
        }
    }
    if (rc == 0) {
        char shard0[PATH_MAX];
        pathf(shard0, sizeof shard0, "%s/%s", tmp, names[0]);
        if (!(options = set_options_json(shard0, err)) || !(inputs = set_inputs_json(p, err)))
            rc = -1;
    }
    if (rc == 0)
        rc = table_set_write_manifest(tmp, shards, p->shards, options, inputs, err);
    /* Something at OUT already (an earlier set or table) is swapped out. */
    if (rc == 0 && sp_publish(tmp, output, SP_PUBLISH_SYNC | SP_PUBLISH_EXCHANGE, NULL, err))
        rc = -1;
    /* After a swap tmp holds what OUT was; after a failure, the set. */
    sp_remove_tree(tmp, NULL);
    sp_cleanup_remove(slot);
    free(options);
    free(inputs);
    free(sums);
    free(names);
    free(shards);
    return rc;
}

int cluster_publish(const cluster_plan *p, const char *output, sp_error *err) {
    char path[PATH_MAX];
    uint64_t *records = calloc(p->shards, sizeof *records);
    if (!records)
        return sp_errorf(err, "out of memory");
    int rc = 0;
    for (unsigned r = 0; rc == 0 && r < p->shards; r++) {
        reduce_path(p, r, path, sizeof path);
        if (access(path, F_OK))
            rc = sp_errorf(err, "finish: reduce task %u is not done (%s missing)", r, path);
        else
            rc = verify_shard(path, r, &records[r], err);
    }
    if (rc == 0)
        remove_dead_publishes(p, output);
    if (rc == 0 && p->shards == 1) {
        reduce_path(p, 0, path, sizeof path);
        rc = publish_table(p, path, output, err);
    } else if (rc == 0) {
        rc = publish_set(p, output, records, err);
    }
    free(records);
    return rc;
}

void cluster_plan_remove_dir(const cluster_plan *p) {
    /* A failure to remove it leaves only disk space taken. */
    sp_remove_tree(p->dir, NULL);
}

int cluster_finish(const cluster_plan *p, const char *output, sp_error *err) {
    /* Published: the tasks' outputs are no longer needed. */
    if (cluster_publish(p, output, err))
        return -1;
    cluster_plan_remove_dir(p);
    return 0;
}

void cluster_task_stats_print(FILE *out, const char *stage, size_t index,
                              const cluster_task_stats *st) {
    fprintf(out,
            "task: stage=%s index=%zu skipped=%d cpu_seconds=%.3f input_bytes=%llu xml_bytes=%llu "
            "records=%llu output_bytes=%llu wall_seconds=%.3f threads=%u memory=%llu "
            "peak_rss_kib=%llu\n",
            stage, index, st->skipped ? 1 : 0, st->cpu_seconds, (unsigned long long)st->input_bytes,
            (unsigned long long)st->xml_bytes, (unsigned long long)st->records,
            (unsigned long long)st->output_bytes, st->wall_seconds, st->threads,
            (unsigned long long)st->memory, (unsigned long long)st->peak_rss_kib);
}
