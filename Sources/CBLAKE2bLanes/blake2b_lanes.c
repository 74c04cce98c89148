// BLAKE2b-256 of eight messages of equal length at once, one message per 64-bit lane of the
// 512-bit registers.
//
// Why: a node checks every chunk it fetches against its hash, and a file's chunks all have the
// same length. One message at a time, BLAKE2b's rounds depend on each other and leave most of
// the vector units idle (libsodium: about 3 cycles per byte); eight independent messages fill
// every lane, about four times the throughput on the same core.
//
// The algorithm is RFC 7693's, unchanged: each lane holds one message's state word, and each
// 128-byte block of the eight messages is transposed so that register j holds message word j
// of every message. Checked against libsodium on many lengths by the Crypto tests.

#include "blake2b_lanes.h"

#if defined(__x86_64__)

#include <cpuid.h>
#include <immintrin.h>
#include <string.h>

static const uint64_t iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

static const uint8_t sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

int lanchat_blake2b_lanes_available(void) {
    unsigned a, b, c, d;
    // OSXSAVE: the OS manages extended state, so XCR0 can be read.
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return 0;
    if (__get_cpuid_max(0, 0) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    if (!(b & bit_AVX512F)) return 0;
    // The OS saves SSE, AVX and the three AVX-512 states (XCR0 bits 1, 2 and 5-7).
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 0xE6) == 0xE6;
}

#define LANES __attribute__((target("avx512f")))
#define ADD _mm512_add_epi64
#define XOR _mm512_xor_si512
#define ROR _mm512_ror_epi64

#define G(a, b, c, d, x, y)                  \
    do {                                     \
        a = ADD(ADD(a, b), x);               \
        d = ROR(XOR(d, a), 32);              \
        c = ADD(c, d);                       \
        b = ROR(XOR(b, c), 24);              \
        a = ADD(ADD(a, b), y);               \
        d = ROR(XOR(d, a), 16);              \
        c = ADD(c, d);                       \
        b = ROR(XOR(b, c), 63);              \
    } while (0)

/// One compression of all eight states with their message blocks `m`; `counter` is the number
/// of bytes hashed once this block is in (the same for every lane), `last` marks the final block.
LANES static void compress(__m512i h[8], const __m512i m[16], uint64_t counter, int last) {
    __m512i v[16];
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[8 + i] = _mm512_set1_epi64((long long)iv[i]);
    }
    v[12] = XOR(v[12], _mm512_set1_epi64((long long)counter));  // the counter's high word is 0
    if (last) v[14] = XOR(v[14], _mm512_set1_epi64(-1));
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = sigma[r];
        G(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
        G(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
        G(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
        G(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
        G(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
        G(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
        G(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
        G(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) h[i] = XOR(h[i], XOR(v[i], v[8 + i]));
}

/// Transposes an 8x8 matrix of 64-bit words: row i of `rows` is message i's eight words,
/// `out[j]` gets word j of every message.
LANES static void transpose(const __m512i rows[8], __m512i out[8]) {
    __m512i t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm512_unpacklo_epi64(rows[2 * i], rows[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi64(rows[2 * i], rows[2 * i + 1]);
    }
    const __m512i lo = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
    const __m512i hi = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
    for (int k = 0; k < 2; k++) {
        u[4 * k + 0] = _mm512_permutex2var_epi64(t[4 * k + 0], lo, t[4 * k + 2]);
        u[4 * k + 1] = _mm512_permutex2var_epi64(t[4 * k + 1], lo, t[4 * k + 3]);
        u[4 * k + 2] = _mm512_permutex2var_epi64(t[4 * k + 0], hi, t[4 * k + 2]);
        u[4 * k + 3] = _mm512_permutex2var_epi64(t[4 * k + 1], hi, t[4 * k + 3]);
    }
    const __m512i lo2 = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
    const __m512i hi2 = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
    for (int j = 0; j < 4; j++) {
        out[j] = _mm512_permutex2var_epi64(u[j], lo2, u[4 + j]);
        out[4 + j] = _mm512_permutex2var_epi64(u[j], hi2, u[4 + j]);
    }
}

/// The 128-byte block at `offset` of each message, as 16 registers of one word per message.
LANES static void load(__m512i m[16], const uint8_t *const messages[8], size_t offset) {
    __m512i first[8], second[8];
    for (int i = 0; i < 8; i++) {
        first[i] = _mm512_loadu_si512((const void *)(messages[i] + offset));
        second[i] = _mm512_loadu_si512((const void *)(messages[i] + offset + 64));
    }
    transpose(first, m);
    transpose(second, m + 8);
}

LANES void lanchat_blake2b256_lanes(const uint8_t *const messages[8], size_t length, uint8_t *out) {
    __m512i h[8], m[16];
    for (int i = 0; i < 8; i++) h[i] = _mm512_set1_epi64((long long)iv[i]);
    // Parameter block: 32-byte digest, no key, fanout 1, depth 1.
    h[0] = XOR(h[0], _mm512_set1_epi64(0x01010020));
    // Every block but the last is whole; the last (the only one of an empty message) is padded
    // with zeros and compressed with the final flag.
    size_t whole = length == 0 ? 0 : (length - 1) / 128;
    for (size_t b = 0; b < whole; b++) {
        load(m, messages, b * 128);
        compress(h, m, (uint64_t)(b + 1) * 128, 0);
    }
    uint8_t padded[8][128];
    const uint8_t *tails[8];
    size_t rest = length - whole * 128;
    for (int i = 0; i < 8; i++) {
        memset(padded[i], 0, sizeof padded[i]);
        if (rest) memcpy(padded[i], messages[i] + whole * 128, rest);
        tails[i] = padded[i];
    }
    load(m, tails, 0);
    compress(h, m, (uint64_t)length, 1);
    // The digest is the first four state words of each lane, little-endian (as x86 stores them).
    uint64_t words[4][8];
    for (int j = 0; j < 4; j++) _mm512_storeu_si512((void *)words[j], h[j]);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) memcpy(out + 32 * i + 8 * j, &words[j][i], 8);
}

#else

// Other processors: the lanes are never available, and callers hash one message at a time.
int lanchat_blake2b_lanes_available(void) { return 0; }

void lanchat_blake2b256_lanes(const uint8_t *const messages[8], size_t length, uint8_t *out) {
    (void)messages, (void)length, (void)out;
    __builtin_trap();
}

#endif
