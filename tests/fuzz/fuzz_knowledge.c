/* fuzz_knowledge.c - the knowledge-file parser on arbitrary bytes; a file
 * that loads must also drive a scanner, an explain call, the image-version
 * lookup and the known-issue matcher. */
#include "compat.h"

#include "knowledge/issues.h"
#include "knowledge/knowledge.h"
#include "logs/logscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mp_knowledge *k = NULL;
    struct mp_diag d = MP_DIAG_INIT;
    if (mp_knowledge_load_mem((const char *)data, size, &k, &d) != 0)
        return 0;
    struct mp_logscan *s = mp_logscan_new(k);
    static const char line[] = "ERROR 01-01 [x.py:1] Using 'MARLIN' NvFp4 MoE backend out of "
                               "potential backends: ['MARLIN'] CUDA error: misaligned address\n";
    mp_logscan_feed(s, line, sizeof(line) - 1);
    mp_logscan_finish(s);
    mp_logscan_free(s);
    char *env[] = {"VLLM_X=1", "VLLM_TEST_FORCE_FP8_MARLIN=1"};
    char *flags[] = {"--moe-backend", "cutlass"};
    struct mp_explain e;
    if (mp_kn_explain(k, "0.17.0", env, 2, flags, 2, &e) == 0)
        mp_kn_explain_release(&e);
    struct mp_kn_image_version iv;
    mp_kn_image_version(k, "nvcr.io/nvidia/vllm:26.03-py3", &iv);
    mp_kn_image_version(k, "vllm/vllm-openai:v0.17.0-cu130", &iv);
    const char *msgs[] = {"CUDA error: misaligned address"};
    const char *kern[] = {"moe:MARLIN", "flag:flashinfer_b12x"};
    const char *codes[] = {"moe-backend"};
    struct mp_ki_facts f = {.crash_class = "misaligned-address", .messages = msgs, .nmessages = 1,
                            .kernels = kern, .nkernels = 2, .findings = codes, .nfindings = 1,
                            .device = "sm121", .engine_version = "0.23.1"};
    struct mp_ki_hits h;
    mp_ki_match(k, &f, &h);
    struct buf b = BUF_INIT;
    mp_ki_hits_to_json(&h, &b);
    for (size_t i = 0; i < h.n; i++)
        mp_ki_hit_line(&h.v[i], &b);
    buf_release(&b);
    mp_ki_hits_release(&h);
    mp_knowledge_free(k);
    return 0;
}
