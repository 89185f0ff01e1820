"""End-to-end: `herd alloc fs` and the client's file API.

A task writes text and binary files (one of 3 MiB) in its local/ dir and in
alloc/data, a secret in its secrets/ dir, and symlinks: one to /etc/passwd,
one that stays inside the allocation's dir, one into secrets/.  Through
GET /v1/client/fs/{ls,stat,cat,readat}/:alloc and the CLI: listings, stats,
byte-identical reads, offsets and limits; `..`, the symlinks out and the
secrets refused; an unknown allocation 404.  A dev agent, then a server
with a separate client agent and ACL on (no token 403, a token of another
namespace 404 as for logs, a reader of the namespace served).

Real herd agents on 127.0.0.1 (the `agents` fixture of test_control_plane)."""
import hashlib
import json
import os
import queue
import stat
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request

from test_acl import acl_cluster, call, herd as herd_as
from test_control_plane import (HERD, REPO, agents, api, cli,  # noqa: F401
                                running_allocs, wait_for, write_job)
from test_tasks import alloc_dir, start_dev

BIG = 3 * 1024 * 1024

# Everything is written before `ready` appears; then the task waits.
SCRIPT = ('printf "hello fs\\n" > $HERD_TASK_DIR/local/hello.txt; '
          'head -c 256 /dev/urandom > $HERD_TASK_DIR/local/bin.dat; '
          'printf "\\000\\001\\377\\376" >> $HERD_TASK_DIR/local/bin.dat; '
          'mkdir -p $HERD_ALLOC_DIR/data/ckpt; '
          f'head -c {BIG} /dev/urandom > $HERD_ALLOC_DIR/data/ckpt/big.bin; '
          'echo s3cret > $HERD_SECRETS_DIR/token; '
          'ln -s /etc/passwd $HERD_TASK_DIR/local/passwd; '
          'ln -s ../../../../.. $HERD_TASK_DIR/local/up; '
          'ln -s ../local/hello.txt $HERD_TASK_DIR/local/inside; '
          'ln -s ../secrets/token $HERD_TASK_DIR/local/sec; '
          'mkfifo $HERD_TASK_DIR/local/fifo; '
          'touch $HERD_ALLOC_DIR/data/ready; '
          'while true; do sleep 1; done')


def fs_job(job_id):
    return f'''
job "{job_id}" {{
  type = "service"
  group "g" {{
    task "t" {{
      driver = "raw_exec"
      config {{
        command = "/bin/sh"
        args = ["-c", {json.dumps(SCRIPT)}]
      }}
      resources {{
        cpu = 100
        memory = 64
      }}
    }}
  }}
}}
'''


def get(addr, op, alloc_id, path=None, token=None, **q):
    """(status, body bytes, headers) of GET /v1/client/fs/<op>/<alloc>."""
    if path is not None:
        q['path'] = path
    url = f'http://{addr}/v1/client/fs/{op}/{alloc_id}'
    if q:
        url += '?' + urllib.parse.urlencode(q)
    req = urllib.request.Request(url)
    if token:
        req.add_header('X-Herd-Token', token)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers


def err_code(body):
    return json.loads(body)['error']['code']


def herd_bytes(port, *args, token=None):
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{port}')
    env.pop('HERD_TOKEN', None)
    if token:
        env['HERD_TOKEN'] = token
    return subprocess.run([str(HERD), *args], capture_output=True, env=env, timeout=60,
                          cwd=REPO)


def start_fs_job(port, tmp_path, d_of):
    r = cli(port, 'job', 'run', '-detach', write_job(tmp_path, 'files', fs_job('files')))
    assert r.returncode == 0, r.stdout + r.stderr
    [a] = wait_for(lambda: running_allocs(port, 'files'), 30, 'the allocation to run')
    d = d_of(a['id'])
    wait_for(lambda: (d / 'alloc' / 'data' / 'ready').exists(), 30, 'the task to write its files')
    return a, d


