"""`herd gpu list` against the simulated NVML (src/gpu/sim, docs/gpu-sim.md).

HERD_NVML_SIM_LIB names the simulator; the default is the one next to the
binary's build (HERD_BUILD, else the folder HERD_BIN was built in, else build/)."""
import json
import os
import pathlib

import pytest

from conftest import BUILD, REPO

SIM_LIB = pathlib.Path(os.environ.get('HERD_NVML_SIM_LIB',
                                      BUILD / 'src/gpu/sim/libherd-nvml-sim.so'))
EXAMPLES = REPO / 'examples/gpus'


@pytest.fixture
def sim(herd, tmp_path):
    """Runs herd against a description: an example's name or a dict."""
    if not SIM_LIB.exists():
        pytest.fail(f'simulated NVML not found at {SIM_LIB}: build first')

    def run(machine, *args):
        if isinstance(machine, dict):
            path = tmp_path / 'machine.json'
            path.write_text(json.dumps(machine))
        else:
            path = EXAMPLES / machine
        return herd('gpu', 'list', *args,
                    env={'HERD_NVML_LIBRARY': str(SIM_LIB), 'HERD_NVML_SIM': str(path)})
    return run


def listing(r):
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_h100_json(sim):
    out = listing(sim('h100-sxm-8x-nvlink.json', '-json'))
    assert out['nvml']['loaded'] and out['nvml']['simulated']
    assert out['nvml']['driver_version'] == '550.54.15'
    assert out['nvml']['cuda_version'] == '12.4'
    devs = out['devices']
    assert len(devs) == 8
    assert [d['index'] for d in devs] == list(range(8))
    assert len({d['uuid'] for d in devs}) == 8
    d = devs[1]
    assert d['model'] == 'NVIDIA H100 80GB HBM3'
    assert d['memory_mib'] == 81559
    assert d['health'] == 'healthy'
    assert d['simulated'] is True
    assert d['attributes']['compute_capability'] == '9.0'
    assert d['attributes']['simulated'] == 'true'
    assert d['stats']['gpu_util'] == 97
    assert d['stats']['processes'] == [{'pid': 41001, 'memory_mib': 70312}]
    assert 'topology' not in out


def test_h100_verbose_topology(sim):
    out = listing(sim('h100-sxm-8x-nvlink.json', '-json', '-verbose'))
    links = out['topology']['links']
    assert len(links) == 8
    for i, row in enumerate(links):
        assert row == ['X' if i == j else 'NV18' for j in range(8)]
    text = sim('h100-sxm-8x-nvlink.json', '-verbose')
    assert text.returncode == 0
    assert 'Topology' in text.stdout and 'NV18' in text.stdout
    assert 'cpu_affinity' in text.stdout


def test_mig_rows(sim):
    r = sim('a100-80gb-mig-7x1g.json')
    assert r.returncode == 0
    rows = [l for l in r.stdout.splitlines() if l.startswith(tuple('0123456789'))]
    assert len(rows) == 7
    for row in rows:
        assert row.split()[1].startswith('MIG-')
        assert '1g.10gb' in row and 'healthy' in row
    out = listing(sim('a100-80gb-mig-7x1g.json', '-json'))
    parents = {d['parent_uuid'] for d in out['devices']}
    assert parents == {'GPU-9f0a8e2d-1c3b-4d5e-8f7a-6b5c4d3e2f10'}
    assert all(d['memory_mib'] == 9728 for d in out['devices'])


def test_t4_and_wsl(sim):
    out = listing(sim('t4-2x.json', '-json'))
    assert [d['model'] for d in out['devices']] == ['Tesla T4', 'Tesla T4']
    out = listing(sim('wsl2-rtx3060-laptop.json', '-json'))
    assert out['nvml']['wsl'] is True
    (d,) = out['devices']
    assert d['wsl'] is True
    assert d['memory_mib'] == 6144
    assert 'numa_node' not in d['attributes']  # WSL2 answers NOT_SUPPORTED


def test_lost_gpu_is_left_out_with_a_warning(sim):
    r = sim({'gpus': [{'uuid': 'GPU-a'}, {'uuid': 'GPU-b', 'lost': True}]}, '-json')
    out = listing(r)
    assert [d['uuid'] for d in out['devices']] == ['GPU-a']
    assert 'fallen off the bus' in r.stderr


def test_no_driver_is_one_line_and_exit_0(herd):
    r = herd('gpu', 'list', env={'HERD_NVML_LIBRARY': '/nonexistent/libnvidia-ml.so.1'})
    assert r.returncode == 0
    assert r.stdout.count('\n') == 1
    assert r.stdout.startswith('no GPUs: ')
    assert '/nonexistent/libnvidia-ml.so.1' in r.stdout
    r = herd('gpu', 'list', '-json', env={'HERD_NVML_LIBRARY': '/nonexistent/x.so'})
    assert r.returncode == 0
    out = json.loads(r.stdout)
    assert out['devices'] == [] and out['nvml']['loaded'] is False


def test_init_failure_is_not_a_failure(sim):
    r = sim({'fail': {'nvmlInit_v2': 'DRIVER_NOT_LOADED'}, 'gpus': [{}]})
    assert r.returncode == 0
    assert r.stdout.startswith('no GPUs: ') and 'Driver Not Loaded' in r.stdout


def test_usage_errors(herd):
    r = herd('gpu', 'list', 'extra')
    assert r.returncode == 2
    assert r.stderr.count('\n') == 1
    r = herd('gpu', 'frob')
    assert r.returncode == 2
