/* The collector of terminal allocations' directories; see alloc_gc.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "agent/alloc_gc.h"
#include "agent/client-int.h"
#include "agent/log.h"
#include "common/xalloc.h"
#include "common/units.h"

#define ID_MAX 64
#define GONE_MAX 1024

struct gc_item {
	char id[ID_MAX];
	bool recyclable;
};

struct pool_entry {
	char name[24];
	char **tasks;
	size_t ntasks;
};

struct alloc_gc {
	char *root;
	struct alloc_gc_options o;
	int rootfd, poolfd;          /* O_PATH of root and root/.pool */
	pthread_t thread;
	pthread_cond_t cond;         /* with gc_lock; CLOCK_MONOTONIC */
	char **stale;                /* .pool-old-* trees to remove first */
	size_t nstale;
	/* Under gc_lock: */
	bool stopping;
	unsigned waiters;            /* claimers inside pthread_cond_wait */
	struct gc_item *q;           /* terminal allocations, oldest first */
	size_t qhead, qn, qcap;      /* entries q[qhead .. qhead+qn) */
	char busy[ID_MAX];           /* the one being collected; "" none */
	struct pool_entry pool[ALLOC_POOL_MAX];
	size_t npool;
	char gone[GONE_MAX][ID_MAX]; /* ring of collected ids */
	size_t ngone;
	json_t *gone_pos;            /* {"<id>": its slot in gone}: a claim
				      * per allocation looks up, not a scan */
	unsigned long long seq;      /* names in .pool */
};

/* One lock for the registry and every collector's shared state: the
 * operations under it are a few compares and copies. */
static pthread_mutex_t gc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc_gc *registered;

static struct alloc_gc *lookup(const char *root)
{
	return registered && !strcmp(registered->root, root) ? registered : NULL;
}

