/* fake_nvml.c - a stand-in for libnvidia-ml.so.1 for tests: one GPU (an
 * RTX PRO 6000, sm_120) whose SM clock starts at FAKE_NVML_CLOCK MHz (1800)
 * and moves by FAKE_NVML_CLOCK_STEP MHz (0) at every nvmlInit (counted in
 * the file FAKE_NVML_STATE, since moeprobe unloads the library between
 * uses), so that consecutive engine starts run at different clocks; the
 * throttle reasons are FAKE_NVML_THROTTLE (0). Xid events: with
 * FAKE_NVML_KMSG naming a file of kernel-log lines (refengine's fake driver
 * writes it: REFENGINE_FAKE_KMSG, docs/refengine.md), nvmlEventSetWait_v2
 * delivers one nvmlEventTypeXidCriticalError event per "NVRM: Xid" line
 * appended after the event set was created that names a pid ("pid=", as
 * the H200 of issue 24 delivered one event, the 31, per fault and none for
 * the pid-less Xid 13 lines); without it no event comes;
 * FAKE_NVML_EVENTS=unsupported makes nvmlDeviceRegisterEvents return
 * NVML_ERROR_NOT_SUPPORTED. The device sits at PCI 0000:BB:00, BB =
 * FAKE_NVML_PCI_BUS (1). With FAKE_NVML_STARTUP_S, the
 * clock reads FAKE_NVML_STARTUP_CLOCK MHz (600) for that many seconds after
 * each nvmlInit - an engine's start-up, when the GPU idles while the model
 * loads - and the clock above after that. FAKE_NVML_MEM_FILE makes the
 * memory in use a file's (mem_used below). Loaded by moeprobe through
 * MOEPROBE_NVML_LIB. Not part of moeprobe. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int inits;
static double init_s; /* CLOCK_MONOTONIC seconds of the last nvmlInit */

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 0) : def;
}

int nvmlInit_v2(void)
{
    const char *state = getenv("FAKE_NVML_STATE");
    init_s = mono_s();
    inits = 1;
    if (state && *state) {
        FILE *f = fopen(state, "r");
        if (f) {
            if (fscanf(f, "%d", &inits) != 1)
                inits = 0;
            fclose(f);
            inits++;
        }
        f = fopen(state, "w");
        if (f) {
            fprintf(f, "%d\n", inits);
            fclose(f);
        }
    }
    return 0;
}
int nvmlShutdown(void) { return 0; }
int nvmlSystemGetDriverVersion(char *buf, unsigned len)
{
    snprintf(buf, len, "580.95.05");
    return 0;
}
int nvmlSystemGetCudaDriverVersion_v2(int *v)
{
    *v = 13000;
    return 0;
}
int nvmlDeviceGetCount_v2(unsigned *n)
{
    *n = 1;
    return 0;
}
static int the_device;
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev)
{
    if (i != 0)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *dev = &the_device;
    return 0;
}
/* nvmlPciInfo_t: the one device sits at 0000:01:00 (refengine's fake
 * kernel-log lines name that address) */
struct fake_pci_info {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
};
int nvmlDeviceGetPciInfo_v3(void *dev, struct fake_pci_info *p)
{
    (void)dev;
    memset(p, 0, sizeof(*p));
    p->bus = (unsigned)env_long("FAKE_NVML_PCI_BUS", 1);
    snprintf(p->bus_id_legacy, sizeof(p->bus_id_legacy), "0000:%02x:00.0", p->bus & 0xff);
    snprintf(p->bus_id, sizeof(p->bus_id), "00000000:%02x:00.0", p->bus & 0xff);
    return 0;
}
int nvmlDeviceGetName(void *dev, char *buf, unsigned len)
{
    (void)dev;
    snprintf(buf, len, "NVIDIA RTX PRO 6000 Blackwell Workstation Edition");
    return 0;
}
int nvmlDeviceGetCudaComputeCapability(void *dev, int *major, int *minor)
{
    (void)dev;
    *major = 12;
    *minor = 0;
    return 0;
}
/* Memory in use: 80 GiB, or with FAKE_NVML_MEM_FILE what that file says:
 * "USED_MIB [UNTIL]" is USED_MIB until the wall-clock second UNTIL (always
 * without it), then 1024 MiB; no file is 1024 MiB too (an engine's memory
 * that is freed some time after it exits). */
