//! The caller's own host memory made a buffer the GPU copies from, for
//! [`GpuUpload::Import`]: where a slab's blobs already lie in memory as the
//! shader reads them, the GPU's copy engine pulls them straight from the
//! caller's pages (pinned by the driver, `VK_EXT_external_memory_host`) and
//! no core copies a byte.
//!
//! A batch's bytes are imported in page-aligned [`PIECE_BYTES`] pieces
//! that never overlap (drivers may refuse a page imported twice), each
//! made when the first slab that needs it is packed and freed when the
//! last slab that read it is done.
//!
//! [`GpuUpload::Import`]: super::settings::GpuUpload::Import

use std::ops::Range;
use std::sync::Mutex;

use crate::cpu::batch::Threads;

/// Bytes of the caller's memory imported as one buffer: small enough that
/// a slab's pieces are pinned on several threads at once and the first
/// slab does not wait for a whole batch, large enough that the driver's
/// cost per import is noise.
pub(crate) const PIECE_BYTES: usize = 8 << 20;

/// The name of the Vulkan extension the upload needs, for messages.
pub(crate) const EXTENSION: &str = "VK_EXT_external_memory_host";

/// One copy out of an imported piece: its buffer, the offset in it, and
/// the bytes.
pub(crate) struct PieceCopy<'a> {
    pub buffer: &'a wgpu::Buffer,
    pub offset: u64,
    pub bytes: u64,
}

/// The imported pieces of one batch's bytes, all within `bytes`.
pub(crate) struct Imports<'a> {
    /// The caller's bytes, which must outlive every piece.
    bytes: &'a [u8],
    /// The address of the page-aligned piece 0 (at or before `bytes`).
    base: usize,
    /// The device's import alignment (a power of two).
    alignment: usize,
    /// Piece `i` covers `base + i * PIECE_BYTES` onwards, where made.
    pieces: Vec<Option<wgpu::Buffer>>,
}

impl<'a> Imports<'a> {
    /// Nothing imported yet of `bytes`, for a device that imports at
    /// `alignment` (a power of two, at most [`PIECE_BYTES`]).
    pub(crate) fn new(bytes: &'a [u8], alignment: u64) -> Imports<'a> {
        let alignment = usize::try_from(alignment).unwrap_or(PIECE_BYTES);
        debug_assert!(alignment.is_power_of_two() && alignment <= PIECE_BYTES);
        let base = (bytes.as_ptr() as usize) & !(alignment - 1);
        Imports {
            bytes,
            base,
            alignment,
            pieces: Vec::new(),
        }
    }

    /// Whether `part` lies within the batch's bytes, so that its copies can
    /// come from imported pieces.
    pub(crate) fn holds(&self, part: &[u8]) -> bool {
        let range = addresses(self.bytes);
        let part = addresses(part);
        range.start <= part.start && part.end <= range.end
    }

    /// The pieces covering addresses `range`, in order (`first..end`).
    fn pieces_of(&self, range: &Range<usize>) -> Range<usize> {
        let first = (range.start - self.base) / PIECE_BYTES;
        let end = (range.end - self.base).div_ceil(PIECE_BYTES);
        first..end
    }

    /// Imports every piece the addresses `part` (within the batch's bytes)
    /// span that is not imported yet, several at once on `threads`.
    pub(crate) fn import(
        &mut self,
        device: &wgpu::Device,
        part: &Range<usize>,
        threads: Threads,
    ) -> Result<(), String> {
        let batch = addresses(self.bytes);
        debug_assert!(batch.start <= part.start && part.end <= batch.end);
        let pieces = self.pieces_of(part);
        if self.pieces.len() < pieces.end {
            self.pieces.resize_with(pieces.end, || None);
        }
        // The last piece ends on the page that holds the batch's last byte:
        // pages past it may not be mapped.
        let last_page = batch.end.next_multiple_of(self.alignment);
        let (base, alignment) = (self.base, self.alignment);
        let missing: Vec<_> = self.pieces[pieces.clone()]
            .iter_mut()
            .zip(pieces)
            .filter(|(slot, _)| slot.is_none())
            .map(|(slot, index)| {
                let start = base + index * PIECE_BYTES;
                (slot, start..(start + PIECE_BYTES).min(last_page))
            })
            .collect();
        let failure = Mutex::new(None);
        threads.for_each(missing, |(slot, pages)| {
            // SAFETY: `pages` are whole pages (at the device's import
            // alignment), each holding some byte of `self.bytes`, so mapped
            // while it is borrowed; the GPU only reads them, and every
            // piece is destroyed when `Imports` drops, within that borrow
            // (see `Drop`).
            match unsafe { vulkan::import(device, pages.start, pages.len(), alignment) } {
                Ok(buffer) => *slot = Some(buffer),
                Err(why) => {
                    let mut failure = failure.lock().unwrap_or_else(|p| p.into_inner());
                    failure.get_or_insert(why);
                }
            }
        });
        match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(why) => Err(why),
            None => Ok(()),
        }
    }

