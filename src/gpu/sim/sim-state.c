/* sim-state: parsing the simulator's JSON description; see sim-state.h. */
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/sim/sim-state.h"

static const struct { const char *name; nvmlReturn_t rc; } error_names[] = {
	{ "UNINITIALIZED", NVML_ERROR_UNINITIALIZED },
	{ "INVALID_ARGUMENT", NVML_ERROR_INVALID_ARGUMENT },
	{ "NOT_SUPPORTED", NVML_ERROR_NOT_SUPPORTED },
	{ "NO_PERMISSION", NVML_ERROR_NO_PERMISSION },
	{ "NOT_FOUND", NVML_ERROR_NOT_FOUND },
	{ "INSUFFICIENT_SIZE", NVML_ERROR_INSUFFICIENT_SIZE },
	{ "DRIVER_NOT_LOADED", NVML_ERROR_DRIVER_NOT_LOADED },
	{ "TIMEOUT", NVML_ERROR_TIMEOUT },
	{ "LIBRARY_NOT_FOUND", NVML_ERROR_LIBRARY_NOT_FOUND },
	{ "FUNCTION_NOT_FOUND", NVML_ERROR_FUNCTION_NOT_FOUND },
	{ "GPU_IS_LOST", NVML_ERROR_GPU_IS_LOST },
	{ "LIB_RM_VERSION_MISMATCH", NVML_ERROR_LIB_RM_VERSION_MISMATCH },
	{ "NO_DATA", NVML_ERROR_NO_DATA },
	{ "UNKNOWN", NVML_ERROR_UNKNOWN },
};

int sim_error_code(const char *name)
{
	for (size_t i = 0; i < sizeof(error_names) / sizeof(error_names[0]); i++)
		if (!strcmp(error_names[i].name, name))
			return error_names[i].rc;
	return -1;
}

struct ctx {
	char *why;
	size_t size;
	bool failed;
};

static void bad(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(struct ctx *c, const char *fmt, ...)
{
	va_list ap;
	if (c->failed)
		return;
	c->failed = true;
	va_start(ap, fmt);
	vsnprintf(c->why, c->size, fmt, ap);
	va_end(ap);
}

static long long get_int(struct ctx *c, json_t *o, const char *key, long long def)
{
	json_t *v = json_object_get(o, key);
	if (!v)
		return def;
	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v))
		return (long long)json_real_value(v);
	if (json_is_boolean(v))
		return json_is_true(v);
	bad(c, "\"%s\" must be a number", key);
	return def;
}

static void get_str(struct ctx *c, json_t *o, const char *key, char *buf, size_t size,
		    const char *def)
{
	json_t *v = json_object_get(o, key);
	if (v && !json_is_string(v))
		bad(c, "\"%s\" must be a string", key);
	snprintf(buf, size, "%s", v && json_is_string(v) ? json_string_value(v) : def);
}

static void get_fails(struct ctx *c, json_t *o, struct sim_fail *fails, size_t *nr)
{
	json_t *f = json_object_get(o, "fail"), *v;
	const char *k;
	*nr = 0;
	if (!f)
		return;
	if (!json_is_object(f)) {
		bad(c, "\"fail\" must be an object {function: error}");
		return;
	}
	json_object_foreach(f, k, v) {
		int rc = json_is_string(v) ? sim_error_code(json_string_value(v)) : -1;
		if (rc < 0 || *nr == SIM_MAX_FAILS || strlen(k) >= sizeof(fails->fn)) {
			bad(c, "bad \"fail\" entry \"%s\": expected an NVML error name such as "
			    "\"NOT_SUPPORTED\"", k);
			return;
		}
		snprintf(fails[*nr].fn, sizeof(fails[*nr].fn), "%s", k);
		fails[*nr].rc = rc;
		(*nr)++;
	}
}

static void get_procs(struct ctx *c, json_t *o, struct sim_proc *procs, size_t *nr)
{
	json_t *a = json_object_get(o, "processes"), *p;
	size_t i;
	*nr = 0;
	if (!a)
		return;
	if (!json_is_array(a)) {
		bad(c, "\"processes\" must be an array");
		return;
	}
	json_array_foreach(a, i, p) {
		if (*nr == SIM_MAX_PROCS)
			break;
		procs[*nr].pid = (unsigned)get_int(c, p, "pid", 0);
		procs[*nr].memory_mib = (unsigned long long)get_int(c, p, "memory_mib", 0);
		(*nr)++;
	}
}

