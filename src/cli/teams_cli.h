/* teams_cli: what the team commands (namespace, quota, acl, usage) share. */
#ifndef HERD_CLI_TEAMS_CLI_H
#define HERD_CLI_TEAMS_CLI_H

#include <stddef.h>

#include <jansson.h>

struct diag_list;

/* Reads a policy or quota file (at most 8 MiB): JSON when its name ends in
 * ".json" or its text starts with "{", else HCL through from_hcl.  Returns
 * the document (new reference), or NULL with the reason printed ("cmd:
 * path: ..." or the file's diagnostics).  In cmd_quota.c. */
json_t *teams_load_file(const char *cmd, const char *path,
			json_t *(*from_hcl)(const char *text, size_t len, struct diag_list *dl));

#endif
