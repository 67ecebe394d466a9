/*
 * cluster_shared.h: does this host see the build's shared directory?
 *
 * Every task reads its plan from, and commits its output into,
 * SHARED_DIR/<id>/, so every host a runner starts tasks on must see
 * [cluster] shared_dir at the same path. A host that does not (not
 * mounted there, or a directory of its own at that path, perhaps with an
 * old build's plan of the same id in it) would fail on a missing plan or,
 * worse, commit outputs the planner never sees. So the planner marks the
 * build's directory with a token of this run (its host, pid and random
 * bits) in SHARED_DIR/<id>/.shared-mark, every task is given the token
 * (`task ... --shared-check TOKEN`) and checks it before anything else,
 * and a task that finds no mark, or another run's, fails with one line
 * naming its host, the shared_dir path and what to do.
 */
#ifndef SSTPIPE_PIPELINE_CLUSTER_SHARED_H
#define SSTPIPE_PIPELINE_CLUSTER_SHARED_H

#include "stages/common/error.h"

#include <stddef.h>

#define CLUSTER_SHARED_MARK ".shared-mark"

/* A token of at most this many bytes, NUL included. */
#define CLUSTER_SHARED_TOKEN_MAX 256

/* Writes a fresh token of this run into plan_dir/.shared-mark (before the
 * runner starts any task) and into token. */
int cluster_shared_mark(const char *plan_dir, char token[CLUSTER_SHARED_TOKEN_MAX], sp_error *err);

/* 0 when plan_path's directory holds the mark token; otherwise err is one
 * line: "<stage> task <index> on <host>: ...", naming shared_dir (the
 * directory above the plan's) and what to do. */
int cluster_shared_check(const char *plan_path, const char *token, const char *stage,
                         unsigned long index, sp_error *err);

#endif
