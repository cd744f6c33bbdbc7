/* shape.c - command-shape recognition (engine/shape.h). */
#include "engine/shape.h"

#include <string.h>

static const char *base_name(const char *w)
{
    const char *s = strrchr(w, '/');
    return s ? s + 1 : w;
}

static bool in_list(const char *w, const char *const *list)
{
    for (; *list; list++) {
        if (!strcmp(w, *list))
            return true;
    }
    return false;
}

/* "--opt=value" is one word; the option's name is the part before '='. */
static bool opt_is(const char *w, const char *const *list)
{
    const char *eq = strchr(w, '=');
    size_t n = eq ? (size_t)(eq - w) : strlen(w);
    for (; *list; list++) {
        if (strlen(*list) == n && !strncmp(w, *list, n))
            return true;
    }
    return false;
}

/* ---- wrappers before the client ---- */

/* sudo's and doas's options that take an argument */
static const char *const sudo_arg[] = {"-u", "--user", "-g", "--group", "-h", "--host", "-p",
                                       "--prompt", "-C", "--close-from", "-D", "--chdir", "-r",
                                       "--role", "-t", "--type", "-T", "--command-timeout",
                                       "-U", "--other-user", NULL};
static const char *const nice_arg[] = {"-n", "--adjustment", NULL};
static const char *const env_arg[] = {"-u", "--unset", "-C", "--chdir", "-S", "--split-string",
                                      NULL};

/* Skip one wrapper at argv[i] with its options; returns the index after it,
 * or i when argv[i] is no wrapper. */
static size_t skip_wrapper(char *const *argv, size_t argc, size_t i)
{
    const char *b = base_name(argv[i]);
    const char *const *arg_opts;
    bool env = false;
    if (!strcmp(b, "sudo") || !strcmp(b, "doas"))
        arg_opts = sudo_arg;
    else if (!strcmp(b, "nice"))
        arg_opts = nice_arg;
    else if (!strcmp(b, "env")) {
        arg_opts = env_arg;
        env = true;
    } else if (!strcmp(b, "nohup"))
        return i + 1;
    else
        return i;
    size_t j = i + 1;
    while (j < argc) {
        const char *w = argv[j];
        if (!strcmp(w, "--")) {
            j++;
            break;
        }
        if (w[0] == '-' && w[1]) {
            j += (opt_is(w, arg_opts) && !strchr(w, '=')) ? 2 : 1;
            continue;
        }
        if (env && strchr(w, '=') && w[0] != '=') {
            j++; /* env NAME=VALUE */
            continue;
        }
        break;
    }
    return j;
}

/* ---- clients ---- */

struct client {
    const char *name;
    enum mp_shape_kind kind;
    const char *runtime;          /* for inspect/stop/rm */
    bool compose;                 /* standalone compose (docker-compose) */
    const char *const *arg_opts;  /* global options taking an argument */
    const char *const *remote;    /* global options that mean "another host" */
};

static const char *const docker_arg[] = {"--config", "-c", "--context", "-H", "--host", "-l",
                                         "--log-level", "--tlscacert", "--tlscert", "--tlskey",
                                         NULL};
static const char *const docker_remote[] = {"-c", "--context", "-H", "--host", NULL};
static const char *const podman_arg[] = {
    "--cgroup-manager", "--conmon", "--connection", "-c", "--events-backend", "--hooks-dir",
    "--identity", "--imagestore", "--log-level", "--module", "--network-cmd-path",
    "--network-config-dir", "--out", "--root", "--runroot", "--runtime", "--runtime-flag",
    "--ssh", "--storage-driver", "--storage-opt", "--tmpdir", "--url", "-H", "--host",
    "--volumepath", "--cdi-spec-dir", "--db-backend", NULL};
static const char *const podman_remote[] = {"--connection", "-c", "--url", "-H", "--host",
                                            "--remote", "-r", "--identity", NULL};
static const char *const nerdctl_arg[] = {"--address", "-a", "-H", "--host", "--namespace", "-n",
                                          "--snapshotter", "--storage-driver", "--cni-path",
                                          "--cni-netconfpath", "--data-root", "--cgroup-manager",
                                          "--host-gateway-ip", "--hosts-dir", "--bridge-ip", NULL};
static const char *const no_remote[] = {NULL};
static const char *const compose_arg[] = {"-f", "--file", "-p", "--project-name",
                                          "--project-directory", "--env-file", "--profile",
                                          "--ansi", "--parallel", "--progress", NULL};
static const char *const apptainer_arg[] = {"-c", "--config", NULL};

static const struct client clients[] = {
    {"docker", MP_SHAPE_DOCKER, "docker", false, docker_arg, docker_remote},
    {"podman", MP_SHAPE_DOCKER, "podman", false, podman_arg, podman_remote},
    {"nerdctl", MP_SHAPE_DOCKER, "nerdctl", false, nerdctl_arg, no_remote},
    {"docker-compose", MP_SHAPE_DOCKER, "docker", true, compose_arg, no_remote},
    {"podman-compose", MP_SHAPE_DOCKER, "podman", true, compose_arg, no_remote},
    {"apptainer", MP_SHAPE_APPTAINER, "apptainer", false, apptainer_arg, no_remote},
    {"singularity", MP_SHAPE_APPTAINER, "singularity", false, apptainer_arg, no_remote},
};

/* Options of `run` (docker, podman, nerdctl, compose run) that take no
 * argument; every other option without '=' takes the next word. */
