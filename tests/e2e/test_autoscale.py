"""End-to-end: herd's GPU-utilization autoscaler (docs/jobspec.md, "scaling").

A dev agent with eight simulated H100s and heartbeats every second (server
{ heartbeat_ttl = "2s" }), every GPU at 90% utilization (the simulator
re-reads its file, docs/gpu-sim.md).  A service of one allocation (one GPU)
with scaling { min = 1  max = 3  policy { gpu_utilization = 50  window =
"5s"  cooldown = "0s" } }:
- busy GPUs scale it up to 2 (1 x 90/50 rounded up), then to its max, 3;
- the scale API keeps to the bounds (400 above max);
- once the GPUs idle at 10%, it goes down to 1 (3 x 10/50 rounded up);
- GET /v1/job/:id/scale, `herd job status` and the metrics show what was
  done, and each change is a job version with an evaluation triggered by
  the autoscaler.
A second service with `enabled = false` stays at its count throughout.
No timing is asserted: every wait polls with a generous deadline."""
import json

from test_control_plane import api, cli, wait_for, write_job  # noqa: F401
from test_control_plane import agents  # noqa: F401
from test_idle_gpu import set_utilization, start
from test_metrics import parse, samples, scrape


def job(job_id, enabled):
    return f'''
job "{job_id}" {{
  group "api" {{
    scaling {{
      min = 1
      max = 3
      enabled = {str(enabled).lower()}
      policy {{
        gpu_utilization = 50
        window = "5s"
        cooldown = "0s"
      }}
    }}
    task "serve" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "sleep 600"]
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


def scale_status(a, job_id):
    return api(a.port, f'/v1/job/{job_id}/scale')['groups']['api']


def running(a, job_id):
    return len([x for x in api(a.port, f'/v1/job/{job_id}/allocations')
                if x['client_status'] == 'running' and x['desired_status'] == 'run'])


def test_autoscaler_follows_gpu_utilization(agents, tmp_path):  # noqa: F811
    a, sim, doc = start(agents, tmp_path)
    set_utilization(sim, doc, {g['uuid']: 90 for g in doc['gpus']})
    for job_id, enabled in (('infer', True), ('frozen', False)):
        r = cli(a.port, 'job', 'run', '-detach', write_job(tmp_path, job_id, job(job_id, enabled)))
        assert r.returncode == 0, r.stdout + r.stderr

    # busy: up to the max, one step at a time (each new allocation is
    # watched for a whole window first)
    wait_for(lambda: scale_status(a, 'infer')['count'] == 2, 60, 'infer scaled to 2')
    wait_for(lambda: scale_status(a, 'infer')['count'] == 3 and running(a, 'infer') == 3, 60,
             'infer scaled to its max, 3, and running')
    st = scale_status(a, 'infer')
    assert [(e['from'], e['to']) for e in st['events']] == [(1, 2), (2, 3)], st
    assert 'above the 50% target' in st['events'][0]['message'], st
    assert st['scaling']['max'] == 3 and st['scaling']['policy']['gpu_utilization'] == 50

    # the bounds hold for the scale API too
    r = cli(a.port, 'job', 'scale', 'infer', '4')
    assert r.returncode != 0 and 'outside scaling' in r.stderr, r.stdout + r.stderr

    # at its max and still busy, it stays there: another window passes
    # (the GPU utilization of the group is known) without a change
    wait_for(lambda: scale_status(a, 'infer')['gpu_utilization'] is not None, 30,
             'the group utilization known at 3')
    assert scale_status(a, 'infer')['count'] == 3

    # idle: down to 1 (3 x 10 / 50 = 0.6, rounded up)
    set_utilization(sim, doc, {g['uuid']: 10 for g in doc['gpus']})
    wait_for(lambda: scale_status(a, 'infer')['count'] == 1, 60, 'infer scaled down to 1')
    wait_for(lambda: running(a, 'infer') == 1, 60, 'infer down to one allocation')
    st = scale_status(a, 'infer')
    assert [(e['from'], e['to']) for e in st['events']] == [(1, 2), (2, 3), (3, 1)], st
    assert 'below the 50% target' in st['events'][-1]['message']

    # each change is a version; its evaluation says who made it
    versions = api(a.port, '/v1/job/infer/versions')
    assert sorted(v['version'] for v in versions) == [0, 1, 2, 3], versions
    evals = api(a.port, '/v1/job/infer/evaluations')
    assert len([e for e in evals if e['triggered_by'] == 'autoscaler']) == 3, evals

    # the disabled one never moved
    st = scale_status(a, 'frozen')
    assert st['count'] == 1 and st['events'] == [], st
    assert len(api(a.port, '/v1/job/frozen/versions')) == 1

    r = cli(a.port, 'job', 'status', 'infer')
    assert r.returncode == 0, r.stderr
    assert 'Scaling' in r.stdout and 'Scaling Events' in r.stdout, r.stdout
    assert 'count 3 -> 1' in r.stdout, r.stdout
    r = cli(a.port, 'job', 'status', 'frozen')
    assert 'off (enabled = false)' in r.stdout, r.stdout

    status, _, text = scrape(a.port)
    assert status == 200
    got = {lab['direction']: v for lab, v in samples(parse(text), 'herd_autoscale_changes_total')}
    assert got == {'up': 2.0, 'down': 1.0}, got


def test_run_preserve_counts(agents, tmp_path):  # noqa: F811
    """herd job run -preserve-counts keeps the counts a scale set; a plain
    run sets the file's; the kept count must fit the new file's bounds."""
    a, sim, doc = start(agents, tmp_path)
    text = job('web', False).replace('gpu_utilization = 50', 'tolerance = 5')
    f = write_job(tmp_path, 'web', text)
    assert cli(a.port, 'job', 'run', '-detach', f).returncode == 0
    r = cli(a.port, 'job', 'scale', 'web', '3')
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: running(a, 'web') == 3, 60, 'web at 3')

    # the same file with its counts preserved: the job as it is, no version
    r = cli(a.port, 'job', 'run', '-detach', '-preserve-counts', f)
    assert r.returncode == 0 and 'unchanged' in r.stdout, r.stdout + r.stderr
    assert len(api(a.port, '/v1/job/web/versions')) == 2
    # a changed file: a new version, still 3
    f2 = write_job(tmp_path, 'web2', text.replace('sleep 600', 'sleep 601'))
    r = cli(a.port, 'job', 'run', '-detach', '-preserve-counts', f2)
    assert r.returncode == 0, r.stdout + r.stderr
    assert api(a.port, '/v1/job/web')['groups'][0]['count'] == 3
    assert len(api(a.port, '/v1/job/web/versions')) == 3
    # a kept count outside the new file's bounds: refused, nothing stored
    f3 = write_job(tmp_path, 'web3', text.replace('max = 3', 'max = 2'))
    r = cli(a.port, 'job', 'run', '-detach', '-preserve-counts', f3)
    assert r.returncode != 0 and "outside scaling's bounds" in r.stderr, r.stdout + r.stderr
    assert len(api(a.port, '/v1/job/web/versions')) == 3
    # without the flag: the file's count
    r = cli(a.port, 'job', 'run', '-detach', f2)
    assert r.returncode == 0, r.stdout + r.stderr
    assert api(a.port, '/v1/job/web')['groups'][0]['count'] == 1
    wait_for(lambda: running(a, 'web') == 1, 60, 'web back at 1')
