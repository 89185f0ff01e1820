"""End-to-end: job dependencies (depends_on) through the CLI and a dev agent.

A pipeline of three raw_exec batch jobs, preprocess -> train -> evaluate,
each appending its name to one file: the file shows the steps in order,
and `herd job run` of a step that waits says so and returns.  A first step
that fails makes the step that needs it complete dead, with the reason."""
from test_control_plane import (agents, api, cli, job_allocs,  # noqa: F401
                                start_dev, wait_for, write_job)


def step(tmp_path, name, log, depends=(), hold=None, code=0):
    """A batch job that waits for hold (a file) when given, appends its name
    to log and exits with code; no restart, no reschedule."""
    deps = ''.join(f'''
  depends_on {{
    job       = "{d}"
    condition = "{c}"
  }}''' for d, c in depends)
    wait = f'while [ ! -e {hold} ]; do sleep 0.1; done; ' if hold else ''
    return write_job(tmp_path, name, f'''
job "{name}" {{
  type = "batch"{deps}
  group "g" {{
    restart {{
      attempts = 0
      mode     = "fail"
    }}
    reschedule {{
      attempts  = 0
      unlimited = false
    }}
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args    = ["-c", "{wait}echo {name} >> {log}; exit {code}"]
      }}
      resources {{
        cpu    = 100
        memory = 64
      }}
    }}
  }}
}}
''')


def status(port, job_id):
    return api(port, f'/v1/job/{job_id}')['status']


def test_pipeline_runs_in_order(agents, tmp_path):
    dev = start_dev(agents, tmp_path, 't4-2x.json')
    log, release = tmp_path / 'steps.log', tmp_path / 'release'

    r = cli(dev.port, 'job', 'run', '-detach', step(tmp_path, 'preprocess', log, hold=release))
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(dev.port, 'job', 'run',
            step(tmp_path, 'train', log, depends=[('preprocess', 'complete')]))
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'job "train" waits: waiting for job preprocess (' in r.stdout
    assert 'to be complete' in r.stdout
    assert 'placed once its dependencies hold' in r.stdout
    r = cli(dev.port, 'job', 'run',
            step(tmp_path, 'evaluate', log, depends=[('train', 'complete')]))
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'waiting for job train (pending) to be complete' in r.stdout
    assert job_allocs(dev.port, 'train') == [] and job_allocs(dev.port, 'evaluate') == []

    # job status names the dependency and where it stands
    r = cli(dev.port, 'job', 'status', 'train')
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'Dependencies' in r.stdout
    [row] = [ln for ln in r.stdout.splitlines() if ln.startswith('preprocess ')]
    assert row.split()[1:] in (['complete', 'running', 'waiting'],
                               ['complete', 'pending', 'waiting'])
    assert not log.exists()

    release.touch()
    wait_for(lambda: status(dev.port, 'evaluate') == 'dead', 30, 'the pipeline to end')
    assert log.read_text().split() == ['preprocess', 'train', 'evaluate']
    for job in ('preprocess', 'train', 'evaluate'):
        [a] = job_allocs(dev.port, job)
        assert a['client_status'] == 'complete', (job, a['client_status'])
    deps = api(dev.port, '/v1/job/evaluate')['dependencies']
    assert deps == [{'job': 'train', 'condition': 'complete', 'job_status': 'dead',
                     'state': 'met'}]


def test_failed_step_stops_the_next(agents, tmp_path):
    dev = start_dev(agents, tmp_path, 't4-2x.json')
    log, release = tmp_path / 'steps.log', tmp_path / 'release'

    r = cli(dev.port, 'job', 'run', '-detach',
            step(tmp_path, 'prep', log, hold=release, code=3))
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(dev.port, 'job', 'run', step(tmp_path, 'fit', log, depends=[('prep', 'complete')]))
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(dev.port, 'job', 'run',
            step(tmp_path, 'report', log, depends=[('prep', 'failed')]))
    assert r.returncode == 0, r.stdout + r.stderr

    release.touch()
    wait_for(lambda: status(dev.port, 'fit') == 'dead', 30, 'fit to be stopped')
    job = api(dev.port, '/v1/job/fit')
    assert job['stop_reason'] == 'dependency prep failed: will never be complete'
    assert job_allocs(dev.port, 'fit') == []
    r = cli(dev.port, 'job', 'status', 'fit')
    assert 'dependency prep failed: will never be complete' in r.stdout
    # the failed condition holds: the report step ran
    wait_for(lambda: status(dev.port, 'report') == 'dead', 30, 'report to run')
    assert log.read_text().split() == ['prep', 'report']

    # a job whose dependency failed already is stopped at once; run says so
    r = cli(dev.port, 'job', 'run', step(tmp_path, 'late', log, depends=[('prep', 'complete')]))
    assert r.returncode == 1
    assert 'dependency prep failed: will never be complete' in r.stdout

    # an unknown dependency is refused and nothing is stored
    r = cli(dev.port, 'job', 'run', step(tmp_path, 'orphan', log, depends=[('nope', 'dead')]))
    assert r.returncode != 0
    assert 'depends on job nope, which does not exist in namespace default' in r.stderr
    assert all(j['id'] != 'orphan' for j in api(dev.port, '/v1/jobs'))