def test_alloc_fs_dev_agent(agents, tmp_path):
    dev = start_dev(agents, tmp_path)
    a, d = start_fs_job(dev.port, tmp_path, lambda i: alloc_dir(dev, i))
    aid = a['id']
    addr = api(dev.port, f'/v1/allocation/{aid}')['node_http_addr']
    assert addr

    # ls: the root, with the API's entry fields
    status, body, _ = get(addr, 'ls', aid, '/')
    assert status == 200, body
    root = {e['name']: e for e in json.loads(body)}
    assert {'alloc', 't'} <= set(root), root
    assert root['alloc']['is_dir'] and root['alloc']['file_mode'].startswith('d')
    assert set(root['alloc']) == {'name', 'is_dir', 'size', 'file_mode', 'mod_time'}
    status, body, _ = get(addr, 'ls', aid, 't/local')
    local = {e['name']: e for e in json.loads(body)}
    assert local['hello.txt']['size'] == 9 and not local['hello.txt']['is_dir']
    assert local['hello.txt']['file_mode'] == stat.filemode(os.stat(d / 't/local/hello.txt').st_mode)
    assert local['passwd']['file_mode'].startswith('l')   # shown, not followed
    assert local['fifo']['file_mode'].startswith('p')
    assert os.stat(d / 't' / 'local' / 'hello.txt').st_mtime_ns == local['hello.txt']['mod_time']
    # the path defaults to the root; "." and doubled slashes are harmless
    assert json.loads(get(addr, 'ls', aid)[1]) == json.loads(get(addr, 'ls', aid, '/')[1])
    assert get(addr, 'ls', aid, '//t/./local/')[0] == 200

    # stat
    status, body, _ = get(addr, 'stat', aid, 'alloc/data/ckpt/big.bin')
    st = json.loads(body)
    assert status == 200 and st['name'] == 'big.bin' and st['size'] == BIG, st
    assert st['content_type'] == 'application/octet-stream'
    st = json.loads(get(addr, 'stat', aid, 't/local/hello.txt')[1])
    assert st['content_type'].startswith('text/plain'), st
    assert json.loads(get(addr, 'stat', aid, '/')[1])['is_dir'] is True

    # cat: byte-identical, the big one streamed
    big = (d / 'alloc' / 'data' / 'ckpt' / 'big.bin').read_bytes()
    status, body, hdrs = get(addr, 'cat', aid, 'alloc/data/ckpt/big.bin')
    assert status == 200 and hashlib.sha256(body).digest() == hashlib.sha256(big).digest()
    assert int(hdrs['Content-Length']) == BIG
    binary = (d / 't' / 'local' / 'bin.dat').read_bytes()
    assert get(addr, 'cat', aid, 't/local/bin.dat')[1] == binary
    # readat: offset and limit
    status, body, _ = get(addr, 'readat', aid, 'alloc/data/ckpt/big.bin', offset=1000, limit=5000)
    assert status == 200 and body == big[1000:6000]
    assert get(addr, 'readat', aid, 'alloc/data/ckpt/big.bin', offset=BIG - 10)[1] == big[-10:]
    assert get(addr, 'readat', aid, 'alloc/data/ckpt/big.bin', offset=BIG + 5)[1] == b''
    assert get(addr, 'readat', aid, 't/local/hello.txt', limit=0)[1] == b''
    for q in ({'offset': '-1'}, {'limit': 'x'}, {'offset': ''}):
        status, body, _ = get(addr, 'readat', aid, 't/local/hello.txt', **q)
        assert status == 400 and err_code(body) == 'bad_request', (q, body)

    # a symlink that stays inside is followed
    assert get(addr, 'cat', aid, 't/local/inside')[1] == b'hello fs\n'
    # out of the allocation's dir: refused, nothing of the target sent
    passwd = open('/etc/passwd', 'rb').read()
    for path in ('t/local/passwd', 't/local/up/etc/passwd', 't/local/up'):
        for op in ('cat', 'stat', 'readat', 'ls'):
            status, body, _ = get(addr, op, aid, path)
            assert status == 400 and err_code(body) == 'outside_allocation', (op, path, body)
            assert passwd[:20] not in body
    for path in ('../../../../../etc/passwd', 't/../../x', '..', '/alloc/../t'):
        status, body, _ = get(addr, 'cat', aid, path)
        assert status == 400 and err_code(body) == 'bad_path', (path, body)
    # secrets: not served, by name or through a symlink inside
    for path in ('t/secrets', 't/secrets/token', 't//secrets/', 't/local/sec'):
        for op in ('cat', 'stat', 'ls'):
            status, body, _ = get(addr, op, aid, path)
            assert status == 403 and err_code(body) == 'secrets_not_served', (op, path, body)
            assert b's3cret' not in body
    # kinds of file
    assert err_code(get(addr, 'cat', aid, 't/local')[1]) == 'is_a_directory'
    assert err_code(get(addr, 'ls', aid, 't/local/hello.txt')[1]) == 'not_a_directory'
    status, body, _ = get(addr, 'cat', aid, 't/local/fifo')   # does not block
    assert status == 400 and err_code(body) == 'not_a_regular_file', body
    # unknown path, allocation, op
    assert get(addr, 'cat', aid, 't/local/nope')[0] == 404
    zero = '00000000-0000-0000-0000-000000000000'
    status, body, _ = get(addr, 'ls', zero, '/')
    assert status == 404 and err_code(body) == 'not_found', body
    assert get(addr, 'frob', aid, '/')[0] == 404
    assert get(addr, 'ls', '..', '/')[0] in (400, 404)

    # the CLI: a prefix of the id; a directory lists, a file prints
    r = cli(dev.port, 'alloc', 'fs', aid[:8])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:2] == ['Mode', 'Size'], r.stdout
    assert any(line.endswith(' alloc/') and line.startswith('d') for line in lines), r.stdout
    r = cli(dev.port, 'alloc', 'fs', aid[:8], 't/local')
    row = [line for line in r.stdout.splitlines() if line.endswith(' hello.txt')]
    assert row and row[0].split()[:2] == [local['hello.txt']['file_mode'], '9'], r.stdout
    r = herd_bytes(dev.port, 'alloc', 'fs', aid[:8], 'alloc/data/ckpt/big.bin')
    assert r.returncode == 0 and r.stdout == big, r.stderr
    r = herd_bytes(dev.port, 'alloc', 'fs', aid, 't/local/bin.dat')
    assert r.returncode == 0 and r.stdout == binary
    r = cli(dev.port, 'alloc', 'fs', '-stat', aid[:8], 't/local/hello.txt')
    assert r.returncode == 0 and r.stdout.splitlines()[1].endswith(' hello.txt'), r.stdout
    r = cli(dev.port, 'alloc', 'fs', '-stat', aid[:8])
    assert r.returncode == 0 and r.stdout.splitlines()[1].split()[-1] == '/', r.stdout
    r = cli(dev.port, 'alloc', 'fs', '-json', aid[:8], 't/local/hello.txt')
    assert json.loads(r.stdout)['size'] == 9
    r = cli(dev.port, 'alloc', 'fs', '-json', aid[:8], 't')
    assert {e['name'] for e in json.loads(r.stdout)} >= {'local', 'secrets', 'tmp'}
    # refusals say why, print nothing of the target, exit 1
    r = cli(dev.port, 'alloc', 'fs', aid[:8], 't/local/passwd')
    assert r.returncode == 1 and 'leaves the allocation' in r.stderr and not r.stdout, r.stderr
    r = cli(dev.port, 'alloc', 'fs', aid[:8], 't/secrets/token')
    assert r.returncode == 1 and 'secrets' in r.stderr and 's3cret' not in r.stdout
    r = cli(dev.port, 'alloc', 'fs', aid[:8], '../x')
    assert r.returncode == 1 and '..' in r.stderr
    r = cli(dev.port, 'alloc', 'fs', 'ffffffff')
    assert r.returncode == 1 and 'no allocation' in r.stderr, r.stderr
    r = cli(dev.port, 'alloc', 'fs', aid[:8], 't/local/nope')
    assert r.returncode == 1 and r.stderr, r.stderr

    # -f: the file, then what is appended to it, as it comes
    grow = d / 't' / 'local' / 'grow.txt'
    grow.write_bytes(b'one\n')
    env = dict(os.environ, HERD_ADDR=f'http://127.0.0.1:{dev.port}')
    p = subprocess.Popen([str(HERD), 'alloc', 'fs', '-f', aid[:8], 't/local/grow.txt'],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO)
    lines = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in iter(p.stdout.readline, b'')],
                     daemon=True).start()
    try:
        assert lines.get(timeout=30) == b'one\n'
        with open(grow, 'ab') as f:
            f.write(b'two\n')
        assert lines.get(timeout=30) == b'two\n'
        assert p.poll() is None   # still following
    finally:
        p.kill()
        p.wait()


