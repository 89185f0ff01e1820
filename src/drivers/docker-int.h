/* Private to the docker driver: the Engine API client, task config
 * decoding, the create request, image pulls and the log follower. */
#ifndef HERD_DRIVERS_DOCKER_INT_H
#define HERD_DRIVERS_DOCKER_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/strbuf.h"
#include "drivers/docker.h"

/* ---- docker_api.c: HTTP over the engine's unix socket ---- */

/* The API version herd speaks at most; the engine's, when lower, is used. */
#define DOCKER_API_MAX "1.44"
/* The oldest engine API herd accepts (DeviceRequests came with 1.40). */
#define DOCKER_API_MIN_MINOR 40

/* A cancel point for a long request (log follow, wait, pull): another
 * thread calls docker_cancel_fire to end it at once (the socket is shut
 * down under the lock, so a closed, reused fd is never touched). */
struct docker_cancel {
	pthread_mutex_t lock;
	int fd;                 /* the request's socket, -1 none */
	bool fired;
};
void docker_cancel_init(struct docker_cancel *c);
void docker_cancel_fire(struct docker_cancel *c);
void docker_cancel_destroy(struct docker_cancel *c);

struct docker_client {
	char *socket;           /* owned */
	char prefix[16];        /* "/v1.43" once negotiated */
	int64_t timeout_ms;     /* ordinary requests */
};

/* Connects to the engine at socket (NULL: the default) and negotiates the
 * API version with GET /version.  Returns 0, or -errno with err
 * ("docker engine at /run/docker.sock: Couldn't connect ..."); -ENOTSUP
 * when the engine's API is older than 1.40.  Release with
 * docker_client_release (also after failure). */
int docker_client_init(struct docker_client *c, const struct docker_config *cfg,
		       struct herd_err *err);
void docker_client_release(struct docker_client *c);

/* Streams the body of a response to on_data. */
typedef int (*docker_data_fn)(void *arg, const char *data, size_t len);

struct docker_req {
	const char *method;     /* "GET", "POST", "DELETE" */
	const char *path;       /* after the version prefix, query included */
	const char *body;       /* JSON, or NULL */
	const char *body_type;  /* NULL: application/json */
	size_t body_len;        /* 0: strlen(body) */
	const char *header;     /* one extra "Name: value" header, or NULL */
	int64_t timeout_ms;     /* 0: the client's; -1: none */
	int64_t idle_ms;        /* abort after this long without data; 0: never */
	docker_data_fn on_data; /* NULL: the body collects in resp */
	void *arg;
	struct docker_cancel *cancel; /* may be NULL */
};

/* Runs one request.  Returns the HTTP status (>= 100) with the body in resp
 * (when on_data is NULL; resp may be NULL), or -errno with err on transport
 * failure (-ECANCELED when cancelled, -ETIMEDOUT, -ECONNREFUSED/-ENOENT
 * when no engine answers).  An HTTP error status is not a failure here. */
int docker_call(struct docker_client *c, const struct docker_req *req, struct strbuf *resp,
		struct herd_err *err);

/* The engine's error message from an error response body ({"message":...}),
 * or the body itself; a static or body-owned string valid until resp changes. */
const char *docker_error_message(const struct strbuf *resp);

/* Percent-encodes s for a query string into sb. */
void docker_query_escape(struct strbuf *sb, const char *s);

/* ---- docker_info.c: what the engine offers ---- */

struct docker_engine_info {
	char version[64];       /* "24.0.7" */
	bool nvidia_runtime;    /* Runtimes has "nvidia" (or it is the default) */
	bool cdi;               /* CDISpecDirs is a non-empty list */
	int cgroup_version;     /* 1 or 2, 0 unknown */
};

/* GET /info.  Returns 0 with *out, -errno with err. */
int docker_engine_info(struct docker_client *c, struct docker_engine_info *out,
		       struct herd_err *err);

/* ---- docker_config.c: the task's config object ---- */

struct docker_mount {
	char *type;             /* bind | volume | tmpfs */
	char *source;           /* host path (resolved) or volume name; NULL for tmpfs */
	char *target;
	bool readonly;
	char *propagation;      /* bind only, or NULL */
	int64_t tmpfs_size;     /* bytes, 0 default */
	int64_t tmpfs_mode;     /* 0 default */
};

struct docker_ulimit {
	char *name;
	int64_t soft, hard;
};