    /// The copies that bring the addresses `range` (imported with
    /// [`import`](Self::import)) into device memory: one per piece it
    /// spans. `range` must start and end on 4-byte boundaries.
    pub(crate) fn copies(&self, range: &Range<usize>) -> Vec<PieceCopy<'_>> {
        self.pieces_of(range)
            .filter_map(|index| {
                let start = self.base + index * PIECE_BYTES;
                let from = range.start.max(start);
                let to = range.end.min(start + PIECE_BYTES);
                let buffer = self.pieces.get(index)?.as_ref()?;
                Some(PieceCopy {
                    buffer,
                    offset: (from - start) as u64,
                    bytes: (to - from) as u64,
                })
            })
            .collect()
    }

    /// Frees the pieces that end at or before address `end`, once the GPU
    /// has finished every copy from them (later slabs read later bytes).
    pub(crate) fn release_through(&mut self, end: usize) {
        for (index, slot) in self.pieces.iter_mut().enumerate() {
            if self.base + (index + 1) * PIECE_BYTES <= end {
                if let Some(buffer) = slot.take() {
                    buffer.destroy();
                }
            }
        }
    }
}

impl Drop for Imports<'_> {
    /// Frees every piece: at once where the GPU is done with it (every
    /// batch that ends well has waited for its last slab), else when the
    /// submission that reads it finishes, which a failed batch waits for
    /// before it returns.
    fn drop(&mut self) {
        for buffer in self.pieces.iter_mut().filter_map(Option::take) {
            buffer.destroy();
        }
    }
}

/// The addresses of `bytes`.
pub(crate) fn addresses(bytes: &[u8]) -> Range<usize> {
    let range = bytes.as_ptr_range();
    range.start as usize..range.end as usize
}

/// The device's import alignment when it was opened with the extension,
/// else `None`.
pub(crate) fn alignment(device: &wgpu::Device) -> Option<u64> {
    vulkan::alignment(device)
}

/// The extension to enable when opening `adapter` for imports, or why it
/// cannot be.
pub(crate) fn check_adapter(adapter: &wgpu::Adapter) -> Result<(), String> {
    vulkan::check_adapter(adapter)
}

/// Opens `adapter` with the extension the upload needs enabled.
pub(crate) fn open_device(
    adapter: &wgpu::Adapter,
    descriptor: &wgpu::DeviceDescriptor<'_>,
) -> Result<(wgpu::Device, wgpu::Queue), String> {
    vulkan::open_device(adapter, descriptor)
}

#[cfg(any(
    windows,
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd",
    target_os = "netbsd"
))]
mod vulkan {
    use std::ffi::c_void;

    use ash::vk;
    use wgpu::hal::api::Vulkan;

    use super::EXTENSION;

