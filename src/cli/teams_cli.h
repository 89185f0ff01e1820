/* teams_cli: what the team commands (namespace, quota, acl, usage) share. */
#ifndef HERD_CLI_TEAMS_CLI_H
#define HERD_CLI_TEAMS_CLI_H

#include <stddef.h>

/* Reads a whole file (at most 8 MiB) into a NUL-terminated heap buffer;
 * NULL with the reason printed as "cmd: path: ...". */
char *teams_read_file(const char *cmd, const char *path, size_t *len);

#endif
