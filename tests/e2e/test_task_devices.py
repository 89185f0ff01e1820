"""End-to-end: per-task devices.  A group of three tasks on the dev agent
(simulated GPUs): two ask one GPU each, the third none.  Each task sees only
the GPU the server recorded as its own (devices[].task), and the third sees
none: CUDA_VISIBLE_DEVICES="" and NVIDIA_VISIBLE_DEVICES=void."""
from test_control_plane import agents, cli, job_allocs, start_dev, write_job  # noqa: F401

TASK = '''
    task "{name}" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "env > $HERD_ALLOC_DIR/env-{name}.txt"]
      }}
      resources {{
        cpu = 100
        memory = 64
        {device}
      }}
    }}'''


def read_env(path):
    return dict(line.split('=', 1) for line in path.read_text().splitlines() if '=' in line)


def test_each_task_sees_only_its_own_gpus(agents, tmp_path):  # noqa: F811
    dev = start_dev(agents, tmp_path, 'h100-sxm-8x-nvlink.json')
    gpu = 'device "nvidia/gpu" { count = 1 }'
    tasks = ''.join(TASK.format(name=n, device=d) for n, d in (('a', gpu), ('b', gpu), ('c', '')))
    job = write_job(tmp_path, 'pertask',
                    f'job "pertask" {{\n  type = "batch"\n  group "g" {{{tasks}\n  }}\n}}\n')
    r = cli(dev.port, 'job', 'run', job)
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = job_allocs(dev.port, 'pertask')
    assert a['client_status'] == 'complete', a
    devs = a['resources']['devices']
    owner = {d['task']: d['id'] for d in devs}
    assert sorted(owner) == ['a', 'b'] and owner['a'] != owner['b']
    assert a['resources']['tasks']['c']['devices'] == []
    alloc_dir = dev.dir / 'data' / 'alloc' / a['id'] / 'alloc'
    for name in ('a', 'b'):
        env = read_env(alloc_dir / f'env-{name}.txt')
        assert env['CUDA_VISIBLE_DEVICES'] == owner[name], (name, env['CUDA_VISIBLE_DEVICES'])
        assert env['NVIDIA_VISIBLE_DEVICES'] == owner[name]
        assert env['HERD_GPU_IDS'] == owner[name]
    env = read_env(alloc_dir / 'env-c.txt')
    assert env['CUDA_VISIBLE_DEVICES'] == ''
    assert env['NVIDIA_VISIBLE_DEVICES'] == 'void'
