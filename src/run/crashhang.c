/* crashhang.c - a hang's evidence and its GPU core dump (run/crashinfo.h):
 * /health and the engine's token counter twice across a short window,
 * then a dump through every pipe the engine's processes opened, and the
 * kernels the dump's warps were in as cuda-gdb lists them. */
#include "run/crashinfo.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "logs/coredump.h"
#include "logs/demangle.h"
#include "logs/gpufault.h"
#include "proc/proc.h"
#include "observe/srvmetrics.h"
#include "xalloc.h"

#define CONFIRM_S 2.0          /* between the two looks at /health and /metrics */
#define PIPE_BYTES (1 << 20)   /* what triggers a dump (vLLM's blog: 1 MiB of zeros) */
#define MAX_PIPES 16

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    buf_add_some(ud, p, sz * n);
    return sz * n;
}

/* GET base+path: the HTTP status (0 = no answer), the body into body */
static long get(const struct mp_crash_hang_in *in, const char *path, struct buf *body)
{
    CURL *e = curl_easy_init();
    if (!e)
        return 0;
    char *url = xasprintf("%s%s", in->base_url, path);
    struct curl_slist *h = NULL;
    if (in->api_key && *in->api_key) {
        char *a = xasprintf("Authorization: Bearer %s", in->api_key);
        h = curl_slist_append(NULL, a);
        explicit_bzero(a, strlen(a));
        free(a);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    }
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 2000L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, body);
    long code = 0;
    if (curl_easy_perform(e) == CURLE_OK)
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    free(url);
    return code;
}

/* the engine's generated-token counter now (NAN: unreadable, why says) */
static double gen_tokens(const struct mp_crash_hang_in *in, char *why, size_t whyn)
{
    struct buf b = BUF_INIT;
    buf_set_max(&b, MP_PROM_MAX_INPUT);
    long code = get(in, "/metrics", &b);
    double v = NAN;
    struct mp_srvm_snap sn;
    if (code != 200)
        snprintf(why, whyn, "/metrics answered %ld", code);
    else if (mp_srvm_snap_read(&sn, b.data, b.len, why, whyn) == 0)
        v = sn.gen;
    if (isnan(v) && !why[0])
        snprintf(why, whyn, "/metrics has no vllm:generation_tokens_total");
    buf_release(&b);
    return v;
}

/* turn the caller's loop for s seconds (the engine's output keeps flowing) */
static bool pump_for(const struct mp_crash_hang_io *io, double s)
{
    int64_t until = mp_now_ns() + (int64_t)(s * 1e9);
    while (mp_now_ns() < until) {
        if (io->gone(io->ud))
            return false;
        io->pump(io->ud, 100);
    }
    return true;
}

static char *evidence(const struct mp_crash_hang_in *in, const struct mp_crash_hang_io *io)
{
    struct buf b1 = BUF_INIT, b2 = BUF_INIT;
    char why1[160] = "", why2[160] = "";
    long h1 = get(in, "/health", &b1);
    double g1 = gen_tokens(in, why1, sizeof(why1));
    int64_t t0 = mp_now_ns();
    bool alive = pump_for(io, CONFIRM_S);
    long h2 = alive ? get(in, "/health", &b2) : 0;
    double g2 = alive ? gen_tokens(in, why2, sizeof(why2)) : NAN;
    double dt = (double)(mp_now_ns() - t0) / 1e9;
    buf_release(&b1);
    buf_release(&b2);
    struct buf s = BUF_INIT;
    buf_printf(&s, "during the stall /health answered %ld, then %ld %.1f s later", h1, h2, dt);
    if (isnan(g1) || isnan(g2))
        buf_printf(&s, "; the token counter could not be read (%s)", why1[0] ? why1 : why2);
    else if (g2 == g1)
        buf_printf(&s, "; the engine's vllm:generation_tokens_total stayed at %.0f: it generated "
                       "nothing for anyone",
                   g1);
    else
        buf_printf(&s, "; the engine's vllm:generation_tokens_total rose from %.0f to %.0f: it "
                       "generated tokens, but none reached moeprobe's streams",
                   g1, g2);
    if (h1 == 200 && h2 == 200 && !isnan(g1) && g2 == g1)
        buf_adds(&s, " (a wedged server: healthy by /health, no progress by /metrics)");
    return buf_detach(&s, NULL);
}

