"""End-to-end: a job's versions through the CLI.

`herd job history` lists them (with -p what changed), `herd job revert`
registers an earlier spec again as a new version and its allocations
replace the current ones, `herd job scale` changes a group's count, and
`herd eval list` / `herd eval status` show the evaluations all that made;
bad input gets a clear error and changes nothing.

Real herd agents on 127.0.0.1 (the `agents` fixture of test_control_plane)."""
import json

from test_control_plane import (agents, api, cli, gpu_job, job_allocs,  # noqa: F401
                                running_allocs, start_dev, wait_for, write_job)


def service(tmp_path, name, command, count=1):
    return write_job(tmp_path, name, gpu_job('web', '', jtype='service', count=count,
                                             command=command))


def run_ok(dev, *args):
    r = cli(dev.port, *args)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r


def versions(dev):
    return [v['version'] for v in api(dev.port, '/v1/job/web/versions')]


def test_history_revert_scale_and_evals(agents, tmp_path):
    dev = start_dev(agents, tmp_path, 't4-2x.json')
    run_ok(dev, 'job', 'run', service(tmp_path, 'v0', 'sleep 300'))
    [first] = running_allocs(dev.port, 'web')
    assert first['job_version'] == 0
    run_ok(dev, 'job', 'run', service(tmp_path, 'v1', 'sleep 301'))
    [second] = running_allocs(dev.port, 'web')
    assert second['job_version'] == 1

    # history: both versions, newest first; -p shows the command's change
    r = run_ok(dev, 'job', 'history', 'web')
    assert r.stdout.index('Version      1 (current)') < r.stdout.index('Version      0')
    assert 'Diff' not in r.stdout
    r = run_ok(dev, 'job', 'history', '-p', 'web')
    assert ('~ groups[0].tasks[0].config.args[1]: '
            '"env > $HERD_ALLOC_DIR/env.txt; sleep 300" -> '
            '"env > $HERD_ALLOC_DIR/env.txt; sleep 301"') in r.stdout
    hist = json.loads(run_ok(dev, 'job', 'history', '-json', '-p', 'web').stdout)
    assert [v['version'] for v in hist] == [1, 0]
    assert hist[0]['diff'] == [{'path': 'groups[0].tasks[0].config.args[1]',
                                'change': 'changed',
                                'old': 'env > $HERD_ALLOC_DIR/env.txt; sleep 300',
                                'new': 'env > $HERD_ALLOC_DIR/env.txt; sleep 301'}]
    assert 'diff' not in hist[1]

    # revert to 0: the first spec again, as version 2; its allocation
    # replaces version 1's
    r = run_ok(dev, 'job', 'revert', 'web', '0')
    assert 'reverted to version 0: version 2' in r.stdout
    assert '1 allocation running' in r.stdout
    assert versions(dev) == [0, 1, 2]
    v0 = api(dev.port, '/v1/job/web/version/0')
    v2 = api(dev.port, '/v1/job/web/version/2')
    assert v2['groups'] == v0['groups']
    [third] = running_allocs(dev.port, 'web')
    assert third['job_version'] == 2 and third['id'] != second['id']
    old = api(dev.port, f'/v1/allocation/{second["id"]}')
    assert old['desired_status'] == 'stop'
    # the same spec again: nothing to do, no new version
    r = run_ok(dev, 'job', 'revert', 'web', '2')
    assert 'nothing to do' in r.stdout
    assert versions(dev) == [0, 1, 2]

    # scale 1 -> 3 -> 1 (the job's only group, named or not)
    r = run_ok(dev, 'job', 'scale', 'web', '3')
    assert '3 allocations running' in r.stdout
    assert len(running_allocs(dev.port, 'web')) == 3
    r = run_ok(dev, 'job', 'scale', 'web', 'g', '1')
    assert 'group "g" scaled to 1' in r.stdout
    wait_for(lambda: len([a for a in job_allocs(dev.port, 'web')
                          if a['desired_status'] == 'run']) == 1, 15, 'two to stop')
    assert len(running_allocs(dev.port, 'web')) == 1
    assert versions(dev) == [0, 1, 2, 3, 4]
    r = run_ok(dev, 'job', 'history', '-p', 'web')
    assert '~ groups[0].count: 3 -> 1' in r.stdout
    assert '~ groups[0].count: 1 -> 3' in r.stdout

    # the evaluations: every change made one, newest first
    evals = json.loads(run_ok(dev, 'eval', 'list', '-json', '-job', 'web').stdout)
    triggers = [e['triggered_by'] for e in evals]
    assert triggers[:3] == ['job-scaling', 'job-scaling', 'job-revert']
    assert triggers.count('job-register') == 2
    assert all(e['job_id'] == 'web' for e in evals)
    r = run_ok(dev, 'eval', 'list', '-job', 'web', '-status', 'complete')
    assert 'job-revert' in r.stdout and 'TRIGGERED BY' in r.stdout
    assert json.loads(run_ok(dev, 'eval', 'list', '-json', '-job', 'nope').stdout) == []
    r = run_ok(dev, 'eval', 'status', evals[2]['id'][:8])
    assert evals[2]['id'] in r.stdout
    assert 'Triggered By         job-revert' in r.stdout
    assert 'Status               complete' in r.stdout
    one = json.loads(run_ok(dev, 'eval', 'status', '-json', evals[0]['id']).stdout)
    assert one['id'] == evals[0]['id'] and one['triggered_by'] == 'job-scaling'


def test_bad_input_changes_nothing(agents, tmp_path):
    dev = start_dev(agents, tmp_path, 't4-2x.json')
    run_ok(dev, 'job', 'run', '-detach', service(tmp_path, 'v0', 'sleep 300'))
    cases = [
        (('job', 'revert', 'web', '7'), 1, 'no version 7 of job web'),
        (('job', 'revert', 'nope', '0'), 1, 'no version 0 of job nope'),
        (('job', 'revert', 'web', 'x'), 2, 'not a version number'),
        (('job', 'revert', 'web'), 2, 'missing version'),
        (('job', 'scale', 'web', 'zz', '2'), 1, 'no group "zz"'),
        (('job', 'scale', 'web', '100001'), 1, 'must be between 0 and 100000'),
        (('job', 'scale', 'web', 'many'), 2, 'not a number'),
        (('job', 'scale', 'nope', '2'), 1, 'no job nope'),
        (('job', 'history', 'nope'), 1, 'nope'),
        (('eval', 'list', '-status', 'bogus'), 2, 'not a status'),
        (('eval', 'status', 'ffffffff'), 1, 'no evaluation with id "ffffffff"'),
    ]
    for args, code, msg in cases:
        r = cli(dev.port, *args)
        assert r.returncode == code, (args, r.stdout, r.stderr)
        assert msg in r.stderr, (args, r.stderr)
    assert versions(dev) == [0]
