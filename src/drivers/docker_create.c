/* docker_create: the body of POST /containers/create for one task.  Pure:
 * no I/O, so the exact request is tested without an engine. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "common/xalloc.h"
#include "drivers/docker-int.h"

#define MIB (1024LL * 1024LL)
#define GPU_MAX 64

char *docker_container_name(const struct driver_task *task)
{
	return xasprintf("%s-%s", task->name, task->alloc_id ? task->alloc_id : "");
}

static const char *env_get(const char *const *env, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; env && env[i]; i++)
		if (!strncmp(env[i], name, n) && env[i][n] == '=')
			return env[i] + n + 1;
	return NULL;
}

char **docker_task_gpus(const struct driver_task *task, size_t *n)
{
	char **v = xcalloc(GPU_MAX + 1, sizeof(*v));
	size_t k = 0;
	if (task->gpu_ids) {
		for (size_t i = 0; task->gpu_ids[i] && k < GPU_MAX; i++)
			if (*task->gpu_ids[i])
				v[k++] = xstrdup(task->gpu_ids[i]);
	} else {
		const char *s = env_get(task->env, "NVIDIA_VISIBLE_DEVICES");
		if (s && strcmp(s, "void") && strcmp(s, "none")) {
			while (*s && k < GPU_MAX) {
				size_t len = strcspn(s, ",");
				if (len)
					v[k++] = xstrndup(s, len);
				s += len;
				if (*s == ',')
					s++;
			}
		}
	}
	*n = k;
	return v;
}

/* The task's environment as the container sees it: the agent's task env
 * with the directory variables moved to the mount points, without PATH
 * (the image's applies), then config { env } over it. */
static json_t *container_env(const struct driver_task *task, const struct docker_task_config *tc,
			     char **gpus, size_t ngpus)
{
	static const struct { const char *suffix, *path; } dirs[] = {
		{ "ALLOC_DIR", "/alloc" }, { "TASK_DIR", "/local" }, { "SECRETS_DIR", "/secrets" },
	};
	json_t *env = json_array();
	bool have_nvd = false;
	for (size_t i = 0; task->env && task->env[i]; i++) {
		const char *e = task->env[i];
		const char *eq = strchr(e, '=');
		if (!eq)
			continue;
		size_t klen = (size_t)(eq - e);
		if (klen == 4 && !strncmp(e, "PATH", 4))
			continue;
		bool moved = false;
		for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]) && !moved; d++) {
			size_t slen = strlen(dirs[d].suffix);
			if ((klen == 5 + slen && !strncmp(e, "HERD_", 5) && !strncmp(e + 5, dirs[d].suffix, slen)) ||
			    (klen == 6 + slen && !strncmp(e, "NOMAD_", 6) && !strncmp(e + 6, dirs[d].suffix, slen))) {
				char *s = xasprintf("%.*s=%s", (int)klen, e, dirs[d].path);
				json_array_append_new(env, json_string(s));
				free(s);
				moved = true;
			}
		}
		if (moved)
			continue;
		if (klen == 22 && !strncmp(e, "NVIDIA_VISIBLE_DEVICES", 22))
			have_nvd = true;
		json_array_append_new(env, json_string(e));
	}
	if (!have_nvd) {
		/* Images such as nvidia/cuda set NVIDIA_VISIBLE_DEVICES=all:
		 * the container's must say exactly what was assigned. */
		struct strbuf sb = STRBUF_INIT;
		strbuf_adds(&sb, "NVIDIA_VISIBLE_DEVICES=");
		for (size_t i = 0; i < ngpus; i++)
			strbuf_addf(&sb, "%s%s", i ? "," : "", gpus[i]);
		if (!ngpus)
			strbuf_adds(&sb, "void");
		json_array_append_new(env, json_string(sb.buf));
		strbuf_release(&sb);
	}
	for (size_t i = 0; tc->env && tc->env[i]; i++)
		json_array_append_new(env, json_string(tc->env[i]));
	return env;
}

