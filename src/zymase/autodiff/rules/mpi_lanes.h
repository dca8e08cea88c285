/* Vector mode (width N) of the MPI rules: one derivative message per primal message,
 * carrying every lane. Included at the end of mpi_runtime.c (its helpers, the width-1
 * functions and the non-blocking records).
 *
 * At width N the rules (autodiff/rules/mpi.py) gather the lanes' shadows of a call and the
 * last lane calls `__zymase_mpi_<call>_{fwd,rev}_lanes` once, with each shadow argument
 * replaced by an array of the N lanes' shadows (NULL entries: no shadow on this rank) and
 * the width last. The lanes are packed into one buffer of N x count elements, lane after
 * lane (a gathered buffer's blocks, one per rank, each holding its N lanes side by side:
 * [rank][lane][count]), and the width-1 derivative moves that buffer as one message of
 * N x count elements: N tangent or adjoint messages become one, and a reduction's op
 * (MPI_SUM on the derivative) applies element by element to the packed lanes as to one
 * lane. Every rank calls the derivative at the same width (as every rank must call it at
 * all), so both sides of a message pack the same way.
 *
 * Non-blocking calls keep one record per request for all lanes (`lanes`, `shadows`): the
 * forward message, the reverse's adjoint message and the wait each handle the N lanes at
 * once, and the waits are width 1's. */

/* every lane's `blocks` blocks of `count` elements (lane k's block r at d[k] + r count)
   in one new buffer, [block][lane][count]; zeros for a lane without a shadow */
static void *lanes_pack(int lanes, void *const *d, int blocks, int count, int kind) {
    size_t es = element_size(kind), n = count > 0 ? (size_t)count : 0, total = (size_t)lanes * blocks * n;
    char *b = calloc(total ? total : 1, es);
    for (int r = 0; r < blocks; r++)
        for (int k = 0; k < lanes; k++)
            if (d[k] && n)
                memcpy(b + ((size_t)r * lanes + k) * n * es, (char *)d[k] + (size_t)r * n * es, n * es);
    return b;
}

/* the packed b back into the lanes' shadows, copied (add 0) or added (add 1) */
static void lanes_unpack(int lanes, void *const *d, int blocks, int count, int kind, const void *b, int add) {
    size_t es = element_size(kind), n = count > 0 ? (size_t)count : 0;
    for (int r = 0; r < blocks; r++)
        for (int k = 0; k < lanes; k++) {
            if (!d[k] || !n)
                continue;
            char *dst = (char *)d[k] + (size_t)r * n * es;
            const char *src = (const char *)b + ((size_t)r * lanes + k) * n * es;
            if (add)
                add_into(dst, src, count, kind);
            else
                memcpy(dst, src, n * es);
        }
}

static void lanes_zero(int lanes, void *const *d, int count, int kind) {
    for (int k = 0; k < lanes; k++)
        zero(d[k], count, kind);
}

static int rank_of(Handle comm) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    return rank;
}

/* ---- blocking point-to-point ---------------------------------------------------------- */

void __zymase_mpi_send_fwd_lanes(void **dbuf, int count, Handle dt, int kind, int dest, int tag, Handle comm,
                                 int lanes) {
    void *b = lanes_pack(lanes, dbuf, 1, count, kind);
    __zymase_mpi_send_fwd(b, count * lanes, dt, kind, dest, tag, comm);
    free(b);
}

void __zymase_mpi_recv_fwd_lanes(void **dbuf, int count, Handle dt, int kind, int src, int tag, Handle comm,
                                 int lanes) {
    void *b = or_zeros(NULL, count * lanes, kind);
    __zymase_mpi_recv_fwd(b, count * lanes, dt, kind, src, tag, comm);
    if (src != ZYMASE_PROC_NULL) /* a receive from MPI_PROC_NULL leaves the buffer as it was */
        lanes_unpack(lanes, dbuf, 1, count, kind, b, 0);
    free(b);
}

void __zymase_mpi_send_rev_lanes(void **dbuf, int count, Handle dt, int kind, int dest, int tag, Handle comm,
                                 int lanes) {
    void *t = or_zeros(NULL, count * lanes, kind);
    __zymase_mpi_send_rev(t, count * lanes, dt, kind, dest, tag, comm);
    lanes_unpack(lanes, dbuf, 1, count, kind, t, 1);
    free(t);
}

