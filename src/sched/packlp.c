/* packlp: the value of each one-device share under the workload's best
 * fractional packing (the dual of the bin-packing LP), and K[l], the most
 * value a device with l milli left can still hold.  See sched-int.h
 * (pack_value) and docs/scheduling.md. */
#include <math.h>
#include <string.h>

#include "common/xalloc.h"
#include "sched/sched-int.h"

#define LP_MAX_ROWS 1000
#define LP_EPS 1e-9

/* Dense simplex for max c.y s.t. A y <= 1, y >= 0 (the origin is feasible,
 * so no phase one).  A is rows x m; y gets the optimum.  The LP is
 * degenerate (many sets tie): Dantzig's rule for speed, then Bland's, which
 * cannot cycle. */
static void simplex(const double *A, int rows, int m, const double *c, double *y)
{
	int cols = m + rows + 1, *basis = xcalloc((size_t)rows + 1, sizeof(int));
	double *t = xcalloc((size_t)(rows + 1) * (size_t)cols, sizeof(double));
#define T(i, j) t[(size_t)(i) * (size_t)cols + (size_t)(j)]
	for (int i = 0; i < rows; i++) {
		for (int j = 0; j < m; j++)
			T(i, j) = A[(size_t)i * (size_t)m + (size_t)j];
		T(i, m + i) = 1;
		T(i, cols - 1) = 1;
		basis[i] = m + i;
	}
	for (int j = 0; j < m; j++)
		T(rows, j) = -c[j];
	for (int iter = 0; iter < 100000; iter++) {
		int e = -1, l = -1;
		double best = 0;
		/* the most negative reduced cost; after 5000 pivots the
		 * first negative one (Bland) */
		double most = -LP_EPS;
		for (int j = 0; j < cols - 1; j++)
			if (T(rows, j) < most) {
				e = j;
				if (iter >= 5000)
					break;
				most = T(rows, j);
			}
		if (e < 0)
			break;
		for (int i = 0; i < rows; i++)
			if (T(i, e) > LP_EPS) {
				double r = T(i, cols - 1) / T(i, e);
				if (l < 0 || r < best - LP_EPS ||
				    (r < best + LP_EPS && basis[i] < basis[l])) {
					best = r;
					l = i;
				}
			}
		if (l < 0)
			break; /* unbounded: cannot happen, every y_c has a row */
		{
			double p = T(l, e);
			for (int j = 0; j < cols; j++)
				T(l, j) /= p;
			for (int i = 0; i <= rows; i++) {
				double f = T(i, e);
				if (i == l || f == 0)
					continue;
				for (int j = 0; j < cols; j++)
					T(i, j) -= f * T(l, j);
			}
			basis[l] = e;
		}
	}
	memset(y, 0, (size_t)m * sizeof(double));
	for (int i = 0; i < rows; i++)
		if (basis[i] < m)
			y[basis[i]] = T(i, cols - 1);
#undef T
	free(t);
	free(basis);
}

/* Unbounded knapsack: K[l] = the most value (val[j] each, size sz[j])
 * that fits in l; from[l] (when not NULL) the last share of a best set for
 * l, -1 for none, so that the set can be read back for any l. */
static void knapsack(const double *val, const int32_t *sz, int m, double *K, int cap, int *from)
{
	K[0] = 0;
	if (from)
		from[0] = -1;
	for (int l = 1; l <= cap; l++) {
		int f = -1;
		K[l] = K[l - 1];
		for (int j = 0; j < m; j++)
			if (sz[j] <= l && K[l - sz[j]] + val[j] > K[l] + LP_EPS) {
				K[l] = K[l - sz[j]] + val[j];
				f = j;
			}
		if (from)
			from[l] = f;
	}
}

/* Adds the row of a set of shares: share j once and the best set for the
 * rest of the device, unless the same row is there already. */
