/*
 * tune_report.c: the recommendation rule, the text table, the config
 * snippet and the JSON of a tune run; see tune_report.h.
 */
#include "pipeline/tune/tune_report.h"

#include "stages/common/report.h"
#include "stages/common/size.h"

#include <stdlib.h>
#include <string.h>

void tune_report_init(tune_report *r) {
    memset(r, 0, sizeof *r);
    r->tolerance_pct = TUNE_DEFAULT_TOLERANCE_PCT;
}

void tune_report_destroy(tune_report *r) {
    free(r->input);
    free(r->scratch_dir);
    free(r->trials);
    memset(r, 0, sizeof *r);
}

int tune_report_add(tune_report *r, const tune_trial *t, sp_error *err) {
    if (r->n_trials == r->cap_trials) {
        size_t cap = r->cap_trials ? 2 * r->cap_trials : 8;
        tune_trial *grown = realloc(r->trials, cap * sizeof *grown);
        if (!grown)
            return sp_errorf(err, "out of memory for %zu tune trials", cap);
        r->trials = grown;
        r->cap_trials = cap;
    }
    r->trials[r->n_trials++] = *t;
    return 0;
}

/* The latency the rule compares: cold when measured, else warm. */
static uint64_t basis_ns(const tune_trial *t) {
    return t->have_cold ? t->cold.p50_ns : t->warm.p50_ns;
}

static const char *basis_name(const tune_trial *t) {
    return t->have_cold ? "cold p50" : "warm p50";
}

/* Whether a beats b once both count as equally fast. */
static bool better_tie_break(const tune_trial *a, const tune_trial *b) {
    if (a->file_size != b->file_size)
        return a->file_size < b->file_size;
    if (a->block_size != b->block_size)
        return a->block_size < b->block_size;
    if (a->cluster_size != b->cluster_size)
        return a->cluster_size < b->cluster_size;
    if (a->level != b->level)
        return a->level < b->level;
    return a->dictionary_size < b->dictionary_size;
}

const char *tune_compression_name(const tune_trial *t, char *buf, size_t cap) {
    char d[32];
    if (t->level == 0)
        snprintf(buf, cap, "none");
    else if (t->dictionary_size == 0)
        snprintf(buf, cap, "zstd-%d no dict", t->level);
    else
        snprintf(buf, cap, "zstd-%d dict %s", t->level,
                 sp_format_size(t->dictionary_size, d, sizeof d));
    return buf;
}

const char *tune_trial_name(const tune_trial *t, char *buf, size_t cap) {
    char b[32], c[32], z[48];
    snprintf(buf, cap, "block %s / cluster %s / %s", sp_format_size(t->block_size, b, sizeof b),
             sp_format_size(t->cluster_size, c, sizeof c),
             t->level ? tune_compression_name(t, z, sizeof z) : "no compression");
    return buf;
}

