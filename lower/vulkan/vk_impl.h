// vk_impl.h: the implementation of vk.h, included once by vk.go's cgo
// preamble (a header, so a build without cgo never sees C sources).
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk.h"

// Structure types, flags and results (values from the Vulkan registry).
#define S_APPLICATION_INFO 0
#define S_INSTANCE_CREATE_INFO 1
#define S_DEVICE_QUEUE_CREATE_INFO 2
#define S_DEVICE_CREATE_INFO 3
#define S_SUBMIT_INFO 4
#define S_MEMORY_ALLOCATE_INFO 5
#define S_FENCE_CREATE_INFO 8
#define S_BUFFER_CREATE_INFO 12
#define S_SHADER_MODULE_CREATE_INFO 16
#define S_PIPELINE_SHADER_STAGE_CREATE_INFO 18
#define S_COMPUTE_PIPELINE_CREATE_INFO 29
#define S_PIPELINE_LAYOUT_CREATE_INFO 30
#define S_DESCRIPTOR_SET_LAYOUT_CREATE_INFO 32
#define S_DESCRIPTOR_POOL_CREATE_INFO 33
#define S_DESCRIPTOR_SET_ALLOCATE_INFO 34
#define S_WRITE_DESCRIPTOR_SET 35
#define S_COMMAND_POOL_CREATE_INFO 39
#define S_COMMAND_BUFFER_ALLOCATE_INFO 40
#define S_COMMAND_BUFFER_BEGIN_INFO 42
#define S_MEMORY_BARRIER 46
#define S_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES 1000094000
#define S_PHYSICAL_DEVICE_PROPERTIES_2 1000059001
#define S_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT 1000128004

#define QUEUE_GRAPHICS 0x1
#define QUEUE_COMPUTE 0x2
#define MEM_DEVICE_LOCAL 0x1
#define MEM_HOST_VISIBLE 0x2
#define MEM_HOST_COHERENT 0x4
#define USAGE_TRANSFER_SRC 0x1
#define USAGE_TRANSFER_DST 0x2
#define USAGE_STORAGE 0x20
#define DESC_STORAGE_BUFFER 7
#define STAGE_COMPUTE 0x20
#define PIPE_STAGE_TRANSFER 0x1000
#define PIPE_STAGE_COMPUTE 0x800
#define PIPE_STAGE_HOST 0x4000
#define ACCESS_SHADER_READ 0x20
#define ACCESS_SHADER_WRITE 0x40
#define ACCESS_TRANSFER_READ 0x800
#define ACCESS_TRANSFER_WRITE 0x1000
#define ACCESS_HOST_READ 0x2000
#define ACCESS_HOST_WRITE 0x4000
#define BIND_POINT_COMPUTE 1
#define CMD_POOL_RESET_COMMAND_BUFFER 0x2
#define SEVERITY_WARNING 0x100
#define SEVERITY_ERROR 0x1000
#define MSG_GENERAL 0x1
#define MSG_VALIDATION 0x2
#define MSG_PERFORMANCE 0x4

#define VK_SUCCESS 0
#define VK_ERROR_INITIALIZATION_FAILED (-3)
#define VK_ERROR_OUT_OF_DEVICE_MEMORY (-2)
#define VK_ERROR_FEATURE_NOT_PRESENT (-8)
#define VK_ERROR_INCOMPATIBLE_DRIVER (-9)

