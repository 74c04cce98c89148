// BLAKE2b-256 of several messages of equal length at once, one message per 64-bit lane of the
// vector registers: eight in AVX-512, four in AVX2.
//
// Why: a node checks every chunk it fetches against its hash, and a file's chunks all have the
// same length. One message at a time, BLAKE2b's rounds depend on each other and leave most of
// the vector units idle (libsodium: about 3 cycles per byte); independent messages fill every
// lane, about four times the throughput on the same core with eight, twice with four.
//
// The algorithm is RFC 7693's, unchanged: each lane holds one message's state word, and each
// 128-byte block of the messages is transposed so that register j holds message word j of
// every message. Checked against libsodium on many lengths by the Crypto tests.

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

int lanchat_blake2b_supports(int lanes) {
    unsigned a, b, c, d;
    // OSXSAVE: the OS manages extended state, so XCR0 can be read.
    if (lanes != 8 && lanes != 4) return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return 0;
    if (__get_cpuid_max(0, 0) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    // The OS saves the SSE and AVX states (XCR0 bits 1 and 2), and for AVX-512 its three
    // states too (bits 5-7).
    if (lanes == 8) return (b & bit_AVX512F) && (lo & 0xE6) == 0xE6;
    return (b & bit_AVX2) && (lo & 0x6) == 0x6;
}

/// The last block of each of `count` messages, zero-padded (the only block of an empty
/// message): `whole` blocks come before it.
static void last_blocks(const uint8_t *const messages[], int count, size_t length, size_t whole,
                        uint8_t padded[][128], const uint8_t *tails[]) {
    size_t rest = length - whole * 128;
    for (int i = 0; i < count; i++) {
        memset(padded[i], 0, 128);
        if (rest) memcpy(padded[i], messages[i] + whole * 128, rest);
        tails[i] = padded[i];
    }
}

/// Writes digest i (state words 0-3 of lane i, little-endian as x86 stores them) from `words`,
/// four rows of `count` lanes.
static void write_digests(const uint64_t *words, int count, uint8_t *out) {
    for (int i = 0; i < count; i++)
        for (int j = 0; j < 4; j++) memcpy(out + 32 * i + 8 * j, &words[j * count + i], 8);
}

/// Blocks before the last: every block but the last is whole.
static size_t whole_blocks(size_t length) { return length == 0 ? 0 : (length - 1) / 128; }

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

// Eight lanes: AVX-512F.

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

LANES void lanchat_blake2b256_x8(const uint8_t *const messages[8], size_t length, uint8_t *out) {
    __m512i h[8], m[16];
    for (int i = 0; i < 8; i++) h[i] = _mm512_set1_epi64((long long)iv[i]);
    // Parameter block: 32-byte digest, no key, fanout 1, depth 1.
    h[0] = XOR(h[0], _mm512_set1_epi64(0x01010020));
    size_t whole = whole_blocks(length);
    for (size_t b = 0; b < whole; b++) {
        load(m, messages, b * 128);
        compress(h, m, (uint64_t)(b + 1) * 128, 0);
    }
    uint8_t padded[8][128];
    const uint8_t *tails[8];
    last_blocks(messages, 8, length, whole, padded, tails);
    load(m, tails, 0);
    compress(h, m, (uint64_t)length, 1);
    uint64_t words[4][8];
    for (int j = 0; j < 4; j++) _mm512_storeu_si512((void *)words[j], h[j]);
    write_digests(&words[0][0], 8, out);
}

// Four lanes: AVX2, which rotates 64-bit words by byte shuffles and shifts.

#define LANES4 __attribute__((target("avx2")))
#define ADD4 _mm256_add_epi64
#define XOR4 _mm256_xor_si256

LANES4 static inline __m256i ror32(__m256i x) { return _mm256_shuffle_epi32(x, _MM_SHUFFLE(2, 3, 0, 1)); }

LANES4 static inline __m256i ror24(__m256i x) {
    const __m256i bytes = _mm256_setr_epi8(3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10,
                                           3, 4, 5, 6, 7, 0, 1, 2, 11, 12, 13, 14, 15, 8, 9, 10);
    return _mm256_shuffle_epi8(x, bytes);
}

LANES4 static inline __m256i ror16(__m256i x) {
    const __m256i bytes = _mm256_setr_epi8(2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9,
                                           2, 3, 4, 5, 6, 7, 0, 1, 10, 11, 12, 13, 14, 15, 8, 9);
    return _mm256_shuffle_epi8(x, bytes);
}

LANES4 static inline __m256i ror63(__m256i x) { return _mm256_or_si256(ADD4(x, x), _mm256_srli_epi64(x, 63)); }

#define G4(a, b, c, d, x, y)                 \
    do {                                     \
        a = ADD4(ADD4(a, b), x);             \
        d = ror32(XOR4(d, a));               \
        c = ADD4(c, d);                      \
        b = ror24(XOR4(b, c));               \
        a = ADD4(ADD4(a, b), y);             \
        d = ror16(XOR4(d, a));               \
        c = ADD4(c, d);                      \
        b = ror63(XOR4(b, c));               \
    } while (0)

LANES4 static void compress4(__m256i h[8], const __m256i m[16], uint64_t counter, int last) {
    __m256i v[16];
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[8 + i] = _mm256_set1_epi64x((long long)iv[i]);
    }
    v[12] = XOR4(v[12], _mm256_set1_epi64x((long long)counter));
    if (last) v[14] = XOR4(v[14], _mm256_set1_epi64x(-1));
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = sigma[r];
        G4(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
        G4(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
        G4(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
        G4(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
        G4(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
        G4(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
        G4(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
        G4(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) h[i] = XOR4(h[i], XOR4(v[i], v[8 + i]));
}

/// The 128-byte block at `offset` of each of the four messages, as 16 registers of one word per
/// message: four 4x4 transposes.
LANES4 static void load4(__m256i m[16], const uint8_t *const messages[4], size_t offset) {
    for (int q = 0; q < 4; q++) {
        __m256i r[4];
        for (int i = 0; i < 4; i++) r[i] = _mm256_loadu_si256((const void *)(messages[i] + offset + 32 * q));
        __m256i t0 = _mm256_unpacklo_epi64(r[0], r[1]), t1 = _mm256_unpackhi_epi64(r[0], r[1]);
        __m256i t2 = _mm256_unpacklo_epi64(r[2], r[3]), t3 = _mm256_unpackhi_epi64(r[2], r[3]);
        m[4 * q + 0] = _mm256_permute2x128_si256(t0, t2, 0x20);
        m[4 * q + 1] = _mm256_permute2x128_si256(t1, t3, 0x20);
        m[4 * q + 2] = _mm256_permute2x128_si256(t0, t2, 0x31);
        m[4 * q + 3] = _mm256_permute2x128_si256(t1, t3, 0x31);
    }
}

LANES4 void lanchat_blake2b256_x4(const uint8_t *const messages[4], size_t length, uint8_t *out) {
    __m256i h[8], m[16];
    for (int i = 0; i < 8; i++) h[i] = _mm256_set1_epi64x((long long)iv[i]);
    h[0] = XOR4(h[0], _mm256_set1_epi64x(0x01010020));
    size_t whole = whole_blocks(length);
    for (size_t b = 0; b < whole; b++) {
        load4(m, messages, b * 128);
        compress4(h, m, (uint64_t)(b + 1) * 128, 0);
    }
    uint8_t padded[4][128];
    const uint8_t *tails[4];
    last_blocks(messages, 4, length, whole, padded, tails);
    load4(m, tails, 0);
    compress4(h, m, (uint64_t)length, 1);
    uint64_t words[4][4];
    for (int j = 0; j < 4; j++) _mm256_storeu_si256((void *)words[j], h[j]);
    write_digests(&words[0][0], 4, out);
}

#else

// Other processors: no lanes, and callers hash one message at a time.
int lanchat_blake2b_supports(int lanes) { (void)lanes; return 0; }

void lanchat_blake2b256_x8(const uint8_t *const messages[8], size_t length, uint8_t *out) {
    (void)messages, (void)length, (void)out;
    __builtin_trap();
}

void lanchat_blake2b256_x4(const uint8_t *const messages[4], size_t length, uint8_t *out) {
    (void)messages, (void)length, (void)out;
    __builtin_trap();
}

#endif
