"""End-to-end: task execution through the whole agent (issue 6): lifecycle
hooks with an artifact, restarts then reschedule, log streaming across a
rotation, kill -9 of the client, exec isolation (root only), docker (when an
engine can run).

Real herd agents on 127.0.0.1 with simulated GPUs; every process is killed in
teardown (the `agents` fixture of test_control_plane)."""
import http.server
import json
import os
import pathlib
import shutil
import signal
import subprocess
import threading
import time

import pytest

from test_control_plane import (GPUS, Agent, agents, api, cli, job_allocs,  # noqa: F401
                                wait_for, write_job)


def start_dev(agents, tmp_path, gpu_file='t4-2x.json', extra=()):
    dev = Agent(tmp_path, 'dev', ['-dev', '-http-port', '0', *extra],
                gpu_file=GPUS / gpu_file).start()
    agents.append(dev)
    wait_for(lambda: [n for n in api(dev.port, '/v1/nodes') if n['status'] == 'ready'], 10,
             'the dev node to be ready')
    return dev


def alloc_dir(agent, alloc_id):
    return agent.dir / 'data' / 'alloc' / alloc_id


def events(alloc, task):
    return [e['type'] for e in alloc['task_states'][task]['events']]


@pytest.fixture
def http_files(tmp_path):
    """A local http server for artifacts; yields (base url, folder)."""
    root = tmp_path / 'www'
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(root), **kw)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Quiet)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f'http://127.0.0.1:{srv.server_address[1]}', root
    srv.shutdown()


# --- (a) lifecycle: prestart, main with an artifact, poststop ------------------

LIFECYCLE_JOB = '''
job "life" {
  type = "batch"
  group "g" {
    restart { attempts = 0 }
    task "setup" {
      lifecycle { hook = "prestart" }
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "mkdir -p $HERD_ALLOC_DIR/venv/bin && echo ok > $HERD_ALLOC_DIR/venv/ready && sleep 1"]
      }
    }
    task "side" {
      lifecycle {
        hook = "prestart"
        sidecar = true
      }
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "date +%s%N > $HERD_ALLOC_DIR/side.started; exec sleep 600"]
      }
    }
    task "main" {
      driver = "raw_exec"
      artifact {
        source = "ARTIFACT_URL/tool.sh"
        destination = "local/bin/"
      }
      template {
        data = "job={{ env \\"HERD_JOB_ID\\" }} task={{ env \\"HERD_TASK_NAME\\" }}\\n"
        destination = "local/info.txt"
        perms = "0600"
      }
      env {
        GREETING = "hi from ${HERD_TASK_NAME}"
      }
      config {
        command = "/bin/sh"
        args = ["-c", "test -f $HERD_ALLOC_DIR/venv/ready && sh local/bin/tool.sh > $HERD_ALLOC_DIR/result.txt && cat local/info.txt >> $HERD_ALLOC_DIR/result.txt && echo \\"$GREETING ${node.datacenter}\\" >> $HERD_ALLOC_DIR/result.txt"]
      }
    }
    task "collect" {
      lifecycle { hook = "poststop" }
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "cp $HERD_ALLOC_DIR/result.txt OUT_DIR/result.txt"]
      }
    }
  }
}
'''


def test_lifecycle_prestart_artifact_poststop(agents, tmp_path, http_files):
    url, www = http_files
    (www / 'tool.sh').write_text('echo "tool ran"\n')
    out = tmp_path / 'out'
    out.mkdir()
    dev = start_dev(agents, tmp_path)
    job = write_job(tmp_path, 'life', LIFECYCLE_JOB.replace('ARTIFACT_URL', url)
                    .replace('OUT_DIR', str(out)))
    r = cli(dev.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: [a for a in job_allocs(dev.port, 'life')
                      if a['client_status'] in ('complete', 'failed')], 30,
             'the allocation to finish')
    [a] = job_allocs(dev.port, 'life')
    assert a['client_status'] == 'complete', json.dumps(a['task_states'], indent=1)
    lines = (out / 'result.txt').read_text().splitlines()
    assert lines == ['tool ran', 'job=life task=main', 'hi from main dc1']
    d = alloc_dir(dev, a['id'])
    assert (d / 'main/local/info.txt').stat().st_mode & 0o777 == 0o600
    ts = a['task_states']
    # The sidecar ran alongside and was stopped after the main task.
    assert ts['side']['state'] == 'dead' and not ts['side']['failed']
    assert 'Killed' in events(a, 'side')
    assert 'Downloading Artifacts' in events(a, 'main')
    for t in ('setup', 'main', 'collect'):
        assert ts[t]['state'] == 'dead' and not ts[t]['failed'], (t, ts[t])
        assert events(a, t)[0] == 'Received' and 'Started' in events(a, t)
    # Order: prestart ended before main started; poststop after main ended.
    assert ts['setup']['finished_at'] <= ts['main']['started_at']
    assert ts['main']['finished_at'] <= ts['collect']['started_at']
    # alloc status shows the events with times.
    r = cli(dev.port, 'alloc', 'status', a['id'][:8])
    assert r.returncode == 0 and 'Downloading Artifacts' in r.stdout, r.stdout


