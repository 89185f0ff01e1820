/* cli_cores: reserved CPU cores in `herd alloc status` and `herd node
 * status -verbose` (cli_cores.c). */
#ifndef HERD_CLI_CORES_H
#define HERD_CLI_CORES_H

#include <jansson.h>

/* Prints "Cores  <task>: 4-7 (NUMA 0)" for each task of alloc that holds
 * cores (resources.tasks.<task>.cores), the NUMA nodes read from the
 * allocation's node (one GET /v1/node/:id, only when a task holds cores;
 * "NUMA ?" when it cannot be read). */
void cli_print_alloc_cores(const char *cmd, const json_t *alloc);

/* Prints a node's reservable cores per NUMA node (resources.cores) and how
 * many of them allocs (the node's allocations) hold; a node that offers
 * none says so. */
void cli_print_node_cores(const json_t *node, const json_t *allocs);

#endif
