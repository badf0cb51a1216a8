# hetrt-conformance profile of the OpenCL plugin (plugins/opencl; PoCL in CI):
# every check runs under its defaults. Its pinned memory is aligned where the
# driver maps it, which the plugin reports (HETRT_DEVICE_ATTR_MAX_ALIGNMENT: the
# driver's CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes).
