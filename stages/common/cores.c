/* cores.c: the cores this process may run on; see cores.h. */
#include "stages/common/cores.h"

#include <sched.h>

unsigned sp_usable_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    return 1;
}
