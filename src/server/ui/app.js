/* herd's web UI: who holds which GPU, how busy it is.
 *
 * Plain JavaScript, no framework, no build step.  The server serves this
 * file as /ui/app.js next to /ui (index.html) and /ui/style.css; all three
 * are compiled into the binary (src/server/ui/embed.py).
 *
 * The file has three layers, so that the part that turns API answers into
 * what the page shows can be tested without a browser (tests/e2e/test_ui.py
 * runs it under node against a real agent's answers):
 *
 *   1. pure functions: API answers -> rows (gpuGroups, jobRows, ...), and
 *      rows -> element trees, plain objects {tag, cls, text, children}
 *      (gpusView, jobsView, ...);
 *   2. mount(): an element tree -> DOM nodes.  The only place that makes
 *      DOM nodes, and it writes what came from the API with textContent
 *      only: job, node and service names are user input, and no string of
 *      theirs is ever parsed as HTML;
 *   3. the live page: one Follower per API path, each a loop of blocking
 *      queries (?index=N&wait=30s, X-Herd-Index), and the hash routes
 *      (#/gpus, #/jobs, #/nodes, #/services).
 *
 * The token the user types is kept in sessionStorage (gone when the tab
 * closes), never in localStorage or a cookie, and sent as X-Herd-Token. */
'use strict';

/* --- 1. pure functions: formatting ------------------------------------- */

/* The first 8 characters of an id, as the CLI prints allocation ids. */
function shortId(id) {
	return typeof id === 'string' ? id.slice(0, 8) : '';
}

/* MiB as people read it: "512 MiB", "9.5 GiB". */
function fmtMiB(mib) {
	if (typeof mib !== 'number' || !isFinite(mib) || mib < 0)
		return '—';
	if (mib < 1024)
		return Math.round(mib) + ' MiB';
	const gib = mib / 1024;
	return (gib < 100 ? gib.toFixed(1) : Math.round(gib).toString()) + ' GiB';
}

/* A share in thousandths (compute_milli) as a percentage: "25%". */
function fmtMilli(milli) {
	if (typeof milli !== 'number' || !isFinite(milli))
		return '—';
	return (Math.round(milli / 10 * 10) / 10) + '%';
}

/* A whole number of something: "3 GPUs", "1 GPU". */
function plural(n, one, many) {
	return n + ' ' + (n === 1 ? one : many);
}

function num(v, dflt) {
	return typeof v === 'number' && isFinite(v) ? v : dflt;
}

function str(v) {
	return typeof v === 'string' ? v : '';
}

function arr(v) {
	return Array.isArray(v) ? v : [];
}

/* --- 1. pure functions: API answers -> rows ---------------------------- */

/* The holders of one device of GET /v1/gpus, as the GPU view lists them. */
function holderRows(gpu) {
	return arr(gpu.allocations).map(a => ({
		owner: str(a.namespace) + '/' + str(a.job_id),
		namespace: str(a.namespace),
		job_id: str(a.job_id),
		task_group: str(a.task_group),
		alloc_id: str(a.alloc_id),
		alloc_short: shortId(a.alloc_id),
		compute: fmtMilli(num(a.compute_milli, 0)),
		memory: a.whole ? 'whole' : fmtMiB(num(a.memory_mib, 0)),
		whole: !!a.whole,
	}));
}

/* GET /v1/gpus -> one group per node, sorted by node name, each with a row
 * per device (a whole GPU or a MIG instance; a MIG instance names its
 * parent GPU, and the instances of one GPU stay together).  Memory used
 * and utilization are what the agent measured at its last heartbeat, and
 * only while the node is ready (a down node's figures are old news):
 * null when unknown (MIG instances have no utilization). */
