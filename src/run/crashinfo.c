/* crashinfo.c - core-dump settings at launch and what the attempt learned
 * at its end (run/crashinfo.h; the hang is crashhang.c). */
#include "run/crashinfo.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "engine/shape.h"
#include "knowledge/knowledge.h"
#include "lines.h"
#include "logs/coredump.h"
#include "logs/demangle.h"
#include "logs/gpufault.h"
#include "logs/xidline.h"
#include "proc/kmsg.h"
#include "xalloc.h"

#define GEN_FLAGS                                                                                  \
    "skip_nonrelocated_elf_images,skip_global_memory,skip_shared_memory,skip_local_memory,"      \
    "skip_constbank_memory,skip_abort"
#define MAX_PIDS 256 /* the leader, up to 128 of its tree, tags, dumps */
#define WINDOW_AFTER_US 1000000LL /* a kernel-log line may come this late */

/* ---------------- launch ---------------- */

static bool cand_sets(const struct mp_candidate *c, const char *name, const char **value)
{
    size_t n = strlen(name);
    for (size_t i = 0; c && i < c->env.n; i++)
        if (!strncmp(c->env.v[i], name, n) && c->env.v[i][n] == '=') {
            if (value)
                *value = c->env.v[i] + n + 1;
            return true;
        }
    return false;
}

static void put(struct mp_crash_env *e, const struct mp_candidate *c, const char *name,
                const char *value)
{
    if (cand_sets(c, name, NULL))
        return; /* the candidate's own setting is a knob: it stays as it is */
    char *kv = xasprintf("%s=%s", name, value);
    mp_strv_push_owned(&e->env, kv);
}

/* a volume word "HOST:CONT[:opts]" or "type=bind,source=HOST,target=CONT" */
static bool volume_maps(const char *w, bool mount, const char *dir, char *out, size_t outn)
{
    char host[PATH_MAX] = "", cont[PATH_MAX] = "";
    if (mount) {
        const char *s = strstr(w, "source="), *t = strstr(w, "target=");
        if (!s)
            s = strstr(w, "src=");
        if (!t)
            t = strstr(w, "dst=");
        if (!t)
            t = strstr(w, "destination=");
        if (!s || !t)
            return false;
        s = strchr(s, '=') + 1;
        t = strchr(t, '=') + 1;
        snprintf(host, sizeof(host), "%.*s", (int)strcspn(s, ","), s);
        snprintf(cont, sizeof(cont), "%.*s", (int)strcspn(t, ","), t);
    } else {
        const char *c = strchr(w, ':');
        if (!c || w[0] != '/')
            return false; /* a named volume is not a host folder */
        snprintf(host, sizeof(host), "%.*s", (int)(c - w), w);
        snprintf(cont, sizeof(cont), "%.*s", (int)strcspn(c + 1, ":"), c + 1);
    }
    size_t hl = strlen(host);
    while (hl > 1 && host[hl - 1] == '/')
        host[--hl] = '\0';
    if (!hl || !cont[0] || strncmp(dir, host, hl) || (dir[hl] != '/' && dir[hl] != '\0' && hl > 1))
        return false;
    snprintf(out, outn, "%s%s", cont, dir + (hl == 1 ? 0 : hl));
    return true;
}

int mp_crash_container_path(char *const *cmd, size_t ncmd, const char *host_dir, char *out,
                            size_t outn)
{
    struct mp_shape sh;
    mp_shape_parse(cmd, ncmd, &sh);
    if (sh.kind != MP_SHAPE_DOCKER)
        return -1;
    for (size_t i = sh.run + 1; i < sh.image && i < ncmd; i++) {
        const char *w = cmd[i];
        bool mount = !strcmp(w, "--mount");
        if ((!strcmp(w, "-v") || !strcmp(w, "--volume") || mount) && i + 1 < sh.image) {
            if (volume_maps(cmd[i + 1], mount, host_dir, out, outn))
                return 1;
            i++;
        } else if (!strncmp(w, "--volume=", 9) && volume_maps(w + 9, false, host_dir, out, outn)) {
            return 1;
        } else if (!strncmp(w, "--mount=", 8) && volume_maps(w + 8, true, host_dir, out, outn)) {
            return 1;
        } else if (!strncmp(w, "-v", 2) && w[2] == '/' && volume_maps(w + 2, false, host_dir, out, outn)) {
            return 1;
        }
    }
    return 0;
}