typedef VkResult (*F_CreateInstance)(const VkInstanceCreateInfo *, const void *, VkInstance *);
typedef VkResult (*F_EnumerateInstanceLayerProperties)(uint32_t *, VkLayerProperties *);
typedef void (*F_DestroyInstance)(VkInstance, const void *);
typedef VkResult (*F_EnumeratePhysicalDevices)(VkInstance, uint32_t *, VkPhysicalDevice *);
typedef void (*F_GetPhysicalDeviceProperties2)(VkPhysicalDevice, VkPhysicalDeviceProperties2 *);
typedef void (*F_GetPhysicalDeviceQueueFamilyProperties)(VkPhysicalDevice, uint32_t *, VkQueueFamilyProperties *);
typedef void (*F_GetPhysicalDeviceMemoryProperties)(VkPhysicalDevice, VkPhysicalDeviceMemoryProperties *);
typedef VkResult (*F_CreateDevice)(VkPhysicalDevice, const VkDeviceCreateInfo *, const void *, VkDevice *);
typedef PFN_vkVoidFunction (*F_GetDeviceProcAddr)(VkDevice, const char *);
typedef VkResult (*F_CreateDebugUtilsMessengerEXT)(VkInstance, const VkDebugUtilsMessengerCreateInfoEXT *, const void *, VkDebugUtilsMessengerEXT *);
typedef void (*F_DestroyDebugUtilsMessengerEXT)(VkInstance, VkDebugUtilsMessengerEXT, const void *);
typedef void (*F_DestroyDevice)(VkDevice, const void *);
typedef void (*F_GetDeviceQueue)(VkDevice, uint32_t, uint32_t, VkQueue *);
typedef VkResult (*F_CreateBuffer)(VkDevice, const VkBufferCreateInfo *, const void *, VkBuffer *);
typedef void (*F_DestroyBuffer)(VkDevice, VkBuffer, const void *);
typedef void (*F_GetBufferMemoryRequirements)(VkDevice, VkBuffer, VkMemoryRequirements *);
typedef VkResult (*F_AllocateMemory)(VkDevice, const VkMemoryAllocateInfo *, const void *, VkDeviceMemory *);
typedef void (*F_FreeMemory)(VkDevice, VkDeviceMemory, const void *);
typedef VkResult (*F_BindBufferMemory)(VkDevice, VkBuffer, VkDeviceMemory, VkDeviceSize);
typedef VkResult (*F_MapMemory)(VkDevice, VkDeviceMemory, VkDeviceSize, VkDeviceSize, VkFlags, void **);
typedef VkResult (*F_CreateShaderModule)(VkDevice, const VkShaderModuleCreateInfo *, const void *, VkShaderModule *);
typedef void (*F_DestroyShaderModule)(VkDevice, VkShaderModule, const void *);
typedef VkResult (*F_CreateDescriptorSetLayout)(VkDevice, const VkDescriptorSetLayoutCreateInfo *, const void *, VkDescriptorSetLayout *);
typedef void (*F_DestroyDescriptorSetLayout)(VkDevice, VkDescriptorSetLayout, const void *);
typedef VkResult (*F_CreatePipelineLayout)(VkDevice, const VkPipelineLayoutCreateInfo *, const void *, VkPipelineLayout *);
typedef void (*F_DestroyPipelineLayout)(VkDevice, VkPipelineLayout, const void *);
typedef VkResult (*F_CreateComputePipelines)(VkDevice, VkPipelineCache, uint32_t, const VkComputePipelineCreateInfo *, const void *, VkPipeline *);
typedef void (*F_DestroyPipeline)(VkDevice, VkPipeline, const void *);
typedef VkResult (*F_CreateDescriptorPool)(VkDevice, const VkDescriptorPoolCreateInfo *, const void *, VkDescriptorPool *);
typedef void (*F_DestroyDescriptorPool)(VkDevice, VkDescriptorPool, const void *);
typedef VkResult (*F_AllocateDescriptorSets)(VkDevice, const VkDescriptorSetAllocateInfo *, VkDescriptorSet *);
typedef void (*F_UpdateDescriptorSets)(VkDevice, uint32_t, const VkWriteDescriptorSet *, uint32_t, const void *);
typedef VkResult (*F_CreateCommandPool)(VkDevice, const VkCommandPoolCreateInfo *, const void *, VkCommandPool *);
typedef void (*F_DestroyCommandPool)(VkDevice, VkCommandPool, const void *);
typedef VkResult (*F_AllocateCommandBuffers)(VkDevice, const VkCommandBufferAllocateInfo *, VkCommandBuffer *);
typedef void (*F_FreeCommandBuffers)(VkDevice, VkCommandPool, uint32_t, const VkCommandBuffer *);
typedef VkResult (*F_BeginCommandBuffer)(VkCommandBuffer, const VkCommandBufferBeginInfo *);
typedef VkResult (*F_EndCommandBuffer)(VkCommandBuffer);
typedef void (*F_CmdBindPipeline)(VkCommandBuffer, int32_t, VkPipeline);
typedef void (*F_CmdBindDescriptorSets)(VkCommandBuffer, int32_t, VkPipelineLayout, uint32_t, uint32_t, const VkDescriptorSet *, uint32_t, const uint32_t *);
typedef void (*F_CmdPushConstants)(VkCommandBuffer, VkPipelineLayout, VkShaderStageFlags, uint32_t, uint32_t, const void *);
typedef void (*F_CmdDispatch)(VkCommandBuffer, uint32_t, uint32_t, uint32_t);
typedef void (*F_CmdCopyBuffer)(VkCommandBuffer, VkBuffer, VkBuffer, uint32_t, const VkBufferCopy *);
typedef void (*F_CmdPipelineBarrier)(VkCommandBuffer, VkPipelineStageFlags, VkPipelineStageFlags, VkFlags, uint32_t, const VkMemoryBarrier *, uint32_t, const void *, uint32_t, const void *);
typedef VkResult (*F_CreateFence)(VkDevice, const VkFenceCreateInfo *, const void *, VkFence *);
typedef void (*F_DestroyFence)(VkDevice, VkFence, const void *);
typedef VkResult (*F_ResetFences)(VkDevice, uint32_t, const VkFence *);
typedef VkResult (*F_WaitForFences)(VkDevice, uint32_t, const VkFence *, VkBool32, uint64_t);
typedef VkResult (*F_QueueSubmit)(VkQueue, uint32_t, const VkSubmitInfo *, VkFence);
typedef VkResult (*F_DeviceWaitIdle)(VkDevice);

#define GV_MSG_CAP 4096

