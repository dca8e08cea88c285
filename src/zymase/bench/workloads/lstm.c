/* ADBench's LSTM objective: an l-layer LSTM with hidden size b runs over a sequence of c
   character vectors; at each step it predicts the next vector and the objective is the mean
   negative log-softmax of the prediction against it. Gradient w.r.t. the main parameters
   (per layer: 4b weights, 4b biases for the forget/input/output gates and the cell change)
   and the extra parameters (input weight, output weight, output bias; b each); the initial
   state (hidden, cell per layer) is constant and copied, not modified.
   Usage: lstm FILE   (an ADBench lstm_l{L}_c{C}.txt file; `zymase bench` writes them) */
#include "bench_common.h"

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

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: lstm FILE (an ADBench lstm_l{L}_c{C}.txt file)\n");
        return 2;
    }
    struct ctx x = {0};
    FILE *f = bench_open(argv[1]);
    if (fscanf(f, "%d %d %d", &x.l, &x.c, &x.b) != 3) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    int l = x.l, c = x.c, b = x.b;
    x.main_params = bench_alloc((size_t)8 * l * b, sizeof(double));
    x.dmain = bench_alloc((size_t)8 * l * b, sizeof(double));
    x.extra = bench_alloc((size_t)3 * b, sizeof(double));
    x.dextra = bench_alloc((size_t)3 * b, sizeof(double));
    x.state = bench_alloc((size_t)2 * l * b, sizeof(double));
    x.seq = bench_alloc((size_t)c * b, sizeof(double));
    bench_read_doubles(f, x.main_params, 8L * l * b, argv[1]);
    bench_read_doubles(f, x.extra, 3L * b, argv[1]);
    bench_read_doubles(f, x.state, 2L * l * b, argv[1]);
    bench_read_doubles(f, x.seq, (long)c * b, argv[1]);
    fclose(f);

    struct bench_workload w = {.name = "lstm", .ctx = &x, .primal = run_primal, .grad = run_grad, .eval = eval};
    snprintf(w.size, sizeof w.size, "l=%d c=%d b=%d", l, c, b);
    bench_add(&w, "main_params", 'd', x.main_params, 8L * l * b, x.dmain, 8);
    bench_add(&w, "extra_params", 'd', x.extra, 3L * b, x.dextra, 5);
    bench_add(&w, "state", 'd', x.state, 2L * l * b, NULL, 0);
    bench_add(&w, "sequence", 'd', x.seq, (long)c * b, NULL, 0);
    return bench_run(&w);
}