static json_t *strv_json(char *const *v)
{
	json_t *a = json_array();
	for (size_t i = 0; v && v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static void add_bind(json_t *mounts, const char *source, const char *target, bool readonly)
{
	json_array_append_new(mounts, json_pack("{s:s, s:s, s:s, s:b}", "Type", "bind",
						"Source", source, "Target", target,
						"ReadOnly", readonly));
}

static json_t *mounts_json(const struct driver_task *task, const struct docker_task_config *tc,
			   const char *mps_pipe)
{
	json_t *mounts = json_array();
	if (task->alloc_dir)
		add_bind(mounts, task->alloc_dir, "/alloc", false);
	char *local = xasprintf("%s/local", task->task_dir);
	char *secrets = xasprintf("%s/secrets", task->task_dir);
	add_bind(mounts, local, "/local", false);
	add_bind(mounts, secrets, "/secrets", false);
	free(local);
	free(secrets);
	if (mps_pipe)
		add_bind(mounts, mps_pipe, mps_pipe, false);
	/* host volumes: the operator offered the path (client host_volume),
	 * so they need no volumes { enabled } */
	for (size_t i = 0; i < task->nvolumes; i++)
		add_bind(mounts, task->volumes[i].host_path, task->volumes[i].destination,
			 task->volumes[i].read_only);
	for (size_t i = 0; i < tc->nmounts; i++) {
		const struct docker_mount *m = &tc->mounts[i];
		json_t *o = json_pack("{s:s, s:s, s:b}", "Type", m->type, "Target", m->target,
				      "ReadOnly", m->readonly);
		if (m->source)
			json_object_set_new(o, "Source", json_string(m->source));
		if (m->propagation)
			json_object_set_new(o, "BindOptions",
					    json_pack("{s:s}", "Propagation", m->propagation));
		if (!strcmp(m->type, "tmpfs") && (m->tmpfs_size || m->tmpfs_mode)) {
			json_t *to = json_object();
			if (m->tmpfs_size)
				json_object_set_new(to, "SizeBytes", json_integer(m->tmpfs_size));
			if (m->tmpfs_mode)
				json_object_set_new(to, "Mode", json_integer(m->tmpfs_mode));
			json_object_set_new(o, "TmpfsOptions", to);
		}
		json_array_append_new(mounts, o);
	}
	return mounts;
}

static int ports_json(const struct driver_task *task, const struct docker_task_config *tc,
		      json_t *exposed, json_t *bindings, struct herd_err *err)
{
	for (size_t i = 0; tc->ports && tc->ports[i]; i++) {
		const struct driver_port *p = NULL;
		for (size_t j = 0; j < task->nports && !p; j++)
			if (task->ports[j].label && !strcmp(task->ports[j].label, tc->ports[i]))
				p = &task->ports[j];
		if (!p)
			return herd_errf(err, -EINVAL, "config { ports }: \"%s\" is not a port of the "
					 "group's network block", tc->ports[i]);
		int inside = p->to > 0 ? p->to : p->host_port;
		char host[16];
		snprintf(host, sizeof(host), "%d", p->host_port);
		for (int proto = 0; proto < 2; proto++) {
			char *key = xasprintf("%d/%s", inside, proto ? "udp" : "tcp");
			json_object_set_new(exposed, key, json_object());
			json_object_set_new(bindings, key,
					    json_pack("[{s:s, s:s}]", "HostIp",
						      p->host_ip ? p->host_ip : "", "HostPort", host));
			free(key);
		}
	}
	return 0;
}

static int gpu_requests(const struct docker_engine_info *info, const struct docker_config *cfg,
			char **gpus, size_t ngpus, json_t *host, struct herd_err *err)
{
	enum docker_gpu_mode mode = cfg ? cfg->gpu_mode : DOCKER_GPU_AUTO;
	if (!ngpus)
		return 0;
	if (mode == DOCKER_GPU_AUTO)
		mode = info->cdi ? DOCKER_GPU_CDI : DOCKER_GPU_NVIDIA;
	if ((mode == DOCKER_GPU_NVIDIA && !info->nvidia_runtime) || (mode == DOCKER_GPU_CDI && !info->cdi))
		return herd_errf(err, -ENODEV, "the task was given %zu GPU%s (%s%s) but the docker "
				 "engine%s%s has %s: install the NVIDIA Container Toolkit and run "
				 "`nvidia-ctk runtime configure --runtime=docker` (or enable CDI), "
				 "then restart dockerd", ngpus, ngpus > 1 ? "s" : "", gpus[0],
				 ngpus > 1 ? ", ..." : "", info->version[0] ? " " : "", info->version,
				 cfg && cfg->gpu_mode == DOCKER_GPU_CDI ? "no CDI support"
				 : cfg && cfg->gpu_mode == DOCKER_GPU_NVIDIA ? "no NVIDIA runtime"
				 : "no NVIDIA runtime and no CDI support");
	json_t *ids = json_array();
	for (size_t i = 0; i < ngpus; i++) {
		if (mode == DOCKER_GPU_CDI) {
			char *name = xasprintf("nvidia.com/gpu=%s", gpus[i]);
			json_array_append_new(ids, json_string(name));
			free(name);
		} else {
			json_array_append_new(ids, json_string(gpus[i]));
		}
	}
	json_t *req = json_pack("{s:s, s:i, s:o}", "Driver", mode == DOCKER_GPU_CDI ? "cdi" : "nvidia",
				"Count", 0, "DeviceIDs", ids);
	if (mode == DOCKER_GPU_NVIDIA)
		json_object_set_new(req, "Capabilities", json_pack("[[s]]", "gpu"));
	json_object_set_new(host, "DeviceRequests", json_pack("[o]", req));
	return 0;
}

int docker_create_body(const struct driver_task *task, const struct docker_task_config *tc,
		       const struct docker_engine_info *info, const struct docker_config *cfg,
		       json_t **out, struct herd_err *err)
{
	size_t ngpus;
	char **gpus = docker_task_gpus(task, &ngpus);
	json_t *body = json_object(), *host = json_object();
	json_object_set_new(body, "HostConfig", host);
	int rc;

	rc = gpu_requests(info, cfg, gpus, ngpus, host, err);
	if (rc < 0)
		goto out;
	json_object_set_new(body, "Image", json_string(tc->image));
	if (tc->command) {
		json_t *cmd = json_pack("[s]", tc->command);
		json_t *rest = strv_json(tc->args);
		json_array_extend(cmd, rest);
		json_decref(rest);
		json_object_set_new(body, "Cmd", cmd);
	} else if (tc->args) {
		json_object_set_new(body, "Cmd", strv_json(tc->args));
	}
	if (tc->entrypoint)
		json_object_set_new(body, "Entrypoint", strv_json(tc->entrypoint));
	if (tc->work_dir)
		json_object_set_new(body, "WorkingDir", json_string(tc->work_dir));
	json_object_set_new(body, "Tty", json_false());
	json_object_set_new(body, "OpenStdin", json_false());
	json_object_set_new(body, "Env", container_env(task, tc, gpus, ngpus));

	json_t *labels = json_deep_copy(tc->labels);
	char num[32];
	json_object_set_new(labels, DOCKER_LABEL_ALLOC, json_string(task->alloc_id ? task->alloc_id : ""));
	json_object_set_new(labels, DOCKER_LABEL_TASK, json_string(task->name));
	json_object_set_new(labels, DOCKER_LABEL_LOG_DIR, json_string(task->log_dir));
	snprintf(num, sizeof(num), "%d", task->log_max_files);
	json_object_set_new(labels, DOCKER_LABEL_LOG_FILES, json_string(num));
	snprintf(num, sizeof(num), "%lld", (long long)task->log_max_file_size);
	json_object_set_new(labels, DOCKER_LABEL_LOG_SIZE, json_string(num));
	char *pos = xasprintf("%s/%s.docker-logpos", task->state_dir, task->name);
	json_object_set_new(labels, DOCKER_LABEL_LOG_POS, json_string(pos));
	free(pos);
	if (task->logs_disabled)
		json_object_set_new(labels, DOCKER_LABEL_LOGS_OFF, json_string("true"));
	json_object_set_new(body, "Labels", labels);

	/* Limits as Nomad sets them: with memory_max, memory is the soft
	 * reservation and memory_max the hard limit; no swap beyond it. */
	int64_t hard = task->memory_max_mb > task->memory_mb ? task->memory_max_mb : task->memory_mb;
	if (hard > 0) {
		json_object_set_new(host, "Memory", json_integer(hard * MIB));
		json_object_set_new(host, "MemorySwap", json_integer(hard * MIB));
		if (task->memory_max_mb > task->memory_mb && task->memory_mb > 0)
			json_object_set_new(host, "MemoryReservation", json_integer(task->memory_mb * MIB));
	}
	if (task->cpu_mhz > 0)
		json_object_set_new(host, "CpuShares", json_integer(task->cpu_mhz < 2 ? 2 : task->cpu_mhz));
	/* docker run --cpuset-cpus / --cpuset-mems: the engine's cgroup */
	if (task->cpuset_cpus && *task->cpuset_cpus)
		json_object_set_new(host, "CpusetCpus", json_string(task->cpuset_cpus));
	if (task->cpuset_mems && *task->cpuset_mems)
		json_object_set_new(host, "CpusetMems", json_string(task->cpuset_mems));

	const char *mps_pipe = NULL;
	const char *pipe_env = env_get(task->env, "CUDA_MPS_PIPE_DIRECTORY");
	if (ngpus && pipe_env && pipe_env[0] == '/')
		mps_pipe = pipe_env;
	json_object_set_new(host, "Mounts", mounts_json(task, tc, mps_pipe));
	if (mps_pipe)
		/* MPS clients reach the control daemon through shared memory
		 * in the host's IPC namespace. */
		json_object_set_new(host, "IpcMode", json_string("host"));
	if (tc->network_mode)
		json_object_set_new(host, "NetworkMode", json_string(tc->network_mode));
	json_t *exposed = json_object(), *bindings = json_object();
	rc = ports_json(task, tc, exposed, bindings, err);
	if (json_object_size(exposed)) {
		json_object_set_new(body, "ExposedPorts", exposed);
		json_object_set_new(host, "PortBindings", bindings);
	} else {
		json_decref(exposed);
		json_decref(bindings);
	}
	if (rc < 0)
		goto out;
	json_object_set_new(host, "Privileged", json_boolean(tc->privileged));
	if (tc->cap_add)
		json_object_set_new(host, "CapAdd", strv_json(tc->cap_add));
	if (tc->cap_drop)
		json_object_set_new(host, "CapDrop", strv_json(tc->cap_drop));
	if (tc->shm_size)
		json_object_set_new(host, "ShmSize", json_integer(tc->shm_size));
	if (tc->nulimits) {
		json_t *ul = json_array();
		for (size_t i = 0; i < tc->nulimits; i++)
			json_array_append_new(ul, json_pack("{s:s, s:I, s:I}", "Name", tc->ulimits[i].name,
							    "Soft", (json_int_t)tc->ulimits[i].soft,
							    "Hard", (json_int_t)tc->ulimits[i].hard));
		json_object_set_new(host, "Ulimits", ul);
	}
	/* The engine keeps a bounded copy of the output (json-file, which
	 * the logs endpoint can read) for herd to follow, also across an
	 * agent restart. */
	char size[32], files[16];
	snprintf(size, sizeof(size), "%lld", (long long)task->log_max_file_size);
	snprintf(files, sizeof(files), "%d", task->log_max_files > 1 ? task->log_max_files : 2);
	json_object_set_new(host, "LogConfig", json_pack("{s:s, s:{s:s, s:s}}", "Type", "json-file",
							 "Config", "max-size", size, "max-file", files));
	rc = 0;
out:
	docker_strv_free(gpus);
	if (rc < 0) {
		json_decref(body);
		return rc;
	}
	*out = body;
	return 0;
}
