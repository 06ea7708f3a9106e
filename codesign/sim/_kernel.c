/* The chunk-grain replay's event loop, compiled (codesign/sim/replay.py, ``_Replay.run``).
 *
 * This is the Python loop of replay.py written again in C, statement for statement: every floating-point
 * operation that reaches an output is the same IEEE double operation on the same operands in the same
 * order (the build turns off contraction into fused multiply-adds, -ffp-contract=off), so the answers are
 * identical to the bit (tests/test_replay_equivalence.py runs both against the frozen reference). The
 * set-up (flat tables of works, collectives and compute tasks) stays in Python, and so do the rates: the
 * first time a sequence of active chunk-phases appears, the loop calls back into Python, which computes
 * them with platform/pools.py, the one place their formula lives; the answer is memoised here.
 *
 * The Python loop's structures map as follows:
 * - a queue (a dimension's, the SRAM's) was a heap of the priorities present with a FIFO per priority;
 *   here it is one binary heap ordered by (priority, arrival number): the same order, since chunks of a
 *   priority arrive in order;
 * - ``poke`` (dimensions that may start a chunk-phase) was a list, sorted and deduplicated in effect
 *   (a second offer to a dimension that just started is a no-op); here it is a flag per dimension;
 * - the dicts keyed by (collective, iteration) are arrays indexed by n * K + k;
 * - the recordings keep, as Python dicts built here, only the reference iteration's entries (all that
 *   ``_Replay._realized`` reads), inserted in the same order and keyed as ``Realized`` keys them (without
 *   the iteration; a predecessor's iteration as its offset from the reference's), so that Python need not
 *   build them a second time.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EPS 1e-12
/* the argument list's version: replay.py runs a kernel only if it was built from the matching source (an
 * editable install does not rebuild a stale one by itself) */
#define ABI 2

/* ------------------------------------------------------------------ growable heaps */
/* A binary min-heap of TYPE ordered by LESS: NAME##_push and NAME##_pop (of the top, a[0]). */
#define DEFINE_HEAP(NAME, TYPE, LESS)                                                              \
    typedef struct { TYPE *a; Py_ssize_t n, cap; } NAME;                                           \
    static int NAME##_push(NAME *h, TYPE it) {                                                      \
        if (h->n == h->cap) {                                                                       \
            Py_ssize_t cap = h->cap ? 2 * h->cap : 16;                                              \
            TYPE *a = realloc(h->a, (size_t)cap * sizeof(TYPE));                                    \
            if (!a) { PyErr_NoMemory(); return -1; }                                                \
            h->a = a; h->cap = cap;                                                                 \
        }                                                                                           \
        Py_ssize_t i = h->n++;                                                                      \
        while (i > 0) {                                                                             \
            Py_ssize_t p = (i - 1) >> 1;                                                            \
            if (!LESS(&it, &h->a[p])) break;                                                        \
            h->a[i] = h->a[p];                                                                      \
            i = p;                                                                                  \
        }                                                                                           \
        h->a[i] = it;                                                                               \
        return 0;                                                                                   \
    }                                                                                               \
    static void NAME##_pop(NAME *h) {                                                               \
        TYPE last = h->a[--h->n];                                                                   \
        Py_ssize_t n = h->n, i = 0;                                                                 \
        if (!n) return;                                                                             \
        for (;;) {                                                                                  \
            Py_ssize_t c = 2 * i + 1;                                                               \
            if (c >= n) break;                                                                      \
            if (c + 1 < n && LESS(&h->a[c + 1], &h->a[c])) c++;                                     \
            if (!LESS(&h->a[c], &last)) break;                                                      \
            h->a[i] = h->a[c];                                                                      \
            i = c;                                                                                  \
        }                                                                                           \
        h->a[i] = last;                                                                             \
    }

/* a queue's chunk: served by least priority, then earliest arrival */
typedef struct { int64_t prio; int64_t arr; int32_t chunk; } QItem;
static inline int q_less(const QItem *x, const QItem *y) {
    return x->prio < y->prio || (x->prio == y->prio && x->arr < y->arr);
}
DEFINE_HEAP(QHeap, QItem, q_less)

/* a wake-up after a collective's update delay: by time, then sequence */
typedef struct { double t; int64_t s; } Wake;
static inline int w_less(const Wake *x, const Wake *y) { return x->t < y->t || (x->t == y->t && x->s < y->s); }
DEFINE_HEAP(WHeap, Wake, w_less)

/* ------------------------------------------------------------------ open-addressing map, uint64 -> int */
typedef struct { uint64_t *key; int32_t *val; size_t cap, n; } Map;