int tune_recommend(tune_report *r, double tolerance_pct, sp_error *err) {
    if (r->n_trials == 0)
        return sp_errorf(err, "tune: no trials to recommend from");
    for (size_t i = 0; i < r->n_trials; i++)
        if (r->trials[i].verify_problems) {
            char name[96];
            return sp_errorf(err, "tune: the %s trial has %llu verify problems",
                             tune_trial_name(&r->trials[i], name, sizeof name),
                             (unsigned long long)r->trials[i].verify_problems);
        }
    r->tolerance_pct = tolerance_pct;
    size_t fastest = 0;
    for (size_t i = 1; i < r->n_trials; i++)
        if (basis_ns(&r->trials[i]) < basis_ns(&r->trials[fastest]))
            fastest = i;
    double limit = (double)basis_ns(&r->trials[fastest]) * (1 + tolerance_pct / 100);
    size_t best = fastest, close = 0;
    for (size_t i = 0; i < r->n_trials; i++) {
        if ((double)basis_ns(&r->trials[i]) > limit)
            continue;
        close++;
        if (better_tie_break(&r->trials[i], &r->trials[best]))
            best = i;
    }
    r->best = best;
    const tune_trial *b = &r->trials[best], *f = &r->trials[fastest];
    char bn[96], fn[96];
    tune_trial_name(b, bn, sizeof bn);
    tune_trial_name(f, fn, sizeof fn);
    if (best == fastest && close == 1)
        snprintf(r->reason, sizeof r->reason,
                 "%s has the lowest %s lookup latency (%.1f us), and no other combination is "
                 "within %g%% of it",
                 bn, basis_name(b), (double)basis_ns(b) / 1e3, tolerance_pct);
    else {
        /* Say "most compact" only when it is; else the block size broke the tie. */
        bool smallest = true;
        for (size_t i = 0; i < r->n_trials; i++)
            if (i != best && (double)basis_ns(&r->trials[i]) <= limit &&
                r->trials[i].file_size <= b->file_size)
                smallest = false;
        char first[512];
        if (best == fastest)
            snprintf(first, sizeof first, "%s has the lowest %s lookup latency (%.1f us)", bn,
                     basis_name(b), (double)basis_ns(b) / 1e3);
        else
            snprintf(first, sizeof first,
                     "%s: %s lookup latency %.1f us is within %g%% of the best (%.1f us, %s)", bn,
                     basis_name(b), (double)basis_ns(b) / 1e3, tolerance_pct,
                     (double)basis_ns(f) / 1e3, fn);
        snprintf(r->reason, sizeof r->reason,
                 "%s, and of the %zu combinations within %g%% of the best it is %s (%.1f%% "
                 "payload, %llu bytes, %.1f bytes a record, compression ratio %.2f)",
                 first, close, tolerance_pct,
                 smallest ? "the most compact" : "as compact as any, with the smallest block",
                 100 * b->compactness, (unsigned long long)b->file_size, b->bytes_per_record,
                 b->compression_ratio);
    }
    return 0;
}

static const char *us(double ns, char *buf, size_t cap) {
    snprintf(buf, cap, "%.1f", ns / 1e3);
    return buf;
}

void tune_print(const tune_report *r, FILE *out) {
    char s1[32], s2[32], s3[32], s4[32], s5[32], s6[32], z[48];
    fprintf(out, "tune: %s", r->input);
    if (r->sample_limit)
        fprintf(out, ", sample: first %s of XML cut after a whole page (%llu bytes, %llu pages)",
                sp_format_size(r->sample_limit, s1, sizeof s1), (unsigned long long)r->sample_bytes,
                (unsigned long long)r->sample_pages);
    fprintf(out, "\n%llu lookups per profile, threads %u, queue depth %u, seed %llu\n",
            (unsigned long long)r->lookups, r->threads, r->queue_depth,
            (unsigned long long)r->seed);
    if (r->note[0])
        fprintf(out, "note: %s\n", r->note);
    fprintf(out, "%7s %8s %-16s %11s %8s %9s %6s %8s %9s %9s %9s %9s %6s %s\n", "block", "cluster",
            "compression", "file size", "compact", "bytes/rec", "ratio", "build s", "warm p50",
            "warm p99", "cold p50", "cold p99", "reads", "verify");
    for (size_t i = 0; i < r->n_trials; i++) {
        const tune_trial *t = &r->trials[i];
        const tune_latency *rl = t->have_cold ? &t->cold : &t->warm;
        fprintf(
            out, "%7s %8s %-16s %11llu %7.1f%% %9.1f %6.3f %8.2f %9s %9s %9s %9s %6.2f %s%s\n",
            sp_format_size(t->block_size, s1, sizeof s1),
            sp_format_size(t->cluster_size, s2, sizeof s2), tune_compression_name(t, z, sizeof z),
            (unsigned long long)t->file_size, 100 * t->compactness, t->bytes_per_record,
            t->compression_ratio, t->build_seconds, us((double)t->warm.p50_ns, s3, sizeof s3),
            us((double)t->warm.p99_ns, s4, sizeof s4),
            t->have_cold ? us((double)t->cold.p50_ns, s5, sizeof s5) : "-",
            t->have_cold ? us((double)t->cold.p99_ns, s6, sizeof s6) : "-", rl->reads_per_lookup,
            t->verify_problems ? "PROBLEMS" : "OK", i == r->best ? "  <- recommended" : "");
    }
    fprintf(out,
            "(latencies in us; compact = keys and values / file size; bytes/rec = file size / "
            "records; ratio = value bytes / data blocks' bytes; reads per %s lookup)\n",
            r->n_trials && !r->trials[0].have_cold ? "warm" : "cold");
    if (r->n_trials == 0)
        return;
    const tune_trial *b = &r->trials[r->best];
    fprintf(out, "\nrecommendation: block_size = %s, cluster_size = %s, compression = %s",
            sp_format_size(b->block_size, s1, sizeof s1),
            sp_format_size(b->cluster_size, s2, sizeof s2), b->level ? "zstd" : "none");
    if (b->level)
        fprintf(out, ", compression_level = %d, dictionary_size = %s", b->level,
                sp_format_size(b->dictionary_size, s3, sizeof s3));
    fprintf(out, "\nreason: %s\n\n", r->reason);
    char *snippet = tune_config_snippet(r);
    if (snippet)
        fputs(snippet, out);
    free(snippet);
}

