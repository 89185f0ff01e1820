/* The cgroup v2 device program, emitted, loaded and attached by hand; see
 * devfilter_bpf.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/xalloc.h"
#include "drivers/devfilter_bpf.h"

/* Registers of the program.  r1 holds the context on entry; r6 is a
 * scratch register (no helper is called, so nothing clobbers it). */
enum { R0, R1, R2, R3, R4, R5, R6 };
enum { R_ACCESS = R2, R_TYPE = R3, R_MAJOR = R4, R_MINOR = R5, R_TMP = R6 };

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	return (struct bpf_insn){ .code = code, .dst_reg = dst, .src_reg = src, .off = off,
				   .imm = imm };
}

/* dst = *(u32 *)(R1 + off) */
static struct bpf_insn ld_ctx(uint8_t dst, int16_t off)
{
	return insn(BPF_LDX | BPF_MEM | BPF_W, dst, R1, off, 0);
}

static struct bpf_insn alu_k(uint8_t op, uint8_t dst, int32_t imm)
{
	return insn(BPF_ALU64 | op | BPF_K, dst, 0, 0, imm);
}

static struct bpf_insn jne_k(uint8_t dst, int32_t imm, int16_t off)
{
	return insn(BPF_JMP | BPF_JNE | BPF_K, dst, 0, off, imm);
}

