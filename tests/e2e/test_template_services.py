"""End-to-end: service discovery in templates (docs/jobspec.md, "template:
service discovery").  Job "mlflow" runs python's http.server on a port from
`network` and registers service "mlflow" with an http check; job "trainer"
renders the service's address:port into a file with `nomadService`.  The
agent watches the service: when mlflow stops, or runs again on another
port, the trainer's file changes and its change_mode is carried out
(restart: the task starts again and reads the new file; signal: the task
gets the signal and is not restarted; noop: nothing).

A real dev agent on 127.0.0.1 (server and client in one process); every
process is killed in teardown.  No timing assertions: each wait polls with
a generous deadline."""
import socket
import sys

from test_control_plane import agents, api, cli, job_allocs, wait_for, write_job  # noqa: F401
from test_tasks import alloc_dir, start_dev

PY = sys.executable if sys.executable.startswith('/usr/bin/') else '/usr/bin/python3'

MLFLOW_JOB = '''
job "mlflow" {
  group "g" {
    network {
      port "http" { STATIC }
    }
    service {
      name = "mlflow"
      port = "http"
      tags = ["tracking", "v1"]
      check {
        type     = "http"
        path     = "/"
        interval = "1s"
        timeout  = "1s"
      }
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = "PY"
        args    = ["-m", "http.server", "--bind", "127.0.0.1", "${NOMAD_PORT_http}"]
      }
    }
  }
}
'''

# Each start appends what the task read from its file to alloc/seen.txt.
TRAINER_JOB = '''
job "trainer" {
  group "g" {
    task "train" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "cat \\"$NOMAD_TASK_DIR/local/mlflow.txt\\" >> \\"$NOMAD_ALLOC_DIR/seen.txt\\"; exec sleep 600"]
      }
      template {
        data        = "{{ range nomadService \\"mlflow\\" }}{{ .Address }}:{{ .Port }}\\n{{ else }}none\\n{{ end }}"
        destination = "local/mlflow.txt"
        change_mode = "restart"
      }
    }
  }
}
'''

# A task that, at each SIGHUP, appends what signal.txt says then to
# alloc/hups; one template signals, one does nothing when it changes.
WATCHER_JOB = '''
job "watcher" {
  group "g" {
    task "w" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "trap 'cat \\"$NOMAD_TASK_DIR/local/signal.txt\\" >> \\"$NOMAD_ALLOC_DIR/hups\\"' HUP; while :; do sleep 0.2; done"]
      }
      template {
        data          = "{{ with nomadService \\"mlflow\\" }}{{ range . }}{{ .Address }}:{{ .Port }} [{{ join \\",\\" .Tags }}]{{ end }}{{ else }}down{{ end }}\\n"
        destination   = "local/signal.txt"
        change_mode   = "signal"
        change_signal = "SIGHUP"
      }
      template {
        data        = "{{ range nomadServices }}{{ .Name }}\\n{{ end }}"
        destination = "local/names.txt"
        change_mode = "noop"
      }
    }
  }
}
'''


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def mlflow_job(tmp_path, static=None):
    port = f'static = {static}' if static else ''
    return write_job(tmp_path, 'mlflow', MLFLOW_JOB.replace('PY', PY).replace("STATIC", port))


def run(dev, path):
    r = cli(dev.port, 'job', 'run', '-detach', path)
    assert r.returncode == 0, r.stdout + r.stderr


def passing_port(dev):
    inst = [i for i in api(dev.port, '/v1/service/mlflow') if i['health'] == 'passing']
    return len(inst) == 1 and inst[0]['port']


def running_alloc(dev, job):
    allocs = [a for a in job_allocs(dev.port, job)
              if a['desired_status'] == 'run' and a['client_status'] == 'running']
    return allocs[0] if len(allocs) == 1 else None


def read(path):
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def task_state(dev, alloc_id, task):
    return api(dev.port, f'/v1/allocation/{alloc_id}')['task_states'][task]


