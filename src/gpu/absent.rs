//! The GPU without the `gpu` feature: the same calls, on a GPU that never
//! opens. `Backend::Gpu` fails to build with an error that says how to get
//! one; `Backend::Auto` runs on the CPU. No `wgpu`, no shaders, and a
//! dependent crate that only hashes on the CPU builds in a fraction of the
//! time.

use std::time::Duration;

use super::info::{GpuInfo, GpuTimings};
use super::settings::{DeviceSettings, GpuUpload};
use crate::blobs::BlobSource;
use crate::cpu::batch::Threads;
use crate::error::{Error, ErrorKind};
use crate::mode::{Mode, ModeWords};

/// No GPU can be opened, so there is none to hold.
pub(crate) enum Gpu {}

/// A caller's device: none can be handed over without `wgpu`.
#[derive(Clone, Debug)]
pub(crate) enum CallerDevice {}

/// No adapters: this build has no GPU backend.
pub fn gpu_adapters() -> Vec<GpuInfo> {
    Vec::new()
}

impl Gpu {
    pub(crate) fn open(
        _budget: u64,
        _timeout: Duration,
        _settings: DeviceSettings,
    ) -> Result<Gpu, Error> {
        Err(ErrorKind::BackendUnavailable {
            backend: "gpu".to_owned(),
            reason: "blake3-batch was built without its `gpu` feature (enable it in \
                     Cargo.toml, or use Backend::Cpu)"
                .to_owned(),
        }
        .into())
    }

    pub(crate) fn adopt(
        device: CallerDevice,
        _budget: u64,
        _timeout: Duration,
        _settings: DeviceSettings,
    ) -> Result<Gpu, Error> {
        match device {}
    }

    pub(crate) fn settings(&self) -> (GpuUpload, u32) {
        match *self {}
    }

    pub(crate) fn bus_time(&self, _bytes: &[u8], _threads: Threads) -> Result<Duration, Error> {
        match *self {}
    }

    pub(crate) fn info(&self) -> &GpuInfo {
        match *self {}
    }

    pub(crate) fn last_timings(&self) -> Option<GpuTimings> {
        match *self {}
    }

    pub(crate) fn set_last_timings(&self, _timings: GpuTimings) {
        match *self {}
    }

    pub(crate) fn max_blob(&self) -> usize {
        match *self {}
    }

    pub(crate) fn takes_as_subtrees(&self, _len: usize) -> bool {
        match *self {}
    }

    pub(crate) fn hash_as_subtrees<S: BlobSource>(
        &self,
        _mode: (Mode, ModeWords),
        _source: &S,
        _indices: &[usize],
        _out: &mut [[u8; 32]],
        _threads: Threads,
    ) -> Result<(), Error> {
        match *self {}
    }

    pub(crate) fn subtree_bytes(&self) -> Option<usize> {
        match *self {}
    }

    pub(crate) fn takes_pieces_up_to(&self, _end: u64) -> bool {
        match *self {}
    }

    pub(crate) fn hash_pieces(
        &self,
        _mode: (&crate::cpu::SubtreeHashing, ModeWords),
        _offset: u64,
        _data: &[u8],
        _out: &mut [[u8; 32]],
        _threads: Threads,
    ) -> Result<(), Error> {
        match *self {}
    }

    pub(crate) fn pins_memory(&self) -> bool {
        match *self {}
    }

    pub(crate) fn copies_in_place<S: BlobSource>(&self, _source: &S) -> bool {
        match *self {}
    }

    pub(crate) fn copies_in_place_from(&self, _bytes: &[u8]) -> bool {
        match *self {}
    }

    pub(crate) fn hash<S: BlobSource>(
        &self,
        _words: ModeWords,
        _source: &S,
        _max_blob: usize,
        _out: &mut [[u8; 32]],
        _cpu_blobs: usize,
        _threads: Threads,
    ) -> Result<(), Error> {
        match *self {}
    }
}
