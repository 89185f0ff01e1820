/* noop_task: a task that does nothing and exits 0, built static (musl when
 * the build has musl-gcc) so that a throughput benchmark measures herd
 * rather than the C library's start-up.  /bin/true is dynamically linked:
 * on a VM its loader and glibc's CPU-feature probing (CPUID instructions,
 * each a trap to the hypervisor) take about 0.8 ms of CPU per run, this one
 * about 0.03 ms (`perf stat -r 300 /bin/true` against this binary). */
int main(void)
{
	return 0;
}
