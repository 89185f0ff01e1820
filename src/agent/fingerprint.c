/* Node fingerprint: facts of this machine as typed fields and Nomad-named
 * attributes; see fingerprint.h. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "agent/fingerprint-int.h"
#include "agent/fingerprint.h"
#include "common/xalloc.h"
#include "gpu/gpu.h"

const char *fingerprint_go_arch(const char *machine)
{
	static const struct { const char *uname, *go; } map[] = {
		{ "x86_64", "amd64" }, { "aarch64", "arm64" }, { "i686", "386" },
		{ "i386", "386" }, { "armv7l", "arm" }, { "ppc64le", "ppc64le" },
		{ "s390x", "s390x" }, { "riscv64", "riscv64" },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(machine, map[i].uname))
			return map[i].go;
	return machine;
}

static size_t attr_find(const struct node_fingerprint *fp, const char *name, int *found)
{
	size_t lo = 0, hi = fp->nr_attrs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(fp->attrs[mid].name, name);
		if (c == 0) {
			*found = 1;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = 0;
	return lo;
}

void node_fingerprint_set_attr(struct node_fingerprint *fp, const char *name, const char *value)
{
	int found;
	size_t i = attr_find(fp, name, &found);
	if (found) {
		free(fp->attrs[i].value);
		fp->attrs[i].value = xstrdup(value);
		return;
	}
	fp->attrs = xreallocarray(fp->attrs, fp->nr_attrs + 1, sizeof(*fp->attrs));
	memmove(&fp->attrs[i + 1], &fp->attrs[i], (fp->nr_attrs - i) * sizeof(*fp->attrs));
	fp->attrs[i].name = xstrdup(name);
	fp->attrs[i].value = xstrdup(value);
	fp->nr_attrs++;
}

void fp_attr_remove(struct node_fingerprint *fp, const char *name)
{
	int found;
	size_t i = attr_find(fp, name, &found);
	if (!found)
		return;
	free(fp->attrs[i].name);
	free(fp->attrs[i].value);
	memmove(&fp->attrs[i], &fp->attrs[i + 1], (fp->nr_attrs - i - 1) * sizeof(*fp->attrs));
	fp->nr_attrs--;
}

const char *node_fingerprint_attr(const struct node_fingerprint *fp, const char *name)
{
	int found;
	size_t i = attr_find(fp, name, &found);
	return found ? fp->attrs[i].value : NULL;
}

void node_fingerprint_set_driver(struct node_fingerprint *fp, const char *name, bool detected)
{
	char *key = xasprintf("driver.%s", name);
	if (detected)
		node_fingerprint_set_attr(fp, key, "1");
	else
		fp_attr_remove(fp, key);
	free(key);
}

static void set_int_attr(struct node_fingerprint *fp, const char *name, int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	node_fingerprint_set_attr(fp, name, buf);
}

static void set_str_attr(struct node_fingerprint *fp, const char *name, const char *v)
{
	if (v)
		node_fingerprint_set_attr(fp, name, v);
}

static char *lower(char *s)
{
	for (char *p = s; p && *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return s;
}

static void fingerprint_os(struct node_fingerprint *fp, const char *root)
{
	struct strbuf sb = STRBUF_INIT;
	struct utsname uts;
	bool have_uts = uname(&uts) == 0;

	/* etc/os-release, else usr/lib/os-release (os-release(5)). */
	if (fp_read_file(root, "etc/os-release", &sb) == 0 ||
	    fp_read_file(root, "usr/lib/os-release", &sb) == 0) {
		fp->os_name = fp_os_release_value(sb.buf, "ID");
		fp->os_version = fp_os_release_value(sb.buf, "VERSION_ID");
		fp->os_pretty = fp_os_release_value(sb.buf, "PRETTY_NAME");
	}
	/* The kernel's own files under root, so that tests can fake them;
	 * uname(2) only when the root has none. */
	fp->kernel_name = lower(fp_read_line(root, "proc/sys/kernel/ostype"));
	if (!fp->kernel_name && have_uts)
		fp->kernel_name = lower(xstrdup(uts.sysname));
	fp->kernel_version = fp_read_line(root, "proc/sys/kernel/osrelease");
	if (!fp->kernel_version && have_uts)
		fp->kernel_version = xstrdup(uts.release);
	fp->hostname = fp_read_line(root, "proc/sys/kernel/hostname");
	if (!fp->hostname && have_uts)
		fp->hostname = xstrdup(uts.nodename);
	strbuf_release(&sb);
}