static unsigned long long mem_used(void)
{
    const char *path = getenv("FAKE_NVML_MEM_FILE");
    if (!path || !*path)
        return 80ULL << 30;
    unsigned long long used = 1024;
    FILE *f = fopen(path, "r");
    if (f) {
        unsigned long long mib = 0;
        double until = 0;
        int n = fscanf(f, "%llu %lf", &mib, &until);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        if (n == 1 || (n == 2 && (double)ts.tv_sec < until))
            used = mib;
        fclose(f);
    }
    return used << 20;
}

int nvmlDeviceGetMemoryInfo(void *dev, unsigned long long mem[3])
{
    (void)dev;
    mem[0] = 96ULL << 30;
    mem[2] = mem_used();
    mem[1] = mem[0] - mem[2];
    return 0;
}
int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz)
{
    (void)dev;
    if (type != 1)
        return 2;
    const char *su = getenv("FAKE_NVML_STARTUP_S");
    if (su && *su && mono_s() - init_s < strtod(su, NULL)) {
        *mhz = (unsigned)env_long("FAKE_NVML_STARTUP_CLOCK", 600);
        return 0;
    }
    long c = env_long("FAKE_NVML_CLOCK", 1800) + (inits - 1) * env_long("FAKE_NVML_CLOCK_STEP", 0);
    *mhz = (unsigned)(c > 0 ? c : 1);
    return 0;
}
int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *c)
{
    (void)dev;
    (void)sensor;
    *c = 71;
    return 0;
}
int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw)
{
    (void)dev;
    *mw = 412000;
    return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *r)
{
    (void)dev;
    *r = (unsigned long long)env_long("FAKE_NVML_THROTTLE", 0);
    return 0;
}

/* ---- Xid events ---- */

struct fake_event_data {
    void *device;
    unsigned long long type, data;
    unsigned gi, ci;
};
struct fake_set {
    long off; /* bytes of FAKE_NVML_KMSG already delivered */
};

static long file_size(const char *path)
{
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n < 0 ? 0 : n;
}

int nvmlEventSetCreate(void **set)
{
    struct fake_set *f = calloc(1, sizeof(*f));
    if (!f)
        return 999;
    f->off = file_size(getenv("FAKE_NVML_KMSG"));
    *set = f;
    return 0;
}

int nvmlDeviceRegisterEvents(void *dev, unsigned long long types, void *set)
{
    (void)dev;
    (void)set;
    const char *u = getenv("FAKE_NVML_EVENTS");
    if (u && !strcmp(u, "unsupported"))
        return 3; /* NVML_ERROR_NOT_SUPPORTED */
    return types & 0x8ULL ? 0 : 2;
}

/* the next whole line after f->off with an Xid that names a pid */
static int next_xid(struct fake_set *f, unsigned long long *xid)
{
    const char *path = getenv("FAKE_NVML_KMSG");
    FILE *fp = path && *path ? fopen(path, "r") : NULL;
    if (!fp)
        return 0;
    int found = 0;
    char line[4096];
    if (fseek(fp, f->off, SEEK_SET) == 0) {
        while (!found && fgets(line, sizeof(line), fp)) {
            size_t n = strlen(line);
            if (!n || line[n - 1] != '\n')
                break; /* not whole yet */
            f->off += (long)n;
            const char *x = strstr(line, "NVRM: Xid");
            const char *c = x ? strstr(x, "): ") : NULL;
            if (c && strstr(c, "pid=")) {
                *xid = strtoull(c + 3, NULL, 10);
                found = 1;
            }
        }
    }
    fclose(fp);
    return found;
}

int nvmlEventSetWait_v2(void *set, struct fake_event_data *d, unsigned timeout_ms)
{
    unsigned long long xid;
    if (next_xid(set, &xid)) {
        memset(d, 0, sizeof(*d));
        d->device = &the_device;
        d->type = 0x8ULL;
        d->data = xid;
        return 0;
    }
    unsigned ms = timeout_ms < 20 ? timeout_ms : 20;
    struct timespec ts = {0, (long)ms * 1000000L};
    nanosleep(&ts, NULL);
    return 10; /* NVML_ERROR_TIMEOUT */
}

int nvmlEventSetFree(void *set)
{
    free(set);
    return 0;
}
