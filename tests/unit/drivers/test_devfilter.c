/* devfilter_bpf: the emitted device program, run by a small eBPF
 * interpreter here (the kernel's BPF_PROG_TEST_RUN does not take cgroup
 * device programs) against a plain reading of the rules; and, as root where
 * a cgroup2 mount is writable, the real thing: a process in a group with the
 * program attached may open and mknod only what the list allows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drivers/cgroup.h"
#include "drivers/devfilter_bpf.h"

#define C 'c'
#define B 'b'
#define M DEVFILTER_MKNOD
#define R DEVFILTER_READ
#define W DEVFILTER_WRITE
#define RWM DEVFILTER_RWM
#define ANY DEVFILTER_ANY

/* cgroup.c's standard list, plus what a GPU task would add. */
static const struct devfilter_rule standard_and_gpu[] = {
	{ C, 195, 0, RWM },    /* /dev/nvidia0 */
	{ C, 195, 255, RWM },  /* /dev/nvidiactl */
	{ C, 1, 3, RWM }, { C, 1, 5, RWM }, { C, 1, 7, RWM }, { C, 1, 8, RWM },
	{ C, 1, 9, RWM }, { C, 5, 0, RWM }, { C, 5, 2, RWM }, { C, 136, ANY, RWM },
	{ B, 8, 0, R },        /* a block device, read only */
};
#define NR(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the interpreter: the instructions devfilter_emit may write, and
 * nothing else; it fails the test on anything the verifier would refuse
 * (a register read before it is written, a jump out of the program or
 * backwards, a context read other than a u32 at 0, 4 or 8, falling off the
 * end). */

static uint64_t run(const struct bpf_insn *p, size_t n, uint32_t type, uint32_t access,
		    uint32_t major, uint32_t minor)
{
	struct bpf_cgroup_dev_ctx ctx = { .access_type = (access << 16) | type,
					  .major = major, .minor = minor };
	uint64_t reg[11] = { 0 };
	unsigned init = 1u << 1;   /* r1: the context */
	for (size_t pc = 0; ; pc++) {
		if (pc >= n)
			fail_msg("pc %zu: fell off the end of %zu instructions", pc, n);
		const struct bpf_insn *i = &p[pc];
		if (i->dst_reg > 10 || i->src_reg > 10)
			fail_msg("pc %zu: register out of range", pc);
		uint8_t cls = BPF_CLASS(i->code);
		uint8_t op = BPF_OP(i->code);
		bool is_x = BPF_SRC(i->code) == BPF_X;
		if (cls == BPF_LDX) {
			if (i->code != (BPF_LDX | BPF_MEM | BPF_W) || i->src_reg != 1)
				fail_msg("pc %zu: load %#x from r%d", pc, i->code, i->src_reg);
			if (i->off != 0 && i->off != 4 && i->off != 8)
				fail_msg("pc %zu: context offset %d", pc, i->off);
			uint32_t v;
			memcpy(&v, (const char *)&ctx + i->off, 4);
			reg[i->dst_reg] = v;
			init |= 1u << i->dst_reg;
			continue;
		}
		if (cls == BPF_ALU64) {
			if (is_x && !(init & (1u << i->src_reg)))
				fail_msg("pc %zu: r%d read before written", pc, i->src_reg);
			if (op != BPF_MOV && !(init & (1u << i->dst_reg)))
				fail_msg("pc %zu: r%d read before written", pc, i->dst_reg);
			if (i->dst_reg == 10)
				fail_msg("pc %zu: write to the frame pointer", pc);
			uint64_t s = is_x ? reg[i->src_reg] : (uint64_t)(int64_t)i->imm;
			switch (op) {
			case BPF_MOV: reg[i->dst_reg] = s; break;
			case BPF_AND: reg[i->dst_reg] &= s; break;
			case BPF_RSH: reg[i->dst_reg] >>= s; break;
			default: fail_msg("pc %zu: ALU op %#x", pc, op);
			}
			init |= 1u << i->dst_reg;
			continue;
		}
		if (cls != BPF_JMP)
			fail_msg("pc %zu: instruction class %#x", pc, cls);
		if (op == BPF_EXIT) {
			if (!(init & 1u))
				fail_msg("pc %zu: exit with r0 unset", pc);
			return reg[0];
		}
		if (op != BPF_JNE || is_x)
			fail_msg("pc %zu: jump %#x", pc, i->code);
		if (!(init & (1u << i->dst_reg)))
			fail_msg("pc %zu: r%d read before written", pc, i->dst_reg);
		if (i->off < 0 || pc + 1 + (size_t)i->off >= n)
			fail_msg("pc %zu: jump by %d in %zu instructions", pc, i->off, n);
		if (reg[i->dst_reg] != (uint64_t)(int64_t)i->imm)
			pc += (size_t)i->off;
	}
}

