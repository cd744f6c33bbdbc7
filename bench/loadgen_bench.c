/* loadgen_bench.c - drive the loadgen against a server and report the client's own cost.
 *
 *   loadgen_bench --url http://127.0.0.1:8000 [--mode stream|complete|get] [--path /health]
 *                 [--conc N] [--duration S] [--max-tokens N] [--chat] [--model M]
 *
 * Closed loop: keeps --conc requests in flight for --duration seconds (a finished request is
 * replaced at once), then cancels what is left. stream = POST streaming generations; complete = POST
 * non-streaming generations ("stream": false); get = GET PATH (complete and get: the wrk
 * comparisons). Prints one line of key=value pairs:
 *   requests (finished OK inside the window), rps, events (token events), eps, tokens, tok_s,
 *   errors, max_inflight, avg_inflight (sampled once per loop turn), cpu_s (user+sys of this process), cpu_pct
 *   (of one core), p50/p99 TTFT and ITL, and the median per-stream decode rate (stream mode;
 *   compare it with the engine's configured per-stream rate to see whether the client keeps up). */
#include "compat.h"

#include <curl/curl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "clock.h"
#include "hist.h"
#include "http/loadgen.h"

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

static void usage(void)
{
    fputs("usage: loadgen_bench --url URL [--mode stream|complete|get] [--path P] [--conc N] [--duration S]\n"
          "                     [--max-tokens N] [--chat] [--model M]\n", stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *url = NULL, *mode = "stream", *path = "/health", *model = NULL;
    long conc = 100, max_tokens = 64;
    double duration = 5;
    bool chat = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--chat") == 0) {
            chat = true;
            continue;
        }
        if (!v)
            usage();
        if (strcmp(a, "--url") == 0) url = v;
        else if (strcmp(a, "--mode") == 0) mode = v;
        else if (strcmp(a, "--path") == 0) path = v;
        else if (strcmp(a, "--model") == 0) model = v;
        else if (strcmp(a, "--conc") == 0) conc = strtol(v, NULL, 10);
        else if (strcmp(a, "--max-tokens") == 0) max_tokens = strtol(v, NULL, 10);
        else if (strcmp(a, "--duration") == 0) duration = strtod(v, NULL);
        else usage();
        i++;
    }
    bool get = strcmp(mode, "get") == 0, complete = strcmp(mode, "complete") == 0;
    if (!url || conc < 1 || duration <= 0 || (!get && !complete && strcmp(mode, "stream") != 0))
        usage();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct mp_lg_config cfg = { .base_url = url, .model = model, .chat = chat, .max_tokens = (int)max_tokens,
                                .ignore_eos = true, .text_keep = 0 };
    struct mp_lg *lg = mp_lg_new(&cfg);
    struct mp_hist ttft = MP_HIST_INIT, itl = MP_HIST_INIT, rate = MP_HIST_INIT;
    unsigned long long ok = 0, errors = 0, events = 0, tokens = 0;
    size_t max_inflight = 0;
    double inflight_sum = 0, turns = 0;
    char first_error[640] = "";
    double c0 = cpu_s();
    int64_t t0 = mp_now_ns(), deadline = t0 + (int64_t)(duration * 1e9);
    int prompt_no = 0;
    for (;;) {
        while (mp_lg_inflight(lg) < (size_t)conc) {
            char prompt[64];
            snprintf(prompt, sizeof(prompt), "Benchmark prompt number %d.", prompt_no++);
            long id = get ? mp_lg_get(lg, path, 0, 0)
                          : complete ? mp_lg_complete(lg, prompt, 0) : mp_lg_start(lg, prompt, 0);
            if (id < 0) {
                fputs("loadgen_bench: cannot start a request\n", stderr);
                return 1;
            }
        }
        size_t inflight = mp_lg_inflight(lg);
        if (inflight > max_inflight)
            max_inflight = inflight;
        inflight_sum += (double)inflight;
        turns++;
        int64_t now = mp_now_ns();
        if (now >= deadline)
            break;
        int wait_ms = (int)((deadline - now) / 1000000) + 1;
        if (mp_lg_poll(lg, wait_ms > 100 ? 100 : wait_ms) < 0)
            return 1;
        struct mp_lg_result r;
        while (mp_lg_next_result(lg, &r) == 1) {
            if (r.outcome == MP_LG_OK) {
                ok++;
                events += (unsigned long long)r.chunks;
                tokens += (unsigned long long)r.output_tokens;
                if (r.kind == MP_LG_GEN && r.t_first_token_ns)
                    mp_hist_add(&ttft, (double)(r.t_first_token_ns - r.t_start_ns) / 1e6);
                if (r.output_tokens > 1 && r.t_last_token_ns > r.t_first_token_ns)
                    mp_hist_add(&rate, (double)(r.output_tokens - 1) * 1e9 /
                                           (double)(r.t_last_token_ns - r.t_first_token_ns));
                mp_hist_merge(&itl, &r.itl_ms);
            } else {
                if (!errors)
                    snprintf(first_error, sizeof(first_error), "%.40s: %.511s", mp_lg_outcome_name(r.outcome),
                             r.error);
                errors++;
            }
            mp_lg_result_release(&r);
        }
    }
    double wall = (double)(mp_now_ns() - t0) / 1e9;
    double cpu = cpu_s() - c0;
    mp_lg_cancel_all(lg);
    struct mp_lg_result r;
    while (mp_lg_next_result(lg, &r) == 1)
        mp_lg_result_release(&r);
    printf("mode=%s conc=%ld duration_s=%.2f requests=%llu rps=%.1f events=%llu eps=%.1f tokens=%llu "
           "tok_s=%.1f errors=%llu max_inflight=%zu avg_inflight=%.0f cpu_s=%.2f cpu_pct=%.1f",
           mode, conc, wall, ok, (double)ok / wall, events, (double)events / wall, tokens,
           (double)tokens / wall, errors, max_inflight, turns > 0 ? inflight_sum / turns : 0, cpu,
           100.0 * cpu / wall);
    if (!get && !complete)
        printf(" ttft_p50_ms=%.2f ttft_p99_ms=%.2f itl_p50_ms=%.3f itl_p99_ms=%.3f stream_tok_s_p50=%.2f",
               mp_hist_percentile(&ttft, 50), mp_hist_percentile(&ttft, 99), mp_hist_percentile(&itl, 50),
               mp_hist_percentile(&itl, 99), mp_hist_percentile(&rate, 50));
    printf("\n");
    if (errors)
        fprintf(stderr, "first error: %s\n", first_error);
    mp_hist_free(&ttft);
    mp_hist_free(&itl);
    mp_hist_free(&rate);
    mp_lg_free(lg);
    curl_global_cleanup();
    return 0;
}
