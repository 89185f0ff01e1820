"""End-to-end: the CLI's namespaces on a dev agent with simulated GPUs.

Every job, allocation and evaluation command takes -namespace NS and
honours HERD_NAMESPACE (the flag wins; "default" otherwise; "*" for lists);
`job status` says why a job waits when its namespace's quota holds it, and
`job run` prints it while following."""
import os
import re
import subprocess

from conftest import HERD, REPO
from test_control_plane import agents, api, start_dev, wait_for  # noqa: F401

QUOTA = '''
name = "one-gpu"
limit {
  region = "global"
  region_limit {
    device "nvidia/gpu" { count = 1 }
  }
}
'''


def job_hcl(job_id, command, ns=None):
    ns_line = f'namespace = "{ns}"' if ns else ''
    return f'''
job "{job_id}" {{
  {ns_line}
  type = "batch"
  group "g" {{
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "{command}"]
      }}
      resources {{
        cpu = 100
        memory = 64
        device "nvidia/gpu" {{ count = 1 }}
      }}
    }}
  }}
}}
'''


def herd_env(port, ns=None):
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{port}')
    env.pop('HERD_NAMESPACE', None)
    if ns is not None:
        env['HERD_NAMESPACE'] = ns
    return env


def run(port, *args, ns=None, timeout=60):
    return subprocess.run([str(HERD), *args], capture_output=True, text=True,
                          env=herd_env(port, ns), timeout=timeout, cwd=REPO)


def write(tmp_path, name, text):
    p = tmp_path / f'{name}.hcl'
    p.write_text(text)
    return str(p)


def client_status(port, ns, job_id):
    return [a['client_status'] for a in api(port, f'/v1/job/{job_id}/allocations?namespace={ns}')]


def test_cli_namespaces_and_quota_wait(agents, tmp_path):  # noqa: F811
    dev = start_dev(agents, tmp_path, 'h100-sxm-8x-nvlink.json')
    port = dev.port
    q = write(tmp_path, 'q', QUOTA)
    assert run(port, 'quota', 'apply', q).returncode == 0
    for ns in ('team-a', 'team-b'):
        r = run(port, 'namespace', 'apply', ns, '-quota', 'one-gpu')
        assert r.returncode == 0, r.stderr

    # HERD_NAMESPACE places a job whose file names no namespace
    hold = write(tmp_path, 'hold', job_hcl('hold', 'sleep 120'))
    r = run(port, 'job', 'run', '-detach', hold, ns='team-a')
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'submitted to namespace team-a' in r.stdout
    wait_for(lambda: client_status(port, 'team-a', 'hold') == ['running'], 20, 'hold running')
    assert api(port, '/v1/jobs') == []   # nothing in default

    # the flag wins over HERD_NAMESPACE; the quota (1 GPU) holds the second
    # job, and job run says so while it follows
    waiter = write(tmp_path, 'waiter', job_hcl('waiter', 'sleep 1'))
    follow = subprocess.Popen([str(HERD), 'job', 'run', '-namespace', 'team-a', waiter],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=herd_env(port, 'team-b'), cwd=REPO)
    try:
        lines = []
        for line in follow.stdout:
            lines.append(line)
            if 'waits:' in line:
                break
        out = ''.join(lines)
        assert 'submitted to namespace team-a' in out, out
        assert 'waits: queued: quota one-gpu: nvidia/gpu 1/1' in out, out

        # job status: the reason it waits, with the flag and with the env
        for args, env_ns in ((['-namespace', 'team-a'], None), ([], 'team-a'),
                             (['-namespace', 'team-a'], 'team-b')):
            r = run(port, 'job', 'status', *args, 'waiter', ns=env_ns)
            assert r.returncode == 0, (args, r.stderr)
            assert re.search(r'^Waiting\s+queued: quota one-gpu: nvidia/gpu 1/1$', r.stdout,
                             re.M), r.stdout
            assert re.search(r'^Namespace\s+team-a$', r.stdout, re.M), r.stdout
        r = run(port, 'job', 'status', '-json', '-namespace', 'team-a', 'waiter')
        assert r.returncode == 0
        assert '"status": "queued"' in r.stdout

        # default namespace: not there; "*": found, and listed with namespaces
        r = run(port, 'job', 'status', 'waiter')
        assert r.returncode == 1 and 'waiter' in r.stderr
        r = run(port, 'job', 'status', 'waiter', '-namespace', '*')
        assert r.returncode == 0 and 'queued: quota one-gpu' in r.stdout, r.stderr
        r = run(port, 'job', 'status')
        assert r.returncode == 0 and r.stdout.strip() == 'no jobs'
        r = run(port, 'job', 'status', '-namespace', '*')
        assert r.returncode == 0
        rows = [line.split() for line in r.stdout.splitlines()]
        assert rows[0][:2] == ['NAMESPACE', 'ID']
        assert sorted((row[0], row[1]) for row in rows[1:]) == [('team-a', 'hold'),
                                                                ('team-a', 'waiter')]
        r = run(port, 'job', 'inspect', 'hold', ns='team-a')
        assert r.returncode == 0 and '"namespace": "team-a"' in r.stdout
        r = run(port, 'job', 'inspect', 'hold')
        assert r.returncode == 1

        # allocations are found by prefix within the namespace
        [a] = api(port, '/v1/job/hold/allocations?namespace=team-a')
        r = run(port, 'alloc', 'status', a['id'][:8])
        assert r.returncode == 1 and 'no allocation' in r.stderr
        r = run(port, 'alloc', 'status', a['id'][:8], '-namespace', 'team-a')
        assert r.returncode == 0 and 'hold' in r.stdout, r.stderr
        r = run(port, 'alloc', 'status', a['id'][:8], ns='*')
        assert r.returncode == 0, r.stderr
        r = run(port, 'alloc', 'logs', a['id'][:8], ns='team-a')
        assert r.returncode == 0, r.stderr

        # writes take one namespace
        r = run(port, 'job', 'stop', '-namespace', '*', 'hold')
        assert r.returncode == 2 and 'name one namespace' in r.stderr
        r = run(port, 'job', 'stop', 'hold')
        assert r.returncode == 1   # no job "hold" in default
        assert client_status(port, 'team-a', 'hold') == ['running']
        r = run(port, 'job', 'stop', 'hold', ns='team-a')
        assert r.returncode == 0, r.stderr

        # the freed GPU goes to the waiting job: job run sees it through
        rest, err = follow.communicate(timeout=60)
        assert follow.returncode == 0, rest + err
        assert 'complete' in rest, rest
    finally:
        if follow.poll() is None:
            follow.kill()
            follow.communicate()
    assert client_status(port, 'team-a', 'waiter') == ['complete']

    # a namespace the file names wins over -namespace (with a note)
    named = write(tmp_path, 'named', job_hcl('named', 'true', ns='team-b'))
    r = run(port, 'job', 'plan', '-namespace', 'team-a', named)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'names namespace "team-b": -namespace team-a is ignored' in r.stderr
    r = run(port, 'job', 'run', '-namespace', 'team-a', named)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'submitted to namespace team-b' in r.stdout
    assert client_status(port, 'team-b', 'named') == ['complete']
    r = run(port, 'job', 'stop', '-purge', 'named', ns='team-b')
    assert r.returncode == 0, r.stderr
    assert api(port, '/v1/jobs?namespace=team-b') == []
