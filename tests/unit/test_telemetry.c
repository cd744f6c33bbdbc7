/* test_telemetry.c - GPU telemetry through an injected NVML: min/median/max,
 * the devices CUDA_VISIBLE_DEVICES names, throttle reasons, the sampling
 * interval, no NVML; the sampling thread, whose blocking NVML call never
 * holds up the loop thread. */
#include "compat.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "observe/telemetry.h"

static unsigned n_dev = 2, tick;
static int inits, shutdowns;
static unsigned long long reasons[2] = {0x1 | 0x4, 0x40};
static int dev_id[2] = {0, 1};
static bool mem_unsupported;
static bool long_mode; /* test_long_attempt's GPUs: see there */
static unsigned long long long_tick;

static int f_init(void) { inits++; return 0; }
static int f_shutdown(void) { shutdowns++; return 0; }
static int f_count(unsigned *n) { *n = n_dev; return 0; }
static int f_handle(unsigned i, void **d) { *d = &dev_id[i]; return i < n_dev ? 0 : 2; }
/* device 0 runs at 1800 - 100*tick MHz (throttling as it heats), device 1 at 1000 */
static int f_clock(void *d, int type, unsigned *mhz)
{
    assert_int_equal(type, 1);
    if (long_mode)
        *mhz = *(int *)d == 0 ? 1000 + (unsigned)(long_tick % 3) : 3000;
    else
        *mhz = *(int *)d == 0 ? 1800 - 100 * tick : 1000;
    return 0;
}
static int f_temp(void *d, int sensor, unsigned *c)
{
    (void)d;
    assert_int_equal(sensor, 0);
    *c = long_mode ? (long_tick < 100000 ? 60 : 80) : 60 + tick;
    return 0;
}
static int f_power(void *d, unsigned *mw) { (void)d; *mw = 100000 + 1000 * tick; return 0; }
static int f_mem(void *d, unsigned long long m[3])
{
    (void)d;
    if (mem_unsupported)
        return 3; /* NVML_ERROR_NOT_SUPPORTED, as on GB10 */
    m[0] = 128ULL << 30;
    m[2] = (64ULL << 30) + ((unsigned long long)tick << 20);
    m[1] = m[0] - m[2];
    return 0;
}
static int f_throttle(void *d, unsigned long long *r) { *r = reasons[*(int *)d]; return 0; }

static const struct mp_gpu_api api = {f_init, f_shutdown, f_count, f_handle, f_clock,
                                      f_temp, f_power, f_mem, f_throttle,
                                      NULL, NULL, NULL, NULL, NULL}; /* no Xid events, no PCI */

static void test_summary(void **st)
{
    (void)st;
    tick = 0;
    inits = shutdowns = 0;
    mem_unsupported = false;
    struct mp_gpu_sampler *s = mp_gpu_sampler_open(&api, "0");
    mp_gpu_set_load(s, true);
    assert_non_null(s);
    struct mp_gpu_telemetry t;
    assert_false(mp_gpu_summary(s, &t)); /* nothing sampled yet */
    for (tick = 0; tick < 5; tick++)
        mp_gpu_sample(s, (double)tick, 1.0);
    mp_gpu_sample(s, 4.5, 1.0); /* within the interval: no sample */
    assert_true(mp_gpu_summary(s, &t));
    assert_int_equal(t.samples, 5);
    assert_int_equal(t.sm_clock_mhz.n, 5);
    assert_true(t.sm_clock_mhz.min == 1400 && t.sm_clock_mhz.median == 1600 && t.sm_clock_mhz.max == 1800);
    assert_true(t.temperature_c.min == 60 && t.temperature_c.max == 64);
    assert_true(t.power_w.median == 102.0);
    assert_true(t.memory_used_mib.min == 65536 && t.memory_used_mib.max == 65540);
    assert_int_equal(t.throttle_reasons, 0x4); /* idle (bit 0) is not a throttle */
    char words[128];
    mp_gpu_reasons_str(t.throttle_reasons, words, sizeof(words));
    assert_string_equal(words, "sw_power_cap");
    mp_gpu_sampler_close(s);
    assert_int_equal(inits, 1);
    assert_int_equal(shutdowns, 1);
}