/* bytes of core_* files kept in the run's attempt directories */
static unsigned long long kept_bytes(const char *run_dir)
{
    unsigned long long total = 0;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/attempts", run_dir);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[PATH_MAX];
        int n = snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        DIR *a = n > 0 && (size_t)n < sizeof(sub) ? opendir(sub) : NULL;
        struct dirent *f;
        while (a && (f = readdir(a)) != NULL) {
            struct stat st;
            char fp[PATH_MAX];
            int m = snprintf(fp, sizeof(fp), "%s/%s", sub, f->d_name);
            if (m > 0 && (size_t)m < sizeof(fp) && !strncmp(f->d_name, "core_", 5) &&
                lstat(fp, &st) == 0 && S_ISREG(st.st_mode))
                total += (unsigned long long)st.st_size;
        }
        if (a)
            closedir(a);
    }
    if (d)
        closedir(d);
    return total;
}

/* where the dump file may go: the folder, or NULL (/dev/null) and why */
static const char *dump_room(const struct mp_crash_env_in *in, const char *dir, char *why,
                             size_t whyn)
{
    struct statvfs vs;
    if (statvfs(dir, &vs) == 0 &&
        (unsigned long long)vs.f_bavail * vs.f_frsize < MP_CD_MIN_FREE) {
        snprintf(why, whyn, "less than %llu GiB free in the run directory",
                 MP_CD_MIN_FREE >> 30);
        return NULL;
    }
    if (in->keep && in->run_dir && kept_bytes(in->run_dir) >= MP_CD_KEEP_CAP) {
        snprintf(why, whyn, "the run keeps %llu GiB of dumps already (--keep-coredumps' cap)",
                 MP_CD_KEEP_CAP >> 30);
        return NULL;
    }
    return dir;
}

/* the settings in words (gpu_fault.coredump) */
static char *env_words(const struct mp_crash_env_in *in, const struct mp_crash_env *e,
                       const char *file, const char *why)
{
    const char *flags = NULL;
    bool aborts = cand_sets(in->cand, "CUDA_COREDUMP_GENERATION_FLAGS", &flags) &&
                  !strstr(flags, "skip_abort");
    return xasprintf("on: %s%s%s%s; %s%s", file ? file : "the driver's lines only, no file (",
                     file ? "" : why, file ? "" : ")",
                     !file ? "" : in->keep ? ", kept" : ", deleted after parsing",
                     aborts ? "the candidate's CUDA_COREDUMP_GENERATION_FLAGS have no skip_abort: "
                              "a fault aborts the process without the Python traceback"
                            : "skip_abort: the Python traceback follows the dump",
                     e->pipes ? "; a hang can trigger one through the pipe" : "");
}

