# hetrt-conformance profile of the Vulkan plugin (plugins/vulkan; lavapipe in CI).
# Device memory the host can map is copied by the host; these options make
# copies go through the device's queue, so the copy checks also run that way.
queued-copies direct_mapping=0
queued-copies-undo direct_mapping=1
# HETRT_VULKAN_ATTR_VALIDATION_MESSAGES (plugins/vulkan/vulkan_attributes.h):
# messages of the validation layer (HETRT_VULKAN_VALIDATION); none may appear.
problems-attribute 0x10001
