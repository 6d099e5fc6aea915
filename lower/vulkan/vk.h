// vk.h: gelo's thin C layer over the compute subset of Vulkan. libvulkan is
// opened at run time (dlopen + vkGetInstanceProcAddr), so nothing links
// against it; every call that can fail returns its VkResult and leaves the
// name of the failing Vulkan call in gv_ctx.call for the Go side to wrap.
#ifndef GELO_VK_H
#define GELO_VK_H

#include "vk_min.h"

typedef struct gv_ctx gv_ctx;

typedef struct gv_info {
	char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
	uint32_t api_version, driver_version, vendor_id, device_type;
	uint32_t subgroup_size, subgroup_ops, subgroup_stages;
	uint32_t max_storage_range, max_push, max_group_count[3];
	uint32_t queue_family, compute_only, devices;
	uint32_t validation;
} gv_info;

typedef struct gv_buf {
	VkBuffer buf;
	VkDeviceMemory mem;
	void *map; // host mapping, or NULL for device-local-only memory
	VkDeviceSize size;
	uint32_t props; // VkMemoryPropertyFlags of the memory type chosen
} gv_buf;

// Memory wishes for gv_buffer.
enum {
	GV_MEM_DEVICE = 0,   // device-local, host-visible if the device has such a type
	GV_MEM_HOST = 1,     // host-visible and coherent (staging, params)
	GV_MEM_DEVICE_ONLY = 2, // device-local, never mapped (forces staging copies)
};

int gv_open(gv_ctx **out, int device_index, int validation, const char **err);
void gv_close(gv_ctx *c);
const char *gv_call(gv_ctx *c);
void gv_get_info(gv_ctx *c, gv_info *info);
int gv_validation_errors(gv_ctx *c, char *msg, int cap);

VkResult gv_buffer(gv_ctx *c, VkDeviceSize size, int mem, gv_buf *out);
void gv_buffer_free(gv_ctx *c, gv_buf *b);
VkResult gv_upload(gv_ctx *c, gv_buf *dst, VkDeviceSize off, const void *src, VkDeviceSize n);

VkResult gv_layout(gv_ctx *c, uint32_t bindings, uint32_t push_bytes, VkDescriptorSetLayout *dsl, VkPipelineLayout *pl);
VkResult gv_pipeline(gv_ctx *c, VkPipelineLayout pl, const uint32_t *spv, size_t bytes, VkPipeline *out);
VkResult gv_pool(gv_ctx *c, uint32_t sets, uint32_t descriptors, VkDescriptorPool *out);
VkResult gv_set(gv_ctx *c, VkDescriptorPool pool, VkDescriptorSetLayout dsl, const VkBuffer *bufs,
	const VkDeviceSize *offs, const VkDeviceSize *ranges, uint32_t n, VkDescriptorSet *out);
void gv_destroy_pipeline(gv_ctx *c, VkPipeline p);
void gv_destroy_layout(gv_ctx *c, VkDescriptorSetLayout dsl, VkPipelineLayout pl);
void gv_destroy_pool(gv_ctx *c, VkDescriptorPool p);

VkResult gv_cmd_begin(gv_ctx *c, VkCommandBuffer *out);
VkResult gv_cmd_end(gv_ctx *c, VkCommandBuffer cb);
void gv_cmd_free(gv_ctx *c, VkCommandBuffer cb);
void gv_cmd_dispatch(gv_ctx *c, VkCommandBuffer cb, VkPipeline p, VkPipelineLayout pl, VkDescriptorSet set,
	const void *push, uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz);
void gv_cmd_copy(gv_ctx *c, VkCommandBuffer cb, VkBuffer src, VkDeviceSize soff, VkBuffer dst, VkDeviceSize doff, VkDeviceSize n);
void gv_cmd_barrier(gv_ctx *c, VkCommandBuffer cb);
VkResult gv_submit(gv_ctx *c, VkCommandBuffer cb);

#endif
