/* nightly_options.c: a nightly run's options; see nightly_options.h. */
#include "pipeline/nightly/nightly_options.h"

/* A cron log shows a long stage moving without being flooded. */
#define NIGHTLY_PROGRESS_PERIOD 60.0

void nightly_options_init(nightly_options *o) {
    *o = (nightly_options){
        .table_name = "table.sst", .keep = 7, .progress_period = NIGHTLY_PROGRESS_PERIOD};
    build_options_init(&o->build);
    verify_options_init(&o->verify);
    profile_options_init(&o->profile);
    cluster_build_options_init(&o->cluster_build);
}

void nightly_options_destroy(nightly_options *o) {
    cluster_build_options_destroy(&o->cluster_build);
    json_decref(o->config);
    o->config = NULL;
}
