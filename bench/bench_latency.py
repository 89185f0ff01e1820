#!/usr/bin/env python3
"""Submit-to-started latency and batch throughput on a dev agent.

    HERD_BIN=build/src/cli/herd python3 bench/bench_latency.py [-n 1000] [-t 10000]

Latency: for each of n trivial batch jobs (`sleep 5`), one at a time, the time
from POST /v1/jobs until a blocking query on the job's allocations shows the
allocation running (the client reported the task started).  Prints p50/p99.
Throughput: t batch jobs running `true`, submitted from 8 threads, from the
first submit until every allocation is complete; jobs per second."""
import argparse
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[1]
HERD = os.environ.get('HERD_BIN', str(REPO / 'build/src/cli/herd'))
POLL_S = 1.0


def call(port, path, body=None, method=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f'http://127.0.0.1:{port}{path}', data=data,
                                 method=method or ('POST' if data else 'GET'))
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read()), int(r.headers.get('X-Herd-Index', '0'))
    except urllib.error.HTTPError as e:
        raise SystemExit(f'{method or "GET/POST"} {path}: {e.code} {e.read().decode()}')


def job(jid, command):
    return {'job': {'id': jid, 'type': 'batch', 'groups': [{'name': 'g', 'tasks': [{
        'name': 't', 'driver': 'raw_exec',
        'config': {'command': '/bin/sh', 'args': ['-c', command]},
        'resources': {'cpu': 1, 'memory': 10}}]}]}}


def wait_status(port, jid, statuses):
    index = 0
    while True:
        allocs, index = call(port, f'/v1/job/{jid}/allocations?index={index}&wait=30s')
        if allocs and all(a['client_status'] in statuses for a in allocs):
            return


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('-n', type=int, default=1000)
    ap.add_argument('-t', type=int, default=10000)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix='herd-bench-')
    env = dict(os.environ, TMPDIR=tmp)
    agent = subprocess.Popen([HERD, 'agent', '-dev', '-http-port', '0', '-log-level', 'warn'],
                             stdout=subprocess.PIPE, stderr=open(f'{tmp}/agent.log', 'w'),
                             text=True, env=env)
    try:
        line = agent.stdout.readline()
        while line and not line.startswith('http port'):
            line = agent.stdout.readline()
        port = int(line.split()[2])
        for _ in range(100):
            try:
                if any(n['status'] == 'ready' for n in call(port, '/v1/nodes')[0]):
                    break
            except OSError:
                pass
            time.sleep(0.05)
        lat = []
        for i in range(args.n):
            t0 = time.perf_counter()
            call(port, '/v1/jobs', job(f'lat-{i}', 'sleep 5'))
            wait_status(port, f'lat-{i}', ('running', 'complete'))
            lat.append(time.perf_counter() - t0)
            call(port, f'/v1/job/lat-{i}?purge=true', method='DELETE')
        lat.sort()
        p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000
        print(f'latency over {args.n} jobs: p50 {p(0.5):.1f} ms, p99 {p(0.99):.1f} ms')

        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda i: call(port, '/v1/jobs', job(f'tp-{i}', 'true')), range(args.t)))
        submitted = time.perf_counter() - t0
        # Every allocation of the cluster comes back on each look: look at
        # most every POLL_S seconds, or the bench itself (JSON of 10,000
        # allocations per change) eats the CPU the agent needs.  The figure
        # is late by at most POLL_S.
        # The dev agent garbage-collects allocations a minute after they
        # end: count every one seen ended, not those listed at the end.
        index, ended = 0, set()
        while True:
            allocs, index = call(port, f'/v1/allocations?index={index}&wait=30s')
            ended.update(a['id'] for a in allocs if a['job_id'].startswith('tp-')
                         and a['client_status'] in ('complete', 'failed'))
            if len(ended) >= args.t:
                break
            time.sleep(POLL_S)
        total = time.perf_counter() - t0
        print(f'throughput: {args.t} batch jobs submitted in {submitted:.1f} s, all complete '
              f'in {total:.1f} s: {args.t / total:.0f} jobs/s')
    finally:
        agent.terminate()
        agent.wait(timeout=60)


if __name__ == '__main__':
    sys.exit(main())
