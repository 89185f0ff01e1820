/* tls { http ca_file cert_file key_file verify_https_client
 * verify_server_hostname }: https for the agent's listeners and for the
 * client's connections to servers (config.h, docs/agent-config.md).
 *
 * The block is read here with the rest of the file; the files it names are
 * read once, by agent_config_finish (cfg_tls_finish), so that a missing or
 * broken file stops the agent at start with a message naming it rather
 * than failing each connection later. */
#include <errno.h>
#include <string.h>

#include "agent/config-int.h"
#include "common/xalloc.h"

/* Nomad keys about its RPC port or cipher tuning: herd has no RPC port and
 * keeps GnuTLS's defaults (TLS 1.2 and later). */
static bool ignored_key(const char *name)
{
	static const char *const keys[] = { "rpc", "rpc_upgrade_mode", "tls_min_version",
		"tls_cipher_suites", "tls_prefer_server_cipher_suites", NULL };
	for (const char *const *k = keys; *k; k++)
		if (!strcmp(name, *k))
			return true;
	return false;
}

void cfg_read_tls(struct agent_config *cfg, const struct hcl_body *body, struct diag_list *dl)
{
	static const char *const known[] = { "http", "ca_file", "cert_file", "key_file",
		"verify_https_client", "verify_server_hostname", NULL };

	for (size_t i = 0; i < body->n; i++) {
		const struct hcl_item *it = &body->items[i];
		const struct hcl_attribute *a = &it->u.attr;
		if (it->kind == HCL_ITEM_BLOCK)
			cfg_unknown_key(dl, it->u.block.pos, "block", it->u.block.type, "tls", known);
		else if (!strcmp(a->name, "http"))
			cfg_read_bool(a, &cfg->tls.http, dl);
		else if (!strcmp(a->name, "ca_file"))
			cfg_read_string(a, &cfg->tls.ca_file, dl);
		else if (!strcmp(a->name, "cert_file"))
			cfg_read_string(a, &cfg->tls.cert_file, dl);
		else if (!strcmp(a->name, "key_file"))
			cfg_read_string(a, &cfg->tls.key_file, dl);
		else if (!strcmp(a->name, "verify_https_client"))
			cfg_read_bool(a, &cfg->tls.verify_https_client, dl);
		else if (!strcmp(a->name, "verify_server_hostname"))
			cfg_read_bool(a, &cfg->tls.verify_server_hostname, dl);
		else if (ignored_key(a->name))
			diag_warn(dl, a->pos.line, a->pos.col,
				  "%s in tls is ignored: herd has no use for it", a->name);
		else
			cfg_unknown_key(dl, a->pos, "key", a->name, "tls", known);
	}
}

void cfg_tls_release(struct agent_config *cfg)
{
	free(cfg->tls.ca_file);
	free(cfg->tls.cert_file);
	free(cfg->tls.key_file);
	tls_server_release(&cfg->tls.server);
	tls_client_release(&cfg->tls.client);
}

void cfg_tls_copy(struct agent_config *dst, const struct agent_config *src)
{
	dst->tls.ca_file = src->tls.ca_file ? xstrdup(src->tls.ca_file) : NULL;
	dst->tls.cert_file = src->tls.cert_file ? xstrdup(src->tls.cert_file) : NULL;
	dst->tls.key_file = src->tls.key_file ? xstrdup(src->tls.key_file) : NULL;
	tls_server_copy(&dst->tls.server, &src->tls.server);
	tls_client_copy(&dst->tls.client, &src->tls.client);
}

int cfg_tls_finish(struct agent_config *cfg, struct herd_err *err)
{
	struct tls_client *c = &cfg->tls.client;
	int rc;

	tls_server_release(&cfg->tls.server);
	tls_client_release(c);
	if (!cfg->tls.http)
		return 0;
	rc = tls_server_load(&cfg->tls.server, cfg->tls.cert_file, cfg->tls.key_file,
			     cfg->tls.ca_file, cfg->tls.verify_https_client, err);
	if (rc < 0)
		return rc;
	/* The agent presents its own certificate on every connection it makes
	 * (a server that verifies clients asks for it, one that does not
	 * ignores it), and trusts ca_file, else the system's CAs. */
	c->https = true;
	c->ca_file = cfg->tls.ca_file ? xstrdup(cfg->tls.ca_file) : NULL;
	c->cert_file = xstrdup(cfg->tls.cert_file);
	c->key_file = xstrdup(cfg->tls.key_file);
	c->skip_hostname = !cfg->tls.verify_server_hostname;
	return 0;
}
