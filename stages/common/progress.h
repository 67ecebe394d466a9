/*
 * progress.h: how far a long command has got, and the one live line on a
 * terminal that shows it.
 *
 * The work stores counters in an sp_progress (relaxed atomic stores, made
 * where a stage already reports: about every MiB of XML or 64Ki records, so
 * they cost nothing measurable); libraries never print, they only fill
 * counters through their progress hooks. The command line starts an
 * sp_meter, a thread that rewrites one stderr line four times a second
 * (phase, input read of its size with percent and ETA when the size is
 * known, XML bytes, pages, records, rate) and, when stopped, leaves one
 * clean final line. A log rendering (sp_meter_start_log) hands a line to
 * the caller's sink every period instead, and nothing at the end: the
 * nightly's log lines, or its own live line, are drawn from it.
 *
 * One counter type for every stage: the build, extract, verify, profile,
 * tune and iotest take a pointer to an sp_progress (NULL: no progress) and
 * store into it; no stage has a hook of its own.
 *
 * Work done in steps (tune's trials, iotest's patterns, verify's files)
 * names the step under way: "tune: trial 2 of 6, reading ...". Its
 * total_bytes may change as the work learns its size (tune knows it once
 * the sample is written), so it is atomic like the counters.
 */
#ifndef SSTPIPE_COMMON_PROGRESS_H
#define SSTPIPE_COMMON_PROGRESS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum sp_phase {
    SP_PHASE_READING,
    SP_PHASE_MERGING,
    SP_PHASE_WRITING,
    SP_PHASE_CHECKING,
    SP_PHASE_PROFILING, /* timing lookups (tune) */
} sp_phase;

typedef struct sp_progress {
    _Atomic int phase;
    _Atomic uint64_t in_bytes;  /* input read (compressed, as on disk) */
    _Atomic uint64_t xml_bytes; /* XML after decompression; 0: not XML */
    _Atomic uint64_t pages;
    _Atomic uint64_t records;
    _Atomic uint64_t records_total; /* writing: records ends at most here; 0 unknown */
    _Atomic uint64_t total_bytes;   /* the input's size; 0 when unknown (a pipe) */
    _Atomic uint64_t step;          /* 1-based step under way; 0: none (yet) */
    uint64_t steps;                 /* how many steps; 0: the work has none */
    const char *step_name;          /* "trial", "pattern", "file" */
    const char *records_name;       /* what records counts; NULL: "records" (iotest: "IOs") */
    /* Input of the steps before this one (tune's trials): added to what the
     * step stores through sp_progress_input, so in_bytes counts the whole. */
    uint64_t in_base;
} sp_progress;

/* All counters 0, phase reading; total_bytes the size of input (a path,
 * "-" for stdin) when it is a regular file, else 0 (and for input NULL:
 * work whose size is found later). */
void sp_progress_init(sp_progress *p, const char *input);

static inline void sp_progress_store(_Atomic uint64_t *counter, uint64_t v) {
    atomic_store_explicit(counter, v, memory_order_relaxed);
}
static inline void sp_progress_phase(sp_progress *p, sp_phase phase) {
    atomic_store_explicit(&p->phase, (int)phase, memory_order_relaxed);
}

/* The input read so far by the step under way. */
static inline void sp_progress_input(sp_progress *p, uint64_t bytes) {
    sp_progress_store(&p->in_bytes, p->in_base + bytes);
}

/* Work in n steps called name ("trial"): the line names the one under way. */
static inline void sp_progress_steps(sp_progress *p, const char *name, uint64_t n) {
    p->step_name = name;
    p->steps = n;
}

/* "1:02:03" */
void sp_progress_duration(double seconds, char *out, size_t cap);

/* The line: "build: reading 1.2G of 3.4G (35.2%), xml 5.6G, 1234 pages,
 * 1200 records, 210.3 MB/s, elapsed 0:00:05, ETA 0:00:12"; with steps,
 * "tune: trial 2 of 6, reading ...". */
void sp_progress_text(const sp_progress *p, const char *what, double elapsed, char *out,
                      size_t cap);

/* The log rendering: "build: 1.2G of 3.4G (35.2%), 1234 pages, 210.3 MB/s,
 * elapsed 0:00:05, ETA 0:00:12"; while writing with records_total known,
 * "build: input read; writing record 10 of at most 20 (50.0%), 5 records/s,
 * elapsed 0:00:02"; with no size known, "verify: running, elapsed 0:00:01". */
void sp_progress_log_text(const sp_progress *p, const char *what, double elapsed, char *out,
                          size_t cap);

typedef struct sp_meter sp_meter;

/* Where a log rendering's lines go (from the meter's thread). */
typedef void (*sp_meter_sink)(void *ctx, const char *line);

/* Shows p on out (a terminal, or forced) from now on; NULL when the thread
 * cannot start (the work goes on without a line). */
sp_meter *sp_meter_start(const char *what, sp_progress *p, FILE *out);
/* Hands sink a line of the log rendering every period seconds from now on;
 * NULL when the thread cannot start. */
sp_meter *sp_meter_start_log(const char *what, sp_progress *p, double period, sp_meter_sink sink,
                             void *ctx);
/* Stops the thread and, for sp_meter_start's meters, writes the final line with a newline (", done"
 * when the work finished); frees m. NULL does nothing. */
void sp_meter_stop(sp_meter *m, bool finished);

/* Erases the live line of the meter on screen, if any, and keeps it off
 * until sp_meter_stop: called before an error line (sp_cli_report), so the
 * error stands on a line of its own. */
void sp_meter_hold(void);

#endif
