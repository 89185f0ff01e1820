/* bench_gpu: cost of fingerprinting and of sampling stats, against the
 * simulated NVML.
 *
 *   ninja -C build bench/bench_gpu
 *   HERD_NVML_SIM_LIB=build/src/gpu/sim/libherd-nvml-sim.so build/bench/bench_gpu [ROUNDS]
 *
 * Describes 8 GPUs with 7 MIG instances each (56 devices) plus NVLink, writes
 * it to a temp file, then times gpu_host_open (load + init + full
 * fingerprint + topology + attributes) and one stats sample of every device.
 * Prints the median and worst of ROUNDS rounds and the share of one core
 * that sampling 8 devices every 10 s would take.  Goals (issue 3): full
 * fingerprint under 5 ms; stats under 1% of a core on an 8-GPU node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu/gpu.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void write_machine(const char *path, bool mig)
{
	FILE *f = fopen(path, "we");
	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f, "{\"driver_version\": \"550.54.15\", \"cuda_version\": \"12.4\", \"gpus\": [");
	for (int i = 0; i < 8; i++) {
		fprintf(f, "%s{\"name\": \"NVIDIA H100 80GB HBM3\", \"memory_mib\": 81559,"
			" \"compute_capability\": \"9.0\", \"sm_count\": 132, \"numa_node\": %d,"
			" \"cpu_affinity\": \"%s\", \"power_limit_w\": 700, \"power_draw_w\": 400,"
			" \"max_sm_clock_mhz\": 1980, \"max_mem_clock_mhz\": 2619, \"temperature_c\": 50,"
			" \"persistence_mode\": true, \"display_mode\": false, \"nvswitch_links\": 18,"
			" \"ecc_corrected\": 0, \"ecc_uncorrected\": 0, \"utilization_gpu\": 50,"
			" \"processes\": [{\"pid\": %d, \"memory_mib\": 1000}]",
			i ? "," : "", i / 4, i < 4 ? "0-55,112-167" : "56-111,168-223", 1000 + i);
		if (mig) {
			fprintf(f, ", \"mig\": {\"enabled\": true, \"instances\": [");
			for (int j = 0; j < 7; j++)
				fprintf(f, "%s{\"profile\": \"1g.10gb\", \"memory_mib\": 9984}", j ? "," : "");
			fprintf(f, "]}");
		}
		fprintf(f, "}");
	}
	fprintf(f, "]}\n");
	fclose(f);
}

static void run(const char *label, const char *path, int rounds, bool report_cpu)
{
	struct gpu_config cfg;
	double *open_ms = calloc((size_t)rounds, sizeof(double));
	double *sample_ms = calloc((size_t)rounds, sizeof(double));
	size_t devs = 0;

	setenv("HERD_NVML_SIM", path, 1);
	gpu_config_init(&cfg);
	cfg.library_path = getenv("HERD_NVML_SIM_LIB");
	for (int r = 0; r < rounds; r++) {
		double t0 = now_ms();
		struct gpu_host *h = gpu_host_open(&cfg);
		double t1 = now_ms();
		if (!h->nvml_loaded) {
			fprintf(stderr, "bench_gpu: %s\n", h->reason);
			exit(1);
		}
		devs = h->nr_devs;
		struct gpu_stats s;
		double t2 = now_ms();
		for (size_t i = 0; i < h->nr_devs; i++)
			if (gpu_host_sample(h, i, &s, NULL) < 0)
				exit(1);
		double t3 = now_ms();
		gpu_host_free(h);
		open_ms[r] = t1 - t0;
		sample_ms[r] = t3 - t2;
	}
	qsort(open_ms, (size_t)rounds, sizeof(double), cmp);
	qsort(sample_ms, (size_t)rounds, sizeof(double), cmp);
	printf("%-22s devices %3zu  fingerprint median %.3f ms (worst %.3f)  "
	       "stats of all devices median %.4f ms (worst %.4f)\n",
	       label, devs, open_ms[rounds / 2], open_ms[rounds - 1], sample_ms[rounds / 2],
	       sample_ms[rounds - 1]);
	if (report_cpu)
		printf("%-22s sampling every 10 s costs %.5f%% of one core\n", "",
		       sample_ms[rounds / 2] / 10000.0 * 100.0);
	free(open_ms);
	free(sample_ms);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 200;
	char path[64];
	if (!getenv("HERD_NVML_SIM_LIB")) {
		fprintf(stderr, "bench_gpu: set HERD_NVML_SIM_LIB to the simulated NVML\n");
		return 2;
	}
	if (rounds < 1)
		rounds = 1;
	snprintf(path, sizeof(path), "/tmp/bench-gpu-%d.json", (int)getpid());
	write_machine(path, true);
	run("8 GPUs x 7 MIG", path, rounds, false);
	write_machine(path, false);
	run("8 whole GPUs", path, rounds, true);
	unlink(path);
	return 0;
}
