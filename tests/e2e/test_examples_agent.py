"""End-to-end: the agent configurations in examples/agent (what
docs/operations.md tells operators to install) start and work together:
a server from examples/agent/server.hcl and a client from client.hcl, their
addresses and data dirs overridden by flags for the test, ACL bootstrapped,
a job run with the token."""
import os
import re
import subprocess

from conftest import HERD, REPO
from test_control_plane import GPUS, Agent, agents, api, wait_for, write_job  # noqa: F401

EXAMPLES = REPO / 'examples' / 'agent'

JOB = '''
job "hello" {
  type = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "echo hello"]
      }
      resources {
        cpu = 10
        memory = 10
      }
    }
  }
}
'''


def test_example_server_and_client_configs(agents, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.delenv('HERD_TOKEN', raising=False)
    srv = Agent(tmp_path, 'server', ['-config', str(EXAMPLES / 'server.hcl'),
                                     '-bind', '127.0.0.1', '-http-port', '0']).start()
    agents.append(srv)
    wait_for(lambda: api(srv.port, '/v1/agent/health'), 10, 'the server')
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{srv.port}')

    def herd(*args, token=None):
        e = dict(env, HERD_TOKEN=token) if token else env
        return subprocess.run([str(HERD), *args], capture_output=True, text=True, env=e,
                              timeout=60, cwd=REPO)

    # the example turns ACL on: nothing without a token
    r = herd('node', 'status')
    assert r.returncode == 1 and 'token' in r.stderr, r.stderr
    r = herd('acl', 'bootstrap')
    assert r.returncode == 0, r.stderr
    mgmt = re.search(r'^Secret ID\s+=\s+([0-9a-f]{64})$', r.stdout, re.M).group(1)

    # a client from the example, with the management token (a node token in
    # production: docs/teams.md) and the test's server address
    cfg = tmp_path / 'client.hcl'
    cfg.write_text((EXAMPLES / 'client.hcl').read_text().replace(
        'enabled = true\n  servers', f'enabled = true\n  token = "{mgmt}"\n  servers', 1))
    client = Agent(tmp_path, 'client', ['-config', str(cfg), '-servers',
                                        f'127.0.0.1:{srv.port}', '-node', 'gpu-7',
                                        '-bind', '127.0.0.1'],
                   gpu_file=GPUS / 't4-2x.json').start()
    agents.append(client)

    def ready():
        r = herd('node', 'status', '-json', token=mgmt)
        return r.returncode == 0 and '"ready"' in r.stdout and r.stdout
    out = wait_for(ready, 20, 'the example client to join')
    assert '"gpu-7"' in out and '"h100"' in out   # its node_class

    r = herd('job', 'run', write_job(tmp_path, 'hello', JOB), token=mgmt)
    assert r.returncode == 0, r.stdout + r.stderr
    allocs = api_token(srv.port, '/v1/job/hello/allocations', mgmt)
    assert [a['client_status'] for a in allocs] == ['complete']


def api_token(port, path, token):
    import json
    import urllib.request
    req = urllib.request.Request(f'http://127.0.0.1:{port}{path}', headers={'X-Herd-Token': token})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def test_systemd_unit_keeps_tasks_on_restart():
    unit = (REPO / 'dist' / 'systemd' / 'herd.service').read_text()
    lines = {ln.split('=', 1)[0]: ln.split('=', 1)[1] for ln in unit.splitlines()
             if '=' in ln and not ln.startswith('#')}
    # systemd's default (control-group) would kill every task with the agent
    assert lines['KillMode'] == 'process'
    assert lines['ExecStart'].split()[1:3] == ['agent', '-config']
