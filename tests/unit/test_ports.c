/* test_ports.c - the engine's announced address (every era's phrasing,
 * IPv6, unix sockets, lines that only look alike) and whether moeprobe can
 * reach it: host commands, container publishing, host network, what cannot
 * be told. */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <string.h>

#include "logs/announce.h"
#include "engine/ports.h"

static enum mp_announce_kind parse(const char *line, struct mp_announce *an)
{
    return mp_announce_parse(line, strlen(line), an);
}

static void test_announce_eras(void **st)
{
    (void)st;
    static const struct {
        const char *line;
        const char *host;
        int port;
    } ok[] = {
        {"(APIServer pid=7) INFO 11-25 10:00:01 [api_server.py:1912] Starting vLLM API server 0 on "
         "http://0.0.0.0:8000",
         "0.0.0.0", 8000},
        {"INFO 03-01 10:00:01 [api_server.py:602] Starting vLLM server on http://127.0.0.1:18001",
         "127.0.0.1", 18001},
        {"INFO 01-01 00:00:00 api_server.py:300] Starting vLLM API server on http://localhost:9000",
         "localhost", 9000},
        {"INFO:     Uvicorn running on http://0.0.0.0:8080 (Press CTRL+C to quit)", "0.0.0.0", 8080},
        {"Starting vLLM server on https://[::1]:8443", "::1", 8443},
        {"Starting vLLM API server 12 on http://10.0.0.5:1", "10.0.0.5", 1},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        struct mp_announce an;
        assert_int_equal(parse(ok[i].line, &an), MP_ANNOUNCE_TCP);
        assert_string_equal(an.host, ok[i].host);
        assert_int_equal(an.port, ok[i].port);
    }
}

static void test_announce_unix_and_not(void **st)
{
    (void)st;
    struct mp_announce an;
    assert_int_equal(parse("Starting vLLM server on unix:/tmp/v.sock", &an), MP_ANNOUNCE_UNIX);
    assert_string_equal(an.path, "/tmp/v.sock");
    assert_int_equal(parse("INFO:     Uvicorn running on unix socket /run/x.sock (Press CTRL+C)", &an),
                     MP_ANNOUNCE_UNIX);
    assert_string_equal(an.path, "/run/x.sock");
    static const char *const no[] = {
        "Starting vLLM server",                            /* no address */
        "Starting vLLM server on http://0.0.0.0",          /* no port */
        "Starting vLLM server on http://0.0.0.0:0",        /* port 0 */
        "Starting vLLM server on http://0.0.0.0:65536",    /* too large */
        "Starting vLLM server on http://0.0.0.0:99999999999999999999",
        "Starting vLLM server on http://0.0.0.0:80x",
        "Starting vLLM engine on http://0.0.0.0:8000",     /* not the server */
        "Starting vLLM API server 0 on ftp://0.0.0.0:21",
        "Starting vLLM server on https://[::1:8443",
        "Uvicorn running on ",
        "Started server process [12]",
        "",
    };
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        assert_int_equal(parse(no[i], &an), MP_ANNOUNCE_NONE);
    /* not NUL-terminated: the length bounds the parse */
    const char *l = "Starting vLLM server on http://h:8000123";
    assert_int_equal(mp_announce_parse(l, strlen(l) - 3, &an), MP_ANNOUNCE_TCP);
    assert_int_equal(an.port, 8000);
}

static enum mp_port_judgement judge(const char *const *argv, bool ctr, int ann, int probe, char *why)
{
    size_t n = 0;
    while (argv[n])
        n++;
    return mp_ports_judge((char *const *)argv, n, ctr, ann, probe, why, 512);
}

static void test_host_command(void **st)
{
    (void)st;
    char why[512];
    const char *cmd[] = {"vllm", "serve", "m", "--port", "18000", NULL};
    assert_int_equal(judge(cmd, false, 18000, 18000, why), MP_PORT_OK);
    assert_string_equal(why, "");
    assert_int_equal(judge(cmd, false, 8000, 18000, why), MP_PORT_MISMATCH);
    assert_non_null(strstr(why, "port 8000"));
    assert_non_null(strstr(why, "port 18000"));
    assert_non_null(strstr(why, "-p 18000:8000"));
}

static void test_container_publish(void **st)
{
    (void)st;
    char why[512];
    const char *mapped[] = {"docker", "run", "--rm", "-p", "18000:8000", "img", "--model", "m", NULL};
    assert_int_equal(judge(mapped, true, 8000, 18000, why), MP_PORT_OK);
    /* published on another host port */
    assert_int_equal(judge(mapped, true, 8000, 19000, why), MP_PORT_MISMATCH);
    assert_non_null(strstr(why, "host port 18000"));
    assert_non_null(strstr(why, "-p 19000:8000"));
    /* the engine listens on a port the container does not publish */
    assert_int_equal(judge(mapped, true, 18000, 18000, why), MP_PORT_MISMATCH);
    assert_non_null(strstr(why, "does not publish"));
    /* every spelling of the option, IPs, ranges, /tcp */
    const char *const forms[][8] = {
        {"podman", "--runtime", "runc", "run", "-p18000:8000", "img", NULL},
        {"docker", "container", "run", "--publish=127.0.0.1:18000:8000", "img", NULL},
        {"docker", "run", "--publish", "[::1]:18000:8000/tcp", "img", NULL},
        {"nerdctl", "run", "-p", "17990-18010:7990-8010", "img", NULL},
        {"docker", "run", "-p", "9:9", "-p", "18000:8000", "img", NULL},
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
        assert_int_equal(judge(forms[i], true, 8000, 18000, why), MP_PORT_OK);
    const char *udp[] = {"docker", "run", "-p", "18000:8000/udp", "img", NULL};
    assert_int_equal(judge(udp, true, 8000, 18000, why), MP_PORT_UNKNOWN);
}

static void test_container_network(void **st)
{
    (void)st;
    char why[512];
    const char *host[] = {"podman", "run", "--network", "host", "img", NULL};
    assert_int_equal(judge(host, true, 18000, 18000, why), MP_PORT_OK);
    assert_int_equal(judge(host, true, 8000, 18000, why), MP_PORT_MISMATCH);
    assert_non_null(strstr(why, "host network"));
    const char *net_eq[] = {"docker", "run", "--net=host", "img", NULL};
    assert_int_equal(judge(net_eq, true, 8000, 18000, why), MP_PORT_MISMATCH);
    /* what cannot be told from the command */
    const char *const unknown[][8] = {
        {"docker", "run", "-P", "img", NULL},
        {"podman", "run", "--pod", "p1", "img", NULL},
        {"docker", "run", "--network", "container:other", "img", NULL},
        {"docker", "run", "img", NULL},                      /* a bridge without -p */
        {"docker", "run", "-p", "8000", "img", NULL},        /* a random host port */
        {"docker", "run", "-p", "127.0.0.1::8000", "img", NULL},
    };
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
        assert_int_equal(judge(unknown[i], true, 8000, 18000, why), MP_PORT_UNKNOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_announce_eras),
        cmocka_unit_test(test_announce_unix_and_not),
        cmocka_unit_test(test_host_command),
        cmocka_unit_test(test_container_publish),
        cmocka_unit_test(test_container_network),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