void mp_crash_env_build(const struct mp_crash_env_in *in, struct mp_crash_env *out)
{
    memset(out, 0, sizeof(*out));
    const char *ondump = NULL;
    if (!in->allowed) {
        out->words = xstrdup("off: --no-coredump");
        return;
    }
    if (cand_sets(in->cand, "CUDA_ENABLE_COREDUMP_ON_EXCEPTION", &ondump) &&
        (!ondump[0] || !strcmp(ondump, "0"))) {
        /* the pipe's variables alone (and SHOW_PROGRESS with FILE) made a
         * dump on exception on driver 580: none of them either */
        out->words = xstrdup("off: the candidate sets CUDA_ENABLE_COREDUMP_ON_EXCEPTION off, so "
                             "moeprobe adds no core-dump variable (no hang is dumped)");
        return;
    }
    char abs[PATH_MAX], mapped[PATH_MAX], why[160] = "";
    const char *dir = realpath(in->dir, abs) ? abs : in->dir;
    int ct = mp_crash_container_path(in->cmd, in->ncmd, dir, mapped, sizeof(mapped));
    const char *seen = ct == 1 ? mapped : ct == 0 ? NULL : dir; /* the engine's view */
    const char *file_dir = seen ? dump_room(in, dir, why, sizeof(why)) : NULL;
    if (!seen)
        snprintf(why, sizeof(why), "the container does not see the attempt directory");
    char *file = file_dir ? xasprintf("%s/core_%%p.%%t", seen) : xstrdup("/dev/null");
    put(out, in->cand, "CUDA_ENABLE_COREDUMP_ON_EXCEPTION", "1");
    put(out, in->cand, "CUDA_COREDUMP_SHOW_PROGRESS", "1");
    put(out, in->cand, "CUDA_COREDUMP_GENERATION_FLAGS", GEN_FLAGS);
    put(out, in->cand, "CUDA_COREDUMP_FILE", file);
    if (seen) { /* a hang's dump needs a pipe we can write and a file we can read */
        char *pipe = xasprintf("%s/pipe_%%p", seen);
        put(out, in->cand, "CUDA_ENABLE_USER_TRIGGERED_COREDUMP", "1");
        put(out, in->cand, "CUDA_COREDUMP_PIPE", pipe);
        free(pipe);
        out->pipes = true;
    }
    out->words = env_words(in, out, file_dir ? file : NULL, why);
    free(file);
}

void mp_crash_env_release(struct mp_crash_env *e)
{
    mp_strv_release(&e->env);
    free(e->words);
    memset(e, 0, sizeof(*e));
}

void mp_crash_env_unlist(const struct mp_crash_env *e, struct mp_strv *env_knobs)
{
    size_t j = 0;
    for (size_t i = 0; i < env_knobs->n; i++) {
        if (mp_strv_has(&e->env, env_knobs->v[i]))
            free(env_knobs->v[i]);
        else
            env_knobs->v[j++] = env_knobs->v[i];
    }
    env_knobs->n = j;
    if (env_knobs->v)
        env_knobs->v[j] = NULL;
}

/* ---------------- the end of the attempt ---------------- */

struct scan {
    struct mp_coredump cd;
    long pids[MAX_PIDS]; /* the engine's processes: the leader, its tree, process tags, dumps */
    size_t npids;
    long lineno;
};

static void add_pid(struct scan *s, long pid)
{
    if (pid <= 0)
        return;
    for (size_t i = 0; i < s->npids; i++)
        if (s->pids[i] == pid)
            return;
    if (s->npids < MAX_PIDS)
        s->pids[s->npids++] = pid;
}

static bool has_pid(const struct scan *s, long pid)
{
    for (size_t i = 0; i < s->npids; i++)
        if (s->pids[i] == pid)
            return true;
    return false;
}

/* a vLLM process tag "(EngineCore_DP0 pid=58154) " at the line's start */
static long tag_pid(const char *p, size_t n)
{
    if (n < 8 || p[0] != '(')
        return 0;
    const char *close = memchr(p, ')', MP_MIN(n, (size_t)64));
    const char *at = close ? memmem(p, (size_t)(close - p), " pid=", 5) : NULL;
    return at ? strtol(at + 5, NULL, 10) : 0;
}

static void on_log_line(void *ud, const char *line, size_t len, bool truncated)
{
    struct scan *s = ud;
    MP_UNUSED(truncated);
    s->lineno++;
    if (line[0] == '(')
        add_pid(s, tag_pid(line, len));
    if (memmem(line, len, "coredump:", 9))
        mp_coredump_line(&s->cd, line, len, s->lineno);
}

static void scan_log(const char *dir, struct scan *s)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/server.log", dir);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    struct mp_lines l;
    mp_lines_init(&l, MP_CD_NAME_MAX + 256);
    char *chunk = xmalloc(65536);
    size_t got;
    while ((got = fread(chunk, 1, 65536, f)) > 0)
        mp_lines_feed(&l, chunk, got, on_log_line, s);
    mp_lines_finish(&l, on_log_line, s);
    mp_lines_release(&l);
    free(chunk);
    fclose(f);
}

