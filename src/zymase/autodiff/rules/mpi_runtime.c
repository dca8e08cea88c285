/* The derivative code of MPI calls (autodiff/rules/mpi.py), linked into a module whose
 * derivatives call __zymase_mpi_* (frontends/c.link_derivative_runtime), made internal.
 *
 * Written against Open MPI's ABI without including mpi.h (the runtime is compiled without
 * the program's include flags): every handle (communicator, datatype, operation, request)
 * is a pointer, MPI_STATUS_IGNORE is a null pointer, MPI_SUM is &ompi_mpi_op_sum, and
 * MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_PROC_NULL and MPI_IN_PLACE have the values below. The
 * rules check at compile time that the datatype is MPI_DOUBLE or MPI_FLOAT (`kind` 0 or 1)
 * and the operation MPI_SUM, MPI_MAX or MPI_MIN.
 *
 * Forward mode sends the tangent after the primal message with the same envelope, so MPI's
 * non-overtaking order matches them. Reverse mode sends adjoints the other way: the
 * adjoint of a send is a receive of the adjoint, added to the send buffer's shadow; of a
 * receive, a send of the receive buffer's shadow, which is then zeroed. A buffer without a
 * shadow on this rank (constant here, perhaps active on the peer) takes part with zeros, so
 * that every message of the primal program has its derivative message on both sides.
 *
 * Non-blocking calls keep a record per request (its buffer's shadow, envelope and the
 * request of the derivative message), found by the primal request's handle while the
 * request is live. Reverse mode: the forward sweep records the isend/irecv and takes the
 * record out at the wait; the reverse of the wait starts the adjoint message (non-blocking),
 * the reverse of the isend/irecv waits for it and accumulates or zeroes.
 *
 * Vector mode (width N): one derivative message per primal message carries every lane
 * (mpi_lanes.h, included at the end: the lanes packed into one buffer, moved by the width-1
 * functions below as one message of N x count elements; a non-blocking request keeps one
 * record for all lanes, `lanes` and `shadows`). The MAX/MIN owners are found once per call
 * for all lanes (the caller frees them).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *Handle;
extern int MPI_Send(const void *, int, Handle, int, int, Handle);
extern int MPI_Recv(void *, int, Handle, int, int, Handle, void *);
extern int MPI_Sendrecv(const void *, int, Handle, int, int, void *, int, Handle, int, int, Handle, void *);
extern int MPI_Bcast(void *, int, Handle, int, Handle);
extern int MPI_Reduce(const void *, void *, int, Handle, Handle, int, Handle);
extern int MPI_Allreduce(const void *, void *, int, Handle, Handle, Handle);
extern int MPI_Isend(const void *, int, Handle, int, int, Handle, Handle *);
extern int MPI_Irecv(void *, int, Handle, int, int, Handle, Handle *);
extern int MPI_Wait(Handle *, void *);
extern int MPI_Comm_rank(Handle, int *);
extern int MPI_Comm_size(Handle, int *);
extern int MPI_Gather(const void *, int, Handle, void *, int, Handle, int, Handle);
extern int MPI_Scatter(const void *, int, Handle, void *, int, Handle, int, Handle);
extern int MPI_Allgather(const void *, int, Handle, void *, int, Handle, Handle);
extern int MPI_Reduce_scatter_block(const void *, void *, int, Handle, Handle, Handle);
extern int MPI_Abort(Handle, int);
extern char ompi_mpi_op_sum, ompi_mpi_op_min; /* MPI_SUM, MPI_MIN are their addresses */
extern char ompi_mpi_int;                       /* MPI_INT */

#define ZYMASE_ANY -1       /* MPI_ANY_SOURCE, MPI_ANY_TAG */
#define ZYMASE_PROC_NULL -2 /* MPI_PROC_NULL */
#define ZYMASE_IN_PLACE ((void *)1)

static size_t element_size(int kind) { return kind == 0 ? sizeof(double) : sizeof(float); }

static void fail(Handle comm, const char *call, const char *what) {
    fprintf(stderr, "zymase: error: %s %s in a derivative; hint: %s\n", call, what,
            "name the peer and tag (zymase pairs each message with its derivative message by its envelope)");
    MPI_Abort(comm, 70);
}

