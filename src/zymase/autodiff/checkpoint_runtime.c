/* Binomial checkpointing of a time loop under a tape limit (autodiff/checkpoint.py).

   The generated code hands this runtime one loop, outlined into a step function that runs
   one iteration on an environment record (the loop-carried registers, the loop's inputs and
   its exit flag), and the memory regions that make up the loop-carried state: the record
   itself and every object the loop body stores to. The forward sweep snapshots the state at
   iteration 0 and runs the loop to its end (counting the iterations); the reverse sweep
   reverses the iterations last to first, each by one call of the step's combined derivative
   (which tapes that one iteration), from a state recomputed from the nearest snapshot.
   Snapshots are placed by Griewank's binomial rule (revolve) for the trip count the forward
   sweep found, as many as fit in half the limit (the other half is left to the tape of the
   one iteration being reversed). In vector mode (width N) the state is still one (one
   schedule, one set of snapshots and recomputations) and each iteration is reversed by one
   call of the step's width-N derivative; only the shadows are N: N shadow records and N
   shadows of each stored-to object. The functions are linked into each module that uses
   them and made internal (llvm/toolchain.link_c_runtime). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* (the second record holds the loop's pointers into constant memory: no shadows; at width
   N > 1, denv is an array of the N lanes' shadow records) */
typedef void (*zymase_step_fn)(void *env, void *constants);
typedef void (*zymase_reverse_step_fn)(void *env, void *denv, void *constants);

struct zymase_region {
    char *data;
    int64_t bytes;
};

struct zymase_snapshot {
    int64_t iteration;
    char *data;
};

struct zymase_checkpoints {
    int64_t nregions, state_bytes, iterations, capacity, depth, limit, nslots, width;
    void *constants;
    struct zymase_region *regions;
    char **shadows;         /* the shadows of each stored-to object (regions 1..), lane by lane */
    char ***slots;          /* (record slot, the lanes' shadow record slots) of each pointer slot */
    struct zymase_snapshot *stack;
    const char *ambiguous;  /* the error line for a pointer at the boundary of two objects */
    int64_t ambiguous_bytes;
};

static void *zymase_ckpt_alloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "zymase: checkpointing: out of memory (%zu bytes)\n", n);
        abort();
    }
    return p;
}

static void zymase_ckpt_save(struct zymase_checkpoints *c, int64_t iteration) {
    struct zymase_snapshot *s = &c->stack[c->depth++];
    s->iteration = iteration;
    if (!s->data)
        s->data = zymase_ckpt_alloc((size_t)c->state_bytes);
    char *at = s->data;
    for (int64_t r = 0; r < c->nregions; r++) {
        memcpy(at, c->regions[r].data, (size_t)c->regions[r].bytes);
        at += c->regions[r].bytes;
    }
}

static void zymase_ckpt_restore(const struct zymase_checkpoints *c, const struct zymase_snapshot *s) {
    const char *at = s->data;
    for (int64_t r = 0; r < c->nregions; r++) {
        memcpy(c->regions[r].data, at, (size_t)c->regions[r].bytes);
        at += c->regions[r].bytes;
    }
}

/* C(s + r, s), saturated (only compared with trip counts) */
static double zymase_binomial(int64_t s, int64_t r) {
    double b = 1.0;
    for (int64_t k = 1; k <= r; k++) {
        b = b * (double)(s + k) / (double)k;
        if (b > 1e18)
            return 1e18;
    }
    return b;
}

/* How many iterations to advance from a snapshot before taking the next one, when m
   iterations are left to reverse and c snapshots (the current one included) may be used:
   with r the least number of repetitions such that C(c + r, c) >= m, the part after the new
   snapshot must be reversible with c - 1 snapshots in r repetitions. */
static int64_t zymase_ckpt_advance(int64_t m, int64_t c) {
    int64_t r = 0;
    while (zymase_binomial(c, r) < (double)m)
        r++;
    double right = zymase_binomial(c - 1, r);
    int64_t k = m - (int64_t)(right < (double)m ? right : (double)m);
    return k < 1 ? 1 : k;
}

/* The stored-to object a pointer points into, or is just past; 0 if none. The code zymase
   emits leaves room after each stored-to stack object (checkpoint.py, _pad_stack_objects),
   so one past the end of one is never the start of another; heap blocks carry allocator
   headers, and their shadows are allocated between them. Should two stored-to objects
   still lie side by side and a carried pointer be at the end of one and the start of the
   other, its shadow cannot be told: refused (a guess would be a silent wrong adjoint). */
static int64_t zymase_ckpt_region_of(const struct zymase_checkpoints *c, const char *p) {
    int64_t into = 0, past = 0;
    for (int64_t r = 1; r < c->nregions; r++) {
        const char *base = c->regions[r].data;
        if (p >= base && p < base + c->regions[r].bytes)
            into = into ? into : r;
        else if (p == base + c->regions[r].bytes)
            past = past ? past : r;
    }
    if (into && past && p == c->regions[into].data) {
        fwrite(c->ambiguous, 1, (size_t)c->ambiguous_bytes, stderr);
        abort();
    }
    return into ? into : past;
}

