"""End-to-end: GET /v1/metrics (docs/operations.md, "Metrics").

A dev agent with eight simulated H100s, GPU 1 shared by time slices: a job
that takes a whole GPU and one that takes a quarter of the shared one.  The
scrape must parse under a strict reader of the Prometheus text format
(0.0.4), name each job's namespace, job, allocation and share in its
holder series, count the nodes and GPUs GET /v1/nodes and GET /v1/gpus
list, carry what the heartbeats measured and nothing for what they did not
(MIG instances have no utilization), and say in ?format=json what it says
in text.  With ACL on, no token gets 403 and the namespace families show
only the namespaces a token may read."""
import json
import math
import re
import time
import urllib.error
import urllib.request

from test_acl import call, herd, no_ambient_token, secret_of  # noqa: F401
from test_control_plane import GPUS, Agent, agents, api, cli, wait_for, write_job  # noqa: F401
from test_sharing import start as start_dev

TEXT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'
NAME = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*')
LABEL = re.compile(r'[a-zA-Z_][a-zA-Z0-9_]*')
NUMBER = re.compile(r'[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|Inf)|NaN')
# what moves between two scrapes of an idle farm
VOLATILE = {'process_cpu_seconds_total', 'process_resident_memory_bytes',
            'process_virtual_memory_bytes', 'process_open_fds', 'herd_gpu_seconds_total',
            'herd_node_last_heartbeat_timestamp_seconds', 'herd_store_index'}
# a node class with every character a label value must escape
ODD_CLASS = 'a\\b "q"\nz,}'
MIB = 1 << 20


def unescape(s, quote):
    """The text format's escapes: \\\\ and \\n, and \\" in label values."""
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == '\\':
            nxt = s[i + 1]
            assert nxt in ('\\n"' if quote else '\\n'), f'bad escape \\{nxt} in {s!r}'
            out.append({'\\': '\\', 'n': '\n', '"': '"'}[nxt])
            i += 2
            continue
        assert c != '\n'
        assert not (quote and c == '"'), f'unescaped quote in {s!r}'
        out.append(c)
        i += 1
    return ''.join(out)


def parse_labels(s, i):
    """Labels from s[i] == '{' to its '}': (dict, the labels as written, index after)."""
    assert s[i] == '{'
    start, i, labels = i, i + 1, {}
    while s[i] != '}':
        m = LABEL.match(s, i)
        assert m, f'bad label name at {s[i:]!r}'
        name, i = m.group(), m.end()
        assert not name.startswith('__') and name not in labels, name
        assert s[i:i + 2] == '="', s[i:]
        i += 2
        j = i
        while s[j] != '"':
            j += 2 if s[j] == '\\' else 1
        labels[name] = unescape(s[i:j], True)
        i = j + 1
        if s[i] == ',':
            i += 1
            assert s[i] != '}', 'trailing comma'
        else:
            assert s[i] == '}', s[i:]
    return labels, s[start:i + 1], i + 1


def parse(text):
    """A strict reader of the text format as herd writes it: every family
    has one HELP then one TYPE line before its samples; families come in
    name order, and samples in the order of their labels as written; every
    other line is `name{labels} value`, the name that of the family.
    Returns {name: {"type", "help", "samples": [(labels, value)]}}."""
    assert text.endswith('\n')
    fams, cur = {}, None
    for line in text[:-1].split('\n'):
        if line.startswith('# HELP '):
            name, _, help_ = line[7:].partition(' ')
            assert NAME.fullmatch(name) and name not in fams, line
            fams[name] = {'help': unescape(help_, False), 'type': None, 'samples': [], 'keys': []}
            cur = name
        elif line.startswith('# TYPE '):
            name, typ = line[7:].split(' ')
            assert name == cur and fams[name]['type'] is None, line
            assert typ in ('gauge', 'counter'), line
            assert not (typ == 'counter') or name.endswith('_total'), line
            fams[name]['type'] = typ
        else:
            assert not line.startswith('#'), line
            m = NAME.match(line)
            assert m and m.group() == cur and fams[cur]['type'], line
            i = m.end()
            labels, key = {}, ''
            if line[i] == '{':
                labels, key, i = parse_labels(line, i)
            assert line[i] == ' ', line
            value = line[i + 1:]
            assert NUMBER.fullmatch(value), line
            fams[cur]['samples'].append((labels, float(value)))
            fams[cur]['keys'].append(key)
    names = list(fams)
    assert names == sorted(names), 'families out of order'
    for name, f in fams.items():
        assert f['type'], f'{name} has no TYPE'
        assert f['keys'] == sorted(f['keys']), f'samples of {name} out of order'
        assert len(set(f['keys'])) == len(f['keys']), f'{name} names a series twice'
        del f['keys']
    return fams


