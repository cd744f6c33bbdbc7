/* test_proc.c - process supervision against real /bin/sh process trees.
 *
 * Every test synchronises on output lines, exits (pidfd/poll) or stop
 * notifications (waitid WNOWAIT), never on elapsed time. The poll deadlines
 * below are only safety nets that turn a hang into a failure. Every test
 * ends by checking that nothing carrying its marker is alive and that no
 * zombie child is left. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <sched.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "err.h"
#include "loop.h"
#include "proc/proc.h"
#include "report/fingerprint.h"
#include "xalloc.h"

#define SAFETY_NS ((int64_t)60 * 1000000000) /* hang guard, not a timing assertion */

struct lines {
    char **v;
    bool *trunc;
    size_t n, cap;
    size_t bytes;
    size_t keep; /* store at most this many lines (0 = all) */
};

static void on_line(void *ud, const char *line, size_t len, bool truncated)
{
    struct lines *l = ud;
    l->bytes += len;
    if (l->keep && l->n >= l->keep) {
        l->n++;
        return;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->v = xreallocarray(l->v, l->cap, sizeof(*l->v));
        l->trunc = xreallocarray(l->trunc, l->cap, sizeof(*l->trunc));
    }
    l->v[l->n] = xstrndup(line, len);
    l->trunc[l->n] = truncated;
    l->n++;
}

static void lines_free(struct lines *l)
{
    size_t stored = l->keep && l->n > l->keep ? l->keep : l->n;
    for (size_t i = 0; i < stored; i++)
        free(l->v[i]);
    free(l->v);
    free(l->trunc);
    memset(l, 0, sizeof(*l));
}

/* Count processes with the marker until the count is `want` (bounded).
 * A process in the middle of execve() can briefly show an empty
 * /proc/PID/environ, so a single scan right after "echo ready; exec ..." may
 * miss it; the test waits for the state to settle instead of timing. */
static int marked_settled(const char *marker, int want)
{
    int n = -1;
    for (int i = 0; i < 100000 && n != want; i++) {
        n = mp_proc_find_marked(marker, 0);
        if (n != want)
            sched_yield();
    }
    return n;
}

/* Parse the hex mask of a /proc status line ("SigIgn:\t0000...") */
static bool sig_mask_line(const struct lines *l, const char *prefix, unsigned long long *out)
{
    size_t stored = l->keep && l->n > l->keep ? l->keep : l->n;
    for (size_t i = 0; i < stored; i++) {
        if (strncmp(l->v[i], prefix, strlen(prefix)) == 0) {
            *out = strtoull(l->v[i] + strlen(prefix), NULL, 16);
            return true;
        }
    }
    return false;
}

static bool has_prefix_line(const struct lines *l, const char *prefix)
{
    size_t stored = l->keep && l->n > l->keep ? l->keep : l->n;
    for (size_t i = 0; i < stored; i++)
        if (strncmp(l->v[i], prefix, strlen(prefix)) == 0)
            return true;
    return false;
}

static struct mp_proc *spawn_sh(const char *script, const char *marker, char *const *env_add)
{
    char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
    struct mp_proc_spec spec;
    struct mp_diag d = MP_DIAG_INIT;
    struct mp_proc *p = NULL;
    int rc;

    memset(&spec, 0, sizeof(spec));
    spec.argv = argv;
    spec.marker = marker;
    spec.env_add = env_add;
    rc = mp_proc_spawn(&spec, &p, &d);
    if (rc != 0)
        fprintf(stderr, "spawn failed: %s\n", d.msg);
    assert_int_equal(rc, 0);
    assert_non_null(p);
    return p;
}

/* Read until a line starting with prefix arrived (prefix NULL: until EOF). */
static void read_until(struct mp_proc *p, struct lines *l, const char *prefix)
{
    int64_t deadline = mp_now_ns() + SAFETY_NS;
    for (;;) {
        int rc = mp_proc_read_lines(p, on_line, l);
        assert_true(rc >= 0);
        if (prefix && has_prefix_line(l, prefix))
            return;
        if (rc == 1) {
            assert_null(prefix); /* EOF before the expected line */
            return;
        }
        assert_true(mp_now_ns() < deadline);
        struct pollfd pf = { .fd = mp_proc_output_fd(p), .events = POLLIN, .revents = 0 };
        poll(&pf, 1, 1000);
    }
}

/* Wait for the main child to exit (event: pidfd readable). */
static int wait_exit(struct mp_proc *p)
{
    int64_t deadline = mp_now_ns() + SAFETY_NS;
    int st = 0;
    while (!mp_proc_exited(p, &st)) {
        assert_true(mp_now_ns() < deadline);
        int fd = mp_proc_pidfd(p);
        assert_true(fd >= 0); /* this host has pidfds (Linux >= 5.3) */
        struct pollfd pf = { .fd = fd, .events = POLLIN, .revents = 0 };
        poll(&pf, 1, 1000);
    }
    return st;
}

static int count_zombie_children(void)
{
    DIR *dir = opendir("/proc");
    struct dirent *de;
    int n = 0;
    char me[32];
    snprintf(me, sizeof(me), "%d", (int)getpid());
    assert_non_null(dir);
    while ((de = readdir(dir)) != NULL) {
        char path[300], buf[512];
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t k = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[k] = '\0';
        char *rp = strrchr(buf, ')');
        char state;
        int ppid;
        if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == getpid())
            n++; /* any child at all, zombie or not, is a leak here */
    }
    closedir(dir);
    return n;
}

static void assert_clean(const char *marker)
{
    assert_int_equal(mp_proc_find_marked(marker, 0), 0);
    assert_int_equal(count_zombie_children(), 0);
}

/* ---- tests ------------------------------------------------------------- */