static const char *const run_bool[] = {
    "--rm", "-d", "--detach", "-i", "--interactive", "-t", "--tty", "--init", "--privileged",
    "--read-only", "-P", "--publish-all", "--no-healthcheck", "--oom-kill-disable", "-q",
    "--quiet", "--sig-proxy", "--disable-content-trust", "--replace", "--rmi", "--no-hosts",
    "--read-only-tmpfs", "--env-host", "--http-proxy", "--tls-verify", "--no-deps",
    "--service-ports", "--use-aliases", "--build", "--remove-orphans", "-T", "--no-TTY",
    "--quiet-pull", "--help", NULL};
/* single-letter run flags that may be combined (-it, -dit) */
static const char run_bool_chars[] = "itdPqT";

static bool combined_short_flags(const char *w)
{
    if (w[0] != '-' || w[1] == '-' || !w[1])
        return false;
    for (const char *p = w + 1; *p; p++) {
        if (!strchr(run_bool_chars, *p))
            return false;
    }
    return true;
}

/* Skip the options of a docker-like `run` from argv[i]; fills name; returns
 * the index of the image (argc when none). */
static size_t skip_run_options(char *const *argv, size_t argc, size_t i, const char **name)
{
    while (i < argc) {
        const char *w = argv[i];
        if (!strcmp(w, "--"))
            return i + 1 < argc ? i + 1 : argc;
        if (w[0] != '-' || !w[1])
            return i;
        if (!strncmp(w, "--name=", 7)) {
            *name = w + 7;
            i++;
        } else if (!strcmp(w, "--name")) {
            if (i + 1 < argc)
                *name = argv[i + 1];
            i += 2;
        } else if (strchr(w, '=') || opt_is(w, run_bool) || combined_short_flags(w)) {
            i++;
        } else if (w[1] != '-' && w[2]) {
            i++; /* -eNAME=VALUE, -p8000:8000: the value is attached */
        } else {
            i += 2;
        }
    }
    return argc;
}

/* Skip global options of client cl from argv[i] until a word that is not
 * an option; sets *remote. Returns that word's index (argc when none). */
static size_t skip_globals(char *const *argv, size_t argc, size_t i, const struct client *cl,
                           const char *const *subs, bool *remote)
{
    while (i < argc) {
        const char *w = argv[i];
        if (w[0] != '-' || !w[1])
            return i;
        if (opt_is(w, cl->remote))
            *remote = true;
        if (strchr(w, '=')) {
            i++;
        } else if (opt_is(w, cl->arg_opts)) {
            i += 2;
        } else if (i + 1 < argc && argv[i + 1][0] != '-' && !in_list(argv[i + 1], subs)) {
            i += 2; /* unknown option: it takes the next word unless that is the subcommand */
        } else {
            i++;
        }
    }
    return argc;
}

void mp_shape_parse(char *const *argv, size_t argc, struct mp_shape *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = MP_SHAPE_HOST;
    out->image = argc;
    size_t i = 0, elevated = 0;
    for (int guard = 0; i < argc && guard < 16; guard++) {
        size_t j = skip_wrapper(argv, argc, i);
        if (j == i)
            break;
        const char *wb = base_name(argv[i]);
        if (!strcmp(wb, "sudo") || !strcmp(wb, "doas"))
            elevated = j;
        i = j;
    }
    if (i >= argc)
        return;
    out->elevated = elevated; /* cleared again below for a container run */
    const struct client *cl = NULL;
    const char *b = base_name(argv[i]);
    for (size_t k = 0; k < MP_ARRAY_SIZE(clients); k++) {
        if (!strcmp(b, clients[k].name))
            cl = &clients[k];
    }
    if (!cl)
        return;
    static const char *const docker_subs[] = {"run", "container", "compose", NULL};
    static const char *const compose_subs[] = {"run", NULL};
    static const char *const apptainer_subs[] = {"run", "exec", NULL};
    const char *const *subs = cl->kind == MP_SHAPE_APPTAINER ? apptainer_subs
                              : cl->compose                  ? compose_subs
                                                             : docker_subs;
    bool remote = false;
    size_t client = i;
    size_t s = skip_globals(argv, argc, i + 1, cl, subs, &remote);
    if (s >= argc)
        return;
    size_t sub = s;
    bool compose = cl->compose;
    if (cl->kind == MP_SHAPE_DOCKER && !compose && !strcmp(argv[s], "container")) {
        s++;
    } else if (cl->kind == MP_SHAPE_DOCKER && !compose && !strcmp(argv[s], "compose")) {
        static const struct client compose_cl = {"compose", MP_SHAPE_DOCKER, NULL, true,
                                                 compose_arg, no_remote};
        compose = true;
        s = skip_globals(argv, argc, s + 1, &compose_cl, compose_subs, &remote);
    }
    if (s >= argc)
        return;
    if (cl->kind == MP_SHAPE_APPTAINER ? !in_list(argv[s], apptainer_subs)
                                       : strcmp(argv[s], "run") != 0) {
        out->other = argv[s];
        return;
    }
    out->kind = cl->kind;
    out->elevated = 0;
    out->client = client;
    out->sub = sub;
    out->run = s;
    out->runtime = cl->runtime;
    out->compose = compose;
    out->remote = remote;
    if (cl->kind == MP_SHAPE_DOCKER)
        out->image = skip_run_options(argv, argc, s + 1, &out->name);
}

const char *mp_shape_kind_name(enum mp_shape_kind k)
{
    switch (k) {
    case MP_SHAPE_DOCKER:
        return "docker";
    case MP_SHAPE_APPTAINER:
        return "apptainer";
    default:
        return "host";
    }
}
