"""End-to-end: namespaces, a GPU quota that queues work and lets it start by
itself, GPU-hours, and the CLI of the teams commands, on a dev agent with
simulated GPUs."""
import json
import time

from test_control_plane import agents, api, cli, start_dev, wait_for  # noqa: F401

QUOTA = '''
name = "team-a"
description = "two GPUs"
limit {
  region = "global"
  region_limit {
    device "nvidia/gpu" { count = 2 }
  }
}
'''


def job_hcl(job_id, ns, command):
    return f'''
job "{job_id}" {{
  namespace = "{ns}"
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


def allocs(port, ns, job_id):
    return api(port, f'/v1/job/{job_id}/allocations?namespace={ns}')


def status_of(port, ns, job_id):
    return [a['client_status'] for a in allocs(port, ns, job_id)]


def last_eval(port, ns, job_id):
    evals = api(port, f'/v1/job/{job_id}/evaluations?namespace={ns}')
    return max(evals, key=lambda e: e['modify_index'])


def test_quota_queues_and_starts_by_itself(agents, tmp_path):  # noqa: F811
    dev = start_dev(agents, tmp_path, 'h100-sxm-8x-nvlink.json')
    qf = tmp_path / 'q.hcl'
    qf.write_text(QUOTA)
    r = cli(dev.port, 'quota', 'apply', str(qf))
    assert r.returncode == 0, r.stderr
    r = cli(dev.port, 'namespace', 'apply', 'team-a', '-quota', 'team-a', '-description', 'team A')
    assert r.returncode == 0, r.stderr
    r = cli(dev.port, 'namespace', 'list')
    assert 'team-a' in r.stdout and 'default' in r.stdout
    # j1 ends after 2 s; j2 runs long; j3 waits for j1's GPU
    for job_id, cmd in (('j1', 'sleep 2'), ('j2', 'sleep 60'), ('j3', 'sleep 60')):
        f = tmp_path / f'{job_id}.hcl'
        f.write_text(job_hcl(job_id, 'team-a', cmd))
        r = cli(dev.port, 'job', 'run', '-detach', str(f))
        assert r.returncode == 0, r.stdout + r.stderr
        if job_id != 'j3':
            wait_for(lambda: status_of(dev.port, 'team-a', job_id) == ['running'], 20,
                     f'{job_id} running')
    wait_for(lambda: last_eval(dev.port, 'team-a', 'j3')['status'] == 'queued', 10, 'j3 queued')
    e = last_eval(dev.port, 'team-a', 'j3')
    assert e['status_description'] == 'queued: quota team-a: nvidia/gpu 2/2'
    assert allocs(dev.port, 'team-a', 'j3') == []
    r = cli(dev.port, 'quota', 'status', 'team-a')
    assert r.returncode == 0, r.stderr
    assert 'nvidia/gpu' in r.stdout and ' 2 ' in r.stdout.replace('\t', ' ') + ' '
    # deleting a namespace with jobs is refused, clearly
    r = cli(dev.port, 'namespace', 'delete', 'team-a')
    assert r.returncode == 1 and 'still has 3 job(s)' in r.stderr
    # j1 ends: j3 starts by itself
    wait_for(lambda: status_of(dev.port, 'team-a', 'j1') == ['complete'], 20, 'j1 complete')
    wait_for(lambda: status_of(dev.port, 'team-a', 'j3') == ['running'], 20, 'j3 running')
    # GPU-hours: j1 ran about 2 s on one GPU
    r = cli(dev.port, 'usage', '-namespace', 'team-a', '-csv')
    assert r.returncode == 0, r.stderr
    rows = {line.split(',')[1]: line.split(',') for line in r.stdout.splitlines()[1:]}
    assert set(rows) == {'j1', 'j2', 'j3'}
    j1_hours = float(rows['j1'][3])
    assert 1.5 / 3600 < j1_hours < 4.0 / 3600, j1_hours
    r = cli(dev.port, 'usage', '-json')
    assert r.returncode == 0 and json.loads(r.stdout)['namespaces']
    for job_id in ('j2', 'j3'):
        api(dev.port, f'/v1/job/{job_id}?namespace=team-a&purge=true', method='DELETE')


def test_cli_usage_errors(agents, tmp_path):  # noqa: F811
    dev = start_dev(agents, tmp_path, 't4-2x.json')
    bad = tmp_path / 'bad.hcl'
    bad.write_text('name = "x"\nlimit {\n  region_limit {\n    device "nvidia/gpu" { cnt = 1 }\n  }\n}\n')
    r = cli(dev.port, 'quota', 'apply', str(bad))
    assert r.returncode == 1 and f'{bad}:4:' in r.stderr, r.stderr
    r = cli(dev.port, 'namespace', 'apply')
    assert r.returncode == 2
    r = cli(dev.port, 'usage', '-json', '-csv')
    assert r.returncode == 2
    r = cli(dev.port, 'acl', 'bootstrap')
    assert r.returncode == 1 and 'not enabled' in r.stderr
    r = cli(dev.port, 'namespace', 'delete', 'default')
    assert r.returncode == 1
    time.sleep(0)