/* "0-55,112-167" into a bit set. */
static void parse_cpus(struct ctx *c, const char *s, unsigned long *set)
{
	const size_t bits = sizeof(unsigned long) * 8;
	while (*s) {
		char *end;
		unsigned long a = strtoul(s, &end, 10), b = a;
		if (end == s)
			goto fail;
		if (*end == '-') {
			s = end + 1;
			b = strtoul(s, &end, 10);
			if (end == s)
				goto fail;
		}
		if (b < a || b >= SIM_CPU_WORDS * bits)
			goto fail;
		for (unsigned long cpu = a; cpu <= b; cpu++)
			set[cpu / bits] |= 1UL << (cpu % bits);
		s = end;
		if (*s == ',')
			s++;
		else if (*s)
			goto fail;
	}
	return;
fail:
	bad(c, "bad \"cpu_affinity\": expected CPU ranges such as \"0-15,32-47\"");
}

/* Architecture from the compute capability, as NVIDIA's CUDA guide maps
 * them; "architecture" in the description overrides. */
static unsigned arch_of(const char *name, int major, int minor)
{
	static const struct { const char *n; unsigned a; } names[] = {
		{ "kepler", NVML_DEVICE_ARCH_KEPLER }, { "maxwell", NVML_DEVICE_ARCH_MAXWELL },
		{ "pascal", NVML_DEVICE_ARCH_PASCAL }, { "volta", NVML_DEVICE_ARCH_VOLTA },
		{ "turing", NVML_DEVICE_ARCH_TURING }, { "ampere", NVML_DEVICE_ARCH_AMPERE },
		{ "ada", NVML_DEVICE_ARCH_ADA }, { "hopper", NVML_DEVICE_ARCH_HOPPER },
		{ "blackwell", NVML_DEVICE_ARCH_BLACKWELL },
	};
	for (size_t i = 0; name[0] && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i].n, name))
			return names[i].a;
	switch (major) {
	case 3: return NVML_DEVICE_ARCH_KEPLER;
	case 5: return NVML_DEVICE_ARCH_MAXWELL;
	case 6: return NVML_DEVICE_ARCH_PASCAL;
	case 7: return minor >= 5 ? NVML_DEVICE_ARCH_TURING : NVML_DEVICE_ARCH_VOLTA;
	case 8: return minor == 9 ? NVML_DEVICE_ARCH_ADA : NVML_DEVICE_ARCH_AMPERE;
	case 9: return NVML_DEVICE_ARCH_HOPPER;
	case 10: case 12: return NVML_DEVICE_ARCH_BLACKWELL;
	default: return NVML_DEVICE_ARCH_UNKNOWN;
	}
}

static void parse_mig(struct ctx *c, json_t *m, struct sim_gpu *g, size_t j, struct sim_mig *mi)
{
	unsigned cs = 0, gs = 0;
	get_str(c, m, "uuid", mi->uuid, sizeof(mi->uuid), "");
	get_str(c, m, "profile", mi->profile, sizeof(mi->profile), "1g.10gb");
	/* "1g.10gb" or "1c.2g.20gb": slice counts come from the name. */
	if (sscanf(mi->profile, "%uc.%ug.", &cs, &gs) != 2) {
		cs = 0;
		if (sscanf(mi->profile, "%ug.", &gs) != 1)
			bad(c, "bad MIG profile \"%s\": expected such as \"1g.10gb\"", mi->profile);
	}
	mi->gi_slices = gs;
	mi->ci_slices = cs ? cs : gs;
	if (!mi->uuid[0])
		snprintf(mi->uuid, sizeof(mi->uuid), "MIG-%.36s-%zu", g->uuid + 4, j);
	mi->memory_mib = (unsigned long long)get_int(c, m, "memory_mib", 0);
	mi->memory_used_mib = (unsigned long long)get_int(c, m, "memory_used_mib", 0);
	long dflt_sm = g->sm_count > 0 ? g->sm_count * (long)gs / 7 : 14 * (long)gs;
	mi->sm_count = (unsigned)get_int(c, m, "sm_count", dflt_sm);
	mi->gpu_instance_id = (unsigned)get_int(c, m, "gpu_instance_id", (long long)j + 1);
	mi->compute_instance_id = (unsigned)get_int(c, m, "compute_instance_id", 0);
	get_procs(c, m, mi->procs, &mi->nr_procs);
}

