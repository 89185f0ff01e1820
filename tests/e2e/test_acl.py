"""End-to-end: ACL with real processes.

A server agent with `acl { enabled = true }` from its config file; `herd acl
bootstrap` once; a policy and a token for namespace team-a; a client-only
agent that authenticates with a node token from its config (`client { token
}`); isolation between team-a and team-b through the CLI, the server API and
the client's log API; secrets never on disk."""
import hashlib
import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import HERD, REPO
from test_control_plane import GPUS, Agent, agents, wait_for  # noqa: F401


@pytest.fixture(autouse=True)
def no_ambient_token(monkeypatch):
    # the agents and the CLI must use only what each step gives them
    monkeypatch.delenv('HERD_TOKEN', raising=False)
    monkeypatch.delenv('HERD_NAMESPACE', raising=False)


def herd(port, *args, token=None, timeout=60):
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{port}')
    if token:
        env['HERD_TOKEN'] = token
    return subprocess.run([str(HERD), *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO)


def call(addr, path, token=None, method='GET', body=None):
    """(status, parsed body or text) of one request; errors are answers too."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(f'http://{addr}{path}', data=data, method=method)
    if token:
        req.add_header('X-Herd-Token', token)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw, status = r.read(), r.status
    except urllib.error.HTTPError as e:
        raw, status = e.read(), e.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors='replace')


def secret_of(stdout):
    m = re.search(r'^Secret ID\s+=\s+([0-9a-f]{64})$', stdout, re.M)
    assert m, stdout
    return m.group(1)



def acl_cluster(agents, tmp_path, policies, namespaces=('team-a',)):  # noqa: F811
    """A server with ACL on and one raw_exec client on two simulated T4s,
    registered with a `node` write token.  policies: [(name, policy text)],
    each made into a policy and a token of that name.  Returns (server
    port, server address, management secret, {name: secret}, the client's
    Agent)."""
    srv_cfg = tmp_path / 'server.hcl'
    srv_cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n'
                       'acl {\n  enabled = true\n}\n')
    srv = Agent(tmp_path, 'server', ['-config', str(srv_cfg), '-http-port', '0']).start()
    agents.append(srv)
    port, addr = srv.port, f'127.0.0.1:{srv.port}'
    wait_for(lambda: call(addr, '/v1/agent/health')[0] == 200, 10, 'the server')
    r = herd(port, 'acl', 'bootstrap')
    assert r.returncode == 0, r.stderr
    mgmt = secret_of(r.stdout)
    for ns in namespaces:
        assert herd(port, 'namespace', 'apply', ns, token=mgmt).returncode == 0
    secrets = {}
    for name, text in [*policies, ('nodes', 'node {\n  policy = "write"\n}\n')]:
        f = tmp_path / f'{name}.policy.hcl'
        f.write_text(text)
        r = herd(port, 'acl', 'policy', 'apply', name, str(f), token=mgmt)
        assert r.returncode == 0, r.stderr
        r = herd(port, 'acl', 'token', 'create', '-name', name, '-policy', name, token=mgmt)
        assert r.returncode == 0, r.stderr
        secrets[name] = secret_of(r.stdout)
    cli_cfg = tmp_path / 'client.hcl'
    cli_cfg.write_text('bind_addr = "127.0.0.1"\nname = "gpu-node-1"\n'
                       f'client {{\n  enabled = true\n  servers = ["{addr}"]\n'
                       f'  token = "{secrets["nodes"]}"\n}}\n'
                       'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
    client = Agent(tmp_path, 'client', ['-config', str(cli_cfg), '-http-port', '0'],
                   gpu_file=GPUS / 't4-2x.json').start()
    agents.append(client)
    wait_for(lambda: [n for n in call(addr, '/v1/nodes', token=mgmt)[1]
                      if n['status'] == 'ready'], 20, 'the client node')
    return port, addr, mgmt, secrets, client

JOB = '''
job "hello" {
  type = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "echo hello-from-team-a; sleep 1"]
      }
      resources {
        cpu = 100
        memory = 64
        device "nvidia/gpu" { count = 1 }
      }
    }
  }
}
'''


def test_acl_end_to_end(agents, tmp_path):  # noqa: F811
    srv_cfg = tmp_path / 'server.hcl'
    srv_cfg.write_text('bind_addr = "127.0.0.1"\n'
                       'server {\n  enabled = true\n}\n'
                       'acl {\n  enabled = true\n}\n')
    srv = Agent(tmp_path, 'server', ['-config', str(srv_cfg), '-http-port', '0']).start()
    agents.append(srv)
    port = srv.port
    addr = f'127.0.0.1:{port}'
    wait_for(lambda: call(addr, '/v1/agent/health')[0] == 200, 10, 'the server')

    # no token: refused, and the CLI says what is missing
    assert call(addr, '/v1/jobs')[0] == 403
    r = herd(port, 'job', 'status')
    assert r.returncode == 1 and 'needs a token' in r.stderr, r.stderr

    # bootstrap: once
    r = herd(port, 'acl', 'bootstrap')
    assert r.returncode == 0, r.stderr
    mgmt = secret_of(r.stdout)
    r = herd(port, 'acl', 'bootstrap')
    assert r.returncode == 1 and 'bootstrapped already' in r.stderr, r.stderr
    assert 'Secret' not in r.stdout

    # namespaces, policies, tokens: with the management token
    for ns in ('team-a', 'team-b'):
        r = herd(port, 'namespace', 'apply', ns, token=mgmt)
        assert r.returncode == 0, r.stderr
    policies = {
        'team-a': 'namespace "team-a" {\n  policy = "submit"\n}\n',
        'team-b': 'namespace "team-b" {\n  policy = "submit"\n}\n',
        'nodes': 'node {\n  policy = "write"\n}\n',
    }
    for name, text in policies.items():
        f = tmp_path / f'{name}.policy.hcl'
        f.write_text(text)
        r = herd(port, 'acl', 'policy', 'apply', name, str(f), token=mgmt)
        assert r.returncode == 0, r.stderr
    r = herd(port, 'acl', 'token', 'create', '-name', 'alice', '-policy', 'team-a')
    assert r.returncode == 1   # no token: refused
    secrets = {'mgmt': mgmt}
    for name, policy in (('alice', 'team-a'), ('bob', 'team-b'), ('node1', 'nodes')):
        r = herd(port, 'acl', 'token', 'create', '-name', name, '-policy', policy, token=mgmt)
        assert r.returncode == 0, r.stderr
        secrets[name] = secret_of(r.stdout)
    alice, bob = secrets['alice'], secrets['bob']
    r = herd(port, 'acl', 'token', 'self', token=alice)
    assert r.returncode == 0 and 'alice' in r.stdout and alice not in r.stdout
    # a namespace token cannot manage ACL
    r = herd(port, 'acl', 'token', 'list', token=alice)
    assert r.returncode == 1 and 'permission denied' in r.stderr

    # a client-only agent with its node token in the config file
    cli_cfg = tmp_path / 'client.hcl'
    cli_cfg.write_text('bind_addr = "127.0.0.1"\nname = "gpu-node-1"\n'
                       'client {\n  enabled = true\n'
                       f'  servers = ["{addr}"]\n'
                       f'  token = "{secrets["node1"]}"\n}}\n'
                       'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
    client = Agent(tmp_path, 'client', ['-config', str(cli_cfg), '-http-port', '0'],
                   gpu_file=GPUS / 't4-2x.json').start()
    agents.append(client)

    def nodes():
        return call(addr, '/v1/nodes', token=mgmt)[1]
    wait_for(lambda: [n for n in nodes() if n['status'] == 'ready'], 20, 'the client node')
    # a namespace token is not a node token: a client with it never joins
    bad_cfg = tmp_path / 'bad-client.hcl'
    bad_cfg.write_text(cli_cfg.read_text().replace(secrets['node1'], alice)
                       .replace('gpu-node-1', 'gpu-node-2'))
    bad = Agent(tmp_path, 'bad-client', ['-config', str(bad_cfg), '-http-port', '0'],
                gpu_file=GPUS / 't4-2x.json').start()
    agents.append(bad)
    wait_for(lambda: 'permission denied' in bad.log(), 20, 'the refused client to say why')
    assert [n['name'] for n in nodes()] == ['gpu-node-1']
    # node reads need node rights
    assert call(addr, '/v1/nodes', token=alice)[0] == 403

    # alice runs a job in team-a (the file names no namespace: -namespace places it)
    job = tmp_path / 'hello.hcl'
    job.write_text(JOB)
    r = herd(port, 'job', 'run', '-namespace', 'team-a', str(job), token=alice, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'complete' in r.stdout
    r = herd(port, 'job', 'status', 'hello', '-namespace', 'team-a', token=alice)
    assert r.returncode == 0 and re.search(r'^Namespace\s+team-a$', r.stdout, re.M), r.stderr
    # the same job id in team-b, submitted by bob
    r = herd(port, 'job', 'run', '-namespace', 'team-b', str(job), token=bob, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr

    # alice and team-b: 403, and the answer is the same whether the job exists
    outs = []
    for args in (['job', 'status', '-namespace', 'team-b'],
                 ['job', 'status', '-namespace', 'team-b', 'hello'],
                 ['job', 'status', '-namespace', 'team-b', 'no-such-job'],
                 ['job', 'stop', '-namespace', 'team-b', 'hello'],
                 ['job', 'stop', '-namespace', 'team-b', 'no-such-job']):
        r = herd(port, *args, token=alice)
        assert r.returncode == 1, (args, r.stdout)
        assert 'permission denied' in r.stderr, (args, r.stderr)
        assert 'team-b' not in r.stderr and 'hello' not in r.stderr, (args, r.stderr)
        outs.append(r.stderr.split(':', 1)[1])
    assert outs[1] == outs[2] and outs[3] == outs[4], outs
    r = herd(port, 'job', 'run', '-namespace', 'team-b', str(job), token=alice)
    assert r.returncode == 1 and 'permission denied' in r.stderr
    for path in ('/v1/job/hello?namespace=team-b', '/v1/job/nope?namespace=team-b'):
        status, body = call(addr, path, token=alice)
        assert status == 403 and body['error']['message'] == 'permission denied', body
    # team-b's allocation read by id: the same 404 as an id that does not exist
    [b_alloc] = call(addr, '/v1/job/hello/allocations?namespace=team-b', token=bob)[1]
    zero = '00000000-0000-0000-0000-000000000000'
    s1, body1 = call(addr, f'/v1/allocation/{b_alloc["id"]}', token=alice)
    s2, body2 = call(addr, f'/v1/allocation/{zero}', token=alice)
    assert s1 == s2 == 404, (body1, body2)
    assert (json.dumps(body1).replace(b_alloc['id'], 'ID') ==
            json.dumps(body2).replace(zero, 'ID')), (body1, body2)
    # a list over every namespace shows alice only team-a
    r = herd(port, 'job', 'status', '-namespace', '*', token=alice)
    assert r.returncode == 0, r.stderr
    rows = [line.split()[:2] for line in r.stdout.splitlines()[1:]]
    assert rows == [['team-a', 'hello']], r.stdout

    # the client's log API asks the server about each caller
    [a_alloc] = call(addr, '/v1/job/hello/allocations?namespace=team-a', token=alice)[1]
    node = call(addr, f'/v1/node/{a_alloc["node_id"]}', token=mgmt)[1]
    logs = f'/v1/client/fs/logs/{a_alloc["id"]}?task=t&type=stdout'
    status, text = call(node['http_addr'], logs, token=alice)
    assert status == 200 and 'hello-from-team-a' in text, (status, text)
    for token in (bob, None, 'f' * 64):
        status, body = call(node['http_addr'], logs, token=token)
        assert status in (403, 404), (token, status, body)
        assert 'hello-from-team-a' not in json.dumps(body)
    status, text = call(node['http_addr'], logs, token=mgmt)
    assert status == 200 and 'hello-from-team-a' in text
    # the CLI finds the node through the allocation: a team token suffices
    r = herd(port, 'alloc', 'logs', '-namespace', 'team-a', a_alloc['id'][:8], token=alice)
    assert r.returncode == 0 and r.stdout == 'hello-from-team-a\n', r.stderr
    r = herd(port, 'alloc', 'logs', '-namespace', 'team-a', a_alloc['id'][:8], token=bob)
    assert r.returncode == 1 and 'hello-from-team-a' not in r.stdout

    # secrets are stored hashed: no secret in the database or its WAL, but
    # the SHA-256 of each is there (so these are the right files)
    time.sleep(0.2)
    db = srv.dir / 'data' / 'server' / 'state.db'
    raw = b''.join(p.read_bytes() for p in (db, db.with_name('state.db-wal')) if p.exists())
    assert raw
    for name, secret in secrets.items():
        assert secret.encode() not in raw, name
        assert hashlib.sha256(secret.encode()).hexdigest().encode() in raw, name

    # restart the server agent as server + client: the ACL state survives,
    # and its own client joins with the node token from the same file
    srv.stop()
    srv_cfg.write_text(srv_cfg.read_text() + 'name = "server-node"\n'
                       'client {\n  enabled = true\n'
                       f'  token = "{secrets["node1"]}"\n}}\n')
    srv.args = ['-config', str(srv_cfg), '-http-port', str(port)]
    srv.gpu_file = GPUS / 't4-2x.json'
    srv.start()
    wait_for(lambda: call(addr, '/v1/agent/health')[0] == 200, 10, 'the restarted server')
    wait_for(lambda: sorted(n['name'] for n in nodes() if n['status'] == 'ready')
             == ['gpu-node-1', 'server-node'], 30, 'both nodes ready')
    assert call(addr, '/v1/jobs?namespace=team-a', token=alice)[0] == 200
    assert call(addr, '/v1/jobs?namespace=team-a')[0] == 403
    r = herd(port, 'acl', 'bootstrap')
    assert r.returncode == 1 and 'bootstrapped already' in r.stderr


def test_dev_acl_only_from_a_file(agents, tmp_path):  # noqa: F811
    cfg = tmp_path / 'acl.hcl'
    cfg.write_text('acl {\n  enabled = true\n}\n')
    dev = Agent(tmp_path, 'dev', ['-dev', '-config', str(cfg), '-http-port', '0'],
                gpu_file=GPUS / 't4-2x.json').start()
    agents.append(dev)
    addr = f'127.0.0.1:{dev.port}'
    wait_for(lambda: call(addr, '/v1/agent/health')[0] == 200, 10, 'the dev agent')
    status, body = call(addr, '/v1/jobs')
    assert status == 403 and body['error']['code'] == 'permission_denied'
    r = herd(dev.port, 'acl', 'bootstrap')
    assert r.returncode == 0 and secret_of(r.stdout)