static void check_envelope(Handle comm, const char *call, int peer, int tag) {
    if (peer == ZYMASE_ANY)
        fail(comm, call, "from MPI_ANY_SOURCE");
    if (tag == ZYMASE_ANY)
        fail(comm, call, "with MPI_ANY_TAG");
}

static void check_not_in_place(Handle comm, const char *call, const void *sendbuf) {
    if (sendbuf == ZYMASE_IN_PLACE) {
        fprintf(stderr, "zymase: error: %s with MPI_IN_PLACE in a derivative; hint: pass separate send and "
                        "receive buffers\n", call);
        MPI_Abort(comm, 70);
    }
}

/* A buffer for the derivative message: the shadow, or zeros when there is none. */
static void *or_zeros(void *shadow, int count, int kind) {
    return shadow ? shadow : calloc(count > 0 ? (size_t)count : 1, element_size(kind));
}

static void release(void *buffer, void *shadow) {
    if (buffer != shadow)
        free(buffer);
}

static void add_into(void *dst, const void *src, int count, int kind) {
    if (!dst)
        return;
    if (kind == 0) {
        double *d = dst;
        const double *s = src;
        for (int i = 0; i < count; i++)
            d[i] += s[i];
    } else {
        float *d = dst;
        const float *s = src;
        for (int i = 0; i < count; i++)
            d[i] += s[i];
    }
}

static void zero(void *shadow, int count, int kind) {
    if (shadow && count > 0)
        memset(shadow, 0, (size_t)count * element_size(kind));
}

/* ---- blocking point-to-point ---------------------------------------------------------- */

void __zymase_mpi_send_fwd(void *dbuf, int count, Handle dt, int kind, int dest, int tag, Handle comm) {
    void *b = or_zeros(dbuf, count, kind);
    MPI_Send(b, count, dt, dest, tag, comm);
    release(b, dbuf);
}

void __zymase_mpi_recv_fwd(void *dbuf, int count, Handle dt, int kind, int src, int tag, Handle comm) {
    check_envelope(comm, "MPI_Recv", src, tag);
    void *b = or_zeros(dbuf, count, kind);
    MPI_Recv(b, count, dt, src, tag, comm, NULL);
    release(b, dbuf);
}

void __zymase_mpi_send_rev(void *dbuf, int count, Handle dt, int kind, int dest, int tag, Handle comm) {
    void *t = or_zeros(NULL, count, kind);
    MPI_Recv(t, count, dt, dest, tag, comm, NULL);
    add_into(dbuf, t, count, kind);
    free(t);
}

void __zymase_mpi_recv_rev(void *dbuf, int count, Handle dt, int kind, int src, int tag, Handle comm) {
    check_envelope(comm, "MPI_Recv", src, tag);
    void *b = or_zeros(dbuf, count, kind);
    MPI_Send(b, count, dt, src, tag, comm);
    release(b, dbuf);
    if (src != ZYMASE_PROC_NULL) /* a receive from MPI_PROC_NULL leaves the buffer as it was */
        zero(dbuf, count, kind);
}

void __zymase_mpi_sendrecv_fwd(void *dsbuf, int scount, int dest, int stag, void *drbuf, int rcount, int src,
                               int rtag, Handle dt, int kind, Handle comm) {
    check_envelope(comm, "MPI_Sendrecv", src, rtag);
    void *s = or_zeros(dsbuf, scount, kind), *r = or_zeros(drbuf, rcount, kind);
    MPI_Sendrecv(s, scount, dt, dest, stag, r, rcount, dt, src, rtag, comm, NULL);
    release(s, dsbuf);
    release(r, drbuf);
}

void __zymase_mpi_sendrecv_rev(void *dsbuf, int scount, int dest, int stag, void *drbuf, int rcount, int src,
                               int rtag, Handle dt, int kind, Handle comm) {
    check_envelope(comm, "MPI_Sendrecv", src, rtag);
    /* the received values' adjoints go back to their source, the sent ones' come back */
    void *r = or_zeros(drbuf, rcount, kind), *t = or_zeros(NULL, scount, kind);
    MPI_Sendrecv(r, rcount, dt, src, rtag, t, scount, dt, dest, stag, comm, NULL);
    release(r, drbuf);
    if (src != ZYMASE_PROC_NULL)
        zero(drbuf, rcount, kind);
    add_into(dsbuf, t, scount, kind);
    free(t);
}

