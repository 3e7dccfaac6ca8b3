// Lowering of the Ephapax GPU extension (kernels, launches, GPU buffers).