/* device i at 0000:(0x41 + i):00; pci_bad: the string and the numbers
 * disagree (an nvmlPciInfo_t of another layout) */
static bool pci_bad;
static int f_pci(void *d, void *info)
{
    struct mp_nvml_pci *p = info;
    memset(p, 0, sizeof(*p));
    p->bus = 0x41u + (unsigned)*(int *)d;
    snprintf(p->bus_id_legacy, sizeof(p->bus_id_legacy), "0000:%02x:00.0",
             pci_bad ? 0x99u : p->bus);
    return 0;
}

/* The engine's GPUs' PCI addresses, as Xid lines write them; unknown
 * (never wrong) when NVML's string and numbers disagree or NVML has no
 * call for it. */
static void test_pci_addrs(void **st)
{
    (void)st;
    struct mp_gpu_api a = api;
    a.pci = f_pci;
    char out[4][16];
    struct mp_gpu_sampler *s = mp_gpu_sampler_open(&a, "1");
    assert_int_equal(mp_gpu_pci_addrs(s, out, 4), 1);
    assert_string_equal(out[0], "0000:42:00");
    mp_gpu_sampler_close(s);
    s = mp_gpu_sampler_open(&a, NULL);
    assert_int_equal(mp_gpu_pci_addrs(s, out, 4), 2);
    assert_string_equal(out[1], "0000:42:00");
    assert_int_equal(mp_gpu_pci_addrs(s, out, 1), 0); /* not all of them: not known */
    mp_gpu_sampler_close(s);
    pci_bad = true;
    s = mp_gpu_sampler_open(&a, "0");
    assert_int_equal(mp_gpu_pci_addrs(s, out, 4), 0);
    mp_gpu_sampler_close(s);
    pci_bad = false;
    s = mp_gpu_sampler_open(&api, "0"); /* no nvmlDeviceGetPciInfo */
    assert_int_equal(mp_gpu_pci_addrs(s, out, 4), 0);
    mp_gpu_sampler_close(s);
    assert_int_equal(mp_gpu_pci_addrs(NULL, out, 4), 0);
}

static void test_devices(void **st)
{
    (void)st;
    tick = 0;
    mem_unsupported = true;
    /* CUDA_VISIBLE_DEVICES=1: only device 1 */
    struct mp_gpu_sampler *s = mp_gpu_sampler_open(&api, "1");
    mp_gpu_set_load(s, true);
    mp_gpu_sample(s, 0, 1);
    struct mp_gpu_telemetry t;
    assert_true(mp_gpu_summary(s, &t));
    assert_true(t.sm_clock_mhz.max == 1000 && t.sm_clock_mhz.n == 1);
    assert_int_equal(t.memory_used_mib.n, 0); /* unsupported: not read */
    assert_int_equal(t.throttle_reasons, 0x40);
    mp_gpu_sampler_close(s);
    /* unset, or a UUID: every device */
    static const char *const all[] = {NULL, "", "GPU-8a1b2c3d", "7"};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        s = mp_gpu_sampler_open(&api, all[i]);
        mp_gpu_set_load(s, true);
        mp_gpu_sample(s, 0, 1);
        assert_true(mp_gpu_summary(s, &t));
        assert_int_equal(t.sm_clock_mhz.n, 2);
        assert_int_equal(t.throttle_reasons, 0x44);
        mp_gpu_sampler_close(s);
    }
    char words[128];
    mp_gpu_reasons_str(0x44 | 0x10000, words, sizeof(words));
    assert_string_equal(words, "sw_power_cap, hw_thermal, other 0x10000");
    /* no device: no sampler */
    n_dev = 0;
    assert_null(mp_gpu_sampler_open(&api, NULL));
    n_dev = 2;
    mp_gpu_sample(NULL, 0, 1); /* accepted */
    assert_false(mp_gpu_summary(NULL, &t));
    mp_gpu_sampler_close(NULL);
}