def test_template_follows_a_service_and_restarts(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    # the trainer first: no instance yet, the else part
    run(dev, write_job(tmp_path, 'trainer', TRAINER_JOB))
    b = wait_for(lambda: running_alloc(dev, 'trainer'), 60, 'the trainer to run')
    bdir = alloc_dir(dev, b['id'])
    out = bdir / 'train' / 'local' / 'mlflow.txt'
    seen = bdir / 'alloc' / 'seen.txt'
    assert out.read_text() == 'none\n'
    wait_for(lambda: read(seen) == 'none\n', 30, 'the task to read its file')

    # mlflow runs: the file gets its address, and the task restarts on it
    run(dev, mlflow_job(tmp_path))
    p1 = wait_for(lambda: passing_port(dev), 60, 'mlflow to be passing')
    wait_for(lambda: read(out) == f'127.0.0.1:{p1}\n', 60, 'the template to render mlflow')
    wait_for(lambda: read(seen) == f'none\n127.0.0.1:{p1}\n', 60,
             'the trainer to restart with the new file')
    st = task_state(dev, b['id'], 'train')
    assert st['restarts'] == 1, st
    msgs = [e['message'] for e in st['events'] if e['type'] == 'Restart Signaled']
    assert msgs == ['template with change_mode restart re-rendered'], st['events']
    assert any(e['type'] == 'Restarting' and 'a template change' in e['message']
               for e in st['events']), st['events']

    # mlflow stops: back to the else part
    r = cli(dev.port, 'job', 'stop', 'mlflow')
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: read(out) == 'none\n', 60, 'the template to see mlflow leave')
    wait_for(lambda: read(seen) == f'none\n127.0.0.1:{p1}\nnone\n', 60,
             'the trainer to restart again')

    # mlflow again, on another port: the new address
    p2 = free_port()
    assert p2 != p1
    run(dev, mlflow_job(tmp_path, p2))
    wait_for(lambda: passing_port(dev) == p2, 60, 'mlflow on its new port')
    wait_for(lambda: read(out) == f'127.0.0.1:{p2}\n', 60, 'the template to follow the move')
    wait_for(lambda: read(seen) == f'none\n127.0.0.1:{p1}\nnone\n127.0.0.1:{p2}\n', 60,
             'the trainer to restart on the new address')
    # the same allocation all along: restarted in place, not replaced
    assert running_alloc(dev, 'trainer')['id'] == b['id']
    assert task_state(dev, b['id'], 'train')['restarts'] == 3

    # the trainer stops: its watch ends with it, the file stays as it was
    r = cli(dev.port, 'job', 'stop', 'trainer')
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: all(a['client_status'] != 'running' for a in job_allocs(dev.port, 'trainer')),
             60, 'the trainer to stop')
    r = cli(dev.port, 'job', 'stop', 'mlflow')
    assert r.returncode == 0
    wait_for(lambda: api(dev.port, '/v1/service/mlflow') == [], 60, 'mlflow to leave')
    assert read(out) == f'127.0.0.1:{p2}\n'