static void test_lines_and_exit_status(void **state)
{
    char marker[MP_PROC_MARKER_SIZE], desc[128];
    struct lines l = { 0 };
    struct mp_teardown t;
    MP_UNUSED(state);

    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = spawn_sh("echo hello; echo world; printf 'crlf\\r\\n'; printf 'tail'; exit 3", marker, NULL);
    assert_true(mp_proc_pid(p) > 0);
    read_until(p, &l, NULL);
    assert_int_equal(l.n, 4);
    assert_string_equal(l.v[0], "hello");
    assert_string_equal(l.v[1], "world");
    assert_string_equal(l.v[2], "crlf"); /* CR of CRLF stripped */
    assert_string_equal(l.v[3], "tail"); /* partial last line at EOF */
    assert_false(l.trunc[3]);
    assert_int_equal(mp_proc_output_fd(p), -1);
    assert_int_equal(mp_proc_read_lines(p, on_line, &l), 1);
    int st = wait_exit(p);
    mp_proc_describe_status(st, desc, sizeof(desc));
    assert_string_equal(desc, "exited with status 3");

    assert_int_equal(mp_proc_teardown(p, 5.0, NULL, NULL, &t), 0);
    assert_false(t.was_running);
    assert_false(t.killed);
    assert_false(t.exited_on_term);
    assert_int_equal(t.leftovers, 0);
    assert_int_equal(t.escapees_killed, 0);
    assert_true(WIFEXITED(t.exit_status) && WEXITSTATUS(t.exit_status) == 3);
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker);
}

static void test_child_environment(void **state)
{
    char marker[MP_PROC_MARKER_SIZE], want[128];
    char *env_add[] = { "MP_TEST_FOO=bar", "MP_TEST_FOO=baz", "HOME=/nonexistent-home", NULL };
    struct lines l = { 0 };
    sigset_t blk, old;
    unsigned long long mask = 0;
    MP_UNUSED(state);

    /* the child must get an empty mask and default dispositions back */
    sigemptyset(&blk);
    sigaddset(&blk, SIGUSR1);
    sigprocmask(SIG_BLOCK, &blk, &old);
    signal(SIGUSR2, SIG_IGN);
    int leak = open("/dev/null", O_RDONLY); /* no O_CLOEXEC on purpose */
    assert_true(leak >= 0);
    assert_int_equal(dup2(leak, 50), 50);
    close(leak);

    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = spawn_sh(
        "echo foo=$MP_TEST_FOO; echo home=$HOME; echo marker=$MOEPROBE_RUN_MARKER;"
        "if read x; then echo stdin=data; else echo stdin=eof; fi;"
        "echo sid=$(cut -d' ' -f6 /proc/$$/stat) pid=$$;"
        "echo fds=$(ls /proc/self/fd | tr '\\n' ' ');"
        "exec grep -E '^(SigBlk|SigIgn):' /proc/self/status",
        marker, env_add);
    read_until(p, &l, NULL);
    wait_exit(p);
    sigprocmask(SIG_SETMASK, &old, NULL);
    signal(SIGUSR2, SIG_DFL);
    close(50);

    assert_true(has_prefix_line(&l, "foo=baz"));   /* later entry wins */
    assert_true(has_prefix_line(&l, "home=/nonexistent-home")); /* overrides ours */
    snprintf(want, sizeof(want), "marker=%s", marker);
    assert_true(has_prefix_line(&l, want));
    assert_true(has_prefix_line(&l, "stdin=eof"));
    snprintf(want, sizeof(want), "sid=%d pid=%d", (int)mp_proc_pid(p), (int)mp_proc_pid(p));
    assert_true(has_prefix_line(&l, want)); /* own session */
    /* only stdio (+ the directory ls reads); not our leaked fd 50 */
    for (size_t i = 0; i < l.n; i++)
        if (strncmp(l.v[i], "fds=", 4) == 0)
            assert_string_equal(l.v[i], "fds=0 1 2 3");
    /* Signals 32 and 33 are glibc's own (SIGCANCEL, SIGSETXID): sigaction()
     * refuses to touch them, so when whoever started us ignores them (make
     * under some container runtimes does), no child can get them back. */
    const unsigned long long glibc_reserved = (1ULL << 31) | (1ULL << 32);
    assert_true(sig_mask_line(&l, "SigBlk:", &mask));
    assert_true((mask & ~glibc_reserved) == 0);
    assert_true(sig_mask_line(&l, "SigIgn:", &mask));
    assert_true((mask & ~glibc_reserved) == 0);
    mp_proc_teardown(p, 1.0, NULL, NULL, NULL);
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker);
}

static void test_flood_of_lines(void **state)
{
    char marker[MP_PROC_MARKER_SIZE];
    struct lines l = { .keep = 4 };
    MP_UNUSED(state);

    mp_proc_new_marker(marker, sizeof(marker));
    /* 10,000 lines of 100 bytes + newline: about 1 MB */
    struct mp_proc *p = spawn_sh(
        "i=0; while [ $i -lt 10000 ]; do "
        "echo 0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789;"
        " i=$((i+1)); done",
        marker, NULL);
    read_until(p, &l, NULL);
    assert_int_equal(l.n, 10000);
    assert_int_equal(l.bytes, 10000 * 100);
    wait_exit(p);
    mp_proc_teardown(p, 1.0, NULL, NULL, NULL);
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker);
}

static void test_giant_line_truncated(void **state)
{
    char marker[MP_PROC_MARKER_SIZE];
    struct lines l = { 0 };
    MP_UNUSED(state);

    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = spawn_sh(
        "head -c 65536 /dev/zero | tr '\\0' y; echo;"      /* exactly the limit: kept whole */
        "head -c 65537 /dev/zero | tr '\\0' z; echo;"      /* one over: cut */
        "head -c 10485760 /dev/zero | tr '\\0' x; echo;"   /* 10 MB single line */
        "echo after",
        marker, NULL);
    read_until(p, &l, NULL);
    assert_int_equal(l.n, 4);
    assert_int_equal(strlen(l.v[0]), MP_PROC_LINE_MAX);
    assert_false(l.trunc[0]);
    assert_int_equal(strlen(l.v[1]), MP_PROC_LINE_MAX);
    assert_true(l.trunc[1]);
    assert_int_equal(strlen(l.v[2]), MP_PROC_LINE_MAX);
    assert_true(l.trunc[2]);
    assert_int_equal(l.v[2][0], 'x');
    assert_string_equal(l.v[3], "after"); /* the rest of the giant line was skipped */
    assert_false(l.trunc[3]);
    wait_exit(p);
    mp_proc_teardown(p, 1.0, NULL, NULL, NULL);
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker);
}