function gpuGroups(gpus) {
	const byNode = new Map();
	for (const g of arr(gpus)) {
		const dev = g.device || {};
		const stats = dev.stats || {};
		const ready = g.node_status === 'ready';
		const key = str(g.node_id);
		if (!byNode.has(key))
			byNode.set(key, { node_id: key, node_name: str(g.node_name) || key,
					  node_status: str(g.node_status), rows: [] });
		const total = num(dev.memory_mib, 0);
		const used = ready ? num(stats.memory_used_mib, null) : null;
		const util = ready ? num(stats.utilization_gpu, null) : null;
		byNode.get(key).rows.push({
			id: str(dev.id),
			model: str(dev.model),
			mig_profile: str(dev.mig_profile),
			parent_id: str(dev.parent_id),
			sharing: str(g.sharing || dev.sharing) || 'exclusive',
			memory_total_mib: total,
			memory_used_mib: used,
			memory_ratio: used !== null && total > 0 ? Math.min(1, used / total) : null,
			memory_text: used !== null ? fmtMiB(used) + ' / ' + fmtMiB(total)
						   : '? / ' + fmtMiB(total),
			utilization: util,
			utilization_text: util !== null ? Math.round(util) + '%' : '—',
			healthy: dev.healthy !== false,
			health_text: dev.healthy === false ? ('unhealthy' +
					(str(dev.health_reason) ? ': ' + dev.health_reason : '')) : 'healthy',
			compute_allocated: fmtMilli(num(g.compute_used_milli, 0)),
			holders: holderRows(g),
		});
	}
	const groups = Array.from(byNode.values());
	groups.sort((a, b) => a.node_name.localeCompare(b.node_name) ||
			      a.node_id.localeCompare(b.node_id));
	for (const grp of groups) {
		/* a MIG instance sorts under its parent, whole GPUs by id */
		grp.rows.sort((a, b) => (a.parent_id || a.id).localeCompare(b.parent_id || b.id) ||
				       a.id.localeCompare(b.id));
		grp.held = grp.rows.filter(r => r.holders.length > 0).length;
	}
	return groups;
}

/* Whether an allocation still holds what it was given: until its client
 * says it ended, even when told to stop (docs/api.md, "How work flows"). */
function holdsResources(alloc) {
	const s = alloc.client_status;
	return s === 'pending' || s === 'running';
}

/* GET /v1/jobs and GET /v1/allocations -> a row per job: allocation counts
 * from the job's summary (every group), GPUs from the allocations that
 * still hold theirs.  `gpu_equiv` counts a MIG slice or a share as the
 * fraction of a GPU it is (gpu_milli).  allocs may be null (not readable):
 * then the GPU columns say so. */
function jobRows(jobs, allocs) {
	const held = new Map();
	for (const a of arr(allocs)) {
		if (!holdsResources(a))
			continue;
		const key = str(a.namespace) + '\u0000' + str(a.job_id);
		const h = held.get(key) || { devices: 0, milli: 0 };
		for (const d of arr(a.resources && a.resources.devices)) {
			h.devices++;
			h.milli += num(d.gpu_milli, num(d.compute_milli, 0));
		}
		held.set(key, h);
	}
	const rows = arr(jobs).map(j => {
		const c = { running: 0, pending: 0, failed: 0, complete: 0, lost: 0 };
		for (const g of Object.values(j.summary || {}))
			for (const k of Object.keys(c))
				c[k] += num(g && g[k], 0);
		const h = held.get(str(j.namespace) + '\u0000' + str(j.id)) || { devices: 0, milli: 0 };
		return {
			id: str(j.id),
			namespace: str(j.namespace),
			type: str(j.type),
			status: str(j.status),
			stopped: !!j.stop,
			running: c.running,
			pending: c.pending,
			failed: c.failed,
			gpu_devices: allocs ? h.devices : null,
			gpu_equiv: allocs ? h.milli / 1000 : null,
			/* "2" for two whole GPUs; "1 (0.14 GPU)" for a MIG slice */
			gpus_text: !allocs ? '?' : h.milli === h.devices * 1000 ? String(h.devices) :
				h.devices + ' (' + (Math.round(h.milli / 10) / 100) + ' GPU)',
		};
	});
	rows.sort((a, b) => a.namespace.localeCompare(b.namespace) || a.id.localeCompare(b.id));
	return rows;
}

/* GET /v1/nodes (and GET /v1/gpus, or null) -> a row per node.  A GPU is
 * free when healthy and nobody holds any of it. */