/* Comment lines of at most COMMENT_WIDTH bytes: config files are read
 * line by line with a bounded line length, so a long input path or reason
 * is wrapped at spaces (and split where a word alone is too long). */
#define COMMENT_WIDTH 76

static void put_comment(FILE *o, const char *text) {
    const char *p = text;
    while (*p) {
        size_t n = strcspn(p, "\n\r");
        if (n > COMMENT_WIDTH) {
            n = COMMENT_WIDTH;
            while (n > 0 && p[n] != ' ')
                n--;
            if (n == 0)
                n = COMMENT_WIDTH;
        }
        fprintf(o, "; %.*s\n", (int)n, p);
        p += n;
        while (*p == ' ' || *p == '\n' || *p == '\r')
            p++;
    }
}

char *tune_config_snippet(const tune_report *r) {
    if (r->n_trials == 0)
        return NULL;
    const tune_trial *b = &r->trials[r->best];
    char bs[32], cs[32], lim[32], line[2048];
    char *text = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&text, &len);
    if (!o)
        return NULL;
    int n =
        snprintf(line, sizeof line, "sstpipe tune: recommended for %s", r->input ? r->input : "");
    if (r->sample_limit && n > 0 && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, " (sample: first %s of XML, %llu pages)",
                 sp_format_size(r->sample_limit, lim, sizeof lim),
                 (unsigned long long)r->sample_pages);
    put_comment(o, line);
    snprintf(line, sizeof line,
             "rule: lowest %s lookup latency within %g%% of the best, then the most compact "
             "file; compression tried at the best uncompressed block and cluster size",
             b->have_cold ? "cold" : "warm", r->tolerance_pct);
    put_comment(o, line);
    put_comment(o, r->reason);
    fprintf(o, "[sst]\nblock_size = %s\ncluster_size = %s\ncompression = %s\n",
            sp_format_size(b->block_size, bs, sizeof bs),
            sp_format_size(b->cluster_size, cs, sizeof cs), b->level ? "zstd" : "none");
    if (b->level)
        fprintf(o, "compression_level = %d\ndictionary_size = %s\n", b->level,
                sp_format_size(b->dictionary_size, bs, sizeof bs));
    if (fclose(o)) {
        free(text);
        return NULL;
    }
    return text;
}