static struct bpf_insn exit_insn(void)
{
	return insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

static int check_rule(const struct devfilter_rule *r, size_t i, struct herd_err *err)
{
	if (r->type != 'a' && r->type != 'b' && r->type != 'c')
		return herd_errf(err, -EINVAL, "device rule %zu: type '%c': expected a, b or c", i,
				 r->type ? r->type : '?');
	if (r->major < DEVFILTER_ANY || r->minor < DEVFILTER_ANY)
		return herd_errf(err, -EINVAL, "device rule %zu: major/minor %d:%d", i,
				 (int)r->major, (int)r->minor);
	if (!r->access || (r->access & ~(unsigned)DEVFILTER_RWM))
		return herd_errf(err, -EINVAL, "device rule %zu: access %#x: expected some of "
				 "mknod, read, write", i, r->access);
	return 0;
}

/* Writes one rule's block at out (room for 8): a jump past the block for
 * each field that does not match, then "return 1". */
static size_t emit_rule(const struct devfilter_rule *r, struct bpf_insn *out)
{
	struct bpf_insn b[8];
	size_t n = 0;
	if (r->type != 'a')
		b[n++] = jne_k(R_TYPE, r->type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK, 0);
	if (r->major != DEVFILTER_ANY)
		b[n++] = jne_k(R_MAJOR, r->major, 0);
	if (r->minor != DEVFILTER_ANY)
		b[n++] = jne_k(R_MINOR, r->minor, 0);
	if (r->access != DEVFILTER_RWM) {
		/* every bit asked for must be allowed: (asked & ~allowed) == 0 */
		b[n++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, R_TMP, R_ACCESS, 0, 0);
		b[n++] = alu_k(BPF_AND, R_TMP, (int32_t)(~r->access & DEVFILTER_RWM));
		b[n++] = jne_k(R_TMP, 0, 0);
	}
	b[n++] = alu_k(BPF_MOV, R0, 1);
	b[n++] = exit_insn();
	/* the jumps land on the instruction after the block */
	for (size_t i = 0; i < n; i++) {
		if (b[i].code == (BPF_JMP | BPF_JNE | BPF_K))
			b[i].off = (int16_t)(n - i - 1);
		out[i] = b[i];
	}
	return n;
}

int devfilter_emit(const struct devfilter_rule *rules, size_t n, struct bpf_insn *out,
		   size_t cap, struct herd_err *err)
{
	if (n > DEVFILTER_MAX_RULES)
		return herd_errf(err, -E2BIG, "%zu device rules: at most %d", n,
				 DEVFILTER_MAX_RULES);
	if (cap < DEVFILTER_INSNS(n))
		return herd_errf(err, -E2BIG, "device program: room for %zu instructions, "
				 "%zu needed", cap, DEVFILTER_INSNS(n));
	for (size_t i = 0; i < n; i++) {
		int rc = check_rule(&rules[i], i, err);
		if (rc < 0)
			return rc;
	}
	size_t k = 0;
	/* access_type is (BPF_DEVCG_ACC_* << 16) | BPF_DEVCG_DEV_* */
	out[k++] = ld_ctx(R_ACCESS, offsetof(struct bpf_cgroup_dev_ctx, access_type));
	out[k++] = insn(BPF_ALU64 | BPF_MOV | BPF_X, R_TYPE, R_ACCESS, 0, 0);
	out[k++] = alu_k(BPF_AND, R_TYPE, 0xffff);
	out[k++] = alu_k(BPF_RSH, R_ACCESS, 16);
	out[k++] = ld_ctx(R_MAJOR, offsetof(struct bpf_cgroup_dev_ctx, major));
	out[k++] = ld_ctx(R_MINOR, offsetof(struct bpf_cgroup_dev_ctx, minor));
	for (size_t i = 0; i < n; i++)
		k += emit_rule(&rules[i], out + k);
	out[k++] = alu_k(BPF_MOV, R0, 0);
	out[k++] = exit_insn();
	return (int)k;
}

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* Why the kernel may have said no, for the message. */
static const char *load_hint(int e, bool verifier_said)
{
	switch (e) {
	case EPERM:
	case EACCES:
		return verifier_said ? "" : " (the agent needs CAP_BPF or CAP_SYS_ADMIN)";
	case EINVAL:
		return verifier_said ? "" : " (a kernel without CONFIG_CGROUP_BPF?)";
	case ENOSYS:
		return " (a kernel without bpf(2): CONFIG_BPF_SYSCALL)";
	default:
		return "";
	}
}

/* The last non-empty line of the verifier's log. */
static const char *last_line(char *log)
{
	size_t len = strlen(log);
	while (len && (log[len - 1] == '\n' || log[len - 1] == ' '))
		log[--len] = '\0';
	char *nl = strrchr(log, '\n');
	return nl ? nl + 1 : log;
}

int devfilter_load(const struct devfilter_rule *rules, size_t n, struct herd_err *err)
{
	size_t cap = DEVFILTER_INSNS(n);
	struct bpf_insn *prog = xcalloc(cap, sizeof(*prog));
	int k = devfilter_emit(rules, n, prog, cap, err);
	if (k < 0) {
		free(prog);
		return k;
	}
	static const char license[] = "MPL-2.0";
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	attr.expected_attach_type = BPF_CGROUP_DEVICE;
	attr.insns = (uint64_t)(uintptr_t)prog;
	attr.insn_cnt = (uint32_t)k;
	attr.license = (uint64_t)(uintptr_t)license;
	snprintf(attr.prog_name, sizeof(attr.prog_name), "herd_devices");
	/* bpf(2) has made its fds O_CLOEXEC since it exists (4.x); no flag
	 * asks for it, so it is checked below rather than assumed. */
	int fd = (int)sys_bpf(BPF_PROG_LOAD, &attr);
	int rc = 0;
	if (fd < 0) {
		int e = errno;
		/* Again with the verifier's log: its last line says why (a
		 * rejected program is a bug here, not the machine's). */
		char *log = xcalloc(1, 65536);
		attr.log_level = 1;
		attr.log_buf = (uint64_t)(uintptr_t)log;
		attr.log_size = 65536;
		int fd2 = (int)sys_bpf(BPF_PROG_LOAD, &attr);
		if (fd2 >= 0)
			close(fd2);
		const char *why = last_line(log);
		rc = herd_errf(err, -e, "device filter: BPF_PROG_LOAD: %s%s%s%s", strerror(e),
			       *why ? ": " : "", why, load_hint(e, *why));
		free(log);
	} else {
		int fl = fcntl(fd, F_GETFD);
		if (fl < 0 || (!(fl & FD_CLOEXEC) && fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)) {
			rc = herd_errf(err, -errno, "device filter: close-on-exec: %s",
				       strerror(errno));
			close(fd);
		}
	}
	free(prog);
	return rc < 0 ? rc : fd;
}

int devfilter_attach(const char *dir, const struct devfilter_rule *rules, size_t n,
		     struct herd_err *err)
{
	int cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg < 0)
		return herd_errf(err, -errno, "cgroup %s: %s", dir, strerror(errno));
	int prog = devfilter_load(rules, n, err);
	if (prog < 0) {
		close(cg);
		return herd_err_prefix(err, "cgroup %s", dir);
	}
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.target_fd = (uint32_t)cg;
	attr.attach_bpf_fd = (uint32_t)prog;
	attr.attach_type = BPF_CGROUP_DEVICE;
	attr.attach_flags = 0;   /* one program per group; see the header */
	int rc = 0;
	if (sys_bpf(BPF_PROG_ATTACH, &attr) < 0) {
		int e = errno;
		const char *hint =
			e == EPERM ? " (an ancestor group holds a device program that allows "
				     "none below it, or the agent lacks CAP_BPF/CAP_SYS_ADMIN)"
			: e == EBADF ? " (not a cgroup v2 directory)"
			: e == EINVAL ? " (a kernel without CONFIG_CGROUP_BPF?)" : "";
		rc = herd_errf(err, -e, "cgroup %s: device filter: BPF_PROG_ATTACH: %s%s", dir,
			       strerror(e), hint);
	}
	/* Attached, the group holds the program; these fds are done. */
	close(prog);
	close(cg);
	return rc;
}