/* The rules read plainly: some rule covers the device and every bit asked. */
static bool allowed(const struct devfilter_rule *rules, size_t n, uint32_t type,
		    uint32_t access, uint32_t major, uint32_t minor)
{
	for (size_t i = 0; i < n; i++) {
		const struct devfilter_rule *r = &rules[i];
		uint32_t t = r->type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK;
		if ((r->type == 'a' || t == type) &&
		    (r->major == ANY || (uint32_t)r->major == major) &&
		    (r->minor == ANY || (uint32_t)r->minor == minor) && !(access & ~r->access))
			return true;
	}
	return false;
}

static struct bpf_insn prog[DEVFILTER_INSNS(DEVFILTER_MAX_RULES)];

static size_t emit(const struct devfilter_rule *rules, size_t n)
{
	struct herd_err err = { 0 };
	int k = devfilter_emit(rules, n, prog, NR(prog), &err);
	if (k < 0)
		fail_msg("emit: %s", err.msg);
	assert_true((size_t)k <= DEVFILTER_INSNS(n));
	return (size_t)k;
}

static void test_standard_list_and_gpus(void **state)
{
	static const struct { char type; uint32_t access, major, minor; bool ok; } q[] = {
		{ C, R | W, 1, 3, true },       /* /dev/null */
		{ C, M, 1, 3, true },           /* mknod of a null */
		{ C, R, 1, 1, false },          /* /dev/mem */
		{ C, M, 1, 1, false },
		{ C, R | W, 1, 11, false },     /* /dev/kmsg: not listed */
		{ C, R | W, 195, 0, true },     /* the task's GPU */
		{ C, R | W, 195, 1, false },    /* another GPU */
		{ C, M, 195, 1, false },        /* mknod of another GPU */
		{ C, R | W, 195, 255, true },
		{ C, R | W, 136, 0, true },     /* a pty: any minor */
		{ C, R | W, 136, 4095, true },
		{ C, R, 137, 0, false },
		{ B, R, 1, 3, false },          /* right numbers, block */
		{ B, R, 8, 0, true },           /* the read-only block rule */
		{ B, W, 8, 0, false },
		{ B, R | W, 8, 0, false },
		{ B, M, 8, 0, false },
		{ C, R, 8, 0, false },
		{ C, R | W, 5, 2, true },       /* /dev/ptmx */
		{ C, R | W, 5, 1, false },      /* /dev/console */
	};
	size_t n = emit(standard_and_gpu, NR(standard_and_gpu));
	for (size_t i = 0; i < NR(q); i++) {
		uint32_t t = q[i].type == C ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK;
		uint64_t r0 = run(prog, n, t, q[i].access, q[i].major, q[i].minor);
		if (r0 != (q[i].ok ? 1 : 0))
			fail_msg("%c %u:%u access %u: program says %d", q[i].type, q[i].major,
				 q[i].minor, q[i].access, (int)r0);
	}
}

