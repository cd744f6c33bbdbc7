#include "observe/telemetry.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "xalloc.h"

#define MAX_DEV 16
/* Per metric, kept values: beyond this many, every second one is dropped
 * and only every second sample is kept from then on (stride doubles), so
 * the values stay evenly spread over the whole attempt - a 30-day soak's
 * median describes all 30 days, not the first - in bounded memory. min and
 * max are exact over every sample. */
#define MAX_SAMPLES 65536
/* Longest single wait for an Xid event on the Xid thread: how soon it sees
 * a drain request or the close. */
#define XID_WAIT_S 0.02

struct series {
    double *v;
    size_t *at;   /* the sample number of each kept value */
    size_t n, cap;
    double min, max;
    size_t seen;
};

struct mp_gpu_sampler {
    struct mp_gpu_api api;
    void *lib; /* dlopen handle, or NULL when injected */
    void *dev[MAX_DEV];
    size_t ndev;
    double last_s;
    bool sampled;
    size_t samples;
    struct series clock, temp, power, mem;
    unsigned long long reasons;
    size_t stride; /* keep the values of every stride-th sample (>= 1) */
    bool load;     /* under load (mp_gpu_set_load): only then is it sampled */
    /* the sampling thread (mp_gpu_sampler_start); mu guards every field
     * above once it runs, cv wakes it (load turned on, close) */
    bool threaded, stop;
    double interval_s;
    /* Xid events (NVML): the set the devices are registered in, or NULL
     * and why not; what arrived (guarded by mu once threaded) */
    void *evset;
    char ev_why[160];
    struct mp_gpu_xid_event ev[MP_GPU_MAX_XID_EVENTS];
    size_t nev;
    unsigned dev_index[MAX_DEV]; /* NVML index of dev[i] */
    char pci[MAX_DEV][16];       /* "0000:01:00" of dev[i], "" unknown (set at open) */
    unsigned drain_req, drain_done; /* mp_gpu_xid_events asks the Xid thread to drain */
    pthread_t thread;
    /* Xid events are waited for on a thread of their own: an NVML event
     * wait cannot be woken by cv, and on the sampling thread it delayed a
     * phase's first sample by up to XID_WAIT_S (a phase shorter than that
     * went unsampled) */
    pthread_t xid_thread;
    bool xid_threaded;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

/* Keep x of sample number at when keep is set (the sample falls on the
 * stride); min and max always see it. */
static void push(struct series *s, double x, size_t at, bool keep)
{
    s->min = s->seen ? MP_MIN(s->min, x) : x;
    s->max = s->seen ? MP_MAX(s->max, x) : x;
    s->seen++;
    if (!keep)
        return;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = xreallocarray(s->v, s->cap, sizeof(*s->v));
        s->at = xreallocarray(s->at, s->cap, sizeof(*s->at));
    }
    s->at[s->n] = at;
    s->v[s->n++] = x;
}

/* Keep only the values of samples on the new stride (every device's value
 * of a kept sample stays: whole samples are dropped, never one device). */
static void thin(struct series *s, size_t stride)
{
    size_t j = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->at[i] % stride == 0) {
            s->at[j] = s->at[i];
            s->v[j++] = s->v[i];
        }
    }
    s->n = j;
}

