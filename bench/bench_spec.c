/* Times spec_load (parse + convert + decode + validate) of a job file:
 *   bench_spec FILE [RUNS]
 * prints the median, minimum and maximum of RUNS (default 21) in ms of wall
 * time, and the median CPU time of the process (which waiting for a busy
 * CPU does not inflate).  The target for a 1 MiB file is a median under
 * 20 ms (docs/jobspec.md). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "common/strbuf.h"
#include "common/units.h"
#include "spec/spec.h"

static double clock_ms(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	struct strbuf text = STRBUF_INIT;
	int64_t runs = 21;
	double *ms, *cpu_ms;
	size_t groups = 0, tasks = 0;
	FILE *f;
	char buf[65536];
	size_t n;

	if (argc < 2 || (argc > 2 && parse_int64(argv[2], 1, 10000, &runs, NULL) < 0)) {
		fprintf(stderr, "usage: bench_spec FILE [RUNS]\n");
		return 2;
	}
	f = fopen(argv[1], "re");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		strbuf_add(&text, buf, n);
	fclose(f);
	ms = calloc((size_t)runs, sizeof(double));
	cpu_ms = calloc((size_t)runs, sizeof(double));
	for (int64_t i = 0; i < runs; i++) {
		struct diag_list dl;
		double t0 = clock_ms(CLOCK_MONOTONIC), c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);
		struct job *job;

		diag_list_init(&dl);
		job = spec_load(text.buf, text.len, &dl);
		ms[i] = clock_ms(CLOCK_MONOTONIC) - t0;
		cpu_ms[i] = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
		if (!job) {
			diag_print(&dl, argv[1], stderr);
			return 1;
		}
		groups = job->ngroups;
		tasks = 0;
		for (size_t g = 0; g < job->ngroups; g++)
			tasks += job->groups[g].ntasks;
		job_free(job);
		diag_list_release(&dl);
	}
	qsort(ms, (size_t)runs, sizeof(double), cmp_double);
	qsort(cpu_ms, (size_t)runs, sizeof(double), cmp_double);
	printf("spec_load %s: %zu bytes, %zu groups, %zu tasks; %lld runs: median %.2f ms "
	       "(min %.2f, max %.2f); cpu median %.2f ms\n", argv[1], text.len, groups, tasks,
	       (long long)runs, ms[runs / 2], ms[0], ms[runs - 1], cpu_ms[runs / 2]);
	free(ms);
	free(cpu_ms);
	strbuf_release(&text);
	return 0;
}