/* a dump's kernel as the model keeps it */
static void kernel_of(const struct mp_cd_dump *d, struct mp_kernel_fault *k, struct buf *tmp)
{
    memset(k, 0, sizeof(*k));
    k->device = d->device;
    k->sm = d->sm;
    k->warp = d->warp;
    k->pc = d->pc;
    k->has_pc = d->has_pc;
    k->pid = d->pid;
    k->line = d->line_frame ? d->line_frame : d->line_exception;
    k->exception = d->exception[0] ? (char *)d->exception : NULL;
    k->crash_class = (char *)mp_gf_exception_class(k->exception, NULL);
    k->dump_file = d->file;
    if (!d->nframes)
        return;
    const char *raw = d->frames[0].name;
    buf_reset(tmp);
    if (mp_demangle_is_mangled(raw, strlen(raw))) {
        k->mangled = (char *)raw;
        k->demangled = mp_demangle(raw, strlen(raw), tmp) == 0;
    }
    k->name = k->demangled ? tmp->data : (char *)raw;
}

/* true when file lies in the attempt's folder, where moeprobe's own
 * CUDA_COREDUMP_FILE puts the dumps (both paths resolved) */
static bool in_attempt_dir(const struct mp_crash_collect_in *in, const char *file)
{
    char *d = in->dir ? realpath(in->dir, NULL) : NULL, *f = realpath(file, NULL);
    size_t dl = d ? strlen(d) : 0;
    bool inside = d && f && !strncmp(f, d, dl) && f[dl] == '/';
    free(d);
    free(f);
    return inside;
}

/* the dump files of the attempt: deleted unless kept (then within the cap);
 * a dump the candidate's own CUDA_COREDUMP_FILE put elsewhere is the user's
 * and stays where it is */
static const char *dump_fate(const struct mp_crash_collect_in *in, const char *file)
{
    if (!file || !strcmp(file, "/dev/null"))
        return file ? "not written (/dev/null)" : NULL;
    struct stat st;
    if (lstat(file, &st) != 0 || !S_ISREG(st.st_mode))
        return "not found";
    if (!in_attempt_dir(in, file))
        return "kept where the candidate's CUDA_COREDUMP_FILE put it";
    if (in->keep && (!in->run_dir || kept_bytes(in->run_dir) <= MP_CD_KEEP_CAP))
        return "kept";
    unlink(file);
    return in->keep ? "deleted: --keep-coredumps' cap reached" : "deleted after parsing";
}

static void add_kernels(const struct mp_crash_collect_in *in, struct scan *s,
                        struct mp_attempt_result *r)
{
    struct buf tmp = BUF_INIT, sh = BUF_INIT;
    for (size_t i = 0; i < s->cd.n; i++) {
        const struct mp_cd_dump *d = &s->cd.d[i];
        add_pid(s, d->pid);
        if (!d->exception[0] && !d->nframes)
            continue; /* a hang's dump: its kernels come from cuda-gdb (crashhang.c) */
        struct mp_kernel_fault k;
        kernel_of(d, &k, &tmp);
        struct mp_kfamily f;
        buf_reset(&sh);
        if (k.name) {
            bool fam = mp_gf_family(k.name, k.mangled, &f);
            k.family = fam ? (char *)f.id : NULL;
            k.family_label = fam ? (char *)f.label : NULL;
            mp_demangle_short(k.name, fam && f.key[0] ? f.key : NULL, &sh);
            k.short_name = sh.data;
        }
        k.dump_state = (char *)dump_fate(in, d->file);
        mp_gpu_fault_add_kernel(&r->fault, &k);
    }
    buf_release(&tmp);
    buf_release(&sh);
}

/* a crash whose traceback the dump replaced (the process aborted in the
 * driver) takes its class, message and line from the dump */
/* Where the dump replaced the traceback, the dump's exception is the log's
 * crash: the judgement (verdict/classify.h) reads r->obs, on this run and
 * on every reload, so the dump's finding goes there, not into fail_*. A
 * CUDA fault the log already shows (a traceback) stands. */
