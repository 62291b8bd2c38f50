//! The GPU backend: WGSL compute shaders (`shaders/`) run
//! through `wgpu`, one invocation per blob of at most 1 KiB, one per chunk
//! and per parent for longer ones (`tree.rs`).
//!
//! A batch streams through a ring of slabs so that packing slab k+1 on the
//! CPU overlaps the GPU's work on slab k and the readback of k−1; GPU memory
//! stays within the budget whatever the batch size. Blobs longer than a
//! slab are hashed in subtrees that fit one (`subtrees.rs`) where
//! `Backend::Gpu` asks for the card; blobs over 1 KiB that the scheduler
//! keeps on the CPU are hashed there at the same time.
//!
//! All of it is behind the `gpu` feature; without it `absent.rs` stands in,
//! a GPU that never opens.

mod faults;
mod info;
mod settings;

#[cfg(not(feature = "gpu"))]
mod absent;
#[cfg(feature = "gpu")]
mod backend;
#[cfg(feature = "gpu")]
mod buffers;
#[cfg(feature = "gpu")]
mod device;
#[cfg(feature = "gpu")]
mod host_memory;
#[cfg(feature = "gpu")]
mod layout;
#[cfg(feature = "gpu")]
mod pack;
#[cfg(feature = "gpu")]
mod pinned;
#[cfg(feature = "gpu")]
mod slab;
#[cfg(feature = "gpu")]
mod subtrees;
#[cfg(feature = "gpu")]
mod tree;

#[cfg(not(feature = "gpu"))]
pub use absent::gpu_adapters;
#[cfg(not(feature = "gpu"))]
pub(crate) use absent::{CallerDevice, Gpu};
#[cfg(feature = "gpu")]
pub use backend::gpu_adapters;
#[cfg(feature = "gpu")]
pub(crate) use backend::{CallerDevice, Gpu};
#[cfg(feature = "gpu")]
pub(crate) use buffers::{Digests, Recorded};
#[cfg(feature = "gpu")]
pub use buffers::{GpuBlobs, GpuOffsets};
#[cfg(debug_assertions)]
pub use faults::{GpuFault, GpuFaultStage};
pub use info::{GpuDeviceType, GpuInfo, GpuTimings};
#[cfg(feature = "gpu")]
pub(crate) use pinned::PinnedMemory;
pub use settings::GpuUpload;
pub(crate) use settings::{DeviceSettings, DEFAULT_TIMEOUT};

/// Default GPU memory the engine may hold for one batch's slabs.
pub(crate) const DEFAULT_BUDGET: u64 = 256 << 20;