void __zymase_mpi_recv_rev_lanes(void **dbuf, int count, Handle dt, int kind, int src, int tag, Handle comm,
                                 int lanes) {
    void *b = lanes_pack(lanes, dbuf, 1, count, kind);
    __zymase_mpi_recv_rev(b, count * lanes, dt, kind, src, tag, comm);
    if (src != ZYMASE_PROC_NULL)
        lanes_zero(lanes, dbuf, count, kind);
    free(b);
}

void __zymase_mpi_sendrecv_fwd_lanes(void **dsbuf, int scount, int dest, int stag, void **drbuf, int rcount, int src,
                                     int rtag, Handle dt, int kind, Handle comm, int lanes) {
    void *s = lanes_pack(lanes, dsbuf, 1, scount, kind), *r = or_zeros(NULL, rcount * lanes, kind);
    __zymase_mpi_sendrecv_fwd(s, scount * lanes, dest, stag, r, rcount * lanes, src, rtag, dt, kind, comm);
    if (src != ZYMASE_PROC_NULL)
        lanes_unpack(lanes, drbuf, 1, rcount, kind, r, 0);
    free(s), free(r);
}

void __zymase_mpi_sendrecv_rev_lanes(void **dsbuf, int scount, int dest, int stag, void **drbuf, int rcount, int src,
                                     int rtag, Handle dt, int kind, Handle comm, int lanes) {
    void *r = lanes_pack(lanes, drbuf, 1, rcount, kind), *t = or_zeros(NULL, scount * lanes, kind);
    __zymase_mpi_sendrecv_rev(t, scount * lanes, dest, stag, r, rcount * lanes, src, rtag, dt, kind, comm);
    if (src != ZYMASE_PROC_NULL)
        lanes_zero(lanes, drbuf, rcount, kind);
    lanes_unpack(lanes, dsbuf, 1, scount, kind, t, 1);
    free(r), free(t);
}

/* ---- collectives (MPI_SUM) -------------------------------------------------------------- */

void __zymase_mpi_bcast_fwd_lanes(void **dbuf, int count, Handle dt, int kind, int root, Handle comm, int lanes) {
    void *b = lanes_pack(lanes, dbuf, 1, count, kind);
    __zymase_mpi_bcast_fwd(b, count * lanes, dt, kind, root, comm);
    lanes_unpack(lanes, dbuf, 1, count, kind, b, 0);
    free(b);
}

void __zymase_mpi_bcast_rev_lanes(void **dbuf, int count, Handle dt, int kind, int root, Handle comm, int lanes) {
    void *b = lanes_pack(lanes, dbuf, 1, count, kind);
    __zymase_mpi_bcast_rev(b, count * lanes, dt, kind, root, comm); /* the root's sum, zeros elsewhere */
    lanes_unpack(lanes, dbuf, 1, count, kind, b, 0);
    free(b);
}

void __zymase_mpi_reduce_fwd_lanes(void **dsbuf, void **drbuf, int count, Handle dt, int kind, int root, Handle comm,
                                   int lanes) {
    check_not_in_place(comm, "MPI_Reduce", dsbuf[0]);
    void *s = lanes_pack(lanes, dsbuf, 1, count, kind), *r = or_zeros(NULL, count * lanes, kind);
    __zymase_mpi_reduce_fwd(s, r, count * lanes, dt, kind, root, comm);
    if (rank_of(comm) == root)
        lanes_unpack(lanes, drbuf, 1, count, kind, r, 0);
    free(s), free(r);
}

void __zymase_mpi_reduce_rev_lanes(void **dsbuf, void **drbuf, int count, Handle dt, int kind, int root, Handle comm,
                                   int lanes) {
    void *r = lanes_pack(lanes, drbuf, 1, count, kind), *t = or_zeros(NULL, count * lanes, kind);
    __zymase_mpi_reduce_rev(t, r, count * lanes, dt, kind, root, comm);
    if (rank_of(comm) == root)
        lanes_zero(lanes, drbuf, count, kind);
    lanes_unpack(lanes, dsbuf, 1, count, kind, t, 1);
    free(r), free(t);
}

