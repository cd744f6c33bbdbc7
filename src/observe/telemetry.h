/* telemetry.h - what the GPU did while an attempt ran: SM clock,
 * temperature, power, memory used and the clock throttle reasons, sampled
 * through NVML (loaded with dlopen, as the fingerprint does; injectable for
 * tests). Two candidates measured at different clocks are not comparable;
 * the report says so (docs/metrics.md).
 *
 * The devices sampled: those CUDA_VISIBLE_DEVICES names by index (the
 * engine's environment as moeprobe gives it), else every device NVML lists.
 * NVML numbers devices in PCI order; CUDA does too only with
 * CUDA_DEVICE_ORDER=PCI_BUS_ID, which a one-GPU machine (DGX Spark) never
 * notices.
 *
 * The NVML calls of a sample take 5-20 us, but one in a few thousand takes
 * 20-30 ms, and the first reads of a device about 6 ms (H200, driver 580;
 * bench/nvml_sample_bench.c, docs/metrics.md "Timing"). Sampled on the
 * loop thread, which stamps token events, such a call would delay those
 * stamps; mp_gpu_sampler_start moves the sampling to a thread of its own.
 * Every function here is called from one thread (the loop's); the sampling
 * thread only reads NVML and records under the sampler's lock. */
#ifndef MP_TELEMETRY_H
#define MP_TELEMETRY_H

#include "compat.h"

#include "model/attempt.h"

/* The NVML functions the sampler uses (nvmlReturn_t results, 0 = success). */
struct mp_gpu_api {
    int (*init)(void);
    int (*shutdown)(void);
    int (*count)(unsigned *n);
    int (*handle)(unsigned i, void **dev);
    int (*clock)(void *dev, int type, unsigned *mhz);      /* type 1 = NVML_CLOCK_SM */
    int (*temperature)(void *dev, int sensor, unsigned *c); /* sensor 0 = GPU */
    int (*power)(void *dev, unsigned *mw);
    int (*memory)(void *dev, unsigned long long mem[3]);    /* total, free, used */
    int (*throttle)(void *dev, unsigned long long *reasons);
    /* Xid events (optional: NULL = not subscribed): nvmlEventSetCreate,
     * nvmlDeviceRegisterEvents, nvmlEventSetWait_v2 (data: nvmlEventData_t,
     * see struct mp_nvml_event_data), nvmlEventSetFree */
    int (*event_create)(void **set);
    int (*event_register)(void *dev, unsigned long long types, void *set);
    int (*event_wait)(void *set, void *data, unsigned timeout_ms);
    int (*event_free)(void *set);
    /* nvmlDeviceGetPciInfo_v3 (optional): info is a struct mp_nvml_pci */
    int (*pci)(void *dev, void *info);
};

/* nvmlPciInfo_t as NVML's header has it (domain, bus and device follow the
 * 16-byte legacy bus id in every version), with room to spare. */
struct mp_nvml_pci {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
    char spare[64];
};

/* nvmlEventData_t as NVML's header has it (device, eventType, eventData,
 * and since NVML 11 the MIG instance ids). */
struct mp_nvml_event_data {
    void *device;
    unsigned long long type, data;
    unsigned gpu_instance, compute_instance;
};
#define MP_NVML_EVENT_XID 0x8ULL       /* nvmlEventTypeXidCriticalError */
#define MP_NVML_ERROR_TIMEOUT 10       /* NVML_ERROR_TIMEOUT */
#define MP_GPU_MAX_XID_EVENTS 64       /* kept per attempt; later ones are counted */

/* An Xid the driver reported through NVML: when it arrived (mp_now_ns),
 * the Xid (eventData; 999 = unknown to NVML) and the NVML index of the
 * GPU. */
struct mp_gpu_xid_event {
    int64_t t_ns;
    unsigned long long xid;
    unsigned index;
};

struct mp_gpu_sampler;

/* Open a sampler: api NULL = dlopen libnvidia-ml.so.1 (or
 * $MOEPROBE_NVML_LIB; "none" = no NVML). visible = the CUDA_VISIBLE_DEVICES
 * value or NULL. Returns NULL when NVML is not there or has no device: the
 * attempt then has no telemetry, and the report says so. */
struct mp_gpu_sampler *mp_gpu_sampler_open(const struct mp_gpu_api *api, const char *visible);
/* Whether the engine is under load now (a workload phase runs). A sampler
 * opens idle: while it is, mp_gpu_sample takes nothing, so the summary - the
 * median SM clock the report compares candidates by - describes the load
 * phases only, never the engine's start-up (model loading, compilation at
 * idle or boost clocks) or the pause after a failure. Turning it on takes the
 * next sample at once, so every phase has at least one. NULL is accepted. */
void mp_gpu_set_load(struct mp_gpu_sampler *s, bool on);
/* Take one sample of every device while under load (at most every
 * interval_s seconds of now_s; earlier calls do nothing), on the calling
 * thread. Does nothing once the sampler has its own thread. NULL is
 * accepted. */
void mp_gpu_sample(struct mp_gpu_sampler *s, double now_s, double interval_s);
/* Sample on a thread of its own from now on: at once whenever load turns
 * on, then every interval_s seconds while it stays on. Returns 0, or a
 * negative errno (EINVAL: NULL, already started or interval <= 0; a
 * pthread error): then the caller keeps calling mp_gpu_sample. */
int mp_gpu_sampler_start(struct mp_gpu_sampler *s, double interval_s);
/* The Xid events received so far (the sampler subscribes to them for every
 * GPU it samples when it opens, and waits for them on its thread, or polls
 * at each mp_gpu_sample; this call first takes what NVML holds already,
 * waiting at most 0.5 s for the thread): up to max copied into out, the number received
 * returned (may exceed max). *why (may be NULL) is NULL when the
 * subscription holds, else why there is none ("nvmlDeviceRegisterEvents
 * returned 3 (not supported)"). NULL s: 0 and why "no NVML". */
size_t mp_gpu_xid_events(struct mp_gpu_sampler *s, struct mp_gpu_xid_event *out, size_t max,
                         const char **why);
/* The PCI addresses of the sampled devices as the kernel log's Xid lines
 * write them ("0000:01:00": domain, bus, device, lower-case hex), up to max
 * into out; the number copied. 0 when NVML cannot say (NULL accepted). */
size_t mp_gpu_pci_addrs(const struct mp_gpu_sampler *s, char (*out)[16], size_t max);
/* Summarise the samples so far. Returns false (out zeroed) without any. */
bool mp_gpu_summary(struct mp_gpu_sampler *s, struct mp_gpu_telemetry *out);
/* The memory in use on the sampled devices now and their total, summed
 * (bytes): for the wait before an engine starts (run/gpuwait.h). 0, or -1
 * when NVML cannot say (NULL accepted). */
int mp_gpu_memory_now(struct mp_gpu_sampler *s, unsigned long long *used, unsigned long long *total);
/* Stop the thread (waiting at most for one reading, or one 20 ms wait for
 * Xid events), shut NVML down, free.
 * Accepts NULL. */
void mp_gpu_sampler_close(struct mp_gpu_sampler *s);

#endif
