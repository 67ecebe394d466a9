/*
 * wikigen.c: the command line of the synthetic MediaWiki dump generator.
 *
 * The demo, the tests and the benchmarks need dumps of any size with the
 * shape of the real ones (see data/README.md); real dumps are too big to
 * ship and too few to cover every size. Same --seed, same bytes of XML.
 */
#include "data/wg_dump.h"
#include "data/wg_incr.h"
#include "data/wg_sink.h"
#include "stages/common/cleanup.h"
#include "stages/common/cli.h"
#include "stages/common/fileio.h"
#include "stages/common/size.h"
#include "stages/common/version.h"

#include <bzlib.h>
#include <limits.h>
#include <stdint.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "Usage: wikigen --size SIZE [--seed N] [--format FORMAT] [--duplicates PCT] [--profile NAME]\n"
    "               [--threads N] [--index FILE] [-o FILE] [-v]\n"
    "Writes a synthetic MediaWiki XML export (schema 0.11) of about SIZE bytes of XML.\n"
    "\n"
    "  --size SIZE        bytes of XML to generate (K, M, G suffixes: 64M, 1G)\n"
    "  --seed N           seed of the generator; the same seed gives the same XML (default 1)\n"
    "  --format FORMAT    xml (default), bz2, bz2-multistream (a stream for the header, one\n"
    "                     per 100 pages, one for the closing tag) or zst\n"
    "  --duplicates PCT   percent of pages that repeat an earlier title (default 0.5)\n"
    "  --profile NAME     page sizes: enwiki (default; ~4 KB of XML a page, long articles\n"
    "                     and many redirects) or wiktionary (~1.1 KB a page, as in\n"
    "                     Wiktionary, Wikiquote or Wikisource dumps)\n"
    "  --threads N        threads compressing bz2-multistream (default: the number of\n"
    "                     cores); the output is the same for any N\n"
    "  --index FILE       bz2-multistream: also write its -multistream-index.txt.bz2 as\n"
    "                     Wikimedia does (\"offset:page id:title\" a page, offset the\n"
    "                     byte where the page's stream starts)\n"
    "  -o, --output FILE  write FILE (through a temporary file renamed on success);\n"
    "                     default stdout\n"
    "  -v, --verbose      print one line of statistics on stderr\n"
    "  -h, --help         show this help\n"
    "  --version          print wikigen's version (sstpipe's, as sstpipe --version)\n"
    "\n"
    "Daily increments (adds/changes dumps) of the dump the options above make:\n"
    "  --increment-of YYYYMMDD  the base dump's date; writes one file a day after it,\n"
    "                     -o DIR/WIKI-YYYYMMDD-pages-meta-hist-incr.xml[.bz2|.zst]\n"
    "  --days N           increments to write (default 1)\n"
    "  --edits PCT        percent of the base's pages edited each day (default 1)\n"
    "  --new-pages N      new pages each day (default 10)\n"
    "  --wiki NAME        file name prefix (default enwiki)\n";

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "wikigen: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see wikigen --help)\n");
    return SP_EXIT_USAGE;
}

/* "0.5" -> 5000 per million, from decimal digits only (no floating point). */
static bool parse_percent(const char *s, uint32_t *per_million) {
    uint64_t whole = 0, frac = 0, scale = 10000;
    const char *p = s;
    if (!isdigit((unsigned char)*p) && *p != '.')
        return false;
    while (isdigit((unsigned char)*p)) {
        whole = whole * 10 + (uint64_t)(*p++ - '0');
        if (whole > 100)
            return false;
    }
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return false;
        for (; isdigit((unsigned char)*p); p++) {
            frac += (uint64_t)(*p - '0') * scale;
            scale /= 10;
        }
    }
    if (*p || p == s)
        return false;
    uint64_t v = whole * 10000 + frac;
    if (v > 1000000)
        return false;
    *per_million = (uint32_t)v;
    return true;
}

