/* Device attributes private to the Vulkan plugin (hetrt_device_attribute_args_t
 * values above 0x10000, the range the ABI leaves to plugins). */
#ifndef HETRT_VULKAN_ATTRIBUTES_H_
#define HETRT_VULKAN_ATTRIBUTES_H_

/* Validation-layer messages (warnings and errors) reported to this instance so
 * far; 0 unless HETRT_VULKAN_VALIDATION=1 installed the debug messenger. */
#define HETRT_VULKAN_ATTR_VALIDATION_MESSAGES 0x10001
/* 1 when HETRT_VULKAN_VALIDATION=1 enabled VK_LAYER_KHRONOS_validation. */
#define HETRT_VULKAN_ATTR_VALIDATION_ENABLED 0x10002
/* Command-buffer submissions to the device's queues so far (all streams). */
#define HETRT_VULKAN_ATTR_SUBMISSIONS 0x10003

#endif