static void parse_gpu(struct ctx *c, json_t *o, size_t i, struct sim_gpu *g)
{
	char cc[16], arch[16], cpus[512], pci_id[24];
	json_t *a, *v, *mig;
	size_t j;

	get_str(c, o, "name", g->name, sizeof(g->name), "NVIDIA Simulated GPU");
	get_str(c, o, "uuid", g->uuid, sizeof(g->uuid), "");
	if (!g->uuid[0])
		snprintf(g->uuid, sizeof(g->uuid), "GPU-00000000-0000-0000-0000-%012zx", i);
	get_str(c, o, "pci_bus_id", g->pci_bus_id, sizeof(g->pci_bus_id), "");
	if (!g->pci_bus_id[0])
		snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "00000000:%02zX:00.0", 0x10 + i);
	get_str(c, o, "pci_device_id", pci_id, sizeof(pci_id), "0x000010de");
	g->pci_device_id = (unsigned)strtoul(pci_id, NULL, 16);
	g->memory_mib = (unsigned long long)get_int(c, o, "memory_mib", 16384);
	g->memory_used_mib = (unsigned long long)get_int(c, o, "memory_used_mib", 0);
	get_str(c, o, "compute_capability", cc, sizeof(cc), "8.0");
	if (sscanf(cc, "%d.%d", &g->cc_major, &g->cc_minor) != 2)
		bad(c, "bad \"compute_capability\" \"%s\": expected such as \"9.0\"", cc);
	get_str(c, o, "architecture", arch, sizeof(arch), "");
	g->arch = arch_of(arch, g->cc_major, g->cc_minor);
	g->numa_node = (int)get_int(c, o, "numa_node", -1);
	get_str(c, o, "cpu_affinity", cpus, sizeof(cpus), "");
	g->have_cpus = cpus[0] != '\0';
	parse_cpus(c, cpus, g->cpus);
	g->power_limit_w = (long)get_int(c, o, "power_limit_w", -1);
	g->power_draw_w = (long)get_int(c, o, "power_draw_w", -1);
	g->max_sm_clock = (long)get_int(c, o, "max_sm_clock_mhz", -1);
	g->max_mem_clock = (long)get_int(c, o, "max_mem_clock_mhz", -1);
	g->persistence = (int)get_int(c, o, "persistence_mode", -1);
	g->display = (int)get_int(c, o, "display_mode", -1);
	g->sm_count = (long)get_int(c, o, "sm_count", -1);
	g->nvswitch_links = (unsigned)get_int(c, o, "nvswitch_links", 0);
	g->pcie_switch = (int)get_int(c, o, "pcie_switch", -1);
	g->host_bridge = (int)get_int(c, o, "host_bridge", -1);
	g->util_gpu = (unsigned)get_int(c, o, "utilization_gpu", 0);
	g->util_memory = (unsigned)get_int(c, o, "utilization_memory", 0);
	g->temperature_c = (long)get_int(c, o, "temperature_c", -1);
	g->ecc_corrected = get_int(c, o, "ecc_corrected", -1);
	g->ecc_uncorrected = get_int(c, o, "ecc_uncorrected", -1);
	g->events = get_int(c, o, "events", 1) != 0;
	g->lost = get_int(c, o, "lost", 0) != 0;
	a = json_object_get(o, "nvlink_peers");
	if (a && !json_is_array(a))
		bad(c, "\"nvlink_peers\" must be an array of GPU indexes");
	json_array_foreach(a, j, v) {
		if (g->nr_nvlink_peers + g->nvswitch_links >= NVML_NVLINK_MAX_LINKS || !json_is_integer(v))
			break;
		g->nvlink_peers[g->nr_nvlink_peers++] = (int)json_integer_value(v);
	}
	if (g->nr_nvlink_peers + g->nvswitch_links > NVML_NVLINK_MAX_LINKS)
		bad(c, "gpu %zu: at most %d NVLinks", i, NVML_NVLINK_MAX_LINKS);
	get_procs(c, o, g->procs, &g->nr_procs);
	get_fails(c, o, g->fails, &g->nr_fails);
	mig = json_object_get(o, "mig");
	if (mig) {
		g->mig_enabled = get_int(c, mig, "enabled", 0) != 0;
		a = json_object_get(mig, "instances");
		json_array_foreach(a, j, v) {
			if (g->nr_migs == SIM_MAX_MIG) {
				bad(c, "gpu %zu: at most %d MIG instances", i, SIM_MAX_MIG);
				break;
			}
			parse_mig(c, v, g, j, &g->migs[g->nr_migs++]);
		}
	}
}

