"""End-to-end: host volumes (client host_volume, job volume and volume_mount)
and the leader task.

A server and two clients on 127.0.0.1: `store` offers a read-write volume
`datasets` and a read-only `refs`; `plain` offers none.  Jobs with volumes
land only on `store`, a job asking for a volume nobody has stays pending
with the explanation, raw_exec tasks write through HERD_VOLUME_<NAME> and
the link in their task dir, exec tasks (as root) see the volume at its
destination, read-only where asked.  Every process is killed in teardown
(the `agents` fixture of test_control_plane)."""
import os

import pytest

from test_control_plane import (Agent, agents, api, cli, job_allocs,  # noqa: F401
                                node_name_of, wait_for, write_job)
from test_tasks import exec_usable


def server_hcl(tmp_path):
    """The default heartbeat TTL (10 s): a loaded machine must not take a
    client for down in the middle of a test."""
    p = tmp_path / 'server.hcl'
    p.write_text('server {\n  enabled = true\n}\nbind_addr = "127.0.0.1"\n')
    return str(p)


def client_hcl(tmp_path, name, volumes):
    """A client config with host volumes {name: (path, read_only)}."""
    blocks = ''.join(f'  host_volume "{v}" {{\n    path = "{p}"\n'
                     f'    read_only = {"true" if ro else "false"}\n  }}\n'
                     for v, (p, ro) in volumes.items())
    p = tmp_path / f'{name}.hcl'
    p.write_text('client {\n  enabled = true\n' + blocks + '}\n'
                 'plugin "raw_exec" {\n  config {\n    enabled = true\n  }\n}\n')
    return str(p)


@pytest.fixture
def vols(agents, tmp_path):
    """(server, {'store': node id, 'plain': node id}, datasets dir, refs dir)."""
    datasets, refs = tmp_path / 'datasets', tmp_path / 'refs'
    datasets.mkdir()
    refs.mkdir()
    (datasets / 'seed').write_text('seed data\n')
    datasets.chmod(0o777)   # exec tasks run as nobody unless they say otherwise
    srv = Agent(tmp_path, 'server', ['-config', server_hcl(tmp_path), '-http-port', '0']).start()
    agents.append(srv)
    for name, hv in (('store', {'datasets': (datasets, False), 'refs': (refs, True)}),
                     ('plain', {})):
        agents.append(Agent(tmp_path, name, ['-config', client_hcl(tmp_path, name, hv),
                                             '-servers', f'127.0.0.1:{srv.port}',
                                             '-node', name, '-http-port', '0']).start())
    nodes = wait_for(lambda: (lambda ns: len(ns) == 2 and ns)(
        {n['name']: n['id'] for n in api(srv.port, '/v1/nodes') if n['status'] == 'ready'}),
        20, 'two ready nodes')
    return srv, nodes, datasets, refs


def finished(port, job, n=1, timeout=40):
    return wait_for(lambda: (lambda a: len(a) >= n and a)(
        [a for a in job_allocs(port, job) if a['client_status'] in ('complete', 'failed')]),
        timeout, f'{job} to finish')


def test_nodes_report_their_host_volumes(vols):
    srv, nodes, datasets, refs = vols
    store = api(srv.port, f'/v1/node/{nodes["store"]}')
    assert store['host_volumes'] == {'datasets': {'path': str(datasets), 'read_only': False},
                                     'refs': {'path': str(refs), 'read_only': True}}
    assert api(srv.port, f'/v1/node/{nodes["plain"]}')['host_volumes'] == {}
    r = cli(srv.port, 'node', 'status', '-verbose', nodes['store'])
    assert r.returncode == 0, r.stderr
    host = r.stdout.split('Host Volumes\n', 1)[1]
    assert 'datasets' in host and str(datasets) in host and 'read-write' in host
    assert 'refs' in host and 'read-only' in host