/* ---- collectives (MPI_SUM) -------------------------------------------------------------- */

void __zymase_mpi_bcast_fwd(void *dbuf, int count, Handle dt, int kind, int root, Handle comm) {
    void *b = or_zeros(dbuf, count, kind);
    MPI_Bcast(b, count, dt, root, comm);
    release(b, dbuf);
}

void __zymase_mpi_bcast_rev(void *dbuf, int count, Handle dt, int kind, int root, Handle comm) {
    /* every rank's copy came from the root's buffer: the root's adjoint is their sum */
    int rank;
    MPI_Comm_rank(comm, &rank);
    void *b = or_zeros(dbuf, count, kind), *t = or_zeros(NULL, count, kind);
    MPI_Reduce(b, t, count, dt, &ompi_mpi_op_sum, root, comm);
    release(b, dbuf);
    if (dbuf && count > 0) {
        if (rank == root)
            memcpy(dbuf, t, (size_t)count * element_size(kind));
        else
            zero(dbuf, count, kind);
    }
    free(t);
}

void __zymase_mpi_reduce_fwd(void *dsbuf, void *drbuf, int count, Handle dt, int kind, int root, Handle comm) {
    check_not_in_place(comm, "MPI_Reduce", dsbuf);
    int rank;
    MPI_Comm_rank(comm, &rank);
    void *s = or_zeros(dsbuf, count, kind), *r = rank == root ? or_zeros(drbuf, count, kind) : NULL;
    MPI_Reduce(s, r, count, dt, &ompi_mpi_op_sum, root, comm);
    release(s, dsbuf);
    if (r)
        release(r, drbuf);
}

/* A reduction's result adjoint, taken (and zeroed) on the root and broadcast to every
   rank; the caller frees it. */
static void *root_adjoint_to_all(void *drbuf, int count, Handle dt, int kind, int root, Handle comm) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    void *t = or_zeros(NULL, count, kind);
    if (rank == root && drbuf && count > 0) {
        memcpy(t, drbuf, (size_t)count * element_size(kind));
        zero(drbuf, count, kind);
    }
    MPI_Bcast(t, count, dt, root, comm);
    return t;
}

void __zymase_mpi_reduce_rev(void *dsbuf, void *drbuf, int count, Handle dt, int kind, int root, Handle comm) {
    /* the root's result is the sum of every rank's send buffer: each gets its adjoint */
    void *t = root_adjoint_to_all(drbuf, count, dt, kind, root, comm);
    add_into(dsbuf, t, count, kind);
    free(t);
}

void __zymase_mpi_allreduce_fwd(void *dsbuf, void *drbuf, int count, Handle dt, int kind, Handle comm) {
    check_not_in_place(comm, "MPI_Allreduce", dsbuf);
    void *s = or_zeros(dsbuf, count, kind), *r = or_zeros(drbuf, count, kind);
    MPI_Allreduce(s, r, count, dt, &ompi_mpi_op_sum, comm);
    release(s, dsbuf);
    release(r, drbuf);
}

void __zymase_mpi_allreduce_rev(void *dsbuf, void *drbuf, int count, Handle dt, int kind, Handle comm) {
    /* every rank's result is the sum of all send buffers: each gets the sum of all adjoints */
    void *r = or_zeros(drbuf, count, kind), *t = or_zeros(NULL, count, kind);
    MPI_Allreduce(r, t, count, dt, &ompi_mpi_op_sum, comm);
    release(r, drbuf);
    zero(drbuf, count, kind);
    add_into(dsbuf, t, count, kind);
    free(t);
}

/* ---- gather, scatter, allgather ---------------------------------------------------------
 * Each block of the gathered buffer is one rank's send buffer: the adjoints go back block
 * by block (a gather's by a scatter, a scatter's by a gather, an allgather's by a
 * reduce-scatter summing every rank's copy). */

static int ranks(Handle comm) {
    int size;
    MPI_Comm_size(comm, &size);
    return size;
}