static void test_empty_list_and_any(void **state)
{
	size_t n = emit(NULL, 0);
	assert_int_equal(n, 8);   /* the loads, then "return 0" */
	assert_int_equal(run(prog, n, BPF_DEVCG_DEV_CHAR, R, 1, 3), 0);
	assert_int_equal(run(prog, n, BPF_DEVCG_DEV_BLOCK, M, 0, 0), 0);

	static const struct devfilter_rule all[] = { { 'a', ANY, ANY, RWM } };
	n = emit(all, 1);
	assert_int_equal(n, 10);  /* a rule with nothing to compare is "return 1" */
	assert_int_equal(run(prog, n, BPF_DEVCG_DEV_CHAR, R | W | M, 195, 7), 1);
	assert_int_equal(run(prog, n, BPF_DEVCG_DEV_BLOCK, R, 259, 1048575), 1);

	static const struct devfilter_rule any_major[] = { { 'c', ANY, 0, W } };
	n = emit(any_major, 1);
	assert_int_equal(run(prog, n, BPF_DEVCG_DEV_CHAR, W, 4000, 0), 1);
	assert_int_equal(run(prog, n, BPF_DEVCG_DEV_CHAR, W, 4000, 1), 0);
	assert_int_equal(run(prog, n, BPF_DEVCG_DEV_CHAR, R, 4000, 0), 0);
	assert_int_equal(run(prog, n, BPF_DEVCG_DEV_BLOCK, W, 4000, 0), 0);
}

/* xorshift: the same sequence on every run, so a failure repeats. */
static uint32_t rnd_state = 2463534242u;
static uint32_t rnd(uint32_t below)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state % below;
}

/* Random lists against random requests, most of them near a rule (same
 * numbers, another type or access) so that each comparison is exercised. */
static void test_random_lists_match_the_rules(void **state)
{
	static struct devfilter_rule rules[DEVFILTER_MAX_RULES];
	static const char types[] = "cba";
	for (int round = 0; round < 300; round++) {
		size_t nr = round == 0 ? DEVFILTER_MAX_RULES : rnd(12);
		for (size_t i = 0; i < nr; i++)
			rules[i] = (struct devfilter_rule){
				.type = types[rnd(round % 5 ? 2 : 3)],
				.major = rnd(8) ? (int32_t)rnd(6) : ANY,
				.minor = rnd(8) ? (int32_t)rnd(6) : ANY,
				.access = 1 + rnd(7),
			};
		size_t n = emit(rules, nr);
		for (int k = 0; k < 200; k++) {
			uint32_t type = 1 + rnd(2), access = 1 + rnd(7);
			uint32_t major = rnd(7), minor = rnd(7);
			if (nr && rnd(2)) {
				const struct devfilter_rule *r = &rules[rnd((uint32_t)nr)];
				if (r->major != ANY)
					major = (uint32_t)r->major;
				if (r->minor != ANY)
					minor = (uint32_t)r->minor;
			}
			bool want = allowed(rules, nr, type, access, major, minor);
			uint64_t got = run(prog, n, type, access, major, minor);
			if (got != (want ? 1 : 0))
				fail_msg("round %d (%zu rules): type %u access %u %u:%u: program %d, "
					 "rules %d", round, nr, type, access, major, minor, (int)got,
					 want);
		}
	}
}

static void test_malformed_rules(void **state)
{
	struct herd_err err = { 0 };
	static const struct devfilter_rule bad_type[] = { { 'x', 1, 3, RWM } };
	assert_int_equal(devfilter_emit(bad_type, 1, prog, NR(prog), &err), -EINVAL);
	assert_non_null(strstr(err.msg, "type 'x'"));
	static const struct devfilter_rule no_access[] = { { 'c', 1, 3, 0 } };
	assert_int_equal(devfilter_emit(no_access, 1, prog, NR(prog), &err), -EINVAL);
	static const struct devfilter_rule bad_access[] = { { 'c', 1, 3, 8 } };
	assert_int_equal(devfilter_emit(bad_access, 1, prog, NR(prog), &err), -EINVAL);
	static const struct devfilter_rule bad_major[] = { { 'c', -2, 3, RWM } };
	assert_int_equal(devfilter_emit(bad_major, 1, prog, NR(prog), &err), -EINVAL);
	static struct devfilter_rule many[DEVFILTER_MAX_RULES + 1];
	assert_int_equal(devfilter_emit(many, NR(many), prog, NR(prog), &err), -E2BIG);
	assert_int_equal(devfilter_emit(standard_and_gpu, 2, prog, 10, &err), -E2BIG);
}