SERVICE_WITH_POSTSTOP = '''
job "svc" {
  group "g" {
    task "main" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args = ["600"]
      }
      resources {
        cores = 1
      }
    }
    task "after" {
      lifecycle { hook = "poststop" }
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "echo ran > OUT_DIR/poststop"]
      }
    }
  }
}
'''


def test_dev_agent_stops_running_poststop_tasks(agents, tmp_path):
    """SIGTERM stops a dev agent's tasks, and a stopped allocation runs its
    poststop tasks: the agent starts them as it shuts down, and exits.  (It
    once waited for ever: a task start takes the runners' lock for its core
    plan while an allocation of the node holds cores, and the shutdown held
    that lock as it joined the runner.)"""
    out = tmp_path / 'out'
    out.mkdir()
    dev = start_dev(agents, tmp_path)
    r = cli(dev.port, 'job', 'run', '-detach',
            write_job(tmp_path, 'svc', SERVICE_WITH_POSTSTOP.replace('OUT_DIR', str(out))))
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: [a for a in job_allocs(dev.port, 'svc') if a['client_status'] == 'running'],
             30, 'the service to run')
    dev.proc.send_signal(signal.SIGTERM)
    try:
        code = dev.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        raise AssertionError('the dev agent did not exit within 30 s of SIGTERM: ' + dev.log())
    assert code == 0, dev.log()
    assert (out / 'poststop').read_text() == 'ran\n'


def test_failed_artifact_fails_the_task_and_says_why(agents, tmp_path, http_files):
    url, _ = http_files
    dev = start_dev(agents, tmp_path)
    job = write_job(tmp_path, 'noart', f'''
job "noart" {{
  type = "batch"
  group "g" {{
    restart {{ attempts = 0 }}
    reschedule {{ attempts = 0 }}
    task "t" {{
      driver = "raw_exec"
      artifact {{ source = "{url}/missing.tar.gz" }}
      config {{ command = "/bin/true" }}
    }}
  }}
}}
''')
    assert cli(dev.port, 'job', 'run', '-detach', job).returncode == 0
    wait_for(lambda: [a for a in job_allocs(dev.port, 'noart') if a['client_status'] == 'failed'],
             30, 'the allocation to fail')
    [a] = job_allocs(dev.port, 'noart')
    evs = a['task_states']['t']['events']
    failed = [e for e in evs if e['type'] == 'Failed Artifact Download']
    assert failed and '404' in failed[0]['message'], evs
    assert 'Started' not in [e['type'] for e in evs]


def test_failed_prestart_keeps_main_from_starting_and_runs_poststop(agents, tmp_path):
    out = tmp_path / 'marker'
    dev = start_dev(agents, tmp_path)
    job = write_job(tmp_path, 'pf', f'''
job "pf" {{
  type = "batch"
  group "g" {{
    restart {{ attempts = 0 }}
    reschedule {{ attempts = 0 }}
    task "pre" {{
      lifecycle {{ hook = "prestart" }}
      driver = "raw_exec"
      config {{ command = "/bin/false" }}
    }}
    task "main" {{
      driver = "raw_exec"
      config {{ command = "/bin/true" }}
    }}
    task "post" {{
      lifecycle {{ hook = "poststop" }}
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "touch {out}"]
      }}
    }}
  }}
}}
''')
    assert cli(dev.port, 'job', 'run', '-detach', job).returncode == 0
    wait_for(lambda: [a for a in job_allocs(dev.port, 'pf') if a['client_status'] == 'failed'],
             30, 'the allocation to fail')
    [a] = job_allocs(dev.port, 'pf')
    assert 'Started' not in events(a, 'main')
    assert a['task_states']['pre']['failed']
    assert out.exists()


# --- (b) restarts run out, then the server reschedules -------------------------

