#!/usr/bin/env python3
"""bench_agent_idle: the footprint of an idle `herd agent -dev` (issue 6).

    bench_agent_idle.py HERD [--runs N] [--settle S] [--window W] [--gpu-sim FILE --sim-lib LIB]

Each run starts a fresh `herd agent -dev -http-port 0` (server and client in
one process, its own temporary data dir), lets it idle for S seconds
(default 30), reads its resident set (VmRSS, and VmHWM, the peak, from
/proc/<pid>/status), then reads its CPU time (utime + stime of
/proc/<pid>/stat, in clock ticks) at the start and end of a W-second window
(default 60) and reports the share of one core it used.  Prints one line per
run and the medians; exit status 1 when a median misses its target
(RSS under 20 MiB, CPU under 0.5% of a core), so `meson test --benchmark`
shows a miss.  With --gpu-sim the agent fingerprints simulated GPUs (their
stats are sampled every gpu { stats_period }, 10 s)."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

RSS_TARGET_KIB = 20 * 1024
CPU_TARGET_PCT = 0.5


def status_kib(pid, key):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith(key + ':'):
                return int(line.split()[1])
    raise RuntimeError(f'{key} not in /proc/{pid}/status')


def cpu_ticks(pid):
    with open(f'/proc/{pid}/stat') as f:
        rest = f.read().rsplit(')', 1)[1].split()
    # fields 14 and 15 (utime, stime); rest starts at field 3
    return int(rest[11]) + int(rest[12])


def threads(pid):
    return len(os.listdir(f'/proc/{pid}/task'))


def one_run(args):
    env = dict(os.environ)
    cmd = [args.herd, 'agent', '-dev', '-http-port', '0']
    if args.gpu_sim:
        cmd += ['-gpu-sim', args.gpu_sim]
        env['HERD_NVML_LIBRARY'] = args.sim_lib
    with tempfile.TemporaryDirectory(prefix='herd-bench-idle-') as d:
        cmd += ['-data-dir', d]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                             text=True)
        try:
            line = p.stdout.readline()
            while line and not line.startswith('http port '):
                line = p.stdout.readline()
            if not line:
                raise RuntimeError('the agent did not start')
            time.sleep(args.settle)
            rss, hwm, nthr = status_kib(p.pid, 'VmRSS'), status_kib(p.pid, 'VmHWM'), threads(p.pid)
            hz = os.sysconf('SC_CLK_TCK')
            t0, c0 = time.monotonic(), cpu_ticks(p.pid)
            time.sleep(args.window)
            t1, c1 = time.monotonic(), cpu_ticks(p.pid)
            cpu = 100.0 * (c1 - c0) / hz / (t1 - t0)
        finally:
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    return rss, hwm, nthr, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('herd')
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--settle', type=float, default=30)
    ap.add_argument('--window', type=float, default=60)
    ap.add_argument('--gpu-sim')
    ap.add_argument('--sim-lib')
    args = ap.parse_args()
    rss_l, cpu_l = [], []
    for i in range(args.runs):
        rss, hwm, nthr, cpu = one_run(args)
        rss_l.append(rss)
        cpu_l.append(cpu)
        print(f'run {i + 1}: rss {rss / 1024:.1f} MiB (peak {hwm / 1024:.1f} MiB), '
              f'{nthr} threads, cpu {cpu:.3f}% of a core over {args.window:g} s', flush=True)
    rss_m, cpu_m = statistics.median(rss_l), statistics.median(cpu_l)
    print(f'agent -dev idle: median rss {rss_m / 1024:.1f} MiB (target < {RSS_TARGET_KIB // 1024}), '
          f'median cpu {cpu_m:.3f}% of a core (target < {CPU_TARGET_PCT}) over {args.runs} runs')
    return 0 if rss_m < RSS_TARGET_KIB and cpu_m < CPU_TARGET_PCT else 1


if __name__ == '__main__':
    sys.exit(main())
