//go:build cgo

package vulkan

/*
#cgo LDFLAGS: -ldl
#include "vk_impl.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// ctx is one opened Vulkan device: the C context and what it reported.
type ctx struct {
	c    *C.gv_ctx
	info Info
}

// memory wishes, mirroring vk.h's GV_MEM_*.
const (
	memDevice     = C.GV_MEM_DEVICE
	memHost       = C.GV_MEM_HOST
	memDeviceOnly = C.GV_MEM_DEVICE_ONLY
)

const subgroupArithmetic = 0x4 // VK_SUBGROUP_FEATURE_ARITHMETIC_BIT

// openCtx opens libvulkan and a device; an error wrapping ErrUnavailable
// means this machine has no usable Vulkan driver.
func openCtx(index int, validation bool) (*ctx, error) {
	var c *C.gv_ctx
	var step *C.char
	val := C.int(0)
	if validation {
		val = 1
	}
	r := C.gv_open(&c, C.int(index), val, &step)
	if r != 0 {
		name := C.GoString(step)
		if r == 1 || r == -3 || r == -9 {
			return nil, fmt.Errorf("%w: %s: %s", ErrUnavailable, name, resultName(int32(r)))
		}
		return nil, fmt.Errorf("vulkan: %s: %s", name, resultName(int32(r)))
	}
	var gi C.gv_info
	C.gv_get_info(c, &gi)
	x := &ctx{c: c}
	x.info = Info{
		Name:            C.GoString(&gi.name[0]),
		APIVersion:      uint32(gi.api_version),
		DriverVersion:   uint32(gi.driver_version),
		VendorID:        uint32(gi.vendor_id),
		Type:            deviceType(uint32(gi.device_type)),
		SubgroupSize:    int(gi.subgroup_size),
		MaxStorageRange: int64(gi.max_storage_range),
		MaxGroupCount:   [3]int{int(gi.max_group_count[0]), int(gi.max_group_count[1]), int(gi.max_group_count[2])},
		MaxPushBytes:    int(gi.max_push),
		QueueFamily:     int(gi.queue_family),
		ComputeOnly:     gi.compute_only != 0,
		Validation:      gi.validation != 0,
		Devices:         int(gi.devices),
	}
	const computeStage = 0x20
	if gi.subgroup_ops&subgroupArithmetic == 0 || gi.subgroup_stages&computeStage == 0 || gi.subgroup_size == 0 {
		x.close()
		return nil, fmt.Errorf("%w: %s has no subgroup arithmetic in compute shaders", ErrUnavailable, x.info.Name)
	}
	return x, nil
}

func (x *ctx) close() {
	if x.c != nil {
		C.gv_close(x.c)
		x.c = nil
	}
}

// fail wraps a failed call's VkResult with the Vulkan call that failed.
func (x *ctx) fail(r C.VkResult) error {
	return fmt.Errorf("vulkan: %s: %s", C.GoString(C.gv_call(x.c)), resultName(int32(r)))
}

// validationErrors returns the count of validation-layer errors so far and
// the latest messages.
func (x *ctx) validationErrors() (int, string) {
	buf := make([]byte, 4096)
	n := C.gv_validation_errors(x.c, (*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	s := string(buf)
	for i, b := range buf {
		if b == 0 {
			s = string(buf[:i])
			break
		}
	}
	return int(n), s
}

// buffer is one storage buffer and its memory.
type buffer struct {
	b C.gv_buf
}

func (x *ctx) newBuffer(size int64, mem int) (*buffer, error) {
	if size <= 0 {
		size = 4
	}
	size = (size + 3) &^ 3
	b := &buffer{}
	if r := C.gv_buffer(x.c, C.VkDeviceSize(size), C.int(mem), &b.b); r != 0 {
		return nil, x.fail(r)
	}
	return b, nil
}

func (x *ctx) freeBuffer(b *buffer) {
	if b != nil {
		C.gv_buffer_free(x.c, &b.b)
	}
}

// mapped returns the host view of a mapped buffer, nil for an unmapped one.
func (b *buffer) mapped() []byte {
	if b.b._map == nil {
		return nil
	}
	return unsafe.Slice((*byte)(b.b._map), int(b.b.size))
}

func (b *buffer) size() int64 { return int64(b.b.size) }

// upload writes src at off of b (through a staging copy when b is not
// mapped).
func (x *ctx) upload(b *buffer, off int64, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	if off < 0 || off+int64(len(src)) > b.size() {
		return fmt.Errorf("vulkan: upload of %d bytes at %d overflows a %d-byte buffer", len(src), off, b.size())
	}
	if r := C.gv_upload(x.c, &b.b, C.VkDeviceSize(off), unsafe.Pointer(&src[0]), C.VkDeviceSize(len(src))); r != 0 {
		return x.fail(r)
	}
	return nil
}

type (
	setLayout  = C.VkDescriptorSetLayout
	pipeLayout = C.VkPipelineLayout
	pipeline   = C.VkPipeline
	descPool   = C.VkDescriptorPool
	descSet    = C.VkDescriptorSet
	cmdBuffer  = C.VkCommandBuffer
)

func (x *ctx) layout(bindings, pushBytes int) (setLayout, pipeLayout, error) {
	var dsl C.VkDescriptorSetLayout
	var pl C.VkPipelineLayout
	if r := C.gv_layout(x.c, C.uint32_t(bindings), C.uint32_t(pushBytes), &dsl, &pl); r != 0 {
		C.gv_destroy_layout(x.c, dsl, pl)
		return 0, 0, x.fail(r)
	}
	return dsl, pl, nil
}

func (x *ctx) destroyLayout(dsl setLayout, pl pipeLayout) { C.gv_destroy_layout(x.c, dsl, pl) }

func (x *ctx) pipeline(pl pipeLayout, spv []byte) (pipeline, error) {
	if len(spv) == 0 || len(spv)%4 != 0 {
		return 0, fmt.Errorf("vulkan: SPIR-V of %d bytes is not whole words", len(spv))
	}
	// SPIR-V is read as 32-bit words: copy into word-aligned memory.
	words := make([]uint32, len(spv)/4)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(spv)), spv)
	var p C.VkPipeline
	if r := C.gv_pipeline(x.c, pl, (*C.uint32_t)(unsafe.Pointer(&words[0])), C.size_t(len(spv)), &p); r != 0 {
		return 0, x.fail(r)
	}
	return p, nil
}

func (x *ctx) destroyPipeline(p pipeline) { C.gv_destroy_pipeline(x.c, p) }

func (x *ctx) pool(sets, descriptors int) (descPool, error) {
	var p C.VkDescriptorPool
	if r := C.gv_pool(x.c, C.uint32_t(sets), C.uint32_t(descriptors), &p); r != 0 {
		return 0, x.fail(r)
	}
	return p, nil
}

func (x *ctx) destroyPool(p descPool) { C.gv_destroy_pool(x.c, p) }

// binding is one buffer range bound in a descriptor set.
type binding struct {
	b           *buffer
	off, length int64
}

func (x *ctx) set(p descPool, dsl setLayout, bs []binding) (descSet, error) {
	n := len(bs)
	bufs := make([]C.VkBuffer, n)
	offs := make([]C.VkDeviceSize, n)
	ranges := make([]C.VkDeviceSize, n)
	for i, b := range bs {
		bufs[i], offs[i], ranges[i] = b.b.b.buf, C.VkDeviceSize(b.off), C.VkDeviceSize(b.length)
	}
	var s C.VkDescriptorSet
	if r := C.gv_set(x.c, p, dsl, &bufs[0], &offs[0], &ranges[0], C.uint32_t(n), &s); r != 0 {
		return 0, x.fail(r)
	}
	return s, nil
}

func (x *ctx) begin() (cmdBuffer, error) {
	var cb C.VkCommandBuffer
	if r := C.gv_cmd_begin(x.c, &cb); r != 0 {
		return nil, x.fail(r)
	}
	return cb, nil
}

func (x *ctx) end(cb cmdBuffer) error {
	if r := C.gv_cmd_end(x.c, cb); r != 0 {
		return x.fail(r)
	}
	return nil
}

func (x *ctx) freeCmd(cb cmdBuffer) { C.gv_cmd_free(x.c, cb) }

func (x *ctx) dispatch(cb cmdBuffer, p pipeline, pl pipeLayout, s descSet, push *[4]uint32, gx, gy, gz int) {
	C.gv_cmd_dispatch(x.c, cb, p, pl, s, unsafe.Pointer(&push[0]), 16, C.uint32_t(gx), C.uint32_t(gy), C.uint32_t(gz))
}

func (x *ctx) copyBuffer(cb cmdBuffer, src *buffer, dst *buffer, n int64) {
	C.gv_cmd_copy(x.c, cb, src.b.buf, 0, dst.b.buf, 0, C.VkDeviceSize(n))
}

func (x *ctx) barrier(cb cmdBuffer) { C.gv_cmd_barrier(x.c, cb) }

// submit replays cb and waits for it.
func (x *ctx) submit(cb cmdBuffer) error {
	if r := C.gv_submit(x.c, cb); r != 0 {
		return x.fail(r)
	}
	return nil
}

// dispatchPush records a dispatch with len(push) words of push constants.
func (x *ctx) dispatchPush(cb cmdBuffer, p pipeline, pl pipeLayout, s descSet, push []uint32, gx, gy, gz int) {
	C.gv_cmd_dispatch(x.c, cb, p, pl, s, unsafe.Pointer(&push[0]), C.uint32_t(4*len(push)), C.uint32_t(gx), C.uint32_t(gy), C.uint32_t(gz))
}

// copyNow copies n bytes between buffers in a one-off command buffer and
// waits for it.
func (x *ctx) copyNow(src *buffer, soff int64, dst *buffer, doff int64, n int64) error {
	cb, err := x.begin()
	if err != nil {
		return err
	}
	defer x.freeCmd(cb)
	C.gv_cmd_copy(x.c, cb, src.b.buf, C.VkDeviceSize(soff), dst.b.buf, C.VkDeviceSize(doff), C.VkDeviceSize(n))
	x.barrier(cb)
	if err := x.end(cb); err != nil {
		return err
	}
	return x.submit(cb)
}