struct gv_ctx {
	void *lib;
	PFN_vkGetInstanceProcAddr gipa;
	VkInstance inst;
	VkPhysicalDevice pd;
	VkDevice dev;
	VkQueue queue;
	VkCommandPool pool;
	VkFence fence;
	VkDebugUtilsMessengerEXT msgr;
	VkPhysicalDeviceMemoryProperties mem;
	gv_info info;
	const char *call;
	int val_errors;
	char val_msg[GV_MSG_CAP];

	F_DestroyInstance DestroyInstance;
	F_DestroyDebugUtilsMessengerEXT DestroyDebugUtilsMessengerEXT;
	F_DestroyDevice DestroyDevice;
	F_GetDeviceQueue GetDeviceQueue;
	F_CreateBuffer CreateBuffer;
	F_DestroyBuffer DestroyBuffer;
	F_GetBufferMemoryRequirements GetBufferMemoryRequirements;
	F_AllocateMemory AllocateMemory;
	F_FreeMemory FreeMemory;
	F_BindBufferMemory BindBufferMemory;
	F_MapMemory MapMemory;
	F_CreateShaderModule CreateShaderModule;
	F_DestroyShaderModule DestroyShaderModule;
	F_CreateDescriptorSetLayout CreateDescriptorSetLayout;
	F_DestroyDescriptorSetLayout DestroyDescriptorSetLayout;
	F_CreatePipelineLayout CreatePipelineLayout;
	F_DestroyPipelineLayout DestroyPipelineLayout;
	F_CreateComputePipelines CreateComputePipelines;
	F_DestroyPipeline DestroyPipeline;
	F_CreateDescriptorPool CreateDescriptorPool;
	F_DestroyDescriptorPool DestroyDescriptorPool;
	F_AllocateDescriptorSets AllocateDescriptorSets;
	F_UpdateDescriptorSets UpdateDescriptorSets;
	F_CreateCommandPool CreateCommandPool;
	F_DestroyCommandPool DestroyCommandPool;
	F_AllocateCommandBuffers AllocateCommandBuffers;
	F_FreeCommandBuffers FreeCommandBuffers;
	F_BeginCommandBuffer BeginCommandBuffer;
	F_EndCommandBuffer EndCommandBuffer;
	F_CmdBindPipeline CmdBindPipeline;
	F_CmdBindDescriptorSets CmdBindDescriptorSets;
	F_CmdPushConstants CmdPushConstants;
	F_CmdDispatch CmdDispatch;
	F_CmdCopyBuffer CmdCopyBuffer;
	F_CmdPipelineBarrier CmdPipelineBarrier;
	F_CreateFence CreateFence;
	F_DestroyFence DestroyFence;
	F_ResetFences ResetFences;
	F_WaitForFences WaitForFences;
	F_QueueSubmit QueueSubmit;
	F_DeviceWaitIdle DeviceWaitIdle;
};

const char *gv_call(gv_ctx *c) { return c->call ? c->call : "?"; }
void gv_get_info(gv_ctx *c, gv_info *info) { *info = c->info; }

// on_message keeps validation errors (and warnings) for the Go side: a
// count of errors and the latest messages, newest last.
static VkBool32 on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev, VkDebugUtilsMessageTypeFlagsEXT type,
	const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
	gv_ctx *c = (gv_ctx *)user;
	(void)type;
	if (!(sev & SEVERITY_ERROR)) return 0;
	c->val_errors++;
	size_t have = strlen(c->val_msg);
	const char *m = data && data->pMessage ? data->pMessage : "(no message)";
	if (have + strlen(m) + 2 >= GV_MSG_CAP) { c->val_msg[0] = 0; have = 0; }
	snprintf(c->val_msg + have, GV_MSG_CAP - have, "%s\n", m);
	return 0;
}

int gv_validation_errors(gv_ctx *c, char *msg, int cap) {
	if (cap > 0) {
		strncpy(msg, c->val_msg, cap - 1);
		msg[cap - 1] = 0;
	}
	return c->val_errors;
}

#define IPROC(name) (F_##name) c->gipa(c->inst, "vk" #name)
#define DPROC(name) c->name = (F_##name) gdpa(c->dev, "vk" #name); if (!c->name) { *err = "vk" #name " missing"; gv_close(c); return VK_ERROR_INITIALIZATION_FAILED; }
#define CHECK(name_, expr) do { VkResult r_ = (expr); if (r_ != VK_SUCCESS) { c->call = name_; return r_; } } while (0)

static int has_layer(F_EnumerateInstanceLayerProperties enumerate, const char *name) {
	uint32_t n = 0;
	if (!enumerate || enumerate(&n, NULL) != VK_SUCCESS || n == 0) return 0;
	VkLayerProperties *p = calloc(n, sizeof *p);
	int found = 0;
	if (p && enumerate(&n, p) == VK_SUCCESS)
		for (uint32_t i = 0; i < n; i++)
			if (strcmp(p[i].layerName, name) == 0) found = 1;
	free(p);
	return found;
}