static void fingerprint_cpu(struct node_fingerprint *fp, const char *root)
{
	struct strbuf sb = STRBUF_INIT;
	int processors = 0;
	int64_t mhz = 0;

	if (fp_read_file(root, "proc/cpuinfo", &sb) == 0)
		fp_parse_cpuinfo(sb.buf, &processors, &mhz, &fp->cpu_model);
	char *online = fp_read_line(root, "sys/devices/system/cpu/online");
	fp->cpu_cores = online ? fp_count_cpu_list(online) : 0;
	free(online);
	if (fp->cpu_cores == 0)
		fp->cpu_cores = processors;
	fp_read_cores(root, processors, &fp->cores, &fp->nr_cores);
	/* cpufreq's maximum (kHz) is the rated speed; cpuinfo's "cpu MHz" is
	 * the current one, which idles low on machines that scale. */
	char *khz = fp_read_line(root, "sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
	if (khz) {
		char *end;
		long long v = strtoll(khz, &end, 10);
		if (end != khz && !*end && v > 0)
			mhz = v / 1000;
		free(khz);
	}
	fp->cpu_mhz = mhz;
	fp->cpu_total_compute = (int64_t)fp->cpu_cores * mhz;
	strbuf_release(&sb);
}

static void fingerprint_memory_cgroup(struct node_fingerprint *fp, const char *root)
{
	struct strbuf sb = STRBUF_INIT;
	struct stat st;

	if (fp_read_file(root, "proc/meminfo", &sb) == 0)
		fp->memory_bytes = fp_parse_meminfo(sb.buf);
	if (fp_read_file(root, "proc/mounts", &sb) == 0)
		fp->cgroup_version = fp_parse_cgroup_mounts(sb.buf, &fp->cgroup_mountpoint);
	if (fp->cgroup_version == 0) {
		/* No mount table (an odd container): the v2 root's marker file. */
		char *marker = xasprintf("%s/sys/fs/cgroup/cgroup.controllers", root);
		if (stat(marker, &st) == 0) {
			fp->cgroup_version = 2;
			fp->cgroup_mountpoint = xstrdup("/sys/fs/cgroup");
		}
		free(marker);
	}
	strbuf_release(&sb);
}

static void fill_attrs(struct node_fingerprint *fp)
{
	set_str_attr(fp, "kernel.name", fp->kernel_name);
	set_str_attr(fp, "kernel.version", fp->kernel_version);
	set_str_attr(fp, "kernel.arch", fp->arch);
	if (fp->arch)
		set_str_attr(fp, "cpu.arch", fingerprint_go_arch(fp->arch));
	if (fp->cpu_cores)
		set_int_attr(fp, "cpu.numcores", fp->cpu_cores);
	if (fp->cpu_mhz) {
		set_int_attr(fp, "cpu.frequency", fp->cpu_mhz);
		set_int_attr(fp, "cpu.totalcompute", fp->cpu_total_compute);
	}
	set_str_attr(fp, "cpu.modelname", fp->cpu_model);
	if (fp->memory_bytes)
		set_int_attr(fp, "memory.totalbytes", fp->memory_bytes);
	set_str_attr(fp, "os.name", fp->os_name);
	set_str_attr(fp, "os.version", fp->os_version);
	set_str_attr(fp, "os.wsl", fp->wsl ? "true" : "false");
	set_str_attr(fp, "unique.hostname", fp->hostname);
	if (fp->disk_total_bytes) {
		set_int_attr(fp, "unique.storage.bytestotal", fp->disk_total_bytes);
		set_int_attr(fp, "unique.storage.bytesfree", fp->disk_free_bytes);
	}
	if (fp->cgroup_version) {
		set_str_attr(fp, "unique.cgroup.version", fp->cgroup_version == 2 ? "v2" : "v1");
		set_str_attr(fp, "unique.cgroup.mountpoint", fp->cgroup_mountpoint);
	}
	fp_set_core_attrs(fp);
}

int node_fingerprint(const struct fingerprint_opts *opts, struct node_fingerprint **out,
		     struct herd_err *err)
{
	static const struct fingerprint_opts defaults = FINGERPRINT_OPTS_INIT;
	const char *root;
	struct stat st;

	if (!opts)
		opts = &defaults;
	root = opts->root && *opts->root ? opts->root : "";
	char *proc = xasprintf("%s/proc", root);
	int ok = stat(proc, &st) == 0 && S_ISDIR(st.st_mode);
	int saved = errno;
	free(proc);
	if (!ok)
		return herd_errf(err, saved ? -saved : -ENOTDIR, "cannot fingerprint: %s/proc "
				 "is not a directory", *root ? root : "");

	struct node_fingerprint *fp = xcalloc(1, sizeof(*fp));
	fingerprint_os(fp, root);
	fingerprint_cpu(fp, root);
	fingerprint_memory_cgroup(fp, root);
	if (opts->arch) {
		fp->arch = xstrdup(opts->arch);
	} else {
		struct utsname uts;
		if (uname(&uts) == 0)
			fp->arch = xstrdup(uts.machine);
	}
	fp->wsl = opts->wsl >= 0 ? opts->wsl != 0 : gpu_detect_wsl(root);
	if (opts->data_dir) {
		struct statvfs vfs;
		if (statvfs(opts->data_dir, &vfs) == 0) {
			fp->disk_total_bytes = (int64_t)vfs.f_blocks * (int64_t)vfs.f_frsize;
			fp->disk_free_bytes = (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize;
		}
	}
	fill_attrs(fp);
	*out = fp;
	return 0;
}

void node_fingerprint_free(struct node_fingerprint *fp)
{
	if (!fp)
		return;
	free(fp->hostname);
	free(fp->os_name);
	free(fp->os_version);
	free(fp->os_pretty);
	free(fp->kernel_name);
	free(fp->kernel_version);
	free(fp->arch);
	free(fp->cpu_model);
	free(fp->cgroup_mountpoint);
	free(fp->cores);
	for (size_t i = 0; i < fp->nr_attrs; i++) {
		free(fp->attrs[i].name);
		free(fp->attrs[i].value);
	}
	free(fp->attrs);
	free(fp);
}
