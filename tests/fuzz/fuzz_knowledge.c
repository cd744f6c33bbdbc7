/* fuzz_knowledge.c - the knowledge-file parser on arbitrary bytes; a file
 * that loads must also drive a scanner and an explain call. */
#include "compat.h"

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
    mp_knowledge_free(k);
    return 0;
}