// gv_open loads libvulkan, makes an instance (with the Khronos validation
// layer and a messenger when validation is asked and the layer is
// installed), picks a physical device (device_index, or the first
// discrete, integrated, virtual, then CPU device with a compute queue),
// and makes a device with one queue: compute-only when the device has such
// a family. On failure *err names the step, and the return is a VkResult
// or 1 when libvulkan itself is missing.
int gv_open(gv_ctx **out, int device_index, int validation, const char **err) {
	*out = NULL;
	gv_ctx *c = calloc(1, sizeof *c);
	if (!c) { *err = "calloc"; return VK_ERROR_INITIALIZATION_FAILED; }
	c->lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!c->lib) c->lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
	if (!c->lib) { *err = "dlopen libvulkan.so.1"; free(c); return 1; }
	c->gipa = (PFN_vkGetInstanceProcAddr)dlsym(c->lib, "vkGetInstanceProcAddr");
	if (!c->gipa) { *err = "dlsym vkGetInstanceProcAddr"; gv_close(c); return 1; }
	F_CreateInstance createInstance = IPROC(CreateInstance);
	F_EnumerateInstanceLayerProperties enumLayers = IPROC(EnumerateInstanceLayerProperties);
	if (!createInstance) { *err = "vkCreateInstance missing"; gv_close(c); return 1; }

	const char *layer = "VK_LAYER_KHRONOS_validation";
	const char *ext = "VK_EXT_debug_utils";
	int val = validation && has_layer(enumLayers, layer);
	VkApplicationInfo app = {S_APPLICATION_INFO, NULL, "gelo", 1, "gelo", 1, VK_MAKE_API_VERSION(0, 1, 1, 0)};
	VkDebugUtilsMessengerCreateInfoEXT mci = {S_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT, NULL, 0,
		SEVERITY_WARNING | SEVERITY_ERROR, MSG_GENERAL | MSG_VALIDATION | MSG_PERFORMANCE, on_message, c};
	VkInstanceCreateInfo ici = {S_INSTANCE_CREATE_INFO, val ? &mci : NULL, 0, &app,
		val ? 1u : 0u, val ? &layer : NULL, val ? 1u : 0u, val ? &ext : NULL};
	VkResult r = createInstance(&ici, NULL, &c->inst);
	if (r != VK_SUCCESS) { *err = "vkCreateInstance"; gv_close(c); return r; }
	c->info.validation = val;
	c->DestroyInstance = IPROC(DestroyInstance);
	F_EnumeratePhysicalDevices enumDevices = IPROC(EnumeratePhysicalDevices);
	F_GetPhysicalDeviceProperties2 props2 = IPROC(GetPhysicalDeviceProperties2);
	F_GetPhysicalDeviceQueueFamilyProperties qprops = IPROC(GetPhysicalDeviceQueueFamilyProperties);
	F_GetPhysicalDeviceMemoryProperties mprops = IPROC(GetPhysicalDeviceMemoryProperties);
	F_CreateDevice createDevice = IPROC(CreateDevice);
	F_GetDeviceProcAddr gdpa = IPROC(GetDeviceProcAddr);
	if (!c->DestroyInstance || !enumDevices || !props2 || !qprops || !mprops || !createDevice || !gdpa) {
		*err = "Vulkan 1.1 instance functions missing";
		gv_close(c);
		return VK_ERROR_INCOMPATIBLE_DRIVER;
	}
	if (val) {
		F_CreateDebugUtilsMessengerEXT cm = IPROC(CreateDebugUtilsMessengerEXT);
		c->DestroyDebugUtilsMessengerEXT = IPROC(DestroyDebugUtilsMessengerEXT);
		if (cm && (r = cm(c->inst, &mci, NULL, &c->msgr)) != VK_SUCCESS) {
			*err = "vkCreateDebugUtilsMessengerEXT";
			gv_close(c);
			return r;
		}
	}

	uint32_t n = 0;
	if ((r = enumDevices(c->inst, &n, NULL)) != VK_SUCCESS) { *err = "vkEnumeratePhysicalDevices"; gv_close(c); return r; }
	if (n == 0) { *err = "vkEnumeratePhysicalDevices: no physical device"; gv_close(c); return VK_ERROR_INITIALIZATION_FAILED; }
	VkPhysicalDevice pds[16];
	if (n > 16) n = 16;
	if ((r = enumDevices(c->inst, &n, pds)) < 0) { *err = "vkEnumeratePhysicalDevices"; gv_close(c); return r; }
	c->info.devices = n;
	// Rank: discrete 2 > integrated 1 > virtual 3 > CPU 4 > other 0.
	static const int rank[5] = {4, 1, 0, 2, 3};
	int best = -1, bestRank = 99;
	for (uint32_t i = 0; i < n; i++) {
		VkPhysicalDeviceProperties2 p = {S_PHYSICAL_DEVICE_PROPERTIES_2};
		props2(pds[i], &p);
		if (p.properties.apiVersion < VK_MAKE_API_VERSION(0, 1, 1, 0)) continue;
		int t = p.properties.deviceType;
		int rk = t >= 0 && t < 5 ? rank[t] : 5;
		if (device_index >= 0) rk = (int)i == device_index ? 0 : 99;
		if (rk < bestRank) { best = i; bestRank = rk; }
	}
	if (best < 0 || bestRank == 99) { *err = "no Vulkan 1.1 physical device (or --device index out of range)"; gv_close(c); return VK_ERROR_INITIALIZATION_FAILED; }
	c->pd = pds[best];

	VkPhysicalDeviceSubgroupProperties sg = {S_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
	VkPhysicalDeviceProperties2 p = {S_PHYSICAL_DEVICE_PROPERTIES_2, &sg};
	props2(c->pd, &p);
	memcpy(c->info.name, p.properties.deviceName, sizeof c->info.name);
	c->info.api_version = p.properties.apiVersion;
	c->info.driver_version = p.properties.driverVersion;
	c->info.vendor_id = p.properties.vendorID;
	c->info.device_type = p.properties.deviceType;
	c->info.subgroup_size = sg.subgroupSize;
	c->info.subgroup_ops = sg.supportedOperations;
	c->info.subgroup_stages = sg.supportedStages;
	c->info.max_storage_range = p.properties.limits.maxStorageBufferRange;
	c->info.max_push = p.properties.limits.maxPushConstantsSize;
	memcpy(c->info.max_group_count, p.properties.limits.maxComputeWorkGroupCount, sizeof c->info.max_group_count);
	mprops(c->pd, &c->mem);

	uint32_t nq = 0;
	qprops(c->pd, &nq, NULL);
	VkQueueFamilyProperties qf[32];
	if (nq > 32) nq = 32;
	qprops(c->pd, &nq, qf);
	int fam = -1, only = 0;
	for (uint32_t i = 0; i < nq; i++) {
		if (!(qf[i].queueFlags & QUEUE_COMPUTE) || qf[i].queueCount == 0) continue;
		int o = !(qf[i].queueFlags & QUEUE_GRAPHICS);
		if (fam < 0 || (o && !only)) { fam = i; only = o; }
	}
	if (fam < 0) { *err = "no compute queue family"; gv_close(c); return VK_ERROR_FEATURE_NOT_PRESENT; }
	c->info.queue_family = fam;
	c->info.compute_only = only;

	float prio = 1.0f;
	VkDeviceQueueCreateInfo qci = {S_DEVICE_QUEUE_CREATE_INFO, NULL, 0, (uint32_t)fam, 1, &prio};
	VkDeviceCreateInfo dci = {S_DEVICE_CREATE_INFO, NULL, 0, 1, &qci, 0, NULL, 0, NULL, NULL};
	if ((r = createDevice(c->pd, &dci, NULL, &c->dev)) != VK_SUCCESS) { *err = "vkCreateDevice"; gv_close(c); return r; }
	DPROC(DestroyDevice) DPROC(GetDeviceQueue) DPROC(CreateBuffer) DPROC(DestroyBuffer)
	DPROC(GetBufferMemoryRequirements) DPROC(AllocateMemory) DPROC(FreeMemory) DPROC(BindBufferMemory)
	DPROC(MapMemory) DPROC(CreateShaderModule) DPROC(DestroyShaderModule) DPROC(CreateDescriptorSetLayout)
	DPROC(DestroyDescriptorSetLayout) DPROC(CreatePipelineLayout) DPROC(DestroyPipelineLayout)
	DPROC(CreateComputePipelines) DPROC(DestroyPipeline) DPROC(CreateDescriptorPool) DPROC(DestroyDescriptorPool)
	DPROC(AllocateDescriptorSets) DPROC(UpdateDescriptorSets) DPROC(CreateCommandPool) DPROC(DestroyCommandPool)
	DPROC(AllocateCommandBuffers) DPROC(FreeCommandBuffers) DPROC(BeginCommandBuffer) DPROC(EndCommandBuffer)
	DPROC(CmdBindPipeline) DPROC(CmdBindDescriptorSets) DPROC(CmdPushConstants) DPROC(CmdDispatch)
	DPROC(CmdCopyBuffer) DPROC(CmdPipelineBarrier) DPROC(CreateFence) DPROC(DestroyFence) DPROC(ResetFences)
	DPROC(WaitForFences) DPROC(QueueSubmit) DPROC(DeviceWaitIdle)
	c->GetDeviceQueue(c->dev, fam, 0, &c->queue);
	VkCommandPoolCreateInfo pci = {S_COMMAND_POOL_CREATE_INFO, NULL, CMD_POOL_RESET_COMMAND_BUFFER, (uint32_t)fam};
	if ((r = c->CreateCommandPool(c->dev, &pci, NULL, &c->pool)) != VK_SUCCESS) { *err = "vkCreateCommandPool"; gv_close(c); return r; }
	VkFenceCreateInfo fci = {S_FENCE_CREATE_INFO, NULL, 0};
	if ((r = c->CreateFence(c->dev, &fci, NULL, &c->fence)) != VK_SUCCESS) { *err = "vkCreateFence"; gv_close(c); return r; }
	*out = c;
	return VK_SUCCESS;
}

