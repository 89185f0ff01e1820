"""End-to-end: high availability (docs/operations.md, "High availability").

Two server agents share one private PostgreSQL cluster (scripts/pg-test-cluster:
PostgreSQL must be installed; the tests fail, not skip, without it); one leads,
the other waits as a standby that answers on its port: health 503 naming the
leader, every other request a 307 redirect to the leader.  A client agent
with simulated GPUs lists both servers.  Killing the leader with SIGKILL
hands the store to the standby, which then serves the API on the same port;
the client fails over to it and keeps its allocations; the CLI with
HERD_ADDR="dead,alive" keeps working, and HERD_ADDR=standby works through the
redirect.

The failover figures (kill -9 to the new leader answering, and to the next
placement running on the client) are printed; run with -s to see them."""
import http.client
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import HERD, REPO
from test_control_plane import (GPUS, Agent, agents, api, gpu_job, job_allocs,  # noqa: F401
                                running_allocs, wait_for, write_job)

TTL = 3
PG_CLUSTER = REPO / 'scripts/pg-test-cluster'


@pytest.fixture
def pg():
    """A private PostgreSQL cluster; yields its libpq conninfo."""
    # short: the unix socket lives in it (about 100 bytes at most)
    d = tempfile.mkdtemp(prefix='hpg', dir='/tmp')
    r = subprocess.run([str(PG_CLUSTER), 'start', d], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        pytest.fail(f'scripts/pg-test-cluster start failed (is PostgreSQL installed?):\n'
                    f'{r.stdout}{r.stderr}')
    conninfo = r.stdout.strip().splitlines()[-1]
    yield conninfo
    subprocess.run([str(PG_CLUSTER), 'stop', d], capture_output=True, text=True, timeout=120)


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def listening(port):
    s = socket.socket()
    s.settimeout(1)
    try:
        s.connect(('127.0.0.1', port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def server_config(tmp_path, name, conninfo):
    p = tmp_path / f'{name}.hcl'
    p.write_text(f'bind_addr = "127.0.0.1"\n'
                 f'server {{\n  enabled = true\n  heartbeat_ttl = "{TTL}s"\n'
                 f'  heartbeat_grace = "0s"\n  postgres_url = "{conninfo}"\n}}\n')
    return str(p)


def start_server(agents, tmp_path, name, conninfo, any_port=False):
    """any_port: -http-port 0 (the agent says which port it got)."""
    port = None if any_port else free_port()
    s = Agent(tmp_path, name, ['-config', server_config(tmp_path, name, conninfo),
                               '-http-port', str(port or 0)], port=port).start()
    agents.append(s)
    return s


def leading(s):
    """The server answers its health check with 200 (a standby: 503)."""
    try:
        return api(s.port, '/v1/agent/health') is not None
    except OSError:
        return False


def raw(port, method, path, body=None, headers=None):
    """One request, redirects not followed: (status, headers, JSON body)."""
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    try:
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers=headers or {})
        r = c.getresponse()
        text = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, \
            json.loads(text) if text else None
    finally:
        c.close()


def standby_line(s, leader):
    return (f'server: standby; the leader is 127.0.0.1:{leader.port} '
            f'(holds the PostgreSQL lock); waiting') in s.log()


def cli(addr, *args, timeout=60):
    env = dict(os.environ, HERD_ADDR=addr)
    return subprocess.run([str(HERD), *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO)


def client_config(tmp_path):
    p = tmp_path / 'client.hcl'
    p.write_text('client {\n  enabled = true\n}\n'
                 'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
    return str(p)


def psql(conninfo, sql):
    """Runs sql as the cluster's superuser (trust authentication)."""
    for d in ['/usr/bin'] + sorted(str(p) for p in pathlib.Path('/usr/lib/postgresql').glob('*/bin')):
        exe = os.path.join(d, 'psql')
        if os.access(exe, os.X_OK):
            break
    else:
        pytest.fail('psql not found')
    r = subprocess.run([exe, '-X', '-q', '-At', '-d', conninfo, '-c', sql],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_standby_answers_and_stops_cleanly(agents, tmp_path, pg):
    leader = start_server(agents, tmp_path, 's1', pg)
    wait_for(lambda: leading(leader), 20, 'the first server to lead')
    standby = start_server(agents, tmp_path, 's2', pg)
    wait_for(lambda: standby_line(standby, leader), 20, 'the standby line')
    a1 = f'127.0.0.1:{leader.port}'
    # a load balancer's health check: 503 on the standby, naming the leader
    assert listening(standby.port)
    status, _, body = raw(standby.port, 'GET', '/v1/agent/health')
    assert status == 503, body
    assert body == {'ok': False, 'standby': True, 'leader': a1}
    status, _, body = raw(leader.port, 'GET', '/v1/agent/health')
    assert status == 200 and body['ok'] is True
    # both name the leader
    assert raw(standby.port, 'GET', '/v1/status/leader')[2] == {'leader': a1}
    assert raw(leader.port, 'GET', '/v1/status/leader')[2] == {'leader': a1}
    # every other request: 307 to the same path and query on the leader
    status, hdrs, _ = raw(standby.port, 'POST', '/v1/jobs?namespace=default&x=a%20b',
                          body={'job': {}})
    assert status == 307
    assert hdrs['location'] == f'http://{a1}/v1/jobs?namespace=default&x=a%20b'
    status, hdrs, _ = raw(standby.port, 'GET', '/ui/')
    assert status == 307 and hdrs['location'] == f'http://{a1}/ui/'
    assert standby.proc.poll() is None
    standby.proc.send_signal(signal.SIGTERM)
    assert standby.proc.wait(timeout=15) == 0, standby.log()
    assert 'server: stopped while a standby' in standby.log()
    assert leading(leader)


def test_leader_that_loses_its_lock_exits_nonzero(agents, tmp_path, pg):
    leader = start_server(agents, tmp_path, 's1', pg)
    wait_for(lambda: leading(leader), 20, 'the first server to lead')
    standby = start_server(agents, tmp_path, 's2', pg)
    wait_for(lambda: standby_line(standby, leader), 20, 'the standby line')
    # the leader's connection (the one holding the advisory lock) goes
    killed = psql(pg, "SELECT pg_terminate_backend(pid) FROM pg_locks "
                      "WHERE locktype = 'advisory' AND granted")
    assert 't' in killed
    assert leader.proc.wait(timeout=20) == 1, leader.log()
    assert 'server: lost the PostgreSQL leadership lock (' in leader.log()
    assert '); stopping' in leader.log()
    # and the standby takes over
    wait_for(lambda: leading(standby), 20, 'the standby to lead')
    assert 'server: leader (holds the PostgreSQL lock' in standby.log()


def test_standby_refuses_large_bodies_and_logs_each_new_leader(agents, tmp_path, pg):
    s1 = start_server(agents, tmp_path, 's1', pg)
    wait_for(lambda: leading(s1), 20, 'the first server to lead')
    s2 = start_server(agents, tmp_path, 's2', pg)
    wait_for(lambda: standby_line(s2, s1), 20, "s2's standby line")
    s3 = start_server(agents, tmp_path, 's3', pg)
    wait_for(lambda: standby_line(s3, s1), 20, "s3's standby line")
    # a body past the API's limit (4 MiB): 413 before it is sent, as the
    # leader answers
    c = http.client.HTTPConnection('127.0.0.1', s2.port, timeout=30)
    try:
        c.putrequest('POST', '/v1/jobs')
        c.putheader('Content-Length', str(64 << 20))
        c.putheader('Content-Type', 'application/json')
        c.endheaders()
        r = c.getresponse()
        body = json.loads(r.read())
        assert r.status == 413 and body['error']['code'] == 'body_too_large', body
    finally:
        c.close()
    # s1 goes: one of the standbys leads, the other says so, once
    killed = psql(pg, "SELECT pg_terminate_backend(pid) FROM pg_locks "
                      "WHERE locktype = 'advisory' AND granted")
    assert 't' in killed
    assert s1.proc.wait(timeout=20) == 1, s1.log()
    wait_for(lambda: leading(s2) or leading(s3), 20, 'a standby to lead')
    new, other = (s2, s3) if leading(s2) else (s3, s2)
    line = f'server: standby: the leader is now 127.0.0.1:{new.port} (was '
    wait_for(lambda: line in other.log(), 20, 'the other standby to name the new leader')
    time.sleep(1)  # more reads of the leader row: still said once
    assert other.log().count(line) == 1, other.log()
    assert not leading(other)


def test_failover_keeps_allocations_and_serves(agents, tmp_path, pg):
    s1 = start_server(agents, tmp_path, 's1', pg)
    wait_for(lambda: leading(s1), 20, 'the first server to lead')
    s2 = start_server(agents, tmp_path, 's2', pg)
    wait_for(lambda: standby_line(s2, s1), 20, 'the standby line')
    a1, a2 = f'127.0.0.1:{s1.port}', f'127.0.0.1:{s2.port}'
    client = Agent(tmp_path, 'gpu-node', ['-config', client_config(tmp_path), '-servers',
                                          f'{a1},{a2}', '-node', 'gpu-node'],
                   gpu_file=GPUS / 'h100-sxm-8x-nvlink.json').start()
    agents.append(client)
    wait_for(lambda: [n for n in api(s1.port, '/v1/nodes') if n['status'] == 'ready'], 20,
             'the node to be ready')

    # acknowledged before the kill: a service, a batch job that finished and
    # one still running across the failover
    r = cli(a1, 'job', 'run', write_job(tmp_path, 'svc', gpu_job(
        'svc', 'device "nvidia/gpu" { count = 1 }', jtype='service', command='sleep 300')))
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(a1, 'job', 'run', write_job(tmp_path, 'done', gpu_job(
        'done', 'device "nvidia/gpu" { count = 1 }', command='true')))
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(a1, 'job', 'run', '-detach', write_job(tmp_path, 'across', gpu_job(
        'across', 'device "nvidia/gpu" { count = 1 }', command='sleep 6')))
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: running_allocs(s1.port, 'across'), 20, 'the batch job to run')
    [svc] = running_allocs(s1.port, 'svc')
    acked = {j['id'] for j in api(s1.port, '/v1/jobs')}
    assert {'svc', 'done', 'across'} <= acked

    s1.kill9()
    killed_at = time.monotonic()
    wait_for(lambda: leading(s2), 30, 'the standby to lead', step=0.02)
    leader_at = time.monotonic()
    # a job submitted now, through the CLI with the dead server first
    both = f'{a1},{a2}'
    r = cli(both, 'job', 'run', '-detach', write_job(tmp_path, 'after', gpu_job(
        'after', 'device "nvidia/gpu" { count = 1 }', jtype='service', command='sleep 300')))
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: running_allocs(s2.port, 'after'), 30, 'the new job to run', step=0.02)
    placed_at = time.monotonic()
    print(f'\nfailover: kill -9 -> new leader answering {leader_at - killed_at:.2f}s, '
          f'-> next placement running {placed_at - killed_at:.2f}s (ttl {TTL}s)')

    # the client said it moved, once per move
    wait_for(lambda: re.search(rf'client: server {re.escape(a1)} unreachable \(.*\); '
                               rf'using {re.escape(a2)}', client.log()), 10,
             'the client to say it failed over')
    assert s2.log().count('server: leader (holds the PostgreSQL lock') == 1

    # more than a TTL under the new leader: the node stayed ready and the
    # service kept its allocation (not lost, not placed again)
    time.sleep(2 * TTL)
    nodes = api(s2.port, '/v1/nodes')
    assert [n['status'] for n in nodes] == ['ready'], nodes
    allocs = job_allocs(s2.port, 'svc')
    assert [a['id'] for a in allocs] == [svc['id']], allocs
    assert allocs[0]['client_status'] == 'running'
    # every job acknowledged before the kill is there; the one that ran
    # across the failover completed, reported to the new leader
    assert acked <= {j['id'] for j in api(s2.port, '/v1/jobs')}
    wait_for(lambda: [a for a in job_allocs(s2.port, 'across')
                      if a['client_status'] == 'complete'], 30,
             'the batch job that ran across the failover to complete')
    assert len(job_allocs(s2.port, 'across')) == 1
    [done] = job_allocs(s2.port, 'done')
    assert done['client_status'] == 'complete'

    # the CLI with the dead address first works for reads too
    r = cli(both, 'job', 'status', 'svc')
    assert r.returncode == 0 and 'running' in r.stdout, r.stdout + r.stderr
    r = cli(both, 'node', 'status')
    assert r.returncode == 0 and 'gpu-node' in r.stdout, r.stdout + r.stderr
    # and the node's log API checks tokens with the live server
    r = cli(both, 'alloc', 'logs', svc['id'][:8])
    assert r.returncode == 0, r.stdout + r.stderr


def test_standby_redirects_cli_and_agent_then_leads_on_its_port(agents, tmp_path, pg):
    # -http-port 0: each says the port it got, as a standby too, and the
    # leader records the real one for standbys to name
    s1 = start_server(agents, tmp_path, 's1', pg, any_port=True)
    wait_for(lambda: leading(s1), 20, 'the first server to lead')
    s2 = start_server(agents, tmp_path, 's2', pg, any_port=True)
    assert s1.port and s2.port and s1.port != s2.port
    wait_for(lambda: standby_line(s2, s1), 20, 'the standby line naming the real port')
    a1, a2 = f'127.0.0.1:{s1.port}', f'127.0.0.1:{s2.port}'
    assert raw(s1.port, 'GET', '/v1/status/leader')[2] == {'leader': a1}
    assert raw(s2.port, 'GET', '/v1/agent/health')[2]['leader'] == a1
    assert raw(s2.port, 'GET', '/v1/jobs')[1]['location'] == f'http://{a1}/v1/jobs'

    # a client that knows only the standby registers through the redirect
    client = Agent(tmp_path, 'gpu-node', ['-config', client_config(tmp_path), '-servers', a2,
                                          '-node', 'gpu-node'],
                   gpu_file=GPUS / 'h100-sxm-8x-nvlink.json').start()
    agents.append(client)
    wait_for(lambda: [n for n in api(s1.port, '/v1/nodes') if n['status'] == 'ready'], 20,
             'the node to be ready')

    # the CLI with the standby's address alone: the job lands on the leader
    r = cli(a2, 'job', 'run', write_job(tmp_path, 'via', gpu_job(
        'via', 'device "nvidia/gpu" { count = 1 }', jtype='service', command='sleep 300')))
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'via' in {j['id'] for j in api(s1.port, '/v1/jobs')}
    wait_for(lambda: running_allocs(s1.port, 'via'), 20, 'the job to run')
    [via] = running_allocs(s1.port, 'via')
    r = cli(a2, 'job', 'status', 'via')
    assert r.returncode == 0 and 'running' in r.stdout, r.stdout + r.stderr
    # a token is not carried over plain http to an address HERD_ADDR lacks
    env = dict(os.environ, HERD_ADDR=a2, HERD_TOKEN='not-for-elsewhere')
    r = subprocess.run([str(HERD), 'job', 'status', 'via'], capture_output=True, text=True,
                       env=env, timeout=60, cwd=REPO)
    assert r.returncode != 0 and 'HERD_ADDR' in r.stderr, r.stdout + r.stderr
    env['HERD_ADDR'] = f'{a2},{a1}'
    r = subprocess.run([str(HERD), 'job', 'status', 'via'], capture_output=True, text=True,
                       env=env, timeout=60, cwd=REPO)
    assert r.returncode == 0 and 'running' in r.stdout, r.stdout + r.stderr
    # a backup through the standby's address streams from the leader
    snap = tmp_path / 'via-standby.snap'
    r = cli(a2, 'operator', 'snapshot', 'save', str(snap))
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(a2, 'operator', 'snapshot', 'inspect', str(snap))
    assert r.returncode == 0, r.stdout + r.stderr

    # the takeover: the standby serves the API on the port it answered on
    s1.kill9()
    wait_for(lambda: leading(s2), 30, 'the standby to lead', step=0.02)
    status, _, body = raw(s2.port, 'GET', '/v1/agent/health')
    assert status == 200 and body['ok'] is True
    assert raw(s2.port, 'GET', '/v1/status/leader')[2] == {'leader': a2}
    r = cli(a2, 'job', 'status', 'via')
    assert r.returncode == 0 and 'running' in r.stdout, r.stdout + r.stderr
    # the client, which talked to this address all along, keeps its node
    # and its allocation, and runs what the new leader places
    assert [n['status'] for n in api(s2.port, '/v1/nodes')] == ['ready']
    assert [a['id'] for a in running_allocs(s2.port, 'via')] == [via['id']]
    r = cli(a2, 'job', 'run', '-detach', write_job(tmp_path, 'after', gpu_job(
        'after', 'device "nvidia/gpu" { count = 1 }', jtype='service', command='sleep 300')))
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: running_allocs(s2.port, 'after'), 30, 'the new job to run')
