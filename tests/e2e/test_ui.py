"""End-to-end: the web UI (docs/operations.md, "Web UI").

A dev agent with eight simulated H100s, named with markup
(`-node '<script>...'`: node names are free text), serves /ui, /ui/app.js
and /ui/style.css as the source tree has them, with the UI's security
headers, and the page loads nothing but its own script and style sheet.
Then, when `node` is installed (skipped otherwise), app.js as the server
serves it is loaded under node and its pure functions are fed the agent's
real answers: a job holding GPUs shows as their holder, the node's name and
a service tag with markup stay text all the way into the DOM (a stand-in
document that refuses innerHTML).  With ACL on, the page still loads
without a token and a refused read says "this token may not read ...".

Every process is killed in teardown (the `agents` fixture); no timing
assertions: each wait polls with a generous deadline."""
import html.parser
import http.client
import json
import re
import shutil
import subprocess

import pytest

from conftest import REPO
from test_acl import call, herd, no_ambient_token, secret_of  # noqa: F401
from test_control_plane import GPUS, Agent, agents, api, cli, wait_for, write_job  # noqa: F401

UI_SRC = REPO / 'src/server/ui'
ODD_NODE = '<script>alert("node")</script>&amp;'
ODD_TAG = '<img src=x onerror=alert(1)>'
NODE = shutil.which('node')

GPU_JOB = '''
job "train" {
  type = "batch"
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["300"]
      }
      resources {
        cpu    = 100
        memory = 64
        device "nvidia/gpu" { count = 2 }
      }
    }
  }
}
'''

SERVICE_JOB = '''
job "notebook" {
  type = "service"
  group "g" {
    network {
      port "http" {}
    }
    service {
      name = "notebook"
      port = "http"
      tags = ["TAG", "team-a"]
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["300"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
'''.replace('TAG', ODD_TAG.replace('"', '\\"'))


def fetch(port, path, method='GET'):
    """(status, headers as a dict of lower-case names, body bytes), no
    redirect followed."""
    c = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
    try:
        c.request(method, path)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


class Refs(html.parser.HTMLParser):
    """Every URL a page refers to, and every script's inline text."""

    def __init__(self):
        super().__init__()
        self.urls, self.inline, self.handlers, self.styles = [], [], [], []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ('src', 'href', 'action', 'data', 'poster', 'srcset'):
                self.urls.append((tag, name, value))
            if name.startswith('on'):
                self.handlers.append((tag, name))
            if name == 'style':
                self.styles.append(tag)
        self._in_script = tag == 'script'
        if tag == 'style':
            self.styles.append('style')

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.inline.append(data)


@pytest.fixture
def dev(agents, tmp_path):  # noqa: F811
    a = Agent(tmp_path, 'dev', ['-dev', '-http-port', '0', '-node', ODD_NODE],
              gpu_file=GPUS / 'h100-sxm-8x-nvlink.json').start()
    agents.append(a)
    wait_for(lambda: [n for n in api(a.port, '/v1/nodes') if n['status'] == 'ready'], 15,
             'the dev node to be ready')
    return a


def test_ui_is_served_with_its_headers(dev):
    port = dev.port
    # the agent says where the UI is
    wait_for(lambda: f'web UI on http://127.0.0.1:{port}/ui' in dev.log(), 10,
             'the UI address in the log')

    status, hdrs, _ = fetch(port, '/')
    assert status == 302 and hdrs['location'] == '/ui'
    for path, name, ctype in (('/ui', 'index.html', 'text/html; charset=utf-8'),
                              ('/ui/app.js', 'app.js', 'text/javascript; charset=utf-8'),
                              ('/ui/style.css', 'style.css', 'text/css; charset=utf-8'),
                              ('/ui/favicon.svg', 'favicon.svg', 'image/svg+xml')):
        status, hdrs, body = fetch(port, path)
        assert status == 200, path
        assert hdrs['content-type'] == ctype
        assert hdrs['x-content-type-options'] == 'nosniff'
        assert hdrs['cache-control'] == 'no-cache'
        csp = hdrs['content-security-policy']
        assert "default-src 'self'" in csp and "script-src 'self'" in csp
        assert 'unsafe' not in csp
        assert body == (UI_SRC / name).read_bytes(), f'{path} is not {name} of the source tree'
    for path in ('/ui/nope', '/ui/index.html', '/ui/app.js/'):
        status, hdrs, body = fetch(port, path)
        assert status == 404 and json.loads(body)['error']['code'] == 'not_found', path
    status, hdrs, _ = fetch(port, '/ui', method='POST')
    assert status == 405 and hdrs['allow'] == 'GET, HEAD'


