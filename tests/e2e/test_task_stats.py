"""End-to-end: task resource usage (issues 6 and 9) on a dev agent.

A raw_exec task holds ~30 MB and spins; the node's client API
(GET /v1/client/allocation/:id/stats) reports its memory and CPU, and
`herd alloc status` shows them on a "Resource usage" line (and in -json).
Bad and unknown allocation ids are refused."""
import json
import urllib.error
import urllib.request

import pytest

from test_control_plane import agents, api, cli, job_allocs, wait_for, write_job  # noqa: F401
from test_tasks import start_dev

SPIN_JOB = '''
job "spin" {
  group "g" {
    task "hog" {
      driver = "raw_exec"
      config {
        command = "/usr/bin/python3"
        args = ["-c", "b = b'x' * (30 << 20); [0 for _ in iter(int, 1)]"]
      }
    }
  }
}
'''


def node_addr(dev):
    [node] = api(dev.port, '/v1/nodes')
    return api(dev.port, f'/v1/node/{node["id"]}')['http_addr']


def stats(addr, alloc_id):
    with urllib.request.urlopen(f'http://{addr}/v1/client/allocation/{alloc_id}/stats',
                                timeout=30) as r:
        return json.loads(r.read())


def test_raw_exec_task_stats(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    assert cli(dev.port, 'job', 'run', '-detach', write_job(tmp_path, 'spin', SPIN_JOB)).returncode == 0
    a = wait_for(lambda: [a for a in job_allocs(dev.port, 'spin')
                          if a['client_status'] == 'running'], 20, 'the task to run')[0]
    addr = node_addr(dev)
    s = wait_for(lambda: (lambda t: t if t and t.get('memory_bytes', 0) >= 20 << 20 else None)(
        stats(addr, a['id'])['tasks'].get('hog')), 20, 'the task to hold 20 MB')
    assert s['cpu_total_ns'] > 0, s
    assert s['cpu_percent'] is not None and s['cpu_percent'] > 0, s
    assert s['memory_limit_bytes'] is None, s   # raw_exec sets no limit
    assert s['sampled_at'] > 0

    r = cli(dev.port, 'alloc', 'status', a['id'][:8])
    assert r.returncode == 0, r.stderr
    usage = [l for l in r.stdout.splitlines() if l.startswith('Resource usage: ')]
    assert len(usage) == 1 and ' MiB memory, ' in usage[0] and '% CPU' in usage[0], r.stdout
    r = cli(dev.port, 'alloc', 'status', '-json', a['id'][:8])
    assert r.returncode == 0, r.stderr
    ru = json.loads(r.stdout)['resource_usage']['hog']
    assert ru['memory_bytes'] >= 20 << 20, ru

    # bad id 400, unknown 404 (the server does not know it), wrong path 404
    for path, code in (('/v1/client/allocation/..%2Fx/stats', 400),
                       ('/v1/client/allocation/no-such-alloc/stats', 404),
                       (f'/v1/client/allocation/{a["id"]}/nope', 404)):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f'http://{addr}{path}', timeout=10)
        assert e.value.code == code, path

    assert cli(dev.port, 'job', 'stop', 'spin').returncode == 0


def test_docker_task_stats(engine, agents, tmp_path):
    """The same through the docker driver, when a private dockerd can run."""
    from test_tasks_docker import docker_job, start_docker_cluster
    server, client, node = start_docker_cluster(agents, tmp_path, engine['socket'])
    addr = api(server.port, f'/v1/node/{node["id"]}')['http_addr']
    job = write_job(tmp_path, 'dks', docker_job(
        'dks', "x=$(head -c 31457280 /dev/zero | tr '\\0' a); while :; do :; done", memory=128))
    r = cli(server.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stderr
    a = wait_for(lambda: [a for a in job_allocs(server.port, 'dks')
                          if a['client_status'] == 'running'], 60, 'the container to run')[0]
    s = wait_for(lambda: (lambda t: t if t and t.get('memory_bytes', 0) >= 20 << 20 else None)(
        stats(addr, a['id'])['tasks'].get('box')), 30, 'the container to hold 20 MB')
    assert s['cpu_total_ns'] > 0, s
    assert s['memory_limit_bytes'] == 128 << 20, s
    s = wait_for(lambda: (lambda t: t if t and (t.get('cpu_percent') or 0) > 0 else None)(
        stats(addr, a['id'])['tasks'].get('box')), 30, 'a CPU percent above 0')
    r = cli(server.port, 'alloc', 'status', a['id'][:8])
    assert r.returncode == 0, r.stderr
    assert any(l.startswith('Resource usage: ') and '/ 128.0 MiB memory' in l
               for l in r.stdout.splitlines()), r.stdout
    assert cli(server.port, 'job', 'stop', 'dks').returncode == 0