function nodeRows(nodes, gpus) {
	const per = new Map();
	for (const g of arr(gpus)) {
		const p = per.get(g.node_id) || { total: 0, free: 0 };
		p.total++;
		if (arr(g.allocations).length === 0 && !(g.device && g.device.healthy === false))
			p.free++;
		per.set(g.node_id, p);
	}
	const rows = arr(nodes).map(n => {
		const devs = arr(n.devices).filter(d => !d.type || d.type === 'gpu');
		const p = per.get(n.id);
		return {
			id: str(n.id),
			id_short: shortId(n.id),
			name: str(n.name) || str(n.id),
			datacenter: str(n.datacenter),
			node_class: str(n.node_class),
			status: str(n.status),
			status_description: str(n.status_description),
			eligibility: str(n.eligibility),
			drain: !!n.drain,
			gpus_total: p ? p.total : devs.length,
			gpus_free: p ? p.free : null,
			gpus_text: (p ? p.free : '?') + ' / ' + (p ? p.total : devs.length),
		};
	});
	rows.sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
	return rows;
}

/* GET /v1/services -> a row per service name. */
function serviceRows(services) {
	const rows = arr(services).map(s => ({
		namespace: str(s.namespace),
		name: str(s.name),
		tags: arr(s.tags).map(str).join(', '),
		instances: num(s.instances, 0),
		healthy: num(s.healthy, 0),
		health_text: num(s.healthy, 0) + ' / ' + num(s.instances, 0),
	}));
	rows.sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
	return rows;
}

/* How many jobs wait in the fair queue, from GET /v1/metrics?format=json
 * (herd_fair_queue_jobs, one sample per namespace); null when unknown. */
function queueWaiting(metrics) {
	if (!metrics || !Array.isArray(metrics.metrics))
		return null;
	const fam = metrics.metrics.find(f => f && f.name === 'herd_fair_queue_jobs');
	if (!fam)
		return null;
	return arr(fam.samples).reduce((n, s) => n + num(s && s.value, 0), 0);
}

/* The summary bar from what the page has read; each input may be null
 * (not read yet, or not readable with this token): its figures are then
 * null too. */
function summarize(nodes, gpus, jobs, metrics) {
	const s = { nodes_ready: null, nodes_total: null, gpus_allocated: null, gpus_total: null,
		    jobs_running: null, jobs_pending: null, queue_waiting: queueWaiting(metrics) };
	if (nodes) {
		s.nodes_total = arr(nodes).length;
		s.nodes_ready = arr(nodes).filter(n => n.status === 'ready').length;
	}
	if (gpus) {
		s.gpus_total = arr(gpus).length;
		s.gpus_allocated = arr(gpus).filter(g => arr(g.allocations).length > 0).length;
	}
	if (jobs) {
		s.jobs_running = arr(jobs).filter(j => j.status === 'running').length;
		s.jobs_pending = arr(jobs).filter(j => j.status === 'pending').length;
	}
	return s;
}

/* What the page says about a failed read of `what` ("GPUs", "jobs"):
 * status 0 is a network error (message: its text). */
function errorText(what, status, body, message) {
	if (status === 403)
		return 'this token may not read ' + what + ': ' +
			((body && body.error && str(body.error.message)) || 'permission denied');
	if (status === 0)
		return 'cannot read ' + what + ': ' + (message || 'the server does not answer');
	const m = body && body.error && str(body.error.message);
	return 'cannot read ' + what + ': ' + status + (m ? ' ' + m : '');
}

/* How long to wait before the next try after `failures` failed reads in
 * a row: 1 s, 2 s, 4 s ... at most 30 s, so that a server that is down or
 * a token that may not read is not asked in a loop. */
function backoffMs(failures) {
	return Math.min(30000, 1000 * Math.pow(2, Math.max(0, failures - 1)));
}

/* path with the blocking query's arguments: wait for a change past index
 * (the X-Herd-Index of the previous answer; 0: answer at once), at most
 * wait (a duration, 30s when not given). */