def test_template_signal_and_noop(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    run(dev, mlflow_job(tmp_path))
    p1 = wait_for(lambda: passing_port(dev), 60, 'mlflow to be passing')
    run(dev, write_job(tmp_path, 'watcher', WATCHER_JOB))
    w = wait_for(lambda: running_alloc(dev, 'watcher'), 60, 'the watcher to run')
    local = alloc_dir(dev, w['id']) / 'w' / 'local'
    hups = alloc_dir(dev, w['id']) / 'alloc' / 'hups'
    assert (local / 'signal.txt').read_text() == f'127.0.0.1:{p1} [tracking,v1]\n'
    assert (local / 'names.txt').read_text() == 'mlflow\n'
    assert read(hups) is None

    # mlflow stops: signal.txt changes (SIGHUP), names.txt too (noop)
    assert cli(dev.port, 'job', 'stop', 'mlflow').returncode == 0
    wait_for(lambda: read(local / 'signal.txt') == 'down\n', 60, 'signal.txt to change')
    wait_for(lambda: read(local / 'names.txt') == '', 60, 'names.txt to change')
    wait_for(lambda: read(hups) == 'down\n', 60, 'the task to get SIGHUP')
    st = wait_for(lambda: [s for s in [task_state(dev, w['id'], 'w')]
                           if any(e['type'] == 'Signaling' and 'SIGHUP' in e['message']
                                  for e in s['events'])], 60, 'the Signaling event')[0]
    assert st['restarts'] == 0 and st['state'] == 'running', st
    # one change, one signal: the noop template adds none
    assert read(hups) == 'down\n'


def pinned(text, node):
    """The job constrained to the client named node."""
    return text.replace('  group "g" {', '  constraint {\n    attribute = "${node.unique.name}"\n'
                        f'    value     = "{node}"\n  }}\n  group "g" {{', 1)


def test_template_watch_over_http_and_client_restart(agents, tmp_path):
    """A server and two clients in processes of their own (the watch's
    blocking queries over HTTP): the watcher on c1 follows mlflow on c2; c1
    is killed (-9), mlflow stops meanwhile, and the restarted c1 recovers its
    task, renders its templates again, finds the file out of date, writes it
    and signals the task.  Stopping the job ends its watch with it (the
    allocation completes)."""
    from test_control_plane import GPUS, Agent
    from test_tasks import _client_hcl, _server_hcl
    server = Agent(tmp_path, 'server', ['-config', str(_server_hcl(tmp_path)),
                                        '-http-port', '0']).start()
    agents.append(server)
    clients = {}
    for name in ('c1', 'c2'):
        c = Agent(tmp_path, name, ['-config', str(_client_hcl(tmp_path)), '-servers',
                                   f'127.0.0.1:{server.port}', '-node', name,
                                   '-http-port', '0'],
                  gpu_file=GPUS / 't4-2x.json').start()
        agents.append(c)
        clients[name] = c
    wait_for(lambda: len([n for n in api(server.port, '/v1/nodes') if n['status'] == 'ready']) == 2,
             30, 'both client nodes')

    run(server, write_job(tmp_path, 'mlflow', pinned(MLFLOW_JOB.replace('PY', PY)
                                                     .replace('STATIC', ''), 'c2')))
    p1 = wait_for(lambda: passing_port(server), 60, 'mlflow to be passing')
    run(server, write_job(tmp_path, 'watcher', pinned(WATCHER_JOB, 'c1')))
    w = wait_for(lambda: running_alloc(server, 'watcher'), 60, 'the watcher to run')
    local = alloc_dir(clients['c1'], w['id']) / 'w' / 'local'
    hups = alloc_dir(clients['c1'], w['id']) / 'alloc' / 'hups'
    assert (local / 'signal.txt').read_text() == f'127.0.0.1:{p1} [tracking,v1]\n'

    # the watch over HTTP: mlflow moves to another port
    p2 = free_port()
    run(server, write_job(tmp_path, 'mlflow', pinned(MLFLOW_JOB.replace('PY', PY)
                                                     .replace('STATIC', f'static = {p2}'), 'c2')))
    wait_for(lambda: read(local / 'signal.txt') == f'127.0.0.1:{p2} [tracking,v1]\n', 90,
             'signal.txt to follow mlflow to its new port')
    # (the move may be seen as two changes, mlflow down then up again: a
    # signal each; the last one finds the new port)
    wait_for(lambda: (read(hups) or '').endswith(f'127.0.0.1:{p2} [tracking,v1]\n'), 60,
             'the task to get SIGHUP')

    # c1 away while mlflow stops: its recovered task's file is brought up
    # to date and the task signalled
    c1 = clients['c1']
    c1.kill9()
    c1.port = None
    assert cli(server.port, 'job', 'stop', 'mlflow').returncode == 0
    wait_for(lambda: api(server.port, '/v1/service/mlflow') == [], 60, 'mlflow to leave')
    assert read(local / 'signal.txt') == f'127.0.0.1:{p2} [tracking,v1]\n'
    c1.start()
    wait_for(lambda: 'recovered' in c1.log(), 30, 'the recovery')
    wait_for(lambda: read(local / 'signal.txt') == 'down\n', 60,
             'the recovered task\'s template to be rendered again')
    wait_for(lambda: read(hups).endswith('down\n'), 60, 'the recovered task to get SIGHUP')
    assert running_alloc(server, 'watcher')['id'] == w['id']

    # stopping the job ends the watch with the allocation
    assert cli(server.port, 'job', 'stop', 'watcher').returncode == 0
    wait_for(lambda: [a for a in job_allocs(server.port, 'watcher')
                      if a['client_status'] == 'complete'], 60, 'the watcher to complete')


def test_template_services_with_acl(agents, tmp_path):
    """ACL: the agent reads services with its own token (client { token }).
    A node token that may not read the job's namespace fails the task at
    its start with the server's refusal, once (no restart); one whose policy
    also reads the namespace renders the service."""
    from test_acl import call, herd as herd_as, secret_of
    from test_control_plane import GPUS, Agent
    srv_cfg = tmp_path / 'server.hcl'
    srv_cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n'
                       'acl {\n  enabled = true\n}\n')
    srv = Agent(tmp_path, 'server', ['-config', str(srv_cfg), '-http-port', '0']).start()
    agents.append(srv)
    port, addr = srv.port, f'127.0.0.1:{srv.port}'
    wait_for(lambda: call(addr, '/v1/agent/health')[0] == 200, 10, 'the server')
    r = herd_as(port, 'acl', 'bootstrap')
    assert r.returncode == 0, r.stderr
    mgmt = secret_of(r.stdout)
    policies = {
        'node-only': 'node {\n  policy = "write"\n}\n',
        'node-svc': 'node {\n  policy = "write"\n}\n'
                    'namespace "default" {\n  policy = "read"\n}\n',
    }
    secrets = {}
    for name, text in policies.items():
        f = tmp_path / f'{name}.policy.hcl'
        f.write_text(text)
        r = herd_as(port, 'acl', 'policy', 'apply', name, str(f), token=mgmt)
        assert r.returncode == 0, r.stderr
        r = herd_as(port, 'acl', 'token', 'create', '-name', name, '-policy', name, token=mgmt)
        assert r.returncode == 0, r.stderr
        secrets[name] = secret_of(r.stdout)
    for node, token in (('c1', secrets['node-only']), ('c2', secrets['node-svc'])):
        cfg = tmp_path / f'{node}.hcl'
        cfg.write_text(f'bind_addr = "127.0.0.1"\nname = "{node}"\n'
                       'client {\n  enabled = true\n'
                       f'  servers = ["{addr}"]\n'
                       f'  token = "{token}"\n}}\n'
                       'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
        agents.append(Agent(tmp_path, node, ['-config', str(cfg), '-http-port', '0'],
                            gpu_file=GPUS / 't4-2x.json').start())
    wait_for(lambda: len([n for n in call(addr, '/v1/nodes', token=mgmt)[1]
                          if n['status'] == 'ready']) == 2, 30, 'both client nodes')

    def allocs(job):
        return call(addr, f'/v1/job/{job}/allocations', token=mgmt)[1]

    def run_as_mgmt(name, text):
        r = herd_as(port, 'job', 'run', '-detach', write_job(tmp_path, name, text), token=mgmt)
        assert r.returncode == 0, r.stdout + r.stderr

    run_as_mgmt('mlflow', pinned(MLFLOW_JOB.replace('PY', PY).replace('STATIC', ''), 'c2'))
    inst = wait_for(lambda: [i for i in call(addr, '/v1/service/mlflow', token=mgmt)[1]
                             if i['health'] == 'passing'], 60, 'mlflow to be passing')
    p1 = inst[0]['port']

    # c1's token may not read the namespace: the start fails and says why
    run_as_mgmt('trainer', pinned(TRAINER_JOB, 'c1'))
    [a] = wait_for(lambda: [a for a in allocs('trainer') if a['client_status'] == 'failed'], 60,
                   'the trainer on c1 to fail')
    st = a['task_states']['train']
    failure = [e['message'] for e in st['events'] if e['type'] == 'Setup Failure']
    assert failure and 'template line 1: nomadService "mlflow"' in failure[0], st['events']
    assert 'permission' in failure[0] or '403' in failure[0], failure
    assert st['restarts'] == 0

    # c2's may: the same template renders there
    run_as_mgmt('trainer2', pinned(TRAINER_JOB.replace('job "trainer"', 'job "trainer2"'), 'c2'))
    [b] = wait_for(lambda: [a for a in allocs('trainer2') if a['client_status'] == 'running'],
                   60, 'trainer2 on c2 to run')
    out = tmp_path / 'c2' / 'data' / 'alloc' / b['id'] / 'train' / 'local' / 'mlflow.txt'
    assert out.read_text() == f'127.0.0.1:{p1}\n'


# Two allocations whose main task starts (and renders its template) only
# once alloc/go exists: the test chooses when each first render happens.
GATED_JOB = '''
job "gated" {
  group "g" {
    count = 2
    task "gate" {
      lifecycle {
        hook = "prestart"
      }
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "while [ ! -e \\"$NOMAD_ALLOC_DIR/go\\" ]; do sleep 0.1; done"]
      }
    }
    task "train" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      template {
        data        = "{{ range nomadService \\"mlflow\\" }}{{ .Address }}:{{ .Port }}\\n{{ end }}"
        destination = "local/mlflow.txt"
      }
    }
  }
}
'''


def test_template_first_render_waits_for_the_server(agents, tmp_path):
    """The server is away when a task's template is first rendered: the
    agent asks again with backoff.  One allocation waits out the 60 s and
    fails with an event that says why; the other starts its render later,
    the server comes back meanwhile, and it renders and runs."""
    from test_control_plane import GPUS, Agent
    from test_tasks import _client_hcl, _server_hcl
    server = Agent(tmp_path, 'server', ['-config', str(_server_hcl(tmp_path)),
                                        '-http-port', '0']).start()
    agents.append(server)
    client = Agent(tmp_path, 'c1', ['-config', str(_client_hcl(tmp_path)), '-servers',
                                    f'127.0.0.1:{server.port}', '-node', 'c1',
                                    '-http-port', '0'],
                   gpu_file=GPUS / 't4-2x.json').start()
    agents.append(client)
    wait_for(lambda: [n for n in api(server.port, '/v1/nodes') if n['status'] == 'ready'], 30,
             'the client node')
    run(server, mlflow_job(tmp_path))
    p1 = wait_for(lambda: passing_port(server), 60, 'mlflow to be passing')
    run(server, write_job(tmp_path, 'gated', GATED_JOB))
    def gates_running():
        r = [a for a in job_allocs(server.port, 'gated')
             if a.get('task_states', {}).get('gate', {}).get('state') == 'running']
        return len(r) == 2 and r
    allocs = wait_for(gates_running, 60, 'both gates to run')
    a, b = allocs[0]['id'], allocs[1]['id']

    port = server.port
    server.kill9()
    (alloc_dir(client, a) / 'alloc' / 'go').write_text('')
    wait_for(lambda: 'the server could not be reached for 60s' in client.log(), 120,
             'the first allocation to give up on the server')
    # the second starts its wait now; the server is back well within it
    (alloc_dir(client, b) / 'alloc' / 'go').write_text('')
    server.args = ['-config', str(tmp_path / 'server.hcl'), '-http-port', str(port)]
    server.start()

    def alloc(i):
        return api(port, f'/v1/allocation/{i}')
    failed = wait_for(lambda: [x for x in [alloc(a)] if x['client_status'] == 'failed'], 60,
                      'the first allocation to be reported failed')[0]
    st = failed['task_states']['train']
    msgs = [e['message'] for e in st['events'] if e['type'] == 'Setup Failure']
    assert msgs and 'nomadService "mlflow": the server could not be reached for 60s' in msgs[0], \
        st['events']
    assert st['restarts'] == 0
    wait_for(lambda: alloc(b)['client_status'] == 'running', 60, 'the second to run')
    out = alloc_dir(client, b) / 'train' / 'local' / 'mlflow.txt'
    assert out.read_text() == f'127.0.0.1:{p1}\n'