static void check_counts(Handle comm, const char *call, const void *sendbuf, int scount, int rcount) {
    check_not_in_place(comm, call, sendbuf);
    if (scount != rcount) {
        fprintf(stderr, "zymase: error: %s with a send count (%d) other than the receive count (%d) in a "
                        "derivative; hint: send and receive blocks of the same length\n", call, scount, rcount);
        MPI_Abort(comm, 70);
    }
}

void __zymase_mpi_gather_fwd(void *dsbuf, int scount, void *drbuf, int rcount, Handle dt, int kind, int root,
                             Handle comm) {
    check_counts(comm, "MPI_Gather", dsbuf, scount, rcount);
    int rank;
    MPI_Comm_rank(comm, &rank);
    void *s = or_zeros(dsbuf, scount, kind), *r = rank == root ? or_zeros(drbuf, rcount * ranks(comm), kind) : NULL;
    MPI_Gather(s, scount, dt, r, rcount, dt, root, comm);
    release(s, dsbuf);
    if (r)
        release(r, drbuf);
}

void __zymase_mpi_gather_rev(void *dsbuf, int scount, void *drbuf, int rcount, Handle dt, int kind, int root,
                             Handle comm) {
    check_counts(comm, "MPI_Gather", dsbuf, scount, rcount);
    int rank;
    MPI_Comm_rank(comm, &rank);
    void *r = rank == root ? or_zeros(drbuf, rcount * ranks(comm), kind) : NULL, *t = or_zeros(NULL, scount, kind);
    MPI_Scatter(r, rcount, dt, t, scount, dt, root, comm);
    if (r) {
        release(r, drbuf);
        zero(drbuf, rcount * ranks(comm), kind);
    }
    add_into(dsbuf, t, scount, kind);
    free(t);
}

void __zymase_mpi_scatter_fwd(void *dsbuf, int scount, void *drbuf, int rcount, Handle dt, int kind, int root,
                              Handle comm) {
    check_counts(comm, "MPI_Scatter", dsbuf, scount, rcount);
    int rank;
    MPI_Comm_rank(comm, &rank);
    void *s = rank == root ? or_zeros(dsbuf, scount * ranks(comm), kind) : NULL, *r = or_zeros(drbuf, rcount, kind);
    MPI_Scatter(s, scount, dt, r, rcount, dt, root, comm);
    if (s)
        release(s, dsbuf);
    release(r, drbuf);
}

void __zymase_mpi_scatter_rev(void *dsbuf, int scount, void *drbuf, int rcount, Handle dt, int kind, int root,
                              Handle comm) {
    check_counts(comm, "MPI_Scatter", dsbuf, scount, rcount);
    int rank;
    MPI_Comm_rank(comm, &rank);
    void *r = or_zeros(drbuf, rcount, kind), *t = rank == root ? or_zeros(NULL, scount * ranks(comm), kind) : NULL;
    MPI_Gather(r, rcount, dt, t, scount, dt, root, comm);
    release(r, drbuf);
    zero(drbuf, rcount, kind);
    if (t) {
        add_into(dsbuf, t, scount * ranks(comm), kind);
        free(t);
    }
}

void __zymase_mpi_allgather_fwd(void *dsbuf, int scount, void *drbuf, int rcount, Handle dt, int kind, Handle comm) {
    check_counts(comm, "MPI_Allgather", dsbuf, scount, rcount);
    void *s = or_zeros(dsbuf, scount, kind), *r = or_zeros(drbuf, rcount * ranks(comm), kind);
    MPI_Allgather(s, scount, dt, r, rcount, dt, comm);
    release(s, dsbuf);
    release(r, drbuf);
}

void __zymase_mpi_allgather_rev(void *dsbuf, int scount, void *drbuf, int rcount, Handle dt, int kind, Handle comm) {
    check_counts(comm, "MPI_Allgather", dsbuf, scount, rcount);
    void *r = or_zeros(drbuf, rcount * ranks(comm), kind), *t = or_zeros(NULL, scount, kind);
    MPI_Reduce_scatter_block(r, t, scount, dt, &ompi_mpi_op_sum, comm);
    release(r, drbuf);
    zero(drbuf, rcount * ranks(comm), kind);
    add_into(dsbuf, t, scount, kind);
    free(t);
}

