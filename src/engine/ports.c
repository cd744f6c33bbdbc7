#include "engine/ports.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parse "A" or "A-B" (ports) at s..e into lo/hi. Returns false when it is
 * not one. */
static bool port_range(const char *s, const char *e, long *lo, long *hi)
{
    if (s >= e)
        return false;
    char tmp[32];
    size_t n = (size_t)(e - s);
    if (n >= sizeof(tmp))
        return false;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    *lo = strtol(tmp, &end, 10);
    if (end == tmp)
        return false;
    *hi = *lo;
    if (*end == '-') {
        char *q = end + 1;
        *hi = strtol(q, &end, 10);
        if (end == q)
            return false;
    }
    return *end == '\0' && *lo >= 1 && *hi <= 65535 && *lo <= *hi;
}

struct publish {
    long host_lo, host_hi; /* 0 = a random host port */
    long ctr_lo, ctr_hi;
};

/* Parse a -p value: [IP:][HOSTPORT:]CONTAINERPORT[/PROTO], IP may be
 * [v6]. Returns false for what it cannot read. */
static bool parse_publish(const char *v, struct publish *p)
{
    memset(p, 0, sizeof(*p));
    const char *end = v + strlen(v);
    const char *slash = strchr(v, '/');
    if (slash) {
        if (strcmp(slash, "/tcp") != 0)
            return false; /* udp/sctp: not our HTTP port */
        end = slash;
    }
    if (*v == '[') { /* [v6]:... */
        const char *rb = strchr(v, ']');
        if (!rb || rb[1] != ':')
            return false;
        v = rb + 2;
    }
    /* the last ':' splits off the container port; one before it the host port */
    const char *c2 = NULL, *c1 = NULL;
    for (const char *q = v; q < end; q++) {
        if (*q == ':') {
            c1 = c2;
            c2 = q;
        }
    }
    if (!c2)
        return port_range(v, end, &p->ctr_lo, &p->ctr_hi); /* host port random */
    if (!port_range(c2 + 1, end, &p->ctr_lo, &p->ctr_hi))
        return false;
    const char *hs = c1 ? c1 + 1 : v;
    if (hs == c2)
        return true; /* IP::CPORT, random host port */
    if (!port_range(hs, c2, &p->host_lo, &p->host_hi)) {
        /* "IP:CPORT" has no host port: the first part is an address */
        if (c1 == NULL && strchr(v, '.'))
            return true;
        return false;
    }
    return true;
}

/* The value of option word argv[i] named by one of the names (with or
 * without '=', or attached for one-letter names); *skip gets how many words
 * it took. NULL when argv[i] is not that option. */
static const char *opt_value(char *const *argv, size_t argc, size_t i, const char *lname,
                             const char *sname, size_t *skip)
{
    const char *w = argv[i];
    size_t ln = strlen(lname);
    *skip = 1;
    if (!strncmp(w, lname, ln) && w[ln] == '=')
        return w + ln + 1;
    if (!strcmp(w, lname) || (sname && !strcmp(w, sname))) {
        if (i + 1 >= argc)
            return NULL;
        *skip = 2;
        return argv[i + 1];
    }
    if (sname && !strncmp(w, sname, strlen(sname)) && w[strlen(sname)])
        return w + strlen(sname);
    return NULL;
}

enum mp_port_judgement mp_ports_judge(char *const *argv, size_t argc, bool container, int announced,
                                      int probe, char *why, size_t whysz)
{
    why[0] = '\0';
    if (!container) {
        if (announced == probe)
            return MP_PORT_OK;
        snprintf(why, whysz,
                 "the engine announced that it listens on port %d, but moeprobe probes port %d: "
                 "let the server command take moeprobe's port ('{port}' in the command, or no "
                 "--port of its own); if the engine runs in a container, publish it with "
                 "`docker run -p %d:%d`",
                 announced, probe, probe, announced);
        return MP_PORT_MISMATCH;
    }
    size_t run = 0;
    for (size_t i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "run")) {
            run = i;
            break;
        }
    }
    bool host_net = false, unknown = false, have_pub = false;
    long other_host = 0; /* a host port the announced container port is published on */
    bool ok = false;
    for (size_t i = run + 1; run && i < argc; i++) {
        size_t skip;
        const char *v;
        if ((v = opt_value(argv, argc, i, "--network", NULL, &skip)) ||
            (v = opt_value(argv, argc, i, "--net", NULL, &skip))) {
            if (!strcmp(v, "host"))
                host_net = true;
            else if (strcmp(v, "bridge") != 0 && strcmp(v, "default") != 0)
                unknown = true; /* another container's namespace, pasta, a named net... */
            i += skip - 1;
            continue;
        }
        if (!strcmp(argv[i], "-P") || !strcmp(argv[i], "--publish-all") ||
            opt_value(argv, argc, i, "--pod", NULL, &skip)) {
            unknown = true;
            continue;
        }
        if ((v = opt_value(argv, argc, i, "--publish", "-p", &skip))) {
            struct publish p;
            i += skip - 1;
            if (!parse_publish(v, &p)) {
                unknown = true;
                continue;
            }
            have_pub = true;
            if (announced < p.ctr_lo || announced > p.ctr_hi)
                continue;
            if (!p.host_lo) {
                unknown = true; /* a random host port */
                continue;
            }
            long hp = p.host_hi > p.host_lo ? p.host_lo + (announced - p.ctr_lo) : p.host_lo;
            if (hp == probe)
                ok = true;
            else
                other_host = hp;
        }
    }
    if (ok)
        return MP_PORT_OK;
    if (host_net) {
        if (announced == probe)
            return MP_PORT_OK;
        snprintf(why, whysz,
                 "the engine announced that it listens on port %d (host network), but moeprobe "
                 "probes port %d: let the server command take moeprobe's port ('{port}' in the "
                 "command)",
                 announced, probe);
        return MP_PORT_MISMATCH;
    }
    if (unknown || !have_pub)
        return MP_PORT_UNKNOWN;
    if (other_host)
        snprintf(why, whysz,
                 "the engine listens on container port %d, published on host port %ld, but "
                 "moeprobe probes port %d: publish it with `-p %d:%d` (or `-p {port}:%d`)",
                 announced, other_host, probe, probe, announced, announced);
    else
        snprintf(why, whysz,
                 "the engine listens on container port %d, which the container does not "
                 "publish, and moeprobe probes port %d: publish it with `-p %d:%d` (or "
                 "`-p {port}:%d`)",
                 announced, probe, probe, announced, announced);
    return MP_PORT_MISMATCH;
}
