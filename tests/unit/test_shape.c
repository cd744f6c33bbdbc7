/* Unit tests: command shapes (engine/shape.h), where launch puts env knobs for
 * each shape (engine/launch.h), and the pure parts of knob delivery
 * (engine/delivery.h). */
#include "compat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "engine/delivery.h"
#include "engine/launch.h"
#include "engine/shape.h"
#include "strv.h"
#include "xalloc.h"

struct shape_case {
    const char *cmd;
    enum mp_shape_kind kind;
    const char *run_word;  /* the word at .run, or NULL for host */
    long run;              /* its index */
    const char *image;     /* the word at .image (docker-like), NULL: none/not checked */
    const char *name;      /* --name given */
    const char *runtime;
    bool remote;
    const char *client;    /* words [0, sub) joined by spaces (docker-like) */
};

static const struct shape_case cases[] = {
    {"docker run --gpus all -p 8000:8000 img vllm serve M", MP_SHAPE_DOCKER, "run", 1, "img", NULL,
     "docker", false, "docker"},
    {"docker container run --rm -it img vllm serve", MP_SHAPE_DOCKER, "run", 2, "img", NULL,
     "docker", false, "docker"},
    {"sudo docker run img vllm", MP_SHAPE_DOCKER, "run", 2, "img", NULL, "docker", false,
     "sudo docker"},
    {"sudo -E docker run img vllm", MP_SHAPE_DOCKER, "run", 3, "img", NULL, "docker", false,
     "sudo -E docker"},
    {"sudo -u svc -E docker run img", MP_SHAPE_DOCKER, "run", 5, "img", NULL, "docker", false,
     "sudo -u svc -E docker"},
    {"docker --context X run img", MP_SHAPE_DOCKER, "run", 3, "img", NULL, "docker", true,
     "docker --context X"},
    {"docker -H tcp://gpu1:2375 run img", MP_SHAPE_DOCKER, "run", 3, "img", NULL, "docker", true,
     "docker -H tcp://gpu1:2375"},
    {"docker --host=ssh://gpu1 run img", MP_SHAPE_DOCKER, "run", 2, "img", NULL, "docker", true,
     "docker --host=ssh://gpu1"},
    {"docker --log-level debug run img", MP_SHAPE_DOCKER, "run", 3, "img", NULL, "docker", false,
     "docker --log-level debug"},
    {"podman --runtime runc run --network host img refengine", MP_SHAPE_DOCKER, "run", 3, "img",
     NULL, "podman", false, "podman --runtime runc"},
    {"podman --runtime=crun --root /tmp/r run img", MP_SHAPE_DOCKER, "run", 4, "img", NULL,
     "podman", false, "podman --runtime=crun --root /tmp/r"},
    {"podman container run img", MP_SHAPE_DOCKER, "run", 2, "img", NULL, "podman", false, "podman"},
    {"podman --remote run img", MP_SHAPE_DOCKER, "run", 2, "img", NULL, "podman", true,
     "podman --remote"},
    {"/usr/bin/podman run img", MP_SHAPE_DOCKER, "run", 1, "img", NULL, "podman", false,
     "/usr/bin/podman"},
    {"nerdctl run img", MP_SHAPE_DOCKER, "run", 1, "img", NULL, "nerdctl", false, "nerdctl"},
    {"nerdctl --namespace k8s.io run img", MP_SHAPE_DOCKER, "run", 3, "img", NULL, "nerdctl", false,
     "nerdctl --namespace k8s.io"},
    {"docker compose run svc vllm serve", MP_SHAPE_DOCKER, "run", 2, "svc", NULL, "docker", false,
     "docker"},
    {"docker compose -f c.yml -p proj run --rm svc", MP_SHAPE_DOCKER, "run", 6, "svc", NULL,
     "docker", false, "docker"},
    {"docker-compose -f c.yml run --name=ctr svc", MP_SHAPE_DOCKER, "run", 3, "svc", "ctr",
     "docker", false, NULL},
    {"docker run --rm -it img", MP_SHAPE_DOCKER, "run", 1, "img", NULL, "docker", false, "docker"},
    {"docker run -dit -p8000:8000 img", MP_SHAPE_DOCKER, "run", 1, "img", NULL, "docker", false,
     "docker"},
    {"docker run --name=x --rm img", MP_SHAPE_DOCKER, "run", 1, "img", "x", "docker", false,
     "docker"},
    {"docker run --env-file f.env --name x img", MP_SHAPE_DOCKER, "run", 1, "img", "x", "docker",
     false, "docker"},
    {"docker run -e A=1 -v /a:/b --ipc=host --name x img vllm --name y", MP_SHAPE_DOCKER, "run", 1,
     "img", "x", "docker", false, "docker"},
    {"env -u X docker run img", MP_SHAPE_DOCKER, "run", 4, "img", NULL, "docker", false,
     "env -u X docker"},
    {"apptainer exec --nv img.sif vllm serve M", MP_SHAPE_APPTAINER, "exec", 1, NULL, NULL,
     "apptainer", false, NULL},
    {"apptainer run img.sif", MP_SHAPE_APPTAINER, "run", 1, NULL, NULL, "apptainer", false, NULL},
    {"singularity exec img.sif vllm", MP_SHAPE_APPTAINER, "exec", 1, NULL, NULL, "singularity",
     false, NULL},
    {"singularity --debug exec img.sif vllm", MP_SHAPE_APPTAINER, "exec", 2, NULL, NULL,
     "singularity", false, NULL},
    {"sudo apptainer run img.sif", MP_SHAPE_APPTAINER, "run", 2, NULL, NULL, "apptainer", false,
     NULL},
    {"vllm serve M", MP_SHAPE_HOST, NULL, 0, NULL, NULL, NULL, false, NULL},
    {"env A=B vllm serve M", MP_SHAPE_HOST, NULL, 0, NULL, NULL, NULL, false, NULL},
    {"srun -N1 --gres=gpu:1 vllm serve M", MP_SHAPE_HOST, NULL, 0, NULL, NULL, NULL, false, NULL},
    {"bash -c 'exec vllm serve M'", MP_SHAPE_HOST, NULL, 0, NULL, NULL, NULL, false, NULL},
    {"docker exec ctr vllm serve", MP_SHAPE_HOST, NULL, 0, NULL, NULL, NULL, false, NULL},
    {"docker ps", MP_SHAPE_HOST, NULL, 0, NULL, NULL, NULL, false, NULL},
    {"docker", MP_SHAPE_HOST, NULL, 0, NULL, NULL, NULL, false, NULL},
    {"sudo", MP_SHAPE_HOST, NULL, 0, NULL, NULL, NULL, false, NULL},
};

