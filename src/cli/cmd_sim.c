/* herd sim: replay a cluster trace through the placement engine and print
 * the figures of the FGD paper's evaluation (docs/scheduling.md). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "sched/sim.h"

#define MAX_FILE (256 << 20)
#define MAX_SEEDS 1000

static int read_file(const char *path, struct strbuf *sb)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char buf[65536];
	ssize_t n;

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		strbuf_add(sb, buf, (size_t)n);
		if (sb->len > MAX_FILE) {
			close(fd);
			return -EFBIG;
		}
	}
	close(fd);
	return n < 0 ? -errno : 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct stats {
	double mean, sd;
};

static struct stats stats_of(const double *v, int n)
{
	struct stats s = { 0, 0 };
	int k = 0;
	for (int i = 0; i < n; i++)
		if (!isnan(v[i])) {
			s.mean += v[i];
			k++;
		}
	if (!k)
		return (struct stats){ NAN, NAN };
	s.mean /= k;
	for (int i = 0; i < n; i++)
		if (!isnan(v[i]))
			s.sd += (v[i] - s.mean) * (v[i] - s.mean);
	s.sd = k > 1 ? sqrt(s.sd / (k - 1)) : 0;
	return s;
}

static int parse_seeds(const char *s, int64_t *lo, int64_t *hi)
{
	char *end;
	unsigned long long a, b;
	errno = 0;
	a = strtoull(s, &end, 10);
	if (end == s || errno)
		return -1;
	b = a;
	if (*end == '-') {
		const char *t = end + 1;
		b = strtoull(t, &end, 10);
		if (end == t || errno)
			return -1;
	}
	if (*end || b < a || b - a >= MAX_SEEDS)
		return -1;
	*lo = (int64_t)a;
	*hi = (int64_t)b;
	return 0;
}

static json_t *num(double v)
{
	return isnan(v) ? json_null() : json_real(round(v * 1000) / 1000);
}

int cmd_sim(int argc, char **argv)
{
	const char *nodes = NULL, *pods = NULL, *policies = "random,dotprod,clustering,packing,bestfit,fgd,herd";
	const char *seeds = "42-51", *tune_s = "1.3", *curve = NULL;
	bool json = false;
	const struct flag flags[] = {
		{ "nodes", FLAG_STRING, &nodes, "node list CSV (default: $HERD_TRACES or ../shared/traces/openb, gpu nodes)" },
		{ "pods", FLAG_STRING, &pods, "pod list CSV (default: the same folder, openb_pod_list_default.csv)" },
		{ "policy", FLAG_STRING, &policies, "policies, comma-separated (default: the paper's six and herd)" },
		{ "seeds", FLAG_STRING, &seeds, "seed or range A-B (default 42-51)" },
		{ "tune", FLAG_STRING, &tune_s, "inflate the trace to this x GPU capacity (default 1.3)" },
		{ "json", FLAG_BOOL, &json, "print JSON" },
		{ "curve", FLAG_STRING, &curve, "write allocation % against arrived % (CSV) to this file" },
		{ NULL, 0, NULL, NULL },
	};
	const struct command_help help = {
		"herd sim [options]",
		"Replays a cluster trace (the Alibaba GPU trace 2023 format) through the placement\n"
		"engine the way the FGD paper evaluates schedulers, and prints per policy the GPU\n"
		"allocation ratio at arrived workload 100% and 130% (mean and sd over seeds), the\n"
		"fragmentation ratio at 50/70/90%, unallocated GPUs at 100% and the time per placement.",
		flags,
	};
	enum sched_policy pol[SCHED_NPOLICIES * 4];
	int npol = 0, rc = 1, i = flags_parse(&help, argc, argv);
	int64_t lo, hi;
	double tune;
	char *end, *list, *save = NULL, *np = NULL, *pp = NULL;
	struct strbuf nb = STRBUF_INIT, pb = STRBUF_INIT;
	struct trace t = { 0 };
	struct herd_err err = { 0 };
	struct sched_workload *w = NULL;
	json_t *jres = NULL;
	FILE *cf = NULL;
	double (*curves)[SIM_MAX_BUCKET + 1] = NULL;

	if (i < 0)
		return i == -1 ? 0 : EXIT_USAGE;
	if (i < argc)
		return usage_error(argv[0], "unexpected argument '%s'", argv[i]);
	if (parse_seeds(seeds, &lo, &hi))
		return usage_error(argv[0], "-seeds: expected N or A-B (at most %d seeds), got \"%s\"",
				   MAX_SEEDS, seeds);
	tune = strtod(tune_s, &end);
	if (*end || end == tune_s || !(tune >= 1.0 && tune <= 2.0))
		return usage_error(argv[0], "-tune: expected a number 1..2, got \"%s\"", tune_s);
	list = xstrdup(policies);
	for (char *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		if (npol == (int)(sizeof(pol) / sizeof(pol[0])) || sched_policy_parse(p, &pol[npol])) {
			usage_error(argv[0], "-policy: unknown policy \"%s\" (herd, binpack, spread, random, "
				    "dotprod, clustering, packing, bestfit, fgd)", p);
			free(list);
			return EXIT_USAGE;
		}
		npol++;
	}
	free(list);
	if (!npol)
		return usage_error(argv[0], "-policy: expected at least one policy");
	if (!nodes || !pods) {
		const char *dir = getenv("HERD_TRACES") ? getenv("HERD_TRACES") : "../shared/traces/openb";
		if (!nodes)
			nodes = np = xasprintf("%s/openb_node_list_gpu_node.csv", dir);
		if (!pods)
			pods = pp = xasprintf("%s/openb_pod_list_default.csv", dir);
	}
	if ((rc = read_file(nodes, &nb)) || (rc = read_file(pods, &pb))) {
		fprintf(stderr, "herd sim: cannot read %s: %s\n", nb.len ? pods : nodes, strerror(-rc));
		rc = 1;
		goto out;
	}
	if (trace_parse_nodes(&t, nb.buf, nb.len, &err)) {
		fprintf(stderr, "herd sim: %s: %s\n", nodes, err.msg);
		rc = 1;
		goto out;
	}
	if (trace_parse_pods(&t, pb.buf, pb.len, &err)) {
		fprintf(stderr, "herd sim: %s: %s\n", pods, err.msg);
		rc = 1;
		goto out;
	}
	if (curve && !(cf = fopen(curve, "we"))) {
		fprintf(stderr, "herd sim: cannot write %s: %s\n", curve, strerror(errno));
		rc = 1;
		goto out;
	}
	w = sim_workload(&t);
	{
		int64_t cap = sim_capacity(&t);
		int nseeds = (int)(hi - lo + 1);
		double *a100 = xcalloc((size_t)nseeds, sizeof(double));
		double *a130 = xcalloc((size_t)nseeds, sizeof(double));
		double *bnd = xcalloc((size_t)nseeds, sizeof(double));
		double *f[3];
		curves = xcalloc((size_t)npol, sizeof(*curves));
		for (int k = 0; k < 3; k++)
			f[k] = xcalloc((size_t)nseeds, sizeof(double));
		jres = json_array();
		if (!json) {
			printf("trace: %zu nodes, %lld GPUs, %zu tasks; seeds %lld-%lld, tune %.2f\n",
			       t.nnodes, (long long)(cap / 1000), t.npods, (long long)lo, (long long)hi, tune);
			printf("%-11s %16s %16s %8s %8s %8s %9s %9s %9s\n", "policy", "alloc@100%", "alloc@130%",
			       "frag@50", "frag@70", "frag@90", "unalloc", "bound", "us/place");
		}
		for (int p = 0; p < npol; p++) {
			double secs = 0;
			size_t placements = 0;
			struct stats s100, s130, fs[3];
			for (int b = 0; b <= SIM_MAX_BUCKET; b++)
				curves[p][b] = 0;
			for (int k = 0; k < nseeds; k++) {
				struct sim_result r;
				double t0 = now_s();
				if (sim_run(&t, w, pol[p], (uint64_t)(lo + k), tune, &r, &err)) {
					fprintf(stderr, "herd sim: %s\n", err.msg);
					rc = 1;
					free(a100); free(a130); free(bnd);
					for (int q = 0; q < 3; q++)
						free(f[q]);
					goto out;
				}
				secs += now_s() - t0;
				placements += r.placements;
				a100[k] = r.alloc_100;
				a130[k] = r.alloc_130;
				bnd[k] = r.bound_100 / 1000.0;
				f[0][k] = r.frag_50;
				f[1][k] = r.frag_70;
				f[2][k] = r.frag_90;
				for (int b = 0; b <= SIM_MAX_BUCKET; b++)
					curves[p][b] += r.curve[b] / nseeds;
			}
			s100 = stats_of(a100, nseeds);
			s130 = stats_of(a130, nseeds);
			for (int k = 0; k < 3; k++)
				fs[k] = stats_of(f[k], nseeds);
			{
				double unalloc = (100.0 - s100.mean) / 100.0 * (double)cap / 1000.0;
				double us = placements ? secs * 1e6 / (double)placements : 0;
				if (json) {
					json_array_append_new(jres, json_pack("{s:s, s:i, s:{s:o, s:o}, s:{s:o, s:o}, s:{s:o, s:o, s:o}, s:o, s:o}",
						"policy", sched_policy_name(pol[p]), "seeds", nseeds,
						"alloc_100", "mean", num(s100.mean), "sd", num(s100.sd),
						"alloc_130", "mean", num(s130.mean), "sd", num(s130.sd),
						"frag_ratio", "50", num(fs[0].mean), "70", num(fs[1].mean), "90", num(fs[2].mean),
						"unalloc_gpus_100", num(unalloc), "us_per_placement", num(us)));
				} else {
					/* bound: no policy can leave fewer GPUs unallocated */
					printf("%-11s %8.2f ± %5.2f %8.2f ± %5.2f %7.2f%% %7.2f%% %7.2f%% %9.1f %9.1f %9.2f\n",
					       sched_policy_name(pol[p]), s100.mean, s100.sd, s130.mean, s130.sd,
					       fs[0].mean, fs[1].mean, fs[2].mean, unalloc,
					       stats_of(bnd, nseeds).mean, us);
					fflush(stdout);
				}
			}
		}
		if (json) {
			json_t *top = json_pack("{s:i, s:I, s:o}", "nodes", (int)t.nnodes, "gpus",
						(json_int_t)(cap / 1000), "results", jres);
			jres = NULL;
			json_dumpf(top, stdout, JSON_PRESERVE_ORDER | JSON_COMPACT);
			printf("\n");
			json_decref(top);
		}
		if (cf) {
			fprintf(cf, "arrived");
			for (int p = 0; p < npol; p++)
				fprintf(cf, ",%s", sched_policy_name(pol[p]));
			fprintf(cf, "\n");
			for (int b = 0; b <= (int)lround(tune * 100); b++) {
				fprintf(cf, "%d", b);
				for (int p = 0; p < npol; p++)
					if (isnan(curves[p][b]))
						fprintf(cf, ",");
					else
						fprintf(cf, ",%.3f", curves[p][b]);
				fprintf(cf, "\n");
			}
		}
		free(a100);
		free(a130);
		free(bnd);
		for (int k = 0; k < 3; k++)
			free(f[k]);
	}
	rc = 0;
out:
	if (cf && fclose(cf) && !rc) {
		fprintf(stderr, "herd sim: cannot write %s\n", curve);
		rc = 1;
	}
	json_decref(jres);
	free(curves);
	sched_workload_free(w);
	trace_release(&t);
	strbuf_release(&nb);
	strbuf_release(&pb);
	free(np);
	free(pp);
	return rc;
}
