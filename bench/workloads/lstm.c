/* ADBench's LSTM objective: an l-layer LSTM with hidden size b runs over a sequence of c
   character vectors; at each step it predicts the next vector and the objective is the mean
   negative log-softmax of the prediction against it. Gradient w.r.t. the main parameters
   (per layer: 4b weights, 4b biases for the forget/input/output gates and the cell change)
   and the extra parameters (input weight, output weight, output bias; b each); the initial
   state (hidden, cell per layer) is constant and copied, not modified.
   Usage: lstm [l c]  (default 2 1024, b = 14; inputs generated deterministically)
          lstm FILE   (an ADBench lstm_l{L}_c{C}.txt file) */
#include "bench_common.h"

extern double __enzyme_autodiff(void *, ...);

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* One LSTM cell update in place on hidden and cell. */
static void lstm_model(int b, const double *restrict weight, const double *restrict bias,
                       double *restrict hidden, double *restrict cell, const double *restrict input) {
    for (int i = 0; i < b; i++) {
        double forget = sigmoid(input[i] * weight[i] + bias[i]);
        double ingate = sigmoid(hidden[i] * weight[b + i] + bias[b + i]);
        double outgate = sigmoid(input[i] * weight[2 * b + i] + bias[2 * b + i]);
        double change = tanh(hidden[i] * weight[3 * b + i] + bias[3 * b + i]);
        cell[i] = cell[i] * forget + ingate * change;
        hidden[i] = outgate * tanh(cell[i]);
    }
}

static void lstm_predict(int l, int b, const double *restrict main_params, const double *restrict extra,
                         double *restrict state, const double *restrict x, double *restrict out) {
    double *tmp = out; /* reused: input of the first layer */
    for (int i = 0; i < b; i++)
        tmp[i] = x[i] * extra[i];
    const double *layer_in = tmp;
    for (int j = 0; j < l; j++) {
        double *hidden = state + 2 * j * b, *cell = state + (2 * j + 1) * b;
        lstm_model(b, main_params + 8 * j * b, main_params + (8 * j + 4) * b, hidden, cell, layer_in);
        layer_in = hidden;
    }
    for (int i = 0; i < b; i++)
        out[i] = layer_in[i] * extra[b + i] + extra[2 * b + i];
}

double lstm_objective(int l, int c, int b, const double *restrict main_params,
                      const double *restrict extra, const double *restrict state0,
                      const double *restrict sequence) {
    double *state = malloc(sizeof(double) * (size_t)(2 * l * b));
    double *ypred = malloc(sizeof(double) * (size_t)b);
    memcpy(state, state0, sizeof(double) * (size_t)(2 * l * b));
    double total = 0.0;
    for (int t = 0; t < c - 1; t++) {
        lstm_predict(l, b, main_params, extra, state, sequence + t * b, ypred);
        double mx = ypred[0];
        for (int i = 1; i < b; i++)
            if (ypred[i] > mx) mx = ypred[i];
        double se = 0.0;
        for (int i = 0; i < b; i++)
            se += exp(ypred[i] - mx);
        double lse = log(se) + mx;
        const double *ygold = sequence + (t + 1) * b;
        for (int i = 0; i < b; i++)
            total += ygold[i] * (ypred[i] - lse);
    }
    free(state);
    free(ypred);
    return -total / (double)((c - 1) * b);
}

struct ctx {
    int l, c, b;
    double *main_params, *extra, *state, *seq, *dmain, *dextra;
    double sink;
};

static void run_primal(void *p) {
    struct ctx *x = p;
    x->sink += lstm_objective(x->l, x->c, x->b, x->main_params, x->extra, x->state, x->seq);
}

static void run_grad(void *p) {
    struct ctx *x = p;
    memset(x->dmain, 0, sizeof(double) * (size_t)(8 * x->l * x->b));
    memset(x->dextra, 0, sizeof(double) * (size_t)(3 * x->b));
    __enzyme_autodiff((void *)lstm_objective, enzyme_const, x->l, enzyme_const, x->c, enzyme_const, x->b,
                      enzyme_dup, x->main_params, x->dmain, enzyme_dup, x->extra, x->dextra,
                      enzyme_const, x->state, enzyme_const, x->seq);
}

static double eval(void *p) {
    struct ctx *x = p;
    return lstm_objective(x->l, x->c, x->b, x->main_params, x->extra, x->state, x->seq);
}

static int read_doubles(FILE *f, double *v, long n) {
    for (long i = 0; i < n; i++)
        if (fscanf(f, "%lf", &v[i]) != 1) return 0;
    return 1;
}

int main(int argc, char **argv) {
    struct ctx x = {.l = 2, .c = 1024, .b = 14};
    FILE *f = NULL;
    if (argc == 2) {
        f = fopen(argv[1], "r");
        if (!f || fscanf(f, "%d %d %d", &x.l, &x.c, &x.b) != 3) {
            fprintf(stderr, "lstm: cannot read %s\n", argv[1]);
            return 2;
        }
    } else if (argc >= 3) {
        x.l = atoi(argv[1]);
        x.c = atoi(argv[2]);
    }
    int l = x.l, c = x.c, b = x.b;
    x.main_params = malloc(sizeof(double) * (size_t)(8 * l * b));
    x.dmain = malloc(sizeof(double) * (size_t)(8 * l * b));
    x.extra = malloc(sizeof(double) * (size_t)(3 * b));
    x.dextra = malloc(sizeof(double) * (size_t)(3 * b));
    x.state = malloc(sizeof(double) * (size_t)(2 * l * b));
    x.seq = malloc(sizeof(double) * (size_t)(c * b));
    if (f) {
        int ok = read_doubles(f, x.main_params, 8L * l * b) && read_doubles(f, x.extra, 3L * b) &&
                 read_doubles(f, x.state, 2L * l * b) && read_doubles(f, x.seq, (long)c * b);
        fclose(f);
        if (!ok) {
            fprintf(stderr, "lstm: cannot read %s\n", argv[1]);
            return 2;
        }
    } else {
        bench_seed(3);
        for (long i = 0; i < 8L * l * b; i++) x.main_params[i] = bench_uniform();
        for (long i = 0; i < 3L * b; i++) x.extra[i] = bench_uniform();
        for (long i = 0; i < 2L * l * b; i++) x.state[i] = bench_uniform();
        for (long i = 0; i < (long)c * b; i++) x.seq[i] = bench_uniform();
    }

    double tp = bench_time(run_primal, &x, bench_min_s(), bench_repeats());
    double tg = bench_time(run_grad, &x, bench_min_s(), bench_repeats());
    run_grad(&x);
    double err = 0.0, e;
    e = bench_check("dmain", eval, &x, x.main_params, x.dmain, 8L * l * b, 8); if (e > err) err = e;
    e = bench_check("dextra", eval, &x, x.extra, x.dextra, 3L * b, 5); if (e > err) err = e;
    char size[64];
    snprintf(size, sizeof size, "l=%d c=%d b=%d", l, c, b);
    int rc = bench_report("lstm", size, tp, tg, err);
    free(x.main_params); free(x.dmain); free(x.extra); free(x.dextra); free(x.state); free(x.seq);
    return rc;
}