void gv_close(gv_ctx *c) {
	if (!c) return;
	if (c->dev) {
		if (c->DeviceWaitIdle) c->DeviceWaitIdle(c->dev);
		if (c->fence) c->DestroyFence(c->dev, c->fence, NULL);
		if (c->pool) c->DestroyCommandPool(c->dev, c->pool, NULL);
		if (c->DestroyDevice) c->DestroyDevice(c->dev, NULL);
	}
	if (c->msgr && c->DestroyDebugUtilsMessengerEXT) c->DestroyDebugUtilsMessengerEXT(c->inst, c->msgr, NULL);
	if (c->inst && c->DestroyInstance) c->DestroyInstance(c->inst, NULL);
	if (c->lib) dlclose(c->lib);
	free(c);
}

// pick_memory returns the memory type index with all of want (and, among
// those, one with all of prefer when there is one), or -1.
static int pick_memory(gv_ctx *c, uint32_t bits, uint32_t want, uint32_t prefer, uint32_t avoid) {
	int got = -1;
	for (uint32_t i = 0; i < c->mem.memoryTypeCount; i++) {
		uint32_t f = c->mem.memoryTypes[i].propertyFlags;
		if (!(bits & (1u << i)) || (f & want) != want) continue;
		if ((f & prefer) == prefer && !(f & avoid)) return i;
		if (got < 0) got = i;
	}
	return got;
}