static void test_exits_on_term(void **state)
{
    char marker[MP_PROC_MARKER_SIZE], desc[128];
    struct lines l = { 0 };
    struct mp_teardown t;
    MP_UNUSED(state);

    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = spawn_sh("echo ready; exec sleep 1000", marker, NULL);
    read_until(p, &l, "ready");
    assert_int_equal(marked_settled(marker, 1), 1);
    assert_false(mp_proc_exited(p, NULL));
    assert_int_equal(mp_proc_teardown(p, 30.0, on_line, &l, &t), 0);
    assert_true(t.was_running);
    assert_true(t.exited_on_term);
    assert_false(t.killed);
    assert_int_equal(t.leftovers, 0);
    mp_proc_describe_status(t.exit_status, desc, sizeof(desc));
    assert_string_equal(desc, "killed by signal 15 (Terminated)");
    /* a second teardown is harmless */
    assert_int_equal(mp_proc_teardown(p, 1.0, NULL, NULL, &t), 0);
    assert_false(t.was_running);
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker);
}

static void test_ignores_term_needs_kill(void **state)
{
    char marker[MP_PROC_MARKER_SIZE], desc[128];
    struct lines l = { 0 };
    struct mp_teardown t;
    MP_UNUSED(state);

    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = spawn_sh("trap '' TERM; echo ready; exec sleep 1000", marker, NULL);
    read_until(p, &l, "ready");
    assert_int_equal(mp_proc_teardown(p, 0.2, on_line, &l, &t), 0);
    assert_true(t.was_running);
    assert_false(t.exited_on_term);
    assert_true(t.killed);
    assert_int_equal(t.leftovers, 0);
    mp_proc_describe_status(t.exit_status, desc, sizeof(desc));
    assert_string_equal(desc, "killed by signal 9 (Killed)");
    assert_true(t.seconds < 0.2 + 10.0); /* bounded (loose: a hang guard) */
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker);
}

/* The teardown as steps on the caller's loop: the loop's own timer still
 * fires during the grace (nothing blocks it), the steps are reported in
 * order, and mp_proc_stop_now (a second Ctrl-C) KILLs at once instead of
 * waiting out a grace of 60 s. */
struct steps {
    char seen[16];
    size_t n;
    struct mp_proc_stop *stop;
    int ticks;
};

static void on_step(void *ud, enum mp_stop_step step)
{
    struct steps *st = ud;
    const char *names = "TKECD";
    if (st->n + 1 < sizeof(st->seen) && (st->n == 0 || st->seen[st->n - 1] != names[step]))
        st->seen[st->n++] = names[step];
}

static void on_caller_timer(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    struct steps *st = ud;
    (void)l;
    (void)t;
    st->ticks++;
    mp_proc_stop_now(st->stop); /* the "second signal", served by the same loop */
}

static void test_stop_steps_on_callers_loop(void **state)
{
    char marker[MP_PROC_MARKER_SIZE];
    struct lines l = { 0 };
    struct mp_teardown t;
    MP_UNUSED(state);

    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = spawn_sh("trap '' TERM; echo ready; exec sleep 1000", marker, NULL);
    read_until(p, &l, "ready");
    struct mp_loop *loop = mp_loop_new();
    assert_non_null(loop);
    struct steps st = { 0 };
    struct mp_loop_timer tm;
    mp_loop_timer_init(&tm, on_caller_timer, &st);
    int64_t t0 = mp_now_ns();
    st.stop = mp_proc_stop_begin(p, loop, 60.0, on_line, &l, on_step, &st);
    assert_int_equal(mp_proc_stop_step(st.stop), MP_STOP_TERM);
    mp_loop_timer_start(loop, &tm, mp_now_ns() + 50 * (int64_t)1000000);
    while (mp_proc_stop_step(st.stop) != MP_STOP_DONE && mp_now_ns() - t0 < SAFETY_NS)
        assert_true(mp_loop_run_once(loop, -1) >= 0);
    assert_int_equal(st.ticks, 1);
    assert_int_equal(mp_proc_stop_end(st.stop, &t), 0);
    st.seen[st.n] = '\0';
    assert_string_equal(st.seen, "TKED");
    assert_true(t.was_running);
    assert_true(t.killed);
    assert_false(t.exited_on_term);
    assert_int_equal(t.leftovers, 0);
    assert_true(t.seconds < 30.0); /* not the 60 s grace */
    mp_loop_free(loop);
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker);
}

static void test_flood_ignoring_term_is_bounded(void **state)
{
    char marker[MP_PROC_MARKER_SIZE];
    struct lines l = { .keep = 2 };
    struct mp_teardown t;
    MP_UNUSED(state);

    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = spawn_sh("trap '' TERM; echo ready; exec yes flood", marker, NULL);
    read_until(p, &l, "ready");
    assert_int_equal(mp_proc_teardown(p, 0.3, on_line, &l, &t), 0);
    assert_true(t.killed);
    assert_true(l.n > 2); /* output kept being drained during grace */
    assert_int_equal(t.leftovers, 0);
    assert_true(t.seconds < 0.3 + 10.0);
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker);
}

static void test_stopped_engine_gets_cont(void **state)
{
    char marker[MP_PROC_MARKER_SIZE];
    struct lines l = { 0 };
    struct mp_teardown t;
    siginfo_t si;
    MP_UNUSED(state);

    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = spawn_sh("echo ready; kill -STOP $$; exec sleep 1000", marker, NULL);
    read_until(p, &l, "ready");
    /* wait until it is stopped; WNOWAIT leaves the state for later waits */
    memset(&si, 0, sizeof(si));
    while (waitid(P_PID, (id_t)mp_proc_pid(p), &si, WSTOPPED | WNOWAIT) < 0 && errno == EINTR)
        ;
    assert_int_equal(si.si_code, CLD_STOPPED);
    assert_int_equal(mp_proc_teardown(p, 30.0, on_line, &l, &t), 0);
    assert_true(t.exited_on_term);
    assert_false(t.killed);
    assert_true(WIFSIGNALED(t.exit_status) && WTERMSIG(t.exit_status) == SIGTERM);
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker);
}