/* ---- the real kernel ---- */

static const char *mnt;             /* a writable cgroup2 mount, or NULL */
static char tmp[] = "/tmp/herd-devfilter-XXXXXX";

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* The programs attached to dir for devices: their count, the first id,
 * the flags they were attached with. */
static uint32_t attached(const char *dir, uint32_t *id, uint32_t *flags)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	uint32_t ids[8] = { 0 };
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.query.target_fd = (uint32_t)fd;
	a.query.attach_type = BPF_CGROUP_DEVICE;
	a.query.prog_ids = (uint64_t)(uintptr_t)ids;
	a.query.prog_cnt = 8;
	if (sys_bpf(BPF_PROG_QUERY, &a) < 0)
		fail_msg("BPF_PROG_QUERY %s: %s", dir, strerror(errno));
	close(fd);
	*id = ids[0];
	*flags = a.query.attach_flags;
	return a.query.prog_cnt;
}

static size_t open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	size_t n = 0;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* What a process in the group gets: errno (0: ok) of each probe. */
enum { P_NULL, P_KMSG, P_MKNOD_NULL, P_MKNOD_MEM, P_MKNOD_BLOCK, P_OPEN_MADE_NULL, NR_PROBES };

static int probe_errno(int r)
{
	return r < 0 ? errno : 0;
}

static void probe(int *res)
{
	char p[128];
	int fd;
	res[P_NULL] = probe_errno(fd = open("/dev/null", O_RDWR | O_CLOEXEC));
	if (fd >= 0)
		close(fd);
	res[P_KMSG] = probe_errno(fd = open("/dev/kmsg", O_RDONLY | O_CLOEXEC));
	if (fd >= 0)
		close(fd);
	snprintf(p, sizeof(p), "%s/null", tmp);
	unlink(p);
	res[P_MKNOD_NULL] = probe_errno(mknod(p, S_IFCHR | 0666, makedev(1, 3)));
	res[P_OPEN_MADE_NULL] = probe_errno(fd = open(p, O_WRONLY | O_CLOEXEC));
	if (fd >= 0)
		close(fd);
	unlink(p);
	snprintf(p, sizeof(p), "%s/mem", tmp);
	res[P_MKNOD_MEM] = probe_errno(mknod(p, S_IFCHR | 0600, makedev(1, 1)));
	unlink(p);
	snprintf(p, sizeof(p), "%s/loop", tmp);
	res[P_MKNOD_BLOCK] = probe_errno(mknod(p, S_IFBLK | 0600, makedev(7, 0)));
	unlink(p);
}

/* Runs the probes in a child that first joins the group. */
static void probe_in(const struct cgroup *cg, int *res)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int r[NR_PROBES] = { 0 };
		int fd = open(cgroup_procs_files(cg)[0], O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "0", 1) != 1)
			_exit(2);
		close(fd);
		probe(r);
		_exit(write(p[1], r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 3);
	}
	close(p[1]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(read(p[0], res, NR_PROBES * sizeof(int)), NR_PROBES * sizeof(int));
	close(p[0]);
}

static const char *skip_reason(void)
{
	if (geteuid() != 0)
		return "needs root";
	if (!mnt)
		return "no writable cgroup2 mount (/sys/fs/cgroup or /sys/fs/cgroup/unified)";
	return NULL;
}

#define NEED_KERNEL() do { const char *why_ = skip_reason(); \
	if (why_) { printf("# skipped: %s\n", why_); skip(); } } while (0)

