/* Unit tests: the wait for the previous engine's GPU memory before a start
 * (run/gpuwait.h, #29 item 3): the tolerance, the reference taken at the
 * first start, the wait ending once the memory is back, and its bound. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "observe/telemetry.h"
#include "run/gpuwait.h"

static unsigned long long used_mib[16]; /* what the fake reads, call by call */
static size_t ncalls, nvalues;
static int dev;

static int f_init(void) { return 0; }
static int f_shutdown(void) { return 0; }
static int f_count(unsigned *n)
{
    *n = 1;
    return 0;
}
static int f_handle(unsigned i, void **d)
{
    (void)i;
    *d = &dev;
    return 0;
}
static int f_memory(void *d, unsigned long long mem[3])
{
    (void)d;
    size_t i = ncalls < nvalues ? ncalls : nvalues - 1;
    ncalls++;
    mem[0] = 96ULL << 30;
    mem[2] = used_mib[i] << 20;
    mem[1] = mem[0] - mem[2];
    return 0;
}

static struct mp_gpu_sampler *open_fake(const unsigned long long *seq, size_t n)
{
    memcpy(used_mib, seq, n * sizeof(*seq));
    nvalues = n;
    ncalls = 0;
    static const struct mp_gpu_api api = {.init = f_init, .shutdown = f_shutdown, .count = f_count,
                                          .handle = f_handle, .memory = f_memory};
    return mp_gpu_sampler_open(&api, NULL);
}

static void test_busy(void **state)
{
    (void)state;
    assert_false(mp_gpuwait_busy(-1, 90000, 98304));      /* no reference yet */
    assert_false(mp_gpuwait_busy(1024, 1024 + 500, 8192)); /* within 512 MiB */
    assert_true(mp_gpuwait_busy(1024, 1024 + 600, 8192));
    assert_false(mp_gpuwait_busy(1024, 1024 + 1900, 98304)); /* within 2 % of 96 GiB */
    assert_true(mp_gpuwait_busy(1024, 81920, 98304));
}

/* The reference is read when the wait opens (before the run's first
 * engine); a later start waits until the memory is back near it. */
static void test_wait_until_free(void **state)
{
    (void)state;
    struct mp_gpuwait w = MP_GPUWAIT_INIT;
    double waited;
    int sig;
    /* read 1: the warm-up read of the sampler's open; 2: the reference; then
     * 80 GiB for two more reads, then back */
    unsigned long long seq[] = {1024, 1024, 81920, 81920, 81920, 1100};
    mp_gpuwait_open(&w, open_fake(seq, 6));
    assert_non_null(w.s);
    assert_true(w.base_mib > 1023 && w.base_mib < 1025);
    assert_true(mp_gpuwait_before_start(&w, -1, true, "t", &waited, &sig));
    assert_int_equal(sig, 0);
    assert_int_equal(ncalls, 6);
    assert_true(waited > 0.5 && waited < 5);
    /* free at once: no wait */
    assert_true(mp_gpuwait_before_start(&w, -1, true, "t", &waited, &sig));
    assert_true(waited == 0);
    mp_gpuwait_close(&w);
}

/* Bounded: memory another process holds never frees; the start goes on. */
static void test_bounded(void **state)
{
    (void)state;
    struct mp_gpuwait w = MP_GPUWAIT_INIT;
    double waited;
    int sig;
    unsigned long long held[] = {1024, 1024, 81920};
    mp_gpuwait_open(&w, open_fake(held, 3));
    w.max_s = 0.6;
    assert_false(mp_gpuwait_before_start(&w, -1, true, "t", &waited, &sig));
    assert_int_equal(sig, 0);
    assert_true(waited >= 0.6 && waited < 3);
    mp_gpuwait_close(&w);
    /* no NVML: nothing to wait for */
    struct mp_gpuwait none = MP_GPUWAIT_INIT;
    mp_gpuwait_open(&none, NULL);
    assert_true(mp_gpuwait_before_start(&none, -1, true, "t", &waited, &sig));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_busy),
        cmocka_unit_test(test_wait_until_free),
        cmocka_unit_test(test_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