def test_restarts_run_out_then_reschedule(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    job = write_job(tmp_path, 'crash', '''
job "crash" {
  type = "service"
  group "g" {
    restart {
      attempts = 2
      interval = "1m"
      delay = "500ms"
      mode = "fail"
    }
    reschedule {
      attempts = 1
      interval = "1h"
      delay = "1s"
      delay_function = "constant"
      unlimited = false
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "echo failing; exit 3"]
      }
    }
  }
}
''')
    assert cli(dev.port, 'job', 'run', '-detach', job).returncode == 0
    first = wait_for(lambda: [a for a in job_allocs(dev.port, 'crash')
                              if a['client_status'] == 'failed'], 30,
                     'the first allocation to fail')[0]
    ts = first['task_states']['t']
    # attempts = 2: exactly two restarts, then Not Restarting.
    assert ts['restarts'] == 2, ts
    evs = events(first, 't')
    assert evs.count('Restarting') == 2 and evs[-1] == 'Not Restarting', evs
    assert any('exit code 3' in e['message'] for e in ts['events'] if e['type'] == 'Terminated')
    # The server places a replacement that points back at it.
    repl = wait_for(lambda: [a for a in job_allocs(dev.port, 'crash')
                             if a.get('previous_allocation') == first['id']], 30,
                    'the replacement allocation')[0]
    assert repl['reschedule_attempts'] >= 1 or repl.get('reschedule_events'), repl


# --- (f) logs -f across a rotation ---------------------------------------------

def test_logs_follow_across_rotation(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    # 1 MiB files, 3 kept: 3000 lines of ~1 KiB rotate twice.
    job = write_job(tmp_path, 'chatty', '''
job "chatty" {
  type = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      logs {
        max_files = 3
        max_file_size = 1
      }
      config {
        command = "/bin/sh"
        args = ["-c", "sleep 1; i=0; while [ $i -lt 2500 ]; do printf '%06d %01000d\\\\n' $i 0; i=$((i+1)); if [ $((i % 500)) = 0 ]; then sleep 0.3; fi; done; echo done >&2"]
      }
    }
  }
}
''')
    assert cli(dev.port, 'job', 'run', '-detach', job).returncode == 0
    a = wait_for(lambda: [a for a in job_allocs(dev.port, 'chatty')
                          if a['client_status'] == 'running'], 20, 'the task to run')[0]
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{dev.port}')
    from conftest import HERD, REPO
    p = subprocess.run([str(HERD), 'alloc', 'logs', '-f', a['id'][:8], 't'], env=env,
                       capture_output=True, text=True, timeout=60, cwd=REPO)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    nums = [int(x.split()[0]) for x in lines]
    # Every line once, in order, although the files rotated under the reader.
    assert nums == list(range(2500)), (len(nums), nums[:3], nums[-3:])
    logs = sorted(os.listdir(alloc_dir(dev, a['id']) / 'alloc' / 'logs'))
    assert 't.stdout.2' in logs, logs
    r = cli(dev.port, 'alloc', 'logs', '-stderr', a['id'][:8], 't')
    assert r.stdout == 'done\n', r.stdout + r.stderr
    r = cli(dev.port, 'alloc', 'logs', '-tail', '-n', '2', a['id'][:8])
    assert [int(x.split()[0]) for x in r.stdout.splitlines()] == [2498, 2499], r.stdout


def test_log_requests_reject_path_traversal(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    [node] = api(dev.port, '/v1/nodes')
    addr = api(dev.port, f'/v1/node/{node["id"]}')['http_addr']
    import urllib.error
    import urllib.request
    for path in ('/v1/client/fs/logs/..%2F..%2Fclient?task=x',
                 '/v1/client/fs/logs/abc?task=..%2F..%2Fetc',
                 '/v1/client/fs/logs/abc?task=..',
                 '/v1/client/fs/logs/abc?task=t&type=..%2Fx'):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f'http://{addr}{path}', timeout=10)
        assert e.value.code == 400, path
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f'http://{addr}/v1/client/fs/logs/nosuch?task=t', timeout=10)
    assert e.value.code == 404
    # Reads are authorized by the server (GET /v1/allocation/:id with the
    # caller's token): logs of an allocation the server does not know are
    # not served even when they lie in the alloc dir.
    planted = alloc_dir(dev, 'planted-alloc')
    (planted / 't').mkdir(parents=True)
    (planted / 'alloc' / 'logs').mkdir(parents=True)
    (planted / 'alloc' / 'logs' / 't.stdout.0').write_text('secret output\n')
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f'http://{addr}/v1/client/fs/logs/planted-alloc?task=t', timeout=10)
    assert e.value.code == 404 and b'may not read its namespace' in e.value.read()


