"""End-to-end: services and health checks (docs/jobspec.md "service",
docs/api.md "Services"): a service job registers its address and port and
turns passing; a tcp check on a closed port goes critical; check_restart
restarts the task; stopping the job removes the service; the CLI shows it.

A real dev agent on 127.0.0.1 (server and client in one process); every
process is killed in teardown (the `agents` fixture of test_control_plane).
No timing assertions: each wait polls with a generous deadline."""
import json
import socket
import sys

from test_control_plane import agents, api, cli, job_allocs, wait_for, write_job  # noqa: F401
from test_tasks import start_dev

PY = sys.executable if sys.executable.startswith('/usr/bin/') else '/usr/bin/python3'

WEB_JOB = '''
job "web" {
  group "g" {
    network {
      port "http" {}
    }
    service {
      name = "mlflow"
      port = "http"
      tags = ["tracking", "${NOMAD_JOB_NAME}"]
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
      service {
        name = "web-db"
        port = CLOSED_PORT
        check {
          type     = "tcp"
          interval = "1s"
          timeout  = "1s"
        }
        check {
          name     = "latin1"
          type     = "script"
          command  = "/bin/sh"
          args     = ["-c", "printf 'caf\\\\351 slow\\\\nsecond line\\\\n'; exit 1"]
          interval = "1s"
          timeout  = "1s"
        }
      }
    }
  }
}
'''

RESTART_JOB = '''
job "flaky" {
  group "g" {
    restart {
      attempts = 5
      interval = "10m"
      delay    = "1s"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      service {
        name = "flaky"
        check {
          type     = "script"
          command  = "/bin/sh"
          args     = ["-c", "echo not ready yet; exit 2"]
          interval = "1s"
          timeout  = "1s"
        }
        check_restart {
          limit = 2
          grace = "0s"
        }
      }
    }
  }
}
'''


def closed_port():
    """A port nothing listens on: bound for a moment, then closed."""
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def service(port, name):
    return api(port, f'/v1/service/{name}')


def check_status(inst):
    return [c['status'] for c in inst['checks']]