    const HANDLE: vk::ExternalMemoryHandleTypeFlags =
        vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT;

    pub(super) fn check_adapter(adapter: &wgpu::Adapter) -> Result<(), String> {
        // SAFETY: the adapter is only queried.
        let hal = unsafe { adapter.as_hal::<Vulkan>() }
            .ok_or_else(|| "the import upload needs the Vulkan backend".to_owned())?;
        if hal
            .physical_device_capabilities()
            .supports_extension(ash::ext::external_memory_host::NAME)
        {
            Ok(())
        } else {
            Err(format!("the adapter's driver lacks {EXTENSION}"))
        }
    }

    pub(super) fn open_device(
        adapter: &wgpu::Adapter,
        descriptor: &wgpu::DeviceDescriptor<'_>,
    ) -> Result<(wgpu::Device, wgpu::Queue), String> {
        check_adapter(adapter)?;
        // SAFETY: the device is opened from this adapter with the features
        // and limits the descriptor asks of it (wgpu's `request_device`
        // does the same), and the callback only adds an extension the
        // adapter supports (checked above); `create_device_from_hal` gets
        // the same descriptor.
        let opened = unsafe {
            let hal = adapter
                .as_hal::<Vulkan>()
                .ok_or_else(|| "the import upload needs the Vulkan backend".to_owned())?;
            hal.open_with_callback(
                descriptor.required_features,
                &descriptor.required_limits,
                &descriptor.memory_hints,
                Some(Box::new(|args| {
                    args.extensions.push(ash::ext::external_memory_host::NAME);
                })),
            )
        }
        .map_err(|error| format!("opening the device with {EXTENSION}: {error}"))?;
        // SAFETY: `opened` comes from this adapter with exactly these
        // features.
        unsafe { adapter.create_device_from_hal(opened, descriptor) }
            .map_err(|error| format!("wrapping the device: {error}"))
    }

    pub(super) fn alignment(device: &wgpu::Device) -> Option<u64> {
        // SAFETY: the device's handles are only queried.
        unsafe {
            let hal = device.as_hal::<Vulkan>()?;
            if !hal
                .enabled_device_extensions()
                .contains(&ash::ext::external_memory_host::NAME)
            {
                return None;
            }
            let instance = hal.shared_instance().raw_instance();
            let mut host = vk::PhysicalDeviceExternalMemoryHostPropertiesEXT::default();
            let mut properties = vk::PhysicalDeviceProperties2::default().push_next(&mut host);
            instance.get_physical_device_properties2(hal.raw_physical_device(), &mut properties);
            let alignment = host.min_imported_host_pointer_alignment;
            (alignment.is_power_of_two() && alignment <= super::PIECE_BYTES as u64)
                .then_some(alignment)
        }
    }