/* A long attempt (300,000 samples of two GPUs, more than the sampler keeps):
 * the kept values thin out evenly over the whole attempt, whole samples at
 * a time. The temperature is 60 C for the first 100,000 samples and 80 C
 * after, so the whole attempt's median is 80 (keeping only the first ones
 * would say 60); GPU 0 runs at about 1000 MHz, GPU 1 at 3000, so dropping
 * one GPU's values would put the clock median at ~1000 or 3000 instead of
 * between them. min and max stay exact. */
static void test_long_attempt(void **st)
{
    (void)st;
    long_mode = true;
    mem_unsupported = false;
    struct mp_gpu_sampler *s = mp_gpu_sampler_open(&api, "0,1");
    mp_gpu_set_load(s, true);
    assert_non_null(s);
    for (long_tick = 0; long_tick < 300000; long_tick++)
        mp_gpu_sample(s, (double)long_tick, 1.0);
    struct mp_gpu_telemetry t;
    assert_true(mp_gpu_summary(s, &t));
    assert_int_equal(t.samples, 300000);
    assert_int_equal(t.temperature_c.n, 600000);
    assert_true(t.temperature_c.min == 60 && t.temperature_c.max == 80);
    assert_true(t.temperature_c.median == 80);
    assert_true(t.sm_clock_mhz.min == 1000 && t.sm_clock_mhz.max == 3000);
    assert_true(t.sm_clock_mhz.median > 1500 && t.sm_clock_mhz.median < 2500);
    mp_gpu_sampler_close(s);
    long_mode = false;
}

/* Samples of the engine's start-up never reach the summary: a long start-up at an idle clock
 * (here 600 MHz while device 0 loads its model for 10 s) would otherwise be the median that
 * the report compares candidates by, though the load ran at another clock. The sampler opens
 * idle; the load phases turn it on (the first turn samples at once) and off again. */
static void test_startup_excluded(void **st)
{
    (void)st;
    n_dev = 1;
    tick = 0;
    struct mp_gpu_sampler *s = mp_gpu_sampler_open(&api, "0");
    assert_non_null(s);
    tick = 12; /* f_clock: 1800 - 100 * 12 = 600 MHz during the start-up */
    for (int i = 0; i < 10; i++)
        mp_gpu_sample(s, (double)i, 1.0);
    struct mp_gpu_telemetry t;
    assert_false(mp_gpu_summary(s, &t)); /* nothing under load yet */
    tick = 0;                            /* 1800 MHz under load */
    mp_gpu_set_load(s, true);
    mp_gpu_sample(s, 10.2, 1.0); /* at once, though < 1 s after the last start-up call */
    mp_gpu_sample(s, 11.2, 1.0);
    mp_gpu_set_load(s, false);
    tick = 12;
    for (int i = 12; i < 20; i++) /* the pause after the phases (teardown): idle again */
        mp_gpu_sample(s, (double)i, 1.0);
    assert_true(mp_gpu_summary(s, &t));
    assert_int_equal(t.samples, 2);
    assert_true(t.sm_clock_mhz.median == 1800);
    assert_true(t.sm_clock_mhz.min == 1800 && t.sm_clock_mhz.max == 1800);
    mp_gpu_sampler_close(s);
    n_dev = 2;
}

/* The threaded fake: its clock call announces itself and then blocks
 * until the test opens the gate, as a slow NVML call would. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_calls;     /* clock calls begun */
static bool g_open;     /* the gate: calls return */
static pthread_t g_caller;

static int f_clock_gated(void *d, int type, unsigned *mhz)
{
    (void)d;
    (void)type;
    pthread_mutex_lock(&g_mu);
    g_calls++;
    g_caller = pthread_self();
    pthread_cond_broadcast(&g_cv);
    while (!g_open)
        pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    *mhz = 1500;
    return 0;
}

/* Wait (at most 10 s: a failure, not a timing) until n clock calls began. */
static bool wait_calls(int n)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&g_mu);
    int e = 0;
    while (g_calls < n && e == 0)
        e = pthread_cond_timedwait(&g_cv, &g_mu, &until);
    bool ok = g_calls >= n;
    pthread_mutex_unlock(&g_mu);
    return ok;
}

