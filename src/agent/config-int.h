/* Private to src/agent's configuration files: typed readers of HCL values
 * that report into a diag_list, shared by config_file.c's block walkers. */
#ifndef HERD_AGENT_CONFIG_INT_H
#define HERD_AGENT_CONFIG_INT_H

#include "agent/config.h"
#include "spec/hcl.h"

/* Each reader checks the value's kind and range; on a mismatch it adds one
 * error at the value's position and returns -EINVAL, leaving *out alone.
 * String outputs are replaced (the old value freed). */
int cfg_read_string(const struct hcl_attribute *a, char **out, struct diag_list *dl);
int cfg_read_bool(const struct hcl_attribute *a, bool *out, struct diag_list *dl);
int cfg_read_int(const struct hcl_attribute *a, int64_t min, int64_t max, int64_t *out,
		 struct diag_list *dl);
/* A duration string ("10s") of at least min_ns. */
int cfg_read_duration(const struct hcl_attribute *a, int64_t min_ns, int64_t *out,
		      struct diag_list *dl);
/* A list of strings; *out (an array of nr strings) is replaced. */
int cfg_read_string_list(const struct hcl_attribute *a, size_t max, char ***out,
			 size_t *nr, struct diag_list *dl);

/* The error for a key this body does not know: names the key, where it
 * was, and the keys expected (a NULL-terminated list). */
void cfg_unknown_key(struct diag_list *dl, struct hcl_pos pos, const char *what,
		     const char *key, const char *where, const char *const *known);

/* client { host_volume "<name>" { path read_only } } (config_volume.c):
 * reads block b into cfg, replacing a volume of the same name; errors go to
 * dl (cfg unchanged by a block with errors). */
void cfg_read_host_volume(struct agent_config *cfg, const struct hcl_block *b,
			  struct diag_list *dl);
/* Frees / deep-copies cfg's host volumes (agent_config_release and _copy). */
void cfg_host_volumes_release(struct agent_config *cfg);
void cfg_host_volumes_copy(struct agent_config *dst, const struct agent_config *src);
/* Every host volume's path is a directory now; -errno with err naming the
 * first that is not (agent_config_finish). */
int cfg_host_volumes_check(const struct agent_config *cfg, struct herd_err *err);

/* tls { http ca_file cert_file key_file verify_https_client
 * verify_server_hostname } (config_tls.c): reads the block's body into
 * cfg, errors and warnings to dl; release and deep copy of cfg->tls; and
 * agent_config_finish's part: -errno with err when http is on and the
 * files are missing, unreadable or not PEM of the right kind. */
void cfg_read_tls(struct agent_config *cfg, const struct hcl_body *body, struct diag_list *dl);
void cfg_tls_release(struct agent_config *cfg);
void cfg_tls_copy(struct agent_config *dst, const struct agent_config *src);
int cfg_tls_finish(struct agent_config *cfg, struct herd_err *err);

#endif
