"""End-to-end: a task's actions and `herd job action` (docs/jobspec.md,
"action").

The action runs inside a running allocation (the task's environment and
directory), its output and exit code pass through; the group, task and
allocation are found when not given (the allocation named on stderr); an
unknown name is a clear error that lists the job's actions; a name two
tasks define needs -task; GET /v1/job/:id/actions and herd job status list
them; the node runs the command of the job version the allocation runs,
never one from the request; a read-only token is refused.  Real herd agents
on 127.0.0.1 (raw_exec)."""
import json
import os
import pathlib
import subprocess
import re
import socket
import urllib.parse

from test_acl import acl_cluster, call, herd as herd_as
from test_control_plane import (HERD, REPO, agents, api, cli,  # noqa: F401
                                wait_for, write_job)
from test_alloc_exec import run_job
from test_tasks import alloc_dir, start_dev

JOB = '''
job "svc" {
  group "g" {
    task "web" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do sleep 0.2; done"]
      }
      action "hello" {
        command = "/bin/sh"
        args    = ["-c", "echo hello from $HERD_TASK_NAME; pwd; echo oops >&2; exit 7"]
      }
      action "mark" {
        command = "/bin/sh"
        args    = ["-c", "touch \\"$HERD_ALLOC_DIR/marked\\"; echo marked"]
      }
      action "both" {
        command = "/bin/echo"
        args    = ["web"]
      }
    }
    task "side" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do sleep 0.2; done"]
      }
      action "both" {
        command = "/bin/echo"
        args    = ["side"]
      }
    }
  }
}
'''


def action(port, *args, token=None):
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{port}')
    env.pop('HERD_TOKEN', None)
    if token:
        env['HERD_TOKEN'] = token
    return subprocess.run([str(HERD), 'job', 'action', *args], capture_output=True, text=True,
                          env=env, timeout=60, cwd=REPO, stdin=subprocess.DEVNULL)


