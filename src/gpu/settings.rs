//! How the GPU is opened: the settings an engine's builder takes, plain
//! data that exists with or without the `gpu` feature.

use std::time::Duration;

/// The longest the engine waits for one slab before giving up with an error.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How a batch's blobs reach the GPU's shader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GpuUpload {
    /// Packed into host-visible staging memory, copied by the GPU into
    /// device memory and read there (the default).
    #[default]
    Copy,
    /// Packed into a buffer the shader reads in place, where the adapter
    /// can map storage buffers (`MAPPABLE_PRIMARY_BUFFERS`): no copy, but
    /// every read of the shader crosses to host memory (or to device memory
    /// the host maps).
    Direct,
    /// Packed into staging buffers in the host's own memory, which the
    /// GPU's copy engine pulls into device memory (Vulkan only): the
    /// packing writes cached memory instead of storing every byte across
    /// the bus into the card's mapped memory, as [`GpuUpload::Copy`] does
    /// where the card has a resizable BAR.
    Host,
}

impl GpuUpload {
    /// Lower-case name, as `B3BATCH_GPU_UPLOAD` spells it.
    pub fn name(self) -> &'static str {
        match self {
            GpuUpload::Copy => "copy",
            GpuUpload::Direct => "direct",
            GpuUpload::Host => "host",
        }
    }
}

/// How to open the GPU: what the engine's builder set, else the
/// environment, else the defaults.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DeviceSettings {
    pub upload: Option<GpuUpload>,
    pub workgroup_size: Option<u32>,
    /// A fault to inject (tests only).
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    pub fault: Option<super::faults::GpuFault>,
}
