// The conformance kit's sample kernel (module.sample): c = a + b over n
// floats, laid out as TVM's Vulkan codegen does (buffers at bindings 0..2 of
// set 0, the scalar n in an 8-byte push-constant slot). Compiled into
// vulkan_sample_spirv.h by (then its first lines replaced by the header's comment):
//   glslangValidator -V --target-env vulkan1.1 -e hetrt_sample_add --source-entrypoint main --vn kSampleAddSpirv -o ../vulkan_sample_spirv.h sample_add.comp
#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Args { layout(offset = 0) int n; };

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i < uint(n)) c[i] = a[i] + b[i];
}
