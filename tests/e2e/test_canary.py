"""End-to-end: canary deployments (docs/jobspec.md "Canaries", docs/api.md
"Deployments"): a changed service first places `canary` allocations of its
new version beside the old ones, which keep running; `herd deployment
promote` (or auto_promote) then lets the rest roll, the canaries counting
as replaced; a promotion is refused while a canary is not healthy; a
failing canary fails the deployment and auto_revert goes back; a manual
fail or a newer version stops the canaries; a server killed with -9 in the
middle finds the deployment where it was.

Real agents on 127.0.0.1 (a dev agent, or a server and a client); every
process is killed in teardown.  No timing assertions: each wait polls with a
generous deadline; what happened is read from the records."""
import pytest

from test_control_plane import (Agent, agents, api, cli, client_config, job_allocs,  # noqa: F401
                                server_config, start_client, wait_for, write_job)
from test_tasks import start_dev

CANARY_JOB = '''
job "can" {
  update {
    max_parallel      = 1
    min_healthy_time  = "MHT"
    healthy_deadline  = "HDL"
    progress_deadline = "10m"
    auto_revert       = true
    canary            = CANARY
    auto_promote      = AUTO
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


def canary_job(tmp_path, which, canary=1, auto=False, command='sleep 600', mht='1s',
               hdl='60s'):
    return write_job(tmp_path, 'can', CANARY_JOB.replace('WHICH_VALUE', which)
                     .replace('COMMAND', command).replace('CANARY', str(canary))
                     .replace('AUTO', 'true' if auto else 'false').replace('MHT', mht)
                     .replace('HDL', hdl))


def live(port, job='can'):
    return [a for a in job_allocs(port, job) if a['desired_status'] == 'run']


def is_canary(a):
    return bool((a.get('deployment_status') or {}).get('canary'))


def wait_deployment(port, version, statuses, job='can', timeout=120):
    """The deployment of the job's version once its status is one of
    statuses."""
    def look():
        return [d for d in api(port, f'/v1/job/{job}/deployments')
                if d['job_version'] == version and d['status'] in statuses]
    return wait_for(look, timeout, f'the deployment of version {version} to be {statuses}',
                    step=0.2)[0]


def wait_canaries_healthy(port, version, n, job='can'):
    def look():
        ds = [d for d in api(port, f'/v1/job/{job}/deployments') if d['job_version'] == version]
        g = ds and ds[0]['groups'].get('g', {})
        return ds and g.get('healthy_canaries', 0) >= n and ds[0]
    return wait_for(look, 90, f'{n} healthy canaries of version {version}', step=0.2)


def first_version(port, tmp_path):
    """Version 0 (nothing to replace: no canaries), all three running."""
    r = cli(port, 'job', 'run', canary_job(tmp_path, 'zero'), timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    d0 = wait_deployment(port, 0, ('successful',))
    assert 'desired_canaries' not in d0['groups']['g'], d0
    old = wait_for(lambda: (lambda a: a if len(a) == 3 and all(
        x['client_status'] == 'running' for x in a) else None)(live(port)), 60,
        'three running allocations of version 0')
    return {a['id'] for a in old}


def test_canary_beside_old_then_promote_via_cli(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    old_ids = first_version(dev.port, tmp_path)

    # job run follows the canary until it is healthy, says how to promote,
    # and returns
    r = cli(dev.port, 'job', 'run', canary_job(tmp_path, 'one'), timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'waits for promotion' in r.stdout, r.stdout
    assert 'herd deployment promote' in r.stdout, r.stdout
    d = wait_deployment(dev.port, 1, ('running',))
    g = d['groups']['g']
    assert (g['desired_canaries'], g['placed_canaries'], g['healthy_canaries']) == (1, 1, 1), d
    assert g['promoted'] is False
    assert d['status_description'] == 'Deployment is running but requires manual promotion'
    # the canary runs beside the three old ones, which were not touched
    now = live(dev.port)
    new = [a for a in now if a['job_version'] == 1]
    assert len(now) == 4 and len(new) == 1, now
    assert is_canary(new[0]) and new[0]['deployment_id'] == d['id']
    assert new[0]['deployment_status']['healthy'] is True
    assert {a['id'] for a in now if a['job_version'] == 0} == old_ids

    r = cli(dev.port, 'deployment', 'status', d['id'][:8])
    assert r.returncode == 0 and 'PROMOTED' in r.stdout and '1/1' in r.stdout, r.stdout
    r = cli(dev.port, 'job', 'status', 'can')
    assert r.returncode == 0 and 'g (canary)' in r.stdout, r.stdout

    r = cli(dev.port, 'deployment', 'promote', d['id'][:8])
    assert r.returncode == 0 and 'promoted: g' in r.stdout, r.stdout + r.stderr
    d = wait_deployment(dev.port, 1, ('successful',))
    g = d['groups']['g']
    assert g['promoted'] is True and g['healthy_allocs'] == 3 and g['placed_allocs'] == 3, d
    # count allocations of the new version, no more: the canary is one
    now = wait_for(lambda: (lambda a: a if len(a) == 3 else None)(live(dev.port)), 30,
                   'three live allocations')
    assert all(a['job_version'] == 1 for a in now), now
    canaries = [a for a in now if is_canary(a)]
    assert [a['id'] for a in canaries] == [new[0]['id']]
    assert canaries[0]['deployment_status'].get('promoted') is True
    stopped = [a for a in job_allocs(dev.port, 'can') if a['id'] in old_ids]
    assert all(a['desired_status'] == 'stop' for a in stopped)
    # the old one of the canary's index was stopped for it, not replaced
    by_canary = [a for a in stopped if 'promoted canary' in a.get('desired_description', '')]
    assert len(by_canary) == 1 and by_canary[0]['index'] == new[0]['index'], stopped
    r = cli(dev.port, 'deployment', 'promote', d['id'])
    assert r.returncode != 0 and 'not running' in r.stderr, r.stdout + r.stderr


def test_promote_refused_then_newer_version_then_fail(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    old_ids = first_version(dev.port, tmp_path)
    # a running deployment without canaries: nothing to promote
    slow = write_job(tmp_path, 'plain', CANARY_JOB.replace('job "can"', 'job "plain"')
                     .replace('WHICH_VALUE', 'p').replace('COMMAND', 'sleep 600')
                     .replace('CANARY', '0').replace('AUTO', 'false').replace('MHT', '5m')
                     .replace('HDL', '9m'))
    r = cli(dev.port, 'job', 'run', '-detach', slow)
    assert r.returncode == 0, r.stdout + r.stderr
    dp = wait_deployment(dev.port, 0, ('running',), job='plain')
    r = cli(dev.port, 'deployment', 'promote', dp['id'])
    assert r.returncode != 0 and 'no canaries' in r.stderr, r.stdout + r.stderr

    # a canary that runs but is not healthy yet (min_healthy_time 5m)
    r = cli(dev.port, 'job', 'run', '-detach', canary_job(tmp_path, 'one', mht='5m', hdl='9m'))
    assert r.returncode == 0, r.stdout + r.stderr
    d1 = wait_deployment(dev.port, 1, ('running',))
    wait_for(lambda: [a for a in live(dev.port) if is_canary(a) and
                      a['client_status'] == 'running'], 60, 'the canary to run')
    r = cli(dev.port, 'deployment', 'promote', d1['id'])
    assert r.returncode != 0, r.stdout + r.stderr
    assert '1 of 1 canaries not healthy' in r.stderr, r.stderr
    d1 = api(dev.port, f'/v1/deployment/{d1["id"]}')
    assert d1['status'] == 'running' and d1['groups']['g']['promoted'] is False
    assert {a['id'] for a in live(dev.port) if a['job_version'] == 0} == old_ids

    # a newer version cancels it: its canary stops, the new one's comes
    r = cli(dev.port, 'job', 'run', '-detach', canary_job(tmp_path, 'two', mht='5m', hdl='9m'))
    assert r.returncode == 0, r.stdout + r.stderr
    d2 = wait_deployment(dev.port, 2, ('running',))
    assert wait_deployment(dev.port, 1, ('cancelled',))['id'] == d1['id']
    now = wait_for(lambda: (lambda a: a if not [x for x in a if x['job_version'] == 1] and
                            [x for x in a if x['job_version'] == 2] else None)(live(dev.port)),
                   60, 'the canary of version 2 alone')
    assert [is_canary(a) for a in now if a['job_version'] == 2] == [True]

    # a manual fail: the canary stops, the old allocations keep running
    r = cli(dev.port, 'deployment', 'fail', d2['id'])
    assert r.returncode == 0, r.stdout + r.stderr
    now = wait_for(lambda: (lambda a: a if len(a) == 3 else None)(live(dev.port)), 60,
                   'the canary to stop')
    assert {a['id'] for a in now} == old_ids
    assert all(a['client_status'] == 'running' for a in now)
    can = [a for a in job_allocs(dev.port, 'can') if a['job_version'] == 2]
    assert len(can) == 1 and can[0]['desired_status'] == 'stop'


def test_auto_promote_then_failing_canary_reverts(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    first_version(dev.port, tmp_path)
    # two canaries promoted as soon as both are healthy: job run follows the
    # whole rollout
    r = cli(dev.port, 'job', 'run', canary_job(tmp_path, 'one', canary=2, auto=True),
            timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'successful' in r.stdout and 'waits for promotion' not in r.stdout, r.stdout
    d1 = wait_deployment(dev.port, 1, ('successful',))
    g = d1['groups']['g']
    assert (g['desired_canaries'], g['placed_canaries'], g['promoted']) == (2, 2, True), d1
    now = wait_for(lambda: (lambda a: a if len(a) == 3 else None)(live(dev.port)), 30,
                   'three live allocations')
    assert all(a['job_version'] == 1 for a in now)
    assert sum(is_canary(a) for a in now) == 2
    v1_ids = {a['id'] for a in now}

    # a canary that exits at once: failed, stopped, and back to version 1
    r = cli(dev.port, 'job', 'run', canary_job(tmp_path, 'bad', command='exit 1'), timeout=180)
    assert r.returncode != 0, r.stdout + r.stderr
    d2 = wait_deployment(dev.port, 2, ('failed',))
    assert d2['groups']['g']['unhealthy_allocs'] == 1, d2
    assert 'rolling back to job version 1' in d2['status_description'], d2
    job = wait_for(lambda: (lambda j: j if j['version'] == 3 else None)(
        api(dev.port, '/v1/job/can')), 60, 'the revert to register version 3')
    assert [t['env']['WHICH'] for t in job['groups'][0]['tasks']] == ['one']
    bad = [a for a in job_allocs(dev.port, 'can') if a['job_version'] == 2]
    assert len(bad) == 1 and is_canary(bad[0]) and bad[0]['desired_status'] == 'stop', bad
    # the allocations of version 1 never stopped
    now = wait_for(lambda: (lambda a: a if len(a) == 3 and all(
        x['job_version'] == 3 for x in a) else None)(live(dev.port)), 60,
        'three allocations of version 3')
    assert {a['id'] for a in now} == v1_ids


def test_server_kill9_mid_canary_deployment(agents, tmp_path):
    srv = Agent(tmp_path, 'server', ['-config', server_config(tmp_path),
                                     '-http-port', '0']).start()
    agents.append(srv)
    port = srv.port
    start_client(agents, tmp_path, 'c1', port, 't4-2x.json')
    wait_for(lambda: [n for n in api(port, '/v1/nodes') if n['status'] == 'ready'], 15,
             'the client to be ready')
    old_ids = first_version(port, tmp_path)
    r = cli(port, 'job', 'run', canary_job(tmp_path, 'one'), timeout=180)
    assert r.returncode == 0 and 'waits for promotion' in r.stdout, r.stdout + r.stderr
    before = wait_canaries_healthy(port, 1, 1)
    assert before['status'] == 'running'

    srv.kill9()
    again = Agent(tmp_path, 'server', ['-config', server_config(tmp_path), '-http-port',
                                       str(port)], port=port).start()
    agents.append(again)
    wait_for(lambda: [n for n in api(port, '/v1/nodes') if n['status'] == 'ready'], 30,
             'the client to reconnect')
    after = api(port, f'/v1/deployment/{before["id"]}')
    assert after['status'] == 'running', after
    assert after['groups']['g'] == before['groups']['g'], (before, after)
    now = live(port)
    assert len(now) == 4 and {a['id'] for a in now if a['job_version'] == 0} == old_ids, now
    assert [is_canary(a) for a in now if a['job_version'] == 1] == [True]

    r = cli(port, 'deployment', 'promote', before['id'])
    assert r.returncode == 0, r.stdout + r.stderr
    wait_deployment(port, 1, ('successful',))
    now = wait_for(lambda: (lambda a: a if len(a) == 3 else None)(live(port)), 30,
                   'three live allocations')
    assert all(a['job_version'] == 1 for a in now)


@pytest.mark.parametrize('bad', ['canary = -1', 'canary = 2\n    max_parallel = 0'])
def test_validation_refuses(agents, tmp_path, bad):
    dev = start_dev(agents, tmp_path)
    text = CANARY_JOB.replace('WHICH_VALUE', 'x').replace('COMMAND', 'true').replace(
        'CANARY', '0').replace('AUTO', 'false').replace('MHT', '1s').replace('HDL', '60s')
    text = text.replace('canary            = 0', bad).replace('max_parallel      = 1\n', '')
    r = cli(dev.port, 'job', 'run', '-detach', write_job(tmp_path, 'v', text))
    assert r.returncode != 0 and 'canary' in r.stdout + r.stderr, r.stdout + r.stderr
    batch = write_job(tmp_path, 'b', 'job "b" {\n type = "batch"\n update { canary = 1 }\n'
                      ' group "g" {\n task "t" {\n driver = "raw_exec"\n config {\n'
                      ' command = "/bin/true"\n }\n }\n }\n}\n')
    r = cli(dev.port, 'job', 'run', '-detach', batch)
    assert r.returncode != 0 and 'needs a service job' in r.stdout + r.stderr, \
        r.stdout + r.stderr


def test_job_promote_promotes_the_latest_deployment(agents, tmp_path):
    """herd job promote JOB: the job's latest deployment, promoted as herd
    deployment promote does it, with the same refusals; herd alloc status
    shows an allocation's deployment health and whether it is a canary."""
    dev = start_dev(agents, tmp_path)
    first_version(dev.port, tmp_path)
    # version 0's deployment has no canaries (and is over): refused alike
    d0 = wait_deployment(dev.port, 0, ('successful',))
    by_job = cli(dev.port, 'job', 'promote', 'can')
    by_id = cli(dev.port, 'deployment', 'promote', d0['id'])
    assert by_job.returncode == by_id.returncode != 0, by_job.stderr + by_id.stderr
    assert by_job.stderr.replace('herd job promote', '') == \
        by_id.stderr.replace('herd deployment promote', ''), (by_job.stderr, by_id.stderr)
    # a job without deployments, and one that does not exist
    plain = write_job(tmp_path, 'plain', 'job "plain" {\n group "g" {\n task "t" {\n'
                      ' driver = "raw_exec"\n config {\n command = "/bin/sleep"\n'
                      ' args = ["600"]\n }\n }\n }\n}\n')
    r = cli(dev.port, 'job', 'run', '-detach', plain)
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(dev.port, 'job', 'promote', 'plain')
    assert r.returncode == 1 and 'has no deployment to promote' in r.stderr, r.stderr
    r = cli(dev.port, 'job', 'promote', 'nosuch')
    assert r.returncode == 1 and 'nosuch' in r.stderr, r.stderr

    r = cli(dev.port, 'job', 'run', '-detach', canary_job(tmp_path, 'one'))
    assert r.returncode == 0, r.stdout + r.stderr
    d = wait_canaries_healthy(dev.port, 1, 1)
    # herd alloc status: the deployment's health, and which is a canary
    [canary] = [a for a in live(dev.port) if is_canary(a)]
    old = [a for a in live(dev.port) if a['job_version'] == 0]
    r = cli(dev.port, 'alloc', 'status', canary['id'])
    assert r.returncode == 0, r.stderr
    assert 'Deployment           healthy (canary)\n' in r.stdout, r.stdout
    assert f'Deployment ID        {d["id"]}\n' in r.stdout, r.stdout
    r = cli(dev.port, 'alloc', 'status', old[0]['id'])
    assert r.returncode == 0 and 'Deployment           healthy\n' in r.stdout, r.stdout
    [other] = [a for a in job_allocs(dev.port, 'plain')]
    r = cli(dev.port, 'alloc', 'status', other['id'])
    assert r.returncode == 0 and 'Deployment' not in r.stdout, r.stdout
    r = cli(dev.port, 'job', 'promote', '-group', 'nosuch', 'can')
    assert r.returncode != 0 and 'group nosuch has no canaries' in r.stderr, r.stderr
    r = cli(dev.port, 'job', 'promote', '-group', 'g', 'can')
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == f'deployment {d["id"]} promoted: g', r.stdout
    d = wait_deployment(dev.port, 1, ('successful',))
    assert d['groups']['g']['promoted'] is True and d['groups']['g']['healthy_allocs'] == 3, d
    r = cli(dev.port, 'alloc', 'status', canary['id'])
    assert r.returncode == 0, r.stderr
    assert 'Deployment           healthy (canary, promoted)\n' in r.stdout, r.stdout
