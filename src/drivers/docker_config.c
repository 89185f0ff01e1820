/* docker_config: the task's `config` object for the docker driver, decoded
 * and checked against what the client allows.  The keys follow Nomad's
 * docker driver, so job files written for Nomad carry over. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/units.h"
#include "common/xalloc.h"
#include "drivers/docker-int.h"

#define LIST_MAX 256            /* entries of any list in config */
#define STRING_MAX 65536

const char *const docker_default_caps[] = {
	"audit_write", "chown", "dac_override", "fowner", "fsetid", "kill", "mknod",
	"net_bind_service", "net_raw", "setfcap", "setgid", "setpcap", "setuid", "sys_chroot",
	NULL,
};

static const char *const known_keys[] = {
	"image", "command", "args", "entrypoint", "env", "volumes", "mount", "network_mode",
	"ports", "work_dir", "privileged", "force_pull", "auth", "labels", "shm_size", "ulimit",
	"cap_add", "cap_drop", "image_pull_timeout", NULL,
};

void docker_strv_free(char **v)
{
	if (!v)
		return;
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

static int get_string(const json_t *cfg, const char *key, char **out, struct herd_err *err)
{
	const json_t *v = json_object_get(cfg, key);
	if (!v)
		return 0;
	if (!json_is_string(v) || json_string_length(v) > STRING_MAX)
		return herd_errf(err, -EINVAL, "config { %s }: expected a string", key);
	*out = xstrdup(json_string_value(v));
	return 0;
}

static int get_bool(const json_t *cfg, const char *key, bool *out, struct herd_err *err)
{
	const json_t *v = json_object_get(cfg, key);
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return herd_errf(err, -EINVAL, "config { %s }: expected true or false", key);
	*out = json_is_true(v);
	return 0;
}

/* A list of strings (a single string counts as a list of one when
 * one_ok, as Nomad allows for entrypoint). */
static int get_strv(const json_t *cfg, const char *key, bool one_ok, char ***out,
		    struct herd_err *err)
{
	const json_t *v = json_object_get(cfg, key);
	size_t i;
	json_t *s;
	if (!v)
		return 0;
	if (one_ok && json_is_string(v)) {
		char **r = xcalloc(2, sizeof(*r));
		r[0] = xstrdup(json_string_value(v));
		*out = r;
		return 0;
	}
	if (!json_is_array(v) || json_array_size(v) > LIST_MAX)
		return herd_errf(err, -EINVAL, "config { %s }: expected a list of at most %d strings",
				 key, LIST_MAX);
	json_array_foreach(v, i, s)
		if (!json_is_string(s) || json_string_length(s) > STRING_MAX)
			return herd_errf(err, -EINVAL, "config { %s }: item %zu is not a string", key, i);
	char **r = xcalloc(json_array_size(v) + 1, sizeof(*r));
	json_array_foreach(v, i, s)
		r[i] = xstrdup(json_string_value(s));
	*out = r;
	return 0;
}

/* An HCL block kept verbatim: an object, or a list of one object. */
static const json_t *get_block(const json_t *cfg, const char *key, struct herd_err *err, int *rc)
{
	const json_t *v = json_object_get(cfg, key);
	*rc = 0;
	if (v && json_is_array(v) && json_array_size(v) == 1)
		v = json_array_get(v, 0);
	if (v && !json_is_object(v)) {
		*rc = herd_errf(err, -EINVAL, "config { %s }: expected a block (an object)", key);
		return NULL;
	}
	return v;
}

/* "sub/dir" -> "<task_dir>/sub/dir"; absolute paths need volumes_enabled. */
static int resolve_source(const char *what, const char *src, const char *task_dir,
			  const struct docker_config *cfg, char **out, struct herd_err *err)
{
	if (!*src)
		return herd_errf(err, -EINVAL, "config { %s }: empty source", what);
	if (src[0] == '/') {
		if (!cfg || !cfg->volumes_enabled)
			return herd_errf(err, -EPERM, "config { %s }: host path %s: volumes outside the "
					 "task directory are disabled on this client (plugin \"docker\" "
					 "{ config { volumes { enabled = true } } })", what, src);
		*out = xstrdup(src);
		return 0;
	}
	/* Relative: inside the task directory, never above it. */
	const char *p = src;
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return herd_errf(err, -EPERM, "config { %s }: %s leaves the task directory",
					 what, src);
		p += n;
		while (*p == '/')
			p++;
	}
	*out = xasprintf("%s/%s", task_dir, src);
	return 0;
}