static struct cgroup *make_group(const char *what)
{
	struct cgroup_config cfg = { .root = mnt, .version = 2, .parent = "herd-test.slice" };
	char name[64];
	snprintf(name, sizeof(name), "%s.%d", what, (int)getpid());
	struct cgroup *cg = NULL;
	struct herd_err err = { 0 };
	if (cgroup_create(&cfg, name, NULL, &cg, &err) < 0)
		fail_msg("create: %s", err.msg);
	return cg;
}

static void remove_group(struct cgroup *cg)
{
	struct herd_err err = { 0 };
	if (cgroup_remove(cg, &err) < 0)
		fail_msg("remove: %s", err.msg);
	cgroup_free(cg);
	char parent[160];
	snprintf(parent, sizeof(parent), "%s/herd-test.slice", mnt);
	rmdir(parent);
}

static void test_real_group(void **state)
{
	NEED_KERNEL();
	/* Outside any device program this process may do all of it: what
	 * fails below fails because of the program. */
	int host[NR_PROBES];
	probe(host);
	for (int i = 0; i < NR_PROBES; i++)
		if (host[i]) {
			printf("# skipped: probe %d fails outside the group too: %s\n", i,
			       strerror(host[i]));
			skip();
		}

	struct cgroup *cg = make_group("devf");
	struct herd_err err = { 0 };
	uint32_t id, flags;
	assert_int_equal(attached(cgroup_path(cg), &id, &flags), 0);
	size_t fds = open_fds();
	assert_int_equal(cgroup_allow_devices(cg, NULL, 0, &err), 0);
	assert_int_equal(open_fds(), fds);   /* no fd outlives the call */
	assert_int_equal(attached(cgroup_path(cg), &id, &flags), 1);
	assert_int_equal(flags, 0);          /* not BPF_F_ALLOW_MULTI */
	uint32_t first = id;

	int r[NR_PROBES];
	probe_in(cg, r);
	assert_int_equal(r[P_NULL], 0);
	assert_int_equal(r[P_KMSG], EPERM);        /* a host node not listed */
	assert_int_equal(r[P_MKNOD_NULL], 0);      /* a standard device, made anew */
	assert_int_equal(r[P_OPEN_MADE_NULL], 0);
	assert_int_equal(r[P_MKNOD_MEM], EPERM);   /* root's mknod of another device */
	assert_int_equal(r[P_MKNOD_BLOCK], EPERM);

	/* Attaching again (a restarted task) replaces the program. */
	const char *devs[] = { "/dev/kmsg" };
	assert_int_equal(cgroup_allow_devices(cg, devs, 1, &err), 0);
	assert_int_equal(attached(cgroup_path(cg), &id, &flags), 1);
	assert_int_not_equal(id, first);
	probe_in(cg, r);
	assert_int_equal(r[P_NULL], 0);
	assert_int_equal(r[P_KMSG], 0);
	assert_int_equal(r[P_MKNOD_MEM], EPERM);

	/* Removing the group frees the program (the kernel does it after
	 * the group's last reference goes, on a workqueue: wait for it). */
	remove_group(cg);
	int gone = 0;
	for (int i = 0; i < 30000 && !gone; i++) {
		union bpf_attr a;
		memset(&a, 0, sizeof(a));
		a.prog_id = id;
		int fd = (int)sys_bpf(BPF_PROG_GET_FD_BY_ID, &a);
		if (fd >= 0)
			close(fd);
		else if (errno == ENOENT)
			gone = 1;
		else
			fail_msg("BPF_PROG_GET_FD_BY_ID: %s", strerror(errno));
		if (!gone)
			usleep(1000);
	}
	assert_true(gone);
}

static void test_load_fd_is_close_on_exec(void **state)
{
	NEED_KERNEL();
	struct herd_err err = { 0 };
	int fd = devfilter_load(standard_and_gpu, NR(standard_and_gpu), &err);
	if (fd < 0)
		fail_msg("load: %s", err.msg);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);

	/* the longest program there can be passes the verifier too */
	static struct devfilter_rule many[DEVFILTER_MAX_RULES];
	for (size_t i = 0; i < NR(many); i++)
		many[i] = (struct devfilter_rule){ B, (int32_t)i, (int32_t)i, R | M };
	assert_int_equal(emit(many, NR(many)), DEVFILTER_INSNS(NR(many)));
	fd = devfilter_load(many, NR(many), &err);
	if (fd < 0)
		fail_msg("load of %zu rules: %s", NR(many), err.msg);
	close(fd);
}