/* ---- collectives with MPI_MAX / MPI_MIN ---------------------------------------------------
 * The result is one rank's value per element: that rank (the lowest one among ties) gets
 * the whole derivative. Which rank it was is found right after the primal call, from the
 * send buffer and the result, and taped for the reverse sweep. */

static int equal(const void *a, const void *b, int i, int kind) {
    return kind == 0 ? ((const double *)a)[i] == ((const double *)b)[i] : ((const float *)a)[i] == ((const float *)b)[i];
}

/* owner[i]: the rank whose sendbuf[i] is the result; `result` is this rank's copy (for
 * MPI_Reduce, root >= 0: the root's, broadcast first) */
static int *owners(const void *sendbuf, const void *result, int count, Handle dt, int kind, int root, Handle comm) {
    check_not_in_place(comm, root >= 0 ? "MPI_Reduce" : "MPI_Allreduce", sendbuf);
    int rank;
    MPI_Comm_rank(comm, &rank);
    void *r = (void *)result;
    if (root >= 0) {
        r = or_zeros(NULL, count, kind);
        if (rank == root && count > 0)
            memcpy(r, result, (size_t)count * element_size(kind));
        MPI_Bcast(r, count, dt, root, comm);
    }
    int *mine = malloc((count > 0 ? (size_t)count : 1) * sizeof(int)), *owner = malloc((count > 0 ? (size_t)count : 1) * sizeof(int));
    for (int i = 0; i < count; i++)
        mine[i] = equal(sendbuf, r, i, kind) ? rank : INT_MAX;
    MPI_Allreduce(mine, owner, count, &ompi_mpi_int, &ompi_mpi_op_min, comm);
    free(mine);
    if (r != result)
        free(r);
    return owner;
}

/* this rank's part of the tangent: its own where it owns the result, else zero */
static void *owned(const int *owner, const void *dsbuf, int count, int kind, Handle comm) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    void *c = or_zeros(NULL, count, kind);
    for (int i = 0; i < count && dsbuf; i++)
        if (owner[i] == rank)
            memcpy((char *)c + (size_t)i * element_size(kind), (const char *)dsbuf + (size_t)i * element_size(kind),
                   element_size(kind));
    return c;
}

static void add_owned(const int *owner, void *dsbuf, const void *t, int count, int kind, Handle comm) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    for (int i = 0; i < count && dsbuf; i++) {
        if (owner[i] != rank)
            continue;
        if (kind == 0)
            ((double *)dsbuf)[i] += ((const double *)t)[i];
        else
            ((float *)dsbuf)[i] += ((const float *)t)[i];
    }
}

/* forward mode: `owner` is the call's record (mpi_lanes.h: one for every lane) */
void __zymase_mpi_allreduce_extremum_fwd(void *dsbuf, void *drbuf, int count, Handle dt, int kind, Handle comm,
                                         const int *owner) {
    void *c = owned(owner, dsbuf, count, kind, comm), *r = or_zeros(drbuf, count, kind);
    MPI_Allreduce(c, r, count, dt, &ompi_mpi_op_sum, comm);
    release(r, drbuf);
    free(c);
}

void __zymase_mpi_reduce_extremum_fwd(void *dsbuf, void *drbuf, int count, Handle dt, int kind, int root, Handle comm,
                                      const int *owner) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    void *c = owned(owner, dsbuf, count, kind, comm), *r = rank == root ? or_zeros(drbuf, count, kind) : NULL;
    MPI_Reduce(c, r, count, dt, &ompi_mpi_op_sum, root, comm);
    if (r)
        release(r, drbuf);
    free(c);
}

void *__zymase_mpi_allreduce_extremum_record(void *sbuf, void *rbuf, int count, Handle dt, int kind, Handle comm) {
    return owners(sbuf, rbuf, count, dt, kind, -1, comm);
}

void *__zymase_mpi_reduce_extremum_record(void *sbuf, void *rbuf, int count, Handle dt, int kind, int root,
                                          Handle comm) {
    return owners(sbuf, rbuf, count, dt, kind, root, comm);
}