static void test_setsid_escapee_found_by_marker(void **state)
{
    char marker[MP_PROC_MARKER_SIZE];
    struct lines l = { 0 };
    struct mp_teardown t;
    MP_UNUSED(state);

    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = spawn_sh(
        "setsid sh -c 'echo escaped; exec sleep 1000' &"
        " echo ready; exec sleep 1000",
        marker, NULL);
    read_until(p, &l, "escaped");
    read_until(p, &l, "ready");
    assert_int_equal(marked_settled(marker, 2), 2);
    assert_int_equal(mp_proc_teardown(p, 30.0, on_line, &l, &t), 0);
    assert_true(t.exited_on_term); /* the group itself went on TERM */
    assert_false(t.killed);
    assert_int_equal(t.escapees_killed, 1);
    assert_int_equal(t.leftovers, 0);
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker);
}

/* A daemon: double fork, own session, environment cleared (no marker): it is
 * reparented to us and still ends with the engine, counted as an escapee. */
static void test_unmarked_daemon_escapee(void **state)
{
    char marker[MP_PROC_MARKER_SIZE];
    struct lines l = { 0 };
    struct mp_teardown t;
    long dpid = 0;
    MP_UNUSED(state);

    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = spawn_sh(
        "(setsid sh -c 'echo daemon $$; exec env -i sleep 1000 </dev/null >/dev/null 2>&1' &);"
        " echo ready; exec sleep 1000",
        marker, NULL);
    read_until(p, &l, "daemon ");
    read_until(p, &l, "ready");
    for (size_t i = 0; i < l.n; i++)
        if (strncmp(l.v[i], "daemon ", 7) == 0)
            dpid = strtol(l.v[i] + 7, NULL, 10);
    assert_true(dpid > 1);
    assert_int_equal(kill((pid_t)dpid, 0), 0);
    assert_int_equal(mp_proc_teardown(p, 30.0, on_line, &l, &t), 0);
    assert_int_equal(t.escapees_killed, 1);
    assert_int_equal(t.leftovers, 0);
    int gone = kill((pid_t)dpid, 0);
    if (gone == 0)
        kill((pid_t)dpid, SIGKILL); /* the failure must not leave it behind */
    assert_int_equal(gone, -1);
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker);
}

static long line_pid(const struct lines *l, const char *prefix)
{
    for (size_t i = 0; i < l->n; i++)
        if (strncmp(l->v[i], prefix, strlen(prefix)) == 0)
            return strtol(l->v[i] + strlen(prefix), NULL, 10);
    return 0;
}

/* Two engines alive at once: an orphan reparented to us cannot be told apart
 * by parentage, so it is left to its own engine's teardown; an unmarked
 * descendant that is still in an engine's tree when its teardown begins is
 * known by pid and start time and ended with that engine. */
static void test_unmarked_escapees_of_two_engines(void **state)
{
    char m1[MP_PROC_MARKER_SIZE], m2[MP_PROC_MARKER_SIZE];
    struct lines l1 = { 0 }, l2 = { 0 };
    struct mp_teardown t;
    MP_UNUSED(state);

    mp_proc_new_marker(m1, sizeof(m1));
    /* its child stays its child (no double fork), in its own session */
    struct mp_proc *p1 = spawn_sh(
        "setsid sh -c 'echo child $$; exec env -i sleep 1000 </dev/null >/dev/null 2>&1' &"
        " echo ready; exec sleep 1000",
        m1, NULL);
    read_until(p1, &l1, "child ");
    read_until(p1, &l1, "ready");
    /* started after p1: its orphan is younger than p1 */
    mp_proc_new_marker(m2, sizeof(m2));
    struct mp_proc *p2 = spawn_sh(
        "(setsid sh -c 'echo orphan $$; exec env -i sleep 1000 </dev/null >/dev/null 2>&1' &);"
        " echo ready; exec sleep 1000",
        m2, NULL);
    read_until(p2, &l2, "orphan ");
    read_until(p2, &l2, "ready");
    pid_t orphan = (pid_t)line_pid(&l2, "orphan "), child = (pid_t)line_pid(&l1, "child ");
    assert_true(orphan > 1 && child > 1);

    assert_int_equal(mp_proc_teardown(p1, 30.0, on_line, &l1, &t), 0);
    assert_int_equal(t.escapees_killed, 1);
    assert_int_equal(t.leftovers, 0);
    int child_alive = kill(child, 0), orphan_alive = kill(orphan, 0);
    if (child_alive == 0)
        kill(child, SIGKILL); /* a failure must not leave it behind */
    assert_int_equal(child_alive, -1);
    assert_int_equal(orphan_alive, 0); /* not p1's to end */

    assert_int_equal(mp_proc_teardown(p2, 30.0, on_line, &l2, &t), 0); /* now the only engine */
    assert_int_equal(t.escapees_killed, 1);
    assert_int_equal(t.leftovers, 0);
    orphan_alive = kill(orphan, 0);
    if (orphan_alive == 0)
        kill(orphan, SIGKILL);
    assert_int_equal(orphan_alive, -1);
    mp_proc_free(p1);
    mp_proc_free(p2);
    lines_free(&l1);
    lines_free(&l2);
    assert_clean(m1);
    assert_clean(m2);
}

static void test_double_fork_in_group(void **state)
{
    char marker[MP_PROC_MARKER_SIZE];
    struct lines l = { 0 };
    struct mp_teardown t;
    MP_UNUSED(state);

    mp_proc_new_marker(marker, sizeof(marker));
    /* the subshell exits at once: its sleep is reparented to us (subreaper) */
    struct mp_proc *p = spawn_sh("(sleep 1000 &); trap '' TERM; echo ready; exec sleep 1000", marker, NULL);
    read_until(p, &l, "ready");
    assert_int_equal(marked_settled(marker, 2), 2);
    assert_int_equal(mp_proc_teardown(p, 0.2, on_line, &l, &t), 0);
    assert_true(t.killed);
    assert_int_equal(t.escapees_killed, 0);
    assert_int_equal(t.leftovers, 0);
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker); /* the reparented sleep was reaped too */
}