def test_job_action_runs_the_defined_command(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    a = run_job(dev, tmp_path, 'svc', JOB)
    task_dir = os.path.realpath(alloc_dir(dev, a['id']) / 'web')

    # output, exit code, the task's environment and directory; the
    # allocation picked is named on stderr
    r = action(dev.port, '-job', 'svc', 'hello')
    assert r.returncode == 7, r.stdout + r.stderr
    out = r.stdout.splitlines()
    assert out[0] == 'hello from web' and os.path.realpath(out[1]) == task_dir, out
    assert 'oops' in r.stderr
    assert f'allocation {a["id"][:8]} (g/web)' in r.stderr, r.stderr
    r = action(dev.port, '-job', 'svc', '-alloc', a['id'][:8], 'mark')
    assert r.returncode == 0 and r.stdout == 'marked\n', r.stdout + r.stderr
    assert (alloc_dir(dev, a['id']) / 'alloc' / 'marked').exists()

    # an unknown name lists the job's actions; a name two tasks define
    # needs -task
    r = action(dev.port, '-job', 'svc', 'nope')
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'job "svc" has no action "nope" (its actions: hello, mark, both, both)' in r.stderr
    r = action(dev.port, '-job', 'svc', 'both')
    assert r.returncode == 1 and 'defined by 2 tasks (g/web, g/side)' in r.stderr, r.stderr
    r = action(dev.port, '-job', 'svc', '-task', 'side', 'both')
    assert r.returncode == 0 and r.stdout == 'side\n', r.stdout + r.stderr
    r = action(dev.port, '-job', 'svc', '-alloc', 'ffffffff', 'hello')
    assert r.returncode == 1 and r.stderr, r.stderr
    r = action(dev.port, 'hello')
    assert r.returncode == 2 and 'missing -job' in r.stderr, r.stderr

    # the list: the API and herd job status
    acts = api(dev.port, '/v1/job/svc/actions')
    assert acts[0] == {'name': 'hello', 'group': 'g', 'task': 'web', 'command': '/bin/sh',
                       'args': ['-c', 'echo hello from $HERD_TASK_NAME; pwd; echo oops >&2; '
                                'exit 7']}, acts
    assert [(x['name'], x['task']) for x in acts] == [('hello', 'web'), ('mark', 'web'),
                                                      ('both', 'web'), ('both', 'side')]
    r = cli(dev.port, 'job', 'status', 'svc')
    assert r.returncode == 0, r.stderr
    assert 'Actions' in r.stdout and 'hello' in r.stdout and '/bin/echo side' in r.stdout, \
        r.stdout


def upgrade_get(addr, path):
    """(status, parsed body) of an exec request refused before its upgrade."""
    host, port = addr.rsplit(':', 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(f'GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: Upgrade\r\n'
                  'Upgrade: herd-exec\r\n\r\n'.encode())
        raw = b''
        while b'\r\n\r\n' not in raw:
            raw += s.recv(4096)
        head, body = raw.split(b'\r\n\r\n', 1)
        length = int(re.search(rb'(?i)content-length:\s*(\d+)', head).group(1))
        while len(body) < length:
            body += s.recv(4096)
    return int(head.split()[1]), json.loads(body[:length])


def test_the_node_resolves_the_action_never_the_request(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    a = run_job(dev, tmp_path, 'svc', JOB)
    node = api(dev.port, f'/v1/allocation/{a["id"]}')['node_http_addr']
    # the exec endpoint with both a command and an action, or a bad name
    cmd = urllib.parse.quote(json.dumps(['id']))
    for query, want in ((f'action=hello&command={cmd}', 'not both'),
                        ('action=..%2Fx', 'action must be an action name'),
                        ('action=nope', 'task "web" has no action "nope" (its actions: hello, '
                                        'mark, both)'),
                        ('task=side&action=hello', 'task "side" has no action "hello" (its '
                                                   'actions: both)')):
        if 'task=' not in query:
            query = 'task=web&' + query
        status, body = upgrade_get(node, f'/v1/client/allocation/{a["id"]}/exec?{query}')
        assert status in (400, 404) and want in body['error']['message'], (status, body)


def test_acl_read_only_token_is_refused(agents, tmp_path):
    port, addr, mgmt, secrets, client = acl_cluster(agents, tmp_path, [
        ('submit', 'namespace "team-a" {\n  policy = "submit"\n}\n'),
        ('read', 'namespace "team-a" {\n  policy = "read"\n}\n'),
    ])
    f = write_job(tmp_path, 'svc', JOB)
    r = herd_as(port, 'job', 'run', '-namespace', 'team-a', f, token=secrets['submit'], timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = call(addr, '/v1/job/svc/allocations?namespace=team-a', token=secrets['read'])[1]
    marker = pathlib.Path(client.dir) / 'data' / 'alloc' / a['id'] / 'alloc' / 'marked'
    wait_for(lambda: all(t['state'] == 'running' for t in
                         call(addr, f'/v1/allocation/{a["id"]}?namespace=team-a',
                              token=secrets['read'])[1]['task_states'].values()),
             30, 'the tasks to run')

    # a reader lists the actions but may not run one
    status, acts = call(addr, '/v1/job/svc/actions?namespace=team-a', token=secrets['read'])
    assert status == 200 and len(acts) == 4, acts
    r = action(port, '-namespace', 'team-a', '-job', 'svc', 'mark', token=secrets['read'])
    assert r.returncode == 1 and 'permission denied' in r.stderr, r.stderr
    assert not marker.exists()
    r = action(port, '-namespace', 'team-a', '-job', 'svc', 'mark', token=secrets['submit'])
    assert r.returncode == 0 and r.stdout == 'marked\n', r.stdout + r.stderr
    assert marker.exists()


def test_docker_task_action_and_change_script(engine, agents, tmp_path):
    """A docker task: an action and a template's change_script both run as
    exec instances of the Engine API in its container."""
    from docker_engine import IMAGE
    from test_control_plane import job_allocs
    from test_tasks_docker import start_docker_cluster
    from test_vars import herd
    server, client, _ = start_docker_cluster(agents, tmp_path, engine['socket'])
    assert herd(server.port, 'var', 'put', 'cfg/dk', 'v=1').returncode == 0
    text = f'''
job "dk" {{
  group "g" {{
    task "box" {{
      driver = "docker"
      config {{
        image   = "{IMAGE}"
        command = "/bin/sh"
        args    = ["-c", "echo in-the-box > /tmp/marker; while true; do sleep 0.2; done"]
      }}
      resources {{
        memory = 64
      }}
      action "peek" {{
        command = "/bin/sh"
        args    = ["-c", "cat /tmp/marker; echo err >&2; exit 4"]
      }}
      template {{
        data        = "{{{{ with nomadVar \\"cfg/dk\\" }}}}v={{{{ .v }}}}{{{{ end }}}}\\n"
        destination = "local/cfg.txt"
        change_mode = "script"
        splay       = "0s"
        change_script {{
          command = "/bin/sh"
          args    = ["-c", "cat /local/cfg.txt > /alloc/scripted; cat /tmp/marker"]
        }}
      }}
    }}
  }}
}}
'''
    r = cli(server.port, 'job', 'run', '-detach', write_job(tmp_path, 'dk', text))
    assert r.returncode == 0, r.stdout + r.stderr
    a = wait_for(lambda: [x for x in job_allocs(server.port, 'dk')
                          if x.get('task_states', {}).get('box', {}).get('state') == 'running'],
                 60, f'the docker task to run\n{client.log()[-2000:]}')[0]
    r = action(server.port, '-job', 'dk', 'peek')
    assert r.returncode == 4 and r.stdout == 'in-the-box\n', r.stdout + r.stderr
    assert 'err' in r.stderr
    assert herd(server.port, 'var', 'put', 'cfg/dk', 'v=2').returncode == 0
    out = alloc_dir(client, a['id']) / 'alloc' / 'scripted'
    wait_for(lambda: out.exists() and out.read_text() == 'v=2\n', 60,
             f'the change_script to run in the container\n{client.log()[-2000:]}')

    def script_event():
        st = api(server.port, f'/v1/allocation/{a["id"]}')['task_states']['box']
        return [e['message'] for e in st['events'] if e['type'] == 'Template Script']
    msgs = wait_for(script_event, 30, 'the script event')
    assert any('ran (exit code 0)' in m for m in msgs), msgs
