"""End-to-end: rolling updates of service jobs (docs/jobspec.md "Rolling
updates", docs/api.md "Deployments"): a changed service replaces its
allocations one at a time, each after the one before turned healthy; a bad
version fails its deployment and auto_revert brings the last stable
version back; a failing http check makes an allocation unhealthy.

A real dev agent on 127.0.0.1 (server and client in one process); every
process is killed in teardown.  No timing assertions: each wait polls with
a generous deadline; the order is read from the allocations' records."""
import sys
import time

from test_control_plane import agents, api, cli, job_allocs, wait_for, write_job  # noqa: F401
from test_tasks import start_dev

PY = sys.executable if sys.executable.startswith('/usr/bin/') else '/usr/bin/python3'

ROLL_JOB = '''
job "roll" {
  update {
    max_parallel     = 1
    min_healthy_time = "1s"
    healthy_deadline = "30s"
    progress_deadline = "2m"
    auto_revert      = true
  }
  group "g" {
    count = 3
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "t" {
      driver = "raw_exec"
      env {
        WHICH = "WHICH_VALUE"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "COMMAND"]
      }
    }
  }
}
'''


def roll_job(tmp_path, which, command='sleep 600'):
    return write_job(tmp_path, 'roll', ROLL_JOB.replace('WHICH_VALUE', which)
                     .replace('COMMAND', command))


def deployment(port, job):
    return api(port, f'/v1/job/{job}/deployment')


def version(port, job, v):
    [rec] = [x for x in api(port, f'/v1/job/{job}/versions') if x['version'] == v]
    return rec


def live(port, job):
    return [a for a in job_allocs(port, job) if a['desired_status'] == 'run']


def wait_deployment(port, job, version, statuses, timeout=120):
    """The deployment of the job's version once its status is one of
    statuses (not only the latest: a revert may follow at once)."""
    def look():
        return [d for d in api(port, f'/v1/job/{job}/deployments')
                if d['job_version'] == version and d['status'] in statuses]
    return wait_for(look, timeout, f'the deployment of version {version} to be {statuses}',
                    step=0.2)[0]