VkResult gv_buffer(gv_ctx *c, VkDeviceSize size, int mem, gv_buf *out) {
	memset(out, 0, sizeof *out);
	if (size == 0) size = 4;
	VkBufferCreateInfo bci = {S_BUFFER_CREATE_INFO, NULL, 0, size,
		USAGE_STORAGE | USAGE_TRANSFER_SRC | USAGE_TRANSFER_DST, 0, 0, NULL};
	CHECK("vkCreateBuffer", c->CreateBuffer(c->dev, &bci, NULL, &out->buf));
	VkMemoryRequirements req;
	c->GetBufferMemoryRequirements(c->dev, out->buf, &req);
	int t = -1;
	switch (mem) {
	case GV_MEM_HOST:
		t = pick_memory(c, req.memoryTypeBits, MEM_HOST_VISIBLE | MEM_HOST_COHERENT, MEM_DEVICE_LOCAL, 0);
		break;
	case GV_MEM_DEVICE_ONLY:
		t = pick_memory(c, req.memoryTypeBits, MEM_DEVICE_LOCAL, 0, 0);
		break;
	default:
		t = pick_memory(c, req.memoryTypeBits, MEM_DEVICE_LOCAL, MEM_DEVICE_LOCAL | MEM_HOST_VISIBLE | MEM_HOST_COHERENT, 0);
		if (t < 0) t = pick_memory(c, req.memoryTypeBits, MEM_HOST_VISIBLE | MEM_HOST_COHERENT, 0, 0);
	}
	if (t < 0) {
		c->DestroyBuffer(c->dev, out->buf, NULL);
		out->buf = 0;
		c->call = "vkGetBufferMemoryRequirements (no suitable memory type)";
		return VK_ERROR_OUT_OF_DEVICE_MEMORY;
	}
	out->props = c->mem.memoryTypes[t].propertyFlags;
	VkMemoryAllocateInfo mai = {S_MEMORY_ALLOCATE_INFO, NULL, req.size, (uint32_t)t};
	VkResult r = c->AllocateMemory(c->dev, &mai, NULL, &out->mem);
	if (r != VK_SUCCESS) { gv_buffer_free(c, out); c->call = "vkAllocateMemory"; return r; }
	if ((r = c->BindBufferMemory(c->dev, out->buf, out->mem, 0)) != VK_SUCCESS) { gv_buffer_free(c, out); c->call = "vkBindBufferMemory"; return r; }
	int coherent = (out->props & (MEM_HOST_VISIBLE | MEM_HOST_COHERENT)) == (MEM_HOST_VISIBLE | MEM_HOST_COHERENT);
	if (coherent && mem != GV_MEM_DEVICE_ONLY) {
		if ((r = c->MapMemory(c->dev, out->mem, 0, VK_WHOLE_SIZE, 0, &out->map)) != VK_SUCCESS) {
			gv_buffer_free(c, out);
			c->call = "vkMapMemory";
			return r;
		}
	}
	out->size = size;
	return VK_SUCCESS;
}

void gv_buffer_free(gv_ctx *c, gv_buf *b) {
	if (b->buf) c->DestroyBuffer(c->dev, b->buf, NULL);
	if (b->mem) c->FreeMemory(c->dev, b->mem, NULL); // unmaps too
	memset(b, 0, sizeof *b);
}

