/* The C side of GPU buffers passed through Ephapax `__ffi`.
 *
 * An owned buffer (`GPUBuffer<T>!`) given to `__ffi("f", b)` arrives in C as
 * an int64_t handle, and its ownership moves to the C side: the program no
 * longer frees it, so C code must call eph_buffer_free on it once (or hand
 * it to something that does). These functions are exported by the `ephc`
 * binary (and anything linking the ephc runtime with its symbols exported),
 * so a library given with `ephc run --link LIB.so` resolves them.
 *
 * They may be called only while an extern call of the program is running on
 * the calling thread (from inside the C function `__ffi` called, directly or
 * deeper). A handle that is not a live buffer (freed already, never passed,
 * made up) never reaches a device: the call returns -1 and the extern call
 * fails, when the C function returns, with a located error such as
 *   f.eph:9:5: error: eph_buffer_free of device buffer handle 3, which is not
 *   a live buffer (freed already, or never allocated); ...
 * With buffer checks on (`ephc run --check-buffers`, EPH_CHECK_BUFFERS=1) the
 * error names the buffer's allocation and free sites ("double free: buffer
 * allocated at f.eph:4:14 was freed at f.eph:8:5 and freed again at
 * f.eph:9:5"), and a buffer C code never frees is a leak at exit.
 */
#ifndef EPH_BUFFER_H
#define EPH_BUFFER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Frees the buffer. 0 on success, -1 on an error (reported at the call). */
int64_t eph_buffer_free(int64_t handle);

/* The buffer's length in elements, or -1 on an error (reported at the call). */
int64_t eph_buffer_len(int64_t handle);

#ifdef __cplusplus
}
#endif

#endif /* EPH_BUFFER_H */
