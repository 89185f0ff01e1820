"""End-to-end: herd job restart (docs/operations.md, "Restarting a job").

A dev agent with eight simulated H100s and a service of three allocations:
- in place, two at a time: every allocation keeps its id and gets one
  "restarted by user" restart, its task running again; no new job version;
- -group of a group the job lacks restarts nothing;
- -reschedule, one at a time: every allocation is replaced (new ids, each
  the replacement of one of the old ones), the job still at three;
- bad flags are usage errors.
No timing is asserted: the command itself waits for each batch."""
from test_control_plane import agents, api, cli, gpu_job, running_allocs, start_dev, write_job  # noqa: F401


def user_restarts(alloc):
    return sum(1 for e in alloc['task_states']['t']['events']
               if e['type'] == 'Restart Signaled' and e['message'] == 'restarted by user')


def test_job_restart_in_place_and_rescheduled(agents, tmp_path):  # noqa: F811
    dev = start_dev(agents, tmp_path, 'h100-sxm-8x-nvlink.json')
    job = write_job(tmp_path, 'web', gpu_job('web', 'device "nvidia/gpu" { count = 1 }',
                                             jtype='service', count=3, command='sleep 600'))
    r = cli(dev.port, 'job', 'run', job)
    assert r.returncode == 0, r.stdout + r.stderr
    before = {a['id']: a for a in running_allocs(dev.port, 'web')}
    assert len(before) == 3

    r = cli(dev.port, 'job', 'restart', '-batch-size', '2', 'web')
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'batch 1 of 2' in r.stdout and 'batch 2 of 2' in r.stdout, r.stdout
    assert '3 allocations restarted' in r.stdout, r.stdout
    after = {a['id']: a for a in running_allocs(dev.port, 'web')}
    assert set(after) == set(before)
    for a in after.values():
        assert user_restarts(a) == 1, a['task_states']['t']['events']
        assert a['task_states']['t']['state'] == 'running'
    assert len(api(dev.port, '/v1/job/web/versions')) == 1

    r = cli(dev.port, 'job', 'restart', '-group', 'nope', 'web')
    assert r.returncode == 0 and '0 running allocations' in r.stdout, r.stdout + r.stderr

    r = cli(dev.port, 'job', 'restart', '-reschedule', '-batch-size', '33%', 'web')
    assert r.returncode == 0, r.stdout + r.stderr
    assert 'batch 3 of 3' in r.stdout, r.stdout
    now = running_allocs(dev.port, 'web')
    assert len(now) == 3 and not set(a['id'] for a in now) & set(before), now
    assert sorted(a['previous_allocation'] for a in now) == sorted(before)

    for args, why in ((('-batch-size', '0'), '-batch-size'), (('-batch-wait', 'soon'), '-batch-wait'),
                      (('-on-error', 'ask'), '-on-error'),
                      (('-reschedule', '-task', 't'), 'not both')):
        r = cli(dev.port, 'job', 'restart', *args, 'web')
        assert r.returncode == 2 and why in r.stderr, (args, r.stderr)
