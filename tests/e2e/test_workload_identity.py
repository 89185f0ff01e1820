"""End-to-end: a task's workload identity (docs/jobspec.md, "identity";
docs/teams.md, "Workload identity").

A server with ACL on and a client with its node token.  Job "train" in
namespace team-a has a task with identity { env = true  file = true }: it
reads, with the token the agent put in HERD_TOKEN, its job's variable
(nomad/jobs/train) through the API at HERD_ADDR, and checks the file holds
the same token; another job's variable and a write are refused.  A task
without the block gets no token.  Once the allocation ended, its token is
refused (tests/e2e/test_workload_jwt.py checks the token itself)."""
import json
import os
import time

from test_acl import call, secret_of
from test_control_plane import GPUS, Agent, agents, api, cli, wait_for, write_job  # noqa: F401
from test_tasks import alloc_dir
from test_vars import herd

PROBE = r'''
import json, os, sys, urllib.request, urllib.error
def get(path, method='GET', body=None):
    req = urllib.request.Request(os.environ['HERD_ADDR'] + path, method=method,
                                 data=body and json.dumps(body).encode())
    req.add_header('X-Herd-Token', os.environ['HERD_TOKEN'])
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, None
out = {
  'own': get('/v1/var/nomad/jobs/train?namespace=team-a'),
  'shared': get('/v1/var/nomad/jobs?namespace=team-a')[0],
  'other': get('/v1/var/nomad/jobs/other?namespace=team-a')[0],
  'write': get('/v1/var/nomad/jobs/train?namespace=team-a', 'PUT', {'items': {'k': 'x'}})[0],
  'jobs': get('/v1/jobs?namespace=team-a')[0],
  'file_same': open('secrets/herd_token').read() == os.environ['HERD_TOKEN'],
  'nomad_token_same': os.environ.get('NOMAD_TOKEN') == os.environ['HERD_TOKEN'],
}
open(os.environ['HERD_ALLOC_DIR'] + '/probe.json', 'w').write(json.dumps(out))
'''

JOB = '''
job "%s" {
  namespace = "team-a"
  type = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/usr/bin/python3"
        args = ["-c", %s]
      }
      %s
    }
  }
}
'''


def test_task_reads_its_variables_with_its_own_token(agents, tmp_path):  # noqa: F811
    cfg = tmp_path / 'server.hcl'
    cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n'
                   'acl {\n  enabled = true\n}\n')
    srv = Agent(tmp_path, 'server', ['-config', str(cfg), '-http-port', '0']).start()
    agents.append(srv)
    addr = f'127.0.0.1:{srv.port}'
    wait_for(lambda: call(addr, '/v1/agent/health')[0] == 200, 10, 'the server')
    mgmt = secret_of(herd(srv.port, 'acl', 'bootstrap').stdout)
    assert herd(srv.port, 'namespace', 'apply', 'team-a', token=mgmt).returncode == 0
    pol = tmp_path / 'nodes.hcl'
    pol.write_text('node {\n  policy = "write"\n}\n')
    assert herd(srv.port, 'acl', 'policy', 'apply', 'nodes', str(pol), token=mgmt).returncode == 0
    node_tok = secret_of(herd(srv.port, 'acl', 'token', 'create', '-name', 'n', '-policy',
                              'nodes', token=mgmt).stdout)
    for path, item in (('nomad/jobs/train', 'lr=0.1'), ('nomad/jobs', 'shared=1'),
                       ('nomad/jobs/other', 'secret=2')):
        r = herd(srv.port, 'var', 'put', '-namespace', 'team-a', path, item, token=mgmt)
        assert r.returncode == 0, r.stderr
    ccfg = tmp_path / 'client.hcl'
    ccfg.write_text('bind_addr = "127.0.0.1"\nname = "n1"\nclient {\n  enabled = true\n'
                    f'  servers = ["{addr}"]\n  token = "{node_tok}"\n}}\n'
                    'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
    client = Agent(tmp_path, 'client', ['-config', str(ccfg), '-http-port', '0'],
                   gpu_file=GPUS / 't4-2x.json').start()
    agents.append(client)
    wait_for(lambda: [n for n in call(addr, '/v1/nodes', token=mgmt)[1]
                      if n['status'] == 'ready'], 20, 'the client node')

    done = {}
    for job_id, block in (('train', 'identity {\n        env = true\n        file = true\n      }'),
                          ('plain', '')):
        text = JOB % (job_id, json.dumps(PROBE if block else
                                         "import os\nopen(os.environ['HERD_ALLOC_DIR'] + "
                                         "'/probe.json', 'w').write(str('HERD_TOKEN' in "
                                         "os.environ or 'NOMAD_TOKEN' in os.environ))"), block)
        r = herd(srv.port, 'job', 'run', write_job(tmp_path, job_id, text), token=mgmt)
        assert r.returncode == 0, r.stdout + r.stderr
        allocs = call(addr, f'/v1/job/{job_id}/allocations?namespace=team-a', token=mgmt)[1]
        done[job_id] = allocs[0]
        wait_for(lambda: call(addr, f'/v1/allocation/{allocs[0]["id"]}', token=mgmt)[1]
                 ['client_status'] in ('complete', 'failed'), 30, f'{job_id} done')

    out = json.loads((alloc_dir(client, done['train']['id']) / 'alloc' / 'probe.json').read_text())
    status, var = out['own']
    assert status == 200 and var['items'] == {'lr': '0.1'}, out
    assert out['shared'] == 200 and out['other'] == 403 and out['write'] == 403, out
    assert out['jobs'] == 403 and out['file_same'] and out['nomad_token_same'], out
    plain = (alloc_dir(client, done['plain']['id']) / 'alloc' / 'probe.json').read_text()
    assert plain == 'False'

    # the allocation ended: its token (a signed JWT, nothing of it kept in
    # the allocation) no longer opens anything
    secrets = alloc_dir(client, done['train']['id']) / 't' / 'secrets'
    token = (secrets / 'herd_token').read_text()
    assert token.startswith('eyJ') and token.count('.') == 2
    assert (secrets / 'nomad_token').read_text() == token
    assert (secrets / 'herd_token').stat().st_mode & 0o777 == 0o600
    assert call(addr, '/v1/var/nomad/jobs/train?namespace=team-a', token=token)[0] == 403
    al = call(addr, f'/v1/allocation/{done["train"]["id"]}', token=mgmt)[1]
    assert token.split('.')[-1] not in json.dumps(al) and 'identities' not in al
    # only a node token may ask for one
    assert call(addr, f'/v1/allocation/{done["train"]["id"]}/identity', token=mgmt,
                method='POST', body={'task': 't'})[0] == 409
    assert call(addr, f'/v1/allocation/{done["train"]["id"]}/identity', token=token,
                method='POST', body={'task': 't'})[0] == 403
