/*
 * dynlib.h: a shared library loaded the first time it is needed, not when
 * the process starts.
 *
 * Three of sstpipe's libraries are heavy to load: libxml2 (which brings
 * ICU and libstdc++), libarchive (which brings libxml2 again, nettle, acl
 * and lz4) and libmicrohttpd (which brings GnuTLS and p11-kit, whose
 * constructors read system configuration). Linked as usual, every process
 * loads all of them before main: most of the start of `sstpipe merge`,
 * `get` or `verify`, for libraries those commands never call. Each is used by one file (wikixml.c,
 * source.c, serve_http.c), which reaches it through a table of function pointers that
 * sp_dynlib_load fills from dlopen the first time a parser, an archive
 * reader or a server is made. The pointers are declared with __typeof__ of
 * the library's own prototypes, so the compiler still checks every call.
 *
 * The library is opened by the SONAME of the one the build found
 * (SP_SONAME_* from CMakeLists.txt), so the ABI is the one compiled
 * against; the Debian package depends on its package explicitly, since
 * dpkg-shlibdeps sees only linked libraries.
 */
#ifndef SSTPIPE_COMMON_DYNLIB_H
#define SSTPIPE_COMMON_DYNLIB_H

#include "stages/common/error.h"

#include <stddef.h>

/* One function to resolve: its name and where its address goes. */
typedef struct sp_dynsym {
    const char *name;
    void **addr;
} sp_dynsym;

/* A library and the functions taken from it; a static object of the file
 * that uses it, defined by SP_DYNLIB_TABLE. Loading is once per process;
 * it never unloads. */
typedef struct sp_dynlib {
    const char *soname;
    const sp_dynsym *syms;
    size_t n_syms;
    void *handle;  /* dlopen's, kept for the life of the process */
    int state;     /* 0 not tried, 1 loaded, -1 failed (see dynlib.c) */
    char why[512]; /* the failure, repeated to every later caller */
} sp_dynlib;

/*
 * Defines a library's function table t (a static struct with a pointer of
 * each function's own type, named like it), its sp_dynsym array and the
 * sp_dynlib lib opening soname_, from one list of the functions, so that a
 * function is named once: LIST(X, t) must expand to X(t, f) for each
 * function f. In wikixml.c:
 *
 *   #define LIBXML2_FUNCTIONS(X, t) X(t, xmlParseChunk) X(t, xmlStopParser)
 *   SP_DYNLIB_TABLE(xml, libxml2, SP_SONAME_LIBXML2, LIBXML2_FUNCTIONS);
 *
 * and calls are xml.xmlParseChunk(...), after sp_dynlib_load(&libxml2).
 */
#define SP_DYNLIB_TABLE(t, lib, soname_, LIST)                                                     \
    static struct { LIST(SP_DYNLIB_MEMBER_, t) } t;                                                \
    static const sp_dynsym t##_syms[] = {LIST(SP_DYNLIB_SYM_, t)};                                 \
    static sp_dynlib lib = {                                                                       \
        .soname = (soname_), .syms = t##_syms, .n_syms = sizeof(t##_syms) / sizeof(t##_syms[0])}
/* SP_DYNLIB_TABLE's pieces: a member, and its sp_dynsym. */
#define SP_DYNLIB_MEMBER_(t, f) __typeof__(f) *f;
#define SP_DYNLIB_SYM_(t, f) {#f, (void **)&(t).f},

/*
 * Loads lib and fills every address of its table, the first time; after
 * that returns at once. 0 when every function is there; -1 and an error
 * naming the library and what dlopen or dlsym said otherwise (then its
 * table must not be used). Thread-safe: any number of threads may call it
 * at once, and the table is complete before any of them returns 0.
 */
int sp_dynlib_load(sp_dynlib *lib, sp_error *err);

#endif