# --- (e) kill -9 of the client keeps the task ----------------------------------

def test_client_kill9_keeps_the_task_and_reports_its_exit(agents, tmp_path):
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
    go = tmp_path / 'go'
    job = write_job(tmp_path, 'keep', f'''
job "keep" {{
  type = "batch"
  group "g" {{
    restart {{ attempts = 0 }}
    reschedule {{
      attempts = 0
      unlimited = false
    }}
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "echo pid $$; while [ ! -e {go} ]; do sleep 0.1; done; echo after restart; exit 7"]
      }}
    }}
  }}
}}
''')
    assert cli(server.port, 'job', 'run', '-detach', job).returncode == 0
    a = wait_for(lambda: [a for a in job_allocs(server.port, 'keep')
                          if a['client_status'] == 'running'], 20, 'the task to run')[0]
    log = alloc_dir(client, a['id']) / 'alloc' / 'logs' / 't.stdout.0'
    wait_for(lambda: log.exists() and 'pid' in log.read_text(), 10, 'the first line')
    pid = int(log.read_text().split()[1])
    client.kill9()
    os.kill(pid, 0)   # still running without its client
    client.port = None
    client.start()
    wait_for(lambda: 'recovered' in client.log(), 15, 'the recovery')
    go.touch()
    done = wait_for(lambda: [a for a in job_allocs(server.port, 'keep')
                             if a['client_status'] == 'failed'], 20,
                    'the exit to be reported')[0]
    ts = done['task_states']['t']
    assert ts['exit_code'] == 7 and ts['restarts'] == 0, ts
    assert events(done, 't').count('Started') == 1
    assert log.read_text().splitlines()[-1] == 'after restart'
    r = cli(server.port, 'alloc', 'logs', a['id'][:8])
    assert r.stdout.endswith('after restart\n'), r.stdout + r.stderr


def test_second_client_on_a_data_dir_is_refused(agents, tmp_path):
    """A client holds its state.db's lock while it runs: a second agent on
    the same data dir refuses to start instead of running the same tasks."""
    server = Agent(tmp_path, 'server', ['-config', str(_server_hcl(tmp_path)),
                                        '-http-port', '0']).start()
    agents.append(server)
    args = ['-config', str(_client_hcl(tmp_path)), '-servers', f'127.0.0.1:{server.port}',
            '-node', 'c1', '-http-port', '0']
    client = Agent(tmp_path, 'c1', args).start()
    agents.append(client)
    wait_for(lambda: [n for n in api(server.port, '/v1/nodes') if n['status'] == 'ready'], 10,
             'the client node')
    second = Agent(tmp_path, 'c1', args, port=0).start()   # same dir, same data dir
    agents.append(second)
    assert second.proc.wait(timeout=60) != 0
    assert 'one agent per data dir' in client.log()   # both log to c1/stderr
    assert client.proc.poll() is None
    job = write_job(tmp_path, 'after', '''
job "after" {
  type = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
''')
    assert cli(server.port, 'job', 'run', '-detach', job).returncode == 0
    wait_for(lambda: [a for a in job_allocs(server.port, 'after')
                      if a['client_status'] == 'complete'], 20, 'the first client to run it')


def _server_hcl(tmp_path):
    p = tmp_path / 'server.hcl'
    p.write_text('server {\n  enabled = true\n}\nbind_addr = "127.0.0.1"\n')
    return p