def test_page_loads_only_its_own_files(dev):
    _, _, body = fetch(dev.port, '/ui')
    p = Refs()
    p.feed(body.decode())
    assert not p.inline, 'inline script'
    assert not p.handlers, f'event handler attributes: {p.handlers}'
    assert not p.styles, f'inline style: {p.styles}'
    scripts = [v for tag, _, v in p.urls if tag == 'script']
    assert scripts == ['/ui/app.js']
    for tag, attr, url in p.urls:
        if tag == 'a':
            assert url.startswith('#/'), url   # the views are hash routes
            continue
        assert url in ('/ui/app.js', '/ui/style.css', '/ui/favicon.svg'), (tag, attr, url)
        assert fetch(dev.port, url)[0] == 200
    # nothing in the script builds markup from strings, nor keeps the token
    # anywhere but sessionStorage
    js = (UI_SRC / 'app.js').read_text()
    for bad in ('innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'eval(',
                'new Function', 'localStorage.', 'document.cookie'):
        assert bad not in js, bad
    assert 'sessionStorage.setItem' in js


NODE_SCRIPT = r'''
const fs = require('fs');
const ui = require(process.argv[2]);
const data = JSON.parse(fs.readFileSync(process.argv[3]));

/* A stand-in document: elements record their text and children, and
 * setting innerHTML or outerHTML fails the test. */
const made = [];
function element(tag) {
	const el = { tag: tag, children: [], text: null, className: '', title: '', style: {},
		appendChild(c) { this.children.push(c); return c; } };
	for (const prop of ['innerHTML', 'outerHTML'])
		Object.defineProperty(el, prop, { set() { throw new Error(prop + ' set'); } });
	Object.defineProperty(el, 'textContent', {
		set(v) { this.text = String(v); this.children = []; },
		get() { return this.text; } });
	made.push(el);
	return el;
}
const doc = {
	createElement: element,
	createTextNode: t => ({ tag: '#text', text: String(t), children: [] }),
};
function texts(n, out) {
	if (n.text !== null && n.text !== undefined)
		out.push(n.text);
	for (const c of n.children)
		texts(c, out);
	return out;
}

const groups = ui.gpuGroups(data.gpus);
const jobs = ui.jobRows(data.jobs, data.allocations);
const nodes = ui.nodeRows(data.nodes, data.gpus);
const services = ui.serviceRows(data.services);
const summary = ui.summarize(data.nodes, data.gpus, data.jobs, data.metrics);
const dom = {
	gpus: texts(ui.mount(ui.gpusView(groups), doc), []),
	nodes: texts(ui.mount(ui.nodesView(nodes), doc), []),
	services: texts(ui.mount(ui.servicesView(services), doc), []),
	jobs: texts(ui.mount(ui.jobsView(jobs), doc), []),
	summary: texts(ui.mount(ui.summaryView(summary), doc), []),
};
const tags = Array.from(new Set(made.map(e => e.tag))).sort();
const bars = made.filter(e => e.className === 'fill').map(e => e.style.width);
console.log(JSON.stringify({ groups, jobs, nodes, services, summary, dom, tags, bars,
	forbidden: ui.errorText('GPUs', 403, data.forbidden, null),
	url: ui.blockingUrl('/v1/jobs?namespace=*', 17),
	waits: Object.fromEntries(Object.entries(ui.SOURCES).map(([k, v]) =>
		[k, ui.blockingUrl(v.path, 17, v.wait)])),
	backoff: [1, 2, 3, 10].map(ui.backoffMs) }));
'''


def run_node(tmp_path, port, data):
    """app.js as the server serves it, run under node over data; its
    output parsed."""
    js = tmp_path / 'app.js'
    js.write_bytes(fetch(port, '/ui/app.js')[2])
    (tmp_path / 'data.json').write_text(json.dumps(data))
    (tmp_path / 'check.js').write_text(NODE_SCRIPT)
    r = subprocess.run([NODE, str(tmp_path / 'check.js'), str(js), str(tmp_path / 'data.json')],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.skipif(not NODE, reason='node is not installed')
def test_rows_from_real_answers(dev, tmp_path):
    port = dev.port
    for name, text in (('train', GPU_JOB), ('notebook', SERVICE_JOB)):
        r = cli(port, 'job', 'run', '-detach', write_job(tmp_path, name, text))
        assert r.returncode == 0, r.stderr
    allocs = wait_for(lambda: [a for a in api(port, '/v1/job/train/allocations')
                               if a['client_status'] == 'running'], 30, 'train to run')
    wait_for(lambda: api(port, '/v1/services?namespace=*'), 30, 'the notebook service')
    alloc = allocs[0]
    held = sorted(d['id'] for d in alloc['resources']['devices'])
    assert len(held) == 2

    data = {name: api(port, path) for name, path in (
        ('gpus', '/v1/gpus'), ('nodes', '/v1/nodes'), ('jobs', '/v1/jobs?namespace=*'),
        ('allocations', '/v1/allocations?namespace=*'), ('services', '/v1/services?namespace=*'),
        ('metrics', '/v1/metrics?format=json'))}
    data['forbidden'] = {'error': {'code': 'permission_denied', 'message': 'permission denied'}}
    out = run_node(tmp_path, port, data)

    # GPUs: one node, eight GPUs, the two of the job held by it
    assert len(out['groups']) == 1
    g = out['groups'][0]
    assert g['node_name'] == ODD_NODE and g['held'] == 2 and len(g['rows']) == 8
    for row in g['rows']:
        holders = row['holders']
        if row['id'] in held:
            assert [(h['owner'], h['alloc_short'], h['compute']) for h in holders] == \
                [('default/train', alloc['id'][:8], '100%')]
        else:
            assert holders == [], row
    assert all(len(w) and w.endswith('%') for w in out['bars'])

    # jobs: train runs one allocation holding two GPUs; the service none
    jobs = {j['id']: j for j in out['jobs']}
    assert jobs['train']['running'] == 1 and jobs['train']['gpu_devices'] == 2
    assert jobs['train']['gpus_text'] == '2'
    assert jobs['notebook']['status'] == 'running' and jobs['notebook']['gpu_devices'] == 0

    # nodes: its name as given, six of eight GPUs free
    assert [(n['name'], n['status'], n['gpus_text']) for n in out['nodes']] == \
        [(ODD_NODE, 'ready', '6 / 8')]

    # services: the tag as written
    assert [(s['name'], s['tags']) for s in out['services']] == \
        [('notebook', ODD_TAG + ', team-a')]

    # the summary bar
    s = out['summary']
    assert (s['nodes_ready'], s['nodes_total'], s['gpus_allocated'], s['gpus_total']) == \
        (1, 1, 2, 8)
    assert s['jobs_running'] == 2 and s['queue_waiting'] == 0

    # markup from the API is text in the DOM: the strings arrive whole, and
    # no element other than the views' own was made
    assert ODD_NODE in out['dom']['gpus'] and ODD_NODE in out['dom']['nodes']
    assert ODD_TAG + ', team-a' in out['dom']['services']
    assert 'default/train' in out['dom']['gpus'] and alloc['id'][:8] in out['dom']['gpus']
    assert not set(out['tags']) & {'script', 'img', 'iframe', 'object'}, out['tags']

    assert out['forbidden'] == 'this token may not read GPUs: permission denied'
    assert out['url'] == '/v1/jobs?namespace=*&index=17&wait=30s'
    # what heartbeats move (utilization, memory) is read again every 5 s at
    # most; the other lists wait for a change up to 30 s
    assert out['waits'] == {'gpus': '/v1/gpus?index=17&wait=5s',
                            'nodes': '/v1/nodes?index=17&wait=5s',
                            'jobs': '/v1/jobs?namespace=*&index=17&wait=30s',
                            'allocations': '/v1/allocations?namespace=*&index=17&wait=30s',
                            'services': '/v1/services?namespace=*&index=17&wait=30s'}
    assert out['backoff'] == [1000, 2000, 4000, 30000]


FOLLOW_SCRIPT = r"""
const ui = require(process.argv[2]);
const base = process.argv[3];
/* every URL the follower asks for, through node's own fetch */
const urls = [];
const realFetch = fetch;
globalThis.fetch = (url, opts) => { urls.push(url); return realFetch(base + url, opts); };
let answers = 0;
const f = new ui.Follower('/v1/jobs?namespace=*', 'jobs', '30s', (body, index) => {
	answers++;
	if (answers === 1) {
		console.log(JSON.stringify({ first: index }));
		return;
	}
	if (body.some(j => j.id === 'followed')) {
		f.stop();
		console.log(JSON.stringify({ urls, answers, index }));
		process.exit(0);
	}
}, text => { if (text) { console.error(text); process.exit(1); } });
f.start();
"""


@pytest.mark.skipif(not NODE, reason='node is not installed')
def test_follower_uses_blocking_queries(dev, tmp_path):
    """app.js's Follower under node against the agent: the first read
    answers at once, each next one is a blocking query with the index of
    the answer before it, and a job submitted meanwhile reaches it."""
    port = dev.port
    js = tmp_path / 'app.js'
    js.write_bytes(fetch(port, '/ui/app.js')[2])
    (tmp_path / 'follow.js').write_text(FOLLOW_SCRIPT)
    p = subprocess.Popen([NODE, str(tmp_path / 'follow.js'), str(js), f'http://127.0.0.1:{port}'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(p.stdout.readline())['first']
        assert first > 0
        job = GPU_JOB.replace('job "train"', 'job "followed"')
        r = cli(port, 'job', 'run', '-detach', write_job(tmp_path, 'followed', job))
        assert r.returncode == 0, r.stderr
        out, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == 0, err
    res = json.loads(out)
    assert res['index'] > first
    urls = res['urls']
    assert urls[0] == '/v1/jobs?namespace=*'
    # every read after the first waits for a change past the index it had
    asked = []
    for u in urls[1:]:
        m = re.fullmatch(r'/v1/jobs\?namespace=\*&index=(\d+)&wait=30s', u)
        assert m, u
        asked.append(int(m.group(1)))
    assert len(asked) >= 1 and asked[0] == first
    assert asked == sorted(asked)
    assert len(urls) == res['answers']   # one answer per read: no read failed


def test_acl_page_needs_no_token_and_reads_do(agents, tmp_path):  # noqa: F811
    cfg = tmp_path / 'server.hcl'
    cfg.write_text('bind_addr = "127.0.0.1"\nserver {\n  enabled = true\n}\n'
                   'acl {\n  enabled = true\n}\n')
    srv = Agent(tmp_path, 'server', ['-config', str(cfg), '-http-port', '0']).start()
    agents.append(srv)
    addr = f'127.0.0.1:{srv.port}'
    wait_for(lambda: call(addr, '/v1/agent/health')[0] == 200, 10, 'the server')

    # the page and its files: no token needed, they hold no data
    for path in ('/ui', '/ui/app.js', '/ui/style.css'):
        assert fetch(srv.port, path)[0] == 200, path
    # what the page reads: refused without a token, with the answer the
    # page turns into "this token may not read GPUs"
    status, body = call(addr, '/v1/gpus')
    assert status == 403 and body['error']['code'] == 'permission_denied'
    r = herd(srv.port, 'acl', 'bootstrap')
    assert r.returncode == 0, r.stderr
    mgmt = secret_of(r.stdout)
    assert call(addr, '/v1/gpus', token=mgmt) == (200, [])
    if NODE:
        out = run_node(tmp_path, srv.port, {'gpus': [], 'nodes': [], 'jobs': [],
                                            'allocations': [], 'services': [],
                                            'metrics': None, 'forbidden': body})
        assert out['forbidden'] == 'this token may not read GPUs: ' + body['error']['message']
        assert out['summary']['queue_waiting'] is None
        assert out['summary']['gpus_total'] == 0
