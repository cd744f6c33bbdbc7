/* fake_nvml.c - a stand-in for libnvidia-ml.so.1 for tests: one GPU (an
 * RTX PRO 6000, sm_120) whose SM clock starts at FAKE_NVML_CLOCK MHz (1800)
 * and moves by FAKE_NVML_CLOCK_STEP MHz (0) at every nvmlInit (counted in
 * the file FAKE_NVML_STATE, since moeprobe unloads the library between
 * uses), so that consecutive engine starts run at different clocks; the
 * throttle reasons are FAKE_NVML_THROTTLE (0). Loaded by moeprobe through
 * MOEPROBE_NVML_LIB. Not part of moeprobe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int inits;

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 0) : def;
}

int nvmlInit_v2(void)
{
    const char *state = getenv("FAKE_NVML_STATE");
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
int nvmlDeviceGetMemoryInfo(void *dev, unsigned long long mem[3])
{
    (void)dev;
    mem[0] = 96ULL << 30;
    mem[2] = 80ULL << 30;
    mem[1] = mem[0] - mem[2];
    return 0;
}
int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz)
{
    (void)dev;
    if (type != 1)
        return 2;
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
