/* An independent C implementation of docs/rng.md, used by tests/test_rng.py to show the
 * generator is language-neutral. Usage: rng_reference SEED LABEL COUNT  -> COUNT outputs;
 *        rng_reference SEED LABEL shuffle N -> Fisher-Yates of 1..N (top first). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static uint64_t fnv1a64(const char *s) {
    uint64_t h = 0xCBF29CE484222325ULL;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 0x100000001B3ULL; }
    return h;
}

static uint64_t state;
static uint64_t next_u64(void) { state += 0x9E3779B97F4A7C15ULL; return mix64(state); }

static uint64_t below(uint64_t n) {
    /* limit = 2^64 - (2^64 mod n); (2^64 mod n) == (-n) mod n in unsigned arithmetic */
    uint64_t rem = (0 - n) % n;
    for (;;) {
        uint64_t x = next_u64();
        if (rem == 0 || x < 0 - rem) return x % n;
    }
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    uint64_t seed = strtoull(argv[1], NULL, 10);
    state = mix64(seed ^ fnv1a64(argv[2]));
    if (strcmp(argv[3], "shuffle") == 0) {
        int n = atoi(argv[4]);
        int *a = malloc(sizeof(int) * n);
        for (int i = 0; i < n; i++) a[i] = i + 1;
        for (int i = n - 1; i > 0; i--) { int j = (int)below((uint64_t)i + 1); int t = a[i]; a[i] = a[j]; a[j] = t; }
        for (int i = 0; i < n; i++) printf("%d%c", a[i], i + 1 < n ? ' ' : '\n');
        return 0;
    }
    int count = atoi(argv[3]);
    for (int i = 0; i < count; i++) printf("%llu\n", (unsigned long long)next_u64());
    return 0;
}