    /// Imports the `len` bytes of host memory from address `start` as a
    /// `COPY_SRC` buffer.
    ///
    /// # Safety
    ///
    /// `start` and `len` are multiples of `alignment`, the device's import
    /// alignment, on a device opened with the extension; the memory is
    /// mapped and stays so, unchanged, until the buffer has been destroyed
    /// and no submission that reads it is pending.
    pub(super) unsafe fn import(
        device: &wgpu::Device,
        start: usize,
        len: usize,
        alignment: usize,
    ) -> Result<wgpu::Buffer, String> {
        debug_assert!(start.is_multiple_of(alignment) && len.is_multiple_of(alignment) && len > 0);
        let size = len as u64;
        let pointer = start as *mut c_void;
        // SAFETY: the objects are made, bound and (on failure) freed here,
        // on the live device, and `wgpu` sees them only once
        // `create_buffer_from_hal` takes them; the guard is dropped before.
        let (raw, memory) = unsafe {
            let hal = device
                .as_hal::<Vulkan>()
                .ok_or_else(|| "the import upload needs the Vulkan backend".to_owned())?;
            let instance = hal.shared_instance().raw_instance();
            let vk_device = hal.raw_device();
            let extension = ash::ext::external_memory_host::Device::new(instance, vk_device);
            let mut host = vk::MemoryHostPointerPropertiesEXT::default();
            (extension.fp().get_memory_host_pointer_properties_ext)(
                vk_device.handle(),
                HANDLE,
                pointer,
                &mut host,
            )
            .result()
            .map_err(|error| format!("the driver cannot import this memory: {error}"))?;
            let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(HANDLE);
            let info = vk::BufferCreateInfo::default()
                .size(size)
                .usage(vk::BufferUsageFlags::TRANSFER_SRC)
                .sharing_mode(vk::SharingMode::EXCLUSIVE)
                .push_next(&mut external);
            let raw = vk_device
                .create_buffer(&info, None)
                .map_err(|error| format!("creating a buffer over imported memory: {error}"))?;
            let requirements = vk_device.get_buffer_memory_requirements(raw);
            let allowed = requirements.memory_type_bits & host.memory_type_bits;
            let bound = (|| {
                if allowed == 0 || requirements.size > size {
                    return Err(format!(
                        "no memory type can hold a buffer of {size} imported bytes"
                    ));
                }
                let mut import = vk::ImportMemoryHostPointerInfoEXT::default()
                    .handle_type(HANDLE)
                    .host_pointer(pointer);
                let allocation = vk::MemoryAllocateInfo::default()
                    .allocation_size(size)
                    .memory_type_index(allowed.trailing_zeros())
                    .push_next(&mut import);
                let memory = vk_device
                    .allocate_memory(&allocation, None)
                    .map_err(|error| format!("importing {size} bytes: {error}"))?;
                match vk_device.bind_buffer_memory(raw, memory, 0) {
                    Ok(()) => Ok(memory),
                    Err(error) => {
                        vk_device.free_memory(memory, None);
                        Err(format!("binding imported memory: {error}"))
                    }
                }
            })();
            match bound {
                Ok(memory) => (raw, memory),
                Err(why) => {
                    vk_device.destroy_buffer(raw, None);
                    return Err(why);
                }
            }
        };
        // SAFETY: `raw` is a TRANSFER_SRC buffer of `size` bytes bound at 0
        // to `memory`, which holds it; `wgpu` takes both, destroys and
        // frees them when the buffer is destroyed and the GPU is done with
        // it, and never maps it.
        let buffer = unsafe {
            let hal_buffer = wgpu::hal::vulkan::Buffer::from_raw_managed(raw, memory, 0, size);
            device.create_buffer_from_hal::<Vulkan>(
                hal_buffer,
                &wgpu::BufferDescriptor {
                    label: Some("imported host memory"),
                    size,
                    usage: wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                },
            )
        };
        Ok(buffer)
    }
}

#[cfg(not(any(
    windows,
    target_os = "linux",
    target_os = "android",
    target_os = "freebsd",
    target_os = "netbsd"
)))]
mod vulkan {
    use super::EXTENSION;

    const WHY: &str = "the import upload needs the Vulkan backend, which wgpu lacks here";

    pub(super) fn check_adapter(_: &wgpu::Adapter) -> Result<(), String> {
        Err(format!("{WHY} ({EXTENSION})"))
    }

    pub(super) fn open_device(
        _: &wgpu::Adapter,
        _: &wgpu::DeviceDescriptor<'_>,
    ) -> Result<(wgpu::Device, wgpu::Queue), String> {
        Err(WHY.into())
    }

    pub(super) fn alignment(_: &wgpu::Device) -> Option<u64> {
        None
    }

    /// # Safety
    ///
    /// None: it imports nothing.
    pub(super) unsafe fn import(
        _: &wgpu::Device,
        _: usize,
        _: usize,
        _: usize,
    ) -> Result<wgpu::Buffer, String> {
        Err(WHY.into())
    }
}
