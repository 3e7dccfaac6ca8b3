/* C functions of every shape call.c can call (tests/lit/ephc/run-call-c.eir):
   narrow signed and unsigned integers and _Bool in both directions, six
   arguments, and small structs returned in two registers with padding. */
#include <stdbool.h>
#include <stdint.h>

/* Each argument arrives with its own value: a sign-extended int8_t, a
   zero-extended uint8_t and uint32_t. */
int64_t cabi_six(int8_t a, uint8_t b, int16_t c, uint32_t d, bool e, int64_t f) {
  return (int64_t)a * 1000000000000 + (int64_t)b * 1000000000 + (int64_t)c * 100000 + (int64_t)(d % 1000) * 10 +
         (e ? 1 : 0) + f;
}

int8_t cabi_neg8(int8_t x) { return (int8_t)-x; }
uint16_t cabi_u16(uint32_t x) { return (uint16_t)(x + 1); }
bool cabi_is_neg(int32_t x) { return x < 0; }

/* Fields at offsets 0, 4, 5, 6 (8 bytes). */
struct cabi_mixed {
  int32_t a;
  int8_t b;
  bool c;
  int16_t d;
};
struct cabi_mixed cabi_mixed(int32_t x) {
  struct cabi_mixed r = {x * 2, (int8_t)-x, x > 10, (int16_t)(x - 1000)};
  return r;
}

/* Fields at offsets 0 and 8 (16 bytes: padding after the byte). */
struct cabi_padded {
  int8_t a;
  int64_t b;
};
struct cabi_padded cabi_padded(int64_t x) {
  struct cabi_padded r = {(int8_t)-1, x * x};
  return r;
}

double cabi_dot3(double a, double b, double c, double x, double y, double z) { return a * x + b * y + c * z; }

static int64_t counter;
void cabi_bump(int64_t by) { counter += by; }
int64_t cabi_counter(void) { return counter; }