def scrape(port, query='', token=None):
    req = urllib.request.Request(f'http://127.0.0.1:{port}/v1/metrics{query}')
    if token:
        req.add_header('X-Herd-Token', token)
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status, r.headers, r.read().decode()


def samples(fams, name, **want):
    return [(l, v) for l, v in fams[name]['samples']
            if all(l.get(k) == v2 for k, v2 in want.items())]


def value(fams, name, **want):
    (one,) = samples(fams, name, **want)
    return one[1]


QUOTA = '''
name = "q"
limit {
  region = "global"
  region_limit {
    device "nvidia/gpu" { count = 4 }
  }
}
'''

SHARED_CONFIG = f'''
client {{
  node_class = {json.dumps(ODD_CLASS)}
}}
gpu {{
  device "1" {{
    sharing  = "timeslice"
    replicas = 4
  }}
}}
'''


def job_text(job_id, block):
    return f'''
job "{job_id}" {{
  type = "batch"
  group "g" {{
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", "sleep 120"]
      }}
      resources {{
        cpu = 100
        memory = 64
        {block}
      }}
    }}
  }}
}}
'''


def run_running(a, tmp_path, job_id, block):
    r = cli(a.port, 'job', 'run', '-detach', write_job(tmp_path, job_id, job_text(job_id, block)))
    assert r.returncode == 0, r.stderr
    return wait_for(lambda: [x for x in api(a.port, f'/v1/job/{job_id}/allocations')
                             if x['client_status'] == 'running'], 30, f'{job_id} running')[0]


