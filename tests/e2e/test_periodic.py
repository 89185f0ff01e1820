"""End-to-end: periodic jobs through the CLI and a dev agent.

A periodic batch job is registered but not placed; `herd job periodic
force` launches a child that runs and completes; prohibit_overlap refuses a
second force while a child runs; the launcher launches on the cron time
(one real `* * * * *` launch, waited for once); a stopped parent launches
nothing; a service cannot be periodic."""
import json

from test_control_plane import (agents, api, cli, job_allocs,  # noqa: F401
                                running_allocs, start_dev, wait_for, write_job)


def periodic_job(tmp_path, release, cron='* * * * *', jtype='batch'):
    # the child runs until the test creates the release file
    return write_job(tmp_path, 'nightly', f'''
job "nightly" {{
  type = "{jtype}"
  periodic {{
    crons            = ["{cron}"]
    prohibit_overlap = true
    time_zone        = "UTC"
  }}
  group "g" {{
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "while [ ! -e {release} ]; do sleep 0.1; done"]
      }}
      resources {{
        cpu    = 100
        memory = 64
      }}
    }}
  }}
}}
''')


def children(port):
    jobs = api(port, '/v1/jobs')
    return sorted((j for j in jobs if j.get('parent_id') == 'nightly'),
                  key=lambda j: j['submit_time'])


def job_status(port, job_id):
    return api(port, f'/v1/job/{job_id}')['status']


def test_periodic_job_force_overlap_launch_and_stop(agents, tmp_path):
    dev = start_dev(agents, tmp_path, 't4-2x.json')
    release = tmp_path / 'release'
    job = periodic_job(tmp_path, release)

    # run: registered, its first launch said, nothing placed
    r = cli(dev.port, 'job', 'run', job)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'periodic job "nightly" registered in namespace default' in r.stdout
    assert 'first launch: ' in r.stdout and ' UTC (in ' in r.stdout
    parent = api(dev.port, '/v1/job/nightly')
    assert parent['status'] == 'running'
    assert parent['periodic']['next_launch'] % 60 == 0
    assert job_allocs(dev.port, 'nightly') == []

    # force: a child that runs
    r = cli(dev.port, 'job', 'periodic', 'force', 'nightly')
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'launched job "nightly-periodic-' in r.stdout
    [child] = children(dev.port)
    assert child['id'] in r.stdout
    wait_for(lambda: running_allocs(dev.port, child['id']), 15, 'the child to run')
    assert job_allocs(dev.port, 'nightly') == []

    # overlap prohibited: a second force is refused and changes nothing
    r = cli(dev.port, 'job', 'periodic', 'force', 'nightly')
    assert r.returncode == 1
    assert f'its child {child["id"]} is not dead' in r.stderr
    assert len(children(dev.port)) == 1

    # status of the parent: schedule, next launch, children
    r = cli(dev.port, 'job', 'status', 'nightly')
    assert r.returncode == 0, r.stderr
    assert 'Periodic     "* * * * *" (UTC), prohibit overlap' in r.stdout
    assert 'Next Launch  ' in r.stdout
    assert 'Children (1)' in r.stdout and child['id'] in r.stdout
    r = cli(dev.port, 'job', 'status', child['id'])
    assert 'Parent       nightly' in r.stdout
    # the list: the parent is periodic, the child names it
    r = cli(dev.port, 'job', 'status')
    lines = {ln.split()[0]: ln.split() for ln in r.stdout.splitlines()[1:]}
    assert r.stdout.splitlines()[0].split()[-1] == 'PARENT'
    assert lines['nightly'][1] == 'batch/periodic' and lines['nightly'][-1] == '-'
    assert lines[child['id']][-1] == 'nightly'

    # the child completes; then the launcher's own launch comes on the
    # next minute (the one wait for the real clock)
    release.write_text('')
    wait_for(lambda: job_status(dev.port, child['id']) == 'dead', 15, 'the child to end')
    launched = wait_for(lambda: [c for c in children(dev.port) if c['id'] != child['id']],
                        130, 'a launch on the cron time')
    assert launched[0]['id'].startswith('nightly-periodic-')
    assert int(launched[0]['id'].rsplit('-', 1)[1]) % 60 == 0
    wait_for(lambda: job_status(dev.port, launched[0]['id']) == 'dead', 15,
             'the launched child to end')

    # a stopped parent launches nothing, and cannot be forced
    r = cli(dev.port, 'job', 'stop', 'nightly')
    assert r.returncode == 0, r.stderr
    assert api(dev.port, '/v1/job/nightly')['periodic']['next_launch'] is None
    n = len(children(dev.port))
    r = cli(dev.port, 'job', 'periodic', 'force', 'nightly')
    assert r.returncode == 1 and 'is stopped' in r.stderr
    assert len(children(dev.port)) == n
    # children are ordinary jobs: the stop left them as they were
    assert all(job_status(dev.port, c['id']) == 'dead' for c in children(dev.port))


def test_periodic_refusals(agents, tmp_path):
    dev = start_dev(agents, tmp_path, 't4-2x.json')
    release = tmp_path / 'release'
    r = cli(dev.port, 'job', 'validate', periodic_job(tmp_path, release, jtype='service'))
    assert r.returncode == 1
    assert 'only batch jobs can be periodic' in r.stdout + r.stderr
    r = cli(dev.port, 'job', 'validate', periodic_job(tmp_path, release, cron='61 * * * *'))
    assert r.returncode == 1
    assert 'column 1 (minute): 61 is out of range 0-59' in r.stdout + r.stderr
    # inspect shows the block with its defaults
    f = periodic_job(tmp_path, release, cron='@daily')
    r = cli(dev.port, 'job', 'inspect', f)
    assert r.returncode == 0, r.stderr
    assert '  periodic "@daily" (UTC), prohibit overlap' in r.stdout
    r = cli(dev.port, 'job', 'inspect', '-json', f)
    assert r.returncode == 0, r.stderr
    p = json.loads(r.stdout)
    p = p.get('job', p)['periodic']
    assert p['crons'] == ['@daily'] and p['time_zone'] == 'UTC' and p['enabled'] is True
    # force of a job that is not periodic, or of none
    write_job(tmp_path, 'plain', 'job "plain" {\n type = "batch"\n group "g" {\n task "t" {\n'
              ' driver = "raw_exec"\n config { command = "/bin/true" }\n }\n }\n}\n')
    r = cli(dev.port, 'job', 'run', str(tmp_path / 'plain.hcl'))
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(dev.port, 'job', 'periodic', 'force', 'plain')
    assert r.returncode == 1 and 'job plain is not periodic' in r.stderr
    r = cli(dev.port, 'job', 'periodic', 'force', 'nope')
    assert r.returncode == 1 and 'no job nope' in r.stderr
