/*
 * cores.h: how many cores "every core" means.
 *
 * Every thread count the user leaves at 0 (the build's parse and decode
 * workers, verify's checkers, the server's, the local cluster runner's
 * tasks) defaults to the cores this process may run on: its affinity mask,
 * which taskset and cgroup cpusets narrow, rather than the cores the
 * machine has online. A build confined to one core then starts one worker,
 * not one per core fighting over it.
 */
#ifndef SSTPIPE_COMMON_CORES_H
#define SSTPIPE_COMMON_CORES_H

/* The cores in this process's affinity mask; 1 when it cannot be read. */
unsigned sp_usable_cores(void);

#endif
