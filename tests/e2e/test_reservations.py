"""End-to-end: reservations with backfill (docs/teams.md, "Reservations").

A dev agent with two simulated GPUs is kept busy by 1-GPU jobs with a time
limit; a 2-GPU job and then a 1-GPU job without a limit wait.  With
reservations on (`server { reserve_after = "0s" }`), the 2-GPU job gets
both GPUs reserved: a freed GPU goes neither to the 1-GPU job nor
to anything without a short enough limit, only to a job whose time limit
ends before the reservation's estimated start (backfill); the 2-GPU job
starts once the small ones end.  With reservations off, the freed GPU goes
to the waiting 1-GPU job (the old behaviour).

Every task waits for a file the test creates, so the test decides when
each ends; every wait polls with a generous deadline."""
import json
import threading
import time
import urllib.request

from test_control_plane import GPUS, Agent, agents, api, cli, wait_for  # noqa: F401
from test_metrics import parse, samples, scrape, value

END_REASONS = ('left_queue', 'job_changed', 'instance_placed', 'node_unschedulable', 'no_fit',
               'taken_over')


def job_hcl(job_id, gpus, gate, limit=None, job_type='batch'):
    tl = f'time_limit = "{limit}"' if limit else ''
    return f'''
job "{job_id}" {{
  type = "{job_type}"
  group "g" {{
    {tl}
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "while [ ! -e {gate} ]; do sleep 0.1; done"]
      }}
      resources {{
        cpu = 50
        memory = 32
        device "nvidia/gpu" {{ count = {gpus} }}
      }}
    }}
  }}
}}
'''


def start(agents, tmp_path, reserve_after):  # noqa: F811
    cfg = tmp_path / 'agent.hcl'
    cfg.write_text(f'server {{\n  reserve_after = "{reserve_after}"\n}}\n')
    dev = Agent(tmp_path, 'dev', ['-dev', '-config', str(cfg), '-http-port', '0'],
                gpu_file=GPUS / 't4-2x.json').start()
    agents.append(dev)
    wait_for(lambda: [n for n in api(dev.port, '/v1/nodes') if n['status'] == 'ready'], 20,
             'the dev node to be ready')
    return dev


def run(dev, tmp_path, job_id, gpus, limit=None, job_type='batch'):
    f = tmp_path / f'{job_id}.hcl'
    f.write_text(job_hcl(job_id, gpus, tmp_path / f'end-{job_id}', limit, job_type))
    r = cli(dev.port, 'job', 'run', '-detach', str(f))
    assert r.returncode == 0, r.stdout + r.stderr


def end(tmp_path, job_id):
    (tmp_path / f'end-{job_id}').write_text('')


def statuses(dev, job_id):
    return [a['client_status'] for a in api(dev.port, f'/v1/job/{job_id}/allocations')]


def running(dev, job_id):
    return statuses(dev, job_id) == ['running']


def waits(dev, job_id):
    """Planned at least once and nothing placed."""
    evals = api(dev.port, f'/v1/job/{job_id}/evaluations')
    return statuses(dev, job_id) == [] and any(
        e['status'] in ('blocked', 'queued') for e in evals)


def reservation(dev):
    for e in api(dev.port, '/v1/quotas/queue'):
        if e.get('reservation'):
            return e['reservation']
    return None


def metrics(dev):
    status, _, text = scrape(dev.port)
    assert status == 200
    return parse(text)


def ended(fams, reason):
    return value(fams, 'herd_reservations_ended_total', reason=reason)


def fill(dev, tmp_path):
    for j in ('s1', 's2'):
        run(dev, tmp_path, j, 1, limit='10m')
        wait_for(lambda: running(dev, j), 30, f'{j} running')
    run(dev, tmp_path, 'big', 2)
    wait_for(lambda: waits(dev, 'big'), 30, 'big waiting')
    run(dev, tmp_path, 'w1', 1)
    wait_for(lambda: waits(dev, 'w1'), 30, 'w1 waiting')


