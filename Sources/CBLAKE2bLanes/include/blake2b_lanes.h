#ifndef LANCHAT_BLAKE2B_LANES_H
#define LANCHAT_BLAKE2B_LANES_H

#include <stddef.h>
#include <stdint.h>

/// Messages hashed at once by `lanchat_blake2b256_lanes`.
#define LANCHAT_BLAKE2B_LANES 8

/// Whether this processor and its operating system run `lanchat_blake2b256_lanes` (AVX-512F).
int lanchat_blake2b_lanes_available(void);

/// Unkeyed BLAKE2b-256 (RFC 7693) of 8 messages of the same length `length`, one per 64-bit
/// lane of AVX-512 registers: `out` (256 bytes) gets the 8 digests of 32 bytes, in the order of
/// `messages`.
/// Call only when `lanchat_blake2b_lanes_available()`.
void lanchat_blake2b256_lanes(const uint8_t *const messages[LANCHAT_BLAKE2B_LANES], size_t length,
                              uint8_t *out);

#endif
