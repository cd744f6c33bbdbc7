/* cmd_explain.c - `moeprobe explain`: what each knob of a launch command does
 * for a vLLM version, without running anything. */
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "model/inherit.h"
#include "cli/opts.h"
#include "err.h"
#include "escape.h"
#include "knowledge/knowledge.h"
#include "engine/shape.h"
#include "strv.h"
#include "secret.h"
#include "xalloc.h"

extern char **environ;

static const char explain_usage[] =
    "usage: moeprobe explain [--engine-version V] [--json] [--knowledge FILE] [--clean-env] -- COMMAND...\n"
    "\n"
    "Analyses a launch command without running it. The environment is the\n"
    "command's leading NAME=VALUE words, -e/--env NAME=VALUE of a container run\n"
    "(`docker run`, `podman --runtime R run`, `docker container run`, `sudo docker\n"
    "run`, `nerdctl run`, `docker compose run`, ...), and (for commands not run in\n"
    "a container) this shell's\n"
    "VLLM_*, CUDA_* and FLASHINFER_* variables, as qualify and resolve give them to\n"
    "every candidate (named on a line of their own; --clean-env leaves them out,\n"
    "as it does there); --flag value / --flag=value pairs are flags.\n"
    "For each knob: kind, what it affects in that vLLM version, its status and a\n"
    "note with the source; then the MoE backend the rules decide, if they do.\n"
    "Without --engine-version the version comes from an image tag in the command:\n"
    "vllm/vllm-openai:v0.17.0-cu130 names it; an NGC tag (nvcr.io/nvidia/vllm:26.03-py3)\n"
    "is looked up in NVIDIA's release notes (the knowledge's ngc_images) - an NGC tag\n"
    "moeprobe does not know is 'version unknown: pass --engine-version'. Otherwise\n"
    "the newest knowledge is used (and said).\n"
    "The first line is the verdict: 'will not start: ... - fix: ...' when a knob\n"
    "stops the server (argparse, a value vLLM refuses), else the MoE backend the\n"
    "rules decide.\n"
    "Values of variables whose names contain TOKEN, KEY, SECRET, PASSWORD or AUTH\n"
    "are printed as ***.\n"
    "\n"
    "options:\n"
    "  --engine-version V  evaluate for vLLM V (e.g. 0.17.0)\n"
    "  --json              print JSON\n"
    "  --knowledge FILE    use FILE's knowledge (docs/knowledge.md)\n"
    "  --clean-env         without this shell's VLLM_*, CUDA_*, FLASHINFER_* (but\n"
    "                      CUDA_VISIBLE_DEVICES, CUDA paths, tokens)\n"
    "  -h, --help          this help\n"
    "\n"
    "exit codes: 0 the command would start as far as its knobs go; 1 a knob stops\n"
    "the server before it serves; 2 usage error\n";

static bool is_assignment(const char *w)
{
    if (!((*w >= 'A' && *w <= 'Z') || (*w >= 'a' && *w <= 'z') || *w == '_'))
        return false;
    for (const char *p = w; *p; p++) {
        if (*p == '=')
            return true;
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_' ||
              (*p >= '0' && *p <= '9')))
            return false;
    }
    return false;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* env NAME already set in env? */
static bool env_named(const struct mp_strv *env, const char *assign)
{
    size_t n = strcspn(assign, "=");
    for (size_t i = 0; i < env->n; i++)
        if (!strncmp(env->v[i], assign, n) && env->v[i][n] == '=')
            return true;
    return false;
}

/* docker/podman run options that take a value as the next word */
static bool docker_opt_takes_value(const char *o)
{
    static const char *const opts[] = {
        "-e", "--env", "-p", "--publish", "-v", "--volume", "--name", "--gpus", "--ipc",
        "--shm-size", "--network", "--net", "-w", "--workdir", "--entrypoint", "--runtime",
        "--ulimit", "--env-file", "-u", "--user", "--mount", "--device", "--cpus", "--memory",
        "-m", "--label", "-l", "--platform", "--pull", "--restart", "-h", "--hostname",
        "--add-host", "--cap-add", "--cap-drop", "--security-opt", "--group-add", "--log-driver",
        "--log-opt", "--tmpfs", "--pid", "--uts", "--cgroupns", "--stop-signal", "--stop-timeout",
        "--health-cmd", "--cpuset-cpus", NULL};
    for (size_t i = 0; opts[i]; i++)
        if (!strcmp(o, opts[i]))
            return true;
    return false;
}