static void crash_from_dump(struct mp_attempt_result *r)
{
    const struct mp_kernel_fault *k = mp_gpu_fault_exception(&r->fault);
    struct mp_attempt_obs *o = &r->obs;
    if (!k || !o->recorded || (o->crash && mp_kn_class_name_is_cuda_fault(o->crash_class)))
        return;
    free(o->crash_class);
    free(o->crash_message);
    free(o->crash_launch_site);
    mp_strv_release(&o->crash_sites);
    o->crash = true;
    o->crash_class = xstrdup(k->crash_class ? k->crash_class : "cuda-other");
    o->crash_message = xasprintf("%s in kernel %s (GPU core dump; it replaces the Python traceback)",
                                 k->exception, k->short_name ? k->short_name : "(not named)");
    o->crash_launch_site = NULL;
    o->crash_line = k->line;
    o->crash_engine_dead = true; /* the process aborted on the exception */
}

struct kctx {
    const struct mp_crash_collect_in *in;
    struct scan *s;
    struct mp_attempt_result *r;
    int64_t raw_off_ns; /* CLOCK_MONOTONIC_RAW - CLOCK_MONOTONIC now */
};

/* The kernel stamps its log with local_clock(), a clock since boot that NTP
 * does not slew; CLOCK_MONOTONIC is slewed and drifts from it by seconds a
 * day, CLOCK_MONOTONIC_RAW is not: the window is compared in the raw clock. */
static int64_t raw_offset_ns(void)
{
    struct timespec m, r;
    clock_gettime(CLOCK_MONOTONIC, &m);
    clock_gettime(CLOCK_MONOTONIC_RAW, &r);
    return ((int64_t)r.tv_sec - m.tv_sec) * 1000000000LL + (r.tv_nsec - m.tv_nsec);
}

/* Is pci (an Xid line's, "" when not given) one of the engine's GPUs, or
 * not known to be another? */
static bool engine_gpu(const struct mp_crash_collect_in *in, const char *pci)
{
    if (!pci[0] || !in->npci)
        return true;
    for (size_t i = 0; i < in->npci; i++)
        if (!strcasecmp(in->pci[i], pci))
            return true;
    return false;
}

static void on_kmsg(void *ud, const char *line, size_t len)
{
    struct kctx *x = ud;
    long long ts;
    size_t off;
    mp_kmsg_split(line, len, &ts, &off);
    struct mp_xid_line xl;
    if (ts < 0 || !mp_xid_parse(line + off, len - off, &xl))
        return;
    long long from = (x->in->t_spawn_ns + x->raw_off_ns) / 1000;
    long long to = (x->in->t_end_ns + x->raw_off_ns) / 1000 + WINDOW_AFTER_US;
    if (ts < from || ts > to)
        return; /* another time: another run, or an earlier boot's */
    bool engine_pid = xl.pid > 0 && has_pid(x->s, xl.pid);
    if ((xl.pid > 0 && !engine_pid) || (!engine_pid && !engine_gpu(x->in, xl.pci))) {
        x->r->fault.other_xids++; /* another process's, or another GPU's (a tenant's) */
        return;
    }
    struct mp_xid_info info;
    mp_gf_xid(xl.xid, &info);
    char *ev = xstrndup(line + off, MP_MIN(len - off, (size_t)400));
    struct mp_xid_record rec = {
        .xid = xl.xid,
        .source = "kmsg",
        .pid = xl.pid,
        .process = xl.name[0] ? xl.name : NULL,
        .pci = xl.pci[0] ? xl.pci : NULL,
        .detail = xl.detail[0] ? xl.detail : (char *)info.meaning,
        .cause = (char *)mp_xid_cause_name(info.cause),
        .t_s = (double)(ts * 1000 - x->raw_off_ns - x->in->t_spawn_ns) / 1e9,
        .evidence = ev,
    };
    mp_gpu_fault_add_xid(&x->r->fault, &rec);
    free(ev);
}