static bool parse_format(const char *s, wg_format *f) {
    static const struct {
        const char *name;
        wg_format format;
    } names[] = {{"xml", WG_FORMAT_XML},
                 {"bz2", WG_FORMAT_BZ2},
                 {"bz2-multistream", WG_FORMAT_BZ2_MULTI},
                 {"zst", WG_FORMAT_ZST}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!strcmp(s, names[i].name)) {
            *f = names[i].format;
            return true;
        }
    }
    return false;
}

/* The multistream index, bz2-compressed, through a temporary file. */
static int write_index(const char *path, const wg_sink *sink, sp_error *err) {
    size_t len;
    const char *text = wg_sink_index(sink, &len);
    if (!text)
        text = "";
    unsigned cap = (unsigned)(len + len / 100 + 600);
    char *z = malloc(cap);
    if (!z || len > UINT_MAX / 2)
        return free(z), sp_errorf(err, "wikigen: out of memory (index)");
    int rc = BZ2_bzBuffToBuffCompress(z, &cap, (char *)(uintptr_t)text, (unsigned)len, 9, 0, 0);
    if (rc != BZ_OK) {
        free(z);
        return sp_errorf(err, "%s: bzip2 compression failed (libbz2 error %d)", path, rc);
    }
    sp_output idx;
    rc = sp_output_open(&idx, path, err);
    if (!rc && (sp_write_all(idx.fd, z, cap, idx.name, err) || sp_output_commit(&idx, err))) {
        sp_output_abort(&idx);
        rc = -1;
    }
    free(z);
    return rc;
}

static int fail(const sp_error *err) {
    fprintf(stderr, "wikigen: %s\n", err->set ? err->msg : "unknown error");
    return SP_EXIT_FAIL;
}