static void test_leader_gone_group_left(void **state)
{
    char marker[MP_PROC_MARKER_SIZE];
    struct lines l = { 0 };
    struct mp_teardown t;
    MP_UNUSED(state);

    /* like a vLLM API server that exited and left its EngineCore behind */
    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = spawn_sh("sleep 1000 & echo ready; exit 0", marker, NULL);
    read_until(p, &l, "ready");
    wait_exit(p);
    assert_int_equal(marked_settled(marker, 1), 1);
    assert_int_equal(mp_proc_teardown(p, 30.0, on_line, &l, &t), 0);
    assert_false(t.was_running);
    assert_true(t.exited_on_term); /* the rest of the group went on TERM */
    assert_false(t.killed);
    assert_int_equal(t.leftovers, 0);
    assert_true(WIFEXITED(t.exit_status) && WEXITSTATUS(t.exit_status) == 0);
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker);
}

static void test_reap_orphans_keeps_managed_status(void **state)
{
    char marker[MP_PROC_MARKER_SIZE];
    struct lines l = { 0 };
    MP_UNUSED(state);

    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = spawn_sh("(sh -c 'echo orphan $$' &); exit 7", marker, NULL);
    read_until(p, &l, NULL); /* EOF: all writers, the orphan included, are done */
    assert_true(has_prefix_line(&l, "orphan "));
    int orphan = (int)strtol(l.v[0] + strlen("orphan "), NULL, 10);
    assert_true(orphan > 0);
    /* wait until both the managed child and the orphan are zombies, as
     * pidfd readability says, without reaping either */
    int fds[2] = { mp_proc_pidfd(p), -1 };
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    while (waitid(P_PID, (id_t)mp_proc_pid(p), &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    fds[1] = (int)syscall(SYS_pidfd_open, orphan, 0);
    if (fds[1] >= 0) {
        struct pollfd pf = { .fd = fds[1], .events = POLLIN, .revents = 0 };
        assert_int_equal(poll(&pf, 1, 60000), 1);
        close(fds[1]);
    }
    mp_proc_reap_orphans();
    assert_true(kill(orphan, 0) < 0 && errno == ESRCH); /* orphan reaped */
    int st = -1;
    assert_true(mp_proc_exited(p, &st));
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 7); /* not stolen */
    mp_proc_free(p);
    lines_free(&l);
    assert_clean(marker);
}

static void test_spawn_errors(void **state)
{
    struct mp_proc_spec spec;
    struct mp_diag d = MP_DIAG_INIT;
    struct mp_proc *p = (struct mp_proc *)&spec; /* must be reset to NULL */
    char *argv1[] = { "moeprobe-no-such-program-xyz", "--serve", NULL };
    MP_UNUSED(state);

    memset(&spec, 0, sizeof(spec));
    spec.argv = argv1;
    assert_int_equal(mp_proc_spawn(&spec, &p, &d), -ENOENT);
    assert_null(p);
    assert_string_equal(d.msg, "cannot run 'moeprobe-no-such-program-xyz': No such file or directory");

    char *argv2[] = { "/nonexistent-dir/engine", NULL };
    spec.argv = argv2;
    assert_int_equal(mp_proc_spawn(&spec, &p, &d), -ENOENT);
    assert_string_equal(d.msg, "cannot run '/nonexistent-dir/engine': No such file or directory");

    /* a file without execute permission: exec fails with EACCES in the child */
    char tmpl[] = "/tmp/mp-test-noexec-XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    close(fd);
    chmod(tmpl, 0644);
    char *argv3[] = { tmpl, NULL };
    spec.argv = argv3;
    if (geteuid() != 0) {
        assert_int_equal(mp_proc_spawn(&spec, &p, &d), -EACCES);
        assert_non_null(strstr(d.msg, "Permission denied"));
    } else {
        /* root may exec it anyway only if some x bit is set; none is: */
        assert_int_equal(mp_proc_spawn(&spec, &p, &d), -EACCES);
    }
    unlink(tmpl);

    char *argv4[] = { "/bin/true", NULL };
    spec.argv = argv4;
    spec.cwd = "/nonexistent-dir-for-mp-test";
    assert_int_equal(mp_proc_spawn(&spec, &p, &d), -ENOENT);
    assert_string_equal(d.msg, "cannot change directory to '/nonexistent-dir-for-mp-test': No such file or directory");
    spec.cwd = NULL;

    char *bad_env[] = { "NOEQUALS", NULL };
    spec.env_add = bad_env;
    assert_int_equal(mp_proc_spawn(&spec, &p, &d), -EINVAL);
    assert_non_null(strstr(d.msg, "NOEQUALS"));
    spec.env_add = NULL;

    char *argv5[] = { NULL };
    spec.argv = argv5;
    assert_int_equal(mp_proc_spawn(&spec, &p, &d), -EINVAL);
    assert_int_equal(count_zombie_children(), 0); /* failed children were reaped */
}

static void test_container_runtime_called(void **state)
{
    char marker[MP_PROC_MARKER_SIZE];
    char dir[] = "/tmp/mp-test-rt-XXXXXX";
    char *rt, *logf, *script;
    struct lines l = { 0 };
    struct mp_teardown t;
    MP_UNUSED(state);

    assert_non_null(mkdtemp(dir));
    rt = xasprintf("%s/fake-runtime", dir);
    logf = xasprintf("%s/calls.log", dir);
    script = xasprintf("#!/bin/sh\necho \"$@\" >> '%s'\necho ok\n", logf);
    FILE *f = fopen(rt, "w");
    assert_non_null(f);
    fputs(script, f);
    assert_int_equal(fclose(f), 0);
    chmod(rt, 0755);

    mp_proc_new_marker(marker, sizeof(marker));
    char *argv[] = { "/bin/sh", "-c", "echo ready; exec sleep 1000", NULL };
    struct mp_proc_spec spec;
    struct mp_proc *p = NULL;
    memset(&spec, 0, sizeof(spec));
    spec.argv = argv;
    spec.marker = marker;
    spec.container_runtime = rt;
    spec.container_name = "mp-test-ctr";
    assert_int_equal(mp_proc_spawn(&spec, &p, NULL), 0);
    read_until(p, &l, "ready");
    assert_int_equal(mp_proc_teardown(p, 1.0, on_line, &l, &t), 0);
    assert_int_equal(t.leftovers, 0);
    mp_proc_free(p);

    char got[256] = "";
    f = fopen(logf, "r");
    assert_non_null(f);
    size_t k = fread(got, 1, sizeof(got) - 1, f);
    fclose(f);
    got[k] = '\0';
    assert_string_equal(got, "stop -t 1 mp-test-ctr\nrm -f mp-test-ctr\n");
    unlink(logf);
    unlink(rt);
    rmdir(dir);
    free(rt);
    free(logf);
    free(script);
    lines_free(&l);
    assert_clean(marker);
}

static void test_free_without_teardown(void **state)
{
    char marker[MP_PROC_MARKER_SIZE];
    struct lines l = { 0 };
    MP_UNUSED(state);

    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = spawn_sh("echo ready; exec sleep 1000", marker, NULL);
    read_until(p, &l, "ready");
    mp_proc_free(p);
    mp_proc_free(NULL);
    lines_free(&l);
    assert_clean(marker);
}

static void test_describe_status(void **state)
{
    char b[128];
    MP_UNUSED(state);
    mp_proc_describe_status(0, b, sizeof(b));
    assert_string_equal(b, "exited with status 0");
    mp_proc_describe_status(1 << 8, b, sizeof(b));
    assert_string_equal(b, "exited with status 1");
    mp_proc_describe_status(SIGKILL, b, sizeof(b));
    assert_string_equal(b, "killed by signal 9 (Killed)");
    mp_proc_describe_status(SIGSEGV | 0x80, b, sizeof(b));
    assert_string_equal(b, "killed by signal 11 (Segmentation fault), core dumped");
    mp_proc_describe_status(-1, b, sizeof(b));
    assert_string_equal(b, "exit status unknown");
    mp_proc_describe_status(0, b, 5);
    assert_string_equal(b, "exit");
}

static void test_markers(void **state)
{
    char a[MP_PROC_MARKER_SIZE], b[MP_PROC_MARKER_SIZE], pre[32];
    MP_UNUSED(state);
    mp_proc_new_marker(a, sizeof(a));
    mp_proc_new_marker(b, sizeof(b));
    assert_string_not_equal(a, b);
    snprintf(pre, sizeof(pre), "%d-", (int)getpid());
    assert_memory_equal(a, pre, strlen(pre));
    assert_int_equal(strlen(a), strlen(pre) + 16);
    assert_int_equal(mp_proc_find_marked(a, 0), 0);
    assert_int_equal(mp_proc_find_marked("", 0), 0);
}

/* mp_proc_run_capture: argv without a shell, stderr joined or dropped, the
 * cap, exit codes, and a helper that does not finish killed and reaped. */
static void test_run_capture(void **state)
{
    MP_UNUSED(state);
    char *both[] = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    struct mp_capture c = {.argv = both, .timeout_s = 60, .with_stderr = true};
    struct buf b = BUF_INIT;
    assert_int_equal(mp_proc_run_capture(&c, &b, NULL), 3);
    assert_string_equal(b.data, "out\nerr\n");
    buf_release(&b);
    c.with_stderr = false;
    assert_int_equal(mp_proc_run_capture(&c, &b, NULL), 3);
    assert_string_equal(b.data, "out\n");
    buf_release(&b);
    /* whole lines up to the cap; the rest is read and dropped */
    char *many[] = {"/bin/sh", "-c", "echo aaaa; echo bbbb; echo cccc; exit 0", NULL};
    struct mp_capture m = {.argv = many, .timeout_s = 60, .max = 10};
    assert_int_equal(mp_proc_run_capture(&m, &b, NULL), 0);
    assert_string_equal(b.data, "aaaa\nbbbb\n");
    buf_release(&b);
    /* no shell: a word with a space and a $ is one argument, as given */
    char *words[] = {"/bin/echo", "a b", "$HOME", NULL};
    struct mp_capture w = {.argv = words, .timeout_s = 60};
    assert_int_equal(mp_proc_run_capture(&w, &b, NULL), 0);
    assert_string_equal(b.data, "a b $HOME\n");
    buf_release(&b);
    char *sig[] = {"/bin/sh", "-c", "kill -9 $$", NULL};
    struct mp_capture k = {.argv = sig, .timeout_s = 60};
    assert_int_equal(mp_proc_run_capture(&k, &b, NULL), 128 + 9);
    buf_release(&b);
    char *none[] = {"/nonexistent/helper", NULL};
    struct mp_capture n = {.argv = none, .timeout_s = 60};
    struct mp_diag d = MP_DIAG_INIT;
    assert_int_equal(mp_proc_run_capture(&n, &b, &d), -ENOENT);
    assert_non_null(strstr(d.msg, "/nonexistent/helper"));
    buf_release(&b);
    /* past the timeout: killed and reaped before the call returns */
    char *slow[] = {"/bin/sh", "-c", "echo $$; exec sleep 600", NULL};
    struct mp_capture t = {.argv = slow, .timeout_s = 0.5};
    int64_t t0 = mp_now_ns();
    d = (struct mp_diag)MP_DIAG_INIT;
    assert_int_equal(mp_proc_run_capture(&t, &b, &d), MP_ETIMEOUT);
    assert_true(mp_now_ns() - t0 < SAFETY_NS / 2);
    assert_non_null(strstr(d.msg, "did not finish"));
    long pid = strtol(b.data, NULL, 10);
    assert_true(pid > 1);
    assert_int_equal(kill((pid_t)pid, 0), -1); /* not even a zombie */
    assert_int_equal(errno, ESRCH);
    buf_release(&b);
    assert_int_equal(count_zombie_children(), 0);
}

/* mp_proc_capture_start: the helper runs on the caller's loop, which keeps
 * turning (a 20 ms timer fires several times while the helper takes 300
 * ms); done() comes once, from the loop, with the output complete; finish
 * gives its status. A helper given up on is killed and reaped by finish,
 * and one past its timeout ends with done() and status -1. */
struct cap_seen {
    int done, ticks;
    struct mp_loop_timer t;
};
static void cap_done(void *ud)
{
    ((struct cap_seen *)ud)->done++;
}
static void cap_tick(struct mp_loop *l, struct mp_loop_timer *t, void *ud)
{
    ((struct cap_seen *)ud)->ticks++;
    mp_loop_timer_start(l, t, mp_now_ns() + 20 * (int64_t)1000000);
}
static void test_capture_on_loop(void **state)
{
    MP_UNUSED(state);
    struct mp_loop *l = mp_loop_new();
    assert_non_null(l);
    struct cap_seen seen = {0};
    mp_loop_timer_init(&seen.t, cap_tick, &seen);
    mp_loop_timer_start(l, &seen.t, mp_now_ns());
    char *argv[] = {"/bin/sh", "-c", "echo one; sleep 0.3; echo two; exit 4", NULL};
    struct mp_capture c = {.argv = argv, .timeout_s = 60};
    struct buf b = BUF_INIT;
    struct mp_capture_run *cr = NULL;
    assert_int_equal(mp_proc_capture_start(l, &c, &b, cap_done, &seen, &cr, NULL), 0);
    assert_non_null(cr);
    assert_int_equal(seen.done, 0); /* never from the start itself */
    int64_t safety = mp_now_ns() + SAFETY_NS;
    while (!mp_proc_capture_over(cr) && mp_now_ns() < safety)
        assert_true(mp_loop_run_once(l, -1) >= 0);
    assert_int_equal(seen.done, 1);
    assert_true(seen.ticks >= 5); /* the loop was never blocked by the helper */
    assert_string_equal(b.data, "one\ntwo\n");
    int st = mp_proc_capture_finish(cr);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 4);
    buf_release(&b);
    /* given up on while running: killed, reaped, what it wrote kept */
    char *slow[] = {"/bin/sh", "-c", "echo $$; exec sleep 600", NULL};
    struct mp_capture s2 = {.argv = slow, .timeout_s = 60};
    assert_int_equal(mp_proc_capture_start(l, &s2, &b, cap_done, &seen, &cr, NULL), 0);
    while (!b.len && mp_now_ns() < safety)
        assert_true(mp_loop_run_once(l, mp_now_ns() + 50 * (int64_t)1000000) >= 0);
    assert_int_equal(mp_proc_capture_finish(cr), -1);
    long pid = strtol(b.data, NULL, 10);
    assert_true(pid > 1);
    assert_int_equal(kill((pid_t)pid, 0), -1);
    assert_int_equal(seen.done, 1); /* finish does not call done() */
    buf_release(&b);
    /* past its timeout: done(), then finish kills it: -1 */
    struct mp_capture s3 = {.argv = slow, .timeout_s = 0.3};
    assert_int_equal(mp_proc_capture_start(l, &s3, &b, cap_done, &seen, &cr, NULL), 0);
    while (!mp_proc_capture_over(cr) && mp_now_ns() < safety)
        assert_true(mp_loop_run_once(l, -1) >= 0);
    assert_int_equal(seen.done, 2);
    assert_int_equal(mp_proc_capture_finish(cr), -1);
    buf_release(&b);
    char *none[] = {"/nonexistent/helper", NULL};
    struct mp_capture n = {.argv = none, .timeout_s = 60};
    assert_int_equal(mp_proc_capture_start(l, &n, &b, cap_done, &seen, &cr, NULL), -ENOENT);
    assert_null(cr);
    mp_loop_timer_stop(l, &seen.t);
    mp_loop_free(l);
    buf_release(&b);
    assert_int_equal(count_zombie_children(), 0);
}