function blockingUrl(path, index, wait) {
	if (!index)
		return path;
	return path + (path.includes('?') ? '&' : '?') + 'index=' + index + '&wait=' + (wait || '30s');
}

/* --- 1. pure functions: rows -> element trees -------------------------- */

/* An element of the tree mount() turns into DOM: tag, class, text (always
 * set as text, never parsed), title (a tooltip), children.  Children that
 * are strings become text nodes; null and false are left out. */
function h(tag, props, ...children) {
	const p = props || {};
	return { tag: tag, cls: p.cls || '', text: p.text !== undefined ? String(p.text) : null,
		 title: p.title !== undefined ? String(p.title) : null,
		 width: p.width !== undefined ? p.width : null,
		 children: children.flat(Infinity).filter(c => c !== null && c !== undefined && c !== false) };
}

function table(head, rows) {
	return h('table', null,
		h('thead', null, h('tr', null, head.map(c =>
			h('th', { cls: c.num ? 'num' : '', text: c.text })))),
		h('tbody', null, rows));
}

/* A bar of ratio (0..1, or null: unknown) with a label on it.  Its width
 * is set through the CSSOM (mount), which the CSP allows, unlike a style
 * attribute. */
function bar(ratio, label) {
	return h('div', { cls: 'bar', title: label },
		h('div', { cls: 'fill', width: ratio === null ? 0 : Math.round(ratio * 1000) / 10 }),
		h('span', { cls: 'label', text: label }));
}

function statusCls(s) {
	if (s === 'ready' || s === 'running' || s === 'eligible' || s === 'passing')
		return 'ok';
	if (s === 'down' || s === 'failed' || s === 'dead' || s === 'ineligible' || s === 'critical')
		return 'bad';
	return 'warn';
}

function gpusView(groups) {
	if (groups.length === 0)
		return h('p', { cls: 'empty', text: 'No GPUs: no node has registered one.' });
	return h('div', null, groups.map(g => [
		h('h2', null, g.node_name,
			h('span', { cls: 'sub ' + statusCls(g.node_status), text: g.node_status }),
			h('span', { cls: 'sub', text: g.held + ' of ' + plural(g.rows.length, 'GPU', 'GPUs') + ' held' })),
		table([{ text: 'GPU' }, { text: 'model' }, { text: 'sharing' }, { text: 'memory used' },
		       { text: 'utilization', num: true }, { text: 'health' }, { text: 'compute allocated', num: true },
		       { text: 'holders' }],
			g.rows.map(r => h('tr', null,
				h('td', { cls: 'mono', title: r.id },
					h('div', { text: r.id }),
					r.mig_profile ? h('div', { cls: 'muted', text: 'MIG ' + r.mig_profile + ' of ' + r.parent_id }) : null),
				h('td', { text: r.model }),
				h('td', { text: r.sharing }),
				h('td', null, bar(r.memory_ratio, r.memory_text)),
				h('td', { cls: 'num', text: r.utilization_text }),
				h('td', { cls: r.healthy ? 'ok' : 'bad', text: r.health_text }),
				h('td', { cls: 'num', text: r.compute_allocated }),
				h('td', null, r.holders.length === 0 ? h('span', { cls: 'muted', text: 'free' }) :
					h('ul', { cls: 'holders' }, r.holders.map(x => h('li', null,
						h('b', { text: x.owner }), ' ',
						h('span', { cls: 'mono', title: x.alloc_id, text: x.alloc_short }), ' ',
						h('span', { cls: 'muted', text: x.compute + ' compute, ' + x.memory + ' memory' })))))))),
	]));
}

function jobsView(rows) {
	if (rows.length === 0)
		return h('p', { cls: 'empty', text: 'No jobs.' });
	return table([{ text: 'job' }, { text: 'namespace' }, { text: 'type' }, { text: 'status' },
		      { text: 'running', num: true }, { text: 'pending', num: true }, { text: 'failed', num: true },
		      { text: 'GPUs held', num: true }],
		rows.map(r => h('tr', null,
			h('td', { cls: 'mono', text: r.id }),
			h('td', { text: r.namespace }),
			h('td', { text: r.type }),
			h('td', { cls: statusCls(r.status), text: r.status + (r.stopped && r.status !== 'dead' ? ' (stopping)' : '') }),
			h('td', { cls: 'num', text: r.running }),
			h('td', { cls: 'num', text: r.pending }),
			h('td', { cls: 'num' + (r.failed ? ' bad' : ''), text: r.failed }),
			h('td', { cls: 'num', text: r.gpus_text }))));
}