/* write 1 MiB of zeros into every FIFO pipe_<pid> of dir; their pids */
static size_t trigger(const char *dir, long *pids, char *why, size_t whyn)
{
    size_t n = 0, noreader = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    char *zeros = xcalloc(1, 65536);
    while (d && (e = readdir(d)) != NULL && n < MAX_PIPES) {
        char p[PATH_MAX];
        struct stat st;
        int pl = snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (strncmp(e->d_name, "pipe_", 5) || pl < 0 || (size_t)pl >= sizeof(p) ||
            lstat(p, &st) != 0 || !S_ISFIFO(st.st_mode))
            continue;
        int fd = open(p, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            noreader++; /* ENXIO: the process that opened it is gone */
            continue;
        }
        size_t sent = 0;
        int64_t until = mp_now_ns() + 5000000000LL;
        while (sent < PIPE_BYTES && mp_now_ns() < until) {
            ssize_t w = write(fd, zeros, MP_MIN((size_t)65536, PIPE_BYTES - sent));
            if (w > 0) {
                sent += (size_t)w;
            } else if (w < 0 && errno == EAGAIN) {
                struct pollfd pf = {fd, POLLOUT, 0};
                (void)poll(&pf, 1, 100);
            } else if (w < 0 && errno != EINTR) {
                break;
            }
        }
        close(fd);
        pids[n++] = strtol(e->d_name + 5, NULL, 10);
    }
    if (d)
        closedir(d);
    free(zeros);
    if (!n)
        snprintf(why, whyn, "no pipe to trigger a dump through%s",
                 noreader ? " (their processes are gone)" : " (no process of the engine opened one)");
    return n;
}

