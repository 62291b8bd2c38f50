//! Staging buffers in the host's own memory, for [`GpuUpload::Host`]: the
//! packing threads write cached system memory at the speed of memory, and
//! the GPU's copy engine pulls it across the bus as one DMA transfer.
//!
//! `wgpu` places `MAP_WRITE` buffers in device-local memory the host can
//! map where the card has a resizable BAR, so every store of the packing
//! crosses the bus on its own (about 30 GB/s on an H200, half of a DMA
//! copy). It has no way to ask for host memory instead, so on Vulkan the
//! buffer is made here with `ash` on the device `wgpu` opened, mapped once
//! for good, and handed to `wgpu`. The memory stays this crate's, freed when
//! the `HostBuffer` drops: a device destroyed meanwhile
//! (`wgpu::Device::destroy`) frees every allocation `wgpu` owns, and the
//! mapping, which callers read and write through `PinnedBuffer`, must
//! outlive that.
//!
//! [`GpuUpload::Host`]: super::settings::GpuUpload::Host

use std::mem::ManuallyDrop;
use std::ptr::NonNull;

/// A buffer the GPU can copy from and into, in host memory that stays
/// mapped as long as it lives.
pub(crate) struct HostBuffer {
    /// Dropped first, in `drop`, then the memory freed.
    buffer: ManuallyDrop<wgpu::Buffer>,
    bytes: NonNull<u8>,
    len: usize,
    memory: vulkan::Memory,
}

// SAFETY: `bytes` points into memory that `memory` owns and that lives as
// long as it; it is only written through `&mut HostBuffer`.
unsafe impl Send for HostBuffer {}
// SAFETY: a shared `HostBuffer` gives no access to `bytes`.
unsafe impl Sync for HostBuffer {}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: `buffer` is not used after this.
        unsafe { ManuallyDrop::drop(&mut self.buffer) };
        self.memory.free();
    }
}

impl HostBuffer {
    /// A `size`-byte buffer with usage `COPY_SRC | COPY_DST` in host-visible, coherent
    /// memory, preferably not on the device and cached; `Err` says why
    /// there is none (not Vulkan, no such memory, out of memory).
    pub(crate) fn new(device: &wgpu::Device, label: &str, size: u64) -> Result<HostBuffer, String> {
        vulkan::new(device, label, size)
    }

    pub(crate) fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// The buffer's bytes, to read.
    ///
    /// # Safety
    ///
    /// Every byte has been written since the buffer was made.
    pub(crate) unsafe fn bytes(&self) -> &[u8] {
        // SAFETY: `bytes` is a live mapping of `len` bytes owned by
        // `buffer`, initialised (the caller promises) and written only
        // through `&mut self`.
        unsafe { std::slice::from_raw_parts(self.bytes.as_ptr(), self.len) }
    }

    /// The buffer's bytes, to write.
    ///
    /// # Safety
    ///
    /// No GPU command that reads or writes the buffer may be pending:
    /// every submission that used it must have finished.
    pub(crate) unsafe fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `bytes` is a live mapping of `len` bytes owned by
        // `buffer`; `&mut self` makes this the only view on the host, and
        // the caller promises the GPU is not reading it.
        unsafe { std::slice::from_raw_parts_mut(self.bytes.as_ptr(), self.len) }
    }
}

#[cfg(any(
    windows,
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd",
    target_os = "netbsd"
))]
mod vulkan {
    use std::ptr::NonNull;

    use ash::vk;
    use wgpu::hal::api::Vulkan;

    use super::HostBuffer;

