//! [`PendingGpuHash`]: a hash of blobs in GPU buffers that the caller
//! submits with their own commands ([`Engine::encode_gpu_blobs`]).

use std::fmt;

use crate::engine::Engine;
use crate::error::{Error, ErrorKind};
use crate::gpu::Recorded;

/// What is left of a hash recorded by
/// [`Engine::encode_gpu_blobs`] once its commands are submitted: waiting
/// for it, and learning whether the blobs' offsets were sound.
///
/// Dropping it without waiting is allowed: the digests are written all the
/// same when the offsets are sound, and not at all when they are not.
#[must_use = "wait() reports offsets the GPU found bad, for which no digest was written"]
pub struct PendingGpuHash {
    engine: Engine,
    /// `None` for a call with no blobs.
    recorded: Option<Recorded>,
}

impl PendingGpuHash {
    pub(crate) fn new(engine: Engine, recorded: Option<Recorded>) -> PendingGpuHash {
        PendingGpuHash { engine, recorded }
    }

    /// Waits, at most the engine's GPU timeout
    /// ([`EngineBuilder::gpu_timeout`](crate::EngineBuilder::gpu_timeout)),
    /// until the GPU has run the commands (and everything submitted on the
    /// queue before them). Fails with [`ErrorKind::GpuBuffer`] naming the
    /// first bad blob when the offsets decrease, run past the data or give
    /// a blob over 1 KiB (then no digest was written); with
    /// [`ErrorKind::Gpu`] when the commands were never submitted, the
    /// device was lost or the wait timed out.
    pub fn wait(self) -> Result<(), Error> {
        self.finish(None)
    }

    /// [`wait`](Self::wait), but only until `submission` has run: the
    /// index [`wgpu::Queue::submit`] returned for the submission that
    /// holds the commands. A pipeline that has submitted its next hashes
    /// already does not wait for them too. Fails as `wait` does, and with
    /// [`ErrorKind::Gpu`] where the commands were in no submission up to
    /// `submission`.
    pub fn wait_for(self, submission: wgpu::SubmissionIndex) -> Result<(), Error> {
        self.finish(Some(submission))
    }

    fn finish(self, submission: Option<wgpu::SubmissionIndex>) -> Result<(), Error> {
        let Some(recorded) = self.recorded else {
            return Ok(());
        };
        match self.engine.gpu() {
            Some(gpu) => gpu.finish_buffers(recorded, submission),
            None => Err(ErrorKind::BackendUnavailable {
                backend: "gpu".to_owned(),
                reason: "this engine has no GPU".to_owned(),
            }
            .into()),
        }
    }
}

impl fmt::Debug for PendingGpuHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingGpuHash")
            .field("blobs", &self.recorded.is_some())
            .finish_non_exhaustive()
    }
}