/* A helper is never run with our signals blocked: with SIGINT and SIGTERM
 * blocked here (as during a run: signalfd), its mask is empty. */
static void test_run_capture_signal_mask(void **state)
{
    MP_UNUSED(state);
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &old);
    char *argv[] = {"/bin/grep", "-E", "^Sig(Blk|Ign):", "/proc/self/status", NULL};
    struct mp_capture c = {.argv = argv, .timeout_s = 60};
    struct buf b = BUF_INIT;
    int rc = mp_proc_run_capture(&c, &b, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    assert_int_equal(rc, 0);
    const char *blk = strstr(b.data, "SigBlk:");
    assert_non_null(blk);
    unsigned long long mask = strtoull(blk + strlen("SigBlk:"), NULL, 16);
    assert_true(mask == 0);
    buf_release(&b);
}

/* mp_proc_find_env finds any NAME=VALUE (the scheduler's task marker), not
 * only the run marker, and ends what it finds. */
static void test_find_env(void **state)
{
    MP_UNUSED(state);
    char val[MP_PROC_MARKER_SIZE], entry[96];
    mp_proc_new_marker(val, sizeof(val));
    snprintf(entry, sizeof(entry), "MP_TEST_TASK=%s", val);
    char *argv[] = {"/bin/sh", "-c", "echo ready; exec sleep 600", NULL};
    char *env[] = {entry, NULL};
    struct mp_proc_spec spec = {.argv = argv, .env_add = env};
    struct mp_proc *p = NULL;
    assert_int_equal(mp_proc_spawn(&spec, &p, NULL), 0);
    int n = -1;
    for (int i = 0; i < 100000 && n != 1; i++) {
        n = mp_proc_find_env("MP_TEST_TASK", val, 0);
        if (n != 1)
            sched_yield();
    }
    assert_int_equal(n, 1);
    assert_int_equal(mp_proc_find_env("MP_TEST_TASK", "other", 0), 0);
    assert_int_equal(mp_proc_find_env("MP_TEST_TASK", "", 0), 0);
    assert_int_equal(mp_proc_find_env("MP_TEST_TASK", val, SIGKILL), 1);
    int st = 0;
    int64_t end = mp_now_ns() + SAFETY_NS;
    while (!mp_proc_exited(p, &st) && mp_now_ns() < end)
        poll(NULL, 0, 5);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    mp_proc_free(p);
}