void __zymase_mpi_allreduce_fwd_lanes(void **dsbuf, void **drbuf, int count, Handle dt, int kind, Handle comm,
                                      int lanes) {
    check_not_in_place(comm, "MPI_Allreduce", dsbuf[0]);
    void *s = lanes_pack(lanes, dsbuf, 1, count, kind), *r = or_zeros(NULL, count * lanes, kind);
    __zymase_mpi_allreduce_fwd(s, r, count * lanes, dt, kind, comm);
    lanes_unpack(lanes, drbuf, 1, count, kind, r, 0);
    free(s), free(r);
}

void __zymase_mpi_allreduce_rev_lanes(void **dsbuf, void **drbuf, int count, Handle dt, int kind, Handle comm,
                                      int lanes) {
    void *r = lanes_pack(lanes, drbuf, 1, count, kind), *t = or_zeros(NULL, count * lanes, kind);
    __zymase_mpi_allreduce_rev(t, r, count * lanes, dt, kind, comm);
    lanes_zero(lanes, drbuf, count, kind);
    lanes_unpack(lanes, dsbuf, 1, count, kind, t, 1);
    free(r), free(t);
}

/* ---- gather, scatter, allgather: each rank's block holds its lanes side by side -------- */

void __zymase_mpi_gather_fwd_lanes(void **dsbuf, int scount, void **drbuf, int rcount, Handle dt, int kind, int root,
                                   Handle comm, int lanes) {
    check_counts(comm, "MPI_Gather", dsbuf[0], scount, rcount);
    int size = ranks(comm);
    void *s = lanes_pack(lanes, dsbuf, 1, scount, kind), *r = or_zeros(NULL, rcount * lanes * size, kind);
    __zymase_mpi_gather_fwd(s, scount * lanes, r, rcount * lanes, dt, kind, root, comm);
    if (rank_of(comm) == root)
        lanes_unpack(lanes, drbuf, size, rcount, kind, r, 0);
    free(s), free(r);
}

void __zymase_mpi_gather_rev_lanes(void **dsbuf, int scount, void **drbuf, int rcount, Handle dt, int kind, int root,
                                   Handle comm, int lanes) {
    check_counts(comm, "MPI_Gather", dsbuf[0], scount, rcount);
    int size = ranks(comm), root_here = rank_of(comm) == root;
    void *r = root_here ? lanes_pack(lanes, drbuf, size, rcount, kind) : or_zeros(NULL, 1, kind);
    void *t = or_zeros(NULL, scount * lanes, kind);
    __zymase_mpi_gather_rev(t, scount * lanes, r, rcount * lanes, dt, kind, root, comm);
    if (root_here)
        lanes_zero(lanes, drbuf, rcount * size, kind);
    lanes_unpack(lanes, dsbuf, 1, scount, kind, t, 1);
    free(r), free(t);
}

void __zymase_mpi_scatter_fwd_lanes(void **dsbuf, int scount, void **drbuf, int rcount, Handle dt, int kind, int root,
                                    Handle comm, int lanes) {
    check_counts(comm, "MPI_Scatter", dsbuf[0], scount, rcount);
    int size = ranks(comm), root_here = rank_of(comm) == root;
    void *s = root_here ? lanes_pack(lanes, dsbuf, size, scount, kind) : or_zeros(NULL, 1, kind);
    void *r = or_zeros(NULL, rcount * lanes, kind);
    __zymase_mpi_scatter_fwd(s, scount * lanes, r, rcount * lanes, dt, kind, root, comm);
    lanes_unpack(lanes, drbuf, 1, rcount, kind, r, 0);
    free(s), free(r);
}