static void test_shapes(void **state)
{
    (void)state;
    struct mp_shape sh0;
    for (size_t i = 0; i < MP_ARRAY_SIZE(cases); i++) {
        const struct shape_case *t = &cases[i];
        struct mp_strv w = MP_STRV_INIT;
        assert_int_equal(mp_split_words(t->cmd, &w, NULL), 0);
        struct mp_shape sh;
        mp_shape_parse(w.v, w.n, &sh);
        if (sh.kind != t->kind)
            fail_msg("%s: kind %s, want %s", t->cmd, mp_shape_kind_name(sh.kind),
                     mp_shape_kind_name(t->kind));
        if (t->run_word) {
            if ((long)sh.run != t->run || strcmp(w.v[sh.run], t->run_word))
                fail_msg("%s: run word at %zu, want %ld", t->cmd, sh.run, t->run);
            assert_string_equal(sh.runtime, t->runtime);
        } else {
            assert_null(sh.runtime);
        }
        if (t->image && (sh.image >= w.n || strcmp(w.v[sh.image], t->image)))
            fail_msg("%s: image at %zu, want %s", t->cmd, sh.image, t->image);
        if (t->name)
            assert_string_equal(sh.name, t->name);
        else
            assert_null(sh.name);
        if (sh.remote != t->remote)
            fail_msg("%s: remote %d", t->cmd, sh.remote);
        if (t->client) {
            struct buf b = BUF_INIT;
            for (size_t k = 0; k < sh.sub; k++)
                buf_printf(&b, "%s%s", k ? " " : "", w.v[k]);
            if (strcmp(b.data ? b.data : "", t->client))
                fail_msg("%s: client '%s', want '%s'", t->cmd, b.data, t->client);
            buf_release(&b);
        }
        mp_strv_release(&w);
    }
    /* sudo/doas on a host command: where `env` goes */
    char *su[] = {"env", "A=B", "sudo", "-E", "-u", "svc", "vllm", "serve"};
    mp_shape_parse(su, 8, &sh0);
    assert_int_equal(sh0.kind, MP_SHAPE_HOST);
    assert_int_equal(sh0.elevated, 6);
    char *nosu[] = {"srun", "vllm", "serve"};
    mp_shape_parse(nosu, 3, &sh0);
    assert_int_equal(sh0.elevated, 0);
    char *sudock[] = {"sudo", "docker", "run", "img"};
    mp_shape_parse(sudock, 4, &sh0);
    assert_int_equal(sh0.elevated, 0);

    /* a known client with another subcommand is named */
    char *ex[] = {"docker", "exec", "ctr", "vllm"};
    struct mp_shape sh;
    mp_shape_parse(ex, 4, &sh);
    assert_string_equal(sh.other, "exec");
}