static void test_self_exe(void **state)
{
    MP_UNUSED(state);
    char a[4096], b[4096];
    assert_int_equal(mp_proc_self_exe(a, sizeof(a)), 0);
    ssize_t n = readlink("/proc/self/exe", b, sizeof(b) - 1);
    assert_true(n > 0);
    b[n] = '\0';
    assert_string_equal(a, b);
    assert_int_equal(mp_proc_self_exe(a, 3), -ENAMETOOLONG);
    assert_string_equal(mp_proc_environ_file(42, a, sizeof(a)), "/proc/42/environ");
}

/* The fingerprint's nvidia-smi fallback runs through mp_proc_run_capture:
 * a fake nvidia-smi on PATH (NVML off) is run with SIGINT/SIGTERM blocked
 * here, as during a run, yet sees an empty mask; what it says on stderr
 * stays out of the fingerprint. */
static void test_fingerprint_smi_through_proc(void **state)
{
    MP_UNUSED(state);
    if (access("/usr/bin/perl", X_OK) != 0)
        skip();
    char dir[] = "/tmp/mp-fakesmi.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *script = xasprintf("%s/nvidia-smi", dir);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    /* perl, not sh: dash empties its signal mask at start-up, hiding ours */
    fprintf(f, "#!/usr/bin/perl\n"
               "open(my $s, '<', '/proc/self/status') or die;\n"
               "open(my $o, '>', '%s/sigblk') or die;\n"
               "while (<$s>) { print $o $_ if /^SigBlk:/; }\n"
               "close($o);\n"
               "print STDERR \"noise on stderr\\n\";\n"
               "if (($ARGV[0] // '') =~ /^--query-gpu=/) {\n"
               "  print \"Fake GPU, 12.1, 580.1, 97871\\n\" x 2;\n"
               "} else {\n"
               "  print \"| NVIDIA-SMI 580.1   Driver Version: 580.1   CUDA Version: 13.0 |\\n\";\n"
               "}\n", dir);
    fclose(f);
    assert_int_equal(chmod(script, 0755), 0);
    char *old_path = getenv("PATH") ? xstrdup(getenv("PATH")) : NULL;
    char *path = xasprintf("%s:/usr/bin:/bin", dir);
    setenv("PATH", path, 1);
    setenv("MOEPROBE_NVML_LIB", "none", 1);
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &old);
    struct mp_fingerprint fp;
    struct mp_fp_extra x;
    memset(&fp, 0, sizeof(fp));
    mp_fingerprint_detect_ex(&fp, &x);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (old_path)
        setenv("PATH", old_path, 1);
    unsetenv("MOEPROBE_NVML_LIB");
    assert_string_equal(fp.gpu, "2 x Fake GPU");
    assert_string_equal(fp.compute_capability, "12.1");
    assert_string_equal(fp.driver, "580.1");
    assert_string_equal(fp.cuda, "13.0");
    assert_int_equal(x.gpu_memory_mib, 97871);
    assert_string_equal(x.gpu_source, "nvidia-smi");
    /* host_arch is the machine name only (DESIGN.md: x86_64, aarch64) */
    struct utsname un;
    assert_int_equal(uname(&un), 0);
    assert_string_equal(fp.host_arch, un.machine);
    char *blk = xasprintf("%s/sigblk", dir);
    f = fopen(blk, "r");
    assert_non_null(f);
    char line[128] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_true(strtoull(line + strlen("SigBlk:"), NULL, 16) == 0);
    unlink(blk);
    unlink(script);
    rmdir(dir);
    free(blk);
    free(script);
    free(path);
    free(old_path);
    mp_fingerprint_release(&fp);
    mp_fp_extra_release(&x);
    assert_int_equal(count_zombie_children(), 0);
}