def test_service_registers_and_turns_healthy(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    job = write_job(tmp_path, 'web', WEB_JOB.replace('PY', PY)
                    .replace('CLOSED_PORT', str(closed_port())))
    r = cli(dev.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr

    # the http check passes once python's server listens
    inst = wait_for(lambda: [i for i in service(dev.port, 'mlflow') if i['health'] == 'passing'],
                    60, 'the mlflow service to be passing')
    [a] = job_allocs(dev.port, 'web')
    [i] = inst
    ports = {p['label']: p['value'] for p in a['resources']['ports']}
    assert i['alloc_id'] == a['id'] and i['job_id'] == 'web' and i['node_id'] == a['node_id']
    assert i['address'] == '127.0.0.1' and i['port'] == ports['http']
    assert i['tags'] == ['tracking', 'web']   # ${NOMAD_JOB_NAME} interpolated
    assert i['task'] == 'server'
    [c] = i['checks']
    assert c['type'] == 'http' and c['status'] == 'passing' and ' 200' in c['output']

    # a tcp check on a closed port: critical, with why
    db = wait_for(lambda: [i for i in service(dev.port, 'web-db') if i['health'] == 'critical'
                           and i['checks'][0]['output']], 60, 'the web-db check to run')
    assert 'TCP connect' in db[0]['checks'][0]['output']
    # a script's exit 1 is a warning; its first line, not UTF-8, shown with '?'
    [script] = wait_for(lambda: [c for c in service(dev.port, 'web-db')[0]['checks']
                                 if c['name'] == 'latin1' and c['output']], 60,
                        'the script check to run')
    assert script['status'] == 'warning' and script['output'] == 'caf? slow', script

    # the list
    listed = {s['name']: s for s in api(dev.port, '/v1/services')}
    assert listed['mlflow']['instances'] == 1 and listed['mlflow']['healthy'] == 1
    assert listed['mlflow']['namespace'] == 'default'
    assert listed['web-db']['instances'] == 1 and listed['web-db']['healthy'] == 0

    # the CLI
    r = cli(dev.port, 'service', 'list')
    assert r.returncode == 0, r.stderr
    assert 'mlflow' in r.stdout and 'web-db' in r.stdout
    r = cli(dev.port, 'service', 'info', 'mlflow')
    assert r.returncode == 0, r.stderr
    assert f'127.0.0.1:{ports["http"]}' in r.stdout and 'passing' in r.stdout
    r = cli(dev.port, 'service', 'info', '-json', 'mlflow')
    assert json.loads(r.stdout)[0]['alloc_id'] == a['id']
    r = cli(dev.port, 'service', 'info', 'nothing-here')
    assert r.returncode != 0

    # a blocking query on the registry wakes on a change (the job's stop)
    idx = int(api_index(dev.port, '/v1/service/mlflow'))
    r = cli(dev.port, 'job', 'stop', 'web')
    assert r.returncode == 0, r.stdout + r.stderr
    assert int(api_index(dev.port, f'/v1/service/mlflow?index={idx}&wait=30s')) > idx
    wait_for(lambda: service(dev.port, 'mlflow') == [] and service(dev.port, 'web-db') == [],
             30, 'the services to leave the registry')
    assert 'mlflow' not in {s['name'] for s in api(dev.port, '/v1/services')}


def api_index(port, path):
    import urllib.request
    with urllib.request.urlopen(f'http://127.0.0.1:{port}{path}', timeout=60) as r:
        return r.headers['X-Herd-Index']


def test_check_restart_restarts_the_task(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    job = write_job(tmp_path, 'flaky', RESTART_JOB)
    r = cli(dev.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr

    inst = wait_for(lambda: [i for i in service(dev.port, 'flaky')
                             if i['checks'][0]['output'] == 'not ready yet'], 60,
                    'the script check to run')
    assert inst[0]['health'] == 'critical'
    # two critical results in a row restart the task: counted in its state
    a = wait_for(lambda: [a for a in job_allocs(dev.port, 'flaky')
                          if a.get('task_states', {}).get('t', {}).get('restarts', 0) >= 1],
                 90, 'check_restart to restart the task')[0]
    msgs = [e['message'] for e in a['task_states']['t']['events']
            if e['type'] == 'Restart Signaled']
    assert msgs and 'healthcheck' in msgs[0] and 'not ready yet' in msgs[0], msgs
    # through the restart policy (its delay), not as a user's restart
    restarting = [e['message'] for e in a['task_states']['t']['events']
                  if e['type'] == 'Restarting']
    assert restarting and restarting[0].startswith('task restarting in'), restarting
    # registered again once the restarted task runs (it restarts every few
    # seconds: looked at until a look finds it registered)
    def status_with_services():
        r = cli(dev.port, 'alloc', 'status', a['id'])
        assert r.returncode == 0, r.stderr
        return '\nServices\n' in r.stdout and r.stdout
    out = wait_for(status_with_services, 60, 'alloc status to show the services')
    # its Services table: the service, its task and health
    svc_lines = out.split('\nServices\n', 1)[1].splitlines()
    assert svc_lines[0].split()[:5] == ['SERVICE', 'TASK', 'ADDRESS', 'HEALTH', 'CHECKS']
    assert svc_lines[1].split()[:2] == ['flaky', 't'], out


RECOVER_JOB = '''
job "keep" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      service {
        name = "keep-${NOMAD_TASK_NAME}"
        check {
          type     = "script"
          command  = "/bin/sh"
          args     = ["-c", "echo alive in $NOMAD_ALLOC_ID"]
          interval = "1s"
          timeout  = "1s"
        }
      }
    }
  }
}
'''


def test_services_survive_a_client_restart(agents, tmp_path):
    """kill -9 of the client: the task keeps running; the restarted client
    registers its services again (from the recovered task) and checks go on."""
    from test_tasks import _client_hcl, _server_hcl
    from test_control_plane import GPUS, Agent
    server = Agent(tmp_path, 'server', ['-config', str(_server_hcl(tmp_path)),
                                        '-http-port', '0']).start()
    agents.append(server)
    client = Agent(tmp_path, 'c1', ['-config', str(_client_hcl(tmp_path)), '-servers',
                                    f'127.0.0.1:{server.port}', '-node', 'c1',
                                    '-http-port', '0'],
                   gpu_file=GPUS / 't4-2x.json').start()
    agents.append(client)
    wait_for(lambda: [n for n in api(server.port, '/v1/nodes') if n['status'] == 'ready'], 10,
             'the client node')
    job = write_job(tmp_path, 'keep', RECOVER_JOB)
    assert cli(server.port, 'job', 'run', '-detach', job).returncode == 0
    [inst] = wait_for(lambda: [i for i in service(server.port, 'keep-t')
                               if i['health'] == 'passing'], 60, 'the check to pass')
    assert inst['checks'][0]['output'] == f'alive in {inst["alloc_id"]}'
    before = inst['checks'][0]['time']
    client.kill9()
    client.port = None
    client.start()
    wait_for(lambda: 'recovered' in client.log(), 15, 'the recovery')
    # the check runs again on the new client (its time moves), still passing
    wait_for(lambda: [i for i in service(server.port, 'keep-t')
                      if i['checks'][0]['time'] > before and i['health'] == 'passing'
                      and i['checks'][0]['output'] == f'alive in {inst["alloc_id"]}'],
             60, 'the recovered task\'s check to run')


ACL_JOB = '''
job "api" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      service {
        name = "team-api"
        port = 8080
      }
    }
  }
}
'''


def test_services_need_read_on_their_namespace(agents, tmp_path):
    """ACL: a token reads the services of the namespaces it may read, and no
    other's (a list over every namespace leaves them out)."""
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
    policies = {'team-a': 'namespace "team-a" {\n  policy = "submit"\n}\n',
                'team-b': 'namespace "team-b" {\n  policy = "submit"\n}\n',
                'nodes': 'node {\n  policy = "write"\n}\n'}
    secrets = {}
    for name, text in policies.items():
        if name != 'nodes':
            assert herd_as(port, 'namespace', 'apply', name, token=mgmt).returncode == 0
        f = tmp_path / f'{name}.policy.hcl'
        f.write_text(text)
        assert herd_as(port, 'acl', 'policy', 'apply', name, str(f), token=mgmt).returncode == 0
        r = herd_as(port, 'acl', 'token', 'create', '-name', name, '-policy', name, token=mgmt)
        assert r.returncode == 0, r.stderr
        secrets[name] = secret_of(r.stdout)
    cli_cfg = tmp_path / 'client.hcl'
    cli_cfg.write_text('bind_addr = "127.0.0.1"\nclient {\n  enabled = true\n'
                       f'  servers = ["{addr}"]\n  token = "{secrets["nodes"]}"\n}}\n'
                       'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
    client = Agent(tmp_path, 'client', ['-config', str(cli_cfg), '-http-port', '0'],
                   gpu_file=GPUS / 't4-2x.json').start()
    agents.append(client)
    wait_for(lambda: [n for n in call(addr, '/v1/nodes', token=mgmt)[1]
                      if n['status'] == 'ready'], 20, 'the client node')
    job = write_job(tmp_path, 'api', ACL_JOB)
    r = herd_as(port, 'job', 'run', '-detach', '-namespace', 'team-a', job,
                token=secrets['team-a'])
    assert r.returncode == 0, r.stdout + r.stderr

    def team_a_api():
        st, body = call(addr, '/v1/service/team-api?namespace=team-a', token=secrets['team-a'])
        return st == 200 and body
    [inst] = wait_for(team_a_api, 60, 'the service to register')
    assert inst['namespace'] == 'team-a' and inst['port'] == 8080 and inst['health'] == 'passing'
    # team-b's token, and no token: refused
    assert call(addr, '/v1/service/team-api?namespace=team-a', token=secrets['team-b'])[0] == 403
    assert call(addr, '/v1/services?namespace=team-a', token=secrets['team-b'])[0] == 403
    assert call(addr, '/v1/services?namespace=team-a')[0] == 403
    # every namespace: team-b sees nothing of team-a's, team-a and management see it
    st, body = call(addr, '/v1/services?namespace=*', token=secrets['team-b'])
    assert st == 200 and body == [], body
    st, body = call(addr, '/v1/service/team-api?namespace=*', token=secrets['team-b'])
    assert st == 200 and body == [], body
    st, body = call(addr, '/v1/services?namespace=*', token=secrets['team-a'])
    assert [(s['namespace'], s['name']) for s in body] == [('team-a', 'team-api')], body
    r = herd_as(port, 'service', 'list', '-namespace', '*', token=mgmt)
    assert r.returncode == 0 and 'team-api' in r.stdout, r.stdout + r.stderr


def test_services_leave_with_their_node(agents, tmp_path):
    """A node that stops heartbeating is down: its allocations are lost,
    and their services leave the registry."""
    from test_control_plane import TTL, server_config, start_client
    from test_control_plane import Agent
    srv = Agent(tmp_path, 'server', ['-config', server_config(tmp_path),
                                     '-http-port', '0']).start()
    agents.append(srv)
    client = start_client(agents, tmp_path, 'c1', srv.port, 't4-2x.json')
    wait_for(lambda: [n for n in api(srv.port, '/v1/nodes') if n['status'] == 'ready'], 15,
             'the client node')
    job = write_job(tmp_path, 'api', ACL_JOB)
    assert cli(srv.port, 'job', 'run', '-detach', job).returncode == 0
    [inst] = wait_for(lambda: service(srv.port, 'team-api'), 60, 'the service to register')
    client.kill9()
    wait_for(lambda: service(srv.port, 'team-api') == [], TTL + 30,
             'the down node\'s service to leave')
    assert api(srv.port, f'/v1/allocation/{inst["alloc_id"]}')['client_status'] == 'lost'
    assert api(srv.port, '/v1/services') == []


TLS_JOB = '''
job "tlsweb" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      service {
        name = "tls-skip"
        port = PORT
        check {
          type            = "http"
          protocol        = "https"
          path            = "/skip"
          method          = "POST"
          body            = "hello from the check"
          tls_skip_verify = true
          tls_server_name = "checks.test"
          interval        = "2s"
          timeout         = "2s"
        }
      }
      service {
        name = "tls-verify"
        port = PORT
        check {
          type     = "http"
          protocol = "https"
          path     = "/verify"
          interval = "2s"
          timeout  = "2s"
        }
      }
    }
  }
}
'''


def test_https_checks_verify_skip_server_name_and_body(agents, tmp_path):
    """An https check verifies the certificate (one of a CA the system does
    not know: critical, the error in the output) unless tls_skip_verify;
    tls_server_name is the name the server is sent (SNI), and body goes
    with the method to the server (a Python one over TLS, in this test)."""
    import http.server
    import ssl
    import threading
    from test_tls import make_ca, make_cert
    d = tmp_path / 'certs'
    d.mkdir()
    make_ca(d, 'ca')
    make_cert(d, 'ca', 'web', 'subjectAltName=DNS:checks.test,IP:127.0.0.1\n'
              'extendedKeyUsage=serverAuth\n')
    seen = {'bodies': [], 'sni': []}

    class Handler(http.server.BaseHTTPRequestHandler):
        def reply(self):
            n = int(self.headers.get('Content-Length') or 0)
            seen['bodies'].append((self.command, self.path, self.rfile.read(n).decode()))
            self.send_response(200)
            self.send_header('Content-Length', '2')
            self.end_headers()
            self.wfile.write(b'ok')

        do_GET = do_POST = reply

        def log_message(self, *a):
            pass

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(d / 'web.pem', d / 'web-key.pem')
    ctx.sni_callback = lambda sock, name, c: seen['sni'].append(name)
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        dev = start_dev(agents, tmp_path)
        job = write_job(tmp_path, 'tlsweb', TLS_JOB.replace('PORT', str(srv.server_port)))
        r = cli(dev.port, 'job', 'run', '-detach', job)
        assert r.returncode == 0, r.stdout + r.stderr
        [i] = wait_for(lambda: [i for i in service(dev.port, 'tls-skip')
                                if i['health'] == 'passing'], 60, 'the skip check to pass')
        assert ' 200' in i['checks'][0]['output'], i
        [v] = wait_for(lambda: [i for i in service(dev.port, 'tls-verify')
                                if i['checks'] and i['checks'][0]['output']], 60,
                       'the verifying check to run')
        c = v['checks'][0]
        assert c['status'] == 'critical', c
        assert 'certificate' in c['output'].lower(), c
        assert ('POST', '/skip', 'hello from the check') in seen['bodies'], seen
        assert not [b for b in seen['bodies'] if b[1] == '/verify'], seen
        assert 'checks.test' in seen['sni'], seen
    finally:
        srv.shutdown()
