/*
 * fuzz_report.c: libFuzzer target for the nightly report page.
 *
 * The input is a manifest.json: parsed by jansson, then drawn as
 * report.html (pipeline/nightly), which walks every member a page shows,
 * with whatever types and sizes the input gives them (a stage list of
 * strings, a config whose sections are numbers, a latency chart with too
 * many bins, ...). Nothing in a manifest is trusted; crashes, sanitizer
 * reports and leaks are findings. The page must also end whole.
 */
#include "fuzz_file.h"
#include "pipeline/nightly/report.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_t *m = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!m)
        return 0;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        fuzz_fail("open_memstream failed");
    report_build_page(m, mem);
    if (fclose(mem) != 0)
        fuzz_fail("the page could not be built");
    static const char end[] = "</html>\n";
    if (len < sizeof end - 1 || memcmp(text + len - (sizeof end - 1), end, sizeof end - 1))
        fuzz_fail("the page does not end with </html>");
    free(text);
    json_decref(m);
    return 0;
}