static void build(const char *cmd, const char *knobs, struct mp_launch *l)
{
    struct mp_strv w = MP_STRV_INIT;
    assert_int_equal(mp_split_words(cmd, &w, NULL), 0);
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("x", knobs, &c, NULL), 0);
    const char *extra[] = {"CUDA_LAUNCH_BLOCKING=1", NULL};
    mp_launch_build(l, w.v, w.n, &c, 8100, extra, "moeprobe-1-x-1");
    mp_candidate_release(&c);
    mp_strv_release(&w);
}

static char *joined(const struct mp_strv *v)
{
    struct buf b = BUF_INIT;
    for (size_t i = 0; i < v->n; i++)
        buf_printf(&b, "%s%s", i ? " " : "", v->v[i]);
    return buf_detach(&b, NULL);
}

/* Where the env knobs go, for each family of shapes. */
static void test_launch_shapes(void **state)
{
    (void)state;
    struct mp_launch l;
    char *s;
    /* the old bug: a global option with an argument before run */
    build("podman --runtime runc run --network host img /refengine --port {port}",
          "VLLM_X=1 --moe-backend marlin", &l);
    s = joined(&l.argv);
    assert_string_equal(s, "podman --runtime runc run -e VLLM_X=1 -e CUDA_LAUNCH_BLOCKING=1 --name "
                           "moeprobe-1-x-1 --network host img /refengine --port 8100 --moe-backend "
                           "marlin");
    free(s);
    assert_int_equal(l.env.n, 0);
    assert_int_equal(l.kind, MP_SHAPE_DOCKER);
    s = joined(&l.client);
    assert_string_equal(s, "podman --runtime runc");
    free(s);
    assert_string_equal(l.container_name, "moeprobe-1-x-1");
    assert_int_equal(l.env_knobs.n, 2);
    mp_launch_release(&l);

    /* the user's --name is kept and used */
    build("sudo -E docker container run --name=mine img", "VLLM_X=1", &l);
    s = joined(&l.argv);
    assert_string_equal(s, "sudo -E docker container run -e VLLM_X=1 -e CUDA_LAUNCH_BLOCKING=1 "
                           "--name=mine img --port 8100");
    free(s);
    assert_string_equal(l.container_name, "mine");
    s = joined(&l.client);
    assert_string_equal(s, "sudo -E docker");
    free(s);
    mp_launch_release(&l);

    /* standalone compose: inspect/stop/rm through docker */
    build("docker-compose -f c.yml run --rm svc", "VLLM_X=1", &l);
    s = joined(&l.client);
    assert_string_equal(s, "docker");
    free(s);
    assert_string_equal(l.argv.v[3], "run");
    assert_string_equal(l.argv.v[4], "-e");
    mp_launch_release(&l);

    /* apptainer: --env after exec; nothing named, nothing in the client's env */
    build("apptainer exec --nv img.sif vllm serve M", "VLLM_X=1", &l);
    s = joined(&l.argv);
    assert_string_equal(s, "apptainer exec --env VLLM_X=1 --env CUDA_LAUNCH_BLOCKING=1 --nv img.sif "
                           "vllm serve M --port 8100");
    free(s);
    assert_int_equal(l.env.n, 0);
    assert_null(l.container_name);
    assert_int_equal(l.client.n, 0);
    mp_launch_release(&l);

    /* host through sudo: sudo resets the environment, so `env` after its options */
    build("sudo -E -u svc vllm serve M", "VLLM_X=1 HF_TOKEN=hf_abcdefgh123", &l);
    s = joined(&l.argv);
    assert_string_equal(s, "sudo -E -u svc env VLLM_X=1 HF_TOKEN=hf_abcdefgh123 "
                           "CUDA_LAUNCH_BLOCKING=1 vllm serve M --port 8100");
    free(s);
    assert_int_equal(l.env.n, 0);
    assert_int_equal(l.kind, MP_SHAPE_HOST);
    s = mp_launch_display(&l);
    assert_null(strstr(s, "hf_abc"));
    assert_non_null(strstr(s, "HF_TOKEN=***"));
    free(s);
    mp_launch_release(&l);
    /* sudo before a container client: -e as usual, nothing through env */
    build("sudo docker run img", "VLLM_X=1", &l);
    assert_string_equal(l.argv.v[3], "-e");
    assert_int_equal(l.env.n, 0);
    mp_launch_release(&l);

    /* host: the spawned process's environment */
    build("srun -N1 vllm serve M", "VLLM_X=1", &l);
    assert_int_equal(l.env.n, 2);
    assert_string_equal(l.env.v[0], "VLLM_X=1");
    assert_int_equal(l.kind, MP_SHAPE_HOST);
    assert_null(l.container_name);
    mp_launch_release(&l);

    char name[128];
    mp_launch_container_name(name, sizeof(name), 42, "a b/c", 3, true);
    assert_string_equal(name, "moeprobe-42-a_b_c-3-lb");
}

