/* test_envtree.c - the process-tree environment check and the helper
 * capture of proc/proc.h, against real /bin/sh trees. Synchronised on output
 * lines, never on elapsed time (deadlines only turn a hang into a failure). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "proc/proc.h"
#include "xalloc.h"

#define SAFETY_NS ((int64_t)60 * 1000000000)

static void count_line(void *ud, const char *line, size_t len, bool truncated)
{
    (void)truncated;
    if (len == 5 && !memcmp(line, "ready", 5))
        (*(int *)ud)++;
}

/* Spawn sh -c script with X=1 added and a marker; wait for `ready` lines. */
static struct mp_proc *start(const char *script, const char *marker, int readies)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    char *env[] = {"X=1", NULL};
    struct mp_proc_spec spec = {.argv = argv, .env_add = env, .marker = marker};
    struct mp_proc *p = NULL;
    assert_int_equal(mp_proc_spawn(&spec, &p, NULL), 0);
    int n = 0;
    int64_t dl = mp_now_ns() + SAFETY_NS;
    while (n < readies && mp_now_ns() < dl) {
        struct pollfd pf = {.fd = mp_proc_output_fd(p), .events = POLLIN};
        poll(&pf, 1, 1000);
        assert_int_equal(mp_proc_read_lines(p, count_line, &n), 0);
    }
    assert_int_equal(n, readies);
    return p;
}

static void stop(struct mp_proc *p)
{
    struct mp_teardown td;
    mp_proc_teardown(p, 2, NULL, NULL, &td);
    assert_int_equal(td.leftovers, 0);
    mp_proc_free(p);
}

static void test_tree_env(void **state)
{
    (void)state;
    char marker[MP_PROC_MARKER_SIZE];
    mp_proc_new_marker(marker, sizeof(marker));
    struct mp_proc *p = start("echo ready; exec sleep 30", marker, 1);
    struct mp_proc_envcheck ec;
    assert_int_equal(mp_proc_tree_env(mp_proc_pid(p), marker, 0, 0, "X=1", &ec), 0);
    assert_int_equal(ec.pid, mp_proc_pid(p));
    assert_true(ec.processes >= 1);
    assert_int_equal(ec.unreadable, 0);
    assert_int_equal(mp_proc_tree_env(mp_proc_pid(p), marker, 0, 0, "X=2", &ec), 0);
    assert_int_equal(ec.pid, 0);
    assert_string_equal(ec.other, "X=1");
    /* the same process as a container's first process (root) */
    assert_int_equal(mp_proc_tree_env(0, NULL, mp_proc_pid(p), 0, "X=1", &ec), 0);
    assert_int_equal(ec.pid, mp_proc_pid(p));
    assert_int_equal(ec.listeners, 0);
    stop(p);

    /* a wrapper that stays, with a child started without X: the wrapper is
     * the only process of the tree that has it */
    p = start("env -u X /bin/sh -c 'echo ready; exec sleep 30' & wait", marker, 1);
    assert_int_equal(mp_proc_tree_env(mp_proc_pid(p), marker, 0, 0, "X=1", &ec), 0);
    assert_int_equal(ec.pid, mp_proc_pid(p));
    assert_int_equal(ec.processes, 2);
    stop(p);
}

static void test_capture(void **state)
{
    (void)state;
    char *argv[] = {"/bin/sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    struct buf b = BUF_INIT;
    int st = 0;
    assert_int_equal(mp_proc_capture(argv, 30, &b, &st, NULL), 0);
    assert_string_equal(b.data, "out\nerr\n");
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 3);
    buf_release(&b);
    /* a helper that does not finish is killed at the timeout */
    char *slow[] = {"/bin/sh", "-c", "echo started; exec sleep 60", NULL};
    int64_t t0 = mp_now_ns();
    assert_int_equal(mp_proc_capture(slow, 0.3, &b, &st, NULL), 0);
    assert_int_equal(st, -1);
    assert_true(mp_now_ns() - t0 < SAFETY_NS / 2);
    buf_release(&b);
    char *none[] = {"/nonexistent/helper", NULL};
    struct mp_diag d = MP_DIAG_INIT;
    assert_true(mp_proc_capture(none, 1, &b, &st, &d) < 0);
    assert_non_null(strstr(d.msg, "/nonexistent/helper"));
    buf_release(&b);
}

/* Teardown of a container run through its client words: `sudo docker -H
 * HOST stop` must carry the wrappers and global options (here a fake client
 * logging its arguments). */
static void test_teardown_client(void **state)
{
    (void)state;
    char dir[] = "/tmp/mp-test-client-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *rt = xasprintf("%s/fake-client", dir), *logf = xasprintf("%s/calls.log", dir);
    FILE *f = fopen(rt, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\necho \"$@\" >> '%s'\n", logf);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(rt, 0755), 0);
    char marker[MP_PROC_MARKER_SIZE];
    mp_proc_new_marker(marker, sizeof(marker));
    char *argv[] = {"/bin/sh", "-c", "echo ready; exec sleep 30", NULL};
    char *client[] = {rt, "-H", "tcp://gpu1:2375", NULL};
    struct mp_proc_spec spec = {.argv = argv, .marker = marker, .container_runtime = "docker",
                                .container_name = "mp-ctr", .container_client = client};
    struct mp_proc *p = NULL;
    assert_int_equal(mp_proc_spawn(&spec, &p, NULL), 0);
    int n = 0;
    int64_t dl = mp_now_ns() + SAFETY_NS;
    while (n < 1 && mp_now_ns() < dl) {
        struct pollfd pf = {.fd = mp_proc_output_fd(p), .events = POLLIN};
        poll(&pf, 1, 1000);
        assert_int_equal(mp_proc_read_lines(p, count_line, &n), 0);
    }
    stop(p);
    char got[256] = "";
    f = fopen(logf, "r");
    assert_non_null(f);
    size_t k = fread(got, 1, sizeof(got) - 1, f);
    fclose(f);
    got[k] = '\0';
    assert_string_equal(got, "-H tcp://gpu1:2375 stop -t 2 mp-ctr\n-H tcp://gpu1:2375 rm -f mp-ctr\n");
    unlink(logf);
    unlink(rt);
    rmdir(dir);
    free(rt);
    free(logf);
}

int main(void)
{
    mp_proc_ignore_sigpipe();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_env),
        cmocka_unit_test(test_capture),
        cmocka_unit_test(test_teardown_client),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