/* the dump file of pid, once its size has held for one look */
static bool dump_ready(const char *dir, long pid, char *out, size_t outn, off_t *last)
{
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "core_%ld.", pid);
    DIR *d = opendir(dir);
    struct dirent *e;
    bool ready = false;
    while (d && (e = readdir(d)) != NULL) {
        struct stat st;
        int pl = snprintf(out, outn, "%s/%s", dir, e->d_name);
        if (strncmp(e->d_name, prefix, strlen(prefix)) || pl < 0 || (size_t)pl >= outn ||
            lstat(out, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        ready = st.st_size > 0 && st.st_size == *last;
        *last = st.st_size;
        break;
    }
    if (d)
        closedir(d);
    return ready;
}

/* cuda-gdb's kernel list of a dump file into names; false with why */
static bool kernels_of(const char *file, struct mp_strv *names, char *why, size_t whyn)
{
    if (mp_proc_find_command("cuda-gdb") != 0) {
        snprintf(why, whyn, "cuda-gdb not found to read it (cuda-gdb -batch -ex 'target cudacore "
                            "%s' -ex 'info cuda kernels')",
                 file);
        return false;
    }
    char *target = xasprintf("target cudacore %s", file);
    char *const argv[] = {"cuda-gdb", "-batch", "-nx", "-ex", target, "-ex", "info cuda kernels",
                          NULL};
    struct mp_capture c = {.argv = argv, .timeout_s = 60, .with_stderr = true};
    struct buf out = BUF_INIT;
    struct mp_diag dg = MP_DIAG_INIT;
    int rc = mp_proc_run_capture(&c, &out, &dg);
    size_t n = rc >= 0 ? mp_cudagdb_kernels(out.data, out.len, names) : 0;
    if (!n)
        snprintf(why, whyn, "cuda-gdb listed no kernel (%s)", rc < 0 ? dg.msg : "exit status");
    buf_release(&out);
    free(target);
    return n > 0;
}

static void add_hang_kernel(struct mp_gpu_fault *g, const char *name, long pid, const char *file,
                            const char *state)
{
    struct buf dm = BUF_INIT, sh = BUF_INIT;
    struct mp_kernel_fault k;
    memset(&k, 0, sizeof(k));
    k.device = k.sm = k.warp = -1;
    k.pid = pid;
    k.dump_file = (char *)file;
    k.dump_state = (char *)state;
    if (name) {
        k.name = (char *)name;
        if (mp_demangle_is_mangled(name, strlen(name)) &&
            mp_demangle(name, strlen(name), &dm) == 0) {
            k.mangled = (char *)name;
            k.name = dm.data;
            k.demangled = true;
        }
        struct mp_kfamily f;
        bool fam = mp_gf_family(k.name, k.mangled, &f);
        k.family = fam ? (char *)f.id : NULL;
        k.family_label = fam ? (char *)f.label : NULL;
        mp_demangle_short(k.name, fam && f.key[0] ? f.key : NULL, &sh);
        k.short_name = sh.data;
    }
    mp_gpu_fault_add_kernel(g, &k);
    buf_release(&dm);
    buf_release(&sh);
}

static void dump_hang(const struct mp_crash_hang_in *in, const struct mp_crash_hang_io *io,
                      struct mp_gpu_fault *g)
{
    long pids[MAX_PIPES];
    char why[PATH_MAX + 128] = "";
    size_t np = trigger(in->dir, pids, why, sizeof(why));
    struct buf s = BUF_INIT;
    if (!np) {
        g->hang_dump = xstrdup(why);
        return;
    }
    char files[MAX_PIPES][PATH_MAX];
    off_t last[MAX_PIPES];
    bool ready[MAX_PIPES] = {false};
    memset(last, 0xff, sizeof(last));
    size_t nready = 0;
    int64_t until = mp_now_ns() + (int64_t)(MP_CD_HANG_WAIT_S * 1e9);
    while (nready < np && mp_now_ns() < until) {
        bool alive = pump_for(io, 0.5);
        for (size_t i = 0; i < np; i++) {
            if (ready[i])
                continue;
            /* done: its size held for a look, or its writer is gone (a driver
             * may end the process once the dump is written) */
            ready[i] = dump_ready(in->dir, pids[i], files[i], PATH_MAX, &last[i]) ||
                       (!alive && last[i] > 0);
            nready += ready[i];
        }
        if (!alive)
            break;
    }
    buf_printf(&s, "triggered through %zu pipe(s), %zu dump(s) written", np, nready);
    for (size_t i = 0; i < np; i++) {
        if (!ready[i])
            continue;
        struct mp_strv names = MP_STRV_INIT;
        why[0] = '\0';
        if (kernels_of(files[i], &names, why, sizeof(why))) {
            buf_printf(&s, "; process %ld's warps were in ", pids[i]);
            for (size_t k = 0; k < names.n; k++) {
                add_hang_kernel(g, names.v[k], pids[i], files[i], NULL);
                const struct mp_kernel_fault *hk = &g->k[g->nk - 1];
                buf_printf(&s, "%s%.300s", k ? ", " : "", hk->name);
                if (hk->family_label)
                    buf_printf(&s, " (%s)", hk->family_label);
            }
        } else {
            buf_printf(&s, "; process %ld: %s", pids[i], why);
            add_hang_kernel(g, NULL, pids[i], files[i], "kept: not read");
        }
        mp_strv_release(&names);
    }
    if (nready < np)
        buf_printf(&s, "; %zu dump(s) not finished within %.0f s", np - nready, MP_CD_HANG_WAIT_S);
    g->hang_dump = buf_detach(&s, NULL);
}

const char *mp_crash_on_hang(const struct mp_crash_hang_in *in, const struct mp_crash_hang_io *io,
                             struct mp_gpu_fault *g)
{
    free(g->hang);
    g->hang = evidence(in, io);
    free(g->hang_dump);
    g->hang_dump = NULL;
    if (in->pipes && !io->gone(io->ud))
        dump_hang(in, io, g);
    else if (!in->pipes)
        g->hang_dump = xstrdup("no dump: the engine was not started with a core-dump pipe "
                               "(attached, --no-coredump, or a container that cannot see the "
                               "attempt directory)");
    return g->hang;
}