static inline uint64_t mix(uint64_t x) {
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27; x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static int map_init(Map *m, size_t cap) {
    m->cap = cap; m->n = 0;
    m->key = malloc(cap * sizeof(uint64_t));
    m->val = malloc(cap * sizeof(int32_t));
    if (!m->key || !m->val) { PyErr_NoMemory(); return -1; }
    for (size_t i = 0; i < cap; i++) m->val[i] = -1;
    return 0;
}

static inline int32_t map_get(const Map *m, uint64_t k) {
    size_t i = mix(k) & (m->cap - 1);
    while (m->val[i] >= 0) {
        if (m->key[i] == k) return m->val[i];
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}

static int map_put(Map *m, uint64_t k, int32_t v) {
    if (2 * (m->n + 1) > m->cap) {
        Map g;
        if (map_init(&g, 2 * m->cap) < 0) { free(g.key); free(g.val); return -1; }
        for (size_t i = 0; i < m->cap; i++)
            if (m->val[i] >= 0) {
                size_t j = mix(m->key[i]) & (g.cap - 1);
                while (g.val[j] >= 0) j = (j + 1) & (g.cap - 1);
                g.key[j] = m->key[i]; g.val[j] = m->val[i];
            }
        g.n = m->n;
        free(m->key); free(m->val);
        *m = g;
    }
    size_t i = mix(k) & (m->cap - 1);
    while (m->val[i] >= 0) i = (i + 1) & (m->cap - 1);
    m->key[i] = k; m->val[i] = v; m->n++;
    return 0;
}

/* ------------------------------------------------------------------ the replay's state */
typedef struct { int32_t k, n, c, i; int64_t prio; } Chunk;

typedef struct {
    /* inputs (owned copies) */
    int D, K, J, max_iter, record, lifo, sram_finite, has_order, ref, tl_a, tl_b;
    int64_t BIG;
    int ncls, ntc;
    int *nph, *seq_off, *seqw, *nchunks, *task_cls;
    int *w_dim, *w_cls;
    double *w_wire, *w_inv_alone, *delay, *need, *nominal;
    char *urgent;
    int64_t *opos, *ooff;
    int *wait_off, *wait_k, *wait_back, *rel_off, *rel_k;
    double Ssram;
    PyObject *entry_cb, *comp_cb;

    /* chunks: a pool with a free list */
    Chunk *ch; int32_t nch, capch, *freel; int32_t nfree, capfree;

    /* queues and dimensions */
    QHeap *q; QHeap sq; int64_t arrival;
    int *slot_w; int32_t *slot_chunk; double *slot_start, *rem;
    int *order, *ocls, no;
    char *poke; int npoke;

    /* memo: active sequence -> entry; (its memory rate's value, active or not, task class) -> compute rate,
     * since that is all a compute task's rate depends on (many sequences draw the same memory rate) */
    Map memo, cmemo, mmemo;
    double *e_rates, *e_mem, *e_red; char *e_allpos; int32_t *e_mcls, ne, cape, nmcls;
    double *c_r, *c_h; int32_t nc, capc;

    /* per (collective, iteration) */
    double *done; char *has_done;
    int32_t *rel_left; double *rel_sent; char *rel_seen;
    int32_t *rel_order; int32_t nrel_order;

    /* the clock and its events */
    double now, last, tick_t; int64_t seq, tick_s, issue_seq;
    WHeap wakes;

    /* SRAM */
    double free_, sram_peak; int64_t nsq; int lim_sram;
    /* Python's arithmetic keeps ``free`` an int while only ints (the SRAM size, needs capped at it) entered
     * it, and the peak takes the type of S - free: the result says whether the peak is such an int */
    char *need_int; int free_int, peak_int;
    int leaving_k, leaving_n, leaving_c;  /* leaving_k < 0: none */
    double hbm_peak;

    /* accumulators */
    double a_compute, a_nominal, a_comm_any, a_hbm_comm, a_hbm_compute, a_reduce, a_sram, a_sram_wait;
    double *accd, *alone;

    /* timeline window */
    int64_t tl_comm_from, tl_compute_from; double tl_end;

    /* compute */
    int comp_j, comp_n, comp_tc; double comp_rem, comp_rate, comp_h, compute_started;
    int nn, jj;

    /* recording */
    int32_t *lod;  /* last on dimension: 4 ints per dimension, k < 0 for none */

    /* the timeline's raw records, made into the measured window's rows at the end */
    struct TL { int kind, a, b; double s, e; } *tl; Py_ssize_t ntl, captl;

    /* outputs */
    PyObject *iter_start, *snaps;
    PyObject *rec_start, *rec_end, *rec_pred, *rec_adm, *rec_after, *rec_cstart, *rec_cend;
} St;

/* ------------------------------------------------------------------ reading the inputs */
/* NAME(seq, &len): a malloc'd copy of a sequence of Python numbers as TYPE, read by CONVERT (which returns
 * SRC, -1 with an exception set on failure); NULL with the exception on failure. */
#define DEFINE_READER(NAME, TYPE, SRC, CONVERT)                                                    \
    static TYPE *NAME(PyObject *seq, Py_ssize_t *len) {                                             \
        PyObject *f = PySequence_Fast(seq, "expected a sequence of numbers");                      \
        if (!f) return NULL;                                                                        \
        Py_ssize_t n = PySequence_Fast_GET_SIZE(f);                                                 \
        TYPE *a = malloc((size_t)(n ? n : 1) * sizeof(TYPE));                                       \
        if (!a) { Py_DECREF(f); PyErr_NoMemory(); return NULL; }                                    \
        for (Py_ssize_t i = 0; i < n; i++) {                                                        \
            SRC v = CONVERT(PySequence_Fast_GET_ITEM(f, i));                                        \
            if (v == (SRC)-1 && PyErr_Occurred()) { free(a); Py_DECREF(f); return NULL; }           \
            a[i] = (TYPE)v;                                                                         \
        }                                                                                           \
        Py_DECREF(f);                                                                               \
        if (len) *len = n;                                                                          \
        return a;                                                                                   \
    }
DEFINE_READER(int_array, int, long, PyLong_AsLong)
DEFINE_READER(i64_array, int64_t, long long, PyLong_AsLongLong)
DEFINE_READER(dbl_array, double, double, PyFloat_AsDouble)

/* ------------------------------------------------------------------ recording helpers */
/* d[key] = v, taking both references; either may be NULL (a failed build, whose exception stands) */
static int put(PyObject *d, PyObject *key, PyObject *v) {
    int r = key && v ? PyDict_SetItem(d, key, v) : -1;
    Py_XDECREF(key);
    Py_XDECREF(v);
    return r;
}

static int append_new(PyObject *list, PyObject *v) {
    if (!v) return -1;
    int r = PyList_Append(list, v);
    Py_DECREF(v);
    return r;
}

static int tl_add(St *s, int kind, int a, int b, double start, double end) {
    if (s->ntl == s->captl) {
        Py_ssize_t cap = s->captl ? 2 * s->captl : 1024;
        struct TL *t = realloc(s->tl, (size_t)cap * sizeof(struct TL));
        if (!t) { PyErr_NoMemory(); return -1; }
        s->tl = t; s->captl = cap;
    }
    struct TL r = {kind, a, b, start, end};
    s->tl[s->ntl++] = r;
    return 0;
}

/* ------------------------------------------------------------------ chunks */
static int32_t chunk_new(St *s) {
    if (s->nfree) return s->freel[--s->nfree];
    if (s->nch == s->capch) {
        int32_t cap = s->capch ? 2 * s->capch : 256;
        Chunk *a = realloc(s->ch, (size_t)cap * sizeof(Chunk));
        if (!a) { PyErr_NoMemory(); return -1; }
        s->ch = a; s->capch = cap;
    }
    return s->nch++;
}

static int chunk_free(St *s, int32_t id) {
    if (s->nfree == s->capfree) {
        int32_t cap = s->capfree ? 2 * s->capfree : 256;
        int32_t *a = realloc(s->freel, (size_t)cap * sizeof(int32_t));
        if (!a) { PyErr_NoMemory(); return -1; }
        s->freel = a; s->capfree = cap;
    }
    s->freel[s->nfree++] = id;
    return 0;
}

/* ------------------------------------------------------------------ the loop's functions (replay.py's closures) */
static int try_compute(St *s) {
    if (s->comp_j >= 0 || s->nn >= s->max_iter) return 0;
    int n = s->nn, j = s->jj;
    for (int w = s->wait_off[j]; w < s->wait_off[j + 1]; w++) {
        int m = n - s->wait_back[w];
        if (m < 0) continue;
        int64_t x = (int64_t)m * s->K + s->wait_k[w];
        if (!s->has_done[x] || s->done[x] > s->now + EPS) return 0;
    }
    if (j == 0) {
        if (append_new(s->iter_start, PyFloat_FromDouble(s->now)) < 0) return -1;
        Py_ssize_t ni = PyList_GET_SIZE(s->iter_start);
        if (ni == s->tl_a + 1) {
            s->tl_comm_from = s->max_iter - 5;
            s->tl_compute_from = s->max_iter - 4;
        } else if (ni == s->tl_b + 1) {
            double t_a = PyFloat_AS_DOUBLE(PyList_GET_ITEM(s->iter_start, s->tl_a));
            s->tl_end = t_a + (s->now - t_a) / (double)(s->tl_b - s->tl_a);
        }
        PyObject *accd = PyTuple_New(s->D), *alone = PyTuple_New(s->D);
        if (!accd || !alone) { Py_XDECREF(accd); Py_XDECREF(alone); return -1; }
        for (int d = 0; d < s->D; d++) {
            PyObject *a = PyFloat_FromDouble(s->accd[d]), *b = PyFloat_FromDouble(s->alone[d]);
            if (!a || !b) { Py_XDECREF(a); Py_XDECREF(b); Py_DECREF(accd); Py_DECREF(alone); return -1; }
            PyTuple_SET_ITEM(accd, d, a);
            PyTuple_SET_ITEM(alone, d, b);
        }
        if (append_new(s->snaps, Py_BuildValue("(ddddddddNN)", s->a_compute, s->a_nominal, s->a_comm_any,
                                                s->a_hbm_comm, s->a_hbm_compute, s->a_reduce, s->a_sram,
                                                s->a_sram_wait, accd, alone)) < 0) return -1;
    }
    s->comp_j = j; s->comp_n = n; s->comp_rem = 1.0; s->comp_rate = 0.0; s->comp_tc = s->task_cls[j];
    s->compute_started = s->now;
    if (s->record && n == s->ref && put(s->rec_cstart, PyLong_FromLong(j), PyFloat_FromDouble(s->now)) < 0)
        return -1;
    s->a_nominal += s->nominal[j];
    return 0;
}

static int collective_done(St *s, int k, int n) {
    double t = s->now + s->delay[k];
    int64_t x = (int64_t)n * s->K + k;
    s->done[x] = t;
    s->has_done[x] = 1;
    if (s->delay[k] > 0) {
        s->seq += 1;
        Wake w = {t, s->seq};
        return WHeap_push(&s->wakes, w);
    }
    return try_compute(s);
}

static int enqueue(St *s, int32_t cid, int d) {
    QItem it = {s->ch[cid].prio, s->arrival++, cid};
    if (QHeap_push(&s->q[d], it) < 0) return -1;
    if (s->slot_w[d] < 0 && !s->poke[d]) { s->poke[d] = 1; s->npoke++; }
    return 0;
}

static int admit(St *s) {
    while (s->sq.n) {
        int32_t cid = s->sq.a[0].chunk;
        Chunk *c = &s->ch[cid];
        double nd = s->need[c->k];
        if (nd > s->free_ * (1 + 1e-12)) {
            s->lim_sram = 1;
            return 0;
        }
        QHeap_pop(&s->sq);
        s->nsq -= 1;
        if (s->record && c->n == s->ref) {
            if (put(s->rec_adm, Py_BuildValue("(ii)", c->k, c->c), PyFloat_FromDouble(s->now)) < 0) return -1;
            PyObject *after;
            if (s->leaving_k < 0) { after = Py_None; Py_INCREF(after); }
            else after = Py_BuildValue("(iii)", s->leaving_k, s->leaving_c, s->leaving_n - s->ref);
            if (put(s->rec_after, Py_BuildValue("(ii)", c->k, c->c), after) < 0) return -1;
        }
        s->free_ -= nd;
        s->free_int &= s->need_int[c->k];
        if (s->Ssram - s->free_ > s->sram_peak) {
            s->sram_peak = s->Ssram - s->free_;
            s->peak_int = s->free_int;
        }
        if (enqueue(s, cid, s->w_dim[s->seqw[s->seq_off[c->k]]]) < 0) return -1;
    }
    return 0;
}

static int release(St *s, int k, int n) {
    if (!s->nph[k]) return collective_done(s, k, n);
    int64_t u = s->urgent[k] ? 0 : 1, x;
    if (s->has_order) {
        x = ((int64_t)n - s->ooff[k]) * s->K + s->opos[k];
    } else {
        s->issue_seq += 1;
        x = s->lifo ? -s->issue_seq : s->issue_seq;
    }
    int64_t prio = u * s->BIG + x;
    int64_t r = (int64_t)n * s->K + k;
    if (!s->rel_seen[r]) { s->rel_seen[r] = 1; s->rel_order[s->nrel_order++] = (int32_t)r; }
    s->rel_left[r] = s->nchunks[k];
    s->rel_sent[r] = 0.0;
    int nc = s->nchunks[k];
    int d = s->w_dim[s->seqw[s->seq_off[k]]];
    QHeap *into = s->sram_finite ? &s->sq : &s->q[d];  /* with an SRAM, its queue admits them to d's */
    for (int c = 0; c < nc; c++) {
        int32_t id = chunk_new(s);
        if (id < 0) return -1;
        Chunk ch = {k, n, c, 0, prio};
        s->ch[id] = ch;
        QItem it = {prio, s->arrival++, id};
        if (QHeap_push(into, it) < 0) return -1;
    }
    if (s->sram_finite) {
        s->nsq += nc;
        return admit(s);
    }
    if (s->record && n == s->ref) {
        for (int c = 0; c < nc; c++) {
            if (put(s->rec_adm, Py_BuildValue("(ii)", k, c), PyFloat_FromDouble(s->now)) < 0) return -1;
            Py_INCREF(Py_None);
            if (put(s->rec_after, Py_BuildValue("(ii)", k, c), Py_None) < 0) return -1;
        }
    }
    if (s->slot_w[d] < 0 && !s->poke[d]) { s->poke[d] = 1; s->npoke++; }
    return 0;
}

static int compute_done(St *s) {
    int j = s->comp_j, n = s->comp_n;
    s->comp_j = -1;
    if (s->record && n == s->ref && put(s->rec_cend, PyLong_FromLong(j), PyFloat_FromDouble(s->now)) < 0)
        return -1;
    if (n >= s->tl_compute_from && s->compute_started < s->tl_end)
        if (tl_add(s, 1, j, 0, s->compute_started, s->now) < 0) return -1;
    s->jj += 1;
    if (s->jj == s->J) { s->jj = 0; s->nn += 1; }
    for (int r = s->rel_off[j]; r < s->rel_off[j + 1]; r++)
        if (release(s, s->rel_k[r], n) < 0) return -1;
    return try_compute(s);
}

/* the rates of the active sequence (its memo entry), computed in Python the first time */
static int32_t entry_of(St *s) {
    uint64_t key = 0;
    for (int i = 0; i < s->no; i++) key = key * (uint64_t)(s->ncls + 1) + (uint64_t)(s->ocls[i] + 1);
    int32_t e = map_get(&s->memo, key);
    if (e >= 0) return e;
    PyObject *t = PyTuple_New(s->no);
    if (!t) return -1;
    for (int i = 0; i < s->no; i++) {
        PyObject *v = PyLong_FromLong(s->ocls[i]);
        if (!v) { Py_DECREF(t); return -1; }
        PyTuple_SET_ITEM(t, i, v);
    }
    PyObject *res = PyObject_CallOneArg(s->entry_cb, t);
    Py_DECREF(t);
    if (!res) return -1;
    PyObject *rates;
    double mem, red;
    int allpos;
    if (!PyArg_ParseTuple(res, "Oddp", &rates, &mem, &red, &allpos)) { Py_DECREF(res); return -1; }
    if (s->ne == s->cape) {
        int32_t cap = s->cape ? 2 * s->cape : 64;
        double *r = realloc(s->e_rates, (size_t)cap * (size_t)(s->D ? s->D : 1) * sizeof(double));
        if (r) s->e_rates = r;
        double *m = realloc(s->e_mem, (size_t)cap * sizeof(double));
        if (m) s->e_mem = m;
        double *d = realloc(s->e_red, (size_t)cap * sizeof(double));
        if (d) s->e_red = d;
        char *a = realloc(s->e_allpos, (size_t)cap);
        if (a) s->e_allpos = a;
        int32_t *mc = realloc(s->e_mcls, (size_t)cap * sizeof(int32_t));
        if (mc) s->e_mcls = mc;
        if (!r || !m || !d || !a || !mc) { Py_DECREF(res); PyErr_NoMemory(); return -1; }
        s->cape = cap;
    }
    e = s->ne;
    double *er = s->e_rates + (size_t)e * (size_t)s->D;
    for (int i = 0; i < s->no; i++) {
        double v = PyFloat_AsDouble(PyTuple_GET_ITEM(rates, i));
        if (v == -1.0 && PyErr_Occurred()) { Py_DECREF(res); return -1; }
        er[i] = v;
    }
    s->e_mem[e] = mem;
    s->e_red[e] = red;
    s->e_allpos[e] = (char)allpos;
    Py_DECREF(res);
    uint64_t bits;
    memcpy(&bits, &mem, sizeof bits);
    int32_t mc = map_get(&s->mmemo, bits);
    if (mc < 0) {
        mc = s->nmcls++;
        if (map_put(&s->mmemo, bits, mc) < 0) return -1;
    }
    s->e_mcls[e] = mc;
    if (map_put(&s->memo, key, e) < 0) return -1;
    s->ne++;
    return e;
}

/* the running compute task's (rate, HBM draw) under memo entry e, computed in Python the first time */
static int32_t comp_of(St *s, int32_t e) {
    uint64_t key = (((uint64_t)s->e_mcls[e] * (uint64_t)s->ntc + (uint64_t)s->comp_tc) << 1) | (s->no ? 1u : 0u);
    int32_t c = map_get(&s->cmemo, key);
    if (c >= 0) return c;
    PyObject *res = PyObject_CallFunction(s->comp_cb, "Odi", s->no ? Py_True : Py_False, s->e_mem[e], s->comp_tc);
    if (!res) return -1;
    double r, h;
    if (!PyArg_ParseTuple(res, "dd", &r, &h)) { Py_DECREF(res); return -1; }
    Py_DECREF(res);
    double total = s->e_mem[e] + h;
    if (total > s->hbm_peak) s->hbm_peak = total;
    if (s->nc == s->capc) {
        int32_t cap = s->capc ? 2 * s->capc : 64;
        double *a = realloc(s->c_r, (size_t)cap * sizeof(double));
        if (a) s->c_r = a;
        double *b = realloc(s->c_h, (size_t)cap * sizeof(double));
        if (b) s->c_h = b;
        if (!a || !b) { PyErr_NoMemory(); return -1; }
        s->capc = cap;
    }
    c = s->nc++;
    s->c_r[c] = r;
    s->c_h[c] = h;
    if (map_put(&s->cmemo, key, c) < 0) return -1;
    return c;
}

/* advance every accumulator over dt (rates constant since the last event) */
static inline void accumulate(St *s, double dt, double cur_mem, double cur_red) {
    if (s->no) s->a_comm_any += dt;
    if (cur_mem != 0.0) s->a_hbm_comm += cur_mem * dt;
    if (cur_red != 0.0) s->a_reduce += cur_red * dt;
    if (s->comp_j >= 0) {
        s->comp_rem -= s->comp_rate * dt;
        s->a_compute += dt;
        s->a_hbm_compute += s->comp_h * dt;
    }
    if (s->sram_finite) s->a_sram += (s->Ssram - s->free_) * dt;
    if (s->nsq) s->a_sram_wait += (double)s->nsq * dt;
}

static int loop(St *s) {
    const int D = s->D;
    int fin[64];
    double cur_mem = 0.0, cur_red = 0.0;
    const double *cur_rates = NULL;
    if (try_compute(s) < 0) return -1;
    for (uint32_t tick = 1;; tick++) {
        if (!(tick & 0xffff) && PyErr_CheckSignals() < 0) return -1;  /* Ctrl-C stops a long replay */
        /* start: every idle dimension takes its most urgent queued chunk-phase, in dimension order */
        if (s->npoke) {
            for (int d = 0; d < D; d++) {
                if (!s->poke[d]) continue;
                s->poke[d] = 0;
                QHeap *qh = &s->q[d];
                if (qh->n && s->slot_w[d] < 0) {
                    int32_t cid = qh->a[0].chunk;
                    QHeap_pop(qh);
                    Chunk *c = &s->ch[cid];
                    int wid = s->seqw[s->seq_off[c->k] + c->i];
                    s->slot_w[d] = wid;
                    s->slot_chunk[d] = cid;
                    s->slot_start[d] = s->now;
                    s->rem[d] = 1.0;
                    s->order[s->no] = d;
                    s->ocls[s->no] = s->w_cls[wid];
                    s->no++;
                    if (s->record) {
                        int32_t *l = s->lod + 4 * d;
                        if (c->n == s->ref) {
                            if (put(s->rec_start, Py_BuildValue("(iii)", c->k, c->c, c->i),
                                    PyFloat_FromDouble(s->now)) < 0)
                                return -1;
                            PyObject *p;
                            if (l[0] < 0) { p = Py_None; Py_INCREF(p); }
                            else p = Py_BuildValue("(iiii)", l[0], l[2], l[3], l[1] - s->ref);
                            if (put(s->rec_pred, Py_BuildValue("(iii)", c->k, c->c, c->i), p) < 0) return -1;
                        }
                        l[0] = c->k; l[1] = c->n; l[2] = c->c; l[3] = c->i;
                    }
                    s->alone[d] += s->w_inv_alone[wid];
                }
            }
            s->npoke = 0;
        }

        /* rates of the active set, and the next completion */
        int32_t e = entry_of(s);
        if (e < 0) return -1;
        double nxt = INFINITY;
        cur_rates = s->e_rates + (size_t)e * (size_t)D;
        if (s->e_allpos[e]) {
            for (int i = 0; i < s->no; i++) {
                double x = s->rem[s->order[i]];
                if (x < 0.0) x = 0.0;
                x /= cur_rates[i];
                if (x < nxt) nxt = x;
            }
        } else {
            for (int i = 0; i < s->no; i++) {
                double x = s->rem[s->order[i]], r = cur_rates[i];
                x = r > 0 ? ((0.0 > x ? 0.0 : x) / r) : INFINITY;
                if (x < nxt) nxt = x;
            }
        }
        cur_mem = s->e_mem[e];
        cur_red = s->e_red[e];
        if (s->comp_j >= 0) {
            int32_t c = comp_of(s, e);
            if (c < 0) return -1;
            s->comp_rate = s->c_r[c];
            s->comp_h = s->c_h[c];
            double x = s->comp_rate > 0 ? ((0.0 > s->comp_rem ? 0.0 : s->comp_rem) / s->comp_rate) : INFINITY;
            if (x < nxt) nxt = x;
        } else if (cur_mem > s->hbm_peak) {
            s->hbm_peak = cur_mem;
        }
        if (nxt < INFINITY) {
            s->seq += 1;
            s->tick_t = s->now + nxt;
            s->tick_s = s->seq;
        } else {
            s->tick_t = INFINITY;
        }

        /* the next event: a wake-up, or the pending completion, whichever is first in (time, sequence) */
        if (s->wakes.n) {
            Wake w0 = s->wakes.a[0];
            if (w0.t < s->tick_t || (w0.t == s->tick_t && w0.s < s->tick_s)) {
                WHeap_pop(&s->wakes);
                s->now = w0.t;
                double dt = s->now - s->last;
                if (dt > 0) {
                    for (int i = 0; i < s->no; i++) {
                        int d = s->order[i];
                        s->rem[d] -= cur_rates[i] * dt;
                        s->accd[d] += dt;
                    }
                    accumulate(s, dt, cur_mem, cur_red);
                    s->last = s->now;
                }
                if (try_compute(s) < 0) return -1;
                continue;
            }
        }
        if (s->tick_t == INFINITY) break;
        s->now = s->tick_t;

        /* a completion: advance as above, and find what finished */
        double now = s->now;
        double tol = 1e-15 + 4e-16 * now;
        int nfin = 0;
        double dt = now - s->last;
        if (dt > 0) {
            for (int i = 0; i < s->no; i++) {
                int d = s->order[i];
                double r = cur_rates[i];
                double x = s->rem[d] - r * dt;
                s->rem[d] = x;
                s->accd[d] += dt;
                if (x <= 1e-9 || x <= tol * r) fin[nfin++] = d;
            }
            accumulate(s, dt, cur_mem, cur_red);
            s->last = now;
        } else {
            for (int i = 0; i < s->no; i++) {
                int d = s->order[i];
                double x = s->rem[d];
                if (x <= 1e-9 || x <= tol * cur_rates[i]) fin[nfin++] = d;
            }
        }
        for (int f = 0; f < nfin; f++) {
            int d = fin[f];
            int i = 0;
            while (s->order[i] != d) i++;
            memmove(s->order + i, s->order + i + 1, (size_t)(s->no - i - 1) * sizeof(int));
            memmove(s->ocls + i, s->ocls + i + 1, (size_t)(s->no - i - 1) * sizeof(int));
            s->no--;
            int wid = s->slot_w[d];
            s->slot_w[d] = -1;
            if (!s->poke[d]) { s->poke[d] = 1; s->npoke++; }
            int32_t cid = s->slot_chunk[d];
            Chunk *c = &s->ch[cid];
            int k = c->k, n = c->n;
            if (s->record && n == s->ref
                && put(s->rec_end, Py_BuildValue("(iii)", k, c->c, c->i), PyFloat_FromDouble(now)) < 0) return -1;
            int64_t r = (int64_t)n * s->K + k;
            s->rel_sent[r] += s->w_wire[wid];
            if (n >= s->tl_comm_from && s->slot_start[d] < s->tl_end)
                if (tl_add(s, 0, d, k, s->slot_start[d], now) < 0) return -1;
            int ph = c->i + 1;
            c->i = ph;
            if (ph < s->nph[k]) {
                if (enqueue(s, cid, s->w_dim[s->seqw[s->seq_off[k] + ph]]) < 0) return -1;
                continue;
            }
            if (s->sram_finite) {
                s->free_ += s->need[k];
                s->free_int &= s->need_int[k];
                s->leaving_k = k; s->leaving_n = n; s->leaving_c = c->c;
                if (admit(s) < 0) return -1;
                s->leaving_k = -1;
            }
            if (chunk_free(s, cid) < 0) return -1;
            s->rel_left[r] -= 1;
            if (s->rel_left[r] == 0 && collective_done(s, k, n) < 0) return -1;
        }
        if (s->comp_j >= 0 && (s->comp_rem <= 1e-9 || s->comp_rem <= tol * s->comp_rate))
            if (compute_done(s) < 0) return -1;
    }
    return 0;
}

static void st_free(St *s) {
    free(s->nph); free(s->seq_off); free(s->seqw); free(s->nchunks); free(s->task_cls);
    free(s->w_dim); free(s->w_cls); free(s->w_wire); free(s->w_inv_alone); free(s->delay); free(s->need);
    free(s->nominal); free(s->urgent); free(s->need_int); free(s->opos); free(s->ooff);
    free(s->wait_off); free(s->wait_k); free(s->wait_back); free(s->rel_off); free(s->rel_k);
    free(s->ch); free(s->freel);
    if (s->q) for (int d = 0; d < s->D; d++) free(s->q[d].a);
    free(s->q); free(s->sq.a);
    free(s->slot_w); free(s->slot_chunk); free(s->slot_start); free(s->rem); free(s->order); free(s->ocls);
    free(s->poke);
    free(s->memo.key); free(s->memo.val); free(s->cmemo.key); free(s->cmemo.val);
    free(s->e_rates); free(s->e_mem); free(s->e_red); free(s->e_allpos); free(s->e_mcls); free(s->c_r); free(s->c_h);
    free(s->mmemo.key); free(s->mmemo.val); free(s->tl);
    free(s->done); free(s->has_done); free(s->rel_left); free(s->rel_sent); free(s->rel_seen); free(s->rel_order);
    free(s->wakes.a); free(s->accd); free(s->alone); free(s->lod);
    Py_XDECREF(s->iter_start); Py_XDECREF(s->snaps);
    Py_XDECREF(s->rec_start); Py_XDECREF(s->rec_end); Py_XDECREF(s->rec_pred); Py_XDECREF(s->rec_adm);
    Py_XDECREF(s->rec_after); Py_XDECREF(s->rec_cstart); Py_XDECREF(s->rec_cend);
}

/* flatten a list of lists of ints into (offsets, values) */
static int flat(PyObject *lists, int **off, int **val, int **val2) {
    PyObject *f = PySequence_Fast(lists, "expected a sequence of sequences");
    if (!f) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f), total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t m = PySequence_Size(PySequence_Fast_GET_ITEM(f, i));
        if (m < 0) { Py_DECREF(f); return -1; }
        total += val2 ? m / 2 : m;
    }
    *off = malloc((size_t)(n + 1) * sizeof(int));
    *val = malloc((size_t)(total ? total : 1) * sizeof(int));
    if (val2) *val2 = malloc((size_t)(total ? total : 1) * sizeof(int));
    if (!*off || !*val || (val2 && !*val2)) { Py_DECREF(f); PyErr_NoMemory(); return -1; }
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        (*off)[i] = (int)at;
        Py_ssize_t m;
        int *a = int_array(PySequence_Fast_GET_ITEM(f, i), &m);
        if (!a) { Py_DECREF(f); return -1; }
        if (val2) {
            for (Py_ssize_t x = 0; x < m / 2; x++) { (*val)[at] = a[2 * x]; (*val2)[at] = a[2 * x + 1]; at++; }
        } else {
            for (Py_ssize_t x = 0; x < m; x++) (*val)[at++] = a[x];
        }
        free(a);
    }
    (*off)[n] = (int)at;
    Py_DECREF(f);
    return 0;
}

