/*
 * STREAM-style triad (J. D. McCalpin, STREAM, https://www.cs.virginia.edu/stream/):
 * a[j] = b[j] + q * c[j] with q = 3, OpenMP static schedule, arrays first touched by
 * the threads that use them. Reference point for rooftop's `triad` kernel
 * (bench/stream/compare.sh).
 *
 * Timing policy, matching rooftop's harness defaults: 3 warm-up runs, then runs until
 * there are at least 10 and at least 0.25 s of them (at most 10,000), each timed alone
 * with a monotonic clock. Bandwidth counts 3 arrays x sizeof(STREAM_TYPE) bytes per
 * element, as STREAM does, in decimal GB/s.
 *
 * Build: gcc -O3 -fopenmp -march=native [-DSTREAM_TYPE=double] triad.c -o triad
 * Run:   ./triad N       (N = elements per array; threads from OMP_NUM_THREADS)
 * Prints one line: n=... bytes_per_elem=... threads=... runs=... best_gbs=...
 * median_gbs=... best_s=... median_s=...
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef STREAM_TYPE
#define STREAM_TYPE float
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void triad(STREAM_TYPE *restrict a, const STREAM_TYPE *restrict b,
                  const STREAM_TYPE *restrict c, STREAM_TYPE q, long n) {
#pragma omp parallel for schedule(static)
    for (long j = 0; j < n; j++)
        a[j] = b[j] + q * c[j];
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s N\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]);
    if (n <= 0) {
        fprintf(stderr, "N must be a positive element count, got %s\n", argv[1]);
        return 2;
    }
    size_t bytes = (size_t)n * sizeof(STREAM_TYPE);
    STREAM_TYPE *a = aligned_alloc(64, (bytes + 63) / 64 * 64);
    STREAM_TYPE *b = aligned_alloc(64, (bytes + 63) / 64 * 64);
    STREAM_TYPE *c = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!a || !b || !c) {
        fprintf(stderr, "cannot allocate 3 x %zu bytes\n", bytes);
        return 1;
    }
#pragma omp parallel for schedule(static)
    for (long j = 0; j < n; j++) {
        a[j] = 0;
        b[j] = (STREAM_TYPE)(0.5 + (double)(j % 1000) / 1000.0);
        c[j] = (STREAM_TYPE)(1.5 - (double)(j % 997) / 997.0);
    }
    const STREAM_TYPE q = 3;

    for (int i = 0; i < 3; i++)
        triad(a, b, c, q, n);

    int cap = 10000, runs = 0;
    double *t = malloc(sizeof(double) * cap);
    double total = 0;
    while ((runs < 10 || total < 0.25) && runs < cap) {
        double t0 = now();
        triad(a, b, c, q, n);
        t[runs] = now() - t0;
        total += t[runs++];
    }

    /* Check a few elements so the stores cannot be dropped and the kernel is right. */
    for (long j = 0; j < n; j += n / 7 + 1) {
        STREAM_TYPE want = b[j] + q * c[j];
        if (a[j] != want) {
            fprintf(stderr, "check failed at %ld: %g != %g\n", j, (double)a[j], (double)want);
            return 1;
        }
    }

    qsort(t, runs, sizeof(double), cmp_double);
    double best = t[0];
    double median = runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
    double moved = 3.0 * (double)bytes;
    printf("n=%ld bytes_per_elem=%zu threads=%d runs=%d best_gbs=%.2f median_gbs=%.2f "
           "best_s=%.6e median_s=%.6e\n",
           n, sizeof(STREAM_TYPE), omp_get_max_threads(), runs, moved / best / 1e9,
           moved / median / 1e9, best, median);
    free(t);
    free(a);
    free(b);
    free(c);
    return 0;
}
