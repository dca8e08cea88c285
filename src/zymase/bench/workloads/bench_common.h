/* The harness every benchmark workload shares: timing, finite-difference checks, tape bytes,
   the input/gradient dump read by the JAX and PyTorch comparisons, and the JSON report.
   Contains no differentiated code.

   A workload describes itself in a `struct bench_workload` (objective callbacks plus the
   arrays it reads, with shadows for the differentiated ones) and calls bench_run(), which
   does what the environment asks:

     BENCH_MODE=time (default)  time the primal and the gradient, check gradient entries against
                                finite differences, print one JSON line
     BENCH_MODE=tape            one gradient call; print the bytes taped (build with
                                ZYMASE_TAPE_STATS=1 and -DBENCH_TAPE_STATS)
     BENCH_MODE=primal          time the primal only, as a primal-only build does (the primal
                                of a zymase build against clang's: bench/primal_parity.py)
     BENCH_MIN_S, BENCH_REPEATS seconds per timing batch (0.2) and batches (3); best batch wins
     BENCH_FD=0                 skip the finite-difference check (gradient compared elsewhere)
     BENCH_FD_BUDGET_S          seconds the finite-difference check may take (default 5)
     BENCH_PRIMAL=0             skip timing the primal
     BENCH_DUMP=FILE            write the inputs, the objective and the gradient to FILE
     BENCH_VERBOSE=1            print every checked entry

   Built with -DBENCH_PRIMAL_ONLY (plain clang, no zymase) only the primal is timed: that is
   the "clang -O2" baseline the gradient is compared against. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef BENCH_PRIMAL_ONLY
/* Plain clang has no __enzyme_* symbols; the gradient path is never called in this build. */
int enzyme_dup, enzyme_const, enzyme_out, enzyme_dupnoneed;
static double __enzyme_autodiff(void *f, ...) {
    (void)f;
    abort();
}
#else
extern int enzyme_dup, enzyme_const, enzyme_out, enzyme_dupnoneed;
extern double __enzyme_autodiff(void *, ...);
#endif

#ifdef BENCH_TAPE_STATS
extern long __zymase_tape_bytes; /* defined by zymase when ZYMASE_TAPE_STATS=1 */
#endif

#define BENCH_TOL 1e-5
#define BENCH_PI 3.14159265358979323846
#define BENCH_MAX_ARRAYS 16

static double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double bench_env(const char *name, double fallback) {
    const char *s = getenv(name);
    return s && *s ? atof(s) : fallback;
}

/* Calls fn(ctx) repeatedly until at least min_s seconds have passed (one batch), for `repeats`
   batches, and returns the best per-call time. A call that alone outlasts the whole budget
   (min_s * repeats) is timed once more after the warm-up, and the faster of the two counts:
   repeating it further would only make slow cases slower, but the first call of a gradient
   also page-faults its tape in (hundreds of MB for the largest GMMs), which later calls, like
   the primal's batches and JAX's timed calls, do not pay. */
static double bench_time(void (*fn)(void *), void *ctx, double min_s, int repeats) {
    double t0 = bench_now();
    fn(ctx); /* warm-up: page faults, first-touch of the shadows */
    double best = bench_now() - t0;
    if (best >= min_s * repeats) {
        t0 = bench_now();
        fn(ctx);
        double again = bench_now() - t0;
        return again < best ? again : best;
    }
    best = INFINITY;
    for (int r = 0; r < repeats; r++) {
        long calls = 0;
        double t;
        t0 = bench_now();
        do {
            fn(ctx);
            calls++;
            t = bench_now();
        } while (t - t0 < min_s);
        double per = (t - t0) / (double)calls;
        if (per < best) best = per;
    }
    return best;
}

/* Deterministic uniform numbers in [0, 1) (64-bit LCG, top 53 bits), for the workloads that
   have no ADBench file format. */