static void parse_xids(struct ctx *c, json_t *root, struct sim_state *s)
{
	json_t *a = json_object_get(root, "xid_events"), *e;
	size_t i;
	json_array_foreach(a, i, e) {
		if (s->nr_xids == SIM_MAX_XIDS)
			break;
		struct sim_xid *x = &s->xids[s->nr_xids++];
		char type[32];
		x->gpu = (int)get_int(c, e, "gpu", 0);
		x->xid = (unsigned long long)get_int(c, e, "xid", 0);
		x->gpu_instance_id = (unsigned)get_int(c, e, "gpu_instance_id", NVML_NO_INSTANCE_ID);
		get_str(c, e, "type", type, sizeof(type), "xid");
		if (!strcmp(type, "xid"))
			x->type = NVML_EVENT_XID_CRITICAL;
		else if (!strcmp(type, "double_bit_ecc"))
			x->type = NVML_EVENT_DOUBLE_BIT_ECC;
		else if (!strcmp(type, "single_bit_ecc"))
			x->type = NVML_EVENT_SINGLE_BIT_ECC;
		else
			bad(c, "bad event type \"%s\": expected xid, double_bit_ecc or single_bit_ecc", type);
	}
}

struct sim_state *sim_state_load(const char *path, char *why, size_t size)
{
	json_error_t jerr;
	struct ctx c = { why, size, false };
	json_t *root, *gpus, *g;
	char cuda[16];
	size_t i;

	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		snprintf(why, size, "%s:%d: %s", path, jerr.line, jerr.text);
		return NULL;
	}
	struct sim_state *s = calloc(1, sizeof(*s));
	if (!s)
		abort();
	if (!json_is_object(root))
		bad(&c, "top level must be an object");
	get_str(&c, root, "driver_version", s->driver_version, sizeof(s->driver_version), "550.54.15");
	get_str(&c, root, "cuda_version", cuda, sizeof(cuda), "12.4");
	int maj = 0, min = 0;
	if (sscanf(cuda, "%d.%d", &maj, &min) != 2)
		bad(&c, "bad \"cuda_version\" \"%s\": expected such as \"12.4\"", cuda);
	s->cuda_version = maj * 1000 + min * 10;
	s->wsl = get_int(&c, root, "wsl", 0) != 0;
	get_fails(&c, root, s->fails, &s->nr_fails);
	gpus = json_object_get(root, "gpus");
	if (gpus && !json_is_array(gpus))
		bad(&c, "\"gpus\" must be an array");
	s->nr_gpus = json_array_size(gpus);
	if (s->nr_gpus > SIM_MAX_GPUS) {
		bad(&c, "at most %d GPUs", SIM_MAX_GPUS);
		s->nr_gpus = 0;
	}
	s->gpus = calloc(s->nr_gpus ? s->nr_gpus : 1, sizeof(*s->gpus));
	if (!s->gpus)
		abort();
	json_array_foreach(gpus, i, g) {
		if (i < s->nr_gpus)
			parse_gpu(&c, g, i, &s->gpus[i]);
	}
	parse_xids(&c, root, s);
	json_decref(root);
	if (c.failed) {
		sim_state_free(s);
		return NULL;
	}
	return s;
}

void sim_state_free(struct sim_state *s)
{
	if (!s)
		return;
	free(s->gpus);
	free(s);
}