void alloc_gc_free_names(char **names, size_t n)
{
	for (size_t i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
}

/* --- the queue (under gc_lock) --- */

static void queue_push(struct alloc_gc *gc, const char *id, bool recyclable)
{
	if (gc->qhead && gc->qhead + gc->qn == gc->qcap) {
		memmove(gc->q, gc->q + gc->qhead, gc->qn * sizeof(*gc->q));
		gc->qhead = 0;
	}
	ALLOC_GROW(gc->q, gc->qhead + gc->qn + 1, gc->qcap);
	struct gc_item *it = &gc->q[gc->qhead + gc->qn++];
	snprintf(it->id, sizeof(it->id), "%s", id);
	it->recyclable = recyclable;
}

/* Takes id out of the queue; whether it was there. */
static bool queue_remove(struct alloc_gc *gc, const char *id)
{
	for (size_t i = 0; i < gc->qn; i++) {
		struct gc_item *it = &gc->q[gc->qhead + i];
		if (strcmp(it->id, id))
			continue;
		memmove(it, it + 1, (gc->qn - i - 1) * sizeof(*it));
		gc->qn--;
		return true;
	}
	return false;
}

static void forget_gone(struct alloc_gc *gc, const char *id)
{
	json_t *pos = json_object_get(gc->gone_pos, id);
	if (pos) {
		gc->gone[json_integer_value(pos)][0] = '\0';
		json_object_del(gc->gone_pos, id);
	}
}

/* Notes id as collected, in the slot of the oldest noted. */
static void note_gone(struct alloc_gc *gc, const char *id)
{
	size_t slot = gc->ngone++ % GONE_MAX;
	json_t *pos = json_object_get(gc->gone_pos, gc->gone[slot]);
	if (pos && (size_t)json_integer_value(pos) == slot)
		json_object_del(gc->gone_pos, gc->gone[slot]);
	snprintf(gc->gone[slot], ID_MAX, "%s", id);
	json_object_set_new(gc->gone_pos, id, json_integer((json_int_t)slot));
}

/* --- what others call --- */

void alloc_gc_add(struct alloc_gc *gc, const char *id, bool recyclable)
{
	if (!gc || !id || !*id || strlen(id) >= ID_MAX)
		return;
	pthread_mutex_lock(&gc_lock);
	queue_push(gc, id, recyclable);
	if (gc->qn > (size_t)gc->o.max_allocs)
		pthread_cond_broadcast(&gc->cond);
	pthread_mutex_unlock(&gc_lock);
}

void alloc_gc_client_note(struct client *c, const struct alloc_runner *ar)
{
	bool recyclable = true;
	for (size_t i = 0; i < ar->ntasks; i++) {
		const char *d = ar->tasks[i].task->driver;
		if (!d || (strcmp(d, "raw_exec") && strcmp(d, "exec")))
			recyclable = false;
	}
	alloc_gc_add(c->gc, ar->id, recyclable);
}

void alloc_gc_claim(const char *root, const char *id)
{
	(void)alloc_gc_claim_queued(root, id);
}

bool alloc_gc_claim_queued(const char *root, const char *id)
{
	bool queued = false;
	pthread_mutex_lock(&gc_lock);
	struct alloc_gc *gc = lookup(root);
	if (gc) {
		queued = queue_remove(gc, id);
		forget_gone(gc, id);
		gc->waiters++;
		while (!gc->stopping && !strcmp(gc->busy, id))
			pthread_cond_wait(&gc->cond, &gc_lock);
		gc->waiters--;
		if (gc->stopping)
			pthread_cond_broadcast(&gc->cond);
	}
	pthread_mutex_unlock(&gc_lock);
	return queued;
}

void alloc_gc_unclaim(const char *root, const char *id, bool queued)
{
	struct alloc_gc *gc;
	if (!queued)
		return;
	pthread_mutex_lock(&gc_lock);
	if ((gc = lookup(root)))
		queue_push(gc, id, false);
	pthread_mutex_unlock(&gc_lock);
}

int alloc_gc_pool_take(const char *root, size_t ntasks, char **path, char ***tasks)
{
	int got = 0;
	pthread_mutex_lock(&gc_lock);
	struct alloc_gc *gc = lookup(root);
	for (size_t i = 0; gc && i < gc->npool; i++) {
		struct pool_entry *e = &gc->pool[i];
		if (e->ntasks != ntasks)
			continue;
		*path = xasprintf("%s/" ALLOC_POOL_DIR "/%s", root, e->name);
		*tasks = e->tasks;
		gc->pool[i] = gc->pool[--gc->npool];
		got = 1;
		break;
	}
	pthread_mutex_unlock(&gc_lock);
	return got;
}

bool alloc_gc_collected(const char *root, const char *id)
{
	bool found = false;
	pthread_mutex_lock(&gc_lock);
	struct alloc_gc *gc = lookup(root);
	found = gc && json_object_get(gc->gone_pos, id);
	pthread_mutex_unlock(&gc_lock);
	return found;
}

/* --- collecting --- */

/* Whether the alloc dir's filesystem is fuller than a threshold. */
static bool over_threshold(const struct alloc_gc *gc)
{
	struct statvfs v;
	if (fstatvfs(gc->rootfd, &v) < 0)
		return false;
	/* df's percent: used of what an unprivileged user could have */
	unsigned long long used = v.f_blocks - v.f_bfree, avail = used + v.f_bavail;
	if (avail && used * 100 > avail * (unsigned long long)gc->o.disk_pct)
		return true;
	if (v.f_files && (v.f_files - v.f_ffree) * 100 >
			 (unsigned long long)v.f_files * (unsigned long long)gc->o.inode_pct)
		return true;
	return false;
}

/* Moves the directory out of <root>/<id> (nothing finds it by id from
 * now on), then recycles or removes it. */
static void collect(struct alloc_gc *gc, const struct gc_item *it)
{
	char name[24];
	pthread_mutex_lock(&gc_lock);
	snprintf(name, sizeof(name), "g%llu", ++gc->seq);
	bool room = gc->npool < ALLOC_POOL_MAX;
	pthread_mutex_unlock(&gc_lock);

	if (renameat2(gc->rootfd, it->id, gc->poolfd, name, RENAME_NOREPLACE) < 0) {
		if (errno != ENOENT)
			log_warn("client: gc: alloc %.8s: cannot move %s/%s aside: %s", it->id,
				 gc->root, it->id, strerror(errno));
		return;
	}
	if (it->recyclable && room) {
		char **tasks = NULL;
		size_t n = 0;
		int r = alloc_dir_scrub(gc->poolfd, name, &tasks, &n);
		if (r == 0) {
			pthread_mutex_lock(&gc_lock);
			if (gc->npool < ALLOC_POOL_MAX) {
				struct pool_entry *e = &gc->pool[gc->npool++];
				snprintf(e->name, sizeof(e->name), "%s", name);
				e->tasks = tasks;
				e->ntasks = n;
				tasks = NULL;
			}
			pthread_mutex_unlock(&gc_lock);
			if (!tasks)
				return;
			alloc_gc_free_names(tasks, n);
		} else if (r < 0) {
			log_warn("client: gc: alloc %.8s: cannot scrub its directory for reuse: %s",
				 it->id, strerror(-r));
		}
	}
	int r = alloc_dir_remove(gc->poolfd, name);
	if (r < 0)
		log_warn("client: gc: alloc %.8s: cannot remove its directory (%s/%s/%s): %s",
			 it->id, gc->root, ALLOC_POOL_DIR, name,
			 r == -EXDEV ? "a mount point inside" : strerror(-r));
}

static void *gc_main(void *arg)
{
	struct alloc_gc *gc = arg;
	int64_t next_check = mono_ns() + gc->o.interval_ns;
	bool pressure = false;

	/* What an earlier life left in the pool: its bookkeeping is gone. */
	for (size_t i = 0; i < gc->nstale; i++) {
		int r = alloc_dir_remove(gc->rootfd, gc->stale[i]);
		if (r < 0)
			log_warn("client: gc: cannot remove %s/%s: %s", gc->root, gc->stale[i],
				 strerror(-r));
	}
	pthread_mutex_lock(&gc_lock);
	for (;;) {
		int64_t now = mono_ns();
		if (gc->stopping)
			break;
		if (now >= next_check) {
			next_check = now + gc->o.interval_ns;
			pthread_mutex_unlock(&gc_lock);
			pressure = over_threshold(gc);
			pthread_mutex_lock(&gc_lock);
			continue;
		}
		if (!gc->qn || (gc->qn <= (size_t)gc->o.max_allocs && !pressure)) {
			pressure = false;
			struct timespec ts = { (time_t)(next_check / 1000000000LL),
					       (long)(next_check % 1000000000LL) };
			pthread_cond_timedwait(&gc->cond, &gc_lock, &ts);
			continue;
		}
		struct gc_item it = gc->q[gc->qhead];
		gc->qhead++;
		gc->qn--;
		if (!gc->qn)
			gc->qhead = 0;
		snprintf(gc->busy, sizeof(gc->busy), "%s", it.id);
		pthread_mutex_unlock(&gc_lock);

		collect(gc, &it);
		bool still = pressure && over_threshold(gc);

		pthread_mutex_lock(&gc_lock);
		pressure = still;
		note_gone(gc, it.id);
		gc->busy[0] = '\0';
		pthread_cond_broadcast(&gc->cond);
	}
	pthread_mutex_unlock(&gc_lock);
	return NULL;
}

/* --- start and stop --- */

struct found {
	char id[ID_MAX];
	struct timespec mtime;
};

static int by_mtime(const void *a, const void *b)
{
	const struct timespec *x = &((const struct found *)a)->mtime;
	const struct timespec *y = &((const struct found *)b)->mtime;
	if (x->tv_sec != y->tv_sec)
		return x->tv_sec < y->tv_sec ? -1 : 1;
	return x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec;
}

static bool kept(const char *id, const char *const *keep, size_t nkeep)
{
	for (size_t i = 0; i < nkeep; i++)
		if (!strcmp(keep[i], id))
			return true;
	return false;
}

/* Lists root: terminal allocations' dirs into gc's queue (oldest first),
 * .pool-old-* into gc->stale.  .pool itself was moved aside before. */
static int scan_root(struct alloc_gc *gc, const char *const *keep, size_t nkeep)
{
	int fd = openat(gc->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int rc = -errno;
		if (fd >= 0)
			close(fd);
		return rc;
	}
	struct found *f = NULL;
	size_t n = 0, cap = 0, scap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *e = de->d_name;
		struct stat st;
		if (!strncmp(e, ALLOC_POOL_DIR "-old-", strlen(ALLOC_POOL_DIR "-old-"))) {
			ALLOC_GROW(gc->stale, gc->nstale + 1, scap);
			gc->stale[gc->nstale++] = xstrdup(e);
			continue;
		}
		if (e[0] == '.' || strlen(e) >= ID_MAX || kept(e, keep, nkeep) ||
		    fstatat(gc->rootfd, e, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		ALLOC_GROW(f, n + 1, cap);
		snprintf(f[n].id, sizeof(f[n].id), "%s", e);
		f[n].mtime = st.st_mtim;
		n++;
	}
	closedir(d);
	if (n)
		qsort(f, n, sizeof(*f), by_mtime);
	/* Not recyclable: who knows which driver ran them. */
	for (size_t i = 0; i < n; i++)
		queue_push(gc, f[i].id, false);
	free(f);
	return 0;
}

static void gc_free(struct alloc_gc *gc)
{
	if (gc->rootfd >= 0)
		close(gc->rootfd);
	if (gc->poolfd >= 0)
		close(gc->poolfd);
	for (size_t i = 0; i < gc->npool; i++)
		alloc_gc_free_names(gc->pool[i].tasks, gc->pool[i].ntasks);
	alloc_gc_free_names(gc->stale, gc->nstale);
	pthread_cond_destroy(&gc->cond);
	json_decref(gc->gone_pos);
	free(gc->q);
	free(gc->root);
	free(gc);
}

struct alloc_gc *alloc_gc_start(const char *root, const struct alloc_gc_options *o,
				const char *const *keep, size_t nkeep, struct herd_err *err)
{
	struct alloc_gc *gc = xcalloc(1, sizeof(*gc));
	pthread_condattr_t ca;
	int r;

	gc->root = xstrdup(root);
	gc->gone_pos = json_object();
	gc->o = *o;
	if (gc->o.interval_ns <= 0)
		gc->o.interval_ns = 60 * 1000000000LL;
	if (gc->o.max_allocs < 1)
		gc->o.max_allocs = 1;
	gc->poolfd = -1;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&gc->cond, &ca);
	pthread_condattr_destroy(&ca);
	gc->rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (gc->rootfd < 0) {
		herd_errf(err, -errno, "client: gc: %s: %s", root, strerror(errno));
		goto fail;
	}
	/* The pool an earlier life left is removed (by the thread): only
	 * this process's bookkeeping says what in it is clean. */
	char old[64];
	snprintf(old, sizeof(old), ALLOC_POOL_DIR "-old-%lld", (long long)mono_ns());
	if (renameat(gc->rootfd, ALLOC_POOL_DIR, gc->rootfd, old) < 0 && errno != ENOENT) {
		herd_errf(err, -errno, "client: gc: cannot move %s/%s aside: %s", root,
			  ALLOC_POOL_DIR, strerror(errno));
		goto fail;
	}
	if (mkdirat(gc->rootfd, ALLOC_POOL_DIR, 0700) < 0 ||
	    (gc->poolfd = openat(gc->rootfd, ALLOC_POOL_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW |
				 O_CLOEXEC)) < 0) {
		herd_errf(err, -errno, "client: gc: cannot make %s/%s: %s", root, ALLOC_POOL_DIR,
			  strerror(errno));
		goto fail;
	}
	if ((r = scan_root(gc, keep, nkeep)) < 0) {
		herd_errf(err, r, "client: gc: cannot list %s: %s", root, strerror(-r));
		goto fail;
	}
	pthread_mutex_lock(&gc_lock);
	if (registered) {
		pthread_mutex_unlock(&gc_lock);
		herd_errf(err, -EBUSY, "client: gc: another client of this process collects %s",
			  registered->root);
		goto fail;
	}
	registered = gc;
	pthread_mutex_unlock(&gc_lock);
	if (pthread_create(&gc->thread, NULL, gc_main, gc)) {
		pthread_mutex_lock(&gc_lock);
		registered = NULL;
		pthread_mutex_unlock(&gc_lock);
		herd_errf(err, -EAGAIN, "client: gc: cannot start its thread");
		goto fail;
	}
	return gc;
fail:
	gc_free(gc);
	return NULL;
}

void alloc_gc_stop(struct alloc_gc *gc)
{
	if (!gc)
		return;
	pthread_mutex_lock(&gc_lock);
	gc->stopping = true;
	pthread_cond_broadcast(&gc->cond);
	pthread_mutex_unlock(&gc_lock);
	pthread_join(gc->thread, NULL);
	pthread_mutex_lock(&gc_lock);
	/* From here on nobody finds gc; claimers still inside a wait leave
	 * (stopping) before it is freed. */
	registered = NULL;
	while (gc->waiters)
		pthread_cond_wait(&gc->cond, &gc_lock);
	pthread_mutex_unlock(&gc_lock);
	gc_free(gc);
}
