/* client { host_volume "<name>" { path read_only } }: the node's host
 * volumes (config.h, docs/agent-config.md).  Read here, checked against
 * the file system by agent_config_finish, reported at registration
 * (node_register.c) and mounted by the drivers. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/config-int.h"
#include "common/xalloc.h"

/* Names are what job files write as a volume's source: the id charset. */
static bool valid_volume_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 128 || s[0] == '.' || s[0] == '-')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
			return false;
	return true;
}

/* An absolute path without ".." components: what the drivers bind is what
 * the operator wrote. */
static bool valid_volume_path(const char *p)
{
	if (p[0] != '/' || strchr(p, '\n'))
		return false;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return false;
		s += n;
		s += strspn(s, "/");
	}
	return true;
}

static void set_volume(struct agent_config *cfg, struct agent_host_volume *v)
{
	for (size_t i = 0; i < cfg->client.nr_host_volumes; i++) {
		struct agent_host_volume *old = &cfg->client.host_volumes[i];
		if (strcmp(old->name, v->name))
			continue;
		free(old->name);
		free(old->path);
		*old = *v;
		return;
	}
	cfg->client.host_volumes = xreallocarray(cfg->client.host_volumes,
						 cfg->client.nr_host_volumes + 1,
						 sizeof(*cfg->client.host_volumes));
	cfg->client.host_volumes[cfg->client.nr_host_volumes++] = *v;
}

void cfg_read_host_volume(struct agent_config *cfg, const struct hcl_block *b,
			  struct diag_list *dl)
{
	static const char *const known[] = { "path", "read_only", NULL };
	struct agent_host_volume v = { NULL, NULL, false };
	size_t errors = dl->errors;

	if (b->nlabels != 1 || !valid_volume_name(b->labels[0])) {
		diag_error(dl, b->pos.line, b->pos.col, "block 'host_volume' takes one label, its "
			   "name (1 to 128 letters, digits, '-', '_' or '.'): host_volume "
			   "\"datasets\" { path = \"/data/sets\" }");
		return;
	}
	for (size_t i = 0; i < b->body->n; i++) {
		const struct hcl_item *it = &b->body->items[i];
		const struct hcl_attribute *a = &it->u.attr;
		if (it->kind == HCL_ITEM_BLOCK) {
			cfg_unknown_key(dl, it->u.block.pos, "block", it->u.block.type,
					"client.host_volume", known);
		} else if (!strcmp(a->name, "path")) {
			if (cfg_read_string(a, &v.path, dl) == 0 && !valid_volume_path(v.path))
				diag_error(dl, a->value->pos.line, a->value->pos.col,
					   "host_volume \"%s\": path must be absolute, without \"..\", "
					   "not \"%s\"", b->labels[0], v.path);
		} else if (!strcmp(a->name, "read_only")) {
			cfg_read_bool(a, &v.read_only, dl);
		} else {
			cfg_unknown_key(dl, a->pos, "key", a->name, "client.host_volume", known);
		}
	}
	if (!v.path && dl->errors == errors)
		diag_error(dl, b->pos.line, b->pos.col, "host_volume \"%s\": path is required",
			   b->labels[0]);
	if (dl->errors > errors) {
		free(v.path);
		return;
	}
	if (cfg->client.nr_host_volumes == AGENT_MAX_HOST_VOLUMES &&
	    !agent_config_host_volume(cfg, b->labels[0])) {
		diag_error(dl, b->pos.line, b->pos.col, "client: at most %d host_volume blocks",
			   AGENT_MAX_HOST_VOLUMES);
		free(v.path);
		return;
	}
	v.name = xstrdup(b->labels[0]);
	set_volume(cfg, &v);
}

void cfg_host_volumes_release(struct agent_config *cfg)
{
	for (size_t i = 0; i < cfg->client.nr_host_volumes; i++) {
		free(cfg->client.host_volumes[i].name);
		free(cfg->client.host_volumes[i].path);
	}
	free(cfg->client.host_volumes);
	cfg->client.host_volumes = NULL;
	cfg->client.nr_host_volumes = 0;
}

void cfg_host_volumes_copy(struct agent_config *dst, const struct agent_config *src)
{
	size_t n = src->client.nr_host_volumes;

	dst->client.host_volumes = n ? xcalloc(n, sizeof(*dst->client.host_volumes)) : NULL;
	dst->client.nr_host_volumes = n;
	for (size_t i = 0; i < n; i++) {
		const struct agent_host_volume *v = &src->client.host_volumes[i];
		dst->client.host_volumes[i] =
			(struct agent_host_volume){ xstrdup(v->name), xstrdup(v->path), v->read_only };
	}
}

int cfg_host_volumes_check(const struct agent_config *cfg, struct herd_err *err)
{
	for (size_t i = 0; i < cfg->client.nr_host_volumes; i++) {
		const struct agent_host_volume *v = &cfg->client.host_volumes[i];
		struct stat st;
		if (stat(v->path, &st) < 0)
			return herd_errf(err, -errno, "client.host_volume \"%s\": path %s: %s",
					 v->name, v->path, strerror(errno));
		if (!S_ISDIR(st.st_mode))
			return herd_errf(err, -ENOTDIR, "client.host_volume \"%s\": path %s is not "
					 "a directory", v->name, v->path);
	}
	return 0;
}

const struct agent_host_volume *agent_config_host_volume(const struct agent_config *cfg,
							 const char *name)
{
	for (size_t i = 0; i < cfg->client.nr_host_volumes; i++)
		if (!strcmp(cfg->client.host_volumes[i].name, name))
			return &cfg->client.host_volumes[i];
	return NULL;
}