def test_metrics_show_every_gpu_who_holds_it_and_how_busy(agents, tmp_path):  # noqa: F811
    a = start_dev(agents, tmp_path, 'h100-sxm-8x-nvlink.json', SHARED_CONFIG)
    qf = tmp_path / 'quota.hcl'
    qf.write_text(QUOTA)
    for args in (('quota', 'apply', str(qf)), ('namespace', 'apply', 'default', '-quota', 'q')):
        r = cli(a.port, *args)
        assert r.returncode == 0, r.stderr
    # the quarter first: a whole GPU must not take the only shared one
    quarter = run_running(a, tmp_path, 'quarter',
                          'device "nvidia/gpu" {\n compute = 25\n memory = "2 GiB"\n }')
    whole = run_running(a, tmp_path, 'whole', 'device "nvidia/gpu" { count = 1 }')

    status, headers, text = scrape(a.port)
    assert status == 200
    assert headers['Content-Type'] == TEXT_TYPE
    assert headers['X-Herd-Index']
    fams = parse(text)
    gpus, nodes = api(a.port, '/v1/gpus'), api(a.port, '/v1/nodes')
    [node] = nodes

    # counts agree with the API: every GPU once, every node once
    assert len(fams['herd_gpu_info']['samples']) == len(gpus) == 8
    assert ({(l['node_id'], l['device_id']) for l, _ in fams['herd_gpu_info']['samples']} ==
            {(g['node_id'], g['device']['id']) for g in gpus})
    assert sum(v for _, v in fams['herd_nodes']['samples']) == len(nodes)
    assert value(fams, 'herd_nodes', status='ready', eligibility='eligible') == 1
    assert value(fams, 'herd_nodes', status='down', eligibility='eligible') == 0
    for g in gpus:
        at = dict(node_id=g['node_id'], device_id=g['device']['id'])
        assert value(fams, 'herd_gpu_compute_allocated_ratio', **at) == \
            g['compute_used_milli'] / 1000
        assert value(fams, 'herd_gpu_memory_allocated_bytes', **at) == g['memory_used_mib'] * MIB
        assert value(fams, 'herd_gpu_tenants', **at) == g['tenants']
        assert value(fams, 'herd_gpu_memory_total_bytes', **at) == g['device']['memory_mib'] * MIB
        assert value(fams, 'herd_gpu_healthy', **at) == 1
        (info,) = samples(fams, 'herd_gpu_info', **at)
        assert info[0]['model'] == 'NVIDIA H100 80GB HBM3' and info[0]['node_name'] == node['name']
        assert info[0]['sharing'] == g['sharing'] and info[0]['mig_profile'] == ''

    # who holds what: each job's namespace, job, allocation, group and share
    holders = fams['herd_gpu_holder_compute_ratio']['samples']
    assert len(holders) == 2, holders
    for alloc, share in ((whole, 1.0), (quarter, 0.25)):
        dev = alloc['resources']['devices'][0]['id']
        (h,) = [(l, v) for l, v in holders if l['alloc_id'] == alloc['id']]
        assert h[0] == {'node_id': node['id'], 'node_name': node['name'], 'device_id': dev,
                        'namespace': 'default', 'job_id': alloc['job_id'],
                        'alloc_id': alloc['id'], 'task_group': 'g'}, h
        assert h[1] == share
    qdev = quarter['resources']['devices'][0]['id']
    assert value(fams, 'herd_gpu_holder_memory_bytes', alloc_id=quarter['id']) == 2048 * MIB
    assert value(fams, 'herd_gpu_compute_allocated_ratio', device_id=qdev) == 0.25
    (qinfo,) = samples(fams, 'herd_gpu_info', device_id=qdev)
    assert qinfo[0]['sharing'] == 'timeslice'

    # how busy: what the simulated NVML says of each GPU (examples/gpus)
    sim = json.loads((GPUS / 'h100-sxm-8x-nvlink.json').read_text())['gpus']
    by_uuid = {g['uuid']: g for g in sim}
    for l, v in fams['herd_gpu_utilization_ratio']['samples']:
        assert v == by_uuid[l['device_id']]['utilization_gpu'] / 100
    for l, v in fams['herd_gpu_memory_used_bytes']['samples']:
        assert v == by_uuid[l['device_id']]['memory_used_mib'] * MIB
    assert len(fams['herd_gpu_utilization_ratio']['samples']) == 8
    assert value(fams, 'herd_gpu_utilization_ratio', device_id=sim[1]['uuid']) == 0.97

    # the node, its odd class escaped and read back as it was configured
    (ninfo,) = fams['herd_node_info']['samples']
    assert ninfo[0]['node_class'] == ODD_CLASS and ninfo[0]['status'] == 'ready'
    assert ninfo[0]['drain'] == 'false' and ninfo[0]['node_id'] == node['id']
    assert '\\"q\\"\\nz,}' in text
    hb = value(fams, 'herd_node_last_heartbeat_timestamp_seconds', node_id=node['id'])
    assert abs(hb - time.time()) < 60

    # jobs, allocations, the server
    assert value(fams, 'herd_jobs', namespace='default', type='batch', status='running') == 2
    assert value(fams, 'herd_allocations', namespace='default', client_status='running') == 2
    assert {l['state'] for l, _ in fams['herd_evaluations']['samples']} == \
        {'ready', 'delayed', 'blocked', 'queued', 'in_progress'}
    assert value(fams, 'herd_build_info')
    assert fams['herd_build_info']['samples'][0][0]['version']
    assert value(fams, 'herd_store_index') >= 1
    assert value(fams, 'process_resident_memory_bytes') > 1 << 20
    assert abs(value(fams, 'process_start_time_seconds') - time.time()) < 600
    assert fams['process_cpu_seconds_total']['type'] == 'counter'

    # the quota: its limit and what the two jobs hold of it
    at = dict(namespace='default', quota='q', resource='nvidia/gpu')
    assert value(fams, 'herd_quota_gpu_limit', **at) == 4
    assert value(fams, 'herd_quota_gpu_used', **at) == 1.25
    assert value(fams, 'herd_quota_gpu_borrowed', namespace='default', quota='q') == 0

    # GPU time: what herd usage says, between two scrapes, and never less
    before = value(fams, 'herd_gpu_seconds_total', namespace='default')
    usage = api(a.port, '/v1/usage')
    (ns,) = [n for n in usage['namespaces'] if n['namespace'] == 'default']
    after = value(parse(scrape(a.port)[2]), 'herd_gpu_seconds_total', namespace='default')
    assert 0 < before <= ns['gpu_hours'] * 3600 + 1e-6 <= after + 2e-6, (before, ns, after)

    # the JSON form says what the text says
    status, headers, body = scrape(a.port, '?format=json')
    assert status == 200 and headers['Content-Type'] == 'application/json'
    text_fams = parse(scrape(a.port)[2])
    js = json.loads(body)['metrics']
    assert [m['name'] for m in js] == list(text_fams)
    for m in js:
        f = text_fams[m['name']]
        assert (m['type'], m['help']) == (f['type'], f['help']), m['name']
        assert [s['labels'] for s in m['samples']] == [l for l, _ in f['samples']], m['name']
        if m['name'] not in VOLATILE:
            assert [s['value'] for s in m['samples']] == [v for _, v in f['samples']], m['name']

    # a format it does not know
    try:
        scrape(a.port, '?format=xml')
        raise AssertionError('format=xml answered')
    except urllib.error.HTTPError as e:
        assert e.code == 400
        assert json.loads(e.read())['error']['code'] == 'invalid_argument'