    pub(super) fn new(device: &wgpu::Device, label: &str, size: u64) -> Result<HostBuffer, String> {
        if size == 0 || usize::try_from(size).is_err() {
            return Err(format!("a host staging buffer of {size} bytes"));
        }
        // SAFETY: the handles are used only to create, bind, map and (on
        // failure) free objects of our own, which `wgpu` never sees until
        // `create_buffer_from_hal` takes them; the guard is dropped before.
        let (raw, memory, bytes) = unsafe {
            let hal = device
                .as_hal::<Vulkan>()
                .ok_or_else(|| "the host upload needs the Vulkan backend".to_owned())?;
            let instance = hal.shared_instance().raw_instance();
            let properties =
                instance.get_physical_device_memory_properties(hal.raw_physical_device());
            mapped_buffer(hal.raw_device(), &properties, size)?
        };
        // SAFETY: `raw` is a buffer of `size` bytes with TRANSFER_SRC and
        // TRANSFER_DST usage, bound at offset 0 to `memory`, which holds
        // it; `wgpu` takes the buffer (it destroys it when the
        // `wgpu::Buffer` is dropped and the GPU is done with it, or when
        // the device is destroyed) and never maps it. The memory stays
        // ours: `Memory::free` frees it.
        let buffer = unsafe {
            let hal_buffer = wgpu::hal::vulkan::Buffer::from_raw(raw);
            device.create_buffer_from_hal::<Vulkan>(
                hal_buffer,
                &wgpu::BufferDescriptor {
                    label: Some(label),
                    size,
                    usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                },
            )
        };
        Ok(HostBuffer {
            buffer: std::mem::ManuallyDrop::new(buffer),
            bytes,
            len: size as usize,
            memory: Memory {
                device: device.clone(),
                memory,
            },
        })
    }

    /// The memory behind a [`HostBuffer`], and the device it was allocated
    /// on, which the clone keeps (its Vulkan device among it) until it is
    /// freed.
    pub(super) struct Memory {
        device: wgpu::Device,
        memory: vk::DeviceMemory,
    }

    impl Memory {
        /// Frees the memory, once the GPU has finished every command
        /// submitted so far, which are all that may use it (the buffer's
        /// `wgpu` handle is dropped: none can be recorded after).
        pub(super) fn free(&mut self) {
            // A lost or destroyed device has nothing left running.
            let _ = self.device.poll(wgpu::PollType::wait_indefinitely());
            // SAFETY: the memory was allocated on this device, the GPU no
            // longer uses it, and the buffer's host view ends with the
            // `HostBuffer` that frees it. Without the Vulkan device (never
            // on a device this module allocated on) it is left allocated.
            unsafe {
                if let Some(hal) = self.device.as_hal::<Vulkan>() {
                    hal.raw_device().free_memory(self.memory, None);
                }
            }
        }
    }

    /// Creates a `size`-byte TRANSFER_SRC and TRANSFER_DST buffer bound to memory of its
    /// own, of the best host-visible type, and maps it for good; on any
    /// failure, frees what it made.
    ///
    /// # Safety
    ///
    /// `vk_device` must be the live device `properties` describe.
    unsafe fn mapped_buffer(
        vk_device: &ash::Device,
        properties: &vk::PhysicalDeviceMemoryProperties,
        size: u64,
    ) -> Result<(vk::Buffer, vk::DeviceMemory, NonNull<u8>), String> {
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(vk::BufferUsageFlags::TRANSFER_SRC | vk::BufferUsageFlags::TRANSFER_DST)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: a valid create info on a live device.
        let raw = unsafe { vk_device.create_buffer(&info, None) }
            .map_err(|error| format!("creating a host staging buffer: {error}"))?;
        let mut memory = None;
        let mapped = (|| {
            // SAFETY: `raw` was just created on this device; the memory is
            // allocated for its own requirements, of a type it allows, and
            // bound and mapped once, whole.
            unsafe {
                let requirements = vk_device.get_buffer_memory_requirements(raw);
                let memory_type_index = host_memory_type(properties, requirements.memory_type_bits)
                    .ok_or_else(|| "the adapter has no host-visible, coherent memory".to_owned())?;
                let allocation = vk::MemoryAllocateInfo::default()
                    .allocation_size(requirements.size)
                    .memory_type_index(memory_type_index);
                let allocated = vk_device
                    .allocate_memory(&allocation, None)
                    .map_err(|error| format!("allocating {size} bytes of host memory: {error}"))?;
                memory = Some(allocated);
                vk_device
                    .bind_buffer_memory(raw, allocated, 0)
                    .map_err(|error| format!("binding host memory: {error}"))?;
                let pointer = vk_device
                    .map_memory(allocated, 0, size, vk::MemoryMapFlags::empty())
                    .map_err(|error| format!("mapping host memory: {error}"))?;
                NonNull::new(pointer.cast::<u8>())
                    .ok_or_else(|| "mapping host memory gave a null pointer".to_owned())
            }
        })();
        match (mapped, memory) {
            (Ok(bytes), Some(memory)) => Ok((raw, memory, bytes)),
            (result, memory) => {
                // SAFETY: both objects are ours and no command uses them.
                unsafe {
                    if let Some(memory) = memory {
                        vk_device.free_memory(memory, None);
                    }
                    vk_device.destroy_buffer(raw, None);
                }
                Err(result
                    .err()
                    .unwrap_or_else(|| "host memory was not allocated".into()))
            }
        }
    }