static void mount_release(struct docker_mount *m)
{
	free(m->type);
	free(m->source);
	free(m->target);
	free(m->propagation);
}

static int add_volume(struct docker_task_config *tc, const char *spec, const char *task_dir,
		      const struct docker_config *cfg, struct herd_err *err)
{
	char *copy = xstrdup(spec);
	char *target = strchr(copy, ':');
	char *mode = NULL;
	struct docker_mount m = { 0 };
	int rc;
	if (!target || !target[1]) {
		rc = herd_errf(err, -EINVAL, "config { volumes }: \"%s\": expected "
			       "\"source:target[:ro|rw]\"", spec);
		goto out;
	}
	*target++ = '\0';
	mode = strchr(target, ':');
	if (mode)
		*mode++ = '\0';
	if (target[0] != '/' || (mode && strcmp(mode, "ro") && strcmp(mode, "rw"))) {
		rc = herd_errf(err, -EINVAL, "config { volumes }: \"%s\": the target must be "
			       "absolute and the mode ro or rw", spec);
		goto out;
	}
	rc = resolve_source("volumes", copy, task_dir, cfg, &m.source, err);
	if (rc < 0)
		goto out;
	m.type = xstrdup("bind");
	m.target = xstrdup(target);
	m.readonly = mode && !strcmp(mode, "ro");
	tc->mounts = xreallocarray(tc->mounts, tc->nmounts + 1, sizeof(*tc->mounts));
	tc->mounts[tc->nmounts++] = m;
out:
	free(copy);
	return rc;
}

static int add_mount(struct docker_task_config *tc, const json_t *o, const char *task_dir,
		     const struct docker_config *cfg, struct herd_err *err)
{
	static const char *const keys[] = { "type", "source", "target", "readonly",
		"bind_options", "tmpfs_options", NULL };
	struct docker_mount m = { 0 };
	const char *key;
	json_t *v;
	int rc = 0;

	if (!json_is_object(o))
		return herd_errf(err, -EINVAL, "config { mount }: expected a block");
	json_object_foreach((json_t *)o, key, v) {
		size_t i = 0;
		while (keys[i] && strcmp(keys[i], key))
			i++;
		if (!keys[i])
			return herd_errf(err, -EINVAL, "config { mount }: unknown key \"%s\" (expected "
					 "type, source, target, readonly, bind_options, tmpfs_options)",
					 key);
	}
	const char *type = json_string_value(json_object_get(o, "type"));
	const char *source = json_string_value(json_object_get(o, "source"));
	const char *target = json_string_value(json_object_get(o, "target"));
	if (!type)
		type = "volume"; /* Nomad's default */
	if (strcmp(type, "bind") && strcmp(type, "volume") && strcmp(type, "tmpfs"))
		return herd_errf(err, -EINVAL, "config { mount }: type \"%s\": expected bind, volume "
				 "or tmpfs", type);
	if (!target || target[0] != '/')
		return herd_errf(err, -EINVAL, "config { mount }: target must be an absolute path");
	if (json_object_get(o, "readonly") && !json_is_boolean(json_object_get(o, "readonly")))
		return herd_errf(err, -EINVAL, "config { mount }: readonly must be true or false");
	m.readonly = json_is_true(json_object_get(o, "readonly"));
	if (!strcmp(type, "bind")) {
		if (!source)
			return herd_errf(err, -EINVAL, "config { mount }: a bind mount needs a source");
		rc = resolve_source("mount", source, task_dir, cfg, &m.source, err);
		if (rc < 0)
			return rc;
		const json_t *bo = json_object_get(o, "bind_options");
		if (bo && json_is_array(bo) && json_array_size(bo) == 1)
			bo = json_array_get(bo, 0);
		const char *prop = json_string_value(json_object_get(bo, "propagation"));
		if (prop)
			m.propagation = xstrdup(prop);
	} else if (!strcmp(type, "volume")) {
		if (!source || !*source) {
			rc = herd_errf(err, -EINVAL, "config { mount }: a volume mount needs a source "
				       "(the volume name)");
			goto fail;
		}
		if (!cfg || !cfg->volumes_enabled) {
			rc = herd_errf(err, -EPERM, "config { mount }: docker volumes are disabled on "
				       "this client (plugin \"docker\" { config { volumes { enabled = "
				       "true } } })");
			goto fail;
		}
		m.source = xstrdup(source);
	} else {
		const json_t *to = json_object_get(o, "tmpfs_options");
		if (to && json_is_array(to) && json_array_size(to) == 1)
			to = json_array_get(to, 0);
		const json_t *size = json_object_get(to, "size");
		const json_t *mode = json_object_get(to, "mode");
		if ((size && (!json_is_integer(size) || json_integer_value(size) < 0)) ||
		    (mode && (!json_is_integer(mode) || json_integer_value(mode) < 0))) {
			rc = herd_errf(err, -EINVAL, "config { mount }: tmpfs_options size and mode "
				       "must be non-negative integers");
			goto fail;
		}
		m.tmpfs_size = size ? json_integer_value(size) : 0;
		m.tmpfs_mode = mode ? json_integer_value(mode) : 0;
	}
	m.type = xstrdup(type);
	m.target = xstrdup(target);
	tc->mounts = xreallocarray(tc->mounts, tc->nmounts + 1, sizeof(*tc->mounts));
	tc->mounts[tc->nmounts++] = m;
	return 0;
fail:
	mount_release(&m);
	return rc;
}