function nodesView(rows) {
	if (rows.length === 0)
		return h('p', { cls: 'empty', text: 'No nodes.' });
	return table([{ text: 'node' }, { text: 'id' }, { text: 'datacenter' }, { text: 'status' },
		      { text: 'eligibility' }, { text: 'drain' }, { text: 'GPUs free / total', num: true }],
		rows.map(r => h('tr', null,
			h('td', { text: r.name }),
			h('td', { cls: 'mono', title: r.id, text: r.id_short }),
			h('td', { text: r.datacenter }),
			h('td', { cls: statusCls(r.status), title: r.status_description, text: r.status }),
			h('td', { cls: statusCls(r.eligibility), text: r.eligibility }),
			h('td', { cls: r.drain ? 'warn' : 'muted', text: r.drain ? 'draining' : 'no' }),
			h('td', { cls: 'num', text: r.gpus_text }))));
}

function servicesView(rows) {
	if (rows.length === 0)
		return h('p', { cls: 'empty', text: 'No services registered.' });
	return table([{ text: 'service' }, { text: 'namespace' }, { text: 'tags' },
		      { text: 'healthy / instances', num: true }],
		rows.map(r => h('tr', null,
			h('td', { text: r.name }),
			h('td', { text: r.namespace }),
			h('td', { cls: 'muted', text: r.tags }),
			h('td', { cls: 'num ' + (r.healthy === r.instances ? 'ok' : 'warn'), text: r.health_text }))));
}

function summaryView(s) {
	const item = (value, label) => h('div', { cls: 'item' },
		h('b', { text: value }), h('span', { text: label }));
	const of = (a, b) => a === null || b === null ? '?' : a + ' / ' + b;
	return h('div', { cls: 'items' },
		item(of(s.nodes_ready, s.nodes_total), 'nodes ready'),
		item(of(s.gpus_allocated, s.gpus_total), 'GPUs allocated'),
		item(s.jobs_running === null ? '?' : s.jobs_running, 'jobs running'),
		item(s.jobs_pending === null ? '?' : s.jobs_pending, 'jobs pending'),
		s.queue_waiting === null ? null : item(s.queue_waiting, 'waiting in the fair queue'));
}

/* --- 2. mount: element trees -> DOM ------------------------------------ */

/* Makes the DOM nodes of tree with doc (the page's document; a test's
 * stand-in).  Text goes through textContent and createTextNode only. */
function mount(tree, doc) {
	if (typeof tree === 'string' || typeof tree === 'number')
		return doc.createTextNode(String(tree));
	const el = doc.createElement(tree.tag);
	if (tree.cls)
		el.className = tree.cls;
	if (tree.title !== null)
		el.title = tree.title;
	if (tree.width !== null)
		el.style.width = tree.width + '%';
	if (tree.text !== null)
		el.textContent = tree.text;
	for (const c of tree.children)
		el.appendChild(mount(c, doc));
	return el;
}

/* --- 3. the live page -------------------------------------------------- */

const TOKEN_KEY = 'herd.token';

/* The token of this tab: sessionStorage only (see the top). */
function getToken() {
	try {
		return sessionStorage.getItem(TOKEN_KEY) || '';
	} catch (e) {
		return ''; /* storage refused (private mode): no token */
	}
}

function setToken(t) {
	try {
		if (t)
			sessionStorage.setItem(TOKEN_KEY, t);
		else
			sessionStorage.removeItem(TOKEN_KEY);
	} catch (e) {
		/* nothing to keep it in; the page runs without a token */
	}
}

function sleep(ms, signal) {
	return new Promise(resolve => {
		const t = setTimeout(resolve, ms);
		if (signal)
			signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
	});
}

