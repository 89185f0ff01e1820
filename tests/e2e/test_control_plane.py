"""End-to-end: real herd agents (server, clients, -dev) on 127.0.0.1 with
simulated GPUs, driven through the CLI (HERD_ADDR) and the HTTP API.

Every process is started with its own data dir under tmp_path and killed in
teardown."""
import json
import os
import pathlib
import re
import signal
import sqlite3
import subprocess
import time
import urllib.request

import pytest

from conftest import BUILD, HERD, REPO

SIM_LIB = BUILD / 'src/gpu/sim/libherd-nvml-sim.so'
GPUS = REPO / 'examples/gpus'
TTL = 2


def wait_for(pred, timeout, what, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            v = pred()
        except OSError:   # a server that is (re)starting
            v = None
        if v:
            return v
        time.sleep(step)
    raise AssertionError(f'timed out after {timeout}s waiting for {what}')


class Agent:
    """One `herd agent` process."""

    def __init__(self, tmp_path, name, args, gpu_file=None, port=None):
        self.dir = tmp_path / name
        self.dir.mkdir(exist_ok=True)
        self.name = name
        self.args = args
        self.gpu_file = gpu_file
        self.port = port
        self.proc = None

    def start(self):
        env = dict(os.environ)
        env.pop('HERD_NVML_SIM', None)
        env['HERD_NVML_LIBRARY'] = str(SIM_LIB)
        args = [str(HERD), 'agent', *self.args, '-data-dir', str(self.dir / 'data')]
        if self.gpu_file:
            args += ['-gpu-sim', str(self.gpu_file)]
        self.out = open(self.dir / 'stdout', 'a')
        self.err = open(self.dir / 'stderr', 'a')
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=self.err,
                                     text=True, env=env, cwd=REPO)
        if self.port is None and '-http-port' in self.args:
            line = self.proc.stdout.readline()
            while line and not line.startswith('http port '):
                line = self.proc.stdout.readline()
            assert line, f'{self.name} did not say its port: {self.log()}'
            self.port = int(line.split()[2])
        return self

    def log(self):
        return (self.dir / 'stderr').read_text()

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def agents():
    started = []
    yield started
    for a in started:
        a.stop()
    # Tasks of stopped or killed clients keep running by design: end them,
    # by the pids their clients recorded.
    for a in started:
        for tasks in _saved_task_states(a.dir / 'data' / 'client'):
            for t in tasks.values():
                if not t.get('handle'):
                    continue
                h = json.loads(t['handle'])
                for pid, group in ((h.get('task_pid'), True), (h.get('shim_pid'), False)):
                    if not pid:
                        continue
                    try:
                        (os.killpg if group else os.kill)(pid, signal.SIGKILL)
                    except OSError:
                        pass


def _saved_task_states(state_dir):
    """The task states a client saved (state.db, or the per-allocation
    files of older clients), one {"<task>": {...}} per allocation."""
    out = []
    db = state_dir / 'state.db'
    if db.exists():
        try:
            con = sqlite3.connect(f'file:{db}?mode=ro', uri=True, timeout=5)
            try:
                table = 'alloc_tasks' if con.execute(
                    "SELECT 1 FROM sqlite_master WHERE name = 'alloc_tasks'").fetchone() \
                    else 'allocs'
                out += [json.loads(r[0]) for r in con.execute(f'SELECT tasks FROM {table}')]
            finally:
                con.close()
        except (sqlite3.Error, ValueError):
            pass
    for f in (state_dir / 'allocs').glob('*.json'):
        try:
            out.append(json.loads(f.read_text()).get('tasks', {}))
        except ValueError:
            continue
    return out


