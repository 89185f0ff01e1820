"""GPU health from XID and ECC events (docs/gpus.md, "Health"), on a dev
agent with two simulated T4s whose description the test appends events to
while herd runs (docs/gpu-sim.md, "Injecting XIDs").

What is checked:
- an XID an application causes (13) leaves the GPU healthy; the agent says
  it saw it;
- XID 79 (fallen off the bus) makes that GPU unhealthy on the server, with
  the reason: a job asking for both GPUs stays pending, one asking for one
  runs on the other GPU;
- a double-bit ECC error makes the other GPU unhealthy too;
- nothing gives health back while the agent runs."""
import json
import os

from test_control_plane import GPUS, Agent, agents, api, cli, gpu_job, wait_for, write_job  # noqa: F401


class Machine:
    """The simulated GPUs' description, rewritten atomically."""

    def __init__(self, tmp_path):
        self.path = tmp_path / 'gpus.json'
        self.desc = json.loads((GPUS / 't4-2x.json').read_text())
        self.desc['xid_events'] = []
        self.write()

    def write(self):
        tmp = self.path.with_suffix('.tmp')
        tmp.write_text(json.dumps(self.desc))
        os.replace(tmp, self.path)   # the simulator reads a whole file

    def inject(self, event):
        self.desc['xid_events'].append(event)
        self.write()


def devices(port, node_id):
    return {d['id']: d for d in api(port, f'/v1/node/{node_id}')['devices']}


def test_xid_and_ecc_events_make_gpus_unhealthy(agents, tmp_path):
    m = Machine(tmp_path)
    a = Agent(tmp_path, 'dev', ['-dev', '-http-port', '0'], gpu_file=m.path).start()
    agents.append(a)
    node = wait_for(lambda: [n for n in api(a.port, '/v1/nodes') if n['status'] == 'ready'], 15,
                    'the dev node to be ready')[0]
    first, second = (g['uuid'] for g in m.desc['gpus'])
    assert all(d['healthy'] for d in devices(a.port, node['id']).values())

    # an application's fault: seen, and the GPU stays healthy
    m.inject({'gpu': 0, 'xid': 13})
    wait_for(lambda: 'XID 13' in a.log(), 15, 'the agent to see XID 13')
    assert 'not one that makes a GPU unhealthy' in a.log(), a.log()
    assert devices(a.port, node['id'])[first]['healthy']

    # fallen off the bus: unhealthy on the server, with the reason
    m.inject({'gpu': 0, 'xid': 79})
    bad = wait_for(lambda: (lambda d: d if not d['healthy'] else None)(
        devices(a.port, node['id'])[first]), 15, 'the first GPU to turn unhealthy')
    assert bad['health_reason'].startswith('XID 79: '), bad
    assert devices(a.port, node['id'])[second]['healthy']

    # two GPUs asked: only one is healthy, so it waits; one asked: the other GPU
    r = cli(a.port, 'job', 'run', '-detach',
            write_job(tmp_path, 'two', gpu_job('two', 'device "nvidia/gpu" {\n count = 2\n }')))
    assert r.returncode == 0, r.stderr
    r = cli(a.port, 'job', 'run', '-detach',
            write_job(tmp_path, 'one', gpu_job('one', 'device "nvidia/gpu" {}',
                                               command='sleep 300')))
    assert r.returncode == 0, r.stderr
    one = wait_for(lambda: [x for x in api(a.port, '/v1/job/one/allocations')
                            if x['client_status'] == 'running'], 30, 'one running')[0]
    assert [d['id'] for d in one['resources']['devices']] == [second]
    assert not api(a.port, '/v1/job/two/allocations')
    assert api(a.port, '/v1/job/two')['status'] == 'pending'

    # a double-bit ECC error on the second GPU
    m.inject({'gpu': 1, 'type': 'double_bit_ecc'})
    bad2 = wait_for(lambda: (lambda d: d if not d['healthy'] else None)(
        devices(a.port, node['id'])[second]), 15, 'the second GPU to turn unhealthy')
    assert bad2['health_reason'] == 'double-bit ECC error', bad2
    # the first stays unhealthy: health is not given back while the agent runs
    assert not devices(a.port, node['id'])[first]['healthy']
