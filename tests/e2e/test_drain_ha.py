"""End-to-end: a node drain goes on through a PostgreSQL failover (docs/operations.md,
"Draining and eligibility", "High availability"): the drain's deadline is in the node's
record, so the new leader's drainer stops the batch job at the same deadline."""
from test_control_plane import GPUS, Agent, agents, api, job_allocs, wait_for, write_job  # noqa: F401
from test_drain import batch_job
from test_ha import client_config, cli, leading, pg, standby_line, start_server  # noqa: F401


def test_failover_mid_drain_keeps_the_deadline(agents, tmp_path, pg):
    s1 = start_server(agents, tmp_path, 's1', pg)
    wait_for(lambda: leading(s1), 20, 'the first server to lead')
    s2 = start_server(agents, tmp_path, 's2', pg)
    wait_for(lambda: standby_line(s2, s1), 20, 'the standby line')
    a1, a2 = f'127.0.0.1:{s1.port}', f'127.0.0.1:{s2.port}'
    for name in ('c1', 'c2'):
        c = Agent(tmp_path, name, ['-config', client_config(tmp_path), '-servers',
                                   f'{a1},{a2}', '-node', name],
                  gpu_file=GPUS / 't4-2x.json').start()
        agents.append(c)
    nodes = wait_for(lambda: {n['name']: n for n in api(s1.port, '/v1/nodes')
                              if n['status'] == 'ready'} if len(api(s1.port, '/v1/nodes')) == 2
                     and all(n['status'] == 'ready' for n in api(s1.port, '/v1/nodes')) else None,
                     20, 'two ready nodes')
    c1, c2 = nodes['c1']['id'], nodes['c2']['id']
    assert cli(a1, 'node', 'eligibility', '-disable', c2).returncode == 0
    r = cli(a1, 'job', 'run', '-detach', write_job(tmp_path, 'train', batch_job('train', 300)))
    assert r.returncode == 0, r.stdout + r.stderr
    wait_for(lambda: [a for a in job_allocs(s1.port, 'train') if a['client_status'] == 'running'],
             30, 'the batch job to run')
    [a] = job_allocs(s1.port, 'train')
    assert a['node_id'] == c1
    assert cli(a1, 'node', 'eligibility', '-enable', c2).returncode == 0

    r = cli(a1, 'node', 'drain', '-deadline', '8s', '-detach', c1)
    assert r.returncode == 0, r.stdout + r.stderr
    strategy = api(s1.port, f'/v1/node/{c1}')['drain_strategy']
    s1.kill9()
    wait_for(lambda: leading(s2), 30, 'the standby to lead', step=0.02)
    n = api(s2.port, f'/v1/node/{c1}')
    if n['drain']:   # still under way: the same strategy
        assert n['drain_strategy'] == strategy
    n = wait_for(lambda: (lambda x: not x['drain'] and x)(api(s2.port, f'/v1/node/{c1}')), 60,
                 'the drain to complete under the new leader')
    assert n['last_drain']['status'] == 'complete'
    assert n['last_drain']['started_at'] == strategy['started_at']
    [repl] = [x for x in job_allocs(s2.port, 'train') if x.get('previous_allocation') == a['id']]
    # stopped and replaced at the deadline the first leader recorded
    assert repl['create_time'] >= strategy['force_deadline']
    assert repl['node_id'] == c2