/* One API path followed with blocking queries: the first read answers at
 * once, each next one asks for a change past the index of the previous
 * answer and is held by the server until there is one or 30 s passed.
 * A timed-out wait answers too (the same index): the page then shows the
 * agents' latest measurements, which move without moving the index.
 * onData(body, index) gets every answer; onError(text or null) says what
 * went wrong, and null when a read succeeds again. */
class Follower {
	constructor(path, what, wait, onData, onError) {
		this.path = path;
		this.what = what;
		this.wait = wait;
		this.onData = onData;
		this.onError = onError;
		this.ctl = null;
	}

	start() {
		if (this.ctl)
			return;
		this.ctl = new AbortController();
		this.loop(this.ctl.signal);
	}

	stop() {
		if (this.ctl)
			this.ctl.abort();
		this.ctl = null;
	}

	async loop(signal) {
		let index = 0, failures = 0;
		while (!signal.aborted) {
			const started = Date.now();
			let status = 0, body = null, next = 0;
			try {
				const headers = {};
				const token = getToken();
				if (token)
					headers['X-Herd-Token'] = token;
				const resp = await fetch(blockingUrl(this.path, index, this.wait),
							 { headers: headers, signal: signal, cache: 'no-store' });
				status = resp.status;
				body = await resp.json().catch(() => null);
				if (!resp.ok)
					throw new Error('status ' + status);
				next = Number(resp.headers.get('X-Herd-Index')) || 0;
			} catch (e) {
				if (signal.aborted)
					return;
				failures++;
				this.onError(errorText(this.what, status, body, e && e.message));
				await sleep(backoffMs(failures), signal);
				continue;
			}
			failures = 0;
			index = next;
			/* a drawing failure is the page's bug, not a failed read:
			 * say so in the console and keep following */
			try {
				this.onError(null);
				this.onData(body, next);
			} catch (e) {
				console.error('herd ui: cannot draw ' + this.what, e);
			}
			/* Many changes in a row (a big job starting) would refetch
			 * the whole list for each; a short pause lets them
			 * gather into one answer. */
			const spent = Date.now() - started;
			if (spent < 500)
				await sleep(500 - spent, signal);
		}
	}
}

/* The views: the API answers they read (the first one they cannot do
 * without) and how they draw them. */
const VIEWS = {
	gpus: { paths: ['gpus'], draw: d => gpusView(gpuGroups(d.gpus)) },
	jobs: { paths: ['jobs', 'allocations'], draw: d => jobsView(jobRows(d.jobs, d.allocations)) },
	nodes: { paths: ['nodes', 'gpus'], draw: d => nodesView(nodeRows(d.nodes, d.gpus)) },
	services: { paths: ['services'], draw: d => servicesView(serviceRows(d.services)) },
};

/* Every path the page may follow, what an error calls it and how long a
 * blocking read of it waits.  Lists of every namespace the token may read
 * (namespace=*).  GPU utilization and memory come with the agents'
 * heartbeats (every TTL/2, 5 s by default), which do not move the index:
 * the lists that show them wait 5 s at most, so the page is never more
 * than a heartbeat and 5 s behind the GPUs. */
const SOURCES = {
	gpus: { path: '/v1/gpus', what: 'GPUs', wait: '5s' },
	nodes: { path: '/v1/nodes', what: 'nodes', wait: '5s' },
	jobs: { path: '/v1/jobs?namespace=*', what: 'jobs' },
	allocations: { path: '/v1/allocations?namespace=*', what: 'allocations' },
	services: { path: '/v1/services?namespace=*', what: 'services' },
};

/* The summary bar reads these whatever the view. */
const SUMMARY_PATHS = ['nodes', 'gpus', 'jobs'];