static unsigned long long bench_rng_state = 0x2545F4914F6CDD1DULL;
static void bench_seed(unsigned long long s) { bench_rng_state = s * 6364136223846793005ULL + 1442695040888963407ULL; }
static double bench_uniform(void) {
    bench_rng_state = bench_rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(bench_rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static void *bench_alloc(size_t count, size_t size) {
    void *p = calloc(count > 0 ? count : 1, size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* Reads n whitespace-separated doubles; exits with a message naming the file on failure. */
static void bench_read_doubles(FILE *f, double *v, long n, const char *path) {
    for (long i = 0; i < n; i++)
        if (fscanf(f, "%lf", &v[i]) != 1) {
            fprintf(stderr, "cannot read %s: expected %ld numbers\n", path, n);
            exit(2);
        }
}

static FILE *bench_open(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    return f;
}

/* One array the objective reads: a differentiated one has a shadow (grad) and gets
   `fd_checks` entries checked; a constant one is only dumped. type 'd' (double) or 'i' (int). */
struct bench_array {
    const char *name;
    char type;
    void *data;
    long len;
    double *grad;
    int fd_checks;
};

struct bench_workload {
    const char *name;
    char size[128];
    void *ctx;
    void (*primal)(void *); /* one objective evaluation, result kept alive by the callee */
    void (*grad)(void *);   /* zero the shadows, then __enzyme_autodiff */
    double (*eval)(void *); /* objective value, used by the finite differences */
    struct bench_array arrays[BENCH_MAX_ARRAYS];
    int n_arrays;
};

static void bench_add(struct bench_workload *w, const char *name, char type, void *data, long len,
                      double *grad, int fd_checks) {
    if (w->n_arrays == BENCH_MAX_ARRAYS) {
        fprintf(stderr, "bench_add: too many arrays\n");
        exit(2);
    }
    struct bench_array a = {name, type, data, len, grad, fd_checks};
    w->arrays[w->n_arrays++] = a;
}

/* Fourth-order central difference of eval along x[i] with step h (x[i] restored afterwards). */
static double bench_fd_step(double (*eval)(void *), void *ctx, double *x, long i, double h) {
    double x0 = x[i];
    double f[4];
    const double off[4] = {-2.0, -1.0, 1.0, 2.0};
    for (int k = 0; k < 4; k++) {
        x[i] = x0 + off[k] * h;
        f[k] = eval(ctx);
    }
    x[i] = x0;
    return (f[0] - 8.0 * f[1] + 8.0 * f[2] - f[3]) / (12.0 * h);
}

/* Derivative of eval along x[i]: the fourth-order differences at steps h and h/2 combined by
   Richardson extrapolation (sixth order), since with strongly curved objectives (BA's
   projection) the fourth-order error alone can reach 1e-5. *uncertainty = |difference of
   the two|, an estimate of the finite differences' own error: truncation, or the roundoff
   that dominates for large sums (a 65536-point FFT's objective). */
static double bench_fd(double (*eval)(void *), void *ctx, double *x, long i, double *uncertainty) {
    double h = 1e-3 * (fabs(x[i]) > 1.0 ? fabs(x[i]) : 1.0);
    double coarse = bench_fd_step(eval, ctx, x, i, h);
    double fine = bench_fd_step(eval, ctx, x, i, 0.5 * h);
    *uncertainty = fabs(fine - coarse);
    return (16.0 * fine - coarse) / 15.0;
}

/* Relative error of g against fd beyond the finite differences' uncertainty, with a floor
   `scale` so near-zero entries do not dominate. */
static double bench_rel_err(double g, double fd, double uncertainty, double scale) {
    double d = fabs(g) > fabs(fd) ? fabs(g) : fabs(fd);
    if (d < scale) d = scale;
    if (d == 0.0) return 0.0;
    double excess = fabs(g - fd) - uncertainty;
    double e = excess > 0.0 ? excess / d : 0.0;
    return e == e ? e : INFINITY;
}

/* Checks `count` entries of grad (spread over [0, len), moving past entries below 1e-3 of the
   largest |grad|, where finite-difference roundoff dominates) against finite differences;
   returns the largest relative error. */
static double bench_check(const char *name, double (*eval)(void *), void *ctx, double *x,
                          const double *grad, long len, int count) {
    double gmax = 0.0, worst = 0.0;
    for (long i = 0; i < len; i++) {
        if (!(fabs(grad[i]) <= gmax)) gmax = fabs(grad[i]); /* also catches NaN */
    }
    if (gmax != gmax) return INFINITY;
    for (int k = 0; k < count && k < len; k++) {
        long i = count > 1 ? (long)((double)k * (double)(len - 1) / (double)(count - 1)) : 0;
        if (k == 1 && len > 2) i = 1 + (len - 2) / 3; /* avoid only-aligned picks */
        for (long step = 0; step < len && fabs(grad[i]) < 1e-3 * gmax; step++)
            i = (i + 1) % len;
        double uncertainty;
        double fd = bench_fd(eval, ctx, x, i, &uncertainty);
        double e = bench_rel_err(grad[i], fd, uncertainty, 1e-6 * gmax);
        if (getenv("BENCH_VERBOSE"))
            fprintf(stderr, "%s[%ld]: grad %.12g fd %.12g (+- %.2g) rel %.2e\n", name, i, grad[i], fd,
                    uncertainty, e);
        if (e > worst) worst = e;
    }
    return worst;
}

/* Dump format: a line "zymase-bench-dump 1", then per array a line "NAME TYPE LEN" (TYPE d
   for float64, i for int32, native byte order) followed by its raw bytes. Gradients are
   written as "d" + NAME; the objective value as the one-element array "objective". */
static void bench_dump_array(FILE *f, const char *prefix, const char *name, char type,
                             const void *data, long len) {
    fprintf(f, "%s%s %c %ld\n", prefix, name, type, len);
    fwrite(data, type == 'i' ? sizeof(int) : sizeof(double), (size_t)len, f);
}

static int bench_dump(const struct bench_workload *w, const char *path, double objective) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "%s: cannot write %s\n", w->name, path);
        return 1;
    }
    fprintf(f, "zymase-bench-dump 1\n");
    bench_dump_array(f, "", "objective", 'd', &objective, 1);
    for (int k = 0; k < w->n_arrays; k++) {
        const struct bench_array *a = &w->arrays[k];
        bench_dump_array(f, "", a->name, a->type, a->data, a->len);
        if (a->grad) bench_dump_array(f, "d", a->name, 'd', a->grad, a->len);
    }
    return fclose(f) != 0;
}

/* Largest relative error of the differentiated arrays against finite differences, checking
   fewer entries when the objective is slow (8 evaluations per entry within the budget). */
static double bench_check_all(const struct bench_workload *w, double primal_s) {
    int wanted = 0;
    for (int k = 0; k < w->n_arrays; k++)
        if (w->arrays[k].grad) wanted += w->arrays[k].fd_checks;
    double budget = bench_env("BENCH_FD_BUDGET_S", 5.0);
    double affordable = primal_s > 0.0 ? budget / (8.0 * primal_s) : wanted;
    double share = affordable >= wanted ? 1.0 : affordable / (double)wanted;
    double worst = 0.0;
    for (int k = 0; k < w->n_arrays; k++) {
        const struct bench_array *a = &w->arrays[k];
        if (!a->grad) continue;
        int count = (int)(a->fd_checks * share);
        if (count < 1) count = 1;
        double e = bench_check(a->name, w->eval, w->ctx, (double *)a->data, a->grad, a->len, count);
        if (e > worst || e != e) worst = e;
    }
    return worst;
}

static void bench_print_head(const struct bench_workload *w) {
    printf("{\"workload\": \"%s\", \"size\": \"%s\"", w->name, w->size);
}

/* Runs the workload as the environment asks (see the top of this file); returns the exit code. */
static int bench_run(struct bench_workload *w) {
    double min_s = bench_env("BENCH_MIN_S", 0.2);
    int repeats = (int)bench_env("BENCH_REPEATS", 3);
    if (repeats < 1) repeats = 1;
    const char *mode = getenv("BENCH_MODE");
    const char *dump = getenv("BENCH_DUMP");

#ifdef BENCH_PRIMAL_ONLY
    (void)mode;
    (void)dump;
    double tp = bench_time(w->primal, w->ctx, min_s, repeats);
    bench_print_head(w);
    printf(", \"primal_s\": %.6e}\n", tp);
    return 0;
#else
    if (mode && strcmp(mode, "tape") == 0) {
#ifdef BENCH_TAPE_STATS
        long before = __zymase_tape_bytes;
        w->grad(w->ctx);
        long bytes = __zymase_tape_bytes - before;
#else
        long bytes = -1;
        fprintf(stderr, "%s: built without -DBENCH_TAPE_STATS; no tape counter\n", w->name);
#endif
        bench_print_head(w);
        printf(", \"tape_bytes\": %ld}\n", bytes);
        return bytes < 0;
    }
    if (mode && strcmp(mode, "primal") == 0) {
        double tp = bench_time(w->primal, w->ctx, min_s, repeats);
        bench_print_head(w);
        printf(", \"primal_s\": %.6e}\n", tp);
        return 0;
    }
    double tp = -1.0;
    if (bench_env("BENCH_PRIMAL", 1) != 0) tp = bench_time(w->primal, w->ctx, min_s, repeats);
    double tg = bench_time(w->grad, w->ctx, min_s, repeats); /* leaves the gradient in the shadows */
    int check_fd = bench_env("BENCH_FD", 1) != 0;
    double err = 0.0;
    int rc = 0;
    if (dump) rc |= bench_dump(w, dump, w->eval(w->ctx));
    if (check_fd) {
        err = bench_check_all(w, tp > 0.0 ? tp : tg);
        if (!(err <= BENCH_TOL)) {
            fprintf(stderr, "%s: gradient does not match finite differences (max rel err %.3e > %.0e)\n",
                    w->name, err, BENCH_TOL);
            rc = 1;
        }
    }
    bench_print_head(w);
    if (tp > 0.0) printf(", \"primal_s\": %.6e", tp);
    printf(", \"grad_s\": %.6e", tg);
    if (check_fd) printf(", \"max_rel_err_fd\": %.3e", isfinite(err) ? err : 1e308);
    printf("}\n");
    return rc;
#endif
}

#endif