/* Without CAP_BPF and CAP_SYS_ADMIN the kernel refuses: the error says so
 * (the exec driver then fails the start, as on v1 without a devices
 * hierarchy). */
static void test_refused_without_capabilities(void **state)
{
	NEED_KERNEL();
	struct cgroup *cg = make_group("nocap");
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
		struct __user_cap_data_struct d[2];
		struct herd_err err = { 0 };
		if (syscall(SYS_capget, &h, d) < 0)
			_exit(2);
		for (int i = 0; i < 2; i++) {
			uint32_t drop = 0;
			if (CAP_SYS_ADMIN / 32 == i)
				drop |= 1u << (CAP_SYS_ADMIN % 32);
			if (CAP_BPF / 32 == i)
				drop |= 1u << (CAP_BPF % 32);
			d[i].effective &= ~drop;
			d[i].permitted &= ~drop;
		}
		if (syscall(SYS_capset, &h, d) < 0)
			_exit(3);
		int rc = cgroup_allow_devices(cg, NULL, 0, &err);
		dprintf(p[1], "%d %s", rc, err.msg);
		_exit(0);
	}
	close(p[1]);
	char buf[600] = { 0 };
	ssize_t n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_true(n > 0);
	printf("# %s\n", buf);
	assert_int_equal(strtol(buf, NULL, 10), -EPERM);
	assert_non_null(strstr(buf, "BPF_PROG_LOAD"));
	assert_non_null(strstr(buf, "CAP_BPF"));
	assert_non_null(strstr(buf, cgroup_path(cg)));
	uint32_t id, flags;
	assert_int_equal(attached(cgroup_path(cg), &id, &flags), 0);
	remove_group(cg);
}

static void test_not_a_cgroup(void **state)
{
	NEED_KERNEL();
	struct herd_err err = { 0 };
	static const struct devfilter_rule null[] = { { C, 1, 3, RWM } };
	assert_int_equal(devfilter_attach(tmp, null, 1, &err), -EBADF);
	assert_non_null(strstr(err.msg, "not a cgroup v2 directory"));
}

static int setup(void **state)
{
	if (!mkdtemp(tmp))
		return -1;
	static const char *const mounts[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	for (size_t i = 0; i < NR(mounts); i++) {
		char p[64];
		snprintf(p, sizeof(p), "%s/cgroup.procs", mounts[i]);
		/* cgroup.threads is v2's alone */
		char t[64];
		snprintf(t, sizeof(t), "%s/cgroup.threads", mounts[i]);
		if (access(p, W_OK) == 0 && access(t, F_OK) == 0) {
			mnt = mounts[i];
			break;
		}
	}
	return 0;
}

/* What a failed test left behind (a passing one removes its groups). */
static int teardown(void **state)
{
	if (mnt) {
		static const char *const groups[] = { "devf", "nocap" };
		char p[160];
		for (size_t i = 0; i < NR(groups); i++) {
			snprintf(p, sizeof(p), "%s/herd-test.slice/%s.%d", mnt, groups[i],
				 (int)getpid());
			rmdir(p);
		}
		snprintf(p, sizeof(p), "%s/herd-test.slice", mnt);
		rmdir(p);
	}
	return rmdir(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_standard_list_and_gpus),
		cmocka_unit_test(test_empty_list_and_any),
		cmocka_unit_test(test_random_lists_match_the_rules),
		cmocka_unit_test(test_malformed_rules),
		cmocka_unit_test(test_real_group),
		cmocka_unit_test(test_load_fd_is_close_on_exec),
		cmocka_unit_test(test_refused_without_capabilities),
		cmocka_unit_test(test_not_a_cgroup),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