void __zymase_mpi_scatter_rev_lanes(void **dsbuf, int scount, void **drbuf, int rcount, Handle dt, int kind, int root,
                                    Handle comm, int lanes) {
    check_counts(comm, "MPI_Scatter", dsbuf[0], scount, rcount);
    int size = ranks(comm), root_here = rank_of(comm) == root;
    void *r = lanes_pack(lanes, drbuf, 1, rcount, kind);
    void *t = or_zeros(NULL, root_here ? scount * lanes * size : 1, kind);
    __zymase_mpi_scatter_rev(t, scount * lanes, r, rcount * lanes, dt, kind, root, comm);
    lanes_zero(lanes, drbuf, rcount, kind);
    if (root_here)
        lanes_unpack(lanes, dsbuf, size, scount, kind, t, 1);
    free(r), free(t);
}

void __zymase_mpi_allgather_fwd_lanes(void **dsbuf, int scount, void **drbuf, int rcount, Handle dt, int kind,
                                      Handle comm, int lanes) {
    check_counts(comm, "MPI_Allgather", dsbuf[0], scount, rcount);
    int size = ranks(comm);
    void *s = lanes_pack(lanes, dsbuf, 1, scount, kind), *r = or_zeros(NULL, rcount * lanes * size, kind);
    __zymase_mpi_allgather_fwd(s, scount * lanes, r, rcount * lanes, dt, kind, comm);
    lanes_unpack(lanes, drbuf, size, rcount, kind, r, 0);
    free(s), free(r);
}

void __zymase_mpi_allgather_rev_lanes(void **dsbuf, int scount, void **drbuf, int rcount, Handle dt, int kind,
                                      Handle comm, int lanes) {
    check_counts(comm, "MPI_Allgather", dsbuf[0], scount, rcount);
    int size = ranks(comm);
    void *r = lanes_pack(lanes, drbuf, size, rcount, kind), *t = or_zeros(NULL, scount * lanes, kind);
    __zymase_mpi_allgather_rev(t, scount * lanes, r, rcount * lanes, dt, kind, comm);
    lanes_zero(lanes, drbuf, rcount * size, kind);
    lanes_unpack(lanes, dsbuf, 1, scount, kind, t, 1);
    free(r), free(t);
}

/* ---- MPI_MAX / MPI_MIN: the owners found once (the record), one sum for every lane ---- */

/* every lane's owned part of its send buffer's tangent, packed */
static void *lanes_owned(const int *owner, void *const *dsbuf, int count, int kind, Handle comm, int lanes) {
    size_t es = element_size(kind), n = count > 0 ? (size_t)count : 0;
    char *c = or_zeros(NULL, count * lanes, kind);
    for (int k = 0; k < lanes; k++) {
        void *part = owned(owner, dsbuf[k], count, kind, comm);
        if (n)
            memcpy(c + (size_t)k * n * es, part, n * es);
        free(part);
    }
    return c;
}

static void lanes_add_owned(const int *owner, void *const *dsbuf, const void *t, int count, int kind, Handle comm,
                            int lanes) {
    size_t es = element_size(kind), n = count > 0 ? (size_t)count : 0;
    for (int k = 0; k < lanes; k++)
        add_owned(owner, dsbuf[k], (const char *)t + (size_t)k * n * es, count, kind, comm);
}

void __zymase_mpi_allreduce_extremum_fwd_lanes(void **dsbuf, void **drbuf, int count, Handle dt, int kind,
                                               Handle comm, const int *owner, int lanes) {
    void *c = lanes_owned(owner, dsbuf, count, kind, comm, lanes), *r = or_zeros(NULL, count * lanes, kind);
    MPI_Allreduce(c, r, count * lanes, dt, &ompi_mpi_op_sum, comm);
    lanes_unpack(lanes, drbuf, 1, count, kind, r, 0);
    free(c), free(r);
}

void __zymase_mpi_reduce_extremum_fwd_lanes(void **dsbuf, void **drbuf, int count, Handle dt, int kind, int root,
                                            Handle comm, const int *owner, int lanes) {
    void *c = lanes_owned(owner, dsbuf, count, kind, comm, lanes), *r = or_zeros(NULL, count * lanes, kind);
    MPI_Reduce(c, r, count * lanes, dt, &ompi_mpi_op_sum, root, comm);
    if (rank_of(comm) == root)
        lanes_unpack(lanes, drbuf, 1, count, kind, r, 0);
    free(c), free(r);
}

