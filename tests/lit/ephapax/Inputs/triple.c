long triple(long x) { return 3 * x; }
