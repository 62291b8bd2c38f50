//! What the engine reports about the GPU it uses, and how one GPU batch
//! spent its time. Plain data, independent of `wgpu`'s own types so the
//! public API does not change with `wgpu` versions.

use std::fmt;
use std::time::Duration;

/// The kind of adapter, as the driver reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GpuDeviceType {
    /// A GPU on its own card, behind a bus.
    Discrete,
    /// A GPU sharing memory with the CPU.
    Integrated,
    /// A virtualised GPU.
    Virtual,
    /// A software rasteriser running on the CPU (Mesa's lavapipe or
    /// llvmpipe): correct, but slower than the CPU path, so
    /// [`Backend::Auto`](crate::Backend::Auto) never picks it.
    Cpu,
    /// The driver did not say.
    Other,
}

impl GpuDeviceType {
    #[cfg(feature = "gpu")]
    pub(crate) fn from_wgpu(device_type: wgpu::DeviceType) -> GpuDeviceType {
        match device_type {
            wgpu::DeviceType::DiscreteGpu => GpuDeviceType::Discrete,
            wgpu::DeviceType::IntegratedGpu => GpuDeviceType::Integrated,
            wgpu::DeviceType::VirtualGpu => GpuDeviceType::Virtual,
            wgpu::DeviceType::Cpu => GpuDeviceType::Cpu,
            _ => GpuDeviceType::Other,
        }
    }

    /// Lower-case name (`discrete`, `integrated`, `virtual`, `cpu`, `other`).
    pub fn name(self) -> &'static str {
        match self {
            GpuDeviceType::Discrete => "discrete",
            GpuDeviceType::Integrated => "integrated",
            GpuDeviceType::Virtual => "virtual",
            GpuDeviceType::Cpu => "cpu",
            GpuDeviceType::Other => "other",
        }
    }
}

/// A GPU adapter and the limits the engine works within on it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GpuInfo {
    /// The adapter's name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub name: String,
    /// The graphics API it runs on (`Vulkan`, `Metal`, `Dx12`, `Gl`).
    pub api: String,
    /// What kind of device it is.
    pub device_type: GpuDeviceType,
    /// The driver and its version, as reported.
    pub driver: String,
    /// Largest storage buffer binding, in bytes.
    pub max_storage_buffer_binding_size: u64,
    /// Largest buffer, in bytes.
    pub max_buffer_size: u64,
    /// Most workgroups in one dispatch dimension.
    pub max_compute_workgroups_per_dimension: u32,
    /// Whether the adapter can time work on the GPU (timestamp queries).
    pub timestamps: bool,
}

#[cfg(feature = "gpu")]
impl GpuInfo {
    pub(crate) fn from_adapter(adapter: &wgpu::Adapter) -> GpuInfo {
        GpuInfo::new(adapter.get_info(), &adapter.limits(), adapter.features())
    }

    /// What the device a caller handed the engine runs on, within the
    /// limits and features it was created with.
    pub(crate) fn from_device(device: &wgpu::Device) -> GpuInfo {
        GpuInfo::new(device.adapter_info(), &device.limits(), device.features())
    }

    fn new(info: wgpu::AdapterInfo, limits: &wgpu::Limits, features: wgpu::Features) -> GpuInfo {
        GpuInfo {
            name: info.name,
            api: format!("{:?}", info.backend),
            device_type: GpuDeviceType::from_wgpu(info.device_type),
            driver: [info.driver, info.driver_info]
                .into_iter()
                .filter(|part| !part.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
            max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
            max_buffer_size: limits.max_buffer_size,
            max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            timestamps: features.contains(super::device::TIMESTAMP_FEATURES),
        }
    }
}

impl fmt::Display for GpuInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}, {}, driver {}; storage binding {} MiB, buffer {} MiB, {} workgroups per dimension)",
            self.name,
            self.api,
            self.device_type.name(),
            if self.driver.is_empty() { "unknown" } else { &self.driver },
            self.max_storage_buffer_binding_size >> 20,
            self.max_buffer_size >> 20,
            self.max_compute_workgroups_per_dimension,
        )
    }
}

/// Where one GPU batch spent its time.
///
/// Stages of different slabs overlap (slab k+1 is packed while k runs), so
/// the stages add up to more than [`total`](Self::total) when pipelining
/// works. With GPU timestamps, `upload`, `dispatch`, `download` and
/// `check` are measured on the GPU; without, they are not split (`None`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GpuTimings {
    /// Wall time of the whole call.
    pub total: Duration,
    /// CPU time writing blobs and the table into mapped staging memory.
    pub pack: Duration,
    /// GPU time copying staged blobs into the shader's buffers.
    pub upload: Option<Duration>,
    /// GPU time running the shader.
    pub dispatch: Option<Duration>,
    /// GPU time checking the offsets of packed blobs in GPU buffers
    /// ([`Engine::hash_gpu_blobs`](crate::Engine::hash_gpu_blobs)) before
    /// the shader hashes them.
    pub check: Option<Duration>,
    /// GPU time copying digests into the readback buffer.
    pub download: Option<Duration>,
    /// CPU time waiting for slabs to finish, with nothing left to pack.
    pub wait: Duration,
    /// CPU time copying digests from mapped memory into the caller's slice.
    pub readback: Duration,
    /// Slabs the batch was cut into.
    pub slabs: usize,
    /// Blobs hashed by the shader.
    pub gpu_blobs: usize,
    /// Blobs over 1 KiB hashed on the CPU meanwhile.
    pub cpu_blobs: usize,
    /// Bytes sent to the GPU (blobs, padding and table).
    pub bytes_uploaded: u64,
    /// Of those, the bytes the GPU copied from where they lay in a
    /// [`PinnedBuffer`](crate::PinnedBuffer), with no packing.
    pub bytes_in_place: u64,
    /// Digests the GPU copied straight into their slots in a
    /// [`PinnedBuffer`](crate::PinnedBuffer), with no copy on the host.
    pub digests_in_place: usize,
}

impl GpuTimings {
    /// The timings of two calls one after the other, as one.
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    pub(crate) fn then(self, later: GpuTimings) -> GpuTimings {
        let both = |one: Option<Duration>, other: Option<Duration>| Some(one? + other?);
        GpuTimings {
            total: self.total + later.total,
            pack: self.pack + later.pack,
            upload: both(self.upload, later.upload),
            dispatch: both(self.dispatch, later.dispatch),
            check: both(self.check, later.check),
            download: both(self.download, later.download),
            wait: self.wait + later.wait,
            readback: self.readback + later.readback,
            slabs: self.slabs + later.slabs,
            gpu_blobs: self.gpu_blobs + later.gpu_blobs,
            cpu_blobs: self.cpu_blobs + later.cpu_blobs,
            bytes_uploaded: self.bytes_uploaded + later.bytes_uploaded,
            bytes_in_place: self.bytes_in_place + later.bytes_in_place,
            digests_in_place: self.digests_in_place + later.digests_in_place,
        }
    }

    /// The share of the wall time spent moving data across the bus and out
    /// of mapped memory: `(upload + download + readback) / total`, when the
    /// GPU stages are timed.
    pub fn transfer_share(&self) -> Option<f64> {
        let transfer = self.upload? + self.download? + self.readback;
        (!self.total.is_zero()).then(|| transfer.as_secs_f64() / self.total.as_secs_f64())
    }
}
