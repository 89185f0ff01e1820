/* devfilter_bpf: the device allow list of a cgroup v2 group, as an eBPF
 * program (private to src/drivers; docs/drivers.md "exec").
 *
 * cgroup v2 has no devices.allow file.  Instead the kernel runs the
 * BPF_PROG_TYPE_CGROUP_DEVICE programs attached to a process's group (and
 * those attached with BPF_F_ALLOW_MULTI to its ancestors) at every mknod
 * and every open of a device node; access is granted only when each says 1.
 * It needs no controller in cgroup.subtree_control, only a kernel built with
 * CONFIG_CGROUP_BPF and a caller with CAP_BPF or CAP_SYS_ADMIN.
 *
 * devfilter_emit writes the program for an allow list (the rules cgroup
 * v1's devices.allow takes: type, major, minor or any, access), by hand:
 * a few loads from struct bpf_cgroup_dev_ctx and one compare-and-jump block
 * per rule, with no helper calls and no maps, so no libbpf.  The program
 * answers 1 for the first rule that matches and 0 when none does.
 *
 * Who owns what:
 *   devfilter_load returns a program fd, close-on-exec, that the caller
 *     owns and closes.
 *   devfilter_attach opens the cgroup directory and loads the program
 *     itself and closes both fds before it returns.  From then on the
 *     group's attachment holds the only reference to the program: the
 *     kernel frees it when the group is removed (rmdir), or when a later
 *     devfilter_attach to the same group replaces it.  It attaches without
 *     BPF_F_ALLOW_MULTI, so a group has one such program (a reused group,
 *     a restarted task, gets the new list instead of a second program
 *     that could only narrow it), and no group below it can attach one of
 *     its own; ancestors' BPF_F_ALLOW_MULTI programs (systemd's) still run.
 *
 * Library code: nothing here prints; errors are -errno with err. */
#ifndef HERD_DRIVERS_DEVFILTER_BPF_H
#define HERD_DRIVERS_DEVFILTER_BPF_H

#include <linux/bpf.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define DEVFILTER_ANY (-1)          /* major or minor: every number */

/* Access bits, the kernel's BPF_DEVCG_ACC_* (v1's "m", "r", "w"). */
enum {
	DEVFILTER_MKNOD = BPF_DEVCG_ACC_MKNOD,
	DEVFILTER_READ = BPF_DEVCG_ACC_READ,
	DEVFILTER_WRITE = BPF_DEVCG_ACC_WRITE,
	DEVFILTER_RWM = BPF_DEVCG_ACC_MKNOD | BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE,
};

/* One allow rule: v1's "c 1:3 rwm" is { 'c', 1, 3, DEVFILTER_RWM }. */
struct devfilter_rule {
	char type;          /* 'c' character, 'b' block, 'a' either */
	int32_t major;      /* 0..2^12-1, or DEVFILTER_ANY */
	int32_t minor;      /* 0..2^20-1, or DEVFILTER_ANY */
	unsigned access;    /* DEVFILTER_* bits allowed; not 0 */
};

#define DEVFILTER_MAX_RULES 256
/* Instructions of a program for n rules: 6 to load and split the context,
 * at most 8 per rule, 2 for the final "deny". */
#define DEVFILTER_INSNS(n) (6 + 8 * (size_t)(n) + 2)

/* Writes the program for rules[0..n) into out (room for cap instructions;
 * DEVFILTER_INSNS(n) always suffices).  Returns the number of
 * instructions, -EINVAL with err for a malformed rule, -E2BIG for more
 * than DEVFILTER_MAX_RULES rules or too little room. */
int devfilter_emit(const struct devfilter_rule *rules, size_t n, struct bpf_insn *out,
		   size_t cap, struct herd_err *err);

/* Loads the program for rules[0..n) (BPF_PROG_LOAD).  Returns a
 * close-on-exec program fd that the caller owns, or -errno with err
 * (-EPERM: no CAP_BPF/CAP_SYS_ADMIN; -EINVAL with no verifier output: a
 * kernel without CONFIG_CGROUP_BPF; -ENOSYS: no bpf(2)). */
int devfilter_load(const struct devfilter_rule *rules, size_t n, struct herd_err *err);

/* Loads the program and attaches it (BPF_PROG_ATTACH, BPF_CGROUP_DEVICE)
 * to the cgroup v2 group at dir, replacing the one attached before.
 * Returns 0 or -errno with err; no fd outlives the call. */
int devfilter_attach(const char *dir, const struct devfilter_rule *rules, size_t n,
		     struct herd_err *err);

#endif