def test_alloc_fs_separate_client_with_acl(agents, tmp_path):
    port, addr, mgmt, secrets, client = acl_cluster(agents, tmp_path, [
        ('read', 'namespace "team-a" {\n  policy = "read"\n}\n'),
        ('other', 'namespace "team-b" {\n  policy = "submit"\n}\n'),
    ], namespaces=('team-a', 'team-b'))

    f = write_job(tmp_path, 'files', fs_job('files'))
    r = herd_as(port, 'job', 'run', '-detach', '-namespace', 'team-a', f, token=mgmt)
    assert r.returncode == 0, r.stdout + r.stderr
    reader = secrets['read']

    def allocs():
        return [x for x in call(addr, '/v1/job/files/allocations?namespace=team-a',
                                token=reader)[1] if x['client_status'] == 'running']
    [a] = wait_for(allocs, 30, 'the allocation to run')
    d = client.dir / 'data' / 'alloc' / a['id']
    wait_for(lambda: (d / 'alloc' / 'data' / 'ready').exists(), 30, 'the task to write its files')
    node_api = call(addr, f'/v1/allocation/{a["id"]}', token=reader)[1]['node_http_addr']
    assert node_api and node_api != addr   # the client agent serves it, not the server

    path = 'alloc/data/ckpt/big.bin'
    big = (d / path).read_bytes()
    # no token, or one the server does not know: 403
    for token in (None, 'f' * 64):
        for op in ('ls', 'stat', 'cat', 'readat'):
            status, body, _ = get(node_api, op, a['id'], path if op != 'ls' else '/', token=token)
            assert status == 403 and err_code(body) == 'permission_denied', (op, status, body)
    # a token of another namespace: the same 404 as an unknown allocation
    status, body, _ = get(node_api, 'cat', a['id'], path, token=secrets['other'])
    assert status == 404 and big[:64] not in body, (status, body)
    # the namespace's reader: served, through the API and the CLI
    status, body, _ = get(node_api, 'cat', a['id'], path, token=reader)
    assert status == 200 and body == big
    status, body, _ = get(node_api, 'readat', a['id'], path, token=reader, offset=7, limit=9)
    assert status == 200 and body == big[7:16]
    r = herd_bytes(port, 'alloc', 'fs', '-namespace', 'team-a', a['id'][:8], path, token=reader)
    assert r.returncode == 0 and r.stdout == big, r.stderr
    r = herd_bytes(port, 'alloc', 'fs', '-namespace', 'team-a', a['id'][:8], 't/local/passwd',
                   token=reader)
    assert r.returncode == 1 and b'root:' not in r.stdout
    r = herd_bytes(port, 'alloc', 'fs', '-namespace', 'team-a', a['id'][:8], path,
                   token=secrets['other'])
    assert r.returncode == 1 and not r.stdout
