# hetrt-conformance profile of the CPU plugin (plugins/cpu): every check runs
# under its defaults. It loads no device modules (it declares no type_keys),
# so the module checks skip, saying so.