def api(port, path, method='GET', body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f'http://127.0.0.1:{port}{path}', data=data, method=method)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def cli(port, *args, timeout=60):
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{port}')
    return subprocess.run([str(HERD), *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO)


def write_job(tmp_path, name, text):
    p = tmp_path / f'{name}.hcl'
    p.write_text(text)
    return str(p)


def gpu_job(job_id, device_block, jtype='batch', count=1, command='sleep 30'):
    return f'''
job "{job_id}" {{
  type = "{jtype}"
  group "g" {{
    count = {count}
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "env > $HERD_ALLOC_DIR/env.txt; {command}"]
      }}
      resources {{
        cpu = 100
        memory = 64
        {device_block}
      }}
    }}
  }}
}}
'''


def job_allocs(port, job_id):
    return api(port, f'/v1/job/{job_id}/allocations')


def running_allocs(port, job_id):
    return [a for a in job_allocs(port, job_id)
            if a['desired_status'] == 'run' and a['client_status'] == 'running']


def node_by_id(port, node_id):
    return api(port, f'/v1/node/{node_id}')


# --- the dev agent ------------------------------------------------------------

def start_dev(agents, tmp_path, gpu_file):
    dev = Agent(tmp_path, 'dev', ['-dev', '-http-port', '0'], gpu_file=GPUS / gpu_file).start()
    agents.append(dev)
    wait_for(lambda: [n for n in api(dev.port, '/v1/nodes') if n['status'] == 'ready'], 10,
             'the dev node to be ready')
    return dev


def test_dev_agent_runs_a_gpu_job_that_sees_its_devices(agents, tmp_path):
    dev = start_dev(agents, tmp_path, 'h100-sxm-8x-nvlink.json')
    job = write_job(tmp_path, 'env', gpu_job('env', 'device "nvidia/gpu" { count = 2 }',
                                             command='true'))
    r = cli(dev.port, 'job', 'run', job)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'complete' in r.stdout
    [a] = job_allocs(dev.port, 'env')
    assert a['client_status'] == 'complete'
    ids = [d['id'] for d in a['resources']['devices']]
    assert len(ids) == 2 and len(set(ids)) == 2
    env_file = dev.dir / 'data' / 'alloc' / a['id'] / 'alloc' / 'env.txt'
    env = dict(line.split('=', 1) for line in env_file.read_text().splitlines() if '=' in line)
    assert env['CUDA_VISIBLE_DEVICES'].split(',') == ids
    assert env['NVIDIA_VISIBLE_DEVICES'].split(',') == ids
    assert env['HERD_ALLOC_ID'] == a['id'] and env['NOMAD_ALLOC_ID'] == a['id']
    assert env['HERD_JOB_ID'] == 'env'
    # The read commands answer, in tables and in JSON.
    for args in (['node', 'status'], ['gpu', 'status'], ['job', 'status'],
                 ['job', 'status', 'env'], ['alloc', 'status', a['id'][:8]]):
        r = cli(dev.port, *args)
        assert r.returncode == 0, (args, r.stderr)
        r = cli(dev.port, *args, '-json')
        assert r.returncode == 0, (args, r.stderr)
        json.loads(r.stdout)
    r = cli(dev.port, 'node', 'status', a['node_id'][:8])
    assert '/81559 MiB' in r.stdout and 'Allocated Resources' in r.stdout


def test_dev_agent_examples_validate_and_plan(agents, tmp_path):
    dev = start_dev(agents, tmp_path, 'h100-sxm-8x-nvlink.json')
    for f in sorted((REPO / 'examples/jobs').glob('*.hcl')):
        r = cli(dev.port, 'job', 'plan', str(f))
        # Plans either fit (0) or explain why not (1); never a usage or
        # server error.
        assert r.returncode in (0, 1), (f, r.stdout, r.stderr)
        assert 'server:' not in r.stderr, (f, r.stderr)


def test_dev_agent_stop_stops_the_task(agents, tmp_path):
    dev = start_dev(agents, tmp_path, 't4-2x.json')
    job = write_job(tmp_path, 'svc', gpu_job('svc', '', jtype='service', command='sleep 300'))
    r = cli(dev.port, 'job', 'run', job)
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(running_allocs(dev.port, 'svc')) == 1
    r = cli(dev.port, 'job', 'stop', 'svc')
    assert r.returncode == 0, r.stderr
    wait_for(lambda: all(a['client_status'] == 'complete' for a in job_allocs(dev.port, 'svc')),
             15, 'the allocation to stop')


# --- one server, several clients ---------------------------------------------

def server_config(tmp_path):
    p = tmp_path / 'server.hcl'
    p.write_text(f'server {{\n  enabled = true\n  heartbeat_ttl = "{TTL}s"\n'
                 f'  heartbeat_grace = "0s"\n}}\nbind_addr = "127.0.0.1"\n')
    return str(p)


def client_config(tmp_path):
    p = tmp_path / 'client.hcl'
    if p.exists():   # another client may be reading it right now
        return str(p)
    p.write_text('client {\n  enabled = true\n}\n'
                 'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
    return str(p)


def start_client(agents, tmp_path, name, port, gpu_file):
    c = Agent(tmp_path, name, ['-config', client_config(tmp_path), '-servers',
                               f'127.0.0.1:{port}', '-node', name],
              gpu_file=GPUS / gpu_file).start()
    agents.append(c)
    return c


def nodes_ready(port, names):
    nodes = {n['name']: n for n in api(port, '/v1/nodes')}
    return all(n in nodes and nodes[n]['status'] == 'ready' for n in names) and nodes


@pytest.fixture
def cluster(agents, tmp_path):
    srv = Agent(tmp_path, 'server', ['-config', server_config(tmp_path),
                                     '-http-port', '0']).start()
    agents.append(srv)
    clients = {
        'h100': start_client(agents, tmp_path, 'h100', srv.port, 'h100-sxm-8x-nvlink.json'),
        't4': start_client(agents, tmp_path, 't4', srv.port, 't4-2x.json'),
        'a100': start_client(agents, tmp_path, 'a100', srv.port, 'a100-80gb-mig-7x1g.json'),
    }
    nodes = wait_for(lambda: nodes_ready(srv.port, clients), 15, 'three ready nodes')
    return srv, clients, nodes


def node_name_of(port, alloc):
    return node_by_id(port, alloc['node_id'])['name']


def test_cluster_placement(cluster, tmp_path, agents):
    srv, clients, nodes = cluster
    port = srv.port
    # ${device.model} constraint: only the T4 node qualifies.
    r = cli(port, 'job', 'run', write_job(tmp_path, 'model', gpu_job(
        'model', 'device "nvidia/gpu" {\n count = 1\n constraint {\n'
        ' attribute = "${device.model}"\n value = "Tesla T4"\n }\n }',
        jtype='service', command='sleep 300')))
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = running_allocs(port, 'model')
    assert node_name_of(port, a) == 't4'

    # A 2-GPU job lands on a node with two free GPUs, on distinct devices:
    # not the T4 node, which has one left.
    r = cli(port, 'job', 'run', write_job(tmp_path, 'two', gpu_job(
        'two', 'device "nvidia/gpu" { count = 2 }', jtype='service', command='sleep 300')))
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = running_allocs(port, 'two')
    devs = [d['id'] for d in a['resources']['devices']]
    node = node_by_id(port, a['node_id'])
    assert len(set(devs)) == 2 and set(devs) <= {d['id'] for d in node['devices']}
    assert node['name'] != 't4'

    # An affinity prefers the H100s.
    r = cli(port, 'job', 'run', write_job(tmp_path, 'aff', gpu_job(
        'aff', 'device "nvidia/gpu" {\n count = 1\n affinity {\n'
        ' attribute = "${device.model}"\n value = "NVIDIA H100 80GB HBM3"\n weight = 100\n }\n }',
        jtype='service', command='sleep 300')))
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = running_allocs(port, 'aff')
    assert node_name_of(port, a) == 'h100'

    # Too big for the cluster: pending, with the engine's explanation.
    big = write_job(tmp_path, 'big', gpu_job(
        'big', 'device "nvidia/gpu/NVIDIA GeForce RTX 3060 Laptop GPU" { count = 1 }',
        jtype='service', command='sleep 300'))
    r = cli(port, 'job', 'run', big)
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'group "g"' in r.stdout and 'stays pending' in r.stdout
    r = cli(port, 'job', 'status', 'big')
    assert 'pending' in r.stdout and 'Placement failures' in r.stdout
    # ... and starts when a node that fits joins.
    start_client(agents, tmp_path, 'rtx', port, 'wsl2-rtx3060-laptop.json')
    wait_for(lambda: running_allocs(port, 'big'), 20, 'the big job to run on the new node')
    [a] = running_allocs(port, 'big')
    assert node_name_of(port, a) == 'rtx'

    r = cli(port, 'gpu', 'status')
    assert r.returncode == 0 and 'two/' in r.stdout and 'Tesla T4' in r.stdout


def test_killed_client_allocations_move(cluster, tmp_path):
    srv, clients, nodes = cluster
    port = srv.port
    r = cli(port, 'job', 'run', write_job(tmp_path, 'svc', gpu_job(
        'svc', '', jtype='service', command='sleep 300')))
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = running_allocs(port, 'svc')
    victim = node_name_of(port, a)
    clients[victim].kill9()
    killed_at = time.monotonic()
    moved = wait_for(lambda: [x for x in running_allocs(port, 'svc') if x['node_id'] != a['node_id']],
                     TTL + 10, 'the service to run elsewhere')
    elapsed = time.monotonic() - killed_at
    assert elapsed <= TTL + 2 + 1, f'took {elapsed:.1f}s (ttl {TTL}s)'
    assert node_name_of(port, moved[0]) != victim
    old = api(port, f'/v1/allocation/{a["id"]}')
    assert old['client_status'] == 'lost'


def test_server_kill9_restart_loses_nothing(cluster, tmp_path, agents):
    srv, clients, nodes = cluster
    port = srv.port
    ids = []
    for i in range(5):
        r = cli(port, 'job', 'run', '-detach', write_job(tmp_path, f'j{i}', gpu_job(
            f'j{i}', '', jtype='service', command='sleep 300')))
        assert r.returncode == 0, r.stderr
        ids.append(f'j{i}')
    srv.kill9()
    again = Agent(tmp_path, 'server', ['-config', server_config(tmp_path), '-http-port',
                                       str(port)], port=port).start()
    agents.append(again)
    wait_for(lambda: nodes_ready(port, clients), 20, 'clients to reconnect')
    jobs = {j['id'] for j in api(port, '/v1/jobs')}
    assert set(ids) <= jobs
    for j in ids:
        wait_for(lambda j=j: running_allocs(port, j), 20, f'{j} to run')
    # Clients keep working after the restart: a new job runs.
    r = cli(port, 'job', 'run', write_job(tmp_path, 'after', gpu_job(
        'after', '', jtype='batch', command='true')))
    assert r.returncode == 0, r.stdout + r.stderr
