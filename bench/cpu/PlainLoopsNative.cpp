#include "bench/cpu/PlainLoops.h"
#define SUFFIX Native
#include "bench/cpu/PlainLoops.inc"
