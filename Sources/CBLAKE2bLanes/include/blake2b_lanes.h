#ifndef LANCHAT_BLAKE2B_LANES_H
#define LANCHAT_BLAKE2B_LANES_H

#include <stddef.h>
#include <stdint.h>

/// Whether this processor and its operating system can hash `lanes` messages at once: 8 needs
/// AVX-512F, 4 needs AVX2; any other count is not supported.
int lanchat_blake2b_supports(int lanes);

/// Unkeyed BLAKE2b-256 (RFC 7693) of 8 messages of the same length `length`, one per 64-bit
/// lane of AVX-512 registers: `out` (256 bytes) gets the 8 digests of 32 bytes, in the order of
/// `messages`. Call only when `lanchat_blake2b_supports(8)`.
void lanchat_blake2b256_x8(const uint8_t *const messages[8], size_t length, uint8_t *out);

/// The same for 4 messages in AVX2 registers (`out`: 128 bytes). Call only when
/// `lanchat_blake2b_supports(4)`.
void lanchat_blake2b256_x4(const uint8_t *const messages[4], size_t length, uint8_t *out);

#endif
