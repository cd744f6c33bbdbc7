/* replay.c - runs a libFuzzer target over committed corpus files without
 * libFuzzer, so `make test` replays every corpus under ASan+UBSan with gcc.
 * Usage: fuzz_X DIR_OR_FILE... ; exits 0 when every input ran. */
#include "compat.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open '%s'\n", path);
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    uint8_t *data = malloc(cap);
    size_t n;
    while (data && (n = fread(data + len, 1, cap - len, f)) > 0) {
        len += n;
        if (len == cap) {
            cap *= 2;
            data = realloc(data, cap);
        }
    }
    fclose(f);
    if (!data)
        return -1;
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    int count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no corpus at '%s'\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[i]) != 0)
                return 1;
            count++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char p[4096];
            snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
            if (run_file(p) != 0) {
                closedir(d);
                return 1;
            }
            count++;
        }
        if (d)
            closedir(d);
    }
    printf("replayed %d inputs\n", count);
    return count > 0 ? 0 : 1;
}