/* mp_signals_begin/end: SIGINT goes to the signalfd while begun; end
 * restores the mask, closes the fd, and is harmless twice or unbegun. */
static void test_signals_begin_end(void **state)
{
    MP_UNUSED(state);
    struct mp_signals none = MP_SIGNALS_INIT;
    mp_signals_end(&none);
    sigset_t before, during, after;
    sigprocmask(SIG_SETMASK, NULL, &before);
    assert_false(sigismember(&before, SIGINT));
    struct mp_signals s = MP_SIGNALS_INIT;
    assert_int_equal(mp_signals_begin(&s), 0);
    assert_true(s.fd >= 0);
    sigprocmask(SIG_SETMASK, NULL, &during);
    assert_true(sigismember(&during, SIGINT) && sigismember(&during, SIGTERM));
    raise(SIGINT);
    struct pollfd pf = {s.fd, POLLIN, 0};
    assert_int_equal(poll(&pf, 1, 60000), 1);
    struct signalfd_siginfo si;
    assert_int_equal(read(s.fd, &si, sizeof(si)), (ssize_t)sizeof(si)); /* consumed, not pending */
    assert_int_equal(si.ssi_signo, SIGINT);
    int fd = s.fd;
    mp_signals_end(&s);
    assert_int_equal(s.fd, -1);
    assert_int_equal(fcntl(fd, F_GETFD), -1);
    sigprocmask(SIG_SETMASK, NULL, &after);
    assert_false(sigismember(&after, SIGINT));
    mp_signals_end(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_describe_status),
        cmocka_unit_test(test_markers),
        cmocka_unit_test(test_lines_and_exit_status),
        cmocka_unit_test(test_child_environment),
        cmocka_unit_test(test_flood_of_lines),
        cmocka_unit_test(test_giant_line_truncated),
        cmocka_unit_test(test_exits_on_term),
        cmocka_unit_test(test_ignores_term_needs_kill),
        cmocka_unit_test(test_stop_steps_on_callers_loop),
        cmocka_unit_test(test_flood_ignoring_term_is_bounded),
        cmocka_unit_test(test_stopped_engine_gets_cont),
        cmocka_unit_test(test_setsid_escapee_found_by_marker),
        cmocka_unit_test(test_unmarked_daemon_escapee),
        cmocka_unit_test(test_unmarked_escapees_of_two_engines),
        cmocka_unit_test(test_double_fork_in_group),
        cmocka_unit_test(test_leader_gone_group_left),
        cmocka_unit_test(test_reap_orphans_keeps_managed_status),
        cmocka_unit_test(test_spawn_errors),
        cmocka_unit_test(test_container_runtime_called),
        cmocka_unit_test(test_free_without_teardown),
        cmocka_unit_test(test_run_capture),
        cmocka_unit_test(test_capture_on_loop),
        cmocka_unit_test(test_run_capture_signal_mask),
        cmocka_unit_test(test_find_env),
        cmocka_unit_test(test_self_exe),
        cmocka_unit_test(test_signals_begin_end),
        cmocka_unit_test(test_fingerprint_smi_through_proc),
    };
    mp_proc_ignore_sigpipe();
    if (mp_proc_become_subreaper() != 0) {
        fprintf(stderr, "cannot become a child subreaper\n");
        return 1;
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