/* The shadows of the pointer slots (in the record, and the stored-to local pointer
   variables) rebuilt from the primal pointers: a pointer into a stored-to object gets the
   same offset into that object's shadow, in each lane (the loop's inputs into other
   objects are not listed: their shadows the caller stored and nothing changes). */
static void zymase_ckpt_shadows(const struct zymase_checkpoints *c) {
    int64_t w = c->width;
    for (int64_t j = 0; j < c->nslots; j++) {
        char *p = *c->slots[(1 + w) * j];
        int64_t r = zymase_ckpt_region_of(c, p);
        if (r > 0)
            for (int64_t k = 0; k < w; k++)
                *c->slots[(1 + w) * j + 1 + k] = c->shadows[(r - 1) * w + k] + (p - c->regions[r].data);
    }
}

static void zymase_ckpt_run(zymase_step_fn step, void *env, void *constants, int64_t from, int64_t to) {
    for (int64_t i = from; i < to; i++)
        step(env, constants);
}

/* Forward sweep: the state at iteration 0 snapshotted, the loop run to its exit. The table:
   (address, bytes) of the record and of each stored-to object, then the shadows of each
   object (width of them, lane by lane), then for each pointer slot its address in the
   record and in each lane's shadow record. */
void *__zymase_ckpt_forward(void *env, void *constants, const char *done, zymase_step_fn step, const int64_t *table,
                            int64_t nroots, int64_t nslots, int64_t limit, int64_t width, const char *ambiguous,
                            int64_t ambiguous_bytes) {
    struct zymase_checkpoints *c = zymase_ckpt_alloc(sizeof *c);
    memset(c, 0, sizeof *c);
    int64_t nregions = nroots + 1;
    c->nregions = nregions;
    c->nslots = nslots;
    c->width = width;
    c->constants = constants;
    c->limit = limit;
    c->ambiguous = ambiguous;
    c->ambiguous_bytes = ambiguous_bytes;
    c->regions = zymase_ckpt_alloc(sizeof(struct zymase_region) * (size_t)nregions);
    for (int64_t r = 0; r < nregions; r++) {
        c->regions[r].data = (char *)(intptr_t)table[2 * r];
        c->regions[r].bytes = table[2 * r + 1];
        c->state_bytes += table[2 * r + 1];
    }
    c->shadows = zymase_ckpt_alloc(sizeof(char *) * (size_t)(nroots * width + 1));
    for (int64_t r = 0; r < nroots * width; r++)
        c->shadows[r] = (char *)(intptr_t)table[2 * nregions + r];
    c->slots = zymase_ckpt_alloc(sizeof(char **) * (size_t)((1 + width) * nslots + 1));
    for (int64_t j = 0; j < (1 + width) * nslots; j++)
        c->slots[j] = (char **)(intptr_t)table[2 * nregions + nroots * width + j];
    c->capacity = 1;
    c->stack = zymase_ckpt_alloc(sizeof(struct zymase_snapshot));
    c->stack[0].data = NULL;
    zymase_ckpt_save(c, 0);
    int64_t n = 0;
    do {
        step(env, constants);
        n++;
    } while (!*done);
    c->iterations = n;
    zymase_ckpt_shadows(c);
    return c;
}

/* Reverse sweep: iterations n-1 .. 0 reversed, each from its state recomputed from the
   nearest snapshot; the state of iteration 0 restored at the end (the code before the loop
   may read it again). */
void __zymase_ckpt_reverse(void *handle, void *env, void *denv, zymase_step_fn step,
                           zymase_reverse_step_fn reverse_step) {
    struct zymase_checkpoints *c = handle;
    int64_t n = c->iterations;
    int64_t budget = c->limit / 2 / (c->state_bytes > 0 ? c->state_bytes : 1);
    if (budget < 1)
        budget = 1;
    if (budget > n)
        budget = n;
    struct zymase_snapshot first = c->stack[0];
    free(c->stack);
    c->stack = zymase_ckpt_alloc(sizeof(struct zymase_snapshot) * (size_t)budget);
    memset(c->stack, 0, sizeof(struct zymase_snapshot) * (size_t)budget);
    c->stack[0] = first;
    c->capacity = budget;
    c->depth = 1;
    for (int64_t to = n; to > 0; to--) {
        struct zymase_snapshot *top = &c->stack[c->depth - 1];
        zymase_ckpt_restore(c, top);
        int64_t at = top->iteration;
        while (to - 1 - at > 0 && c->depth < c->capacity) {
            int64_t k = zymase_ckpt_advance(to - at, c->capacity - c->depth + 1);
            if (k >= to - at)
                k = to - at - 1;
            zymase_ckpt_run(step, env, c->constants, at, at + k);
            at += k;
            zymase_ckpt_save(c, at);
        }
        zymase_ckpt_run(step, env, c->constants, at, to - 1);
        zymase_ckpt_shadows(c);
        reverse_step(env, denv, c->constants);
        if (c->depth > 1 && c->stack[c->depth - 1].iteration == to - 1)
            c->depth--;
    }
    zymase_ckpt_restore(c, &c->stack[0]);
    zymase_ckpt_shadows(c);
    for (int64_t i = 0; i < c->capacity; i++)
        free(c->stack[i].data);
    free(c->stack);
    free(c->regions);
    free(c->shadows);
    free(c->slots);
    free(c);
}