/* the timeline's rows the measured window [t_a, t_a + period] shows, clipped to it and in its time, as
 * replay.py's _Replay._result makes them: (row, name, kind, start, end) */
static PyObject *window(St *s, PyObject *dim_row, PyObject *comm_name, PyObject *cnames) {
    PyObject *out = PyList_New(0);
    if (!out || PyList_GET_SIZE(s->iter_start) < s->max_iter) return out;
    double t_a = PyFloat_AS_DOUBLE(PyList_GET_ITEM(s->iter_start, s->max_iter - 3));
    double t_b = PyFloat_AS_DOUBLE(PyList_GET_ITEM(s->iter_start, s->max_iter - 1));
    double t_end = t_a + (t_b - t_a) / 2.0;
    PyObject *comm = PyUnicode_FromString("comm");
    if (!comm) { Py_DECREF(out); return NULL; }
    for (Py_ssize_t i = 0; i < s->ntl; i++) {
        struct TL *r = &s->tl[i];
        if (!(r->e > t_a && r->s < t_end)) continue;
        double a = (t_a > r->s ? t_a : r->s) - t_a, b = (t_end < r->e ? t_end : r->e) - t_a;
        PyObject *row;
        if (r->kind == 0) {
            row = Py_BuildValue("(OOOdd)", PyList_GET_ITEM(dim_row, r->a), PyList_GET_ITEM(comm_name, r->b), comm, a,
                                b);
        } else {
            PyObject *nk = PyList_GET_ITEM(cnames, r->a);
            row = Py_BuildValue("(sOOdd)", "compute", PyTuple_GET_ITEM(nk, 0), PyTuple_GET_ITEM(nk, 1), a, b);
        }
        if (append_new(out, row) < 0) { Py_DECREF(comm); Py_DECREF(out); return NULL; }
    }
    Py_DECREF(comm);
    return out;
}

