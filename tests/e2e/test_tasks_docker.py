"""End-to-end: docker tasks through the whole agent (issues 6 and 9).

A server agent and a client agent (its plugin "docker" pointed at the
private dockerd of the `engine` fixture, docker_engine.py) run one job: a
prestart raw_exec task writes a file into the shared alloc dir, then a
docker task (the busybox image) reads that file at /alloc, prints, and
waits for a go file.  Checked: the container runs, `herd alloc logs` reads
its output, the prestart's file was seen inside the container; kill -9 of
the client leaves the container running, a restarted client re-attaches
(the task is not started again) and still sees its exit and its last log
line; the restarted client's garbage collection removes a container
labelled for an allocation that does not exist, and leaves ours alone.

Skips, with the reason, only where no engine can run (see docker_engine)."""
import json

from docker_engine import IMAGE, api as engine_api, containers
from test_control_plane import Agent, agents, api, cli, job_allocs, wait_for, write_job  # noqa: F401
from test_tasks import alloc_dir, events


def _configs(tmp_path, sock):
    server = tmp_path / 'server.hcl'
    server.write_text('server {\n  enabled = true\n}\nbind_addr = "127.0.0.1"\n')
    client = tmp_path / 'client.hcl'
    client.write_text('client {\n  enabled = true\n}\nbind_addr = "127.0.0.1"\n'
                      'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n'
                      f'plugin "docker" {{\n  config {{\n    endpoint = "unix://{sock}"\n'
                      '    gc {\n      dangling_containers {\n        period = "1s"\n'
                      '      }\n    }\n  }\n}\n')
    return server, client


def start_docker_cluster(agents, tmp_path, sock):  # noqa: F811
    """A server and a client c1 whose docker plugin uses the engine at
    sock: (server, client, the client's node as GET /v1/nodes lists it)."""
    server_hcl, client_hcl = _configs(tmp_path, sock)
    server = Agent(tmp_path, 'server', ['-config', str(server_hcl), '-http-port', '0']).start()
    agents.append(server)
    client = Agent(tmp_path, 'c1', ['-config', str(client_hcl), '-servers',
                                    f'127.0.0.1:{server.port}', '-node', 'c1',
                                    '-http-port', '0']).start()
    agents.append(client)
    node = wait_for(lambda: [n for n in api(server.port, '/v1/nodes')
                             if n['status'] == 'ready'], 15, 'the client node')[0]
    return server, client, node


def docker_job(job_id, script, memory=64):
    """A service job of one docker task "box" running script in the test
    image (HCL text)."""
    args = json.dumps(['-c', script])
    return f'''
job "{job_id}" {{
  group "g" {{
    task "box" {{
      driver = "docker"
      config {{
        image = "{IMAGE}"
        command = "/bin/sh"
        args = {args}
      }}
      resources {{
        memory = {memory}
      }}
    }}
  }}
}}
'''


def test_docker_task_through_the_agent(engine, agents, tmp_path):
    sock = engine['socket']
    server, client, node = start_docker_cluster(agents, tmp_path, sock)
    node = api(server.port, f'/v1/node/{node["id"]}')
    attrs = node.get('attributes', {})
    assert attrs.get('driver.docker') in ('1', 1, True), \
        f'the client did not detect the engine: {json.dumps(attrs)[:600]}\n{client.log()}'

    job = write_job(tmp_path, 'dk', f'''
job "dk" {{
  type = "batch"
  group "g" {{
    restart {{ attempts = 0 }}
    reschedule {{
      attempts = 0
      unlimited = false
    }}
    task "prep" {{
      lifecycle {{ hook = "prestart" }}
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "echo made by prestart > $HERD_ALLOC_DIR/msg.txt"]
      }}
    }}
    task "box" {{
      driver = "docker"
      config {{
        image = "{IMAGE}"
        command = "/bin/sh"
        args = ["-c", "echo inside: $(cat /alloc/msg.txt); while [ ! -e /alloc/go ]; do sleep 0.1; done; echo after restart; exit 3"]
      }}
      resources {{
        memory = 64
      }}
    }}
  }}
}}
''')
    r = cli(server.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr
    a = wait_for(lambda: [a for a in job_allocs(server.port, 'dk')
                          if a.get('task_states', {}).get('box', {}).get('state') == 'running'],
                 60, f'the docker task to run\n{client.log()[-2000:]}')[0]
    mine = containers(sock, f'herd.alloc_id={a["id"]}')
    assert len(mine) == 1 and mine[0]['State'] == 'running', mine

    # herd alloc logs reads the container's output, which holds what the
    # prestart task wrote into the shared alloc dir.
    def logged():
        r = cli(server.port, 'alloc', 'logs', a['id'][:8], 'box')
        return r.returncode == 0 and 'inside: made by prestart' in r.stdout and r
    wait_for(logged, 20, 'the container output through herd alloc logs')

    # kill -9 of the client: the container keeps running; a dangling
    # container (an allocation nobody runs) is planted meanwhile.
    client.kill9()
    assert containers(sock, f'herd.alloc_id={a["id"]}')[0]['State'] == 'running'
    status, body = engine_api(sock, 'POST', '/containers/create?name=herd-dangling',
                              body=json.dumps({'Image': IMAGE, 'Cmd': ['sleep', '600'],
                                               'Labels': {'herd.alloc_id': 'no-such-alloc'}}),
                              headers={'Content-Type': 'application/json'})
    assert status == 201, body
    assert engine_api(sock, 'POST', '/containers/herd-dangling/start')[0] == 204
    client.port = None
    client.start()
    wait_for(lambda: 'task box recovered' in client.log(), 20,
             f'the docker task to be recovered\n{client.log()[-2000:]}')
    wait_for(lambda: not containers(sock, 'herd.alloc_id=no-such-alloc'), 20,
             f'the dangling container to be removed\n{client.log()[-2000:]}')
    mine = containers(sock, f'herd.alloc_id={a["id"]}')
    assert len(mine) == 1 and mine[0]['State'] == 'running', mine

    (alloc_dir(client, a['id']) / 'alloc' / 'go').touch()
    done = wait_for(lambda: [a for a in job_allocs(server.port, 'dk')
                             if a['client_status'] == 'failed'], 30,
                    f'the exit to be reported\n{client.log()[-2000:]}')[0]
    ts = done['task_states']['box']
    assert ts['exit_code'] == 3 and ts['restarts'] == 0, ts
    assert events(done, 'box').count('Started') == 1, events(done, 'box')
    r = cli(server.port, 'alloc', 'logs', a['id'][:8], 'box')
    assert r.stdout.splitlines()[-1] == 'after restart', r.stdout + r.stderr
    # the ended container is removed (gc { container = true }, the default)
    wait_for(lambda: not containers(sock, f'herd.alloc_id={a["id"]}'), 20,
             'the ended container to be removed')