/* reverse mode (the rule frees `owner`) */
void __zymase_mpi_allreduce_extremum_rev(void *dsbuf, void *drbuf, int count, Handle dt, int kind, Handle comm,
                                         const int *owner) {
    void *r = or_zeros(drbuf, count, kind), *t = or_zeros(NULL, count, kind);
    MPI_Allreduce(r, t, count, dt, &ompi_mpi_op_sum, comm);
    release(r, drbuf);
    zero(drbuf, count, kind);
    add_owned(owner, dsbuf, t, count, kind, comm);
    free(t);
}

void __zymase_mpi_reduce_extremum_rev(void *dsbuf, void *drbuf, int count, Handle dt, int kind, int root, Handle comm,
                                      const int *owner) {
    void *t = root_adjoint_to_all(drbuf, count, dt, kind, root, comm);
    add_owned(owner, dsbuf, t, count, kind, comm);
    free(t);
}

/* ---- non-blocking point-to-point ------------------------------------------------------ */

typedef struct Record {
    struct Record *next; /* in the list of records of live primal requests */
    Handle primal;       /* the primal request's handle while it is live */
    int receive;         /* an irecv (else an isend) */
    void *shadow;        /* the buffer's shadow (NULL: none on this rank) */
    void *buffer;        /* the derivative message's buffer (the shadow, or a temporary) */
    int count, kind, peer, tag;
    Handle dt, comm;
    Handle request;      /* the derivative message's request */
    int started;         /* reverse mode: the adjoint message was started (reverse of the wait) */
    long sequence;       /* posting order of the primal requests */
    int lanes;           /* vector mode (mpi_lanes.h): how many lanes the message carries, */
    void **shadows;      /* and their shadows (width 1: 1 and NULL, `shadow` alone) */
} Record;

static Record *live = NULL;
static long posted = 0;

static Record *record(int receive, void *dbuf, int count, Handle dt, int kind, int peer, int tag, Handle comm,
                      Handle *reqp) {
    Record *r = calloc(1, sizeof(Record));
    r->receive = receive;
    r->shadow = dbuf;
    r->count = count;
    r->dt = dt;
    r->kind = kind;
    r->peer = peer;
    r->tag = tag;
    r->comm = comm;
    r->primal = *reqp;
    r->sequence = ++posted;
    r->lanes = 1;
    r->next = live;
    live = r;
    return r;
}

/* The record of the live primal request `*reqp`, unlinked (NULL when none:
 * a request of data without derivatives, or MPI_REQUEST_NULL). Open MPI gives every
 * isend that completed at once (a small message) the same handle, so several live records
 * may hold it: the oldest is taken, which is the request being waited for when requests
 * are waited in the order they were posted (a wait of any of them completes nothing). */
static Record *take(Handle *reqp) {
    Record **oldest = NULL;
    for (Record **p = &live; *p; p = &(*p)->next)
        if ((*p)->primal == *reqp && (!oldest || (*p)->sequence <= (*oldest)->sequence))
            oldest = p;
    if (!oldest)
        return NULL;
    Record *r = *oldest;
    *oldest = r->next;
    r->next = NULL;
    return r;
}

/* forward mode: the tangent message travels beside the primal one */
void __zymase_mpi_isend_fwd(void *dbuf, int count, Handle dt, int kind, int dest, int tag, Handle comm,
                            Handle *reqp) {
    Record *r = record(0, dbuf, count, dt, kind, dest, tag, comm, reqp);
    r->buffer = or_zeros(dbuf, count, kind);
    MPI_Isend(r->buffer, count, dt, dest, tag, comm, &r->request);
}

void __zymase_mpi_irecv_fwd(void *dbuf, int count, Handle dt, int kind, int src, int tag, Handle comm,
                            Handle *reqp) {
    check_envelope(comm, "MPI_Irecv", src, tag);
    Record *r = record(1, dbuf, count, dt, kind, src, tag, comm, reqp);
    r->buffer = or_zeros(dbuf, count, kind);
    MPI_Irecv(r->buffer, count, dt, src, tag, comm, &r->request);
}

static void lanes_arrived(Record *r);

