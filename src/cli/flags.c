#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/strbuf.h"
#include "common/units.h"
#include "common/xalloc.h"

int usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see '%s --help')\n", cmd);
	return EXIT_USAGE;
}

static void print_help(const struct command_help *help)
{
	printf("Usage: %s\n\n%s\n", help->usage, help->summary);
	if (help->flags && help->flags[0].name) {
		printf("\nOptions:\n");
		for (const struct flag *f = help->flags; f->name; f++) {
			const char *arg = f->type == FLAG_BOOL ? "" : f->type == FLAG_INT ? " N" : " VALUE";
			char left[64];
			snprintf(left, sizeof(left), "-%s%s", f->name, arg);
			printf("  %-22s %s\n", left, f->help);
		}
	}
	printf("  %-22s %s\n", "-h, --help", "show this help");
}

static const struct flag *find_flag(const struct flag *flags, const char *name, size_t len)
{
	for (const struct flag *f = flags; f && f->name; f++)
		if (strlen(f->name) == len && !strncmp(f->name, name, len))
			return f;
	return NULL;
}

int flags_parse(const struct command_help *help, int argc, char **argv)
{
	const char *cmd = argv[0];
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *name, *eq, *val = NULL;
		const struct flag *f;
		size_t len;

		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-' || !a[1])
			break; /* a positional argument, or "-" for stdin */
		name = a + 1 + (a[1] == '-');
		eq = strchr(name, '=');
		len = eq ? (size_t)(eq - name) : strlen(name);
		if ((len == 1 && name[0] == 'h') || (len == 4 && !strncmp(name, "help", 4))) {
			print_help(help);
			return -1;
		}
		f = find_flag(help->flags, name, len);
		if (!f) {
			usage_error(cmd, "unknown flag -%.*s", (int)len, name);
			return -2;
		}
		if (f->type == FLAG_BOOL) {
			if (eq && strcmp(eq + 1, "true") && strcmp(eq + 1, "false")) {
				usage_error(cmd, "flag -%s takes true or false, got \"%s\"", f->name, eq + 1);
				return -2;
			}
			*(bool *)f->value = !eq || !strcmp(eq + 1, "true");
			continue;
		}
		if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			usage_error(cmd, "flag -%s needs a value", f->name);
			return -2;
		}
		if (f->type == FLAG_STRING) {
			*(const char **)f->value = val;
		} else {
			struct herd_err err;
			if (parse_int64(val, INT64_MIN, INT64_MAX, (int64_t *)f->value, &err) < 0) {
				usage_error(cmd, "flag -%s: %s", f->name, err.msg);
				return -2;
			}
		}
	}
	return i;
}

int dispatch(const char *group, const struct subcommand *cmds, int argc, char **argv)
{
	const struct subcommand *c;
	char *full;
	int rc;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "-help") || !strcmp(argv[1], "help")) {
		if (argc < 2) {
			fprintf(stderr, "%s: missing subcommand (see '%s --help')\n", group, group);
			return EXIT_USAGE;
		}
		printf("Usage: %s <subcommand> [options] [args]\n\nSubcommands:\n", group);
		for (c = cmds; c->name; c++)
			printf("  %-12s %s\n", c->name, c->summary);
		printf("\nRun '%s <subcommand> --help' for a subcommand's options.\n", group);
		return 0;
	}
	for (c = cmds; c->name; c++)
		if (!strcmp(c->name, argv[1]))
			break;
	if (!c->name) {
		fprintf(stderr, "%s: unknown subcommand '%s' (see '%s --help')\n", group, argv[1], group);
		return EXIT_USAGE;
	}
	full = xasprintf("%s %s", group, c->name);
	argv[1] = full;
	rc = c->fn(argc - 1, argv + 1);
	free(full);
	return rc;
}