/* Where the version came from, said after the verdict. */
static void version_line(const struct mp_explain *ex, const char *ver, const char *image,
                         const struct mp_kn_image_version *iv, struct buf *b)
{
    if (ver)
        buf_printf(b, "engine version: vLLM %s\n", ex->engine_version);
    else if (iv->kind == MP_KN_IMAGE_UPSTREAM)
        buf_printf(b, "engine version: vLLM %s (from the image tag %s)\n", ex->engine_version,
                   image);
    else if (iv->kind == MP_KN_IMAGE_NGC)
        buf_printf(b, "engine version: vLLM %s (NGC image %s ships it: %s)\n", ex->engine_version,
                   image, iv->source);
    else if (iv->kind == MP_KN_IMAGE_NGC_UNKNOWN)
        buf_printf(b, "engine version: unknown: NGC image %s is a release moeprobe does not know "
                      "(its tag is NVIDIA's release, not a vLLM version); pass --engine-version; "
                      "evaluated with the newest knowledge (vLLM %s)\n",
                   image, ex->engine_version);
    else if (iv->kind == MP_KN_IMAGE_OTHER)
        buf_printf(b, "engine version: unknown: image %s is not vLLM's own (vllm/vllm-openai) "
                      "or NVIDIA's (nvcr.io/nvidia/vllm), so its tag is not read as a vLLM "
                      "version; evaluated with the newest knowledge (vLLM %s); pass "
                      "--engine-version V\n",
                   image, ex->engine_version);
    else if (image)
        buf_printf(b, "engine version: unknown (image %s names none); evaluated with the "
                      "newest knowledge (vLLM %s); pass --engine-version V\n",
                   image, ex->engine_version);
    else
        buf_printf(b, "engine version: unknown; evaluated with the newest knowledge (vLLM %s); "
                      "pass --engine-version V\n",
                   ex->engine_version);
}

/* The verdict first (with its fix), then the version, each knob, the
 * prediction and the closing sentence. */
static void explain_text(const struct mp_explain *ex, const char *ver, const char *image,
                         const struct mp_kn_image_version *iv, struct buf *b)
{
    buf_printf(b, "%s\n", ex->verdict);
    version_line(ex, ver, image, iv, b);
    if (ex->nknobs == 0)
        buf_adds(b, "no knobs: no NAME=VALUE environment and no --flags in the command\n");
    for (size_t j = 0; j < ex->nknobs; j++) {
        const struct mp_kn_knob_report *r = &ex->knobs[j];
        buf_printf(b, "\n  %s\n      %s, affects %s, %s%s\n      %s\n", r->knob, r->kind,
                   r->affects, r->status, r->uncertain ? " (uncertain)" : "", r->note);
        if (r->fix)
            buf_printf(b, "      fix: %s\n", r->fix);
    }
    buf_printf(b, "\npredicted MoE backend: %s (%s)\n\n%s\n",
               ex->predicted_moe_backend ? ex->predicted_moe_backend : "none",
               ex->prediction_reason, ex->summary);
}

/* The variables taken from this shell, as qualify and resolve report them
 * (model/inherit.h): secret values as ***. */
static void say_inherited(const struct mp_strv *in, bool clean, struct buf *b)
{
    if (!in->n && !clean)
        return;
    buf_adds(b, clean ? "\n--clean-env: only what the engine needs to run is taken from this shell"
                      : "\ninherited from this shell (qualify and resolve give them to every "
                        "candidate; --clean-env leaves them out)");
    for (size_t i = 0; i < in->n; i++) {
        size_t nl = strcspn(in->v[i], "=");
        bool secret = mp_is_secret_name(in->v[i], nl);
        buf_printf(b, "%s%.*s=%s", i ? ", " : ": ", (int)nl, in->v[i],
                   secret ? "***" : in->v[i] + nl + (in->v[i][nl] ? 1 : 0));
    }
    buf_adds(b, "\n");
}

/* A docker-like run from argv[i] (engine/shape.h): past wrappers and
 * global options, its -e/--env assignments into env (-e NAME: the host's
 * value), the image into *image. Returns the index after the image. */
static int docker_args(char **argv, int argc, int i, const struct mp_shape *sh,
                       struct mp_strv *env, char **image)
{
    int img = i + (int)sh->image;
    i += (int)sh->run + 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (i >= img || a[0] != '-') {
            *image = xstrdup(a);
            i++;
            break;
        }
        const char *val = NULL;
        if ((!strcmp(a, "-e") || !strcmp(a, "--env")) && i + 1 < argc)
            val = argv[++i];
        else if (!strncmp(a, "--env=", 6))
            val = a + 6;
        else if (!strncmp(a, "-e", 2) && a[2])
            val = a + 2;
        else if (!strchr(a, '=') && docker_opt_takes_value(a) && i + 1 < argc)
            i++;
        if (val) {
            if (strchr(val, '=')) {
                mp_strv_push(env, val);
            } else {
                const char *hv = getenv(val); /* -e NAME passes the host's value */
                if (hv)
                    mp_strv_push_owned(env, xasprintf("%s=%s", val, hv));
            }
        }
    }
    return i;
}