def test_raw_exec_job_lands_on_the_volume_and_writes_through_it(vols, tmp_path):
    srv, nodes, datasets, _ = vols
    job = write_job(tmp_path, 'writer', '''
job "writer" {
  type = "batch"
  group "g" {
    count = 4
    volume "data" {
      type   = "host"
      source = "datasets"
    }
    task "t" {
      driver = "raw_exec"
      volume_mount {
        volume      = "data"
        destination = "local/data"
      }
      config {
        command = "/bin/sh"
        args = ["-c", "echo $HERD_ALLOC_INDEX > $HERD_VOLUME_DATA/out-$HERD_ALLOC_INDEX && cat local/data/seed"]
      }
      resources {
        cpu    = 10
        memory = 16
      }
    }
  }
}
''')
    r = cli(srv.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr
    done = finished(srv.port, 'writer', 4)
    assert {a['client_status'] for a in done} == {'complete'}, done
    assert {node_name_of(srv.port, a) for a in done} == {'store'}
    for i in range(4):
        assert (datasets / f'out-{i}').read_text() == f'{i}\n'
    # the relative destination is a link in the task dir to the host path
    link = tmp_path / 'store' / 'data' / 'alloc' / done[0]['id'] / 't' / 'local' / 'data'
    assert os.readlink(link) == str(datasets)
    r = cli(srv.port, 'alloc', 'logs', done[0]['id'][:8])
    assert r.stdout == 'seed data\n', r.stdout + r.stderr


def test_missing_volume_stays_pending_with_the_explanation(vols, tmp_path):
    srv, _, _, _ = vols
    job = write_job(tmp_path, 'scratch', '''
job "scratch" {
  group "g" {
    volume "s" {
      source = "scratch"
    }
    volume "r" {
      source = "refs"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args = ["300"]
      }
    }
  }
}
''')
    r = cli(srv.port, 'job', 'run', job)
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'stays pending' in r.stdout
    assert 'missing host volume "scratch": 2 nodes' in r.stdout, r.stdout
    r = cli(srv.port, 'job', 'status', 'scratch')
    assert 'missing host volume "scratch": 2 nodes' in r.stdout, r.stdout
    assert not [a for a in job_allocs(srv.port, 'scratch') if a['desired_status'] == 'run']

    # a writable "refs" is asked: plain lacks it, store has it read-only
    job = write_job(tmp_path, 'refs-rw', '''
job "refs-rw" {
  group "g" {
    volume "r" {
      source = "refs"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args = ["300"]
      }
    }
  }
}
''')
    r = cli(srv.port, 'job', 'run', job)
    assert r.returncode == 1, r.stdout + r.stderr
    assert 'missing host volume "refs": 1 node' in r.stdout, r.stdout
    assert 'host volume "refs" is read-only (a writable one is asked): 1 node' in r.stdout


def test_exec_task_sees_the_volume_read_only_where_asked(vols, tmp_path):
    why = exec_usable()
    if why:
        pytest.skip(why)
    srv, _, datasets, refs = vols
    (refs / 'ref.txt').write_text('reference\n')
    job = write_job(tmp_path, 'iso', '''
job "iso" {
  type = "batch"
  group "g" {
    restart { attempts = 0 }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    volume "data" {
      source = "datasets"
    }
    volume "ro" {
      source    = "datasets"
      read_only = true
    }
    volume "refs" {
      source    = "refs"
      read_only = true
    }
    task "t" {
      driver = "exec"
      user   = "root"
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
      volume_mount {
        volume      = "ro"
        destination = "/mnt/ro"
      }
      volume_mount {
        volume      = "refs"
        destination = "/refs"
      }
      config {
        command = "/bin/sh"
        args = ["-c", "cat /data/seed /refs/ref.txt && echo $HERD_VOLUME_DATA && echo written > /data/from-exec && if echo x > /mnt/ro/nope; then exit 3; fi; if echo x > /refs/nope; then exit 4; fi; cat /mnt/ro/from-exec"]
      }
    }
  }
}
''')
    r = cli(srv.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = finished(srv.port, 'iso')
    logs = cli(srv.port, 'alloc', 'logs', a['id'][:8])
    errs = cli(srv.port, 'alloc', 'logs', '-stderr', a['id'][:8])
    assert a['client_status'] == 'complete', (a['task_states'], logs.stdout, errs.stdout)
    assert logs.stdout == 'seed data\nreference\n/data\nwritten\n', logs.stdout
    assert 'Read-only file system' in errs.stdout, errs.stdout
    assert (datasets / 'from-exec').read_text() == 'written\n'
    assert not (datasets / 'nope').exists() and not (refs / 'nope').exists()


LEADER_JOB = '''
job "{name}" {{
  type = "batch"
  group "g" {{
    restart {{ attempts = 0 }}
    reschedule {{
      attempts  = 0
      unlimited = false
    }}
    task "long" {{
      driver       = "raw_exec"
      kill_timeout = "20s"
      config {{
        command = "/bin/sh"
        args = ["-c", "trap 'echo got TERM; exit 0' TERM; sleep 300 & wait"]
      }}
      kill_signal = "SIGTERM"
    }}
    task "lead" {{
      driver = "raw_exec"
      leader = true
      config {{
        command = "/bin/sh"
        args = ["-c", "sleep 1; exit {code}"]
      }}
    }}
  }}
}}
'''


@pytest.mark.parametrize('code', [0, 3])
def test_leader_ends_the_allocation(vols, tmp_path, code):
    srv, _, _, _ = vols
    name = f'lead{code}'
    r = cli(srv.port, 'job', 'run', '-detach', write_job(tmp_path, name,
                                                        LEADER_JOB.format(name=name, code=code)))
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = finished(srv.port, name, timeout=60)
    assert a['client_status'] == ('complete' if code == 0 else 'failed'), a['task_states']
    long, lead = a['task_states']['long'], a['task_states']['lead']
    assert lead['state'] == 'dead' and lead['failed'] == (code != 0), lead
    assert long['state'] == 'dead' and not long['failed'], long
    types = [e['type'] for e in long['events']]
    assert 'Leader Task Dead' in types and 'Killing' in types, types
    # the kill_signal reached it: it ended on its own trap, not by SIGKILL
    r = cli(srv.port, 'alloc', 'logs', a['id'][:8], 'long')
    assert r.stdout == 'got TERM\n', r.stdout + r.stderr


def test_agent_refuses_a_host_volume_path_that_does_not_exist(agents, tmp_path):
    missing = tmp_path / 'not-there'
    bad = Agent(tmp_path, 'bad', ['-config', client_hcl(tmp_path, 'bad', {'sets': (missing, False)}),
                                  '-servers', '127.0.0.1:1', '-node', 'bad'])
    bad.start()
    agents.append(bad)
    assert bad.proc.wait(timeout=30) != 0
    assert f'client.host_volume "sets": path {missing}: No such file or directory' in bad.log()


def test_leader_stops_a_task_waiting_to_restart(vols, tmp_path):
    """The other task failed at once and waits 30 s for its restart when the
    leader ends: it is stopped in its wait, never started again."""
    srv, _, _, _ = vols
    job = write_job(tmp_path, 'leadwait', '''
job "leadwait" {
  type = "batch"
  group "g" {
    restart {
      attempts = 1
      delay    = "30s"
      interval = "10m"
      mode     = "fail"
    }
    task "flaky" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "exit 1"]
      }
    }
    task "lead" {
      driver = "raw_exec"
      leader = true
      config {
        command = "/bin/sh"
        args = ["-c", "sleep 2"]
      }
    }
  }
}
''')
    r = cli(srv.port, 'job', 'run', '-detach', job)
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = finished(srv.port, 'leadwait', timeout=90)
    assert a['client_status'] == 'complete', a['task_states']
    flaky = a['task_states']['flaky']
    types = [e['type'] for e in flaky['events']]
    assert types.count('Started') <= 1 and 'Leader Task Dead' in types, types
    assert flaky['state'] == 'dead' and not flaky['failed'], flaky