def test_rolling_update_one_at_a_time_then_auto_revert(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    r = cli(dev.port, 'job', 'run', roll_job(tmp_path, 'one'), timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'Deployment' in r.stdout and 'successful' in r.stdout, r.stdout
    d0 = wait_deployment(dev.port, 'roll', 0, ('successful',))
    assert d0['groups']['g']['healthy_allocs'] == 3
    assert version(dev.port, 'roll', 0)['stable'] is True

    # a changed env: replaced one at a time
    r = cli(dev.port, 'job', 'run', '-detach', roll_job(tmp_path, 'two'))
    assert r.returncode == 0, r.stdout + r.stderr
    d1 = wait_deployment(dev.port, 'roll', 1, ('successful',))
    assert d1['groups']['g'] == dict(d1['groups']['g'], desired_total=3, placed_allocs=3,
                                     healthy_allocs=3, unhealthy_allocs=0)
    new = sorted([a for a in job_allocs(dev.port, 'roll') if a['job_version'] == 1],
                 key=lambda a: a['create_time'])
    old = [a for a in job_allocs(dev.port, 'roll') if a['job_version'] == 0]
    assert len(new) == 3 and all(a['deployment_id'] == d1['id'] for a in new)
    assert all(a['deployment_status']['healthy'] is True for a in new)
    # each new one was placed only after the one before it was healthy
    for prev, nxt in zip(new, new[1:]):
        assert nxt['create_time'] >= prev['deployment_status']['timestamp'], (prev, nxt)
    # and each old one stopped only when its replacement was placed
    stops = sorted(a['modify_time'] for a in old if a['desired_status'] == 'stop')
    assert len(stops) == 3
    assert stops[1] >= new[0]['deployment_status']['timestamp']
    assert stops[2] >= new[1]['deployment_status']['timestamp']
    r = cli(dev.port, 'job', 'status', 'roll')
    assert r.returncode == 0 and 'Latest Deployment' in r.stdout and d1['id'][:8] in r.stdout, \
        r.stdout
    r = cli(dev.port, 'deployment', 'list')
    assert r.returncode == 0 and d1['id'][:8] in r.stdout and d0['id'][:8] in r.stdout, r.stdout

    # a bad version (exits at once): failed, and back to version 1 as version 3
    r = cli(dev.port, 'job', 'run', roll_job(tmp_path, 'three', 'exit 1'), timeout=180)
    assert r.returncode != 0, r.stdout + r.stderr
    assert 'failed' in r.stdout, r.stdout
    d2 = wait_deployment(dev.port, 'roll', 2, ('failed',))
    assert d2['groups']['g']['unhealthy_allocs'] >= 1
    assert 'rolling back to job version 1' in d2['status_description'], d2
    job = wait_for(lambda: (lambda j: j if j['version'] == 3 else None)(
        api(dev.port, '/v1/job/roll')), 60, 'the revert to register version 3')
    assert [t['env']['WHICH'] for t in job['groups'][0]['tasks']] == ['two']
    wait_deployment(dev.port, 'roll', 3, ('successful',))
    running = wait_for(lambda: (lambda a: a if len(a) == 3 and all(
        x['client_status'] == 'running' and x['job_version'] == 3 for x in a) else None)(
        live(dev.port, 'roll')), 60, 'three allocations of version 3')
    # the two that never left version 1 were updated in place, one replaced
    assert len(running) == 3
    assert version(dev.port, 'roll', 3)['stable'] is True
    assert not version(dev.port, 'roll', 2).get('stable')


CHECK_JOB = '''
job "chk" {
  update {
    max_parallel     = 1
    min_healthy_time = "1s"
    healthy_deadline = "8s"
    progress_deadline = "1m"
  }
  group "g" {
    count = 2
    network {
      port "http" {}
    }
    service {
      name = "chk"
      port = "http"
      check {
        type     = "http"
        path     = "CHECK_PATH"
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


def test_failing_check_is_unhealthy(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    good = write_job(tmp_path, 'chk', CHECK_JOB.replace('PY', PY).replace('CHECK_PATH', '/'))
    r = cli(dev.port, 'job', 'run', '-detach', good)
    assert r.returncode == 0, r.stdout + r.stderr
    wait_deployment(dev.port, 'chk', 0, ('successful',))
    # a path that answers 404: the check stays critical, the task runs
    bad = write_job(tmp_path, 'chk', CHECK_JOB.replace('PY', PY)
                    .replace('CHECK_PATH', '/no-such-page'))
    r = cli(dev.port, 'job', 'run', '-detach', bad)
    assert r.returncode == 0, r.stdout + r.stderr
    d = wait_deployment(dev.port, 'chk', 1, ('failed',))
    assert d['groups']['g']['unhealthy_allocs'] == 1, d
    assert 'no stable' not in d['status_description']   # no auto_revert asked
    allocs = job_allocs(dev.port, 'chk')
    bad_ones = [a for a in allocs if a['job_version'] == 1]
    assert len(bad_ones) == 1 and bad_ones[0]['deployment_status']['healthy'] is False
    assert bad_ones[0]['client_status'] == 'running'
    # the failed deployment stops rolling: one old allocation still runs
    old = [a for a in allocs if a['job_version'] == 0 and a['desired_status'] == 'run']
    assert len(old) == 1 and old[0]['client_status'] == 'running'


def test_manual_fail_and_batch_has_no_deployment(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    slow = ROLL_JOB.replace('min_healthy_time = "1s"', 'min_healthy_time = "60s"').replace(
        'healthy_deadline = "30s"', 'healthy_deadline = "2m"').replace(
        'progress_deadline = "2m"', 'progress_deadline = "5m"')
    p = write_job(tmp_path, 'roll', slow.replace('WHICH_VALUE', 'a').replace('COMMAND', 'sleep 600'))
    r = cli(dev.port, 'job', 'run', '-detach', p)
    assert r.returncode == 0, r.stdout + r.stderr
    d = wait_deployment(dev.port, 'roll', 0, ('running',))
    r = cli(dev.port, 'deployment', 'fail', d['id'])
    assert r.returncode == 0, r.stdout + r.stderr
    d = wait_deployment(dev.port, 'roll', 0, ('failed',))
    assert d['status_description'].startswith('Deployment marked as failed')
    r = cli(dev.port, 'deployment', 'fail', d['id'])
    assert r.returncode != 0 and 'not running' in r.stderr, r.stdout + r.stderr
    r = cli(dev.port, 'deployment', 'status', d['id'][:8])
    assert r.returncode == 0 and 'failed' in r.stdout, r.stdout + r.stderr

    batch = write_job(tmp_path, 'b', 'job "b" {\n type = "batch"\n update { max_parallel = 1 }\n'
                      ' group "g" {\n task "t" {\n driver = "raw_exec"\n config {\n'
                      ' command = "/bin/true"\n }\n }\n }\n}\n')
    r = cli(dev.port, 'job', 'run', '-detach', batch)
    assert r.returncode == 0 and 'ignored for batch' in r.stdout + r.stderr, r.stdout + r.stderr
    assert deployment(dev.port, 'b') is None


def test_newer_version_without_deployment_cancels_and_never_reverts(agents, tmp_path):
    """A version that makes no deployment of its own (here: no update
    block any more) cancels the one still running for the version before;
    past that one's progress deadline (auto_revert asked) the job stays at
    the newer version."""
    dev = start_dev(agents, tmp_path)
    quick = ROLL_JOB.replace('count = 3', 'count = 1').replace(
        'healthy_deadline = "30s"', 'healthy_deadline = "4s"').replace(
        'progress_deadline = "2m"', 'progress_deadline = "4s"')
    r = cli(dev.port, 'job', 'run', '-detach', write_job(
        tmp_path, 'roll', quick.replace('WHICH_VALUE', 'a').replace('COMMAND', 'sleep 600')))
    assert r.returncode == 0, r.stdout + r.stderr
    wait_deployment(dev.port, 'roll', 0, ('successful',))
    # version 1 cannot be placed (no such datacenter): its deployment waits
    stuck = quick.replace('group "g" {', 'group "g" {\n    constraint {\n'
                          '      attribute = "${node.datacenter}"\n      value = "nowhere"\n'
                          '    }', 1)
    r = cli(dev.port, 'job', 'run', '-detach', write_job(
        tmp_path, 'roll', stuck.replace('WHICH_VALUE', 'b').replace('COMMAND', 'sleep 600')))
    assert r.returncode == 0, r.stdout + r.stderr
    d1 = wait_deployment(dev.port, 'roll', 1, ('running',))
    # version 2: no update block
    plain = quick[:quick.index('  update {')] + quick[quick.index('  group "g"'):]
    r = cli(dev.port, 'job', 'run', '-detach', write_job(
        tmp_path, 'roll', plain.replace('WHICH_VALUE', 'c').replace('COMMAND', 'sleep 600')))
    assert r.returncode == 0, r.stdout + r.stderr
    d1 = wait_deployment(dev.port, 'roll', 1, ('cancelled',), timeout=60)
    assert d1['status_description'] == 'Cancelled: superseded by job version 2', d1
    wait_for(lambda: (lambda a: a if len(a) == 1 and a[0]['job_version'] == 2 and
                      a[0]['client_status'] == 'running' else None)(live(dev.port, 'roll')),
             60, 'the allocation of version 2 to run')
    # past version 1's progress deadline (4s after it began), and a few
    # evaluations of the job later: nothing reverted
    wait_for(lambda: time.time_ns() > d1['create_time'] + 8 * 10**9, 30, 'the deadline to pass')
    job = api(dev.port, '/v1/job/roll')
    assert job['version'] == 2, job
    assert [t['env']['WHICH'] for t in job['groups'][0]['tasks']] == ['c']
    assert [d['status'] for d in api(dev.port, '/v1/job/roll/deployments')] == \
        ['cancelled', 'successful'], api(dev.port, '/v1/job/roll/deployments')
    assert [a['job_version'] for a in live(dev.port, 'roll')] == [2]