int cmd_explain(int argc, char **argv)
{
    const char *ver = NULL, *kfile = NULL;
    bool json = false, clean = false;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(explain_usage, stdout);
            return MP_EXIT_OK;
        } else if (!strcmp(a, "--json")) {
            json = true;
        } else if (!strcmp(a, "--clean-env")) {
            clean = true;
        } else if (!strcmp(a, "--engine-version") || !strcmp(a, "--knowledge")) {
            if (i + 1 >= argc) {
                mp_error("explain: %s needs a value", a);
                return MP_EXIT_USAGE;
            }
            if (a[2] == 'e')
                ver = argv[++i];
            else
                kfile = argv[++i];
        } else if (!strncmp(a, "--engine-version=", 17)) {
            ver = a + 17;
        } else if (!strncmp(a, "--knowledge=", 12)) {
            kfile = a + 12;
        } else if (!strcmp(a, "--")) {
            i++;
            break;
        } else if (a[0] == '-') {
            mp_error("explain: unknown option '%s' (see 'moeprobe explain --help')", a);
            return MP_EXIT_USAGE;
        } else {
            break;
        }
    }
    if (i >= argc) {
        mp_error("explain: no COMMAND given (moeprobe explain [options] -- COMMAND...)");
        return MP_EXIT_USAGE;
    }
    struct mp_knowledge *own = NULL;
    const struct mp_knowledge *k = NULL;
    if (mp_cli_knowledge("explain", kfile, &own, &k) < 0)
        return MP_EXIT_USAGE;
    struct mp_strv env = MP_STRV_INIT, flags = MP_STRV_INIT;
    char *image = NULL;
    struct mp_kn_image_version iv = {0};
    bool container = false;
    /* leading assignments (optionally after `env`) */
    if (i < argc && !strcmp(base_name(argv[i]), "env"))
        i++;
    while (i < argc && is_assignment(argv[i]))
        mp_strv_push(&env, argv[i++]);
    struct mp_shape sh;
    mp_shape_parse(argv + i, (size_t)(argc - i), &sh);
    if (sh.kind == MP_SHAPE_DOCKER) {
        container = true;
        i = docker_args(argv, argc, i, &sh, &env, &image);
        if (image)
            mp_kn_image_version(k, image, &iv);
    }
    for (; i < argc; i++)
        mp_strv_push(&flags, argv[i]);
    struct mp_strv inherited = MP_STRV_INIT; /* what qualify's candidates inherit too */
    if (!container) {
        for (char **e = environ; e && *e; e++)
            if (mp_inherit_is_tracked(*e) && !env_named(&env, *e) &&
                (!clean || mp_inherit_keep(*e))) {
                mp_strv_push(&env, *e);
                mp_strv_push(&inherited, *e);
            }
    }
    const char *use_ver = ver ? ver : iv.version[0] ? iv.version : NULL;
    struct mp_explain ex;
    int rc = MP_EXIT_OK;
    char why[512];
    if (ver && mp_kn_version_is_ngc_tag(k, ver, why, sizeof(why))) {
        mp_error("explain: --engine-version %s", why);
        rc = MP_EXIT_USAGE;
        goto out;
    }
    if (mp_kn_explain(k, use_ver, env.v, env.n, flags.v, flags.n, &ex) != 0) {
        mp_error("explain: '%s' is not a version (expected e.g. 0.17.0)", use_ver);
        rc = MP_EXIT_USAGE;
        goto out;
    }
    struct buf b = BUF_INIT;
    if (json) {
        mp_kn_explain_to_json(&ex, &b);
    } else {
        explain_text(&ex, ver, image, &iv, &b);
        say_inherited(&inherited, clean, &b);
    }
    if (json)
        fwrite(b.data, 1, b.len, stdout);
    else /* knobs and image names as given: shown, not sent, to the terminal */
        mp_term_write(stdout, b.data, b.len);
    buf_release(&b);
    rc = ex.will_not_start ? MP_EXIT_NONE : MP_EXIT_OK;
    mp_kn_explain_release(&ex);
    if (fflush(stdout) != 0)
        rc = MP_EXIT_INTERNAL;
out:
    mp_strv_release(&inherited);
    mp_strv_release(&env);
    mp_strv_release(&flags);
    free(image);
    mp_knowledge_free(own);
    return rc;
}