static void add_nvml(const struct mp_crash_collect_in *in, struct mp_attempt_result *r)
{
    for (size_t i = 0; i < in->nev; i++) {
        const struct mp_gpu_xid_event *e = &in->ev[i];
        struct mp_xid_info info;
        mp_gf_xid((int)e->xid, &info);
        char ev[64];
        snprintf(ev, sizeof(ev), "NVML event, GPU %u", e->index);
        struct mp_xid_record rec = {
            .xid = (int)e->xid,
            .source = "nvml",
            .detail = (char *)info.meaning,
            .cause = (char *)mp_xid_cause_name(info.cause),
            .t_s = (double)(e->t_ns - in->t_spawn_ns) / 1e9,
            .evidence = ev,
        };
        mp_gpu_fault_add_xid(&r->fault, &rec);
    }
}

static bool kept_file(const struct mp_gpu_fault *g, const char *name)
{
    for (size_t i = 0; i < g->nk; i++) {
        const char *f = g->k[i].dump_file, *b = f ? strrchr(f, '/') : NULL;
        b = b ? b + 1 : f;
        if (b && !strcmp(b, name) && g->k[i].dump_state && !strncmp(g->k[i].dump_state, "kept", 4))
            return true;
    }
    return false;
}

/* a hang's dumps that cuda-gdb read share the exception dumps' fate; then
 * every core_* file of the attempt not kept goes (a container's dump is
 * named by its own path in the log: found here by the folder's listing) */
static void sweep_dumps(const struct mp_crash_collect_in *in, struct mp_gpu_fault *g)
{
    for (size_t i = 0; i < g->nk; i++)
        if (g->k[i].dump_file && !g->k[i].dump_state)
            g->k[i].dump_state = xstrdup(dump_fate(in, g->k[i].dump_file));
    if (in->keep && (!in->run_dir || kept_bytes(in->run_dir) <= MP_CD_KEEP_CAP))
        return;
    DIR *d = opendir(in->dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char p[PATH_MAX];
        struct stat st;
        int n = snprintf(p, sizeof(p), "%s/%s", in->dir, e->d_name);
        if (n > 0 && (size_t)n < sizeof(p) && !strncmp(e->d_name, "core_", 5) &&
            lstat(p, &st) == 0 && S_ISREG(st.st_mode) && !kept_file(g, e->d_name))
            unlink(p);
    }
    if (d)
        closedir(d);
}

/* the pipes a run's processes opened (FIFOs) go with the attempt */
static void remove_pipes(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char p[PATH_MAX];
        struct stat st;
        int n = snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (n > 0 && (size_t)n < sizeof(p) && !strncmp(e->d_name, "pipe_", 5) &&
            lstat(p, &st) == 0 && S_ISFIFO(st.st_mode))
            unlink(p);
    }
    if (d)
        closedir(d);
}

void mp_crash_collect(const struct mp_crash_collect_in *in, struct mp_attempt_result *r)
{
    struct mp_gpu_fault *g = &r->fault;
    free(g->coredump);
    g->coredump = in->coredump_words ? xstrdup(in->coredump_words) : NULL;
    free(g->nvml);
    g->nvml = in->nvml_why ? xasprintf("not subscribed: %s", in->nvml_why) : NULL;
    add_nvml(in, r);
    bool failed = r->outcome == MP_OUT_CRASH || r->outcome == MP_OUT_HANG ||
                  r->outcome == MP_OUT_STARTUP_FAILURE || in->nev > 0;
    if (failed) {
        struct scan *s = xcalloc(1, sizeof(*s));
        mp_coredump_init(&s->cd);
        add_pid(s, in->leader);
        for (size_t i = 0; i < in->npids; i++)
            add_pid(s, in->pids[i]);
        scan_log(in->dir, s);
        add_kernels(in, s, r);
        crash_from_dump(r);
        char why[320];
        struct kctx x = {in, s, r, raw_offset_ns()};
        free(g->kmsg);
        g->kmsg = mp_kmsg_read("NVRM: Xid", on_kmsg, &x, why, sizeof(why)) < 0 ? xstrdup(why)
                                                                               : NULL;
        mp_coredump_release(&s->cd);
        free(s);
    }
    sweep_dumps(in, g);
    remove_pipes(in->dir);
}