def _client_hcl(tmp_path):
    p = tmp_path / 'client.hcl'
    p.write_text('client {\n  enabled = true\n}\nbind_addr = "127.0.0.1"\n'
                 'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
    return p


# --- (c, d) the exec driver: OOM kill, GPU device nodes (root only) ------------

def exec_usable():
    if os.geteuid() != 0:
        return 'the exec driver needs root (CI runs as root)'
    if not os.path.isdir('/sys/fs/cgroup'):
        return 'no cgroup hierarchy'
    return None


def run_batch(dev, tmp_path, name, text, timeout=40):
    job = write_job(tmp_path, name, text)
    r = cli(dev.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr
    return wait_for(lambda: [a for a in job_allocs(dev.port, name)
                             if a['client_status'] in ('complete', 'failed')], timeout,
                    f'{name} to finish')[0]


def test_exec_task_over_its_memory_is_oom_killed(agents, tmp_path):
    why = exec_usable()
    if why:
        pytest.skip(why)
    dev = start_dev(agents, tmp_path)
    a = run_batch(dev, tmp_path, 'hog', '''
job "hog" {
  type = "batch"
  group "g" {
    restart { attempts = 0 }
    reschedule {
      attempts = 0
      unlimited = false
    }
    task "hog" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args = ["-c", "x=aaaaaaaaaaaaaaaa; while true; do x=$x$x; done"]
      }
      resources {
        cpu = 100
        memory = 32
      }
    }
  }
}
''')
    ts = a['task_states']['hog']
    assert a['client_status'] == 'failed', ts
    term = [e for e in ts['events'] if e['type'] == 'Terminated']
    assert term and 'OOM Killed' in term[-1]['message'], ts['events']


def test_exec_task_sees_only_its_gpu_device_nodes(agents, tmp_path):
    why = exec_usable()
    if why:
        pytest.skip(why)
    made = []
    # The simulated GPUs have no device nodes: make stand-ins (character
    # devices with NVIDIA's major 195; without a driver they cannot be
    # opened, only seen).  A machine with a real NVIDIA driver has them.
    for minor in (0, 1):
        p = f'/dev/nvidia{minor}'
        if os.path.exists(p):
            if not made and minor == 0:
                pytest.skip('real NVIDIA device nodes exist here: not touching them')
            continue
        os.mknod(p, 0o666 | 0o020000, os.makedev(195, minor))
        made.append(p)
    try:
        dev = start_dev(agents, tmp_path)
        job = '''
job "JOB" {
  type = "batch"
  group "g" {
    restart { attempts = 0 }
    reschedule {
      attempts = 0
      unlimited = false
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args = ["-c", "ls /dev > /alloc/devs.txt"]
      }
      resources {
        cpu = 100
        memory = 64
        DEVICES
      }
    }
  }
}
'''
        one = run_batch(dev, tmp_path, 'onegpu', job.replace('JOB', 'onegpu').replace(
            'DEVICES', 'device "nvidia/gpu" { count = 1 }'))
        assert one['client_status'] == 'complete', one['task_states']
        seen = (alloc_dir(dev, one['id']) / 'alloc/devs.txt').read_text().split()
        gpus = [d for d in seen if d.startswith('nvidia') and d[6:].isdigit()]
        assert len(gpus) == 1, seen
        none = run_batch(dev, tmp_path, 'nogpu', job.replace('JOB', 'nogpu').replace(
            'DEVICES', ''))
        assert none['client_status'] == 'complete', none['task_states']
        seen = (alloc_dir(dev, none['id']) / 'alloc/devs.txt').read_text().split()
        assert not [d for d in seen if d.startswith('nvidia')], seen
    finally:
        for p in made:
            os.unlink(p)


def test_exec_task_reads_its_secrets_and_config_settings_apply(agents, tmp_path):
    """secrets/ is the task user's (mode 0700): a task that is not root
    reads a 0600 template rendered there; plugin "exec" { config {
    default_user chroot_env } } apply (no `user` in the task: the default
    user, here `daemon`; /sbin left out of chroot_env is not there)."""
    why = exec_usable()
    if why:
        pytest.skip(why)
    cfg = tmp_path / 'exec.hcl'
    cfg.write_text('plugin "exec" {\n  config {\n    default_user = "daemon"\n'
                   '    chroot_env = ["/bin", "/etc", "/lib", "/lib64", "/usr"]\n'
                   '  }\n}\n')
    dev = start_dev(agents, tmp_path, extra=('-config', str(cfg)))
    a = run_batch(dev, tmp_path, 'sec', '''
job "sec" {
  type = "batch"
  group "g" {
    restart { attempts = 0 }
    reschedule {
      attempts = 0
      unlimited = false
    }
    task "t" {
      driver = "exec"
      template {
        data = "token=s3cret\\n"
        destination = "secrets/token.env"
        perms = "0600"
      }
      config {
        command = "/bin/sh"
        args = ["-c", "id -un; stat -c '%U %a' /secrets; cat /secrets/token.env; test -e /sbin && echo sbin-visible || echo no-sbin"]
      }
      resources {
        cpu = 100
        memory = 64
      }
    }
  }
}
''')
    logs = alloc_dir(dev, a['id']) / 'alloc' / 'logs'
    out = (logs / 't.stdout.0').read_text()
    # a stream the task never wrote to has no file (logrot makes it on
    # the first write)
    err = (logs / 't.stderr.0').read_text() if (logs / 't.stderr.0').exists() else ''
    assert a['client_status'] == 'complete', (a['task_states']['t']['events'], out, err)
    assert out.splitlines() == ['daemon', 'daemon 700', 'token=s3cret', 'no-sbin'], out + err
