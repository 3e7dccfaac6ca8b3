/* A C library that takes GPU buffers from Ephapax programs through __ffi and
 * uses the runtime's C API on them (runtime/eph_buffer.h), correctly and not:
 * tests/unit/FfiBuffersTest.cpp and tests/lit/ephapax/ffi-buffers.test. */
#include "runtime/eph_buffer.h"

static int64_t kept = -1; /* a handle kept for a later call */

/* Frees the buffer; its length, or -1. */
int64_t client_free(int64_t h) {
  int64_t n = eph_buffer_len(h);
  return eph_buffer_free(h) == 0 ? n : -1;
}

/* Keeps the handle (ownership stays with C); its length. */
int64_t client_keep(int64_t h) {
  kept = h;
  return eph_buffer_len(h);
}

int64_t client_free_kept(void) { return eph_buffer_free(kept); }

int64_t client_len_kept(void) { return eph_buffer_len(kept); }

/* A double free. */
int64_t client_free_twice(int64_t h) {
  eph_buffer_free(h);
  return eph_buffer_free(h);
}

/* Frees a handle no buffer has: h plus a large offset. */
int64_t client_free_made_up(int64_t h) { return eph_buffer_free(h + 1000000); }