int tune_write_config(const tune_report *r, const char *path, sp_error *err) {
    char *text = tune_config_snippet(r);
    if (!text)
        return sp_errorf(err, "%s: no recommendation to write", path);
    int rc = sp_report_write_text(path, text, strlen(text), err);
    free(text);
    return rc;
}

static json_t *latency_json(const tune_latency *l) {
    return json_pack("{s:I, s:I, s:f, s:f, s:f}", "p50_ns", (json_int_t)l->p50_ns, "p99_ns",
                     (json_int_t)l->p99_ns, "avg_ns", l->avg_ns, "reads_per_lookup",
                     l->reads_per_lookup, "bytes_per_lookup", l->bytes_per_lookup);
}

/* A compressed trial's level and dictionary size; null without compression. */
static json_t *level_json(const tune_trial *t) {
    return t->level ? json_integer(t->level) : json_null();
}

static json_t *dictionary_json(const tune_trial *t) {
    return t->level ? json_integer((json_int_t)t->dictionary_size) : json_null();
}

json_t *tune_report_to_json(const tune_report *r) {
    json_t *trials = json_array();
    for (size_t i = 0; i < r->n_trials; i++) {
        const tune_trial *t = &r->trials[i];
        json_array_append_new(
            trials,
            json_pack("{s:I, s:I, s:s, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, "
                      "s:{s:I, s:f}, s:o, s:o}",
                      "block_size", (json_int_t)t->block_size, "cluster_size",
                      (json_int_t)t->cluster_size, "compression", t->level ? "zstd" : "none",
                      "compression_level", level_json(t), "dictionary_size", dictionary_json(t),
                      "file_size", (json_int_t)t->file_size, "records", (json_int_t)t->records,
                      "data_blocks", (json_int_t)t->data_blocks, "key_bytes",
                      (json_int_t)t->key_bytes, "value_bytes", (json_int_t)t->value_bytes,
                      "compactness", t->compactness, "bytes_per_record", t->bytes_per_record,
                      "compression_ratio", t->compression_ratio, "build_seconds", t->build_seconds,
                      "verify", "problems", (json_int_t)t->verify_problems, "seconds",
                      t->verify_seconds, "warm", latency_json(&t->warm), "cold",
                      t->have_cold ? latency_json(&t->cold) : json_null()));
    }
    json_t *rec = json_null();
    if (r->n_trials) {
        const tune_trial *b = &r->trials[r->best];
        char *snippet = tune_config_snippet(r);
        rec = json_pack("{s:I, s:I, s:s, s:o, s:o, s:s, s:s, s:f, s:s?}", "block_size",
                        (json_int_t)b->block_size, "cluster_size", (json_int_t)b->cluster_size,
                        "compression", b->level ? "zstd" : "none", "compression_level",
                        level_json(b), "dictionary_size", dictionary_json(b), "basis",
                        b->have_cold ? "cold_p50" : "warm_p50", "reason", r->reason,
                        "tolerance_pct", r->tolerance_pct, "config", snippet);
        free(snippet);
    }
    json_t *sample =
        r->sample_limit
            ? json_pack("{s:I, s:I, s:I}", "limit", (json_int_t)r->sample_limit, "xml_bytes",
                        (json_int_t)r->sample_bytes, "pages", (json_int_t)r->sample_pages)
            : json_null();
    return json_pack("{s:s, s:o, s:s, s:I, s:i, s:i, s:I, s:s?, s:o, s:o}", "input",
                     r->input ? r->input : "", "sample", sample, "scratch_dir",
                     r->scratch_dir ? r->scratch_dir : "", "lookups", (json_int_t)r->lookups,
                     "threads", (int)r->threads, "queue_depth", (int)r->queue_depth, "seed",
                     (json_int_t)r->seed, "note", r->note[0] ? r->note : NULL, "trials", trials,
                     "recommendation", rec);
}

int tune_write_json(const tune_report *r, const char *path, sp_error *err) {
    return sp_report_write_json(tune_report_to_json(r), path, err);
}
