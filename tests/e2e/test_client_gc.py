"""End-to-end: the client garbage-collects terminal allocations' directories
(client { gc_max_allocs }): the oldest terminal ones go, a running one stays,
`herd alloc logs` of a collected one says so; a silent stream has no log
file and reads as empty.

Real herd agents on 127.0.0.1 (the `agents` fixture of test_control_plane
kills them in teardown)."""
import os

from test_control_plane import agents, cli, job_allocs, wait_for, write_job  # noqa: F401
from test_tasks import alloc_dir, start_dev


def batch_job(name, command):
    return f'''
job "{name}" {{
  type = "batch"
  group "g" {{
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "{command}"]
      }}
    }}
  }}
}}
'''


def terminal(port, job):
    allocs = [a for a in job_allocs(port, job) if a['client_status'] in ('complete', 'failed')]
    return allocs[0] if allocs else None


def test_gc_keeps_the_newest_terminal_allocations_and_running_ones(agents, tmp_path):
    cfg = tmp_path / 'gc.hcl'
    cfg.write_text('client {\n  gc_max_allocs = 2\n  gc_interval = "1h"\n}\n')
    dev = start_dev(agents, tmp_path, extra=('-config', str(cfg)))

    # A running allocation: older than every terminal one, never collected.
    assert cli(dev.port, 'job', 'run', '-detach',
               write_job(tmp_path, 'keep', batch_job('keep', 'echo kept; sleep 120'))
               ).returncode == 0
    keep = wait_for(lambda: [a for a in job_allocs(dev.port, 'keep')
                             if a['client_status'] == 'running'], 20, 'keep to run')[0]

    done = []
    for i in range(5):
        name = f'gc{i}'
        assert cli(dev.port, 'job', 'run', '-detach',
                   write_job(tmp_path, name, batch_job(name, f'echo out-{i}'))).returncode == 0
        done.append(wait_for(lambda: terminal(dev.port, name), 20, f'{name} to end'))
    assert all(a['client_status'] == 'complete' for a in done), done

    # The client frees a runner once the server took its last status, then
    # queues the dir: the three oldest go, the newest two stay.
    for a in done[:3]:
        wait_for(lambda: not alloc_dir(dev, a['id']).exists(), 20,
                 f'the dir of {a["id"][:8]} to be collected')
    for a in done[3:]:
        assert alloc_dir(dev, a['id']).exists(), a['id']
    secrets = alloc_dir(dev, keep['id']) / 't' / 'secrets'
    assert secrets.is_dir()
    r = cli(dev.port, 'alloc', 'logs', keep['id'][:8], 't')
    assert r.returncode == 0 and r.stdout == 'kept\n', r.stdout + r.stderr

    # A collected allocation's logs: a clear error, not an empty answer.
    r = cli(dev.port, 'alloc', 'logs', done[0]['id'][:8], 't')
    assert r.returncode != 0
    assert 'garbage-collected' in r.stderr, r.stderr

    # A kept one reads; it never wrote to stderr: no file, read as empty.
    last = done[-1]
    r = cli(dev.port, 'alloc', 'logs', last['id'][:8], 't')
    assert r.returncode == 0 and r.stdout == 'out-4\n', r.stdout + r.stderr
    logs = alloc_dir(dev, last['id']) / 'alloc' / 'logs'
    assert sorted(os.listdir(logs)) == ['t.stdout.0'], os.listdir(logs)
    r = cli(dev.port, 'alloc', 'logs', '-stderr', last['id'][:8], 't')
    assert r.returncode == 0 and r.stdout == '', r.stdout + r.stderr

    # Collected dirs were scrubbed into the pool and later ones reuse
    # them: nothing of an earlier allocation is in a later one's tree.
    for a in done[3:]:
        tree = alloc_dir(dev, a['id'])
        files = sorted(str(p.relative_to(tree)) for p in tree.rglob('*') if p.is_file())
        assert files == ['alloc/logs/t.stdout.0', 't/t.exit'], files


def test_gc_by_disk_usage_collects_every_terminal_allocation(agents, tmp_path):
    # gc_disk_usage_threshold = 1: any real filesystem is fuller than 1%,
    # so each gc_interval collects every terminal allocation.
    cfg = tmp_path / 'gc.hcl'
    cfg.write_text('client {\n  gc_max_allocs = 100\n  gc_interval = "1s"\n'
                   '  gc_disk_usage_threshold = 1\n}\n')
    dev = start_dev(agents, tmp_path, extra=('-config', str(cfg)))
    assert cli(dev.port, 'job', 'run', '-detach',
               write_job(tmp_path, 'one', batch_job('one', 'echo one'))).returncode == 0
    a = wait_for(lambda: terminal(dev.port, 'one'), 20, 'one to end')
    # The client frees a runner (and queues its dir) when its watch of the
    # node's allocations next answers: another job makes it answer.
    assert cli(dev.port, 'job', 'run', '-detach',
               write_job(tmp_path, 'two', batch_job('two', 'echo two'))).returncode == 0
    wait_for(lambda: not alloc_dir(dev, a['id']).exists(), 20, 'its dir to be collected')
