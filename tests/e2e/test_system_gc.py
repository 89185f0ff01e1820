"""End-to-end: herd system gc (docs/operations.md, "Garbage collection").

A dev agent whose server collects what ended over a second ago, on its own
only every hour: a completed batch job stays until `herd system gc`, which
removes it with its evaluation and allocation and says so; a running
service stays; a second run finds nothing.  No timing is asserted beyond
waiting out the threshold."""
import json
import time

from test_control_plane import (GPUS, Agent, agents, api, cli, gpu_job, running_allocs,  # noqa: F401
                                wait_for, write_job)

CONFIG = '''
server {
  job_gc_threshold  = "1s"
  eval_gc_threshold = "1s"
  job_gc_interval   = "1h"
}
'''


def test_system_gc_collects_what_ended(agents, tmp_path):  # noqa: F811
    cfg = tmp_path / 'agent.hcl'
    cfg.write_text(CONFIG)
    a = Agent(tmp_path, 'dev', ['-dev', '-http-port', '0', '-config', str(cfg)],
              gpu_file=GPUS / 't4-2x.json').start()
    agents.append(a)
    wait_for(lambda: [n for n in api(a.port, '/v1/nodes') if n['status'] == 'ready'], 15,
             'the dev node to be ready')
    r = cli(a.port, 'job', 'run', write_job(tmp_path, 'done', gpu_job('done', '', command='true')))
    assert r.returncode == 0, r.stdout + r.stderr
    r = cli(a.port, 'job', 'run', write_job(tmp_path, 'svc', gpu_job('svc', '', jtype='service',
                                                                    command='sleep 600')))
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: api(a.port, '/v1/job/done')['status'] == 'dead', 30, 'the batch job done')
    time.sleep(1.5)  # past the 1s threshold
    assert [j['id'] for j in api(a.port, '/v1/jobs')].count('done') == 1  # not on its own

    r = cli(a.port, 'system', 'gc', '-json')
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out['jobs'] == 1 and out['allocations'] >= 1 and out['evaluations'] >= 1, out
    assert [j['id'] for j in api(a.port, '/v1/jobs')] == ['svc']
    assert len(running_allocs(a.port, 'svc')) == 1
    r = cli(a.port, 'job', 'status', 'done')
    assert r.returncode == 1, r.stdout
    r = cli(a.port, 'system', 'gc')
    assert r.returncode == 0 and r.stdout == 'removed 0 jobs, 0 evaluations, 0 allocations\n', \
        r.stdout
    r = cli(a.port, 'system', 'gc', 'extra')
    assert r.returncode == 2, r.stderr