void __zymase_mpi_allreduce_extremum_rev_lanes(void **dsbuf, void **drbuf, int count, Handle dt, int kind,
                                               Handle comm, const int *owner, int lanes) {
    void *r = lanes_pack(lanes, drbuf, 1, count, kind), *t = or_zeros(NULL, count * lanes, kind);
    MPI_Allreduce(r, t, count * lanes, dt, &ompi_mpi_op_sum, comm);
    lanes_zero(lanes, drbuf, count, kind);
    lanes_add_owned(owner, dsbuf, t, count, kind, comm, lanes);
    free(r), free(t);
}

void __zymase_mpi_reduce_extremum_rev_lanes(void **dsbuf, void **drbuf, int count, Handle dt, int kind, int root,
                                            Handle comm, const int *owner, int lanes) {
    void *r = lanes_pack(lanes, drbuf, 1, count, kind);
    void *t = root_adjoint_to_all(r, count * lanes, dt, kind, root, comm);
    if (rank_of(comm) == root)
        lanes_zero(lanes, drbuf, count, kind);
    lanes_add_owned(owner, dsbuf, t, count, kind, comm, lanes);
    free(r), free(t);
}

/* ---- non-blocking point-to-point: one record per request for every lane ---------------- */

static Record *lanes_record(int receive, void **dbuf, int count, Handle dt, int kind, int peer, int tag, Handle comm,
                            Handle *reqp, int lanes) {
    Record *r = record(receive, dbuf[0], count, dt, kind, peer, tag, comm, reqp);
    r->lanes = lanes;
    r->shadows = malloc((size_t)lanes * sizeof(void *));
    memcpy(r->shadows, dbuf, (size_t)lanes * sizeof(void *));
    return r;
}

static void lanes_release(Record *r) {
    free(r->buffer);
    free(r->shadows);
}

/* forward mode: the tangent message completed (finish_forward) */
static void lanes_arrived(Record *r) {
    if (r->receive && r->peer != ZYMASE_PROC_NULL)
        lanes_unpack(r->lanes, r->shadows, 1, r->count, r->kind, r->buffer, 0);
    lanes_release(r);
}

/* reverse mode: the adjoint message completed (__zymase_mpi_request_rev) */
static void lanes_adjoint_arrived(Record *r) {
    if (r->receive) {
        if (r->peer != ZYMASE_PROC_NULL)
            lanes_zero(r->lanes, r->shadows, r->count, r->kind);
    } else {
        lanes_unpack(r->lanes, r->shadows, 1, r->count, r->kind, r->buffer, 1);
    }
    lanes_release(r);
}

void __zymase_mpi_isend_fwd_lanes(void **dbuf, int count, Handle dt, int kind, int dest, int tag, Handle comm,
                                  Handle *reqp, int lanes) {
    Record *r = lanes_record(0, dbuf, count, dt, kind, dest, tag, comm, reqp, lanes);
    r->buffer = lanes_pack(lanes, dbuf, 1, count, kind);
    MPI_Isend(r->buffer, count * lanes, dt, dest, tag, comm, &r->request);
}

void __zymase_mpi_irecv_fwd_lanes(void **dbuf, int count, Handle dt, int kind, int src, int tag, Handle comm,
                                  Handle *reqp, int lanes) {
    check_envelope(comm, "MPI_Irecv", src, tag);
    Record *r = lanes_record(1, dbuf, count, dt, kind, src, tag, comm, reqp, lanes);
    r->buffer = or_zeros(NULL, count * lanes, kind);
    MPI_Irecv(r->buffer, count * lanes, dt, src, tag, comm, &r->request);
}

void *__zymase_mpi_isend_record_lanes(void **dbuf, int count, Handle dt, int kind, int dest, int tag, Handle comm,
                                      Handle *reqp, int lanes) {
    return lanes_record(0, dbuf, count, dt, kind, dest, tag, comm, reqp, lanes);
}

void *__zymase_mpi_irecv_record_lanes(void **dbuf, int count, Handle dt, int kind, int src, int tag, Handle comm,
                                      Handle *reqp, int lanes) {
    check_envelope(comm, "MPI_Irecv", src, tag);
    return lanes_record(1, dbuf, count, dt, kind, src, tag, comm, reqp, lanes);
}