static void test_thread(void **st)
{
    (void)st;
    alarm(60); /* a deadlock (a lock held across NVML) fails the test instead of hanging it */
    n_dev = 1;
    g_calls = 0;
    g_open = true;
    struct mp_gpu_api ga = api;
    ga.clock = f_clock_gated;
    struct mp_gpu_sampler *s = mp_gpu_sampler_open(&ga, "0");
    assert_non_null(s);
    /* open's set-up reading ran on this thread */
    assert_int_equal(g_calls, 1);
    assert_true(pthread_equal(g_caller, pthread_self()));
    assert_int_equal(mp_gpu_sampler_start(s, 3600.0), 0);
    assert_int_equal(mp_gpu_sampler_start(s, 1.0), -EINVAL); /* once */
    pthread_mutex_lock(&g_mu);
    g_open = false; /* from now on a reading blocks in NVML */
    pthread_mutex_unlock(&g_mu);
    /* load on: the thread reads at once, by itself (no mp_gpu_sample call) */
    mp_gpu_set_load(s, true);
    assert_true(wait_calls(2));
    assert_false(pthread_equal(g_caller, pthread_self()));
    /* while that reading blocks, the loop thread is never held up */
    mp_gpu_sample(s, 1e9, 1.0); /* a no-op once threaded: it would block here */
    struct mp_gpu_telemetry t;
    assert_false(mp_gpu_summary(s, &t)); /* the blocked reading is not recorded yet */
    mp_gpu_set_load(s, false);
    assert_int_equal(g_calls, 2);
    pthread_mutex_lock(&g_mu);
    g_open = true;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    /* load on again: a new reading at once though the interval is an hour */
    mp_gpu_set_load(s, true);
    assert_true(wait_calls(3));
    mp_gpu_sampler_close(s); /* joins the thread */
    alarm(0);
    n_dev = 2;
}

/* Xid events whose wait returns at once with nothing (NVML_ERROR_TIMEOUT). */
static int ev_set;
static int f_ev_create(void **set) { *set = &ev_set; return 0; }
static int f_ev_register(void *dev, unsigned long long types, void *set)
{
    (void)dev; (void)types; (void)set;
    return 0;
}
static int f_ev_wait(void *set, void *data, unsigned timeout_ms)
{
    (void)set; (void)data; (void)timeout_ms;
    sched_yield();
    return MP_NVML_ERROR_TIMEOUT;
}
static int f_ev_free(void *set) { (void)set; return 0; }

/* The sampling thread waits for Xids from its first turn, possibly before
 * mp_gpu_sampler_start has returned to its caller. It once decided whether
 * to drop its lock for that wait by reading a flag the caller set after
 * pthread_create: a thread that came first kept the lock and then took it
 * a second time, and the next mp_gpu_set_load waited forever (a qualify run
 * hung this way). Many starts make that interleaving likely; alarm turns a
 * deadlock into a failure. */
static void test_xid_thread_start(void **st)
{
    (void)st;
    alarm(60);
    n_dev = 1;
    struct mp_gpu_api ga = api;
    ga.event_create = f_ev_create;
    ga.event_register = f_ev_register;
    ga.event_wait = f_ev_wait;
    ga.event_free = f_ev_free;
    for (int i = 0; i < 300; i++) {
        struct mp_gpu_sampler *s = mp_gpu_sampler_open(&ga, "0");
        assert_non_null(s);
        assert_int_equal(mp_gpu_sampler_start(s, 3600.0), 0);
        mp_gpu_set_load(s, true);
        struct mp_gpu_xid_event ev[4];
        const char *why = NULL;
        assert_int_equal(mp_gpu_xid_events(s, ev, 4, &why), 0);
        mp_gpu_set_load(s, false);
        mp_gpu_sampler_close(s);
    }
    alarm(0);
    n_dev = 2;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_long_attempt),
        cmocka_unit_test(test_devices),
        cmocka_unit_test(test_pci_addrs),
        cmocka_unit_test(test_startup_excluded),
        cmocka_unit_test(test_thread),
        cmocka_unit_test(test_xid_thread_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