static void base64url(struct strbuf *sb, const unsigned char *p, size_t n)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		strbuf_addch(sb, tbl[(v >> 18) & 63]);
		strbuf_addch(sb, tbl[(v >> 12) & 63]);
		strbuf_addch(sb, i + 1 < n ? tbl[(v >> 6) & 63] : '=');
		strbuf_addch(sb, i + 2 < n ? tbl[v & 63] : '=');
	}
}

static int decode_auth(struct docker_task_config *tc, const json_t *cfg, struct herd_err *err)
{
	static const struct { const char *ours, *engine; } keys[] = {
		{ "username", "username" }, { "password", "password" }, { "email", "email" },
		{ "server_address", "serveraddress" }, { "identitytoken", "identitytoken" },
	};
	int rc;
	const json_t *a = get_block(cfg, "auth", err, &rc);
	const char *key;
	json_t *v;
	if (rc < 0 || !a)
		return rc;
	json_t *out = json_object();
	json_object_foreach((json_t *)a, key, v) {
		size_t i = 0;
		while (i < sizeof(keys) / sizeof(keys[0]) && strcmp(keys[i].ours, key))
			i++;
		if (i == sizeof(keys) / sizeof(keys[0]) || !json_is_string(v)) {
			json_decref(out);
			return herd_errf(err, -EINVAL, "config { auth }: unknown key or not a string: "
					 "\"%s\" (expected username, password, email, server_address)",
					 key);
		}
		json_object_set(out, keys[i].engine, v);
	}
	char *text = json_dumps(out, JSON_COMPACT);
	struct strbuf sb = STRBUF_INIT;
	strbuf_adds(&sb, "X-Registry-Auth: ");
	base64url(&sb, (const unsigned char *)text, strlen(text));
	free(text);
	json_decref(out);
	tc->auth_header = strbuf_detach(&sb, NULL);
	return 0;
}

static int decode_ulimits(struct docker_task_config *tc, const json_t *cfg, struct herd_err *err)
{
	int rc;
	const json_t *u = get_block(cfg, "ulimit", err, &rc);
	const char *key;
	json_t *v;
	if (rc < 0 || !u)
		return rc;
	json_object_foreach((json_t *)u, key, v) {
		int64_t soft, hard;
		if (json_is_integer(v)) {
			soft = hard = json_integer_value(v);
		} else if (json_is_string(v)) {
			/* "soft:hard" or "n" */
			const char *s = json_string_value(v);
			char *copy = xstrdup(s), *colon = strchr(copy, ':');
			if (colon)
				*colon++ = '\0';
			rc = parse_int64(copy, -1, INT64_MAX, &soft, NULL);
			if (rc == 0)
				rc = parse_int64(colon ? colon : copy, -1, INT64_MAX, &hard, NULL);
			free(copy);
			if (rc < 0)
				return herd_errf(err, -EINVAL, "config { ulimit { %s } }: \"%s\": expected "
						 "\"soft:hard\" or a number", key, s);
		} else {
			return herd_errf(err, -EINVAL, "config { ulimit { %s } }: expected \"soft:hard\"",
					 key);
		}
		if (soft > hard && hard >= 0)
			return herd_errf(err, -EINVAL, "config { ulimit { %s } }: soft %lld above hard "
					 "%lld", key, (long long)soft, (long long)hard);
		tc->ulimits = xreallocarray(tc->ulimits, tc->nulimits + 1, sizeof(*tc->ulimits));
		tc->ulimits[tc->nulimits++] = (struct docker_ulimit){ xstrdup(key), soft, hard };
	}
	return 0;
}