static bool load(struct mp_gpu_api *api, void **lib)
{
    const char *name = getenv("MOEPROBE_NVML_LIB");
    if (name && !strcmp(name, "none"))
        return false;
    void *h = dlopen(name && *name ? name : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return false;
    memset(api, 0, sizeof(*api));
#define SYM(field, a, b)                        \
    do {                                        \
        void *p_ = dlsym(h, a);                 \
        if (!p_ && (b))                         \
            p_ = dlsym(h, (b) ? (b) : "");      \
        memcpy(&api->field, &p_, sizeof(p_));   \
    } while (0)
    SYM(init, "nvmlInit_v2", "nvmlInit");
    SYM(shutdown, "nvmlShutdown", NULL);
    SYM(count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    SYM(handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    SYM(clock, "nvmlDeviceGetClockInfo", NULL);
    SYM(temperature, "nvmlDeviceGetTemperature", NULL);
    SYM(power, "nvmlDeviceGetPowerUsage", NULL);
    SYM(memory, "nvmlDeviceGetMemoryInfo", NULL);
    /* renamed "clocks event reasons" in newer drivers; same bits */
    SYM(throttle, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons");
    SYM(event_create, "nvmlEventSetCreate", NULL);
    SYM(event_register, "nvmlDeviceRegisterEvents", NULL);
    SYM(event_wait, "nvmlEventSetWait_v2", "nvmlEventSetWait");
    SYM(event_free, "nvmlEventSetFree", NULL);
    SYM(pci, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2");
#undef SYM
    *lib = h;
    return true;
}

/* Indices from a CUDA_VISIBLE_DEVICES value ("0,2"); UUIDs and MIG names
 * are not indices: then every device is sampled. */
static size_t visible_indices(const char *v, unsigned count, unsigned *out)
{
    size_t n = 0;
    if (!v || !*v)
        return 0;
    const char *p = v;
    while (*p && n < MAX_DEV) {
        char *end;
        long i = strtol(p, &end, 10);
        if (end == p || i < 0 || (unsigned long)i >= count)
            return 0;
        out[n++] = (unsigned)i;
        p = end;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return n;
}

/* Register every sampled GPU for Xid events in one set; on failure the
 * sampler has no set and ev_why says why. */
static void subscribe_xid(struct mp_gpu_sampler *s)
{
    const struct mp_gpu_api *a = &s->api;
    if (!a->event_create || !a->event_register || !a->event_wait || !a->event_free) {
        snprintf(s->ev_why, sizeof(s->ev_why), "this NVML has no event API");
        return;
    }
    int rc = a->event_create(&s->evset);
    if (rc != 0 || !s->evset) {
        snprintf(s->ev_why, sizeof(s->ev_why), "nvmlEventSetCreate returned %d", rc);
        s->evset = NULL;
        return;
    }
    size_t ok = 0;
    for (size_t i = 0; i < s->ndev; i++) {
        rc = a->event_register(s->dev[i], MP_NVML_EVENT_XID, s->evset);
        ok += rc == 0;
    }
    if (!ok) {
        snprintf(s->ev_why, sizeof(s->ev_why), "nvmlDeviceRegisterEvents returned %d%s", rc,
                 rc == 3 ? " (not supported on this GPU)" : rc == 4 ? " (no permission)" : "");
        a->event_free(s->evset);
        s->evset = NULL;
    }
}

/* Wait up to timeout_ms for one Xid event and record it. locked: the
 * caller is the sampling thread and holds mu, which this drops for the
 * wait. The thread says so itself instead of reading s->threaded, which the
 * loop thread sets only after pthread_create returns: a thread that got
 * there first skipped the unlock and then locked mu a second time. */
static void wait_xid(struct mp_gpu_sampler *s, unsigned timeout_ms, bool locked)
{
    struct mp_nvml_event_data d;
    memset(&d, 0, sizeof(d));
    if (locked)
        pthread_mutex_unlock(&s->mu);
    int rc = s->api.event_wait(s->evset, &d, timeout_ms);
    if (locked)
        pthread_mutex_lock(&s->mu);
    if (rc != 0 || !(d.type & MP_NVML_EVENT_XID))
        return;
    if (s->nev < MP_GPU_MAX_XID_EVENTS) {
        struct mp_gpu_xid_event *e = &s->ev[s->nev];
        e->t_ns = mp_now_ns();
        e->xid = d.data;
        e->index = 0;
        for (size_t i = 0; i < s->ndev; i++)
            if (s->dev[i] == d.device)
                e->index = s->dev_index[i];
    }
    s->nev++;
}

/* dev's "0000:01:00" into out, "" unless NVML's bus id string and its
 * numbers agree (a layout of nvmlPciInfo_t other than the one declared
 * leaves the address unknown, never a wrong one). */
static void pci_addr(const struct mp_gpu_api *api, void *dev, char out[16])
{
    struct mp_nvml_pci pi;
    memset(&pi, 0, sizeof(pi));
    out[0] = '\0';
    if (!api->pci || api->pci(dev, &pi) != 0)
        return;
    pi.bus_id_legacy[sizeof(pi.bus_id_legacy) - 1] = '\0';
    unsigned dom, bus, devn;
    char want[16];
    if (sscanf(pi.bus_id_legacy, "%x:%x:%x", &dom, &bus, &devn) != 3 || dom != pi.domain ||
        bus != pi.bus || devn != pi.device)
        return;
    snprintf(want, sizeof(want), "%04x:%02x:%02x", dom & 0xffff, bus & 0xff, devn & 0xff);
    memcpy(out, want, sizeof(want));
}

struct mp_gpu_sampler *mp_gpu_sampler_open(const struct mp_gpu_api *api, const char *visible)
{
    struct mp_gpu_api loaded;
    void *lib = NULL;
    if (!api) {
        if (!load(&loaded, &lib))
            return NULL;
        api = &loaded;
    }
    unsigned count = 0;
    if (!api->init || !api->count || !api->handle || api->init() != 0) {
        if (lib)
            dlclose(lib);
        return NULL;
    }
    struct mp_gpu_sampler *s = xcalloc(1, sizeof(*s));
    s->stride = 1;
    s->api = *api;
    s->lib = lib;
    s->last_s = -1e300;
    if (api->count(&count) == 0 && count > 0) {
        unsigned idx[MAX_DEV];
        size_t n = visible_indices(visible, count, idx);
        if (n == 0)
            for (unsigned i = 0; i < count && n < MAX_DEV; i++)
                idx[n++] = i;
        for (size_t i = 0; i < n; i++) {
            void *d = NULL;
            if (api->handle(idx[i], &d) == 0 && d) {
                pci_addr(api, d, s->pci[s->ndev]);
                s->dev_index[s->ndev] = idx[i];
                s->dev[s->ndev++] = d;
            }
        }
    }
    if (s->ndev == 0) {
        mp_gpu_sampler_close(s);
        return NULL;
    }
    subscribe_xid(s);
    /* NVML's first reads of a device set it up (about 6 ms on an H200,
     * docs/metrics.md "Timing"; later samples take 5-20 us): pay that here,
     * at the engine's spawn, not in a phase's first turn, where it would
     * delay the stamps of token events already in flight */
    for (size_t i = 0; i < s->ndev; i++) {
        unsigned u;
        unsigned long long mem[3], r;
        if (s->api.clock)
            (void)s->api.clock(s->dev[i], 1, &u);
        if (s->api.temperature)
            (void)s->api.temperature(s->dev[i], 0, &u);
        if (s->api.power)
            (void)s->api.power(s->dev[i], &u);
        if (s->api.memory)
            (void)s->api.memory(s->dev[i], mem);
        if (s->api.throttle)
            (void)s->api.throttle(s->dev[i], &r);
    }
    return s;
}

void mp_gpu_set_load(struct mp_gpu_sampler *s, bool on)
{
    if (!s)
        return;
    if (s->threaded)
        pthread_mutex_lock(&s->mu);
    if (on && !s->load)
        s->sampled = false; /* the next sample is taken at once */
    s->load = on;
    if (s->threaded) {
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
    }
}

/* One reading of every device: what NVML said (ok[k][i] false where a call
 * failed). No lock: only the NVML calls, which may take milliseconds. */
struct reading {
    double v[4][MAX_DEV]; /* clock, temperature, power, memory used */
    bool ok[4][MAX_DEV];
    unsigned long long reasons;
};

static void read_devices(const struct mp_gpu_sampler *s, struct reading *r)
{
    memset(r, 0, sizeof(*r));
    for (size_t i = 0; i < s->ndev; i++) {
        void *d = s->dev[i];
        unsigned u;
        unsigned long long mem[3], t;
        if (s->api.clock && s->api.clock(d, 1, &u) == 0)
            r->v[0][i] = u, r->ok[0][i] = true;
        if (s->api.temperature && s->api.temperature(d, 0, &u) == 0)
            r->v[1][i] = u, r->ok[1][i] = true;
        if (s->api.power && s->api.power(d, &u) == 0)
            r->v[2][i] = u / 1000.0, r->ok[2][i] = true;
        if (s->api.memory && s->api.memory(d, mem) == 0)
            r->v[3][i] = (double)(mem[2] >> 20), r->ok[3][i] = true;
        if (s->api.throttle && s->api.throttle(d, &t) == 0)
            r->reasons |= t & ~1ULL; /* bit 0 is "GPU idle": not a throttle */
    }
}

/* Fold one reading into the series (the caller holds mu when threaded). */
static void record(struct mp_gpu_sampler *s, const struct reading *r)
{
    size_t at = s->samples++;
    bool keep = at % s->stride == 0;
    struct series *all[] = {&s->clock, &s->temp, &s->power, &s->mem};
    for (size_t i = 0; i < s->ndev; i++)
        for (size_t k = 0; k < MP_ARRAY_SIZE(all); k++)
            if (r->ok[k][i])
                push(all[k], r->v[k][i], at, keep);
    s->reasons |= r->reasons;
    bool full = false;
    for (size_t k = 0; k < MP_ARRAY_SIZE(all); k++)
        full = full || all[k]->n >= MAX_SAMPLES;
    if (full) { /* thin out evenly; keep half as many samples from now on */
        s->stride *= 2;
        for (size_t k = 0; k < MP_ARRAY_SIZE(all); k++)
            thin(all[k], s->stride);
    }
}

void mp_gpu_sample(struct mp_gpu_sampler *s, double now_s, double interval_s)
{
    if (s && !s->threaded && s->evset)
        wait_xid(s, 0, false); /* no thread: poll for an Xid each turn */
    if (!s || s->threaded || !s->load || (s->sampled && now_s - s->last_s < interval_s))
        return;
    s->sampled = true;
    s->last_s = now_s;
    struct reading r;
    read_devices(s, &r);
    record(s, &r);
}

/* The sampling thread: a reading when load turns on, then every interval
 * while it stays on; the NVML calls run without the lock, so the loop
 * thread (set_load, summary) never waits for NVML. */
static void *sampler_main(void *arg)
{
    struct mp_gpu_sampler *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        double now = (double)mp_now_ns() / 1e9;
        if (s->load && (!s->sampled || now - s->last_s >= s->interval_s)) {
            s->sampled = true;
            s->last_s = now;
            pthread_mutex_unlock(&s->mu);
            struct reading r;
            read_devices(s, &r);
            pthread_mutex_lock(&s->mu);
            record(s, &r);
            continue;
        }
        double wake = s->last_s + s->interval_s;
        if (!s->load) {
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        struct timespec ts = {(time_t)wake, (long)((wake - (double)(time_t)wake) * 1e9)};
        int e = pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        (void)e; /* a wake-up, a timeout or EINTR: the loop decides again */
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* The Xid thread: waits for NVML's Xid events (wait_xid drops mu for the
 * wait) and drains what NVML holds when mp_gpu_xid_events asks. */
static void *xid_main(void *arg)
{
    struct mp_gpu_sampler *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        if (s->drain_req != s->drain_done) {
            unsigned want = s->drain_req, before;
            do { /* whatever NVML holds now, without waiting */
                before = (unsigned)s->nev;
                wait_xid(s, 0, true);
            } while (s->nev != before && !s->stop);
            s->drain_done = want;
            pthread_cond_broadcast(&s->cv);
            continue;
        }
        wait_xid(s, (unsigned)(XID_WAIT_S * 1000), true);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int mp_gpu_sampler_start(struct mp_gpu_sampler *s, double interval_s)
{
    if (!s || s->threaded || !(interval_s > 0))
        return -EINVAL;
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0)
        return -ENOMEM;
    int e = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* mp_now_ns' clock */
    if (e == 0)
        e = pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (e != 0)
        return -e;
    if ((e = pthread_mutex_init(&s->mu, NULL)) != 0) {
        pthread_cond_destroy(&s->cv);
        return -e;
    }
    s->interval_s = interval_s;
    s->stop = false;
    /* the thread takes no signal: every signal stays the loop thread's */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    e = pthread_create(&s->thread, NULL, sampler_main, s);
    if (e == 0 && s->evset) {
        int e2 = pthread_create(&s->xid_thread, NULL, xid_main, s);
        if (e2 != 0) { /* no Xid thread: the sampler stops too */
            pthread_mutex_lock(&s->mu);
            s->stop = true;
            pthread_cond_signal(&s->cv);
            pthread_mutex_unlock(&s->mu);
            pthread_join(s->thread, NULL);
            s->stop = false;
            e = e2;
        } else {
            s->xid_threaded = true;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        return -e;
    }
    s->threaded = true;
    return 0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void stat_of(const struct series *s, struct mp_gpu_stat *out)
{
    memset(out, 0, sizeof(*out));
    if (!s->n)
        return;
    double *v = xmalloc(s->n * sizeof(*v));
    memcpy(v, s->v, s->n * sizeof(*v));
    qsort(v, s->n, sizeof(*v), cmp_d);
    out->n = s->seen;
    out->min = s->min;
    out->max = s->max;
    out->median = s->n % 2 ? v[s->n / 2] : (v[s->n / 2 - 1] + v[s->n / 2]) / 2;
    free(v);
}

int mp_gpu_memory_now(struct mp_gpu_sampler *s, unsigned long long *used, unsigned long long *total)
{
    *used = *total = 0;
    if (!s || !s->api.memory || !s->ndev)
        return -1;
    if (s->threaded)
        pthread_mutex_lock(&s->mu);
    int rc = 0;
    for (size_t i = 0; i < s->ndev && rc == 0; i++) {
        unsigned long long mem[3] = {0, 0, 0};
        if (s->api.memory(s->dev[i], mem) != 0) {
            rc = -1;
            break;
        }
        *total += mem[0];
        *used += mem[2];
    }
    if (s->threaded)
        pthread_mutex_unlock(&s->mu);
    return rc;
}

size_t mp_gpu_pci_addrs(const struct mp_gpu_sampler *s, char (*out)[16], size_t max)
{
    size_t n = 0;
    if (!s || s->ndev > max)
        return 0; /* not all of them: the set is not known */
    for (size_t i = 0; i < s->ndev; i++) {
        if (!s->pci[i][0])
            return 0; /* one unknown: the set is not known */
        memcpy(out[n++], s->pci[i], sizeof(s->pci[i]));
    }
    return n;
}

bool mp_gpu_summary(struct mp_gpu_sampler *s, struct mp_gpu_telemetry *out)
{
    memset(out, 0, sizeof(*out));
    if (!s)
        return false;
    if (s->threaded)
        pthread_mutex_lock(&s->mu);
    bool any = s->samples > 0;
    if (any) {
        out->samples = s->samples;
        stat_of(&s->clock, &out->sm_clock_mhz);
        stat_of(&s->temp, &out->temperature_c);
        stat_of(&s->power, &out->power_w);
        stat_of(&s->mem, &out->memory_used_mib);
        out->throttle_reasons = s->reasons;
    }
    if (s->threaded)
        pthread_mutex_unlock(&s->mu);
    return any;
}

size_t mp_gpu_xid_events(struct mp_gpu_sampler *s, struct mp_gpu_xid_event *out, size_t max,
                         const char **why)
{
    if (!s) {
        if (why)
            *why = "no NVML";
        return 0;
    }
    if (s->threaded && s->evset) { /* the thread drains what NVML holds (bounded wait) */
        pthread_mutex_lock(&s->mu);
        unsigned want = ++s->drain_req;
        pthread_cond_broadcast(&s->cv);
        struct timespec dl;
        clock_gettime(CLOCK_MONOTONIC, &dl);
        dl.tv_nsec += 500000000L;
        if (dl.tv_nsec >= 1000000000L) {
            dl.tv_sec++;
            dl.tv_nsec -= 1000000000L;
        }
        while ((int)(s->drain_done - want) < 0 &&
               pthread_cond_timedwait(&s->cv, &s->mu, &dl) == 0)
            ;
    } else if (s->threaded) {
        pthread_mutex_lock(&s->mu);
    } else if (s->evset) {
        size_t before;
        do {
            before = s->nev;
            wait_xid(s, 0, false);
        } while (s->nev != before);
    }
    size_t n = s->nev;
    for (size_t i = 0; i < n && i < max && i < MP_GPU_MAX_XID_EVENTS; i++)
        out[i] = s->ev[i];
    if (why)
        *why = s->evset ? NULL : s->ev_why;
    if (s->threaded)
        pthread_mutex_unlock(&s->mu);
    return n;
}

void mp_gpu_sampler_close(struct mp_gpu_sampler *s)
{
    if (!s)
        return;
    if (s->threaded) { /* at most one NVML reading's wait */
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_cond_signal(&s->cv);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->thread, NULL);
        if (s->xid_threaded)
            pthread_join(s->xid_thread, NULL);
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
    }
    if (s->evset)
        s->api.event_free(s->evset);
    if (s->api.shutdown)
        s->api.shutdown();
    if (s->lib)
        dlclose(s->lib);
    struct series *all[] = {&s->clock, &s->temp, &s->power, &s->mem};
    for (size_t k = 0; k < MP_ARRAY_SIZE(all); k++) {
        free(all[k]->v);
        free(all[k]->at);
    }
    free(s);
}