static const char nd_line[] =
    "(APIServer pid=1) INFO 04-19 11:04:53 [utils.py:233] non-default args: {'model_tag': "
    "'RedHatAI/gemma', 'host': '0.0.0.0', 'model': 'RedHatAI/gemma', 'trust_remote_code': True, "
    "'max_model_len': 98304, 'served_model_name': ['gemma-4', 'g4'], 'moe_backend': 'cutlass', "
    "'limit_mm_per_prompt': {'video': 0, 'image': 10}, 'gpu_memory_utilization': 0.75, "
    "'enable_prefix_caching': False, 'api_key': ['sk-abcdefgh12345']}";

static void test_nondefault_find(void **state)
{
    (void)state;
    char v[256];
    assert_int_equal(mp_nondefault_find(nd_line, "moe_backend", v, sizeof(v)), 1);
    assert_string_equal(v, "'cutlass'");
    assert_int_equal(mp_nondefault_find(nd_line, "limit_mm_per_prompt", v, sizeof(v)), 1);
    assert_string_equal(v, "{'video': 0, 'image': 10}");
    assert_int_equal(mp_nondefault_find(nd_line, "gpu_memory_utilization", v, sizeof(v)), 1);
    assert_string_equal(v, "0.75");
    assert_int_equal(mp_nondefault_find(nd_line, "video", v, sizeof(v)), 0); /* nested: no */
    assert_int_equal(mp_nondefault_find(nd_line, "enforce_eager", v, sizeof(v)), 0);
    assert_int_equal(mp_nondefault_find("INFO ready", "x", v, sizeof(v)), -1);
}

static enum mp_dlv_status judge(const char *flag_words, const char *line, char **ev)
{
    struct mp_candidate c;
    assert_int_equal(mp_candidate_from_knobs("x", flag_words, &c, NULL), 0);
    struct mp_knobs ks = MP_KNOBS_INIT;
    mp_candidate_knobs(&c, &ks);
    assert_int_equal(ks.n, 1);
    enum mp_dlv_status st = mp_delivery_judge_flag(&ks.k[0], line, 7, ev);
    mp_knobs_release(&ks);
    mp_candidate_release(&c);
    return st;
}

