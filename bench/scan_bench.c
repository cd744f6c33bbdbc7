/* scan_bench.c - throughput of the log scanner on one core.
 * usage: scan_bench FILE [REPEAT]   reads FILE into memory once, then feeds
 * it REPEAT times (default 3) in 1 MiB chunks through a fresh scanner and
 * prints the best GB/s (1 GB = 1e9 bytes) and the lines per second. */
#include "compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "knowledge/knowledge.h"
#include "logs/logscan.h"
#include "xalloc.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: scan_bench FILE [REPEAT]\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = xmalloc((size_t)sz + 1);
    if (fread(data, 1, (size_t)sz, f) != (size_t)sz) {
        fprintf(stderr, "short read\n");
        return 2;
    }
    fclose(f);
    int rep = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 3;
    double best = 1e30;
    long lines = 0;
    const struct mp_knowledge *k = mp_knowledge_builtin();
    for (int r = 0; r < rep; r++) {
        struct mp_logscan *s = mp_logscan_new(k);
        int64_t t0 = mp_now_ns();
        for (long off = 0; off < sz; off += 1 << 20)
            mp_logscan_feed(s, data + off, (size_t)MP_MIN((long)1 << 20, sz - off));
        mp_logscan_finish(s);
        double dt = (double)(mp_now_ns() - t0) / 1e9;
        lines = mp_logscan_result(s)->lines;
        if (dt < best)
            best = dt;
        mp_logscan_free(s);
    }
    printf("bytes %ld lines %ld best %.3f s  %.2f GB/s  %.1f Mlines/s\n", sz, lines, best,
           (double)sz / best / 1e9, (double)lines / best / 1e6);
    free(data);
    return 0;
}
