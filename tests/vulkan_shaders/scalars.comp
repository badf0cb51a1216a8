// Scalar packing as TVM's codegen does it: an 8-byte slot per scalar, 32-bit
// values in the low half. Built twice: with 5 scalars in push constants, and
// (-DUBO) with 17 in a uniform buffer at the binding after the buffers.
// y[i] = i + sum_k (k + 1) * s_k over the scalars after n.
#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 8) in;
layout(set = 0, binding = 0) writeonly buffer Y { double y[]; };
#ifdef UBO
layout(set = 0, binding = 1, std140) uniform Args {
#else
layout(push_constant) uniform Args {
#endif
  layout(offset = 0) int n;
  layout(offset = 8) float s1;
  layout(offset = 16) int64_t s2;
  layout(offset = 24) double s3;
  layout(offset = 32) uint s4;
#ifdef UBO
  layout(offset = 40) float s5;
  layout(offset = 48) int64_t s6;
  layout(offset = 56) double s7;
  layout(offset = 64) uint s8;
  layout(offset = 72) float s9;
  layout(offset = 80) int64_t s10;
  layout(offset = 88) double s11;
  layout(offset = 96) uint s12;
  layout(offset = 104) float s13;
  layout(offset = 112) int64_t s14;
  layout(offset = 120) double s15;
  layout(offset = 128) uint s16;
#endif
};

void main() {
  const uint i = gl_GlobalInvocationID.x;
  if (i >= uint(n)) return;
  double sum = double(i) + 1.0 * double(s1) + 2.0 * double(s2) + 3.0 * s3 + 4.0 * double(s4);
#ifdef UBO
  sum += 5.0 * double(s5) + 6.0 * double(s6) + 7.0 * s7 + 8.0 * double(s8) + 9.0 * double(s9) + 10.0 * double(s10) +
         11.0 * s11 + 12.0 * double(s12) + 13.0 * double(s13) + 14.0 * double(s14) + 15.0 * s15 + 16.0 * double(s16);
#endif
  y[i] = sum;
}