static void test_judge_flag(void **state)
{
    (void)state;
    char *ev = NULL;
    assert_int_equal(judge("--moe-backend cutlass", nd_line, &ev), MP_DLV_VERIFIED);
    assert_non_null(strstr(ev, "server.log:7"));
    free(ev);
    assert_int_equal(judge("--moe-backend=CUTLASS", nd_line, &ev), MP_DLV_VERIFIED);
    free(ev);
    assert_int_equal(judge("--moe-backend marlin", nd_line, &ev), MP_DLV_MISSING);
    assert_non_null(strstr(ev, "'cutlass'"));
    free(ev);
    assert_int_equal(judge("--trust-remote-code", nd_line, &ev), MP_DLV_VERIFIED);
    free(ev);
    assert_int_equal(judge("--no-enable-prefix-caching", nd_line, &ev), MP_DLV_VERIFIED);
    free(ev);
    assert_int_equal(judge("--max-model-len 96K", nd_line, &ev), MP_DLV_VERIFIED);
    free(ev);
    assert_int_equal(judge("--gpu-memory-utilization 0.750", nd_line, &ev), MP_DLV_VERIFIED);
    free(ev);
    assert_int_equal(judge("--served-model-name g4", nd_line, &ev), MP_DLV_VERIFIED);
    free(ev);
    /* absent: maybe the default value; never "missing" */
    assert_int_equal(judge("--enforce-eager", nd_line, &ev), MP_DLV_UNVERIFIED);
    assert_non_null(strstr(ev, "not among"));
    free(ev);
    /* a dict value is not compared word by word */
    assert_int_equal(judge("--limit-mm-per-prompt {\"video\":1}", nd_line, &ev), MP_DLV_UNVERIFIED);
    free(ev);
    assert_int_equal(judge("--moe-backend cutlass", NULL, &ev), MP_DLV_UNVERIFIED);
    assert_non_null(strstr(ev, "no 'non-default args'"));
    free(ev);
    /* a secret flag's value never appears in the evidence */
    assert_int_equal(judge("--api-key sk-zzzzzzzz999", nd_line, &ev), MP_DLV_UNVERIFIED);
    assert_null(strstr(ev, "sk-"));
    free(ev);
}

static void test_judge_config_env(void **state)
{
    (void)state;
    char *ev = NULL;
    const char *env = "[\"PATH=/usr/bin\",\"VLLM_X=marlin\",\"HF_TOKEN=hf_abcdefgh123\"]";
    assert_int_equal(mp_delivery_judge_config_env("VLLM_X=marlin", env, "podman inspect c", &ev),
                     MP_DLV_VERIFIED);
    assert_non_null(strstr(ev, "podman inspect c"));
    free(ev);
    assert_int_equal(mp_delivery_judge_config_env("VLLM_X=cutlass", env, "w", &ev), MP_DLV_MISSING);
    assert_non_null(strstr(ev, "VLLM_X=marlin, not VLLM_X=cutlass"));
    free(ev);
    assert_int_equal(mp_delivery_judge_config_env("VLLM_Y=1", env, "w", &ev), MP_DLV_MISSING);
    assert_non_null(strstr(ev, "has no VLLM_Y"));
    free(ev);
    /* a secret's value is masked wherever it is named */
    assert_int_equal(mp_delivery_judge_config_env("HF_TOKEN=hf_other0000000", env, "w", &ev),
                     MP_DLV_MISSING);
    assert_null(strstr(ev, "hf_"));
    free(ev);
    assert_int_equal(mp_delivery_judge_config_env("VLLM_X=marlin", "Error: no such", "w", &ev),
                     MP_DLV_UNVERIFIED);
    free(ev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),          cmocka_unit_test(test_launch_shapes),
        cmocka_unit_test(test_nondefault_find), cmocka_unit_test(test_judge_flag),
        cmocka_unit_test(test_judge_config_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