static int add_pattern(double *A, int rows, int m, const int32_t *sz, const int *from, int j)
{
	double *r = &A[(size_t)rows * (size_t)m];
	memset(r, 0, (size_t)m * sizeof(double));
	r[j] = 1;
	for (int l = SCHED_MILLI - sz[j]; l > 0;) {
		if (from[l] < 0) {
			l--;
			continue;
		}
		r[from[l]] += 1;
		l -= sz[from[l]];
	}
	for (int i = 0; i < rows; i++)
		if (!memcmp(&A[(size_t)i * (size_t)m], r, (size_t)m * sizeof(double)))
			return rows;
	return rows + 1;
}

void pack_value_init(struct sched_workload *w)
{
	int32_t *sz = xcalloc(w->n + 1, sizeof(int32_t));
	double *n = xcalloc(w->n + 1, sizeof(double)), *y = xcalloc(w->n + 1, sizeof(double));
	double *A, *K = xcalloc(SCHED_MILLI + 1, sizeof(double));
	bool any = false;
	int m = 0, rows = 0, *from = xcalloc(SCHED_MILLI + 1, sizeof(int));

	/* the one-device shares and their demand (GPU classes of one device) */
	for (size_t k = 0; k < w->n; k++) {
		const struct wl_class *c = &w->c[k];
		int j;
		if (c->num != 1 || c->milli <= 0 || c->milli > SCHED_MILLI || c->freq <= 0)
			continue;
		if (c->milli < SCHED_MILLI) {
			/* the least CPU and memory a fraction of the workload asks */
			w->pack_min_cpu = any && w->pack_min_cpu < c->cpu ? w->pack_min_cpu : c->cpu;
			w->pack_min_mem = any && w->pack_min_mem < c->mem ? w->pack_min_mem : c->mem;
			any = true;
		}
		for (j = 0; j < m && sz[j] != c->milli; j++)
			;
		if (j == m)
			sz[m++] = c->milli;
		n[j] += c->freq;
	}
	w->pack_value = xcalloc(SCHED_MILLI + 1, sizeof(double));
	w->pack_k = K;
	if (!m)
		goto out;
	A = xcalloc((size_t)LP_MAX_ROWS * (size_t)m, sizeof(double));
	/* start with each share alone, as many copies as fit */
	for (int j = 0; j < m; j++, rows++)
		A[(size_t)rows * (size_t)m + (size_t)j] = SCHED_MILLI / sz[j];
	/* cutting planes: while some set of shares on one device is worth
	 * more than the device, add the best set through each share that
	 * violates (several rows per round: far fewer rounds) */
	for (;;) {
		int before = rows;
		simplex(A, rows, m, n, y);
		knapsack(y, sz, m, K, SCHED_MILLI, from);
		for (int j = 0; j < m && rows < LP_MAX_ROWS; j++)
			if (y[j] + K[SCHED_MILLI - sz[j]] > 1 + 1e-7)
				rows = add_pattern(A, rows, m, sz, from, j);
		if (rows == before)
			break;
	}
	/* in milli: a share's value is the part of a device it accounts for.
	 * Rows ran out before no set was worth more than a device (many
	 * shares): scaled down, the values are feasible again. */
	knapsack(y, sz, m, K, SCHED_MILLI, NULL);
	for (int j = 0; j < m; j++) {
		y[j] *= SCHED_MILLI / fmax(K[SCHED_MILLI], 1.0);
		w->pack_value[sz[j]] = y[j];
	}
	/* a share no class has counts as the largest smaller one that has a
	 * value (a task can stand in for any smaller one in a set) */
	for (int l = 1, j; l <= SCHED_MILLI; l++) {
		for (j = 0; j < m && sz[j] != l; j++)
			;
		if (j == m)
			w->pack_value[l] = w->pack_value[l - 1];
	}
	knapsack(y, sz, m, K, SCHED_MILLI, NULL);
	free(A);
out:
	free(sz);
	free(n);
	free(y);
	free(from);
}