static void finish_forward(Record *r) {
    if (!r)
        return;
    MPI_Wait(&r->request, NULL);
    if (r->shadows) /* the lanes' message: a received one goes to each lane's shadow */
        lanes_arrived(r);
    else
        release(r->buffer, r->shadow);
    free(r);
}

/* called before the primal wait, while the primal handle still names the request */
void __zymase_mpi_wait_fwd(Handle *reqp) { finish_forward(take(reqp)); }

void __zymase_mpi_waitall_fwd(int n, Handle *reqs) {
    for (int i = 0; i < n; i++)
        finish_forward(take(&reqs[i]));
}

/* reverse mode, forward sweep */
void *__zymase_mpi_isend_record(void *dbuf, int count, Handle dt, int kind, int dest, int tag, Handle comm,
                                Handle *reqp) {
    return record(0, dbuf, count, dt, kind, dest, tag, comm, reqp);
}

void *__zymase_mpi_irecv_record(void *dbuf, int count, Handle dt, int kind, int src, int tag, Handle comm,
                                Handle *reqp) {
    check_envelope(comm, "MPI_Irecv", src, tag);
    return record(1, dbuf, count, dt, kind, src, tag, comm, reqp);
}

void *__zymase_mpi_wait_take(Handle *reqp) { return take(reqp); }

/* the records of the n requests */
void *__zymase_mpi_waitall_take(int n, Handle *reqs) {
    Record **out = calloc(n > 0 ? (size_t)n : 1, sizeof(Record *));
    for (int i = 0; i < n; i++)
        out[i] = take(&reqs[i]);
    return out;
}

/* reverse of a wait: the adjoint message starts */
static void *lanes_pack(int lanes, void *const *d, int blocks, int count, int kind);

static void start_adjoint(Record *r) {
    if (!r)
        return;
    int count = r->count * r->lanes; /* the lanes' message carries every lane */
    if (r->receive) { /* the received values' adjoints go back to their source */
        r->buffer = r->shadows ? lanes_pack(r->lanes, r->shadows, 1, r->count, r->kind)
                               : or_zeros(r->shadow, r->count, r->kind);
        MPI_Isend(r->buffer, count, r->dt, r->peer, r->tag, r->comm, &r->request);
    } else { /* the sent values' adjoints come back */
        r->buffer = or_zeros(NULL, count, r->kind);
        MPI_Irecv(r->buffer, count, r->dt, r->peer, r->tag, r->comm, &r->request);
    }
    r->started = 1;
}

static void lanes_adjoint_arrived(Record *r);

void __zymase_mpi_wait_rev(void *record) { start_adjoint(record); }

/* the later request first */
static int later_first(const void *a, const void *b) {
    const Record *x = *(Record *const *)a, *y = *(Record *const *)b;
    long sx = x ? x->sequence : -1, sy = y ? y->sequence : -1;
    return (sx < sy) - (sx > sy);
}

void __zymase_mpi_waitall_rev(int n, void *records) {
    /* in the reverse of the primal posting order, as the blocking calls are reversed */
    Record **rs = records;
    size_t total = n > 0 ? (size_t)n : 0;
    qsort(rs, total, sizeof(Record *), later_first);
    for (size_t i = 0; i < total; i++)
        start_adjoint(rs[i]);
    free(rs);
}

/* reverse of the isend/irecv: the adjoint message completes */
void __zymase_mpi_request_rev(void *record) {
    Record *r = record;
    if (!r->started) {
        fprintf(stderr, "zymase: error: the request of an %s was not completed by MPI_Wait or MPI_Waitall "
                        "inside the differentiated function; hint: wait for it in the function\n",
                r->receive ? "MPI_Irecv" : "MPI_Isend");
        MPI_Abort(r->comm, 70);
    }
    MPI_Wait(&r->request, NULL);
    if (r->shadows) {
        lanes_adjoint_arrived(r);
    } else if (r->receive) {
        release(r->buffer, r->shadow);
        if (r->peer != ZYMASE_PROC_NULL)
            zero(r->shadow, r->count, r->kind);
    } else {
        add_into(r->shadow, r->buffer, r->count, r->kind);
        free(r->buffer);
    }
    free(r);
}

#include "mpi_lanes.h"