    /// The memory type among `allowed` to stage uploads in: host-visible
    /// and coherent, then preferably not device-local (on a discrete card
    /// that is memory behind the bus) and cached.
    pub(super) fn host_memory_type(
        properties: &vk::PhysicalDeviceMemoryProperties,
        allowed: u32,
    ) -> Option<u32> {
        use vk::MemoryPropertyFlags as F;
        let required = F::HOST_VISIBLE | F::HOST_COHERENT;
        properties
            .memory_types_as_slice()
            .iter()
            .enumerate()
            .filter(|(index, kind)| {
                allowed & (1 << index) != 0 && kind.property_flags.contains(required)
            })
            .max_by_key(|(index, kind)| {
                let flags = kind.property_flags;
                let host_side = !flags.contains(F::DEVICE_LOCAL);
                let cached = flags.contains(F::HOST_CACHED);
                // The first of equals, as Vulkan orders types by preference.
                (host_side, cached, std::cmp::Reverse(*index))
            })
            .map(|(index, _)| index as u32)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn properties(types: &[vk::MemoryPropertyFlags]) -> vk::PhysicalDeviceMemoryProperties {
            let mut properties = vk::PhysicalDeviceMemoryProperties {
                memory_type_count: types.len() as u32,
                ..Default::default()
            };
            for (slot, flags) in properties.memory_types.iter_mut().zip(types) {
                slot.property_flags = *flags;
            }
            properties
        }

        #[test]
        fn staging_prefers_cached_host_memory_to_the_cards_bar() {
            use vk::MemoryPropertyFlags as F;
            let host = F::HOST_VISIBLE | F::HOST_COHERENT;
            // The memory types of NVIDIA's driver on a card with resizable BAR.
            let nvidia = properties(&[
                F::DEVICE_LOCAL,
                F::DEVICE_LOCAL | host,
                host,
                host | F::HOST_CACHED,
            ]);
            assert_eq!(host_memory_type(&nvidia, !0), Some(3));
            assert_eq!(host_memory_type(&nvidia, 0b0111), Some(2));
            assert_eq!(host_memory_type(&nvidia, 0b0011), Some(1));
            assert_eq!(host_memory_type(&nvidia, 0b0001), None);
            // One heap for everything (lavapipe, integrated GPUs): the first.
            let unified = properties(&[
                F::DEVICE_LOCAL | host | F::HOST_CACHED,
                F::DEVICE_LOCAL | host | F::HOST_CACHED,
            ]);
            assert_eq!(host_memory_type(&unified, !0), Some(0));
        }
    }
}

// Elsewhere (the targets above, negated; the same list as `ash`'s in
// Cargo.toml) wgpu has no Vulkan backend to allocate on.
#[cfg(not(any(
    windows,
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd",
    target_os = "netbsd"
)))]
mod vulkan {
    use super::HostBuffer;

    pub(super) fn new(_: &wgpu::Device, _: &str, _: u64) -> Result<HostBuffer, String> {
        Err("the host upload needs the Vulkan backend, which wgpu lacks on this platform".into())
    }

    /// None is ever made here.
    pub(super) enum Memory {}

    impl Memory {
        pub(super) fn free(&mut self) {
            match *self {}
        }
    }
}