struct docker_task_config {
	char *image;
	char *command;          /* NULL: the image's */
	char **args;            /* NULL-terminated, may be NULL */
	char **entrypoint;      /* NULL: the image's */
	char **env;             /* "K=V" from config.env, NULL-terminated */
	struct docker_mount *mounts;
	size_t nmounts;
	char *network_mode;
	char **ports;           /* port labels, NULL-terminated */
	char *work_dir;
	bool privileged;
	bool force_pull;
	char *auth_header;      /* X-Registry-Auth value (base64url JSON), or NULL */
	json_t *labels;         /* object of strings (owned), never NULL */
	int64_t shm_size;       /* bytes, 0 default */
	struct docker_ulimit *ulimits;
	size_t nulimits;
	char **cap_add, **cap_drop; /* upper case without CAP_, NULL-terminated */
	int64_t pull_timeout_ns; /* image_pull_timeout, 0 the client's */
};

/* Decodes and checks config (the task's `config` object) against the
 * client's cfg.  Relative volume/mount sources resolve inside task_dir and
 * may not leave it; absolute ones need cfg->volumes_enabled.  Unknown keys
 * are errors naming them.  Returns 0 with *out (release with
 * docker_task_config_release), or -EINVAL/-EPERM with err; *out is then
 * untouched. */
int docker_task_config_decode(const json_t *config, const char *task_dir,
			      const struct docker_config *cfg, struct docker_task_config *out,
			      struct herd_err *err);
void docker_task_config_release(struct docker_task_config *tc);

/* ---- docker_create.c: the POST /containers/create body ---- */

/* The GPU UUIDs of a task: task->gpu_ids, or else NVIDIA_VISIBLE_DEVICES of
 * task->env split at commas ("void", "none" and "" mean none).  Returns a
 * NULL-terminated list the caller frees with strv_free-like free of each
 * entry and the array (docker_strv_free), and its length in *n. */
char **docker_task_gpus(const struct driver_task *task, size_t *n);
void docker_strv_free(char **v);

/* The create body for task with config tc on an engine with info.  GPUs
 * (docker_task_gpus) need info->nvidia_runtime or info->cdi; -ENODEV with
 * a plain message when neither.  Returns 0 with *out (a new object), or
 * -errno with err. */
int docker_create_body(const struct driver_task *task, const struct docker_task_config *tc,
		       const struct docker_engine_info *info, const struct docker_config *cfg,
		       json_t **out, struct herd_err *err);

/* The container name: "<task>-<alloc_id>" (a new string). */
char *docker_container_name(const struct driver_task *task);

/* Labels the driver puts on its containers. */
#define DOCKER_LABEL_ALLOC "herd.alloc_id"
#define DOCKER_LABEL_TASK "herd.task"
#define DOCKER_LABEL_LOG_DIR "herd.log_dir"
#define DOCKER_LABEL_LOG_FILES "herd.log_max_files"
#define DOCKER_LABEL_LOG_SIZE "herd.log_max_file_size"
#define DOCKER_LABEL_LOG_POS "herd.log_pos_file"
#define DOCKER_LABEL_LOGS_OFF "herd.logs_disabled" /* "true": logs { disabled } */

/* ---- docker_pull.c: images ---- */

typedef void (*docker_event_fn)(void *arg, const char *type, const char *message);

/* Makes sure image is present: pulls it when force or when the engine
 * lacks it.  Concurrent calls for the same reference share one pull (the
 * later ones wait for its result).  Progress goes to event (may be NULL)
 * at most every few seconds.  Returns 0, or -errno with err (the
 * registry's message; -ETIMEDOUT after timeout_ns or activity_ns without
 * progress). */
int docker_image_ensure(struct docker_client *c, const char *image, bool force,
			const char *auth_header, int64_t timeout_ns, int64_t activity_ns,
			docker_event_fn event, void *event_arg, struct herd_err *err);

/* ---- docker_logs.c: multiplexed log streams ---- */

/* Splits the engine's multiplexed stream (8-byte frame headers: stream
 * 1/2, three zero bytes, big-endian length) arriving in arbitrary chunks. */
struct docker_demux {
	unsigned char hdr[8];
	size_t hdr_len;
	int stream;             /* of the frame being read */
	size_t left;            /* payload bytes of it still to come */
	struct strbuf frame;    /* the frame so far */
	/* Called once per whole frame: stream 1 stdout, 2 stderr. */
	int (*on_frame)(void *arg, int stream, const char *data, size_t len);
	void *arg;
};
void docker_demux_init(struct docker_demux *d,
		       int (*on_frame)(void *arg, int stream, const char *data, size_t len),
		       void *arg);
/* Feeds len bytes; returns 0 or the first negative on_frame result. */
int docker_demux_feed(struct docker_demux *d, const char *data, size_t len);
void docker_demux_release(struct docker_demux *d);

/* Splits "2024-01-02T03:04:05.123456789Z rest" (timestamps=1) into the
 * time in ns since the epoch and the rest.  Returns 0, or -EINVAL when the
 * frame does not start with a timestamp. */
int docker_log_timestamp(const char *data, size_t len, int64_t *ns, size_t *skip);

#endif
