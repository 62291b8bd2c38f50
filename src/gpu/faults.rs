//! Faults injected on purpose into the GPU path, for the tests that show
//! every failure becomes an `Error` naming its stage (and, under
//! `Backend::Auto`, a redo on the CPU). The switch,
//! `EngineBuilder::gpu_fault`, exists only in builds with debug assertions
//! (tests); release builds cannot turn a fault on.

#![cfg_attr(any(not(debug_assertions), not(feature = "gpu")), allow(dead_code))]

use std::sync::atomic::{AtomicUsize, Ordering};

/// Where an injected fault strikes a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuFaultStage {
    /// Creating a slab's buffers fails as if GPU memory had run out.
    CreateBuffers,
    /// Mapping a slab's digests for reading fails.
    Map,
    /// A submitted slab never completes: its wait times out.
    Timeout,
    /// The device is lost (destroyed) before the slab is submitted; it stays
    /// lost for every later batch.
    DeviceLost,
    /// An invalid command is submitted beside the slab: a real `wgpu`
    /// validation error.
    Validation,
}

/// A fault at `stage` on slab `at_slab` (from 0) of each of the next
/// `batches` GPU batches.
#[derive(Clone, Copy, Debug)]
pub struct GpuFault {
    /// Where it strikes.
    pub stage: GpuFaultStage,
    /// The slab it strikes, from 0.
    pub at_slab: usize,
    /// How many batches it strikes.
    pub batches: usize,
}

/// Hands the fault to the batches it is meant for.
pub(crate) struct Injector {
    fault: GpuFault,
    left: AtomicUsize,
}

impl Injector {
    pub(crate) fn new(fault: GpuFault) -> Injector {
        Injector {
            fault,
            left: AtomicUsize::new(fault.batches),
        }
    }

    /// The fault for a batch starting now, while any are left.
    pub(crate) fn for_batch(&self) -> Option<GpuFault> {
        self.left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                left.checked_sub(1)
            })
            .ok()
            .map(|_| self.fault)
    }
}

/// Whether `fault` strikes slab `slab` at `stage`.
pub(crate) fn strikes(fault: Option<GpuFault>, stage: GpuFaultStage, slab: usize) -> bool {
    fault.is_some_and(|fault| fault.stage == stage && fault.at_slab == slab)
}