/* "CAP_SYS_ADMIN", "sys_admin" -> "SYS_ADMIN" in place. */
static void cap_normalize(char *s)
{
	size_t off = strncasecmp(s, "CAP_", 4) ? 0 : 4, i;
	for (i = 0; s[off + i]; i++)
		s[i] = (char)toupper((unsigned char)s[off + i]);
	s[i] = '\0';
}

static int check_caps(struct docker_task_config *tc, const struct docker_config *cfg,
		      struct herd_err *err)
{
	const char *const *allow = cfg && cfg->allow_caps ? cfg->allow_caps : docker_default_caps;
	for (size_t i = 0; tc->cap_drop && tc->cap_drop[i]; i++)
		cap_normalize(tc->cap_drop[i]);
	for (size_t i = 0; tc->cap_add && tc->cap_add[i]; i++) {
		cap_normalize(tc->cap_add[i]);
		bool ok = false;
		for (size_t j = 0; allow[j] && !ok; j++) {
			const char *a = allow[j];
			if (!strncasecmp(a, "CAP_", 4))
				a += 4;
			ok = !strcasecmp(a, "all") || !strcasecmp(a, tc->cap_add[i]);
		}
		if (!ok)
			return herd_errf(err, -EPERM, "config { cap_add }: %s is not in this client's "
					 "allow_caps", tc->cap_add[i]);
	}
	return 0;
}

void docker_task_config_release(struct docker_task_config *tc)
{
	free(tc->image);
	free(tc->command);
	docker_strv_free(tc->args);
	docker_strv_free(tc->entrypoint);
	docker_strv_free(tc->env);
	for (size_t i = 0; i < tc->nmounts; i++)
		mount_release(&tc->mounts[i]);
	free(tc->mounts);
	free(tc->network_mode);
	docker_strv_free(tc->ports);
	free(tc->work_dir);
	free(tc->auth_header);
	json_decref(tc->labels);
	for (size_t i = 0; i < tc->nulimits; i++)
		free(tc->ulimits[i].name);
	free(tc->ulimits);
	docker_strv_free(tc->cap_add);
	docker_strv_free(tc->cap_drop);
	memset(tc, 0, sizeof(*tc));
}

static int decode(const json_t *cfg, const char *task_dir, const struct docker_config *dc,
		  struct docker_task_config *tc, struct herd_err *err)
{
	const char *key;
	json_t *v;
	int rc;

	if (!json_is_object(cfg))
		return herd_errf(err, -EINVAL, "config: expected a block with at least image");
	json_object_foreach((json_t *)cfg, key, v) {
		size_t i = 0;
		while (known_keys[i] && strcmp(known_keys[i], key))
			i++;
		if (!known_keys[i])
			return herd_errf(err, -EINVAL, "config: unknown key \"%s\" for the docker driver",
					 key);
	}
	if ((rc = get_string(cfg, "image", &tc->image, err)) < 0)
		return rc;
	if (!tc->image || !*tc->image)
		return herd_errf(err, -EINVAL, "config { image }: required by the docker driver");
	if ((rc = get_string(cfg, "command", &tc->command, err)) < 0 ||
	    (rc = get_strv(cfg, "args", false, &tc->args, err)) < 0 ||
	    (rc = get_strv(cfg, "entrypoint", true, &tc->entrypoint, err)) < 0 ||
	    (rc = get_string(cfg, "network_mode", &tc->network_mode, err)) < 0 ||
	    (rc = get_strv(cfg, "ports", false, &tc->ports, err)) < 0 ||
	    (rc = get_string(cfg, "work_dir", &tc->work_dir, err)) < 0 ||
	    (rc = get_bool(cfg, "privileged", &tc->privileged, err)) < 0 ||
	    (rc = get_bool(cfg, "force_pull", &tc->force_pull, err)) < 0 ||
	    (rc = get_strv(cfg, "cap_add", false, &tc->cap_add, err)) < 0 ||
	    (rc = get_strv(cfg, "cap_drop", false, &tc->cap_drop, err)) < 0)
		return rc;
	if (tc->privileged && !(dc && dc->allow_privileged))
		return herd_errf(err, -EPERM, "config { privileged = true }: not allowed on this client "
				 "(plugin \"docker\" { config { allow_privileged = true } })");
	if ((rc = check_caps(tc, dc, err)) < 0)
		return rc;