def test_reservation_bounds_the_wait_and_backfills(agents, tmp_path):  # noqa: F811
    dev = start(agents, tmp_path, '0s')
    fill(dev, tmp_path)
    wait_for(lambda: reservation(dev), 30, 'a reservation for big')
    r = reservation(dev)
    assert r['job_id'] == 'big' and len(r['devices']) == 2, r
    # held until the later small job's limit ends (10m from its start)
    assert r['estimated_start'] is not None
    gpus = api(dev.port, '/v1/gpus')
    assert sorted(g['device']['id'] for g in gpus if g.get('reserved_for') == 'big') == \
        sorted(r['devices'])
    out = cli(dev.port, 'gpu', 'status')
    assert out.returncode == 0 and out.stdout.count('reserved for big') == 2, out.stdout
    node = api(dev.port, f'/v1/node/{r["node_id"]}')
    assert sum(d.get('reserved_for') == 'big' for d in node['devices']) == 2
    m = metrics(dev)
    assert value(m, 'herd_reservations') == 1
    assert value(m, 'herd_reserved_gpus', namespace='default') == 2
    assert value(m, 'herd_reservation_wait_seconds', namespace='default') >= 0
    assert value(m, 'herd_reservations_made_total') >= 1
    assert m['herd_reservations_ended_total']['type'] == 'counter'
    assert sorted(l['reason'] for l, _ in m['herd_reservations_ended_total']['samples']) == \
        sorted(END_REASONS)
    left_before = ended(m, 'left_queue')

    # s1 ends: w1 (no limit) may not take the freed GPU, nor a job
    # whose limit ends after big's estimated start; one that ends before
    # it does (backfill)
    end(tmp_path, 's1')
    wait_for(lambda: statuses(dev, 's1') == ['complete'], 30, 's1 complete')
    run(dev, tmp_path, 'long', 1, limit='1h')
    wait_for(lambda: waits(dev, 'long'), 30, 'long waiting')
    run(dev, tmp_path, 'short', 1, limit='1m')
    wait_for(lambda: running(dev, 'short'), 30, 'short backfilled')
    assert statuses(dev, 'w1') == [] and statuses(dev, 'long') == []
    assert statuses(dev, 'big') == []

    # the small ones end: big starts, ahead of w1 and long
    end(tmp_path, 's2')
    end(tmp_path, 'short')
    wait_for(lambda: running(dev, 'big'), 60, 'big running')
    assert statuses(dev, 'w1') == [] and statuses(dev, 'long') == []
    # big's reservation ended (w1, waiting now, may hold the next one)
    wait_for(lambda: (reservation(dev) or {}).get('job_id') != 'big', 30,
             "big's reservation to end")
    assert not [g for g in api(dev.port, '/v1/gpus') if g.get('reserved_for') == 'big']
    # placed: its reservation ended as its job left the queue
    assert ended(metrics(dev), 'left_queue') >= left_before + 1

    # big ends: the others start as before
    end(tmp_path, 'big')
    wait_for(lambda: running(dev, 'w1') and running(dev, 'long'), 60, 'w1 and long running')
    for j in ('w1', 'long'):
        end(tmp_path, j)


def blocking_gpus(dev, index, out):
    url = f'http://127.0.0.1:{dev.port}/v1/gpus?index={index}&wait=30s'
    t0 = time.monotonic()
    with urllib.request.urlopen(url, timeout=60) as r:
        out['index'] = int(r.headers['X-Herd-Index'])
        out['gpus'] = json.loads(r.read())
    out['took'] = time.monotonic() - t0


def test_blocking_gpus_answer_when_a_reservation_is_made(agents, tmp_path):  # noqa: F811
    """Watching GET /v1/gpus (as herd gpu status -watch and the UI do):
    each answer at the index of the one before; the reservation shows well
    before a wait of 30 s ends, whatever stored what when."""
    dev = start(agents, tmp_path, '0s')
    for j in ('s1', 's2'):
        run(dev, tmp_path, j, 1, limit='10m')
        wait_for(lambda: running(dev, j), 30, f'{j} running')
    with urllib.request.urlopen(f'http://127.0.0.1:{dev.port}/v1/gpus', timeout=30) as r:
        index = int(r.headers['X-Herd-Index'])
    run(dev, tmp_path, 'big', 2)
    deadline = time.monotonic() + 60
    while True:
        out = {}
        th = threading.Thread(target=blocking_gpus, args=(dev, index, out))
        th.start()
        th.join(60)
        assert out.get('took', 99) < 25, out  # answered by a change, not the wait's end
        if sum(g.get('reserved_for') == 'big' for g in out['gpus']) == 2:
            break
        assert time.monotonic() < deadline, 'no answer showed the reservation'
        index = out['index']
    for j in ('s1', 's2', 'big'):
        end(tmp_path, j)


def test_without_reservations_small_jobs_start_around(agents, tmp_path):  # noqa: F811
    dev = start(agents, tmp_path, 'off')
    fill(dev, tmp_path)
    end(tmp_path, 's1')
    wait_for(lambda: running(dev, 'w1'), 30, 'w1 running on the freed GPU')
    assert statuses(dev, 'big') == []
    assert reservation(dev) is None
    assert not [g for g in api(dev.port, '/v1/gpus') if g.get('reserved_for')]
    queue = json.dumps(api(dev.port, '/v1/quotas/queue'))
    assert 'big' in queue
    m = metrics(dev)
    assert value(m, 'herd_reservations') == 0
    assert value(m, 'herd_reservations_made_total') == 0
    assert not samples(m, 'herd_reserved_gpus') and not samples(m, 'herd_reservation_wait_seconds')
    assert all(ended(m, r) == 0 for r in END_REASONS)
    for j in ('s2', 'w1', 'big'):
        end(tmp_path, j)