// gv_upload writes n bytes at off of dst: straight through the mapping,
// or through a staging buffer and a one-time copy when dst is not mapped.
VkResult gv_upload(gv_ctx *c, gv_buf *dst, VkDeviceSize off, const void *src, VkDeviceSize n) {
	if (dst->map) {
		memcpy((char *)dst->map + off, src, n);
		return VK_SUCCESS;
	}
	gv_buf st;
	VkResult r = gv_buffer(c, n, GV_MEM_HOST, &st);
	if (r != VK_SUCCESS) return r;
	if (!st.map) { gv_buffer_free(c, &st); c->call = "vkMapMemory (staging)"; return VK_ERROR_OUT_OF_DEVICE_MEMORY; }
	memcpy(st.map, src, n);
	VkCommandBuffer cb;
	if ((r = gv_cmd_begin(c, &cb)) == VK_SUCCESS) {
		gv_cmd_copy(c, cb, st.buf, 0, dst->buf, off, n);
		gv_cmd_barrier(c, cb);
		if ((r = gv_cmd_end(c, cb)) == VK_SUCCESS) r = gv_submit(c, cb);
		gv_cmd_free(c, cb);
	}
	gv_buffer_free(c, &st);
	return r;
}

// gv_layout makes the one descriptor set layout (bindings storage buffers
// at 0..bindings-1) and the pipeline layout with push_bytes of push
// constants that every matmul pipeline shares.
VkResult gv_layout(gv_ctx *c, uint32_t bindings, uint32_t push_bytes, VkDescriptorSetLayout *dsl, VkPipelineLayout *pl) {
	VkDescriptorSetLayoutBinding b[8];
	if (bindings > 8) { c->call = "gv_layout (too many bindings)"; return VK_ERROR_INITIALIZATION_FAILED; }
	for (uint32_t i = 0; i < bindings; i++) {
		VkDescriptorSetLayoutBinding x = {i, DESC_STORAGE_BUFFER, 1, STAGE_COMPUTE, NULL};
		b[i] = x;
	}
	VkDescriptorSetLayoutCreateInfo lci = {S_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, NULL, 0, bindings, b};
	CHECK("vkCreateDescriptorSetLayout", c->CreateDescriptorSetLayout(c->dev, &lci, NULL, dsl));
	VkPushConstantRange pr = {STAGE_COMPUTE, 0, push_bytes};
	VkPipelineLayoutCreateInfo pci = {S_PIPELINE_LAYOUT_CREATE_INFO, NULL, 0, 1, dsl, 1, &pr};
	CHECK("vkCreatePipelineLayout", c->CreatePipelineLayout(c->dev, &pci, NULL, pl));
	return VK_SUCCESS;
}

VkResult gv_pipeline(gv_ctx *c, VkPipelineLayout pl, const uint32_t *spv, size_t bytes, VkPipeline *out) {
	VkShaderModuleCreateInfo sci = {S_SHADER_MODULE_CREATE_INFO, NULL, 0, bytes, spv};
	VkShaderModule mod;
	CHECK("vkCreateShaderModule", c->CreateShaderModule(c->dev, &sci, NULL, &mod));
	VkComputePipelineCreateInfo cci = {S_COMPUTE_PIPELINE_CREATE_INFO, NULL, 0,
		{S_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, STAGE_COMPUTE, mod, "main", NULL}, pl, 0, -1};
	VkResult r = c->CreateComputePipelines(c->dev, 0, 1, &cci, NULL, out);
	c->DestroyShaderModule(c->dev, mod, NULL);
	if (r != VK_SUCCESS) { c->call = "vkCreateComputePipelines"; return r; }
	return VK_SUCCESS;
}

VkResult gv_pool(gv_ctx *c, uint32_t sets, uint32_t descriptors, VkDescriptorPool *out) {
	VkDescriptorPoolSize ps = {DESC_STORAGE_BUFFER, descriptors};
	VkDescriptorPoolCreateInfo pci = {S_DESCRIPTOR_POOL_CREATE_INFO, NULL, 0, sets, 1, &ps};
	CHECK("vkCreateDescriptorPool", c->CreateDescriptorPool(c->dev, &pci, NULL, out));
	return VK_SUCCESS;
}

VkResult gv_set(gv_ctx *c, VkDescriptorPool pool, VkDescriptorSetLayout dsl, const VkBuffer *bufs,
	const VkDeviceSize *offs, const VkDeviceSize *ranges, uint32_t n, VkDescriptorSet *out) {
	VkDescriptorSetAllocateInfo ai = {S_DESCRIPTOR_SET_ALLOCATE_INFO, NULL, pool, 1, &dsl};
	CHECK("vkAllocateDescriptorSets", c->AllocateDescriptorSets(c->dev, &ai, out));
	VkDescriptorBufferInfo bi[8];
	VkWriteDescriptorSet w[8];
	if (n > 8) { c->call = "gv_set (too many bindings)"; return VK_ERROR_INITIALIZATION_FAILED; }
	for (uint32_t i = 0; i < n; i++) {
		VkDescriptorBufferInfo b = {bufs[i], offs[i], ranges[i]};
		bi[i] = b;
		VkWriteDescriptorSet x = {S_WRITE_DESCRIPTOR_SET, NULL, *out, i, 0, 1, DESC_STORAGE_BUFFER, NULL, &bi[i], NULL};
		w[i] = x;
	}
	c->UpdateDescriptorSets(c->dev, n, w, 0, NULL);
	return VK_SUCCESS;
}

