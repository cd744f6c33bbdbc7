/* nvml_sample_bench.c - how long one GPU telemetry sample takes through the
 * real libnvidia-ml (or $MOEPROBE_NVML_LIB): the sample runs on the loop
 * thread that stamps SSE events, so its length is how late an event's
 * timestamp can be (docs/metrics.md "Timing"). Takes N samples
 * (argv[1], default 2000) of every visible device through the product's
 * sampler (observe/telemetry.h, the same calls an attempt makes) and prints
 * the time to open the sampler (dlopen, nvmlInit, the devices' set-up
 * reads) and per sample: the first sample's, then min,
 * p50, p99, max of the others in microseconds and how many took over 1 ms.
 * Usage: build/rel/bench/nvml_sample_bench [N]   (exit 2: no NVML) */
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "observe/telemetry.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
    if (n < 1 || n > 1000000) {
        fprintf(stderr, "usage: nvml_sample_bench [N in 1..1000000]\n");
        return 2;
    }
    double t_open = now_us();
    struct mp_gpu_sampler *s = mp_gpu_sampler_open(NULL, getenv("CUDA_VISIBLE_DEVICES"));
    t_open = now_us() - t_open;
    if (!s) {
        fprintf(stderr, "nvml_sample_bench: no NVML or no device\n");
        return 2;
    }
    mp_gpu_set_load(s, true);
    double *t = malloc((size_t)n * sizeof(*t));
    if (!t)
        return 3;
    for (long i = 0; i < n; i++) {
        double t0 = now_us();
        /* a 'now' one interval past the last sample: every call samples */
        mp_gpu_sample(s, (double)(i + 1) * 2.0, 1.0);
        t[i] = now_us() - t0;
    }
    struct mp_gpu_telemetry tel;
    bool have = mp_gpu_summary(s, &tel);
    double first = t[0];
    long m = n - 1, slow = 0;
    double *r = t + 1; /* the others */
    for (long i = 0; i < m; i++)
        slow += r[i] > 1000;
    if (m > 0)
        qsort(r, (size_t)m, sizeof(*r), cmp);
    printf("nvml_sample_bench: open %.1f us; %ld samples%s: first %.1f us; the other %ld: min %.1f us, p50 %.1f us, "
           "p99 %.1f us, max %.1f us, %ld over 1 ms\n",
           t_open, n, have ? "" : " (none kept)", first, m, m ? r[0] : 0, m ? r[m / 2] : 0,
           m ? r[(size_t)((double)m * 0.99)] : 0, m ? r[m - 1] : 0, slow);
    free(t);
    mp_gpu_sampler_close(s);
    return 0;
}