function startPage() {
	const data = {};        /* source name -> its last answer */
	const errors = new Map(); /* source name -> what went wrong */
	const followers = {};
	let metrics = null, metricsBusy = false, metricsAgain = false;

	const viewName = () => {
		const m = /^#\/([a-z]+)/.exec(location.hash);
		return m && VIEWS[m[1]] ? m[1] : 'gpus';
	};

	const showErrors = () => {
		const box = document.getElementById('error');
		box.textContent = Array.from(errors.values()).join('\n');
		box.hidden = errors.size === 0;
	};

	const draw = () => {
		const name = viewName();
		const view = VIEWS[name];
		document.querySelectorAll('nav a').forEach(a =>
			a.classList.toggle('active', a.dataset.view === name));
		const summary = document.getElementById('summary');
		summary.replaceChildren(mount(summaryView(summarize(data.nodes || null, data.gpus || null,
								    data.jobs || null, metrics)), document));
		const main = document.getElementById('view');
		const first = view.paths[0];
		if (data[first] === undefined) {
			/* not read yet, or not readable: the error box says why */
			main.replaceChildren(mount(h('p', { cls: 'empty',
				text: errors.has(first) ? 'Nothing to show.' : 'Loading…' }), document));
			return;
		}
		/* the other paths add columns; until read (or when not
		 * readable) those say "?" */
		const d = {};
		for (const p of view.paths)
			d[p] = data[p] === undefined ? null : data[p];
		main.replaceChildren(mount(view.draw(d), document));
	};

	/* The fair queue's length comes from the metrics, which do not block:
	 * read again whenever a followed list changed, one read at a time. */
	const refreshMetrics = async () => {
		if (metricsBusy) {
			metricsAgain = true;
			return;
		}
		metricsBusy = true;
		do {
			metricsAgain = false;
			try {
				const headers = {};
				if (getToken())
					headers['X-Herd-Token'] = getToken();
				const resp = await fetch('/v1/metrics?format=json', { headers: headers, cache: 'no-store' });
				metrics = resp.ok ? await resp.json() : null;
			} catch (e) {
				metrics = null; /* the summary leaves the queue out */
			}
		} while (metricsAgain);
		metricsBusy = false;
		draw();
	};

	const follower = name => {
		if (!followers[name]) {
			const src = SOURCES[name];
			followers[name] = new Follower(src.path, src.what, src.wait, body => {
				data[name] = body;
				draw();
				if (name === 'jobs')
					refreshMetrics();
			}, text => {
				const had = errors.get(name);
				if (text)
					errors.set(name, text);
				else
					errors.delete(name);
				if (had !== text) {
					showErrors();
					draw(); /* "Loading…" becomes "Nothing to show." */
				}
			});
		}
		return followers[name];
	};

	/* Follows what the summary and the current view need, no more: a
	 * browser keeps at most six connections to one server, and each
	 * follower holds one. */
	const follow = () => {
		const want = new Set(SUMMARY_PATHS.concat(VIEWS[viewName()].paths));
		for (const name of Object.keys(SOURCES)) {
			if (want.has(name)) {
				follower(name).start();
			} else if (followers[name]) {
				followers[name].stop();
				delete data[name];
				errors.delete(name);
			}
		}
		showErrors();
		draw();
	};

	/* A new token: every read starts again with it. */
	const restart = () => {
		for (const name of Object.keys(followers))
			followers[name].stop();
		for (const name of Object.keys(data))
			delete data[name];
		errors.clear();
		metrics = null;
		follow();
	};

	const form = document.getElementById('token-form');
	const input = document.getElementById('token');
	input.value = getToken();
	form.addEventListener('submit', ev => {
		ev.preventDefault();
		setToken(input.value.trim());
		restart();
	});
	document.getElementById('token-clear').addEventListener('click', () => {
		input.value = '';
		setToken('');
		restart();
	});
	window.addEventListener('hashchange', follow);
	follow();
}

if (typeof module !== 'undefined' && module.exports) {
	/* under node (tests/e2e/test_ui.py): the pure functions, and the
	 * follower (node has fetch); nothing starts */
	module.exports = { shortId, fmtMiB, fmtMilli, holderRows, gpuGroups, holdsResources, jobRows,
			   nodeRows, serviceRows, queueWaiting, summarize, errorText, backoffMs,
			   blockingUrl, h, gpusView, jobsView, nodesView, servicesView, summaryView,
			   mount, Follower, SOURCES };
} else {
	document.addEventListener('DOMContentLoaded', startPage);
}
