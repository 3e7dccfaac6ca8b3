#include "bench/cpu/PlainLoops.h"
#define SUFFIX Plain
#include "bench/cpu/PlainLoops.inc"