void gv_destroy_pipeline(gv_ctx *c, VkPipeline p) { if (p) c->DestroyPipeline(c->dev, p, NULL); }
void gv_destroy_layout(gv_ctx *c, VkDescriptorSetLayout dsl, VkPipelineLayout pl) {
	if (pl) c->DestroyPipelineLayout(c->dev, pl, NULL);
	if (dsl) c->DestroyDescriptorSetLayout(c->dev, dsl, NULL);
}
void gv_destroy_pool(gv_ctx *c, VkDescriptorPool p) { if (p) c->DestroyDescriptorPool(c->dev, p, NULL); }

VkResult gv_cmd_begin(gv_ctx *c, VkCommandBuffer *out) {
	VkCommandBufferAllocateInfo ai = {S_COMMAND_BUFFER_ALLOCATE_INFO, NULL, c->pool, 0, 1};
	CHECK("vkAllocateCommandBuffers", c->AllocateCommandBuffers(c->dev, &ai, out));
	// No ONE_TIME_SUBMIT, no SIMULTANEOUS_USE: recorded once, submitted
	// again after each completion.
	VkCommandBufferBeginInfo bi = {S_COMMAND_BUFFER_BEGIN_INFO, NULL, 0, NULL};
	VkResult r = c->BeginCommandBuffer(*out, &bi);
	if (r != VK_SUCCESS) { gv_cmd_free(c, *out); c->call = "vkBeginCommandBuffer"; return r; }
	return VK_SUCCESS;
}

VkResult gv_cmd_end(gv_ctx *c, VkCommandBuffer cb) {
	CHECK("vkEndCommandBuffer", c->EndCommandBuffer(cb));
	return VK_SUCCESS;
}

void gv_cmd_free(gv_ctx *c, VkCommandBuffer cb) { c->FreeCommandBuffers(c->dev, c->pool, 1, &cb); }

void gv_cmd_dispatch(gv_ctx *c, VkCommandBuffer cb, VkPipeline p, VkPipelineLayout pl, VkDescriptorSet set,
	const void *push, uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
	c->CmdBindPipeline(cb, BIND_POINT_COMPUTE, p);
	c->CmdBindDescriptorSets(cb, BIND_POINT_COMPUTE, pl, 0, 1, &set, 0, NULL);
	c->CmdPushConstants(cb, pl, STAGE_COMPUTE, 0, push_bytes, push);
	c->CmdDispatch(cb, gx, gy, gz);
}

void gv_cmd_copy(gv_ctx *c, VkCommandBuffer cb, VkBuffer src, VkDeviceSize soff, VkBuffer dst, VkDeviceSize doff, VkDeviceSize n) {
	VkBufferCopy r = {soff, doff, n};
	c->CmdCopyBuffer(cb, src, dst, 1, &r);
}

// gv_cmd_barrier orders everything recorded so far (host writes, copies,
// dispatches) before everything after it, and makes it visible to the
// host: a coarse barrier, enough between the few steps of a crossing.
void gv_cmd_barrier(gv_ctx *c, VkCommandBuffer cb) {
	VkMemoryBarrier mb = {S_MEMORY_BARRIER, NULL,
		ACCESS_SHADER_WRITE | ACCESS_TRANSFER_WRITE | ACCESS_HOST_WRITE,
		ACCESS_SHADER_READ | ACCESS_SHADER_WRITE | ACCESS_TRANSFER_READ | ACCESS_TRANSFER_WRITE | ACCESS_HOST_READ};
	c->CmdPipelineBarrier(cb, PIPE_STAGE_COMPUTE | PIPE_STAGE_TRANSFER | PIPE_STAGE_HOST,
		PIPE_STAGE_COMPUTE | PIPE_STAGE_TRANSFER | PIPE_STAGE_HOST, 0, 1, &mb, 0, NULL, 0, NULL);
}

// gv_submit submits cb and waits for it: the one call a replayed crossing
// makes.
VkResult gv_submit(gv_ctx *c, VkCommandBuffer cb) {
	VkSubmitInfo si = {S_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &cb, 0, NULL};
	CHECK("vkQueueSubmit", c->QueueSubmit(c->queue, 1, &si, c->fence));
	CHECK("vkWaitForFences", c->WaitForFences(c->dev, 1, &c->fence, 1, ~0ULL));
	CHECK("vkResetFences", c->ResetFences(c->dev, 1, &c->fence));
	return VK_SUCCESS;
}