int main(int argc, char **argv) {
    static const struct option longopts[] = {
        // clang-format off
        {"size", required_argument, NULL, 's'},
        {"seed", required_argument, NULL, 'S'},
        {"format", required_argument, NULL, 'f'},
        {"duplicates", required_argument, NULL, 'd'},
        {"profile", required_argument, NULL, 'p'},
        {"threads", required_argument, NULL, 't'},
        {"output", required_argument, NULL, 'o'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {"increment-of", required_argument, NULL, 'I'},
        {"days", required_argument, NULL, 'D'},
        {"edits", required_argument, NULL, 'E'},
        {"new-pages", required_argument, NULL, 'N'},
        {"wiki", required_argument, NULL, 'W'},
        {"index", required_argument, NULL, 'X'},
        {NULL, 0, NULL, 0},
        // clang-format on
    };
    wg_dump_options o = {.seed = 1, .dup_per_million = 5000};
    wg_format format = WG_FORMAT_XML;
    const char *path = NULL, *index_path = NULL;
    bool have_size = false, verbose = false;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = cores > 0 ? (unsigned)(cores < 256 ? cores : 256) : 1;
    wg_incr_options io = {.days = 1, .edit_per_million = 10000, .new_pages = 10, .wiki = "enwiki"};
    bool incr = false;
    sp_error err = {0};
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "o:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (sp_parse_size(optarg, "--size", &o.size, &err)) {
                fprintf(stderr, "wikigen: %s (see wikigen --help)\n", err.msg);
                return SP_EXIT_USAGE;
            }
            have_size = true;
            break;
        case 'S': {
            char *end;
            errno = 0;
            o.seed = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-')
                return usage_error("--seed: '%s' is not a non-negative integer", optarg);
            break;
        }
        case 'f':
            if (!parse_format(optarg, &format))
                return usage_error("--format: '%s' is not one of xml, bz2, bz2-multistream, zst",
                                   optarg);
            break;
        case 'p':
            if (!strcmp(optarg, "enwiki"))
                o.profile = WG_PROFILE_ENWIKI;
            else if (!strcmp(optarg, "wiktionary"))
                o.profile = WG_PROFILE_WIKTIONARY;
            else
                return usage_error("--profile: '%s' is not one of enwiki, wiktionary", optarg);
            break;
        case 'd':
            if (!parse_percent(optarg, &o.dup_per_million))
                return usage_error("--duplicates: '%s' is not a percentage from 0 to 100", optarg);
            break;
        case 't': {
            char *end;
            errno = 0;
            unsigned long n = strtoul(optarg, &end, 10);
            if (errno || end == optarg || *end || n < 1 || n > 256)
                return usage_error("--threads: '%s' is not a number from 1 to 256", optarg);
            threads = (unsigned)n;
            break;
        }
        case 'o':
            path = optarg;
            break;
        case 'I':
            if (wg_incr_parse_date(optarg, &io.base_date))
                return usage_error("--increment-of: '%s' is not a date YYYYMMDD", optarg);
            incr = true;
            break;
        case 'D':
        case 'N': {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-' || n > 100000000)
                return usage_error(c == 'D' ? "--days: '%s' is not a number from 0 to 100000000"
                                            : "--new-pages: '%s' is not a number from 0 to "
                                              "100000000",
                                   optarg);
            if (c == 'D')
                io.days = (unsigned)n;
            else
                io.new_pages = n;
            break;
        }
        case 'E':
            if (!parse_percent(optarg, &io.edit_per_million))
                return usage_error("--edits: '%s' is not a percentage from 0 to 100", optarg);
            break;
        case 'W':
            if (!*optarg || strchr(optarg, '/'))
                return usage_error("--wiki: '%s' is not a file name prefix", optarg);
            io.wiki = optarg;
            break;
        case 'X':
            index_path = optarg;
            break;
        case 'v':
            verbose = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return SP_EXIT_OK;
        case 'V':
            /* wikigen is built and installed with sstpipe: the program's
             * version, the first line of `sstpipe --version`. */
            printf("wikigen %s\n", sp_version());
            return SP_EXIT_OK;
        default:
            return usage_error("unknown option or missing argument: '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if (!have_size)
        return usage_error("%s", "--size is required");
    if (index_path && (format != WG_FORMAT_BZ2_MULTI || incr))
        return usage_error("%s", "--index goes with --format bz2-multistream (and no increments)");
    o.pages_per_stream = format == WG_FORMAT_BZ2_MULTI ? 100 : 0;
    if (incr) {
        if (!path || !strcmp(path, "-"))
            return usage_error("%s", "--increment-of needs -o DIR (one file a day goes there)");
        io.dir = path;
        unsigned files;
        if (wg_incr_write(&io, &o, format, threads, &files, &err))
            return fail(&err);
        if (verbose)
            fprintf(stderr, "wikigen: increments=%u\n", files);
        return SP_EXIT_OK;
    }

    /* Writing a file: its temporary name is removed on SIGINT or SIGTERM
     * (cleanup.h; only a program's main installs the handlers). */
    if (path && strcmp(path, "-"))
        sp_cleanup_install();
    sp_output out;
    if (sp_output_open(&out, path, &err))
        return fail(&err);
    wg_sink *sink = NULL;
    wg_dump_stats stats;
    int rc = wg_sink_open(&sink, format, threads, out.fd, out.name, &err);
    if (!rc)
        rc = wg_dump_write(&o, sink, &stats, &err);
    if (!rc && index_path)
        rc = write_index(index_path, sink, &err);
    if (!rc)
        rc = sp_output_commit(&out, &err);
    if (rc) {
        wg_sink_destroy(sink);
        sp_output_abort(&out);
        return fail(&err);
    }
    if (verbose)
        fprintf(stderr,
                "wikigen: xml_bytes=%llu output_bytes=%llu streams=%llu pages=%llu "
                "redirects=%llu duplicates=%llu revisions=%llu\n",
                (unsigned long long)stats.xml_bytes, (unsigned long long)wg_sink_bytes_out(sink),
                (unsigned long long)wg_sink_streams(sink), (unsigned long long)stats.pages,
                (unsigned long long)stats.redirects, (unsigned long long)stats.duplicates,
                (unsigned long long)stats.revisions);
    wg_sink_destroy(sink);
    return SP_EXIT_OK;
}