static void *zalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) PyErr_NoMemory();
    return p;
}

/* run(D, K, max_iter, seqw, w_dim, w_cls, w_wire, w_inv_alone, nchunks, delay, urgent, need, opos, ooff,
 *     task_cls, ncls, ntc, nominal, waits, releases, BIG, lifo, sram_finite, has_order, record, ref, tl_a, tl_b,
 *     S, S_is_int, need_is_int, dim_row, comm_name, cnames, entry, comp_entry)
 *   -> (events, iter_start, snaps, timeline, lim_sram, sram_peak, sram_peak_is_int, hbm_peak, sent, rec)
 * See _Replay._run_compiled in replay.py for what each is. */
static PyObject *replay_run(PyObject *self, PyObject *args) {
    (void)self;
    St st;
    memset(&st, 0, sizeof st);
    St *s = &st;
    PyObject *o_seqw, *o_wdim, *o_wcls, *o_wwire, *o_winv, *o_nchunks, *o_delay, *o_urgent, *o_need;
    PyObject *o_opos, *o_ooff, *o_tcls, *o_nominal, *o_waits, *o_rels, *o_need_int, *dim_row, *comm_name, *cnames;
    long long big;
    PyObject *result = NULL;
    int *need_int = NULL;
    if (!PyArg_ParseTuple(args, "iiiOOOOOOOOOOOOiiOOOLppppiiidpOO!O!O!OO",
                          &s->D, &s->K, &s->max_iter, &o_seqw, &o_wdim, &o_wcls, &o_wwire, &o_winv,
                          &o_nchunks, &o_delay, &o_urgent, &o_need, &o_opos, &o_ooff, &o_tcls,
                          &s->ncls, &s->ntc, &o_nominal, &o_waits, &o_rels, &big, &s->lifo, &s->sram_finite,
                          &s->has_order, &s->record, &s->ref, &s->tl_a, &s->tl_b, &s->Ssram, &s->free_int,
                          &o_need_int, &PyList_Type, &dim_row, &PyList_Type, &comm_name, &PyList_Type, &cnames,
                          &s->entry_cb, &s->comp_cb))
        return NULL;
    if (s->D > 64) {
        PyErr_SetString(PyExc_ValueError, "the compiled replay takes at most 64 dimensions");
        return NULL;
    }
    s->BIG = (int64_t)big;
    Py_ssize_t J, nk;
    int *urgent = NULL;
    if (flat(o_seqw, &s->seq_off, &s->seqw, NULL) < 0) goto done;
    if (!(s->w_dim = int_array(o_wdim, NULL)) || !(s->w_cls = int_array(o_wcls, NULL))) goto done;
    if (!(s->w_wire = dbl_array(o_wwire, NULL)) || !(s->w_inv_alone = dbl_array(o_winv, NULL))) goto done;
    if (!(s->nchunks = int_array(o_nchunks, &nk)) || !(s->delay = dbl_array(o_delay, NULL))) goto done;
    if (!(urgent = int_array(o_urgent, NULL)) || !(s->need = dbl_array(o_need, NULL))) goto done;
    if (!(need_int = int_array(o_need_int, NULL))) goto done;
    if (!(s->opos = i64_array(o_opos, NULL)) || !(s->ooff = i64_array(o_ooff, NULL))) goto done;
    if (!(s->task_cls = int_array(o_tcls, &J)) || !(s->nominal = dbl_array(o_nominal, NULL))) goto done;
    if (flat(o_waits, &s->wait_off, &s->wait_k, &s->wait_back) < 0) goto done;
    if (flat(o_rels, &s->rel_off, &s->rel_k, NULL) < 0) goto done;
    s->J = (int)J;
    const int D = s->D, K = s->K;
    if (!(s->nph = zalloc((size_t)K, sizeof(int))) || !(s->urgent = zalloc((size_t)K, 1))
        || !(s->need_int = zalloc((size_t)K, 1)))
        goto done;
    for (int k = 0; k < K; k++) {
        s->nph[k] = s->seq_off[k + 1] - s->seq_off[k];
        s->urgent[k] = (char)urgent[k];
        s->need_int[k] = (char)need_int[k];
    }
    size_t KN = (size_t)K * (size_t)s->max_iter;
    if (!(s->q = zalloc((size_t)D, sizeof(QHeap))) || !(s->slot_w = zalloc((size_t)D, sizeof(int)))
        || !(s->slot_chunk = zalloc((size_t)D, sizeof(int32_t))) || !(s->slot_start = zalloc((size_t)D, sizeof(double)))
        || !(s->rem = zalloc((size_t)D, sizeof(double))) || !(s->order = zalloc((size_t)D, sizeof(int)))
        || !(s->ocls = zalloc((size_t)D, sizeof(int))) || !(s->poke = zalloc((size_t)D, 1))
        || !(s->accd = zalloc((size_t)D, sizeof(double))) || !(s->alone = zalloc((size_t)D, sizeof(double)))
        || !(s->lod = zalloc(4 * (size_t)D, sizeof(int32_t)))
        || !(s->done = zalloc(KN, sizeof(double))) || !(s->has_done = zalloc(KN, 1))
        || !(s->rel_left = zalloc(KN, sizeof(int32_t))) || !(s->rel_sent = zalloc(KN, sizeof(double)))
        || !(s->rel_seen = zalloc(KN, 1)) || !(s->rel_order = zalloc(KN, sizeof(int32_t))))
        goto done;
    if (map_init(&s->memo, 1024) < 0 || map_init(&s->cmemo, 1024) < 0 || map_init(&s->mmemo, 1024) < 0) goto done;
    for (int d = 0; d < D; d++) {
        s->slot_w[d] = -1;
        s->poke[d] = 1;
        s->lod[4 * d] = -1;
    }
    s->npoke = D;
    s->free_ = s->Ssram;
    s->leaving_k = -1;
    s->tick_t = INFINITY;
    s->tl_comm_from = s->tl_compute_from = (int64_t)1 << 62;
    s->tl_end = INFINITY;
    s->comp_j = -1;
    if (!(s->iter_start = PyList_New(0)) || !(s->snaps = PyList_New(0))) goto done;
    if (s->record) {
        if (!(s->rec_start = PyDict_New()) || !(s->rec_end = PyDict_New()) || !(s->rec_pred = PyDict_New())
            || !(s->rec_adm = PyDict_New()) || !(s->rec_after = PyDict_New()) || !(s->rec_cstart = PyDict_New())
            || !(s->rec_cend = PyDict_New()))
            goto done;
    }

    if (loop(s) < 0) goto done;

    PyObject *sent = PyList_New(s->nrel_order);
    if (!sent) goto done;
    for (int32_t i = 0; i < s->nrel_order; i++) {
        int32_t r = s->rel_order[i];
        PyObject *v = Py_BuildValue("((ii)d)", r % K, r / K, s->rel_sent[r]);
        if (!v) { Py_DECREF(sent); goto done; }
        PyList_SET_ITEM(sent, i, v);
    }
    PyObject *rec;
    if (s->record) {
        rec = Py_BuildValue("(OOOOOOO)", s->rec_start, s->rec_end, s->rec_pred, s->rec_adm, s->rec_after,
                            s->rec_cstart, s->rec_cend);
        if (!rec) { Py_DECREF(sent); goto done; }
    } else {
        rec = Py_None;
        Py_INCREF(rec);
    }
    PyObject *timeline = window(s, dim_row, comm_name, cnames);
    if (!timeline) { Py_DECREF(sent); Py_DECREF(rec); goto done; }
    result = Py_BuildValue("(LOONNdNdNN)", (long long)s->seq, s->iter_start, s->snaps, timeline,
                           PyBool_FromLong(s->lim_sram), s->sram_peak, PyBool_FromLong(s->peak_int), s->hbm_peak,
                           sent, rec);
done:
    free(urgent);
    free(need_int);
    st_free(s);
    return result;
}

static PyMethodDef methods[] = {
    {"run", replay_run, METH_VARARGS, "Run the replay's event loop (codesign/sim/replay.py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernel", NULL, -1, methods};

PyMODINIT_FUNC PyInit__kernel(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddIntConstant(m, "ABI", ABI) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