def test_mig_instances_have_no_utilization_not_zero(agents, tmp_path):  # noqa: F811
    a = start_dev(agents, tmp_path, 'a100-80gb-mig-7x1g.json')
    fams = parse(scrape(a.port)[2])
    infos = fams['herd_gpu_info']['samples']
    assert len(infos) == len(api(a.port, '/v1/gpus')) == 7
    assert {l['mig_profile'] for l, _ in infos} == {'1g.10gb'}
    assert {l['parent_id'] for l, _ in infos} == {'GPU-9f0a8e2d-1c3b-4d5e-8f7a-6b5c4d3e2f10'}
    # NVML has no utilization per MIG instance: no sample, not a 0
    assert fams['herd_gpu_utilization_ratio']['samples'] == []
    # memory is per instance: every instance has its sample
    assert len(fams['herd_gpu_memory_used_bytes']['samples']) == 7


def test_metrics_with_acl(agents, tmp_path):  # noqa: F811
    srv_cfg = tmp_path / 'server.hcl'
    srv_cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n'
                       'acl {\n  enabled = true\n}\n')
    srv = Agent(tmp_path, 'server', ['-config', str(srv_cfg), '-http-port', '0']).start()
    agents.append(srv)
    port, addr = srv.port, f'127.0.0.1:{srv.port}'
    wait_for(lambda: call(addr, '/v1/agent/health')[0] == 200, 10, 'the server')

    # no token: 403, as for GET /v1/gpus
    status, body = call(addr, '/v1/metrics')
    assert status == 403 and body['error']['code'] == 'permission_denied', body
    assert call(addr, '/v1/metrics?format=json')[0] == 403

    r = herd(port, 'acl', 'bootstrap')
    assert r.returncode == 0, r.stderr
    mgmt = secret_of(r.stdout)
    tokens = {}
    for name, text in (('scraper', 'node {\n  policy = "read"\n}\n'),
                       ('team', 'namespace "default" {\n  policy = "submit"\n}\n')):
        f = tmp_path / f'{name}.hcl'
        f.write_text(text)
        assert herd(port, 'acl', 'policy', 'apply', name, str(f), token=mgmt).returncode == 0
        r = herd(port, 'acl', 'token', 'create', '-name', name, '-policy', name, token=mgmt)
        assert r.returncode == 0, r.stderr
        tokens[name] = secret_of(r.stdout)
    # a job in default (no node: it waits)
    r = herd(port, 'job', 'run', '-detach', write_job(tmp_path, 'waits', job_text('waits', '')),
             token=mgmt)
    assert r.returncode == 0, r.stderr

    # a namespace token without node read: 403
    assert call(addr, '/v1/metrics', token=tokens['team'])[0] == 403
    # node read: the farm, but no namespace it may not read
    status, headers, text = scrape(port, token=tokens['scraper'])
    assert status == 200 and headers['Content-Type'] == TEXT_TYPE
    fams = parse(text)
    assert fams['herd_jobs']['samples'] == []
    assert 'herd_nodes' in fams and 'herd_build_info' in fams
    # management: every namespace
    fams = parse(scrape(port, token=mgmt)[2])
    wait_for(lambda: samples(parse(scrape(port, token=mgmt)[2]), 'herd_jobs',
                             namespace='default'), 10, 'the job counted')
    fams = parse(scrape(port, token=mgmt)[2])
    assert sum(v for _, v in samples(fams, 'herd_jobs', namespace='default')) == 1
    assert not math.isnan(value(fams, 'herd_store_index'))