	const json_t *env = get_block(cfg, "env", err, &rc);
	if (rc < 0)
		return rc;
	tc->env = xcalloc(json_object_size(env) + 1, sizeof(char *));
	size_t n = 0;
	json_object_foreach((json_t *)env, key, v) {
		if (!json_is_string(v) || !*key || strchr(key, '='))
			return herd_errf(err, -EINVAL, "config { env }: \"%s\": expected NAME = \"value\"",
					 key);
		tc->env[n++] = xasprintf("%s=%s", key, json_string_value(v));
	}

	const json_t *labels = get_block(cfg, "labels", err, &rc);
	if (rc < 0)
		return rc;
	tc->labels = json_object();
	json_object_foreach((json_t *)labels, key, v) {
		if (!json_is_string(v))
			return herd_errf(err, -EINVAL, "config { labels }: \"%s\" is not a string", key);
		if (!strncmp(key, "herd.", 5))
			return herd_errf(err, -EINVAL, "config { labels }: \"%s\": the herd. prefix is "
					 "the driver's own", key);
		json_object_set(tc->labels, key, v);
	}

	const json_t *vols = json_object_get(cfg, "volumes");
	size_t i;
	if (vols && (!json_is_array(vols) || json_array_size(vols) > LIST_MAX))
		return herd_errf(err, -EINVAL, "config { volumes }: expected a list of strings");
	json_array_foreach(vols, i, v) {
		if (!json_is_string(v))
			return herd_errf(err, -EINVAL, "config { volumes }: item %zu is not a string", i);
		if ((rc = add_volume(tc, json_string_value(v), task_dir, dc, err)) < 0)
			return rc;
	}
	const json_t *mounts = json_object_get(cfg, "mount");
	if (json_is_object(mounts)) {
		if ((rc = add_mount(tc, mounts, task_dir, dc, err)) < 0)
			return rc;
	} else if (json_is_array(mounts) && json_array_size(mounts) <= LIST_MAX) {
		json_array_foreach(mounts, i, v)
			if ((rc = add_mount(tc, v, task_dir, dc, err)) < 0)
				return rc;
	} else if (mounts) {
		return herd_errf(err, -EINVAL, "config { mount }: expected mount blocks");
	}

	const json_t *shm = json_object_get(cfg, "shm_size");
	if (json_is_integer(shm) && json_integer_value(shm) >= 0) {
		tc->shm_size = json_integer_value(shm);
	} else if (json_is_string(shm)) {
		if (parse_size(json_string_value(shm), &tc->shm_size, NULL) < 0)
			return herd_errf(err, -EINVAL, "config { shm_size }: \"%s\": expected bytes or a "
					 "size such as \"1GiB\"", json_string_value(shm));
	} else if (shm) {
		return herd_errf(err, -EINVAL, "config { shm_size }: expected bytes");
	}
	const json_t *pt = json_object_get(cfg, "image_pull_timeout");
	if (pt && (!json_is_string(pt) ||
		   parse_duration(json_string_value(pt), &tc->pull_timeout_ns, NULL) < 0 ||
		   tc->pull_timeout_ns <= 0))
		return herd_errf(err, -EINVAL, "config { image_pull_timeout }: expected a duration "
				 "such as \"5m\"");
	if ((rc = decode_ulimits(tc, cfg, err)) < 0)
		return rc;
	return decode_auth(tc, cfg, err);
}

int docker_task_config_decode(const json_t *config, const char *task_dir,
			      const struct docker_config *cfg, struct docker_task_config *out,
			      struct herd_err *err)
{
	struct docker_task_config tc = { 0 };
	int rc = decode(config, task_dir ? task_dir : ".", cfg, &tc, err);
	if (rc < 0) {
		docker_task_config_release(&tc);
		return rc;
	}
	*out = tc;
	return 0;
}
